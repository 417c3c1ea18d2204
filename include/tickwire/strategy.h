/* The strategy core of the live path (docs/design/live.md, "The kernel,
 * streaming" and "Risk"; docs/trade.md, "The strategy core").
 *
 * Events in, intents out.  The gateway (net cores: TCP, FIX sessions)
 * decodes what the venue says into fixed-size tw_ev records, the strategy
 * turns them into fixed-size tw_out intents (orders, cancels, barrier
 * acknowledgements, logouts), and the gateway turns those into FIX.  Both
 * records are plain data (no pointers, 64 bytes) so that they travel in
 * SPSC ring slots between threads or between processes.
 *
 * Contract:
 *  - Everything is sized at init from the configuration (instances =
 *    instrument x combo, one streaming hma_sar kernel per instrument over
 *    its hma_sar combos, the flat state and books of every instance of
 *    another kernel, risk state, a bounded open-order table);
 *    tw_strategy_on_event()
 *    allocates nothing, reads no clock, does no I/O.
 *  - Deterministic: the strategy's state and every intent it writes are a
 *    pure function of the sequence of events given to it since init (the
 *    events' now_ns is its only notion of time; latency stamps are copied,
 *    never read for a decision).  Replaying a journal of events into a
 *    fresh strategy rebuilds the same state and the same intents, with the
 *    same order ids: tw_strategy_digest() checks it.
 *  - Order ids are derived from (instance, decision bar), see
 *    tw_order_id(), so a replayed decision maps to the same id.
 *
 * Thread safety: one thread calls tw_strategy_on_event() for a strategy;
 * the read-only getters may be called from that thread between events. */
#ifndef TICKWIRE_STRATEGY_H
#define TICKWIRE_STRATEGY_H

#include "tickwire/common.h"
#include "tickwire/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest name (instance, instrument symbol, session), NUL included. */
#define TW_NAME_MAX 32
/* Bounds of the configuration (what the order id and the records can
 * carry). */
#define TW_STRATEGY_MAX_SESSIONS 1024
#define TW_STRATEGY_MAX_INSTANCES (1u << 22)
#define TW_STRATEGY_MAX_OPEN 64 /* open orders per instance */

/* ---- events in ----------------------------------------------------------- */

typedef enum tw_ev_type {
    TW_EV_BAR = 1,           /* bar i of an instrument (u.bar) */
    TW_EV_FILL = 2,          /* an execution (150=F) of one of our orders (u.fill) */
    TW_EV_REJECT = 3,        /* the venue rejected an order (150=8) (u.reject) */
    TW_EV_CANCELED = 4,      /* an order was canceled (150=4) (u.order) */
    TW_EV_CANCEL_REJECT = 5, /* OrderCancelReject (9) (u.order) */
    TW_EV_BARRIER = 6,       /* TestRequest bar-<i> in lockstep (u.barrier) */
    TW_EV_SESSION = 7,       /* the session went up, down or closed (u.session) */
    TW_EV_KILL = 8,          /* kill switch (SIGUSR1, operator): cancel, flatten, halt */
    TW_EV_OPERATOR = 9,      /* the operator sets the trading state (u.oper) */
} tw_ev_type;

typedef enum tw_session_state {
    TW_SESSION_DOWN = 0,   /* disconnected (the gateway reconnects) */
    TW_SESSION_UP = 1,     /* logged on, subscribed */
    TW_SESSION_CLOSED = 2, /* TradingSessionStatus 340=3: the venue is done */
} tw_session_state;

typedef enum tw_side {
    TW_SIDE_BUY = 1,  /* FIX 54=1 */
    TW_SIDE_SELL = 2, /* FIX 54=2 */
} tw_side;

/* One decoded inbound event.  The gateway stamps now_ns (monotonic, at
 * receipt) on every event: the strategy's only clock.  The tsc_* fields are
 * latency stamps for the budget (tw_tsc_read() at rx, after TCP, after FIX
 * parse; 0 where a stage does not exist); the strategy copies tsc_* of the
 * event that caused an intent into it and never reads them otherwise. */
