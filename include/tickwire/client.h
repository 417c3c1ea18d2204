/* C client of the engine (wire.md), over a Unix socket, TCP, shared memory
 * or a spawned `tickwire serve --stdio`.
 *
 * A tw_client is one connection, used by one thread at a time; calls are
 * synchronous (one request, one reply).  Every call returns 0 or a negative
 * code: a negative errno for transport failures, or -(TW_EWIRE + code) for
 * an error frame from the server (TW_EWIRE_CODE(rc) gives the TW_WERR_*
 * code), with err->msg holding the server's message.  After BAD_FRAME or a
 * transport error the connection is closed and further calls return -EPIPE.
 * Arrays are copied straight between the caller's memory and the socket or
 * ring (gathered writes, scattered reads): no per-element work. */
#ifndef TICKWIRE_CLIENT_H
#define TICKWIRE_CLIENT_H

#include "tickwire/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tw_client tw_client;

/* Connects by address:
 *   "unix:/path/to.sock"      Unix socket
 *   "tcp:127.0.0.1:7070"      TCP (TCP_NODELAY)
 *   "shm:/path/to.sock"       shared-memory rings set up over that Unix socket
 *   "spawn:/path/to/tickwire" posix_spawn `tickwire serve --stdio`; the child
 *                             lives until tw_client_close()
 * On success *out is the new client (caller closes it). */
int tw_client_connect(tw_client **out, const char *address, tw_error *err);

int tw_client_connect_unix(tw_client **out, const char *path, tw_error *err);
int tw_client_connect_tcp(tw_client **out, const char *host, int port, tw_error *err);
/* ring_bytes: capacity wanted for each ring (0: 4 MiB); a frame larger than
 * half a ring returns -E2BIG (ship big datasets with LOAD_FD). */
int tw_client_connect_shm(tw_client **out, const char *path, uint32_t ring_bytes, tw_error *err);
/* exe: the tickwire program; extra_args (NULL-terminated, may be NULL) are
 * appended to `serve --stdio`. */
int tw_client_spawn(tw_client **out, const char *exe, const char *const *extra_args,
                    tw_error *err);

/* Closes the connection (and waits for a spawned child).  NULL is a no-op. */
void tw_client_close(tw_client *c);

/* "unix", "tcp", "shm" or "spawn". */
const char *tw_client_transport(const tw_client *c);

/* ECHO: sends n closes, receives them back into out[n] (out may equal in). */
int tw_client_echo(tw_client *c, const double *in, size_t n, double *out, tw_error *err);

/* SWEEP: every combo (n_combos x 6 windows) over close; writes pnl[n_combos]
 * and trades[n_combos]. */
int tw_client_sweep(tw_client *c, const double *close, size_t n_bars, const int64_t *combos,
                    size_t n_combos, double *pnl, int64_t *trades, tw_error *err);

/* LOAD: ships close once; *dataset receives the id for sweep_loaded. */
int tw_client_load(tw_client *c, const double *close, size_t n_bars, uint64_t *dataset,
                   tw_error *err);

/* LOAD_FD: ships a dataset by descriptor (unix and shm transports only).
 * fd holds n_bars x f64 at offset 0.  A memfd sealed against shrinking and
 * writing (F_SEAL_SHRINK | F_SEAL_WRITE) is mapped by the server instead of
 * copied; any other descriptor is copied (its prices are checked once, so
 * the server must not see them change). */
int tw_client_load_fd(tw_client *c, int fd, uint64_t *dataset, tw_error *err);

/* Convenience: copies close into a new sealed memfd and calls load_fd. */
int tw_client_load_memfd(tw_client *c, const double *close, size_t n_bars, uint64_t *dataset,
                         tw_error *err);

/* SWEEP_LOADED: parameters only, against a loaded dataset. */
int tw_client_sweep_loaded(tw_client *c, uint64_t dataset, const int64_t *combos,
                           size_t n_combos, double *pnl, int64_t *trades, tw_error *err);

/* KSWEEP (docs/engine.md): any kernel the engine has, by name (a built-in or
 * one it was started with by `serve --kernel`), each combo n_params doubles
 * in the kernel's param order (params: n_combos x n_params).  Over
 * close[n_bars], or, when close is NULL, over the loaded dataset `dataset`.
 * out->pnl and out->trades take n_combos each; when out->wins is not NULL
 * the statistics are asked for too and wins, max_drawdown, exposure and
 * final_position (all four must then be set) take n_combos each.  Errors
 * as SWEEP: -(TW_EWIRE + code) with the server's message naming the
 * kernel, combo and param. */
typedef struct tw_client_kout {
    double *pnl;
    int64_t *trades;
    int64_t *wins;           /* NULL: no statistics */
    double *max_drawdown;
    double *exposure;
    int64_t *final_position; /* -1, 0, +1 */
} tw_client_kout;

int tw_client_ksweep(tw_client *c, const char *kernel, const double *close, size_t n_bars,
                     uint64_t dataset, const double *params, size_t n_params, size_t n_combos,
                     const tw_client_kout *out, tw_error *err);

/* DROP: forgets a dataset. */
int tw_client_drop(tw_client *c, uint64_t dataset, tw_error *err);

/* INFO: writes the server's JSON (NUL-terminated) into buf[cap]; returns its
 * length (>= 0) or a negative code (-ENOSPC if it does not fit). */
int tw_client_info(tw_client *c, char *buf, size_t cap, tw_error *err);

/* Sizes that ctypes callers need. */
size_t tw_client_error_size(void);

#ifdef __cplusplus
}
#endif
#endif
