/* Reactor: one polling loop per core (live.md, "Threads, processes and
 * rings"), shaped like DPDK's examples/l2fwd: per-core state in a
 * cache-aligned array, a bounded burst on the loop's stack, periodic work
 * triggered by TSC deltas, and a quit flag checked every turn.
 *
 * A turn of a core's loop reads the TSC once, converts it to monotonic ns
 * (a multiply and a shift: tw_tsc_to_ns), calls every poll of the core
 * with that `now`, drains its rings (up to TW_REACTOR_BURST items each),
 * and runs the timers whose period has passed.  A turn in which nothing
 * did any work is idle:
 *
 *  - BUSY mode: one `pause` and the next turn.  No system call anywhere on
 *    the loop (a test runs it under a seccomp filter that kills on any).
 *  - YIELD mode: a few idle turns with `pause`, then either a wait on the
 *    core's file descriptors (ppoll, bounded by the next timer, by what a
 *    poll asked for in now->wake_ns, and by max_wait_ns) or, with no fds,
 *    sched_yield() (under SCHED_FIFO, which sched_yield would not give up
 *    to normal tasks, a sleep of at most 50 us instead).
 *  - AUTO (the default) is BUSY when the process may use at least as many
 *    online CPUs as the reactor has loops, else YIELD: a 2-core machine is
 *    never starved by more busy loops than cores.
 *
 * Each core may be pinned to a CPU (sched_setaffinity), and the reactor
 * may ask for SCHED_FIFO and mlockall; a failure of any of these is an
 * error naming which one failed and why (no such CPU, CPU outside the
 * process's set, no capability / rlimit), and nothing runs.
 *
 * Threads: tw_reactor_start() runs each core on a thread of its own;
 * tw_reactor_run() runs one core on the calling thread; tw_reactor_turn()
 * runs one turn, for a driver that interleaves its own steps.  A core's
 * callbacks run on its thread only.  The tw_reactor is the caller's
 * memory (embed it); nothing is allocated after tw_reactor_init. */
#ifndef TICKWIRE_REACTOR_H
#define TICKWIRE_REACTOR_H

#include <pthread.h>
#include <stdint.h>

#include "tickwire/clock.h"
#include "tickwire/common.h"
#include "tickwire/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TW_REACTOR_MAX_CORES 16
#define TW_REACTOR_MAX_POLLS 8  /* polls and rings together, per core */
#define TW_REACTOR_MAX_TIMERS 8 /* per core */
#define TW_REACTOR_MAX_FDS 4    /* per core */
#define TW_REACTOR_BURST 32     /* items taken from a ring per turn */
#define TW_REACTOR_BURST_BYTES 4096 /* the loop's stack burst for copied ring items */
#define TW_REACTOR_IDLE_SPINS 64    /* YIELD: idle turns with pause before a wait */

typedef enum tw_reactor_mode {
    TW_REACTOR_AUTO = 0,
    TW_REACTOR_BUSY = 1,
    TW_REACTOR_YIELD = 2,
} tw_reactor_mode;

/* The time of a turn, handed to every callback. */
typedef struct tw_reactor_now {
    uint64_t tsc;    /* tw_tsc_read() at the start of the turn */
    int64_t ns;      /* the same moment in monotonic ns (the reactor's clock) */
    int64_t wake_ns; /* YIELD: an idle wait ends by this monotonic time.  It
                        starts at ns + max_wait_ns; a poll with a deadline of
                        its own (a TCP timer) lowers it.  On a turn that
                        cannot end in a wait (BUSY, or YIELD before its
                        TW_REACTOR_IDLE_SPINS-th idle turn in a row) it
                        starts at ns: a poll may skip its deadline then. */
} tw_reactor_now;

/* A poll: does whatever work is ready and returns how much (packets,
 * items; 0 = nothing was ready, which is what makes a turn idle). */
typedef unsigned (*tw_reactor_poll_fn)(void *arg, tw_reactor_now *now);
/* Periodic work (tw_reactor_add_timer). */
typedef void (*tw_reactor_timer_fn)(void *arg, tw_reactor_now *now);
/* Items from a ring: n >= 1 slots of the ring's slot size at items (a
 * view into the ring, or with TW_REACTOR_RING_COPY a copy in the loop's
 * stack burst).  Returns how many it took: a view's first k are released,
 * the rest stay in the ring for the next turn (back-pressure); a copy
 * must be taken whole (return n).  items is valid for the call only. */
typedef uint32_t (*tw_reactor_ring_fn)(void *arg, const void *items, uint32_t n,
                                       tw_reactor_now *now);

/* Flags of tw_reactor_add_ring. */
#define TW_REACTOR_RING_COPY 1u /* dequeue into the loop's stack burst first (the
                                   ring space is free before fn runs; fn may
                                   modify the items; fn must take them all)
                                   instead of handing out views into the ring */

