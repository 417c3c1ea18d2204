/* The gateway fold (src/trade/gwfold.h), as a snapshot carries it: over a
 * generated journal of two sessions (bars in order, repeated and gapped;
 * orders, partial and whole fills, fills of unknown orders, rejects,
 * cancels and their requests; sessions up, down and closed; logouts; the
 * operator's events, which are not the gateway's; a STOP), the fold of
 * the records <= J, serialised, loaded back and fed the records after J,
 * serialises to the same bytes as the fold of the whole journal, for
 * random J; the serialised form loads back to the same bytes; every
 * truncation and a flipped byte in each field are refused (or, for the
 * counters, taken as they say), never read past; and a snapshot whose
 * gateway section is corrupt is refused with a message naming that
 * section and its session. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trade/engine_internal.h"
#include "trade/gwfold.h"
#include "tw_check.h"

#define N_RECS 30000
#define N_SESS 2

static const char config[] =
    "[engine]\nreport = r.json\njournal = j.bin\n"
    "[session a]\nhost = h\nport = 1\nsender = S\ntarget = T\nstore = sa\n"
    "[session b]\nhost = h\nport = 2\nsender = S2\ntarget = T2\nstore = sb\n"
    "[instrument AAA]\nsession = a\n"
    "[instrument BBB]\nsession = b\n"
    "[instrument CCC]\nsession = a\n"
    "[strategy s]\ninstrument = AAA\ncombo = 1,2,1,1,1,2\n"
    "[strategy t]\ninstrument = BBB\ncombo = 1,2,1,1,1,2\n"
    "[strategy u]\ninstrument = CCC\ncombo = 1,2,1,1,1,2\n"
    "[risk]\nmax_position = 100\nmax_total_position = 1000\nmax_orders_per_s = 100000\n"
    "max_loss = 1e9\nmax_open_orders = 4\n";

static tw_trade_config *cfg;
static tw_journal_rec recs[N_RECS];
static uint64_t n_recs;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void put(uint32_t kind, const void *payload)
{
    tw_journal_rec *r = &recs[n_recs];
    memset(r, 0, sizeof(*r));
    r->tag = TW_JOURNAL_REC_MAGIC | kind;
    r->seq = ++n_recs;
    memcpy(r->payload, payload, TW_JOURNAL_PAYLOAD);
}

static void put_ev(uint8_t type, uint16_t session, tw_ev *ev)
{
    ev->type = type;
    ev->session = session;
    put(TW_JOURNAL_EV, ev);
}

static void put_out(uint8_t type, uint16_t session, uint64_t id, uint32_t instrument,
                    int32_t qty)
{
    tw_out o;
    memset(&o, 0, sizeof(o));
    o.type = type;
    o.session = session;
    o.order_id = id;
    o.instrument = instrument;
    o.instance = instrument;
    o.qty = qty;
    o.side = (uint8_t)(1 + (id & 1));
    put(TW_JOURNAL_OUT, &o);
}

/* The generator's own view of the orders it sent (more than the fold's
 * table holds: its adds then drop). */
typedef struct gen_order {
    uint64_t id;
    uint32_t instrument;
    int32_t left;
} gen_order;

static uint16_t session_of(uint32_t instrument)
{
    return (uint16_t)cfg->strategy_instruments[instrument].session;
}

