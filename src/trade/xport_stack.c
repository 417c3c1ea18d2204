/* A session over this project's userspace TCP/IP stack on a port
 * (engine_internal.h, "transports"): AF_XDP, AF_PACKET, DPDK or the
 * simulated network.  The net core's thread owns the stack: each turn it
 * polls it (rx, TCP, timers, tx), copies in-order bytes into rx (a FIX
 * message may straddle the receive ring's wrap), and after the session has
 * written, hands the gathered bytes to the connection and polls once more
 * so that they leave in the same turn.
 *
 * A closed connection finishes its FIN handshake (and TIME_WAIT) in the
 * background while a new one connects: two handles, used in turn, each
 * released back to the stack once CLOSED. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trade/engine_internal.h"

typedef struct xstack {
    tw__xport x; /* first */
    tw_port *port;
    tw_net *st;
    tw_tcp_conn conn[2];
    int busy[2];  /* handle in the stack's table (not yet released) */
    int cur;      /* the handle of the current connection, -1: none */
    uint32_t dst_ip;
    uint16_t dst_port;
} xstack;

/* Gives CLOSED handles back to the stack. */
static void reap(xstack *t)
{
    for (int k = 0; k < 2; k++)
        if (t->busy[k] && k != t->cur && tw_tcp_get_state(&t->conn[k]) == TW_TCP_CLOSED &&
            tw_tcp_conn_release(&t->conn[k]) == 0)
            t->busy[k] = 0;
}

static int st_connect(tw__xport *x, int64_t now_ns)
{
    xstack *t = (xstack *)x;
    TW_ASSERT(x->state == TW__XP_IDLE && t->cur < 0);
    reap(t);
    int k = t->busy[0] ? (t->busy[1] ? -1 : 1) : 0;
    if (k < 0) {
        /* Both still closing (two reconnects within a TIME_WAIT): the
         * older one goes now. */
        k = 0;
        tw_tcp_abort(&t->conn[0], (uint64_t)now_ns);
        (void)tw_tcp_conn_release(&t->conn[0]);
        t->busy[0] = 0;
    }
    memset(&t->conn[k], 0, sizeof(t->conn[k]));
    int rc = tw_tcp_connect(t->st, &t->conn[k], t->dst_ip, t->dst_port, 0, (uint64_t)now_ns);
    if (rc != 0) {
        snprintf(x->why, sizeof(x->why), "tw_tcp_connect: %s", tw_strerror(rc));
        return rc;
    }
    t->busy[k] = 1;
    t->cur = k;
    x->rx_len = 0;
    x->out_off = x->out_len = 0;
    x->state = TW__XP_CONNECTING;
    x->connect_deadline_ns = now_ns + x->connect_timeout_ns;
    return 0;
}

static void st_close(tw__xport *x, int64_t now_ns)
{
    xstack *t = (xstack *)x;
    if (t->cur >= 0) {
        tw_tcp_conn *c = &t->conn[t->cur];
        if (tw_tcp_get_state(c) != TW_TCP_CLOSED)
            (void)tw_tcp_close(c, (uint64_t)now_ns);
        t->cur = -1;
    }
    x->state = TW__XP_IDLE;
}

static unsigned st_io(tw__xport *x, int64_t now_ns, int64_t *wake_ns)
{
    xstack *t = (xstack *)x;
    /* The stamps of what this poll delivers: rx = before the port's rx
     * burst, TCP = after the stack is through with it. */
    uint64_t tsc_rx = tw_tsc_read();
    unsigned frames = tw_net_poll(t->st, (uint64_t)now_ns);
    uint64_t tsc_tcp = frames ? tw_tsc_read() : 0;
    if (*wake_ns > now_ns) { /* else this turn does not wait (reactor.h) */
        uint64_t due = tw_net_next_timer_ns(t->st);
        if (due < (uint64_t)*wake_ns)
            *wake_ns = (int64_t)due;
    }
    reap(t);
    if (t->cur < 0)
        return 0;
    tw_tcp_conn *c = &t->conn[t->cur];
    unsigned tev = tw_tcp_events(c);
    tw_tcp_state s = tw_tcp_get_state(c);
    unsigned ev = 0;
    if (x->state == TW__XP_CONNECTING) {
        if (s == TW_TCP_ESTABLISHED) {
            x->state = TW__XP_UP;
            ev |= TW__XP_EV_UP;
        } else if (s == TW_TCP_CLOSED || (tev & (TW_TCP_EV_RESET | TW_TCP_EV_TIMEOUT))) {
            snprintf(x->why, sizeof(x->why), "connect: %s",
                     (tev & TW_TCP_EV_RESET) ? "refused (reset)" : "failed");
            t->cur = -1;
            x->state = TW__XP_IDLE;
            return TW__XP_EV_DOWN;
        } else if (now_ns >= x->connect_deadline_ns) {
            snprintf(x->why, sizeof(x->why), "connect: timed out");
            tw_tcp_abort(c, (uint64_t)now_ns);
            t->cur = -1;
            x->state = TW__XP_IDLE;
            return TW__XP_EV_DOWN;
        } else {
            return 0;
        }
    }
    const uint8_t *p;
    size_t n;
    while (x->rx_len < x->rx_cap && tw_tcp_recv_peek(c, &p, &n) > 0) {
        if (n > x->rx_cap - x->rx_len)
            n = x->rx_cap - x->rx_len;
        if (!(ev & TW__XP_EV_DATA)) {
            x->tsc_tcp = tsc_tcp ? tsc_tcp : tw_tsc_read();
            x->tsc_rx = tsc_tcp ? tsc_rx : x->tsc_tcp;
        }
        memcpy(x->rx + x->rx_len, p, n);
        x->rx_len += n;
        x->bytes_in += n;
        tw_tcp_recv_consume(c, n);
        ev |= TW__XP_EV_DATA;
    }
    if ((tev & (TW_TCP_EV_RESET | TW_TCP_EV_TIMEOUT | TW_TCP_EV_PEER_FIN)) || s == TW_TCP_CLOSED ||
        s == TW_TCP_CLOSE_WAIT) {
        snprintf(x->why, sizeof(x->why), "%s",
                 (tev & TW_TCP_EV_RESET)     ? "reset by the peer"
                 : (tev & TW_TCP_EV_TIMEOUT) ? "timed out"
                                             : "closed by the peer");
        if (s != TW_TCP_CLOSED)
            (void)tw_tcp_close(c, (uint64_t)now_ns);
        t->cur = -1;
        x->state = TW__XP_IDLE;
        ev |= TW__XP_EV_DOWN;
    }
    return ev;
}

