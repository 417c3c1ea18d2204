/* Exact decimal <-> double: the forms accepted and refused (with their
 * reasons), the scanner's contract, a table of hard parse cases with their
 * bits (computed independently, by Python's correctly rounded float()),
 * formats checked against Python's repr digits, whole families of doubles
 * against the reference formatter, the bounded writer, and inputs placed
 * against a PROT_NONE page (the parser reads eight bytes at a time). */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/decimal_internal.h"
#include "test_decimal_util.h"
#include "tickwire/decimal.h"
#include "tw_check.h"

static void test_parse_forms(void)
{
    static const struct {
        const char *s;
        int rc;
        double v;
        const char *why; /* a part of the error message */
    } cases[] = {
        { "100", 0, 100.0, NULL },
        { "100.0000000000001", 0, 100.0000000000001, NULL },
        { "0.00001", 0, 0.00001, NULL },
        { "-2.5", 0, -2.5, NULL },
        { ".5", 0, 0.5, NULL },
        { "5.", 0, 5.0, NULL },
        { "-.5", 0, -0.5, NULL },
        { "007.50", 0, 7.5, NULL },
        { "0", 0, 0.0, NULL },
        { "-0", 0, -0.0, NULL },
        { "-0.000", 0, -0.0, NULL },
        { "0000000000000000000000000.0000000000000000000000", 0, 0.0, NULL },
        { "", -EINVAL, 0, "empty" },
        { "-", -EINVAL, 0, "no digits" },
        { ".", -EINVAL, 0, "no digits" },
        { "-.", -EINVAL, 0, "no digits" },
        { "1.2.3", -EINVAL, 0, "second '.' at byte 3" },
        { "+1", -EINVAL, 0, "byte 0 ('+')" },
        { "1e5", -EINVAL, 0, "byte 1 ('e')" },
        { " 1", -EINVAL, 0, "byte 0 (0x20)" },
        { "1 ", -EINVAL, 0, "byte 1 (0x20)" },
        { "0x10", -EINVAL, 0, "byte 1 ('x')" },
        { "nan", -EINVAL, 0, "byte 0 ('n')" },
        { "inf", -EINVAL, 0, "byte 0 ('i')" },
        { "--1", -EINVAL, 0, "byte 1 ('-')" },
        { "1-", -EINVAL, 0, "byte 1 ('-')" },
        { "12345678x", -EINVAL, 0, "byte 8 ('x')" },
        { "1234567\001", -EINVAL, 0, "byte 7 (0x01)" },
        { "1,5", -EINVAL, 0, "byte 1 (',')" },
    };
    for (size_t i = 0; i < TW_ARRAY_SIZE(cases); i++) {
        double v = -1;
        tw_error err = { 0, "" };
        size_t len = strlen(cases[i].s);
        int rc = tw_decimal_parse(cases[i].s, len, &v, &err);
        CHECKF(rc == cases[i].rc, "'%s': rc %d", cases[i].s, rc);
        CHECK(tw_decimal_to_double(cases[i].s, len, &v) == rc);
        if (rc == 0) {
            CHECKF(same(v, cases[i].v), "'%s' -> %.17g", cases[i].s, v);
        } else {
            CHECKF(err.code == rc && strstr(err.msg, cases[i].why), "'%s': '%s'", cases[i].s,
                   err.msg);
            CHECKF(v == -1, "'%s': *out written on error", cases[i].s);
        }
        double r = -1;
        CHECK(tw__decimal_to_double_ref(cases[i].s, len, &r) == rc);
        if (rc == 0)
            CHECK(same(r, v));
    }
    /* A NUL inside is just another bad byte. */
    double v;
    tw_error err;
    CHECK(tw_decimal_parse("1\0002", 3, &v, &err) == -EINVAL && strstr(err.msg, "byte 1 (0x00)"));
    char big[TW_DECIMAL_IN_MAX + 2];
    memset(big, '1', sizeof big);
    CHECK(tw_decimal_parse(big, sizeof big, &v, &err) == -E2BIG && strstr(err.msg, "1100"));
    CHECK(tw_decimal_to_double(big, TW_DECIMAL_IN_MAX + 1, &v) == -E2BIG);
    CHECK(tw_decimal_to_double(big, TW_DECIMAL_IN_MAX, &v) == 0 && isinf(v));
    /* Not NUL-terminated: the parser stops at len. */
    CHECK(tw_decimal_to_double("12345", 2, &v) == 0 && v == 12.0);
    CHECK(tw_decimal_to_double("123456789012", 9, &v) == 0 && v == 123456789.0);
}

