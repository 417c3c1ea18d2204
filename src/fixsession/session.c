/* FIX session layer: logon, heartbeats, sequence numbers, resend and
 * gap-fill, logout (tickwire/fix_session.h).  No clock, no socket: now_ns
 * (monotonic) comes in, SendingTime is now_ns + epoch_offset_ns, bytes go
 * out through cfg.stream.
 *
 * Gaps: a message above the expected MsgSeqNum triggers one open-ended
 * ResendRequest and is then dropped, not queued: the open-ended request
 * brings it back (as PossDup) in order, so no queue memory is needed and
 * the application sees every message exactly once in sequence.  While the
 * request is outstanding further gaps send nothing new; it is repeated
 * only if left unanswered for a heartbeat interval. */
#include <errno.h>
#include <string.h>

#include "tickwire/fix_session.h"

/* SessionRejectReason (373). */
enum {
    REJ_INVALID_TAG = 0,
    REJ_REQUIRED_MISSING = 1,
    REJ_NO_VALUE = 4,
    REJ_VALUE_INCORRECT = 5,
    REJ_DATA_FORMAT = 6,
    REJ_COMPID = 9,
    REJ_SENDING_TIME = 10,
    REJ_INVALID_MSGTYPE = 11,
    REJ_OTHER = 99 /* FIX 4.4 only; 4.2 gets REJ_VALUE_INCORRECT */
};

/* A received message larger than this is treated as garbled rather than
 * waited for (tickwire/fix_session.h: TW_FIX_RX_MIN). */
#define MAX_MSG TW_FIX_RX_MIN

const char *tw_fix_state_name(tw_fix_state st)
{
    switch (st) {
    case TW_FIX_DISCONNECTED: return "DISCONNECTED";
    case TW_FIX_CONNECTED: return "CONNECTED";
    case TW_FIX_LOGON_SENT: return "LOGON_SENT";
    case TW_FIX_ACTIVE: return "ACTIVE";
    case TW_FIX_LOGOUT_SENT: return "LOGOUT_SENT";
    }
    return "?";
}

static void event(tw_fix_session *s, tw_fix_event ev, const char *text)
{
    if (s->cfg.app.on_event)
        s->cfg.app.on_event(s->cfg.app.ctx, s, ev, text);
}

/* The transitions the session makes: a new stream from any state, Logon
 * sent or received, Logout sent from ACTIVE, and down from anywhere. */
static int valid_transition(tw_fix_state from, tw_fix_state to)
{
    switch (to) {
    case TW_FIX_DISCONNECTED:
    case TW_FIX_CONNECTED:
        return 1;
    case TW_FIX_LOGON_SENT:
        return from == TW_FIX_CONNECTED;
    case TW_FIX_ACTIVE:
        return from == TW_FIX_CONNECTED || from == TW_FIX_LOGON_SENT;
    case TW_FIX_LOGOUT_SENT:
        return from == TW_FIX_ACTIVE;
    }
    return 0;
}

static void set_state(tw_fix_session *s, tw_fix_state st, int64_t now_ns)
{
    TW_ASSERT(st >= TW_FIX_DISCONNECTED && st <= TW_FIX_LOGOUT_SENT);
    TW_VERIFY(valid_transition(s->state, st));
    s->state = st;
    s->state_since_ns = now_ns;
}

/* SendingTime (and every other epoch stamp we write) for a monotonic now. */
static int64_t epoch_of(const tw_fix_session *s, int64_t now_ns)
{
    return now_ns + s->epoch_offset_ns;
}

static void disconnect(tw_fix_session *s, const char *why, int64_t now_ns)
{
    if (s->state == TW_FIX_DISCONNECTED)
        return;
    set_state(s, TW_FIX_DISCONNECTED, now_ns);
    s->test_req_sent_ns = 0;
    s->resend_until = 0;
    if (s->cfg.stream.close)
        s->cfg.stream.close(s->cfg.stream.ctx);
    event(s, TW_FIX_EV_DISCONNECT, why);
}

/* Persists the sequence numbers (write-ahead for what we send, after
 * processing for what we receive). */
static int persist(tw_fix_session *s)
{
    /* Sequence numbers start at 1 and a reset puts them back to 1: 0 is
     * never a number we send or expect. */
    TW_ASSERT(s->next_out >= 1 && s->next_in >= 1);
    tw_fix_store *st = s->cfg.store;
    if (!st || (st->next_out == s->next_out && st->next_in == s->next_in))
        return 0;
    int rc = tw_fix_store_set_seqs(st, s->next_out, s->next_in);
    if (rc != 0)
        s->st.store_errors++;
    return rc;
}

static int xmit(tw_fix_session *s, const char *msg, size_t len, int64_t now_ns)
{
    /* Everything we write comes out of the builder, which ends each
     * message with CheckSum's SOH; and there is no stream when down. */
    TW_ASSERT(len > 0 && msg[len - 1] == TW_FIX_SOH);
    TW_ASSERT(s->state != TW_FIX_DISCONNECTED);
    if (s->cfg.stream.write(s->cfg.stream.ctx, msg, len) < 0) {
        disconnect(s, "stream write failed", now_ns);
        return -EIO;
    }
    s->last_sent_ns = now_ns;
    s->st.msgs_out++;
    return 0;
}

