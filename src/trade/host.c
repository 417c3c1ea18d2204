/* The strategy host: the one place a strategy is built from the
 * configuration (the engine's, the strategy process's, the report's
 * replay), the strategy's log lines, and the threads-mode strategy core
 * that feeds it the net cores' events in evseq order.
 *
 * Who owns what: the strategy core's thread owns the tw_strategy, the
 * intents buffer and the consumer side of every inbound ring (and of the
 * control ring); net core k owns session k (gw.c) and the producer side
 * of in[k] and the consumer side of out[k] (whose producer is the
 * strategy core). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trade/engine_internal.h"

void tw__strategy_log(FILE *f, const tw_trade_config *cfg, const char *who,
                      const tw_strategy_log *r)
{
    const char *inst = r->instance < cfg->n_instances ? cfg->instances[r->instance].name : "-";
    switch (r->kind) {
    case TW_LOG_RISK_REJECT:
        fprintf(f, "tickwire trade: %srisk: %s rejected an order of %s (qty %lld)\n", who,
                tw_risk_rule_name(r->rule), inst, (long long)r->qty);
        break;
    case TW_LOG_RISK_CUT:
        fprintf(f, "tickwire trade: %srisk: %s cut an order of %s to %lld\n", who,
                tw_risk_rule_name(r->rule), inst, (long long)r->qty);
        break;
    case TW_LOG_BREACH:
        fprintf(f, "tickwire trade: %srisk: loss limit crossed (%s): %s now %s\n", who,
                r->what ? r->what : "", inst, tw_trading_state_name(r->state));
        break;
    case TW_LOG_STATE:
        fprintf(f, "tickwire trade: %strading state %s (%s)\n", who,
                tw_trading_state_name(r->state), r->what ? r->what : "");
        break;
    case TW_LOG_VENUE_REJECT:
        fprintf(f, "tickwire trade: %svenue rejected order %016llx of %s (103=%d)\n", who,
                (unsigned long long)r->order_id, inst, r->reason);
        break;
    case TW_LOG_BAD_EVENT:
        fprintf(f, "tickwire trade: %sevent ignored: %s\n", who, r->what ? r->what : "");
        break;
    }
}

static void on_log(void *ctx, const tw_strategy_log *r)
{
    tw_trade_engine *e = ctx;
    /* Processes mode: the strategy process logs; the gateway's own
     * strategy only rebuilds the report at the end. */
    if (!e->procs)
        tw__strategy_log(e->log, e->cfg, "", r);
}

static void on_trade(void *ctx, const tw_strategy_trade *t)
{
    tw_trade_engine *e = ctx;
    /* Processes mode: the strategy process writes the rows while it runs;
     * the gateway's strategy only at the end (the report's replay). */
    if (e->trades && (!e->procs || e->done))
        (void)tw_trade_csv_row(e->trades, e->host.s, t);
}

/* ---- building a strategy from the configuration ---------------------------------- */

int tw__host_build(tw__host *h, const tw_trade_config *cfg, const tw_strategy_hooks *hooks,
                   tw_error *err)
{
    tw_strategy_cfg sc;
    tw_trade_config_strategy(cfg, &sc);
    sc.hooks = *hooks;
    size_t bytes = tw_strategy_memsize(&sc);
    tw_error se = {0};
    if (bytes == 0) {
        (void)tw_strategy_init(NULL, 0, &sc, &se);
        return tw__err(err, se.code ? se.code : -EINVAL, "%s: %s", cfg->path, se.msg);
    }
    if (h->mem && h->bytes != bytes)
        return tw__err(err, -EINVAL, "%s: the strategy's size changed", cfg->path);
    if (!h->mem) {
        h->mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
        if (!h->mem)
            return tw__err(err, -ENOMEM, "strategy: out of memory (%zu bytes)", bytes);
        h->bytes = bytes;
    }
    h->s = tw_strategy_init(h->mem, bytes, &sc, &se);
    if (!h->s)
        return tw__err(err, se.code ? se.code : -EINVAL, "%s: %s", cfg->path, se.msg);
    if (!h->out) {
        h->out_cap = tw_strategy_max_out(h->s);
        h->out = calloc(h->out_cap, sizeof(tw_out));
        if (!h->out)
            return tw__err(err, -ENOMEM, "strategy: out of memory");
    }
    return 0;
}

