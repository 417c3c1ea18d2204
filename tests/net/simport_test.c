/* Tests of the simulated network itself (port_sim.c): delivery by MAC,
 * FIFO order on a clean link, virtual-time delays, loss/duplication/
 * reordering rates near their settings, corruption confined to the IPv4
 * packet and always caught by the checksums, the capacity limit with drops
 * and with CE marking (header checksum still valid), partitions, pool
 * accounting, and determinism (same seed, same run). */
#include "rawpeer.h"

static const uint8_t MA[6] = {2, 0, 0, 0, 0, 0xa}, MB[6] = {2, 0, 0, 0, 0, 0xb};

/* An IPv4/TCP frame A -> B carrying its index, ECT(0) when ect. */
static uint32_t frame(uint8_t *f, uint32_t idx, int ect)
{
    tw_eth_hdr *e = (tw_eth_hdr *)f;
    memcpy(e->dst, MB, 6);
    memcpy(e->src, MA, 6);
    e->type_be = tw_htobe16(TW_ETHERTYPE_IPV4);
    tw_ipv4_hdr *ip = (tw_ipv4_hdr *)(e + 1);
    memset(ip, 0, 20);
    ip->ver_ihl = 0x45;
    ip->tos = ect ? TW_IP_ECN_ECT0 : 0;
    ip->total_len_be = tw_htobe16(20 + 20 + 200);
    ip->ttl = 64;
    ip->proto = 6;
    ip->src_be = tw_htobe32(1);
    ip->dst_be = tw_htobe32(2);
    ip->cksum = tw_net_csum_fold(tw_net_csum_add(0, ip, 20));
    tw_tcp_hdr *t = (tw_tcp_hdr *)(ip + 1);
    memset(t, 0, 20);
    t->seq_be = tw_htobe32(idx);
    t->off = 5 << 4;
    uint8_t *d = (uint8_t *)(t + 1);
    for (int i = 0; i < 200; i++)
        d[i] = (uint8_t)(idx + (uint32_t)i);
    tw_ipv4_pseudo_hdr ph = {ip->src_be, ip->dst_be, 0, 6, tw_htobe16(220)};
    t->cksum = tw_net_csum_fold(tw_net_csum_add(tw_net_csum_add(0, &ph, 12), t, 220));
    return 14 + 240;
}

static int frame_ok(const uint8_t *f, uint32_t len, uint32_t *idx)
{
    tw_net_parsed pp;
    if (len != 254 || tw_net_parse(f, len, &pp) < 0 || !pp.tcp)
        return 0;
    if (tw_net_csum_fold(tw_net_csum_add(0, pp.ip, 20)))
        return 0;
    tw_ipv4_pseudo_hdr ph = {pp.ip->src_be, pp.ip->dst_be, 0, 6, tw_htobe16(220)};
    if (tw_net_csum_fold(tw_net_csum_add(tw_net_csum_add(0, &ph, 12), pp.tcp, 220)))
        return 0;
    *idx = tw_be32(pp.tcp->seq_be);
    return 1;
}

typedef struct result {
    uint32_t got, bad, reordered, ce;
    uint64_t hash, last_ns;
} result;

