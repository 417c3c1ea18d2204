/* A session's gateway fold: the part of a net core's state that follows
 * from the journal's records alone (docs/crash.md, "The gateway's state
 * in a snapshot").  One set of apply functions for the two that compute
 * it: the net core itself, during a recovery (gw_restore.c, recover.c),
 * and the snapshot writer's thread (snap.c), which keeps a fold of its
 * own and writes it into each snapshot, so that a recovery reads only the
 * journal's records after the snapshot.
 *
 * The fold of the records with seq <= J is a function of those records
 * only: the open table is in the order its adds and removes left it, and
 * the serialised form is canonical (the done set sorted, the recent
 * closes in slot order), so two folds of the same records serialise to
 * the same bytes. */
#ifndef TW_TRADE_GWFOLD_H
#define TW_TRADE_GWFOLD_H

#include <stddef.h>
#include <stdint.h>

#include "tickwire/journal.h"
#include "tickwire/snapshot.h"
#include "tickwire/strategy.h"
#include "tickwire/trade.h"

#define TW__GW_CLOSES_WIN 4096u   /* recent closes kept per instrument (late fills) */
#define TW__GWFOLD_VERSION 1u      /* of the serialised form (TW_SNAP_SEC_GW_FOLD) */

typedef struct tw__open_order {
    uint64_t id;
    uint32_t instance;
    uint32_t instrument;
    int32_t qty;
    uint8_t side;
    uint8_t cancel_out; /* the journal has an OUT record of its cancel */
    uint8_t pad_[2];
} tw__open_order;
_Static_assert(sizeof(tw__open_order) == 24, "an open order, as serialised");

typedef struct tw__recent_close {
    int64_t bar;
    double px;
} tw__recent_close;

typedef struct tw__gwfold {
    uint32_t session;
    uint32_t n_instruments;   /* the strategy's */
    uint32_t n_sym;           /* this session's */
    uint32_t *local_of;       /* the strategy's instrument -> local (UINT32_MAX: not ours) */
    int64_t *last_bar;        /* per local instrument: last bar forwarded, -1 */
    tw__recent_close *closes; /* per local instrument, CLOSES_WIN */
    /* Orders sent and not yet done (filled, rejected, canceled); a full
     * table drops an add (sized for the risk limit's most). */
    struct {
        tw__open_order *v;
        uint32_t n, cap;
    } open;
    /* The orders the journal saw done (every execution of them came
     * before: one the venue resends is not applied again), a hash set of
     * ids + 1 that grows at half full (ids NULL: none yet). */
    struct {
        uint64_t *ids;
        uint32_t mask, n;
    } done;
    int up;          /* the last SESSION event was UP */
    int closed_seen; /* a SESSION CLOSED (a resent 340=3 is then a duplicate) */
    int stopped;     /* processes mode: a STOP record (no bars folded after it) */
    int logout_out;  /* an OUT record of this session's LOGOUT */
    /* The counters a recovery hands to the core's figures. */
    uint64_t bars, gap_bars, fills, rejects, canceled, orders_sent;
} tw__gwfold;

/* The zero fold of session `session` of cfg (its tables sized from cfg).
 * 0 or -ENOMEM (nothing left allocated). */
int tw__gwfold_init(tw__gwfold *f, const tw_trade_config *cfg, uint32_t session);
void tw__gwfold_free(tw__gwfold *f);
/* Back to the zero fold (the tables kept). */
void tw__gwfold_reset(tw__gwfold *f);
/* dst (a fold of the same session and configuration) := src.  0 or -ENOMEM. */
int tw__gwfold_copy(tw__gwfold *dst, const tw__gwfold *src);

tw__open_order *tw__gwfold_open_find(tw__gwfold *f, uint64_t id);
void tw__gwfold_open_add(tw__gwfold *f, const tw_out *o);
void tw__gwfold_open_remove(tw__gwfold *f, uint64_t id);
void tw__gwfold_remember_close(tw__gwfold *f, uint32_t local, uint64_t bar, double px);
int tw__gwfold_done_has(const tw__gwfold *f, uint64_t id);

