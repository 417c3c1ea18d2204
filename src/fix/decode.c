/* The one-pass typed decoder (tickwire/fix.h, tw_fix_decode).
 *
 * One pass over the raw bytes does what tw_fix_frame + tw_fix_parse +
 * tw_fix_read_header + the type's accessor do in four:
 *
 *   1. the framer's checks of BeginString, BodyLength and CheckSum's place
 *      (tw__fix_frame_head, shared with tw_fix_frame);
 *   2. a SIMD classification of up to 4 KB at a time (soh.c): bitmasks of
 *      SOH, '=', digits and '0', one word each per 64 bytes, and the byte
 *      sum CheckSum is checked against, from the same loads;
 *   3. mask algebra per 64 bytes (index_window) that checks the syntax of
 *      every field at once - each field's tag is 1 to 7 digits without a
 *      leading zero and ends in '=', each value is not empty - and marks
 *      the '=' that ends each tag: with the SOHs, one bit pair per field;
 *   4. a walk over those bit pairs: per field two bit scans, one masked
 *      8-byte load of the tag bytes, and a collision-free hash of them to
 *      the field's slot in the message type's struct (built once per
 *      process), where its value view is noted, first occurrence winning as
 *      in the accessors;
 *   5. the values decoded from the notes into the typed struct in the
 *      struct's fixed order, so the branches do not depend on the order
 *      the fields came in (an earlier decoder that switched on each tag
 *      as it came mispredicted about once per field).
 *
 * Values on the common shapes (up to 8 digits, a price of up to 8
 * characters) are decoded inline; anything else goes to the decoders the
 * accessors use (value.c), so the two paths agree by construction where
 * they are not the same code, and the tests and the fuzz target check that
 * they agree everywhere.  A message with any malformed field, a tag of
 * more than seven digits, or more fields than the caller's view array, is
 * handed to the four-call path, which finds and classifies the error
 * exactly as tw_fix_parse does.  So are the MsgTypes without a one-pass
 * reader. */
#include <errno.h>
#include <math.h>
#include <pthread.h>

#include "fix_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* Bytes classified per call: 64 blocks of 64 on the stack. */
#define WINDOW_BLKS 64
#define WINDOW (WINDOW_BLKS * 64)

/* ---- slots and the tag hash ------------------------------------------------- */

/* A field's slot in its message type's struct.  0 is the scratch slot of
 * every tag the type does not read; the header's are the same for all. */
enum {
    S_NONE = 0,
    S_8, S_35, S_49, S_56, S_34, S_52, S_122, S_43, S_97,
    S_BODY /* first body slot */
};

/* Tag bytes (the digits before '=', first digit in the low byte) to slot,
 * through a multiplicative hash with no collision among the type's tags;
 * the bucket keeps its key, so any other tag reads S_NONE. */
#define HASH_BITS 9
typedef struct ptab {
    uint64_t mult;
    uint64_t bkey[1u << HASH_BITS];
    uint8_t bslot[1u << HASH_BITS];
} ptab;

typedef struct tagslot {
    uint32_t tag;
    uint8_t slot;
} tagslot;

static uint64_t tag_key(uint32_t tag)
{
    char d[8];
    int n = 0;
    for (uint32_t t = tag; t; t /= 10)
        d[n++] = (char)('0' + t % 10);
    uint64_t k = 0;
    for (int i = 0; i < n; i++)
        k |= (uint64_t)(unsigned char)d[n - 1 - i] << (8 * i);
    return k;
}

static inline unsigned bucket(uint64_t mult, uint64_t key)
{
    return (unsigned)((key * mult) >> (64 - HASH_BITS));
}

/* Finds a multiplier with no collision among the header's and the given
 * tags (a few dozen into 512 buckets: a few hundred tries at most, from a
 * fixed seed, so every process builds the same table). */
static void build(ptab *t, const tagslot *body, size_t nbody)
{
    static const tagslot hdr[] = { { 8, S_8 },   { 35, S_35 },   { 49, S_49 },
                                   { 56, S_56 }, { 34, S_34 },   { 52, S_52 },
                                   { 122, S_122 }, { 43, S_43 }, { 97, S_97 } };
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (;;) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t mult = x | 1;
        memset(t->bkey, 0, sizeof(t->bkey));
        int ok = 1;
        for (size_t i = 0; ok && i < TW_ARRAY_SIZE(hdr) + nbody; i++) {
            const tagslot *ts = i < TW_ARRAY_SIZE(hdr) ? &hdr[i] : &body[i - TW_ARRAY_SIZE(hdr)];
            uint64_t k = tag_key(ts->tag);
            unsigned b = bucket(mult, k);
            ok = t->bkey[b] == 0;
            t->bkey[b] = k;
            t->bslot[b] = ts->slot;
        }
        if (ok) {
            t->mult = mult;
            return;
        }
    }
}

/* ---- the walk ----------------------------------------------------------------- */

typedef struct walker {
    const char *msg;
    size_t t;             /* offset of "10=": fields end here */
    size_t wend;          /* [0, wend) is classified and indexed */
    uint32_t wi, nw;      /* current word, words in the window */
    uint32_t sum;         /* byte sum of [0, wend) */
    uint32_t bad;         /* a malformed field in [0, wend) */
    uint64_t c_soh;       /* carries of the mask algebra between words */
    uint64_t c_land;
    unsigned char c_add, c_sub;
    tw__fix_classify_fn classify;
    tw_fix_field *fields; /* optional views (caller array) */
    uint32_t fcap;
    uint64_t m[WINDOW_BLKS];  /* per word: each tag's '=' and each SOH */
    tw__fix_blk blk[WINDOW_BLKS];
} walker;

static inline uint64_t addc(unsigned char *c, uint64_t a, uint64_t b)
{
#if defined(__x86_64__)
    unsigned long long r;
    *c = _addcarry_u64(*c, a, b, &r);
    return r;
#else
    uint64_t r = a + b + *c;
    *c = (unsigned char)(r < a || (r == a && *c));
    return r;
#endif
}

