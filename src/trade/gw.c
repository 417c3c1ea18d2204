/* A session's net core (trade_engine.h; its files: gw_internal.h):
 * transport -> FIX session -> decoded events into the ring to the strategy
 * core (gw_rx.c); intents from the strategy's ring -> FIX messages ->
 * transport (gw_tx.c).  This file holds the turn, the timer, the
 * connection, the ending and the set-up.  Everything here runs on
 * the net core's thread (or the caller's, with manual_net) and touches
 * only this session's state, its transport, its store and its side of its
 * two rings.
 *
 * Events never get lost to a full ring: they wait in a spill queue sized
 * for the most one feed of the receive buffer can make (an event needs at
 * least 17 bytes of input), and no more input is fed while it holds any.
 * Intents wait in their ring while the session is not logged on (a
 * reconnect), which is what keeps lockstep orders in order with their
 * barrier acks across a disconnect. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tickwire/capture.h"
#include "tickwire/util.h"
#include "trade/gw_internal.h"

static void publish(tw__gw *g);

/* The ending's one-way steps (gw_internal.h, tw__stop_stage). */
static void stop_to(tw__gw *g, tw__stop_stage to)
{
    TW_VERIFY((g->stop_stage == TW__STOP_NONE && to == TW__STOP_DRAINING) ||
              (g->stop_stage == TW__STOP_DRAINING &&
               (to == TW__STOP_CANCELS_OUT || to == TW__STOP_LOGOUT_OUT)) ||
              (g->stop_stage == TW__STOP_CANCELS_OUT && to == TW__STOP_LOGOUT_OUT));
    g->stop_stage = to;
    g->stage_since_ns = g->now_ns;
}

static int s_write(void *ctx, const char *buf, size_t len)
{
    tw__gw *g = ctx;
    return tw__xport_write(g->xp, buf, len);
}

static void s_close(void *ctx)
{
    tw__gw *g = ctx;
    /* Inside a session call: the rest waits until it has returned. */
    g->stream_closed = 1;
}

static void schedule_reconnect(tw__gw *g)
{
    g->next_connect_ns = g->now_ns + (int64_t)g->backoff_ms * TW__NS_PER_MS;
    uint32_t b = g->backoff_ms * 2;
    g->backoff_ms = b > g->sc->reconnect_max_ms ? g->sc->reconnect_max_ms : b;
}

/* The connection is gone (either side closed it, or it failed). */
static void conn_down(tw__gw *g, const char *why)
{
    g->stream_closed = 0;
    g->down_pending = 0;
    if (!g->conn_live)
        return; /* already taken down (the session and the transport both said so) */
    g->conn_live = 0;
    if (g->fs.state != TW_FIX_DISCONNECTED)
        tw_fix_session_disconnected(&g->fs, g->now_ns);
    if (g->xp->state != TW__XP_IDLE)
        g->xp->ops->close(g->xp, g->now_ns);
    g->xp->rx_len = 0;
    g->xp->out_off = g->xp->out_len = 0;
    g->st.disconnects++;
    if (g->f.up) {
        g->f.up = 0;
        tw__gw_push_session(g, TW_SESSION_DOWN);
    }
    if (g->logout_requested || g->stop_stage != TW__STOP_NONE) {
        g->over = 1;
        tw__gw_log(g, "connection closed (%s): session over", why);
        return;
    }
    tw__gw_log(g, "connection lost (%s): reconnecting in %u ms", why, g->backoff_ms);
    schedule_reconnect(g);
}

/* The session ends here, whatever state it is in. */
static void give_up(tw__gw *g)
{
    if (g->xp->state != TW__XP_IDLE)
        g->xp->ops->close(g->xp, g->now_ns);
    if (g->fs.state != TW_FIX_DISCONNECTED)
        tw_fix_session_disconnected(&g->fs, g->now_ns);
    if (g->f.up) {
        g->f.up = 0;
        tw__gw_push_session(g, TW_SESSION_DOWN);
    }
    g->conn_live = 0;
    g->over = 1;
}

