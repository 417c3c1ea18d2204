/* FIX message builder (docs/design/fix.md, "Builder").
 *
 * A per-session template holds the header fields that never change
 * (BeginString, SenderCompID, TargetCompID, optional sub IDs), written
 * once.  Per message only MsgType, MsgSeqNum, SendingTime, the body fields,
 * BodyLength and CheckSum are written, straight into a caller buffer, with
 * hand-written integer, fixed-point and timestamp formatting (no printf
 * family).  Every put is bounds-checked: an overflow is sticky and makes
 * tw_fix_build_end() fail, so callers check once per message.
 *
 * Layout trick: BodyLength is not known until the end, so the body is
 * written at a fixed offset that leaves room for the longest
 * "8=<begin>\x019=<6 digits>\x01" prefix, and the prefix is then written
 * right-aligned in front of it.  The finished message therefore starts a
 * few bytes into the buffer (tw_fix_build_end() says where); nothing is
 * moved. */
#ifndef TICKWIRE_FIX_BUILD_H
#define TICKWIRE_FIX_BUILD_H

#include <string.h>

#include "tickwire/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TW_FIX_BEGIN_MAX 16   /* "FIXT.1.1" fits with room to spare */
#define TW_FIX_TMPL_MAX 192   /* 49=..|56=..|50=..|57=.. */
#define TW_FIX_BODYLEN_DIGITS 6 /* BodyLength up to 999999 */

/* Per-session header template; build with tw_fix_template_init(). */
typedef struct tw_fix_template {
    char begin[TW_FIX_BEGIN_MAX + 4]; /* "8=FIX.4.4\x01" */
    uint32_t begin_len;
    uint32_t comp_len;
    char comp[TW_FIX_TMPL_MAX]; /* "49=S\x0156=T\x01[50=..\x01][57=..\x01]" */
    uint32_t ts_digits;         /* 0, 3, 6 or 9 fractional digits in SendingTime */
    /* Cache of the formatted "YYYYMMDD-HH:MM:SS" for the last second seen:
     * consecutive messages within one second only format the fraction. */
    int64_t cached_sec;
    char cached_ts[17];
    char pad_[7];
} tw_fix_template;

/* Fills t.  sender_sub/target_sub may be NULL.  ts_digits is the SendingTime
 * precision (0, 3, 6, 9).  Returns 0, or -EINVAL (with err filled) if an ID
 * is empty, contains SOH or '=' is misplaced, or the template overflows. */
int tw_fix_template_init(tw_fix_template *t, const char *begin_string,
                         const char *sender, const char *target,
                         const char *sender_sub, const char *target_sub,
                         unsigned ts_digits, tw_error *err);

/* A message being built.  Lives on the caller's stack. */
typedef struct tw_fix_wbuf {
    char *buf;
    size_t cap;
    size_t pos;      /* next byte to write */
    size_t body_off; /* where the body (35=...) starts */
    tw_fix_template *t; /* not const: it caches the formatted second */
    int overflow;    /* sticky: a put did not fit */
    int pad_;
} tw_fix_wbuf;

/* Bytes a buffer needs in front of the body: the reserved prefix. */
size_t tw_fix_build_reserve(const tw_fix_template *t);

/* Starts a message: writes 35=<msg_type>, the template, 34=<seq> and
 * 52=<sending_time_ns>.  Then the caller adds header extras (43, 122) and
 * the body with the put functions, and calls tw_fix_build_end(). */
void tw_fix_build_begin(tw_fix_wbuf *w, tw_fix_template *t, char *buf, size_t cap,
                        const char *msg_type, uint64_t seq, int64_t sending_time_ns);

/* Starts a message without 34/52 (they are added by the caller in any
 * order); used to rebuild stored messages. */
void tw_fix_build_begin_raw(tw_fix_wbuf *w, tw_fix_template *t, char *buf, size_t cap,
                            const char *msg_type);

/* Field writers.  A value must not contain SOH (that is the caller's
 * contract for str; the others cannot).  put_str, put_cstr, put_char,
 * put_u64, put_i64, put_fixed and put_ts are inline (below): with the tag
 * a constant, as it is at every call site, "tag=" is written as constant
 * bytes, and the common values (integers below 10^8, timestamps within
 * the template's cached second) are formatted straight into the buffer
 * without a call.
 *
 * tw_fix_put_i64, tw_fix_put_u64: the integer in decimal. */