static inline uint64_t subb(unsigned char *c, uint64_t a, uint64_t b)
{
#if defined(__x86_64__)
    unsigned long long r;
    *c = _subborrow_u64(*c, a, b, &r);
    return r;
#else
    uint64_t r = a - b - *c;
    *c = (unsigned char)(a < b || (a == b && *c));
    return r;
#endif
}

/* Classifies and indexes the next window.  Per word, with FS the first
 * byte of each field (the byte after each SOH, and the message's first):
 * adding FS to the mask of bytes that are neither '=' nor SOH carries each
 * start to the first '=' or SOH at or after it (L, one bit per field, in
 * field order since a field's SOH comes at or after its landing); L - FS
 * is then each field's tag bytes.  A field is well formed iff it lands on
 * an '=' after its start, its tag bytes are digits, the first is not '0',
 * and the byte after the '=' is not SOH.  The tag's length (at most 7) is
 * checked per field in the walk. */
static void index_window(walker *w)
{
    size_t n = w->t - w->wend < WINDOW ? w->t - w->wend : WINDOW;
    w->sum += w->classify(w->msg + w->wend, n, w->blk);
    uint32_t nw = (uint32_t)((n + 63) / 64);
    uint64_t bad = 0;
    for (uint32_t j = 0; j < nw; j++) {
        const tw__fix_blk *b = &w->blk[j];
        size_t left = n - 64 * (size_t)j;
        uint64_t valid = left >= 64 ? ~0ull : (1ull << left) - 1;
        uint64_t fs = ((b->soh << 1) | w->c_soh) & valid;
        w->c_soh = b->soh >> 63;
        uint64_t stop = b->eq | b->soh;
        uint64_t land = addc(&w->c_add, ~stop, fs) & stop;
        uint64_t tagb = subb(&w->c_sub, land, fs);
        bad |= (land & b->soh) | (fs & land) | (tagb & ~b->digit) | (fs & b->zero) |
               (((land << 1) | w->c_land) & b->soh);
        w->c_land = land >> 63;
        w->m[j] = land | b->soh;
    }
    w->bad |= bad != 0;
    w->wend += n;
    w->wi = 0;
    w->nw = nw;
}

/* The next nonzero word and the byte its bit 0 stands for (a struct of
 * two words comes back in two registers, so the walk's position never
 * needs an address).  cur 0 when there is none, which a well-formed message never
 * asks for (its last byte before t is SOH), or when the next window holds
 * a malformed field: the walk then stops and hands over. */
typedef struct word {
    uint64_t cur;
    size_t wbyte;
} word;

static __attribute__((noinline)) word refill(walker *w, size_t wbyte)
{
    for (;;) {
        if (++w->wi < w->nw) {
            wbyte += 64;
            if (w->m[w->wi])
                return (word){ w->m[w->wi], wbyte };
            continue;
        }
        if (w->wend >= w->t || w->bad)
            return (word){ 0, wbyte };
        wbyte = w->wend;
        index_window(w);
        if (w->bad)
            return (word){ 0, wbyte };
        if (w->m[0])
            return (word){ w->m[0], wbyte };
    }
}



static void walk_init(walker *w, const char *msg, size_t t, tw_fix_field *fields, uint32_t fcap,
                      tw__fix_classify_fn classify)
{
    w->msg = msg;
    w->t = t;
    w->wend = 0;
    w->sum = 0;
    w->bad = 0;
    w->c_soh = 1; /* the message's first byte starts a field */
    w->c_land = 0;
    w->c_add = w->c_sub = 0;
    w->classify = classify;
    w->fields = fields;
    w->fcap = fcap;
    index_window(w);
}

/* A field noted during the walk: the offsets of its tag's '=' (low half)
 * and of its SOH (high half), one store per field. */
typedef uint64_t pos;

/* k tag bytes of an 8-byte load. */
static const uint64_t key_mask[8] = {
    0, 0xFFull, 0xFFFFull, 0xFFFFFFull, 0xFFFFFFFFull, 0xFFFFFFFFFFull, 0xFFFFFFFFFFFFull,
    0xFFFFFFFFFFFFFFull,
};

/* The walk, as a statement block over the fields of w's message: for each,
 * `slot` (its slot in pt), `eq` and `end` (the offsets of its '=' and SOH)
 * and `count` (fields so far, this one included) are set and BODY runs.
 * Everything it keeps is local, so it lives in registers; the only call
 * is refill, on word and window boundaries.  It leaves with `handover`
 * set when the message must go to the four-call path: a malformed field
 * (index_window), a tag of more than seven digits, more fields than the
 * caller's view array. */
/* In WALK: the next nonzero word, or hand over (a statement of the loop). */
#define WALK_WORD(w)                                                                         \
    if (TW_UNLIKELY(cur_ == 0)) {                                                            \
        word x_ = refill((w), wbyte_);                                                       \
        cur_ = x_.cur, wbyte_ = x_.wbyte;                                                    \
        if (!cur_) {                                                                         \
            handover = 1;                                                                    \
            break;                                                                           \
        }                                                                                    \
    }