static void test_scan(void)
{
    static const struct {
        const char *s;
        int n;
        double v;
    } cases[] = {
        { "12.5\001", 4, 12.5 },
        { "7.\001", 2, 7.0 },
        { "-.25|", 4, -0.25 },
        { "1.2.3", 3, 1.2 },
        { "100x", 3, 100.0 },
        { "0000000000000000000000001234\001", 28, 1234.0 },
        { "101.23456789012345\00110=", 18, 101.23456789012345 },
        { "", -1, 0 },
        { "-", -1, 0 },
        { "-\001", -1, 0 },
        { ".\001", -1, 0 },
        { "x1", -1, 0 },
        { "\0011", -1, 0 },
    };
    for (size_t i = 0; i < TW_ARRAY_SIZE(cases); i++) {
        double v = -1;
        int n = tw_decimal_scan(cases[i].s, strlen(cases[i].s), &v);
        CHECKF(n == cases[i].n, "'%s': %d", cases[i].s, n);
        if (n > 0)
            CHECKF(same(v, cases[i].v), "'%s' -> %.17g", cases[i].s, v);
        else
            CHECK(v == -1);
    }
    /* A number longer than TW_DECIMAL_IN_MAX is malformed even when the
     * buffer goes on; one of exactly that length is fine. */
    static char big[TW_DECIMAL_IN_MAX + 10];
    memset(big, '0', sizeof big);
    big[0] = '1';
    double v;
    CHECK(tw_decimal_scan(big, sizeof big, &v) == -1);
    big[TW_DECIMAL_IN_MAX] = '\001';
    CHECK(tw_decimal_scan(big, sizeof big, &v) == TW_DECIMAL_IN_MAX && isinf(v));
    big[1] = '.';
    CHECK(tw_decimal_scan(big, sizeof big, &v) == TW_DECIMAL_IN_MAX && v == 1.0);
}

/* Hard parse cases.  The long ones are built: head, then `fill` repeated
 * nfill times, then tail.  Expected bits from Python's float(). */
