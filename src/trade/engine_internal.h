/* What the files of the live engine share (trade_engine.h).  Nobody else
 * includes it.  Calls among the files run one way, from the top
 * (docs/layout.md, "Inside a part"):
 *
 *   engine.c         set-up and results: create, start, the control step,
 *                    the report, destroy
 *   supervisor.c     processes mode: the attach segment, the strategy
 *                    process (spawned, watched, restarted)
 *   strategy_proc.c  the strategy process itself (tw_trade_strategy_attach)
 *   recover.c        recovery: replays the event log into the strategy host
 *                    and the net cores
 *   host.c           the strategy host: the one place a strategy is built
 *                    from the configuration; the threads-mode strategy core
 *   intents.c        the intents already sent (intents.h), for both
 *                    recoveries
 *   gw*.c            a session's net core (gw_internal.h)
 *   evlog.c          the event log: the one place that appends
 *   xport*.c         the transports
 *   bell.c           the doorbell
 *   config.c, report.c  the configuration file and the report (trade.h) */
#ifndef TW_TRADE_ENGINE_INTERNAL_H
#define TW_TRADE_ENGINE_INTERNAL_H

#include <stdio.h>
#include <string.h>

#include "tickwire/clock.h"
#include <pthread.h>

#include "tickwire/fix_session.h"
#include "tickwire/journal.h"
#include "tickwire/journal_seg.h"
#include "tickwire/net.h"
#include "tickwire/reactor.h"
#include "tickwire/ring.h"
#include "tickwire/shm_attach.h"
#include "tickwire/snapshot.h"
#include "tickwire/strategy.h"
#include "tickwire/trade_engine.h"
#include "tickwire/util.h"

typedef struct tw__gwfold tw__gwfold; /* gwfold.h */

/* ---- doorbell (bell.c) ------------------------------------------------------
 *
 * A yielding core that found its rings empty waits in ppoll() on its fds;
 * a producer that fills one of them while it waits must wake it.  The
 * consumer says it may sleep (sleeping = 1, then a full fence, then it
 * looks at its rings once more); the producer, after its enqueue, fences
 * and looks at sleeping: of the two fences one comes first, so either the
 * consumer sees the item or the producer sees sleeping and writes the
 * eventfd (once per sleep: rung).  Busy cores never set sleeping, so their
 * producers pay a fence and a load, no system call. */
typedef struct tw__bell {
    int fd;            /* eventfd (non-blocking), -1 when disabled */
    uint32_t sleeping; /* atomic: the consumer may be in ppoll */
    uint32_t rung;     /* atomic: a producer wrote fd since sleeping was set */
} tw__bell;

int tw__bell_init(tw__bell *b, int enabled);
void tw__bell_close(tw__bell *b);
/* Producer: after an enqueue. */
void tw__bell_ring(tw__bell *b);
/* Consumer: about to go idle.  Returns with sleeping set; the caller looks
 * at its rings again (work found: tw__bell_wake). */
void tw__bell_sleep(tw__bell *b);
/* Consumer: found work (clears sleeping). */
void tw__bell_wake(tw__bell *b);

/* Processes mode, between the gateway's net core and the strategy process:
 * the attach segment's futex doorbells (shm_attach.h, tw_attach_bell).
 * A yielding net core's idle turn, once the reactor's spins are over:
 * while the strategy has records in flight it sleeps on the core's bell
 * until an intent or the end of them (at most TW__BELL_ATT_WAIT_NS; then
 * the reactor's ppoll on the socket for as long), and with nothing in
 * flight it leaves the wait to the reactor's ppoll, bounded by
 * TW__BELL_ATT_IDLE_NS (an intent no record of this core caused, such as
 * the kill switch's, arrives within it).  Returns 1 when intents may be
 * in the ring (turn again), else 0 with now->wake_ns lowered. */
#define TW__BELL_ATT_WAIT_NS 50000ll
#define TW__BELL_ATT_IDLE_NS 1000000ll
unsigned tw__bell_attach_idle(tw_attach_gw *att, uint32_t core, tw_reactor_now *now);