static tw_fix_wbuf *admin_begin(tw_fix_session *s, const char *type, int64_t now_ns)
{
    tw_fix_build_begin(&s->w, &s->tmpl, s->tx, sizeof(s->tx), type, s->next_out,
                       epoch_of(s, now_ns));
    return &s->w;
}

/* Finishes and sends an admin message under the next sequence number. */
static int admin_send(tw_fix_session *s, int64_t now_ns)
{
    const char *msg;
    size_t len;
    /* Admin messages are built from our own bounded fields: an overflow is
     * our bug, not bad input. */
    TW_VERIFY(tw_fix_build_end(&s->w, &msg, &len) == 0);
#ifdef TW_DEBUG
    /* What we encode, our own framer decodes whole (debug builds). */
    size_t skip;
    TW_ASSERT(tw_fix_frame(msg, len, 0, &skip) == (int)len);
#endif
    s->next_out++;
    if (persist(s) != 0) {
        disconnect(s, "store write failed", now_ns);
        return -EIO;
    }
    return xmit(s, msg, len, now_ns);
}

static int send_logon(tw_fix_session *s, int reset, int64_t now_ns)
{
    tw_fix_wbuf *w = admin_begin(s, "A", now_ns);
    tw_fix_put_char(w, 98, '0');
    tw_fix_put_u64(w, 108, s->heart_bt_int_s);
    if (reset)
        tw_fix_put_char(w, 141, 'Y');
    return admin_send(s, now_ns);
}

static int send_logout(tw_fix_session *s, const char *text, int64_t now_ns)
{
    tw_fix_wbuf *w = admin_begin(s, "5", now_ns);
    if (text)
        tw_fix_put_cstr(w, 58, text);
    return admin_send(s, now_ns);
}

static int send_heartbeat(tw_fix_session *s, const char *id, size_t id_len, int64_t now_ns)
{
    tw_fix_wbuf *w = admin_begin(s, "0", now_ns);
    if (id)
        tw_fix_put_str(w, 112, id, id_len);
    s->st.heartbeats_sent++;
    return admin_send(s, now_ns);
}

static int send_resend_request(tw_fix_session *s, uint64_t from, int64_t now_ns)
{
    tw_fix_wbuf *w = admin_begin(s, "2", now_ns);
    tw_fix_put_u64(w, 7, from);
    /* "All subsequent": 0 in 4.4; 4.2 counterparties expect 999999. */
    tw_fix_put_u64(w, 16, s->fix44 ? 0 : 999999);
    s->st.resend_requests_sent++;
    s->resend_sent_ns = now_ns;
    return admin_send(s, now_ns);
}

static int send_reject(tw_fix_session *s, uint64_t ref_seq, uint32_t ref_tag,
                       const char *ref_type, size_t ref_type_len, int reason, const char *text,
                       int64_t now_ns)
{
    if (reason == REJ_OTHER && !s->fix44)
        reason = REJ_VALUE_INCORRECT;
    tw_fix_wbuf *w = admin_begin(s, "3", now_ns);
    tw_fix_put_u64(w, 45, ref_seq);
    if (ref_tag)
        tw_fix_put_u64(w, 371, ref_tag);
    if (ref_type && ref_type_len > 0 && ref_type_len <= 8)
        tw_fix_put_str(w, 372, ref_type, ref_type_len);
    tw_fix_put_u64(w, 373, (uint64_t)reason);
    tw_fix_put_cstr(w, 58, text);
    s->st.rejects_sent++;
    event(s, TW_FIX_EV_REJECT_SENT, text);
    return admin_send(s, now_ns);
}

/* SequenceReset-GapFill for [from, to) sent in answer to a ResendRequest:
 * it carries `from` as its own MsgSeqNum and does not consume one. */
static int send_gap_fill(tw_fix_session *s, uint64_t from, uint64_t to, int64_t now_ns)
{
    tw_fix_wbuf *w = &s->w;
    tw_fix_build_begin_raw(w, &s->tmpl, s->tx, sizeof(s->tx), "4");
    TW_ASSERT(from >= 1 && to > from && to <= s->next_out);
    tw_fix_put_u64(w, 34, from);
    tw_fix_put_char(w, 43, 'Y');
    tw_fix_put_ts(w, 52, epoch_of(s, now_ns), s->tmpl.ts_digits);
    tw_fix_put_ts(w, 122, epoch_of(s, now_ns), s->tmpl.ts_digits);
    tw_fix_put_char(w, 123, 'Y');
    tw_fix_put_u64(w, 36, to);
    const char *msg;
    size_t len;
    TW_VERIFY(tw_fix_build_end(w, &msg, &len) == 0);
    s->st.gap_fills_sent++;
    return xmit(s, msg, len, now_ns);
}

