/* The sweep kernel: HMA/HMA3 stop-and-reverse (docs/design/kernel.md).
 *
 * One computation serves the research sweep and the live strategy.  Every
 * implementation here (scalar reference, exact SIMD, threaded, streaming)
 * produces bit-identical results: the order of every addition is part of
 * the definition and nothing is contracted into FMA.
 *
 * The exact kernel walks the bars in blocks (kernel.md "Blocks over
 * time"), carrying per combo the last inputs of its passes and its
 * stop-and-reverse state, so its memory is sized from the grid and the
 * block, never from the number of bars.  The streaming kernel
 * (tw_stream_*) is the same code with a block of one bar. */
#ifndef TICKWIRE_KERNEL_H
#define TICKWIRE_KERNEL_H

#include "tickwire/common.h"
#include "tickwire/kernel_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TW_WINDOW_MIN 1
#define TW_WINDOW_MAX 100000
#define TW_FEE_DEFAULT 0.09
#define TW_GRID_DEFAULT_COMBOS 80

/* The six windows of a combo, in wire order.  A combo is int64_t[6]. */
enum {
    TW_H_HALF = 0,  /* HMA inner short window */
    TW_H_FULL = 1,  /* HMA inner long window */
    TW_H_SQRT = 2,  /* HMA outer window */
    TW_T_THIRD = 3, /* HMA3 inner window p/3 */
    TW_T_HALF = 4,  /* HMA3 inner window p/2 */
    TW_T_FULL = 5,  /* HMA3 inner window p and outer window */
    TW_COMBO_WINDOWS = 6,
};

typedef enum tw_kernel_kind {
    TW_KERNEL_EXACT = 0,  /* SIMD lanes over bars, bit-identical to scalar */
    TW_KERNEL_SCALAR = 1, /* the reference, written line for line from the spec */
} tw_kernel_kind;

/* The exact kernel's instruction sets are the project's tw_isa (common.h):
 * SCALAR, AVX2 and AVX512 (SSE2 is not a kernel variant); AUTO picks the
 * best the CPU has. */

typedef struct tw_sweep_opts {
    unsigned threads;      /* 0: online cores */
    tw_kernel_kind kernel; /* default TW_KERNEL_EXACT */
    tw_isa isa;            /* default TW_ISA_AUTO (exact kernel only) */
    double fee;            /* round-trip fee, percentage points; default 0.09 */
    /* Bars per block of the exact kernel; 0 (default): the library's
     * choice, so that one block's close windows (distinct windows x B
     * doubles) stay in the L2 cache (three quarters of it).  Results are the same bits
     * for every B; B below 16 runs the streaming kernel bar by bar. */
    size_t block_bars;
    /* A bound dataset's cache of whole WMA passes over its close
     * (tw_sweeper_bind), in bytes; 0: no cache.  Default 64 MiB. */
    size_t cache_bytes;
} tw_sweep_opts;

#define TW_BLOCK_MAX ((size_t)1 << 20)
#define TW_CACHE_BYTES_DEFAULT ((size_t)64 << 20)

/* Fills o with the defaults above. */
void tw_sweep_opts_init(tw_sweep_opts *o);

/* Validates a sweep's input (kernel.md "Inputs"): n_bars >= 1, n_combos >= 1,
 * every price NaN or finite and > 0, every window in [1, 100000].  Returns 0
 * or -TW_ENODATA / -TW_EBADPRICE / -TW_EBADWINDOW with err naming the bar or
 * the combo and window at fault. */
int tw_sweep_check(const double *close, size_t n_bars, const int64_t *combos,
                   size_t n_combos, tw_error *err);

/* The price half of tw_sweep_check(): the index of the first price that
 * is neither NaN nor finite and > 0, or n_bars when every one is good.
 * Vectorised (AVX2 where the CPU has it); cannot fail.  The engine checks
 * LOAD and LOAD_FD datasets with it. */
size_t tw_first_bad_price(const double *close, size_t n_bars);

/* Runs every combo over close.  combos holds n_combos x 6 windows.  On
 * success writes pnl[n_combos] and trades[n_combos] and returns 0.  On bad
 * input returns the tw_sweep_check() code and writes nothing; -EINVAL for
 * bad options (block_bars above TW_BLOCK_MAX), -ENOMEM if memory cannot be
 * had.  opts may be NULL (defaults). */
