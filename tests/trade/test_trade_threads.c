/* The engine with all its threads (trade_engine.h: a net core per
 * session, the strategy core, the control loop on this thread) against
 * `tickwire exchange` over kernel TCP on loopback; run under TSan too
 * (label tsan): every cross-thread handoff of the engine (rings, doorbells,
 * the phase, the ending) on the real path.
 *
 *  1. Lockstep, two instruments on two sessions (two net cores), one with
 *     NaN gaps: per instance trades, execution and signal PnL and the open
 *     position bit for bit against the kernel's trade log (tw_trades).
 *  2. Paced, then a TERM request (what SIGTERM does) once fills flow: the
 *     run ends by itself, the report is written, and the strategy's fills
 *     equal the venue's fills log.
 *
 * With a second argument `inline`: [engine] strategy = inline (both
 * sessions and the strategy on one thread; the control loop on this one).
 *
 *   trade_threads_test TICKWIRE [thread|inline] */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tickwire/clock.h"
#include "tickwire/kernel.h"
#include "tickwire/trade_engine.h"
#include "tw_check.h"

#define NB 4000

static const char *tickwire;
static const char *strategy = "thread";
static char dir[] = "/tmp/tw_trade_threads_XXXXXX";
static double a[NB], b[NB];

/* Starts the venue; returns its pid and port (0 on failure). */
static pid_t venue_start(const char *extra, const char *tag, int *port)
{
    int fds[2];
    if (pipe(fds) != 0)
        return 0;
    pid_t p = fork();
    if (p == 0) {
        /* A test that dies (a sanitizer's abort) takes its venue along. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        dup2(fds[1], 1);
        close(fds[0]);
        char data[600], fills[300], store[300];
        snprintf(data, sizeof(data), "AAA=%s/a.f64,BBB=%s/b.f64", dir, dir);
        snprintf(fills, sizeof(fills), "%s/fills_%s.csv", dir, tag);
        snprintf(store, sizeof(store), "%s/vstore_%s", dir, tag);
        char *av[24] = {(char *)tickwire, (char *)"exchange", (char *)"--listen",
                        (char *)"127.0.0.1:0", (char *)"--data", data, (char *)"--fills", fills,
                        (char *)"--store", store, (char *)"--quiet", (char *)"--sessions",
                        (char *)"2"};
        int n = 13;
        char buf[200];
        snprintf(buf, sizeof(buf), "%s", extra);
        for (char *t = strtok(buf, " "); t && n < 22; t = strtok(NULL, " "))
            av[n++] = t;
        av[n] = NULL;
        execv(tickwire, av);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[256];
    *port = 0;
    while (f && fgets(line, sizeof(line), f)) {
        const char *q = strstr(line, "127.0.0.1:");
        if (q) {
            *port = atoi(q + 10);
            break;
        }
    }
    if (f)
        fclose(f);
    return p;
}

static int venue_wait(pid_t p)
{
    int st = 0;
    for (int t = 0; t < 600; t++) {
        if (waitpid(p, &st, WNOHANG) == p)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
        usleep(100000);
    }
    kill(p, SIGKILL);
    waitpid(p, &st, 0);
    return -1;
}

static long count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long n = 0;
    int c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static tw_trade_config *config(int port, const char *tag)
{
    char ini[4096];
    int k = snprintf(ini, sizeof(ini),
                     "[engine]\nreport = %s/report_%s.json\ntrades = %s/trades_%s.csv\n"
                     "log = %s/log_%s.txt\nstrategy = %s\nbusy_poll = no\n"
                     "[session s0]\nhost = 127.0.0.1\nport = %d\nsender = T0\ntarget = VENUE\n"
                     "store = %s/store_%s/s0\nreconnect_min_ms = 20\n"
                     "[session s1]\nhost = 127.0.0.1\nport = %d\nsender = T1\ntarget = VENUE\n"
                     "store = %s/store_%s/s1\nreconnect_min_ms = 20\n"
                     "[instrument AAA]\nsession = s0\n[instrument BBB]\nsession = s1\n"
                     "[strategy a]\ninstrument = AAA\ncombo = 3,6,2,1,2,3\ncombo = 7,13,3,5,9,11\n"
                     "combo = 1,1,1,1,1,1\n"
                     "[strategy b]\ninstrument = BBB\ncombo = 3,6,2,1,2,3\ncombo = 19,39,6,6,9,19\n"
                     "[risk]\nmax_position = 1000\nmax_total_position = 1000\n"
                     "max_orders_per_s = 1000000000\nmax_loss = 1e300\n",
                     dir, tag, dir, tag, dir, tag, strategy, port, dir, tag, port, dir, tag);
    tw_trade_config *c = NULL;
    tw_error err = {0};
    if (tw_trade_config_parse(ini, (size_t)k, tag, &c, &err) != 0) {
        fprintf(stderr, "config: %s\n", err.msg);
        return NULL;
    }
    return c;
}

static uint64_t bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
}

static void lockstep(void)
{
    int port;
    pid_t v = venue_start("--lockstep --max-orders 1000000", "ls", &port);
    REQUIRE(v > 0 && port > 0);
    tw_trade_config *cfg = config(port, "ls");
    REQUIRE(cfg);
    tw_trade_engine *e = NULL;
    tw_error err = {0};
    tw_trade_engine_opts o = {.run_id = 1};
    CHECKF(tw_trade_engine_create(&e, cfg, &o, &err) == 0, "%s", err.msg);
    if (!e) {
        kill(v, SIGKILL);
        return;
    }
    CHECKF(tw_trade_engine_run(e, &err) == 0, "%s", err.msg);
    CHECK_EQ(venue_wait(v), 0);
    const tw_strategy *s = tw_trade_engine_strategy(e);
    static tw_trade ref[NB];
    for (uint32_t i = 0; i < tw_strategy_n_instances(s); i++) {
        tw_instance_stats is;
        tw_strategy_instance(s, i, &is);
        size_t nt;
        tw_position open;
        double pnl;
        int64_t tr;
        REQUIRE(tw_trades(is.instrument ? b : a, NB, is.combo, 0.09, ref, NB, &nt, &open, &pnl, &tr,
                          &err) == 0);
        CHECKF(is.trades == tr && bits(is.pnl) == bits(pnl) && bits(is.signal_pnl) == bits(pnl) &&
                   is.position == open.side,
               "%s: trades %lld/%lld pnl %.17g/%.17g signal %.17g position %lld/%d", is.name,
               (long long)is.trades, (long long)tr, is.pnl, pnl, is.signal_pnl,
               (long long)is.position, open.side);
    }
    for (uint32_t k = 0; k < 2; k++) {
        tw_trade_gw_stats gs;
        tw_trade_engine_gw_stats(e, k, &gs);
        CHECK_EQ(gs.barrier_acks, NB);
        CHECK(gs.bars == NB && gs.latency_samples > 0);
        CHECK_EQ(gs.intents_dropped, 0); /* every order of a run to its end went out */
        const tw_trade_latency *l;
        size_t n = tw_trade_engine_latency(e, k, &l);
        CHECK(n > 0);
        for (size_t j = 0; j < n; j++)
            CHECK(l[j].tsc_rx <= l[j].tsc_parse && l[j].tsc_parse <= l[j].tsc_decision &&
                  l[j].tsc_decision <= l[j].tsc_build && (!l[j].tsc_tx || l[j].tsc_build <= l[j].tsc_tx));
    }
    tw_trade_engine_destroy(e);
    tw_trade_config_free(cfg);
}

