/* TCP timers: retransmission (RFC 6298), persist (zero-window probes),
 * delayed ACK, keepalive and TIME_WAIT.  Each is a deadline on the
 * connection compared with the now_ns the caller passes in; nothing here
 * reads a clock. */
#include "net/net_internal.h"

#define RTO_GRANULARITY_NS 1000ull /* G of RFC 6298 */
/* The loss probe's floor: below a millisecond, ACKs a peer sends every
 * second segment (or that its stack batches) would look late. */
#define TLP_MIN_NS 1000000ull
#define TLP_MAX 3u

void tw__tcp_arm_rto(tw_tcp_conn *c, int64_t now_ns)
{
    c->rto_at_ns = now_ns + c->rto_ns;
    if (!c->rto_at_ns)
        c->rto_at_ns = 1;
    /* The loss probe (after RFC 8985 7, on SACK connections): 2 SRTT
     * without progress, plus the peer's delayed-ACK bound when one
     * segment is out (its ACK may be held back), never later than the
     * RTO.  A lost tail or a lost retransmission then costs a few RTTs,
     * not rto_min. */
    tw__tcp_arm_tlp(c, now_ns);
}

void tw__tcp_arm_tlp(tw_tcp_conn *c, int64_t now_ns)
{
    /* A probe lost, or its answer, must not leave the RTO as the only
     * way out: up to TLP_MAX probes, each after twice the wait of the one
     * before, then the RTO's. */
    c->tlp_at_ns = 0;
    if ((c->flags & TF_SACK) && c->tlp_n < TLP_MAX && c->srtt_ns &&
        c->state >= TW_TCP_ESTABLISHED && c->state != TW_TCP_TIME_WAIT) {
        uint64_t pto = 2 * c->srtt_ns;
        if (pto < TLP_MIN_NS)
            pto = TLP_MIN_NS;
        if (c->snd_max - c->snd_una <= c->mss)
            pto += c->st->cfg.delack_ns;
        pto <<= c->tlp_n;
        if (now_ns + (int64_t)pto < c->rto_at_ns)
            c->tlp_at_ns = now_ns + (int64_t)pto;
    }
}

void tw__tcp_rtt_sample(tw_tcp_conn *c, uint64_t rtt_ns)
{
    const tw_net_config *cfg = &c->st->cfg;
    uint64_t r = rtt_ns ? rtt_ns : 1;
    if (!c->srtt_ns) { /* RFC 6298 2.2 */
        c->srtt_ns = r;
        c->rttvar_ns = r / 2;
    } else { /* 2.3, alpha = 1/8, beta = 1/4 */
        uint64_t d = c->srtt_ns > r ? c->srtt_ns - r : r - c->srtt_ns;
        c->rttvar_ns = (3 * c->rttvar_ns + d) / 4;
        c->srtt_ns = (7 * c->srtt_ns + r) / 8;
    }
    uint64_t k = 4 * c->rttvar_ns;
    uint64_t rto = c->srtt_ns + (k > RTO_GRANULARITY_NS ? k : RTO_GRANULARITY_NS);
    if (rto < cfg->rto_min_ns) /* 2.4 */
        rto = cfg->rto_min_ns;
    if (rto > cfg->rto_max_ns) /* 2.5 */
        rto = cfg->rto_max_ns;
    c->rto_ns = rto;
}

static void on_rto(tw_tcp_conn *c, int64_t now_ns)
{
    tw_net *st = c->st;
    if (c->snd_wnd == 0 && c->state != TW_TCP_SYN_SENT && c->state != TW_TCP_SYN_RCVD &&
        !(c->flags & TF_FIN_SENT)) {
        /* The peer closed its window: nothing may be resent into it, and a
         * silent peer is the persist timer's business (RFC 1122 4.2.2.17:
         * probing continues as long as the peer answers).  A SACK
         * recovery ends here too: its output would put snd_nxt back at
         * snd_max and re-arm this timer, and the persist timer, armed
         * only with nothing in flight, would never start. */
        c->rto_at_ns = 0;
        c->flags &= ~(TF_IN_RECOVERY | TF_RECOV_RANDOM);
        c->snd_nxt = c->snd_una;
        c->rtt_start_ns = 0;
        return;
    }
    if (c->retries >= st->cfg.max_retries) {
        st->stats.conns_timeout++;
        tw__tcp_set_closed(c, TW_TCP_EV_TIMEOUT);
        return;
    }
    c->retries++;
    st->stats.rto_fires++;
    /* 5.5: back off; 5.6 and Karn: no RTT sample from a retransmission. */
    c->rto_ns *= 2;
    if (c->rto_ns > st->cfg.rto_max_ns)
        c->rto_ns = st->cfg.rto_max_ns;
    c->rtt_start_ns = 0;
    /* RFC 5681 3.1 eq. 4, then a one-segment window: the minimal
     * congestion window after a loss. */
    uint32_t flight = c->snd_max - c->snd_una;
    c->ssthresh = flight / 2 > 2u * c->mss ? flight / 2 : 2u * c->mss;
    c->cwnd = c->mss;
    c->dupacks = 0;
    c->flags &= ~(TF_IN_RECOVERY | TF_RECOV_RANDOM);
    /* RFC 2018 8: after an RTO the receiver may have reneged; start the
     * scoreboard again from what it reports next. */
    c->sb.n = 0;
    c->high_rxt = c->snd_una;
    c->tlp_n = TLP_MAX; /* no probe until an ACK makes progress */
    if (c->state == TW_TCP_SYN_SENT || c->state == TW_TCP_SYN_RCVD) {
        c->flags |= TF_SEND_SYN;
        c->snd_nxt = c->iss;
    } else {
        c->snd_nxt = c->snd_una; /* go back: resend from the first hole */
    }
    tw__tcp_arm_rto(c, now_ns);
}