/* ---- transports (xport.c, xport_tcp.c, xport_stack.c) ---------------------------
 *
 * A session's byte stream: kernel TCP (xport_tcp.c) or the userspace
 * stack on a port (xport_stack.c).  Received bytes gather in rx (the FIX
 * session is fed from there); what the session writes gathers in out and
 * leaves with one flush per turn (one send() per turn on kernel sockets,
 * one tw_tcp_send on the stack). */
typedef enum tw__xp_state {
    TW__XP_IDLE = 0,       /* no connection */
    TW__XP_CONNECTING = 1, /* connect() issued, not yet established */
    TW__XP_UP = 2,         /* established */
} tw__xp_state;

/* What io() saw happen. */
#define TW__XP_EV_UP 1u   /* the connection was established */
#define TW__XP_EV_DOWN 2u /* it failed or closed (state is IDLE again) */
#define TW__XP_EV_DATA 4u /* new bytes in rx */

typedef struct tw__xport tw__xport;

typedef struct tw__xport_ops {
    const char *name;
    /* Starts connecting.  0 (state CONNECTING) or a negative errno. */
    int (*connect)(tw__xport *t, int64_t now_ns);
    /* Moves bytes in (into rx) and drives the connection; stamps tsc_rx /
     * tsc_tcp when bytes came; may lower *wake_ns (a stack timer).
     * Returns TW__XP_EV_*. */
    unsigned (*io)(tw__xport *t, int64_t now_ns, int64_t *wake_ns);
    /* Hands out[out_off, out_len) to the transport (what it does not take
     * stays).  0, or a negative errno when the connection is dead. */
    int (*flush)(tw__xport *t, int64_t now_ns);
    /* Closes the connection (state IDLE; no DOWN event). */
    void (*close)(tw__xport *t, int64_t now_ns);
    void (*destroy)(tw__xport *t);
} tw__xport_ops;

struct tw__xport {
    const tw__xport_ops *ops;
    tw__xp_state state;
    int fd;              /* what a yielding core waits on for rx (-1: none) */
    int rx_syscall;      /* receiving costs a system call (kernel sockets) */
    int rx_drained;      /* rx_syscall: the last receive found the socket empty
                            (a short read or EAGAIN): no recv right after work */
    char *rx;
    size_t rx_len, rx_cap;
    char *out;
    size_t out_off, out_len, out_cap;
    uint64_t tsc_rx, tsc_tcp; /* stamps of the last bytes received */
    uint64_t bytes_in, bytes_out;
    int64_t connect_deadline_ns;
    int64_t connect_timeout_ns;
    char why[128];       /* the last connect failure or close, for the log */
};

/* Appends len bytes to t->out (the session's stream write).  0, or -ENOBUFS
 * when out is full (the session then closes the connection). */
int tw__xport_write(tw__xport *t, const char *buf, size_t len);

/* Kernel TCP to host:port (host an IPv4 address or a name resolved once,
 * here).  rx_cap / out_cap bytes of buffers. */
int tw__xport_tcp_open(tw__xport **out, const char *host, uint16_t port, size_t rx_cap,
                       size_t out_cap, int64_t connect_timeout_ns, tw_error *err);
/* The userspace stack on port (owned by the caller; the stack is ours):
 * our address ip/prefix, next hop gateway (0: none), the venue at
 * dst_ip:dst_port. */
int tw__xport_stack_open(tw__xport **out, tw_port *port, uint32_t ip, uint32_t prefix,
                         uint32_t gateway, uint32_t dst_ip, uint16_t dst_port, size_t rx_cap,
                         size_t out_cap, int64_t connect_timeout_ns, tw_error *err);

/* ---- the event log (evlog.c) -----------------------------------------------
 *
 * Every event for the strategy gets an event number (evseq: 0, 1, 2, ...
 * over the run, across restarts) and is journaled, in evseq order, before
 * it goes into its ring: the number and the append are one step under
 * jmu, so the journal's order is the evseq order.  The strategy core takes
 * events in evseq order whatever ring they are in (it waits for the next
 * number), so a replay of the journal sees exactly what the live run saw.
 * An inbound ring slot is one tw__inrec. */