static void term(void)
{
    int port;
    pid_t v = venue_start("--rate 400", "term", &port);
    REQUIRE(v > 0 && port > 0);
    tw_trade_config *cfg = config(port, "term");
    REQUIRE(cfg);
    tw_trade_engine *e = NULL;
    tw_error err = {0};
    tw_trade_engine_opts o = {.run_id = 2};
    if (tw_trade_engine_create(&e, cfg, &o, &err) != 0 || tw_trade_engine_start(e, &err) != 0) {
        CHECKF(0, "%s", err.msg);
        kill(v, SIGKILL);
        return;
    }
    char fills[300];
    snprintf(fills, sizeof(fills), "%s/fills_term.csv", dir);
    int rc = 0, asked = 0;
    for (int t = 0; t < 60000 && rc == 0; t++) {
        if (!asked && count_lines(fills) > 20) {
            tw_trade_engine_request(e, TW_TRADE_REQ_TERM);
            asked = 1;
        }
        rc = tw_trade_engine_step(e, &err);
        tw_clock_sleep_ns(2000000);
    }
    CHECK(asked && rc == 1);
    kill(v, SIGTERM);
    CHECK_EQ(venue_wait(v), 0);
    tw_strategy_counters c;
    tw_strategy_counters_get(tw_trade_engine_strategy(e), &c);
    CHECK_EQ((long)c.fills, count_lines(fills) - 1);
    char report[300];
    snprintf(report, sizeof(report), "%s/report_term.json", dir);
    CHECK(access(report, R_OK) == 0);
    tw_trade_engine_destroy(e);
    tw_trade_config_free(cfg);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: trade_threads_test TICKWIRE\n");
        return 2;
    }
    tickwire = argv[1];
    if (argc > 2)
        strategy = argv[2];
    signal(SIGPIPE, SIG_IGN);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    double p = 100, q = 50;
    for (int i = 0; i < NB; i++) {
        p *= 1 + ((i * 7919) % 17 - 8) / 997.0;
        q *= 1 + ((i * 104729) % 23 - 11) / 1999.0;
        a[i] = p;
        b[i] = (i < 6 || (i >= 400 && i < 440) || i % 97 == 0) ? NAN : q;
    }
    char path[300];
    tw_error err;
    snprintf(path, sizeof(path), "%s/a.f64", dir);
    int rc = tw_write_closes(path, a, NB, &err);
    snprintf(path, sizeof(path), "%s/b.f64", dir);
    rc |= tw_write_closes(path, b, NB, &err);
    if (rc) {
        fprintf(stderr, "FAIL: %s\n", err.msg);
        return 1;
    }
    lockstep();
    term();
    if (!tw_check_failures) {
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        if (system(cmd) != 0)
            perror("rm");
    } else {
        fprintf(stderr, "files in %s\n", dir);
    }
    return tw_check_done(strcmp(strategy, "inline") ? "trade_threads" : "trade_threads inline");
}
