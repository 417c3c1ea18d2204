/* TCP output path: the per-connection header template, segment building
 * (only seq/ack/flags/window/length/checksums change per packet), and the
 * send loop bounded by the peer's window, the congestion window and the
 * ECN token bucket. */
#include <errno.h>

#include "net/net_internal.h"

void tw__tcp_build_template(tw_tcp_conn *c)
{
    tw_net *st = c->st;
    uint8_t *h = c->hdr;
    memset(h, 0, sizeof(c->hdr));
    tw_eth_hdr *eth = (tw_eth_hdr *)h;
    memcpy(eth->dst, c->remote_mac, 6);
    memcpy(eth->src, st->mac, 6);
    eth->type_be = tw_htobe16(TW_ETHERTYPE_IPV4);
    tw_ipv4_hdr *ip = (tw_ipv4_hdr *)(eth + 1);
    ip->ver_ihl = 0x45;
    ip->frag_be = tw_htobe16(TW_IP_FLAG_DF);
    ip->ttl = 64;
    ip->proto = TW_IP_PROTO_TCP;
    ip->src_be = tw_htobe32(c->local_ip);
    ip->dst_be = tw_htobe32(c->remote_ip);
    tw_tcp_hdr *tcp = (tw_tcp_hdr *)(ip + 1);
    tcp->sport_be = tw_htobe16(c->local_port);
    tcp->dport_be = tw_htobe16(c->remote_port);
    /* The constant part of the pseudo-header, summed once. */
    tw_ipv4_pseudo_hdr ph = {ip->src_be, ip->dst_be, 0, TW_IP_PROTO_TCP, 0};
    uint64_t s = tw_net_csum_add(0, &ph, sizeof(ph));
    s = (s & 0xffffffffu) + (s >> 32);
    c->hdr_csum_part = (uint32_t)s;
    c->flags |= TF_HDR_READY;
}

uint32_t tw__tcp_rcv_window(const tw_tcp_conn *c)
{
    if (c->flags & TF_PEER_FIN)
        return 0;
    return (c->rx_head + c->rx_size) - c->rx_tail;
}

uint64_t tw__tcp_bucket_cap(const tw_tcp_conn *c)
{
    /* About 1 ms of sending at the current rate, and at least 16 segments
     * so that a slow rate still sends whole bursts. */
    uint64_t cap = c->rate_Bps / 1000;
    uint64_t min = 16ull * c->mss;
    return cap > min ? cap : min;
}

void tw__tcp_tokens_refill(tw_tcp_conn *c, int64_t now_ns)
{
    uint64_t dt = now_ns - c->token_at_ns;
    if (now_ns < c->token_at_ns)
        dt = 0;
    if (dt > 1000000000ull)
        dt = 1000000000ull; /* bounded so that rate * dt cannot overflow */
    uint64_t add = c->rate_Bps * dt / 1000000000ull;
    if (add || dt >= 1000000000ull)
        c->token_at_ns = now_ns;
    uint64_t cap = tw__tcp_bucket_cap(c);
    c->tokens = (c->tokens > cap - add) ? cap : c->tokens + add;
}

static uint32_t put_ts(const tw_tcp_conn *c, uint8_t *o, int64_t now_ns)
{
    uint32_t v = tw_htobe32(tw__tcp_tsval(c, now_ns)), e = tw_htobe32(c->ts_recent);
    o[0] = TW_TCPOPT_TS;
    o[1] = 10;
    memcpy(o + 2, &v, 4);
    memcpy(o + 6, &e, 4);
    return 10;
}

/* SYN and SYN-ACK options, laid out as Linux does (20 bytes with all):
 *   MSS(4) | SACK-permitted(2) TS(10) | NOP WS(3)
 * or NOP NOP in place of SACK-permitted without SACK, NOP NOP SACK-OK
 * without timestamps, and MSS NOP WS (8 bytes) with neither.  A SYN
 * offers what the connection's cfg allows (TF_SACK, TF_TS set at
 * connect); a SYN-ACK only what both sides offered. */
