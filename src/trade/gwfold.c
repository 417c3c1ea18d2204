/* A session's gateway fold (gwfold.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trade/engine_internal.h"
#include "trade/gwfold.h"

int tw__gwfold_init(tw__gwfold *f, const tw_trade_config *cfg, uint32_t session)
{
    memset(f, 0, sizeof(*f));
    f->session = session;
    f->n_instruments = cfg->n_instruments;
    f->local_of = malloc((cfg->n_instruments + 1) * sizeof(uint32_t));
    if (!f->local_of)
        return -ENOMEM;
    for (uint32_t k = 0; k < cfg->n_instruments; k++) {
        f->local_of[k] = UINT32_MAX;
        if (cfg->strategy_instruments[k].session == session)
            f->local_of[k] = f->n_sym++;
    }
    f->last_bar = malloc((f->n_sym + 1) * sizeof(int64_t));
    f->closes = malloc(((size_t)f->n_sym + 1) * TW__GW_CLOSES_WIN * sizeof(tw__recent_close));
    /* Orders: as many as the strategy can have open on these instruments. */
    uint32_t n_inst = 0;
    for (uint32_t i = 0; i < cfg->n_instances; i++)
        n_inst += f->local_of[cfg->instances[i].instrument] != UINT32_MAX;
    f->open.cap = n_inst * (cfg->risk.max_open_orders + 2) + 64;
    f->open.v = malloc(f->open.cap * sizeof(tw__open_order));
    if (!f->last_bar || !f->closes || !f->open.v) {
        tw__gwfold_free(f);
        return -ENOMEM;
    }
    tw__gwfold_reset(f);
    return 0;
}

void tw__gwfold_free(tw__gwfold *f)
{
    free(f->local_of);
    free(f->last_bar);
    free(f->closes);
    free(f->open.v);
    free(f->done.ids);
    memset(f, 0, sizeof(*f));
}

void tw__gwfold_reset(tw__gwfold *f)
{
    for (uint32_t k = 0; k < f->n_sym; k++)
        f->last_bar[k] = -1;
    for (size_t i = 0; i < (size_t)f->n_sym * TW__GW_CLOSES_WIN; i++)
        f->closes[i] = (tw__recent_close){.bar = -1, .px = 0};
    f->open.n = 0;
    free(f->done.ids);
    f->done.ids = NULL;
    f->done.mask = f->done.n = 0;
    f->up = f->closed_seen = f->stopped = f->logout_out = 0;
    f->bars = f->gap_bars = f->fills = f->rejects = f->canceled = f->orders_sent = 0;
}

int tw__gwfold_copy(tw__gwfold *dst, const tw__gwfold *src)
{
    TW_VERIFY(dst->n_sym == src->n_sym && dst->open.cap == src->open.cap);
    uint64_t *ids = NULL;
    if (src->done.ids) {
        ids = malloc(((size_t)src->done.mask + 1) * sizeof(uint64_t));
        if (!ids)
            return -ENOMEM;
        memcpy(ids, src->done.ids, ((size_t)src->done.mask + 1) * sizeof(uint64_t));
    }
    memcpy(dst->last_bar, src->last_bar, src->n_sym * sizeof(int64_t));
    memcpy(dst->closes, src->closes,
           (size_t)src->n_sym * TW__GW_CLOSES_WIN * sizeof(tw__recent_close));
    memcpy(dst->open.v, src->open.v, src->open.n * sizeof(tw__open_order));
    dst->open.n = src->open.n;
    free(dst->done.ids);
    dst->done.ids = ids;
    dst->done.mask = src->done.mask;
    dst->done.n = src->done.n;
    dst->up = src->up;
    dst->closed_seen = src->closed_seen;
    dst->stopped = src->stopped;
    dst->logout_out = src->logout_out;
    dst->bars = src->bars;
    dst->gap_bars = src->gap_bars;
    dst->fills = src->fills;
    dst->rejects = src->rejects;
    dst->canceled = src->canceled;
    dst->orders_sent = src->orders_sent;
    return 0;
}

/* ---- the tables ---- */

