/* tickwire bench kernel: the sweep benchmark, every goal of the kernel in one
 * run, each figure next to its yardstick measured in the same run.
 *
 *   in process, the 80-combo sweep (median of --runs, variants taking turns):
 *     C scalar reference (1 thread), exact kernel on 1 and on T threads, and
 *     the streaming kernel fed one call per bar (tw_stream_update)
 *   whole process: `tickwire sweep --data STUDY --threads 1` (this program
 *     run as a child) against the numba reference timed in its own process
 *     (bench/kernel/numba_time.py, which also writes the study dataset); the
 *     child's peak resident memory beyond the input array
 *   --large N bars (default 5,000,000, the C generator): exact on 1 and 2
 *     threads in process (ns per bar and combo against the 150k figure;
 *     thread scaling), and the whole-process peak memory again
 *
 * Goals are judged on wall-clock medians; the one-thread ratios are also
 * given on CPU time (the thread's, the child's user + system, numba's
 * process time), which a shared machine moves less.
 *
 * Every result is checked before any figure is printed: the exact and the
 * streaming kernels bit for bit against the scalar reference, the child's
 * CSV against the in-process results, numba within the gate's 1e-6.
 * --json prints only the in-process table as one line (what
 * bench/kernel/sweep_vs_numba.py reads). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cli_opt.h"
#include "common/stats.h"
#include "tickwire/clock.h"
#include "tickwire/kernel.h"

#ifndef TW_SOURCE_DIR
#define TW_SOURCE_DIR "."
#endif

int tw__cli_bench_kernel(int argc, char **argv);

#define GOAL_VS_NUMBA 30.0
#define GOAL_RSS_MB 32.0
#define GOAL_FLAT 1.15
#define GOAL_THREADS 1.8
#define GOAL_STREAM 2.0
#define RUNS_MAX 64

static const char usage[] =
    "usage: tickwire bench kernel [--data FILE [--column NAME]] [--synthetic N] [--seed S]\n"
    "                             [--grid FILE] [--runs R] [--threads T] [--isa I]\n"
    "                             [--large N] [--no-numba] [--json]\n"
    "\n"
    "Times the sweep (default: the 80-combo grid on the study dataset, written by\n"
    "bench/kernel/numba_time.py, which also times the numba reference; --data FILE or\n"
    "--synthetic N instead, without numba) and prints each goal of the kernel with met / NOT met:\n"
    "  whole-process `tickwire sweep --threads 1` >= 30x numba in-process; resident memory\n"
    "  beyond the input <= 32 MB at the study's size and at --large; ns per bar and combo at\n"
    "  --large / at the study's size <= 1.15; 2 threads / 1 thread at --large >= 1.8;\n"
    "  streaming one call per bar <= 2x the batch sweep, bit-identical.\n"
    "  --runs R     median of R runs per variant (default 5), taking turns\n"
    "  --threads T  the threaded row of the table (default: every online core)\n"
    "  --large N    bars of the large run (default 5000000; 0: skip it)\n"
    "  --no-numba   do not run /usr/bin/python3 (the numba goal is then not measured)\n"
    "  --json       only the in-process table, one line: {\"scalar_s\":..,\"exact1_s\":..,\n"
    "               \"exactN_s\":..,\"stream_s\":..,\"threads\":T,\"isa\":\"..\",\"identical\":true,..}\n"
    "  --kernel K   instead: any kernel's generic sweep against an inlined loop\n"
    "               (`tickwire bench kernel --kernel K --help`)\n";

static double now_s(void) { return 1e-9 * (double)tw_clock_now_ns(); }

static int same_results(const double *pa, const int64_t *ta, const double *pb, const int64_t *tb,
                        size_t k)
{
    return memcmp(pa, pb, k * sizeof(double)) == 0 && memcmp(ta, tb, k * sizeof(int64_t)) == 0;
}

static double cpu_s(void) { return 1e-9 * (double)tw_clock_thread_cpu_ns(); }

/* The calling thread's time on CPU in the last time_run / time_stream: on
 * a shared machine it moves less than the wall clock, and for one thread
 * it is the work itself. */
static double last_cpu;