#define WALK(w, pt, BODY)                                                                    \
    do {                                                                                     \
        const char *msg_ = (w)->msg;                                                         \
        const size_t t_ = (w)->t;                                                            \
        const uint64_t mult_ = (pt)->mult;                                                   \
        tw_fix_field *fields_ = (w)->fields;                                                 \
        uint64_t cur_ = (w)->m[0];                                                           \
        size_t wbyte_ = 0, start_ = 0;                                                       \
        handover = (w)->bad;                                                                 \
        if (handover)                                                                        \
            start_ = t_;                                                                     \
        /* Every way out but the end sets handover and breaks. */                            \
        while (start_ < t_) {                                                                \
            WALK_WORD(w);                                                                    \
            size_t eq = wbyte_ + (unsigned)__builtin_ctzll(cur_);                            \
            cur_ &= cur_ - 1;                                                                \
            WALK_WORD(w);                                                                    \
            size_t end = wbyte_ + (unsigned)__builtin_ctzll(cur_);                           \
            cur_ &= cur_ - 1;                                                                \
            size_t k_ = eq - start_; /* tag digits, >= 1: index_window checked */            \
            if (TW_UNLIKELY(k_ > 7)) {                                                       \
                handover = 1;                                                                \
                break;                                                                       \
            }                                                                                \
            /* start < t and the message runs to t + 7: eight bytes are there. */            \
            uint64_t key_ = tw__load64(msg_ + start_) & key_mask[k_];                        \
            unsigned b_ = bucket(mult_, key_);                                               \
            /* Branch-free: whether the type reads a tag is data. */                         \
            unsigned slot = (pt)->bslot[b_] & (0u - (unsigned)((pt)->bkey[b_] == key_));     \
            if (fields_) {                                                                   \
                if (TW_UNLIKELY(count == (w)->fcap)) {                                       \
                    handover = 1; /* the four-call path says -E2BIG where it does */         \
                    break;                                                                   \
                }                                                                            \
                int ok_ = 1;                                                                 \
                fields_[count] = (tw_fix_field){                                             \
                    (uint32_t)tw__swar_digits(key_, (unsigned)k_, &ok_),                     \
                    (uint32_t)(end - eq - 1), msg_ + eq + 1 };                               \
            }                                                                                \
            count++;                                                                         \
            start_ = end + 1;                                                                \
            BODY                                                                             \
        }                                                                                    \
    } while (0)

/* Notes a field in its slot.  A tag seen twice (bit in *dup) is rare and
 * left to the four-call path, where the first occurrence wins as in the
 * accessors; here the last does, and the caller hands such a message over
 * (slot 0, every tag the type does not read, repeats freely). */
static inline __attribute__((always_inline)) void take(pos *notes, uint64_t *seen, uint64_t *dup,
                                                       unsigned slot, size_t eq, size_t end)
{
    uint64_t bit = 1ull << slot;
    *dup |= *seen & bit;
    *seen |= bit;
    notes[slot] = (uint64_t)eq | (uint64_t)end << 32;
}

/* The value view of a note. */
typedef struct note {
    const char *v;
    uint32_t n;
    uint32_t pad_;
} note;

static inline note view(const char *msg, pos p)
{
    uint32_t eq = (uint32_t)p, end = (uint32_t)(p >> 32);
    return (note){ msg + eq + 1, end - eq - 1, 0 };
}

/* ---- values ------------------------------------------------------------------ */

/* Each returns 0 or nonzero (a bad value), exactly as the accessors'
 * decoders for the same kind; the common shapes inline.  A value view
 * starts before t - 1 and the message runs to t + 7, so an 8-byte load at
 * its start stays inside the message. */

/* An integer of 1 to 8 digits inline; anything else (a sign, a point,
 * more digits) through the accessors' decoder `slow`. */
static inline __attribute__((always_inline)) int dec_int(note f, int64_t *out,
                                                         int (*slow)(const char *, uint32_t,
                                                                     int64_t *))
{
    if (TW_LIKELY(f.n - 1u < 8u)) {
        int ok = 1;
        uint64_t x = tw__swar_digits(tw__load64(f.v), f.n, &ok);
        if (TW_LIKELY(ok)) {
            *out = (int64_t)x;
            return 0;
        }
    }
    return slow(f.v, f.n, out);
}

static inline int dec_i64(note f, int64_t *out)
{
    return dec_int(f, out, tw_fix_to_i64);
}

static inline int dec_qty(note f, int64_t *out)
{
    return dec_int(f, out, tw_fix_to_qty);
}

static inline int dec_i32(note f, int32_t *out)
{
    int64_t v;
    if (dec_i64(f, &v) != 0 || v < INT32_MIN || v > INT32_MAX)
        return -EINVAL;
    *out = (int32_t)v;
    return 0;
}

static inline int dec_char(note f, char *out)
{
    *out = f.v[0];
    return f.n != 1;
}

static inline int dec_bool(note f, int *out)
{
    *out = f.v[0] == 'Y';
    return f.n != 1 || (f.v[0] != 'Y' && f.v[0] != 'N');
}

static inline int dec_time(note f, int64_t *out, tw__fix_day_cache *dc)
{
    return tw__fix_epoch_ns(f.v, f.n, out, dc);
}

static inline void set_str(tw_fix_str *s, note f)
{
    s->p = f.v;
    s->len = f.n;
}

static const int64_t pow10_i64[11] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                       100000000, 1000000000, 10000000000 };

/* A price: fixed point with dec decimals and its float64; 0, or nonzero
 * for a bad value (strict), where loose (TW_FIX_PX_F64) accepts one that
 * does not fit fixed point (*fx = TW_FIX_PX_NONE).  Inline: "[-]d.ddd" of
 * up to 8 bytes after the sign, with dec <= 10, from one load: the point
 * is taken out (the bytes above it move down one), the digits left make
 * m < 10^8 in one SWAR conversion, and m / 10^k is the correctly rounded
 * double (value.c, px_double); anything else is tw__fix_px. */
