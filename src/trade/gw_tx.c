/* Intents from the strategy's ring into FIX messages (gw_internal.h):
 * orders, cancels, barrier acks (Heartbeats), Logout; the ClOrdIDs; the
 * latency samples of what was built; each intent handled is journaled as
 * OUT.  Intents wait in their ring while the session is not logged on (a
 * reconnect), which keeps lockstep orders in order with their barrier
 * acks across a disconnect. */
#include <stdio.h>
#include <string.h>

#include "tickwire/fix.h"
#include "trade/gw_internal.h"

static size_t put_hex(char *p, uint64_t v, int width)
{
    static const char hx[] = "0123456789abcdef";
    for (int i = width - 1; i >= 0; i--, v >>= 4)
        p[i] = hx[v & 15];
    return (size_t)width;
}

size_t tw_trade_clordid(char *buf, char kind, uint64_t run_id, uint64_t id)
{
    size_t n = 0;
    buf[n++] = kind;
    n += put_hex(buf + n, run_id, 12);
    buf[n++] = '-';
    n += put_hex(buf + n, id, 16);
    buf[n] = 0;
    TW_ASSERT(n < TW_TRADE_CLORDID_MAX);
    return n;
}

int tw_trade_clordid_parse(const char *s, size_t len, char *kind, uint64_t *run_id,
                           uint64_t *id)
{
    if (len != 30 || (s[0] != 'T' && s[0] != 'C') || s[13] != '-')
        return -EINVAL;
    uint64_t v[2] = {0, 0};
    for (int part = 0; part < 2; part++) {
        const char *p = part ? s + 14 : s + 1;
        int w = part ? 16 : 12;
        for (int i = 0; i < w; i++) {
            char c = p[i];
            unsigned d = (c >= '0' && c <= '9') ? (unsigned)(c - '0')
                         : (c >= 'a' && c <= 'f') ? (unsigned)(c - 'a' + 10)
                                                  : 16u;
            if (d > 15)
                return -EINVAL;
            v[part] = v[part] << 4 | d;
        }
    }
    *kind = s[0];
    *run_id = v[0];
    *id = v[1];
    return 0;
}

void tw__gw_subscribe(tw__gw *g)
{
    /* One V per instrument: a counterparty without a data dictionary
     * (QuickFIX with UseDataDictionary=N) takes no repeated tags. */
    for (uint32_t k = 0; k < g->f.n_sym; k++) {
        tw_fix_wbuf *w = tw_fix_session_begin(&g->fs, "V", g->now_ns);
        if (!w)
            return;
        char id[48];
        size_t n = put_hex(id, g->e->run_id, 12);
        id[n++] = '-';
        n += (size_t)snprintf(id + n, sizeof(id) - n, "%u-%llu", g->index,
                              (unsigned long long)++g->md_req_n);
        tw_fix_put_str(w, 262, id, n);
        tw_fix_put_char(w, 263, '1');
        tw_fix_put_u64(w, 264, 1);
        tw_fix_put_u64(w, 265, 1);
        tw_fix_put_u64(w, 267, 1);
        tw_fix_put_char(w, 269, '2');
        tw_fix_put_u64(w, 146, 1);
        tw_fix_put_cstr(w, 55, g->cfg->strategy_instruments[g->sym_instr[k]].symbol);
        if (tw_fix_session_send(&g->fs, g->now_ns) != 0)
            return;
    }
}

static void lat_record(tw__gw *g, const tw_out *o, uint64_t tsc_build)
{
    if (o->tsc_rx == 0)
        return; /* decided again by a recovery's replay: no live stamps */
    if (g->lat.open && o->tsc_rx == g->lat.last_rx) {
        g->lat.v[g->lat.n - 1].orders++;
        return;
    }
    g->lat.open = 0;
    g->st.latency_samples++;
    if (g->lat.n >= g->lat.cap)
        return;
    tw_trade_latency *l = &g->lat.v[g->lat.n++];
    l->tsc_rx = o->tsc_rx;
    l->tsc_tcp = o->tsc_tcp;
    l->tsc_parse = o->tsc_parse;
    l->tsc_decision = o->tsc_decision;
    l->tsc_build = tsc_build;
    l->tsc_tx = 0;
    l->bar = o->ref;
    l->instrument = o->instrument;
    l->orders = 1;
    g->lat.last_rx = o->tsc_rx;
    g->lat.open = 1;
}

