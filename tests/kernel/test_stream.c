/* The streaming kernel (tw_stream_*) and the trade log (tw_trades,
 * tw_sweeper_run_trades).
 *
 * - A stream fed bar by bar, and in random chunk sizes (short ones go bar
 *   by bar, long ones through the block kernel), ends with the scalar
 *   reference's pnl and trades, bit for bit, on every ISA; its changed[]
 *   lists are exactly the combos whose position differs from the bar
 *   before, ascending.
 * - The trade log: pnl + (r - fee) over a combo's trades in order is its
 *   pnl bit for bit, their count its trades; entries and exits are the
 *   closes of their bars; each exit is the next trade's entry, sides
 *   alternate; the open position is the stream's.  The threaded sweep's log
 *   is the one-combo log of each combo.
 * - Bad input: windows, fee, memory, prices (state unchanged, counted),
 *   -ENOSPC, the scalar kernel.  Nothing partial. */
#include <errno.h>
#include <pthread.h>

#include "kernel/kernel_internal.h"
#include "kt.h"

static uint64_t seed0 = 20261202;

static void reference(const double *x, size_t n, const int64_t *combos, size_t k, double *pnl,
                      int64_t *trades)
{
    double *scratch = malloc(5 * n * sizeof(double));
    for (size_t c = 0; c < k; c++)
        tw__backtest_scalar(x, n, combos + c * TW_COMBO_WINDOWS, TW_FEE_DEFAULT, scratch,
                            pnl + c, trades + c);
    free(scratch);
}

static tw_stream *new_stream(const int64_t *combos, size_t k, tw_isa isa)
{
    size_t mem = tw_stream_memsize(combos, k);
    CHECK(mem > 0);
    /* Odd alignment on purpose: the stream aligns itself. */
    char *raw = malloc(mem + 8);
    tw_stream *st = (tw_stream *)(void *)(raw + 8);
    tw_error err;
    int rc = tw__stream_init_isa(st, mem, combos, k, TW_FEE_DEFAULT, isa, &err);
    CHECKF(rc == 0, "stream init: %d %s", rc, err.msg);
    return st;
}

static void free_stream(tw_stream *st) { free((char *)st - 8); }

/* Feeds x in chunks (chunk 0: bar by bar through tw_stream_update,
 * checking changed[]), then compares with the reference. */
static void fed(const char *what, const double *x, size_t n, const int64_t *combos, size_t k,
                uint64_t *rs, int chunky)
{
    double *rp = malloc(k * sizeof(double)), *sp = malloc(k * sizeof(double));
    int64_t *rt = malloc(k * sizeof(int64_t)), *stt = malloc(k * sizeof(int64_t));
    int32_t *pos = malloc(k * sizeof(int32_t)), *prev = malloc(k * sizeof(int32_t));
    uint32_t *changed = malloc(k * sizeof(uint32_t));
    reference(x, n, combos, k, rp, rt);
    for (int isa = TW_ISA_SCALAR; isa <= TW_ISA_AVX512; isa++) {
        if (!tw_isa_supported((tw_isa)isa))
            continue;
        tw_stream *st = new_stream(combos, k, (tw_isa)isa);
        CHECK(tw_stream_isa(st) == (tw_isa)isa && tw_stream_combos(st) == k);
        tw_stream_read(st, prev, NULL, NULL, NULL, NULL);
        size_t total_changes = 0, counted = 0;
        for (size_t i = 0; i < n;) {
            size_t m = chunky ? 1 + (size_t)(kt_rand(rs) % 300) : 1;
            if (m > n - i)
                m = n - i;
            if (m == 1 && (!chunky || kt_rand(rs) & 1)) {
                size_t nc = tw_stream_update(st, x[i], changed);
                tw_stream_read(st, pos, NULL, NULL, NULL, NULL);
                size_t want = 0;
                for (size_t c = 0; c < k; c++)
                    if (pos[c] != prev[c]) {
                        CHECKF(want < nc && changed[want] == c,
                               "%s: bar %zu: combo %zu changed but not listed (seed %llu)",
                               what, i, c, (unsigned long long)seed0);
                        want++;
                    }
                CHECKF(want == nc, "%s: bar %zu: %zu listed, %zu changed", what, i, nc, want);
                memcpy(prev, pos, k * sizeof(int32_t));
                total_changes += nc;
            } else {
                size_t nc = 0;
                tw_error err;
                CHECK(tw_stream_update_bars(st, x + i, m, &nc, &err) == 0);
                tw_stream_read(st, pos, NULL, NULL, NULL, NULL);
                memcpy(prev, pos, k * sizeof(int32_t));
                counted += nc;
            }
            i += m;
        }
        (void)total_changes;
        (void)counted;
        CHECK(tw_stream_bars(st) == n && tw_stream_bad_prices(st) == 0);
        tw_stream_read(st, NULL, NULL, NULL, sp, stt);
        for (size_t c = 0; c < k; c++)
            if (!kt_same(sp[c], rp[c]) || stt[c] != rt[c]) {
                CHECKF(0, "%s (%s, %s): combo %zu: pnl %.17g vs %.17g, trades %lld vs %lld "
                       "(seed %llu)", what, chunky ? "chunks" : "bar by bar",
                       tw_isa_name((tw_isa)isa), c, sp[c], rp[c], (long long)stt[c],
                       (long long)rt[c], (unsigned long long)seed0);
                break;
            }
        /* Reset and feed again in one call: the same bits. */
        tw_stream_reset(st);
        CHECK(tw_stream_bars(st) == 0);
        CHECK(tw_stream_update_bars(st, x, n, NULL, NULL) == 0);
        tw_stream_read(st, NULL, NULL, NULL, sp, stt);
        CHECK(memcmp(sp, rp, k * sizeof(double)) == 0 || k == 0);
        CHECK(memcmp(stt, rt, k * sizeof(int64_t)) == 0);
        free_stream(st);
    }
    free(rp);
    free(sp);
    free(rt);
    free(stt);
    free(pos);
    free(prev);
    free(changed);
}

