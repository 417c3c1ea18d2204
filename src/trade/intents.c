/* The intents already sent (intents.h): an open-addressing hash of
 * identities, each with its counts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trade/intents.h"
#include "tickwire/common.h"

static uint32_t kind_of(const tw_out *o)
{
    uint32_t session = o->session;
    if (o->type == TW_OUT_ORDER || o->type == TW_OUT_CANCEL || o->type == TW_OUT_FINISHED)
        session = 0;
    return (uint32_t)o->type | session << 8;
}

static uint64_t id_of(const tw_out *o)
{
    if (o->type == TW_OUT_ORDER || o->type == TW_OUT_CANCEL)
        return o->order_id;
    if (o->type == TW_OUT_BARRIER_ACK)
        return o->ref;
    return 0;
}

static tw__intent_ent *slot(const tw__intents *s, uint32_t kind, uint64_t id)
{
    uint64_t h = (id ^ ((uint64_t)kind << 40)) * 0x9e3779b97f4a7c15ull;
    for (uint64_t i = h >> 20 & s->mask;; i = (i + 1) & s->mask) {
        tw__intent_ent *x = &s->t[i];
        if (x->kind == 0 || (x->kind == kind && x->id == id))
            return x;
    }
}

int tw__intents_init(tw__intents *s, uint64_t expect)
{
    uint64_t cap = 1024;
    while (cap < 2 * expect)
        cap <<= 1;
    s->t = calloc(cap, sizeof(tw__intent_ent));
    s->mask = cap - 1;
    s->n = 0;
    return s->t ? 0 : -ENOMEM;
}

void tw__intents_free(tw__intents *s)
{
    free(s->t);
    s->t = NULL;
    s->mask = s->n = 0;
}

/* The identity's entry, made if new (grows at half full). */
static tw__intent_ent *entry(tw__intents *s, uint32_t kind, uint64_t id)
{
    if (2 * (s->n + 1) > s->mask) {
        tw__intents g;
        if (tw__intents_init(&g, 2 * (s->mask + 1)) != 0)
            return NULL;
        for (uint64_t i = 0; i <= s->mask; i++)
            if (s->t[i].kind)
                *slot(&g, s->t[i].kind, s->t[i].id) = s->t[i];
        g.n = s->n;
        free(s->t);
        *s = g;
    }
    tw__intent_ent *x = slot(s, kind, id);
    if (x->kind == 0) {
        x->kind = kind;
        x->id = id;
        s->n++;
    }
    return x;
}

int tw__intents_add_out(tw__intents *s, const tw_out *o)
{
    tw__intent_ent *x = entry(s, kind_of(o), id_of(o));
    if (!x)
        return -ENOMEM;
    x->n_out++;
    return 0;
}