typedef struct tw__inrec {
    uint64_t evseq; /* the event's number */
    uint64_t jseq;  /* its journal record's seq (0: not journaled) */
    tw_ev ev;
} tw__inrec;
_Static_assert(sizeof(tw__inrec) == 80, "an inbound ring slot: evseq, jseq, one tw_ev");

/* Application kinds of the engine's journal records. */
enum {
    TW__JR_META = TW_JOURNAL_KIND_APP, /* first record: run id, configuration digest */
    TW__JR_END = TW_JOURNAL_KIND_APP + 1, /* the run ended cleanly (the journal is done) */
    TW__JR_STOP = TW_JOURNAL_KIND_APP + 2, /* processes mode: TERM; the strategy takes no
                                              more bars or barriers after it */
};

/* Processes mode: intents of the strategy process for the gateway itself
 * (never sent, never journaled), beside strategy.h's tw_out types. */
enum {
    TW__OUT_STOPPED = 200, /* after the STOP record, on every session's ring: every
                              intent decided before it is ahead of it; order_id: the
                              strategy's digest there */
    TW__OUT_RESUMED = 201, /* on session 0's ring, after the first new bar a (re)started
                              strategy processed: its figures (tw__resumed_msg) */
};

/* The figures of one (re)start of the strategy process (monotonic ns). */
typedef struct tw__resumed {
    int64_t detect_ns;      /* gateway: the previous strategy seen gone (0: first start) */
    int64_t spawn_ns;       /* gateway: the new one spawned (0: attached by hand) */
    int64_t start_ns;       /* strategy: its main started (config loaded) */
    int64_t attach_ns;      /* strategy: attached (READY sent) */
    int64_t replay_end_ns;  /* strategy: the journal below resume_end replayed */
    int64_t first_bar_ns;   /* strategy: its first new bar processed */
    uint64_t events, bars;  /* replayed through the kernel */
} tw__resumed;

/* The RESUMED marker as it travels in an outbound ring slot: the slot's
 * type and session where tw_out has them, then the figures
 * (tw__resumed_pack, tw__resumed_unpack). */
typedef struct tw__resumed_msg {
    uint8_t type;      /* TW__OUT_RESUMED */
    uint8_t pad0;
    uint16_t session;  /* 0 */
    uint32_t pad1;
    int64_t start_ns, attach_ns, replay_end_ns, first_bar_ns;
    uint64_t events, bars;
    uint8_t pad2[8];
} tw__resumed_msg;
_Static_assert(sizeof(tw__resumed_msg) == sizeof(tw_out), "RESUMED is one outbound ring slot");
static inline void tw__resumed_pack(const tw__resumed *r, tw_out *slot)
{
    tw__resumed_msg m = {.type = TW__OUT_RESUMED, .start_ns = r->start_ns,
                         .attach_ns = r->attach_ns, .replay_end_ns = r->replay_end_ns,
                         .first_bar_ns = r->first_bar_ns, .events = r->events, .bars = r->bars};
    memcpy(slot, &m, sizeof(m));
}

/* The strategy process's figures of a slot (detect_ns, spawn_ns: 0). */
static inline void tw__resumed_unpack(const tw_out *slot, tw__resumed *r)
{
    tw__resumed_msg m;
    memcpy(&m, slot, sizeof(m));
    *r = (tw__resumed){.start_ns = m.start_ns, .attach_ns = m.attach_ns,
                       .replay_end_ns = m.replay_end_ns, .first_bar_ns = m.first_bar_ns,
                       .events = m.events, .bars = m.bars};
}

/* Restarts of the strategy process whose figures are kept (the summary's). */
#define TW__FIGS_MAX 64
/* Nanoseconds in a millisecond (the configuration's times are in ms). */
#define TW__NS_PER_MS 1000000ll
/* Crashes of the strategy process at one journal record that stop the run. */
#define TW__CRASH_LOOP 3u
/* The environment variable that makes a spawned strategy process a
 * standby: it waits for a byte on the fd it names before it attaches. */
