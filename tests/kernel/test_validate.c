/* Bad input (kernel.md "Inputs"): every case returns its code and a
 * message and leaves the outputs untouched, for tw_sweep (both kernels),
 * tw_sweeper_run and tw_sweep_check; -E2BIG past a sweeper's max_bars. */
#include <errno.h>

#include "kernel/kernel_internal.h"
#include "kt.h"

enum { N = 64, K = 3 };

static double close_ok[N];
static int64_t combos_ok[K * TW_COMBO_WINDOWS];

/* Runs every entry point on (close, n, combos, k) and checks code, message
 * and untouched outputs. */
static void expect(const char *what, const double *close, size_t n, const int64_t *combos,
                   size_t k, int code)
{
    double pnl[K + 1];
    int64_t trades[K + 1];
    for (int kernel = 0; kernel < 2; kernel++)
        for (int way = 0; way < 3; way++) {
            for (int i = 0; i <= K; i++) {
                pnl[i] = 777.0;
                trades[i] = 777;
            }
            tw_error err = {0, ""};
            int rc;
            if (way == 0) {
                tw_sweep_opts o;
                tw_sweep_opts_init(&o);
                o.kernel = (tw_kernel_kind)kernel;
                o.threads = 2;
                rc = tw_sweep(close, n, combos, k, &o, pnl, trades, &err);
            } else if (way == 1) {
                tw_sweeper *s;
                tw_sweep_opts o;
                tw_sweep_opts_init(&o);
                o.kernel = (tw_kernel_kind)kernel;
                o.threads = 2;
                CHECK(tw_sweeper_create(&s, N, &o) == 0);
                rc = tw_sweeper_run(s, close, n, combos, k, pnl, trades, &err);
                tw_sweeper_destroy(s);
            } else {
                rc = tw_sweep_check(close, n, combos, k, &err);
            }
            CHECKF(rc == code, "%s (kernel %d, way %d): rc %d, want %d", what, kernel, way, rc,
                   code);
            CHECKF(err.code == code, "%s: err.code %d", what, err.code);
            CHECKF(strlen(err.msg) > 0, "%s: no message", what);
            for (int i = 0; i <= K; i++)
                CHECKF(pnl[i] == 777.0 && trades[i] == 777, "%s: output %d written", what, i);
            if (way == 0 && kernel == 0)
                printf("  %-28s -> %d: %s\n", what, rc, err.msg);
        }
}

static int progress_calls, progress_ok = 1;
static size_t progress_last;

static void on_progress(void *ctx, size_t done, size_t total)
{
    (void)ctx;
    progress_calls++;
    if (total != K || done > total || done < progress_last)
        progress_ok = 0;
    progress_last = done;
}