static inline __attribute__((always_inline)) int dec_px(note f, unsigned dec, int loose,
                                                        int64_t *fx, double *x)
{
    uint32_t neg = f.v[0] == '-';
    uint32_t n = f.n - neg;
    if (TW_LIKELY(n - 1u < 8u && dec <= 10)) {
        uint64_t w = tw__load64(f.v + neg);
        uint64_t keep = ~0ull >> (64 - 8 * n);
        uint64_t dots = tw__zero_bytes(w ^ (TW__ONES * '.')) & keep;
        /* The lowest flag is exact: the first '.', or none (d = n). */
        unsigned d = dots ? (unsigned)__builtin_ctzll(dots) >> 3 : n;
        unsigned nd = n - (d < n); /* digits */
        unsigned k = n - 1 - d;    /* decimals, when there is a point */
        uint64_t low = d ? ~0ull >> (64 - 8 * d) : 0; /* the bytes before the point */
        uint64_t digits = d < n ? (w & low) | ((w >> 8) & ~low) : w;
        int ok = d == n || (d != 0 && d + 1 < n); /* "5." and ".5" are not prices */
        uint64_t m = tw__swar_digits(digits, nd ? nd : 1, &ok);
        if (d == n)
            k = 0;
        if (TW_LIKELY(ok)) {
            double y = (double)m / tw__fix_pow10_f64[k];
            *x = neg ? -y : y;
            int64_t v;
            if (TW_LIKELY(k <= dec)) {
                v = (int64_t)m * pow10_i64[dec - k];
            } else if (m % (uint64_t)pow10_i64[k - dec] == 0) {
                v = (int64_t)(m / (uint64_t)pow10_i64[k - dec]); /* extra zeros */
            } else {
                *fx = TW_FIX_PX_NONE;
                return !loose;
            }
            *fx = neg ? -v : v;
            return 0;
        }
    }
    int rc = tw__fix_px(f.v, f.n, dec, fx, x);
    return rc != 0 && !(loose && rc == -ERANGE);
}

/* Zeroes a struct with vector stores: the compiler's memset of a struct
 * this size is `rep stos`, whose start-up costs more than the rest of a
 * small message's header. */
static inline __attribute__((always_inline)) void zero(void *p, size_t n)
{
#if defined(__SSE2__)
    char *c = p;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm_storeu_si128((__m128i *)(void *)(c + i), _mm_setzero_si128());
        /* Keeps the compiler from turning the loop back into memset. */
        __asm__("" : "+r"(c));
    }
    for (; i < n; i++)
        c[i] = 0;
#else
    memset(p, 0, n);
#endif
}

/* ---- the header, common to every reader ------------------------------------- */

#define B(s) (1ull << (s))
#define H_REQUIRED (B(S_8) | B(S_35) | B(S_49) | B(S_56) | B(S_34) | B(S_52))

/* tw_fix_read_header's result from the notes. */
static int header(const char *msg, const pos *nt, uint64_t seen, tw_fix_header *h,
                  tw__fix_day_cache *dc)
{
    zero(h, sizeof(*h));
    int bad = (seen & H_REQUIRED) != H_REQUIRED;
    set_str(&h->begin_string, view(msg, nt[S_8]));
    set_str(&h->msg_type, view(msg, nt[S_35]));
    if (seen & B(S_49))
        set_str(&h->sender_comp_id, view(msg, nt[S_49]));
    if (seen & B(S_56))
        set_str(&h->target_comp_id, view(msg, nt[S_56]));
    if (seen & B(S_34))
        bad |= dec_i64(view(msg, nt[S_34]), &h->msg_seq_num) != 0;
    if (seen & B(S_52))
        bad |= dec_time(view(msg, nt[S_52]), &h->sending_time_ns, dc) != 0;
    if (TW_UNLIKELY(seen & B(S_122)))
        bad |= dec_time(view(msg, nt[S_122]), &h->orig_sending_time_ns, dc) != 0;
    if (TW_UNLIKELY(seen & B(S_43)))
        bad |= dec_bool(view(msg, nt[S_43]), &h->poss_dup);
    if (TW_UNLIKELY(seen & B(S_97)))
        bad |= dec_bool(view(msg, nt[S_97]), &h->poss_resend);
    return bad ? -EBADMSG : 0;
}

/* The per-message notes: the header's and the body's slots. */
#define MAX_SLOTS 48

/* Walks every field into the notes; 1 to hand over. */
static inline __attribute__((always_inline)) int walk_all(walker *w, const ptab *pt, pos *nt,
                                                          uint64_t *seen, uint32_t *nfields)
{
    int handover;
    uint64_t sn = 0, dup = 0;
    uint32_t count = 0;
    WALK(w, pt, { take(nt, &sn, &dup, slot, eq, end); });
    *seen = sn;
    *nfields = count;
    return handover | ((dup & ~1ull) != 0);
}

/* ---- ExecutionReport (8) ------------------------------------------------------ */

/* The same members, required fields and decoders as access.c's er_d. */
enum { E37 = S_BODY, E11, E41, E17, E55, E1, E58, E150, E39, E54, E40, E59, E20, E38, E44,
       E32, E31, E151, E14, E6, E60, E103 };
static const tagslot er_tags[] = {
    { 37, E37 },   { 11, E11 }, { 41, E41 }, { 17, E17 },   { 55, E55 }, { 1, E1 },
    { 58, E58 },   { 150, E150 }, { 39, E39 }, { 54, E54 }, { 40, E40 }, { 59, E59 },
    { 20, E20 },   { 38, E38 }, { 44, E44 }, { 32, E32 },   { 31, E31 }, { 151, E151 },
    { 14, E14 },   { 6, E6 },   { 60, E60 },     { 103, E103 },
};

