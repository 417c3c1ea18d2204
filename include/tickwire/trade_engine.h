/* The live engine of `tickwire trade` (live.md, "Threads, processes and
 * rings", "Trading engine"; docs/trade.md, "The engine").
 *
 * Threads, as live.md draws them:
 *
 *   net core k (one per [session]): transport rx (kernel TCP, or this
 *       project's userspace stack on a port) -> FIX session -> decoded
 *       tw_ev events --SPSC ring in[k]--> strategy core
 *   strategy core: polls every in[k] and the control ring, runs
 *       tw_strategy_on_event(), writes each intent to out[session]
 *   net core k: <--SPSC ring out[k]-- intent -> FIX build -> transport tx
 *
 * The strategy core owns the tw_strategy (all trading state); net core k
 * owns its transport, its FIX session and store, and its side of both its
 * rings; the control thread (the caller of tw_trade_engine_step/run) owns
 * the control ring (KILL events) and the phase.  The rings carry the 64-byte
 * records of strategy.h; nothing on the path allocates.
 *
 * The lockstep barrier rides the rings: a TestRequest 112=bar-<i> is held
 * by the session's on_test_request hook and becomes a BARRIER event behind
 * the bar's events; the strategy answers it with a BARRIER_ACK behind the
 * orders the bar caused; the net core sends those orders, then the
 * Heartbeat.  Any other TestRequest is answered by the session at once.
 *
 * Ending: after TradingSessionStatus 340=3 on every session (a replay's
 * end) the strategy writes LOGOUT per session and FINISHED; after a TERM
 * request (SIGTERM) the strategy finishes the event in flight and takes no
 * more bars, each net core sends what the strategy had decided, cancels
 * its open orders, waits (bounded) for their answers and logs out.  Either
 * way the engine stops its threads and writes the report (and the trades
 * CSV) once every session has logged out or timed out.  A KILL request
 * (SIGUSR1) is the strategy's kill switch. */
#ifndef TICKWIRE_TRADE_ENGINE_H
#define TICKWIRE_TRADE_ENGINE_H

#include "tickwire/trade.h"
#include "tickwire/util.h"

/* A port (tickwire/port.h); a pointer is all this header needs. */
typedef struct tw_port tw_port;

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tw_trade_engine tw_trade_engine;

/* Opens the port of session `session` from its `stack =` spec (the caller
 * owns port opening: the tools parse specs with tools/common/portspec.h,
 * tests hand in sim ports).  Returns 0 with *port set, or a negative
 * errno-style code with err filled.  The engine calls close_port (if not
 * NULL) on it after the stack is closed. */
typedef int (*tw_trade_open_port_fn)(void *ctx, uint32_t session, const char *spec,
                                     tw_port **port, tw_error *err);
typedef void (*tw_trade_close_port_fn)(void *ctx, uint32_t session, tw_port *port);

typedef struct tw_trade_engine_opts {
    tw_trade_open_port_fn open_port;   /* required if a session has `stack =` */
    tw_trade_close_port_fn close_port; /* may be NULL */
    void *port_ctx;
    /* 1: the net cores are not threads; the caller turns them with
     * tw_trade_engine_poll() (a test that drives the venue and a simulated
     * network on the same thread).  The strategy core is a thread anyway,
     * unless [engine] strategy = inline: then it turns with them. */
    int manual_net;
    /* Makes ClOrdIDs unique across the trader's restarts; 0: the start
     * time in ms. */
    uint64_t run_id;
    /* 1: the first Logon of this run resets sequence numbers (141=Y);
     * reconnects within the run always resume from the store. */
    int reset_seqs;
    /* Latency samples kept per session (one per bar that caused an order;
     * the first ones are kept) [65536]. */
    uint32_t latency_samples;
    /* Bounds of the ending (ms): open orders' answers [1000], the Logout
     * handshake and the rest [5000]. */
    uint32_t cancel_wait_ms;
    uint32_t end_wait_ms;
    int quiet; /* 1: no session log lines on the log file */
    /* [engine] mode = processes: the strategy process to spawn, and to
     * spawn again when it dies (argv[0] is the executable; the gateway
     * appends nothing: the caller gives `--attach SOCK --config FILE`
     * itself, SOCK from tw_trade_engine_attach_sock()).  NULL: spawn
     * nothing (a strategy attaches by hand, `tickwire trade --attach`). */
    char *const *strategy_argv;
} tw_trade_engine_opts;

