/* Output: what every layer above sends or ends - the log line, a message
 * begun and sent through the session (a failure counted), Session Reject,
 * TradingSessionStatus, and a connection dropped from our side.  Calls
 * nothing of the venue's own. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "exchange/exchange_internal.h"
#include "tickwire/util.h"

int64_t tw_xchg_epoch_ns(const tw_xchg *x, int64_t now_ns)
{
    return now_ns + x->cfg.epoch_offset_ns;
}

void tw__xchg_log(tw_xchg *x, const xs_sess *s, const char *fmt, ...)
{
    if (!x->cfg.on_log)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->log_line, sizeof(x->log_line), fmt, ap);
    va_end(ap);
    x->cfg.on_log(x->cfg.ctx, s ? s->comp_id : "-", x->log_line);
}

int tw__xchg_send(tw_xchg *x, xs_sess *s, int64_t now_ns)
{
    int rc = tw_fix_session_send(&s->fs, now_ns);
    if (rc != 0) {
        x->st.send_errors++;
        tw__xchg_log(x, s, "send failed: %s", tw_strerror(rc));
    }
    return rc;
}

tw_fix_wbuf *tw__xchg_begin(tw_xchg *x, xs_sess *s, const char *type, int64_t now_ns)
{
    return tw_fix_session_begin(&s->fs, type, now_ns);
}

static uint64_t msg_seq(const tw_fix_msg *m)
{
    const tw_fix_field *f = tw_fix_get(m, 34);
    int64_t v = 0;
    if (!f || tw_fix_to_i64(f->val, f->len, &v) != 0 || v < 0)
        return 0;
    return (uint64_t)v;
}

void tw__xchg_session_reject(tw_xchg *x, xs_sess *s, const tw_fix_msg *m, uint32_t tag,
                             int reason, const char *text, int64_t now_ns)
{
    x->st.session_rejects++;
    tw__xchg_log(x, s, "Reject 35=%.*s: %s", (int)(m->msg_type_len < 8 ? m->msg_type_len : 8),
                 m->msg_type, text);
    tw_fix_wbuf *w = tw__xchg_begin(x, s, "3", now_ns);
    if (!w)
        return;
    tw_fix_put_u64(w, 45, msg_seq(m));
    if (tag)
        tw_fix_put_u64(w, 371, tag);
    tw_fix_put_str(w, 372, m->msg_type, m->msg_type_len);
    tw_fix_put_u64(w, 373, (uint64_t)reason);
    tw_fix_put_cstr(w, 58, text);
    tw__xchg_send(x, s, now_ns);
}

int tw__xchg_send_status(tw_xchg *x, xs_sess *s, char status, int64_t now_ns)
{
    tw_fix_wbuf *w = tw__xchg_begin(x, s, "h", now_ns);
    if (!w)
        return -ENOTCONN;
    tw_fix_put_cstr(w, 336, x->cfg.lockstep ? "REPLAY" : "PACED");
    tw_fix_put_char(w, 340, status);
    return tw__xchg_send(x, s, now_ns);
}

void tw__xchg_unbind(tw_xchg *x, xs_conn *c, int64_t now_ns)
{
    xs_sess *s = c->sess;
    if (!s)
        return;
    TW_ASSERT(s->conn == c);
    s->conn = NULL;
    c->sess = NULL;
    /* No close callback from here: the session has no connection now. */
    tw_fix_session_disconnected(&s->fs, now_ns);
}

void tw__xchg_drop_conn(tw_xchg *x, xs_conn *c, int64_t now_ns)
{
    if (c->state != CONN_PENDING && c->state != CONN_BOUND)
        return;
    tw__xchg_unbind(x, c, now_ns);
    c->state = CONN_CLOSED;
    c->io.close(c->io.ctx);
}