/* Resends stored application messages in [begin, end] with PossDupFlag=Y
 * and OrigSendingTime; every seq without a stored message (admin messages,
 * or all of them when there is no store) is covered by a GapFill. */
static void answer_resend(tw_fix_session *s, uint64_t begin, uint64_t end, int64_t now_ns)
{
    s->st.resend_requests_rcvd++;
    uint64_t last = s->next_out - 1;
    if (end == 0 || end == 999999 || end > last)
        end = last;
    if (begin == 0 || begin > end)
        return; /* nothing we ever sent is in that range */
    event(s, TW_FIX_EV_RESEND, "answering ResendRequest");
    uint64_t cur = begin;
    tw_fix_store *st = s->cfg.store;
    uint32_t i = st ? tw_fix_store_lower_bound(st, begin) : 0;
    for (; st && i < st->n && st->ents[i].seq <= end; i++) {
        tw_fix_stored m;
        if (tw_fix_store_read(st, i, s->rs, sizeof(s->rs), &m) != 0) {
            /* Unreadable: gap-fill over it rather than stall the peer. */
            s->st.store_errors++;
            continue;
        }
        /* The index is sorted and starts at >= begin: never backwards. */
        TW_ASSERT(m.seq >= cur);
        if (m.seq > cur && send_gap_fill(s, cur, m.seq, now_ns) != 0)
            return;
        tw_fix_wbuf *w = &s->w;
        char type[9];
        memcpy(type, m.type, m.type_len);
        type[m.type_len] = 0;
        tw_fix_build_begin_raw(w, &s->tmpl, s->tx, sizeof(s->tx), type);
        tw_fix_put_u64(w, 34, m.seq);
        tw_fix_put_char(w, 43, 'Y');
        tw_fix_put_ts(w, 52, epoch_of(s, now_ns), s->tmpl.ts_digits);
        tw_fix_put_ts(w, 122, m.orig_sending_ns, s->tmpl.ts_digits);
        tw_fix_put_raw(w, m.body, m.body_len);
        const char *msg;
        size_t len;
        if (tw_fix_build_end(w, &msg, &len) != 0) {
            s->st.store_errors++;
            continue;
        }
        if (xmit(s, msg, len, now_ns) != 0)
            return;
        s->st.msgs_resent++;
        cur = m.seq + 1;
    }
    if (cur <= end)
        send_gap_fill(s, cur, end + 1, now_ns);
}

int tw_fix_session_init(tw_fix_session *s, const tw_fix_session_cfg *cfg, tw_error *err)
{
    memset(s, 0, sizeof(*s));
    s->cfg = *cfg;
    if (!cfg->begin_string || !cfg->stream.write)
        return tw__err(err, -EINVAL, "fix session: begin_string and stream.write are required");
    if (strcmp(cfg->begin_string, "FIX.4.4") == 0)
        s->fix44 = 1;
    else if (strcmp(cfg->begin_string, "FIX.4.2") != 0)
        return tw__err(err, -EINVAL, "fix session: BeginString %s not supported (FIX.4.2, FIX.4.4)",
                       cfg->begin_string);
    int rc = tw_fix_template_init(&s->tmpl, cfg->begin_string, cfg->sender_comp_id,
                                  cfg->target_comp_id, NULL, NULL, cfg->ts_digits, err);
    if (rc != 0)
        return rc;
    if (!s->cfg.logon_timeout_ns)
        s->cfg.logon_timeout_ns = 10000000000ull;
    if (!s->cfg.logout_timeout_ns)
        s->cfg.logout_timeout_ns = 2000000000ull;
    s->heart_bt_int_s = cfg->heart_bt_int_s;
    s->hb_ns = (uint64_t)cfg->heart_bt_int_s * 1000000000ull;
    s->next_out = cfg->store ? cfg->store->next_out : 1;
    s->next_in = cfg->store ? cfg->store->next_in : 1;
    s->epoch_offset_ns = cfg->epoch_offset_ns;
    if (cfg->px_decimals > 18)
        return tw__err(err, -EINVAL, "fix session: px_decimals %u above 18", cfg->px_decimals);
    s->dec = (tw_fix_decoded){ .flags = cfg->decode_flags & TW_FIX_PX_F64,
                               .px_decimals = cfg->px_decimals ? cfg->px_decimals
                                                               : TW_FIX_PX_DECIMALS,
                               .entries = cfg->md_entries,
                               .entries_cap = cfg->md_entries ? cfg->md_entries_cap : 0,
                               .fields = s->fields,
                               .fields_cap = TW_FIX_MAX_FIELDS };
    s->state = TW_FIX_DISCONNECTED;
    return 0;
}

void tw_fix_session_set_epoch_offset(tw_fix_session *s, int64_t epoch_offset_ns)
{
    s->epoch_offset_ns = epoch_offset_ns;
}

int64_t tw_fix_session_epoch_ns(const tw_fix_session *s, int64_t now_ns)
{
    return epoch_of(s, now_ns);
}