/* The latency stamps of one bar that caused an order (tw_tsc_read()
 * values; convert with tw_tsc_delta_ns(tw_tsc_default(), b - a)). */
typedef struct tw_trade_latency {
    uint64_t tsc_rx;       /* frame out of the port / recv() return */
    uint64_t tsc_tcp;      /* after TCP (kernel sockets: = tsc_rx) */
    uint64_t tsc_parse;    /* after the FIX parse of the X */
    uint64_t tsc_decision; /* tw_strategy_on_event() returned */
    uint64_t tsc_build;    /* the NewOrderSingle built and stored */
    uint64_t tsc_tx;       /* handed to the transport (send() / the port) */
    uint64_t bar;          /* the decision bar */
    uint32_t instrument;
    uint32_t orders;       /* orders this bar caused on this session */
} tw_trade_latency;
_Static_assert(sizeof(tw_trade_latency) == 64, "a latency sample is one cache line");

/* What a session's net core counted (besides tw_trade_session_stats). */
typedef struct tw_trade_gw_stats {
    uint64_t connects, connect_failures, disconnects, logons;
    uint64_t bars, gap_bars, possdup_bars_dropped, bars_after_stop;
    uint64_t md_rejects;       /* MarketDataRequestReject (Y): a symbol the venue lacks */
    uint64_t orders_sent, cancels_sent, barrier_acks, barrier_acks_lost;
    uint64_t fills, rejects, canceled, cancel_rejects, dup_execs, foreign_execs;
    uint64_t bad_app_msgs;     /* application messages that did not decode (logged) */
    uint64_t late_fills;       /* fills at the close of a bar after the decision bar */
    uint64_t late_fill_bars;   /* sum of (fill bar - decision bar) over them */
    uint64_t unmatched_fills;  /* fills whose price is no recent bar's close */
    uint64_t spill_max;        /* most events held back by a full ring */
    uint64_t intents_dropped;  /* intents that could not be sent (stopping without a
                                  connection; a message the session refused) */
    uint64_t latency_samples;  /* bars that caused orders (samples kept: min with cap) */
    uint64_t ring_max;         /* most events in the inbound ring after a push (threads mode) */
} tw_trade_gw_stats;

/* Builds an engine from a parsed configuration (cfg must outlive it):
 * the strategy (tw_strategy_init on the configuration), every ring, every
 * session (store opened: a missing parent directory is created), every
 * transport (ports opened through opts->open_port, stacks opened on
 * them), the report's and trades file's paths checked.  Nothing runs yet.
 * Returns 0 with *out set, or a negative errno-style code with err naming
 * what failed (-EINVAL: opts; a store, a port, a stack, a file). */
int tw_trade_engine_create(tw_trade_engine **out, const tw_trade_config *cfg,
                           const tw_trade_engine_opts *opts, tw_error *err);

/* Starts the threads (the strategy core unless strategy = inline, and the
 * net cores unless manual_net), pinned and polling as the configuration says.  Returns 0 or
 * the reactor's error (pinning, SCHED_FIFO) with err. */
int tw_trade_engine_start(tw_trade_engine *e, tw_error *err);

typedef enum tw_trade_request {
    TW_TRADE_REQ_TERM = 1, /* SIGTERM: finish, cancel, log out, report */
    TW_TRADE_REQ_KILL = 2, /* SIGUSR1: the kill switch */
} tw_trade_request;

