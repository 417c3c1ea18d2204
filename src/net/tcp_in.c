/* TCP input path: demultiplexing, passive open, the RFC 793 segment
 * processing order (sequence check, RST, SYN, ACK, data, FIN) hardened per
 * RFC 5961, RTT samples, fast retransmit, ECN, and in-order delivery into
 * the receive ring through a small bounded list of out-of-order ranges. */
#include <errno.h>

#include "net/net_internal.h"

typedef struct seg_info {
    uint32_t seq, ack, wnd;   /* wnd unscaled as on the wire */
    uint32_t dlen;            /* payload bytes */
    uint8_t flags;
    uint8_t ecn;              /* IP ECN bits */
    tw_tcp_opts o;            /* options (tcp_sack.c) */
    const uint8_t *data;
} seg_info;

/* SYN options: the MSS, window scale, and which of SACK and timestamps
 * both sides offered (c->flags says what we offer: TF_SACK, TF_TS). */
static void apply_syn_opts(tw_tcp_conn *c, const seg_info *s, int64_t now_ns)
{
    if (!s->o.sack_ok)
        c->flags &= ~TF_SACK;
    if (!s->o.has_ts) {
        c->flags &= ~TF_TS;
    } else if (c->flags & TF_TS) {
        c->ts_recent = s->o.tsval;
        c->ts_recent_ns = now_ns;
        c->flags |= TF_TS_RECENT;
    }
    uint16_t mss = s->o.mss ? s->o.mss : 536; /* RFC 1122 default */
    if (mss < 64)
        mss = 64; /* a tiny MSS is a resource attack; refuse to go below */
    if (mss < c->mss)
        c->mss = mss;
    if (s->o.wscale >= 0) {
        c->snd_wscale = (uint8_t)s->o.wscale;
    } else {
        /* Scaling only when both sides offer it (RFC 7323 1.3). */
        c->snd_wscale = 0;
        c->rcv_wscale = 0;
    }
    /* Options and payload share the MSS (RFC 6691): with timestamps on
     * every segment, 12 bytes less of data. */
    c->mss_opt = c->mss;
    if (c->flags & TF_TS)
        c->mss = (uint16_t)(c->mss - 12);
    TW_ASSERT(c->mss >= 52 && c->snd_wscale <= 14 && c->rcv_wscale <= 14);
}

static void accept_syn(tw_net *st, const tw_net_parsed *pp, const seg_info *s,
                       int64_t now_ns)
{
    uint16_t lport = tw_be16(pp->tcp->dport_be);
    tw_tcp_listener *l = NULL;
    for (unsigned i = 0; i < st->cfg.max_listeners; i++)
        if (st->listeners[i] && st->listeners[i]->port == lport)
            l = st->listeners[i];
    if (!l || (s->flags & (TW_TCP_RST | TW_TCP_ACK | TW_TCP_FIN)) ||
        !(s->flags & TW_TCP_SYN)) {
        st->stats.rx_tcp_no_conn++;
        tw__tcp_send_rst_reply(st, pp, now_ns);
        return;
    }
    uint32_t rip = tw_be32(pp->ip->src_be);
    uint16_t rport = tw_be16(pp->tcp->sport_be);
    if (pp->eth->src[0] & 1) { /* a group address is never a sender */
        st->stats.rx_tcp_bad++;
        return;
    }
    tw_tcp_conn *c = l->accept(l, rip, rport, l->user);
    if (!c || tw__tcp_conn_in_use(st, c)) { /* NULL, or memory still in use */
        st->stats.listen_overflow++;
        tw__tcp_send_rst_reply(st, pp, now_ns);
        return;
    }
    if (tw__tcp_conn_open(st, c, rip, rport, lport, now_ns)) {
        st->stats.listen_overflow++;
        tw__tcp_send_rst_reply(st, pp, now_ns);
        return;
    }
    c->irs = s->seq;
    c->rcv_nxt = c->rx_head = c->rx_tail = s->seq + 1;
    c->rcv_adv = c->rcv_nxt;
    if (!c->cfg.no_sack)
        c->flags |= TF_SACK;
    if (!c->cfg.no_timestamps)
        c->flags |= TF_TS;
    apply_syn_opts(c, s, now_ns);
    c->snd_wnd = s->wnd; /* never scaled in a SYN */
    c->snd_wl1 = s->seq;
    c->snd_wl2 = c->iss;
    /* RFC 3168 6.1.1: an ECN-setup SYN has both ECE and CWR. */
    if (st->cfg.ecn && (s->flags & (TW_TCP_ECE | TW_TCP_CWR)) ==
                           (TW_TCP_ECE | TW_TCP_CWR))
        c->flags |= TF_ECN;
    /* The ARP table is the authority on where to send; without an entry,
     * answer where the SYN came from (the peer or its gateway). */
    if (tw__net_arp_lookup(st, rip, c->remote_mac))
        memcpy(c->remote_mac, pp->eth->src, 6);
    tw__tcp_build_template(c);
    tw__tcp_conn_init_rate(c, now_ns); /* after apply_syn_opts: the bucket size needs the MSS */
    TW_ASSERT(c->state == TW_TCP_CLOSED && c->rcv_nxt == c->irs + 1 && c->snd_nxt == c->iss);
    c->state = TW_TCP_SYN_RCVD;
    c->flags |= TF_SEND_SYN;
    st->stats.conns_accepted++;
    /* The next segment of this 4-tuple finds this connection (tw__tcp_input
     * came here because it found none). */
    TW_ASSERT(tw__tcp_lookup(st, rip, rport, lport) == c);
}

/* Stores [seq, seq+len) in the receive ring and advances rx_tail over
 * whatever became contiguous.  Returns the in-order bytes added. */
