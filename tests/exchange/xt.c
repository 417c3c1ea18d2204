/* The exchange tests' harness (xt.h): trader sessions, pipes, the virtual
 * clock and the shared protocol checks. */
#include "xt.h"

int tw_check_failures;

void xt_on_fill(void *ctx, const tw_xchg_fill *f)
{
    xt_env *e = ctx;
    if (f->resumed) {
        if (e->n_resumed < 64)
            snprintf(e->resumed_cl[e->n_resumed], 24, "%.*s", (int)f->cl_ord_id.len,
                     f->cl_ord_id.p);
        e->n_resumed++;
        return;
    }
    if (e->n_fills >= 4096)
        return;
    e->fills[e->n_fills] = *f;
    snprintf(e->fill_cl[e->n_fills], 24, "%.*s", (int)f->cl_ord_id.len, f->cl_ord_id.p);
    e->n_fills++;
}

void xt_on_log(void *ctx, const char *sess, const char *text)
{
    xt_env *e = ctx;
    if (e->verbose)
        fprintf(stderr, "  venue [%s] %s\n", sess, text);
}

void xt_cfg(tw_xchg_cfg *c, xt_env *e, const tw_xchg_symbol *sy, unsigned n)
{
    tw_xchg_cfg_init(c);
    c->symbols = sy;
    c->n_symbols = n;
    c->lockstep = 1;
    c->epoch_offset_ns = XT_EPOCH;
    c->run_id = 0xabc;
    c->on_fill = xt_on_fill;
    c->on_log = xt_on_log;
    c->ctx = e;
}

int xt_env_open(xt_env *e, const tw_xchg_cfg *c)
{
    memset(e, 0, sizeof(*e));
    e->verbose = getenv("XT_VERBOSE") != NULL;
    tw_xchg_cfg cc = *c;
    cc.ctx = e;
    tw_error err = {0};
    e->now = 1000000000;
    if (tw_xchg_create(&e->x, &cc, &err) != 0) {
        fprintf(stderr, "xt: venue: %s\n", err.msg);
        return -1;
    }
    return 0;
}

int xt_cli_write(void *ctx, const char *b, size_t n)
{
    xt_client *cl = ctx;
    const char *t = memmem(b, n, "\x01" "112=bar-", 9);
    if (memmem(b, n, "\x01" "35=0\x01", 6) && t) {
        long bar = strtol(t + 9, NULL, 10);
        if (bar >= 0 && bar < XT_MAX_BARS && !cl->hb_bar_ns[bar])
            cl->hb_bar_ns[bar] = cl->env->now + XT_EPOCH;
    }
    if (n > XT_BUF - cl->c2v_len)
        return -ENOBUFS;
    memcpy(cl->c2v + cl->c2v_len, b, n);
    cl->c2v_len += n;
    return 0;
}

void xt_cli_close(void *ctx)
{
    xt_client *cl = ctx;
    if (cl->xc)
        tw_xchg_conn_closed(cl->env->x, cl->xc, cl->env->now);
    cl->xc = NULL;
    cl->c2v_len = 0;
}

int xt_ven_write(void *ctx, const char *b, size_t n)
{
    xt_client *cl = ctx;
    if (n > (cl->v2c_cap ? cl->v2c_cap : XT_BUF) - cl->v2c_len)
        return -ENOBUFS;
    memcpy(cl->v2c + cl->v2c_len, b, n);
    cl->v2c_len += n;
    return 0;
}

void xt_ven_close(void *ctx)
{
    xt_client *cl = ctx;
    cl->venue_closed = 1;
    cl->xc = NULL;
}

void xt_cli_msg(void *ctx, tw_fix_session *s, const tw_fix_decoded *d, int possdup)
{
    xt_client *cl = ctx;
    const tw_fix_msg *m = &d->msg;
    (void)s;
    if (cl->on_app)
        cl->on_app(cl, m, possdup);
    if (cl->logout_on_closed && m->msg_type_len == 1 && m->msg_type[0] == 'h') {
        const tw_fix_field *f = tw_fix_get(m, 340);
        if (f && f->len == 1 && f->val[0] == '3')
            tw_fix_session_logout(&cl->fs, NULL, cl->env->now);
    }
}

