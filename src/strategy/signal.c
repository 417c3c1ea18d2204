/* The kernel seam: one streaming kernel per instrument over its combos,
 * kernel.h's tw_stream_* (live.md "The kernel, streaming": the sweep with
 * a block of one bar, so its signals, PnL and trades are the sweep's
 * bits).  The only file of the strategy core that talks to the kernel. */
#include <string.h>

#include "strategy/strategy_internal.h"

/* The stream lives right after this header, in the strategy's memory. */
struct tw__sig {
    size_t n;
    size_t stream_bytes;
};

static size_t head(void) { return (sizeof(tw__sig) + 63) & ~(size_t)63; }

static tw_stream *stream(const tw__sig *g) { return (tw_stream *)((char *)g + head()); }

size_t tw__sig_memsize(const int64_t *combos, uint32_t n_combos)
{
    size_t b = tw_stream_memsize(combos, n_combos);
    return b ? head() + b : 0;
}

tw__sig *tw__sig_init(void *mem, size_t bytes, const int64_t *combos, uint32_t n_combos,
                      double fee, tw_error *err)
{
    TW_VERIFY(bytes >= tw__sig_memsize(combos, n_combos));
    tw__sig *g = mem;
    g->n = n_combos;
    g->stream_bytes = bytes - head();
    /* The caller validated combos and fee; only planning scratch could
     * fail here (-ENOMEM), at init, never per event. */
    if (tw_stream_init(stream(g), g->stream_bytes, combos, n_combos, fee, err) != 0)
        return NULL;
    return g;
}

size_t tw__sig_update(tw__sig *g, double close, uint32_t *changed)
{
    return tw_stream_update(stream(g), close, changed);
}

static tw_combo_state get(const tw__sig *g, uint32_t k)
{
    tw_combo_state cs;
    int rc = tw_stream_get(stream(g), k, &cs);
    TW_VERIFY(rc == 0);
    return cs;
}

int tw__sig_pos(const tw__sig *g, uint32_t k) { return get(g, k).position; }
double tw__sig_entry(const tw__sig *g, uint32_t k) { return get(g, k).entry_price; }
double tw__sig_pnl(const tw__sig *g, uint32_t k) { return get(g, k).pnl; }
int64_t tw__sig_trades(const tw__sig *g, uint32_t k) { return get(g, k).trades; }
tw_stream *tw__sig_stream(tw__sig *g) { return stream(g); }
