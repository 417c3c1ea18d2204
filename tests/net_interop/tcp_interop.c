/* The stack against the Linux kernel's TCP over a veth pair (netstack.md
 * "Real peer"), on one port backend:
 *
 *   net_tcp_interop KIND [BULK_MB [IMPAIRED_MB]] [--no-ecn]
 *
 * KIND: af_packet, af_xdp, dpdk_af_packet, dpdk_af_xdp.  Cases, in order:
 *   connect   three-way handshake with the kernel (ARP resolved by the stack)
 *   echo      2000 messages of 1..1460 bytes echoed back byte-exact
 *   close     graceful close both ways ends in CLOSED via TIME_WAIT
 *   rst       the kernel peer resets: the stack reports RESET, CLOSED
 *   bulk      BULK_MB (default 64) both ways at once, SHA-256 on both ends
 *   impaired  IMPAIRED_MB (default 1) both ways under loss 2%, reorder 10%
 *             (1 ms +- 0.5 ms delay), duplicate 1%, corrupt 0.1%, both
 *             directions (tc netem when the kernel has it, else impair.h):
 *             still byte-exact
 *   ecn       a 100 Mbit/s bottleneck marking CE on the way to the kernel
 *             (fq_codel ecn, else impair.h): CE marks come back as ECE, the stack's rate is cut
 *             (counters), and after the bottleneck goes the rate recovers
 * The stack runs in yielding mode (poll on the port's rx_fd); nothing
 * asserts on time, only deadlines far beyond need guard against hangs. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/netdrv.h"
#include "common/netenv.h"
#include "common/portspec.h"
#include "common/sha256.h"
#include "net_interop/impair.h"
#include "tickwire/net.h"
#include "tw_check.h"

static const char *kind; /* the backend: named on every line we print */

static tw__netenv env;
static tw_port *port;     /* what the stack uses: the impairing wrapper */
static tw_port *realport; /* the backend under test */
static tw__netdrv drv;    /* the stack on a one-core reactor */
static tw_net *st;
static char kpeer_path[512];
static uint16_t next_port = 7100;
#define IFNAMSIZ_TW 40

/* ---- peer process ------------------------------------------------------ */

typedef struct peer {
    pid_t pid;
    int out; /* read end of its stdout */
    char line[512];
} peer;

static int read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
    size_t n = 0;
    uint64_t dl = tw__netdrv_now_ns() + (uint64_t)timeout_ms * 1000000u;
    while (n + 1 < cap) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        /* The stack must keep running while we wait for the peer (it may
         * still be acknowledging the peer's last bytes). */
        if (st)
            tw__netdrv_turn(&drv, 1, 200000);
        if (poll(&pf, 1, st ? 0 : 10) <= 0) {
            if (tw__netdrv_now_ns() > dl)
                return -1;
            continue;
        }
        char c;
        ssize_t r = read(fd, &c, 1);
        if (r <= 0)
            return -1;
        if (c == '\n')
            break;
        buf[n++] = c;
    }
    buf[n] = 0;
    return (int)n;
}

static int peer_start(peer *pr, char *const args[])
{
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    char *argv[16];
    int n = 0;
    argv[n++] = kpeer_path;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pr->pid = tw__netenv_spawn(&env, argv, fds[1]);
    close(fds[1]);
    pr->out = fds[0];
    if (pr->pid < 0 || read_line(pr->out, pr->line, sizeof(pr->line), 10000) < 0 ||
        strcmp(pr->line, "ready") != 0) {
        fprintf(stderr, "[%s] kernel peer did not start (%s)\n", kind, argv[1]);
        return -1;
    }
    return 0;
}

static int peer_finish(peer *pr, int want_line)
{
    int ok = 1;
    pr->line[0] = 0;
    if (want_line && read_line(pr->out, pr->line, sizeof(pr->line), 120000) < 0)
        ok = 0;
    close(pr->out);
    int rc = tw__netenv_wait(pr->pid, 20.0);
    if (rc != 0) {
        fprintf(stderr, "[%s] kernel peer exited with %d\n", kind, rc);
        ok = 0;
    }
    return ok ? 0 : -1;
}

/* ---- stack helpers ----------------------------------------------------- */

/* Runs the stack until cond(c) holds or timeout_s passes; returns 1 if it
 * held. */
static int run_until(tw_tcp_conn *c, int (*cond)(tw_tcp_conn *), double timeout_s)
{
    uint64_t dl = tw__netdrv_now_ns() + (uint64_t)(timeout_s * 1e9);
    while (!cond(c)) {
        if (tw__netdrv_now_ns() > dl)
            return 0;
        tw__netdrv_turn(&drv, 1, 1000000);
    }
    return 1;
}

static unsigned ev_seen;
static int established_or_dead(tw_tcp_conn *c)
{
    ev_seen |= tw_tcp_events(c);
    return tw_tcp_get_state(c) == TW_TCP_ESTABLISHED || tw_tcp_get_state(c) == TW_TCP_CLOSED;
}
static int is_closed(tw_tcp_conn *c)
{
    ev_seen |= tw_tcp_events(c);
    return tw_tcp_get_state(c) == TW_TCP_CLOSED;
}

