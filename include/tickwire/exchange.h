/* The exchange simulator: the venue of live.md's FIX 4.4 protocol ("The
 * venue protocol (FIX 4.4)", "Exchange simulator"), as a library part.
 *
 * The venue streams bars of one dataset per instrument (MarketData-
 * IncrementalRefresh X, one entry per instrument per bar, a NaN close is an
 * entry without MDEntryPx), fills market orders at the close of the last
 * priced bar it sent for the symbol, runs the lockstep barrier (TestRequest
 * 112=bar-<i> after the entries of bar i; bar i+1 only after the Heartbeat
 * with that 112 from every subscribed session) or a paced bar clock, and
 * injects faults (disconnect, sequence gap, order rejects, slow reader).
 *
 * Like the FIX session it is built on, it never reads the clock and never
 * touches a socket: the driver passes now_ns (monotonic) into every call,
 * hands each transport connection in as a tw_fix_stream, and feeds the
 * bytes it receives.  So the same venue runs over kernel TCP (tools/
 * exchange), over this project's userspace stack (tw_xchg_net below, on any
 * port: AF_PACKET, AF_XDP, DPDK or the simulated network) and under a
 * fuzzer.
 *
 * Sessions: one FIX session per initiator CompID (several at once), each
 * with its own crash-safe store under cfg.store_dir; a connection is bound
 * to the session its Logon names.  Every price the venue writes (270, 31,
 * 6) is the shortest exact decimal text of the dataset's float64
 * (tickwire/decimal.h), so a trader that converts it with correct rounding
 * sees the dataset's bits.
 *
 * Memory: everything but a session is allocated in tw_xchg_create; a
 * session (its FIX state, store, subscriptions and ClOrdID table, sized
 * from cfg.max_orders) is allocated on the first Logon of its CompID (or
 * at create, for a store read back), at most cfg.max_sessions of them.
 * Bars and orders allocate nothing. */
#ifndef TICKWIRE_EXCHANGE_H
#define TICKWIRE_EXCHANGE_H

#include <signal.h>

#include "tickwire/common.h"
#include "tickwire/fix.h"
#include "tickwire/fix_session.h"
#include "tickwire/util.h"

/* The stack the venue can serve on (tickwire/net.h); a pointer is all this
 * header needs. */
typedef struct tw_net tw_net;

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tw_xchg tw_xchg;
typedef struct tw_xchg_conn tw_xchg_conn;

/* One instrument: its Symbol(55) and its closes (NaN = a gap bar).  The
 * venue keeps the pointers: the memory must outlive it. */
typedef struct tw_xchg_symbol {
    const char *name;
    const double *close;
    size_t n_bars;
} tw_xchg_symbol;

typedef enum tw_xchg_fault_kind {
    TW_XCHG_FAULT_DISCONNECT = 1, /* drop every subscribed connection after bar `bar` */
    TW_XCHG_FAULT_GAP = 2,        /* skip one outbound MsgSeqNum at bar `bar` */
    TW_XCHG_FAULT_REJECT = 3,     /* reject every `every`th order (103=99) */
    TW_XCHG_FAULT_SLOW = 4,       /* stop reading every connection for `ms` after bar `bar` */
    TW_XCHG_FAULT_HASTY = 5,      /* send bar `bar`+1 without waiting for bar `bar`'s
                                     Heartbeats: a venue that breaks lockstep, for
                                     testing a counterparty's check of it */
} tw_xchg_fault_kind;

typedef struct tw_xchg_fault {
    tw_xchg_fault_kind kind;
    uint32_t pad_;
    uint64_t bar;   /* disconnect, gap, slow, hasty */
    uint64_t every; /* reject */
    uint64_t ms;    /* slow */
} tw_xchg_fault;

/* Parses a --fault argument: "disconnect:BAR", "gap:BAR", "reject:N" (N >=
 * 1), "slow:BAR:MS" or "hasty:BAR".  Returns 0, or -EINVAL with err naming what is
 * wrong. */
int tw_xchg_fault_parse(const char *s, tw_xchg_fault *out, tw_error *err);

/* One execution, handed to cfg.on_fill as it happens (for the fills log),
 * or at create for each one read back from a store (resumed: the process
 * that filled it may have died before logging it).  Views are valid during
 * the call only. */
