/* `tickwire trade --config FILE`: the INI parser (src/trade/config.c).
 *
 * Valid files give the values they say (the documented example exactly, every
 * optional key, grids, CRLF, BOM, forward references); every kind of bad
 * file fails with "NAME:LINE: what" at the right line, from a table; every
 * truncation of a valid file parses or fails cleanly; files are read from
 * disk with the path in the message. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tickwire/trade.h"
#include "tw_check.h"

/* The documented example, key for key. */
static const char example[] =
    "[engine]\n"
    "report = trade-report.json      ; JSON report, written at the end (and on SIGTERM)\n"
    "trades = trades.csv             ; optional: every closed trade of every instance\n"
    "fee = 0.09\n"
    "[session venue]                 ; one section per venue connection\n"
    "host = 127.0.0.1\n"
    "port = 9878\n"
    "sender = TRADER\n"
    "target = VENUE\n"
    "store = store/venue             ; the session's crash-safe store\n"
    "stack = af_xdp:tw0              ; optional; kernel TCP when absent (also af_packet:IF, dpdk:VDEV)\n"
    "ip = 10.77.0.2                  ; with stack\n"
    "[instrument AAA]\n"
    "session = venue\n"
    "[strategy s1]                   ; any number of strategy sections\n"
    "instrument = AAA\n"
    "combo = 3,6,2,1,2,3             ; repeatable; or: grid = default\n"
    "[risk]\n"
    "max_position = 100              ; per instrument, units\n"
    "max_total_position = 1000\n"
    "max_orders_per_s = 100000\n"
    "max_loss = 1e9                  ; realised, percentage points, per instance and in total\n";

static tw_trade_config *parse(const char *text, tw_error *err, int *rc)
{
    tw_trade_config *c = NULL;
    *rc = tw_trade_config_parse(text, strlen(text), "t.ini", &c, err);
    return c;
}

static void test_example(void)
{
    tw_error err = { 0 };
    int rc;
    tw_trade_config *c = parse(example, &err, &rc);
    CHECKF(rc == 0, "%s", err.msg);
    REQUIRE(c);
    CHECK(!strcmp(c->engine.report, "trade-report.json"));
    CHECK(!strcmp(c->engine.trades, "trades.csv"));
    CHECK(c->engine.fee == 0.09);
    /* No strategy or busy_poll given: both auto, chosen and explained. */
    CHECK(c->engine.mode == TW_TRADE_THREADS && c->engine.strategy_auto && c->engine.busy_auto);
    CHECK(c->engine.strategy == TW_TRADE_STRATEGY_INLINE); /* one session */
    CHECK(strstr(c->engine.auto_why, "strategy = inline (auto: one session") != NULL);
    CHECK(c->engine.ring_slots == 4096 && c->engine.n_cpus == 0);
    CHECK(c->engine.snapshot_every == 50000 && c->engine.snapshot_interval_ms == 0 &&
          c->engine.snapshot_keep == 2);
    CHECK(c->engine.journal_segment_bytes == 64ull << 20 && !c->engine.journal_keep_all);
    CHECK_EQ(c->n_sessions, 1);
    const tw_trade_session_cfg *se = &c->sessions[0];
    CHECK(!strcmp(se->name, "venue") && !strcmp(se->host, "127.0.0.1") && se->port == 9878);
    CHECK(!strcmp(se->sender, "TRADER") && !strcmp(se->target, "VENUE"));
    CHECK(!strcmp(se->store, "store/venue"));
    CHECK(se->stack == TW_STACK_AF_XDP && !strcmp(se->stack_spec, "af_xdp:tw0"));
    CHECK(!strcmp(se->ip, "10.77.0.2") && se->ip4 == 0x0a4d0002u && se->prefix == 24);
    CHECK(se->heartbeat_s == 30 && se->reconnect_min_ms == 100 && se->reconnect_max_ms == 5000);
    CHECK_EQ(se->line, 5);
    CHECK_EQ(c->n_instruments, 1);
    CHECK(!strcmp(c->instruments[0].symbol, "AAA") && c->instruments[0].session == 0);
    CHECK_EQ(c->n_strategies, 1);
    CHECK(!strcmp(c->strategies[0].name, "s1") && c->strategies[0].n_instances == 1);
    CHECK_EQ(c->n_instances, 1);
    static const int64_t want[6] = { 3, 6, 2, 1, 2, 3 };
    CHECK(!memcmp(c->instances[0].combo, want, sizeof(want)));
    CHECK(!strcmp(c->instances[0].name, "s1.0") && c->instances[0].instrument == 0);
    CHECK_EQ(c->risk.max_position, 100);
    CHECK_EQ(c->risk.max_total_position, 1000);
    CHECK_EQ(c->risk.max_orders_per_s, 100000);
    CHECK_EQ(c->risk.max_session_orders_per_s, 100000);
    CHECK(c->risk.max_instance_loss == 1e9 && c->risk.max_total_loss == 1e9);
    CHECK(c->risk.on_loss == TW_TRADING_REDUCING && c->risk.max_open_orders == 4);

    /* The strategy takes it as it is. */
    tw_strategy_cfg sc;
    tw_trade_config_strategy(c, &sc);
    CHECK(sc.n_instances == 1 && sc.n_sessions == 1 && sc.fee == 0.09);
    size_t bytes = tw_strategy_memsize(&sc);
    CHECK(bytes > 0);
    void *mem = aligned_alloc(64, bytes);
    tw_strategy *s = tw_strategy_init(mem, bytes, &sc, &err);
    CHECKF(s != NULL, "%s", err.msg);
    if (s)
        CHECK(!strcmp(tw_strategy_symbol(s, 0), "AAA"));
    free(mem);
    tw_trade_config_free(c);
}

