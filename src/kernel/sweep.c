/* The sweep driver: a pool of persistent threads, per-thread scratch and a
 * per-sweep cache of the WMA passes over `close`, all sized once at
 * tw_sweeper_create().
 *
 * Why a cache: five of a combo's seven WMA passes read `close` and depend
 * on nothing but their window, and across a grid the same windows recur
 * (h_half == t_full in every combo of the default grid; the 80 combos use
 * 136 distinct close windows for 400 close passes).  So a sweep runs in
 * batches of combos; each batch first computes every distinct close window
 * once (phase A: tasks = groups of TW_GROUP windows x bar chunks), then the
 * per-combo work (phase B: the two passes over d and e and the
 * stop-and-reverse loop).  Both phases hand out tasks through one atomic
 * counter, so threads balance themselves; results go to the combo's own
 * index, so they come out in combo order whatever thread computed them.
 *
 * A bound dataset (tw_sweeper_bind) keeps the cache between runs: a run
 * computes only the windows no earlier run left in it, so a client that
 * sends one combo per call pays each distinct window once, as a batched
 * call does, and a repeated sweep pays phase B only.  A plain run, or a
 * run needing more windows than free slots, empties the cache first. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel/kernel_internal.h"

/* Default bound on the close-window cache.  Only the slots a batch uses
 * are touched, so the rest stays virtual. */
#define CACHE_BYTES_DEFAULT ((size_t)256 << 20)
#define SLOTS_MAX 1024
#define SLOTS_MIN 5 /* one combo's close windows */
#define BATCH_MAX 4096
#define CHUNK_ANCHORS 16384 /* phase A splits the bars in chunks this long */
#define THREADS_MAX 256
#define TILE_BARS 4096 /* phase B's bar tile: a multiple of 64 */
#define SINGLES_BELOW 4 /* batch_build: fewer fresh windows go one by one */

struct worker {
    pthread_t th;
    struct tw_sweeper *s;
    double *scratch;
} TW_CACHE_ALIGNED;

typedef void (*job_fn)(struct tw_sweeper *s, size_t task, double *scratch);

struct tw_sweeper {
    tw_sweep_opts opts;
    size_t max_bars;
    unsigned nthreads;
    tw_isa isa;                       /* resolved (never AUTO) */
    const struct tw__exact_ops *ops;  /* NULL for the scalar kernel */
    const double *wt;
    size_t per_thread;                /* scratch doubles per thread */
    struct worker *workers;           /* [nthreads]; [0] is the caller */

    /* Close-window cache and the current batch. */
    double *cache;
    double *pad_out;                  /* [max_bars] where padding windows write */
    size_t slots;
    int32_t *slot_of;                 /* [TW_WINDOW_MAX + 1], -1: none */
    int64_t *win;                     /* [slots] the batch's windows */
    size_t n_win;
    int64_t *group_w;                 /* [n_groups * TW_GROUP] */
    double **group_out;               /* [n_groups * TW_GROUP] */
    size_t n_groups, n_chunks;
    int64_t *single_w;                /* [slots] windows computed one by one */
    size_t n_singles;
    uint64_t *order;                  /* [BATCH_MAX] cost << 32 | combo - batch_start */
    size_t n_order, batch_start;

    /* The bound dataset (tw_sweeper_bind): while bound, the cache's slots
     * hold WMA passes over b_close and stay valid across runs. */
    int bound;
    const double *b_close;
    size_t b_n;
    uint64_t b_tag;

    /* The current run. */
    const double *close;
    size_t n;
    const int64_t *combos;
    size_t n_combos;
    double *pnl;
    int64_t *trades;

    tw_progress_fn progress;
    void *progress_ctx;
    atomic_size_t combos_done;