typedef struct tw_xchg_fill {
    int64_t epoch_ns;      /* TransactTime(60) of the ExecutionReport */
    const char *session;   /* the initiator's CompID */
    const char *symbol;
    tw_fix_str cl_ord_id;  /* 11 */
    tw_fix_str account;    /* 1 (len 0 when the order had none) */
    const char *order_id;  /* 37 */
    const char *exec_id;   /* 17 */
    const char *price_text; /* 31 as sent */
    double price;          /* its value: the dataset's close, bit for bit */
    int64_t qty;
    uint64_t bar;          /* index of the bar whose close it is */
    char side;             /* '1' buy, '2' sell */
    char resumed;          /* 1: read back from the store at create, not a new fill */
    char pad_[6];
} tw_xchg_fill;

typedef struct tw_xchg_cfg {
    const char *sender_comp_id;   /* our CompID [VENUE] */
    const tw_xchg_symbol *symbols;
    unsigned n_symbols;
    int lockstep;                 /* 1: per-bar TestRequest/Heartbeat barrier; 0: paced */
    uint64_t bar_interval_ns;     /* paced: time between bars; 0 = flat out */
    /* Paced by ticks: market-data ticks per second across all instruments
     * (a tick is one instrument's entry of a bar, so bars go out every
     * n_symbols / ticks_per_s s); > 0 takes the place of bar_interval_ns.
     * Bar b is due at bar 0's time + b intervals on the monotonic clock:
     * a late turn sends every bar due, up to the burst bound, not one. */
    uint64_t ticks_per_s;
    uint64_t max_bars;            /* stop after this many bars; 0 = the longest dataset */
    unsigned min_sessions;        /* bar 0 waits for this many subscribed sessions [1] */
    unsigned max_sessions;        /* CompIDs [64] */
    unsigned max_conns;           /* transport connections at once [64] */
    uint32_t max_orders;          /* per session; orders past it are rejected, counted [100000] */
    unsigned max_entries;         /* entries per X message [32] */
    const tw_xchg_fault *faults;
    unsigned n_faults;
    /* Directory of the per-CompID stores (<dir>/<CompID>.store); NULL: no
     * store (resends are gap fills; tests and fuzzing).  Stores already
     * there are read back at create and the run resumes where they leave
     * it (a venue killed mid-run and started again): the bar after the
     * last one sent (in lockstep, the last one's barrier asked again once
     * the trader is back), orders filled at that bar's close, ClOrdIDs
     * already answered not filled again. */
    const char *store_dir;
    uint64_t store_mmap_bytes;    /* > 0: stores append through a mapping [1 MiB]; see tw_fix_store_cfg */
    int64_t epoch_offset_ns;      /* epoch time = now_ns + this (SendingTime, TransactTime) */
    uint64_t logon_timeout_ns;    /* a connection without a Logon is closed [10 s] */
    uint64_t reconnect_grace_ns;  /* a subscribed session that stays away this long is dropped [30 s] */
    uint64_t end_timeout_ns;      /* after Closed, how long to wait for Logouts [10 s] */
    uint64_t backlog_high;        /* driver-side bytes queued for a session that hold the bar clock [256 KiB] */
    uint64_t run_id;              /* makes OrderIDs/ExecIDs unique across runs (hex in the IDs) */
    unsigned ts_digits;           /* SendingTime/TransactTime fraction digits [6] */
    /* Called once per fill, as it happens (may be NULL). */
    void (*on_fill)(void *ctx, const tw_xchg_fill *f);
    /* One line about a session or connection event (logon, logout,
     * disconnect, rejects, faults), for the operator (may be NULL). */
    void (*on_log)(void *ctx, const char *session, const char *text);
    void *ctx;
} tw_xchg_cfg;

/* Zeroes cfg (every field then takes the default in brackets above). */
void tw_xchg_cfg_init(tw_xchg_cfg *cfg);

/* Creates a venue.  Returns 0, or -EINVAL / -ENOMEM with err naming the bad
 * field (no symbols, a symbol without bars or with a name that cannot go in
 * a FIX field, duplicate names, a bad CompID or fault, ...), or
 * -TW_EFORMAT / -errno with err naming a store in cfg.store_dir that does
 * not read back (damaged, not a venue's, or from another dataset). */
int tw_xchg_create(tw_xchg **out, const tw_xchg_cfg *cfg, tw_error *err);

