/* The venue: configuration, sessions per CompID, transport connections,
 * the lockstep barrier and the run's life cycle (tickwire/exchange.h).
 * Bars and TradingSessionStatus are in md.c, orders in orders.c, faults'
 * syntax in fault.c, the userspace-stack driver in xchg_net.c.
 *
 * Input path: the driver's bytes land in the connection's buffer; each
 * message that frames is handed to the FIX session on its own, so that
 * between two messages the venue can look at what the session did with
 * it: a Heartbeat whose TestReqID is `bar-<i>` (which the session answers
 * for itself and never shows the application) passes the barrier only once
 * the session has taken it in sequence, after every order before it. */
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
#define PACED_BURST 64              /* bars per poll at most (flat out) */

void tw_xchg_cfg_init(tw_xchg_cfg *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
}

int64_t tw_xchg_epoch_ns(const tw_xchg *x, int64_t now_ns)
{
    return now_ns + x->cfg.epoch_offset_ns;
}

void tw__xchg_log(tw_xchg *x, const xs_sess *s, const char *fmt, ...)
{
    if (!x->cfg.on_log)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->log_line, sizeof(x->log_line), fmt, ap);
    va_end(ap);
    x->cfg.on_log(x->cfg.ctx, s ? s->comp_id : "-", x->log_line);
}

/* A CompID that may name a store file: [A-Za-z0-9_.-], not starting with
 * '.', at most XS_COMPID_MAX bytes. */
