/* Lockstep parity over this project's userspace stack on the simulated
 * network, both ends in this process: the venue (the exchange library on
 * its own stack, tw_xchg_net) and the engine (trade_engine.h, manual_net:
 * its net core turned on this thread, its strategy core a thread of its
 * own, the rings between them real).  The study dataset and a NaN-gapped
 * one as two instruments on one session, 8 combos each (default-grid ones
 * and odd windows up to 400).  Per instance, bit for bit against the
 * kernel's trade log (tw_trades(), what `tickwire sweep --trades` prints):
 * the trade list (side, entry bar and price, exit bar and price, r, read
 * back from the engine's trades CSV), the trade count, the execution PnL,
 * the signal PnL, the open position; the venue's fills equal the report's.
 *
 *   trade_sim_test SOURCE_DIR [--bars N] [--fault KIND:ARG] [--seed S] [--lossy]
 *                  [--procs [--kills K]] [--strategy thread|inline]
 * --lossy gives the links delay, loss, duplication and reordering from the
 * seed (the stack's retransmissions must not change a bit).  --procs runs
 * the engine in [engine] mode = processes: the strategy is a child process
 * (this program again, `trade_sim strategy SOCK INI`) over the attach
 * segment, killed -9 K times at seeded bars of the venue's progress and
 * restarted by the engine; parity as above, the session never logged on
 * twice, every restart seen.
 * --strategy inline: [engine] strategy = inline, the strategy's poll on
 * the net core turned on this thread (one thread for both ends and the
 * strategy).
 * Skips (77) without /usr/bin/python3 and numpy (they build the datasets). */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/simvenue.h"
#include "tickwire/clock.h"
#include "tickwire/decimal.h"
#include "tickwire/exchange.h"
#include "tickwire/kernel.h"
#include "tickwire/net.h"
#include "tickwire/net_sim.h"
#include "tickwire/trade_engine.h"
#include "tw_check.h"

#define N_COMBOS 8
#define MAX_TRADES (1u << 19) /* closed trades of all instances: 150,000 bars give ~265,000 */

static const int64_t odd[4][6] = {
    {397, 400, 19, 45, 67, 133}, {1, 1, 1, 1, 1, 1}, {7, 13, 3, 5, 9, 11}, {101, 203, 17, 33, 51, 399},
};

static tw_port *g_trader_port;

static int open_port(void *ctx, uint32_t session, const char *spec, tw_port **port, tw_error *err)
{
    (void)ctx;
    (void)session;
    if (strcmp(spec, "sim") != 0)
        return tw__err(err, -EINVAL, "this test opens only the sim port");
    *port = g_trader_port;
    return 0;
}

static int64_t now_ns(void) { return tw_tsc_to_ns(tw_tsc_default(), tw_tsc_read()); }

static uint64_t bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
}

static double dec(const char *s)
{
    double x = NAN;
    if (tw_decimal_to_double(s, strlen(s), &x) != 0)
        return NAN;
    return x;
}

/* One trade row of the engine's CSV. */
typedef struct row {
    char instance[32];
    int side;
    int64_t entry_bar, exit_bar;
    double entry_px, exit_px, r;
} row;

static size_t read_trades(const char *path, row *rows, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[512];
    size_t n = 0;
    if (!fgets(line, sizeof(line), f)) {
        fclose(f);
        return 0;
    }
    while (n < cap && fgets(line, sizeof(line), f)) {
        char *fld[8];
        int k = 0;
        for (char *p = strtok(line, ",\n"); p && k < 8; p = strtok(NULL, ",\n"))
            fld[k++] = p;
        if (k != 8)
            continue;
        row *r = &rows[n++];
        snprintf(r->instance, sizeof(r->instance), "%s", fld[0]);
        r->side = atoi(fld[2]);
        r->entry_bar = atoll(fld[3]);
        r->entry_px = dec(fld[4]);
        r->exit_bar = atoll(fld[5]);
        r->exit_px = dec(fld[6]);
        r->r = dec(fld[7]);
    }
    fclose(f);
    return n;
}

typedef struct fills_ctx {
    uint64_t n;
} fills_ctx;

static void on_fill(void *ctx, const tw_xchg_fill *f)
{
    (void)f;
    ((fills_ctx *)ctx)->n++;
}

/* The child of --procs: the strategy process. */
/* --kernels: a generic kernel's trade log (tw_ksweep of one combo). */
typedef struct klog {
    tw_trade *t;
    size_t n, cap;
} klog;

