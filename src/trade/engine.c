/* The live engine (trade_engine.h): its set-up, the strategy core, and the
 * control loop that acts on requests and follows the ending.
 *
 * Who owns what: the strategy core's thread owns the tw_strategy, the
 * intents buffer and the consumer side of every inbound ring (and of the
 * control ring); net core k owns session k (gateway.c) and the producer
 * side of in[k] and the consumer side of out[k] (whose producer is the
 * strategy core); the control thread owns the control ring's producer
 * side and the phase.  After the threads are joined, the control thread
 * reads everything (the report). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "trade/engine_internal.h"

#define CTL_SLOTS 64
#define STEP_SLEEP_NS 2000000ll     /* the control loop's nap between steps */
#define DRAIN_WAIT_NS 2000000000ll  /* the strategy's last events, at most */

/* ---- doorbell ------------------------------------------------------------------ */

int tw__bell_init(tw__bell *b, int enabled)
{
    b->sleeping = b->rung = 0;
    b->fd = -1;
    if (!enabled)
        return 0;
    b->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return b->fd < 0 ? -errno : 0;
}

void tw__bell_close(tw__bell *b)
{
    if (b->fd >= 0)
        close(b->fd);
    b->fd = -1;
}

void tw__bell_ring(tw__bell *b)
{
    if (b->fd < 0)
        return;
    /* Pairs with the fence in tw__bell_sleep: our enqueue (before this
     * fence) or the consumer's sleeping flag (before its fence) is seen by
     * the other side. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&b->sleeping, __ATOMIC_RELAXED) &&
        !__atomic_exchange_n(&b->rung, 1, __ATOMIC_ACQ_REL)) {
        uint64_t one = 1;
        ssize_t n = write(b->fd, &one, sizeof(one));
        (void)n; /* EAGAIN: the counter is full, i.e. already readable */
    }
}

