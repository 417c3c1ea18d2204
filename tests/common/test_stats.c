/* The benchmarks' order statistics (tools/common/stats.h) against a
 * reference computed by counting: the median of odd and even counts, the
 * nearest-rank percentile at and between ranks, both element types, and
 * the empty and one-sample edges. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/stats.h"
#include "tw_check.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* How many of v[0..n) are <= x. */
static size_t at_most(const double *v, size_t n, double x)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += v[i] <= x;
    return c;
}

int main(void)
{
    CHECK(tw__median_f64(NULL, 0) == 0 && tw__median_u64(NULL, 0) == 0);
    CHECK(tw__pct_f64(NULL, 0, 0.5) == 0 && tw__pct_u64(NULL, 0, 0.5) == 0);
    double one = 7;
    CHECK(tw__median_f64(&one, 1) == 7 && tw__pct_f64(&one, 1, 0) == 7 &&
          tw__pct_f64(&one, 1, 1) == 7);
    double ev[4] = {4, 1, 3, 2};
    CHECK(tw__median_f64(ev, 4) == 2.5);
    CHECK(ev[0] == 1 && ev[1] == 2 && ev[2] == 3 && ev[3] == 4); /* sorted in place */
    uint64_t eu[4] = {40, 10, 30, 20};
    CHECK(tw__median_u64(eu, 4) == 25);
    /* Nearest rank on 1..10: p = 0.5 is 5, 0.51 is 6, 0.99 and 1 are 10. */
    uint64_t t[10];
    for (int i = 0; i < 10; i++)
        t[i] = (uint64_t)(10 - i);
    tw__sort_u64(t, 10);
    CHECK_EQ(tw__pct_u64(t, 10, 0.5), 5);
    CHECK_EQ(tw__pct_u64(t, 10, 0.51), 6);
    CHECK_EQ(tw__pct_u64(t, 10, 0.99), 10);
    CHECK_EQ(tw__pct_u64(t, 10, 1.0), 10);
    CHECK_EQ(tw__pct_u64(t, 10, 0.0), 1);
    for (int r = 0; r < 2000; r++) {
        size_t n = 1 + next() % 300;
        double v[300], w[300];
        for (size_t i = 0; i < n; i++)
            w[i] = v[i] = (double)(next() % 50); /* ties */
        tw__sort_f64(v, n);
        for (size_t i = 1; i < n; i++)
            CHECK(v[i - 1] <= v[i]);
        double p = (double)(next() % 1001) / 1000;
        double q = tw__pct_f64(v, n, p);
        /* The nearest rank: at least ceil(n p) samples at most q, and
         * fewer than that below q (q is the smallest such sample). */
        size_t need = (size_t)ceil((double)n * p);
        CHECKF(at_most(w, n, q) >= need, "n %zu p %g q %g", n, p, q);
        size_t below = 0;
        for (size_t i = 0; i < n; i++)
            below += w[i] < q;
        CHECKF(need == 0 ? q == v[0] : below < need, "n %zu p %g q %g", n, p, q);
        double m = tw__median_f64(w, n);
        CHECK(m == (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])));
    }
    return tw_check_done("common_stats");
}