static const struct hard {
    const char *head;
    char fill;
    int nfill;
    const char *tail;
    uint64_t bits;
    const char *why;
} hard_cases[] = {
    { "9007199254740993", 0, 0, "", 0x4340000000000000ull, "2^53+1: a tie, to even 2^53" },
    { "9007199254740995", 0, 0, "", 0x4340000000000002ull, "2^53+3: a tie, to even 2^53+4" },
    { "9007199254740993.", '0', 29, "1", 0x4340000000000001ull, "just above that tie" },
    { "9007199254740992.", '9', 30, "", 0x4340000000000000ull, "just below it" },
    { "1.00000000000000011102230246251565404236316680908203125", 0, 0, "",
      0x3ff0000000000000ull, "1 + 2^-53 exactly: a tie, to even 1" },
    { "1.00000000000000011102230246251565404236316680908203125", '0', 900, "1",
      0x3ff0000000000001ull, "that tie and a 1 at digit 957: up" },
    { "1.00000000000000011102230246251565404236316680908203124", '9', 900, "",
      0x3ff0000000000000ull, "that tie less 10^-955: down" },
    { "20000000000000000001", 0, 0, "", 0x43f158e460913d00ull, "20 digits" },
    { "0.1", 0, 0, "", 0x3fb999999999999aull, "0.1" },
    { "100.00000000000001", 0, 0, "", 0x4059000000000001ull, "17 digits near 100" },
    { "99.999999999999986", 0, 0, "", 0x4058ffffffffffffull, "17 digits just under 100" },
    { "101.23456789012345", 0, 0, "", 0x40594f03290a3167ull, "a 17-digit price" },
    { "0.000012345678901234567", 0, 0, "", 0x3ee9e409302678baull, "fix.md's example" },
    { "0.", '0', 307, "22250738585072011", 0x000fffffffffffffull, "2.2250738585072011e-308" },
    { "0.", '0', 307, "22250738585072012", 0x0010000000000000ull, "2.2250738585072012e-308" },
    { "0.", '0', 323, "5", 0x0000000000000001ull, "5e-324 as the formatter writes it" },
    { "0.", '0', 323, "24703282292062328", 0x0000000000000001ull, "just above 2^-1075" },
    { "0.", '0', 323, "24703282292062327", 0x0000000000000000ull, "just below 2^-1075" },
    { "0.", '0', 324, "2", 0x0000000000000000ull, "2e-325: 0" },
    { "0.", '0', 1090, "1", 0x0000000000000000ull, "1e-1091: 0" },
    { "1", '0', 308, "", 0x7fe1ccf385ebc8a0ull, "1e308" },
    { "1", '0', 309, "", 0x7ff0000000000000ull, "1e309: Inf" },
    { "17976931348623157", '0', 292, "", 0x7fefffffffffffffull, "1.7976931348623157e308" },
    { "17976931348623159", '0', 292, "", 0x7ff0000000000000ull, "1.7976931348623159e308: Inf" },
    { "100000000000000000000000", 0, 0, "", 0x44b52d02c7e14af6ull, "1e23" },
    { "99999999999999991611392", 0, 0, "", 0x44b52d02c7e14af6ull, "the double nearest 1e23" },
    { "99999999999999999999999.5", 0, 0, "", 0x44b52d02c7e14af6ull, "just under 1e23" },
    { "-0.000000000000000000001", 0, 0, "", 0xbb92e3b40a0e9b4full, "-1e-21" },
    { "0000000000000000000000000000000000", '0', 900, "1.5", 0x3ff8000000000000ull,
      "934 leading zeros" },
    { "1.5", '0', 1000, "", 0x3ff8000000000000ull, "1000 trailing zeros" },
    { "123456789012345678901234567890", 0, 0, "", 0x45f8ee90ff6c373eull, "30 digits" },
    { "0.000000000000000000000000000000000000001", 0, 0, "", 0x37d5c72fb1552d83ull, "1e-39" },
    { "1234567.1234567", 0, 0, "", 0x4132d6871f9adbb9ull, "7+7 digits" },
    { "12345678.12345678", 0, 0, "", 0x41678c29c3f35ba2ull, "8+8 digits" },
    { "4503599627370496.5", 0, 0, "", 0x4330000000000000ull, "2^52 + 0.5: a tie, to even" },
    { "4503599627370497.5", 0, 0, "", 0x4330000000000002ull, "2^52 + 1.5: a tie, to even" },
};

