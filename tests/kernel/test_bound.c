/* Bound datasets (tw_sweeper_bind / tw_sweeper_run_bound): results are
 * bit-identical to tw_sweeper_run() whatever the history of the sweeper's
 * window cache: random grids over data with NaN gaps, one combo per call
 * and in chunks, repeated calls (warm cache), two datasets interleaved,
 * the same buffer rebound under a new tag after its prices changed, plain
 * runs in between (which empty the shared cache), a tiny cache that must
 * be emptied and refilled, every ISA, 1 and 2 threads, the scalar kernel.
 * Then the errors: unbound, bad windows (nothing written, binding kept),
 * bad prices and too many bars at bind (left unbound), n_combos == 0. */
#include <errno.h>

#include "kernel/kernel_internal.h"
#include "kt.h"

static uint64_t seed0 = 20261130;

/* Windows drawn from a small pool so that combos share windows (the cache
 * has something to reuse), with some beyond n (all-NaN passes). */
static void make_grid(uint64_t *rs, int64_t *combos, size_t n_combos, size_t n)
{
    for (size_t k = 0; k < n_combos * TW_COMBO_WINDOWS; k++) {
        uint64_t r = kt_rand(rs) % 100;
        if (r < 5)
            combos[k] = 1;
        else if (r < 10)
            combos[k] = (int64_t)n + 1 + (int64_t)(kt_rand(rs) % 50);
        else
            combos[k] = 2 + (int64_t)(kt_rand(rs) % 40) * 7;
    }
}

static int same_results(const double *pa, const int64_t *ta, const double *pb,
                        const int64_t *tb, size_t n_combos, const char *what)
{
    for (size_t k = 0; k < n_combos; k++)
        if (!kt_same(pa[k], pb[k]) || ta[k] != tb[k]) {
            CHECKF(0, "%s: combo %zu: pnl %.17g vs %.17g, trades %lld vs %lld (seed %llu)",
                   what, k, pa[k], pb[k], (long long)ta[k], (long long)tb[k],
                   (unsigned long long)seed0);
            return 0;
        }
    return 1;
}

/* Runs `combos` on the bound sweeper in calls of `step` combos. */
static int run_in_steps(tw_sweeper *s, const int64_t *combos, size_t n_combos, size_t step,
                        double *pnl, int64_t *trades)
{
    tw_error err = {0};
    for (size_t k = 0; k < n_combos; k += step) {
        size_t m = n_combos - k < step ? n_combos - k : step;
        int rc = tw_sweeper_run_bound(s, combos + k * TW_COMBO_WINDOWS, m, pnl + k,
                                      trades + k, &err);
        if (rc) {
            CHECKF(0, "run_bound: %d %s", rc, err.msg);
            return rc;
        }
    }
    return 0;
}

