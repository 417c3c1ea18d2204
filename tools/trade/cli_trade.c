/* tickwire trade: the live engine on the command line (trade_engine.h).
 * Reads and checks the configuration (a bad file: "FILE:LINE: what", exit
 * 2, before anything connects), builds the engine (ports from the
 * sessions' `stack =` specs through tools/common/portspec.h), runs it until
 * the venue closes every session or SIGTERM/SIGINT, writes the report, and
 * prints a summary.  SIGUSR1 is the kill switch. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cli_opt.h"
#include "tickwire/clock.h"
#include "tickwire/trade_engine.h"
#ifdef TW_TRADE_HAVE_PORTS
#include "common/portspec.h"
#include "tickwire/util.h"
#endif

int tw__cli_trade(int argc, char **argv);

static const char usage[] =
    "usage: tickwire trade --config FILE [--run-id N] [--reset-seqs] [--latency FILE]\n"
    "                      [--cancel-wait-ms MS] [--end-wait-ms MS] [--quiet] [--no-spawn]\n"
    "       tickwire trade --attach SOCK --config FILE [--quiet]\n"
    "\n"
    "The live engine (live.md): net cores (kernel TCP or the userspace stack, FIX\n"
    "4.4 sessions) feeding one strategy core over SPSC rings; orders back the same\n"
    "way.  Ends when the venue closes every session (TradingSessionStatus 340=3)\n"
    "or on SIGTERM (cancel open orders, log out); writes the JSON report.\n"
    "SIGUSR1: the kill switch (cancel, flatten, halt).\n"
    "\n"
    "  --config FILE       the INI file (docs/trade.md)\n"
    "  --run-id N          the run id in the ClOrdIDs (default: the start time in ms)\n"
    "  --reset-seqs        the first Logon resets sequence numbers (141=Y)\n"
    "  --latency FILE      CSV of the latency stamps (ns between stages) of every\n"
    "                      bar that caused an order\n"
    "  --cancel-wait-ms MS on SIGTERM, how long open orders get to be answered (1000)\n"
    "  --end-wait-ms MS    how long a Logout handshake may take (5000)\n"
    "  --quiet             no session lines on the log\n"
    "  --no-spawn          mode = processes: start no strategy process (attach one\n"
    "                      by hand with --attach; the gateway logs its socket)\n"
    "  --attach SOCK       be the strategy process of a gateway (mode = processes)\n"
    "                      listening at SOCK: replay its journal, then trade on;\n"
    "                      exits when the gateway ends the run or goes away\n";

static tw_trade_engine *g_engine;

static void on_signal(int sig)
{
    if (!g_engine)
        return;
    tw_trade_engine_request(g_engine, sig == SIGUSR1 ? TW_TRADE_REQ_KILL : TW_TRADE_REQ_TERM);
}

static int open_port(void *ctx, uint32_t session, const char *spec, tw_port **port, tw_error *err)
{
    (void)ctx;
    (void)session;
    if (!strcmp(spec, "sim"))
        return tw__err(err, -EINVAL, "stack = sim is the simulated network of in-process "
                       "tests; tickwire trade opens real ports (af_xdp:IF, af_packet:IF, dpdk:...)");
#ifdef TW_TRADE_HAVE_PORTS
    return tw__port_open_spec(port, spec, 4096, err);
#else
    (void)port;
    return tw__err(err, -ENOTSUP, "stack = %s: this build has no packet ports", spec);
#endif
}

static void close_port(void *ctx, uint32_t session, tw_port *port)
{
    (void)ctx;
    (void)session;
    tw_port_close(port);
}

static int write_latency(const char *path, const tw_trade_engine *e, const tw_trade_config *cfg)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "tickwire trade: %s: %s\n", path, strerror(errno));
        return -1;
    }
    const tw_tsc_clock *c = tw_tsc_default();
    fputs("session,bar,instrument,orders,rx_tcp_ns,tcp_parse_ns,parse_decision_ns,"
          "decision_build_ns,build_tx_ns,wire_to_wire_ns\n", f);
    for (uint32_t s = 0; s < cfg->n_sessions; s++) {
        const tw_trade_latency *l;
        size_t n = tw_trade_engine_latency(e, s, &l);
        for (size_t i = 0; i < n; i++) {
            if (!l[i].tsc_tx)
                continue; /* never left (the session went down) */
            fprintf(f, "%s,%llu,%s,%u,%llu,%llu,%llu,%llu,%llu,%llu\n", cfg->sessions[s].name,
                    (unsigned long long)l[i].bar, cfg->strategy_instruments[l[i].instrument].symbol,
                    l[i].orders, (unsigned long long)tw_tsc_delta_ns(c, l[i].tsc_tcp - l[i].tsc_rx),
                    (unsigned long long)tw_tsc_delta_ns(c, l[i].tsc_parse - l[i].tsc_tcp),
                    (unsigned long long)tw_tsc_delta_ns(c, l[i].tsc_decision - l[i].tsc_parse),
                    (unsigned long long)tw_tsc_delta_ns(c, l[i].tsc_build - l[i].tsc_decision),
                    (unsigned long long)tw_tsc_delta_ns(c, l[i].tsc_tx - l[i].tsc_build),
                    (unsigned long long)tw_tsc_delta_ns(c, l[i].tsc_tx - l[i].tsc_rx));
        }
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "tickwire trade: %s: write error\n", path);
        return -1;
    }
    return 0;
}

