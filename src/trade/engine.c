/* The live engine (trade_engine.h): set-up and results.  Its create,
 * start, the control step that acts on requests and follows the ending,
 * the report, the summary and destroy.  Below it: processes mode's
 * supervisor (supervisor.c), recovery (recover.c), the strategy host and
 * its core (host.c), the net cores (gw.c), the event log (evlog.c) and
 * the doorbell (bell.c); docs/layout.md has the order.
 *
 * Who owns what: the strategy core's thread owns the strategy (host.c);
 * net core k owns session k (gw.c); the control thread owns the control
 * ring's producer side and the phase.  After the threads are joined, the
 * control thread reads everything (the report). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trade/engine_internal.h"
#include "tickwire/util.h"

#define CTL_SLOTS 64
#define STEP_SLEEP_NS 2000000ll     /* the control loop's nap between steps */
#define DRAIN_WAIT_NS 2000000000ll  /* the strategy's last events, at most */
#define ATT_STEP_NS 200000ll        /* the attach control's step, at most this often */

/* ---- set-up ---------------------------------------------------------------------------- */

static int cpu_of(const tw_trade_config *cfg, uint32_t i)
{
    return i < cfg->engine.n_cpus ? (int)cfg->engine.cpus[i] : -1;
}

/* The TSC's calibration (tw_tsc_default: 20 ms asleep), off the set-up's
 * path: after a crash the stores and the journal are read meanwhile, and
 * the reactors' set-up, the first to need the clock, waits for what is
 * left of it (pthread_once). */
static void *calibrate(void *arg)
{
    (void)arg;
    (void)tw_tsc_default();
    return NULL;
}

static void calibrate_beside(void)
{
    pthread_attr_t a;
    pthread_t t;
    if (pthread_attr_init(&a) != 0)
        return;
    if (pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) == 0)
        (void)pthread_create(&t, &a, calibrate, NULL); /* failed: the reactors calibrate */
    pthread_attr_destroy(&a);
}

/* Everything the engine needs before it runs.  On an error it returns at
 * once: tw_trade_engine_destroy takes down whatever was made (every
 * member is made so that its destroy tolerates it unmade). */