static void scenario(uint64_t *rs, const tw_sweep_opts *o, size_t cache_bytes)
{
    enum { NC = 40 };
    size_t n = 200 + (size_t)(kt_rand(rs) % 2500);
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
    kt_series(rs, a, n, (int)(kt_rand(rs) % 6));
    kt_series(rs, b, n, (int)(kt_rand(rs) % 6));
    int64_t grid[NC * TW_COMBO_WINDOWS];
    make_grid(rs, grid, NC, n);
    double ref_a[NC], ref_b[NC], pnl[NC];
    int64_t tr_a[NC], tr_b[NC], tr[NC];
    tw_error err = {0};
    tw_sweeper *ref, *s;
    CHECK(tw_sweeper_create(&ref, n, o) == 0);
    CHECK(tw__sweeper_create_ex(&s, n, o, cache_bytes) == 0);
    CHECK(tw_sweeper_run(ref, a, n, grid, NC, ref_a, tr_a, &err) == 0);
    CHECK(tw_sweeper_run(ref, b, n, grid, NC, ref_b, tr_b, &err) == 0);
    char what[128];
    snprintf(what, sizeof(what), "isa %s threads %u cache %zu n %zu",
             tw_isa_name(tw_sweeper_isa(s)), tw_sweeper_threads(s), cache_bytes, n);

    /* One combo per call, twice over (the second pass on a warm cache). */
    CHECK(tw_sweeper_bind(s, a, n, 1, &err) == 0);
    for (int pass = 0; pass < 2; pass++) {
        memset(pnl, 0, sizeof(pnl));
        if (run_in_steps(s, grid, NC, 1, pnl, tr) == 0)
            same_results(ref_a, tr_a, pnl, tr, NC, what);
    }
    /* Chunks of 7, then the whole grid in one call. */
    if (run_in_steps(s, grid, NC, 7, pnl, tr) == 0)
        same_results(ref_a, tr_a, pnl, tr, NC, what);
    if (run_in_steps(s, grid, NC, NC, pnl, tr) == 0)
        same_results(ref_a, tr_a, pnl, tr, NC, what);

    /* Interleaved datasets: A, B, A, B by tag; a rebind of the same
     * (pointer, n, tag) keeps the binding. */
    for (int r = 0; r < 4; r++) {
        const double *x = r & 1 ? b : a;
        CHECK(tw_sweeper_bind(s, x, n, r & 1 ? 2 : 1, &err) == 0);
        CHECK(tw_sweeper_bind(s, x, n, r & 1 ? 2 : 1, &err) == 0);
        if (run_in_steps(s, grid, NC, 3, pnl, tr) == 0)
            same_results(r & 1 ? ref_b : ref_a, r & 1 ? tr_b : tr_a, pnl, tr, NC, what);
    }
    uint64_t tag = 0;
    CHECK(tw_sweeper_bound_tag(s, &tag) == 1 && tag == 2);

    /* A plain run in between empties the shared cache, not the binding. */
    CHECK(tw_sweeper_run(s, a, n, grid, NC, pnl, tr, &err) == 0);
    same_results(ref_a, tr_a, pnl, tr, NC, what);
    if (run_in_steps(s, grid, NC, 1, pnl, tr) == 0)
        same_results(ref_b, tr_b, pnl, tr, NC, what);

    /* The same buffer with new prices under a new tag: results of the new
     * prices, not of cached passes over the old ones. */
    CHECK(tw_sweeper_bind(s, a, n, 1, &err) == 0);
    CHECK(run_in_steps(s, grid, NC, 1, pnl, tr) == 0); /* cache warm with A */
    memcpy(a, b, n * sizeof(double));
    CHECK(tw_sweeper_bind(s, a, n, 3, &err) == 0);
    if (run_in_steps(s, grid, NC, 1, pnl, tr) == 0)
        same_results(ref_b, tr_b, pnl, tr, NC, what);

    /* A shorter prefix of the same buffer is another dataset too. */
    size_t m = n / 2;
    double ref_m[NC];
    int64_t tr_m[NC];
    CHECK(tw_sweeper_run(ref, a, m, grid, NC, ref_m, tr_m, &err) == 0);
    CHECK(tw_sweeper_bind(s, a, m, 3, &err) == 0);
    if (run_in_steps(s, grid, NC, 5, pnl, tr) == 0)
        same_results(ref_m, tr_m, pnl, tr, NC, what);

    tw_sweeper_unbind(s);
    CHECK(tw_sweeper_bound_tag(s, &tag) == 0 && tag == 0);
    CHECK(tw_sweeper_run_bound(s, grid, 1, pnl, tr, &err) == -EINVAL);
    tw_sweeper_destroy(s);
    tw_sweeper_destroy(ref);
    free(a);
    free(b);
}

