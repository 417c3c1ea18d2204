/* Sweeps and streams of any kernel (docs/kernel.md "Kernels as plug-ins"):
 * the host's one bookkeeping, the generic path (step() per combo and bar,
 * combos split across threads, one combo's state in one contiguous block
 * that stays in L1 while it runs every bar), a kernel's own sweep of
 * positions, and hma_sar's exact SIMD sweep with the statistics taken
 * from its trade log. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "kernel/kbook.h"
#include "kernel/kernel_internal.h"

void tw_kbook_init(tw_kbook *b) { tw__kbook_reset(b); }

int tw_kbook_bar(tw_kbook *b, const tw_kernel_def *def, void *state, double close, int64_t bar,
                 double fee, tw_trade *t, int *closed)
{
    int c = 0;
    if (!b->stopped)
        c = tw__kbook_apply(b, def->step(state, close), close, bar, fee, t);
    if (closed)
        *closed = c;
    return b->pos;
}

void tw_ksweep_opts_init(tw_ksweep_opts *o)
{
    o->threads = 0;
    o->fee = TW_FEE_DEFAULT;
    o->generic = 0;
}

static unsigned online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1u : n > 256 ? 256u : (unsigned)n;
}

static size_t round64(size_t b) { return (b + 63) & ~(size_t)63; }

/* ---- hma_sar's fast path ---------------------------------------------------- */

struct hs_ctx {
    tw_kbook *acc;       /* per combo: pnl, wins, peak, drawdown */
    int64_t *first;      /* per combo: the first entry's bar */
    double fee;
    tw_trade_fn fn;
    void *ctx;
};

static void hs_trade(void *arg, const tw_trade *t)
{
    struct hs_ctx *h = arg;
    tw_kbook *b = &h->acc[t->combo];
    if (b->trades == 0)
        h->first[t->combo] = t->entry_bar;
    tw__kbook_close(b, t->r, h->fee);
    if (h->fn)
        h->fn(h->ctx, t);
}

static int ksweep_hma_fast(const double *close, size_t n, const double *params, size_t n_combos,
                           const tw_ksweep_opts *o, tw_kresult *out, tw_trade_fn fn, void *ctx,
                           tw_error *err)
{
    int rc = -ENOMEM;
    int64_t *combos = malloc(n_combos * TW_COMBO_WINDOWS * sizeof(int64_t));
    double *pnl = malloc(n_combos * sizeof(double));
    int64_t *trades = malloc(n_combos * sizeof(int64_t)), *first = malloc(n_combos * 8);
    tw_position *open = malloc(n_combos * sizeof(tw_position));
    tw_kbook *acc = malloc(n_combos * sizeof(tw_kbook));
    tw_sweeper *s = NULL;
    if (!combos || !pnl || !trades || !first || !open || !acc) {
        tw__err(err, -ENOMEM, "kernel hma_sar: out of memory for %zu combos", n_combos);
        goto out;
    }
    for (size_t i = 0; i < n_combos * TW_COMBO_WINDOWS; i++)
        combos[i] = (int64_t)params[i];
    for (size_t k = 0; k < n_combos; k++) {
        tw__kbook_reset(&acc[k]);
        first[k] = -1;
    }
    tw_sweep_opts so;
    tw_sweep_opts_init(&so);
    so.threads = o->threads;
    so.fee = o->fee;
    rc = tw_sweeper_create(&s, n, &so);
    if (rc) {
        tw__err(err, rc, "kernel hma_sar: cannot start the sweeper (%s)", tw_strerror(rc));
        goto out;
    }
    struct hs_ctx h = {.acc = acc, .first = first, .fee = o->fee, .fn = fn, .ctx = ctx};
    rc = tw_sweeper_run_trades(s, close, n, combos, n_combos, pnl, trades, hs_trade, &h, open,
                               err);
    if (rc)
        goto out;
    for (size_t k = 0; k < n_combos; k++) {
        tw_kresult *r = &out[k];
        int64_t f = acc[k].trades ? first[k] : open[k].side ? open[k].entry_bar : -1;
        uint64_t in_pos = f >= 0 ? (uint64_t)n - (uint64_t)f : 0;
        r->pnl = pnl[k];
        r->trades = trades[k];
        r->wins = acc[k].wins;
        r->max_drawdown = acc[k].max_drawdown;
        r->exposure = (double)in_pos / (double)n;
        r->open = open[k];
        r->stopped = 0;
    }
out:
    tw_sweeper_destroy(s);
    free(combos);
    free(pnl);
    free(trades);
    free(first);
    free(open);
    free(acc);
    return rc;
}

