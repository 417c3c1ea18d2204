/* What the files of the exchange part share (tickwire/exchange.h): the
 * venue, its sessions and connections.  Nobody outside src/exchange/ may
 * include this. */
#ifndef TW_EXCHANGE_INTERNAL_H
#define TW_EXCHANGE_INTERNAL_H

#include "tickwire/decimal.h"
#include "tickwire/exchange.h"
#include "tickwire/fix_session.h"

#define XS_COMPID_MAX 32    /* longest initiator CompID we take (it names a file) */
#define XS_ID_MAX 64        /* longest MDReqID, ClOrdID, Account, Symbol */
#define XS_ENTRY_MAX (64 + XS_ID_MAX + TW_DECIMAL_MAX) /* one X entry's bytes */

/* Run states. */
typedef enum xs_run {
    RUN_WAITING = 0, /* bar 0 waits for cfg.min_sessions subscribed sessions */
    RUN_BARS,        /* bars flowing */
    RUN_CLOSED,      /* Closed (340=3) sent; waiting for Logouts */
    RUN_LOGOUT,      /* we sent Logout to whoever was left; waiting for answers */
    RUN_DONE
} xs_run;

/* A ClOrdID seen on a session: two independent 64-bit hashes of its bytes
 * (h1 == 0 marks a free slot) and how it was answered. */
typedef struct xs_order {
    uint64_t h1, h2;
    uint64_t order_no;
    char status; /* '2' filled, '8' rejected */
    char pad_[7];
} xs_order;

typedef struct xs_conn xs_conn;

/* One initiator CompID: its FIX session, store and market-data state.
 * Lives from its first Logon to tw_xchg_destroy. */
typedef struct xs_sess {
    tw_xchg *x;
    char comp_id[XS_COMPID_MAX + 1];
    char pad0_[7];
    xs_conn *conn;          /* the connection it is bound to, or NULL */
    int has_store;
    int ever_active;
    /* Subscriptions: sub[s] != 0 when symbol s is subscribed, under the
     * MDReqID md_req[s] (NUL-terminated). */
    uint8_t *sub;
    char (*md_req)[XS_ID_MAX + 1];
    unsigned n_sub;
    int opened;             /* TradingSessionStatus Open sent (and TestRequest "open") */
    int ready;              /* answered TestRequest "open": every V before it is in */
    int ready_after_gap;    /* that answer arrived above a sequence gap */
    int closed_sent;        /* TradingSessionStatus Closed sent */
    int logged_out;         /* the peer logged out (or we did and it answered) */
    /* Lockstep: a participant of the current bar's barrier until it acks. */
    int part, acked;
    int ack_after_gap;      /* the ack arrived above a sequence gap: counts once it closes */
    int reissue;            /* send TestRequest bar-<cur> again (after a reconnect) */
    int reissue_open;       /* send TestRequest "open" again (after a reconnect) */
    int pad2_;
    int gap_done;           /* the gap fault was applied to this session */
    int pad1_;
    int64_t away_since_ns;  /* subscribed and disconnected since (0: not away) */
    /* Orders: ClOrdIDs answered, open addressing over order_cap slots. */
    xs_order *orders;
    uint32_t order_cap, n_orders;
    tw_fix_store store;
    tw_fix_session fs;
} xs_sess;

typedef enum xs_conn_state { CONN_FREE = 0, CONN_PENDING, CONN_BOUND, CONN_CLOSED } xs_conn_state;

/* A transport connection (before its Logon: PENDING, bound to no
 * session). */
struct xs_conn {
    tw_xchg *x;
    xs_conn_state state;
    int idx;
    tw_fix_stream io;
    size_t (*backlog)(void *ctx);
    xs_sess *sess;
    int64_t opened_ns;
    int64_t read_at_ns;     /* slow fault: no reading before this */
    size_t rx_len;
    char *rx;               /* TW_FIX_RX_MIN bytes */
};

struct tw_xchg {
    tw_xchg_cfg cfg;
    char sender[XS_COMPID_MAX + 1];
    unsigned n_sym;
    char **sym_name;        /* copies, NUL-terminated */
    size_t *sym_name_len;
    uint64_t n_bars;        /* bars in the run */
    xs_run run;
    int64_t cur_bar;        /* last bar sent, -1 before the first */
    int awaiting;           /* lockstep: the barrier of cur_bar is open */
    int stopping;           /* tw_xchg_stop was called */
    int64_t bars_t0_ns;     /* paced: when bar 0 went out */
    double bar_ns;          /* paced: ns between bars (from ticks_per_s or bar_interval_ns; 0: flat out) */
    int64_t closed_at_ns;   /* when Closed went out (RUN_CLOSED) */
    int64_t logout_at_ns;   /* when our Logouts went out (RUN_LOGOUT) */
    /* Per symbol: the last priced bar sent (-1: none yet), its price text,
     * and the current bar's X entry bytes. */
    int64_t *last_px_bar;
    char (*px_text)[TW_DECIMAL_MAX];
    size_t *entry_len;
    char (*entry)[XS_ENTRY_MAX];
    uint64_t valid_orders;  /* for the reject:N fault */
    uint64_t bars_at_last_poll; /* flat out: did the last poll send bars? */
    unsigned grow_next;         /* tw_xchg_idle: the session whose store is next */
    uint64_t next_order_no, next_exec_no;
    char run_hex[20];
    xs_conn *conns;
    char *rx_mem;
    xs_sess **sess;
    unsigned n_sess;
    int in_emit;            /* emitting a bar: no nested emission */
    int hasty;              /* the bar just emitted was not waited for (hasty:BAR) */
    int64_t now_ns;         /* the time of the call in progress (for callbacks) */
    tw_fix_field id_fields[TW_FIX_MAX_FIELDS]; /* a first message parsed */
    tw_xchg_stats st;
    char log_line[256];
};