static uint32_t put_syn_opts(tw_tcp_conn *c, uint8_t *o, int64_t now_ns)
{
    uint32_t n = 0;
    o[n++] = TW_TCPOPT_MSS;
    o[n++] = 4;
    o[n++] = (uint8_t)(c->st->cfg.mss >> 8);
    o[n++] = (uint8_t)c->st->cfg.mss;
    if (c->flags & TF_TS) {
        if (c->flags & TF_SACK) {
            o[n++] = TW_TCPOPT_SACK_OK;
            o[n++] = 2;
        } else {
            o[n++] = TW_TCPOPT_NOP;
            o[n++] = TW_TCPOPT_NOP;
        }
        n += put_ts(c, o + n, now_ns);
    } else if (c->flags & TF_SACK) {
        o[n++] = TW_TCPOPT_NOP;
        o[n++] = TW_TCPOPT_NOP;
        o[n++] = TW_TCPOPT_SACK_OK;
        o[n++] = 2;
    }
    o[n++] = TW_TCPOPT_NOP;
    o[n++] = TW_TCPOPT_WSCALE;
    o[n++] = 3;
    o[n++] = c->rcv_wscale;
    TW_ASSERT(n % 4 == 0 && n <= 20);
    return n;
}

/* Options of a segment after the handshake: NOP NOP TS (12 bytes) on a
 * timestamped connection (not on RST, RFC 7323 5.2), then SACK blocks
 * for a duplicate just received (D-SACK) and held out-of-order data (NOP
 * NOP SACK, 2 + 8k bytes; k <= 3 with timestamps, 4 without), as many as
 * fit beside len payload bytes. */
static uint32_t put_opts(tw_tcp_conn *c, uint8_t *o, uint32_t len, uint8_t flags,
                         int64_t now_ns)
{
    uint32_t n = 0;
    if ((c->flags & TF_TS) && !(flags & TW_TCP_RST)) {
        /* NOP NOP TS 10 as one word, then TSval and TSecr. */
        uint32_t w[3] = {tw_htobe32(0x0101080au), tw_htobe32(tw__tcp_tsval(c, now_ns)),
                         tw_htobe32(c->ts_recent)};
        memcpy(o, w, 12);
        n = 12;
    }
    if ((c->flags & TF_SACK) && (c->ooo_n || (c->flags & TF_DSACK)) && (flags & TW_TCP_ACK) &&
        !(flags & TW_TCP_RST)) {
        uint32_t room = c->mss_opt > n + len + 4 ? c->mss_opt - n - len - 4 : 0;
        unsigned max = (c->flags & TF_TS) ? 3 : 4;
        if (room / 8 < max)
            max = room / 8;
        uint32_t blk[4][2];
        unsigned k = max ? tw__sack_blocks(c, blk, max) : 0;
        if (k) {
            o[n++] = TW_TCPOPT_NOP;
            o[n++] = TW_TCPOPT_NOP;
            o[n++] = TW_TCPOPT_SACK;
            o[n++] = (uint8_t)(2 + 8 * k);
            for (unsigned b = 0; b < k; b++)
                for (int e = 0; e < 2; e++)
                    for (int i = 0; i < 4; i++)
                        o[n++] = (uint8_t)(blk[b][e] >> (24 - 8 * i));
            c->st->stats.tx_sack_blocks += k;
            if (c->flags & TF_DSACK) {
                c->flags &= ~TF_DSACK; /* reported once (RFC 2883 4) */
                c->st->stats.tx_dsack++;
            }
        }
    }
    TW_ASSERT(n % 4 == 0 && n <= 40);
    return n;
}

