/* Lockstep parity of the strategy core with the sweep, and the report.
 *
 * Two instruments on two sessions: the study's dataset (kernel.md "Data",
 * built by /usr/bin/python3 with tickwire.data.study()) and a NaN-gapped
 * one (tickwire.data.with_nan_gaps), 10 combos each (default-grid ones and
 * odd windows up to 400).  A lockstep venue (live.md, "The venue
 * protocol") is played by the test: per bar, BAR then BARRIER for each
 * session; every order the strategy wrote before the barrier's ack is
 * filled at that bar's close.  Then, per instance, bit for bit:
 *   execution trades and PnL == tw_sweep() (scalar and exact kernels);
 *   signal trades and PnL   == the same;
 *   the trade list (side, entry bar and price, exit bar and price, r) ==
 *     a reference built from tw_wma() and kernel.md's loop, which equals
 *     the kernel's own trade log (tw_trades());
 *   the open position == the reference's.
 * Then the JSON report and the trades CSV are read back by python's json
 * and csv modules and every number compared bit for bit.  Skips (77)
 * without /usr/bin/python3 and numpy. */
#include <unistd.h>

#include "st.h"
#include "tickwire/trade.h"

#define N_COMBOS 10
static const int64_t odd[][6] = {
    { 397, 400, 19, 45, 67, 133 }, { 1, 1, 1, 1, 1, 1 },       { 7, 13, 3, 5, 9, 11 },
    { 101, 203, 17, 33, 51, 399 }, { 2, 399, 5, 1, 3, 7 },     { 200, 3, 400, 2, 300, 41 },
};

/* A check main() cannot go on without. */
#define MUST(c)                                                                        \
    do {                                                                               \
        if (!(c)) {                                                                    \
            CHECK(c);                                                                  \
            return tw_check_done("strategy_parity");                                   \
        }                                                                              \
    } while (0)

