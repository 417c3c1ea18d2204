/* tickwire net echo / tickwire net connect: the stack by hand over a real
 * port.
 *
 *   tickwire net echo    --port SPEC --ip A.B.C.D [--mac M] [--listen PORT] [--busy]
 *                        [--pcap FILE[,key=value...]]
 *   tickwire net connect --port SPEC --ip A.B.C.D [--mac M] --to A.B.C.D:PORT [--busy]
 *                        [--pcap FILE[,key=value...]]
 *
 * SPEC is a port spec (af_packet:IF, af_xdp:IF[:Q], dpdk_af_packet:IF,
 * dpdk_af_xdp:IF, dpdk:PORT:EAL ARGS).  echo serves up to 8 connections at
 * once and echoes every byte; connect relays stdin to the connection and
 * the connection to stdout, like nc, and closes when stdin ends.  Both
 * yield on the port's fd unless --busy; SIGINT/SIGTERM stop them and print
 * the stack's counters.  --mac gives the stack a MAC of its own
 * (xx:xx:xx:xx:xx:xx) instead of the interface's: on AF_PACKET the host
 * kernel then stops the stack's frames at its L2 check instead of running
 * them through its IPv4 input (see bench/netrtt/bench_netrtt_core.c).
 * --pcap writes every frame the port receives and sends to a pcapng file
 * (capture.h: snap=, size=, files=, dir=, ip=, port=, cpu= after commas),
 * from a writer thread; the counters (captured, dropped) are printed at
 * the end with the stack's.
 * A bad option or number: one line on stderr naming it, exit status 2. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cli_opt.h"
#include "common/netdrv.h"
#include "common/portspec.h"
#include "tickwire/capture.h"
#include "tickwire/net.h"

int tw__cli_net_echo(int argc, char **argv);
int tw__cli_net_connect(int argc, char **argv);

#define ECHO_CONNS 8

/* The stack on a one-core reactor (common/netdrv.h); SIGINT/SIGTERM stop
 * it (tw_reactor_stop is async-signal-safe). */
static tw__netdrv drv;
static volatile sig_atomic_t quit;
static void on_sig(int s)
{
    (void)s;
    quit = 1;
    tw_reactor_stop(&drv.r);
}

typedef struct opts {
    const char *port, *ip, *to, *mac, *pcap;
    unsigned listen;
    int busy;
    tw_capture_config cc; /* --pcap, parsed */
} opts;

static const char echo_usage[] =
    "usage: tickwire net echo --port SPEC --ip A.B.C.D [--mac M] [--listen PORT] [--busy]\n"
    "                         [--pcap FILE[,snap=N,size=N,files=N,dir=rx|tx,ip=A,port=N]]\n";
static const char connect_usage[] =
    "usage: tickwire net connect --port SPEC --ip A.B.C.D [--mac M] --to A.B.C.D:PORT [--busy]\n"
    "                            [--pcap FILE[,snap=N,size=N,files=N,dir=rx|tx,ip=A,port=N]]\n";

/* Returns -1 when the options are good (o filled), else the exit status
 * the subcommand returns now: 0 after --help, 2 after saying what was
 * wrong. */
static int parse(const char *cmd, const char *usage, int argc, char **argv, opts *o,
                 int need_to)
{
    memset(o, 0, sizeof(*o));
    o->listen = 7;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--busy")) {
            o->busy = 1;
            continue;
        }
        const char *opt, *val;
        int r = tw__cli_opt_value(cmd, usage, argc, argv, &i, &opt, &val);
        if (r)
            return r > 0 ? 0 : 2;
        if (!strcmp(opt, "--port")) {
            o->port = val;
        } else if (!strcmp(opt, "--ip")) {
            o->ip = val;
        } else if (!strcmp(opt, "--mac")) {
            o->mac = val;
        } else if (!strcmp(opt, "--pcap")) {
            tw_error err;
            if (tw_capture_config_parse(&o->cc, val, &err) != 0) {
                fprintf(stderr, "tickwire %s: --pcap: %s\n", cmd, err.msg);
                return 2;
            }
            o->pcap = val;
        } else if (!strcmp(opt, "--to") && need_to) {
            o->to = val;
        } else if (!strcmp(opt, "--listen") && !need_to) {
            uint64_t v;
            if (tw__cli_u64_range(cmd, opt, val, 1, 65535, &v))
                return 2;
            o->listen = (unsigned)v;
        } else {
            fprintf(stderr, "tickwire %s: unknown option '%s' (see --help)\n", cmd, opt);
            return 2;
        }
    }
    if (!o->port || !o->ip || (need_to && !o->to)) {
        fputs(usage, stderr);
        return 2;
    }
    return -1;
}