static void try_connect(tw__gw *g)
{
    g->st.connects++;
    g->conn_live = 1;
    int rc = g->xp->ops->connect(g->xp, g->now_ns);
    if (rc != 0) {
        g->conn_live = 0;
        g->st.connect_failures++;
        tw__gw_log(g, "cannot connect to %s:%u: %s; again in %u ms", g->sc->host, g->sc->port,
                   g->xp->why, g->backoff_ms);
        schedule_reconnect(g);
    }
}

static void stop_progress(tw__gw *g)
{
    tw_trade_engine *e = g->e;
    if (g->over)
        return;
    if (g->stop_stage == TW__STOP_NONE)
        stop_to(g, TW__STOP_DRAINING);
    if (g->stop_stage == TW__STOP_DRAINING) {
        /* Acquire pairs with the strategy core's release-store once it
         * has written its last intents: after it, the ring holds them all. */
        if (e->procs) {
            /* The strategy process's marker is behind every intent it
             * decided before the STOP record. */
            tw_ring *r = tw__gw_intents_ring(g);
            if (!g->st_stopped || !r || tw_ring_count(r))
                return;
        } else if (!__atomic_load_n(&e->strategy_stopped, __ATOMIC_ACQUIRE) ||
                   tw_ring_count(g->out)) {
            return;
        }
        if (g->fs.state != TW_FIX_ACTIVE) {
            stop_to(g, TW__STOP_LOGOUT_OUT);
            g->logout_requested = 1;
            if (g->fs.state == TW_FIX_DISCONNECTED)
                give_up(g); /* down, or connecting: nothing to log out of */
            return;
        }
        for (uint32_t i = 0; i < g->f.open.n; i++) {
            const tw__open_order *o = &g->f.open.v[i];
            (void)tw__gw_send_cancel(g, o->id, o->instance, o->instrument, o->side, o->qty);
        }
        if (g->f.open.n)
            tw__gw_log(g, "stopping: cancel requested for %u open orders", g->f.open.n);
        stop_to(g, TW__STOP_CANCELS_OUT);
    }
    if (g->stop_stage == TW__STOP_CANCELS_OUT) {
        int64_t wait_ns = (int64_t)e->opts.cancel_wait_ms * TW__NS_PER_MS;
        if (g->f.open.n && g->now_ns - g->stage_since_ns < wait_ns)
            return;
        stop_to(g, TW__STOP_LOGOUT_OUT);
        tw__gw_logout(g, "trader stopping");
    }
}

static void ending_timeouts(tw__gw *g)
{
    if (g->over || !g->logout_requested)
        return;
    if (g->now_ns - g->stage_since_ns > (int64_t)g->e->opts.end_wait_ms * TW__NS_PER_MS) {
        tw__gw_log(g, "no end to the Logout handshake in %u ms: closing", g->e->opts.end_wait_ms);
        give_up(g);
    }
}

void tw__gw_timer(void *arg, tw_reactor_now *now)
{
    tw__gw *g = arg;
    g->now_ns = now->ns;
    uint32_t ph = __atomic_load_n(&g->e->phase, __ATOMIC_ACQUIRE);
    if (ph == TW__PH_STOPPING)
        stop_progress(g);
    ending_timeouts(g);
    if (g->fs.state != TW_FIX_DISCONNECTED) {
        tw_fix_session_timer(&g->fs, g->now_ns);
        if (g->stream_closed)
            conn_down(g, "closed by the session");
    } else if (!g->over && g->xp->state == TW__XP_IDLE && !g->logout_requested &&
               ph == TW__PH_RUNNING && g->now_ns >= g->next_connect_ns) {
        try_connect(g);
    }
    (void)g->xp->ops->flush(g->xp, g->now_ns);
    publish(g);
}

/* The sending half of a turn: the intents in out (built, stored), then
 * what the session wrote leaves with one flush, stamped tsc_tx.  Returns
 * the work done. */
