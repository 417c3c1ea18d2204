/* Helpers the decimal tests share: bit-exact comparison, a seeded random
 * generator, random doubles of the two kinds the tests need, and exact
 * decimal arithmetic on fixed-notation text (to build exact midpoints
 * between neighbouring doubles, the hardest inputs a parser gets). */
#ifndef TW_TESTS_DECIMAL_UTIL_H
#define TW_TESTS_DECIMAL_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static inline uint64_t dbits(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static inline double dfrom(uint64_t b)
{
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

static inline int same(double a, double b) { return dbits(a) == dbits(b); }

/* splitmix64: small, seeded, good enough to draw test inputs. */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A finite double from a uniformly random bit pattern (any sign, any
 * exponent: subnormals and huge values as often as prices). */
static inline double random_bits_double(uint64_t *s)
{
    for (;;) {
        double x = dfrom(rng_next(s));
        if (isfinite(x))
            return x;
    }
}

/* A price near 100: 100 * (1 + u), u uniform in [-0.25, 0.25) with all 53
 * bits random, so most have 17 significant digits. */
static inline double random_price(uint64_t *s)
{
    double u = (double)(rng_next(s) >> 11) * 0x1p-53 - 0.5;
    return 100.0 * (1.0 + 0.5 * u);
}

/* Exact decimal numbers in fixed notation: DN_INT integer digits and
 * DN_FRAC fraction digits, most significant first.  Every finite double
 * fits (309 integer digits, 1074 fraction digits) with room for halving. */
#define DN_INT 320
#define DN_FRAC 1090
typedef struct dnum {
    unsigned char d[DN_INT + DN_FRAC];
} dnum;

/* The exact value of a finite x >= 0 (glibc's printf prints it exactly). */
static inline void dn_from_double(double x, dnum *n)
{
    static char buf[DN_INT + DN_FRAC + 16];
    memset(n, 0, sizeof *n);
    int len = snprintf(buf, sizeof buf, "%.1080f", x);
    const char *dot = strchr(buf, '.');
    int ni = (int)(dot - buf);
    for (int i = 0; i < ni; i++)
        n->d[DN_INT - ni + i] = (unsigned char)(buf[i] - '0');
    for (int i = ni + 1; i < len; i++)
        n->d[DN_INT + i - ni - 1] = (unsigned char)(buf[i] - '0');
}

static inline void dn_add(dnum *a, const dnum *b)
{
    int carry = 0;
    for (int i = DN_INT + DN_FRAC; i-- > 0;) {
        int v = a->d[i] + b->d[i] + carry;
        a->d[i] = (unsigned char)(v % 10);
        carry = v / 10;
    }
}

static inline void dn_half(dnum *a)
{
    int rem = 0;
    for (int i = 0; i < DN_INT + DN_FRAC; i++) {
        int v = rem * 10 + a->d[i];
        a->d[i] = (unsigned char)(v / 2);
        rem = v % 2;
    }
}

/* Index of the last nonzero digit (-1 for zero). */
static inline int dn_last(const dnum *a)
{
    for (int i = DN_INT + DN_FRAC; i-- > 0;)
        if (a->d[i])
            return i;
    return -1;
}

/* a -= one unit in digit position pos (a > that unit). */
static inline void dn_sub_unit(dnum *a, int pos)
{
    int i = pos;
    while (a->d[i] == 0)
        a->d[i--] = 9;
    a->d[i]--;
}

/* Fixed-notation text (no leading zeros, no trailing fraction zeros, "0"
 * for zero); returns its length. */
static inline size_t dn_text(const dnum *a, char *out)
{
    int first = 0, last = dn_last(a);
    while (first < DN_INT - 1 && a->d[first] == 0)
        first++;
    size_t o = 0;
    for (int i = first; i < DN_INT; i++)
        out[o++] = (char)('0' + a->d[i]);
    if (last >= DN_INT) {
        out[o++] = '.';
        for (int i = DN_INT; i <= last; i++)
            out[o++] = (char)('0' + a->d[i]);
    }
    out[o] = 0;
    return o;
}

/* The exact midpoint between the doubles with bits b and b + 1 (b finite,
 * positive or zero): b's value plus half its ulp (the gap above b is b's
 * ulp even at the top of a binade, and that ulp is itself a double). */
static inline void dn_midpoint(uint64_t b, dnum *mid)
{
    int be = (int)(b >> 52);
    double ulp = ldexp(1.0, be ? be - 1075 : -1074);
    dnum u;
    dn_from_double(dfrom(b), mid);
    dn_from_double(ulp, &u);
    dn_half(&u);
    dn_add(mid, &u);
}

#endif
