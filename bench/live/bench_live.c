/* tickwire bench live: the latency budget of the live engine (live.md,
 * "Parity and latency budget").
 *
 * One lockstep replay per transport through the whole path, the venue
 * being `tickwire exchange` (this program) or the exchange library:
 *   - kernel sockets: the venue over kernel TCP on loopback (a child
 *     process), the engine with all its threads in this process;
 *   - the userspace stack: over veth with AF_XDP to the venue in a
 *     namespace when root; else on the simulated network with the venue
 *     library in this process (the net core turned on this thread).
 * Each bar that causes an order carries its stamps (rx, after TCP, after
 * the FIX parse, the decision, after the FIX build, tx); per transport the
 * table gives p50 / p99 / p99.9 per stage and wire-to-wire (rx to tx inside
 * the trader), p99.9/p50 and each stage's share of the median, and a PNG
 * of the wire-to-wire histograms (/usr/bin/python3 with matplotlib).
 * Then the stages alone (the strategy on one bar, the FIX parse of the X,
 * the FIX build of the order, a ring enqueue + dequeue) and the goals.
 * Every run is checked first: all bars answered, stamps in order.
 *
 * Throughput: the kernel-sockets run's bars per second through the
 * barrier next to a QuickFIX venue + QuickFIX trader pair (qf_pair.cpp,
 * two processes over kernel TCP on loopback) replaying the same bars in
 * the same run, with a simple decision per bar that sends orders at about
 * the same rate (both order counts printed).  Both rates are taken over
 * the lockstep loop, not the logon and the ending: for tickwire from the
 * first order-causing bar's rx to the last one's tx (the engine's stamps),
 * for QuickFIX from 340=2 to the last Heartbeat (the venue's clock); the
 * whole runs' rates are printed as well.
 *
 *   tickwire bench live [--bars N] [--quick] [--busy] [--out DIR] */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/hostcpu.h"
#include "common/netenv.h"
#include "common/simvenue.h"
#include "common/stats.h"
#include "tickwire/clock.h"
#include "tickwire/common.h"
#include "tickwire/decimal.h"
#include "tickwire/fix.h"
#include "tickwire/fix_session.h"
#include "tickwire/kernel.h"
#include "tickwire/net.h"
#include "tickwire/net_sim.h"
#include "tickwire/ring.h"
#include "tickwire/trade_engine.h"

int tw__cli_bench_live(int argc, char **argv);

#define N_STAGES 6 /* 5 stages and wire-to-wire */
static const char *stage_names[N_STAGES] = {"rx -> TCP", "TCP -> FIX parse", "parse -> decision",
                                            "decision -> build", "build -> tx", "wire-to-wire"};

/* An engine configuration measured: [engine] strategy and busy_poll. */
typedef struct variant {
    const char *label;
    int inl;  /* strategy = inline (-1: neither line, the engine's auto) */
    int busy; /* busy_poll = yes (with inl -1: what auto chose) */
    int procs; /* 1: mode = processes; -1 or 1: a journal of its own (the modes' pair) */
    long snap; /* > 0: snapshot_every = snap; -1: snapshot_every = 0; 0: the default */
} variant;

#define N_VARIANTS 4

typedef struct run {
    const char *name;
    const variant *var;
    int ok;
    double secs;
    uint64_t bars;
    uint64_t orders;
    double loop_bps;    /* bars/s over the lockstep loop (first to last sample) */
    size_t n;           /* samples */
    double *v[N_STAGES]; /* ns per sample */
    double p50[N_STAGES], p99[N_STAGES], p999[N_STAGES];
} run;

static char g_self[1024], g_dir[512];
#define MEMIF_VENUE_IP "10.78.0.1"
#define MEMIF_TRADER_IP "10.78.0.2"
static double *g_close;
static size_t g_bars;
static int g_busy; /* --busy: the default configuration busy-polls too */
static variant g_var[N_VARIANTS] = {
    {"no engine options (the default: auto)", -1, 0, 0, 0},
    {"strategy = thread, yielding", 0, 0, 0, 0},
    {"strategy = inline, yielding", 1, 0, 0, 0},
    {"strategy = inline, busy_poll = yes", 1, 1, 0, 0},
};

/* Samples out of the engine; 0, or -1 when a sample's stamps are out of order. */
static int take_samples(run *r, const tw_trade_engine *e)
{
    const tw_trade_latency *l;
    size_t n = tw_trade_engine_latency(e, 0, &l);
    const tw_tsc_clock *c = tw_tsc_default();
    for (int s = 0; s < N_STAGES; s++)
        r->v[s] = malloc((n ? n : 1) * sizeof(double));
    r->n = 0;
    const tw_trade_latency *first = NULL, *last = NULL;
    for (size_t i = 0; i < n; i++) {
        const tw_trade_latency *x = &l[i];
        if (!x->tsc_tx)
            continue; /* never left (only at a disconnect) */
        if (!first)
            first = x;
        last = x;
        if (!(x->tsc_rx <= x->tsc_tcp && x->tsc_tcp <= x->tsc_parse &&
              x->tsc_parse <= x->tsc_decision && x->tsc_decision <= x->tsc_build &&
              x->tsc_build <= x->tsc_tx)) {
            fprintf(stderr, "tickwire bench live: %s: sample %zu's stamps out of order\n",
                    r->name, i);
            return -1;
        }
        uint64_t t[6] = {x->tsc_rx, x->tsc_tcp, x->tsc_parse, x->tsc_decision, x->tsc_build,
                         x->tsc_tx};
        for (int s = 0; s < 5; s++)
            r->v[s][r->n] = (double)tw_tsc_delta_ns(c, t[s + 1] - t[s]);
        r->v[5][r->n] = (double)tw_tsc_delta_ns(c, x->tsc_tx - x->tsc_rx);
        r->n++;
    }
    if (first && last->bar > first->bar && last->tsc_tx > first->tsc_rx)
        r->loop_bps = (double)(last->bar - first->bar) /
                      ((double)tw_tsc_delta_ns(c, last->tsc_tx - first->tsc_rx) * 1e-9);
    for (int s = 0; s < N_STAGES; s++) {
        tw__sort_f64(r->v[s], r->n);
        r->p50[s] = r->n ? tw__pct_f64(r->v[s], r->n, 0.50) : NAN;
        r->p99[s] = r->n ? tw__pct_f64(r->v[s], r->n, 0.99) : NAN;
        r->p999[s] = r->n ? tw__pct_f64(r->v[s], r->n, 0.999) : NAN;
    }
    return r->n ? 0 : -1;
}

/* A `combo =` line; its length. */
static int put_combo(char *p, size_t cap, const int64_t *w)
{
    return snprintf(p, cap, "combo = %lld,%lld,%lld,%lld,%lld,%lld\n", (long long)w[0],
                    (long long)w[1], (long long)w[2], (long long)w[3], (long long)w[4],
                    (long long)w[5]);
}

/* The risk section (limits out of the way) after ini's k bytes, parsed;
 * written to save as well when not NULL (a strategy process reads it). */
static tw_trade_config *finish_config(char *ini, size_t cap, int k, const char *tag,
                                      const char *save)
{
    k += snprintf(ini + k, cap - (size_t)k,
                  "[risk]\nmax_position = 1000000\nmax_total_position = 100000000\n"
                  "max_orders_per_s = 1000000000\nmax_loss = 1e300\n");
    FILE *f = save ? fopen(save, "w") : NULL;
    if (save && (!f || fwrite(ini, 1, (size_t)k, f) != (size_t)k || fclose(f) != 0)) {
        fprintf(stderr, "tickwire bench live: cannot write %s\n", save);
        return NULL;
    }
    tw_trade_config *cfg = NULL;
    tw_error err = {0};
    if (tw_trade_config_parse(ini, (size_t)k, tag, &cfg, &err) != 0) {
        fprintf(stderr, "tickwire bench live: config: %s\n", err.msg);
        return NULL;
    }
    return cfg;
}

static tw_trade_config *make_config(const char *host, int port, const char *stack, const char *ip,
                                    const char *tag, const variant *var)
{
    int64_t grid[TW_GRID_DEFAULT_COMBOS * 6];
    tw_grid_default(grid);
    char ini[4096], opts[800] = "", save[700];
    if (var->inl >= 0)
        snprintf(opts, sizeof(opts), "busy_poll = %s\nstrategy = %s\n", var->busy ? "yes" : "no",
                 var->inl ? "inline" : "thread");
    if (var->procs) {
        size_t ol = strlen(opts);
        snprintf(opts + ol, sizeof(opts) - ol, "mode = %s\njournal = %s/journal_%s\n",
                 var->procs > 0 ? "processes" : "threads", g_dir, tag);
        snprintf(save, sizeof(save), "%s/%s.ini", g_dir, tag);
    }
    if (var->snap) {
        size_t ol = strlen(opts);
        snprintf(opts + ol, sizeof(opts) - ol, "snapshot_every = %ld\n", var->snap > 0 ? var->snap : 0);
    }
    int k = snprintf(ini, sizeof(ini),
                     "[engine]\nreport = %s/report_%s.json\nlog = %s/log_%s.txt\n%s"
                     "[session venue]\nhost = %s\nport = %d\nsender = BENCH\ntarget = VENUE\n"
                     "store = %s/store_%s/venue\nreconnect_min_ms = 20\n",
                     g_dir, tag, g_dir, tag, opts, host, port, g_dir, tag);
    if (stack)
        k += snprintf(ini + k, sizeof(ini) - (size_t)k, "stack = %s\nip = %s/24\n", stack, ip);
    k += snprintf(ini + k, sizeof(ini) - (size_t)k,
                  "[instrument AAA]\nsession = venue\n[strategy s]\ninstrument = AAA\n");
    for (int c = 0; c < 80; c += 20) {
        const int64_t *w = grid + c * 6;
        k += put_combo(ini + k, sizeof(ini) - (size_t)k, w);
    }
    return finish_config(ini, sizeof(ini), k, tag, var->procs ? save : NULL);
}

/* `tickwire exchange` as a child (optionally in netenv e's namespace, on
 * the userspace stack over port spec memif) on datasets `data`, with the
 * arguments `extra` (NULL-terminated) and --busy when asked (always with
 * memif); its output in out.  Returns its pid, the port it listens on in
 * *port. */
static pid_t venue_spawn(const tw__netenv *e, const char *listen, const char *memif,
                         const char *data, char *const *extra, int busy, char *out,
                         size_t out_cap, int *port)
{
    char spec[600];
    snprintf(out, out_cap, "%s/venue_%d.out", g_dir, (int)getpid());
    snprintf(spec, sizeof(spec), "%s", memif ? memif : "");
    char *av[32];
    int n = 0;
    av[n++] = g_self;
    av[n++] = (char *)"exchange";
    av[n++] = (char *)"--listen";
    av[n++] = (char *)listen;
    av[n++] = (char *)"--data";
    av[n++] = (char *)data;
    av[n++] = (char *)"--quiet";
    av[n++] = (char *)"--max-orders";
    av[n++] = (char *)"100000000";
    for (int i = 0; extra[i] && n < 24; i++)
        av[n++] = extra[i];
    if (memif) {
        av[n++] = (char *)"--port";
        av[n++] = spec;
        av[n++] = (char *)"--ip";
        av[n++] = (char *)MEMIF_VENUE_IP;
    }
    if (memif || busy)
        av[n++] = (char *)"--busy";
    av[n] = NULL;
    FILE *f = fopen(out, "w");
    if (!f)
        return -1;
    fclose(f);
    pid_t p;
    fflush(stdout); /* not twice: the child's freopen would flush our buffer */
    if (e) {
        int fd = open(out, O_WRONLY | O_TRUNC);
        p = tw__netenv_spawn(e, av, fd);
        close(fd);
    } else {
        p = fork();
        if (p == 0) {
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            if (!freopen(out, "w", stdout))
                _exit(127);
            execv(g_self, av);
            _exit(127);
        }
    }
    *port = 0;
    for (int t = 0; t < 400 && p > 0 && !*port; t++) {
        char line[256];
        f = fopen(out, "r");
        while (f && fgets(line, sizeof(line), f)) {
            const char *l = strstr(line, "listening on ");
            const char *q = l ? strchr(l, ':') : NULL;
            if (q)
                *port = atoi(q + 1);
        }
        if (f)
            fclose(f);
        if (!*port)
            usleep(25000);
    }
    return p;
}