/* ---- the trade log ------------------------------------------------------ */

struct log {
    pthread_mutex_t mu;
    size_t k;
    tw_trade **t; /* per combo */
    size_t *n, *cap;
    int out_of_order;
};

static void log_init(struct log *l, size_t k)
{
    pthread_mutex_init(&l->mu, NULL);
    l->k = k;
    l->t = calloc(k, sizeof(*l->t));
    l->n = calloc(k, sizeof(size_t));
    l->cap = calloc(k, sizeof(size_t));
    l->out_of_order = 0;
}

static void log_free(struct log *l)
{
    for (size_t c = 0; c < l->k; c++)
        free(l->t[c]);
    free(l->t);
    free(l->n);
    free(l->cap);
    pthread_mutex_destroy(&l->mu);
}

/* Called from several threads (different combos at once). */
static void on_trade(void *ctx, const tw_trade *t)
{
    struct log *l = ctx;
    size_t c = (size_t)t->combo;
    if (c >= l->k)
        return;
    if (l->n[c] == l->cap[c]) {
        l->cap[c] = l->cap[c] ? 2 * l->cap[c] : 64;
        l->t[c] = realloc(l->t[c], l->cap[c] * sizeof(tw_trade));
    }
    if (l->n[c] && t->entry_bar < l->t[c][l->n[c] - 1].exit_bar)
        l->out_of_order = 1;
    l->t[c][l->n[c]++] = *t;
}

/* The same trade, the combo index aside (a one-combo log numbers its combo
 * 0); field by field, since the struct has padding. */
static int trade_eq(const tw_trade *a, const tw_trade *b)
{
    return a->entry_bar == b->entry_bar && a->exit_bar == b->exit_bar &&
           kt_same(a->entry_price, b->entry_price) && kt_same(a->exit_price, b->exit_price) &&
           kt_same(a->r, b->r) && a->side == b->side;
}

static int trades_eq(const tw_trade *a, const tw_trade *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!trade_eq(a + i, b + i))
            return 0;
    return 1;
}

