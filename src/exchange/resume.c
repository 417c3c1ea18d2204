/* Resuming a run from the stores: a venue created on a store directory
 * that holds sessions' earlier messages (a venue killed mid-run and started
 * again) reads each <CompID>.store back and goes on where the dead one
 * was.  What it sent says everything it needs:
 *   X      the bars sent (the last one is where the run is) and the
 *          symbols subscribed;
 *   1      the barrier's TestRequests (bar i+1 went out only after bar i's
 *          was answered: the last one is the barrier still open);
 *   h      Open and Closed sent;
 *   8      the ClOrdIDs answered, so a PossDup copy is not filled twice;
 *          each fill is handed to cfg.on_fill again (resumed), for a fills
 *          log the dead process may not have written it to.
 * The last bar's barrier is taken as not answered: the session asks again
 * once the trader is back, exactly as after a disconnect within one
 * process (conn.c's Logon event, tw_xchg_poll's reissue), and a trader
 * that had answered answers again.  Every bar and price is checked
 * against the dataset: a store from another run or another dataset, or
 * holding messages a venue never sends, is an error naming the file.
 * Called by tw_xchg_create. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "exchange/exchange_internal.h"
#include "tickwire/util.h"

/* Fields of one stored message: a body of TW_FIX_TX_BUF bytes has fewer. */
#define RS_FIELDS (TW_FIX_TX_BUF / 4)

typedef struct rs_ctx {
    tw_xchg *x;
    xs_sess *s;
    const char *path;
    int64_t last_bar;   /* the last bar this session was sent, -1: none */
    int64_t *sym_bar;   /* per symbol: its last bar sent to this session */
    uint32_t n_orders;  /* ClOrdIDs read back */
    tw_fix_msg m;
} rs_ctx;

/* Splits a stored body ("tag=value\x01"...) into r->m.  Returns 0 or
 * -TW_EFORMAT. */
static int split(rs_ctx *r, const char *body, size_t len)
{
    tw_fix_msg *m = &r->m;
    m->count = 0;
    size_t i = 0;
    while (i < len) {
        size_t soh = tw_fix_find_soh(body + i, len - i);
        if (soh >= len - i || m->count == m->cap)
            return -TW_EFORMAT;
        const char *eq = memchr(body + i, '=', soh);
        uint64_t tag;
        if (!eq || eq == body + i + soh - 1 ||
            tw_parse_u64(body + i, (size_t)(eq - body - i), &tag) != 0 || tag == 0 ||
            tag > UINT32_MAX)
            return -TW_EFORMAT;
        tw_fix_field *f = &m->fields[m->count++];
        f->tag = (uint32_t)tag;
        f->val = eq + 1;
        f->len = (uint32_t)(body + i + soh - eq - 1);
        i += soh + 1;
    }
    return 0;
}

/* The number after the last '-' of an OrderID or ExecID ("O<run>-<n>"). */
static uint64_t id_no(const tw_fix_field *f)
{
    uint64_t v = 0;
    const char *d = f ? memrchr(f->val, '-', f->len) : NULL;
    if (d && tw_parse_u64(d + 1, (size_t)(f->val + f->len - d - 1), &v) != 0)
        v = 0;
    return v;
}

/* The last priced bar of y at or before bar b, or -1. */
static int64_t priced_bar(const tw_xchg_symbol *y, int64_t b)
{
    if (b >= (int64_t)y->n_bars)
        b = (int64_t)y->n_bars - 1;
    while (b >= 0 && isnan(y->close[b]))
        b--;
    return b;
}

