/* tickwire bench netrtt: round trip of 64-byte messages over a veth pair,
 * all cases in one run (netstack.md "Benchmarks"):
 *
 *   kernel -> kernel      TCP_NODELAY + SO_BUSY_POLL (no effect on veth)
 *                         client in one namespace, echo server in another:
 *                         the client sleeping in recv (the goals'
 *                         baseline), and busy-reading with MSG_DONTWAIT as
 *                         the stack busy-polls (a stronger one)
 *   stack(X) -> kernel    this stack as client on port X (AF_XDP, DPDK
 *                         net_af_packet, AF_PACKET), the same kernel echo
 *                         server.  (DPDK 22.11's net_af_xdp stalls on veth
 *                         here after the handshake or ~1800 frames, with
 *                         2049 mbufs stuck in the PMD: no row for it.)
 *   stack <-> stack       both ends of the veth pair driven by this stack
 *                         (AF_XDP; and DPDK net_af_packet, two vdevs in
 *                         one EAL), one process, one thread
 *   ..., capture          the same with packet capture on (capture.h):
 *                         both ports into one pcapng file, every frame
 *                         whole, from a writer thread on the server CPU
 *                         (idle in these rows).  Goal: capture
 *                         adds at most 5% to p50 and nothing measurable to
 *                         p99.9 on the stack-to-stack rows.  Each capture
 *                         is checked: every frame the ports moved is in
 *                         the file or counted as dropped, and the file is
 *                         read back block by block.
 *
 * --runs rounds each run every case once (the start rotating per round),
 * so slow phases of a shared machine fall on all cases alike; each run sets
 * its topology, port and stack up and removes them, so nothing of another
 * case (an AF_PACKET ring's retire timer, say) runs while one is measured.  The table gives the median over rounds of each
 * percentile.  Every echo is checked byte for byte.
 *
 * The stack uses a MAC of its own (locally administered), not the veth's:
 * on AF_PACKET the host kernel sees every frame after the tap, and frames
 * for the veth's own MAC went on into its IPv4 input (a route lookup and a
 * dst freed through RCU per frame: a ~100 us stall of the server's CPU
 * every 8 ms).  Frames for another MAC stop at the L2 check, as they would
 * at a NIC's filter.  Needs root (namespaces, veth).
 *
 *   stack <-> stack, memif  this stack here and `tickwire net echo --busy`
 *                         in a process of its own, joined by DPDK's
 *                         net_memif (shared memory: no system call per
 *                         packet on either side, no namespace, no veth) */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cli_opt.h"
#include "common/netdrv.h"
#include "common/netenv.h"
#include "common/portspec.h"
#include "common/sha256.h"
#include "common/stats.h"
#include "tickwire/capture.h"
#include "tickwire/net.h"

int tw__bench_netrtt_run(int argc, char **argv);

typedef struct res {
    double p50, p99, p999, max; /* microseconds */
} res;

static unsigned n_msgs = 20000, n_runs = 3, msg_size = 64;
/* --trace US: every stack round trip slower than this is printed with its
 * time since the run began, to find periodic stalls (timers, ticks). */
static uint64_t trace_ns;
static const char *trace_label;
static int rt;
static char kpeer[512];
/* CPU placement, the same for every case: this process (and the kernel
 * client of the baseline) on cpu_cli, every kernel echo server on cpu_srv.
 * Without it a server forked after DPDK's EAL pinned this thread would
 * share the busy-polling client's CPU and wait for it to be preempted. */
static int cpu_cli = -1, cpu_srv = -1;
/* Where the capture rows write (a temporary directory, removed; or
 * --pcap-dir DIR, kept). */
static char pcap_dir[400];
static int pcap_keep;
/* --capture-opts: ",key=value..." of capture.h's option form for the
 * capture rows (snap, slots, port, ...). */
static const char *capture_opts = "";
/* --capture: only the rows the capture goal compares. */
static int capture_only;
/* --timestamps: only the rows the timestamps goal compares. */
static int ts_only;

static void pin_self(int cpu)
{
    if (cpu < 0)
        return;
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof(s), &s) != 0)
        perror("netrtt: sched_setaffinity");
}

/* Forks argv (in e's namespace) on CPU cpu: the child inherits the mask
 * set around the fork. */
static pid_t spawn_on(int cpu, const tw__netenv *e, char *const argv[], int out_fd)
{
    pin_self(cpu);
    pid_t pid = tw__netenv_spawn(e, argv, out_fd);
    pin_self(cpu_cli);
    return pid;
}

static res summarize(uint64_t *lat, unsigned n)
{
    tw__sort_u64(lat, n);
    res r = {tw__pct_u64(lat, n, 0.5) / 1e3, tw__pct_u64(lat, n, 0.99) / 1e3,
             tw__pct_u64(lat, n, 0.999) / 1e3, lat[n - 1] / 1e3};
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
    res m = {tw__median_f64(v[0], n), tw__median_f64(v[1], n), tw__median_f64(v[2], n),
             tw__median_f64(v[3], n)};
    return m;
}

