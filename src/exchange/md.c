/* Market data: MarketDataRequest (V) in, MarketDataRequestReject (Y),
 * IncrementalRefresh (X), the barrier's TestRequest and
 * TradingSessionStatus (h) out (live.md, "The venue protocol", 1-3 and 6).
 *
 * A bar is formatted once (each instrument's X entry, its price as the
 * shortest exact decimal) and copied into every subscribed session's
 * message; that is all the per-session work there is besides the
 * session's own store-and-send. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "exchange/exchange_internal.h"
#include "tickwire/util.h"

/* SessionRejectReason (373) and MDReqRejReason (281) values used here. */
#define REJ_REQUIRED 1
#define REJ_VALUE 5
#define REJ_FORMAT 6
#define REJ_GROUP_COUNT 16
#define MDREJ_UNKNOWN_SYMBOL '0'
#define MDREJ_SUB_TYPE '4'
#define MDREJ_DEPTH '5'
#define MDREJ_UPDATE_TYPE '6'
#define MDREJ_ENTRY_TYPE '8'

static void md_reject(tw_xchg *x, xs_sess *s, const tw_fix_field *req, char reason,
                      const char *text, int64_t now_ns)
{
    x->st.md_rejects++;
    tw__xchg_log(x, s, "MarketDataRequestReject: %s", text);
    tw_fix_wbuf *w = tw__xchg_begin(x, s, "Y", now_ns);
    if (!w)
        return;
    tw_fix_put_str(w, 262, req->val, req->len);
    tw_fix_put_char(w, 281, reason);
    tw_fix_put_cstr(w, 58, text);
    tw__xchg_send(x, s, now_ns);
}

int tw__xchg_sym_index(const tw_xchg *x, const char *v, size_t n)
{
    for (unsigned i = 0; i < x->n_sym; i++)
        if (x->sym_name_len[i] == n && !memcmp(x->sym_name[i], v, n))
            return (int)i;
    return -1;
}