static void klog_fn(void *ctx, const tw_trade *t)
{
    klog *l = ctx;
    if (l->n < l->cap)
        l->t[l->n] = *t;
    l->n++;
}

/* The sweep's books of one instance: hma_sar by combo (tw_trades) or its
 * kernel's (tw_ksweep). */
static int reference(const tw_instance_stats *is, const double *close, size_t n, tw_trade *ref,
                     size_t *nt, tw_position *open, double *pnl, int64_t *ntr, tw_error *err)
{
    if (!is->params)
        return tw_trades(close, n, is->combo, 0.09, ref, MAX_TRADES, nt, open, pnl, ntr, err);
    tw_ksweep_opts o;
    tw_ksweep_opts_init(&o);
    o.threads = 1;
    o.fee = 0.09;
    tw_kresult kr;
    klog l = { ref, 0, MAX_TRADES };
    int rc = tw_ksweep(is->kernel, close, n, is->params, 1, &o, &kr, klog_fn, &l, err);
    if (rc != 0)
        return rc;
    if (l.n > l.cap)
        return tw__err(err, -ENOSPC, "%s: more than %u trades", is->name, MAX_TRADES);
    *nt = l.n;
    *open = kr.open;
    *pnl = kr.pnl;
    *ntr = kr.trades;
    return 0;
}

static int strategy_child(const char *sock, const char *ini)
{
    tw_trade_config *cfg = NULL;
    tw_error err = {0};
    if (tw_trade_config_load(ini, &cfg, &err) != 0) {
        fprintf(stderr, "strategy: %s\n", err.msg);
        return 2;
    }
    int rc = tw_trade_strategy_attach(cfg, sock, 0, &err);
    if (rc != 0)
        fprintf(stderr, "strategy: %s\n", err.msg);
    tw_trade_config_free(cfg);
    return rc == 0 ? 0 : 3;
}

/* The last strategy process the engine's log says attached (0: none). */
static pid_t attached_pid(const char *log)
{
    FILE *f = fopen(log, "r");
    if (!f)
        return 0;
    char line[1024];
    pid_t pid = 0;
    while (fgets(line, sizeof(line), f)) {
        int v;
        /* (sscanf counts the %d even when the words after it differ.) */
        if (strstr(line, " attached (generation ") &&
            sscanf(line, "tickwire trade: gateway: strategy process %d attached", &v) == 1)
            pid = v;
    }
    fclose(f);
    return pid;
}

static int count_lines(const char *log, const char *what)
{
    FILE *f = fopen(log, "r");
    if (!f)
        return 0;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof(line), f))
        n += strstr(line, what) != NULL;
    fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "strategy"))
        return strategy_child(argv[2], argv[3]);
    const char *src = argc > 1 ? argv[1] : ".";
    int procs = 0, kills = 0, kernels = 0;
    size_t bars = 150000;
    uint64_t seed = 1;
    int lossy = 0;
    const char *strategy = "thread";
    tw_xchg_fault fault;
    int n_faults = 0;
    tw_error err = {0};
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--bars") && i + 1 < argc)
            bars = (size_t)atoll(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = (uint64_t)atoll(argv[++i]);
        else if (!strcmp(argv[i], "--lossy"))
            lossy = 1;
        else if (!strcmp(argv[i], "--kernels"))
            kernels = 1; /* zscore instances next to hma_sar's */
        else if (!strcmp(argv[i], "--procs"))
            procs = 1;
        else if (!strcmp(argv[i], "--kills") && i + 1 < argc)
            kills = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--strategy") && i + 1 < argc)
            strategy = argv[++i];
        else if (!strcmp(argv[i], "--fault") && i + 1 < argc) {
            if (tw_xchg_fault_parse(argv[++i], &fault, &err) != 0) {
                fprintf(stderr, "%s\n", err.msg);
                return 2;
            }
            n_faults = 1;
        }
    }
#if defined(TW_TEST_TSAN) || defined(TW_TEST_ASAN)
    if (bars > 20000)
        bars = 20000; /* the sanitizers' slowdown; the same path */
