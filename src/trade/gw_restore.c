/* Recovery's entry into a net core (before the cores start; recover.c
 * drives it): its fold (gwfold.h), which takes the journal's records, the
 * orders the FIX store alone holds, and the end of the replay (a session
 * that was up is told DOWN: the old connection died). */
#include <stdlib.h>
#include <string.h>

#include "trade/gw_internal.h"

tw__gwfold *tw__gw_fold(tw__gw *g) { return &g->f; }

void tw__gw_restore_order(tw__gw *g, const tw_out *o)
{
    tw__gwfold_out(&g->f, o);
}

void tw__gw_restore_done(tw__gw *g)
{
    /* The counters the journal's records gave, into the core's figures;
     * the open table's qty counted fills down: what is left open is
     * cancelled (TERM) with the order's quantity left. */
    g->st.bars = g->f.bars;
    g->st.gap_bars = g->f.gap_bars;
    g->st.fills = g->f.fills;
    g->st.rejects = g->f.rejects;
    g->st.canceled = g->f.canceled;
    g->st.orders_sent = g->f.orders_sent;
    if (g->f.up) {
        g->f.up = 0;
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