static void generate(void)
{
    static gen_order open[256];
    uint32_t n_open = 0;
    uint64_t bar[8] = {0}, ids = 0;
    uint8_t z[TW_JOURNAL_PAYLOAD] = {0};
    put(TW__JR_META, z);
    const uint64_t stop_at = N_RECS * 3 / 4 + next() % (N_RECS / 8);
    while (n_recs < N_RECS) {
        tw_ev ev;
        memset(&ev, 0, sizeof(ev));
        const uint32_t r = (uint32_t)(next() % 100);
        const uint32_t k = (uint32_t)(next() % cfg->n_instruments);
        gen_order *o = n_open ? &open[next() % n_open] : NULL;
        if (n_recs == stop_at) {
            put(TW__JR_STOP, z);
        } else if (n_recs == N_RECS / 2) {
            /* More orders at once than session a's table holds: its adds drop. */
            for (int i = 0; i < 100 && n_recs < N_RECS; i++) {
                uint64_t id = (++ids << 20) | (next() & 0xfffff);
                put_out(TW_OUT_ORDER, session_of(0), id, 0, 3);
                if (n_open < 256)
                    open[n_open++] = (gen_order){id, 0, 3};
            }
        } else if (r < 35) {
            ev.instrument = k;
            ev.u.bar.index = bar[k]++;
            if (next() % 20 == 0 && bar[k] > 2) /* a resent bar, or one far back */
                ev.u.bar.index = bar[k] - 1 - next() % (bar[k] < 6000 ? bar[k] - 1 : 6000);
            ev.u.bar.close = next() % 30 == 0 ? NAN : (double)(next() % 100000) / 100.0;
            put_ev(TW_EV_BAR, session_of(k), &ev);
        } else if (r < 50 && n_open < 256) {
            uint64_t id = next() % 50 == 0 && o ? o->id : (++ids << 20) | (next() & 0xfffff);
            int32_t qty = (int32_t)(1 + next() % 10);
            put_out(TW_OUT_ORDER, session_of(k), id, k, qty);
            if (!(o && id == o->id))
                open[n_open++] = (gen_order){id, k, qty};
        } else if (r < 65 && o) {
            ev.u.fill.order_id = next() % 10 == 0 ? next() : o->id;
            ev.u.fill.qty = 1 + (int64_t)(next() % (uint64_t)(o->left > 0 ? o->left : 1));
            ev.u.fill.px = 1.5;
            put_ev(TW_EV_FILL, session_of(o->instrument), &ev);
            if (ev.u.fill.order_id == o->id && (o->left -= (int32_t)ev.u.fill.qty) <= 0)
                *o = open[--n_open];
        } else if (r < 75 && o) {
            ev.u.order.order_id = next() % 10 == 0 ? next() : o->id;
            put_ev(r < 70 ? TW_EV_REJECT : TW_EV_CANCELED, session_of(o->instrument), &ev);
            if (ev.u.order.order_id == o->id)
                *o = open[--n_open];
        } else if (r < 80 && o) {
            put_out(TW_OUT_CANCEL, session_of(o->instrument), o->id, o->instrument, 0);
        } else if (r < 85) {
            ev.u.session.state = (uint32_t)(next() % 3);
            put_ev(TW_EV_SESSION, (uint16_t)(next() % N_SESS), &ev);
        } else if (r < 87) {
            put_out(TW_OUT_LOGOUT, (uint16_t)(next() % N_SESS), 0, 0, 0);
        } else if (r < 90) {
            /* The operator's: no session of the gateway's in them. */
            put_ev(r < 89 ? TW_EV_KILL : TW_EV_OPERATOR, 0x7777, &ev);
        } else if (r < 95) {
            ev.u.barrier.id = n_recs;
            put_ev(TW_EV_BARRIER, (uint16_t)(next() % N_SESS), &ev);
        } else {
            tw_out x;
            memset(&x, 0, sizeof(x));
            x.type = TW_OUT_BARRIER_ACK;
            x.session = (uint16_t)(next() % N_SESS);
            x.ref = n_recs;
            put(TW_JOURNAL_OUT, &x);
        }
    }
}

typedef struct folds {
    tw__gwfold f[N_SESS];
    tw__gwfold *fp[N_SESS];
} folds;

static void folds_init(folds *x)
{
    for (uint32_t k = 0; k < N_SESS; k++) {
        CHECK_EQ(tw__gwfold_init(&x->f[k], cfg, k), 0);
        x->fp[k] = &x->f[k];
    }
}

static void folds_free(folds *x)
{
    for (uint32_t k = 0; k < N_SESS; k++)
        tw__gwfold_free(&x->f[k]);
}

