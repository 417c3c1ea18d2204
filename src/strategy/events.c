/* tw_strategy_on_event(): bars through the kernel into orders, fills into
 * positions and PnL, the kill switch, barriers and sessions.  Everything
 * here is a function of the strategy's state and the event: no clock, no
 * I/O, no allocation. */
#include <math.h>
#include <string.h>

#include "strategy/strategy_internal.h"

/* The intents of one event. */
typedef struct emitter {
    tw_out *out;
    size_t n, cap;
    const tw_ev *ev;
} emitter;

static tw_out *emit(emitter *em, uint8_t type, uint16_t session)
{
    TW_VERIFY(em->n < em->cap);
    tw_out *o = &em->out[em->n++];
    memset(o, 0, sizeof(*o));
    o->type = type;
    o->session = session;
    o->tsc_rx = em->ev->tsc_rx;
    o->tsc_tcp = em->ev->tsc_tcp;
    o->tsc_parse = em->ev->tsc_parse;
    return o;
}

static int sgn(int64_t v) { return (v > 0) - (v < 0); }
static int64_t iabs(int64_t v) { return v < 0 ? -v : v; }

static void log_bad(tw_strategy *s, const tw_ev *ev, uint32_t instance, uint64_t id,
                    const char *what)
{
    tw_strategy_log rec = { .kind = TW_LOG_BAD_EVENT, .state = s->state, .instance = instance,
                            .order_id = id, .now_ns = ev->now_ns, .what = what };
    tw__slog(s, &rec);
}

static void bad(tw_strategy *s, const tw_ev *ev, uint32_t instance, uint64_t id, const char *what)
{
    s->c.bad_events++;
    log_bad(s, ev, instance, id, what);
}

/* Our own bookkeeping, checked in debug builds after every change: the
 * open orders sum to open_qty, their slots are live, at most one flatten
 * order is open. */
static void check_inst(const tw_strategy *s, uint32_t i)
{
#ifdef TW_DEBUG
    const inst_state *it = &s->inst[i];
    const open_order *o = &s->open[(size_t)i * s->open_slots];
    int64_t sum = 0;
    int flatten = 0;
    TW_VERIFY(it->n_open <= s->open_slots);
    for (uint32_t j = 0; j < it->n_open; j++) {
        TW_VERIFY(o[j].remaining != 0 && tw_order_id_instance(o[j].id) == i);
        sum += o[j].remaining;
        flatten += o[j].kind == TW_ORDER_FLATTEN;
    }
    TW_VERIFY(sum == it->open_qty && flatten <= 1);
    TW_VERIFY(iabs(it->position) <= INT32_MAX);
#else
    (void)s;
    (void)i;
#endif
}

/* Instance i's position + open orders moved by d: keep the instrument's
 * and the total exposure in step. */
static void expose(tw_strategy *s, uint32_t i, int64_t d)
{
    instr_state *in = &s->instr[s->inst[i].instrument];
    int64_t before = in->exposure;
    in->exposure += d;
    s->total_exposure += iabs(in->exposure) - iabs(before);
    TW_ASSERT(s->total_exposure >= 0);
}

static open_order *slots(tw_strategy *s, uint32_t i)
{
    return &s->open[(size_t)i * s->open_slots];
}

static int find_open(tw_strategy *s, uint32_t i, uint64_t id)
{
    open_order *o = slots(s, i);
    for (uint32_t j = 0; j < s->inst[i].n_open; j++)
        if (o[j].id == id)
            return (int)j;
    return -1;
}

/* Drops slot j, keeping the others in the order they were sent (the kill
 * switch cancels oldest first). */
static void drop_open(tw_strategy *s, uint32_t i, int j)
{
    inst_state *it = &s->inst[i];
    open_order *o = slots(s, i);
    TW_ASSERT(j >= 0 && (uint32_t)j < it->n_open);
    memmove(&o[j], &o[j + 1], (it->n_open - (uint32_t)j - 1) * sizeof(*o));
    it->n_open--;
    memset(&o[it->n_open], 0, sizeof(*o));
}

/* An order ends unfilled (rejected, canceled): its open quantity leaves
 * the instance's exposure.  Returns what was open. */
