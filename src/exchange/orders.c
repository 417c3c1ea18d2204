/* Orders: NewOrderSingle (D) filled at once, in full, at the close of the
 * last priced bar sent for its symbol; OrderCancelRequest (F) answered
 * with OrderCancelReject (9), since no order ever rests; every other
 * application message a BusinessMessageReject (live.md, "The venue
 * protocol", 4-5).
 *
 * What is wrong with an order decides how it is refused:
 *   a required tag missing (11 55 54 38 40 60)  Reject 35=3, 373=1, 371=tag
 *   Side not 1/2; a value too long              Reject 35=3, 373=5
 *   OrderQty / TransactTime not in format       Reject 35=3, 373=6
 *   OrderQty <= 0                               ExecutionReport 150=8, 103=13
 *   OrdType not 1 (market)                      ExecutionReport 150=8, 103=11
 *   unknown symbol                              ExecutionReport 150=8, 103=1
 *   duplicate ClOrdID on the session            ExecutionReport 150=8, 103=6
 *   no priced bar sent yet for the symbol       ExecutionReport 150=8, 103=2
 *   the session's order limit reached           ExecutionReport 150=8, 103=99
 *   the reject:N fault                          ExecutionReport 150=8, 103=99
 * Each is counted.  A PossDup copy of an order already answered is
 * ignored: its answer is in our store and the resend protocol carries it. */
#include <errno.h>
#include <string.h>

#include "exchange/exchange_internal.h"
#include "tickwire/util.h"

#define REJ_REQUIRED 1
#define REJ_VALUE 5
#define REJ_FORMAT 6

/* ---- the ClOrdID table --------------------------------------------------- */

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void hash2(const char *p, size_t n, uint64_t *h1, uint64_t *h2)
{
    /* Two FNV-1a streams with different bases, each finished by a
     * splitmix round: a false duplicate needs both 64-bit values to
     * collide. */
    uint64_t a = tw_fnv1a64(TW_FNV1A64_INIT, p, n), b = 0x84222325cbf29ce4ull ^ n;
    for (size_t i = 0; i < n; i++) {
        b = (b ^ (unsigned char)p[i]) * TW_FNV1A64_PRIME;
        b ^= b >> 29;
    }
    *h1 = mix(a) | 1; /* never 0: 0 marks a free slot */
    *h2 = mix(b + 0x9e3779b97f4a7c15ull);
}

xs_order *tw__xchg_order_find(xs_sess *s, const char *id, size_t len, uint64_t *h1,
                              uint64_t *h2)
{
    hash2(id, len, h1, h2);
    uint32_t mask = s->order_cap - 1;
    /* Bounded: the table is at most half full, so a free slot is near. */
    for (uint32_t k = 0, i = (uint32_t)*h1 & mask; k < s->order_cap; k++, i = (i + 1) & mask) {
        xs_order *o = &s->orders[i];
        if (o->h1 == 0 || (o->h1 == *h1 && o->h2 == *h2))
            return o;
    }
    TW_VERIFY(0); /* n_orders <= order_cap / 2 keeps a free slot */
    return NULL;
}

/* ---- answers ------------------------------------------------------------- */

typedef struct order_in {
    const tw_fix_field *cl, *sym, *acct;
    char side;
    int64_t qty;
} order_in;

static size_t fmt_id(char *out, char letter, const char *run, uint64_t n)
{
    size_t k = 0, rl = strlen(run);
    out[k++] = letter;
    memcpy(out + k, run, rl);
    k += rl;
    out[k++] = '-';
    k += tw_fix_fmt_u64(out + k, n);
    out[k] = 0;
    return k;
}

/* Starts an ExecutionReport: 37, 11, 1 (echoed), 17, 150, 39, 55, 54, 38,
 * with a fresh ExecID (eid gets it).  NULL when the session cannot send. */
static tw_fix_wbuf *er_begin(tw_xchg *x, xs_sess *s, const order_in *o, uint64_t order_no,
                             char exec_type, char ord_status, char *oid, char *eid,
                             int64_t now_ns)
{
    tw_fix_wbuf *w = tw__xchg_begin(x, s, "8", now_ns);
    if (!w)
        return NULL;
    fmt_id(oid, 'O', x->run_hex, order_no);
    fmt_id(eid, 'E', x->run_hex, ++x->next_exec_no);
    tw_fix_put_cstr(w, 37, oid);
    tw_fix_put_str(w, 11, o->cl->val, o->cl->len);
    if (o->acct)
        tw_fix_put_str(w, 1, o->acct->val, o->acct->len);
    tw_fix_put_cstr(w, 17, eid);
    tw_fix_put_char(w, 150, exec_type);
    tw_fix_put_char(w, 39, ord_status);
    tw_fix_put_str(w, 55, o->sym->val, o->sym->len);
    tw_fix_put_char(w, 54, o->side);
    tw_fix_put_i64(w, 38, o->qty);
    return w;
}