/* ---- the generic path ------------------------------------------------------- */

struct gjob {
    const tw_kernel_def *def;
    const double *close;
    size_t n;
    const double *params;
    size_t n_combos;
    double fee;
    const int8_t *positions; /* a kernel's own sweep, or NULL: step() */
    tw_kresult *out;
    tw_trade_fn fn;
    void *ctx;
    size_t stride; /* bytes of one state buffer */
    char *states;  /* one buffer per thread */
    atomic_size_t next;
};

/* One combo over every bar: the hot loop. */
static void run_combo(const struct gjob *j, size_t k, void *st)
{
    const tw_kernel_def *def = j->def;
    int (*step)(void *, double) = def->step;
    const double *close = j->close;
    const size_t n = j->n;
    const double fee = j->fee;
    tw_kbook b;
    tw__kbook_reset(&b);
    tw_trade t;
    if (j->positions) {
        const int8_t *pos = j->positions + k * n;
        for (size_t i = 0; i < n && !b.stopped; i++)
            if (tw__kbook_apply(&b, pos[i], close[i], (int64_t)i, fee, &t) && j->fn) {
                t.combo = k;
                j->fn(j->ctx, &t);
            }
    } else {
        def->init(st, j->params + k * def->n_params);
        if (j->fn) {
            for (size_t i = 0; i < n && !b.stopped; i++)
                if (tw__kbook_apply(&b, step(st, close[i]), close[i], (int64_t)i, fee, &t)) {
                    t.combo = k;
                    j->fn(j->ctx, &t);
                }
        } else {
            for (size_t i = 0; i < n; i++) {
                tw__kbook_apply(&b, step(st, close[i]), close[i], (int64_t)i, fee, &t);
                if (TW_UNLIKELY(b.stopped))
                    break;
            }
        }
    }
    tw__kresult_of(&b, &j->out[k]);
}

struct gworker {
    struct gjob *job;
    unsigned tid;
    pthread_t th;
};

static void *gworker_main(void *arg)
{
    struct gworker *w = arg;
    struct gjob *j = w->job;
    void *st = j->states + (size_t)w->tid * j->stride;
    for (;;) {
        size_t k = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (k >= j->n_combos)
            break;
        run_combo(j, k, st);
    }
    return NULL;
}

static int run_generic(struct gjob *j, unsigned threads, tw_error *err)
{
    if (threads > j->n_combos)
        threads = (unsigned)j->n_combos;
    if (threads < 1)
        threads = 1;
    struct gworker *w = calloc(threads, sizeof(*w));
    if (!w)
        return tw__err(err, -ENOMEM, "kernel %s: out of memory", j->def->name);
    atomic_init(&j->next, 0);
    unsigned started = 1;
    for (unsigned t = 0; t < threads; t++) {
        w[t].job = j;
        w[t].tid = t;
    }
    for (unsigned t = 1; t < threads; t++, started++)
        if (pthread_create(&w[t].th, NULL, gworker_main, &w[t]) != 0)
            break; /* the threads there are share the combos */
    gworker_main(&w[0]);
    for (unsigned t = 1; t < started; t++)
        pthread_join(w[t].th, NULL);
    free(w);
    return 0;
}

