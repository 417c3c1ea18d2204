/* The SOH scanners, and the one-pass decoder's index (SOH words, byte sum,
 * SOH count): every ISA variant this CPU has against a reference written
 * byte by byte, on random buffers of every length up to 300 with every SOH
 * position, and on buffers that start right after and end right before a
 * PROT_NONE page (a variant that reads one byte outside its range faults
 * here). */
#include "fix/fix_internal.h"
#include "fix_test.h"

static const tw_isa isas[] = { TW_ISA_SCALAR, TW_ISA_SSE2, TW_ISA_AVX2, TW_ISA_AVX512,
                               TW_ISA_AUTO };

static size_t ref_find(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] == TW_FIX_SOH)
            return i;
    return n;
}

static uint64_t ref_mask(const char *p, size_t n)
{
    uint64_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] == TW_FIX_SOH)
            m |= 1ull << i;
    return m;
}

static unsigned ref_sum(const char *p, size_t n)
{
    unsigned s = 0;
    for (size_t i = 0; i < n; i++)
        s += (unsigned char)p[i];
    return s % 256;
}

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static unsigned rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)rng;
}

/* tw__fix_index_isa(isa) on p[0..n), in two calls split at a multiple of
 * 64 (as the decoder's windows are), against the byte-by-byte reference;
 * the words past the last are left alone. */
static void check_index(tw_isa isa, const char *p, size_t n, const char *where)
{
    uint64_t m[8], want[8];
    size_t words = (n + 63) / 64;
    memset(want, 0, sizeof(want));
    uint64_t sum = 0, sohs = 0;
    for (size_t i = 0; i < n; i++) {
        want[i / 64] |= (uint64_t)(p[i] == TW_FIX_SOH) << (i % 64);
        sum += (unsigned char)p[i];
        sohs += p[i] == TW_FIX_SOH;
    }
    for (size_t k = 0; k < 8; k++)
        m[k] = 0xA5A5A5A5A5A5A5A5ull; /* marks the words the index must not touch */
    tw__fix_ix ix = { 7, 3 };         /* it adds to what is there */
    size_t split = n > 128 ? 64 * (rnd() % 2 + 1) : 0;
    tw__fix_index_fn f = tw__fix_index_isa(isa);
    if (split)
        f(p, split, m, &ix);
    f(p + split, n - split, m + split / 64, &ix);
    int ok = ix.sum == sum + 7 && ix.sohs == sohs + 3;
    for (size_t k = 0; k < 8; k++)
        ok &= k < words ? m[k] == want[k] : m[k] == 0xA5A5A5A5A5A5A5A5ull;
    if (!ok)
        fprintf(stderr, "%s: %s index n=%zu split %zu\n", where, tw_isa_name(isa), n, split);
    CHECK(ok);
}

static void check_all(const char *p, size_t n, const char *where)
{
    size_t want = ref_find(p, n);
    for (size_t k = 0; k < TW_ARRAY_SIZE(isas); k++)
        if (tw_cpu_has(isas[k]) && n <= 8 * 64)
            check_index(isas[k], p, n, where);
    for (size_t k = 0; k < TW_ARRAY_SIZE(isas); k++) {
        if (!tw_cpu_has(isas[k]))
            continue;
        size_t got = tw_fix_find_soh_isa(isas[k], p, n);
        if (got != want)
            fprintf(stderr, "%s: %s find n=%zu got %zu want %zu\n", where,
                    tw_isa_name(isas[k]), n, got, want);
        CHECK_EQ(got, want);
        if (n <= 64) {
            uint64_t gm = tw__fix_soh_mask_isa(isas[k], p, n);
            if (gm != ref_mask(p, n))
                fprintf(stderr, "%s: %s mask n=%zu\n", where, tw_isa_name(isas[k]), n);
            CHECK(gm == ref_mask(p, n));
        }
    }
    CHECK_EQ(tw_fix_find_soh(p, n), want);
    CHECK_EQ(tw_fix_checksum(p, n), ref_sum(p, n));
}

static void test_random(void)
{
    static char buf[512];
    for (int it = 0; it < 4000; it++) {
        size_t n = rnd() % 300;
        size_t off = rnd() % 64; /* every alignment */
        unsigned density = rnd() % 4;
        for (size_t i = 0; i < n; i++) {
            unsigned r = rnd();
            char c = (char)(r >> 8);
            /* Bytes that differ from SOH by one bit, and 0x81 (SOH with the
             * sign bit), are the ones a wrong compare would confuse. */
            static const char tricky[] = { 0x00, 0x03, 0x05, 0x09, 0x11, 0x21, 0x41, (char)0x81 };
            if (r % 7 == 0)
                c = tricky[r % 8];
            if (c == TW_FIX_SOH && density == 0)
                c = 0x02;
            if (density == 3 && r % 50 == 0)
                c = TW_FIX_SOH;
            buf[off + i] = c;
        }
        check_all(buf + off, n, "random");
    }
    /* Exactly one SOH at every position of every length up to 200. */
    for (size_t n = 0; n <= 200; n++) {
        memset(buf, 'a', n);
        check_all(buf, n, "none");
        for (size_t pos = 0; pos < n; pos++) {
            buf[pos] = TW_FIX_SOH;
            check_all(buf, n, "single");
            buf[pos] = (char)0x81;
            check_all(buf, n, "single-81");
            buf[pos] = 'a';
        }
    }
}

/* [PROT_NONE][page][PROT_NONE]: buffers at the very start and the very end
 * of the readable page. */
static void test_page_edges(void)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    char *map = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    CHECK(mprotect(map, pg, PROT_NONE) == 0);
    CHECK(mprotect(map + 2 * pg, pg, PROT_NONE) == 0);
    char *page = map + pg;
    memset(page, 'x', pg);
    for (size_t n = 0; n <= 260; n++) {
        char *end = page + pg - n; /* ends at the upper guard */
        char *start = page;        /* starts at the lower guard */
        check_all(end, n, "page end");
        check_all(start, n, "page start");
        if (n) {
            end[n - 1] = TW_FIX_SOH;
            check_all(end, n, "page end, SOH last");
            end[n - 1] = 'x';
            start[0] = TW_FIX_SOH;
            check_all(start, n, "page start, SOH first");
            start[0] = 'x';
        }
    }
    munmap(map, 3 * pg);
}

int main(void)
{
    test_random();
    test_page_edges();
    printf("SOH scan and index variants tested:");
    for (size_t k = 0; k + 1 < TW_ARRAY_SIZE(isas); k++)
        printf(" %s%s", tw_isa_name(isas[k]), tw_cpu_has(isas[k]) ? "" : "(absent)");
    printf("; active %s\n", tw_isa_name(tw_fix_isa_active()));
    return tw_check_done("fix simd");
}
