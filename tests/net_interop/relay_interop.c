/* The stack against Linux through the seeded impaired relay
 * (tools/common/netrelay.h), at every loss level of `bench netloss`
 * (0.1%, 1%, 5%, a burst of 10 lost frames):
 *
 *   1. the stack connects to a kernel server and both send 1 MiB at once;
 *   2. a kernel client connects to the stack and sends it 1 MiB;
 *
 * each transfer checked byte for byte (SHA-256 at the receiver), SACK and
 * timestamps agreed on both connections, the relay's schedule seen to
 * drop frames.  tcpdump on the kernel's end prints the first two
 * handshakes' SYNs: all four carry sackOK and TS.  Root only (exit 77
 * otherwise).  Usage: net_relay_interop KPEER [PORT_KIND] */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/netdrv.h"
#include "common/netrelay.h"
#include "common/portspec.h"
#include "common/sha256.h"
#include "tw_check.h"

#define NBYTES (1u << 20)

static const char *kpeer;
static tw__netdrv drv;
static tw_net *st;
static tw_tcp_conn conn, acc_conn;
static int acc_used;

static tw_tcp_conn *acc(tw_tcp_listener *l, uint32_t ip, uint16_t port, void *u)
{
    (void)l, (void)ip, (void)port, (void)u;
    if (acc_used)
        return NULL;
    acc_used = 1;
    memset(&acc_conn, 0, sizeof(acc_conn));
    return &acc_conn;
}

static void turn(void) { (void)tw__netdrv_turn(&drv, 1, 1000000); }

static void sha_of_stream(uint64_t seed, char hex[65])
{
    static uint8_t buf[NBYTES];
    tw__stream_fill(seed, 0, buf, NBYTES);
    tw__sha256 h;
    uint8_t d[32];
    tw__sha256_init(&h);
    tw__sha256_update(&h, buf, NBYTES);
    tw__sha256_final(&h, d);
    tw__sha256_hex(d, hex);
}

/* kpeer with args in e's namespace, stdout into *fd; a server is waited
 * for ("ready"). */
static pid_t kstart(const tw__netenv *e, char **args, int server, int *fd)
{
    int p[2];
    if (pipe(p) < 0)
        return -1;
    char *argv[10] = {(char *)kpeer};
    for (int i = 0; args[i] && i < 8; i++)
        argv[i + 1] = args[i];
    pid_t pid = tw__netenv_spawn(e, argv, p[1]);
    close(p[1]);
    *fd = p[0];
    if (pid < 0 || !server)
        return pid;
    char c, line[16];
    size_t n = 0;
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    while (n + 1 < sizeof(line) && poll(&pf, 1, 10000) > 0 && read(p[0], &c, 1) == 1 && c != '\n')
        line[n++] = c;
    line[n] = 0;
    return strcmp(line, "ready") ? -1 : pid;
}

static void kline(int fd, char *line, size_t cap)
{
    size_t n = 0;
    char c;
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    while (n + 1 < cap && poll(&pf, 1, 0) > 0 && read(fd, &c, 1) == 1 && c != '\n')
        line[n++] = c;
    line[n] = 0;
}

/* Moves a connection's data: sends up to NBYTES of stream tx_seed (if
 * any), reads into h; returns when both are done, the peer closed and
 * our FIN is acknowledged, or 120 s passed. */
static void pump(tw_tcp_conn *c, uint64_t tx_seed, uint64_t tx_n, tw__sha256 *h, uint64_t *got)
{
    static uint8_t buf[16384];
    uint64_t sent = 0;
    int closed = 0;
    uint64_t dl = tw__netdrv_now_ns() + 120000000000ull;
    while (tw__netdrv_now_ns() < dl) {
        turn();
        const uint8_t *p;
        size_t m;
        while (tw_tcp_recv_peek(c, &p, &m) > 0) {
            tw__sha256_update(h, p, m);
            *got += m;
            tw_tcp_recv_consume(c, m);
        }
        tw_tcp_state s = tw_tcp_get_state(c);
        if (sent < tx_n && (s == TW_TCP_ESTABLISHED || s == TW_TCP_CLOSE_WAIT)) {
            size_t n = tx_n - sent < sizeof(buf) ? (size_t)(tx_n - sent) : sizeof(buf);
            tw__stream_fill(tx_seed, sent, buf, n);
            long w = tw_tcp_send(c, buf, n, tw__netdrv_now_ns());
            if (w > 0)
                sent += (uint64_t)w;
        }
        /* Our FIN once everything is queued (a receiver only: once the
         * peer's FIN came). */
        if (sent == tx_n && !closed && (s == TW_TCP_CLOSE_WAIT || (tx_n && s == TW_TCP_ESTABLISHED))) {
            tw_tcp_close(c, tw__netdrv_now_ns());
            closed = 1;
        }
        if (s == TW_TCP_CLOSED || s == TW_TCP_TIME_WAIT)
            break;
    }
}