static int connect_to(tw_tcp_conn *c, uint16_t port_no)
{
    memset(c, 0, sizeof(*c));
    /* TW_INTEROP_TCP=off: the connections of the other cases without SACK
     * and timestamps; =sack or =ts: with only that one (for comparing the
     * impaired transfer by hand). */
    const char *o = getenv("TW_INTEROP_TCP");
    if (o) {
        tw_tcp_cfg off = {.no_sack = strcmp(o, "off") == 0 || strcmp(o, "ts") == 0,
                          .no_timestamps = strcmp(o, "off") == 0 || strcmp(o, "sack") == 0};
        tw_tcp_set_cfg(c, &off);
    }
    ev_seen = 0;
    int rc = tw_tcp_connect(st, c, TW_NETENV_PEER_IP_BE, port_no, 0, tw__netdrv_now_ns());
    CHECK(rc == 0);
    if (rc)
        return -1;
    run_until(c, established_or_dead, 10.0);
    CHECK(tw_tcp_get_state(c) == TW_TCP_ESTABLISHED);
    CHECK(ev_seen & TW_TCP_EV_CONNECTED);
    return tw_tcp_get_state(c) == TW_TCP_ESTABLISHED ? 0 : -1;
}

static void finish_conn(tw_tcp_conn *c)
{
    if (tw_tcp_get_state(c) != TW_TCP_CLOSED)
        tw_tcp_abort(c, tw__netdrv_now_ns());
    CHECK(tw_tcp_conn_release(c) == 0);
}

/* ---- cases ------------------------------------------------------------- */

static void case_echo_close(void)
{
    uint16_t pn = next_port++;
    char pbuf[16];
    snprintf(pbuf, sizeof(pbuf), "%u", pn);
    char *args[] = {(char *)"echo", pbuf, NULL};
    peer pr;
    REQUIRE(peer_start(&pr, args) == 0); /* echo peer */
    static tw_tcp_conn c;
    if (connect_to(&c, pn) == 0) {
        printf("  [%s] connect: ESTABLISHED with the kernel (mss %u, wscale %u/%u)\n", kind,
               c.mss, c.snd_wscale, c.rcv_wscale);
        uint8_t msg[1460];
        unsigned ok = 0, nmsg = 2000;
        for (unsigned i = 0; i < nmsg; i++) {
            size_t len = 1u + (i * 7919u) % 1460u;
            tw__stream_fill(1000u + i, 0, msg, len);
            size_t sent = 0;
            uint64_t dl = tw__netdrv_now_ns() + 10000000000ull;
            while (sent < len && tw__netdrv_now_ns() < dl) {
                long r = tw_tcp_send(&c, msg + sent, len - sent, tw__netdrv_now_ns());
                if (r < 0)
                    break;
                sent += (size_t)r;
                if (sent < len)
                    tw__netdrv_turn(&drv, 1, 1000000);
            }
            size_t got = 0;
            int same = 1;
            while (got < len && tw__netdrv_now_ns() < dl &&
                   tw_tcp_get_state(&c) == TW_TCP_ESTABLISHED) {
                const uint8_t *p;
                size_t n;
                if (tw_tcp_recv_peek(&c, &p, &n) > 0) {
                    if (n > len - got)
                        n = len - got;
                    if (memcmp(p, msg + got, n) != 0)
                        same = 0;
                    got += n;
                    tw_tcp_recv_consume(&c, n);
                } else {
                    tw__netdrv_turn(&drv, 1, 1000000);
                }
            }
            if (got == len && same)
                ok++;
            else
                break;
        }
        printf("  [%s] echo: %u/%u messages back byte-exact\n", kind, ok, nmsg);
        CHECK(ok == nmsg);
        /* Ping-pong of small messages with the port busy-polled: the reader
         * races the kernel writing each frame, which is how AF_PACKET's V3
         * reader once took half-written headers (about 1 frame in 10,000
         * dropped or misread).  No frame may be refused as broken, by the
         * port or by the stack.  Nor may a frame of ours come back
         * (rx_own_src), nor one from another interface: on this veth pair
         * the only unicast sender is the peer kernel, which addresses us by
         * the MAC it resolved with ARP, so unicast to another MAC
         * (rx_mac_other) is a frame the port took from somewhere else
         * (AF_PACKET sockets opened with ETH_P_ALL hear every interface
         * until bound: loopback TCP, here).  Multicast, other ethertypes
         * and other IPv4 addresses are legitimate and only printed. */
        unsigned npp = 20000, pp = 0;
        for (; pp < npp && tw_tcp_get_state(&c) == TW_TCP_ESTABLISHED; pp++) {
            tw__stream_fill(7u, (uint64_t)pp * 64u, msg, 64);
            if (tw_tcp_send(&c, msg, 64, tw__netdrv_now_ns()) != 64)
                break;
            size_t got = 0;
            int same = 1;
            uint64_t dl = tw__netdrv_now_ns() + 10000000000ull;
            while (got < 64 && tw__netdrv_now_ns() < dl) {
                const uint8_t *p;
                size_t n;
                tw__netdrv_turn(&drv, 0, 0);
                while (got < 64 && tw_tcp_recv_peek(&c, &p, &n) > 0) {
                    if (n > 64 - got)
                        n = 64 - got;
                    same &= memcmp(p, msg + got, n) == 0;
                    got += n;
                    tw_tcp_recv_consume(&c, n);
                }
            }
            if (got != 64 || !same)
                break;
        }
        const tw_net_stats *ns = tw_net_get_stats(st);
        char refused[512];
        tw_net_stats_rx_refused(ns, refused, sizeof(refused));
        printf("  [%s] ping-pong: %u/%u 64-byte round trips; frames refused: port %llu, %s\n",
               kind, pp, npp, (unsigned long long)realport->rx_bad, refused);
        CHECK(pp == npp);
        /* realport: the impairing wrapper keeps no counters of its own. */
        CHECK(realport->rx_bad == 0);
        CHECK(tw_net_stats_rx_broken(ns) == 0);
        CHECK(ns->rx_own_src == 0);
        CHECK(ns->rx_mac_other == 0);
        CHECK(tw_tcp_readable(&c) == 0);
        /* Graceful close: our FIN, the kernel's EOF, its FIN, TIME_WAIT. */
        CHECK(tw_tcp_close(&c, tw__netdrv_now_ns()) == 0);
        ev_seen = 0;
        run_until(&c, is_closed, 20.0);
        printf("  [%s] close: state %s, events %#x\n", kind, tw_tcp_state_name(tw_tcp_get_state(&c)),
               ev_seen);
        CHECK(tw_tcp_get_state(&c) == TW_TCP_CLOSED);
        CHECK(ev_seen & TW_TCP_EV_PEER_FIN);
        CHECK(ev_seen & TW_TCP_EV_CLOSED);
        CHECK(!(ev_seen & TW_TCP_EV_RESET));
        finish_conn(&c);
    }
    CHECK(peer_finish(&pr, 0) == 0);
}


