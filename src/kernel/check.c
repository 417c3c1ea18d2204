#include <errno.h>
#include <math.h>

#include "kernel/kernel_internal.h"

static const char *const window_names[TW_COMBO_WINDOWS] = {
    "h_half", "h_full", "h_sqrt", "t_third", "t_half", "t_full",
};

int tw__check_prices(const double *close, size_t n_bars, tw_error *err)
{
    if (n_bars == 0)
        return tw__err(err, -TW_ENODATA, "no bars (n = 0)");
    for (size_t i = 0; i < n_bars; i++) {
        double c = close[i];
        /* NaN is a gap and allowed; everything else must be finite and > 0. */
        if (!isnan(c) && !(c > 0.0 && isfinite(c)))
            return tw__err(err, -TW_EBADPRICE,
                           "bad price at bar %zu: %g (must be > 0 and finite, or NaN)", i, c);
    }
    return 0;
}

int tw__check_windows(const int64_t *combos, size_t n_combos, tw_error *err)
{
    if (n_combos == 0)
        return tw__err(err, -TW_ENODATA, "no combos");
    for (size_t k = 0; k < n_combos; k++)
        for (int j = 0; j < TW_COMBO_WINDOWS; j++) {
            int64_t w = combos[k * TW_COMBO_WINDOWS + (size_t)j];
            if (w < TW_WINDOW_MIN || w > TW_WINDOW_MAX)
                return tw__err(err, -TW_EBADWINDOW,
                               "combo %zu: %s = %lld outside [1, 100000]", k,
                               window_names[j], (long long)w);
        }
    return 0;
}

int tw_sweep_check(const double *close, size_t n_bars, const int64_t *combos,
                   size_t n_combos, tw_error *err)
{
    /* Same order of checks as always: n, combos count, prices, windows. */
    if (n_bars == 0)
        return tw__err(err, -TW_ENODATA, "no bars (n = 0)");
    if (n_combos == 0)
        return tw__err(err, -TW_ENODATA, "no combos");
    int rc = tw__check_prices(close, n_bars, err);
    return rc ? rc : tw__check_windows(combos, n_combos, err);
}
