/* Engine boundary benchmarks (the engine's performance goals), each next to its
 * yardstick measured in the same run:
 *   8-byte echo, C client over a Unix socket  vs a bare socketpair ping-pong
 *   8-byte echo over shared memory             vs the Unix-socket floor
 *   1.2 MB echo over a Unix socket             vs a bare socket round trip of the same bytes
 *   8-byte shm echo with 10 us caller gaps,
 *     right after a phase of 1 ms gaps          vs the steady shm echo (spin policy recovery)
 *   1.2 MB over shm and LOAD_FD (+ DROP)       vs the 1.2 MB Unix-socket echo
 *   preloaded 80-call chatty sweep             vs one batched call
 *   Python client 8-byte echo                  vs the C client
 * The server runs in this process (its own I/O and compute threads); the
 * yardsticks run against a forked echo process.  Results are checked
 * before any number is printed. */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <pthread.h>

#include "common/stats.h"
#include "tickwire/client.h"
#include "tickwire/clock.h"
#include "tickwire/engine.h"
#include "tickwire/wire_io.h"

int tw__bench_engine(int argc, char **argv);

#ifndef TW_SOURCE_DIR
#define TW_SOURCE_DIR "."
#endif

#define DIE(...)                                                                    \
    do {                                                                            \
        fprintf(stderr, "bench engine: " __VA_ARGS__);                              \
        fprintf(stderr, "\n");                                                      \
        exit(1);                                                                    \
    } while (0)

/* The bare yardstick: a forked process that echoes fixed-size messages on
 * a socketpair with plain read/write. */
static double bare_pingpong(size_t bytes, int iters)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        DIE("socketpair: %s", strerror(errno));
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        char *b = malloc(bytes);
        while (tw__read_full(sv[1], b, bytes) == (ssize_t)bytes)
            if (tw__write_full(sv[1], b, bytes))
                break;
        _exit(0);
    }
    close(sv[1]);
    char *out = malloc(bytes), *in = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        out[i] = (char)i;
    uint64_t *t = malloc(sizeof(uint64_t) * (size_t)iters);
    for (int w = 0; w < iters / 10 + 1; w++)
        if (tw__write_full(sv[0], out, bytes) ||
            tw__read_full(sv[0], in, bytes) != (ssize_t)bytes)
            DIE("bare ping-pong failed");
    for (int i = 0; i < iters; i++) {
        int64_t t0 = tw_clock_now_ns();
        if (tw__write_full(sv[0], out, bytes) ||
            tw__read_full(sv[0], in, bytes) != (ssize_t)bytes)
            DIE("bare ping-pong failed");
        t[i] = (uint64_t)(tw_clock_now_ns() - t0);
    }
    if (memcmp(in, out, bytes))
        DIE("bare ping-pong corrupted the bytes");
    close(sv[0]);
    waitpid(pid, NULL, 0);
    double m = tw__median_u64(t, (size_t)iters);
    free(t);
    free(in);
    free(out);
    return m;
}

