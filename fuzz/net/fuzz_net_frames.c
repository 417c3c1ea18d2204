/* libFuzzer target: arbitrary frames into a stack that has an open TCP
 * connection (and a listener), over the sim network.
 *
 * Input: a sequence of records [flags:1][len:2 big-endian][len bytes].
 *   flags bit 0: fix the IPv4 and TCP checksums of the frame first
 *   flags bit 1: rebase TCP seq/ack on the connection (seq += rcv_nxt,
 *                ack += snd_una) so mutations reach in-window states
 *   flags bit 2: then advance virtual time by 50 ms (timers run)
 *   flags bit 3: then let the application read, write and maybe close
 * A trailing partial record is ignored.  After every record the harness
 * checks the stack's invariants; at the end every sim buffer must be back
 * in its pool. */
#include <stdint.h>
#include <string.h>

#include "tickwire/net.h"
#include "tickwire/net_sim.h"
#include "tickwire/net_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_US 0x0a000001u
#define FZ_PEER 0x0a000002u

static tw_tcp_conn g_acc;
static int g_acc_used;
static tw_tcp_conn *acc(tw_tcp_listener *l, uint32_t ip, uint16_t port, void *u)
{
    (void)l; (void)ip; (void)port; (void)u;
    if (g_acc_used)
        return NULL;
    g_acc_used = 1;
    memset(&g_acc, 0, sizeof(g_acc));
    return &g_acc;
}

static void fix_frame(uint8_t *f, uint32_t len, const tw_tcp_conn *c, int fix, int rebase)
{
    tw_net_parsed pp;
    if (tw_net_parse(f, len, &pp) < 0 || !pp.ip)
        return;
    tw_ipv4_hdr *ip = (tw_ipv4_hdr *)(uintptr_t)pp.ip;
    if (pp.tcp) {
        tw_tcp_hdr *t = (tw_tcp_hdr *)(uintptr_t)pp.tcp;
        if (rebase && c->state != TW_TCP_CLOSED) {
            t->seq_be = tw_htobe32(tw_be32(t->seq_be) + c->rcv_nxt);
            t->ack_be = tw_htobe32(tw_be32(t->ack_be) + c->snd_una);
        }
        if (fix) {
            t->cksum = 0;
            tw_ipv4_pseudo_hdr ph = {ip->src_be, ip->dst_be, 0, 6,
                                     tw_htobe16((uint16_t)pp.l4_len)};
            t->cksum = tw_net_csum_fold(
                tw_net_csum_add(tw_net_csum_add(0, &ph, sizeof(ph)), t, pp.l4_len));
        }
    }
    if (fix) {
        ip->cksum = 0;
        ip->cksum = tw_net_csum_fold(tw_net_csum_add(0, ip, pp.ip_hlen));
    }
}

