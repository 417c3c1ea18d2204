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

#endif