/* Records [from, to) (0-based) into x. */
static void fold(folds *x, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++)
        CHECK_EQ(tw__gwfold_rec(x->fp, N_SESS, &recs[i]), 0);
}

typedef struct bytes {
    uint8_t *p;
    size_t cap, len;
    size_t at[N_SESS + 1]; /* where each session's starts */
} bytes;

static void save(const folds *x, uint64_t seq, bytes *b)
{
    b->len = 0;
    for (uint32_t k = 0; k < N_SESS; k++) {
        b->at[k] = b->len;
        CHECK_EQ(tw__gwfold_save(&x->f[k], seq, &b->p, &b->cap, &b->len), 0);
    }
    b->at[N_SESS] = b->len;
}

static void load(folds *x, const bytes *b, uint64_t seq)
{
    for (uint32_t k = 0; k < N_SESS; k++) {
        tw_error err = {0};
        int rc = tw__gwfold_load(&x->f[k], b->p + b->at[k], b->at[k + 1] - b->at[k], seq, &err);
        CHECKF(rc == 0, "session %u: %s", k, err.msg);
    }
}

static void test_tail(void)
{
    folds whole;
    folds_init(&whole);
    /* The stream reaches what it is meant to: a full table, cancels
     * requested, every flag. */
    uint32_t most = 0, cancels = 0;
    for (uint64_t i = 0; i < n_recs; i++) {
        fold(&whole, i, i + 1);
        most = whole.f[0].open.n > most ? whole.f[0].open.n : most;
        for (uint32_t k = 0; k < whole.f[1].open.n; k++)
            cancels += whole.f[1].open.v[k].cancel_out;
    }
    bytes all = {0}, head = {0}, back = {0}, end = {0};
    save(&whole, n_recs, &all);
    CHECK(most == whole.f[0].open.cap && cancels > 0);
    CHECK(whole.f[0].done.n > 500 && whole.f[1].done.n > 500);
    CHECK(whole.f[0].stopped && whole.f[0].logout_out && whole.f[0].closed_seen);
    CHECK(whole.f[0].gap_bars > 0 && whole.f[1].fills > 500);
    printf("whole journal: %llu records; folds of %zu + %zu bytes, %u + %u open orders, "
           "%u + %u done\n", (unsigned long long)n_recs, all.at[1], all.at[2] - all.at[1],
           whole.f[0].open.n, whole.f[1].open.n, whole.f[0].done.n, whole.f[1].done.n);
    for (int round = 0; round < 40; round++) {
        /* J: anywhere, the edges too. */
        uint64_t j = round == 0 ? 0 : round == 1 ? n_recs : 1 + next() % n_recs;
        folds a, b;
        folds_init(&a);
        folds_init(&b);
        fold(&a, 0, j);
        save(&a, j, &head);
        load(&b, &head, j);
        save(&b, j, &back);
        CHECK(back.len == head.len && memcmp(back.p, head.p, head.len) == 0);
        fold(&b, j, n_recs);
        save(&b, n_recs, &end);
        CHECKF(end.len == all.len && memcmp(end.p, all.p, all.len) == 0,
               "J = %llu: %zu bytes, the whole journal's fold %zu", (unsigned long long)j,
               end.len, all.len);
        folds_free(&a);
        folds_free(&b);
    }
    free(all.p);
    free(head.p);
    free(back.p);
    free(end.p);
    folds_free(&whole);
}

/* Every truncation refused; a byte changed anywhere: refused, or taken
 * and then saved back as exactly the bytes it took. */