static const char full[] =
    "\xEF\xBB\xBF# every key there is\r\n"
    "[instrument BBB]\r\n" /* before its session: names resolve at the end */
    "session = b\r\n"
    "[engine]\r\n"
    "report = r.json\r\n"
    "trades = t.csv\r\n"
    "log = trade.log\r\n"
    "journal = j.bin\r\n"
    "fee = 0\r\n"
    "mode = processes\r\n"
    "busy_poll = yes\r\n"
    "ring_slots = 1024\r\n"
    "snapshot_every = 300\r\n"
    "snapshot_interval_ms = 250\r\n"
    "snapshot_keep = 3\r\n"
    "journal_segment_bytes = 1048576\r\n"
    "journal_keep = all\r\n"
    "cpus = 3, 0-1\r\n"
    "[session a]\r\n"
    "host = venue.example\r\n"
    "port = 1\r\n"
    "sender = S1\r\n"
    "target = T1\r\n"
    "store = /tmp/store a\r\n"
    "heartbeat = 5\r\n"
    "reconnect_min_ms = 10\r\n"
    "reconnect_max_ms = 10\r\n"
    "connect_timeout_ms = 99\r\n"
    "max_orders_per_s = 7\r\n"
    "[session b]\r\n"
    "host = 10.0.0.1\r\n"
    "port = 65535\r\n"
    "sender = S2\r\n"
    "target = T2\r\n"
    "store = s2\r\n"
    "stack = dpdk:0:-l 0 --no-huge --vdev=net_af_packet0,iface=tw0\r\n"
    "ip = 10.0.0.2/16\r\n"
    "gateway = 10.0.0.254\r\n"
    "pcap = b.pcapng\r\n"
    "[instrument AAA]\r\n"
    "session = a\r\n"
    "; a comment line\r\n"
    "[strategy grid]\r\n"
    "instrument = AAA\r\n"
    "grid = default\r\n"
    "length = 401\r\n"
    "combo = 100000, 1, 1, 1, 1, 100000\r\n"
    "[strategy odd]\r\n"
    "instrument = BBB\r\n"
    "combo = 397,400,19,45,67,133\r\n"
    "[risk]\r\n"
    "max_position = 0\r\n"
    "max_total_position = 2147483647\r\n"
    "max_orders_per_s = 1000000000\r\n"
    "max_session_orders_per_s = 50\r\n"
    "max_loss = 12.5\r\n"
    "max_instance_loss = 1.5\r\n"
    "on_loss = halted\r\n"
    "max_open_orders = 64\r\n";

static void test_full(void)
{
    tw_error err = { 0 };
    int rc;
    tw_trade_config *c = parse(full, &err, &rc);
    CHECKF(rc == 0, "%s", err.msg);
    REQUIRE(c);
    const tw_trade_engine_cfg *e = &c->engine;
    CHECK(!strcmp(e->report, "r.json") && !strcmp(e->log, "trade.log") &&
          !strcmp(e->journal, "j.bin"));
    CHECK(e->fee == 0.0 && e->mode == TW_TRADE_PROCESSES && e->busy_poll == 1);
    CHECK(e->ring_slots == 1024 && e->n_cpus == 3 && e->cpus[0] == 3 && e->cpus[1] == 0 &&
          e->cpus[2] == 1);
    CHECK(e->snapshot_every == 300 && e->snapshot_interval_ms == 250 && e->snapshot_keep == 3);
    CHECK(e->journal_segment_bytes == 1048576 && e->journal_keep_all);
    CHECK_EQ(c->n_sessions, 2);
    const tw_trade_session_cfg *a = &c->sessions[0], *b = &c->sessions[1];
    CHECK(!strcmp(a->host, "venue.example") && a->port == 1 && a->stack == TW_STACK_KERNEL);
    CHECK(!strcmp(a->store, "/tmp/store a")); /* paths keep inner blanks */
    CHECK(a->heartbeat_s == 5 && a->reconnect_min_ms == 10 && a->reconnect_max_ms == 10 &&
          a->connect_timeout_ms == 99 && a->max_orders_per_s == 7);
    CHECK(!strcmp(b->stack_spec, "dpdk:0:-l 0 --no-huge --vdev=net_af_packet0,iface=tw0"));
    CHECK(b->port == 65535 && b->stack == TW_STACK_DPDK && b->ip4 == 0x0a000002u &&
          b->prefix == 16 && b->gateway4 == 0x0a0000feu && !strcmp(b->pcap, "b.pcapng"));
    CHECK_EQ(c->n_instruments, 2);
    CHECK(!strcmp(c->instruments[0].symbol, "BBB") && c->instruments[0].session == 1);
    CHECK(!strcmp(c->instruments[1].symbol, "AAA") && c->instruments[1].session == 0);
    CHECK_EQ(c->n_strategies, 2);
    CHECK_EQ(c->n_instances, 80 + 2 + 1);
    int64_t g[TW_GRID_DEFAULT_COMBOS * TW_COMBO_WINDOWS];
    tw_grid_default(g);
    CHECK(!memcmp(c->instances[0].combo, g, sizeof(g[0]) * 6));
    CHECK(!memcmp(c->instances[79].combo, g + 79 * 6, sizeof(g[0]) * 6));
    int64_t l401[6];
    tw_combo_from_length(401, l401);
    CHECK(!memcmp(c->instances[80].combo, l401, sizeof(l401)));
    CHECK(c->instances[81].combo[0] == 100000 && c->instances[81].combo[5] == 100000);
    CHECK(!strcmp(c->instances[81].name, "grid.81") && c->instances[81].instrument == 1);
    CHECK(!strcmp(c->instances[82].name, "odd.0") && c->instances[82].instrument == 0);
    CHECK(c->instances[82].combo[1] == 400);
    CHECK(c->strategies[1].first_instance == 82 && c->strategies[1].n_instances == 1);
    const tw_risk_cfg *r = &c->risk;
    CHECK(r->max_position == 0 && r->max_total_position == 2147483647);
    CHECK(r->max_orders_per_s == 1000000000 && r->max_session_orders_per_s == 50);
    CHECK(r->max_instance_loss == 1.5 && r->max_total_loss == 12.5);
    CHECK(r->on_loss == TW_TRADING_HALTED && r->max_open_orders == 64);
    /* Session a has its own rate, b takes [risk]'s. */
    CHECK(c->session_orders_per_s[0] == 7 && c->session_orders_per_s[1] == 50);
    tw_strategy_cfg sc;
    tw_trade_config_strategy(c, &sc);
    size_t bytes = tw_strategy_memsize(&sc);
    void *mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    tw_strategy *s = tw_strategy_init(mem, bytes, &sc, &err);
    CHECKF(s != NULL, "%s", err.msg);
    if (s) {
        CHECK_EQ(tw_strategy_n_instances(s), 83);
        CHECK(tw_strategy_instrument_session(s, 0) == 1);
    }
    free(mem);
    tw_trade_config_free(c);
}

