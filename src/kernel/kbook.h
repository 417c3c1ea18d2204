/* The host's books of one kernel instance (kernel.md "Kernels as
 * plug-ins"), inline so that the generic sweep's hot loop has them in
 * place; tw_kbook_bar() is the exported wrapper of the same code. */
#ifndef TW_KERNEL_KBOOK_H
#define TW_KERNEL_KBOOK_H

#include <math.h>

#include "tickwire/kernel.h"

/* A closed trade's return r into the totals: pnl + (r - fee), the trade,
 * a win when r - fee > 0, the peak and the drawdown. */
static inline void tw__kbook_close(tw_kbook *b, double r, double fee)
{
    double net = r - fee;
    b->pnl = b->pnl + net;
    b->trades += 1;
    if (net > 0.0)
        b->wins += 1;
    if (b->pnl > b->peak)
        b->peak = b->pnl;
    double dd = b->peak - b->pnl;
    if (dd > b->max_drawdown)
        b->max_drawdown = dd;
}

/* Books one bar whose target is `target`: returns 1 (and *t) when a trade
 * closed, else 0.  A target other than -1, 0, +1 stops the instance: from
 * that bar on nothing changes (bars included). */
static inline int tw__kbook_apply(tw_kbook *b, int target, double close, int64_t bar,
                                  double fee, tw_trade *t)
{
    int closed = 0;
    if (TW_UNLIKELY(b->stopped))
        return 0;
    if (TW_LIKELY(target == b->pos)) { /* most bars: nothing to book */
        b->bars += 1;
        b->bars_in_pos += b->pos != 0;
        return 0;
    }
    if (TW_UNLIKELY(target < -1 || target > 1)) {
        b->stopped = 1;
        return 0;
    }
    b->bars += 1;
    if (target != b->pos && !isnan(close)) {
        if (b->pos != 0) {
            double r = b->pos == 1 ? (close / b->entry_price - 1.0) * 100.0
                                   : (1.0 - close / b->entry_price) * 100.0;
            tw__kbook_close(b, r, fee);
            if (t) {
                t->combo = 0;
                t->entry_bar = b->entry_bar;
                t->exit_bar = bar;
                t->entry_price = b->entry_price;
                t->exit_price = close;
                t->r = r;
                t->side = b->pos;
            }
            closed = 1;
        }
        if (target != 0) {
            b->pos = target;
            b->entry_bar = bar;
            b->entry_price = close;
        } else {
            b->pos = 0;
            b->entry_bar = -1;
            b->entry_price = 0.0;
        }
    }
    if (b->pos != 0)
        b->bars_in_pos += 1;
    return closed;
}

static inline void tw__kbook_reset(tw_kbook *b)
{
    b->pos = 0;
    b->stopped = 0;
    b->entry_bar = -1;
    b->entry_price = 0.0;
    b->pnl = 0.0;
    b->trades = 0;
    b->wins = 0;
    b->peak = 0.0;
    b->max_drawdown = 0.0;
    b->bars = 0;
    b->bars_in_pos = 0;
}

/* A sweep's result from an instance's books. */
static inline void tw__kresult_of(const tw_kbook *b, tw_kresult *r)
{
    r->pnl = b->pnl;
    r->trades = b->trades;
    r->wins = b->wins;
    r->max_drawdown = b->max_drawdown;
    r->exposure = b->bars ? (double)b->bars_in_pos / (double)b->bars : 0.0;
    r->open.side = b->pos;
    r->open.entry_bar = b->entry_bar;
    r->open.entry_price = b->entry_price;
    r->stopped = b->stopped;
}

/* ---- the kernel part's shared pieces for kernels by name ---------------- */

extern const tw_kernel_def tw__hma_sar_def;
extern const tw_kernel_def tw__zscore_def;

/* The most state bytes per instance a kernel may ask for: the ABI's 1 MiB,
 * except hma_sar's rings (three of up to 100,000 doubles). */
size_t tw__kernel_state_limit(const tw_kernel_def *def);

/* tw_kernel_check_combo() without init(): every value finite, in bounds,
 * integral where required; state_bytes within the limit.  *bytes gets
 * state_bytes(p).  0 or -EINVAL naming the param. */
int tw__kernel_check_bounds(const tw_kernel_def *def, const double *p, size_t *bytes,
                            tw_error *err);

/* A named-param grid's text (tw_read_kgrid; path is for messages). */
int tw__kgrid_parse(const char *buf, size_t len, const char *path, const tw_kernel_def *def,
                    double **params, size_t *n_combos, tw_error *err);

#endif