/* One timed sweeper run, checked against the reference (sets *identical
 * to 0 on any difference).  Seconds, or -1 after printing the error. */
static double time_run(tw_sweeper *s, const double *close, size_t n, const int64_t *combos,
                       size_t k, double *pnl, int64_t *trades, const double *ref_pnl,
                       const int64_t *ref_trades, int *identical)
{
    tw_error err;
    double t0 = now_s(), c0 = cpu_s();
    int rc = tw_sweeper_run(s, close, n, combos, k, pnl, trades, &err);
    double dt = now_s() - t0;
    last_cpu = cpu_s() - c0;
    if (rc) {
        fprintf(stderr, "tickwire bench kernel: %s\n", err.msg);
        return -1;
    }
    if (ref_pnl && !same_results(pnl, trades, ref_pnl, ref_trades, k))
        *identical = 0;
    return dt;
}

/* The streaming kernel over the series, one call per bar. */
static double time_stream(tw_stream *st, size_t mem, const double *close, size_t n,
                          const int64_t *combos, size_t k, uint32_t *changed, double *pnl,
                          int64_t *trades, const double *ref_pnl, const int64_t *ref_trades,
                          int *identical)
{
    tw_error err;
    if (tw_stream_init(st, mem, combos, k, TW_FEE_DEFAULT, &err)) {
        fprintf(stderr, "tickwire bench kernel: stream: %s\n", err.msg);
        return -1;
    }
    double t0 = now_s(), c0 = cpu_s();
    for (size_t i = 0; i < n; i++)
        tw_stream_update(st, close[i], changed);
    double dt = now_s() - t0;
    last_cpu = cpu_s() - c0;
    tw_stream_read(st, NULL, NULL, NULL, pnl, trades);
    if (tw_stream_bars(st) != n || !same_results(pnl, trades, ref_pnl, ref_trades, k))
        *identical = 0;
    return dt;
}

/* The last child's time on CPU (user + system). */
static double child_cpu;

/* Runs argv (argv[0] a path) as a child with stdout to out_path (NULL:
 * /dev/null) and waits.  Wall seconds, peak RSS (bytes) and 0, or -1. */
static int run_child(char *const argv[], const char *out_path, double *secs, double *rss_bytes)
{
    fflush(stdout);
    fflush(stderr);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(out_path ? out_path : "/dev/null", "w", stdout))
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    if (pid < 0)
        return -1;
    int st = 0;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) != pid)
        return -1;
    *secs = now_s() - t0;
    *rss_bytes = (double)ru.ru_maxrss * 1024.0;
    child_cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* The pnl column of a sweep CSV equals pnl[] bit for bit (%.17g text). */
static int csv_matches(const char *path, const double *pnl, const int64_t *trades, size_t k)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[512];
    size_t rows = 0;
    int ok = fgets(line, sizeof(line), f) != NULL;
    while (ok && fgets(line, sizeof(line), f)) {
        unsigned long long c;
        long long w[6], t;
        double p;
        if (sscanf(line, "%llu,%lld,%lld,%lld,%lld,%lld,%lld,%lf,%lld", &c, &w[0], &w[1], &w[2],
                   &w[3], &w[4], &w[5], &p, &t) != 9 || c != rows || c >= k ||
            memcmp(&p, &pnl[c], sizeof(p)) != 0 || t != trades[c])
            ok = 0;
        rows++;
    }
    fclose(f);
    return ok && rows == k;
}

