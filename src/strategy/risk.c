/* Risk (live.md "Risk"; anchor: nautilus_trader's RiskEngine): the checks
 * every order passes before it is written, the order-rate buckets, the
 * loss limits and the trading state.  Every rejection is counted under its
 * rule and logged; nothing is dropped silently. */
#include <math.h>
#include <string.h>

#include "strategy/strategy_internal.h"

#define NS_PER_S INT64_C(1000000000)

void tw_risk_cfg_init(tw_risk_cfg *r)
{
    memset(r, 0, sizeof(*r));
    r->max_position = INT32_MAX;
    r->max_total_position = INT32_MAX;
    r->max_orders_per_s = 1000000000;
    r->max_session_orders_per_s = 1000000000;
    r->max_instance_loss = 1e300;
    r->max_total_loss = 1e300;
    r->on_loss = TW_TRADING_REDUCING;
    r->max_open_orders = 4;
}

const char *tw_risk_rule_name(tw_risk_rule rule)
{
    switch (rule) {
    case TW_RULE_HALTED: return "halted";
    case TW_RULE_REDUCING: return "reducing";
    case TW_RULE_OPEN_ORDERS: return "open_orders";
    case TW_RULE_MAX_POSITION: return "max_position";
    case TW_RULE_MAX_TOTAL_POSITION: return "max_total_position";
    case TW_RULE_RATE_SESSION: return "order_rate_session";
    case TW_RULE_RATE_TOTAL: return "order_rate_total";
    default: return "?";
    }
}

const char *tw_trading_state_name(tw_trading_state state)
{
    switch (state) {
    case TW_TRADING_ACTIVE: return "ACTIVE";
    case TW_TRADING_REDUCING: return "REDUCING";
    case TW_TRADING_HALTED: return "HALTED";
    default: return "?";
    }
}

void tw__slog(tw_strategy *s, const tw_strategy_log *rec)
{
    if (s->hooks.log)
        s->hooks.log(s->hooks.ctx, rec);
}

/* ---- token buckets ----------------------------------------------------------
 *
 * Capacity: one second of orders (rate x 1e9 nano-tokens), full at the
 * first order.  Refill: (now_ns - last_ns) x rate nano-tokens, exact in
 * int64 (elapsed is clamped to one second first: a second refills an empty
 * bucket, so nothing is lost, and rate <= 1e9 keeps the product < 2^63).
 * A now_ns a little earlier than the last (two net cores stamp their own
 * events) refills nothing and does not move last_ns back; one more than a
 * second earlier is a clock that started again (a journal replayed after a
 * reboot): last_ns moves to it, so the bucket refills from there on
 * instead of waiting for the new clock to pass the old one. */
static void refill(bucket *b, int64_t now_ns)
{
    const int64_t cap = b->rate * NS_PER_S;
    if (!b->started) {
        b->started = 1;
        b->tokens = cap;
        b->last_ns = now_ns;
        return;
    }
    if (now_ns <= b->last_ns) {
        if (now_ns < b->last_ns - NS_PER_S)
            b->last_ns = now_ns;
        return;
    }
    int64_t dt = now_ns - b->last_ns;
    if (dt > NS_PER_S)
        dt = NS_PER_S;
    b->tokens += dt * b->rate;
    if (b->tokens > cap)
        b->tokens = cap;
    b->last_ns = now_ns;
    TW_ASSERT(b->tokens >= 0 && b->tokens <= cap);
}

static int64_t iabs(int64_t v) { return v < 0 ? -v : v; }
static int sgn(int64_t v) { return (v > 0) - (v < 0); }

static void reject(tw_strategy *s, inst_state *it, uint32_t i, tw_risk_rule rule, int64_t qty,
                   uint64_t id, int64_t now_ns, tw_log_kind kind)
{
    s->c.rejected_by_rule[rule]++;
    it->risk_rejects++;
    tw_strategy_log rec = { .kind = kind, .rule = rule, .state = s->state, .instance = i,
                            .order_id = id, .qty = qty, .now_ns = now_ns,
                            .what = tw_risk_rule_name(rule) };
    tw__slog(s, &rec);
}