#define TW__STANDBY_ENV "TW_STRATEGY_STANDBY_FD"
/* Set by the gateway in every strategy process it spawns: its pid.  Such a
 * strategy dies with the gateway (PR_SET_PDEATHSIG): one that is still
 * starting, or retrying a refused connect, when its gateway is killed -9
 * would otherwise outlive it and attach to the next gateway. */
#define TW__GATEWAY_PID_ENV "TW_STRATEGY_GATEWAY_PID"

/* What decides the strategy's intents and their ClOrdIDs: sessions,
 * instruments, instances (name, instrument, combo, kernel), fee, risk. */
uint64_t tw__cfg_digest(const tw_trade_config *c);

/* The META record's payload. */
typedef struct tw__jr_meta {
    char magic[8];       /* "TWTRADE1" */
    uint64_t run_id;
    uint64_t cfg_digest; /* instances, combos, instruments, sessions (tw__cfg_digest) */
    uint32_t n_sessions;
    uint32_t n_instances;
    uint8_t pad[32];
} tw__jr_meta;
_Static_assert(sizeof(tw__jr_meta) == TW_JOURNAL_PAYLOAD, "META is one journal payload");

/* Opens the event log ([engine] journal, or the first session's store +
 * ".journal"; --reset-seqs starts it afresh): 0 when it was empty (META
 * appended), 1 when it holds records (recovery reads them), or a negative
 * errno with err. */
int tw__evlog_open(tw_trade_engine *e, tw_error *err);
/* The last run ended (or never got past its start): the log moves to
 * <path>.done and a new one starts (META).  0 or a negative errno. */
int tw__evlog_rotate(tw_trade_engine *e, tw_error *err);
/* rec is the engine's META (-TW_EFORMAT if not), copied into m; with cfg,
 * also of cfg (-ESTALE if not). */
int tw__evlog_meta_check(const tw_journal_rec *rec, const tw_trade_config *cfg, tw__jr_meta *m);
/* Event number, journal append (EV) and the record for the ring, under
 * jmu.  Any thread (net cores, control).  A failed append is counted and
 * logged once (the event still goes on). */
void tw__evlog_ev(tw_trade_engine *e, const tw_ev *ev, tw__inrec *out);
/* An intent a net core has handled (after the FIX store has it). */
void tw__evlog_out(tw_trade_engine *e, const tw_out *o);
/* Recovery: what it settled without an OUT record, journaled as handled.
 * 0 or a negative errno with err. */
int tw__evlog_note(tw_trade_engine *e, const tw_out *o, tw_error *err);
/* Processes mode: a record through net core `core`'s side of the attach
 * segment (before the segment exists, at set-up: straight to the
 * journal).  0 or a negative errno. */
int tw__evlog_put(tw_trade_engine *e, uint32_t core, uint32_t kind, const void *payload);
/* Processes mode: a record of the control thread (KILL, STOP). */
int tw__evlog_append(tw_trade_engine *e, uint32_t kind, const void *payload);
/* For a core's idle turn: a piece of the journal's growth ahead of its
 * appends (tw_jseg_grow_ahead), unless jmu is held.  1 when it did some. */
int tw__evlog_grow_ahead(tw_trade_engine *e);
/* END (clean) and close. */
void tw__evlog_end(tw_trade_engine *e, int clean);
/* The journal's path into buf. */
void tw__evlog_path(const tw_trade_config *cfg, char *buf, size_t n);

/* ---- the trades CSV (report.c) ---- */
/* keep < 0: emptied, its header written; else cut to keep bytes (what a
 * snapshot's rows took) and positioned there.  0, -EIO, or -ENODATA (the
 * file is shorter than keep). */
int tw__trades_reset(FILE *f, int64_t keep);

/* ---- the strategy host (host.c) ------------------------------------------------ */

typedef struct tw__host {
    void *mem;      /* the strategy's memory, 64-aligned; kept across rebuilds */
    size_t bytes;
    tw_strategy *s;
    tw_out *out;    /* tw_strategy_max_out() intents */
    size_t out_cap;
} tw__host;

/* Builds the strategy of cfg with hooks into h (again, in place, when h
 * holds one).  0 or a negative errno with err. */
