/* `tickwire trade`: its configuration file and its report (live.md,
 * "Trading engine"; docs/trade.md).
 *
 * Configuration: one INI file read with libinih (Debian libinih-dev), the
 * sections and keys of docs/trade.md.  Everything is checked before
 * anything connects: an unknown section or key, a missing required key, a
 * bad value, a combo outside [1, 100000], an instrument with no session or
 * an unknown one, a strategy on an unknown instrument, a duplicate name all
 * fail with "FILE:LINE: what is wrong" (the caller exits 2).
 *
 * Report: JSON, written at the end (and on SIGTERM), floats as their
 * shortest round-trip text (decimal.h), so a reader gets every PnL back
 * bit for bit. */
#ifndef TICKWIRE_TRADE_H
#define TICKWIRE_TRADE_H

#include "tickwire/strategy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest value of any key, NUL included (libinih's line limit is 200). */
#define TW_TRADE_STR_MAX 200
/* Most CPUs a `cpus =` list names. */
#define TW_TRADE_MAX_CPUS 64
/* Most sessions with strategy = inline: one reactor loop holds them all
 * (a socket or port fd each; src/trade/host.c asserts the reactor's limits). */
#define TW_TRADE_INLINE_MAX_SESSIONS 4

typedef enum tw_trade_mode {
    TW_TRADE_THREADS = 0,   /* gateway and strategy as threads of one process */
    TW_TRADE_PROCESSES = 1, /* two processes over shared-memory rings (crash.md) */
} tw_trade_mode;

/* Where the strategy core runs (the engine's threads, docs/trade.md). */
typedef enum tw_trade_strategy_run {
    TW_TRADE_STRATEGY_THREAD = 0, /* a thread of its own, fed over the rings (live.md's drawing) */
    TW_TRADE_STRATEGY_INLINE = 1, /* on the net cores' one thread: rx .. decision .. tx in one
                                     wake-up (the rings stay, produced and consumed there) */
} tw_trade_strategy_run;

/* A session's transport: the kernel's TCP, or this project's userspace
 * stack over a port (stack = a port spec of tools/common/portspec.h,
 * kept verbatim in stack_spec for the engine to open). */
typedef enum tw_trade_stack {
    TW_STACK_KERNEL = 0,         /* no `stack =`: kernel TCP sockets */
    TW_STACK_AF_XDP = 1,         /* af_xdp:IF[:QUEUE] */
    TW_STACK_AF_PACKET = 2,      /* af_packet:IF */
    TW_STACK_DPDK = 3,           /* dpdk:PORT:EAL ARGS, dpdk_af_packet:IF, dpdk_af_xdp:IF, memif:... */
    TW_STACK_SIM = 4,            /* sim (in-process simulated network, tests) */
} tw_trade_stack;

typedef struct tw_trade_engine_cfg {
    char report[TW_TRADE_STR_MAX]; /* report = FILE (required) */
    char trades[TW_TRADE_STR_MAX]; /* trades = FILE: CSV of closed trades ("" = none) */
    char log[TW_TRADE_STR_MAX];    /* log = FILE: risk and event log ("" = stderr) */
    char journal[TW_TRADE_STR_MAX]; /* journal = FILE: the gateway's event journal (crash.md) */
    double fee;                    /* fee = round-trip fee, percentage points [0.09] */
    tw_trade_mode mode;            /* mode = threads | processes [threads] */
    int busy_poll;                 /* busy_poll = yes | no | auto [auto] */
    tw_trade_strategy_run strategy; /* strategy = thread | inline | auto [auto] */
    int strategy_line;             /* its line (0: not given) */
    /* auto (given or by default): chosen from the machine's shape when the
     * file is parsed (tw_trade_engine_auto); why: what was chosen, and why
     * ("" when both were given), which the engine logs at its start. */
    int strategy_auto, busy_auto;
    char auto_why[256];
    uint32_t ring_slots;           /* ring_slots = power of two, 64..1048576 [4096] */
    /* snapshot_every = N events: the strategy's state handed to the
     * snapshot writer every N events, 0 = none [50000];
     * snapshot_interval_ms = T: also when T ms of monotonic time passed
     * since the last one, 0 = off [0]; snapshot_keep = the snapshots
     * kept, 1..64 [2] (both modes; crash.md) */
    uint64_t snapshot_every;
    uint64_t snapshot_interval_ms;
    uint32_t snapshot_keep;
    /* journal_segment_bytes = B: the journal (a directory) starts a new
     * segment when the next record would take the last past B, 4096..2^40
     * [64 MiB]; journal_keep = snapshots | all: a segment is deleted once
     * every record in it is older than the oldest kept snapshot, or never
     * [snapshots] (crash.md) */
    uint64_t journal_segment_bytes;
    int journal_keep_all;
    uint32_t n_cpus;               /* cpus = 0,2-3: pin net cores then the strategy */
    uint16_t cpus[TW_TRADE_MAX_CPUS];
    int line;                      /* the [engine] header */
} tw_trade_engine_cfg;