static inline void tw_fix_put_i64(tw_fix_wbuf *w, uint32_t tag, int64_t v);
static inline void tw_fix_put_u64(tw_fix_wbuf *w, uint32_t tag, uint64_t v);
/* Fixed point: writes mantissa * 10^-decimals, trailing zeros of the
 * fraction kept to `decimals` digits (e.g. (123450, 4) -> "12.3450"). */
static inline void tw_fix_put_fixed(tw_fix_wbuf *w, uint32_t tag, int64_t mantissa,
                                    unsigned decimals);
/* A price as a float64 in FIX's float form: the shortest text that reads
 * back as the same float64 (tw_double_to_decimal; live.md, "Prices are
 * exact"), e.g. 100, 100.0000000000001, 0.00001.  NaN and infinities are
 * not FIX values: they make the message overflow (tw_fix_build_end fails),
 * rather than go out as text a peer would misread. */
void tw_fix_put_f64(tw_fix_wbuf *w, uint32_t tag, double x);
/* UTCTimestamp from ns since the epoch with 0/3/6/9 fractional digits. */
static inline void tw_fix_put_ts(tw_fix_wbuf *w, uint32_t tag, int64_t epoch_ns, unsigned digits);
/* Pre-formatted "tag=value\x01..." bytes, copied as they are. */
void tw_fix_put_raw(tw_fix_wbuf *w, const char *fields, size_t len);

/* Finishes: writes BodyLength in front and CheckSum at the end.
 * Returns 0 with *msg and *len set to the message inside w->buf, or -ENOBUFS
 * if anything overflowed (the buffer content is then unspecified). */
int tw_fix_build_end(tw_fix_wbuf *w, const char **msg, size_t *len);

/* Formatting helpers, exposed for tests: write into out (which must have
 * room: 20 for integers, 30 for timestamps) and return the length. */
size_t tw_fix_fmt_u64(char *out, uint64_t v);
size_t tw_fix_fmt_ts(char *out, int64_t epoch_ns, unsigned digits);

/* ---- the inline fast path ------------------------------------------------ */

/* Writes "tag=" (tag < 1000) at p; returns its length. */
static inline size_t tw__fix_tag_text(char *p, uint32_t tag)
{
    if (tag < 10) {
        p[0] = (char)('0' + tag);
        p[1] = '=';
        return 2;
    }
    if (tag < 100) {
        p[0] = (char)('0' + tag / 10);
        p[1] = (char)('0' + tag % 10);
        p[2] = '=';
        return 3;
    }
    p[0] = (char)('0' + tag / 100);
    p[1] = (char)('0' + tag / 10 % 10);
    p[2] = (char)('0' + tag % 10);
    p[3] = '=';
    return 4;
}

/* memcpy out of line, for the long values (kept out of line so that the
 * compiler does not judge it against the size of a short source). */
void tw__fix_copy_long(char *dst, const char *src, size_t n);

/* Copies n bytes without a call for the short values messages are made
 * of: two overlapping loads and stores cover 4..32 bytes and never read
 * outside src[0..n). */
static inline void tw__fix_copy(char *dst, const char *src, size_t n)
{
    if (n > 16 && n <= 32) {
        char a[16], b[16];
        memcpy(a, src, 16);
        memcpy(b, src + n - 16, 16);
        memcpy(dst, a, 16);
        memcpy(dst + n - 16, b, 16);
    } else if (n >= 8 && n <= 16) {
        uint64_t a, b;
        memcpy(&a, src, 8);
        memcpy(&b, src + n - 8, 8);
        memcpy(dst, &a, 8);
        memcpy(dst + n - 8, &b, 8);
    } else if (n >= 4 && n < 8) {
        uint32_t a, b;
        memcpy(&a, src, 4);
        memcpy(&b, src + n - 4, 4);
        memcpy(dst, &a, 4);
        memcpy(dst + n - 4, &b, 4);
    } else if (n < 4) {
        for (size_t i = 0; i < n; i++)
            dst[i] = src[i];
    } else {
        tw__fix_copy_long(dst, src, n);
    }
}