int tw__host_build(tw__host *h, const tw_trade_config *cfg, const tw_strategy_hooks *hooks,
                   tw_error *err);
void tw__host_free(tw__host *h);
/* The engine's strategy (its log and trades hooks). */
int tw__host_engine_build(tw_trade_engine *e, tw_error *err);
/* A strategy's log hook, on f (both processes). */
void tw__strategy_log(FILE *f, const tw_trade_config *cfg, const char *who,
                      const tw_strategy_log *r);
/* The strategy core's reactor poll (arg: the engine). */
unsigned tw__strategy_poll(void *arg, tw_reactor_now *now);
/* strategy = inline: the strategy's poll, then every session's sending
 * half, on the net cores' one loop (arg: the engine). */
unsigned tw__inline_poll(void *arg, tw_reactor_now *now);

/* ---- snapshots (snap.c; both modes) ---------------------------------------------------
 *
 * The strategy's core hands a copy of its state to the snapshot writer
 * every snapshot_every events and/or snapshot_interval_ms; a recovery
 * starts from the newest one that loads.  Threads mode: the strategy
 * core's (host.c), JOURNAL.snap/snap-<J>.tws, J the journal seq of the
 * last event the state reflects, with every session's gateway fold of the
 * records <= J (gwfold.h; the writer thread reads them from the journal);
 * processes mode: the strategy process's (strategy_proc.c), named by the
 * number of events the strategy had taken, strategy state only.  The
 * strategy state holds the event count in both. */

typedef struct tw__snapfold tw__snapfold; /* snap.c: the writer thread's folds */

#define TW__SNAP_DIR_MAX (TW_TRADE_STR_MAX + 32)

typedef struct tw__snapper {
    tw_snap_writer *w;     /* NULL: no snapshots */
    uint64_t every, next;  /* the next copy at this event count (UINT64_MAX: none) */
    int64_t interval_ns, next_ns; /* and at this monotonic time (INT64_MAX: none) */
    char dir[TW__SNAP_DIR_MAX];
    uint8_t digest[TW_SNAP_DIGEST_BYTES];
    char *kernels;
    size_t klen;
    tw__snapfold *fold;    /* threads mode: the gateway's folds (NULL: none) */
    FILE *trades;          /* the trades CSV the core writes (threads mode), or NULL: each
                              snapshot flushes it and records its length */
} tw__snapper;

/* The writer started for the strategy s of run run_id that took events
 * events so far (a no-op with neither snapshot_every nor
 * snapshot_interval_ms); hook: the writer's test hook (snapshot.h,
 * tw_snap_write_cfg; NULL: none).  0 or a negative errno with err. */
int tw__snapper_open(tw__snapper *p, const tw_trade_config *cfg, const char *journal_path,
                     uint64_t run_id, const tw_strategy *s, size_t out_cap, uint64_t events,
                     int64_t now_ns, void (*hook)(int at, void *arg), void *hook_arg,
                     tw_error *err);
/* The same, with the gateway's folds (each snapshot then taken with
 * tw__snapper_take_at), which start as seed (cfg->n_sessions folds,
 * copied: the folds of the journal records <= seed_seq) or, seed NULL, as
 * the zero folds before the journal's first record. */
int tw__snapper_open_gw(tw__snapper *p, const tw_trade_config *cfg, const char *journal_path,
                        uint64_t run_id, const tw_strategy *s, size_t out_cap, uint64_t events,
                        int64_t now_ns, void (*hook)(int at, void *arg), void *hook_arg,
                        const tw__gwfold *seed, uint64_t seed_seq, FILE *trades,
                        tw_error *err);
/* The summary line of what the writer pruned (journal_keep = snapshots),
 * on log; nothing without folds or pruning.  who: the line's prefix. */
void tw__snapper_log_pruned(const tw__snapper *p, FILE *log, const char *who);
/* Stops the writer (what was committed is written). */
void tw__snapper_close(tw__snapper *p);
/* Whether the copy is due after an event (events taken, now_ns: the
 * core's time of the event, no clock read of its own). */
