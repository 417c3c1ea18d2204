/* Kernels by name: the built-ins, the host's books, the generic sweep
 * against hma_sar's exact SIMD sweep (same bits, trade lists included),
 * zscore against a plain loop written here from docs/kernel.md, streams
 * against sweeps, thread counts. */
#include <errno.h>
#include <pthread.h>

#include "kernel/kernel_internal.h"
#include "kt.h"

/* ---- a trade log per combo ---------------------------------------------- */

struct tlog {
    pthread_mutex_t mu;
    tw_trade *t;
    size_t n, cap;
};

static void tlog_fn(void *ctx, const tw_trade *t)
{
    struct tlog *l = ctx;
    pthread_mutex_lock(&l->mu);
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->t = realloc(l->t, l->cap * sizeof(tw_trade));
        REQUIRE(l->t);
    }
    l->t[l->n++] = *t;
    pthread_mutex_unlock(&l->mu);
}

static int cmp_trade(const void *a, const void *b)
{
    const tw_trade *x = a, *y = b;
    if (x->combo != y->combo)
        return x->combo < y->combo ? -1 : 1;
    return x->exit_bar < y->exit_bar ? -1 : x->exit_bar > y->exit_bar;
}

static int same_trades(struct tlog *a, struct tlog *b)
{
    if (a->n != b->n)
        return 0;
    if (a->n == 0)
        return 1;
    qsort(a->t, a->n, sizeof(tw_trade), cmp_trade);
    qsort(b->t, b->n, sizeof(tw_trade), cmp_trade);
    for (size_t i = 0; i < a->n; i++) {
        const tw_trade *x = &a->t[i], *y = &b->t[i];
        if (x->combo != y->combo || x->entry_bar != y->entry_bar || x->exit_bar != y->exit_bar ||
            !kt_same(x->entry_price, y->entry_price) || !kt_same(x->exit_price, y->exit_price) ||
            !kt_same(x->r, y->r) || x->side != y->side)
            return 0;
    }
    return 1;
}

static int same_result(const tw_kresult *a, const tw_kresult *b)
{
    return kt_same(a->pnl, b->pnl) && a->trades == b->trades && a->wins == b->wins &&
           kt_same(a->max_drawdown, b->max_drawdown) && kt_same(a->exposure, b->exposure) &&
           a->open.side == b->open.side && a->open.entry_bar == b->open.entry_bar &&
           kt_same(a->open.entry_price, b->open.entry_price) && a->stopped == b->stopped;
}

/* ---- the books, rule by rule ----------------------------------------------- */

static int scripted_step(void *state, double close)
{
    const int *t = *(const int *const *)state;
    (void)close;
    int v = t[0];
    *(const int **)state = t + 1;
    return v;
}

