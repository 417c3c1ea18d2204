/* tickwire bench netrtt: round trip of 64-byte messages over a veth pair,
 * all cases in one run (netstack.md "Benchmarks"):
 *
 *   kernel -> kernel      TCP_NODELAY client in one namespace, echo server
 *                         in another (the baseline)
 *   stack(X) -> kernel    this stack as client on port X (af_xdp, DPDK
 *                         net_af_packet, af_packet), kernel echo server
 *   stack <-> stack       both ends of the veth pair driven by this stack
 *                         (AF_XDP; and DPDK net_af_packet, two vdevs in
 *                         one EAL), one process, one thread
 *
 * The stack busy-polls.  Each case runs --runs times; the table gives the
 * median over runs of each percentile.  Every echo is checked byte for
 * byte before any figure is printed.  Needs root (namespaces, veth). */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../tests/net_interop/netenv.h"
#include "../../tests/net_interop/sha256.h"
#include "netrtt/netdrv.h"
#include "netrtt/portspec.h"
#include "tickwire/net.h"

int tw__cli_bench_netrtt(int argc, char **argv);

typedef struct res {
    double p50, p99, p999, max; /* microseconds */
} res;

static unsigned n_msgs = 20000, n_runs = 3, msg_size = 64;
static int rt;
static char kpeer[512];

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}
static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static res summarize(uint64_t *lat, unsigned n)
{
    qsort(lat, n, sizeof(uint64_t), cmp_u64);
    res r = {lat[n / 2] / 1e3, lat[(size_t)(n * 0.99)] / 1e3, lat[(size_t)(n * 0.999)] / 1e3,
             lat[n - 1] / 1e3};
    return r;
}

static res median_res(res *rs, unsigned n)
{
    double v[4][16];
    for (unsigned i = 0; i < n; i++) {
        v[0][i] = rs[i].p50;
        v[1][i] = rs[i].p99;
        v[2][i] = rs[i].p999;
        v[3][i] = rs[i].max;
    }
    for (int k = 0; k < 4; k++)
        qsort(v[k], n, sizeof(double), cmp_d);
    res m = {v[0][n / 2], v[1][n / 2], v[2][n / 2], v[3][n / 2]};
    return m;
}

/* Starts "kpeer echo PORT" in e's peer namespace; waits for "ready". */
static pid_t start_echo(const twnet_env *e, unsigned port_no, int *outfd)
{
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    char pb[16];
    snprintf(pb, sizeof(pb), "%u", port_no);
    char *argv[] = {kpeer, (char *)"echo", pb, NULL};
    pid_t pid = twnet_spawn_in_ns(e, argv, fds[1]);
    close(fds[1]);
    char line[64];
    size_t n = 0;
    struct pollfd pf = {.fd = fds[0], .events = POLLIN};
    while (n + 1 < sizeof(line) && poll(&pf, 1, 10000) > 0) {
        if (read(fds[0], &line[n], 1) != 1 || line[n] == '\n')
            break;
        n++;
    }
    line[n] = 0;
    *outfd = fds[0];
    if (strcmp(line, "ready") != 0) {
        fprintf(stderr, "netrtt: kernel echo server did not start\n");
        return -1;
    }
    return pid;
}

/* Kernel client -> kernel server, in two namespaces. */
static int run_kernel(res *out)
{
    twnet_env e;
    int rc = twnet_setup(&e, 2);
    if (rc)
        return rc;
    res rs[16];
    for (unsigned r = 0; r < n_runs; r++) {
        int efd;
        unsigned pn = 7300 + r;
        pid_t srv = start_echo(&e, pn, &efd);
        if (srv < 0) {
            twnet_teardown(&e);
            return -1;
        }
        int fds[2];
        if (pipe(fds) < 0)
            return -1;
        char pb[16], nb[16], sb[16];
        snprintf(pb, sizeof(pb), "%u", pn);
        snprintf(nb, sizeof(nb), "%u", n_msgs);
        snprintf(sb, sizeof(sb), "%u", msg_size);
        char *argv[] = {(char *)"ip", (char *)"netns", (char *)"exec", e.ns2, kpeer,
                        (char *)"rttclient", (char *)TWNET_PEER_IP, pb, nb, sb, NULL};
        twnet_env none;
        memset(&none, 0, sizeof(none));
        pid_t cli = twnet_spawn_in_ns(&none, argv, fds[1]);
        close(fds[1]);
        char line[256];
        ssize_t n = 0, k;
        while (n < (ssize_t)sizeof(line) - 1 && (k = read(fds[0], line + n, 1)) == 1 &&
               line[n] != '\n')
            n++;
        line[n] = 0;
        close(fds[0]);
        int crc = twnet_wait(cli, 120.0);
        twnet_wait(srv, 10.0);
        close(efd);
        unsigned long long a, b, c, d;
        if (crc != 0 || sscanf(line, "rtt %llu %llu %llu %llu", &a, &b, &c, &d) != 4) {
            fprintf(stderr, "netrtt: kernel client failed (%d: '%s')\n", crc, line);
            twnet_teardown(&e);
            return -1;
        }
        rs[r] = (res){a / 1e3, b / 1e3, c / 1e3, d / 1e3};
    }
    twnet_teardown(&e);
    *out = median_res(rs, n_runs);
    return 0;
}

