/* The venue (tickwire/exchange.h) against trader sessions of our own over
 * in-memory pipes on a virtual clock (xt.h): live.md's protocol tag by
 * tag, the lockstep barrier, every kind of bad input, each fault, paced
 * mode, the end of a run and SIGTERM's stop, a venue started again on
 * its stores.  Deterministic: a failure reproduces exactly (XT_VERBOSE=1
 * prints every message). */
#include "xt.h"

/* A trader session, connected and logged on. */
static xt_client *logged_on(xt_env *e, const char *name, int store,
                            void (*app)(xt_client *, const tw_fix_msg *, int))
{
    xt_client *cl = xt_client_new(e, name, store);
    cl->on_app = app;
    if (xt_connect(cl, 1) != 0)
        return NULL;
    xt_pump(e);
    CHECKF(cl->fs.state == TW_FIX_ACTIVE, "%s: not logged on", name);
    return cl;
}

/* Runs the venue to its end (Closed, Logouts). */
static void run_to_end(xt_env *e)
{
    CHECKF(xt_until(e, xt_pred_done, NULL, 60000000000ll), "the run did not end");
}

/* ---- tests ------------------------------------------------------------------ */

/* Logon, one V with both symbols and an unknown one, the whole run in
 * lockstep, fills, Closed, Logout. */
static void t_lockstep_run(void)
{
    xt_env e;
    tw_xchg_cfg c;
    xt_cfg(&c, &e, syms, 2);
    REQUIRE(xt_env_open(&e, &c) == 0);
    xt_client *cl = logged_on(&e, "TRADER1", 0, rule);
    REQUIRE(cl);
    REQUIRE(cl->fs.state == TW_FIX_ACTIVE);
    const char *three[3] = {"AAA", "ZZZ", "BBB"};
    xt_subscribe(cl, "md-1", three, 3);
    run_to_end(&e);
    /* Y for the unknown symbol, with 262 and 281=0. */
    tw_fix_msg m;
    CHECK(xt_last(cl, "Y", &m) >= 0 && !strcmp(xt_str(&m, 262), "md-1") &&
          !strcmp(xt_str(&m, 281), "0") && strstr(xt_str(&m, 58), "ZZZ"));
    CHECK_EQ(xt_count(cl, "Y"), 1);
    const char *req[2] = {"md-1", "md-1"};
    xt_stream r = xt_check_stream(cl, syms, 2, req, 1);
    CHECK_EQ(r.bars[0], 20);
    CHECK_EQ(r.bars[1], 12);
    CHECK_EQ(r.test_requests, 20);
    CHECK(r.opened && r.closed && r.errors == 0);
    /* One X per bar: both instruments' entries together while both last. */
    CHECK_EQ(xt_count(cl, "X"), 20);
    check_rule_fills(cl, &e);
    const tw_xchg_stats *st = tw_xchg_get_stats(e.x);
    CHECK_EQ(st->bars, 20);
    CHECK_EQ(st->md_entries, 32);
    CHECK_EQ(st->barrier_acks, 20);
    CHECK_EQ(st->orders, 7 + 3);
    CHECK_EQ(st->fills, 9);
    CHECK_EQ(st->order_rejects, 1);
    CHECK_EQ(st->before_first_price, 1);
    CHECK_EQ(st->unknown_symbols, 1);
    CHECK_EQ(st->logouts, 1);
    CHECK(cl->logout_events == 1);
    /* OrderIDs and ExecIDs are unique. */
    char ids[64][48];
    unsigned nid = 0;
    for (unsigned i = 0; i < cl->n_log; i++)
        if (xt_parse(cl, i, &m) == 0 && xt_is(&m, "8")) {
            for (unsigned j = 0; j < nid; j++)
                CHECK(strcmp(ids[j], xt_str(&m, 17)) != 0);
            if (nid < 64)
                snprintf(ids[nid++], 48, "%s", xt_str(&m, 17));
        }
    CHECK_EQ(nid, 10);
    char sum[512];
    tw_xchg_summary(e.x, sum, sizeof(sum));
    CHECK(strstr(sum, "bars=20/20") && strstr(sum, "fills=9"));
    xt_env_close(&e);
}

/* The barrier: while the trader's Heartbeat is held back nothing more is
 * sent, however long; orders before the Heartbeat fill at that bar, an
 * order after it at the next. */
static void t_barrier_holds(void)
{
    xt_env e;
    tw_xchg_cfg c;
    xt_cfg(&c, &e, syms, 2);
    REQUIRE(xt_env_open(&e, &c) == 0);
    xt_client *cl = logged_on(&e, "T", 0, NULL);
    REQUIRE(cl);
    cl->hold = 1;
    xt_subscribe(cl, "m", both, 2);
    xt_pump(&e);
    CHECK_EQ(xt_count(cl, "X"), 0); /* the V is still with us */
    xt_push(cl); /* V in; Open and TestRequest "open" out */
    CHECK_EQ(xt_count(cl, "X"), 0);
    CHECK_EQ(xt_count(cl, "h"), 1);
    xt_push(cl); /* its answer in: bar 0 out */
    /* Bar 0 and TestRequest bar-0 went out; our session answered at once,
     * and the answer is held. */
    CHECK_EQ(xt_count(cl, "X"), 1);
    CHECK_EQ(xt_count(cl, "1"), 2);
    REQUIRE(cl->c2v_len > 0);
    size_t hb_len = cl->c2v_len;
    char hb[1024];
    REQUIRE(hb_len < sizeof(hb));
    memcpy(hb, cl->c2v, hb_len);
    cl->c2v_len = 0;
    /* Time passes: nothing more without the Heartbeat. */
    for (int k = 0; k < 5; k++)
        xt_advance(&e, 1000000000);
    CHECK_EQ(xt_count(cl, "X"), 1);
    /* An order numbered after the Heartbeat: Heartbeat in, bar 1 out at
     * once, then the order fills at bar 1's close. */
    xt_order(cl, "after", "AAA", '1', 1, '1', NULL);
    char after[1024];
    size_t after_len = cl->c2v_len;
    REQUIRE(after_len < sizeof(after));
    memcpy(after, cl->c2v, after_len);
    cl->c2v_len = 0;
    tw_xchg_conn_input(e.x, cl->xc, hb, hb_len, e.now);
    xt_pump(&e);
    CHECK_EQ(xt_count(cl, "X"), 2);
    cl->c2v_len = 0; /* the Heartbeat for bar 1: dropped, we will not answer */
    tw_xchg_conn_input(e.x, cl->xc, after, after_len, e.now);
    xt_pump(&e);
    xt_check_fill(cl, "after", &syms[0], 1, 1, NULL);
    CHECK_EQ(xt_count(cl, "X"), 2);
    xt_drop(cl);
    xt_env_close(&e);

    /* Orders sent from the callback of bar i (before the session reaches
     * the TestRequest) fill at bar i, across the whole run. */
    xt_cfg(&c, &e, syms, 2);
    REQUIRE(xt_env_open(&e, &c) == 0);
    cl = logged_on(&e, "T", 0, rule);
    REQUIRE(cl);
    xt_subscribe(cl, "m", both, 2);
    run_to_end(&e);
    check_rule_fills(cl, &e);
    xt_env_close(&e);
}

/* Two sessions: bar 0 waits for both (min_sessions 2); a held Heartbeat
 * of one holds the other's next bar too. */
