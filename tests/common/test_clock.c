/* The clock module: monotonic and epoch reads, TSC calibration and
 * conversion.  Asserts properties that hold on any machine, never a
 * timing bound. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tickwire/clock.h"
#include "tw_check.h"

static void test_reads(void)
{
    int64_t a = tw_clock_now_ns(), b = tw_clock_now_ns();
    CHECK(a > 0 && b >= a);
    /* Epoch time after 2020-01-01 and the offset consistent with it. */
    int64_t e = tw_clock_epoch_ns();
    CHECK(e > 1577836800LL * 1000000000LL);
    int64_t off = tw_clock_epoch_offset_ns();
    int64_t now = tw_clock_now_ns();
    int64_t e2 = tw_clock_epoch_ns();
    CHECKF(llabs(now + off - e2) < 1000000000LL, "offset %lld", (long long)off);
    int64_t s0 = tw_clock_now_ns();
    tw_clock_sleep_ns(2000000);
    CHECK(tw_clock_now_ns() - s0 >= 2000000);
    CHECK(tw_clock_thread_cpu_ns() > 0);
}

static void test_calibrate(void)
{
    tw_tsc_clock c;
    tw_error err = { 0 };
    CHECK(tw_tsc_calibrate(&c, 10, &err) == -EINVAL);
    REQUIRE(tw_tsc_calibrate(&c, 20000000, &err) == 0);
    CHECK(c.hz > 1e6);
    CHECK(isnan(c.err_ppm));
    /* The TSC's idea of elapsed time tracks CLOCK_MONOTONIC: a calibration
     * off by more than 1% would be a broken conversion, not VM noise. */
    double ppm = tw_tsc_measure_error(&c, 20000000);
    CHECKF(fabs(ppm) < 10000.0, "error %.1f ppm", ppm);
    CHECK(c.err_interval_ns >= 20000000);
    /* Conversion is monotonic and exact at tsc0; deltas agree. */
    CHECK(tw_tsc_to_ns(&c, c.tsc0) == c.ns0);
    uint64_t t1 = tw_tsc_read();
    uint64_t t2 = tw_tsc_read();
    CHECK(tw_tsc_to_ns(&c, t2) >= tw_tsc_to_ns(&c, t1));
    CHECK(tw_tsc_to_ns(&c, c.tsc0 - 1000) <= c.ns0);
    uint64_t ticks = tw_tsc_ticks(&c, 1000000);
    uint64_t back = tw_tsc_delta_ns(&c, ticks);
    CHECKF(back > 999000 && back < 1001000, "1 ms -> %llu ticks -> %llu ns",
           (unsigned long long)ticks, (unsigned long long)back);
    int64_t mono = tw_clock_now_ns();
    int64_t tsc_ns = tw_tsc_to_ns(&c, tw_tsc_read());
    CHECKF(llabs(tsc_ns - mono) < 50000000LL, "tsc %lld vs monotonic %lld",
           (long long)tsc_ns, (long long)mono);
}

static void test_default(void)
{
    const tw_tsc_clock *d = tw_tsc_default();
    CHECK(d != NULL);
    CHECK(d == tw_tsc_default());
    CHECK(d->hz > 1e6);
}

int main(void)
{
    test_reads();
    test_calibrate();
    test_default();
    return tw_check_done("common_clock");
}
