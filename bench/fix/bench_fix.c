/* `tickwire bench fix`: ns per message to frame + parse + validate
 * (BodyLength, CheckSum) a typical ExecutionReport, a NewOrderSingle and a
 * MarketDataIncrementalRefresh with 10 entries, the same with the typed
 * accessor, the same messages parsed by QuickFIX in the same run, and ns
 * to build a NewOrderSingle with the session builder.  Every parse result
 * is checked before anything is timed; figures are medians of repeated
 * runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickwire/clock.h"
#include "tickwire/fix.h"
#include "fix_build/nos_build.h"
#include "tickwire/fix_build.h"

#ifdef TW_HAVE_QUICKFIX
int tw__qf_get(const char *msg, size_t len, int tag, char *out, size_t cap);
long tw__qf_parse_loop(const char *msg, size_t len, long iters);
#endif

int tw__cli_bench_fix(int argc, char **argv);

static volatile long sink;

/* CPU time of this thread, not wall time: on a shared 2-vCPU machine the
 * benchmark is often descheduled, and time spent off the CPU is not time
 * spent parsing. */
static double now_ns(void)
{
    return (double)tw_clock_thread_cpu_ns();
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A message from "35=...|...|": header 8/9 in front, 10 at the end. */
static size_t mk(char *out, size_t cap, const char *body)
{
    char b[2048];
    size_t bl = strlen(body);
    if (bl >= sizeof(b) || bl + 40 > cap) {
        fprintf(stderr, "bench fix: message too long\n");
        exit(1);
    }
    for (size_t i = 0; i < bl; i++)
        b[i] = body[i] == '|' ? TW_FIX_SOH : body[i];
    int h = snprintf(out, cap, "8=FIX.4.4\0019=%zu\001", bl);
    memcpy(out + h, b, bl);
    size_t n = (size_t)h + bl;
    n += (size_t)snprintf(out + n, cap - n, "10=%03u\001", tw_fix_checksum(out, n));
    return n;
}

typedef struct bmsg {
    const char *name;
    char buf[2048];
    size_t len;
    uint32_t fields;
} bmsg;

enum { ER, NOS, MDX, NMSG };

typedef long (*loop_fn)(const bmsg *b, long iters);

static long loop_parse(const bmsg *b, long iters)
{
    tw_fix_field f[128];
    long acc = 0;
    for (long i = 0; i < iters; i++) {
        size_t skip;
        int rc = tw_fix_frame(b->buf, b->len, 0, &skip);
        tw_fix_msg m = { .fields = f, .cap = 128 };
        if (rc > 0 && tw_fix_parse(b->buf, (size_t)rc, &m) == 0)
            acc += m.count;
        __asm__ volatile("" ::: "memory"); /* one message per iteration, no hoisting */
    }
    return acc;
}

/* frame + parse + header + the message's typed accessor. */
static long loop_typed(const bmsg *b, long iters)
{
    tw_fix_field f[128];
    long acc = 0;
    for (long i = 0; i < iters; i++) {
        size_t skip;
        int rc = tw_fix_frame(b->buf, b->len, 0, &skip);
        tw_fix_msg m = { .fields = f, .cap = 128 };
        if (rc <= 0 || tw_fix_parse(b->buf, (size_t)rc, &m) != 0)
            continue;
        tw_fix_header h;
        if (tw_fix_read_header(&m, &h, NULL) != 0)
            continue;
        acc += h.msg_seq_num;
        if (m.msg_type[0] == '8') {
            tw_fix_exec_report er;
            if (tw_fix_read_exec_report(&m, TW_FIX_PX_DECIMALS, &er, NULL) == 0)
                acc += er.cum_qty;
        } else if (m.msg_type[0] == 'D') {
            tw_fix_new_order no;
            if (tw_fix_read_new_order(&m, TW_FIX_PX_DECIMALS, &no, NULL) == 0)
                acc += no.order_qty;
        } else {
            tw_fix_md md;
            tw_fix_md_entry e[16];
            if (tw_fix_read_md_incremental(&m, TW_FIX_PX_DECIMALS, &md, e, 16, NULL) == 0)
                acc += e[9].px;
        }
        __asm__ volatile("" ::: "memory");
    }
    return acc;
}

#ifdef TW_HAVE_QUICKFIX
static long loop_qf(const bmsg *b, long iters)
{
    return tw__qf_parse_loop(b->buf, b->len, iters);
}
#endif

/* Median ns per message over reps runs, each sized to about run_ms. */
static double measure(loop_fn fn, const bmsg *b, int reps, double run_ms)
{
    long iters = 16;
    double dt;
    for (;;) { /* calibrate (also warms caches and branch predictors) */
        double t0 = now_ns();
        sink += fn(b, iters);
        dt = now_ns() - t0;
        if (dt > run_ms * 1e6 / 4 || iters > (1l << 28))
            break;
        iters *= 2;
    }
    iters = (long)((double)iters * (run_ms * 1e6) / dt) + 1;
    double per[64];
    if (reps > 64)
        reps = 64;
    for (int r = 0; r < reps; r++) {
        double t0 = now_ns();
        sink += fn(b, iters);
        per[r] = (now_ns() - t0) / (double)iters;
    }
    qsort(per, (size_t)reps, sizeof(double), cmp_double);
    return per[reps / 2];
}

static int fail(const char *what)
{
    fprintf(stderr, "tickwire bench fix: check failed before timing: %s\n", what);
    return 1;
}

/* Asserts what our parser and accessors (and QuickFIX) read from each
 * message before any of it is timed. */
static int check_messages(bmsg *msgs)
{
    tw_fix_field f[128];
    for (int i = 0; i < NMSG; i++) {
        size_t skip;
        tw_error err = { 0 };
        int rc = tw_fix_frame_ex(msgs[i].buf, msgs[i].len, 0, &skip, &err);
        if (rc != (int)msgs[i].len)
            return fail(err.msg);
        tw_fix_msg m = { .fields = f, .cap = 128 };
        if (tw_fix_parse_ex(msgs[i].buf, msgs[i].len, &m, &err) != 0)
            return fail(err.msg);
        msgs[i].fields = m.count;
        tw_fix_header h;
        if (tw_fix_read_header(&m, &h, &err) != 0 || h.msg_seq_num != 4711)
            return fail("header");
        if (i == ER) {
            tw_fix_exec_report er;
            if (tw_fix_read_exec_report(&m, 8, &er, &err) != 0)
                return fail(err.msg);
            if (er.cum_qty != 300 || er.leaves_qty != 700 || er.avg_px != 17235500000ll ||
                er.exec_type != 'F' || er.last_px != 17235500000ll)
                return fail("ExecutionReport values");
        } else if (i == NOS) {
            tw_fix_new_order no;
            if (tw_fix_read_new_order(&m, 8, &no, &err) != 0)
                return fail(err.msg);
            if (no.order_qty != 1000 || no.price != 17235000000ll || no.side != '1')
                return fail("NewOrderSingle values");
        } else {
            tw_fix_md md;
            tw_fix_md_entry e[16];
            if (tw_fix_read_md_incremental(&m, 8, &md, e, 16, &err) != 0)
                return fail(err.msg);
            if (md.n_entries != 10 || e[9].px != 17244000000ll || e[9].size != 1000)
                return fail("MarketDataIncrementalRefresh values");
        }
#ifdef TW_HAVE_QUICKFIX
        char v[64];
        if (tw__qf_get(msgs[i].buf, msgs[i].len, 34, v, sizeof(v)) < 0 || strcmp(v, "4711") != 0)
            return fail("QuickFIX did not accept the message or read MsgSeqNum(34)");
        if (i == ER && (tw__qf_get(msgs[i].buf, msgs[i].len, 14, v, sizeof(v)) < 0 ||
                        strcmp(v, "300") != 0))
            return fail("QuickFIX CumQty(14)");
        /* QuickFIX must reject a bad checksum too, or it is not doing the
         * validation we do. */
        char bad[2048];
        memcpy(bad, msgs[i].buf, msgs[i].len);
        bad[msgs[i].len - 2] = bad[msgs[i].len - 2] == '9' ? '0' : (char)(bad[msgs[i].len - 2] + 1);
        if (tw__qf_get(bad, msgs[i].len, 34, v, sizeof(v)) >= 0)
            return fail("QuickFIX accepted a bad CheckSum");
        if (tw_fix_frame(bad, msgs[i].len, 0, &skip) != TW_FIX_GARBLED)
            return fail("tickwire accepted a bad CheckSum");
#endif
    }
    return 0;
}

/* Builds the benchmarks' NewOrderSingle (bench/fix_build/nos_build.c)
 * with the session template: checks one through our own parser, then
 * times it.  Returns the median ns, or -1 if the check fails. */
static double bench_build(int reps, double run_ms, size_t *out_len)
{
    tw_fix_template t;
    tw_error err = { 0 };
    if (tw_fix_template_init(&t, "FIX.4.4", "TICKWIRE", "VENUE", NULL, NULL, 3, &err) != 0) {
        fprintf(stderr, "bench fix: builder template: %s\n", err.msg);
        return -1;
    }
    static char buf[1024];
    const char *msg;
    size_t len = 0, skip;
    tw_fix_field f[64];
    tw_fix_msg m = { .fields = f, .cap = 64 };
    tw_fix_new_order no;
    if (tw__bench_nos_build(&t, buf, sizeof(buf), 4711, 1710513000123000000ll, &msg, &len) != 0 ||
        tw_fix_frame(msg, len, 0, &skip) != (int)len || tw_fix_parse(msg, len, &m) != 0 ||
        tw_fix_read_new_order(&m, 8, &no, &err) != 0 || no.price != 108725000 ||
        no.order_qty != 1000000) {
        fprintf(stderr, "bench fix: built NewOrderSingle does not read back\n");
        return -1;
    }
    /* builds are ~100 ns or less */
    return tw__bench_nos_build_ns(reps, (long)(run_ms * 1e6 / 100), out_len);
}

int tw__cli_bench_fix(int argc, char **argv)
{
    int reps = 11;
    double run_ms = 40;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            reps = 3;
            run_ms = 4;
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
            if (reps < 1 || reps > 64) {
                fprintf(stderr, "tickwire bench fix: --reps must be 1..64\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: tickwire bench fix [--reps N] [--quick]\n"
                   "  ns per message: frame+parse+validate (and + typed accessor) with tickwire,\n"
                   "  FIX::Message from string with QuickFIX, and building a NewOrderSingle.\n"
                   "  TW_FIX_ISA=scalar|sse2|avx2|avx512 caps the SOH scanner.\n");
            return 0;
        } else {
            fprintf(stderr, "tickwire bench fix: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    static bmsg msgs[NMSG];
    msgs[ER].name = "ExecutionReport";
    msgs[ER].len = mk(msgs[ER].buf, sizeof(msgs[ER].buf),
        "35=8|49=VENUE|56=TICKWIRE|34=4711|52=20240315-14:30:00.123456|"
        "37=V-7781903|11=ORD-000042|17=EX-91823746|150=F|39=1|1=ACC-001|55=AAPL|54=1|"
        "38=1000|40=2|44=172.35|59=0|32=100|31=172.355|151=700|14=300|6=172.355|"
        "60=20240315-14:30:00.123400|58=partial fill|30=XNAS|");
    msgs[NOS].name = "NewOrderSingle";
    msgs[NOS].len = mk(msgs[NOS].buf, sizeof(msgs[NOS].buf),
        "35=D|49=TICKWIRE|56=VENUE|34=4711|52=20240315-14:30:00.123|"
        "11=ORD-000042|1=ACC-001|21=1|55=AAPL|54=1|60=20240315-14:30:00.123|38=1000|40=2|"
        "44=172.35|59=0|");
    msgs[MDX].name = "MDIncrementalRefresh x10";
    {
        char body[2048];
        int n = snprintf(body, sizeof(body),
                         "35=X|49=VENUE|56=TICKWIRE|34=4711|52=20240315-14:30:00.123456|"
                         "262=MD-1|268=10|");
        for (int k = 0; k < 10; k++)
            n += snprintf(body + n, sizeof(body) - (size_t)n,
                          "279=%d|269=%d|278=Q%05d|55=AAPL|270=172.%02d|271=%d|",
                          k % 3, k % 2, 100 + k, 35 + k, 100 * (k + 1));
        msgs[MDX].len = mk(msgs[MDX].buf, sizeof(msgs[MDX].buf), body);
    }
    if (check_messages(msgs) != 0)
        return 1;

    double ours[NMSG], typed[NMSG], qf[NMSG];
    for (int i = 0; i < NMSG; i++) {
        ours[i] = measure(loop_parse, &msgs[i], reps, run_ms);
        typed[i] = measure(loop_typed, &msgs[i], reps, run_ms);
#ifdef TW_HAVE_QUICKFIX
        qf[i] = measure(loop_qf, &msgs[i], reps, run_ms);
#else
        qf[i] = 0;
#endif
    }
    size_t build_len = 0;
    double build = bench_build(reps, run_ms, &build_len);

    printf("tickwire bench fix: ns per message, median of %d runs (SOH scan: %s)\n", reps,
           tw_isa_name(tw_fix_isa_active()));
    printf("  tickwire = frame + parse + validate (BodyLength, CheckSum); +typed adds the\n"
           "  header and the message's typed accessor; QuickFIX = FIX::Message(string),\n"
           "  its default validation, no data dictionary.\n\n");
    printf("| message                  | bytes | fields | tickwire ns | +typed ns | QuickFIX ns "
           "| QuickFIX / tickwire | QuickFIX / +typed |\n");
    printf("|--------------------------|------:|-------:|------------:|----------:|------------:"
           "|--------------------:|------------------:|\n");
    for (int i = 0; i < NMSG; i++) {
#ifdef TW_HAVE_QUICKFIX
        printf("| %-24s | %5zu | %6u | %11.1f | %9.1f | %11.1f | %18.1fx | %16.1fx |\n",
               msgs[i].name, msgs[i].len, msgs[i].fields, ours[i], typed[i], qf[i],
               qf[i] / ours[i], qf[i] / typed[i]);
#else
        printf("| %-24s | %5zu | %6u | %11.1f | %9.1f | %11s | %19s | %17s |\n", msgs[i].name,
               msgs[i].len, msgs[i].fields, ours[i], typed[i], "n/a", "n/a", "n/a");
#endif
    }
    if (build > 0)
        printf("\nbuild NewOrderSingle (%zu bytes, session template, tw_fix_build_*): %.1f ns\n",
               build_len, build);
    else
        printf("\nbuild NewOrderSingle: the builder (tickwire/fix_build.h) failed its check\n");
#ifdef TW_HAVE_QUICKFIX
    double ratio = qf[ER] / ours[ER];
    printf("goal: ExecutionReport >= 20x faster than QuickFIX: %.1fx -> %s\n", ratio,
           ratio >= 20 ? "met" : "NOT met");
#else
    printf("QuickFIX: not built in (libquickfix-dev was not found by CMake)\n");
#endif
    return 0;
}
