/* The venue on this project's userspace TCP/IP stack over the simulated
 * network (tw_xchg_net on a sim port), driven by trader sessions of our
 * own (tw_fix_session initiators) on a second stack, in virtual time.
 * For each seed the links get delay, jitter, loss, duplication and
 * reordering from the seed; the run must still be exact: every bar once
 * and in order with the dataset's bits, every fill at the right close,
 * bar i+1 never sent before the trader's answer to bar-<i> (by virtual
 * SendingTime).  Some seeds add a disconnect fault (the trader reconnects
 * on a new TCP connection with its store), a sequence gap, or the
 * slow-reader fault with a burst of orders from the trader at that bar
 * (the venue leaves the bytes in its stack's 16 KiB ring: the window
 * closes, the trader's stack probes it, and every order still fills at
 * that bar).
 *
 * usage: exchange_sim_test [--seeds N] [--seed S] [-v]
 * A failure prints the seed and the replay command. */
#include "xt.h"

#include "tickwire/net.h"
#include "tickwire/net_sim.h"

static uint64_t g_seed;

static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#define VENUE_IP 0x0a000002u
#define TRADER_IP 0x0a000001u
#define VENUE_PORT 9878

typedef struct side {
    xt_client *cl;
    tw_tcp_conn tcp;
    int have_tcp;
    int connects;
} side;

static void random_link(tw_sim_link_config *k, int severity)
{
    memset(k, 0, sizeof(*k));
    k->delay_min_ns = 20000 + rnd() % 300000;
    k->delay_mean_ns = rnd() % 2 ? rnd() % 200000 : 0;
    if (severity) {
        k->loss_ppm = (uint32_t)(rnd() % 20000);
        k->dup_ppm = (uint32_t)(rnd() % 5000);
        k->reorder_ppm = (uint32_t)(rnd() % 50000);
        k->reorder_extra_ns = 100000 + rnd() % 1000000;
    }
}

/* The rule, and with the slow fault a burst of 400 orders at bar 4 (about
 * 60 KB: more than the venue's 16 KiB receive ring, which the venue is not
 * emptying, so the window closes and the trader's stack probes it). */
static int burst_on;
static void rule_and_burst(xt_client *cl, const tw_fix_msg *m, int possdup)
{
    rule(cl, m, possdup);
    if (!burst_on || !xt_is(m, "X") || strcmp(xt_str(m, 278), "4") || possdup)
        return;
    for (int i = 0; i < 400; i++) {
        char id[16];
        snprintf(id, sizeof(id), "burst%d", i);
        xt_order(cl, id, "AAA", '1', 1, '1', "inst-aaa");
    }
}

/* Moves a trader's bytes between its session's buffers and its TCP
 * connection; (re)connects when the connection is gone. */
static void trader_io(tw_net *st, side *sd, uint64_t now)
{
    xt_client *cl = sd->cl;
    xt_env *e = cl->env;
    if (!sd->have_tcp) {
        memset(&sd->tcp, 0, sizeof(sd->tcp));
        if (tw_tcp_connect(st, &sd->tcp, VENUE_IP, VENUE_PORT, 0, now) == 0) {
            sd->have_tcp = 1;
            sd->connects++;
        }
        return;
    }
    unsigned ev = tw_tcp_events(&sd->tcp);
    tw_tcp_state s = tw_tcp_get_state(&sd->tcp);
    if ((ev & TW_TCP_EV_CONNECTED) && cl->fs.state == TW_FIX_DISCONNECTED) {
        cl->c2v_len = cl->v2c_len = 0;
        tw_fix_session_connected(&cl->fs, e->now);
    }
    const uint8_t *p;
    size_t n;
    while (tw_tcp_recv_peek(&sd->tcp, &p, &n) > 0) {
        if (n > XT_BUF - cl->v2c_len)
            n = XT_BUF - cl->v2c_len;
        memcpy(cl->v2c + cl->v2c_len, p, n);
        cl->v2c_len += n;
        tw_tcp_recv_consume(&sd->tcp, n);
    }
    /* Whole messages only to the session's log and input. */
    size_t off = 0, skip;
    int r;
    while (off < cl->v2c_len && (r = tw_fix_frame(cl->v2c + off, cl->v2c_len - off, 0, &skip)) > 0)
        off += (size_t)r;
    if (off) {
        size_t rest = cl->v2c_len - off;
        char *tail = rest ? malloc(rest) : NULL;
        if (rest)
            memcpy(tail, cl->v2c + off, rest);
        cl->v2c_len = off;
        xt_deliver_v2c(cl);
        if (rest) {
            memcpy(cl->v2c, tail, rest);
            free(tail);
        }
        cl->v2c_len = rest;
    }
    if (cl->c2v_len && (s == TW_TCP_ESTABLISHED || s == TW_TCP_CLOSE_WAIT)) {
        long k = tw_tcp_send(&sd->tcp, cl->c2v, cl->c2v_len, now);
        if (k > 0) {
            memmove(cl->c2v, cl->c2v + k, cl->c2v_len - (size_t)k);
            cl->c2v_len -= (size_t)k;
        }
    }
    if (cl->fs.state != TW_FIX_DISCONNECTED)
        tw_fix_session_timer(&cl->fs, e->now);
    s = tw_tcp_get_state(&sd->tcp);
    if ((ev & (TW_TCP_EV_PEER_FIN | TW_TCP_EV_RESET | TW_TCP_EV_TIMEOUT)) || s == TW_TCP_CLOSE_WAIT ||
        s == TW_TCP_CLOSED) {
        if (cl->fs.state != TW_FIX_DISCONNECTED)
            tw_fix_session_disconnected(&cl->fs, e->now);
        if (s == TW_TCP_CLOSE_WAIT || s == TW_TCP_ESTABLISHED)
            tw_tcp_close(&sd->tcp, now);
    }
    if (tw_tcp_get_state(&sd->tcp) == TW_TCP_CLOSED && tw_tcp_conn_release(&sd->tcp) == 0) {
        sd->have_tcp = 0;
        cl->c2v_len = cl->v2c_len = 0;
    }
}