tw__open_order *tw__gwfold_open_find(tw__gwfold *f, uint64_t id)
{
    for (uint32_t i = 0; i < f->open.n; i++)
        if (f->open.v[i].id == id)
            return &f->open.v[i];
    return NULL;
}

void tw__gwfold_open_add(tw__gwfold *f, const tw_out *o)
{
    if (f->open.n < f->open.cap)
        f->open.v[f->open.n++] = (tw__open_order){.id = o->order_id, .instance = o->instance,
                                                .instrument = o->instrument, .qty = o->qty,
                                                .side = o->side};
}

void tw__gwfold_open_remove(tw__gwfold *f, uint64_t id)
{
    tw__open_order *o = tw__gwfold_open_find(f, id);
    if (o) {
        *o = f->open.v[--f->open.n];
        TW_ASSERT(f->open.n < f->open.cap);
    }
}

void tw__gwfold_remember_close(tw__gwfold *f, uint32_t local, uint64_t bar, double px)
{
    tw__recent_close *c =
        &f->closes[(size_t)local * TW__GW_CLOSES_WIN + (bar & (TW__GW_CLOSES_WIN - 1))];
    c->bar = (int64_t)bar;
    c->px = px;
}

static uint32_t done_slot(const uint64_t *ids, uint32_t mask, uint64_t id)
{
    uint32_t i = (uint32_t)(id * 0x9e3779b97f4a7c15ull >> 32) & mask;
    while (ids[i] != 0 && ids[i] != id + 1)
        i = (i + 1) & mask;
    return i;
}

int tw__gwfold_done_has(const tw__gwfold *f, uint64_t id)
{
    return f->done.ids && f->done.ids[done_slot(f->done.ids, f->done.mask, id)] == id + 1;
}

static int done_add(tw__gwfold *f, uint64_t id)
{
    if (!f->done.ids || 2 * ((uint64_t)f->done.n + 1) > (uint64_t)f->done.mask + 1) {
        uint64_t cap = f->done.ids ? 2 * ((uint64_t)f->done.mask + 1) : 1024;
        if (cap > (1ull << 31))
            return -E2BIG;
        uint64_t *ids = calloc(cap, sizeof(uint64_t));
        if (!ids)
            return -ENOMEM;
        for (uint64_t i = 0; f->done.ids && i <= f->done.mask; i++)
            if (f->done.ids[i])
                ids[done_slot(ids, (uint32_t)(cap - 1), f->done.ids[i] - 1)] = f->done.ids[i];
        free(f->done.ids);
        f->done.ids = ids;
        f->done.mask = (uint32_t)(cap - 1);
    }
    uint32_t i = done_slot(f->done.ids, f->done.mask, id);
    if (f->done.ids[i] == 0) {
        f->done.ids[i] = id + 1;
        f->done.n++;
    }
    return 0;
}

/* ---- the apply functions ---- */

int tw__gwfold_ev(tw__gwfold *f, const tw_ev *ev)
{
    switch (ev->type) {
    case TW_EV_BAR: {
        if (f->stopped)
            return 0; /* as the strategy process did: no bars after STOP */
        uint32_t local = ev->instrument < f->n_instruments ? f->local_of[ev->instrument]
                                                           : UINT32_MAX;
        if (local == UINT32_MAX)
            return 0;
        if ((int64_t)ev->u.bar.index > f->last_bar[local])
            f->last_bar[local] = (int64_t)ev->u.bar.index;
        tw__gwfold_remember_close(f, local, ev->u.bar.index, ev->u.bar.close);
        f->bars++;
        f->gap_bars += isnan(ev->u.bar.close);
        return 0;
    }
    case TW_EV_FILL: {
        f->fills++;
        tw__open_order *o = tw__gwfold_open_find(f, ev->u.fill.order_id);
        if (o && (o->qty -= (int32_t)ev->u.fill.qty) <= 0) {
            tw__gwfold_open_remove(f, ev->u.fill.order_id);
            return done_add(f, ev->u.fill.order_id);
        }
        return 0;
    }
    case TW_EV_REJECT:
    case TW_EV_CANCELED:
        f->rejects += ev->type == TW_EV_REJECT;
        f->canceled += ev->type == TW_EV_CANCELED;
        tw__gwfold_open_remove(f, ev->u.order.order_id);
        return done_add(f, ev->u.order.order_id);
    case TW_EV_SESSION:
        f->up = ev->u.session.state == TW_SESSION_UP;
        if (ev->u.session.state == TW_SESSION_CLOSED)
            f->closed_seen = 1;
        return 0;
    default: return 0;
    }
}