typedef struct tw_ev {
    uint8_t type;        /* tw_ev_type */
    uint8_t side;        /* FILL: tw_side of the execution (FIX 54) */
    uint16_t session;    /* index of the session it came from (config order) */
    uint32_t instrument; /* BAR: index of the instrument (config order) */
    int64_t now_ns;      /* monotonic ns at receipt, stamped by the gateway */
    uint64_t tsc_rx;     /* frame out of the port / recv() return */
    uint64_t tsc_tcp;    /* after TCP reassembly */
    uint64_t tsc_parse;  /* after FIX parse */
    union {
        struct {
            uint64_t index; /* bar index i (MDEntryID 278) */
            double close;   /* close[i] (270); NaN for a gap bar (no 270) */
            uint64_t pad;
        } bar;
        struct {
            uint64_t order_id; /* from the ClOrdID (11) */
            int64_t qty;       /* LastQty (32), units, > 0 */
            double px;         /* LastPx (31), exact float64 of the wire text */
        } fill;
        struct {
            uint64_t order_id; /* from the ClOrdID (11) */
            int32_t reason;    /* OrdRejReason (103); -1 when absent */
            uint32_t text_id;  /* the gateway's id of the 58 Text it logged (0: none) */
            uint64_t pad;
        } reject;
        struct {
            uint64_t order_id; /* CANCELED / CANCEL_REJECT: the order (41 / 11) */
            uint64_t pad[2];
        } order;
        struct {
            uint64_t id; /* the i of TestRequest 112=bar-<i> */
            uint64_t pad[2];
        } barrier;
        struct {
            uint32_t state; /* tw_session_state */
            uint32_t pad[5];
        } session;
        struct {
            uint32_t state; /* OPERATOR: tw_trading_state to set */
            uint32_t pad[5];
        } oper;
    } u;
} tw_ev;
_Static_assert(sizeof(tw_ev) == 64, "tw_ev is one cache line (a ring slot)");

/* ---- intents out --------------------------------------------------------- */

typedef enum tw_out_type {
    TW_OUT_ORDER = 1,       /* NewOrderSingle (D), market, qty units of side */
    TW_OUT_CANCEL = 2,      /* OrderCancelRequest (F) of order_id */
    TW_OUT_BARRIER_ACK = 3, /* Heartbeat 112=bar-<ref> on session */
    TW_OUT_LOGOUT = 4,      /* log out of session (its venue closed) */
    TW_OUT_FINISHED = 5,    /* every session closed: write the report, exit */
} tw_out_type;

/* One intent.  Every intent names the session whose outbound ring it goes
 * to; intents of one session must be sent in the order they were written
 * (a BARRIER_ACK after the orders written before it is the lockstep
 * barrier).  FINISHED has session 0xffff (for the engine, not a session).
 * tsc_decision is 0 from the strategy (it reads no clock): the engine
 * writes tw_tsc_read() into it when tw_strategy_on_event() returns. */
typedef struct tw_out {
    uint8_t type;        /* tw_out_type */
    uint8_t side;        /* ORDER, CANCEL: tw_side */
    uint16_t session;    /* the session that sends it */
    uint32_t instance;   /* ORDER, CANCEL: the instance (its name is the Account, 1) */
    uint32_t instrument; /* ORDER, CANCEL: the instrument (its symbol is 55) */
    int32_t qty;         /* ORDER: units (38), > 0; CANCEL: the order's open qty */
    uint64_t order_id;   /* ORDER, CANCEL: the order (tw_order_id()) */
    uint64_t ref;        /* BARRIER_ACK: the barrier id; ORDER: the decision bar */
    uint64_t tsc_rx;     /* the causing event's stamps, copied */
    uint64_t tsc_tcp;
    uint64_t tsc_parse;
    uint64_t tsc_decision; /* written by the engine, see above */
} tw_out;
_Static_assert(sizeof(tw_out) == 64, "tw_out is one cache line (a ring slot)");

#define TW_OUT_SESSION_NONE 0xffffu

/* ---- order ids -----------------------------------------------------------
 *
 * bits 62..63 kind, 40..61 instance, 0..39 sequence:
 *   kind 0 (signal):  sequence = the decision bar (one decision per bar);
 *   kind 1 (flatten): sequence = the strategy's count of flatten orders
 *                     before this one (kill switch).
 * Deterministic: a replayed decision gets the same id.  The engine turns an
 * id into a ClOrdID that also carries a run id (unique across restarts)
 * and back (tw_ev.u.fill.order_id). */
enum { TW_ORDER_SIGNAL = 0, TW_ORDER_FLATTEN = 1 };
#define TW_ORDER_SEQ_BITS 40
#define TW_ORDER_SEQ_MASK ((UINT64_C(1) << TW_ORDER_SEQ_BITS) - 1)