static int64_t close_open(tw_strategy *s, uint32_t i, int j)
{
    const int64_t rem = slots(s, i)[j].remaining;
    drop_open(s, i, j);
    s->inst[i].open_qty -= rem;
    expose(s, i, -rem);
    check_inst(s, i);
    return rem;
}

/* Writes an order of q signed units for instance i; signal orders pass the
 * risk checks first (which may cut q), the kill switch's flatten orders do
 * not. */
static void send_order(tw_strategy *s, emitter *em, uint32_t i, int64_t q, unsigned kind,
                       uint64_t seq, uint64_t bar)
{
    inst_state *it = &s->inst[i];
    const uint64_t id = tw_order_id(kind, i, seq);
    if (iabs(q) > INT32_MAX) {
        /* Only fills far beyond any order (overfills) get a position this
         * large: a flatten order sends what one order can carry (the next
         * fill sends the rest), a signal order is refused. */
        if (kind != TW_ORDER_FLATTEN) {
            bad(s, em->ev, i, id, "order quantity beyond 2^31 - 1 (after overfills)");
            return;
        }
        q = q > 0 ? INT32_MAX : -INT32_MAX;
    }
    if (kind == TW_ORDER_SIGNAL && tw__risk_check(s, i, &q, id, em->ev->now_ns) < 0)
        return;
    TW_VERIFY(it->n_open < s->open_slots && q != 0 && iabs(q) <= INT32_MAX);
    open_order *o = &slots(s, i)[it->n_open++];
    o->id = id;
    o->bar = bar;
    o->remaining = q;
    o->kind = (uint8_t)kind;
    o->cancel_sent = 0;
    it->open_qty += q;
    expose(s, i, q);
    it->orders++;
    check_inst(s, i);
    const instr_state *in = &s->instr[it->instrument];
    tw_out *out = emit(em, TW_OUT_ORDER, (uint16_t)in->session);
    out->side = q > 0 ? TW_SIDE_BUY : TW_SIDE_SELL;
    out->instance = i;
    out->instrument = it->instrument;
    out->qty = (int32_t)iabs(q);
    out->order_id = id;
    out->ref = bar;
}

/* In kill mode: an instance with a position and no flatten order open
 * gets one (after a fill that the kill switch's cancel did not prevent). */
static void reflatten(tw_strategy *s, emitter *em, uint32_t i)
{
    inst_state *it = &s->inst[i];
    if (!s->kill_mode || it->position == 0)
        return;
    const open_order *o = slots(s, i);
    for (uint32_t j = 0; j < it->n_open; j++)
        if (o[j].kind == TW_ORDER_FLATTEN)
            return;
    const instr_state *in = &s->instr[it->instrument];
    uint64_t bar = in->last_bar < 0 ? 0 : (uint64_t)in->last_bar;
    s->c.flatten_orders++;
    send_order(s, em, i, -it->position, TW_ORDER_FLATTEN, s->c.flatten_orders - 1, bar);
}

/* ---- bars ---------------------------------------------------------------------- */

