/* The exact kernel is bit-identical to the scalar reference: pass by pass
 * (every ISA's WMA passes against tw_wma, whole and in random blocks) and
 * sweep by sweep (every ISA, 1, 2 and 3 threads, default and short
 * blocks), over random windows (1..300 and some large), random lengths
 * (n = 1, n < w) and NaN gaps.  The seed is printed on failure. */
#include "kernel/kernel_internal.h"
#include "kt.h"

static uint64_t seed0 = 20261129;

static int64_t rand_window(uint64_t *rs, int64_t big)
{
    uint64_t r = kt_rand(rs) % 100;
    if (r < 3)
        return 1;
    if (r < 8 && big > 300)
        return 301 + (int64_t)(kt_rand(rs) % (uint64_t)(big - 300));
    return 1 + (int64_t)(kt_rand(rs) % 300);
}

/* Pass level: wma_one, wma_group_block and wma_range (in blocks) against
 * tw_wma. */
static void passes(uint64_t *rs, size_t n, int64_t big, int gaps)
{
    double *x = malloc(n * sizeof(double)), *ref = malloc(TW_GROUP * n * sizeof(double));
    double *got = malloc(TW_GROUP * n * sizeof(double));
    kt_series(rs, x, n, gaps);
    /* Signed inputs too (the d and e series are). */
    if (kt_rand(rs) & 1)
        for (size_t i = 0; i < n; i++)
            x[i] -= 100.0;
    int64_t w[TW_GROUP];
    for (int g = 0; g < TW_GROUP; g++)
        w[g] = rand_window(rs, big);
    /* Sorted descending; a duplicate now and then. */
    for (int a = 0; a < TW_GROUP; a++)
        for (int b = a + 1; b < TW_GROUP; b++)
            if (w[b] > w[a]) {
                int64_t t = w[a];
                w[a] = w[b];
                w[b] = t;
            }
    if (kt_rand(rs) % 4 == 0)
        w[3] = w[2];
    for (int g = 0; g < TW_GROUP; g++)
        tw_wma(x, n, w[g], ref + (size_t)g * n);

    for (int isa = TW_ISA_SCALAR; isa <= TW_ISA_AVX512; isa++) {
        const struct tw__exact_ops *ops = tw__exact_ops_for((tw_isa)isa);
        if (!ops)
            continue;
        for (int g = 0; g < TW_GROUP; g++) {
            ops->wma_one(x, n, w[g], got, tw__weights());
            for (size_t i = 0; i < n; i++)
                if (!kt_same(got[i], ref[(size_t)g * n + i])) {
                    CHECKF(0, "wma_one %s n=%zu w=%lld i=%zu got %.17g want %.17g (seed %llu)",
                           tw_isa_name((tw_isa)isa), n, (long long)w[g], i, got[i],
                           ref[(size_t)g * n + i], (unsigned long long)seed0);
                    break;
                }
        }
        /* Blocks of outputs, as the tiled sweep's phase A: x padded with
         * NaN before bar 0 (outputs before a window's span are NaN
         * either way), random block bounds, and inputs available either to
         * the end of the series or only to the block's end (the stream's
         * chunks); padding slots now and then.  Nothing outside a block
         * may be written. */
        size_t pad = (size_t)w[0];
        double *xp = malloc((pad + n) * sizeof(double));
        double *blk = malloc((n + 2 * 8) * sizeof(double));
        for (size_t i = 0; i < pad; i++)
            xp[i] = NAN;
        memcpy(xp + pad, x, n * sizeof(double));
        const double *xb = xp + pad;
        int npad = kt_rand(rs) % 3 == 0 ? (int)(kt_rand(rs) % 4) : 0;
        for (size_t t0 = 0; t0 < n;) {
            size_t t1 = t0 + 1 + (size_t)(kt_rand(rs) % (n / 3 + 8));
            if (t1 > n)
                t1 = n;
            size_t nb = t1 - t0;
            ptrdiff_t avail = kt_rand(rs) & 1 ? (ptrdiff_t)n : (ptrdiff_t)t1;
            int64_t gw[TW_GROUP];
            double *out[TW_GROUP], *bufs[TW_GROUP];
            for (int g = 0; g < TW_GROUP; g++) {
                int real = g < TW_GROUP - npad;
                gw[g] = real ? w[g] : 1;
                bufs[g] = malloc((nb + 16) * sizeof(double));
                for (size_t i = 0; i < nb + 16; i++)
                    bufs[g][i] = -777.0;
                out[g] = real ? bufs[g] + 8 : NULL;
            }
            ops->wma_group_block(xb, avail, gw, out, tw__weights(), (ptrdiff_t)t0, (ptrdiff_t)t1);
            for (int g = 0; g < TW_GROUP - npad; g++) {
                for (size_t i = 0; i < 8; i++)
                    CHECKF(bufs[g][i] == -777.0 && bufs[g][8 + nb + i] == -777.0,
                           "wma_group_block %s wrote outside its block (seed %llu)",
                           tw_isa_name((tw_isa)isa), (unsigned long long)seed0);
                for (size_t i = t0; i < t1; i++)
                    if (!kt_same(out[g][i - t0], ref[(size_t)g * n + i])) {
                        CHECKF(0, "wma_group_block %s n=%zu w=%lld (slot %d) block [%zu,%zu) "
                               "avail %td i=%zu got %.17g want %.17g (seed %llu)",
                               tw_isa_name((tw_isa)isa), n, (long long)w[g], g, t0, t1, avail,
                               i, out[g][i - t0], ref[(size_t)g * n + i],
                               (unsigned long long)seed0);
                        break;
                    }
            }
            for (int g = 0; g < TW_GROUP; g++)
                free(bufs[g]);
            /* The single-window pass over the same block. */
            int64_t ws = w[kt_rand(rs) % TW_GROUP];
            double *ref1 = malloc(n * sizeof(double));
            tw_wma(x, n, ws, ref1);
            for (size_t i = 0; i < nb + 16; i++)
                blk[i] = -777.0;
            ops->wma_range(xb, ws, blk + 8, tw__weights(), (ptrdiff_t)t0, (ptrdiff_t)t1);
            for (size_t i = 0; i < 8; i++)
                CHECK(blk[i] == -777.0 && blk[8 + nb + i] == -777.0);
            for (size_t i = t0; i < t1; i++)
                if (!kt_same(blk[8 + i - t0], ref1[i])) {
                    CHECKF(0, "wma_range %s w=%lld block [%zu,%zu) i=%zu (seed %llu)",
                           tw_isa_name((tw_isa)isa), (long long)ws, t0, t1, i,
                           (unsigned long long)seed0);
                    break;
                }
            free(ref1);
            t0 = t1;
        }
        free(xp);
        free(blk);
    }
    free(x);
    free(ref);
    free(got);
}