static int setup(tw_trade_engine *e, tw_error *err)
{
    const tw_trade_config *cfg = e->cfg;
    int rc;
    if (cfg->engine.log[0]) {
        e->log = fopen(cfg->engine.log, "a");
        if (!e->log) {
            e->log = stderr;
            return tw__err(err, -errno, "%s: %s", cfg->engine.log, strerror(errno));
        }
        e->own_log = 1;
    }
    if (cfg->engine.strategy_auto || cfg->engine.busy_auto) {
        fprintf(e->log, "tickwire trade: engine: %s\n", cfg->engine.auto_why);
        fflush(e->log);
    }
    if (cfg->engine.trades[0]) {
        /* Not emptied yet: a recovery from a snapshot keeps the rows it
         * covers (tw__trades_reset, before the first row of this run). */
        int fd = open(cfg->engine.trades, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        e->trades = fd >= 0 ? fdopen(fd, "r+") : NULL;
        e->trades_buf = malloc(1u << 20);
        if (!e->trades || !e->trades_buf) {
            rc = e->trades ? -ENOMEM : -errno;
            if (fd >= 0 && !e->trades)
                close(fd);
            return tw__err(err, rc, "%s: %s", cfg->engine.trades, strerror(-rc));
        }
        setvbuf(e->trades, e->trades_buf, _IOFBF, 1u << 20);
    }
    /* The report must be writable before we trade. */
    {
        char tmp[TW_TRADE_STR_MAX + 8];
        snprintf(tmp, sizeof(tmp), "%s.tmp", cfg->engine.report);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            rc = -errno;
            return tw__err(err, rc, "report %s: %s", cfg->engine.report, strerror(-rc));
        }
        close(fd);
        unlink(tmp);
    }
    /* The strategy (host.c). */
    if ((rc = tw__host_engine_build(e, err)) != 0)
        return rc;
    size_t cb = tw_ring_memsize(CTL_SLOTS, sizeof(tw__inrec));
    e->ctl = aligned_alloc(64, (cb + 63) & ~(size_t)63);
    e->gw = calloc(cfg->n_sessions, sizeof(*e->gw));
    if (!e->ctl || !e->gw || tw_ring_init(e->ctl, CTL_SLOTS, sizeof(tw__inrec)) != 0)
        return tw__err(err, -ENOMEM, "out of memory");
    int busy = cfg->engine.busy_poll != 0;
    int inl = cfg->engine.strategy == TW_TRADE_STRATEGY_INLINE;
    /* inline: the strategy's producers are its own thread; the control
     * thread's requests (KILL, a phase) are seen within the loop's
     * longest wait (1 ms; the control loop itself steps every 2 ms). */
    if ((rc = tw__bell_init(&e->strat_bell, !busy && !inl)) != 0)
        return tw__err(err, rc, "eventfd: %s", strerror(-rc));
    /* Sessions. */
    for (uint32_t i = 0; i < cfg->n_sessions; i++) {
        if ((rc = tw__gw_create(&e->gw[i], e, i, err)) != 0)
            return rc;
        e->n_gw++;
    }
    /* The event log; after a crash, the replay (recover.c).  The
     * replay's time includes the writer's open (a read). */
    int64_t t0 = tw_clock_now_ns();
    if ((rc = tw__evlog_open(e, err)) < 0)
        return rc;
    if (rc > 0 && (rc = tw__recover(e, t0, err)) != 0)
        return rc;
    if (e->trades && !e->trades_placed && !e->procs) {
        /* A new run (or a recovery that wrote no row): an empty CSV
         * (processes mode: the strategy process's, strategy_proc.c). */
        if (tw__trades_reset(e->trades, -1) != 0)
            return tw__err(err, -EIO, "%s: write error", cfg->engine.trades);
        e->trades_placed = 1;
    }
    if (e->procs && (rc = tw__sup_open(e, err)) != 0)
        return rc;
    if ((rc = tw__snap_open(e, err)) != 0)
        return rc;
    /* The cores: net cores on their CPUs, then the strategy. */
    tw_reactor_opts ro = {.mode = busy ? TW_REACTOR_BUSY : TW_REACTOR_YIELD};
    tw_reactor_init(&e->rn, &ro);
    tw_reactor_init(&e->rs, &ro);
    if (inl && e->n_gw > TW_TRADE_INLINE_MAX_SESSIONS) {
        return tw__err(err, -ENOSPC, "strategy = inline: at most %d sessions",
                       TW_TRADE_INLINE_MAX_SESSIONS);
    }
    for (uint32_t i = 0; i < e->n_gw; i++) {
        tw__gw *g = e->gw[i];
        /* inline: every session on the first loop. */
        int c = inl && i ? 0 : tw_reactor_add_core(&e->rn, cpu_of(cfg, i));
        if (c < 0 || tw_reactor_add_poll(&e->rn, c, tw__gw_poll, g) != 0 ||
            tw_reactor_add_timer(&e->rn, c, TW__GW_TIMER_NS, tw__gw_timer, g) != 0 ||
            (tw__gw_fd(g) >= 0 && tw_reactor_add_fd(&e->rn, c, tw__gw_fd(g)) != 0) ||
            (tw__gw_bell(g)->fd >= 0 && tw_reactor_add_fd(&e->rn, c, tw__gw_bell(g)->fd) != 0)) {
            return tw__err(err, -ENOSPC, "net core for session %s: more sessions than the "
                           "reactor's %d cores", cfg->sessions[i].name, TW_REACTOR_MAX_CORES);
        }
        if (e->opts.manual_net)
            (void)tw_reactor_set_mode(&e->rn, c, TW_REACTOR_BUSY);
    }
    if (inl) {
        if (tw_reactor_add_poll(&e->rn, 0, tw__inline_poll, e) != 0)
            return tw__err(err, -ENOSPC, "strategy = inline: cannot set it up");
        return 0;
    }
    int c = e->procs ? 0 : tw_reactor_add_core(&e->rs, cpu_of(cfg, e->n_gw));
    if (!e->procs && (c < 0 || tw_reactor_add_poll(&e->rs, c, tw__strategy_poll, e) != 0 ||
        (e->strat_bell.fd >= 0 && tw_reactor_add_fd(&e->rs, c, e->strat_bell.fd) != 0)))
        return tw__err(err, -ENOSPC, "strategy core: cannot set it up");
    return 0;
}

