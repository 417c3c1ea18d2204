/* tickwire bench kernel: the C side of the sweep benchmark (issue 2, §6).
 * The 80-combo sweep with the C scalar reference, the exact kernel on one
 * thread and on all threads, the median of --runs runs each; every run's
 * results are checked bit for bit against the scalar reference before any
 * figure is printed.  bench/kernel/sweep_vs_numba.py adds numba with
 * `tickwire bench kernel --data F --json --runs N`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/cli_kernel.h"
#include "tickwire/clock.h"

int tw__cli_bench_kernel(int argc, char **argv);

static const char usage[] =
    "usage: tickwire bench kernel [--data FILE [--column NAME]] [--synthetic N] [--seed S]\n"
    "                             [--grid FILE] [--runs R] [--threads T] [--isa I] [--json]\n"
    "\n"
    "Times the sweep (default: the 80-combo grid on 150000 synthetic bars, or on --data, e.g.\n"
    "the study dataset as raw float64): C scalar reference (1 thread), exact kernel on 1\n"
    "thread and on T threads (default: every online core); median of R runs (default 5).\n"
    "Each variant runs once untimed first; then they take turns, run by run.\n"
    "Results must be bit-identical to the scalar reference or it exits 1.\n"
    "  --json   one line: {\"scalar_s\":..,\"exact1_s\":..,\"exactN_s\":..,\"threads\":T,\n"
    "           \"isa\":\"..\",\"identical\":true,...}\n";

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* One timed run of a sweeper; checks the result against the reference.
 * Returns the seconds, or -1 after printing the error. */
static double time_run(tw_sweeper *s, const double *close, size_t n, const int64_t *combos,
                       size_t k, double *pnl, int64_t *trades, const double *ref_pnl,
                       const int64_t *ref_trades, int *identical)
{
    tw_error err;
    double t0 = (1e-9 * (double)tw_clock_now_ns());
    int rc = tw_sweeper_run(s, close, n, combos, k, pnl, trades, &err);
    double dt = (1e-9 * (double)tw_clock_now_ns()) - t0;
    if (rc) {
        fprintf(stderr, "tickwire bench kernel: %s\n", err.msg);
        return -1;
    }
    if (memcmp(pnl, ref_pnl, k * sizeof(double)) || memcmp(trades, ref_trades, k * sizeof(int64_t)))
        *identical = 0;
    return dt;
}