/* The lockstep venue on the one dataset (AAA). */
static pid_t venue_child_on(const tw__netenv *e, const char *listen, const char *memif, int *port)
{
    char data[700], out[700];
    snprintf(data, sizeof(data), "AAA=%s/bars.f64", g_dir);
    char *extra[] = {(char *)"--lockstep", NULL};
    return venue_spawn(e, listen, memif, data, extra, 0, out, sizeof(out), port);
}

static pid_t venue_child(const tw__netenv *e, const char *listen, int *port)
{
    return venue_child_on(e, listen, NULL, port);
}

static int child_exit(pid_t p)
{
    return tw__netenv_wait(p, 60.0);
}

static void close_spec(void *ctx, uint32_t s, tw_port *port)
{
    (void)ctx, (void)s;
    tw_port_close(port);
}

/* The engine, threaded, against a venue child; 0 or -1. */
static int run_threaded(run *r, const char *host, int port, const char *stack, const char *ip,
                        tw_trade_open_port_fn open_port, const char *tag)
{
    tw_trade_config *cfg = make_config(host, port, stack, ip, tag, r->var);
    if (!cfg)
        return -1;
    tw_trade_engine *e = NULL;
    tw_error err = {0};
    tw_trade_engine_opts o = {.open_port = open_port, .close_port = close_spec, .quiet = 1,
                              .latency_samples = 1u << 22};
    /* mode = processes: the strategy process is this program's `trade
     * --attach`, on the configuration make_config wrote. */
    char sock[TW_UNIX_PATH_MAX], ini[700];
    snprintf(ini, sizeof(ini), "%s/%s.ini", g_dir, tag);
    char *sargv[] = {g_self, (char *)"trade", (char *)"--attach", sock, (char *)"--config", ini,
                     (char *)"--quiet", NULL};
    if (r->var->procs > 0) {
        tw_trade_engine_attach_sock(cfg, sock);
        o.strategy_argv = sargv;
    }
    int64_t t0 = tw_clock_now_ns();
    int rc = tw_trade_engine_create(&e, cfg, &o, &err);
    if (rc == 0)
        rc = tw_trade_engine_run(e, &err);
    r->secs = (double)(tw_clock_now_ns() - t0) * 1e-9;
    if (rc != 0) {
        fprintf(stderr, "tickwire bench live: %s: %s\n", r->name, err.msg);
    } else {
        tw_trade_gw_stats gs;
        tw_trade_engine_gw_stats(e, 0, &gs);
        r->bars = gs.bars;
        r->orders = gs.orders_sent;
        rc = gs.bars == g_bars && gs.barrier_acks == g_bars ? take_samples(r, e) : -1;
        if (gs.bars != g_bars)
            fprintf(stderr, "tickwire bench live: %s: %llu of %zu bars\n", r->name,
                    (unsigned long long)gs.bars, g_bars);
    }
    tw_trade_engine_destroy(e);
    tw_trade_config_free(cfg);
    return rc;
}

#ifdef TW_BENCH_LIVE_PORTS
#include "common/portspec.h"
static int open_spec(void *ctx, uint32_t s, const char *spec, tw_port **port, tw_error *err)
{
    (void)ctx, (void)s;
    /* The configurations run one after the other on one veth: the last
     * run's AF_XDP socket may still be going away in the kernel (EBUSY). */
    int rc = -EBUSY;
    for (int t = 0; t < 100 && rc == -EBUSY; t++) {
        if (t)
            tw_clock_sleep_ns(20000000);
        rc = tw__port_open_spec(port, spec, 4096, err);
    }
    return rc;
}
#endif


static tw_port *g_sim_port;
static int open_sim(void *ctx, uint32_t s, const char *spec, tw_port **port, tw_error *err)
{
    (void)ctx, (void)s, (void)spec, (void)err;
    *port = g_sim_port;
    return 0;
}

/* The userspace stack on the simulated network, the venue library on this
 * thread with the engine's net core; 0 or -1. */
static int run_sim(run *r, const char *tag)
{
    tw_xchg_symbol sym = {"AAA", g_close, g_bars};
    tw_xchg_cfg xc;
    tw_xchg_cfg_init(&xc);
    xc.symbols = &sym;
    xc.n_symbols = 1;
    xc.lockstep = 1;
    xc.max_orders = 10000000;
    xc.epoch_offset_ns = tw_tsc_default()->epoch_offset_ns;
    tw__simvenue sv;
    tw_error err = {0};
    if (tw__simvenue_open(&sv, &xc, NULL, 1, &err) != 0) {
        fprintf(stderr, "tickwire bench live: sim: %s\n", err.msg);
        return -1;
    }
    g_sim_port = sv.tport;
    tw_trade_config *cfg = make_config(TW__SIMVENUE_IP_TEXT, TW__SIMVENUE_PORT, "sim",
                                       TW__SIMVENUE_TRADER_IP_TEXT, tag, r->var);
    tw_trade_engine *e = NULL;
    tw_trade_engine_opts o = {.open_port = open_sim, .manual_net = 1, .quiet = 1,
                              .latency_samples = 1u << 22};
    int rc = cfg ? tw_trade_engine_create(&e, cfg, &o, &err) : -1;
    if (rc == 0)
        rc = tw_trade_engine_start(e, &err);
    int64_t t0 = tw_clock_now_ns();
    int done = 0;
    while (rc == 0 && !(done && tw_xchg_done(sv.x))) {
        int64_t t = tw_tsc_to_ns(tw_tsc_default(), tw_tsc_read());
        unsigned w = tw__simvenue_turn(&sv, t) + tw_trade_engine_poll(e);
        if (!done) {
            int s = tw_trade_engine_step(e, &err);
            if (s < 0)
                rc = s;
            done = s == 1;
        }
        if (!w && !r->var->busy)
            sched_yield();
        if (tw_clock_now_ns() - t0 > 3600ll * 1000000000)
            rc = -ETIMEDOUT;
    }
    r->secs = (double)(tw_clock_now_ns() - t0) * 1e-9;
    if (rc == 0) {
        tw_trade_gw_stats gs;
        tw_trade_engine_gw_stats(e, 0, &gs);
        r->bars = gs.bars;
        rc = gs.bars == g_bars && gs.barrier_acks == g_bars ? take_samples(r, e) : -1;
    } else {
        fprintf(stderr, "tickwire bench live: sim: %s\n", err.msg);
    }
    tw_trade_engine_destroy(e);
    tw_trade_config_free(cfg);
    tw__simvenue_close(&sv, tw_clock_now_ns());
    return rc;
}

/* ---- the QuickFIX pair ----------------------------------------------------- */

#ifdef TW_BENCH_QF_PAIR
typedef struct qf_run {
    int ok;
    long bars, orders, fills;
    double loop_s, wall_s;
} qf_run;

/* The pair on the same bars (a text file of their exact decimals); 0 or -1. */
static int run_qf(qf_run *q)
{
    char bars[700], out[700], dir[700];
    snprintf(bars, sizeof(bars), "%s/bars.txt", g_dir);
    snprintf(out, sizeof(out), "%s/qf_pair.out", g_dir);
    snprintf(dir, sizeof(dir), "%s/qf", g_dir);
    FILE *f = fopen(bars, "w");
    if (!f)
        return -1;
    char t[TW_DECIMAL_MAX];
    for (size_t i = 0; i < g_bars; i++) {
        if (!isnan(g_close[i]))
            fwrite(t, 1, tw_double_to_decimal(g_close[i], t), f);
        fputc('\n', f);
    }
    if (fclose(f) != 0)
        return -1;
    mkdir(dir, 0755);
    char *av[] = {(char *)TW_BENCH_QF_PAIR, (char *)"--bars", bars, (char *)"--dir", dir,
                  (char *)"--lookbacks", (char *)"3,5", (char *)"--timeout", (char *)"300", NULL};
    fflush(stdout);
    int64_t t0 = tw_clock_now_ns();
    pid_t p = fork();
    if (p == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (!freopen(out, "w", stdout))
            _exit(127);
        execv(av[0], av);
        _exit(127);
    }
    int st = p > 0 ? tw__netenv_wait(p, 330.0) : -1;
    q->wall_s = (double)(tw_clock_now_ns() - t0) * 1e-9;
    f = fopen(out, "r");
    char line[512];
    int got = 0;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "qf_pair: bars=%ld loop_s=%lf bars_per_s=%*f orders=%ld fills=%ld",
                   &q->bars, &q->loop_s, &q->orders, &q->fills) == 4)
            got = 1;
    if (f)
        fclose(f);
    if (st != 0 || !got || q->bars != (long)g_bars || q->loop_s <= 0 || q->fills != q->orders) {
        fprintf(stderr, "tickwire bench live: the QuickFIX pair failed (exit %d; see %s)\n", st,
                out);
        return -1;
    }
    return 0;
}
#endif

/* ---- the stages alone ------------------------------------------------------ */

static int null_write(void *ctx, const char *b, size_t n)
{
    (void)ctx, (void)b, (void)n;
    return 0;
}
static void null_close(void *ctx) { (void)ctx; }

/* A strategy core built from cfg in memory of its own (*mem, to free);
 * NULL when it cannot be. */
static tw_strategy *strategy_of(const tw_trade_config *cfg, void **mem)
{
    tw_strategy_cfg sc;
    tw_trade_config_strategy(cfg, &sc);
    size_t bytes = tw_strategy_memsize(&sc);
    *mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    tw_error err = {0};
    return *mem ? tw_strategy_init(*mem, bytes, &sc, &err) : NULL;
}

typedef struct alone {
    double strategy_ns, parse_ns, build_ns, ring_ns;
} alone;

