/* TCP options and selective acknowledgements: option parsing (MSS, window
 * scale, SACK-permitted, SACK, timestamps), the receiver's SACK blocks
 * (RFC 2018: the most recent first), and the sender's scoreboard with
 * RFC 6675 loss recovery (IsLost, SetPipe, NextSeg, rescue
 * retransmission), and D-SACK both ways (RFC 2883: a duplicate segment
 * is reported, and a report of one is told from a SACK).  The scoreboard
 * is a fixed array in the connection: nothing here allocates. */
#include <errno.h>

#include "net/net_internal.h"

static uint32_t be32_at(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return tw_be32(v);
}

int tw_tcp_parse_opts(const uint8_t *o, uint32_t n, tw_tcp_opts *out)
{
    /* RFC 7323 appendix A's fast path: NOP NOP TS, the layout of every
     * segment after the handshake (ours and Linux's), read in place. */
    if (n == 12 && be32_at(o) == 0x0101080au) {
        *out = (tw_tcp_opts){.wscale = -1, .has_ts = 1, .tsval = be32_at(o + 4),
                             .tsecr = be32_at(o + 8)};
        return 0;
    }
    memset(out, 0, sizeof(*out));
    out->wscale = -1;
    uint32_t i = 0;
    while (i < n) { /* bounded: each step advances i by at least 1 */
        uint8_t kind = o[i];
        if (kind == TW_TCPOPT_EOL)
            break;
        if (kind == TW_TCPOPT_NOP) {
            i++;
            continue;
        }
        if (i + 1 >= n)
            return -EBADMSG;
        uint8_t len = o[i + 1];
        if (len < 2 || i + len > n)
            return -EBADMSG;
        const uint8_t *v = o + i + 2;
        switch (kind) {
        case TW_TCPOPT_MSS:
            if (len != 4)
                return -EBADMSG;
            out->mss = (uint16_t)(v[0] << 8 | v[1]);
            break;
        case TW_TCPOPT_WSCALE:
            if (len != 3)
                return -EBADMSG;
            out->wscale = (int8_t)(v[0] > 14 ? 14 : v[0]);
            break;
        case TW_TCPOPT_SACK_OK:
            if (len != 2)
                return -EBADMSG;
            out->sack_ok = 1;
            break;
        case TW_TCPOPT_TS:
            if (len != 10)
                return -EBADMSG;
            out->has_ts = 1;
            out->tsval = (uint32_t)v[0] << 24 | (uint32_t)v[1] << 16 |
                         (uint32_t)v[2] << 8 | v[3];
            out->tsecr = (uint32_t)v[4] << 24 | (uint32_t)v[5] << 16 |
                         (uint32_t)v[6] << 8 | v[7];
            break;
        case TW_TCPOPT_SACK: {
            uint32_t k = (uint32_t)(len - 2) / 8;
            if ((len - 2) % 8 || k == 0 || k > 4)
                return -EBADMSG;
            for (uint32_t b = 0; b < k; b++)
                for (int e = 0; e < 2; e++) {
                    const uint8_t *q = v + 8 * b + 4 * e;
                    out->sack[b][e] = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 |
                                      (uint32_t)q[2] << 8 | q[3];
                }
            out->sack_n = (uint8_t)k;
            break;
        }
        default:
            break;
        }
        i += len;
    }
    return 0;
}

/* ---- sender: the scoreboard ------------------------------------------- */

static void sb_insert(tw_tcp_sackboard *sb, uint32_t s, uint32_t e)
{
    unsigned i = 0, n = sb->n;
    while (i < n && SEQ_LT(sb->blk[i][1], s))
        i++;
    unsigned j = i;
    while (j < n && SEQ_LEQ(sb->blk[j][0], e)) {
        if (SEQ_LT(sb->blk[j][0], s))
            s = sb->blk[j][0];
        if (SEQ_GT(sb->blk[j][1], e))
            e = sb->blk[j][1];
        j++;
    }
    if (i == j && n == TW_TCP_SACK_BLOCKS) {
        /* Full: forget the highest range (it is resent if need be). */
        if (i == n)
            return;
        n--;
    }
    memmove(sb->blk[i + 1], sb->blk[j], (n - j) * sizeof(sb->blk[0]));
    sb->blk[i][0] = s;
    sb->blk[i][1] = e;
    sb->n = n - (j - i) + 1;
    TW_ASSERT(sb->n <= TW_TCP_SACK_BLOCKS);
}