void tw__gwfold_out(tw__gwfold *f, const tw_out *o)
{
    if (o->type == TW_OUT_ORDER) {
        f->orders_sent++;
        if (!tw__gwfold_open_find(f, o->order_id))
            tw__gwfold_open_add(f, o);
    } else if (o->type == TW_OUT_CANCEL) {
        tw__open_order *x = tw__gwfold_open_find(f, o->order_id);
        if (x)
            x->cancel_out = 1;
    } else if (o->type == TW_OUT_LOGOUT) {
        f->logout_out = 1;
    }
}

int tw__gwfold_rec(tw__gwfold *const *f, uint32_t n, const tw_journal_rec *rec)
{
    uint32_t k = tw_journal_rec_kind(rec);
    if (k == TW_JOURNAL_EV) {
        tw_ev ev;
        memcpy(&ev, rec->payload, sizeof(ev));
        if (ev.type == TW_EV_KILL || ev.type == TW_EV_OPERATOR)
            return 0;
        return ev.session < n ? tw__gwfold_ev(f[ev.session], &ev) : -TW_EFORMAT;
    }
    if (k == TW_JOURNAL_OUT) {
        tw_out o;
        memcpy(&o, rec->payload, sizeof(o));
        if (o.session >= n)
            return -TW_EFORMAT;
        tw__gwfold_out(f[o.session], &o);
        return 0;
    }
    if (k == TW__JR_STOP)
        for (uint32_t i = 0; i < n; i++)
            f[i]->stopped = 1;
    return 0;
}

int tw__gwfold_outs(const tw__gwfold *f, int (*fn)(void *ctx, const tw_out *o), void *ctx)
{
    int rc = 0;
    for (uint32_t i = 0; i < f->open.n && rc == 0; i++) {
        const tw__open_order *x = &f->open.v[i];
        tw_out o = {.type = TW_OUT_ORDER, .session = (uint16_t)f->session,
                    .instance = x->instance, .instrument = x->instrument, .order_id = x->id};
        rc = fn(ctx, &o);
        if (rc == 0 && x->cancel_out) {
            o.type = TW_OUT_CANCEL;
            rc = fn(ctx, &o);
        }
    }
    if (rc == 0 && f->logout_out) {
        tw_out o = {.type = TW_OUT_LOGOUT, .session = (uint16_t)f->session};
        rc = fn(ctx, &o);
    }
    return rc;
}

/* ---- serialised ---- */

