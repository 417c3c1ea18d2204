/* Builder tests: a golden NewOrderSingle byte for byte, BodyLength and
 * CheckSum checked by the parser's framer, every too-small buffer size
 * (exact-size heap buffers so ASan sees any overrun), the integer,
 * fixed-point and timestamp formatters against libc, and the inline
 * writers' fast paths against snprintf and the exact formatters, across
 * the values and room where they hand over to the general ones. */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "tw_check.h"
#include "tickwire/fix_build.h"
#include "tickwire/fix.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int build_nos(tw_fix_template *t, char *buf, size_t cap, const char **msg, size_t *len)
{
    tw_fix_wbuf w;
    int64_t ts;
    TW_VERIFY(tw_fix_to_epoch_ns("20260102-03:04:05.123456789", 27, &ts) == 0);
    tw_fix_build_begin(&w, t, buf, cap, "D", 1234, ts);
    tw_fix_put_cstr(&w, 11, "ORD-1");
    tw_fix_put_char(&w, 21, '1');
    tw_fix_put_cstr(&w, 55, "EURUSD");
    tw_fix_put_char(&w, 54, '1');
    tw_fix_put_ts(&w, 60, ts, 6);
    tw_fix_put_i64(&w, 38, 1000000);
    tw_fix_put_char(&w, 40, '2');
    tw_fix_put_fixed(&w, 44, 108725, 5);
    return tw_fix_build_end(&w, msg, len);
}

static void test_golden(void)
{
    tw_fix_template t;
    tw_error err;
    CHECK(tw_fix_template_init(&t, "FIX.4.4", "TW", "QF", NULL, NULL, 3, &err) == 0);
    char buf[512];
    const char *msg;
    size_t len;
    CHECK(build_nos(&t, buf, sizeof(buf), &msg, &len) == 0);
    const char *want_body =
        "35=D\x01" "49=TW\x01" "56=QF\x01" "34=1234\x01" "52=20260102-03:04:05.123\x01"
        "11=ORD-1\x01" "21=1\x01" "55=EURUSD\x01" "54=1\x01" "60=20260102-03:04:05.123456\x01"
        "38=1000000\x01" "40=2\x01" "44=1.08725\x01";
    char want[512];
    int n = snprintf(want, sizeof(want), "8=FIX.4.4\x01" "9=%zu\x01%s", strlen(want_body),
                     want_body);
    unsigned sum = 0;
    for (int i = 0; i < n; i++)
        sum += (unsigned char)want[i];
    n += snprintf(want + n, sizeof(want) - (size_t)n, "10=%03u\x01", sum & 255);
    CHECK(len == (size_t)n && memcmp(msg, want, len) == 0);
    /* And the parser agrees on framing and checksum. */
    size_t skip = 0;
    CHECK(tw_fix_frame(msg, len, 0, &skip) == (int)len);
    /* Sub IDs and other precisions. */
    CHECK(tw_fix_template_init(&t, "FIX.4.2", "A", "B", "S1", "T1", 0, &err) == 0);
    tw_fix_wbuf w;
    tw_fix_build_begin(&w, &t, buf, sizeof(buf), "0", 7, 0);
    CHECK(tw_fix_build_end(&w, &msg, &len) == 0);
    const char *w2 = "8=FIX.4.2\x01" "9=53\x01" "35=0\x01" "49=A\x01" "56=B\x01" "50=S1\x01"
                     "57=T1\x01" "34=7\x01" "52=19700101-00:00:00\x01";
    CHECK(len == strlen(w2) + 7 && memcmp(msg, w2, strlen(w2)) == 0);
    CHECK(tw_fix_frame(msg, len, 0, &skip) == (int)len);
    /* A short BeginString: the BodyLength word store reaches in front of
     * the message (into the reserve), which stays byte-exact. */
    CHECK(tw_fix_template_init(&t, "F", "A", "B", NULL, NULL, 0, &err) == 0);
    tw_fix_build_begin_raw(&w, &t, buf, sizeof(buf), "0");
    CHECK(tw_fix_build_end(&w, &msg, &len) == 0);
    const char *w3 = "8=F\x01" "9=15\x01" "35=0\x01" "49=A\x01" "56=B\x01";
    unsigned s3 = 0;
    for (size_t i = 0; i < strlen(w3); i++)
        s3 += (unsigned char)w3[i];
    char t3[16];
    snprintf(t3, sizeof(t3), "10=%03u\x01", s3 & 255);
    CHECK(len == strlen(w3) + 7 && memcmp(msg, w3, strlen(w3)) == 0 &&
          memcmp(msg + strlen(w3), t3, 7) == 0);
    /* Bad template input is refused with a reason. */
    CHECK(tw_fix_template_init(&t, "FIX.4.4", "", "B", NULL, NULL, 3, &err) == -EINVAL);
    CHECK(tw_fix_template_init(&t, "FIX.4.4", "A\x01", "B", NULL, NULL, 3, &err) == -EINVAL);
    CHECK(tw_fix_template_init(&t, "FIX.4.4", "A", "B", NULL, NULL, 4, &err) == -EINVAL);
}