static void on_bar(tw_strategy *s, emitter *em, const tw_ev *ev)
{
    if (ev->instrument >= s->n_instruments) {
        bad(s, ev, UINT32_MAX, 0, "bar of an unknown instrument");
        return;
    }
    instr_state *in = &s->instr[ev->instrument];
    if (ev->session != in->session) {
        bad(s, ev, UINT32_MAX, 0, "bar from a session that does not trade the instrument");
        return;
    }
    const uint64_t idx = ev->u.bar.index;
    if (idx > TW_ORDER_SEQ_MASK) {
        bad(s, ev, UINT32_MAX, 0, "bar index beyond 2^40");
        return;
    }
    if (in->last_bar >= 0 && idx <= (uint64_t)in->last_bar) {
        s->c.dup_bars++;
        return;
    }
    s->c.skipped_bars += idx - (uint64_t)(in->last_bar + 1);
    in->last_bar = (int64_t)idx;
    double close = ev->u.bar.close;
    if (isnan(close)) {
        s->c.gap_bars++;
    } else if (!(close > 0.0) || isinf(close)) {
        /* The kernel takes NaN or finite > 0 only: a bad price is a gap. */
        s->c.bad_prices++;
        s->c.gap_bars++;
        log_bad(s, ev, UINT32_MAX, 0, "bar close <= 0 or infinite: fed as a gap");
        close = NAN;
    }
    s->c.bars++;
    if (!in->n_inst)
        return;
    size_t n_changed = in->n_sig ? tw__sig_update(in->sig, close, s->changed) : 0;
    /* Then the instances with a kernel of their own, in instance order:
     * the host's books (tw_kbook_bar) give each its position. */
    for (uint32_t j = in->n_sig; j < in->n_inst; j++) {
        inst_state *it = &s->inst[s->by_instr[in->first + j]];
        const int32_t before = it->book.pos;
        if (tw_kbook_bar(&it->book, it->kdef, it->kstate, close, (int64_t)idx, s->fee, NULL,
                         NULL) != before)
            s->changed[n_changed++] = j;
    }
    for (size_t c = 0; c < n_changed; c++) {
        const uint32_t j = s->changed[c];
        const uint32_t i = s->by_instr[in->first + j];
        inst_state *it = &s->inst[i];
        const int p = j < in->n_sig ? tw__sig_pos(in->sig, j) : it->book.pos;
        TW_ASSERT(p != it->signal);
        it->signal = p;
        /* From what the fills say (plus orders still open): a rejected
         * order leaves the instance where its fills put it. */
        const int64_t q = (int64_t)p - (it->position + it->open_qty);
        if (q != 0)
            send_order(s, em, i, q, TW_ORDER_SIGNAL, idx, idx);
    }
}

/* ---- executions ------------------------------------------------------------------ */

/* The kernel's stop-and-reverse arithmetic on fills: entry = LastPx of the
 * opening fill; a fill that closes or reverses the position books
 * r = (px / entry - 1) * 100 (long) or (1 - px / entry) * 100 (short),
 * pnl = pnl + (r - fee), one trade.  Quantities do not weigh r: an
 * instance trades units, as the kernel does. */
static void book(tw_strategy *s, uint32_t i, int64_t before, double px, uint64_t bar, int64_t now_ns)
{
    inst_state *it = &s->inst[i];
    const int64_t after = it->position;
    if (before == 0) {
        if (after != 0) {
            it->entry_px = px;
            it->entry_bar = bar;
        }
        return;
    }
    if (after != 0 && sgn(after) == sgn(before))
        return; /* added to or reduced the same side: the entry stands */
    double r = before > 0 ? (px / it->entry_px - 1.0) * 100.0
                          : (1.0 - px / it->entry_px) * 100.0;
    it->pnl = it->pnl + (r - s->fee);
    it->trades += 1;
    s->c.pnl = s->c.pnl + (r - s->fee);
    if (s->hooks.trade) {
        tw_strategy_trade t = { .instance = i, .side = sgn(before), .entry_bar = it->entry_bar,
                       .entry_px = it->entry_px, .exit_bar = bar, .exit_px = px, .r = r };
        s->hooks.trade(s->hooks.ctx, &t);
    }
    if (after != 0) {
        it->entry_px = px;
        it->entry_bar = bar;
    } else {
        it->entry_px = 0.0;
        it->entry_bar = 0;
    }
    tw__risk_after_booking(s, i, now_ns);
}

/* The order an execution-type event names: its instance and slot, or -1
 * (and *i = UINT32_MAX when the id names no instance). */
static int lookup(tw_strategy *s, uint64_t id, uint32_t *i)
{
    uint32_t k = tw_order_id_instance(id);
    if (k >= s->n_instances || tw_order_id_kind(id) > TW_ORDER_FLATTEN) {
        *i = UINT32_MAX;
        return -1;
    }
    *i = k;
    return find_open(s, k, id);
}