static void test_corrupt(void)
{
    folds x, y;
    folds_init(&x);
    folds_init(&y);
    fold(&x, 0, n_recs / 2);
    bytes b = {0}, c = {0};
    save(&x, n_recs / 2, &b);
    const uint8_t *p = b.p + b.at[1];
    const size_t len = b.at[2] - b.at[1];
    uint8_t *q = malloc(len);
    REQUIRE(q);
    tw_error err = {0};
    for (size_t n = 0; n < len; n += n < 256 ? 1 : 61) {
        memcpy(q, p, n);
        CHECK(tw__gwfold_load(&y.f[1], q, n, n_recs / 2, &err) == -TW_EFORMAT && err.msg[0]);
    }
    CHECK(tw__gwfold_load(&y.f[1], p, len, n_recs / 2 + 1, &err) == -TW_EFORMAT);
    CHECK(tw__gwfold_load(&y.f[0], p, len, n_recs / 2, &err) == -TW_EFORMAT); /* another session */
    uint32_t taken = 0;
    for (size_t i = 0; i < len; i += i < 512 ? 1 : 97) {
        memcpy(q, p, len);
        q[i] ^= 0x41;
        int rc = tw__gwfold_load(&y.f[1], q, len, n_recs / 2, &err);
        if (i < 4)
            CHECK(rc == -EPROTONOSUPPORT);
        if (rc != 0) {
            CHECK(err.msg[0] && y.f[1].open.n == 0 && !y.f[1].done.ids);
            continue;
        }
        taken++;
        c.len = 0;
        CHECK_EQ(tw__gwfold_save(&y.f[1], n_recs / 2, &c.p, &c.cap, &c.len), 0);
        CHECK(c.len == len && memcmp(c.p, q, len) == 0);
    }
    CHECK(taken > 0); /* the counters and prices say what they say */
    free(q);
    free(b.p);
    free(c.p);
    folds_free(&x);
    folds_free(&y);
}

/* A snapshot's gateway sections: session b's corrupt (its own CRC good:
 * the writer wrote what it was given) is refused naming it; one missing
 * is refused; both good load. */
static void test_snapshot(void)
{
    folds x, y;
    folds_init(&x);
    folds_init(&y);
    const uint64_t j = n_recs / 3;
    fold(&x, 0, j);
    bytes b = {0};
    save(&x, j, &b);
    for (int c = 0; c < 3; c++) {
        tw_snap_buf sb;
        uint8_t digest[TW_SNAP_DIGEST_BYTES] = {0};
        tw_snap_begin(&sb, j, digest);
        CHECK_EQ(tw_snap_add(&sb, TW_SNAP_SEC_KERNELS, "k", 1), 0);
        CHECK_EQ(tw_snap_add(&sb, TW_SNAP_SEC_GW_FOLD, b.p, b.at[1]), 0);
        if (c == 1) {
            uint8_t *bad = malloc(b.at[2] - b.at[1]);
            REQUIRE(bad);
            memcpy(bad, b.p + b.at[1], b.at[2] - b.at[1]);
            bad[0] = 99; /* version */
            CHECK_EQ(tw_snap_add(&sb, TW_SNAP_SEC_GW_FOLD, bad, b.at[2] - b.at[1]), 0);
            free(bad);
        } else if (c == 0) {
            CHECK_EQ(tw_snap_add(&sb, TW_SNAP_SEC_GW_FOLD, b.p + b.at[1], b.at[2] - b.at[1]), 0);
        }
        /* The trailer, as the writer finishes it. */
        char dir[64];
        snprintf(dir, sizeof(dir), "/tmp/tw-test-gwfold-%d", (int)getpid());
        tw_snap_write_cfg wc = {.dir = dir, .keep = 1};
        tw_error err = {0};
        CHECKF(tw_snap_write(&sb, &wc, &err) == 0, "%s", err.msg);
        tw_snap s;
        CHECKF(tw_snap_parse(sb.buf, sb.len + TW_SNAP_TRAILER_BYTES, &s, &err) == 0, "%s",
               err.msg);
        int rc = tw__gwfold_load_snap(y.fp, N_SESS, cfg, &s, &err);
        if (c == 0) {
            CHECKF(rc == 0, "%s", err.msg);
            bytes back = {0};
            save(&y, j, &back);
            CHECK(back.len == b.len && memcmp(back.p, b.p, b.len) == 0);
            free(back.p);
        } else if (c == 1) {
            CHECK(rc == -EPROTONOSUPPORT);
            CHECKF(strstr(err.msg, "gateway section 1 (id 259, session b): version 99"), "%s",
                   err.msg);
            printf("corrupt section: refused: %s\n", err.msg);
        } else {
            CHECK(rc == -TW_EFORMAT && strstr(err.msg, "1 gateway sections (id 259)"));
            printf("missing section: refused: %s\n", err.msg);
        }
        if (rc != 0)
            CHECK(y.f[0].open.n == 0 && y.f[1].open.n == 0 && !y.f[0].done.ids);
        char p[128];
        snprintf(p, sizeof(p), "%s/snap-%020llu.tws", dir, (unsigned long long)j);
        unlink(p);
        rmdir(dir);
        tw_snap_release(&s);
        tw_snap_free(&sb);
    }
    free(b.p);
    folds_free(&x);
    folds_free(&y);
}

