/* The generated power-of-ten table and the integer logarithms the
 * conversions rely on, each value checked against exact big-integer
 * arithmetic.  The big integers here are the test's own (32-bit limbs,
 * multiplication and shifts only), not decimal_bigint.h, so a bug there
 * (which built the table) cannot hide itself. */
#include <stdint.h>
#include <string.h>

#include "common/decimal_internal.h"
#include "tw_check.h"

/* 3072 bits: the largest operand here is about 1300. */
typedef struct ib {
    int n;
    uint32_t l[96];
} ib;

static void ib_set(ib *a, uint64_t hi, uint64_t lo)
{
    a->l[0] = (uint32_t)lo;
    a->l[1] = (uint32_t)(lo >> 32);
    a->l[2] = (uint32_t)hi;
    a->l[3] = (uint32_t)(hi >> 32);
    a->n = 4;
    while (a->n > 0 && a->l[a->n - 1] == 0)
        a->n--;
}

static void ib_add1(ib *a)
{
    for (int i = 0; i < a->n; i++)
        if (++a->l[i] != 0)
            return;
    a->l[a->n++] = 1;
}

static void ib_mul(ib *a, uint32_t m)
{
    uint64_t carry = 0;
    for (int i = 0; i < a->n; i++) {
        uint64_t p = (uint64_t)a->l[i] * m + carry;
        a->l[i] = (uint32_t)p;
        carry = p >> 32;
    }
    if (carry) {
        REQUIRE(a->n < 96);
        a->l[a->n++] = (uint32_t)carry;
    }
}

static void ib_shl(ib *a, int bits)
{
    for (; bits >= 16; bits -= 16)
        ib_mul(a, 1u << 16);
    if (bits)
        ib_mul(a, 1u << bits);
}

static void ib_pow10(ib *a, int k)
{
    for (; k >= 9; k -= 9)
        ib_mul(a, 1000000000u);
    for (; k > 0; k--)
        ib_mul(a, 10);
}

static int ib_cmp(const ib *a, const ib *b)
{
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    for (int i = a->n; i-- > 0;)
        if (a->l[i] != b->l[i])
            return a->l[i] < b->l[i] ? -1 : 1;
    return 0;
}

/* The sign of m1 2^e1 10^d1 - m2 2^e2 10^d2 (exponents of any sign: the
 * negative ones move to the other side). */
static int cmp_terms(const ib *m1, int e1, int d1, const ib *m2, int e2, int d2)
{
    ib a = *m1, b = *m2;
    if (e1 < 0) {
        e2 -= e1;
        e1 = 0;
    }
    if (e2 < 0) {
        e1 -= e2;
        e2 = 0;
    }
    if (d1 < 0) {
        d2 -= d1;
        d1 = 0;
    }
    if (d2 < 0) {
        d1 -= d2;
        d2 = 0;
    }
    ib_pow10(&a, d1);
    ib_shl(&a, e1);
    ib_pow10(&b, d2);
    ib_shl(&b, e2);
    return ib_cmp(&a, &b);
}

static ib one(void)
{
    ib a;
    ib_set(&a, 0, 1);
    return a;
}

/* floor(log2(10^q)) = f  iff  2^f <= 10^q < 2^(f+1). */
static void test_flog2_pow10(void)
{
    ib o = one();
    for (int q = -400; q <= 400; q++) {
        int f = tw__flog2_pow10(q);
        CHECKF(cmp_terms(&o, f, 0, &o, 0, q) <= 0 && cmp_terms(&o, 0, q, &o, f + 1, 0) < 0,
               "flog2_pow10(%d) = %d", q, f);
    }
}

/* floor(log10(2^e)) = k  iff  10^k <= 2^e < 10^(k+1); the three-quarters
 * version with 3 * 2^(e-2) in place of 2^e. */
static void test_flog10_pow2(void)
{
    ib o = one(), three;
    ib_set(&three, 0, 3);
    for (int e = -1100; e <= 1100; e++) {
        int k = tw__flog10_pow2(e);
        CHECKF(cmp_terms(&o, 0, k, &o, e, 0) <= 0 && cmp_terms(&o, e, 0, &o, 0, k + 1) < 0,
               "flog10_pow2(%d) = %d", e, k);
        k = tw__flog10_three_quarters_pow2(e);
        CHECKF(cmp_terms(&o, 0, k, &three, e - 2, 0) <= 0 &&
                   cmp_terms(&three, e - 2, 0, &o, 0, k + 1) < 0,
               "flog10_three_quarters_pow2(%d) = %d", e, k);
    }
}

/* Entry q is T = floor(10^q 2^(127 - f)) with f = floor(log2 10^q):
 * T 2^(f-127) <= 10^q < (T+1) 2^(f-127), and bit 127 of T set.  Exact
 * (the lower bound an equality) for 0 <= q <= 55, where 5^q < 2^128.
 * Schubfach's g = floor(T / 4) + 1 then meets its own definition,
 * (g-1) 2^(f-125) <= 10^q < g 2^(f-125). */
static void test_table(void)
{
    ib o = one();
    int entries = 0;
    for (int q = TW__POW10_MIN; q <= TW__POW10_MAX; q++) {
        uint64_t t[2];
        tw__decimal_pow10(q, t);
        int f = tw__flog2_pow10(q);
        CHECKF(t[0] >> 63 == 1, "10^%d: bit 127 clear", q);
        ib lo, hi;
        ib_set(&lo, t[0], t[1]);
        hi = lo;
        ib_add1(&hi);
        int c = cmp_terms(&lo, f - 127, 0, &o, 0, q);
        CHECKF(c <= 0 && cmp_terms(&o, 0, q, &hi, f - 127, 0) < 0, "10^%d: not the floor", q);
        if (q >= 0 && q <= 55)
            CHECKF(c == 0, "10^%d: not exact", q);
        ib g;
        ib_set(&g, t[0] >> 2, (t[1] >> 2) | (t[0] << 62));
        ib gm1 = g;
        ib_add1(&g);
        CHECKF(cmp_terms(&gm1, f - 125, 0, &o, 0, q) <= 0 && cmp_terms(&o, 0, q, &g, f - 125, 0) < 0,
               "10^%d: Schubfach's g", q);
        entries++;
    }
    CHECK_EQ(entries, 667);
    /* Two entries known by heart. */
    uint64_t t[2];
    tw__decimal_pow10(0, t);
    CHECK(t[0] == 1ull << 63 && t[1] == 0);
    tw__decimal_pow10(-1, t);
    CHECK(t[0] == 0xccccccccccccccccull && t[1] == 0xccccccccccccccccull);
}

int main(void)
{
    test_flog2_pow10();
    test_flog10_pow2();
    test_table();
    return tw_check_done("common_decimal_table");
}