int tw_sweep(const double *close, size_t n_bars, const int64_t *combos,
             size_t n_combos, const tw_sweep_opts *opts, double *pnl,
             int64_t *trades, tw_error *err);

/* A reusable sweeper: threads started once and memory kept from run to
 * run, so that a server runs request after request without allocating.
 * Not safe for concurrent tw_sweeper_run() calls on one sweeper; use one
 * per compute thread or serialise. */
typedef struct tw_sweeper tw_sweeper;
/* tw_sweeper_create: starts threads - 1 worker threads (the caller's thread
 * computes too).  The exact kernel's memory is sized from the grid and the
 * block (per combo its carried inputs and state, per thread a block's
 * scratch, two blocks of close windows) at the first run that needs it
 * and grown only when a larger grid comes, never from the number of bars;
 * the scalar kernel takes 5 x max_bars doubles per thread here.  Runs
 * take up to max_bars bars.  Returns 0, -EINVAL (bad kernel, isa or
 * block_bars value), -ENOTSUP (opts->isa not available on this CPU),
 * -ENOMEM or -EAGAIN (threads). */
int tw_sweeper_create(tw_sweeper **out, size_t max_bars, const tw_sweep_opts *opts);
/* As tw_sweep(); -E2BIG if n_bars exceeds the sweeper's max_bars.  Does
 * not touch a bound dataset's cache. */
int tw_sweeper_run(tw_sweeper *s, const double *close, size_t n_bars,
                   const int64_t *combos, size_t n_combos, double *pnl,
                   int64_t *trades, tw_error *err);
void tw_sweeper_destroy(tw_sweeper *s);

/* ---- trade log (kernel.md "Trade log") ----------------------------------- */

/* One closed trade of a combo: the position `side` opened at entry_bar and
 * closed at exit_bar by the sign flip that opened the next one. */
typedef struct tw_trade {
    uint64_t combo;     /* index of the combo in the sweep */
    int64_t entry_bar;  /* bar index of the entry */
    int64_t exit_bar;   /* bar index of the exit */
    double entry_price; /* close[entry_bar] */
    double exit_price;  /* close[exit_bar] */
    double r;           /* return in percentage points, before the fee */
    int32_t side;       /* +1 a long closed, -1 a short closed */
} tw_trade;

/* The position of a combo after the last bar (not booked as a trade). */
typedef struct tw_position {
    int32_t side;       /* 0 flat, +1 long, -1 short */
    int64_t entry_bar;  /* -1 when flat */
    double entry_price; /* 0 when flat */
} tw_position;

/* Called once per closed trade; for each combo in bar order.  In a
 * threaded sweep, calls for different combos may come at once from
 * different threads (one combo's calls never overlap).  Must not call
 * back into the sweeper. */
typedef void (*tw_trade_fn)(void *ctx, const tw_trade *t);

/* tw_sweeper_run() that also gives the trade log: fn(ctx, trade) for every
 * closed trade and, if open is not NULL, open[n_combos] the positions left
 * after the last bar.  Summing pnl + (r - fee) over a combo's trades in
 * order gives its pnl bit for bit, and their count its trades.  Exact
 * kernel only (-EINVAL for the scalar one); errors as tw_sweeper_run(),
 * nothing called or written on error. */
int tw_sweeper_run_trades(tw_sweeper *s, const double *close, size_t n_bars,
                          const int64_t *combos, size_t n_combos, double *pnl,
                          int64_t *trades, tw_trade_fn fn, void *ctx, tw_position *open,
                          tw_error *err);

/* The trade log of one combo into a caller array: writes the first
 * min(cap, total) closed trades to out, the total to *n_trades, the open
 * position to *open and the totals to *pnl / *trades (each may be NULL).
 * Returns 0, -ENOSPC when total > cap (everything else still written: call
 * again with cap = *n_trades), or the tw_sweep_check() codes (nothing
 * written); -ENOMEM. */
int tw_trades(const double *close, size_t n_bars, const int64_t *combo, double fee,
              tw_trade *out, size_t cap, size_t *n_trades, tw_position *open, double *pnl,
              int64_t *trades, tw_error *err);

