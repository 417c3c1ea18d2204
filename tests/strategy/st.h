/* Helpers for the strategy core's tests: a strategy built from arrays, a
 * harness that feeds events and keeps what the hooks said, a lockstep
 * venue (fills every order at the close of the last priced bar of its
 * instrument, as live.md's venue does), and a trade-list reference built
 * from the scalar kernel's tw_wma() and kernel.md's loop. */
#ifndef TW_TESTS_STRATEGY_ST_H
#define TW_TESTS_STRATEGY_ST_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tickwire/strategy.h"
#include "tw_check.h"

/* Same double: the same bits (NaN never compares equal here). */
static inline int st_same(double a, double b) { return memcmp(&a, &b, sizeof(a)) == 0; }

/* ---- reference ---------------------------------------------------------------- */

typedef struct st_ref {
    int64_t trades;
    double pnl;
    int pos;      /* open at the end */
    size_t n, cap;
    tw_strategy_trade *list; /* instance unset */
} st_ref;

/* kernel.md's loop over tw_wma() series, with the trade log of kernel.md
 * "Trade log". */
static inline void st_reference(const double *close, size_t n, const int64_t *c, double fee,
                                st_ref *out)
{
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
    double *t = malloc(n * sizeof(double)), *hma = malloc(n * sizeof(double));
    double *hma3 = malloc(n * sizeof(double));
    tw_wma(close, n, c[TW_H_HALF], a);
    tw_wma(close, n, c[TW_H_FULL], b);
    for (size_t i = 0; i < n; i++)
        t[i] = 2.0 * a[i] - b[i];
    tw_wma(t, n, c[TW_H_SQRT], hma);
    tw_wma(close, n, c[TW_T_THIRD], a);
    tw_wma(close, n, c[TW_T_HALF], b);
    tw_wma(close, n, c[TW_T_FULL], hma3);
    for (size_t i = 0; i < n; i++)
        t[i] = (3.0 * a[i] - b[i]) - hma3[i];
    tw_wma(t, n, c[TW_T_FULL], hma3);
    memset(out, 0, sizeof(*out));
    double entry = 0.0;
    size_t entry_bar = 0;
    for (size_t i = 0; i < n; i++) {
        double v = hma3[i] - hma[i];
        if (isnan(v) || v == 0.0)
            continue;
        int s = v > 0.0 ? 1 : -1;
        if (out->pos == 0) {
            out->pos = s;
            entry = close[i];
            entry_bar = i;
            continue;
        }
        if (s != out->pos) {
            double r = out->pos == 1 ? (close[i] / entry - 1.0) * 100.0
                                     : (1.0 - close[i] / entry) * 100.0;
            out->pnl = out->pnl + (r - fee);
            out->trades += 1;
            if (out->n == out->cap) {
                out->cap = out->cap ? out->cap * 2 : 256;
                out->list = realloc(out->list, out->cap * sizeof(tw_strategy_trade));
            }
            tw_strategy_trade tr = { .side = out->pos, .entry_bar = entry_bar, .entry_px = entry,
                            .exit_bar = i, .exit_px = close[i], .r = r };
            out->list[out->n++] = tr;
            out->pos = s;
            entry = close[i];
            entry_bar = i;
        }
    }
    free(a);
    free(b);
    free(t);
    free(hma);
    free(hma3);
}

/* ---- harness ------------------------------------------------------------------- */

typedef struct st_harness {
    tw_strategy *s;
    void *mem;
    tw_out *out;
    size_t cap;
    /* the hooks */
    uint64_t log_by_kind[8];
    uint64_t log_by_rule[TW_RULE_COUNT];
    tw_strategy_log last_log;
    tw_strategy_trade *trades;
    size_t n_trades, cap_trades;
    int64_t now_ns;
} st_harness;

static inline void st_log_hook(void *ctx, const tw_strategy_log *rec)
{
    st_harness *h = ctx;
    h->log_by_kind[rec->kind & 7]++;
    if (rec->kind == TW_LOG_RISK_REJECT || rec->kind == TW_LOG_RISK_CUT)
        h->log_by_rule[rec->rule]++;
    h->last_log = *rec;
}

static inline void st_trade_hook(void *ctx, const tw_strategy_trade *t)
{
    st_harness *h = ctx;
    if (h->n_trades == h->cap_trades) {
        h->cap_trades = h->cap_trades ? h->cap_trades * 2 : 1024;
        h->trades = realloc(h->trades, h->cap_trades * sizeof(*t));
    }
    h->trades[h->n_trades++] = *t;
}

/* Builds a strategy over cfg (hooks set to the harness's). 0 or -1. */
static inline int st_open(st_harness *h, tw_strategy_cfg *cfg)
{
    memset(h, 0, sizeof(*h));
    cfg->hooks.log = st_log_hook;
    cfg->hooks.trade = st_trade_hook;
    cfg->hooks.ctx = h;
    size_t bytes = tw_strategy_memsize(cfg);
    if (!bytes)
        return -1;
    h->mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    tw_error err = { 0 };
    h->s = tw_strategy_init(h->mem, bytes, cfg, &err);
    if (!h->s) {
        fprintf(stderr, "init: %s\n", err.msg);
        free(h->mem);
        return -1;
    }
    h->cap = tw_strategy_max_out(h->s);
    h->out = malloc(h->cap * sizeof(tw_out));
    return 0;
}

static inline void st_close(st_harness *h)
{
    free(h->mem);
    free(h->out);
    free(h->trades);
    memset(h, 0, sizeof(*h));
}