static int exec_report(const char *msg, const pos *nt, uint64_t seen, unsigned dec, int loose,
                       tw_fix_exec_report *o, tw__fix_day_cache *dc)
{
    const uint64_t required = B(E37) | B(E17) | B(E55) | B(E150) | B(E39) | B(E54) | B(E151) |
                              B(E14) | B(E6);
    zero(o, sizeof(*o));
    o->price_f64 = o->last_px_f64 = o->avg_px_f64 = NAN;
    o->ord_rej_reason = -1;
    int bad = (seen & required) != required;
#define STR(s, m) if (seen & B(s)) set_str(&o->m, view(msg, nt[s]))
#define VAL(s, fn, m) if (seen & B(s)) bad |= fn(view(msg, nt[s]), &o->m) != 0
#define PX(s, m, mf) if (seen & B(s)) bad |= dec_px(view(msg, nt[s]), dec, loose, &o->m, &o->mf)
    STR(E37, order_id);
    STR(E11, cl_ord_id);
    STR(E41, orig_cl_ord_id);
    STR(E17, exec_id);
    STR(E55, symbol);
    STR(E1, account);
    STR(E58, text);
    VAL(E150, dec_char, exec_type);
    VAL(E39, dec_char, ord_status);
    VAL(E54, dec_char, side);
    VAL(E40, dec_char, ord_type);
    VAL(E59, dec_char, time_in_force);
    VAL(E20, dec_char, exec_trans_type);
    VAL(E38, dec_qty, order_qty);
    PX(E44, price, price_f64);
    VAL(E32, dec_qty, last_qty);
    PX(E31, last_px, last_px_f64);
    VAL(E151, dec_qty, leaves_qty);
    VAL(E14, dec_qty, cum_qty);
    PX(E6, avg_px, avg_px_f64);
    if (seen & B(E60))
        bad |= dec_time(view(msg, nt[E60]), &o->transact_time_ns, dc) != 0;
    if (TW_UNLIKELY(seen & B(E103)))
        bad |= dec_i32(view(msg, nt[E103]), &o->ord_rej_reason) != 0;
    return bad ? -EBADMSG : 0;
}

/* ---- NewOrderSingle (D) ----------------------------------------------------------- */

enum { N11 = S_BODY, N55, N1, N54, N40, N59, N21, N38, N44, N60 };
static const tagslot no_tags[] = {
    { 11, N11 }, { 55, N55 }, { 1, N1 },   { 54, N54 }, { 40, N40 },
    { 59, N59 }, { 21, N21 }, { 38, N38 }, { 44, N44 }, { 60, N60 },
};

static int new_order(const char *msg, const pos *nt, uint64_t seen, unsigned dec, int loose,
                     tw_fix_new_order *o, tw__fix_day_cache *dc)
{
    const uint64_t required = B(N11) | B(N55) | B(N54) | B(N40) | B(N38);
    zero(o, sizeof(*o));
    o->price_f64 = NAN;
    int bad = (seen & required) != required;
    STR(N11, cl_ord_id);
    STR(N55, symbol);
    STR(N1, account);
    VAL(N54, dec_char, side);
    VAL(N40, dec_char, ord_type);
    VAL(N59, dec_char, time_in_force);
    VAL(N21, dec_char, handl_inst);
    VAL(N38, dec_qty, order_qty);
    PX(N44, price, price_f64);
    if (seen & B(N60))
        bad |= dec_time(view(msg, nt[N60]), &o->transact_time_ns, dc) != 0;
    if (bad)
        return -EBADMSG;
    /* access.c's checks after its fill: a limit order needs a price, and
     * a quantity must be positive. */
    if ((o->ord_type == '2' || o->ord_type == '4') && !(seen & B(N44)))
        return -EBADMSG;
    return o->order_qty <= 0 ? -EBADMSG : 0;
}

/* ---- Heartbeat (0) and TestRequest (1) ---------------------------------------- */

enum { T112 = S_BODY };
static const tagslot tr_tags[] = { { 112, T112 } };

/* ---- MarketDataIncrementalRefresh (X) ----------------------------------------- */

/* Body slots, the entry's delimiter and members, and one slot for every
 * member of access.c's md_inc_members the entry struct does not keep (it
 * stays in the entry; any other tag ends the group). */
enum { X262 = S_BODY, X268, X279, X55, X278, X269, X290, X270, X271, X346, X_MEMBER };
static const tagslot x_tags[] = {
    { 262, X262 }, { 268, X268 }, { 279, X279 }, { 55, X55 },   { 278, X278 }, { 269, X269 },
    { 290, X290 }, { 270, X270 }, { 271, X271 }, { 346, X346 },
    { 285, X_MEMBER }, { 280, X_MEMBER }, { 65, X_MEMBER },  { 48, X_MEMBER },
    { 22, X_MEMBER },  { 207, X_MEMBER }, { 272, X_MEMBER }, { 273, X_MEMBER },
    { 274, X_MEMBER }, { 275, X_MEMBER }, { 276, X_MEMBER }, { 277, X_MEMBER },
    { 282, X_MEMBER }, { 283, X_MEMBER }, { 284, X_MEMBER }, { 286, X_MEMBER },
    { 287, X_MEMBER }, { 288, X_MEMBER }, { 289, X_MEMBER }, { 291, X_MEMBER },
    { 292, X_MEMBER }, { 299, X_MEMBER }, { 336, X_MEMBER }, { 15, X_MEMBER },
    { 58, X_MEMBER },  { 1023, X_MEMBER }, { 387, X_MEMBER }, { 451, X_MEMBER },
    { 37, X_MEMBER },  { 59, X_MEMBER },  { 432, X_MEMBER }, { 126, X_MEMBER },
    { 110, X_MEMBER }, { 18, X_MEMBER },  { 1070, X_MEMBER }, { 83, X_MEMBER },
    { 625, X_MEMBER }, { 167, X_MEMBER }, { 200, X_MEMBER }, { 541, X_MEMBER },
};

