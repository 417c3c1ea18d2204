/* What the venue says, decoded (live.md, "The venue protocol"):
 *
 *   X entries (279=0 269=2 55 278 [270])  -> BAR (no 270: NaN, a gap bar);
 *                                            PossDup bars already seen dropped
 *   TestRequest 112=bar-<i>                -> BARRIER (held by the session hook;
 *                                            the strategy's ack -> Heartbeat)
 *   ExecutionReport 150=F / 8 / 4          -> FILL / REJECT / CANCELED
 *                                            (PossDup ExecIDs seen: dropped)
 *   OrderCancelReject (9)                  -> CANCEL_REJECT
 *   TradingSessionStatus 340=3             -> SESSION CLOSED
 *   Logon                                  -> SESSION UP (and the subscription)
 *
 * These are the FIX session's application hooks (gw.c sets them up). */
#include <math.h>
#include <string.h>

#include "tickwire/decimal.h"
#include "tickwire/fix.h"
#include "trade/gw_internal.h"

static uint32_t sym_find(const tw__gw *g, const char *p, size_t n)
{
    uint32_t h = (uint32_t)tw_fnv1a64(TW_FNV1A64_INIT, p, n) & g->hash_mask;
    for (uint32_t k = 0; k <= g->hash_mask; k++, h = (h + 1) & g->hash_mask) {
        uint32_t v = g->hash[h];
        if (v == 0)
            return UINT32_MAX;
        const char *s = g->cfg->strategy_instruments[g->sym_instr[v - 1]].symbol;
        if (strlen(s) == n && memcmp(s, p, n) == 0)
            return v - 1;
    }
    return UINT32_MAX;
}

static int parse_i64(const tw_fix_field *f, int64_t *out)
{
    return f ? tw_fix_to_i64(f->val, f->len, out) : -1;
}

static tw_ev *ev_init(tw__gw *g, tw_ev *ev, uint8_t type)
{
    memset(ev, 0, sizeof(*ev));
    ev->type = type;
    ev->tsc_rx = g->cur_tsc_rx;
    ev->tsc_tcp = g->cur_tsc_tcp;
    ev->tsc_parse = tw_tsc_read();
    return ev;
}

/* 1 if seen before; else remembers it and returns 0. */
static int exec_seen(tw__gw *g, const char *p, size_t n)
{
    uint64_t h = tw_fnv1a64(TW_FNV1A64_INIT, p, n) | 1u;
    const uint32_t mask = TW__GW_EXEC_IDS - 1;
    for (int gen = 0; gen < 2; gen++) {
        const uint64_t *t = g->exec.ids[gen];
        for (uint32_t k = 0, i = (uint32_t)h & mask; k < TW__GW_EXEC_IDS; k++, i = (i + 1) & mask) {
            if (t[i] == 0)
                break;
            if (t[i] == h)
                return 1;
        }
    }
    if (g->exec.n[g->exec.cur] >= TW__GW_EXEC_IDS / 2) {
        g->exec.cur ^= 1;
        memset(g->exec.ids[g->exec.cur], 0, TW__GW_EXEC_IDS * sizeof(uint64_t));
        g->exec.n[g->exec.cur] = 0;
    }
    uint64_t *t = g->exec.ids[g->exec.cur];
    uint32_t i = (uint32_t)h & mask;
    while (t[i] != 0)
        i = (i + 1) & mask;
    t[i] = h;
    g->exec.n[g->exec.cur]++;
    return 0;
}

/* The order id a ClOrdID of ours names, or -1 (not ours: logged, counted). */
static int order_of(tw__gw *g, const tw_fix_field *f, uint64_t *id)
{
    char kind;
    uint64_t run;
    if (!f || tw_trade_clordid_parse(f->val, f->len, &kind, &run, id) != 0) {
        g->st.bad_app_msgs++;
        tw__gw_log(g, "an execution for a ClOrdID that is not ours: '%.*s'", f ? (int)f->len : 0,
                   f ? f->val : "");
        return -1;
    }
    if (run != (g->e->run_id & TW_TRADE_RUN_ID_MASK)) {
        g->st.foreign_execs++;
        tw__gw_log(g, "an execution of another run's order %.*s: ignored", (int)f->len, f->val);
        return -1;
    }
    return 0;
}

static const tw__recent_close *close_at(const tw__gw *g, uint32_t local, int64_t bar)
{
    const tw__recent_close *c =
        &g->f.closes[(size_t)local * TW__GW_CLOSES_WIN + ((uint64_t)bar & (TW__GW_CLOSES_WIN - 1))];
    return c->bar == bar ? c : NULL;
}

