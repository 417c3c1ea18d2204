/* WMA values computed by hand (kernel.md "WMA"), for the reference tw_wma
 * and for every exact-kernel ISA's single-window and lockstep-group passes. */
#include "kernel/kernel_internal.h"
#include "kt.h"

struct wcase {
    const char *name;
    double x[8];
    size_t n;
    int64_t w;
    double want[8]; /* NAN where the output is NaN */
};

/* Every expected value is num / den with num an exact integer sum, i.e.
 * one correctly rounded division, written as that division. */
static const struct wcase cases[] = {
    {"w=1 is the input", {1, 2, 3, 4, 5}, 5, 1, {1, 2, 3, 4, 5}},
    {"w=2", {1, 2, 3, 4, 5}, 5, 2, {NAN, 5.0 / 3.0, 8.0 / 3.0, 11.0 / 3.0, 14.0 / 3.0}},
    {"w=3", {1, 2, 3, 4, 5}, 5, 3, {NAN, NAN, 14.0 / 6.0, 20.0 / 6.0, 26.0 / 6.0}},
    {"w=4 den 10", {2, 4, 8, 16, 32, 64}, 6, 4,
     {NAN, NAN, NAN, (16 * 4 + 8 * 3 + 4 * 2 + 2) / 10.0, (32 * 4 + 16 * 3 + 8 * 2 + 4) / 10.0,
      (64 * 4 + 32 * 3 + 16 * 2 + 8) / 10.0}},
    {"NaN gap", {1, NAN, 3, 4, 5}, 5, 2, {NAN, NAN, NAN, 11.0 / 3.0, 14.0 / 3.0}},
    {"n < w", {1, 2, 3}, 3, 4, {NAN, NAN, NAN}},
    {"n = 1, w = 1", {7.5}, 1, 1, {7.5}},
    {"n = w", {3, 1, 2}, 3, 3, {NAN, NAN, (2 * 3 + 1 * 2 + 3 * 1) / 6.0}},
    /* The order of the additions shows: 0 + (-1e16*3) + 1*2 + 1e16*1 in
     * the spec order is -3e16 + 2 -> -3e16 (the 2 is lost), then + 1e16
     * -> -2e16; any other order keeps the 2.  -2e16 / 6 rounds to
     * -3333333333333333.5. */
    {"addition order", {1e16, 1, -1e16}, 3, 3, {NAN, NAN, -3333333333333333.5}},
};

static void check(const char *who, const struct wcase *c, const double *got)
{
    for (size_t i = 0; i < c->n; i++)
        CHECKF(kt_same(got[i], c->want[i]), "%s: case '%s' i=%zu got %.17g want %.17g", who,
               c->name, i, got[i], c->want[i]);
}

int main(void)
{
    const double *wt = tw__weights();
    for (size_t k = 0; k < TW_ARRAY_SIZE(cases); k++) {
        const struct wcase *c = &cases[k];
        double out[8];
        memset(out, 0x55, sizeof(out));
        tw_wma(c->x, c->n, c->w, out);
        check("tw_wma", c, out);
        for (int isa = TW_ISA_SCALAR; isa <= TW_ISA_AVX512; isa++) {
            const struct tw__exact_ops *ops = tw__exact_ops_for((tw_isa)isa);
            if (!ops)
                continue;
            double o[8];
            memset(o, 0x55, sizeof(o));
            ops->wma_one(c->x, c->n, c->w, o, wt);
            check(tw_isa_name((tw_isa)isa), c, o);
            /* The group pass, the window in every slot, over x padded
             * with NaN before bar 0 as the sweep pads it. */
            int64_t gw[TW_GROUP];
            double *go[TW_GROUP];
            double xp[16];
            for (int i = 0; i < 8; i++)
                xp[i] = NAN;
            memcpy(xp + 8, c->x, c->n * sizeof(double));
            for (int g = 0; g < TW_GROUP; g++) {
                gw[g] = c->w;
                go[g] = o;
            }
            memset(o, 0x55, sizeof(o));
            ops->wma_group_block(xp + 8, (ptrdiff_t)c->n, gw, go, wt, 0, (ptrdiff_t)c->n);
            check(tw_isa_name((tw_isa)isa), c, o);
        }
    }
    /* A long series so the vector bodies run: x[i] = i + 1, w = 3, out[i] =
     * ((i+1)*3 + i*2 + (i-1)) / 6 = (6i + 2) / 6. */
    enum { N = 100 };
    double x[N], o[N];
    for (int i = 0; i < N; i++)
        x[i] = i + 1;
    for (int isa = TW_ISA_SCALAR; isa <= TW_ISA_AVX512; isa++) {
        const struct tw__exact_ops *ops = tw__exact_ops_for((tw_isa)isa);
        if (!ops)
            continue;
        ops->wma_one(x, N, 3, o, wt);
        for (int i = 2; i < N; i++)
            CHECKF(o[i] == (6.0 * i + 2.0) / 6.0, "%s i=%d got %.17g", tw_isa_name((tw_isa)isa),
                   i, o[i]);
        CHECK(isnan(o[0]) && isnan(o[1]));
    }
    tw_wma(x, N, 3, o);
    for (int i = 2; i < N; i++)
        CHECK(o[i] == (6.0 * i + 2.0) / 6.0);
    return tw_check_done("kernel_wma");
}
