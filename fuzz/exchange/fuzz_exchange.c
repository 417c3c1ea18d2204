/* libFuzzer target: hostile bytes into the venue (tickwire/exchange.h),
 * over up to four connections, on a clock the input moves.
 *
 * Input: the first byte picks the mode:
 *   bit 0: 0 = the rest is raw stream bytes for connection 0, fed in
 *          chunks whose sizes and the clock steps between them come from
 *          the data; 1 = the rest is lines (below);
 *   bit 1: paced instead of lockstep;  bit 2: faults (gap:2, reject:3,
 *          slow:1:50, disconnect:4) on.
 * Lines: '|'-separated fields that the harness frames (8, 9 and 10 added,
 * so the fuzzer gets past BodyLength and CheckSum into the venue's logic)
 * and sends on the current connection; "+N" advances the clock N ms;
 * "#K" switches to connection K (opening it); "!" closes the current
 * connection from the driver's side; "~" asks the venue to stop.
 *
 * Checked throughout: every write the venue makes is exactly one whole
 * FIX message; a closed connection is never written to; counters stay
 * consistent (fills <= orders); nothing crashes, over-reads or leaks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickwire/exchange.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NC 4

typedef struct fconn {
    tw_xchg_conn *xc;
    int open;
} fconn;

static fconn conns[NC];

static int f_write(void *ctx, const char *buf, size_t len)
{
    fconn *c = ctx;
    TW_VERIFY(c->open);
    size_t skip = 0;
    TW_VERIFY(tw_fix_frame(buf, len, 0, &skip) == (int)len);
    return 0;
}

static void f_close(void *ctx)
{
    fconn *c = ctx;
    TW_VERIFY(c->open);
    c->open = 0;
    c->xc = NULL;
}

static void open_conn(tw_xchg *x, int k, int64_t now)
{
    if (conns[k].open)
        return;
    tw_fix_stream io = {f_write, f_close, &conns[k]};
    conns[k].open = 1;
    if (tw_xchg_conn_open(x, &io, NULL, now, &conns[k].xc) != 0)
        conns[k].open = 0;
}

static void feed(tw_xchg *x, int k, const char *b, size_t n, int64_t now)
{
    if (!conns[k].open)
        open_conn(x, k, now);
    if (!conns[k].open)
        return;
    size_t used = tw_xchg_conn_input(x, conns[k].xc, b, n, now);
    TW_VERIFY(used <= n);
}

static void frame_line(tw_xchg *x, int k, const char *l, size_t n, int64_t now)
{
    char body[4096], msg[4200];
    size_t bl = 0;
    for (size_t i = 0; i < n && bl < sizeof(body) - 1; i++)
        body[bl++] = l[i] == '|' ? '\x01' : l[i];
    if (bl && body[bl - 1] != '\x01')
        body[bl++] = '\x01';
    int ml = snprintf(msg, sizeof(msg), "8=FIX.4.4\x01" "9=%zu\x01", bl);
    memcpy(msg + ml, body, bl);
    ml += (int)bl;
    unsigned sum = 0;
    for (int i = 0; i < ml; i++)
        sum += (unsigned char)msg[i];
    ml += snprintf(msg + ml, sizeof(msg) - (size_t)ml, "10=%03u\x01", sum & 255);
    feed(x, k, msg, (size_t)ml, now);
}

/* FUZZ_EXCHANGE_VERBOSE=1: the venue's log lines, for reading a finding. */
static int verbose = -1;
static void on_log(void *ctx, const char *sess, const char *text)
{
    (void)ctx;
    if (verbose)
        fprintf(stderr, "venue [%s] %s\n", sess, text);
}

