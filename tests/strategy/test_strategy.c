/* The strategy core fed events directly, no network: orders from signals,
 * positions from fills, every risk rule, the kill switch, bad events,
 * sessions and barriers, init errors, the output bound, and determinism
 * (two strategies fed one seeded random event stream write the same
 * intents and reach the same digest after every event).
 *
 * Most cases run combo (1,2,1,1,1,2) over prices alternating 100, 101,
 * 100, ...: with these windows v = (d[i-1] - d[i]) / 3 where d[i] =
 * (4 close[i] - close[i-1]) / 3, so from bar 2 on the signal flips on
 * every bar (long on 100, short on 101): each bar from 2 is a decision,
 * which makes every count below exact. */
#include <errno.h>
#include <unistd.h>

#include "st.h"
#include "tickwire/trade.h"

static const int64_t flipper[6] = { 1, 2, 1, 1, 1, 2 };

static double alt(uint64_t i) { return (i & 1) ? 101.0 : 100.0; }

static uint64_t rule_sum(const tw_strategy *s)
{
    tw_strategy_counters c;
    tw_strategy_counters_get(s, &c);
    uint64_t n = 0;
    for (int r = 0; r < TW_RULE_COUNT; r++)
        n += c.rejected_by_rule[r];
    return n;
}

static uint64_t rule(const tw_strategy *s, tw_risk_rule r)
{
    tw_strategy_counters c;
    tw_strategy_counters_get(s, &c);
    return c.rejected_by_rule[r];
}

/* Every rejection went to the log hook under its rule. */
static void check_logged(const st_harness *h)
{
    tw_strategy_counters c;
    tw_strategy_counters_get(h->s, &c);
    for (int r = 0; r < TW_RULE_COUNT; r++)
        CHECKF(h->log_by_rule[r] == c.rejected_by_rule[r], "rule %s: logged %llu counted %llu",
               tw_risk_rule_name((tw_risk_rule)r), (unsigned long long)h->log_by_rule[r],
               (unsigned long long)c.rejected_by_rule[r]);
}

static void stats(const st_harness *h, uint32_t i, tw_instance_stats *st)
{
    tw_strategy_instance(h->s, i, st);
}

/* One lockstep bar on every instrument (instrument k on session k %
 * sessions), orders filled at the bar's close unless fill is 0.  Returns
 * the orders written; the intents are copied to keep[] when given. */
static size_t lockstep_bar(st_harness *h, uint32_t n_instr, uint32_t n_sessions, uint64_t i,
                           double (*px)(uint64_t), int fill, tw_out *keep)
{
    size_t orders = 0;
    tw_out buf[256];
    for (uint32_t k = 0; k < n_instr; k++) {
        h->now_ns = (int64_t)i * 1000000;
        size_t m = st_bar(h, k, (uint16_t)(k % n_sessions), i, px(i));
        TW_VERIFY(m <= 256);
        memcpy(buf, h->out, m * sizeof(tw_out));
        if (keep)
            memcpy(keep + orders, buf, m * sizeof(tw_out));
        orders += m;
        if (fill)
            for (size_t j = 0; j < m; j++)
                if (buf[j].type == TW_OUT_ORDER)
                    st_fill(h, buf[j].order_id, buf[j].side, buf[j].qty, px(i));
    }
    return orders;
}

/* ---- orders from signals, positions from fills ------------------------------------ */

static void test_orders(void)
{
    st_cfg c;
    st_cfg_make(&c, 1, 1, flipper, 1);
    st_harness h;
    REQUIRE(st_open(&h, &c.cfg) == 0);
    CHECK(st_bar(&h, 0, 0, 0, 100.0) == 0);
    CHECK(st_bar(&h, 0, 0, 1, 101.0) == 0);
    /* Bar 2: from flat, 1 unit in the signal's direction. */
    CHECK(st_bar(&h, 0, 0, 2, 100.0) == 1);
    tw_out o = h.out[0];
    CHECK(o.type == TW_OUT_ORDER && o.side == TW_SIDE_BUY && o.qty == 1 && o.session == 0);
    CHECK(o.instance == 0 && o.instrument == 0 && o.ref == 2 && o.tsc_rx == 1002);
    CHECK(o.order_id == tw_order_id(TW_ORDER_SIGNAL, 0, 2));
    CHECK(tw_order_id_instance(o.order_id) == 0 && tw_order_id_seq(o.order_id) == 2 &&
          tw_order_id_kind(o.order_id) == TW_ORDER_SIGNAL);
    tw_instance_stats st;
    stats(&h, 0, &st);
    CHECK(st.signal == 1 && st.position == 0 && st.open_qty == 1 && st.orders == 1);
    CHECK(st_fill(&h, o.order_id, TW_SIDE_BUY, 1, 100.0) == 0);
    stats(&h, 0, &st);
    CHECK(st.position == 1 && st.open_qty == 0 && st.fills == 1 && st.entry_px == 100.0);
    /* Bar 3: a flip, 2 units. */
    CHECK(st_bar(&h, 0, 0, 3, 101.0) == 1);
    o = h.out[0];
    CHECK(o.side == TW_SIDE_SELL && o.qty == 2 && o.order_id == tw_order_id(0, 0, 3));
    /* Filled in two parts: the first closes the long (a trade at 101),
     * the second opens the short at its own price. */
    CHECK(st_fill(&h, o.order_id, TW_SIDE_SELL, 1, 101.0) == 0);
    stats(&h, 0, &st);
    CHECK(st.position == 0 && st.open_qty == -1 && st.trades == 1);
    const double r1 = (101.0 / 100.0 - 1.0) * 100.0;
    CHECK(st_same(st.pnl, 0.0 + (r1 - TW_FEE_DEFAULT)));
    CHECK(h.n_trades == 1 && h.trades[0].side == 1 && h.trades[0].entry_bar == 2 &&
          h.trades[0].exit_bar == 3 && h.trades[0].entry_px == 100.0 &&
          h.trades[0].exit_px == 101.0 && st_same(h.trades[0].r, r1));
    CHECK(st_fill(&h, o.order_id, TW_SIDE_SELL, 1, 101.5) == 0);
    stats(&h, 0, &st);
    CHECK(st.position == -1 && st.open_qty == 0 && st.entry_px == 101.5 && st.trades == 1);
    /* Bar 4: buy 2, rejected by the venue: the instance stays where its
     * fills put it (short), whatever the kernel says. */
    CHECK(st_bar(&h, 0, 0, 4, 100.0) == 1);
    o = h.out[0];
    CHECK(o.side == TW_SIDE_BUY && o.qty == 2);
    CHECK(st_simple(&h, TW_EV_REJECT, 0, o.order_id) == 0);
    stats(&h, 0, &st);
    CHECK(st.position == -1 && st.open_qty == 0 && st.rejects == 1 && st.signal == 1);
    CHECK(h.log_by_kind[TW_LOG_VENUE_REJECT] == 1 && h.last_log.reason == 2);
    /* Bar 5: the kernel goes short, where the fills already are: no order. */
    CHECK(st_bar(&h, 0, 0, 5, 101.0) == 0);
    /* Bar 6: long: 2 units from the fills' short. */
    CHECK(st_bar(&h, 0, 0, 6, 100.0) == 1);
    CHECK(h.out[0].qty == 2 && h.out[0].side == TW_SIDE_BUY);
    /* An overfill (3 for 2) is applied (the venue's fills are the truth)
     * and counted. */
    CHECK(st_fill(&h, h.out[0].order_id, TW_SIDE_BUY, 3, 100.0) == 0);
    stats(&h, 0, &st);
    tw_strategy_counters ct;
    tw_strategy_counters_get(h.s, &ct);
    CHECK(st.position == 2 && st.open_qty == 0 && ct.overfills == 1 && st.trades == 2);
    /* Booked short 101.5 -> 100. */
    CHECK(st_same(h.trades[1].r, (1.0 - 100.0 / 101.5) * 100.0) && h.trades[1].side == -1 &&
          h.trades[1].entry_bar == 3 && h.trades[1].exit_bar == 6);
    /* A barrier is acknowledged at once, behind what came before. */
    CHECK(st_simple(&h, TW_EV_BARRIER, 0, 6) == 1 && h.out[0].type == TW_OUT_BARRIER_ACK &&
          h.out[0].ref == 6 && h.out[0].session == 0);
    CHECK(rule_sum(h.s) == 0 && ct.bad_events == 0);
    st_close(&h);
    st_cfg_free(&c);
}

