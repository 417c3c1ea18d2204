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

/* ---- the exact kernel (exact_impl.h, one instance per ISA) -------------- */

/* Windows per lockstep group (exact_impl.h). */
#define TW_GROUP 8

/* wt[c] == (double)c for c in [0, TW_WINDOW_MAX]: weights are broadcast
 * from memory so that they cost a load, not an arithmetic instruction. */
extern const double *tw__weights(void);

/* The stop-and-reverse loop's state between bar ranges. */
struct tw__sar_state {
    int pos; /* 0 flat, +1 long, -1 short */
    double entry;
    double pnl;
    int64_t trades;
};

struct tw__exact_ops {
    /* WMA of x for the TW_GROUP windows w[] (sorted, largest first;
     * duplicates allowed), for the outputs anchored at k0 = i - w + 1 in
     * [kb, ke).  Writes out[g][k0 + w[g] - 1]; the NaN prefix is the
     * caller's. */
    void (*wma_group)(const double *x, size_t n, const int64_t *w,
                      double *const *out, const double *wt, size_t kb, size_t ke);
    /* The whole of WMA(x, w) into out, NaN prefix included (== tw_wma). */
    void (*wma_one)(const double *x, size_t n, int64_t w, double *out,
                    const double *wt);
    /* Outputs [ib, ie) of WMA(x, w); x holds every input from 0. */
    void (*wma_range)(const double *x, int64_t w, double *out, const double *wt,
                      size_t ib, size_t ie);
    void (*combine_d)(const double *a, const double *b, size_t n, double *d);
    void (*combine_e)(const double *p3, const double *p2, const double *p1,
                      size_t n, double *e);
    /* == tw__sar. */
    void (*sar)(const double *close, const double *hma, const double *hma3,
                size_t n, double fee, double *pnl, int64_t *trades);
    /* Bars [ib, ie) of the loop; st carries the state across ranges. */
    void (*sar_range)(const double *close, const double *hma, const double *hma3,
                      size_t ib, size_t ie, double fee, struct tw__sar_state *st);
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

/* tw_sweeper_create() with an explicit bound on the window cache (bytes);
 * tests use a small one to exercise the batching path. */
int tw__sweeper_create_ex(tw_sweeper **out, size_t max_bars,
                          const tw_sweep_opts *opts, size_t cache_bytes);

#endif
