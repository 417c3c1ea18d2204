/* `tickwire bench fix`: ns per message for a typical ExecutionReport, a
 * NewOrderSingle and a MarketDataIncrementalRefresh with 10 entries:
 *
 *   raw       tw_fix_frame + tw_fix_parse (BodyLength, CheckSum, every
 *             field as a view);
 *   typed     tw_fix_decode: the one pass that frames, validates and fills
 *             the header and the message's typed struct (prices fixed point
 *             and float64), what an application uses;
 *   accessors the four-call typed path (frame + parse + tw_fix_read_header
 *             + the type's accessor), for reference;
 *   QuickFIX  FIX::Message(string) alone, and followed by reading the same
 *             fields with QuickFIX's typed getters (qf_parse.cpp);
 *
 * and ns to build a NewOrderSingle from the session template.  Every
 * result is checked before anything is timed (our values, QuickFIX's,
 * both rejecting a bad CheckSum); figures are medians of repeated runs,
 * timed with the thread's CPU clock; the ISA is printed with them, and one
 * line per goal of the FIX parser says met or NOT met. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli_opt.h"
#include "common/stats.h"
#include "net/port_module.h"
#include "fix_build/nos_build.h"
#include "tickwire/clock.h"
#include "tickwire/fix.h"
#include "tickwire/fix_build.h"

#ifdef TW_HAVE_QUICKFIX
/* QuickFIX (qf_parse.cpp, C++) is the module libtickwire-bench-quickfix.so,
 * loaded when this benchmark runs: the program itself loads neither
 * QuickFIX nor the C++ runtime. */
static int (*tw__qf_get)(const char *msg, size_t len, int tag, char *out, size_t cap);
static long (*tw__qf_parse_loop)(const char *msg, size_t len, long iters);
static double (*tw__qf_read_loop)(const char *msg, size_t len, char type, long iters);

static int qf_load(void)
{
    tw_error e = {0};
    void *g = tw__port_module_symbol(TW_MODULE_QUICKFIX, "tw__qf_get", &e);
    void *p = g ? tw__port_module_symbol(TW_MODULE_QUICKFIX, "tw__qf_parse_loop", &e) : NULL;
    void *r = p ? tw__port_module_symbol(TW_MODULE_QUICKFIX, "tw__qf_read_loop", &e) : NULL;
    if (!r) {
        fprintf(stderr, "tickwire bench fix: %s\n", e.msg);
        return -1;
    }
    tw__qf_get = (int (*)(const char *, size_t, int, char *, size_t))g;
    tw__qf_parse_loop = (long (*)(const char *, size_t, long))p;
    tw__qf_read_loop = (double (*)(const char *, size_t, char, long))r;
    return 0;
}
#endif

int tw__cli_bench_fix(int argc, char **argv);

static volatile long sink;

static double now_ns(void)
{
    /* CPU time of this thread, not wall time: on a shared 2-vCPU machine
     * the benchmark is often descheduled, and time spent off the CPU is
     * not time spent parsing. */
    return (double)tw_clock_thread_cpu_ns();
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
    char type;
    char buf[2048];
    size_t len;
    uint32_t fields;
} bmsg;

enum { ER, NOS, MDX, NMSG };

typedef long (*loop_fn)(const bmsg *b, long iters);

static long loop_raw(const bmsg *b, long iters)
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

/* The value each typed loop adds, so that the work cannot be elided. */
static long typed_value(const tw_fix_decoded *d)
{
    switch (d->kind) {
    case TW_FIX_K_EXEC_REPORT: return d->u.exec_report.cum_qty + (long)d->u.exec_report.avg_px_f64;
    case TW_FIX_K_NEW_ORDER: return d->u.new_order.order_qty + (long)d->u.new_order.price_f64;
    default: return (long)d->u.md.n_entries + (long)d->entries[9].px_f64;
    }
}

