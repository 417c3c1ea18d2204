/* Wire formats of the userspace stack: Ethernet, ARP, IPv4, ICMP and TCP
 * headers as packed structs with big-endian fields (like DPDK rte_ether.h,
 * rte_ip.h, rte_tcp.h).  Fields named *_be hold network byte order; use
 * tw_be16/tw_be32 to read and tw_htobe16/tw_htobe32 to write.  Parsing
 * overlays these on the frame in place after one bounds check per layer. */
#ifndef TICKWIRE_NET_WIRE_H
#define TICKWIRE_NET_WIRE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline uint16_t tw_be16(uint16_t v) { return __builtin_bswap16(v); }
static inline uint32_t tw_be32(uint32_t v) { return __builtin_bswap32(v); }
static inline uint16_t tw_htobe16(uint16_t v) { return __builtin_bswap16(v); }
static inline uint32_t tw_htobe32(uint32_t v) { return __builtin_bswap32(v); }

#define TW_ETH_ALEN 6
#define TW_ETHERTYPE_IPV4 0x0800
#define TW_ETHERTYPE_ARP  0x0806
#define TW_ETHERTYPE_VLAN 0x8100

/* Ethernet II header (no 802.1Q tag: VLAN frames are not for us). */
typedef struct __attribute__((packed)) tw_eth_hdr {
    uint8_t dst[TW_ETH_ALEN]; /* destination MAC */
    uint8_t src[TW_ETH_ALEN]; /* source MAC */
    uint16_t type_be;         /* EtherType (TW_ETHERTYPE_*) */
} tw_eth_hdr;
_Static_assert(sizeof(tw_eth_hdr) == 14, "Ethernet header is 14 bytes");

#define TW_ARP_HTYPE_ETH 1
#define TW_ARP_OP_REQUEST 1
#define TW_ARP_OP_REPLY 2

/* ARP for IPv4 over Ethernet (RFC 826). */
typedef struct __attribute__((packed)) tw_arp_hdr {
    uint16_t htype_be;         /* hardware type: 1 = Ethernet */
    uint16_t ptype_be;         /* protocol type: 0x0800 = IPv4 */
    uint8_t hlen;              /* hardware address length: 6 */
    uint8_t plen;              /* protocol address length: 4 */
    uint16_t op_be;            /* 1 = request, 2 = reply */
    uint8_t sha[TW_ETH_ALEN];  /* sender MAC */
    uint32_t spa_be;           /* sender IPv4 (unaligned in the frame) */
    uint8_t tha[TW_ETH_ALEN];  /* target MAC (zero in requests) */
    uint32_t tpa_be;           /* target IPv4 */
} tw_arp_hdr;
_Static_assert(sizeof(tw_arp_hdr) == 28, "ARP/IPv4 body is 28 bytes");

#define TW_IP_PROTO_ICMP 1
#define TW_IP_PROTO_TCP 6
#define TW_IP_FLAG_DF 0x4000     /* don't fragment */
#define TW_IP_FLAG_MF 0x2000     /* more fragments */
#define TW_IP_FRAG_OFF_MASK 0x1fff
#define TW_IP_ECN_MASK 0x03      /* low two bits of tos */
#define TW_IP_ECN_NOT_ECT 0x00
#define TW_IP_ECN_ECT1 0x01
#define TW_IP_ECN_ECT0 0x02
#define TW_IP_ECN_CE 0x03

/* IPv4 header without options (RFC 791). */
typedef struct __attribute__((packed)) tw_ipv4_hdr {
    uint8_t ver_ihl;           /* version (4) << 4 | header length in 32-bit words */
    uint8_t tos;               /* DSCP << 2 | ECN (TW_IP_ECN_*) */
    uint16_t total_len_be;     /* header + payload bytes */
    uint16_t id_be;            /* identification (for fragments) */
    uint16_t frag_be;          /* flags (DF, MF) | fragment offset in 8-byte units */
    uint8_t ttl;               /* time to live */
    uint8_t proto;             /* TW_IP_PROTO_* */
    uint16_t cksum;            /* header checksum, stored as computed (big-endian) */
    uint32_t src_be;           /* source address */
    uint32_t dst_be;           /* destination address */
} tw_ipv4_hdr;
_Static_assert(sizeof(tw_ipv4_hdr) == 20, "IPv4 header is 20 bytes");

#define TW_ICMP_ECHO_REPLY 0
#define TW_ICMP_ECHO_REQUEST 8

/* ICMP echo request/reply header (RFC 792). */
typedef struct __attribute__((packed)) tw_icmp_echo_hdr {
    uint8_t type;              /* 8 = request, 0 = reply */
    uint8_t code;              /* 0 */
    uint16_t cksum;            /* over the ICMP message */
    uint16_t ident_be;         /* identifier, echoed */
    uint16_t seq_be;           /* sequence number, echoed */
} tw_icmp_echo_hdr;
_Static_assert(sizeof(tw_icmp_echo_hdr) == 8, "ICMP echo header is 8 bytes");