static double echo_bench(tw_client *c, size_t n, int iters)
{
    double *in = malloc(8 * (n ? n : 1)), *out = malloc(8 * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        in[i] = 1.0 + (double)i;
    tw_error err = {0};
    uint64_t *t = malloc(sizeof(uint64_t) * (size_t)iters);
    for (int w = 0; w < iters / 10 + 1; w++)
        if (tw_client_echo(c, in, n, out, &err))
            DIE("echo over %s: %s", tw_client_transport(c), err.msg);
    for (int i = 0; i < iters; i++) {
        int64_t t0 = tw_clock_now_ns();
        int rc = tw_client_echo(c, in, n, out, &err);
        t[i] = (uint64_t)(tw_clock_now_ns() - t0);
        if (rc)
            DIE("echo over %s: %s", tw_client_transport(c), err.msg);
    }
    if (memcmp(in, out, 8 * n))
        DIE("echo over %s returned different bytes", tw_client_transport(c));
    double m = tw__median_u64(t, (size_t)iters);
    free(t);
    free(in);
    free(out);
    return m;
}

/* LOAD_FD of a dataset that already lives in a sealed memfd (the way a
 * research process keeps its data to ship it by descriptor), then DROP.
 * Both are timed: *load_ns is LOAD_FD alone, the return value LOAD_FD +
 * DROP (the server unmaps the dataset on DROP, which is not free).  The
 * loaded dataset is checked against a sweep of the same prices first. */
static double load_fd_bench(tw_client *c, const double *prices, size_t n, int iters,
                            double *load_ns)
{
    tw_error err = {0};
    int fd = memfd_create("bench-dataset", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)(8 * n)) != 0 || pwrite(fd, prices, 8 * n, 0) != (ssize_t)(8 * n) ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) != 0)
        DIE("memfd: %s", strerror(errno));
    int64_t combo[6];
    tw_combo_from_length(50, combo);
    double p1, p2;
    int64_t t1, t2;
    uint64_t id;
    if (tw_client_load_fd(c, fd, &id, &err) || tw_client_sweep_loaded(c, id, combo, 1, &p1, &t1, &err) ||
        tw_client_drop(c, id, &err) || tw_client_sweep(c, prices, n, combo, 1, &p2, &t2, &err))
        DIE("load_fd check: %s", err.msg);
    if (memcmp(&p1, &p2, 8) || t1 != t2)
        DIE("a LOAD_FD dataset sweeps differently from the same prices sent inline");
    uint64_t *t = malloc(sizeof(uint64_t) * (size_t)iters);
    uint64_t *tl = malloc(sizeof(uint64_t) * (size_t)iters);
    for (int i = 0; i < iters; i++) {
        int64_t t0 = tw_clock_now_ns();
        int rc = tw_client_load_fd(c, fd, &id, &err);
        int64_t t_mid = tw_clock_now_ns();
        if (rc || tw_client_drop(c, id, &err))
            DIE("load_fd: %s", err.msg);
        t[i] = (uint64_t)(tw_clock_now_ns() - t0);
        tl[i] = (uint64_t)(t_mid - t0);
    }
    close(fd);
    double m = tw__median_u64(t, (size_t)iters);
    *load_ns = tw__median_u64(tl, (size_t)iters);
    free(t);
    free(tl);
    return m;
}

/* The shm spin policy's recovery, as a Python caller meets it: 64 echoes
 * 1 ms apart (each side's wait outlasts its spin, so both sleep and shrink
 * their budgets), then echoes with 10 us of the caller's own work between
 * them (the timing covers the echo only).  A policy that grows its budget
 * only on a spin success stays in futex sleeps here: the server's shrunken
 * spin never covers the 10 us gap, its wake-up then outlasts the client's
 * shrunken spin, and every round trip pays two wake-ups (~160 us on this
 * VM).  This one sizes the budget from how long waits really took, slept
 * or not, and is back to spinning after one frame. */
static double shm_after_slow_phase(tw_client *c, int iters, uint64_t gap_ns)
{
    double one = 42.0, back = 0;
    tw_error err = {0};
    for (int i = 0; i < 64; i++) {
        if (tw_client_echo(c, &one, 1, &back, &err))
            DIE("echo over shm: %s", err.msg);
        tw_clock_sleep_ns(1000 * 1000);
    }
    uint64_t *t = malloc(sizeof(uint64_t) * (size_t)iters);
    for (int i = 0; i < iters; i++) {
        int64_t g0 = tw_clock_now_ns();
        while ((uint64_t)(tw_clock_now_ns() - g0) < gap_ns)
            ;
        int64_t t0 = tw_clock_now_ns();
        int rc = tw_client_echo(c, &one, 1, &back, &err);
        t[i] = (uint64_t)(tw_clock_now_ns() - t0);
        if (rc || back != 42.0)
            DIE("echo over shm: %s", rc ? err.msg : "wrong value");
    }
    double m = tw__median_u64(t, (size_t)iters);
    free(t);
    return m;
}

static void *run_engine(void *arg)
{
    tw_engine_run(arg);
    return NULL;
}

static void line(const char *what, double ns, const char *vs, double base, const char *goal,
                 int ok)
{
    printf("%-44s %12.2f us   %-28s %10.2f us   ratio %7.3f   goal %-8s %s\n", what, ns / 1e3, vs,
           base / 1e3, ns / base, goal, ok ? "met" : "MISSED");
}

