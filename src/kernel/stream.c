/* The streaming kernel (live.md "The kernel, streaming"): the tiled kernel
 * of tile.c fed one bar at a time, in caller memory.
 *
 * A bar goes through the one-bar kernel (SIMD lanes over windows and
 * combos); a run of bars handed over at once (tw_stream_update_bars) goes
 * through the block kernel in chunks of CHUNK bars, on the same state, so
 * that any mix of the two gives the bits of a sweep.  The close series is
 * kept in a ring of its last wmax - 1 bars plus room for a chunk, NaN
 * before the first bar (a window reaching before bar 0 has a NaN output,
 * as kernel.md defines).
 *
 * tw_trades() is a one-combo stream over the whole series. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel_internal.h"
#include "tickwire/util.h"

#define CHUNK 256

/* The Python binding (python/tickwire/_lib.py, __init__.py) mirrors these. */
TW_STATIC_ASSERT(sizeof(tw_trade) == 56, "tw_trade layout");
TW_STATIC_ASSERT(sizeof(tw_position) == 24, "tw_position layout");
TW_STATIC_ASSERT(sizeof(tw_sweep_opts) == 40, "tw_sweep_opts layout");
#define STREAM_MAGIC 0x7477737472656d31ull /* "twstrem1" */

struct stream {
    uint64_t magic;
    size_t mem_bytes;
    struct tw__tile tile;
    tw_isa isa;
    uint64_t bars, bad;
    struct tw__trade_sink sink;
    int has_sink;
    double *cring;   /* [cpad + CHUNK] */
    size_t cpad;     /* wmax_c - 1: history the windows read */
    size_t cf;       /* bars taken since the ring's last slide */
    double *buf;     /* [n_win * CHUNK] a chunk's close windows */
    double *scratch; /* one chunk's scratch */
};

static struct stream *hdr(const tw_stream *st)
{
    uintptr_t a = ((uintptr_t)st + TW_CACHE_LINE - 1) & ~(uintptr_t)(TW_CACHE_LINE - 1);
    return (struct stream *)a;
}

static size_t round_up(size_t v) { return (v + TW_CACHE_LINE - 1) / TW_CACHE_LINE * TW_CACHE_LINE; }

/* Everything but the plan and the tile state, after them. */
static size_t tail_bytes(const struct tw__tile *t)
{
    size_t ring = round_up(((size_t)t->wmax_c - 1 + CHUNK) * sizeof(double));
    size_t buf = round_up(t->n_win * CHUNK * sizeof(double));
    size_t scr = round_up(tw__tile_scratch(t, CHUNK) * sizeof(double));
    return ring + buf + scr;
}

static size_t head_bytes(size_t n_combos)
{
    return TW_CACHE_LINE + round_up(sizeof(struct stream)) +
           round_up(n_combos * TW_COMBO_WINDOWS * sizeof(int64_t));
}

/* The state of the largest layout of any ISA's lanes, so that the size
 * does not depend on which one init picks. */
static size_t state_bytes_max(const struct tw__tile *t)
{
    static const struct tw__exact_ops *const all[] = {
        &tw__exact_ops_generic, &tw__exact_ops_avx2, &tw__exact_ops_avx512};
    size_t state = 0;
    for (size_t i = 0; i < TW_ARRAY_SIZE(all); i++) {
        size_t b = tw__tile_state_bytes(t, all[i], 1);
        if (b > state)
            state = b;
    }
    return state;
}

static size_t total_bytes(const struct tw__tile *t, size_t plan)
{
    return head_bytes(t->n_combos) + round_up(plan) + round_up(state_bytes_max(t)) +
           tail_bytes(t);
}

size_t tw_stream_memsize(const int64_t *combos, size_t n_combos)
{
    if (!combos || tw__check_windows(combos, n_combos, NULL))
        return 0;
    size_t plan = tw__tile_plan_bytes(n_combos);
    if (plan == 0)
        return 0;
    void *mem = malloc(plan);
    if (!mem)
        return 0;
    struct tw__tile t;
    tw__tile_plan(&t, mem, combos, n_combos, CHUNK);
    size_t total = total_bytes(&t, plan);
    free(mem);
    return total;
}