/* ---- risk, rule by rule ---------------------------------------------------------- */

static void test_max_position(void)
{
    int64_t two[12];
    memcpy(two, flipper, sizeof(flipper));
    memcpy(two + 6, flipper, sizeof(flipper));
    st_cfg c;
    st_cfg_make(&c, 1, 1, two, 2);
    c.cfg.risk.max_position = 1;
    st_harness h;
    REQUIRE(st_open(&h, &c.cfg) == 0);
    const uint64_t nb = 50;
    for (uint64_t i = 0; i < nb; i++) {
        lockstep_bar(&h, 1, 1, i, alt, 1, NULL);
        tw_instance_stats a, b;
        stats(&h, 0, &a);
        stats(&h, 1, &b);
        CHECK(llabs(a.position + b.position) <= 1);
    }
    /* Instance 0 takes the one unit the instrument may hold; each of
     * instance 1's 48 decisions (bars 2..49) would make it 2. */
    tw_instance_stats a, b;
    stats(&h, 0, &a);
    stats(&h, 1, &b);
    CHECK(a.orders == nb - 2 && a.trades == (int64_t)nb - 3 && a.risk_rejects == 0);
    CHECK(b.orders == 0 && b.position == 0 && b.risk_rejects == nb - 2 && b.signal != 0);
    CHECK_EQ(rule(h.s, TW_RULE_MAX_POSITION), nb - 2);
    CHECK(rule_sum(h.s) == nb - 2);
    CHECK(h.last_log.kind == TW_LOG_RISK_REJECT && h.last_log.instance == 1 &&
          !strcmp(h.last_log.what, "max_position"));
    check_logged(&h);
    st_close(&h);
    st_cfg_free(&c);
}

static void test_max_total_position(void)
{
    st_cfg c;
    st_cfg_make(&c, 2, 2, flipper, 1);
    c.cfg.risk.max_total_position = 1;
    st_harness h;
    REQUIRE(st_open(&h, &c.cfg) == 0);
    for (uint64_t i = 0; i < 40; i++) {
        lockstep_bar(&h, 2, 2, i, alt, 1, NULL);
        tw_instance_stats a, b;
        stats(&h, 0, &a);
        stats(&h, 1, &b);
        CHECK(llabs(a.position) + llabs(b.position) <= 1);
    }
    tw_instance_stats a, b;
    stats(&h, 0, &a);
    stats(&h, 1, &b);
    CHECK(a.orders == 38 && b.orders == 0 && b.risk_rejects == 38);
    CHECK_EQ(rule(h.s, TW_RULE_MAX_TOTAL_POSITION), 38);
    CHECK(rule_sum(h.s) == 38);
    check_logged(&h);
    st_close(&h);
    st_cfg_free(&c);
}

/* Token buckets from the events' now_ns: bar i at i ms.  A bucket of 2
 * per second starts full (2 orders), then refills 2e6 nano-tokens per ms:
 * one more order every 500 ms, exactly. */
static void rate_case(int per_session)
{
    int64_t five[30];
    for (int j = 0; j < 5; j++)
        memcpy(five + 6 * j, flipper, sizeof(flipper));
    st_cfg c;
    st_cfg_make(&c, 1, 1, five, 5);
    if (per_session)
        c.cfg.risk.max_session_orders_per_s = 2;
    else
        c.cfg.risk.max_orders_per_s = 2;
    st_harness h;
    REQUIRE(st_open(&h, &c.cfg) == 0);
    tw_out keep[16];
    uint64_t orders = 0;
    int bad_bars = 0;
    uint32_t who[4] = { 0 };
    for (uint64_t i = 0; i < 1300; i++) {
        size_t m = lockstep_bar(&h, 1, 1, i, alt, 1, keep);
        uint64_t want = i == 2 ? 2 : (i >= 502 && (i - 2) % 500 == 0) ? 1 : 0;
        if (m != want && bad_bars++ < 3)
            fprintf(stderr, "bar %llu: %zu orders, want %llu\n", (unsigned long long)i, m,
                    (unsigned long long)want);
        for (size_t j = 0; j < m && orders + j < 4; j++)
            who[orders + j] = keep[j].instance;
        orders += m;
    }
    CHECK(bad_bars == 0 && orders == 4);
    /* The bucket serves instances in index order; on bars 502 and 1002
     * the instances already long have nothing to do, the first flat one
     * gets the token. */
    CHECK(who[0] == 0 && who[1] == 1 && who[2] == 2 && who[3] == 3);
    const tw_risk_rule r = per_session ? TW_RULE_RATE_SESSION : TW_RULE_RATE_TOTAL;
    CHECK(rule(h.s, r) > 1000 && rule_sum(h.s) == rule(h.s, r));
    check_logged(&h);
    /* A second later the bucket is full again: two orders, then empty. */
    h.now_ns = 1300 * INT64_C(1000000) + INT64_C(1000000000);
    CHECK(st_bar(&h, 0, 0, 1300, alt(1300)) == 1 && h.out[0].instance == 4);
    h.now_ns += 1000000;
    CHECK(st_bar(&h, 0, 0, 1301, alt(1301)) == 1 && h.out[0].instance == 0);
    h.now_ns += 1000000;
    CHECK(st_bar(&h, 0, 0, 1302, alt(1302)) == 0);
    /* The clock starts again near 0 (a replay after a reboot): the bucket
     * refills from the new clock, not once it passes the old one. */
    h.now_ns = 5;
    CHECK(st_bar(&h, 0, 0, 1303, alt(1303)) == 0);
    h.now_ns = 5 + 500000000;
    size_t m1 = st_bar(&h, 0, 0, 1304, alt(1304));
    CHECK(m1 == 1);
    st_close(&h);
    st_cfg_free(&c);
}

