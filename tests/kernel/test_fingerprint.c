/* The study's fingerprint (kernel.md "Data"): on the study's dataset, built
 * here with /usr/bin/python3 and numpy exactly as the spec says, the first
 * combo of the default grid gives PnL -5165.58 (-5165.584357716994 to
 * 1e-9) over 57,029 trades, with the scalar and the exact kernel.  Skips
 * (77) when numpy is not there. */
#include <unistd.h>

#include "kernel/kernel_internal.h"
#include "kt.h"

/* An order-free digest of a trade log (combos arrive on several threads). */
struct fp_log {
    size_t n;
    _Atomic uint64_t sum;
};

static void fp_trade(void *ctx, const tw_trade *t)
{
    struct fp_log *l = ctx;
    uint64_t h = t->combo * 0x9e3779b97f4a7c15ull ^ (uint64_t)t->entry_bar * 31 ^
                 (uint64_t)t->exit_bar * 0xbf58476d1ce4e5b9ull ^ (uint64_t)(t->side + 2);
    uint64_t r;
    memcpy(&r, &t->r, sizeof(r));
    h ^= r;
    h = (h ^ (h >> 29)) * 0x94d049bb133111ebull;
    __atomic_fetch_add(&l->n, 1, __ATOMIC_RELAXED);
    l->sum += h;
}

int main(void)
{
    char dir[] = "/tmp/tw_kernel_fp_XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char cmd[1024], raw[128], npy[128];
    snprintf(raw, sizeof(raw), "%s/study.f64", dir);
    snprintf(npy, sizeof(npy), "%s/study.npy", dir);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c \"import numpy as np; "
             "r = np.random.default_rng(42).normal(0.0, 0.0008, 150000); "
             "close = 100.0*np.exp(np.cumsum(r)); "
             "close.astype('<f8').tofile('%s'); np.save('%s', close)\"",
             raw, npy);
    int st = system(cmd);
    if (st != 0) {
        printf("SKIP: /usr/bin/python3 with numpy could not build the study dataset\n");
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        if (system(cmd) != 0)
            perror("rm");
        return 77;
    }
    double *close = NULL, *close2 = NULL;
    size_t n = 0, n2 = 0;
    tw_error err;
    CHECK(tw_read_raw(raw, &close, &n, &err) == 0);
    /* numpy's own .npy of the same array reads back the same bytes. */
    CHECK(tw_read_npy(npy, &close2, &n2, &err) == 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    if (!close || !close2)
        return tw_check_done("kernel_fingerprint");
    CHECK(n == 150000 && n2 == n);
    CHECK(!memcmp(close, close2, n * sizeof(double)));

    int64_t grid[TW_GRID_DEFAULT_COMBOS * TW_COMBO_WINDOWS];
    tw_grid_default(grid);
    for (int kernel = 0; kernel < 2; kernel++) {
        tw_sweep_opts o;
        tw_sweep_opts_init(&o);
        o.kernel = (tw_kernel_kind)kernel;
        double pnl[2];
        int64_t trades[2];
        /* Combo 0 and combo 1 (a second sweep row, so the result is read
         * from the right index). */
        CHECK(tw_sweep(close, n, grid, 2, &o, pnl, trades, &err) == 0);
        const char *name = kernel ? "scalar" : "exact";
        printf("  %s: combo 0 pnl %.15g trades %lld; combo 1 pnl %.15g trades %lld\n", name,
               pnl[0], (long long)trades[0], pnl[1], (long long)trades[1]);
        CHECKF(round(pnl[0] * 100.0) / 100.0 == -5165.58, "%s pnl %.17g", name, pnl[0]);
        CHECKF(fabs(pnl[0] - -5165.584357716994) < 1e-9, "%s pnl %.17g", name, pnl[0]);
        CHECKF(trades[0] == 57029, "%s trades %lld", name, (long long)trades[0]);
    }
    /* hma_sar by name: its exact sweep and its generic step() give the
     * fingerprint and the same bits, statistics and trade lists included
     * (the first 16 combos; the generic step is the slow path). */
    const tw_kernel_def *hs = NULL;
    CHECK(tw_kernel_find("hma_sar", &hs, &err) == 0);
    double gp[16 * TW_COMBO_WINDOWS];
    for (size_t i = 0; i < 16 * TW_COMBO_WINDOWS; i++)
        gp[i] = (double)grid[i];
    tw_kresult rf[16], rg[16];
    struct fp_log lf = {0}, lg = {0};
    tw_ksweep_opts ko;
    tw_ksweep_opts_init(&ko);
    CHECK(tw_ksweep(hs, close, n, gp, 16, &ko, rf, fp_trade, &lf, &err) == 0);
    ko.generic = 1;
    ko.threads = 2;
    CHECK(tw_ksweep(hs, close, n, gp, 16, &ko, rg, fp_trade, &lg, &err) == 0);
    printf("  by name: fast combo 0 pnl %.15g trades %lld; generic %.15g %lld\n", rf[0].pnl,
           (long long)rf[0].trades, rg[0].pnl, (long long)rg[0].trades);
    CHECKF(fabs(rf[0].pnl - -5165.584357716994) < 1e-9 && rf[0].trades == 57029, "fast %.17g",
           rf[0].pnl);
    CHECKF(kt_same(rg[0].pnl, rf[0].pnl) && rg[0].trades == 57029, "generic %.17g", rg[0].pnl);
    int same = 1;
    for (int k = 0; k < 16; k++)
        same &= kt_same(rf[k].pnl, rg[k].pnl) && rf[k].trades == rg[k].trades &&
                rf[k].wins == rg[k].wins && kt_same(rf[k].max_drawdown, rg[k].max_drawdown) &&
                kt_same(rf[k].exposure, rg[k].exposure) && rf[k].open.side == rg[k].open.side &&
                rf[k].open.entry_bar == rg[k].open.entry_bar;
    CHECKF(same, "hma_sar fast and generic differ on the study's dataset");
    CHECKF(lf.n == lg.n && lf.n > 57029 && lf.sum == lg.sum, "trade logs %zu / %zu, %llx / %llx",
           lf.n, lg.n, (unsigned long long)lf.sum, (unsigned long long)lg.sum);
    free(close);
    free(close2);
    return tw_check_done("kernel_fingerprint");
}
