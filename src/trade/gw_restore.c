/* Recovery's entry into a net core (before the cores start; recover.c
 * drives it): the journal's events and sent orders as the live run
 * applied them, the orders the FIX store holds, and the end of the replay
 * (a session that was up is told DOWN: the old connection died). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trade/gw_internal.h"

static void done_add(tw__gw *g, uint64_t id)
{
    if (!g->done.ids)
        return;
    uint32_t i = (uint32_t)(id * 0x9e3779b97f4a7c15ull >> 32) & g->done.mask;
    while (g->done.ids[i] != 0 && g->done.ids[i] != id + 1)
        i = (i + 1) & g->done.mask;
    g->done.ids[i] = id + 1;
}

void tw__gw_restore_ev(tw__gw *g, const tw_ev *ev)
{
    switch (ev->type) {
    case TW_EV_BAR: {
        uint32_t local = ev->instrument < g->cfg->n_instruments ? g->local_of[ev->instrument]
                                                                : UINT32_MAX;
        if (local == UINT32_MAX)
            return;
        if ((int64_t)ev->u.bar.index > g->last_bar[local])
            g->last_bar[local] = (int64_t)ev->u.bar.index;
        tw__gw_remember_close(g, local, ev->u.bar.index, ev->u.bar.close);
        g->st.bars++;
        g->st.gap_bars += isnan(ev->u.bar.close);
        return;
    }
    case TW_EV_FILL: {
        g->st.fills++;
        tw__open_order *o = tw__gw_open_find(g, ev->u.fill.order_id);
        if (o && (o->qty -= (int32_t)ev->u.fill.qty) <= 0) {
            tw__gw_open_remove(g, ev->u.fill.order_id);
            done_add(g, ev->u.fill.order_id);
        }
        return;
    }
    case TW_EV_REJECT:
    case TW_EV_CANCELED:
        g->st.rejects += ev->type == TW_EV_REJECT;
        g->st.canceled += ev->type == TW_EV_CANCELED;
        tw__gw_open_remove(g, ev->u.order.order_id);
        done_add(g, ev->u.order.order_id);
        return;
    case TW_EV_SESSION:
        g->up = ev->u.session.state == TW_SESSION_UP;
        if (ev->u.session.state == TW_SESSION_CLOSED)
            g->closed_seen = 1;
        return;
    default: return;
    }
}

int tw__gw_restore_begin(tw__gw *g, uint64_t n_orders)
{
    /* Every order the journal holds can be done: room for all, half full. */
    uint64_t cap = 1024;
    while (cap < 2 * n_orders)
        cap <<= 1;
    if (cap > (1ull << 31))
        return -E2BIG;
    g->done.ids = calloc(cap, sizeof(uint64_t));
    g->done.mask = (uint32_t)(cap - 1);
    return g->done.ids ? 0 : -ENOMEM;
}

void tw__gw_restore_order(tw__gw *g, const tw_out *o)
{
    g->st.orders_sent++;
    if (!tw__gw_open_find(g, o->order_id))
        tw__gw_open_add(g, o);
}

void tw__gw_restore_done(tw__gw *g)
{
    /* The open table's qty counted fills down; what is left open is
     * cancelled (TERM) with the order's quantity left. */
    if (g->up) {
        g->up = 0;
        tw__gw_push_session(g, TW_SESSION_DOWN);
    }
}

static int body_field(const char *b, size_t n, const char *tag, const char **v, size_t *vl)
{
    size_t tl = strlen(tag);
    for (size_t i = 0; i + tl < n; i++) {
        if ((i == 0 || b[i - 1] == '\x01') && memcmp(b + i, tag, tl) == 0) {
            const char *e = memchr(b + i + tl, '\x01', n - i - tl);
            *v = b + i + tl;
            *vl = e ? (size_t)(e - *v) : n - i - tl;
            return 0;
        }
    }
    return -1;
}

uint32_t tw__gw_store_count(const tw__gw *g) { return g->store.n; }

int tw__gw_store_orders(tw__gw *g, uint64_t run_id, void (*fn)(void *, char, uint64_t),
                        void *ctx)
{
    char *buf = malloc(TW_FIX_REC_MAX + 64);
    if (!buf)
        return -ENOMEM;
    int rc = 0;
    for (uint32_t i = 0; i < g->store.n && rc == 0; i++) {
        tw_fix_stored m;
        if ((rc = tw_fix_store_read(&g->store, i, buf, TW_FIX_REC_MAX + 64, &m)) != 0)
            break;
        if (m.type_len != 1 || (m.type[0] != 'D' && m.type[0] != 'F'))
            continue;
        const char *v;
        size_t vl;
        char kind;
        uint64_t run, id;
        if (body_field(m.body, m.body_len, "11=", &v, &vl) == 0 &&
            tw_trade_clordid_parse(v, vl, &kind, &run, &id) == 0 && run == run_id)
            fn(ctx, kind, id);
    }
    free(buf);
    return rc;
}
