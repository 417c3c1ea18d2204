/* The tiled kernel (kernel.md "Blocks over time"): the plan of a grid, the
 * state it carries from block to block, and the two ways of advancing it,
 * wide (a block of bars per combo, SIMD lanes over bars) and narrow (one
 * bar, SIMD lanes over windows and combos).  The sweep driver (sweep.c)
 * and the streaming kernel (stream.c) are both made of these calls.
 *
 * What a combo carries between blocks: the last w - 1 values of d (w =
 * h_sqrt) and of e (w = t_full), and its stop-and-reverse state.  The
 * carried values live in rings shared by a set of combos, one lane per
 * combo, so that the one-bar kernel can load a vector of combos at a time;
 * a wide block copies a combo's tail out of its lane, extends it by the
 * block, and writes the new tail back.  The close windows need nothing
 * carried: they read the close series itself (the caller's array in a
 * sweep, a ring of the last bars in a stream). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/kernel_internal.h"

#define SINGLES_BELOW 4 /* a run of fewer close windows goes window by window */

/* A bump allocator over one block of memory; p NULL only counts. */
struct bump {
    char *p;
    size_t off;
};

static void *take(struct bump *b, size_t bytes)
{
    size_t o = (b->off + TW_CACHE_LINE - 1) / TW_CACHE_LINE * TW_CACHE_LINE;
    b->off = o + bytes;
    return b->p ? b->p + o : NULL;
}

/* ---- the plan ----------------------------------------------------------- */

static const int close_idx[5] = {TW_H_HALF, TW_H_FULL, TW_T_THIRD, TW_T_HALF, TW_T_FULL};

/* The plan's arrays (b->p NULL: sizes only); returns the sort keys. */
static uint64_t *plan_layout(struct bump *b, size_t n_combos, struct tw__tile *t)
{
    size_t k5 = 5 * n_combos;
    t->win = take(b, k5 * sizeof(int64_t));
    t->cslot = take(b, k5 * sizeof(uint32_t));
    t->dorder = take(b, n_combos * sizeof(uint32_t));
    t->eorder = take(b, n_combos * sizeof(uint32_t));
    t->tasks = take(b, k5 * sizeof(struct tw__atask));
    return take(b, k5 * sizeof(uint64_t));
}

size_t tw__tile_plan_bytes(size_t n_combos)
{
    if (n_combos > UINT32_MAX / 8)
        return 0;
    struct bump b = {NULL, 0};
    struct tw__tile t;
    plan_layout(&b, n_combos, &t);
    return b.off;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Slot of w in win[0..n) (descending, w present). */
static uint32_t slot_of(const int64_t *win, size_t n, int64_t w)
{
    size_t lo = 0, hi = n;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (win[mid] >= w)
            lo = mid;
        else
            hi = mid;
    }
    TW_VERIFY(win[lo] == w);
    return (uint32_t)lo;
}

/* Combos by one window, largest first, ties in combo order. */
static void order_by(uint32_t *order, uint64_t *keys, const int64_t *combos, size_t n, int j)
{
    for (size_t k = 0; k < n; k++)
        keys[k] = (uint64_t)(TW_WINDOW_MAX - combos[k * TW_COMBO_WINDOWS + (size_t)j]) << 32 |
                  (uint64_t)k;
    qsort(keys, n, sizeof(keys[0]), cmp_u64);
    for (size_t k = 0; k < n; k++)
        order[k] = (uint32_t)(keys[k] & 0xffffffffu);
}

