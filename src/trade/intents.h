/* The intents already sent, as a recovery finds them: a multiset of
 * intent identities, one implementation for both recoveries (recover.c,
 * the engine's after a crash; strategy_proc.c, a strategy process's
 * after its predecessor died).
 *
 * An intent's identity is its type and
 *   - ORDER, CANCEL: the order id (unique across sessions);
 *   - BARRIER_ACK: the barrier's ref, per session;
 *   - LOGOUT: the session;
 *   - FINISHED: nothing else (once a run; written on session 0).
 * Each identity counts its OUT records (what the journal says was
 * handled) and, for orders and cancels, its messages in the FIX stores
 * (stored before it goes out, journaled after: a crash between the two
 * leaves it in the store only).  A replay takes the intents it decides
 * again off, one each, in order. */
#ifndef TW_TRADE_INTENTS_H
#define TW_TRADE_INTENTS_H

#include <stdint.h>

#include "tickwire/journal.h"
#include "tickwire/strategy.h"

/* What a decided intent was (tw__intents_take). */
typedef enum tw__intent_seen {
    TW__INTENT_NEW = 0,    /* never sent: to send */
    TW__INTENT_SENT = 1,   /* an OUT record has it: not again */
    TW__INTENT_STORED = 2, /* a FIX store alone has it: sent (the store resends it);
                              the caller journals it as handled */
} tw__intent_seen;

typedef struct tw__intent_ent {
    uint64_t id;      /* order id, ref, or 0 */
    uint32_t kind;    /* type | session << 8; 0: an empty slot */
    uint32_t n_out;   /* OUT records */
    uint32_t n_store; /* messages in the stores */
    uint32_t taken;   /* decided again so far */
} tw__intent_ent;

typedef struct tw__intents {
    tw__intent_ent *t;
    uint64_t mask; /* slots - 1 */
    uint64_t n;    /* identities */
} tw__intents;

/* Room for about expect identities (it grows).  0 or -ENOMEM. */
int tw__intents_init(tw__intents *s, uint64_t expect);
void tw__intents_free(tw__intents *s);
/* An OUT record (o: its payload).  0 or -ENOMEM. */
int tw__intents_add_out(tw__intents *s, const tw_out *o);
/* The journal's OUT records of seq below end_seq among v[0, n).  0 or -ENOMEM. */
int tw__intents_add_records(tw__intents *s, const tw_journal_rec *v, uint64_t n,
                            uint64_t end_seq);
/* A FIX store's NewOrderSingle (kind 'T') or OrderCancelRequest ('C') of
 * order id.  0 or -ENOMEM. */
int tw__intents_add_stored(tw__intents *s, char kind, uint64_t id);
/* A decided intent, taken off. */
tw__intent_seen tw__intents_take(tw__intents *s, const tw_out *o);
/* The OUT records no replayed intent took, of the types whose bits
 * (1u << type) are in types (~0u: all). */
uint64_t tw__intents_left(const tw__intents *s, uint32_t types);

/* Every ORDER and CANCEL identity for which before(ctx, type, id) is
 * non-zero counted as decided again (a recovery from a snapshot: what the
 * strategy decided before it).  Call after taking what the snapshot may
 * not have sent. */
void tw__intents_settle(tw__intents *s, int (*before)(void *ctx, uint32_t type, uint64_t id),
                        void *ctx);

/* A strategy loaded from a snapshot (its state as loaded): fn(ctx, o) on
 * each intent it had decided and maybe not sent (its open orders, the
 * cancels written for them, the sessions' LOGOUTs), to decide them again
 * (take, and send what is new).  0 or fn's error. */
int tw__intents_of_state(const tw_strategy *s, int (*fn)(void *ctx, const tw_out *o), void *ctx);
/* Then: every order and cancel it had decided, settled (tw__intents_settle). */
void tw__intents_settle_state(tw__intents *sent, const tw_strategy *s);

/* Bits for tw__intents_left. */
#define TW__INTENT_ORDERS ((1u << TW_OUT_ORDER) | (1u << TW_OUT_CANCEL))
#define TW__INTENT_ALL (~0u)

#endif