static void on_fill(tw_strategy *s, emitter *em, const tw_ev *ev)
{
    const uint64_t id = ev->u.fill.order_id;
    uint32_t i;
    int j = lookup(s, id, &i);
    if (j < 0) {
        bad(s, ev, i, id, "fill of an order that is not open");
        return;
    }
    const int64_t qty = ev->u.fill.qty;
    const double px = ev->u.fill.px;
    if (qty < 1 || qty > INT32_MAX) {
        bad(s, ev, i, id, "fill quantity outside [1, 2^31 - 1]");
        return;
    }
    if (!(px > 0.0) || isinf(px)) {
        bad(s, ev, i, id, "fill price <= 0, NaN or infinite");
        return;
    }
    if (ev->side != TW_SIDE_BUY && ev->side != TW_SIDE_SELL) {
        bad(s, ev, i, id, "fill side neither buy nor sell");
        return;
    }
    inst_state *it = &s->inst[i];
    open_order *o = &slots(s, i)[j];
    const int64_t q = ev->side == TW_SIDE_BUY ? qty : -qty;
    if (sgn(q) != sgn(o->remaining)) {
        bad(s, ev, i, id, "fill on the other side of the order");
        return;
    }
    if (iabs(it->position + q) > INT32_MAX) {
        bad(s, ev, i, id, "fill would take the position beyond 2^31 - 1 units");
        return;
    }
    int64_t removed = o->remaining;
    if (iabs(q) < iabs(removed))
        removed = q;
    else if (iabs(q) > iabs(removed))
        s->c.overfills++;
    o->remaining -= removed;
    const uint64_t bar = o->bar;
    if (o->remaining == 0)
        drop_open(s, i, j);
    const int64_t before = it->position;
    it->open_qty -= removed;
    it->position += q;
    expose(s, i, q - removed);
    it->fills++;
    s->c.fills++;
    check_inst(s, i);
    book(s, i, before, px, bar, ev->now_ns);
    reflatten(s, em, i);
}

static void on_reject(tw_strategy *s, const tw_ev *ev)
{
    const uint64_t id = ev->u.reject.order_id;
    uint32_t i;
    int j = lookup(s, id, &i);
    if (j < 0) {
        bad(s, ev, i, id, "reject of an order that is not open");
        return;
    }
    const int64_t rem = close_open(s, i, j);
    s->inst[i].rejects++;
    s->c.rejects++;
    /* A rejected flatten order is not sent again by itself (a venue that
     * rejects everything would get a storm): the next fill or KILL does. */
    tw_strategy_log rec = { .kind = TW_LOG_VENUE_REJECT, .state = s->state, .instance = i,
                            .order_id = id, .qty = rem, .reason = ev->u.reject.reason,
                            .now_ns = ev->now_ns, .what = "rejected by the venue" };
    tw__slog(s, &rec);
}

static void on_canceled(tw_strategy *s, const tw_ev *ev)
{
    const uint64_t id = ev->u.order.order_id;
    uint32_t i;
    int j = lookup(s, id, &i);
    if (j < 0) {
        bad(s, ev, i, id, "cancel of an order that is not open");
        return;
    }
    close_open(s, i, j);
    s->c.canceled++;
}

static void on_cancel_reject(tw_strategy *s, const tw_ev *ev)
{
    /* Usually "too late": the order filled (or is filling).  Nothing to
     * undo; an order still open may be canceled again by the next KILL. */
    uint32_t i;
    int j = lookup(s, ev->u.order.order_id, &i);
    s->c.cancel_rejects++;
    if (j >= 0)
        slots(s, i)[j].cancel_sent = 0;
}

/* ---- kill switch, operator, sessions, barrier ------------------------------------ */

static void on_kill(tw_strategy *s, emitter *em, const tw_ev *ev)
{
    s->c.kills++;
    s->kill_mode = 1;
    tw__risk_set_state(s, TW_TRADING_HALTED, ev->now_ns, "kill switch");
    for (uint32_t i = 0; i < s->n_instances; i++) {
        inst_state *it = &s->inst[i];
        open_order *o = slots(s, i);
        for (uint32_t j = 0; j < it->n_open; j++) {
            if (o[j].kind != TW_ORDER_SIGNAL || o[j].cancel_sent)
                continue;
            o[j].cancel_sent = 1;
            s->c.cancels++;
            tw_out *out = emit(em, TW_OUT_CANCEL, (uint16_t)s->instr[it->instrument].session);
            out->side = o[j].remaining > 0 ? TW_SIDE_BUY : TW_SIDE_SELL;
            out->instance = i;
            out->instrument = it->instrument;
            out->qty = (int32_t)iabs(o[j].remaining);
            out->order_id = o[j].id;
            out->ref = o[j].bar;
        }
        reflatten(s, em, i);
    }
}

