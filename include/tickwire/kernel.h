/* The sweep kernel: HMA/HMA3 stop-and-reverse (../shared/spec/kernel.md).
 *
 * One computation serves the research sweep and the live strategy.  Every
 * implementation here (scalar reference, exact SIMD, threaded) produces
 * bit-identical results: the order of every addition is part of the
 * definition and nothing is contracted into FMA. */
#ifndef TICKWIRE_KERNEL_H
#define TICKWIRE_KERNEL_H

#include "tickwire/common.h"

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
} tw_sweep_opts;

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
 * input returns the tw_sweep_check() code and writes nothing; -ENOMEM if
 * scratch memory cannot be had.  opts may be NULL (defaults). */
int tw_sweep(const double *close, size_t n_bars, const int64_t *combos,
             size_t n_combos, const tw_sweep_opts *opts, double *pnl,
             int64_t *trades, tw_error *err);

/* A reusable sweeper: threads and per-thread scratch sized once for up to
 * max_bars bars, so that a server runs request after request without
 * allocating.  Not safe for concurrent tw_sweeper_run() calls on one
 * sweeper; use one per compute thread or serialise. */
typedef struct tw_sweeper tw_sweeper;
/* tw_sweeper_create: starts threads - 1 worker threads (the caller's thread
 * computes too) and allocates everything a run needs: per thread 4 x
 * max_bars doubles (5 for the scalar kernel) and, for the exact kernel, a
 * cache of WMA passes over close bounded at 256 MiB plus one max_bars slot
 * (virtual: a run only touches the slots its distinct windows need; grids
 * with more distinct windows than fit run in several batches).  Returns
 * 0, -EINVAL (bad kernel or isa value), -ENOTSUP (opts->isa not available
 * on this CPU), -ENOMEM or -EAGAIN (threads). */
int tw_sweeper_create(tw_sweeper **out, size_t max_bars, const tw_sweep_opts *opts);
/* As tw_sweep(); -E2BIG if n_bars exceeds the sweeper's max_bars. */
int tw_sweeper_run(tw_sweeper *s, const double *close, size_t n_bars,
                   const int64_t *combos, size_t n_combos, double *pnl,
                   int64_t *trades, tw_error *err);
void tw_sweeper_destroy(tw_sweeper *s);

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
 * partial is written on error; -EINVAL if nothing is bound.  The cache is
 * bounded as for tw_sweeper_run(); when a run needs more distinct windows
 * than fit, the cache is emptied and refilled.
 *
 * tw_sweeper_run() on a bound sweeper empties the cache (the two share
 * it) but keeps the binding.  tw_sweeper_unbind() forgets the dataset and
 * the cache; tw_sweeper_bound_tag() gives the bound tag (0 and returns 0
 * when unbound, 1 when bound). */
int tw_sweeper_bind(tw_sweeper *s, const double *close, size_t n_bars, uint64_t tag,
                    tw_error *err);
int tw_sweeper_run_bound(tw_sweeper *s, const int64_t *combos, size_t n_combos,
                         double *pnl, int64_t *trades, tw_error *err);
void tw_sweeper_unbind(tw_sweeper *s);
int tw_sweeper_bound_tag(const tw_sweeper *s, uint64_t *tag);

/* The ISA a sweeper's exact kernel runs (TW_ISA_SCALAR for the scalar
 * kernel; never AUTO) and its thread count (the caller's thread included:
 * a sweeper of T threads starts T - 1 and computes on the caller too). */
tw_isa tw_sweeper_isa(const tw_sweeper *s);
unsigned tw_sweeper_threads(const tw_sweeper *s);

/* Progress: fn(ctx, done, total) is called on the thread that called
 * tw_sweeper_run(), after combos it finished itself and once at the end
 * (done == total); done counts combos finished by any thread.  It must be
 * quick and must not call back into the sweeper.  fn NULL turns it off. */
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

/* Writes closes as raw float64, .npy (v1.0, '<f8', shape (n,)) or CSV (a
 * `close` column, %.17g so that values read back exactly), by extension
 * as above.  0 or -errno / -EIO naming the file. */
int tw_write_closes(const char *path, const double *close, size_t n, tw_error *err);

#ifdef __cplusplus
}
#endif
#endif