static void test_rates(void)
{
    rate_case(1);
    rate_case(0);
}

static void test_states(void)
{
    st_cfg c;
    st_cfg_make(&c, 1, 1, flipper, 1);
    st_harness h;
    REQUIRE(st_open(&h, &c.cfg) == 0);
    for (uint64_t i = 0; i < 6; i++)
        lockstep_bar(&h, 1, 1, i, alt, 1, NULL);
    tw_instance_stats st;
    stats(&h, 0, &st);
    CHECK(st.position == -1); /* bar 5 (101): short */
    /* HALTED: nothing goes out. */
    CHECK(st_simple(&h, TW_EV_OPERATOR, 0, TW_TRADING_HALTED) == 0);
    CHECK(tw_strategy_state(h.s) == TW_TRADING_HALTED && h.log_by_kind[TW_LOG_STATE] == 1);
    for (uint64_t i = 6; i < 10; i++)
        CHECK(lockstep_bar(&h, 1, 1, i, alt, 1, NULL) == 0);
    /* Bars 6 and 8 (long: +2 from the short); on 7 and 9 the kernel goes
     * back to where the fills are: nothing to send. */
    CHECK_EQ(rule(h.s, TW_RULE_HALTED), 2);
    /* REDUCING: the next flip (bar 10 -> long: +2 from -1) is cut to +1. */
    CHECK(st_simple(&h, TW_EV_OPERATOR, 0, TW_TRADING_REDUCING) == 0);
    tw_out keep[4];
    CHECK(lockstep_bar(&h, 1, 1, 10, alt, 1, keep) == 1);
    CHECK(keep[0].qty == 1 && keep[0].side == TW_SIDE_BUY);
    CHECK(h.log_by_kind[TW_LOG_RISK_CUT] == 1 && rule(h.s, TW_RULE_REDUCING) == 1);
    stats(&h, 0, &st);
    CHECK(st.position == 0 && st.trades == 4);
    /* From flat every order adds: rejected. */
    CHECK(lockstep_bar(&h, 1, 1, 11, alt, 1, NULL) == 0);
    CHECK_EQ(rule(h.s, TW_RULE_REDUCING), 2);
    /* ACTIVE again: the next decision trades from the fills' flat. */
    CHECK(st_simple(&h, TW_EV_OPERATOR, 0, TW_TRADING_ACTIVE) == 0);
    CHECK(lockstep_bar(&h, 1, 1, 12, alt, 1, keep) == 1 && keep[0].qty == 1);
    /* A bad operator state is a bad event, not a state. */
    CHECK(st_simple(&h, TW_EV_OPERATOR, 0, 7) == 0 && tw_strategy_state(h.s) == TW_TRADING_ACTIVE);
    check_logged(&h);
    st_close(&h);
    st_cfg_free(&c);
}

static void test_open_orders(void)
{
    st_cfg c;
    st_cfg_make(&c, 1, 1, flipper, 1);
    c.cfg.risk.max_open_orders = 1;
    st_harness h;
    REQUIRE(st_open(&h, &c.cfg) == 0);
    /* Nothing filled (a paced venue that is slow): one order open at most. */
    size_t orders = 0;
    for (uint64_t i = 0; i < 10; i++)
        orders += lockstep_bar(&h, 1, 1, i, alt, 0, NULL);
    CHECK(orders == 1);
    tw_instance_stats st;
    stats(&h, 0, &st);
    CHECK(st.open_qty == 1 && st.position == 0);
    /* Bars 3..9: the kernel flips, target - (fills + open) is -2 or 0:
     * the -2s (bars 3, 5, 7, 9) are refused. */
    CHECK_EQ(rule(h.s, TW_RULE_OPEN_ORDERS), 4);
    /* The fill frees the slot. */
    CHECK(st_fill(&h, tw_order_id(0, 0, 2), TW_SIDE_BUY, 1, 100.0) == 0);
    CHECK(lockstep_bar(&h, 1, 1, 10, alt, 0, NULL) == 0); /* long already */
    CHECK(lockstep_bar(&h, 1, 1, 11, alt, 0, NULL) == 1); /* sell 2 */
    check_logged(&h);
    st_close(&h);
    st_cfg_free(&c);
}

static void loss_case(tw_trading_state on_loss)
{
    st_cfg c;
    st_cfg_make(&c, 1, 2, flipper, 1);
    c.cfg.fee = 5.0; /* every round trip loses about 4 points */
    c.cfg.risk.max_instance_loss = 3.0;
    c.cfg.risk.on_loss = on_loss;
    st_harness h;
    REQUIRE(st_open(&h, &c.cfg) == 0);
    tw_out keep[8];
    for (uint64_t i = 0; i < 4; i++)
        lockstep_bar(&h, 2, 1, i, alt, 1, NULL);
    /* Bar 3 booked one trade each: both below -3. */
    tw_instance_stats st;
    stats(&h, 0, &st);
    CHECK(st.trades == 1 && st.pnl < -3.0 && st.state == on_loss && st.position == -1);
    tw_strategy_counters ct;
    tw_strategy_counters_get(h.s, &ct);
    CHECK(ct.breaches_instance == 2 && ct.breaches_total == 0 && h.log_by_kind[TW_LOG_BREACH] == 2);
    CHECK(tw_strategy_state(h.s) == TW_TRADING_ACTIVE);
    size_t m = lockstep_bar(&h, 2, 1, 4, alt, 1, keep);
    if (on_loss == TW_TRADING_REDUCING) {
        /* The flip is cut to its closing part: flat. */
        CHECK(m == 2 && keep[0].qty == 1 && keep[1].qty == 1);
        CHECK_EQ(rule(h.s, TW_RULE_REDUCING), 2);
        stats(&h, 0, &st);
        CHECK(st.position == 0);
        CHECK(lockstep_bar(&h, 2, 1, 5, alt, 1, NULL) == 0);
        CHECK_EQ(rule(h.s, TW_RULE_REDUCING), 4);
    } else {
        CHECK(m == 0);
        CHECK_EQ(rule(h.s, TW_RULE_HALTED), 2);
        stats(&h, 0, &st);
        CHECK(st.position == -1);
    }
    check_logged(&h);
    st_close(&h);
    st_cfg_free(&c);
}

static void test_losses(void)
{
    loss_case(TW_TRADING_REDUCING);
    loss_case(TW_TRADING_HALTED);
    /* The total: two instances losing about 4 each cross 6 together only. */
    st_cfg c;
    st_cfg_make(&c, 1, 2, flipper, 1);
    c.cfg.fee = 5.0;
    c.cfg.risk.max_total_loss = 6.0;
    st_harness h;
    REQUIRE(st_open(&h, &c.cfg) == 0);
    for (uint64_t i = 0; i < 4; i++)
        lockstep_bar(&h, 2, 1, i, alt, 1, NULL);
    tw_strategy_counters ct;
    tw_strategy_counters_get(h.s, &ct);
    CHECK(ct.breaches_total == 1 && ct.breaches_instance == 0 && ct.pnl < -6.0);
    CHECK(tw_strategy_state(h.s) == TW_TRADING_REDUCING);
    tw_instance_stats st;
    stats(&h, 0, &st);
    CHECK(st.state == TW_TRADING_ACTIVE);
    tw_out keep[8];
    CHECK(lockstep_bar(&h, 2, 1, 4, alt, 1, keep) == 2 && keep[0].qty == 1);
    st_close(&h);
    st_cfg_free(&c);
}