static void check(const tw_tcp_conn *c)
{
    TW_VERIFY(c->state <= TW_TCP_LAST_ACK);
    if (c->rx_buf) {
        TW_VERIFY(tw_tcp_readable(c) <= c->rx_size);
        TW_VERIFY(c->ooo_n <= TW_ARRAY_SIZE(c->ooo));
        TW_VERIFY(tw_tcp_writable(c) <= c->tx_size);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t mu[6] = {2, 0, 0, 0, 0, 1}, mp[6] = {2, 0, 0, 0, 0, 2},
                         mx[6] = {2, 0, 0, 0, 0, 3};
    tw_sim_net *net;
    tw_port *pu, *pp, *px;
    tw_error err;
    TW_VERIFY(tw_sim_net_open(&net, 7, 512, &err) == 0);
    TW_VERIFY(tw_port_sim_open(&pu, net, mu, NULL, 128, &err) == 0);
    TW_VERIFY(tw_port_sim_open(&pp, net, mp, NULL, 128, &err) == 0);
    TW_VERIFY(tw_port_sim_open(&px, net, mx, NULL, 128, &err) == 0);
    tw_net_config cu, cp;
    tw_net_config_init(&cu, FZ_US);
    tw_net_config_init(&cp, FZ_PEER);
    cu.rx_buf_bytes = cu.tx_buf_bytes = cp.rx_buf_bytes = cp.tx_buf_bytes = 8192;
    cu.max_conns = cp.max_conns = 4;
    cu.ecn = cp.ecn = 1;
    cu.keepalive_idle_ns = 200000000ull;
    cu.isn_secret[0] = cp.isn_secret[0] = 1; /* reproducible runs */
    tw_net *su, *sp;
    TW_VERIFY(tw_net_open(&su, pu, &cu, &err) == 0);
    TW_VERIFY(tw_net_open(&sp, pp, &cp, &err) == 0);
    tw_net_arp_add(su, FZ_PEER, mp);
    tw_net_arp_add(sp, FZ_US, mu);
    tw_tcp_listener l;
    memset(&l, 0, sizeof(l));
    g_acc_used = 0;
    TW_VERIFY(tw_tcp_listen(su, &l, 5000, acc, NULL) == 0);
    tw_tcp_conn pc;
    memset(&pc, 0, sizeof(pc));
    uint64_t now = 1000000000ull;
    TW_VERIFY(tw_tcp_connect(sp, &pc, FZ_US, 5000, 40000, now) == 0);
    for (int i = 0; i < 20; i++) {
        now += 10000;
        tw_sim_net_advance(net, now);
        tw_net_poll(su, now);
        tw_net_poll(sp, now);
    }
    TW_VERIFY(g_acc_used && g_acc.state == TW_TCP_ESTABLISHED);
    tw_tcp_send(&pc, "hello", 5, now);
    tw_tcp_send(&g_acc, "world", 5, now);
    /* From here on the real peer is cut off; the fuzzer speaks for it. */
    tw_sim_port_partition(pp, 1);
    size_t off = 0;
    unsigned records = 0;
    while (off + 3 <= size && records++ < 256) {
        uint8_t flags = data[off];
        uint32_t len = (uint32_t)(data[off + 1] << 8 | data[off + 2]);
        off += 3;
        if (len > size - off)
            len = (uint32_t)(size - off);
        if (len > TW_PORT_MTU_FRAME)
            len = TW_PORT_MTU_FRAME;
        tw_pkt pkt;
        if (tw_port_alloc_burst(px, &pkt, 1) == 1) {
            memcpy(pkt.data, data + off, len);
            pkt.len = len;
            fix_frame(pkt.data, len, &g_acc, flags & 1, flags & 2);
            tw_port_tx_burst(px, &pkt, 1);
        }
        off += len;
        if (flags & 4)
            now += 50000000ull;
        else
            now += 1000;
        tw_sim_net_advance(net, now);
        tw_net_poll(su, now);
        if (flags & 8) {
            const uint8_t *p;
            size_t n;
            while (tw_tcp_recv_peek(&g_acc, &p, &n))
                tw_tcp_recv_consume(&g_acc, n);
            if (tw_tcp_send(&g_acc, data, size < 3000 ? size : 3000, now) < 0 &&
                g_acc.state == TW_TCP_ESTABLISHED)
                TW_VERIFY(0);
            if (flags & 16)
                tw_tcp_close(&g_acc, now);
        }
        check(&g_acc);
        /* Drain what the stack sent so the pools cycle. */
        tw_pkt out[32];
        unsigned k;
        while ((k = tw_port_rx_burst(px, out, 32)))
            tw_port_free_burst(px, out, k);
    }
    /* Let timers run out, then nothing may be left outside the pools. */
    for (int i = 0; i < 5; i++) {
        now += 1000000000ull;
        tw_sim_net_advance(net, now);
        tw_net_poll(su, now);
        tw_net_poll(sp, now);
        check(&g_acc);
    }
    tw_tcp_abort(&g_acc, now);
    tw_tcp_abort(&pc, now);
    now += 1000000000ull;
    tw_sim_net_advance(net, now);
    tw_pkt out[32];
    unsigned k;
    while ((k = tw_port_rx_burst(px, out, 32)))
        tw_port_free_burst(px, out, k);
    tw_net_poll(su, now);
    tw_net_poll(sp, now);
    TW_VERIFY(tw_sim_port_pool_free(pu) == tw_sim_port_pool_size(pu));
    TW_VERIFY(tw_sim_port_pool_free(pp) == tw_sim_port_pool_size(pp));
    TW_VERIFY(tw_sim_port_pool_free(px) == tw_sim_port_pool_size(px));
    tw_net_close(su);
    tw_net_close(sp);
    tw_sim_net_close(net);
    return 0;
}
