/* The exact kernel is bit-identical to the scalar reference: pass by pass
 * (every ISA's WMA passes against tw_wma) and sweep by sweep (every ISA,
 * 1 and 3 threads, and a tiny window cache that forces many batches), over
 * random windows (1..300 and some large), random lengths (n = 1, n < w) and
 * NaN gaps.  The seed is printed on failure. */
#include "kernel/kernel_internal.h"
#include "kt.h"

static uint64_t seed0 = 20261129;

static void make_series(uint64_t *rs, double *x, size_t n, int gaps)
{
    double c = 100.0;
    for (size_t i = 0; i < n; i++) {
        c *= 1.0 + (kt_unif(rs) - 0.5) * 0.004;
        x[i] = c;
    }
    if (gaps)
        for (int g = 0; g < gaps; g++) {
            size_t at = (size_t)(kt_rand(rs) % n), len = 1 + (size_t)(kt_rand(rs) % 30);
            for (size_t i = at; i < n && i < at + len; i++)
                x[i] = NAN;
        }
}

static int64_t rand_window(uint64_t *rs, int64_t big)
{
    uint64_t r = kt_rand(rs) % 100;
    if (r < 3)
        return 1;
    if (r < 8 && big > 300)
        return 301 + (int64_t)(kt_rand(rs) % (uint64_t)(big - 300));
    return 1 + (int64_t)(kt_rand(rs) % 300);
}

/* Pass level: wma_one and wma_group (in chunks) against tw_wma. */
static void passes(uint64_t *rs, size_t n, int64_t big, int gaps)
{
    double *x = malloc(n * sizeof(double)), *ref = malloc(TW_GROUP * n * sizeof(double));
    double *got = malloc(TW_GROUP * n * sizeof(double));
    make_series(rs, x, n, gaps);
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
        double *out[TW_GROUP];
        for (int g = 0; g < TW_GROUP; g++) {
            out[g] = got + (size_t)g * n;
            for (size_t i = 0; i < n; i++)
                out[g][i] = i + 1 < (size_t)w[g] ? NAN : -12345.0;
        }
        /* Random chunking of the anchors, as the sweep's phase A does. */
        for (size_t kb = 0; kb < n;) {
            size_t ke = kb + 1 + (size_t)(kt_rand(rs) % (n / 3 + 8));
            if (ke > n)
                ke = n;
            ops->wma_group(x, n, w, out, tw__weights(), kb, ke);
            kb = ke;
        }
        for (int g = 0; g < TW_GROUP; g++)
            for (size_t i = 0; i < n; i++)
                if (!kt_same(out[g][i], ref[(size_t)g * n + i])) {
                    CHECKF(0, "wma_group %s n=%zu w=%lld (slot %d) i=%zu got %.17g want %.17g (seed %llu)",
                           tw_isa_name((tw_isa)isa), n, (long long)w[g], g, i, out[g][i],
                           ref[(size_t)g * n + i], (unsigned long long)seed0);
                    break;
                }
    }
    free(x);
    free(ref);
    free(got);
}

/* Sweep level against the scalar reference, combo by combo. */
static void sweeps(uint64_t *rs, size_t n, size_t k, int64_t big, int gaps)
{
    double *x = malloc(n * sizeof(double));
    make_series(rs, x, n, gaps);
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
            o.threads = variant == 1 ? 3 : 1;
            memset(gp, 0, k * sizeof(double));
            memset(gt, 0, k * sizeof(int64_t));
            int rc;
            if (variant < 2) {
                rc = tw_sweep(x, n, combos, k, &o, gp, gt, &err);
            } else {
                /* A cache of the minimum 5 slots: one or two combos a batch. */
                tw_sweeper *s;
                o.threads = 2;
                rc = tw__sweeper_create_ex(&s, n + 7, &o, 1);
                CHECK(rc == 0);
                if (rc)
                    continue;
                rc = tw_sweeper_run(s, x, n, combos, k, gp, gt, &err);
                tw_sweeper_destroy(s);
            }
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
        make_series(&rs, x, NB, 1);
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
    return kt_done("kernel_exact");
}