/* One entry from its notes (the delimiter's among them), into e. */
static int md_entry(const char *msg, const pos *en, uint64_t eseen, const tw_fix_str *symbol,
                    unsigned dec, int loose, tw_fix_md_entry *e)
{
    zero(e, sizeof(*e));
    e->px_f64 = NAN;
    e->symbol = *symbol;
    int bad = dec_char(view(msg, en[X279]), &e->update_action);
    if (eseen & B(X55))
        set_str(&e->symbol, view(msg, en[X55]));
    if (eseen & B(X278))
        set_str(&e->entry_id, view(msg, en[X278]));
    if (eseen & B(X269))
        bad |= dec_char(view(msg, en[X269]), &e->entry_type);
    if (TW_UNLIKELY(eseen & B(X290)))
        bad |= dec_i32(view(msg, en[X290]), &e->position_no) != 0;
    if (eseen & B(X270))
        bad |= dec_px(view(msg, en[X270]), dec, loose, &e->px, &e->px_f64);
    if (eseen & B(X271))
        bad |= dec_qty(view(msg, en[X271]), &e->size) != 0;
    if (TW_UNLIKELY(eseen & B(X346)))
        bad |= dec_i64(view(msg, en[X346]), &e->number_of_orders) != 0;
    return bad;
}

/* access.c's read_md for X, in one walk: the body fields before the first
 * NoMDEntries(268), then the entries (each from a 279 to the next 279 or
 * the first tag that is not a member), then nothing but the header.
 * Errors as read_md finds them: a bad count or first field, more entries
 * than the caller's array (-E2BIG, only if the group's start is sound),
 * fewer entries than announced, a bad value in an entry.  Returns the body
 * result, or 1 to hand over. */
static int md_incremental(walker *w, const ptab *pt, pos *nt, uint64_t *seen_out,
                          uint32_t *nfields, unsigned dec, int loose, tw_fix_md *o,
                          tw_fix_md_entry *ent, uint32_t cap)
{
    enum { BODY, ENTRIES, OVER_CAP, AFTER } state = BODY;
    const char *msg = w->msg;
    zero(o, sizeof(*o));
    int bad = 0, first = 0, handover;
    uint64_t n = 0;        /* entries announced */
    uint32_t k = 0;        /* entries started */
    uint32_t count = 0;    /* fields walked */
    uint32_t count_at = 0; /* field index of the 268 */
    uint64_t seen = 0, dup = 0;
    pos en[MAX_SLOTS];     /* the current entry's notes */
    uint64_t eseen = 0;
#define END_ENTRY()                                                                    \
    do {                                                                               \
        if (eseen) {                                                                   \
            bad |= md_entry(msg, en, eseen, &o->symbol, dec, loose, &ent[k - 1]);      \
            eseen = 0;                                                                 \
        }                                                                              \
    } while (0)
    WALK(w, pt, {
        /* The common case first: a member of the current entry. */
        if (TW_LIKELY(state == ENTRIES && slot > X279 && slot <= X_MEMBER && !first)) {
            take(en, &eseen, &dup, slot, eq, end);
            continue;
        }
        if (TW_UNLIKELY(first)) {
            /* tw_fix_group_begin: the first field after the count is the
             * delimiter. */
            first = 0;
            if (slot != X279) {
                bad = 1;
                state = AFTER;
            }
        }
        if (slot < S_BODY) {
            /* The header (or a tag X does not read), in every state: not a
             * member, so it ends a group. */
            take(nt, &seen, &dup, slot, eq, end);
            if (state == ENTRIES) {
                END_ENTRY();
                bad |= k < n;
                state = AFTER;
            }
            continue;
        }
        switch (state) {
        case BODY:
            if (slot == X268) {
                /* The body fields end here: what the entries default to. */
                if (seen & B(X262))
                    set_str(&o->md_req_id, view(msg, nt[X262]));
                if (seen & B(X55))
                    set_str(&o->symbol, view(msg, nt[X55]));
                int64_t cnt;
                count_at = count - 1;
                if (dec_i64(view(msg, (uint64_t)eq | (uint64_t)end << 32), &cnt) != 0 || cnt < 0) {
                    bad = 1;
                    state = AFTER;
                    break;
                }
                n = (uint64_t)cnt;
                first = n > 0;
                state = n == 0 ? AFTER : n > cap ? OVER_CAP : ENTRIES;
            } else if (slot == X262 || slot == X55) {
                take(nt, &seen, &dup, slot, eq, end);
            }
            break;
        case ENTRIES:
            if (slot == X279) {
                END_ENTRY();
                if (k == n) { /* the last entry ends at the next delimiter */
                    state = AFTER;
                    break;
                }
                k++;
                take(en, &eseen, &dup, slot, eq, end);
            } else if (slot >= X55 && slot <= X_MEMBER) {
                take(en, &eseen, &dup, slot, eq, end);
            } else {
                /* 262 or 268 again: not members, so the group ends here. */
                END_ENTRY();
                bad |= k < n;
                state = AFTER;
            }
            break;
        case OVER_CAP:
        case AFTER:
            break;
        }
    });
    *seen_out = seen;
    *nfields = count;
    if (handover || (dup & ~1ull))
        return 1;
    if (state == ENTRIES)
        END_ENTRY();
#undef END_ENTRY
    if (count_at == 0) { /* no NoMDEntries(268): the body is every field */
        if (seen & B(X262))
            set_str(&o->md_req_id, view(msg, nt[X262]));
        if (seen & B(X55))
            set_str(&o->symbol, view(msg, nt[X55]));
    }
    bad |= state == ENTRIES && k < n; /* the body ended inside the group */
    bad |= first;                     /* ... or right after the count: CheckSum is no delimiter */
    o->n_entries = k;
    if (bad || count_at == 0)
        return -EBADMSG;
    /* tw_fix_group_begin refuses a count above the fields after it (the
     * trailer included) before the caller's capacity is looked at. */
    if (n > (uint64_t)(count - count_at))
        return -EBADMSG;
    if (state == OVER_CAP) {
        o->n_entries = 0;
        return -E2BIG;
    }
    return 0;
}

#undef STR
#undef VAL
#undef PX

/* ---- tables ---------------------------------------------------------------------- */

