/* What the files of a session's net core share (gw*.c; the engine sees
 * it through engine_internal.h's tw__gw_* only).  Calls among them run one
 * way (docs/layout.md):
 *
 *   gw.c          the core: set-up, the turn (receive, send, flush), the
 *                 timer, the connection, the ending (TERM), the figures
 *   gw_restore.c  recovery's entry into the core (before the cores start)
 *   gw_rx.c       what the venue sends, decoded into events
 *   gw_tx.c       intents into FIX messages; ClOrdIDs
 *   gw_state.c    events to the strategy (numbered, journaled, spilled),
 *                 the log line
 *
 * Below them: the fold (gwfold.c: the open-order table, recent closes,
 * the orders done, which the snapshot writer computes too), the event log
 * (evlog.c), the transports (xport*.c) and the doorbell (bell.c). */
#ifndef TW_TRADE_GW_INTERNAL_H
#define TW_TRADE_GW_INTERNAL_H

#include "tickwire/fix_session.h"
#include "trade/engine_internal.h"
#include "trade/gwfold.h"

#define TW__GW_RX_CAP (128u << 10)
#define TW__GW_OUT_CAP (1u << 20)
#define TW__GW_OUT_ROOM 1024          /* out space one intent's message needs */
#define TW__GW_MIN_EVENT_BYTES 16     /* less than the smallest input that makes an event */
#define TW__GW_EXEC_IDS (1u << 15)    /* ExecIDs remembered per generation */
#define TW__GW_INTENTS_PER_TURN 64
#define TW__GW_ATT_POLL_NS 50000ll    /* processes mode: the outbound ring's polling bound */

/* The ending after TERM, one way: NONE -> DRAINING -> CANCELS_OUT ->
 * LOGOUT_OUT, or DRAINING -> LOGOUT_OUT when the session is not logged
 * on (nothing to cancel).  gw.c checks each step (TW_VERIFY). */
typedef enum tw__stop_stage {
    TW__STOP_NONE = 0,        /* running */
    TW__STOP_DRAINING = 1,    /* waiting for the strategy's last intents */
    TW__STOP_CANCELS_OUT = 2, /* cancels of the open orders sent; waiting for them */
    TW__STOP_LOGOUT_OUT = 3,  /* Logout sent (or nothing to log out of) */
} tw__stop_stage;