/* Drives one stack (or two) until a condition; busy-poll. */
static void spin(tw_net *a, tw_net *b)
{
    uint64_t now = twd_now_ns();
    tw_net_poll(a, now);
    if (b)
        tw_net_poll(b, now);
}

static int wait_state(tw_tcp_conn *c, tw_net *a, tw_net *b, tw_tcp_state want, double secs)
{
    uint64_t dl = twd_now_ns() + (uint64_t)(secs * 1e9);
    while (tw_tcp_get_state(c) != want) {
        if (twd_now_ns() > dl || tw_tcp_get_state(c) == TW_TCP_CLOSED)
            return -1;
        spin(a, b);
    }
    return 0;
}

/* n round trips on c; the server side (if srv) is the stack's conn srv
 * echoing, polled in the same loop.  Fills lat; returns 0 or -1 on a
 * mismatch/timeout. */
static int pingpong(tw_tcp_conn *c, tw_net *a, tw_net *b, tw_tcp_conn **srv, uint64_t *lat,
                    unsigned n, unsigned warm)
{
    uint8_t msg[1024];
    for (unsigned i = 0; i < n + warm; i++) {
        tw_stream_fill(99, (uint64_t)i * msg_size, msg, msg_size);
        uint64_t t0 = twd_now_ns(), dl = t0 + 5000000000ull;
        if (tw_tcp_send(c, msg, msg_size, t0) != (long)msg_size)
            return -1;
        size_t got = 0;
        int same = 1;
        while (got < msg_size) {
            spin(a, b);
            if (srv && *srv) {
                const uint8_t *p;
                size_t m;
                while (tw_tcp_recv_peek(*srv, &p, &m) > 0) {
                    if (tw_tcp_send(*srv, p, m, twd_now_ns()) != (long)m)
                        return -1;
                    tw_tcp_recv_consume(*srv, m);
                }
            }
            const uint8_t *p;
            size_t m;
            while (got < msg_size && tw_tcp_recv_peek(c, &p, &m) > 0) {
                if (m > msg_size - got)
                    m = msg_size - got;
                if (memcmp(p, msg + got, m) != 0)
                    same = 0;
                got += m;
                tw_tcp_recv_consume(c, m);
            }
            if (twd_now_ns() > dl)
                return -1;
        }
        uint64_t t1 = twd_now_ns();
        if (!same)
            return -1;
        if (i >= warm)
            lat[i - warm] = t1 - t0;
    }
    return 0;
}

static tw_net *open_stack(tw_port *p, uint32_t ip, tw_error *err)
{
    tw_net_config cfg;
    tw_net_config_init(&cfg, ip);
    cfg.isn_secret[0] = 0xbe7c4;
    cfg.isn_secret[1] = (uint64_t)getpid();
    cfg.time_wait_ns = 1000000;
    cfg.max_conns = 4;
    cfg.rx_buf_bytes = 65536;
    cfg.tx_buf_bytes = 65536;
    tw_net *st = NULL;
    if (tw_net_open(&st, p, &cfg, err) != 0)
        return NULL;
    return st;
}

static void close_conn(tw_tcp_conn *c, tw_net *a, tw_net *b)
{
    tw_tcp_abort(c, twd_now_ns());
    spin(a, b);
    tw_tcp_conn_release(c);
}