/* Frees everything (stores are closed; connections still open are not
 * closed through their streams: the driver owns its sockets). */
void tw_xchg_destroy(tw_xchg *x);

/* ---- connections ------------------------------------------------------- */

/* A new transport connection.  io.write must take every byte or fail (<0:
 * the session then closes); io.close is called once when the venue ends
 * the connection, after which c is invalid and the driver must forget it
 * (close may come from inside any tw_xchg_* call, write's failure path
 * included: the driver should mark its connection and release the socket
 * when that call has returned).  backlog (may be NULL) reports bytes the
 * driver holds that the transport has not taken yet; the bar clock waits
 * while a session's backlog is above cfg.backlog_high.  Returns 0 with *out
 * set, or -EBUSY when cfg.max_conns are open (counted; the driver closes). */
int tw_xchg_conn_open(tw_xchg *x, const tw_fix_stream *io, size_t (*backlog)(void *ctx),
                      int64_t now_ns, tw_xchg_conn **out);

/* Receiving without a copy: *p is set to the free space of the
 * connection's receive buffer (returns its size, > 0 while c is open);
 * write received bytes there and commit them. */
size_t tw_xchg_conn_rx_space(tw_xchg_conn *c, char **p);
void tw_xchg_conn_rx_commit(tw_xchg *x, tw_xchg_conn *c, size_t n, int64_t now_ns);

/* The same with a copy: takes up to len bytes (returns how many; fewer
 * only when the receive buffer is full, or after the venue closed c, when
 * it returns len: nothing after a close matters). */
size_t tw_xchg_conn_input(tw_xchg *x, tw_xchg_conn *c, const void *buf, size_t len,
                          int64_t now_ns);

/* The transport went down under us.  c is invalid afterwards (no close
 * callback). */
void tw_xchg_conn_closed(tw_xchg *x, tw_xchg_conn *c, int64_t now_ns);

/* The slow-reader fault: 0 when the driver may read c, else the monotonic
 * time before which it must not (its transport's window then fills). */
int64_t tw_xchg_conn_read_at(const tw_xchg_conn *c);

/* ---- the clock --------------------------------------------------------- */

/* Runs the bar clock (paced bars, the lockstep barrier's follow-ups),
 * timers (session heartbeats, idle connections, reconnect grace, the end
 * of the run) and deferred work.  Returns the monotonic time by which it
 * wants to be called again (input may call for it sooner). */
int64_t tw_xchg_poll(tw_xchg *x, int64_t now_ns);

/* For the driver's idle moments (nothing due before the time tw_xchg_poll
 * returned, what it wrote already handed to the transport): one bounded
 * piece of housekeeping, a session's store file grown ahead of its
 * appends (fix_session.h, tw_fix_store_grow_ahead), so that sending
 * market data rarely extends a file itself.  1 when it did some, 0 when
 * there was none. */
int tw_xchg_idle(tw_xchg *x);

/* Stops the run (SIGTERM): TradingSessionStatus Closed to every session
 * that has not had it, then Logout; tw_xchg_done() turns 1 once every
 * session has answered or timed out. */
void tw_xchg_stop(tw_xchg *x, int64_t now_ns);

/* 1 once the run is over: after the last bar, Closed sent, and every
 * session logged out (or the end timeout and the logout timeout passed);
 * or after tw_xchg_stop() likewise. */
int tw_xchg_done(const tw_xchg *x);

