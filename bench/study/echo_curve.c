/* tw_echo_curve: the study's echo curve measured from C.
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
 * With --pairs R it measures the ratios the study judges in one phase of
 * the machine: each subject and its yardstick (unix echo vs the bare
 * socketpair, unix vs shm, at the smallest and the largest size; unix vs
 * LOAD_FD at the largest) in R alternating rounds, A B, B A, A B, ...,
 * one block of round trips per side and round.  On a shared VM the floor
 * moves by a factor of five from one minute to the next; a ratio of two
 * figures taken a minute apart measures that, not the engine.  One JSON
 * line per side and round ("pair", "round"); the harness takes the median
 * of the per-round ratios.
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
static void emit_point(const char *pair, int round, const char *transport, size_t n_floats,
                       size_t bytes, uint64_t *t, size_t n)
{
    double med = tw__median_u64(t, n);
    if (pair)
        printf("{\"pair\": \"%s\", \"round\": %d, ", pair, round);
    printf("%s\"source\": \"c\", \"transport\": \"%s\", \"n\": %zu, \"bytes\": %zu, "
           "\"iters\": %zu, \"median_ns\": %.1f, \"p10_ns\": %llu, \"p90_ns\": %llu, "
           "\"min_ns\": %llu, \"max_ns\": %llu}\n",
           pair ? "" : "{", transport, n_floats, bytes, n, med, (unsigned long long)t[n / 10],
           (unsigned long long)t[(n * 9) / 10], (unsigned long long)t[0],
           (unsigned long long)t[n - 1]);
    fflush(stdout);
}

static void emit(const char *transport, size_t n_floats, size_t bytes, uint64_t *t, size_t n)
{
    emit_point(NULL, 0, transport, n_floats, bytes, t, n);
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

/* The bare yardstick's peer, forked: fds[0] is ours afterwards. */
static pid_t bare_start(int tcp, size_t bytes, int fds[2])
{
    bare_pair(tcp, fds);
    pid_t pid = fork();
    if (pid < 0)
        die("fork", strerror(errno));
    if (pid == 0) {
        close(fds[0]);
        bare_echoer(fds[1], bytes);
    }
    close(fds[1]);
    return pid;
}

static void bare_stop(int fd, pid_t pid)
{
    close(fd);
    waitpid(pid, NULL, 0);
}

/* `iters` timed bare ping-pongs of `bytes` after `warm` untimed ones. */
static void time_bare(int fd, const double *out, double *in, size_t bytes, size_t warm,
                      uint64_t *t, size_t iters)
{
    for (size_t w = 0; w < warm; w++)
        if (tw__write_full(fd, out, bytes) || tw__read_full(fd, in, bytes) != (ssize_t)bytes)
            die("bare ping-pong failed", strerror(errno));
    for (size_t i = 0; i < iters; i++) {
        memset(in, 0, 8);
        int64_t t0 = tw_clock_now_ns();
        if (tw__write_full(fd, out, bytes) || tw__read_full(fd, in, bytes) != (ssize_t)bytes)
            die("bare ping-pong failed", strerror(errno));
        t[i] = (uint64_t)(tw_clock_now_ns() - t0);
    }
    if (memcmp(in, out, bytes))
        die("bare ping-pong returned different bytes", NULL);
}

/* `iters` timed ECHO round trips of n floats after `warm` untimed ones. */
static void time_echo(tw_client *c, const double *out, double *in, size_t n_floats, size_t warm,
                      uint64_t *t, size_t iters)
{
    size_t cap = n_floats ? n_floats : 1;
    tw_error err = {0};
    for (size_t w = 0; w < warm; w++)
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
}

/* `iters` timed LOAD_FD calls of n floats (each DROPped, untimed). */
static void time_load_fd(tw_client *c, const double *data, size_t n_floats, uint64_t *t,
                         size_t iters)
{
    tw_error err = {0};
    for (size_t i = 0; i < iters; i++) {
        uint64_t id;
        int64_t t0 = tw_clock_now_ns();
        int rc = tw_client_load_memfd(c, data, n_floats, &id, &err);
        t[i] = (uint64_t)(tw_clock_now_ns() - t0);
        if (rc || tw_client_drop(c, id, &err))
            die("load_fd", err.msg);
    }
}

/* ---- one side: what a block of round trips times ---------------------------- */

enum side_kind { SIDE_ECHO, SIDE_BARE, SIDE_LOAD_FD };

typedef struct side {
    enum side_kind kind;
    const char *name; /* the transport column of its lines */
    tw_client *c;     /* SIDE_ECHO, SIDE_LOAD_FD */
    int fd;           /* SIDE_BARE: ours of the pair with the bare echoer */
} side;

/* `iters` timed operations of side s on n floats, after `warm` untimed
 * ones (blocks alternate with another side, which moves caches and the
 * scheduler in between). */
static void side_block(const side *s, const double *out, double *in, size_t n_floats,
                       size_t warm, uint64_t *t, size_t iters)
{
    switch (s->kind) {
    case SIDE_ECHO:
        time_echo(s->c, out, in, n_floats, warm, t, iters);
        break;
    case SIDE_BARE:
        time_bare(s->fd, out, in, 8 * n_floats, warm, t, iters);
        break;
    case SIDE_LOAD_FD:
        time_load_fd(s->c, out, n_floats, t, iters);
        break;
    }
}

typedef struct bufs {
    double *out, *in; /* a payload of n floats, a receive buffer */
    uint64_t *t;      /* one slot per timed operation */
} bufs;

static bufs bufs_new(size_t n_floats, size_t iters)
{
    size_t cap = n_floats ? n_floats : 1;
    bufs b = {malloc(8 * cap), malloc(8 * cap), malloc(sizeof(uint64_t) * iters)};
    if (!b.out || !b.in || !b.t)
        die("out of memory", NULL);
    for (size_t i = 0; i < n_floats; i++)
        b.out[i] = 100.0 + (double)i * 0.25;
    return b;
}