/* ---- the kill switch ---------------------------------------------------------- */

static void test_kill(void)
{
    st_cfg c;
    st_cfg_make(&c, 2, 2, flipper, 1);
    st_harness h;
    REQUIRE(st_open(&h, &c.cfg) == 0);
    for (uint64_t i = 0; i < 5; i++)
        lockstep_bar(&h, 2, 2, i, alt, 1, NULL);
    /* Both long (bar 4: 100).  Instrument 1's bar 5 order stays open. */
    tw_out keep[8];
    h.now_ns = 5000000;
    CHECK(st_bar(&h, 0, 0, 5, 101.0) == 1);
    CHECK(st_fill(&h, h.out[0].order_id, h.out[0].side, h.out[0].qty, 101.0) == 0);
    CHECK(st_bar(&h, 1, 1, 5, 101.0) == 1);
    const uint64_t open_id = h.out[0].order_id;
    tw_instance_stats a, b;
    stats(&h, 0, &a);
    stats(&h, 1, &b);
    CHECK(a.position == -1 && b.position == 1 && b.open_qty == -2);

    size_t m = st_take(&h, st_simple(&h, TW_EV_KILL, 0, 0), keep);
    /* Instance 0: flatten (buy 1).  Instance 1: cancel its open order,
     * flatten its long (sell 1). */
    CHECK(m == 3);
    CHECK(keep[0].type == TW_OUT_ORDER && keep[0].instance == 0 && keep[0].side == TW_SIDE_BUY &&
          keep[0].qty == 1 && tw_order_id_kind(keep[0].order_id) == TW_ORDER_FLATTEN &&
          keep[0].session == 0);
    CHECK(keep[1].type == TW_OUT_CANCEL && keep[1].order_id == open_id && keep[1].qty == 2 &&
          keep[1].side == TW_SIDE_SELL && keep[1].session == 1);
    CHECK(keep[2].type == TW_OUT_ORDER && keep[2].instance == 1 && keep[2].side == TW_SIDE_SELL &&
          keep[2].qty == 1 && keep[2].order_id == tw_order_id(TW_ORDER_FLATTEN, 1, 1));
    CHECK(keep[0].order_id == tw_order_id(TW_ORDER_FLATTEN, 0, 0));
    CHECK(tw_strategy_state(h.s) == TW_TRADING_HALTED);
    /* A second KILL cancels nothing twice and flattens nothing twice. */
    CHECK(st_simple(&h, TW_EV_KILL, 0, 0) == 0);
    /* The cancel lost the race: the order filled (sell 2 at 101), the
     * cancel is rejected.  Instance 1 is now short 1 with its flatten
     * (sell 1) still open: it waits for that one. */
    CHECK(st_simple(&h, TW_EV_CANCEL_REJECT, 1, open_id) == 0);
    CHECK(st_fill(&h, open_id, TW_SIDE_SELL, 2, 101.0) == 0);
    /* The flatten sell fills: short 2, no flatten open: another one. */
    m = st_take(&h, st_fill(&h, keep[2].order_id, TW_SIDE_SELL, 1, 101.0), keep + 3);
    CHECK(m == 1 && keep[3].side == TW_SIDE_BUY && keep[3].qty == 2 &&
          keep[3].order_id == tw_order_id(TW_ORDER_FLATTEN, 1, 2));
    CHECK(st_fill(&h, keep[3].order_id, TW_SIDE_BUY, 2, 100.0) == 0);
    CHECK(st_fill(&h, keep[0].order_id, TW_SIDE_BUY, 1, 100.0) == 0);
    stats(&h, 0, &a);
    stats(&h, 1, &b);
    CHECK(a.position == 0 && b.position == 0 && a.open_qty == 0 && b.open_qty == 0);
    tw_strategy_counters ct;
    tw_strategy_counters_get(h.s, &ct);
    CHECK(ct.kills == 2 && ct.cancels == 1 && ct.flatten_orders == 3 && ct.cancel_rejects == 1);
    /* Flattening booked the closes as trades (the kernel's arithmetic). */
    CHECK(a.trades == 4 && b.trades == 4);
    /* Halted: the kernel runs on, no order goes out. */
    CHECK(lockstep_bar(&h, 2, 2, 6, alt, 1, NULL) == 0);
    CHECK_EQ(rule(h.s, TW_RULE_HALTED), 2);
    /* The operator takes over: trading resumes from flat. */
    CHECK(st_simple(&h, TW_EV_OPERATOR, 0, TW_TRADING_ACTIVE) == 0);
    CHECK(lockstep_bar(&h, 2, 2, 7, alt, 1, keep) == 2 && keep[0].qty == 1 && keep[1].qty == 1);
    check_logged(&h);
    st_close(&h);
    st_cfg_free(&c);
}

/* The kill switch's output is the documented bound: a cancel per open
 * order and a flatten per instance. */
static void test_max_out(void)
{
    int64_t three[18];
    for (int j = 0; j < 3; j++)
        memcpy(three + 6 * j, flipper, sizeof(flipper));
    st_cfg c;
    st_cfg_make(&c, 1, 1, three, 3);
    c.cfg.risk.max_open_orders = 3;
    st_harness h;
    REQUIRE(st_open(&h, &c.cfg) == 0);
    CHECK_EQ(tw_strategy_max_out(h.s), 3 * 4);
    for (uint64_t i = 0; i < 5; i++)
        lockstep_bar(&h, 1, 1, i, alt, 0, NULL); /* bars 2, 3, 4: 3 orders each, open */
    for (uint32_t i = 0; i < 3; i++) /* the first (buy 1) of each fills */
        st_fill(&h, tw_order_id(0, i, 2), TW_SIDE_BUY, 1, 100.0);
    CHECK(lockstep_bar(&h, 1, 1, 5, alt, 0, NULL) == 3);
    tw_instance_stats st;
    stats(&h, 2, &st);
    CHECK(st.position == 1 && st.open_qty == -2);
    size_t m = st_simple(&h, TW_EV_KILL, 0, 0);
    CHECK_EQ(m, tw_strategy_max_out(h.s));
    st_close(&h);
    st_cfg_free(&c);
}

/* ---- bad events, sessions ------------------------------------------------------- */

