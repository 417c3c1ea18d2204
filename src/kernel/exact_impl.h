/* The exact kernel's inner loops, written once and compiled once per ISA
 * (exact_avx512.c, exact_avx2.c, exact_generic.c define the vector macros
 * below and include this file).
 *
 * Every output keeps the reference's own addition order (kernel.md "WMA":
 * num = 0.0, then += x[i-j] * (w-j) for j = 0, 1, ...): SIMD lanes run over
 * output bars, never over the terms of one sum, and every multiply and add
 * is a separate instruction (the macros map to mul/add intrinsics and the
 * whole project builds with -ffp-contract=off).  That is what makes the
 * results bit-identical to scalar.c.
 *
 * Required macros:
 *   SFX(name)        name with the ISA suffix appended
 *   VD, VL           vector type and its lane count
 *   V_LOAD(p), V_STORE(p, v)   unaligned load/store of VL doubles
 *   V_BCAST(p)       VL copies of *p
 *   V_SET1(x), V_ZERO()
 *   V_ADD, V_SUB, V_MUL, V_DIV
 *   V_GT0(v), V_LT0(v)  bit l set iff lane l is > 0.0 / < 0.0 (ordered:
 *                       NaN sets neither)
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kernel/kernel_internal.h"

/* Scalar WMA of one output, in the reference order.  Used for the edges
 * of every vector loop so that edges and body agree bit for bit. */
static inline double wma_at(const double *x, size_t i, int64_t w, double den)
{
    double num = 0.0;
    for (int64_t j = 0; j < w; j++)
        num += x[i - (size_t)j] * (double)(w - j);
    return num / den;
}

static inline double wma_den(int64_t w)
{
    return (double)w * (double)(w + 1) / 2.0;
}

/* ---- a group of windows over one series, in lockstep ------------------
 *
 * All windows of a group walk the same inputs: output i of window w is
 * anchored at k0 = i - w + 1 (its oldest input), and its term of weight c
 * is x[k0 + c - 1] * c, whatever w is.  So for a block of anchors the
 * product for weight c is computed once and added to the accumulator of
 * every window with w >= c, starting with the largest window (c runs down,
 * which is each window's own j = 0, 1, ... order).  One load and one
 * multiply then feed TW_GROUP adds, which keeps the loop on the adders. */