/* Counters: monotonic since create, bad input counted, never fatal. */
typedef struct tw_xchg_stats {
    uint64_t bars;              /* bars sent (each to every subscribed session) */
    uint64_t bars_total;        /* bars the run has */
    uint64_t md_msgs, md_entries; /* X messages and entries sent, all sessions */
    uint64_t barrier_test_requests, barrier_acks, barrier_reissued;
    uint64_t conns, conns_refused, conns_idle_closed;
    uint64_t pre_logon;         /* connections whose first message was not a Logon */
    uint64_t bad_logon;         /* unusable CompIDs or BeginString in a first Logon */
    uint64_t dup_logon;         /* a second connection for a session already connected */
    uint64_t sessions, sessions_full, sessions_dropped; /* CompIDs seen, refused, given up */
    uint64_t sessions_resumed;  /* sessions read back from their stores at create */
    uint64_t logons, logouts, disconnects;
    uint64_t md_requests, md_rejects, unknown_symbols;
    uint64_t orders;            /* NewOrderSingle received (PossDup copies of known ones excluded) */
    uint64_t fills, order_rejects, dup_cl_ord_id, order_limit, before_first_price;
    uint64_t possdup_ignored;   /* PossDup orders whose ClOrdID was already answered */
    uint64_t cancels;           /* OrderCancelRequest answered (with 9) */
    uint64_t session_rejects;   /* Reject (3) for malformed application messages */
    uint64_t business_rejects;  /* BusinessMessageReject (j) for unsupported types */
    uint64_t garbled_bytes;     /* bytes that did not frame as FIX */
    uint64_t send_errors;       /* application messages the session could not send */
    uint64_t faults_disconnect, faults_gap, faults_reject, faults_slow;
    uint64_t faults_hasty;      /* bars sent on without waiting (hasty:BAR) */
    /* Paced runs: the most a bar went out after its due time (ns), and how
     * many turns the bar clock waited on a session's backlog (a trader
     * that does not keep up: its unsent output above cfg.backlog_high). */
    uint64_t pace_lag_max_ns;
    uint64_t pace_held;
    uint64_t grow_ahead;        /* store pieces grown in idle moments (tw_xchg_idle) */
    uint64_t grow_errors;       /* those that failed (the sends then grow the file) */
} tw_xchg_stats;

const tw_xchg_stats *tw_xchg_get_stats(const tw_xchg *x);

/* Writes the one-line summary the CLI prints ("bars=.. sessions=.. ..."),
 * NUL-terminated; returns its length (truncated to cap - 1). */
size_t tw_xchg_summary(const tw_xchg *x, char *buf, size_t cap);

/* Epoch time a given monotonic time maps to (now_ns + epoch_offset_ns). */
int64_t tw_xchg_epoch_ns(const tw_xchg *x, int64_t now_ns);

/* ---- over this project's userspace TCP/IP stack ------------------------- */

/* Serves the venue on a tw_net listener: accepts up to max_conns TCP
 * connections on port, moves received bytes into the venue and the
 * venue's output into the connections (gathered in a per-connection buffer
 * of out_cap bytes and handed to the stack once per turn, so a bar's X and
 * TestRequest share a segment; what the retransmit ring cannot take yet
 * waits there; past out_cap the write fails and the session closes).  Honours the slow-reader fault by
 * leaving bytes in the stack's receive ring (so its window closes).  All
 * memory is allocated here. */
typedef struct tw_xchg_net tw_xchg_net;
int tw_xchg_net_open(tw_xchg_net **out, tw_xchg *x, tw_net *st, uint16_t port,
                     unsigned max_conns, size_t out_cap, tw_error *err);
/* Moves bytes both ways and reaps closed connections; call after each
 * tw_net_poll, and again after tw_xchg_poll (what the venue wrote in
 * between waits for it).  Returns the number of connections that did
 * something. */
unsigned tw_xchg_net_poll(tw_xchg_net *xn, int64_t now_ns);
/* Unlistens and aborts every connection (the venue is told they closed). */
void tw_xchg_net_close(tw_xchg_net *xn, int64_t now_ns);

/* ---- over kernel TCP ------------------------------------------------------ */

/* A non-blocking IPv4 listening socket on host:port (port 0: any; the one
 * taken in *bound).  Returns 0 with *fd set, or a negative errno-style code
 * with err naming what failed. */
int tw_xchg_tcp_listen(const char *host, uint16_t port, int *fd, uint16_t *bound,
                       tw_error *err);
/* Serves the venue on listening socket lfd (which it closes) until the
 * venue is done, or *signals asks (1: a clean stop, 2 or more: quit now).
 * What the venue writes during a call is gathered per connection and sent
 * with one send() when the call returns.  busy = 0: waits in poll(2) until
 * input or the venue's next deadline (to the microsecond, with ppoll);
 * busy = 1: never sleeps (poll with a zero timeout each turn: a paced run
 * at a high rate keeps its clock to the bar, at the price of a CPU).
 * Returns 0, or a negative code with err filled (out of memory, poll
 * failed). */
int tw_xchg_tcp_run(tw_xchg *x, int lfd, unsigned max_conns, int busy,
                    const volatile sig_atomic_t *signals, tw_error *err);

#ifdef __cplusplus
}
#endif
#endif
