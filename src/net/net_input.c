/* The input path below TCP: Ethernet, ARP, IPv4 and ICMP echo.  Every
 * check failure is a counter and a drop; nothing from the wire is trusted
 * past the layer that checked it. */
#include <errno.h>

#include "net/net_internal.h"

static void icmp_echo_reply(tw_net *st, const tw_net_parsed *pp)
{
    uint32_t len = pp->payload_len;
    if (len < sizeof(tw_icmp_echo_hdr) ||
        len > (uint32_t)st->port->mtu - sizeof(tw_ipv4_hdr)) {
        st->stats.rx_icmp_bad++;
        return;
    }
    if (tw_net_csum_fold(tw_net_csum_add(0, pp->payload, len)) != 0) {
        st->stats.rx_icmp_bad++;
        return;
    }
    const tw_icmp_echo_hdr *req = (const tw_icmp_echo_hdr *)pp->payload;
    if (req->type != TW_ICMP_ECHO_REQUEST || req->code != 0)
        return; /* other ICMP is counted (rx_icmp) and ignored */
    tw_pkt pkt;
    if (tw__net_alloc(st, &pkt))
        return;
    tw_eth_hdr *eth = (tw_eth_hdr *)pkt.data;
    memcpy(eth->dst, pp->eth->src, 6);
    memcpy(eth->src, st->mac, 6);
    eth->type_be = tw_htobe16(TW_ETHERTYPE_IPV4);
    tw_ipv4_hdr *ip = (tw_ipv4_hdr *)(eth + 1);
    ip->ver_ihl = 0x45;
    ip->tos = 0;
    ip->total_len_be = tw_htobe16((uint16_t)(sizeof(*ip) + len));
    ip->id_be = tw_htobe16(st->ip_id++);
    ip->frag_be = tw_htobe16(TW_IP_FLAG_DF);
    ip->ttl = 64;
    ip->proto = TW_IP_PROTO_ICMP;
    ip->cksum = 0;
    ip->src_be = tw_htobe32(st->cfg.ip);
    ip->dst_be = pp->ip->src_be;
    ip->cksum = tw_net_csum_fold(tw_net_csum_add(0, ip, sizeof(*ip)));
    uint8_t *icmp = (uint8_t *)(ip + 1);
    memcpy(icmp, pp->payload, len);
    /* Only the type changes (8 -> 0): RFC 1624 incremental update,
     * HC' = ~(~HC + ~m + m') over the 16-bit word holding type and code. */
    tw_icmp_echo_hdr *rep = (tw_icmp_echo_hdr *)icmp;
    uint16_t old_word, new_word;
    memcpy(&old_word, icmp, 2);
    rep->type = TW_ICMP_ECHO_REPLY;
    memcpy(&new_word, icmp, 2);
    uint64_t sum = (uint16_t)~rep->cksum;
    sum += (uint16_t)~old_word;
    sum += new_word;
    rep->cksum = tw_net_csum_fold(sum);
    pkt.len = (uint32_t)(sizeof(*eth) + sizeof(*ip) + len);
    if (pkt.len < 60) {
        memset(pkt.data + pkt.len, 0, 60 - pkt.len);
        pkt.len = 60;
    }
    st->stats.icmp_echo_replies++;
    tw__net_tx(st, &pkt);
}

/* The L2 filter, before any parsing: a frame for another station is
 * none of our business, broken or not, so it is counted as not for us
 * and never judged as corrupt.  Returns 1 to go on. */