typedef struct tw_trade_session_cfg {
    char name[TW_NAME_MAX];        /* [session NAME] */
    char host[TW_TRADE_STR_MAX];   /* host = venue address (required) */
    uint16_t port;                 /* port = 1..65535 (required) */
    char sender[64];               /* sender = SenderCompID 49 (required) */
    char target[64];               /* target = TargetCompID 56 (required) */
    char store[TW_TRADE_STR_MAX];  /* store = the session store's path (required) */
    tw_trade_stack stack;          /* stack = KIND:ARG (optional) */
    char stack_spec[TW_TRADE_STR_MAX]; /* the value as written ("" for kernel TCP) */
    char ip[TW_TRADE_STR_MAX];     /* ip = A.B.C.D[/PREFIX]: our address (with stack only) */
    uint32_t ip4;                  /* host order */
    uint32_t prefix;               /* [24] */
    uint32_t gateway4;             /* gateway = A.B.C.D (with stack; 0 = none) */
    uint32_t heartbeat_s;          /* heartbeat = HeartBtInt 108, 1..3600 [30] */
    uint32_t reconnect_min_ms;     /* reconnect_min_ms = first backoff [100] */
    uint32_t reconnect_max_ms;     /* reconnect_max_ms = backoff cap [5000] */
    uint32_t connect_timeout_ms;   /* connect_timeout_ms = per attempt [2000] */
    char pcap[TW_TRADE_STR_MAX];   /* pcap = FILE: capture this session's frames (with stack) */
    int64_t max_orders_per_s;      /* max_orders_per_s = this session's bucket [risk's] */
    int line;
} tw_trade_session_cfg;

typedef struct tw_trade_instrument_cfg {
    char symbol[TW_NAME_MAX];      /* [instrument SYMBOL] */
    uint32_t session;              /* session = NAME (required), as an index */
    int line;
} tw_trade_instrument_cfg;

typedef struct tw_trade_strategy_section {
    char name[TW_NAME_MAX];        /* [strategy NAME]: its instances are NAME.0, NAME.1, ... */
    uint32_t instrument;           /* instrument = SYMBOL (required), as an index */
    uint32_t first_instance;       /* its instances: instances[first .. first + n) */
    uint32_t n_instances;          /* combo = (repeatable), length = L, grid = default,
                                      params = (repeatable, with kernel =) */
    int line;
    const tw_kernel_def *kernel;   /* kernel = NAME | PATH.so; NULL: hma_sar by combo */
    int kernel_line;
} tw_trade_strategy_section;

/* A parsed configuration (heap; tw_trade_config_free() releases it). */
typedef struct tw_trade_config {
    char path[TW_TRADE_STR_MAX * 2]; /* as given (for messages) */
    tw_trade_engine_cfg engine;
    tw_risk_cfg risk;                /* [risk] */
    uint32_t n_sessions, n_instruments, n_strategies, n_instances;
    tw_trade_session_cfg *sessions;
    tw_trade_instrument_cfg *instruments;
    tw_trade_strategy_section *strategies;
    tw_instance_cfg *instances;      /* every strategy's instances, in file order */
    tw_instrument_cfg *strategy_instruments; /* instruments as the strategy takes them */
    int64_t *session_orders_per_s;   /* per session: its own or [risk]'s default */
} tw_trade_config;

/* Reads and checks the file at path.  Returns 0 with *out set (the caller
 * frees it with tw_trade_config_free), or: -TW_EFORMAT with err->msg
 * "PATH:LINE: what is wrong" (the first problem in the file, by line);
 * -errno with "PATH: why" when the file cannot be read; -ENOMEM.  A path
 * too long for the message is shortened at its start ("...tail.ini"). */
int tw_trade_config_load(const char *path, tw_trade_config **out, tw_error *err);

/* The same over text[0..len) (need not be NUL-terminated; a NUL byte in
 * it is an error), with `name` in the messages in place of a path. */
int tw_trade_config_parse(const char *text, size_t len, const char *name,
                          tw_trade_config **out, tw_error *err);

void tw_trade_config_free(tw_trade_config *cfg);