/* tw_fix_decode: frame + validate + header + typed body in one pass. */
static long loop_typed(const bmsg *b, long iters)
{
    static tw_fix_md_entry ent[16];
    tw_fix_decoded d = { .px_decimals = TW_FIX_PX_DECIMALS, .entries = ent, .entries_cap = 16 };
    long acc = 0;
    for (long i = 0; i < iters; i++) {
        size_t skip;
        if (tw_fix_decode(b->buf, b->len, &d, &skip) > 0 && d.rc == 0)
            acc += d.hdr.msg_seq_num + typed_value(&d);
        __asm__ volatile("" ::: "memory");
    }
    return acc;
}

/* frame + parse + header + the message's typed accessor. */
static long loop_accessors(const bmsg *b, long iters)
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

static long loop_qf_read(const bmsg *b, long iters)
{
    return (long)tw__qf_read_loop(b->buf, b->len, b->type, iters);
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
    for (int r = 0; r < reps; r++) {
        double t0 = now_ns();
        sink += fn(b, iters);
        per[r] = (now_ns() - t0) / (double)iters;
    }
    return tw__median_f64(per, (size_t)reps);
}

static int fail(const char *what)
{
    fprintf(stderr, "tickwire bench fix: check failed before timing: %s\n", what);
    return 1;
}

/* What QuickFIX's reads add up to for each message (qf_parse.cpp), from
 * our typed values: MsgSeqNum plus the quantities and prices. */
static double our_digest(const tw_fix_decoded *d)
{
    double x = (double)d->hdr.msg_seq_num;
    if (d->kind == TW_FIX_K_EXEC_REPORT) {
        const tw_fix_exec_report *e = &d->u.exec_report;
        return x + (double)e->order_qty + e->price_f64 + (double)e->last_qty + e->last_px_f64 +
               (double)e->leaves_qty + (double)e->cum_qty + e->avg_px_f64;
    }
    if (d->kind == TW_FIX_K_NEW_ORDER)
        return x + (double)d->u.new_order.order_qty + d->u.new_order.price_f64;
    x += d->u.md.n_entries;
    for (uint32_t i = 0; i < d->u.md.n_entries; i++)
        x += d->entries[i].px_f64;
    for (uint32_t i = 0; i < d->u.md.n_entries; i++)
        x += (double)d->entries[i].size;
    return x;
}

