/* The stack object: configuration, memory (all of it allocated here), the
 * transmit queue, ARP, and the poll loop that ties input, timers and
 * output together. */
#include <errno.h>
#include <stdio.h>
#include <sys/random.h>

#include "net/net_internal.h"

void tw_net_config_init(tw_net_config *cfg, uint32_t ip)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->ip = ip;
}

int tw_net_parse_ip4(const char *s, uint32_t *ip)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        if (*s < '0' || *s > '9')
            return -EINVAL;
        uint32_t o = 0;
        int digits = 0;
        while (*s >= '0' && *s <= '9') {
            o = o * 10 + (uint32_t)(*s++ - '0');
            if (++digits > 3 || o > 255)
                return -EINVAL;
        }
        v = v << 8 | o;
        if (i < 3 && *s++ != '.')
            return -EINVAL;
    }
    if (*s)
        return -EINVAL;
    *ip = v;
    return 0;
}

char *tw_net_format_ip4(uint32_t ip, char *buf)
{
    snprintf(buf, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255,
             (ip >> 8) & 255, ip & 255);
    return buf;
}

static int pow2(unsigned v) { return v && !(v & (v - 1)); }

int tw_net_open(tw_net **out, tw_port *port, const tw_net_config *in,
                tw_error *err)
{
    *out = NULL;
    if (!port)
        return tw__err(err, -EINVAL, "net: no port");
    if (!in->ip)
        return tw__err(err, -EINVAL, "net: config ip is 0");
    tw_net_config c = *in;
    if (!c.netmask)
        c.netmask = 0xffffff00u;
    if (!c.max_conns)
        c.max_conns = 16;
    if (!c.max_listeners)
        c.max_listeners = 4;
    if (!c.rx_buf_bytes)
        c.rx_buf_bytes = 256 * 1024;
    if (!c.tx_buf_bytes)
        c.tx_buf_bytes = 256 * 1024;
    if (!c.arp_entries)
        c.arp_entries = 16;
    if (!c.tx_burst)
        c.tx_burst = 32;
    if (c.tx_burst > TW_NET_MAX_BURST)
        return tw__err(err, -EINVAL, "net: tx_burst %u > %u", c.tx_burst,
                       TW_NET_MAX_BURST);
    if (!pow2(c.rx_buf_bytes) || c.rx_buf_bytes < 4096 ||
        c.rx_buf_bytes > (1u << 30))
        return tw__err(err, -EINVAL,
                       "net: rx_buf_bytes %u not a power of two in [4 KiB, 1 GiB]",
                       c.rx_buf_bytes);
    if (!pow2(c.tx_buf_bytes) || c.tx_buf_bytes < 4096 ||
        c.tx_buf_bytes > (1u << 30))
        return tw__err(err, -EINVAL,
                       "net: tx_buf_bytes %u not a power of two in [4 KiB, 1 GiB]",
                       c.tx_buf_bytes);
    if (c.max_conns > 4096)
        return tw__err(err, -EINVAL, "net: max_conns %u > 4096", c.max_conns);
    unsigned mtu = port->mtu ? port->mtu : 1500;
    if (mtu < 576 || mtu > 9000)
        return tw__err(err, -EINVAL, "net: port mtu %u outside [576, 9000]", mtu);
    if (!c.mss || c.mss > mtu - 40)
        c.mss = (uint16_t)(mtu - 40);
    if (c.mss < 64)
        return tw__err(err, -EINVAL, "net: mss %u < 64", c.mss);
    if (!c.rto_init_ns)
        c.rto_init_ns = 1000000000ull;
    if (!c.rto_min_ns)
        c.rto_min_ns = 200000000ull;
    if (!c.rto_max_ns)
        c.rto_max_ns = 60000000000ull;
    if (!c.delack_ns)
        c.delack_ns = 1000000ull;
    if (!c.loss_rtt_pct)
        c.loss_rtt_pct = 200;
    if (!c.keepalive_intvl_ns)
        c.keepalive_intvl_ns = 75000000000ull;
    if (!c.keepalive_probes)
        c.keepalive_probes = 9;
    if (!c.max_retries)
        c.max_retries = 12;
    if (!c.time_wait_ns)
        c.time_wait_ns = 1000000000ull;
    if (!c.rate_max_Bps)
        c.rate_max_Bps = 1250000000ull;
    if (!c.rate_min_Bps)
        c.rate_min_Bps = 1250000ull;
    if (c.rate_min_Bps > c.rate_max_Bps)
        c.rate_min_Bps = c.rate_max_Bps;
    if (!c.isn_secret[0] && !c.isn_secret[1]) {
        /* RFC 6528 needs a secret an attacker cannot guess; tests that want
         * reproducible ISNs set one.  Init time, so a system call is fine. */
        if (getrandom(c.isn_secret, sizeof(c.isn_secret), 0) != (ssize_t)sizeof(c.isn_secret))
            return tw__err(err, -EIO, "net: getrandom failed for the ISN secret");
    }
    if (!c.rate_add_Bps)
        c.rate_add_Bps = c.rate_max_Bps / 64 ? c.rate_max_Bps / 64 : 1;

    tw_net *st = calloc(1, sizeof(*st));
    if (!st)
        return tw__err(err, -ENOMEM, "net: out of memory");
    st->port = port;
    st->cfg = c;
    static const uint8_t zero[6];
    memcpy(st->mac, memcmp(c.mac, zero, 6) ? c.mac : port->mac, 6);
    st->next_port = (uint16_t)(49152 + (c.isn_secret[0] % 16384));
    st->arp = calloc(c.arp_entries, sizeof(*st->arp));
    st->conns = calloc(c.max_conns, sizeof(*st->conns));
    st->listeners = calloc(c.max_listeners, sizeof(*st->listeners));
    st->rx_mem = malloc((size_t)c.max_conns * c.rx_buf_bytes);
    st->tx_mem = malloc((size_t)c.max_conns * c.tx_buf_bytes);
    st->txq = calloc(c.tx_burst, sizeof(*st->txq));
    if (!st->arp || !st->conns || !st->listeners || !st->rx_mem ||
        !st->tx_mem || !st->txq) {
        tw_net_close(st);
        return tw__err(err, -ENOMEM,
                       "net: cannot allocate %u conns x (%u + %u) bytes of rings",
                       c.max_conns, c.rx_buf_bytes, c.tx_buf_bytes);
    }
    *out = st;
    return 0;
}