/* This stack as client on port kind X to the kernel echo server. */
static int run_stack_client(const char *kind, res *out)
{
    twnet_env e;
    int rc = twnet_setup(&e, 1);
    if (rc)
        return rc;
    char spec[128];
    snprintf(spec, sizeof(spec), "%s:%s", kind, e.host);
    tw_port *p = NULL;
    tw_error err = {0};
    if ((rc = twp_open_spec(&p, spec, 4096, &err)) != 0) {
        fprintf(stderr, "netrtt: %s: %s\n", spec, err.msg);
        twnet_teardown(&e);
        return rc == -ENOTSUP ? 1 : -1;
    }
    tw_net *st = open_stack(p, TWNET_STACK_IP_BE, &err);
    uint64_t *lat = calloc(n_msgs, sizeof(uint64_t));
    res rs[16];
    int ok = st && lat;
    for (unsigned r = 0; ok && r < n_runs; r++) {
        int efd;
        unsigned pn = 7400 + r;
        pid_t srv = start_echo(&e, pn, &efd);
        static tw_tcp_conn c;
        memset(&c, 0, sizeof(c));
        ok = srv > 0 && tw_tcp_connect(st, &c, TWNET_PEER_IP_BE, (uint16_t)pn, 0, twd_now_ns()) == 0 &&
             wait_state(&c, st, NULL, TW_TCP_ESTABLISHED, 10) == 0 &&
             pingpong(&c, st, NULL, NULL, lat, n_msgs, 1000) == 0;
        if (ok)
            rs[r] = summarize(lat, n_msgs);
        else
            fprintf(stderr, "netrtt: %s run %u failed (state %s)\n", kind, r,
                    tw_tcp_state_name(tw_tcp_get_state(&c)));
        close_conn(&c, st, NULL);
        if (srv > 0)
            twnet_wait(srv, 10.0);
        close(efd);
    }
    free(lat);
    if (st)
        tw_net_close(st);
    tw_port_close(p);
    twnet_teardown(&e);
    if (!ok)
        return -1;
    *out = median_res(rs, n_runs);
    return 0;
}

static tw_tcp_conn srv_conn;
static tw_tcp_conn *srv_ptr;
static tw_tcp_conn *accept_cb(tw_tcp_listener *l, uint32_t ip, uint16_t port_no, void *user)
{
    if (srv_ptr)
        return NULL;
    memset(&srv_conn, 0, sizeof(srv_conn));
    srv_ptr = &srv_conn;
    return srv_ptr;
}

/* Both ends of one veth pair driven by this stack (one process, one
 * thread polling both). */
static int run_stack_both(const char *kind, res *out)
{
    twnet_env e;
    int rc = twnet_setup(&e, 0);
    if (rc)
        return rc;
    char sa[128], sb[128];
    snprintf(sa, sizeof(sa), "%s:%s", kind, e.host);
    snprintf(sb, sizeof(sb), "%s:%s", kind, e.peer);
    tw_port *pa = NULL, *pb = NULL;
    tw_error err = {0};
    if (twp_open_spec(&pa, sa, 4096, &err) != 0 || twp_open_spec(&pb, sb, 4096, &err) != 0) {
        fprintf(stderr, "netrtt: both ends on %s: %s\n", kind, err.msg);
        tw_port_close(pa);
        twnet_teardown(&e);
        return -1;
    }
    tw_net *a = open_stack(pa, TWNET_STACK_IP_BE, &err);
    tw_net *b = open_stack(pb, TWNET_PEER_IP_BE, &err);
    uint64_t *lat = calloc(n_msgs, sizeof(uint64_t));
    res rs[16];
    int ok = a && b && lat;
    static tw_tcp_listener l;
    if (ok)
        ok = tw_tcp_listen(b, &l, 7500, accept_cb, NULL) == 0;
    for (unsigned r = 0; ok && r < n_runs; r++) {
        static tw_tcp_conn c;
        memset(&c, 0, sizeof(c));
        srv_ptr = NULL;
        ok = tw_tcp_connect(a, &c, TWNET_PEER_IP_BE, 7500, 0, twd_now_ns()) == 0 &&
             wait_state(&c, a, b, TW_TCP_ESTABLISHED, 10) == 0 &&
             pingpong(&c, a, b, &srv_ptr, lat, n_msgs, 1000) == 0;
        if (ok)
            rs[r] = summarize(lat, n_msgs);
        else
            fprintf(stderr, "netrtt: both ends run %u failed (state %s)\n", r,
                    tw_tcp_state_name(tw_tcp_get_state(&c)));
        close_conn(&c, a, b);
        for (int i = 0; i < 1000; i++)
            spin(a, b);
        if (srv_ptr) {
            if (tw_tcp_get_state(srv_ptr) != TW_TCP_CLOSED)
                tw_tcp_abort(srv_ptr, twd_now_ns());
            tw_tcp_conn_release(srv_ptr);
        }
    }
    free(lat);
    if (a)
        tw_net_close(a);
    if (b)
        tw_net_close(b);
    tw_port_close(pa);
    tw_port_close(pb);
    twnet_teardown(&e);
    if (!ok)
        return -1;
    *out = median_res(rs, n_runs);
    return 0;
}

static void row(const char *name, const res *r)
{
    printf("  %-34s %8.1f %8.1f %9.1f %9.1f %10.2f\n", name, r->p50, r->p99, r->p999, r->max,
           r->p999 / r->p50);
}