static inline int tw__snapper_due(const tw__snapper *p, uint64_t events, int64_t now_ns)
{
    return p->w && (events >= p->next || now_ns >= p->next_ns);
}
/* The copy of s after events events (pend[0, np): its intents still on
 * their way), handed to the writer. */
void tw__snapper_take(tw__snapper *p, const tw_strategy *s, uint64_t events, const tw_out *pend,
                      uint32_t np, int64_t now_ns);
/* With the gateway's folds (tw__snapper_open_gw): the same as of jseq,
 * the journal seq of the last event s took. */
void tw__snapper_take_at(tw__snapper *p, const tw_strategy *s, uint64_t events, uint64_t jseq,
                         const tw_out *pend, uint32_t np, int64_t now_ns);
/* The snapshots of the journal's run deleted (a new run). */
void tw__snap_clear(const char *journal_path);
/* Recovery: the newest snapshot of run run_id that checks out, loaded into
 * s (a fresh strategy of the configuration; after an error it must be
 * built again); *events: the events it reflects.  The reasons of any set
 * aside go to log.  0; -ENOENT (none); or the error (err) of one that is
 * of another configuration or does not load. */
int tw__snap_newest(FILE *log, const char *journal_path, uint64_t run_id, tw_strategy *s,
                    size_t out_cap, uint64_t *events, tw_error *err);
/* The same, of the newest snapshot that accept(arg, ...) also takes (the
 * gateway's sections: a refused one is logged and the next older one
 * tried); *jseq: its journal seq. */
int tw__snap_newest_gw(FILE *log, const char *journal_path, uint64_t run_id, tw_strategy *s,
                       size_t out_cap, int (*accept)(void *, const tw_snap *, tw_error *),
                       void *arg, uint64_t *events, uint64_t *jseq, tw_error *err);

/* The accept of tw__snap_newest_gw for every reader that starts from a
 * snapshot (the recovery, the strategy process, the report of processes
 * mode): its journal seq J must be an event of the journal at
 * journal_path below end; its trades CSV length goes to csv_len (-1:
 * none), and with need_csv (the CSV being written) it must have one no
 * longer than the file; with folds (cfg->n_sessions of them), the
 * gateway's sections are loaded into them. */
typedef struct tw__snap_gw {
    const tw_trade_config *cfg;
    const char *journal_path;
    uint64_t end;            /* the journal's next seq */
    tw__gwfold **folds;      /* NULL: not loaded */
    FILE *need_csv;          /* the trades CSV a snapshot must place, or NULL */
    int64_t csv_len;         /* out */
    uint64_t beyond;         /* out: the newest of a seq at or past end (0: none) */
} tw__snap_gw;
int tw__snap_accept_gw(void *arg, const tw_snap *s, tw_error *err);

/* After the recovery (or a new run: the snapshots of the last run
 * deleted): threads mode, the strategy core's writer started.  0 or a
 * negative errno with err. */
int tw__snap_open(tw_trade_engine *e, tw_error *err);
void tw__snap_close(tw_trade_engine *e);
/* The recovery's folds for the writer (fold_seed) freed. */
void tw__snap_seed_free(tw_trade_engine *e);

/* ---- recovery (recover.c) --------------------------------------------------------- */

/* After a crash (tw__evlog_open found records): the replay into the
 * strategy and the net cores, or a new run if the last one ended.  t0:
 * when the set-up began to open the log (the replay's figures).  0 or a
 * negative errno with err. */
int tw__recover(tw_trade_engine *e, int64_t t0, tw_error *err);
/* Processes mode, at the end: the report's strategy, rebuilt from the
 * newest snapshot that checks out and the journal after it (or a fresh
 * strategy fed every EV record, as the strategy process was), the trades
 * CSV cut where the snapshot's rows end (or emptied) and written on;
 * checked against the digests the strategy process sent.  0 or a
 * negative errno with err. */
int tw__recover_report(tw_trade_engine *e, tw_error *err);
/* Threads mode, at the end of a run recovered from a snapshot: the trades
 * CSV written again from the journal (a strategy of its own fed every EV
 * record).  0 or a negative errno with err. */
