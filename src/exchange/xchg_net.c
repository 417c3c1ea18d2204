/* The venue over this project's userspace TCP/IP stack (tw_xchg_net in
 * tickwire/exchange.h): a tw_net listener whose connections are the
 * venue's byte streams.  No clock, no system call: the caller's loop runs
 * tw_net_poll, then this, then tw_xchg_poll, with the same now_ns.  The
 * same code serves AF_PACKET, AF_XDP, DPDK and the simulated network. */
#include <errno.h>
#include <string.h>

#include "exchange/exchange_internal.h"
#include "tickwire/net.h"

#define CLOSE_FLUSH_NS 2000000000ll /* a closing connection's output gets this long */

typedef struct xn_conn {
    tw_tcp_conn tcp;         /* the stack's connection (caller memory) */
    tw_xchg_net *xn;
    tw_xchg_conn *xc;        /* the venue's handle; NULL once either side closed */
    int used;                /* slot holds a connection not yet released */
    int closing;             /* the venue closed: flush, then FIN */
    int64_t closing_since_ns;
    char *out;               /* bytes the retransmit ring could not take yet */
    size_t out_len;
} xn_conn;

struct tw_xchg_net {
    tw_xchg *x;
    tw_net *st;
    tw_tcp_listener l;
    xn_conn *c;
    unsigned n;
    size_t out_cap;
    int64_t now_ns; /* monotonic: the time of the call in progress */
    char *out_mem;
};

/* Gathers: tw_xchg_net_poll hands what the venue wrote to the stack once
 * per turn (one segment for a bar's X and TestRequest, not two). */
static int n_write(void *ctx, const char *buf, size_t len)
{
    xn_conn *c = ctx;
    tw_xchg_net *xn = c->xn;
    if (c->closing || tw_tcp_get_state(&c->tcp) == TW_TCP_CLOSED)
        return -EPIPE;
    if (len > xn->out_cap - c->out_len)
        return -ENOBUFS; /* the peer is not reading: the session closes */
    memcpy(c->out + c->out_len, buf, len);
    c->out_len += len;
    return 0;
}

static void n_close(void *ctx)
{
    xn_conn *c = ctx;
    c->xc = NULL;
    c->closing = 1;
    c->closing_since_ns = c->xn->now_ns;
}

static size_t n_backlog(void *ctx)
{
    return ((xn_conn *)ctx)->out_len;
}

static tw_tcp_conn *n_accept(tw_tcp_listener *l, uint32_t ip, uint16_t port, void *user)
{
    tw_xchg_net *xn = user;
    (void)l, (void)ip, (void)port;
    for (unsigned i = 0; i < xn->n; i++) {
        xn_conn *c = &xn->c[i];
        if (c->used)
            continue;
        char *out = c->out;
        memset(c, 0, sizeof(*c));
        c->out = out;
        c->xn = xn;
        tw_fix_stream io = {.write = n_write, .close = n_close, .ctx = c};
        if (tw_xchg_conn_open(xn->x, &io, n_backlog, xn->now_ns, &c->xc) != 0)
            return NULL; /* the venue is full: refused (RST) */
        c->used = 1;
        return &c->tcp;
    }
    return NULL;
}

int tw_xchg_net_open(tw_xchg_net **out, tw_xchg *x, tw_net *st, uint16_t port,
                     unsigned max_conns, size_t out_cap, tw_error *err)
{
    *out = NULL;
    if (max_conns == 0 || max_conns > 1024 || out_cap == 0)
        return tw__err(err, -EINVAL, "exchange net: max_conns 1-1024 and out_cap > 0");
    tw_xchg_net *xn = calloc(1, sizeof(*xn));
    if (!xn)
        return tw__err(err, -ENOMEM, "exchange net: out of memory");
    xn->c = calloc(max_conns, sizeof(*xn->c));
    xn->out_mem = malloc((size_t)max_conns * out_cap);
    if (!xn->c || !xn->out_mem) {
        free(xn->c);
        free(xn->out_mem);
        free(xn);
        return tw__err(err, -ENOMEM, "exchange net: out of memory");
    }
    xn->x = x;
    xn->st = st;
    xn->n = max_conns;
    xn->out_cap = out_cap;
    for (unsigned i = 0; i < max_conns; i++)
        xn->c[i].out = xn->out_mem + (size_t)i * out_cap;
    int rc = tw_tcp_listen(st, &xn->l, port, n_accept, xn);
    if (rc != 0) {
        free(xn->c);
        free(xn->out_mem);
        free(xn);
        return tw__err(err, rc, "exchange net: cannot listen on port %u: %s", port,
                       tw_strerror(rc));
    }
    *out = xn;
    return 0;
}