void tw__xchg_on_md_request(tw_xchg *x, xs_sess *s, const tw_fix_msg *m, int64_t now_ns)
{
    x->st.md_requests++;
    const tw_fix_field *req = tw_fix_get(m, 262), *f263 = tw_fix_get(m, 263),
                       *f264 = tw_fix_get(m, 264), *f265 = tw_fix_get(m, 265);
    if (!req) {
        tw__xchg_session_reject(x, s, m, 262, REJ_REQUIRED, "MDReqID(262) missing", now_ns);
        return;
    }
    if (!tw_text_ok(req->val, req->len, XS_ID_MAX, TW_TEXT_SPACE)) {
        tw__xchg_session_reject(x, s, m, 262, REJ_VALUE,
                                "MDReqID(262) longer than 64 or not printable", now_ns);
        return;
    }
    if (!f263) {
        tw__xchg_session_reject(x, s, m, 263, REJ_REQUIRED,
                                "SubscriptionRequestType(263) missing", now_ns);
        return;
    }
    if (!f264) {
        tw__xchg_session_reject(x, s, m, 264, REJ_REQUIRED, "MarketDepth(264) missing", now_ns);
        return;
    }
    int64_t depth;
    if (tw_fix_to_i64(f264->val, f264->len, &depth) != 0) {
        tw__xchg_session_reject(x, s, m, 264, REJ_FORMAT, "MarketDepth(264) not a number",
                                now_ns);
        return;
    }
    tw_fix_group_iter it;
    int ntypes = tw_fix_group_begin(&it, m, &tw_fix_grp_md_entry_types, 0);
    if (ntypes <= 0) {
        tw__xchg_session_reject(x, s, m, 267, ntypes < 0 ? REJ_GROUP_COUNT : REJ_REQUIRED,
                                ntypes < 0 ? "NoMDEntryTypes(267) group malformed"
                                           : "NoMDEntryTypes(267) missing",
                                now_ns);
        return;
    }
    int trade = 0;
    uint32_t first, n;
    int r;
    while ((r = tw_fix_group_next(&it, &first, &n)) == 1)
        for (uint32_t k = first; k < first + n; k++)
            if (m->fields[k].tag == 269 && m->fields[k].len == 1 && m->fields[k].val[0] == '2')
                trade = 1;
    if (r < 0) {
        tw__xchg_session_reject(x, s, m, 267, REJ_GROUP_COUNT,
                                "NoMDEntryTypes(267) announces more entries than there are",
                                now_ns);
        return;
    }
    int nsym = tw_fix_group_begin(&it, m, &tw_fix_grp_related_sym, 0);
    if (nsym <= 0) {
        tw__xchg_session_reject(x, s, m, 146, nsym < 0 ? REJ_GROUP_COUNT : REJ_REQUIRED,
                                nsym < 0 ? "NoRelatedSym(146) group malformed"
                                         : "NoRelatedSym(146) missing",
                                now_ns);
        return;
    }
    /* Well formed: what we do not offer is a Y, not a Reject. */
    char sub = f263->len == 1 ? f263->val[0] : 0;
    if (sub != '1' && sub != '2') {
        md_reject(x, s, req, MDREJ_SUB_TYPE,
                  "SubscriptionRequestType(263) must be 1 (snapshot + updates) or 2", now_ns);
        return;
    }
    if (depth != 0 && depth != 1) {
        md_reject(x, s, req, MDREJ_DEPTH, "MarketDepth(264) must be 1 (top of book)", now_ns);
        return;
    }
    if (f265 && !(f265->len == 1 && f265->val[0] == '1')) {
        md_reject(x, s, req, MDREJ_UPDATE_TYPE, "MDUpdateType(265) must be 1 (incremental)",
                  now_ns);
        return;
    }
    if (!trade) {
        md_reject(x, s, req, MDREJ_ENTRY_TYPE, "MDEntryType(269) 2 (Trade) not requested",
                  now_ns);
        return;
    }
    while ((r = tw_fix_group_next(&it, &first, &n)) == 1) {
        const tw_fix_field *sf = NULL;
        for (uint32_t k = first; k < first + n && !sf; k++)
            if (m->fields[k].tag == 55)
                sf = &m->fields[k];
        if (!sf)
            continue; /* the delimiter is 55: cannot happen */
        int si = tw__xchg_sym_index(x, sf->val, sf->len);
        if (si < 0) {
            char text[128];
            x->st.unknown_symbols++;
            snprintf(text, sizeof(text), "unknown symbol '%.*s'",
                     (int)(sf->len < 64 ? sf->len : 64), sf->val);
            for (char *p = text; *p; p++)
                if ((unsigned char)*p < ' ' || (unsigned char)*p >= 127)
                    *p = '?';
            md_reject(x, s, req, MDREJ_UNKNOWN_SYMBOL, text, now_ns);
            continue;
        }
        if (sub == '1') {
            if (!s->sub[si]) {
                s->sub[si] = 1;
                s->n_sub++;
            }
            memcpy(s->md_req[si], req->val, req->len);
            s->md_req[si][req->len] = 0;
        } else if (s->sub[si]) {
            s->sub[si] = 0;
            s->n_sub--;
        }
    }
    if (r < 0)
        tw__xchg_session_reject(x, s, m, 146, REJ_GROUP_COUNT,
                                "NoRelatedSym(146) announces more entries than there are",
                                now_ns);
    /* The first subscription: Open, then a TestRequest whose answer says
     * that every V sent before it has arrived (a trader may send one V per
     * instrument: none of them may miss bar 0). */
    if (s->n_sub && !s->opened && tw__xchg_send_status(x, s, '2', now_ns) == 0 &&
        tw__xchg_send_open_request(x, s, now_ns) == 0) {
        s->opened = 1;
        tw__xchg_log(x, s, "subscribed to %u symbol(s)", s->n_sub);
    }
}

/* Formats symbol si's entry of bar i into x->entry[si]. */
static void format_entry(tw_xchg *x, unsigned si, uint64_t i)
{
    char *e = x->entry[si];
    size_t k = 0;
    memcpy(e + k, "279=0\x01" "269=2\x01" "55=", 15);
    k += 15;
    memcpy(e + k, x->sym_name[si], x->sym_name_len[si]);
    k += x->sym_name_len[si];
    memcpy(e + k, "\x01" "278=", 5);
    k += 5;
    k += tw_fix_fmt_u64(e + k, i);
    e[k++] = '\x01';
    double px = x->cfg.symbols[si].close[i];
    if (!isnan(px)) {
        memcpy(e + k, "270=", 4);
        k += 4;
        size_t n = tw_double_to_decimal(px, x->px_text[si]);
        memcpy(e + k, x->px_text[si], n);
        k += n;
        e[k++] = '\x01';
        x->last_px_bar[si] = (int64_t)i;
    }
    memcpy(e + k, "271=1\x01", 6);
    k += 6;
    TW_ASSERT(k <= XS_ENTRY_MAX);
    x->entry_len[si] = k;
}

/* Bytes of entries one X may carry: the session's message buffer less
 * room for the header, 262/268, the trailer, and PossDup/OrigSendingTime
 * when the store sends it again. */
#define X_ENTRY_BUDGET (TW_FIX_TX_BUF - 1024)
TW_STATIC_ASSERT(XS_ENTRY_MAX <= X_ENTRY_BUDGET, "one entry must fit in an X");

/* Sends bar i's entries of s's symbols in X messages of at most
 * cfg.max_entries entries and X_ENTRY_BUDGET bytes of them.  Returns the
 * number of entries sent. */