static int l2_for_us(tw_net *st, const tw_pkt *pkt)
{
    if (pkt->len < sizeof(tw_eth_hdr)) {
        st->stats.rx_eth_bad++;
        return 0;
    }
    const tw_eth_hdr *eth = (const tw_eth_hdr *)pkt->data;
    const uint8_t *d = eth->dst;
    if (__builtin_expect(memcmp(d, st->mac, 6) != 0, 0)) {
        /* We never address a frame to ourselves, so one of ours coming
         * back always lands here: the hot path (unicast to us) does not
         * pay for this check. */
        if (memcmp(eth->src, st->mac, 6) == 0) {
            st->stats.rx_own_src++;
            return 0;
        }
        int bcast = (d[0] & d[1] & d[2] & d[3] & d[4] & d[5]) == 0xff;
        if (!bcast) {
            /* No multicast group is ever joined. */
            if (d[0] & 1)
                st->stats.rx_mcast++;
            else
                st->stats.rx_mac_other++;
            st->stats.rx_not_for_us++;
            return 0;
        }
    }
    uint16_t type = tw_be16(eth->type_be);
    if (type != TW_ETHERTYPE_IPV4 && type != TW_ETHERTYPE_ARP) {
        st->stats.rx_eth_other++;
        st->stats.rx_not_for_us++;
        return 0;
    }
    return 1;
}

void tw__net_input(tw_net *st, tw_pkt *pkt, int64_t now_ns)
{
    tw_net_parsed pp;
    st->stats.rx_frames++;
    st->stats.rx_bytes += pkt->len;
    if (!l2_for_us(st, pkt))
        return;
    int r = tw_net_parse(pkt->data, pkt->len, &pp);
    if (r < 0) {
        if (pp.ip && (tw_be16(pp.ip->frag_be) &
                      (TW_IP_FLAG_MF | TW_IP_FRAG_OFF_MASK)))
            st->stats.rx_ip_frag++;
        else if (pp.ip && pp.ip_proto == TW_IP_PROTO_TCP)
            st->stats.rx_tcp_bad++;
        else if (r == -2 && pp.ethertype == TW_ETHERTYPE_ARP)
            st->stats.rx_arp_bad++;
        else
            st->stats.rx_ip_bad++;
        return;
    }
    TW_ASSERT(pp.ethertype == TW_ETHERTYPE_IPV4 || pp.ethertype == TW_ETHERTYPE_ARP);
    if (pp.ethertype == TW_ETHERTYPE_ARP) {
        tw__net_arp_input(st, (const tw_arp_hdr *)pp.payload, now_ns);
        return;
    }
    if (tw_be32(pp.ip->dst_be) != st->cfg.ip) {
        st->stats.rx_ip_other++;
        st->stats.rx_not_for_us++;
        return;
    }
    int offload = st->cfg.use_offload && (st->port->caps & TW_PORT_CAP_RX_CKSUM);
    if (!(offload && (pkt->ol_flags & TW_PKT_RX_IP_CKSUM_GOOD)) &&
        tw_net_csum_fold(tw_net_csum_add(0, pp.ip, pp.ip_hlen)) != 0) {
        st->stats.rx_ip_cksum_bad++;
        return;
    }
    if (pp.ip_hlen > sizeof(tw_ipv4_hdr))
        st->stats.rx_ip_options++;
    uint32_t src = tw_be32(pp.ip->src_be);
    /* A source that is ours, broadcast, multicast or zero is spoofed or
     * broken: never answer it. */
    if (src == st->cfg.ip || src == 0 || src == 0xffffffffu ||
        (src >> 28) == 0xe) {
        st->stats.rx_ip_src_bad++;
        return;
    }
    if (pp.ip_proto == TW_IP_PROTO_ICMP) {
        st->stats.rx_icmp++;
        icmp_echo_reply(st, &pp);
        return;
    }
    if (pp.ip_proto != TW_IP_PROTO_TCP) {
        st->stats.rx_ip_proto_other++;
        return;
    }
    st->stats.rx_tcp++;
    if (!(offload && (pkt->ol_flags & TW_PKT_RX_L4_CKSUM_GOOD))) {
        tw_ipv4_pseudo_hdr ph = {pp.ip->src_be, pp.ip->dst_be, 0,
                                 TW_IP_PROTO_TCP,
                                 tw_htobe16((uint16_t)pp.l4_len)};
        uint64_t sum = tw_net_csum_add(0, &ph, sizeof(ph));
        sum = tw_net_csum_add(sum, pp.tcp, pp.l4_len);
        if (tw_net_csum_fold(sum) != 0) {
            st->stats.rx_tcp_cksum_bad++;
            return;
        }
    }
    tw__tcp_input(st, &pp, now_ns);
}
