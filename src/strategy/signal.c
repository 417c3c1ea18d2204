/* The kernel seam: one streaming kernel per instrument over its combos.
 *
 * STAND-IN.  kernel.h has no streaming API yet (issue 11, branch `kernel`):
 * until tw_stream_* lands this file computes the kernel of kernel.md one
 * bar at a time itself, with the scalar reference's operations in the
 * scalar reference's order (each WMA output is num += x[i-j] * (w-j) for
 * j = 0..w-1, then num / den; d and e exactly as written; no FMA), so its
 * signals, PnL and trades are bit-identical to tw_sweep() (tests/strategy
 * checks it against tw_sweep and a trade-list reference built from
 * tw_wma).  When tw_stream_* exists, this file becomes a thin wrapper over
 * it and nothing else in src/strategy changes. */
#include <math.h>
#include <string.h>

#include "strategy/strategy_internal.h"

typedef struct combo_state {
    int64_t w[TW_COMBO_WINDOWS];
    double den[TW_COMBO_WINDOWS];
    double *d;      /* ring of the last h_sqrt values of d = 2a - b */
    double *e;      /* ring of the last t_full values of e */
    int pos;
    double entry, pnl;
    int64_t trades;
} combo_state;

struct tw__sig {
    uint32_t n;
    double fee;
    uint64_t bars;      /* bars fed so far: the next bar's index */
    int64_t cap;        /* ring length of close: the longest close window */
    double *close;
    combo_state *c;
};

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static int64_t close_cap(const int64_t *combos, uint32_t n)
{
    int64_t cap = 1;
    for (uint32_t k = 0; k < n; k++)
        for (int j = 0; j < TW_COMBO_WINDOWS; j++)
            if (j != TW_H_SQRT && combos[k * TW_COMBO_WINDOWS + j] > cap)
                cap = combos[k * TW_COMBO_WINDOWS + j];
    return cap;
}

size_t tw__sig_memsize(const int64_t *combos, uint32_t n)
{
    size_t b = align64(sizeof(tw__sig)) + align64(n * sizeof(combo_state)) +
               align64((size_t)close_cap(combos, n) * sizeof(double));
    for (uint32_t k = 0; k < n; k++) {
        const int64_t *c = combos + (size_t)k * TW_COMBO_WINDOWS;
        b += (size_t)(c[TW_H_SQRT] + c[TW_T_FULL]) * sizeof(double);
    }
    return align64(b);
}

tw__sig *tw__sig_init(void *mem, size_t bytes, const int64_t *combos, uint32_t n, double fee)
{
    TW_VERIFY(bytes >= tw__sig_memsize(combos, n));
    char *p = mem;
    tw__sig *g = (tw__sig *)p;
    p += align64(sizeof(tw__sig));
    g->n = n;
    g->fee = fee;
    g->bars = 0;
    g->cap = close_cap(combos, n);
    g->c = (combo_state *)p;
    p += align64(n * sizeof(combo_state));
    g->close = (double *)p;
    p += align64((size_t)g->cap * sizeof(double));
    for (uint32_t k = 0; k < n; k++) {
        combo_state *cs = &g->c[k];
        memset(cs, 0, sizeof(*cs));
        for (int j = 0; j < TW_COMBO_WINDOWS; j++) {
            int64_t w = combos[k * TW_COMBO_WINDOWS + j];
            cs->w[j] = w;
            cs->den[j] = (double)w * (double)(w + 1) / 2.0;
        }
        cs->d = (double *)p;
        p += (size_t)cs->w[TW_H_SQRT] * sizeof(double);
        cs->e = (double *)p;
        p += (size_t)cs->w[TW_T_FULL] * sizeof(double);
    }
    TW_ASSERT((size_t)(p - (char *)mem) <= bytes);
    return g;
}

/* WMA(x, w)[i] over a ring holding x[i - len + 1 .. i] at x[(i - j) % len]:
 * the scalar reference's order of additions. */
static double wma_ring(const double *ring, int64_t len, uint64_t i, int64_t w, double den)
{
    if (i + 1 < (uint64_t)w)
        return NAN;
    double num = 0.0;
    for (int64_t j = 0; j < w; j++)
        num += ring[(i - (uint64_t)j) % (uint64_t)len] * (double)(w - j);
    return num / den;
}

size_t tw__sig_update(tw__sig *g, double close, uint32_t *changed)
{
    const uint64_t i = g->bars++;
    size_t n_changed = 0;
    g->close[i % (uint64_t)g->cap] = close;
    for (uint32_t k = 0; k < g->n; k++) {
        combo_state *cs = &g->c[k];
        const int64_t *w = cs->w;
        double a = wma_ring(g->close, g->cap, i, w[TW_H_HALF], cs->den[TW_H_HALF]);
        double b = wma_ring(g->close, g->cap, i, w[TW_H_FULL], cs->den[TW_H_FULL]);
        cs->d[i % (uint64_t)w[TW_H_SQRT]] = 2.0 * a - b;
        double hma = wma_ring(cs->d, w[TW_H_SQRT], i, w[TW_H_SQRT], cs->den[TW_H_SQRT]);
        double p3 = wma_ring(g->close, g->cap, i, w[TW_T_THIRD], cs->den[TW_T_THIRD]);
        double p2 = wma_ring(g->close, g->cap, i, w[TW_T_HALF], cs->den[TW_T_HALF]);
        double p1 = wma_ring(g->close, g->cap, i, w[TW_T_FULL], cs->den[TW_T_FULL]);
        cs->e[i % (uint64_t)w[TW_T_FULL]] = (3.0 * p3 - p2) - p1;
        double hma3 = wma_ring(cs->e, w[TW_T_FULL], i, w[TW_T_FULL], cs->den[TW_T_FULL]);

        double v = hma3 - hma;
        if (isnan(v) || v == 0.0)
            continue;
        int s = v > 0.0 ? 1 : -1;
        if (cs->pos == 0) {
            cs->pos = s;
            cs->entry = close;
            changed[n_changed++] = k;
            continue;
        }
        if (s != cs->pos) {
            double r = cs->pos == 1 ? (close / cs->entry - 1.0) * 100.0
                                    : (1.0 - close / cs->entry) * 100.0;
            cs->pnl = cs->pnl + (r - g->fee);
            cs->trades += 1;
            cs->pos = s;
            cs->entry = close;
            changed[n_changed++] = k;
        }
    }
    return n_changed;
}

int tw__sig_pos(const tw__sig *g, uint32_t k) { return g->c[k].pos; }
double tw__sig_entry(const tw__sig *g, uint32_t k) { return g->c[k].entry; }
double tw__sig_pnl(const tw__sig *g, uint32_t k) { return g->c[k].pnl; }
int64_t tw__sig_trades(const tw__sig *g, uint32_t k) { return g->c[k].trades; }