/* ---- the streaming kernel (live.md "The kernel, streaming") ------------
 *
 * One instrument's bars, one call per bar, every combo on it updated: the
 * sweep with a block of one bar, so that its positions, trades and PnL are
 * the same bits as a sweep over the same bars.  The state lives in caller
 * memory, sized once from the combos: tw_stream_memsize() bytes, any
 * alignment, not moved or copied while in use; nothing is allocated after
 * tw_stream_init() (which allocates only scratch for planning, freed
 * before it returns).  Not thread-safe: one thread per stream. */
typedef struct tw_stream tw_stream;

/* The state of one combo of a stream. */
typedef struct tw_combo_state {
    int32_t position;   /* 0 flat, +1 long, -1 short (units) */
    int64_t entry_bar;  /* bar of the open position's entry, -1 when flat */
    double entry_price; /* its close, 0 when flat */
    double pnl;         /* realised, percentage points, fees included */
    int64_t trades;     /* closed round trips */
} tw_combo_state;

/* Bytes a stream of these combos needs; 0 if the combos are bad (as
 * tw_stream_init would refuse them) or the size overflows. */
size_t tw_stream_memsize(const int64_t *combos, size_t n_combos);

/* Sets up a stream in st[0..mem_bytes): validates the windows (-TW_ENODATA
 * for no combos, -TW_EBADWINDOW naming the combo and window; -EINVAL for a
 * NULL st, a fee that is not finite, or mem_bytes below
 * tw_stream_memsize()), copies the combos and resets: flat, no bars.
 * -ENOMEM if planning scratch cannot be had.  On error st is unusable. */
int tw_stream_init(tw_stream *st, size_t mem_bytes, const int64_t *combos, size_t n_combos,
                   double fee, tw_error *err);

/* One bar: close is the bar's price (NaN for a gap).  Updates every combo
 * and returns how many changed position, their indices ascending in
 * changed[] (capacity n_combos; may be NULL).  A bad price (<= 0 or
 * +-Inf) is refused: returns 0, leaves the state as it was and counts it
 * (tw_stream_bad_prices); tw_stream_push says why. */
size_t tw_stream_update(tw_stream *st, double close, uint32_t *changed);

/* tw_stream_update() with an error form: 0 with *n_changed set, or
 * -TW_EBADPRICE (state unchanged, counted, err names the price). */
int tw_stream_push(tw_stream *st, double close, uint32_t *changed, size_t *n_changed,
                   tw_error *err);

/* n bars at once (the same bits as n calls of tw_stream_update; longer
 * runs go through the block kernel).  All prices are checked first:
 * -TW_EBADPRICE naming the first bad one and nothing applied.  *n_changes
 * (may be NULL) gets the number of position changes over the bars. */
int tw_stream_update_bars(tw_stream *st, const double *close, size_t n, size_t *n_changes,
                          tw_error *err);

/* Closed trades as they happen (fn NULL: off). */
void tw_stream_set_trade_fn(tw_stream *st, tw_trade_fn fn, void *ctx);

/* Forgets every bar: flat, no bars seen (the combos and fee stay). */
void tw_stream_reset(tw_stream *st);

size_t tw_stream_combos(const tw_stream *st);
uint64_t tw_stream_bars(const tw_stream *st);       /* bars taken so far */
uint64_t tw_stream_bad_prices(const tw_stream *st); /* bars refused */
tw_isa tw_stream_isa(const tw_stream *st);
double tw_stream_fee(const tw_stream *st);

/* The state of combo k: 0, or -EINVAL if k >= n_combos. */
int tw_stream_get(const tw_stream *st, size_t k, tw_combo_state *out);

/* Every combo's state into arrays of n_combos (each may be NULL). */
void tw_stream_read(const tw_stream *st, int32_t *position, int64_t *entry_bar,
                    double *entry_price, double *pnl, int64_t *trades);