static int send_order(tw__gw *g, const tw_out *o)
{
    const tw_trade_config *c = g->cfg;
    TW_VERIFY(o->instrument < c->n_instruments && o->instance < c->n_instances);
    tw_fix_wbuf *w = tw_fix_session_begin(&g->fs, "D", g->now_ns);
    if (!w)
        return -ENOTCONN;
    char id[TW_TRADE_CLORDID_MAX];
    size_t n = tw_trade_clordid(id, 'T', g->e->run_id, o->order_id);
    tw_fix_put_str(w, 11, id, n);
    tw_fix_put_cstr(w, 1, c->instances[o->instance].name);
    tw_fix_put_cstr(w, 55, c->strategy_instruments[o->instrument].symbol);
    tw_fix_put_char(w, 54, o->side == TW_SIDE_BUY ? '1' : '2');
    tw_fix_put_i64(w, 38, o->qty);
    tw_fix_put_char(w, 40, '1');
    tw_fix_put_ts(w, 60, tw__gw_epoch_ns(g), 6);
    int rc = tw_fix_session_send(&g->fs, g->now_ns);
    if (rc != 0)
        return rc;
    uint64_t tb = tw_tsc_read();
    g->st.orders_sent++;
    tw__gwfold_open_add(&g->f, o);
    lat_record(g, o, tb);
    return 0;
}

int tw__gw_send_cancel(tw__gw *g, uint64_t order_id, uint32_t instance, uint32_t instrument,
                       uint8_t side, int32_t qty)
{
    const tw_trade_config *c = g->cfg;
    TW_VERIFY(instrument < c->n_instruments && instance < c->n_instances);
    tw_fix_wbuf *w = tw_fix_session_begin(&g->fs, "F", g->now_ns);
    if (!w)
        return -ENOTCONN;
    char id[TW_TRADE_CLORDID_MAX], orig[TW_TRADE_CLORDID_MAX];
    size_t n = tw_trade_clordid(id, 'C', g->e->run_id, order_id);
    size_t m = tw_trade_clordid(orig, 'T', g->e->run_id, order_id);
    tw_fix_put_str(w, 11, id, n);
    tw_fix_put_str(w, 41, orig, m);
    tw_fix_put_cstr(w, 1, c->instances[instance].name);
    tw_fix_put_cstr(w, 55, c->strategy_instruments[instrument].symbol);
    tw_fix_put_char(w, 54, side == TW_SIDE_BUY ? '1' : '2');
    tw_fix_put_i64(w, 38, qty > 0 ? qty : 1);
    tw_fix_put_ts(w, 60, tw__gw_epoch_ns(g), 6);
    int rc = tw_fix_session_send(&g->fs, g->now_ns);
    if (rc == 0)
        g->st.cancels_sent++;
    return rc;
}

/* An intent handled: journaled as OUT (processes mode: through our core's
 * side of the segment, so the strategy's stream has it in order). */
static void journal_out(tw__gw *g, const tw_out *o)
{
    if (!g->e->procs) {
        tw__evlog_out(g->e, o);
        return;
    }
    int rc = tw__evlog_put(g->e, g->index, TW_JOURNAL_OUT, o);
    if (rc != 0 && g->journal_errors++ == 0)
        tw__gw_log(g, "journal append failed: %s (a restarted strategy would send again what is "
                   "not in it)", tw_strerror(rc));
}

/* Processes mode: an intent from the strategy process is outside input.
 * 1 when it can be acted on. */
static int intent_ok(tw__gw *g, const tw_out *o)
{
    const tw_trade_config *c = g->cfg;
    switch (o->type) {
    case TW_OUT_ORDER:
        return o->session == g->index && o->instance < c->n_instances &&
               o->instrument < c->n_instruments && o->qty > 0 &&
               (o->side == TW_SIDE_BUY || o->side == TW_SIDE_SELL);
    case TW_OUT_CANCEL:
        return o->session == g->index && o->instance < c->n_instances &&
               o->instrument < c->n_instruments &&
               (o->side == TW_SIDE_BUY || o->side == TW_SIDE_SELL);
    case TW_OUT_BARRIER_ACK:
    case TW_OUT_LOGOUT:
    case TW__OUT_STOPPED:
        return o->session == g->index;
    case TW_OUT_FINISHED:
    case TW__OUT_RESUMED:
        return g->index == 0;
    default:
        return 0;
    }
}