void tw__tile_plan(struct tw__tile *t, void *mem, const int64_t *combos, size_t n_combos,
                   size_t block_bars)
{
    memset(t, 0, sizeof(*t));
    size_t k5 = 5 * n_combos;
    struct bump b = {mem, 0};
    uint64_t *keys = plan_layout(&b, n_combos, t);
    t->combos = combos;
    t->n_combos = n_combos;

    /* Distinct close windows, largest first. */
    for (size_t k = 0; k < n_combos; k++)
        for (int j = 0; j < 5; j++)
            keys[k * 5 + (size_t)j] =
                (uint64_t)(TW_WINDOW_MAX - combos[k * TW_COMBO_WINDOWS + (size_t)close_idx[j]]);
    qsort(keys, k5, sizeof(keys[0]), cmp_u64);
    size_t nw = 0;
    for (size_t i = 0; i < k5; i++)
        if (i == 0 || keys[i] != keys[i - 1])
            t->win[nw++] = TW_WINDOW_MAX - (int64_t)keys[i];
    t->n_win = nw;
    t->wmax_c = t->win[0];
    for (size_t k = 0; k < n_combos; k++) {
        const int64_t *c = combos + k * TW_COMBO_WINDOWS;
        for (int j = 0; j < 5; j++)
            t->cslot[k * 5 + (size_t)j] = slot_of(t->win, nw, c[close_idx[j]]);
        if (c[TW_H_SQRT] > t->wmax_d)
            t->wmax_d = c[TW_H_SQRT];
        if (c[TW_T_FULL] > t->wmax_e)
            t->wmax_e = c[TW_T_FULL];
    }
    order_by(t->dorder, keys, combos, n_combos, TW_H_SQRT);
    order_by(t->eorder, keys, combos, n_combos, TW_T_FULL);
    tw__tile_tasks(t, block_bars, NULL);
}

/* Phase A tasks: runs of neighbouring windows (the sorted list) become
 * lockstep groups of up to TW_GROUP when their spread is small against the
 * block (a group also computes the spread's worth of outputs outside the
 * block, see wma_group_block); what is left goes window by window.  skip
 * (if not NULL) marks windows that need no work (a bound dataset's cache
 * already holds them). */
void tw__tile_tasks(struct tw__tile *t, size_t block_bars, const uint8_t *skip)
{
    int64_t spread_max = (int64_t)(block_bars / 4);
    if (spread_max < 4)
        spread_max = 4;
    size_t n = 0;
    for (size_t i = 0; i < t->n_win;) {
        if (skip && skip[i]) {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < t->n_win && j - i < TW_GROUP && !(skip && skip[j]) &&
               t->win[i] - t->win[j] <= spread_max)
            j++;
        if (j - i >= SINGLES_BELOW) {
            uint64_t cost = 0;
            for (size_t q = i; q < j; q++)
                cost += (uint64_t)t->win[q];
            /* The lockstep loop runs the largest window's length for every
             * member's share of anchors, plus the spread. */
            t->tasks[n++] = (struct tw__atask){(uint32_t)i, (uint32_t)(j - i), 1, 0,
                                                cost + (uint64_t)(t->win[i] - t->win[j - 1]) * 8};
        } else {
            for (size_t q = i; q < j; q++)
                t->tasks[n++] = (struct tw__atask){(uint32_t)q, 1, 0, 0,
                                                    (uint64_t)t->win[q] * 3 / 2 + 4};
        }
        i = j;
    }
    t->n_tasks = n;
}

/* ---- the state ---------------------------------------------------------- */

struct sets_plan {
    size_t n_sets;
    struct tw__nset *sets;
    double *out;
};

/* The window of lane idx of a set list: the combo's window (d or e), or
 * the close window; 0 for padding. */
static int64_t lane_window(const struct tw__tile *t, int kind, size_t idx)
{
    if (kind == 0)
        return idx < t->n_win ? t->win[idx] : 0;
    if (idx >= t->n_combos)
        return 0;
    const uint32_t *ord = kind == 1 ? t->dorder : t->eorder;
    return t->combos[(size_t)ord[idx] * TW_COMBO_WINDOWS + (kind == 1 ? TW_H_SQRT : TW_T_FULL)];
}

/* Lays out (b->p NULL: sizes) the sets of one kind: 0 close windows (only
 * for the one-bar kernel), 1 d, 2 e.  With init, fills windows,
 * denominators and rings. */