void tw_net_close(tw_net *st)
{
    if (!st)
        return;
    if (st->txq && st->txq_n)
        tw_port_free_burst(st->port, st->txq, st->txq_n);
    if (st->conns)
        for (unsigned i = 0; i < st->cfg.max_conns; i++)
            if (st->conns[i]) {
                st->conns[i]->slot = -1;
                st->conns[i]->state = TW_TCP_CLOSED;
                st->conns[i]->st = NULL;
            }
    free(st->arp);
    free(st->conns);
    free(st->listeners);
    free(st->rx_mem);
    free(st->tx_mem);
    free(st->txq);
    free(st);
}

const tw_net_stats *tw_net_get_stats(const tw_net *st)
{
    return &st->stats;
}

uint64_t tw_net_stats_rx_broken(const tw_net_stats *s)
{
    return s->rx_eth_bad + s->rx_arp_bad + s->rx_ip_bad + s->rx_ip_cksum_bad + s->rx_icmp_bad +
           s->rx_tcp_bad + s->rx_tcp_cksum_bad;
}

size_t tw_net_stats_rx_refused(const tw_net_stats *s, char *buf, size_t cap)
{
    int n = snprintf(
        buf, cap,
        "broken %llu (eth %llu, arp %llu, ip %llu, ip cksum %llu, icmp %llu, tcp %llu, "
        "tcp cksum %llu), spoofed source %llu, own frames back %llu; not for us %llu "
        "(other mac %llu, multicast %llu, other ethertype %llu, other ip %llu)",
        (unsigned long long)tw_net_stats_rx_broken(s), (unsigned long long)s->rx_eth_bad,
        (unsigned long long)s->rx_arp_bad, (unsigned long long)s->rx_ip_bad,
        (unsigned long long)s->rx_ip_cksum_bad, (unsigned long long)s->rx_icmp_bad,
        (unsigned long long)s->rx_tcp_bad, (unsigned long long)s->rx_tcp_cksum_bad,
        (unsigned long long)s->rx_ip_src_bad, (unsigned long long)s->rx_own_src,
        (unsigned long long)s->rx_not_for_us, (unsigned long long)s->rx_mac_other,
        (unsigned long long)s->rx_mcast, (unsigned long long)s->rx_eth_other,
        (unsigned long long)s->rx_ip_other);
    if (n < 0)
        n = 0;
    return (size_t)n < cap ? (size_t)n : (cap ? cap - 1 : 0);
}

/* ---- transmit queue ---------------------------------------------------- */

int tw__net_alloc(tw_net *st, tw_pkt *pkt)
{
    if (tw_port_alloc_burst(st->port, pkt, 1) != 1) {
        st->stats.tx_fail++;
        return -ENOBUFS;
    }
    TW_VERIFY(pkt->room >= TW_PORT_MTU_FRAME);
    pkt->ol_flags = 0;
    return 0;
}