static void SFX(tw__wma_group)(const double *x, size_t n, const int64_t *w,
                        double *const *out, const double *wt, size_t kb,
                        size_t ke)
{
    TW_STATIC_ASSERT(TW_GROUP == 8, "the phase loops below are written for 8");
    const int64_t wmax = w[0];
    double den[TW_GROUP];
    VD vden[TW_GROUP];
    for (int g = 0; g < TW_GROUP; g++) {
        TW_ASSERT(g == 0 || w[g] <= w[g - 1]);
        den[g] = wma_den(w[g]);
        vden[g] = V_SET1(den[g]);
    }

    /* Vector part: anchors whose outputs exist for every window of the
     * group (k0 + VL - 1 <= n - wmax). */
    size_t k0 = kb;
    if ((size_t)wmax <= n) {
        size_t kv_end = n - (size_t)wmax + 1; /* anchors valid for wmax */
        if (kv_end > ke)
            kv_end = ke;
        for (; k0 + VL <= kv_end; k0 += VL) {
            const double *xk = x + k0; /* term c reads xk[c - 1] */
            VD a0 = V_ZERO(), a1 = V_ZERO(), a2 = V_ZERO(), a3 = V_ZERO();
            VD a4 = V_ZERO(), a5 = V_ZERO(), a6 = V_ZERO(), a7 = V_ZERO();
            int64_t c = wmax;
#define TERM() VD p = V_MUL(V_LOAD(xk + c - 1), V_BCAST(wt + c))
            for (; c > w[1]; c--) { TERM(); a0 = V_ADD(a0, p); }
            for (; c > w[2]; c--) { TERM(); a0 = V_ADD(a0, p); a1 = V_ADD(a1, p); }
            for (; c > w[3]; c--) {
                TERM(); a0 = V_ADD(a0, p); a1 = V_ADD(a1, p); a2 = V_ADD(a2, p);
            }
            for (; c > w[4]; c--) {
                TERM(); a0 = V_ADD(a0, p); a1 = V_ADD(a1, p); a2 = V_ADD(a2, p);
                a3 = V_ADD(a3, p);
            }
            for (; c > w[5]; c--) {
                TERM(); a0 = V_ADD(a0, p); a1 = V_ADD(a1, p); a2 = V_ADD(a2, p);
                a3 = V_ADD(a3, p); a4 = V_ADD(a4, p);
            }
            for (; c > w[6]; c--) {
                TERM(); a0 = V_ADD(a0, p); a1 = V_ADD(a1, p); a2 = V_ADD(a2, p);
                a3 = V_ADD(a3, p); a4 = V_ADD(a4, p); a5 = V_ADD(a5, p);
            }
            for (; c > w[7]; c--) {
                TERM(); a0 = V_ADD(a0, p); a1 = V_ADD(a1, p); a2 = V_ADD(a2, p);
                a3 = V_ADD(a3, p); a4 = V_ADD(a4, p); a5 = V_ADD(a5, p);
                a6 = V_ADD(a6, p);
            }
            for (; c > 0; c--) {
                TERM(); a0 = V_ADD(a0, p); a1 = V_ADD(a1, p); a2 = V_ADD(a2, p);
                a3 = V_ADD(a3, p); a4 = V_ADD(a4, p); a5 = V_ADD(a5, p);
                a6 = V_ADD(a6, p); a7 = V_ADD(a7, p);
            }
#undef TERM
            /* Output i = k0 + w - 1; duplicate windows (group padding)
             * store the same values to the same place. */
            V_STORE(out[0] + k0 + (size_t)w[0] - 1, V_DIV(a0, vden[0]));
            V_STORE(out[1] + k0 + (size_t)w[1] - 1, V_DIV(a1, vden[1]));
            V_STORE(out[2] + k0 + (size_t)w[2] - 1, V_DIV(a2, vden[2]));
            V_STORE(out[3] + k0 + (size_t)w[3] - 1, V_DIV(a3, vden[3]));
            V_STORE(out[4] + k0 + (size_t)w[4] - 1, V_DIV(a4, vden[4]));
            V_STORE(out[5] + k0 + (size_t)w[5] - 1, V_DIV(a5, vden[5]));
            V_STORE(out[6] + k0 + (size_t)w[6] - 1, V_DIV(a6, vden[6]));
            V_STORE(out[7] + k0 + (size_t)w[7] - 1, V_DIV(a7, vden[7]));
        }
    }

    /* Edges: the remaining anchors of this range, window by window. */
    for (int g = 0; g < TW_GROUP; g++) {
        if ((size_t)w[g] > n)
            continue;
        size_t kend = n - (size_t)w[g] + 1;
        if (kend > ke)
            kend = ke;
        for (size_t k = k0; k < kend; k++) {
            size_t i = k + (size_t)w[g] - 1;
            out[g][i] = wma_at(x, i, w[g], den[g]);
        }
    }
}

/* ---- one window over one series ---------------------------------------
 *
 * Outputs [ib, ie) of WMA(x, w) (NaN below w - 1); x holds every input
 * from 0.  Lanes over output bars, four or eight independent vectors in
 * flight so that the adder's latency is hidden (each vector is its own
 * chain of w adds). */
