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
 *   V_ADD_POS(a, p, w)  a + p in the lanes where w > 0.0, a elsewhere, and
 *   V_ADD_IFGE(a, p, w, c)  where w >= c (a sum of the reference's never is
 *                       -0.0, so adding +0.0 in a masked lane is the same as
 *                       not adding)
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kernel/kernel_internal.h"

/* Scalar WMA of one output, in the reference order.  Used for the edges
 * of every vector loop so that edges and body agree bit for bit. */
static inline double wma_at(const double *x, ptrdiff_t i, int64_t w, double den)
{
    double num = 0.0;
    for (int64_t j = 0; j < w; j++)
        num += x[i - (ptrdiff_t)j] * (double)(w - j);
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
 * multiply then feed TW_GROUP adds, which keeps the loop on the adders.
 *
 * A block of output bars [t0, t1) needs, for window w, the anchors
 * [t0 - w + 1, t1 - w + 1): the group walks their union, so a window
 * smaller than the largest produces a few outputs outside the block too
 * (the group's spread, which the driver keeps small against the block);
 * those are not stored.  Output i of window g goes to out[g][i - t0];
 * out[g] NULL marks a padding slot (its window must be 1).  x is indexed
 * by bar and must be readable on [t0 - w[0] + 1, avail): the vector loop
 * reads up to avail - 1, past t1 when avail allows (the windows that
 * finish later need it); outputs whose inputs end beyond avail come from
 * the scalar edge loop instead. */
static void SFX(tw__wma_group_block)(const double *x, ptrdiff_t avail, const int64_t *w,
                                     double *const *out, const double *wt, ptrdiff_t t0,
                                     ptrdiff_t t1)
{
    TW_STATIC_ASSERT(TW_GROUP == 8, "the phase loops below are written for 8");
    const int64_t wmax = w[0];
    int64_t wmin = wmax;
    double den[TW_GROUP];
    VD vden[TW_GROUP];
    for (int g = 0; g < TW_GROUP; g++) {
        TW_ASSERT(g == 0 || w[g] <= w[g - 1]);
        TW_ASSERT(out[g] || w[g] == 1);
        if (out[g] && w[g] < wmin)
            wmin = w[g];
        den[g] = wma_den(w[g]);
        vden[g] = V_SET1(den[g]);
    }
    const ptrdiff_t nb = t1 - t0;
    ptrdiff_t k0 = t0 - (ptrdiff_t)wmax + 1;
    ptrdiff_t kv_end = t1 - (ptrdiff_t)wmin + 1;           /* anchors any output needs */
    if (kv_end > avail - (ptrdiff_t)wmax + 1)
        kv_end = avail - (ptrdiff_t)wmax + 1;              /* inputs that exist */
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
        /* Output i = k0 + w - 1 + lane, kept when inside the block (the
         * group's first and last vectors straddle its edges). */
#define GSTORE(g, a)                                                            \
        if (out[g]) {                                                           \
            ptrdiff_t o_ = k0 + (ptrdiff_t)w[g] - 1 - t0;                       \
            if (o_ >= 0 && o_ + VL <= nb) {                                     \
                V_STORE(out[g] + o_, V_DIV(a, vden[g]));                        \
            } else if (o_ + VL > 0 && o_ < nb) {                                \
                double tmp_[VL];                                                \
                V_STORE(tmp_, V_DIV(a, vden[g]));                               \
                for (ptrdiff_t l_ = 0; l_ < VL; l_++)                           \
                    if (o_ + l_ >= 0 && o_ + l_ < nb)                           \
                        out[g][o_ + l_] = tmp_[l_];                             \
            }                                                                   \
        }
        GSTORE(0, a0) GSTORE(1, a1) GSTORE(2, a2) GSTORE(3, a3)
        GSTORE(4, a4) GSTORE(5, a5) GSTORE(6, a6) GSTORE(7, a7)
#undef GSTORE
    }

    /* Edges: the block's outputs whose anchors the vector loop did not
     * reach, window by window. */
    for (int g = 0; g < TW_GROUP; g++) {
        if (!out[g])
            continue;
        ptrdiff_t i = k0 + (ptrdiff_t)w[g] - 1;
        if (i < t0)
            i = t0;
        for (; i < t1; i++)
            out[g][i - t0] = wma_at(x, i, w[g], den[g]);
    }
}

/* ---- one window over one series ---------------------------------------
 *
 * Outputs [ib, ie) of WMA(x, w) into out[i - ib] (NaN below w - 1); x is
 * indexed by bar and readable from max(ib - w + 1, 0).  Lanes over output
 * bars, four or eight independent vectors in flight so that the adder's
 * latency is hidden (each vector is its own chain of w adds). */
static void SFX(tw__wma_range)(const double *x, int64_t w, double *out_b,
                               const double *wt, ptrdiff_t ib, ptrdiff_t ie)
{
    const size_t ws = (size_t)w;
    ptrdiff_t i = ib;
    /* out(i): where output i goes. */
#define OUT(i) (out_b + ((i) - ib))
    for (; i < ie && i + 1 < (ptrdiff_t)ws; i++)
        *OUT(i) = NAN;
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
            V_STORE(OUT(i), V_DIV(a0, vden));
            V_STORE(OUT(i) + VL, V_DIV(a1, vden));
            V_STORE(OUT(i) + 2 * VL, V_DIV(a2, vden));
            V_STORE(OUT(i) + 3 * VL, V_DIV(a3, vden));
            V_STORE(OUT(i) + 4 * VL, V_DIV(a4, vden));
            V_STORE(OUT(i) + 5 * VL, V_DIV(a5, vden));
            V_STORE(OUT(i) + 6 * VL, V_DIV(a6, vden));
            V_STORE(OUT(i) + 7 * VL, V_DIV(a7, vden));
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
            V_STORE(OUT(i), V_DIV(a0, vden));
            V_STORE(OUT(i) + VL, V_DIV(a1, vden));
            V_STORE(OUT(i) + 2 * VL, V_DIV(a2, vden));
            V_STORE(OUT(i) + 3 * VL, V_DIV(a3, vden));
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
        for (ptrdiff_t j = 0; j < (ptrdiff_t)ws; j++) {
            VD c = V_BCAST(wj - j);
            const double *p = xi - j;
            a0 = V_ADD(a0, V_MUL(V_LOAD(p), c));
            a1 = V_ADD(a1, V_MUL(V_LOAD(p + VL), c));
            a2 = V_ADD(a2, V_MUL(V_LOAD(p + 2 * VL), c));
            a3 = V_ADD(a3, V_MUL(V_LOAD(p + 3 * VL), c));
        }
        V_STORE(OUT(i), V_DIV(a0, vden));
        V_STORE(OUT(i) + VL, V_DIV(a1, vden));
        V_STORE(OUT(i) + 2 * VL, V_DIV(a2, vden));
        V_STORE(OUT(i) + 3 * VL, V_DIV(a3, vden));
    }
    for (; i + VL <= ie; i += VL) {
        VD a0 = V_ZERO();
        for (ptrdiff_t j = 0; j < (ptrdiff_t)ws; j++)
            a0 = V_ADD(a0, V_MUL(V_LOAD(x + i - j), V_BCAST(wj - j)));
        V_STORE(OUT(i), V_DIV(a0, vden));
    }
    for (; i < ie; i++)
        *OUT(i) = wma_at(x, i, w, den);
#undef OUT
}