static ptab er_tab, no_tab, tr_tab, x_tab;
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static void build_tables(void)
{
    build(&er_tab, er_tags, TW_ARRAY_SIZE(er_tags));
    build(&no_tab, no_tags, TW_ARRAY_SIZE(no_tags));
    build(&tr_tab, tr_tags, TW_ARRAY_SIZE(tr_tags));
    build(&x_tab, x_tags, TW_ARRAY_SIZE(x_tags));
}

/* For tests: every type's table finds each of its tags (and the header's)
 * in its slot, and a tag it does not read in S_NONE. */
int tw__fix_decode_tables_ok(void);
int tw__fix_decode_tables_ok(void)
{
    pthread_once(&tab_once, build_tables);
    const struct {
        const ptab *t;
        const tagslot *ts;
        size_t n;
    } all[] = { { &er_tab, er_tags, TW_ARRAY_SIZE(er_tags) },
                { &no_tab, no_tags, TW_ARRAY_SIZE(no_tags) },
                { &tr_tab, tr_tags, TW_ARRAY_SIZE(tr_tags) },
                { &x_tab, x_tags, TW_ARRAY_SIZE(x_tags) } };
    for (size_t i = 0; i < TW_ARRAY_SIZE(all); i++) {
        for (size_t j = 0; j < all[i].n; j++) {
            uint64_t k = tag_key(all[i].ts[j].tag);
            unsigned b = bucket(all[i].t->mult, k);
            if (all[i].t->bkey[b] != k || all[i].t->bslot[b] != all[i].ts[j].slot)
                return 0;
        }
        for (uint32_t tag = 1; tag < 10000000; tag = tag < 2000 ? tag + 1 : tag * 3 + 1) {
            int mine = tag == 8 || tag == 35 || tag == 49 || tag == 56 || tag == 34 ||
                       tag == 52 || tag == 122 || tag == 43 || tag == 97;
            for (size_t j = 0; j < all[i].n; j++)
                mine |= all[i].ts[j].tag == tag;
            uint64_t k = tag_key(tag);
            unsigned b = bucket(all[i].t->mult, k);
            if (!mine && all[i].t->bkey[b] == k)
                return 0;
        }
    }
    return 1;
}

/* ---- dispatch -------------------------------------------------------------------- */

/* The kind of a MsgType value v[0..n). */
static tw_fix_kind kind_of(const char *v, size_t n)
{
    if (n != 1)
        return TW_FIX_K_OTHER;
    switch (v[0]) {
    case '0': return TW_FIX_K_HEARTBEAT;
    case '1': return TW_FIX_K_TEST_REQUEST;
    case '2': return TW_FIX_K_RESEND_REQUEST;
    case '3': return TW_FIX_K_REJECT;
    case '4': return TW_FIX_K_SEQUENCE_RESET;
    case '5': return TW_FIX_K_LOGOUT;
    case '8': return TW_FIX_K_EXEC_REPORT;
    case '9': return TW_FIX_K_CANCEL_REJECT;
    case 'A': return TW_FIX_K_LOGON;
    case 'D': return TW_FIX_K_NEW_ORDER;
    case 'F': return TW_FIX_K_CANCEL_REQUEST;
    case 'V': return TW_FIX_K_MD_REQUEST;
    case 'W': return TW_FIX_K_MD_SNAPSHOT;
    case 'X': return TW_FIX_K_MD_INCREMENTAL;
    case 'Y': return TW_FIX_K_MD_REQUEST_REJECT;
    case 'h': return TW_FIX_K_TRADING_SESSION_STATUS;
    default: return TW_FIX_K_OTHER;
    }
}

/* The types without a one-pass reader: tw_fix_parse, then the accessors. */
static void decode_generic(const char *msg, size_t n, tw_fix_decoded *d)
{
    tw_fix_field local[TW_FIX_DECODE_FIELDS];
    tw_fix_field *f = d->fields ? d->fields : local;
    tw_fix_msg m = { .fields = f, .cap = d->fields ? d->fields_cap : TW_FIX_DECODE_FIELDS };
    d->parse_rc = tw_fix_parse(msg, n, &m);
    if (d->fields && d->parse_rc == 0)
        d->msg = m;
    if (d->parse_rc != 0) {
        d->rc = d->parse_rc;
        return;
    }
    int rc = tw_fix_read_header(&m, &d->hdr, NULL);
    if (rc != 0) {
        d->rc = rc;
        return;
    }
    unsigned dec = d->px_decimals;
    switch (d->kind) {
    case TW_FIX_K_HEARTBEAT: rc = tw_fix_read_heartbeat(&m, &d->u.heartbeat, NULL); break;
    case TW_FIX_K_TEST_REQUEST: rc = tw_fix_read_test_request(&m, &d->u.test_request, NULL); break;
    case TW_FIX_K_RESEND_REQUEST: rc = tw_fix_read_resend_request(&m, &d->u.resend_request, NULL); break;
    case TW_FIX_K_REJECT: rc = tw_fix_read_reject(&m, &d->u.reject, NULL); break;
    case TW_FIX_K_SEQUENCE_RESET: rc = tw_fix_read_sequence_reset(&m, &d->u.sequence_reset, NULL); break;
    case TW_FIX_K_LOGOUT: rc = tw_fix_read_logout(&m, &d->u.logout, NULL); break;
    case TW_FIX_K_EXEC_REPORT: rc = tw_fix_read_exec_report(&m, dec, &d->u.exec_report, NULL); break;
    case TW_FIX_K_CANCEL_REJECT: rc = tw_fix_read_cancel_reject(&m, &d->u.cancel_reject, NULL); break;
    case TW_FIX_K_LOGON: rc = tw_fix_read_logon(&m, &d->u.logon, NULL); break;
    case TW_FIX_K_NEW_ORDER: rc = tw_fix_read_new_order(&m, dec, &d->u.new_order, NULL); break;
    case TW_FIX_K_CANCEL_REQUEST: rc = tw_fix_read_cancel_request(&m, &d->u.cancel_request, NULL); break;
    case TW_FIX_K_MD_REQUEST: rc = tw_fix_read_md_request(&m, &d->u.md_request, NULL); break;
    case TW_FIX_K_MD_SNAPSHOT:
        rc = tw_fix_read_md_snapshot(&m, dec, &d->u.md, d->entries, d->entries_cap, NULL);
        break;
    case TW_FIX_K_MD_INCREMENTAL:
        rc = tw_fix_read_md_incremental(&m, dec, &d->u.md, d->entries, d->entries_cap, NULL);
        break;
    case TW_FIX_K_MD_REQUEST_REJECT:
        rc = tw_fix_read_md_request_reject(&m, &d->u.md_request_reject, NULL);
        break;
    case TW_FIX_K_TRADING_SESSION_STATUS:
        rc = tw_fix_read_trading_session_status(&m, &d->u.trading_session_status, NULL);
        break;
    case TW_FIX_K_OTHER: rc = -ENOTSUP; break;
    }
    d->rc = rc;
}