static unsigned send_intents(tw__gw *g, tw_reactor_now *now)
{
    tw__xport *xp = g->xp;
    unsigned work = tw__gw_drain_intents(g);
    if (g->stream_closed)
        conn_down(g, "closed by the session");
    if (xp->out_len > xp->out_off) {
        if (xp->ops->flush(xp, now->ns) != 0) {
            conn_down(g, xp->why);
        } else if (g->lat.tx_from < g->lat.n) {
            uint64_t t = tw_tsc_read();
            for (uint32_t i = g->lat.tx_from; i < g->lat.n; i++)
                g->lat.v[i].tsc_tx = t;
        }
        g->lat.tx_from = g->lat.n;
        work++;
    }
    g->lat.open = 0;
    if (g->pushed) {
        g->pushed = 0;
        tw__bell_ring(&g->e->strat_bell);
    }
    publish(g);
    return work;
}

unsigned tw__gw_send(void *arg, tw_reactor_now *now)
{
    tw__gw *g = arg;
    if (!tw_ring_count(g->out))
        return 0;
    g->now_ns = now->ns;
    return send_intents(g, now);
}

unsigned tw__gw_poll(void *arg, tw_reactor_now *now)
{
    tw__gw *g = arg;
    tw__xport *xp = g->xp;
    g->now_ns = now->ns;
    unsigned work = 0;
    if (g->e->procs) {
        /* Resets our rings after a strategy died (once what it committed
         * is sent), and says whether one is attached. */
        g->att_st = tw_attach_gw_core_sync(&g->e->att, g->index);
        /* Draining a dead strategy's ring: look again soon.  (A live
         * one rings the core's doorbell: the idle turn below.) */
        if (g->att_st == TW_ATTACH_CORE_DRAIN && now->wake_ns > now->ns + TW__GW_ATT_POLL_NS)
            now->wake_ns = now->ns + TW__GW_ATT_POLL_NS;
    }
    /* A yielding core spins TW_REACTOR_IDLE_SPINS idle turns before it
     * waits in ppoll on the socket; a recv() on each of them would make
     * the spin a string of system calls.  So: a recv after work unless
     * the last one found the socket empty (then what comes next wakes
     * the wait), and on the turn after each wait (when the socket is
     * readable). */
    int skip = xp->rx_syscall && !g->busy && xp->state == TW__XP_UP &&
               (g->idle_turns % TW_REACTOR_IDLE_SPINS != 0 ||
                (g->idle_turns == 0 && xp->rx_drained));
    unsigned ev = skip ? 0 : xp->ops->io(xp, now->ns, &now->wake_ns);
    if (ev & TW__XP_EV_UP) {
        work++;
        tw__gw_log(g, "connected to %s:%u over %s", g->sc->host, g->sc->port, xp->ops->name);
        if (tw_fix_session_connected(&g->fs, g->now_ns) != 0 || g->stream_closed)
            conn_down(g, "the Logon could not be sent");
    }
    if (g->spill.n)
        tw__gw_spill_drain(g);
    if (g->spill.n == 0 && xp->rx_len) {
        g->cur_tsc_rx = xp->tsc_rx;
        g->cur_tsc_tcp = xp->tsc_tcp;
        size_t used = tw_fix_session_input(&g->fs, xp->rx, xp->rx_len, g->now_ns);
        TW_ASSERT(used <= xp->rx_len);
        if (used) {
            work++;
            xp->rx_len -= used;
            if (xp->rx_len)
                memmove(xp->rx, xp->rx + used, xp->rx_len);
        }
        if (g->stream_closed)
            conn_down(g, "closed by the session");
    }
    if (g->pushed) {
        /* The strategy starts on these events now, not after our sends. */
        g->pushed = 0;
        tw__bell_ring(&g->e->strat_bell);
    }
    if (ev & TW__XP_EV_DOWN) {
        work++;
        g->down_pending = 1;
    }
    /* What came before the close is fed first (the venue's last words,
     * a Logout); what is left once the spill is empty is a torn message. */
    if (g->down_pending && g->spill.n == 0) {
        g->down_pending = 0;
        conn_down(g, xp->why);
    }
    work += send_intents(g, now);
    if (work) {
        g->idle_turns = 0;
        tw__bell_wake(&g->bell);
        return work;
    }
    g->idle_turns++;
    /* Idle: a piece of the files' growth ahead of their appends (the
     * store's, then the journal's), and look again at once. */
    if ((g->have_store && tw_fix_store_grow_ahead(&g->store) > 0) || tw__evlog_grow_ahead(g->e) > 0)
        return 1;
    /* Idle: may sleep; look at the ring once more after saying so (the
     * strategy then either sees sleeping or we see its intent). */
    tw__bell_sleep(&g->bell);
    tw_ring *r = tw__gw_intents_ring(g);
    if (g->fs.state == TW_FIX_ACTIVE && r && tw_ring_count(r))
        return 1;
    /* Processes mode, spins over: the strategy process's doorbell. */
    if (g->e->procs && g->att_st == TW_ATTACH_CORE_LIVE && !g->busy &&
        g->idle_turns >= TW_REACTOR_IDLE_SPINS)
        return tw__bell_attach_idle(&g->e->att, g->index, now);
    return 0;
}