int tw_trade_engine_create(tw_trade_engine **out, const tw_trade_config *cfg,
                           const tw_trade_engine_opts *opts, tw_error *err)
{
    *out = NULL;
    calibrate_beside();
    tw_trade_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return tw__err(err, -ENOMEM, "out of memory");
    e->procs = cfg->engine.mode == TW_TRADE_PROCESSES;
    e->att.listen_fd = e->att.conn_fd = e->att.memfd = e->att.journal_ro_fd = e->att.pidfd = -1;
    e->standby_fd = -1;
    e->snap_csv_len = -1;
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
    e->run_id = e->opts.run_id ? e->opts.run_id : (uint64_t)(tw_clock_epoch_ns() / TW__NS_PER_MS);
    e->run_id &= TW_TRADE_RUN_ID_MASK;
    e->strat_bell.fd = -1;
    e->log = stderr;
    int rc = setup(e, err);
    if (rc != 0) {
        tw_trade_engine_destroy(e);
        return rc;
    }
    *out = e;
    return 0;
}

int tw_trade_engine_start(tw_trade_engine *e, tw_error *err)
{
    int rc;
    if (!e->procs && e->cfg->engine.strategy != TW_TRADE_STRATEGY_INLINE) {
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
    if (e->procs)
        tw__sup_spawn(e);
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

static int write_results(tw_trade_engine *e, int rc, tw_error *err);


static int finish_procs(tw_trade_engine *e, tw_error *err)
{
    tw__sup_end(e);
    __atomic_store_n(&e->phase, TW__PH_DONE, __ATOMIC_RELEASE);
    e->done = 1;
    /* The report is the strategy's: rebuilt from the journal, every event
     * the strategy process saw, and checked against its digests. */
    int rc = tw__recover_report(e, err);
    tw__evlog_end(e, 1);
    return write_results(e, rc, err);
}

static int finish(tw_trade_engine *e, tw_error *err)
{
    if (e->started_n) {
        tw_reactor_stop(&e->rn);
        tw_reactor_join(&e->rn);
        e->started_n = 0;
    }
    if (e->procs)
        return finish_procs(e, err);
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
        while (tw_clock_now_ns() - t0 < DRAIN_WAIT_NS && tw__strategy_poll(e, &now))
            ;
    }
    __atomic_store_n(&e->phase, TW__PH_DONE, __ATOMIC_RELEASE);
    e->done = 1;
    /* Recovered from a snapshot without the trades CSV's length: the rows
     * before it are written again from the journal. */
    int rc = e->snap_recovered && e->snap_csv_len < 0 ? tw__recover_trades(e, err) : 0;
    /* The run ended (the venue's end, or TERM: logged out): the journal
     * is done, and the next start is a new run.  Only a crash leaves a
     * journal without END, which the next start resumes. */
    tw__evlog_end(e, 1);
    return write_results(e, rc, err);
}

/* The report and the trades CSV (rc: an error already in err). */
static int write_results(tw_trade_engine *e, int rc, tw_error *err)
{
    if (e->trades && fflush(e->trades) != 0 && rc == 0)
        rc = tw__err(err, -EIO, "%s: write error", e->cfg->engine.trades);
    tw_trade_session_stats *ss = calloc(e->n_gw ? e->n_gw : 1, sizeof(*ss));
    if (!ss)
        return tw__err(err, -ENOMEM, "report: out of memory");
    for (uint32_t i = 0; i < e->n_gw; i++)
        tw__gw_stats(e->gw[i], &ss[i], NULL);
    tw_error re = {0};
    tw_trade_run_stats run = { .crash_loop_record = e->crash_loop_seq,
                               .crash_loop_crashes = e->crash_loop_seq ? e->crash_count : 0,
                               .engine = &e->cfg->engine };
    int r2 = tw_trade_report_write_run(e->cfg->engine.report, e->host.s, ss, e->n_gw, &run, &re);
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
    if (e->procs && now - e->att_step_ns >= ATT_STEP_NS) {
        /* (A caller may step on every turn of its loop: a few system
         * calls each, so at most this often.) */
        e->att_step_ns = now;
        tw__sup_step(e, now);
    }
    uint32_t kills = __atomic_exchange_n(&e->req_kill, 0, __ATOMIC_RELAXED);
    e->kills_pending += kills;
    while (e->procs && e->kills_pending) {
        /* Journaled (no net core's ring): the strategy process takes it in
         * its place in the stream. */
        tw_ev ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = TW_EV_KILL;
        ev.now_ns = tw_tsc_to_ns(tw_tsc_default(), tw_tsc_read());
        int rc = tw__evlog_append(e, TW_JOURNAL_EV, &ev);
        if (rc != 0) {
            fprintf(e->log, "tickwire trade: kill switch: journal append failed: %s\n",
                    tw_strerror(rc));
            break;
        }
        e->kills_pending--;
        fprintf(e->log, "tickwire trade: kill switch (cancel, flatten, halt)\n");
    }
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
        tw__evlog_ev(e, &ev, &rec);
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
            if (e->procs) {
                /* The strategy process takes no bars or barriers after
                 * this record, and says so on every session's ring. */
                uint8_t z[TW_JOURNAL_PAYLOAD] = {0};
                int rc = tw__evlog_append(e, TW__JR_STOP, z);
                if (rc != 0)
                    fprintf(e->log, "tickwire trade: journal: STOP: %s\n", tw_strerror(rc));
            }
        } else if (__atomic_load_n(&e->finished, __ATOMIC_ACQUIRE)) {
            /* Acquire pairs with the strategy core's release-store. */
            set_phase(e, TW__PH_FINISHING, now);
        }
        return 0;
    }
    int settled = 1;
    for (uint32_t i = 0; i < e->n_gw; i++)
        settled &= tw__gw_settled(e->gw[i]);
    int64_t bound = ((int64_t)e->opts.cancel_wait_ms + e->opts.end_wait_ms + 2000) * TW__NS_PER_MS;
    if (!settled && now - e->phase_since_ns < bound)
        return 0;
    if (!settled)
        fprintf(e->log, "tickwire trade: sessions did not end within %lld ms: stopping anyway\n",
                (long long)(bound / TW__NS_PER_MS));
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
        if (e->procs && e->have_att &&
            (e->att.state == TW_ATTACH_GW_WAITING || e->att.state == TW_ATTACH_GW_LIVE ||
             e->att.state == TW_ATTACH_GW_HANDSHAKE)) {
            /* Woken by a strategy's connection, hangup or death (pidfd). */
            struct pollfd fds[3];
            int n = tw_attach_gw_pollfds(&e->att, fds, 3);
            (void)poll(fds, (nfds_t)n, (int)(STEP_SLEEP_NS / TW__NS_PER_MS));
        } else {
            tw_clock_sleep_ns(STEP_SLEEP_NS);
        }
    }
}