static uint32_t rx_store(tw_tcp_conn *c, uint32_t seq, const uint8_t *p,
                         uint32_t len)
{
    tw_net *st = c->st;
    /* The caller trimmed the segment to [rx_tail, rx_head + rx_size): what
     * tw_tcp_recv_consume releases (TW_VERIFY there) never passes what is
     * stored here, and nothing is stored past the ring. */
    TW_ASSERT(len > 0 && SEQ_GEQ(seq, c->rx_tail) &&
              SEQ_LEQ(seq + len, c->rx_head + c->rx_size));
    uint32_t mask = c->rx_size - 1;
    uint32_t off = (seq - c->irs - 1) & mask;
    uint32_t first = c->rx_size - off < len ? c->rx_size - off : len;
    /* Bytes beyond rx_tail belong to no reader yet; rewriting a range with
     * a retransmission of it writes the same bytes. */
    memcpy(c->rx_buf + off, p, first);
    memcpy(c->rx_buf, p + first, len - first);
    uint32_t before = c->rx_tail;
    if (seq == c->rx_tail) {
        c->rx_tail += len;
        while (c->ooo_n && SEQ_LEQ(c->ooo[0][0], c->rx_tail)) {
            if (SEQ_GT(c->ooo[0][1], c->rx_tail))
                c->rx_tail = c->ooo[0][1];
            c->ooo_n--;
            memmove(c->ooo[0], c->ooo[1], c->ooo_n * sizeof(c->ooo[0]));
            c->flags |= TF_ACK_NOW; /* a hole was filled: tell the sender now */
        }
        TW_ASSERT(c->rx_tail - c->rx_head <= c->rx_size);
        TW_ASSERT(!c->ooo_n || SEQ_GT(c->ooo[0][0], c->rx_tail));
        return c->rx_tail - before;
    }
    /* Out of order: merge into the sorted list of disjoint ranges. */
    uint32_t s = seq, e = seq + len;
    unsigned i = 0, n = c->ooo_n;
    while (i < n && SEQ_LT(c->ooo[i][1], s))
        i++;
    unsigned j = i;
    while (j < n && SEQ_LEQ(c->ooo[j][0], e)) {
        if (SEQ_LT(c->ooo[j][0], s))
            s = c->ooo[j][0];
        if (SEQ_GT(c->ooo[j][1], e))
            e = c->ooo[j][1];
        j++;
    }
    if (i == j && n == TW_ARRAY_SIZE(c->ooo)) {
        /* No room for another range.  Keep what lies nearest rcv_nxt:
         * that is what the next retransmission joins to the stream, and
         * what a sender without SACK resends last (one partial ACK or one
         * backed-off RTO per hole, Karn giving it no RTT sample to undo
         * the backoff).  Dropping the new range instead kept the highest
         * ones and turned every later reordering into another hole, which
         * stalled the kernel's tail retransmissions for tens of seconds.
         * So the highest range is forgotten, or the new one if it is the
         * highest (bytes not in a range count as never received; no ACK
         * covered them, the sender resends them). */
        st->stats.rx_tcp_ooo_drop++;
        if (i == n)
            return 0;
        n--;
    }
    /* Replace ranges [i, j) by the merged one. */
    memmove(c->ooo[i + 1], c->ooo[j], (n - j) * sizeof(c->ooo[0]));
    c->ooo[i][0] = s;
    c->ooo[i][1] = e;
    c->ooo_n = n - (j - i) + 1;
    st->stats.rx_tcp_ooo++;
    tw__sack_note_arrival(c, seq);
    /* Every held range lies past the hole at rx_tail. */
    TW_ASSERT(c->ooo_n <= TW_ARRAY_SIZE(c->ooo) && SEQ_GT(c->ooo[0][0], c->rx_tail));
    return 0;
}

/* ---- the loss rule's recent RTT ---------------------------------------- */

static void rs_drop(tw_tcp_conn *c, uint32_t i)
{
    memmove(&c->rs_end[i], &c->rs_end[i + 1], (c->rs_n - i - 1) * sizeof(c->rs_end[0]));
    memmove(&c->rs_at[i], &c->rs_at[i + 1], (c->rs_n - i - 1) * sizeof(c->rs_at[0]));
    c->rs_n--;
}

void tw__tcp_rs_sent(tw_tcp_conn *c, uint32_t seq, uint32_t len, int64_t now_ns)
{
    if (seq == c->snd_max) {
        if (c->rs_n < TW_ARRAY_SIZE(c->rs_end)) {
            c->rs_end[c->rs_n] = seq + len;
            c->rs_at[c->rs_n++] = now_ns;
        }
        return;
    }
    /* A retransmission: an ACK for these bytes may answer either copy.  A
     * timed segment is at most one MSS: every one that may overlap goes. */
    for (uint32_t i = 0; i < c->rs_n;) {
        if (SEQ_GEQ(c->rs_end[i] - c->mss, seq + len))
            break;
        if (SEQ_GT(c->rs_end[i], seq))
            rs_drop(c, i);
        else
            i++;
    }
}

/* The latest RTT sample and the least, from either timer; returns the
 * sample, at least 1 ns (0 means "none"). */
static uint64_t rtt_note(tw_tcp_conn *c, uint64_t r)
{
    r = r ? r : 1;
    c->rtt_last_ns = r;
    if (!c->rtt_min_ns || r < c->rtt_min_ns)
        c->rtt_min_ns = r;
    return r;
}

static void rs_sample(tw_tcp_conn *c, uint64_t r, int64_t now_ns)
{
    r = rtt_note(c, r);
    uint64_t w = c->srtt_ns ? c->srtt_ns : r;
    if (!c->rtt_win_at_ns || now_ns - c->rtt_win_at_ns >= (int64_t)w) {
        /* A new window; the last one only when it just ended. */
        int fresh = c->rtt_win_at_ns && now_ns - c->rtt_win_at_ns < 2 * (int64_t)w;
        c->rtt_win_ns[1] = fresh ? c->rtt_win_ns[0] : 0;
        c->rtt_win_ns[0] = r;
        c->rtt_win_at_ns = now_ns;
    } else if (r < c->rtt_win_ns[0]) {
        c->rtt_win_ns[0] = r;
    }
}