void xt_cli_event(void *ctx, tw_fix_session *s, tw_fix_event ev, const char *text)
{
    xt_client *cl = ctx;
    (void)s;
    if (ev == TW_FIX_EV_LOGON)
        cl->logon_events++;
    if (ev == TW_FIX_EV_LOGOUT)
        cl->logout_events++;
    if (cl->env->verbose && ev != TW_FIX_EV_GARBLED)
        fprintf(stderr, "  %s: event %d: %s\n", cl->name, (int)ev, text);
}

xt_client *xt_client_new(xt_env *e, const char *name, int with_store)
{
    xt_client *cl = calloc(1, sizeof(*cl));
    cl->env = e;
    snprintf(cl->name, sizeof(cl->name), "%s", name);
    cl->c2v = malloc(XT_BUF);
    cl->v2c = malloc(XT_BUF);
    cl->logout_on_closed = 1;
    tw_error err = {0};
    if (with_store) {
        tw_fix_store_cfg sc = {.fd = memfd_create("xt", 0)};
        if (tw_fix_store_open(&cl->store, &sc, &err) != 0) {
            fprintf(stderr, "xt: store: %s\n", err.msg);
            exit(1);
        }
        cl->has_store = 1;
    }
    tw_fix_session_cfg fc = {
        .begin_string = "FIX.4.4",
        .sender_comp_id = cl->name,
        .target_comp_id = "VENUE",
        .initiator = 1,
        .heart_bt_int_s = 30,
        .ts_digits = 6,
        .epoch_offset_ns = XT_EPOCH, /* virtual now_ns + this: SendingTime */
        .store = with_store ? &cl->store : NULL,
        .stream = {xt_cli_write, xt_cli_close, cl},
        .app = {.on_msg = xt_cli_msg, .on_event = xt_cli_event, .ctx = cl},
    };
    if (tw_fix_session_init(&cl->fs, &fc, &err) != 0) {
        fprintf(stderr, "xt: session: %s\n", err.msg);
        exit(1);
    }
    e->cl[e->n_cl++] = cl;
    return cl;
}

void xt_client_free(xt_client *cl)
{
    for (unsigned i = 0; i < cl->n_log; i++)
        free(cl->log[i].raw);
    free(cl->log);
    free(cl->c2v);
    free(cl->v2c);
    if (cl->has_store)
        tw_fix_store_close(&cl->store);
    free(cl);
}

void xt_env_close(xt_env *e)
{
    for (unsigned i = 0; i < e->n_cl; i++)
        xt_client_free(e->cl[i]);
    tw_xchg_destroy(e->x);
}

int xt_connect(xt_client *cl, int logon)
{
    xt_env *e = cl->env;
    tw_fix_stream io = {xt_ven_write, xt_ven_close, cl};
    cl->venue_closed = 0;
    cl->c2v_len = cl->v2c_len = 0;
    if (tw_xchg_conn_open(e->x, &io, NULL, e->now, &cl->xc) != 0)
        return -1;
    if (logon)
        tw_fix_session_connected(&cl->fs, e->now);
    return 0;
}

void xt_drop(xt_client *cl)
{
    if (cl->xc)
        tw_xchg_conn_closed(cl->env->x, cl->xc, cl->env->now);
    cl->xc = NULL;
    cl->c2v_len = cl->v2c_len = 0;
    tw_fix_session_disconnected(&cl->fs, cl->env->now);
}

void xt_raw(xt_client *cl, const char *bytes, size_t n)
{
    xt_cli_write(cl, bytes, n);
}

int xt_deliver_v2c(xt_client *cl)
{
    xt_env *e = cl->env;
    if (!cl->v2c_len)
        return 0;
    size_t off = 0;
    while (off < cl->v2c_len) {
        size_t skip = 0;
        int r = tw_fix_frame(cl->v2c + off, cl->v2c_len - off, 0, &skip);
        CHECKF(r > 0, "venue sent bytes that do not frame (%d) at %zu", r, off);
        if (r <= 0)
            break;
        if (cl->n_log == cl->cap_log) {
            cl->cap_log = cl->cap_log ? cl->cap_log * 2 : 1024;
            cl->log = realloc(cl->log, cl->cap_log * sizeof(*cl->log));
        }
        xt_msg *m = &cl->log[cl->n_log++];
        m->raw = malloc((size_t)r);
        memcpy(m->raw, cl->v2c + off, (size_t)r);
        m->len = (size_t)r;
        if (e->verbose) {
            fprintf(stderr, "  -> %s: ", cl->name);
            for (int i = 0; i < r; i++)
                fputc(cl->v2c[off + (size_t)i] == 1 ? '|' : cl->v2c[off + (size_t)i], stderr);
            fputc('\n', stderr);
        }
        if (cl->fs.state != TW_FIX_DISCONNECTED)
            tw_fix_session_input(&cl->fs, cl->v2c + off, (size_t)r, e->now);
        off += (size_t)r;
    }
    cl->v2c_len = 0;
    return 1;
}

