/* The built-in kernels as tw_kernel_defs: hma_sar (the HMA/HMA3
 * stop-and-reverse, kernel.md) and zscore (docs/kernel.md, "zscore").
 * Both keep flat state: a header and rings, no pointers, so that a copy
 * of the bytes resumes the kernel exactly. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "kernel/kbook.h"
#include "kernel/kernel_internal.h"

/* ---- hma_sar -------------------------------------------------------------
 *
 * Per bar the seven WMA passes of kernel.md, each output computed from the
 * last w inputs in the reference's order (the same expressions as
 * tw_wma), over rings indexed by bar: the closes (gaps included: a NaN in
 * a window makes its output NaN), d and e.  The target is the sign of
 * hma3 - hma, held on NaN or 0. */

struct hs_state {
    int64_t w[TW_COMBO_WINDOWS];
    int64_t wc;  /* close ring: the largest close window */
    uint64_t n;  /* bars seen */
    int32_t target;
    int32_t pad;
    double ring[]; /* close [wc], d [h_sqrt], e [t_full] */
};

static int64_t hs_wc(const double *p)
{
    static const int idx[5] = {TW_H_HALF, TW_H_FULL, TW_T_THIRD, TW_T_HALF, TW_T_FULL};
    int64_t m = 1;
    for (int k = 0; k < 5; k++)
        if ((int64_t)p[idx[k]] > m)
            m = (int64_t)p[idx[k]];
    return m;
}

static size_t hs_state_bytes(const double *p)
{
    for (int k = 0; k < TW_COMBO_WINDOWS; k++)
        if (!(p[k] >= 1.0 && p[k] <= (double)TW_WINDOW_MAX))
            return 0;
    size_t doubles = (size_t)hs_wc(p) + (size_t)p[TW_H_SQRT] + (size_t)p[TW_T_FULL];
    return sizeof(struct hs_state) + doubles * sizeof(double);
}

static int hs_init(void *state, const double *p)
{
    struct hs_state *s = state;
    for (int k = 0; k < TW_COMBO_WINDOWS; k++) {
        if (!(p[k] >= 1.0 && p[k] <= (double)TW_WINDOW_MAX) || p[k] != floor(p[k]))
            return -EINVAL;
        s->w[k] = (int64_t)p[k];
    }
    s->wc = hs_wc(p);
    s->n = 0;
    s->target = 0;
    s->pad = 0;
    return 0;
}

/* WMA(x, w) at bar i over a ring of cap entries holding bar j at j % cap. */
static inline double hs_wma(const double *x, uint64_t cap, uint64_t i, int64_t w)
{
    if (i + 1 < (uint64_t)w)
        return NAN;
    const double den = (double)w * (double)(w + 1) / 2.0;
    uint64_t at = i % cap;
    double num = 0.0;
    for (int64_t j = 0; j < w; j++) {
        num += x[at] * (double)(w - j);
        at = at == 0 ? cap - 1 : at - 1;
    }
    return num / den;
}

static int hs_step(void *state, double close)
{
    struct hs_state *s = state;
    const int64_t *w = s->w;
    uint64_t i = s->n, wc = (uint64_t)s->wc;
    uint64_t ws = (uint64_t)w[TW_H_SQRT], wf = (uint64_t)w[TW_T_FULL];
    double *xc = s->ring, *xd = xc + wc, *xe = xd + ws;
    xc[i % wc] = close;
    double a = hs_wma(xc, wc, i, w[TW_H_HALF]);
    double b = hs_wma(xc, wc, i, w[TW_H_FULL]);
    xd[i % ws] = 2.0 * a - b;
    double hma = hs_wma(xd, ws, i, w[TW_H_SQRT]);
    double p3 = hs_wma(xc, wc, i, w[TW_T_THIRD]);
    double p2 = hs_wma(xc, wc, i, w[TW_T_HALF]);
    double p1 = hs_wma(xc, wc, i, w[TW_T_FULL]);
    xe[i % wf] = (3.0 * p3 - p2) - p1;
    double hma3 = hs_wma(xe, wf, i, w[TW_T_FULL]);
    s->n = i + 1;
    double v = hma3 - hma;
    if (isnan(v) || v == 0.0)
        return s->target;
    s->target = v > 0.0 ? 1 : -1;
    return s->target;
}

static double hs_grid[TW_GRID_DEFAULT_COMBOS * TW_COMBO_WINDOWS];
static pthread_once_t hs_grid_once = PTHREAD_ONCE_INIT;

static void hs_grid_fill(void)
{
    int64_t c[TW_GRID_DEFAULT_COMBOS * TW_COMBO_WINDOWS];
    size_t n = tw_grid_default(c);
    for (size_t i = 0; i < n * TW_COMBO_WINDOWS; i++)
        hs_grid[i] = (double)c[i];
}

static const double *hs_default_grid(size_t *n_combos)
{
    pthread_once(&hs_grid_once, hs_grid_fill);
    *n_combos = TW_GRID_DEFAULT_COMBOS;
    return hs_grid;
}