static void *ring_alloc(uint32_t slots, uint32_t slot_size, void **mem)
{
    size_t bytes = tw_ring_memsize(slots, slot_size);
    *mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!*mem || tw_ring_init(*mem, slots, slot_size) != 0)
        return NULL;
    return *mem;
}

/* The session's tables, rings, store, transport and FIX session.  On an
 * error it returns at once: tw__gw_destroy takes down what was made. */
static int setup(tw__gw *g, tw_error *err)
{
    tw_trade_engine *e = g->e;
    const tw_trade_config *cfg = g->cfg;
    const tw_trade_session_cfg *sc = g->sc;
    uint32_t index = g->index;
    int rc;
    /* Instruments of this session, their bars and closes, the orders. */
    if (tw__gwfold_init(&g->f, cfg, index) != 0)
        return tw__err(err, -ENOMEM, "session %s: out of memory", sc->name);
    g->sym_instr = malloc((cfg->n_instruments + 1) * sizeof(uint32_t));
    if (!g->sym_instr)
        return tw__err(err, -ENOMEM, "session %s: out of memory", sc->name);
    for (uint32_t k = 0; k < cfg->n_instruments; k++)
        if (g->f.local_of[k] != UINT32_MAX)
            g->sym_instr[g->f.local_of[k]] = k;
    uint32_t hcap = 4;
    while (hcap < 2 * g->f.n_sym)
        hcap <<= 1;
    g->hash_mask = hcap - 1;
    g->hash = calloc(hcap, sizeof(uint32_t));
    if (!g->hash)
        return tw__err(err, -ENOMEM, "session %s: out of memory", sc->name);
    for (uint32_t k = 0; k < g->f.n_sym; k++) {
        const char *s = cfg->strategy_instruments[g->sym_instr[k]].symbol;
        uint32_t h = (uint32_t)tw_fnv1a64(TW_FNV1A64_INIT, s, strlen(s)) & g->hash_mask;
        while (g->hash[h])
            h = (h + 1) & g->hash_mask;
        g->hash[h] = k + 1;
    }
    g->exec.ids[0] = calloc(TW__GW_EXEC_IDS, sizeof(uint64_t));
    g->exec.ids[1] = calloc(TW__GW_EXEC_IDS, sizeof(uint64_t));
    g->spill.cap = TW__GW_RX_CAP / TW__GW_MIN_EVENT_BYTES + 64;
    g->spill.q = malloc(g->spill.cap * sizeof(tw__inrec));
    g->lat.cap = e->opts.latency_samples;
    g->lat.v = calloc(g->lat.cap ? g->lat.cap : 1, sizeof(tw_trade_latency));
    if (!g->exec.ids[0] || !g->exec.ids[1] || !g->spill.q || !g->lat.v)
        return tw__err(err, -ENOMEM, "session %s: out of memory", sc->name);
    if (!ring_alloc(cfg->engine.ring_slots, sizeof(tw__inrec), &g->in_mem) ||
        !ring_alloc(cfg->engine.ring_slots, sizeof(tw_out), &g->out_mem))
        return tw__err(err, -ENOMEM, "session %s: out of memory", sc->name);
    g->in = g->in_mem;
    g->out = g->out_mem;
    /* inline: the strategy writes out on this core's own thread. */
    rc = tw__bell_init(&g->bell, !e->opts.manual_net && !cfg->engine.busy_poll &&
                                     cfg->engine.strategy != TW_TRADE_STRATEGY_INLINE);
    if (rc != 0)
        return tw__err(err, rc, "session %s: eventfd: %s", sc->name, strerror(-rc));
    /* The store. */
    if ((rc = tw_mkdir_parents(sc->store)) != 0) {
        return tw__err(err, rc, "session %s: store %s: cannot create its directory: %s",
                       sc->name, sc->store, strerror(-rc));
    }
    tw_fix_store_cfg stc = {.path = sc->store, .fd = -1, .fsync = TW_FIX_FSYNC_NONE,
                            .mmap_bytes = 1u << 20};
    tw_error se = {0};
    if ((rc = tw_fix_store_open(&g->store, &stc, &se)) != 0)
        return tw__err(err, rc, "session %s: store %s: %s", sc->name, sc->store, se.msg);
    g->have_store = 1;
    /* The transport. */
    int64_t cto = (int64_t)sc->connect_timeout_ms * TW__NS_PER_MS;
    if (sc->stack == TW_STACK_KERNEL) {
        rc = tw__xport_tcp_open(&g->xp, sc->host, sc->port, TW__GW_RX_CAP, TW__GW_OUT_CAP, cto,
                                err);
    } else {
        uint32_t dst;
        if (!e->opts.open_port) {
            return tw__err(err, -EINVAL, "session %s: stack = %s, but this program opens no ports",
                           sc->name, sc->stack_spec);
        }
        if (tw_net_parse_ip4(sc->host, &dst) != 0) {
            return tw__err(err, -EINVAL,
                           "session %s: host '%s': the userspace stack needs an IPv4 address",
                           sc->name, sc->host);
        }
        rc = e->opts.open_port(e->opts.port_ctx, index, sc->stack_spec, &g->port, err);
        if (rc == 0)
            rc = tw__xport_stack_open(&g->xp, g->port, sc->ip4, sc->prefix, sc->gateway4, dst,
                                      sc->port, TW__GW_RX_CAP, TW__GW_OUT_CAP, cto, err);
        if (rc == 0 && sc->pcap[0]) {
            /* Attached before the stack polls the port: every frame of the
             * session, both ways, from its first SYN. */
            tw_capture_config cc;
            rc = tw_capture_config_parse(&cc, sc->pcap, err);
            if (rc == 0)
                rc = tw_port_capture_open(g->port, &cc, sc->name, &g->cap, err);
            if (rc != 0) {
                char why[sizeof(err->msg)];
                snprintf(why, sizeof(why), "%s", err->msg);
                tw__err(err, rc, "session %s: pcap = %s: %s", sc->name, sc->pcap, why);
            }
        }
    }
    if (rc != 0)
        return rc;
    /* The session. */
    tw_fix_session_cfg fc = {
        .begin_string = "FIX.4.4",
        .sender_comp_id = sc->sender,
        .target_comp_id = sc->target,
        .initiator = 1,
        .heart_bt_int_s = sc->heartbeat_s,
        .reset_on_logon = e->opts.reset_seqs,
        .ts_digits = 6,
        .epoch_offset_ns = g->epoch_offset_ns,
        .decode_flags = TW_FIX_PX_F64,
        .md_entries = g->md_entries,
        .md_entries_cap = TW_FIX_MAX_FIELDS,
        .store = &g->store,
        .stream = {.write = s_write, .close = s_close, .ctx = g},
        .app = {.on_msg = tw__gw_on_msg, .on_event = tw__gw_on_event,
                .on_test_request = tw__gw_on_test_request, .ctx = g},
    };
    if ((rc = tw_fix_session_init(&g->fs, &fc, &se)) != 0)
        return tw__err(err, rc, "session %s: %s", sc->name, se.msg);
    return 0;
}


