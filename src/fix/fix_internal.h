/* What the files of src/fix share and nobody else may use. */
#ifndef TW_FIX_INTERNAL_H
#define TW_FIX_INTERNAL_H

#include <string.h>

#include "tickwire/fix.h"



/* Bit i set for every SOH in p[0..n), n <= 64.  Never reads outside
 * p[0..n).  Chosen once per process like tw_fix_find_soh(). */
typedef uint64_t (*tw__fix_mask_fn)(const char *p, size_t n);
extern tw__fix_mask_fn tw__fix_soh_mask;
uint64_t tw__fix_soh_mask_isa(tw_isa isa, const char *p, size_t n);
/* The one-pass decoder's index of a message's bytes (soh.c, one variant
 * per ISA), 64 at a time: per 64 bytes a word with bit i set iff byte i is
 * SOH (one bit per field), and the byte sum CheckSum is checked against,
 * from the same loads.  The walk finds each field's tag by its text right
 * after the previous SOH, so the SOHs are all it needs. */
typedef struct tw__fix_ix {
    uint64_t sum;  /* the bytes' sum (CheckSum is sum mod 256) */
    uint64_t sohs; /* SOH bytes so far: one per field */
} tw__fix_ix;

/* Indexes p[0..n) into m[0 .. ceil(n / 64)) (bits at and past n clear)
 * and adds to *ix.  Reads only [p, p + n).  tw__fix_index is the
 * process's choice (acquire-load it); tw__fix_index_isa() a given ISA's. */
typedef void (*tw__fix_index_fn)(const char *p, size_t n, uint64_t *m, tw__fix_ix *ix);
extern tw__fix_index_fn tw__fix_index;
tw__fix_index_fn tw__fix_index_isa(tw_isa isa);
/* 1 if the ISA's decoder may use BMI1/BMI2/POPCNT/AVX2 code (the CPU has
 * them all), else 0.  tw__fix_v3 is that for the process's choice, set
 * before tw__fix_index is published (read it after acquire-loading that). */
int tw__fix_isa_v3(tw_isa isa);
extern int tw__fix_v3;

/* The ISA AUTO (or an explicit one) resolves to on this CPU, TW_FIX_ISA
 * applied; never AUTO. */
tw_isa tw__fix_resolve_isa(tw_isa isa);
/* Makes the process-wide ISA choice if it is not made yet (thread-safe,
 * once); soh.c's constructor calls it before main(). */
void tw__fix_isa_init(void);

/* The parser's AVX-512 VBMI2 path (parse_avx512.c): 0 when it parsed the
 * message, 1 when the generic parser must (any error, rare shapes).  Used
 * when tw__fix_fast_parse is set, which the ISA choice does. */
int tw__fix_parse_avx512(const char *msg, size_t len, tw_fix_msg *m);
extern int tw__fix_fast_parse;
/* The generic parser alone, for tests that compare the two. */
int tw__fix_parse_generic(const char *msg, size_t len, tw_fix_msg *m, tw_error *err);

/* Where the framer found the parts of a message (frame.c). */
typedef struct tw__fix_head {
    size_t begin_end;   /* the SOH that ends BeginString(8) */
    size_t bodylen_end; /* the SOH that ends BodyLength(9) */
    size_t body;        /* "35=": the first byte BodyLength counts */
    size_t t;           /* "10=": the message is buf[0 .. t + 7) */
    unsigned checksum;  /* the value CheckSum(10) says */
    unsigned pad_;
} tw__fix_head;

/* Parser: 0 (framed as far as the bytes' structure goes), -1 garbled (TW_FIX_GARBLED), -2 incomplete.
 * Everything tw_fix_frame() checks but the CheckSum value: BeginString,
 * BodyLength, MsgType's place, CheckSum's place and digits, in the same
 * order with the same *skip and err. */
int tw__fix_frame_head(const char *buf, size_t len, unsigned flags, size_t *skip, tw_error *err,
                       tw__fix_head *h);
/* TW_FIX_GARBLED with *skip and err as tw_fix_frame() sets them for a
 * CheckSum that does not match (got: what the bytes sum to). */
int tw__fix_bad_checksum(const char *buf, size_t len, const tw__fix_head *h, unsigned got,
                         size_t *skip, tw_error *err);
/* Offset of the next place a message may start (the framer's resync). */
size_t tw__fix_resync(const char *buf, size_t len);

/* A price both ways, for the accessors and the one-pass decoder: *fx the
 * fixed-point value with `decimals` decimals (tw_fix_to_fixed), *f64 its
 * correctly rounded float64.  0; -EINVAL if it is not a price (*fx, *f64
 * unspecified); -ERANGE if it is one whose fixed-point form does not fit
 * (*fx = TW_FIX_PX_NONE, *f64 set). */
int tw__fix_px(const char *v, uint32_t len, unsigned decimals, int64_t *fx, double *f64);
/* The day number of the last date a decoder saw: a message's timestamps
 * (SendingTime, TransactTime) nearly always share their date.  Kept by the
 * caller for one message; zero-initialise it. */