static int do_reset(tw_fix_session *s)
{
    s->next_out = 1;
    s->next_in = 1;
    s->resend_until = 0;
    if (s->cfg.store && tw_fix_store_reset(s->cfg.store) != 0) {
        s->st.store_errors++;
        return -EIO;
    }
    return 0;
}

int tw_fix_session_connected(tw_fix_session *s, int64_t now_ns)
{
    set_state(s, TW_FIX_CONNECTED, now_ns);
    s->last_recv_ns = s->last_sent_ns = now_ns;
    s->test_req_sent_ns = 0;
    s->resend_until = 0;
    s->logon_received = 0;
    if (!s->cfg.initiator)
        return 0;
    if (s->cfg.reset_on_logon && do_reset(s) != 0) {
        disconnect(s, "store write failed", now_ns);
        return -EIO;
    }
    set_state(s, TW_FIX_LOGON_SENT, now_ns);
    int rc = send_logon(s, s->cfg.reset_on_logon, now_ns);
    /* Logon is the first thing on a new stream (after a reset, number 1). */
    TW_ASSERT(rc != 0 || !s->cfg.reset_on_logon || s->next_out == 2);
    return rc;
}

void tw_fix_session_disconnected(tw_fix_session *s, int64_t now_ns)
{
    if (s->state == TW_FIX_DISCONNECTED)
        return;
    set_state(s, TW_FIX_DISCONNECTED, now_ns);
    event(s, TW_FIX_EV_DISCONNECT, "stream closed by peer");
}

int tw_fix_session_heartbeat(tw_fix_session *s, const char *test_req_id, size_t len,
                             int64_t now_ns)
{
    if (s->state != TW_FIX_ACTIVE && s->state != TW_FIX_LOGOUT_SENT)
        return -ENOTCONN;
    TW_ASSERT(test_req_id != NULL || len == 0);
    return send_heartbeat(s, test_req_id, len, now_ns);
}

int tw_fix_session_logout(tw_fix_session *s, const char *text, int64_t now_ns)
{
    if (s->state != TW_FIX_ACTIVE)
        return -ENOTCONN;
    set_state(s, TW_FIX_LOGOUT_SENT, now_ns);
    return send_logout(s, text, now_ns);
}

int tw_fix_session_set_next_out(tw_fix_session *s, uint64_t next_out)
{
    if (next_out == 0)
        return -EINVAL;
    s->next_out = next_out;
    return persist(s);
}

tw_fix_wbuf *tw_fix_session_begin(tw_fix_session *s, const char *msg_type, int64_t now_ns)
{
    size_t tl = strlen(msg_type);
    if (s->state != TW_FIX_ACTIVE || tl == 0 || tl > 8)
        return NULL;
    int64_t epoch_ns = epoch_of(s, now_ns);
    tw_fix_build_begin(&s->w, &s->tmpl, s->tx, sizeof(s->tx), msg_type, s->next_out, epoch_ns);
    s->app_body_off = s->w.pos;
    s->app_time_ns = epoch_ns;
    s->app_seq = s->next_out;
    memcpy(s->app_type, msg_type, tl);
    s->app_type[tl] = 0;
    return &s->w;
}

int tw_fix_session_send(tw_fix_session *s, int64_t now_ns)
{
    if (s->state != TW_FIX_ACTIVE)
        return -ENOTCONN;
    if (s->app_seq != s->next_out)
        return -ESTALE; /* an admin message took its number since begin */
    if (s->w.overflow)
        return -ENOBUFS;
    TW_ASSERT(s->w.pos >= s->app_body_off && s->w.buf == s->tx);
    const char *body = s->tx + s->app_body_off;
    size_t body_len = s->w.pos - s->app_body_off;
    const char *msg;
    size_t len;
    if (tw_fix_build_end(&s->w, &msg, &len) != 0)
        return -ENOBUFS;
    /* Stored before it reaches the wire: after a crash at any point the
     * message is either unsent and unstored (the application still owns
     * it) or stored, and then resent as PossDup when the peer asks. */
    if (s->cfg.store &&
        tw_fix_store_add_msg(s->cfg.store, s->app_seq, s->app_time_ns, s->app_type,
                             strlen(s->app_type), body, body_len) != 0) {
        s->st.store_errors++;
        return -EIO;
    }
    uint64_t seq = s->app_seq;
    s->next_out++;
    s->app_seq = 0;
    s->st.app_out++;
    /* Stored under the number it goes out with, and that number is used. */
    TW_ASSERT(s->next_out == seq + 1);
    (void)seq;
    return xmit(s, msg, len, now_ns);
}

static int is_possdup(const tw_fix_msg *m)
{
    const tw_fix_field *f = tw_fix_get(m, 43);
    return f && f->len == 1 && f->val[0] == 'Y';
}

static int field_eq(const tw_fix_field *f, const char *v)
{
    size_t n = strlen(v);
    return f && f->len == n && memcmp(f->val, v, n) == 0;
}

