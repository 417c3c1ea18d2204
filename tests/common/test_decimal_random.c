/* Random doubles, both directions (fix.md, "Exact prices").  One mode per
 * run, so that ctest runs them side by side:
 *
 *  bits, prices  COUNT doubles, uniformly random bit patterns or prices
 *                near 100 (ctest: 2 million, and 2 x 4 million), written
 *                shortest by tw_double_to_decimal and by "%.17g" put in
 *                FIX's fixed form: tw_decimal_to_double gives x back bit
 *                for bit, and strtod gives the same bits on the same text;
 *  reference     COUNT of them (ctest: 1 million, half of each kind)
 *                written shortest equal the reference shortest search
 *                (tw__double_to_decimal_ref) byte for byte;
 *  long          COUNT random decimals of 18 to 60 significant digits,
 *                some written out far past where they stop mattering,
 *                parse as strtod does.
 *
 * usage: common_decimal_random MODE COUNT [SEED].  The sanitizer build
 * (ASan+UBSan, -O0) runs a tenth: see tests/common/CMakeLists.txt. */
#include <stdlib.h>
#include <string.h>

#include "common/decimal_internal.h"
#include "test_decimal_util.h"
#include "tickwire/decimal.h"
#include "tw_check.h"

static int failures;

static void fail(const char *what, double x, const char *text)
{
    if (failures++ < 10)
        CHECKF(0, "%s: %a (%.17g) text '%s'", what, x, x, text);
    else
        tw_check_failures++;
}

static double draw(uint64_t *s, long i)
{
    return i & 1 ? random_price(s) : random_bits_double(s);
}

static void round_trips(long n, uint64_t seed, int prices)
{
    uint64_t s = seed;
    char a[TW_DECIMAL_MAX], g[40], gf[TW_DECIMAL_MAX];
    for (long i = 0; i < n && failures < 10; i++) {
        double x = prices ? random_price(&s) : random_bits_double(&s), y, z;
        size_t la = tw_double_to_decimal(x, a);
        if (tw_decimal_to_double(a, la, &y) != 0 || !same(y, x))
            fail("shortest does not round-trip", x, a);
        z = strtod(a, NULL);
        if (!same(z, x))
            fail("strtod reads the shortest text differently", x, a);
        snprintf(g, sizeof g, "%.17g", x);
        size_t lg = tw__decimal_fixed_from_printf(g, gf);
        if (tw_decimal_to_double(gf, lg, &y) != 0 || !same(y, x))
            fail("%.17g does not round-trip", x, gf);
        z = strtod(gf, NULL);
        if (!same(y, z))
            fail("%.17g: strtod differs", x, gf);
    }
}

static void versus_reference(long m, uint64_t seed)
{
    uint64_t s = seed;
    char a[TW_DECIMAL_MAX], b[TW_DECIMAL_MAX];
    for (long i = 0; i < m && failures < 10; i++) {
        double x = draw(&s, i);
        tw_double_to_decimal(x, a);
        tw__double_to_decimal_ref(x, b);
        if (strcmp(a, b) != 0) {
            fail("shortest differs from the reference", x, a);
            fprintf(stderr, "  reference '%s'\n", b);
        }
    }
}

/* A random decimal: 18..60 significant digits (sometimes a run of 0s or 9s
 * in the middle, the near-halfway shapes) times 10^-390 .. 10^300, in fixed
 * notation, sometimes padded with zeros past the last digit. */
static size_t random_long(uint64_t *s, char *out)
{
    char e[96];
    size_t o = 0;
    if (rng_next(s) % 4 == 0)
        e[o++] = '-';
    int nd = 18 + (int)(rng_next(s) % 43), fill = rng_next(s) % 2 ? '0' : '9';
    int from = rng_next(s) % 2 ? 16 + (int)(rng_next(s) % 3) : nd;
    e[o++] = (char)('1' + rng_next(s) % 9);
    e[o++] = '.';
    for (int i = 1; i < nd; i++)
        e[o++] = i >= from && i < nd - 1 ? (char)fill : (char)('0' + rng_next(s) % 10);
    snprintf(e + o, sizeof e - o, "e%d", (int)(rng_next(s) % 630) - 330);
    size_t n = tw__decimal_fixed_from_printf(e, out);
    if (strchr(out, '.') && rng_next(s) % 8 == 0) {
        size_t pad = rng_next(s) % 300;
        memset(out + n, '0', pad);
        n += pad;
        out[n] = 0;
    }
    return n;
}

static void long_texts(long l, uint64_t seed)
{
    uint64_t s = seed;
    char t[TW_DECIMAL_IN_MAX + 1];
    for (long i = 0; i < l && failures < 10; i++) {
        size_t n = random_long(&s, t);
        double y, z;
        int rc = tw_decimal_to_double(t, n, &y);
        z = strtod(t, NULL);
        if (rc != 0 || !same(y, z))
            fail("a long text differs from strtod", z, t);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: common_decimal_random bits|prices|reference|long COUNT [SEED]\n");
        return 2;
    }
    const char *mode = argv[1];
    long n = atol(argv[2]);
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 20240613;
    printf("common_decimal_random: %s, %ld values, seed %llu\n", mode, n, (unsigned long long)seed);
    if (!strcmp(mode, "bits") || !strcmp(mode, "prices"))
        round_trips(n, seed, !strcmp(mode, "prices"));
    else if (!strcmp(mode, "reference"))
        versus_reference(n, seed);
    else if (!strcmp(mode, "long"))
        long_texts(n, seed);
    else
        CHECKF(0, "unknown mode %s", mode);
    return tw_check_done("common_decimal_random");
}