void tw__host_free(tw__host *h)
{
    free(h->out);
    free(h->mem);
    memset(h, 0, sizeof(*h));
}

int tw__host_engine_build(tw_trade_engine *e, tw_error *err)
{
    tw_strategy_hooks hk = {.log = on_log, .trade = on_trade, .ctx = e};
    return tw__host_build(&e->host, e->cfg, &hk, err);
}

/* ---- the strategy core (threads mode) ------------------------------------------------ */

/* Moves the pending intents of the last event into their rings, in order;
 * 1 when all went, 0 when a ring is full (the rest waits). */
static int flush_pending(tw_trade_engine *e)
{
    while (e->pend_off < e->pend_n) {
        const tw_out *o = &e->host.out[e->pend_off];
        if (o->type == TW_OUT_FINISHED) {
            /* Release pairs with the control thread's acquire-load. */
            __atomic_store_n(&e->finished, 1, __ATOMIC_RELEASE);
        } else {
            TW_VERIFY(o->session < e->n_gw);
            tw__gw *g = e->gw[o->session];
            if (tw_ring_enqueue_burst_sp(tw__gw_out(g), o, 1) != 1)
                return 0;
            tw__bell_ring(tw__gw_bell(g));
        }
        e->pend_off++;
    }
    e->pend_off = e->pend_n = 0;
    return 1;
}

/* The events of one ring that are next in number (next_evseq, +1, ...);
 * returns how many it took.  A ring's records are in number order, and
 * every number is in exactly one ring, so taking whichever ring holds the
 * next number is the journal's order (evlog.c). */
static uint32_t take(tw_trade_engine *e, tw_ring *r, int stopped, int64_t now_ns)
{
    const void *v;
    uint32_t n = tw_ring_peek_sc(r, TW_REACTOR_BURST, &v);
    const tw__inrec *recs = v;
    uint32_t k = 0;
    while (k < n && recs[k].evseq == e->next_evseq) {
        /* Numbers are handed out once, in order: one below ours was taken. */
        TW_ASSERT(k + 1 >= n || recs[k + 1].evseq > recs[k].evseq);
        e->snap_jseq = recs[k].jseq;
        const tw_ev *ev = &recs[k++].ev;
        e->next_evseq++;
        if (e->recovered && !e->first_bar_ns && ev->type == TW_EV_BAR) {
            /* The recovery's figures (once a run): monotonic ns, which a
             * supervisor's clock reads the same. */
            e->first_bar_ns = tw_clock_now_ns();
            fprintf(e->log, "tickwire trade: recovery: first new bar %llu at %lld ns (monotonic; "
                    "%.3f ms after the engine's start)\n", (unsigned long long)ev->u.bar.index,
                    (long long)e->first_bar_ns, (double)(e->first_bar_ns - e->created_ns) / 1e6);
            fflush(e->log);
        }
        if (stopped && (ev->type == TW_EV_BAR || ev->type == TW_EV_BARRIER)) {
            continue; /* TERM: no new decisions */
        }
        size_t m = tw_strategy_on_event(e->host.s, ev, e->host.out, e->host.out_cap);
        uint64_t t = tw_tsc_read();
        for (size_t i = 0; i < m; i++)
            e->host.out[i].tsc_decision = t;
        e->pend_off = 0;
        e->pend_n = m;
        const int flushed = flush_pending(e);
        /* (An event the journal could not take has no seq: the
         * snapshot waits for one that has.) */
        if (e->snap_jseq && tw__snapper_due(&e->snap, e->next_evseq, now_ns))
            /* The intents of the last event still on their way to the rings. */
            tw__snapper_take_at(&e->snap, e->host.s, e->next_evseq, e->snap_jseq,
                                e->host.out + e->pend_off, (uint32_t)(e->pend_n - e->pend_off),
                                now_ns);
        if (!flushed)
            break;
    }
    tw_ring_release_sc(r, k);
    return k;
}

