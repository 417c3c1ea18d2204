/* tickwire bench kernel --kernel K: the generic path of any kernel (step()
 * per combo and bar through the function pointer, the host's books) on
 * the study dataset with a 200-combo grid, next to the same logic written
 * as a plain inlined C loop here (zscore and donchian), in alternating
 * rounds, on 1 and 2 threads.  hma_sar: its generic step next to its exact
 * SIMD sweep (informational).  Results are checked equal before any
 * figure is printed. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cli_opt.h"
#include "common/stats.h"
#include "tickwire/clock.h"
#include "tickwire/kernel.h"

#ifndef TW_BUILD_DIR
#define TW_BUILD_DIR "."
#endif

int tw__bench_kernel_plugin(int argc, char **argv);

#define GOAL_OVERHEAD 1.3
#define GOAL_THREADS 1.8
#define COMBOS 200
#define RUNS_MAX 64

static const char usage[] =
    "usage: tickwire bench kernel --kernel NAME|PATH.so [--data FILE [--column NAME]]\n"
    "                             [--synthetic N] [--runs R]\n"
    "\n"
    "Times a kernel's generic sweep (step() per combo and bar, the host's books) on the\n"
    "study dataset (built with /usr/bin/python3 and numpy; --data or --synthetic instead)\n"
    "with a 200-combo grid, next to the same logic as a plain inlined C loop (zscore and\n"
    "donchian: the example plug-in, e.g. " TW_BUILD_DIR "/examples/kernels/libdonchian.so),\n"
    "in alternating rounds, and prints ns per bar and combo with the goals:\n"
    "  generic on 1 thread <= 1.3x the inlined loop; generic on 2 threads >= 1.8x 1 thread.\n"
    "For hma_sar: its generic step next to its exact SIMD sweep (informational; the\n"
    "80-combo grid).\n"
    "  --runs R     rounds (default 5), the median of each variant\n";

static double now_s(void) { return 1e-9 * (double)tw_clock_now_ns(); }
static double cpu_s(void) { return 1e-9 * (double)tw_clock_thread_cpu_ns(); }

/* The calling thread's CPU time in the last timed 1-thread variant. */
static double last_cpu;
static const char *met(int ok) { return ok ? "met" : "NOT met"; }

/* ---- the inlined loops: the logic and the books in one plain loop ------- */

struct ibook {
    int pos;
    double entry, pnl;
    int64_t trades;
};

static inline void ibook_bar(struct ibook *b, int target, double c, double fee)
{
    if (target != b->pos && !isnan(c)) {
        if (b->pos != 0) {
            double r = b->pos == 1 ? (c / b->entry - 1.0) * 100.0 : (1.0 - c / b->entry) * 100.0;
            b->pnl = b->pnl + (r - fee);
            b->trades++;
        }
        b->pos = target;
        b->entry = target ? c : 0.0;
    }
}

static void inline_zscore(const double *x, size_t n, const double *p, double fee, double *ring,
                          double *pnl, int64_t *trades)
{
    const int64_t W = (int64_t)p[0];
    const double entry = p[1], ex = p[2];
    double K = 0, S = 0, Q = 0;
    int64_t seen = 0, head = 0;
    int target = 0;
    struct ibook b = {0, 0.0, 0.0, 0};
    for (size_t i = 0; i < n; i++) {
        double c = x[i];
        if (!isnan(c)) {
            if (seen == 0)
                K = c;
            double y = c - K;
            if (seen < W) {
                S = S + y;
                Q = Q + y * y;
                ring[seen] = y;
            } else {
                double old = ring[head];
                S = S + (y - old);
                Q = Q + (y * y - old * old);
                ring[head] = y;
                head = head + 1 == W ? 0 : head + 1;
            }
            seen++;
            if (seen >= W) {
                double mean = S / (double)W, var = Q / (double)W - mean * mean;
                if (var > 0.0) {
                    double z = (y - mean) / sqrt(var);
                    if (z > entry)
                        target = -1;
                    else if (z < -entry)
                        target = 1;
                    else if (fabs(z) < ex)
                        target = 0;
                }
            }
        }
        ibook_bar(&b, target, c, fee);
    }
    *pnl = b.pnl;
    *trades = b.trades;
}