static void layout_sets(struct tw__tile *t, struct bump *b, unsigned vl, int kind, int narrow,
                        size_t slack, struct sets_plan *sp)
{
    const size_t st = (size_t)TW_NSET * vl;
    size_t lanes = kind == 0 ? t->n_win : t->n_combos;
    sp->n_sets = (lanes + st - 1) / st;
    sp->sets = take(b, sp->n_sets * sizeof(struct tw__nset));
    sp->out = take(b, sp->n_sets * st * sizeof(double));
    for (size_t s = 0; s < sp->n_sets; s++) {
        int64_t W = lane_window(t, kind, s * st); /* the set's largest */
        double *den = take(b, st * sizeof(double));
        double *wn = take(b, st * sizeof(double));
        size_t ring_entries = kind == 0 ? 0 : (size_t)W + 1 + slack;
        double *ring = ring_entries ? take(b, ring_entries * st * sizeof(double)) : NULL;
        if (!b->p)
            continue;
        struct tw__nset *ns = &sp->sets[s];
        ns->win = wn;
        ns->den = den;
        ns->ring = ring;
        ns->out = sp->out + s * st;
        for (size_t k = 0; k < TW_NSET; k++) {
            ns->wmax[k] = lane_window(t, kind, s * st + k * vl);
            ns->wmin[k] = lane_window(t, kind, s * st + k * vl + vl - 1);
            for (size_t l = 0; l < vl; l++) {
                int64_t w = lane_window(t, kind, s * st + k * vl + l);
                den[k * vl + l] = w ? (double)w * (double)(w + 1) / 2.0 : 1.0;
                wn[k * vl + l] = (double)w;
            }
        }
        for (size_t i = 0; i < ring_entries * st; i++)
            ring[i] = NAN;
    }
}

static void layout(struct tw__tile *t, struct bump *b, const struct tw__exact_ops *ops,
                   int narrow)
{
    size_t slack = narrow ? TW_RING_SLACK : 0;
    struct tw__sar_state *sar = take(b, t->n_combos * sizeof(struct tw__sar_state));
    uint32_t *dlane = take(b, t->n_combos * sizeof(uint32_t));
    uint32_t *elane = take(b, t->n_combos * sizeof(uint32_t));
    struct tw__nlane *nl = narrow ? take(b, t->n_combos * sizeof(struct tw__nlane)) : NULL;
    struct sets_plan d, e, c = {0, NULL, NULL};
    const size_t st = (size_t)TW_NSET * ops->vl;
    layout_sets(t, b, ops->vl, 1, narrow, slack, &d);
    layout_sets(t, b, ops->vl, 2, narrow, slack, &e);
    if (narrow)
        layout_sets(t, b, ops->vl, 0, narrow, slack, &c);
    if (!b->p)
        return;
    t->sar = sar;
    t->dlane = dlane;
    t->elane = elane;
    for (size_t i = 0; i < t->n_combos; i++) {
        dlane[t->dorder[i]] = (uint32_t)i;
        elane[t->eorder[i]] = (uint32_t)i;
    }
    /* A lane's input of bar t goes to entry h(t) + w (struct tw__nset). */
    for (size_t k = 0; nl && k < t->n_combos; k++) {
        const int64_t *cw = t->combos + k * TW_COMBO_WINDOWS;
        for (int j = 0; j < 5; j++)
            nl[k].cw[j] = c.out + t->cslot[k * 5 + (size_t)j];
        nl[k].dnext = d.sets[dlane[k] / st].ring + (size_t)cw[TW_H_SQRT] * st + dlane[k] % st;
        nl[k].enext = e.sets[elane[k] / st].ring + (size_t)cw[TW_T_FULL] * st + elane[k] % st;
        nl[k].hma = d.out + dlane[k];
        nl[k].hma3 = e.out + elane[k];
    }
    t->nl = nl;
    t->n_dset = d.n_sets;
    t->dset = d.sets;
    t->dout = d.out;
    t->n_eset = e.n_sets;
    t->eset = e.sets;
    t->eout = e.out;
    t->n_cset = c.n_sets;
    t->cset = c.sets;
    t->cout = c.out;
    t->slack = slack;
}

size_t tw__tile_state_bytes(const struct tw__tile *t, const struct tw__exact_ops *ops,
                            int narrow)
{
    struct bump b = {NULL, 0};
    layout((struct tw__tile *)t, &b, ops, narrow);
    return b.off + TW_CACHE_LINE; /* mem need not be aligned */
}

void tw__tile_state_init(struct tw__tile *t, void *mem, const struct tw__exact_ops *ops,
                         int narrow, double fee)
{
    uintptr_t a = ((uintptr_t)mem + TW_CACHE_LINE - 1) & ~(uintptr_t)(TW_CACHE_LINE - 1);
    struct bump b = {(char *)a, 0};
    t->ops = ops;
    t->wt = tw__weights();
    t->fee = fee;
    layout(t, &b, ops, narrow);
    for (size_t k = 0; k < t->n_combos; k++)
        tw__sar_reset(&t->sar[k]);
    t->f = 0;
}