/* ---- bad files ------------------------------------------------------------------ */

#define ENGINE "[engine]\nreport = r.json\n"                 /* lines 1-2 */
#define SESSION "[session v]\nhost = h\nport = 1\nsender = S\ntarget = T\nstore = st\n" /* 6 */
#define INSTR "[instrument AAA]\nsession = v\n"               /* 2 */
#define STRAT "[strategy s]\ninstrument = AAA\ncombo = 1,2,1,1,1,2\n" /* 3 */
#define RISK "[risk]\nmax_position = 1\nmax_total_position = 1\nmax_orders_per_s = 1\n" \
             "max_loss = 1\n"                                 /* 5 */
#define ALL ENGINE SESSION INSTR STRAT RISK                   /* 18 lines */

/* strategy = thread | inline, and inline with the most sessions it takes. */
static void test_strategy(void)
{
    static const char *const texts[] = {
        ENGINE "strategy = thread\n" SESSION INSTR STRAT RISK,
        ENGINE "strategy = inline\n" SESSION INSTR STRAT RISK,
        ENGINE "strategy = inline\nbusy_poll = yes\n" SESSION
        "[session w]\nhost = h\nport = 2\nsender = S\ntarget = T\nstore = s2\n"
        "[session x]\nhost = h\nport = 3\nsender = S\ntarget = T\nstore = s3\n"
        "[session y]\nhost = h\nport = 4\nsender = S\ntarget = T\nstore = s4\n"
        INSTR STRAT RISK,
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        tw_error err = { 0 };
        int rc;
        tw_trade_config *c = parse(texts[i], &err, &rc);
        CHECKF(rc == 0, "case %zu: %s", i, err.msg);
        if (!c)
            continue;
        CHECK_EQ(c->engine.strategy, i ? TW_TRADE_STRATEGY_INLINE : TW_TRADE_STRATEGY_THREAD);
        CHECK_EQ(c->engine.strategy_line, 3);
        CHECK(!c->engine.strategy_auto); /* given: it wins */
        if (i == 2)
            CHECK(c->engine.busy_poll == 1 && !c->engine.busy_auto && !c->engine.auto_why[0]);
        CHECK_EQ(c->n_sessions, i == 2 ? 4u : 1u);
        tw_trade_config_free(c);
    }
}

