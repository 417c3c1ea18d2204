/* Fixed-capacity unsigned big integers for the exact paths of the decimal
 * conversions: the slow path of tw_decimal_to_double (decimal.c) and the
 * generator of the power-of-ten table (decimal_gen_pow10.c).  64-bit limbs,
 * least significant first, on the caller's stack; nothing is allocated.
 * The callers bound their operands (decimal.c, "Sizes"), so a result that
 * would not fit is our own bug and stops with TW_VERIFY, never a wrong
 * answer.  Speed does not matter here: these run for the rare inputs that
 * the fast paths cannot decide. */
#ifndef TW_COMMON_DECIMAL_BIGINT_H
#define TW_COMMON_DECIMAL_BIGINT_H

#include <stdint.h>
#include <string.h>

#include "tickwire/common.h"

__extension__ typedef unsigned __int128 tw__u128;

/* 4096 bits: the slow path needs at most ~3700 (decimal.c, "Sizes"). */
#define BIG_LIMBS 64

typedef struct big {
    uint32_t n; /* limbs in use; limb[n - 1] != 0 unless n == 0 */
    uint64_t limb[BIG_LIMBS];
} big;

static inline void big_set(big *a, uint64_t v)
{
    a->limb[0] = v;
    a->n = v != 0;
}

static inline void big_copy(big *dst, const big *src)
{
    dst->n = src->n;
    memcpy(dst->limb, src->limb, src->n * sizeof(src->limb[0]));
}

/* a = a * m + add. */
static inline void big_mul_add(big *a, uint64_t m, uint64_t add)
{
    uint64_t carry = add;
    for (uint32_t i = 0; i < a->n; i++) {
        tw__u128 p = (tw__u128)a->limb[i] * m + carry;
        a->limb[i] = (uint64_t)p;
        carry = (uint64_t)(p >> 64);
    }
    if (carry) {
        TW_VERIFY(a->n < BIG_LIMBS);
        a->limb[a->n++] = carry;
    }
}

/* a *= 5^k, 5^27 (< 2^63) at a time. */
static inline void big_mul_pow5(big *a, unsigned k)
{
    static const uint64_t pow5_27 = 7450580596923828125ull;
    for (; k >= 27; k -= 27)
        big_mul_add(a, pow5_27, 0);
    uint64_t m = 1;
    for (; k > 0; k--)
        m *= 5;
    if (m != 1)
        big_mul_add(a, m, 0);
}

/* a <<= bits. */
static inline void big_shl(big *a, unsigned bits)
{
    if (a->n == 0)
        return;
    unsigned limbs = bits / 64, b = bits % 64;
    uint32_t n = a->n + limbs + (b != 0);
    TW_VERIFY(n <= BIG_LIMBS);
    uint64_t *l = a->limb;
    if (b == 0) {
        memmove(l + limbs, l, a->n * sizeof(l[0]));
    } else {
        l[n - 1] = 0;
        for (uint32_t i = a->n; i-- > 0;) {
            l[i + limbs + 1] |= l[i] >> (64 - b);
            l[i + limbs] = l[i] << b;
        }
    }
    memset(l, 0, limbs * sizeof(l[0]));
    a->n = n;
    while (a->n > 0 && l[a->n - 1] == 0)
        a->n--;
}

/* -1, 0 or 1 as a <, == or > b. */
static inline int big_cmp(const big *a, const big *b)
{
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    for (uint32_t i = a->n; i-- > 0;)
        if (a->limb[i] != b->limb[i])
            return a->limb[i] < b->limb[i] ? -1 : 1;
    return 0;
}

/* a -= b, with a >= b. */
static inline void big_sub(big *a, const big *b)
{
    TW_VERIFY(big_cmp(a, b) >= 0);
    uint64_t borrow = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        uint64_t bi = i < b->n ? b->limb[i] : 0;
        uint64_t d = a->limb[i] - bi - borrow;
        borrow = (a->limb[i] < bi) || (a->limb[i] - bi < borrow);
        a->limb[i] = d;
    }
    while (a->n > 0 && a->limb[a->n - 1] == 0)
        a->n--;
}

/* Number of significant bits (0 for 0). */
static inline unsigned big_bitlen(const big *a)
{
    if (a->n == 0)
        return 0;
    return 64 * (a->n - 1) + (64 - (unsigned)__builtin_clzll(a->limb[a->n - 1]));
}

/* Bit i of a. */
static inline unsigned big_bit(const big *a, unsigned i)
{
    return i / 64 < a->n ? (unsigned)(a->limb[i / 64] >> (i % 64)) & 1 : 0;
}

#endif