static void bufs_free(bufs *b)
{
    free(b->t);
    free(b->in);
    free(b->out);
}

/* One point of the curve: `iters` operations of side s, one line. */
static void point(const side *s, size_t n_floats, size_t iters)
{
    bufs b = bufs_new(n_floats, iters);
    side_block(s, b.out, b.in, n_floats, iters / 10 + 2, b.t, iters);
    emit(s->name, n_floats, 8 * n_floats, b.t, iters);
    bufs_free(&b);
}

static void bare_point(int tcp, size_t n_floats, size_t base_iters)
{
    int fds[2];
    pid_t pid = bare_start(tcp, 8 * n_floats, fds);
    side s = {SIDE_BARE, tcp ? "bare_tcp" : "bare_unix", NULL, fds[0]};
    point(&s, n_floats, iters_for(n_floats, base_iters));
    bare_stop(fds[0], pid);
}

/* ---- paired rounds ---------------------------------------------------------- */

/* Subject a against yardstick b at n floats, in `rounds` alternating
 * rounds: even rounds a then b, odd rounds b then a.  A bare side gets its
 * echoer for the pair's size here. */
static void pair_rounds(side a, side b, size_t n_floats, size_t iters, int rounds)
{
    int fds[2] = {-1, -1};
    pid_t pid = -1;
    if (a.kind == SIDE_BARE || b.kind == SIDE_BARE) {
        pid = bare_start(0, 8 * n_floats, fds);
        a.fd = b.fd = fds[0];
    }
    bufs buf = bufs_new(n_floats, iters);
    char pair[64];
    snprintf(pair, sizeof(pair), "%s/%s", a.name, b.name);
    for (int r = 0; r < rounds; r++) {
        const side *order[2] = {(r & 1) ? &b : &a, (r & 1) ? &a : &b};
        for (int k = 0; k < 2; k++) {
            side_block(order[k], buf.out, buf.in, n_floats, 2, buf.t, iters);
            emit_point(pair, r, order[k]->name, n_floats, 8 * n_floats, buf.t, iters);
        }
    }
    bufs_free(&buf);
    if (pid > 0)
        bare_stop(fds[0], pid);
}

/* The ratios the study judges, each in one phase of the machine. */
static void pairs(tw_client *unix_c, tw_client *shm_c, size_t smallest, size_t largest,
                  size_t base_iters, int rounds)
{
    side u = {SIDE_ECHO, "unix", unix_c, -1}, s = {SIDE_ECHO, "shm", shm_c, -1};
    side bare = {SIDE_BARE, "bare_unix", NULL, -1}, lfd = {SIDE_LOAD_FD, "load_fd", unix_c, -1};
    size_t sizes[2] = {smallest, largest};
    for (int i = 0; i < (largest != smallest ? 2 : 1); i++) {
        pair_rounds(u, bare, sizes[i], iters_for(sizes[i], base_iters), rounds);
        pair_rounds(u, s, sizes[i], iters_for(sizes[i], base_iters), rounds);
    }
    pair_rounds(u, lfd, largest, iters_for(largest, base_iters) / 20 + 15, rounds);
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
               "                     [--load-fd] [--sizes 1,10,...] [--iters N] [--pairs R]\n"
               "Times ECHO round trips of n floats from the C client (and bare-socket\n"
               "yardsticks with --bare); prints one JSON line per point (median, p10, p90).\n"
               "--pairs R: each judged ratio (unix vs bare socketpair, unix vs shm, unix vs\n"
               "LOAD_FD) in R alternating rounds of subject and yardstick (needs --unix, --shm).\n");
}

int main(int argc, char **argv)
{
    const char *unix_path = NULL, *tcp = NULL, *shm_path = NULL;
    int bare = 0, load_fd = 0, rounds = 0;
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
        } else if (!strcmp(a, "--pairs") && v) {
            char *end;
            long x = strtol(v, &end, 10);
            if (*end || x < 1 || x > 1000)
                die("--pairs wants a number of rounds in [1, 1000]", v);
            rounds = (int)x, i++;
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
    if (rounds && (!unix_path || !shm_path))
        die("--pairs needs --unix and --shm", NULL);
    signal(SIGPIPE, SIG_IGN);
    size_t largest = 0, smallest = (size_t)-1;
    for (size_t i = 0; i < n_sizes; i++) {
        largest = sizes[i] > largest ? sizes[i] : largest;
        smallest = sizes[i] < smallest ? sizes[i] : smallest;
    }

    if (bare)
        for (int tcp_kind = 0; tcp_kind < 2; tcp_kind++)
            for (size_t i = 0; i < n_sizes; i++)
                bare_point(tcp_kind, sizes[i], base_iters);

    char addr[4200];
    const char *prefix[3] = {"unix:", "tcp:", "shm:"};
    const char *where[3] = {unix_path, tcp, shm_path};
    tw_client *clients[3] = {NULL, NULL, NULL};
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
        side echo = {SIDE_ECHO, tw_client_transport(c), c, -1};
        for (size_t i = 0; i < n_sizes; i++)
            point(&echo, sizes[i], iters_for(sizes[i], base_iters));
        side lfd = {SIDE_LOAD_FD, "load_fd", c, -1};
        if (k == 0 && load_fd)
            point(&lfd, largest, iters_for(largest, base_iters / 20 + 15));
        clients[k] = c;
    }
    if (rounds)
        pairs(clients[0], clients[2], smallest, largest, base_iters, rounds);
    for (int k = 0; k < 3; k++)
        if (clients[k])
            tw_client_close(clients[k]);
    return 0;
}
