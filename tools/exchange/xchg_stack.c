/* `tickwire exchange --port SPEC --ip A.B.C.D` over this project's
 * userspace TCP/IP stack: the port from its spec, a tw_net on it, the
 * venue served by tw_xchg_net, all on one reactor core (tools/common's
 * netdrv): each turn polls the stack, then the venue, whose next deadline
 * bounds the reactor's idle wait on the port's fd (or it busy-polls with
 * --busy).  One clock: the reactor's (tw__netdrv_now_ns).  --pcap
 * captures the port's frames (capture.h) from a writer thread. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exchange/xchg_cli.h"
#include "tickwire/net.h"

#ifdef TW_XCHG_HAVE_PORTS
#include "common/netdrv.h"
#include "common/portspec.h"

#define OUT_CAP (4u << 20) /* bytes a connection may owe beyond the stack's ring */

typedef struct venue_poll_ctx {
    tw_xchg *x;
    tw_xchg_net *xn;
} venue_poll_ctx;

/* A reactor poll after the stack's: bytes in, the venue's clock, bytes
 * out; the venue's next deadline ends the turn's idle wait. */
static unsigned venue_poll(void *arg, tw_reactor_now *now)
{
    venue_poll_ctx *v = arg;
    uint64_t bars = tw_xchg_get_stats(v->x)->bars;
    unsigned work = tw_xchg_net_poll(v->xn, (int64_t)now->ns);
    int64_t next = tw_xchg_poll(v->x, now->ns);
    work += tw_xchg_net_poll(v->xn, (int64_t)now->ns);
    /* Nothing done and time to spare: a piece of housekeeping. */
    if (work == 0 && tw_xchg_get_stats(v->x)->bars == bars && next > now->ns)
        work += (unsigned)tw_xchg_idle(v->x);
    if (next < now->wake_ns)
        now->wake_ns = next;
    return work + (tw_xchg_get_stats(v->x)->bars != bars);
}

/* Ends --pcap (the loop has stopped): the rest of the ring, the file
 * closed, one line of counters unless quiet.  Returns the capture's write
 * error (0 if none), said on stderr. */
static int close_capture(tw_port *port, tw_capture *cap, int quiet)
{
    if (!cap)
        return 0;
    tw_port_capture_detach(port);
    tw_capture_stats cs;
    int rc = tw_capture_close(cap, &cs);
    if (rc)
        fprintf(stderr, "tickwire exchange: --pcap: write error: %s\n", tw_strerror(rc));
    else if (!quiet)
        fprintf(stderr, "tickwire exchange: capture: %llu frames in %llu file(s), %llu dropped "
                        "(ring full)\n", (unsigned long long)cs.written,
                (unsigned long long)cs.files, (unsigned long long)cs.dropped);
    return rc;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
    unsigned m[6];
    char extra;
    if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &extra) != 6)
        return -1;
    for (int i = 0; i < 6; i++) {
        if (m[i] > 0xff)
            return -1;
        mac[i] = (uint8_t)m[i];
    }
    return mac[0] & 1 ? -1 : 0; /* unicast only */
}

int tw__xcli_run_stack(tw_xchg *x, const xcli_opts *o)
{
    uint32_t ip;
    tw_error err = {0};
    tw_net_config cfg;
    if (tw_net_parse_ip4(o->ip, &ip) != 0) {
        fprintf(stderr, "tickwire exchange: --ip: '%s' is not an IPv4 address\n", o->ip);
        return 1;
    }
    tw_net_config_init(&cfg, ip);
    if (o->mac && parse_mac(o->mac, cfg.mac) != 0) {
        fprintf(stderr, "tickwire exchange: --mac: '%s' is not a unicast MAC a:b:c:d:e:f\n",
                o->mac);
        return 1;
    }
    int rfd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (rfd < 0 || read(rfd, cfg.isn_secret, sizeof(cfg.isn_secret)) != sizeof(cfg.isn_secret)) {
        fprintf(stderr, "tickwire exchange: cannot read /dev/urandom\n");
        if (rfd >= 0)
            close(rfd);
        return 1;
    }
    close(rfd);
    cfg.max_conns = o->max_conns + 4;
    cfg.ecn = 1;
    /* As the trader's: a few ms of a 500,000-ticks/s stream in flight
     * (the memory is touched only by connections that use it). */
    cfg.rx_buf_bytes = cfg.tx_buf_bytes = 1u << 20;
    tw_port *port = NULL;
    tw_net *st = NULL;
    tw_xchg_net *xn = NULL;
    tw_capture *cap = NULL;
    if (tw__port_open_spec(&port, o->port_spec, 4096, &err) != 0 ||
        (o->pcap && tw_port_capture_open(port, &o->cc, o->port_spec, &cap, &err) != 0) ||
        tw_net_open(&st, port, &cfg, &err) != 0 ||
        tw_xchg_net_open(&xn, x, st, o->port, o->max_conns, OUT_CAP, &err) != 0) {
        fprintf(stderr, "tickwire exchange: %s\n", err.msg);
        if (st)
            tw_net_close(st);
        close_capture(port, cap, 1);
        tw_port_close(port);
        return 1;
    }
    static tw__netdrv drv;
    static venue_poll_ctx vp;
    vp.x = x;
    vp.xn = xn;
    if (tw__netdrv_init(&drv, st, port) != 0 || tw_reactor_add_poll(&drv.r, 0, venue_poll, &vp) != 0) {
        fprintf(stderr, "tickwire exchange: cannot set up the reactor\n");
        tw_xchg_net_close(xn, (int64_t)tw__netdrv_now_ns());
        tw_net_close(st);
        close_capture(port, cap, 1);
        tw_port_close(port);
        return 1;
    }
    printf("tickwire exchange: listening on %s:%u (userspace stack over %s)\n", o->ip, o->port,
           o->port_spec);
    fflush(stdout);
    int stopped = 0;
    int64_t done_at = 0;
    for (;;) {
        int64_t now = (int64_t)tw__netdrv_now_ns();
        if (tw__xcli_signals >= 2)
            break;
        if (tw__xcli_signals && !stopped) {
            tw_xchg_stop(x, now);
            stopped = 1;
        }
        if (tw_xchg_done(x) && !done_at)
            done_at = now;
        if (done_at && now - done_at > 1000000000ll)
            break; /* a second for the last Logouts to leave the stack */
        tw__netdrv_turn(&drv, !o->busy, 1000000);
    }
    const tw_net_stats *ns = tw_net_get_stats(st);
    if (!o->quiet)
        fprintf(stderr,
                "tickwire exchange: stack: rx %llu frames, tx %llu frames, retransmits %llu, "
                "zero-window probes %llu, accepted %llu\n",
                (unsigned long long)ns->rx_frames, (unsigned long long)ns->tx_frames,
                (unsigned long long)ns->retransmits, (unsigned long long)ns->zero_window_probes,
                (unsigned long long)ns->conns_accepted);
    tw_xchg_net_close(xn, (int64_t)tw__netdrv_now_ns());
    tw_net_poll(st, tw__netdrv_now_ns()); /* what closing sent, into the capture too */
    int crc = close_capture(port, cap, o->quiet);
    tw_net_close(st);
    tw_port_close(port);
    return crc ? 1 : 0;
}

#else

int tw__xcli_run_stack(tw_xchg *x, const xcli_opts *o)
{
    (void)x, (void)o;
    fprintf(stderr, "tickwire exchange: this build has no packet ports (--port)\n");
    return 1;
}

#endif