/* Ids finished in any order (beyond the hash's first growth) are saved
 * ascending, each once, and a load gives them back. */
static void test_done_order(void)
{
    tw__gwfold f, g;
    CHECK_EQ(tw__gwfold_init(&f, cfg, 0), 0);
    CHECK_EQ(tw__gwfold_init(&g, cfg, 0), 0);
    enum { N = 3000 };
    uint64_t want[N];
    for (uint32_t i = 0; i < N; i++)
        want[i] = 1000 + 7ull * i;
    uint64_t order[N];
    memcpy(order, want, sizeof(order));
    for (uint32_t i = N - 1; i > 0; i--) { /* a shuffle; then the run's usual: ascending */
        uint32_t j = (uint32_t)(next() % (i + 1));
        if (i < N / 2) {
            uint64_t t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
    for (uint32_t i = 0; i < N; i++) {
        tw_ev ev = {.type = TW_EV_REJECT};
        ev.u.reject.order_id = order[i];
        CHECK_EQ(tw__gwfold_ev(&f, &ev), 0);
        if (i % 5 == 0)
            CHECK_EQ(tw__gwfold_ev(&f, &ev), 0); /* again: still once */
    }
    CHECK_EQ(f.done.n, (uint32_t)N);
    bytes b = {0};
    CHECK_EQ(tw__gwfold_save(&f, 1, &b.p, &b.cap, &b.len), 0);
    CHECK(b.len >= (size_t)N * 8);
    const uint8_t *d = b.p + b.len - (size_t)N * 8;
    int ok = 1;
    for (uint32_t i = 0; i < N && ok; i++) {
        uint64_t v;
        memcpy(&v, d + 8 * i, 8);
        ok = v == want[i];
        CHECKF(ok, "done[%u] = %llu, want %llu", i, (unsigned long long)v,
               (unsigned long long)want[i]);
    }
    tw_error err = {0};
    CHECKF(tw__gwfold_load(&g, b.p, b.len, 1, &err) == 0, "%s", err.msg);
    CHECK(g.done.n == (uint32_t)N && tw__gwfold_done_has(&g, want[N - 1]) &&
          tw__gwfold_done_has(&g, want[0]) && !tw__gwfold_done_has(&g, want[0] + 1));
    bytes c = {0};
    CHECK_EQ(tw__gwfold_save(&g, 1, &c.p, &c.cap, &c.len), 0);
    CHECK(c.len == b.len && memcmp(c.p, b.p, b.len) == 0);
    free(b.p);
    free(c.p);
    tw__gwfold_free(&f);
    tw__gwfold_free(&g);
}

int main(void)
{
    tw_error err = {0};
    CHECKF(tw_trade_config_parse(config, sizeof(config) - 1, "gwfold.ini", &cfg, &err) == 0,
           "%s", err.msg);
    if (!cfg)
        return tw_check_done("trade_gwfold");
    CHECK_EQ(cfg->n_sessions, N_SESS);
    generate();
    test_tail();
    test_corrupt();
    test_snapshot();
    test_done_order();
    tw_trade_config_free(cfg);
    return tw_check_done("trade_gwfold");
}
