/* `tickwire bench startup`: what a process costs before it does any work.
 *
 * Each figure is a pair measured in alternating rounds (one of each per
 * round, so that a change in the load of a shared machine falls on both),
 * medians of the wall time from fork to exit:
 *   - `tickwire version` next to a C hello-world: goal within 2 ms;
 *   - `tickwire sweep --data F --threads 1` on a 1,000-bar file next to the
 *     hello-world (what loading the program and the sweep's setup cost);
 *   - `/usr/bin/python3 -c 'import tickwire'` next to
 *     `/usr/bin/python3 -c 'import numpy'`: goal within 15 ms;
 *   - `tickwire sweep --data study.f64 --threads 1` (150,000 bars, the
 *     80-combo grid) as a whole process next to the same sweep in process
 *     on a warm sweeper: goal within 5%. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/stats.h"
#include "tickwire/clock.h"
#include "tickwire/kernel.h"

extern char **environ;

int tw__cli_bench_startup(int argc, char **argv);

enum { ROUNDS_MAX = 199 };

static const char usage_text[] =
    "usage: tickwire bench startup [--rounds N] [--study-bars N] [--python-path DIR]\n"
    "\n"
    "Process start-up costs, each next to its yardstick in alternating rounds (medians):\n"
    "  `tickwire version` vs a C hello-world (goal: within 2 ms); `tickwire sweep` on a\n"
    "  1,000-bar file vs the hello-world; `python3 -c 'import tickwire'` vs\n"
    "  `python3 -c 'import numpy'` (goal: within 15 ms); and the whole-process\n"
    "  `tickwire sweep --data study.f64 --threads 1` vs the same sweep in process\n"
    "  (goal: within 5%).\n"
    "  --rounds N        rounds per pair (default 21, at most 199)\n"
    "  --study-bars N    bars of the generated study dataset (default 150000)\n"
    "  --python-path DIR the tickwire Python package's directory for PYTHONPATH\n"
    "                    (default: the source tree's python/ when present, else none:\n"
    "                    the installed package)\n";

static double now_s(void) { return 1e-9 * (double)tw_clock_now_ns(); }

/* Runs argv with stdout and stderr to /dev/null; wall seconds, or -1 when
 * it could not run or did not exit 0. */
static double run_once(char *const argv[])
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    double t0 = now_s();
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -1;
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    double t = now_s() - t0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? t : -1;
}

/* One pair: a and b in turns for rounds rounds (one untimed warm-up each);
 * medians in *ma, *mb; 0 or -1 naming what failed. */
static int pair(char *const a[], char *const b[], int rounds, double *ma, double *mb)
{
    double va[ROUNDS_MAX], vb[ROUNDS_MAX];
    if (run_once(a) < 0 || run_once(b) < 0)
        goto fail;
    for (int r = 0; r < rounds; r++) {
        int a_first = r % 2 == 0;
        double x = run_once(a_first ? a : b), y = run_once(a_first ? b : a);
        if (x < 0 || y < 0)
            goto fail;
        va[r] = a_first ? x : y;
        vb[r] = a_first ? y : x;
    }
    *ma = tw__median_f64(va, (size_t)rounds);
    *mb = tw__median_f64(vb, (size_t)rounds);
    return 0;
fail:
    fprintf(stderr, "tickwire bench startup: `%s %s` or `%s %s` failed to run\n", a[0],
            a[1] ? a[1] : "", b[0], b[1] ? b[1] : "");
    return -1;
}

static const char *met(int ok) { return ok ? "met" : "NOT met"; }

