/* The scalar reference kernel, written line for line from kernel.md.  Every
 * other implementation is tested for bit-identity against this file. */
#include <math.h>

#include "kernel/kernel_internal.h"

void tw_wma(const double *x, size_t n, int64_t w, double *out)
{
    const size_t ws = (size_t)w;
    const double den = (double)w * (double)(w + 1) / 2.0;
    for (size_t i = 0; i < n && i + 1 < ws; i++)
        out[i] = NAN;
    for (size_t i = ws - 1; i < n; i++) {
        double num = 0.0;
        for (size_t j = 0; j < ws; j++)
            num += x[i - j] * (double)(w - (int64_t)j);
        out[i] = num / den;
    }
}

void tw__sar(const double *close, const double *hma, const double *hma3,
             size_t n, double fee, double *pnl_out, int64_t *trades_out)
{
    int pos = 0;
    double entry = 0.0, pnl = 0.0;
    int64_t trades = 0;

    for (size_t i = 0; i < n; i++) {
        double v = hma3[i] - hma[i];
        if (isnan(v) || v == 0.0)
            continue;
        int s = v > 0.0 ? 1 : -1;
        if (pos == 0) {
            pos = s;
            entry = close[i];
            continue;
        }
        if (s != pos) {
            double r = pos == 1 ? (close[i] / entry - 1.0) * 100.0
                                : (1.0 - close[i] / entry) * 100.0;
            pnl = pnl + (r - fee);
            trades += 1;
            pos = s;
            entry = close[i];
        }
    }
    *pnl_out = pnl;
    *trades_out = trades;
}

void tw__backtest_scalar(const double *close, size_t n, const int64_t *c,
                         double fee, double *scratch, double *pnl,
                         int64_t *trades)
{
    double *a = scratch, *b = scratch + n, *t = scratch + 2 * n;
    double *hma = scratch + 3 * n, *hma3 = scratch + 4 * n;

    tw_wma(close, n, c[TW_H_HALF], a);
    tw_wma(close, n, c[TW_H_FULL], b);
    for (size_t i = 0; i < n; i++)
        t[i] = 2.0 * a[i] - b[i];
    tw_wma(t, n, c[TW_H_SQRT], hma);

    double *p3 = a, *p2 = b, *e = t;
    tw_wma(close, n, c[TW_T_THIRD], p3);
    tw_wma(close, n, c[TW_T_HALF], p2);
    tw_wma(close, n, c[TW_T_FULL], hma3); /* p1, reused below as the output */
    for (size_t i = 0; i < n; i++)
        e[i] = (3.0 * p3[i] - p2[i]) - hma3[i];
    tw_wma(e, n, c[TW_T_FULL], hma3);

    tw__sar(close, hma, hma3, n, fee, pnl, trades);
}