static inline size_t st_event(st_harness *h, tw_ev *ev)
{
    if (!ev->now_ns)
        ev->now_ns = h->now_ns;
    return tw_strategy_on_event(h->s, ev, h->out, h->cap);
}

static inline size_t st_bar(st_harness *h, uint32_t instrument, uint16_t session, uint64_t i,
                            double close)
{
    tw_ev ev = { .type = TW_EV_BAR, .session = session, .instrument = instrument };
    ev.u.bar.index = i;
    ev.u.bar.close = close;
    ev.tsc_rx = 1000 + i;
    return st_event(h, &ev);
}

static inline size_t st_fill(st_harness *h, uint64_t id, int side, int64_t qty, double px)
{
    tw_ev ev = { .type = TW_EV_FILL, .side = (uint8_t)side };
    ev.u.fill.order_id = id;
    ev.u.fill.qty = qty;
    ev.u.fill.px = px;
    return st_event(h, &ev);
}

static inline size_t st_simple(st_harness *h, uint8_t type, uint16_t session, uint64_t arg)
{
    tw_ev ev = { .type = type, .session = session };
    if (type == TW_EV_REJECT) {
        ev.u.reject.order_id = arg;
        ev.u.reject.reason = 2;
    } else if (type == TW_EV_CANCELED || type == TW_EV_CANCEL_REJECT) {
        ev.u.order.order_id = arg;
    } else if (type == TW_EV_BARRIER) {
        ev.u.barrier.id = arg;
    } else if (type == TW_EV_SESSION) {
        ev.u.session.state = (uint32_t)arg;
    } else if (type == TW_EV_OPERATOR) {
        ev.u.oper.state = (uint32_t)arg;
    }
    return st_event(h, &ev);
}

/* Copies the intents of the last event (the next event overwrites them). */
static inline size_t st_take(st_harness *h, size_t n, tw_out *dst)
{
    memcpy(dst, h->out, n * sizeof(tw_out));
    return n;
}

/* A lockstep venue's fills of every ORDER in outs[0..n) at px[instrument]
 * (the close of the last priced bar it sent). */
static inline void st_fill_orders(st_harness *h, const tw_out *outs, size_t n, const double *px)
{
    for (size_t j = 0; j < n; j++)
        if (outs[j].type == TW_OUT_ORDER)
            st_fill(h, outs[j].order_id, outs[j].side, outs[j].qty, px[outs[j].instrument]);
}

/* A strategy config of n_instr instruments (instrument k on session
 * k % n_sessions), each with the same n_combos combos. */
typedef struct st_cfg {
    tw_strategy_cfg cfg;
    tw_instrument_cfg *instr;
    tw_instance_cfg *inst;
} st_cfg;

static inline void st_cfg_make(st_cfg *c, uint32_t n_sessions, uint32_t n_instr,
                               const int64_t *combos, uint32_t n_combos)
{
    memset(c, 0, sizeof(*c));
    c->instr = calloc(n_instr, sizeof(*c->instr));
    c->inst = calloc((size_t)n_instr * n_combos, sizeof(*c->inst));
    for (uint32_t k = 0; k < n_instr; k++) {
        snprintf(c->instr[k].symbol, TW_NAME_MAX, "SYM%u", k);
        c->instr[k].session = k % n_sessions;
        for (uint32_t j = 0; j < n_combos; j++) {
            tw_instance_cfg *ic = &c->inst[k * n_combos + j];
            snprintf(ic->name, TW_NAME_MAX, "s%u.%u", k, j);
            ic->instrument = k;
            memcpy(ic->combo, combos + (size_t)j * TW_COMBO_WINDOWS, sizeof(ic->combo));
        }
    }
    c->cfg.fee = TW_FEE_DEFAULT;
    c->cfg.n_sessions = n_sessions;
    c->cfg.n_instruments = n_instr;
    c->cfg.n_instances = n_instr * n_combos;
    c->cfg.instruments = c->instr;
    c->cfg.instances = c->inst;
    tw_risk_cfg_init(&c->cfg.risk);
}

static inline void st_cfg_free(st_cfg *c)
{
    free(c->instr);
    free(c->inst);
}

/* Every instance's books and the counters, bit for bit. */
static inline int st_same_books(const tw_strategy *a, const tw_strategy *b)
{
    int bad = 0;
    for (uint32_t i = 0; i < tw_strategy_n_instances(a); i++) {
        tw_instance_stats x, y;
        tw_strategy_instance(a, i, &x);
        tw_strategy_instance(b, i, &y);
        bad += x.position != y.position || x.open_qty != y.open_qty || x.signal != y.signal ||
               x.trades != y.trades || !st_same(x.pnl, y.pnl) ||
               x.signal_trades != y.signal_trades || !st_same(x.signal_pnl, y.signal_pnl) ||
               !st_same(x.entry_px, y.entry_px) || x.orders != y.orders || x.fills != y.fills ||
               x.rejects != y.rejects || x.risk_rejects != y.risk_rejects ||
               x.state != y.state || x.stopped != y.stopped;
    }
    tw_strategy_counters ca, cb;
    tw_strategy_counters_get(a, &ca);
    tw_strategy_counters_get(b, &cb);
    bad += memcmp(&ca, &cb, offsetof(tw_strategy_counters, pnl)) != 0 || !st_same(ca.pnl, cb.pnl) ||
           ca.state != cb.state;
    return bad == 0;
}

#endif