int tw__cli_bench_kernel(int argc, char **argv)
{
    const char *data = NULL, *column = NULL, *grid = NULL;
    uint64_t synthetic = 150000, seed = 42, runs = 5, threads = 0;
    int json = 0;
    tw_isa isa = TW_ISA_AUTO;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
            continue;
        }
        const char *a, *v;
        int r = tw__cli_opt_value("bench kernel", usage, argc, argv, &i, &a, &v);
        if (r)
            return r > 0 ? 0 : 2;
        int bad = 0;
        if (!strcmp(a, "--data"))
            data = v;
        else if (!strcmp(a, "--column"))
            column = v;
        else if (!strcmp(a, "--grid"))
            grid = v;
        else if (!strcmp(a, "--synthetic"))
            bad = tw__cli_u64("bench kernel", a, v, &synthetic);
        else if (!strcmp(a, "--seed"))
            bad = tw__cli_u64("bench kernel", a, v, &seed);
        else if (!strcmp(a, "--runs"))
            bad = tw__cli_u64("bench kernel", a, v, &runs);
        else if (!strcmp(a, "--threads"))
            bad = tw__cli_u64("bench kernel", a, v, &threads);
        else if (!strcmp(a, "--isa")) {
            int found = 0;
            for (int q = TW_ISA_AUTO; q <= TW_ISA_AVX512; q++)
                if (!strcmp(v, tw_isa_name((tw_isa)q))) {
                    isa = (tw_isa)q;
                    found = 1;
                }
            if (!found) {
                fprintf(stderr, "tickwire bench kernel: --isa must be auto, scalar, avx2 or avx512\n");
                return 2;
            }
        } else {
            fprintf(stderr, "tickwire bench kernel: unknown option '%s' (see --help)\n", a);
            return 2;
        }
        if (bad)
            return 2;
    }
    if (runs < 1 || runs > 64) {
        fprintf(stderr, "tickwire bench kernel: --runs must be in [1, 64]\n");
        return 2;
    }
    if (threads > 1024) {
        fprintf(stderr, "tickwire bench kernel: --threads is too many\n");
        return 2;
    }

    double *close = NULL, *pnl = NULL, *ref_pnl = NULL;
    int64_t *combos = NULL, *trades = NULL, *ref_trades = NULL;
    size_t n = 0, k = 0;
    tw_sweeper *sc = NULL, *s1 = NULL, *sn = NULL;
    int ret = 1;
    if (tw__cli_load_closes("bench kernel", data, column, synthetic, seed, 0.0008, &close, &n))
        goto done;
    if (tw__cli_load_grid("bench kernel", grid, &combos, &k))
        goto done;
    pnl = malloc(k * sizeof(double));
    ref_pnl = malloc(k * sizeof(double));
    trades = malloc(k * sizeof(int64_t));
    ref_trades = malloc(k * sizeof(int64_t));
    if (!pnl || !ref_pnl || !trades || !ref_trades) {
        fprintf(stderr, "tickwire bench kernel: out of memory\n");
        goto done;
    }
    tw_error err;
    if (tw_sweep_check(close, n, combos, k, &err)) {
        fprintf(stderr, "tickwire bench kernel: %s\n", err.msg);
        goto done;
    }
    tw_sweep_opts o;
    tw_sweep_opts_init(&o);
    o.kernel = TW_KERNEL_SCALAR;
    o.threads = 1;
    int rc = tw_sweeper_create(&sc, n, &o);
    o.kernel = TW_KERNEL_EXACT;
    o.isa = isa;
    if (!rc)
        rc = tw_sweeper_create(&s1, n, &o);
    o.threads = (unsigned)threads;
    if (!rc)
        rc = tw_sweeper_create(&sn, n, &o);
    if (rc) {
        fprintf(stderr, "tickwire bench kernel: cannot set up the sweeps: %s\n", tw_strerror(rc));
        goto done;
    }
    int identical = 1;
    if (!json)
        fprintf(stderr, "bench kernel: %zu combos x %zu bars, %d runs each...\n", k, n, (int)runs);
    /* The reference result: a first, untimed scalar run; every timed run
     * of every variant (scalar included) must repeat it bit for bit. */
    if (tw_sweeper_run(sc, close, n, combos, k, ref_pnl, ref_trades, &err)) {
        fprintf(stderr, "tickwire bench kernel: %s\n", err.msg);
        goto done;
    }
    /* One untimed run of each exact sweeper faults its buffers in; then
     * the variants take turns, run by run, so that a change in the load of
     * a shared machine falls on all three alike. */
    double ts_v[64], t1_v[64], tn_v[64];
    if (time_run(s1, close, n, combos, k, pnl, trades, ref_pnl, ref_trades, &identical) < 0 ||
        time_run(sn, close, n, combos, k, pnl, trades, ref_pnl, ref_trades, &identical) < 0)
        goto done;
    for (int r = 0; r < (int)runs; r++) {
        ts_v[r] = time_run(sc, close, n, combos, k, pnl, trades, ref_pnl, ref_trades, &identical);
        t1_v[r] = time_run(s1, close, n, combos, k, pnl, trades, ref_pnl, ref_trades, &identical);
        tn_v[r] = time_run(sn, close, n, combos, k, pnl, trades, ref_pnl, ref_trades, &identical);
        if (ts_v[r] < 0 || t1_v[r] < 0 || tn_v[r] < 0)
            goto done;
    }
    double ts = median(ts_v, (int)runs), t1 = median(t1_v, (int)runs), tn = median(tn_v, (int)runs);
    unsigned nt = tw_sweeper_threads(sn);
    const char *isa_name = tw_isa_name(tw_sweeper_isa(s1));
    if (!identical)
        fprintf(stderr, "tickwire bench kernel: exact results differ from the scalar reference\n");
    if (json) {
        printf("{\"scalar_s\":%.6f,\"exact1_s\":%.6f,\"exactN_s\":%.6f,\"threads\":%u,"
               "\"isa\":\"%s\",\"identical\":%s,\"runs\":%d,\"n_bars\":%zu,\"n_combos\":%zu,"
               "\"pnl0\":%.17g,\"trades0\":%lld}\n",
               ts, t1, tn, nt, isa_name, identical ? "true" : "false", (int)runs, n, k,
               ref_pnl[0], (long long)ref_trades[0]);
    } else if (identical) {
        printf("sweep: %zu combos x %zu bars (%s), median of %d runs\n", k, n,
               data ? data : "synthetic", (int)runs);
        printf("  %-22s %9.4f s   %6.2fx scalar\n", "C scalar (1 thread)", ts, 1.0);
        printf("  %-22s %9.4f s   %6.2fx scalar\n", "exact, 1 thread", t1, ts / t1);
        char lab[40];
        snprintf(lab, sizeof(lab), "exact, %u threads", nt);
        printf("  %-22s %9.4f s   %6.2fx scalar   %.2fx 1 thread\n", lab, tn, ts / tn, t1 / tn);
        printf("  isa %s; all results bit-identical to the scalar reference: yes\n", isa_name);
        printf("  first combo: pnl %.12g, %lld trades\n", ref_pnl[0], (long long)ref_trades[0]);
        printf("goals (issue 2 §6): exact 1 thread >= 8x scalar: %s (%.1fx); "
               "all threads >= 1.8x 1 thread: %s (%.2fx on %u threads)\n",
               ts / t1 >= 8.0 ? "met" : "NOT met", ts / t1, t1 / tn >= 1.8 ? "met" : "NOT met",
               t1 / tn, nt);
    }
    ret = identical ? 0 : 1;
done:
    tw_sweeper_destroy(sc);
    tw_sweeper_destroy(s1);
    tw_sweeper_destroy(sn);
    free(close);
    free(combos);
    free(pnl);
    free(ref_pnl);
    free(trades);
    free(ref_trades);
    return ret;
}