static void SFX(tw__wma_one)(const double *x, size_t n, int64_t w, double *out,
                             const double *wt)
{
    SFX(tw__wma_range)(x, w, out, wt, 0, (ptrdiff_t)n);
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
 * booked with the reference's own expressions, in bar order
 * (tw__sar_act). */
static inline void sar_word(const double *close, size_t base, uint64_t pbits,
                            uint64_t nbits, double fee, struct tw__sar_state *st,
                            int64_t bar0, const struct tw__trade_sink *sink, uint32_t combo)
{
    for (;;) {
        uint64_t m = st->pos == 0 ? (pbits | nbits) : st->pos == 1 ? nbits : pbits;
        if (!m)
            return;
        unsigned b = (unsigned)__builtin_ctzll(m);
        size_t i = base + b;
        tw__sar_act(st, (pbits >> b) & 1 ? 1 : -1, close[i], bar0 + (int64_t)i, fee, sink,
                    combo);
        /* Drop bars up to and including b (two shifts: b may be 63). */
        uint64_t keep = (~0ull << b) << 1;
        pbits &= keep;
        nbits &= keep;
    }
}

/* Bars [0, nb) of the loop, bar 0 being bar0 of the series; state carried
 * in st (zeroed before the series' first bar). */
static void SFX(tw__sar_range)(const double *close, const double *hma, const double *hma3,
                               size_t nb, double fee, struct tw__sar_state *st, int64_t bar0,
                               const struct tw__trade_sink *sink, uint32_t combo)
{
    size_t base = 0;
    for (; base + 64 <= nb; base += 64) {
        uint64_t pb = 0, nbits = 0;
        for (unsigned l = 0; l < 64; l += VL) {
            VD v = V_SUB(V_LOAD(hma3 + base + l), V_LOAD(hma + base + l));
            pb |= (uint64_t)V_GT0(v) << l;
            nbits |= (uint64_t)V_LT0(v) << l;
        }
        if (pb | nbits)
            sar_word(close, base, pb, nbits, fee, st, bar0, sink, combo);
    }
    uint64_t pb = 0, nbits = 0;
    for (size_t i = base; i < nb; i++) {
        double v = hma3[i] - hma[i];
        pb |= (uint64_t)(v > 0.0) << (i - base);
        nbits |= (uint64_t)(v < 0.0) << (i - base);
    }
    sar_word(close, base, pb, nbits, fee, st, bar0, sink, combo);
}

/* ---- one bar, lanes across close windows --------------------------------------
 *
 * The streaming kernel computes one output per window, so for the close
 * windows the lanes go across windows: every lane reads the same input,
 * broadcast from the close series itself (L1-resident, where per-lane
 * skewed copies as the rings of d and e below would be streamed from L2 on
 * every bar, and that bounds it more than the adds do).  Lane l of vector
 * k at step j adds
 * x_l[now - j] * (w_l - j) for j < w_l: its own terms in its own order, so
 * each output is the reference's.  The weights w_l - j are made, not
 * loaded: the lane windows plus -j, exact in doubles (a table of them per
 * vector would be streamed from L2 on every bar, and that is what bounded
 * this loop).  A set holds TW_NSET vectors whose windows are sorted,
 * largest first, across the whole set (wmin[k] >= wmax[k+1]), so at any
 * step every vector is either fully active, done, or the one in its tail,
 * where lanes whose window has ended (weight <= 0) are masked: their
 * product is dropped, not added, because x may be NaN there.  The steps
 * split into a staircase of loops over the active vectors, each with a
 * constant vector range the compiler unrolls: eight chains in flight for
 * most of the work. */
static void SFX(narrow_bset)(const struct tw__nset *s, const double *xb, const double *wt)
{
    const double *wn = s->win;
    VD a0 = V_ZERO(), a1 = V_ZERO(), a2 = V_ZERO(), a3 = V_ZERO();
    VD a4 = V_ZERO(), a5 = V_ZERO(), a6 = V_ZERO(), a7 = V_ZERO();
    int64_t j = 0;
#define NX(k) xv
#define NW(k) V_SUB(V_LOAD(wn + (k) * VL), jv)
#define NU(k, hi) if ((k) <= (hi)) a##k = V_ADD(a##k, V_MUL(NX(k), NW(k)))
#define NM(k, m)                                                                \
    if ((k) == (m)) {                                                           \
        VD w_ = NW(k);                                                          \
        a##k = V_ADD_POS(a##k, V_MUL(NX(k), w_), w_);                            \
    }
#define NSTEP(hi, m)                                                            \
    do {                                                                        \
        VD xv = V_BCAST(xb - j);                                                \
        VD jv = V_BCAST(wt + j); /* j, a load: no arithmetic */                 \
        NU(0, hi); NU(1, hi); NU(2, hi); NU(3, hi);                             \
        NU(4, hi); NU(5, hi); NU(6, hi); NU(7, hi);                             \
        NM(0, m); NM(1, m); NM(2, m); NM(3, m);                                 \
        NM(4, m); NM(5, m); NM(6, m); NM(7, m);                                 \
    } while (0)
    /* For v = 7 .. 0: vectors 0..v all active up to wmin[v], then v in its
     * tail up to wmax[v]. */
#define NSTAIR(v)                                                               \
    for (; j < s->wmin[v]; j++) NSTEP(v, -1);                                   \
    for (; j < s->wmax[v]; j++) NSTEP((v) - 1, v);
    NSTAIR(7) NSTAIR(6) NSTAIR(5) NSTAIR(4) NSTAIR(3) NSTAIR(2) NSTAIR(1) NSTAIR(0)
#undef NSTAIR
#undef NSTEP
#undef NM
#undef NU
#undef NW
#undef NX
    /* Padding vectors (wmax 0, only at the end of the last set) are not
     * divided: a division costs more than a step. */
#define NOUT(k)                                                                 \
    if ((k) == 0 || s->wmax[k] > 0)                                             \
        V_STORE(s->out + (k) * VL, V_DIV(a##k, V_LOAD(s->den + (k) * VL)));
    NOUT(0) NOUT(1) NOUT(2) NOUT(3) NOUT(4) NOUT(5) NOUT(6) NOUT(7)
#undef NOUT
}

/* Every close set, each lane reading xb[-j] (xb the newest close). */
static void SFX(tw__narrow_bcast)(const struct tw__nset *sets, size_t n_sets, const double *xb,
                                  const double *wt)
{
    for (size_t i = 0; i < n_sets; i++)
        SFX(narrow_bset)(sets + i, xb, wt);
}

/* ---- one bar, lanes across combos ------------------------------------------
 *
 * For d and e the lanes go across combos, each lane's inputs kept in its
 * set's ring skewed by its own window (struct tw__nset): at step c the
 * entry h + c holds every lane's input of weight c, so a step is one vector
 * load, one broadcast weight and one multiply and add per vector (lanes
 * over windows with per-lane weights would need an add to make each
 * weight, and the adders are what bounds this loop).  Lane l adds its
 * terms for c = w_l, w_l - 1, ..., 1, which is kernel.md's order j = 0, 1,
 * ..., w - 1, so each output is the reference's.  c runs down from the
 * set's largest window; a lane whose window is below c has not started and
 * is masked (its entry holds a later bar, or NaN), its product dropped,
 * not added.  Windows are sorted largest first across the set (wmin[k] >=
 * wmax[k + 1]), so at any step the active vectors are a prefix, all full
 * but the last, and the steps split into a staircase of loops with a
 * constant vector range each, which the compiler unrolls: up to eight
 * chains in flight. */
static void SFX(narrow_rset)(const struct tw__nset *s, size_t f, const double *wt)
{
    const ptrdiff_t ST = TW_NSET * VL; /* doubles per ring entry */
    const double *base = s->ring + f * (size_t)ST; /* entry f + c at base + c * ST */
    const double *wn = s->win;
    VD a0 = V_ZERO(), a1 = V_ZERO(), a2 = V_ZERO(), a3 = V_ZERO();
    VD a4 = V_ZERO(), a5 = V_ZERO(), a6 = V_ZERO(), a7 = V_ZERO();
    int64_t c = s->wmax[0];
#define NX(k) V_LOAD(base + c * ST + (k) * VL)
#define NU(k, hi) if ((k) <= (hi)) a##k = V_ADD(a##k, V_MUL(NX(k), cv))
#define NM(k, m)                                                                \
    if ((k) == (m))                                                             \
        a##k = V_ADD_IFGE(a##k, V_MUL(NX(k), cv), V_LOAD(wn + (k) * VL), cv);
#define NSTEP(hi, m)                                                            \
    do {                                                                        \
        VD cv = V_BCAST(wt + c); /* the weight c, a load */                     \
        NU(0, hi); NU(1, hi); NU(2, hi); NU(3, hi);                             \
        NU(4, hi); NU(5, hi); NU(6, hi); NU(7, hi);                             \
        NM(0, m); NM(1, m); NM(2, m); NM(3, m);                                 \
        NM(4, m); NM(5, m); NM(6, m); NM(7, m);                                 \
    } while (0)
    /* For v = 0 .. 7: vector v starts (its lanes join as c reaches their
     * windows) with 0..v-1 full, then 0..v are full down to the next
     * vector's largest window. */
#define NSTAIR(v, next)                                                         \
    for (; c > s->wmin[v]; c--) NSTEP((v) - 1, v);                              \
    for (; c > (next); c--) NSTEP(v, -1);
    NSTAIR(0, s->wmax[1]) NSTAIR(1, s->wmax[2]) NSTAIR(2, s->wmax[3]) NSTAIR(3, s->wmax[4])
    NSTAIR(4, s->wmax[5]) NSTAIR(5, s->wmax[6]) NSTAIR(6, s->wmax[7]) NSTAIR(7, 0)
#undef NSTAIR
#undef NSTEP
#undef NM
#undef NU
#undef NX
    /* Padding vectors (wmax 0, only at the end of the last set) are not
     * divided: a division costs more than a step. */
#define NOUT(k)                                                                 \
    if ((k) == 0 || s->wmax[k] > 0)                                             \
        V_STORE(s->out + (k) * VL, V_DIV(a##k, V_LOAD(s->den + (k) * VL)));
    NOUT(0) NOUT(1) NOUT(2) NOUT(3) NOUT(4) NOUT(5) NOUT(6) NOUT(7)
#undef NOUT
}

static void SFX(tw__narrow_ring)(const struct tw__nset *sets, size_t n_sets, size_t f,
                                 const double *wt)
{
    TW_STATIC_ASSERT(TW_NSET == 8, "the one-bar sets are written for 8 vectors");
    for (size_t i = 0; i < n_sets; i++)
        SFX(narrow_rset)(sets + i, f, wt);
}

const struct tw__exact_ops SFX(tw__exact_ops) = {
    .vl = VL,
    .wma_group_block = SFX(tw__wma_group_block),
    .wma_one = SFX(tw__wma_one),
    .wma_range = SFX(tw__wma_range),
    .combine_d = SFX(tw__combine_d),
    .combine_e = SFX(tw__combine_e),
    .sar_range = SFX(tw__sar_range),
    .narrow_bcast = SFX(tw__narrow_bcast),
    .narrow_ring = SFX(tw__narrow_ring),
};