/* The stream's state as position-independent bytes (a snapshot): what a
 * bar changes (every combo's stop-and-reverse state, the close history,
 * each combo's last h_sqrt - 1 and t_full - 1 inputs of its outer WMAs,
 * the bar counters), in no lane layout, not the plan, which init rebuilds
 * from the combos.  tw_stream_state_save() writes at most
 * tw_stream_state_bytes(st) bytes and returns how many (0 if cap is
 * smaller than that); tw_stream_state_load() restores them into a stream
 * set up by tw_stream_init() with the same combos and fee (any ISA),
 * which then goes on with the bits of the stream it was saved from.
 * Everything is checked before anything is written: 0, or -TW_EFORMAT
 * (err says what does not match: the combos, the size, a field out of
 * range) with st unchanged.  The trade function is not part of the state. */
size_t tw_stream_state_bytes(const tw_stream *st);
size_t tw_stream_state_save(const tw_stream *st, void *out, size_t cap);
int tw_stream_state_load(tw_stream *st, const void *in, size_t len, tw_error *err);

/* ---- bound datasets ------------------------------------------------------
 *
 * For many small sweeps over one dataset (a server's SWEEP_LOADED, one
 * call per combo): bind the dataset once, then run parameters only.  A
 * bound sweeper keeps its WMA window cache across runs: each distinct
 * WMA(close, w) is computed the first time a run needs it and reused by
 * later runs until the dataset changes, so a run of one combo on a warm
 * cache costs that combo's own passes only (no price validation, no
 * allocation, no thread wakeup for a single combo).  Results are
 * bit-identical to tw_sweeper_run() on the same data.
 *
 * tw_sweeper_bind: validates the prices (as tw_sweep_check) and binds
 * close[n_bars] under `tag`.  Binding the same (close, n_bars, tag) again
 * is a no-op that keeps the cache (cheap enough to call before every run);
 * anything else revalidates and empties the cache.  `tag` names the
 * contents: give a dataset a new tag whenever its prices change, even at
 * the same address (a server uses a never-reused dataset id).  Returns 0,
 * -TW_ENODATA (n_bars == 0), -TW_EBADPRICE, or -E2BIG (n_bars above the
 * sweeper's max_bars); on error the sweeper is left unbound.
 *
 * Lifetime: the sweeper reads close only inside tw_sweeper_bind() and
 * tw_sweeper_run_bound().  close must stay alive and unchanged from the
 * bind to the end of every run_bound that uses it.  Between runs the
 * caller may free it, but must then bind something else (or unbind)
 * before the next run_bound; binding a different tag never touches the
 * old pointer.
 *
 * tw_sweeper_run_bound: as tw_sweeper_run() on the bound data: windows
 * are validated (-TW_ENODATA for n_combos == 0, -TW_EBADWINDOW), nothing
 * partial is written on error; -EINVAL if nothing is bound.  The cache
 * holds whole passes (n_bars doubles each), as many as opts->cache_bytes
 * allows (at most 1024); a run computes the windows it needs that the
 * cache lacks into free slots, evicting the least recently used windows
 * this run does not need, and block by block whatever does not fit.
 *
 * tw_sweeper_run() on a bound sweeper leaves the cache alone.
 * tw_sweeper_unbind() forgets the dataset and the cache;
 * tw_sweeper_bound_tag() gives the bound tag (0 and returns 0 when
 * unbound, 1 when bound); tw_sweeper_cache_bytes() the bytes the cache
 * holds now (filled passes). */
int tw_sweeper_bind(tw_sweeper *s, const double *close, size_t n_bars, uint64_t tag,
                    tw_error *err);
int tw_sweeper_run_bound(tw_sweeper *s, const int64_t *combos, size_t n_combos,
                         double *pnl, int64_t *trades, tw_error *err);
void tw_sweeper_unbind(tw_sweeper *s);
int tw_sweeper_bound_tag(const tw_sweeper *s, uint64_t *tag);
size_t tw_sweeper_cache_bytes(const tw_sweeper *s);

/* The ISA a sweeper's exact kernel runs (TW_ISA_SCALAR for the scalar
 * kernel; never AUTO) and its thread count (the caller's thread included:
 * a sweeper of T threads starts T - 1 and computes on the caller too). */
tw_isa tw_sweeper_isa(const tw_sweeper *s);
unsigned tw_sweeper_threads(const tw_sweeper *s);