int tw__gw_create(tw__gw **out, tw_trade_engine *e, uint32_t index, tw_error *err)
{
    const tw_trade_config *cfg = e->cfg;
    const tw_trade_session_cfg *sc = &cfg->sessions[index];
    tw__gw *g = calloc(1, sizeof(*g));
    if (!g)
        return tw__err(err, -ENOMEM, "out of memory");
    g->e = e;
    g->cfg = cfg;
    g->sc = sc;
    g->index = index;
    g->bell.fd = -1;
    g->backoff_ms = sc->reconnect_min_ms;
    g->busy = cfg->engine.busy_poll || e->opts.manual_net;
    /* Not tw_tsc_default()'s copy: its calibration (20 ms asleep) runs
     * beside the set-up (engine.c) and is not waited for here. */
    g->epoch_offset_ns = tw_clock_epoch_offset_ns();
    int rc = setup(g, err);
    if (rc != 0) {
        tw__gw_destroy(g);
        return rc;
    }
    *out = g;
    return 0;
}

void tw__gw_destroy(tw__gw *g)
{
    if (!g)
        return;
    if (g->xp)
        g->xp->ops->destroy(g->xp); /* the stack goes before its port */
    if (g->cap) {
        tw_port_capture_detach(g->port);
        tw_capture_stats cs;
        if (tw_capture_close(g->cap, &cs) != 0)
            fprintf(g->e->log, "tickwire trade: session %s: pcap = %s: write error\n",
                    g->sc->name, g->sc->pcap);
    }
    if (g->port && g->e->opts.close_port)
        g->e->opts.close_port(g->e->opts.port_ctx, g->index, g->port);
    if (g->have_store)
        tw_fix_store_close(&g->store);
    tw__bell_close(&g->bell);
    free(g->in_mem);
    free(g->out_mem);
    tw__gwfold_free(&g->f);
    free(g->sym_instr);
    free(g->hash);
    free(g->exec.ids[0]);
    free(g->exec.ids[1]);
    free(g->spill.q);
    free(g->lat.v);
    free(g);
}