/* strategy = auto, busy_poll = auto: the shape of the machine decides. */
static void test_auto(void)
{
    static const struct {
        tw_trade_mode mode;
        uint32_t sessions;
        unsigned cpus, isolated;
        tw_trade_strategy_run strategy;
        int busy;
        const char *why;
    } cases[] = {
        /* This VM: 2 vCPUs, one session: inline, busy (one loop, one CPU left). */
        { TW_TRADE_THREADS, 1, 2, 0, TW_TRADE_STRATEGY_INLINE, 1, "leave a CPU" },
        { TW_TRADE_THREADS, 1, 1, 0, TW_TRADE_STRATEGY_INLINE, 0, "would take every one of 1" },
        { TW_TRADE_THREADS, 1, 1, 1, TW_TRADE_STRATEGY_INLINE, 1, "on 1 isolated" },
        { TW_TRADE_THREADS, 2, 2, 0, TW_TRADE_STRATEGY_INLINE, 1, "cannot give 2 net cores" },
        { TW_TRADE_THREADS, 2, 8, 0, TW_TRADE_STRATEGY_THREAD, 1, "8 CPUs give 2 net cores" },
        { TW_TRADE_THREADS, 3, 4, 0, TW_TRADE_STRATEGY_INLINE, 1, "cannot give 3" },
        { TW_TRADE_THREADS, 6, 4, 0, TW_TRADE_STRATEGY_THREAD, 0, "more than inline's" },
        { TW_TRADE_PROCESSES, 1, 2, 0, TW_TRADE_STRATEGY_THREAD, 0, "mode = processes" },
        { TW_TRADE_PROCESSES, 1, 3, 0, TW_TRADE_STRATEGY_THREAD, 1, "2 busy loop(s) leave" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tw_trade_engine_cfg e;
        memset(&e, 0, sizeof(e));
        e.mode = cases[i].mode;
        e.strategy_auto = e.busy_auto = 1;
        tw_trade_engine_auto(&e, cases[i].sessions, cases[i].cpus, cases[i].isolated);
        CHECKF(e.strategy == cases[i].strategy && e.busy_poll == cases[i].busy &&
               strstr(e.auto_why, cases[i].why), "case %zu: %s", i, e.auto_why);
    }
    /* An explicit value wins; only the other one is chosen. */
    tw_trade_engine_cfg e;
    memset(&e, 0, sizeof(e));
    e.busy_auto = 1;
    e.strategy = TW_TRADE_STRATEGY_THREAD;
    tw_trade_engine_auto(&e, 1, 2, 0);
    CHECKF(e.strategy == TW_TRADE_STRATEGY_THREAD && e.busy_poll == 0 &&
           strstr(e.auto_why, "strategy = thread (given)"), "%s", e.auto_why);
    memset(&e, 0, sizeof(e));
    e.strategy_auto = 1;
    tw_trade_engine_auto(&e, 1, 2, 0);
    CHECKF(e.strategy == TW_TRADE_STRATEGY_INLINE && e.busy_poll == 0 &&
           strstr(e.auto_why, "busy_poll = no (given)"), "%s", e.auto_why);
}

typedef struct bad_case {
    const char *text;
    int line;
    const char *what; /* a part of the message */
} bad_case;

static const bad_case bad[] = {
    /* syntax and layout */
    { "", 1, "no [engine] section" },
    { "junk\n" ALL, 1, "expected [section] or key = value" },
    { ALL "[engine\n", 19, "section header without ']'" },
    { "report = x\n" ALL, 1, "before any [section]" },
    { ENGINE " fee = 1\n" SESSION INSTR STRAT RISK, 3, "indented line" },
    { ALL "[bogus]\n", 19, "unknown section [bogus]" },
    { ALL "[session]\n", 19, "[session] needs a name" },
    { ALL "[engine x]\n", 19, "takes no name" },
    { ALL "[session a$b]\n", 19, "has a character other than" },
    { ALL "[session a b]\n", 19, "a name has no blanks" },
    { ALL "[session abcdefghijklmnopqrstuvwxyz0123456789]\n", 19, "longer than 31" },
    { "[strategy abcdefghijklmnopqrstuvwxyz01234]\ninstrument = AAA\ncombo = 1,1,1,1,1,1\n" ALL,
      3, "instance name" },
    /* unknown keys, one per section kind */
    { ENGINE "colour = red\n" SESSION INSTR STRAT RISK, 3, "unknown key 'colour' in [engine]" },
    { ENGINE SESSION "hots = x\n" INSTR STRAT RISK, 9, "unknown key 'hots' in [session v]" },
    { ENGINE SESSION INSTR "venue = v\n" STRAT RISK, 11, "unknown key 'venue'" },
    { ENGINE SESSION INSTR STRAT "combos = 1\n" RISK, 14, "unknown key 'combos'" },
    { ALL "max_pos = 3\n", 19, "unknown key 'max_pos' in [risk]" },
    /* missing required keys (reported at the section's header) */
    { "[engine]\nfee = 1\n" SESSION INSTR STRAT RISK, 1, "missing key 'report'" },
    { ENGINE "[session v]\nport = 1\nsender = S\ntarget = T\nstore = st\n" INSTR STRAT RISK, 3,
      "[session v]: missing key 'host'" },
    { ENGINE "[session v]\nhost = h\nsender = S\ntarget = T\nstore = st\n" INSTR STRAT RISK, 3,
      "missing key 'port'" },
    { ENGINE "[session v]\nhost = h\nport = 1\ntarget = T\nstore = st\n" INSTR STRAT RISK, 3,
      "missing key 'sender'" },
    { ENGINE "[session v]\nhost = h\nport = 1\nsender = S\nstore = st\n" INSTR STRAT RISK, 3,
      "missing key 'target'" },
    { ENGINE "[session v]\nhost = h\nport = 1\nsender = S\ntarget = T\n" INSTR STRAT RISK, 3,
      "missing key 'store'" },
    { ENGINE SESSION "[instrument AAA]\n" STRAT RISK, 9, "[instrument AAA]: missing key 'session'" },
    { ENGINE SESSION INSTR "[strategy s]\ncombo = 1,1,1,1,1,1\n" RISK, 11,
      "missing key 'instrument'" },
    { ENGINE SESSION INSTR STRAT "[risk]\nmax_total_position = 1\nmax_orders_per_s = 1\n"
      "max_loss = 1\n", 14, "missing key 'max_position'" },
    { ENGINE SESSION INSTR STRAT "[risk]\nmax_position = 1\nmax_orders_per_s = 1\n"
      "max_loss = 1\n", 14, "missing key 'max_total_position'" },
    { ENGINE SESSION INSTR STRAT "[risk]\nmax_position = 1\nmax_total_position = 1\n"
      "max_loss = 1\n", 14, "missing key 'max_orders_per_s'" },
    { ENGINE SESSION INSTR STRAT "[risk]\nmax_position = 1\nmax_total_position = 1\n"
      "max_orders_per_s = 1\n", 14, "missing key 'max_loss'" },
    { ENGINE SESSION INSTR "[strategy s]\ninstrument = AAA\n" RISK, 11, "no combo" },
    /* missing sections (reported at the last line) */
    { SESSION INSTR STRAT RISK, 16, "no [engine] section" },
    { ENGINE SESSION INSTR STRAT, 13, "no [risk] section" },
    { ENGINE RISK, 7, "no [session NAME] section" },
    { ENGINE SESSION RISK, 13, "no [instrument SYMBOL] section" },
    { ENGINE SESSION INSTR RISK, 15, "no [strategy NAME] section" },
    /* references */
    { ENGINE SESSION "[instrument AAA]\nsession = w\n" STRAT RISK, 10, "no [session w]" },
    { ENGINE SESSION INSTR "[strategy s]\ninstrument = BBB\ncombo = 1,1,1,1,1,1\n" RISK, 12,
      "[strategy s]: no [instrument BBB]" },
    /* duplicates */
    { ALL "[engine]\n", 19, "duplicate section [engine] (first at line 1)" },
    { ALL "[risk]\n", 19, "duplicate section [risk] (first at line 14)" },
    { ALL "[session v]\n", 19, "duplicate session 'v' (first at line 3)" },
    { ALL "[instrument AAA]\n", 19, "duplicate instrument 'AAA' (first at line 9)" },
    { ALL "[strategy s]\n", 19, "duplicate strategy 's' (first at line 11)" },
    { ENGINE "report = again\n" SESSION INSTR STRAT RISK, 3,
      "duplicate key 'report' in [engine] (first at line 2)" },
    { ENGINE SESSION "port = 2\n" INSTR STRAT RISK, 9, "duplicate key 'port'" },
    { ENGINE SESSION INSTR STRAT "combo = 1, 2, 1, 1, 1, 2\n" RISK, 14, "given twice" },
    { ENGINE SESSION INSTR STRAT "grid = default\ngrid = default\n" RISK, 15,
      "duplicate key 'grid'" },
    { ALL "[session w]\nhost = h\nport = 1\nsender = S\ntarget = T\nstore = st2\n", 19,
      "[session w]: the same host, port, sender and target as [session v] (line 3)" },
    { ALL "[session w]\nhost = h\nport = 2\nsender = S\ntarget = T\nstore = st\n", 19,
      "[session w]: store 'st' is [session v]'s too (line 3)" },
    /* combos outside [1, 100000] and malformed */
    { ENGINE SESSION INSTR STRAT "combo = 0,2,1,1,1,2\n" RISK, 14, "window 1 (h_half) = 0" },
    { ENGINE SESSION INSTR STRAT "combo = 1,2,1,1,1,100001\n" RISK, 14,
      "window 6 (t_full) = 100001 is outside [1, 100000]" },
    { ENGINE SESSION INSTR STRAT "combo = 1,-2,1,1,1,2\n" RISK, 14, "window 2 (h_full) = -2" },
    { ENGINE SESSION INSTR STRAT "combo = 1,2,1,1,1\n" RISK, 14, "not six integers" },
    { ENGINE SESSION INSTR STRAT "combo = 1,2,1,1,1,2,3\n" RISK, 14, "not six integers" },
    { ENGINE SESSION INSTR STRAT "combo = 1,2,,1,1,2\n" RISK, 14, "not six integers" },
    { ENGINE SESSION INSTR STRAT "combo = a,b,c,d,e,f\n" RISK, 14, "not six integers" },
    { ENGINE SESSION INSTR STRAT "combo = 1.5,2,1,1,1,2\n" RISK, 14, "not six integers" },
    { ENGINE SESSION INSTR STRAT "combo = 99999999999999999999999,2,1,1,1,2\n" RISK, 14,
      "window 1 (h_half) = 99999999999999999999999 is outside" },
    { ENGINE SESSION INSTR STRAT "length = 0\n" RISK, 14, "length: '0' is not an integer" },
    { ENGINE SESSION INSTR STRAT "length = 100001\n" RISK, 14, "length: '100001'" },
    { ENGINE SESSION INSTR STRAT "grid = big\n" RISK, 14, "grid: 'big' is not a known grid" },
    /* bad values */
    { ENGINE "fee = x\n" SESSION INSTR STRAT RISK, 3, "fee: 'x' is not a finite number" },
    { ENGINE "fee = -1\n" SESSION INSTR STRAT RISK, 3, "fee: '-1'" },
    { ENGINE "fee = nan\n" SESSION INSTR STRAT RISK, 3, "fee: 'nan'" },
    { ENGINE "fee = 1e999\n" SESSION INSTR STRAT RISK, 3, "fee: '1e999'" },
    { ENGINE "fee =\n" SESSION INSTR STRAT RISK, 3, "fee: empty value" },
    { ENGINE "mode = fibers\n" SESSION INSTR STRAT RISK, 3, "mode: 'fibers'" },
    { ENGINE "busy_poll = maybe\n" SESSION INSTR STRAT RISK, 3, "busy_poll: 'maybe'" },
    { ENGINE "busy_poll = automatic\n" SESSION INSTR STRAT RISK, 3,
      "busy_poll: 'automatic' is not yes, no or auto" },
    { ENGINE "journal_keep = some\n" SESSION INSTR STRAT RISK, 3,
      "journal_keep: 'some' is not snapshots or all" },
    { ENGINE "journal_segment_bytes = 100\n" SESSION INSTR STRAT RISK, 3,
      "journal_segment_bytes" },
    { ENGINE "strategy = fiber\n" SESSION INSTR STRAT RISK, 3,
      "strategy: 'fiber' is not thread, inline or auto" },
    { ENGINE "strategy =\n" SESSION INSTR STRAT RISK, 3, "strategy: empty value" },
    { ENGINE "mode = processes\nstrategy = inline\n" SESSION INSTR STRAT RISK, 4,
      "strategy = inline runs the strategy in the gateway's thread: it needs mode = threads" },
    { ENGINE "strategy = inline\n" SESSION
      "[session w]\nhost = h\nport = 2\nsender = S\ntarget = T\nstore = s2\n"
      "[session x]\nhost = h\nport = 3\nsender = S\ntarget = T\nstore = s3\n"
      "[session y]\nhost = h\nport = 4\nsender = S\ntarget = T\nstore = s4\n"
      "[session z]\nhost = h\nport = 5\nsender = S\ntarget = T\nstore = s5\n"
      INSTR STRAT RISK, 3, "strategy = inline: 5 sessions, at most 4 on its one thread" },
    { ENGINE "ring_slots = 100\n" SESSION INSTR STRAT RISK, 3, "not a power of two" },
    { ENGINE "ring_slots = 32\n" SESSION INSTR STRAT RISK, 3, "ring_slots: '32'" },
    { ENGINE "snapshot_interval_ms = -1\n" SESSION INSTR STRAT RISK, 3, "snapshot_interval_ms" },
    { ENGINE "snapshot_interval_ms = 86400001\n" SESSION INSTR STRAT RISK, 3,
      "snapshot_interval_ms" },
    { ENGINE "cpus = 1-0\n" SESSION INSTR STRAT RISK, 3, "cpus: '1-0'" },
    { ENGINE "cpus = 0,0\n" SESSION INSTR STRAT RISK, 3, "cpus: '0,0'" },
    { ENGINE "cpus = 1024\n" SESSION INSTR STRAT RISK, 3, "cpus: '1024'" },
    { ENGINE "cpus = ,\n" SESSION INSTR STRAT RISK, 3, "cpus: ','" },
    { ENGINE SESSION "port = 0\n" INSTR STRAT RISK, 9, "duplicate key 'port'" },
    { ENGINE "[session v]\nhost = h\nport = 0\nsender = S\ntarget = T\nstore = st\n" INSTR STRAT
      RISK, 5, "port: '0' is not an integer in [1, 65535]" },
    { ENGINE "[session v]\nhost = h\nport = 65536\nsender = S\ntarget = T\nstore = st\n" INSTR
      STRAT RISK, 5, "port: '65536'" },
    { ENGINE "[session v]\nhost = h\nport = 80x\nsender = S\ntarget = T\nstore = st\n" INSTR
      STRAT RISK, 5, "port: '80x'" },
    { ENGINE "[session v]\nhost = h\nport = 1\nsender = A B\ntarget = T\nstore = st\n" INSTR
      STRAT RISK, 6, "sender: 'A B' is not a CompID" },
    { ENGINE SESSION "heartbeat = 0\n" INSTR STRAT RISK, 9, "heartbeat: '0'" },
    { ENGINE SESSION "reconnect_min_ms = 9\nreconnect_max_ms = 8\n" INSTR STRAT RISK, 9,
      "reconnect_min_ms 9 above reconnect_max_ms 8" },
    { ENGINE SESSION "stack = foo:bar\nip = 1.2.3.4\n" INSTR STRAT RISK, 9, "stack: 'foo:bar'" },
    { ENGINE SESSION "stack = af_xdp:\nip = 1.2.3.4\n" INSTR STRAT RISK, 9, "stack: 'af_xdp:'" },
    { ENGINE SESSION "stack = memif:\nip = 1.2.3.4\n" INSTR STRAT RISK, 9, "stack: 'memif:'" },
    { ENGINE SESSION "stack = sim:x\tb\nip = 1.2.3.4\n" INSTR STRAT RISK, 9, "not a port spec" },
    { ENGINE SESSION "stack = af_packet:veth0\n" INSTR STRAT RISK, 9,
      "stack = af_packet:veth0 needs ip" },
    { ENGINE SESSION "ip = 10.0.0.1\n" INSTR STRAT RISK, 9, "ip without stack" },
    { ENGINE SESSION "pcap = x.pcapng\n" INSTR STRAT RISK, 9, "pcap without stack" },
    { ENGINE SESSION "gateway = 10.0.0.1\n" INSTR STRAT RISK, 9, "gateway without stack" },
    { ENGINE SESSION "stack = sim\nip = 10.0.0.256\n" INSTR STRAT RISK, 10, "ip: '10.0.0.256'" },
    { ENGINE SESSION "stack = sim\nip = 10.0.0.1/33\n" INSTR STRAT RISK, 10, "ip: '10.0.0.1/33'" },
    { ENGINE SESSION "stack = sim\nip = 10.0.0.1\ngateway = x\n" INSTR STRAT RISK, 11,
      "gateway: 'x'" },
    { ENGINE SESSION "max_orders_per_s = 0\n" INSTR STRAT RISK, 9, "max_orders_per_s: '0'" },
    { ALL "max_session_orders_per_s = 1000000001\n", 19, "max_session_orders_per_s" },
    { ENGINE SESSION INSTR STRAT "[risk]\nmax_position = -1\nmax_total_position = 1\n"
      "max_orders_per_s = 1\nmax_loss = 1\n", 15, "max_position: '-1'" },
    { ENGINE SESSION INSTR STRAT "[risk]\nmax_position = 1\nmax_total_position = 2147483648\n"
      "max_orders_per_s = 1\nmax_loss = 1\n", 16, "max_total_position: '2147483648'" },
    { ENGINE SESSION INSTR STRAT "[risk]\nmax_position = 1\nmax_total_position = 1\n"
      "max_orders_per_s = 0\nmax_loss = 1\n", 17, "max_orders_per_s: '0'" },
    { ENGINE SESSION INSTR STRAT "[risk]\nmax_position = 1\nmax_total_position = 1\n"
      "max_orders_per_s = 1\nmax_loss = 0\n", 18, "max_loss: must be > 0" },
    { ALL "max_instance_loss = -5\n", 19, "max_instance_loss: '-5'" },
    { ALL "on_loss = panic\n", 19, "on_loss: 'panic'" },
    { ALL "max_open_orders = 0\n", 19, "max_open_orders: '0'" },
    { ALL "max_open_orders = 65\n", 19, "max_open_orders: '65'" },
    /* the earliest problem wins */
    { ENGINE "fee = x\n" SESSION "port = 2\n" INSTR STRAT RISK, 3, "fee: 'x'" },
    { "[engine]\nfee = 1\nmode = fibers\n" SESSION INSTR STRAT RISK, 1, "missing key 'report'" },
};

/* Each case fails with "t.ini:LINE: ...what...". */
static void check_bad(const bad_case *t, size_t n, const char *table)
{
    for (size_t k = 0; k < n; k++) {
        tw_error err = { 0 };
        int rc;
        tw_trade_config *c = parse(t[k].text, &err, &rc);
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "t.ini:%d: ", t[k].line);
        CHECKF(rc == -TW_EFORMAT && !c, "%s case %zu: rc %d", table, k, rc);
        CHECKF(!strncmp(err.msg, prefix, strlen(prefix)) && strstr(err.msg, t[k].what),
               "%s case %zu: got \"%s\", want \"%s...%s\"", table, k, err.msg, prefix,
               t[k].what);
        tw_trade_config_free(c);
    }
}