static void inline_donchian(const double *x, size_t n, const double *p, double fee, double *ring,
                            double *pnl, int64_t *trades)
{
    const int64_t N = (int64_t)p[0];
    int64_t seen = 0;
    double hi = 0, lo = 0;
    int target = 0;
    struct ibook b = {0, 0.0, 0.0, 0};
    for (size_t i = 0; i < n; i++) {
        double c = x[i];
        if (!isnan(c)) {
            if (seen >= N) {
                if (c > hi)
                    target = 1;
                else if (c < lo)
                    target = -1;
            }
            int64_t slot = seen % N;
            if (seen < N) {
                ring[slot] = c;
                if (seen == 0 || c > hi)
                    hi = c;
                if (seen == 0 || c < lo)
                    lo = c;
            } else {
                double old = ring[slot];
                ring[slot] = c;
                if (old == hi || old == lo) {
                    hi = lo = ring[0];
                    for (int64_t j = 1; j < N; j++) {
                        hi = ring[j] > hi ? ring[j] : hi;
                        lo = ring[j] < lo ? ring[j] : lo;
                    }
                } else {
                    hi = c > hi ? c : hi;
                    lo = c < lo ? c : lo;
                }
            }
            seen++;
        }
        ibook_bar(&b, target, c, fee);
    }
    *pnl = b.pnl;
    *trades = b.trades;
}

typedef void (*inline_fn)(const double *, size_t, const double *, double, double *, double *,
                          int64_t *);

static double time_inline(inline_fn f, const double *x, size_t n, const double *g, size_t k,
                          uint32_t np, double fee, double *ring, double *pnl, int64_t *trades)
{
    double t0 = now_s(), c0 = cpu_s();
    for (size_t c = 0; c < k; c++)
        f(x, n, g + c * np, fee, ring, &pnl[c], &trades[c]);
    last_cpu = cpu_s() - c0;
    return now_s() - t0;
}

static double time_ksweep(const tw_kernel_def *d, const double *x, size_t n, const double *g,
                          size_t k, unsigned threads, int generic, tw_kresult *out, int *rc)
{
    tw_ksweep_opts o;
    tw_ksweep_opts_init(&o);
    o.threads = threads;
    o.generic = generic;
    tw_error err;
    double t0 = now_s(), c0 = cpu_s();
    *rc = tw_ksweep(d, x, n, g, k, &o, out, NULL, NULL, &err);
    double t = now_s() - t0;
    last_cpu = cpu_s() - c0; /* the caller's thread only: meaningful on 1 thread */
    if (*rc)
        fprintf(stderr, "tickwire bench kernel: %s\n", err.msg);
    return t;
}

/* The study's dataset through /usr/bin/python3 and numpy; 0 or -1. */
static int study(double **x, size_t *n)
{
    char dir[] = "/tmp/tw_bench_kplug_XXXXXX";
    if (!mkdtemp(dir))
        return -1;
    char path[128], cmd[512];
    snprintf(path, sizeof(path), "%s/study.f64", dir);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c \"import numpy as np; "
             "r = np.random.default_rng(42).normal(0.0, 0.0008, 150000); "
             "(100.0*np.exp(np.cumsum(r))).astype('<f8').tofile('%s')\" 2>/dev/null",
             path);
    int rc = system(cmd) == 0 ? 0 : -1;
    tw_error err;
    if (rc == 0)
        rc = tw_read_raw(path, x, n, &err) ? -1 : 0;
    unlink(path);
    rmdir(dir);
    return rc;
}

/* 200 combos: zscore windows 20..4000, donchian n 5..1000, hma_sar the
 * 80-combo grid, another kernel its defaults with the first param
 * stepped across (its default grid when it has one). */