static unsigned send_bar(tw_xchg *x, xs_sess *s, uint64_t i, int64_t now_ns)
{
    unsigned sent = 0, si = 0;
    while (si < x->n_sym) {
        unsigned chunk[64], k = 0, cap = x->cfg.max_entries < 64 ? x->cfg.max_entries : 64;
        size_t bytes = 0;
        for (; si < x->n_sym && k < cap; si++) {
            if (!s->sub[si] || i >= x->cfg.symbols[si].n_bars)
                continue;
            if (bytes + x->entry_len[si] > X_ENTRY_BUDGET)
                break; /* this one starts the next X */
            bytes += x->entry_len[si];
            chunk[k++] = si;
        }
        if (k == 0)
            break;
        tw_fix_wbuf *w = tw__xchg_begin(x, s, "X", now_ns);
        if (!w)
            return sent;
        const char *req = s->md_req[chunk[0]];
        tw_fix_put_str(w, 262, req, strlen(req));
        tw_fix_put_u64(w, 268, k);
        for (unsigned j = 0; j < k; j++)
            tw_fix_put_raw(w, x->entry[chunk[j]], x->entry_len[chunk[j]]);
        if (tw__xchg_send(x, s, now_ns) != 0)
            return sent;
        x->st.md_msgs++;
        x->st.md_entries += k;
        sent += k;
    }
    return sent;
}

void tw__xchg_emit_bar(tw_xchg *x, uint64_t i, int64_t now_ns)
{
    TW_VERIFY(!x->in_emit && (int64_t)i == x->cur_bar + 1 && i < x->n_bars);
    x->in_emit = 1;
    for (unsigned si = 0; si < x->n_sym; si++)
        if (i < x->cfg.symbols[si].n_bars)
            format_entry(x, si, i);
    x->cur_bar = (int64_t)i;
    int gap = 0, drop = 0, hasty = 0;
    uint64_t slow_ms = 0;
    for (unsigned f = 0; f < x->cfg.n_faults; f++) {
        const tw_xchg_fault *ft = &x->cfg.faults[f];
        if (ft->bar != i)
            continue;
        gap |= ft->kind == TW_XCHG_FAULT_GAP;
        drop |= ft->kind == TW_XCHG_FAULT_DISCONNECT;
        hasty |= ft->kind == TW_XCHG_FAULT_HASTY;
        if (ft->kind == TW_XCHG_FAULT_SLOW && ft->ms > slow_ms)
            slow_ms = ft->ms;
    }
    int any = 0;
    for (unsigned k = 0; k < x->n_sess; k++) {
        xs_sess *s = x->sess[k];
        s->part = 0;
        s->acked = 0;
        s->ack_after_gap = 0;
        s->reissue = 0;
        if (!s->n_sub || !s->conn || s->fs.state != TW_FIX_ACTIVE)
            continue;
        if (gap) {
            /* The trader sees MsgSeqNum jump, asks for a resend, and gets
             * the skipped number gap-filled and this bar again (PossDup). */
            tw_fix_session_set_next_out(&s->fs, s->fs.next_out + 1);
            x->st.faults_gap++;
            tw__xchg_log(x, s, "fault: MsgSeqNum %llu skipped at bar %llu",
                         (unsigned long long)(s->fs.next_out - 1), (unsigned long long)i);
        }
        if (send_bar(x, s, i, now_ns) == 0)
            continue;
        if (x->cfg.lockstep && tw__xchg_send_test_request(x, s, now_ns) == 0) {
            s->part = 1;
            any = 1;
        }
    }
    x->st.bars++;
    x->awaiting = x->cfg.lockstep && any;
    if (hasty && x->awaiting) {
        /* The TestRequests went out; their Heartbeats will find the bar
         * clock gone on (a Heartbeat for an earlier bar passes nothing). */
        x->awaiting = 0;
        x->hasty = 1;
        x->st.faults_hasty++;
        tw__xchg_log(x, NULL, "fault: bar %llu not waited for", (unsigned long long)i);
    }
    if (drop) {
        for (unsigned k = 0; k < x->n_sess; k++) {
            xs_sess *s = x->sess[k];
            if (s->n_sub && s->conn) {
                x->st.faults_disconnect++;
                tw__xchg_log(x, s, "fault: connection dropped after bar %llu",
                             (unsigned long long)i);
                tw__xchg_drop_conn(x, s->conn, now_ns);
            }
        }
    }
    if (slow_ms) {
        x->st.faults_slow++;
        tw__xchg_log(x, NULL, "fault: not reading for %llu ms after bar %llu",
                     (unsigned long long)slow_ms, (unsigned long long)i);
        for (unsigned k = 0; k < x->cfg.max_conns; k++) {
            xs_conn *c = &x->conns[k];
            if (c->state == CONN_PENDING || c->state == CONN_BOUND)
                c->read_at_ns = now_ns + (int64_t)(slow_ms * 1000000u);
        }
    }
    x->in_emit = 0;
}