static void check(const tw_xchg *x)
{
    const tw_xchg_stats *s = tw_xchg_get_stats(x);
    if (s->fills > s->orders)
        fprintf(stderr, "fills %llu orders %llu possdup_ignored %llu\n",
                (unsigned long long)s->fills, (unsigned long long)s->orders,
                (unsigned long long)s->possdup_ignored);
    TW_VERIFY(s->fills <= s->orders);
    TW_VERIFY(s->bars <= s->bars_total);
    TW_VERIFY(s->barrier_acks <= s->bars * 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static double a[6] = {100.0, 100.0000000000001, 0.00001, 5e-324, 1.5, 2.25};
    static double b[4] = {0, 0, 50.5, 0};
    if (size == 0)
        return 0;
    b[0] = b[1] = b[3] = __builtin_nan("");
    tw_xchg_symbol syms[2] = {{"AAA", a, 6}, {"BBB", b, 4}};
    tw_xchg_fault faults[4];
    tw_xchg_fault_parse("gap:2", &faults[0], NULL);
    tw_xchg_fault_parse("reject:3", &faults[1], NULL);
    tw_xchg_fault_parse("slow:1:50", &faults[2], NULL);
    tw_xchg_fault_parse("disconnect:4", &faults[3], NULL);
    tw_xchg_cfg c;
    tw_xchg_cfg_init(&c);
    c.symbols = syms;
    c.n_symbols = 2;
    c.lockstep = !(data[0] & 2);
    c.bar_interval_ns = 10000000;
    c.max_sessions = 3;
    c.max_conns = NC;
    c.max_orders = 40;
    c.max_entries = 1 + (data[0] >> 4) % 3;
    c.epoch_offset_ns = 1767225600000000000ll - 1000000000ll;
    c.logon_timeout_ns = 2000000000;
    c.reconnect_grace_ns = 3000000000ll;
    c.end_timeout_ns = 2000000000;
    if (data[0] & 4) {
        c.faults = faults;
        c.n_faults = 4;
    }
    if (verbose < 0)
        verbose = getenv("FUZZ_EXCHANGE_VERBOSE") != NULL;
    c.on_log = on_log;
    tw_xchg *x;
    TW_VERIFY(tw_xchg_create(&x, &c, NULL) == 0);
    memset(conns, 0, sizeof(conns));
    int64_t now = 1000000000;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    int cur = 0;
    if ((data[0] & 1) == 0) {
        size_t i = 0;
        while (i < n) {
            size_t chunk = 1 + (size_t)(unsigned char)p[i] % 97;
            if (chunk > n - i)
                chunk = n - i;
            feed(x, 0, p + i, chunk, now);
            now += (int64_t)((unsigned char)p[i] % 8) * 250000000LL;
            tw_xchg_poll(x, now);
            check(x);
            i += chunk;
        }
    } else {
        size_t i = 0;
        while (i < n) {
            const char *e = memchr(p + i, '\n', n - i);
            size_t ll = e ? (size_t)(e - (p + i)) : n - i;
            const char *l = p + i;
            if (ll > 0 && l[0] == '+') {
                long ms = 0;
                for (size_t k = 1; k < ll && k < 8 && l[k] >= '0' && l[k] <= '9'; k++)
                    ms = ms * 10 + (l[k] - '0');
                now += (ms ? ms : 1) * 1000000LL;
            } else if (ll > 0 && l[0] == '#') {
                cur = ll > 1 ? (l[1] - '0') & (NC - 1) : 0;
                open_conn(x, cur, now);
            } else if (ll > 0 && l[0] == '!') {
                if (conns[cur].open) {
                    tw_xchg_conn_closed(x, conns[cur].xc, now);
                    conns[cur].open = 0;
                    conns[cur].xc = NULL;
                }
            } else if (ll > 0 && l[0] == '~') {
                tw_xchg_stop(x, now);
            } else if (ll > 0) {
                frame_line(x, cur, l, ll, now);
            }
            tw_xchg_poll(x, now);
            check(x);
            i += ll + 1;
        }
    }
    /* Let the clock run out: timeouts, the end of the run. */
    for (int k = 0; k < 40 && !tw_xchg_done(x); k++) {
        now += 500000000;
        tw_xchg_poll(x, now);
        check(x);
    }
    for (int k = 0; k < NC; k++)
        if (conns[k].open)
            tw_xchg_conn_closed(x, conns[k].xc, now);
    tw_xchg_destroy(x);
    return 0;
}
