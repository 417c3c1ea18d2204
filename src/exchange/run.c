/* The run's life cycle and the bar clock: waiting for subscribers, bars
 * (lockstep: the next one once the barrier has passed; paced: on the
 * interval, at most PACED_BURST per turn), Closed, Logout.  Called by the
 * venue and the connection; calls market data (a bar out) and the output. */
#include <errno.h>
#include <string.h>

#include "exchange/exchange_internal.h"
#include "tickwire/util.h"

/* Bars per turn at most (flat out, or a paced clock catching up after a
 * late turn: at 125,000 bars/s a turn 2 ms late owes 250). */
#define PACED_BURST 512

int64_t tw__xchg_bar_due_ns(const tw_xchg *x, uint64_t b)
{
    /* In double: exact to the ns for 2^53 ns (104 days) of bars. */
    return x->bars_t0_ns + (int64_t)((double)b * x->bar_ns);
}

void tw__xchg_run_to(tw_xchg *x, xs_run next)
{
    /* The run only goes forward: WAITING -> BARS -> CLOSED -> LOGOUT ->
     * DONE, a stop jumping ahead to LOGOUT. */
    TW_VERIFY(next > x->run && next <= RUN_DONE);
    TW_VERIFY(next != RUN_BARS || x->run == RUN_WAITING);
    TW_VERIFY(next != RUN_DONE || x->run == RUN_LOGOUT);
    x->run = next;
}

static int backlog_high(const tw_xchg *x, const xs_sess *s)
{
    const xs_conn *c = s->conn;
    return c && c->backlog && c->backlog(c->io.ctx) > x->cfg.backlog_high;
}

int tw__xchg_active(const xs_sess *s)
{
    return s->conn && s->fs.state == TW_FIX_ACTIVE;
}

/* Closed (340=3) to every session that had Open, as soon as it can take
 * it. */
void tw__xchg_send_closed_where_due(tw_xchg *x, int64_t now_ns)
{
    for (unsigned i = 0; i < x->n_sess; i++) {
        xs_sess *s = x->sess[i];
        if (s->opened && !s->closed_sent && tw__xchg_active(s) && s->fs.resend_until == 0)
            if (tw__xchg_send_status(x, s, '3', now_ns) == 0)
                s->closed_sent = 1;
    }
}

static void close_run(tw_xchg *x, int64_t now_ns)
{
    tw__xchg_run_to(x, RUN_CLOSED);
    x->closed_at_ns = now_ns;
    tw__xchg_log(x, NULL, "last bar sent (%llu bars): trading session closed",
                 (unsigned long long)x->n_bars);
    tw__xchg_send_closed_where_due(x, now_ns);
}

void tw__xchg_start_logout(tw_xchg *x, int64_t now_ns)
{
    tw__xchg_run_to(x, RUN_LOGOUT);
    x->logout_at_ns = now_ns;
    for (unsigned i = 0; i < x->n_sess; i++) {
        xs_sess *s = x->sess[i];
        if (tw__xchg_active(s))
            tw_fix_session_logout(&s->fs, "trading session closed",
                                  now_ns);
    }
}

/* The bar clock and the barrier.  Bounded: at most PACED_BURST bars. */
void tw__xchg_advance(tw_xchg *x, int64_t now_ns)
{
    if (x->in_emit)
        return;
    if (x->run == RUN_WAITING) {
        unsigned ready = 0;
        for (unsigned i = 0; i < x->n_sess; i++)
            ready += x->sess[i]->n_sub > 0 && x->sess[i]->ready && tw__xchg_active(x->sess[i]);
        if (ready < x->cfg.min_sessions)
            return;
        tw__xchg_run_to(x, RUN_BARS);
        /* A resumed run (resume.c) goes on from the bar after the last one
         * sent: that one is due now. */
        x->bars_t0_ns = now_ns - (int64_t)((double)(x->cur_bar + 1) * x->bar_ns);
        tw__xchg_log(x, NULL, "%u session(s) subscribed: bars start", ready);
    }
    if (x->run != RUN_BARS)
        return;
    TW_ASSERT(x->cur_bar < (int64_t)x->n_bars);
    if (x->cfg.lockstep) {
        if (x->awaiting) {
            for (unsigned i = 0; i < x->n_sess; i++) {
                xs_sess *s = x->sess[i];
                if (s->part && !s->acked)
                    return;
            }
            x->awaiting = 0;
        }
        if ((uint64_t)(x->cur_bar + 1) >= x->n_bars) {
            close_run(x, now_ns);
            return;
        }
        /* Every subscribed session must be there to take the bar: one that
         * is away (reconnecting) would miss it, one not yet ready may still
         * be subscribing. */
        for (unsigned i = 0; i < x->n_sess; i++) {
            xs_sess *s = x->sess[i];
            if (s->n_sub && (!tw__xchg_active(s) || !s->ready || backlog_high(x, s)))
                return;
        }
        tw__xchg_emit_bar(x, (uint64_t)(x->cur_bar + 1), now_ns);
        if (x->hasty) {
            /* hasty:BAR: the next bar at once, in this same call (its
             * SendingTime the TestRequest's, whatever the machine does). */
            x->hasty = 0;
            tw__xchg_advance(x, now_ns);
        }
        return;
    }
    for (int k = 0; k < PACED_BURST; k++) {
        uint64_t next = (uint64_t)(x->cur_bar + 1);
        int paced = x->bar_ns > 0;
        if (next >= x->n_bars) {
            /* The last bar lasts one interval too, then Closed. */
            if (!paced || now_ns >= tw__xchg_bar_due_ns(x, x->n_bars))
                close_run(x, now_ns);
            return;
        }
        int64_t due = paced ? tw__xchg_bar_due_ns(x, next) : now_ns;
        if (now_ns < due)
            return;
        for (unsigned i = 0; i < x->n_sess; i++)
            if (x->sess[i]->n_sub && backlog_high(x, x->sess[i])) {
                x->st.pace_held += paced;
                return;
            }
        if (paced && (uint64_t)(now_ns - due) > x->st.pace_lag_max_ns)
            x->st.pace_lag_max_ns = (uint64_t)(now_ns - due);
        tw__xchg_emit_bar(x, next, now_ns);
        if (x->run != RUN_BARS)
            return;
    }
}