#endif
    char dir[] = "/tmp/tw_trade_sim_XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char cmd[4096], f0[300], f1[300];
    snprintf(f0, sizeof(f0), "%s/study.f64", dir);
    snprintf(f1, sizeof(f1), "%s/gapped.f64", dir);
    snprintf(cmd, sizeof(cmd),
             "PYTHONPATH=%s/python /usr/bin/python3 -c \"from tickwire import data; "
             "data.study()[:%zu].astype('<f8').tofile('%s'); "
             "data.with_nan_gaps(data.study(seed=43))[:%zu].astype('<f8').tofile('%s')\"",
             src, bars, f0, bars, f1);
    if (system(cmd) != 0) {
        printf("SKIP: /usr/bin/python3 with numpy could not build the datasets\n");
        return 77;
    }
    double *close[2] = {NULL, NULL};
    size_t n[2] = {0, 0};
    if (tw_read_raw(f0, &close[0], &n[0], &err) != 0 || tw_read_raw(f1, &close[1], &n[1], &err) != 0) {
        fprintf(stderr, "FAIL: %s\n", err.msg);
        return 1;
    }
    CHECK(n[0] == bars && n[1] == bars);

    int64_t grid[TW_GRID_DEFAULT_COMBOS * 6], combos[N_COMBOS * 6];
    tw_grid_default(grid);
    static const int gk[4] = {0, 13, 40, 79};
    for (int j = 0; j < 4; j++)
        memcpy(combos + j * 6, grid + gk[j] * 6, sizeof(int64_t) * 6);
    memcpy(combos + 4 * 6, odd, sizeof(odd));

    /* The network (perfect links, or lossy ones) and the venue on it. */
    tw_sim_link_config link;
    memset(&link, 0, sizeof(link));
    if (lossy) {
        link.delay_min_ns = 20000 + seed % 50000;
        link.delay_mean_ns = 20000;
        link.loss_ppm = 5000;
        link.dup_ppm = 2000;
        link.reorder_ppm = 10000;
        link.reorder_extra_ns = 200000;
    }
    tw_xchg_symbol syms[2] = {{"AAA", close[0], n[0]}, {"BBB", close[1], n[1]}};
    fills_ctx fc = {0};
    tw_xchg_cfg xc;
    tw_xchg_cfg_init(&xc);
    xc.symbols = syms;
    xc.n_symbols = 2;
    xc.lockstep = 1;
    xc.max_orders = 10000000;
    xc.epoch_offset_ns = tw_tsc_default()->epoch_offset_ns;
    xc.faults = n_faults ? &fault : NULL;
    xc.n_faults = (unsigned)n_faults;
    xc.run_id = 7;
    xc.on_fill = on_fill;
    xc.ctx = &fc;
    char vstore[400];
    snprintf(vstore, sizeof(vstore), "%s/venue", dir);
    snprintf(cmd, sizeof(cmd), "mkdir -p %s", vstore);
    if (system(cmd) != 0)
        return 1;
    xc.store_dir = vstore;
    tw__simvenue sv;
    if (tw__simvenue_open(&sv, &xc, &link, seed, &err) != 0) {
        fprintf(stderr, "FAIL: venue: %s\n", err.msg);
        return 1;
    }
    g_trader_port = sv.tport;
    tw_xchg *x = sv.x;
    /* The engine's configuration. */
    char ini[8192], report[400], trades[400];
    snprintf(report, sizeof(report), "%s/report.json", dir);
    snprintf(trades, sizeof(trades), "%s/trades.csv", dir);
    int k = snprintf(ini, sizeof(ini),
                     "[engine]\nreport = %s\ntrades = %s\nfee = 0.09\nlog = %s/trade.log\n%s"
                     "strategy = %s\nbusy_poll = no\n"
                     "[session venue]\nhost = " TW__SIMVENUE_IP_TEXT "\nport = 9878\n"
                     "sender = TRADER\ntarget = VENUE\nstore = %s/store/venue\nstack = sim\n"
                     "ip = " TW__SIMVENUE_TRADER_IP_TEXT "/24\n"
                     "reconnect_min_ms = 20\nreconnect_max_ms = 200\n"
                     "[instrument AAA]\nsession = venue\n[instrument BBB]\nsession = venue\n",
                     report, trades, dir, procs ? "mode = processes\n" : "", strategy, dir);
    for (int s = 0; s < 2; s++) {
        k += snprintf(ini + k, sizeof(ini) - (size_t)k, "[strategy %s]\ninstrument = %s\n",
                      s ? "b" : "a", s ? "BBB" : "AAA");
        for (int c = 0; c < N_COMBOS; c++) {
            const int64_t *w = combos + c * 6;
            k += snprintf(ini + k, sizeof(ini) - (size_t)k, "combo = %lld,%lld,%lld,%lld,%lld,%lld\n",
                          (long long)w[0], (long long)w[1], (long long)w[2], (long long)w[3],
                          (long long)w[4], (long long)w[5]);
        }
    }
    for (int s = 0; s < 2 && kernels; s++)
        k += snprintf(ini + k, sizeof(ini) - (size_t)k,
                      "[strategy z%s]\ninstrument = %s\nkernel = zscore\n"
                      "params = window=20,entry=2,exit=0.5\nparams = window=50,entry=1.5,exit=0\n"
                      "params = window=7,entry=1.25,exit=0.75\n",
                      s ? "b" : "a", s ? "BBB" : "AAA");
    k += snprintf(ini + k, sizeof(ini) - (size_t)k,
                  "[risk]\nmax_position = 1000000\nmax_total_position = 100000000\n"
                  "max_orders_per_s = 1000000000\nmax_loss = 1e300\n");
    tw_trade_config *cfg = NULL;
    if (tw_trade_config_parse(ini, (size_t)k, "sim.ini", &cfg, &err) != 0) {
        fprintf(stderr, "FAIL: config: %s\n", err.msg);
        return 1;
    }
    tw_trade_engine_opts eo = {.open_port = open_port, .manual_net = 1, .run_id = 0x5157};
    char ini_path[400], sock[108], log_path[400];
    char *sargv[] = {"/proc/self/exe", "strategy", sock, ini_path, NULL};
    snprintf(log_path, sizeof(log_path), "%s/trade.log", dir);
    if (procs) {
        /* The child reads the same configuration from a file. */
        snprintf(ini_path, sizeof(ini_path), "%s/sim.ini", dir);
        FILE *f = fopen(ini_path, "w");
        if (!f || fwrite(ini, 1, (size_t)k, f) != (size_t)k || fclose(f) != 0) {
            fprintf(stderr, "FAIL: %s\n", ini_path);
            return 1;
        }
        tw_trade_engine_attach_sock(cfg, sock);
        eo.strategy_argv = sargv;
    }
    /* --kills: the strategy process killed at seeded bars of the venue's
     * progress (points of progress, not of time). */
    uint64_t marks[64];
    int n_marks = kills < 64 ? kills : 64, next_mark = 0, killed_n = 0;
    pid_t killed_pid[64];
    for (int i = 0; i < n_marks; i++) {
        uint64_t span = bars * 8 / 10 / (uint64_t)n_marks;
        uint64_t h = (seed + (uint64_t)i) * 0x9e3779b97f4a7c15ull;
        marks[i] = bars / 20 + (uint64_t)i * span + (h >> 33) % (span ? span : 1);
    }
    tw_trade_engine *e = NULL;
    if (tw_trade_engine_create(&e, cfg, &eo, &err) != 0 || tw_trade_engine_start(e, &err) != 0) {
        fprintf(stderr, "FAIL: engine: %s\n", err.msg);
        return 1;
    }
    /* Both ends on this thread; the strategy core on its own. */
    int64_t t0 = now_ns();
    int done = 0;
    uint64_t turns = 0;
    while (!(done && tw_xchg_done(x))) {
        int64_t t = now_ns();
        if (t - t0 > 1200ll * 1000000000) {
            fprintf(stderr, "FAIL: the run did not end in 20 minutes\n");
            break;
        }
        unsigned work = tw__simvenue_turn(&sv, t);
        work += tw_trade_engine_poll(e);
        if (!done) {
            int rc = tw_trade_engine_step(e, &err);
            if (rc < 0) {
                fprintf(stderr, "FAIL: report: %s\n", err.msg);
                done = 1;
            }
            done |= rc == 1;
        }
        if (next_mark < n_marks && tw_xchg_get_stats(x)->bars >= marks[next_mark] &&
            turns % 64 == 0) {
            pid_t pid = attached_pid(log_path);
            int fresh = pid > 0;
            for (int i = 0; i < killed_n; i++)
                fresh &= killed_pid[i] != pid;
            if (fresh) {
                kill(pid, SIGKILL);
                killed_pid[killed_n++] = pid;
                next_mark++;
            }
        }
        if (!work)
            sched_yield(); /* 2 cores: the strategy core needs one */
        turns++;
    }
    if (procs) {
        CHECKF(next_mark == n_marks, "%d of %d kills done (seed %llu)", next_mark, n_marks,
               (unsigned long long)seed);
        CHECK_EQ(count_lines(log_path, "gone (killed by signal 9)"), n_marks);
        CHECK_EQ(count_lines(log_path, "the strategy process's digest matches"), 1);
        CHECK_EQ(tw_xchg_get_stats(x)->logons, 1); /* the session stayed up */
    }
    double secs = (double)(now_ns() - t0) * 1e-9;
    const tw_xchg_stats *xs = tw_xchg_get_stats(x);
    CHECK_EQ(xs->bars, bars);
    CHECK(xs->barrier_acks >= bars);
    if (n_faults && fault.kind == TW_XCHG_FAULT_DISCONNECT)
        CHECK(xs->faults_disconnect == 1 && xs->logons >= 2);
    if (n_faults && fault.kind == TW_XCHG_FAULT_GAP)
        CHECK(xs->faults_gap == 1);

    /* Parity, per instance. */
    const tw_strategy *st = tw_trade_engine_strategy(e);
    row *rows = malloc(MAX_TRADES * sizeof(row));
    size_t n_rows = read_trades(trades, rows, MAX_TRADES);
    tw_trade *ref = malloc(MAX_TRADES * sizeof(tw_trade));
    if (!rows || !ref) {
        fprintf(stderr, "FAIL: out of memory\n");
        return 1;
    }
    size_t at = 0, fills = 0;
    for (uint32_t i = 0; i < tw_strategy_n_instances(st); i++) {
        tw_instance_stats is;
        tw_strategy_instance(st, i, &is);
        uint32_t in = is.instrument;
        size_t nt = 0;
        tw_position open;
        double pnl;
        int64_t ntr;
        int rc = reference(&is, close[in], n[in], ref, &nt, &open, &pnl, &ntr, &err);
        if (rc != 0) {
            CHECKF(rc == 0, "reference: %s", err.msg);
            break;
        }
        CHECKF(is.trades == ntr, "%s: trades %lld, sweep %lld", is.name, (long long)is.trades,
               (long long)ntr);
        CHECKF(bits(is.pnl) == bits(pnl), "%s: pnl %.17g, sweep %.17g", is.name, is.pnl, pnl);
        CHECKF(bits(is.signal_pnl) == bits(pnl), "%s: signal pnl %.17g, sweep %.17g", is.name,
               is.signal_pnl, pnl);
        CHECKF(is.position == open.side, "%s: position %lld, sweep %d", is.name,
               (long long)is.position, open.side);
        fills += is.fills;
        /* Its rows in the CSV, in order. */
        size_t j = 0, bad = 0;
        for (size_t r = 0; r < n_rows; r++) {
            if (strcmp(rows[r].instance, is.name) != 0)
                continue;
            if (j < nt) {
                const tw_trade *t = &ref[j];
                const row *w = &rows[r];
                bad += !(w->side == t->side && w->entry_bar == t->entry_bar &&
                         w->exit_bar == t->exit_bar && bits(w->entry_px) == bits(t->entry_price) &&
                         bits(w->exit_px) == bits(t->exit_price) && bits(w->r) == bits(t->r));
            }
            j++;
        }
        CHECKF(j == nt && bad == 0, "%s: %zu trades in the CSV (sweep %zu), %zu differ", is.name,
               j, nt, bad);
        at += j;
    }
    CHECK(at == n_rows && n_rows > 1000);
    CHECK_EQ(fills, fc.n);
    tw_trade_gw_stats gs;
    tw_trade_engine_gw_stats(e, 0, &gs);
    CHECK_EQ(gs.fills, fc.n);
    CHECK_EQ(gs.late_fills, 0);
    CHECK_EQ(gs.intents_dropped, 0);
    printf("trade over the sim network%s%s%s%s: %zu + %zu bars, %u instances, %zu trades, %llu "
           "fills, bit-identical to the sweep; %.1f s, %.0f bars/s, %llu turns\n",
           procs ? " (strategy process, killed -9 and restarted: see kills)" : "",
           lossy ? " (lossy links)" : "", n_faults ? " with a fault " : "",
           n_faults ? argv[argc - 1] : "", n[0], n[1], tw_strategy_n_instances(st), n_rows,
           (unsigned long long)fc.n, secs, (double)bars / secs, (unsigned long long)turns);

    tw_trade_engine_destroy(e);
    tw_trade_config_free(cfg);
    tw__simvenue_close(&sv, now_ns());
    free(close[0]);
    free(close[1]);
    free(rows);
    free(ref);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (tw_check_failures == 0 && system(cmd) != 0)
        perror("rm");
    else if (tw_check_failures)
        fprintf(stderr, "files kept in %s\n", dir);
    if (procs)
        printf("processes mode: the strategy process killed -9 %d times at bars of the venue's "
               "progress (seed %llu), restarted each time\n", n_marks, (unsigned long long)seed);
    return tw_check_done("trade_sim");
}