/* ExecutionReport 150=8 / 39=8. */
static void reject_order(tw_xchg *x, xs_sess *s, const order_in *o, uint64_t order_no,
                         int reason, const char *text, int64_t now_ns)
{
    x->st.order_rejects++;
    tw__xchg_log(x, s, "order %.*s rejected (103=%d): %s", (int)(o->cl->len < 64 ? o->cl->len : 64),
                 o->cl->val, reason, text);
    char oid[48], eid[48];
    tw_fix_wbuf *w = er_begin(x, s, o, order_no, '8', '8', oid, eid, now_ns);
    if (!w)
        return;
    tw_fix_put_u64(w, 151, 0);
    tw_fix_put_u64(w, 14, 0);
    tw_fix_put_char(w, 6, '0');
    tw_fix_put_u64(w, 103, (uint64_t)reason);
    tw_fix_put_cstr(w, 58, text);
    tw_fix_put_ts(w, 60, tw_xchg_epoch_ns(x, now_ns), x->cfg.ts_digits);
    tw__xchg_send(x, s, now_ns);
}

/* ExecutionReport 150=F / 39=2 at the close of bar x->last_px_bar[si]. */
static void fill_order(tw_xchg *x, xs_sess *s, const order_in *o, unsigned si,
                       uint64_t order_no, int64_t now_ns)
{
    int64_t bar = x->last_px_bar[si];
    TW_ASSERT(bar >= 0 && bar <= x->cur_bar);
    const char *px = x->px_text[si];
    char oid[48], eid[48];
    int64_t epoch = tw_xchg_epoch_ns(x, now_ns);
    tw_fix_wbuf *w = er_begin(x, s, o, order_no, 'F', '2', oid, eid, now_ns);
    if (!w)
        return;
    tw_fix_put_i64(w, 32, o->qty);
    tw_fix_put_cstr(w, 31, px);
    tw_fix_put_u64(w, 151, 0);
    tw_fix_put_i64(w, 14, o->qty);
    tw_fix_put_cstr(w, 6, px);
    tw_fix_put_ts(w, 60, epoch, x->cfg.ts_digits);
    if (tw__xchg_send(x, s, now_ns) != 0)
        return;
    x->st.fills++;
    if (x->cfg.on_fill) {
        tw_xchg_fill f = {
            .epoch_ns = epoch,
            .session = s->comp_id,
            .symbol = x->sym_name[si],
            .cl_ord_id = {o->cl->val, o->cl->len, 0},
            .account = {o->acct ? o->acct->val : "", o->acct ? o->acct->len : 0, 0},
            .order_id = oid,
            .exec_id = eid,
            .price_text = px,
            .price = x->cfg.symbols[si].close[bar],
            .qty = o->qty,
            .bar = (uint64_t)bar,
            .side = o->side,
        };
        x->cfg.on_fill(x->cfg.ctx, &f);
    }
}

static int text_ok(const tw_fix_field *f)
{
    return tw_text_ok(f->val, f->len, XS_ID_MAX, TW_TEXT_SPACE);
}