typedef struct tw_reactor_opts {
    tw_reactor_mode mode;       /* AUTO by default */
    int sched_fifo_prio;        /* 1..99: every core's thread SCHED_FIFO; 0: not */
    int lock_memory;            /* 1: mlockall(MCL_CURRENT | MCL_FUTURE) at start */
    int64_t max_wait_ns;        /* YIELD: longest idle wait (0: 1 ms) */
    const tw_tsc_clock *clock;  /* NULL: tw_tsc_default() */
} tw_reactor_opts;

/* Counters of one core, written by its thread only (read them after
 * join, or accept a racy snapshot). */
typedef struct tw_reactor_stats {
    uint64_t turns;      /* loop iterations */
    uint64_t busy_turns; /* turns in which some poll or ring did work */
    uint64_t work;       /* sum of the polls' returns and ring items taken */
    uint64_t timer_runs;
    uint64_t yields;     /* sched_yield() (or FIFO naps) on idle */
    uint64_t waits;      /* ppoll() waits on the core's fds on idle */
} tw_reactor_stats;

struct tw_reactor;

/* Per-core state: one cache-aligned element per loop.  The first line
 * holds what the loop writes every turn. */
typedef struct tw_reactor_core {
    tw_reactor_stats stats;
    uint64_t next_timer_tsc; /* earliest timer deadline (UINT64_MAX: none) */
    uint32_t idle_spins;
    int cpu;                 /* pinned CPU, or -1 */
    tw_reactor_mode mode;    /* BUSY or YIELD once started (AUTO until then,
                                unless tw_reactor_set_mode chose) */
    int npoll, ntimer, nfd;
    int fifo;                /* this thread runs SCHED_FIFO */
    int begun;               /* timers armed (first turn) */
    struct tw_reactor_poll {
        tw_reactor_poll_fn poll;
        tw_reactor_ring_fn ring_fn;
        tw_ring *ring;
        void *arg;
        uint32_t flags;
        uint32_t burst; /* items per turn */
    } poll[TW_REACTOR_MAX_POLLS];
    struct tw_reactor_timer {
        tw_reactor_timer_fn fn;
        void *arg;
        uint64_t period_tsc;
        uint64_t next_tsc;
        int64_t period_ns;
    } timer[TW_REACTOR_MAX_TIMERS];
    int fd[TW_REACTOR_MAX_FDS];
    /* Thread bookkeeping (tw_reactor_start / join). */
    struct tw_reactor *owner;
    pthread_t thread;
    int started;
    int rc;
    tw_error err;
} TW_CACHE_ALIGNED tw_reactor_core;

typedef struct tw_reactor {
    /* Set by tw_reactor_stop, read by every loop every turn: a line of its
     * own, written once. */
    uint32_t quit TW_CACHE_ALIGNED;
    int ncores;
    tw_reactor_opts opts;
    const tw_tsc_clock *clock;
    int64_t max_wait_ns;
    /* Start-up handshake: each thread reports once it is configured. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int nready;
    int go;      /* 1: every thread set up, run the loops */
    tw_reactor_core core[TW_REACTOR_MAX_CORES];
} tw_reactor;

/* Initialises r (caller memory) with opts (NULL: defaults).  Calibrates
 * the default TSC clock now if nobody has (so that no loop does). */
void tw_reactor_init(tw_reactor *r, const tw_reactor_opts *opts);

/* Adds a loop, to be pinned to cpu (-1: not pinned).  Returns its index
 * (>= 0) or -ENOSPC (TW_REACTOR_MAX_CORES), -EINVAL (cpu < -1). */
int tw_reactor_add_core(tw_reactor *r, int cpu);

/* Adds a poll to core (called every turn, in the order added).  Returns
 * 0, -ENOSPC, or -EINVAL (no such core, fn NULL). */
int tw_reactor_add_poll(tw_reactor *r, int core, tw_reactor_poll_fn fn, void *arg);

/* Adds a ring this core consumes: each turn takes up to TW_REACTOR_BURST
 * items (in one contiguous run; with TW_REACTOR_RING_COPY also at most
 * TW_REACTOR_BURST_BYTES of them) and hands them to fn.  The core becomes
 * the ring's single consumer.  Returns 0, -ENOSPC, or -EINVAL (copy mode
 * with a slot larger than the burst). */
int tw_reactor_add_ring(tw_reactor *r, int core, tw_ring *ring, tw_reactor_ring_fn fn,
                        void *arg, uint32_t flags);

/* Adds periodic work to core, every period_ns (>= 1 us) measured on the
 * TSC: deadlines one period apart from the core's first turn, each run at
 * the first turn after its deadline, so it never runs more often than the
 * deadlines passed.  A timer more than a period late runs once and its
 * next deadline is a period from then (no catch-up burst).  Returns 0,
 * -ENOSPC, or -EINVAL. */