int tw__tcp_send_seg(tw_tcp_conn *c, uint32_t seq, uint32_t len, uint8_t flags,
                     int64_t now_ns)
{
    tw_net *st = c->st;
    if (!(c->flags & TF_HDR_READY)) {
        if (tw__net_resolve(st, c->remote_ip, c->remote_mac, now_ns)) {
            c->flags |= TF_NEED_ARP;
            return -EAGAIN;
        }
        c->flags &= ~TF_NEED_ARP;
        tw__tcp_build_template(c);
    }
    tw_pkt pkt;
    if (tw__net_alloc(st, &pkt))
        return -ENOBUFS;
    uint8_t *f = pkt.data;
    memcpy(f, c->hdr, TW_NET_HDR_LEN);
    tw_ipv4_hdr *ip = (tw_ipv4_hdr *)(f + sizeof(tw_eth_hdr));
    tw_tcp_hdr *tcp = (tw_tcp_hdr *)(ip + 1);
    uint8_t *opt = (uint8_t *)(tcp + 1);
    uint32_t optlen = 0;
    uint32_t win;
    if (flags & TW_TCP_SYN) {
        optlen = put_syn_opts(c, opt, now_ns);
        /* RFC 7323: the window in a SYN is never scaled. */
        win = tw__tcp_rcv_window(c);
        if (win > 65535)
            win = 65535;
        if (c->flags & TF_ECN)
            flags |= (flags & TW_TCP_ACK) ? TW_TCP_ECE : (TW_TCP_ECE | TW_TCP_CWR);
    } else {
        optlen = put_opts(c, opt, len, flags, now_ns);
        win = tw__tcp_rcv_window(c) >> c->rcv_wscale;
        if (win > 65535)
            win = 65535;
        if ((c->flags & TF_ECE_ECHO) && !(flags & TW_TCP_RST))
            flags |= TW_TCP_ECE;
    }
    uint8_t tos = 0;
    /* RFC 3168 6.1.5: new data is ECT(0); retransmissions, pure ACKs and
     * probes are not, so a mark always means fresh congestion. */
    if ((c->flags & TF_ECN) && len && SEQ_GEQ(seq, c->snd_max)) {
        tos = TW_IP_ECN_ECT0;
        if (c->flags & TF_SEND_CWR) {
            flags |= TW_TCP_CWR;
            c->flags &= ~TF_SEND_CWR;
            st->stats.cwr_sent++;
        }
    }
    uint32_t tcp_len = (uint32_t)sizeof(tw_tcp_hdr) + optlen + len;
    ip->tos = tos;
    ip->total_len_be = tw_htobe16((uint16_t)(sizeof(tw_ipv4_hdr) + tcp_len));
    ip->id_be = tw_htobe16(st->ip_id++);
    tcp->seq_be = tw_htobe32(seq);
    tcp->ack_be = (flags & TW_TCP_ACK) ? tw_htobe32(c->rcv_nxt) : 0;
    tcp->off = (uint8_t)(((sizeof(tw_tcp_hdr) + optlen) / 4) << 4);
    tcp->flags = flags;
    tcp->win_be = tw_htobe16((uint16_t)win);
    uint8_t *payload = opt + optlen;
    /* Data only from the ring: never past what the application wrote. */
    TW_VERIFY(!len || SEQ_LEQ(seq + len, c->snd_end));
    if (len) {
        uint32_t off = (seq - c->iss - 1) & (c->tx_size - 1);
        uint32_t first = c->tx_size - off < len ? c->tx_size - off : len;
        memcpy(payload, c->tx_buf + off, first);
        memcpy(payload + first, c->tx_buf, len - first);
    }
    pkt.len = (uint32_t)(TW_NET_HDR_LEN + optlen + len);
    if (pkt.len < 60) {
        memset(f + pkt.len, 0, 60 - pkt.len);
        pkt.len = 60;
    }
    uint64_t ps = c->hdr_csum_part + (uint64_t)tw_htobe16((uint16_t)tcp_len);
    if (st->cfg.use_offload && (st->port->caps & TW_PORT_CAP_TX_CKSUM)) {
        /* The port completes both checksums; the TCP field carries the
         * folded pseudo-header sum, as NICs expect (DPDK convention). */
        ip->cksum = 0;
        tcp->cksum = (uint16_t)~tw_net_csum_fold(ps);
        pkt.ol_flags |= TW_PKT_TX_IP_CKSUM | TW_PKT_TX_TCP_CKSUM;
    } else {
        ip->cksum = tw_net_csum_fold(tw_net_csum_add(0, ip, sizeof(*ip)));
        tcp->cksum = tw_net_csum_fold(tw_net_csum_add(ps, tcp, tcp_len));
    }
    if (flags & TW_TCP_ACK) {
        /* The right edge the peer now holds (a SYN's window is unscaled). */
        uint32_t edge = c->rcv_nxt + ((flags & TW_TCP_SYN) ? win : win << c->rcv_wscale);
        if ((flags & TW_TCP_SYN) || SEQ_GT(edge, c->rcv_adv))
            c->rcv_adv = edge;
        c->flags &= ~(TF_ACK_NOW | TF_WND_UPDATE);
        c->last_ack_sent = c->rcv_nxt;
        c->delack_at_ns = 0;
        c->unacked_segs = 0;
    }
    st->stats.tx_segs++;
    if (len) {
        st->stats.tx_data_bytes += len;
        tw__tcp_rs_sent(c, seq, len, now_ns);
    } else if (!(flags & (TW_TCP_SYN | TW_TCP_FIN | TW_TCP_RST))) {
        st->stats.tx_acks++;
    }
    tw__net_tx(st, &pkt);
    return 0;
}