static double py_echo(const char *sock, int iters)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "PYTHONPATH=%s/python /usr/bin/python3 -c '"
             "import sys,time,statistics,numpy as np\n"
             "from tickwire.client import Client\n"
             "c=Client(\"unix:%s\")\n"
             "x=np.array([42.0])\n"
             "for _ in range(200): c.echo(x)\n"
             "t=[]\n"
             "for _ in range(%d):\n"
             "  t0=time.perf_counter_ns(); y=c.echo(x); t.append(time.perf_counter_ns()-t0)\n"
             "assert y[0]==42.0\n"
             "print(statistics.median(t))' 2>&1",
             TW_SOURCE_DIR, sock, iters);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char out[512] = {0};
    size_t k = fread(out, 1, sizeof(out) - 1, p);
    out[k] = 0;
    int st = pclose(p);
    if (st != 0) {
        fprintf(stderr, "bench engine: python client failed: %s\n", out);
        return -1;
    }
    return atof(out);
}

int tw__bench_engine(int argc, char **argv)
{
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: tickwire bench engine [--quick]\n"
                   "Boundary costs of the engine next to bare-socket yardsticks (medians).\n");
            return 0;
        } else {
            fprintf(stderr, "bench engine: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    int small_iters = quick ? 2000 : 20000, big_iters = quick ? 20 : 100;
    char sock[108];
    snprintf(sock, sizeof(sock), "/tmp/tw-bench-engine-%d.sock", (int)getpid());
    tw_engine_opts o;
    tw_engine_opts_init(&o);
    o.unix_path = sock;
    o.workers = 1;
    o.sweep.threads = 1; /* chatty vs batched compares boundary cost, same kernel */
    o.sweeper_bars = 150000;
    tw_engine *e;
    tw_error err = {0};
    if (tw_engine_create(&e, &o, &err))
        DIE("%s", err.msg);
    pthread_t th;
    pthread_create(&th, NULL, run_engine, e);
    char addr[128], shm_addr[128];
    snprintf(addr, sizeof(addr), "unix:%s", sock);
    snprintf(shm_addr, sizeof(shm_addr), "shm:%s", sock);
    tw_client *cu, *cs;
    if (tw_client_connect(&cu, addr, &err) || tw_client_connect(&cs, shm_addr, &err))
        DIE("%s", err.msg);

    printf("tickwire bench engine%s: medians of %d small / %d large round trips, ISA %s, "
           "sweep cache %zu MiB per worker\n",
           quick ? " --quick" : "", small_iters, big_iters, tw_isa_name(tw_isa_best()),
           o.sweep.cache_bytes >> 20);
    double bare8 = bare_pingpong(8, small_iters);
    double unix8 = echo_bench(cu, 1, small_iters);
    double shm8 = echo_bench(cs, 1, small_iters * 5);
    line("echo 8 B, C client, unix socket", unix8, "bare socketpair ping-pong", bare8, "<= 1.3x",
         unix8 <= 1.3 * bare8);
    printf("%-44s %12.3f us   %-28s %10.2f us   floor/shm %7.1fx  goal >= 30x   %s\n",
           "echo 8 B, C client, shared memory", shm8 / 1e3, "unix-socket floor", unix8 / 1e3,
           unix8 / shm8, unix8 / shm8 >= 30 ? "met" : "MISSED");

    double shm8_rec = shm_after_slow_phase(cs, small_iters / 4, 10000);
    printf("%-44s %12.3f us   %-28s %10.3f us   ratio %7.3f   goal <= 2x    %s\n",
           "echo 8 B, shm, 10 us gaps after a slow phase", shm8_rec / 1e3, "steady shm echo",
           shm8 / 1e3, shm8_rec / shm8, shm8_rec <= 2 * shm8 ? "met" : "MISSED");

    size_t n = 150000;
    double *close = malloc(8 * n);
    tw_gen_closes(close, n, 42, 0.01);
    double bare_big = bare_pingpong(8 * n, big_iters);
    double unix_big = echo_bench(cu, n, big_iters);
    double shm_big = echo_bench(cs, n, big_iters);
    double lfd_load = 0, lfd_big = load_fd_bench(cu, close, n, big_iters, &lfd_load);
    line("echo 1.2 MB, C client, unix socket", unix_big, "bare socket round trip", bare_big,
         "<= 1.25x", unix_big <= 1.25 * bare_big);
    printf("%-44s %12.2f us   %-28s %10.2f us   speedup %6.2fx  goal >= 2x    %s\n",
           "echo 1.2 MB, shared memory", shm_big / 1e3, "unix-socket 1.2 MB echo",
           unix_big / 1e3, unix_big / shm_big, unix_big / shm_big >= 2 ? "met" : "MISSED");
    printf("%-44s %12.2f us   %-28s %10.2f us   speedup %6.2fx  goal >= 2x    %s\n",
           "LOAD_FD 1.2 MB (sealed memfd) + DROP", lfd_big / 1e3, "unix-socket 1.2 MB echo",
           unix_big / 1e3, unix_big / lfd_big, unix_big / lfd_big >= 2 ? "met" : "MISSED");
    printf("%-44s %12.2f us   %-28s %10.2f us   speedup %6.2fx  (of which DROP %.2f us)\n",
           "  LOAD_FD alone", lfd_load / 1e3, "unix-socket 1.2 MB echo", unix_big / 1e3,
           unix_big / lfd_load, (lfd_big - lfd_load) / 1e3);

    /* Chatty (80 calls of one combo on a preloaded dataset) vs batched. */
    int64_t grid[80 * 6];
    size_t nc = tw_grid_default(grid);
    double pnl_b[80], pnl_c[80], pnl_w[80];
    int64_t tr_b[80], tr_c[80], tr_w[80];
    uint64_t id;
    if (tw_client_load(cu, close, n, &id, &err))
        DIE("load: %s", err.msg);
    int reps = quick ? 1 : 3;
    uint64_t tb[3], tc[3], tw[3];
    for (int r = 0; r < reps; r++) {
        int64_t t0 = tw_clock_now_ns();
        if (tw_client_sweep(cu, close, n, grid, nc, pnl_b, tr_b, &err))
            DIE("sweep: %s", err.msg);
        tb[r] = (uint64_t)(tw_clock_now_ns() - t0);
        t0 = tw_clock_now_ns();
        for (size_t k = 0; k < nc; k++)
            if (tw_client_sweep_loaded(cu, id, grid + 6 * k, 1, pnl_c + k, tr_c + k, &err))
                DIE("sweep_loaded: %s", err.msg);
        tc[r] = (uint64_t)(tw_clock_now_ns() - t0);
        /* A second pass over the same loaded dataset: the server's sweeper
         * keeps the bound dataset's WMA windows (tw_sweeper_run_bound), as
         * a research loop that sweeps the same data again would see. */
        t0 = tw_clock_now_ns();
        for (size_t k = 0; k < nc; k++)
            if (tw_client_sweep_loaded(cu, id, grid + 6 * k, 1, pnl_w + k, tr_w + k, &err))
                DIE("sweep_loaded: %s", err.msg);
        tw[r] = (uint64_t)(tw_clock_now_ns() - t0);
    }
    if (memcmp(pnl_b, pnl_c, 8 * nc) || memcmp(tr_b, tr_c, 8 * nc) ||
        memcmp(pnl_b, pnl_w, 8 * nc) || memcmp(tr_b, tr_w, 8 * nc))
        DIE("chatty and batched sweeps disagree");
    double mb = tw__median_u64(tb, (size_t)reps), mc = tw__median_u64(tc, (size_t)reps);
    double mw = tw__median_u64(tw, (size_t)reps);
    printf("%-44s %12.2f ms   %-28s %10.2f ms   ratio %7.4f   goal <= 1.01  %s\n",
           "preloaded chatty sweep, 80 calls, 1st pass", mc / 1e6, "one batched call (1 thread)",
           mb / 1e6, mc / mb, mc <= 1.01 * mb ? "met" : "MISSED");
    printf("%-44s %12.2f ms   %-28s %10.2f ms   ratio %7.4f   goal <= 1.01  %s\n",
           "preloaded chatty sweep, 80 calls, warm", mw / 1e6, "one batched call (1 thread)",
           mb / 1e6, mw / mb, mw <= 1.01 * mb ? "met" : "MISSED");

    double py = py_echo(sock, quick ? 2000 : 20000);
    if (py > 0)
        line("echo 8 B, Python client, unix socket", py, "C client, same transport", unix8,
             "<= 1.2x", py <= 1.2 * unix8);
    else
        printf("echo 8 B, Python client: not measured (see the error above)\n");

    tw_client_close(cu);
    tw_client_close(cs);
    tw_engine_stop(e);
    pthread_join(th, NULL);
    tw_engine_destroy(e);
    free(close);
    return 0;
}