static void test_kbook(void)
{
    tw_kernel_def d = {.abi = TW_KERNEL_ABI, .name = "script", .step = scripted_step};
    /* targets and closes; NaN books nothing. */
    static const int tg[] = {0, 1, 1, -1, 0, 0, -1, 1, 1, 0, 5, 1};
    const double cl[] = {100, 100, 101, 102, 99, NAN, 98, NAN, 96, 97, 95, 90};
    const int *cur = tg;
    tw_kbook b;
    tw_kbook_init(&b);
    CHECK(b.pos == 0 && b.entry_bar == -1 && b.pnl == 0.0 && b.bars == 0);
    const double fee = 0.09;
    tw_trade t;
    int closed, pos;
    /* bar 0: target 0, flat. */
    pos = tw_kbook_bar(&b, &d, &cur, cl[0], 0, fee, &t, &closed);
    CHECK(pos == 0 && !closed && b.bars == 1 && b.bars_in_pos == 0);
    /* bar 1: enter long at 100, not a trade. */
    pos = tw_kbook_bar(&b, &d, &cur, cl[1], 1, fee, &t, &closed);
    CHECK(pos == 1 && !closed && b.entry_bar == 1 && b.entry_price == 100.0 && b.trades == 0);
    /* bar 2: hold. */
    pos = tw_kbook_bar(&b, &d, &cur, cl[2], 2, fee, &t, &closed);
    CHECK(pos == 1 && !closed);
    /* bar 3: reverse at 102: r = (102/100 - 1) * 100. */
    pos = tw_kbook_bar(&b, &d, &cur, cl[3], 3, fee, &t, &closed);
    double r1 = (102.0 / 100.0 - 1.0) * 100.0, p1 = 0.0 + (r1 - fee);
    CHECK(pos == -1 && closed && t.side == 1 && t.entry_bar == 1 && t.exit_bar == 3 &&
          kt_same(t.r, r1) && kt_same(b.pnl, p1) && b.trades == 1 && b.wins == 1);
    CHECK(b.entry_bar == 3 && b.entry_price == 102.0);
    /* bar 4: flat at 99: a short's r = (1 - 99/102) * 100. */
    pos = tw_kbook_bar(&b, &d, &cur, cl[4], 4, fee, &t, &closed);
    double r2 = (1.0 - 99.0 / 102.0) * 100.0, p2 = p1 + (r2 - fee);
    CHECK(pos == 0 && closed && t.side == -1 && kt_same(b.pnl, p2) && b.trades == 2 &&
          b.wins == 2 && b.entry_bar == -1 && b.entry_price == 0.0);
    /* bar 5: NaN with target 0: nothing. */
    pos = tw_kbook_bar(&b, &d, &cur, cl[5], 5, fee, &t, &closed);
    CHECK(pos == 0 && !closed && b.bars == 6);
    /* bar 6: short at 98. */
    pos = tw_kbook_bar(&b, &d, &cur, cl[6], 6, fee, &t, &closed);
    CHECK(pos == -1 && b.entry_price == 98.0);
    /* bar 7: NaN with target +1: held short, nothing booked. */
    pos = tw_kbook_bar(&b, &d, &cur, cl[7], 7, fee, &t, &closed);
    CHECK(pos == -1 && !closed && b.trades == 2);
    /* bar 8: reverse to long at 96 (a win for the short). */
    pos = tw_kbook_bar(&b, &d, &cur, cl[8], 8, fee, &t, &closed);
    double r3 = (1.0 - 96.0 / 98.0) * 100.0, p3 = p2 + (r3 - fee);
    CHECK(pos == 1 && closed && kt_same(b.pnl, p3) && b.trades == 3 && b.wins == 3);
    /* bar 9: flat at 97: a long's win of about 1.04 pp. */
    pos = tw_kbook_bar(&b, &d, &cur, cl[9], 9, fee, &t, &closed);
    double r4 = (97.0 / 96.0 - 1.0) * 100.0, p4 = p3 + (r4 - fee);
    CHECK(pos == 0 && closed && kt_same(b.pnl, p4) && b.trades == 4);
    CHECK(kt_same(b.peak, p4) && b.max_drawdown == 0.0);
    /* bar 10: target 5 stops the instance, nothing booked from it. */
    uint64_t bars = b.bars;
    pos = tw_kbook_bar(&b, &d, &cur, cl[10], 10, fee, &t, &closed);
    CHECK(pos == 0 && !closed && b.stopped && b.bars == bars);
    pos = tw_kbook_bar(&b, &d, &cur, cl[11], 11, fee, &t, &closed);
    CHECK(pos == 0 && !closed && b.bars == bars && cur == tg + 11);
    /* bars in a position: 1, 2, 3 (long/short), 6, 7, 8 -> 6 of 10. */
    CHECK(b.bars_in_pos == 6);

    /* A losing trade after a peak: drawdown. */
    static const int tg2[] = {1, -1, 1};
    const double c2[] = {100, 110, 100};
    cur = tg2;
    tw_kbook_init(&b);
    for (int i = 0; i < 3; i++)
        tw_kbook_bar(&b, &d, &cur, c2[i], i, fee, NULL, NULL);
    double w = (110.0 / 100.0 - 1.0) * 100.0 - fee, l = (1.0 - 100.0 / 110.0) * 100.0 - fee;
    CHECK(b.trades == 2 && b.wins == 2 && kt_same(b.pnl, (0.0 + w) + l));
    static const int tg3[] = {1, -1, 1};
    const double c3[] = {100, 110, 120};
    cur = tg3;
    tw_kbook_init(&b);
    for (int i = 0; i < 3; i++)
        tw_kbook_bar(&b, &d, &cur, c3[i], i, fee, NULL, NULL);
    double loss = (1.0 - 120.0 / 110.0) * 100.0 - fee;
    CHECK(b.trades == 2 && b.wins == 1 && kt_same(b.peak, 0.0 + w) &&
          kt_same(b.max_drawdown, (0.0 + w) - ((0.0 + w) + loss)));
}