int tw_reactor_add_timer(tw_reactor *r, int core, int64_t period_ns, tw_reactor_timer_fn fn,
                         void *arg);

/* Adds an fd (a port's rx_fd, an eventfd, a socket) that a YIELD core
 * waits on for POLLIN when idle.  Ignored in BUSY mode.  Returns 0,
 * -ENOSPC, or -EINVAL. */
int tw_reactor_add_fd(tw_reactor *r, int core, int fd);

/* Sets one core's mode (BUSY or YIELD; AUTO: what the reactor's options
 * pick), overriding the options for that core.  From the core's own thread
 * (between turns) or before it starts.  Returns 0 or -EINVAL. */
int tw_reactor_set_mode(tw_reactor *r, int core, tw_reactor_mode mode);

/* The mode AUTO picks for `loops` busy loops on this process: BUSY when
 * tw_cpus_usable() >= loops, else YIELD. */
tw_reactor_mode tw_reactor_auto_mode(int loops);

/* Locks memory (if asked), then starts one thread per core; each pins
 * itself, sets SCHED_FIFO if asked, and reports.  Returns 0 once every
 * loop runs, or the first failure (every thread already stopped and
 * joined, no loop ran a turn) with err naming the core, what failed and
 * why.  A reactor runs once: after a failure or a stop, init it again. */
int tw_reactor_start(tw_reactor *r, tw_error *err);

/* Sets the quit flag: every loop returns at its next turn.  Async-signal-
 * safe (one atomic store): a SIGTERM handler may call it. */
void tw_reactor_stop(tw_reactor *r);

/* 1 once tw_reactor_stop was called. */
static inline int tw_reactor_stopping(const tw_reactor *r)
{
    /* Relaxed: the flag orders nothing; the loop only needs to see it
     * eventually (join orders the rest). */
    return __atomic_load_n(&r->quit, __ATOMIC_RELAXED) != 0;
}

/* Waits for the threads of tw_reactor_start to return.  Returns 0. */
int tw_reactor_join(tw_reactor *r);

/* Runs core on the calling thread until tw_reactor_stop: pins it, sets
 * SCHED_FIFO and locks memory as configured, then loops.  Returns 0 after
 * stop, or the set-up failure with err. */
int tw_reactor_run(tw_reactor *r, int core, tw_error *err);

/* One turn of core on the calling thread (no pinning), including the idle
 * back-off of its mode.  Returns the work done. */
unsigned tw_reactor_turn(tw_reactor *r, int core);

/* Building blocks, for callers with threads of their own.  Each returns
 * 0 or a negative errno with err saying what failed and why. */
int tw_reactor_pin_self(int cpu, tw_error *err);
int tw_reactor_fifo_self(int prio, tw_error *err);
int tw_reactor_lock_memory(tw_error *err);
/* Online CPUs this thread may run on (its affinity mask), >= 1. */
int tw_cpus_usable(void);

/* A set of CPU numbers below TW_CPUSET_MAX, and the kernel's list form of
 * one ("0-3,8,10-11", "" for none: sysfs cpu/online, isolated,
 * nohz_full, /proc/irq/N/smp_affinity_list, isolcpus=). */
#define TW_CPUSET_MAX 1024
typedef struct tw_cpuset {
    uint64_t bits[TW_CPUSET_MAX / 64];
} tw_cpuset;
static inline int tw_cpuset_has(const tw_cpuset *s, int cpu)
{
    return cpu >= 0 && cpu < TW_CPUSET_MAX && ((s->bits[cpu / 64] >> (cpu % 64)) & 1);
}
static inline void tw_cpuset_add(tw_cpuset *s, int cpu)
{
    if (cpu >= 0 && cpu < TW_CPUSET_MAX)
        s->bits[cpu / 64] |= 1ull << (cpu % 64);
}
int tw_cpuset_count(const tw_cpuset *s);
/* Parses a list (surrounding blanks and a newline allowed; "" is the empty
 * set).  Returns 0, or -EINVAL for anything else (out holds what parsed). */
int tw_cpuset_parse(const char *list, tw_cpuset *out);
/* Writes the list form of s into buf (cap bytes, NUL-terminated, cut short
 * with "..." if it does not fit).  Returns buf. */
char *tw_cpuset_format(const tw_cpuset *s, char *buf, size_t cap);
/* The online CPUs (sysfs cpu/online; every CPU below
 * sysconf(_SC_NPROCESSORS_ONLN) if that cannot be read). */
void tw_cpuset_online(tw_cpuset *out);

#ifdef __cplusplus
}
#endif
#endif