static void test_hard_cases(void)
{
    static char s[TW_DECIMAL_IN_MAX + 1];
    for (size_t i = 0; i < TW_ARRAY_SIZE(hard_cases); i++) {
        const struct hard *h = &hard_cases[i];
        size_t n = strlen(h->head);
        memcpy(s, h->head, n);
        memset(s + n, h->fill, (size_t)h->nfill);
        n += (size_t)h->nfill;
        memcpy(s + n, h->tail, strlen(h->tail));
        n += strlen(h->tail);
        REQUIRE(n <= TW_DECIMAL_IN_MAX);
        double v = -1, r = -1;
        int rc = tw_decimal_to_double(s, n, &v);
        CHECKF(rc == 0 && dbits(v) == h->bits, "%s: rc %d, %a", h->why, rc, v);
        CHECK(tw__decimal_to_double_ref(s, n, &r) == 0);
        CHECKF(dbits(r) == h->bits, "%s: strtod says %a", h->why, r);
        /* The same with a sign. */
        s[n] = 0;
        memmove(s + 1, s, n + 1);
        s[0] = '-';
        if (n + 1 <= TW_DECIMAL_IN_MAX && h->head[0] != '-') {
            rc = tw_decimal_to_double(s, n + 1, &v);
            CHECKF(rc == 0 && dbits(v) == (h->bits | 1ull << 63), "-%s: %a", h->why, v);
        }
    }
    /* Exact midpoints between neighbours at the edges of the range: a tie
     * goes to the even one, a hair above or below decides. */
    static const uint64_t edges[] = {
        0, 1, 2, 3, 0x000fffffffffffffull, 0x0010000000000000ull, 0x3fefffffffffffffull,
        0x3ff0000000000000ull, 0x4340000000000000ull, 0x7feffffffffffffeull,
    };
    for (size_t i = 0; i < TW_ARRAY_SIZE(edges); i++) {
        dnum mid;
        dn_midpoint(edges[i], &mid);
        size_t n = dn_text(&mid, s);
        double v;
        CHECK(tw_decimal_to_double(s, n, &v) == 0);
        uint64_t even = edges[i] & 1 ? edges[i] + 1 : edges[i];
        CHECKF(dbits(v) == even, "midpoint over %#llx -> %#llx", (unsigned long long)edges[i],
               (unsigned long long)dbits(v));
    }
    /* DBL_MAX + half an ulp is a tie between DBL_MAX (odd) and 2^1024:
     * Inf, like strtod. */
    dnum mid;
    dn_midpoint(0x7fefffffffffffffull, &mid);
    size_t n = dn_text(&mid, s);
    double v;
    CHECK(tw_decimal_to_double(s, n, &v) == 0 && isinf(v));
    dn_sub_unit(&mid, DN_INT - 1);
    n = dn_text(&mid, s);
    CHECK(tw_decimal_to_double(s, n, &v) == 0 && v == DBL_MAX);
}

/* Formats against Python's repr (David Gay's shortest digits, an
 * independent implementation), rewritten in fixed notation. */