int tw_ksweep(const tw_kernel_def *def, const double *close, size_t n, const double *params,
              size_t n_combos, const tw_ksweep_opts *o, tw_kresult *out, tw_trade_fn fn,
              void *ctx, tw_error *err)
{
    tw_ksweep_opts dflt;
    if (!o) {
        tw_ksweep_opts_init(&dflt);
        o = &dflt;
    }
    if (!def || !out || (n_combos && !params))
        return tw__err(err, -EINVAL, "tw_ksweep: no kernel, params or results");
    if (!isfinite(o->fee))
        return tw__err(err, -EINVAL, "fee %g is not finite", o->fee);
    int rc = tw__check_prices(close, n, err);
    if (rc)
        return rc;
    if (n_combos == 0)
        return tw__err(err, -TW_ENODATA, "kernel %s: no combos", def->name);
    size_t maxb = 0;
    for (size_t k = 0; k < n_combos; k++) {
        size_t sb;
        tw_error e;
        rc = tw__kernel_check_bounds(def, params + k * def->n_params, &sb, &e);
        if (rc)
            return tw__err(err, rc, "combo %zu: %s", k, e.msg);
        if (sb > maxb)
            maxb = sb;
    }
    if (def == &tw__hma_sar_def && !o->generic)
        return ksweep_hma_fast(close, n, params, n_combos, o, out, fn, ctx, err);

    unsigned threads = o->threads ? o->threads : online_cores();
    if (threads > n_combos)
        threads = (unsigned)n_combos;
    struct gjob j = {.def = def, .close = close, .n = n, .params = params,
                     .n_combos = n_combos, .fee = o->fee, .out = out, .fn = fn, .ctx = ctx,
                     .stride = round64(maxb)};
    int8_t *positions = NULL;
    j.states = aligned_alloc(64, j.stride * threads);
    if (!j.states)
        return tw__err(err, -ENOMEM, "kernel %s: out of memory for %u states of %zu bytes",
                       def->name, threads, maxb);
    /* Every combo through init() before any work (init may refuse more
     * than the bounds). */
    for (size_t k = 0; k < n_combos; k++)
        if (def->init(j.states, params + k * def->n_params) != 0) {
            free(j.states);
            return tw__err(err, -EINVAL, "combo %zu: kernel %s: init refuses the combo", k,
                           def->name);
        }
    if (def->sweep && !o->generic) {
        if (n > SIZE_MAX / n_combos || !(positions = malloc(n * n_combos))) {
            free(j.states);
            return tw__err(err, -ENOMEM, "kernel %s: out of memory for %zu x %zu positions",
                           def->name, n_combos, n);
        }
        rc = def->sweep(close, n, params, n_combos, positions, NULL);
        if (rc) {
            free(positions);
            free(j.states);
            return tw__err(err, rc < 0 ? rc : -EINVAL, "kernel %s: its sweep failed (%d)",
                           def->name, rc);
        }
        j.positions = positions;
    }
    rc = run_generic(&j, threads, err);
    free(positions);
    free(j.states);
    return rc;
}

/* ---- streams -------------------------------------------------------------- */

/* The block: this header, then books[n], offsets[n] (of each state from
 * the block's start, multiples of 64), params[n * n_params], the states. */
struct tw_kstream {
    const tw_kernel_def *def;
    size_t n_combos;
    double fee;
    uint64_t bars;
    uint64_t bad_prices;
    tw_trade_fn fn;
    void *ctx;
    size_t books_off, offs_off, params_off;
    size_t mem_bytes;
};

static size_t add_ovf(size_t a, size_t b, int *ovf)
{
    if (a > SIZE_MAX - b)
        *ovf = 1;
    return a + b;
}

/* The layout's total; sets the offsets when ks is not NULL. */
static size_t kstream_layout(const tw_kernel_def *def, const double *params, size_t n_combos,
                             struct tw_kstream *ks)
{
    int ovf = 0;
    if (!def || !params || n_combos == 0 || n_combos > SIZE_MAX / 1024)
        return 0;
    size_t at = round64(sizeof(struct tw_kstream));
    size_t books = at;
    at = add_ovf(at, n_combos * sizeof(tw_kbook), &ovf);
    size_t offs = round64(at);
    at = add_ovf(offs, n_combos * sizeof(uint64_t), &ovf);
    size_t pars = round64(at);
    at = add_ovf(pars, n_combos * def->n_params * sizeof(double), &ovf);
    at = round64(at);
    uint64_t *off = ks ? (uint64_t *)((char *)ks + offs) : NULL;
    for (size_t k = 0; k < n_combos && !ovf; k++) {
        size_t sb;
        if (tw__kernel_check_bounds(def, params + k * def->n_params, &sb, NULL))
            return 0;
        if (off)
            off[k] = at;
        at = add_ovf(at, round64(sb), &ovf);
    }
    if (ovf)
        return 0;
    if (ks) {
        ks->books_off = books;
        ks->offs_off = offs;
        ks->params_off = pars;
    }
    return at;
}

