/* tickwire sweep: the 80-combo (or any) sweep from the command line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/cli_kernel.h"
#include "tickwire/clock.h"
#include "tickwire/decimal.h"

/* tools/CMakeLists.txt defines it: the source tree's python/ directory. */
#ifndef TW_PYTHON_DIR
#error "TW_PYTHON_DIR must be defined (tools/CMakeLists.txt)"
#endif

int tw__cli_sweep(int argc, char **argv);

static const char usage[] =
    "usage: tickwire sweep [--data FILE [--column NAME]] [--synthetic N] [--seed S]\n"
    "                      [--sigma X] [--grid FILE] [--threads T]\n"
    "                      [--kernel scalar|exact|NAME|PATH.so] [--stats] [--generic]\n"
    "                      [--isa auto|scalar|avx2|avx512] [--fee F] [--format csv|json]\n"
    "                      [--output FILE] [--block B] [--trades FILE] [--plot FILE.png]\n"
    "                      [--dask ADDR [--partition-size K]]\n"
    "\n"
    "Runs a kernel's sweep and prints one row per combo: by default the HMA/HMA3\n"
    "stop-and-reverse (kernel.md), or any kernel named with --kernel (`tickwire kernels`\n"
    "lists them).\n"
    "  --data FILE      closes from FILE: .npy (float64), .csv (header required) or raw float64\n"
    "  --column NAME    the CSV column to read (default close)\n"
    "  --synthetic N    N synthetic bars when no --data (default 150000)\n"
    "  --seed S         generator seed (default 42); --sigma X its step sigma (default 0.0008)\n"
    "  --grid FILE      CSV with columns h_half,h_full,h_sqrt,t_third,t_half,t_full or one\n"
    "                   column length; default: the 80-combo grid.  With --kernel NAME: a\n"
    "                   CSV whose header names every param of the kernel; default: the\n"
    "                   kernel's own default grid (an error when it has none)\n"
    "  --threads T      threads (default 0: every online core)\n"
    "  --kernel K       exact (default, SIMD, bit-identical to scalar) or scalar (reference)\n"
    "                   implementation of HMA/HMA3; or a kernel by name (hma_sar, zscore)\n"
    "                   or a plug-in by path (PATH.so, loaded, checked and probed)\n"
    "  --stats          also the columns wins,max_drawdown,exposure,final_position\n"
    "  --generic        with --kernel NAME: step() per bar even for hma_sar (its exact\n"
    "                   sweep otherwise; the same bits)\n"
    "  --isa I          instruction set of the exact kernel (default auto: the best)\n"
    "  --fee F          round-trip fee in percentage points (default 0.09)\n"
    "  --format F       csv (default) or json\n"
    "  --output FILE    write there instead of stdout\n"
    "  --block B        bars per block of the exact kernel (default: the library's, sized\n"
    "                   to the L2 cache; below 16 runs the streaming kernel bar by bar;\n"
    "                   every B gives the same bits)\n"
    "  --trades FILE    also write the trade log: CSV combo,side,entry_bar,entry_price,\n"
    "                   exit_bar,exit_price,r (side 1 long, -1 short; prices and r as\n"
    "                   shortest round-trip decimals), then per combo its open position\n"
    "                   (a row with empty exit_bar, exit_price, r)\n"
    "  --plot FILE.png  a picture of the PnL: a heatmap when the grid is every HMA length\n"
    "                   with every HMA3 length, else PnL by combo (/usr/bin/python3 with\n"
    "                   matplotlib, as tickwire.plot)\n"
    "  --dask ADDR      run on a Dask cluster: /usr/bin/python3 -m tickwire.distributed\n"
    "                   --scheduler ADDR with the other arguments unchanged\n"
    "  --partition-size K  combos per Dask task (with --dask; default: by cost)\n";

struct progress {
    double last;
};

static void on_progress(void *ctx, size_t done, size_t total)
{
    struct progress *p = ctx;
    double t = (1e-9 * (double)tw_clock_now_ns());
    if (done < total && t - p->last < 0.1)
        return;
    p->last = t;
    fprintf(stderr, "\rsweep: %zu/%zu combos", done, total);
    if (done == total)
        fputc('\n', stderr);
    fflush(stderr);
}

/* PYTHONPATH and TICKWIRE_LIB for /usr/bin/python3 run from here: the
 * Python package of this source tree and the library of this very build
 * (not a stale one elsewhere; the user may still override it).  0 or -1
 * (out of memory). */