int tw__stream_init_isa(tw_stream *st, size_t mem_bytes, const int64_t *combos, size_t n_combos,
                        double fee, tw_isa isa, tw_error *err)
{
    if (!st)
        return tw__err(err, -EINVAL, "no stream memory");
    if (!isfinite(fee))
        return tw__err(err, -EINVAL, "fee %g is not finite", fee);
    if (!combos && n_combos)
        return tw__err(err, -EINVAL, "no combos array");
    int rc = tw__check_windows(combos, n_combos, err);
    if (rc)
        return rc;
    if (isa == TW_ISA_AUTO)
        isa = tw_isa_best();
    const struct tw__exact_ops *ops = tw__exact_ops_for(isa);
    if (!ops)
        return tw__err(err, -ENOTSUP, "ISA %s not supported on this CPU", tw_isa_name(isa));
    size_t plan = tw__tile_plan_bytes(n_combos);
    size_t head = head_bytes(n_combos);
    if (plan == 0 || mem_bytes < head + round_up(plan))
        return tw__err(err, -EINVAL, "stream memory of %zu bytes is too small for %zu combos "
                       "(tw_stream_memsize)", mem_bytes, n_combos);
    struct stream *h = hdr(st);
    char *base = (char *)h;
    memset(h, 0, sizeof(*h));
    int64_t *own = (int64_t *)(void *)(base + round_up(sizeof(struct stream)));
    memcpy(own, combos, n_combos * TW_COMBO_WINDOWS * sizeof(int64_t));
    char *p = (char *)own + round_up(n_combos * TW_COMBO_WINDOWS * sizeof(int64_t));
    struct tw__tile *t = &h->tile;
    tw__tile_plan(t, p, own, n_combos, CHUNK);
    p += round_up(plan);
    size_t need = total_bytes(t, plan);
    if (mem_bytes < need)
        return tw__err(err, -EINVAL, "stream memory of %zu bytes is too small for these "
                       "combos: %zu needed (tw_stream_memsize)", mem_bytes, need);
    tw__tile_state_init(t, p, ops, 1, fee);
    p += round_up(state_bytes_max(t));
    h->cpad = (size_t)t->wmax_c - 1;
    h->cring = (double *)(void *)p;
    p += round_up((h->cpad + CHUNK) * sizeof(double));
    h->buf = (double *)(void *)p;
    p += round_up(t->n_win * CHUNK * sizeof(double));
    h->scratch = (double *)(void *)p;
    for (size_t i = 0; i < h->cpad + CHUNK; i++)
        h->cring[i] = NAN;
    h->isa = isa;
    h->mem_bytes = mem_bytes;
    h->magic = STREAM_MAGIC;
    return 0;
}

int tw_stream_init(tw_stream *st, size_t mem_bytes, const int64_t *combos, size_t n_combos,
                   double fee, tw_error *err)
{
    return tw__stream_init_isa(st, mem_bytes, combos, n_combos, fee, TW_ISA_AUTO, err);
}

static int bad_price(double c) { return !isnan(c) && !(c > 0.0 && isfinite(c)); }

/* One checked bar through the one-bar kernel. */
static size_t step(struct stream *h, double close, uint32_t *changed)
{
    TW_ASSERT(h->magic == STREAM_MAGIC);
    if (h->cf == CHUNK) {
        memmove(h->cring, h->cring + CHUNK, h->cpad * sizeof(double));
        h->cf = 0;
    }
    double *x = h->cring + h->cpad + h->cf;
    *x = close;
    h->cf++;
    size_t n = tw__tile_bar(&h->tile, x, (int64_t)h->bars, changed,
                            h->has_sink ? &h->sink : NULL);
    h->bars++;
    return n;
}

/* nb checked bars (TW_NARROW_BELOW <= nb <= CHUNK) through the block
 * kernel; returns the position changes. */
static size_t chunk(struct stream *h, const double *close, size_t nb)
{
    struct tw__tile *t = &h->tile;
    TW_ASSERT(nb >= TW_NARROW_BELOW && nb <= CHUNK);
    if (h->cf + nb > CHUNK) {
        memmove(h->cring, h->cring + h->cf, h->cpad * sizeof(double));
        h->cf = 0;
    }
    ptrdiff_t p0 = (ptrdiff_t)(h->cpad + h->cf);
    memcpy(h->cring + p0, close, nb * sizeof(double));
    struct tw__view v = {h->buf, CHUNK, NULL, 0};
    for (size_t i = 0; i < t->n_tasks; i++)
        tw__tile_a_task(t, i, h->cring, p0 + (ptrdiff_t)nb, p0, nb, &v);
    size_t changes = 0;
    const struct tw__trade_sink *sink = h->has_sink ? &h->sink : NULL;
    for (size_t k = 0; k < t->n_combos; k++) {
        int flat = t->sar[k].pos == 0;
        int64_t before = t->sar[k].trades;
        tw__tile_b_combo(t, k, h->cring, p0, nb, &v, h->scratch, sink, (int64_t)h->bars);
        changes += (size_t)(t->sar[k].trades - before) + (size_t)(flat && t->sar[k].pos != 0);
    }
    tw__tile_after_wide(t);
    h->cf += nb;
    h->bars += nb;
    return changes;
}

