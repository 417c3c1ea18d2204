/* tw_echo_curve: the study's echo curve measured from C (issue 3 section 4).
 *
 * For each transport asked for (unix, tcp, shm: the C client against a
 * running `tickwire serve`) and each payload size n (floats), times ECHO
 * round trips of n x f64 and prints one JSON line per point.  With --bare it
 * also times the yardsticks the performance goals compare against: the same
 * bytes ping-ponged by plain read/write over a socketpair (bare_unix) and
 * over a loopback TCP connection with TCP_NODELAY (bare_tcp), each against
 * a forked echo process, so that the only difference from the engine is the
 * engine.  With --load-fd it times LOAD_FD of the largest size (a sealed
 * memfd, then DROP), the zero-copy way to ship a dataset.
 *
 * Every echoed payload is compared with what was sent before its figure is
 * printed; a mismatch is an error (exit 1).  The study harness
 * (python/tickwire/study) runs this program and parses its output. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/stats.h"
#include "tickwire/client.h"
#include "tickwire/clock.h"
#include "tickwire/wire_io.h"

#define MAX_SIZES 64

static const char *g_prog = "tw_echo_curve";

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "%s: %s%s%s\n", g_prog, what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

/* Sorts t[n] and prints the point's line: median, p10, p90, min, max. */
static void emit(const char *transport, size_t n_floats, size_t bytes, uint64_t *t, size_t n)
{
    double med = tw__median_u64(t, n);
    printf("{\"source\": \"c\", \"transport\": \"%s\", \"n\": %zu, \"bytes\": %zu, "
           "\"iters\": %zu, \"median_ns\": %.1f, \"p10_ns\": %llu, \"p90_ns\": %llu, "
           "\"min_ns\": %llu, \"max_ns\": %llu}\n",
           transport, n_floats, bytes, n, med, (unsigned long long)t[n / 10],
           (unsigned long long)t[(n * 9) / 10], (unsigned long long)t[0],
           (unsigned long long)t[n - 1]);
    fflush(stdout);
}

/* Round trips for a payload of n floats: many for small payloads (the
 * floor is noisy and cheap), fewer for large ones (bandwidth-bound). */
static size_t iters_for(size_t n, size_t base)
{
    size_t it = n <= 2000 ? base : base * 2000 / n;
    return it < 15 ? 15 : it;
}

/* The bare peer: echoes `bytes`-sized messages until end of input. */
static void bare_echoer(int fd, size_t bytes)
{
    char *b = malloc(bytes);
    if (!b)
        _exit(1);
    while (tw__read_full(fd, b, bytes) == (ssize_t)bytes)
        if (tw__write_full(fd, b, bytes))
            break;
    _exit(0);
}

/* A connected pair for the bare yardstick: fds[0] ours, fds[1] the peer's.
 * For TCP, a loopback listener on an ephemeral port, both ends NODELAY,
 * the same options the engine's TCP path uses. */