/* Asserts what our decoder, our accessors and QuickFIX read from each
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
        static tw_fix_md_entry ent[16];
        tw_fix_decoded d = { .px_decimals = 8, .entries = ent, .entries_cap = 16 };
        if (tw_fix_decode(msgs[i].buf, msgs[i].len, &d, &skip) != (int)msgs[i].len || d.rc != 0 ||
            d.hdr.msg_seq_num != 4711)
            return fail("tw_fix_decode");
        if (i == ER) {
            tw_fix_exec_report er;
            if (tw_fix_read_exec_report(&m, 8, &er, &err) != 0)
                return fail(err.msg);
            if (er.cum_qty != 300 || er.leaves_qty != 700 || er.avg_px != 17235500000ll ||
                er.exec_type != 'F' || er.last_px != 17235500000ll || er.avg_px_f64 != 172.355)
                return fail("ExecutionReport values");
            if (d.kind != TW_FIX_K_EXEC_REPORT || memcmp(&d.u.exec_report, &er, sizeof(er)) != 0)
                return fail("tw_fix_decode's ExecutionReport is not the accessor's");
        } else if (i == NOS) {
            tw_fix_new_order no;
            if (tw_fix_read_new_order(&m, 8, &no, &err) != 0)
                return fail(err.msg);
            if (no.order_qty != 1000 || no.price != 17235000000ll || no.side != '1' ||
                no.price_f64 != 172.35)
                return fail("NewOrderSingle values");
            if (d.kind != TW_FIX_K_NEW_ORDER || memcmp(&d.u.new_order, &no, sizeof(no)) != 0)
                return fail("tw_fix_decode's NewOrderSingle is not the accessor's");
        } else {
            tw_fix_md md;
            tw_fix_md_entry e[16];
            if (tw_fix_read_md_incremental(&m, 8, &md, e, 16, &err) != 0)
                return fail(err.msg);
            if (md.n_entries != 10 || e[9].px != 17244000000ll || e[9].size != 1000 ||
                e[9].px_f64 != 172.44)
                return fail("MarketDataIncrementalRefresh values");
            if (d.kind != TW_FIX_K_MD_INCREMENTAL || d.u.md.n_entries != 10 ||
                memcmp(ent, e, 10 * sizeof(e[0])) != 0)
                return fail("tw_fix_decode's entries are not the accessor's");
        }
#ifdef TW_HAVE_QUICKFIX
        char v[64];
        if (tw__qf_get(msgs[i].buf, msgs[i].len, 34, v, sizeof(v)) < 0 || strcmp(v, "4711") != 0)
            return fail("QuickFIX did not accept the message or read MsgSeqNum(34)");
        if (i == ER && (tw__qf_get(msgs[i].buf, msgs[i].len, 14, v, sizeof(v)) < 0 ||
                        strcmp(v, "300") != 0))
            return fail("QuickFIX CumQty(14)");
        double qd = tw__qf_read_loop(msgs[i].buf, msgs[i].len, msgs[i].type, 1);
        double od = our_digest(&d);
        if (!(fabs(qd - od) <= 1e-9 * fabs(od)))
            return fail("QuickFIX's typed reads do not add up to ours");
        /* QuickFIX must reject a bad checksum too, or it is not doing the
         * validation we do. */
        char bad[2048];
        memcpy(bad, msgs[i].buf, msgs[i].len);
        bad[msgs[i].len - 2] = bad[msgs[i].len - 2] == '9' ? '0' : (char)(bad[msgs[i].len - 2] + 1);
        if (tw__qf_get(bad, msgs[i].len, 34, v, sizeof(v)) >= 0)
            return fail("QuickFIX accepted a bad CheckSum");
        if (tw_fix_frame(bad, msgs[i].len, 0, &skip) != TW_FIX_GARBLED ||
            tw_fix_decode(bad, msgs[i].len, &d, &skip) != TW_FIX_GARBLED)
            return fail("tickwire accepted a bad CheckSum");
#endif
    }
    return 0;
}

/* Builds the benchmarks' NewOrderSingle (bench/fix_build/nos_build.c)
 * with the session template: checks one through our own decoder, then
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
    tw_fix_decoded d = { .px_decimals = 8 };
    if (tw__bench_nos_build(&t, buf, sizeof(buf), 4711, 1710513000123000000ll, &msg, &len) != 0 ||
        tw_fix_decode(msg, len, &d, &skip) != (int)len || d.rc != 0 ||
        d.kind != TW_FIX_K_NEW_ORDER || d.u.new_order.price != 108725000 ||
        d.u.new_order.order_qty != 1000000 || d.hdr.msg_seq_num != 4711 ||
        d.hdr.sending_time_ns != 1710513000123000000ll) {
        fprintf(stderr, "bench fix: built NewOrderSingle does not read back\n");
        return -1;
    }
    /* builds are ~100 ns or less */
    return tw__bench_nos_build_ns(reps, (long)(run_ms * 1e6 / 100), out_len);
}

static void goal(const char *what, double value, const char *unit, int met, const char *isa)
{
    printf("goal: %s (%s): %.1f%s -> %s\n", what, isa, value, unit, met ? "met" : "NOT met");
}

/* --loop WHAT:N: the one loop alone (the messages checked first), for an
 * instruction count that two values of N turn into a per-message figure. */