int tw__recover_trades(tw_trade_engine *e, tw_error *err);

/* ---- the supervisor of processes mode (supervisor.c) ---------------------------------- */

/* The attach segment (after the event log is open).  0 or a negative errno. */
int tw__sup_open(tw_trade_engine *e, tw_error *err);
/* Spawns the strategy process (or lets the standby go). */
void tw__sup_spawn(tw_trade_engine *e);
/* The control step's share: the segment's beat and poll, the strategy
 * process and its standby watched and restarted. */
void tw__sup_step(tw_trade_engine *e, int64_t now);
/* The segment closed, the strategy processes reaped (bounded). */
void tw__sup_end(tw_trade_engine *e);

/* ---- net core (gw.c; its files share gw_internal.h) ------------------------------ */

/* The net core's periodic work (session timer, reconnects, the ending). */
#define TW__GW_TIMER_NS 10000000ll

typedef struct tw__gw tw__gw;

/* The engine's phases (tw_trade_engine.phase; net cores read it). */
enum {
    TW__PH_RUNNING = 0,
    TW__PH_STOPPING = 1,  /* TERM: no more bars; cancel, log out */
    TW__PH_FINISHING = 2, /* FINISHED: the venue closed every session */
    TW__PH_DONE = 3,
};

struct tw_trade_engine {
    const tw_trade_config *cfg;
    tw_trade_engine_opts opts;
    uint64_t run_id;
    FILE *log;      /* the log (stderr or [engine] log) */
    int own_log;
    FILE *trades;   /* the trades CSV, or NULL */
    char *trades_buf;
    /* The strategy and its core. */
    tw__host host;
    size_t pend_off, pend_n; /* intents of the last event not yet in their rings */
    tw_ring *ctl;      /* control thread -> strategy (KILL) */
    tw__bell strat_bell;
    tw_reactor rs;     /* the strategy core */
    tw_reactor rn;     /* the net cores */
    int started_s, started_n;
    /* Sessions. */
    uint32_t n_gw;
    tw__gw **gw;
    /* Phase and requests: written by the control thread (phase) or a
     * signal handler (req_*), read by the cores.  Atomic: see each use. */
    uint32_t phase;
    uint32_t req_term, req_kill;
    uint32_t finished;        /* strategy core: FINISHED was written */
    uint32_t strategy_stopped; /* strategy core: takes no more bars (TERM seen) */
    uint32_t strategy_idle;   /* strategy core: its last turn found nothing */
    uint64_t kills_pending;
    int64_t phase_since_ns;
    int done;
    /* The event log (evlog.c): jmu orders evseq and the appends. */
    pthread_mutex_t jmu;
    int have_jmu;
    tw_jseg jr;           /* the journal: a directory of segments */
    int have_journal;
    char journal_path[TW_TRADE_STR_MAX + 16];
    uint64_t evseq_next;   /* under jmu: the next event's number */
    uint64_t journal_errors; /* under jmu */
    uint64_t next_evseq;   /* strategy core: the number it takes next */
    /* What the replay after a crash found (the summary's recovery line). */
    uint64_t replayed_events, replayed_bars, replayed_intents, suppressed, resent;
    int64_t created_ns;    /* tw_trade_engine_create's start */
    int64_t replay_ns;     /* the replay's duration */
    int64_t replay_kernel_ns; /* of it, the events through the strategy (the kernel) */
    int64_t first_bar_ns;  /* strategy core: the first bar after the replay (0: none yet) */
    int recovered;
    /* Snapshots (snap.c, threads mode): the strategy core's. */
    tw__snapper snap;
    int snap_recovered; /* the recovery started from a snapshot */
    int64_t snap_csv_len; /* its trades CSV length (TW_SNAP_SEC_TRADES_CSV), -1: none */
    int trades_placed;    /* the trades CSV reset for this run (before any row) */
    uint64_t snap_jseq; /* strategy core: the journal seq of the last event it took */
    /* A recovery from a snapshot: its gateway folds (n_gw), the writer's
     * to start from (tw__snap_open takes and frees them). */
    tw__gwfold *fold_seed;
    uint64_t fold_seed_seq;
    /* Processes mode: the attach segment, the strategy process. */
    int procs;             /* [engine] mode = processes */
    int have_att;
    tw_attach_gw att;
    char att_sock[TW_UNIX_PATH_MAX];
    pid_t child;           /* the strategy process we spawned (0: none) */
    pid_t standby;         /* the next one, spawned ahead, waiting on standby_fd (0: none) */
    int standby_fd;        /* our end of its go socket (a byte: go; EOF: exit) */
    uint32_t figs_seen;    /* control: n_figs when it last looked */
    int64_t detect_ns;     /* control: when the last strategy was seen gone */
    int64_t att_step_ns;   /* control: the last attach step */
    int64_t spawn_ns;
    uint32_t child_fails;  /* strategies in a row that exited by themselves with an error */
    /* The crash-loop rule: strategies that died of a crash signal at the
     * same journal record (crash_seq), crash_count of them in a row; at 3,
     * crash_loop_seq = that record and the run stops without a restart. */
    uint64_t crash_seq;
    uint32_t crash_count;
    uint64_t crash_loop_seq;
    uint64_t st_restarts;  /* strategies gone and replaced */
    uint64_t st_digest_finished, st_digest_stopped; /* what the strategy said (0: nothing) */
    pthread_mutex_t figmu; /* net core 0 appends, the control reads */
    tw__resumed figs[TW__FIGS_MAX];
    uint32_t n_figs;
    int64_t fig_detect_ns[TW__FIGS_MAX], fig_spawn_ns[TW__FIGS_MAX]; /* control: per restart */
    uint32_t n_detects;
};

