/* The strategy's state as bytes (tw_strategy_state_save / _load).
 *
 * Two instruments on two sessions, each with hma_sar combos (the
 * streaming kernel), every built-in kernel by its default params, and the
 * donchian plug-in when its path is given (argv[1]).  A venue played by
 * the test fills each order at the next bar (so orders are open and
 * intents pending at any point), rejects some, fills some in two parts;
 * tight order rates make the buckets bind; a kill switch and an operator
 * ACTIVE come late.  For save points across the run: run to the point,
 * save (the venue's unsent orders as the pending intents), load into a
 * fresh strategy, run the rest there: every intent, every trade, every
 * instance's books and the digest equal the uninterrupted run's, bit for
 * bit.  Then bad payloads: every truncation of a sample, bit flips, a flip
 * with the CRC made good again (never a crash; the strategy still runs),
 * another version, and another configuration (a param, a window, the fee,
 * an instance's kernel, the counts, the risk limits) refused naming what
 * differs. */
#include <errno.h>
#include <stdio.h>

#include "st.h"
#include "tickwire/util.h"

#define BARS 3000
#define N_HMA 4
#define MAX_KERNELS 8
#define PENDING_MAX 4096

static double close_[2][BARS];

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A seeded random walk (Box-Muller normals, the study's sigma), a gap run
 * now and then on instrument 1. */
static void make_data(void)
{
    for (int k = 0; k < 2; k++) {
        double lv = 0.0;
        for (int i = 0; i < BARS; i++) {
            double u1 = ((double)(mix64((uint64_t)(k * BARS + i) * 2) >> 11) + 0.5) / 9007199254740992.0;
            double u2 = ((double)(mix64((uint64_t)(k * BARS + i) * 2 + 1) >> 11) + 0.5) / 9007199254740992.0;
            double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
            lv += 0.004 * z;
            close_[k][i] = 100.0 * exp(lv);
        }
    }
    for (int i = 0; i < BARS; i++)
        if (i % 397 < 5)
            close_[1][i] = NAN;
}

static const int64_t hma[N_HMA][6] = {
    { 8, 16, 4, 10, 15, 30 }, { 2, 5, 2, 3, 4, 9 }, { 20, 40, 6, 13, 20, 40 }, { 1, 1, 1, 1, 1, 1 },
};

typedef struct setup {
    tw_instrument_cfg instr[2];
    tw_instance_cfg inst[2 * (N_HMA + MAX_KERNELS)];
    tw_strategy_cfg cfg;
    uint32_t n_kernels;
    const tw_kernel_def *kernels[MAX_KERNELS];
} setup;

static void setup_make(setup *su, const char *plugin, int kernels)
{
    memset(su, 0, sizeof(*su));
    for (size_t b = 0; kernels && b < tw_kernel_builtin_count() && su->n_kernels < MAX_KERNELS;
         b++)
        su->kernels[su->n_kernels++] = tw_kernel_builtin(b);
    if (plugin && kernels) {
        const tw_kernel_def *d = NULL;
        tw_error err = { 0 };
        CHECKF(tw_kernel_find(plugin, &d, &err) == 0, "%s", err.msg);
        if (d)
            su->kernels[su->n_kernels++] = d;
    }
    uint32_t n = 0;
    for (uint32_t k = 0; k < 2; k++) {
        snprintf(su->instr[k].symbol, TW_NAME_MAX, "SYM%u", k);
        su->instr[k].session = k;
        for (uint32_t j = 0; j < N_HMA; j++) {
            tw_instance_cfg *ic = &su->inst[n++];
            snprintf(ic->name, TW_NAME_MAX, "h%u.%u", k, j);
            ic->instrument = k;
            memcpy(ic->combo, hma[j], sizeof(ic->combo));
        }
        for (uint32_t j = 0; j < su->n_kernels; j++) {
            tw_instance_cfg *ic = &su->inst[n++];
            const tw_kernel_def *d = su->kernels[j];
            snprintf(ic->name, TW_NAME_MAX, "%.20s.%u", d->name, k);
            ic->instrument = k;
            ic->kernel = d;
            for (uint32_t p = 0; p < d->n_params; p++)
                ic->params[p] = d->params[p].dflt;
            if (j == 0) /* hma_sar by name: its windows */
                memcpy(ic->combo, hma[2], sizeof(ic->combo));
        }
    }
    su->cfg.fee = TW_FEE_DEFAULT;
    su->cfg.n_sessions = 2;
    su->cfg.n_instruments = 2;
    su->cfg.n_instances = n;
    su->cfg.instruments = su->instr;
    su->cfg.instances = su->inst;
    tw_risk_cfg_init(&su->cfg.risk);
    su->cfg.risk.max_open_orders = 2;
    su->cfg.risk.max_session_orders_per_s = 400; /* binds at a bar per ms */
    su->cfg.risk.max_orders_per_s = 700;
    su->cfg.risk.max_position = 5;
}

/* What a run wrote. */
typedef struct rec {
    tw_out *outs;
    size_t n_outs, cap_outs;
} rec;

static void rec_add(rec *r, const tw_out *o, size_t n)
{
    if (n == 0)
        return;
    if (r->n_outs + n > r->cap_outs) {
        r->cap_outs = (r->n_outs + n) * 2 + 1024;
        r->outs = realloc(r->outs, r->cap_outs * sizeof(tw_out));
    }
    memcpy(r->outs + r->n_outs, o, n * sizeof(tw_out));
    r->n_outs += n;
}

/* The venue's orders not yet answered (the pending intents). */
typedef struct venue {
    tw_out pend[PENDING_MAX];
    uint32_t n;
} venue;

static void feed(st_harness *h, tw_ev *ev, rec *r, venue *v)
{
    size_t m = st_event(h, ev);
    rec_add(r, h->out, m);
    for (size_t j = 0; j < m; j++)
        if (h->out[j].type == TW_OUT_ORDER || h->out[j].type == TW_OUT_CANCEL) {
            CHECK(v->n < PENDING_MAX);
            if (v->n < PENDING_MAX)
                v->pend[v->n++] = h->out[j];
        }
}

/* Bars [from, to): the venue answers last bar's orders, then the bars. */
static void run(st_harness *h, uint32_t from, uint32_t to, rec *r, venue *v)
{
    for (uint32_t i = from; i < to; i++) {
        h->now_ns = (int64_t)(i + 1) * 1000000;
        venue now = *v;
        v->n = 0;
        for (uint32_t q = 0; q < now.n; q++) {
            const tw_out *o = &now.pend[q];
            tw_ev ev = { 0 };
            ev.now_ns = h->now_ns;
            ev.session = o->session;
            uint64_t hsh = mix64(o->order_id);
            double px = close_[o->instrument][i];
            if (isnan(px))
                px = 100.0;
            if (o->type == TW_OUT_CANCEL) {
                ev.type = TW_EV_CANCELED;
                ev.u.order.order_id = o->order_id;
            } else if (hsh % 23 == 0) {
                ev.type = TW_EV_REJECT;
                ev.u.reject.order_id = o->order_id;
                ev.u.reject.reason = 3;
            } else {
                ev.type = TW_EV_FILL;
                ev.side = o->side;
                ev.u.fill.order_id = o->order_id;
                ev.u.fill.px = px;
                ev.u.fill.qty = o->qty;
                if (hsh % 5 == 0 && o->qty > 1) { /* two parts */
                    ev.u.fill.qty = 1;
                    feed(h, &ev, r, v);
                    ev.u.fill.qty = o->qty - 1;
                    ev.u.fill.px = px * 1.0001;
                }
            }
            feed(h, &ev, r, v);
        }
        for (uint32_t k = 0; k < 2; k++) {
            tw_ev ev = { .type = TW_EV_BAR, .session = (uint16_t)k, .instrument = k };
            ev.now_ns = h->now_ns;
            ev.u.bar.index = i;
            ev.u.bar.close = close_[k][i];
            feed(h, &ev, r, v);
        }
        if (i == BARS * 3 / 4 || i == BARS * 7 / 8) {
            tw_ev ev = { .type = i == BARS * 3 / 4 ? TW_EV_KILL : TW_EV_OPERATOR };
            ev.now_ns = h->now_ns;
            ev.u.oper.state = TW_TRADING_ACTIVE;
            feed(h, &ev, r, v);
        }
    }
}

static void start(st_harness *h, rec *r, venue *v)
{
    for (uint16_t k = 0; k < 2; k++) {
        tw_ev ev = { .type = TW_EV_SESSION, .session = k };
        ev.now_ns = 1;
        ev.u.session.state = TW_SESSION_UP;
        feed(h, &ev, r, v);
    }
}

/* Equal bytes (n may be 0 with NULL pointers). */
static int same_mem(const void *a, const void *b, size_t n) { return n == 0 || memcmp(a, b, n) == 0; }

static uint8_t *save(st_harness *h, const venue *v, uint64_t seq, size_t *len)
{
    size_t n = tw_strategy_state_size(h->s, v->n);
    uint8_t *buf = malloc(n);
    CHECK(tw_strategy_state_save(h->s, seq, v->pend, v->n, buf, n - 1) == 0);
    *len = tw_strategy_state_save(h->s, seq, v->pend, v->n, buf, n);
    CHECK(*len == n);
    return buf;
}

/* Loads into a fresh strategy of su's configuration: the code. */
static int load_fresh(tw_strategy_cfg *cfg, const uint8_t *buf, size_t len, st_harness *h,
                      venue *v, tw_error *err)
{
    if (st_open(h, cfg) != 0)
        return -999;
    tw_strategy_state_info info;
    memset(v, 0, sizeof(*v));
    int rc = tw_strategy_state_load(h->s, buf, len, v->pend, PENDING_MAX, &info, err);
    if (rc == 0)
        v->n = info.n_intents;
    return rc;
}

static void fix_crc(uint8_t *p, size_t len)
{
    uint32_t zero = 0;
    memcpy(p + 52, &zero, 4);
    uint32_t crc = tw_crc32c(0, p, len);
    memcpy(p + 52, &crc, 4);
}

/* Another configuration: the load is refused naming want. */
static void refused(setup *su, const uint8_t *buf, size_t len, const char *want)
{
    st_harness h;
    venue v;
    tw_error err = { 0 };
    int rc = load_fresh(&su->cfg, buf, len, &h, &v, &err);
    CHECKF(rc == -ESTALE && strstr(err.msg, want), "rc %d, \"%s\" (want \"%s\")", rc, err.msg,
           want);
    st_close(&h);
}

/* Bit flips with the CRC made good again: each refused with a reason or
 * loaded; with run_on, a loaded one takes 19 more bars. */
static void forged(setup *su, const uint8_t *buf, size_t len, int run_on, size_t *tried,
                   size_t *refused_n, size_t *loaded, size_t *ran)
{
    uint8_t *bad = malloc(len);
    for (size_t off = 64; off < len; off += 1 + off % 13) {
        memcpy(bad, buf, len);
        bad[off] ^= (uint8_t)(1u << ((off / 7) % 8));
        fix_crc(bad, len);
        st_harness h;
        venue v;
        tw_error err = { 0 };
        (*tried)++;
        int rc = load_fresh(&su->cfg, bad, len, &h, &v, &err);
        if (rc == 0) {
            (*loaded)++;
            if (run_on) {
                rec r = { 0 };
                run(&h, 1501, 1520, &r, &v);
                free(r.outs);
                (*ran)++;
            }
        } else {
            *refused_n += err.msg[0] != 0;
        }
        st_close(&h);
    }
    free(bad);
}

int main(int argc, char **argv)
{
    const char *plugin = argc > 1 ? argv[1] : NULL;
    make_data();
    static setup su;
    setup_make(&su, plugin, 1);
    printf("kernels:");
    for (uint32_t j = 0; j < su.n_kernels; j++)
        printf(" %s", su.kernels[j]->name);
    printf(" (and %d hma_sar combos by windows) per instrument\n", N_HMA);

    /* The uninterrupted run. */
    st_harness u;
    if (st_open(&u, &su.cfg) != 0) {
        CHECK(0);
        return tw_check_done("strategy_state");
    }
    rec ru = { 0 };
    venue vu = { 0 };
    start(&u, &ru, &vu);
    run(&u, 0, BARS, &ru, &vu);
    tw_strategy_counters cu;
    tw_strategy_counters_get(u.s, &cu);
    printf("uninterrupted: %zu intents, %zu trades, %llu fills, %llu risk-rejected (rate %llu), "
           "%llu venue rejects\n", ru.n_outs, u.n_trades, (unsigned long long)cu.fills,
           (unsigned long long)(cu.rejected_by_rule[TW_RULE_RATE_SESSION] +
                                cu.rejected_by_rule[TW_RULE_RATE_TOTAL] +
                                cu.rejected_by_rule[TW_RULE_OPEN_ORDERS]),
           (unsigned long long)cu.rejected_by_rule[TW_RULE_RATE_SESSION],
           (unsigned long long)cu.rejects);
    CHECK(u.n_trades > 100 && cu.fills > 100 && cu.rejects > 0 && cu.kills == 1);
    CHECK(cu.rejected_by_rule[TW_RULE_RATE_SESSION] + cu.rejected_by_rule[TW_RULE_RATE_TOTAL] > 0);

    /* Save points: before the first bar, early, the middle, around the
     * kill switch, the last bar. */
    static const uint32_t points[] = { 0, 1, 57, 1000, 1501, 2250, 2251, 2700, 2999 };
    uint8_t *mid = NULL;
    size_t mid_len = 0;
    for (size_t pi = 0; pi < TW_ARRAY_SIZE(points); pi++) {
        const uint32_t at = points[pi];
        st_harness a, b;
        rec r = { 0 };
        venue v = { 0 };
        CHECK(st_open(&a, &su.cfg) == 0);
        start(&a, &r, &v);
        run(&a, 0, at, &r, &v);
        const size_t n_before = r.n_outs, trades_before = a.n_trades;
        size_t len = 0;
        uint8_t *buf = save(&a, &v, 1000 + at, &len);
        uint64_t dig_a = tw_strategy_digest(a.s);
        venue vb;
        tw_error err = { 0 };
        int rc = load_fresh(&su.cfg, buf, len, &b, &vb, &err);
        CHECKF(rc == 0, "bar %u: %s", at, err.msg);
        if (rc != 0) {
            st_close(&a);
            continue;
        }
        tw_strategy_state_info info;
        CHECK(tw_strategy_state_info_get(buf, len, &info, &err) == 0 && info.journal_seq == 1000 + at &&
              info.n_intents == v.n && info.bytes == len);
        CHECK(tw_strategy_digest(b.s) == dig_a && st_same_books(a.s, b.s));
        CHECK(vb.n == v.n && same_mem(vb.pend, v.pend, v.n * sizeof(tw_out)));
        /* The copy alone is unsealed (refused); sealed, it is the save. */
        {
            uint8_t *cp = malloc(len);
            CHECK(tw_strategy_state_copy(a.s, 1000 + at, v.pend, v.n, cp, len) == len);
            tw_error e2 = { 0 };
            CHECK(tw_strategy_state_info_get(cp, len, NULL, &e2) == -TW_EFORMAT &&
                  strstr(e2.msg, "CRC"));
            tw_strategy_state_seal(cp, len);
            CHECK(memcmp(cp, buf, len) == 0);
            free(cp);
        }
        /* The same state saves to the same bytes. */
        size_t len2 = 0;
        uint8_t *buf2 = save(&b, &vb, 1000 + at, &len2);
        CHECKF(len2 == len && memcmp(buf, buf2, len) == 0, "bar %u: a loaded state saves to other "
               "bytes", at);
        free(buf2);
        run(&b, at, BARS, &r, &vb);
        /* Everything after the point: the uninterrupted run's bits. */
        CHECKF(r.n_outs == ru.n_outs && same_mem(r.outs, ru.outs, r.n_outs * sizeof(tw_out)),
               "bar %u: intents differ (%zu + after vs %zu)", at, n_before, ru.n_outs);
        CHECKF(trades_before + b.n_trades == u.n_trades &&
                   same_mem(a.trades, u.trades, trades_before * sizeof(tw_strategy_trade)) &&
                   same_mem(b.trades, u.trades + trades_before,
                            b.n_trades * sizeof(tw_strategy_trade)),
               "bar %u: trades differ", at);
        CHECKF(tw_strategy_digest(b.s) == tw_strategy_digest(u.s) && st_same_books(b.s, u.s),
               "bar %u: books or digest differ", at);
        printf("saved at bar %4u: %zu bytes (%u pending intents), resumed: parity\n", at, len,
               v.n);
        if (at == 1501) {
            mid = buf;
            mid_len = len;
        } else {
            free(buf);
        }
        free(r.outs);
        st_close(&a);
        st_close(&b);
    }
    if (!mid)
        return tw_check_done("strategy_state");

    /* Truncated: every length of the header, then a spread. */
    size_t refused_n = 0, tried = 0;
    for (size_t cut = 0; cut < mid_len; cut += cut < 128 ? 1 : 97) {
        st_harness h;
        venue v;
        tw_error err = { 0 };
        tried++;
        int rc = load_fresh(&su.cfg, mid, cut, &h, &v, &err);
        refused_n += rc == -TW_EFORMAT && err.msg[0];
        st_close(&h);
    }
    CHECKF(refused_n == tried, "%zu of %zu truncations refused", refused_n, tried);
    /* One bit flipped: refused (the CRC, or the header's own checks). */
    uint8_t *bad = malloc(mid_len);
    refused_n = tried = 0;
    for (size_t off = 0; off < mid_len; off += 1 + off % 61) {
        memcpy(bad, mid, mid_len);
        bad[off] ^= (uint8_t)(1u << (off % 8));
        st_harness h;
        venue v;
        tw_error err = { 0 };
        tried++;
        int rc = load_fresh(&su.cfg, bad, mid_len, &h, &v, &err);
        refused_n += rc < 0 && err.msg[0];
        st_close(&h);
    }
    CHECKF(refused_n == tried, "%zu of %zu flipped bits refused", refused_n, tried);
    /* A flip with the CRC made good: refused or loaded, never a crash.
     * A loaded one runs on where every byte is the strategy's own (hma_sar
     * instances only): a plug-in kernel's state bytes are the kernel's,
     * trusted once the CRC holds (zscore keeps its ring head there). */
    size_t loaded = 0, ran = 0;
    refused_n = tried = 0;
    forged(&su, mid, mid_len, 0, &tried, &refused_n, &loaded, &ran);
    {
        static setup sh;
        setup_make(&sh, NULL, 0);
        st_harness a;
        rec r = { 0 };
        venue v = { 0 };
        CHECK(st_open(&a, &sh.cfg) == 0);
        start(&a, &r, &v);
        run(&a, 0, 1501, &r, &v);
        size_t len = 0;
        uint8_t *buf = save(&a, &v, 1501, &len);
        forged(&sh, buf, len, 1, &tried, &refused_n, &loaded, &ran);
        free(buf);
        free(r.outs);
        st_close(&a);
    }
    CHECK(refused_n + loaded == tried && ran > 0);
    printf("bad payloads: truncations and bit flips refused; %zu flips with a good CRC: %zu "
           "refused by the checks, %zu loaded (%zu ran on)\n", tried, refused_n, loaded, ran);
    /* Another version. */
    memcpy(bad, mid, mid_len);
    bad[8] = 9;
    fix_crc(bad, mid_len);
    {
        st_harness h;
        venue v;
        tw_error err = { 0 };
        CHECK(load_fresh(&su.cfg, bad, mid_len, &h, &v, &err) == -EPROTONOSUPPORT);
        st_close(&h);
    }
    /* Room for fewer intents than it carries. */
    {
        st_harness h;
        tw_error err = { 0 };
        tw_out few[1];
        CHECK(st_open(&h, &su.cfg) == 0);
        tw_strategy_state_info info;
        CHECK(tw_strategy_state_info_get(mid, mid_len, &info, &err) == 0);
        if (info.n_intents > 1)
            CHECK(tw_strategy_state_load(h.s, mid, mid_len, few, 1, NULL, &err) == -ENOSPC);
        st_close(&h);
    }

    /* Other configurations, each refused naming the difference. */
    setup other = su;
    other.cfg.instances = other.inst;
    other.cfg.instruments = other.instr;
    const uint32_t zi = N_HMA + 1; /* zscore on instrument 0 */
    CHECK(!strcmp(other.inst[zi].kernel->name, "zscore"));
    other.inst[zi].params[1] = 2.5;
    refused(&other, mid, mid_len, "param entry");
    other = su;
    other.cfg.instances = other.inst;
    other.cfg.instruments = other.instr;
    other.inst[1].combo[5] = 10;
    refused(&other, mid, mid_len, "window 5 is 9 in the state, configured 10");
    other = su;
    other.cfg.instances = other.inst;
    other.cfg.instruments = other.instr;
    other.cfg.fee = 0.1;
    refused(&other, mid, mid_len, "fee");
    other = su;
    other.cfg.instances = other.inst;
    other.cfg.instruments = other.instr;
    other.inst[zi].kernel = tw_kernel_builtin(0);
    memcpy(other.inst[zi].combo, hma[0], sizeof(hma[0]));
    refused(&other, mid, mid_len,
            "instance 5 (zscore.0): the state has kernel \"zscore 1\", configured \"hma_sar 1\"");
    other = su;
    other.cfg.instances = other.inst;
    other.cfg.instruments = other.instr;
    other.inst[zi + 1].kernel = tw_kernel_builtin(1); /* donchian (or hma_sar) -> zscore */
    for (uint32_t p = 0; p < other.inst[zi + 1].kernel->n_params; p++)
        other.inst[zi + 1].params[p] = other.inst[zi + 1].kernel->params[p].dflt;
    if (su.n_kernels > 2)
        refused(&other, mid, mid_len, "kernel \"donchian 1\", configured \"zscore 1\"");
    other = su;
    other.cfg.instances = other.inst;
    other.cfg.instruments = other.instr;
    other.cfg.n_instances--;
    refused(&other, mid, mid_len, "instances");
    other = su;
    other.cfg.instances = other.inst;
    other.cfg.instruments = other.instr;
    other.cfg.risk.max_position = 6;
    refused(&other, mid, mid_len, "risk limits");
    other = su;
    other.cfg.instances = other.inst;
    other.cfg.instruments = other.instr;
    snprintf(other.inst[2].name, TW_NAME_MAX, "renamed");
    refused(&other, mid, mid_len, "\"renamed\"");

    /* The kernel set and the configuration digest. */
    char text[4096];
    size_t tl;
    {
        st_harness h;
        CHECK(st_open(&h, &su.cfg) == 0);
        tl = tw_strategy_kernels_text(h.s, text, sizeof(text));
        CHECK(tl == strlen(text) && strstr(text, "hma_sar 1\n") && strstr(text, "zscore 1\n"));
        uint8_t d1[16], d2[16];
        tw_strategy_config_digest(h.s, d1);
        st_harness g;
        other = su;
        other.cfg.instances = other.inst;
        other.cfg.instruments = other.instr;
        other.inst[zi].params[1] = 2.5;
        CHECK(st_open(&g, &other.cfg) == 0);
        tw_strategy_config_digest(g.s, d2);
        CHECK(memcmp(d1, d2, 16) != 0);
        tw_strategy_config_digest(u.s, d2);
        CHECK(memcmp(d1, d2, 16) == 0);
        st_close(&g);
        st_close(&h);
    }

    free(bad);
    free(mid);
    free(ru.outs);
    st_close(&u);
    return tw_check_done("strategy_state");
}