/* Sweep level against the scalar reference, combo by combo. */
static void sweeps(uint64_t *rs, size_t n, size_t k, int64_t big, int gaps)
{
    double *x = malloc(n * sizeof(double));
    kt_series(rs, x, n, gaps);
    int64_t *combos = malloc(k * TW_COMBO_WINDOWS * sizeof(int64_t));
    for (size_t c = 0; c < k; c++) {
        int64_t *cw = combos + c * TW_COMBO_WINDOWS;
        if (kt_rand(rs) % 3 == 0) {
            tw_combo_from_length(1 + (int64_t)(kt_rand(rs) % 250), cw);
        } else {
            for (int j = 0; j < TW_COMBO_WINDOWS; j++)
                cw[j] = rand_window(rs, big);
        }
    }
    double *rp = malloc(k * sizeof(double)), *gp = malloc(k * sizeof(double));
    int64_t *rt = malloc(k * sizeof(int64_t)), *gt = malloc(k * sizeof(int64_t));
    double *scratch = malloc(5 * n * sizeof(double));
    for (size_t c = 0; c < k; c++)
        tw__backtest_scalar(x, n, combos + c * TW_COMBO_WINDOWS, TW_FEE_DEFAULT, scratch,
                            rp + c, rt + c);

    tw_error err;
    for (int isa = TW_ISA_SCALAR; isa <= TW_ISA_AVX512; isa++) {
        if (!tw_isa_supported((tw_isa)isa))
            continue;
        for (int variant = 0; variant < 3; variant++) {
            tw_sweep_opts o;
            tw_sweep_opts_init(&o);
            o.isa = (tw_isa)isa;
            o.threads = variant == 1 ? 3 : variant == 2 ? 2 : 1;
            /* Variant 2: short blocks, so that even short series span
             * several of them and the pipeline's buffers alternate. */
            o.block_bars = variant == 2 ? 64 : 0;
            memset(gp, 0, k * sizeof(double));
            memset(gt, 0, k * sizeof(int64_t));
            int rc = tw_sweep(x, n, combos, k, &o, gp, gt, &err);
            CHECKF(rc == 0, "rc %d: %s", rc, err.msg);
            for (size_t c = 0; c < k; c++)
                if (!kt_same(gp[c], rp[c]) || gt[c] != rt[c]) {
                    const int64_t *cw = combos + c * TW_COMBO_WINDOWS;
                    CHECKF(0, "sweep %s variant %d n=%zu combo %zu (%lld,%lld,%lld,%lld,%lld,%lld): "
                           "pnl %.17g/%.17g trades %lld/%lld (seed %llu)",
                           tw_isa_name((tw_isa)isa), variant, n, c, (long long)cw[0],
                           (long long)cw[1], (long long)cw[2], (long long)cw[3],
                           (long long)cw[4], (long long)cw[5], gp[c], rp[c],
                           (long long)gt[c], (long long)rt[c], (unsigned long long)seed0);
                    break;
                }
        }
    }
    free(x);
    free(combos);
    free(rp);
    free(gp);
    free(rt);
    free(gt);
    free(scratch);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        seed0 = strtoull(argv[1], NULL, 0);
    uint64_t rs = seed0;
    printf("kernel_exact: seed %llu\n", (unsigned long long)seed0);
    static const size_t lens[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 100, 257, 1000, 2500};
    for (size_t t = 0; t < TW_ARRAY_SIZE(lens); t++) {
        passes(&rs, lens[t], 300, 0);
        passes(&rs, lens[t], 300, 2);
    }
    passes(&rs, 6000, 5000, 3); /* large windows */
    passes(&rs, 40000, 300, 20); /* several phase-A chunks */
    for (size_t t = 0; t < TW_ARRAY_SIZE(lens); t++)
        sweeps(&rs, lens[t], 1 + (size_t)(kt_rand(&rs) % 12), 300, (int)(t & 1) * 2);
    sweeps(&rs, 3000, 16, 300, 4);
    sweeps(&rs, 5000, 3, 4000, 2);  /* large windows */
    sweeps(&rs, 20000, 6, 300, 30); /* two chunks, NaN gaps */
    /* More combos than one batch holds (4096): short windows, n = 300. */
    {
        enum { NB = 300, NK = 4500 };
        double *x = malloc(NB * sizeof(double)), *scratch = malloc(5 * NB * sizeof(double));
        int64_t *cb = malloc(NK * TW_COMBO_WINDOWS * sizeof(int64_t));
        double *rp = malloc(NK * sizeof(double)), *gp = malloc(NK * sizeof(double));
        int64_t *rt = malloc(NK * sizeof(int64_t)), *gt = malloc(NK * sizeof(int64_t));
        kt_series(&rs, x, NB, 1);
        for (size_t c = 0; c < NK; c++) {
            tw_combo_from_length(2 + (int64_t)(kt_rand(&rs) % 40), cb + c * TW_COMBO_WINDOWS);
            tw__backtest_scalar(x, NB, cb + c * TW_COMBO_WINDOWS, TW_FEE_DEFAULT, scratch,
                                rp + c, rt + c);
        }
        tw_sweep_opts o;
        tw_sweep_opts_init(&o);
        o.threads = 2;
        tw_error err;
        CHECK(tw_sweep(x, NB, cb, NK, &o, gp, gt, &err) == 0);
        for (size_t c = 0; c < NK; c++)
            if (!kt_same(gp[c], rp[c]) || gt[c] != rt[c]) {
                CHECKF(0, "many combos: combo %zu differs (seed %llu)", c,
                       (unsigned long long)seed0);
                break;
            }
        free(x);
        free(scratch);
        free(cb);
        free(rp);
        free(gp);
        free(rt);
        free(gt);
    }
    return tw_check_done("kernel_exact");
}