void tw__net_tx_flush(tw_net *st)
{
    unsigned n = st->txq_n;
    if (!n)
        return;
    unsigned sent = 0;
    /* Bounded: a port that takes nothing twice in a row is full; the rest
     * is dropped (TCP retransmits). */
    for (int tries = 0; tries < 2 && sent < n; tries++)
        sent += tw_port_tx_burst(st->port, st->txq + sent, n - sent);
    if (sent < n) {
        st->stats.tx_fail += n - sent;
        tw_port_free_burst(st->port, st->txq + sent, n - sent);
    }
    st->stats.tx_frames += sent;
    st->txq_n = 0;
    tw_port_poll(st->port);
}

void tw__net_tx(tw_net *st, tw_pkt *pkt)
{
    st->stats.tx_bytes += pkt->len;
    st->txq[st->txq_n++] = *pkt;
    if (st->txq_n == st->cfg.tx_burst)
        tw__net_tx_flush(st);
}

/* ---- ARP --------------------------------------------------------------- */

static arp_entry *arp_find(tw_net *st, uint32_t ip)
{
    for (unsigned i = 0; i < st->cfg.arp_entries; i++)
        if (st->arp[i].state != ARP_FREE && st->arp[i].ip == ip)
            return &st->arp[i];
    return NULL;
}

static arp_entry *arp_slot(tw_net *st, uint32_t ip)
{
    arp_entry *e = arp_find(st, ip);
    if (e)
        return e;
    for (unsigned i = 0; i < st->cfg.arp_entries; i++)
        if (st->arp[i].state == ARP_FREE) {
            st->arp[i].ip = ip;
            return &st->arp[i];
        }
    /* Full: reuse a pending entry before a resolved one; static ones stay. */
    for (unsigned i = 0; i < st->cfg.arp_entries; i++)
        if (st->arp[i].state == ARP_PENDING) {
            st->arp[i].ip = ip;
            return &st->arp[i];
        }
    st->stats.arp_table_full++;
    return NULL;
}

int tw_net_arp_add(tw_net *st, uint32_t ip, const uint8_t mac[6])
{
    arp_entry *e = arp_slot(st, ip);
    if (!e)
        return -ENOSPC;
    memcpy(e->mac, mac, 6);
    e->state = ARP_STATIC;
    return 0;
}

static void arp_send(tw_net *st, uint16_t op, const uint8_t dmac[6],
                     uint32_t tip, const uint8_t tha[6])
{
    tw_pkt pkt;
    if (tw__net_alloc(st, &pkt))
        return;
    tw_eth_hdr *eth = (tw_eth_hdr *)pkt.data;
    memcpy(eth->dst, dmac, 6);
    memcpy(eth->src, st->mac, 6);
    eth->type_be = tw_htobe16(TW_ETHERTYPE_ARP);
    tw_arp_hdr *a = (tw_arp_hdr *)(eth + 1);
    a->htype_be = tw_htobe16(TW_ARP_HTYPE_ETH);
    a->ptype_be = tw_htobe16(TW_ETHERTYPE_IPV4);
    a->hlen = 6;
    a->plen = 4;
    a->op_be = tw_htobe16(op);
    memcpy(a->sha, st->mac, 6);
    a->spa_be = tw_htobe32(st->cfg.ip);
    memcpy(a->tha, tha, 6);
    a->tpa_be = tw_htobe32(tip);
    /* Pad to the 60-byte Ethernet minimum. */
    memset(pkt.data + 42, 0, 18);
    pkt.len = 60;
    if (op == TW_ARP_OP_REPLY)
        st->stats.arp_replies_sent++;
    else
        st->stats.arp_requests_sent++;
    tw__net_tx(st, &pkt);
}

static uint32_t next_hop(const tw_net *st, uint32_t ip)
{
    if ((ip & st->cfg.netmask) != (st->cfg.ip & st->cfg.netmask) && st->cfg.gateway)
        return st->cfg.gateway;
    return ip;
}

int tw__net_arp_lookup(tw_net *st, uint32_t ip, uint8_t mac[6])
{
    arp_entry *e = arp_find(st, next_hop(st, ip));
    if (!e || e->state < ARP_OK)
        return -ENOENT;
    memcpy(mac, e->mac, 6);
    return 0;
}