static void SFX(tw__wma_range)(const double *x, int64_t w, double *out,
                               const double *wt, size_t ib, size_t ie)
{
    const size_t ws = (size_t)w;
    size_t i = ib;
    for (; i < ie && i + 1 < ws; i++)
        out[i] = NAN;
    if (i >= ie)
        return;
    const double den = wma_den(w);
    const VD vden = V_SET1(den);
    const double *wj = wt + w; /* wj[-j] = w - j */

    /* Blocks of VL outputs, skewed in time: at step t block r is at its
     * term j = t + r*VL, whose input x[i + r*VL - j] = x[i - t] is the same
     * vector for every block.  One load then feeds every block's multiply
     * (each with its own weight, broadcast from memory), where the plain
     * loop further down loads a vector per term; on cores where vector
     * loads are the bottleneck (line-crossing unaligned loads) that is
     * what limits this pass.  Each block still adds its own terms in its
     * own j order.  Block r is inside its window for t in [-r*VL, w -
     * r*VL), so the steps split into ramps in (blocks p..B-1), the body
     * (all blocks) and ramps out (blocks 0..q-1); SK_STEP's constant block
     * range lets the compiler drop the inactive blocks of each ramp.  The
     * ramps need w >= B*VL. */
#define XV V_LOAD(xi - t)
#define WV(r) V_BCAST(wj - t - (r) * L)
#define SK_ADD(r, lo, hi)                                   \
    if ((r) >= (lo) && (r) <= (hi))                         \
        a##r = V_ADD(a##r, V_MUL(v, WV(r)))
#define SK_STEP(lo, hi)                                     \
    do {                                                    \
        VD v = XV;                                          \
        SK_ADD(0, lo, hi); SK_ADD(1, lo, hi); SK_ADD(2, lo, hi); SK_ADD(3, lo, hi); \
        SK_ADD(4, lo, hi); SK_ADD(5, lo, hi); SK_ADD(6, lo, hi); SK_ADD(7, lo, hi); \
    } while (0)
#define SK_RUN(lo, hi, until) for (; t < (until); t++) SK_STEP(lo, hi)
    const ptrdiff_t L = VL, W = (ptrdiff_t)ws;
    if (ws >= 8 * VL) {
        for (; i + 8 * VL <= ie; i += 8 * VL) {
            VD a0 = V_ZERO(), a1 = V_ZERO(), a2 = V_ZERO(), a3 = V_ZERO();
            VD a4 = V_ZERO(), a5 = V_ZERO(), a6 = V_ZERO(), a7 = V_ZERO();
            const double *xi = x + i;
            ptrdiff_t t = -7 * L;
            SK_RUN(7, 7, -6 * L);
            SK_RUN(6, 7, -5 * L);
            SK_RUN(5, 7, -4 * L);
            SK_RUN(4, 7, -3 * L);
            SK_RUN(3, 7, -2 * L);
            SK_RUN(2, 7, -L);
            SK_RUN(1, 7, 0);
            SK_RUN(0, 7, W - 7 * L);
            SK_RUN(0, 6, W - 6 * L);
            SK_RUN(0, 5, W - 5 * L);
            SK_RUN(0, 4, W - 4 * L);
            SK_RUN(0, 3, W - 3 * L);
            SK_RUN(0, 2, W - 2 * L);
            SK_RUN(0, 1, W - L);
            SK_RUN(0, 0, W);
            V_STORE(out + i, V_DIV(a0, vden));
            V_STORE(out + i + VL, V_DIV(a1, vden));
            V_STORE(out + i + 2 * VL, V_DIV(a2, vden));
            V_STORE(out + i + 3 * VL, V_DIV(a3, vden));
            V_STORE(out + i + 4 * VL, V_DIV(a4, vden));
            V_STORE(out + i + 5 * VL, V_DIV(a5, vden));
            V_STORE(out + i + 6 * VL, V_DIV(a6, vden));
            V_STORE(out + i + 7 * VL, V_DIV(a7, vden));
        }
    }
    if (ws >= 4 * VL) {
        for (; i + 4 * VL <= ie; i += 4 * VL) {
            /* The same with four blocks (a4..a7 stay unused). */
            VD a0 = V_ZERO(), a1 = V_ZERO(), a2 = V_ZERO(), a3 = V_ZERO();
            VD a4 = V_ZERO(), a5 = V_ZERO(), a6 = V_ZERO(), a7 = V_ZERO();
            const double *xi = x + i;
            ptrdiff_t t = -3 * L;
            SK_RUN(3, 3, -2 * L);
            SK_RUN(2, 3, -L);
            SK_RUN(1, 3, 0);
            SK_RUN(0, 3, W - 3 * L);
            SK_RUN(0, 2, W - 2 * L);
            SK_RUN(0, 1, W - L);
            SK_RUN(0, 0, W);
            (void)a4, (void)a5, (void)a6, (void)a7;
            V_STORE(out + i, V_DIV(a0, vden));
            V_STORE(out + i + VL, V_DIV(a1, vden));
            V_STORE(out + i + 2 * VL, V_DIV(a2, vden));
            V_STORE(out + i + 3 * VL, V_DIV(a3, vden));
        }
    }
#undef SK_RUN
#undef SK_STEP
#undef SK_ADD
#undef XV
#undef WV
    for (; i + 4 * VL <= ie; i += 4 * VL) {
        VD a0 = V_ZERO(), a1 = V_ZERO(), a2 = V_ZERO(), a3 = V_ZERO();
        const double *xi = x + i;
        for (size_t j = 0; j < ws; j++) {
            VD c = V_BCAST(wj - j);
            const double *p = xi - j;
            a0 = V_ADD(a0, V_MUL(V_LOAD(p), c));
            a1 = V_ADD(a1, V_MUL(V_LOAD(p + VL), c));
            a2 = V_ADD(a2, V_MUL(V_LOAD(p + 2 * VL), c));
            a3 = V_ADD(a3, V_MUL(V_LOAD(p + 3 * VL), c));
        }
        V_STORE(out + i, V_DIV(a0, vden));
        V_STORE(out + i + VL, V_DIV(a1, vden));
        V_STORE(out + i + 2 * VL, V_DIV(a2, vden));
        V_STORE(out + i + 3 * VL, V_DIV(a3, vden));
    }
    for (; i + VL <= ie; i += VL) {
        VD a0 = V_ZERO();
        for (size_t j = 0; j < ws; j++)
            a0 = V_ADD(a0, V_MUL(V_LOAD(x + i - j), V_BCAST(wj - j)));
        V_STORE(out + i, V_DIV(a0, vden));
    }
    for (; i < ie; i++)
        out[i] = wma_at(x, i, w, den);
}