static void reset_rings(struct tw__nset *sets, size_t n, size_t st, size_t slack)
{
    for (size_t s = 0; s < n; s++) {
        size_t entries = (size_t)sets[s].wmax[0] + 1 + slack;
        for (size_t i = 0; i < entries * st; i++)
            sets[s].ring[i] = NAN;
    }
}

void tw__tile_reset(struct tw__tile *t)
{
    size_t st = (size_t)TW_NSET * t->ops->vl;
    reset_rings(t->dset, t->n_dset, st, t->slack);
    reset_rings(t->eset, t->n_eset, st, t->slack);
    for (size_t k = 0; k < t->n_combos; k++)
        tw__sar_reset(&t->sar[k]);
    t->f = 0;
}

size_t tw__default_block(size_t n_win)
{
    /* The L2 size, looked up once: relaxed atomics, since every thread
     * that looks it up finds the same value. */
    static long l2;
    long c = __atomic_load_n(&l2, __ATOMIC_RELAXED);
    if (c == 0) {
#ifdef _SC_LEVEL2_CACHE_SIZE
        c = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
        if (c < 64 * 1024)
            c = 512 * 1024;
        __atomic_store_n(&l2, c, __ATOMIC_RELAXED);
    }
    size_t b = (size_t)c / 4 * 3 / (n_win * sizeof(double));
    b = b / 64 * 64;
    if (b < 64)
        b = 64;
    if (b > 4096)
        b = 4096;
    return b;
}

/* ---- wide blocks -------------------------------------------------------- */

size_t tw__tile_scratch(const struct tw__tile *t, size_t block_bars)
{
    return (size_t)(t->wmax_d - 1) + (size_t)(t->wmax_e - 1) + 4 * block_bars + 8;
}

void tw__tile_a_task(const struct tw__tile *t, size_t task, const double *x, ptrdiff_t avail,
                     ptrdiff_t t0, size_t nb, const struct tw__view *v)
{
    const struct tw__atask *a = &t->tasks[task];
    if (!a->group) {
        t->ops->wma_range(x, t->win[a->first], tw__view_ptr(v, a->first), t->wt, t0,
                          t0 + (ptrdiff_t)nb);
        return;
    }
    int64_t w[TW_GROUP];
    double *out[TW_GROUP];
    for (uint32_t g = 0; g < TW_GROUP; g++) {
        if (g < a->count) {
            w[g] = t->win[a->first + g];
            out[g] = tw__view_ptr(v, a->first + g);
        } else {
            w[g] = 1;
            out[g] = NULL;
        }
    }
    t->ops->wma_group_block(x, avail, w, out, t->wt, t0, t0 + (ptrdiff_t)nb);
}

/* A combo's lane in its set list: the set and the lane's offset in it. */
static inline void lane_at(const struct tw__nset *sets, uint32_t lane, size_t st,
                           const struct tw__nset **set, size_t *off)
{
    *set = &sets[lane / st];
    *off = lane % st;
}

/* One pass of a wide block over a carried series: buf[0 .. w - 1) gets
 * the lane's tail (its last w - 1 inputs, entries [f + 2, f + w]), the
 * caller writes the block after it, and tail_store() puts the new tail
 * back re-based to h = 0 (entries [2, w]): a wide block leaves the tile at
 * f = 0 (tw__tile_after_wide). */
static void tail_load(const struct tw__nset *s, size_t off, size_t st, size_t f, int64_t w,
                      double *buf)
{
    for (int64_t q = 0; q < w - 1; q++)
        buf[q] = s->ring[(f + 2 + (size_t)q) * st + off];
}

static void tail_store(const struct tw__nset *s, size_t off, size_t st, int64_t w,
                       const double *buf, size_t nb)
{
    for (int64_t q = 0; q < w - 1; q++)
        s->ring[(2 + (size_t)q) * st + off] = buf[nb + (size_t)q];
}