/* The general "tag=" value SOH writer (any tag, exact room checks, the
 * sticky overflow): what the inline path falls back to. */
void tw__fix_put_field(tw_fix_wbuf *w, uint32_t tag, const char *v, size_t len);

static inline void tw_fix_put_str(tw_fix_wbuf *w, uint32_t tag, const char *v, size_t len)
{
    /* The common case: a tag below 1000 and room to spare ("ttt=" + SOH). */
    if (TW_LIKELY(tag < 1000 && !w->overflow && w->cap - w->pos >= len + 5)) {
        char *p = w->buf + w->pos;
        size_t tl = tw__fix_tag_text(p, tag);
        tw__fix_copy(p + tl, v, len);
        p[tl + len] = '\x01';
        w->pos += tl + len + 1;
        return;
    }
    tw__fix_put_field(w, tag, v, len);
}

static inline void tw_fix_put_cstr(tw_fix_wbuf *w, uint32_t tag, const char *v)
{
    tw_fix_put_str(w, tag, v, strlen(v));
}

static inline void tw_fix_put_char(tw_fix_wbuf *w, uint32_t tag, char c)
{
    if (TW_LIKELY(tag < 1000 && !w->overflow && w->cap - w->pos >= 6)) {
        char *p = w->buf + w->pos;
        size_t tl = tw__fix_tag_text(p, tag);
        p[tl] = c;
        p[tl + 1] = '\x01';
        w->pos += tl + 2;
        return;
    }
    tw__fix_put_field(w, tag, &c, 1);
}

/* The general writers the inline ones fall back to (exact room checks,
 * the sticky overflow, any value). */
void tw__fix_put_u64_slow(tw_fix_wbuf *w, uint32_t tag, uint64_t v);
void tw__fix_put_i64_slow(tw_fix_wbuf *w, uint32_t tag, int64_t v);
void tw__fix_put_fixed_slow(tw_fix_wbuf *w, uint32_t tag, int64_t mantissa, unsigned decimals);
void tw__fix_put_ts_slow(tw_fix_wbuf *w, uint32_t tag, int64_t epoch_ns, unsigned digits);

/* The eight decimal digits of v < 10^8 as the bytes of a little-endian
 * word, most significant first (leading zeros included), each 0..9: the
 * halves by one division, then per lane /100 and /10 by multiply-shift
 * (exact below 10^4 and 10^2), no table. */
static inline uint64_t tw__fix_digits8(uint32_t v)
{
    uint64_t x = (uint64_t)(v / 10000) | (uint64_t)(v % 10000) << 32;
    uint64_t q = ((x * 10486) >> 20) & 0x0000007F0000007Full;
    x = q | (x - q * 100) << 16;
    q = ((x * 103) >> 10) & 0x000F000F000F000Full;
    return q | (x - q * 10) << 8;
}

/* The four digits of v < 10^4 the same way, in a 32-bit word. */
static inline uint32_t tw__fix_digits4(uint32_t v)
{
    uint32_t q = (v * 5243) >> 19; /* v / 100, exact below 43699 */
    uint32_t x = q | (v - q * 100) << 16;
    uint32_t t = ((x * 103) >> 10) & 0x000F000Fu;
    return t | (x - t * 10) << 8;
}

/* How many of those digits are leading zeros (at most 7, so 0 is "0"). */
static inline unsigned tw__fix_lead0(uint64_t digits)
{
    return (unsigned)__builtin_ctzll(digits | (1ull << 56)) >> 3;
}

/* Room for an inline writer's field: "ttt=", up to 24 value bytes (whole
 * words may be stored past the value's end) and SOH. */
#define TW__FIX_ROOM 32

static inline void tw_fix_put_u64(tw_fix_wbuf *w, uint32_t tag, uint64_t v)
{
    if (TW_LIKELY(tag < 1000 && v < 100000000 && !w->overflow &&
                  w->cap - w->pos >= TW__FIX_ROOM)) {
        char *p = w->buf + w->pos;
        size_t tl = tw__fix_tag_text(p, tag);
        if (v < 10000) { /* sequence numbers, quantities: four digits do */
            uint32_t z = tw__fix_digits4((uint32_t)v);
            unsigned lz = (unsigned)__builtin_ctz(z | (1u << 24)) >> 3;
            uint32_t s = (z | 0x30303030u) >> (8 * lz);
            memcpy(p + tl, &s, 4);
            p[tl + 4 - lz] = '\x01';
            w->pos += tl + 5 - lz;
            return;
        }
        uint64_t z = tw__fix_digits8((uint32_t)v);
        unsigned lz = tw__fix_lead0(z);
        uint64_t s = (z | 0x3030303030303030ull) >> (8 * lz);
        memcpy(p + tl, &s, 8);
        p[tl + 8 - lz] = '\x01';
        w->pos += tl + 9 - lz;
        return;
    }
    tw__fix_put_u64_slow(w, tag, v);
}