/* [engine] strategy = auto and busy_poll = auto (the defaults): from the
 * CPUs the trader may use (n_cpus: its affinity mask, or its cpus = list;
 * n_isolated of them isolated), the number of sessions and the mode, the
 * configuration `tickwire bench live` measured fastest for that shape:
 * strategy = inline for one session, or while the CPUs cannot give each
 * net core and the strategy one of their own plus one to spare (inline
 * needs mode = threads and at most TW_TRADE_INLINE_MAX_SESSIONS); busy_poll
 * = yes when the busy loops (inline: one; thread: one per session and the
 * strategy's) leave at least one CPU to the rest of the host, or all have
 * isolated CPUs.  Fields given explicitly stay; e->auto_why says what was
 * chosen and why.  tw_trade_config_parse calls it with this process's
 * CPUs (sched_getaffinity, /sys/devices/system/cpu/isolated). */
void tw_trade_engine_auto(tw_trade_engine_cfg *e, uint32_t n_sessions, unsigned n_cpus,
                          unsigned n_isolated);

/* The strategy's configuration from a parsed file: counts, the arrays
 * (pointing into cfg: cfg must outlive the tw_strategy_init() call), fee
 * risk and the per-session order rates; hooks left zero for the caller
 * to set. */
void tw_trade_config_strategy(const tw_trade_config *cfg, tw_strategy_cfg *out);

/* ---- report ------------------------------------------------------------------ */

/* A session's counters, filled by the engine. */
typedef struct tw_trade_session_stats {
    char name[TW_NAME_MAX];
    uint64_t sent;       /* FIX messages sent */
    uint64_t received;   /* FIX messages received */
    uint64_t resends;    /* messages resent (PossDup) on a ResendRequest */
    uint64_t reconnects; /* connections after the first */
    uint64_t rejects;    /* session-level Reject (3) received */
} tw_trade_session_stats;

/* Writes the report JSON to f:
 *   {"instances": [{"name", "instrument", "combo": [6 ints], "trades",
 *     "pnl", "signal_pnl", "signal_trades", "orders", "fills", "rejects",
 *     "risk_rejects", "position", "signal", "state"}],
 *    "sessions": [{"name", "sent", "received", "resends", "reconnects",
 *     "rejects"}],
 *    "risk": {"state", "rejected_by_rule": {rule: n, ...},
 *     "breaches": {"max_instance_loss": n, "max_total_loss": n}, "kills"},
 *    "totals": {"trades", "pnl", "signal_pnl", "orders", "fills",
 *     "rejects"},
 *    "events": {strategy counters}}
 * pnl values are the shortest round-trip decimal of the double (with ".0"
 * when integral, so JSON readers see a float); a non-finite one is null.
 * Returns 0 or -EIO. */
int tw_trade_report_fprint(FILE *f, const tw_strategy *s, const tw_trade_session_stats *sessions,
                           size_t n_sessions);

/* What the engine adds about the run itself (mode = processes). */
typedef struct tw_trade_run_stats {
    /* The crash-loop rule (docs/crash.md): non-zero when the strategy
     * process died crash_loop_crashes times at journal record
     * crash_loop_record and the run stopped there.  The report then has
     * "crash_loop": {"record", "crashes"} and is the journal's replay up to
     * (not including) that record. */
    uint64_t crash_loop_record;
    uint32_t crash_loop_crashes;
    /* The engine's configuration as run (may be NULL): the report then has
     * "engine": {"mode", "strategy", "busy_poll", "strategy_auto",
     * "busy_auto", "auto_why"}, what auto chose and why. */
    const tw_trade_engine_cfg *engine;
} tw_trade_run_stats;

/* tw_trade_report_fprint() with run (may be NULL: the same output). */
int tw_trade_report_fprint_run(FILE *f, const tw_strategy *s,
                               const tw_trade_session_stats *sessions, size_t n_sessions,
                               const tw_trade_run_stats *run);

/* The same into path, atomically (path.tmp, fsync, rename): a report is
 * either the old one or the whole new one.  0 or -errno with err naming
 * the path. */
int tw_trade_report_write(const char *path, const tw_strategy *s,
                          const tw_trade_session_stats *sessions, size_t n_sessions,
                          tw_error *err);
int tw_trade_report_write_run(const char *path, const tw_strategy *s,
                              const tw_trade_session_stats *sessions, size_t n_sessions,
                              const tw_trade_run_stats *run, tw_error *err);

/* The trades CSV ([engine] trades = FILE): the header line, and one row
 * per closed trade (from the strategy's trade hook): instance, instrument
 * (symbol), side (1 long, -1 short), entry_bar, entry_price, exit_bar,
 * exit_price, r; prices and r as shortest round-trip decimals.  0 or -EIO. */
int tw_trade_csv_header(FILE *f);
int tw_trade_csv_row(FILE *f, const tw_strategy *s, const tw_strategy_trade *t);

#ifdef __cplusplus
}
#endif
#endif