static inline uint64_t tw_order_id(unsigned kind, uint32_t instance, uint64_t seq)
{
    return (uint64_t)kind << 62 | (uint64_t)instance << TW_ORDER_SEQ_BITS |
           (seq & TW_ORDER_SEQ_MASK);
}
static inline unsigned tw_order_id_kind(uint64_t id) { return (unsigned)(id >> 62); }
static inline uint32_t tw_order_id_instance(uint64_t id)
{
    return (uint32_t)((id >> TW_ORDER_SEQ_BITS) & ((UINT64_C(1) << 22) - 1));
}
static inline uint64_t tw_order_id_seq(uint64_t id) { return id & TW_ORDER_SEQ_MASK; }

/* ---- risk ----------------------------------------------------------------- */

typedef enum tw_trading_state {
    TW_TRADING_ACTIVE = 0,   /* every order that passes the limits */
    TW_TRADING_REDUCING = 1, /* only orders that reduce |position| */
    TW_TRADING_HALTED = 2,   /* none (the kill switch's flatten orders excepted) */
} tw_trading_state;

/* The rules an order can fail, in the order they are checked.  Each
 * rejected (or, for REDUCING, cut) order is counted under its rule and
 * given to the log hook; none is dropped silently. */
typedef enum tw_risk_rule {
    TW_RULE_HALTED = 0,             /* trading state HALTED (instance or global) */
    TW_RULE_REDUCING = 1,           /* REDUCING: would add to |position| (a flip is cut) */
    TW_RULE_OPEN_ORDERS = 2,        /* the instance has max_open_orders open */
    TW_RULE_MAX_POSITION = 3,       /* |instrument position| would exceed max_position */
    TW_RULE_MAX_TOTAL_POSITION = 4, /* sum of |instrument positions| > max_total_position */
    TW_RULE_RATE_SESSION = 5,       /* the session's order-rate bucket is empty */
    TW_RULE_RATE_TOTAL = 6,         /* the total order-rate bucket is empty */
    TW_RULE_COUNT = 7,
} tw_risk_rule;

/* "halted", "reducing", "open_orders", "max_position", "max_total_position",
 * "order_rate_session", "order_rate_total" (the report's keys); "?" else. */
const char *tw_risk_rule_name(tw_risk_rule rule);
/* "ACTIVE", "REDUCING", "HALTED"; "?" else. */
const char *tw_trading_state_name(tw_trading_state state);

/* Limits, checked before every order, aggregated across sessions.
 * Positions are in units and counted as the fills put them plus the open
 * orders (an order in flight counts as if filled, so limits hold whatever
 * the venue does with it). */
typedef struct tw_risk_cfg {
    int64_t max_position;       /* per instrument: |sum over its instances| */
    int64_t max_total_position; /* sum over instruments of |position| */
    /* Token buckets: capacity = one second of orders, refilled from the
     * events' now_ns.  >= 1. */
    int64_t max_orders_per_s;         /* all sessions together */
    int64_t max_session_orders_per_s; /* each session */
    /* Realised execution PnL, percentage points (> 0): an instance whose
     * PnL falls below -max_instance_loss, or all instances together below
     * -max_total_loss, switch to on_loss (that instance, or globally). */
    double max_instance_loss;
    double max_total_loss;
    tw_trading_state on_loss; /* REDUCING or HALTED */
    uint32_t max_open_orders; /* per instance, 1..TW_STRATEGY_MAX_OPEN */
} tw_risk_cfg;

/* Fills r with limits that never bind (what an empty [risk] section means):
 * positions 2^31 - 1 (qty fits int32), rates 1e9 per second, losses
 * 1e300, on_loss REDUCING, max_open_orders 4. */
void tw_risk_cfg_init(tw_risk_cfg *r);

/* ---- hooks ---------------------------------------------------------------- */

typedef enum tw_log_kind {
    TW_LOG_RISK_REJECT = 1, /* an order failed rule; not sent */
    TW_LOG_RISK_CUT = 2,    /* REDUCING cut a flip to its closing part (qty sent) */
    TW_LOG_BREACH = 3,      /* a loss limit was crossed: state is the new state */
    TW_LOG_STATE = 4,       /* the global trading state changed (operator, kill) */
    TW_LOG_VENUE_REJECT = 5, /* the venue rejected order_id (reason = 103) */
    TW_LOG_BAD_EVENT = 6,   /* an event that does not fit the state (what says why) */
} tw_log_kind;

/* One log record; the strings are static.  Given to the log hook from
 * inside tw_strategy_on_event(). */