static tw_capture *cap; /* --pcap */

/* Stops the capture (the loop has ended) and prints its counters. */
static void close_capture(tw_port *p)
{
    if (!cap)
        return;
    tw_port_capture_detach(p);
    tw_capture_stats cs;
    int rc = tw_capture_close(cap, &cs);
    cap = NULL;
    fprintf(stderr, "net: capture: %llu frames written in %llu file(s), %llu dropped (ring "
            "full), %llu filtered%s%s\n",
            (unsigned long long)cs.written, (unsigned long long)cs.files,
            (unsigned long long)cs.dropped, (unsigned long long)cs.filtered,
            rc ? ", write error: " : "", rc ? tw_strerror(rc) : "");
}

static int open_all(const opts *o, tw_port **p, tw_net **st)
{
    tw_error err = {0};
    uint32_t ip;
    if (tw_net_parse_ip4(o->ip, &ip) != 0) {
        fprintf(stderr, "net: bad --ip '%s'\n", o->ip);
        return -1;
    }
    if (tw__port_open_spec(p, o->port, 4096, &err) != 0) {
        fprintf(stderr, "net: %s\n", err.msg);
        return -1;
    }
    if (o->pcap && tw_port_capture_open(*p, &o->cc, o->port, &cap, &err) != 0) {
        fprintf(stderr, "net: --pcap: %s\n", err.msg);
        tw_port_close(*p);
        return -1;
    }
    tw_net_config cfg;
    tw_net_config_init(&cfg, ip);
    /* By hand, not in a test: the ISN secret comes from the kernel. */
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd < 0 || read(fd, cfg.isn_secret, sizeof(cfg.isn_secret)) != sizeof(cfg.isn_secret)) {
        fprintf(stderr, "net: cannot read /dev/urandom\n");
        if (fd >= 0)
            close(fd);
        close_capture(*p);
        tw_port_close(*p);
        return -1;
    }
    close(fd);
    cfg.max_conns = ECHO_CONNS + 1;
    cfg.ecn = 1;
    if (o->mac) {
        unsigned m[6];
        char extra;
        if (sscanf(o->mac, "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5],
                   &extra) != 6 || (m[0] & 1u)) {
            fprintf(stderr, "net: bad --mac '%s' (want six hex bytes a:b:c:d:e:f, unicast)\n",
                    o->mac);
            close_capture(*p);
            tw_port_close(*p);
            return -1;
        }
        for (int i = 0; i < 6; i++) {
            if (m[i] > 0xff) {
                fprintf(stderr, "net: bad --mac '%s' (byte %d is over ff)\n", o->mac, i + 1);
                close_capture(*p);
                tw_port_close(*p);
                return -1;
            }
            cfg.mac[i] = (uint8_t)m[i];
        }
    }
    if (tw_net_open(st, *p, &cfg, &err) != 0) {
        fprintf(stderr, "net: %s\n", err.msg);
        close_capture(*p);
        tw_port_close(*p);
        return -1;
    }
    signal(SIGINT, on_sig);
    signal(SIGTERM, on_sig);
    return 0;
}