size_t tw_stream_update(tw_stream *st, double close, uint32_t *changed)
{
    struct stream *h = hdr(st);
    if (bad_price(close)) {
        h->bad++;
        return 0;
    }
    return step(h, close, changed);
}

int tw_stream_push(tw_stream *st, double close, uint32_t *changed, size_t *n_changed,
                   tw_error *err)
{
    struct stream *h = hdr(st);
    if (bad_price(close)) {
        h->bad++;
        return tw__err(err, -TW_EBADPRICE,
                       "bad price at bar %llu: %g (must be > 0 and finite, or NaN)",
                       (unsigned long long)h->bars, close);
    }
    size_t n = step(h, close, changed);
    if (n_changed)
        *n_changed = n;
    return 0;
}

int tw_stream_update_bars(tw_stream *st, const double *close, size_t n, size_t *n_changes,
                          tw_error *err)
{
    struct stream *h = hdr(st);
    if (n_changes)
        *n_changes = 0;
    size_t i = tw_first_bad_price(close, n);
    if (i < n) {
        h->bad++;
        return tw__err(err, -TW_EBADPRICE,
                       "bad price at bar %llu (element %zu): %g (must be > 0 and finite, or "
                       "NaN); no bar taken", (unsigned long long)(h->bars + i), i, close[i]);
    }
    size_t changes = 0;
    for (i = 0; i < n;) {
        size_t rem = n - i;
        if (rem >= TW_NARROW_BELOW) {
            size_t nb = rem < CHUNK ? rem : CHUNK;
            changes += chunk(h, close + i, nb);
            i += nb;
        } else {
            changes += step(h, close[i], NULL);
            i++;
        }
    }
    if (n_changes)
        *n_changes = changes;
    return 0;
}

void tw_stream_set_trade_fn(tw_stream *st, tw_trade_fn fn, void *ctx)
{
    struct stream *h = hdr(st);
    h->sink.fn = fn;
    h->sink.ctx = ctx;
    h->has_sink = fn != NULL;
}

void tw_stream_reset(tw_stream *st)
{
    struct stream *h = hdr(st);
    tw__tile_reset(&h->tile);
    for (size_t i = 0; i < h->cpad + CHUNK; i++)
        h->cring[i] = NAN;
    h->cf = 0;
    h->bars = 0;
    h->bad = 0;
}

size_t tw_stream_combos(const tw_stream *st) { return hdr(st)->tile.n_combos; }
uint64_t tw_stream_bars(const tw_stream *st) { return hdr(st)->bars; }
uint64_t tw_stream_bad_prices(const tw_stream *st) { return hdr(st)->bad; }
tw_isa tw_stream_isa(const tw_stream *st) { return hdr(st)->isa; }
double tw_stream_fee(const tw_stream *st) { return hdr(st)->tile.fee; }

static void state_of(const struct tw__sar_state *s, tw_combo_state *out)
{
    out->position = s->pos;
    out->entry_bar = s->pos ? s->entry_bar : -1;
    out->entry_price = s->pos ? s->entry : 0.0;
    out->pnl = s->pnl;
    out->trades = s->trades;
}

int tw_stream_get(const tw_stream *st, size_t k, tw_combo_state *out)
{
    const struct stream *h = hdr(st);
    if (k >= h->tile.n_combos)
        return -EINVAL;
    state_of(&h->tile.sar[k], out);
    return 0;
}

void tw_stream_read(const tw_stream *st, int32_t *position, int64_t *entry_bar,
                    double *entry_price, double *pnl, int64_t *trades)
{
    const struct stream *h = hdr(st);
    for (size_t k = 0; k < h->tile.n_combos; k++) {
        tw_combo_state c;
        state_of(&h->tile.sar[k], &c);
        if (position)
            position[k] = c.position;
        if (entry_bar)
            entry_bar[k] = c.entry_bar;
        if (entry_price)
            entry_price[k] = c.entry_price;
        if (pnl)
            pnl[k] = c.pnl;
        if (trades)
            trades[k] = c.trades;
    }
}

/* ---- the state as bytes (a snapshot) -------------------------------------- */

#define STATE_MAGIC 0x3230747374737774ull /* "twstst02" */

/* What a bar changes, in an order no lane layout enters (so that a state
 * saved with one ISA's lanes loads into another's): this header, then
 * sar[n_combos], the close ring (its cpad + CHUNK closes), then per combo
 * its last h_sqrt - 1 d inputs and its last t_full - 1 e inputs (oldest
 * first: what the one-bar rings hold at entries f + 2 .. f + w of its
 * lane, and all a later bar reads of them).  The close windows' outputs
 * and the d and e outputs are recomputed on every bar: not state. */