/* SACK and timestamps with the kernel, negotiated both ways: the stack
 * connecting to the kernel, the kernel connecting to the stack, then the
 * stack with both off.  tcpdump on the kernel's side of the veth pair
 * prints the handshakes' options: the first four SYNs carry sackOK and
 * TS, the last two neither.  Skipped (with a line) without tcpdump. */
static tw_tcp_conn opt_acc_conn;
static int opt_acc_used;
static tw_tcp_conn *opt_acc(tw_tcp_listener *l, uint32_t ip, uint16_t rport, void *u)
{
    (void)l; (void)ip; (void)rport; (void)u;
    if (opt_acc_used)
        return NULL;
    opt_acc_used = 1;
    memset(&opt_acc_conn, 0, sizeof(opt_acc_conn));
    return &opt_acc_conn;
}

static int is_established(tw_tcp_conn *c)
{
    return tw_tcp_get_state(c) == TW_TCP_ESTABLISHED;
}

static void case_options(void)
{
    const char *o = getenv("TW_INTEROP_TCP");
    if (o && strcmp(o, "on")) {
        printf("  [%s] options: skipped (TW_INTEROP_TCP=%s)\n", kind, o);
        return;
    }
    char cap[64];
    snprintf(cap, sizeof(cap), "/tmp/tw_opts_%d.txt", (int)getpid());
    if (tw__netenv_sh(1, "command -v tcpdump >/dev/null") != 0) {
        printf("  [%s] options: SKIP: no tcpdump (negotiation still checked)\n", kind);
        cap[0] = 0;
    } else {
        unlink(cap);
        tw__netenv_sh(1, "ip netns exec %s tcpdump -i %s -nn -l -c 6 "
                         "'tcp[tcpflags] & tcp-syn != 0' >%s 2>&1 &", env.ns, env.peer, cap);
        /* Until it listens (its first line on stderr). */
        for (int i = 0; i < 500 && tw__netenv_sh(1, "grep -q 'listening on' %s", cap) != 0; i++)
            tw__netdrv_turn(&drv, 1, 10000000);
    }
    /* 1. Stack to kernel. */
    uint16_t pn = next_port++;
    char pbuf[16];
    snprintf(pbuf, sizeof(pbuf), "%u", pn);
    char *args[] = {(char *)"echo", pbuf, NULL};
    peer pr;
    REQUIRE(peer_start(&pr, args) == 0);
    static tw_tcp_conn c;
    if (connect_to(&c, pn) == 0) {
        printf("  [%s] options: to the kernel: SACK %d, timestamps %d, mss %u\n", kind,
               tw_tcp_sack_on(&c), tw_tcp_timestamps_on(&c), c.mss);
        CHECK(tw_tcp_sack_on(&c) && tw_tcp_timestamps_on(&c));
        CHECK(tw_tcp_close(&c, tw__netdrv_now_ns()) == 0);
        run_until(&c, is_closed, 20.0);
        finish_conn(&c);
    }
    CHECK(peer_finish(&pr, 0) == 0);
    /* 2. Kernel to stack: its rttclient against the stack echoing. */
    static tw_tcp_listener l;
    opt_acc_used = 0;
    uint16_t lp = next_port++;
    REQUIRE(tw_tcp_listen(st, &l, lp, opt_acc, NULL) == 0);
    char lbuf[16];
    snprintf(lbuf, sizeof(lbuf), "%u", lp);
    char *cargs[] = {kpeer_path, (char *)"rttclient", (char *)TW_NETENV_STACK_IP, lbuf,
                     (char *)"200", (char *)"64", (char *)"block", NULL};
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    peer cl;
    cl.pid = tw__netenv_spawn(&env, cargs, fds[1]);
    close(fds[1]);
    cl.out = fds[0];
    REQUIRE(cl.pid > 0);
    uint64_t dl = tw__netdrv_now_ns() + 10000000000ull;
    while (!opt_acc_used && tw__netdrv_now_ns() < dl)
        tw__netdrv_turn(&drv, 1, 1000000);
    CHECK(opt_acc_used);
    if (opt_acc_used) {
        run_until(&opt_acc_conn, is_established, 10.0);
        printf("  [%s] options: from the kernel: SACK %d, timestamps %d, mss %u\n", kind,
               tw_tcp_sack_on(&opt_acc_conn), tw_tcp_timestamps_on(&opt_acc_conn),
               opt_acc_conn.mss);
        CHECK(tw_tcp_sack_on(&opt_acc_conn) && tw_tcp_timestamps_on(&opt_acc_conn));
        /* Echo until the client closes. */
        dl = tw__netdrv_now_ns() + 20000000000ull;
        while (tw__netdrv_now_ns() < dl && tw_tcp_get_state(&opt_acc_conn) == TW_TCP_ESTABLISHED) {
            const uint8_t *p;
            size_t n;
            tw__netdrv_turn(&drv, 1, 1000000);
            while (tw_tcp_recv_peek(&opt_acc_conn, &p, &n) > 0) {
                long w = tw_tcp_send(&opt_acc_conn, p, n, tw__netdrv_now_ns());
                if (w <= 0)
                    break;
                tw_tcp_recv_consume(&opt_acc_conn, (size_t)w);
            }
        }
        CHECK(peer_finish(&cl, 1) == 0);
        printf("  [%s] options: kernel client: %s\n", kind, cl.line);
        CHECK(!strncmp(cl.line, "rtt ", 4));
        tw_tcp_close(&opt_acc_conn, tw__netdrv_now_ns());
        run_until(&opt_acc_conn, is_closed, 20.0);
        finish_conn(&opt_acc_conn);
    } else {
        kill(cl.pid, SIGKILL);
        peer_finish(&cl, 0);
    }
    tw_tcp_unlisten(&l);
    /* 3. Both off on our side: today's handshake. */
    pn = next_port++;
    snprintf(pbuf, sizeof(pbuf), "%u", pn);
    REQUIRE(peer_start(&pr, args) == 0);
    memset(&c, 0, sizeof(c));
    tw_tcp_cfg off = {.no_sack = 1, .no_timestamps = 1};
    tw_tcp_set_cfg(&c, &off);
    ev_seen = 0;
    CHECK(tw_tcp_connect(st, &c, TW_NETENV_PEER_IP_BE, pn, 0, tw__netdrv_now_ns()) == 0);
    run_until(&c, established_or_dead, 10.0);
    CHECK(tw_tcp_get_state(&c) == TW_TCP_ESTABLISHED);
    printf("  [%s] options: off: SACK %d, timestamps %d, mss %u\n", kind, tw_tcp_sack_on(&c),
           tw_tcp_timestamps_on(&c), c.mss);
    CHECK(!tw_tcp_sack_on(&c) && !tw_tcp_timestamps_on(&c));
    CHECK(tw_tcp_close(&c, tw__netdrv_now_ns()) == 0);
    run_until(&c, is_closed, 20.0);
    finish_conn(&c);
    CHECK(peer_finish(&pr, 0) == 0);
    if (!cap[0])
        return;
    /* The capture: six SYNs (each handshake's SYN and SYN-ACK). */
    for (int i = 0; i < 300 && tw__netenv_sh(1, "test $(grep -c 'Flags \\[S' %s) -ge 6", cap); i++)
        tw__netdrv_turn(&drv, 1, 10000000);
    FILE *f = fopen(cap, "r");
    CHECK(f != NULL);
    if (!f)
        return;
    char line[512];
    int k = 0, with = 0, without = 0;
    while (fgets(line, sizeof(line), f)) {
        if (!strstr(line, "Flags [S"))
            continue;
        line[strcspn(line, "\n")] = 0;
        printf("  [%s] options: tcpdump: %s\n", kind, line);
        int both = strstr(line, "sackOK") && strstr(line, "TS val");
        int none = !strstr(line, "sackOK") && !strstr(line, "TS val");
        if (k < 4)
            with += both;
        else
            without += none;
        k++;
    }
    fclose(f);
    unlink(cap);
    printf("  [%s] options: %d SYNs seen, %d of the first 4 with sackOK and TS, %d of the "
           "last 2 with neither\n", kind, k, with, without);
    CHECK(k == 6 && with == 4 && without == 2);
}

