#include <math.h>

#include "kernel/kernel_internal.h"

static int64_t isqrt64(int64_t v)
{
    int64_t r = (int64_t)sqrt((double)v);
    while (r * r > v)
        r--;
    while ((r + 1) * (r + 1) <= v)
        r++;
    return r;
}

/* round(p / d) with ties to even, as Python's round() on p / d. */
static int64_t round_half_even_div(int64_t p, int64_t d)
{
    int64_t q = p / d, r = p % d;
    if (2 * r > d || (2 * r == d && (q & 1)))
        q++;
    return q;
}

static int64_t max1(int64_t v) { return v < 1 ? 1 : v; }

void tw_combo_from_length(int64_t L, int64_t c[TW_COMBO_WINDOWS])
{
    int64_t p = max1(L / 2);
    c[TW_H_HALF] = max1(L / 2);
    c[TW_H_FULL] = L;
    c[TW_H_SQRT] = max1(isqrt64(L));
    c[TW_T_THIRD] = max1(round_half_even_div(p, 3));
    c[TW_T_HALF] = max1(round_half_even_div(p, 2));
    c[TW_T_FULL] = p;
}

size_t tw_grid_default(int64_t *combos)
{
    for (int k = 0; k < TW_GRID_DEFAULT_COMBOS; k++) {
        int64_t L = (int64_t)floor(6.0 + (double)k * (194.0 / 79.0));
        tw_combo_from_length(L, combos + (size_t)k * TW_COMBO_WINDOWS);
    }
    return TW_GRID_DEFAULT_COMBOS;
}
