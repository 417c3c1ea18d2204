/* The benchmarks' NewOrderSingle build (nos_build.h). */
#include <string.h>

#include "fix_build/nos_build.h"
#include "tickwire/clock.h"

int tw__bench_nos_build(tw_fix_template *t, char *buf, size_t cap, uint64_t seq,
                        int64_t epoch_ns, const char **msg, size_t *len)
{
    /* The quantity and price as an order's would be: values the compiler
     * cannot see, so that they are formatted at run time as snprintf
     * formats them. */
    int64_t qty = 1000000, px = 108725;
    __asm__("" : "+r"(qty), "+r"(px));
    tw_fix_wbuf w;
    tw_fix_build_begin(&w, t, buf, cap, "D", seq, epoch_ns);
    tw_fix_put_u64(&w, 11, seq);
    tw_fix_put_char(&w, 21, '1');
    tw_fix_put_str(&w, 55, "EURUSD", 6);
    tw_fix_put_char(&w, 54, '1');
    tw_fix_put_ts(&w, 60, epoch_ns, 3);
    tw_fix_put_i64(&w, 38, qty);
    tw_fix_put_char(&w, 40, '2');
    tw_fix_put_fixed(&w, 44, px, 5);
    tw_fix_put_char(&w, 59, '0');
    return tw_fix_build_end(&w, msg, len);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tw__bench_nos_build_ns(int runs, long n, size_t *len_out)
{
    tw_fix_template t;
    TW_VERIFY(tw_fix_template_init(&t, "FIX.4.4", "TICKWIRE", "VENUE", NULL, NULL, 3, NULL) == 0);
    static char buf[512];
    double per[64];
    if (runs > 64)
        runs = 64;
    int64_t now = 1767323045000000000LL;
    uint64_t seq = 1;
    size_t len = 0;
    volatile size_t sink = 0;
    for (int r = 0; r < runs; r++) {
        int64_t t0 = tw_clock_thread_cpu_ns();
        for (long i = 0; i < n; i++) {
            const char *m;
            now += 1000;
            TW_VERIFY(tw__bench_nos_build(&t, buf, sizeof(buf), seq++, now, &m, &len) == 0);
            sink += len + (unsigned char)m[len - 2];
        }
        per[r] = (double)(tw_clock_thread_cpu_ns() - t0) / (double)n;
    }
    (void)sink;
    qsort(per, (size_t)runs, sizeof(per[0]), cmp_d);
    if (len_out)
        *len_out = len;
    return per[runs / 2];
}
