/* A session's net core (trade_engine.h): transport -> FIX session ->
 * decoded events into the ring to the strategy core; intents from the
 * strategy's ring -> FIX messages -> transport.  Everything here runs on
 * the net core's thread (or the caller's, with manual_net) and touches
 * only this session's state, its transport, its store and its side of its
 * two rings.
 *
 * What the venue says, decoded (live.md, "The venue protocol"):
 *   X entries (279=0 269=2 55 278 [270])  -> BAR (no 270: NaN, a gap bar);
 *                                            PossDup bars already seen dropped
 *   TestRequest 112=bar-<i>                -> BARRIER (held by the session hook;
 *                                            the strategy's ack -> Heartbeat)
 *   ExecutionReport 150=F / 8 / 4          -> FILL / REJECT / CANCELED
 *                                            (PossDup ExecIDs seen: dropped)
 *   OrderCancelReject (9)                  -> CANCEL_REJECT
 *   TradingSessionStatus 340=3             -> SESSION CLOSED
 *   Logon / disconnect                     -> SESSION UP / DOWN
 *
 * Events never get lost to a full ring: they wait in a spill queue sized
 * for the most one feed of the receive buffer can make (an event needs at
 * least 17 bytes of input), and no more input is fed while it holds any.
 * Intents wait in their ring while the session is not logged on (a
 * reconnect), which is what keeps lockstep orders in order with their
 * barrier acks across a disconnect. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tickwire/capture.h"
#include "tickwire/decimal.h"
#include "tickwire/fix.h"
#include "tickwire/util.h"
#include "trade/engine_internal.h"

#define RX_CAP (128u << 10)
#define OUT_CAP (1u << 20)
#define OUT_ROOM 1024          /* out space one intent's message needs */
#define MIN_EVENT_BYTES 16     /* less than the smallest input that makes an event */
#define CLOSES_WIN 4096u       /* recent closes kept per instrument (late fills) */
#define EXEC_IDS (1u << 15)    /* ExecIDs remembered per generation */
#define TIMER_NS 10000000ll    /* the net core's periodic work: 10 ms */
#define INTENTS_PER_TURN 64
#define ATT_POLL_NS 50000ll    /* processes mode: the outbound ring's polling bound */

typedef struct open_order {
    uint64_t id;
    uint32_t instance;
    uint32_t instrument;
    int32_t qty;
    uint8_t side;
    uint8_t pad_[3];
} open_order;

typedef struct recent_close {
    int64_t bar;
    double px;
} recent_close;

struct tw__gw {
    tw_trade_engine *e;
    const tw_trade_config *cfg;
    const tw_trade_session_cfg *sc;
    uint32_t index;
    tw__xport *xp;
    tw_port *port; /* opened for us (stack), closed through opts.close_port */
    tw_capture *cap; /* `pcap =`: this session's frames (a writer thread of its own) */
    tw_fix_store store;
    int have_store;
    tw_fix_session fs;
    int64_t epoch_offset_ns;
    tw_ring *in, *out;
    void *in_mem, *out_mem;
    tw__bell bell;     /* wakes this core when the strategy writes to out */
    int pushed;        /* an event went into `in` this turn: ring the strategy */
    /* This session's instruments: local index -> the strategy's, and a
     * hash of their symbols. */
    uint32_t n_sym;
    uint32_t *sym_instr;
    uint32_t *hash;    /* local index + 1, 0: empty */
    uint32_t hash_mask;
    int64_t *last_bar; /* per local instrument: last bar forwarded, -1 */
    recent_close *closes; /* per local instrument, CLOSES_WIN */
    uint32_t *local_of; /* the strategy's instrument -> local (UINT32_MAX: not ours) */
    /* Events that found the ring full (numbered and journaled). */
    tw__inrec *spill;
    uint32_t spill_head, spill_n, spill_cap;
    tw_fix_md_entry md_entries[TW_FIX_MAX_FIELDS]; /* the decoder's X entries */
    /* Orders sent and not yet done (filled, rejected, canceled). */
    open_order *open;
    uint32_t n_open, open_cap;
    /* After a crash: the orders the journal saw done (every execution of
     * them came before the crash: one the venue resends is not applied
     * again), a hash set of ids + 1; and whether the journal holds this
     * session's SESSION CLOSED (a resent 340=3 is then a duplicate). */
    uint64_t *done_ids;
    uint32_t done_mask;
    int closed_seen;
    int64_t first_logon_ns; /* this process's first Logon (monotonic) */
    /* Processes mode (the strategy over the attach segment). */
    int att_st;             /* the last tw_attach_gw_core_sync: TW_ATTACH_CORE_* */
    int st_stopped;         /* the strategy's STOPPED marker came through our ring */
    uint64_t journal_errors;
    uint64_t bad_intents;   /* intents from the strategy process that made no sense */
    /* ExecIDs seen, two generations (the older one is forgotten when the
     * newer one is half full): a PossDup execution already applied is
     * not a second fill. */
    uint64_t *exec_ids[2];
    uint32_t exec_n[2];
    int exec_cur;
    /* Connection and ending. */
    int up;                 /* SESSION UP told to the strategy */
    int stream_closed;      /* the session closed the stream inside a call */
    int down_pending;       /* the transport went down with input still to feed */
    int conn_live;          /* a connection was attempted and not yet taken down */
    int logout_requested;   /* LOGOUT intent or the ending: no reconnect */
    int over;               /* the session is done for good */
    uint32_t settled;       /* atomic: over, and nothing left for the strategy
                               (the control thread reads it: tw__gw_settled) */
    int stop_stage;         /* TERM: 0, 1 draining, 2 cancels out, 3 logout out */
    int logged_on_once;
    int64_t stage_since_ns;
    int64_t next_connect_ns;
    uint32_t backoff_ms;
    uint64_t md_req_n;
    uint64_t text_ids;
    /* The turn. */
    int busy;               /* busy-polling core (else yielding) */
    uint32_t idle_turns;    /* turns in a row with nothing to do */
    int64_t now_ns;
    uint64_t cur_tsc_rx, cur_tsc_tcp;
    /* Latency samples. */
    tw_trade_latency *lat;
    uint32_t lat_n, lat_cap, lat_tx_from;
    uint64_t lat_last_rx;
    int lat_open;           /* lat[lat_n - 1] still collects this event's orders */
    tw_trade_gw_stats st;
};

/* ---- small helpers -------------------------------------------------------- */

static void publish(tw__gw *g);