static void t_two_sessions(void)
{
    xt_env e;
    tw_xchg_cfg c;
    xt_cfg(&c, &e, syms, 2);
    c.min_sessions = 2;
    REQUIRE(xt_env_open(&e, &c) == 0);
    xt_client *a = xt_client_new(&e, "TA", 0), *b = xt_client_new(&e, "TB", 0);
    a->on_app = rule;
    REQUIRE(xt_connect(a, 1) == 0 && xt_connect(b, 1) == 0);
    xt_pump(&e);
    xt_subscribe(a, "a1", both, 2);
    xt_pump(&e);
    xt_advance(&e, 2000000000);
    CHECK_EQ(xt_count(a, "X"), 0);
    CHECK_EQ(xt_count(a, "h"), 1); /* Open at subscription */
    const char *bb[1] = {"BBB"};
    b->hold = 1;
    xt_subscribe(b, "b1", bb, 1);
    xt_pump(&e);
    CHECK_EQ(xt_count(a, "X"), 0);
    xt_push(b); /* B's V */
    CHECK_EQ(xt_count(a, "X"), 0);
    xt_push(b); /* B's answer to "open": bar 0; B's Heartbeat then stays with B */
    CHECK_EQ(xt_count(a, "X"), 1);
    CHECK_EQ(xt_count(b, "X"), 1);
    xt_advance(&e, 3000000000);
    CHECK_EQ(xt_count(a, "X"), 1);
    b->hold = 0;
    run_to_end(&e);
    const char *ra[2] = {"a1", "a1"}, *rb[2] = {NULL, "b1"};
    xt_stream r = xt_check_stream(a, syms, 2, ra, 1);
    CHECK(r.bars[0] == 20 && r.bars[1] == 12 && r.closed);
    r = xt_check_stream(b, syms, 2, rb, 1);
    CHECK(r.bars[0] == 0 && r.bars[1] == 12 && r.closed);
    /* B subscribed to BBB only, which ends at bar 11: no barrier after. */
    CHECK_EQ(r.test_requests, 12);
    check_rule_fills(a, &e);
    CHECK_EQ(tw_xchg_get_stats(e.x)->sessions, 2);
    xt_env_close(&e);
}

/* Several V per trader and more symbols than one X takes: each X's 262
 * is the MDReqID of its first entry's symbol. */
static void t_chunks_and_md_req_ids(void)
{
    enum { NS = 70 };
    static double px[NS][3];
    static char names[NS][8];
    static tw_xchg_symbol many[NS];
    static const char *reqs[NS];
    for (int i = 0; i < NS; i++) {
        snprintf(names[i], sizeof(names[i]), "S%02d", i);
        for (int b = 0; b < 3; b++)
            px[i][b] = 10.0 + i + b * 0.01;
        many[i] = (tw_xchg_symbol){names[i], px[i], 3};
    }
    xt_env e;
    tw_xchg_cfg c;
    xt_cfg(&c, &e, many, NS);
    REQUIRE(xt_env_open(&e, &c) == 0);
    xt_client *cl = logged_on(&e, "T", 0, NULL);
    REQUIRE(cl);
    cl->hold = 1; /* both V before bar 0 */
    const char *first[40], *rest[NS - 40];
    for (int i = 0; i < NS; i++) {
        if (i < 40)
            first[i] = names[i];
        else
            rest[i - 40] = names[i];
        reqs[i] = i < 40 ? "lo" : "hi";
    }
    xt_subscribe(cl, "lo", first, 40);
    xt_subscribe(cl, "hi", rest, NS - 40);
    cl->hold = 0;
    run_to_end(&e);
    xt_stream r = xt_check_stream(cl, many, NS, reqs, 1);
    CHECK(r.errors == 0 && r.closed);
    for (int i = 0; i < NS && i < 16; i++)
        CHECK_EQ(r.bars[i], 3);
    /* 70 entries per bar, 32 per X: 3 X per bar. */
    CHECK_EQ(xt_count(cl, "X"), 9);
    CHECK_EQ(tw_xchg_get_stats(e.x)->md_entries, 3 * NS);
    xt_env_close(&e);
}

/* Prices whose exact text is hundreds of digits (the largest double, the
 * smallest subnormal) for 40 instruments: an X is cut by bytes as well as
 * by entries, so each fits the session's buffer and every bar arrives. */
static void t_long_prices(void)
{
    enum { NS = 40 };
    static double px[NS][2];
    static char names[NS][8];
    static tw_xchg_symbol big[NS];
    static const char *all[NS];
    for (int i = 0; i < NS; i++) {
        snprintf(names[i], sizeof(names[i]), "L%02d", i);
        px[i][0] = i % 2 ? 1.7976931348623157e308 : 5e-324;
        px[i][1] = i % 2 ? 4.9406564584124654e-324 * 3 : 1.7976931348623155e308;
        big[i] = (tw_xchg_symbol){names[i], px[i], 2};
        all[i] = names[i];
    }
    xt_env e;
    tw_xchg_cfg c;
    xt_cfg(&c, &e, big, NS);
    REQUIRE(xt_env_open(&e, &c) == 0);
    xt_client *cl = logged_on(&e, "T", 0, NULL);
    REQUIRE(cl);
    xt_subscribe(cl, "m", all, NS);
    run_to_end(&e);
    xt_stream r = xt_check_stream(cl, big, NS, NULL, 1);
    CHECK(r.errors == 0 && r.closed);
    for (int i = 0; i < NS; i++)
        CHECK_EQ(r.bars[i], 2);
    CHECK_EQ(tw_xchg_get_stats(e.x)->md_entries, 2 * NS);
    CHECK_EQ(tw_xchg_get_stats(e.x)->send_errors, 0);
    CHECK(xt_count(cl, "X") > 2); /* more than one X per bar */
    for (unsigned i = 0; i < cl->n_log; i++)
        CHECK(cl->log[i].len <= TW_FIX_TX_BUF);
    xt_env_close(&e);
}

/* ---- bad input ------------------------------------------------------------------ */

static void v_raw(xt_client *cl, const char *req, const char *f263, const char *f264,
                  const char *f265, const char *types, int nsym, const char *sym)
{
    tw_fix_wbuf *w = xt_begin(cl, "V");
    if (!w)
        return;
    if (req)
        tw_fix_put_cstr(w, 262, req);
    if (f263)
        tw_fix_put_cstr(w, 263, f263);
    if (f264)
        tw_fix_put_cstr(w, 264, f264);
    if (f265)
        tw_fix_put_cstr(w, 265, f265);
    if (types) {
        tw_fix_put_u64(w, 267, strlen(types));
        for (const char *t = types; *t; t++)
            tw_fix_put_char(w, 269, *t);
    }
    if (nsym >= 0)
        tw_fix_put_u64(w, 146, (uint64_t)nsym);
    if (sym)
        tw_fix_put_cstr(w, 55, sym);
    xt_send(cl);
}

/* The last session Reject: 373 and 371 as expected. */
static void expect_reject3(xt_client *cl, unsigned before, int reason, int tag, const char *what)
{
    tw_fix_msg m;
    int i = xt_last(cl, "3", &m);
    CHECKF(i >= (int)before && atoi(xt_str(&m, 373)) == reason &&
               atoi(xt_str(&m, 371)) == tag && xt_has(&m, 45) && xt_has(&m, 58),
           "%s: want Reject 373=%d 371=%d, got %s373=%s 371=%s 58=%s", what, reason, tag,
           i < (int)before ? "none; last " : "", xt_str(&m, 373), xt_str(&m, 371),
           xt_str(&m, 58));
}