static void test_bad(void)
{
    check_bad(bad, TW_ARRAY_SIZE(bad), "bad");
    /* What libinih would bend silently: a line longer than its buffer, a
     * NUL byte. */
    char *long_line = malloc(4096);
    snprintf(long_line, 4096, ALL "store = %0300d\n", 1);
    tw_error err = { 0 };
    int rc;
    tw_trade_config *c = parse(long_line, &err, &rc);
    CHECKF(rc == -TW_EFORMAT && strstr(err.msg, "t.ini:19: line longer than"), "%s", err.msg);
    tw_trade_config_free(c);
    static const char nul[] = ENGINE "fee = 1\0\n" SESSION INSTR STRAT RISK;
    c = NULL;
    rc = tw_trade_config_parse(nul, sizeof(nul) - 1, "t.ini", &c, &err);
    CHECKF(rc == -TW_EFORMAT && strstr(err.msg, "t.ini:3: NUL byte"), "%s", err.msg);
    tw_trade_config_free(c);
    /* The good file parses: the table's bases are right. */
    c = parse(ALL, &err, &rc);
    CHECKF(rc == 0 && c && c->n_instances == 1, "%s", err.msg);
    tw_trade_config_free(c);
    free(long_line);
}

/* kernel = NAME and params = (lines 11-13: the section, instrument, kernel). */
#define KSTRAT(K) "[strategy z]\ninstrument = AAA\nkernel = " K "\n"
#define KALL(K, P) ENGINE SESSION INSTR KSTRAT(K) P RISK

