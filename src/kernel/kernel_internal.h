/* Shared by the files of the kernel part only. */
#ifndef TW_KERNEL_INTERNAL_H
#define TW_KERNEL_INTERNAL_H

#include "tickwire/kernel.h"

/* Stop-and-reverse over precomputed hma and hma3 (kernel.md). */
void tw__sar(const double *close, const double *hma, const double *hma3,
             size_t n, double fee, double *pnl, int64_t *trades);

/* One combo with the scalar reference; scratch holds 5 * n doubles. */
void tw__backtest_scalar(const double *close, size_t n, const int64_t *combo,
                         double fee, double *scratch, double *pnl,
                         int64_t *trades);

/* ---- the stop-and-reverse state and its trade log ---------------------- */

/* The loop's state between bars (kernel.md "Stop-and-reverse loop"). */
struct tw__sar_state {
    int32_t pos;       /* 0 flat, +1 long, -1 short */
    int64_t entry_bar; /* bar of the entry (-1 while flat) */
    double entry;      /* close at the entry */
    double pnl;
    int64_t trades;
};

/* Where closed trades go (NULL: nowhere). */
struct tw__trade_sink {
    tw_trade_fn fn;
    void *ctx;
};

static inline void tw__sar_reset(struct tw__sar_state *st)
{
    st->pos = 0;
    st->entry_bar = -1;
    st->entry = 0.0;
    st->pnl = 0.0;
    st->trades = 0;
}

/* The loop's action on a bar whose sign s is opposite to the position, or
 * the first bar with a sign: close (booking r, pnl and trades with the
 * reference's own expressions) and reverse, or enter from flat. */
static inline void tw__sar_act(struct tw__sar_state *st, int s, double price, int64_t bar,
                               double fee, const struct tw__trade_sink *sink, uint32_t combo)
{
    if (st->pos != 0) {
        double r = st->pos == 1 ? (price / st->entry - 1.0) * 100.0
                                : (1.0 - price / st->entry) * 100.0;
        st->pnl = st->pnl + (r - fee);
        st->trades += 1;
        if (sink) {
            tw_trade t = {.combo = combo, .entry_bar = st->entry_bar, .exit_bar = bar,
                          .entry_price = st->entry, .exit_price = price, .r = r,
                          .side = st->pos};
            sink->fn(sink->ctx, &t);
        }
    }
    st->pos = s;
    st->entry = price;
    st->entry_bar = bar;
}

/* ---- the exact kernel (exact_impl.h, one instance per ISA) -------------- */

/* Windows per lockstep group (exact_impl.h). */
#define TW_GROUP 8
/* Vectors per set of the one-bar kernel (exact_impl.h, "one bar"). */
#define TW_NSET 8
/* Lanes of the widest vector (AVX-512). */
#define TW_VL_MAX 8

/* wt[c] == (double)c for c in [0, TW_WINDOW_MAX]: weights are broadcast
 * from memory so that they cost a load, not an arithmetic instruction. */
extern const double *tw__weights(void);

/* One set of the one-bar kernel: TW_NSET vectors of VL lanes, each lane a
 * window of close or the d or e window of a combo.  Windows are sorted
 * largest first across the whole set, wmin[k] >= wmax[k + 1]; a lane of
 * window 0 is padding.
 *
 * Each lane's inputs are kept in the set's ring skewed by the lane's own
 * window: the input of bar t goes to entry h(t) + w, where h counts the
 * bars (the tile's f, reset by a slide).  Then at bar i entry h(i) + c
 * holds, for every lane at once, the input of weight c of that lane's
 * output (x[i - w + c]: kernel.md's term j = w - c), so one step of the
 * sum loads one vector and broadcasts one weight for all lanes.  After a
 * bar the live entries are [h + 2, h + wmax[0]]. */
struct tw__nset {
    const double *win; /* [TW_NSET][VL]: the lane windows (0 for padding) */
    const double *den; /* [TW_NSET][VL]: w (w + 1) / 2 (1 for padding) */
    double *ring;      /* [wmax[0] + 1 + slack][TW_NSET][VL] */
    double *out;       /* [TW_NSET][VL] */
    int64_t wmax[TW_NSET], wmin[TW_NSET]; /* largest and smallest lane window */
};