static int one_loop(const bmsg *msgs, const char *spec)
{
    static const struct {
        const char *name;
        loop_fn fn;
        int msg;
    } loops[] = {
        { "raw-er", loop_raw, ER },       { "raw-nos", loop_raw, NOS },
        { "raw-mdx", loop_raw, MDX },     { "typed-er", loop_typed, ER },
        { "typed-nos", loop_typed, NOS }, { "typed-mdx", loop_typed, MDX },
    };
    const char *colon = strchr(spec, ':');
    char *end;
    long n = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || n <= 0 || *end) {
        fprintf(stderr, "tickwire bench fix: --loop %s: want WHAT:N with N >= 1\n", spec);
        return 2;
    }
    size_t wl = (size_t)(colon - spec);
    if (wl == 5 && !memcmp(spec, "build", 5)) {
        size_t len = 0;
        tw__bench_nos_build_ns(1, n, &len);
        return len ? 0 : 1;
    }
    for (size_t k = 0; k < sizeof(loops) / sizeof(loops[0]); k++)
        if (strlen(loops[k].name) == wl && !memcmp(spec, loops[k].name, wl)) {
            sink += loops[k].fn(&msgs[loops[k].msg], n);
            return 0;
        }
    fprintf(stderr, "tickwire bench fix: --loop %.*s: no such loop\n", (int)wl, spec);
    return 2;
}

static const char usage[] =
    "usage: tickwire bench fix [--reps N] [--quick] [--loop WHAT:N]\n"
    "  ns per message: frame+parse (raw), the one-pass typed decoder (typed), the\n"
    "  four-call typed path (accessors), QuickFIX's parse and its parse + typed\n"
    "  field reads; and building a NewOrderSingle from the session template.\n"
    "  TW_FIX_ISA=scalar|sse2|avx2|avx512 caps the SIMD level.\n"
    "  --loop WHAT:N runs one loop N times and prints nothing timed, for\n"
    "  instruction counts under callgrind (bench/fix/icount.sh); WHAT is\n"
    "  raw-er, raw-nos, raw-mdx, typed-er, typed-nos, typed-mdx or build.\n";

int tw__cli_bench_fix(int argc, char **argv)
{
    int reps = 11;
    double run_ms = 40;
    const char *loop = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            reps = 3;
            run_ms = 4;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage, stdout);
            return 0;
        } else {
            const char *opt, *val;
            int r = tw__cli_opt_value("bench fix", usage, argc, argv, &i, &opt, &val);
            if (r)
                return r > 0 ? 0 : 2;
            uint64_t v;
            if (strcmp(opt, "--loop") == 0) {
                loop = val;
                continue;
            }
            if (strcmp(opt, "--reps") != 0) {
                fprintf(stderr, "tickwire bench fix: unknown option %s\n%s", opt, usage);
                return 2;
            }
            if (tw__cli_u64_range("bench fix", opt, val, 1, 64, &v) != 0)
                return 2;
            reps = (int)v;
        }
    }
#ifdef TW_HAVE_QUICKFIX
    if (qf_load() != 0)
        return 1;
