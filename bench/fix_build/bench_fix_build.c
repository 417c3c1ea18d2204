/* ns per NewOrderSingle build: tickwire's template builder against the
 * same message built with snprintf (the obvious C way) and, when built
 * with QuickFIX, against FIX::Message::toString().  Asserts the builder's
 * output (byte-identical to the snprintf one, frames with valid BodyLength
 * and CheckSum) before printing numbers.  Medians of 7 runs, thread CPU
 * time. */
#include <string.h>
#include <time.h>

#include "fix_build/nos_build.h"
#include "tickwire/clock.h"
#include "tickwire/fix.h"

#ifdef TW_HAVE_QUICKFIX
void tw_qf_build_loop(int n, char *out, size_t cap, size_t *len);
#endif

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The same message with snprintf: body first, then header and CheckSum. */
static size_t build_snprintf(char *out, size_t cap, uint64_t seq, int64_t now_ns)
{
    char body[256], ts[64], ts60[64];
    time_t sec = (time_t)(now_ns / 1000000000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    int ms = (int)(now_ns / 1000000 % 1000);
    snprintf(ts, sizeof(ts), "%04d%02d%02d-%02d:%02d:%02d.%03d", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
    memcpy(ts60, ts, sizeof(ts));
    int bl = snprintf(body, sizeof(body),
                      "35=D\x01" "49=TICKWIRE\x01" "56=VENUE\x01" "34=%llu\x01" "52=%s\x01"
                      "11=%llu\x01" "21=1\x01" "55=EURUSD\x01" "54=1\x01" "60=%s\x01"
                      "38=%lld\x01" "40=2\x01" "44=%lld.%05lld\x01" "59=0\x01",
                      (unsigned long long)seq, ts, (unsigned long long)seq, ts60,
                      (long long)1000000, (long long)(108725 / 100000),
                      (long long)(108725 % 100000));
    int n = snprintf(out, cap, "8=FIX.4.4\x01" "9=%d\x01%s", bl, body);
    unsigned sum = 0;
    for (int i = 0; i < n; i++)
        sum += (unsigned char)out[i];
    n += snprintf(out + n, cap - (size_t)n, "10=%03u\x01", sum & 255);
    return (size_t)n;
}

int main(void)
{
    tw_fix_template t;
    TW_VERIFY(tw_fix_template_init(&t, "FIX.4.4", "TICKWIRE", "VENUE", NULL, NULL, 3, NULL) == 0);
    static char a[512], b[512];
    int64_t now = 1767323045000000000LL;
    /* Correctness first: identical bytes for a range of seqs and times. */
    for (uint64_t seq = 1; seq < 5000; seq++) {
        const char *m;
        size_t len, skip;
        int64_t tns = now + (int64_t)seq * 123456789;
        TW_VERIFY(tw__bench_nos_build(&t, a, sizeof(a), seq, tns, &m, &len) == 0);
        size_t bl = build_snprintf(b, sizeof(b), seq, tns);
        TW_VERIFY(bl == len && memcmp(m, b, len) == 0);
        TW_VERIFY(tw_fix_frame(m, len, 0, &skip) == (int)len);
    }
    double tw_ns = tw__bench_nos_build_ns(7, 200000, NULL);
    double runs[7];
    volatile size_t sink = 0;
    for (int r = 0; r < 7; r++) {
        const int n = 100000;
        int64_t t0 = tw_clock_thread_cpu_ns();
        for (int i = 0; i < n; i++) {
            now += 1000;
            sink += build_snprintf(b, sizeof(b), (uint64_t)i + 1, now);
        }
        runs[r] = (double)(tw_clock_thread_cpu_ns() - t0) / n;
    }
    qsort(runs, 7, sizeof(runs[0]), cmp_d);
    double sn_ns = runs[3];
    printf("NewOrderSingle build (ns/msg, median of 7 runs)\n");
    printf("  %-28s %8.1f\n", "tickwire template builder", tw_ns);
    printf("  %-28s %8.1f   (%.1fx slower)\n", "snprintf", sn_ns, sn_ns / tw_ns);
#ifdef TW_HAVE_QUICKFIX
    size_t ql = 0;
    for (int r = 0; r < 7; r++) {
        const int n = 20000;
        int64_t t0 = tw_clock_thread_cpu_ns();
        tw_qf_build_loop(n, b, sizeof(b), &ql);
        runs[r] = (double)(tw_clock_thread_cpu_ns() - t0) / n;
    }
    qsort(runs, 7, sizeof(runs[0]), cmp_d);
    double qf_ns = runs[3];
    size_t skip;
    TW_VERIFY(ql > 0 && tw_fix_frame(b, ql, 0, &skip) == (int)ql);
    printf("  %-28s %8.1f   (%.1fx slower)\n", "QuickFIX Message::toString", qf_ns, qf_ns / tw_ns);
#else
    printf("  QuickFIX: not built (libquickfix-dev missing)\n");
#endif
    (void)sink;
    return 0;
}