/* The session's clock: the turn's monotonic ns (the session adds the
 * epoch offset for SendingTime). */
static int64_t snow(const tw__gw *g) { return g->now_ns; }

/* Epoch time for TransactTime (60): what SendingTime gets. */
static int64_t epoch(const tw__gw *g) { return tw_fix_session_epoch_ns(&g->fs, g->now_ns); }

static void logf_(tw__gw *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(tw__gw *g, const char *fmt, ...)
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

static uint32_t sym_find(const tw__gw *g, const char *p, size_t n)
{
    uint32_t h = (uint32_t)tw_fnv1a64(TW_FNV1A64_INIT, p, n) & g->hash_mask;
    for (uint32_t k = 0; k <= g->hash_mask; k++, h = (h + 1) & g->hash_mask) {
        uint32_t v = g->hash[h];
        if (v == 0)
            return UINT32_MAX;
        const char *s = g->cfg->strategy_instruments[g->sym_instr[v - 1]].symbol;
        if (strlen(s) == n && memcmp(s, p, n) == 0)
            return v - 1;
    }
    return UINT32_MAX;
}

static int parse_i64(const tw_fix_field *f, int64_t *out)
{
    return f ? tw_fix_to_i64(f->val, f->len, out) : -1;
}

/* ---- events to the strategy ---------------------------------------------- */

static void spill_drain(tw__gw *g)
{
    while (g->spill_n) {
        uint32_t run = g->spill_cap - g->spill_head;
        if (run > g->spill_n)
            run = g->spill_n;
        uint32_t k = tw_ring_enqueue_burst_sp(g->in, &g->spill[g->spill_head], run);
        if (k) {
            g->pushed = 1;
            g->spill_head = (g->spill_head + k) % g->spill_cap;
            g->spill_n -= k;
        }
        if (k < run)
            return;
    }
    g->spill_head = 0;
}

static void push(tw__gw *g, tw_ev *ev)
{
    ev->session = (uint16_t)g->index;
    ev->now_ns = g->now_ns;
    if (ev->type == TW_EV_SESSION && ev->u.session.state == TW_SESSION_CLOSED)
        g->closed_seen = 1;
    if (g->e->procs) {
        /* Journaled, then into our inbound ring of the segment if a
         * strategy is attached and the ring has room; else the strategy
         * reads it from the journal (shm_attach.h). */
        /* (Before the segment exists: the recovery at set-up, one thread.) */
        int rc = g->e->have_att ? tw_attach_gw_put(&g->e->att, g->index, TW_JOURNAL_EV, ev, NULL)
                                : tw_journal_append(&g->e->jr, TW_JOURNAL_EV, ev, NULL);
        if (rc != 0 && g->journal_errors++ == 0)
            logf_(g, "journal append failed: %s (the strategy process cannot see this event)",
                  tw_strerror(rc));
        return;
    }
    /* Numbered and journaled before the ring: what the strategy sees is
     * in the journal first (recover.c). */
    tw__inrec rec;
    tw__journal_ev(g->e, ev, &rec);
    if (g->spill_n == 0 && tw_ring_enqueue_burst_sp(g->in, &rec, 1) == 1) {
        g->pushed = 1;
        uint32_t depth = tw_ring_count(g->in);
        if (depth > g->st.ring_max)
            g->st.ring_max = depth;
        return;
    }
    /* The feed bound makes this room certain (see the top of the file). */
    TW_VERIFY(g->spill_n < g->spill_cap);
    g->spill[(g->spill_head + g->spill_n) % g->spill_cap] = rec;
    g->spill_n++;
    if (g->spill_n > g->st.spill_max)
        g->st.spill_max = g->spill_n;
}

static void push_session(tw__gw *g, tw_session_state st)
{
    tw_ev ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = TW_EV_SESSION;
    ev.u.session.state = st;
    push(g, &ev);
}

static tw_ev *ev_init(tw__gw *g, tw_ev *ev, uint8_t type)
{
    memset(ev, 0, sizeof(*ev));
    ev->type = type;
    ev->tsc_rx = g->cur_tsc_rx;
    ev->tsc_tcp = g->cur_tsc_tcp;
    ev->tsc_parse = tw_tsc_read();
    return ev;
}

/* ---- open orders ------------------------------------------------------------ */

static open_order *open_find(tw__gw *g, uint64_t id)
{
    for (uint32_t i = 0; i < g->n_open; i++)
        if (g->open[i].id == id)
            return &g->open[i];
    return NULL;
}

/* 1 when the journal saw order id done before a crash (see done_ids). */
static int done_before(const tw__gw *g, uint64_t id)
{
    if (!g->done_ids)
        return 0;
    for (uint32_t i = (uint32_t)(id * 0x9e3779b97f4a7c15ull >> 32) & g->done_mask;;
         i = (i + 1) & g->done_mask) {
        if (g->done_ids[i] == 0)
            return 0;
        if (g->done_ids[i] == id + 1)
            return 1;
    }
}

static void open_remove(tw__gw *g, uint64_t id)
{
    open_order *o = open_find(g, id);
    if (o) {
        *o = g->open[--g->n_open];
        TW_ASSERT(g->n_open < g->open_cap);
    }
}

/* ---- execution ids ------------------------------------------------------------ */

/* 1 if seen before; else remembers it and returns 0. */
static int exec_seen(tw__gw *g, const char *p, size_t n)
{
    uint64_t h = tw_fnv1a64(TW_FNV1A64_INIT, p, n) | 1u;
    const uint32_t mask = EXEC_IDS - 1;
    for (int gen = 0; gen < 2; gen++) {
        const uint64_t *t = g->exec_ids[gen];
        for (uint32_t k = 0, i = (uint32_t)h & mask; k < EXEC_IDS; k++, i = (i + 1) & mask) {
            if (t[i] == 0)
                break;
            if (t[i] == h)
                return 1;
        }
    }
    if (g->exec_n[g->exec_cur] >= EXEC_IDS / 2) {
        g->exec_cur ^= 1;
        memset(g->exec_ids[g->exec_cur], 0, EXEC_IDS * sizeof(uint64_t));
        g->exec_n[g->exec_cur] = 0;
    }
    uint64_t *t = g->exec_ids[g->exec_cur];
    uint32_t i = (uint32_t)h & mask;
    while (t[i] != 0)
        i = (i + 1) & mask;
    t[i] = h;
    g->exec_n[g->exec_cur]++;
    return 0;
}

/* ---- ClOrdIDs --------------------------------------------------------------------- */

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

/* The order id a ClOrdID of ours names, or -1 (not ours: logged, counted). */
static int order_of(tw__gw *g, const tw_fix_field *f, uint64_t *id)
{
    char kind;
    uint64_t run;
    if (!f || tw_trade_clordid_parse(f->val, f->len, &kind, &run, id) != 0) {
        g->st.bad_app_msgs++;
        logf_(g, "an execution for a ClOrdID that is not ours: '%.*s'", f ? (int)f->len : 0,
              f ? f->val : "");
        return -1;
    }
    if (run != (g->e->run_id & TW_TRADE_RUN_ID_MASK)) {
        g->st.foreign_execs++;
        logf_(g, "an execution of another run's order %.*s: ignored", (int)f->len, f->val);
        return -1;
    }
    return 0;
}

/* ---- what the venue sends ----------------------------------------------------------- */

static void remember_close(tw__gw *g, uint32_t local, uint64_t bar, double px)
{
    recent_close *c = &g->closes[(size_t)local * CLOSES_WIN + (bar & (CLOSES_WIN - 1))];
    c->bar = (int64_t)bar;
    c->px = px;
}

static const recent_close *close_at(const tw__gw *g, uint32_t local, int64_t bar)
{
    const recent_close *c = &g->closes[(size_t)local * CLOSES_WIN + ((uint64_t)bar & (CLOSES_WIN - 1))];
    return c->bar == bar ? c : NULL;
}

/* Which bar's close a fill of a signal order (decided on bar b) got: on
 * time (the close of b, or of the last priced bar before a gap bar b), a
 * later bar (paced runs: the price of latency), or none we kept. */
static void classify_fill(tw__gw *g, uint32_t local, uint64_t b, double px)
{
    int64_t last = g->last_bar[local];
    if ((int64_t)b > last || last - (int64_t)b >= (int64_t)CLOSES_WIN - 1) {
        g->st.unmatched_fills++;
        return;
    }
    for (int64_t j = (int64_t)b; j >= 0 && j > last - (int64_t)CLOSES_WIN + 1; j--) {
        const recent_close *c = close_at(g, local, j);
        if (!c)
            break;
        if (isnan(c->px))
            continue;
        if (memcmp(&c->px, &px, sizeof(px)) == 0)
            return; /* on time */
        break;
    }
    for (int64_t j = (int64_t)b + 1; j <= last; j++) {
        const recent_close *c = close_at(g, local, j);
        if (c && !isnan(c->px) && memcmp(&c->px, &px, sizeof(px)) == 0) {
            g->st.late_fills++;
            g->st.late_fill_bars += (uint64_t)(j - (int64_t)b);
            return;
        }
    }
    g->st.unmatched_fills++;
}

static int stopping(const tw__gw *g)
{
    /* Acquire pairs with the control thread's release-store of phase. */
    return __atomic_load_n(&g->e->phase, __ATOMIC_ACQUIRE) == TW__PH_STOPPING;
}

static void forward_bar(tw__gw *g, uint32_t local, uint64_t bar, double close, int possdup);

static void on_bar_entry(tw__gw *g, const tw_fix_field *sym, const tw_fix_field *idx,
                         const tw_fix_field *px, int possdup)
{
    uint64_t bar;
    uint32_t local;
    if (!sym || !idx || tw_parse_u64(idx->val, idx->len, &bar) != 0 ||
        (local = sym_find(g, sym->val, sym->len)) == UINT32_MAX) {
        g->st.bad_app_msgs++;
        logf_(g, "an X entry without a known 55 or a numeric 278: ignored");
        return;
    }
    double close = NAN;
    if (px && tw_decimal_to_double(px->val, px->len, &close) != 0) {
        g->st.bad_app_msgs++;
        logf_(g, "X entry %.*s bar %llu: 270='%.*s' is not a FIX float: ignored", (int)sym->len,
              sym->val, (unsigned long long)bar, (int)px->len, px->val);
        return;
    }
    forward_bar(g, local, bar, close, possdup);
}

static void forward_bar(tw__gw *g, uint32_t local, uint64_t bar, double close, int possdup)
{
    if (possdup && (int64_t)bar <= g->last_bar[local]) {
        g->st.possdup_bars_dropped++;
        return;
    }
    if (stopping(g)) {
        g->st.bars_after_stop++;
        return;
    }
    if ((int64_t)bar > g->last_bar[local])
        g->last_bar[local] = (int64_t)bar;
    remember_close(g, local, bar, close);
    g->st.bars++;
    g->st.gap_bars += isnan(close);
    tw_ev ev;
    ev_init(g, &ev, TW_EV_BAR);
    ev.instrument = g->sym_instr[local];
    ev.u.bar.index = bar;
    ev.u.bar.close = close;
    push(g, &ev);
}

/* The one-pass decoder's entries (prices already float64, NaN when 270
 * is absent). */
static void on_md_entries(tw__gw *g, const tw_fix_decoded *d, int possdup)
{
    for (uint32_t k = 0; k < d->u.md.n_entries; k++) {
        const tw_fix_md_entry *en = &d->entries[k];
        if (en->update_action != '0' || en->entry_type != '2')
            continue; /* not a New Trade entry: not a bar */
        uint64_t bar;
        uint32_t local;
        if (tw_parse_u64(en->entry_id.p, en->entry_id.len, &bar) != 0 ||
            (local = sym_find(g, en->symbol.p, en->symbol.len)) == UINT32_MAX) {
            g->st.bad_app_msgs++;
            logf_(g, "an X entry without a known 55 or a numeric 278: ignored");
            continue;
        }
        forward_bar(g, local, bar, en->px_f64, possdup);
    }
}

static void on_md_incremental(tw__gw *g, const tw_fix_msg *m, int possdup)
{
    const tw_fix_field *sym = NULL, *idx = NULL, *px = NULL;
    int in_entry = 0, trade = 0;
    for (uint32_t i = 0; i < m->count; i++) {
        const tw_fix_field *f = &m->fields[i];
        if (f->tag == 279) {
            if (in_entry && trade)
                on_bar_entry(g, sym, idx, px, possdup);
            in_entry = 1;
            trade = 0;
            sym = idx = px = NULL;
            if (f->len != 1 || f->val[0] != '0')
                in_entry = 0; /* not a New entry: not a bar */
            continue;
        }
        if (!in_entry)
            continue;
        switch (f->tag) {
        case 269: trade = f->len == 1 && f->val[0] == '2'; break;
        case 55: sym = f; break;
        case 278: idx = f; break;
        case 270: px = f; break;
        default: break;
        }
    }
    if (in_entry && trade)
        on_bar_entry(g, sym, idx, px, possdup);
}

static void on_exec_report(tw__gw *g, const tw_fix_msg *m, int possdup)
{
    const tw_fix_field *et = tw_fix_get(m, 150), *xid = tw_fix_get(m, 17);
    if (!et || et->len != 1 || !xid) {
        g->st.bad_app_msgs++;
        logf_(g, "an ExecutionReport without 150 or 17: ignored");
        return;
    }
    char type = et->val[0];
    if (type != 'F' && type != '8' && type != '4')
        return; /* New (0) and the like: nothing the strategy needs */
    if (exec_seen(g, xid->val, xid->len)) {
        g->st.dup_execs++;
        return;
    }
    (void)possdup; /* any ExecID seen before is a duplicate, PossDup or not */
    uint64_t id;
    const tw_fix_field *ref = type == '4' ? tw_fix_get(m, 41) : NULL;
    if (order_of(g, ref ? ref : tw_fix_get(m, 11), &id) != 0)
        return;
    if (done_before(g, id) && !open_find(g, id)) {
        /* Resent after a crash: the journal has it applied already. */
        g->st.dup_execs++;
        return;
    }
    tw_ev ev;
    ev_init(g, &ev, TW_EV_FILL);
    if (type == 'F') {
        int64_t qty, leaves = -1;
        const tw_fix_field *lp = tw_fix_get(m, 31), *sd = tw_fix_get(m, 54);
        double px;
        if (parse_i64(tw_fix_get(m, 32), &qty) != 0 || !lp ||
            tw_decimal_to_double(lp->val, lp->len, &px) != 0 || !sd || sd->len != 1) {
            g->st.bad_app_msgs++;
            logf_(g, "a fill without a usable 32, 31 or 54: ignored");
            return;
        }
        (void)parse_i64(tw_fix_get(m, 151), &leaves);
        ev.side = sd->val[0] == '1' ? TW_SIDE_BUY : sd->val[0] == '2' ? TW_SIDE_SELL : 0;
        ev.u.fill.order_id = id;
        ev.u.fill.qty = qty;
        ev.u.fill.px = px;
        g->st.fills++;
        open_order *o = open_find(g, id);
        if (o && tw_order_id_kind(id) == TW_ORDER_SIGNAL && g->local_of[o->instrument] != UINT32_MAX)
            classify_fill(g, g->local_of[o->instrument], tw_order_id_seq(id), px);
        if (leaves == 0)
            open_remove(g, id);
    } else if (type == '8') {
        int64_t reason = -1;
        (void)parse_i64(tw_fix_get(m, 103), &reason);
        const tw_fix_field *tx = tw_fix_get(m, 58);
        ev.type = TW_EV_REJECT;
        ev.u.reject.order_id = id;
        ev.u.reject.reason = (int32_t)reason;
        ev.u.reject.text_id = tx ? (uint32_t)++g->text_ids : 0;
        g->st.rejects++;
        logf_(g, "order %016llx rejected: 103=%lld 58='%.*s' (text %u)", (unsigned long long)id,
              (long long)reason, tx ? (int)tx->len : 0, tx ? tx->val : "", ev.u.reject.text_id);
        open_remove(g, id);
    } else {
        ev.type = TW_EV_CANCELED;
        ev.u.order.order_id = id;
        g->st.canceled++;
        open_remove(g, id);
    }
    push(g, &ev);
}

static void on_cancel_reject(tw__gw *g, const tw_fix_msg *m)
{
    uint64_t id;
    if (order_of(g, tw_fix_get(m, 41), &id) != 0)
        return;
    tw_ev ev;
    ev_init(g, &ev, TW_EV_CANCEL_REJECT);
    ev.u.order.order_id = id;
    g->st.cancel_rejects++;
    push(g, &ev);
}

static void on_msg(void *ctx, tw_fix_session *s, const tw_fix_decoded *d, int possdup)
{
    tw__gw *g = ctx;
    const tw_fix_msg *m = &d->msg;
    (void)s;
    if (m->msg_type_len == 1) {
        switch (m->msg_type[0]) {
        case 'X':
            /* The one-pass path; anything it does not take whole (more
             * entries than our array, a field it refuses) is read field by
             * field, entry by entry, and judged there. */
            if (d->rc == 0 && d->kind == TW_FIX_K_MD_INCREMENTAL)
                on_md_entries(g, d, possdup);
            else
                on_md_incremental(g, m, possdup);
            return;
        case '8': on_exec_report(g, m, possdup); return;
        case '9': on_cancel_reject(g, m); return;
        case 'h': {
            const tw_fix_field *st = tw_fix_get(m, 340);
            if (st && st->len == 1 && st->val[0] == '3' && (!possdup || !g->closed_seen)) {
                logf_(g, "the venue closed the trading session (340=3)");
                push_session(g, TW_SESSION_CLOSED);
            }
            return;
        }
        case 'Y': {
            const tw_fix_field *r = tw_fix_get(m, 281);
            g->st.md_rejects++;
            logf_(g, "the venue rejected a market data request (262=%.*s 281=%.*s)",
                  tw_fix_get(m, 262) ? (int)tw_fix_get(m, 262)->len : 0,
                  tw_fix_get(m, 262) ? tw_fix_get(m, 262)->val : "", r ? (int)r->len : 0,
                  r ? r->val : "");
            return;
        }
        case 'W':
            return; /* a snapshot of the last bar: the replay's bars come as X */
        default: break;
        }
    }
    g->st.bad_app_msgs++;
    logf_(g, "application message 35=%.*s not handled", (int)m->msg_type_len, m->msg_type);
}

/* The lockstep barrier: hold TestRequest bar-<i> (it travels to the
 * strategy behind the bar); answer any other at once. */
static int on_test_request(void *ctx, tw_fix_session *s, const char *id, size_t len)
{
    tw__gw *g = ctx;
    (void)s;
    uint64_t i;
    if (len < 5 || memcmp(id, "bar-", 4) != 0 || tw_parse_u64(id + 4, len - 4, &i) != 0)
        return 0;
    if (stopping(g))
        return 1; /* no more bars: never answered */
    tw_ev ev;
    ev_init(g, &ev, TW_EV_BARRIER);
    ev.u.barrier.id = i;
    push(g, &ev);
    return 1;
}

static void subscribe(tw__gw *g)
{
    /* One V per instrument: a counterparty without a data dictionary
     * (QuickFIX with UseDataDictionary=N) takes no repeated tags. */
    for (uint32_t k = 0; k < g->n_sym; k++) {
        tw_fix_wbuf *w = tw_fix_session_begin(&g->fs, "V", snow(g));
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
        if (tw_fix_session_send(&g->fs, snow(g)) != 0)
            return;
    }
}

static void on_event(void *ctx, tw_fix_session *s, tw_fix_event ev, const char *text)
{
    tw__gw *g = ctx;
    (void)s;
    switch (ev) {
    case TW_FIX_EV_LOGON:
        if (!g->first_logon_ns)
            g->first_logon_ns = tw_clock_now_ns(); /* the recovery's figures */
        g->st.logons++;
        g->logged_on_once = 1;
        g->backoff_ms = g->sc->reconnect_min_ms;
        g->fs.cfg.reset_on_logon = 0; /* a reconnect resumes from the store */
        logf_(g, "logged on (next out %llu, next in %llu)", (unsigned long long)g->fs.next_out,
              (unsigned long long)g->fs.next_in);
        subscribe(g);
        if (!g->up) {
            g->up = 1;
            push_session(g, TW_SESSION_UP);
        }
        break;
    case TW_FIX_EV_LOGOUT: logf_(g, "logged out (%s)", text ? text : ""); break;
    case TW_FIX_EV_DISCONNECT: logf_(g, "disconnected: %s", text ? text : ""); break;
    case TW_FIX_EV_REJECT_SENT: logf_(g, "sent a session Reject: %s", text ? text : ""); break;
    case TW_FIX_EV_REJECT_RCVD: logf_(g, "the venue sent a session Reject"); break;
    case TW_FIX_EV_GAP: logf_(g, "inbound gap: %s (ResendRequest sent)", text ? text : ""); break;
    case TW_FIX_EV_GARBLED: break; /* counted by the session */
    case TW_FIX_EV_RESEND: logf_(g, "answered a ResendRequest"); break;
    }
}

/* ---- the stream ---------------------------------------------------------------------- */

int tw__xport_write(tw__xport *t, const char *buf, size_t len)
{
    if (t->state != TW__XP_UP)
        return -ENOTCONN;
    if (t->out_off && t->out_len + len > t->out_cap) {
        memmove(t->out, t->out + t->out_off, t->out_len - t->out_off);
        t->out_len -= t->out_off;
        t->out_off = 0;
    }
    if (t->out_len + len > t->out_cap)
        return -ENOBUFS;
    memcpy(t->out + t->out_len, buf, len);
    t->out_len += len;
    return 0;
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
    g->next_connect_ns = g->now_ns + (int64_t)g->backoff_ms * 1000000;
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
        tw_fix_session_disconnected(&g->fs, snow(g));
    if (g->xp->state != TW__XP_IDLE)
        g->xp->ops->close(g->xp, g->now_ns);
    g->xp->rx_len = 0;
    g->xp->out_off = g->xp->out_len = 0;
    g->st.disconnects++;
    if (g->up) {
        g->up = 0;
        push_session(g, TW_SESSION_DOWN);
    }
    if (g->logout_requested || g->stop_stage) {
        g->over = 1;
        logf_(g, "connection closed (%s): session over", why);
        return;
    }
    logf_(g, "connection lost (%s): reconnecting in %u ms", why, g->backoff_ms);
    schedule_reconnect(g);
}

/* The session ends here, whatever state it is in. */
static void give_up(tw__gw *g)
{
    if (g->xp->state != TW__XP_IDLE)
        g->xp->ops->close(g->xp, g->now_ns);
    if (g->fs.state != TW_FIX_DISCONNECTED)
        tw_fix_session_disconnected(&g->fs, snow(g));
    if (g->up) {
        g->up = 0;
        push_session(g, TW_SESSION_DOWN);
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
        logf_(g, "cannot connect to %s:%u: %s; again in %u ms", g->sc->host, g->sc->port,
              g->xp->why, g->backoff_ms);
        schedule_reconnect(g);
    }
}

/* ---- intents to the venue ------------------------------------------------------------- */

static void lat_record(tw__gw *g, const tw_out *o, uint64_t tsc_build)
{
    if (o->tsc_rx == 0)
        return; /* decided again by a recovery's replay: no live stamps */
    if (g->lat_open && o->tsc_rx == g->lat_last_rx) {
        g->lat[g->lat_n - 1].orders++;
        return;
    }
    g->lat_open = 0;
    g->st.latency_samples++;
    if (g->lat_n >= g->lat_cap)
        return;
    tw_trade_latency *l = &g->lat[g->lat_n++];
    l->tsc_rx = o->tsc_rx;
    l->tsc_tcp = o->tsc_tcp;
    l->tsc_parse = o->tsc_parse;
    l->tsc_decision = o->tsc_decision;
    l->tsc_build = tsc_build;
    l->tsc_tx = 0;
    l->bar = o->ref;
    l->instrument = o->instrument;
    l->orders = 1;
    g->lat_last_rx = o->tsc_rx;
    g->lat_open = 1;
}

static int send_order(tw__gw *g, const tw_out *o)
{
    const tw_trade_config *c = g->cfg;
    TW_VERIFY(o->instrument < c->n_instruments && o->instance < c->n_instances);
    tw_fix_wbuf *w = tw_fix_session_begin(&g->fs, "D", snow(g));
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
    tw_fix_put_ts(w, 60, epoch(g), 6);
    int rc = tw_fix_session_send(&g->fs, snow(g));
    if (rc != 0)
        return rc;
    uint64_t tb = tw_tsc_read();
    g->st.orders_sent++;
    if (g->n_open < g->open_cap)
        g->open[g->n_open++] = (open_order){.id = o->order_id, .instance = o->instance,
                                            .instrument = o->instrument, .qty = o->qty,
                                            .side = o->side};
    lat_record(g, o, tb);
    return 0;
}

static int send_cancel(tw__gw *g, uint64_t order_id, uint32_t instance, uint32_t instrument,
                       uint8_t side, int32_t qty)
{
    const tw_trade_config *c = g->cfg;
    TW_VERIFY(instrument < c->n_instruments && instance < c->n_instances);
    tw_fix_wbuf *w = tw_fix_session_begin(&g->fs, "F", snow(g));
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
    tw_fix_put_ts(w, 60, epoch(g), 6);
    int rc = tw_fix_session_send(&g->fs, snow(g));
    if (rc == 0)
        g->st.cancels_sent++;
    return rc;
}

/* An intent handled: journaled as OUT (processes mode: through our core's
 * side of the segment, so the strategy's stream has it in order). */
static void journal_out(tw__gw *g, const tw_out *o)
{
    if (!g->e->procs) {
        tw__journal_out(g->e, o);
        return;
    }
    int rc = tw_attach_gw_put(&g->e->att, g->index, TW_JOURNAL_OUT, o, NULL);
    if (rc != 0 && g->journal_errors++ == 0)
        logf_(g, "journal append failed: %s (a restarted strategy would send again what is "
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
        if (g->index == 0)
            e->st_digest_stopped = o->order_id;
        return;
    }
    /* RESUMED: the figures of the strategy's (re)start. */
    pthread_mutex_lock(&e->figmu);
    if (e->n_figs < sizeof(e->figs) / sizeof(e->figs[0])) {
        tw__resumed *f = &e->figs[e->n_figs];
        uint32_t k = e->n_figs;
        e->n_figs++;
        memset(f, 0, sizeof(*f));
        f->start_ns = (int64_t)o->tsc_decision;
        f->attach_ns = (int64_t)o->order_id;
        f->replay_end_ns = (int64_t)o->ref;
        f->first_bar_ns = (int64_t)o->tsc_rx;
        f->bars = o->tsc_tcp;
        f->events = o->tsc_parse;
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

static void do_logout(tw__gw *g, const char *why)
{
    g->logout_requested = 1;
    if (g->fs.state == TW_FIX_ACTIVE) {
        (void)tw_fix_session_logout(&g->fs, why, snow(g));
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
                logf_(g, "the strategy process wrote an intent that makes no sense (type %u, "
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
            do_logout(g, NULL);
            return 0;
        }
        if (stopping(g) && g->fs.state == TW_FIX_DISCONNECTED) {
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
            logf_(g, "order %016llx could not be sent: %s", (unsigned long long)o->order_id,
                  tw_strerror(rc));
        }
        return 0;
    }
    case TW_OUT_CANCEL: {
        int rc = send_cancel(g, o->order_id, o->instance, o->instrument, o->side, o->qty);
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
        if (tw_fix_session_heartbeat(&g->fs, id, n, snow(g)) == 0)
            g->st.barrier_acks++;
        else
            g->st.barrier_acks_lost++;
        journal_out(g, o); /* handled: a replay does not ack it again */
        return 0;
    }
    case TW_OUT_LOGOUT:
        do_logout(g, NULL);
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
static tw_ring *intents_ring(tw__gw *g)
{
    if (!g->e->procs)
        return g->out;
    return g->att_st == TW_ATTACH_CORE_DOWN ? NULL : tw_attach_gw_out_ring(&g->e->att, g->index);
}

static unsigned drain_intents(tw__gw *g)
{
    unsigned done = 0;
    tw_ring *r = intents_ring(g);
    if (!r)
        return 0;
    while (done < INTENTS_PER_TURN && !g->stream_closed &&
           g->xp->out_cap - g->xp->out_len >= OUT_ROOM) {
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

/* ---- the ending (TERM) ------------------------------------------------------------------- */

static void stop_progress(tw__gw *g)
{
    tw_trade_engine *e = g->e;
    if (g->over)
        return;
    if (g->stop_stage == 0) {
        g->stop_stage = 1;
        g->stage_since_ns = g->now_ns;
    }
    if (g->stop_stage == 1) {
        /* Acquire pairs with the strategy core's release-store once it
         * has written its last intents: after it, the ring holds them all. */
        if (e->procs) {
            /* The strategy process's marker is behind every intent it
             * decided before the STOP record. */
            tw_ring *r = intents_ring(g);
            if (!g->st_stopped || !r || tw_ring_count(r))
                return;
        } else if (!__atomic_load_n(&e->strategy_stopped, __ATOMIC_ACQUIRE) ||
                   tw_ring_count(g->out)) {
            return;
        }
        if (g->fs.state != TW_FIX_ACTIVE) {
            g->stop_stage = 3;
            g->logout_requested = 1;
            g->stage_since_ns = g->now_ns;
            if (g->fs.state == TW_FIX_DISCONNECTED)
                give_up(g); /* down, or connecting: nothing to log out of */
            return;
        }
        for (uint32_t i = 0; i < g->n_open; i++) {
            const open_order *o = &g->open[i];
            (void)send_cancel(g, o->id, o->instance, o->instrument, o->side, o->qty);
        }
        if (g->n_open)
            logf_(g, "stopping: cancel requested for %u open orders", g->n_open);
        g->stop_stage = 2;
        g->stage_since_ns = g->now_ns;
    }
    if (g->stop_stage == 2) {
        if (g->n_open && g->now_ns - g->stage_since_ns < (int64_t)e->opts.cancel_wait_ms * 1000000)
            return;
        g->stop_stage = 3;
        do_logout(g, "trader stopping");
    }
}

static void ending_timeouts(tw__gw *g)
{
    if (g->over || !g->logout_requested)
        return;
    if (g->now_ns - g->stage_since_ns > (int64_t)g->e->opts.end_wait_ms * 1000000) {
        logf_(g, "no end to the Logout handshake in %u ms: closing", g->e->opts.end_wait_ms);
        give_up(g);
    }
}

/* ---- the core -------------------------------------------------------------------------------- */

void tw__gw_timer(void *arg, tw_reactor_now *now)
{
    tw__gw *g = arg;
    g->now_ns = now->ns;
    uint32_t ph = __atomic_load_n(&g->e->phase, __ATOMIC_ACQUIRE);
    if (ph == TW__PH_STOPPING)
        stop_progress(g);
    ending_timeouts(g);
    if (g->fs.state != TW_FIX_DISCONNECTED) {
        tw_fix_session_timer(&g->fs, snow(g));
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
    unsigned work = drain_intents(g);
    if (g->stream_closed)
        conn_down(g, "closed by the session");
    if (xp->out_len > xp->out_off) {
        if (xp->ops->flush(xp, now->ns) != 0) {
            conn_down(g, xp->why);
        } else if (g->lat_tx_from < g->lat_n) {
            uint64_t t = tw_tsc_read();
            for (uint32_t i = g->lat_tx_from; i < g->lat_n; i++)
                g->lat[i].tsc_tx = t;
        }
        g->lat_tx_from = g->lat_n;
        work++;
    }
    g->lat_open = 0;
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
        /* The strategy process rings no doorbell: a yielding core looks
         * at its outbound ring at least this often. */
        if (g->att_st != TW_ATTACH_CORE_DOWN && now->wake_ns > now->ns + ATT_POLL_NS)
            now->wake_ns = now->ns + ATT_POLL_NS;
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
        logf_(g, "connected to %s:%u over %s", g->sc->host, g->sc->port, xp->ops->name);
        if (tw_fix_session_connected(&g->fs, snow(g)) != 0 || g->stream_closed)
            conn_down(g, "the Logon could not be sent");
    }
    if (g->spill_n)
        spill_drain(g);
    if (g->spill_n == 0 && xp->rx_len) {
        g->cur_tsc_rx = xp->tsc_rx;
        g->cur_tsc_tcp = xp->tsc_tcp;
        size_t used = tw_fix_session_input(&g->fs, xp->rx, xp->rx_len, snow(g));
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
    if (g->down_pending && g->spill_n == 0) {
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
    /* Idle: may sleep; look at the ring once more after saying so (the
     * strategy then either sees sleeping or we see its intent). */
    tw__bell_sleep(&g->bell);
    tw_ring *r = intents_ring(g);
    if (g->fs.state == TW_FIX_ACTIVE && r && tw_ring_count(r))
        return 1;
    return 0;
}

/* ---- set-up ------------------------------------------------------------------------------------ */

static void *ring_alloc(uint32_t slots, uint32_t slot_size, void **mem)
{
    size_t bytes = tw_ring_memsize(slots, slot_size);
    *mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!*mem || tw_ring_init(*mem, slots, slot_size) != 0)
        return NULL;
    return *mem;
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
    int rc;
    /* Instruments of this session. */
    g->local_of = malloc(cfg->n_instruments * sizeof(uint32_t));
    g->sym_instr = malloc((cfg->n_instruments + 1) * sizeof(uint32_t));
    if (!g->local_of || !g->sym_instr)
        goto nomem;
    for (uint32_t k = 0; k < cfg->n_instruments; k++) {
        g->local_of[k] = UINT32_MAX;
        if (cfg->strategy_instruments[k].session == index) {
            g->local_of[k] = g->n_sym;
            g->sym_instr[g->n_sym++] = k;
        }
    }
    uint32_t hcap = 4;
    while (hcap < 2 * g->n_sym)
        hcap <<= 1;
    g->hash_mask = hcap - 1;
    g->hash = calloc(hcap, sizeof(uint32_t));
    g->last_bar = malloc((g->n_sym + 1) * sizeof(int64_t));
    g->closes = malloc(((size_t)g->n_sym + 1) * CLOSES_WIN * sizeof(recent_close));
    if (!g->hash || !g->last_bar || !g->closes)
        goto nomem;
    for (uint32_t k = 0; k < g->n_sym; k++) {
        const char *s = cfg->strategy_instruments[g->sym_instr[k]].symbol;
        uint32_t h = (uint32_t)tw_fnv1a64(TW_FNV1A64_INIT, s, strlen(s)) & g->hash_mask;
        while (g->hash[h])
            h = (h + 1) & g->hash_mask;
        g->hash[h] = k + 1;
        g->last_bar[k] = -1;
    }
    for (size_t i = 0; i < (size_t)g->n_sym * CLOSES_WIN; i++)
        g->closes[i].bar = -1;
    /* Orders: as many as the strategy can have open on these instruments. */
    uint32_t n_inst = 0;
    for (uint32_t i = 0; i < cfg->n_instances; i++)
        n_inst += g->local_of[cfg->instances[i].instrument] != UINT32_MAX;
    g->open_cap = n_inst * (cfg->risk.max_open_orders + 2) + 64;
    g->open = malloc(g->open_cap * sizeof(open_order));
    g->exec_ids[0] = calloc(EXEC_IDS, sizeof(uint64_t));
    g->exec_ids[1] = calloc(EXEC_IDS, sizeof(uint64_t));
    g->spill_cap = RX_CAP / MIN_EVENT_BYTES + 64;
    g->spill = malloc(g->spill_cap * sizeof(tw__inrec));
    g->lat_cap = e->opts.latency_samples;
    g->lat = calloc(g->lat_cap ? g->lat_cap : 1, sizeof(tw_trade_latency));
    if (!g->open || !g->exec_ids[0] || !g->exec_ids[1] || !g->spill || !g->lat)
        goto nomem;
    if (!ring_alloc(cfg->engine.ring_slots, sizeof(tw__inrec), &g->in_mem) ||
        !ring_alloc(cfg->engine.ring_slots, sizeof(tw_out), &g->out_mem))
        goto nomem;
    g->in = g->in_mem;
    g->out = g->out_mem;
    /* inline: the strategy writes out on this core's own thread. */
    rc = tw__bell_init(&g->bell, !e->opts.manual_net && !cfg->engine.busy_poll &&
                                     cfg->engine.strategy != TW_TRADE_STRATEGY_INLINE);
    if (rc != 0) {
        tw__gw_destroy(g);
        return tw__err(err, rc, "session %s: eventfd: %s", sc->name, strerror(-rc));
    }
    /* The store. */
    if ((rc = tw_mkdir_parents(sc->store)) != 0) {
        tw__gw_destroy(g);
        return tw__err(err, rc, "session %s: store %s: cannot create its directory: %s",
                       sc->name, sc->store, strerror(-rc));
    }
    tw_fix_store_cfg stc = {.path = sc->store, .fd = -1, .fsync = TW_FIX_FSYNC_NONE,
                            .mmap_bytes = 1u << 20};
    tw_error se = {0};
    if ((rc = tw_fix_store_open(&g->store, &stc, &se)) != 0) {
        tw__gw_destroy(g);
        return tw__err(err, rc, "session %s: store %s: %s", sc->name, sc->store, se.msg);
    }
    g->have_store = 1;
    /* The transport. */
    uint64_t cto = (uint64_t)sc->connect_timeout_ms * 1000000;
    if (sc->stack == TW_STACK_KERNEL) {
        rc = tw__xport_tcp_open(&g->xp, sc->host, sc->port, RX_CAP, OUT_CAP, cto, err);
    } else {
        uint32_t dst;
        if (!e->opts.open_port) {
            tw__gw_destroy(g);
            return tw__err(err, -EINVAL, "session %s: stack = %s, but this program opens no ports",
                           sc->name, sc->stack_spec);
        }
        if (tw_net_parse_ip4(sc->host, &dst) != 0) {
            tw__gw_destroy(g);
            return tw__err(err, -EINVAL,
                           "session %s: host '%s': the userspace stack needs an IPv4 address",
                           sc->name, sc->host);
        }
        rc = e->opts.open_port(e->opts.port_ctx, index, sc->stack_spec, &g->port, err);
        if (rc == 0)
            rc = tw__xport_stack_open(&g->xp, g->port, sc->ip4, sc->prefix, sc->gateway4, dst,
                                      sc->port, RX_CAP, OUT_CAP, cto, err);
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
    if (rc != 0) {
        tw__gw_destroy(g);
        return rc;
    }
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
        .app = {.on_msg = on_msg, .on_event = on_event, .on_test_request = on_test_request,
                .ctx = g},
    };
    if ((rc = tw_fix_session_init(&g->fs, &fc, &se)) != 0) {
        tw__gw_destroy(g);
        return tw__err(err, rc, "session %s: %s", sc->name, se.msg);
    }
    *out = g;
    return 0;
nomem:
    tw__gw_destroy(g);
    return tw__err(err, -ENOMEM, "session %s: out of memory", sc->name);
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
    free(g->local_of);
    free(g->sym_instr);
    free(g->hash);
    free(g->last_bar);
    free(g->closes);
    free(g->open);
    free(g->exec_ids[0]);
    free(g->exec_ids[1]);
    free(g->spill);
    free(g->lat);
    free(g->done_ids);
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
    __atomic_store_n(&g->settled, (uint32_t)(g->over && g->spill_n == 0), __ATOMIC_RELEASE);
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
    *out = g->lat;
    return g->lat_n;
}

/* ---- recovery (before the cores start; recover.c drives it) ------------------------------- */

static void done_add(tw__gw *g, uint64_t id)
{
    if (!g->done_ids)
        return;
    uint32_t i = (uint32_t)(id * 0x9e3779b97f4a7c15ull >> 32) & g->done_mask;
    while (g->done_ids[i] != 0 && g->done_ids[i] != id + 1)
        i = (i + 1) & g->done_mask;
    g->done_ids[i] = id + 1;
}

void tw__gw_restore_ev(tw__gw *g, const tw_ev *ev)
{
    switch (ev->type) {
    case TW_EV_BAR: {
        uint32_t local = ev->instrument < g->cfg->n_instruments ? g->local_of[ev->instrument]
                                                                : UINT32_MAX;
        if (local == UINT32_MAX)
            return;
        if ((int64_t)ev->u.bar.index > g->last_bar[local])
            g->last_bar[local] = (int64_t)ev->u.bar.index;
        remember_close(g, local, ev->u.bar.index, ev->u.bar.close);
        g->st.bars++;
        g->st.gap_bars += isnan(ev->u.bar.close);
        return;
    }
    case TW_EV_FILL: {
        g->st.fills++;
        open_order *o = open_find(g, ev->u.fill.order_id);
        if (o && (o->qty -= (int32_t)ev->u.fill.qty) <= 0) {
            open_remove(g, ev->u.fill.order_id);
            done_add(g, ev->u.fill.order_id);
        }
        return;
    }
    case TW_EV_REJECT:
    case TW_EV_CANCELED:
        g->st.rejects += ev->type == TW_EV_REJECT;
        g->st.canceled += ev->type == TW_EV_CANCELED;
        open_remove(g, ev->u.order.order_id);
        done_add(g, ev->u.order.order_id);
        return;
    case TW_EV_SESSION:
        g->up = ev->u.session.state == TW_SESSION_UP;
        if (ev->u.session.state == TW_SESSION_CLOSED)
            g->closed_seen = 1;
        return;
    default: return;
    }
}

int tw__gw_restore_begin(tw__gw *g, uint64_t n_orders)
{
    /* Every order the journal holds can be done: room for all, half full. */
    uint64_t cap = 1024;
    while (cap < 2 * n_orders)
        cap <<= 1;
    if (cap > (1ull << 31))
        return -E2BIG;
    g->done_ids = calloc(cap, sizeof(uint64_t));
    g->done_mask = (uint32_t)(cap - 1);
    return g->done_ids ? 0 : -ENOMEM;
}

void tw__gw_restore_order(tw__gw *g, const tw_out *o)
{
    g->st.orders_sent++;
    if (g->n_open < g->open_cap && !open_find(g, o->order_id))
        g->open[g->n_open++] = (open_order){.id = o->order_id, .instance = o->instance,
                                            .instrument = o->instrument, .qty = o->qty,
                                            .side = o->side};
}

void tw__gw_restore_done(tw__gw *g)
{
    /* The open table's qty counted fills down; what is left open is
     * cancelled (TERM) with the order's quantity left. */
    if (g->up) {
        g->up = 0;
        push_session(g, TW_SESSION_DOWN);
    }
}

static int body_field(const char *b, size_t n, const char *tag, const char **v, size_t *vl)
{
    size_t tl = strlen(tag);
    for (size_t i = 0; i + tl < n; i++) {
        if ((i == 0 || b[i - 1] == '\x01') && memcmp(b + i, tag, tl) == 0) {
            const char *e = memchr(b + i + tl, '\x01', n - i - tl);
            *v = b + i + tl;
            *vl = e ? (size_t)(e - *v) : n - i - tl;
            return 0;
        }
    }
    return -1;
}

uint32_t tw__gw_store_count(const tw__gw *g) { return g->store.n; }

int64_t tw__gw_first_logon_ns(const tw__gw *g) { return g->first_logon_ns; }

int tw__gw_store_orders(tw__gw *g, uint64_t run_id, void (*fn)(void *, char, uint64_t),
                        void *ctx)
{
    char *buf = malloc(TW_FIX_REC_MAX + 64);
    if (!buf)
        return -ENOMEM;
    int rc = 0;
    for (uint32_t i = 0; i < g->store.n && rc == 0; i++) {
        tw_fix_stored m;
        if ((rc = tw_fix_store_read(&g->store, i, buf, TW_FIX_REC_MAX + 64, &m)) != 0)
            break;
        if (m.type_len != 1 || (m.type[0] != 'D' && m.type[0] != 'F'))
            continue;
        const char *v;
        size_t vl;
        char kind;
        uint64_t run, id;
        if (body_field(m.body, m.body_len, "11=", &v, &vl) == 0 &&
            tw_trade_clordid_parse(v, vl, &kind, &run, &id) == 0 && run == run_id)
            fn(ctx, kind, id);
    }
    free(buf);
    return rc;
}