/* ---- results ---------------------------------------------------------------------------- */

const tw_strategy *tw_trade_engine_strategy(const tw_trade_engine *e) { return e->host.s; }

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
    tw_strategy_counters_get(e->host.s, &c);
    double pnl = 0, spnl = 0;
    int64_t trades = 0;
    for (uint32_t i = 0; i < tw_strategy_n_instances(e->host.s); i++) {
        tw_instance_stats is;
        tw_strategy_instance(e->host.s, i, &is);
        pnl += is.pnl;
        spnl += is.signal_pnl;
        trades += is.trades;
    }
    fprintf(f,
            "tickwire trade: %u instances, %lld trades, execution PnL %.6f, signal PnL %.6f; "
            "fills on a later bar than the decision: %llu of %llu (%llu bars in all), costing "
            "%.6f PnL points (execution - signal); state %s\n",
            tw_strategy_n_instances(e->host.s), (long long)trades, pnl, spnl,
            (unsigned long long)late, (unsigned long long)fills, (unsigned long long)late_bars,
            pnl - spnl, tw_trading_state_name(c.state));
    if (e->procs && e->st_restarts) {
        /* The strategy process's restarts (each logged as it came). */
        double med[5] = {0}, v[TW__FIGS_MAX];
        uint32_t n = 0;
        uint64_t bars = 0;
        for (int m = 0; m < 5; m++) {
            n = 0;
            for (uint32_t i = 0; i < e->n_figs; i++) {
                const tw__resumed *r = &e->figs[i];
                if (!r->detect_ns)
                    continue;
                double rs = (double)(r->replay_end_ns - r->attach_ns) / 1e9;
                double x = m == 0   ? (double)(r->attach_ns - r->detect_ns) / 1e6
                           : m == 1 ? rs * 1e3
                           : m == 2 ? (rs > 0 ? (double)r->bars / rs : 0)
                           : m == 3 ? (double)(r->first_bar_ns - r->replay_end_ns) / 1e6
                                    : (double)(r->first_bar_ns - r->detect_ns) / 1e6;
                bars = r->bars;
                /* insertion: a handful of values */
                uint32_t j = n++;
                while (j > 0 && v[j - 1] > x) {
                    v[j] = v[j - 1];
                    j--;
                }
                v[j] = x;
            }
            med[m] = n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
        }
        fprintf(f,
                "tickwire trade: strategy process: %llu restarts, %u with figures (median): "
                "detection -> attached %.3f ms, replay %.3f ms (%.0f bars/s through the kernel; "
                "last %llu bars), resync %.3f ms; detection -> first new bar %.3f ms\n",
                (unsigned long long)e->st_restarts, n, med[0], med[1], med[2],
                (unsigned long long)bars, med[3], med[4]);
    }
    if (e->recovered) {
        /* From the engine's start (the process's, give or take the exec). */
        int64_t logon = 0;
        for (uint32_t i = 0; i < e->n_gw; i++)
            if (tw__gw_first_logon_ns(e->gw[i]) > logon)
                logon = tw__gw_first_logon_ns(e->gw[i]);
        double rs = (double)e->replay_ns / 1e9;
        fprintf(f,
                "tickwire trade: recovery: replay %.3f ms (%llu events, %llu bars: %.0f bars/s; "
                "through the strategy alone %.3f ms, %.0f bars/s), resent %llu intents, "
                "suppressed %llu; logged on at %.3f ms, first new bar at %.3f ms after the "
                "engine's start\n",
                rs * 1e3, (unsigned long long)e->replayed_events,
                (unsigned long long)e->replayed_bars, rs > 0 ? (double)e->replayed_bars / rs : 0,
                (double)e->replay_kernel_ns / 1e6,
                e->replay_kernel_ns > 0 ? (double)e->replayed_bars * 1e9 / (double)e->replay_kernel_ns
                                        : 0.0,
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
    tw__snap_close(e); /* the strategy core is gone: nothing more to hand over */
    tw__sup_end(e);
    tw__evlog_end(e, 0);
    for (uint32_t i = 0; i < e->n_gw; i++)
        tw__gw_destroy(e->gw[i]);
    if (e->have_jmu)
        pthread_mutex_destroy(&e->jmu);
    free(e->gw);
    free(e->ctl);
    tw__host_free(&e->host);
    tw__bell_close(&e->strat_bell);
    if (e->trades)
        fclose(e->trades);
    free(e->trades_buf);
    if (e->own_log)
        fclose(e->log);
    free(e);
}