static int stages_alone(alone *a)
{
    /* The strategy on one bar (the same four combos), per call. */
    tw_trade_config *cfg = make_config("127.0.0.1", 1, NULL, NULL, "a", &g_var[0]);
    if (!cfg)
        return -1;
    void *mem = NULL;
    tw_error err = {0};
    tw_strategy *s = strategy_of(cfg, &mem);
    if (!s)
        return -1;
    tw_out *out = calloc(tw_strategy_max_out(s), sizeof(tw_out));
    double v[64];
    size_t bar = 0;
    for (int k = 0; k < 64; k++) {
        int64_t t0 = tw_clock_now_ns();
        for (int i = 0; i < 256; i++, bar++) {
            tw_ev ev = {.type = TW_EV_BAR, .now_ns = (int64_t)bar};
            ev.u.bar.index = bar;
            ev.u.bar.close = g_close[bar % g_bars];
            (void)tw_strategy_on_event(s, &ev, out, tw_strategy_max_out(s));
        }
        v[k] = (double)(tw_clock_now_ns() - t0) / 256.0;
    }
    a->strategy_ns = tw__median_f64(v, 64);
    free(out);
    free(mem);
    tw_trade_config_free(cfg);
    /* The FIX parse of one bar's X (the session's one-pass decoder). */
    static const char body[] = "35=X\00149=VENUE\00156=BENCH\00134=1234\00152=20260101-00:00:00.000000"
                               "\001262=1-0-1\001268=1\001279=0\001269=2\00155=AAA\001278=123456"
                               "\001270=100.02438034119417\001271=1\001";
    char msg[512];
    int hl = snprintf(msg, sizeof(msg), "8=FIX.4.4\0019=%zu\001%s", sizeof(body) - 1, body);
    hl += snprintf(msg + hl, sizeof(msg) - (size_t)hl, "10=%03u\001", tw_fix_checksum(msg, (size_t)hl));
    tw_fix_md_entry ents[8];
    tw_fix_field fields[64];
    tw_fix_decoded d = {.flags = TW_FIX_PX_F64, .px_decimals = 8, .entries = ents,
                        .entries_cap = 8, .fields = fields, .fields_cap = 64};
    for (int k = 0; k < 64; k++) {
        int64_t t0 = tw_clock_now_ns();
        for (int i = 0; i < 1024; i++) {
            size_t skip;
            if (tw_fix_decode(msg, (size_t)hl, &d, &skip) != hl || d.rc != 0 ||
                d.u.md.n_entries != 1)
                return -1;
        }
        v[k] = (double)(tw_clock_now_ns() - t0) / 1024.0;
    }
    a->parse_ns = tw__median_f64(v, 64);
    /* The FIX build of one NewOrderSingle (session, no store). */
    static tw_fix_session fs;
    tw_fix_session_cfg fc = {.begin_string = "FIX.4.4", .sender_comp_id = "BENCH",
                             .target_comp_id = "VENUE", .initiator = 1, .heart_bt_int_s = 30,
                             .ts_digits = 6, .stream = {null_write, null_close, NULL}};
    if (tw_fix_session_init(&fs, &fc, &err) != 0)
        return -1;
    fs.state = TW_FIX_ACTIVE; /* logged on, as far as building goes */
    for (int k = 0; k < 64; k++) {
        int64_t t0 = tw_clock_now_ns();
        for (int i = 0; i < 1024; i++) {
            tw_fix_wbuf *w = tw_fix_session_begin(&fs, "D", t0);
            if (!w)
                return -1;
            tw_fix_put_cstr(w, 11, "T0000019bcdef-0000000000012345");
            tw_fix_put_cstr(w, 1, "s.0");
            tw_fix_put_cstr(w, 55, "AAA");
            tw_fix_put_char(w, 54, '1');
            tw_fix_put_i64(w, 38, 2);
            tw_fix_put_char(w, 40, '1');
            tw_fix_put_ts(w, 60, t0, 6);
            if (tw_fix_session_send(&fs, t0) != 0)
                return -1;
        }
        v[k] = (double)(tw_clock_now_ns() - t0) / 1024.0;
    }
    a->build_ns = tw__median_f64(v, 64);
    /* A ring enqueue and dequeue of one event (one thread: the cross-core
     * hop itself is `tickwire bench ring`'s). */
    size_t rb = tw_ring_memsize(1024, 64);
    tw_ring *ring = aligned_alloc(64, rb);
    if (!ring || tw_ring_init(ring, 1024, 64) != 0)
        return -1;
    tw_ev ev = {0}, got;
    for (int k = 0; k < 64; k++) {
        int64_t t0 = tw_clock_now_ns();
        for (int i = 0; i < 4096; i++) {
            ev.u.bar.index = (uint64_t)i;
            if (tw_ring_enqueue_burst_sp(ring, &ev, 1) != 1 ||
                tw_ring_dequeue_burst_sc(ring, &got, 1) != 1 || got.u.bar.index != (uint64_t)i)
                return -1;
        }
        v[k] = (double)(tw_clock_now_ns() - t0) / 4096.0;
    }
    a->ring_ns = tw__median_f64(v, 64);
    free(ring);
    return 0;
}

/* The userspace stack's own stages alone, on the simulated network (a
 * port whose rx and tx are a queue: what is left is TCP): the poll that
 * takes one segment of an X's size through TCP input, and the send of an
 * order's size through TCP output to the port.  Medians of 64 rounds. */
typedef struct stack_alone_ns {
    double tcp_in_ns, tcp_out_ns, idle_poll_ns;
} stack_alone_ns;

static tw_tcp_conn g_sa_acc;
static tw_tcp_conn *sa_accept(tw_tcp_listener *l, uint32_t ip, uint16_t port, void *user)
{
    (void)l, (void)ip, (void)port, (void)user;
    return &g_sa_acc;
}

static int stack_alone(stack_alone_ns *a)
{
    static const uint8_t ma[6] = {2, 0, 0, 0x5a, 0, 1}, mb[6] = {2, 0, 0, 0x5a, 0, 2};
    tw_sim_net *net = NULL;
    tw_port *pa = NULL, *pb = NULL;
    tw_net *sa = NULL, *sb = NULL;
    tw_error err = {0};
    tw_net_config ca, cb;
    tw_net_config_init(&ca, 0x0a5a0001u);
    tw_net_config_init(&cb, 0x0a5a0002u);
    ca.isn_secret[0] = cb.isn_secret[0] = 7;
    int rc = -1;
    static tw_tcp_conn conn;
    static tw_tcp_listener lis;
    memset(&conn, 0, sizeof(conn));
    memset(&g_sa_acc, 0, sizeof(g_sa_acc));
    if (tw_sim_net_open(&net, 7, 4096, &err) != 0 ||
        tw_port_sim_open(&pa, net, ma, NULL, 4096, &err) != 0 ||
        tw_port_sim_open(&pb, net, mb, NULL, 4096, &err) != 0 ||
        tw_net_open(&sa, pa, &ca, &err) != 0 || tw_net_open(&sb, pb, &cb, &err) != 0 ||
        tw_tcp_listen(sb, &lis, 7000, sa_accept, NULL) != 0) {
        fprintf(stderr, "tickwire bench live: stack alone: %s\n", err.msg);
        goto out;
    }
    uint64_t now = 1000000000ull;
    if (tw_tcp_connect(sa, &conn, 0x0a5a0002u, 7000, 0, now) != 0)
        goto out;
    for (int i = 0; i < 1000 && (tw_tcp_get_state(&conn) != TW_TCP_ESTABLISHED ||
                                 tw_tcp_get_state(&g_sa_acc) != TW_TCP_ESTABLISHED); i++) {
        now += 1000;
        tw_sim_net_advance(net, now);
        tw_net_poll(sa, now);
        tw_net_poll(sb, now);
    }
    if (tw_tcp_get_state(&g_sa_acc) != TW_TCP_ESTABLISHED)
        goto out;
    char x[200], d[150];
    memset(x, 'x', sizeof(x));
    memset(d, 'd', sizeof(d));
    const tw_tsc_clock *clk = tw_tsc_default();
    double vin[64], vout[64], vidle[64];
    for (int k = 0; k < 64; k++) {
        uint64_t in = 0, out = 0, idle = 0;
        for (int i = 0; i < 64; i++) {
            /* The venue's X to the trader: sent, on the wire, then the
             * trader's poll takes it (rx burst of the sim port + TCP). */
            now += 2000;
            if (tw_tcp_send(&conn, x, sizeof(x), now) != (long)sizeof(x))
                goto out;
            tw_net_poll(sa, now);
            tw_sim_net_advance(net, now);
            uint64_t t0 = tw_tsc_read();
            tw_net_poll(sb, now);
            uint64_t t1 = tw_tsc_read();
            const uint8_t *p;
            size_t n;
            size_t got = 0;
            while (tw_tcp_recv_peek(&g_sa_acc, &p, &n) > 0) {
                got += n;
                tw_tcp_recv_consume(&g_sa_acc, n);
            }
            if (got != sizeof(x))
                goto out;
            /* The trader's order: TCP output to the port. */
            uint64_t t2 = tw_tsc_read();
            if (tw_tcp_send(&g_sa_acc, d, sizeof(d), now) != (long)sizeof(d))
                goto out;
            tw_net_poll(sb, now);
            uint64_t t3 = tw_tsc_read();
            /* A poll that finds nothing. */
            tw_net_poll(sb, now);
            uint64_t t4 = tw_tsc_read();
            in += t1 - t0;
            out += t3 - t2;
            idle += t4 - t3;
            now += 2000;
            tw_sim_net_advance(net, now);
            tw_net_poll(sa, now);
            while (tw_tcp_recv_peek(&conn, &p, &n) > 0)
                tw_tcp_recv_consume(&conn, n);
        }
        vin[k] = (double)tw_tsc_delta_ns(clk, in) / 64.0;
        vout[k] = (double)tw_tsc_delta_ns(clk, out) / 64.0;
        vidle[k] = (double)tw_tsc_delta_ns(clk, idle) / 64.0;
    }
    a->tcp_in_ns = tw__median_f64(vin, 64);
    a->tcp_out_ns = tw__median_f64(vout, 64);
    a->idle_poll_ns = tw__median_f64(vidle, 64);
    rc = 0;
out:
    if (sa)
        tw_net_close(sa);
    if (sb)
        tw_net_close(sb);
    if (net)
        tw_sim_net_close(net);
    return rc;
}

/* Multiply-adds per bar of the instances of cfg, counted from their
 * kernels' definitions: an hma_sar combo is seven WMA passes (kernel.md),
 * a WMA of window w one multiply and one add per window bar; *shared is
 * the same with the close's WMA passes of equal windows on one instrument
 * computed once (the exact kernel's distinct windows).  Instances of
 * another kernel have no count (*other says how many). */
static void count_madds(const tw_trade_config *cfg, uint64_t *naive, uint64_t *shared,
                        uint32_t *n_inst, uint32_t *other)
{
    void *mem = NULL;
    tw_strategy *s = strategy_of(cfg, &mem);
    *naive = *shared = 0;
    *n_inst = *other = 0;
    if (!s) {
        free(mem);
        return;
    }
    int64_t seen[256][2]; /* (instrument, close window) pairs counted */
    size_t n_seen = 0;
    *n_inst = tw_strategy_n_instances(s);
    for (uint32_t i = 0; i < *n_inst; i++) {
        tw_instance_stats is;
        tw_strategy_instance(s, i, &is);
        if (is.kernel) {
            (*other)++;
            continue;
        }
        const int64_t *w = is.combo;
        /* The close passes: h_half, h_full, t_third, t_half, t_full; then
         * WMA(d, h_sqrt) and WMA(e, t_full) on the combo's own series. */
        const int close_w[5] = {TW_H_HALF, TW_H_FULL, TW_T_THIRD, TW_T_HALF, TW_T_FULL};
        uint64_t own = (uint64_t)(w[TW_H_SQRT] + w[TW_T_FULL]);
        *naive += own;
        *shared += own;
        for (int j = 0; j < 5; j++) {
            int64_t win = w[close_w[j]];
            *naive += (uint64_t)win;
            int dup = 0;
            for (size_t q = 0; q < n_seen && !dup; q++)
                dup = seen[q][0] == is.instrument && seen[q][1] == win;
            if (!dup) {
                *shared += (uint64_t)win;
                if (n_seen < 256) {
                    seen[n_seen][0] = is.instrument;
                    seen[n_seen][1] = win;
                    n_seen++;
                }
            }
        }
    }
    free(mem);
}