static void errors(void)
{
    enum { N = 500 };
    double x[N];
    uint64_t rs = seed0;
    kt_series(&rs, x, N, 2);
    tw_sweeper *s;
    tw_error err = {0};
    tw_sweep_opts o;
    tw_sweep_opts_init(&o);
    o.threads = 2;
    CHECK(tw_sweeper_create(&s, N, &o) == 0);
    int64_t good[TW_COMBO_WINDOWS] = {10, 20, 4, 7, 10, 20};
    double pnl[2] = {-1.0, -1.0};
    int64_t tr[2] = {-1, -1};

    /* Nothing bound yet. */
    err.msg[0] = 0;
    CHECK(tw_sweeper_run_bound(s, good, 1, pnl, tr, &err) == -EINVAL);
    CHECKF(strstr(err.msg, "bound") != NULL, "message: %s", err.msg);
    CHECK(pnl[0] == -1.0 && tr[0] == -1);

    CHECK(tw_sweeper_bind(s, x, N, 7, &err) == 0);
    /* Bad windows: an error naming the combo and window, nothing written,
     * the binding kept. */
    int64_t bad[2 * TW_COMBO_WINDOWS] = {10, 20, 4, 7, 10, 20, 10, 20, 4, 0, 10, 20};
    CHECK(tw_sweeper_run_bound(s, bad, 2, pnl, tr, &err) == -TW_EBADWINDOW);
    CHECKF(strstr(err.msg, "combo 1") && strstr(err.msg, "t_third"), "message: %s", err.msg);
    CHECK(pnl[0] == -1.0 && pnl[1] == -1.0 && tr[0] == -1 && tr[1] == -1);
    bad[TW_COMBO_WINDOWS + 3] = TW_WINDOW_MAX + 1;
    CHECK(tw_sweeper_run_bound(s, bad, 2, pnl, tr, &err) == -TW_EBADWINDOW);
    bad[TW_COMBO_WINDOWS + 3] = -5;
    CHECK(tw_sweeper_run_bound(s, bad, 2, pnl, tr, &err) == -TW_EBADWINDOW);
    CHECK(pnl[0] == -1.0 && pnl[1] == -1.0);
    CHECK(tw_sweeper_run_bound(s, good, 0, pnl, tr, &err) == -TW_ENODATA);
    CHECK(tw_sweeper_run_bound(s, good, 1, pnl, tr, &err) == 0);
    double want;
    int64_t want_tr;
    CHECK(tw_sweep(x, N, good, 1, &o, &want, &want_tr, &err) == 0);
    CHECK(kt_same(pnl[0], want) && tr[0] == want_tr);

    /* Bad binds leave the sweeper unbound. */
    double y[N];
    memcpy(y, x, sizeof(y));
    y[123] = -1.0;
    CHECK(tw_sweeper_bind(s, y, N, 8, &err) == -TW_EBADPRICE);
    CHECKF(strstr(err.msg, "bar 123") != NULL, "message: %s", err.msg);
    CHECK(tw_sweeper_bound_tag(s, NULL) == 0);
    CHECK(tw_sweeper_run_bound(s, good, 1, pnl, tr, &err) == -EINVAL);
    y[123] = INFINITY;
    CHECK(tw_sweeper_bind(s, y, N, 8, &err) == -TW_EBADPRICE);
    CHECK(tw_sweeper_bind(s, x, 0, 9, &err) == -TW_ENODATA);
    CHECK(tw_sweeper_bound_tag(s, NULL) == 0);
    double big[N + 1];
    memcpy(big, x, sizeof(x));
    big[N] = 100.0;
    CHECK(tw_sweeper_bind(s, big, N + 1, 10, &err) == -E2BIG);
    CHECK(tw_sweeper_bound_tag(s, NULL) == 0);
    /* A failed bind after a good one does not keep the old binding. */
    CHECK(tw_sweeper_bind(s, x, N, 7, &err) == 0);
    CHECK(tw_sweeper_bind(s, y, N, 8, &err) == -TW_EBADPRICE);
    CHECK(tw_sweeper_run_bound(s, good, 1, pnl, tr, &err) == -EINVAL);
    tw_sweeper_destroy(s);
}

int main(void)
{
    const char *env = getenv("TW_TEST_SEED");
    if (env)
        seed0 = strtoull(env, NULL, 10);
    uint64_t rs = seed0;
    for (int isa = TW_ISA_SCALAR; isa <= TW_ISA_AVX512; isa++) {
        if (!tw_isa_supported((tw_isa)isa))
            continue;
        for (unsigned threads = 1; threads <= 2; threads++) {
            tw_sweep_opts o;
            tw_sweep_opts_init(&o);
            o.isa = (tw_isa)isa;
            o.threads = threads;
            for (int rep = 0; rep < 3; rep++) {
                scenario(&rs, &o, (size_t)256 << 20);
                /* A cache of a few slots: runs must empty and refill it. */
                scenario(&rs, &o, 7 * 2700 * sizeof(double));
            }
        }
    }
    tw_sweep_opts o;
    tw_sweep_opts_init(&o);
    o.kernel = TW_KERNEL_SCALAR;
    o.threads = 2;
    scenario(&rs, &o, (size_t)256 << 20);
    errors();
    return tw_check_done("kernel_bound");
}