static void SFX(tw__wma_one)(const double *x, size_t n, int64_t w, double *out,
                             const double *wt)
{
    SFX(tw__wma_range)(x, w, out, wt, 0, n);
}

/* d[i] = 2.0*a[i] - b[i] and e[i] = (3.0*p3[i] - p2[i]) - p1[i], exactly as
 * kernel.md writes them. */
static void SFX(tw__combine_d)(const double *a, const double *b, size_t n, double *d)
{
    const VD two = V_SET1(2.0);
    size_t i = 0;
    for (; i + VL <= n; i += VL)
        V_STORE(d + i, V_SUB(V_MUL(two, V_LOAD(a + i)), V_LOAD(b + i)));
    for (; i < n; i++)
        d[i] = 2.0 * a[i] - b[i];
}

static void SFX(tw__combine_e)(const double *p3, const double *p2, const double *p1,
                        size_t n, double *e)
{
    const VD three = V_SET1(3.0);
    size_t i = 0;
    for (; i + VL <= n; i += VL)
        V_STORE(e + i, V_SUB(V_SUB(V_MUL(three, V_LOAD(p3 + i)), V_LOAD(p2 + i)),
                             V_LOAD(p1 + i)));
    for (; i < n; i++)
        e[i] = (3.0 * p3[i] - p2[i]) - p1[i];
}

/* ---- stop-and-reverse over sign bits -----------------------------------
 *
 * The reference loop only acts on bars where v = hma3 - hma has the sign
 * opposite to the position (or on the first bar with any sign).  So v's
 * signs are turned into two bit words per 64 bars and the loop jumps from
 * one acting bar to the next with count-trailing-zeros; each trade is
 * booked with the reference's own expressions, in bar order. */
static inline void sar_word(const double *close, size_t base, uint64_t pbits,
                            uint64_t nbits, double fee, struct tw__sar_state *st)
{
    for (;;) {
        uint64_t m = st->pos == 0 ? (pbits | nbits) : st->pos == 1 ? nbits : pbits;
        if (!m)
            return;
        unsigned b = (unsigned)__builtin_ctzll(m);
        size_t i = base + b;
        int s = (pbits >> b) & 1 ? 1 : -1;
        if (st->pos != 0) {
            double r = st->pos == 1 ? (close[i] / st->entry - 1.0) * 100.0
                                    : (1.0 - close[i] / st->entry) * 100.0;
            st->pnl = st->pnl + (r - fee);
            st->trades += 1;
        }
        st->pos = s;
        st->entry = close[i];
        /* Drop bars up to and including b (two shifts: b may be 63). */
        uint64_t keep = (~0ull << b) << 1;
        pbits &= keep;
        nbits &= keep;
    }
}

/* Bars [ib, ie) of the loop, state carried in st (zeroed before bar 0). */
static void SFX(tw__sar_range)(const double *close, const double *hma,
                               const double *hma3, size_t ib, size_t ie,
                               double fee, struct tw__sar_state *st)
{
    size_t base = ib;
    for (; base + 64 <= ie; base += 64) {
        uint64_t pb = 0, nb = 0;
        for (unsigned l = 0; l < 64; l += VL) {
            VD v = V_SUB(V_LOAD(hma3 + base + l), V_LOAD(hma + base + l));
            pb |= (uint64_t)V_GT0(v) << l;
            nb |= (uint64_t)V_LT0(v) << l;
        }
        if (pb | nb)
            sar_word(close, base, pb, nb, fee, st);
    }
    uint64_t pb = 0, nb = 0;
    for (size_t i = base; i < ie; i++) {
        double v = hma3[i] - hma[i];
        pb |= (uint64_t)(v > 0.0) << (i - base);
        nb |= (uint64_t)(v < 0.0) << (i - base);
    }
    sar_word(close, base, pb, nb, fee, st);
}

static void SFX(tw__sar)(const double *close, const double *hma, const double *hma3,
                         size_t n, double fee, double *pnl_out, int64_t *trades_out)
{
    struct tw__sar_state st = {0, 0.0, 0.0, 0};
    SFX(tw__sar_range)(close, hma, hma3, 0, n, fee, &st);
    *pnl_out = st.pnl;
    *trades_out = st.trades;
}

const struct tw__exact_ops SFX(tw__exact_ops) = {
    .wma_group = SFX(tw__wma_group),
    .wma_one = SFX(tw__wma_one),
    .wma_range = SFX(tw__wma_range),
    .combine_d = SFX(tw__combine_d),
    .combine_e = SFX(tw__combine_e),
    .sar = SFX(tw__sar),
    .sar_range = SFX(tw__sar_range),
};