tw_ring *tw__gw_in(tw__gw *g) { return g->in; }

tw_ring *tw__gw_out(tw__gw *g) { return g->out; }

tw__bell *tw__gw_bell(tw__gw *g) { return &g->bell; }

int tw__gw_fd(const tw__gw *g) { return g->xp->fd; }

/* The net core's thread, at the end of each poll and timer run. */
static void publish(tw__gw *g)
{
    /* Release pairs with the acquire-load in tw__gw_settled: once the
     * control thread sees it, every event of this session is in the ring. */
    __atomic_store_n(&g->settled, (uint32_t)(g->over && g->spill.n == 0), __ATOMIC_RELEASE);
}

int tw__gw_settled(const tw__gw *g)
{
    return (int)__atomic_load_n(&g->settled, __ATOMIC_ACQUIRE);
}

void tw__gw_stats(const tw__gw *g, tw_trade_session_stats *s, tw_trade_gw_stats *gs)
{
    if (s) {
        memset(s, 0, sizeof(*s));
        snprintf(s->name, sizeof(s->name), "%s", g->sc->name);
        s->sent = g->fs.st.msgs_out;
        s->received = g->fs.st.msgs_in;
        s->resends = g->fs.st.msgs_resent;
        s->reconnects = g->st.logons > 1 ? g->st.logons - 1 : 0;
        s->rejects = g->fs.st.rejects_rcvd;
    }
    if (gs)
        *gs = g->st;
}

size_t tw__gw_latency(const tw__gw *g, const tw_trade_latency **out)
{
    *out = g->lat.v;
    return g->lat.n;
}

int64_t tw__gw_first_logon_ns(const tw__gw *g) { return g->first_logon_ns; }