static void case_rst(void)
{
    uint16_t pn = next_port++;
    char pbuf[16];
    snprintf(pbuf, sizeof(pbuf), "%u", pn);
    char *args[] = {(char *)"rst", pbuf, NULL};
    peer pr;
    REQUIRE(peer_start(&pr, args) == 0); /* rst peer */
    static tw_tcp_conn c;
    if (connect_to(&c, pn) == 0) {
        CHECK(tw_tcp_send(&c, "x", 1, tw__netdrv_now_ns()) == 1);
        ev_seen = 0;
        run_until(&c, is_closed, 10.0);
        printf("  [%s] rst: state %s, events %#x, rx_rst %llu\n", kind,
               tw_tcp_state_name(tw_tcp_get_state(&c)), ev_seen,
               (unsigned long long)tw_net_get_stats(st)->rx_rst);
        CHECK(tw_tcp_get_state(&c) == TW_TCP_CLOSED);
        CHECK(ev_seen & TW_TCP_EV_RESET);
        finish_conn(&c);
    }
    CHECK(peer_finish(&pr, 0) == 0);
}

/* Both ways at once: we send stream seed 11, the kernel stream seed 22. */
static void bulk(const char *label, uint64_t nbytes, int ecn_watch)
{
    uint16_t pn = next_port++;
    char pbuf[16], nb[32];
    snprintf(pbuf, sizeof(pbuf), "%u", pn);
    snprintf(nb, sizeof(nb), "%llu", (unsigned long long)(ecn_watch ? 0 : nbytes));
    char *args[] = {(char *)"bulk", pbuf, nb, (char *)"22", NULL};
    peer pr;
    REQUIRE(peer_start(&pr, args) == 0); /* bulk peer */
    uint64_t peer_bytes = ecn_watch ? 0 : nbytes;
    static tw_tcp_conn c;
    if (connect_to(&c, pn) != 0) {
        peer_finish(&pr, 1);
        return;
    }
    tw__sha256 htx, hrx;
    tw__sha256_init(&htx);
    tw__sha256_init(&hrx);
    uint64_t tx = 0, rx = 0, t0 = tw__netdrv_now_ns(), bad_at = UINT64_MAX;
    static uint8_t chk[1 << 16];
    int closed_tx = 0;
    uint64_t rate_start = tw_tcp_rate_Bps(&c), rate_min = rate_start, rate_end = 0;
    uint64_t cuts_at_lift = 0;
    int lifted = 0;
    ev_seen = 0;
    uint64_t dl = t0 + 600000000000ull, last_prog = t0, last_sum = 0;
    while (tw__netdrv_now_ns() < dl) {
        uint64_t now = tw__netdrv_now_ns();
        uint64_t sum = tx + rx + tw_tcp_unacked(&c);
        if (sum != last_sum) {
            last_sum = sum;
            last_prog = now;
        } else if (now - last_prog > 20000000000ull) {
            const tw_net_stats *S0 = tw_net_get_stats(st);
            fprintf(stderr, "[%s] %s: no progress for 20 s: tx %llu rx %llu unacked %zu state %s "
                    "snd_una %u snd_nxt %u snd_wnd %u cwnd %u rcv_nxt %u rto_ns %llu rto_fires %llu "
                    "retransmits %llu rx_tcp_out_of_window %llu ooo_drop %llu tx_fail %llu rx_frames %llu "
                    "port rx %llu tx %llu\n",
                    kind, label, (unsigned long long)tx, (unsigned long long)rx,
                    tw_tcp_unacked(&c), tw_tcp_state_name(tw_tcp_get_state(&c)), c.snd_una - c.iss,
                    c.snd_nxt - c.iss, c.snd_wnd, c.cwnd, c.rcv_nxt - c.irs,
                    (unsigned long long)c.rto_ns, (unsigned long long)S0->rto_fires,
                    (unsigned long long)S0->retransmits,
                    (unsigned long long)S0->rx_tcp_out_of_window,
                    (unsigned long long)S0->rx_tcp_ooo_drop, (unsigned long long)S0->tx_fail,
                    (unsigned long long)S0->rx_frames, (unsigned long long)realport->rx_pkts,
                    (unsigned long long)realport->tx_pkts);
            /* Does anything still arrive (kernel retransmissions)? */
            uint64_t rx0 = realport->rx_pkts, oow0 = S0->rx_tcp_out_of_window;
            uint64_t until = tw__netdrv_now_ns() + 5000000000ull;
            while (tw__netdrv_now_ns() < until)
                tw__netdrv_turn(&drv, 1, 1000000);
            fprintf(stderr, "[%s] %s: in 5 more s: %llu frames arrived, %llu out of window, "
                    "rcv_nxt %u\n", kind, label,
                    (unsigned long long)(realport->rx_pkts - rx0),
                    (unsigned long long)(S0->rx_tcp_out_of_window - oow0), c.rcv_nxt - c.irs);
            CHECK(!"transfer stalled");
            break;
        }
        /* Send straight into the retransmit ring (the zero-copy path). */
        while (tx < nbytes) {
            uint8_t *p;
            size_t room = tw_tcp_send_reserve(&c, &p);
            if (!room)
                break;
            uint64_t left = nbytes - tx;
            size_t n = room < left ? room : (size_t)left;
            tw__stream_fill(11, tx, p, n);
            tw__sha256_update(&htx, p, n);
            if (tw_tcp_send_commit(&c, n, now) != 0)
                break;
            tx += n;
        }
        if (tx == nbytes && !closed_tx) {
            CHECK(tw_tcp_close(&c, now) == 0);
            closed_tx = 1;
        }
        const uint8_t *p;
        size_t n;
        while (tw_tcp_recv_peek(&c, &p, &n) > 0) {
            if (bad_at == UINT64_MAX) {
                for (size_t off = 0; off < n; off += sizeof(chk)) {
                    size_t m = n - off < sizeof(chk) ? n - off : sizeof(chk);
                    tw__stream_fill(22, rx + off, chk, m);
                    if (memcmp(chk, p + off, m) != 0) {
                        for (size_t j = 0; j < m; j++)
                            if (chk[j] != p[off + j]) {
                                bad_at = rx + off + j;
                                break;
                            }
                        break;
                    }
                }
            }
            tw__sha256_update(&hrx, p, n);
            rx += n;
            tw_tcp_recv_consume(&c, n);
        }
        if (ecn_watch) {
            uint64_t r = tw_tcp_rate_Bps(&c);
            if (!lifted && r < rate_min)
                rate_min = r;
            /* Lift the bottleneck once the rate was cut and half is sent;
             * from then on no marks: the rate must climb back. */
            if (!lifted && tw_net_get_stats(st)->ecn_rate_cuts > 0 && tx >= nbytes / 2) {
                if (ecn_watch == 1) {
                    tw__netenv_sh(1, "ip netns exec %s tc qdisc del dev ifb%s root", env.ns, env.peer + 2);
                } else {
                    twi_config none = {0};
                    twi_set(port, &none);
                }
                cuts_at_lift = tw_net_get_stats(st)->ecn_rate_cuts;
                lifted = 1;
            }
            rate_end = r;
        }
        ev_seen |= tw_tcp_events(&c);
        tw_tcp_state s = tw_tcp_get_state(&c);
        if (s == TW_TCP_CLOSED || s == TW_TCP_TIME_WAIT)
            break;
        tw__netdrv_turn(&drv, 1, 1000000);
    }
    double secs = (double)(tw__netdrv_now_ns() - t0) / 1e9;
    run_until(&c, is_closed, 20.0);
    uint8_t d[32];
    char sh_tx[65], sh_rx[65];
    tw__sha256_final(&htx, d);
    tw__sha256_hex(d, sh_tx);
    tw__sha256_final(&hrx, d);
    tw__sha256_hex(d, sh_rx);
    int prc = peer_finish(&pr, 1);
    CHECK(prc == 0);
    unsigned long long prx = 0, ptx = 0;
    char psh_rx[65] = "", psh_tx[65] = "";
    int fields = sscanf(pr.line, "rx %llu %64s tx %llu %64s", &prx, psh_rx, &ptx, psh_tx);
    const tw_net_stats *S = tw_net_get_stats(st);
    printf("  [%s] %s: %llu B out, %llu B in in %.2f s (%.1f MB/s each way); state %s; "
           "retransmits %llu, fast %llu, ooo %llu, dup %llu, cksum_bad %llu\n",
           kind, label, (unsigned long long)tx, (unsigned long long)rx, secs,
           (double)(tx > rx ? tx : rx) / secs / 1e6, tw_tcp_state_name(tw_tcp_get_state(&c)),
           (unsigned long long)S->retransmits, (unsigned long long)S->fast_retransmits,
           (unsigned long long)S->rx_tcp_ooo, (unsigned long long)S->rx_tcp_dup,
           (unsigned long long)(S->rx_tcp_cksum_bad + S->rx_ip_cksum_bad));
    printf("  [%s] %s: rto %llu; SACK recoveries %llu, NextSeg resends %llu, rescues %llu, "
           "blocks in %llu (refused %llu) out %llu, D-SACKs in %llu out %llu; timestamps: RTT "
           "samples %llu, PAWS drops %llu, missing %llu\n", kind, label,
           (unsigned long long)S->rto_fires,
           (unsigned long long)S->sack_recoveries, (unsigned long long)S->sack_retransmits,
           (unsigned long long)S->rescue_retransmits, (unsigned long long)S->rx_sack_blocks,
           (unsigned long long)S->rx_sack_bad, (unsigned long long)S->tx_sack_blocks,
           (unsigned long long)S->rx_dsack, (unsigned long long)S->tx_dsack,
           (unsigned long long)S->ts_rtt_samples, (unsigned long long)S->rx_paws_drop,
           (unsigned long long)S->rx_ts_missing);
    printf("  [%s] %s: events %#x, rx_rst %llu, rx_rst_ignored %llu, tx_rst %llu\n", kind, label,
           ev_seen, (unsigned long long)S->rx_rst, (unsigned long long)S->rx_rst_ignored,
           (unsigned long long)S->tx_rst);
    printf("  [%s] %s: sha256 out %.16s... kernel got %.16s...; in %.16s... kernel sent %.16s...\n",
           kind, label, sh_tx, psh_rx, sh_rx, psh_tx);
    CHECK(fields == 4);
    CHECK(tx == nbytes);
    CHECK(rx == peer_bytes);
    CHECK(bad_at == UINT64_MAX);
    CHECK(prx == nbytes && ptx == peer_bytes);
    CHECK(!strcmp(sh_tx, psh_rx));
    CHECK(!strcmp(sh_rx, psh_tx));
    CHECK(tw_tcp_get_state(&c) == TW_TCP_CLOSED);
    CHECK(!(ev_seen & TW_TCP_EV_TIMEOUT));
    /* No RST may surface as RESET: after both FINs with every byte acked
     * the stack ends the connection as CLOSED (RFC 793 p.70 for CLOSING and
     * LAST_ACK, RFC 1337 for TIME_WAIT; tcp_test t_rst_after_fins), and
     * before that a reset is a failure. */
    CHECK(!(ev_seen & TW_TCP_EV_RESET));
    if (ecn_watch) {
        printf("  [%s] ecn: rate %.1f -> min %.1f -> end %.1f MB/s; ce_rx %llu ece_rx %llu "
               "cuts %llu (at lift %llu) cwr_sent %llu rate_limited %llu\n",
               kind, (double)rate_start / 1e6, (double)rate_min / 1e6, (double)rate_end / 1e6,
               (unsigned long long)S->ecn_ce_rx, (unsigned long long)S->ecn_ece_rx,
               (unsigned long long)S->ecn_rate_cuts, (unsigned long long)cuts_at_lift,
               (unsigned long long)S->cwr_sent, (unsigned long long)S->rate_limited);
        CHECK(S->ecn_ece_rx > 0);
        CHECK(S->ecn_rate_cuts > 0);
        CHECK(S->cwr_sent > 0);
        CHECK(rate_min < rate_start);
        CHECK(lifted);
        CHECK(rate_end > rate_min);
    }
    finish_conn(&c);
}

