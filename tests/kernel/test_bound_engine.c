/* The engine's SWEEP_LOADED through a bound sweeper (src/engine/handle.c
 * tw__job_run): an in-process server on a Unix socket, one combo per call
 * like a chatty client, checked against tw_sweep() per combo.  The cases
 * that a stale window cache would get wrong: plain SWEEPs of other data in
 * between, DROP and a LOAD of other prices (the server may reuse the freed
 * memory), two datasets interleaved call by call, DROP of the dataset the
 * sweeper is bound to, and a bad window followed by a good call.  With one
 * compute worker (every call on the same sweeper) and with two, and with
 * the per-worker cache of passes off, tiny (a few passes: evictions) and
 * at its default; INFO shows its bound. */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "kt.h"
#include "tickwire/client.h"
#include "tickwire/engine.h"
#include "tickwire/kernel.h"
#include "tickwire/wire.h"

enum { NB = 3000, NC = 24 };

static double g_a[NB], g_b[NB];
static int64_t g_grid[NC * TW_COMBO_WINDOWS];
static double ref_a[NC], ref_b[NC];
static int64_t tr_a[NC], tr_b[NC];

static void *serve(void *arg)
{
    tw_engine_run(arg);
    return NULL;
}

/* One call per combo on dataset id; 1 if every result matches. */
static int chatty(tw_client *c, uint64_t id, const double *rp, const int64_t *rt,
                  const char *what)
{
    for (size_t k = 0; k < NC; k++) {
        double p = -1.0;
        int64_t t = -1;
        tw_error err = {0};
        int rc = tw_client_sweep_loaded(c, id, g_grid + k * TW_COMBO_WINDOWS, 1, &p, &t, &err);
        if (rc) {
            CHECKF(0, "%s: combo %zu: %d %s", what, k, rc, err.msg);
            return 0;
        }
        if (!kt_same(p, rp[k]) || t != rt[k]) {
            CHECKF(0, "%s: combo %zu: pnl %.17g want %.17g, trades %lld want %lld", what, k,
                   p, rp[k], (long long)t, (long long)rt[k]);
            return 0;
        }
    }
    return 1;
}