/* Which bar's close a fill of a signal order (decided on bar b) got: on
 * time (the close of b, or of the last priced bar before a gap bar b), a
 * later bar (paced runs: the price of latency), or none we kept. */
static void classify_fill(tw__gw *g, uint32_t local, uint64_t b, double px)
{
    int64_t last = g->f.last_bar[local];
    if ((int64_t)b > last || last - (int64_t)b >= (int64_t)TW__GW_CLOSES_WIN - 1) {
        g->st.unmatched_fills++;
        return;
    }
    for (int64_t j = (int64_t)b; j >= 0 && j > last - (int64_t)TW__GW_CLOSES_WIN + 1; j--) {
        const tw__recent_close *c = close_at(g, local, j);
        if (!c)
            break;
        if (isnan(c->px))
            continue;
        if (memcmp(&c->px, &px, sizeof(px)) == 0)
            return; /* on time */
        break;
    }
    for (int64_t j = (int64_t)b + 1; j <= last; j++) {
        const tw__recent_close *c = close_at(g, local, j);
        if (c && !isnan(c->px) && memcmp(&c->px, &px, sizeof(px)) == 0) {
            g->st.late_fills++;
            g->st.late_fill_bars += (uint64_t)(j - (int64_t)b);
            return;
        }
    }
    g->st.unmatched_fills++;
}

static void forward_bar(tw__gw *g, uint32_t local, uint64_t bar, double close, int possdup);

static void on_bar_entry(tw__gw *g, const tw_fix_field *sym, const tw_fix_field *idx,
                         const tw_fix_field *px, int possdup)
{
    uint64_t bar;
    uint32_t local;
    if (!sym || !idx || tw_parse_u64(idx->val, idx->len, &bar) != 0 ||
        (local = sym_find(g, sym->val, sym->len)) == UINT32_MAX) {
        g->st.bad_app_msgs++;
        tw__gw_log(g, "an X entry without a known 55 or a numeric 278: ignored");
        return;
    }
    double close = NAN;
    if (px && tw_decimal_to_double(px->val, px->len, &close) != 0) {
        g->st.bad_app_msgs++;
        tw__gw_log(g, "X entry %.*s bar %llu: 270='%.*s' is not a FIX float: ignored",
                   (int)sym->len, sym->val, (unsigned long long)bar, (int)px->len, px->val);
        return;
    }
    forward_bar(g, local, bar, close, possdup);
}

static void forward_bar(tw__gw *g, uint32_t local, uint64_t bar, double close, int possdup)
{
    if (possdup && (int64_t)bar <= g->f.last_bar[local]) {
        g->st.possdup_bars_dropped++;
        return;
    }
    if (tw__gw_stopping(g)) {
        g->st.bars_after_stop++;
        return;
    }
    if ((int64_t)bar > g->f.last_bar[local])
        g->f.last_bar[local] = (int64_t)bar;
    tw__gwfold_remember_close(&g->f, local, bar, close);
    g->st.bars++;
    g->st.gap_bars += isnan(close);
    tw_ev ev;
    ev_init(g, &ev, TW_EV_BAR);
    ev.instrument = g->sym_instr[local];
    ev.u.bar.index = bar;
    ev.u.bar.close = close;
    tw__gw_push(g, &ev);
}

/* The one-pass decoder's entries (prices already float64, NaN when 270
 * is absent). */
static void on_md_entries(tw__gw *g, const tw_fix_decoded *d, int possdup)
{
    for (uint32_t k = 0; k < d->u.md.n_entries; k++) {
        const tw_fix_md_entry *en = &d->entries[k];
        if (en->update_action != '0' || en->entry_type != '2')
            continue; /* not a New Trade entry: not a bar */
        uint64_t bar;
        uint32_t local;
        if (tw_parse_u64(en->entry_id.p, en->entry_id.len, &bar) != 0 ||
            (local = sym_find(g, en->symbol.p, en->symbol.len)) == UINT32_MAX) {
            g->st.bad_app_msgs++;
            tw__gw_log(g, "an X entry without a known 55 or a numeric 278: ignored");
            continue;
        }
        forward_bar(g, local, bar, en->px_f64, possdup);
    }
}