struct state_hdr {
    uint64_t magic;
    uint64_t n_combos;
    uint64_t combos_hash; /* FNV-1a of the combos and the fee's bits */
    uint64_t bars, bad, cf, f;
    uint64_t cpad;
    uint64_t total;
};

static uint64_t combos_hash(const struct stream *h)
{
    const struct tw__tile *t = &h->tile;
    uint64_t x = tw_fnv1a64(TW_FNV1A64_INIT, t->combos,
                            t->n_combos * TW_COMBO_WINDOWS * sizeof(int64_t));
    return tw_fnv1a64(x, &t->fee, sizeof(t->fee));
}

/* Bytes of the saved form (fixed for a stream). */
static size_t state_total(const struct stream *h)
{
    const struct tw__tile *t = &h->tile;
    size_t n = sizeof(struct state_hdr) + t->n_combos * sizeof(struct tw__sar_state) +
               (h->cpad + CHUNK) * sizeof(double);
    for (size_t k = 0; k < t->n_combos; k++) {
        const int64_t *c = t->combos + k * TW_COMBO_WINDOWS;
        n += (size_t)(c[TW_H_SQRT] - 1 + c[TW_T_FULL] - 1) * sizeof(double);
    }
    return n;
}

/* Lane `lane` of the sets: its column's first double in entry 0. */
static double *lane_col(const struct tw__nset *sets, uint32_t lane, size_t st)
{
    return sets[lane / st].ring + lane % st;
}

/* Copies a lane's last w - 1 inputs (entries f + 2 .. f + w, oldest first)
 * out to v (save) or in from v (load). */
static void lane_tail(double *col, size_t st, size_t f, int64_t w, double *v, int load)
{
    for (int64_t q = 0; q < w - 1; q++) {
        double *e = col + (f + 2 + (size_t)q) * st;
        if (load)
            *e = v[q];
        else
            v[q] = *e;
    }
}

/* Every combo's outer-WMA tails (d, then e) out to `out` or in from `in`
 * (through a small buffer: the bytes need not be aligned); the bytes. */
static size_t tails(struct tw__tile *t, uint8_t *out, const uint8_t *in)
{
    const size_t stw = (size_t)TW_NSET * t->ops->vl;
    size_t off = 0;
    double tmp[1024];
    for (size_t k = 0; k < t->n_combos; k++) {
        const int64_t *c = t->combos + k * TW_COMBO_WINDOWS;
        for (int pass = 0; pass < 2; pass++) {
            const int64_t w = pass ? c[TW_T_FULL] : c[TW_H_SQRT];
            double *col = pass ? lane_col(t->eset, t->elane[k], stw)
                               : lane_col(t->dset, t->dlane[k], stw);
            for (int64_t q0 = 0; q0 < w - 1; q0 += 1024) {
                const int64_t n = w - 1 - q0 < 1024 ? w - 1 - q0 : 1024;
                const size_t b = (size_t)n * sizeof(double);
                if (in)
                    memcpy(tmp, in + off, b);
                lane_tail(col + (size_t)q0 * stw, stw, t->f, n + 1, tmp, in != NULL);
                if (out)
                    memcpy(out + off, tmp, b);
                off += b;
            }
        }
    }
    return off;
}

static void state_hdr_of(const struct stream *h, struct state_hdr *sh)
{
    memset(sh, 0, sizeof(*sh));
    sh->magic = STATE_MAGIC;
    sh->n_combos = h->tile.n_combos;
    sh->combos_hash = combos_hash(h);
    sh->bars = h->bars;
    sh->bad = h->bad;
    sh->cf = h->cf;
    sh->f = h->tile.f;
    sh->cpad = h->cpad;
    sh->total = state_total(h);
}

size_t tw_stream_state_bytes(const tw_stream *st)
{
    return state_total(hdr(st));
}

size_t tw_stream_state_save(const tw_stream *st, void *out, size_t cap)
{
    struct stream *h = hdr(st);
    struct tw__tile *t = &h->tile;
    struct state_hdr sh;
    state_hdr_of(h, &sh);
    if (!out || cap < sh.total)
        return 0;
    uint8_t *p = out;
    memcpy(p, &sh, sizeof(sh));
    size_t off = sizeof(sh);
    memcpy(p + off, t->sar, t->n_combos * sizeof(struct tw__sar_state));
    off += t->n_combos * sizeof(struct tw__sar_state);
    memcpy(p + off, h->cring, (h->cpad + CHUNK) * sizeof(double));
    off += (h->cpad + CHUNK) * sizeof(double);
    off += tails(t, p + off, NULL);
    TW_VERIFY(off == sh.total);
    return sh.total;
}