void tw__tile_b_combo(struct tw__tile *t, size_t k, const double *x, ptrdiff_t t0, size_t nb,
                      const struct tw__view *v, double *scratch,
                      const struct tw__trade_sink *sink, int64_t bar0)
{
    const struct tw__exact_ops *ops = t->ops;
    const int64_t *c = t->combos + k * TW_COMBO_WINDOWS;
    const uint32_t *sl = t->cslot + k * 5;
    const size_t st = (size_t)TW_NSET * ops->vl;
    const int64_t hs = c[TW_H_SQRT], tf = c[TW_T_FULL];
    double *d = scratch, *e = d + hs - 1 + nb, *hma = e + tf - 1 + nb, *hma3 = hma + nb;
    const struct tw__nset *ds, *es;
    size_t doff, eoff;
    lane_at(t->dset, t->dlane[k], st, &ds, &doff);
    lane_at(t->eset, t->elane[k], st, &es, &eoff);

    tail_load(ds, doff, st, t->f, hs, d);
    ops->combine_d(tw__view_ptr(v, sl[0]), tw__view_ptr(v, sl[1]), nb, d + hs - 1);
    ops->wma_range(d, hs, hma, t->wt, hs - 1, hs - 1 + (ptrdiff_t)nb);
    tail_store(ds, doff, st, hs, d, nb);

    tail_load(es, eoff, st, t->f, tf, e);
    ops->combine_e(tw__view_ptr(v, sl[2]), tw__view_ptr(v, sl[3]), tw__view_ptr(v, sl[4]), nb,
                   e + tf - 1);
    ops->wma_range(e, tf, hma3, t->wt, tf - 1, tf - 1 + (ptrdiff_t)nb);
    tail_store(es, eoff, st, tf, e, nb);

    ops->sar_range(x + t0, hma, hma3, nb, t->fee, &t->sar[k], bar0, sink, (uint32_t)k);
}

/* ---- one bar ------------------------------------------------------------ */

/* Moves the live entries [f + 2, f + wmax] down to [2, wmax] (h = 0). */
static void slide(struct tw__nset *sets, size_t n, size_t st, size_t f)
{
    for (size_t s = 0; s < n; s++) {
        size_t live = (size_t)sets[s].wmax[0] - 1;
        if (live)
            memmove(sets[s].ring + 2 * st, sets[s].ring + (f + 2) * st,
                    live * st * sizeof(double));
    }
}

void tw__tile_after_wide(struct tw__tile *t)
{
    t->f = 0;
}

size_t tw__tile_bar(struct tw__tile *t, const double *x_now, int64_t bar, uint32_t *changed,
                    const struct tw__trade_sink *sink)
{
    const struct tw__exact_ops *ops = t->ops;
    const size_t st = (size_t)TW_NSET * ops->vl;
    TW_ASSERT(t->cset && t->slack > 0);
    if (t->f == t->slack) {
        slide(t->dset, t->n_dset, st, t->f);
        slide(t->eset, t->n_eset, st, t->f);
        t->f = 0;
    }
    const size_t h = ++t->f, fo = h * st;
    ops->narrow_bcast(t->cset, t->n_cset, x_now, t->wt);
    const struct tw__nlane *nl = t->nl;
    for (size_t k = 0; k < t->n_combos; k++) {
        const double *const *cw = nl[k].cw;
        nl[k].dnext[fo] = 2.0 * *cw[0] - *cw[1];
        nl[k].enext[fo] = (3.0 * *cw[2] - *cw[3]) - *cw[4];
    }
    ops->narrow_ring(t->dset, t->n_dset, h, t->wt);
    ops->narrow_ring(t->eset, t->n_eset, h, t->wt);

    size_t n_changed = 0;
    const double close = x_now[0];
    for (size_t k = 0; k < t->n_combos; k++) {
        double v = *nl[k].hma3 - *nl[k].hma;
        /* The sign of v; 0 for NaN and 0.0, which hold the position. */
        int s = (v > 0.0) - (v < 0.0);
        struct tw__sar_state *sr = &t->sar[k];
        if (s == 0 || sr->pos == s)
            continue;
        tw__sar_act(sr, s, close, bar, t->fee, sink, (uint32_t)k);
        if (changed)
            changed[n_changed] = (uint32_t)k;
        n_changed++;
    }
    return n_changed;
}