/* ---- the registry and the checks ------------------------------------------ */

static void test_registry(void)
{
    tw_error err;
    const tw_kernel_def *d = NULL;
    CHECK(tw_kernel_builtin_count() == 2);
    CHECK(tw_kernel_builtin(2) == NULL);
    CHECK(strcmp(tw_kernel_builtin(0)->name, "hma_sar") == 0);
    CHECK(tw_kernel_find("zscore", &d, &err) == 0 && d == tw_kernel_builtin(1));
    CHECK(tw_kernel_find("nope", &d, &err) == -ENOENT && strstr(err.msg, "nope"));
    CHECK(tw_kernel_find("./missing.so", &d, &err) == -ENOENT && strstr(err.msg, "missing.so"));
    for (size_t i = 0; i < tw_kernel_builtin_count(); i++) {
        CHECKF(tw_kernel_check_def(tw_kernel_builtin(i), &err) == 0, "%s", err.msg);
        CHECKF(tw_kernel_probe(tw_kernel_builtin(i), &err) == 0, "%s", err.msg);
    }
    const tw_kernel_def *hs = tw_kernel_builtin(0), *zs = tw_kernel_builtin(1);
    CHECK(tw_kernel_param_index(hs, "t_full") == 5 && tw_kernel_param_index(hs, "x") == -1);
    CHECK(tw_kernel_param_index(zs, "exit") == 2);
    double ok[3] = {20, 2.0, 0.5};
    CHECK(tw_kernel_check_combo(zs, ok, &err) == 0);
    double c1[3] = {20.5, 2.0, 0.5};
    CHECK(tw_kernel_check_combo(zs, c1, &err) == -EINVAL && strstr(err.msg, "window") &&
          strstr(err.msg, "integer"));
    double c2[3] = {1, 2.0, 0.5};
    CHECK(tw_kernel_check_combo(zs, c2, &err) == -EINVAL && strstr(err.msg, "outside"));
    double c3[3] = {20, 2.0, 2.0}; /* exit >= entry: init refuses */
    CHECK(tw_kernel_check_combo(zs, c3, &err) == -EINVAL && strstr(err.msg, "init"));
    double c4[3] = {20, NAN, 0.5};
    CHECK(tw_kernel_check_combo(zs, c4, &err) == -EINVAL && strstr(err.msg, "entry"));
    double h1[6] = {3, 6, 2, 1, 2, 100001};
    CHECK(tw_kernel_check_combo(hs, h1, &err) == -EINVAL && strstr(err.msg, "t_full"));
    double h2[6] = {100000, 100000, 100000, 100000, 100000, 100000};
    CHECK(tw_kernel_check_combo(hs, h2, &err) == 0);
    double *g;
    size_t ng;
    CHECK(tw_kernel_default_grid(zs, &g, &ng, &err) == 0 && ng == 114);
    if (ng == 114) {
        CHECK(g[0] == 20 && g[1] == 1.5 && g[2] == 0.0 && g[3] == 20 && g[5] == 0.5);
        CHECK(g[113 * 3] == 380 && g[113 * 3 + 1] == 2.5 && g[113 * 3 + 2] == 0.5);
    }
    free(g);
    CHECK(tw_kernel_default_grid(hs, &g, &ng, &err) == 0 && ng == 80);
    if (ng == 80)
        CHECK(g[0] == 3 && g[1] == 6 && g[2] == 2 && g[3] == 1 && g[4] == 2 && g[5] == 3);
    free(g);
}

/* ---- zscore against a plain loop --------------------------------------------- */