/* Progress: fn(ctx, done, total) is called on the thread that called
 * tw_sweeper_run(), from time to time and once at the end (done ==
 * total); done is in combos, the share of the bar blocks every thread has
 * finished times total.  It must be quick and must not call back into the
 * sweeper.  fn NULL turns it off. */
typedef void (*tw_progress_fn)(void *ctx, size_t done, size_t total);
void tw_sweeper_set_progress(tw_sweeper *s, tw_progress_fn fn, void *ctx);

/* One WMA pass (kernel.md "WMA"): out[i] = NaN for i < w-1.  w >= 1.  The
 * scalar reference order; out must not alias x. */
void tw_wma(const double *x, size_t n, int64_t w, double *out);

/* The ISA the exact kernel uses under TW_ISA_AUTO on this CPU, and whether
 * a given ISA can run here. */
tw_isa tw_isa_best(void);
int tw_isa_supported(tw_isa isa);

/* ---- grids -------------------------------------------------------------- */

/* The combo of one length L (kernel.md "Default grid"). */
void tw_combo_from_length(int64_t length, int64_t combo[TW_COMBO_WINDOWS]);

/* Writes the default 80-combo grid into combos[80 * 6]; returns 80. */
size_t tw_grid_default(int64_t *combos);

/* ---- data --------------------------------------------------------------- */

/* Synthetic closes: xoshiro256** seeded by splitmix64, Box-Muller normals,
 * close[i] = 100 * exp(cumsum(sigma * z)).  Deterministic for a seed.
 * Exactly: state = four splitmix64 outputs from seed; u = (next() >> 11) *
 * 2^-53; per pair u1, u2 (in that order): r = sqrt(-2 log(1 - u1)),
 * z0 = r cos(2 pi u2), z1 = r sin(2 pi u2), used z0 then z1 (an odd n drops
 * the last z1); cum += sigma * z; close = 100 * exp(cum). */
void tw_gen_closes(double *close, size_t n, uint64_t seed, double sigma);

/* Reads closes from a file.  Format by extension: ".npy" (little-endian
 * float64, C order, 1-D), ".csv" (header required, column named `column`,
 * default "close"), anything else raw little-endian float64.  On success
 * *close is malloc'd (caller frees) and *n set.  Errors name the file, the
 * line or the header field at fault (-TW_EFORMAT, -errno).
 * Details: .npy takes descr '<f8' only, fortran_order False, shape (n,) or
 * (n, 1) (versions 1.0 to 3.0); any other dtype or layout is -TW_EFORMAT
 * naming it, as are a truncated file and bytes after the data.  CSV: line
 * 1 is the header (a numeric first line is reported as a missing header),
 * fields are comma-separated and may be quoted, blank lines are skipped,
 * an empty field is a NaN gap, and a bad value or a short line is
 * -TW_EFORMAT naming its line number (the header is line 1).  A file with
 * no values is -TW_ENODATA. */
int tw_read_closes(const char *path, const char *column, double **close,
                   size_t *n, tw_error *err);
int tw_read_raw(const char *path, double **close, size_t *n, tw_error *err);
int tw_read_npy(const char *path, double **close, size_t *n, tw_error *err);
int tw_read_csv(const char *path, const char *column, double **close,
                size_t *n, tw_error *err);

/* Reads a grid file: CSV with a header, either the six window columns
 * h_half,h_full,h_sqrt,t_third,t_half,t_full (any order, other columns
 * ignored) or one column `length` (each length L gives
 * tw_combo_from_length(L), L in [1, 200000]).  On success *combos is
 * malloc'd (caller frees, n_combos x 6) and *n_combos set.  Errors name the
 * file, the row or the column at fault: -TW_EFORMAT (a value that is not
 * an integer, a length out of range, neither kind of header), -TW_ENODATA
 * (no rows), -errno.  Window ranges are checked by the sweep, which names
 * the combo. */
int tw_read_grid(const char *path, int64_t **combos, size_t *n_combos, tw_error *err);

/* Writes closes as raw float64, .npy (v1.0, '<f8', shape (n,)) or CSV (a
 * `close` column, %.17g so that values read back exactly), by extension
 * as above.  0 or -errno / -EIO naming the file. */
int tw_write_closes(const char *path, const double *close, size_t n, tw_error *err);