/* One X entry: symbol, bar index, price (NULL: a gap bar). */
static int take_entry(rs_ctx *r, const tw_fix_field *req, const tw_fix_field *sym,
                      const tw_fix_field *bar, const tw_fix_field *px, tw_error *err)
{
    tw_xchg *x = r->x;
    xs_sess *s = r->s;
    if (!sym || !bar)
        return tw__err(err, -TW_EFORMAT, "store %s: an X entry without Symbol(55) or "
                       "MDEntryID(278)", r->path);
    int si = tw__xchg_sym_index(x, sym->val, sym->len);
    uint64_t b;
    if (si < 0)
        return tw__err(err, -TW_EFORMAT, "store %s: from another run: it holds bars of "
                       "symbol '%.*s', which is not in this run's data", r->path,
                       (int)(sym->len < 64 ? sym->len : 64), sym->val);
    const tw_xchg_symbol *y = &x->cfg.symbols[si];
    if (tw_parse_u64(bar->val, bar->len, &b) != 0 || b >= y->n_bars || b >= x->n_bars)
        return tw__err(err, -TW_EFORMAT, "store %s: from another run: bar '%.*s' of %s is "
                       "not one of the run's %llu bars", r->path,
                       (int)(bar->len < 24 ? bar->len : 24), bar->val, y->name,
                       (unsigned long long)(y->n_bars < x->n_bars ? y->n_bars : x->n_bars));
    if ((int64_t)b <= r->sym_bar[si])
        return tw__err(err, -TW_EFORMAT, "store %s: bar %llu of %s sent after bar %lld",
                       r->path, (unsigned long long)b, y->name, (long long)r->sym_bar[si]);
    char want[TW_DECIMAL_MAX];
    size_t wl = isnan(y->close[b]) ? 0 : tw_double_to_decimal(y->close[b], want);
    if ((px == NULL) != (wl == 0) || (px && (px->len != wl || memcmp(px->val, want, wl))))
        return tw__err(err, -TW_EFORMAT, "store %s: from another dataset: bar %llu of %s "
                       "was sent at %.*s, the data has %s", r->path,
                       (unsigned long long)b, y->name, px ? (int)(px->len < 64 ? px->len : 64) : 3,
                       px ? px->val : "NaN", wl ? want : "NaN");
    r->sym_bar[si] = (int64_t)b;
    if ((int64_t)b > r->last_bar)
        r->last_bar = (int64_t)b;
    if (!s->sub[si]) {
        s->sub[si] = 1;
        s->n_sub++;
    }
    memcpy(s->md_req[si], req->val, req->len);
    s->md_req[si][req->len] = 0;
    return 0;
}

static int take_bars(rs_ctx *r, tw_error *err)
{
    const tw_fix_msg *m = &r->m;
    const tw_fix_field *req = tw_fix_get(m, 262);
    if (!req || req->len > XS_ID_MAX)
        return tw__err(err, -TW_EFORMAT, "store %s: an X without a usable MDReqID(262)",
                       r->path);
    /* Entries as md.c writes them: 279 269 55 278 [270] 271. */
    const tw_fix_field *sym = NULL, *bar = NULL, *px = NULL;
    for (uint32_t k = 0; k < m->count; k++) {
        const tw_fix_field *f = &m->fields[k];
        if (f->tag == 279)
            sym = bar = px = NULL;
        else if (f->tag == 55)
            sym = f;
        else if (f->tag == 278)
            bar = f;
        else if (f->tag == 270)
            px = f;
        else if (f->tag == 271 && take_entry(r, req, sym, bar, px, err) != 0)
            return -TW_EFORMAT;
    }
    return 0;
}

/* A fill read back, to cfg.on_fill: at the close of the last priced bar
 * sent for its symbol before it, which its 31 must be. */
static int refill(rs_ctx *r, const tw_fix_field *cl, tw_error *err)
{
    tw_xchg *x = r->x;
    const tw_fix_msg *m = &r->m;
    const tw_fix_field *sym = tw_fix_get(m, 55), *px = tw_fix_get(m, 31),
                       *qty = tw_fix_get(m, 32), *side = tw_fix_get(m, 54),
                       *tt = tw_fix_get(m, 60), *acct = tw_fix_get(m, 1),
                       *oid = tw_fix_get(m, 37), *eid = tw_fix_get(m, 17);
    int si = sym ? tw__xchg_sym_index(x, sym->val, sym->len) : -1;
    int64_t q, epoch_ns, bar = si >= 0 ? priced_bar(&x->cfg.symbols[si], r->sym_bar[si]) : -1;
    char want[TW_DECIMAL_MAX], oids[XS_ID_MAX + 1], eids[XS_ID_MAX + 1];
    if (bar < 0 || !px || !side || side->len != 1 || !oid || oid->len > XS_ID_MAX || !eid ||
        eid->len > XS_ID_MAX || !qty || tw_fix_to_qty(qty->val, qty->len, &q) != 0 || !tt ||
        tw_fix_to_epoch_ns(tt->val, tt->len, &epoch_ns) != 0)
        return tw__err(err, -TW_EFORMAT, "store %s: a fill of ClOrdID %.*s that does not "
                       "read back (its symbol, bar, price, side, qty or time)", r->path,
                       (int)cl->len, cl->val);
    const tw_xchg_symbol *y = &x->cfg.symbols[si];
    size_t wl = tw_double_to_decimal(y->close[bar], want);
    if (px->len != wl || memcmp(px->val, want, wl))
        return tw__err(err, -TW_EFORMAT, "store %s: from another dataset: ClOrdID %.*s was "
                       "filled at %.*s, bar %lld of %s closes at %s", r->path, (int)cl->len,
                       cl->val, (int)(px->len < 64 ? px->len : 64), px->val, (long long)bar,
                       y->name, want);
    if (!x->cfg.on_fill)
        return 0;
    memcpy(oids, oid->val, oid->len);
    oids[oid->len] = 0;
    memcpy(eids, eid->val, eid->len);
    eids[eid->len] = 0;
    tw_xchg_fill f = {
        .epoch_ns = epoch_ns,
        .session = r->s->comp_id,
        .symbol = x->sym_name[si],
        .cl_ord_id = {cl->val, cl->len, 0},
        .account = {acct ? acct->val : "", acct ? acct->len : 0, 0},
        .order_id = oids,
        .exec_id = eids,
        .price_text = want,
        .price = y->close[bar],
        .qty = q,
        .bar = (uint64_t)bar,
        .side = side->val[0],
        .resumed = 1,
    };
    x->cfg.on_fill(x->cfg.ctx, &f);
    return 0;
}

