/* The tiled sweep (kernel.md "Blocks over time") is bit-identical to the
 * scalar reference for every block length: B in {1, 2, 7, 64, the
 * default, n} (and a few others), on 1, 2 and 3 threads, every ISA, over
 * the default grid, random odd windows up to 400, data with NaN gaps and
 * series shorter than every window.  Its memory depends on the grid and
 * B, never on the number of bars.  The seed is printed on failure. */
#include <errno.h>

#include "kernel/kernel_internal.h"
#include "kt.h"

static uint64_t seed0 = 20261201;

static void reference(const double *x, size_t n, const int64_t *combos, size_t k, double *pnl,
                      int64_t *trades)
{
    double *scratch = malloc(5 * n * sizeof(double));
    for (size_t c = 0; c < k; c++)
        tw__backtest_scalar(x, n, combos + c * TW_COMBO_WINDOWS, TW_FEE_DEFAULT, scratch,
                            pnl + c, trades + c);
    free(scratch);
}

static int same(const double *pa, const int64_t *ta, const double *pb, const int64_t *tb,
                size_t k, const char *what, size_t n, size_t b, unsigned th, tw_isa isa)
{
    for (size_t c = 0; c < k; c++)
        if (!kt_same(pa[c], pb[c]) || ta[c] != tb[c]) {
            CHECKF(0, "%s: n=%zu B=%zu threads=%u isa=%s combo %zu: pnl %.17g vs %.17g, "
                   "trades %lld vs %lld (seed %llu)", what, n, b, th, tw_isa_name(isa), c,
                   pa[c], pb[c], (long long)ta[c], (long long)tb[c],
                   (unsigned long long)seed0);
            return 0;
        }
    return 1;
}

/* Every block length and thread count against the reference. */
static void blocks(const char *what, const double *x, size_t n, const int64_t *combos, size_t k,
                   int all_isas)
{
    double *rp = malloc(k * sizeof(double)), *gp = malloc(k * sizeof(double));
    int64_t *rt = malloc(k * sizeof(int64_t)), *gt = malloc(k * sizeof(int64_t));
    reference(x, n, combos, k, rp, rt);
    const size_t bs[] = {1, 2, 7, 16, 64, 100, 0 /* default */, n};
    for (int isa = TW_ISA_SCALAR; isa <= TW_ISA_AVX512; isa++) {
        if (!tw_isa_supported((tw_isa)isa) || (!all_isas && isa != (int)tw_isa_best()))
            continue;
        for (size_t i = 0; i < TW_ARRAY_SIZE(bs); i++)
            for (unsigned th = 1; th <= 3; th += 2) {
                /* Bar by bar runs on one thread anyway; and three threads
                 * on a machine of fewer cores yield at every short block. */
                if (th > 1 && bs[i] < 64)
                    continue;
                tw_sweep_opts o;
                tw_sweep_opts_init(&o);
                o.isa = (tw_isa)isa;
                o.threads = th;
                o.block_bars = bs[i];
                memset(gp, 0xff, k * sizeof(double));
                tw_error err;
                int rc = tw_sweep(x, n, combos, k, &o, gp, gt, &err);
                CHECKF(rc == 0, "%s: rc %d %s", what, rc, err.msg);
                if (rc == 0)
                    same(gp, gt, rp, rt, k, what, n, bs[i], th, (tw_isa)isa);
            }
    }
    free(rp);
    free(gp);
    free(rt);
    free(gt);
}

static void odd_windows(uint64_t *rs, int64_t *combos, size_t k, int64_t wmax)
{
    for (size_t i = 0; i < k * TW_COMBO_WINDOWS; i++)
        combos[i] = 1 + 2 * (int64_t)(kt_rand(rs) % (uint64_t)((wmax + 1) / 2));
}

/* A sweeper's memory after runs of the same grid on short and on long
 * series: the same bytes (nothing sized from n), and results still the
 * reference's. */
