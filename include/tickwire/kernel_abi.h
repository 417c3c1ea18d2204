/* The kernel ABI: what a strategy kernel is, for built-ins and plug-ins
 * alike (docs/kernel.md, "Kernels as plug-ins").
 *
 * A kernel is a decision function with flat state.  The host (the sweep,
 * the stream, the engine, Dask, the live trader, crash recovery) owns the
 * state bytes, feeds one close per call to step(), and books every kernel
 * with one rule: when the target position differs from the position, an
 * open position is closed at this bar's close (one trade, pnl + (r - fee))
 * and, if the target is not 0, a new one is entered at the same close.
 * A NaN close is a gap: step() sees it, the host books nothing on that bar
 * and keeps the position, whatever the target.
 *
 * This header is all a plug-in needs: it includes only <stddef.h> and
 * <stdint.h>, and a plug-in exports one symbol, tw_kernel_entry().
 *
 *     cc -shared -fPIC $(pkg-config --cflags tickwire) my.c -o libmy.so
 *
 * Rules that make parity and snapshots free: step() is a pure function of
 * (state, close): no clock, no I/O, no globals, no allocation, no pointers
 * inside the state, no FMA contraction unless written.  Copying the
 * state_bytes(p) bytes is a snapshot; restoring them resumes the kernel
 * exactly. */
#ifndef TICKWIRE_KERNEL_ABI_H
#define TICKWIRE_KERNEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of tw_kernel_def this header describes.  A host refuses a
 * definition whose abi field is any other value. */
#define TW_KERNEL_ABI 1

#define TW_KERNEL_MAX_PARAMS 16
#define TW_KERNEL_MAX_STATE_BYTES ((size_t)1 << 20) /* 1 MiB per instance */

/* One parameter of a kernel: a combo is n_params doubles in this order,
 * each in [lo, hi], an integral value when integer is non-zero; dflt is
 * the value a user gets when naming none. */
typedef struct tw_kparam {
    const char *name; /* "window": [A-Za-z_][A-Za-z0-9_]*, unique */
    double lo, hi;    /* inclusive bounds, lo <= hi, finite */
    int integer;      /* non-zero: the value must be integral */
    double dflt;      /* default, within [lo, hi] */
} tw_kparam;

typedef struct tw_kernel_def {
    uint32_t abi;           /* TW_KERNEL_ABI */
    const char *name;       /* "hma_sar": [A-Za-z_][A-Za-z0-9_]*, <= 63 bytes */
    const char *doc;        /* one line */
    uint32_t n_params;      /* 1..TW_KERNEL_MAX_PARAMS */
    const tw_kparam *params; /* n_params of them */
    /* The bytes of one instance's state for combo p: 1..1 MiB. */
    size_t (*state_bytes)(const double *p);
    /* Resets state (state_bytes(p) bytes, 16-byte aligned, contents
     * undefined on entry) for combo p: 0, or -EINVAL for a combo the
     * kernel refuses beyond its params' bounds. */
    int (*init)(void *state, const double *p);
    /* One bar: the target position, -1, 0 or +1.  Any other value stops
     * that instance (counted; nothing is booked from it). */
    int (*step)(void *state, double close);
    /* Optional, may be NULL: a whole sweep at once.  Writes, for combo c
     * and bar i, the target position positions[c * n + i] (the host then
     * books them with its one rule), or, when positions is NULL, checks
     * only that it could (returns 0).  scratch is unused by plug-ins
     * (NULL).  0, or a negative errno-style code. */
    int (*sweep)(const double *close, size_t n, const double *p, size_t n_combos,
                 int8_t *positions_or_null, void *scratch);
    /* Optional, may be NULL: the kernel's default grid, n_combos combos of
     * n_params doubles, owned by the kernel and never freed. */
    const double *(*default_grid)(size_t *n_combos);
} tw_kernel_def;

/* The one symbol a plug-in shared object exports: its definition, which
 * must stay valid while the object is loaded. */
const tw_kernel_def *tw_kernel_entry(void);
typedef const tw_kernel_def *(*tw_kernel_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif
