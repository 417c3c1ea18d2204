/* The clock module: the only place in the project that reads a clock
 * (include/tickwire/clock.h). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <time.h>

#include "tickwire/clock.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TW_HAVE_TSC 1
#else
#define TW_HAVE_TSC 0
#endif

static int64_t read_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t tw_clock_now_ns(void) { return read_ns(CLOCK_MONOTONIC); }
int64_t tw_clock_epoch_ns(void) { return read_ns(CLOCK_REALTIME); }
int64_t tw_clock_thread_cpu_ns(void) { return read_ns(CLOCK_THREAD_CPUTIME_ID); }

int64_t tw_clock_epoch_offset_ns(void)
{
    /* Bracket the realtime read by two monotonic reads and take their
     * middle, so the offset is not skewed by the read itself. */
    int64_t a = tw_clock_now_ns();
    int64_t e = tw_clock_epoch_ns();
    int64_t b = tw_clock_now_ns();
    return e - (a + (b - a) / 2);
}

void tw_clock_sleep_ns(int64_t ns)
{
    if (ns <= 0)
        return;
    struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int tw_tsc_invariant(void)
{
#if TW_HAVE_TSC
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    __cpuid(0x80000007u, a, b, c, d);
    return (d >> 8) & 1;
#else
    return 0;
#endif
}

/* One (tsc, monotonic ns) pair: of a few tries, the one whose two
 * monotonic reads around the TSC read were closest; ns is their middle. */
static void sample(uint64_t *tsc, int64_t *ns)
{
    int64_t best = INT64_MAX;
    *tsc = 0;
    *ns = 0;
    for (int i = 0; i < 16; i++) {
        int64_t a = tw_clock_now_ns();
        uint64_t t = tw_tsc_read();
        int64_t b = tw_clock_now_ns();
        if (b - a < best) {
            best = b - a;
            *tsc = t;
            *ns = a + (b - a) / 2;
        }
    }
}

static void identity(tw_tsc_clock *c)
{
    c->tsc0 = 0;
    c->ns0 = 0;
    c->mult = 1ull << 32;
    c->hz = 1e9;
}

int tw_tsc_calibrate(tw_tsc_clock *c, int64_t interval_ns, tw_error *err)
{
    if (interval_ns < 1000000)
        return tw__err(err, -EINVAL, "tsc calibration interval %lld ns is below 1 ms",
                       (long long)interval_ns);
    *c = (tw_tsc_clock){ .err_ppm = NAN };
    c->invariant = tw_tsc_invariant();
    c->epoch_offset_ns = tw_clock_epoch_offset_ns();
    if (!TW_HAVE_TSC) {
        identity(c);
        return 0;
    }
    uint64_t t0, t1;
    int64_t n0, n1;
    sample(&t0, &n0);
    tw_clock_sleep_ns(interval_ns);
    sample(&t1, &n1);
    if (t1 <= t0 || n1 <= n0)
        return tw__err(err, -ENOTSUP, "the TSC did not advance over %lld ns (%llu -> %llu)",
                       (long long)interval_ns, (unsigned long long)t0, (unsigned long long)t1);
    c->tsc0 = t1;
    c->ns0 = n1;
    c->hz = (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
    c->mult = (uint64_t)llround(4294967296.0 * 1e9 / c->hz);
    return 0;
}

double tw_tsc_measure_error(tw_tsc_clock *c, int64_t interval_ns)
{
    uint64_t t;
    int64_t n;
    if (interval_ns > 0)
        tw_clock_sleep_ns(interval_ns);
    sample(&t, &n);
    int64_t real = n - c->ns0;
    int64_t tsc = tw_tsc_to_ns(c, t) - c->ns0;
    c->err_interval_ns = real;
    c->err_ppm = real > 0 ? (double)(tsc - real) * 1e6 / (double)real : NAN;
    return c->err_ppm;
}

uint64_t tw_tsc_ticks(const tw_tsc_clock *c, uint64_t ns)
{
    return (uint64_t)((double)ns * c->hz / 1e9 + 0.5);
}

static tw_tsc_clock g_default;
static pthread_once_t g_default_once = PTHREAD_ONCE_INIT;

static void default_init(void)
{
    if (tw_tsc_calibrate(&g_default, 20000000, NULL) != 0) {
        g_default = (tw_tsc_clock){ .err_ppm = NAN };
        identity(&g_default);
        g_default.epoch_offset_ns = tw_clock_epoch_offset_ns();
    }
}

const tw_tsc_clock *tw_tsc_default(void)
{
    pthread_once(&g_default_once, default_init);
    return &g_default;
}