static const bad_case kbad[] = {
    { KALL("zscore", "params = window=40,entry=2.0\n"), 14, "param 'exit' is missing" },
    { KALL("zscore", "params = window=40,entry=2,exit=0.5,bogus=1\n"), 14,
      "zscore has no param 'bogus'" },
    { KALL("zscore", "params = window=40,window=41,entry=2,exit=0.5\n"), 14,
      "'window' given twice" },
    { KALL("zscore", "params = window=1,entry=2,exit=0.5\n"), 14, "window" },
    { KALL("zscore", "params = window=40.5,entry=2,exit=0.5\n"), 14, "window" },
    { KALL("zscore", "params = window=40,entry=x,exit=0.5\n"), 14, "entry = 'x' is not a finite" },
    { KALL("zscore", "params = window=40,entry=inf,exit=0.5\n"), 14, "is not a finite" },
    { KALL("zscore", "params = window=40,entry=2,exit=\n"), 14, "exit: no number" },
    { KALL("zscore", "params = 40,2,0.5\n"), 14, "is not NAME=VALUE" },
    { KALL("zscore", "params = window=40,entry=1,exit=1.5\n"), 14, "params: " },
    { KALL("zscore", "params = window=40,entry=2,exit=0.5\nparams = exit=0.5,entry=2,window=40\n"),
      15, "params given twice (as z.0)" },
    { KALL("zscore", "combo = 1,2,1,1,1,2\n"), 14, "combo: hma_sar's; kernel = zscore takes params" },
    { KALL("zscore", "grid = default\n"), 14, "grid: hma_sar's" },
    { KALL("zscore", ""), 11, "kernel = zscore and no params" },
    { KALL("nosuch", "params = n=1\n"), 13, "kernel: " },
    { KALL("/nonexistent/libx.so", "params = n=1\n"), 13, "/nonexistent/libx.so" },
    { KALL("zscore\nkernel = hma_sar", "params = n=1\n"), 14, "duplicate key 'kernel'" },
    { ENGINE SESSION INSTR "[strategy z]\ninstrument = AAA\nparams = window=40\n" RISK, 13,
      "params: needs kernel = NAME above it" },
    { ENGINE SESSION INSTR "[strategy z]\ninstrument = AAA\ncombo = 1,2,1,1,1,2\n"
      "kernel = zscore\n" RISK, 14, "after the section's first instance" },
    { KALL("hma_sar", "params = h_half=0,h_full=2,h_sqrt=1,t_third=1,t_half=1,t_full=2\n"), 14,
      "h_half" },
};