int tw__gw_create(tw__gw **out, tw_trade_engine *e, uint32_t index, tw_error *err);
void tw__gw_destroy(tw__gw *g);
/* The net core's reactor poll (arg: the tw__gw). */
unsigned tw__gw_poll(void *arg, tw_reactor_now *now);
/* The sending half of the poll alone (intents in out, then the flush);
 * strategy = inline calls it after the strategy in the same turn. */
unsigned tw__gw_send(void *arg, tw_reactor_now *now);
/* Its periodic work: session timer, reconnects, the ending (arg: tw__gw). */
void tw__gw_timer(void *arg, tw_reactor_now *now);
/* Its rings: in (events to the strategy: the gw produces), out (intents). */
tw_ring *tw__gw_in(tw__gw *g);
tw_ring *tw__gw_out(tw__gw *g);
tw__bell *tw__gw_bell(tw__gw *g);
int tw__gw_fd(const tw__gw *g);
/* 1 once the session is over for good (logged out, or given up on) and
 * everything it owed the strategy is in its ring. */
int tw__gw_settled(const tw__gw *g);
void tw__gw_stats(const tw__gw *g, tw_trade_session_stats *s, tw_trade_gw_stats *gs);
size_t tw__gw_latency(const tw__gw *g, const tw_trade_latency **out);
/* Recovery (gw_restore.c; before the cores start): the session's fold
 * (gwfold.h), which takes the journal's records (tw__gwfold_rec); an
 * order the FIX store alone has; then the end of the replay (the fold's
 * counters into the figures; a session that was up is told DOWN: the old
 * connection died). */
tw__gwfold *tw__gw_fold(tw__gw *g);
void tw__gw_restore_order(tw__gw *g, const tw_out *o);
void tw__gw_restore_done(tw__gw *g);
/* Messages in the session's store. */
uint32_t tw__gw_store_count(const tw__gw *g);
/* When this process first logged on (tw_clock_now_ns; 0: never).  Read
 * after the net cores are joined. */
int64_t tw__gw_first_logon_ns(const tw__gw *g);
/* The store's ClOrdIDs (NewOrderSingle, OrderCancelRequest) of run run_id:
 * fn(ctx, 'T' or 'C', order id) for each.  0 or a negative errno. */
int tw__gw_store_orders(tw__gw *g, uint64_t run_id, void (*fn)(void *, char, uint64_t),
                        void *ctx);

#endif