void xt_pump(xt_env *e)
{
    for (int round = 0; round < 100000; round++) {
        int moved = 0;
        for (unsigned i = 0; i < e->n_cl; i++) {
            xt_client *cl = e->cl[i];
            if (cl->xc && !cl->hold && cl->c2v_len &&
                tw_xchg_conn_read_at(cl->xc) <= e->now) {
                size_t n = cl->c2v_len;
                size_t k = tw_xchg_conn_input(e->x, cl->xc, cl->c2v, n, e->now);
                memmove(cl->c2v, cl->c2v + k, cl->c2v_len - k);
                cl->c2v_len -= k;
                moved |= k > 0;
            }
            if (!cl->deaf)
                moved |= xt_deliver_v2c(cl);
            if (cl->venue_closed && cl->fs.state != TW_FIX_DISCONNECTED) {
                cl->c2v_len = 0;
                tw_fix_session_disconnected(&cl->fs, e->now);
            }
            if (!cl->xc)
                cl->c2v_len = 0; /* bytes into a closed connection are lost */
        }
        tw_xchg_poll(e->x, e->now);
        moved |= 0;
        int more = 0;
        for (unsigned i = 0; i < e->n_cl; i++)
            more |= (e->cl[i]->v2c_len > 0 && !e->cl[i]->deaf) ||
                    (e->cl[i]->xc && !e->cl[i]->hold && e->cl[i]->c2v_len > 0 &&
                     tw_xchg_conn_read_at(e->cl[i]->xc) <= e->now);
        if (!moved && !more)
            return;
    }
    CHECKF(0, "xt_pump: no quiescence after 100000 rounds");
}

void xt_push(xt_client *cl)
{
    xt_env *e = cl->env;
    if (cl->xc && cl->c2v_len) {
        size_t k = tw_xchg_conn_input(e->x, cl->xc, cl->c2v, cl->c2v_len, e->now);
        if (k > cl->c2v_len)
            k = cl->c2v_len;
        memmove(cl->c2v, cl->c2v + k, cl->c2v_len - k);
        cl->c2v_len -= k;
    }
    xt_pump(e);
}

void xt_advance(xt_env *e, int64_t ns)
{
    int64_t end = e->now + ns;
    while (e->now < end) {
        int64_t step = end - e->now < 10000000 ? end - e->now : 10000000;
        e->now += step;
        for (unsigned i = 0; i < e->n_cl; i++)
            if (e->cl[i]->fs.state != TW_FIX_DISCONNECTED)
                tw_fix_session_timer(&e->cl[i]->fs, e->now);
        xt_pump(e);
    }
}

int xt_until(xt_env *e, int (*pred)(xt_env *, void *), void *arg, int64_t max_ns)
{
    xt_pump(e);
    int64_t end = e->now + max_ns;
    while (!pred(e, arg) && e->now < end)
        xt_advance(e, 1000000);
    return pred(e, arg);
}

int xt_pred_done(xt_env *e, void *a)
{
    (void)a;
    return tw_xchg_done(e->x);
}

tw_fix_wbuf *xt_begin(xt_client *cl, const char *type)
{
    tw_fix_wbuf *w = tw_fix_session_begin(&cl->fs, type, cl->env->now);
    if (!w) {
        CHECKF(0, "%s: cannot send 35=%s: session %s", cl->name, type,
               tw_fix_state_name(cl->fs.state));
    }
    return w;
}

void xt_send(xt_client *cl)
{
    int rc = tw_fix_session_send(&cl->fs, cl->env->now);
    CHECKF(rc == 0, "%s: send: %d", cl->name, rc);
}