/* 1 when the head of r is the event numbered next_evseq. */
static int next_ready(tw_trade_engine *e, tw_ring *r)
{
    const void *v;
    uint32_t n = tw_ring_peek_sc(r, 1, &v);
    int ready = n && ((const tw__inrec *)v)->evseq == e->next_evseq;
    tw_ring_release_sc(r, 0);
    return ready;
}

unsigned tw__strategy_poll(void *arg, tw_reactor_now *now)
{
    tw_trade_engine *e = arg;
    unsigned work = 0;
    if (e->pend_n && !flush_pending(e))
        return 0; /* an outbound ring is full: its net core must drain it */
    /* Acquire pairs with the control thread's release-store of phase. */
    int stopped = __atomic_load_n(&e->phase, __ATOMIC_ACQUIRE) == TW__PH_STOPPING;
    /* Threads: at most four passes a turn (the strategy's own loop has
     * other things to look at).  Inline: every event the sessions' polls
     * of this turn pushed, before the loop reads the wire again.  With a
     * cap here, a turn that parsed more events than the cap takes (one
     * rx burst of market data holds hundreds) left the rest in the ring,
     * the next turn's burst was larger still, and at 500,000 ticks a
     * second the ring filled and held the venue back, though the loop
     * had the time to take them all. */
    const int inline_loop = e->cfg->engine.strategy == TW_TRADE_STRATEGY_INLINE;
    for (int pass = 0; (inline_loop || pass < 4) && e->pend_n == 0; pass++) {
        unsigned got = take(e, e->ctl, stopped, now->ns);
        for (uint32_t k = 0; k < e->n_gw && e->pend_n == 0; k++)
            got += take(e, tw__gw_in(e->gw[k]), stopped, now->ns);
        work += got;
        if (!got)
            break; /* the next number is in no ring yet (on its way) */
    }
    if (stopped && e->pend_n == 0 && !e->strategy_stopped) {
        /* Release pairs with the net cores' acquire-load: every intent
         * written before this store is in its ring. */
        __atomic_store_n(&e->strategy_stopped, 1, __ATOMIC_RELEASE);
    }
    if (work) {
        tw__bell_wake(&e->strat_bell);
        __atomic_store_n(&e->strategy_idle, 0, __ATOMIC_RELAXED);
        return work;
    }
    tw__bell_sleep(&e->strat_bell);
    /* Work only if the next number is at a ring's head: a later one alone
     * (the next on its way from another net core, or in its spill) is
     * waited for in ppoll: its producer rings the bell after its enqueue. */
    int ready = next_ready(e, e->ctl);
    for (uint32_t k = 0; k < e->n_gw && !ready; k++)
        ready = next_ready(e, tw__gw_in(e->gw[k]));
    if (ready)
        return 1;
    /* Relaxed: a hint for the control thread's drain, which also checks
     * the rings. */
    __atomic_store_n(&e->strategy_idle, e->pend_n == 0, __ATOMIC_RELAXED);
    return 0;
}

/* strategy = inline: the strategy's poll on the net cores' one loop,
 * after every session's poll (rx .. parse .. in[k]), then each session's
 * sending half (out[k] .. build .. tx), so a decision leaves in the turn,
 * the wake-up, that brought its bar. */
unsigned tw__inline_poll(void *arg, tw_reactor_now *now)
{
    tw_trade_engine *e = arg;
    TW_ASSERT(e->cfg->engine.strategy == TW_TRADE_STRATEGY_INLINE && !e->started_s);
    unsigned work = tw__strategy_poll(e, now);
    if (work)
        for (uint32_t k = 0; k < e->n_gw; k++)
            work += tw__gw_send(e->gw[k], now);
    return work;
}

_Static_assert(TW_TRADE_INLINE_MAX_SESSIONS <= TW_REACTOR_MAX_FDS &&
               TW_TRADE_INLINE_MAX_SESSIONS + 1 <= TW_REACTOR_MAX_POLLS &&
               TW_TRADE_INLINE_MAX_SESSIONS <= TW_REACTOR_MAX_TIMERS,
               "strategy = inline: one loop holds every session and the strategy");