/* docs/kernel.md's zscore, written again as one loop. */
static void zscore_ref(const double *x, size_t n, int64_t W, double entry, double ex,
                       double fee, tw_kresult *r)
{
    double *ring = malloc((size_t)W * sizeof(double));
    double K = 0, S = 0, Q = 0, pnl = 0, ep = 0;
    int64_t seen = 0, head = 0, trades = 0, eb = -1;
    int target = 0, pos = 0;
    for (size_t i = 0; i < n; i++) {
        double c = x[i];
        if (!isnan(c)) {
            if (seen == 0)
                K = c;
            double y = c - K;
            if (seen < W) {
                S = S + y;
                Q = Q + y * y;
                ring[seen] = y;
            } else {
                double old = ring[head];
                S = S + (y - old);
                Q = Q + (y * y - old * old);
                ring[head] = y;
                head = (head + 1) % W;
            }
            seen++;
            if (seen >= W) {
                double mean = S / (double)W, var = Q / (double)W - mean * mean;
                if (var > 0.0) {
                    double z = (y - mean) / sqrt(var);
                    if (z > entry)
                        target = -1;
                    else if (z < -entry)
                        target = 1;
                    else if (fabs(z) < ex)
                        target = 0;
                }
            }
            if (target != pos) {
                if (pos != 0) {
                    double rr = pos == 1 ? (c / ep - 1.0) * 100.0 : (1.0 - c / ep) * 100.0;
                    pnl = pnl + (rr - fee);
                    trades++;
                }
                pos = target;
                ep = pos ? c : 0.0;
                eb = pos ? (int64_t)i : -1;
            }
        }
    }
    r->pnl = pnl;
    r->trades = trades;
    r->open.side = pos;
    r->open.entry_bar = eb;
    r->open.entry_price = ep;
    free(ring);
}

static void test_zscore(const double *x, size_t n, const char *what)
{
    const tw_kernel_def *zs = tw_kernel_builtin(1);
    double *g;
    size_t ng;
    tw_error err;
    REQUIRE(tw_kernel_default_grid(zs, &g, &ng, &err) == 0);
    tw_kresult *r1 = calloc(ng, sizeof(tw_kresult)), *r2 = calloc(ng, sizeof(tw_kresult));
    tw_ksweep_opts o;
    tw_ksweep_opts_init(&o);
    o.threads = 1;
    CHECKF(tw_ksweep(zs, x, n, g, ng, &o, r1, NULL, NULL, &err) == 0, "%s", err.msg);
    o.threads = 2;
    CHECK(tw_ksweep(zs, x, n, g, ng, &o, r2, NULL, NULL, &err) == 0);
    int same = 1, ref = 1, any = 0;
    for (size_t k = 0; k < ng; k++) {
        tw_kresult want;
        zscore_ref(x, n, (int64_t)g[k * 3], g[k * 3 + 1], g[k * 3 + 2], o.fee, &want);
        same &= same_result(&r1[k], &r2[k]);
        ref &= kt_same(r1[k].pnl, want.pnl) && r1[k].trades == want.trades &&
               r1[k].open.side == want.open.side && r1[k].open.entry_bar == want.open.entry_bar;
        any |= r1[k].trades > 0;
    }
    CHECKF(same, "%s: zscore 1 and 2 threads differ", what);
    CHECKF(ref, "%s: zscore differs from the plain loop", what);
    CHECKF(any, "%s: zscore traded nowhere", what);
    free(r1);
    free(r2);
    free(g);
}

/* ---- generic, fast and stream: the same bits ------------------------------ */