static int decode(tw__fix_classify_fn classify, const char *buf, size_t len, tw_fix_decoded *d,
                  size_t *skip)
{
    tw__fix_head h;
    int rc = tw__fix_frame_head(buf, len, d->flags, skip, NULL, &h);
    if (rc != 0)
        return rc;
    size_t n = h.t + 7;
    /* MsgType's value starts at body + 3 ("35=" is there: the framer
     * checked), before t - 1. */
    const char *tv = buf + h.body + 3;
    d->kind = kind_of(tv, tv[0] == TW_FIX_SOH ? 0 : tv[1] == TW_FIX_SOH ? 1 : 2);
    d->msg = (tw_fix_msg){ .fields = d->fields, .cap = d->fields_cap };
    const ptab *pt = d->kind == TW_FIX_K_EXEC_REPORT    ? &er_tab
                     : d->kind == TW_FIX_K_NEW_ORDER    ? &no_tab
                     : d->kind == TW_FIX_K_MD_INCREMENTAL ? &x_tab
                     : d->kind == TW_FIX_K_HEARTBEAT || d->kind == TW_FIX_K_TEST_REQUEST ? &tr_tab
                                                          : NULL;
    if (!pt) {
        unsigned sum = tw_fix_checksum(buf, h.t);
        if (!(d->flags & TW_FIX_NO_CHECKSUM) && sum != h.checksum)
            return tw__fix_bad_checksum(buf, len, &h, sum, skip, NULL);
        decode_generic(buf, n, d);
        return (int)n;
    }
    pthread_once(&tab_once, build_tables);
    walker w;
    walk_init(&w, buf, h.t, d->fields, d->fields_cap, classify);
    pos nt[MAX_SLOTS];
    uint64_t seen = 0;
    uint32_t count = 0;
    unsigned dec = d->px_decimals;
    int loose = (d->flags & TW_FIX_PX_F64) != 0;
    int body_rc = 0, handover;
    if (d->kind == TW_FIX_K_MD_INCREMENTAL) {
        body_rc = md_incremental(&w, pt, nt, &seen, &count, dec, loose, &d->u.md, d->entries,
                                 d->entries_cap);
        handover = body_rc == 1;
    } else {
        handover = walk_all(&w, pt, nt, &seen, &count);
    }
    /* The CheckSum: what the walk classified, plus any rest it did not
     * reach (it stops early when it hands over). */
    unsigned sum = (w.sum + tw_fix_checksum(buf + w.wend, h.t - w.wend)) & 0xFF;
    if (!(d->flags & TW_FIX_NO_CHECKSUM) && sum != h.checksum)
        return tw__fix_bad_checksum(buf, len, &h, sum, skip, NULL);
    /* A malformed field, or views past the caller's array: the four-call
     * path says exactly what tw_fix_parse says. */
    if (handover || (w.fields && count == w.fcap)) {
        decode_generic(buf, n, d);
        return (int)n;
    }
    TW_ASSERT(w.wend == h.t);
    if (w.fields) {
        w.fields[count] = (tw_fix_field){ 10, 3, buf + h.t + 3 };
        d->msg.count = count + 1;
        d->msg.msg_type = view(buf, nt[S_35]).v;
        d->msg.msg_type_len = view(buf, nt[S_35]).n;
    }
    d->parse_rc = 0;
    tw__fix_day_cache dc = { 0, 0 };
    int hdr_rc = header(buf, nt, seen, &d->hdr, &dc);
    switch (d->kind) {
    case TW_FIX_K_EXEC_REPORT:
        body_rc = exec_report(buf, nt, seen, dec, loose, &d->u.exec_report, &dc);
        break;
    case TW_FIX_K_NEW_ORDER:
        body_rc = new_order(buf, nt, seen, dec, loose, &d->u.new_order, &dc);
        break;
    case TW_FIX_K_HEARTBEAT:
    case TW_FIX_K_TEST_REQUEST:
        zero(&d->u.heartbeat, sizeof(d->u.heartbeat));
        if (seen & B(T112))
            set_str(&d->u.heartbeat.test_req_id, view(buf, nt[T112]));
        else if (d->kind == TW_FIX_K_TEST_REQUEST)
            body_rc = -EBADMSG;
        break;
    default:
        break;
    }
    d->rc = hdr_rc ? hdr_rc : body_rc;
    return (int)n;
}

int tw_fix_decode(const char *buf, size_t len, tw_fix_decoded *d, size_t *skip)
{
    /* acquire: pairs with the release store in soh.c's choose_isa() */
    return decode(__atomic_load_n(&tw__fix_classify, __ATOMIC_ACQUIRE), buf, len, d, skip);
}

int tw_fix_decode_isa(tw_isa isa, const char *buf, size_t len, tw_fix_decoded *d, size_t *skip)
{
    return decode(tw__fix_classify_isa(isa), buf, len, d, skip);
}