void tw__xchg_on_order(tw_xchg *x, xs_sess *s, const tw_fix_msg *m, int possdup, int64_t now_ns)
{
    static const uint32_t required[] = {11, 55, 54, 38, 40, 60};
    const tw_fix_field *f[6];
    for (unsigned k = 0; k < 6; k++) {
        f[k] = tw_fix_get(m, required[k]);
        if (!f[k]) {
            static const char *const what[] = {
                "ClOrdID(11) missing", "Symbol(55) missing", "Side(54) missing",
                "OrderQty(38) missing", "OrdType(40) missing", "TransactTime(60) missing"};
            x->st.orders++;
            tw__xchg_session_reject(x, s, m, required[k], REJ_REQUIRED, what[k], now_ns);
            return;
        }
    }
    order_in o = {.cl = f[0], .sym = f[1], .acct = tw_fix_get(m, 1)};
    const char *bad = NULL;
    uint32_t bad_tag = 0;
    int reason = REJ_VALUE;
    int64_t qty = 0, tt;
    if (!text_ok(o.cl))
        bad = "ClOrdID(11) longer than 64 or not printable", bad_tag = 11;
    else if (!text_ok(o.sym))
        bad = "Symbol(55) longer than 64 or not printable", bad_tag = 55;
    else if (o.acct && !text_ok(o.acct))
        bad = "Account(1) longer than 64 or not printable", bad_tag = 1;
    else if (f[2]->len != 1 || (f[2]->val[0] != '1' && f[2]->val[0] != '2'))
        bad = "Side(54) must be 1 (Buy) or 2 (Sell)", bad_tag = 54;
    else if (tw_fix_to_qty(f[3]->val, f[3]->len, &qty) != 0)
        bad = "OrderQty(38) is not a whole number", bad_tag = 38, reason = REJ_FORMAT;
    else if (tw_fix_to_epoch_ns(f[5]->val, f[5]->len, &tt) != 0)
        bad = "TransactTime(60) is not a UTCTimestamp", bad_tag = 60, reason = REJ_FORMAT;
    uint64_t h1, h2;
    xs_order *slot = bad ? NULL : tw__xchg_order_find(s, o.cl->val, o.cl->len, &h1, &h2);
    if (slot && slot->h1 && possdup) {
        x->st.possdup_ignored++;
        return;
    }
    x->st.orders++;
    if (bad) {
        tw__xchg_session_reject(x, s, m, bad_tag, reason, bad, now_ns);
        return;
    }
    o.side = f[2]->val[0];
    o.qty = qty;
    if (slot->h1) {
        x->st.dup_cl_ord_id++;
        reject_order(x, s, &o, slot->order_no, 6, "duplicate ClOrdID", now_ns);
        return;
    }
    uint64_t order_no = ++x->next_order_no;
    if (s->n_orders >= x->cfg.max_orders) {
        char text[96];
        snprintf(text, sizeof(text), "order limit of %u for this session reached",
                 x->cfg.max_orders);
        x->st.order_limit++;
        reject_order(x, s, &o, order_no, 99, text, now_ns);
        return;
    }
    /* Recorded whatever the answer, so a second copy is a duplicate. */
    TW_ASSERT(s->n_orders < s->order_cap / 2);
    slot->h1 = h1;
    slot->h2 = h2;
    slot->order_no = order_no;
    slot->status = '8';
    s->n_orders++;
    int si = tw__xchg_sym_index(x, o.sym->val, o.sym->len);
    if (qty <= 0) {
        reject_order(x, s, &o, order_no, 13, "OrderQty(38) must be positive", now_ns);
        return;
    }
    if (f[4]->len != 1 || f[4]->val[0] != '1') {
        reject_order(x, s, &o, order_no, 11, "only market orders (OrdType 1) are supported",
                     now_ns);
        return;
    }
    if (si < 0) {
        reject_order(x, s, &o, order_no, 1, "unknown symbol", now_ns);
        return;
    }
    if (x->last_px_bar[si] < 0) {
        x->st.before_first_price++;
        reject_order(x, s, &o, order_no, 2, "no priced bar sent yet for this symbol", now_ns);
        return;
    }
    x->valid_orders++;
    for (unsigned k = 0; k < x->cfg.n_faults; k++) {
        const tw_xchg_fault *ft = &x->cfg.faults[k];
        if (ft->kind == TW_XCHG_FAULT_REJECT && x->valid_orders % ft->every == 0) {
            char text[64];
            snprintf(text, sizeof(text), "injected reject (fault reject:%llu)",
                     (unsigned long long)ft->every);
            x->st.faults_reject++;
            reject_order(x, s, &o, order_no, 99, text, now_ns);
            return;
        }
    }
    slot->status = '2';
    fill_order(x, s, &o, (unsigned)si, order_no, now_ns);
}

void tw__xchg_on_cancel(tw_xchg *x, xs_sess *s, const tw_fix_msg *m, int64_t now_ns)
{
    const tw_fix_field *orig = tw_fix_get(m, 41), *cl = tw_fix_get(m, 11);
    if (!orig || !cl) {
        tw__xchg_session_reject(x, s, m, orig ? 11 : 41, REJ_REQUIRED,
                                orig ? "ClOrdID(11) missing" : "OrigClOrdID(41) missing", now_ns);
        return;
    }
    if (!text_ok(orig) || !text_ok(cl)) {
        tw__xchg_session_reject(x, s, m, text_ok(orig) ? 11 : 41, REJ_VALUE,
                                "ClOrdID longer than 64 or not printable", now_ns);
        return;
    }
    uint64_t h1, h2;
    xs_order *o = tw__xchg_order_find(s, orig->val, orig->len, &h1, &h2);
    x->st.cancels++;
    tw_fix_wbuf *w = tw__xchg_begin(x, s, "9", now_ns);
    if (!w)
        return;
    char oid[48];
    if (o->h1)
        fmt_id(oid, 'O', x->run_hex, o->order_no);
    else
        memcpy(oid, "NONE", 5);
    tw_fix_put_cstr(w, 37, oid);
    tw_fix_put_str(w, 11, cl->val, cl->len);
    tw_fix_put_str(w, 41, orig->val, orig->len);
    tw_fix_put_char(w, 39, o->h1 ? o->status : '8');
    tw_fix_put_char(w, 434, '1');
    tw_fix_put_char(w, 102, o->h1 ? '0' : '1');
    tw_fix_put_cstr(w, 58, o->h1 ? (o->status == '2' ? "too late to cancel: order filled"
                                                     : "too late to cancel: order rejected")
                                 : "unknown order");
    tw__xchg_send(x, s, now_ns);
}