static void expect_y(xt_client *cl, unsigned before, const char *reason, const char *what)
{
    tw_fix_msg m;
    int i = xt_last(cl, "Y", &m);
    CHECKF(i >= (int)before && !strcmp(xt_str(&m, 281), reason) && xt_has(&m, 262),
           "%s: want Y 281=%s, got %s", what, reason, i >= (int)before ? xt_str(&m, 281) : "none");
}

static void t_md_request_errors(void)
{
    xt_env e;
    tw_xchg_cfg c;
    xt_cfg(&c, &e, syms, 2);
    REQUIRE(xt_env_open(&e, &c) == 0);
    xt_client *cl = logged_on(&e, "T", 0, NULL);
    REQUIRE(cl);
    unsigned n;
    n = cl->n_log, v_raw(cl, NULL, "1", "1", "1", "2", 1, "AAA"), xt_pump(&e);
    expect_reject3(cl, n, 1, 262, "no 262");
    n = cl->n_log, v_raw(cl, "r", NULL, "1", "1", "2", 1, "AAA"), xt_pump(&e);
    expect_reject3(cl, n, 1, 263, "no 263");
    n = cl->n_log, v_raw(cl, "r", "1", NULL, "1", "2", 1, "AAA"), xt_pump(&e);
    expect_reject3(cl, n, 1, 264, "no 264");
    n = cl->n_log, v_raw(cl, "r", "1", "x", "1", "2", 1, "AAA"), xt_pump(&e);
    expect_reject3(cl, n, 6, 264, "264=x");
    n = cl->n_log, v_raw(cl, "r", "1", "1", "1", NULL, 1, "AAA"), xt_pump(&e);
    expect_reject3(cl, n, 1, 267, "no 267");
    n = cl->n_log, v_raw(cl, "r", "1", "1", "1", "2", -1, NULL), xt_pump(&e);
    expect_reject3(cl, n, 1, 146, "no 146");
    n = cl->n_log, v_raw(cl, "r", "1", "1", "1", "2", 3, "AAA"), xt_pump(&e);
    expect_reject3(cl, n, 16, 146, "146=3 with one 55");
    n = cl->n_log, v_raw(cl, "r", "0", "1", "1", "2", 1, "AAA"), xt_pump(&e);
    expect_y(cl, n, "4", "263=0");
    n = cl->n_log, v_raw(cl, "r", "1", "5", "1", "2", 1, "AAA"), xt_pump(&e);
    expect_y(cl, n, "5", "264=5");
    n = cl->n_log, v_raw(cl, "r", "1", "1", "0", "2", 1, "AAA"), xt_pump(&e);
    expect_y(cl, n, "6", "265=0");
    n = cl->n_log, v_raw(cl, "r", "1", "1", "1", "01", 1, "AAA"), xt_pump(&e);
    expect_y(cl, n, "8", "269=0,1");
    n = cl->n_log, v_raw(cl, "r", "1", "1", "1", "2", 1, "NOPE"), xt_pump(&e);
    expect_y(cl, n, "0", "unknown symbol");
    CHECK_EQ(xt_count(cl, "X"), 0); /* nothing was subscribed */
    CHECK_EQ(xt_count(cl, "h"), 0);
    /* Subscribe, then unsubscribe BBB before bars start: only AAA flows.
     * (One V per instrument, the other form live.md allows.) */
    cl->hold = 1;
    v_raw(cl, "ra", "1", "1", "1", "2", 1, "AAA");
    v_raw(cl, "rb", "1", "1", "1", "2", 1, "BBB");
    v_raw(cl, "rb", "2", "1", "1", "2", 1, "BBB");
    cl->hold = 0;
    run_to_end(&e);
    const char *req[2] = {"ra", NULL};
    xt_stream r = xt_check_stream(cl, syms, 2, req, 1);
    CHECK(r.bars[0] == 20 && r.bars[1] == 0 && r.errors == 0);
    CHECK_EQ(cl->fs.st.rejects_rcvd, 7);
    CHECK_EQ(tw_xchg_get_stats(e.x)->md_rejects, 5);
    xt_env_close(&e);
}

/* One malformed D: fields given as "tag=value" strings, NULL-terminated. */
static void d_raw(xt_client *cl, const char *const *kv)
{
    tw_fix_wbuf *w = xt_begin(cl, "D");
    if (!w)
        return;
    for (; *kv; kv++) {
        const char *eq = strchr(*kv, '=');
        tw_fix_put_cstr(w, (uint32_t)atoi(*kv), eq + 1);
    }
    xt_send(cl);
}

/* Rejects for the message our session numbered seq. */
static int reject_for(const xt_client *cl, uint64_t seq, tw_fix_msg *m)
{
    for (unsigned i = 0; i < cl->n_log; i++)
        if (xt_parse(cl, i, m) == 0 && xt_is(m, "3") && (uint64_t)atoll(xt_str(m, 45)) == seq)
            return (int)i;
    return -1;
}

static const struct {
    const char *kv[8];
    int reason, tag;
} rej3[] = {
    {{"55=AAA", "54=1", "38=1", "40=1", "60=20260101-00:00:00", NULL}, 1, 11},
    {{"11=a", "54=1", "38=1", "40=1", "60=20260101-00:00:00", NULL}, 1, 55},
    {{"11=b", "55=AAA", "38=1", "40=1", "60=20260101-00:00:00", NULL}, 1, 54},
    {{"11=c", "55=AAA", "54=1", "40=1", "60=20260101-00:00:00", NULL}, 1, 38},
    {{"11=d", "55=AAA", "54=1", "38=1", "60=20260101-00:00:00", NULL}, 1, 40},
    {{"11=e", "55=AAA", "54=1", "38=1", "40=1", NULL}, 1, 60},
    {{"11=f", "55=AAA", "54=7", "38=1", "40=1", "60=20260101-00:00:00", NULL}, 5, 54},
    {{"11=g", "55=AAA", "54=1", "38=abc", "40=1", "60=20260101-00:00:00", NULL}, 6, 38},
    {{"11=h", "55=AAA", "54=1", "38=1.5", "40=1", "60=20260101-00:00:00", NULL}, 6, 38},
    {{"11=i", "55=AAA", "54=1", "38=1", "40=1", "60=yesterday", NULL}, 6, 60},
    {{"11=0123456789012345678901234567890123456789012345678901234567890123456789", "55=AAA",
      "54=1", "38=1", "40=1", "60=20260101-00:00:00", NULL},
     5, 11},
};
static const struct {
    const char *kv[8];
    const char *id;
    int reason;
} rej8[] = {
    {{"11=q0", "55=AAA", "54=1", "38=0", "40=1", "60=20260101-00:00:00", NULL}, "q0", 13},
    {{"11=q1", "55=AAA", "54=2", "38=-3", "40=1", "60=20260101-00:00:00", NULL}, "q1", 13},
    {{"11=lim", "55=AAA", "54=1", "38=1", "40=2", "44=1.5", "60=20260101-00:00:00", NULL}, "lim",
     11},
    {{"11=unk", "55=ZZZ", "54=1", "38=1", "40=1", "60=20260101-00:00:00", NULL}, "unk", 1},
    {{"11=early", "55=BBB", "54=1", "38=1", "40=1", "60=20260101-00:00:00", NULL}, "early", 2},
};
static uint64_t rej3_seq[sizeof(rej3) / sizeof(rej3[0])];

/* Everything bad at bar 0, from the callback of its X (so before the
 * Heartbeat that lets bar 1 go). */
