/* The application router: each application message of a logged-on
 * session to market data (V) or orders (D, F); a BusinessMessageReject for
 * any other type.  Called by the connection; calls md.c, orders.c and the
 * output. */
#include <errno.h>
#include <string.h>

#include "exchange/exchange_internal.h"
#include "tickwire/util.h"

void tw__xchg_on_app(tw_xchg *x, xs_sess *s, const tw_fix_msg *m, int possdup, int64_t now_ns)
{
    char t = m->msg_type_len == 1 ? m->msg_type[0] : 0;
    switch (t) {
    case 'V':
        tw__xchg_on_md_request(x, s, m, now_ns);
        return;
    case 'D':
        tw__xchg_on_order(x, s, m, possdup, now_ns);
        return;
    case 'F':
        tw__xchg_on_cancel(x, s, m, now_ns);
        return;
    default:
        break;
    }
    x->st.business_rejects++;
    tw__xchg_log(x, s, "BusinessMessageReject: 35=%.*s not supported",
                 (int)(m->msg_type_len < 8 ? m->msg_type_len : 8), m->msg_type);
    tw_fix_wbuf *w = tw__xchg_begin(x, s, "j", now_ns);
    if (!w)
        return;
    const tw_fix_field *seq = tw_fix_get(m, 34);
    if (seq)
        tw_fix_put_str(w, 45, seq->val, seq->len);
    tw_fix_put_str(w, 372, m->msg_type, m->msg_type_len);
    tw_fix_put_char(w, 380, '3');
    tw_fix_put_cstr(w, 58, "unsupported message type");
    tw__xchg_send(x, s, now_ns);
}