/* The log of one combo against its totals and the series. */
static void check_log(const char *what, const double *x, size_t n, size_t c, const tw_trade *t,
                      size_t nt, double pnl, int64_t trades, const tw_position *open)
{
    double sum = 0.0;
    for (size_t i = 0; i < nt; i++) {
        sum = sum + (t[i].r - TW_FEE_DEFAULT);
        int ok = t[i].combo == c && t[i].entry_bar < t[i].exit_bar &&
                 (size_t)t[i].exit_bar < n && (t[i].side == 1 || t[i].side == -1) &&
                 kt_same(t[i].entry_price, x[t[i].entry_bar]) &&
                 kt_same(t[i].exit_price, x[t[i].exit_bar]);
        double r = t[i].side == 1 ? (t[i].exit_price / t[i].entry_price - 1.0) * 100.0
                                  : (1.0 - t[i].exit_price / t[i].entry_price) * 100.0;
        ok = ok && kt_same(r, t[i].r);
        if (i + 1 < nt)
            ok = ok && t[i + 1].entry_bar == t[i].exit_bar && t[i + 1].side == -t[i].side;
        if (!ok) {
            CHECKF(0, "%s: combo %zu trade %zu is inconsistent (seed %llu)", what, c, i,
                   (unsigned long long)seed0);
            return;
        }
    }
    CHECKF(kt_same(sum, pnl) && (int64_t)nt == trades,
           "%s: combo %zu: log sums to %.17g over %zu trades, sweep %.17g over %lld", what, c,
           sum, nt, pnl, (long long)trades);
    if (nt)
        CHECK(open->side == -t[nt - 1].side && open->entry_bar == t[nt - 1].exit_bar);
    if (open->side)
        CHECK(kt_same(open->entry_price, x[open->entry_bar]));
    else
        CHECK(open->entry_bar == -1 && nt == 0);
}

static void trade_log(const char *what, const double *x, size_t n, const int64_t *combos,
                      size_t k)
{
    double *rp = malloc(k * sizeof(double)), *p = malloc(k * sizeof(double));
    int64_t *rt = malloc(k * sizeof(int64_t)), *t = malloc(k * sizeof(int64_t));
    tw_position *open = malloc(k * sizeof(tw_position));
    reference(x, n, combos, k, rp, rt);
    for (unsigned th = 1; th <= 3; th += 2) {
        tw_sweep_opts o;
        tw_sweep_opts_init(&o);
        o.threads = th;
        o.block_bars = th == 3 ? 64 : 0;
        tw_sweeper *s;
        REQUIRE(tw_sweeper_create(&s, n, &o) == 0);
        struct log l;
        log_init(&l, k);
        tw_error err;
        int rc = tw_sweeper_run_trades(s, x, n, combos, k, p, t, on_trade, &l, open, &err);
        CHECKF(rc == 0, "run_trades: %d %s", rc, err.msg);
        CHECK(!l.out_of_order);
        CHECK(memcmp(p, rp, k * sizeof(double)) == 0 && memcmp(t, rt, k * sizeof(int64_t)) == 0);
        for (size_t c = 0; c < k; c++) {
            check_log(what, x, n, c, l.t[c], l.n[c], rp[c], rt[c], &open[c]);
            /* The one-combo log: the same trades, the same open position. */
            size_t nt = 0;
            double p1;
            int64_t t1;
            tw_position op1;
            tw_trade *one = malloc((l.n[c] + 1) * sizeof(tw_trade));
            rc = tw_trades(x, n, combos + c * TW_COMBO_WINDOWS, TW_FEE_DEFAULT, one, l.n[c] + 1,
                           &nt, &op1, &p1, &t1, &err);
            CHECKF(rc == 0, "tw_trades: %d %s", rc, err.msg);
            CHECK(nt == l.n[c] && trades_eq(one, l.t[c], nt) && (nt == 0 || one[0].combo == 0));
            CHECK(op1.side == open[c].side && op1.entry_bar == open[c].entry_bar &&
                  kt_same(p1, rp[c]) && t1 == rt[c]);
            if (nt > 1) {
                /* Too small a buffer: -ENOSPC, the count, the first cap
                 * trades, the totals. */
                size_t nt2 = 0;
                memset(one, 0, nt * sizeof(tw_trade));
                rc = tw_trades(x, n, combos + c * TW_COMBO_WINDOWS, TW_FEE_DEFAULT, one, 1, &nt2,
                               NULL, &p1, NULL, &err);
                CHECK(rc == -ENOSPC && nt2 == nt && trades_eq(one, l.t[c], 1) &&
                      kt_same(p1, rp[c]));
                CHECK(one[1].combo == 0 && one[1].entry_bar == 0);
            }
            free(one);
        }
        log_free(&l);
        tw_sweeper_destroy(s);
    }
    free(rp);
    free(p);
    free(rt);
    free(t);
    free(open);
}