static void test_small_buffers(void)
{
    tw_fix_template t;
    TW_VERIFY(tw_fix_template_init(&t, "FIX.4.4", "SENDER", "TARGET", NULL, NULL, 9, NULL) == 0);
    char big[512];
    const char *msg;
    size_t need;
    CHECK(build_nos(&t, big, sizeof(big), &msg, &need) == 0);
    size_t full = (size_t)(msg - big) + need;
    for (size_t cap = 0; cap <= full; cap++) {
        char *b = malloc(cap ? cap : 1);
        size_t len;
        int rc = build_nos(&t, b, cap, &msg, &len);
        if (cap < full)
            CHECK(rc == -ENOBUFS);
        else
            CHECK(rc == 0 && len == need);
        free(b);
    }
}

static void test_formatters(void)
{
    char a[64], b[64];
    uint64_t edge[] = { 0, 1, 9, 10, 99, 100, 999, 1000, 123456789, UINT64_MAX, UINT64_MAX / 10 };
    for (size_t i = 0; i < TW_ARRAY_SIZE(edge); i++) {
        size_t n = tw_fix_fmt_u64(a, edge[i]);
        snprintf(b, sizeof(b), "%llu", (unsigned long long)edge[i]);
        CHECK(n == strlen(b) && memcmp(a, b, n) == 0);
    }
    for (int i = 0; i < 100000; i++) {
        uint64_t v = next_rand() >> (next_rand() % 64);
        size_t n = tw_fix_fmt_u64(a, v);
        snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
        CHECK(n == strlen(b) && memcmp(a, b, n) == 0);
    }
    /* Signed and fixed point through the writer, read back by the parser. */
    tw_fix_template t;
    TW_VERIFY(tw_fix_template_init(&t, "FIX.4.4", "A", "B", NULL, NULL, 3, NULL) == 0);
    for (int i = 0; i < 20000; i++) {
        char buf[256];
        tw_fix_wbuf w;
        int64_t v = (int64_t)next_rand() >> (next_rand() % 64);
        unsigned dec = (unsigned)(next_rand() % 10);
        tw_fix_build_begin_raw(&w, &t, buf, sizeof(buf), "0");
        size_t at = w.pos;
        tw_fix_put_i64(&w, 1, v);
        tw_fix_put_fixed(&w, 2, v, dec);
        CHECK(!w.overflow);
        const char *p = buf + at + 2;
        const char *e = memchr(p, '\x01', 40);
        int64_t back;
        CHECK(e && tw_fix_to_i64(p, (uint32_t)(e - p), &back) == 0 && back == v);
        p = e + 3;
        e = memchr(p, '\x01', 40);
        if (v != INT64_MIN) {
            CHECK(e && tw_fix_to_fixed(p, (uint32_t)(e - p), dec, &back) == 0 && back == v);
        }
    }
    tw_fix_wbuf w;
    char buf[256];
    tw_fix_build_begin_raw(&w, &t, buf, sizeof(buf), "0");
    size_t at = w.pos;
    tw_fix_put_fixed(&w, 44, -5, 3);
    CHECK(memcmp(buf + at, "44=-0.005\x01", 10) == 0);
    /* Timestamps against gmtime_r for random instants 1970..2255 (int64
     * ns ends in 2262). */
    for (int i = 0; i < 20000; i++) {
        int64_t sec = (int64_t)(next_rand() % 9000000000ull);
        int64_t ns = sec * 1000000000 + (int64_t)(next_rand() % 1000000000);
        unsigned digits = (unsigned[]){ 0, 3, 6, 9 }[i % 4];
        size_t n = tw_fix_fmt_ts(a, ns, digits);
        time_t tt = (time_t)sec;
        struct tm tm;
        gmtime_r(&tt, &tm);
        int k = snprintf(b, sizeof(b), "%04d%02d%02d-%02d:%02d:%02d", tm.tm_year + 1900,
                         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        if (digits) {
            long long frac = ns % 1000000000;
            for (unsigned d = digits; d < 9; d++)
                frac /= 10;
            k += snprintf(b + k, sizeof(b) - (size_t)k, ".%0*lld", (int)digits, frac);
        }
        CHECK(n == (size_t)k && memcmp(a, b, n) == 0);
        int64_t back;
        CHECK(tw_fix_to_epoch_ns(a, (uint32_t)n, &back) == 0);
        int64_t unit = digits == 0 ? 1000000000 : digits == 3 ? 1000000 : digits == 6 ? 1000 : 1;
        CHECK(back == ns - ns % unit);
    }
}

/* put_f64: the shortest round-trip text, read back by the decoder as the
 * same float64 bit for bit; NaN and infinities refused. */
static void test_f64(void)
{
    tw_fix_template t;
    CHECK(tw_fix_template_init(&t, "FIX.4.4", "V", "T", NULL, NULL, 3, NULL) == 0);
    static const double xs[] = { 100.0, 100.0000000000001, 0.00001, 1.08346, -0.5, 0.1 + 0.2,
                                 123456789.125, 5e-324, 1.7976931348623157e308 };
    static char buf[1024];
    for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++) {
        tw_fix_wbuf w;
        tw_fix_build_begin(&w, &t, buf, sizeof(buf), "X", 1, 1710493200000000000ll);
        tw_fix_put_cstr(&w, 262, "R");
        tw_fix_put_u64(&w, 268, 1);
        tw_fix_put_char(&w, 279, '0');
        tw_fix_put_f64(&w, 270, xs[i]);
        const char *m;
        size_t len, skip;
        CHECK(tw_fix_build_end(&w, &m, &len) == 0);
        tw_fix_md_entry e[1];
        tw_fix_decoded d = { .flags = TW_FIX_PX_F64, .px_decimals = 8, .entries = e,
                             .entries_cap = 1 };
        CHECK(tw_fix_decode(m, len, &d, &skip) == (int)len);
        CHECK(d.rc == 0 && d.u.md.n_entries == 1);
        CHECK(memcmp(&e[0].px_f64, &xs[i], sizeof(double)) == 0);
    }
    const char *want = "270=100.0000000000001\x01";
    tw_fix_wbuf w;
    tw_fix_build_begin_raw(&w, &t, buf, sizeof(buf), "X");
    tw_fix_put_f64(&w, 270, 100.0000000000001);
    CHECK(w.pos >= strlen(want) && memcmp(buf + w.pos - strlen(want), want, strlen(want)) == 0);
    tw_fix_put_f64(&w, 270, NAN);
    const char *m;
    size_t len;
    CHECK(tw_fix_build_end(&w, &m, &len) == -ENOBUFS);
}

