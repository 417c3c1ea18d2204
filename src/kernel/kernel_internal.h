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

#endif
