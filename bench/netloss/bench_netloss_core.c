/* tickwire bench netloss: TCP through the same seeded impaired link
 * (tools/common/netrelay.h) for every pair of ends:
 *
 *   linux <-> linux     kpeer sendclient / kpeer rttclient in the left
 *                       namespace, kpeer bulk / kpeer echo in the right one
 *   stack -> linux      this stack on the left end (a port on the veth),
 *                       the same kernel programs on the right
 *   stack <-> stack     this stack on both ends, a thread each (as two
 *                       hosts would run them)
 *
 * and for the stack rows, SACK on (the default) and off (timestamps on in
 * both).  Each run starts a fresh relay with the round's seed, so every
 * row of a round meets the same losses frame for frame: the k-th IPv4
 * frame each way has the same fate whoever sent it.
 *
 * Measured: the time for one end to send 1 MiB, from its first byte
 * written to its last byte acknowledged (the handshake excluded), checked
 * byte for byte at the receiver (SHA-256); and 64-byte ping-pong round
 * trips (each echo checked).  Rounds alternate each subject with a
 * linux <-> linux run (ABAB), so slow phases of a shared machine fall on
 * both; the table gives medians over runs.  Root only. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cli_opt.h"
#include "common/hostcpu.h"
#include "common/netdrv.h"
#include "common/netenv.h"
#include "common/netrelay.h"
#include "common/portspec.h"
#include "common/sha256.h"
#include "common/stats.h"
#include "tickwire/net.h"

int tw__bench_netloss_run(int argc, char **argv);

#define XFER_BYTES (1u << 20)
#define PP_SIZE 64
#define STREAM_SEED 0x1055ull
#define DELAY_US 100      /* one way, every mode */
#define BURST_AT 300      /* the burst starts at the 300th frame left to right */
#define MAX_RUNS 64

enum { S_LL, S_SL, S_SL_NOSACK, S_SS, S_SS_NOSACK, N_SUBJ };
static const char *const subj_name[N_SUBJ] = {
    "linux <-> linux", "stack -> linux", "stack -> linux, no SACK", "stack <-> stack",
    "stack <-> stack, no SACK"};

typedef struct mode {
    const char *name;
    double loss;
    unsigned burst;
    int pingpong; /* ping-pong measured in this mode */
} mode;
static const mode modes[] = {
    {"0.1%", 0.001, 0, 1}, {"1%", 0.01, 0, 1}, {"5%", 0.05, 0, 0}, {"burst 10", 0, 10, 0}};
enum { N_MODES = sizeof(modes) / sizeof(modes[0]) };

static unsigned n_rounds = 3, pp_msgs = 1000;
static int quick;
static uint64_t base_seed = 1;
/* AF_XDP's fd wakes a sleeping stack per frame; AF_PACKET's TPACKET_V3
 * ring wakes it per block (full, or its retire timer). */
#ifdef TW_HAVE_AF_XDP
static const char *port_kind = "af_xdp";
#else
static const char *port_kind = "af_packet";
#endif
static char kpeer[512];

/* Samples per (mode, subject): transfer ns; ping-pong percentiles. */
typedef struct cell {
    double xfer_ns[MAX_RUNS];
    unsigned nx;
    double p50[MAX_RUNS], p99[MAX_RUNS], p999[MAX_RUNS];
    unsigned np;
    unsigned failed;
    uint64_t rto, retx, recov; /* the stack's, over the runs */
    char why[200];
} cell;
static cell *cur; /* the cell of the run under way */
static cell cells[N_MODES][N_SUBJ];
static uint64_t sched_drops[2], unscheduled; /* over every run */
static uint64_t retx_sack, retx_nosack, sack_recov, rescues, ts_samples, rtos[2];
static uint64_t dsack_tx, dsack_rx;
/* --mode / --subject: run only these (debugging one cell); -1 = all. */
static int only_mode = -1, only_subj = -1;
static int verbose; /* --verbose: a line per stack transfer, relay counts per run */
static int sack_seen, ts_seen, sack_off_seen;
static int ran_sack_on, ran_sack_off; /* stack runs with SACK on / off were made */

/* ---- the three topologies, kept for the whole run ---------------------- */

typedef struct topo {
    tw__relay_topology t;
    int up;
} topo;
static topo topos[3]; /* 0: both kernel ends; 1: stack left, kernel right; 2: both stack */

static topo *topo_of(int s)
{
    return s == S_LL ? &topos[0] : (s == S_SL || s == S_SL_NOSACK) ? &topos[1] : &topos[2];
}

static void relay_sched(tw__relay_sched *rs, const mode *m, unsigned round)
{
    memset(rs, 0, sizeof(*rs));
    rs->seed = base_seed + round;
    rs->loss = m->loss;
    rs->burst_len = m->burst;
    rs->burst_at = BURST_AT;
    rs->delay_ns = DELAY_US * 1000;
}

static tw__relay relay;

static int relay_begin(topo *tp, const mode *m, unsigned round, char *why, size_t cap)
{
    tw__relay_sched rs;
    relay_sched(&rs, m, round);
    int rc = tw__relay_open(&relay, tp->t.l.host, tp->t.r.host, &rs, why, cap);
    if (rc == 0 && (rc = tw__relay_start(&relay)) != 0) {
        snprintf(why, cap, "relay thread: %s", strerror(-rc));
        tw__relay_close(&relay);
    }
    return rc;
}