static void test_bad_events(void)
{
    st_cfg c;
    st_cfg_make(&c, 2, 2, flipper, 1);
    st_harness h;
    REQUIRE(st_open(&h, &c.cfg) == 0);
    uint64_t bad = 0;
    tw_strategy_counters ct;
#define EXPECT_BAD(expr)                                                                   \
    do {                                                                                   \
        CHECK((expr) == 0);                                                                \
        bad++;                                                                             \
        tw_strategy_counters_get(h.s, &ct);                                                \
        CHECKF(ct.bad_events == bad, "%s: bad_events %llu", #expr,                         \
               (unsigned long long)ct.bad_events);                                         \
    } while (0)
    tw_ev ev = { .type = 99 };
    EXPECT_BAD(st_event(&h, &ev));
    EXPECT_BAD(st_bar(&h, 2, 0, 0, 100.0));  /* no instrument 2 */
    EXPECT_BAD(st_bar(&h, 0, 1, 0, 100.0));  /* instrument 0 is session 0's */
    EXPECT_BAD(st_bar(&h, 0, 0, TW_ORDER_SEQ_MASK + 1, 100.0));
    for (uint64_t i = 0; i < 3; i++)
        lockstep_bar(&h, 2, 2, i, alt, 0, NULL); /* bar 2: orders, unfilled */
    const uint64_t id = tw_order_id(0, 0, 2);
    EXPECT_BAD(st_fill(&h, id + 1, TW_SIDE_BUY, 1, 100.0));            /* not open */
    EXPECT_BAD(st_fill(&h, tw_order_id(0, 7, 2), TW_SIDE_BUY, 1, 1.0)); /* no instance 7 */
    EXPECT_BAD(st_fill(&h, tw_order_id(3, 0, 2), TW_SIDE_BUY, 1, 1.0)); /* no kind 3 */
    EXPECT_BAD(st_fill(&h, id, TW_SIDE_BUY, 0, 100.0));
    EXPECT_BAD(st_fill(&h, id, TW_SIDE_BUY, (int64_t)1 << 31, 100.0));
    EXPECT_BAD(st_fill(&h, id, TW_SIDE_BUY, 1, NAN));
    EXPECT_BAD(st_fill(&h, id, TW_SIDE_BUY, 1, -1.0));
    EXPECT_BAD(st_fill(&h, id, TW_SIDE_BUY, 1, INFINITY));
    EXPECT_BAD(st_fill(&h, id, 3, 1, 100.0));
    EXPECT_BAD(st_fill(&h, id, TW_SIDE_SELL, 1, 100.0)); /* a buy order */
    EXPECT_BAD(st_simple(&h, TW_EV_REJECT, 0, id + 1));
    EXPECT_BAD(st_simple(&h, TW_EV_CANCELED, 0, id + 1));
    EXPECT_BAD(st_simple(&h, TW_EV_BARRIER, 2, 1));
    EXPECT_BAD(st_simple(&h, TW_EV_SESSION, 2, TW_SESSION_UP));
    EXPECT_BAD(st_simple(&h, TW_EV_SESSION, 0, 9));
    tw_instance_stats st;
    stats(&h, 0, &st);
    CHECK(st.position == 0 && st.open_qty == 1 && st.fills == 0);
    /* A cancel reject of an order that is gone is ordinary ("too late"). */
    CHECK(st_simple(&h, TW_EV_CANCEL_REJECT, 0, id + 1) == 0);
    /* Old bars are ignored, skipped ones counted, bad prices fed as gaps. */
    CHECK(st_bar(&h, 0, 0, 2, 100.0) == 0 && st_bar(&h, 0, 0, 1, 100.0) == 0);
    CHECK(st_bar(&h, 0, 0, 5, -1.0) == 0);
    CHECK(st_bar(&h, 0, 0, 6, INFINITY) == 0);
    tw_strategy_counters_get(h.s, &ct);
    CHECK(ct.dup_bars == 2 && ct.skipped_bars == 2 && ct.bad_prices == 2 && ct.gap_bars == 2);
    CHECK(ct.bad_events == bad && tw_strategy_last_bar(h.s, 0) == 6);
    CHECK(h.log_by_kind[TW_LOG_BAD_EVENT] == bad + 2);
    /* After the two gaps the kernel's windows (2 wide) hold a NaN until
     * bar 8: no decision on 7, one on 9 at the latest. */
    CHECK(st_bar(&h, 0, 0, 7, 101.0) == 0);
    st_close(&h);
    st_cfg_free(&c);
#undef EXPECT_BAD
}

static void test_sessions(void)
{
    st_cfg c;
    st_cfg_make(&c, 3, 3, flipper, 1);
    st_harness h;
    REQUIRE(st_open(&h, &c.cfg) == 0);
    for (uint16_t j = 0; j < 3; j++)
        CHECK(st_simple(&h, TW_EV_SESSION, j, TW_SESSION_UP) == 0);
    CHECK(st_simple(&h, TW_EV_SESSION, 1, TW_SESSION_DOWN) == 0);
    CHECK(st_simple(&h, TW_EV_SESSION, 1, TW_SESSION_CLOSED) == 1 &&
          h.out[0].type == TW_OUT_LOGOUT && h.out[0].session == 1);
    CHECK(st_simple(&h, TW_EV_SESSION, 1, TW_SESSION_CLOSED) == 0); /* once */
    /* Its connection going down after the close: still closed (FINISHED
     * below needs it counted). */
    CHECK(st_simple(&h, TW_EV_SESSION, 1, TW_SESSION_DOWN) == 0);
    CHECK(st_simple(&h, TW_EV_SESSION, 0, TW_SESSION_CLOSED) == 1);
    size_t m = st_simple(&h, TW_EV_SESSION, 2, TW_SESSION_CLOSED);
    CHECK(m == 2 && h.out[0].type == TW_OUT_LOGOUT && h.out[0].session == 2 &&
          h.out[1].type == TW_OUT_FINISHED && h.out[1].session == TW_OUT_SESSION_NONE);
    /* A venue that opens again and closes again: a logout, no second
     * FINISHED. */
    CHECK(st_simple(&h, TW_EV_SESSION, 2, TW_SESSION_UP) == 0);
    CHECK(st_simple(&h, TW_EV_SESSION, 2, TW_SESSION_CLOSED) == 1 &&
          h.out[0].type == TW_OUT_LOGOUT);
    st_close(&h);
    st_cfg_free(&c);
}

/* ---- init -------------------------------------------------------------------------- */