static int python_env(void)
{
    const char *old = getenv("PYTHONPATH");
    size_t len = strlen(TW_PYTHON_DIR) + (old ? strlen(old) + 1 : 0) + 1;
    char *pp = malloc(len);
    if (!pp)
        return -1;
    snprintf(pp, len, "%s%s%s", TW_PYTHON_DIR, old && *old ? ":" : "", old && *old ? old : "");
    setenv("PYTHONPATH", pp, 1);
    free(pp);
    if (access(TW_BUILD_DIR "/libtickwire.so", R_OK) == 0)
        setenv("TICKWIRE_LIB", TW_BUILD_DIR "/libtickwire.so", 0);
    return 0;
}

/* Replaces this process with the Dask driver; only returns on failure. */
static int exec_dask(int argc, char **argv, const char *addr)
{
    char **av = calloc((size_t)argc + 8, sizeof(char *));
    if (!av) {
        fprintf(stderr, "tickwire sweep: out of memory\n");
        return 1;
    }
    int k = 0;
    av[k++] = "/usr/bin/python3";
    av[k++] = "-m";
    av[k++] = "tickwire.distributed";
    av[k++] = "--scheduler";
    av[k++] = (char *)addr;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dask")) {
            i++;
            continue;
        }
        av[k++] = argv[i];
    }
    av[k] = NULL;
    if (python_env()) {
        free(av);
        fprintf(stderr, "tickwire sweep: out of memory\n");
        return 1;
    }
    execv(av[0], av);
    fprintf(stderr, "tickwire sweep: cannot run %s: %s\n", av[0], strerror(errno));
    free(av);
    return 1;
}

/* ---- the trade log ------------------------------------------------------- */

/* Per combo only what the log cannot recompute: its first entry and side
 * and the bar of each exit (the next entry; sides alternate; prices are
 * close[bar]; r is the kernel's expression on them), 8 bytes a trade. */
struct combo_log {
    int64_t first_entry;
    int32_t first_side;
    int oom;
    size_t n, cap;
    int64_t *exit_bar;
};

/* Called from the sweep's threads, for different combos at once: each
 * touches only its combo's entry. */
static void on_trade(void *ctx, const tw_trade *t)
{
    struct combo_log *c = (struct combo_log *)ctx + t->combo;
    if (c->oom)
        return;
    if (c->n == 0) {
        c->first_entry = t->entry_bar;
        c->first_side = t->side;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 256;
        int64_t *nb = realloc(c->exit_bar, cap * sizeof(int64_t));
        if (!nb) {
            c->oom = 1;
            return;
        }
        c->exit_bar = nb;
        c->cap = cap;
    }
    c->exit_bar[c->n++] = t->exit_bar;
}

/* Writes the log; 0 or -1 after printing the error. */
static int write_trades(const char *path, const double *close, const struct combo_log *log,
                        const tw_position *open, size_t k, double fee, const double *pnl,
                        const int64_t *trades)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "tickwire sweep: %s: %s\n", path, strerror(errno));
        return -1;
    }
    static char fbuf[1 << 20];
    setvbuf(f, fbuf, _IOFBF, sizeof(fbuf));
    fputs("combo,side,entry_bar,entry_price,exit_bar,exit_price,r\n", f);
    char ep[TW_DECIMAL_MAX], xp[TW_DECIMAL_MAX], rs[TW_DECIMAL_MAX];
    for (size_t c = 0; c < k; c++) {
        const struct combo_log *l = &log[c];
        int64_t entry = l->first_entry;
        int side = l->first_side;
        double sum = 0.0;
        for (size_t i = 0; i < l->n; i++) {
            int64_t ex = l->exit_bar[i];
            double r = side == 1 ? (close[ex] / close[entry] - 1.0) * 100.0
                                 : (1.0 - close[ex] / close[entry]) * 100.0;
            sum = sum + (r - fee);
            tw_double_to_decimal(close[entry], ep);
            tw_double_to_decimal(close[ex], xp);
            tw_double_to_decimal(r, rs);
            fprintf(f, "%zu,%d,%lld,%s,%lld,%s,%s\n", c, side, (long long)entry, ep,
                    (long long)ex, xp, rs);
            entry = ex;
            side = -side;
        }
        /* The log must add up to the sweep's own totals, bit for bit. */
        TW_VERIFY((int64_t)l->n == trades[c] && memcmp(&sum, &pnl[c], sizeof(sum)) == 0);
        if (open[c].side) {
            TW_VERIFY(l->n == 0 || (open[c].entry_bar == entry && open[c].side == side));
            tw_double_to_decimal(open[c].entry_price, ep);
            fprintf(f, "%zu,%d,%lld,%s,,,\n", c, open[c].side, (long long)open[c].entry_bar, ep);
        }
    }
    if (fflush(f) != 0 || ferror(f)) {
        fclose(f);
        fprintf(stderr, "tickwire sweep: %s: write error\n", path);
        return -1;
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "tickwire sweep: %s: write error\n", path);
        return -1;
    }
    return 0;
}