static void print_stats(const tw_net *st)
{
    const tw_net_stats *s = tw_net_get_stats(st);
    fprintf(stderr, "net: rx %llu frames (%llu TCP bytes), tx %llu frames (%llu data bytes), "
            "retransmits %llu, accepted %llu, resets %llu\n",
            (unsigned long long)s->rx_frames, (unsigned long long)s->rx_tcp_bytes,
            (unsigned long long)s->tx_frames, (unsigned long long)s->tx_data_bytes,
            (unsigned long long)s->retransmits, (unsigned long long)s->conns_accepted,
            (unsigned long long)s->conns_reset);
    /* Broken frames are corruption or a bug; "not for us" is normal on a
     * shared wire. */
    char line[512];
    tw_net_stats_rx_refused(s, line, sizeof(line));
    fprintf(stderr, "net: refused: %s\n", line);
}

static tw_tcp_conn conns[ECHO_CONNS];
static int used[ECHO_CONNS];

static tw_tcp_conn *echo_accept(tw_tcp_listener *l, uint32_t ip, uint16_t port, void *user)
{
    for (int i = 0; i < ECHO_CONNS; i++)
        if (!used[i]) {
            used[i] = 1;
            memset(&conns[i], 0, sizeof(conns[i]));
            char b[16];
            fprintf(stderr, "net echo: connection from %s:%u\n", tw_net_format_ip4(ip, b), port);
            return &conns[i];
        }
    return NULL; /* full: refused with RST */
}

/* The echo server's poll, after the stack's in the same turn: echoes what
 * arrived, closes what the peer closed.  Returns the bytes echoed. */
static unsigned echo_poll(void *arg, tw_reactor_now *now)
{
    (void)arg;
    unsigned work = 0;
    for (int i = 0; i < ECHO_CONNS; i++) {
        if (!used[i])
            continue;
        tw_tcp_conn *c = &conns[i];
        unsigned ev = tw_tcp_events(c);
        const uint8_t *b;
        size_t n;
        while (tw_tcp_recv_peek(c, &b, &n) > 0) {
            long w = tw_tcp_send(c, b, n, (uint64_t)now->ns);
            if (w <= 0)
                break; /* ring full: the rest waits for ACKs */
            tw_tcp_recv_consume(c, (size_t)w);
            work += (unsigned)w;
        }
        if ((ev & TW_TCP_EV_PEER_FIN) && tw_tcp_get_state(c) == TW_TCP_CLOSE_WAIT)
            tw_tcp_close(c, (uint64_t)now->ns);
        if (tw_tcp_get_state(c) == TW_TCP_CLOSED) {
            tw_tcp_conn_release(c);
            used[i] = 0;
        }
    }
    return work;
}

/* The library counts buffers a closed port found still held and keeps
 * what it found; saying so is the tool's job. */
static void report_leak(const char *cmd)
{
    char what[256];
    if (tw_port_leaked_total() && tw_port_last_leak(what, sizeof(what)))
        fprintf(stderr, "%s: %s\n", cmd, what);
}

int tw__cli_net_echo(int argc, char **argv)
{
    opts o;
    int prc = parse("net echo", echo_usage, argc, argv, &o, 0);
    if (prc >= 0)
        return prc;
    tw_port *p;
    tw_net *st;
    if (open_all(&o, &p, &st) != 0)
        return 1;
    static tw_tcp_listener l;
    if (tw_tcp_listen(st, &l, (uint16_t)o.listen, echo_accept, NULL) != 0) {
        fprintf(stderr, "net echo: cannot listen on %u\n", o.listen);
        tw_net_close(st);
        close_capture(p);
        tw_port_close(p);
        return 1;
    }
    fprintf(stderr, "net echo: %s listening on %s:%u over %s\n", p->ops->name, o.ip, o.listen,
            o.port);
    if (tw__netdrv_init(&drv, st, p) != 0 ||
        tw_reactor_add_poll(&drv.r, 0, echo_poll, NULL) != 0) {
        fprintf(stderr, "net echo: cannot set up the reactor\n");
        tw_net_close(st);
        tw_port_close(p);
        return 1;
    }
    if (!quit)
        tw__netdrv_run(&drv, !o.busy, 1000000);
    print_stats(st);
    close_capture(p);
    tw_net_close(st);
    tw_port_close(p);
    report_leak("net echo");
    return 0;
}