static void memory_flat(uint64_t *rs)
{
    enum { NL = 60000 };
    double *x = malloc(NL * sizeof(double));
    kt_series(rs, x, NL, 10);
    int64_t g[TW_GRID_DEFAULT_COMBOS * TW_COMBO_WINDOWS];
    size_t k = tw_grid_default(g);
    double p[TW_GRID_DEFAULT_COMBOS], rp[TW_GRID_DEFAULT_COMBOS];
    int64_t t[TW_GRID_DEFAULT_COMBOS], rt[TW_GRID_DEFAULT_COMBOS];
    tw_sweep_opts o;
    tw_sweep_opts_init(&o);
    o.threads = 2;
    tw_sweeper *s;
    REQUIRE(tw_sweeper_create(&s, NL, &o) == 0);
    tw_error err;
    CHECK(tw_sweeper_run(s, x, 1000, g, k, p, t, &err) == 0);
    size_t small = tw__sweeper_mem_bytes(s);
    CHECK(tw_sweeper_run(s, x, NL, g, k, p, t, &err) == 0);
    size_t large = tw__sweeper_mem_bytes(s);
    CHECKF(small == large, "sweeper memory %zu bytes after 1000 bars, %zu after %d", small,
           large, NL);
    /* The default grid's whole state is far below the input itself. */
    CHECKF(large < (size_t)8 << 20, "sweeper memory %zu bytes", large);
    reference(x, NL, g, k, rp, rt);
    same(p, t, rp, rt, k, "long series", NL, 0, 2, tw_isa_best());
    tw_sweeper_destroy(s);
    free(x);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        seed0 = strtoull(argv[1], NULL, 0);
    uint64_t rs = seed0;
    printf("kernel_tile: seed %llu\n", (unsigned long long)seed0);
    int64_t g[TW_GRID_DEFAULT_COMBOS * TW_COMBO_WINDOWS];
    size_t kg = tw_grid_default(g);

    /* The default grid on a synthetic walk, with and without gaps. */
    {
        enum { N = 3000 };
        double *x = malloc(N * sizeof(double));
        tw_gen_closes(x, N, 42, 0.0008);
        blocks("default grid", x, N, g, kg, 1);
        kt_series(&rs, x, N, 12);
        blocks("default grid, NaN gaps", x, N, g, kg, 0);
        free(x);
    }
    /* Odd windows up to 400, gaps. */
    {
        enum { N = 2000, K = 24 };
        double *x = malloc(N * sizeof(double));
        int64_t c[K * TW_COMBO_WINDOWS];
        kt_series(&rs, x, N, 8);
        odd_windows(&rs, c, K, 400);
        blocks("odd windows <= 400", x, N, c, K, 1);
        free(x);
    }
    /* n smaller than every window; n = 1; n between the grid's windows. */
    {
        double x[300];
        kt_series(&rs, x, 300, 1);
        int64_t big[3 * TW_COMBO_WINDOWS];
        for (size_t i = 0; i < 3 * TW_COMBO_WINDOWS; i++)
            big[i] = 301 + (int64_t)(kt_rand(&rs) % 500);
        blocks("n < every window", x, 300, big, 3, 1);
        blocks("n = 1", x, 1, g, kg, 0);
        blocks("n = 60", x, 60, g, kg, 0);
    }
    /* Windows of 1, constant prices. */
    {
        double x[500];
        for (int i = 0; i < 500; i++)
            x[i] = 123.25;
        int64_t ones[2 * TW_COMBO_WINDOWS] = {1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 2};
        blocks("constant", x, 500, g, kg, 0);
        kt_series(&rs, x, 500, 3);
        blocks("windows of 1", x, 500, ones, 2, 0);
    }
    /* Random grids and lengths. */
    for (int r = 0; r < 6; r++) {
        size_t n = 1 + (size_t)(kt_rand(&rs) % 2500), k = 1 + (size_t)(kt_rand(&rs) % 40);
        double *x = malloc(n * sizeof(double));
        int64_t *c = malloc(k * TW_COMBO_WINDOWS * sizeof(int64_t));
        kt_series(&rs, x, n, (int)(kt_rand(&rs) % 5));
        for (size_t i = 0; i < k * TW_COMBO_WINDOWS; i++)
            c[i] = 1 + (int64_t)(kt_rand(&rs) % 300);
        blocks("random", x, n, c, k, 0);
        free(x);
        free(c);
    }
    memory_flat(&rs);

    /* Bad block length: refused at create, nothing run. */
    {
        tw_sweep_opts o;
        tw_sweep_opts_init(&o);
        o.block_bars = TW_BLOCK_MAX + 1;
        tw_sweeper *s = NULL;
        CHECK(tw_sweeper_create(&s, 10, &o) == -EINVAL && s == NULL);
        double x[4] = {1, 2, 3, 4}, p = -1;
        int64_t t = -1;
        tw_error err;
        CHECK(tw_sweep(x, 4, g, 1, &o, &p, &t, &err) == -EINVAL && p == -1 && t == -1);
        CHECK(strstr(err.msg, "block_bars") != NULL);
    }
    return tw_check_done("kernel_tile");
}