typedef struct close_rec {
    uint32_t local;
    uint32_t zero;
    int64_t bar;
    double px;
} close_rec;
_Static_assert(sizeof(close_rec) == 24, "a recent close, as serialised");

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int tw__gwfold_save(const tw__gwfold *f, uint64_t seq, uint8_t **buf, size_t *cap, size_t *len)
{
    uint64_t n_closes = 0;
    for (size_t i = 0; i < (size_t)f->n_sym * TW__GW_CLOSES_WIN; i++)
        n_closes += f->closes[i].bar >= 0;
    const size_t need = sizeof(tw__gwfold_hdr) + f->n_sym * sizeof(int64_t) +
                        n_closes * sizeof(close_rec) + f->open.n * sizeof(tw__open_order) +
                        (size_t)f->done.n * sizeof(uint64_t);
    if (*cap - *len < need) {
        size_t c = *cap ? *cap : 4096;
        while (c - *len < need)
            c *= 2;
        uint8_t *p = realloc(*buf, c);
        if (!p)
            return -ENOMEM;
        *buf = p;
        *cap = c;
    }
    uint8_t *p = *buf + *len;
    tw__gwfold_hdr h = {.version = TW__GWFOLD_VERSION, .session = f->session, .seq = seq,
                        .n_sym = f->n_sym, .n_open = f->open.n, .n_closes = n_closes,
                        .n_done = f->done.n, .bars = f->bars, .gap_bars = f->gap_bars,
                        .fills = f->fills, .rejects = f->rejects, .canceled = f->canceled,
                        .orders_sent = f->orders_sent,
                        .flags = (f->up ? TW__GWFOLD_F_UP : 0u) |
                                 (f->closed_seen ? TW__GWFOLD_F_CLOSED : 0u) |
                                 (f->stopped ? TW__GWFOLD_F_STOPPED : 0u) |
                                 (f->logout_out ? TW__GWFOLD_F_LOGOUT : 0u)};
    memcpy(p, &h, sizeof(h));
    p += sizeof(h);
    memcpy(p, f->last_bar, f->n_sym * sizeof(int64_t));
    p += f->n_sym * sizeof(int64_t);
    for (size_t i = 0; i < (size_t)f->n_sym * TW__GW_CLOSES_WIN; i++)
        if (f->closes[i].bar >= 0) {
            close_rec c = {.local = (uint32_t)(i / TW__GW_CLOSES_WIN), .bar = f->closes[i].bar,
                           .px = f->closes[i].px};
            memcpy(p, &c, sizeof(c));
            p += sizeof(c);
        }
    memcpy(p, f->open.v, f->open.n * sizeof(tw__open_order));
    p += f->open.n * sizeof(tw__open_order);
    /* Sorted: the hash's layout depends on its growth, the set does not. */
    uint8_t *done = p;
    for (uint64_t i = 0; f->done.ids && i <= f->done.mask; i++)
        if (f->done.ids[i]) {
            uint64_t id = f->done.ids[i] - 1;
            memcpy(p, &id, 8);
            p += 8;
        }
    qsort(done, f->done.n, sizeof(uint64_t), cmp_u64);
    TW_VERIFY((size_t)(p - (*buf + *len)) == need);
    *len += need;
    return 0;
}