/* Processes mode: what the strategy process says to the gateway itself. */
static void strategy_note(tw__gw *g, const tw_out *o)
{
    tw_trade_engine *e = g->e;
    if (o->type == TW__OUT_STOPPED) {
        g->st_stopped = 1;
        /* 0: said again by a strategy that started after the STOP, from a
         * snapshot (its state is not the one at the STOP). */
        if (g->index == 0 && o->order_id)
            e->st_digest_stopped = o->order_id;
        return;
    }
    /* RESUMED: the figures of the strategy's (re)start. */
    pthread_mutex_lock(&e->figmu);
    if (e->n_figs < sizeof(e->figs) / sizeof(e->figs[0])) {
        tw__resumed *f = &e->figs[e->n_figs];
        uint32_t k = e->n_figs;
        e->n_figs++;
        tw__resumed_unpack(o, f);
        /* Its detection: the control's last one before it attached. */
        for (uint32_t i = 0; i < e->n_detects; i++)
            if (e->fig_detect_ns[i] < f->attach_ns && e->fig_detect_ns[i] > f->detect_ns) {
                f->detect_ns = e->fig_detect_ns[i];
                f->spawn_ns = e->fig_spawn_ns[i];
            }
        if (!f->detect_ns && e->recovered) {
            /* The first strategy of a restarted gateway. */
            double rs = (double)(f->replay_end_ns - f->attach_ns) / 1e9;
            fprintf(e->log,
                    "tickwire trade: gateway restart: the strategy attached at %.3f ms after the "
                    "engine's start, replay %.3f ms (%llu events, %llu bars: %.0f bars/s), resync "
                    "%.3f ms; first new bar at %.3f ms after the engine's start (%lld ns, "
                    "monotonic)\n",
                    (double)(f->attach_ns - e->created_ns) / 1e6, rs * 1e3,
                    (unsigned long long)f->events, (unsigned long long)f->bars,
                    rs > 0 ? (double)f->bars / rs : 0.0,
                    (double)(f->first_bar_ns - f->replay_end_ns) / 1e6,
                    (double)(f->first_bar_ns - e->created_ns) / 1e6, (long long)f->first_bar_ns);
            fflush(e->log);
        }
        if (f->detect_ns) {
            double rs = (double)(f->replay_end_ns - f->attach_ns) / 1e9;
            fprintf(e->log,
                    "tickwire trade: strategy restart %u: detected at %lld ns, attached %.3f ms "
                    "later, replay %.3f ms (%llu events, %llu bars: %.0f bars/s), resync %.3f ms; "
                    "detection -> first new bar %.3f ms (first bar at %lld ns, monotonic; of the "
                    "attach: detection -> spawned %.3f ms, -> its configuration read and "
                    "strategy built %.3f ms)\n",
                    k, (long long)f->detect_ns, (double)(f->attach_ns - f->detect_ns) / 1e6,
                    rs * 1e3, (unsigned long long)f->events, (unsigned long long)f->bars,
                    rs > 0 ? (double)f->bars / rs : 0.0,
                    (double)(f->first_bar_ns - f->replay_end_ns) / 1e6,
                    (double)(f->first_bar_ns - f->detect_ns) / 1e6, (long long)f->first_bar_ns,
                    f->spawn_ns ? (double)(f->spawn_ns - f->detect_ns) / 1e6 : -1.0,
                    f->spawn_ns ? (double)(f->start_ns - f->spawn_ns) / 1e6 : -1.0);
            fflush(e->log);
        }
    }
    pthread_mutex_unlock(&e->figmu);
}

void tw__gw_logout(tw__gw *g, const char *why)
{
    g->logout_requested = 1;
    if (g->fs.state == TW_FIX_ACTIVE) {
        (void)tw_fix_session_logout(&g->fs, why, g->now_ns);
    } else if (g->fs.state == TW_FIX_DISCONNECTED && g->xp->state == TW__XP_IDLE) {
        g->over = 1; /* nothing to log out of */
    }
    g->stage_since_ns = g->now_ns;
}

/* One intent; 0 when it was handled (sent, or dropped for good), 1 when it
 * must wait for the session. */