static void compare_paths(const tw_kernel_def *def, const double *x, size_t n, const double *g,
                          size_t ng, const char *what)
{
    tw_error err;
    tw_kresult *rf = calloc(ng, sizeof(tw_kresult)), *rg = calloc(ng, sizeof(tw_kresult));
    struct tlog lf = {.mu = PTHREAD_MUTEX_INITIALIZER}, lg = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct tlog ls = {.mu = PTHREAD_MUTEX_INITIALIZER};
    tw_ksweep_opts o;
    tw_ksweep_opts_init(&o);
    o.threads = 2;
    CHECKF(tw_ksweep(def, x, n, g, ng, &o, rf, tlog_fn, &lf, &err) == 0, "%s", err.msg);
    o.generic = 1;
    o.threads = 1;
    CHECKF(tw_ksweep(def, x, n, g, ng, &o, rg, tlog_fn, &lg, &err) == 0, "%s", err.msg);
    int same = 1;
    for (size_t k = 0; k < ng; k++)
        same &= same_result(&rf[k], &rg[k]);
    CHECKF(same, "%s %s: the sweep paths' results differ", def->name, what);
    CHECKF(same_trades(&lf, &lg), "%s %s: the sweep paths' trade lists differ (%zu, %zu)",
           def->name, what, lf.n, lg.n);

    /* The stream, bar by bar, with a snapshot copied halfway and resumed. */
    size_t mb = tw_kstream_memsize(def, g, ng);
    REQUIRE(mb > 0);
    tw_kstream *ks = aligned_alloc(64, (mb + 63) & ~(size_t)63);
    REQUIRE(ks);
    CHECKF(tw_kstream_init(ks, mb, def, g, ng, o.fee, &err) == 0, "%s", err.msg);
    tw_kstream_set_trade_fn(ks, tlog_fn, &ls);
    uint32_t *changed = malloc(ng * sizeof(uint32_t));
    tw_kstream *snap = aligned_alloc(64, (mb + 63) & ~(size_t)63);
    REQUIRE(snap && changed);
    for (size_t i = 0; i < n; i++) {
        size_t nc;
        if (i == n / 2) {
            memcpy(snap, ks, mb);
            memset(ks, 0x5a, mb);
            memcpy(ks, snap, mb);
        }
        CHECK(tw_kstream_push(ks, x[i], changed, &nc, &err) == 0);
    }
    CHECK(tw_kstream_bars(ks) == n && tw_kstream_combos(ks) == ng && tw_kstream_kernel(ks) == def);
    same = 1;
    for (size_t k = 0; k < ng; k++) {
        tw_kresult r;
        CHECK(tw_kstream_get(ks, k, &r) == 0);
        same &= same_result(&r, &rg[k]);
    }
    CHECKF(same, "%s %s: the stream differs from the sweep", def->name, what);
    CHECKF(same_trades(&ls, &lg), "%s %s: the stream's trade list differs", def->name, what);
    tw_kresult r;
    CHECK(tw_kstream_get(ks, ng, &r) == -EINVAL);
    CHECK(tw_kstream_push(ks, -1.0, changed, NULL, &err) == -TW_EBADPRICE);
    CHECK(tw_kstream_bars(ks) == n);
    free(ks);
    free(snap);
    free(changed);
    free(rf);
    free(rg);
    free(lf.t);
    free(lg.t);
    free(ls.t);
}

static void test_hma_sar(const double *x, size_t n, const char *what)
{
    const tw_kernel_def *hs = tw_kernel_builtin(0);
    double *g;
    size_t ng;
    tw_error err;
    REQUIRE(tw_kernel_default_grid(hs, &g, &ng, &err) == 0);
    compare_paths(hs, x, n, g, 24, what); /* the 24 shortest lengths keep it quick */
    /* pnl and trades also equal tw_sweep's. */
    int64_t c[24 * 6];
    for (size_t i = 0; i < 24 * 6; i++)
        c[i] = (int64_t)g[i];
    double pnl[24];
    int64_t tr[24];
    tw_kresult r[24];
    tw_ksweep_opts o;
    tw_ksweep_opts_init(&o);
    o.generic = 1;
    CHECK(tw_sweep(x, n, c, 24, NULL, pnl, tr, &err) == 0);
    CHECK(tw_ksweep(hs, x, n, g, 24, &o, r, NULL, NULL, &err) == 0);
    int same = 1;
    for (int k = 0; k < 24; k++)
        same &= kt_same(pnl[k], r[k].pnl) && tr[k] == r[k].trades;
    CHECKF(same, "hma_sar %s: generic differs from tw_sweep", what);
    free(g);
}

static void test_errors(const double *x, size_t n)
{
    const tw_kernel_def *zs = tw_kernel_builtin(1);
    tw_error err;
    tw_kresult r[2];
    double g[6] = {20, 2.0, 0.5, 20, 1.0, 1.5};
    CHECK(tw_ksweep(zs, x, n, g, 2, NULL, r, NULL, NULL, &err) == -EINVAL &&
          strstr(err.msg, "combo 1"));
    CHECK(tw_ksweep(zs, x, n, g, 0, NULL, r, NULL, NULL, &err) == -TW_ENODATA);
    double bad[3] = {100, -1, 100};
    CHECK(tw_ksweep(zs, bad, 3, g, 1, NULL, r, NULL, NULL, &err) == -TW_EBADPRICE);
    CHECK(tw_kstream_memsize(zs, g, 2) > 0);
    CHECK(tw_kstream_memsize(zs, g, 0) == 0);
}