int tw__cli_bench_netrtt(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n_msgs = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            n_runs = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rt"))
            rt = 1;
        else if (!strcmp(argv[i], "--kpeer") && i + 1 < argc)
            snprintf(kpeer, sizeof(kpeer), "%s", argv[++i]);
        else {
            fprintf(stderr, "usage: tickwire bench netrtt [-n MSGS] [--runs R] [--rt] [--kpeer PATH]\n"
                            "  round trips of 64-byte messages over a veth pair (root)\n"
                            "  --rt: SCHED_FIFO 1 for this process and (inherited) every\n"
                            "        kernel peer, so other load on a shared machine does not\n"
                            "        preempt either side\n");
            return 2;
        }
    }
    if (n_msgs < 1000 || n_runs < 1 || n_runs > 15) {
        fprintf(stderr, "netrtt: -n must be >= 1000 and --runs 1..15\n");
        return 2;
    }
    if (!kpeer[0]) {
        /* net_kpeer lives in the build tree's tests/net_interop. */
        char self[400];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n > 0) {
            self[n] = 0;
            char *s = strrchr(self, '/');
            *s = 0;
            const char *tries[] = {"/net_kpeer", "/../tests/net_interop/net_kpeer",
                                   "/../../tests/net_interop/net_kpeer"};
            for (unsigned t = 0; t < 3; t++) {
                snprintf(kpeer, sizeof(kpeer), "%s%s", self, tries[t]);
                if (access(kpeer, X_OK) == 0)
                    break;
                kpeer[0] = 0;
            }
        }
    }
    if (!kpeer[0] || access(kpeer, X_OK) != 0) {
        fprintf(stderr, "netrtt: net_kpeer not found (build the tests, or pass --kpeer PATH)\n");
        return 1;
    }
    if (rt) {
        /* Inherited by the kernel peers we fork: every case gets the same
         * treatment.  Each run is well under the RT throttling budget. */
        struct sched_param sp = {.sched_priority = 1};
        if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
            perror("netrtt: sched_setscheduler(SCHED_FIFO)");
            return 1;
        }
    }
    printf("netrtt: %u round trips of %u bytes per run, %u runs, median over runs; busy-poll%s\n",
           n_msgs, msg_size, n_runs, rt ? "; SCHED_FIFO" : "");
    res k, x = {0}, d = {0}, a = {0}, both = {0}, bothd = {0};
    int rk = run_kernel(&k);
    if (rk == TWNET_SKIP)
        return 77;
    if (rk) {
        fprintf(stderr, "netrtt: kernel baseline failed\n");
        return 1;
    }
    int rx = run_stack_client("af_xdp", &x);
    int rd = run_stack_client("dpdk_af_packet", &d);
    int ra = run_stack_client("af_packet", &a);
    int rb = run_stack_both("af_xdp", &both);
    int rbd = run_stack_both("dpdk_af_packet", &bothd);
    printf("\n  %-34s %8s %8s %9s %9s %10s\n", "case (us)", "p50", "p99", "p99.9", "max",
           "p99.9/p50");
    row("kernel -> kernel (TCP_NODELAY)", &k);
    if (!rx)
        row("stack(af_xdp) -> kernel", &x);
    if (!rd)
        row("stack(dpdk net_af_packet) -> kernel", &d);
    if (!ra)
        row("stack(af_packet) -> kernel", &a);
    if (!rb)
        row("stack(af_xdp) <-> stack(af_xdp)", &both);
    if (!rbd)
        row("stack(dpdk) <-> stack(dpdk)", &bothd);
    printf("\n  ratios to kernel->kernel (< 1 is better):\n");
    if (!rb)
        printf("    both ends af_xdp: p50 %.2fx  p99.9 %.2fx   (goal: both < 1)\n",
               both.p50 / k.p50, both.p999 / k.p999);
    if (!rbd)
        printf("    both ends dpdk:   p50 %.2fx  p99.9 %.2fx   (goal: both < 1)\n",
               bothd.p50 / k.p50, bothd.p999 / k.p999);
    const char *names[3] = {"af_xdp", "dpdk", "af_packet"};
    res *cs[3] = {&x, &d, &a};
    int rcs[3] = {rx, rd, ra};
    for (int i = 0; i < 3; i++)
        if (!rcs[i])
            printf("    client %-9s  p99.9 %.2fx  (p99.9/p50) %.2fx (goal: both < 1)\n", names[i],
                   cs[i]->p999 / k.p999, (cs[i]->p999 / cs[i]->p50) / (k.p999 / k.p50));
    return (rx || rd || ra || rb || rbd) ? 1 : 0;
}
