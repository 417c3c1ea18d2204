/* The venue (tickwire/exchange.h): configuration, creation, the poll that
 * turns timers, the stop and the summary.  Calls run one way, from here
 * down:
 *
 *   exchange.c  the venue
 *   resume.c    the stores read back at create
 *   conn.c      connections, Logon binding, sessions' callbacks
 *   run.c       the run's life cycle and the bar clock
 *   app.c       the application router
 *   md.c        market data          orders.c  orders
 *   barrier.c   the lockstep barrier
 *   output.c    sending, rejecting, logging, dropping a connection
 *
 * fault.c holds the --fault syntax; xchg_net.c and xchg_tcp.c drive the
 * venue over the userspace stack and over kernel TCP. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "exchange/exchange_internal.h"
#include "tickwire/util.h"

#define DEF_MAX_SESSIONS 64
#define DEF_MAX_CONNS 64
#define DEF_MAX_ORDERS 100000
#define DEF_MAX_ENTRIES 32
#define DEF_LOGON_TIMEOUT_NS 10000000000ll
#define DEF_GRACE_NS 30000000000ll
#define DEF_END_TIMEOUT_NS 10000000000ll
#define DEF_BACKLOG_HIGH (256u << 10)
#define DEF_MMAP_BYTES (1u << 20)
#define LOGOUT_WAIT_NS 3000000000ll /* the session's own logout timeout is 2 s */
#define POLL_MAX_NS 100000000ll     /* timers want a turn at least this often */


void tw_xchg_cfg_init(tw_xchg_cfg *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
}