int tw__sack_is_dsack(const uint32_t (*blk)[2], unsigned n, uint32_t una)
{
    if (!n || !SEQ_LT(blk[0][0], blk[0][1]))
        return 0;
    if (SEQ_LEQ(blk[0][1], una))
        return 1;
    return n > 1 && SEQ_GEQ(blk[0][0], blk[1][0]) && SEQ_LEQ(blk[0][1], blk[1][1]);
}

unsigned tw__sack_update(tw_tcp_sackboard *sb, uint32_t snd_una, uint32_t snd_max,
                         const uint32_t (*blk)[2], unsigned n, unsigned *bad)
{
    unsigned taken = 0;
    *bad = 0;
    /* A D-SACK tells of a duplicate, not of a hole: nothing to board (the
     * block that holds it, if any, follows). */
    for (unsigned b = tw__sack_is_dsack(blk, n, snd_una); b < n && b < 4; b++) {
        uint32_t s = blk[b][0], e = blk[b][1];
        /* Reversed or empty, past what we sent, or wholly acknowledged
         * already (a D-SACK or a stale block: nothing to learn). */
        if (!SEQ_LT(s, e) || SEQ_GT(e, snd_max) || SEQ_LT(s, snd_una - (1u << 30)) ||
            SEQ_LEQ(e, snd_una)) {
            (*bad)++;
            continue;
        }
        if (SEQ_LT(s, snd_una))
            s = snd_una;
        sb_insert(sb, s, e);
        taken++;
    }
    for (unsigned i = 1; i < sb->n; i++)
        TW_ASSERT(SEQ_LT(sb->blk[i - 1][1], sb->blk[i][0]));
    return taken;
}

uint32_t tw__sack_bytes(const tw_tcp_sackboard *sb)
{
    uint32_t n = 0;
    for (unsigned k = 0; k < sb->n; k++)
        n += sb->blk[k][1] - sb->blk[k][0];
    return n;
}

void tw__sack_advance(tw_tcp_sackboard *sb, uint32_t una)
{
    unsigned k = 0;
    while (k < sb->n && SEQ_LEQ(sb->blk[k][1], una))
        k++;
    if (k) {
        sb->n -= k;
        memmove(sb->blk[0], sb->blk[k], sb->n * sizeof(sb->blk[0]));
    }
    if (sb->n && SEQ_LT(sb->blk[0][0], una))
        sb->blk[0][0] = una;
}

uint32_t tw__sack_lost_end(const tw_tcp_sackboard *sb, uint32_t una, uint32_t mss)
{
    /* The blocks are sorted: for a hole below block k, blocks k..n-1 are
     * the SACKed sequences above it, so the count and the bytes only grow
     * as k goes down.  The highest k meeting IsLost bounds the loss. */
    uint64_t bytes = 0;
    for (unsigned k = sb->n; k-- > 0;) {
        bytes += sb->blk[k][1] - sb->blk[k][0];
        if (sb->n - k >= 3 || bytes > 2ull * mss)
            return sb->blk[k][0];
    }
    return una;
}

/* UnSACKed bytes in [a, b). */
static uint32_t unsacked(const tw_tcp_sackboard *sb, uint32_t a, uint32_t b)
{
    if (!SEQ_LT(a, b))
        return 0;
    uint32_t n = b - a;
    for (unsigned k = 0; k < sb->n; k++) {
        uint32_t s = SEQ_GT(sb->blk[k][0], a) ? sb->blk[k][0] : a;
        uint32_t e = SEQ_LT(sb->blk[k][1], b) ? sb->blk[k][1] : b;
        if (SEQ_LT(s, e))
            n -= e - s;
    }
    return n;
}

uint32_t tw__sack_pipe(const tw_tcp_sackboard *sb, uint32_t una, uint32_t snd_max,
                       uint32_t high_rxt, uint32_t mss)
{
    /* Per octet not SACKed: one if not lost, one more if resent. */
    uint32_t lost = tw__sack_lost_end(sb, una, mss);
    uint32_t from = SEQ_GT(lost, una) ? lost : una;
    uint32_t rx_end = SEQ_LT(high_rxt, snd_max) ? high_rxt : snd_max;
    return unsacked(sb, from, snd_max) + unsacked(sb, una, rx_end);
}