static double *make_grid(const tw_kernel_def *d, size_t *k)
{
    const uint32_t np = d->n_params;
    size_t nd = 0;
    const double *dg = d->default_grid ? d->default_grid(&nd) : NULL;
    if (!strcmp(d->name, "hma_sar") && dg) {
        double *g = malloc(nd * np * sizeof(double));
        if (g)
            memcpy(g, dg, nd * np * sizeof(double));
        *k = nd;
        return g;
    }
    double *g = malloc(COMBOS * np * sizeof(double));
    if (!g)
        return NULL;
    for (size_t c = 0; c < COMBOS; c++) {
        for (uint32_t j = 0; j < np; j++)
            g[c * np + j] = d->params[j].dflt;
        if (!strcmp(d->name, "zscore"))
            g[c * np] = 20.0 * (double)(c + 1);
        else if (!strcmp(d->name, "donchian"))
            g[c * np] = 5.0 * (double)(c + 1);
        else if (dg && nd)
            memcpy(&g[c * np], &dg[(c % nd) * np], np * sizeof(double));
        else {
            const tw_kparam *q = &d->params[0];
            double v = q->lo + (q->hi - q->lo) * (double)c / (COMBOS - 1);
            g[c * np] = q->integer ? floor(v) : v;
        }
    }
    *k = COMBOS;
    return g;
}