/* ---- kernels by name: built-ins and plug-ins (kernel_abi.h) -------------
 *
 * Every host (sweep, stream, engine, Dask, the live trader) takes a
 * tw_kernel_def.  A combo of such a kernel is def->n_params doubles in the
 * order of def->params; params arrays are n_combos x n_params, row-major. */

/* The built-in kernels, in a fixed order: "hma_sar" (index 0), "zscore".
 * tw_kernel_builtin(i) is NULL past the last. */
size_t tw_kernel_builtin_count(void);
const tw_kernel_def *tw_kernel_builtin(size_t i);

/* A kernel by name or path: a built-in by its name; otherwise, when the
 * string contains '/' or ends in ".so", the shared object at that path,
 * opened with dlopen(RTLD_NOW | RTLD_LOCAL), its tw_kernel_entry() called,
 * the definition checked (tw_kernel_check_def) and its step() probed for
 * determinism (tw_kernel_probe).  An object stays loaded for the life of
 * the process and is opened once per path.  0 with *def set, or a
 * negative code with err naming the file (or name) and what is wrong:
 * -ENOENT (no such built-in or file), -TW_EBADKERNEL (not a shared object,
 * no tw_kernel_entry, another ABI, a bad definition, a step that is not
 * deterministic).  Thread-safe. */
int tw_kernel_find(const char *name_or_path, const tw_kernel_def **def, tw_error *err);

/* The loader's checks of a definition, calling nothing but state_bytes()
 * and init() on the params' defaults: abi == TW_KERNEL_ABI, a name, n_params
 * 1..16, each param named (unique), finite lo <= dflt <= hi, an integral
 * dflt where integer is set, state_bytes 1..1 MiB, init and step present.
 * 0 or -TW_EBADKERNEL naming the first fault. */
int tw_kernel_check_def(const tw_kernel_def *def, tw_error *err);

/* Runs step() twice from init() on the defaults over the built-in probe
 * series (10,000 bars with gaps) and compares every position: 0, or
 * -TW_EBADKERNEL naming the first bar where the runs differ (or where step
 * returned a value other than -1, 0, +1). */
int tw_kernel_probe(const tw_kernel_def *def, tw_error *err);

/* One combo against its params: every value finite, within [lo, hi],
 * integral where required, then init() on scratch state.  0, or
 * -EINVAL naming the param (and what init refused). */
int tw_kernel_check_combo(const tw_kernel_def *def, const double *p, tw_error *err);

/* The index of the param called name, or -1. */
int tw_kernel_param_index(const tw_kernel_def *def, const char *name);

/* The host's books of one instance: the one rule for every kernel
 * (kernel.md "Kernels as plug-ins").  Cumulative pnl starts at 0; peak is
 * its running maximum (0 included), max_drawdown the largest peak - pnl
 * seen; bars counts every bar fed (gaps too), bars_in_pos those after
 * which the position is not 0. */
typedef struct tw_kbook {
    int32_t pos;        /* 0 flat, +1 long, -1 short */
    int32_t stopped;    /* step returned a value other than -1, 0, +1 */
    int64_t entry_bar;  /* -1 when flat */
    double entry_price; /* 0 when flat */
    double pnl;         /* realised, percentage points, fees included */
    int64_t trades;     /* closed trades */
    int64_t wins;       /* closed trades with r - fee > 0 */
    double peak;        /* running maximum of pnl, from 0 */
    double max_drawdown; /* largest peak - pnl, percentage points */
    uint64_t bars;      /* bars fed */
    uint64_t bars_in_pos; /* bars after which pos != 0 */
} tw_kbook;

void tw_kbook_init(tw_kbook *b);

/* One bar of one instance: target = def->step(state, close), booked at
 * bar index `bar` with the host's rule (a NaN close books nothing and
 * keeps the position).  Returns the position after the bar.  When a trade
 * closes and t is not NULL, *t is that trade (combo left 0) and *closed
 * is 1, else *closed is 0 (closed may be NULL).  A target other than -1,
 * 0, +1 stops the instance: stopped is set, nothing is booked from that
 * bar on, and later calls return the position unchanged. */