void tw__tcp_rs_acked(tw_tcp_conn *c, uint32_t ack, int sacked, int64_t now_ns)
{
    for (uint32_t i = 0; i < c->rs_n;) {
        uint32_t end;
        if (SEQ_LEQ(c->rs_end[i], ack) ||
            (sacked && tw__sack_covered(&c->sb, c->rs_end[i] - 1, &end))) {
            if (now_ns >= c->rs_at[i])
                rs_sample(c, (uint64_t)(now_ns - c->rs_at[i]), now_ns);
            rs_drop(c, i);
        } else if (!sacked) {
            break;
        } else {
            i++;
        }
    }
}

uint64_t tw__tcp_rtt_recent(const tw_tcp_conn *c, int64_t now_ns)
{
    uint64_t w = c->srtt_ns ? c->srtt_ns : c->rtt_win_ns[0];
    if (!c->rtt_win_at_ns || now_ns - c->rtt_win_at_ns >= 2 * (int64_t)w)
        return 0;
    uint64_t r = c->rtt_win_ns[0];
    if (c->rtt_win_ns[1] && c->rtt_win_ns[1] < r)
        r = c->rtt_win_ns[1];
    return r;
}

static void retransmit_head(tw_tcp_conn *c, int64_t now_ns);
static void challenge_ack(tw_tcp_conn *c, int64_t now_ns);

static void enter_time_wait(tw_tcp_conn *c, int64_t now_ns)
{
    /* Only after both FINs, ours acknowledged (RFC 793 p.22). */
    TW_ASSERT(c->state == TW_TCP_FIN_WAIT_1 || c->state == TW_TCP_FIN_WAIT_2 ||
              c->state == TW_TCP_CLOSING || c->state == TW_TCP_TIME_WAIT);
    TW_ASSERT((c->flags & (TF_FIN_SENT | TF_PEER_FIN)) == (TF_FIN_SENT | TF_PEER_FIN));
    c->state = TW_TCP_TIME_WAIT;
    c->rto_at_ns = c->persist_at_ns = c->keepalive_at_ns = 0;
    c->timewait_at_ns = now_ns + c->st->cfg.time_wait_ns;
}

static void on_new_ack(tw_tcp_conn *c, const seg_info *s, int64_t now_ns)
{
    tw_net *st = c->st;
    /* The caller checked the ACK: new, and for nothing we never sent. */
    TW_ASSERT(SEQ_GT(s->ack, c->snd_una) && SEQ_LEQ(s->ack, c->snd_max));
    uint32_t acked = s->ack - c->snd_una;
    if (c->snd_una == c->iss)
        acked--; /* the SYN is not data: it does not grow cwnd */
    if (c->rtt_start_ns && SEQ_GEQ(s->ack, c->rtt_seq)) {
        uint64_t r = (uint64_t)(now_ns - c->rtt_start_ns);
        tw__tcp_rtt_sample(c, r);
        rtt_note(c, r);
        c->rtt_start_ns = 0;
    } else if (!c->rtt_start_ns && (c->flags & TF_TS) && s->o.has_ts && s->o.tsecr) {
        /* No timed segment (Karn stopped it at a retransmission): the
         * echoed timestamp still times this ACK (RFC 7323 4.1), in ms. */
        int32_t ms = (int32_t)(tw__tcp_tsval(c, now_ns) - s->o.tsecr);
        if (ms >= 0) {
            tw__tcp_rtt_sample(c, (uint64_t)ms * 1000000u);
            st->stats.ts_rtt_samples++;
        }
    }
    uint32_t old_data_una = tcp_data_una(c);
    c->snd_una = s->ack;
    if (SEQ_GT(s->ack, c->snd_nxt))
        c->snd_nxt = s->ack; /* the receiver had later bytes already */
    c->retries = 0;
    if ((c->flags & (TF_IN_RECOVERY | TF_RECOV_RANDOM)) == (TF_IN_RECOVERY | TF_RECOV_RANDOM)) {
        /* A recovery from random loss is not a congestion event: the
         * window grows as if nothing was lost.  A cumulative ACK here
         * covers what the receiver held past the holes, bytes delivered
         * over the last round trip, so all of them count (no L cap: the
         * cap guards against ACK division, and these are real bytes). */
        if (SEQ_GEQ(s->ack, c->recover))
            c->flags &= ~(TF_IN_RECOVERY | TF_RECOV_RANDOM);
        if (c->cwnd < c->ssthresh) {
            c->cwnd += acked;
        } else {
            uint32_t a = acked < c->cwnd ? acked : c->cwnd;
            uint32_t inc = (uint32_t)((uint64_t)c->mss * a / c->cwnd);
            c->cwnd += inc ? inc : 1;
        }
    } else if (c->flags & TF_IN_RECOVERY) {
        if (SEQ_GEQ(s->ack, c->recover)) {
            c->flags &= ~TF_IN_RECOVERY;
            c->cwnd = c->ssthresh;
        } else if (c->flags & TF_SACK) {
            /* RFC 6675: a partial ACK keeps cwnd; NextSeg picks the
             * holes (tcp_out.c). */
        } else {
            /* NewReno partial ACK (RFC 6582): resend the next hole. */
            retransmit_head(c, now_ns);
            c->cwnd = c->cwnd > acked ? c->cwnd - acked + c->mss : c->mss;
        }
    } else if (c->cwnd < c->ssthresh) {
        /* Slow start counting bytes (RFC 3465) without its limit L of
         * 2 SMSS per ACK, as Linux does: a receiver that acknowledges a
         * whole rx burst at once (ours, or Linux's with GRO) sends
         * stretch ACKs, and L would count a fraction of what they report
         * delivered (one ACK for four segments grew cwnd by two; stack <->
         * stack took 1.2x as long to send 1 MiB).  The bytes are real:
         * snd_una moved by them, so splitting ACKs gains a receiver
         * nothing. */
        c->cwnd += acked;
    } else {
        /* Congestion avoidance, counting bytes (RFC 3465 2.1): about one
         * SMSS per RTT whether the peer ACKs every segment or every
         * second one. */
        uint32_t a = acked < c->cwnd ? acked : c->cwnd;
        uint32_t inc = (uint32_t)((uint64_t)c->mss * a / c->cwnd);
        c->cwnd += inc ? inc : 1;
    }
    if (c->cwnd > (1u << 30))
        c->cwnd = 1u << 30;
    c->dupacks = 0;
    c->flags &= ~TF_TLP_SENT;
    c->tlp_n = 0;
    if (c->snd_una == c->snd_max)
        c->rto_at_ns = 0;
    else
        tw__tcp_arm_rto(c, now_ns);
    if (tcp_data_una(c) != old_data_una)
        tw__net_event(c, TW_TCP_EV_WRITABLE);
    /* ECN rate recovery: one additive step per RTT without a cut. */
    uint64_t rtt = c->srtt_ns ? c->srtt_ns : st->cfg.rto_min_ns;
    if (now_ns - c->rate_epoch_ns >= (int64_t)rtt && c->rate_Bps < st->cfg.rate_max_Bps) {
        c->rate_Bps += st->cfg.rate_add_Bps;
        if (c->rate_Bps > st->cfg.rate_max_Bps)
            c->rate_Bps = st->cfg.rate_max_Bps;
        c->rate_epoch_ns = now_ns;
    }
    TW_ASSERT(c->snd_una == s->ack && SEQ_LEQ(c->snd_nxt, c->snd_max));
}