static int write_raw(const char *path, const double *v, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(v, sizeof(double), n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "tickwire bench startup: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* A deterministic random walk (the data's values do not matter here). */
static double *walk(size_t n)
{
    double *v = malloc(n * sizeof(double));
    uint64_t x = 0x9e3779b97f4a7c15ull;
    double p = 100.0;
    for (size_t i = 0; v && i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p *= 1.0 + ((double)(x >> 11) / 9007199254740992.0 - 0.5) * 0.002;
        v[i] = p;
    }
    return v;
}

/* The hello-world: the build tree's when present, else compiled here. */
static int hello_path(const char *dir, char *out, size_t cap)
{
#ifdef TW_STARTUP_HELLO
    if (access(TW_STARTUP_HELLO, X_OK) == 0) {
        snprintf(out, cap, "%s", TW_STARTUP_HELLO);
        return 0;
    }
#endif
    char src[600];
    snprintf(src, sizeof(src), "%s/hello.c", dir);
    snprintf(out, cap, "%s/hello", dir);
    FILE *f = fopen(src, "w");
    if (!f || fputs("#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n", f) < 0 ||
        fclose(f) != 0)
        return -1;
    char *cc[] = {"/usr/bin/cc", "-O2", src, "-o", out, NULL};
    if (run_once(cc) < 0) {
        fprintf(stderr, "tickwire bench startup: no hello-world yardstick (cc failed)\n");
        return -1;
    }
    return 0;
}

int tw__cli_bench_startup(int argc, char **argv)
{
    long rounds = 21, study_bars = 150000;
    const char *pypath = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *e = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(a, "--rounds") && v) {
            rounds = strtol(v, &e, 10), i++;
            if (*e || rounds < 1 || rounds > ROUNDS_MAX) {
                fprintf(stderr, "tickwire bench startup: --rounds must be 1..%d\n", ROUNDS_MAX);
                return 2;
            }
        } else if (!strcmp(a, "--study-bars") && v) {
            study_bars = strtol(v, &e, 10), i++;
            if (*e || study_bars < 1000) {
                fprintf(stderr, "tickwire bench startup: --study-bars must be >= 1000\n");
                return 2;
            }
        } else if (!strcmp(a, "--python-path") && v) {
            pypath = v, i++;
        } else {
            fprintf(stderr, "tickwire bench startup: unknown option '%s'\n%s", a, usage_text);
            return 2;
        }
    }
#ifdef TW_PYTHON_DIR
    struct stat sb;
    if (!pypath && stat(TW_PYTHON_DIR "/tickwire/__init__.py", &sb) == 0)
        pypath = TW_PYTHON_DIR;
#endif
    if (pypath)
        setenv("PYTHONPATH", pypath, 1);
    /* Imports from compiled bytecode, as from an installed package (pip and
     * the Debian package install it compiled): the untimed first run of
     * each pair writes it. */
    if (getenv("PYTHONDONTWRITEBYTECODE")) {
        unsetenv("PYTHONDONTWRITEBYTECODE");
        fprintf(stderr, "bench startup: PYTHONDONTWRITEBYTECODE unset for the Python runs "
                        "(imports from bytecode, as installed)\n");
    }

    char dir[] = "/tmp/tw-bench-startup.XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "tickwire bench startup: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    int rc = 1;
    char self[4096], hello[700], small[600], study[600];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
    snprintf(small, sizeof(small), "%s/bars1000.f64", dir);
    snprintf(study, sizeof(study), "%s/study.f64", dir);
    double *close = walk((size_t)study_bars), *pnl = NULL;
    int64_t *trades = NULL, combos[TW_GRID_DEFAULT_COMBOS * TW_COMBO_WINDOWS];
    tw_sweeper *sw = NULL;
    if (sl <= 0 || !close || hello_path(dir, hello, sizeof(hello)) ||
        write_raw(small, close, 1000) || write_raw(study, close, (size_t)study_bars))
        goto done;
    self[sl] = 0;

    double m_hello, m_version, m_hello2, m_small, m_numpy, m_import;
    char *hello_av[] = {hello, NULL};
    char *version_av[] = {self, "version", NULL};
    char *small_av[] = {self, "sweep", "--data", small, "--threads", "1", NULL};
    char *numpy_av[] = {"/usr/bin/python3", "-c", "import numpy", NULL};
    char *import_av[] = {"/usr/bin/python3", "-c", "import tickwire", NULL};
    fprintf(stderr, "bench startup: %ld rounds per pair...\n", rounds);
    if (pair(version_av, hello_av, (int)rounds, &m_version, &m_hello) ||
        pair(small_av, hello_av, (int)rounds, &m_small, &m_hello2) ||
        pair(import_av, numpy_av, (int)rounds, &m_import, &m_numpy))
        goto done;

    /* The whole-process sweep next to the same sweep in process. */
    size_t k = tw_grid_default(combos);
    tw_sweep_opts o;
    tw_sweep_opts_init(&o);
    o.threads = 1;
    tw_error err = {0};
    pnl = malloc(k * sizeof(double));
    trades = malloc(k * sizeof(int64_t));
    if (!pnl || !trades || tw_sweeper_create(&sw, (size_t)study_bars, &o) ||
        tw_sweeper_run(sw, close, (size_t)study_bars, combos, k, pnl, trades, &err)) {
        fprintf(stderr, "tickwire bench startup: in-process sweep: %s\n", err.msg);
        goto done;
    }
    char *study_av[] = {self, "sweep", "--data", study, "--threads", "1", NULL};
    double vw[ROUNDS_MAX], vi[ROUNDS_MAX];
    if (run_once(study_av) < 0)
        goto sweep_failed;
    for (int r = 0; r < (int)rounds; r++) {
        double t0 = now_s();
        if (tw_sweeper_run(sw, close, (size_t)study_bars, combos, k, pnl, trades, &err)) {
            fprintf(stderr, "tickwire bench startup: in-process sweep: %s\n", err.msg);
            goto done;
        }
        vi[r] = now_s() - t0;
        if ((vw[r] = run_once(study_av)) < 0)
            goto sweep_failed;
    }
    double m_whole = tw__median_f64(vw, (size_t)rounds), m_in = tw__median_f64(vi, (size_t)rounds);
    const char *isa = tw_isa_name(tw_sweeper_isa(sw));

    printf("startup: median of %ld alternating rounds, isa %s, %ld cores\n", rounds, isa,
           sysconf(_SC_NPROCESSORS_ONLN));
    printf("| what | time | yardstick | time | difference |\n|---|---:|---|---:|---:|\n");
    printf("| `tickwire version` | %.2f ms | C hello-world | %.2f ms | %+.2f ms |\n",
           1e3 * m_version, 1e3 * m_hello, 1e3 * (m_version - m_hello));
    printf("| `tickwire sweep`, 1,000 bars, 1 thread | %.2f ms | C hello-world | %.2f ms | "
           "%+.2f ms |\n", 1e3 * m_small, 1e3 * m_hello2, 1e3 * (m_small - m_hello2));
    printf("| `python3 -c 'import tickwire'` | %.2f ms | `python3 -c 'import numpy'` | %.2f ms | "
           "%+.2f ms |\n", 1e3 * m_import, 1e3 * m_numpy, 1e3 * (m_import - m_numpy));
    printf("| `tickwire sweep --data study.f64 --threads 1` (%ld bars, %zu combos) | %.4f s | "
           "same sweep in process | %.4f s | %.3fx |\n",
           study_bars, k, m_whole, m_in, m_whole / m_in);
    printf("goals (isa %s):\n", isa);
    printf("  `tickwire version` within 2 ms of a C hello-world: %s (%+.2f ms)\n",
           met(m_version - m_hello <= 2e-3), 1e3 * (m_version - m_hello));
    printf("  `import tickwire` within 15 ms of `import numpy`: %s (%+.2f ms)\n",
           met(m_import - m_numpy <= 15e-3), 1e3 * (m_import - m_numpy));
    printf("  whole-process sweep within 5%% of the in-process sweep: %s (%.3fx)\n",
           met(m_whole <= 1.05 * m_in), m_whole / m_in);
    rc = 0;
    goto done;
sweep_failed:
    fprintf(stderr, "tickwire bench startup: `%s sweep --data %s --threads 1` failed\n", self, study);
done:
    tw_sweeper_destroy(sw);
    free(close);
    free(pnl);
    free(trades);
    unlink(small);
    unlink(study);
    char p[700];
    snprintf(p, sizeof(p), "%s/hello.c", dir);
    unlink(p);
    snprintf(p, sizeof(p), "%s/hello", dir);
    unlink(p);
    rmdir(dir);
    return rc;
}