static int take_order(rs_ctx *r, tw_error *err)
{
    tw_xchg *x = r->x;
    xs_sess *s = r->s;
    const tw_fix_field *cl = tw_fix_get(&r->m, 11), *st = tw_fix_get(&r->m, 39);
    if (!cl || cl->len == 0 || cl->len > XS_ID_MAX || !st || st->len != 1)
        return tw__err(err, -TW_EFORMAT, "store %s: an ExecutionReport without a usable "
                       "ClOrdID(11) or OrdStatus(39)", r->path);
    uint64_t no = id_no(tw_fix_get(&r->m, 37)), eno = id_no(tw_fix_get(&r->m, 17));
    if (no > x->next_order_no)
        x->next_order_no = no;
    if (eno > x->next_exec_no)
        x->next_exec_no = eno;
    uint64_t h1, h2;
    xs_order *o = tw__xchg_order_find(s, cl->val, cl->len, &h1, &h2);
    /* Already there: a duplicate's reject.  Past the limit: the order was
     * refused without being recorded, as orders.c does. */
    if (o->h1 || s->n_orders >= x->cfg.max_orders)
        return 0;
    o->h1 = h1;
    o->h2 = h2;
    o->order_no = no;
    o->status = st->val[0] == '2' ? '2' : '8';
    s->n_orders++;
    r->n_orders++;
    return o->status == '2' ? refill(r, cl, err) : 0;
}

/* One stored message of r->s. */
static int take(rs_ctx *r, const tw_fix_stored *sm, tw_error *err)
{
    char t = sm->type_len == 1 ? sm->type[0] : 0;
    const tw_fix_field *f;
    switch (t) {
    case 'X':
        return take_bars(r, err);
    case '8':
        return take_order(r, err);
    case '1':
        f = tw_fix_get(&r->m, 112);
        if (!f)
            return tw__err(err, -TW_EFORMAT, "store %s: message %llu, a TestRequest without "
                           "TestReqID(112)", r->path, (unsigned long long)sm->seq);
        return 0;
    case 'h':
        f = tw_fix_get(&r->m, 340);
        if (f && f->len == 1 && f->val[0] == '2')
            r->s->opened = 1;
        else if (f && f->len == 1 && f->val[0] == '3')
            r->s->closed_sent = 1;
        return 0;
    case '9':
    case 'Y':
    case '3':
    case 'j':
        return 0;
    default:
        return tw__err(err, -TW_EFORMAT, "store %s: not a venue's store: message %llu is a "
                       "35=%.*s, which a venue never sends", r->path,
                       (unsigned long long)sm->seq, (int)sm->type_len, sm->type);
    }
}

