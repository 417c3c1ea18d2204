/* A net core's shared state (gw_internal.h): events to the strategy
 * (numbered and journaled before their ring; a full ring spills them into
 * a queue sized for the most one feed of the receive buffer can make), and
 * the session's log line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "trade/gw_internal.h"

void tw__gw_log(tw__gw *g, const char *fmt, ...)
{
    if (g->e->opts.quiet)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(g->e->log, "tickwire trade: session %s: %s\n", g->sc->name, line);
    fflush(g->e->log);
}

void tw__gw_spill_drain(tw__gw *g)
{
    while (g->spill.n) {
        uint32_t run = g->spill.cap - g->spill.head;
        if (run > g->spill.n)
            run = g->spill.n;
        uint32_t k = tw_ring_enqueue_burst_sp(g->in, &g->spill.q[g->spill.head], run);
        if (k) {
            g->pushed = 1;
            g->spill.head = (g->spill.head + k) % g->spill.cap;
            g->spill.n -= k;
        }
        if (k < run)
            return;
    }
    g->spill.head = 0;
}

void tw__gw_push(tw__gw *g, tw_ev *ev)
{
    ev->session = (uint16_t)g->index;
    ev->now_ns = g->now_ns;
    if (ev->type == TW_EV_SESSION && ev->u.session.state == TW_SESSION_CLOSED)
        g->f.closed_seen = 1;
    if (g->e->procs) {
        /* Journaled, then into our inbound ring of the segment if a
         * strategy is attached and the ring has room; else the strategy
         * reads it from the journal (shm_attach.h). */
        int rc = tw__evlog_put(g->e, g->index, TW_JOURNAL_EV, ev);
        if (rc != 0 && g->journal_errors++ == 0)
            tw__gw_log(g, "journal append failed: %s (the strategy process cannot see this event)",
                       tw_strerror(rc));
        return;
    }
    /* Numbered and journaled before the ring: what the strategy sees is
     * in the journal first (evlog.c). */
    tw__inrec rec;
    tw__evlog_ev(g->e, ev, &rec);
    if (g->spill.n == 0 && tw_ring_enqueue_burst_sp(g->in, &rec, 1) == 1) {
        g->pushed = 1;
        uint32_t depth = tw_ring_count(g->in);
        if (depth > g->st.ring_max)
            g->st.ring_max = depth;
        return;
    }
    /* The feed bound makes this room certain (gw.c, at its top). */
    TW_VERIFY(g->spill.n < g->spill.cap);
    g->spill.q[(g->spill.head + g->spill.n) % g->spill.cap] = rec;
    g->spill.n++;
    if (g->spill.n > g->st.spill_max)
        g->st.spill_max = g->spill.n;
}

void tw__gw_push_session(tw__gw *g, tw_session_state st)
{
    tw_ev ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = TW_EV_SESSION;
    ev.u.session.state = st;
    tw__gw_push(g, &ev);
}