typedef struct tw__fix_day_cache {
    uint64_t date; /* the eight date bytes, or 0 */
    int64_t days;
} tw__fix_day_cache;
/* tw_fix_to_epoch_ns() with a day cache (c may be NULL). */
int tw__fix_epoch_ns(const char *v, uint32_t len, int64_t *out, tw__fix_day_cache *c);

/* 10^0 .. 10^22, each exact as a double. */
extern const double tw__fix_pow10_f64[23];

/* Little-endian 8-byte load (no alignment needed). */
static inline uint64_t tw__load64(const char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

#define TW__ONES 0x0101010101010101ull
#define TW__HIGHS 0x8080808080808080ull

/* 0x80 in every byte of v that is zero; exact for the lowest such byte
 * (bytes above it may be false positives), which is all callers use. */
static inline uint64_t tw__zero_bytes(uint64_t v)
{
    return (v - TW__ONES) & ~v & TW__HIGHS;
}

/* Parses k (1..8) ASCII digits that sit in the low k bytes of w (first
 * digit in the lowest byte) without a branch per digit.  *ok is cleared
 * when one of them is not a digit.  Returns their value. */
static inline uint64_t tw__swar_digits(uint64_t w, unsigned k, int *ok)
{
    if (k <= 4) {
        /* The same in 32 bits with one step less (most values). */
        uint32_t w4 = (uint32_t)w;
        unsigned sh4 = 32 - 8 * k;
        uint32_t keep4 = ~0u >> sh4;
        uint32_t x4 = w4 & 0x7F7F7F7Fu;
        uint32_t good4 = (x4 + 0x50505050u) & ~(x4 + 0x46464646u) & ~w4;
        uint32_t want4 = 0x80808080u & keep4;
        *ok &= (good4 & want4) == want4;
        uint32_t d4 = (w4 & keep4 & 0x0F0F0F0Fu) << sh4;
        d4 = (d4 * 10 + (d4 >> 8)) & 0x00FF00FFu;
        return (d4 * 100 + (d4 >> 16)) & 0xFFFFu;
    }
    /* Keep the k digit bytes, move them to the top so the missing leading
     * digits read as zeros, then multiply-add pairs, quads, octets. */
    unsigned sh = 64 - 8 * k; /* k >= 1, so sh <= 56 */
    uint64_t keep = ~0ull >> sh;
    /* Byte b is a digit iff b < 0x80, b + 0x50 >= 0x80 (b >= '0') and
     * b + 0x46 < 0x80 (b <= '9'); adding to the low 7 bits never carries
     * into the next byte. */
    uint64_t x = w & 0x7F7F7F7F7F7F7F7Full;
    uint64_t good = (x + 0x5050505050505050ull) & ~(x + 0x4646464646464646ull) & ~w;
    uint64_t want = TW__HIGHS & keep;
    *ok &= (good & want) == want;
    uint64_t d = (w & keep & 0x0F0F0F0F0F0F0F0Full);
    d <<= sh;
    d = (d * 10 + (d >> 8)) & 0x00FF00FF00FF00FFull;
    d = (d * 100 + (d >> 16)) & 0x0000FFFF0000FFFFull;
    d = (d * 10000 + (d >> 32)) & 0x00000000FFFFFFFFull;
    return d;
}

/* The tag of a field of flen bytes whose first eight bytes are w (bytes
 * past the field may be anything).  Sets *k to the number of tag digits
 * and *tag to their value; returns nonzero iff the field is well formed:
 * 1 to 7 digits without a leading zero, '=', a value of at least one
 * byte.  No branch per digit: the parser and the one-pass decoder run it
 * on every field. */
static inline __attribute__((always_inline)) int tw__fix_tag(uint64_t w, size_t flen, unsigned *k,
                                                             uint32_t *tag)
{
    /* The lowest non-digit byte of w ends the tag and must be '='.  Bytes
     * below it are digits, so no carry or borrow reaches it and its flag
     * is exact (flags above it may be noise; they are not used).  The top
     * bit caps the tag at seven digits. */
    uint64_t nd = ((w + 0x4646464646464646ull) | (w - 0x3030303030303030ull)) & TW__HIGHS;
    unsigned kk = (unsigned)__builtin_ctzll(nd | (1ull << 63)) >> 3; /* 0..7 */
    /* First byte '1'..'9' (so k >= 1 and no leading zero), '=' after the
     * digits, and a value of at least one byte: one branch for all. */
    int ok = ((unsigned)(w & 0xFF) - '1' < 9u) & ((unsigned char)(w >> (8 * kk)) == '=') &
             (kk + 1 < flen);
    if (TW_LIKELY(kk <= 4)) {
        /* Up to four digits (nearly every tag): two multiply steps on 32
         * bits, the digits shifted to the top so that missing leading
         * digits read as zeros. */
        uint32_t x = ((uint32_t)w & 0x0F0F0F0Fu) << ((32 - 8 * kk) & 31);
        x = (x * 10 + (x >> 8)) & 0x00FF00FFu;
        *tag = (x * 100 + (x >> 16)) & 0xFFFFu;
    } else {
        *tag = (uint32_t)tw__swar_digits(w, kk, &ok);
    }
    *k = kk;
    return ok;
}

#endif