static void test_kernel(void)
{
    check_bad(kbad, TW_ARRAY_SIZE(kbad), "kernel");
    /* Two zscore instances, params in any order; hma_sar by name is its
     * combo; a section without kernel = is as it always was. */
    tw_error err = { 0 };
    int rc;
    tw_trade_config *c = parse(ENGINE SESSION INSTR KSTRAT("zscore")
                               "params = window=40,entry=2.0,exit=0.5\n"
                               "params = exit = 0 , window = 20 , entry = 1.5\n"
                               "[strategy h]\ninstrument = AAA\nkernel = hma_sar\n"
                               "params = h_half=3,h_full=6,h_sqrt=2,t_third=1,t_half=2,t_full=3\n"
                               STRAT RISK, &err, &rc);
    CHECKF(rc == 0, "%s", err.msg);
    REQUIRE(c);
    CHECK_EQ(c->n_strategies, 3u);
    CHECK_EQ(c->n_instances, 4u);
    const tw_kernel_def *z = NULL;
    REQUIRE(tw_kernel_find("zscore", &z, &err) == 0);
    CHECK(c->strategies[0].kernel == z && c->strategies[0].kernel_line == 13);
    CHECK(c->instances[0].kernel == z && c->instances[1].kernel == z);
    CHECK(!strcmp(c->instances[0].name, "z.0") && !strcmp(c->instances[1].name, "z.1"));
    int w = tw_kernel_param_index(z, "window"), e = tw_kernel_param_index(z, "entry"),
        x = tw_kernel_param_index(z, "exit");
    REQUIRE(w >= 0 && e >= 0 && x >= 0);
    CHECK(c->instances[0].params[w] == 40 && c->instances[0].params[e] == 2.0 &&
          c->instances[0].params[x] == 0.5);
    CHECK(c->instances[1].params[w] == 20 && c->instances[1].params[e] == 1.5 &&
          c->instances[1].params[x] == 0.0);
    CHECK(c->instances[2].kernel == tw_kernel_builtin(0));
    static const int64_t hs[TW_COMBO_WINDOWS] = { 3, 6, 2, 1, 2, 3 };
    CHECK(!memcmp(c->instances[2].combo, hs, sizeof(hs)));
    CHECK(c->instances[3].kernel == NULL && !c->strategies[2].kernel);
    /* The strategy takes them. */
    tw_strategy_cfg sc;
    tw_trade_config_strategy(c, &sc);
    size_t bytes = tw_strategy_memsize(&sc);
    CHECK(bytes > 0);
    tw_trade_config_free(c);
}

