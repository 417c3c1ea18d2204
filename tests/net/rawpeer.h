/* A scripted peer for unit tests: a sim port with no stack behind it, from
 * which a test sends hand-built frames to the stack under test and reads
 * what the stack answers.  Header-only: each test program includes it. */
#ifndef TW_TEST_RAWPEER_H
#define TW_TEST_RAWPEER_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickwire/net.h"
#include "tickwire/net_sim.h"
#include "tickwire/net_wire.h"
#include "tw_check.h"

#define US_IP 0x0a000001u   /* the stack under test */
#define PEER_IP 0x0a000002u /* the scripted peer */
static const uint8_t US_MAC[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t PEER_MAC[6] = {0x02, 0, 0, 0, 0, 0x02};

typedef struct rawpeer {
    tw_sim_net *net;
    tw_port *us_port, *peer_port;
    tw_net *st;
    int64_t now; /* monotonic, virtual */
} rawpeer;

static inline void rp_open(rawpeer *r, tw_net_config *cfg)
{
    tw_error err;
    memset(r, 0, sizeof(*r));
    if (tw_sim_net_open(&r->net, 1, 256, &err) ||
        tw_port_sim_open(&r->us_port, r->net, US_MAC, NULL, 64, &err) ||
        tw_port_sim_open(&r->peer_port, r->net, PEER_MAC, NULL, 64, &err)) {
        fprintf(stderr, "rawpeer: %s\n", err.msg);
        exit(1);
    }
    tw_net_config c;
    if (!cfg) {
        tw_net_config_init(&c, US_IP);
        c.isn_secret[0] = 1; /* reproducible ISNs */
        cfg = &c;
    }
    if (tw_net_open(&r->st, r->us_port, cfg, &err)) {
        fprintf(stderr, "rawpeer: %s\n", err.msg);
        exit(1);
    }
    tw_net_arp_add(r->st, PEER_IP, PEER_MAC);
    r->now = 1000000000ull;
}

static inline void rp_close(rawpeer *r)
{
    tw_net_close(r->st);
    tw_sim_net_close(r->net);
}

/* Moves time forward by dt_ns and lets the stack run. */
static inline void rp_run(rawpeer *r, uint64_t dt_ns)
{
    r->now += dt_ns;
    tw_sim_net_advance(r->net, r->now);
    for (int i = 0; i < 100 && tw_net_poll(r->st, r->now); i++)
        ;
    tw_sim_net_advance(r->net, r->now);
}

/* Sends raw frame bytes from the peer to the stack and runs the stack. */
static inline void rp_send_raw(rawpeer *r, const uint8_t *f, uint32_t len)
{
    tw_pkt p;
    if (tw_port_alloc_burst(r->peer_port, &p, 1) != 1)
        abort();
    memcpy(p.data, f, len);
    p.len = len;
    tw_port_tx_burst(r->peer_port, &p, 1);
    rp_run(r, 0);
}

/* Receives the next frame the stack sent to the peer: 1 and a copy in
 * buf/len, or 0 when there is none. */
static inline int rp_recv(rawpeer *r, uint8_t *buf, uint32_t *len)
{
    tw_pkt p;
    tw_sim_net_advance(r->net, r->now); /* frames the stack sent since */
    if (tw_port_rx_burst(r->peer_port, &p, 1) != 1)
        return 0;
    memcpy(buf, p.data, p.len);
    *len = p.len;
    tw_port_free_burst(r->peer_port, &p, 1);
    return 1;
}

static inline unsigned rp_drain(rawpeer *r)
{
    uint8_t b[2048];
    uint32_t n;
    unsigned k = 0;
    while (rp_recv(r, b, &n))
        k++;
    return k;
}

/* A TCP segment the peer sends or the stack sent, decoded. */
typedef struct seg {
    uint32_t seq, ack;
    uint8_t flags;
    uint16_t win;
    uint16_t sport, dport;
    uint8_t tos;
    uint32_t dlen;
    uint8_t data[1600];
    uint16_t mss;   /* from options, 0 if none */
    int ws;         /* -1 if none */
} seg;

/* Builds Ethernet+IPv4+TCP from the peer to the stack with correct
 * checksums (or a broken TCP checksum when bad_cksum). */
static inline uint32_t rp_build(uint8_t *f, uint16_t sport, uint16_t dport, uint32_t seq,
                         uint32_t ack, uint8_t flags, uint16_t win, const void *data,
                         uint32_t dlen, const uint8_t *opts, uint32_t optlen, uint8_t tos,
                         int bad_cksum)
{
    tw_eth_hdr *eth = (tw_eth_hdr *)f;
    memcpy(eth->dst, US_MAC, 6);
    memcpy(eth->src, PEER_MAC, 6);
    eth->type_be = tw_htobe16(TW_ETHERTYPE_IPV4);
    tw_ipv4_hdr *ip = (tw_ipv4_hdr *)(eth + 1);
    uint32_t tcplen = 20 + optlen + dlen;
    memset(ip, 0, sizeof(*ip));
    ip->ver_ihl = 0x45;
    ip->tos = tos;
    ip->total_len_be = tw_htobe16((uint16_t)(20 + tcplen));
    ip->frag_be = tw_htobe16(TW_IP_FLAG_DF);
    ip->ttl = 64;
    ip->proto = TW_IP_PROTO_TCP;
    ip->src_be = tw_htobe32(PEER_IP);
    ip->dst_be = tw_htobe32(US_IP);
    ip->cksum = tw_net_csum_fold(tw_net_csum_add(0, ip, 20));
    tw_tcp_hdr *t = (tw_tcp_hdr *)(ip + 1);
    memset(t, 0, sizeof(*t));
    t->sport_be = tw_htobe16(sport);
    t->dport_be = tw_htobe16(dport);
    t->seq_be = tw_htobe32(seq);
    t->ack_be = tw_htobe32(ack);
    t->off = (uint8_t)(((20 + optlen) / 4) << 4);
    t->flags = flags;
    t->win_be = tw_htobe16(win);
    if (optlen)
        memcpy(t + 1, opts, optlen);
    if (dlen)
        memcpy((uint8_t *)(t + 1) + optlen, data, dlen);
    tw_ipv4_pseudo_hdr ph = {ip->src_be, ip->dst_be, 0, 6, tw_htobe16((uint16_t)tcplen)};
    t->cksum = tw_net_csum_fold(tw_net_csum_add(tw_net_csum_add(0, &ph, 12), t, tcplen));
    if (bad_cksum)
        t->cksum ^= 0x0101;
    uint32_t len = 14 + 20 + tcplen;
    if (len < 60) {
        memset(f + len, 0, 60 - len);
        len = 60;
    }
    return len;
}

static inline void rp_tcp(rawpeer *r, uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack,
                   uint8_t flags, uint16_t win, const void *data, uint32_t dlen)
{
    uint8_t f[2048];
    uint32_t n = rp_build(f, sport, dport, seq, ack, flags, win, data, dlen, NULL, 0, 0, 0);
    rp_send_raw(r, f, n);
}

/* Parses a frame the stack sent: 1 if it is a valid TCP segment to the
 * peer (both checksums verified), 0 otherwise. */
static inline int rp_decode(const uint8_t *f, uint32_t len, seg *s)
{
    tw_net_parsed pp;
    if (tw_net_parse(f, len, &pp) < 0 || !pp.tcp)
        return 0;
    if (tw_net_csum_fold(tw_net_csum_add(0, pp.ip, pp.ip_hlen)) != 0)
        return 0;
    tw_ipv4_pseudo_hdr ph = {pp.ip->src_be, pp.ip->dst_be, 0, 6,
                             tw_htobe16((uint16_t)pp.l4_len)};
    if (tw_net_csum_fold(tw_net_csum_add(tw_net_csum_add(0, &ph, 12), pp.tcp, pp.l4_len)))
        return 0;
    s->seq = tw_be32(pp.tcp->seq_be);
    s->ack = tw_be32(pp.tcp->ack_be);
    s->flags = pp.tcp->flags;
    s->win = tw_be16(pp.tcp->win_be);
    s->sport = tw_be16(pp.tcp->sport_be);
    s->dport = tw_be16(pp.tcp->dport_be);
    s->tos = pp.ip->tos;
    s->dlen = pp.payload_len;
    memcpy(s->data, pp.payload, pp.payload_len < sizeof(s->data) ? pp.payload_len : sizeof(s->data));
    s->mss = 0;
    s->ws = -1;
    for (uint32_t i = 0; i < pp.tcp_opts_len;) {
        uint8_t k = pp.tcp_opts[i];
        if (k == 0)
            break;
        if (k == 1) {
            i++;
            continue;
        }
        uint8_t l = pp.tcp_opts[i + 1];
        if (k == 2)
            s->mss = (uint16_t)(pp.tcp_opts[i + 2] << 8 | pp.tcp_opts[i + 3]);
        if (k == 3)
            s->ws = pp.tcp_opts[i + 2];
        i += l ? l : 1;
    }
    return 1;
}

/* Next TCP segment from the stack: 1 and *s, or 0 when none is waiting. */
static inline int rp_seg(rawpeer *r, seg *s)
{
    uint8_t b[2048];
    uint32_t n;
    while (rp_recv(r, b, &n))
        if (rp_decode(b, n, s))
            return 1;
    return 0;
}

#endif
