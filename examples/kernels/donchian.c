/* donchian: a channel breakout on closes, written as a user writes a
 * kernel: one file, <tickwire/kernel_abi.h> and libc only.
 *
 *     cc -O2 -shared -fPIC $(pkg-config --cflags tickwire) donchian.c -o libdonchian.so
 *     tickwire kernels ./libdonchian.so
 *     tickwire sweep --kernel ./libdonchian.so --grid grid.csv    (a column n)
 *
 * Target +1 when the close is above the highest of the previous n closes,
 * -1 when below the lowest, else hold.  A gap (NaN) holds and does not
 * enter the channel; until n closes have been seen the target holds (0).
 *
 * The state is flat: a header and a ring of the last n closes, no
 * pointers (the host may copy it as a snapshot).  The channel's high and
 * low are kept as they go and rescanned from the ring only when the close
 * leaving the channel was one of them, so a bar costs O(1) on average. */
#include <math.h>
#include <stddef.h>

#include <tickwire/kernel_abi.h>

struct donchian {
    long long n;    /* the channel's length */
    long long seen; /* closes seen (gaps not counted) */
    double hi, lo;  /* highest and lowest of the last min(seen, n) closes */
    int target;
    int pad;
    double ring[];  /* [n]: close number s at s % n */
};

static size_t donchian_state_bytes(const double *p)
{
    return sizeof(struct donchian) + (size_t)p[0] * sizeof(double);
}

static int donchian_init(void *state, const double *p)
{
    struct donchian *d = state;
    d->n = (long long)p[0];
    d->seen = 0;
    d->hi = 0.0;
    d->lo = 0.0;
    d->target = 0;
    d->pad = 0;
    return d->n >= 1 ? 0 : -22; /* -EINVAL */
}

static int donchian_step(void *state, double close)
{
    struct donchian *d = state;
    if (isnan(close))
        return d->target;
    if (d->seen >= d->n) {
        if (close > d->hi)
            d->target = 1;
        else if (close < d->lo)
            d->target = -1;
    }
    long long slot = d->seen % d->n;
    if (d->seen < d->n) {
        d->ring[slot] = close;
        if (d->seen == 0 || close > d->hi)
            d->hi = close;
        if (d->seen == 0 || close < d->lo)
            d->lo = close;
    } else {
        double old = d->ring[slot];
        d->ring[slot] = close;
        if (old == d->hi || old == d->lo) {
            double hi = d->ring[0], lo = d->ring[0];
            for (long long i = 1; i < d->n; i++) {
                if (d->ring[i] > hi)
                    hi = d->ring[i];
                if (d->ring[i] < lo)
                    lo = d->ring[i];
            }
            d->hi = hi;
            d->lo = lo;
        } else {
            if (close > d->hi)
                d->hi = close;
            if (close < d->lo)
                d->lo = close;
        }
    }
    d->seen++;
    return d->target;
}

static const tw_kparam donchian_params[] = {
    {.name = "n", .lo = 1, .hi = 100000, .integer = 1, .dflt = 20},
};

static const tw_kernel_def donchian_def = {
    .abi = TW_KERNEL_ABI,
    .name = "donchian",
    .doc = "channel breakout: long above the highest of the previous n closes, short below "
           "the lowest",
    .n_params = 1,
    .params = donchian_params,
    .state_bytes = donchian_state_bytes,
    .init = donchian_init,
    .step = donchian_step,
    .sweep = NULL,
    .default_grid = NULL,
};

const tw_kernel_def *tw_kernel_entry(void) { return &donchian_def; }