/* A kernel that goes long above 100, short below, and returns 7 (a bad
 * value) on the bar whose close is above p[0]. */
static size_t bad_sb(const double *p)
{
    (void)p;
    return 16;
}
static int bad_init(void *s, const double *p)
{
    memcpy(s, p, sizeof(double));
    return 0;
}
static int bad_step(void *s, double c)
{
    double lim;
    memcpy(&lim, s, sizeof(lim));
    if (isnan(c))
        return 0;
    return c > lim ? 7 : c > 100.0 ? 1 : -1;
}
static const tw_kparam bad_params[1] = {{.name = "lim", .lo = 0, .hi = 1e9, .dflt = 1e9}};
static const tw_kernel_def bad_def = {.abi = TW_KERNEL_ABI, .name = "stopper", .n_params = 1,
                                      .params = bad_params, .state_bytes = bad_sb,
                                      .init = bad_init, .step = bad_step};

static void test_stopped(void)
{
    const double x[8] = {99, 101, 99, 101, 104, 99, 101, 99};
    const double g[2] = {103, 1e9}; /* combo 0 stops at bar 4, combo 1 never */
    tw_kresult r[2];
    tw_error err;
    tw_ksweep_opts o;
    tw_ksweep_opts_init(&o);
    o.threads = 2;
    CHECKF(tw_ksweep(&bad_def, x, 8, g, 2, &o, r, NULL, NULL, &err) == 0, "%s", err.msg);
    CHECK(r[0].stopped == 1 && r[0].trades == 3 && r[0].open.side == 1 && r[0].open.entry_bar == 3);
    CHECK(r[1].stopped == 0 && r[1].trades == 6 && r[1].open.side == -1);
    CHECK(kt_same(r[0].exposure, 1.0)); /* 4 bars booked, all in a position */
    size_t mb = tw_kstream_memsize(&bad_def, g, 2);
    tw_kstream *ks = aligned_alloc(64, (mb + 63) & ~(size_t)63);
    REQUIRE(ks);
    CHECK(tw_kstream_init(ks, mb, &bad_def, g, 2, o.fee, &err) == 0);
    for (int i = 0; i < 8; i++)
        CHECK(tw_kstream_push(ks, x[i], NULL, NULL, &err) == 0);
    for (size_t k = 0; k < 2; k++) {
        tw_kresult s;
        CHECK(tw_kstream_get(ks, k, &s) == 0 && same_result(&s, &r[k]));
    }
    free(ks);
}

int main(void)
{
    test_stopped();
    test_kbook();
    test_registry();
    size_t n = 20000;
    double *x = malloc(n * sizeof(double)), *gx = malloc(n * sizeof(double));
    if (!x || !gx)
        return 1;
    tw_gen_closes(x, n, 7, 0.002);
    uint64_t rs = 99;
    kt_series(&rs, gx, n, 60);
    test_hma_sar(x, n, "generated");
    test_hma_sar(gx, n, "gapped");
    compare_paths(tw_kernel_builtin(1), gx, n, (const double[]){40, 2.0, 0.5, 20, 1.5, 0.0}, 2,
                  "gapped");
    test_zscore(x, n, "generated");
    test_zscore(gx, n, "gapped");
    /* Degenerate: constant prices (std 0 holds), fewer bars than the window. */
    for (size_t i = 0; i < n; i++)
        x[i] = 100.0;
    test_hma_sar(x, 50, "constant");
    {
        const tw_kernel_def *zs = tw_kernel_builtin(1);
        tw_kresult r;
        double g[3] = {20, 2.0, 0.5};
        tw_error err;
        CHECK(tw_ksweep(zs, x, n, g, 1, NULL, &r, NULL, NULL, &err) == 0 && r.trades == 0 &&
              r.open.side == 0 && r.exposure == 0.0);
    }
    test_errors(gx, n);
    free(x);
    free(gx);
    return tw_check_done("kernel_kplug");
}