/* The strategy process (mode = processes): SIGINT is the gateway's to act
 * on (a terminal's ^C reaches both); SIGTERM ends it (the gateway starts
 * another). */
static int strategy_main(const char *sock, const char *config, int quiet)
{
    signal(SIGINT, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    tw_trade_config *cfg = NULL;
    tw_error err = {0};
    if (tw_trade_config_load(config, &cfg, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    int rc = tw_trade_strategy_attach(cfg, sock, quiet, &err);
    if (rc != 0)
        fprintf(stderr, "tickwire trade: strategy process %d: %s\n", (int)getpid(), err.msg);
    tw_trade_config_free(cfg);
    return rc == 0 ? 0 : rc == -ECONNRESET ? 3 : 1;
}

int tw__cli_trade(int argc, char **argv)
{
    const char *config = NULL, *latency = NULL, *attach = NULL;
    int no_spawn = 0;
    tw_trade_engine_opts o = {.open_port = open_port, .close_port = close_port};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "--reset-seqs")) {
            o.reset_seqs = 1;
            continue;
        }
        if (!strcmp(a, "--quiet")) {
            o.quiet = 1;
            continue;
        }
        if (!strcmp(a, "--no-spawn")) {
            no_spawn = 1;
            continue;
        }
        int r = tw__cli_opt_value("trade", usage, argc, argv, &i, &a, &v);
        if (r)
            return r > 0 ? 0 : 2;
        uint64_t u;
        if (!strcmp(a, "--config")) {
            config = v;
        } else if (!strcmp(a, "--attach")) {
            attach = v;
        } else if (!strcmp(a, "--latency")) {
            latency = v;
        } else if (!strcmp(a, "--run-id")) {
            if (tw__cli_u64_range("trade", a, v, 1, TW_TRADE_RUN_ID_MASK, &u))
                return 2;
            o.run_id = u;
        } else if (!strcmp(a, "--cancel-wait-ms")) {
            if (tw__cli_u64_range("trade", a, v, 1, 600000, &u))
                return 2;
            o.cancel_wait_ms = (uint32_t)u;
        } else if (!strcmp(a, "--end-wait-ms")) {
            if (tw__cli_u64_range("trade", a, v, 1, 600000, &u))
                return 2;
            o.end_wait_ms = (uint32_t)u;
        } else {
            fprintf(stderr, "tickwire trade: unknown option %s (see --help)\n", a);
            return 2;
        }
    }
    if (!config) {
        fprintf(stderr, "tickwire trade: --config FILE is required (see --help)\n");
        return 2;
    }
    if (attach)
        return strategy_main(attach, config, o.quiet);
    tw_trade_config *cfg = NULL;
    tw_error err = {0};
    if (tw_trade_config_load(config, &cfg, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    /* mode = processes: the strategy process is this program again. */
    char sock[TW_UNIX_PATH_MAX], exe[4096];
    char *sargv[] = {exe, "trade", "--attach", sock, "--config", (char *)config,
                     o.quiet ? "--quiet" : NULL, NULL};
    if (cfg->engine.mode == TW_TRADE_PROCESSES && !no_spawn) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0) {
            fprintf(stderr, "tickwire trade: /proc/self/exe: %s\n", strerror(errno));
            tw_trade_config_free(cfg);
            return 1;
        }
        exe[n] = 0;
        tw_trade_engine_attach_sock(cfg, sock);
        o.strategy_argv = sargv;
    }
    tw_trade_engine *e = NULL;
    int crc = tw_trade_engine_create(&e, cfg, &o, &err);
    if (crc != 0) {
        fprintf(stderr, "tickwire trade: %s\n", err.msg);
        tw_trade_config_free(cfg);
        /* Books it cannot rebuild: a refusal to trade, like a bad
         * configuration, not a failure of the run. */
        return crc == -TW_EUNRECOVERABLE ? 2 : 1;
    }
    g_engine = e;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    int rc = tw_trade_engine_run(e, &err);
    if (rc != 0)
        fprintf(stderr, "tickwire trade: %s\n", err.msg);
    tw_trade_engine_summary(e, stdout);
    if (latency && write_latency(latency, e, cfg) != 0 && rc == 0)
        rc = 1;
    fflush(stdout);
    g_engine = NULL;
    tw_trade_engine_destroy(e);
    tw_trade_config_free(cfg);
    return rc ? 1 : 0;
}