/* Starts "kpeer echo PORT" in e's peer namespace; waits for "ready". */
static pid_t start_echo(const tw__netenv *e, unsigned port_no, int spin, int *outfd)
{
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    char pb[16];
    snprintf(pb, sizeof(pb), "%u", port_no);
    char *argv[] = {kpeer, (char *)"echo", pb, spin ? (char *)"spin" : NULL, NULL};
    pid_t pid = spawn_on(cpu_srv, e, argv, fds[1]);
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

/* One turn of the case's reactor (its one stack, or both): busy-poll. */
static void spin(tw__netdrv *d) { (void)tw__netdrv_turn(d, 0, 0); }

static int wait_state(tw_tcp_conn *c, tw__netdrv *d, tw_tcp_state want, double secs)
{
    uint64_t dl = tw__netdrv_now_ns() + (uint64_t)(secs * 1e9);
    while (tw_tcp_get_state(c) != want) {
        if (tw__netdrv_now_ns() > dl || tw_tcp_get_state(c) == TW_TCP_CLOSED)
            return -1;
        spin(d);
    }
    return 0;
}

/* n round trips on c; the server side (if srv) is the stack's conn *srv
 * echoing, polled in the same loop.  Fills lat; returns 0 or -1 on a
 * mismatch/timeout. */
static int pingpong(tw_tcp_conn *c, tw__netdrv *d, tw_tcp_conn **srv, uint64_t *lat,
                    unsigned n, unsigned warm)
{
    uint8_t msg[1024];
    for (unsigned i = 0; i < n + warm; i++) {
        tw__stream_fill(99, (uint64_t)i * msg_size, msg, msg_size);
        uint64_t t0 = tw__netdrv_now_ns(), dl = t0 + 5000000000ull;
        if (tw_tcp_send(c, msg, msg_size, t0) != (long)msg_size)
            return -1;
        size_t got = 0;
        int same = 1;
        while (got < msg_size) {
            spin(d);
            if (srv && *srv) {
                const uint8_t *p;
                size_t m;
                while (tw_tcp_recv_peek(*srv, &p, &m) > 0) {
                    if (tw_tcp_send(*srv, p, m, tw__netdrv_now_ns()) != (long)m)
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
            if (tw__netdrv_now_ns() > dl)
                return -1;
        }
        uint64_t t1 = tw__netdrv_now_ns();
        if (!same)
            return -1;
        if (i >= warm)
            lat[i - warm] = t1 - t0;
        if (trace_ns && t1 - t0 > trace_ns) {
            static uint64_t base;
            if (i == 0 || !base)
                base = t0;
            fprintf(stderr, "slow: %s: round trip %u at %.3f ms: %.1f us\n", trace_label, i,
                    (double)(t0 - base) / 1e6, (double)(t1 - t0) / 1e3);
        }
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
    /* A MAC of the stack's own, not the veth's (see the top of the file). */
    static const uint8_t mac[6] = {0x02, 0x74, 0x77, 0x00, 0x00, 0x00};
    memcpy(cfg.mac, mac, 6);
    cfg.mac[5] = (uint8_t)ip;
    tw_net *st = NULL;
    if (tw_net_open(&st, p, &cfg, err) != 0)
        return NULL;
    return st;
}

static void close_conn(tw_tcp_conn *c, tw__netdrv *d)
{
    tw_tcp_abort(c, tw__netdrv_now_ns());
    spin(d);
    tw_tcp_conn_release(c);
}

/* One row of the table: its topology, ports and stacks stay open for the
 * whole benchmark. */
typedef struct rcase {
    const char *label;
    const char *kind; /* port spec kind; NULL = kernel to kernel */
    int both;         /* both ends driven by this stack */
    int spin;         /* the kernel echo server busy-reads */
    int kblock;       /* kernel client: sleeps in recv instead of busy-reading */
    int unbuilt;      /* this build has no such port: not a failure */
    int capture;      /* capture both ports (capture.h) */
    int no_ts;        /* both ends with timestamps off (tw_tcp_cfg): their cost */
    int memif;        /* kind "memif": the peer is `tickwire net echo` in a process of its own,
                         over DPDK's net_memif (shared memory), no namespace, no veth */
    pid_t echo;       /* that process */
    char sock[96];
    int ok;           /* set up, and no run has failed */
    char why[400];    /* why not ok */
    tw__netenv e;
    tw_port *pa, *pb;
    tw_net *a, *b;
    tw__netdrv drv; /* the stacks (a, and b when both) on a one-core reactor */
    tw_tcp_listener l;
    tw_tcp_conn c, srv_conn;
    tw_tcp_conn *srv;
    res rs[16];
    unsigned nr;
    res med;
    unsigned long long retx, probes;
    tw_capture *cap;
    unsigned long long cap_frames, cap_dropped; /* over all runs */
} rcase;

static tw_tcp_conn *accept_cb(tw_tcp_listener *l, uint32_t ip, uint16_t port_no, void *user)
{
    (void)l, (void)ip, (void)port_no;
    rcase *k = user;
    if (k->srv)
        return NULL;
    memset(&k->srv_conn, 0, sizeof(k->srv_conn));
    tw_tcp_cfg cfg = {.no_timestamps = (uint8_t)k->no_ts};
    tw_tcp_set_cfg(&k->srv_conn, &cfg);
    k->srv = &k->srv_conn;
    return k->srv;
}

static void pcap_path(const rcase *k, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s_%s.pcapng", pcap_dir, k->kind, k->both ? "both" : "client");
}

/* The capture rows: one capture, an interface per port, its writer thread
 * on the server CPU (idle when both ends are this stack). */
static int case_capture_open(rcase *k)
{
    if (!k->capture)
        return 0;
    tw_capture_config cc;
    char path[TW_CAPTURE_PATH_MAX], spec[TW_CAPTURE_PATH_MAX + 256];
    pcap_path(k, path, sizeof(path));
    snprintf(spec, sizeof(spec), "%s%s", path, capture_opts);
    tw_error err = {0};
    if (tw_capture_config_parse(&cc, spec, &err) != 0) {
        snprintf(k->why, sizeof(k->why), "--capture-opts: %s", err.msg);
        return -1;
    }
    if (cc.writer_cpu < 0)
        cc.writer_cpu = cpu_srv;
    if (tw_capture_open(&k->cap, &cc, &err) != 0 ||
        tw_port_capture_attach(k->pa, k->cap, "a", &err) != 0 ||
        (k->pb && tw_port_capture_attach(k->pb, k->cap, "b", &err) != 0)) {
        snprintf(k->why, sizeof(k->why), "capture: %s", err.msg);
        return -1;
    }
    return 0;
}

/* Ends a capture row's run: every frame the ports moved is in the file or
 * was counted as dropped, nothing failed, and the file reads back as
 * whole blocks holding exactly the packets written.  0, or -1 with why. */
static int case_capture_close(rcase *k)
{
    if (!k->cap)
        return 0;
    uint64_t moved = 0;
    tw_port *ports[2] = {k->pa, k->pb};
    for (int i = 0; i < 2; i++)
        if (ports[i]) {
            tw_port_capture_detach(ports[i]);
            moved += ports[i]->rx_pkts + ports[i]->tx_pkts;
        }
    tw_capture_stats st;
    char path[TW_CAPTURE_PATH_MAX];
    pcap_path(k, path, sizeof(path));
    int rc = tw_capture_close(k->cap, &st);
    k->cap = NULL;
    uint64_t epbs = 0, bytes = 0;
    int whole = 1;
    FILE *f = fopen(path, "rb");
    static uint8_t buf[1 << 20];
    size_t have = 0, n;
    while (f && (n = fread(buf + have, 1, sizeof(buf) - have, f)) > 0) {
        have += n;
        size_t off = 0;
        tw_pcapng_block b;
        long r;
        while ((r = tw_pcapng_block_parse(buf + off, have - off, &b)) > 0) {
            epbs += b.type == 6;
            off += (size_t)r;
        }
        if (r == -1)
            whole = 0;
        bytes += off;
        memmove(buf, buf + off, have - off);
        have -= off;
    }
    if (f)
        fclose(f);
    if (!pcap_keep)
        unlink(path);
    k->cap_frames += st.written;
    k->cap_dropped += st.dropped;
    /* The backends count what they moved; the capture saw the same frames
     * (a frame a backend refused was neither sent nor captured). */
    if (rc || !f || !whole || have || st.kept + st.dropped + st.filtered != moved ||
        st.written != st.kept || epbs != st.written || bytes != st.bytes || st.lost) {
        snprintf(k->why, sizeof(k->why),
                 "capture check failed: rc %d, %llu moved, %llu kept + %llu dropped, %llu written, "
                 "%llu in the file (%llu of %llu bytes, %s)", rc, (unsigned long long)moved,
                 (unsigned long long)st.kept, (unsigned long long)st.dropped,
                 (unsigned long long)st.written, (unsigned long long)epbs,
                 (unsigned long long)bytes, (unsigned long long)st.bytes,
                 whole ? "whole" : "malformed");
        return -1;
    }
    return 0;
}

/* `tickwire net echo` found next to this program (tickwire itself, or the
 * build tree's tools/tickwire); "" if none. */
static char tickwire_bin[512];

static void find_tickwire(void)
{
    char self[400];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return;
    self[n] = 0;
    char *s = strrchr(self, '/');
    if (!strcmp(s, "/tickwire")) {
        snprintf(tickwire_bin, sizeof(tickwire_bin), "%s", self);
        return;
    }
    *s = 0;
    const char *tries[] = {"/../tools/tickwire", "/../../tools/tickwire"};
    for (unsigned t = 0; t < 2; t++) {
        snprintf(tickwire_bin, sizeof(tickwire_bin), "%s%s", self, tries[t]);
        if (access(tickwire_bin, X_OK) == 0)
            return;
    }
    tickwire_bin[0] = 0;
}

#define MEMIF_ECHO_IP "10.79.0.1"
#define MEMIF_ECHO_PORT 7600

/* The memif row: the echo server's process (memif server, busy-polling on
 * the server CPU) and this stack on the client end of the link. */
static int case_open_memif(rcase *k)
{
    if (!tickwire_bin[0]) {
        snprintf(k->why, sizeof(k->why), "tickwire (for net echo) not found");
        return -1;
    }
    snprintf(k->sock, sizeof(k->sock), "/tmp/tw_netrtt_%d.sock", (int)getpid());
    char port[160], lp[16];
    snprintf(port, sizeof(port), "memif:%s", k->sock);
    snprintf(lp, sizeof(lp), "%d", MEMIF_ECHO_PORT);
    char *argv[] = {tickwire_bin, (char *)"net", (char *)"echo", (char *)"--port", port,
                    (char *)"--ip", (char *)MEMIF_ECHO_IP, (char *)"--listen", lp,
                    (char *)"--busy", NULL};
    tw__netenv none;
    memset(&none, 0, sizeof(none));
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    k->echo = spawn_on(cpu_srv, &none, argv, null);
    if (null >= 0)
        close(null);
    if (k->echo < 0) {
        snprintf(k->why, sizeof(k->why), "cannot start %s net echo", tickwire_bin);
        return -1;
    }
    char spec[200];
    tw_error err = {0};
    snprintf(spec, sizeof(spec), "memif:%s,role=client", k->sock);
    int rc = tw__port_open_spec(&k->pa, spec, 4096, &err);
    if (rc != 0) {
        snprintf(k->why, sizeof(k->why), "%.120s: %.250s", spec, err.msg);
        if (rc == -ENOTSUP)
            k->unbuilt = 1;
        return -1;
    }
    if (!(k->a = open_stack(k->pa, 0x0a4f0002u /* 10.79.0.2, host order */, &err)) ||
        tw__netdrv_init(&k->drv, k->a, k->pa) != 0) {
        snprintf(k->why, sizeof(k->why), "stack: %s", err.msg);
        return -1;
    }
    return 0;
}

static int case_open(rcase *k)
{
    if (k->memif)
        return case_open_memif(k);
    int rc = tw__netenv_setup(&k->e, k->kind ? (k->both ? 0 : 1) : 2);
    if (rc) {
        snprintf(k->why, sizeof(k->why), "topology: %s",
                 rc == TW_NETENV_SKIP ? "skipped" : "failed");
        return rc;
    }
    if (!k->kind)
        return 0;
    char spec[128];
    tw_error err = {0};
    snprintf(spec, sizeof(spec), "%s:%s", k->kind, k->e.host);
    if ((rc = tw__port_open_spec(&k->pa, spec, 4096, &err)) != 0) {
        snprintf(k->why, sizeof(k->why), "%s: %s", spec, err.msg);
        if (rc == -ENOTSUP)
            k->unbuilt = 1;
        return -1;
    }
    if (!(k->a = open_stack(k->pa, TW_NETENV_STACK_IP_BE, &err))) {
        snprintf(k->why, sizeof(k->why), "stack: %s", err.msg);
        return -1;
    }
    if (tw__netdrv_init(&k->drv, k->a, k->pa) != 0) {
        snprintf(k->why, sizeof(k->why), "the stack's reactor");
        return -1;
    }
    if (!k->both)
        return case_capture_open(k);
    snprintf(spec, sizeof(spec), "%s:%s", k->kind, k->e.peer);
    if ((rc = tw__port_open_spec(&k->pb, spec, 4096, &err)) != 0) {
        snprintf(k->why, sizeof(k->why), "%s: %s", spec, err.msg);
        return -1;
    }
    if (!(k->b = open_stack(k->pb, TW_NETENV_PEER_IP_BE, &err)) ||
        tw_tcp_listen(k->b, &k->l, 7500, accept_cb, k) != 0 ||
        tw__netdrv_add(&k->drv, k->b, k->pb) != 0) {
        snprintf(k->why, sizeof(k->why), "peer stack: %s", err.msg);
        return -1;
    }
    return case_capture_open(k);
}

/* Adds the run's retransmissions to k->retx and removes everything.
 * Returns the capture check (0 when the row has none). */
static int case_close(rcase *k)
{
    int crc = case_capture_close(k);
    if (k->a) {
        k->retx += tw_net_get_stats(k->a)->retransmits;
        k->probes += tw_net_get_stats(k->a)->tlp_probes;
    }
    if (k->b) {
        k->retx += tw_net_get_stats(k->b)->retransmits;
        k->probes += tw_net_get_stats(k->b)->tlp_probes;
    }
    if (k->a)
        tw_net_close(k->a);
    if (k->b)
        tw_net_close(k->b);
    tw_port_close(k->pa);
    tw_port_close(k->pb);
    if (k->echo > 0) {
        kill(k->echo, SIGTERM);
        if (tw__netenv_wait(k->echo, 10.0) < 0)
            kill(k->echo, SIGKILL);
        k->echo = 0;
    }
    tw__netenv_teardown(&k->e);
    k->a = k->b = NULL;
    k->pa = k->pb = NULL;
    return crc;
}

/* Kernel client -> kernel server, in two namespaces. */
static int run_kernel(rcase *k, unsigned r)
{
    int efd;
    unsigned pn = 7300 + r;
    pid_t srv = start_echo(&k->e, pn, k->spin, &efd);
    if (srv < 0)
        return -1;
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    char pb[16], nb[16], sb[16];
    snprintf(pb, sizeof(pb), "%u", pn);
    snprintf(nb, sizeof(nb), "%u", n_msgs);
    snprintf(sb, sizeof(sb), "%u", msg_size);
    char *argv[] = {(char *)"ip", (char *)"netns", (char *)"exec", k->e.ns2, kpeer,
                    (char *)"rttclient", (char *)TW_NETENV_PEER_IP, pb, nb, sb,
                    k->kblock ? (char *)"block" : NULL, NULL};
    tw__netenv none;
    memset(&none, 0, sizeof(none));
    pid_t cli = spawn_on(cpu_cli, &none, argv, fds[1]);
    close(fds[1]);
    char line[256];
    ssize_t n = 0;
    while (n < (ssize_t)sizeof(line) - 1 && read(fds[0], line + n, 1) == 1 && line[n] != '\n')
        n++;
    line[n] = 0;
    close(fds[0]);
    int crc = tw__netenv_wait(cli, 120.0);
    tw__netenv_wait(srv, 10.0);
    close(efd);
    unsigned long long a, b, c, d;
    if (crc != 0 || sscanf(line, "rtt %llu %llu %llu %llu", &a, &b, &c, &d) != 4) {
        snprintf(k->why, sizeof(k->why), "kernel client failed (%d: '%.80s')", crc, line);
        return -1;
    }
    k->rs[k->nr++] = (res){a / 1e3, b / 1e3, c / 1e3, d / 1e3};
    return 0;
}

/* This stack as client to a kernel echo server started for the run (or
 * to the memif row's echo process). */
static int run_client(rcase *k, unsigned r, uint64_t *lat)
{
    int efd = -1;
    unsigned pn = k->memif ? MEMIF_ECHO_PORT : 7400 + r;
    uint32_t ip = k->memif ? 0x0a4f0001u : TW_NETENV_PEER_IP_BE;
    pid_t srv = k->memif ? k->echo : start_echo(&k->e, pn, k->spin, &efd);
    memset(&k->c, 0, sizeof(k->c));
    /* The memif link comes up after both ends started: the SYN retries. */
    int ok = srv > 0 &&
             tw_tcp_connect(k->a, &k->c, ip, (uint16_t)pn, 0, tw__netdrv_now_ns()) == 0 &&
             wait_state(&k->c, &k->drv, TW_TCP_ESTABLISHED, 10) == 0 &&
             pingpong(&k->c, &k->drv, NULL, lat, n_msgs, 1000) == 0;
    if (ok)
        k->rs[k->nr++] = summarize(lat, n_msgs);
    else
        snprintf(k->why, sizeof(k->why), "run %u failed (state %s)", r,
                 tw_tcp_state_name(tw_tcp_get_state(&k->c)));
    close_conn(&k->c, &k->drv);
    if (srv > 0 && !k->memif) {
        tw__netenv_wait(srv, 10.0);
        close(efd);
    }
    return ok ? 0 : -1;
}

/* Both ends on this stack, one thread polling both. */
static int run_both(rcase *k, unsigned r, uint64_t *lat)
{
    memset(&k->c, 0, sizeof(k->c));
    tw_tcp_cfg cfg = {.no_timestamps = (uint8_t)k->no_ts};
    tw_tcp_set_cfg(&k->c, &cfg);
    k->srv = NULL;
    int ok = tw_tcp_connect(k->a, &k->c, TW_NETENV_PEER_IP_BE, 7500, 0,
                            tw__netdrv_now_ns()) == 0 &&
             wait_state(&k->c, &k->drv, TW_TCP_ESTABLISHED, 10) == 0 &&
             pingpong(&k->c, &k->drv, &k->srv, lat, n_msgs, 1000) == 0;
    if (ok)
        k->rs[k->nr++] = summarize(lat, n_msgs);
    else
        snprintf(k->why, sizeof(k->why), "run %u failed (state %s)", r,
                 tw_tcp_state_name(tw_tcp_get_state(&k->c)));
    close_conn(&k->c, &k->drv);
    for (int i = 0; i < 1000; i++)
        spin(&k->drv);
    if (k->srv) {
        if (tw_tcp_get_state(k->srv) != TW_TCP_CLOSED)
            tw_tcp_abort(k->srv, tw__netdrv_now_ns());
        tw_tcp_conn_release(k->srv);
        k->srv = NULL;
    }
    return ok ? 0 : -1;
}

/* The spread of a row's p99.9 over its rounds, relative to its median:
 * what "nothing measurable" is measured against. */
static double p999_spread(const rcase *k)
{
    double lo = 1e300, hi = 0;
    for (unsigned i = 0; i < k->nr; i++) {
        if (k->rs[i].p999 < lo)
            lo = k->rs[i].p999;
        if (k->rs[i].p999 > hi)
            hi = k->rs[i].p999;
    }
    return k->nr > 1 && k->med.p999 > 0 ? (hi - lo) / k->med.p999 : 0;
}

/* Capture on against capture off, same kind of row, same run (the goal):
 * p50 at most 5% more; p99.9 within what the row without capture varies
 * by over its rounds (at least 5%).  Returns 1 if a row could not be
 * compared because one side failed. */
static int capture_report(const rcase *cases, unsigned n)
{
    int hdr = 0, bad = 0;
    for (unsigned i = 0; i < n; i++) {
        const rcase *c = &cases[i];
        if (!c->capture)
            continue;
        const rcase *b = NULL;
        for (unsigned j = 0; j < n; j++)
            if (!cases[j].capture && !cases[j].no_ts && cases[j].kind &&
                !strcmp(cases[j].kind, c->kind) &&
                cases[j].both == c->both && cases[j].spin == c->spin)
                b = &cases[j];
        if (!hdr) {
            printf("\n  capture cost (capture on / off, same run; goal on the stack <-> stack "
                   "rows:\n  p50 at most +5%%, p99.9 within the off row's spread over rounds, "
                   "at least 5%%):\n");
            hdr = 1;
        }
        if (!b || !b->ok || !c->ok) {
            printf("    %-46s not compared (%s)\n", c->label,
                   !c->ok ? c->why : !b ? "no row without capture" : b->why);
            bad |= !(c->unbuilt || (b && b->unbuilt));
            continue;
        }
        double r50 = c->med.p50 / b->med.p50, r999 = c->med.p999 / b->med.p999;
        double tol = p999_spread(b);
        if (tol < 0.05)
            tol = 0.05;
        int met50 = r50 <= 1.05, met999 = r999 <= 1.0 + tol;
        printf("    %-46s p50 %.1f -> %.1f us (%+.1f%%)  p99.9 %.1f -> %.1f us (%+.1f%%, "
               "spread %.0f%%)\n", c->label, b->med.p50, c->med.p50, (r50 - 1) * 100,
               b->med.p999, c->med.p999, (r999 - 1) * 100, tol * 100);
        printf("    %-46s %llu frames captured, %llu dropped (ring full)\n", "",
               c->cap_frames, c->cap_dropped);
        if (c->both)
            printf("    %-46s goal p50 +5%%: %s; goal p99.9 unchanged: %s\n", "",
                   met50 ? "met" : "NOT met", met999 ? "met" : "NOT met");
    }
    return bad;
}

/* Timestamps on (the default) against off, stack <-> stack, same run:
 * goal p50 and p99.9 within 5%. */
static void ts_report(const rcase *cases, unsigned n)
{
    int hdr = 0;
    for (unsigned i = 0; i < n; i++) {
        const rcase *o = &cases[i];
        if (!o->no_ts)
            continue;
        const rcase *b = NULL;
        for (unsigned j = 0; j < n; j++)
            if (cases[j].both && !cases[j].no_ts && !cases[j].capture &&
                !strcmp(cases[j].kind, o->kind))
                b = &cases[j];
        if (!hdr) {
            printf("\n  timestamps cost (on / off, stack <-> stack, same run; goal: within 5%%):\n");
            hdr = 1;
        }
        if (!b || !b->ok || !o->ok) {
            printf("    %-46s not compared (%s)\n", b ? b->label : o->label,
                   !o->ok ? o->why : !b ? "no row with timestamps" : b->why);
            continue;
        }
        double r50 = b->med.p50 / o->med.p50, r999 = b->med.p999 / o->med.p999;
        printf("    %-46s p50 %.2f -> %.2f us (%+.1f%%)  p99.9 %.1f -> %.1f us (%+.1f%%): %s\n",
               b->label, o->med.p50, b->med.p50, (r50 - 1) * 100, o->med.p999, b->med.p999,
               (r999 - 1) * 100, r50 <= 1.05 && r999 <= 1.05 ? "met" : "NOT met");
    }
}

static void row(const char *name, const res *r)
{
    printf("  %-46s %8.1f %8.1f %9.1f %9.1f %10.2f\n", name, r->p50, r->p99, r->p999, r->max,
           r->p999 / r->p50);
}

static const char usage_text[] =
    "usage: tickwire bench netrtt [-n MSGS] [--runs R] [--rt] [--cpus C,S] [--kpeer PATH]\n"
    "                             [--trace US] [--capture] [--timestamps] [--pcap-dir DIR]\n"
    "  round trips of 64-byte messages over a veth pair (root)\n"
    "  -n MSGS     round trips per run (default 20000, at least 1000)\n"
    "  --runs R    rounds; each runs every case once (default 3, at most 15)\n"
    "  --rt        SCHED_FIFO 1 for this process and (inherited) every kernel\n"
    "              peer, so other load on a shared machine preempts neither side\n"
    "  --cpus C,S  clients (stack or kernel) on CPU C, kernel echo servers on\n"
    "              CPU S (default: the first two CPUs allowed)\n"
    "  --kpeer P   the kernel peer program (default: net_kpeer of the build)\n"
    "  --trace US  print each stack round trip slower than US microseconds with\n"
    "              its time into the run (periodic stalls show as a period)\n"
    "  --timestamps only the stack <-> stack rows with and without timestamps (their\n"
    "              cost, alternating in one run) and the baseline\n"
    "  --capture   only the rows the capture goal compares (stack <-> stack with and\n"
    "              without capture, af_xdp -> kernel with and without) and the baseline\n"
    "  --pcap-dir D  write the capture rows' files into D and keep them\n"
    "  --capture-opts ,K=V...  capture options of those rows (tickwire/capture.h:\n"
    "              snap=, slots=, port=, dir=, cpu=; default: whole frames, 4096 slots,\n"
    "              the writer on the server CPU)\n";

/* Options into the file's settings: -1 when they are good, else the exit
 * status to return now (0 after --help, 2 after one line saying what was
 * wrong). */
static int parse_args(int argc, char **argv)
{
    static const char cmd[] = "bench netrtt";
    for (int i = 1; i < argc; i++) {
        const char *opt, *val;
        uint64_t v;
        if (!strcmp(argv[i], "--rt")) {
            rt = 1;
            continue;
        }
        if (!strcmp(argv[i], "--capture")) {
            capture_only = 1;
            continue;
        }
        if (!strcmp(argv[i], "--timestamps")) {
            ts_only = 1;
            continue;
        }
        if (!strcmp(argv[i], "-n")) { /* the one short option with a value */
            if (i + 1 >= argc) {
                fprintf(stderr, "tickwire %s: -n needs a value (see --help)\n", cmd);
                return 2;
            }
            opt = argv[i];
            val = argv[++i];
        } else {
            int r = tw__cli_opt_value(cmd, usage_text, argc, argv, &i, &opt, &val);
            if (r)
                return r > 0 ? 0 : 2;
        }
        if (!strcmp(opt, "-n")) {
            if (tw__cli_u64_range(cmd, opt, val, 1000, 10000000, &v))
                return 2;
            n_msgs = (unsigned)v;
        } else if (!strcmp(opt, "--runs")) {
            if (tw__cli_u64_range(cmd, opt, val, 1, 15, &v))
                return 2;
            n_runs = (unsigned)v;
        } else if (!strcmp(opt, "--cpus")) {
            char extra;
            if (sscanf(val, "%d,%d%c", &cpu_cli, &cpu_srv, &extra) != 2 || cpu_cli < 0 ||
                cpu_srv < 0 || cpu_cli >= CPU_SETSIZE || cpu_srv >= CPU_SETSIZE) {
                fprintf(stderr, "tickwire %s: --cpus wants CLIENT,SERVER (two CPU numbers)\n",
                        cmd);
                return 2;
            }
        } else if (!strcmp(opt, "--trace")) {
            double us;
            if (tw__cli_double(cmd, opt, val, &us))
                return 2;
            if (us < 0) {
                fprintf(stderr, "tickwire %s: --trace: %s is negative\n", cmd, val);
                return 2;
            }
            trace_ns = (uint64_t)(us * 1e3);
        } else if (!strcmp(opt, "--kpeer")) {
            snprintf(kpeer, sizeof(kpeer), "%s", val);
        } else if (!strcmp(opt, "--pcap-dir")) {
            snprintf(pcap_dir, sizeof(pcap_dir), "%s", val);
        } else if (!strcmp(opt, "--capture-opts")) {
            tw_capture_config cc;
            tw_error err;
            char spec[600];
            snprintf(spec, sizeof(spec), "x%s", val);
            if (val[0] != ',' || tw_capture_config_parse(&cc, spec, &err) != 0) {
                fprintf(stderr, "tickwire %s: --capture-opts: %s\n", cmd,
                        val[0] != ',' ? "want ,key=value..." : err.msg);
                return 2;
            }
            capture_opts = val;
        } else {
            fprintf(stderr, "tickwire %s: unknown option '%s' (see --help)\n", cmd, opt);
            return 2;
        }
    }
    return -1;
}

int tw__bench_netrtt_run(int argc, char **argv)
{
    int prc = parse_args(argc, argv);
    if (prc >= 0)
        return prc;
    if (geteuid() != 0) {
        fprintf(stderr, "SKIP: netrtt needs root (network namespaces and veth pairs)\n");
        return 77;
    }
    find_tickwire();
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
    if (cpu_cli < 0) {
        cpu_set_t s;
        if (sched_getaffinity(0, sizeof(s), &s) == 0)
            for (int c = 0; c < CPU_SETSIZE && cpu_srv < 0; c++)
                if (CPU_ISSET(c, &s)) {
                    if (cpu_cli < 0)
                        cpu_cli = c;
                    else
                        cpu_srv = c;
                }
        if (cpu_srv < 0)
            cpu_cli = -1; /* one CPU: nothing to place */
    }
    pin_self(cpu_cli);
    if (rt) {
        /* Inherited by the kernel peers we fork: every case gets the same
         * treatment.  Each run is well under the RT throttling budget. */
        struct sched_param sp = {.sched_priority = 1};
        if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
            perror("netrtt: sched_setscheduler(SCHED_FIFO)");
            return 1;
        }
    }
    printf("netrtt: %u round trips of %u bytes per run, %u rounds, median over rounds; "
           "busy-poll%s\n",
           n_msgs, msg_size, n_runs, rt ? "; SCHED_FIFO" : "");
    tw_isa isa = tw_cpu_has(TW_ISA_AVX512) ? TW_ISA_AVX512
                 : tw_cpu_has(TW_ISA_AVX2) ? TW_ISA_AVX2
                                           : TW_ISA_SCALAR;
    printf("netrtt: CPU ISA %s (the stack and the capture use no vector code)\n",
           tw_isa_name(isa));
    if (cpu_cli >= 0)
        printf("netrtt: clients on CPU %d, kernel echo servers on CPU %d\n", cpu_cli, cpu_srv);
    else
        printf("netrtt: one CPU: client and server share it\n");

    static rcase cases[] = {
        {.label = "kernel -> kernel (client sleeps in recv)", .kblock = 1},
        {.label = "kernel -> kernel (client busy-reads)"},
        {.label = "stack(af_xdp) -> kernel", .kind = "af_xdp"},
        {.label = "stack(dpdk net_af_packet) -> kernel", .kind = "dpdk_af_packet"},
        {.label = "stack(af_packet) -> kernel", .kind = "af_packet"},
        {.label = "kernel -> kernel, server busy-reads", .spin = 1},
        {.label = "stack(af_xdp) -> kernel, server busy-reads", .kind = "af_xdp", .spin = 1},
        {.label = "stack(dpdk) -> kernel, server busy-reads", .kind = "dpdk_af_packet", .spin = 1},
        {.label = "stack(af_packet) -> kernel, server busy-reads", .kind = "af_packet", .spin = 1},
        {.label = "stack(af_xdp) <-> stack(af_xdp)", .kind = "af_xdp", .both = 1},
        {.label = "stack(dpdk) <-> stack(dpdk)", .kind = "dpdk_af_packet", .both = 1},
        {.label = "stack(af_xdp) <-> stack(af_xdp), no timestamps", .kind = "af_xdp", .both = 1,
         .no_ts = 1},
        {.label = "stack(dpdk) <-> stack(dpdk), no timestamps", .kind = "dpdk_af_packet",
         .both = 1, .no_ts = 1},
        {.label = "stack(af_xdp) <-> stack(af_xdp), capture", .kind = "af_xdp", .both = 1,
         .capture = 1},
        {.label = "stack(dpdk) <-> stack(dpdk), capture", .kind = "dpdk_af_packet", .both = 1,
         .capture = 1},
        {.label = "stack(af_xdp) -> kernel, capture", .kind = "af_xdp", .capture = 1},
        {.label = "stack(memif) <-> stack(memif), 2 processes", .kind = "memif", .memif = 1},
    };
    enum { NCASES = sizeof(cases) / sizeof(cases[0]) };
    for (unsigned i = 0; i < NCASES; i++)
        cases[i].ok = 1;
    if (capture_only) {
        /* The rows the capture goal compares, and the baseline the table
         * needs: the others are marked as not run. */
        for (unsigned i = 1; i < NCASES; i++)
            if (!cases[i].both && !(cases[i].capture) &&
                !(cases[i].kind && !strcmp(cases[i].kind, "af_xdp") && !cases[i].spin)) {
                cases[i].ok = 0;
                cases[i].unbuilt = 1;
                snprintf(cases[i].why, sizeof(cases[i].why), "not run (--capture)");
            }
    }
    if (ts_only)
        for (unsigned i = 1; i < NCASES; i++)
            if (!cases[i].both || cases[i].capture) {
                cases[i].ok = 0;
                cases[i].unbuilt = 1;
                snprintf(cases[i].why, sizeof(cases[i].why), "not run (--timestamps)");
            }
    if (!pcap_dir[0]) {
        snprintf(pcap_dir, sizeof(pcap_dir), "/tmp/tw_netrtt_pcap_XXXXXX");
        if (!mkdtemp(pcap_dir)) {
            perror("netrtt: mkdtemp");
            return 1;
        }
    } else {
        pcap_keep = 1;
    }
    uint64_t *lat = calloc(n_msgs, sizeof(uint64_t));
    if (!lat)
        return 1;
    /* Each run sets its case up and removes it again, so that no other
     * case's sockets, rings or timers are alive while one is measured. */
    for (unsigned r = 0; r < n_runs; r++) {
        for (unsigned j = 0; j < NCASES; j++) {
            rcase *k = &cases[(j + r) % NCASES];
            if (!k->ok)
                continue;
            trace_label = k->label;
            int rc = case_open(k);
            if (rc == TW_NETENV_SKIP) {
                case_close(k);
                free(lat);
                return 77;
            }
            if (rc == 0)
                rc = !k->kind ? run_kernel(k, r) : k->both ? run_both(k, r, lat)
                                                           : run_client(k, r, lat);
            if (case_close(k) && rc == 0)
                rc = -1; /* the capture check failed: k->why says how */
            if (rc) {
                k->ok = 0;
                fprintf(stderr, "netrtt: %s: %s\n", k->label, k->why);
            }
        }
        fprintf(stderr, "\rnetrtt: round %u of %u done", r + 1, n_runs);
    }
    fprintf(stderr, "\n");
    free(lat);
    for (unsigned i = 0; i < NCASES; i++)
        if (cases[i].ok)
            cases[i].med = median_res(cases[i].rs, cases[i].nr);
    rcase *kk = &cases[0];
    if (!kk->ok) {
        fprintf(stderr, "netrtt: kernel baseline failed: %s\n", kk->why);
        return 1;
    }
    printf("\n  %-46s %8s %8s %9s %9s %10s\n", "case (us)", "p50", "p99", "p99.9", "max",
           "p99.9/p50");
    int bad = 0;
    for (unsigned i = 0; i < NCASES; i++) {
        if (cases[i].ok)
            row(cases[i].label, &cases[i].med);
        else {
            printf("  %-46s not measured: %s\n", cases[i].label, cases[i].why);
            bad |= !cases[i].unbuilt;
        }
    }
    /* A loss probe goes out when an answer is 2 SRTT (at least 1 ms)
     * late: on a shared machine, a peer preempted for that long. */
    printf("\n  stack retransmissions (any but a loss probe would be a lost frame; probes):");
    for (unsigned i = 0; i < NCASES; i++)
        if (cases[i].kind)
            printf(" %llu (%llu)", cases[i].retx, cases[i].probes);
    /* Baselines: the goals' (a plain kernel client: TCP_NODELAY and
     * SO_BUSY_POLL, sleeping in recv) and a stronger one (the kernel client
     * busy-reading, as the stack busy-polls), each against the same kind of
     * server as the row. */
    printf("\n\n  ratios to kernel->kernel with the same server (< 1 is better; goal vs the\n"
           "  client that sleeps in recv, the goals' baseline; [vs the busy-reading one]):\n");
    for (unsigned i = 0; i < NCASES; i++) {
        const rcase *k = &cases[i];
        if (!k->ok || !k->kind)
            continue;
        const res *bs = NULL, *bb = NULL;
        for (unsigned j = 0; j < NCASES; j++) {
            const rcase *q = &cases[j];
            if (q->kind || q->spin != k->spin || !q->ok)
                continue;
            if (q->kblock)
                bs = &q->med;
            else
                bb = &q->med;
        }
        const res *b0 = bs ? bs : bb;
        if (!b0)
            continue;
        const res *m = &k->med;
        if (k->both)
            printf("    %-46s p50 %.2fx  p99.9 %.2fx  (goal: both < 1)", k->label,
                   m->p50 / b0->p50, m->p999 / b0->p999);
        else
            printf("    %-46s p99.9 %.2fx  p99.9/p50 %.2fx  (goal: both < 1; p50 %.2fx)", k->label,
                   m->p999 / b0->p999, (m->p999 / m->p50) / (b0->p999 / b0->p50),
                   m->p50 / b0->p50);
        if (bs && bb && k->both)
            printf("  [%.2fx %.2fx]", m->p50 / bb->p50, m->p999 / bb->p999);
        else if (bs && bb)
            printf("  [%.2fx %.2fx %.2fx]", m->p999 / bb->p999,
                   (m->p999 / m->p50) / (bb->p999 / bb->p50), m->p50 / bb->p50);
        printf("\n");
    }
    bad |= capture_report(cases, NCASES);
    ts_report(cases, NCASES);
    if (!pcap_keep)
        rmdir(pcap_dir);
    else
        printf("\n  capture files kept in %s\n", pcap_dir);
    return bad;
}