static void run_engine_case(unsigned workers, size_t cache_bytes)
{
    char sock[108], addr[128];
    snprintf(sock, sizeof(sock), "/tmp/tw-kbound-%d-%u.sock", (int)getpid(), workers);
    snprintf(addr, sizeof(addr), "unix:%s", sock);
    tw_engine_opts o;
    tw_engine_opts_init(&o);
    o.unix_path = sock;
    o.workers = workers;
    o.sweep.threads = 1;
    o.sweep.cache_bytes = cache_bytes;
    o.sweeper_bars = NB;
    tw_engine *e;
    tw_error err = {0};
    if (tw_engine_create(&e, &o, &err)) {
        CHECKF(0, "engine: %s", err.msg);
        return;
    }
    char info[4096], want[64];
    CHECK(tw_engine_info_json(e, info, sizeof(info)) > 0);
    snprintf(want, sizeof(want), "\"sweep_cache_bytes\":%zu,", cache_bytes);
    CHECKF(strstr(info, want) != NULL, "INFO lacks %s: %s", want, info);
    pthread_t th;
    pthread_create(&th, NULL, serve, e);
    tw_client *c;
    int rc = tw_client_connect(&c, addr, &err);
    CHECKF(rc == 0, "connect: %s", err.msg);
    if (rc == 0) {
        uint64_t ia, ib, ia2;
        double pnl[NC];
        int64_t tr[NC];
        CHECK(tw_client_load(c, g_a, NB, &ia, &err) == 0);
        CHECK(chatty(c, ia, ref_a, tr_a, "A"));
        CHECK(chatty(c, ia, ref_a, tr_a, "A again (warm)"));
        /* A plain SWEEP of other prices in between. */
        CHECK(tw_client_sweep(c, g_b, NB, g_grid, NC, pnl, tr, &err) == 0);
        CHECK(!memcmp(pnl, ref_b, sizeof(pnl)) && !memcmp(tr, tr_b, sizeof(tr)));
        CHECK(chatty(c, ia, ref_a, tr_a, "A after a plain SWEEP of B"));
        /* DROP while bound, then other prices (likely at the same address). */
        CHECK(tw_client_drop(c, ia, &err) == 0);
        CHECK(tw_client_load(c, g_b, NB, &ib, &err) == 0);
        CHECK(ib != ia);
        CHECK(chatty(c, ib, ref_b, tr_b, "B after DROP of A"));
        /* Two datasets interleaved call by call. */
        CHECK(tw_client_load(c, g_a, NB, &ia2, &err) == 0);
        for (size_t k = 0; k < NC; k++) {
            uint64_t id = k & 1 ? ia2 : ib;
            double p;
            int64_t t;
            CHECK(tw_client_sweep_loaded(c, id, g_grid + k * TW_COMBO_WINDOWS, 1, &p, &t,
                                         &err) == 0);
            CHECKF(kt_same(p, k & 1 ? ref_a[k] : ref_b[k]) && t == (k & 1 ? tr_a[k] : tr_b[k]),
                   "interleaved combo %zu", k);
        }
        /* Batched SWEEP_LOADED still matches too. */
        CHECK(tw_client_sweep_loaded(c, ia2, g_grid, NC, pnl, tr, &err) == 0);
        CHECK(!memcmp(pnl, ref_a, sizeof(pnl)) && !memcmp(tr, tr_a, sizeof(tr)));
        /* A bad window: BAD_PARAMS naming it; the next call is fine. */
        int64_t bad[TW_COMBO_WINDOWS] = {10, 20, 4, 7, 10, 0};
        rc = tw_client_sweep_loaded(c, ia2, bad, 1, pnl, tr, &err);
        CHECKF(TW_EWIRE_CODE(rc) == TW_WERR_BAD_PARAMS && strstr(err.msg, "t_full"),
               "bad window: %d %s", rc, err.msg);
        CHECK(chatty(c, ia2, ref_a, tr_a, "A2 after a bad window"));
        /* DROP of the bound dataset, then the other one and the dropped id. */
        CHECK(tw_client_drop(c, ia2, &err) == 0);
        CHECK(chatty(c, ib, ref_b, tr_b, "B after DROP of the bound A2"));
        rc = tw_client_sweep_loaded(c, ia2, g_grid, 1, pnl, tr, &err);
        CHECK(TW_EWIRE_CODE(rc) == TW_WERR_NO_DATASET);
        CHECK(tw_client_drop(c, ib, &err) == 0);
        tw_client_close(c);
    }
    tw_engine_stop(e);
    pthread_join(th, NULL);
    tw_engine_destroy(e);
    unlink(sock);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    uint64_t rs = 77;
    double ca = 100.0, cb = 50.0;
    for (size_t i = 0; i < NB; i++) {
        ca *= 1.0 + (kt_unif(&rs) - 0.5) * 0.004;
        cb *= 1.0 + (kt_unif(&rs) - 0.5) * 0.004;
        g_a[i] = ca;
        g_b[i] = cb;
    }
    for (size_t i = 500; i < 520; i++)
        g_a[i] = NAN;
    for (size_t k = 0; k < NC * TW_COMBO_WINDOWS; k++)
        g_grid[k] = 2 + (int64_t)(kt_rand(&rs) % 30) * 9;
    tw_error err = {0};
    tw_sweep_opts so;
    tw_sweep_opts_init(&so);
    so.threads = 1;
    if (tw_sweep(g_a, NB, g_grid, NC, &so, ref_a, tr_a, &err) ||
        tw_sweep(g_b, NB, g_grid, NC, &so, ref_b, tr_b, &err)) {
        fprintf(stderr, "reference sweep: %s\n", err.msg);
        return 1;
    }
    tw_sweep_opts_init(&so);
    run_engine_case(1, so.cache_bytes);
    run_engine_case(1, 0);
    run_engine_case(2, 4 * NB * sizeof(double));
    return tw_check_done("kernel_bound_engine");
}
