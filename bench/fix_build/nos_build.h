/* The benchmarks' NewOrderSingle, built with the session template
 * (tickwire/fix_build.h): one copy for bench/fix_build and `tickwire bench
 * fix`, so both time the same message. */
#ifndef TW_BENCH_FIX_BUILD_NOS_BUILD_H
#define TW_BENCH_FIX_BUILD_NOS_BUILD_H

#include "tickwire/fix_build.h"

/* Builds the benchmark's NewOrderSingle (ClOrdID = seq, SendingTime and
 * TransactTime = epoch_ns) into buf; returns tw_fix_build_end()'s code
 * with *msg / *len set as it sets them. */
int tw__bench_nos_build(tw_fix_template *t, char *buf, size_t cap, uint64_t seq,
                        int64_t epoch_ns, const char **msg, size_t *len);

/* Median ns to build one, over `runs` runs of `n` builds with SendingTime
 * 1 us apart (so the formatted second is reused, as in real flow), timed
 * with the thread's CPU clock.  *len_out (may be NULL) gets the length. */
double tw__bench_nos_build_ns(int runs, long n, size_t *len_out);

#endif