struct tw__exact_ops {
    unsigned vl; /* lanes per vector */
    /* Outputs [t0, t1) of WMA(x, w[g]) for TW_GROUP windows (sorted,
     * largest first; out[g] NULL: padding, w[g] == 1) into out[g][i - t0].
     * x is indexed by bar, readable on [t0 - w[0] + 1, avail); the vector
     * loop reads ahead of t1 up to avail - 1. */
    void (*wma_group_block)(const double *x, ptrdiff_t avail, const int64_t *w,
                            double *const *out, const double *wt, ptrdiff_t t0, ptrdiff_t t1);
    /* The whole of WMA(x, w) into out, NaN prefix included (== tw_wma). */
    void (*wma_one)(const double *x, size_t n, int64_t w, double *out, const double *wt);
    /* Outputs [ib, ie) of WMA(x, w) into out[i - ib]; x indexed by bar,
     * readable from max(ib - w + 1, 0). */
    void (*wma_range)(const double *x, int64_t w, double *out, const double *wt,
                      ptrdiff_t ib, ptrdiff_t ie);
    void (*combine_d)(const double *a, const double *b, size_t n, double *d);
    void (*combine_e)(const double *p3, const double *p2, const double *p1,
                      size_t n, double *e);
    /* Bars [0, nb) of the loop (bar 0 is bar0 of the series); st carries
     * the state across calls; closed trades go to sink (if not NULL) as
     * combo `combo`. */
    void (*sar_range)(const double *close, const double *hma, const double *hma3,
                      size_t nb, double fee, struct tw__sar_state *st, int64_t bar0,
                      const struct tw__trade_sink *sink, uint32_t combo);
    /* The one-bar kernel over n_sets sets of close windows, every lane
     * reading xb[-j] (xb the newest close, the series' earlier bars or NaN
     * before it).  wt: tw__weights(). */
    void (*narrow_bcast)(const struct tw__nset *sets, size_t n_sets, const double *xb,
                         const double *wt);
    /* The one-bar kernel over n_sets sets of d or e, each reading its ring
     * at the bar's h = f (struct tw__nset). */
    void (*narrow_ring)(const struct tw__nset *sets, size_t n_sets, size_t f, const double *wt);
};

extern const struct tw__exact_ops tw__exact_ops_generic;
extern const struct tw__exact_ops tw__exact_ops_avx2;
extern const struct tw__exact_ops tw__exact_ops_avx512;

/* The ops for an ISA (not AUTO), or NULL if this build or CPU lacks it. */
const struct tw__exact_ops *tw__exact_ops_for(tw_isa isa);

/* The two halves of tw_sweep_check(): prices (n_bars >= 1, NaN or finite
 * and > 0) and windows (n_combos >= 1, each in [1, 100000]). */
int tw__check_prices(const double *close, size_t n_bars, tw_error *err);
int tw__check_windows(const int64_t *combos, size_t n_combos, tw_error *err);

/* tw_sweeper_create() with an explicit bound on a bound dataset's window
 * cache (bytes; overrides opts->cache_bytes); tests use a small one. */
int tw__sweeper_create_ex(tw_sweeper **out, size_t max_bars,
                          const tw_sweep_opts *opts, size_t cache_bytes);

/* Bytes of the exact kernel's memory a sweeper holds now (plan and
 * state; not a bound dataset's cache), for tests. */
size_t tw__sweeper_mem_bytes(const tw_sweeper *s);

/* tw_stream_init() on a given ISA (tests run every one). */
int tw__stream_init_isa(tw_stream *st, size_t mem_bytes, const int64_t *combos, size_t n_combos,
                        double fee, tw_isa isa, tw_error *err);

/* ---- the tiled kernel (tile.c) ------------------------------------------
 *
 * kernel.md "Blocks over time": the sweep walks the bars in blocks,
 * carrying per combo the last w - 1 inputs of its two passes over d and e
 * and its stop-and-reverse state.  A tile is that state plus the plan of
 * the grid (its distinct close windows and how the work is grouped), laid
 * out in memory sized from the grid and the block length, never from the
 * number of bars.  Blocks of TW_NARROW_BELOW bars or more run "wide" (SIMD
 * lanes over bars, per combo); shorter ones bar by bar with the one-bar
 * kernel (lanes over windows and combos).  Both read and write the same
 * state, so a series may be fed in any mix of block lengths and the
 * results are the same bits. */

#define TW_NARROW_BELOW 16
#define TW_RING_SLACK 64  /* entries a ring takes before it slides */

/* Phase A work of a wide block: `count` consecutive windows of the sorted
 * list from `first`, either one lockstep group or one window alone. */
struct tw__atask {
    uint32_t first, count;
    uint32_t group;  /* 1: lockstep group (count <= TW_GROUP), 0: count == 1 */
    uint32_t thread; /* static owner (sweeper) */
    uint64_t cost;
};

/* A combo as the one-bar kernel sees it, in one place: where its inputs
 * are and where its outputs go. */
struct tw__nlane {
    const double *cw[5];  /* its close-window outputs (h_half, h_full, t_third, t_half, t_full) */
    double *dnext, *enext; /* where its d and e go at h = 0 (struct tw__nset) */
    const double *hma, *hma3; /* its d and e outputs */
};