#define TW_TCP_FIN 0x01 /* no more data from sender */
#define TW_TCP_SYN 0x02 /* synchronise sequence numbers */
#define TW_TCP_RST 0x04 /* reset the connection */
#define TW_TCP_PSH 0x08 /* push: deliver and ACK now */
#define TW_TCP_ACK 0x10 /* ack field is significant */
#define TW_TCP_URG 0x20 /* urgent pointer significant (ignored) */
#define TW_TCP_ECE 0x40 /* ECN echo (RFC 3168) */
#define TW_TCP_CWR 0x80 /* congestion window reduced (RFC 3168) */

#define TW_TCPOPT_EOL 0
#define TW_TCPOPT_NOP 1
#define TW_TCPOPT_MSS 2    /* len 4: maximum segment size */
#define TW_TCPOPT_WSCALE 3 /* len 3: window scale shift */
#define TW_TCPOPT_SACK_OK 4
#define TW_TCPOPT_SACK 5   /* len 2 + 8n: SACK blocks (RFC 2018) */
#define TW_TCPOPT_TS 8     /* len 10: TSval, TSecr (RFC 7323) */

/* TCP options of one segment, as tw_tcp_parse_opts found them. */
typedef struct tw_tcp_opts {
    uint16_t mss;          /* 0 = absent */
    int8_t wscale;         /* -1 = absent; capped at 14 (RFC 7323 2.3) */
    uint8_t sack_ok;       /* SACK-permitted seen */
    uint8_t has_ts;
    uint8_t sack_n;        /* SACK blocks in sack[] (0-4, in wire order) */
    uint16_t pad_;
    uint32_t tsval, tsecr;
    uint32_t sack[4][2];   /* [left, right) as on the wire, not yet checked */
} tw_tcp_opts;

/* Walks n bytes of TCP options.  Returns 0, or -EBADMSG when an option's
 * length is wrong (MSS not 4, window scale not 3, SACK-permitted not 2,
 * timestamps not 10, SACK not 2 + 8k with 1 <= k <= 4, or running past the
 * end): the segment is then refused.  Unknown options are skipped. */
int tw_tcp_parse_opts(const uint8_t *o, uint32_t n, tw_tcp_opts *out);

/* TCP header without options (RFC 793). */
typedef struct __attribute__((packed)) tw_tcp_hdr {
    uint16_t sport_be;         /* source port */
    uint16_t dport_be;         /* destination port */
    uint32_t seq_be;           /* sequence number of the first byte */
    uint32_t ack_be;           /* next sequence number expected (if ACK) */
    uint8_t off;               /* data offset in 32-bit words << 4 (low 4 bits reserved, NS) */
    uint8_t flags;             /* TW_TCP_* */
    uint16_t win_be;           /* receive window (scaled after the handshake) */
    uint16_t cksum;            /* over pseudo-header, header and payload */
    uint16_t urg_be;           /* urgent pointer (ignored) */
} tw_tcp_hdr;
_Static_assert(sizeof(tw_tcp_hdr) == 20, "TCP header is 20 bytes");

/* The IPv4 pseudo-header summed into the TCP checksum (RFC 793 3.1). */
typedef struct __attribute__((packed)) tw_ipv4_pseudo_hdr {
    uint32_t src_be;           /* source address */
    uint32_t dst_be;           /* destination address */
    uint8_t zero;              /* 0 */
    uint8_t proto;             /* 6 */
    uint16_t len_be;           /* TCP header + payload length */
} tw_ipv4_pseudo_hdr;
_Static_assert(sizeof(tw_ipv4_pseudo_hdr) == 12, "pseudo-header is 12 bytes");

/* ---- in-place parse ----------------------------------------------------
 * Result of parsing one Ethernet frame down to the TCP payload.  Pointers
 * are views into the frame. */
typedef struct tw_net_parsed {
    const tw_eth_hdr *eth;
    const tw_ipv4_hdr *ip;        /* NULL unless IPv4 */
    const tw_tcp_hdr *tcp;        /* NULL unless TCP */
    const uint8_t *tcp_opts;      /* TCP options, tcp_opts_len bytes */
    const uint8_t *payload;       /* L4 payload (TCP data or ICMP message) */
    uint32_t tcp_opts_len;
    uint32_t payload_len;
    uint32_t l4_len;              /* IP total length - IP header length */
    uint16_t ethertype;           /* host order */
    uint8_t ip_proto;
    uint8_t ip_hlen;
} tw_net_parsed;

/* Parses an Ethernet/IPv4/TCP (or ICMP, ARP) frame in place.  Returns the
 * number of bytes of headers consumed (>= 14), -1 when malformed (bad
 * version, header length, total length, data offset; fragment), -2 when
 * truncated.  Checksums are not checked here (tw_net_parse is the layer
 * the benchmark times; the stack verifies checksums after it). */
int tw_net_parse(const uint8_t *frame, uint32_t len, tw_net_parsed *out);

#ifdef __cplusplus
}
#endif
#endif
