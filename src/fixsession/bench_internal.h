/* Builder benchmark hooks (src/fixsession/bench.c) for bench programs and
 * `tickwire bench fix`.  Not for trading code. */
#ifndef TW_FIXSESSION_BENCH_INTERNAL_H
#define TW_FIXSESSION_BENCH_INTERNAL_H

#include "tickwire/fix_build.h"

/* Median ns to build one NewOrderSingle (7 runs of 200,000). */
double tw__bench_fix_build_ns(void);
/* Builds the benchmark's NewOrderSingle; returns tw_fix_build_end()'s code. */
int tw__bench_fix_build_one(tw_fix_template *t, char *buf, size_t cap, uint64_t seq,
                            int64_t now_ns, const char **msg, size_t *len);

#endif