static void send_probe(tw_tcp_conn *c, int64_t now_ns)
{
    /* A segment with an old sequence number (snd_una - 1) and no data is
     * outside the peer's window, so it must answer with an ACK carrying
     * its current window (RFC 1122 4.2.2.17 and 4.2.3.6). */
    tw__tcp_send_seg(c, c->snd_una - 1, 0, TW_TCP_ACK, now_ns);
}

void tw__tcp_timers(tw_tcp_conn *c, int64_t now_ns)
{
    tw_net *st = c->st;
    if (c->state == TW_TCP_CLOSED)
        return;
    if (c->state == TW_TCP_TIME_WAIT) {
        if (c->timewait_at_ns && now_ns >= c->timewait_at_ns)
            tw__tcp_set_closed(c, TW_TCP_EV_CLOSED);
        return;
    }
    if (c->rto_at_ns && now_ns >= c->rto_at_ns) {
        if (c->snd_una == c->snd_max && !(c->flags & TF_SEND_SYN)) {
            c->rto_at_ns = 0; /* nothing outstanding */
        } else {
            on_rto(c, now_ns);
            if (c->state == TW_TCP_CLOSED)
                return;
        }
    }
    if (c->rto_at_ns && c->tlp_at_ns && now_ns >= c->tlp_at_ns) {
        c->tlp_at_ns = 0;
        if (c->snd_una != c->snd_max && (c->flags & TF_SACK) && c->snd_wnd)
            tw__sack_probe(c, now_ns);
    }
    if (c->persist_at_ns && now_ns >= c->persist_at_ns) {
        c->persist_at_ns = 0;
        if (c->snd_wnd == 0 && SEQ_LT(c->snd_nxt, c->snd_end)) {
            /* Unanswered probes count like retransmissions (an answer
             * resets the count in tcp_in.c): a dead peer still times out. */
            if (c->retries >= st->cfg.max_retries) {
                st->stats.conns_timeout++;
                tw__tcp_set_closed(c, TW_TCP_EV_TIMEOUT);
                return;
            }
            c->retries++;
            st->stats.zero_window_probes++;
            send_probe(c, now_ns);
            if (c->persist_backoff < 10)
                c->persist_backoff++;
            uint64_t t = c->rto_ns << c->persist_backoff;
            if (t > st->cfg.rto_max_ns)
                t = st->cfg.rto_max_ns;
            c->persist_at_ns = now_ns + t;
        }
    }
    if (c->delack_at_ns && now_ns >= c->delack_at_ns) {
        st->stats.delayed_acks++;
        tw__tcp_send_ack(c, now_ns);
        c->delack_at_ns = 0;
    }
    if (st->cfg.keepalive_idle_ns &&
        (c->state == TW_TCP_ESTABLISHED || c->state == TW_TCP_CLOSE_WAIT)) {
        if (!c->keepalive_at_ns)
            c->keepalive_at_ns = c->last_rx_ns + st->cfg.keepalive_idle_ns;
        if (now_ns >= c->keepalive_at_ns) {
            if (c->snd_una != c->snd_max) {
                /* Data outstanding: the RTO is watching the peer. */
                c->keepalive_at_ns = now_ns + st->cfg.keepalive_idle_ns;
            } else if (c->ka_probes_sent >= st->cfg.keepalive_probes) {
                st->stats.conns_timeout++;
                tw__tcp_set_closed(c, TW_TCP_EV_TIMEOUT);
                return;
            } else {
                c->ka_probes_sent++;
                st->stats.keepalive_probes++;
                send_probe(c, now_ns);
                c->keepalive_at_ns = now_ns + st->cfg.keepalive_intvl_ns;
            }
        }
    }
    if (c->pace_at_ns && now_ns >= c->pace_at_ns)
        c->pace_at_ns = 0; /* tokens are back: output runs next */
}

int64_t tw__tcp_next_timer_ns(const tw_tcp_conn *c)
{
    if (c->state == TW_TCP_CLOSED)
        return INT64_MAX;
    int64_t t = INT64_MAX;
    const int64_t v[] = {c->rto_at_ns, c->rto_at_ns ? c->tlp_at_ns : 0, c->persist_at_ns,
                          c->delack_at_ns,
                          c->timewait_at_ns, c->pace_at_ns,
                          c->st->cfg.keepalive_idle_ns ? c->keepalive_at_ns : 0};
    for (size_t i = 0; i < TW_ARRAY_SIZE(v); i++)
        if (v[i] && v[i] < t)
            t = v[i];
    /* An ACK or window update the application's reads made due: send on
     * the next poll.  (A SYN waiting for ARP is not: the RTO retries it,
     * and an ARP reply is an rx event that brings a poll anyway.) */
    if (c->flags & (TF_ACK_NOW | TF_WND_UPDATE))
        t = 0;
    return t;
}