int tw__sack_covered(const tw_tcp_sackboard *sb, uint32_t seq, uint32_t *end)
{
    for (unsigned k = 0; k < sb->n; k++)
        if (SEQ_GEQ(seq, sb->blk[k][0]) && SEQ_LT(seq, sb->blk[k][1])) {
            *end = sb->blk[k][1];
            return 1;
        }
    return 0;
}

int tw__sack_next_hole(const tw_tcp_sackboard *sb, uint32_t from, uint32_t to,
                       uint32_t mss, uint32_t *seq, uint32_t *len)
{
    uint32_t s = from;
    uint32_t end;
    for (unsigned k = 0; k < sb->n && tw__sack_covered(sb, s, &end); k++)
        s = end;
    if (!SEQ_LT(s, to))
        return -1;
    uint32_t e = to;
    for (unsigned k = 0; k < sb->n; k++)
        if (SEQ_GT(sb->blk[k][0], s)) {
            if (SEQ_LT(sb->blk[k][0], e))
                e = sb->blk[k][0];
            break;
        }
    *seq = s;
    *len = e - s > mss ? mss : e - s;
    TW_ASSERT(*len > 0);
    return 0;
}

/* ---- receiver: the blocks we send ------------------------------------- */

/* The held out-of-order range containing seq, or -1. */
static int ooo_find(const tw_tcp_conn *c, uint32_t seq)
{
    for (unsigned i = 0; i < c->ooo_n; i++)
        if (SEQ_GEQ(seq, c->ooo[i][0]) && SEQ_LT(seq, c->ooo[i][1]))
            return (int)i;
    return -1;
}

void tw__sack_note_arrival(tw_tcp_conn *c, uint32_t seq)
{
    int r = ooo_find(c, seq);
    if (r < 0)
        return; /* not held (no room): nothing to report */
    uint32_t keep[4];
    unsigned n = 0;
    keep[n++] = seq;
    for (unsigned i = 0; i < c->sack_recent_n && n < 4; i++) {
        int q = ooo_find(c, c->sack_recent[i]);
        if (q >= 0 && q != r)
            keep[n++] = c->sack_recent[i];
    }
    memcpy(c->sack_recent, keep, n * sizeof(keep[0]));
    c->sack_recent_n = n;
}

void tw__sack_note_dup(tw_tcp_conn *c, uint32_t s, uint32_t e)
{
    TW_ASSERT(SEQ_LT(s, e));
    if (!(c->flags & TF_SACK))
        return;
    /* The latest duplicate replaces one not yet reported (RFC 2883 4:
     * each D-SACK tells of one segment, the one that triggered the ACK). */
    c->dsack[0] = s;
    c->dsack[1] = e;
    c->flags |= TF_DSACK;
}

int tw__sack_held(const tw_tcp_conn *c, uint32_t s, uint32_t e)
{
    int r = ooo_find(c, s);
    return r >= 0 && SEQ_LEQ(e, c->ooo[r][1]);
}

unsigned tw__sack_blocks(const tw_tcp_conn *c, uint32_t (*blk)[2], unsigned max)
{
    unsigned n = 0;
    uint32_t used = 0; /* bit i: ooo range i reported */
    if ((c->flags & TF_DSACK) && max) {
        /* RFC 2883 4.1: the duplicate first; if it lies in a held range,
         * that range next, so the sender can tell the two apart. */
        blk[n][0] = c->dsack[0];
        blk[n][1] = c->dsack[1];
        n++;
        int q = ooo_find(c, c->dsack[0]);
        if (q >= 0 && n < max) {
            used |= 1u << q;
            blk[n][0] = c->ooo[q][0];
            blk[n][1] = c->ooo[q][1];
            n++;
        }
    }
    for (unsigned i = 0; i < c->sack_recent_n && n < max; i++) {
        int q = ooo_find(c, c->sack_recent[i]);
        if (q < 0 || (used >> q & 1))
            continue;
        used |= 1u << q;
        blk[n][0] = c->ooo[q][0];
        blk[n][1] = c->ooo[q][1];
        n++;
    }
    /* Room left: the other held ranges, lowest first (RFC 2018 4: as many
     * distinct blocks as fit). */
    for (unsigned q = 0; q < c->ooo_n && n < max; q++) {
        if (used >> q & 1)
            continue;
        blk[n][0] = c->ooo[q][0];
        blk[n][1] = c->ooo[q][1];
        n++;
    }
    return n;
}

/* ---- sender: RFC 6675 recovery ----------------------------------------- */