    /* The pool.  Job fields are written under mu before gen is bumped and
     * read by workers under mu after they see the new gen, so the mutex
     * orders them; the same mutex makes the workers' results visible to
     * the caller once running drops to 0. */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t gen;
    unsigned running;
    int quit;
    unsigned started;                 /* worker threads created */
    job_fn job;
    size_t n_tasks;
    /* Task counter: fetch_add by every thread; relaxed is enough, the
     * tasks' inputs were published by the mutex above. */
    atomic_size_t next;
};

/* Large buffers (the cache, the scratch) on transparent huge pages where
 * the kernel allows it: a fresh sweeper faults its buffers in on first
 * use, and 2 MiB pages make that ~500 times fewer faults. */
static void *big_alloc(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    if (bytes < 2 * huge)
        return malloc(bytes);
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

/* ---- jobs --------------------------------------------------------------- */

static void job_scalar(struct tw_sweeper *s, size_t k, double *scratch)
{
    tw__backtest_scalar(s->close, s->n, s->combos + k * TW_COMBO_WINDOWS,
                        s->opts.fee, scratch, s->pnl + k, s->trades + k);
}

static double *slot_ptr(struct tw_sweeper *s, int64_t w)
{
    int32_t slot = s->slot_of[w];
    TW_VERIFY(slot >= 0);
    return s->cache + (size_t)slot * s->n;
}

/* Phase A: one group of close windows over one chunk of anchors. */
static void job_group(struct tw_sweeper *s, size_t task, double *scratch)
{
    (void)scratch;
    if (task >= s->n_groups * s->n_chunks) {
        /* A window on its own: outputs [ib, ie), NaN prefix included. */
        task -= s->n_groups * s->n_chunks;
        int64_t w = s->single_w[task / s->n_chunks];
        size_t ib = task % s->n_chunks * CHUNK_ANCHORS;
        size_t ie = ib + CHUNK_ANCHORS < s->n ? ib + CHUNK_ANCHORS : s->n;
        s->ops->wma_range(s->close, w, slot_ptr(s, w), s->wt, ib, ie);
        return;
    }
    size_t g = task / s->n_chunks, ch = task % s->n_chunks;
    const int64_t *w = s->group_w + g * TW_GROUP;
    double *const *out = s->group_out + g * TW_GROUP;
    size_t kb = ch * CHUNK_ANCHORS, ke = kb + CHUNK_ANCHORS;
    if (ke > s->n)
        ke = s->n;
    if (ch == 0)
        for (int j = 0; j < TW_GROUP; j++)
            for (size_t i = 0; i < s->n && i + 1 < (size_t)w[j]; i++)
                out[j][i] = NAN;
    s->ops->wma_group(s->close, s->n, w, out, s->wt, kb, ke);
}

/* Phase B: the rest of one combo, from the cached close windows, in bar
 * tiles so that d, e, hma and hma3 are consumed while still in the core's
 * own cache (each pass reads back at most a window into earlier tiles). */
static void job_combo(struct tw_sweeper *s, size_t task, double *scratch)
{
    size_t k = s->batch_start + (size_t)(s->order[task] & 0xffffffffu);
    const int64_t *c = s->combos + k * TW_COMBO_WINDOWS;
    const struct tw__exact_ops *ops = s->ops;
    size_t n = s->n;
    double *d = scratch, *e = scratch + n, *hma = scratch + 2 * n, *hma3 = scratch + 3 * n;
    const double *a = slot_ptr(s, c[TW_H_HALF]), *b = slot_ptr(s, c[TW_H_FULL]);
    const double *p3 = slot_ptr(s, c[TW_T_THIRD]), *p2 = slot_ptr(s, c[TW_T_HALF]);
    const double *p1 = slot_ptr(s, c[TW_T_FULL]);
    struct tw__sar_state st = {0, 0.0, 0.0, 0};
    for (size_t t0 = 0; t0 < n; t0 += TILE_BARS) {
        size_t t1 = t0 + TILE_BARS < n ? t0 + TILE_BARS : n;
        ops->combine_d(a + t0, b + t0, t1 - t0, d + t0);
        ops->wma_range(d, c[TW_H_SQRT], hma, s->wt, t0, t1);
        ops->combine_e(p3 + t0, p2 + t0, p1 + t0, t1 - t0, e + t0);
        ops->wma_range(e, c[TW_T_FULL], hma3, s->wt, t0, t1);
        ops->sar_range(s->close, hma, hma3, t0, t1, s->opts.fee, &st);
    }
    s->pnl[k] = st.pnl;
    s->trades[k] = st.trades;
}

/* ---- the pool ----------------------------------------------------------- */

static void work(struct tw_sweeper *s, job_fn job, size_t n_tasks,
                 double *scratch, int report)
{
    for (;;) {
        size_t t = atomic_fetch_add_explicit(&s->next, 1, memory_order_relaxed);
        if (t >= n_tasks)
            return;
        job(s, t, scratch);
        if (job != job_group) {
            /* Pairs with the caller's relaxed load below: a count only. */
            size_t d = atomic_fetch_add_explicit(&s->combos_done, 1,
                                                 memory_order_relaxed) + 1;
            if (report && s->progress)
                s->progress(s->progress_ctx, d, s->n_combos);
        }
    }
}

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
        size_t n_tasks = s->n_tasks;
        pthread_mutex_unlock(&s->mu);
        work(s, job, n_tasks, me->scratch, 0);
        pthread_mutex_lock(&s->mu);
        if (--s->running == 0)
            pthread_cond_signal(&s->done);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Runs n_tasks tasks of job on every thread, the caller included, and
 * returns when all are done.  A single task runs on the caller alone:
 * waking the pool (and waiting for every worker to check back in) costs
 * more than nothing, which is all the workers would find to do. */
static void run_phase(struct tw_sweeper *s, job_fn job, size_t n_tasks)
{
    atomic_store_explicit(&s->next, 0, memory_order_relaxed);
    int wake = s->started > 0 && n_tasks > 1;
    if (wake) {
        pthread_mutex_lock(&s->mu);
        s->job = job;
        s->n_tasks = n_tasks;
        s->running = s->started;
        s->gen++;
        pthread_cond_broadcast(&s->go);
        pthread_mutex_unlock(&s->mu);
    }
    work(s, job, n_tasks, s->workers[0].scratch, 1);
    if (wake) {
        pthread_mutex_lock(&s->mu);
        while (s->running > 0)
            pthread_cond_wait(&s->done, &s->mu);
        pthread_mutex_unlock(&s->mu);
    }
}

/* ---- batches of the exact kernel ---------------------------------------- */

static int cmp_i64_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

static int cmp_u64_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x < y) - (x > y);
}