static int run(const char *cmd)
{
    int st = system(cmd);
    return st == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *src = argc > 1 ? argv[1] : ".";
    /* --bars N: the first N bars only (the sanitizer build: memory safety
     * there, the full parity in the normal build). */
    size_t max_bars = argc > 3 && !strcmp(argv[2], "--bars") ? strtoul(argv[3], NULL, 10) : 0;
    char dir[] = "/tmp/tw_strategy_parity_XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char cmd[4096], f0[256], f1[256];
    snprintf(f0, sizeof(f0), "%s/study.f64", dir);
    snprintf(f1, sizeof(f1), "%s/gapped.f64", dir);
    snprintf(cmd, sizeof(cmd),
             "PYTHONPATH=%s/python /usr/bin/python3 -c \"from tickwire import data; "
             "data.study().astype('<f8').tofile('%s'); "
             "data.with_nan_gaps(data.study(seed=43)).astype('<f8').tofile('%s')\"",
             src, f0, f1);
    if (run(cmd) != 0) {
        printf("SKIP: /usr/bin/python3 with numpy could not build the datasets\n");
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        if (system(cmd) != 0)
            perror("rm");
        return 77;
    }
    double *close[2] = { NULL, NULL };
    size_t n[2] = { 0, 0 };
    tw_error err = { 0 };
    CHECKF(tw_read_raw(f0, &close[0], &n[0], &err) == 0, "%s", err.msg);
    CHECKF(tw_read_raw(f1, &close[1], &n[1], &err) == 0, "%s", err.msg);
    if (!close[0] || !close[1])
        return tw_check_done("strategy_parity");
    CHECK(n[0] == 150000 && n[1] == 150000);
    size_t gaps = 0;
    for (size_t i = 0; i < (max_bars && max_bars < n[1] ? max_bars : n[1]); i++)
        gaps += isnan(close[1][i]);
    CHECK(gaps > 100 && isnan(close[1][0]));

    int64_t grid[TW_GRID_DEFAULT_COMBOS * 6], combos[N_COMBOS * 6];
    tw_grid_default(grid);
    static const int gk[4] = { 0, 13, 40, 79 };
    for (int j = 0; j < 4; j++)
        memcpy(combos + j * 6, grid + gk[j] * 6, sizeof(int64_t) * 6);
    memcpy(combos + 4 * 6, odd, sizeof(odd));

    st_cfg c;
    st_cfg_make(&c, 2, 2, combos, N_COMBOS);
    st_harness h;
    MUST(st_open(&h, &c.cfg) == 0);
    const size_t nb = max_bars && max_bars < n[0] ? max_bars : n[0];
    tw_out *mine = malloc(h.cap * sizeof(tw_out));
    double last_px[2] = { NAN, NAN };
    uint64_t acks = 0, orders = 0, late_acks = 0;
    for (size_t i = 0; i < nb; i++) {
        h.now_ns = (int64_t)(i + 1) * 1000000;
        for (uint32_t k = 0; k < 2; k++) {
            size_t m = st_take(&h, st_bar(&h, k, (uint16_t)k, i, close[k][i]), mine);
            if (!isnan(close[k][i]))
                last_px[k] = close[k][i];
            for (size_t j = 0; j < m; j++) {
                CHECK(mine[j].type == TW_OUT_ORDER && mine[j].session == k);
                CHECK(mine[j].order_id == tw_order_id(TW_ORDER_SIGNAL, mine[j].instance, i));
                CHECK(mine[j].ref == i && mine[j].tsc_rx == 1000 + i && mine[j].tsc_decision == 0);
                CHECK(mine[j].qty == 1 || mine[j].qty == 2);
            }
            orders += m;
            /* The TestRequest bar-<i> behind the bar: its ack comes out
             * alone, after the orders the bar caused. */
            size_t a = st_simple(&h, TW_EV_BARRIER, (uint16_t)k, i);
            if (a != 1 || h.out[0].type != TW_OUT_BARRIER_ACK || h.out[0].ref != i ||
                h.out[0].session != k)
                late_acks++;
            acks += a;
            /* The venue fills what arrived before the ack, at bar i's close. */
            st_fill_orders(&h, mine, m, last_px);
        }
    }
    CHECK(acks == 2 * nb && late_acks == 0);

    tw_strategy_counters ct;
    tw_strategy_counters_get(h.s, &ct);
    CHECK(ct.bad_events == 0 && ct.fills == orders && ct.rejects == 0 && ct.dup_bars == 0);
    CHECK(ct.bars == 2 * nb && ct.gap_bars == gaps && ct.barriers == 2 * nb);
    for (int r = 0; r < TW_RULE_COUNT; r++)
        CHECK(ct.rejected_by_rule[r] == 0);

    /* The sweep, both kernels, and the reference trade lists. */
    double pnl[2][2][N_COMBOS];
    int64_t trades[2][2][N_COMBOS];
    st_ref ref[2][N_COMBOS];
    for (int kern = 0; kern < 2; kern++)
        for (int k = 0; k < 2; k++) {
            tw_sweep_opts o;
            tw_sweep_opts_init(&o);
            o.kernel = (tw_kernel_kind)kern;
            o.threads = 1;
            CHECKF(tw_sweep(close[k], nb, combos, N_COMBOS, &o, pnl[kern][k], trades[kern][k],
                            &err) == 0, "%s", err.msg);
        }
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < N_COMBOS; j++)
            st_reference(close[k], nb, combos + j * 6, TW_FEE_DEFAULT, &ref[k][j]);
    /* The kernel's own trade log (tw_trades) must be that reference too. */
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < N_COMBOS; j++) {
            const st_ref *rf = &ref[k][j];
            tw_trade *kt = malloc((rf->n + 1) * sizeof(*kt));
            size_t nt = 0;
            tw_position open;
            double kp = 0.0;
            int64_t ktr = 0;
            CHECKF(tw_trades(close[k], nb, combos + j * 6, TW_FEE_DEFAULT, kt, rf->n + 1, &nt,
                             &open, &kp, &ktr, &err) == 0, "%s", err.msg);
            size_t bad_rows = 0;
            for (size_t t = 0; t < nt && t < rf->n; t++) {
                const tw_strategy_trade *w = &rf->list[t];
                bad_rows += kt[t].side != w->side || kt[t].entry_bar != (int64_t)w->entry_bar ||
                            kt[t].exit_bar != (int64_t)w->exit_bar ||
                            !st_same(kt[t].entry_price, w->entry_px) ||
                            !st_same(kt[t].exit_price, w->exit_px) || !st_same(kt[t].r, w->r);
            }
            CHECKF(nt == rf->n && bad_rows == 0 && ktr == rf->trades && st_same(kp, rf->pnl) &&
                       open.side == rf->pos,
                   "instrument %d combo %d: tw_trades differs from the reference (%zu rows)", k,
                   j, bad_rows);
            free(kt);
        }

    /* The trade hook's list, split per instance (in booking order). */
    size_t per[2 * N_COMBOS] = { 0 };
    uint64_t total_trades = 0, mismatched = 0;
    for (size_t t = 0; t < h.n_trades; t++) {
        const tw_strategy_trade *tr = &h.trades[t];
        uint32_t k = tr->instance / N_COMBOS, j = tr->instance % N_COMBOS;
        size_t q = per[tr->instance]++;
        const st_ref *rf = &ref[k][j];
        if (q >= rf->n) {
            mismatched++;
            continue;
        }
        const tw_strategy_trade *w = &rf->list[q];
        if (tr->side != w->side || tr->entry_bar != w->entry_bar ||
            !st_same(tr->entry_px, w->entry_px) || tr->exit_bar != w->exit_bar ||
            !st_same(tr->exit_px, w->exit_px) || !st_same(tr->r, w->r)) {
            if (mismatched++ < 5)
                fprintf(stderr, "instance %u trade %zu: side %d/%d entry %llu/%llu exit %llu/%llu "
                        "r %.17g/%.17g\n", tr->instance, q, tr->side, w->side,
                        (unsigned long long)tr->entry_bar, (unsigned long long)w->entry_bar,
                        (unsigned long long)tr->exit_bar, (unsigned long long)w->exit_bar, tr->r,
                        w->r);
        }
    }
    CHECKF(mismatched == 0, "%llu trades differ from the reference", (unsigned long long)mismatched);
    for (uint32_t i = 0; i < 2 * N_COMBOS; i++) {
        const uint32_t k = i / N_COMBOS, j = i % N_COMBOS;
        tw_instance_stats st;
        tw_strategy_instance(h.s, i, &st);
        const st_ref *rf = &ref[k][j];
        CHECKF(per[i] == rf->n, "instance %u: %zu trades in the log, reference %zu", i, per[i], rf->n);
        CHECKF(st.trades == trades[1][k][j] && st.trades == trades[0][k][j] &&
                   st.trades == rf->trades,
               "instance %u: trades %lld, sweep %lld", i, (long long)st.trades,
               (long long)trades[1][k][j]);
        CHECKF(st_same(st.pnl, pnl[1][k][j]) && st_same(st.pnl, pnl[0][k][j]) &&
                   st_same(st.pnl, rf->pnl),
               "instance %u: pnl %.17g, sweep %.17g", i, st.pnl, pnl[1][k][j]);
        CHECKF(st.signal_trades == trades[1][k][j] && st_same(st.signal_pnl, pnl[1][k][j]),
               "instance %u: signal %lld %.17g", i, (long long)st.signal_trades, st.signal_pnl);
        CHECK(st.position == rf->pos && st.signal == rf->pos && st.open_qty == 0);
        CHECK(st.orders == st.fills && st.rejects == 0 && st.risk_rejects == 0);
        /* One order to enter, one per flip. */
        CHECK(st.orders == (uint64_t)(st.trades + (rf->pos != 0)));
        total_trades += (uint64_t)st.trades;
        if (i == 0)
            printf("  grid combo 0 on the study data: %lld trades, pnl %.15g (sweep %.15g)\n",
                   (long long)st.trades, st.pnl, pnl[1][0][0]);
    }
    CHECK(total_trades == h.n_trades && total_trades > 10000);
    printf("  %u instances, %zu bars x 2, %llu orders, %llu trades: bit-identical to the sweep\n",
           2 * N_COMBOS, nb, (unsigned long long)orders, (unsigned long long)total_trades);

    /* ---- the report and the trades CSV, read back by python ---------------- */
    char rpt[256], csv[256], chk[256], out[256];
    snprintf(rpt, sizeof(rpt), "%s/report.json", dir);
    snprintf(csv, sizeof(csv), "%s/trades.csv", dir);
    snprintf(chk, sizeof(chk), "%s/check.py", dir);
    snprintf(out, sizeof(out), "%s/check.out", dir);
    tw_trade_session_stats ss[2] = { { "venue0", 10, 20, 3, 1, 0 }, { "venue\"1", 5, 6, 0, 0, 2 } };
    CHECKF(tw_trade_report_write(rpt, h.s, ss, 2, &err) == 0, "%s", err.msg);
    FILE *f = fopen(csv, "w");
    MUST(f);
    CHECK(tw_trade_csv_header(f) == 0);
    for (size_t t = 0; t < h.n_trades; t++)
        CHECK(tw_trade_csv_row(f, h.s, &h.trades[t]) == 0);
    CHECK(fclose(f) == 0);
    f = fopen(chk, "w");
    MUST(f);
    fputs("import csv, json, sys\n"
          "r = json.load(open(sys.argv[1]))\n"
          "o = open(sys.argv[3], 'w')\n"
          "assert set(r) >= {'instances', 'sessions', 'risk'}\n"
          "for x in r['instances']:\n"
          "    assert isinstance(x['pnl'], float) and isinstance(x['signal_pnl'], float)\n"
          "    assert len(x['combo']) == 6 and all(isinstance(w, int) for w in x['combo'])\n"
          "    o.write('I %s %s %s %d %s %s %d %d %d %d\\n' % (x['name'], x['instrument'],\n"
          "        ','.join(map(str, x['combo'])), x['trades'], x['pnl'].hex(),\n"
          "        x['signal_pnl'].hex(), x['orders'], x['fills'], x['rejects'], x['position']))\n"
          "for x in r['sessions']:\n"
          "    o.write('S %s %d %d %d %d\\n' % (x['name'].replace('\"', 'Q'), x['sent'],\n"
          "        x['received'], x['resends'], x['reconnects']))\n"
          "k = r['risk']\n"
          "o.write('R %s %d %d\\n' % (k['state'], len(k['rejected_by_rule']),\n"
          "    sum(k['rejected_by_rule'].values())))\n"
          "o.write('T %s\\n' % r['totals']['pnl'].hex())\n"
          "rows = list(csv.DictReader(open(sys.argv[2])))\n"
          "o.write('N %d\\n' % len(rows))\n"
          "for x in rows:\n"
          "    o.write('C %s %s %s %s %s %s %s\\n' % (x['instance'], x['side'], x['entry_bar'],\n"
          "        float(x['entry_price']).hex(), x['exit_bar'], float(x['exit_price']).hex(),\n"
          "        float(x['r']).hex()))\n",
          f);
    CHECK(fclose(f) == 0);
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s %s %s", chk, rpt, csv, out);
    CHECK(run(cmd) == 0);
    f = fopen(out, "r");
    MUST(f);
    char line[1024];
    uint32_t inst_lines = 0, sess_lines = 0;
    size_t rows = 0, row_bad = 0, nrows = 0;
    double total = 0.0;
    for (uint32_t i = 0; i < 2 * N_COMBOS; i++) {
        tw_instance_stats st;
        tw_strategy_instance(h.s, i, &st);
        total = total + st.pnl;
    }
    while (fgets(line, sizeof(line), f)) {
        char name[64], sym[64], combo[128], a[64], b[64], c6[64];
        long long t, o1, q1, r1, p1;
        if (line[0] == 'I' && sscanf(line, "I %63s %63s %127s %lld %63s %63s %lld %lld %lld %lld",
                                     name, sym, combo, &t, a, b, &o1, &q1, &r1, &p1) == 10) {
            uint32_t i = inst_lines++;
            tw_instance_stats st;
            tw_strategy_instance(h.s, i, &st);
            char want[128];
            snprintf(want, sizeof(want), "%lld,%lld,%lld,%lld,%lld,%lld", (long long)st.combo[0],
                     (long long)st.combo[1], (long long)st.combo[2], (long long)st.combo[3],
                     (long long)st.combo[4], (long long)st.combo[5]);
            CHECKF(!strcmp(name, st.name) && !strcmp(sym, tw_strategy_symbol(h.s, st.instrument)) &&
                       !strcmp(combo, want),
                   "%s", line);
            CHECKF(t == st.trades && st_same(strtod(a, NULL), st.pnl) &&
                       st_same(strtod(b, NULL), st.signal_pnl),
                   "%s", line);
            CHECKF(o1 == (long long)st.orders && q1 == (long long)st.fills &&
                       r1 == (long long)st.rejects && p1 == st.position,
                   "%s", line);
        } else if (line[0] == 'S' &&
                   sscanf(line, "S %63s %lld %lld %lld %lld", name, &o1, &q1, &r1, &p1) == 5) {
            const tw_trade_session_stats *w = &ss[sess_lines++];
            CHECKF(o1 == (long long)w->sent && q1 == (long long)w->received &&
                       r1 == (long long)w->resends && p1 == (long long)w->reconnects,
                   "%s", line);
            CHECK(!strcmp(name, sess_lines == 1 ? "venue0" : "venueQ1"));
        } else if (line[0] == 'R') {
            CHECKF(!strncmp(line, "R ACTIVE 7 0", 12), "%s", line);
        } else if (line[0] == 'T' && sscanf(line, "T %63s", a) == 1) {
            CHECKF(st_same(strtod(a, NULL), total), "%s", line);
        } else if (line[0] == 'N' && sscanf(line, "N %zu", &nrows) == 1) {
            CHECK(nrows == h.n_trades);
        } else if (line[0] == 'C' &&
                   sscanf(line, "C %63s %lld %lld %63s %lld %63s %63s", name, &t, &o1, a, &q1, b,
                          c6) == 7) {
            const tw_strategy_trade *tr = rows < h.n_trades ? &h.trades[rows] : NULL;
            rows++;
            tw_instance_stats st;
            if (!tr) {
                row_bad++;
                continue;
            }
            tw_strategy_instance(h.s, tr->instance, &st);
            if (strcmp(name, st.name) || t != tr->side || o1 != (long long)tr->entry_bar ||
                !st_same(strtod(a, NULL), tr->entry_px) || q1 != (long long)tr->exit_bar ||
                !st_same(strtod(b, NULL), tr->exit_px) || !st_same(strtod(c6, NULL), tr->r))
                row_bad++;
        } else {
            CHECKF(0, "unexpected line from python: %s", line);
        }
    }
    fclose(f);
    CHECK(inst_lines == 2 * N_COMBOS && sess_lines == 2 && rows == h.n_trades && row_bad == 0);
    printf("  report and %zu CSV rows read back by python: every number bit for bit\n", rows);

    for (int k = 0; k < 2; k++)
        for (int j = 0; j < N_COMBOS; j++)
            free(ref[k][j].list);
    free(mine);
    st_close(&h);
    st_cfg_free(&c);
    free(close[0]);
    free(close[1]);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return tw_check_done("strategy_parity");
}
