/* The simulated network (net_sim.h): deterministic, in process, virtual
 * time.  Frames in flight sit in a binary min-heap keyed by (delivery
 * time, send order), so a run depends only on the seed and the calls. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "tickwire/net.h"
#include "tickwire/net_sim.h"
#include "tickwire/net_wire.h"

#define SIM_MAX_PORTS 16
#define SIM_BUF 2048

typedef struct sim_port {
    tw_port base; /* first: tw_port * casts to sim_port * */
    struct tw_sim_net *net;
    tw_sim_link_config link;
    int partitioned;
    unsigned pool_n, free_n;
    uint8_t *mem;          /* pool_n buffers of SIM_BUF bytes */
    uint32_t *free_stack;  /* free buffer indices */
    uint8_t *in_use;       /* per buffer: catches double frees */
    tw_pkt *rxq;           /* ring of received frames, pool_n entries */
    unsigned rx_head, rx_n;
    unsigned link_in_flight;
    uint64_t busy_until_ns, last_deliver_ns;
} sim_port;

typedef struct flight {
    uint64_t at_ns, order;
    uint32_t slot;
} flight;

struct tw_sim_net {
    uint64_t rng;
    uint64_t now_ns, order; /* virtual: tw_sim_net_now hands out its address */
    unsigned nports;
    sim_port *ports[SIM_MAX_PORTS];
    unsigned max_in_flight, n_in_flight, free_n;
    flight *heap;
    uint32_t *free_slots;
    uint8_t *slot_mem;      /* max_in_flight x SIM_BUF */
    uint32_t *slot_len;
    uint8_t *slot_src;
    tw_sim_stats stats;
};