/* Resends the first unacknowledged segment: only bytes already sent
 * (never past snd_max, which would put data on the wire that snd_max does
 * not account for), or the FIN when that is all that is outstanding. */
static void retransmit_head(tw_tcp_conn *c, int64_t now_ns)
{
    tw_net *st = c->st;
    TW_ASSERT(SEQ_LEQ(c->snd_una, c->snd_max) && SEQ_LEQ(c->snd_max, c->snd_end + 1));
    uint32_t end = SEQ_LT(c->snd_max, c->snd_end) ? c->snd_max : c->snd_end;
    if (SEQ_LT(c->snd_una, end)) {
        uint32_t len = end - c->snd_una;
        if (len > c->mss)
            len = c->mss;
        if (!tw__tcp_send_seg(c, c->snd_una, len, TW_TCP_ACK, now_ns))
            st->stats.retransmits++;
    } else if ((c->flags & TF_FIN_SENT) && c->snd_una == c->snd_end) {
        if (!tw__tcp_send_seg(c, c->snd_end, 0, TW_TCP_FIN | TW_TCP_ACK, now_ns))
            st->stats.retransmits++;
    }
}

static void fast_retransmit(tw_tcp_conn *c, int64_t now_ns)
{
    tw_net *st = c->st;
    /* Entered once per loss episode, with data outstanding. */
    TW_ASSERT(!(c->flags & TF_IN_RECOVERY) && SEQ_GT(c->snd_max, c->snd_una));
    uint32_t flight = c->snd_max - c->snd_una;
    /* RFC 5681 3.2 halves; with SACK the decrease is CUBIC's beta of 0.7
     * (RFC 9438 4.6), as Linux's: a recovery that knows exactly what was
     * lost need not give up half of the window. */
    uint32_t keep = flight / 2;
    int random = 0;
    if (c->flags & TF_SACK) {
        /* A loss with the path's queue empty (the latest timed RTT within
         * loss_rtt_pct of the least seen) is random loss, not a full
         * buffer: cwnd and ssthresh stay as they are (a slow start goes on
         * after it), and the recovery only resends.  A queue that
         * overflows shows first as a grown RTT, and then the decrease
         * applies; without a timed sample it applies.  The RTT is the
         * least of the samples over the last two SRTT (tw__tcp_rtt_recent:
         * a late wake-up or a delayed ACK lengthens one sample, a queue
         * lengthens them all), else the latest. */
        uint64_t lim = c->rtt_min_ns * st->cfg.loss_rtt_pct / 100u;
        uint64_t recent = tw__tcp_rtt_recent(c, now_ns);
        if (!recent)
            recent = c->rtt_last_ns;
        if (c->rtt_min_ns && recent && recent <= lim) {
            random = 1;
            st->stats.sack_random_losses++;
        } else {
            keep = (uint32_t)((uint64_t)flight * 7 / 10);
        }
    }
    if (!random) {
        c->ssthresh = keep > 2u * c->mss ? keep : 2u * c->mss;
        c->cwnd = c->ssthresh + 3u * c->mss;
    }
    c->recover = c->snd_max;
    c->flags |= TF_IN_RECOVERY;
    c->rtt_start_ns = 0; /* Karn */
    st->stats.fast_retransmits++;
    if (c->flags & TF_SACK) {
        /* RFC 6675 5 (4.2): cwnd = ssthresh (kept for random loss),
         * the first segment resent now; HighRxt marks it; RescueRxt
         * undefined. */
        if (random)
            c->flags |= TF_RECOV_RANDOM;
        else
            c->cwnd = c->ssthresh;
        c->flags &= ~TF_RESCUE_SET;
        c->snd_nxt = c->snd_max;
        st->stats.sack_recoveries++;
        uint32_t end = SEQ_LT(c->snd_max, c->snd_end) ? c->snd_max : c->snd_end;
        uint32_t len = end - c->snd_una > c->mss ? c->mss : end - c->snd_una;
        c->high_rxt = c->snd_una + (SEQ_LT(c->snd_una, end) ? len : 0);
    }
    retransmit_head(c, now_ns);
    if (c->flags & TF_SACK) {
        c->rxt_log[0][0] = c->snd_una;
        c->rxt_log[0][1] = c->snd_max;
        c->rxt_log_n = 1;
    }
    tw__tcp_arm_rto(c, now_ns);
}

/* RFC 5961 7: challenge ACKs are rate-limited (100 per second per
 * connection) so that a flood of forged segments cannot turn the stack
 * into an ACK amplifier. */
static void challenge_ack(tw_tcp_conn *c, int64_t now_ns)
{
    if (now_ns - c->challenge_at_ns >= 1000000000ll || now_ns < c->challenge_at_ns) {
        c->challenge_at_ns = now_ns;
        c->challenge_n = 0;
    }
    if (c->challenge_n >= 100) {
        c->st->stats.challenge_acks_limited++;
        return;
    }
    c->challenge_n++;
    TW_ASSERT(c->challenge_n <= 100);
    c->st->stats.challenge_acks++;
    tw__tcp_send_ack(c, now_ns);
}