static void on_md_incremental(tw__gw *g, const tw_fix_msg *m, int possdup)
{
    const tw_fix_field *sym = NULL, *idx = NULL, *px = NULL;
    int in_entry = 0, trade = 0;
    for (uint32_t i = 0; i < m->count; i++) {
        const tw_fix_field *f = &m->fields[i];
        if (f->tag == 279) {
            if (in_entry && trade)
                on_bar_entry(g, sym, idx, px, possdup);
            in_entry = 1;
            trade = 0;
            sym = idx = px = NULL;
            if (f->len != 1 || f->val[0] != '0')
                in_entry = 0; /* not a New entry: not a bar */
            continue;
        }
        if (!in_entry)
            continue;
        switch (f->tag) {
        case 269: trade = f->len == 1 && f->val[0] == '2'; break;
        case 55: sym = f; break;
        case 278: idx = f; break;
        case 270: px = f; break;
        default: break;
        }
    }
    if (in_entry && trade)
        on_bar_entry(g, sym, idx, px, possdup);
}

static void on_exec_report(tw__gw *g, const tw_fix_msg *m, int possdup)
{
    const tw_fix_field *et = tw_fix_get(m, 150), *xid = tw_fix_get(m, 17);
    if (!et || et->len != 1 || !xid) {
        g->st.bad_app_msgs++;
        tw__gw_log(g, "an ExecutionReport without 150 or 17: ignored");
        return;
    }
    char type = et->val[0];
    if (type != 'F' && type != '8' && type != '4')
        return; /* New (0) and the like: nothing the strategy needs */
    if (exec_seen(g, xid->val, xid->len)) {
        g->st.dup_execs++;
        return;
    }
    (void)possdup; /* any ExecID seen before is a duplicate, PossDup or not */
    uint64_t id;
    const tw_fix_field *ref = type == '4' ? tw_fix_get(m, 41) : NULL;
    if (order_of(g, ref ? ref : tw_fix_get(m, 11), &id) != 0)
        return;
    if (tw__gwfold_done_has(&g->f, id) && !tw__gwfold_open_find(&g->f, id)) {
        /* Resent after a crash: the journal has it applied already. */
        g->st.dup_execs++;
        return;
    }
    tw_ev ev;
    ev_init(g, &ev, TW_EV_FILL);
    if (type == 'F') {
        int64_t qty, leaves = -1;
        const tw_fix_field *lp = tw_fix_get(m, 31), *sd = tw_fix_get(m, 54);
        double px;
        if (parse_i64(tw_fix_get(m, 32), &qty) != 0 || !lp ||
            tw_decimal_to_double(lp->val, lp->len, &px) != 0 || !sd || sd->len != 1) {
            g->st.bad_app_msgs++;
            tw__gw_log(g, "a fill without a usable 32, 31 or 54: ignored");
            return;
        }
        (void)parse_i64(tw_fix_get(m, 151), &leaves);
        ev.side = sd->val[0] == '1' ? TW_SIDE_BUY : sd->val[0] == '2' ? TW_SIDE_SELL : 0;
        ev.u.fill.order_id = id;
        ev.u.fill.qty = qty;
        ev.u.fill.px = px;
        g->st.fills++;
        tw__open_order *o = tw__gwfold_open_find(&g->f, id);
        if (o && tw_order_id_kind(id) == TW_ORDER_SIGNAL &&
            g->f.local_of[o->instrument] != UINT32_MAX)
            classify_fill(g, g->f.local_of[o->instrument], tw_order_id_seq(id), px);
        if (leaves == 0)
            tw__gwfold_open_remove(&g->f, id);
    } else if (type == '8') {
        int64_t reason = -1;
        (void)parse_i64(tw_fix_get(m, 103), &reason);
        const tw_fix_field *tx = tw_fix_get(m, 58);
        ev.type = TW_EV_REJECT;
        ev.u.reject.order_id = id;
        ev.u.reject.reason = (int32_t)reason;
        ev.u.reject.text_id = tx ? (uint32_t)++g->text_ids : 0;
        g->st.rejects++;
        tw__gw_log(g, "order %016llx rejected: 103=%lld 58='%.*s' (text %u)",
                   (unsigned long long)id, (long long)reason, tx ? (int)tx->len : 0,
                   tx ? tx->val : "", ev.u.reject.text_id);
        tw__gwfold_open_remove(&g->f, id);
    } else {
        ev.type = TW_EV_CANCELED;
        ev.u.order.order_id = id;
        g->st.canceled++;
        tw__gwfold_open_remove(&g->f, id);
    }
    tw__gw_push(g, &ev);
}

static void on_cancel_reject(tw__gw *g, const tw_fix_msg *m)
{
    uint64_t id;
    if (order_of(g, tw_fix_get(m, 41), &id) != 0)
        return;
    tw_ev ev;
    ev_init(g, &ev, TW_EV_CANCEL_REJECT);
    ev.u.order.order_id = id;
    g->st.cancel_rejects++;
    tw__gw_push(g, &ev);
}