int tw_stream_state_load(tw_stream *st, const void *in, size_t len, tw_error *err)
{
    struct stream *h = hdr(st);
    struct tw__tile *t = &h->tile;
    struct state_hdr mine, sh;
    if (!in || len < sizeof(sh))
        return tw__err(err, -TW_EFORMAT, "stream state: %zu bytes, shorter than its header",
                       len);
    memcpy(&sh, in, sizeof(sh));
    state_hdr_of(h, &mine);
    if (sh.magic != STATE_MAGIC)
        return tw__err(err, -TW_EFORMAT, "stream state: not a stream state (magic)");
    if (sh.n_combos != mine.n_combos || sh.combos_hash != mine.combos_hash ||
        sh.cpad != mine.cpad)
        return tw__err(err, -TW_EFORMAT, "stream state: saved for %llu other combos (or fee), "
                       "this stream has %llu", (unsigned long long)sh.n_combos,
                       (unsigned long long)mine.n_combos);
    if (sh.cf > CHUNK || sh.f > t->slack)
        return tw__err(err, -TW_EFORMAT, "stream state: ring positions out of range (cf %llu, "
                       "f %llu)", (unsigned long long)sh.cf, (unsigned long long)sh.f);
    if (sh.total != mine.total || len != mine.total)
        return tw__err(err, -TW_EFORMAT, "stream state: %zu bytes, its layout is %llu", len,
                       (unsigned long long)mine.total);
    const uint8_t *p = in;
    size_t off = sizeof(sh);
    for (size_t k = 0; k < t->n_combos; k++) {
        struct tw__sar_state s;
        memcpy(&s, p + off + k * sizeof(s), sizeof(s));
        if (s.pos < -1 || s.pos > 1)
            return tw__err(err, -TW_EFORMAT, "stream state: combo %zu position %d", k, s.pos);
    }
    /* Checked: now written.  Everything else back to its reset (NaN). */
    tw_stream_reset(st);
    memcpy(t->sar, p + off, t->n_combos * sizeof(struct tw__sar_state));
    off += t->n_combos * sizeof(struct tw__sar_state);
    memcpy(h->cring, p + off, (h->cpad + CHUNK) * sizeof(double));
    off += (h->cpad + CHUNK) * sizeof(double);
    t->f = (size_t)sh.f;
    tails(t, NULL, p + off);
    h->bars = sh.bars;
    h->bad = sh.bad;
    h->cf = (size_t)sh.cf;
    return 0;
}

/* ---- one combo's trade log ---------------------------------------------- */

struct trade_buf {
    tw_trade *out;
    size_t cap, n;
};

static void to_buf(void *ctx, const tw_trade *t)
{
    struct trade_buf *b = ctx;
    if (b->n < b->cap)
        b->out[b->n] = *t;
    b->n++;
}

int tw_trades(const double *close, size_t n_bars, const int64_t *combo, double fee,
              tw_trade *out, size_t cap, size_t *n_trades, tw_position *open, double *pnl,
              int64_t *trades, tw_error *err)
{
    int rc = tw_sweep_check(close, n_bars, combo, 1, err);
    if (rc)
        return rc;
    if (!isfinite(fee))
        return tw__err(err, -EINVAL, "fee %g is not finite", fee);
    size_t mem = tw_stream_memsize(combo, 1);
    tw_stream *st = mem ? malloc(mem) : NULL;
    if (!st)
        return tw__err(err, -ENOMEM, "no memory for a trade log");
    rc = tw_stream_init(st, mem, combo, 1, fee, err);
    if (rc == 0) {
        struct trade_buf b = {out, cap, 0};
        tw_stream_set_trade_fn(st, to_buf, &b);
        rc = tw_stream_update_bars(st, close, n_bars, NULL, err);
        TW_VERIFY(rc == 0); /* the prices were checked above */
        tw_combo_state c;
        tw_stream_get(st, 0, &c);
        if (n_trades)
            *n_trades = b.n;
        if (open) {
            open->side = c.position;
            open->entry_bar = c.entry_bar;
            open->entry_price = c.entry_price;
        }
        if (pnl)
            *pnl = c.pnl;
        if (trades)
            *trades = c.trades;
        if (b.n > cap)
            rc = tw__err(err, -ENOSPC, "%zu trades do not fit the buffer of %zu", b.n, cap);
    }
    free(st);
    return rc;
}