static inline void tw_fix_put_i64(tw_fix_wbuf *w, uint32_t tag, int64_t v)
{
    if (TW_LIKELY(v >= 0)) {
        tw_fix_put_u64(w, tag, (uint64_t)v);
        return;
    }
    tw__fix_put_i64_slow(w, tag, v);
}

static inline void tw_fix_put_fixed(tw_fix_wbuf *w, uint32_t tag, int64_t mantissa,
                                    unsigned decimals)
{
    /* A non-negative mantissa below 10^8 with 1 to 7 decimals: its eight
     * digits, the leading zeros of the integer part dropped (one kept),
     * then the point moved in (the fraction stored once more, one byte
     * up). */
    if (TW_LIKELY(tag < 1000 && (uint64_t)mantissa < 100000000 && decimals - 1 < 7 &&
                  !w->overflow && w->cap - w->pos >= TW__FIX_ROOM)) {
        char *p = w->buf + w->pos;
        size_t tl = tw__fix_tag_text(p, tag);
        uint64_t z = tw__fix_digits8((uint32_t)mantissa);
        unsigned lz = (unsigned)__builtin_ctzll(z | (1ull << (8 * (7 - decimals)))) >> 3;
        uint64_t s = (z | 0x3030303030303030ull) >> (8 * lz);
        unsigned ni = 8 - decimals - lz; /* integer digits, >= 1 */
        uint64_t f = s >> (8 * ni);
        memcpy(p + tl, &s, 8);
        p[tl + ni] = '.';
        memcpy(p + tl + ni + 1, &f, 8);
        p[tl + ni + 1 + decimals] = '\x01';
        w->pos += tl + ni + decimals + 2;
        return;
    }
    tw__fix_put_fixed_slow(w, tag, mantissa, decimals);
}

static inline void tw_fix_put_ts(tw_fix_wbuf *w, uint32_t tag, int64_t epoch_ns, unsigned digits)
{
    /* Within the second the template last formatted (nearly always: the
     * caller's clock moves on by microseconds), the cached
     * "YYYYMMDD-HH:MM:SS" is copied and only the fraction formatted. */
    uint64_t ns = (uint64_t)epoch_ns;
    uint64_t sec = ns / 1000000000u;
    if (TW_LIKELY(epoch_ns >= 0 && (int64_t)sec == w->t->cached_sec && tag < 1000 &&
                  (digits == 3 || digits == 6) && !w->overflow &&
                  w->cap - w->pos >= TW__FIX_ROOM)) {
        char *p = w->buf + w->pos;
        size_t tl = tw__fix_tag_text(p, tag);
        memcpy(p + tl, w->t->cached_ts, 16);
        p[tl + 16] = w->t->cached_ts[16];
        uint32_t frac = (uint32_t)(ns - sec * 1000000000u);
        /* ".mmm" or ".uuuuuu": the last `digits` of eight, moved so that
         * the byte before them is the point's place. */
        uint64_t s;
        if (digits == 3) { /* the point, then the last three of four digits */
            uint32_t z = tw__fix_digits4(frac / 1000000) | 0x30303030u;
            s = (z & ~0xFFu) | '.';
        } else {
            uint64_t z = tw__fix_digits8(frac / 1000);
            s = (((z | 0x3030303030303030ull) >> 8) & ~0xFFull) | '.';
        }
        memcpy(p + tl + 17, &s, 8);
        p[tl + 18 + digits] = '\x01';
        w->pos += tl + 19 + digits;
        return;
    }
    tw__fix_put_ts_slow(w, tag, epoch_ns, digits);
}

#ifdef __cplusplus
}
#endif
#endif