static void bad_orders(xt_client *cl, const tw_fix_msg *m, int possdup)
{
    (void)possdup;
    if (!xt_is(m, "X") || strcmp(xt_str(m, 278), "0"))
        return;
    for (unsigned k = 0; k < sizeof(rej3) / sizeof(rej3[0]); k++) {
        rej3_seq[k] = cl->fs.next_out;
        d_raw(cl, rej3[k].kv);
    }
    for (unsigned k = 0; k < sizeof(rej8) / sizeof(rej8[0]); k++)
        d_raw(cl, rej8[k].kv);
    xt_order(cl, "good", "AAA", '1', 5, '1', "acct");
    xt_order(cl, "good", "AAA", '2', 5, '1', "acct"); /* duplicate ClOrdID */
    /* Cancel of a filled order and of an unknown one; one without 41; an
     * unsupported type. */
    tw_fix_wbuf *w = xt_begin(cl, "F");
    tw_fix_put_cstr(w, 41, "good");
    tw_fix_put_cstr(w, 11, "cx1");
    tw_fix_put_cstr(w, 55, "AAA");
    tw_fix_put_char(w, 54, '1');
    tw_fix_put_ts(w, 60, cl->env->now + XT_EPOCH, 3);
    xt_send(cl);
    w = xt_begin(cl, "F");
    tw_fix_put_cstr(w, 41, "nosuch");
    tw_fix_put_cstr(w, 11, "cx2");
    xt_send(cl);
    w = xt_begin(cl, "F");
    tw_fix_put_cstr(w, 11, "cx3");
    xt_send(cl);
    w = xt_begin(cl, "G");
    tw_fix_put_cstr(w, 11, "rep");
    xt_send(cl);
}

static void t_order_errors(void)
{
    xt_env e;
    tw_xchg_cfg c;
    xt_cfg(&c, &e, syms, 2);
    REQUIRE(xt_env_open(&e, &c) == 0);
    xt_client *cl = logged_on(&e, "T", 0, bad_orders);
    REQUIRE(cl);
    xt_subscribe(cl, "m", both, 2);
    run_to_end(&e);
    tw_fix_msg m;
    for (unsigned k = 0; k < sizeof(rej3) / sizeof(rej3[0]); k++) {
        int i = reject_for(cl, rej3_seq[k], &m);
        CHECKF(i >= 0 && atoi(xt_str(&m, 373)) == rej3[k].reason &&
                   atoi(xt_str(&m, 371)) == rej3[k].tag && !strcmp(xt_str(&m, 372), "D") &&
                   xt_has(&m, 58),
               "order case %u: want Reject 373=%d 371=%d, got %s 373=%s 371=%s 58=%s", k,
               rej3[k].reason, rej3[k].tag, i >= 0 ? "" : "none", xt_str(&m, 373),
               xt_str(&m, 371), xt_str(&m, 58));
    }
    for (unsigned k = 0; k < sizeof(rej8) / sizeof(rej8[0]); k++)
        xt_check_reject(cl, rej8[k].id, rej8[k].reason);
    xt_check_fill(cl, "good", &syms[0], 0, 5, "acct");
    int dups = 0;
    for (unsigned i = 0; i < cl->n_log; i++)
        if (xt_parse(cl, i, &m) == 0 && xt_is(&m, "8") && !strcmp(xt_str(&m, 11), "good") &&
            !strcmp(xt_str(&m, 150), "8"))
            dups += atoi(xt_str(&m, 103)) == 6;
    CHECK_EQ(dups, 1);
    int i9 = xt_er(cl, "cx1", &m);
    CHECK(i9 >= 0 && xt_is(&m, "9") && !strcmp(xt_str(&m, 41), "good") &&
          !strcmp(xt_str(&m, 39), "2") && !strcmp(xt_str(&m, 102), "0") &&
          !strcmp(xt_str(&m, 434), "1") && xt_has(&m, 37));
    i9 = xt_er(cl, "cx2", &m);
    CHECK(i9 >= 0 && xt_is(&m, "9") && !strcmp(xt_str(&m, 102), "1") &&
          !strcmp(xt_str(&m, 37), "NONE"));
    int found41 = 0;
    for (unsigned i = 0; i < cl->n_log; i++)
        if (xt_parse(cl, i, &m) == 0 && xt_is(&m, "3") && !strcmp(xt_str(&m, 372), "F"))
            found41 = atoi(xt_str(&m, 371)) == 41 && atoi(xt_str(&m, 373)) == 1;
    CHECK(found41);
    CHECK(xt_last(cl, "j", &m) >= 0 && !strcmp(xt_str(&m, 380), "3") &&
          !strcmp(xt_str(&m, 372), "G") && xt_has(&m, 45));
    /* The session survived all of it: the run went to its end. */
    xt_stream r = xt_check_stream(cl, syms, 2, NULL, 1);
    CHECK(r.bars[0] == 20 && r.bars[1] == 12 && r.closed);
    const tw_xchg_stats *st = tw_xchg_get_stats(e.x);
    CHECK_EQ(st->session_rejects, 11 + 1);
    CHECK_EQ(st->order_rejects, 5 + 1);
    CHECK_EQ(st->dup_cl_ord_id, 1);
    CHECK_EQ(st->fills, 1);
    CHECK_EQ(st->cancels, 2);
    CHECK_EQ(st->business_rejects, 1);
    CHECK_EQ(st->orders, 11 + 5 + 2);
    xt_env_close(&e);
}

/* Connections that never become sessions: a D before Logon, garbage, a
 * bad CompID, the wrong TargetCompID, silence, a second connection for a
 * connected CompID, more connections than slots. */