int tw__net_resolve(tw_net *st, uint32_t ip, uint8_t mac[6], int64_t now_ns)
{
    uint32_t hop = next_hop(st, ip);
    arp_entry *e = arp_find(st, hop);
    if (e && e->state >= ARP_OK) {
        memcpy(mac, e->mac, 6);
        return 0;
    }
    if (!e) {
        e = arp_slot(st, hop);
        if (!e)
            return -EAGAIN;
        e->state = ARP_PENDING;
        e->req_ns = 0;
    }
    /* One request per 100 ms per address: retries come from TCP's RTO. */
    if (!e->req_ns || now_ns - e->req_ns >= 100000000ull) {
        static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
        static const uint8_t zero[6];
        e->req_ns = now_ns ? now_ns : 1;
        arp_send(st, TW_ARP_OP_REQUEST, bcast, hop, zero);
    }
    return -EAGAIN;
}

void tw__net_arp_input(tw_net *st, const tw_arp_hdr *a, int64_t now_ns)
{
    st->stats.rx_arp++;
    if (tw_be16(a->htype_be) != TW_ARP_HTYPE_ETH ||
        tw_be16(a->ptype_be) != TW_ETHERTYPE_IPV4 || a->hlen != 6 ||
        a->plen != 4) {
        st->stats.rx_arp_bad++;
        return;
    }
    uint16_t op = tw_be16(a->op_be);
    uint32_t spa = tw_be32(a->spa_be), tpa = tw_be32(a->tpa_be);
    if (op != TW_ARP_OP_REQUEST && op != TW_ARP_OP_REPLY) {
        st->stats.rx_arp_bad++;
        return;
    }
    if (a->sha[0] & 1) { /* a multicast sender MAC is never valid */
        st->stats.rx_arp_bad++;
        return;
    }
    /* RFC 826: update an entry we already have; add one when the frame
     * is for us (a request for our IP, or a reply to our request). */
    arp_entry *e = arp_find(st, spa);
    if (e && e->state != ARP_STATIC) {
        if (e->state == ARP_PENDING)
            st->stats.arp_resolved++;
        memcpy(e->mac, a->sha, 6);
        e->state = ARP_OK;
    } else if (!e && tpa == st->cfg.ip && spa) {
        e = arp_slot(st, spa);
        if (e) {
            memcpy(e->mac, a->sha, 6);
            e->state = ARP_OK;
        }
    }
    if (op == TW_ARP_OP_REQUEST && tpa == st->cfg.ip)
        arp_send(st, TW_ARP_OP_REPLY, a->sha, spa, a->sha);
}

/* ---- events and the loop ----------------------------------------------- */

void tw__net_event(tw_tcp_conn *c, unsigned ev)
{
    c->events |= ev;
    if (c->cb)
        c->cb(c, ev, c->user);
}

#define TIMER_DEFER_MAX 4u

unsigned tw_net_poll(tw_net *st, int64_t now_ns)
{
    tw_pkt rx[TW_NET_MAX_BURST];
    st->now_ns = now_ns;
    unsigned n = tw_port_rx_burst(st->port, rx, st->cfg.tx_burst);
    for (unsigned i = 0; i < n; i++)
        tw__net_input(st, &rx[i], now_ns);
    if (n)
        tw_port_free_burst(st->port, rx, n);
    uint64_t tx_before = st->stats.tx_frames + st->txq_n;
    /* A full burst means more frames wait, maybe the ACKs a due timer is
     * waiting for (the poller was late: preempted, or busy elsewhere):
     * timers wait for the rest, up to TIMER_DEFER_MAX polls, so that a
     * backlog does not fire a loss probe or an RTO it would have
     * answered, and a flood cannot stop them. */
    int timers = n < st->cfg.tx_burst || st->timers_deferred >= TIMER_DEFER_MAX;
    st->timers_deferred = timers ? 0 : (uint16_t)(st->timers_deferred + 1);
    for (unsigned i = 0; i < st->cfg.max_conns; i++) {
        tw_tcp_conn *c = st->conns[i];
        if (!c)
            continue;
        if (timers)
            tw__tcp_timers(c, now_ns);
        if (c->slot >= 0 && c->state != TW_TCP_CLOSED)
            tw__tcp_output(c, now_ns);
    }
    tw__net_tx_flush(st);
    return n + (unsigned)(st->stats.tx_frames - tx_before);
}

int64_t tw_net_next_timer_ns(const tw_net *st)
{
    int64_t t = INT64_MAX;
    for (unsigned i = 0; i < st->cfg.max_conns; i++) {
        const tw_tcp_conn *c = st->conns[i];
        if (c) {
            int64_t x = tw__tcp_next_timer_ns(c);
            if (x < t)
                t = x;
        }
    }
    return t;
}