/* A non-negative integer field: 0, -ENOENT if absent, -EINVAL if not one. */
static int get_u64(const tw_fix_msg *m, uint32_t tag, uint64_t *out)
{
    const tw_fix_field *f = tw_fix_get(m, tag);
    int64_t v;
    if (!f)
        return -ENOENT;
    if (tw_fix_to_i64(f->val, f->len, &v) != 0 || v < 0)
        return -EINVAL;
    *out = (uint64_t)v;
    return 0;
}

/* A message that framed (BodyLength and CheckSum fine) but does not parse.
 * Finds MsgSeqNum and the first bad field by a lenient walk, so that it
 * can be rejected with a reason instead of silently dropped. */
static void malformed(tw_fix_session *s, const char *raw, size_t n, int64_t now_ns)
{
    uint64_t seq = 0;
    uint32_t bad_tag = 0;
    int reason = -1;
    size_t i = 0;
    while (i < n) {
        size_t e = i;
        while (e < n && raw[e] != '\x01')
            e++;
        size_t eq = i;
        uint64_t tag = 0;
        while (eq < e && raw[eq] >= '0' && raw[eq] <= '9' && tag < 1000000000) {
            tag = tag * 10 + (uint64_t)(raw[eq] - '0');
            eq++;
        }
        if (eq == i || eq == e || raw[eq] != '=') {
            if (reason < 0)
                reason = REJ_INVALID_TAG;
        } else if (eq + 1 == e) {
            if (reason < 0) {
                reason = REJ_NO_VALUE;
                bad_tag = (uint32_t)tag;
            }
        } else if (tag == 34) {
            uint64_t v = 0;
            size_t k = eq + 1;
            for (; k < e && raw[k] >= '0' && raw[k] <= '9' && v < (1ull << 50); k++)
                v = v * 10 + (uint64_t)(raw[k] - '0');
            if (k == e)
                seq = v;
        }
        i = e + 1;
    }
    if (seq == 0 || seq != s->next_in || s->state != TW_FIX_ACTIVE) {
        /* Without a usable sequence number it cannot be rejected: treat it
         * as garbled (counted, dropped, seq not consumed). */
        s->st.garbled++;
        s->st.garbled_bytes += n;
        event(s, TW_FIX_EV_GARBLED, "unparseable message dropped");
        return;
    }
    if (reason < 0)
        reason = REJ_OTHER; /* e.g. more fields than we parse */
    s->next_in++;
    send_reject(s, seq, bad_tag, NULL, 0, reason,
                reason == REJ_INVALID_TAG ? "Invalid tag number"
                : reason == REJ_NO_VALUE  ? "Tag specified without a value"
                                          : "Message not parseable",
                now_ns);
    persist(s);
}

static int valid_msg_type(const tw_fix_msg *m)
{
    if (m->msg_type_len == 0 || m->msg_type_len > 2)
        return 0;
    for (uint32_t i = 0; i < m->msg_type_len; i++) {
        char c = m->msg_type[i];
        if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')))
            return 0;
    }
    return 1;
}

static void handle_logon(tw_fix_session *s, const tw_fix_msg *m, uint64_t seq, int64_t now_ns)
{
    TW_ASSERT(s->state == TW_FIX_CONNECTED || s->state == TW_FIX_LOGON_SENT);
    uint64_t hb;
    int r = get_u64(m, 108, &hb);
    if (r != 0 || hb > 3600) {
        disconnect(s, r == -ENOENT ? "Logon without HeartBtInt(108)" : "Logon with a bad HeartBtInt(108)",
                   now_ns);
        return;
    }
    int reset = field_eq(tw_fix_get(m, 141), "Y");
    if (s->cfg.initiator) {
        /* Our Logon asked for a reset; a peer's 141=Y answer needs nothing
         * more.  A peer-initiated reset on an answer is not valid. */
        (void)reset;
    } else {
        s->heart_bt_int_s = (uint32_t)hb;
        s->hb_ns = hb * 1000000000ull;
        if (reset && do_reset(s) != 0) {
            disconnect(s, "store write failed", now_ns);
            return;
        }
    }
    if (seq < s->next_in) {
        char text[96] = "MsgSeqNum too low, expecting ";
        size_t k = strlen(text);
        k += tw_fix_fmt_u64(text + k, s->next_in);
        memcpy(text + k, " but received ", 14);
        k += 14;
        k += tw_fix_fmt_u64(text + k, seq);
        text[k] = 0;
        send_logout(s, text, now_ns);
        disconnect(s, text, now_ns);
        return;
    }
    s->logon_received = 1;
    if (!s->cfg.initiator && send_logon(s, reset, now_ns) != 0)
        return;
    set_state(s, TW_FIX_ACTIVE, now_ns);
    TW_ASSERT(seq >= s->next_in);
    event(s, TW_FIX_EV_LOGON, "logged on");
    if (seq > s->next_in) {
        s->resend_until = seq;
        event(s, TW_FIX_EV_GAP, "MsgSeqNum too high on Logon");
        send_resend_request(s, s->next_in, now_ns);
    } else {
        s->next_in = seq + 1;
    }
    persist(s);
}