static void t_connection_errors(void)
{
    xt_env e;
    tw_xchg_cfg c;
    xt_cfg(&c, &e, syms, 2);
    c.logon_timeout_ns = 5000000000ll;
    c.max_conns = 4;
    REQUIRE(xt_env_open(&e, &c) == 0);
    xt_client *a = xt_client_new(&e, "A", 0);
    xt_client *bad = xt_client_new(&e, "../etc", 0);
    xt_client *raw = xt_client_new(&e, "RAW", 0);
    xt_client *twin = xt_client_new(&e, "A", 0);
    /* A D as the first message. */
    REQUIRE(xt_connect(raw, 0) == 0);
    const char *d = "8=FIX.4.4\x01" "9=5\x01" "35=D\x01" "10=000\x01";
    char msg[128];
    size_t n = strlen(d);
    memcpy(msg, d, n);
    unsigned sum = 0;
    for (size_t i = 0; i < n - 7; i++)
        sum += (unsigned char)msg[i];
    snprintf(msg + n - 7, 8, "10=%03u\x01", sum & 255);
    /* BodyLength: "35=D\x01" is 5 bytes. */
    xt_raw(raw, msg, n);
    xt_pump(&e);
    CHECK(raw->venue_closed);
    CHECK_EQ(tw_xchg_get_stats(e.x)->pre_logon, 1);
    /* Garbage, then nothing: closed at the Logon timeout. */
    REQUIRE(xt_connect(raw, 0) == 0);
    xt_raw(raw, "GET / HTTP/1.0\r\n\r\n", 18);
    xt_advance(&e, 4000000000ll);
    CHECK(!raw->venue_closed);
    xt_advance(&e, 1500000000ll);
    CHECK(raw->venue_closed);
    CHECK_EQ(tw_xchg_get_stats(e.x)->conns_idle_closed, 1);
    CHECK_EQ(tw_xchg_get_stats(e.x)->garbled_bytes, 18);
    /* A CompID that is not a file name. */
    REQUIRE(xt_connect(bad, 1) == 0);
    xt_pump(&e);
    CHECK(bad->venue_closed && bad->fs.state == TW_FIX_DISCONNECTED);
    CHECK_EQ(tw_xchg_get_stats(e.x)->bad_logon, 1);
    /* A Logon to someone else. */
    REQUIRE(xt_connect(raw, 0) == 0);
    {
        tw_fix_template t;
        tw_fix_wbuf w;
        char buf[512];
        const char *out;
        size_t len;
        tw_fix_template_init(&t, "FIX.4.4", "RAW", "OTHER", NULL, NULL, 3, NULL);
        tw_fix_build_begin(&w, &t, buf, sizeof(buf), "A", 1, e.now + XT_EPOCH);
        tw_fix_put_char(&w, 98, '0');
        tw_fix_put_u64(&w, 108, 30);
        REQUIRE(tw_fix_build_end(&w, &out, &len) == 0);
        xt_raw(raw, out, len);
    }
    xt_pump(&e);
    CHECK(raw->venue_closed);
    CHECK_EQ(tw_xchg_get_stats(e.x)->bad_logon, 2);
    /* The real A, then its twin on a second connection. */
    REQUIRE(xt_connect(a, 1) == 0);
    xt_pump(&e);
    CHECK(a->fs.state == TW_FIX_ACTIVE);
    REQUIRE(xt_connect(twin, 1) == 0);
    xt_pump(&e);
    CHECK(twin->venue_closed);
    CHECK(a->fs.state == TW_FIX_ACTIVE && !a->venue_closed);
    CHECK_EQ(tw_xchg_get_stats(e.x)->dup_logon, 1);
    /* Slots: 4; A holds one; three silent connections fill the rest. */
    tw_xchg_conn *extra[4];
    tw_fix_stream io = {xt_ven_write, xt_ven_close, raw};
    CHECK(tw_xchg_conn_open(e.x, &io, NULL, e.now, &extra[0]) == 0);
    CHECK(tw_xchg_conn_open(e.x, &io, NULL, e.now, &extra[1]) == 0);
    CHECK(tw_xchg_conn_open(e.x, &io, NULL, e.now, &extra[2]) == 0);
    CHECK(tw_xchg_conn_open(e.x, &io, NULL, e.now, &extra[3]) == -EBUSY);
    CHECK_EQ(tw_xchg_get_stats(e.x)->conns_refused, 1);
    xt_advance(&e, 6000000000ll); /* silent ones time out; A's heartbeats keep it */
    CHECK_EQ(tw_xchg_get_stats(e.x)->conns_idle_closed, 4);
    CHECK(a->fs.state == TW_FIX_ACTIVE);
    xt_env_close(&e);
}

/* A flood of orders: the session's table is bounded (max_orders); past
 * it orders are rejected and counted; the run goes on. */
static void flood_orders(xt_client *cl, const tw_fix_msg *m, int possdup)
{
    (void)possdup;
    if (!xt_is(m, "X") || strcmp(xt_str(m, 278), "0"))
        return;
    for (int i = 0; i < 250; i++) {
        char id[16];
        snprintf(id, sizeof(id), "f%d", i);
        xt_order(cl, id, "AAA", i % 2 ? '1' : '2', 1, '1', NULL);
    }
}

static void t_flood(void)
{
    xt_env e;
    tw_xchg_cfg c;
    xt_cfg(&c, &e, syms, 2);
    c.max_orders = 100;
    REQUIRE(xt_env_open(&e, &c) == 0);
    xt_client *cl = logged_on(&e, "T", 0, flood_orders);
    REQUIRE(cl);
    xt_subscribe(cl, "m", both, 2);
    run_to_end(&e);
    const tw_xchg_stats *st = tw_xchg_get_stats(e.x);
    CHECK_EQ(st->fills, 100);
    CHECK_EQ(st->order_limit, 150);
    CHECK_EQ(st->orders, 250);
    xt_check_fill(cl, "f99", &syms[0], 0, 1, NULL);
    xt_check_reject(cl, "f100", 99);
    xt_check_reject(cl, "f249", 99);
    xt_stream r = xt_check_stream(cl, syms, 2, NULL, 1);
    CHECK(r.bars[0] == 20 && r.closed);
    xt_env_close(&e);
}

/* A flood from a trader that reads nothing: what the venue owes it is
 * bounded by the transport (here 64 KiB); past it the session is closed,
 * the venue goes on.  Memory stays what it was (the order table is sized
 * at the first Logon). */
static void t_flood_not_reading(void)
{
    xt_env e;
    tw_xchg_cfg c;
    xt_cfg(&c, &e, syms, 2);
    c.max_orders = 100000;
    c.reconnect_grace_ns = 1000000000;
    REQUIRE(xt_env_open(&e, &c) == 0);
    xt_client *cl = logged_on(&e, "T", 0, NULL);
    REQUIRE(cl);
    cl->hold = 1;
    xt_subscribe(cl, "m", both, 2);
    xt_push(cl);
    xt_push(cl);
    REQUIRE(xt_count(cl, "X") == 1);
    cl->deaf = 1;
    cl->v2c_cap = 64u << 10;
    for (int i = 0; i < 5000 && cl->fs.state == TW_FIX_ACTIVE; i++) {
        char id[16];
        snprintf(id, sizeof(id), "z%d", i);
        xt_order(cl, id, "AAA", '1', 1, '1', NULL);
        if (i % 100 == 99)
            xt_push(cl);
    }
    xt_push(cl);
    CHECK(cl->venue_closed);
    CHECK(cl->v2c_len <= (64u << 10));
    const tw_xchg_stats *st = tw_xchg_get_stats(e.x);
    CHECK(st->send_errors >= 1 && st->disconnects >= 1);
    CHECK(st->fills < 5000);
    /* The venue carries on: the session is dropped after the grace and
     * the run ends. */
    cl->deaf = 0;
    run_to_end(&e);
    CHECK_EQ(st->sessions_dropped, 1);
    xt_env_close(&e);
}

/* ---- faults ------------------------------------------------------------------- */

/* A venue with one fault and its stores in a fresh directory (dir). */
static int open_with_fault(xt_env *e, const char *fault, char *dir)
{
    static tw_xchg_fault f;
    tw_xchg_cfg c;
    CHECK(tw_xchg_fault_parse(fault, &f, NULL) == 0);
    xt_cfg(&c, e, syms, 2);
    c.faults = &f;
    c.n_faults = 1;
    if (dir) {
        if (!mkdtemp(dir))
            return -1;
        c.store_dir = dir;
    }
    return xt_env_open(e, &c);
}