static int load(tw__gwfold *f, const uint8_t *p, size_t len, uint64_t seq, tw_error *err)
{
    tw__gwfold_hdr h;
    if (len < sizeof(h))
        return tw__err(err, -TW_EFORMAT, "%zu bytes, shorter than its header", len);
    memcpy(&h, p, sizeof(h));
    if (h.version != TW__GWFOLD_VERSION)
        return tw__err(err, -EPROTONOSUPPORT, "version %u, this build reads %u", h.version,
                       TW__GWFOLD_VERSION);
    if (h.session != f->session || h.n_sym != f->n_sym || h.zero != 0 ||
        (h.flags & ~(uint32_t)15) != 0)
        return tw__err(err, -TW_EFORMAT, "of session %u with %u instruments (flags %x), this "
                       "is session %u with %u", h.session, h.n_sym, h.flags, f->session,
                       f->n_sym);
    if (h.seq != seq)
        return tw__err(err, -TW_EFORMAT, "the fold of journal seq %llu in a snapshot of %llu",
                       (unsigned long long)h.seq, (unsigned long long)seq);
    if (h.n_open > f->open.cap || h.n_closes > (uint64_t)f->n_sym * TW__GW_CLOSES_WIN ||
        h.n_done > (1ull << 30))
        return tw__err(err, -TW_EFORMAT, "%u open orders (room for %u), %llu closes, %llu done: "
                       "more than it can hold", h.n_open, f->open.cap,
                       (unsigned long long)h.n_closes, (unsigned long long)h.n_done);
    const uint64_t need = sizeof(h) + (uint64_t)h.n_sym * sizeof(int64_t) +
                          h.n_closes * sizeof(close_rec) +
                          (uint64_t)h.n_open * sizeof(tw__open_order) + h.n_done * 8;
    if (need != len)
        return tw__err(err, -TW_EFORMAT, "%zu bytes, its counts say %llu", len,
                       (unsigned long long)need);
    p += sizeof(h);
    memcpy(f->last_bar, p, h.n_sym * sizeof(int64_t));
    p += h.n_sym * sizeof(int64_t);
    for (uint32_t k = 0; k < h.n_sym; k++)
        if (f->last_bar[k] < -1)
            return tw__err(err, -TW_EFORMAT, "instrument %u: last bar %lld", k,
                           (long long)f->last_bar[k]);
    uint64_t prev = 0;
    for (uint64_t i = 0; i < h.n_closes; i++, p += sizeof(close_rec)) {
        close_rec c;
        memcpy(&c, p, sizeof(c));
        uint64_t at = (uint64_t)c.local * TW__GW_CLOSES_WIN +
                      ((uint64_t)c.bar & (TW__GW_CLOSES_WIN - 1));
        if (c.local >= h.n_sym || c.zero != 0 || c.bar < 0 || (i > 0 && at <= prev))
            return tw__err(err, -TW_EFORMAT, "recent close %llu (instrument %u, bar %lld): out "
                           "of range or of order", (unsigned long long)i, c.local,
                           (long long)c.bar);
        f->closes[at] = (tw__recent_close){.bar = c.bar, .px = c.px};
        prev = at;
    }
    for (uint32_t i = 0; i < h.n_open; i++, p += sizeof(tw__open_order)) {
        tw__open_order o;
        memcpy(&o, p, sizeof(o));
        if (o.instrument >= f->n_instruments || o.cancel_out > 1 || o.pad_[0] || o.pad_[1] ||
            tw__gwfold_open_find(f, o.id))
            return tw__err(err, -TW_EFORMAT, "open order %u (%016llx): bad instrument, flags or "
                           "a second entry", i, (unsigned long long)o.id);
        f->open.v[f->open.n++] = o;
    }
    for (uint64_t i = 0; i < h.n_done; i++, p += 8) {
        uint64_t id;
        memcpy(&id, p, 8);
        if (id == UINT64_MAX || (i > 0 && id <= prev))
            return tw__err(err, -TW_EFORMAT, "done order %llu (%016llx): not ascending",
                           (unsigned long long)i, (unsigned long long)id);
        int rc = done_add(f, id);
        if (rc != 0)
            return tw__err(err, rc, "done orders: out of memory");
        prev = id;
    }
    f->up = (h.flags & TW__GWFOLD_F_UP) != 0;
    f->closed_seen = (h.flags & TW__GWFOLD_F_CLOSED) != 0;
    f->stopped = (h.flags & TW__GWFOLD_F_STOPPED) != 0;
    f->logout_out = (h.flags & TW__GWFOLD_F_LOGOUT) != 0;
    f->bars = h.bars;
    f->gap_bars = h.gap_bars;
    f->fills = h.fills;
    f->rejects = h.rejects;
    f->canceled = h.canceled;
    f->orders_sent = h.orders_sent;
    return 0;
}

int tw__gwfold_load(tw__gwfold *f, const void *p, size_t len, uint64_t seq, tw_error *err)
{
    tw__gwfold_reset(f);
    int rc = load(f, p, len, seq, err);
    if (rc != 0)
        tw__gwfold_reset(f);
    return rc;
}

int tw__gwfold_load_snap(tw__gwfold *const *f, uint32_t n, const tw_trade_config *cfg,
                         const tw_snap *s, tw_error *err)
{
    uint32_t k = 0;
    int rc = 0;
    for (uint32_t i = 0; i < s->nsec && rc == 0; i++) {
        if (s->sec[i].id != TW_SNAP_SEC_GW_FOLD)
            continue;
        tw_error fe = {0};
        if (k >= n)
            rc = tw__err(err, -TW_EFORMAT, "more gateway sections (id %u) than the %u sessions",
                         TW_SNAP_SEC_GW_FOLD, n);
        else if ((rc = tw__gwfold_load(f[k], s->sec[i].data, (size_t)s->sec[i].len,
                                       s->hdr.journal_seq, &fe)) != 0)
            tw__err(err, rc, "gateway section %u (id %u, session %s): %s", k, TW_SNAP_SEC_GW_FOLD,
                    cfg->sessions[k].name, fe.msg);
        k++;
    }
    if (rc == 0 && k != n)
        rc = tw__err(err, -TW_EFORMAT, "%u gateway sections (id %u), the configuration has %u "
                     "sessions", k, TW_SNAP_SEC_GW_FOLD, n);
    if (rc != 0)
        for (uint32_t i = 0; i < n; i++)
            tw__gwfold_reset(f[i]);
    return rc;
}