int tw__intents_add_records(tw__intents *s, const tw_journal_rec *v, uint64_t n,
                            uint64_t end_seq)
{
    for (uint64_t i = 0; i < n && v[i].seq < end_seq; i++) {
        if (tw_journal_rec_kind(&v[i]) != TW_JOURNAL_OUT)
            continue;
        tw_out o;
        memcpy(&o, v[i].payload, sizeof(o));
        int rc = tw__intents_add_out(s, &o);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int tw__intents_add_stored(tw__intents *s, char kind, uint64_t id)
{
    tw_out o;
    memset(&o, 0, sizeof(o));
    o.type = kind == 'T' ? TW_OUT_ORDER : TW_OUT_CANCEL;
    o.order_id = id;
    tw__intent_ent *x = entry(s, kind_of(&o), id);
    if (!x)
        return -ENOMEM;
    x->n_store++;
    return 0;
}

tw__intent_seen tw__intents_take(tw__intents *s, const tw_out *o)
{
    tw__intent_ent *x = slot(s, kind_of(o), id_of(o));
    if (x->kind == 0)
        return TW__INTENT_NEW;
    x->taken++;
    if (x->taken <= x->n_out)
        return TW__INTENT_SENT;
    if (x->taken <= x->n_store)
        return TW__INTENT_STORED;
    return TW__INTENT_NEW;
}

uint64_t tw__intents_left(const tw__intents *s, uint32_t types)
{
    uint64_t left = 0;
    for (uint64_t i = 0; i <= s->mask; i++) {
        const tw__intent_ent *x = &s->t[i];
        uint32_t type = x->kind & 0xff;
        if (x->kind && type < 32 && (types >> type & 1u) && x->n_out > x->taken)
            left += x->n_out - x->taken;
    }
    return left;
}

void tw__intents_settle(tw__intents *s, int (*before)(void *ctx, uint32_t type, uint64_t id),
                        void *ctx)
{
    for (uint64_t i = 0; i <= s->mask; i++) {
        tw__intent_ent *x = &s->t[i];
        uint32_t type = x->kind & 0xff;
        if (x->kind && (type == TW_OUT_ORDER || type == TW_OUT_CANCEL) && before(ctx, type, x->id)) {
            uint32_t all = x->n_out > x->n_store ? x->n_out : x->n_store;
            if (x->taken < all)
                x->taken = all;
        }
    }
}

/* Decided before the snapshot s (its state as loaded): an order whose
 * decision bar its instrument had passed (a flatten: one of the flatten
 * orders counted), and a cancel of such an order unless the order was
 * still open at s without one written. */
typedef struct before_ctx {
    const tw_strategy *s;
} before_ctx;

static int open_at(const tw_strategy *s, uint64_t id, int *cancel_sent)
{
    tw_strategy_open_order o[TW_STRATEGY_MAX_OPEN + 1];
    uint32_t i = tw_order_id_instance(id);
    size_t n = tw_strategy_open_orders(s, i, o, TW_ARRAY_SIZE(o));
    for (size_t j = 0; j < n && j < TW_ARRAY_SIZE(o); j++)
        if (o[j].id == id) {
            *cancel_sent = o[j].cancel_sent;
            return 1;
        }
    return 0;
}

static int decided_before(void *ctx, uint32_t type, uint64_t id)
{
    const tw_strategy *s = ((before_ctx *)ctx)->s;
    uint32_t i = tw_order_id_instance(id);
    if (i >= tw_strategy_n_instances(s))
        return 0;
    int order_before;
    if (tw_order_id_kind(id) == TW_ORDER_FLATTEN) {
        order_before = tw_order_id_seq(id) < tw_strategy_flatten_orders(s);
    } else {
        tw_instance_stats st;
        tw_strategy_instance(s, i, &st);
        int64_t last = tw_strategy_last_bar(s, st.instrument);
        order_before = last >= 0 && tw_order_id_seq(id) <= (uint64_t)last;
    }
    if (type == TW_OUT_ORDER || !order_before)
        return order_before;
    int cancel_sent = 0;
    return !open_at(s, id, &cancel_sent) || cancel_sent;
}

int tw__intents_of_state(const tw_strategy *s, int (*fn)(void *ctx, const tw_out *o), void *ctx)
{
    for (uint32_t i = 0; i < tw_strategy_n_instances(s); i++) {
        tw_strategy_open_order o[TW_STRATEGY_MAX_OPEN + 1];
        size_t n = tw_strategy_open_orders(s, i, o, TW_ARRAY_SIZE(o));
        tw_instance_stats st;
        tw_strategy_instance(s, i, &st);
        for (size_t j = 0; j < n && j < TW_ARRAY_SIZE(o); j++) {
            int64_t q = o[j].remaining < 0 ? -o[j].remaining : o[j].remaining;
            tw_out x = {.type = TW_OUT_ORDER,
                        .side = o[j].remaining > 0 ? TW_SIDE_BUY : TW_SIDE_SELL,
                        .session = (uint16_t)tw_strategy_instrument_session(s, st.instrument),
                        .instance = i,
                        .instrument = st.instrument,
                        .qty = (int32_t)q,
                        .order_id = o[j].id,
                        .ref = o[j].bar};
            int r = fn(ctx, &x);
            if (r == 0 && o[j].cancel_sent) {
                x.type = TW_OUT_CANCEL;
                r = fn(ctx, &x);
            }
            if (r != 0)
                return r;
        }
    }
    for (uint32_t j = 0; j < tw_strategy_n_sessions(s); j++)
        if (tw_strategy_session_logged_out(s, j)) {
            tw_out x = {.type = TW_OUT_LOGOUT, .session = (uint16_t)j};
            int r = fn(ctx, &x);
            if (r != 0)
                return r;
        }
    return 0;
}

void tw__intents_settle_state(tw__intents *sent, const tw_strategy *s)
{
    before_ctx bc = {s};
    tw__intents_settle(sent, decided_before, &bc);
}