static void relay_end(void)
{
    tw__relay_close(&relay);
    sched_drops[0] += relay.c.dropped[0];
    sched_drops[1] += relay.c.dropped[1];
    unscheduled += relay.c.queue_full + relay.c.tx_fail + relay.c.sock_drops;
    if (verbose)
        fprintf(stderr, "  relay: %llu frames left to right, %llu right to left\n",
                (unsigned long long)relay.c.frames[0], (unsigned long long)relay.c.frames[1]);
}

/* ---- kernel peers -------------------------------------------------------- */

/* Starts kpeer with args in ns (of e); a server waits for its "ready".
 * *out_fd is its stdout.  Returns the pid or -1. */
static pid_t kstart(const tw__netenv *e, char **args, int server, int *out_fd)
{
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    char *argv[12];
    int n = 0;
    argv[n++] = kpeer;
    for (int i = 0; args[i] && n < 11; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = tw__netenv_spawn(e, argv, fds[1]);
    close(fds[1]);
    *out_fd = fds[0];
    if (pid < 0) {
        close(fds[0]);
        return -1;
    }
    if (!server)
        return pid;
    char line[64];
    size_t k = 0;
    struct pollfd pf = {.fd = fds[0], .events = POLLIN};
    while (k + 1 < sizeof(line) && poll(&pf, 1, 10000) > 0) {
        if (read(fds[0], &line[k], 1) != 1 || line[k] == '\n')
            break;
        k++;
    }
    line[k] = 0;
    if (strcmp(line, "ready") != 0) {
        kill(pid, SIGKILL);
        tw__netenv_wait(pid, 5);
        close(fds[0]);
        return -1;
    }
    return pid;
}

/* Reads one line of a kpeer's stdout (waiting up to timeout_s) into line. */
static void kline(int fd, char *line, size_t cap, double timeout_s)
{
    size_t k = 0;
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    while (k + 1 < cap && poll(&pf, 1, (int)(timeout_s * 1000)) > 0) {
        if (read(fd, &line[k], 1) != 1 || line[k] == '\n')
            break;
        k++;
    }
    line[k] = 0;
}

/* ---- this stack ------------------------------------------------------------ */

typedef struct side {
    tw_port *port;
    tw_net *st;
} side;

typedef struct srun {
    side a, b;        /* a: left (sender / ping client); b: right, stack <-> stack */
    tw__netdrv drv;   /* a's loop, on this thread */
    tw__netdrv drvb;  /* b's loop, on a thread of its own while tb_up */
    tw_tcp_listener l;
    tw_tcp_conn c, sc;
    tw_tcp_conn *srv; /* b's accepted connection (b's thread owns it while tb_up) */
    tw_tcp_cfg cfg;
    pthread_t tb;
    int tb_up, echo_b;
    atomic_int stop_b;
    atomic_ullong got_b; /* bytes b has read */
    tw__sha256 hb;       /* of them (transfers) */
} srun;

static srun R;

static tw_tcp_conn *accept_cb(tw_tcp_listener *l, uint32_t ip, uint16_t port_no, void *user)
{
    (void)l, (void)ip, (void)port_no;
    srun *r = user;
    if (r->srv)
        return NULL;
    memset(&r->sc, 0, sizeof(r->sc));
    tw_tcp_set_cfg(&r->sc, &r->cfg);
    r->srv = &r->sc;
    return r->srv;
}

static int side_open(side *s, const char *ifname, uint32_t ip, char *why, size_t cap)
{
    char spec[64];
    tw_error err = {0};
    snprintf(spec, sizeof(spec), "%s:%s", port_kind, ifname);
    if (tw__port_open_spec(&s->port, spec, 4096, &err) != 0) {
        snprintf(why, cap, "%.40s: %.140s", spec, err.msg);
        return -1;
    }
    tw_net_config cfg;
    tw_net_config_init(&cfg, ip);
    cfg.isn_secret[0] = 0x1055;
    cfg.isn_secret[1] = (uint64_t)getpid();
    cfg.time_wait_ns = 1000000;
    cfg.max_conns = 4;
    /* A MAC of the stack's own (bench/netrtt: the host kernel then stops
     * the frames at its L2 check). */
    static const uint8_t mac[6] = {0x02, 0x74, 0x77, 0x00, 0x10, 0x00};
    memcpy(cfg.mac, mac, 6);
    cfg.mac[5] = (uint8_t)ip;
    if (tw_net_open(&s->st, s->port, &cfg, &err) != 0) {
        snprintf(why, cap, "stack: %.150s", err.msg);
        return -1;
    }
    return 0;
}

static void note_stats(const tw_net *st, int no_sack)
{
    const tw_net_stats *x = tw_net_get_stats(st);
    if (no_sack)
        retx_nosack += x->retransmits;
    else
        retx_sack += x->retransmits;
    rtos[no_sack ? 1 : 0] += x->rto_fires;
    cur->retx += x->retransmits;
    cur->recov += x->sack_recoveries + x->fast_retransmits;
    sack_recov += x->sack_recoveries;
    rescues += x->rescue_retransmits;
    ts_samples += x->ts_rtt_samples;
    dsack_tx += x->tx_dsack;
    dsack_rx += x->rx_dsack;
}

static void side_close(side *s, int no_sack)
{
    if (s->st) {
        note_stats(s->st, no_sack);
        tw_net_close(s->st);
    }
    tw_port_close(s->port);
    s->st = NULL;
    s->port = NULL;
}

/* The stack sleeps on its port's fd when idle, as the kernel's programs
 * sleep in recv (--busy: it busy-polls; on a shared machine a busy loop
 * is preempted for whole time slices, which the sleepers are not). */
static int yielding = 1;
static void turn(void) { (void)tw__netdrv_turn(&R.drv, yielding, 1000000); }
static void serve(tw__sha256 *h, uint64_t *got, int echo);

/* The right end of stack <-> stack: its own loop, reading (and hashing)
 * or echoing until told to stop. */
static void *peer_main(void *arg)
{
    (void)arg;
    uint64_t got = 0;
    while (!atomic_load_explicit(&R.stop_b, memory_order_acquire)) {
        (void)tw__netdrv_turn(&R.drvb, yielding, 1000000);
        serve(R.echo_b ? NULL : &R.hb, &got, R.echo_b);
        atomic_store_explicit(&R.got_b, got, memory_order_release);
    }
    return NULL;
}

static int peer_start(int echo, char *why, size_t cap)
{
    R.echo_b = echo;
    tw__sha256_init(&R.hb);
    atomic_store(&R.got_b, 0);
    atomic_store(&R.stop_b, 0);
    int e = pthread_create(&R.tb, NULL, peer_main, NULL);
    if (e) {
        snprintf(why, cap, "the right end's thread: %s", strerror(e));
        return -1;
    }
    R.tb_up = 1;
    return 0;
}

/* Stops and joins b's thread (its wait ends within 1 ms); b's stack is
 * this thread's again. */
static void peer_stop(void)
{
    if (!R.tb_up)
        return;
    atomic_store_explicit(&R.stop_b, 1, memory_order_release);
    (void)pthread_join(R.tb, NULL);
    R.tb_up = 0;
}

static int stack_open(int s, int echo, char *why, size_t cap)
{
    topo *tp = topo_of(s);
    memset(&R, 0, sizeof(R));
    R.cfg.no_sack = (uint8_t)(s == S_SL_NOSACK || s == S_SS_NOSACK);
    if (side_open(&R.a, tp->t.l.peer, TW_NETENV_STACK_IP_BE, why, cap) ||
        tw__netdrv_init(&R.drv, R.a.st, R.a.port) != 0)
        return -1;
    if (s == S_SS || s == S_SS_NOSACK) {
        if (side_open(&R.b, tp->t.r.peer, TW_NETENV_PEER_IP_BE, why, cap) ||
            tw_tcp_listen(R.b.st, &R.l, 7700, accept_cb, &R) != 0 ||
            tw__netdrv_init(&R.drvb, R.b.st, R.b.port) != 0 || peer_start(echo, why, cap))
            return -1;
    }
    return 0;
}

static void stack_close(void)
{
    int ns = R.cfg.no_sack;
    side_close(&R.a, ns);
    side_close(&R.b, ns);
}

/* Connects R.c to the right end's port; 0 once established. */
static int stack_connect(uint16_t port_no, char *why, size_t cap)
{
    memset(&R.c, 0, sizeof(R.c));
    tw_tcp_set_cfg(&R.c, &R.cfg);
    if (tw_tcp_connect(R.a.st, &R.c, TW_NETENV_PEER_IP_BE, port_no, 0, tw__netdrv_now_ns()) != 0) {
        snprintf(why, cap, "connect refused");
        return -1;
    }
    uint64_t dl = tw__netdrv_now_ns() + 30000000000ull;
    while (tw_tcp_get_state(&R.c) != TW_TCP_ESTABLISHED) {
        if (tw__netdrv_now_ns() > dl || tw_tcp_get_state(&R.c) == TW_TCP_CLOSED) {
            snprintf(why, cap, "no connection (state %s)", tw_tcp_state_name(tw_tcp_get_state(&R.c)));
            return -1;
        }
        turn();
    }
    sack_seen |= tw_tcp_sack_on(&R.c);
    sack_off_seen |= R.cfg.no_sack && !tw_tcp_sack_on(&R.c);
    ts_seen |= tw_tcp_timestamps_on(&R.c);
    return 0;
}

/* The right stack's server: reads what came in into h (if set) and
 * echoes it when echo. */
static void serve(tw__sha256 *h, uint64_t *got, int echo)
{
    if (!R.srv)
        return;
    const uint8_t *p;
    size_t m;
    while (tw_tcp_recv_peek(R.srv, &p, &m) > 0) {
        if (echo && tw_tcp_send(R.srv, p, m, tw__netdrv_now_ns()) != (long)m)
            return;
        if (h)
            tw__sha256_update(h, p, m);
        *got += m;
        tw_tcp_recv_consume(R.srv, m);
    }
}

static void conns_release(void)
{
    peer_stop();
    tw_tcp_conn *cs[2] = {&R.c, R.srv};
    for (int i = 0; i < 2; i++)
        if (cs[i] && cs[i]->st) {
            if (tw_tcp_get_state(cs[i]) != TW_TCP_CLOSED)
                tw_tcp_abort(cs[i], tw__netdrv_now_ns());
            tw_tcp_conn_release(cs[i]);
        }
    for (int i = 0; i < 100; i++) {
        turn();
        if (R.b.st)
            (void)tw__netdrv_turn(&R.drvb, yielding, 1000000);
    }
}

/* Ends a run: the stack's connections and ports, the kernel programs
 * (a client that failed fails the run), the relay.  Returns rc. */
static int run_end(int rc, pid_t srv, int sfd, pid_t cli, int cfd, char *why, size_t cap)
{
    if (R.a.st) {
        conns_release();
        stack_close();
    }
    memset(&R, 0, sizeof(R));
    if (cli > 0 && tw__netenv_wait(cli, 10) != 0 && rc == 0) {
        snprintf(why, cap, "kernel client failed");
        rc = -1;
    }
    if (srv > 0)
        tw__netenv_wait(srv, 10);
    if (sfd >= 0)
        close(sfd);
    if (cfd >= 0)
        close(cfd);
    relay_end();
    return rc;
}

/* ---- 1 MiB transfers -------------------------------------------------------- */

static char want_sha[65];

/* Sends XFER_BYTES on R.c; *ns from first byte to all acknowledged.  In
 * stack <-> stack the right stack reads on its own thread. */
static int stack_send(double *ns, int both, char *why, size_t cap)
{
    static uint8_t buf[1 << 16];
    uint64_t off = 0;
    size_t have = 0, pos = 0;
    uint64_t t0 = tw__netdrv_now_ns(), dl = t0 + 120000000000ull;
    uint64_t rto0 = tw_net_get_stats(R.a.st)->rto_fires;
    tw__cpu_times c0, c1;
    tw__cpu_times_read(&c0);
    while (off < XFER_BYTES || tw_tcp_unacked(&R.c) > 0) {
        if (pos == have && off + have < XFER_BYTES) {
            off += have;
            have = XFER_BYTES - off < sizeof(buf) ? XFER_BYTES - off : sizeof(buf);
            tw__stream_fill(STREAM_SEED, off, buf, have);
            pos = 0;
        }
        if (pos < have) {
            long n = tw_tcp_send(&R.c, buf + pos, have - pos, tw__netdrv_now_ns());
            if (n < 0) {
                snprintf(why, cap, "send: %s", strerror((int)-n));
                return -1;
            }
            pos += (size_t)n;
            if (pos == have && off + have == XFER_BYTES) {
                off = XFER_BYTES;
                have = pos = 0;
            }
        }
        turn();
        if (tw__netdrv_now_ns() > dl || tw_tcp_get_state(&R.c) == TW_TCP_CLOSED) {
            snprintf(why, cap, "transfer stalled at %llu of %u bytes (state %s)",
                     (unsigned long long)(off + pos), XFER_BYTES,
                     tw_tcp_state_name(tw_tcp_get_state(&R.c)));
            return -1;
        }
    }
    *ns = (double)(tw__netdrv_now_ns() - t0);
    tw__cpu_times_read(&c1);
    cur->rto += tw_net_get_stats(R.a.st)->rto_fires - rto0;
    if (verbose)
        fprintf(stderr,
                "\n  run: %.1f ms (host steal %.0f%%), %llu RTOs, %llu probes, %llu "
                "retransmissions, %llu recoveries, %llu kept the window, %llu lost "
                "retransmissions resent, cwnd %u\n",
                *ns / 1e6, tw__steal_pct(&c0, &c1), (unsigned long long)(tw_net_get_stats(R.a.st)->rto_fires - rto0),
                (unsigned long long)tw_net_get_stats(R.a.st)->tlp_probes,
                (unsigned long long)tw_net_get_stats(R.a.st)->retransmits,
                (unsigned long long)tw_net_get_stats(R.a.st)->sack_recoveries,
                (unsigned long long)tw_net_get_stats(R.a.st)->sack_random_losses,
                (unsigned long long)tw_net_get_stats(R.a.st)->lost_retransmits, (unsigned)R.c.cwnd);
    if (!both)
        return 0;
    /* Every byte is acknowledged, so b has it; its reader catches up. */
    for (int i = 0; i < 1000 && atomic_load(&R.got_b) < XFER_BYTES; i++)
        turn();
    peer_stop();
    uint64_t got = atomic_load(&R.got_b);
    uint8_t d[32];
    char hx[65];
    tw__sha256_final(&R.hb, d);
    tw__sha256_hex(d, hx);
    if (got != XFER_BYTES || strcmp(hx, want_sha) != 0) {
        snprintf(why, cap, "received %llu bytes, SHA-256 %s: not the stream sent",
                 (unsigned long long)got, got == XFER_BYTES ? "differs" : "-");
        return -1;
    }
    return 0;
}

/* Checks a kpeer bulk server's "rx N SHA ..." line. */
static int check_bulk(const char *line, char *why, size_t cap)
{
    unsigned long long n = 0;
    char sha[80] = "";
    if (sscanf(line, "rx %llu %64s", &n, sha) != 2 || n != XFER_BYTES || strcmp(sha, want_sha)) {
        snprintf(why, cap, "kernel receiver: '%.100s' (want rx %u %.12s...)", line, XFER_BYTES,
                 want_sha);
        return -1;
    }
    return 0;
}

static int xfer_run(int s, const mode *m, unsigned round, double *ns, char *why, size_t cap)
{
    topo *tp = topo_of(s);
    char seedb[24], nb[24], pb[16] = "7701";
    snprintf(seedb, sizeof(seedb), "%llu", STREAM_SEED);
    snprintf(nb, sizeof(nb), "%u", XFER_BYTES);
    if (relay_begin(tp, m, round, why, cap))
        return -1;
    int rc = -1, sfd = -1, cfd = -1;
    pid_t srv = -1, cli = -1;
    char line[256];
    if (s == S_LL) {
        char *sa[] = {(char *)"bulk", pb, (char *)"0", seedb, NULL};
        char *ca[] = {(char *)"sendclient", (char *)TW_NETENV_PEER_IP, pb, nb, seedb, NULL};
        if ((srv = kstart(&tp->t.r, sa, 1, &sfd)) < 0) {
            snprintf(why, cap, "kernel receiver did not start");
            goto out;
        }
        if ((cli = kstart(&tp->t.l, ca, 0, &cfd)) < 0) {
            snprintf(why, cap, "kernel sender did not start");
            goto out;
        }
        kline(cfd, line, sizeof(line), 130);
        unsigned long long n, t;
        if (sscanf(line, "sent %llu %llu", &n, &t) != 2 || n != XFER_BYTES) {
            snprintf(why, cap, "kernel sender: '%.100s'", line);
            goto out;
        }
        *ns = (double)t;
        kline(sfd, line, sizeof(line), 30);
        rc = check_bulk(line, why, cap);
        goto out;
    }
    int both = s == S_SS || s == S_SS_NOSACK;
    if (stack_open(s, 0, why, cap))
        goto out;
    if (!both) {
        char *sa[] = {(char *)"bulk", pb, (char *)"0", seedb, NULL};
        if ((srv = kstart(&tp->t.r, sa, 1, &sfd)) < 0) {
            snprintf(why, cap, "kernel receiver did not start");
            goto out;
        }
    }
    if (stack_connect(both ? 7700 : 7701, why, cap) || stack_send(ns, both, why, cap))
        goto out;
    if (both) {
        rc = 0;
        goto out;
    }
    /* The kernel reports once it has read to our FIN. */
    tw_tcp_close(&R.c, tw__netdrv_now_ns());
    uint64_t dl = tw__netdrv_now_ns() + 60000000000ull;
    struct pollfd pf = {.fd = sfd, .events = POLLIN};
    while (poll(&pf, 1, 0) == 0 && tw__netdrv_now_ns() < dl)
        turn();
    kline(sfd, line, sizeof(line), 5);
    rc = check_bulk(line, why, cap);
out:
    return run_end(rc, srv, sfd, cli, cfd, why, cap);
}

/* ---- ping-pong ------------------------------------------------------------------- */

static int pp_run(int s, const mode *m, unsigned round, double pct[3], char *why, size_t cap)
{
    topo *tp = topo_of(s);
    char pb[16] = "7702", nb[16], sb[16];
    snprintf(nb, sizeof(nb), "%u", pp_msgs);
    snprintf(sb, sizeof(sb), "%u", PP_SIZE);
    if (relay_begin(tp, m, round, why, cap))
        return -1;
    int rc = -1, sfd = -1, cfd = -1;
    pid_t srv = -1, cli = -1;
    char line[256];
    uint64_t *lat = NULL;
    if (s != S_SS && s != S_SS_NOSACK) {
        char *sa[] = {(char *)"echo", pb, NULL};
        if ((srv = kstart(&tp->t.r, sa, 1, &sfd)) < 0) {
            snprintf(why, cap, "kernel echo server did not start");
            goto out;
        }
    }
    if (s == S_LL) {
        char *ca[] = {(char *)"rttclient", (char *)TW_NETENV_PEER_IP, pb, nb, sb,
                      (char *)"block", NULL};
        if ((cli = kstart(&tp->t.l, ca, 0, &cfd)) < 0) {
            snprintf(why, cap, "kernel client did not start");
            goto out;
        }
        kline(cfd, line, sizeof(line), 300);
        unsigned long long a, b, c, d;
        if (sscanf(line, "rtt %llu %llu %llu %llu", &a, &b, &c, &d) != 4) {
            snprintf(why, cap, "kernel client: '%.100s'", line);
            goto out;
        }
        pct[0] = (double)a, pct[1] = (double)b, pct[2] = (double)c;
        rc = 0;
        goto out;
    }
    int both = s == S_SS || s == S_SS_NOSACK;
    if (stack_open(s, 1, why, cap) || stack_connect(both ? 7700 : 7702, why, cap))
        goto out;
    lat = calloc(pp_msgs, sizeof(uint64_t));
    if (!lat)
        goto out;
    uint8_t msg[PP_SIZE];
    uint64_t dl = tw__netdrv_now_ns() + 300000000000ull;
    for (unsigned i = 0; i < pp_msgs; i++) {
        tw__stream_fill(7, (uint64_t)i * PP_SIZE, msg, PP_SIZE);
        uint64_t t0 = tw__netdrv_now_ns();
        if (tw_tcp_send(&R.c, msg, PP_SIZE, t0) != PP_SIZE) {
            snprintf(why, cap, "send refused at round trip %u", i);
            goto out;
        }
        size_t got = 0;
        int same = 1;
        while (got < PP_SIZE) {
            turn();
            const uint8_t *p;
            size_t n;
            while (got < PP_SIZE && tw_tcp_recv_peek(&R.c, &p, &n) > 0) {
                if (n > PP_SIZE - got)
                    n = PP_SIZE - got;
                same &= memcmp(p, msg + got, n) == 0;
                got += n;
                tw_tcp_recv_consume(&R.c, n);
            }
            if (tw__netdrv_now_ns() > dl || tw_tcp_get_state(&R.c) == TW_TCP_CLOSED) {
                snprintf(why, cap, "no echo for round trip %u", i);
                goto out;
            }
        }
        lat[i] = tw__netdrv_now_ns() - t0;
        if (!same) {
            snprintf(why, cap, "echo %u differs", i);
            goto out;
        }
    }
    tw__sort_u64(lat, pp_msgs);
    pct[0] = (double)tw__pct_u64(lat, pp_msgs, 0.5);
    pct[1] = (double)tw__pct_u64(lat, pp_msgs, 0.99);
    pct[2] = (double)tw__pct_u64(lat, pp_msgs, 0.999);
    rc = 0;
    if (!both)
        tw_tcp_close(&R.c, tw__netdrv_now_ns());
    for (int i = 0; i < 200 && srv > 0; i++)
        turn();
out:
    free(lat);
    return run_end(rc, srv, sfd, cli, cfd, why, cap);
}

/* ---- the schedule of runs ----------------------------------------------------------- */

static int failures;

/* Whether --mode / --subject leave this cell in (linux <-> linux goes
 * with the subject it precedes: pass that subject as s). */
static int selected(unsigned mi, int s)
{
    return (only_mode < 0 || (int)mi == only_mode) && (only_subj < 0 || s == only_subj);
}

static void one(int pingpong, unsigned mi, int s, unsigned round)
{
    cell *c = &cells[mi][s];
    char why[200] = "";
    if (s == S_SL || s == S_SS)
        ran_sack_on = 1;
    else if (s != S_LL)
        ran_sack_off = 1;
    cur = c;
    int rc;
    if (pingpong) {
        double p[3] = {0, 0, 0};
        rc = pp_run(s, &modes[mi], round, p, why, sizeof(why));
        if (rc == 0 && c->np < MAX_RUNS) {
            c->p50[c->np] = p[0];
            c->p99[c->np] = p[1];
            c->p999[c->np++] = p[2];
        }
    } else {
        double ns = 0;
        rc = xfer_run(s, &modes[mi], round, &ns, why, sizeof(why));
        if (rc == 0 && c->nx < MAX_RUNS)
            c->xfer_ns[c->nx++] = ns;
    }
    if (rc) {
        c->failed++;
        snprintf(c->why, sizeof(c->why), "%s", why);
        fprintf(stderr, "\nnetloss: %s, %s, %s, round %u: %s\n", modes[mi].name,
                pingpong ? "ping-pong" : "1 MiB", subj_name[s], round + 1, why);
        failures++;
    }
}

static double med(double *v, unsigned n) { return n ? tw__median_f64(v, n) : 0; }

static const char usage_text[] =
    "usage: tickwire bench netloss [--runs R] [--pp N] [--seed S] [--port af_packet|af_xdp]\n"
    "                              [--kpeer PATH] [--mode M] [--subject S] [--busy] [--verbose] [--quick]\n"
    "  1 MiB transfers and 64-byte ping-pong through a seeded impaired relay between\n"
    "  two veth pairs: 0.1%, 1%, 5% random loss and a burst of 10 lost frames, for\n"
    "  linux<->linux, stack->linux and stack<->stack, SACK on and off (root)\n"
    "  --runs R    rounds (default 3); each alternates every subject with linux<->linux\n"
    "  --pp N      ping-pong round trips per run (default 1000)\n"
    "  --seed S    the first round's relay seed (round r uses S + r)\n"
    "  --port K    the stack's port backend on its veth end (default af_xdp when built)\n"
    "  --kpeer P   the kernel peer program (default: net_kpeer of the build)\n"
    "  --mode M    only loss mode M (0: 0.1%, 1: 1%, 2: 5%, 3: burst)\n"
    "  --subject S only subject S (1: stack->linux, 2: without SACK, 3: stack<->stack,\n"
    "              4: without SACK) and linux<->linux\n"
    "  --busy      the stack busy-polls (default: it sleeps on its port's fd when idle)\n"
    "  --verbose   a line per stack transfer (time, RTOs, probes, retransmissions,\n"
    "              recoveries, those that kept the window, lost retransmissions, cwnd)\n"
    "  --quick     one round, 200 round trips: checks every case runs byte-exact\n";

static int parse_args(int argc, char **argv)
{
    static const char cmd[] = "bench netloss";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
            continue;
        }
        if (!strcmp(argv[i], "--verbose")) {
            verbose = 1;
            continue;
        }
        if (!strcmp(argv[i], "--busy")) {
            yielding = 0;
            continue;
        }
        const char *opt, *val;
        uint64_t v;
        int r = tw__cli_opt_value(cmd, usage_text, argc, argv, &i, &opt, &val);
        if (r)
            return r > 0 ? 0 : 2;
        if (!strcmp(opt, "--runs")) {
            if (tw__cli_u64_range(cmd, opt, val, 1, 15, &v))
                return 2;
            n_rounds = (unsigned)v;
        } else if (!strcmp(opt, "--pp")) {
            if (tw__cli_u64_range(cmd, opt, val, 100, 1000000, &v))
                return 2;
            pp_msgs = (unsigned)v;
        } else if (!strcmp(opt, "--seed")) {
            if (tw__cli_u64(cmd, opt, val, &base_seed))
                return 2;
        } else if (!strcmp(opt, "--port")) {
            if (strcmp(val, "af_packet") && strcmp(val, "af_xdp")) {
                fprintf(stderr, "tickwire %s: --port wants af_packet or af_xdp\n", cmd);
                return 2;
            }
            port_kind = val;
        } else if (!strcmp(opt, "--mode")) {
            if (tw__cli_u64_range(cmd, opt, val, 0, N_MODES - 1, &v))
                return 2;
            only_mode = (int)v;
        } else if (!strcmp(opt, "--subject")) {
            if (tw__cli_u64_range(cmd, opt, val, 1, N_SUBJ - 1, &v))
                return 2;
            only_subj = (int)v;
        } else if (!strcmp(opt, "--kpeer")) {
            snprintf(kpeer, sizeof(kpeer), "%s", val);
        } else {
            fprintf(stderr, "tickwire %s: unknown option '%s' (see --help)\n", cmd, opt);
            return 2;
        }
    }
    return -1;
}

