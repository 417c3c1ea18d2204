/* The engine server: the sweep kernel behind wire.md, over a Unix socket,
 * TCP, stdin/stdout and shared memory.
 *
 * One epoll I/O thread accepts connections, reads and validates frames and
 * answers ECHO, INFO, LOAD, DROP and LOAD_FD itself; SWEEP and SWEEP_LOADED
 * go to a pool of compute threads (each with its own tw_sweeper), so a long
 * sweep never holds up another connection.  A shared-memory client gets its
 * own service thread that waits on the request ring.  Every buffer is sized
 * from a length that has been checked against the limits, and kept for the
 * connection's next request. */
#ifndef TICKWIRE_ENGINE_H
#define TICKWIRE_ENGINE_H

#include "tickwire/kernel.h"
#include "tickwire/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TW_ENGINE_MAX_KERNELS 32
/* Each worker's cache of a bound dataset's WMA passes (serve --cache-mb). */
#define TW_ENGINE_CACHE_BYTES_DEFAULT ((size_t)256 << 20)

typedef struct tw_engine_opts {
    const char *unix_path; /* Unix socket to bind, or NULL */
    unsigned unix_mode;    /* permission bits of the socket file; default 0600 */
    const char *tcp_host;  /* address to bind; default "127.0.0.1" */
    int tcp_port;          /* -1: no TCP (default); 0: any free port */
    unsigned workers;      /* compute threads; default 2 */
    tw_sweep_opts sweep;   /* kernel options for every worker's sweeper; cache_bytes
                              defaults to TW_ENGINE_CACHE_BYTES_DEFAULT here */
    uint32_t sweeper_bars; /* bars each sweeper is sized for at start (grows on demand
                              up to limits.max_bars); default 262144 */
    uint32_t shm_ring_max; /* largest ring a shm client may ask for; default 64 MiB */
    uint64_t spin_ns;      /* shm: spin this long before futex-sleeping; default 50 us */
    int verbose;           /* log connections and errors through log (below) */
    tw_wire_limits limits;
    /* Kernels KSWEEP may name besides the built-ins: names or plug-in paths,
     * resolved (tw_kernel_find) by tw_engine_create / tw_engine_serve_fds,
     * which fail naming the first one that cannot be had.  A KSWEEP names
     * a built-in, or one of these by its path as given here or by its
     * definition's name; never a path the engine was not started with. */
    const char *kernels[TW_ENGINE_MAX_KERNELS];
    unsigned n_kernels;
    /* Where verbose's lines go, one call per line (no newline); NULL:
     * nowhere (the library prints nothing itself).  Called from the
     * engine's threads. */
    void (*log)(void *ctx, const char *line);
    void *log_ctx;
} tw_engine_opts;

/* Fills o with the defaults above (no listener: set unix_path/tcp_port). */
void tw_engine_opts_init(tw_engine_opts *o);

typedef struct tw_engine tw_engine;

/* Binds the listeners and starts the compute pool.  Returns 0 or a negative
 * errno with err naming the address or resource at fault.  A stale socket
 * file at unix_path is replaced only if nothing answers on it. */
int tw_engine_create(tw_engine **out, const tw_engine_opts *opts, tw_error *err);

/* Runs the I/O loop in the calling thread until tw_engine_stop(); then
 * stops accepting, lets in-flight requests finish and their replies go out
 * (bounded by a few seconds), closes every connection and removes the
 * socket file.  Cannot fail: a connection's errors end that connection,
 * never the loop. */
void tw_engine_run(tw_engine *e);

/* Asks a running engine to stop.  Async-signal-safe (one write to an
 * eventfd), so a SIGTERM handler may call it. */
void tw_engine_stop(tw_engine *e);

/* The TCP port actually bound (useful with tcp_port = 0), or -1. */
int tw_engine_tcp_port(const tw_engine *e);

/* Writes the INFO JSON into buf (NUL-terminated); returns its length,
 * -ENOSPC when it does not fit in cap, or -EINVAL if formatting fails. */
int tw_engine_info_json(tw_engine *e, char *buf, size_t cap);

/* Frees everything.  Call after tw_engine_run() returned, or instead of it. */
void tw_engine_destroy(tw_engine *e);

/* Serves one peer on a pair of file descriptors (stdin/stdout of a spawned
 * engine) until end of input, answering each frame in turn.  Returns 0 at
 * a clean end of input, a negative errno on an I/O error or after a
 * BAD_FRAME. */
int tw_engine_serve_fds(const tw_engine_opts *opts, int in_fd, int out_fd, tw_error *err);

#ifdef __cplusplus
}
#endif
#endif