/* splitmix64: small, fast, and good enough for choosing impairments. */
static uint64_t rnd(tw_sim_net *n)
{
    uint64_t z = (n->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int chance(tw_sim_net *n, uint32_t ppm)
{
    return ppm && (rnd(n) % 1000000u) < ppm;
}

static uint64_t exp_ns(tw_sim_net *n, uint64_t mean_ns)
{
    if (!mean_ns)
        return 0;
    double u = ((double)(rnd(n) >> 11) + 1.0) / 9007199254740993.0; /* (0,1] */
    double v = -log(u) * (double)mean_ns;
    return v > 1e12 ? (uint64_t)1e12 : (uint64_t)v;
}

/* ---- heap -------------------------------------------------------------- */

static int fl_less(const flight *a, const flight *b)
{
    return a->at_ns < b->at_ns || (a->at_ns == b->at_ns && a->order < b->order);
}

static void heap_push(tw_sim_net *n, flight f)
{
    unsigned i = n->n_in_flight++;
    n->heap[i] = f;
    while (i && fl_less(&n->heap[i], &n->heap[(i - 1) / 2])) {
        flight t = n->heap[i];
        n->heap[i] = n->heap[(i - 1) / 2];
        n->heap[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static flight heap_pop(tw_sim_net *n)
{
    flight top = n->heap[0];
    n->heap[0] = n->heap[--n->n_in_flight];
    unsigned i = 0;
    for (;;) {
        unsigned l = 2 * i + 1, r = l + 1, m = i;
        if (l < n->n_in_flight && fl_less(&n->heap[l], &n->heap[m]))
            m = l;
        if (r < n->n_in_flight && fl_less(&n->heap[r], &n->heap[m]))
            m = r;
        if (m == i)
            break;
        flight t = n->heap[i];
        n->heap[i] = n->heap[m];
        n->heap[m] = t;
        i = m;
    }
    return top;
}

/* ---- port ops ---------------------------------------------------------- */

static unsigned sim_alloc_burst(tw_port *p, tw_pkt *pkts, unsigned n)
{
    sim_port *sp = (sim_port *)p;
    unsigned i;
    for (i = 0; i < n && sp->free_n; i++) {
        uint32_t idx = sp->free_stack[--sp->free_n];
        TW_VERIFY(!sp->in_use[idx]);
        sp->in_use[idx] = 1;
        pkts[i].data = sp->mem + (size_t)idx * SIM_BUF;
        pkts[i].len = 0;
        pkts[i].room = SIM_BUF;
        pkts[i].ol_flags = 0;
        pkts[i].pad_ = 0;
        pkts[i].cookie = (void *)(uintptr_t)idx;
    }
    if (i < n)
        p->alloc_fail++;
    return i;
}

static void sim_free_burst(tw_port *p, tw_pkt *pkts, unsigned n)
{
    sim_port *sp = (sim_port *)p;
    for (unsigned i = 0; i < n; i++) {
        uint32_t idx = (uint32_t)(uintptr_t)pkts[i].cookie;
        TW_VERIFY(idx < sp->pool_n && sp->in_use[idx]);
        TW_VERIFY(pkts[i].data == sp->mem + (size_t)idx * SIM_BUF);
        sp->in_use[idx] = 0;
        sp->free_stack[sp->free_n++] = idx;
    }
}

static unsigned sim_rx_burst(tw_port *p, tw_pkt *pkts, unsigned n)
{
    sim_port *sp = (sim_port *)p;
    unsigned i;
    for (i = 0; i < n && sp->rx_n; i++) {
        pkts[i] = sp->rxq[sp->rx_head];
        sp->rx_head = (sp->rx_head + 1) % sp->pool_n;
        sp->rx_n--;
    }
    p->rx_pkts += i;
    return i;
}

/* Sets CE on an ECT IPv4 frame, fixing the header checksum (RFC 1624). */
static int mark_ce(uint8_t *f, uint32_t len)
{
    if (len < sizeof(tw_eth_hdr) + sizeof(tw_ipv4_hdr))
        return 0;
    tw_eth_hdr *eth = (tw_eth_hdr *)f;
    if (tw_be16(eth->type_be) != TW_ETHERTYPE_IPV4)
        return 0;
    tw_ipv4_hdr *ip = (tw_ipv4_hdr *)(eth + 1);
    uint8_t e = ip->tos & TW_IP_ECN_MASK;
    if (e == TW_IP_ECN_NOT_ECT || e == TW_IP_ECN_CE)
        return 0;
    uint16_t old_w, new_w;
    memcpy(&old_w, &ip->ver_ihl, 2);
    ip->tos |= TW_IP_ECN_CE;
    memcpy(&new_w, &ip->ver_ihl, 2);
    uint64_t sum = (uint16_t)~ip->cksum;
    sum += (uint16_t)~old_w;
    sum += new_w;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    ip->cksum = (uint16_t)~sum;
    return 1;
}

static void enqueue(tw_sim_net *n, sim_port *src, const uint8_t *data,
                    uint32_t len, int first)
{
    const tw_sim_link_config *L = &src->link;
    if (n->free_n == 0 || (L->queue_limit && src->link_in_flight >= L->queue_limit)) {
        n->stats.queue_drops++;
        return;
    }
    uint32_t slot = n->free_slots[--n->free_n];
    uint8_t *buf = n->slot_mem + (size_t)slot * SIM_BUF;
    memcpy(buf, data, len);
    n->slot_len[slot] = len;
    n->slot_src[slot] = 0;
    for (unsigned i = 0; i < n->nports; i++)
        if (n->ports[i] == src)
            n->slot_src[slot] = (uint8_t)i;
    unsigned thr = L->ecn_threshold ? L->ecn_threshold : L->queue_limit / 2;
    if (L->ecn_mark && src->link_in_flight >= thr && mark_ce(buf, len))
        n->stats.ce_marked++;
    if (first && chance(n, L->corrupt_ppm) && len > 34 &&
        tw_be16(((const tw_eth_hdr *)buf)->type_be) == TW_ETHERTYPE_IPV4) {
        /* Corruption that got past the Ethernet FCS (in a switch's or a
         * NIC's memory): inside the IPv4 packet, which the IP and TCP
         * checksums cover, never in the L2 header or in ARP, which have
         * nothing but the FCS.  1 to 3 bits inside one 16-bit word: a
         * change the Internet checksum always detects (it is nonzero and
         * below 2^16 - 1 in one's complement). */
        uint32_t ipend = 14 + tw_be16(((const tw_ipv4_hdr *)(buf + 14))->total_len_be);
        if (ipend > len || ipend < 34)
            ipend = len;
        uint32_t w = 14 + (uint32_t)(rnd(n) % ((ipend - 14) / 2)) * 2;
        unsigned bits = 1 + (unsigned)(rnd(n) % 3);
        uint16_t mask = 0;
        while (__builtin_popcount(mask) < (int)bits)
            mask |= (uint16_t)(1u << (rnd(n) % 16));
        buf[w] ^= (uint8_t)mask;
        if (w + 1 < len)
            buf[w + 1] ^= (uint8_t)(mask >> 8);
        n->stats.corrupted++;
    }
    uint64_t t = n->now_ns;
    if (L->rate_Bps) {
        if (src->busy_until_ns > t)
            t = src->busy_until_ns;
        t += (uint64_t)len * 1000000000ull / L->rate_Bps;
        src->busy_until_ns = t;
    }
    t += L->delay_min_ns + exp_ns(n, L->delay_mean_ns);
    if (chance(n, L->reorder_ppm)) {
        t += L->reorder_extra_ns;
        n->stats.reordered++;
    } else if (t < src->last_deliver_ns) {
        t = src->last_deliver_ns; /* a link is FIFO unless reordering */
    } else {
        src->last_deliver_ns = t;
    }
    src->link_in_flight++;
    heap_push(n, (flight){t, n->order++, slot});
}

/* What a NIC with checksum offload does on transmit: fills the IPv4
 * header checksum, and completes the TCP checksum whose field holds the
 * pseudo-header sum (TW_PKT_TX_TCP_CKSUM). */
static void tx_offload(tw_pkt *pkt)
{
    tw_net_parsed pp;
    if (tw_net_parse(pkt->data, pkt->len, &pp) < 0 || !pp.ip)
        return;
    tw_ipv4_hdr *ip = (tw_ipv4_hdr *)(uintptr_t)pp.ip;
    if (pkt->ol_flags & TW_PKT_TX_IP_CKSUM) {
        ip->cksum = 0;
        ip->cksum = tw_net_csum_fold(tw_net_csum_add(0, ip, pp.ip_hlen));
    }
    if ((pkt->ol_flags & TW_PKT_TX_TCP_CKSUM) && pp.tcp) {
        tw_tcp_hdr *t = (tw_tcp_hdr *)(uintptr_t)pp.tcp;
        t->cksum = tw_net_csum_fold(tw_net_csum_add(0, t, pp.l4_len));
    }
}

/* What a NIC with receive offload reports: GOOD flags for checksums that
 * verify; a bad one gets no flag, and the stack checks it in software. */
static uint32_t rx_offload(const uint8_t *f, uint32_t len)
{
    tw_net_parsed pp;
    uint32_t fl = 0;
    if (tw_net_parse(f, len, &pp) < 0 || !pp.ip)
        return 0;
    if (tw_net_csum_fold(tw_net_csum_add(0, pp.ip, pp.ip_hlen)) == 0)
        fl |= TW_PKT_RX_IP_CKSUM_GOOD;
    if (pp.tcp) {
        tw_ipv4_pseudo_hdr ph = {pp.ip->src_be, pp.ip->dst_be, 0, TW_IP_PROTO_TCP,
                                 tw_htobe16((uint16_t)pp.l4_len)};
        uint64_t sum = tw_net_csum_add(tw_net_csum_add(0, &ph, sizeof(ph)), pp.tcp, pp.l4_len);
        if (tw_net_csum_fold(sum) == 0)
            fl |= TW_PKT_RX_L4_CKSUM_GOOD;
    }
    return fl;
}

static unsigned sim_tx_burst(tw_port *p, tw_pkt *pkts, unsigned cnt)
{
    sim_port *sp = (sim_port *)p;
    tw_sim_net *n = sp->net;
    for (unsigned i = 0; i < cnt; i++) {
        TW_VERIFY(pkts[i].len <= SIM_BUF);
        if ((p->caps & TW_PORT_CAP_TX_CKSUM) &&
            (pkts[i].ol_flags & (TW_PKT_TX_IP_CKSUM | TW_PKT_TX_TCP_CKSUM)))
            tx_offload(&pkts[i]);
        n->stats.sent++;
        p->tx_pkts++;
        if (sp->partitioned)
            n->stats.partition_drops++;
        else if (chance(n, sp->link.loss_ppm))
            n->stats.lost++;
        else {
            enqueue(n, sp, pkts[i].data, pkts[i].len, 1);
            if (chance(n, sp->link.dup_ppm)) {
                n->stats.duplicated++;
                enqueue(n, sp, pkts[i].data, pkts[i].len, 0);
            }
        }
    }
    /* The frames were copied: their buffers go back to the pool now. */
    sim_free_burst(p, pkts, cnt);
    return cnt;
}

static void sim_close(tw_port *p)
{
    (void)p; /* owned by the network: tw_sim_net_close frees it */
}

static int sim_rx_fd(tw_port *p)
{
    (void)p;
    return -1; /* no descriptor (port.h): virtual time needs no waiting */
}

static const tw_port_ops sim_ops = {
    .name = "sim",
    .rx_burst = sim_rx_burst,
    .tx_burst = sim_tx_burst,
    .alloc_burst = sim_alloc_burst,
    .free_burst = sim_free_burst,
    .poll = NULL,
    .rx_fd = sim_rx_fd,
    .close = sim_close,
};

/* ---- network ----------------------------------------------------------- */

int tw_sim_net_open(tw_sim_net **out, uint64_t seed, unsigned max_in_flight,
                    tw_error *err)
{
    *out = NULL;
    if (max_in_flight == 0 || max_in_flight > (1u << 20))
        return tw__err(err, -EINVAL, "sim: max_in_flight %u outside [1, 2^20]",
                       max_in_flight);
    tw_sim_net *n = calloc(1, sizeof(*n));
    if (!n)
        return tw__err(err, -ENOMEM, "sim: out of memory");
    n->rng = seed;
    n->max_in_flight = max_in_flight;
    n->heap = calloc(max_in_flight, sizeof(*n->heap));
    n->free_slots = calloc(max_in_flight, sizeof(*n->free_slots));
    n->slot_mem = malloc((size_t)max_in_flight * SIM_BUF);
    n->slot_len = calloc(max_in_flight, sizeof(*n->slot_len));
    n->slot_src = calloc(max_in_flight, 1);
    if (!n->heap || !n->free_slots || !n->slot_mem || !n->slot_len || !n->slot_src) {
        tw_sim_net_close(n);
        return tw__err(err, -ENOMEM, "sim: cannot allocate %u frame slots",
                       max_in_flight);
    }
    for (unsigned i = 0; i < max_in_flight; i++)
        n->free_slots[i] = max_in_flight - 1 - i;
    n->free_n = max_in_flight;
    *out = n;
    return 0;
}

void tw_sim_net_close(tw_sim_net *n)
{
    if (!n)
        return;
    for (unsigned i = 0; i < n->nports; i++) {
        sim_port *sp = n->ports[i];
        free(sp->mem);
        free(sp->free_stack);
        free(sp->in_use);
        free(sp->rxq);
        free(sp);
    }
    free(n->heap);
    free(n->free_slots);
    free(n->slot_mem);
    free(n->slot_len);
    free(n->slot_src);
    free(n);
}

int tw_port_sim_open(tw_port **out, tw_sim_net *n, const uint8_t mac[6],
                     const tw_sim_link_config *egress, unsigned pool_bufs, tw_error *err)
{
    *out = NULL;
    if (n->nports == SIM_MAX_PORTS)
        return tw__err(err, -ENOSPC, "sim: more than %d ports", SIM_MAX_PORTS);
    if (pool_bufs < 2 || pool_bufs > (1u << 20))
        return tw__err(err, -EINVAL, "sim: pool_bufs %u outside [2, 2^20]", pool_bufs);
    sim_port *sp = calloc(1, sizeof(*sp));
    if (!sp)
        return tw__err(err, -ENOMEM, "sim: out of memory");
    sp->mem = malloc((size_t)pool_bufs * SIM_BUF);
    sp->free_stack = calloc(pool_bufs, sizeof(uint32_t));
    sp->in_use = calloc(pool_bufs, 1);
    sp->rxq = calloc(pool_bufs, sizeof(tw_pkt));
    if (!sp->mem || !sp->free_stack || !sp->in_use || !sp->rxq) {
        free(sp->mem);
        free(sp->free_stack);
        free(sp->in_use);
        free(sp->rxq);
        free(sp);
        return tw__err(err, -ENOMEM, "sim: cannot allocate %u buffers", pool_bufs);
    }
    sp->base.ops = &sim_ops;
    memcpy(sp->base.mac, mac, 6);
    sp->base.mtu = 1500;
    sp->net = n;
    sp->pool_n = pool_bufs;
    for (unsigned i = 0; i < pool_bufs; i++)
        sp->free_stack[i] = pool_bufs - 1 - i;
    sp->free_n = pool_bufs;
    if (egress)
        sp->link = *egress;
    n->ports[n->nports++] = sp;
    *out = &sp->base;
    return 0;
}

void tw_sim_port_set_link(tw_port *p, const tw_sim_link_config *egress)
{
    sim_port *sp = (sim_port *)p;
    memset(&sp->link, 0, sizeof(sp->link));
    if (egress)
        sp->link = *egress;
}

void tw_sim_port_partition(tw_port *p, int on)
{
    ((sim_port *)p)->partitioned = on;
}

static void deliver(tw_sim_net *n, sim_port *dst, const uint8_t *data, uint32_t len)
{
    if (dst->partitioned) {
        n->stats.partition_drops++;
        return;
    }
    tw_pkt pkt;
    if (sim_alloc_burst(&dst->base, &pkt, 1) != 1) {
        n->stats.rx_pool_drops++;
        return;
    }
    memcpy(pkt.data, data, len);
    pkt.len = len;
    if (dst->base.caps & TW_PORT_CAP_RX_CKSUM)
        pkt.ol_flags = rx_offload(pkt.data, len);
    TW_VERIFY(dst->rx_n < dst->pool_n); /* every queued frame holds a buffer */
    dst->rxq[(dst->rx_head + dst->rx_n) % dst->pool_n] = pkt;
    dst->rx_n++;
    n->stats.delivered++;
}

unsigned tw_sim_net_advance(tw_sim_net *n, int64_t now_ns)
{
    if (now_ns > 0 && (uint64_t)now_ns > n->now_ns)
        n->now_ns = (uint64_t)now_ns;
    unsigned done = 0;
    while (n->n_in_flight && n->heap[0].at_ns <= n->now_ns) {
        flight f = heap_pop(n);
        uint8_t *buf = n->slot_mem + (size_t)f.slot * SIM_BUF;
        uint32_t len = n->slot_len[f.slot];
        sim_port *src = n->ports[n->slot_src[f.slot]];
        src->link_in_flight--;
        const uint8_t *dmac = buf;
        int bcast = len >= 6 && (dmac[0] & 1);
        int found = 0;
        for (unsigned i = 0; i < n->nports && len >= 6; i++) {
            sim_port *d = n->ports[i];
            if (d == src)
                continue;
            if (bcast || memcmp(d->base.mac, dmac, 6) == 0) {
                found = 1;
                deliver(n, d, buf, len);
            }
        }
        if (!found)
            n->stats.no_dest++;
        n->free_slots[n->free_n++] = f.slot;
        done++;
    }
    return done;
}

const uint64_t *tw_sim_net_now(const tw_sim_net *n)
{
    return &n->now_ns;
}

uint64_t tw_sim_net_next_event_ns(const tw_sim_net *n)
{
    return n->n_in_flight ? n->heap[0].at_ns : UINT64_MAX;
}

unsigned tw_sim_net_in_flight(const tw_sim_net *n)
{
    return n->n_in_flight;
}

unsigned tw_sim_port_pool_free(const tw_port *p)
{
    const sim_port *sp = (const sim_port *)p;
    return sp->free_n;
}

unsigned tw_sim_port_pool_size(const tw_port *p)
{
    return ((const sim_port *)p)->pool_n;
}

const tw_sim_stats *tw_sim_net_get_stats(const tw_sim_net *n)
{
    return &n->stats;
}