int main(void)
{
    for (int i = 0; i < N; i++)
        close_ok[i] = 100.0 + i % 7;
    for (int c = 0; c < K; c++)
        tw_combo_from_length(6 + 4 * c, combos_ok + c * TW_COMBO_WINDOWS);

    /* Windows out of range, in every position. */
    static const int64_t bad_w[] = {0, -1, 100001, INT64_MIN, INT64_MAX};
    for (size_t b = 0; b < TW_ARRAY_SIZE(bad_w); b++)
        for (int j = 0; j < TW_COMBO_WINDOWS; j++) {
            int64_t cb[K * TW_COMBO_WINDOWS];
            memcpy(cb, combos_ok, sizeof(cb));
            cb[1 * TW_COMBO_WINDOWS + j] = bad_w[b];
            char what[64];
            snprintf(what, sizeof(what), "window %lld at %d", (long long)bad_w[b], j);
            expect(what, close_ok, N, cb, K, -TW_EBADWINDOW);
        }
    /* The bounds themselves are fine. */
    {
        int64_t cb[TW_COMBO_WINDOWS] = {1, 100000, 1, 1, 100000, 1};
        tw_error err;
        CHECK(tw_sweep_check(close_ok, N, cb, 1, &err) == 0);
    }
    /* Prices. */
    static const double bad_p[] = {0.0, -0.0, -1.0, INFINITY, -INFINITY};
    for (size_t b = 0; b < TW_ARRAY_SIZE(bad_p); b++) {
        double cl[N];
        memcpy(cl, close_ok, sizeof(cl));
        cl[N / 2] = bad_p[b];
        char what[64];
        snprintf(what, sizeof(what), "price %g", bad_p[b]);
        expect(what, cl, N, combos_ok, K, -TW_EBADPRICE);
    }
    /* n = 0 and no combos. */
    expect("n = 0", close_ok, 0, combos_ok, K, -TW_ENODATA);
    expect("no combos", close_ok, N, combos_ok, 0, -TW_ENODATA);

    /* NaN is a gap, not an error. */
    {
        double cl[N], pnl[K];
        int64_t tr[K];
        memcpy(cl, close_ok, sizeof(cl));
        cl[5] = NAN;
        tw_error err;
        CHECK(tw_sweep(cl, N, combos_ok, K, NULL, pnl, tr, &err) == 0);
    }

    /* Past max_bars: -E2BIG, nothing written. */
    {
        tw_sweeper *s;
        CHECK(tw_sweeper_create(&s, N - 1, NULL) == 0);
        double pnl[K] = {777, 777, 777};
        int64_t tr[K] = {777, 777, 777};
        tw_error err = {0, ""};
        CHECK(tw_sweeper_run(s, close_ok, N, combos_ok, K, pnl, tr, &err) == -E2BIG);
        CHECK(strlen(err.msg) > 0);
        CHECK(pnl[0] == 777 && tr[2] == 777);
        /* And the same sweeper still works at its size. */
        CHECK(tw_sweeper_run(s, close_ok, N - 1, combos_ok, K, pnl, tr, &err) == 0);
        tw_sweeper_destroy(s);
    }
    /* Bad options. */
    {
        tw_sweep_opts o;
        tw_sweep_opts_init(&o);
        o.isa = (tw_isa)9;
        tw_sweeper *s;
        CHECK(tw_sweeper_create(&s, N, &o) == -EINVAL);
        o.isa = TW_ISA_AUTO;
        o.kernel = (tw_kernel_kind)5;
        CHECK(tw_sweeper_create(&s, N, &o) == -EINVAL);
        double pnl[K] = {777, 777, 777};
        int64_t tr[K];
        tw_error err = {0, ""};
        CHECK(tw_sweep(close_ok, N, combos_ok, K, &o, pnl, tr, &err) == -EINVAL);
        CHECK(pnl[0] == 777 && strlen(err.msg) > 0);
    }
    /* Sweeper queries and the progress callback. */
    {
        tw_sweep_opts o;
        tw_sweep_opts_init(&o);
        o.threads = 3;
        tw_sweeper *s;
        CHECK(tw_sweeper_create(&s, N, &o) == 0);
        CHECK(tw_sweeper_threads(s) == 3);
        CHECK(tw_sweeper_isa(s) == tw_isa_best());
        tw_sweeper_set_progress(s, on_progress, NULL);
        double pnl[K];
        int64_t tr[K];
        tw_error err;
        CHECK(tw_sweeper_run(s, close_ok, N, combos_ok, K, pnl, tr, &err) == 0);
        CHECK(progress_calls >= 1 && progress_last == K && progress_ok);
        tw_sweeper_destroy(s);
        o.kernel = TW_KERNEL_SCALAR;
        o.threads = 1;
        CHECK(tw_sweeper_create(&s, N, &o) == 0);
        CHECK(tw_sweeper_threads(s) == 1 && tw_sweeper_isa(s) == TW_ISA_SCALAR);
        tw_sweeper_destroy(s);
    }
    /* ISA queries. */
    CHECK(tw_isa_supported(TW_ISA_SCALAR));
    CHECK(tw_isa_supported(TW_ISA_AUTO));
    CHECK(tw_isa_supported(tw_isa_best()));
    CHECK(tw_isa_best() != TW_ISA_AUTO);
    CHECK(!strcmp(tw_isa_name(TW_ISA_AVX512), "avx512"));
    CHECK(!strcmp(tw_isa_name(TW_ISA_AVX2), "avx2"));
    printf("  best isa here: %s\n", tw_isa_name(tw_isa_best()));
    return tw_check_done("kernel_validate");
}
