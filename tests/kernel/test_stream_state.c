/* The streaming kernel's state as bytes (tw_stream_state_save / _load).
 *
 * A stream fed a gapped series (bar by bar and in random chunks: the
 * one-bar and the block kernel both) is saved at many points, loaded into
 * a fresh stream of every ISA this CPU has (not only its own), and both go
 * on: every combo's position, entry, pnl and trades after every later bar
 * equal an uninterrupted stream's, bit for bit, and a loaded stream saves
 * to the bytes it was loaded from.  Refused, with the stream unchanged:
 * other combos, another fee, a wrong size, a position or ring position
 * out of range. */
#include <errno.h>

#include "kernel/kernel_internal.h"
#include "kt.h"

#define N 3000
#define K 7

static const int64_t combos[K * 6] = {
    8, 16, 4, 10, 15, 30,   2, 5, 2, 3, 4, 9,     20, 40, 6, 13, 20, 40,  1, 1, 1, 1, 1, 1,
    97, 3, 11, 5, 40, 77,   300, 30, 17, 9, 2, 130, 4, 4, 4, 4, 4, 4,
};

static tw_stream *mk(tw_isa isa, const int64_t *c, double fee)
{
    size_t mem = tw_stream_memsize(c, K);
    tw_stream *st = malloc(mem);
    tw_error err = {0};
    CHECKF(tw__stream_init_isa(st, mem, c, K, fee, isa, &err) == 0, "%s", err.msg);
    return st;
}

/* Feeds x[from, to) in random chunks (seeded by rs). */
static void feed(tw_stream *st, const double *x, size_t from, size_t to, uint64_t *rs)
{
    uint32_t changed[K];
    for (size_t i = from; i < to;) {
        size_t m = kt_rand(rs) % 3 ? 1 : 1 + (size_t)(kt_rand(rs) % 400);
        if (m > to - i)
            m = to - i;
        if (m == 1) {
            tw_stream_update(st, x[i], changed);
        } else {
            tw_error err = {0};
            CHECK(tw_stream_update_bars(st, x + i, m, NULL, &err) == 0);
        }
        i += m;
    }
}

static int same_state(const tw_stream *a, const tw_stream *b)
{
    for (size_t k = 0; k < K; k++) {
        tw_combo_state x, y;
        tw_stream_get(a, k, &x);
        tw_stream_get(b, k, &y);
        if (x.position != y.position || x.entry_bar != y.entry_bar || x.trades != y.trades ||
            !kt_same(x.entry_price, y.entry_price) || !kt_same(x.pnl, y.pnl))
            return 0;
    }
    return tw_stream_bars(a) == tw_stream_bars(b);
}