static void test_init(void)
{
    st_cfg c;
    st_cfg_make(&c, 1, 1, flipper, 1);
    size_t bytes = tw_strategy_memsize(&c.cfg);
    CHECK(bytes > 0 && bytes % 64 == 0);
    void *mem = aligned_alloc(64, bytes + 64);
    tw_error err = { 0 };
    CHECK(!tw_strategy_init(mem, bytes - 64, &c.cfg, &err) && err.code == -ENOSPC);
    CHECK(!tw_strategy_init((char *)mem + 8, bytes, &c.cfg, &err) && err.code == -ENOSPC);
    CHECK(tw_strategy_init(mem, bytes, &c.cfg, &err) != NULL);
    struct {
        const char *what;
        int code;
    } cases[] = {
        { "window", -TW_EBADWINDOW }, { "window max", -TW_EBADWINDOW },
        { "instrument", -EINVAL },    { "session", -EINVAL },
        { "sessions", -EINVAL },      { "fee", -EINVAL },
        { "rate", -EINVAL },          { "loss", -EINVAL },
        { "on_loss", -EINVAL },       { "open", -EINVAL },
        { "name", -EINVAL },          { "position", -EINVAL },
    };
    for (size_t k = 0; k < TW_ARRAY_SIZE(cases); k++) {
        st_cfg b;
        st_cfg_make(&b, 1, 1, flipper, 1);
        switch (k) {
        case 0: b.inst[0].combo[3] = 0; break;
        case 1: b.inst[0].combo[5] = TW_WINDOW_MAX + 1; break;
        case 2: b.inst[0].instrument = 1; break;
        case 3: b.instr[0].session = 1; break;
        case 4: b.cfg.n_sessions = 0; break;
        case 5: b.cfg.fee = NAN; break;
        case 6: b.cfg.risk.max_orders_per_s = 0; break;
        case 7: b.cfg.risk.max_total_loss = 0.0; break;
        case 8: b.cfg.risk.on_loss = TW_TRADING_ACTIVE; break;
        case 9: b.cfg.risk.max_open_orders = TW_STRATEGY_MAX_OPEN + 1; break;
        case 10: b.inst[0].name[0] = 0; break;
        case 11: b.cfg.risk.max_position = -1; break;
        }
        CHECKF(tw_strategy_memsize(&b.cfg) == 0, "%s", cases[k].what);
        tw_error e2 = { 0 };
        CHECKF(!tw_strategy_init(mem, bytes, &b.cfg, &e2) && e2.code == cases[k].code &&
                   e2.msg[0],
               "%s: %d %s", cases[k].what, e2.code, e2.msg);
        st_cfg_free(&b);
    }
    CHECK(tw_strategy_memsize(NULL) == 0);
    free(mem);
    st_cfg_free(&c);
    CHECK(!strcmp(tw_risk_rule_name(TW_RULE_RATE_TOTAL), "order_rate_total") &&
          !strcmp(tw_risk_rule_name(TW_RULE_COUNT), "?"));
    CHECK(!strcmp(tw_trading_state_name(TW_TRADING_REDUCING), "REDUCING"));
}

/* ---- determinism ------------------------------------------------------------------ */

/* A seeded stream of every kind of event, some of them bad, with the
 * venue's answers to the strategy's own intents mixed in. */
typedef struct gen {
    uint64_t s;
    double px[3];
    uint64_t bar[3];
    struct {
        uint64_t id;
        int side;
        int64_t qty;
    } open[64];
    int n_open;
} gen;

