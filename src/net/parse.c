/* In-place parsing of Ethernet / ARP / IPv4 / TCP.  One bounds check per
 * layer: each layer checks that its header (and, for IPv4, the total
 * length) fits in what the previous layer left, then overlays the packed
 * wire struct on the frame.  Checksums are the stack's job (net_input.c),
 * so that the port's offload flags can skip them.
 *
 * The hot path (an IPv4 TCP frame) writes each output field once and
 * takes no branch it does not need: this is what bench_net's "parse"
 * figure times. */
#include <stddef.h>

#include "tickwire/net_wire.h"

/* Error exits set the pointers the caller may test (ip, tcp) so that a
 * failed parse never leaves a stale view behind; the hot path stores each
 * field once. */
static int fail(tw_net_parsed *out, const tw_ipv4_hdr *ip, int r)
{
    out->ip = ip;
    out->tcp = NULL;
    return r;
}

int tw_net_parse(const uint8_t *frame, uint32_t len, tw_net_parsed *out)
{
    if (len < sizeof(tw_eth_hdr)) {
        out->ethertype = 0;
        return fail(out, NULL, -2);
    }
    const tw_eth_hdr *eth = (const tw_eth_hdr *)frame;
    uint16_t type = tw_be16(eth->type_be);
    out->eth = eth;
    out->ethertype = type;
    uint32_t off = sizeof(tw_eth_hdr);
    if (__builtin_expect(type != TW_ETHERTYPE_IPV4, 0)) {
        out->tcp_opts = NULL;
        out->tcp_opts_len = 0;
        out->l4_len = 0;
        out->ip_proto = 0;
        out->ip_hlen = 0;
        if (type == TW_ETHERTYPE_ARP) {
            if (len - off < sizeof(tw_arp_hdr))
                return fail(out, NULL, -2);
            out->payload = frame + off;
            out->payload_len = sizeof(tw_arp_hdr);
            fail(out, NULL, 0);
            return (int)(off + sizeof(tw_arp_hdr));
        }
        out->payload = NULL;
        out->payload_len = 0;
        fail(out, NULL, 0);
        return (int)off; /* not ours to parse; the stack counts it */
    }

    /* IPv4: header, then the total length, bounds-checked once. */
    if (len - off < sizeof(tw_ipv4_hdr))
        return fail(out, NULL, -2);
    const tw_ipv4_hdr *ip = (const tw_ipv4_hdr *)(frame + off);
    uint32_t vihl = ip->ver_ihl;
    uint32_t hlen = (vihl & 0x0f) * 4;
    uint32_t total = tw_be16(ip->total_len_be);
    if ((vihl >> 4) != 4 || hlen < sizeof(tw_ipv4_hdr) || total < hlen)
        return fail(out, NULL, -1);
    if (len - off < total)
        return fail(out, NULL, -2); /* shorter than the IP total length: truncated */
    out->ip_hlen = (uint8_t)hlen;
    out->ip_proto = ip->proto;
    /* Any fragment (MF set or a non-zero offset) is refused: no
     * reassembly (netstack.md).  ip is set so the stack can count it. */
    if (ip->frag_be & tw_htobe16(TW_IP_FLAG_MF | TW_IP_FRAG_OFF_MASK))
        return fail(out, ip, -1);
    off += hlen;
    uint32_t l4 = total - hlen; /* Ethernet padding past total is ignored */
    out->ip = ip;
    out->l4_len = l4;
    if (__builtin_expect(ip->proto != TW_IP_PROTO_TCP, 0)) {
        out->tcp = NULL;
        out->tcp_opts = NULL;
        out->tcp_opts_len = 0;
        out->payload = frame + off;
        out->payload_len = l4;
        return (int)off;
    }
    if (l4 < sizeof(tw_tcp_hdr))
        return fail(out, ip, -2);
    const tw_tcp_hdr *tcp = (const tw_tcp_hdr *)(frame + off);
    uint32_t doff = (uint32_t)(tcp->off >> 4) * 4;
    if (doff < sizeof(tw_tcp_hdr) || doff > l4)
        return fail(out, ip, -1);
    out->tcp = tcp;
    out->tcp_opts = frame + off + sizeof(tw_tcp_hdr);
    out->tcp_opts_len = doff - (uint32_t)sizeof(tw_tcp_hdr);
    out->payload = frame + off + doff;
    out->payload_len = l4 - doff;
    return (int)(off + doff);
}