/* ---- output ------------------------------------------------------------------ */

/* The sum of a run's stage medians. */
static double stage_sum(const run *r)
{
    double sum = 0;
    for (int s = 0; s < 5; s++)
        sum += r->p50[s];
    return sum;
}

static void print_run(const run *r)
{
    double sum = stage_sum(r);
    printf("\n%s, %s: %llu bars in lockstep in %.2f s (%.0f bars/s through the barrier, %.0f "
           "over the loop), %zu bars caused orders\n", r->name, r->var->label,
           (unsigned long long)r->bars, r->secs, (double)r->bars / r->secs, r->loop_bps, r->n);
    printf("  %-20s %10s %10s %10s %10s %8s\n", "stage (ns)", "p50", "p99", "p99.9", "p99.9/p50",
           "share");
    for (int s = 0; s < N_STAGES; s++)
        printf("  %-20s %10.0f %10.0f %10.0f %10.2f %7.0f%%\n", stage_names[s], r->p50[s],
               r->p99[s], r->p999[s], r->p50[s] > 0 ? r->p999[s] / r->p50[s] : NAN,
               s < 5 && sum > 0 ? 100.0 * r->p50[s] / sum : 100.0);
}

/* Wire-to-wire histograms: one panel per transport, one histogram per
 * configuration. */
static void picture(const run *const *rs, int n, const char *png)
{
    char csv[700];
    snprintf(csv, sizeof(csv), "%s/wire.csv", g_dir);
    FILE *f = fopen(csv, "w");
    if (!f)
        return;
    fprintf(f, "transport,config,ns\n");
    for (int k = 0; k < n; k++)
        for (size_t i = 0; i < rs[k]->n; i++)
            fprintf(f, "\"%s\",\"%s\",%.0f\n", rs[k]->name, rs[k]->var->label, rs[k]->v[5][i]);
    fclose(f);
    char cmd[3000];
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c \"import csv,numpy as np,matplotlib; matplotlib.use('Agg'); "
             "import matplotlib.pyplot as plt; d={}; "
             "[d.setdefault(r['transport'],{}).setdefault(r['config'],[]).append(float(r['ns'])/1000) "
             "for r in csv.DictReader(open('%s'))]; "
             "a=[x for t in d.values() for v in t.values() for x in v]; "
             "bins=np.logspace(np.log10(max(min(a),0.05)),np.log10(max(a)),80); "
             "fig,ax=plt.subplots(len(d),1,figsize=(8,3.2*len(d)),sharex=True,squeeze=False); "
             "[([ax[i][0].hist(v,bins=bins,alpha=0.5,label=c) for c,v in t.items()], "
             "ax[i][0].set_title(k,fontsize=10), ax[i][0].set_ylabel('bars'), "
             "ax[i][0].legend(fontsize=8)) for i,(k,t) in enumerate(d.items())]; "
             "ax[-1][0].set_xscale('log'); "
             "ax[-1][0].set_xlabel('wire-to-wire inside the trader (us, rx to tx)'); "
             "fig.suptitle('tickwire trade: wire-to-wire'); fig.tight_layout(); "
             "fig.savefig('%s', dpi=110)\" >/dev/null 2>&1",
             csv, png);
    if (system(cmd) == 0)
        printf("\npicture: %s (wire-to-wire histograms, log scale)\n", png);
    else
        printf("\npicture: not drawn (/usr/bin/python3 with numpy and matplotlib needed)\n");
}

static const char *verdict(int ok) { return ok ? "met" : "NOT met"; }

static const char *bench_isa(void)
{
    return tw_isa_name(tw_cpu_has(TW_ISA_AVX512) ? TW_ISA_AVX512
                       : tw_cpu_has(TW_ISA_AVX2) ? TW_ISA_AVX2 : TW_ISA_SSE2);
}

/* The events the newest snapshot of a run reflects (its name,
 * snap-<events>.tws, in the journal's .snap directory), or 0. */
static unsigned long long newest_snapshot(const char *tag)
{
    char d[700];
    snprintf(d, sizeof(d), "%s/journal_%s.snap", g_dir, tag);
    DIR *dir = opendir(d);
    unsigned long long best = 0, n;
    if (!dir)
        return 0;
    for (struct dirent *ent; (ent = readdir(dir)) != NULL;)
        if (sscanf(ent->d_name, "snap-%20llu.tws", &n) == 1 && n > best)
            best = n;
    closedir(dir);
    return best;
}

static void load_average(double la[3])
{
    la[0] = la[1] = la[2] = NAN;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf %lf %lf", &la[0], &la[1], &la[2]) != 3)
            la[0] = la[1] = la[2] = NAN;
        fclose(f);
    }
}

/* The CPU times at the start of the bench (host_after prints against them). */
static tw__cpu_times g_cpu0;

static void host_before(double la[3])
{
    load_average(la);
    tw__cpu_times_read(&g_cpu0);
}

/* "load average A before, B after; the host took S% of the CPU time"
 * (steal since host_before: time the VM's CPUs were ready and not run). */
static void host_after(const double la0[3])
{
    double la1[3];
    load_average(la1);
    tw__cpu_times c1;
    tw__cpu_times_read(&c1);
    printf("load average %.2f before, %.2f after; the host took %.1f%% of the CPU time (steal)",
           la0[0], la1[0], tw__steal_pct(&g_cpu0, &c1));
}

/* Where the time of the memif row goes, stage by stage as the seed's table
 * has it: measured in the run where the engine stamps (the FIX parse, the
 * build), alone where it does not (TCP in and out on the simulated port,
 * the rings, the strategy with its arithmetic); the memif rx and tx bursts
 * are what the run's stamped intervals hold beyond the stack's TCP alone.
 * Then the wire-to-wire median against the sum of the stages. */
static void memif_stages(const run *m, const alone *a, const stack_alone_ns *sa)
{
    uint64_t naive = 0, shared = 0;
    uint32_t n_inst = 0, other = 0;
    tw_trade_config *cfg = make_config("127.0.0.1", 1, NULL, NULL, "madds", m->var);
    if (cfg)
        count_madds(cfg, &naive, &shared, &n_inst, &other);
    tw_trade_config_free(cfg);
    double tin = sa ? sa->tcp_in_ns : NAN, tout = sa ? sa->tcp_out_ns : NAN;
    double rx = m->p50[0] - tin, tx = m->p50[4] - tout;
    printf("\nwhere the time goes, memif (%s; ns, p50 in the run, median alone):\n",
           m->var->label);
    printf("  %-44s %10s %10s\n", "stage", "in the run", "alone");
    printf("  %-44s %10.0f %10s   (rx -> TCP in the run minus TCP alone)\n",
           "rx poll (the memif rx burst)", rx, "-");
    printf("  %-44s %10s %10.0f   (the stack on the simulated port; an idle poll %.0f)\n",
           "TCP in", "-", tin, sa ? sa->idle_poll_ns : NAN);
    printf("  %-44s %10.0f %10.0f\n", "FIX parse (the X)", m->p50[1], a->parse_ns);
    printf("  %-44s %10s %10.0f   (enqueue + dequeue, x2: in and out)\n", "ring", "-",
           2 * a->ring_ns);
    if (n_inst > other && naive)
        printf("  %-44s %10s %10.0f   (%u instances: %llu multiply-adds a bar, %llu with the "
               "close's equal windows shared; %.2f ns each)\n",
               "strategy (one bar)", "-", a->strategy_ns, n_inst, (unsigned long long)naive,
               (unsigned long long)shared, a->strategy_ns / (double)shared);
    else
        printf("  %-44s %10s %10.0f   (no hma_sar combo to count)\n", "strategy (one bar)", "-",
               a->strategy_ns);
    printf("  %-44s %10.0f %10s\n", "  ring + strategy, parse -> decision", m->p50[2], "-");
    printf("  %-44s %10.0f %10.0f\n", "build (the NewOrderSingle, stored)", m->p50[3],
           a->build_ns);
    printf("  %-44s %10s %10.0f   (the stack on the simulated port)\n", "TCP out", "-", tout);
    printf("  %-44s %10.0f %10s   (build -> tx in the run minus TCP out alone)\n",
           "tx (the memif tx burst)", tx, "-");
    double stages = rx + tin + a->parse_ns + 2 * a->ring_ns + a->strategy_ns + a->build_ns +
                    tout + tx;
    printf("  %-44s %10s %10.0f\n", "sum of the stages", "", stages);
    printf("  %-44s %10.0f %10s   (%.2fx the stages)\n", "wire-to-wire", m->p50[5], "",
           m->p50[5] / stages);
    printf("  wire-to-wire p50 <= 1.5 x the sum of the stages (%.0f vs 1.5 x %.0f ns): %s\n",
           m->p50[5], stages, sa && stages > 0 ? (m->p50[5] <= 1.5 * stages ? "met" : "NOT met")
                                               : "NOT met (the stack alone failed)");
}

/* ---- paced: the desk's ticks per second ---------------------------------------
 *
 * `tickwire exchange --rate N --busy` (N ticks per second over 4
 * instruments, no barrier) against the engine with 8 instances (2 combos
 * per instrument), strategy = inline and busy_poll = yes: venue and trader
 * each one busy loop, the two vCPUs.  Over memif (root with DPDK) and over
 * kernel TCP on loopback.  A run is sustained when the trader kept up (it
 * processed every bar of every instrument, its inbound ring never filled,
 * no bar was dropped or skipped, the venue's clock never waited on the
 * trader's backlog), the venue delivered the rate (PACED_DELIVERED_OK of
 * it from the first order-causing bar to the last: its own lateness, the
 * host's scheduling, is printed, not judged) and its
 * signal books (each instance's kernel trades, PnL and position) equal the
 * sweep over the bars sent, bit for bit. */

/* One lockstep round over kernel sockets against a venue child of its own. */
static void kernel_round(run *r, const variant *var, const char *tag)
{
    r->var = var;
    int port;
    pid_t v = venue_child(NULL, "127.0.0.1:0", &port);
    r->ok = v > 0 && port > 0 && run_threaded(r, "127.0.0.1", port, NULL, NULL, NULL, tag) == 0;
    if (v > 0 && child_exit(v) != 0)
        r->ok = 0;
    if (!r->ok)
        fprintf(stderr, "tickwire bench live: the %s run failed; files in %s\n", var->label, g_dir);
}

/* Snapshots every 10,000 events against none (threads mode, strategy =
 * inline with busy_poll = yes: the configuration whose latency a
 * snapshot's copy on the core would show), in alternating rounds; each
 * side's figure is the median of its rounds. */
#define SNAP_PAIRS_MAX 16
typedef struct snap_cmp {
    int pairs, ok;
    run r[2 * SNAP_PAIRS_MAX];
    unsigned long long at[SNAP_PAIRS_MAX]; /* the newest snapshot of each round with them */
    double p50[2], p999[2], bps[2];        /* medians: [0] none, [1] with snapshots */
} snap_cmp;