void xt_subscribe(xt_client *cl, const char *req, const char *const *sy, unsigned n)
{
    tw_fix_wbuf *w = xt_begin(cl, "V");
    if (!w)
        return;
    tw_fix_put_cstr(w, 262, req);
    tw_fix_put_char(w, 263, '1');
    tw_fix_put_u64(w, 264, 1);
    tw_fix_put_char(w, 265, '1');
    tw_fix_put_u64(w, 267, 1);
    tw_fix_put_char(w, 269, '2');
    tw_fix_put_u64(w, 146, n);
    for (unsigned i = 0; i < n; i++)
        tw_fix_put_cstr(w, 55, sy[i]);
    xt_send(cl);
}

void xt_order(xt_client *cl, const char *id, const char *sym, char side, long qty,
                     char ord_type, const char *account)
{
    tw_fix_wbuf *w = xt_begin(cl, "D");
    if (!w)
        return;
    tw_fix_put_cstr(w, 11, id);
    if (account)
        tw_fix_put_cstr(w, 1, account);
    tw_fix_put_cstr(w, 55, sym);
    tw_fix_put_char(w, 54, side);
    tw_fix_put_i64(w, 38, qty);
    tw_fix_put_char(w, 40, ord_type);
    tw_fix_put_ts(w, 60, cl->env->now + XT_EPOCH, 6);
    xt_send(cl);
}

static tw_fix_field xt_fields[TW_FIX_MAX_FIELDS];

int xt_parse(const xt_client *cl, unsigned i, tw_fix_msg *m)
{
    m->fields = xt_fields;
    m->cap = TW_FIX_MAX_FIELDS;
    return tw_fix_parse(cl->log[i].raw, cl->log[i].len, m);
}

int xt_is(const tw_fix_msg *m, const char *type)
{
    return m->msg_type_len == strlen(type) && !memcmp(m->msg_type, type, m->msg_type_len);
}

const char *xt_str(const tw_fix_msg *m, uint32_t tag)
{
    static char buf[8][512];
    static int k;
    char *b = buf[k++ & 7];
    const tw_fix_field *f = tw_fix_get(m, tag);
    size_t n = f ? (f->len < 511 ? f->len : 511) : 0;
    if (f)
        memcpy(b, f->val, n);
    b[n] = 0;
    return b;
}

int xt_has(const tw_fix_msg *m, uint32_t tag)
{
    return tw_fix_get(m, tag) != NULL;
}

int xt_find(const xt_client *cl, const char *type, unsigned from, unsigned k)
{
    tw_fix_msg m;
    for (unsigned i = from; i < cl->n_log; i++)
        if (xt_parse(cl, i, &m) == 0 && xt_is(&m, type) && k-- == 0)
            return (int)i;
    return -1;
}

unsigned xt_count(const xt_client *cl, const char *type)
{
    unsigned n = 0;
    tw_fix_msg m;
    for (unsigned i = 0; i < cl->n_log; i++)
        n += xt_parse(cl, i, &m) == 0 && xt_is(&m, type);
    return n;
}

int xt_last(const xt_client *cl, const char *type, tw_fix_msg *m)
{
    for (unsigned i = cl->n_log; i-- > 0;)
        if (xt_parse(cl, i, m) == 0 && xt_is(m, type))
            return (int)i;
    return -1;
}

int xt_sym_of(const tw_xchg_symbol *sy, unsigned n, const char *name, size_t len)
{
    for (unsigned i = 0; i < n; i++)
        if (strlen(sy[i].name) == len && !memcmp(sy[i].name, name, len))
            return (int)i;
    return -1;
}

int xt_bits_eq(double a, double b)
{
    uint64_t x, y;
    memcpy(&x, &a, 8);
    memcpy(&y, &b, 8);
    return x == y;
}