static int write_raw(const char *path, const double *x, size_t n)
{
    tw_error err;
    if (tw_write_closes(path, x, n, &err)) {
        fprintf(stderr, "tickwire bench kernel: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* numba: runs numba_time.py; fills *numba_s and the results.  0, or -1
 * with why in `why`. */
static int run_numba(const char *dir, const char *study, size_t k, int runs, double *numba_s,
                     double *numba_cpu, double *pnl, int64_t *trades, char *why, size_t why_len)
{
    char res[512], out[512], r[16];
    snprintf(res, sizeof(res), "%s/numba.bin", dir);
    snprintf(out, sizeof(out), "%s/numba.json", dir);
    snprintf(r, sizeof(r), "%d", runs < 3 ? runs : 3);
    char *av[] = {"/usr/bin/python3", TW_SOURCE_DIR "/bench/kernel/numba_time.py", "--study",
                  (char *)study, "--results", res, "--runs", r, NULL};
    double secs, rss;
    if (access(av[0], X_OK) != 0 || access(av[1], R_OK) != 0) {
        snprintf(why, why_len, "no %s or %s", av[0], av[1]);
        return -1;
    }
    if (run_child(av, out, &secs, &rss)) {
        snprintf(why, why_len, "%s failed (numpy and numba in /usr/bin/python3?)", av[1]);
        return -1;
    }
    FILE *f = fopen(out, "r");
    char line[4096] = "";
    if (f) {
        if (!fgets(line, sizeof(line), f))
            line[0] = '\0';
        fclose(f);
    }
    const char *p = strstr(line, "\"numba_s\":");
    if (!p || sscanf(p + 10, "%lf", numba_s) != 1) {
        snprintf(why, why_len, "numba_time.py printed no numba_s");
        return -1;
    }
    p = strstr(line, "\"numba_cpu_s\":");
    if (!p || sscanf(p + 14, "%lf", numba_cpu) != 1)
        *numba_cpu = *numba_s;
    f = fopen(res, "rb");
    int ok = f && fread(pnl, sizeof(double), k, f) == k && fread(trades, sizeof(int64_t), k, f) == k;
    if (f)
        fclose(f);
    if (!ok) {
        snprintf(why, why_len, "numba_time.py wrote no results");
        return -1;
    }
    return 0;
}

static const char *met(int ok) { return ok ? "met" : "NOT met"; }

int tw__bench_kernel_plugin(int argc, char **argv); /* kplug_bench.c */

int tw__cli_bench_kernel(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--kernel"))
            return tw__bench_kernel_plugin(argc, argv);
    const char *data = NULL, *column = NULL, *grid = NULL;
    uint64_t synthetic = 0, seed = 42, runs = 5, threads = 0, large = 5000000;
    int json = 0, no_numba = 0;
    tw_isa isa = TW_ISA_AUTO;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
            continue;
        }
        if (!strcmp(argv[i], "--no-numba")) {
            no_numba = 1;
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
            bad = tw__cli_u64_range("bench kernel", a, v, 1, (uint64_t)1 << 34, &synthetic);
        else if (!strcmp(a, "--seed"))
            bad = tw__cli_u64("bench kernel", a, v, &seed);
        else if (!strcmp(a, "--runs"))
            bad = tw__cli_u64_range("bench kernel", a, v, 1, RUNS_MAX, &runs);
        else if (!strcmp(a, "--threads"))
            bad = tw__cli_u64_range("bench kernel", a, v, 0, 1024, &threads);
        else if (!strcmp(a, "--large"))
            bad = tw__cli_u64_range("bench kernel", a, v, 0, (uint64_t)1 << 32, &large);
        else if (!strcmp(a, "--isa"))
            bad = tw_isa_parse(v, &isa) != 0 || isa == TW_ISA_SSE2;
        else {
            fprintf(stderr, "tickwire bench kernel: unknown option '%s' (see --help)\n", a);
            return 2;
        }
        if (bad) {
            if (!strcmp(a, "--isa"))
                fprintf(stderr, "tickwire bench kernel: --isa must be auto, scalar, avx2 or avx512\n");
            return 2;
        }
    }

    char dir[] = "/tmp/tw_bench_kernel_XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "tickwire bench kernel: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    char study_path[600], big_path[600], out_path[600];
    snprintf(study_path, sizeof(study_path), "%s/study.f64", dir);
    snprintf(big_path, sizeof(big_path), "%s/large.f64", dir);
    snprintf(out_path, sizeof(out_path), "%s/out.csv", dir);

    double *close = NULL, *pnl = NULL, *ref_pnl = NULL, *numba_pnl = NULL, *big = NULL;
    int64_t *combos = NULL, *trades = NULL, *ref_trades = NULL, *numba_trades = NULL;
    uint32_t *changed = NULL;
    size_t n = 0, k = 0;
    tw_sweeper *sc = NULL, *s1 = NULL, *sn = NULL, *s2 = NULL;
    tw_stream *st = NULL;
    int ret = 1;
    tw_error err;

    if (grid) {
        if (tw_read_grid(grid, &combos, &k, &err)) {
            fprintf(stderr, "tickwire bench kernel: %s\n", err.msg);
            goto done;
        }
    } else {
        combos = malloc(TW_GRID_DEFAULT_COMBOS * TW_COMBO_WINDOWS * sizeof(int64_t));
        if (!combos)
            goto oom;
        k = tw_grid_default(combos);
    }
    pnl = malloc(k * sizeof(double));
    ref_pnl = malloc(k * sizeof(double));
    numba_pnl = malloc(k * sizeof(double));
    trades = malloc(k * sizeof(int64_t));
    ref_trades = malloc(k * sizeof(int64_t));
    numba_trades = malloc(k * sizeof(int64_t));
    changed = malloc(k * sizeof(uint32_t));
    if (!pnl || !ref_pnl || !numba_pnl || !trades || !ref_trades || !numba_trades || !changed)
        goto oom;

    /* The data: the study (numba writes it), else --data, else synthetic. */
    double numba_s = -1, numba_cpu = -1;
    char numba_why[256] = "";
    const char *dataset = "synthetic";
    int want_numba = !json && !no_numba && !data && !synthetic && !grid;
    if (!json && !want_numba)
        snprintf(numba_why, sizeof(numba_why), "%s", no_numba ? "--no-numba" :
                 "the numba goal is measured on the study dataset with the default grid");
    if (want_numba) {
        fprintf(stderr, "bench kernel: numba reference on the study dataset...\n");
        if (run_numba(dir, study_path, k, (int)runs, &numba_s, &numba_cpu, numba_pnl, numba_trades,
                      numba_why, sizeof(numba_why)) == 0 &&
            tw_read_closes(study_path, NULL, &close, &n, &err) == 0)
            dataset = "study";
        else
            numba_s = -1;
    }
    if (!close && data) {
        if (tw_read_closes(data, column, &close, &n, &err)) {
            fprintf(stderr, "tickwire bench kernel: %s\n", err.msg);
            goto done;
        }
        dataset = data;
    }
    if (!close) {
        n = synthetic ? (size_t)synthetic : 150000;
        close = malloc(n * sizeof(double));
        if (!close)
            goto oom;
        tw_gen_closes(close, n, seed, 0.0008);
    }
    if (tw_sweep_check(close, n, combos, k, &err)) {
        fprintf(stderr, "tickwire bench kernel: %s\n", err.msg);
        goto done;
    }

    /* ---- in process ---- */
    tw_sweep_opts o;
    tw_sweep_opts_init(&o);
    o.kernel = TW_KERNEL_SCALAR;
    o.threads = 1;
    int rc = tw_sweeper_create(&sc, n, &o);
    o.kernel = TW_KERNEL_EXACT;
    o.isa = isa;
    if (!rc)
        rc = tw_sweeper_create(&s1, n > large ? n : (size_t)large + 1, &o);
    o.threads = (unsigned)threads;
    if (!rc)
        rc = tw_sweeper_create(&sn, n, &o);
    o.threads = 2;
    if (!rc)
        rc = tw_sweeper_create(&s2, n > large ? n : (size_t)large + 1, &o);
    if (rc) {
        fprintf(stderr, "tickwire bench kernel: cannot set up the sweeps: %s\n", tw_strerror(rc));
        goto done;
    }
    size_t mem = tw_stream_memsize(combos, k);
    st = mem ? malloc(mem) : NULL;
    if (!st)
        goto oom;
    if (!json)
        fprintf(stderr, "bench kernel: %zu combos x %zu bars, %d runs each...\n", k, n, (int)runs);
    if (tw_sweeper_run(sc, close, n, combos, k, ref_pnl, ref_trades, &err)) {
        fprintf(stderr, "tickwire bench kernel: %s\n", err.msg);
        goto done;
    }
    int identical = 1, stream_identical = 1;
    double ts_v[RUNS_MAX], t1_v[RUNS_MAX], tn_v[RUNS_MAX], tst_v[RUNS_MAX];
    double c1_v[RUNS_MAX], cst_v[RUNS_MAX];
    /* One untimed run each faults memory in; then the variants take turns,
     * so that a change in the load of a shared machine falls on all alike. */
    if (time_run(s1, close, n, combos, k, pnl, trades, ref_pnl, ref_trades, &identical) < 0 ||
        time_run(sn, close, n, combos, k, pnl, trades, ref_pnl, ref_trades, &identical) < 0)
        goto done;
    for (int r = 0; r < (int)runs; r++) {
        ts_v[r] = time_run(sc, close, n, combos, k, pnl, trades, ref_pnl, ref_trades, &identical);
        t1_v[r] = time_run(s1, close, n, combos, k, pnl, trades, ref_pnl, ref_trades, &identical);
        c1_v[r] = last_cpu;
        tn_v[r] = time_run(sn, close, n, combos, k, pnl, trades, ref_pnl, ref_trades, &identical);
        tst_v[r] = time_stream(st, mem, close, n, combos, k, changed, pnl, trades, ref_pnl,
                               ref_trades, &stream_identical);
        cst_v[r] = last_cpu;
        if (ts_v[r] < 0 || t1_v[r] < 0 || tn_v[r] < 0 || tst_v[r] < 0)
            goto done;
    }
    double ts = tw__median_f64(ts_v, (size_t)runs), t1 = tw__median_f64(t1_v, (size_t)runs);
    double tn = tw__median_f64(tn_v, (size_t)runs), tst = tw__median_f64(tst_v, (size_t)runs);
    double c1 = tw__median_f64(c1_v, (size_t)runs), cst = tw__median_f64(cst_v, (size_t)runs);
    unsigned nt = tw_sweeper_threads(sn);
    const char *isa_name = tw_isa_name(tw_sweeper_isa(s1));
    if (!identical || !stream_identical) {
        fprintf(stderr, "tickwire bench kernel: %s results differ from the scalar reference\n",
                identical ? "streaming" : "exact");
        goto done;
    }
    if (json) {
        printf("{\"scalar_s\":%.6f,\"exact1_s\":%.6f,\"exactN_s\":%.6f,\"stream_s\":%.6f,"
               "\"threads\":%u,\"isa\":\"%s\",\"identical\":true,\"runs\":%d,\"n_bars\":%zu,"
               "\"n_combos\":%zu,\"pnl0\":%.17g,\"trades0\":%lld}\n",
               ts, t1, tn, tst, nt, isa_name, (int)runs, n, k, ref_pnl[0],
               (long long)ref_trades[0]);
        ret = 0;
        goto done;
    }

    /* numba's results, checked as the gate does. */
    if (numba_s > 0) {
        for (size_t c = 0; c < k; c++)
            if (numba_trades[c] != ref_trades[c] || !(fabs(numba_pnl[c] - ref_pnl[c]) <= 1e-6)) {
                fprintf(stderr, "tickwire bench kernel: numba and C differ at combo %zu\n", c);
                goto done;
            }
    }

    /* ---- whole process: this program's sweep as a child ---- */
    if (strcmp(dataset, "study") != 0 && write_raw(study_path, close, n))
        goto done;
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (sl <= 0) {
        fprintf(stderr, "tickwire bench kernel: cannot find this program: %s\n", strerror(errno));
        goto done;
    }
    self[sl] = '\0';
    char *sweep_av[] = {self, "sweep", "--data", study_path, "--threads", "1", NULL};
    double tw_v[RUNS_MAX], cw_v[RUNS_MAX], rss = 0;
    for (int r = 0; r < (int)runs; r++) {
        double rs;
        int bad = run_child(sweep_av, out_path, &tw_v[r], &rs);
        cw_v[r] = child_cpu;
        if (bad || !csv_matches(out_path, ref_pnl, ref_trades, k)) {
            fprintf(stderr, "tickwire bench kernel: the child sweep failed or differs\n");
            goto done;
        }
        if (rs > rss)
            rss = rs;
    }
    double tw_whole = tw__median_f64(tw_v, (size_t)runs), cw_whole = tw__median_f64(cw_v, (size_t)runs);
    double rss_mb = (rss - (double)n * sizeof(double)) / (1024.0 * 1024.0);

    /* ---- large ---- */
    double tl1 = -1, tl2 = -1, rss_big_mb = -1, tl_whole = -1;
    if (large) {
        size_t nl = (size_t)large;
        fprintf(stderr, "bench kernel: %zu bars...\n", nl);
        big = malloc(nl * sizeof(double));
        if (!big)
            goto oom;
        tw_gen_closes(big, nl, seed + 1, 0.0008);
        double *p1 = malloc(k * sizeof(double)), *p2 = malloc(k * sizeof(double));
        int64_t *q1 = malloc(k * sizeof(int64_t)), *q2 = malloc(k * sizeof(int64_t));
        int lruns = runs >= 3 ? 3 : (int)runs, same = 1;
        double v1[3], v2[3];
        if (!p1 || !p2 || !q1 || !q2) {
            free(p1), free(p2), free(q1), free(q2);
            goto oom;
        }
        for (int r = 0; r < lruns && same; r++) {
            v1[r] = time_run(s1, big, nl, combos, k, p1, q1, NULL, NULL, &same);
            v2[r] = time_run(s2, big, nl, combos, k, p2, q2, p1, q1, &same);
            if (v1[r] < 0 || v2[r] < 0)
                same = 0;
        }
        /* Two combos against the scalar reference at this length. */
        size_t pick[2] = {0, k - 1};
        for (int q = 0; q < 2 && same; q++) {
            double rp;
            int64_t rt;
            tw_sweep_opts so;
            tw_sweep_opts_init(&so);
            so.kernel = TW_KERNEL_SCALAR;
            so.threads = 1;
            if (tw_sweep(big, nl, combos + pick[q] * TW_COMBO_WINDOWS, 1, &so, &rp, &rt, &err) ||
                memcmp(&rp, &p1[pick[q]], sizeof(rp)) || rt != q1[pick[q]])
                same = 0;
        }
        int child_ok = 1;
        if (same) {
            char *big_av[] = {self, "sweep", "--data", big_path, "--threads", "1", NULL};
            double rs = 0;
            child_ok = write_raw(big_path, big, nl) == 0 &&
                       run_child(big_av, out_path, &tl_whole, &rs) == 0 &&
                       csv_matches(out_path, p1, q1, k);
            rss_big_mb = (rs - (double)nl * sizeof(double)) / (1024.0 * 1024.0);
            unlink(big_path);
        }
        free(p1), free(p2), free(q1), free(q2);
        if (!same || !child_ok) {
            fprintf(stderr, "tickwire bench kernel: the %zu-bar results differ (threads, scalar "
                    "or the child's)\n", nl);
            goto done;
        }
        tl1 = tw__median_f64(v1, (size_t)lruns);
        tl2 = tw__median_f64(v2, (size_t)lruns);
    }

    /* ---- figures ---- */
    double load[1] = {0};
    if (getloadavg(load, 1) < 1)
        load[0] = -1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("sweep: %zu combos x %zu bars (%s), median of %d runs, isa %s, %ld cores, load %.1f\n",
           k, n, dataset, (int)runs, isa_name, cores, load[0]);
    printf("  %-34s %9.4f s   %6.2fx scalar\n", "C scalar (1 thread)", ts, 1.0);
    printf("  %-34s %9.4f s   %6.2fx scalar\n", "exact, 1 thread", t1, ts / t1);
    char lab[64];
    snprintf(lab, sizeof(lab), "exact, %u threads", nt);
    printf("  %-34s %9.4f s   %6.2fx scalar   %.2fx 1 thread\n", lab, tn, ts / tn, t1 / tn);
    printf("  %-34s %9.4f s   %6.2fx exact 1 thread\n", "stream, one call per bar", tst, tst / t1);
    printf("  %-34s %9.4f s   peak RSS beyond the input %.1f MB\n",
           "`tickwire sweep --threads 1`", tw_whole, rss_mb);
    if (numba_s > 0)
        printf("  %-34s %9.4f s   (in its own process, median of %d)\n", "numba reference",
               numba_s, (int)(runs < 3 ? runs : 3));
    if (large) {
        printf("  %zu bars: exact 1 thread %.3f s (%.2f ns per bar and combo), 2 threads %.3f s; "
               "`tickwire sweep --threads 1` %.2f s, peak RSS beyond the input %.1f MB\n",
               (size_t)large, tl1, 1e9 * tl1 / (double)large / (double)k, tl2, tl_whole,
               rss_big_mb);
    }
    printf("  every result checked: exact (1, %u threads) and stream bit-identical to the "
           "scalar reference; first combo pnl %.12g, %lld trades\n", nt, ref_pnl[0],
           (long long)ref_trades[0]);
    printf("goals (sweep kernel):\n");
    if (numba_s > 0)
        printf("  whole-process sweep, 1 thread >= %.0fx numba in-process: %s (%.1fx: %.3f s vs %.3f s; "
               "on CPU %.1fx: %.3f s vs %.3f s)\n",
               GOAL_VS_NUMBA, met(numba_s / tw_whole >= GOAL_VS_NUMBA), numba_s / tw_whole,
               tw_whole, numba_s, numba_cpu / cw_whole, cw_whole, numba_cpu);
    else
        printf("  whole-process sweep, 1 thread >= %.0fx numba in-process: NOT met (not measured: %s)\n",
               GOAL_VS_NUMBA, numba_why);
    int rss_ok = rss_mb <= GOAL_RSS_MB && (!large || rss_big_mb <= GOAL_RSS_MB);
    if (large)
        printf("  resident memory beyond the input <= %.0f MB: %s (%.1f MB at %zu bars, %.1f MB at %zu)\n",
               GOAL_RSS_MB, met(rss_ok), rss_mb, n, rss_big_mb, (size_t)large);
    else
        printf("  resident memory beyond the input <= %.0f MB: %s (%.1f MB at %zu bars; --large 0: "
               "not measured at 5M)\n", GOAL_RSS_MB, met(rss_ok && 0), rss_mb, n);
    if (large) {
        double flat = (tl1 / (double)large) / (t1 / (double)n);
        printf("  ns per bar and combo at %zu / at %zu bars <= %.2f: %s (%.2f: %.2f ns vs %.2f ns)\n",
               (size_t)large, n, GOAL_FLAT, met(flat <= GOAL_FLAT), flat,
               1e9 * tl1 / (double)large / (double)k, 1e9 * t1 / (double)n / (double)k);
        printf("  2 threads / 1 thread at %zu bars >= %.1fx: %s (%.2fx; %ld cores, load %.1f)\n",
               (size_t)large, GOAL_THREADS, met(tl1 / tl2 >= GOAL_THREADS), tl1 / tl2, cores, load[0]);
    } else {
        printf("  ns per bar and combo, large / study <= %.2f: NOT met (not measured: --large 0)\n",
               GOAL_FLAT);
        printf("  2 threads / 1 thread, large >= %.1fx: NOT met (not measured: --large 0)\n",
               GOAL_THREADS);
    }
    printf("  streaming, one call per bar <= %.0fx the batch sweep (1 thread), bit-identical: %s "
           "(%.2fx: %.3f s vs %.3f s; on CPU %.2fx)\n", GOAL_STREAM, met(tst / t1 <= GOAL_STREAM),
           tst / t1, tst, t1, cst / c1);
    ret = 0;
    goto done;
oom:
    fprintf(stderr, "tickwire bench kernel: out of memory\n");
done:
    tw_sweeper_destroy(sc);
    tw_sweeper_destroy(s1);
    tw_sweeper_destroy(sn);
    tw_sweeper_destroy(s2);
    free(st);
    free(close);
    free(big);
    free(combos);
    free(pnl);
    free(ref_pnl);
    free(numba_pnl);
    free(trades);
    free(ref_trades);
    free(numba_trades);
    free(changed);
    unlink(study_path);
    unlink(big_path);
    unlink(out_path);
    char tmp[600];
    snprintf(tmp, sizeof(tmp), "%s/numba.bin", dir);
    unlink(tmp);
    snprintf(tmp, sizeof(tmp), "%s/numba.json", dir);
    unlink(tmp);
    rmdir(dir);
    return ret;
}
