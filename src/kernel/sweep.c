/* The sweep driver: a pool of persistent threads running the tiled kernel
 * (tile.c) over the bars block by block.
 *
 * A block of B bars has two phases: A computes the block's outputs of
 * every distinct close window (each window once, shared by every combo
 * that uses it), B runs each combo's passes over d and e and its
 * stop-and-reverse loop on them.  Work is split statically: each phase A
 * task and each combo belongs to one thread for the whole run (so a
 * combo's carried state never changes hands), balanced by cost.  The
 * threads run a pipeline without a global barrier: in round r each does
 * its share of A for block r, then its share of B for block r - 1, with
 * two buffers of close windows alternating.  B(r - 1) waits until every
 * thread finished A(r - 1) (done in round r - 1, so normally already); A(r)
 * waits until every thread finished B(r - 2), the last reader of its
 * buffer.  Two monotone counters carry those conditions.
 *
 * Memory is sized from the grid and B only: the plan, per combo its
 * carried inputs and state, two blocks of close windows, per thread one
 * block's scratch, and a prefix of the series padded with NaN for the
 * first blocks (whose windows reach before bar 0).  It grows when a larger
 * grid comes and is kept between runs.
 *
 * A bound dataset (tw_sweeper_bind) may also keep whole WMA passes over
 * its close in a cache bounded by opts.cache_bytes: a run reads the cached
 * windows instead of computing them, and computes the ones it lacks
 * straight into free cache slots, so a client that sends one combo per
 * call pays each distinct window once. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel/kernel_internal.h"

#define THREADS_MAX 256
#define CACHE_SLOTS_MAX 1024
#define SPIN_BEFORE_YIELD 2000

struct worker {
    pthread_t th;
    struct tw_sweeper *s;
    unsigned id;
    /* Pipeline progress of this thread in the current run: blocks whose
     * phase A / phase B share it has finished.  Each is stored (release)
     * only by its own thread after writing that share's outputs, and
     * loaded (acquire) by the others before reading them (wait_all). */
    atomic_size_t a_blocks, b_blocks;
} TW_CACHE_ALIGNED;

typedef void (*job_fn)(struct tw_sweeper *s, unsigned tid);

/* An item of the static split: a phase A task or a combo. */
struct item {
    uint64_t cost;
    uint32_t idx;
    uint16_t is_task;
    uint16_t owner;
};

struct tw_sweeper {
    tw_sweep_opts opts;
    size_t max_bars;
    unsigned nthreads;
    tw_isa isa;                      /* resolved (never AUTO) */
    const struct tw__exact_ops *ops; /* NULL for the scalar kernel */
    struct worker *workers;          /* [nthreads]; [0] is the caller */
    double *scalar_scratch;          /* scalar kernel: 5 x max_bars per thread */

    /* The exact kernel's memory, grown as grids need. */
    void *plan_mem;
    size_t plan_cap;
    void *state_mem;
    size_t state_cap;
    struct tw__tile tile;
    size_t block;          /* B of the run */
    int narrow;            /* the run goes bar by bar */
    double *bufs[2];       /* [n_win * block] close windows of a block */
    double *prefix;        /* NaN x (wmax_c - 1), then close[0 .. prefix_bars) */
    size_t prefix_bars;
    double *scratch;       /* [nthreads * scratch_per] */
    size_t scratch_per;
    uint32_t *combo_list;  /* [n_combos] combos grouped by owner thread */
    size_t *combo_off;     /* [nthreads + 1] */
    double **slot_cache;   /* [n_win] a bound run's cache pointer per slot, or NULL */
    uint8_t *slot_skip;    /* [n_win] 1: the cache holds the window already */
    struct item *items;    /* [n_tasks + n_combos] the split's scratch */
    uint16_t *combo_owner_tmp; /* [n_combos] */

    /* The bound dataset and its cache of whole passes over b_close. */
    int bound;
    const double *b_close;
    size_t b_n;
    uint64_t b_tag;
    double *cache;         /* [cache_slots * b_n] (virtual until filled) */
    size_t cache_slots, cache_alloc_bytes;
    int64_t *cache_win;    /* [cache_slots] window held, 0: free */
    uint8_t *cache_full;   /* [cache_slots] */
    uint64_t *cache_used;  /* [cache_slots] run stamp of the last use */
    int32_t *cache_of;     /* [TW_WINDOW_MAX + 1] cache slot of a window, -1: none */
    uint64_t run_stamp;

    /* The current run. */
    const double *close;
    size_t n;
    const int64_t *combos;
    size_t n_combos;
    double *pnl;
    int64_t *trades;
    size_t n_blocks;
    unsigned t_run;        /* threads taking part */
    struct tw__trade_sink sink_store;
    const struct tw__trade_sink *sink;

    tw_progress_fn progress;
    void *progress_ctx;
    double last_reported;