int main(void)
{
    static double x[N];
    uint64_t rs = 20261202;
    kt_series(&rs, x, N, 1);
    tw_isa isas[3];
    int n_isa = 0;
    for (int i = TW_ISA_SCALAR; i <= TW_ISA_AVX512; i++)
        if (tw_isa_supported((tw_isa)i))
            isas[n_isa++] = (tw_isa)i;
    printf("ISAs: %d\n", n_isa);
    size_t points = 0, pairs = 0;
    for (int from = 0; from < n_isa; from++)
        for (size_t at = 0; at < N; at += 1 + at / 3 + (size_t)(kt_rand(&rs) % 97)) {
            uint64_t r1 = at * 7 + 1;
            tw_stream *a = mk(isas[from], combos, TW_FEE_DEFAULT);
            feed(a, x, 0, at, &r1);
            size_t bytes = tw_stream_state_bytes(a);
            uint8_t *buf = malloc(bytes), *back = malloc(bytes);
            CHECK(tw_stream_state_save(a, buf, bytes - 1) == 0);
            CHECK(tw_stream_state_save(a, buf, bytes) == bytes);
            points++;
            for (int to = 0; to < n_isa; to++) {
                tw_stream *b = mk(isas[to], combos, TW_FEE_DEFAULT);
                tw_error err = {0};
                CHECKF(tw_stream_state_load(b, buf, bytes, &err) == 0, "%s", err.msg);
                CHECK(same_state(a, b));
                CHECK(tw_stream_state_save(b, back, bytes) == bytes &&
                      memcmp(back, buf, bytes) == 0);
                /* Both go on, fed the same way (a reference copy of a). */
                tw_stream *u = mk(isas[from], combos, TW_FEE_DEFAULT);
                uint64_t r0 = at * 7 + 1;
                feed(u, x, 0, at, &r0);
                uint64_t rb = at + 99, ru = at + 99;
                int ok = 1;
                for (size_t i = at; i < N && ok; i += 50) {
                    size_t e = i + 50 < N ? i + 50 : N;
                    feed(b, x, i, e, &rb);
                    feed(u, x, i, e, &ru);
                    ok = same_state(b, u);
                }
                CHECKF(ok, "saved at bar %zu with %s lanes, loaded with %s: differs", at,
                       tw_isa_name(isas[from]), tw_isa_name(isas[to]));
                pairs++;
                free(b);
                free(u);
            }
            free(a);
            free(buf);
            free(back);
        }
    printf("%zu save points, %zu loads across ISAs: parity\n", points, pairs);
    /* Windows longer than the copy's buffer (tails of 1,099 and 1,299),
     * over a longer series (the HMA needs 2,300 bars before it speaks). */
    {
        enum { NL = 9000, AT = 5000 };
        static double y[NL];
        uint64_t ry = 77;
        kt_series(&ry, y, NL, 1);
        int64_t big[K * 6];
        for (int k = 0; k < K; k++)
            memcpy(big + k * 6, combos + 6 * ((size_t)k % 3), 6 * sizeof(int64_t));
        static const int64_t b6[6] = {600, 1200, 1100, 300, 500, 1300};
        memcpy(big + 6 * 3, b6, sizeof(b6));
        for (int from = 0; from < n_isa; from++)
            for (int to = 0; to < n_isa; to++) {
                uint64_t ra = 1, ru = 1;
                tw_stream *a = mk(isas[from], big, TW_FEE_DEFAULT);
                tw_stream *u = mk(isas[from], big, TW_FEE_DEFAULT);
                feed(a, y, 0, AT, &ra);
                feed(u, y, 0, AT, &ru);
                size_t bytes = tw_stream_state_bytes(a);
                uint8_t *buf = malloc(bytes);
                CHECK(tw_stream_state_save(a, buf, bytes) == bytes);
                tw_stream *b = mk(isas[to], big, TW_FEE_DEFAULT);
                tw_error err = {0};
                CHECKF(tw_stream_state_load(b, buf, bytes, &err) == 0, "%s", err.msg);
                uint64_t rb = 3;
                ru = 3;
                feed(b, y, AT, NL, &rb);
                feed(u, y, AT, NL, &ru);
                tw_combo_state cs, c0;
                tw_stream_get(u, 3, &cs);
                tw_stream_get(a, 3, &c0);
                CHECKF(cs.trades > c0.trades, "the long combo traded %lld times after the "
                       "point (%lld before)", (long long)(cs.trades - c0.trades),
                       (long long)c0.trades);
                CHECKF(same_state(b, u), "long windows, %s -> %s: differs",
                       tw_isa_name(isas[from]), tw_isa_name(isas[to]));
                free(a);
                free(b);
                free(u);
                free(buf);
            }
    }

    /* Refusals: the stream is left as it was. */
    uint64_t r1 = 5;
    tw_stream *a = mk(isas[n_isa - 1], combos, TW_FEE_DEFAULT);
    feed(a, x, 0, 1234, &r1);
    size_t bytes = tw_stream_state_bytes(a);
    uint8_t *buf = malloc(bytes);
    CHECK(tw_stream_state_save(a, buf, bytes) == bytes);
    int64_t other[K * 6];
    memcpy(other, combos, sizeof(other));
    other[6 * 2 + 0] = 21;
    tw_stream *o = mk(isas[0], other, TW_FEE_DEFAULT);
    tw_error err = {0};
    CHECK(tw_stream_state_load(o, buf, bytes, &err) == -TW_EFORMAT && strstr(err.msg, "combos"));
    free(o);
    o = mk(isas[0], combos, 0.5);
    CHECK(tw_stream_state_load(o, buf, bytes, &err) == -TW_EFORMAT);
    CHECK(tw_stream_bars(o) == 0);
    CHECK(tw_stream_state_load(o, buf, bytes - 8, &err) == -TW_EFORMAT);
    free(o);
    o = mk(isas[0], combos, TW_FEE_DEFAULT);
    CHECK(tw_stream_state_load(o, buf, bytes - 8, &err) == -TW_EFORMAT && strstr(err.msg, "bytes"));
    uint8_t *bad = malloc(bytes);
    memcpy(bad, buf, bytes);
    uint64_t cf = 9999;
    memcpy(bad + 40, &cf, 8); /* the header's cf */
    CHECK(tw_stream_state_load(o, bad, bytes, &err) == -TW_EFORMAT && strstr(err.msg, "range"));
    memcpy(bad, buf, bytes);
    int32_t pos = 3;
    memcpy(bad + 72, &pos, 4); /* combo 0's position */
    CHECK(tw_stream_state_load(o, bad, bytes, &err) == -TW_EFORMAT && strstr(err.msg, "position"));
    CHECK(tw_stream_bars(o) == 0);
    free(bad);
    free(buf);
    free(o);
    free(a);
    return tw_check_done("kernel_stream_state");
}