typedef struct tw_strategy_log {
    tw_log_kind kind;
    tw_risk_rule rule;      /* RISK_REJECT, RISK_CUT */
    tw_trading_state state; /* BREACH, STATE: the state now */
    uint32_t instance;      /* UINT32_MAX when none */
    uint64_t order_id;      /* the order concerned (0 when none) */
    int64_t qty;            /* signed units: the order's (REJECT, CUT: as asked) */
    int32_t reason;         /* VENUE_REJECT: OrdRejReason */
    int64_t now_ns;         /* the event's */
    const char *what;       /* one line: the rule's name, or what was wrong */
} tw_strategy_log;

/* A closed trade of an instance, booked from its fills (execution) with
 * the kernel's arithmetic.  Bars are the decision bars of the opening and
 * the closing order (in lockstep the bars whose close filled them); side
 * is the closed position's (+1 long, -1 short). */
typedef struct tw_strategy_trade {
    uint32_t instance;
    int32_t side;
    uint64_t entry_bar;
    double entry_px;
    uint64_t exit_bar;
    double exit_px;
    double r; /* percentage points, before the fee */
} tw_strategy_trade;

typedef struct tw_strategy_hooks {
    void (*log)(void *ctx, const tw_strategy_log *rec);   /* may be NULL */
    void (*trade)(void *ctx, const tw_strategy_trade *trade);      /* may be NULL */
    void *ctx;
} tw_strategy_hooks;

/* ---- configuration --------------------------------------------------------- */

typedef struct tw_instrument_cfg {
    char symbol[TW_NAME_MAX]; /* FIX 55 */
    uint32_t session;         /* index of the session that trades it */
} tw_instrument_cfg;

/* An instance runs one kernel (kernel_abi.h).  kernel NULL, or the built-in
 * hma_sar (tw_kernel_builtin(0)): combo's six windows drive the streaming
 * hma_sar kernel (tw_stream, the sweep's bits); params is ignored.  Any
 * other kernel: params[0 .. kernel->n_params) is its combo (checked with
 * tw_kernel_check_combo() at init), its flat state (state_bytes(params)
 * bytes) lives in the strategy's memory and the host's one booking rule
 * (tw_kbook_bar()) runs it per bar; combo is ignored. */
typedef struct tw_instance_cfg {
    char name[TW_NAME_MAX]; /* FIX 1 Account, the report's name */
    uint32_t instrument;    /* index into instruments */
    int64_t combo[TW_COMBO_WINDOWS];
    const tw_kernel_def *kernel; /* NULL: hma_sar by combo */
    double params[TW_KERNEL_MAX_PARAMS];
} tw_instance_cfg;

/* What tw_strategy_init() reads (and copies: the arrays may be freed after
 * init).  Instances may come in any order; the strategy keeps their index. */
typedef struct tw_strategy_cfg {
    double fee; /* round-trip fee, percentage points (the kernel's) */
    uint32_t n_sessions;
    uint32_t n_instruments;
    uint32_t n_instances;
    const tw_instrument_cfg *instruments;
    const tw_instance_cfg *instances;
    tw_risk_cfg risk;
    /* n_sessions order rates (1..1e9 per second), one bucket per session;
     * NULL: risk.max_session_orders_per_s for every session. */
    const int64_t *session_orders_per_s;
    tw_strategy_hooks hooks;
} tw_strategy_cfg;

/* ---- the strategy ------------------------------------------------------------ */

typedef struct tw_strategy tw_strategy;

/* Bytes tw_strategy_init() needs for cfg (aligned to 64), or 0 if cfg is
 * invalid (tw_strategy_init() says why). */
size_t tw_strategy_memsize(const tw_strategy_cfg *cfg);

/* Builds a strategy in the caller's mem[bytes] (64-byte aligned, at least
 * tw_strategy_memsize(cfg); the caller owns it and frees it after the
 * strategy's last use; nothing else is allocated).  Returns the strategy
 * (inside mem), or NULL with err filled: -EINVAL (counts out of bounds, an
 * index that names nothing, a fee or limit that is not finite or out of
 * range), -TW_EBADWINDOW (a combo window outside [1, 100000]), -EINVAL
 * (a kernel's params refused by tw_kernel_check_combo()), -ENOSPC
 * (bytes too small). */
tw_strategy *tw_strategy_init(void *mem, size_t bytes, const tw_strategy_cfg *cfg,
                              tw_error *err);

/* The most intents one tw_strategy_on_event() call can write: the larger of
 * the instances on one instrument (a bar), n_instances x (max_open_orders +
 * 1) (the kill switch: a cancel per open order, a flatten per instance),
 * and 2 (a logout and FINISHED). */