#define HS_PARAM(nm, d) {.name = nm, .lo = 1, .hi = TW_WINDOW_MAX, .integer = 1, .dflt = d}
static const tw_kparam hs_params[TW_COMBO_WINDOWS] = {
    HS_PARAM("h_half", 3), HS_PARAM("h_full", 6), HS_PARAM("h_sqrt", 2),
    HS_PARAM("t_third", 1), HS_PARAM("t_half", 2), HS_PARAM("t_full", 3),
};

const tw_kernel_def tw__hma_sar_def = {
    .abi = TW_KERNEL_ABI,
    .name = "hma_sar",
    .doc = "HMA/HMA3 stop-and-reverse: long while HMA3 is above HMA, short while below",
    .n_params = TW_COMBO_WINDOWS,
    .params = hs_params,
    .state_bytes = hs_state_bytes,
    .init = hs_init,
    .step = hs_step,
    .sweep = NULL, /* its exact SIMD sweep is run by tw_ksweep directly */
    .default_grid = hs_default_grid,
};

/* ---- zscore ----------------------------------------------------------------
 *
 * docs/kernel.md "zscore": every expression exactly as written there. */

struct zs_state {
    double K, S, Q;
    double entry, exit;
    int64_t window, n_seen, head;
    int32_t target;
    int32_t pad;
    double ring[]; /* [window] */
};

enum { ZS_WINDOW = 0, ZS_ENTRY = 1, ZS_EXIT = 2 };

static size_t zs_state_bytes(const double *p)
{
    if (!(p[ZS_WINDOW] >= 2.0 && p[ZS_WINDOW] <= 100000.0))
        return 0;
    return sizeof(struct zs_state) + (size_t)p[ZS_WINDOW] * sizeof(double);
}

static int zs_init(void *state, const double *p)
{
    struct zs_state *s = state;
    if (!(p[ZS_WINDOW] >= 2.0 && p[ZS_WINDOW] <= 100000.0) || p[ZS_WINDOW] != floor(p[ZS_WINDOW]))
        return -EINVAL;
    if (!(p[ZS_EXIT] < p[ZS_ENTRY]))
        return -EINVAL;
    s->K = 0.0;
    s->S = 0.0;
    s->Q = 0.0;
    s->entry = p[ZS_ENTRY];
    s->exit = p[ZS_EXIT];
    s->window = (int64_t)p[ZS_WINDOW];
    s->n_seen = 0;
    s->head = 0;
    s->target = 0;
    s->pad = 0;
    return 0;
}

static int zs_step(void *state, double close)
{
    struct zs_state *s = state;
    if (isnan(close))
        return s->target;
    if (s->n_seen == 0)
        s->K = close;
    double y = close - s->K;
    if (s->n_seen < s->window) {
        s->S = s->S + y;
        s->Q = s->Q + y * y;
        s->ring[s->n_seen] = y;
    } else {
        double old = s->ring[s->head];
        s->S = s->S + (y - old);
        s->Q = s->Q + (y * y - old * old);
        s->ring[s->head] = y;
        /* (head + 1) % window, without a division on the bar's path. */
        s->head = s->head + 1 == s->window ? 0 : s->head + 1;
    }
    s->n_seen++;
    if (s->n_seen < s->window)
        return s->target;
    double mean = s->S / (double)s->window;
    double var = s->Q / (double)s->window - mean * mean;
    if (!(var > 0.0))
        return s->target;
    double z = (y - mean) / sqrt(var);
    if (z > s->entry)
        s->target = -1;
    else if (z < -s->entry)
        s->target = +1;
    else if (fabs(z) < s->exit)
        s->target = 0;
    return s->target;
}

#define ZS_WINDOWS 19
static double zs_grid[ZS_WINDOWS * 3 * 2 * 3];
static pthread_once_t zs_grid_once = PTHREAD_ONCE_INIT;

static void zs_grid_fill(void)
{
    static const double entries[3] = {1.5, 2.0, 2.5}, exits[2] = {0.0, 0.5};
    size_t k = 0;
    for (int w = 0; w < ZS_WINDOWS; w++)
        for (int e = 0; e < 3; e++)
            for (int x = 0; x < 2; x++) {
                zs_grid[k++] = 20.0 * (double)(w + 1);
                zs_grid[k++] = entries[e];
                zs_grid[k++] = exits[x];
            }
}

static const double *zs_default_grid(size_t *n_combos)
{
    pthread_once(&zs_grid_once, zs_grid_fill);
    *n_combos = ZS_WINDOWS * 3 * 2;
    return zs_grid;
}

static const tw_kparam zs_params[3] = {
    {.name = "window", .lo = 2, .hi = 100000, .integer = 1, .dflt = 20},
    {.name = "entry", .lo = 1e-9, .hi = 1e9, .integer = 0, .dflt = 2.0},
    {.name = "exit", .lo = 0, .hi = 1e9, .integer = 0, .dflt = 0.5},
};

const tw_kernel_def tw__zscore_def = {
    .abi = TW_KERNEL_ABI,
    .name = "zscore",
    .doc = "mean reversion on the rolling z-score of closes: short above entry, long below "
           "-entry, flat inside exit",
    .n_params = 3,
    .params = zs_params,
    .state_bytes = zs_state_bytes,
    .init = zs_init,
    .step = zs_step,
    .sweep = NULL,
    .default_grid = zs_default_grid,
};