/* ---- the picture ------------------------------------------------------------ */

/* Runs /usr/bin/python3 -m tickwire.plot on the results (a CSV of the
 * sweep's own format in a temporary file) and waits.  0 or -1 (the
 * plotter printed why, or we do). */
static int run_plot(const char *png, const int64_t *combos, const double *pnl,
                    const int64_t *trades, size_t k)
{
    char tmp[] = "/tmp/tickwire_plot_XXXXXX";
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        fprintf(stderr, "tickwire sweep: --plot: cannot write a temporary file: %s\n",
                strerror(errno));
        return -1;
    }
    fputs("combo,h_half,h_full,h_sqrt,t_third,t_half,t_full,pnl,trades\n", f);
    for (size_t c = 0; c < k; c++) {
        const int64_t *w = combos + c * TW_COMBO_WINDOWS;
        fprintf(f, "%zu,%lld,%lld,%lld,%lld,%lld,%lld,%.17g,%lld\n", c, (long long)w[0],
                (long long)w[1], (long long)w[2], (long long)w[3], (long long)w[4],
                (long long)w[5], pnl[c], (long long)trades[c]);
    }
    int bad = fflush(f) != 0 || ferror(f);
    bad |= fclose(f) != 0;
    if (bad) {
        unlink(tmp);
        fprintf(stderr, "tickwire sweep: --plot: cannot write %s\n", tmp);
        return -1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (python_env())
            _exit(1);
        execl("/usr/bin/python3", "/usr/bin/python3", "-m", "tickwire.plot", "--results", tmp,
              "--output", png, (char *)NULL);
        fprintf(stderr, "tickwire sweep: --plot: cannot run /usr/bin/python3: %s\n",
                strerror(errno));
        _exit(127);
    }
    int st = 0;
    int rc = -1;
    if (pid < 0)
        fprintf(stderr, "tickwire sweep: --plot: fork: %s\n", strerror(errno));
    else if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
        rc = 0;
    else if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        ; /* the child said why */
    else if (!WIFEXITED(st) || WEXITSTATUS(st) != 1)
        fprintf(stderr, "tickwire sweep: --plot: the plotter failed (status %d)\n", st);
    unlink(tmp);
    return rc;
}