int tw__risk_check(tw_strategy *s, uint32_t i, int64_t *qty, uint64_t id, int64_t now_ns)
{
    inst_state *it = &s->inst[i];
    instr_state *in = &s->instr[it->instrument];
    const int64_t asked = *qty;
    TW_ASSERT(asked != 0);
    tw_trading_state st = s->state > it->state ? s->state : it->state;
    if (st == TW_TRADING_HALTED) {
        reject(s, it, i, TW_RULE_HALTED, asked, id, now_ns, TW_LOG_RISK_REJECT);
        return TW__RISK_STATE;
    }
    int64_t q = asked;
    const int64_t e = it->position + it->open_qty;
    if (st == TW_TRADING_REDUCING) {
        int64_t after = e + q;
        if (e == 0 || (sgn(after) == sgn(e) && iabs(after) >= iabs(e))) {
            reject(s, it, i, TW_RULE_REDUCING, asked, id, now_ns, TW_LOG_RISK_REJECT);
            return TW__RISK_STATE;
        }
        if (sgn(after) == -sgn(e)) {
            /* A flip: send its closing part only, and say so. */
            q = -e;
            reject(s, it, i, TW_RULE_REDUCING, asked, id, now_ns, TW_LOG_RISK_CUT);
        }
    }
    if (it->n_open >= s->max_open) {
        reject(s, it, i, TW_RULE_OPEN_ORDERS, q, id, now_ns, TW_LOG_RISK_REJECT);
        return TW__RISK_LIMIT;
    }
    const int64_t ie = in->exposure, ia = ie + q;
    if (iabs(ia) > s->risk.max_position && iabs(ia) > iabs(ie)) {
        reject(s, it, i, TW_RULE_MAX_POSITION, q, id, now_ns, TW_LOG_RISK_REJECT);
        return TW__RISK_LIMIT;
    }
    const int64_t te = s->total_exposure, ta = te - iabs(ie) + iabs(ia);
    if (ta > s->risk.max_total_position && ta > te) {
        reject(s, it, i, TW_RULE_MAX_TOTAL_POSITION, q, id, now_ns, TW_LOG_RISK_REJECT);
        return TW__RISK_LIMIT;
    }
    bucket *sb = &s->sess[in->session].rate, *tb = &s->total_rate;
    refill(sb, now_ns);
    refill(tb, now_ns);
    if (sb->tokens < NS_PER_S) {
        reject(s, it, i, TW_RULE_RATE_SESSION, q, id, now_ns, TW_LOG_RISK_REJECT);
        return TW__RISK_RATE;
    }
    if (tb->tokens < NS_PER_S) {
        reject(s, it, i, TW_RULE_RATE_TOTAL, q, id, now_ns, TW_LOG_RISK_REJECT);
        return TW__RISK_RATE;
    }
    sb->tokens -= NS_PER_S;
    tb->tokens -= NS_PER_S;
    *qty = q;
    return 0;
}

void tw__risk_set_state(tw_strategy *s, tw_trading_state st, int64_t now_ns, const char *why)
{
    if (s->state == st)
        return;
    s->state = st;
    tw_strategy_log rec = { .kind = TW_LOG_STATE, .state = st, .instance = UINT32_MAX,
                            .now_ns = now_ns, .what = why };
    tw__slog(s, &rec);
}

void tw__risk_after_booking(tw_strategy *s, uint32_t i, int64_t now_ns)
{
    inst_state *it = &s->inst[i];
    const tw_trading_state to = s->risk.on_loss;
    if (it->pnl < -s->risk.max_instance_loss && it->state < to) {
        it->state = to;
        s->c.breaches_instance++;
        tw_strategy_log rec = { .kind = TW_LOG_BREACH, .state = to, .instance = i,
                                .now_ns = now_ns, .what = "max_instance_loss" };
        tw__slog(s, &rec);
    }
    if (s->c.pnl < -s->risk.max_total_loss && s->state < to) {
        s->state = to;
        s->c.breaches_total++;
        tw_strategy_log rec = { .kind = TW_LOG_BREACH, .state = to, .instance = i,
                                .now_ns = now_ns, .what = "max_total_loss" };
        tw__slog(s, &rec);
    }
}