static void flush(xn_conn *c, int64_t now_ns)
{
    size_t off = 0;
    while (off < c->out_len) {
        long k = tw_tcp_send(&c->tcp, c->out + off, c->out_len - off, (uint64_t)now_ns);
        if (k <= 0)
            break;
        off += (size_t)k;
    }
    memmove(c->out, c->out + off, c->out_len - off);
    c->out_len -= off;
}

unsigned tw_xchg_net_poll(tw_xchg_net *xn, int64_t now_ns)
{
    xn->now_ns = now_ns;
    unsigned busy = 0;
    for (unsigned i = 0; i < xn->n; i++) {
        xn_conn *c = &xn->c[i];
        if (!c->used)
            continue;
        unsigned ev = tw_tcp_events(&c->tcp);
        tw_tcp_state stt = tw_tcp_get_state(&c->tcp);
        if (c->out_len) {
            flush(c, now_ns);
            busy++;
        }
        /* Received bytes go to the venue unless the slow fault holds them
         * in the stack's ring (whose window then closes). */
        while (c->xc && tw_xchg_conn_read_at(c->xc) <= now_ns &&
               tw_tcp_readable(&c->tcp) > 0) {
            const uint8_t *p;
            size_t len;
            tw_tcp_recv_peek(&c->tcp, &p, &len);
            size_t k = tw_xchg_conn_input(xn->x, c->xc, p, len, now_ns);
            tw_tcp_recv_consume(&c->tcp, k);
            busy++;
            if (k < len)
                break;
        }
        int gone = (ev & (TW_TCP_EV_RESET | TW_TCP_EV_TIMEOUT | TW_TCP_EV_CLOSED)) ||
                   stt == TW_TCP_CLOSED;
        int peer_fin = (ev & TW_TCP_EV_PEER_FIN) || stt == TW_TCP_CLOSE_WAIT ||
                       stt == TW_TCP_LAST_ACK || stt == TW_TCP_TIME_WAIT ||
                       stt == TW_TCP_CLOSING;
        if (c->out_len)
            flush(c, now_ns); /* what the venue wrote while reading */
        if (c->xc && (gone || (peer_fin && tw_tcp_readable(&c->tcp) == 0))) {
            tw_xchg_conn_closed(xn->x, c->xc, now_ns);
            c->xc = NULL;
            c->closing = 1;
            c->closing_since_ns = now_ns;
        }
        if (c->closing && stt != TW_TCP_CLOSED) {
            if (c->out_len == 0 && (stt == TW_TCP_ESTABLISHED || stt == TW_TCP_CLOSE_WAIT ||
                                    stt == TW_TCP_SYN_RCVD))
                tw_tcp_close(&c->tcp, (uint64_t)now_ns);
            else if (now_ns - c->closing_since_ns > CLOSE_FLUSH_NS &&
                     (c->out_len || stt == TW_TCP_FIN_WAIT_1 || stt == TW_TCP_LAST_ACK))
                tw_tcp_abort(&c->tcp, (uint64_t)now_ns);
        }
        if (tw_tcp_get_state(&c->tcp) == TW_TCP_CLOSED) {
            if (c->xc) {
                tw_xchg_conn_closed(xn->x, c->xc, now_ns);
                c->xc = NULL;
            }
            if (tw_tcp_conn_release(&c->tcp) == 0) {
                c->used = 0;
                c->out_len = 0;
                c->closing = 0;
            }
        }
    }
    return busy;
}

void tw_xchg_net_close(tw_xchg_net *xn, int64_t now_ns)
{
    if (!xn)
        return;
    tw_tcp_unlisten(&xn->l);
    for (unsigned i = 0; i < xn->n; i++) {
        xn_conn *c = &xn->c[i];
        if (!c->used)
            continue;
        if (c->xc)
            tw_xchg_conn_closed(xn->x, c->xc, now_ns);
        tw_tcp_abort(&c->tcp, (uint64_t)now_ns);
        tw_tcp_conn_release(&c->tcp);
    }
    free(xn->c);
    free(xn->out_mem);
    free(xn);
}