static void syn_sent_input(tw_tcp_conn *c, const tw_net_parsed *pp,
                           const seg_info *s, int64_t now_ns)
{
    tw_net *st = c->st;
    TW_ASSERT(c->state == TW_TCP_SYN_SENT && c->snd_una == c->iss);
    if (s->flags & TW_TCP_ACK) {
        if (SEQ_LEQ(s->ack, c->iss) || SEQ_GT(s->ack, c->snd_max)) {
            st->stats.rx_tcp_out_of_window++;
            tw__tcp_send_rst_reply(st, pp, now_ns);
            return;
        }
    }
    if (s->flags & TW_TCP_RST) {
        if (s->flags & TW_TCP_ACK) { /* acceptable ACK checked above */
            st->stats.rx_rst++;
            st->stats.conns_reset++;
            tw__tcp_set_closed(c, TW_TCP_EV_RESET);
        } else {
            st->stats.rx_rst_ignored++;
        }
        return;
    }
    if (!(s->flags & TW_TCP_SYN))
        return;
    c->irs = s->seq;
    c->rcv_nxt = c->rx_head = c->rx_tail = s->seq + 1;
    c->rcv_adv = c->rcv_nxt;
    apply_syn_opts(c, s, now_ns);
    /* RFC 3168 6.1.1: the ECN-setup SYN-ACK has ECE and not CWR. */
    if ((s->flags & (TW_TCP_ECE | TW_TCP_CWR)) != TW_TCP_ECE)
        c->flags &= ~TF_ECN;
    if (s->flags & TW_TCP_ACK) {
        if (c->rtt_start_ns && SEQ_GEQ(s->ack, c->rtt_seq)) {
            tw__tcp_rtt_sample(c, now_ns - c->rtt_start_ns);
            c->rtt_start_ns = 0;
        }
        c->snd_una = s->ack;
        c->snd_wnd = s->wnd; /* unscaled in the SYN-ACK */
        c->snd_wl1 = s->seq;
        c->snd_wl2 = s->ack;
        c->retries = 0;
        c->rto_at_ns = 0;
        if (c->rto_ns > st->cfg.rto_init_ns || !c->srtt_ns)
            c->rto_ns = c->srtt_ns ? c->rto_ns : st->cfg.rto_init_ns;
        c->state = TW_TCP_ESTABLISHED;
        c->flags |= TF_ACK_NOW;
        tw__net_event(c, TW_TCP_EV_CONNECTED);
    } else {
        /* Simultaneous open (RFC 793 p.68): answer with SYN-ACK. */
        c->state = TW_TCP_SYN_RCVD;
        c->snd_wnd = s->wnd;
        c->flags |= TF_SEND_SYN;
        c->snd_nxt = c->iss;
    }
    TW_ASSERT(c->rcv_nxt == c->irs + 1 &&
              (c->state == TW_TCP_ESTABLISHED || c->state == TW_TCP_SYN_RCVD));
}