static void too_low_logout(tw_fix_session *s, uint64_t seq, int64_t now_ns)
{
    char text[96] = "MsgSeqNum too low, expecting ";
    size_t k = strlen(text);
    k += tw_fix_fmt_u64(text + k, s->next_in);
    memcpy(text + k, " but received ", 14);
    k += 14;
    k += tw_fix_fmt_u64(text + k, seq);
    text[k] = 0;
    send_logout(s, text, now_ns);
    disconnect(s, text, now_ns);
}

static void handle_sequence_reset(tw_fix_session *s, const tw_fix_msg *m, uint64_t seq,
                                  int gap_fill, int64_t now_ns)
{
    uint64_t nsn;
    int r = get_u64(m, 36, &nsn);
    if (r != 0) {
        if (gap_fill)
            s->next_in = seq + 1;
        send_reject(s, seq, 36, m->msg_type, m->msg_type_len,
                    r == -ENOENT ? REJ_REQUIRED_MISSING : REJ_DATA_FORMAT,
                    r == -ENOENT ? "NewSeqNo(36) missing" : "NewSeqNo(36) not a number", now_ns);
        return;
    }
    uint64_t floor_seq = gap_fill ? seq + 1 : s->next_in;
    if (nsn < floor_seq || (!gap_fill && nsn < s->next_in)) {
        if (gap_fill)
            s->next_in = seq + 1;
        send_reject(s, seq, 36, m->msg_type, m->msg_type_len, REJ_VALUE_INCORRECT,
                    "NewSeqNo(36) would move MsgSeqNum backwards", now_ns);
        return;
    }
    s->next_in = nsn;
}

/* Handles one framed message, decoded into s->dec (its field views are
 * what tw_fix_parse gives, its typed body what the application reads). */