xt_stream xt_check_stream(const xt_client *cl, const tw_xchg_symbol *sy, unsigned n,
                                 const char *const *md_req, int lockstep)
{
    xt_stream r;
    memset(&r, 0, sizeof(r));
    long last_bar = -1;   /* highest bar whose entries we have seen */
    long tr_bar = -1;     /* highest bar-<i> seen */
    tw_fix_msg m;
    for (unsigned i = 0; i < cl->n_log; i++) {
        if (xt_parse(cl, i, &m) != 0) {
            CHECKF(0, "%s: log %u does not parse", cl->name, i);
            r.errors++;
            continue;
        }
        int possdup = !strcmp(xt_str(&m, 43), "Y");
        if (xt_is(&m, "h")) {
            const char *st = xt_str(&m, 340);
            if (!strcmp(st, "2")) {
                CHECKF(last_bar < 0, "%s: Open after bar %ld", cl->name, last_bar);
                r.opened = 1;
            } else if (!strcmp(st, "3")) {
                r.closed = 1;
            }
            CHECKF(xt_has(&m, 336), "%s: h without 336", cl->name);
            continue;
        }
        if (xt_is(&m, "1")) {
            const char *id = xt_str(&m, 112);
            if (strncmp(id, "bar-", 4))
                continue;
            long b = strtol(id + 4, NULL, 10);
            if (!possdup) {
                CHECKF(b == last_bar, "%s: TestRequest %s after entries of bar %ld", cl->name,
                       id, last_bar);
                r.test_requests++;
            }
            if (b > tr_bar)
                tr_bar = b;
            continue;
        }
        if (!xt_is(&m, "X"))
            continue;
        CHECKF(!r.closed, "%s: X after Closed", cl->name);
        /* Entries read from the group directly: the raw 270 text is what
         * must convert to the dataset's bits. */
        tw_fix_group_iter it;
        int cnt = tw_fix_group_begin(&it, &m, &tw_fix_grp_md_inc_entries, 0);
        CHECKF(cnt > 0, "%s: X without entries (%d)", cl->name, cnt);
        const tw_fix_field *req = tw_fix_get(&m, 262);
        uint32_t first, nf;
        int k = 0;
        while (tw_fix_group_next(&it, &first, &nf) == 1) {
            const tw_fix_field *f279 = NULL, *f269 = NULL, *f55 = NULL, *f278 = NULL,
                               *px = NULL, *f271 = NULL;
            for (uint32_t g = first; g < first + nf; g++) {
                const tw_fix_field *f = &m.fields[g];
                if (f->tag == 279) f279 = f;
                else if (f->tag == 269) f269 = f;
                else if (f->tag == 55) f55 = f;
                else if (f->tag == 278) f278 = f;
                else if (f->tag == 270) px = f;
                else if (f->tag == 271) f271 = f;
            }
            int s = f55 ? xt_sym_of(sy, n, f55->val, f55->len) : -1;
            CHECKF(s >= 0, "%s: entry without a known symbol", cl->name);
            if (s < 0 || !f278) {
                r.errors++;
                continue;
            }
            char idb[32];
            snprintf(idb, sizeof(idb), "%.*s", (int)(f278->len < 31 ? f278->len : 31), f278->val);
            long b = strtol(idb, NULL, 10);
            CHECKF(f279 && f279->len == 1 && f279->val[0] == '0' && f269 && f269->len == 1 &&
                       f269->val[0] == '2',
                   "%s: entry without 279=0 269=2", cl->name);
            CHECKF(f271 && f271->len == 1 && f271->val[0] == '1', "%s: 271 is not 1", cl->name);
            if (k++ == 0 && md_req && md_req[s]) {
                CHECKF(req && req->len == strlen(md_req[s]) &&
                           !memcmp(req->val, md_req[s], req->len),
                       "%s: X 262=%s, first entry %s subscribed as %s", cl->name,
                       xt_str(&m, 262), sy[s].name, md_req[s]);
            }
            if (possdup && b < (long)r.bars[s]) {
                r.possdup_dups++;
                continue;
            }
            CHECKF(b == (long)r.bars[s], "%s: %s bar %ld arrived, expected %u%s", cl->name,
                   sy[s].name, b, r.bars[s], possdup ? " (PossDup)" : "");
            if (b != (long)r.bars[s]) {
                r.errors++;
                continue;
            }
            if (lockstep && b > 0) {
                CHECKF(tr_bar >= b - 1, "%s: bar %ld before TestRequest bar-%ld", cl->name, b,
                       b - 1);
                /* Sent after our answer to bar-<b-1> left (SendingTime
                 * has whole microseconds). */
                int64_t hb = b - 1 < XT_MAX_BARS ? cl->hb_bar_ns[b - 1] : 0, st = 0;
                const tw_fix_field *f52 = tw_fix_get(&m, 52);
                CHECKF(hb && f52 && tw_fix_to_epoch_ns(f52->val, f52->len, &st) == 0 &&
                           st >= hb / 1000 * 1000,
                       "%s: bar %ld sent at %lld, our Heartbeat for bar-%ld at %lld", cl->name, b,
                       (long long)st, b - 1, (long long)hb);
            }
            double want = sy[s].close[b];
            if (isnan(want)) {
                CHECKF(px == NULL, "%s: %s bar %ld is NaN but has 270", cl->name, sy[s].name,
                       b);
            } else {
                double got = NAN;
                CHECKF(px && tw_decimal_to_double(px->val, px->len, &got) == 0 &&
                           xt_bits_eq(got, want),
                       "%s: %s bar %ld: 270=%.*s, dataset %.17g", cl->name, sy[s].name, b,
                       px ? (int)(px->len < 60 ? px->len : 60) : 0, px ? px->val : "", want);
                char sh[TW_DECIMAL_MAX];
                tw_double_to_decimal(want, sh);
                CHECKF(px && px->len == strlen(sh) && !memcmp(px->val, sh, px->len),
                       "%s: 270 is not the shortest text", cl->name);
            }
            r.bars[s]++;
            if (b > last_bar)
                last_bar = b;
        }
    }
    return r;
}