/* Close windows of a combo: the five that read `close`. */
static const int close_idx[5] = {TW_H_HALF, TW_H_FULL, TW_T_THIRD, TW_T_HALF, TW_T_FULL};

/* Fills the batch from combo `start` on: as many combos as the free cache
 * slots and BATCH_MAX allow.  Windows already in the cache (slot_of >= 0:
 * a bound dataset's earlier runs) are reused; only the fresh ones, given
 * slots from n_win on, go into the phase A groups.  Returns the end index;
 * == start when even the first combo's fresh windows do not fit (only
 * possible with a partly full cache: an empty one has SLOTS_MIN slots). */
static size_t batch_build(struct tw_sweeper *s, size_t start, size_t n_combos)
{
    const size_t first = s->n_win;
    s->n_order = 0;
    s->batch_start = start;
    size_t k = start;
    for (; k < n_combos && s->n_order < BATCH_MAX; k++) {
        const int64_t *c = s->combos + k * TW_COMBO_WINDOWS;
        size_t fresh = 0;
        for (int j = 0; j < 5; j++) {
            int64_t w = c[close_idx[j]];
            int dup = s->slot_of[w] >= 0;
            for (int q = 0; q < j && !dup; q++)
                dup = c[close_idx[q]] == w;
            fresh += !dup;
        }
        if (s->n_win + fresh > s->slots)
            break;
        for (int j = 0; j < 5; j++) {
            int64_t w = c[close_idx[j]];
            if (s->slot_of[w] < 0) {
                s->slot_of[w] = (int32_t)s->n_win;
                s->win[s->n_win++] = w;
            }
        }
        uint64_t cost = (uint64_t)(c[TW_H_SQRT] + c[TW_T_FULL]);
        s->order[s->n_order++] = cost << 32 | (uint64_t)(k - start);
    }
    if (k == start)
        return k;

    /* Groups of TW_GROUP windows, largest first (so the costliest tasks
     * are handed out first).  The last group is padded with windows of 1
     * written to pad_out: in the lockstep loop a window of 1 costs one add
     * per output, where a copy of a real window would cost that window's
     * length (a bound dataset's run often has one or two fresh windows,
     * and padding them with copies made its phase A up to 8 times dearer).
     * Only the last group is padded and its chunks write disjoint ranges,
     * so pad_out is never written twice at once. */
    int64_t sorted[SLOTS_MAX];
    size_t n_fresh = s->n_win - first;
    memcpy(sorted, s->win + first, n_fresh * sizeof(sorted[0]));
    if (n_fresh > 1)
        qsort(sorted, n_fresh, sizeof(sorted[0]), cmp_i64_desc);
    /* A group's windows add in lockstep, one dependency chain per window:
     * with few windows the chains cannot hide the adder's latency (and
     * stretches where only the largest window is active run one chain
     * anyway), while wma_range keeps eight independent blocks in flight.
     * So a remainder of fewer than SINGLES_BELOW windows (the usual case
     * of a bound dataset's run: one to four fresh windows) is computed
     * window by window. */
    size_t rem = n_fresh % TW_GROUP;
    s->n_singles = rem < SINGLES_BELOW ? rem : 0;
    for (size_t i = 0; i < s->n_singles; i++)
        s->single_w[i] = sorted[n_fresh - s->n_singles + i];
    n_fresh -= s->n_singles;
    s->n_groups = (n_fresh + TW_GROUP - 1) / TW_GROUP;
    for (size_t i = 0; i < s->n_groups * TW_GROUP; i++) {
        if (i < n_fresh) {
            s->group_w[i] = sorted[i];
            s->group_out[i] = slot_ptr(s, sorted[i]);
        } else {
            s->group_w[i] = 1;
            s->group_out[i] = s->pad_out;
        }
    }
    if (s->n_order > 1)
        qsort(s->order, s->n_order, sizeof(s->order[0]), cmp_u64_desc);
    return k;
}