int tw__cli_net_connect(int argc, char **argv)
{
    opts o;
    int prc = parse("net connect", connect_usage, argc, argv, &o, 1);
    if (prc >= 0)
        return prc;
    char host[32];
    const char *colon = strrchr(o.to, ':');
    uint32_t dst;
    if (!colon || (size_t)(colon - o.to) >= sizeof(host)) {
        fprintf(stderr, "net connect: --to wants A.B.C.D:PORT\n");
        return 2;
    }
    memcpy(host, o.to, (size_t)(colon - o.to));
    host[colon - o.to] = 0;
    uint64_t dport;
    if (tw_net_parse_ip4(host, &dst) != 0) {
        fprintf(stderr, "tickwire net connect: --to: '%s' is not a dotted-quad address\n", host);
        return 2;
    }
    if (tw__cli_u64_range("net connect", "--to PORT", colon + 1, 1, 65535, &dport))
        return 2;
    tw_port *p;
    tw_net *st;
    if (open_all(&o, &p, &st) != 0)
        return 1;
    static tw_tcp_conn c;
    /* stdin is one of the loop's fds: a yielding wait wakes on input. */
    if (tw__netdrv_init(&drv, st, p) != 0 || tw_reactor_add_fd(&drv.r, 0, 0) != 0) {
        fprintf(stderr, "net connect: cannot set up the reactor\n");
        tw_net_close(st);
        tw_port_close(p);
        return 1;
    }
    int rc = tw_tcp_connect(st, &c, dst, (uint16_t)dport, 0, tw__netdrv_now_ns());
    if (rc != 0) {
        fprintf(stderr, "net connect: %s\n", tw_strerror(rc));
        tw_net_close(st);
        close_capture(p);
        tw_port_close(p);
        return 1;
    }
    int in_open = 1, status = 0;
    static uint8_t buf[16384];
    size_t pend = 0, pend_off = 0;
    fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
    while (!quit) {
        tw__netdrv_turn(&drv, !o.busy, 1000000);
        unsigned ev = tw_tcp_events(&c);
        tw_tcp_state s = tw_tcp_get_state(&c);
        if (ev & (TW_TCP_EV_RESET | TW_TCP_EV_TIMEOUT)) {
            fprintf(stderr, "net connect: %s\n", ev & TW_TCP_EV_RESET ? "connection reset/refused"
                                                                      : "timed out");
            status = 1;
            break;
        }
        const uint8_t *b;
        size_t n;
        while (tw_tcp_recv_peek(&c, &b, &n) > 0) {
            if (fwrite(b, 1, n, stdout) != n)
                break;
            tw_tcp_recv_consume(&c, n);
        }
        fflush(stdout);
        if (s == TW_TCP_ESTABLISHED || s == TW_TCP_CLOSE_WAIT) {
            if (pend == pend_off && in_open) {
                ssize_t r = read(0, buf, sizeof(buf));
                if (r > 0) {
                    pend = (size_t)r;
                    pend_off = 0;
                } else if (r == 0) {
                    in_open = 0;
                    tw_tcp_close(&c, tw__netdrv_now_ns());
                }
            }
            if (pend > pend_off) {
                long w = tw_tcp_send(&c, buf + pend_off, pend - pend_off,
                                     tw__netdrv_now_ns());
                if (w > 0)
                    pend_off += (size_t)w;
            }
        }
        if (s == TW_TCP_CLOSED || (s == TW_TCP_TIME_WAIT && !in_open))
            break;
    }
    print_stats(st);
    if (tw_tcp_get_state(&c) != TW_TCP_CLOSED)
        tw_tcp_abort(&c, tw__netdrv_now_ns());
    tw_tcp_conn_release(&c);
    tw_net_poll(st, tw__netdrv_now_ns()); /* the RST goes out, and into the capture */
    close_capture(p);
    tw_net_close(st);
    tw_port_close(p);
    report_leak("net connect");
    return status;
}
