/* Three stacks on one simulated segment: a server accepting four
 * connections (two from each of two clients, so its connection table and
 * the clients' ephemeral ports are exercised) over lossy, reordering
 * links; each connection moves its own byte stream both ways and closes.
 * Checked: every stream exact, in order, once; every connection closed
 * gracefully; all buffers back in their pools. */
#include "rawpeer.h"

#define NCONN 4
#define BYTES 200000u

static uint8_t stream_byte(unsigned conn, int dir, uint32_t i)
{
    uint32_t x = (i + 1) * 2654435761u ^ (conn * 7919u + (uint32_t)dir * 104729u);
    return (uint8_t)(x >> 13);
}

typedef struct end {
    tw_tcp_conn c;
    unsigned id;     /* stream id: which client connection this is */
    int dir;         /* 0 client->server, 1 server->client */
    uint32_t sent, rcvd;
    int closed;
    int used;
} end;

static end srv[NCONN], cli[NCONN];
static unsigned n_acc;

static tw_tcp_conn *accept_cb(tw_tcp_listener *l, uint32_t ip, uint16_t port, void *u)
{
    (void)l; (void)ip; (void)port; (void)u;
    if (n_acc == NCONN)
        return NULL;
    srv[n_acc].used = 1;
    return &srv[n_acc++].c;
}

static void pump(end *e, uint64_t now, int server)
{
    if (!e->used)
        return;
    tw_tcp_events(&e->c);
    const uint8_t *p;
    size_t n;
    int rdir = !e->dir;
    while (tw_tcp_recv_peek(&e->c, &p, &n)) {
        /* The first 4 bytes of a client->server stream name the stream,
         * so the server side learns which connection it got. */
        for (size_t i = 0; i < n; i++) {
            uint32_t off = e->rcvd + (uint32_t)i;
            if (server && off < 4) {
                e->id |= (unsigned)p[i] << (8 * off);
                continue;
            }
            uint8_t want = stream_byte(e->id, rdir, off);
            CHECKF(p[i] == want, "stream %u dir %d byte %u wrong", e->id, rdir, off);
            if (p[i] != want)
                return; /* the rest of this stream would only fail in its wake */
        }
        e->rcvd += (uint32_t)n;
        tw_tcp_recv_consume(&e->c, n);
    }
    tw_tcp_state s = tw_tcp_get_state(&e->c);
    if (s != TW_TCP_ESTABLISHED && s != TW_TCP_CLOSE_WAIT)
        return;
    if (server && e->rcvd < 4)
        return; /* do not know the stream yet */
    uint8_t buf[4096];
    while (e->sent < BYTES + (e->dir == 0 ? 4u : 0u)) {
        uint32_t k = 0;
        for (; k < sizeof(buf) && e->sent + k < BYTES + (e->dir == 0 ? 4u : 0u); k++) {
            uint32_t off = e->sent + k;
            buf[k] = e->dir == 0 ? (off < 4 ? (uint8_t)(e->id >> (8 * off)) : stream_byte(e->id, 0, off))
                                 : stream_byte(e->id, 1, off);
        }
        long r = tw_tcp_send(&e->c, buf, k, now);
        if (r <= 0)
            break;
        e->sent += (uint32_t)r;
    }
    if (e->sent == BYTES + (e->dir == 0 ? 4u : 0u) && !e->closed) {
        tw_tcp_close(&e->c, now);
        e->closed = 1;
    }
}

int main(void)
{
    tw_sim_net *net;
    tw_error err;
    static const uint8_t mac[3][6] = {{2, 0, 0, 0, 1, 1}, {2, 0, 0, 0, 1, 2}, {2, 0, 0, 0, 1, 3}};
    tw_port *port[3];
    tw_net *st[3];
    if (tw_sim_net_open(&net, 99, 8192, &err))
        return 1;
    tw_sim_link_config L;
    memset(&L, 0, sizeof(L));
    L.delay_min_ns = 20000;
    L.delay_mean_ns = 50000;
    L.loss_ppm = 20000;
    L.dup_ppm = 5000;
    L.reorder_ppm = 50000;
    L.reorder_extra_ns = 300000;
    L.corrupt_ppm = 5000;
    for (int i = 0; i < 3; i++) {
        if (tw_port_sim_open(&port[i], net, mac[i], &L, 1024, &err))
            return 1;
        tw_net_config c;
        tw_net_config_init(&c, 0x0a000101u + (uint32_t)i);
        c.isn_secret[0] = 1000u + (uint64_t)i;
        c.rx_buf_bytes = c.tx_buf_bytes = 32768;
        c.max_conns = 8;
        c.time_wait_ns = 240000000000ull;
        if (tw_net_open(&st[i], port[i], &c, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
    }
    tw_tcp_listener l;
    memset(&l, 0, sizeof(l));
    CHECKF(tw_tcp_listen(st[0], &l, 6000, accept_cb, NULL) == 0, "listen");
    uint64_t now = 1000000000ull;
    for (unsigned k = 0; k < NCONN; k++) {
        cli[k].id = k + 1;
        cli[k].dir = 0;
        cli[k].used = 1;
        CHECKF(tw_tcp_connect(st[1 + k % 2], &cli[k].c, 0x0a000101u, 6000, 0, now) == 0,
               "connect %u", k);
        srv[k].dir = 1;
    }
    CHECKF(cli[0].c.local_port != cli[2].c.local_port, "distinct ephemeral ports");
    int done = 0;
    for (uint64_t step = 0; step < 5000000 && !done; step++) {
        tw_sim_net_advance(net, now);
        for (int i = 0; i < 3; i++)
            while (tw_net_poll(st[i], now))
                ;
        for (unsigned k = 0; k < NCONN; k++) {
            pump(&cli[k], now, 0);
            pump(&srv[k], now, 1);
        }
        done = n_acc == NCONN;
        for (unsigned k = 0; k < NCONN; k++)
            done &= cli[k].c.state == TW_TCP_CLOSED && srv[k].c.state == TW_TCP_CLOSED &&
                    cli[k].rcvd == BYTES && srv[k].rcvd == BYTES + 4;
        uint64_t next = tw_sim_net_next_event_ns(net);
        for (int i = 0; i < 3; i++) {
            uint64_t t = tw_net_next_timer_ns(st[i]);
            if (t < next)
                next = t;
        }
        if (now + 1000000 < next)
            next = now + 1000000;
        now = next > now ? next : now + 1000;
    }
    CHECKF(done, "all four connections completed and closed");
    unsigned seen = 0;
    for (unsigned k = 0; k < NCONN; k++) {
        CHECKF(cli[k].rcvd == BYTES && srv[k].rcvd == BYTES + 4, "conn %u: %u / %u bytes", k,
               cli[k].rcvd, srv[k].rcvd);
        seen |= 1u << srv[k].id;
        CHECKF(tw_tcp_conn_release(&cli[k].c) == 0 && tw_tcp_conn_release(&srv[k].c) == 0,
               "release %u", k);
    }
    CHECKF(seen == 0x1e, "server saw streams 1..4: %x", seen);
    for (int i = 0; i < 3; i++) {
        tw_net_poll(st[i], now);
        CHECKF(tw_sim_port_pool_free(port[i]) == tw_sim_port_pool_size(port[i]), "pool %d full", i);
        tw_net_close(st[i]);
    }
    tw_sim_net_close(net);
    return tw_check_done("net_multi_test");
}