static void remove_dir(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* gap:5: MsgSeqNum skipped at bar 5; our session asks for a resend and
 * gets the bar again as PossDup: every bar once. */
static void t_fault_gap(void)
{
    xt_env e;
    char dir[] = "/tmp/xt_storeXXXXXX";
    REQUIRE(open_with_fault(&e, "gap:5", dir) == 0);
    xt_client *cl = logged_on(&e, "T", 1, rule);
    REQUIRE(cl);
    xt_subscribe(cl, "m", both, 2);
    run_to_end(&e);
    xt_stream r = xt_check_stream(cl, syms, 2, NULL, 1);
    CHECK(r.bars[0] == 20 && r.bars[1] == 12 && r.closed && r.errors == 0);
    CHECK(cl->fs.st.resend_requests_sent >= 1);
    /* The resent bar 5 came as PossDup (the original was dropped by our
     * session as too high). */
    int possdup_x = 0;
    tw_fix_msg m;
    for (unsigned i = 0; i < cl->n_log; i++)
        if (xt_parse(cl, i, &m) == 0 && xt_is(&m, "X") && !strcmp(xt_str(&m, 43), "Y"))
            possdup_x++;
    CHECK(possdup_x >= 1);
    check_rule_fills(cl, &e);
    CHECK_EQ(tw_xchg_get_stats(e.x)->faults_gap, 1);
    xt_env_close(&e);
    remove_dir(dir);
}

/* disconnect:3 with stores in dir: we log on and subscribe, the venue
 * drops our connection right after bar 3 and its TestRequest (our answer
 * and order A3 die in the pipe). */
static xt_client *dropped_after_bar_3(xt_env *e, char *dir)
{
    if (open_with_fault(e, "disconnect:3", dir) != 0)
        return NULL;
    xt_client *cl = logged_on(e, "T", 1, rule);
    if (!cl)
        return NULL;
    xt_subscribe(cl, "m", both, 2);
    xt_pump(e);
    CHECK(cl->venue_closed);
    CHECK(cl->fs.state == TW_FIX_DISCONNECTED);
    xt_advance(e, 2000000000ll);
    CHECK_EQ(xt_count(cl, "X"), 4); /* the venue waits for us */
    return cl;
}

/* We reconnect with our store, resubscribe and run to the end: every bar
 * once, the rule's fills. */
static void back_to_the_end(xt_env *e, xt_client *cl)
{
    cl->hold = 1;
    REQUIRE(xt_connect(cl, 1) == 0);
    xt_push(cl); /* our Logon in; the venue's Logon and ResendRequest back */
    CHECK(cl->fs.state == TW_FIX_ACTIVE);
    xt_subscribe(cl, "m", both, 2); /* resubscribe, as live.md says */
    cl->hold = 0;
    run_to_end(e);
    xt_stream r = xt_check_stream(cl, syms, 2, NULL, 1);
    CHECK(r.bars[0] == 20 && r.bars[1] == 12 && r.closed && r.errors == 0);
    check_rule_fills(cl, e);
}

/* disconnect:3: the venue drops the connection right after bar 3 and its
 * TestRequest; our order A3 and our Heartbeat die in the pipe.  We
 * reconnect with our store and resubscribe; the venue asks for a resend,
 * gets A3 and fills it at bar 3; it asks for bar-3 again; nothing is
 * skipped. */
static void t_fault_disconnect(void)
{
    xt_env e;
    char dir[] = "/tmp/xt_storeXXXXXX";
    xt_client *cl = dropped_after_bar_3(&e, dir);
    REQUIRE(cl);
    CHECK_EQ(tw_xchg_get_stats(e.x)->faults_disconnect, 1);
    /* Bar 3 went out with its TestRequest; our answer and order A3 died. */
    xt_stream r = xt_check_stream(cl, syms, 2, NULL, 1);
    CHECK_EQ(r.bars[0], 4);
    back_to_the_end(&e, cl);
    const tw_xchg_stats *st = tw_xchg_get_stats(e.x);
    CHECK_EQ(st->logons, 2);
    CHECK(st->barrier_reissued == 1);
    CHECK_EQ(st->bars, 20);
    xt_env_close(&e);
    remove_dir(dir);
}

/* A venue on dir's stores, as `tickwire exchange --store dir` started
 * again; its fills go on into e's. */
static int reopen_venue(xt_env *e, const char *dir, const tw_xchg_symbol *sy, tw_error *err)
{
    tw_xchg_cfg c;
    xt_cfg(&c, e, sy, 2);
    c.store_dir = dir;
    return tw_xchg_create(&e->x, &c, err);
}

/* The venue killed mid-run and started again on its stores (resume.c).
 * disconnect:3 ends the first venue's connection after bar 3 (our
 * Heartbeat and order A3 die in the pipe), then that venue is gone; its
 * store is rewound to before our first order, as if it had died before
 * noting what it read, so the new venue asks for everything again and
 * gets A0 and B1 as PossDup: answered already, not filled again.  A3 is
 * filled at bar 3, bar-3 asked again; every bar once, each fill once
 * across both venues, OrderIDs and ExecIDs unique. */
static void t_resume(void)
{
    xt_env e;
    char dir[] = "/tmp/xt_storeXXXXXX";
    xt_client *cl = dropped_after_bar_3(&e, dir);
    REQUIRE(cl);
    CHECK_EQ(e.n_fills, 1); /* A0 */
    /* What the first venue's fills point to goes with it. */
    for (unsigned i = 0; i < e.n_fills; i++) {
        e.fills[i].session = cl->name;
        e.fills[i].symbol = e.fill_cl[i][0] == 'A' ? syms[0].name : syms[1].name;
    }
    tw_xchg_destroy(e.x);
    e.x = NULL;
    char path[64];
    snprintf(path, sizeof(path), "%s/T.store", dir);
    tw_fix_store st;
    tw_fix_store_cfg sc = {.path = path, .fd = -1};
    REQUIRE(tw_fix_store_open(&st, &sc, NULL) == 0);
    CHECK(tw_fix_store_set_seqs(&st, st.next_out, 2) == 0);
    tw_fix_store_close(&st);
    tw_error err = {0};
    REQUIRE(reopen_venue(&e, dir, syms, &err) == 0);
    CHECK_EQ(tw_xchg_get_stats(e.x)->sessions_resumed, 1);
    /* The fill it had made, handed back for a fills log. */
    CHECK(e.n_resumed == 1 && !strcmp(e.resumed_cl[0], "A0"));
    xt_advance(&e, 2000000000ll);
    CHECK_EQ(xt_count(cl, "X"), 4); /* the new venue waits for us too */
    back_to_the_end(&e, cl);
    CHECK_EQ(xt_count(cl, "h"), 2); /* one Open, one Closed */
    const tw_xchg_stats *vs = tw_xchg_get_stats(e.x);
    CHECK_EQ(vs->bars, 16);
    CHECK_EQ(vs->barrier_reissued, 1);
    CHECK_EQ(vs->possdup_ignored, 2);
    CHECK_EQ(vs->dup_cl_ord_id, 0);
    /* The driver's idle moments grow the store ahead of its appends, a
     * piece each, until 4 steps lie past its records; then nothing. */
    unsigned pieces = 0;
    while (tw_xchg_idle(e.x) == 1 && pieces < 100000)
        pieces++;
    CHECK(pieces > 0 && pieces < 100000);
    CHECK_EQ(vs->grow_ahead, pieces);
    CHECK_EQ(vs->grow_errors, 0);
    CHECK_EQ(tw_xchg_idle(e.x), 0);
    char ids[2][16][48];
    unsigned nid = 0;
    tw_fix_msg m;
    for (unsigned i = 0; i < cl->n_log; i++) {
        if (xt_parse(cl, i, &m) != 0 || !xt_is(&m, "8") || !strcmp(xt_str(&m, 43), "Y"))
            continue;
        for (unsigned j = 0; j < nid; j++) {
            CHECK(strcmp(ids[0][j], xt_str(&m, 37)) != 0);
            CHECK(strcmp(ids[1][j], xt_str(&m, 17)) != 0);
        }
        if (nid < 16) {
            snprintf(ids[0][nid], 48, "%s", xt_str(&m, 37));
            snprintf(ids[1][nid++], 48, "%s", xt_str(&m, 17));
        }
    }
    CHECK_EQ(nid, 10);
    xt_env_close(&e);
    remove_dir(dir);
}

/* A store holding one message, written as a venue's would be. */
static void store_with(const char *dir, const char *type, const char *body)
{
    char path[64];
    snprintf(path, sizeof(path), "%s/T.store", dir);
    unlink(path);
    tw_fix_store st;
    tw_fix_store_cfg sc = {.path = path, .fd = -1};
    REQUIRE(tw_fix_store_open(&st, &sc, NULL) == 0);
    CHECK(tw_fix_store_add_msg(&st, 1, 0, type, strlen(type), body, strlen(body)) == 0);
    tw_fix_store_close(&st);
}

/* Stores that do not read back fail the venue's creation with the file
 * and the reason, never a crash. */
static void t_resume_bad_stores(void)
{
    static const struct {
        const char *type, *body, *says;
    } cases[] = {
        {"X", "262=m\x01" "268=1\x01" "279=0\x01" "269=2\x01" "55=AAA\x01" "278=0\x01"
              "270=99\x01" "271=1\x01", "another dataset"},
        {"X", "262=m\x01" "268=1\x01" "279=0\x01" "269=2\x01" "55=ZZZ\x01" "278=0\x01"
              "271=1\x01", "from another run"},
        {"X", "262=m\x01" "268=1\x01" "279=0\x01" "269=2\x01" "55=AAA\x01" "278=20\x01"
              "271=1\x01", "not one of the run's 20"},
        {"X", "262=m\x01" "268=1\x01" "279=0\x01" "269=2\x01" "55=BBB\x01" "278=0\x01"
              "270=1\x01" "271=1\x01", "another dataset"}, /* bar 0 of BBB is NaN */
        {"D", "11=A0\x01" "55=AAA\x01", "not a venue's store"},
        {"8", "37=O1-1\x01" "150=F\x01", "ClOrdID(11)"},
        {"8", "37=O1-1\x01" "11=A0\x01" "17=E1-1\x01" "150=F\x01" "39=2\x01" "55=AAA\x01"
              "54=1\x01" "32=1\x01" "31=100\x01" "60=20260101-00:00:00\x01",
         "does not read back"}, /* no bar of AAA sent before it */
        {"X", "262=m\x01" "garbage\x01", "not tag=value"},
    };
    char dir[] = "/tmp/xt_storeXXXXXX";
    REQUIRE(mkdtemp(dir));
    xt_env e;
    memset(&e, 0, sizeof(e));
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        store_with(dir, cases[i].type, cases[i].body);
        tw_error err = {0};
        e.x = NULL;
        CHECKF(reopen_venue(&e, dir, syms, &err) == -TW_EFORMAT && e.x == NULL &&
                   strstr(err.msg, "T.store") && strstr(err.msg, cases[i].says),
               "case %u: %s", i, err.msg);
    }
    char path[64];
    snprintf(path, sizeof(path), "%s/T.store", dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs("not a store", f);
    fclose(f);
    tw_error err = {0};
    CHECKF(reopen_venue(&e, dir, syms, &err) == -TW_EFORMAT && strstr(err.msg, "T.store") &&
               strstr(err.msg, "not a store file"),
           "%s", err.msg);
    /* A store with only a BusinessMessageReject: read back, no bars. */
    unlink(path);
    store_with(dir, "j", "58=x\x01");
    REQUIRE(reopen_venue(&e, dir, syms, &err) == 0);
    CHECK_EQ(tw_xchg_get_stats(e.x)->sessions_resumed, 1);
    tw_xchg_destroy(e.x);
    remove_dir(dir);
}

static void nine_orders(xt_client *cl, const tw_fix_msg *m, int possdup)
{
    (void)possdup;
    if (!xt_is(m, "X") || strcmp(xt_str(m, 278), "0"))
        return;
    for (int i = 1; i <= 9; i++) {
        char id[8];
        snprintf(id, sizeof(id), "r%d", i);
        xt_order(cl, id, "AAA", '1', 1, '1', NULL);
    }
}

/* reject:3: every third valid order is rejected with 103=99. */
static void t_fault_reject(void)
{
    xt_env e;
    REQUIRE(open_with_fault(&e, "reject:3", NULL) == 0);
    xt_client *cl = logged_on(&e, "T", 0, nine_orders);
    REQUIRE(cl);
    xt_subscribe(cl, "m", both, 2);
    run_to_end(&e);
    tw_fix_msg m;
    for (int i = 1; i <= 9; i++) {
        char id[8];
        snprintf(id, sizeof(id), "r%d", i);
        if (i % 3 == 0) {
            xt_check_reject(cl, id, 99);
            xt_er(cl, id, &m);
            CHECK(strstr(xt_str(&m, 58), "injected") != NULL);
        } else {
            xt_check_fill(cl, id, &syms[0], 0, 1, NULL);
        }
    }
    CHECK_EQ(tw_xchg_get_stats(e.x)->faults_reject, 3);
    xt_env_close(&e);
}

/* slow:2:700: after bar 2 the venue reads nothing for 700 ms; in lockstep
 * the barrier therefore waits; then everything flows again. */
static void t_fault_slow(void)
{
    xt_env e;
    REQUIRE(open_with_fault(&e, "slow:2:700", NULL) == 0);
    xt_client *cl = logged_on(&e, "T", 0, rule);
    REQUIRE(cl);
    xt_subscribe(cl, "m", both, 2);
    xt_pump(&e);
    CHECK_EQ(xt_count(cl, "X"), 3);
    int64_t t0 = e.now;
    CHECK(tw_xchg_conn_read_at(cl->xc) == t0 + 700000000);
    xt_advance(&e, 600000000);
    CHECK_EQ(xt_count(cl, "X"), 3);
    run_to_end(&e);
    xt_stream r = xt_check_stream(cl, syms, 2, NULL, 1);
    CHECK(r.bars[0] == 20 && r.closed && r.errors == 0);
    check_rule_fills(cl, &e);
    CHECK_EQ(tw_xchg_get_stats(e.x)->faults_slow, 1);
    xt_env_close(&e);
}

/* ---- paced mode, the end, stop -------------------------------------------------- */

static void t_paced(void)
{
    xt_env e;
    tw_xchg_cfg c;
    xt_cfg(&c, &e, syms, 2);
    c.lockstep = 0;
    c.bar_interval_ns = 10000000; /* 100 bars/s */
    REQUIRE(xt_env_open(&e, &c) == 0);
    xt_client *cl = logged_on(&e, "T", 0, NULL);
    REQUIRE(cl);
    xt_subscribe(cl, "m", both, 2);
    xt_pump(&e);
    CHECK_EQ(xt_count(cl, "X"), 1); /* bar 0 at once */
    xt_advance(&e, 55000000);
    CHECK_EQ(xt_count(cl, "X"), 6); /* bars 1-5 at 10, 20, ... 50 ms */
    xt_order(cl, "p1", "AAA", '1', 1, '1', NULL);
    xt_pump(&e);
    xt_check_fill(cl, "p1", &syms[0], 5, 1, NULL); /* whatever bar is current */
    run_to_end(&e);
    xt_stream r = xt_check_stream(cl, syms, 2, NULL, 0);
    CHECK(r.bars[0] == 20 && r.bars[1] == 12 && r.closed && r.test_requests == 0);
    CHECK_EQ(xt_count(cl, "1"), 1); /* "open" only */
    xt_env_close(&e);

    /* Paced by ticks: 200 ticks/s over two symbols is a bar every 10 ms,
     * due on the clock from bar 0: a turn 45 ms late sends the 5 bars it
     * owes at once (and says how late), the next one is on time. */
    xt_cfg(&c, &e, syms, 2);
    c.lockstep = 0;
    c.ticks_per_s = 200;
    REQUIRE(xt_env_open(&e, &c) == 0);
    cl = logged_on(&e, "T", 0, NULL);
    REQUIRE(cl);
    xt_subscribe(cl, "m", both, 2);
    xt_pump(&e);
    CHECK_EQ(xt_count(cl, "X"), 1);
    int64_t t0 = e.now;
    e.now = t0 + 9999999;
    xt_pump(&e);
    CHECK_EQ(xt_count(cl, "X"), 1);
    e.now = t0 + 55000000;
    xt_pump(&e);
    CHECK_EQ(xt_count(cl, "X"), 6);
    CHECK_EQ(tw_xchg_get_stats(e.x)->pace_lag_max_ns, 45000000);
    e.now = t0 + 60000000;
    xt_pump(&e);
    CHECK_EQ(xt_count(cl, "X"), 7);
    CHECK_EQ(tw_xchg_get_stats(e.x)->pace_lag_max_ns, 45000000);
    CHECK_EQ(tw_xchg_get_stats(e.x)->pace_held, 0);
    run_to_end(&e);
    r = xt_check_stream(cl, syms, 2, NULL, 0);
    CHECK(r.bars[0] == 20 && r.bars[1] == 12 && r.closed && r.test_requests == 0);
    char sum[1024];
    tw_xchg_summary(e.x, sum, sizeof(sum));
    CHECK(strstr(sum, " pace_lag_max_us=45000.0 pace_held=0") != NULL);
    xt_env_close(&e);

    /* Flat out: all bars in one go, Closed right after. */
    xt_cfg(&c, &e, syms, 2);
    c.lockstep = 0;
    c.max_bars = 7;
    REQUIRE(xt_env_open(&e, &c) == 0);
    cl = logged_on(&e, "T", 0, NULL);
    REQUIRE(cl);
    xt_subscribe(cl, "m", both, 2);
    xt_pump(&e);
    r = xt_check_stream(cl, syms, 2, NULL, 0);
    CHECK(r.bars[0] == 7 && r.bars[1] == 7 && r.closed);
    run_to_end(&e);
    xt_env_close(&e);
}

/* A trader that never logs out: the venue waits end_timeout, then logs it
 * out itself. */
static void t_end_timeout(void)
{
    xt_env e;
    tw_xchg_cfg c;
    xt_cfg(&c, &e, syms, 2);
    c.end_timeout_ns = 3000000000ll;
    c.max_bars = 3;
    REQUIRE(xt_env_open(&e, &c) == 0);
    xt_client *cl = xt_client_new(&e, "T", 0);
    cl->logout_on_closed = 0;
    REQUIRE(xt_connect(cl, 1) == 0);
    xt_pump(&e);
    xt_subscribe(cl, "m", both, 2);
    xt_pump(&e);
    CHECK(!tw_xchg_done(e.x));
    xt_advance(&e, 2500000000ll);
    CHECK(!tw_xchg_done(e.x));
    CHECK(xt_until(&e, xt_pred_done, NULL, 10000000000ll));
    CHECK(cl->logout_events == 1);
    xt_env_close(&e);
}

/* tw_xchg_stop mid-run: Closed, Logout, done. */
static void t_stop(void)
{
    xt_env e;
    tw_xchg_cfg c;
    xt_cfg(&c, &e, syms, 2);
    REQUIRE(xt_env_open(&e, &c) == 0);
    xt_client *cl = xt_client_new(&e, "T", 0);
    cl->logout_on_closed = 0;
    REQUIRE(xt_connect(cl, 1) == 0);
    xt_pump(&e);
    cl->hold = 1;
    xt_subscribe(cl, "m", both, 2);
    xt_push(cl);
    xt_push(cl);
    CHECK_EQ(xt_count(cl, "X"), 1);
    tw_xchg_stop(e.x, e.now);
    cl->hold = 0;
    CHECK(xt_until(&e, xt_pred_done, NULL, 10000000000ll));
    tw_fix_msg m;
    CHECK(xt_last(cl, "h", &m) >= 0 && !strcmp(xt_str(&m, 340), "3"));
    CHECK(cl->logout_events == 1);
    CHECK(tw_xchg_get_stats(e.x)->bars < 20);
    xt_env_close(&e);
}

/* Configuration and fault syntax errors name what is wrong. */
static void t_config_errors(void)
{
    tw_xchg *x;
    tw_error err;
    tw_xchg_cfg c;
    tw_xchg_cfg_init(&c);
    CHECK(tw_xchg_create(&x, &c, &err) == -EINVAL && strstr(err.msg, "no symbols"));
    tw_xchg_symbol dup[2] = {{"AAA", aaa, 20}, {"AAA", bbb, 12}};
    c.symbols = dup;
    c.n_symbols = 2;
    CHECK(tw_xchg_create(&x, &c, &err) == -EINVAL && strstr(err.msg, "twice"));
    tw_xchg_symbol empty[1] = {{"AAA", aaa, 0}};
    c.symbols = empty;
    c.n_symbols = 1;
    CHECK(tw_xchg_create(&x, &c, &err) == -EINVAL && strstr(err.msg, "no bars"));
    tw_xchg_symbol sp[1] = {{"A A", aaa, 20}};
    c.symbols = sp;
    CHECK(tw_xchg_create(&x, &c, &err) == -EINVAL);
    c.symbols = syms;
    c.sender_comp_id = "bad/id";
    CHECK(tw_xchg_create(&x, &c, &err) == -EINVAL && strstr(err.msg, "CompID"));
    c.sender_comp_id = NULL;
    c.store_dir = "/nonexistent/dir";
    CHECK(tw_xchg_create(&x, &c, &err) == -ENOENT);
    tw_xchg_fault f;
    static const char *bad[] = {"", "gap", "gap:", "gap:x", "gap:1:2", "reject:0", "slow:3",
                                "slow:3:0", "slow:3:x", "flood:3", "disconnect:-1", "hasty:1:2",
                                "disconnect:99999999999999999999"};
    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECKF(tw_xchg_fault_parse(bad[i], &f, &err) == -EINVAL, "fault '%s' accepted", bad[i]);
    CHECK(tw_xchg_fault_parse("slow:3:250", &f, NULL) == 0 && f.kind == TW_XCHG_FAULT_SLOW &&
          f.bar == 3 && f.ms == 250);
    CHECK(tw_xchg_fault_parse("reject:7", &f, NULL) == 0 && f.every == 7);
    CHECK(tw_xchg_fault_parse("disconnect:0", &f, NULL) == 0 && f.bar == 0);
    CHECK(tw_xchg_fault_parse("hasty:12", &f, NULL) == 0 && f.kind == TW_XCHG_FAULT_HASTY &&
          f.bar == 12);
}

int main(int argc, char **argv)
{
    make_data();
    if (argc > 1 && !strcmp(argv[1], "disconnect")) {
        t_fault_disconnect();
        return tw_check_done("exchange_test");
    }
    t_config_errors();
    t_lockstep_run();
    t_barrier_holds();
    t_two_sessions();
    t_chunks_and_md_req_ids();
    t_long_prices();
    t_md_request_errors();
    t_order_errors();
    t_connection_errors();
    t_flood();
    t_flood_not_reading();
    t_fault_gap();
    t_fault_disconnect();
    t_resume();
    t_resume_bad_stores();
    t_fault_reject();
    t_fault_slow();
    t_paced();
    t_end_timeout();
    t_stop();
    return tw_check_done("exchange_test");
}