#endif
    static bmsg msgs[NMSG];
    msgs[ER].name = "ExecutionReport";
    msgs[ER].type = '8';
    msgs[ER].len = mk(msgs[ER].buf, sizeof(msgs[ER].buf),
        "35=8|49=VENUE|56=TICKWIRE|34=4711|52=20240315-14:30:00.123456|"
        "37=V-7781903|11=ORD-000042|17=EX-91823746|150=F|39=1|1=ACC-001|55=AAPL|54=1|"
        "38=1000|40=2|44=172.35|59=0|32=100|31=172.355|151=700|14=300|6=172.355|"
        "60=20240315-14:30:00.123400|58=partial fill|30=XNAS|");
    msgs[NOS].name = "NewOrderSingle";
    msgs[NOS].type = 'D';
    msgs[NOS].len = mk(msgs[NOS].buf, sizeof(msgs[NOS].buf),
        "35=D|49=TICKWIRE|56=VENUE|34=4711|52=20240315-14:30:00.123|"
        "11=ORD-000042|1=ACC-001|21=1|55=AAPL|54=1|60=20240315-14:30:00.123|38=1000|40=2|"
        "44=172.35|59=0|");
    msgs[MDX].name = "MDIncrementalRefresh x10";
    msgs[MDX].type = 'X';
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
    if (loop)
        return one_loop(msgs, loop);

    double raw[NMSG], typed[NMSG], acc[NMSG], qf[NMSG], qfr[NMSG];
    for (int i = 0; i < NMSG; i++) {
        /* Interleaved per message, so that a noisy stretch of the machine
         * hits the variants alike. */
        raw[i] = measure(loop_raw, &msgs[i], reps, run_ms);
        typed[i] = measure(loop_typed, &msgs[i], reps, run_ms);
        acc[i] = measure(loop_accessors, &msgs[i], reps, run_ms);
#ifdef TW_HAVE_QUICKFIX
        qf[i] = measure(loop_qf, &msgs[i], reps, run_ms);
        qfr[i] = measure(loop_qf_read, &msgs[i], reps, run_ms);
#else
        qf[i] = qfr[i] = 0;
#endif
    }
    size_t build_len = 0;
    double build = bench_build(reps, run_ms, &build_len);

    const char *isa = tw_isa_name(tw_fix_isa_active());
    printf("tickwire bench fix: ns per message, median of %d runs, ISA %s\n", reps, isa);
    printf("  raw = tw_fix_frame + tw_fix_parse; typed = tw_fix_decode (frame, validate,\n"
           "  header and typed body in one pass); accessors = frame + parse +\n"
           "  tw_fix_read_header + the type's accessor; QuickFIX = FIX::Message(string),\n"
           "  its default validation, no data dictionary; +reads = then the same fields\n"
           "  with QuickFIX's typed getters.\n\n");
    printf("| message                  | bytes | fields | raw ns | typed ns | accessors ns "
           "| QuickFIX ns | QuickFIX+reads ns | QuickFIX / raw | QuickFIX+reads / typed |\n");
    printf("|--------------------------|------:|-------:|-------:|---------:|-------------:"
           "|------------:|------------------:|---------------:|-----------------------:|\n");
    for (int i = 0; i < NMSG; i++) {
#ifdef TW_HAVE_QUICKFIX
        printf("| %-24s | %5zu | %6u | %6.1f | %8.1f | %12.1f | %11.1f | %17.1f | %13.1fx | "
               "%21.1fx |\n",
               msgs[i].name, msgs[i].len, msgs[i].fields, raw[i], typed[i], acc[i], qf[i],
               qfr[i], qf[i] / raw[i], qfr[i] / typed[i]);
#else
        printf("| %-24s | %5zu | %6u | %6.1f | %8.1f | %12.1f | %11s | %17s | %14s | %22s |\n",
               msgs[i].name, msgs[i].len, msgs[i].fields, raw[i], typed[i], acc[i], "n/a",
               "n/a", "n/a", "n/a");
#endif
    }
    if (build > 0)
        printf("\nbuild NewOrderSingle (%zu bytes, session template, tw_fix_build_*): %.1f ns\n",
               build_len, build);
    else
        printf("\nbuild NewOrderSingle: the builder (tickwire/fix_build.h) failed its check\n");
#ifdef TW_HAVE_QUICKFIX
    goal("typed ExecutionReport >= 20x QuickFIX parse + field reads", qfr[ER] / typed[ER], "x",
         qfr[ER] / typed[ER] >= 20, isa);
#else
    printf("QuickFIX: not built in (libquickfix-dev was not found by CMake)\n");
#endif
    goal("typed ExecutionReport <= 120 ns", typed[ER], " ns", typed[ER] <= 120, isa);
#ifdef TW_HAVE_QUICKFIX
    goal("typed MDIncrementalRefresh x10 >= 20x QuickFIX parse + field reads",
         qfr[MDX] / typed[MDX], "x", qfr[MDX] / typed[MDX] >= 20, isa);
#endif
    goal("NewOrderSingle build from the session template <= 100 ns", build, " ns",
         build > 0 && build <= 100, isa);
    return 0;
}