static void bare_pair(int tcp, int fds[2])
{
    if (!tcp) {
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
            die("socketpair", strerror(errno));
        return;
    }
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&a, &al))
        die("bare tcp listener", strerror(errno));
    fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fds[0] < 0 || connect(fds[0], (struct sockaddr *)&a, sizeof(a)))
        die("bare tcp connect", strerror(errno));
    fds[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    if (fds[1] < 0)
        die("bare tcp accept", strerror(errno));
    close(l);
    int one = 1;
    setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fds[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void bare_point(int tcp, size_t n_floats, size_t base_iters)
{
    size_t bytes = 8 * n_floats, iters = iters_for(n_floats, base_iters);
    int fds[2];
    bare_pair(tcp, fds);
    pid_t pid = fork();
    if (pid < 0)
        die("fork", strerror(errno));
    if (pid == 0) {
        close(fds[0]);
        bare_echoer(fds[1], bytes);
    }
    close(fds[1]);
    double *out = malloc(bytes), *in = malloc(bytes);
    uint64_t *t = malloc(sizeof(*t) * iters);
    if (!out || !in || !t)
        die("out of memory", NULL);
    for (size_t i = 0; i < n_floats; i++)
        out[i] = 100.0 + (double)i * 0.25;
    for (size_t w = 0; w < iters / 10 + 2; w++)
        if (tw__write_full(fds[0], out, bytes) ||
            tw__read_full(fds[0], in, bytes) != (ssize_t)bytes)
            die("bare ping-pong failed", strerror(errno));
    for (size_t i = 0; i < iters; i++) {
        memset(in, 0, 8);
        int64_t t0 = tw_clock_now_ns();
        if (tw__write_full(fds[0], out, bytes) ||
            tw__read_full(fds[0], in, bytes) != (ssize_t)bytes)
            die("bare ping-pong failed", strerror(errno));
        t[i] = (uint64_t)(tw_clock_now_ns() - t0);
    }
    if (memcmp(in, out, bytes))
        die("bare ping-pong returned different bytes", NULL);
    close(fds[0]);
    waitpid(pid, NULL, 0);
    emit(tcp ? "bare_tcp" : "bare_unix", n_floats, bytes, t, iters);
    free(t);
    free(in);
    free(out);
}

static void echo_point(tw_client *c, size_t n_floats, size_t base_iters)
{
    size_t iters = iters_for(n_floats, base_iters), cap = n_floats ? n_floats : 1;
    double *out = malloc(8 * cap), *in = malloc(8 * cap);
    uint64_t *t = malloc(sizeof(*t) * iters);
    if (!out || !in || !t)
        die("out of memory", NULL);
    for (size_t i = 0; i < n_floats; i++)
        out[i] = 100.0 + (double)i * 0.25;
    tw_error err = {0};
    for (size_t w = 0; w < iters / 10 + 2; w++)
        if (tw_client_echo(c, out, n_floats, in, &err))
            die(tw_client_transport(c), err.msg);
    for (size_t i = 0; i < iters; i++) {
        memset(in, 0, 8 * cap);
        int64_t t0 = tw_clock_now_ns();
        int rc = tw_client_echo(c, out, n_floats, in, &err);
        t[i] = (uint64_t)(tw_clock_now_ns() - t0);
        if (rc)
            die(tw_client_transport(c), err.msg);
        /* Checked every time, outside the timed region: an echo that
         * returned other bytes would make its figure meaningless. */
        if (memcmp(in, out, 8 * n_floats))
            die(tw_client_transport(c), "echo returned different bytes");
    }
    emit(tw_client_transport(c), n_floats, 8 * n_floats, t, iters);
    free(t);
    free(in);
    free(out);
}

static void load_fd_point(tw_client *c, size_t n_floats, size_t base_iters)
{
    size_t iters = iters_for(n_floats, base_iters);
    double *close_ = malloc(8 * n_floats);
    uint64_t *t = malloc(sizeof(*t) * iters);
    if (!close_ || !t)
        die("out of memory", NULL);
    for (size_t i = 0; i < n_floats; i++)
        close_[i] = 100.0 + (double)i * 0.25;
    tw_error err = {0};
    for (size_t i = 0; i < iters; i++) {
        uint64_t id;
        int64_t t0 = tw_clock_now_ns();
        int rc = tw_client_load_memfd(c, close_, n_floats, &id, &err);
        t[i] = (uint64_t)(tw_clock_now_ns() - t0);
        if (rc || tw_client_drop(c, id, &err))
            die("load_fd", err.msg);
    }
    emit("load_fd", n_floats, 8 * n_floats, t, iters);
    free(t);
    free(close_);
}

static size_t parse_sizes(const char *s, size_t *out)
{
    size_t n = 0;
    while (*s && n < MAX_SIZES) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s || errno || v < 1 || v > 50000000ull || (*end && *end != ','))
            die("--sizes wants comma-separated float counts in [1, 50000000]", s);
        out[n++] = (size_t)v;
        s = *end ? end + 1 : end;
    }
    if (!n)
        die("--sizes is empty", NULL);
    return n;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: tw_echo_curve [--unix PATH] [--tcp HOST:PORT] [--shm PATH] [--bare]\n"
               "                     [--load-fd] [--sizes 1,10,...] [--iters N]\n"
               "Times ECHO round trips of n floats from the C client (and bare-socket\n"
               "yardsticks with --bare); prints one JSON line per point (median, p10, p90).\n");
}

int main(int argc, char **argv)
{
    const char *unix_path = NULL, *tcp = NULL, *shm_path = NULL;
    int bare = 0, load_fd = 0;
    size_t sizes[MAX_SIZES] = {1, 10, 100, 1000, 10000, 100000, 150000}, n_sizes = 7;
    size_t base_iters = 2000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--bare")) {
            bare = 1;
        } else if (!strcmp(a, "--load-fd")) {
            load_fd = 1;
        } else if (!strcmp(a, "--unix") && v) {
            unix_path = v, i++;
        } else if (!strcmp(a, "--tcp") && v) {
            tcp = v, i++;
        } else if (!strcmp(a, "--shm") && v) {
            shm_path = v, i++;
        } else if (!strcmp(a, "--sizes") && v) {
            n_sizes = parse_sizes(v, sizes), i++;
        } else if (!strcmp(a, "--iters") && v) {
            char *end;
            long x = strtol(v, &end, 10);
            if (*end || x < 15 || x > 10000000)
                die("--iters wants a number in [15, 10000000]", v);
            base_iters = (size_t)x, i++;
        } else {
            usage(stderr);
            die("unknown or incomplete option", a);
        }
    }
    signal(SIGPIPE, SIG_IGN);
    size_t largest = 0;
    for (size_t i = 0; i < n_sizes; i++)
        largest = sizes[i] > largest ? sizes[i] : largest;

    if (bare)
        for (int tcp_kind = 0; tcp_kind < 2; tcp_kind++)
            for (size_t i = 0; i < n_sizes; i++)
                bare_point(tcp_kind, sizes[i], base_iters);

    char addr[4200];
    const char *prefix[3] = {"unix:", "tcp:", "shm:"};
    const char *where[3] = {unix_path, tcp, shm_path};
    for (int k = 0; k < 3; k++) {
        if (!where[k])
            continue;
        if (strlen(where[k]) > 4096)
            die("address too long", where[k]);
        snprintf(addr, sizeof(addr), "%s%s", prefix[k], where[k]);
        tw_client *c;
        tw_error err = {0};
        /* A ring big enough for the largest echo in one frame: a frame may
         * use at most half a ring (client.h). */
        if (k == 2) {
            uint32_t ring = 1u << 20;
            while ((size_t)ring / 2 < 8 * largest + 64 && ring < (1u << 30))
                ring <<= 1;
            if (tw_client_connect_shm(&c, where[k], ring, &err))
                die(addr, err.msg);
        } else if (tw_client_connect(&c, addr, &err)) {
            die(addr, err.msg);
        }
        for (size_t i = 0; i < n_sizes; i++)
            echo_point(c, sizes[i], base_iters);
        if (k == 0 && load_fd)
            load_fd_point(c, largest, base_iters / 20 + 15);
        tw_client_close(c);
    }
    return 0;
}