int tw__cli_sweep(int argc, char **argv)
{
    const char *data = NULL, *column = NULL, *grid = NULL, *output = NULL, *dask = NULL;
    const char *partition_size = NULL, *trades_path = NULL, *plot_path = NULL;
    const char *format = "csv";
    uint64_t block = 0;
    int have_block = 0;
    uint64_t synthetic = 150000, seed = 42, threads = 0;
    double sigma = 0.0008;
    tw_sweep_opts opts;
    tw_sweep_opts_init(&opts);
    const char *named = NULL;
    int stats = 0, generic = 0, have_isa = 0;

    for (int i = 1; i < argc; i++) {
        const char *a, *v;
        if (!strcmp(argv[i], "--stats")) {
            stats = 1;
            continue;
        }
        if (!strcmp(argv[i], "--generic")) {
            generic = 1;
            continue;
        }
        int r = tw__cli_opt_value("sweep", usage, argc, argv, &i, &a, &v);
        if (r)
            return r > 0 ? 0 : 2;
        if (!strcmp(a, "--data")) {
            data = v;
        } else if (!strcmp(a, "--column")) {
            column = v;
        } else if (!strcmp(a, "--synthetic")) {
            if (tw__cli_u64("sweep", a, v, &synthetic))
                return 2;
        } else if (!strcmp(a, "--seed")) {
            if (tw__cli_u64("sweep", a, v, &seed))
                return 2;
        } else if (!strcmp(a, "--sigma")) {
            if (tw__cli_double("sweep", a, v, &sigma))
                return 2;
        } else if (!strcmp(a, "--grid")) {
            grid = v;
        } else if (!strcmp(a, "--threads")) {
            if (tw__cli_u64("sweep", a, v, &threads))
                return 2;
            if (threads > 1024) {
                fprintf(stderr, "tickwire sweep: --threads %s is too many\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--kernel")) {
            if (!strcmp(v, "exact"))
                opts.kernel = TW_KERNEL_EXACT;
            else if (!strcmp(v, "scalar"))
                opts.kernel = TW_KERNEL_SCALAR;
            else
                named = v; /* a kernel by name or path */
        } else if (!strcmp(a, "--isa")) {
            int found = 0;
            for (int q = TW_ISA_AUTO; q <= TW_ISA_AVX512; q++)
                if (!strcmp(v, tw_isa_name((tw_isa)q))) {
                    opts.isa = (tw_isa)q;
                    found = 1;
                    have_isa = 1;
                }
            if (!found) {
                fprintf(stderr, "tickwire sweep: --isa must be auto, scalar, avx2 or avx512, not '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--fee")) {
            if (tw__cli_double("sweep", a, v, &opts.fee))
                return 2;
        } else if (!strcmp(a, "--format")) {
            if (strcmp(v, "csv") && strcmp(v, "json")) {
                fprintf(stderr, "tickwire sweep: --format must be csv or json, not '%s'\n", v);
                return 2;
            }
            format = v;
        } else if (!strcmp(a, "--output")) {
            output = v;
        } else if (!strcmp(a, "--block")) {
            if (tw__cli_u64_range("sweep", a, v, 1, TW_BLOCK_MAX, &block))
                return 2;
            have_block = 1;
        } else if (!strcmp(a, "--trades")) {
            trades_path = v;
        } else if (!strcmp(a, "--plot")) {
            plot_path = v;
        } else if (!strcmp(a, "--dask")) {
            dask = v;
        } else if (!strcmp(a, "--partition-size")) {
            partition_size = v; /* checked by the Dask driver */
        } else {
            fprintf(stderr, "tickwire sweep: unknown option '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (column && !data) {
        fprintf(stderr, "tickwire sweep: --column needs --data\n");
        return 2;
    }
    if (partition_size && !dask) {
        fprintf(stderr, "tickwire sweep: --partition-size needs --dask\n");
        return 2;
    }
    if (dask && (trades_path || plot_path || have_block)) {
        fprintf(stderr, "tickwire sweep: --trades, --plot and --block are not available with --dask\n");
        return 2;
    }
    if (trades_path && opts.kernel == TW_KERNEL_SCALAR) {
        fprintf(stderr, "tickwire sweep: --trades needs the exact kernel (the trade log is not "
                        "kept by the scalar reference)\n");
        return 2;
    }
    if (dask)
        return exec_dask(argc, argv, dask);
    if (generic && !named) {
        fprintf(stderr, "tickwire sweep: --generic needs --kernel NAME\n");
        return 2;
    }
    if (named || stats) {
        if (have_isa || have_block || plot_path || opts.kernel == TW_KERNEL_SCALAR) {
            fprintf(stderr, "tickwire sweep: --isa, --block, --plot and --kernel scalar are "
                            "options of the HMA/HMA3 sweep, not of --kernel NAME or --stats\n");
            return 2;
        }
        struct tw__ksweep_args ka = {
            .kernel = named ? named : "hma_sar", .data = data, .column = column, .grid = grid,
            .output = output, .trades_path = trades_path, .synthetic = synthetic, .seed = seed,
            .sigma = sigma, .fee = opts.fee, .threads = (unsigned)threads,
            .json = !strcmp(format, "json"), .stats = stats, .generic = generic};
        return tw__cli_sweep_named(&ka);
    }
    opts.threads = (unsigned)threads;
    opts.block_bars = (size_t)block;

    double *close = NULL, *pnl = NULL;
    int64_t *combos = NULL, *trades = NULL;
    size_t n = 0, k = 0;
    tw_sweeper *s = NULL;
    FILE *out = NULL;
    struct combo_log *log = NULL;
    tw_position *open = NULL;
    int ret = 1;
    if (tw__cli_load_closes("sweep", data, column, synthetic, seed, sigma, &close, &n))
        goto done;
    if (tw__cli_load_grid("sweep", grid, &combos, &k))
        goto done;
    pnl = malloc((k ? k : 1) * sizeof(double));
    trades = malloc((k ? k : 1) * sizeof(int64_t));
    if (!pnl || !trades) {
        fprintf(stderr, "tickwire sweep: out of memory\n");
        goto done;
    }
    tw_error err;
    int rc = tw_sweep_check(close, n, combos, k, &err);
    if (rc) {
        fprintf(stderr, "tickwire sweep: %s%s%s\n", data ? data : "", data ? ": " : "", err.msg);
        goto done;
    }
    rc = tw_sweeper_create(&s, n, &opts);
    if (rc) {
        if (rc == -ENOTSUP)
            fprintf(stderr, "tickwire sweep: --isa %s is not supported on this CPU\n",
                    tw_isa_name(opts.isa));
        else
            fprintf(stderr, "tickwire sweep: cannot set up the sweep: %s\n", tw_strerror(rc));
        goto done;
    }
    struct progress prog = {0.0};
    if (isatty(STDERR_FILENO))
        tw_sweeper_set_progress(s, on_progress, &prog);
    if (trades_path) {
        log = calloc(k, sizeof(*log));
        open = calloc(k, sizeof(*open));
        if (!log || !open) {
            fprintf(stderr, "tickwire sweep: out of memory\n");
            goto done;
        }
    }
    double t0 = (1e-9 * (double)tw_clock_now_ns());
    if (trades_path)
        rc = tw_sweeper_run_trades(s, close, n, combos, k, pnl, trades, on_trade, log, open, &err);
    else
        rc = tw_sweeper_run(s, close, n, combos, k, pnl, trades, &err);
    double secs = (1e-9 * (double)tw_clock_now_ns()) - t0;
    if (rc) {
        fprintf(stderr, "tickwire sweep: %s\n", err.msg);
        goto done;
    }
    for (size_t c = 0; log && c < k; c++)
        if (log[c].oom) {
            fprintf(stderr, "tickwire sweep: out of memory for the trade log\n");
            goto done;
        }

    out = output ? fopen(output, "w") : stdout;
    if (!out) {
        fprintf(stderr, "tickwire sweep: %s: %s\n", output, strerror(errno));
        goto done;
    }
    const char *kname = opts.kernel == TW_KERNEL_SCALAR ? "scalar" : "exact";
    if (!strcmp(format, "csv")) {
        fputs("combo,h_half,h_full,h_sqrt,t_third,t_half,t_full,pnl,trades\n", out);
        for (size_t c = 0; c < k; c++) {
            const int64_t *w = combos + c * TW_COMBO_WINDOWS;
            fprintf(out, "%zu,%lld,%lld,%lld,%lld,%lld,%lld,%.17g,%lld\n", c, (long long)w[0],
                    (long long)w[1], (long long)w[2], (long long)w[3], (long long)w[4],
                    (long long)w[5], pnl[c], (long long)trades[c]);
        }
    } else {
        fprintf(out, "{\"n_bars\":%zu,\"n_combos\":%zu,\"kernel\":\"%s\",\"isa\":\"%s\","
                     "\"threads\":%u,\"seconds\":%.6f,\"results\":[",
                n, k, kname, tw_isa_name(tw_sweeper_isa(s)), tw_sweeper_threads(s), secs);
        for (size_t c = 0; c < k; c++) {
            const int64_t *w = combos + c * TW_COMBO_WINDOWS;
            fprintf(out, "%s{\"combo\":[%lld,%lld,%lld,%lld,%lld,%lld],\"pnl\":%.17g,\"trades\":%lld}",
                    c ? "," : "", (long long)w[0], (long long)w[1], (long long)w[2],
                    (long long)w[3], (long long)w[4], (long long)w[5], pnl[c],
                    (long long)trades[c]);
        }
        fputs("]}\n", out);
    }
    if (fflush(out) != 0 || ferror(out)) {
        fprintf(stderr, "tickwire sweep: %s: write error\n", output ? output : "stdout");
        goto done;
    }
    if (trades_path && write_trades(trades_path, close, log, open, k, opts.fee, pnl, trades))
        goto done;
    if (plot_path && run_plot(plot_path, combos, pnl, trades, k))
        goto done;
    ret = 0;
done:
    if (out && out != stdout && fclose(out) != 0 && ret == 0) {
        fprintf(stderr, "tickwire sweep: %s: write error\n", output);
        ret = 1;
    }
    tw_sweeper_destroy(s);
    for (size_t c = 0; log && c < k; c++)
        free(log[c].exit_bar);
    free(log);
    free(open);
    free(close);
    free(combos);
    free(pnl);
    free(trades);
    return ret;
}