static void on_message(tw_fix_session *s, const char *raw, size_t n, int64_t now_ns)
{
    /* The input loop stops feeding once the session is down. */
    TW_ASSERT(s->state != TW_FIX_DISCONNECTED);
    const tw_fix_msg *mp = &s->dec.msg;
    s->last_recv_ns = now_ns;
    s->test_req_sent_ns = 0; /* any message proves the peer is alive */
    s->st.msgs_in++;
    if (s->dec.parse_rc != 0) {
        malformed(s, raw, n, now_ns);
        return;
    }
    /* Every field is a view when it parsed (the decoder was given them). */
    TW_ASSERT(mp->count >= 4 && mp->fields == s->fields);
    const tw_fix_field *bs = tw_fix_get(mp, 8);
    if (!bs || bs->len + 2 + 1 != s->tmpl.begin_len ||
        memcmp(bs->val, s->tmpl.begin + 2, bs->len) != 0) {
        if (s->state == TW_FIX_ACTIVE)
            send_logout(s, "Incorrect BeginString", now_ns);
        disconnect(s, "Incorrect BeginString", now_ns);
        return;
    }
    uint64_t seq;
    if (get_u64(mp, 34, &seq) != 0 || seq == 0) {
        if (s->state == TW_FIX_ACTIVE)
            send_logout(s, "MsgSeqNum(34) missing or invalid", now_ns);
        disconnect(s, "MsgSeqNum(34) missing or invalid", now_ns);
        return;
    }
    int is_logon = mp->msg_type_len == 1 && mp->msg_type[0] == 'A';
    char t = mp->msg_type_len == 1 ? mp->msg_type[0] : 0;
    if (s->state == TW_FIX_CONNECTED || s->state == TW_FIX_LOGON_SENT) {
        if (!is_logon) {
            /* A Logout here is the peer refusing our Logon: say so. */
            disconnect(s, t == '5' ? "Logon refused: peer sent Logout"
                                   : "first message is not a Logon",
                       now_ns);
            return;
        }
    }
    /* CompIDs: the peer's Sender must be our Target and vice versa. */
    const tw_fix_field *snd = tw_fix_get(mp, 49), *tgt = tw_fix_get(mp, 56);
    if (!field_eq(snd, s->cfg.target_comp_id) || !field_eq(tgt, s->cfg.sender_comp_id)) {
        if (s->state == TW_FIX_ACTIVE || s->state == TW_FIX_LOGOUT_SENT) {
            if (seq == s->next_in)
                s->next_in++;
            send_reject(s, seq, snd && field_eq(tgt, s->cfg.sender_comp_id) ? 49 : 56,
                        mp->msg_type, mp->msg_type_len, REJ_COMPID, "CompID problem", now_ns);
            send_logout(s, "CompID problem", now_ns);
        }
        disconnect(s, "CompID problem", now_ns);
        return;
    }
    if (is_logon && (s->state == TW_FIX_CONNECTED || s->state == TW_FIX_LOGON_SENT)) {
        handle_logon(s, mp, seq, now_ns);
        return;
    }
    int possdup = is_possdup(mp);
    int gap_fill = t == '4' && field_eq(tw_fix_get(mp, 123), "Y");
    /* SequenceReset-Reset ignores MsgSeqNum altogether. */
    if (t == '4' && !gap_fill) {
        handle_sequence_reset(s, mp, seq, 0, now_ns);
        if (s->resend_until && s->next_in > s->resend_until)
            s->resend_until = 0;
        persist(s);
        return;
    }
    if (seq < s->next_in) {
        if (possdup) {
            s->st.possdup_ignored++;
            return;
        }
        too_low_logout(s, seq, now_ns);
        return;
    }
    if (seq > s->next_in) {
        /* Answer a ResendRequest even from beyond the gap, or both sides
         * wait on each other; honour a Logout too. */
        if (t == '2') {
            uint64_t b = 0, e = 0;
            if (get_u64(mp, 7, &b) == 0 && get_u64(mp, 16, &e) == 0)
                answer_resend(s, b, e, now_ns);
        }
        if (t == '5') {
            if (s->state != TW_FIX_LOGOUT_SENT)
                send_logout(s, NULL, now_ns);
            event(s, TW_FIX_EV_LOGOUT, "peer logged out");
            disconnect(s, "logout", now_ns);
            return;
        }
        if (s->resend_until == 0) {
            s->resend_until = seq;
            event(s, TW_FIX_EV_GAP, "MsgSeqNum too high");
            send_resend_request(s, s->next_in, now_ns);
        } else if (seq > s->resend_until) {
            s->resend_until = seq;
        }
        /* Dropped: the open-ended ResendRequest brings it again. */
        return;
    }
    /* In sequence.  Header checks that consume the seq with a Reject. */
    if (!valid_msg_type(mp)) {
        s->next_in++;
        send_reject(s, seq, 35, mp->msg_type, mp->msg_type_len, REJ_INVALID_MSGTYPE,
                    "Invalid MsgType", now_ns);
        persist(s);
        return;
    }
    const tw_fix_field *f52 = tw_fix_get(mp, 52);
    int64_t sending_ns = 0;
    int rej = -1;
    uint32_t rej_tag = 0;
    const char *rej_text = NULL;
    if (!f52) {
        rej = REJ_REQUIRED_MISSING, rej_tag = 52, rej_text = "SendingTime(52) missing";
    } else if (tw_fix_to_epoch_ns(f52->val, f52->len, &sending_ns) != 0) {
        rej = REJ_DATA_FORMAT, rej_tag = 52, rej_text = "SendingTime(52) not a UTCTimestamp";
    } else if (tw_fix_get(mp, 43) && !possdup && !field_eq(tw_fix_get(mp, 43), "N")) {
        rej = REJ_VALUE_INCORRECT, rej_tag = 43, rej_text = "PossDupFlag(43) not Y or N";
    } else if (possdup && t != '4') {
        const tw_fix_field *f122 = tw_fix_get(mp, 122);
        int64_t orig_ns;
        if (!f122)
            rej = REJ_REQUIRED_MISSING, rej_tag = 122, rej_text = "OrigSendingTime(122) missing";
        else if (tw_fix_to_epoch_ns(f122->val, f122->len, &orig_ns) != 0)
            rej = REJ_DATA_FORMAT, rej_tag = 122,
            rej_text = "OrigSendingTime(122) not a UTCTimestamp";
        else if (orig_ns > sending_ns)
            rej = REJ_SENDING_TIME, rej_tag = 122,
            rej_text = "OrigSendingTime(122) later than SendingTime(52)";
    }
    if (rej >= 0) {
        s->next_in++;
        send_reject(s, seq, rej_tag, mp->msg_type, mp->msg_type_len, rej, rej_text, now_ns);
        persist(s);
        return;
    }
    /* Only a message carrying exactly the number we expect gets here. */
    TW_ASSERT(seq == s->next_in);
    s->next_in = seq + 1;
    if (s->resend_until && s->next_in > s->resend_until)
        s->resend_until = 0; /* gap closed */
    int admin = mp->msg_type_len == 1 && strchr("012345A", t) != NULL;
    if (!admin) {
        s->st.app_in++;
        if (s->cfg.app.on_msg)
            s->cfg.app.on_msg(s->cfg.app.ctx, s, &s->dec, possdup);
        persist(s);
        return;
    }
    switch (t) {
    case '0':
        break;
    case '1': {
        const tw_fix_field *id = tw_fix_get(mp, 112);
        if (!id) {
            send_reject(s, seq, 112, mp->msg_type, 1, REJ_REQUIRED_MISSING,
                        "TestReqID(112) missing", now_ns);
            break;
        }
        /* The application may take the answer on itself (a lockstep
         * barrier: live.md) and send it with tw_fix_session_heartbeat. */
        if (s->cfg.app.on_test_request &&
            s->cfg.app.on_test_request(s->cfg.app.ctx, s, id->val, id->len))
            break;
        send_heartbeat(s, id->val, id->len, now_ns);
        break;
    }
    case '2': {
        uint64_t b = 0, e = 0;
        int rb = get_u64(mp, 7, &b), re = get_u64(mp, 16, &e);
        if (rb != 0 || re != 0) {
            send_reject(s, seq, rb != 0 ? 7 : 16, mp->msg_type, 1,
                        (rb == -ENOENT || re == -ENOENT) ? REJ_REQUIRED_MISSING : REJ_DATA_FORMAT,
                        "BeginSeqNo(7)/EndSeqNo(16) missing or invalid", now_ns);
            break;
        }
        answer_resend(s, b, e, now_ns);
        break;
    }
    case '3':
        s->st.rejects_rcvd++;
        event(s, TW_FIX_EV_REJECT_RCVD, "peer sent Reject");
        break;
    case '4':
        handle_sequence_reset(s, mp, seq, 1, now_ns);
        if (s->resend_until && s->next_in > s->resend_until)
            s->resend_until = 0;
        break;
    case '5':
        if (s->state != TW_FIX_LOGOUT_SENT)
            send_logout(s, NULL, now_ns);
        persist(s);
        event(s, TW_FIX_EV_LOGOUT, "logout");
        disconnect(s, "logout", now_ns);
        return;
    case 'A':
        /* A second Logon on a live session: reject, keep the session. */
        send_reject(s, seq, 35, "A", 1, REJ_OTHER, "Logon on an active session", now_ns);
        break;
    }
    persist(s);
}