struct tw__tile {
    const struct tw__exact_ops *ops;
    const double *wt;
    double fee;
    size_t n_combos;
    const int64_t *combos;     /* [n_combos * 6] */
    /* Distinct close windows, largest first, and each combo's slots in
     * that list for h_half, h_full, t_third, t_half, t_full. */
    size_t n_win;
    int64_t *win;
    uint32_t *cslot;           /* [n_combos * 5] */
    int64_t wmax_c, wmax_d, wmax_e;
    uint32_t *dorder, *eorder; /* [n_combos]: combos by h_sqrt / t_full, largest first */
    size_t n_tasks;
    struct tw__atask *tasks;   /* [n_tasks] (wide phase A) */
    /* State. */
    struct tw__sar_state *sar; /* [n_combos] */
    uint32_t *dlane, *elane;   /* [n_combos]: lane of the combo in the d / e sets */
    struct tw__nlane *nl;      /* [n_combos] (one-bar kernel) */
    size_t n_dset, n_eset, n_cset;
    struct tw__nset *dset, *eset, *cset; /* cset: one-bar close sets (NULL: wide only) */
    double *dout, *eout, *cout;          /* the sets' outputs, contiguous */
    size_t slack;              /* ring slack (0: wide only) */
    size_t f;                  /* h of the last bar (bars since the rings' last slide) */
};

/* Bytes tw__tile_plan needs for a grid of n_combos (0 on overflow). */
size_t tw__tile_plan_bytes(size_t n_combos);
/* Plans a checked grid into mem (tw__tile_plan_bytes): distinct windows,
 * slots, orders, and the phase A tasks for blocks of block_bars.  Keeps
 * a pointer to combos. */
void tw__tile_plan(struct tw__tile *t, void *mem, const int64_t *combos, size_t n_combos,
                   size_t block_bars);
/* (Re)builds the phase A tasks for blocks of block_bars; skip[slot] != 0
 * (if skip is not NULL) leaves that window out. */
void tw__tile_tasks(struct tw__tile *t, size_t block_bars, const uint8_t *skip);
/* Bytes of state for a planned tile with ops' lanes; narrow: with the
 * one-bar kernel's tables and rings with slack (else tails only). */
size_t tw__tile_state_bytes(const struct tw__tile *t, const struct tw__exact_ops *ops,
                            int narrow);
/* Lays the state out in mem (tw__tile_state_bytes) and resets it: flat,
 * no bars seen, every carried input NaN (kernel.md: outputs before a
 * window's first full span are NaN). */
void tw__tile_state_init(struct tw__tile *t, void *mem, const struct tw__exact_ops *ops,
                         int narrow, double fee);
/* Resets the state of an initialised tile (a new series). */
void tw__tile_reset(struct tw__tile *t);

/* Where a wide block's close windows are: slot s's value for bar t0 is at
 * cache[s] + t0 when cache and cache[s] are set, else buf + s * stride. */
struct tw__view {
    double *buf;
    size_t stride;
    double *const *cache;
    ptrdiff_t t0;
};

static inline double *tw__view_ptr(const struct tw__view *v, size_t slot)
{
    if (v->cache && v->cache[slot])
        return v->cache[slot] + v->t0;
    return v->buf + slot * v->stride;
}

/* Doubles of scratch one thread needs for wide blocks of up to block_bars. */
size_t tw__tile_scratch(const struct tw__tile *t, size_t block_bars);
/* Phase A task `task` over positions [t0, t0 + nb) of x (readable on
 * [t0 - wmax_c + 1, avail)), into the view. */
void tw__tile_a_task(const struct tw__tile *t, size_t task, const double *x, ptrdiff_t avail,
                     ptrdiff_t t0, size_t nb, const struct tw__view *v);
/* Phase B of combo k over positions [t0, t0 + nb) of x, which are the
 * series' bars bar0, bar0 + 1, ...: its d and e passes from the view's
 * close windows and its stop-and-reverse loop over x[t0..]. */
void tw__tile_b_combo(struct tw__tile *t, size_t k, const double *x, ptrdiff_t t0, size_t nb,
                      const struct tw__view *v, double *scratch,
                      const struct tw__trade_sink *sink, int64_t bar0);
/* One bar with the one-bar kernel (narrow tile): x_now points at the bar's
 * close with every earlier bar of the series before it (or NaN padding,
 * wmax_c - 1 of them at least).  Writes the combos whose position changed,
 * ascending, to changed (if not NULL) and returns their number. */
size_t tw__tile_bar(struct tw__tile *t, const double *x_now, int64_t bar, uint32_t *changed,
                    const struct tw__trade_sink *sink);
/* After wide blocks on a narrow tile: the rings are re-based (f = 0: the
 * wide blocks write their tails for it). */
void tw__tile_after_wide(struct tw__tile *t);

/* The default block: one block's close windows (n_win x B doubles) in
 * about three quarters of this core's L2 (the rest for the block's other
 * data), a multiple of 64 bars in [64, 4096]. */
size_t tw__default_block(size_t n_win);

#endif