static void batch_clear(struct tw_sweeper *s)
{
    for (size_t i = 0; i < s->n_win; i++)
        s->slot_of[s->win[i]] = -1;
    s->n_win = 0;
}

/* ---- public ------------------------------------------------------------- */

void tw_sweep_opts_init(tw_sweep_opts *o)
{
    o->threads = 0;
    o->kernel = TW_KERNEL_EXACT;
    o->isa = TW_ISA_AUTO;
    o->fee = TW_FEE_DEFAULT;
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
    if (s->workers)
        free(s->workers[0].scratch);
    free(s->workers);
    free(s->cache);
    free(s->slot_of);
    free(s->win);
    free(s->group_w);
    free(s->group_out);
    free(s->single_w);
    free(s->order);
    free(s);
}

int tw__sweeper_create_ex(tw_sweeper **out, size_t max_bars,
                          const tw_sweep_opts *opts, size_t cache_bytes)
{
    *out = NULL;
    tw_sweeper *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    if (opts)
        s->opts = *opts;
    else
        tw_sweep_opts_init(&s->opts);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->go, NULL);
    pthread_cond_init(&s->done, NULL);
    int rc = -EINVAL;
    if (s->opts.kernel != TW_KERNEL_EXACT && s->opts.kernel != TW_KERNEL_SCALAR)
        goto fail;
    if (s->opts.isa < TW_ISA_AUTO || s->opts.isa > TW_ISA_AVX512)
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
    s->wt = tw__weights();

    rc = -ENOMEM;
    if (s->opts.kernel == TW_KERNEL_EXACT) {
        s->isa = s->opts.isa == TW_ISA_AUTO ? tw_isa_best() : s->opts.isa;
        s->ops = tw__exact_ops_for(s->isa);
        TW_VERIFY(s->ops != NULL);
        s->per_thread = 4 * s->max_bars;
        size_t slots = cache_bytes / (s->max_bars * sizeof(double));
        if (slots > SLOTS_MAX)
            slots = SLOTS_MAX;
        if (slots < SLOTS_MIN)
            slots = SLOTS_MIN;
        s->slots = slots;
        if (s->max_bars > SIZE_MAX / sizeof(double) / (slots + 1))
            goto fail;
        /* One slot more than the cache holds: the padding's outputs. */
        s->cache = big_alloc((slots + 1) * s->max_bars * sizeof(double));
        s->slot_of = malloc((TW_WINDOW_MAX + 1) * sizeof(s->slot_of[0]));
        s->win = malloc(slots * sizeof(s->win[0]));
        size_t gmax = (slots + TW_GROUP - 1) / TW_GROUP * TW_GROUP;
        s->group_w = malloc(gmax * sizeof(s->group_w[0]));
        s->group_out = malloc(gmax * sizeof(s->group_out[0]));
        s->single_w = malloc(slots * sizeof(s->single_w[0]));
        s->order = malloc(BATCH_MAX * sizeof(s->order[0]));
        if (s->cache)
            s->pad_out = s->cache + slots * s->max_bars;
        if (!s->cache || !s->slot_of || !s->win || !s->group_w || !s->group_out ||
            !s->single_w || !s->order)
            goto fail;
        for (size_t w = 0; w <= TW_WINDOW_MAX; w++)
            s->slot_of[w] = -1;
    } else {
        s->isa = TW_ISA_SCALAR;
        s->per_thread = 5 * s->max_bars;
    }

    /* Cache-line aligned (struct worker is), so threads never share one. */
    s->workers = aligned_alloc(TW_CACHE_LINE, s->nthreads * sizeof(s->workers[0]));
    if (!s->workers)
        goto fail;
    memset(s->workers, 0, s->nthreads * sizeof(s->workers[0]));
    if (s->per_thread > SIZE_MAX / sizeof(double) / s->nthreads)
        goto fail;
    double *scratch = big_alloc(s->per_thread * s->nthreads * sizeof(double));
    if (!scratch)
        goto fail;
    for (unsigned t = 0; t < s->nthreads; t++) {
        s->workers[t].s = s;
        s->workers[t].scratch = scratch + (size_t)t * s->per_thread;
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
    return tw__sweeper_create_ex(out, max_bars, opts, CACHE_BYTES_DEFAULT);
}