static void test_format_table(void)
{
    static const struct {
        uint64_t bits;
        const char *repr;
    } cases[] = {
        { 0x0000000000000001ull, "5e-324" },
        { 0x0000000000000002ull, "1e-323" },
        { 0x0000000000000003ull, "1.5e-323" },
        { 0x0010000000000000ull, "2.2250738585072014e-308" },
        { 0x000fffffffffffffull, "2.225073858507201e-308" },
        { 0x7fefffffffffffffull, "1.7976931348623157e+308" },
        { 0x44b52d02c7e14af6ull, "1e+23" },
        { 0x4340000000000000ull, "9007199254740992" },
        { 0x4340000000000001ull, "9007199254740994" },
        { 0x3fb999999999999aull, "0.1" },
        { 0x3fd3333333333333ull, "0.3" },
        { 0x3fd5555555555555ull, "0.3333333333333333" },
        { 0x3fe5555555555555ull, "0.6666666666666666" },
        { 0x4059000000000007ull, "100.0000000000001" },
        { 0x4059000000000000ull, "100" },
        { 0x405edd2f1a9fbe77ull, "123.456" },
        { 0x3e7ad7f29abcaf48ull, "1e-07" },
        { 0x0000000000000010ull, "8e-323" },
        { 0x43e0000000000000ull, "9.223372036854776e+18" },
        { 0x43f0000000000000ull, "1.8446744073709552e+19" },
        { 0x430c6bf526340000ull, "1000000000000000" },
        { 0x4341c37937e08000ull, "1e+16" },
        { 0x4376345785d8a000ull, "1e+17" },
        { 0x00005c0ab9347ed7ull, "5e-310" },
        { 0x40594f03290a3167ull, "101.23456789012344" },
        { 0x4058ffffffffffffull, "99.99999999999999" },
        { 0x3fd3333333333334ull, "0.30000000000000004" },
        { 0x4480f0cf064dd592ull, "1e+22" },
        { 0x3ff0000000000001ull, "1.0000000000000002" },
        { 0x3fefffffffffffffull, "0.9999999999999999" },
        { 0x3f00000000000000ull, "3.0517578125e-05" },
        { 0x4050670a3d70a3d7ull, "65.61" },
        { 0x3d30000000000000ull, "5.684341886080802e-14" },
        { 0x0028000000000000ull, "6.675221575521604e-308" },
        { 0x437b69b4ba630f35ull, "1.2345678901234568e+17" },
        { 0x0000000000000064ull, "4.94e-322" },
        { 0x01aa749ec2ff5c8aull, "1.2345e-300" },
        { 0x4370000000000000ull, "7.205759403792794e+16" },
        { 0x43b0000000000000ull, "1.152921504606847e+18" },
        { 0x3eb0c6f7a0b5ed8dull, "1e-06" },
        { 0x4132d68700000000ull, "1234567" },
        { 0x47efffffe0000000ull, "3.4028234663852886e+38" },
        { 0x54b249ad2594c37dull, "1e+100" },
        { 0x2b2bff2ee48e0530ull, "1e-100" },
        { 0x60afffffffffffffull, "5.491838128104487e+157" },
    };
    char buf[TW_DECIMAL_MAX], want[TW_DECIMAL_MAX];
    for (size_t i = 0; i < TW_ARRAY_SIZE(cases); i++) {
        double x = dfrom(cases[i].bits);
        tw__decimal_fixed_from_printf(cases[i].repr, want);
        size_t n = tw_double_to_decimal(x, buf);
        CHECKF(n == strlen(buf) && strcmp(buf, want) == 0, "%s -> '%s'", cases[i].repr, buf);
        n = tw_double_to_decimal(-x, buf);
        CHECKF(buf[0] == '-' && strcmp(buf + 1, want) == 0, "-%s -> '%s'", cases[i].repr, buf);
    }
    static const struct {
        double v;
        const char *s;
    } named[] = {
        { 0.0, "0" },           { -0.0, "-0" },  { INFINITY, "inf" },
        { -INFINITY, "-inf" },  { NAN, "nan" },  { 1e21, "1000000000000000000000" },
        { 0.00001, "0.00001" }, { -2.5, "-2.5" }, { 123456.789, "123456.789" },
    };
    for (size_t i = 0; i < TW_ARRAY_SIZE(named); i++) {
        size_t n = tw_double_to_decimal(named[i].v, buf);
        CHECKF(n == strlen(named[i].s) && strcmp(buf, named[i].s) == 0, "%g -> '%s'", named[i].v,
               buf);
    }
    /* The longest texts fit TW_DECIMAL_MAX. */
    CHECK(tw_double_to_decimal(-dfrom(1), buf) == 327);
    CHECK(tw_double_to_decimal(-DBL_MAX, buf) == 310);
}

/* Every double of some families formats as the reference does and parses
 * back: powers of two (the lopsided intervals), the smallest subnormals,
 * small integers, powers of ten and their neighbours. */
static void check_family(double x, const char *family)
{
    char a[TW_DECIMAL_MAX], b[TW_DECIMAL_MAX];
    size_t n = tw_double_to_decimal(x, a);
    tw__double_to_decimal_ref(x, b);
    double back;
    if (strcmp(a, b) != 0 || tw_decimal_to_double(a, n, &back) != 0 || !same(back, x))
        CHECKF(0, "%s: %a -> '%s', reference '%s'", family, x, a, b);
}

