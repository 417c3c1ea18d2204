/* The one clock module of the project (live.md, "Threads, processes and
 * rings"; STYLE.md, "Layout").  Every clock read of the library, the tools
 * and the benchmarks goes through here:
 *
 *  - tw_clock_now_ns(): CLOCK_MONOTONIC in ns.  What protocol code (TCP,
 *    FIX session timers) is given as `now_ns`.
 *  - tw_clock_epoch_ns(): CLOCK_REALTIME in ns since the Unix epoch.  What
 *    FIX SendingTime is built from (`epoch_ns`).
 *  - the TSC: tw_tsc_read() on the hot path, converted to monotonic ns with
 *    a tw_tsc_clock calibrated against CLOCK_MONOTONIC (a multiply and a
 *    shift, no division), with the calibration error measured over a second
 *    interval and reported in ppm.
 *
 * Protocol code never calls these itself: the loop that drives it does and
 * passes the value in, which is what keeps simulation deterministic. */
#ifndef TICKWIRE_CLOCK_H
#define TICKWIRE_CLOCK_H

#include "tickwire/common.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* CLOCK_MONOTONIC, ns.  Cannot fail on Linux. */
int64_t tw_clock_now_ns(void);
/* CLOCK_REALTIME, ns since 1970-01-01T00:00:00Z. */
int64_t tw_clock_epoch_ns(void);
/* CPU time of the calling thread, ns (for benchmarks that want to leave
 * out time the thread was not running). */
int64_t tw_clock_thread_cpu_ns(void);
/* epoch_ns - now_ns sampled now: add it to a monotonic time to get the
 * wall-clock time (how a driver gives the FIX session its epoch time). */
int64_t tw_clock_epoch_offset_ns(void);
/* Sleeps at least ns (restarting after signals). */
void tw_clock_sleep_ns(int64_t ns);

/* Raw time stamp counter.  No serialisation: stamps on the hot path want
 * the cheapest read.  Where there is no TSC it is monotonic ns. */
static inline uint64_t tw_tsc_read(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return (uint64_t)tw_clock_now_ns();
#endif
}

/* 1 if the CPU says its TSC is invariant (constant rate in every P-, C-
 * and T-state: CPUID 0x80000007 EDX bit 8), else 0. */
int tw_tsc_invariant(void);

/* A TSC calibrated against CLOCK_MONOTONIC: ns = ns0 + ((tsc - tsc0) *
 * mult) >> 32.  Plain data: copy it freely, share it read-only across
 * threads (and processes: it holds no pointer). */
typedef struct tw_tsc_clock {
    uint64_t tsc0;          /* a TSC reading ... */
    int64_t ns0;            /* ... and the monotonic ns at the same moment */
    uint64_t mult;          /* ns per tick, 32.32 fixed point */
    double hz;              /* ticks per second */
    double err_ppm;         /* measured drift against CLOCK_MONOTONIC over
                               err_interval_ns; NaN until measured */
    int64_t err_interval_ns;
    int64_t epoch_offset_ns; /* epoch - monotonic at calibration */
    int invariant;          /* tw_tsc_invariant() at calibration */
    int pad_;
} tw_tsc_clock;

/* Calibrates c over interval_ns (>= 1 ms; 20-100 ms is plenty) by pairing
 * TSC reads with CLOCK_MONOTONIC reads, each pair taken where the two
 * monotonic reads around the TSC read are closest.  Sleeps for the
 * interval.  Returns 0, -EINVAL (interval), or -ENOTSUP with err naming
 * why (the TSC did not advance, or ran backwards). */
int tw_tsc_calibrate(tw_tsc_clock *c, int64_t interval_ns, tw_error *err);

/* Measures c's error over a further interval_ns (sleeping): the TSC's
 * idea of the elapsed time against CLOCK_MONOTONIC's, in ppm (positive:
 * the TSC clock runs fast).  Stores it in c->err_ppm and returns it. */
double tw_tsc_measure_error(tw_tsc_clock *c, int64_t interval_ns);

/* A process-wide clock, calibrated over 20 ms on first use (thread-safe,
 * once).  Never NULL; on a CPU without a usable TSC it is the identity on
 * monotonic ns. */
const tw_tsc_clock *tw_tsc_default(void);

/* TSC ticks to monotonic ns, and tick deltas to ns and back. */
static inline int64_t tw_tsc_to_ns(const tw_tsc_clock *c, uint64_t tsc)
{
    uint64_t d = tsc - c->tsc0;
    if (TW_UNLIKELY((int64_t)d < 0)) /* a stamp taken before tsc0 */
        return c->ns0 - (int64_t)(((unsigned __int128)(c->tsc0 - tsc) * c->mult) >> 32);
    return c->ns0 + (int64_t)(((unsigned __int128)d * c->mult) >> 32);
}
static inline uint64_t tw_tsc_delta_ns(const tw_tsc_clock *c, uint64_t ticks)
{
    return (uint64_t)(((unsigned __int128)ticks * c->mult) >> 32);
}
/* ns to ticks (a division: for thresholds computed once, not per event). */
uint64_t tw_tsc_ticks(const tw_tsc_clock *c, uint64_t ns);

#ifdef __cplusplus
}
#endif
#endif