static int comp_id_ok(const char *v, size_t n)
{
    if (n == 0 || n > XS_COMPID_MAX || v[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

int tw_xchg_create(tw_xchg **out, const tw_xchg_cfg *cfg, tw_error *err)
{
    *out = NULL;
    const char *sender = cfg->sender_comp_id ? cfg->sender_comp_id : "VENUE";
    if (!comp_id_ok(sender, strlen(sender)))
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
        if (f->kind < TW_XCHG_FAULT_DISCONNECT || f->kind > TW_XCHG_FAULT_SLOW ||
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
    *out = x;
    return 0;
}

void tw_xchg_destroy(tw_xchg *x)
{
    if (!x)
        return;
    for (unsigned i = 0; i < x->n_sess; i++) {
        xs_sess *s = x->sess[i];
        if (s->has_store)
            tw_fix_store_close(&s->store);
        free(s->sub);
        free(s->md_req);
        free(s->orders);
        free(s);
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

static int s_write(void *ctx, const char *buf, size_t len)
{
    xs_sess *s = ctx;
    xs_conn *c = s->conn;
    if (!c || c->state != CONN_BOUND)
        return -ENOTCONN;
    return c->io.write(c->io.ctx, buf, len);
}

/* The session ends its connection (Logout done, a protocol error, a write
 * that failed). */
static void s_close(void *ctx)
{
    xs_sess *s = ctx;
    xs_conn *c = s->conn;
    if (!c)
        return;
    TW_ASSERT(c->sess == s && c->state == CONN_BOUND);
    s->conn = NULL;
    c->sess = NULL;
    c->state = CONN_CLOSED;
    c->io.close(c->io.ctx);
}

static void s_on_msg(void *ctx, tw_fix_session *fs, const tw_fix_decoded *d, int possdup)
{
    xs_sess *s = ctx;
    (void)fs;
    /* The fields as views: the venue reads each message its own way (its
     * rejects name the tag at fault), not through the typed body. */
    tw__xchg_on_app(s->x, s, &d->msg, possdup, s->x->now_ns);
}

static void s_on_event(void *ctx, tw_fix_session *fs, tw_fix_event ev, const char *text)
{
    xs_sess *s = ctx;
    tw_xchg *x = s->x;
    (void)fs;
    switch (ev) {
    case TW_FIX_EV_LOGON:
        x->st.logons++;
        s->ever_active = 1;
        s->logged_out = 0;
        s->away_since_ns = 0;
        /* A barrier this session still owes an answer to: ask again once
         * its resends are through (the first TestRequest or its answer may
         * have died with the old connection). */
        if (x->awaiting && s->part && !s->acked)
            s->reissue = 1;
        if (s->opened && !s->ready)
            s->reissue_open = 1;
        tw__xchg_log(x, s, "logged on (next in %llu, next out %llu)",
                     (unsigned long long)s->fs.next_in, (unsigned long long)s->fs.next_out);
        break;
    case TW_FIX_EV_LOGOUT:
        x->st.logouts++;
        s->logged_out = 1;
        /* A trader that logs out has left the run: its subscriptions and
         * its place in the barrier go with it. */
        memset(s->sub, 0, x->n_sym);
        s->n_sub = 0;
        s->part = 0;
        tw__xchg_log(x, s, "logged out");
        break;
    case TW_FIX_EV_DISCONNECT:
        x->st.disconnects++;
        if (s->n_sub && !s->logged_out)
            s->away_since_ns = x->now_ns ? x->now_ns : 1;
        tw__xchg_log(x, s, "disconnected: %s", text);
        break;
    case TW_FIX_EV_REJECT_SENT:
    case TW_FIX_EV_REJECT_RCVD:
    case TW_FIX_EV_GAP:
    case TW_FIX_EV_RESEND:
        tw__xchg_log(x, s, "%s", text);
        break;
    case TW_FIX_EV_GARBLED:
        break;
    }
}

static xs_sess *sess_find(tw_xchg *x, const char *id, size_t n)
{
    for (unsigned i = 0; i < x->n_sess; i++)
        if (strlen(x->sess[i]->comp_id) == n && !memcmp(x->sess[i]->comp_id, id, n))
            return x->sess[i];
    return NULL;
}

static uint32_t pow2_at_least(uint64_t v)
{
    uint32_t p = 16;
    while (p < v && p < (1u << 30))
        p <<= 1;
    return p;
}

/* A CompID's first Logon: its session, store and tables. */
static xs_sess *sess_create(tw_xchg *x, const char *id, size_t n)
{
    if (x->n_sess >= x->cfg.max_sessions) {
        x->st.sessions_full++;
        tw__xchg_log(x, NULL, "refused CompID %.*s: %u sessions already", (int)n, id,
                     x->cfg.max_sessions);
        return NULL;
    }
    xs_sess *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->x = x;
    memcpy(s->comp_id, id, n);
    s->sub = calloc(x->n_sym, 1);
    s->md_req = calloc(x->n_sym, sizeof(*s->md_req));
    s->order_cap = pow2_at_least((uint64_t)x->cfg.max_orders * 2);
    s->orders = calloc(s->order_cap, sizeof(*s->orders));
    tw_error err = {0};
    if (!s->sub || !s->md_req || !s->orders)
        goto fail;
    if (x->cfg.store_dir) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s.store", x->cfg.store_dir, s->comp_id);
        tw_fix_store_cfg sc = {.path = path, .fd = -1, .mmap_bytes = x->cfg.store_mmap_bytes};
        if (tw_fix_store_open(&s->store, &sc, &err) != 0) {
            tw__xchg_log(x, s, "store: %s", err.msg);
            goto fail;
        }
        s->has_store = 1;
    }
    tw_fix_session_cfg fc = {
        .begin_string = "FIX.4.4",
        .sender_comp_id = x->sender,
        .target_comp_id = s->comp_id,
        .initiator = 0,
        .ts_digits = x->cfg.ts_digits,
        .epoch_offset_ns = x->cfg.epoch_offset_ns,
        .store = s->has_store ? &s->store : NULL,
        .stream = {.write = s_write, .close = s_close, .ctx = s},
        .app = {.on_msg = s_on_msg, .on_event = s_on_event, .ctx = s},
    };
    if (tw_fix_session_init(&s->fs, &fc, &err) != 0) {
        tw__xchg_log(x, s, "session: %s", err.msg);
        goto fail;
    }
    x->sess[x->n_sess++] = s;
    x->st.sessions++;
    return s;
fail:
    if (s->has_store)
        tw_fix_store_close(&s->store);
    free(s->sub);
    free(s->md_req);
    free(s->orders);
    free(s);
    return NULL;
}

/* ---- connections --------------------------------------------------------- */

int tw_xchg_conn_open(tw_xchg *x, const tw_fix_stream *io, size_t (*backlog)(void *ctx),
                      int64_t now_ns, tw_xchg_conn **out)
{
    *out = NULL;
    TW_VERIFY(io && io->write && io->close);
    for (unsigned i = 0; i < x->cfg.max_conns; i++) {
        xs_conn *c = &x->conns[i];
        if (c->state != CONN_FREE)
            continue;
        c->state = CONN_PENDING;
        c->io = *io;
        c->backlog = backlog;
        c->sess = NULL;
        c->opened_ns = now_ns;
        c->read_at_ns = 0;
        c->rx_len = 0;
        x->st.conns++;
        *out = (tw_xchg_conn *)c;
        return 0;
    }
    x->st.conns_refused++;
    return -EBUSY;
}

/* Returns slots of connections that were closed during the call that is
 * ending (their drivers have forgotten them). */
static void reap(tw_xchg *x)
{
    for (unsigned i = 0; i < x->cfg.max_conns; i++)
        if (x->conns[i].state == CONN_CLOSED) {
            x->conns[i].state = CONN_FREE;
            x->conns[i].rx_len = 0;
        }
}

static void unbind(tw_xchg *x, xs_conn *c, int64_t now_ns)
{
    xs_sess *s = c->sess;
    if (!s)
        return;
    TW_ASSERT(s->conn == c);
    s->conn = NULL;
    c->sess = NULL;
    /* No close callback from here: the session has no connection now. */
    tw_fix_session_disconnected(&s->fs, now_ns);
}

void tw__xchg_drop_conn(tw_xchg *x, xs_conn *c, int64_t now_ns)
{
    if (c->state != CONN_PENDING && c->state != CONN_BOUND)
        return;
    unbind(x, c, now_ns);
    c->state = CONN_CLOSED;
    c->io.close(c->io.ctx);
}

void tw_xchg_conn_closed(tw_xchg *x, tw_xchg_conn *h, int64_t now_ns)
{
    xs_conn *c = (xs_conn *)h;
    x->now_ns = now_ns;
    if (c->state == CONN_PENDING || c->state == CONN_BOUND)
        unbind(x, c, now_ns);
    c->state = CONN_FREE;
    c->rx_len = 0;
}

int64_t tw_xchg_conn_read_at(const tw_xchg_conn *h)
{
    return ((const xs_conn *)h)->read_at_ns;
}

size_t tw_xchg_conn_rx_space(tw_xchg_conn *h, char **p)
{
    xs_conn *c = (xs_conn *)h;
    *p = c->rx + c->rx_len;
    if (c->state != CONN_PENDING && c->state != CONN_BOUND)
        return 0;
    return TW_FIX_RX_MIN - c->rx_len;
}

/* The first message on a connection must be a Logon naming us and a
 * usable CompID; it binds the connection to that CompID's session. */
static void identify(tw_xchg *x, xs_conn *c, const char *msg, size_t len, int64_t now_ns)
{
    tw_fix_msg m = {.fields = x->id_fields, .cap = TW_FIX_MAX_FIELDS};
    if (tw_fix_parse(msg, len, &m) != 0) {
        x->st.bad_logon++;
        tw__xchg_log(x, NULL, "connection closed: first message does not parse");
        tw__xchg_drop_conn(x, c, now_ns);
        return;
    }
    if (m.msg_type_len != 1 || m.msg_type[0] != 'A') {
        x->st.pre_logon++;
        tw__xchg_log(x, NULL, "connection closed: first message is 35=%.*s, not a Logon",
                     (int)(m.msg_type_len < 8 ? m.msg_type_len : 8), m.msg_type);
        tw__xchg_drop_conn(x, c, now_ns);
        return;
    }
    const tw_fix_field *b = tw_fix_get(&m, 8), *snd = tw_fix_get(&m, 49),
                       *tgt = tw_fix_get(&m, 56);
    const char *why = NULL;
    if (!b || b->len != 7 || memcmp(b->val, "FIX.4.4", 7))
        why = "BeginString is not FIX.4.4";
    else if (!tgt || tgt->len != strlen(x->sender) || memcmp(tgt->val, x->sender, tgt->len))
        why = "TargetCompID(56) is not ours";
    else if (!snd || !comp_id_ok(snd->val, snd->len))
        why = "SenderCompID(49) is not [A-Za-z0-9_.-]{1,32}";
    if (why) {
        x->st.bad_logon++;
        tw__xchg_log(x, NULL, "Logon refused: %s", why);
        tw__xchg_drop_conn(x, c, now_ns);
        return;
    }
    xs_sess *s = sess_find(x, snd->val, snd->len);
    if (!s)
        s = sess_create(x, snd->val, snd->len);
    if (!s) {
        tw__xchg_drop_conn(x, c, now_ns);
        return;
    }
    if (s->conn) {
        x->st.dup_logon++;
        tw__xchg_log(x, s, "second connection refused: the session is connected");
        tw__xchg_drop_conn(x, c, now_ns);
        return;
    }
    c->state = CONN_BOUND;
    c->sess = s;
    s->conn = c;
    tw_fix_session_connected(&s->fs, now_ns);
}

/* What a Heartbeat answers, from its TestReqID. */
enum { HB_NONE = 0, HB_BAR, HB_OPEN };

/* The number from d up to the SOH that ends its field (before e). */
static int parse_u64(const char *d, const char *e, uint64_t *out)
{
    const char *soh = memchr(d, '\x01', (size_t)(e - d));
    return soh ? tw_parse_u64(d, (size_t)(soh - d), out) : -EINVAL;
}

/* A Heartbeat with TestReqID bar-<i> (HB_BAR, *bar = i) or "open"
 * (HB_OPEN); *seq = its MsgSeqNum.  A scan of the raw bytes, not a parse:
 * it runs on every message a trader sends. */
static int our_heartbeat(const char *msg, size_t len, uint64_t *bar, uint64_t *seq)
{
    /* "8=..\x019=..\x0135=0\x01": MsgType is the third field. */
    const char *p = memchr(msg, '\x01', len);
    if (!p)
        return HB_NONE;
    p = memchr(p + 1, '\x01', len - (size_t)(p + 1 - msg));
    if (!p || (size_t)(msg + len - p) < 6 || memcmp(p, "\x01" "35=0\x01", 6))
        return HB_NONE;
    const char *e = msg + len;
    const char *t = memmem(p, (size_t)(e - p), "\x01" "112=", 5);
    const char *q = memmem(p, (size_t)(e - p), "\x01" "34=", 4);
    if (!t || !q || parse_u64(q + 4, e, seq) != 0)
        return HB_NONE;
    t += 5;
    if ((size_t)(e - t) > 4 && !memcmp(t, "bar-", 4))
        return parse_u64(t + 4, e, bar) == 0 ? HB_BAR : HB_NONE;
    size_t ol = sizeof(XS_OPEN_ID) - 1;
    if ((size_t)(e - t) > ol && !memcmp(t, XS_OPEN_ID "\x01", ol + 1))
        return HB_OPEN;
    return HB_NONE;
}

static void ack(tw_xchg *x, xs_sess *s)
{
    TW_ASSERT(x->awaiting && s->part && !s->acked);
    s->acked = 1;
    s->ack_after_gap = 0;
    x->st.barrier_acks++;
}

static void advance(tw_xchg *x, int64_t now_ns);

static void feed(tw_xchg *x, xs_conn *c, const char *msg, size_t len, int64_t now_ns)
{
    xs_sess *s = c->sess;
    uint64_t hb_bar = 0, hb_seq = 0;
    int hb = our_heartbeat(msg, len, &hb_bar, &hb_seq);
    uint64_t before = s->fs.next_in;
    size_t used = tw_fix_session_input(&s->fs, msg, len, now_ns);
    TW_VERIFY(used == len); /* one framed message goes in whole */
    if (hb != HB_NONE && c->state == CONN_BOUND && s->fs.state == TW_FIX_ACTIVE) {
        /* Taken in sequence: every message before it has been handled.
         * Above a gap: the session dropped it and asked for a resend; what
         * the trader sent before it comes with the resend, so it counts
         * once the gap has closed (tw_xchg_poll). */
        int in_seq = hb_seq == before && s->fs.next_in == before + 1;
        int above = hb_seq > before;
        if (hb == HB_BAR && x->awaiting && (int64_t)hb_bar == x->cur_bar && s->part &&
            !s->acked) {
            if (in_seq)
                ack(x, s);
            else if (above)
                s->ack_after_gap = 1;
        } else if (hb == HB_OPEN && s->opened && !s->ready) {
            if (in_seq)
                s->ready = 1;
            else if (above)
                s->ready_after_gap = 1;
        }
    }
    advance(x, now_ns);
}

static void process_rx(tw_xchg *x, xs_conn *c, int64_t now_ns)
{
    size_t off = 0;
    while (off < c->rx_len && (c->state == CONN_PENDING || c->state == CONN_BOUND)) {
        size_t skip = 0;
        int r = tw_fix_frame(c->rx + off, c->rx_len - off, 0, &skip);
        if (r == TW_FIX_INCOMPLETE) {
            if (off > 0 || c->rx_len < TW_FIX_RX_MIN)
                break;
            /* A whole buffer without a message: longer than any we take. */
            r = TW_FIX_GARBLED;
            skip = 1;
        }
        if (r <= 0) {
            if (skip == 0 || skip > c->rx_len - off)
                skip = 1;
            x->st.garbled_bytes += skip;
            off += skip;
            continue;
        }
        if (c->state == CONN_PENDING)
            identify(x, c, c->rx + off, (size_t)r, now_ns);
        if (c->state == CONN_BOUND)
            feed(x, c, c->rx + off, (size_t)r, now_ns);
        off += (size_t)r;
    }
    if (c->state != CONN_PENDING && c->state != CONN_BOUND) {
        c->rx_len = 0;
        return;
    }
    TW_ASSERT(off <= c->rx_len);
    memmove(c->rx, c->rx + off, c->rx_len - off);
    c->rx_len -= off;
}

void tw_xchg_conn_rx_commit(tw_xchg *x, tw_xchg_conn *h, size_t n, int64_t now_ns)
{
    xs_conn *c = (xs_conn *)h;
    x->now_ns = now_ns;
    if (c->state != CONN_PENDING && c->state != CONN_BOUND)
        return;
    TW_VERIFY(n <= TW_FIX_RX_MIN - c->rx_len);
    c->rx_len += n;
    process_rx(x, c, now_ns);
    reap(x);
}

size_t tw_xchg_conn_input(tw_xchg *x, tw_xchg_conn *h, const void *buf, size_t len,
                          int64_t now_ns)
{
    xs_conn *c = (xs_conn *)h;
    size_t done = 0;
    while (done < len) {
        if (c->state != CONN_PENDING && c->state != CONN_BOUND)
            return len;
        char *p;
        size_t room = tw_xchg_conn_rx_space(h, &p);
        if (room == 0)
            break;
        size_t k = len - done < room ? len - done : room;
        memcpy(p, (const char *)buf + done, k);
        done += k;
        tw_xchg_conn_rx_commit(x, h, k, now_ns);
    }
    return done;
}

/* ---- the run ------------------------------------------------------------- */

static int backlog_high(const tw_xchg *x, const xs_sess *s)
{
    const xs_conn *c = s->conn;
    return c && c->backlog && c->backlog(c->io.ctx) > x->cfg.backlog_high;
}

static int active(const xs_sess *s)
{
    return s->conn && s->fs.state == TW_FIX_ACTIVE;
}

/* Closed (340=3) to every session that had Open, as soon as it can take
 * it. */
static void send_closed_where_due(tw_xchg *x, int64_t now_ns)
{
    for (unsigned i = 0; i < x->n_sess; i++) {
        xs_sess *s = x->sess[i];
        if (s->opened && !s->closed_sent && active(s) && s->fs.resend_until == 0)
            if (tw__xchg_send_status(x, s, '3', now_ns) == 0)
                s->closed_sent = 1;
    }
}

static void close_run(tw_xchg *x, int64_t now_ns)
{
    x->run = RUN_CLOSED;
    x->closed_at_ns = now_ns;
    tw__xchg_log(x, NULL, "last bar sent (%llu bars): trading session closed",
                 (unsigned long long)x->n_bars);
    send_closed_where_due(x, now_ns);
}

static void start_logout(tw_xchg *x, int64_t now_ns)
{
    x->run = RUN_LOGOUT;
    x->logout_at_ns = now_ns;
    for (unsigned i = 0; i < x->n_sess; i++) {
        xs_sess *s = x->sess[i];
        if (active(s))
            tw_fix_session_logout(&s->fs, "trading session closed",
                                  now_ns);
    }
}

/* The bar clock and the barrier.  Bounded: at most PACED_BURST bars. */
static void advance(tw_xchg *x, int64_t now_ns)
{
    if (x->in_emit)
        return;
    if (x->run == RUN_WAITING) {
        unsigned ready = 0;
        for (unsigned i = 0; i < x->n_sess; i++)
            ready += x->sess[i]->n_sub > 0 && x->sess[i]->ready && active(x->sess[i]);
        if (ready < x->cfg.min_sessions)
            return;
        x->run = RUN_BARS;
        x->bars_t0_ns = now_ns;
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
            if (s->n_sub && (!active(s) || !s->ready || backlog_high(x, s)))
                return;
        }
        tw__xchg_emit_bar(x, (uint64_t)(x->cur_bar + 1), now_ns);
        return;
    }
    for (int k = 0; k < PACED_BURST; k++) {
        uint64_t next = (uint64_t)(x->cur_bar + 1);
        uint64_t iv = x->cfg.bar_interval_ns;
        if (next >= x->n_bars) {
            /* The last bar lasts one interval too, then Closed. */
            if (!iv || now_ns - x->bars_t0_ns >= (int64_t)(iv * x->n_bars))
                close_run(x, now_ns);
            return;
        }
        if (iv && now_ns - x->bars_t0_ns < (int64_t)(iv * next))
            return;
        for (unsigned i = 0; i < x->n_sess; i++)
            if (x->sess[i]->n_sub && backlog_high(x, x->sess[i]))
                return;
        tw__xchg_emit_bar(x, next, now_ns);
        if (x->run != RUN_BARS)
            return;
    }
}

void tw_xchg_stop(tw_xchg *x, int64_t now_ns)
{
    x->now_ns = now_ns;
    if (x->run == RUN_LOGOUT || x->run == RUN_DONE)
        return;
    x->stopping = 1;
    tw__xchg_log(x, NULL, "stopping: Closed and Logout to every session");
    for (unsigned i = 0; i < x->n_sess; i++) {
        xs_sess *s = x->sess[i];
        if (s->opened && !s->closed_sent && active(s) &&
            tw__xchg_send_status(x, s, '3', now_ns) == 0)
            s->closed_sent = 1;
    }
    start_logout(x, now_ns);
    reap(x);
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
        if (!active(s)) {
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
            ack(x, s);
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
        send_closed_where_due(x, now_ns);
    advance(x, now_ns);
    if (x->run == RUN_BARS && !x->cfg.lockstep && x->cfg.bar_interval_ns) {
        int64_t due = x->bars_t0_ns + (int64_t)(x->cfg.bar_interval_ns * (uint64_t)(x->cur_bar + 1));
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
            if (s->opened && !s->logged_out && (s->n_sub || active(s)))
                all_out = 0;
        }
        if (all_out || now_ns - x->closed_at_ns >= (int64_t)x->cfg.end_timeout_ns)
            start_logout(x, now_ns);
    }
    if (x->run == RUN_LOGOUT) {
        int left = 0;
        for (unsigned i = 0; i < x->n_sess; i++)
            left += x->sess[i]->conn != NULL;
        if (!left || now_ns - x->logout_at_ns >= LOGOUT_WAIT_NS) {
            x->run = RUN_DONE;
            for (unsigned i = 0; i < x->cfg.max_conns; i++)
                tw__xchg_drop_conn(x, &x->conns[i], now_ns);
        }
    }
    reap(x);
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
        "faults_disconnect=%llu faults_gap=%llu faults_reject=%llu faults_slow=%llu",
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
        (unsigned long long)s->faults_slow);
    if (n < 0)
        n = 0;
    return (size_t)n < cap ? (size_t)n : (cap ? cap - 1 : 0);
}