static const variant g_snaps[2] = {
    {"snapshot_every = 0 (no snapshots)", 1, 1, -1, -1},
    {"snapshot_every = 10000", 1, 1, -1, 10000},
};

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_dbl);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void snapshots_rounds(snap_cmp *c, int pairs)
{
    memset(c, 0, sizeof(*c));
    c->pairs = pairs;
    c->ok = 1;
    char tag[16];
    for (int j = 0; j < 2 * pairs; j++) {
        run *r = &c->r[j];
        r->name = "kernel sockets (loopback)";
        snprintf(tag, sizeof(tag), "sn%d", j);
        kernel_round(r, &g_snaps[j % 2], tag);
        c->ok &= r->ok;
        if (j % 2)
            c->at[j / 2] = newest_snapshot(tag);
    }
    for (int sn = 0; sn < 2 && c->ok; sn++) {
        double a[SNAP_PAIRS_MAX], b[SNAP_PAIRS_MAX], t[SNAP_PAIRS_MAX];
        for (int i = 0; i < pairs; i++) {
            a[i] = c->r[2 * i + sn].p50[5];
            b[i] = c->r[2 * i + sn].p999[5];
            t[i] = c->r[2 * i + sn].loop_bps;
        }
        c->p50[sn] = median_of(a, pairs);
        c->p999[sn] = median_of(b, pairs);
        c->bps[sn] = median_of(t, pairs);
    }
}

static void snapshots_print(const snap_cmp *c)
{
    printf("\nsnapshots every 10,000 events vs none, lockstep over kernel TCP on loopback, %zu "
           "bars, %d rounds each, alternating (ABAB...), wire-to-wire:\n", g_bars, c->pairs);
    printf("  %-40s %5s %10s %12s %12s\n", "", "round", "p50 us", "p99.9 us", "bars/s");
    for (int j = 0; j < 2 * c->pairs; j++) {
        const run *r = &c->r[j];
        printf("  %-40s %5d %10.1f %12.1f %12.0f\n", g_snaps[j % 2].label, j / 2 + 1,
               r->p50[5] / 1e3, r->p999[5] / 1e3, r->loop_bps);
    }
    if (c->ok)
        for (int sn = 0; sn < 2; sn++)
            printf("  %-40s %5s %10.1f %12.1f %12.0f\n", g_snaps[sn].label, "med",
                   c->p50[sn] / 1e3, c->p999[sn] / 1e3, c->bps[sn]);
    printf("  (the newest snapshot of each round with snapshots: at event");
    for (int i = 0; i < c->pairs; i++)
        printf(" %llu", c->at[i]);
    printf("; one every 10,000 events)\n");
}

static void snapshots_free(snap_cmp *c)
{
    for (int j = 0; j < 2 * c->pairs; j++)
        for (int st = 0; st < N_STAGES; st++)
            free(c->r[j].v[st]);
}

static void snapshots_goals(const snap_cmp *c)
{
    if (!c->ok) {
        printf("  [snapshots] wire-to-wire with snapshots <= 1.05 x none: NOT met (a run failed; "
               "files in %s)\n", g_dir);
        return;
    }
    printf("  [snapshots] wire-to-wire p50 with snapshots every 10,000 events <= 1.05 x none "
           "(medians of %d rounds: %.1f vs %.1f us, %.3fx): %s\n", c->pairs, c->p50[1] / 1e3,
           c->p50[0] / 1e3, c->p50[1] / c->p50[0], verdict(c->p50[1] <= 1.05 * c->p50[0]));
    printf("  [snapshots] wire-to-wire p99.9 with snapshots every 10,000 events <= 1.05 x none "
           "(medians of %d rounds: %.1f vs %.1f us, %.3fx): %s\n", c->pairs, c->p999[1] / 1e3,
           c->p999[0] / 1e3, c->p999[1] / c->p999[0], verdict(c->p999[1] <= 1.05 * c->p999[0]));
}

#define PACED_SYMS 4
#define PACED_COMBOS 2 /* per instrument: 8 instances */
/* The venue must have delivered this share of the asked rate over the
 * run (bars due but sent late catch up at once; a host that does not run
 * the venue often enough does not offer the load at all). */
#define PACED_DELIVERED_OK 0.95
/* The inbound ring: room for the most events one feed of the session's
 * 128 KiB receive buffer can make (an event needs at least 17 bytes), so
 * that a trader that keeps up never fills it. */
#define PACED_RING_SLOTS 16384
static const char *const paced_sym[PACED_SYMS] = {"AAA", "BBB", "CCC", "DDD"};
static double *g_pclose[PACED_SYMS];
static size_t g_pbars; /* bars per instrument in the files */

typedef struct paced_run {
    const char *transport;
    uint64_t rate;     /* ticks per second asked */
    uint64_t bars;     /* bars per instrument in this run */
    int ran;           /* venue and trader ran to the end, the venue's summary read */
    int kept_up, books_equal;
    uint64_t venue_bars;    /* bars sent (per instrument) */
    uint64_t trader_bars;   /* bar events the trader's sessions took */
    uint64_t strat_bars, skipped, dups;
    uint64_t spill_max, ring_max, possdup;
    uint64_t pace_held;
    double lag_max_us;
    double delivered;  /* ticks per second the trader saw over the loop */
    uint64_t orders;
    double secs;       /* the trader's wall time */
    double steal_pct;  /* the host's share of the CPU time over the run */
    char why[1024];    /* why it did not keep up */
    run lat;           /* wire-to-wire under load */
} paced_run;

static tw_trade_config *make_paced_config(const char *host, int port, const char *stack,
                                          const char *ip, const char *tag)
{
    int64_t grid[TW_GRID_DEFAULT_COMBOS * 6];
    tw_grid_default(grid);
    char ini[8192];
    int k = snprintf(ini, sizeof(ini),
                     "[engine]\nreport = %s/report_%s.json\nlog = %s/log_%s.txt\n"
                     "strategy = inline\nbusy_poll = yes\nring_slots = %d\n"
                     "[session venue]\nhost = %s\nport = %d\nsender = BENCH\ntarget = VENUE\n"
                     "store = %s/store_%s/venue\nreconnect_min_ms = 20\n",
                     g_dir, tag, g_dir, tag, PACED_RING_SLOTS, host, port, g_dir, tag);
    if (stack)
        k += snprintf(ini + k, sizeof(ini) - (size_t)k, "stack = %s\nip = %s/24\n", stack, ip);
    for (int s = 0; s < PACED_SYMS; s++) {
        k += snprintf(ini + k, sizeof(ini) - (size_t)k,
                      "[instrument %s]\nsession = venue\n[strategy s%d]\ninstrument = %s\n",
                      paced_sym[s], s, paced_sym[s]);
        for (int c = 0; c < PACED_COMBOS; c++) {
            /* The default grid's longest combos (lengths 180-200): their
             * signal turns every few hundred bars, so fills come back
             * before the next decision on either transport and the order
             * flow is the signal's, not the round trip's (a combo that
             * turns every few bars sends as fast as its open order fills,
             * one per round trip, under the open-orders rule). */
            const int64_t *w =
                grid + (size_t)(TW_GRID_DEFAULT_COMBOS - 1 - (s * PACED_COMBOS + c)) * 6;
            k += put_combo(ini + k, sizeof(ini) - (size_t)k, w);
        }
    }
    return finish_config(ini, sizeof(ini), k, tag, NULL);
}

static uint64_t bits64(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return u;
}

/* Each instance's signal books against the sweep over the first n bars of
 * its instrument; 1 when all are equal bit for bit. */
static int paced_books_equal(const tw_strategy *st, uint64_t n, char *why, size_t why_cap)
{
    for (uint32_t i = 0; i < tw_strategy_n_instances(st); i++) {
        tw_instance_stats is;
        tw_strategy_instance(st, i, &is);
        const char *sym = tw_strategy_symbol(st, is.instrument);
        int s = 0;
        while (s < PACED_SYMS && strcmp(paced_sym[s], sym))
            s++;
        if (s == PACED_SYMS || n > g_pbars)
            return 0;
        size_t nt = 0;
        tw_position open;
        double pnl = 0;
        int64_t ntr = 0;
        tw_error err = {0};
        int rc = tw_trades(g_pclose[s], (size_t)n, is.combo, TW_FEE_DEFAULT, NULL, 0, &nt, &open,
                           &pnl, &ntr, &err);
        if (rc != 0 && rc != -ENOSPC) {
            snprintf(why, why_cap, "the sweep of %s: %s", is.name, err.msg);
            return 0;
        }
        if (is.signal_trades != ntr || bits64(is.signal_pnl) != bits64(pnl) ||
            is.signal != open.side) {
            snprintf(why, why_cap, "%s: signal trades %lld pnl %.17g position %d, the sweep %lld "
                     "%.17g %d", is.name, (long long)is.signal_trades, is.signal_pnl, is.signal,
                     (long long)ntr, pnl, open.side);
            return 0;
        }
    }
    return 1;
}

