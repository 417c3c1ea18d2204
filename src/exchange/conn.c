/* Connections and sessions: a transport connection's bytes framed into
 * FIX messages, its Logon bound to the session of its SenderCompID (one
 * created on first sight), the session callbacks.  Each message is handed
 * to the session on its own, so that between two messages the venue can
 * see what the session did with it: a barrier Heartbeat (which the session
 * answers for itself and never shows the application) goes to the barrier,
 * application messages to the router (app.c), and the bar clock gets a
 * turn after each.  Called by the venue and the transports. */
#include <errno.h>
#include <string.h>

#include "exchange/exchange_internal.h"
#include "tickwire/util.h"

/* A CompID that may name a store file: [A-Za-z0-9_.-], not starting with
 * '.', at most XS_COMPID_MAX bytes. */
int tw__xchg_comp_id_ok(const char *v, size_t n)
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

void tw__xchg_sess_free(xs_sess *s)
{
    if (s->has_store)
        tw_fix_store_close(&s->store);
    free(s->sub);
    free(s->md_req);
    free(s->orders);
    free(s);
}

/* A CompID's session, store and tables: at its first Logon, or at create
 * for a store read back (resume.c). */
xs_sess *tw__xchg_sess_create(tw_xchg *x, const char *id, size_t n, tw_error *err)
{
    if (x->n_sess >= x->cfg.max_sessions) {
        x->st.sessions_full++;
        tw__xchg_log(x, NULL, "refused CompID %.*s: %u sessions already", (int)n, id,
                     x->cfg.max_sessions);
        return NULL;
    }
    xs_sess *s = calloc(1, sizeof(*s));
    if (!s) {
        tw__err(err, -ENOMEM, "exchange: out of memory");
        return NULL;
    }
    s->x = x;
    memcpy(s->comp_id, id, n);
    s->sub = calloc(x->n_sym, 1);
    s->md_req = calloc(x->n_sym, sizeof(*s->md_req));
    s->order_cap = pow2_at_least((uint64_t)x->cfg.max_orders * 2);
    s->orders = calloc(s->order_cap, sizeof(*s->orders));
    if (!s->sub || !s->md_req || !s->orders) {
        tw__err(err, -ENOMEM, "exchange: out of memory");
        goto fail;
    }
    if (x->cfg.store_dir) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s.store", x->cfg.store_dir, s->comp_id);
        tw_fix_store_cfg sc = {.path = path, .fd = -1, .mmap_bytes = x->cfg.store_mmap_bytes};
        if (tw_fix_store_open(&s->store, &sc, err) != 0)
            goto fail;
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
    if (tw_fix_session_init(&s->fs, &fc, err) != 0)
        goto fail;
    x->sess[x->n_sess++] = s;
    x->st.sessions++;
    return s;
fail:
    tw__xchg_sess_free(s);
    return NULL;
}

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
void tw__xchg_reap(tw_xchg *x)
{
    for (unsigned i = 0; i < x->cfg.max_conns; i++)
        if (x->conns[i].state == CONN_CLOSED) {
            x->conns[i].state = CONN_FREE;
            x->conns[i].rx_len = 0;
        }
}

void tw_xchg_conn_closed(tw_xchg *x, tw_xchg_conn *h, int64_t now_ns)
{
    xs_conn *c = (xs_conn *)h;
    x->now_ns = now_ns;
    if (c->state == CONN_PENDING || c->state == CONN_BOUND)
        tw__xchg_unbind(x, c, now_ns);
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
    else if (!snd || !tw__xchg_comp_id_ok(snd->val, snd->len))
        why = "SenderCompID(49) is not [A-Za-z0-9_.-]{1,32}";
    if (why) {
        x->st.bad_logon++;
        tw__xchg_log(x, NULL, "Logon refused: %s", why);
        tw__xchg_drop_conn(x, c, now_ns);
        return;
    }
    xs_sess *s = sess_find(x, snd->val, snd->len);
    tw_error err = {0};
    if (!s)
        s = tw__xchg_sess_create(x, snd->val, snd->len, &err);
    if (!s) {
        if (err.code)
            tw__xchg_log(x, NULL, "Logon of %.*s refused: %s", (int)snd->len, snd->val, err.msg);
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

static void feed(tw_xchg *x, xs_conn *c, const char *msg, size_t len, int64_t now_ns)
{
    xs_sess *s = c->sess;
    xs_heartbeat hb;
    tw__xchg_heartbeat_scan(msg, len, &hb);
    hb.seq_before = s->fs.next_in;
    size_t used = tw_fix_session_input(&s->fs, msg, len, now_ns);
    TW_VERIFY(used == len); /* one framed message goes in whole */
    if (hb.kind != HB_NONE && c->state == CONN_BOUND && s->fs.state == TW_FIX_ACTIVE)
        tw__xchg_barrier_heartbeat(x, s, &hb);
    tw__xchg_advance(x, now_ns);
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
    tw__xchg_reap(x);
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