tw_isa tw_sweeper_isa(const tw_sweeper *s) { return s->isa; }
unsigned tw_sweeper_threads(const tw_sweeper *s) { return s->nthreads; }

void tw_sweeper_set_progress(tw_sweeper *s, tw_progress_fn fn, void *ctx)
{
    s->progress = fn;
    s->progress_ctx = ctx;
}

/* The sweep proper, on checked input.  keep: the cache holds passes over
 * this same close (a bound dataset) and is left filled for the next run;
 * otherwise it starts and ends empty. */
static void run_all(struct tw_sweeper *s, const double *close, size_t n_bars,
                    const int64_t *combos, size_t n_combos, double *pnl,
                    int64_t *trades, int keep)
{
    s->close = close;
    s->n = n_bars;
    s->combos = combos;
    s->n_combos = n_combos;
    s->pnl = pnl;
    s->trades = trades;
    atomic_store_explicit(&s->combos_done, 0, memory_order_relaxed);

    if (s->opts.kernel == TW_KERNEL_SCALAR) {
        run_phase(s, job_scalar, n_combos);
    } else {
        size_t n_chunks = (n_bars + CHUNK_ANCHORS - 1) / CHUNK_ANCHORS;
        s->n_chunks = n_chunks;
        for (size_t start = 0; start < n_combos;) {
            size_t end = batch_build(s, start, n_combos);
            if (end == start) {
                /* The cache is full of other windows: start it afresh. */
                batch_clear(s);
                end = batch_build(s, start, n_combos);
                TW_VERIFY(end > start);
            }
            if (s->n_groups + s->n_singles > 0)
                run_phase(s, job_group, (s->n_groups + s->n_singles) * n_chunks);
            run_phase(s, job_combo, s->n_order);
            if (!keep)
                batch_clear(s);
            start = end;
        }
    }
    if (s->progress)
        s->progress(s->progress_ctx, n_combos, n_combos);
    s->close = NULL;
    s->combos = NULL;
    s->pnl = NULL;
    s->trades = NULL;
}