/* ---- output.c: everything above sends through here. */
void tw__xchg_log(tw_xchg *x, const xs_sess *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Begins a message of type `type` on s's session (NULL: it cannot send). */
tw_fix_wbuf *tw__xchg_begin(tw_xchg *x, xs_sess *s, const char *type, int64_t now_ns);
/* Finishes and sends the message tw__xchg_begin started; counts a
 * failure. */
int tw__xchg_send(tw_xchg *x, xs_sess *s, int64_t now_ns);
/* Session Reject (35=3) of message m: reason (373), the tag at fault. */
void tw__xchg_session_reject(tw_xchg *x, xs_sess *s, const tw_fix_msg *m, uint32_t tag,
                             int reason, const char *text, int64_t now_ns);
/* TradingSessionStatus (h) with status 340. */
int tw__xchg_send_status(tw_xchg *x, xs_sess *s, char status, int64_t now_ns);
/* Detaches c from its session (which sees a disconnect), no close. */
void tw__xchg_unbind(tw_xchg *x, xs_conn *c, int64_t now_ns);
/* Ends a session's connection from our side (fault, idle, shutdown). */
void tw__xchg_drop_conn(tw_xchg *x, xs_conn *c, int64_t now_ns);

/* ---- barrier.c */
/* What a Heartbeat answers, from its TestReqID. */
enum { HB_NONE = 0, HB_BAR, HB_OPEN };
typedef struct xs_heartbeat {
    int kind;            /* HB_* */
    uint64_t bar;        /* HB_BAR: the bar it answers */
    uint64_t seq;        /* its MsgSeqNum */
    uint64_t seq_before; /* the session's next_in before it went in */
} xs_heartbeat;
/* Looks at a framed message's raw bytes for one of our Heartbeats (a scan,
 * not a parse: it runs on every message a trader sends); fills hb. */
void tw__xchg_heartbeat_scan(const char *msg, size_t len, xs_heartbeat *hb);
/* The session took hb (ACTIVE, bound): passes the barrier or readiness
 * now, or once its gap has closed. */
void tw__xchg_barrier_heartbeat(tw_xchg *x, xs_sess *s, const xs_heartbeat *hb);
/* s has answered the current bar's TestRequest. */
void tw__xchg_ack(tw_xchg *x, xs_sess *s);
int tw__xchg_send_test_request(tw_xchg *x, xs_sess *s, int64_t now_ns);
/* TestRequest 112=open after a session's first subscription: bars wait
 * for its answer, so every V the trader sent before it is in. */
#define XS_OPEN_ID "open"
int tw__xchg_send_open_request(tw_xchg *x, xs_sess *s, int64_t now_ns);

/* ---- md.c, orders.c: the application messages of a logged-on session. */
void tw__xchg_on_md_request(tw_xchg *x, xs_sess *s, const tw_fix_msg *m, int64_t now_ns);
void tw__xchg_on_order(tw_xchg *x, xs_sess *s, const tw_fix_msg *m, int possdup, int64_t now_ns);
void tw__xchg_on_cancel(tw_xchg *x, xs_sess *s, const tw_fix_msg *m, int64_t now_ns);
/* Bars (md.c): formats bar i's entries, sends them (and the barrier's
 * TestRequest) to every subscribed session. */
void tw__xchg_emit_bar(tw_xchg *x, uint64_t i, int64_t now_ns);
/* Paced: the monotonic time bar b is due (bar 0's time + b intervals). */
int64_t tw__xchg_bar_due_ns(const tw_xchg *x, uint64_t b);
/* Index of the symbol named v[0..n), or -1. */
int tw__xchg_sym_index(const tw_xchg *x, const char *v, size_t n);
/* The ClOrdID table (orders.c). */
xs_order *tw__xchg_order_find(xs_sess *s, const char *id, size_t len, uint64_t *h1,
                              uint64_t *h2);

/* ---- app.c: the router. */
void tw__xchg_on_app(tw_xchg *x, xs_sess *s, const tw_fix_msg *m, int possdup, int64_t now_ns);

/* ---- run.c: the life cycle and the bar clock. */
/* Moves the run to `next` (forward only; verified). */
void tw__xchg_run_to(tw_xchg *x, xs_run next);
/* 1 if s has a connection and its session is ACTIVE. */
int tw__xchg_active(const xs_sess *s);
/* Closed (340=3) to every session that had Open, as soon as it can take it. */
void tw__xchg_send_closed_where_due(tw_xchg *x, int64_t now_ns);
void tw__xchg_start_logout(tw_xchg *x, int64_t now_ns);
/* The bar clock and the barrier's release. */
void tw__xchg_advance(tw_xchg *x, int64_t now_ns);

/* ---- conn.c */
/* A CompID that may name a store file. */
int tw__xchg_comp_id_ok(const char *v, size_t n);
/* A CompID's session, its store opened; NULL with err set when the store
 * does not open or memory is short. */
xs_sess *tw__xchg_sess_create(tw_xchg *x, const char *id, size_t n, tw_error *err);
/* Closes a session's store and frees it. */
void tw__xchg_sess_free(xs_sess *s);
/* Returns slots of connections closed during the call that is ending. */
void tw__xchg_reap(tw_xchg *x);

/* ---- resume.c */
/* Reads back the sessions of cfg.store_dir's stores and puts the run where
 * they leave it.  Returns 0, or -TW_EFORMAT / -errno with err naming the
 * file and what is wrong with it. */
int tw__xchg_resume(tw_xchg *x, tw_error *err);

#endif