static int run_seed(uint64_t seed, int verbose)
{
    g_seed = seed;
    rng_state = seed * 0x2545f4914f6cdd1dull + 1;
    int fault = (int)(rnd() % 4); /* 0 none, 1 disconnect, 2 slow, 3 gap */
    int severity = (int)(rnd() % 2);
    unsigned n_traders = 1 + (unsigned)(rnd() % 2);
    tw_error err = {0};
    tw_sim_net *net;
    tw_port *pa, *pb;
    tw_sim_link_config la, lb;
    random_link(&la, severity);
    random_link(&lb, severity);
    static const uint8_t ma[6] = {2, 0, 0, 0, 0, 1}, mb[6] = {2, 0, 0, 0, 0, 2};
    if (tw_sim_net_open(&net, seed, 8192, &err) || tw_port_sim_open(&pa, net, ma, &la, 2048, &err) ||
        tw_port_sim_open(&pb, net, mb, &lb, 2048, &err)) {
        fprintf(stderr, "sim: %s\n", err.msg);
        return -1;
    }
    tw_net_config ca, cb;
    tw_net_config_init(&ca, TRADER_IP);
    tw_net_config_init(&cb, VENUE_IP);
    ca.isn_secret[0] = seed;
    cb.isn_secret[1] = seed;
    ca.time_wait_ns = cb.time_wait_ns = 100000000;
    /* A small venue-side receive ring, so that the slow fault closes its
     * window quickly. */
    cb.rx_buf_bytes = 16384;
    tw_net *sa, *sb;
    if (tw_net_open(&sa, pa, &ca, &err) || tw_net_open(&sb, pb, &cb, &err)) {
        fprintf(stderr, "sim: %s\n", err.msg);
        return -1;
    }
    char dir[] = "/tmp/xt_simXXXXXX";
    if (!mkdtemp(dir))
        return -1;
    xt_env e;
    tw_xchg_cfg c;
    tw_xchg_fault f;
    xt_cfg(&c, &e, syms, 2);
    c.store_dir = dir;
    c.min_sessions = n_traders;
    burst_on = fault == 2;
    if (fault == 1)
        tw_xchg_fault_parse("disconnect:6", &f, NULL);
    else if (fault == 2)
        tw_xchg_fault_parse("slow:4:3000", &f, NULL);
    else if (fault == 3)
        tw_xchg_fault_parse("gap:9", &f, NULL);
    if (fault) {
        c.faults = &f;
        c.n_faults = 1;
    }
    if (xt_env_open(&e, &c) != 0)
        return -1;
    e.verbose = verbose;
    tw_xchg_net *xn;
    if (tw_xchg_net_open(&xn, e.x, sb, VENUE_PORT, 8, 1u << 20, &err) != 0) {
        fprintf(stderr, "sim: %s\n", err.msg);
        return -1;
    }
    side sd[2];
    memset(sd, 0, sizeof(sd));
    for (unsigned i = 0; i < n_traders; i++) {
        char name[8];
        snprintf(name, sizeof(name), "T%u", i);
        sd[i].cl = xt_client_new(&e, name, 1);
        sd[i].cl->on_app = i == 0 ? rule_and_burst : NULL;
    }
    uint64_t now = 1000000000ull;
    int subscribed[2] = {0, 0};
    uint64_t steps = 0, done_at = 0;
    /* Until the venue is done, and half a second more (virtual) for its
     * last messages to arrive. */
    while ((!done_at || now < done_at + 500000000ull) && now < 200000000000ull &&
           ++steps < 5000000) {
        if (!done_at && tw_xchg_done(e.x))
            done_at = now;
        e.now = (int64_t)now;
        tw_sim_net_advance(net, now);
        tw_net_poll(sa, now);
        tw_net_poll(sb, now);
        tw_xchg_net_poll(xn, now);
        tw_xchg_poll(e.x, (int64_t)now);
        tw_xchg_net_poll(xn, now);
        for (unsigned i = 0; i < n_traders; i++) {
            trader_io(sa, &sd[i], now);
            xt_client *cl = sd[i].cl;
            /* Subscribe on every logon (live.md: resubscribe after a
             * reconnect). */
            if (cl->fs.state == TW_FIX_ACTIVE && subscribed[i] < cl->logon_events &&
                cl->fs.resend_until == 0) {
                if (i == 0)
                    xt_subscribe(cl, "m", both, 2);
                else
                    xt_subscribe(cl, "b", both + 1, 1);
                subscribed[i] = cl->logon_events;
            }
            trader_io(sa, &sd[i], now);
        }
        tw_net_poll(sa, now);
        tw_net_poll(sb, now);
        uint64_t next = tw_sim_net_next_event_ns(net);
        uint64_t t = tw_net_next_timer_ns(sa);
        if (t < next)
            next = t;
        t = tw_net_next_timer_ns(sb);
        if (t < next)
            next = t;
        if (now + 1000000 < next)
            next = now + 1000000; /* applications act at least every ms */
        now = next > now ? next : now + 1000;
    }
    int ok = 1;
    int before = tw_check_failures;
    CHECKF(tw_xchg_done(e.x), "seed %llu: the run did not end (bars %llu)",
           (unsigned long long)seed, (unsigned long long)tw_xchg_get_stats(e.x)->bars);
    const char *req0[2] = {"m", "m"}, *req1[2] = {NULL, "b"};
    for (unsigned i = 0; i < n_traders; i++) {
        xt_stream r = xt_check_stream(sd[i].cl, syms, 2, i == 0 ? req0 : req1, 1);
        CHECKF(r.closed && r.errors == 0 && r.bars[1] == 12 && (i > 0 || r.bars[0] == 20),
               "seed %llu trader %u: bars %u/%u closed %d", (unsigned long long)seed, i,
               r.bars[0], r.bars[1], r.closed);
        CHECK(sd[i].cl->logout_events >= 1);
    }
    check_rule_fills_n(sd[0].cl, &e, fault == 2 ? 400 : 0);
    const tw_xchg_stats *st = tw_xchg_get_stats(e.x);
    if (verbose) {
        char sum[1024];
        tw_xchg_summary(e.x, sum, sizeof(sum));
        fprintf(stderr, "  %s\n  trader: resend requests sent %llu rcvd %llu, rejects rcvd %llu\n", sum,
                (unsigned long long)sd[0].cl->fs.st.resend_requests_sent,
                (unsigned long long)sd[0].cl->fs.st.resend_requests_rcvd,
                (unsigned long long)sd[0].cl->fs.st.rejects_rcvd);
    }
    if (fault == 1)
        CHECKF(st->faults_disconnect == n_traders && sd[0].connects >= 2,
               "seed %llu: disconnect fault: %llu, connects %d", (unsigned long long)seed,
               (unsigned long long)st->faults_disconnect, sd[0].connects);
    if (fault == 2) {
        CHECK(st->faults_slow == 1);
        for (int k = 0; k < 400; k += 57) {
            char id[16];
            snprintf(id, sizeof(id), "burst%d", k);
            xt_check_fill(sd[0].cl, id, &syms[0], 4, 1, "inst-aaa");
        }
        CHECKF(tw_net_get_stats(sa)->zero_window_probes > 0,
               "seed %llu: the venue's window never closed", (unsigned long long)seed);
    }
    if (fault == 3)
        CHECK(st->faults_gap == n_traders);
    ok = tw_check_failures == before;
    if (!ok)
        fprintf(stderr, "exchange_sim_test: seed %llu failed (fault %d, severity %d, %u traders)\n"
                        "  replay: exchange_sim_test --seed %llu -v\n",
                (unsigned long long)seed, fault, severity, n_traders, (unsigned long long)seed);
    else if (verbose)
        fprintf(stderr, "seed %llu ok: fault %d severity %d traders %u, %.3f s virtual\n",
                (unsigned long long)seed, fault, severity, n_traders, (double)now / 1e9);
    tw_xchg_net_close(xn, now);
    tw_net_close(sa);
    tw_net_close(sb);
    CHECKF(tw_sim_port_pool_free(pa) == tw_sim_port_pool_size(pa) &&
               tw_sim_port_pool_free(pb) == tw_sim_port_pool_size(pb),
           "seed %llu: port buffers leaked", (unsigned long long)seed);
    tw_sim_net_close(net);
    xt_env_close(&e);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    make_data();
    unsigned seeds = 100;
    uint64_t one = 0;
    int verbose = 0, have_one = 0;
    const char *env = getenv("TW_EXCHANGE_SIM_SEEDS");
    if (env)
        seeds = (unsigned)atoi(env);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
            seeds = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            one = strtoull(argv[++i], NULL, 0), have_one = 1;
        else if (!strcmp(argv[i], "-v"))
            verbose = 1;
    }
    if (have_one)
        run_seed(one, verbose);
    else
        for (unsigned s = 1; s <= seeds; s++)
            run_seed(s, verbose);
    (void)g_seed;
    return tw_check_done("exchange_sim_test");
}