long xt_fill_bar(const tw_xchg_symbol *y, long bar)
{
    for (long b = bar; b >= 0; b--)
        if (b < (long)y->n_bars && !isnan(y->close[b]))
            return b;
    return -1;
}

int xt_er(const xt_client *cl, const char *id, tw_fix_msg *m)
{
    for (unsigned i = 0; i < cl->n_log; i++)
        if (xt_parse(cl, i, m) == 0 && (xt_is(m, "8") || xt_is(m, "9")) &&
            !strcmp(xt_str(m, 11), id))
            return (int)i;
    return -1;
}

void xt_check_fill(const xt_client *cl, const char *id, const tw_xchg_symbol *y, long b,
                          long qty, const char *account)
{
    tw_fix_msg m;
    int i = xt_er(cl, id, &m);
    CHECKF(i >= 0, "%s: no ExecutionReport for %s", cl->name, id);
    if (i < 0)
        return;
    CHECKF(!strcmp(xt_str(&m, 150), "F") && !strcmp(xt_str(&m, 39), "2"),
           "%s: %s: 150=%s 39=%s (58=%s)", cl->name, id, xt_str(&m, 150), xt_str(&m, 39),
           xt_str(&m, 58));
    static const uint32_t tags[] = {37, 11, 17, 150, 39, 55, 54, 38, 32, 31, 151, 14, 6, 60};
    for (unsigned k = 0; k < sizeof(tags) / sizeof(tags[0]); k++)
        CHECKF(xt_has(&m, tags[k]), "%s: %s: fill without tag %u", cl->name, id, tags[k]);
    if (account)
        CHECKF(!strcmp(xt_str(&m, 1), account), "%s: %s: account %s", cl->name, id,
               xt_str(&m, 1));
    CHECK(!strcmp(xt_str(&m, 55), y->name));
    CHECK(atol(xt_str(&m, 38)) == qty && atol(xt_str(&m, 32)) == qty &&
          atol(xt_str(&m, 14)) == qty && !strcmp(xt_str(&m, 151), "0"));
    const tw_fix_field *px = tw_fix_get(&m, 31), *avg = tw_fix_get(&m, 6);
    double p = NAN, a = NAN;
    CHECKF(b >= 0 && px && tw_decimal_to_double(px->val, px->len, &p) == 0 &&
               xt_bits_eq(p, y->close[b]),
           "%s: %s: 31=%s, want bar %ld close %.17g", cl->name, id, xt_str(&m, 31), b,
           b >= 0 ? y->close[b] : NAN);
    CHECK(avg && tw_decimal_to_double(avg->val, avg->len, &a) == 0 && xt_bits_eq(a, p));
}

void xt_check_reject(const xt_client *cl, const char *id, int reason)
{
    tw_fix_msg m;
    int i = xt_er(cl, id, &m);
    CHECKF(i >= 0, "%s: no ExecutionReport for %s", cl->name, id);
    if (i < 0)
        return;
    CHECKF(!strcmp(xt_str(&m, 150), "8") && !strcmp(xt_str(&m, 39), "8") &&
               atoi(xt_str(&m, 103)) == reason && xt_has(&m, 58) && xt_has(&m, 37) &&
               xt_has(&m, 17),
           "%s: %s: 150=%s 39=%s 103=%s (want %d) 58=%s", cl->name, id, xt_str(&m, 150),
           xt_str(&m, 39), xt_str(&m, 103), reason, xt_str(&m, 58));
}