size_t tw_strategy_max_out(const tw_strategy *s);

/* Processes one event and writes the intents it causes to out[0..cap),
 * returns how many.  cap must be at least tw_strategy_max_out(s) (checked:
 * TW_VERIFY).  An event that does not fit (unknown instrument, order or
 * session, a bar already seen, a fill with no quantity or price) is
 * counted, logged (TW_LOG_BAD_EVENT) and otherwise ignored. */
size_t tw_strategy_on_event(tw_strategy *s, const tw_ev *ev, tw_out *out, size_t cap);

/* ---- state (read between events) ------------------------------------------- */

typedef struct tw_instance_stats {
    const char *name;   /* points into the strategy */
    uint32_t instrument;
    int64_t combo[TW_COMBO_WINDOWS];
    const tw_kernel_def *kernel; /* as configured (NULL: hma_sar by combo) */
    const double *params;        /* kernel's n_params values (NULL with kernel) */
    int64_t position;   /* units, as the venue's fills put it */
    int64_t open_qty;   /* signed units of its open orders */
    int32_t signal;     /* the kernel's position: -1, 0, +1 */
    int64_t trades;     /* closed trades booked from fills */
    double pnl;         /* execution PnL, percentage points */
    int64_t signal_trades; /* the kernel's trades */
    int32_t stopped;    /* the kernel's step returned a value other than -1, 0, +1 */
    double signal_pnl;  /* the kernel's PnL (at the decision bars' closes) */
    double entry_px;    /* LastPx of the opening fill (0 when flat) */
    uint64_t orders;    /* orders sent (intents written) */
    uint64_t fills;     /* fill events applied */
    uint64_t rejects;   /* rejected by the venue */
    uint64_t risk_rejects; /* rejected (or cut) by a risk rule */
    tw_trading_state state; /* its own (loss limit) state */
} tw_instance_stats;

typedef struct tw_strategy_counters {
    uint64_t events;      /* every event given */
    uint64_t bars;        /* bars fed to the kernel */
    uint64_t gap_bars;    /* of which NaN (gap) */
    uint64_t dup_bars;    /* bars at or before the last one seen: ignored */
    uint64_t skipped_bars; /* bar indices jumped over (bar i+k after i, k > 1) */
    uint64_t bad_prices;  /* closes <= 0 or infinite: fed as gaps */
    uint64_t bad_events;  /* ignored: unknown type, index, order; bad fill */
    uint64_t fills, rejects, canceled, cancel_rejects, overfills;
    uint64_t barriers, kills, flatten_orders, cancels;
    uint64_t rejected_by_rule[TW_RULE_COUNT];
    uint64_t breaches_instance; /* max_instance_loss crossings */
    uint64_t breaches_total;    /* max_total_loss crossings */
    double pnl;                 /* execution PnL of all instances (booking order) */
    tw_trading_state state;     /* the global trading state */
} tw_strategy_counters;

uint32_t tw_strategy_n_instances(const tw_strategy *s);
uint32_t tw_strategy_n_instruments(const tw_strategy *s);
uint32_t tw_strategy_n_sessions(const tw_strategy *s);
/* Instance i (i < n_instances); the name pointer lives as long as s. */
void tw_strategy_instance(const tw_strategy *s, uint32_t i, tw_instance_stats *out);
/* The instrument's symbol and session (k < n_instruments). */
const char *tw_strategy_symbol(const tw_strategy *s, uint32_t k);
uint32_t tw_strategy_instrument_session(const tw_strategy *s, uint32_t k);
void tw_strategy_counters_get(const tw_strategy *s, tw_strategy_counters *out);
tw_trading_state tw_strategy_state(const tw_strategy *s);
/* The last bar index seen on instrument k, or -1 before its first bar. */
int64_t tw_strategy_last_bar(const tw_strategy *s, uint32_t k);

/* A 64-bit digest (FNV-1a) of everything the strategy's decisions depend
 * on: kernel state of every combo, positions, open orders, PnL, risk state
 * and buckets, counters.  Two strategies fed the same events from init
 * have the same digest; a crash-recovery replay checks itself with it. */
uint64_t tw_strategy_digest(const tw_strategy *s);

/* ---- the state as bytes (a snapshot; docs/crash.md) ---------------------------
 *
 * The whole state (every instance's kernel state bytes and books, open
 * orders, risk state and buckets, counters, the kernels' names, ABI and
 * params) as one flat payload, with the journal seq it reflects and the
 * intents the host had decided but not yet sent.  The payload knows no
 * file format: the caller puts it into a snapshot section.  Native
 * layout: read on a machine of the byte order and ABI that wrote it (any
 * ISA: the streaming kernel's part is in no lane layout). */