void tw__tcp_send_ack(tw_tcp_conn *c, int64_t now_ns)
{
    /* A pure ACK carries snd_max, not snd_nxt (BSD): after a go-back
     * snd_nxt is behind what the peer has already acknowledged, and the
     * peer would find snd_nxt out of its window. */
    tw__tcp_send_seg(c, c->snd_max, 0, TW_TCP_ACK, now_ns);
}

void tw__tcp_send_rst_reply(tw_net *st, const tw_net_parsed *pp, int64_t now_ns)
{
    (void)now_ns;
    const tw_tcp_hdr *in = pp->tcp;
    if (in->flags & TW_TCP_RST)
        return; /* never answer a RST */
    tw_pkt pkt;
    if (tw__net_alloc(st, &pkt))
        return;
    uint8_t *f = pkt.data;
    tw_eth_hdr *eth = (tw_eth_hdr *)f;
    memcpy(eth->dst, pp->eth->src, 6);
    memcpy(eth->src, st->mac, 6);
    eth->type_be = tw_htobe16(TW_ETHERTYPE_IPV4);
    tw_ipv4_hdr *ip = (tw_ipv4_hdr *)(eth + 1);
    memset(ip, 0, sizeof(*ip));
    ip->ver_ihl = 0x45;
    ip->total_len_be = tw_htobe16(40);
    ip->id_be = tw_htobe16(st->ip_id++);
    ip->frag_be = tw_htobe16(TW_IP_FLAG_DF);
    ip->ttl = 64;
    ip->proto = TW_IP_PROTO_TCP;
    ip->src_be = pp->ip->dst_be;
    ip->dst_be = pp->ip->src_be;
    ip->cksum = tw_net_csum_fold(tw_net_csum_add(0, ip, sizeof(*ip)));
    tw_tcp_hdr *t = (tw_tcp_hdr *)(ip + 1);
    memset(t, 0, sizeof(*t));
    t->sport_be = in->dport_be;
    t->dport_be = in->sport_be;
    t->off = 5 << 4;
    /* RFC 793 "Reset Generation": with ACK, seq = their ack; without,
     * seq 0 and ack = their seq + segment length. */
    if (in->flags & TW_TCP_ACK) {
        t->seq_be = in->ack_be;
        t->flags = TW_TCP_RST;
    } else {
        uint32_t seglen = pp->payload_len + !!(in->flags & TW_TCP_SYN) +
                          !!(in->flags & TW_TCP_FIN);
        t->ack_be = tw_htobe32(tw_be32(in->seq_be) + seglen);
        t->flags = TW_TCP_RST | TW_TCP_ACK;
    }
    tw_ipv4_pseudo_hdr ph = {ip->src_be, ip->dst_be, 0, TW_IP_PROTO_TCP,
                             tw_htobe16(20)};
    t->cksum = tw_net_csum_fold(
        tw_net_csum_add(tw_net_csum_add(0, &ph, sizeof(ph)), t, sizeof(*t)));
    memset(f + 54, 0, 6);
    pkt.len = 60;
    st->stats.tx_rst++;
    tw__net_tx(st, &pkt);
}

static int data_state(uint32_t s)
{
    return s == TW_TCP_ESTABLISHED || s == TW_TCP_CLOSE_WAIT ||
           s == TW_TCP_FIN_WAIT_1 || s == TW_TCP_CLOSING || s == TW_TCP_LAST_ACK;
}