struct tw__gw {
    tw_trade_engine *e;
    const tw_trade_config *cfg;
    const tw_trade_session_cfg *sc;
    uint32_t index;
    tw__xport *xp;
    tw_port *port; /* opened for us (stack), closed through opts.close_port */
    tw_capture *cap; /* `pcap =`: this session's frames (a writer thread of its own) */
    tw_fix_store store;
    int have_store;
    tw_fix_session fs;
    int64_t epoch_offset_ns;
    tw_ring *in, *out;
    void *in_mem, *out_mem;
    tw__bell bell;     /* wakes this core when the strategy writes to out */
    int pushed;        /* an event went into `in` this turn: ring the strategy */
    /* What follows from the journal alone (gwfold.h): the instruments'
     * local indices, last bars, recent closes, the open-order table, the
     * orders done, up, closed_seen; its counters are a recovery's only
     * (handed to st at its end). */
    tw__gwfold f;
    /* This session's instruments: local index -> the strategy's (f has
     * the other way), and a hash of their symbols. */
    uint32_t *sym_instr;
    uint32_t *hash;    /* local index + 1, 0: empty */
    uint32_t hash_mask;
    /* Events that found the ring full (numbered and journaled): a queue. */
    struct {
        tw__inrec *q;
        uint32_t head, n, cap;
    } spill;
    tw_fix_md_entry md_entries[TW_FIX_MAX_FIELDS]; /* the decoder's X entries */
    int64_t first_logon_ns; /* this process's first Logon (monotonic) */
    /* Processes mode (the strategy over the attach segment). */
    int att_st;             /* the last tw_attach_gw_core_sync: TW_ATTACH_CORE_* */
    int st_stopped;         /* the strategy's STOPPED marker came through our ring */
    uint64_t journal_errors;
    uint64_t bad_intents;   /* intents from the strategy process that made no sense */
    /* ExecIDs seen, two generations (the older one is forgotten when the
     * newer one is half full): a PossDup execution already applied is
     * not a second fill. */
    struct {
        uint64_t *ids[2];
        uint32_t n[2];
        int cur;
    } exec;
    /* Connection and ending. */
    int stream_closed;      /* the session closed the stream inside a call */
    int down_pending;       /* the transport went down with input still to feed */
    int conn_live;          /* a connection was attempted and not yet taken down */
    int logout_requested;   /* LOGOUT intent or the ending: no reconnect */
    int over;               /* the session is done for good */
    uint32_t settled;       /* atomic: over, and nothing left for the strategy
                               (the control thread reads it: tw__gw_settled) */
    tw__stop_stage stop_stage; /* TERM: the ending's steps (gw.c, stop_progress) */
    int64_t stage_since_ns;
    int64_t next_connect_ns;
    uint32_t backoff_ms;
    uint64_t md_req_n;
    uint64_t text_ids;
    /* The turn. */
    int busy;               /* busy-polling core (else yielding) */
    uint32_t idle_turns;    /* turns in a row with nothing to do */
    int64_t now_ns;
    uint64_t cur_tsc_rx, cur_tsc_tcp;
    /* Latency samples. */
    struct {
        tw_trade_latency *v;
        uint32_t n, cap;
        uint32_t tx_from;   /* the first sample the next flush stamps */
        uint64_t last_rx;   /* the causing event of v[n - 1] */
        int open;           /* v[n - 1] still collects this event's orders */
    } lat;
    tw_trade_gw_stats st;
};

/* ---- gw_state.c ---- */
void tw__gw_log(tw__gw *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Events to the strategy: numbered and journaled, into the ring or the
 * spill queue (processes mode: journaled through the segment). */
void tw__gw_push(tw__gw *g, tw_ev *ev);
void tw__gw_push_session(tw__gw *g, tw_session_state st);
void tw__gw_spill_drain(tw__gw *g);

/* ---- gw_tx.c ---- */
/* One MarketDataRequest per instrument of the session (after the Logon). */
void tw__gw_subscribe(tw__gw *g);
int tw__gw_send_cancel(tw__gw *g, uint64_t order_id, uint32_t instance, uint32_t instrument,
                       uint8_t side, int32_t qty);
/* Logout (why: its text, or NULL); no reconnect after it. */
void tw__gw_logout(tw__gw *g, const char *why);
/* The ring the strategy's intents come in (NULL: none attached). */
tw_ring *tw__gw_intents_ring(tw__gw *g);
/* Intents from that ring into messages, while out has room; returns how
 * many were handled. */
unsigned tw__gw_drain_intents(tw__gw *g);

/* ---- gw_rx.c: the FIX session's application hooks ---- */
void tw__gw_on_msg(void *ctx, tw_fix_session *s, const tw_fix_decoded *d, int possdup);
int tw__gw_on_test_request(void *ctx, tw_fix_session *s, const char *id, size_t len);
void tw__gw_on_event(void *ctx, tw_fix_session *s, tw_fix_event ev, const char *text);

/* ---- inline ---- */

/* Epoch time for TransactTime (60): what SendingTime gets. */
static inline int64_t tw__gw_epoch_ns(const tw__gw *g)
{
    return tw_fix_session_epoch_ns(&g->fs, g->now_ns);
}

/* 1 once the engine's phase is STOPPING (TERM). */
static inline int tw__gw_stopping(const tw__gw *g)
{
    /* Acquire pairs with the control thread's release-store of phase. */
    return __atomic_load_n(&g->e->phase, __ATOMIC_ACQUIRE) == TW__PH_STOPPING;
}

#endif