    /* Scalar kernel: the next combo, fetch_add by every thread (relaxed:
     * the inputs were published by the pool's mutex). */
    atomic_size_t next;

    /* The pool.  Job fields are written under mu before gen is bumped and
     * read by workers under mu after they see the new gen, so the mutex
     * orders them; the same mutex makes the workers' results visible to
     * the caller once running drops to 0. */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t gen;
    unsigned running;
    int quit;
    unsigned started;      /* worker threads created */
    job_fn job;
};

/* Large buffers on transparent huge pages where the kernel allows it:
 * 2 MiB pages make faulting a fresh buffer in ~500 times cheaper.  From
 * 1 MiB up: a whole-process sweep's scratch (~1.6 MB for the default grid)
 * is then one fault instead of ~400 at 4 KiB (~12 us each on a VM), for at
 * most 1 MiB of rounding. */
static void *big_alloc(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    if (bytes < huge / 2)
        return malloc(bytes ? bytes : 1);
    size_t rounded = (bytes + huge - 1) / huge * huge;
    void *p = aligned_alloc(huge, rounded);
#ifdef MADV_HUGEPAGE
    if (p)
        (void)madvise(p, rounded, MADV_HUGEPAGE); /* advice only */
#endif
    return p;
}

/* ---- weights ------------------------------------------------------------ */

static double weights[TW_WINDOW_MAX + 1];
static pthread_once_t weights_once = PTHREAD_ONCE_INIT;

static void weights_init(void)
{
    for (int c = 0; c <= TW_WINDOW_MAX; c++)
        weights[c] = (double)c;
}

const double *tw__weights(void)
{
    pthread_once(&weights_once, weights_init);
    return weights;
}

/* ---- ISA ---------------------------------------------------------------- */

int tw_isa_supported(tw_isa isa)
{
    switch (isa) {
    case TW_ISA_AUTO:
    case TW_ISA_SCALAR:
        return 1;
    case TW_ISA_AVX2:
        return tw_cpu_has(TW_ISA_AVX2);
    case TW_ISA_AVX512:
        /* The kernel's AVX-512 variant needs AVX-512F only. */
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") ? 1 : 0;
#else
        return 0;
#endif
    case TW_ISA_SSE2: /* no SSE2 variant of the kernel */
        return 0;
    }
    return 0;
}

tw_isa tw_isa_best(void)
{
    if (tw_isa_supported(TW_ISA_AVX512))
        return TW_ISA_AVX512;
    if (tw_isa_supported(TW_ISA_AVX2))
        return TW_ISA_AVX2;
    return TW_ISA_SCALAR;
}

const struct tw__exact_ops *tw__exact_ops_for(tw_isa isa)
{
    if (isa == TW_ISA_AUTO || !tw_isa_supported(isa))
        return NULL;
    switch (isa) {
    case TW_ISA_AVX512: return &tw__exact_ops_avx512;
    case TW_ISA_AVX2: return &tw__exact_ops_avx2;
    default: return &tw__exact_ops_generic;
    }
}

/* ---- the pool ----------------------------------------------------------- */