static void digest(tw__sha256 *h, char hex[65])
{
    uint8_t d[32];
    tw__sha256_final(h, d);
    tw__sha256_hex(d, hex);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: net_relay_interop KPEER [PORT_KIND]\n");
        return 2;
    }
    kpeer = argv[1];
    const char *kind = argc > 2 ? argv[2] : "af_packet";
    tw__relay_topology t;
    int rc = tw__relay_topology_setup(&t, 0, 1);
    if (rc)
        return rc == TW_NETENV_SKIP ? 77 : 1;
    char spec[64];
    tw_error err = {0};
    tw_port *port = NULL;
    snprintf(spec, sizeof(spec), "%s:%s", kind, t.l.peer);
    rc = tw__port_open_spec(&port, spec, 4096, &err);
    if (rc == -ENOTSUP) {
        printf("SKIP: %s: this build has no such port\n", spec);
        tw__relay_topology_teardown(&t);
        return 77;
    }
    if (rc != 0) {
        CHECKF(0, "%s: %s", spec, err.msg);
        tw__relay_topology_teardown(&t);
        return tw_check_done("net_relay_interop");
    }
    tw_net_config cfg;
    tw_net_config_init(&cfg, TW_NETENV_STACK_IP_BE);
    cfg.isn_secret[0] = 0x7e57;
    cfg.isn_secret[1] = (uint64_t)getpid();
    cfg.time_wait_ns = 1000000;
    static const uint8_t mac[6] = {0x02, 0x74, 0x77, 0x00, 0x20, 0x02};
    memcpy(cfg.mac, mac, 6);
    CHECK(tw_net_open(&st, port, &cfg, &err) == 0 && tw__netdrv_init(&drv, st, port) == 0);
    tw_tcp_listener l;
    CHECK(tw_tcp_listen(st, &l, 7901, acc, NULL) == 0);

    char cap[128] = "";
    pid_t tcpd = -1;
    if (tw__netenv_sh(1, "command -v tcpdump") != 0) {
        printf("  options: SKIP: no tcpdump (negotiation still checked)\n");
    } else {
        snprintf(cap, sizeof(cap), "/tmp/tw_relay_interop_%d.txt", (int)getpid());
        int fd = -1;
        char path[160];
        snprintf(path, sizeof(path), "%s", cap);
        FILE *f = fopen(path, "w");
        if (f) {
            fd = dup(fileno(f));
            fclose(f);
        }
        char *targv[] = {(char *)"tcpdump", (char *)"-i", t.r.peer, (char *)"-nn", (char *)"-l",
                         (char *)"-c", (char *)"4", (char *)"tcp[tcpflags] & tcp-syn != 0", NULL};
        /* stderr too ("listening on" says it is ready). */
        fflush(stdout);
        int saved = dup(2);
        dup2(fd, 2);
        tcpd = tw__netenv_spawn(&t.r, targv, fd);
        dup2(saved, 2);
        close(saved);
        close(fd);
        for (int i = 0; i < 500 && tw__netenv_sh(1, "grep -q 'listening on' %s", cap) != 0; i++)
            tw__netdrv_turn(&drv, 1, 10000000);
    }

    static const struct { const char *name; double loss; unsigned burst; } modes[] = {
        {"0.1%", 0.001, 0}, {"1%", 0.01, 0}, {"5%", 0.05, 0}, {"burst 10", 0, 10}};
    char want1[65], want2[65], want3[65];
    sha_of_stream(1, want1);
    sha_of_stream(2, want2);
    sha_of_stream(3, want3);
    for (unsigned m = 0; m < 4; m++) {
        tw__relay_sched rs;
        memset(&rs, 0, sizeof(rs));
        rs.seed = 7 + m;
        rs.loss = modes[m].loss;
        rs.burst_len = modes[m].burst;
        rs.burst_at = 300;
        rs.delay_ns = 100000;
        static tw__relay relay;
        char why[200];
        if (tw__relay_open(&relay, t.l.host, t.r.host, &rs, why, sizeof(why)) != 0 ||
            tw__relay_start(&relay) != 0) {
            CHECKF(0, "relay: %s", why);
            break;
        }
        /* 1. The stack connects; both ends send 1 MiB. */
        int kfd;
        char *sa[] = {(char *)"bulk", (char *)"7902", (char *)"1048576", (char *)"2", NULL};
        pid_t srv = kstart(&t.r, sa, 1, &kfd);
        CHECK(srv > 0);
        memset(&conn, 0, sizeof(conn));
        CHECK(tw_tcp_connect(st, &conn, TW_NETENV_PEER_IP_BE, 7902, 0, tw__netdrv_now_ns()) == 0);
        tw__sha256 h;
        tw__sha256_init(&h);
        uint64_t got = 0;
        pump(&conn, 1, NBYTES, &h, &got);
        char hex[65], line[256];
        digest(&h, hex);
        CHECKF(got == NBYTES && !strcmp(hex, want2), "%s: stack received %llu bytes",
               modes[m].name, (unsigned long long)got);
        CHECKF(tw_tcp_sack_on(&conn) && tw_tcp_timestamps_on(&conn), "%s: SACK %d TS %d",
               modes[m].name, tw_tcp_sack_on(&conn), tw_tcp_timestamps_on(&conn));
        int ks = tw__netenv_wait(srv, 30);
        kline(kfd, line, sizeof(line));
        close(kfd);
        unsigned long long n1 = 0;
        char s1[80] = "";
        CHECKF(ks == 0 && sscanf(line, "rx %llu %64s", &n1, s1) == 2 && n1 == NBYTES &&
                   !strcmp(s1, want1), "%s: kernel received '%s'", modes[m].name, line);
        for (int i = 0; i < 50 && tw_tcp_get_state(&conn) != TW_TCP_CLOSED; i++)
            turn();
        if (tw_tcp_get_state(&conn) != TW_TCP_CLOSED)
            tw_tcp_abort(&conn, tw__netdrv_now_ns());
        tw_tcp_conn_release(&conn);

        /* 2. The kernel connects and sends 1 MiB. */
        acc_used = 0;
        char *ca[] = {(char *)"sendclient", (char *)TW_NETENV_STACK_IP, (char *)"7901",
                      (char *)"1048576", (char *)"3", NULL};
        pid_t cli = kstart(&t.r, ca, 0, &kfd);
        CHECK(cli > 0);
        uint64_t dl = tw__netdrv_now_ns() + 30000000000ull;
        while (!acc_used && tw__netdrv_now_ns() < dl)
            turn();
        CHECKF(acc_used, "%s: no connection from the kernel", modes[m].name);
        tw__sha256_init(&h);
        got = 0;
        if (acc_used)
            pump(&acc_conn, 0, 0, &h, &got);
        digest(&h, hex);
        CHECKF(got == NBYTES && !strcmp(hex, want3), "%s: stack received %llu bytes from the "
               "kernel's client", modes[m].name, (unsigned long long)got);
        CHECK(tw_tcp_sack_on(&acc_conn) && tw_tcp_timestamps_on(&acc_conn));
        CHECKF(tw__netenv_wait(cli, 30) == 0, "%s: kernel client failed", modes[m].name);
        close(kfd);
        for (int i = 0; i < 50 && tw_tcp_get_state(&acc_conn) != TW_TCP_CLOSED; i++)
            turn();
        if (tw_tcp_get_state(&acc_conn) != TW_TCP_CLOSED)
            tw_tcp_abort(&acc_conn, tw__netdrv_now_ns());
        tw_tcp_conn_release(&acc_conn);
        tw__relay_close(&relay);
        uint64_t drops = relay.c.dropped[0] + relay.c.dropped[1];
        printf("  [%s] %s: byte-exact both ways; relay dropped %llu of %llu frames\n", kind,
               modes[m].name, (unsigned long long)drops,
               (unsigned long long)(relay.c.frames[0] + relay.c.frames[1]));
        CHECKF(m == 0 || drops > 0, "%s: the schedule dropped nothing", modes[m].name);
        CHECKF(relay.c.queue_full + relay.c.tx_fail == 0, "%s: the relay lost frames itself",
               modes[m].name);
        if (m == 0 && tcpd > 0) {
            /* The two handshakes: SYN and SYN-ACK each, both offering
             * SACK and timestamps. */
            CHECK(tw__netenv_wait(tcpd, 10) == 0);
            tcpd = -1;
            FILE *f = fopen(cap, "r");
            int syns = 0, with = 0;
            while (f && fgets(line, sizeof(line), f))
                if (strstr(line, "Flags [S")) {
                    syns++;
                    with += strstr(line, "sackOK") && strstr(line, "TS val");
                    printf("  tcpdump: %s", line);
                }
            if (f)
                fclose(f);
            unlink(cap);
            CHECKF(syns == 4 && with == 4, "SYNs %d, with sackOK and TS %d", syns, with);
        }
    }
    if (tcpd > 0) {
        kill(tcpd, SIGTERM);
        tw__netenv_wait(tcpd, 5);
    }
    tw_tcp_unlisten(&l);
    tw_net_close(st);
    tw_port_close(port);
    tw__relay_topology_teardown(&t);
    return tw_check_done("net_relay_interop");
}
