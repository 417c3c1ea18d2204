/* Sweep driver.  (Initial single-threaded scalar version; the exact SIMD
 * kernel and the thread pool replace it.) */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "kernel/kernel_internal.h"

struct tw_sweeper {
    tw_sweep_opts opts;
    size_t max_bars;
    double *scratch;
};

void tw_sweep_opts_init(tw_sweep_opts *o)
{
    o->threads = 0;
    o->kernel = TW_KERNEL_EXACT;
    o->isa = TW_ISA_AUTO;
    o->fee = TW_FEE_DEFAULT;
}

tw_isa tw_isa_best(void) { return TW_ISA_SCALAR; }
int tw_isa_supported(tw_isa isa) { return isa == TW_ISA_SCALAR || isa == TW_ISA_AUTO; }
const char *tw_isa_name(tw_isa isa)
{
    switch (isa) {
    case TW_ISA_AUTO: return "auto";
    case TW_ISA_SCALAR: return "scalar";
    case TW_ISA_AVX2: return "avx2";
    case TW_ISA_AVX512: return "avx512";
    }
    return "?";
}

int tw_sweeper_create(tw_sweeper **out, size_t max_bars, const tw_sweep_opts *opts)
{
    tw_sweeper *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    if (opts)
        s->opts = *opts;
    else
        tw_sweep_opts_init(&s->opts);
    s->max_bars = max_bars;
    s->scratch = malloc(5 * (max_bars ? max_bars : 1) * sizeof(double));
    if (!s->scratch) {
        free(s);
        return -ENOMEM;
    }
    *out = s;
    return 0;
}

void tw_sweeper_destroy(tw_sweeper *s)
{
    if (!s)
        return;
    free(s->scratch);
    free(s);
}

int tw_sweeper_run(tw_sweeper *s, const double *close, size_t n_bars,
                   const int64_t *combos, size_t n_combos, double *pnl,
                   int64_t *trades, tw_error *err)
{
    int rc = tw_sweep_check(close, n_bars, combos, n_combos, err);
    if (rc)
        return rc;
    if (n_bars > s->max_bars)
        return tw__err(err, -E2BIG, "%zu bars exceed the sweeper's %zu", n_bars, s->max_bars);
    for (size_t k = 0; k < n_combos; k++)
        tw__backtest_scalar(close, n_bars, combos + k * TW_COMBO_WINDOWS, s->opts.fee,
                            s->scratch, pnl + k, trades + k);
    return 0;
}

int tw_sweep(const double *close, size_t n_bars, const int64_t *combos,
             size_t n_combos, const tw_sweep_opts *opts, double *pnl,
             int64_t *trades, tw_error *err)
{
    int rc = tw_sweep_check(close, n_bars, combos, n_combos, err);
    if (rc)
        return rc;
    tw_sweeper *s;
    rc = tw_sweeper_create(&s, n_bars, opts);
    if (rc)
        return tw__err(err, rc, "out of memory for %zu bars", n_bars);
    rc = tw_sweeper_run(s, close, n_bars, combos, n_combos, pnl, trades, err);
    tw_sweeper_destroy(s);
    return rc;
}