static void test_families(void)
{
    for (int e = -1074; e <= 1023; e++) {
        double p = ldexp(1.0, e);
        check_family(p, "2^e");
        check_family(nextafter(p, 0), "2^e-");
        check_family(nextafter(p, INFINITY), "2^e+");
    }
    for (uint64_t c = 1; c <= 3000; c++)
        check_family(dfrom(c), "subnormal");
    for (int i = 1; i <= 3000; i++) {
        check_family((double)i, "integer");
        check_family((double)i / 100, "cents");
    }
    for (int k = -323; k <= 308; k++) {
        char s[16];
        snprintf(s, sizeof s, "1e%d", k);
        double p = strtod(s, NULL);
        check_family(p, "10^k");
        check_family(nextafter(p, 0), "10^k-");
        check_family(nextafter(p, INFINITY), "10^k+");
    }
}

static void test_put(void)
{
    char buf[64];
    memset(buf, '#', sizeof buf);
    CHECK(tw_decimal_put(101.25, buf, 6) == 6 && memcmp(buf, "101.25#", 7) == 0);
    memset(buf, '#', sizeof buf);
    CHECK(tw_decimal_put(101.25, buf, 5) == -ENOSPC && buf[0] == '#');
    CHECK(tw_decimal_put(-0.0, buf, 2) == 2 && memcmp(buf, "-0", 2) == 0);
    CHECK(tw_decimal_put(NAN, buf, 2) == -ENOSPC);
    CHECK(tw_decimal_put(0.001, buf, 0) == -ENOSPC);
    CHECK(tw_decimal_put(0.001, buf, 5) == 5 && memcmp(buf, "0.001", 5) == 0);
    CHECK(tw_decimal_put(1e20, buf, 21) == 21 && memcmp(buf, "100000000000000000000", 21) == 0);
    /* The same text as tw_double_to_decimal, written exactly where it fits. */
    uint64_t s = 7;
    for (int i = 0; i < 20000; i++) {
        double x = i & 1 ? random_price(&s) : random_bits_double(&s);
        char want[TW_DECIMAL_MAX], *got = malloc(TW_DECIMAL_MAX);
        size_t n = tw_double_to_decimal(x, want);
        int r = tw_decimal_put(x, got, n);
        CHECK(r == (int)n && memcmp(got, want, n) == 0);
        CHECK(tw_decimal_put(x, got, n - 1) == -ENOSPC);
        free(got);
    }
}

/* Inputs ending right before a PROT_NONE page: an eight-byte load past the
 * end would fault. */
static void test_guard_page(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(m != MAP_FAILED);
    REQUIRE(mprotect(m + pg, (size_t)pg, PROT_NONE) == 0);
    static const char *texts[] = {
        "1", "12", "1234567", "12345678", "123456789", "1234567.1", "12345678.12345678",
        "101.23456789012345", "0.00000000000000000000000000001", "-1234567890123456789012345",
        "1.", ".1", "-",
    };
    for (size_t i = 0; i < TW_ARRAY_SIZE(texts); i++) {
        size_t n = strlen(texts[i]);
        char *p = m + pg - n;
        memcpy(p, texts[i], n);
        double v, r;
        int rc = tw_decimal_to_double(p, n, &v);
        int rr = tw__decimal_to_double_ref(texts[i], n, &r);
        CHECKF(rc == rr && (rc != 0 || same(v, r)), "'%s'", texts[i]);
        int sc = tw_decimal_scan(p, n, &v);
        CHECK(sc == (rc == 0 ? (int)n : -1));
        /* Every prefix too. */
        for (size_t k = 0; k < n; k++) {
            p = m + pg - k;
            memcpy(p, texts[i], k);
            rc = tw_decimal_to_double(p, k, &v);
            rr = tw__decimal_to_double_ref(texts[i], k, &r);
            CHECKF(rc == rr && (rc != 0 || same(v, r)), "'%.*s'", (int)k, texts[i]);
        }
    }
    munmap(m, (size_t)pg * 2);
}

int main(void)
{
    test_parse_forms();
    test_scan();
    test_hard_cases();
    test_format_table();
    test_families();
    test_put();
    test_guard_page();
    return tw_check_done("common_decimal");
}
