/* The study's fingerprint (kernel.md "Data"): on the study's dataset, built
 * here with /usr/bin/python3 and numpy exactly as the spec says, the first
 * combo of the default grid gives PnL -5165.58 (-5165.584357716994 to
 * 1e-9) over 57,029 trades, with the scalar and the exact kernel.  Skips
 * (77) when numpy is not there. */
#include <unistd.h>

#include "kernel/kernel_internal.h"
#include "kt.h"

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
    free(close);
    free(close2);
    return tw_check_done("kernel_fingerprint");
}