static void find_kpeer(void)
{
    if (kpeer[0])
        return;
    char self[400];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return;
    self[n] = 0;
    *strrchr(self, '/') = 0;
    const char *tries[] = {"/net_kpeer", "/../tests/net_interop/net_kpeer",
                           "/../../tests/net_interop/net_kpeer"};
    for (unsigned t = 0; t < 3; t++) {
        snprintf(kpeer, sizeof(kpeer), "%s%s", self, tries[t]);
        if (access(kpeer, X_OK) == 0)
            return;
    }
    kpeer[0] = 0;
}

/* One verdict line: a <= b * f. */
static void goal(const char *what, double a, double b, double f, const char *unit, double scale)
{
    if (a <= 0 || b <= 0) {
        printf("  goal %-62s not measured: NOT met\n", what);
        return;
    }
    printf("  goal %-62s %8.2f vs %8.2f %s: %s\n", what, a / scale, b * f / scale, unit,
           a <= b * f ? "met" : "NOT met");
}

int tw__bench_netloss_run(int argc, char **argv)
{
    int prc = parse_args(argc, argv);
    if (prc >= 0)
        return prc;
    if (geteuid() != 0) {
        fprintf(stderr, "SKIP: netloss needs root (network namespaces, veth pairs, packet sockets)\n");
        return 77;
    }
    find_kpeer();
    if (!kpeer[0] || access(kpeer, X_OK) != 0) {
        fprintf(stderr, "netloss: net_kpeer not found (build the tests, or pass --kpeer PATH)\n");
        return 1;
    }
    if (quick) {
        n_rounds = 1;
        pp_msgs = 200;
    }
    const int lefts[3] = {1, 0, 0}, rights[3] = {1, 1, 0};
    for (int i = 0; i < 3; i++) {
        int rc = tw__relay_topology_setup(&topos[i].t, lefts[i], rights[i]);
        if (rc) {
            for (int j = 0; j < i; j++)
                tw__relay_topology_teardown(&topos[j].t);
            return rc == TW_NETENV_SKIP ? 77 : 1;
        }
        topos[i].up = 1;
    }
    {
        static uint8_t all[XFER_BYTES];
        tw__stream_fill(STREAM_SEED, 0, all, XFER_BYTES);
        tw__sha256 h;
        uint8_t d[32];
        tw__sha256_init(&h);
        tw__sha256_update(&h, all, XFER_BYTES);
        tw__sha256_final(&h, d);
        tw__sha256_hex(d, want_sha);
    }
    tw_isa isa = tw_cpu_has(TW_ISA_AVX512) ? TW_ISA_AVX512
                 : tw_cpu_has(TW_ISA_AVX2) ? TW_ISA_AVX2
                                           : TW_ISA_SCALAR;
    printf("netloss: CPU ISA %s (the stack and the relay use no vector code)\n", tw_isa_name(isa));
    printf("netloss: relay %u us each way, seeds %llu..%llu (one per round, the same for every "
           "row of a round);\n         burst: frames %u..%u left to right; stack port %s%s; "
           "%u rounds, %u round trips\n", DELAY_US, (unsigned long long)base_seed,
           (unsigned long long)(base_seed + n_rounds - 1), BURST_AT, BURST_AT + 9, port_kind,
           yielding ? " (sleeps when idle)" : " (busy-polls)", n_rounds, pp_msgs);
    fflush(stdout);
    tw__cpu_times cpu0, cpu1;
    tw__cpu_times_read(&cpu0);
    /* Transfers: every subject, each run after a linux <-> linux run (ABAB). */
    for (unsigned mi = 0; mi < N_MODES; mi++)
        for (unsigned r = 0; r < n_rounds; r++) {
            for (int j = 0; j < N_SUBJ - 1; j++) {
                int s = 1 + (int)((j + r) % (N_SUBJ - 1));
                if (!selected(mi, s))
                    continue;
                one(0, mi, S_LL, r);
                one(0, mi, s, r);
            }
            if (selected(mi, only_subj))
                fprintf(stderr, "\rnetloss: 1 MiB, %s, round %u of %u done   ", modes[mi].name,
                        r + 1, n_rounds);
        }
    /* Ping-pong: one segment in flight, so SACK has nothing to act on: the
     * rows with SACK on only, each after a linux <-> linux run. */
    for (unsigned mi = 0; mi < N_MODES; mi++) {
        if (!modes[mi].pingpong)
            continue;
        for (unsigned r = 0; r < n_rounds; r++) {
            const int ss[2] = {S_SL, S_SS};
            for (int j = 0; j < 2; j++) {
                int s = ss[(j + (int)r) % 2];
                if (!selected(mi, s))
                    continue;
                one(1, mi, S_LL, r);
                one(1, mi, s, r);
            }
            if (selected(mi, only_subj))
                fprintf(stderr, "\rnetloss: ping-pong, %s, round %u of %u done   ",
                        modes[mi].name, r + 1, n_rounds);
        }
    }
    fprintf(stderr, "\n");
    tw__cpu_times_read(&cpu1);
    for (int i = 0; i < 3; i++)
        tw__relay_topology_teardown(&topos[i].t);

    printf("\n  1 MiB transfer, first byte written to last acknowledged (ms, median of runs)\n");
    printf("  %-10s", "loss");
    for (int s = 0; s < N_SUBJ; s++)
        printf(" %14.14s", s == 0 ? "linux<->linux" : s == 1 ? "stack->linux" : s == 2 ? "s->l noSACK"
                                                     : s == 3 ? "stack<->stack" : "s<->s noSACK");
    printf("\n");
    double xm[N_MODES][N_SUBJ];
    for (unsigned mi = 0; mi < N_MODES; mi++) {
        printf("  %-10s", modes[mi].name);
        for (int s = 0; s < N_SUBJ; s++) {
            cell *c = &cells[mi][s];
            xm[mi][s] = med(c->xfer_ns, c->nx);
            if (c->nx)
                printf(" %10.1f (%u)", xm[mi][s] / 1e6, c->nx);
            else
                printf(" %14s", c->failed ? "failed" : "-");
        }
        printf("\n");
    }
    printf("  stack retransmissions / RTOs while timed / recoveries, over the runs:\n");
    for (unsigned mi = 0; mi < N_MODES; mi++) {
        printf("  %-10s %14s", modes[mi].name, "");
        for (int s = 1; s < N_SUBJ; s++) {
            char b[40];
            cell *c = &cells[mi][s];
            snprintf(b, sizeof(b), "%llu/%llu/%llu", (unsigned long long)c->retx,
                     (unsigned long long)c->rto, (unsigned long long)c->recov);
            printf(" %14s", b);
        }
        printf("\n");
    }
    printf("\n  64-byte ping-pong (us, median of runs' percentiles)\n");
    printf("  %-10s %-16s %10s %10s %10s %5s\n", "loss", "", "p50", "p99", "p99.9", "runs");
    double ppm[N_MODES][N_SUBJ][3];
    memset(ppm, 0, sizeof(ppm));
    for (unsigned mi = 0; mi < N_MODES; mi++) {
        if (!modes[mi].pingpong)
            continue;
        const int ss[3] = {S_LL, S_SL, S_SS};
        for (int j = 0; j < 3; j++) {
            cell *c = &cells[mi][ss[j]];
            double *p = ppm[mi][ss[j]];
            p[0] = med(c->p50, c->np), p[1] = med(c->p99, c->np), p[2] = med(c->p999, c->np);
            if (c->np)
                printf("  %-10s %-16s %10.1f %10.1f %10.1f %5u\n", modes[mi].name, subj_name[ss[j]],
                       p[0] / 1e3, p[1] / 1e3, p[2] / 1e3, c->np);
            else if (c->failed)
                printf("  %-10s %-16s failed: %s\n", modes[mi].name, subj_name[ss[j]], c->why);
            else
                printf("  %-10s %-16s %10s\n", modes[mi].name, subj_name[ss[j]], "-");
        }
    }
    printf("\n  relay drops by the schedule: %llu left to right, %llu right to left; other losses "
           "(queue, send, socket): %llu\n", (unsigned long long)sched_drops[0],
           (unsigned long long)sched_drops[1], (unsigned long long)unscheduled);
    printf("  stack: retransmissions %llu with SACK, %llu without; RTOs %llu with SACK, %llu "
           "without;\n         %llu SACK recoveries, %llu rescue retransmissions, %llu timestamp "
           "RTT samples;\n         D-SACK blocks (a segment that arrived twice) %llu sent, %llu "
           "received\n", (unsigned long long)retx_sack, (unsigned long long)retx_nosack,
           (unsigned long long)rtos[0], (unsigned long long)rtos[1],
           (unsigned long long)sack_recov, (unsigned long long)rescues,
           (unsigned long long)ts_samples, (unsigned long long)dsack_tx,
           (unsigned long long)dsack_rx);
    printf("  negotiated: SACK %s with SACK on, %s with it off; timestamps %s\n",
           !ran_sack_on ? "not run" : sack_seen ? "yes" : "NO",
           !ran_sack_off ? "not run" : sack_off_seen ? "off" : "NOT off",
           !(ran_sack_on || ran_sack_off) ? "not run" : ts_seen ? "yes" : "NO");
    printf("  failed runs: %d\n", failures);
    printf("  host: it took %.1f%% of the CPU time over the runs (steal: this VM's CPUs ready "
           "and not run)\n\n", tw__steal_pct(&cpu0, &cpu1));
    for (unsigned mi = 1; mi <= 2; mi++) {
        char w[96];
        const int subj[2] = {S_SL, S_SS}, nos[2] = {S_SL_NOSACK, S_SS_NOSACK};
        for (int j = 0; j < 2; j++) {
            snprintf(w, sizeof(w), "%s loss, %s 1 MiB <= linux<->linux", modes[mi].name,
                     subj_name[subj[j]]);
            goal(w, xm[mi][subj[j]], xm[mi][S_LL], 1.0, "ms", 1e6);
            snprintf(w, sizeof(w), "%s loss, %s 1 MiB <= 0.5x without SACK", modes[mi].name,
                     subj_name[subj[j]]);
            goal(w, xm[mi][subj[j]], xm[mi][nos[j]], 0.5, "ms", 1e6);
        }
    }
    goal("1% loss, stack -> linux ping-pong p99.9 <= linux<->linux", ppm[1][S_SL][2],
         ppm[1][S_LL][2], 1.0, "us", 1e3);
    goal("1% loss, stack <-> stack ping-pong p99.9 <= linux<->linux", ppm[1][S_SS][2],
         ppm[1][S_LL][2], 1.0, "us", 1e3);
    /* Exit status: every run completed byte-exact, and the switches did
     * what they say (goals are reported, not judged here). */
    return failures || (ran_sack_on && !sack_seen) || (ran_sack_off && !sack_off_seen) ||
                   ((ran_sack_on || ran_sack_off) && !ts_seen)
               ? 1
               : 0;
}
