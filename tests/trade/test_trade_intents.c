/* The intents already sent (src/trade/intents.h), as both recoveries fill
 * and ask it: the engine's after a crash (every OUT record of the journal
 * at once, then the FIX stores' orders and cancels) and a strategy
 * process's (the OUT records below resume_end, burst by burst as its
 * reader hands them over).  On the same records both answer the same for
 * every decided intent, FINISHED included, and leave the same records
 * untaken; the identities are what intents.h says (per session for acks
 * and logouts, across sessions for orders, cancels and FINISHED); a
 * store-only order is STORED once; OUT records at or after resume_end are
 * not the strategy process's; the set grows past its first size. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trade/engine_internal.h"
#include "trade/intents.h"
#include "tw_check.h"

#define MAXR 8192

static tw_journal_rec recs[MAXR];
static uint64_t n_recs;

static void put(uint32_t kind, const void *payload)
{
    tw_journal_rec *r = &recs[n_recs];
    memset(r, 0, sizeof(*r));
    r->tag = TW_JOURNAL_REC_MAGIC | kind;
    r->seq = ++n_recs;
    memcpy(r->payload, payload, sizeof(tw_out));
}

static tw_out out_of(uint8_t type, uint16_t session, uint64_t id)
{
    tw_out o;
    memset(&o, 0, sizeof(o));
    o.type = type;
    o.session = session;
    if (type == TW_OUT_BARRIER_ACK)
        o.ref = id;
    else
        o.order_id = id;
    return o;
}

static void put_out(uint8_t type, uint16_t session, uint64_t id)
{
    tw_out o = out_of(type, session, id);
    put(TW_JOURNAL_OUT, &o);
}

static void put_ev(void)
{
    uint8_t z[TW_JOURNAL_PAYLOAD] = {0};
    put(TW_JOURNAL_EV, z);
}

/* The engine's way (recover.c): all records, then the stores. */
static void fill_engine(tw__intents *s, uint64_t end, const uint64_t *stored, size_t n_stored)
{
    CHECK_EQ(tw__intents_init(s, 16), 0);
    CHECK_EQ(tw__intents_add_records(s, recs, end, UINT64_MAX), 0);
    for (size_t i = 0; i < n_stored; i++)
        CHECK_EQ(tw__intents_add_stored(s, 'T', stored[i]), 0);
}

/* The strategy process's way (strategy_proc.c): record by record in
 * bursts of `burst`, below resume_end; its first size is 1024 slots. */
static void fill_proc(tw__intents *s, uint64_t resume_end, uint64_t burst)
{
    CHECK_EQ(tw__intents_init(s, 1024), 0);
    for (uint64_t i = 0; i < n_recs; i += burst) {
        uint64_t k = n_recs - i < burst ? n_recs - i : burst;
        for (uint64_t j = 0; j < k; j++)
            CHECK_EQ(tw__intents_add_records(s, &recs[i + j], 1, resume_end), 0);
    }
}