/* The venue's summary line out of its output file; 0 when found. */
static int venue_summary(const char *out, uint64_t *bars, uint64_t *held, double *lag_us)
{
    FILE *f = fopen(out, "r");
    char line[2048];
    int got = 0;
    while (f && fgets(line, sizeof(line), f)) {
        unsigned long long b, t, h;
        double l;
        const char *p = strstr(line, "bars="), *q = strstr(line, "pace_lag_max_us=");
        if (p && q && sscanf(p, "bars=%llu/%llu", &b, &t) == 2 &&
            sscanf(q, "pace_lag_max_us=%lf pace_held=%llu", &l, &h) == 2) {
            *bars = b;
            *held = h;
            *lag_us = l;
            got = 1;
        }
    }
    if (f)
        fclose(f);
    return got ? 0 : -1;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

/* One paced run: the venue child at `rate` ticks/s for `bars` bars per
 * instrument, the trader in this process; fills r. */
static void paced_one(paced_run *r, int memif, uint64_t rate, uint64_t bars)
{
    memset(r, 0, sizeof(*r));
    r->transport = memif ? "memif (2 processes)" : "kernel TCP (loopback)";
    r->rate = rate;
    r->bars = bars;
    char data[2048], rate_s[32], maxb[32], out[700], tag[32];
    int k = 0;
    for (int s = 0; s < PACED_SYMS; s++)
        k += snprintf(data + k, sizeof(data) - (size_t)k, "%s%s=%s/paced_%s.f64", s ? "," : "",
                      paced_sym[s], g_dir, paced_sym[s]);
    snprintf(rate_s, sizeof(rate_s), "%llu", (unsigned long long)rate);
    snprintf(maxb, sizeof(maxb), "%llu", (unsigned long long)bars);
    static unsigned seq;
    snprintf(tag, sizeof(tag), "p%u", seq++);
    /* The venue's stores beside the trader's, under --out: on a tmpfs
     * the run leaves the disk out (its write-back throttles both sides
     * at these rates: the venue stores 400 MB of X in 10 s). */
    char vstore[700];
    snprintf(vstore, sizeof(vstore), "%s/venue_store_%s", g_dir, tag);
    char *extra[] = {(char *)"--rate", rate_s, (char *)"--max-bars", maxb, (char *)"--store",
                     vstore, NULL};
    int port = 0;
    pid_t v;
    tw_trade_config *cfg;
    char sock[600], vspec[700], tspec[700];
    if (memif) {
        snprintf(sock, sizeof(sock), "%s/memif_%s.sock", g_dir, tag);
        snprintf(vspec, sizeof(vspec), "memif:%s", sock);
        snprintf(tspec, sizeof(tspec), "memif:%s,role=client", sock);
        v = venue_spawn(NULL, "7060", vspec, data, extra, 1, out, sizeof(out), &port);
        cfg = make_paced_config(MEMIF_VENUE_IP, port, tspec, MEMIF_TRADER_IP, tag);
    } else {
        v = venue_spawn(NULL, "127.0.0.1:0", NULL, data, extra, 1, out, sizeof(out), &port);
        cfg = make_paced_config("127.0.0.1", port, NULL, NULL, tag);
    }
    if (v <= 0 || port <= 0 || !cfg) {
        snprintf(r->why, sizeof(r->why), "the venue did not start (see %s)", out);
        if (v > 0)
            child_exit(v);
        tw_trade_config_free(cfg);
        return;
    }
    tw_trade_engine *e = NULL;
    tw_error err = {0};
#ifdef TW_BENCH_LIVE_PORTS
    tw_trade_open_port_fn op = memif ? open_spec : NULL;
#else
    tw_trade_open_port_fn op = NULL;
#endif
    tw_trade_engine_opts o = {.open_port = op, .close_port = close_spec, .quiet = 1,
                              .latency_samples = 1u << 22};
    int64_t t0 = tw_clock_now_ns();
    tw__cpu_times c0, c1;
    tw__cpu_times_read(&c0);
    int rc = tw_trade_engine_create(&e, cfg, &o, &err);
    if (rc == 0)
        rc = tw_trade_engine_run(e, &err);
    tw__cpu_times_read(&c1);
    r->steal_pct = tw__steal_pct(&c0, &c1);
    r->secs = (double)(tw_clock_now_ns() - t0) * 1e-9;
    int vrc = child_exit(v);
    int vs = venue_summary(out, &r->venue_bars, &r->pace_held, &r->lag_max_us);
    if (rc != 0 || vrc != 0 || vs != 0) {
        snprintf(r->why, sizeof(r->why), "%s", rc ? err.msg : "the venue failed (see its output)");
        if (!rc)
            fprintf(stderr, "tickwire bench live: paced venue: exit %d, see %s\n", vrc, out);
    } else {
        r->ran = 1;
        tw_trade_gw_stats gs;
        tw_trade_engine_gw_stats(e, 0, &gs);
        const tw_strategy *st = tw_trade_engine_strategy(e);
        tw_strategy_counters sc;
        tw_strategy_counters_get(st, &sc);
        r->trader_bars = gs.bars;
        r->spill_max = gs.spill_max;
        r->ring_max = gs.ring_max;
        r->possdup = gs.possdup_bars_dropped;
        r->orders = gs.orders_sent;
        r->strat_bars = sc.bars;
        r->skipped = sc.skipped_bars;
        r->dups = sc.dup_bars;
        uint64_t want = r->venue_bars * PACED_SYMS;
        if (r->venue_bars != bars)
            snprintf(r->why, sizeof(r->why), "the venue sent %llu of %llu bars",
                     (unsigned long long)r->venue_bars, (unsigned long long)bars);
        else if (gs.bars != want || sc.bars != want)
            snprintf(r->why, sizeof(r->why), "the trader took %llu, the strategy %llu of %llu bars",
                     (unsigned long long)gs.bars, (unsigned long long)sc.bars,
                     (unsigned long long)want);
        else if (gs.spill_max)
            snprintf(r->why, sizeof(r->why), "the inbound ring filled (%llu events held back)",
                     (unsigned long long)gs.spill_max);
        else if (gs.possdup_bars_dropped || sc.skipped_bars || sc.dup_bars)
            snprintf(r->why, sizeof(r->why), "bars dropped (%llu), skipped (%llu), repeated (%llu)",
                     (unsigned long long)gs.possdup_bars_dropped,
                     (unsigned long long)sc.skipped_bars, (unsigned long long)sc.dup_bars);
        else if (r->pace_held)
            snprintf(r->why, sizeof(r->why), "the venue's clock waited %llu times on the "
                     "trader's backlog", (unsigned long long)r->pace_held);
        else
            r->kept_up = 1;
        r->books_equal = paced_books_equal(st, r->venue_bars, r->why[0] ? NULL : r->why,
                                           r->why[0] ? 0 : sizeof(r->why));
        r->lat.name = r->transport;
        r->lat.var = &g_var[N_VARIANTS - 1];
        if (take_samples(&r->lat, e) != 0)
            r->lat.n = 0;
        r->delivered = r->lat.n > 1 ? r->lat.loop_bps * PACED_SYMS : 0;
        if (r->kept_up && r->books_equal && r->delivered < PACED_DELIVERED_OK * (double)rate)
            snprintf(r->why, sizeof(r->why), "the venue delivered %.0f ticks/s (its latest bar "
                     "%.0f us late): the host, not the trader, held the rate",
                     r->delivered, r->lag_max_us);
    }
    tw_trade_engine_destroy(e);
    tw_trade_config_free(cfg);
    /* The stores and the journal (hundreds of MB a run) go; the logs and
     * the report stay. */
    char path[800];
    snprintf(path, sizeof(path), "%s/store_%s", g_dir, tag);
    nftw(path, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    nftw(vstore, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static int paced_ok(const paced_run *r)
{
    return r->ran && r->kept_up && r->books_equal &&
           r->delivered >= PACED_DELIVERED_OK * (double)r->rate;
}

/* The highest rate sustained, from `from` ticks/s: doubling while runs of
 * `secs` hold, then halving the step four times. */
static uint64_t paced_search(int memif, uint64_t from, double secs)
{
    uint64_t ok = 0, bad = 0, r = from;
    for (int t = 0; t < 16; t++) {
        uint64_t bars = (uint64_t)((double)r / PACED_SYMS * secs);
        if (bars < 100)
            bars = 100;
        if (bars > g_pbars)
            bars = g_pbars;
        paced_run p;
        paced_one(&p, memif, r, bars);
        int good = paced_ok(&p);
        printf("    %-24s %9llu ticks/s: %s%s%s (ring max %llu, venue lag %.0f us, "
               "wire-to-wire p99.9 %.1f us, host steal %.1f%%)\n", p.transport,
               (unsigned long long)r, good ? "sustained" : "NOT sustained", good ? "" : ": ",
               good ? "" : p.why, (unsigned long long)p.ring_max, p.lag_max_us,
               p.lat.n ? p.lat.p999[5] / 1e3 : NAN, p.steal_pct);
        for (int s = 0; s < N_STAGES; s++)
            free(p.lat.v[s]);
        fflush(stdout);
        if (good)
            ok = r;
        else
            bad = r;
        if (!bad)
            r *= 2;
        else if (!ok)
            r /= 2;
        else if (bad - ok <= ok / 16 || t >= 12)
            break;
        else
            r = ok + (bad - ok) / 2;
        if (r < from / 64 || r < 1000 || r > 8000000)
            break;
    }
    return ok;
}

static void paced_print(const paced_run *r)
{
    printf("  %-22s %9llu %9.0f %8llu %9llu %6llu %5llu %7llu %9.1f %5llu %8llu %5s",
           r->transport, (unsigned long long)r->rate, r->delivered,
           (unsigned long long)r->venue_bars,
           (unsigned long long)r->trader_bars, (unsigned long long)r->ring_max,
           (unsigned long long)r->spill_max,
           (unsigned long long)(r->possdup + r->skipped + r->dups), r->lag_max_us,
           (unsigned long long)r->pace_held, (unsigned long long)r->orders,
           r->books_equal ? "equal" : "DIFF");
    if (r->lat.n)
        printf(" %7.1f %7.1f %7.1f %8zu", r->lat.p50[5] / 1e3, r->lat.p99[5] / 1e3,
               r->lat.p999[5] / 1e3, r->lat.n);
    else
        printf(" %7s %7s %7s %8s", "-", "-", "-", "-");
    printf(" %6.1f\n", r->steal_pct);
    if (r->why[0])
        printf("    %s\n", r->why);
}

static void paced_goals(const paced_run *r, int p999_goal)
{
    printf("  [%s, %llu ticks/s]\n", r->transport, (unsigned long long)r->rate);
    printf("    the trader keeps up (every bar processed, ring max %llu of %d, no overflow, "
           "none dropped, the venue's clock never held; %.0f ticks/s delivered): %s\n",
           (unsigned long long)r->ring_max, PACED_RING_SLOTS, r->delivered,
           verdict(paced_ok(r)));
    printf("    signal books equal the sweep over the %llu bars sent, bit for bit: %s\n",
           (unsigned long long)r->venue_bars, verdict(r->ran && r->books_equal));
    if (p999_goal)
        printf("    wire-to-wire p99.9 under load <= 20 us (%.1f us): %s\n",
               r->lat.n ? r->lat.p999[5] / 1e3 : NAN,
               verdict(r->lat.n && r->lat.p999[5] <= 20000));
}

static int paced_main(const char *out, uint64_t rate, double secs, double search_secs,
                      int search)
{
    uint64_t bars = (uint64_t)((double)rate / PACED_SYMS * secs);
    if (bars < 100)
        bars = 100;
    /* The files hold the main run and the search's longest probe (8 M ticks/s). */
    uint64_t most = (uint64_t)(8e6 / PACED_SYMS * search_secs);
    g_pbars = bars > most ? bars : most;
    char path[700];
    tw_error err = {0};
    for (int s = 0; s < PACED_SYMS; s++) {
        g_pclose[s] = malloc(g_pbars * sizeof(double));
        if (!g_pclose[s])
            return 1;
        tw_gen_closes(g_pclose[s], g_pbars, 42 + (uint64_t)s, 0.0008);
        snprintf(path, sizeof(path), "%s/paced_%s.f64", g_dir, paced_sym[s]);
        if (tw_write_closes(path, g_pclose[s], g_pbars, &err) != 0) {
            fprintf(stderr, "tickwire bench live: %s\n", err.msg);
            return 1;
        }
    }
    int memif = 0;
#ifdef TW_BENCH_LIVE_PORTS
    memif = geteuid() == 0;
#endif
    double la0[3];
    host_before(la0);
    printf("tickwire bench live --paced: %llu ticks/s over %d instruments (%.0f bars/s each), "
           "%d instances, %.1f s (%llu bars each); venue --rate --busy, trader strategy = "
           "inline, busy_poll = yes; ISA %s; TSC %.3f GHz; load average %.2f\n",
           (unsigned long long)rate, PACED_SYMS, (double)rate / PACED_SYMS,
           PACED_SYMS * PACED_COMBOS, secs, (unsigned long long)bars, bench_isa(),
           tw_tsc_default()->hz * 1e-9, la0[0]);
    fflush(stdout);
    paced_run pm, pk;
    memset(&pm, 0, sizeof(pm));
    if (memif)
        paced_one(&pm, 1, rate, bars);
    paced_one(&pk, 0, rate, bars);
    printf("\n  %-22s %9s %9s %8s %9s %6s %5s %7s %9s %5s %8s %5s %7s %7s %7s %8s %6s\n",
           "transport", "ticks/s", "delivered", "bars", "taken", "ring", "spill", "dropped", "lag us", "held", "orders",
           "books", "p50 us", "p99", "p99.9", "samples", "steal%");
    if (memif)
        paced_print(&pm);
    paced_print(&pk);
    printf("  (delivered: ticks/s the trader saw from its first order-causing bar to its "
           "last; bars: per instrument, sent by the venue; taken: bar events the trader took, all "
           "instruments; ring: its inbound ring's most events; lag: the venue's latest bar; "
           "held: turns its clock waited on the trader; p50..p99.9: wire-to-wire inside the "
           "trader, rx to tx, of the bars that caused orders; steal%%: the host's share of the "
           "CPU time over the run)\n");
    uint64_t best_m = 0, best_k = 0;
    if (search) {
        printf("\nthe highest rate sustained (runs of %.1f s: doubling, then bisecting):\n",
               search_secs);
        if (memif)
            best_m = paced_search(1, rate, search_secs);
        best_k = paced_search(0, rate, search_secs);
        if (memif)
            printf("  memif: %llu ticks/s\n", (unsigned long long)best_m);
        printf("  kernel TCP: %llu ticks/s\n", (unsigned long long)best_k);
    }
    printf("\ngoals (paced); ");
    host_after(la0);
    printf(":\n");
    if (memif)
        paced_goals(&pm, 1);
    else
        printf("  [memif]: not measured (needs root and a build with DPDK)\n");
    paced_goals(&pk, 0);
    if (search && memif)
        printf("    memif sustains %llu ticks/s (>= 500,000: %s)\n", (unsigned long long)best_m,
               verdict(best_m >= 500000));
    (void)out;
    for (int s = 0; s < N_STAGES; s++) {
        free(pm.lat.v[s]);
        free(pk.lat.v[s]);
    }
    for (int s = 0; s < PACED_SYMS; s++)
        free(g_pclose[s]);
    /* The run must have happened and decided what the sweep decides;
     * keeping up is a goal, judged above. */
    int bad = (memif && !(pm.ran && pm.books_equal)) || !(pk.ran && pk.books_equal);
    if (bad)
        fprintf(stderr, "tickwire bench live: a paced run failed or its books differ from the "
                        "sweep; files in %s\n", g_dir);
    return bad ? 1 : 0;
}

int tw__cli_bench_live(int argc, char **argv)
{
    const char *out = "bench-live-out";
    g_bars = 20000;
    int paced = 0, search = 1, snaps_only = 0, pairs = 0;
    double secs = 10, search_secs = 2, rate = 500000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            g_bars = 2000;
        else if (!strcmp(argv[i], "--paced"))
            paced = 1;
        else if (!strcmp(argv[i], "--no-search"))
            search = 0;
        else if (!strcmp(argv[i], "--rate") && i + 1 < argc)
            rate = atof(argv[++i]);
        else if (!strcmp(argv[i], "--secs") && i + 1 < argc)
            secs = atof(argv[++i]);
        else if (!strcmp(argv[i], "--search-secs") && i + 1 < argc)
            search_secs = atof(argv[++i]);
        else if (!strcmp(argv[i], "--busy"))
            g_busy = 1;
        else if (!strcmp(argv[i], "--snapshots"))
            snaps_only = 1;
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            pairs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bars") && i + 1 < argc)
            g_bars = (size_t)atoll(argv[++i]);
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else {
            fprintf(stderr, "usage: tickwire bench live [--bars N] [--quick] [--busy] [--out DIR]\n"
                            "       tickwire bench live --snapshots [--rounds N] [--bars N] [--out DIR]\n"
                            "       tickwire bench live --paced [--rate TICKS_PER_S] [--secs S]\n"
                            "                               [--search-secs S] [--no-search] [--out DIR]\n");
            return !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") ? 0 : 2;
        }
    }
    if (paced && (!(rate >= 1000 && rate <= 64e6) || !(secs >= 0.1 && secs <= 600) ||
                  !(search_secs >= 0.1 && search_secs <= 60))) {
        fprintf(stderr, "tickwire bench live: --rate 1000 .. 64e6, --secs 0.1 .. 600, "
                        "--search-secs 0.1 .. 60\n");
        return 2;
    }
    if (pairs == 0)
        pairs = snaps_only ? 6 : 2;
    if (pairs < 1 || pairs > SNAP_PAIRS_MAX) {
        fprintf(stderr, "tickwire bench live: --rounds: 1 .. %d\n", SNAP_PAIRS_MAX);
        return 2;
    }
    if (g_bars < 100 || g_bars > 10000000) {
        fprintf(stderr, "tickwire bench live: --bars: 100 .. 10000000\n");
        return 2;
    }
    if (g_busy) {
        g_var[0].label = "strategy = thread, busy_poll = yes";
        g_var[0].inl = 0;
        g_var[0].busy = 1;
    } else {
        /* What auto chooses here, in the label (and for this loop's yields). */
        static char label[320];
        snprintf(g_dir, sizeof(g_dir), "%s", out);
        tw_trade_config *c = make_config("127.0.0.1", 1, NULL, NULL, "auto", &g_var[0]);
        if (c) {
            g_var[0].busy = c->engine.busy_poll;
            snprintf(label, sizeof(label), "no engine options (auto: %s, busy_poll = %s)",
                     c->engine.strategy == TW_TRADE_STRATEGY_INLINE ? "inline" : "thread",
                     c->engine.busy_poll ? "yes" : "no");
            printf("engine default here: %s\n", c->engine.auto_why);
            g_var[0].label = label;
            tw_trade_config_free(c);
        }
    }
    ssize_t sl = readlink("/proc/self/exe", g_self, sizeof(g_self) - 1);
    if (sl <= 0) {
        fprintf(stderr, "tickwire bench live: cannot find this program\n");
        return 1;
    }
    g_self[sl] = 0;
    signal(SIGPIPE, SIG_IGN);
    mkdir(out, 0755);
    snprintf(g_dir, sizeof(g_dir), "%s/run-%d", out, (int)getpid());
    if (mkdir(g_dir, 0755) != 0) {
        fprintf(stderr, "tickwire bench live: %s: %s\n", g_dir, strerror(errno));
        return 1;
    }
    if (paced)
        return paced_main(out, (uint64_t)rate, secs, search_secs, search);
    g_close = malloc(g_bars * sizeof(double));
    tw_gen_closes(g_close, g_bars, 42, 0.0008);
    char path[700];
    snprintf(path, sizeof(path), "%s/bars.f64", g_dir);
    tw_error err;
    if (!g_close || tw_write_closes(path, g_close, g_bars, &err) != 0) {
        fprintf(stderr, "tickwire bench live: %s\n", err.msg);
        return 1;
    }
    double la0[3];
    host_before(la0);
    if (snaps_only) {
        printf("tickwire bench live --snapshots: %zu bars, 4 default-grid combos, lockstep; ISA "
               "%s; load average %.2f\n", g_bars, bench_isa(), la0[0]);
        snap_cmp *sc = malloc(sizeof(*sc));
        if (!sc)
            return 1;
        snapshots_rounds(sc, pairs);
        snapshots_print(sc);
        printf("\ngoals; ");
        host_after(la0);
        printf(":\n");
        snapshots_goals(sc);
        int ok = sc->ok;
        snapshots_free(sc);
        free(sc);
        return ok ? 0 : 1;
    }
    printf("tickwire bench live: %zu bars, 4 default-grid combos, lockstep; %d engine "
           "configurations per transport, in turn; ISA %s; TSC %.3f GHz; load average %.2f\n",
           g_bars, N_VARIANTS, bench_isa(), tw_tsc_default()->hz * 1e-9, la0[0]);
    for (int j = 0; j < N_VARIANTS; j++)
        printf("  configuration %d: %s\n", j + 1, g_var[j].label);
    run k[N_VARIANTS], u[N_VARIANTS];
    memset(k, 0, sizeof(k));
    memset(u, 0, sizeof(u));
    char tag[16];
#ifdef TW_BENCH_QF_PAIR
    /* The QuickFIX pair runs before the rest and after it, and its figure
     * is the mean of the two: the yardstick of the throughput ratios
     * brackets what they compare in time (a yielding pair's speed follows
     * this VM's wake-up cost, which moves 2x from one minute to the next). */
    qf_run q0 = {0};
    q0.ok = run_qf(&q0) == 0;
#endif
    /* Kernel sockets, each configuration against a venue child of its own. */
    for (int j = 0; j < N_VARIANTS; j++) {
        k[j].name = "kernel sockets (loopback)";
        k[j].var = &g_var[j];
        int port;
        pid_t v = venue_child(NULL, "127.0.0.1:0", &port);
        snprintf(tag, sizeof(tag), "k%d", j);
        k[j].ok = v > 0 && port > 0 &&
                  run_threaded(&k[j], "127.0.0.1", port, NULL, NULL, NULL, tag) == 0;
        if (v > 0 && child_exit(v) != 0)
            k[j].ok = 0;
    }
    /* mode = processes against mode = threads in one configuration
     * (strategy = thread, yielding, a journal each), kernel sockets,
     * alternating rounds: threads, processes, threads, processes. */
    static variant modes[2] = {
        {"mode = threads (strategy = thread, yielding, journal)", 0, 0, -1, 0},
        {"mode = processes (strategy process, yielding, journal)", 0, 0, 1, 0},
    };
    run pm[4];
    memset(pm, 0, sizeof(pm));
    for (int j = 0; j < 4; j++) {
        pm[j].name = "kernel sockets (loopback)";
        snprintf(tag, sizeof(tag), "md%d", j);
        kernel_round(&pm[j], &modes[j % 2], tag);
    }
    static snap_cmp sc;
    snapshots_rounds(&sc, pairs);
    /* The userspace stack: veth AF_XDP when root, else the sim network. */
    int veth = 0;
#ifdef TW_BENCH_LIVE_PORTS
    tw__netenv e;
    if (geteuid() == 0 && tw__netenv_setup(&e, 1) == 0) {
        veth = 1;
        for (int j = 0; j < N_VARIANTS; j++) {
            u[j].name = "userspace stack (veth, AF_XDP)";
            u[j].var = &g_var[j];
            int port;
            char listen[64], spec[64];
            snprintf(listen, sizeof(listen), TW_NETENV_PEER_IP ":%d", 7030 + j);
            pid_t v = venue_child(&e, listen, &port);
            snprintf(spec, sizeof(spec), "af_xdp:%s", e.host);
            snprintf(tag, sizeof(tag), "v%d", j);
            u[j].ok = v > 0 && port > 0 &&
                      run_threaded(&u[j], TW_NETENV_PEER_IP, port, spec, TW_NETENV_STACK_IP,
                                   open_spec, tag) == 0;
            if (v > 0 && child_exit(v) != 0)
                u[j].ok = 0;
        }
        tw__netenv_teardown(&e);
    }
#endif
    /* memif: the venue on the userspace stack in its process, the trader
     * in this one, joined by shared memory; each one busy-polling loop
     * (the last configuration: inline, busy_poll = yes). */
    run m;
    memset(&m, 0, sizeof(m));
    m.name = "userspace stack (memif, 2 processes)";
    m.var = &g_var[N_VARIANTS - 1];
    int memif = 0;
#ifdef TW_BENCH_LIVE_PORTS
    if (geteuid() == 0) {
        char sock[600], vspec[700], tspec[700];
        snprintf(sock, sizeof(sock), "%s/memif.sock", g_dir);
        snprintf(vspec, sizeof(vspec), "memif:%s", sock);
        snprintf(tspec, sizeof(tspec), "memif:%s,role=client", sock);
        int port;
        pid_t v = venue_child_on(NULL, "7050", vspec, &port);
        memif = 1;
        m.ok = v > 0 && port > 0 &&
               run_threaded(&m, MEMIF_VENUE_IP, port, tspec, MEMIF_TRADER_IP, open_spec, "m") == 0;
        if (v > 0 && child_exit(v) != 0)
            m.ok = 0;
        if (!m.ok)
            fprintf(stderr, "tickwire bench live: the memif run failed; files in %s\n", g_dir);
    }
#endif
    if (!veth)
        for (int j = 0; j < N_VARIANTS; j++) {
            u[j].name = "userspace stack (sim network)";
            u[j].var = &g_var[j];
            snprintf(tag, sizeof(tag), "s%d", j);
            u[j].ok = run_sim(&u[j], tag) == 0;
        }
    /* The QuickFIX pair on the same bars. */
#ifdef TW_BENCH_QF_PAIR
    qf_run q1 = {0};
    q1.ok = run_qf(&q1) == 0;
#endif
    alone a = {0};
    int a_ok = stages_alone(&a) == 0;
    int all_ok = a_ok;
    for (int j = 0; j < N_VARIANTS; j++) {
        if (!k[j].ok || !u[j].ok) {
            fprintf(stderr, "tickwire bench live: a run failed (%s%s%s); files in %s\n",
                    k[j].ok ? "" : "kernel sockets ", u[j].ok ? "" : "userspace stack ",
                    g_var[j].label, g_dir);
            all_ok = 0;
        }
    }
    if (!all_ok) {
        if (!a_ok)
            fprintf(stderr, "tickwire bench live: the stages alone failed\n");
        return 1;
    }
    for (int j = 0; j < N_VARIANTS; j++) {
        print_run(&k[j]);
        print_run(&u[j]);
    }
    if (m.ok)
        print_run(&m);
    stack_alone_ns sa = {0};
    int sa_ok = stack_alone(&sa) == 0;
    double sum = a.strategy_ns + a.parse_ns + a.build_ns + 2 * a.ring_ns;
    printf("\nstages alone (ns, median): strategy on one bar %.0f, FIX parse of the X %.0f, FIX "
           "build of the order %.0f, ring enqueue+dequeue %.0f (x2); sum %.0f\n",
           a.strategy_ns, a.parse_ns, a.build_ns, a.ring_ns, sum);
    const run *all[2 * N_VARIANTS];
    for (int j = 0; j < N_VARIANTS; j++) {
        all[2 * j] = &k[j];
        all[2 * j + 1] = &u[j];
    }
    char png[700];
    snprintf(png, sizeof(png), "%s/wire_to_wire.png", out);
    picture(all, 2 * N_VARIANTS, png);
#ifdef TW_BENCH_QF_PAIR
    if (!q0.ok || !q1.ok) {
        fprintf(stderr, "tickwire bench live: the QuickFIX pair failed; files in %s\n", g_dir);
        return 1;
    }
    double qf_bps0 = (double)q0.bars / q0.loop_s, qf_bps1 = (double)q1.bars / q1.loop_s;
    double qf_bps = (qf_bps0 + qf_bps1) / 2;
    const qf_run *qq = &q1;
#endif
    /* One table of every run, the stack's next to the kernel's. */
    printf("\nsummary (wire-to-wire in us; x stages: its p50 over the stages alone, %.0f ns):\n",
           sum);
    printf("  %-40s %-32s %9s %7s %7s %7s %9s %9s\n", "configuration", "transport", "loop b/s",
           "p50", "p99", "p99.9", "p99.9/p50", "x stages");
    for (int j = 0; j < 2 * N_VARIANTS; j++) {
        const run *r = all[j];
        printf("  %-40s %-32s %9.0f %7.1f %7.1f %7.1f %9.2f %9.1f\n", r->var->label, r->name,
               r->loop_bps, r->p50[5] / 1e3, r->p99[5] / 1e3, r->p999[5] / 1e3,
               r->p999[5] / r->p50[5], r->p50[5] / sum);
    }
    if (m.ok)
        printf("  %-40s %-32s %9.0f %7.1f %7.1f %7.1f %9.2f %9.1f\n", m.var->label, m.name,
               m.loop_bps, m.p50[5] / 1e3, m.p99[5] / 1e3, m.p999[5] / 1e3,
               m.p999[5] / m.p50[5], m.p50[5] / sum);
#ifdef TW_BENCH_QF_PAIR
    printf("  %-40s %-32s %9.0f   (%ld orders; tickwire %llu)\n", "QuickFIX venue + trader",
           "kernel sockets (loopback)", qf_bps, qq->orders, (unsigned long long)k[0].orders);
#endif
    printf("\nthroughput, lockstep over kernel TCP on loopback, %zu bars:\n", g_bars);
    printf("  %-64s %12s %12s %8s\n", "", "loop bars/s", "run bars/s", "orders");
    for (int j = 0; j < N_VARIANTS; j++) {
        char what[160];
        snprintf(what, sizeof(what), "tickwire exchange + trade, %s", g_var[j].label);
        printf("  %-64s %12.0f %12.0f %8llu\n", what, k[j].loop_bps,
               (double)k[j].bars / k[j].secs, (unsigned long long)k[j].orders);
    }
#ifdef TW_BENCH_QF_PAIR
    printf("  %-64s %12.0f %12.0f %8ld\n", "QuickFIX venue + QuickFIX trader (qf_pair), the mean",
           qf_bps, 2.0 * (double)qq->bars / (q0.wall_s + q1.wall_s), qq->orders);
    printf("  %-64s %12.0f %12.0f\n", "  its run before the others / after them", qf_bps0,
           qf_bps1);
#endif
    double mode_bps[2] = {0, 0};
    int modes_ok = pm[0].ok && pm[1].ok && pm[2].ok && pm[3].ok;
    printf("\nprocesses vs threads, lockstep over kernel TCP on loopback, %zu bars, rounds "
           "alternating (ABAB):\n", g_bars);
    printf("  %-58s %12s %12s %12s %9s\n", "", "round 1", "round 2", "mean b/s", "p50 us");
    for (int md = 0; md < 2; md++) {
        const run *a1 = &pm[md], *a2 = &pm[md + 2];
        mode_bps[md] = (a1->loop_bps + a2->loop_bps) / 2;
        printf("  %-58s %12.0f %12.0f %12.0f %9.1f\n", modes[md].label, a1->loop_bps,
               a2->loop_bps, mode_bps[md], (a1->p50[5] + a2->p50[5]) / 2e3);
    }
    snapshots_print(&sc);
    printf("\ngoals (latency budget), per configuration; ");
    host_after(la0);
    printf(":\n");
    snapshots_goals(&sc);
    if (modes_ok)
        printf("  [modes] processes mode lockstep throughput >= 0.8 x threads mode's (%.0f vs "
               "%.0f bars/s, %.2fx): %s\n", mode_bps[1], mode_bps[0], mode_bps[1] / mode_bps[0],
               verdict(mode_bps[1] >= 0.8 * mode_bps[0]));
    else
        printf("  [modes] processes mode lockstep throughput >= 0.8 x threads mode's: NOT met "
               "(a run failed; files in %s)\n", g_dir);
    for (int j = 0; j < N_VARIANTS; j++) {
        const run *kk = &k[j], *uu = &u[j];
        const char *lb = g_var[j].label;
        printf("  [%s]\n", lb);
        printf("    stack wire-to-wire p50 lower than kernel sockets (%.0f vs %.0f ns): %s\n",
               uu->p50[5], kk->p50[5], verdict(uu->p50[5] < kk->p50[5]));
        printf("    stack wire-to-wire p99.9 lower than kernel sockets (%.0f vs %.0f ns): %s\n",
               uu->p999[5], kk->p999[5], verdict(uu->p999[5] < kk->p999[5]));
        printf("    stack p99.9/p50 <= 3 (%s: %.2f): %s\n", uu->name, uu->p999[5] / uu->p50[5],
               verdict(uu->p999[5] / uu->p50[5] <= 3));
        printf("    median wire-to-wire <= 1.5 x the stages alone (%s: %.0f vs 1.5 x %.0f ns, "
               "%.1fx): %s\n", uu->name, uu->p50[5], sum, uu->p50[5] / sum,
               verdict(uu->p50[5] <= 1.5 * sum));
#ifdef TW_BENCH_QF_PAIR
        printf("    lockstep bars/s over kernel TCP >= 5 x a QuickFIX venue + trader pair (%.0f vs "
               "%.0f, %.2fx): %s\n", kk->loop_bps, qf_bps, kk->loop_bps / qf_bps,
               verdict(kk->loop_bps >= 5 * qf_bps));
#else
        printf("    lockstep bars/s over kernel TCP >= 5 x a QuickFIX venue + trader pair: not "
               "measured (%.0f bars/s here; QuickFIX not found at build time)\n", kk->loop_bps);
#endif
    }
    if (memif && m.ok)
        memif_stages(&m, &a, sa_ok ? &sa : NULL);
    if (memif && m.ok) {
        /* The memif row against the same engine on kernel sockets. */
        const run *kk = &k[N_VARIANTS - 1];
        printf("  [memif: %s, venue and trader each one busy-polling loop]\n", m.var->label);
        printf("    wire-to-wire p50 <= 1.5 x the stages alone (%.0f vs 1.5 x %.0f ns, %.1fx): "
               "%s\n", m.p50[5], sum, m.p50[5] / sum, verdict(m.p50[5] <= 1.5 * sum));
        printf("    p99.9/p50 <= 3 (%.2f): %s\n", m.p999[5] / m.p50[5],
               verdict(m.p999[5] / m.p50[5] <= 3));
        printf("    p50 <= 1/5 of kernel sockets (%.0f vs %.0f ns, %.2fx): %s\n", m.p50[5],
               kk->p50[5], m.p50[5] / kk->p50[5], verdict(m.p50[5] * 5 <= kk->p50[5]));
        printf("    p99.9 <= 1/5 of kernel sockets (%.0f vs %.0f ns, %.2fx): %s\n", m.p999[5],
               kk->p999[5], m.p999[5] / kk->p999[5], verdict(m.p999[5] * 5 <= kk->p999[5]));
#ifdef TW_BENCH_QF_PAIR
        printf("    lockstep bars/s >= 10 x a QuickFIX venue + trader pair (%.0f vs %.0f, %.2fx): "
               "%s\n", m.loop_bps, qf_bps, m.loop_bps / qf_bps, verdict(m.loop_bps >= 10 * qf_bps));
#endif
    } else if (memif) {
        printf("  [memif]: NOT met (the run failed; files in %s)\n", g_dir);
    } else {
        printf("  [memif]: not measured (needs root and a build with DPDK)\n");
    }
    for (int j = 0; j < N_VARIANTS; j++)
        for (int s = 0; s < N_STAGES; s++) {
            free(k[j].v[s]);
            free(u[j].v[s]);
        }
    for (int s = 0; s < N_STAGES; s++) {
        free(m.v[s]);
        for (int j = 0; j < 4; j++)
            free(pm[j].v[s]);
    }
    snapshots_free(&sc);
    free(g_close);
    return 0;
}