/* Reads s's store back.  Returns 0 or -TW_EFORMAT / -errno with err set. */
static int read_back(rs_ctx *r, char *buf, size_t cap, tw_error *err)
{
    tw_fix_store *st = &r->s->store;
    for (uint32_t i = 0; i < st->n; i++) {
        tw_fix_stored sm;
        int rc = tw_fix_store_read(st, i, buf, cap, &sm);
        if (rc != 0)
            return tw__err(err, rc == -ENOBUFS ? -TW_EFORMAT : rc, "store %s: message %u "
                           "cannot be read back: %s", r->path, i, tw_strerror(rc));
        if (split(r, sm.body, sm.body_len) != 0)
            return tw__err(err, -TW_EFORMAT, "store %s: message %llu (35=%.*s) is not "
                           "tag=value fields", r->path, (unsigned long long)sm.seq,
                           (int)sm.type_len, sm.type);
        if ((rc = take(r, &sm, err)) != 0)
            return rc;
    }
    return 0;
}

static int is_store(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 6 && !strcmp(d->d_name + n - 6, ".store") &&
           tw__xchg_comp_id_ok(d->d_name, n - 6);
}

/* The run where the stores leave it: the last bar sent, the prices orders
 * fill at, the barrier open on the sessions that took that bar. */
static void place_run(tw_xchg *x, const int64_t *last_bar)
{
    int64_t cur = -1;
    for (unsigned k = 0; k < x->n_sess; k++)
        if (last_bar[k] > cur)
            cur = last_bar[k];
    if (cur < 0)
        return;
    x->cur_bar = cur;
    for (unsigned si = 0; si < x->n_sym; si++) {
        const tw_xchg_symbol *y = &x->cfg.symbols[si];
        int64_t b = priced_bar(y, cur);
        x->last_px_bar[si] = b;
        if (b >= 0)
            tw_double_to_decimal(y->close[b], x->px_text[si]);
    }
    for (unsigned k = 0; k < x->n_sess; k++) {
        xs_sess *s = x->sess[k];
        if (last_bar[k] < 0)
            continue;
        /* Bars go only to sessions that answered TestRequest "open". */
        s->opened = s->ready = 1;
        if (x->cfg.lockstep && last_bar[k] == cur && s->n_sub && !s->closed_sent) {
            s->part = 1;
            x->awaiting = 1;
        }
    }
}

int tw__xchg_resume(tw_xchg *x, tw_error *err)
{
    struct dirent **ents = NULL;
    int n = scandir(x->cfg.store_dir, &ents, is_store, alphasort);
    if (n < 0)
        return tw__err(err, -errno, "exchange: store directory %s: %s", x->cfg.store_dir,
                       strerror(errno));
    int rc = 0;
    char path[4096];
    char *buf = malloc(TW_FIX_TX_BUF + 64);
    tw_fix_field *fields = malloc(RS_FIELDS * sizeof(*fields));
    int64_t *sym_bar = malloc(x->n_sym * sizeof(*sym_bar));
    int64_t *last_bar = malloc((size_t)(n ? n : 1) * sizeof(*last_bar));
    if (!buf || !fields || !sym_bar || !last_bar)
        rc = tw__err(err, -ENOMEM, "exchange: out of memory");
    for (int i = 0; i < n && rc == 0; i++) {
        const char *name = ents[i]->d_name;
        size_t idl = strlen(name) - 6;
        snprintf(path, sizeof(path), "%s/%s", x->cfg.store_dir, name);
        if (x->n_sess >= x->cfg.max_sessions) {
            rc = tw__err(err, -E2BIG, "exchange: store %s: more stores than the %u sessions "
                         "allowed", path, x->cfg.max_sessions);
            break;
        }
        xs_sess *s = tw__xchg_sess_create(x, name, idl, err);
        if (!s) {
            rc = err && err->code ? err->code : -ENOMEM;
            break;
        }
        rs_ctx r = {.x = x, .s = s, .path = path, .last_bar = -1, .sym_bar = sym_bar,
                    .m = {.fields = fields, .cap = RS_FIELDS}};
        for (unsigned k = 0; k < x->n_sym; k++)
            sym_bar[k] = -1;
        rc = read_back(&r, buf, TW_FIX_TX_BUF + 64, err);
        last_bar[x->n_sess - 1] = r.last_bar;
        if (rc == 0 && s->store.n) {
            x->st.sessions_resumed++;
            tw__xchg_log(x, s, "resumed from %s: last bar sent %lld, %u order(s) answered",
                         path, (long long)r.last_bar, r.n_orders);
        }
    }
    if (rc == 0)
        place_run(x, last_bar);
    for (int i = 0; i < n; i++)
        free(ents[i]);
    free(ents);
    free(buf);
    free(fields);
    free(sym_bar);
    free(last_bar);
    return rc;
}
