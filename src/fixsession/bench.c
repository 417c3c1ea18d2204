/* Builder timing for `tickwire bench fix` (the fix part's CLI) and
 * bench/fix_build: kept in the library so any bench program can call it.
 * Not used on any trading path. */
#include <string.h>
#include <time.h>

#include "fixsession/bench_internal.h"

/* One NewOrderSingle as a typical order entry gateway sends it. */
int tw__bench_fix_build_one(tw_fix_template *t, char *buf, size_t cap, uint64_t seq,
                            int64_t now_ns, const char **msg, size_t *len)
{
    tw_fix_wbuf w;
    tw_fix_build_begin(&w, t, buf, cap, "D", seq, now_ns);
    tw_fix_put_u64(&w, 11, seq);
    tw_fix_put_char(&w, 21, '1');
    tw_fix_put_str(&w, 55, "EURUSD", 6);
    tw_fix_put_char(&w, 54, '1');
    tw_fix_put_ts(&w, 60, now_ns, 3);
    tw_fix_put_i64(&w, 38, 1000000);
    tw_fix_put_char(&w, 40, '2');
    tw_fix_put_fixed(&w, 44, 108725, 5);
    tw_fix_put_char(&w, 59, '0');
    return tw_fix_build_end(&w, msg, len);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over 7 runs of 200,000 builds, ns per message. */
double tw__bench_fix_build_ns(void)
{
    tw_fix_template t;
    TW_VERIFY(tw_fix_template_init(&t, "FIX.4.4", "TICKWIRE", "VENUE", NULL, NULL, 3, NULL) == 0);
    static char buf[512];
    double runs[7];
    int64_t now = 1767323045000000000LL;
    uint64_t seq = 1;
    volatile size_t sink = 0;
    for (int r = 0; r < 7; r++) {
        const int n = 200000;
        double t0 = now_s();
        for (int i = 0; i < n; i++) {
            const char *m;
            size_t len;
            /* 1 us apart: the formatted second is reused, as in real flow. */
            now += 1000;
            TW_VERIFY(tw__bench_fix_build_one(&t, buf, sizeof(buf), seq++, now, &m, &len) == 0);
            sink += len + (unsigned char)m[len - 2];
        }
        runs[r] = (now_s() - t0) * 1e9 / n;
    }
    (void)sink;
    qsort(runs, 7, sizeof(runs[0]), cmp_d);
    return runs[3];
}