int tw_kbook_bar(tw_kbook *b, const tw_kernel_def *def, void *state, double close,
                 int64_t bar, double fee, tw_trade *t, int *closed);

/* Per combo of a sweep of any kernel. */
typedef struct tw_kresult {
    double pnl;          /* realised, percentage points, fees included */
    int64_t trades;      /* closed trades */
    int64_t wins;        /* closed trades with r - fee > 0 */
    double max_drawdown; /* peak to trough of cumulative pnl, percentage points */
    double exposure;     /* share of bars after which a position is open */
    tw_position open;    /* the position left after the last bar */
    int32_t stopped;     /* step returned a bad value: books up to that bar */
} tw_kresult;

typedef struct tw_ksweep_opts {
    unsigned threads;  /* 0: online cores; combos are split across threads */
    double fee;        /* round-trip fee, percentage points; default 0.09 */
    int generic;       /* non-zero: step() per bar even where the kernel has
                          a fast path (hma_sar's exact SIMD sweep) */
} tw_ksweep_opts;

void tw_ksweep_opts_init(tw_ksweep_opts *o);

/* Sweeps any kernel over close[0..n): out[n_combos] (and the trade log
 * through fn when not NULL, as tw_sweeper_run_trades(): per combo in bar
 * order, combos possibly at once on different threads).  Every price is
 * checked (as tw_sweep_check) and every combo (tw_kernel_check_combo,
 * naming its index) before any work: -TW_EBADPRICE, -EINVAL, -TW_ENODATA,
 * -ENOMEM, nothing written on error.  hma_sar runs its exact SIMD sweep
 * unless o->generic; the results are the same bits either way. */
int tw_ksweep(const tw_kernel_def *def, const double *close, size_t n, const double *params,
              size_t n_combos, const tw_ksweep_opts *o, tw_kresult *out, tw_trade_fn fn,
              void *ctx, tw_error *err);

/* The default grid of a kernel into a malloc'd array (caller frees;
 * n_combos x n_params): the kernel's default_grid(), or -ENOENT with err
 * saying the kernel has none. */
int tw_kernel_default_grid(const tw_kernel_def *def, double **params, size_t *n_combos,
                           tw_error *err);

/* Reads a grid CSV for a kernel: the header names the kernel's params (any
 * order, all of them, other columns refused naming them); for hma_sar the
 * six-window and `length` grids of tw_read_grid() are also accepted.
 * *params malloc'd (caller frees).  Errors name the file, row and column:
 * -TW_EFORMAT, -TW_ENODATA, -errno. */
int tw_read_kgrid(const char *path, const tw_kernel_def *def, double **params,
                  size_t *n_combos, tw_error *err);

/* A stream of one kernel's combos on one instrument, one call per bar: the
 * same books as tw_ksweep over the same bars, bit for bit.  Caller memory
 * of tw_kstream_memsize() bytes, flat: the states and books of every combo
 * (a copy of the whole block is a snapshot).  Not thread-safe. */
typedef struct tw_kstream tw_kstream;

/* 0 when a combo is refused or the size overflows. */
size_t tw_kstream_memsize(const tw_kernel_def *def, const double *params, size_t n_combos);
int tw_kstream_init(tw_kstream *ks, size_t mem_bytes, const tw_kernel_def *def,
                    const double *params, size_t n_combos, double fee, tw_error *err);
/* One bar: 0 with the combos that changed position in changed[] (capacity
 * n_combos, may be NULL) and *n_changed; -TW_EBADPRICE (nothing changed,
 * counted). */
int tw_kstream_push(tw_kstream *ks, double close, uint32_t *changed, size_t *n_changed,
                    tw_error *err);
/* Combo k's books so far (result as tw_ksweep would give over the bars
 * pushed): 0 or -EINVAL for k out of range. */
int tw_kstream_get(const tw_kstream *ks, size_t k, tw_kresult *out);
size_t tw_kstream_combos(const tw_kstream *ks);
uint64_t tw_kstream_bars(const tw_kstream *ks);
const tw_kernel_def *tw_kstream_kernel(const tw_kstream *ks);
/* Called once per closed trade (t->combo set), from inside push. */
void tw_kstream_set_trade_fn(tw_kstream *ks, tw_trade_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