#define TW_STRATEGY_STATE_VERSION 1u

/* Bytes tw_strategy_state_save() writes with n_intents pending intents
 * (fixed for a strategy: allocate the buffer once). */
size_t tw_strategy_state_size(const tw_strategy *s, uint32_t n_intents);

/* Copies the state into buf[0..cap) (no allocation, no I/O: between
 * events, on the strategy's thread): returns the bytes written, 0 if cap
 * is smaller than tw_strategy_state_size(). */
size_t tw_strategy_state_save(const tw_strategy *s, uint64_t journal_seq, const tw_out *intents,
                              uint32_t n_intents, void *buf, size_t cap);

/* tw_strategy_state_save() in two halves, so that the core does only the
 * copy: tw_strategy_state_copy() (the same, without the CRC) on the
 * strategy's thread, tw_strategy_state_seal() (the payload's CRC-32C) on
 * any thread afterwards (a snapshot writer's: tw_snap_writer_cfg.finish).
 * An unsealed payload does not load. */
size_t tw_strategy_state_copy(const tw_strategy *s, uint64_t journal_seq, const tw_out *intents,
                              uint32_t n_intents, void *buf, size_t cap);
void tw_strategy_state_seal(void *buf, size_t len);

typedef struct tw_strategy_state_info {
    uint64_t journal_seq; /* the last journal record the state reflects */
    uint64_t bytes;
    uint32_t n_intents;   /* pending intents carried */
    uint32_t n_instances;
} tw_strategy_state_info;

/* Checks a payload's header and CRC only: 0 with info filled, or as below. */
int tw_strategy_state_info_get(const void *buf, size_t len, tw_strategy_state_info *info,
                               tw_error *err);

/* Loads a payload into s, a strategy fresh from tw_strategy_init() with
 * the configuration it was saved under; the pending intents go to
 * intents[0..intents_cap).  Then s goes on exactly as the saved one would
 * have (same intents, same order ids, same digest).  Returns 0;
 * -TW_EFORMAT (truncated, a CRC mismatch, a value out of range, books that
 * do not add up), -EPROTONOSUPPORT (another version), -ESTALE (saved
 * under another configuration: err names what differs, e.g. an
 * instance's kernel, a param, a window, the risk limits), -ENOSPC (more
 * intents than intents_cap).  -ESTALE and the size checks come before
 * anything is written; after any error s must be built again before use.
 * Everything the strategy owns is checked; a plug-in kernel's state bytes
 * are checked for their size (and the payload's CRC) only. */
int tw_strategy_state_load(tw_strategy *s, const void *buf, size_t len, tw_out *intents,
                           uint32_t intents_cap, tw_strategy_state_info *info, tw_error *err);

/* What a recovery from a state needs to find the intents it had decided
 * and maybe not sent: instance i's open orders (live slots, oldest
 * first) into out[0..cap), their count; whether session j's LOGOUT was
 * written; whether FINISHED was. */
typedef struct tw_strategy_open_order {
    uint64_t id;        /* tw_order_id() */
    uint64_t bar;       /* the decision bar (flatten: the instrument's last bar) */
    int64_t remaining;  /* signed units not yet filled */
    int kind;           /* TW_ORDER_SIGNAL / TW_ORDER_FLATTEN */
    int cancel_sent;    /* a CANCEL was written for it */
} tw_strategy_open_order;
size_t tw_strategy_open_orders(const tw_strategy *s, uint32_t i, tw_strategy_open_order *out,
                               size_t cap);
int tw_strategy_session_logged_out(const tw_strategy *s, uint32_t j);
int tw_strategy_finished(const tw_strategy *s);
uint64_t tw_strategy_flatten_orders(const tw_strategy *s);

/* The kernel set as text, one "name abi" line per instance (what a
 * snapshot's kernel-set section holds and its loader compares): the
 * length; at most cap - 1 bytes and a NUL written to buf. */
size_t tw_strategy_kernels_text(const tw_strategy *s, char *buf, size_t cap);

/* A 16-byte digest of the strategy's configuration (fee, sessions and
 * their rates, instruments, instances with their kernels, params or
 * windows, risk limits). */
void tw_strategy_config_digest(const tw_strategy *s, uint8_t out[16]);

#ifdef __cplusplus
}
#endif
#endif