/* Asks for one of the above; async-signal-safe (atomic stores only).  The
 * control step acts on it. */
void tw_trade_engine_request(tw_trade_engine *e, tw_trade_request req);

/* manual_net: one turn of every net core on the calling thread (busy: no
 * waiting).  Returns the work done. */
unsigned tw_trade_engine_poll(tw_trade_engine *e);

/* One step of the control loop at monotonic now (tw_clock_now_ns()): acts
 * on requests, follows the ending, and once it is over stops the threads
 * and writes the report.  Returns 0 while running, 1 once done (report
 * written), or a negative code with err when writing the report failed
 * (the engine is done then too). */
int tw_trade_engine_step(tw_trade_engine *e, tw_error *err);

/* Start, then steps with short sleeps until done.  Returns 0 or the first
 * error. */
int tw_trade_engine_run(tw_trade_engine *e, tw_error *err);

/* Read after tw_trade_engine_step() returned 1 (the threads are joined). */
const tw_strategy *tw_trade_engine_strategy(const tw_trade_engine *e);
void tw_trade_engine_session_stats(const tw_trade_engine *e, uint32_t session,
                                   tw_trade_session_stats *out);
void tw_trade_engine_gw_stats(const tw_trade_engine *e, uint32_t session,
                              tw_trade_gw_stats *out);
/* The session's latency samples (a view into the engine) and their count. */
size_t tw_trade_engine_latency(const tw_trade_engine *e, uint32_t session,
                               const tw_trade_latency **samples);
/* "run id" in the ClOrdIDs. */
uint64_t tw_trade_engine_run_id(const tw_trade_engine *e);

/* Writes one line per session and a totals line (orders, fills, late
 * fills and what they cost: execution PnL - signal PnL) to f. */
void tw_trade_engine_summary(const tw_trade_engine *e, FILE *f);

/* [engine] mode = processes: the Unix socket the gateway listens on for
 * the strategy process (the journal's path + ".sock", or "@tickwire-HEX"
 * in the abstract namespace when that is too long for a socket).  Known
 * before the engine exists (the spawned argv names it).  Returns its
 * length; buf holds at least TW_UNIX_PATH_MAX bytes. */
size_t tw_trade_engine_attach_sock(const tw_trade_config *cfg, char *buf);

/* The strategy process of mode = processes (`tickwire trade --attach SOCK
 * --config FILE`): builds the strategy from cfg, attaches to the gateway
 * at sock (retrying while it refuses or resets, up to 60 s), checks the
 * journal's META (the same configuration), replays the journal from its
 * first record through the strategy, sends no intent the journal says was
 * sent, and goes on from the rings until the gateway goes away.  Returns
 * 0 (the gateway ended the run after FINISHED or a TERM), -ECONNRESET
 * (the gateway went away mid-run), or another negative code with err
 * (attach, a journal of another configuration, a replay that does not
 * decide what was sent). */
int tw_trade_strategy_attach(const tw_trade_config *cfg, const char *sock, int quiet,
                             tw_error *err);

/* Stops what still runs (without a report), closes sessions, stacks,
 * ports and stores, frees everything. */
void tw_trade_engine_destroy(tw_trade_engine *e);

/* The ClOrdID of order id `id` in run `run_id`: "T<run hex>-<id hex>" into
 * buf (at least TW_TRADE_CLORDID_MAX bytes); returns its length.  And
 * back: 0 with *run_id and *id set, -EINVAL if s is not one of ours. */
#define TW_TRADE_CLORDID_MAX 40
/* Run ids are 48 bits: 12 hex digits in the ClOrdID. */
#define TW_TRADE_RUN_ID_MASK 0xffffffffffffull
size_t tw_trade_clordid(char *buf, char kind, uint64_t run_id, uint64_t id);
int tw_trade_clordid_parse(const char *s, size_t len, char *kind, uint64_t *run_id,
                           uint64_t *id);

#ifdef __cplusplus
}
#endif
#endif