static int st_flush(tw__xport *x, int64_t now_ns)
{
    xstack *t = (xstack *)x;
    if (x->out_len == x->out_off)
        return 0;
    if (x->state != TW__XP_UP || t->cur < 0)
        return -ENOTCONN;
    long n = tw_tcp_send(&t->conn[t->cur], x->out + x->out_off, x->out_len - x->out_off,
                         (uint64_t)now_ns);
    if (n < 0) {
        snprintf(x->why, sizeof(x->why), "tw_tcp_send: %s", tw_strerror((int)n));
        return (int)n;
    }
    x->out_off += (size_t)n;
    x->bytes_out += (uint64_t)n;
    if (x->out_off == x->out_len)
        x->out_off = x->out_len = 0;
    /* Out in this turn, not the next one. */
    (void)tw_net_poll(t->st, (uint64_t)now_ns);
    return 0;
}

static void st_destroy(tw__xport *x)
{
    xstack *t = (xstack *)x;
    tw_net_close(t->st); /* drops what is still open */
    free(x->rx);
    free(x->out);
    free(t);
}

static const tw__xport_ops stack_ops = {
    .name = "userspace stack",
    .connect = st_connect,
    .io = st_io,
    .flush = st_flush,
    .close = st_close,
    .destroy = st_destroy,
};

int tw__xport_stack_open(tw__xport **out, tw_port *port, uint32_t ip, uint32_t prefix,
                         uint32_t gateway, uint32_t dst_ip, uint16_t dst_port, size_t rx_cap,
                         size_t out_cap, int64_t connect_timeout_ns, tw_error *err)
{
    if (!port || prefix == 0 || prefix > 32)
        return tw__err(err, -EINVAL, "userspace stack: no port, or prefix /%u", prefix);
    xstack *t = calloc(1, sizeof(*t));
    if (!t)
        return tw__err(err, -ENOMEM, "out of memory");
    tw_net_config nc;
    tw_net_config_init(&nc, ip);
    nc.netmask = prefix == 32 ? 0xffffffffu : ~((1u << (32 - prefix)) - 1u);
    nc.gateway = gateway;
    nc.max_conns = 4;
    nc.max_listeners = 1;
    /* A kernel socket here grows to MBs (tcp_rmem); 1 MiB each way lets
     * the connection ride out a stall of a few ms of the venue's stream
     * (a page-freeing unlink, a snapshot) without closing the window. */
    nc.rx_buf_bytes = nc.tx_buf_bytes = 1u << 20;
    int rc = tw_net_open(&t->st, port, &nc, err);
    t->x.rx = malloc(rx_cap);
    t->x.out = malloc(out_cap);
    if (rc != 0 || !t->x.rx || !t->x.out) {
        if (t->st)
            tw_net_close(t->st);
        free(t->x.rx);
        free(t->x.out);
        free(t);
        return rc ? rc : tw__err(err, -ENOMEM, "out of memory");
    }
    t->port = port;
    t->cur = -1;
    t->dst_ip = dst_ip;
    t->dst_port = dst_port;
    t->x.ops = &stack_ops;
    t->x.rx_cap = rx_cap;
    t->x.out_cap = out_cap;
    t->x.connect_timeout_ns = connect_timeout_ns;
    t->x.fd = port->ops->rx_fd ? port->ops->rx_fd(port) : -1;
    *out = &t->x;
    return 0;
}