/* The text one inline writer put at buf[at..w->pos), without "tag=" and
 * SOH, into out; its length, or -1 if the field is not "tag=...SOH". */
static int field_text(const tw_fix_wbuf *w, size_t at, const char *tag, char *out)
{
    size_t tl = strlen(tag), n = w->pos - at;
    if (w->overflow || n < tl + 1 || memcmp(w->buf + at, tag, tl) != 0 ||
        w->buf[w->pos - 1] != '\x01')
        return -1;
    memcpy(out, w->buf + at + tl, n - tl - 1);
    out[n - tl - 1] = 0;
    return (int)(n - tl - 1);
}

/* A value of 1 to 20 digits, often near a power of ten. */
static uint64_t any_u64(void)
{
    static const uint64_t p10[] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                    100000000, 1000000000, 10000000000ull };
    uint64_t r = next_rand();
    switch (r % 4) {
    case 0: return p10[(r >> 8) % 11] - (r >> 20) % 3;
    case 1: return p10[(r >> 8) % 11] + (r >> 20) % 3;
    case 2: return (r >> 8) % 100000;
    default: return next_rand() >> (r >> 8) % 64;
    }
}

static void test_inline_writers(void)
{
    tw_fix_template t;
    TW_VERIFY(tw_fix_template_init(&t, "FIX.4.4", "A", "B", NULL, NULL, 3, NULL) == 0);
    char a[64], b[64];
    for (int i = 0; i < 100000; i++) {
        /* Room to spare, and room just under and at what the fast paths
         * need (they then hand over to the exact writers). */
        char buf[96];
        tw_fix_wbuf w;
        tw_fix_build_begin_raw(&w, &t, buf, sizeof(buf), "0");
        size_t at = w.pos; /* where the field goes, the header before it */
        size_t cap = i % 3 ? sizeof(buf) : at + next_rand() % 40;
        w.cap = cap;
        uint64_t u = any_u64();
        int64_t v = (int64_t)any_u64() * (next_rand() % 3 ? 1 : -1);
        unsigned dec = (unsigned)(next_rand() % 19);
        unsigned tag = next_rand() % 2 ? 38 : 1 + next_rand() % 999; /* constant and not */
        char tg[16];
        snprintf(tg, sizeof(tg), "%u=", tag);
        switch (i % 3) {
        case 0:
            tw_fix_put_u64(&w, tag, u);
            snprintf(b, sizeof(b), "%llu", (unsigned long long)u);
            break;
        case 1:
            tw_fix_put_i64(&w, tag, v);
            snprintf(b, sizeof(b), "%lld", (long long)v);
            break;
        default: {
            tw_fix_put_fixed(&w, tag, v, dec);
            uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v, sc = 1;
            for (unsigned k = 0; k < dec; k++)
                sc *= 10;
            int k = snprintf(b, sizeof(b), "%s%llu", v < 0 ? "-" : "",
                             (unsigned long long)(m / sc));
            if (dec)
                snprintf(b + k, sizeof(b) - (size_t)k, ".%0*llu", (int)dec,
                         (unsigned long long)(m % sc));
            break;
        }
        }
        size_t need = at + strlen(tg) + strlen(b) + 1;
        if (need > cap) {
            CHECKF(w.overflow, "cap %zu need %zu: no overflow", cap, need);
            continue;
        }
        int n = field_text(&w, at, tg, a);
        CHECKF(n >= 0 && strcmp(a, b) == 0, "wrote '%s', want '%s' (tag %u, dec %u, cap %zu)",
               n >= 0 ? a : "?", b, tag, dec, cap);
    }
    /* Timestamps: the cached second (the fast path) and a new one, every
     * precision, against tw_fix_fmt_ts. */
    int64_t ns = 1767323045000000000ll;
    for (int i = 0; i < 100000; i++) {
        ns += (int64_t)(next_rand() % (i % 7 ? 3000000ull : 3000000000ull));
        unsigned digits = (unsigned[]){ 0, 3, 6, 9 }[next_rand() % 4];
        char buf[96];
        tw_fix_wbuf w;
        tw_fix_build_begin_raw(&w, &t, buf, sizeof(buf), "0");
        size_t at = w.pos;
        if (i % 5 == 0)
            w.cap = at + next_rand() % 40;
        tw_fix_put_ts(&w, 52, ns, digits);
        size_t k = tw_fix_fmt_ts(b, ns, digits);
        b[k] = 0;
        if (at + 3 + k + 1 > w.cap) {
            CHECK(w.overflow);
            continue;
        }
        int n = field_text(&w, at, "52=", a);
        CHECKF(n >= 0 && strcmp(a, b) == 0, "put_ts wrote '%s', want '%s'", n >= 0 ? a : "?", b);
    }
}

int main(void)
{
    test_inline_writers();
    test_f64();
    test_golden();
    test_small_buffers();
    test_formatters();
    return tw_check_done("fix_build_test");
}