static int send_one(tw_tcp_conn *c, uint32_t seq, uint32_t len, int64_t now_ns)
{
    tw__tcp_tokens_refill(c, now_ns);
    if (c->tokens < len) {
        c->pace_at_ns = now_ns + (len - c->tokens) * 1000000000ull / c->rate_Bps + 1;
        c->st->stats.rate_limited++;
        return -1;
    }
    uint8_t fl = TW_TCP_ACK;
    if (seq + len == c->snd_end)
        fl |= TW_TCP_PSH;
    if (tw__tcp_send_seg(c, seq, len, fl, now_ns))
        return -1;
    c->tokens -= len;
    return 0;
}

/* A NextSeg retransmission: HighRxt moves past it. */
static int resend(tw_tcp_conn *c, uint32_t seq, uint32_t len, int64_t now_ns)
{
    if (send_one(c, seq, len, now_ns))
        return -1;
    c->high_rxt = seq + len;
    c->st->stats.retransmits++;
    c->st->stats.sack_retransmits++;
    uint32_t *e = c->rxt_log[c->rxt_log_n++ % TW_ARRAY_SIZE(c->rxt_log)];
    e[0] = seq;
    e[1] = c->snd_max;
    return 0;
}

void tw__sack_lost_rxt(tw_tcp_conn *c, int64_t now_ns)
{
    TW_ASSERT(c->flags & TF_SACK);
    if (!(c->flags & TF_IN_RECOVERY) || !c->sb.n || !SEQ_GT(c->high_rxt, c->snd_una))
        return;
    uint32_t end;
    if (tw__sack_covered(&c->sb, c->snd_una, &end))
        return;
    uint32_t high = c->sb.blk[c->sb.n - 1][1];
    unsigned n = c->rxt_log_n < TW_ARRAY_SIZE(c->rxt_log) ? c->rxt_log_n
                                                           : (unsigned)TW_ARRAY_SIZE(c->rxt_log);
    for (unsigned i = 0; i < n; i++) {
        /* The newest record of the first hole: its resend was lost when
         * a full segment sent after it has been SACKed (on a path that
         * keeps order it would have arrived first). */
        uint32_t *e = c->rxt_log[(c->rxt_log_n - 1 - i) % TW_ARRAY_SIZE(c->rxt_log)];
        if (e[0] != c->snd_una)
            continue;
        if (SEQ_LT(high, e[1] + c->mss))
            return;
        uint32_t data_max = SEQ_LT(c->snd_max, c->snd_end) ? c->snd_max : c->snd_end;
        uint32_t seq, len;
        if (tw__sack_next_hole(&c->sb, c->snd_una, data_max, c->mss, &seq, &len) ||
            seq != c->snd_una || send_one(c, seq, len, now_ns))
            return;
        e[1] = c->snd_max;
        c->st->stats.retransmits++;
        c->st->stats.sack_retransmits++;
        c->st->stats.lost_retransmits++;
        return;
    }
}

void tw__sack_probe(tw_tcp_conn *c, int64_t now_ns)
{
    tw_net *st = c->st;
    TW_ASSERT(c->flags & TF_SACK);
    uint32_t data_max = SEQ_LT(c->snd_max, c->snd_end) ? c->snd_max : c->snd_end;
    if (!(c->flags & TF_IN_RECOVERY) && c->snd_nxt != c->snd_max)
        return; /* going back after an RTO: the RTO's business */
    c->flags |= TF_TLP_SENT;
    c->tlp_n++;
    tw__tcp_arm_tlp(c, now_ns);
    st->stats.tlp_probes++;
    c->rtt_start_ns = 0; /* Karn */
    uint32_t seq, len;
    if (c->flags & TF_IN_RECOVERY) {
        /* No progress for 2 SRTT in recovery: the retransmissions since
         * are taken as lost; NextSeg starts again at the first hole. */
        c->high_rxt = c->snd_una;
        if (!tw__sack_next_hole(&c->sb, c->snd_una, data_max, c->mss, &seq, &len))
            (void)resend(c, seq, len, now_ns);
        return;
    }
    if (SEQ_LT(c->snd_max, c->snd_end) && SEQ_GT(c->snd_una + c->snd_wnd, c->snd_max)) {
        len = c->snd_end - c->snd_max;
        uint32_t room = c->snd_una + c->snd_wnd - c->snd_max;
        len = len > c->mss ? c->mss : len;
        len = len > room ? room : len;
        if (send_one(c, c->snd_max, len, now_ns) == 0) {
            c->snd_max += len;
            c->snd_nxt = c->snd_max;
        }
        return;
    }
    if (SEQ_GT(data_max, c->snd_una)) {
        seq = data_max - c->snd_una > c->mss ? data_max - c->mss : c->snd_una;
        if (send_one(c, seq, data_max - seq, now_ns) == 0)
            st->stats.retransmits++;
    }
}

