/* Value decoders, table-driven: integers, quantities, fixed-point prices
 * and UTCTimestamps, valid and invalid, each read from a buffer that ends
 * at a guard page. */
#include "fix_test.h"

struct icase {
    const char *in;
    int rc;
    int64_t want;
};

static const struct icase i64_cases[] = {
    { "0", 0, 0 }, { "123", 0, 123 }, { "-5", 0, -5 }, { "00012", 0, 12 },
    { "12345678", 0, 12345678 }, { "123456789", 0, 123456789 },
    { "12345678901234567", 0, 12345678901234567ll },
    { "1234567890123456789", 0, 1234567890123456789ll },
    { "9223372036854775807", 0, INT64_MAX }, { "-9223372036854775807", 0, -INT64_MAX },
    { "9223372036854775808", -ERANGE, 0 }, { "99999999999999999999", -ERANGE, 0 },
    { "", -EINVAL, 0 }, { "-", -EINVAL, 0 }, { "+1", -EINVAL, 0 }, { "12a", -EINVAL, 0 }, { "1 2", -EINVAL, 0 },
    { "1234567/", -EINVAL, 0 }, { "1234567:", -EINVAL, 0 }, { "1.0", -EINVAL, 0 }, { "--EINVAL", -EINVAL, 0 },
};

struct fcase {
    const char *in;
    unsigned dec;
    int rc;
    int64_t want;
};

static const struct fcase fixed_cases[] = {
    { "172.35", 2, 0, 17235 }, { "172.35", 8, 0, 17235000000ll }, { "172.355", 2, -ERANGE, 0 },
    { "172.350", 2, 0, 17235 }, { "-0.5", 1, 0, -5 }, { "5", 3, 0, 5000 }, { "5", 0, 0, 5 },
    { "0", 8, 0, 0 }, { "5.", 2, -EINVAL, 0 }, { ".5", 2, -EINVAL, 0 }, { "1.2.3", 2, -EINVAL, 0 },
    { "-", 2, -EINVAL, 0 }, { "", 2, -EINVAL, 0 }, { "1e5", 2, -EINVAL, 0 }, { "1,5", 2, -EINVAL, 0 },
    { "92233720368.54775807", 8, 0, INT64_MAX }, { "92233720368.54775808", 8, -ERANGE, 0 },
    { "92233720369", 8, -ERANGE, 0 }, { "1", 19, -EINVAL, 0 }, { "0.000000001", 8, -ERANGE, 0 },
    { "0.00000001", 8, 0, 1 }, { "0.000000010000", 8, 0, 1 },
    { "12345678901234.5", 4, 0, 123456789012345000ll }, { "1.08345", 8, 0, 108345000 },
    { "-1.08345", 5, 0, -108345 }, { "100.00", 0, 0, 100 }, { "100.01", 0, -ERANGE, 0 },
};

struct tcase {
    const char *in;
    int rc;
    int64_t want;
};

#define S(x) ((int64_t)(x) * 1000000000ll)
static const struct tcase ts_cases[] = {
    { "19700101-00:00:00", 0, 0 },
    { "20090107-18:15:16", 0, S(1231352116) },
    { "20240315-14:30:00.123", 0, S(1710513000) + 123000000 },
    { "20240315-14:30:00.123456", 0, S(1710513000) + 123456000 },
    { "20240315-14:30:00.123456789", 0, S(1710513000) + 123456789 },
    { "22620411-00:00:00", 0, S(9223286400ll) }, /* near the end of int64 ns */
    { "22620412-00:00:00", -ERANGE, 0 },              /* past it: an error, not a wrap */
    { "60240315-14:30:00", -ERANGE, 0 },
    { "16770921-00:00:00", -ERANGE, 0 },
    { "20240315-14:30:00.000000001", 0, S(1710513000) + 1 },
    { "20240229-00:00:00", 0, S(1709164800) },
    { "20000229-12:00:00", 0, S(951825600) },
    { "19691231-23:59:59", 0, S(-1) },
    { "20240315-23:59:60", 0, S(1710547199) + S(1) }, /* leap second */
    { "20230229-00:00:00", -EINVAL, 0 }, { "21000229-00:00:00", -EINVAL, 0 },
    { "20241301-00:00:00", -EINVAL, 0 }, { "20240001-00:00:00", -EINVAL, 0 },
    { "20240100-00:00:00", -EINVAL, 0 }, { "20240431-00:00:00", -EINVAL, 0 },
    { "20240315-24:00:00", -EINVAL, 0 }, { "20240315-23:60:00", -EINVAL, 0 },
    { "20240315-23:59:61", -EINVAL, 0 }, { "20240315-14:30:00.12", -EINVAL, 0 },
    { "20240315-14:30:00.1234", -EINVAL, 0 }, { "20240315-14:30:00.12a", -EINVAL, 0 },
    { "20240315-14:30:00,123", -EINVAL, 0 }, { "2024031514:30:00", -EINVAL, 0 },
    { "20240315-14-30:00", -EINVAL, 0 }, { "2024O315-14:30:00", -EINVAL, 0 },
    { "20240315-14:30:0 ", -EINVAL, 0 }, { "", -EINVAL, 0 }, { "20240315", -EINVAL, 0 },
};