/* ---- bad input ----------------------------------------------------------- */

static void bad_input(void)
{
    int64_t good[TW_COMBO_WINDOWS] = {3, 6, 2, 1, 2, 3};
    int64_t bad[2 * TW_COMBO_WINDOWS] = {3, 6, 2, 1, 2, 3, 3, 6, 0, 1, 2, 3};
    int64_t huge[TW_COMBO_WINDOWS] = {3, 6, 2, 1, 2, 100001};
    tw_error err;
    CHECK(tw_stream_memsize(bad, 2) == 0);
    CHECK(tw_stream_memsize(good, 0) == 0);
    CHECK(tw_stream_memsize(NULL, 1) == 0);
    size_t mem = tw_stream_memsize(good, 1);
    CHECK(mem > 0);
    void *m = malloc(mem);
    CHECK(tw_stream_init(NULL, mem, good, 1, 0.09, &err) == -EINVAL);
    CHECK(tw_stream_init(m, mem, bad, 2, 0.09, &err) == -TW_EBADWINDOW);
    CHECK(strstr(err.msg, "combo 1") && strstr(err.msg, "h_sqrt = 0"));
    CHECK(tw_stream_init(m, mem, huge, 1, 0.09, &err) == -TW_EBADWINDOW);
    CHECK(strstr(err.msg, "t_full = 100001"));
    CHECK(tw_stream_init(m, mem, good, 0, 0.09, &err) == -TW_ENODATA);
    CHECK(tw_stream_init(m, mem, good, 1, NAN, &err) == -EINVAL);
    CHECK(tw_stream_init(m, mem, good, 1, INFINITY, &err) == -EINVAL);
    CHECK(tw_stream_init(m, mem - 1, good, 1, 0.09, &err) == -EINVAL);
    CHECK(strstr(err.msg, "too small"));
    CHECK(tw_stream_init(m, 16, good, 1, 0.09, &err) == -EINVAL);

    /* Bad prices: refused, counted, nothing changed. */
    REQUIRE(tw_stream_init(m, mem, good, 1, 0.09, &err) == 0);
    tw_stream *st = m;
    double warm[40];
    tw_gen_closes(warm, 40, 3, 0.01);
    CHECK(tw_stream_update_bars(st, warm, 40, NULL, &err) == 0);
    tw_combo_state before, after;
    CHECK(tw_stream_get(st, 0, &before) == 0);
    CHECK(tw_stream_get(st, 1, &after) == -EINVAL);
    const double bads[] = {0.0, -1.0, INFINITY, -INFINITY, -0.0};
    uint32_t ch[1];
    for (size_t i = 0; i < TW_ARRAY_SIZE(bads); i++) {
        CHECK(tw_stream_update(st, bads[i], ch) == 0);
        size_t nc = 99;
        CHECK(tw_stream_push(st, bads[i], ch, &nc, &err) == -TW_EBADPRICE && nc == 99);
        CHECK(strstr(err.msg, "bad price at bar 40"));
    }
    CHECK(tw_stream_bars(st) == 40 && tw_stream_bad_prices(st) == 2 * TW_ARRAY_SIZE(bads));
    double chunk[20];
    tw_gen_closes(chunk, 20, 4, 0.01);
    chunk[17] = -3.0;
    size_t nch = 7;
    CHECK(tw_stream_update_bars(st, chunk, 20, &nch, &err) == -TW_EBADPRICE && nch == 0);
    CHECK(strstr(err.msg, "element 17") && strstr(err.msg, "no bar taken"));
    CHECK(tw_stream_bars(st) == 40);
    CHECK(tw_stream_get(st, 0, &after) == 0);
    CHECK(before.position == after.position && before.entry_bar == after.entry_bar &&
          kt_same(before.entry_price, after.entry_price) && kt_same(before.pnl, after.pnl) &&
          before.trades == after.trades);
    /* NaN is a gap, not an error. */
    size_t nc = 0;
    CHECK(tw_stream_push(st, NAN, ch, &nc, &err) == 0 && tw_stream_bars(st) == 41);
    free(m);

    /* tw_trades: bad input writes nothing. */
    double x[5] = {100, 101, -1, 102, 103};
    tw_trade tr[4];
    size_t nt = 77;
    double p = 5.5;
    memset(tr, 0x5a, sizeof(tr));
    CHECK(tw_trades(x, 5, good, 0.09, tr, 4, &nt, NULL, &p, NULL, &err) == -TW_EBADPRICE);
    CHECK(nt == 77 && p == 5.5 && ((unsigned char *)tr)[0] == 0x5a);
    x[2] = 101.5;
    CHECK(tw_trades(x, 5, bad + TW_COMBO_WINDOWS, 0.09, tr, 4, &nt, NULL, &p, NULL, &err) ==
          -TW_EBADWINDOW);
    CHECK(tw_trades(x, 0, good, 0.09, tr, 4, &nt, NULL, &p, NULL, &err) == -TW_ENODATA);
    CHECK(tw_trades(x, 5, good, NAN, tr, 4, &nt, NULL, &p, NULL, &err) == -EINVAL);
    CHECK(nt == 77 && p == 5.5);

    /* The trade log comes from the exact kernel. */
    tw_sweep_opts o;
    tw_sweep_opts_init(&o);
    o.kernel = TW_KERNEL_SCALAR;
    tw_sweeper *s;
    REQUIRE(tw_sweeper_create(&s, 10, &o) == 0);
    double pp = 1;
    int64_t tt = 1;
    CHECK(tw_sweeper_run_trades(s, x, 5, good, 1, &pp, &tt, on_trade, NULL, NULL, &err) ==
          -EINVAL);
    CHECK(pp == 1 && tt == 1 && strstr(err.msg, "exact kernel"));
    tw_sweeper_destroy(s);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        seed0 = strtoull(argv[1], NULL, 0);
    uint64_t rs = seed0;
    printf("kernel_stream: seed %llu\n", (unsigned long long)seed0);
    int64_t g[TW_GRID_DEFAULT_COMBOS * TW_COMBO_WINDOWS];
    size_t kg = tw_grid_default(g);
    {
        enum { N = 5000 };
        double *x = malloc(N * sizeof(double));
        tw_gen_closes(x, N, 42, 0.0008);
        fed("default grid", x, N, g, kg, &rs, 0);
        fed("default grid", x, N, g, kg, &rs, 1);
        trade_log("default grid", x, N, g, kg);
        kt_series(&rs, x, N, 15);
        fed("default grid, NaN gaps", x, N, g, kg, &rs, 1);
        trade_log("NaN gaps", x, N, g, kg);
        free(x);
    }
    {
        enum { N = 2500, K = 20 };
        double *x = malloc(N * sizeof(double));
        int64_t c[K * TW_COMBO_WINDOWS];
        kt_series(&rs, x, N, 6);
        for (size_t i = 0; i < K * TW_COMBO_WINDOWS; i++)
            c[i] = 1 + 2 * (int64_t)(kt_rand(&rs) % 200); /* odd, up to 399 */
        fed("odd windows <= 400", x, N, c, K, &rs, 0);
        fed("odd windows <= 400", x, N, c, K, &rs, 1);
        trade_log("odd windows", x, N, c, K);
        /* Fewer bars than every window. */
        for (size_t i = 0; i < K * TW_COMBO_WINDOWS; i++)
            c[i] = 301 + (int64_t)(kt_rand(&rs) % 300);
        fed("n < every window", x, 200, c, K, &rs, 1);
        trade_log("n < every window", x, 200, c, K);
        free(x);
    }
    /* One combo, one bar; windows of 1. */
    {
        double x[300];
        kt_series(&rs, x, 300, 2);
        int64_t ones[TW_COMBO_WINDOWS] = {1, 1, 1, 1, 1, 1};
        fed("n = 1", x, 1, g, kg, &rs, 0);
        fed("windows of 1", x, 300, ones, 1, &rs, 1);
        trade_log("windows of 1", x, 300, ones, 1);
    }
    bad_input();
    return tw_check_done("kernel_stream");
}