/* Impairments on both directions of the peer end: egress directly, ingress
 * through an ifb device in the namespace. */
static int impair(const char *egress, const char *ingress_root)
{
    const char *ns = env.ns;
    const char *ifb = env.peer + 2; /* unique per run: "ifb" + "<pid>x<k>b" */
    if (tw__netenv_sh(1, "ip netns exec %s ip link add ifb%s type ifb", ns, ifb) != 0 ||
        tw__netenv_sh(1, "ip netns exec %s ip link set ifb%s up", ns, ifb) != 0 ||
        tw__netenv_sh(1, "ip netns exec %s tc qdisc add dev %s handle ffff: ingress", ns, env.peer) != 0 ||
        tw__netenv_sh(1, "ip netns exec %s tc filter add dev %s parent ffff: matchall "
                    "action mirred egress redirect dev ifb%s", ns, env.peer, ifb) != 0) {
        fprintf(stderr, "[%s] cannot set up ifb/ingress redirect in the namespace\n", kind);
        return -1;
    }
    if (egress && tw__netenv_qdisc(&env, egress) != 0)
        return -1;
    if (tw__netenv_sh(0, "ip netns exec %s sh -c '%s'", ns, ingress_root) != 0)
        return -1;
    return 0;
}

static void unimpair(void)
{
    tw__netenv_sh(1, "ip netns exec %s tc qdisc del dev %s root", env.ns, env.peer);
    tw__netenv_sh(1, "ip netns exec %s tc qdisc del dev %s ingress", env.ns, env.peer);
    tw__netenv_sh(1, "ip netns exec %s ip link del ifb%s", env.ns, env.peer + 2);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: net_tcp_interop KIND [BULK_MB [IMPAIRED_MB]] [--no-ecn]\n");
        return 2;
    }
    kind = argv[1];
    if (getenv("TW_IMPAIR"))
        fprintf(stderr, "impair override: %s\n", getenv("TW_IMPAIR"));
    double bulk_mb = argc > 2 ? atof(argv[2]) : 64, imp_mb = argc > 3 ? atof(argv[3]) : 1;
    int do_ecn = !(argc > 4 && !strcmp(argv[4], "--no-ecn"));
    /* kpeer sits next to this program. */
    ssize_t n = readlink("/proc/self/exe", kpeer_path, sizeof(kpeer_path) - 16);
    if (n <= 0)
        return 1;
    kpeer_path[n] = 0;
    char *slash = strrchr(kpeer_path, '/');
    strcpy(slash + 1, "net_kpeer");
    if (access(kpeer_path, X_OK) != 0) {
        fprintf(stderr, "FAIL: %s not found\n", kpeer_path);
        return 1;
    }
    int rc = tw__netenv_setup(&env, 1);
    if (rc)
        return rc == TW_NETENV_SKIP ? 77 : 1;
    char spec[128];
    snprintf(spec, sizeof(spec), "%s:%s", kind, env.host);
    tw_error err = {0};
    rc = tw__port_open_spec(&realport, spec, 4096, &err);
    if (rc == -ENOTSUP) {
        fprintf(stderr, "SKIP: %s\n", err.msg);
        return 77;
    }
    if (rc) {
        fprintf(stderr, "FAIL: opening %s: %s\n", spec, err.msg);
        return 1;
    }
    if (twi_wrap(&port, realport) != 0)
        return 1;
    tw_net_config cfg;
    tw_net_config_init(&cfg, TW_NETENV_STACK_IP_BE);
    cfg.isn_secret[0] = 0x1234;
    cfg.isn_secret[1] = (uint64_t)getpid();
    cfg.time_wait_ns = 20000000; /* 20 ms: the tests wait for CLOSED */
    cfg.ecn = 1;
    rc = tw_net_open(&st, port, &cfg, &err);
    if (rc) {
        fprintf(stderr, "FAIL: tw_net_open: %s\n", err.msg);
        return 1;
    }
    if (tw__netdrv_init(&drv, st, port) != 0) {
        fprintf(stderr, "FAIL: the stack's reactor\n");
        return 1;
    }
    printf("net_tcp_interop %s on %s (stack %s, kernel %s in %s)\n", kind, env.host,
           TW_NETENV_STACK_IP, TW_NETENV_PEER_IP, env.ns);
    case_echo_close();
    case_options();
    case_rst();
    if (bulk_mb > 0)
        bulk("bulk", (uint64_t)(bulk_mb * 1048576.0), 0);
    char ifb[IFNAMSIZ_TW], q[512];
    snprintf(ifb, sizeof(ifb), "ifb%s", env.peer + 2);
    /* Real qdiscs when the kernel has them, else the same impairments in
     * process (impair.h explains). */
    int have_netem = tw__netenv_sh(1, "ip netns exec %s tc qdisc add dev %s root netem delay 1ms",
                              env.ns, env.peer) == 0;
    tw__netenv_sh(1, "ip netns exec %s tc qdisc del dev %s root", env.ns, env.peer);
    int have_fq_codel = tw__netenv_sh(1, "ip netns exec %s tc qdisc add dev %s root fq_codel ecn",
                                 env.ns, env.peer) == 0;
    tw__netenv_sh(1, "ip netns exec %s tc qdisc del dev %s root", env.ns, env.peer);
    if (imp_mb > 0) {
        int ok;
        if (have_netem) {
            snprintf(q, sizeof(q), "tc qdisc replace dev %s root netem delay 1ms 500us loss 2%% "
                     "reorder 10%% duplicate 1%% corrupt 0.1%%", ifb);
            ok = impair("netem delay 1ms 500us loss 2% reorder 10% duplicate 1% corrupt 0.1%", q) == 0;
        } else {
            printf("  [%s] impaired: tc netem is not in this kernel: impairing in process "
                   "(same parameters, both directions)\n", kind);
            twi_config ic = {.loss = 0.02, .reorder = 0.10, .dup = 0.01, .corrupt = 0.001,
                             .delay_ns = 1000000, .jitter_ns = 500000, .seed = 0x5eed0001};
            const char *ov = getenv("TW_IMPAIR"); /* debugging: "loss dup reorder corrupt delay_us" */
            if (ov) {
                double dus = 0;
                sscanf(ov, "%lf %lf %lf %lf %lf", &ic.loss, &ic.dup, &ic.reorder, &ic.corrupt, &dus);
                ic.delay_ns = (uint64_t)(dus * 1000);
                ic.jitter_ns = ic.delay_ns / 2;
            }
            twi_set(port, &ic);
            ok = 1;
        }
        if (ok)
            bulk("impaired", (uint64_t)(imp_mb * 1048576.0), 0);
        else
            CHECK(!"netem setup");
        const twi_stats *I = twi_get_stats(port);
        if (!have_netem) {
            printf("  [%s] impaired: lost %llu, duplicated %llu, reordered %llu, corrupted %llu\n",
                   kind, (unsigned long long)I->lost, (unsigned long long)I->duped,
                   (unsigned long long)I->reordered, (unsigned long long)I->corrupted);
            CHECK(I->lost > 0 && I->duped > 0 && I->reordered > 0);
        }
        twi_config none = {0};
        twi_set(port, &none);
        if (have_netem)
            unimpair();
    }
    if (do_ecn) {
        int ok;
        if (have_fq_codel) {
            /* The bottleneck on the way to the kernel (its ingress, via
             * ifb): HTB at 100 Mbit/s, fq_codel marking CE, not dropping. */
            snprintf(q, sizeof(q), "tc qdisc add dev %s root handle 1: htb default 1 && "
                     "tc class add dev %s parent 1: classid 1:1 htb rate 100mbit && "
                     "tc qdisc add dev %s parent 1:1 fq_codel ecn target 1ms interval 10ms",
                     ifb, ifb, ifb);
            ok = impair(NULL, q) == 0;
        } else {
            printf("  [%s] ecn: no fq_codel/RED in this kernel: 100 Mbit/s bottleneck marking "
                   "CE above 1 ms queueing, in process\n", kind);
            twi_config ic = {.rate_Bps = 12500000, .mark_ns = 1000000, .drop_ns = 50000000};
            twi_set(port, &ic);
            ok = 1;
        }
        if (ok)
            bulk("ecn", 24u << 20, have_fq_codel ? 1 : 2);
        else
            CHECK(!"ecn qdisc setup");
        twi_config none = {0};
        twi_set(port, &none);
        if (have_fq_codel)
            unimpair();
    }
    const tw_net_stats *S = tw_net_get_stats(st);
    printf("  [%s] stack: rx %llu frames, tx %llu frames, tx_fail %llu, arp resolved %llu\n", kind,
           (unsigned long long)S->rx_frames, (unsigned long long)S->tx_frames,
           (unsigned long long)S->tx_fail, (unsigned long long)S->arp_resolved);
    tw_net_close(st);
    st = NULL;
    tw_port_close(port);
    tw_port_close(realport);
    if (tw_port_leaked_total()) {
        char what[256];
        tw_port_last_leak(what, sizeof(what));
        fprintf(stderr, "%s\n", what);
    }
    CHECK(tw_port_leaked_total() == 0);
    tw__netenv_teardown(&env);
    char name[64];
    snprintf(name, sizeof(name), "net_tcp_interop %s", kind);
    return tw_check_done(name);
}