/* ---- the apply functions (the one place the journal's meaning for the
 * gateway is written down) ---- */

/* An EV record of this session.  0 or -ENOMEM (the done set). */
int tw__gwfold_ev(tw__gwfold *f, const tw_ev *ev);
/* An OUT record of this session (or an order the FIX store alone has). */
void tw__gwfold_out(tw__gwfold *f, const tw_out *o);
/* A journal record into the fold of its session (f[k]: session k's, n of
 * them): EV (not KILL / OPERATOR: the operator's), OUT, STOP (every
 * session); other kinds are not the gateway's.  0; -TW_EFORMAT (a session
 * that is not one of the n); -ENOMEM. */
int tw__gwfold_rec(tw__gwfold *const *f, uint32_t n, const tw_journal_rec *rec);

/* The OUT records the fold knows it holds that a strategy loaded from a
 * snapshot at the same seq may decide again (intents.h,
 * tw__intents_of_state): each open order, its cancel, the LOGOUT; fn(ctx,
 * the record's identity) on each.  0 or fn's error. */
int tw__gwfold_outs(const tw__gwfold *f, int (*fn)(void *ctx, const tw_out *o), void *ctx);

/* ---- serialised (a snapshot's TW_SNAP_SEC_GW_FOLD section, one per
 * session; little-endian):
 *
 *   header (tw__gwfold_hdr), then
 *   last_bar  n_sym x i64
 *   closes    n_closes x {u32 local, u32 0, i64 bar, f64 px}, in (local,
 *             slot) order, only the slots that hold a bar
 *   open      n_open x tw__open_order, in table order
 *   done      n_done x u64, ascending ---- */

typedef struct tw__gwfold_hdr {
    uint32_t version;   /* TW__GWFOLD_VERSION */
    uint32_t session;
    uint64_t seq;       /* the fold of the journal records with seq <= this */
    uint32_t n_sym;
    uint32_t n_open;
    uint64_t n_closes;
    uint64_t n_done;
    uint64_t bars, gap_bars, fills, rejects, canceled, orders_sent;
    uint32_t flags;     /* TW__GWFOLD_F_* */
    uint32_t zero;
} tw__gwfold_hdr;
_Static_assert(sizeof(tw__gwfold_hdr) == 96, "the gateway fold's header");

enum {
    TW__GWFOLD_F_UP = 1,
    TW__GWFOLD_F_CLOSED = 2,
    TW__GWFOLD_F_STOPPED = 4,
    TW__GWFOLD_F_LOGOUT = 8,
};

/* The fold as of journal seq `seq`, appended to the growing buffer *buf
 * (*cap bytes, *len used; realloc'd).  0 or -ENOMEM. */
int tw__gwfold_save(const tw__gwfold *f, uint64_t seq, uint8_t **buf, size_t *cap, size_t *len);
/* f (initialised for its session) := the serialised fold p[0, len), which
 * must be of f's session and geometry and of journal seq `seq`; every
 * length, index and order checked.  0, or -TW_EFORMAT / -EPROTONOSUPPORT
 * (another version) with err saying what is wrong (f is then the zero
 * fold); -ENOMEM. */
int tw__gwfold_load(tw__gwfold *f, const void *p, size_t len, uint64_t seq, tw_error *err);
/* The folds of a snapshot: its TW_SNAP_SEC_GW_FOLD sections, one per
 * session in session order (f[k]: session k's of cfg, n of them), each of
 * the snapshot's journal seq.  0, or the first error with err naming the
 * section (its index, id and session) and what is wrong; every fold is
 * then the zero fold. */
int tw__gwfold_load_snap(tw__gwfold *const *f, uint32_t n, const tw_trade_config *cfg,
                         const tw_snap *s, tw_error *err);

#endif