void tw__gw_on_msg(void *ctx, tw_fix_session *s, const tw_fix_decoded *d, int possdup)
{
    tw__gw *g = ctx;
    const tw_fix_msg *m = &d->msg;
    (void)s;
    if (m->msg_type_len == 1) {
        switch (m->msg_type[0]) {
        case 'X':
            /* The one-pass path; anything it does not take whole (more
             * entries than our array, a field it refuses) is read field by
             * field, entry by entry, and judged there. */
            if (d->rc == 0 && d->kind == TW_FIX_K_MD_INCREMENTAL)
                on_md_entries(g, d, possdup);
            else
                on_md_incremental(g, m, possdup);
            return;
        case '8': on_exec_report(g, m, possdup); return;
        case '9': on_cancel_reject(g, m); return;
        case 'h': {
            const tw_fix_field *st = tw_fix_get(m, 340);
            if (st && st->len == 1 && st->val[0] == '3' && (!possdup || !g->f.closed_seen)) {
                tw__gw_log(g, "the venue closed the trading session (340=3)");
                tw__gw_push_session(g, TW_SESSION_CLOSED);
            }
            return;
        }
        case 'Y': {
            const tw_fix_field *r = tw_fix_get(m, 281);
            g->st.md_rejects++;
            tw__gw_log(g, "the venue rejected a market data request (262=%.*s 281=%.*s)",
                       tw_fix_get(m, 262) ? (int)tw_fix_get(m, 262)->len : 0,
                       tw_fix_get(m, 262) ? tw_fix_get(m, 262)->val : "", r ? (int)r->len : 0,
                       r ? r->val : "");
            return;
        }
        case 'W':
            return; /* a snapshot of the last bar: the replay's bars come as X */
        default: break;
        }
    }
    g->st.bad_app_msgs++;
    tw__gw_log(g, "application message 35=%.*s not handled", (int)m->msg_type_len, m->msg_type);
}

/* The lockstep barrier: hold TestRequest bar-<i> (it travels to the
 * strategy behind the bar); answer any other at once. */
int tw__gw_on_test_request(void *ctx, tw_fix_session *s, const char *id, size_t len)
{
    tw__gw *g = ctx;
    (void)s;
    uint64_t i;
    if (len < 5 || memcmp(id, "bar-", 4) != 0 || tw_parse_u64(id + 4, len - 4, &i) != 0)
        return 0;
    if (tw__gw_stopping(g))
        return 1; /* no more bars: never answered */
    tw_ev ev;
    ev_init(g, &ev, TW_EV_BARRIER);
    ev.u.barrier.id = i;
    tw__gw_push(g, &ev);
    return 1;
}

void tw__gw_on_event(void *ctx, tw_fix_session *s, tw_fix_event ev, const char *text)
{
    tw__gw *g = ctx;
    (void)s;
    switch (ev) {
    case TW_FIX_EV_LOGON:
        if (!g->first_logon_ns)
            g->first_logon_ns = tw_clock_now_ns(); /* the recovery's figures */
        g->st.logons++;
        g->backoff_ms = g->sc->reconnect_min_ms;
        g->fs.cfg.reset_on_logon = 0; /* a reconnect resumes from the store */
        tw__gw_log(g, "logged on (next out %llu, next in %llu)", (unsigned long long)g->fs.next_out,
                   (unsigned long long)g->fs.next_in);
        tw__gw_subscribe(g);
        if (!g->f.up) {
            g->f.up = 1;
            tw__gw_push_session(g, TW_SESSION_UP);
        }
        break;
    case TW_FIX_EV_LOGOUT: tw__gw_log(g, "logged out (%s)", text ? text : ""); break;
    case TW_FIX_EV_DISCONNECT: tw__gw_log(g, "disconnected: %s", text ? text : ""); break;
    case TW_FIX_EV_REJECT_SENT: tw__gw_log(g, "sent a session Reject: %s", text ? text : ""); break;
    case TW_FIX_EV_REJECT_RCVD: tw__gw_log(g, "the venue sent a session Reject"); break;
    case TW_FIX_EV_GAP:
        tw__gw_log(g, "inbound gap: %s (ResendRequest sent)", text ? text : "");
        break;
    case TW_FIX_EV_GARBLED: break; /* counted by the session */
    case TW_FIX_EV_RESEND: tw__gw_log(g, "answered a ResendRequest"); break;
    }
}