int tw_xchg_create(tw_xchg **out, const tw_xchg_cfg *cfg, tw_error *err)
{
    *out = NULL;
    const char *sender = cfg->sender_comp_id ? cfg->sender_comp_id : "VENUE";
    if (!tw__xchg_comp_id_ok(sender, strlen(sender)))
        return tw__err(err, -EINVAL, "exchange: sender CompID '%s' is not [A-Za-z0-9_.-]{1,%d}",
                       sender, XS_COMPID_MAX);
    if (cfg->n_symbols == 0 || !cfg->symbols)
        return tw__err(err, -EINVAL, "exchange: no symbols");
    if (cfg->n_symbols > 4096)
        return tw__err(err, -EINVAL, "exchange: %u symbols (at most 4096)", cfg->n_symbols);
    for (unsigned i = 0; i < cfg->n_symbols; i++) {
        const tw_xchg_symbol *y = &cfg->symbols[i];
        if (!y->name || !tw_text_ok(y->name, strlen(y->name), XS_ID_MAX, 0))
            return tw__err(err, -EINVAL,
                           "exchange: symbol %u: name must be 1-%d printable characters", i,
                           XS_ID_MAX);
        if (!y->close || y->n_bars == 0)
            return tw__err(err, -EINVAL, "exchange: symbol %s has no bars", y->name);
        for (unsigned j = 0; j < i; j++)
            if (!strcmp(cfg->symbols[j].name, y->name))
                return tw__err(err, -EINVAL, "exchange: symbol %s given twice", y->name);
        for (size_t b = 0; b < y->n_bars; b++)
            if (isinf(y->close[b]))
                return tw__err(err, -EINVAL, "exchange: symbol %s: bar %zu is infinite",
                               y->name, b);
    }
    for (unsigned i = 0; i < cfg->n_faults; i++) {
        const tw_xchg_fault *f = &cfg->faults[i];
        if (f->kind < TW_XCHG_FAULT_DISCONNECT || f->kind > TW_XCHG_FAULT_HASTY ||
            (f->kind == TW_XCHG_FAULT_REJECT && f->every == 0))
            return tw__err(err, -EINVAL, "exchange: fault %u is not valid", i);
    }
    if (cfg->store_dir) {
        struct stat sb;
        if (stat(cfg->store_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            return tw__err(err, -ENOENT, "exchange: store directory %s does not exist",
                           cfg->store_dir);
    }
    tw_xchg *x = calloc(1, sizeof(*x));
    if (!x)
        return tw__err(err, -ENOMEM, "exchange: out of memory");
    x->cfg = *cfg;
    tw_xchg_cfg *c = &x->cfg;
    snprintf(x->sender, sizeof(x->sender), "%s", sender);
    c->sender_comp_id = x->sender;
    if (!c->max_sessions)
        c->max_sessions = DEF_MAX_SESSIONS;
    if (!c->max_conns)
        c->max_conns = DEF_MAX_CONNS;
    if (!c->max_orders)
        c->max_orders = DEF_MAX_ORDERS;
    if (!c->max_entries)
        c->max_entries = DEF_MAX_ENTRIES;
    if (!c->min_sessions)
        c->min_sessions = 1;
    if (!c->logon_timeout_ns)
        c->logon_timeout_ns = DEF_LOGON_TIMEOUT_NS;
    if (!c->reconnect_grace_ns)
        c->reconnect_grace_ns = DEF_GRACE_NS;
    if (!c->end_timeout_ns)
        c->end_timeout_ns = DEF_END_TIMEOUT_NS;
    if (!c->backlog_high)
        c->backlog_high = DEF_BACKLOG_HIGH;
    if (!c->store_mmap_bytes)
        c->store_mmap_bytes = DEF_MMAP_BYTES;
    if (!c->ts_digits)
        c->ts_digits = 6;
    if (c->ts_digits != 3 && c->ts_digits != 6 && c->ts_digits != 9)
        c->ts_digits = 6;
    x->n_sym = c->n_symbols;
    /* Paced: ticks across the instruments, or bars, per interval. */
    x->bar_ns = c->ticks_per_s ? (double)c->n_symbols * 1e9 / (double)c->ticks_per_s
                               : (double)c->bar_interval_ns;
    x->sym_name = calloc(x->n_sym, sizeof(*x->sym_name));
    x->sym_name_len = calloc(x->n_sym, sizeof(*x->sym_name_len));
    x->last_px_bar = calloc(x->n_sym, sizeof(*x->last_px_bar));
    x->px_text = calloc(x->n_sym, sizeof(*x->px_text));
    x->entry_len = calloc(x->n_sym, sizeof(*x->entry_len));
    x->entry = calloc(x->n_sym, sizeof(*x->entry));
    x->conns = calloc(c->max_conns, sizeof(*x->conns));
    x->rx_mem = malloc((size_t)c->max_conns * TW_FIX_RX_MIN);
    x->sess = calloc(c->max_sessions, sizeof(*x->sess));
    if (!x->sym_name || !x->sym_name_len || !x->last_px_bar || !x->px_text || !x->entry_len ||
        !x->entry || !x->conns || !x->rx_mem || !x->sess) {
        tw_xchg_destroy(x);
        return tw__err(err, -ENOMEM, "exchange: out of memory");
    }
    uint64_t longest = 0;
    for (unsigned i = 0; i < x->n_sym; i++) {
        x->sym_name[i] = strdup(c->symbols[i].name);
        if (!x->sym_name[i]) {
            tw_xchg_destroy(x);
            return tw__err(err, -ENOMEM, "exchange: out of memory");
        }
        x->sym_name_len[i] = strlen(x->sym_name[i]);
        x->last_px_bar[i] = -1;
        if (c->symbols[i].n_bars > longest)
            longest = c->symbols[i].n_bars;
    }
    x->n_bars = c->max_bars && c->max_bars < longest ? c->max_bars : longest;
    x->st.bars_total = x->n_bars;
    for (unsigned i = 0; i < c->max_conns; i++) {
        x->conns[i].x = x;
        x->conns[i].idx = (int)i;
        x->conns[i].rx = x->rx_mem + (size_t)i * TW_FIX_RX_MIN;
    }
    x->cur_bar = -1;
    x->run = RUN_WAITING;
    snprintf(x->run_hex, sizeof(x->run_hex), "%llx", (unsigned long long)c->run_id);
    int rc = c->store_dir ? tw__xchg_resume(x, err) : 0;
    if (rc != 0) {
        tw_xchg_destroy(x);
        return rc;
    }
    *out = x;
    return 0;
}

void tw_xchg_destroy(tw_xchg *x)
{
    if (!x)
        return;
    for (unsigned i = 0; i < x->n_sess; i++) {
        tw__xchg_sess_free(x->sess[i]);
    }
    if (x->sym_name)
        for (unsigned i = 0; i < x->n_sym; i++)
            free(x->sym_name[i]);
    free(x->sym_name);
    free(x->sym_name_len);
    free(x->last_px_bar);
    free(x->px_text);
    free(x->entry_len);
    free(x->entry);
    free(x->conns);
    free(x->rx_mem);
    free(x->sess);
    free(x);
}

const tw_xchg_stats *tw_xchg_get_stats(const tw_xchg *x)
{
    return &x->st;
}

int tw_xchg_done(const tw_xchg *x)
{
    return x->run == RUN_DONE;
}

/* ---- sessions ------------------------------------------------------------ */

/* ---- connections --------------------------------------------------------- */




/* ---- the run ------------------------------------------------------------- */

void tw_xchg_stop(tw_xchg *x, int64_t now_ns)
{
    x->now_ns = now_ns;
    if (x->run == RUN_LOGOUT || x->run == RUN_DONE)
        return;
    x->stopping = 1;
    tw__xchg_log(x, NULL, "stopping: Closed and Logout to every session");
    for (unsigned i = 0; i < x->n_sess; i++) {
        xs_sess *s = x->sess[i];
        if (s->opened && !s->closed_sent && tw__xchg_active(s) &&
            tw__xchg_send_status(x, s, '3', now_ns) == 0)
            s->closed_sent = 1;
    }
    tw__xchg_start_logout(x, now_ns);
    tw__xchg_reap(x);
}

int tw_xchg_idle(tw_xchg *x)
{
    for (unsigned k = 0; k < x->n_sess; k++) {
        xs_sess *s = x->sess[(x->grow_next + k) % x->n_sess];
        if (!s->has_store)
            continue;
        int rc = tw_fix_store_grow_ahead(&s->store);
        if (rc == 0)
            continue;
        x->grow_next = (x->grow_next + k + 1) % x->n_sess;
        if (rc < 0) {
            x->st.grow_errors++;
            return 0;
        }
        x->st.grow_ahead++;
        return 1;
    }
    return 0;
}

int64_t tw_xchg_poll(tw_xchg *x, int64_t now_ns)
{
    x->now_ns = now_ns;
    int64_t next = now_ns + POLL_MAX_NS;
    /* Connections: the Logon deadline; the slow fault's end. */
    for (unsigned i = 0; i < x->cfg.max_conns; i++) {
        xs_conn *c = &x->conns[i];
        if (c->state == CONN_PENDING && now_ns - c->opened_ns >= (int64_t)x->cfg.logon_timeout_ns) {
            x->st.conns_idle_closed++;
            tw__xchg_log(x, NULL, "connection closed: no Logon in %.1f s",
                         (double)x->cfg.logon_timeout_ns / 1e9);
            tw__xchg_drop_conn(x, c, now_ns);
        }
        if (c->state == CONN_PENDING && c->opened_ns + (int64_t)x->cfg.logon_timeout_ns < next)
            next = c->opened_ns + (int64_t)x->cfg.logon_timeout_ns;
        if ((c->state == CONN_PENDING || c->state == CONN_BOUND) && c->read_at_ns) {
            if (c->read_at_ns <= now_ns)
                c->read_at_ns = 0;
            else if (c->read_at_ns < next)
                next = c->read_at_ns;
        }
    }
    for (unsigned i = 0; i < x->n_sess; i++) {
        xs_sess *s = x->sess[i];
        if (s->conn)
            tw_fix_session_timer(&s->fs, now_ns);
        if (!tw__xchg_active(s)) {
            /* Read back from its store and not back yet: away since the
             * first poll. */
            if (s->n_sub && !s->ever_active && !s->away_since_ns)
                s->away_since_ns = now_ns ? now_ns : 1;
            if (s->n_sub && s->away_since_ns &&
                now_ns - s->away_since_ns >= (int64_t)x->cfg.reconnect_grace_ns) {
                x->st.sessions_dropped++;
                tw__xchg_log(x, s, "dropped: away for %.1f s",
                             (double)x->cfg.reconnect_grace_ns / 1e9);
                memset(s->sub, 0, x->n_sym);
                s->n_sub = 0;
                s->part = 0;
                s->away_since_ns = 0;
            }
            continue;
        }
        if (s->fs.resend_until != 0)
            continue;
        if (s->ack_after_gap && x->awaiting && s->part && !s->acked)
            tw__xchg_ack(x, s);
        if (s->ready_after_gap) {
            s->ready_after_gap = 0;
            s->ready = 1;
        }
        if (s->reissue_open) {
            s->reissue_open = 0;
            if (!s->ready)
                tw__xchg_send_open_request(x, s, now_ns);
        }
        if (s->reissue) {
            s->reissue = 0;
            if (x->awaiting && s->part && !s->acked && tw__xchg_send_test_request(x, s, now_ns) == 0)
                x->st.barrier_reissued++;
        }
    }
    if (x->run >= RUN_CLOSED)
        tw__xchg_send_closed_where_due(x, now_ns);
    tw__xchg_advance(x, now_ns);
    if (x->run == RUN_BARS && !x->cfg.lockstep && x->bar_ns > 0) {
        int64_t due = tw__xchg_bar_due_ns(x, (uint64_t)(x->cur_bar + 1));
        if (due < next)
            next = due > now_ns ? due : now_ns;
    } else if (x->run == RUN_BARS && !x->cfg.lockstep) {
        /* Flat out: again at once while bars went out; when a session's
         * backlog held them, its transport's drain wakes the driver. */
        uint64_t sent = x->st.bars;
        if (sent != x->bars_at_last_poll)
            next = now_ns;
        else if (now_ns + 1000000 < next)
            next = now_ns + 1000000;
        x->bars_at_last_poll = sent;
    }
    if (x->run == RUN_CLOSED) {
        int all_out = 1;
        for (unsigned i = 0; i < x->n_sess; i++) {
            xs_sess *s = x->sess[i];
            if (s->opened && !s->logged_out && (s->n_sub || tw__xchg_active(s)))
                all_out = 0;
        }
        if (all_out || now_ns - x->closed_at_ns >= (int64_t)x->cfg.end_timeout_ns)
            tw__xchg_start_logout(x, now_ns);
    }
    if (x->run == RUN_LOGOUT) {
        int left = 0;
        for (unsigned i = 0; i < x->n_sess; i++)
            left += x->sess[i]->conn != NULL;
        if (!left || now_ns - x->logout_at_ns >= LOGOUT_WAIT_NS) {
            tw__xchg_run_to(x, RUN_DONE);
            for (unsigned i = 0; i < x->cfg.max_conns; i++)
                tw__xchg_drop_conn(x, &x->conns[i], now_ns);
        }
    }
    tw__xchg_reap(x);
    return next;
}

size_t tw_xchg_summary(const tw_xchg *x, char *buf, size_t cap)
{
    const tw_xchg_stats *s = &x->st;
    int n = snprintf(
        buf, cap,
        "bars=%llu/%llu sessions=%llu logons=%llu orders=%llu fills=%llu rejects=%llu "
        "dup_clordid=%llu order_limit=%llu session_rejects=%llu business_rejects=%llu "
        "md_rejects=%llu unknown_symbols=%llu cancels=%llu barrier_acks=%llu "
        "pre_logon=%llu bad_logon=%llu idle_closed=%llu garbled_bytes=%llu "
        "faults_disconnect=%llu faults_gap=%llu faults_reject=%llu faults_slow=%llu "
        "faults_hasty=%llu",
        (unsigned long long)s->bars, (unsigned long long)s->bars_total,
        (unsigned long long)s->sessions, (unsigned long long)s->logons,
        (unsigned long long)s->orders, (unsigned long long)s->fills,
        (unsigned long long)s->order_rejects, (unsigned long long)s->dup_cl_ord_id,
        (unsigned long long)s->order_limit, (unsigned long long)s->session_rejects,
        (unsigned long long)s->business_rejects, (unsigned long long)s->md_rejects,
        (unsigned long long)s->unknown_symbols, (unsigned long long)s->cancels,
        (unsigned long long)s->barrier_acks, (unsigned long long)s->pre_logon,
        (unsigned long long)s->bad_logon, (unsigned long long)s->conns_idle_closed,
        (unsigned long long)s->garbled_bytes, (unsigned long long)s->faults_disconnect,
        (unsigned long long)s->faults_gap, (unsigned long long)s->faults_reject,
        (unsigned long long)s->faults_slow, (unsigned long long)s->faults_hasty);
    if (n >= 0 && (size_t)n < cap && !x->cfg.lockstep && x->bar_ns > 0) {
        int k = snprintf(buf + n, cap - (size_t)n, " pace_lag_max_us=%.1f pace_held=%llu",
                         (double)s->pace_lag_max_ns * 1e-3, (unsigned long long)s->pace_held);
        n = k < 0 ? n : n + k;
    }
    if (n < 0)
        n = 0;
    return (size_t)n < cap ? (size_t)n : (cap ? cap - 1 : 0);
}