static void test_rules(void)
{
    n_recs = 0;
    uint8_t meta[TW_JOURNAL_PAYLOAD] = {0};
    put(TW__JR_META, meta);
    put_ev();
    put_out(TW_OUT_ORDER, 1, 100);        /* order 100 on session 1 */
    put_out(TW_OUT_BARRIER_ACK, 1, 7);    /* ack of barrier 7, session 1 */
    put_ev();
    put_out(TW_OUT_BARRIER_ACK, 1, 7);    /* asked again after a reconnect: acked again */
    put_out(TW_OUT_CANCEL, 1, 100);
    put_out(TW_OUT_LOGOUT, 0, 0);
    put_out(TW_OUT_FINISHED, 0, 0xabcdef); /* the digest rides in order_id: not the identity */
    uint8_t stop[TW_JOURNAL_PAYLOAD] = {0};
    put(TW__JR_STOP, stop);
    uint64_t end = n_recs + 1; /* resume_end: every record so far */

    tw__intents a, b;
    const uint64_t stored[] = {100, 200}; /* 200: in the store, never journaled */
    fill_engine(&a, n_recs, stored, 2);
    fill_proc(&b, end, 3);

    /* What a replay decides again, in order, and what each is. */
    struct {
        tw_out o;
        tw__intent_seen engine, proc;
    } want[] = {
        /* the session is not part of an order's identity */
        {out_of(TW_OUT_ORDER, 0, 100), TW__INTENT_SENT, TW__INTENT_SENT},
        {out_of(TW_OUT_BARRIER_ACK, 0, 7), TW__INTENT_NEW, TW__INTENT_NEW}, /* another session's */
        {out_of(TW_OUT_BARRIER_ACK, 1, 7), TW__INTENT_SENT, TW__INTENT_SENT},
        {out_of(TW_OUT_BARRIER_ACK, 1, 7), TW__INTENT_SENT, TW__INTENT_SENT},
        {out_of(TW_OUT_BARRIER_ACK, 1, 7), TW__INTENT_NEW, TW__INTENT_NEW}, /* a third: new */
        {out_of(TW_OUT_CANCEL, 1, 100), TW__INTENT_SENT, TW__INTENT_SENT},
        {out_of(TW_OUT_ORDER, 1, 200), TW__INTENT_STORED, TW__INTENT_NEW},  /* the store alone */
        {out_of(TW_OUT_ORDER, 1, 200), TW__INTENT_NEW, TW__INTENT_NEW},
        {out_of(TW_OUT_LOGOUT, 1, 0), TW__INTENT_NEW, TW__INTENT_NEW},
        {out_of(TW_OUT_LOGOUT, 0, 0), TW__INTENT_SENT, TW__INTENT_SENT},
        /* FINISHED as the strategy writes it (session 0xffff, digest 0):
         * the one OUT record either way. */
        {out_of(TW_OUT_FINISHED, TW_OUT_SESSION_NONE, 0), TW__INTENT_SENT, TW__INTENT_SENT},
        {out_of(TW_OUT_FINISHED, 0, 0), TW__INTENT_NEW, TW__INTENT_NEW},
        {out_of(TW_OUT_ORDER, 0, 300), TW__INTENT_NEW, TW__INTENT_NEW},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        tw__intent_seen x = tw__intents_take(&a, &want[i].o), y = tw__intents_take(&b, &want[i].o);
        CHECKF(x == want[i].engine, "intent %zu: engine %d, expected %d", i, x, want[i].engine);
        CHECKF(y == want[i].proc, "intent %zu: strategy process %d, expected %d", i, y,
               want[i].proc);
        /* Without stores, the two answer alike. */
        if (want[i].engine != TW__INTENT_STORED && want[i].proc != TW__INTENT_STORED)
            CHECK_EQ(x == TW__INTENT_NEW, y == TW__INTENT_NEW);
    }
    CHECK_EQ(tw__intents_left(&a, TW__INTENT_ALL), 0);
    CHECK_EQ(tw__intents_left(&b, TW__INTENT_ALL), 0);
    tw__intents_free(&a);
    tw__intents_free(&b);

    /* Nothing decided again: every OUT record is left, orders and
     * cancels among them; the strategy process's resume_end cuts. */
    fill_engine(&a, n_recs, NULL, 0);
    fill_proc(&b, 5, 1); /* records 1..4: META, EV, ORDER 100, ACK 7 */
    CHECK_EQ(tw__intents_left(&a, TW__INTENT_ALL), 6);
    CHECK_EQ(tw__intents_left(&a, TW__INTENT_ORDERS), 2);
    CHECK_EQ(tw__intents_left(&b, TW__INTENT_ALL), 2);
    CHECK_EQ(tw__intents_left(&b, TW__INTENT_ORDERS), 1);
    tw_out f = out_of(TW_OUT_FINISHED, 0, 0);
    CHECK_EQ(tw__intents_take(&a, &f), TW__INTENT_SENT);
    CHECK_EQ(tw__intents_take(&b, &f), TW__INTENT_NEW); /* after resume_end: not its */
    tw__intents_free(&a);
    tw__intents_free(&b);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static tw_out random_out(void)
{
    static const uint8_t types[] = {TW_OUT_ORDER, TW_OUT_CANCEL, TW_OUT_BARRIER_ACK,
                                    TW_OUT_LOGOUT, TW_OUT_FINISHED};
    uint8_t t = types[next() % 5];
    return out_of(t, (uint16_t)(next() % 3), next() % 3000);
}

/* Many records, duplicates among them, more identities than the first
 * size: the two ways answer alike all along. */
static void test_random(void)
{
    for (int round = 0; round < 20; round++) {
        n_recs = 0;
        uint8_t meta[TW_JOURNAL_PAYLOAD] = {0};
        put(TW__JR_META, meta);
        uint64_t n = 1000 + next() % (MAXR - 1100);
        while (n_recs < n) {
            if (next() % 4 == 0) {
                put_ev();
            } else {
                tw_out o = random_out();
                put(TW_JOURNAL_OUT, &o);
            }
        }
        tw__intents a, b;
        fill_engine(&a, n_recs, NULL, 0);
        fill_proc(&b, n_recs + 1, 1 + next() % 64);
        CHECK_EQ(tw__intents_left(&a, TW__INTENT_ALL), tw__intents_left(&b, TW__INTENT_ALL));
        uint64_t diff = 0;
        /* Take the records' own intents (each once), and random others. */
        for (uint64_t i = 0; i < n_recs; i++) {
            tw_out o;
            if (tw_journal_rec_kind(&recs[i]) == TW_JOURNAL_OUT && next() % 8 != 0)
                memcpy(&o, recs[i].payload, sizeof(o));
            else
                o = random_out();
            diff += tw__intents_take(&a, &o) != tw__intents_take(&b, &o);
        }
        CHECK_EQ(diff, 0);
        CHECK_EQ(tw__intents_left(&a, TW__INTENT_ALL), tw__intents_left(&b, TW__INTENT_ALL));
        CHECK_EQ(tw__intents_left(&a, TW__INTENT_ORDERS),
                 tw__intents_left(&b, TW__INTENT_ORDERS));
        tw__intents_free(&a);
        tw__intents_free(&b);
    }
}

int main(void)
{
    test_rules();
    test_random();
    if (tw_check_failures) {
        fprintf(stderr, "trade_intents: %d check(s) failed\n", tw_check_failures);
        return 1;
    }
    printf("trade_intents: ok\n");
    return 0;
}