static int intent(tw__gw *g, const tw_out *o)
{
    if (g->e->procs) {
        if (!intent_ok(g, o)) {
            if (g->bad_intents++ == 0)
                tw__gw_log(g, "the strategy process wrote an intent that makes no sense (type %u, "
                           "session %u): dropped", o->type, o->session);
            return 0;
        }
        if (o->type == TW__OUT_STOPPED || o->type == TW__OUT_RESUMED) {
            strategy_note(g, o);
            return 0;
        }
        if (o->type == TW_OUT_FINISHED) {
            g->e->st_digest_finished = o->order_id;
            journal_out(g, o); /* a replay's FINISHED is then known as said */
            /* Release pairs with the control thread's acquire-load. */
            __atomic_store_n(&g->e->finished, 1, __ATOMIC_RELEASE);
            return 0;
        }
    }
    if (g->over) {
        /* Counted by type: nothing can carry it any more. */
        if (o->type == TW_OUT_BARRIER_ACK)
            g->st.barrier_acks_lost++;
        return 0;
    }
    if (g->fs.state != TW_FIX_ACTIVE) {
        if (o->type == TW_OUT_LOGOUT) {
            tw__gw_logout(g, NULL);
            return 0;
        }
        if (tw__gw_stopping(g) && g->fs.state == TW_FIX_DISCONNECTED) {
            /* Stopping with no connection (and none to come): what the
             * strategy still wrote cannot go; counted, and the ring drains
             * so that the ending goes on. */
            g->st.intents_dropped++;
            return 0;
        }
        return 1;
    }
    /* A message that took a sequence number is in the store: if the
     * stream then failed, the resend after the reconnect carries it (as
     * PossDup), so it must not be sent again as new. */
    uint64_t seq = g->fs.next_out;
    switch (o->type) {
    case TW_OUT_ORDER: {
        int rc = send_order(g, o);
        if (g->fs.next_out != seq)
            journal_out(g, o); /* in the store: sent, or resent after a reconnect */
        if (rc != 0 && g->fs.next_out == seq && g->fs.state != TW_FIX_ACTIVE)
            return 1;
        if (rc != 0 && g->fs.next_out == seq) {
            g->st.intents_dropped++;
            tw__gw_log(g, "order %016llx could not be sent: %s", (unsigned long long)o->order_id,
                       tw_strerror(rc));
        }
        return 0;
    }
    case TW_OUT_CANCEL: {
        int rc = tw__gw_send_cancel(g, o->order_id, o->instance, o->instrument, o->side, o->qty);
        if (g->fs.next_out != seq)
            journal_out(g, o);
        if (rc != 0 && g->fs.next_out == seq && g->fs.state != TW_FIX_ACTIVE)
            return 1;
        if (rc != 0 && g->fs.next_out == seq)
            g->st.intents_dropped++;
        return 0;
    }
    case TW_OUT_BARRIER_ACK: {
        char id[32] = "bar-";
        size_t n = 4 + tw_fix_fmt_u64(id + 4, o->ref);
        if (tw_fix_session_heartbeat(&g->fs, id, n, g->now_ns) == 0)
            g->st.barrier_acks++;
        else
            g->st.barrier_acks_lost++;
        journal_out(g, o); /* handled: a replay does not ack it again */
        return 0;
    }
    case TW_OUT_LOGOUT:
        tw__gw_logout(g, NULL);
        journal_out(g, o);
        return 0;
    default:
        TW_VERIFY(0 && "an intent type the strategy does not write");
        return 0;
    }
}

/* The ring the strategy's intents come in: our own (threads mode), or our
 * outbound ring of the segment while core_sync says LIVE or DRAIN (NULL
 * otherwise). */
tw_ring *tw__gw_intents_ring(tw__gw *g)
{
    if (!g->e->procs)
        return g->out;
    return g->att_st == TW_ATTACH_CORE_DOWN ? NULL : tw_attach_gw_out_ring(&g->e->att, g->index);
}

unsigned tw__gw_drain_intents(tw__gw *g)
{
    unsigned done = 0;
    tw_ring *r = tw__gw_intents_ring(g);
    if (!r)
        return 0;
    while (done < TW__GW_INTENTS_PER_TURN && !g->stream_closed &&
           g->xp->out_cap - g->xp->out_len >= TW__GW_OUT_ROOM) {
        const void *v;
        uint32_t n = tw_ring_peek_sc(r, 1, &v);
        if (n == 0)
            break;
        tw_out o;
        memcpy(&o, v, sizeof(o)); /* the segment's slot may change under us: one copy */
        int wait = intent(g, &o);
        tw_ring_release_sc(r, wait ? 0 : 1);
        if (wait)
            break;
        done++;
    }
    return done;
}
