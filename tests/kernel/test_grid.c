/* The default grid is kernel.md's: L_k = floor(6 + k * 194/79), first combo
 * (3, 6, 2, 1, 2, 3), L_79 = 200; and tw_combo_from_length's rounding is
 * Python's round (half to even). */
#include "kernel/kernel_internal.h"
#include "kt.h"

/* The spec's rules written out independently. */
static int64_t py_round_div(int64_t p, int64_t d)
{
    /* round(p / d) half to even, by exact integer comparison. */
    int64_t lo = p / d, rem2 = 2 * (p - lo * d);
    if (rem2 > d)
        return lo + 1;
    if (rem2 < d)
        return lo;
    return lo % 2 == 0 ? lo : lo + 1;
}

static void spec_combo(int64_t L, int64_t c[6])
{
    int64_t s = 0;
    while ((s + 1) * (s + 1) <= L)
        s++;
    int64_t p = L / 2 > 1 ? L / 2 : 1;
    c[0] = L / 2 > 1 ? L / 2 : 1;
    c[1] = L;
    c[2] = s > 1 ? s : 1;
    c[3] = py_round_div(p, 3) > 1 ? py_round_div(p, 3) : 1;
    c[4] = py_round_div(p, 2) > 1 ? py_round_div(p, 2) : 1;
    c[5] = p;
}

int main(void)
{
    int64_t g[TW_GRID_DEFAULT_COMBOS * TW_COMBO_WINDOWS + 6];
    g[TW_GRID_DEFAULT_COMBOS * TW_COMBO_WINDOWS] = -99; /* nothing past 80 */
    CHECK(tw_grid_default(g) == 80);
    CHECK(g[TW_GRID_DEFAULT_COMBOS * TW_COMBO_WINDOWS] == -99);
    static const int64_t first[6] = {3, 6, 2, 1, 2, 3};
    CHECK(!memcmp(g, first, sizeof(first)));
    static const int64_t last[6] = {100, 200, 14, 33, 50, 100};
    CHECK(!memcmp(g + 79 * 6, last, sizeof(last)));
    /* numpy's linspace(6, 200, 80).astype(int), printed by numpy. */
    static const int64_t lens[80] = {
        6,   8,   10,  13,  15,  18,  20,  23,  25,  28,  30,  33,  35,  37,  40,  42,
        45,  47,  50,  52,  55,  57,  60,  62,  64,  67,  69,  72,  74,  77,  79,  82,
        84,  87,  89,  91,  94,  96,  99,  101, 104, 106, 109, 111, 114, 116, 118, 121,
        123, 126, 128, 131, 133, 136, 138, 141, 143, 145, 148, 150, 153, 155, 158, 160,
        163, 165, 168, 170, 172, 175, 177, 180, 182, 185, 187, 190, 192, 195, 197, 200};
    for (int k = 0; k < 80; k++) {
        int64_t c[6];
        spec_combo(lens[k], c);
        CHECKF(!memcmp(g + k * 6, c, sizeof(c)), "combo %d (L=%lld)", k, (long long)lens[k]);
    }
    /* Ties: p = 5 -> round(2.5) = 2; p = 7 -> round(3.5) = 4; L = 1 -> all 1. */
    int64_t c[6];
    tw_combo_from_length(10, c);
    CHECK(c[4] == 2 && c[3] == 2);
    tw_combo_from_length(14, c);
    CHECK(c[4] == 4 && c[3] == 2);
    tw_combo_from_length(1, c);
    for (int j = 0; j < 6; j++)
        CHECK(c[j] == 1);
    for (int64_t L = 1; L <= 5000; L++) {
        int64_t want[6];
        spec_combo(L, want);
        tw_combo_from_length(L, c);
        CHECKF(!memcmp(c, want, sizeof(c)), "L=%lld", (long long)L);
    }
    return tw_check_done("kernel_grid");
}