/* Sends n frames A -> B, one every gap_ns, and collects what B receives. */
static result run(uint64_t seed, const tw_sim_link_config *L, uint32_t n, uint64_t gap_ns,
                  int ect, int partition_mid)
{
    tw_sim_net *net;
    tw_port *a, *b;
    tw_error err;
    result r = {0, 0, 0, 0, 1469598103934665603ull, 0};
    if (tw_sim_net_open(&net, seed, 4096, &err) ||
        tw_port_sim_open(&a, net, MA, L, 64, &err) ||
        tw_port_sim_open(&b, net, MB, NULL, 4096, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    int64_t now = 0;
    uint32_t last = 0;
    for (uint32_t i = 0; i < n || tw_sim_net_in_flight(net); i++) {
        if (i < n) {
            if (partition_mid)
                tw_sim_port_partition(a, i >= n / 4 && i < n / 2);
            tw_pkt p;
            CHECKF(tw_port_alloc_burst(a, &p, 1) == 1, "alloc");
            p.len = frame(p.data, i, ect);
            CHECKF(tw_port_tx_burst(a, &p, 1) == 1, "tx takes everything");
            CHECKF(tw_sim_port_pool_free(a) == 64, "tx buffer back in the pool at once");
        }
        now += gap_ns;
        tw_sim_net_advance(net, now);
        tw_pkt rx[64];
        unsigned k;
        while ((k = tw_port_rx_burst(b, rx, 64))) {
            for (unsigned j = 0; j < k; j++) {
                uint32_t idx;
                if (frame_ok(rx[j].data, rx[j].len, &idx)) {
                    r.got++;
                    if (idx < last)
                        r.reordered++;
                    last = idx;
                    if ((rx[j].data[15] & 3) == TW_IP_ECN_CE)
                        r.ce++;
                    r.hash = (r.hash ^ idx) * 1099511628211ull;
                } else {
                    r.bad++;
                }
                r.hash = (r.hash ^ now) * 1099511628211ull;
            }
            tw_port_free_burst(b, rx, k);
        }
        if (i > n + 100000)
            break;
    }
    r.last_ns = now;
    CHECKF(tw_sim_port_pool_free(b) == 4096, "rx pool full again");
    tw_sim_net_close(net);
    return r;
}

int main(void)
{
    tw_sim_link_config L;
    /* Clean link: every frame, in order, after exactly delay_min. */
    memset(&L, 0, sizeof(L));
    L.delay_min_ns = 50000;
    result r = run(1, &L, 1000, 1000, 0, 0);
    CHECKF(r.got == 1000 && r.bad == 0 && r.reordered == 0, "clean: %u got, %u bad, %u reord",
           r.got, r.bad, r.reordered);
    /* Exponential delay alone keeps FIFO order on a link. */
    L.delay_mean_ns = 200000;
    r = run(2, &L, 1000, 1000, 0, 0);
    CHECKF(r.got == 1000 && r.reordered == 0, "jitter without reordering keeps order");
    /* Loss 10%, duplication 5%, reordering 10%: rates within bounds. */
    memset(&L, 0, sizeof(L));
    L.delay_min_ns = 10000;
    L.loss_ppm = 100000;
    L.dup_ppm = 50000;
    L.reorder_ppm = 100000;
    L.reorder_extra_ns = 100000;
    r = run(3, &L, 20000, 1000, 0, 0);
    /* expected got = 20000 * 0.9 * 1.05 = 18900 */
    CHECKF(r.got > 18300 && r.got < 19500, "loss+dup: got %u", r.got);
    CHECKF(r.reordered > 500, "reordering happened: %u", r.reordered);
    /* Corruption 20%: every corrupted frame fails a checksum. */
    memset(&L, 0, sizeof(L));
    L.corrupt_ppm = 200000;
    r = run(4, &L, 20000, 1000, 0, 0);
    CHECKF(r.got + r.bad == 20000, "nothing lost to corruption: %u + %u", r.got, r.bad);
    CHECKF(r.bad > 3500 && r.bad < 4500, "corrupted frames all caught: %u", r.bad);
    /* Capacity: 10 frames in flight, sent faster than the link drains. */
    memset(&L, 0, sizeof(L));
    L.queue_limit = 10;
    L.rate_Bps = 254000000ull; /* 1 us per frame */
    r = run(5, &L, 1000, 100, 0, 0);
    CHECKF(r.got >= 100 && r.got < 200, "queue limit drops: got %u of 1000", r.got);
    /* ECN marking above half the queue: CE set, header checksum valid. */
    L.ecn_mark = 1;
    r = run(6, &L, 1000, 100, 1, 0);
    CHECKF(r.ce > 50 && r.bad == 0, "CE marked %u, bad %u", r.ce, r.bad);
    /* Partition: a quarter of the frames vanish. */
    memset(&L, 0, sizeof(L));
    r = run(7, &L, 1000, 1000, 0, 1);
    CHECKF(r.got == 750, "partition dropped a quarter: got %u", r.got);
    /* Determinism: the same seed gives the same run, another seed not. */
    memset(&L, 0, sizeof(L));
    L.delay_min_ns = 1000;
    L.delay_mean_ns = 50000;
    L.loss_ppm = 50000;
    L.dup_ppm = 50000;
    L.reorder_ppm = 50000;
    L.reorder_extra_ns = 30000;
    L.corrupt_ppm = 50000;
    result x = run(42, &L, 5000, 1000, 0, 0), y = run(42, &L, 5000, 1000, 0, 0),
           z = run(43, &L, 5000, 1000, 0, 0);
    CHECKF(x.hash == y.hash && x.got == y.got, "same seed, same run");
    CHECKF(x.hash != z.hash, "different seed, different run");
    return tw_check_done("net_simport_test");
}