int tw__bench_kernel_plugin(int argc, char **argv)
{
    const char *kname = NULL, *data = NULL, *column = NULL;
    uint64_t synthetic = 0, runs = 5;
    for (int i = 1; i < argc; i++) {
        const char *a, *v;
        int r = tw__cli_opt_value("bench kernel", usage, argc, argv, &i, &a, &v);
        if (r)
            return r > 0 ? 0 : 2;
        int bad = 0;
        if (!strcmp(a, "--kernel"))
            kname = v;
        else if (!strcmp(a, "--data"))
            data = v;
        else if (!strcmp(a, "--column"))
            column = v;
        else if (!strcmp(a, "--synthetic"))
            bad = tw__cli_u64_range("bench kernel", a, v, 1, (uint64_t)1 << 30, &synthetic);
        else if (!strcmp(a, "--runs"))
            bad = tw__cli_u64_range("bench kernel", a, v, 1, RUNS_MAX, &runs);
        else {
            fprintf(stderr, "tickwire bench kernel: unknown option '%s' with --kernel (see "
                            "--help)\n", a);
            return 2;
        }
        if (bad)
            return 2;
    }
    tw_error err;
    const tw_kernel_def *d;
    if (!kname || tw_kernel_find(kname, &d, &err)) {
        fprintf(stderr, "tickwire bench kernel: %s\n", kname ? err.msg : "--kernel needs a value");
        return 1;
    }
    double *x = NULL, *g = NULL, *ring = NULL, *ipnl = NULL;
    int64_t *itr = NULL;
    tw_kresult *r1 = NULL, *r2 = NULL;
    size_t n = 0, k = 0;
    int ret = 1;
    const char *dataset = "study";
    if (data) {
        dataset = data;
        if (tw_read_closes(data, column, &x, &n, &err)) {
            fprintf(stderr, "tickwire bench kernel: %s\n", err.msg);
            return 1;
        }
    } else if (synthetic || study(&x, &n)) {
        n = synthetic ? (size_t)synthetic : 150000;
        dataset = "synthetic (no numpy for the study's dataset)";
        if (synthetic)
            dataset = "synthetic";
        x = malloc(n * sizeof(double));
        if (!x)
            goto oom;
        tw_gen_closes(x, n, 42, 0.0008);
    }
    g = make_grid(d, &k);
    r1 = calloc(k, sizeof(*r1));
    r2 = calloc(k, sizeof(*r2));
    ipnl = malloc(k * sizeof(double));
    itr = malloc(k * sizeof(int64_t));
    ring = malloc((size_t)TW_WINDOW_MAX * sizeof(double));
    if (!g || !r1 || !r2 || !ipnl || !itr || !ring)
        goto oom;
    const uint32_t np = d->n_params;
    const int is_hma = !strcmp(d->name, "hma_sar");
    inline_fn inl = !strcmp(d->name, "zscore") ? inline_zscore
                    : !strcmp(d->name, "donchian") && np == 1 ? inline_donchian
                                                              : NULL;
    const double fee = TW_FEE_DEFAULT;
    int rc;
    /* Check first: the variants agree. */
    time_ksweep(d, x, n, g, k, 1, 1, r1, &rc);
    if (rc)
        goto done;
    time_ksweep(d, x, n, g, k, 2, is_hma ? 0 : 1, r2, &rc);
    if (rc)
        goto done;
    int same = 1;
    for (size_t c = 0; c < k; c++)
        same &= memcmp(&r1[c].pnl, &r2[c].pnl, sizeof(double)) == 0 && r1[c].trades == r2[c].trades;
    if (inl) {
        time_inline(inl, x, n, g, k, np, fee, ring, ipnl, itr);
        for (size_t c = 0; c < k; c++)
            same &= memcmp(&r1[c].pnl, &ipnl[c], sizeof(double)) == 0 && r1[c].trades == itr[c];
    }
    if (!same) {
        fprintf(stderr, "tickwire bench kernel: the variants' results differ\n");
        goto done;
    }
    double tg1[RUNS_MAX], tg2[RUNS_MAX], tin[RUNS_MAX], cg1[RUNS_MAX], cin[RUNS_MAX];
    for (uint64_t r = 0; r < runs; r++) {
        tg1[r] = time_ksweep(d, x, n, g, k, 1, 1, r1, &rc);
        cg1[r] = last_cpu;
        tg2[r] = is_hma ? time_ksweep(d, x, n, g, k, 1, 0, r2, &rc)
                        : time_ksweep(d, x, n, g, k, 2, 1, r2, &rc);
        tin[r] = inl ? time_inline(inl, x, n, g, k, np, fee, ring, ipnl, itr) : 0.0;
        cin[r] = inl ? last_cpu : 0.0;
    }
    double m1 = tw__median_f64(tg1, runs), m2 = tw__median_f64(tg2, runs);
    double mi = tw__median_f64(tin, runs);
    double c1 = tw__median_f64(cg1, runs), ci = tw__median_f64(cin, runs);
    double per = 1e9 / ((double)n * (double)k);
    printf("bench kernel --kernel %s: %s, %zu bars x %zu combos, median of %llu rounds "
           "(variants taking turns), isa %s, %ld online cpus\n",
           d->name, dataset, n, k, (unsigned long long)runs, tw_isa_name(tw_isa_best()),
           sysconf(_SC_NPROCESSORS_ONLN));
    printf("  generic, 1 thread   %10.3f s  %8.3f ns per bar and combo\n", m1, m1 * per);
    if (is_hma) {
        printf("  exact SIMD sweep    %10.3f s  %8.3f ns per bar and combo (1 thread)\n", m2,
               m2 * per);
        printf("  generic / exact     %10.2fx (informational: hma_sar sweeps with its exact "
               "kernel)\n", m1 / m2);
        ret = 0;
        goto done;
    }
    printf("  generic, 2 threads  %10.3f s  %8.3f ns per bar and combo\n", m2, m2 * per);
    if (inl) {
        printf("  inlined C loop      %10.3f s  %8.3f ns per bar and combo (1 thread)\n", mi,
               mi * per);
        printf("  on CPU time (1 thread): generic %.3f ns, inlined %.3f ns per bar and combo: "
               "%.3fx\n", c1 * per, ci * per, c1 / ci);
        printf("goal: generic <= %.1fx the inlined loop on 1 thread: %.3fx  %s\n",
               GOAL_OVERHEAD, m1 / mi, met(m1 / mi <= GOAL_OVERHEAD));
    } else {
        printf("goal: generic <= %.1fx an inlined loop: not measured (no inlined loop here for "
               "kernel %s)\n", GOAL_OVERHEAD, d->name);
    }
    printf("goal: 2 threads >= %.1fx 1 thread: %.2fx  %s\n", GOAL_THREADS, m1 / m2,
           met(m1 / m2 >= GOAL_THREADS));
    ret = 0;
    goto done;
oom:
    fprintf(stderr, "tickwire bench kernel: out of memory\n");
done:
    free(x);
    free(g);
    free(ring);
    free(ipnl);
    free(itr);
    free(r1);
    free(r2);
    return ret;
}
