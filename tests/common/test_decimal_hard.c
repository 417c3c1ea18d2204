/* The hardest parser inputs, built exactly: for random neighbouring
 * doubles b and b+1 (random bit patterns, prices, subnormals), the exact
 * decimal midpoint between them (up to 1077 bytes: the exact halfway point
 * has up to 767 significant digits), the same a hair above (a 1 three
 * digits past its end) and a hair below.  The midpoint must go to the even
 * one, the others to their side, and strtod must agree.  Eisel-Lemire
 * cannot decide these, so they exercise the big-integer slow path.
 *
 * usage: common_decimal_hard [count [seed]] */
#include <stdlib.h>
#include <string.h>

#include "common/decimal_internal.h"
#include "test_decimal_util.h"
#include "tickwire/decimal.h"
#include "tw_check.h"

static int failures;

static void check(const char *text, size_t n, uint64_t want, const char *what)
{
    double v = -1;
    int rc = tw_decimal_to_double(text, n, &v);
    double r = strtod(text, NULL);
    if (rc != 0 || dbits(v) != want || dbits(r) != want) {
        if (failures++ < 10)
            CHECKF(0, "%s: got %a, strtod %a, want %a; text %.60s... (%zu bytes)", what, v, r,
                   dfrom(want), text, n);
        else
            tw_check_failures++;
    }
}

static void one(uint64_t b)
{
    static char s[DN_INT + DN_FRAC + 4];
    dnum mid;
    dn_midpoint(b, &mid);
    /* The hair: three digits past the midpoint's last, and in the fraction
     * even when the midpoint is an integer (whose ulp is then at least 1). */
    int last = dn_last(&mid), hair = last + 3 < DN_INT + 2 ? DN_INT + 2 : last + 3;
    size_t n = dn_text(&mid, s);
    if (n > TW_DECIMAL_IN_MAX - 5 || hair >= DN_INT + DN_FRAC)
        return;
    check(s, n, b & 1 ? b + 1 : b, "midpoint");
    dnum up = mid;
    up.d[hair] = 1;
    n = dn_text(&up, s);
    check(s, n, b + 1, "midpoint + a hair");
    dnum down = mid;
    dn_sub_unit(&down, hair);
    n = dn_text(&down, s);
    check(s, n, b, "midpoint - a hair");
}

int main(int argc, char **argv)
{
    long count = argc > 1 ? atol(argv[1]) : 20000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
    printf("common_decimal_hard: %ld neighbour pairs, seed %llu\n", count,
           (unsigned long long)seed);
    uint64_t s = seed;
    for (long i = 0; i < count && failures < 10; i++) {
        uint64_t b;
        switch (i % 4) {
        case 0: b = dbits(fabs(random_bits_double(&s))); break;
        case 1: b = dbits(random_price(&s)); break;
        case 2: b = rng_next(&s) % (1ull << 53); break; /* subnormals, DBL_MIN's binade */
        default: b = dbits(fabs(random_bits_double(&s))) | 0x000ffffffffff000ull; break;
        }
        if (b >= 0x7fefffffffffffffull)
            continue;
        one(b);
    }
    return tw_check_done("common_decimal_hard");
}