int tw__sack_output(tw_tcp_conn *c, int64_t now_ns)
{
    tw_net *st = c->st;
    TW_ASSERT((c->flags & (TF_SACK | TF_IN_RECOVERY)) == (TF_SACK | TF_IN_RECOVERY));
    /* In recovery nothing goes back: snd_nxt stays at snd_max. */
    c->snd_nxt = c->snd_max;
    uint32_t data_max = SEQ_LT(c->snd_max, c->snd_end) ? c->snd_max : c->snd_end;
    for (int guard = 0; guard < TW_NET_MAX_BURST; guard++) {
        uint32_t pipe = tw__sack_pipe(&c->sb, c->snd_una, c->snd_max, c->high_rxt, c->mss);
        if (c->cwnd < pipe + c->mss)
            break;
        uint32_t lost = tw__sack_lost_end(&c->sb, c->snd_una, c->mss);
        uint32_t from = SEQ_GT(c->high_rxt, c->snd_una) ? c->high_rxt : c->snd_una;
        uint32_t seq, len;
        uint32_t high_ack = c->sb.n ? c->sb.blk[c->sb.n - 1][1] : c->snd_una;
        if (SEQ_GT(high_ack, data_max))
            high_ack = data_max;
        /* (1) the first lost unSACKed hole above HighRxt. */
        if (!tw__sack_next_hole(&c->sb, from, SEQ_LT(lost, data_max) ? lost : data_max,
                                c->mss, &seq, &len)) {
            if (resend(c, seq, len, now_ns))
                break;
            continue;
        }
        /* (2) new data, within the peer's window. */
        if (SEQ_LT(c->snd_max, c->snd_end)) {
            uint32_t room = c->snd_una + c->snd_wnd - c->snd_max;
            if (SEQ_LEQ(c->snd_una + c->snd_wnd, c->snd_max))
                room = 0;
            len = c->snd_end - c->snd_max;
            if (len > c->mss)
                len = c->mss;
            if (len > room)
                len = room;
            if (len) {
                if (send_one(c, c->snd_max, len, now_ns))
                    break;
                c->snd_max += len;
                c->snd_nxt = c->snd_max;
                continue;
            }
        }
        /* (3) an unSACKed hole above HighRxt, below the highest SACK. */
        if (!tw__sack_next_hole(&c->sb, from, high_ack, c->mss, &seq, &len)) {
            if (resend(c, seq, len, now_ns))
                break;
            continue;
        }
        /* (4) rescue: once per cumulative ACK point, the last unSACKed
         * segment, so that a lost tail needs no RTO. */
        if (!(c->flags & TF_RESCUE_SET) || SEQ_GT(c->snd_una, c->rescue_rxt)) {
            uint32_t top = data_max;
            uint32_t end;
            /* The highest unSACKed byte: below the last block's start when
             * the last block reaches the top. */
            if (c->sb.n && c->sb.blk[c->sb.n - 1][1] == top)
                top = c->sb.blk[c->sb.n - 1][0];
            if (SEQ_GT(top, c->snd_una) && !tw__sack_covered(&c->sb, top - 1, &end)) {
                uint32_t s = SEQ_GT(top - c->mss, c->snd_una) ? top - c->mss : c->snd_una;
                /* Not into a SACKed block below. */
                for (unsigned k = 0; k < c->sb.n; k++)
                    if (SEQ_GT(c->sb.blk[k][1], s) && SEQ_LT(c->sb.blk[k][1], top))
                        s = c->sb.blk[k][1];
                if (send_one(c, s, top - s, now_ns) == 0) {
                    c->rescue_rxt = c->recover;
                    c->flags |= TF_RESCUE_SET;
                    st->stats.retransmits++;
                    st->stats.rescue_retransmits++;
                }
            } else {
                c->rescue_rxt = c->recover;
                c->flags |= TF_RESCUE_SET;
            }
        }
        break;
    }
    if (!c->rto_at_ns && c->snd_una != c->snd_max)
        tw__tcp_arm_rto(c, now_ns);
    return 1;
}