int tw_sweeper_run(tw_sweeper *s, const double *close, size_t n_bars,
                   const int64_t *combos, size_t n_combos, double *pnl,
                   int64_t *trades, tw_error *err)
{
    int rc = tw_sweep_check(close, n_bars, combos, n_combos, err);
    if (rc)
        return rc;
    if (n_bars > s->max_bars)
        return tw__err(err, -E2BIG, "%zu bars exceed the sweeper's %zu", n_bars,
                       s->max_bars);
    /* The cache is shared with a bound dataset's passes: those go (the
     * binding stays, and its next run refills lazily). */
    batch_clear(s);
    run_all(s, close, n_bars, combos, n_combos, pnl, trades, 0);
    return 0;
}

int tw_sweeper_bind(tw_sweeper *s, const double *close, size_t n_bars, uint64_t tag,
                    tw_error *err)
{
    if (s->bound && s->b_close == close && s->b_n == n_bars && s->b_tag == tag)
        return 0;
    tw_sweeper_unbind(s);
    int rc = tw__check_prices(close, n_bars, err);
    if (rc)
        return rc;
    if (n_bars > s->max_bars)
        return tw__err(err, -E2BIG, "%zu bars exceed the sweeper's %zu", n_bars,
                       s->max_bars);
    s->bound = 1;
    s->b_close = close;
    s->b_n = n_bars;
    s->b_tag = tag;
    return 0;
}

void tw_sweeper_unbind(tw_sweeper *s)
{
    batch_clear(s);
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

int tw_sweeper_run_bound(tw_sweeper *s, const int64_t *combos, size_t n_combos,
                         double *pnl, int64_t *trades, tw_error *err)
{
    if (!s->bound)
        return tw__err(err, -EINVAL, "no dataset bound to the sweeper "
                                     "(tw_sweeper_bind before tw_sweeper_run_bound)");
    int rc = tw__check_windows(combos, n_combos, err);
    if (rc)
        return rc;
    run_all(s, s->b_close, s->b_n, combos, n_combos, pnl, trades, 1);
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
    rc = tw_sweeper_create(&s, n_bars, opts);
    if (rc == -ENOTSUP)
        return tw__err(err, rc, "ISA %s not supported on this CPU",
                       tw_isa_name(opts ? opts->isa : TW_ISA_AUTO));
    if (rc == -EINVAL)
        return tw__err(err, rc, "bad sweep options (kernel %d, isa %d)",
                       opts ? (int)opts->kernel : 0, opts ? (int)opts->isa : 0);
    if (rc)
        return tw__err(err, rc, "cannot set up a sweep of %zu bars: %s", n_bars,
                       tw_strerror(rc));
    rc = tw_sweeper_run(s, close, n_bars, combos, n_combos, pnl, trades, err);
    tw_sweeper_destroy(s);
    return rc;
}