/* Every truncation of a valid file: parses or fails with NAME:LINE. */
static void test_truncations(void)
{
    const char *texts[] = { example, full };
    for (int t = 0; t < 2; t++) {
        size_t n = strlen(texts[t]);
        for (size_t len = 0; len <= n; len++) {
            /* An exact-size heap copy: ASan sees a read past the end. */
            char *buf = malloc(len ? len : 1);
            memcpy(buf, texts[t], len);
            tw_trade_config *c = NULL;
            tw_error err = { 0 };
            int rc = tw_trade_config_parse(buf, len, "t.ini", &c, &err);
            if (rc == 0) {
                CHECK(c && c->n_instances >= 1);
            } else {
                CHECKF(rc == -TW_EFORMAT && !c && !strncmp(err.msg, "t.ini:", 6),
                       "len %zu: %d %s", len, rc, err.msg);
            }
            tw_trade_config_free(c);
            free(buf);
        }
    }
}

static void test_files(void)
{
    char dir[] = "/tmp/tw_trade_config_XXXXXX";
    REQUIRE(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/trade.ini", dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs(example, f);
    fputs("[strategy s2]\ninstrument = AAA\ncombo = 0,1,1,1,1,1\n", f);
    fclose(f);
    tw_trade_config *c = NULL;
    tw_error err = { 0 };
    int rc = tw_trade_config_load(path, &c, &err);
    char want[300];
    snprintf(want, sizeof(want), "%s:25: combo: window 1 (h_half) = 0", path);
    CHECKF(rc == -TW_EFORMAT && !strncmp(err.msg, want, strlen(want)), "%s", err.msg);
    tw_trade_config_free(c);
    f = fopen(path, "w");
    REQUIRE(f);
    fputs(example, f);
    fclose(f);
    rc = tw_trade_config_load(path, &c, &err);
    CHECKF(rc == 0 && c && !strcmp(c->path, path), "%s", err.msg);
    tw_trade_config_free(c);
    unlink(path);
    /* A file that is not there. */
    rc = tw_trade_config_load(path, &c, &err);
    snprintf(want, sizeof(want), "%s: %s", path, strerror(ENOENT));
    CHECKF(rc == -ENOENT && !c && !strcmp(err.msg, want), "%s", err.msg);
    /* A path too long for the message keeps its tail, the line and the
     * message. */
    char lp[400];
    memset(lp, 'd', sizeof(lp));
    memcpy(lp, "/nonexistent/", 13);
    strcpy(lp + sizeof(lp) - 10, "/tail.ini");
    rc = tw_trade_config_load(lp, &c, &err);
    CHECKF(rc == -ENOENT && !strncmp(err.msg, "...", 3) && strstr(err.msg, "tail.ini: ") &&
               strstr(err.msg, strerror(ENOENT)),
           "%s", err.msg);
    rmdir(dir);
}

int main(void)
{
    test_example();
    test_full();
    test_strategy();
    test_auto();
    test_bad();
    test_kernel();
    test_truncations();
    test_files();
    return tw_check_done("trade_config_parse");
}
