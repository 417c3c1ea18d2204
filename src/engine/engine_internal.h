/* What the engine's files share (server.c, shm_server.c). */
#ifndef TW_ENGINE_INTERNAL_H
#define TW_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/uio.h>

#include "tickwire/wire_io.h"
#include "tickwire/engine.h"
#include "tickwire/util.h"

/* Counters reported by INFO.  Relaxed atomics: they are statistics, read
 * by INFO with no ordering against anything else. */
typedef struct tw__engine_stats {
    _Atomic uint64_t conns_accepted, conns_open, conns_refused, shm_conns;
    _Atomic uint64_t frames, bytes_in, bytes_out, combos;
    _Atomic uint64_t ops[TW_OP_COUNT];
    _Atomic uint64_t errors[TW_WERR_COUNT];
} tw__engine_stats;

struct tw__dataset;

/* A compute request handed to the pool.  The submitter owns it; done() is
 * called from the worker thread once pnl/trades (or rc/err) are written. */
typedef struct tw__job {
    const double *close;
    size_t n_bars;
    const int64_t *combos;
    size_t n_combos;
    struct tw__dataset *ds; /* reference released by the submitter */
    double *pnl;
    int64_t *trades; /* KSWEEP with stats: wins, max_drawdown, exposure and
                        final_position follow, n_combos each */
    /* KSWEEP: the kernel and its n_combos x n_params params (else NULL). */
    const tw_kernel_def *def;
    const double *params;
    uint8_t kflags;
    double fee;       /* KSWEEP: the engine's fee */
    unsigned threads; /* KSWEEP: threads of a generic sweep */
    int rc;
    tw_error err;
    void (*done)(struct tw__job *);
    void *owner;
    struct tw__job *next;
} tw__job;

/* The reply to one request, built without copying the arrays: a 4-byte
 * prefix, the small body part (ids, JSON, error text) and up to two array
 * views.  close_conn is set after BAD_FRAME. */
typedef struct tw__reply {
    uint32_t prefix;
    int close_conn;
    int compute;        /* a tw__job must run; fill pnl/trades, then finish */
    size_t small_len;
    struct iovec arr[2];
    int n_arr;
    uint8_t small[4096];
} tw__reply;

struct tw_engine {
    tw_engine_opts opts;
    tw_wire_limits lim;
    int epfd, unix_fd, tcp_fd, stop_fd, done_fd;
    int tcp_port;
    char unix_path[TW_UNIX_PATH_MAX];
    tw_isa kernel_isa;       /* what each worker's sweeper runs */
    unsigned kernel_threads; /* threads per sweep */
    atomic_int stopping;

    /* compute pool */
    pthread_t *workers;
    unsigned n_workers;
    pthread_mutex_t qlock;
    pthread_cond_t qcond;
    tw__job *qhead, *qtail;
    int qstop;

    /* finished jobs of socket connections, drained by the I/O thread */
    pthread_mutex_t dlock;
    tw__job *dhead;

    /* datasets */
    pthread_mutex_t dslock;
    struct tw__dataset **ds;
    uint64_t ds_next_id;
    uint64_t ds_bytes;
    uint32_t ds_count;

    /* buffers of all connections together (limits.max_buffer_bytes) */
    _Atomic uint64_t buf_bytes;
    _Atomic uint32_t n_conns;

    /* socket connections (I/O thread only) */
    struct conn *conns;

    /* shm service threads */
    pthread_mutex_t shmlock;
    struct tw__shm_conn *shm_list;

    /* kernels preloaded by opts.kernels: the definition and the string
     * it was found by */
    const tw_kernel_def *kdefs[TW_ENGINE_MAX_KERNELS];
    unsigned n_kdefs;

    tw__engine_stats st;
};

/* handle.c: resolves opts.kernels into e->kdefs; 0 or the tw_kernel_find
 * code with err naming the kernel. */
int tw__engine_kernels(tw_engine *e, tw_error *err);
/* Points rq's array views into body, an aligned copy of everything after
 * the fixed header. */
void tw__req_repoint(tw_wire_req *rq, const uint8_t *body);

/* Handles one complete parsed request (not SHM_ATTACH) and fills r.  fd is
 * a descriptor passed with it (negative: none; ownership stays with the
 * caller).
 * For SWEEP/SWEEP_LOADED it sets r->compute and fills job's inputs (and a
 * dataset reference in job->ds); the caller points job->pnl/trades at the
 * reply memory, runs it and calls tw__finish_compute().  close/combos must
 * be 8-byte aligned views. */
void tw__handle(tw_engine *e, const tw_wire_req *rq, int fd, tw__reply *r, tw__job *job);
void tw__finish_compute(tw_engine *e, tw__job *job, tw__reply *r);
/* Fills r with an error frame (code, printf message) and counts it. */
void tw__reply_error(tw_engine *e, tw__reply *r, uint16_t code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void tw__submit(tw_engine *e, tw__job *job);
/* Runs a job on a compute thread's sweeper (SWEEP_LOADED through its bound
 * dataset and window cache, SWEEP plainly); returns its rc. */
int tw__job_run(tw_sweeper *sw, tw__job *job);
void tw__dataset_put(tw_engine *e, struct tw__dataset *ds);

/* shm_server.c: takes over a Unix connection that asked for shared memory
 * (fd is owned from here on).  Replies to the attach itself. */
int tw__shm_attach(tw_engine *e, int fd, uint32_t ring_bytes);
void tw__shm_stop_all(tw_engine *e);

void *tw__aligned_alloc(size_t bytes);
/* server.c: frees connections whose job came back after the loop ended. */
void tw__free_dead_conns(tw_engine *e);

#endif
