/* TCP: the application interface (connect, listen, send, receive, close),
 * the connection table, and RFC 6528 initial sequence numbers. */
#include <errno.h>

#include "net/net_internal.h"

static const char *const state_names[] = {
    "CLOSED",   "LISTEN",     "SYN_SENT",   "SYN_RCVD",   "ESTABLISHED", "FIN_WAIT_1",
    "FIN_WAIT_2", "CLOSING",  "TIME_WAIT",  "CLOSE_WAIT", "LAST_ACK",
};

const char *tw_tcp_state_name(tw_tcp_state s)
{
    return (unsigned)s < TW_ARRAY_SIZE(state_names) ? state_names[s] : "?";
}

/* SipHash-2-4 (Aumasson, Bernstein) of the 4-tuple under the secret: the
 * keyed hash F() of RFC 6528, so that an off-path attacker cannot predict
 * our ISNs from another connection's. */
#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                   \
    do {                                                           \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);  \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                     \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                     \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);  \
    } while (0)

static uint64_t siphash_2u64(const uint64_t k[2], uint64_t m0, uint64_t m1)
{
    uint64_t v0 = 0x736f6d6570736575ull ^ k[0], v1 = 0x646f72616e646f6dull ^ k[1];
    uint64_t v2 = 0x6c7967656e657261ull ^ k[0], v3 = 0x7465646279746573ull ^ k[1];
    uint64_t m[3] = {m0, m1, (uint64_t)16 << 56};
    for (int i = 0; i < 3; i++) {
        v3 ^= m[i];
        SIPROUND;
        SIPROUND;
        v0 ^= m[i];
    }
    v2 ^= 0xff;
    for (int i = 0; i < 4; i++)
        SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

uint32_t tw__tcp_isn(const tw_net *st, uint32_t lip, uint16_t lport,
                     uint32_t rip, uint16_t rport, int64_t now_ns)
{
    /* RFC 6528: ISN = M + F(4-tuple, secret), M a 4-microsecond clock. */
    uint64_t f = siphash_2u64(st->cfg.isn_secret, (uint64_t)lip << 32 | rip,
                              (uint64_t)lport << 16 | rport);
    return (uint32_t)(now_ns / 4000) + (uint32_t)f;
}

int tw__tcp_slot_alloc(tw_net *st, tw_tcp_conn *c)
{
    for (unsigned i = 0; i < st->cfg.max_conns; i++)
        if (!st->conns[i]) {
            st->conns[i] = c;
            c->slot = (int)i;
            c->st = st;
            c->rx_size = st->cfg.rx_buf_bytes;
            c->tx_size = st->cfg.tx_buf_bytes;
            c->rx_buf = st->rx_mem + (size_t)i * c->rx_size;
            c->tx_buf = st->tx_mem + (size_t)i * c->tx_size;
            /* Touch every page of both rings now, once per slot: otherwise
             * the first pass of the stream through a ring takes a page
             * fault every 4 KiB (64-byte messages: one in 64 round trips,
             * 1.5% of them, far above p99.9).  Later uses find them mapped. */
            if (!(st->slot_faulted[i / 8] & (1u << (i % 8)))) {
                for (uint32_t o = 0; o < c->rx_size; o += 4096)
                    ((volatile uint8_t *)c->rx_buf)[o] = 0;
                for (uint32_t o = 0; o < c->tx_size; o += 4096)
                    ((volatile uint8_t *)c->tx_buf)[o] = 0;
                st->slot_faulted[i / 8] |= (uint8_t)(1u << (i % 8));
            }
            return 0;
        }
    return -EBUSY;
}

tw_tcp_conn *tw__tcp_lookup(tw_net *st, uint32_t rip, uint16_t rport,
                            uint16_t lport)
{
    for (unsigned i = 0; i < st->cfg.max_conns; i++) {
        tw_tcp_conn *c = st->conns[i];
        if (c && c->state != TW_TCP_CLOSED && c->remote_ip == rip &&
            c->remote_port == rport && c->local_port == lport)
            return c;
    }
    return NULL;
}

void tw__tcp_conn_init_rate(tw_tcp_conn *c, int64_t now_ns)
{
    const tw_net_config *cfg = &c->st->cfg;
    c->rate_Bps = cfg->rate_max_Bps;
    c->tokens = 0;
    c->token_at_ns = now_ns;
    tw__tcp_tokens_refill(c, now_ns);
    c->tokens = UINT64_MAX; /* refill caps it at the bucket size */
    tw__tcp_tokens_refill(c, now_ns);
    c->rate_epoch_ns = now_ns;
}

int tw__tcp_conn_open(tw_net *st, tw_tcp_conn *c, uint32_t rip, uint16_t rport,
                      uint16_t lport, int64_t now_ns)
{
    /* The handle is the caller's: only its callback survives a reuse. */
    tw_tcp_event_cb cb = c->cb;
    void *user = c->user;
    tw_tcp_cfg cfg = c->cfg;
    memset(c, 0, sizeof(*c));
    c->cb = cb;
    c->user = user;
    c->cfg = cfg;
    c->slot = -1;
    if (tw__tcp_slot_alloc(st, c))
        return -EBUSY;
    TW_ASSERT(c->state == TW_TCP_CLOSED && st->conns[c->slot] == c);
    c->local_ip = st->cfg.ip;
    c->remote_ip = rip;
    c->remote_port = rport;
    c->local_port = lport;
    c->mss = st->cfg.mss;
    c->mss_opt = c->mss;
    c->iss = tw__tcp_isn(st, c->local_ip, lport, rip, rport, now_ns);
    /* A per-connection offset for TSval (RFC 7323 5.4), from the ISN hash
     * (port numbers swapped so it is not the ISN itself). */
    c->ts_off = tw__tcp_isn(st, c->local_ip, rport, rip, lport, 0);
    c->snd_una = c->snd_nxt = c->snd_max = c->iss;
    c->snd_end = c->iss + 1; /* data starts after the SYN */
    c->rto_ns = st->cfg.rto_init_ns;
    c->cwnd = 10u * c->mss; /* RFC 6928 initial window */
    c->ssthresh = UINT32_MAX / 2;
    c->rcv_wscale = 0;
    while ((c->rx_size >> c->rcv_wscale) > 65535 && c->rcv_wscale < 14)
        c->rcv_wscale++;
    c->last_rx_ns = now_ns;
    return 0;
}

static int port_in_use(tw_net *st, uint16_t p)
{
    for (unsigned i = 0; i < st->cfg.max_conns; i++)
        if (st->conns[i] && st->conns[i]->local_port == p)
            return 1;
    for (unsigned i = 0; i < st->cfg.max_listeners; i++)
        if (st->listeners[i] && st->listeners[i]->port == p)
            return 1;
    return 0;
}

int tw__tcp_conn_in_use(tw_net *st, const tw_tcp_conn *c)
{
    return c->st == st && c->slot >= 0 &&
           (unsigned)c->slot < st->cfg.max_conns && st->conns[c->slot] == c;
}

int tw_tcp_connect(tw_net *st, tw_tcp_conn *c, uint32_t ip, uint16_t port,
                   uint16_t local_port, int64_t now_ns)
{
    if (tw__tcp_conn_in_use(st, c))
        return -EBUSY;
    if (!ip || !port || ip == st->cfg.ip)
        return -EINVAL;
    if (local_port) {
        if (port_in_use(st, local_port))
            return -EADDRINUSE;
    } else {
        for (int tries = 0; tries < 16384; tries++) {
            uint16_t p = st->next_port;
            st->next_port = (uint16_t)(p == 65535 ? 49152 : p + 1);
            if (!port_in_use(st, p)) {
                local_port = p;
                break;
            }
        }
        if (!local_port)
            return -EADDRINUSE;
    }
    if (tw__tcp_conn_open(st, c, ip, port, local_port, now_ns))
        return -EBUSY;
    tw__tcp_conn_init_rate(c, now_ns);
    c->state = TW_TCP_SYN_SENT;
    c->flags |= TF_SEND_SYN;
    if (st->cfg.ecn)
        c->flags |= TF_ECN; /* requested; cleared if the SYN-ACK says no */
    if (!c->cfg.no_sack)
        c->flags |= TF_SACK; /* offered; the same */
    if (!c->cfg.no_timestamps)
        c->flags |= TF_TS;
    st->stats.conns_opened++;
    tw__tcp_output(c, now_ns);
    tw__net_tx_flush(st);
    return 0;
}

int tw_tcp_listen(tw_net *st, tw_tcp_listener *l, uint16_t port,
                  tw_tcp_accept_cb accept_cb, void *user)
{
    if (!port || !accept_cb)
        return -EINVAL;
    if (port_in_use(st, port))
        return -EADDRINUSE;
    for (unsigned i = 0; i < st->cfg.max_listeners; i++)
        if (!st->listeners[i]) {
            st->listeners[i] = l;
            l->st = st;
            l->accept = accept_cb;
            l->user = user;
            l->port = port;
            l->slot = (int)i;
            return 0;
        }
    return -EBUSY;
}

void tw_tcp_unlisten(tw_tcp_listener *l)
{
    if (l->st && l->slot >= 0 && l->st->listeners[l->slot] == l)
        l->st->listeners[l->slot] = NULL;
    l->slot = -1;
}

void tw_tcp_set_callback(tw_tcp_conn *c, tw_tcp_event_cb cb, void *user)
{
    c->cb = cb;
    c->user = user;
}

unsigned tw_tcp_events(tw_tcp_conn *c)
{
    unsigned e = c->events;
    c->events = 0;
    return e;
}

size_t tw_tcp_readable(const tw_tcp_conn *c)
{
    return c->rx_buf ? (size_t)(c->rx_tail - c->rx_head) : 0;
}

size_t tw_tcp_recv_peek(tw_tcp_conn *c, const uint8_t **p, size_t *len)
{
    size_t n = tw_tcp_readable(c);
    if (!n) {
        *p = NULL;
        *len = 0;
        return 0;
    }
    uint32_t off = (c->rx_head - c->irs - 1) & (c->rx_size - 1);
    if (n > c->rx_size - off)
        n = c->rx_size - off;
    *p = c->rx_buf + off;
    *len = n;
    return n;
}

void tw_tcp_recv_consume(tw_tcp_conn *c, size_t n)
{
    TW_VERIFY(n <= tw_tcp_readable(c));
    c->rx_head += (uint32_t)n;
    if (c->flags & TF_PEER_FIN)
        return; /* nothing more can arrive: no window to advertise */
    /* Advertise the opened window when it grew enough to matter (RFC 1122
     * 4.2.3.3 receiver-side silly window avoidance), and only when the
     * window the peer holds has shrunk to half the buffer or less and the
     * new one is at least twice it (Linux's rule): a reader that keeps up
     * leaves the peer a wide window, and its ACKs carry the new edge
     * anyway, so a pure update would be one more frame per two segments
     * for nothing. */
    uint32_t edge = c->rx_head + c->rx_size;
    uint32_t grown = edge - c->rcv_adv;
    uint32_t held = SEQ_GT(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
    if (SEQ_GT(edge, c->rcv_adv) && (grown >= 2u * c->mss || grown >= c->rx_size / 2) &&
        held <= c->rx_size / 2 && edge - c->rcv_nxt >= 2u * held)
        c->flags |= TF_WND_UPDATE;
}

size_t tw_tcp_writable(const tw_tcp_conn *c)
{
    if (!c->tx_buf)
        return 0;
    return c->tx_size - (size_t)(c->snd_end - tcp_data_una(c));
}

size_t tw_tcp_unacked(const tw_tcp_conn *c)
{
    return (size_t)(c->snd_max - c->snd_una);
}

static int can_send(const tw_tcp_conn *c)
{
    switch (c->state) {
    case TW_TCP_SYN_SENT:
    case TW_TCP_SYN_RCVD:
    case TW_TCP_ESTABLISHED:
    case TW_TCP_CLOSE_WAIT:
        return (c->flags & TF_FIN_PENDING) ? -EPIPE : 0;
    case TW_TCP_CLOSED:
    case TW_TCP_LISTEN:
        return -ENOTCONN;
    default:
        return -EPIPE;
    }
}

size_t tw_tcp_send_reserve(tw_tcp_conn *c, uint8_t **p)
{
    if (can_send(c)) {
        *p = NULL;
        return 0;
    }
    size_t room = tw_tcp_writable(c);
    uint32_t off = (c->snd_end - c->iss - 1) & (c->tx_size - 1);
    if (room > c->tx_size - off)
        room = c->tx_size - off;
    *p = c->tx_buf + off;
    return room;
}

int tw_tcp_send_commit(tw_tcp_conn *c, size_t n, int64_t now_ns)
{
    int r = can_send(c);
    if (r)
        return r;
    if (n > tw_tcp_writable(c))
        return -EINVAL;
    c->snd_end += (uint32_t)n;
    if (c->state == TW_TCP_ESTABLISHED || c->state == TW_TCP_CLOSE_WAIT) {
        tw__tcp_output(c, now_ns);
        tw__net_tx_flush(c->st);
    }
    return 0;
}

long tw_tcp_send(tw_tcp_conn *c, const void *buf, size_t len, int64_t now_ns)
{
    int r = can_send(c);
    if (r)
        return r;
    size_t room = tw_tcp_writable(c);
    if (len > room)
        len = room;
    if (!len)
        return 0;
    uint32_t off = (c->snd_end - c->iss - 1) & (c->tx_size - 1);
    size_t first = c->tx_size - off < len ? c->tx_size - off : len;
    memcpy(c->tx_buf + off, buf, first);
    memcpy(c->tx_buf, (const uint8_t *)buf + first, len - first);
    c->snd_end += (uint32_t)len;
    if (c->state == TW_TCP_ESTABLISHED || c->state == TW_TCP_CLOSE_WAIT) {
        tw__tcp_output(c, now_ns);
        tw__net_tx_flush(c->st);
    }
    return (long)len;
}

void tw__tcp_set_closed(tw_tcp_conn *c, unsigned ev)
{
    c->state = TW_TCP_CLOSED;
    c->rto_at_ns = c->delack_at_ns = c->persist_at_ns = 0;
    c->keepalive_at_ns = c->timewait_at_ns = c->pace_at_ns = 0;
    c->flags &= ~(TF_ACK_NOW | TF_SEND_SYN | TF_WND_UPDATE);
    if (ev)
        tw__net_event(c, ev);
}

int tw_tcp_close(tw_tcp_conn *c, int64_t now_ns)
{
    switch (c->state) {
    case TW_TCP_SYN_SENT:
        tw__tcp_set_closed(c, TW_TCP_EV_CLOSED);
        return 0;
    case TW_TCP_SYN_RCVD:
    case TW_TCP_ESTABLISHED:
        c->state = TW_TCP_FIN_WAIT_1;
        break;
    case TW_TCP_CLOSE_WAIT:
        c->state = TW_TCP_LAST_ACK;
        break;
    case TW_TCP_CLOSED:
    case TW_TCP_LISTEN:
        return -ENOTCONN;
    default:
        return 0; /* already closing */
    }
    c->flags |= TF_FIN_PENDING;
    tw__tcp_output(c, now_ns);
    tw__net_tx_flush(c->st);
    return 0;
}

void tw_tcp_abort(tw_tcp_conn *c, int64_t now_ns)
{
    if (!c->st || !tw__tcp_conn_in_use(c->st, c) || c->state == TW_TCP_CLOSED)
        return;
    if (c->state != TW_TCP_SYN_SENT && c->state != TW_TCP_TIME_WAIT &&
        (c->flags & TF_HDR_READY)) {
        tw__tcp_send_seg(c, c->snd_nxt, 0, TW_TCP_RST, now_ns);
        c->st->stats.tx_rst++;
        tw__net_tx_flush(c->st);
    }
    tw__tcp_set_closed(c, TW_TCP_EV_CLOSED);
}

int tw_tcp_conn_release(tw_tcp_conn *c)
{
    if (c->state != TW_TCP_CLOSED)
        return -EBUSY;
    if (c->st && tw__tcp_conn_in_use(c->st, c))
        c->st->conns[c->slot] = NULL;
    c->slot = -1;
    c->st = NULL;
    c->rx_buf = c->tx_buf = NULL;
    return 0;
}

uint64_t tw_tcp_rate_Bps(const tw_tcp_conn *c)
{
    return c->rate_Bps;
}

void tw_tcp_set_cfg(tw_tcp_conn *c, const tw_tcp_cfg *cfg)
{
    if (cfg)
        c->cfg = *cfg;
    else
        memset(&c->cfg, 0, sizeof(c->cfg));
}

int tw_tcp_sack_on(const tw_tcp_conn *c)
{
    return c->state != TW_TCP_SYN_SENT && (c->flags & TF_SACK) != 0;
}

int tw_tcp_timestamps_on(const tw_tcp_conn *c)
{
    return c->state != TW_TCP_SYN_SENT && (c->flags & TF_TS) != 0;
}