static void *worker_main(void *arg)
{
    struct worker *me = arg;
    struct tw_sweeper *s = me->s;
    uint64_t seen = 0;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (s->gen == seen && !s->quit)
            pthread_cond_wait(&s->go, &s->mu);
        if (s->quit)
            break;
        seen = s->gen;
        job_fn job = s->job;
        int mine = me->id < s->t_run;
        pthread_mutex_unlock(&s->mu);
        if (mine)
            job(s, me->id);
        pthread_mutex_lock(&s->mu);
        if (--s->running == 0)
            pthread_cond_signal(&s->done);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Runs job(s, tid) on threads 0 .. t_run - 1 (0 is the caller) and
 * returns when all are done. */
static void run_job(struct tw_sweeper *s, job_fn job)
{
    int wake = s->started > 0 && s->t_run > 1;
    if (wake) {
        pthread_mutex_lock(&s->mu);
        s->job = job;
        s->running = s->started;
        s->gen++;
        pthread_cond_broadcast(&s->go);
        pthread_mutex_unlock(&s->mu);
    }
    job(s, 0);
    if (wake) {
        pthread_mutex_lock(&s->mu);
        while (s->running > 0)
            pthread_cond_wait(&s->done, &s->mu);
        pthread_mutex_unlock(&s->mu);
    }
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Waits until every thread of the run has finished `target` blocks of a
 * phase (b: phase B, else A): spins a little (the others are a phase away
 * at most), then yields, so a machine with fewer cores than threads is not
 * starved. */
static void wait_all(struct tw_sweeper *s, int b, size_t target)
{
    for (unsigned q = 0; q < s->t_run; q++) {
        atomic_size_t *c = b ? &s->workers[q].b_blocks : &s->workers[q].a_blocks;
        unsigned spins = 0;
        /* Acquire pairs with thread q's release store after its share:
         * its outputs are visible once this sees the count. */
        while (atomic_load_explicit(c, memory_order_acquire) < target) {
            if (++spins < SPIN_BEFORE_YIELD)
                cpu_relax();
            else
                sched_yield();
        }
    }
}

/* ---- the scalar kernel --------------------------------------------------- */

static void job_scalar(struct tw_sweeper *s, unsigned tid)
{
    double *scratch = s->scalar_scratch + (size_t)tid * 5 * s->max_bars;
    for (;;) {
        size_t k = atomic_fetch_add_explicit(&s->next, 1, memory_order_relaxed);
        if (k >= s->n_combos)
            return;
        tw__backtest_scalar(s->close, s->n, s->combos + k * TW_COMBO_WINDOWS, s->opts.fee,
                            scratch, s->pnl + k, s->trades + k);
    }
}

/* ---- the exact kernel ---------------------------------------------------- */

/* Where block r starts, its length, and the series to read it from: the
 * caller's array once every window's span starts at bar 0 or later, the
 * NaN-padded prefix before. */
struct block_geo {
    ptrdiff_t t0;
    size_t nb;
    const double *x;
    ptrdiff_t avail;
};

static struct block_geo geo(const struct tw_sweeper *s, size_t r)
{
    struct block_geo g;
    g.t0 = (ptrdiff_t)(r * s->block);
    g.nb = s->n - (size_t)g.t0 < s->block ? s->n - (size_t)g.t0 : s->block;
    if (g.t0 >= (ptrdiff_t)s->tile.wmax_c - 1) {
        g.x = s->close;
        g.avail = (ptrdiff_t)s->n;
    } else {
        g.x = s->prefix + (s->tile.wmax_c - 1);
        g.avail = (ptrdiff_t)s->prefix_bars;
    }
    return g;
}

static struct tw__view view_of(const struct tw_sweeper *s, size_t r, ptrdiff_t t0)
{
    struct tw__view v = {s->bufs[r % 2], s->block, s->slot_cache, t0};
    return v;
}

static void report(struct tw_sweeper *s, size_t rounds_done)
{
    if (!s->progress)
        return;
    size_t done = s->n_blocks ? s->n_combos * rounds_done / s->n_blocks : s->n_combos;
    if (done < s->n_combos)
        s->progress(s->progress_ctx, done, s->n_combos);
}

static void job_pipeline(struct tw_sweeper *s, unsigned tid)
{
    struct tw__tile *t = &s->tile;
    const size_t R = s->n_blocks;
    double *scratch = s->scratch + (size_t)tid * s->scratch_per;
    const uint32_t *mine = s->combo_list + s->combo_off[tid];
    const size_t n_mine = s->combo_off[tid + 1] - s->combo_off[tid];
    struct worker *me = &s->workers[tid];
    for (size_t r = 0; r <= R; r++) {
        if (r < R) {
            if (r >= 2)
                wait_all(s, 1, r - 1); /* B(r - 2) read this buffer */
            struct block_geo g = geo(s, r);
            struct tw__view v = view_of(s, r, g.t0);
            for (size_t i = 0; i < t->n_tasks; i++)
                if (t->tasks[i].thread == tid)
                    tw__tile_a_task(t, i, g.x, g.avail, g.t0, g.nb, &v);
            /* Release pairs with the acquire in wait_all. */
            atomic_store_explicit(&me->a_blocks, r + 1, memory_order_release);
        }
        if (r >= 1) {
            wait_all(s, 0, r); /* A(r - 1) by everyone */
            struct block_geo g = geo(s, r - 1);
            struct tw__view v = view_of(s, r - 1, g.t0);
            for (size_t i = 0; i < n_mine; i++)
                tw__tile_b_combo(t, mine[i], g.x, g.t0, g.nb, &v, scratch, s->sink, g.t0);
            atomic_store_explicit(&me->b_blocks, r, memory_order_release);
            if (tid == 0)
                report(s, r);
        }
    }
}

/* The narrow run: the streaming kernel over the series, bar by bar, on
 * the caller's thread. */
static void run_narrow(struct tw_sweeper *s)
{
    struct tw__tile *t = &s->tile;
    const size_t pad = (size_t)t->wmax_c - 1;
    for (size_t i = 0; i < s->n; i++) {
        const double *x = i < pad ? s->prefix + pad + i : s->close + i;
        tw__tile_bar(t, x, (int64_t)i, NULL, s->sink);
        if (s->progress && (i & 0xffff) == 0 && i)
            s->progress(s->progress_ctx, s->n_combos * i / s->n, s->n_combos);
    }
}

static int cmp_item_desc(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost < y->cost ? 1 : -1;
    if (x->is_task != y->is_task)
        return (int)y->is_task - (int)x->is_task;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* The static split: every phase A task and every combo to the thread with
 * the least work so far, costliest first (so each thread's round, its A
 * share then its B share, takes about as long as the others'). */
static void split(struct tw_sweeper *s)
{
    struct tw__tile *t = &s->tile;
    struct item *items = s->items;
    size_t n = 0;
    for (size_t i = 0; i < t->n_tasks; i++)
        items[n++] = (struct item){t->tasks[i].cost, (uint32_t)i, 1, 0};
    for (size_t k = 0; k < s->n_combos; k++) {
        const int64_t *c = s->combos + k * TW_COMBO_WINDOWS;
        uint64_t cost = (uint64_t)(c[TW_H_SQRT] + c[TW_T_FULL]) * 3 / 2 + 12;
        items[n++] = (struct item){cost, (uint32_t)k, 0, 0};
    }
    uint64_t load[THREADS_MAX] = {0};
    size_t count[THREADS_MAX] = {0};
    if (s->t_run > 1)
        qsort(items, n, sizeof(items[0]), cmp_item_desc);
    for (size_t i = 0; i < n; i++) {
        unsigned best = 0;
        for (unsigned q = 1; q < s->t_run; q++)
            if (load[q] < load[best])
                best = q;
        load[best] += items[i].cost;
        items[i].owner = (uint16_t)best;
        if (items[i].is_task)
            t->tasks[items[i].idx].thread = best;
        else
            count[best]++;
    }
    s->combo_off[0] = 0;
    for (unsigned q = 0; q < s->t_run; q++)
        s->combo_off[q + 1] = s->combo_off[q] + count[q];
    /* Each thread's combos in combo order (deterministic; one thread's
     * trade log calls then come in combo order). */
    size_t fill[THREADS_MAX] = {0};
    for (size_t k = 0; k < s->n_combos; k++)
        s->combo_owner_tmp[k] = 0;
    for (size_t i = 0; i < n; i++)
        if (!items[i].is_task)
            s->combo_owner_tmp[items[i].idx] = items[i].owner;
    for (size_t k = 0; k < s->n_combos; k++) {
        unsigned q = s->combo_owner_tmp[k];
        s->combo_list[s->combo_off[q] + fill[q]++] = (uint32_t)k;
    }
}

/* Grows a buffer to at least bytes (contents not kept). */
static int grow(void **p, size_t *cap, size_t bytes)
{
    if (*cap >= bytes)
        return 0;
    free(*p);
    *p = big_alloc(bytes);
    *cap = *p ? bytes : 0;
    return *p ? 0 : -ENOMEM;
}

static size_t add_sz(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }
static size_t mul_sz(size_t a, size_t b) { return b && a > SIZE_MAX / b ? SIZE_MAX : a * b; }

/* Plans the run and sizes its memory.  0 or -ENOMEM (nothing computed). */
static int prepare(struct tw_sweeper *s, tw_error *err)
{
    struct tw__tile *t = &s->tile;
    const size_t K = s->n_combos;
    size_t plan = tw__tile_plan_bytes(K);
    size_t extra_off = (plan + 63) / 64 * 64;
    /* combo_list, combo_off, slot_cache, slot_skip, items, combo_owner_tmp */
    size_t extra = mul_sz(K, sizeof(uint32_t) + sizeof(uint16_t)) +
                   (THREADS_MAX + 2) * sizeof(size_t) + 64 * 6 +
                   mul_sz(5 * K, sizeof(double *) + 1) +
                   mul_sz(add_sz(5 * K, K), sizeof(struct item));
    if (plan == 0 || grow(&s->plan_mem, &s->plan_cap, add_sz(extra_off, extra)))
        return tw__err(err, -ENOMEM, "no memory to plan a sweep of %zu combos", K);
    size_t b = s->opts.block_bars;
    /* The plan needs B for its task groups and B needs the plan's window
     * count: plan with a provisional B, then rebuild the tasks. */
    tw__tile_plan(t, s->plan_mem, s->combos, K, b ? b : 256);
    if (!b) {
        b = tw__default_block(t->n_win);
        tw__tile_tasks(t, b, NULL);
    }
    s->block = b;
    s->narrow = b < TW_NARROW_BELOW;
    char *x = (char *)s->plan_mem + extra_off;
    s->combo_list = (uint32_t *)(void *)x;
    x += (K * sizeof(uint32_t) + 63) / 64 * 64;
    s->combo_off = (size_t *)(void *)x;
    x += ((THREADS_MAX + 2) * sizeof(size_t) + 63) / 64 * 64;
    s->slot_cache = (double **)(void *)x;
    x += (5 * K * sizeof(double *) + 63) / 64 * 64;
    s->slot_skip = (uint8_t *)x;
    x += (5 * K + 63) / 64 * 64;
    s->items = (struct item *)(void *)x;
    x += ((5 * K + K) * sizeof(struct item) + 63) / 64 * 64;
    s->combo_owner_tmp = (uint16_t *)(void *)x;

    /* Threads: no more than there are things to split; one for a run
     * too small to be worth waking the pool. */
    s->t_run = s->narrow ? 1 : s->nthreads;
    size_t things = K + t->n_win;
    if (s->t_run > things)
        s->t_run = (unsigned)things;

    size_t state = tw__tile_state_bytes(t, s->ops, s->narrow);
    size_t bufs = s->narrow ? 0 : mul_sz(mul_sz(t->n_win, b), sizeof(double));
    size_t pad = (size_t)t->wmax_c - 1;
    s->prefix_bars = s->n < pad + 2 * b ? s->n : pad + 2 * b;
    /* Sized for pad + 2 B bars even when the series is shorter, so that
     * the memory depends on the grid and B only, never on the bars (a
     * large L2 makes B exceed short series). */
    size_t prefix = mul_sz(add_sz(pad, add_sz(pad, 2 * b)), sizeof(double));
    s->scratch_per = (tw__tile_scratch(t, b) + 7) / 8 * 8;
    size_t scratch = s->narrow ? 0 : mul_sz(mul_sz(s->scratch_per, s->t_run), sizeof(double));
    size_t total = add_sz(add_sz(add_sz(state, 2 * bufs), add_sz(prefix, scratch)), 6 * 64);
    if (total == SIZE_MAX || grow(&s->state_mem, &s->state_cap, total))
        return tw__err(err, -ENOMEM, "no memory for a sweep of %zu combos (%zu bytes)", K, total);
    char *m = s->state_mem;
    tw__tile_state_init(t, m, s->ops, s->narrow, s->opts.fee);
    m += (state + 63) / 64 * 64;
    s->bufs[0] = (double *)(void *)m;
    m += (bufs + 63) / 64 * 64;
    s->bufs[1] = (double *)(void *)m;
    m += (bufs + 63) / 64 * 64;
    s->prefix = (double *)(void *)m;
    m += (prefix + 63) / 64 * 64;
    s->scratch = (double *)(void *)m;
    for (size_t i = 0; i < pad; i++)
        s->prefix[i] = NAN;
    memcpy(s->prefix + pad, s->close, s->prefix_bars * sizeof(double));
    for (size_t i = 0; i < t->n_win; i++) {
        s->slot_cache[i] = NULL;
        s->slot_skip[i] = 0;
    }
    s->n_blocks = (s->n + b - 1) / b;
    split(s);
    return 0;
}

static void finish(struct tw_sweeper *s, tw_position *open)
{
    const struct tw__tile *t = &s->tile;
    for (size_t k = 0; k < s->n_combos; k++) {
        s->pnl[k] = t->sar[k].pnl;
        s->trades[k] = t->sar[k].trades;
        if (open) {
            open[k].side = t->sar[k].pos;
            open[k].entry_bar = t->sar[k].pos ? t->sar[k].entry_bar : -1;
            open[k].entry_price = t->sar[k].pos ? t->sar[k].entry : 0.0;
        }
    }
}

static void run_exact(struct tw_sweeper *s)
{
    if (s->narrow) {
        run_narrow(s);
        return;
    }
    /* Relaxed: run_job's mutex publishes these to the workers. */
    for (unsigned q = 0; q < s->t_run; q++) {
        atomic_store_explicit(&s->workers[q].a_blocks, 0, memory_order_relaxed);
        atomic_store_explicit(&s->workers[q].b_blocks, 0, memory_order_relaxed);
    }
    run_job(s, job_pipeline);
}

static void run_begin(struct tw_sweeper *s, const double *close, size_t n_bars,
                      const int64_t *combos, size_t n_combos, double *pnl, int64_t *trades,
                      tw_trade_fn fn, void *ctx)
{
    s->close = close;
    s->n = n_bars;
    s->combos = combos;
    s->n_combos = n_combos;
    s->pnl = pnl;
    s->trades = trades;
    s->sink_store.fn = fn;
    s->sink_store.ctx = ctx;
    s->sink = fn ? &s->sink_store : NULL;
}

static void run_end(struct tw_sweeper *s)
{
    if (s->progress)
        s->progress(s->progress_ctx, s->n_combos, s->n_combos);
    s->close = NULL;
    s->combos = NULL;
    s->pnl = NULL;
    s->trades = NULL;
    s->sink = NULL;
}

/* ---- the bound dataset's cache ------------------------------------------- */

static void cache_free(struct tw_sweeper *s)
{
    free(s->cache);
    free(s->cache_win);
    free(s->cache_full);
    free(s->cache_used);
    s->cache = NULL;
    s->cache_win = NULL;
    s->cache_full = NULL;
    s->cache_used = NULL;
    s->cache_slots = 0;
    s->cache_alloc_bytes = 0;
}

static void cache_clear(struct tw_sweeper *s)
{
    for (size_t i = 0; i < s->cache_slots; i++) {
        if (s->cache_win[i] > 0)
            s->cache_of[s->cache_win[i]] = -1;
        s->cache_win[i] = 0;
        s->cache_full[i] = 0;
        s->cache_used[i] = 0;
    }
}

/* The cache for the bound dataset's length: as many whole passes as
 * cache_bytes allows.  A failure leaves the sweeper without one (every
 * window is then computed block by block). */
static void cache_setup(struct tw_sweeper *s)
{
    size_t slots = s->opts.cache_bytes / (s->b_n * sizeof(double));
    if (slots > CACHE_SLOTS_MAX)
        slots = CACHE_SLOTS_MAX;
    if (slots == s->cache_slots && s->cache)
        return;
    cache_clear(s);
    cache_free(s);
    if (slots == 0)
        return;
    if (!s->cache_of) {
        s->cache_of = malloc((TW_WINDOW_MAX + 1) * sizeof(s->cache_of[0]));
        if (!s->cache_of)
            return;
        for (size_t w = 0; w <= TW_WINDOW_MAX; w++)
            s->cache_of[w] = -1;
    }
    s->cache = big_alloc(slots * s->b_n * sizeof(double));
    s->cache_win = calloc(slots, sizeof(s->cache_win[0]));
    s->cache_full = calloc(slots, 1);
    s->cache_used = calloc(slots, sizeof(s->cache_used[0]));
    if (!s->cache || !s->cache_win || !s->cache_full || !s->cache_used) {
        cache_free(s);
        return;
    }
    s->cache_slots = slots;
}

/* Assigns the run's windows to cache slots: the cached ones are read, the
 * others computed into free (or least recently used, not needed now)
 * slots; whatever finds none goes block by block. */
static void cache_assign(struct tw_sweeper *s)
{
    struct tw__tile *t = &s->tile;
    uint64_t now = ++s->run_stamp;
    for (size_t i = 0; i < t->n_win; i++) {
        int32_t cs = s->cache_of[t->win[i]];
        if (cs >= 0)
            s->cache_used[cs] = now;
    }
    for (size_t i = 0; i < t->n_win; i++) {
        int64_t w = t->win[i];
        int32_t cs = s->cache_of[w];
        if (cs < 0) {
            size_t best = SIZE_MAX;
            for (size_t q = 0; q < s->cache_slots; q++) {
                if (s->cache_win[q] == 0) {
                    best = q;
                    break;
                }
                if (s->cache_used[q] < now &&
                    (best == SIZE_MAX || s->cache_used[q] < s->cache_used[best]))
                    best = q;
            }
            if (best == SIZE_MAX)
                continue; /* no room: block by block */
            if (s->cache_win[best] > 0)
                s->cache_of[s->cache_win[best]] = -1;
            s->cache_win[best] = w;
            s->cache_full[best] = 0;
            s->cache_used[best] = now;
            s->cache_of[w] = (int32_t)best;
            cs = (int32_t)best;
        }
        s->slot_cache[i] = s->cache + (size_t)cs * s->b_n;
        s->slot_skip[i] = s->cache_full[cs];
    }
}

static void cache_commit(struct tw_sweeper *s)
{
    struct tw__tile *t = &s->tile;
    for (size_t i = 0; i < t->n_win; i++)
        if (s->slot_cache[i])
            s->cache_full[s->cache_of[t->win[i]]] = 1;
}

/* ---- public ------------------------------------------------------------- */

void tw_sweep_opts_init(tw_sweep_opts *o)
{
    o->threads = 0;
    o->kernel = TW_KERNEL_EXACT;
    o->isa = TW_ISA_AUTO;
    o->fee = TW_FEE_DEFAULT;
    o->block_bars = 0;
    o->cache_bytes = TW_CACHE_BYTES_DEFAULT;
}

void tw_sweeper_destroy(tw_sweeper *s)
{
    if (!s)
        return;
    if (s->started > 0) {
        pthread_mutex_lock(&s->mu);
        s->quit = 1;
        pthread_cond_broadcast(&s->go);
        pthread_mutex_unlock(&s->mu);
        for (unsigned t = 1; t <= s->started; t++)
            pthread_join(s->workers[t].th, NULL);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->go);
    pthread_cond_destroy(&s->done);
    free(s->workers);
    free(s->scalar_scratch);
    free(s->plan_mem);
    free(s->state_mem);
    cache_free(s);
    free(s->cache_of);
    free(s);
}

int tw__sweeper_create_ex(tw_sweeper **out, size_t max_bars, const tw_sweep_opts *opts,
                          size_t cache_bytes)
{
    *out = NULL;
    tw_sweeper *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    if (opts)
        s->opts = *opts;
    else
        tw_sweep_opts_init(&s->opts);
    s->opts.cache_bytes = cache_bytes;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->go, NULL);
    pthread_cond_init(&s->done, NULL);
    int rc = -EINVAL;
    if (s->opts.kernel != TW_KERNEL_EXACT && s->opts.kernel != TW_KERNEL_SCALAR)
        goto fail;
    if (s->opts.isa < TW_ISA_AUTO || s->opts.isa > TW_ISA_AVX512)
        goto fail;
    if (s->opts.block_bars > TW_BLOCK_MAX)
        goto fail;
    rc = -ENOTSUP;
    if (!tw_isa_supported(s->opts.isa))
        goto fail;

    s->max_bars = max_bars ? max_bars : 1;
    unsigned nt = s->opts.threads;
    if (nt == 0) {
        long on = sysconf(_SC_NPROCESSORS_ONLN);
        nt = on > 0 ? (unsigned)on : 1;
    }
    s->nthreads = nt > THREADS_MAX ? THREADS_MAX : nt;
    (void)tw__weights();

    rc = -ENOMEM;
    if (s->opts.kernel == TW_KERNEL_EXACT) {
        s->isa = s->opts.isa == TW_ISA_AUTO ? tw_isa_best() : s->opts.isa;
        s->ops = tw__exact_ops_for(s->isa);
        TW_VERIFY(s->ops != NULL);
    } else {
        s->isa = TW_ISA_SCALAR;
        if (s->max_bars > SIZE_MAX / sizeof(double) / 5 / s->nthreads)
            goto fail;
        s->scalar_scratch = big_alloc(5 * s->max_bars * s->nthreads * sizeof(double));
        if (!s->scalar_scratch)
            goto fail;
    }

    /* Cache-line aligned (struct worker is), so threads never share one. */
    s->workers = aligned_alloc(TW_CACHE_LINE, s->nthreads * sizeof(s->workers[0]));
    if (!s->workers)
        goto fail;
    memset(s->workers, 0, s->nthreads * sizeof(s->workers[0]));
    for (unsigned t = 0; t < s->nthreads; t++) {
        s->workers[t].s = s;
        s->workers[t].id = t;
    }
    for (unsigned t = 1; t < s->nthreads; t++) {
        if (pthread_create(&s->workers[t].th, NULL, worker_main, &s->workers[t]) != 0) {
            rc = -EAGAIN;
            goto fail;
        }
        s->started++;
    }
    *out = s;
    return 0;
fail:
    tw_sweeper_destroy(s);
    return rc;
}

int tw_sweeper_create(tw_sweeper **out, size_t max_bars, const tw_sweep_opts *opts)
{
    return tw__sweeper_create_ex(out, max_bars, opts,
                                 opts ? opts->cache_bytes : TW_CACHE_BYTES_DEFAULT);
}

tw_isa tw_sweeper_isa(const tw_sweeper *s) { return s->isa; }
size_t tw__sweeper_mem_bytes(const tw_sweeper *s) { return s->plan_cap + s->state_cap; }
unsigned tw_sweeper_threads(const tw_sweeper *s) { return s->nthreads; }

void tw_sweeper_set_progress(tw_sweeper *s, tw_progress_fn fn, void *ctx)
{
    s->progress = fn;
    s->progress_ctx = ctx;
}

/* A checked run of the exact or scalar kernel. */
static int run_checked(struct tw_sweeper *s, const double *close, size_t n_bars,
                       const int64_t *combos, size_t n_combos, double *pnl, int64_t *trades,
                       tw_trade_fn fn, void *ctx, tw_position *open, int bound, tw_error *err)
{
    run_begin(s, close, n_bars, combos, n_combos, pnl, trades, fn, ctx);
    if (!s->ops) {
        s->t_run = s->nthreads < n_combos ? s->nthreads : (unsigned)n_combos;
        atomic_store_explicit(&s->next, 0, memory_order_relaxed);
        run_job(s, job_scalar);
        run_end(s);
        return 0;
    }
    int rc = prepare(s, err);
    if (rc) {
        run_end(s);
        return rc;
    }
    int cached = bound && s->cache_slots && !s->narrow;
    if (cached) {
        cache_assign(s);
        tw__tile_tasks(&s->tile, s->block, s->slot_skip);
        /* A small run on a warm cache (a chatty client's one combo) is
         * not worth waking the pool. */
        if (s->tile.n_tasks == 0 && n_combos * n_bars < ((size_t)1 << 20))
            s->t_run = 1;
        split(s);
    }
    run_exact(s);
    if (cached)
        cache_commit(s);
    finish(s, open);
    run_end(s);
    return 0;
}

static int bars_fit(const tw_sweeper *s, size_t n_bars, tw_error *err)
{
    if (n_bars > s->max_bars)
        return tw__err(err, -E2BIG, "%zu bars exceed the sweeper's %zu", n_bars,
                       s->max_bars);
    return 0;
}

int tw_sweeper_run_trades(tw_sweeper *s, const double *close, size_t n_bars,
                          const int64_t *combos, size_t n_combos, double *pnl,
                          int64_t *trades, tw_trade_fn fn, void *ctx, tw_position *open,
                          tw_error *err)
{
    if ((fn || open) && !s->ops)
        return tw__err(err, -EINVAL, "the trade log comes from the exact kernel, "
                                     "not the scalar reference");
    int rc = tw_sweep_check(close, n_bars, combos, n_combos, err);
    if (rc == 0)
        rc = bars_fit(s, n_bars, err);
    if (rc)
        return rc;
    return run_checked(s, close, n_bars, combos, n_combos, pnl, trades, fn, ctx, open, 0,
                       err);
}

int tw_sweeper_run(tw_sweeper *s, const double *close, size_t n_bars,
                   const int64_t *combos, size_t n_combos, double *pnl,
                   int64_t *trades, tw_error *err)
{
    return tw_sweeper_run_trades(s, close, n_bars, combos, n_combos, pnl, trades, NULL, NULL,
                                 NULL, err);
}

int tw_sweeper_bind(tw_sweeper *s, const double *close, size_t n_bars, uint64_t tag,
                    tw_error *err)
{
    if (s->bound && s->b_close == close && s->b_n == n_bars && s->b_tag == tag)
        return 0;
    tw_sweeper_unbind(s);
    int rc = tw__check_prices(close, n_bars, err);
    if (rc == 0)
        rc = bars_fit(s, n_bars, err);
    if (rc)
        return rc;
    s->bound = 1;
    s->b_close = close;
    s->b_n = n_bars;
    s->b_tag = tag;
    if (s->ops && s->opts.cache_bytes)
        cache_setup(s);
    return 0;
}

void tw_sweeper_unbind(tw_sweeper *s)
{
    if (s->cache_slots)
        cache_clear(s);
    s->bound = 0;
    s->b_close = NULL;
    s->b_n = 0;
    s->b_tag = 0;
}

int tw_sweeper_bound_tag(const tw_sweeper *s, uint64_t *tag)
{
    if (tag)
        *tag = s->bound ? s->b_tag : 0;
    return s->bound;
}

size_t tw_sweeper_cache_bytes(const tw_sweeper *s)
{
    size_t full = 0;
    for (size_t i = 0; i < s->cache_slots; i++)
        full += s->cache_full[i];
    return full * s->b_n * sizeof(double);
}

int tw_sweeper_run_bound(tw_sweeper *s, const int64_t *combos, size_t n_combos,
                         double *pnl, int64_t *trades, tw_error *err)
{
    if (!s->bound)
        return tw__err(err, -EINVAL, "no dataset bound to the sweeper "
                                     "(tw_sweeper_bind before tw_sweeper_run_bound)");
    int rc = tw__check_windows(combos, n_combos, err);
    if (rc)
        return rc;
    return run_checked(s, s->b_close, s->b_n, combos, n_combos, pnl, trades, NULL, NULL, NULL,
                       1, err);
}

static int make_sweeper(tw_sweeper **s, size_t n_bars, const tw_sweep_opts *opts,
                        tw_error *err)
{
    int rc = tw_sweeper_create(s, n_bars, opts);
    if (rc == -ENOTSUP)
        return tw__err(err, rc, "ISA %s not supported on this CPU",
                       tw_isa_name(opts ? opts->isa : TW_ISA_AUTO));
    if (rc == -EINVAL)
        return tw__err(err, rc, "bad sweep options (kernel %d, isa %d, block_bars %zu)",
                       opts ? (int)opts->kernel : 0, opts ? (int)opts->isa : 0,
                       opts ? opts->block_bars : 0);
    if (rc)
        return tw__err(err, rc, "cannot set up a sweep of %zu bars: %s", n_bars,
                       tw_strerror(rc));
    return 0;
}

int tw_sweep(const double *close, size_t n_bars, const int64_t *combos,
             size_t n_combos, const tw_sweep_opts *opts, double *pnl,
             int64_t *trades, tw_error *err)
{
    int rc = tw_sweep_check(close, n_bars, combos, n_combos, err);
    if (rc)
        return rc;
    tw_sweeper *s;
    rc = make_sweeper(&s, n_bars, opts, err);
    if (rc)
        return rc;
    rc = tw_sweeper_run(s, close, n_bars, combos, n_combos, pnl, trades, err);
    tw_sweeper_destroy(s);
    return rc;
}