static void on_operator(tw_strategy *s, const tw_ev *ev)
{
    const uint32_t st = ev->u.oper.state;
    if (st > TW_TRADING_HALTED) {
        bad(s, ev, UINT32_MAX, 0, "operator state unknown");
        return;
    }
    if (st == TW_TRADING_ACTIVE) {
        /* The operator takes over: the kill switch and every instance's
         * own loss state are cleared (the limits trip again if crossed). */
        s->kill_mode = 0;
        for (uint32_t i = 0; i < s->n_instances; i++)
            s->inst[i].state = TW_TRADING_ACTIVE;
    }
    tw__risk_set_state(s, (tw_trading_state)st, ev->now_ns, "operator");
}

static void on_session(tw_strategy *s, emitter *em, const tw_ev *ev)
{
    if (ev->session >= s->n_sessions) {
        bad(s, ev, UINT32_MAX, 0, "session event of an unknown session");
        return;
    }
    sess_state *se = &s->sess[ev->session];
    const uint32_t st = ev->u.session.state;
    if (st > TW_SESSION_CLOSED) {
        bad(s, ev, UINT32_MAX, 0, "session state unknown");
        return;
    }
    if (st == se->state)
        return;
    /* The connection going down after the venue closed the session (its
     * Logout follows the close) changes nothing: still closed.  Only a
     * Logon (UP) is the venue opening again. */
    if (se->state == TW_SESSION_CLOSED && st == TW_SESSION_DOWN)
        return;
    if (se->state == TW_SESSION_CLOSED) {
        /* The venue opened again (a new run on the same connection). */
        s->n_closed--;
        se->logged_out = 0;
    }
    se->state = st;
    if (st != TW_SESSION_CLOSED)
        return;
    s->n_closed++;
    se->logged_out = 1;
    emit(em, TW_OUT_LOGOUT, ev->session);
    if (s->n_closed == s->n_sessions && !s->finished) {
        s->finished = 1;
        emit(em, TW_OUT_FINISHED, TW_OUT_SESSION_NONE);
    }
}

static void on_barrier(tw_strategy *s, emitter *em, const tw_ev *ev)
{
    if (ev->session >= s->n_sessions) {
        bad(s, ev, UINT32_MAX, 0, "barrier of an unknown session");
        return;
    }
    s->c.barriers++;
    /* Every event before this one has been processed and its intents are
     * in out[] ahead of this one: the ack rides behind them. */
    tw_out *o = emit(em, TW_OUT_BARRIER_ACK, ev->session);
    o->ref = ev->u.barrier.id;
}

size_t tw_strategy_on_event(tw_strategy *s, const tw_ev *ev, tw_out *out, size_t cap)
{
    TW_VERIFY(cap >= s->max_out);
    emitter em = { out, 0, cap, ev };
    s->c.events++;
    switch (ev->type) {
    case TW_EV_BAR: on_bar(s, &em, ev); break;
    case TW_EV_FILL: on_fill(s, &em, ev); break;
    case TW_EV_REJECT: on_reject(s, ev); break;
    case TW_EV_CANCELED: on_canceled(s, ev); break;
    case TW_EV_CANCEL_REJECT: on_cancel_reject(s, ev); break;
    case TW_EV_BARRIER: on_barrier(s, &em, ev); break;
    case TW_EV_SESSION: on_session(s, &em, ev); break;
    case TW_EV_KILL: on_kill(s, &em, ev); break;
    case TW_EV_OPERATOR: on_operator(s, ev); break;
    default: bad(s, ev, UINT32_MAX, 0, "unknown event type"); break;
    }
    TW_ASSERT(em.n <= s->max_out);
    return em.n;
}