size_t tw_fix_session_input(tw_fix_session *s, const char *buf, size_t len, int64_t now_ns)
{
    size_t used = 0;
    /* Bounded: every iteration consumes at least one byte or stops. */
    while (used < len && s->state != TW_FIX_DISCONNECTED) {
        size_t skip = 0;
        /* Frames exactly as tw_fix_frame does, and decodes in the same
         * pass: views for the session's checks, the typed body for the
         * application. */
        int r = tw_fix_decode(buf + used, len - used, &s->dec, &skip);
        if (r == TW_FIX_INCOMPLETE) {
            if (len - used < MAX_MSG)
                break;
            r = TW_FIX_GARBLED; /* longer than any message we accept */
            skip = 1;
        }
        if (r == TW_FIX_GARBLED || r <= 0) {
            if (skip == 0 || skip > len - used)
                skip = 1;
            s->st.garbled++;
            s->st.garbled_bytes += skip;
            used += skip;
            event(s, TW_FIX_EV_GARBLED, "garbled bytes dropped");
            continue;
        }
        on_message(s, buf + used, (size_t)r, now_ns);
        used += (size_t)r;
    }
    if (s->state == TW_FIX_DISCONNECTED)
        return len; /* nothing after a close means anything */
    return used;
}

void tw_fix_session_timer(tw_fix_session *s, int64_t now_ns)
{
    int64_t in_state = now_ns - s->state_since_ns;
    switch (s->state) {
    case TW_FIX_DISCONNECTED:
        return;
    case TW_FIX_CONNECTED:
    case TW_FIX_LOGON_SENT:
        if (in_state >= (int64_t)s->cfg.logon_timeout_ns)
            disconnect(s, "logon timeout", now_ns);
        return;
    case TW_FIX_LOGOUT_SENT:
        if (in_state >= (int64_t)s->cfg.logout_timeout_ns)
            disconnect(s, "logout timeout", now_ns);
        return;
    case TW_FIX_ACTIVE:
        break;
    }
    /* A ResendRequest the peer left unanswered for a heartbeat interval
     * (10 s without heartbeats) is repeated, so one lost request cannot
     * stall the session for good. */
    int64_t retry = s->hb_ns ? (int64_t)s->hb_ns : 10000000000LL;
    if (s->resend_until && now_ns - s->resend_sent_ns >= retry) {
        if (send_resend_request(s, s->next_in, now_ns) != 0)
            return;
    }
    if (s->hb_ns == 0)
        return;
    int64_t hb = (int64_t)s->hb_ns;
    if (s->test_req_sent_ns != 0 && now_ns - s->test_req_sent_ns >= hb) {
        disconnect(s, "HeartbeatTimeout: no answer to TestRequest", now_ns);
        return;
    }
    /* A TestRequest once the peer has been quiet a heartbeat interval plus
     * a 20% allowance for transmission time. */
    if (s->test_req_sent_ns == 0 && now_ns - s->last_recv_ns >= hb + hb / 5) {
        char id[24] = "TEST";
        size_t k = 4 + tw_fix_fmt_u64(id + 4, ++s->test_req_id);
        tw_fix_wbuf *w = admin_begin(s, "1", now_ns);
        tw_fix_put_str(w, 112, id, k);
        s->st.test_requests_sent++;
        s->test_req_sent_ns = now_ns;
        if (admin_send(s, now_ns) != 0)
            return;
    }
    if (now_ns - s->last_sent_ns >= hb)
        send_heartbeat(s, NULL, 0, now_ns);
}