size_t tw_kstream_memsize(const tw_kernel_def *def, const double *params, size_t n_combos)
{
    return kstream_layout(def, params, n_combos, NULL);
}

static tw_kbook *ks_books(const tw_kstream *ks)
{
    return (tw_kbook *)((char *)ks + ks->books_off);
}

static void *ks_state(const tw_kstream *ks, size_t k)
{
    const uint64_t *off = (const uint64_t *)((const char *)ks + ks->offs_off);
    return (char *)ks + off[k];
}

int tw_kstream_init(tw_kstream *ks, size_t mem_bytes, const tw_kernel_def *def,
                    const double *params, size_t n_combos, double fee, tw_error *err)
{
    if (!ks || ((uintptr_t)ks & 15))
        return tw__err(err, -EINVAL, "kstream: memory missing or not 16-byte aligned");
    if (!def)
        return tw__err(err, -EINVAL, "kstream: no kernel");
    if (n_combos == 0)
        return tw__err(err, -TW_ENODATA, "kernel %s: no combos", def->name);
    if (!isfinite(fee))
        return tw__err(err, -EINVAL, "fee %g is not finite", fee);
    for (size_t k = 0; k < n_combos; k++) {
        tw_error e;
        int rc = tw__kernel_check_bounds(def, params + k * def->n_params, NULL, &e);
        if (rc)
            return tw__err(err, rc, "combo %zu: %s", k, e.msg);
    }
    size_t need = kstream_layout(def, params, n_combos, NULL);
    if (need == 0 || mem_bytes < need)
        return tw__err(err, -EINVAL, "kstream: %zu bytes given, %zu needed", mem_bytes, need);
    memset(ks, 0, sizeof(*ks));
    kstream_layout(def, params, n_combos, ks);
    ks->def = def;
    ks->n_combos = n_combos;
    ks->fee = fee;
    ks->mem_bytes = need;
    double *pp = (double *)((char *)ks + ks->params_off);
    memcpy(pp, params, n_combos * def->n_params * sizeof(double));
    tw_kbook *b = ks_books(ks);
    for (size_t k = 0; k < n_combos; k++) {
        tw__kbook_reset(&b[k]);
        if (def->init(ks_state(ks, k), pp + k * def->n_params) != 0)
            return tw__err(err, -EINVAL, "combo %zu: kernel %s: init refuses the combo", k,
                           def->name);
    }
    return 0;
}

int tw_kstream_push(tw_kstream *ks, double close, uint32_t *changed, size_t *n_changed,
                    tw_error *err)
{
    size_t nc = 0;
    if (close <= 0.0 || close == INFINITY) {
        ks->bad_prices++;
        if (n_changed)
            *n_changed = 0;
        return tw__err(err, -TW_EBADPRICE, "bad price %g at bar %llu (<= 0 or infinite)", close,
                       (unsigned long long)ks->bars);
    }
    const tw_kernel_def *def = ks->def;
    tw_kbook *b = ks_books(ks);
    const int64_t bar = (int64_t)ks->bars;
    tw_trade t;
    for (size_t k = 0; k < ks->n_combos; k++) {
        tw_kbook *bk = &b[k];
        if (bk->stopped)
            continue;
        int before = bk->pos;
        if (tw__kbook_apply(bk, def->step(ks_state(ks, k), close), close, bar, ks->fee, &t) &&
            ks->fn) {
            t.combo = k;
            ks->fn(ks->ctx, &t);
        }
        if (bk->pos != before && changed)
            changed[nc] = (uint32_t)k;
        nc += bk->pos != before;
    }
    ks->bars++;
    if (n_changed)
        *n_changed = nc;
    return 0;
}

int tw_kstream_get(const tw_kstream *ks, size_t k, tw_kresult *out)
{
    if (k >= ks->n_combos)
        return -EINVAL;
    tw__kresult_of(&ks_books(ks)[k], out);
    return 0;
}

size_t tw_kstream_combos(const tw_kstream *ks) { return ks->n_combos; }
uint64_t tw_kstream_bars(const tw_kstream *ks) { return ks->bars; }
const tw_kernel_def *tw_kstream_kernel(const tw_kstream *ks) { return ks->def; }

void tw_kstream_set_trade_fn(tw_kstream *ks, tw_trade_fn fn, void *ctx)
{
    ks->fn = fn;
    ks->ctx = ctx;
}
