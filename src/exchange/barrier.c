/* The lockstep barrier: after each bar a TestRequest 112=bar-<i> to every
 * session that took it, and the Heartbeat answering it, passed only once
 * the session has taken it in sequence (after every order the trader sent
 * before it); the same for the TestRequest 112=open that holds bars until
 * a new subscriber is in.  Called by the connection (heartbeats seen), the
 * bar clock and market data (TestRequests out); calls only the output. */
#include <errno.h>
#include <string.h>

#include "exchange/exchange_internal.h"
#include "tickwire/util.h"

/* The number from d up to the SOH that ends its field (before e). */
static int parse_u64(const char *d, const char *e, uint64_t *out)
{
    const char *soh = memchr(d, '\x01', (size_t)(e - d));
    return soh ? tw_parse_u64(d, (size_t)(soh - d), out) : -EINVAL;
}

static int heartbeat_kind(const char *msg, size_t len, uint64_t *bar, uint64_t *seq)
{
    /* "8=..\x019=..\x0135=0\x01": MsgType is the third field. */
    const char *p = memchr(msg, '\x01', len);
    if (!p)
        return HB_NONE;
    p = memchr(p + 1, '\x01', len - (size_t)(p + 1 - msg));
    if (!p || (size_t)(msg + len - p) < 6 || memcmp(p, "\x01" "35=0\x01", 6))
        return HB_NONE;
    const char *e = msg + len;
    const char *t = memmem(p, (size_t)(e - p), "\x01" "112=", 5);
    const char *q = memmem(p, (size_t)(e - p), "\x01" "34=", 4);
    if (!t || !q || parse_u64(q + 4, e, seq) != 0)
        return HB_NONE;
    t += 5;
    if ((size_t)(e - t) > 4 && !memcmp(t, "bar-", 4))
        return parse_u64(t + 4, e, bar) == 0 ? HB_BAR : HB_NONE;
    size_t ol = sizeof(XS_OPEN_ID) - 1;
    if ((size_t)(e - t) > ol && !memcmp(t, XS_OPEN_ID "\x01", ol + 1))
        return HB_OPEN;
    return HB_NONE;
}

void tw__xchg_heartbeat_scan(const char *msg, size_t len, xs_heartbeat *hb)
{
    hb->bar = hb->seq = hb->seq_before = 0;
    hb->kind = heartbeat_kind(msg, len, &hb->bar, &hb->seq);
}

void tw__xchg_ack(tw_xchg *x, xs_sess *s)
{
    TW_ASSERT(x->awaiting && s->part && !s->acked);
    s->acked = 1;
    s->ack_after_gap = 0;
    x->st.barrier_acks++;
}

int tw__xchg_send_test_request(tw_xchg *x, xs_sess *s, int64_t now_ns)
{
    TW_ASSERT(x->cur_bar >= 0);
    char id[32] = "bar-";
    size_t n = 4 + tw_fix_fmt_u64(id + 4, (uint64_t)x->cur_bar);
    tw_fix_wbuf *w = tw__xchg_begin(x, s, "1", now_ns);
    if (!w)
        return -ENOTCONN;
    tw_fix_put_str(w, 112, id, n);
    int rc = tw__xchg_send(x, s, now_ns);
    if (rc == 0)
        x->st.barrier_test_requests++;
    return rc;
}

int tw__xchg_send_open_request(tw_xchg *x, xs_sess *s, int64_t now_ns)
{
    tw_fix_wbuf *w = tw__xchg_begin(x, s, "1", now_ns);
    if (!w)
        return -ENOTCONN;
    tw_fix_put_cstr(w, 112, XS_OPEN_ID);
    return tw__xchg_send(x, s, now_ns);
}

void tw__xchg_barrier_heartbeat(tw_xchg *x, xs_sess *s, const xs_heartbeat *hb)
{
    TW_ASSERT(hb->kind != HB_NONE && s->fs.state == TW_FIX_ACTIVE);
    /* Taken in sequence: every message before it has been handled.  Above
     * a gap: the session dropped it and asked for a resend; what the
     * trader sent before it comes with the resend, so it counts once the
     * gap has closed (tw_xchg_poll). */
    int in_seq = hb->seq == hb->seq_before && s->fs.next_in == hb->seq_before + 1;
    int above = hb->seq > hb->seq_before;
    if (hb->kind == HB_BAR && x->awaiting && (int64_t)hb->bar == x->cur_bar && s->part &&
        !s->acked) {
        if (in_seq)
            tw__xchg_ack(x, s);
        else if (above)
            s->ack_after_gap = 1;
    } else if (hb->kind == HB_OPEN && s->opened && !s->ready) {
        if (in_seq)
            s->ready = 1;
        else if (above)
            s->ready_after_gap = 1;
    }
}