void tw__bell_sleep(tw__bell *b)
{
    if (b->fd < 0 || __atomic_load_n(&b->sleeping, __ATOMIC_RELAXED))
        return;
    /* Once per idle spell: clear what an earlier ring left readable, or
     * ppoll would return at once from now on. */
    uint64_t v;
    ssize_t n = read(b->fd, &v, sizeof(v));
    (void)n;
    __atomic_store_n(&b->rung, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&b->sleeping, 1, __ATOMIC_RELAXED);
    /* Pairs with the producer's fence in tw__bell_ring (see there). */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void tw__bell_wake(tw__bell *b)
{
    if (b->fd >= 0 && __atomic_load_n(&b->sleeping, __ATOMIC_RELAXED))
        __atomic_store_n(&b->sleeping, 0, __ATOMIC_RELAXED);
}

/* ---- hooks of the strategy ------------------------------------------------------- */

static void on_log(void *ctx, const tw_strategy_log *r)
{
    tw_trade_engine *e = ctx;
    const char *inst = r->instance < e->cfg->n_instances ? e->cfg->instances[r->instance].name : "-";
    switch (r->kind) {
    case TW_LOG_RISK_REJECT:
        fprintf(e->log, "tickwire trade: risk: %s rejected an order of %s (qty %lld)\n",
                tw_risk_rule_name(r->rule), inst, (long long)r->qty);
        break;
    case TW_LOG_RISK_CUT:
        fprintf(e->log, "tickwire trade: risk: %s cut an order of %s to %lld\n",
                tw_risk_rule_name(r->rule), inst, (long long)r->qty);
        break;
    case TW_LOG_BREACH:
        fprintf(e->log, "tickwire trade: risk: loss limit crossed (%s): %s now %s\n",
                r->what ? r->what : "", inst, tw_trading_state_name(r->state));
        break;
    case TW_LOG_STATE:
        fprintf(e->log, "tickwire trade: trading state %s (%s)\n",
                tw_trading_state_name(r->state), r->what ? r->what : "");
        break;
    case TW_LOG_VENUE_REJECT:
        fprintf(e->log, "tickwire trade: venue rejected order %016llx of %s (103=%d)\n",
                (unsigned long long)r->order_id, inst, r->reason);
        break;
    case TW_LOG_BAD_EVENT:
        fprintf(e->log, "tickwire trade: event ignored: %s\n", r->what ? r->what : "");
        break;
    }
}

static void on_trade(void *ctx, const tw_strategy_trade *t)
{
    tw_trade_engine *e = ctx;
    if (e->trades)
        (void)tw_trade_csv_row(e->trades, e->strategy, t);
}

/* ---- the strategy core -------------------------------------------------------------- */

/* Moves the pending intents of the last event into their rings, in order;
 * 1 when all went, 0 when a ring is full (the rest waits). */
static int flush_pending(tw_trade_engine *e)
{
    while (e->pend_off < e->pend_n) {
        const tw_out *o = &e->out_buf[e->pend_off];
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
 * next number is the journal's order (recover.c). */
static uint32_t take(tw_trade_engine *e, tw_ring *r, int stopped)
{
    const void *v;
    uint32_t n = tw_ring_peek_sc(r, TW_REACTOR_BURST, &v);
    const tw__inrec *recs = v;
    uint32_t k = 0;
    while (k < n && recs[k].evseq == e->next_evseq) {
        /* Numbers are handed out once, in order: one below ours was taken. */
        TW_ASSERT(k + 1 >= n || recs[k + 1].evseq > recs[k].evseq);
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
            e->events_dropped_stop++; /* TERM: no new decisions */
            continue;
        }
        size_t m = tw_strategy_on_event(e->strategy, ev, e->out_buf, e->out_cap);
        uint64_t t = tw_tsc_read();
        for (size_t i = 0; i < m; i++)
            e->out_buf[i].tsc_decision = t;
        e->pend_off = 0;
        e->pend_n = m;
        if (!flush_pending(e))
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

static unsigned strategy_poll(void *arg, tw_reactor_now *now)
{
    tw_trade_engine *e = arg;
    (void)now;
    unsigned work = 0;
    if (e->pend_n && !flush_pending(e))
        return 0; /* an outbound ring is full: its net core must drain it */
    /* Acquire pairs with the control thread's release-store of phase. */
    int stopped = __atomic_load_n(&e->phase, __ATOMIC_ACQUIRE) == TW__PH_STOPPING;
    for (int pass = 0; pass < 4 && e->pend_n == 0; pass++) {
        unsigned got = take(e, e->ctl, stopped);
        for (uint32_t k = 0; k < e->n_gw && e->pend_n == 0; k++)
            got += take(e, tw__gw_in(e->gw[k]), stopped);
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
static unsigned inline_poll(void *arg, tw_reactor_now *now)
{
    tw_trade_engine *e = arg;
    TW_ASSERT(e->cfg->engine.strategy == TW_TRADE_STRATEGY_INLINE && !e->started_s);
    unsigned work = strategy_poll(e, now);
    if (work)
        for (uint32_t k = 0; k < e->n_gw; k++)
            work += tw__gw_send(e->gw[k], now);
    return work;
}

_Static_assert(TW_TRADE_INLINE_MAX_SESSIONS <= TW_REACTOR_MAX_FDS &&
               TW_TRADE_INLINE_MAX_SESSIONS + 1 <= TW_REACTOR_MAX_POLLS &&
               TW_TRADE_INLINE_MAX_SESSIONS <= TW_REACTOR_MAX_TIMERS,
               "strategy = inline: one loop holds every session and the strategy");

/* ---- set-up ---------------------------------------------------------------------------- */

static int cpu_of(const tw_trade_config *cfg, uint32_t i)
{
    return i < cfg->engine.n_cpus ? (int)cfg->engine.cpus[i] : -1;
}

int tw_trade_engine_create(tw_trade_engine **out, const tw_trade_config *cfg,
                           const tw_trade_engine_opts *opts, tw_error *err)
{
    *out = NULL;
    if (cfg->engine.mode == TW_TRADE_PROCESSES)
        return tw__err(err, -ENOTSUP, "%s: mode = processes (gateway and strategy as two "
                       "processes) is not built yet: use mode = threads", cfg->path);
    tw_trade_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return tw__err(err, -ENOMEM, "out of memory");
    e->created_ns = tw_clock_now_ns();
    e->cfg = cfg;
    if (opts)
        e->opts = *opts;
    if (!e->opts.latency_samples)
        e->opts.latency_samples = 65536;
    if (!e->opts.cancel_wait_ms)
        e->opts.cancel_wait_ms = 1000;
    if (!e->opts.end_wait_ms)
        e->opts.end_wait_ms = 5000;
    e->run_id = e->opts.run_id ? e->opts.run_id : (uint64_t)(tw_clock_epoch_ns() / 1000000);
    e->run_id &= 0xffffffffffffull; /* 12 hex digits in the ClOrdID */
    e->strat_bell.fd = -1;
    e->log = stderr;
    int rc;
    if (cfg->engine.log[0]) {
        e->log = fopen(cfg->engine.log, "a");
        if (!e->log) {
            rc = -errno;
            e->log = stderr;
            tw_trade_engine_destroy(e);
            return tw__err(err, rc, "%s: %s", cfg->engine.log, strerror(-rc));
        }
        e->own_log = 1;
    }
    if (cfg->engine.trades[0]) {
        e->trades = fopen(cfg->engine.trades, "w");
        e->trades_buf = malloc(1u << 20);
        if (!e->trades || !e->trades_buf) {
            rc = e->trades ? -ENOMEM : -errno;
            tw_trade_engine_destroy(e);
            return tw__err(err, rc, "%s: %s", cfg->engine.trades, strerror(-rc));
        }
        setvbuf(e->trades, e->trades_buf, _IOFBF, 1u << 20);
        if (tw_trade_csv_header(e->trades) != 0) {
            tw_trade_engine_destroy(e);
            return tw__err(err, -EIO, "%s: write error", cfg->engine.trades);
        }
    }
    /* The report must be writable before we trade. */
    {
        char tmp[TW_TRADE_STR_MAX + 8];
        snprintf(tmp, sizeof(tmp), "%s.tmp", cfg->engine.report);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            rc = -errno;
            tw_trade_engine_destroy(e);
            return tw__err(err, rc, "report %s: %s", cfg->engine.report, strerror(-rc));
        }
        close(fd);
        unlink(tmp);
    }
    /* The strategy. */
    tw_strategy_cfg sc;
    tw_trade_config_strategy(cfg, &sc);
    sc.hooks = (tw_strategy_hooks){.log = on_log, .trade = on_trade, .ctx = e};
    size_t bytes = tw_strategy_memsize(&sc);
    tw_error se = {0};
    if (bytes == 0) {
        (void)tw_strategy_init(NULL, 0, &sc, &se);
        tw_trade_engine_destroy(e);
        return tw__err(err, se.code ? se.code : -EINVAL, "%s: %s", cfg->path, se.msg);
    }
    e->strategy_mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!e->strategy_mem) {
        tw_trade_engine_destroy(e);
        return tw__err(err, -ENOMEM, "strategy: out of memory (%zu bytes)", bytes);
    }
    e->strategy = tw_strategy_init(e->strategy_mem, bytes, &sc, &se);
    if (!e->strategy) {
        tw_trade_engine_destroy(e);
        return tw__err(err, se.code ? se.code : -EINVAL, "%s: %s", cfg->path, se.msg);
    }
    e->out_cap = tw_strategy_max_out(e->strategy);
    e->out_buf = calloc(e->out_cap, sizeof(tw_out));
    size_t cb = tw_ring_memsize(CTL_SLOTS, sizeof(tw__inrec));
    e->ctl = aligned_alloc(64, (cb + 63) & ~(size_t)63);
    e->gw = calloc(cfg->n_sessions, sizeof(*e->gw));
    if (!e->out_buf || !e->ctl || !e->gw || tw_ring_init(e->ctl, CTL_SLOTS, sizeof(tw__inrec)) != 0) {
        tw_trade_engine_destroy(e);
        return tw__err(err, -ENOMEM, "out of memory");
    }
    int busy = cfg->engine.busy_poll != 0;
    int inl = cfg->engine.strategy == TW_TRADE_STRATEGY_INLINE;
    /* inline: the strategy's producers are its own thread; the control
     * thread's requests (KILL, a phase) are seen within the loop's
     * longest wait (1 ms; the control loop itself steps every 2 ms). */
    if ((rc = tw__bell_init(&e->strat_bell, !busy && !inl)) != 0) {
        tw_trade_engine_destroy(e);
        return tw__err(err, rc, "eventfd: %s", strerror(-rc));
    }
    /* Sessions. */
    for (uint32_t i = 0; i < cfg->n_sessions; i++) {
        if ((rc = tw__gw_create(&e->gw[i], e, i, err)) != 0) {
            tw_trade_engine_destroy(e);
            return rc;
        }
        e->n_gw++;
    }
    /* The journal; after a crash, the replay (recover.c). */
    if ((rc = tw__journal_start(e, err)) != 0) {
        tw_trade_engine_destroy(e);
        return rc;
    }
    /* The cores: net cores on their CPUs, then the strategy. */
    tw_reactor_opts ro = {.mode = busy ? TW_REACTOR_BUSY : TW_REACTOR_YIELD};
    tw_reactor_init(&e->rn, &ro);
    tw_reactor_init(&e->rs, &ro);
    if (inl && e->n_gw > TW_TRADE_INLINE_MAX_SESSIONS) {
        tw_trade_engine_destroy(e);
        return tw__err(err, -ENOSPC, "strategy = inline: at most %d sessions",
                       TW_TRADE_INLINE_MAX_SESSIONS);
    }
    for (uint32_t i = 0; i < e->n_gw; i++) {
        tw__gw *g = e->gw[i];
        /* inline: every session on the first loop. */
        int c = inl && i ? 0 : tw_reactor_add_core(&e->rn, cpu_of(cfg, i));
        if (c < 0 || tw_reactor_add_poll(&e->rn, c, tw__gw_poll, g) != 0 ||
            tw_reactor_add_timer(&e->rn, c, 10000000, tw__gw_timer, g) != 0 ||
            (tw__gw_fd(g) >= 0 && tw_reactor_add_fd(&e->rn, c, tw__gw_fd(g)) != 0) ||
            (tw__gw_bell(g)->fd >= 0 && tw_reactor_add_fd(&e->rn, c, tw__gw_bell(g)->fd) != 0)) {
            tw_trade_engine_destroy(e);
            return tw__err(err, -ENOSPC, "net core for session %s: more sessions than the "
                           "reactor's %d cores", cfg->sessions[i].name, TW_REACTOR_MAX_CORES);
        }
        if (e->opts.manual_net)
            (void)tw_reactor_set_mode(&e->rn, c, TW_REACTOR_BUSY);
    }
    if (inl) {
        if (tw_reactor_add_poll(&e->rn, 0, inline_poll, e) != 0) {
            tw_trade_engine_destroy(e);
            return tw__err(err, -ENOSPC, "strategy = inline: cannot set it up");
        }
        *out = e;
        return 0;
    }
    int c = tw_reactor_add_core(&e->rs, cpu_of(cfg, e->n_gw));
    if (c < 0 || tw_reactor_add_poll(&e->rs, c, strategy_poll, e) != 0 ||
        (e->strat_bell.fd >= 0 && tw_reactor_add_fd(&e->rs, c, e->strat_bell.fd) != 0)) {
        tw_trade_engine_destroy(e);
        return tw__err(err, -ENOSPC, "strategy core: cannot set it up");
    }
    *out = e;
    return 0;
}

int tw_trade_engine_start(tw_trade_engine *e, tw_error *err)
{
    int rc;
    if (e->cfg->engine.strategy != TW_TRADE_STRATEGY_INLINE) {
        if ((rc = tw_reactor_start(&e->rs, err)) != 0)
            return rc;
        e->started_s = 1;
    }
    if (!e->opts.manual_net) {
        rc = tw_reactor_start(&e->rn, err);
        if (rc != 0) {
            if (e->started_s) {
                tw_reactor_stop(&e->rs);
                tw_reactor_join(&e->rs);
                e->started_s = 0;
            }
            return rc;
        }
        e->started_n = 1;
    }
    e->phase_since_ns = tw_clock_now_ns();
    return 0;
}

void tw_trade_engine_request(tw_trade_engine *e, tw_trade_request req)
{
    /* Relaxed stores: the control step reads them; nothing else is
     * published with them (signal-handler safe). */
    if (req == TW_TRADE_REQ_TERM)
        __atomic_store_n(&e->req_term, 1, __ATOMIC_RELAXED);
    else if (req == TW_TRADE_REQ_KILL)
        __atomic_add_fetch(&e->req_kill, 1, __ATOMIC_RELAXED);
}

unsigned tw_trade_engine_poll(tw_trade_engine *e)
{
    if (!e->opts.manual_net || e->done)
        return 0;
    unsigned work = 0;
    for (int i = 0; i < e->rn.ncores; i++)
        work += tw_reactor_turn(&e->rn, i);
    return work;
}

/* ---- control ------------------------------------------------------------------------------ */

static void set_phase(tw_trade_engine *e, uint32_t ph, int64_t now)
{
    /* Release pairs with the cores' acquire-loads of phase. */
    __atomic_store_n(&e->phase, ph, __ATOMIC_RELEASE);
    e->phase_since_ns = now;
    tw__bell_ring(&e->strat_bell);
    for (uint32_t i = 0; i < e->n_gw; i++)
        tw__bell_ring(tw__gw_bell(e->gw[i]));
}

static int rings_empty(const tw_trade_engine *e)
{
    if (tw_ring_count(e->ctl))
        return 0;
    for (uint32_t i = 0; i < e->n_gw; i++)
        if (tw_ring_count(tw__gw_in(e->gw[i])))
            return 0;
    return 1;
}

static int finish(tw_trade_engine *e, tw_error *err)
{
    if (e->started_n) {
        tw_reactor_stop(&e->rn);
        tw_reactor_join(&e->rn);
        e->started_n = 0;
    }
    /* The strategy takes what the net cores put in its rings last (the
     * final fills, the sessions going down). */
    int64_t t0 = tw_clock_now_ns();
    while (e->started_s && tw_clock_now_ns() - t0 < DRAIN_WAIT_NS &&
           !(rings_empty(e) && __atomic_load_n(&e->strategy_idle, __ATOMIC_RELAXED))) {
        tw__bell_ring(&e->strat_bell);
        tw_clock_sleep_ns(200000);
    }
    if (e->started_s) {
        tw_reactor_stop(&e->rs);
        tw_reactor_join(&e->rs);
        e->started_s = 0;
    }
    if (e->cfg->engine.strategy == TW_TRADE_STRATEGY_INLINE) {
        /* The net cores' loop is over (joined, or the caller's): this
         * thread owns the strategy now and takes what is left. */
        tw_reactor_now now = {.tsc = tw_tsc_read()};
        while (tw_clock_now_ns() - t0 < DRAIN_WAIT_NS && strategy_poll(e, &now))
            ;
    }
    __atomic_store_n(&e->phase, TW__PH_DONE, __ATOMIC_RELEASE);
    e->done = 1;
    /* The run ended (the venue's end, or TERM: logged out): the journal
     * is done, and the next start is a new run.  Only a crash leaves a
     * journal without END, which the next start resumes. */
    tw__journal_end(e, 1);
    int rc = 0;
    if (e->trades && fflush(e->trades) != 0)
        rc = tw__err(err, -EIO, "%s: write error", e->cfg->engine.trades);
    tw_trade_session_stats *ss = calloc(e->n_gw ? e->n_gw : 1, sizeof(*ss));
    if (!ss)
        return tw__err(err, -ENOMEM, "report: out of memory");
    for (uint32_t i = 0; i < e->n_gw; i++)
        tw__gw_stats(e->gw[i], &ss[i], NULL);
    tw_error re = {0};
    int r2 = tw_trade_report_write(e->cfg->engine.report, e->strategy, ss, e->n_gw, &re);
    free(ss);
    if (r2 != 0 && rc == 0)
        rc = tw__err(err, r2, "%s", re.msg);
    fflush(e->log);
    return rc;
}

int tw_trade_engine_step(tw_trade_engine *e, tw_error *err)
{
    if (e->done)
        return 1;
    int64_t now = tw_clock_now_ns();
    uint32_t kills = __atomic_exchange_n(&e->req_kill, 0, __ATOMIC_RELAXED);
    e->kills_pending += kills;
    while (e->kills_pending) {
        tw_ev ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = TW_EV_KILL;
        ev.now_ns = tw_tsc_to_ns(tw_tsc_default(), tw_tsc_read());
        /* Numbered only with room for it (we are the ring's one
         * producer): a number never goes missing. */
        if (tw_ring_count(e->ctl) >= tw_ring_capacity(e->ctl))
            break;
        tw__inrec rec;
        tw__journal_ev(e, &ev, &rec);
        TW_VERIFY(tw_ring_enqueue_burst_sp(e->ctl, &rec, 1) == 1);
        e->kills_pending--;
        fprintf(e->log, "tickwire trade: kill switch (cancel, flatten, halt)\n");
        tw__bell_ring(&e->strat_bell);
    }
    uint32_t ph = e->phase;
    if (ph == TW__PH_RUNNING) {
        if (__atomic_load_n(&e->req_term, __ATOMIC_RELAXED)) {
            fprintf(e->log, "tickwire trade: stopping (finish, cancel open orders, log out)\n");
            set_phase(e, TW__PH_STOPPING, now);
        } else if (__atomic_load_n(&e->finished, __ATOMIC_ACQUIRE)) {
            /* Acquire pairs with the strategy core's release-store. */
            set_phase(e, TW__PH_FINISHING, now);
        }
        return 0;
    }
    int settled = 1;
    for (uint32_t i = 0; i < e->n_gw; i++)
        settled &= tw__gw_settled(e->gw[i]);
    int64_t bound = ((int64_t)e->opts.cancel_wait_ms + e->opts.end_wait_ms + 2000) * 1000000;
    if (!settled && now - e->phase_since_ns < bound)
        return 0;
    if (!settled)
        fprintf(e->log, "tickwire trade: sessions did not end within %lld ms: stopping anyway\n",
                (long long)(bound / 1000000));
    int rc = finish(e, err);
    return rc ? rc : 1;
}

int tw_trade_engine_run(tw_trade_engine *e, tw_error *err)
{
    int rc = tw_trade_engine_start(e, err);
    if (rc != 0)
        return rc;
    for (;;) {
        rc = tw_trade_engine_step(e, err);
        if (rc != 0)
            return rc < 0 ? rc : 0;
        tw_clock_sleep_ns(STEP_SLEEP_NS);
    }
}

/* ---- results ---------------------------------------------------------------------------- */

const tw_strategy *tw_trade_engine_strategy(const tw_trade_engine *e) { return e->strategy; }

void tw_trade_engine_session_stats(const tw_trade_engine *e, uint32_t session,
                                   tw_trade_session_stats *out)
{
    TW_VERIFY(session < e->n_gw);
    tw__gw_stats(e->gw[session], out, NULL);
}

void tw_trade_engine_gw_stats(const tw_trade_engine *e, uint32_t session, tw_trade_gw_stats *out)
{
    TW_VERIFY(session < e->n_gw);
    tw__gw_stats(e->gw[session], NULL, out);
}

size_t tw_trade_engine_latency(const tw_trade_engine *e, uint32_t session,
                               const tw_trade_latency **samples)
{
    TW_VERIFY(session < e->n_gw);
    return tw__gw_latency(e->gw[session], samples);
}

uint64_t tw_trade_engine_run_id(const tw_trade_engine *e) { return e->run_id; }

void tw_trade_engine_summary(const tw_trade_engine *e, FILE *f)
{
    uint64_t late = 0, late_bars = 0, fills = 0;
    for (uint32_t i = 0; i < e->n_gw; i++) {
        tw_trade_session_stats ss;
        tw_trade_gw_stats gs;
        tw__gw_stats(e->gw[i], &ss, &gs);
        fprintf(f,
                "tickwire trade: session %s: bars %llu (gaps %llu), orders %llu, fills %llu, "
                "rejects %llu, barrier acks %llu, reconnects %llu, resends %llu, sent %llu, "
                "received %llu, late fills %llu, intents dropped %llu\n",
                ss.name, (unsigned long long)gs.bars, (unsigned long long)gs.gap_bars,
                (unsigned long long)gs.orders_sent, (unsigned long long)gs.fills,
                (unsigned long long)gs.rejects, (unsigned long long)gs.barrier_acks,
                (unsigned long long)ss.reconnects, (unsigned long long)ss.resends,
                (unsigned long long)ss.sent, (unsigned long long)ss.received,
                (unsigned long long)gs.late_fills, (unsigned long long)gs.intents_dropped);
        late += gs.late_fills;
        late_bars += gs.late_fill_bars;
        fills += gs.fills;
    }
    tw_strategy_counters c;
    tw_strategy_counters_get(e->strategy, &c);
    double pnl = 0, spnl = 0;
    int64_t trades = 0;
    for (uint32_t i = 0; i < tw_strategy_n_instances(e->strategy); i++) {
        tw_instance_stats is;
        tw_strategy_instance(e->strategy, i, &is);
        pnl += is.pnl;
        spnl += is.signal_pnl;
        trades += is.trades;
    }
    fprintf(f,
            "tickwire trade: %u instances, %lld trades, execution PnL %.6f, signal PnL %.6f; "
            "fills on a later bar than the decision: %llu of %llu (%llu bars in all), costing "
            "%.6f PnL points (execution - signal); state %s\n",
            tw_strategy_n_instances(e->strategy), (long long)trades, pnl, spnl,
            (unsigned long long)late, (unsigned long long)fills, (unsigned long long)late_bars,
            pnl - spnl, tw_trading_state_name(c.state));
    if (e->recovered) {
        /* From the engine's start (the process's, give or take the exec). */
        int64_t logon = 0;
        for (uint32_t i = 0; i < e->n_gw; i++)
            if (tw__gw_first_logon_ns(e->gw[i]) > logon)
                logon = tw__gw_first_logon_ns(e->gw[i]);
        double rs = (double)e->replay_ns / 1e9;
        fprintf(f,
                "tickwire trade: recovery: replay %.3f ms (%llu events, %llu bars: %.0f bars/s "
                "through the strategy), resent %llu intents, suppressed %llu; logged on at "
                "%.3f ms, first new bar at %.3f ms after the engine's start\n",
                rs * 1e3, (unsigned long long)e->replayed_events,
                (unsigned long long)e->replayed_bars, rs > 0 ? (double)e->replayed_bars / rs : 0,
                (unsigned long long)e->resent, (unsigned long long)e->suppressed,
                logon ? (double)(logon - e->created_ns) / 1e6 : -1.0,
                e->first_bar_ns ? (double)(e->first_bar_ns - e->created_ns) / 1e6 : -1.0);
    }
}

void tw_trade_engine_destroy(tw_trade_engine *e)
{
    if (!e)
        return;
    if (e->started_n) {
        tw_reactor_stop(&e->rn);
        tw_reactor_join(&e->rn);
    }
    if (e->started_s) {
        tw_reactor_stop(&e->rs);
        tw_reactor_join(&e->rs);
    }
    tw__journal_end(e, 0);
    for (uint32_t i = 0; i < e->n_gw; i++)
        tw__gw_destroy(e->gw[i]);
    if (e->have_jmu)
        pthread_mutex_destroy(&e->jmu);
    free(e->gw);
    free(e->ctl);
    free(e->out_buf);
    free(e->strategy_mem);
    tw__bell_close(&e->strat_bell);
    if (e->trades)
        fclose(e->trades);
    free(e->trades_buf);
    if (e->own_log)
        fclose(e->log);
    free(e);
}