double aaa[20], bbb[12];

tw_xchg_symbol syms[2] = {{"AAA", aaa, 20}, {"BBB", bbb, 12}};

void make_data(void)
{
    const double special[] = {100.0, 100.0000000000001, 0.00001, 1e-300, 5e-324,
                              1.7976931348623157e308, 0.1, 1.0 / 3.0, -2.5, 0.0};
    for (int i = 0; i < 10; i++)
        aaa[i] = special[i];
    double p = 1.08725;
    for (int i = 10; i < 20; i++) {
        p = p * (1.0 + (double)((i * 7919) % 13 - 6) / 1000.0);
        aaa[i] = p;
    }
    const double b[12] = {NAN, NAN, NAN, 50.5, 50.25, 51, 52, NAN, 53.125, 54, 55, NAN};
    memcpy(bbb, b, sizeof(b));
}

const char *const both[2] = {"AAA", "BBB"};

void rule(xt_client *cl, const tw_fix_msg *m, int possdup)
{
    if (!xt_is(m, "X"))
        return;
    (void)possdup;
    tw_fix_group_iter it;
    uint32_t first, n;
    if (tw_fix_group_begin(&it, m, &tw_fix_grp_md_inc_entries, 0) <= 0)
        return;
    while (tw_fix_group_next(&it, &first, &n) == 1) {
        char sym[8] = "", bar[24] = "";
        for (uint32_t k = first; k < first + n; k++) {
            const tw_fix_field *f = &m->fields[k];
            if (f->tag == 55)
                snprintf(sym, sizeof(sym), "%.*s", (int)f->len, f->val);
            if (f->tag == 278)
                snprintf(bar, sizeof(bar), "%.*s", (int)f->len, f->val);
        }
        long b = atol(bar);
        char id[32];
        if (!strcmp(sym, "AAA") && b % 3 == 0) {
            snprintf(id, sizeof(id), "A%ld", b);
            xt_order(cl, id, "AAA", b % 2 ? '2' : '1', 1 + b % 2, '1', "inst-aaa");
        }
        if (!strcmp(sym, "BBB") && (b == 1 || b == 7 || b == 11)) {
            snprintf(id, sizeof(id), "B%ld", b);
            xt_order(cl, id, "BBB", '2', 2, '1', "inst-bbb");
        }
    }
}

void check_rule_fills_n(const xt_client *cl, xt_env *e, unsigned extra)
{
    for (long b = 0; b < 20; b += 3) {
        char id[32];
        snprintf(id, sizeof(id), "A%ld", b);
        xt_check_fill(cl, id, &syms[0], xt_fill_bar(&syms[0], b), 1 + b % 2, "inst-aaa");
    }
    xt_check_reject(cl, "B1", 2);
    xt_check_fill(cl, "B7", &syms[1], 6, 2, "inst-bbb");
    xt_check_fill(cl, "B11", &syms[1], 10, 2, "inst-bbb");
    /* on_fill saw each fill with the same bar and price. */
    unsigned seen = 0;
    for (unsigned i = 0; i < e->n_fills; i++) {
        const tw_xchg_fill *f = &e->fills[i];
        if (e->fill_cl[i][0] != 'A' && e->fill_cl[i][0] != 'B')
            continue;
        long b = atol(e->fill_cl[i] + 1);
        const tw_xchg_symbol *y = e->fill_cl[i][0] == 'A' ? &syms[0] : &syms[1];
        long want = xt_fill_bar(y, b);
        CHECKF((long)f->bar == want && xt_bits_eq(f->price, y->close[want]),
               "on_fill %s: bar %llu price %.17g, want bar %ld", e->fill_cl[i],
               (unsigned long long)f->bar, f->price, want);
        CHECK(!strcmp(f->session, cl->name) && !strcmp(f->symbol, y->name));
        seen++;
    }
    CHECK_EQ(seen, 7 + 2);
    CHECK_EQ(e->n_fills, 7 + 2 + extra);
}

void check_rule_fills(const xt_client *cl, xt_env *e)
{
    check_rule_fills_n(cl, e, 0);
}
