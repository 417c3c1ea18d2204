/* The synthetic generator (kernel.md "Data"): deterministic for a seed,
 * and its first values equal an independent computation written here and
 * known values of splitmix64 / xoshiro256** computed outside C. */
#include "kernel/data_internal.h"
#include "kt.h"

/* An independent xoshiro256** (Blackman & Vigna), as a struct. */
struct xo {
    uint64_t a, b, c, d;
};

static uint64_t rl(uint64_t x, unsigned k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xo_next(struct xo *s)
{
    const uint64_t out = rl(s->b * 5, 7) * 9, t = s->b << 17;
    s->c ^= s->a;
    s->d ^= s->b;
    s->b ^= s->c;
    s->a ^= s->d;
    s->c ^= t;
    s->d = rl(s->d, 45);
    return out;
}

static uint64_t sm_next(uint64_t *x)
{
    *x += 0x9E3779B97F4A7C15ull;
    uint64_t z = *x;
    z ^= z >> 30;
    z *= 0xBF58476D1CE4E5B9ull;
    z ^= z >> 27;
    z *= 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int main(void)
{
    /* splitmix64 from 0: the published first output. */
    uint64_t x = 0;
    CHECK(tw__splitmix64(&x) == 0xe220a8397b1dcdafull);

    /* xoshiro256** seeded with 42: the first outputs, computed with
     * Python's integers. */
    uint64_t st[4];
    tw__xoshiro_seed(st, 42);
    static const uint64_t want42[4] = {0x15780b2e0c2ec716ull, 0x6104d9866d113a7eull,
                                       0xae17533239e499a1ull, 0xecb8ad4703b360a1ull};
    for (int i = 0; i < 4; i++)
        CHECK(tw__xoshiro_next(st) == want42[i]);

    /* The closes against the independent generator here. */
    enum { N = 1001 };
    static double a[N], b[N], c[N];
    tw_gen_closes(a, N, 42, 0.0008);
    uint64_t sx = 42;
    struct xo s = {sm_next(&sx), sm_next(&sx), sm_next(&sx), sm_next(&sx)};
    double cum = 0.0;
    for (int i = 0; i < N; i += 2) {
        double u1 = 1.0 - (double)(xo_next(&s) >> 11) / 9007199254740992.0;
        double u2 = (double)(xo_next(&s) >> 11) / 9007199254740992.0;
        double r = sqrt(-2.0 * log(u1));
        double t = 6.283185307179586 * u2;
        cum += 0.0008 * (r * cos(t));
        CHECKF(a[i] == 100.0 * exp(cum), "close[%d] %.17g", i, a[i]);
        if (i + 1 < N) {
            cum += 0.0008 * (r * sin(t));
            CHECKF(a[i + 1] == 100.0 * exp(cum), "close[%d] %.17g", i + 1, a[i + 1]);
        }
    }
    /* The first two, as Python's math module computes them. */
    CHECK(fabs(a[0] - 99.97574189757928) < 1e-12);
    CHECK(fabs(a[1] - 99.99881590094256) < 1e-12);

    /* Same seed, same bytes; another seed or sigma, other bytes; a prefix
     * of a longer run is the shorter run (odd n drops the last z1). */
    tw_gen_closes(b, N, 42, 0.0008);
    CHECK(!memcmp(a, b, sizeof(a)));
    tw_gen_closes(c, N - 1, 42, 0.0008);
    CHECK(!memcmp(a, c, (N - 1) * sizeof(double)));
    tw_gen_closes(b, N, 43, 0.0008);
    CHECK(memcmp(a, b, sizeof(a)) != 0);
    tw_gen_closes(b, N, 42, 0.002);
    CHECK(memcmp(a, b, sizeof(a)) != 0);
    for (int i = 0; i < N; i++)
        CHECK(a[i] > 0.0 && isfinite(a[i]));
    /* sigma 0 gives exactly 100. */
    tw_gen_closes(b, 5, 1, 0.0);
    for (int i = 0; i < 5; i++)
        CHECK(b[i] == 100.0);
    return tw_check_done("kernel_gen");
}