int main(void)
{
    for (size_t i = 0; i < TW_ARRAY_SIZE(i64_cases); i++) {
        const struct icase *c = &i64_cases[i];
        size_t n = strlen(c->in);
        guard g = guard_alloc(c->in, n);
        int64_t v = 77;
        int rc = tw_fix_to_i64(g.p, (uint32_t)n, &v);
        if (rc != c->rc || (rc == 0 && v != c->want))
            fprintf(stderr, "i64 '%s': rc %d v %lld\n", c->in, rc, (long long)v);
        CHECK_EQ(rc, c->rc);
        if (rc == 0)
            CHECK_EQ(v, c->want);
        guard_free(&g);
    }
    for (size_t i = 0; i < TW_ARRAY_SIZE(fixed_cases); i++) {
        const struct fcase *c = &fixed_cases[i];
        size_t n = strlen(c->in);
        guard g = guard_alloc(c->in, n);
        int64_t v = 77;
        int rc = tw_fix_to_fixed(g.p, (uint32_t)n, c->dec, &v);
        if (rc != c->rc || (rc == 0 && v != c->want))
            fprintf(stderr, "fixed '%s'/%u: rc %d v %lld\n", c->in, c->dec, rc, (long long)v);
        CHECK_EQ(rc, c->rc);
        if (rc == 0)
            CHECK_EQ(v, c->want);
        if (c->dec == 0) { /* quantities are fixed point with no decimals */
            int64_t q = 0;
            CHECK_EQ(tw_fix_to_qty(g.p, (uint32_t)n, &q), c->rc);
            if (c->rc == 0)
                CHECK_EQ(q, c->want);
        }
        guard_free(&g);
    }
    for (size_t i = 0; i < TW_ARRAY_SIZE(ts_cases); i++) {
        const struct tcase *c = &ts_cases[i];
        size_t n = strlen(c->in);
        guard g = guard_alloc(c->in, n);
        int64_t v = 77;
        int rc = tw_fix_to_epoch_ns(g.p, (uint32_t)n, &v);
        if (rc != c->rc || (rc == 0 && v != c->want))
            fprintf(stderr, "ts '%s': rc %d v %lld\n", c->in, rc, (long long)v);
        CHECK_EQ(rc, c->rc);
        if (rc == 0)
            CHECK_EQ(v, c->want);
        guard_free(&g);
    }
    /* Every day from 1970 to 2100 against a day counter: catches a
     * calendar slip anywhere, not only on the dates listed above. */
    static const int dm[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    int64_t day = 0;
    for (int y = 1970; y < 2100; y++)
        for (int m = 1; m <= 12; m++) {
            int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            int nd = dm[m - 1] + (m == 2 && leap);
            for (int d = 1; d <= nd; d++, day++) {
                char b[32];
                snprintf(b, sizeof(b), "%04d%02d%02d-12:34:56.789", y, m, d);
                int64_t v;
                CHECK_EQ(tw_fix_to_epoch_ns(b, 21, &v), 0);
                CHECK_EQ(v, S(day * 86400 + 12 * 3600 + 34 * 60 + 56) + 789000000);
            }
            char b[32];
            snprintf(b, sizeof(b), "%04d%02d%02d-00:00:00", y, m, nd + 1);
            int64_t v;
            CHECK_EQ(tw_fix_to_epoch_ns(b, 17, &v), -EINVAL);
        }
    int b = 5;
    CHECK_EQ(tw_fix_to_bool("Y", 1, &b), 0);
    CHECK_EQ(b, 1);
    CHECK_EQ(tw_fix_to_bool("N", 1, &b), 0);
    CHECK_EQ(b, 0);
    CHECK_EQ(tw_fix_to_bool("y", 1, &b), -EINVAL);
    CHECK_EQ(tw_fix_to_bool("YY", 2, &b), -EINVAL);
    return tw_check_done("fix values");
}
