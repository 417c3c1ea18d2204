/* `tickwire serve`: the engine server (wire.md) on a Unix socket, TCP or
 * stdin/stdout, with every limit as an option. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cli_opt.h"
#include "tickwire/engine.h"

int tw__cli_serve(int argc, char **argv);

static tw_engine *g_engine;

/* --verbose: the engine's lines. */
static void log_line(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "%s\n", line);
}

static void on_signal(int sig)
{
    (void)sig;
    if (g_engine)
        tw_engine_stop(g_engine);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tickwire serve [--unix PATH] [--tcp PORT] [--stdio] [options]\n"
            "  --unix PATH            listen on a Unix socket (also serves shm clients)\n"
            "  --mode OCTAL           socket file permissions (default 0600)\n"
            "  --tcp PORT             listen on TCP (0: any free port, printed)\n"
            "  --host ADDR            TCP address (default 127.0.0.1)\n"
            "  --stdio                serve one peer on stdin/stdout until end of input\n"
            "  --workers N            compute threads (default 2)\n"
            "  --threads N            kernel threads per sweep (default 0 = all cores)\n"
            "  --kernel exact|scalar  hma_sar's sweep kernel for SWEEP (default exact)\n"
            "  --kernel NAME|PATH     also a kernel KSWEEP may name: preloaded, listed by INFO\n"
            "                         (repeatable; the built-ins hma_sar, zscore always are)\n"
            "  --cache-mb N           per worker, a bound dataset's cache of hma_sar's WMA\n"
            "                         passes for preloaded sweeps (default 256; 0: none)\n"
            "  --max-frame-bytes N    (default 268435456)\n"
            "  --max-bars N           (default 33554432)\n"
            "  --max-combos N         per request (default 1048576)\n"
            "  --max-datasets N       (default 64)\n"
            "  --max-dataset-bytes N  all datasets together (default 2147483648)\n"
            "  --max-conns N          (default 256)\n"
            "  --max-buffer-bytes N   all connection buffers together (default 2147483648)\n"
            "  --shm-ring-max N       largest shm ring a client may ask for (default 67108864)\n"
            "  --spin-ns N            shm: spin before sleeping (default 50000)\n"
            "  --verbose              log connections and errors to stderr\n"
            "Stops cleanly on SIGTERM/SIGINT (in-flight requests finish, socket removed).\n");
}

int tw__cli_serve(int argc, char **argv)
{
    tw_engine_opts o;
    tw_engine_opts_init(&o);
    int stdio = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t x;
#define NUM(name, max, field)                                                            \
    if (!strcmp(a, name)) {                                                              \
        if (tw__cli_u64_range("serve", name, v, 0, max, &x))                             \
            return 2;                                                                    \
        field = x;                                                                       \
        i++;                                                                             \
        continue;                                                                        \
    }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--stdio")) {
            stdio = 1;
            continue;
        }
        if (!strcmp(a, "--verbose")) {
            o.verbose = 1;
            o.log = log_line;
            continue;
        }
        if (!strcmp(a, "--unix") && v) {
            o.unix_path = v;
            i++;
            continue;
        }
        if (!strcmp(a, "--host") && v) {
            o.tcp_host = v;
            i++;
            continue;
        }
        if (!strcmp(a, "--kernel") && v) {
            if (!strcmp(v, "exact"))
                o.sweep.kernel = TW_KERNEL_EXACT;
            else if (!strcmp(v, "scalar"))
                o.sweep.kernel = TW_KERNEL_SCALAR;
            else if (o.n_kernels < TW_ENGINE_MAX_KERNELS)
                o.kernels[o.n_kernels++] = v;
            else {
                fprintf(stderr, "tickwire serve: at most %d --kernel NAME|PATH\n",
                        TW_ENGINE_MAX_KERNELS);
                return 2;
            }
            i++;
            continue;
        }
        if (!strcmp(a, "--cache-mb")) {
            if (tw__cli_u64_range("serve", a, v, 0, 1u << 20, &x))
                return 2;
            o.sweep.cache_bytes = (size_t)x << 20;
            i++;
            continue;
        }
        if (!strcmp(a, "--mode")) {
            if (tw__cli_mode("serve", a, v, &o.unix_mode))
                return 2;
            i++;
            continue;
        }
        NUM("--tcp", 65535, o.tcp_port)
        NUM("--workers", 1024, o.workers)
        NUM("--threads", 1024, o.sweep.threads)
        NUM("--max-frame-bytes", 0x7fffffffull, o.limits.max_frame_bytes)
        NUM("--max-bars", 0xffffffffull, o.limits.max_bars)
        NUM("--max-combos", 0xffffffffull, o.limits.max_combos)
        NUM("--max-datasets", 1u << 20, o.limits.max_datasets)
        NUM("--max-dataset-bytes", ~0ull, o.limits.max_dataset_bytes)
        NUM("--max-conns", 1u << 20, o.limits.max_conns)
        NUM("--max-buffer-bytes", ~0ull, o.limits.max_buffer_bytes)
        NUM("--shm-ring-max", TW_SHM_RING_MAX, o.shm_ring_max)
        NUM("--spin-ns", 10000000000ull, o.spin_ns)
#undef NUM
        fprintf(stderr, "tickwire serve: unknown option '%s' (try --help)\n", a);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    tw_error err = {0};
    if (stdio) {
        int rc = tw_engine_serve_fds(&o, 0, 1, &err);
        if (rc) {
            fprintf(stderr, "tickwire serve: %s\n", err.msg);
            return 1;
        }
        return 0;
    }
    if (!o.unix_path && o.tcp_port < 0) {
        fprintf(stderr, "tickwire serve: give --unix PATH, --tcp PORT or --stdio\n");
        return 2;
    }
    int rc = tw_engine_create(&g_engine, &o, &err);
    if (rc) {
        fprintf(stderr, "tickwire serve: %s\n", err.msg);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (o.unix_path)
        fprintf(stderr, "tickwire serve: listening on unix:%s\n", o.unix_path);
    if (tw_engine_tcp_port(g_engine) >= 0)
        fprintf(stderr, "tickwire serve: listening on tcp:%s:%d\n", o.tcp_host,
                tw_engine_tcp_port(g_engine));
    tw_engine_run(g_engine);
    tw_engine *e = g_engine;
    g_engine = NULL;
    tw_engine_destroy(e);
    return 0;
}