void tw__tcp_output(tw_tcp_conn *c, int64_t now_ns)
{
    tw_net *st = c->st;
    if (c->state == TW_TCP_SYN_SENT || c->state == TW_TCP_SYN_RCVD) {
        if (c->flags & TF_SEND_SYN) {
            uint8_t fl = c->state == TW_TCP_SYN_SENT ? TW_TCP_SYN
                                                     : (TW_TCP_SYN | TW_TCP_ACK);
            if (tw__tcp_send_seg(c, c->iss, 0, fl, now_ns) == 0) {
                c->flags &= ~TF_SEND_SYN;
                c->snd_nxt = c->iss + 1;
                if (c->snd_max == c->iss) {
                    c->snd_max = c->iss + 1;
                    c->rtt_seq = c->iss + 1; /* time the handshake (Karn: first SYN only) */
                    c->rtt_start_ns = now_ns ? now_ns : 1;
                }
            }
            if (!c->rto_at_ns)
                tw__tcp_arm_rto(c, now_ns);
        }
        if (c->state == TW_TCP_SYN_RCVD && (c->flags & TF_ACK_NOW))
            tw__tcp_send_ack(c, now_ns);
        return;
    }
    if (data_state(c->state)) {
        uint32_t wnd = c->snd_wnd < c->cwnd ? c->snd_wnd : c->cwnd;
        int sent_any = 0;
        if ((c->flags & (TF_SACK | TF_IN_RECOVERY)) == (TF_SACK | TF_IN_RECOVERY) &&
            c->state != TW_TCP_CLOSED)
            tw__sack_output(c, now_ns);
        /* Bounded: at most one pass over the ring's bytes. */
        while (!(c->flags & TF_IN_RECOVERY && c->flags & TF_SACK) &&
               SEQ_LT(c->snd_nxt, c->snd_end)) {
            /* Going back after an RTO: what the peer SACKed since is
             * skipped (the scoreboard was emptied at the RTO, so a
             * receiver that reneged gets everything again). */
            uint32_t sk;
            if ((c->flags & TF_SACK) && SEQ_LT(c->snd_nxt, c->snd_max) &&
                tw__sack_covered(&c->sb, c->snd_nxt, &sk)) {
                c->snd_nxt = SEQ_LT(sk, c->snd_end) ? sk : c->snd_end;
                continue;
            }
            uint32_t inflight = c->snd_nxt - c->snd_una;
            uint32_t usable = wnd > inflight ? wnd - inflight : 0;
            if (!usable)
                break;
            uint32_t len = c->snd_end - c->snd_nxt;
            if (len > c->mss)
                len = c->mss;
            if (len > usable)
                len = usable;
            if ((c->flags & TF_SACK) && SEQ_LT(c->snd_nxt, c->snd_max)) {
                uint32_t hs, hl; /* stop at the next SACKed block */
                if (!tw__sack_next_hole(&c->sb, c->snd_nxt, c->snd_nxt + len, len, &hs, &hl) &&
                    hs == c->snd_nxt)
                    len = hl;
            }
            tw__tcp_tokens_refill(c, now_ns);
            if (c->tokens < len) {
                uint64_t need = len - c->tokens;
                c->pace_at_ns = now_ns + need * 1000000000ull / c->rate_Bps + 1;
                st->stats.rate_limited++;
                break;
            }
            int retx = SEQ_LT(c->snd_nxt, c->snd_max);
            uint8_t fl = TW_TCP_ACK;
            if (c->snd_nxt + len == c->snd_end)
                fl |= TW_TCP_PSH; /* no Nagle: every write is pushed */
            if (tw__tcp_send_seg(c, c->snd_nxt, len, fl, now_ns))
                break;
            sent_any = 1;
            c->tokens -= len;
            if (retx)
                st->stats.retransmits++;
            else if (!c->rtt_start_ns) {
                c->rtt_seq = c->snd_nxt + len;
                c->rtt_start_ns = now_ns ? now_ns : 1;
            }
            c->snd_nxt += len;
            if (SEQ_GT(c->snd_nxt, c->snd_max))
                c->snd_max = c->snd_nxt;
            if (!c->rto_at_ns)
                tw__tcp_arm_rto(c, now_ns);
        }
        (void)sent_any;
        if ((c->flags & TF_FIN_PENDING) && c->snd_nxt == c->snd_end) {
            if (tw__tcp_send_seg(c, c->snd_end, 0, TW_TCP_FIN | TW_TCP_ACK,
                                 now_ns) == 0) {
                if (SEQ_LT(c->snd_end, c->snd_max))
                    st->stats.retransmits++;
                c->flags |= TF_FIN_SENT;
                c->snd_nxt = c->snd_end + 1;
                if (SEQ_GT(c->snd_nxt, c->snd_max))
                    c->snd_max = c->snd_nxt;
                if (!c->rto_at_ns)
                    tw__tcp_arm_rto(c, now_ns);
            }
        }
        /* Zero window with data waiting and nothing in flight: probe. */
        if (c->snd_wnd == 0 && SEQ_LT(c->snd_nxt, c->snd_end) &&
            c->snd_una == c->snd_nxt && !c->persist_at_ns) {
            uint64_t t = c->rto_ns << (c->persist_backoff < 10 ? c->persist_backoff : 10);
            if (t > st->cfg.rto_max_ns)
                t = st->cfg.rto_max_ns;
            c->persist_at_ns = now_ns + t;
        }
    }
    if (c->flags & (TF_ACK_NOW | TF_WND_UPDATE)) {
        if (c->state != TW_TCP_CLOSED && c->state != TW_TCP_LISTEN &&
            c->state != TW_TCP_SYN_SENT)
            tw__tcp_send_ack(c, now_ns);
    }
}
