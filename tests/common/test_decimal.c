/* Exact decimal <-> double: the forms accepted and refused, and round trips
 * bit for bit. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tickwire/decimal.h"
#include "tw_check.h"

static int same(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static void test_parse_forms(void)
{
    static const struct { const char *s; int rc; double v; } cases[] = {
        { "100", 0, 100.0 },         { "100.0000000000001", 0, 100.0000000000001 },
        { "0.00001", 0, 0.00001 },   { "-2.5", 0, -2.5 },
        { ".5", 0, 0.5 },            { "5.", 0, 5.0 },
        { "007.50", 0, 7.5 },        { "", -EINVAL, 0 },
        { "-", -EINVAL, 0 },         { ".", -EINVAL, 0 },
        { "1.2.3", -EINVAL, 0 },     { "+1", -EINVAL, 0 },
        { "1e5", -EINVAL, 0 },       { " 1", -EINVAL, 0 },
        { "0x10", -EINVAL, 0 },      { "nan", -EINVAL, 0 },
    };
    for (size_t i = 0; i < TW_ARRAY_SIZE(cases); i++) {
        double v = -1;
        int rc = tw_decimal_to_double(cases[i].s, strlen(cases[i].s), &v);
        CHECKF(rc == cases[i].rc, "'%s': rc %d", cases[i].s, rc);
        if (rc == 0)
            CHECKF(same(v, cases[i].v), "'%s' -> %.17g", cases[i].s, v);
    }
    char big[TW_DECIMAL_IN_MAX + 2];
    memset(big, '1', sizeof big);
    double v;
    CHECK(tw_decimal_to_double(big, sizeof big, &v) == -E2BIG);
    /* Not NUL-terminated: the parser stops at len. */
    CHECK(tw_decimal_to_double("12345", 2, &v) == 0 && v == 12.0);
}

static void test_format(void)
{
    static const struct { double v; const char *s; } cases[] = {
        { 100.0, "100" },  { 100.0000000000001, "100.0000000000001" },
        { 0.00001, "0.00001" }, { -2.5, "-2.5" }, { 0.0, "0" }, { -0.0, "-0" },
        { 1e21, "1000000000000000000000" }, { 0.1, "0.1" }, { 123456.789, "123456.789" },
    };
    char buf[TW_DECIMAL_MAX];
    for (size_t i = 0; i < TW_ARRAY_SIZE(cases); i++) {
        size_t n = tw_double_to_decimal(cases[i].v, buf);
        CHECKF(n == strlen(buf) && strcmp(buf, cases[i].s) == 0, "%.17g -> '%s'", cases[i].v, buf);
    }
    /* Extremes fit the buffer and come back exactly. */
    double ext[] = { 4.9406564584124654e-324, 1.7976931348623157e308, 2.2250738585072014e-308 };
    for (size_t i = 0; i < TW_ARRAY_SIZE(ext); i++) {
        size_t n = tw_double_to_decimal(ext[i], buf);
        CHECK(n < TW_DECIMAL_MAX);
        double back;
        CHECK(tw_decimal_to_double(buf, n, &back) == 0 && same(back, ext[i]));
    }
}

static void test_round_trip(void)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    char buf[TW_DECIMAL_MAX];
    for (int i = 0; i < 200000; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        double x;
        uint64_t bits = s & ~(1ull << 63);
        memcpy(&x, &bits, sizeof x);
        if (!isfinite(x))
            continue;
        size_t n = tw_double_to_decimal(x, buf);
        double back;
        if (tw_decimal_to_double(buf, n, &back) != 0 || !same(back, x)) {
            CHECKF(0, "%a -> '%s' does not round-trip", x, buf);
            break;
        }
    }
}

int main(void)
{
    test_parse_forms();
    test_format();
    test_round_trip();
    return tw_check_done("common_decimal");
}