void tw__tcp_input(tw_net *st, const tw_net_parsed *pp, int64_t now_ns)
{
    const tw_tcp_hdr *th = pp->tcp;
    seg_info s;
    s.seq = tw_be32(th->seq_be);
    s.ack = tw_be32(th->ack_be);
    s.wnd = tw_be16(th->win_be);
    s.flags = th->flags;
    s.dlen = pp->payload_len;
    s.data = pp->payload;
    s.ecn = pp->ip->tos & TW_IP_ECN_MASK;
    if (tw_tcp_parse_opts(pp->tcp_opts, pp->tcp_opts_len, &s.o) ||
        ((s.flags & TW_TCP_SYN) && (s.flags & (TW_TCP_FIN | TW_TCP_RST))) ||
        tw_be16(th->sport_be) == 0 || tw_be16(th->dport_be) == 0) {
        st->stats.rx_tcp_bad++;
        return;
    }
    uint32_t rip = tw_be32(pp->ip->src_be);
    tw_tcp_conn *c = tw__tcp_lookup(st, rip, tw_be16(th->sport_be),
                                    tw_be16(th->dport_be));
    if (!c) {
        accept_syn(st, pp, &s, now_ns);
        return;
    }
    if (c->state == TW_TCP_SYN_SENT) {
        syn_sent_input(c, pp, &s, now_ns);
        return;
    }
    /* SYN_RCVD: a retransmitted SYN means our SYN-ACK was lost. */
    if (c->state == TW_TCP_SYN_RCVD && (s.flags & TW_TCP_SYN) &&
        !(s.flags & TW_TCP_ACK) && s.seq == c->irs) {
        c->flags |= TF_SEND_SYN;
        c->snd_nxt = c->iss;
        return;
    }

    /* 0. Timestamps (RFC 7323 3.2, 5.3 R1): on a timestamped connection
     * a segment other than RST without one is dropped; one whose TSval is
     * older than TS.Recent is an old duplicate (PAWS): acknowledged and
     * dropped, unless TS.Recent is over 24 days old (then it is no
     * longer trusted, 5.5).  A RST is judged by its sequence number only. */
    if ((c->flags & TF_TS) && !(s.flags & TW_TCP_RST)) {
        if (!s.o.has_ts) {
            st->stats.rx_ts_missing++;
            return;
        }
        if ((c->flags & TF_TS_RECENT) && (int32_t)(s.o.tsval - c->ts_recent) < 0) {
            if (now_ns - c->ts_recent_ns > 24ll * 86400 * 1000000000ll) {
                c->flags &= ~TF_TS_RECENT;
            } else {
                st->stats.rx_paws_drop++;
                challenge_ack(c, now_ns);
                return;
            }
        }
    }

    /* 1. Sequence check (RFC 793 p.69), on every segment. */
    uint32_t wnd = tw__tcp_rcv_window(c);
    uint32_t seglen = s.dlen + !!(s.flags & TW_TCP_SYN) + !!(s.flags & TW_TCP_FIN);
    int ok;
    /* A zero-length segment may sit exactly at the right edge: a peer
     * that filled our window sends its ACKs with seq = its snd_nxt = our
     * right edge.  RFC 793's strict test drops every such ACK, so while
     * our window is full of its data (out-of-order data behind a hole
     * included) none of its acknowledgements of our data gets through.
     * Linux and BSD accept it (seq <= rcv_nxt + wnd); a RST keeps the
     * strict test (RFC 5961 3.2). */
    if (seglen == 0)
        ok = wnd == 0 ? s.seq == c->rcv_nxt
                      : SEQ_GEQ(s.seq, c->rcv_nxt) &&
                            ((s.flags & TW_TCP_RST) ? SEQ_LT(s.seq, c->rcv_nxt + wnd)
                                                    : SEQ_LEQ(s.seq, c->rcv_nxt + wnd));
    else if (wnd == 0)
        ok = 0;
    else
        ok = (SEQ_GEQ(s.seq, c->rcv_nxt) && SEQ_LT(s.seq, c->rcv_nxt + wnd)) ||
             (SEQ_GEQ(s.seq + seglen - 1, c->rcv_nxt) &&
              SEQ_LT(s.seq + seglen - 1, c->rcv_nxt + wnd));
    /* A zero window still takes an in-sequence pure ACK or the FIN. */
    if (!ok && wnd == 0 && s.seq == c->rcv_nxt && s.dlen == 0)
        ok = 1;
    if (!ok) {
        st->stats.rx_tcp_out_of_window++;
        if (s.flags & TW_TCP_RST) {
            st->stats.rx_rst_ignored++; /* RFC 5961 3.2: silently */
            return;
        }
        /* A wholly old segment (a retransmission of what we have, or an
         * ACK sent from before the peer's go-back) still carries a valid
         * ACK field: process it (as BSD does) so that two ends that both
         * went back cannot deadlock; its data is trimmed away below. */
        if (!SEQ_LEQ(s.seq + seglen, c->rcv_nxt) || (s.flags & TW_TCP_SYN) ||
            c->state == TW_TCP_SYN_RCVD) {
            /* Beyond the window: answer, but through the challenge-ACK
             * limiter, so two confused ends cannot ping-pong ACKs. */
            challenge_ack(c, now_ns);
            return;
        }
        c->flags |= TF_ACK_NOW;
    }
    /* R3 of RFC 7323 5.3: TS.Recent follows the segments that reach our
     * last acknowledgement (so a delayed ACK does not let a later segment
     * push it past the one the peer will echo). */
    if ((c->flags & TF_TS) && s.o.has_ts && SEQ_LEQ(s.seq, c->last_ack_sent) &&
        (!(c->flags & TF_TS_RECENT) || (int32_t)(s.o.tsval - c->ts_recent) >= 0)) {
        c->ts_recent = s.o.tsval;
        c->ts_recent_ns = now_ns;
        c->flags |= TF_TS_RECENT;
    }
    /* The peer is alive (only segments that passed the window check count,
     * so forged ones cannot keep a dead connection open). */
    c->last_rx_ns = now_ns;
    c->ka_probes_sent = 0;
    c->keepalive_at_ns = 0;

    /* 2. RST (RFC 5961 3.2): exact match resets, in-window challenges. */
    if (s.flags & TW_TCP_RST) {
        if (c->state == TW_TCP_TIME_WAIT) {
            st->stats.rx_rst_ignored++; /* RFC 1337: no TIME_WAIT assassination */
            return;
        }
        if (s.seq == c->rcv_nxt) {
            st->stats.rx_rst++;
            if ((c->state == TW_TCP_CLOSING || c->state == TW_TCP_LAST_ACK) &&
                SEQ_GEQ(c->snd_una, c->snd_end)) {
                /* RFC 793 p.70: in CLOSING and LAST_ACK a reset only ends
                 * the connection.  Both FINs are in and every data byte
                 * was acknowledged: the close happened as agreed and only
                 * our FIN's ACK is missing (a kernel whose socket is gone
                 * answers it, or a late duplicate, with RST).  Reporting
                 * RESET would call a clean close a failure. */
                tw__tcp_set_closed(c, TW_TCP_EV_CLOSED);
                return;
            }
            st->stats.conns_reset++;
            tw__tcp_set_closed(c, TW_TCP_EV_RESET);
        } else {
            st->stats.rx_rst_ignored++;
            challenge_ack(c, now_ns);
        }
        return;
    }
    /* 3. SYN in a synchronised state (RFC 5961 4.2): challenge ACK. */
    if (s.flags & TW_TCP_SYN) {
        challenge_ack(c, now_ns);
        return;
    }
    /* 4. ACK. */
    if (!(s.flags & TW_TCP_ACK))
        return;
    if (c->state == TW_TCP_SYN_RCVD) {
        if (SEQ_LEQ(s.ack, c->snd_una) || SEQ_GT(s.ack, c->snd_max)) {
            tw__tcp_send_rst_reply(st, pp, now_ns);
            return;
        }
        c->state = TW_TCP_ESTABLISHED;
        c->snd_wnd = s.wnd << c->snd_wscale;
        c->snd_wl1 = s.seq;
        c->snd_wl2 = s.ack;
        TW_ASSERT(!(c->flags & (TF_PEER_FIN | TF_FIN_SENT)));
        tw__net_event(c, TW_TCP_EV_CONNECTED);
    }
    /* RFC 5961 5.2: an ACK for data never sent, or far older than the
     * window, is answered and dropped. */
    uint32_t max_wnd = c->snd_wnd > 65535 ? c->snd_wnd : 65535;
    if (SEQ_GT(s.ack, c->snd_max)) {
        st->stats.rx_tcp_out_of_window++;
        challenge_ack(c, now_ns);
        return;
    }
    if (SEQ_LT(s.ack, c->snd_una - max_wnd)) {
        st->stats.rx_tcp_out_of_window++;
        challenge_ack(c, now_ns);
        return;
    }
    /* CWR from the peer ends our ECE echo (RFC 3168 6.1.3). */
    if (s.flags & TW_TCP_CWR)
        c->flags &= ~TF_ECE_ECHO;
    if ((c->flags & TF_ECN) && s.ecn == TW_IP_ECN_CE) {
        st->stats.ecn_ce_rx++;
        c->flags |= TF_ECE_ECHO | TF_ACK_NOW;
    }
    uint32_t new_wnd = s.wnd << c->snd_wscale;
    /* RFC 6675 2: with SACK, an ACK is a duplicate when it SACKs bytes not
     * SACKed before, whatever its window says (a receiver growing its
     * buffer while it holds out-of-order data, as Linux does, changes the
     * window on every ACK: RFC 5681's same-window test alone would count
     * none of them, and every loss would wait for the RTO). */
    int sack_dup = 0, dsack = 0;
    if (c->flags & TF_SACK) {
        uint32_t una = SEQ_GT(s.ack, c->snd_una) ? s.ack : c->snd_una;
        tw__sack_advance(&c->sb, una);
        if (s.o.sack_n) {
            unsigned bad;
            uint32_t before = tw__sack_bytes(&c->sb);
            dsack = tw__sack_is_dsack((const uint32_t(*)[2])s.o.sack, s.o.sack_n, s.ack);
            st->stats.rx_dsack += (unsigned)dsack;
            st->stats.rx_sack_blocks +=
                tw__sack_update(&c->sb, una, c->snd_max,
                                (const uint32_t(*)[2])s.o.sack, s.o.sack_n, &bad);
            st->stats.rx_sack_bad += bad;
            sack_dup = tw__sack_bytes(&c->sb) != before;
        }
    }
    if (c->rs_n && (SEQ_GT(s.ack, c->snd_una) || sack_dup))
        tw__tcp_rs_acked(c, SEQ_GT(s.ack, c->snd_una) ? s.ack : c->snd_una, sack_dup, now_ns);
    if (SEQ_GT(s.ack, c->snd_una)) {
        int probed = (c->flags & TF_TLP_SENT) != 0;
        on_new_ack(c, &s, now_ns);
        if (c->state == TW_TCP_CLOSED)
            return;
        /* A loss probe's answer that moves snd_una but SACKs above it:
         * the bytes between were lost (RFC 8985 leaves this to RACK). */
        if (probed && sack_dup && c->sb.n && !(c->flags & TF_IN_RECOVERY) &&
            SEQ_GT(c->snd_max, c->snd_una))
            fast_retransmit(c, now_ns);
    } else if (s.ack == c->snd_una && s.dlen == 0 &&
               !(s.flags & TW_TCP_FIN) && (new_wnd == c->snd_wnd || sack_dup) &&
               !(dsack && !sack_dup) && SEQ_GT(c->snd_max, c->snd_una)) {
        /* RFC 5681 duplicate ACK (or RFC 6675's, above).  One that only
         * reports a duplicate (a D-SACK, nothing new SACKed) says nothing
         * of a loss: it answers a segment that arrived twice. */
        c->dupacks++;
        /* With SACK (RFC 6675 5): also as soon as the scoreboard says
         * the first segment is lost. */
        int lost = (c->flags & TF_SACK) &&
                   SEQ_GT(tw__sack_lost_end(&c->sb, c->snd_una, c->mss), c->snd_una);
        /* After a loss probe: the probe's SACK with snd_una not reached
         * means what lies below it was lost. */
        lost |= sack_dup && (c->flags & TF_TLP_SENT);
        if ((c->dupacks == 3 || lost) && !(c->flags & TF_IN_RECOVERY))
            fast_retransmit(c, now_ns);
        else if (c->dupacks > 3 && (c->flags & TF_IN_RECOVERY) && !(c->flags & TF_SACK))
            c->cwnd += c->mss; /* window inflation: more may go out */
    }
    if (sack_dup && (c->flags & TF_IN_RECOVERY))
        tw__sack_lost_rxt(c, now_ns);
    /* An answer to a zero-window probe proves the peer alive. */
    if (c->snd_wnd == 0 && s.ack == c->snd_una)
        c->retries = 0;
    /* Window update (RFC 793 p.72: only from a newer segment). */
    if (SEQ_LT(c->snd_wl1, s.seq) ||
        (c->snd_wl1 == s.seq && SEQ_LEQ(c->snd_wl2, s.ack))) {
        c->snd_wnd = new_wnd;
        c->snd_wl1 = s.seq;
        c->snd_wl2 = s.ack;
        if (new_wnd) {
            c->persist_at_ns = 0;
            c->persist_backoff = 0;
        }
    }
    /* ECE: cut the send rate at most once per window of data (RFC 3168
     * 6.1.2: once per RTT), then tell the peer with CWR. */
    if ((c->flags & TF_ECN) && (s.flags & TW_TCP_ECE)) {
        st->stats.ecn_ece_rx++;
        if (SEQ_GEQ(c->snd_una, c->ecn_cut_seq) || c->ecn_cut_seq == 0) {
            uint64_t r = c->rate_Bps / 2;
            c->rate_Bps = r > st->cfg.rate_min_Bps ? r : st->cfg.rate_min_Bps;
            if (c->tokens > tw__tcp_bucket_cap(c))
                c->tokens = tw__tcp_bucket_cap(c);
            c->ecn_cut_seq = c->snd_max + 1;
            c->rate_epoch_ns = now_ns;
            c->flags |= TF_SEND_CWR;
            st->stats.ecn_rate_cuts++;
            tw__net_event(c, TW_TCP_EV_ECN_CUT);
        }
    }
    /* Our FIN acknowledged? */
    int fin_acked = (c->flags & TF_FIN_SENT) && c->snd_una == c->snd_end + 1;
    switch (c->state) {
    case TW_TCP_FIN_WAIT_1:
        if (fin_acked)
            c->state = TW_TCP_FIN_WAIT_2;
        break;
    case TW_TCP_CLOSING:
        if (fin_acked)
            enter_time_wait(c, now_ns);
        return;
    case TW_TCP_LAST_ACK:
        if (fin_acked)
            tw__tcp_set_closed(c, TW_TCP_EV_CLOSED);
        return;
    case TW_TCP_TIME_WAIT:
        if (s.flags & TW_TCP_FIN) {
            c->flags |= TF_ACK_NOW;
            enter_time_wait(c, now_ns);
        }
        return;
    default:
        break;
    }

    /* 5. Data, in ESTABLISHED, FIN_WAIT_1 and FIN_WAIT_2 only. */
    uint32_t end = s.seq + s.dlen; /* where a FIN would sit */
    int ack_seg = 0;
    if (s.dlen && !(c->flags & TF_PEER_FIN) &&
        (c->state == TW_TCP_ESTABLISHED || c->state == TW_TCP_FIN_WAIT_1 ||
         c->state == TW_TCP_FIN_WAIT_2)) {
        uint32_t seq = s.seq, len = s.dlen;
        const uint8_t *p = s.data;
        if (SEQ_LT(seq, c->rx_tail)) {
            uint32_t trim = c->rx_tail - seq;
            /* Bytes that had all arrived: told back as a D-SACK. */
            tw__sack_note_dup(c, seq, trim >= len ? seq + len : c->rx_tail);
            if (trim >= len) {
                len = 0;
            } else {
                seq += trim;
                p += trim;
                len -= trim;
            }
        }
        uint32_t right = c->rx_head + c->rx_size;
        if (len && SEQ_GT(seq + len, right))
            len = SEQ_GT(right, seq) ? right - seq : 0;
        if (!len) {
            st->stats.rx_tcp_dup++;
            c->flags |= TF_ACK_NOW;
        } else {
            /* RFC 5681 4.2: a segment past a hole, or one that fills all
             * or part of a hole, is acknowledged at once, with its own
             * ACK, not with one ACK for the whole rx burst: each carries
             * the SACK block of the segment it answers first (RFC 2018),
             * a sender without SACK counts one duplicate per segment, and
             * during a loss one lost ACK leaves the others. */
            int gap = seq != c->rx_tail || c->ooo_n;
            if (gap && tw__sack_held(c, seq, seq + len))
                tw__sack_note_dup(c, seq, seq + len);
            uint32_t got = rx_store(c, seq, p, len);
            if (got) {
                c->rcv_nxt = c->rx_tail;
                st->stats.rx_tcp_bytes += got;
                tw__net_event(c, TW_TCP_EV_READABLE);
            }
            if (gap) {
                ack_seg = 1;
                c->flags |= TF_ACK_NOW; /* still owed if that send fails */
            } else if (c->unacked_segs >= 1) {
                c->flags |= TF_ACK_NOW; /* RFC 5681 4.2 */
            } else if (s.flags & TW_TCP_PSH) {
                /* PSH: acknowledged on the very next poll turn (due 1 ns
                 * from now, so tw_net_next_timer_ns says "now" and nobody
                 * sleeps on it), not in this one: an application that
                 * answers the message before polling again carries the
                 * ACK on its reply.  A request/response exchange then
                 * costs no pure ACK, that is one system call and one trip
                 * through the peer's stack less per round trip. */
                c->unacked_segs++;
                if (!c->delack_at_ns || c->delack_at_ns > now_ns + 1)
                    c->delack_at_ns = now_ns + 1;
            } else {
                c->unacked_segs++;
                if (!c->delack_at_ns)
                    c->delack_at_ns = now_ns + st->cfg.delack_ns;
            }
        }
    }
    /* 6. FIN, once every byte before it has arrived.  A FIN past a hole
     * is remembered (within the window) and taken when the hole fills,
     * rather than waiting for the peer to resend it. */
    int fin_now = 0;
    if (!(c->flags & TF_PEER_FIN)) {
        if ((s.flags & TW_TCP_FIN) && end == c->rx_tail)
            fin_now = 1;
        else if ((s.flags & TW_TCP_FIN) && SEQ_GT(end, c->rx_tail) &&
                 SEQ_LEQ(end, c->rx_head + c->rx_size) &&
                 (c->state == TW_TCP_ESTABLISHED || c->state == TW_TCP_FIN_WAIT_1 ||
                  c->state == TW_TCP_FIN_WAIT_2)) {
            c->flags |= TF_FIN_OOO;
            c->fin_seq = end;
        }
        if ((c->flags & TF_FIN_OOO) && SEQ_GT(c->rx_tail, c->fin_seq))
            c->flags &= ~TF_FIN_OOO; /* bytes past it: that FIN was not real */
        if ((c->flags & TF_FIN_OOO) && c->rx_tail == c->fin_seq)
            fin_now = 1;
    }
    if (fin_now) {
        /* Nothing lies past a FIN: ranges held beyond it were never the
         * peer's (a correct peer sends no byte after its FIN). */
        c->ooo_n = 0;
        c->flags &= ~TF_FIN_OOO;
        c->flags |= TF_PEER_FIN | TF_ACK_NOW;
        c->rcv_nxt = c->rx_tail + 1;
        switch (c->state) {
        case TW_TCP_ESTABLISHED:
            c->state = TW_TCP_CLOSE_WAIT;
            break;
        case TW_TCP_FIN_WAIT_1:
            if ((c->flags & TF_FIN_SENT) && c->snd_una == c->snd_end + 1)
                enter_time_wait(c, now_ns);
            else
                c->state = TW_TCP_CLOSING;
            break;
        case TW_TCP_FIN_WAIT_2:
            enter_time_wait(c, now_ns);
            break;
        default:
            break;
        }
        tw__net_event(c, TW_TCP_EV_PEER_FIN);
    } else if ((s.flags & TW_TCP_FIN) && (c->flags & TF_PEER_FIN)) {
        c->flags |= TF_ACK_NOW; /* retransmitted FIN: our ACK was lost */
    }
    if (ack_seg)
        tw__tcp_send_ack(c, now_ns);
    /* rcv_nxt counts the in-order bytes and, once taken, the peer's FIN;
     * the FIN closes the receive side for good (tcp_out.c acknowledges
     * rcv_nxt). */
    TW_ASSERT(c->rcv_nxt == c->rx_tail + !!(c->flags & TF_PEER_FIN));
    TW_ASSERT(!(c->flags & TF_PEER_FIN) || c->state == TW_TCP_CLOSE_WAIT ||
              c->state == TW_TCP_CLOSING || c->state == TW_TCP_TIME_WAIT ||
              c->state == TW_TCP_LAST_ACK || c->state == TW_TCP_CLOSED);
}
