/* Order statistics for the benchmarks: sorting a run's samples and
 * reading its median and percentiles, one definition for every bench/
 * part (they quote medians and ratios; README.md, "Benchmarks").
 *
 * The samples are sorted in place.  A median of an even count is the mean
 * of the two middle samples; a percentile is the sample at floor(n * p)
 * (at most the last), the rank every percentile row in bench/ prints. */
#ifndef TW_TOOLS_STATS_H
#define TW_TOOLS_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Ascending order in place. */
void tw__sort_f64(double *v, size_t n);
void tw__sort_u64(uint64_t *v, size_t n);

/* The median of v[0..n) (sorted in place first); 0 when n is 0. */
double tw__median_f64(double *v, size_t n);
double tw__median_u64(uint64_t *v, size_t n);

/* The p-quantile (0 <= p <= 1) of v[0..n), which must already be sorted:
 * v[min(floor(n * p), n - 1)]; 0 when n is 0. */
double tw__pct_f64(const double *v, size_t n, double p);
uint64_t tw__pct_u64(const uint64_t *v, size_t n, double p);

#endif