static uint64_t rnd(gen *g)
{
    uint64_t z = (g->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void next_event(gen *g, tw_ev *ev, int64_t now)
{
    memset(ev, 0, sizeof(*ev));
    ev->now_ns = now;
    uint64_t r = rnd(g) % 1000;
    if (r < 600) {
        uint32_t k = (uint32_t)(rnd(g) % 3);
        ev->type = TW_EV_BAR;
        ev->instrument = k;
        ev->session = (uint16_t)(k % 2);
        g->px[k] *= 1.0 + ((double)(rnd(g) % 2001) - 1000.0) * 1e-5;
        ev->u.bar.index = g->bar[k]++;
        ev->u.bar.close = rnd(g) % 50 == 0 ? NAN : g->px[k];
        if (rnd(g) % 200 == 0)
            ev->u.bar.index -= 1; /* a repeat */
        return;
    }
    if (r >= 980) {
        if (r < 983) {
            ev->type = TW_EV_KILL;
        } else if (r < 993) {
            ev->type = TW_EV_OPERATOR;
            ev->u.oper.state = rnd(g) % 4 ? TW_TRADING_ACTIVE : (uint32_t)(rnd(g) % 3);
        } else if (r < 996) {
            ev->type = TW_EV_SESSION;
            ev->session = (uint16_t)(rnd(g) % 2);
            ev->u.session.state = (uint32_t)(rnd(g) % 3);
        } else {
            ev->type = TW_EV_BARRIER;
            ev->session = (uint16_t)(rnd(g) % 3);
            ev->u.barrier.id = rnd(g);
        }
        return;
    }
    /* The venue's answer to an order: mostly one that is open, sometimes
     * one that is not or on the wrong side (bad events). */
    int j = g->n_open ? (int)(rnd(g) % (uint64_t)g->n_open) : -1;
    uint64_t id = j >= 0 && rnd(g) % 20 ? g->open[j].id : rnd(g);
    int done = 1;
    if (r < 900) {
        ev->type = TW_EV_FILL;
        ev->side = (uint8_t)(j >= 0 && rnd(g) % 20 ? g->open[j].side : 1 + (int)(rnd(g) % 2));
        int64_t q = j >= 0 ? g->open[j].qty : 1;
        if (q > 1 && rnd(g) % 3 == 0)
            q = 1; /* a partial fill */
        else if (rnd(g) % 50 == 0)
            q++; /* an overfill */
        ev->u.fill.qty = q;
        ev->u.fill.order_id = id;
        ev->u.fill.px = g->px[rnd(g) % 3];
        if (j >= 0 && (q < g->open[j].qty || ev->side != g->open[j].side))
            done = 0;
        if (j >= 0 && q < g->open[j].qty && ev->side == g->open[j].side)
            g->open[j].qty -= q;
    } else if (r < 950) {
        ev->type = TW_EV_REJECT;
        ev->u.reject.order_id = id;
    } else if (r < 970) {
        ev->type = TW_EV_CANCELED;
        ev->u.order.order_id = id;
    } else {
        ev->type = TW_EV_CANCEL_REJECT;
        ev->u.order.order_id = id;
        done = 0;
    }
    if (j >= 0 && done && id == g->open[j].id)
        g->open[j] = g->open[--g->n_open];
}

static void test_determinism(void)
{
    static const int64_t combos[4 * 6] = { 1, 2, 1, 1, 1, 2, 3, 6, 2, 1, 2, 3,
                                           2, 5, 3, 1, 1, 4, 7, 13, 3, 5, 9, 11 };
    const uint64_t seed = 20240611;
    st_cfg c;
    st_cfg_make(&c, 2, 3, combos, 4);
    c.cfg.risk.max_position = 3;
    c.cfg.risk.max_total_position = 6;
    c.cfg.risk.max_orders_per_s = 50;
    c.cfg.risk.max_session_orders_per_s = 30;
    c.cfg.risk.max_instance_loss = 2.0;
    c.cfg.risk.max_open_orders = 3;
    st_harness h1, h2;
    REQUIRE(st_open(&h1, &c.cfg) == 0);
    REQUIRE(st_open(&h2, &c.cfg) == 0);
    gen g = { .s = seed, .px = { 100.0, 50.0, 2000.0 } };
    uint64_t diverged = 0, orders = 0, digests_moved = 0;
    uint64_t d_prev = tw_strategy_digest(h1.s);
    CHECK(d_prev == tw_strategy_digest(h2.s));
    for (int e = 0; e < 200000 && !diverged; e++) {
        tw_ev ev;
        next_event(&g, &ev, (int64_t)e * 1000000);
        size_t n1 = tw_strategy_on_event(h1.s, &ev, h1.out, h1.cap);
        size_t n2 = tw_strategy_on_event(h2.s, &ev, h2.out, h2.cap);
        if (n1 != n2 || memcmp(h1.out, h2.out, n1 * sizeof(tw_out)) != 0)
            diverged = (uint64_t)e + 1;
        /* The digests every 8 events (they read every combo's state). */
        if ((e & 7) == 0) {
            uint64_t d = tw_strategy_digest(h1.s);
            if (d != tw_strategy_digest(h2.s))
                diverged = (uint64_t)e + 1;
            digests_moved += d != d_prev;
            d_prev = d;
        }
        for (size_t k = 0; k < n1; k++)
            if (h1.out[k].type == TW_OUT_ORDER) {
                orders++;
                if (g.n_open < 64) {
                    g.open[g.n_open].id = h1.out[k].order_id;
                    g.open[g.n_open].side = h1.out[k].side;
                    g.open[g.n_open++].qty = h1.out[k].qty;
                }
            }
    }
    CHECKF(!diverged, "seed %llu: the two strategies diverged at event %llu",
           (unsigned long long)seed, (unsigned long long)diverged - 1);
    CHECK(orders > 1000 && digests_moved > 200000 / 8 - 10);
    CHECK(tw_strategy_digest(h1.s) == tw_strategy_digest(h2.s));
    tw_strategy_counters ct;
    tw_strategy_counters_get(h1.s, &ct);
    CHECK(ct.kills > 0 && ct.fills > 0 && ct.rejects > 0 && rule_sum(h1.s) > 0);
    check_logged(&h1);
    /* Exposure bookkeeping held: every instance's open orders sum to its
     * open_qty (the strategy's invariants are TW_ASSERTs in debug builds),
     * and no position went past the limits by a signal order. */
    printf("  determinism: 200000 events, %llu orders, %llu fills, %llu kills, rejected by "
           "rule:", (unsigned long long)orders, (unsigned long long)ct.fills,
           (unsigned long long)ct.kills);
    for (int r = 0; r < TW_RULE_COUNT; r++) {
        printf(" %s %llu", tw_risk_rule_name((tw_risk_rule)r),
               (unsigned long long)ct.rejected_by_rule[r]);
        CHECK(ct.rejected_by_rule[r] > 0); /* the stream trips every rule */
    }
    printf(": identical\n");
    /* A different stream gives a different digest (the digest sees state). */
    st_harness h3;
    REQUIRE(st_open(&h3, &c.cfg) == 0);
    gen g3 = { .s = seed + 1, .px = { 100.0, 50.0, 2000.0 } };
    for (int e = 0; e < 1000; e++) {
        tw_ev ev;
        next_event(&g3, &ev, (int64_t)e * 100000);
        tw_strategy_on_event(h3.s, &ev, h3.out, h3.cap);
    }
    CHECK(tw_strategy_digest(h3.s) != tw_strategy_digest(h1.s));
    st_close(&h1);
    st_close(&h2);
    st_close(&h3);
    st_cfg_free(&c);
}

/* The report without python: the text of each float reads back to the
 * same bits, integral floats carry ".0", every rule is listed. */
static void test_report(void)
{
    st_cfg c;
    st_cfg_make(&c, 1, 1, flipper, 1);
    st_harness h;
    REQUIRE(st_open(&h, &c.cfg) == 0);
    for (uint64_t i = 0; i < 9; i++)
        lockstep_bar(&h, 1, 1, i, alt, 1, NULL);
    tw_instance_stats st;
    stats(&h, 0, &st);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    REQUIRE(f);
    tw_trade_session_stats ss = { "v", 1, 2, 3, 4, 5 };
    CHECK(tw_trade_report_fprint(f, h.s, &ss, 1) == 0);
    fclose(f);
    const char *p = strstr(text, "\"pnl\": ");
    CHECK(p && st_same(strtod(p + 7, NULL), st.pnl) && st.trades == 6);
    p = strstr(text, "\"signal_pnl\": ");
    CHECK(p && st_same(strtod(p + 14, NULL), st.signal_pnl));
    CHECK(strstr(text, "\"combo\": [1, 2, 1, 1, 1, 2]") && strstr(text, "\"name\": \"s0.0\""));
    CHECK(strstr(text, "\"sessions\": [\n  {\"name\": \"v\", \"sent\": 1, \"received\": 2, "
                       "\"resends\": 3, \"reconnects\": 4, \"rejects\": 5}"));
    CHECK(strstr(text, "\"rejected_by_rule\": {\"halted\": 0, \"reducing\": 0, \"open_orders\": 0, "
                       "\"max_position\": 0, \"max_total_position\": 0, \"order_rate_session\": 0, "
                       "\"order_rate_total\": 0}"));
    CHECK(strstr(text, "\"state\": \"ACTIVE\""));
    free(text);
    /* A strategy that never traded: PnL 0 is written "0.0". */
    st_harness h2;
    REQUIRE(st_open(&h2, &c.cfg) == 0);
    f = open_memstream(&text, &len);
    REQUIRE(f);
    CHECK(tw_trade_report_fprint(f, h2.s, NULL, 0) == 0);
    fclose(f);
    CHECK(strstr(text, "\"pnl\": 0.0, \"signal_pnl\": 0.0") && strstr(text, "\"sessions\": [\n]"));
    free(text);
    /* A trades CSV row: shortest round-trip prices and r. */
    f = open_memstream(&text, &len);
    REQUIRE(f);
    CHECK(tw_trade_csv_header(f) == 0 && tw_trade_csv_row(f, h.s, &h.trades[0]) == 0);
    fclose(f);
    CHECK(!strcmp(text, "instance,instrument,side,entry_bar,entry_price,exit_bar,exit_price,r\n"
                        "s0.0,SYM0,1,2,100,3,101,1.0000000000000009\n"));
    free(text);
    /* Written atomically to a path; a directory that is not there fails
     * naming the path. */
    char path[] = "/tmp/tw_strategy_report_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    tw_error err = { 0 };
    CHECK(tw_trade_report_write(path, h.s, &ss, 1, &err) == 0);
    f = fopen(path, "r");
    CHECK(f && fgetc(f) == '{');
    if (f)
        fclose(f);
    unlink(path);
    CHECK(tw_trade_report_write("/nonexistent/dir/r.json", h.s, &ss, 1, &err) == -ENOENT &&
          strstr(err.msg, "/nonexistent/dir/r.json.tmp"));
    st_close(&h);
    st_close(&h2);
    st_cfg_free(&c);
}

/* ---- kernels other than hma_sar by combo ---------------------------------------- */

typedef struct klog {
    tw_trade t[2][4096];
    size_t n[2];
} klog;

static void klog_fn(void *ctx, const tw_trade *t)
{
    klog *l = ctx;
    TW_VERIFY(t->combo < 2 && l->n[t->combo] < 4096);
    l->t[t->combo][l->n[t->combo]++] = *t;
}

/* zscore instances next to hma_sar by combo on one instrument, filled in
 * lockstep: per instance the trades booked from fills, the execution and
 * signal PnL are tw_ksweep()'s bits; the digest covers the kernel state;
 * a combo the kernel refuses fails init. */
static void test_kernels(void)
{
    enum { N = 3000 };
    double *close = malloc(N * sizeof(double));
    uint64_t x = 12345;
    double px = 100.0;
    for (size_t i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        px *= 1.0 + ((double)(x >> 11) / 9007199254740992.0 - 0.5) * 0.02;
        close[i] = (i % 97 == 13 || i == 0) ? NAN : px;
    }
    const tw_kernel_def *z = NULL, *hs = tw_kernel_builtin(0);
    tw_error err = { 0 };
    REQUIRE(tw_kernel_find("zscore", &z, &err) == 0);
    static const int64_t hcombo[TW_COMBO_WINDOWS] = { 3, 6, 2, 1, 2, 3 };
    /* instance 0: zscore, 1: hma_sar by combo, 2: zscore, 3: hma_sar by name */
    const double zp[2][3] = { { 20, 2.0, 0.5 }, { 7, 1.25, 0.75 } };
    st_cfg c;
    st_cfg_make(&c, 1, 1, (const int64_t *)hcombo, 1);
    tw_instance_cfg inst[4];
    memset(inst, 0, sizeof(inst));
    for (int i = 0; i < 4; i++) {
        snprintf(inst[i].name, TW_NAME_MAX, "k.%d", i);
        memcpy(inst[i].combo, hcombo, sizeof(hcombo));
    }
    inst[0].kernel = z;
    memcpy(inst[0].params, zp[0], sizeof(zp[0]));
    inst[2].kernel = z;
    memcpy(inst[2].params, zp[1], sizeof(zp[1]));
    inst[3].kernel = hs;
    c.cfg.instances = inst;
    c.cfg.n_instances = 4;

    st_harness h, h2;
    REQUIRE(st_open(&h, &c.cfg) == 0);
    REQUIRE(st_open(&h2, &c.cfg) == 0);
    st_simple(&h, TW_EV_SESSION, 0, TW_SESSION_UP);
    st_simple(&h2, TW_EV_SESSION, 0, TW_SESSION_UP);
    double last = NAN;
    tw_out *outs = malloc(tw_strategy_max_out(h.s) * sizeof(tw_out));
    for (size_t i = 0; i < N; i++) {
        if (!isnan(close[i]))
            last = close[i];
        size_t n = st_take(&h, st_bar(&h, 0, 0, i, close[i]), outs);
        st_fill_orders(&h, outs, n, &last);
        if (i < N / 2) {
            n = st_take(&h2, st_bar(&h2, 0, 0, i, close[i]), outs);
            st_fill_orders(&h2, outs, n, &last);
        }
    }
    /* The references: zscore's two combos, hma_sar's one. */
    double params[6] = { zp[0][0], zp[0][1], zp[0][2], zp[1][0], zp[1][1], zp[1][2] };
    double hp[TW_COMBO_WINDOWS];
    for (int j = 0; j < TW_COMBO_WINDOWS; j++)
        hp[j] = (double)hcombo[j];
    tw_ksweep_opts o;
    tw_ksweep_opts_init(&o);
    o.threads = 1;
    o.fee = c.cfg.fee;
    tw_kresult zr[2], hr[1];
    static klog zl, hl;
    memset(&zl, 0, sizeof(zl));
    memset(&hl, 0, sizeof(hl));
    REQUIRE(tw_ksweep(z, close, N, params, 2, &o, zr, klog_fn, &zl, &err) == 0);
    REQUIRE(tw_ksweep(hs, close, N, hp, 1, &o, hr, klog_fn, &hl, &err) == 0);
    CHECK(zr[0].trades > 10 && zr[1].trades > 10 && hr[0].trades > 10);
    const tw_kresult *want[4] = { &zr[0], &hr[0], &zr[1], &hr[0] };
    const tw_trade *wlist[4] = { zl.t[0], hl.t[0], zl.t[1], hl.t[0] };
    for (uint32_t i = 0; i < 4; i++) {
        tw_instance_stats st;
        tw_strategy_instance(h.s, i, &st);
        CHECKF(st.signal_trades == want[i]->trades && st_same(st.signal_pnl, want[i]->pnl),
               "instance %u: signal %lld %.17g, sweep %lld %.17g", i, (long long)st.signal_trades,
               st.signal_pnl, (long long)want[i]->trades, want[i]->pnl);
        CHECKF(st.trades == want[i]->trades && st_same(st.pnl, want[i]->pnl),
               "instance %u: fills %lld %.17g, sweep %lld %.17g", i, (long long)st.trades, st.pnl,
               (long long)want[i]->trades, want[i]->pnl);
        CHECK(st.position == want[i]->open.side && st.signal == want[i]->open.side);
        CHECK(st.kernel == c.cfg.instances[i].kernel && st.stopped == 0);
        CHECK(i == 0 || i == 2 ? st.params != NULL : st.params == NULL);
        size_t k = 0;
        for (size_t j = 0; j < h.n_trades; j++) {
            const tw_strategy_trade *t = &h.trades[j];
            if (t->instance != i)
                continue;
            const tw_trade *w = &wlist[i][k++];
            CHECKF(t->side == w->side && t->entry_bar == (uint64_t)w->entry_bar &&
                   t->exit_bar == (uint64_t)w->exit_bar && st_same(t->entry_px, w->entry_price) &&
                   st_same(t->exit_px, w->exit_price) && st_same(t->r, w->r),
                   "instance %u trade %zu differs", i, k - 1);
        }
        CHECK_EQ((int64_t)k, want[i]->trades);
    }
    /* The digest covers the kernels' state: half the bars differ. */
    CHECK(tw_strategy_digest(h.s) != tw_strategy_digest(h2.s));
    st_close(&h2);
    REQUIRE(st_open(&h2, &c.cfg) == 0);
    st_simple(&h2, TW_EV_SESSION, 0, TW_SESSION_UP);
    for (size_t i = 0; i < N; i++) {
        size_t n = st_take(&h2, st_bar(&h2, 0, 0, i, close[i]), outs);
        if (!isnan(close[i]))
            last = close[i];
        st_fill_orders(&h2, outs, n, &last);
    }
    CHECK(tw_strategy_digest(h.s) == tw_strategy_digest(h2.s));
    st_close(&h);
    st_close(&h2);
    /* A combo zscore refuses (window 1; exit >= entry) fails init. */
    inst[2].params[0] = 1;
    CHECK(tw_strategy_memsize(&c.cfg) == 0);
    size_t big = 1 << 20;
    void *mem = aligned_alloc(64, big);
    CHECK(tw_strategy_init(mem, big, &c.cfg, &err) == NULL && err.code == -EINVAL &&
          strstr(err.msg, "zscore"));
    inst[2].params[0] = 7;
    inst[2].params[2] = 1.25;
    CHECK(tw_strategy_init(mem, big, &c.cfg, &err) == NULL && err.code == -EINVAL);
    free(mem);
    free(outs);
    free(close);
    st_cfg_free(&c);
}

int main(void)
{
    test_kernels();
    test_orders();
    test_max_position();
    test_max_total_position();
    test_rates();
    test_states();
    test_open_orders();
    test_losses();
    test_kill();
    test_max_out();
    test_bad_events();
    test_sessions();
    test_init();
    test_determinism();
    test_report();
    return tw_check_done("strategy");
}
