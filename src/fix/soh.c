/* SOH scanning and CheckSum summing, one variant per ISA (scalar SWAR,
 * SSE2, AVX2, AVX-512BW), chosen once per process from CPUID.  Every
 * variant reads only inside [p, p + n): tails are finished with masked
 * loads (AVX-512) or a copy into a stack block, never with a wide load
 * that could cross into an unmapped page. */
#include <pthread.h>

#include "fix_internal.h"

#if defined(__x86_64__)
#define TW_FIX_X86 1
#include <immintrin.h>
#endif

/* ---- scalar ------------------------------------------------------------ */

static size_t find_scalar(const char *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t z = tw__zero_bytes(tw__load64(p + i) ^ (TW__ONES * 0x01));
        if (z)
            return i + (size_t)(__builtin_ctzll(z) >> 3);
    }
    for (; i < n; i++)
        if (p[i] == TW_FIX_SOH)
            return i;
    return n;
}

static uint64_t mask_scalar(const char *p, size_t n)
{
    uint64_t m = 0;
    for (size_t i = 0; i < n; i++)
        m |= (uint64_t)(p[i] == TW_FIX_SOH) << i;
    return m;
}

/* The one-pass decoder's index (fix_internal.h, tw__fix_index_fn), byte
 * by byte: the reference the SIMD variants are tested against. */
static void index_scalar(const char *p, size_t n, uint64_t *m, tw__fix_ix *ix)
{
    uint64_t sum = 0, sohs = 0;
    for (size_t i = 0; i < n; i += 64) {
        size_t r = n - i < 64 ? n - i : 64;
        uint64_t soh = 0;
        for (size_t j = 0; j < r; j++) {
            unsigned char c = (unsigned char)p[i + j];
            soh |= (uint64_t)(c == TW_FIX_SOH) << j;
            sum += c;
            sohs += c == TW_FIX_SOH;
        }
        m[i / 64] = soh;
    }
    ix->sum += sum;
    ix->sohs += sohs;
}

#ifdef TW_FIX_X86

/* Byte j of win + r is 0xFF iff j >= 64 - r: the last r bytes of a block
 * loaded at p + n - 64. */
static const unsigned char tail_win[128] __attribute__((aligned(64))) = {
    [64] = 0xFF, [65] = 0xFF, [66] = 0xFF, [67] = 0xFF, [68] = 0xFF, [69] = 0xFF, [70] = 0xFF,
    [71] = 0xFF, [72] = 0xFF, [73] = 0xFF, [74] = 0xFF, [75] = 0xFF, [76] = 0xFF, [77] = 0xFF,
    [78] = 0xFF, [79] = 0xFF, [80] = 0xFF, [81] = 0xFF, [82] = 0xFF, [83] = 0xFF, [84] = 0xFF,
    [85] = 0xFF, [86] = 0xFF, [87] = 0xFF, [88] = 0xFF, [89] = 0xFF, [90] = 0xFF, [91] = 0xFF,
    [92] = 0xFF, [93] = 0xFF, [94] = 0xFF, [95] = 0xFF, [96] = 0xFF, [97] = 0xFF, [98] = 0xFF,
    [99] = 0xFF, [100] = 0xFF, [101] = 0xFF, [102] = 0xFF, [103] = 0xFF, [104] = 0xFF,
    [105] = 0xFF, [106] = 0xFF, [107] = 0xFF, [108] = 0xFF, [109] = 0xFF, [110] = 0xFF,
    [111] = 0xFF, [112] = 0xFF, [113] = 0xFF, [114] = 0xFF, [115] = 0xFF, [116] = 0xFF,
    [117] = 0xFF, [118] = 0xFF, [119] = 0xFF, [120] = 0xFF, [121] = 0xFF, [122] = 0xFF,
    [123] = 0xFF, [124] = 0xFF, [125] = 0xFF, [126] = 0xFF, [127] = 0xFF,
};

/* ---- SSE2 (baseline on x86-64) ----------------------------------------- */

__attribute__((target("sse2"))) static size_t find_sse2(const char *p, size_t n)
{
    const __m128i soh = _mm_set1_epi8(TW_FIX_SOH);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, soh));
        if (m)
            return i + (size_t)__builtin_ctz(m);
    }
    return i + find_scalar(p + i, n - i);
}

__attribute__((target("sse2"))) static uint64_t mask_sse2(const char *p, size_t n)
{
    char blk[64] __attribute__((aligned(16)));
    if (n < 64) {
        memset(blk, 0, sizeof(blk));
        memcpy(blk, p, n);
        p = blk;
    }
    const __m128i soh = _mm_set1_epi8(TW_FIX_SOH);
    uint64_t m = 0;
    for (int k = 0; k < 4; k++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
        m |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, soh)) << (16 * k);
    }
    return m;
}

/* The SOH mask of the 64 bytes at q (shifted right by `shift`, for a
 * block loaded to end at the message's end) and their sum, counting only
 * the bytes where keep (64 bytes) is 0xFF when keep is not NULL. */
__attribute__((target("sse2"))) static inline uint64_t block_sse2(const char *q,
                                                                 const unsigned char *keep,
                                                                 unsigned shift, __m128i *acc)
{
    const __m128i soh = _mm_set1_epi8(TW_FIX_SOH), zero = _mm_setzero_si128();
    uint64_t s = 0;
    for (int k = 0; k < 4; k++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(q + 16 * k));
        s |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, soh)) << (16 * k);
        if (keep)
            v = _mm_and_si128(v, _mm_loadu_si128((const __m128i *)(const void *)(keep + 16 * k)));
        *acc = _mm_add_epi64(*acc, _mm_sad_epu8(v, zero));
    }
    return s >> shift;
}

/* The bits of a word, without POPCNT (SSE2 is older than it). */
static inline unsigned bits_swar(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
    return (unsigned)((x * 0x0101010101010101ull) >> 56);
}

/* Each variant reads only [p, p + n): a last partial block is loaded so
 * that it ends at p + n (overlapping the block before it) when n >= 64,
 * or copied into a zeroed stack block when n < 64 (a zero byte is no SOH
 * and adds nothing to the sum). */
__attribute__((target("sse2"))) static void index_sse2(const char *p, size_t n, uint64_t *m,
                                                      tw__fix_ix *ix)
{
    __m128i acc = _mm_setzero_si128();
    uint64_t sohs = 0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        uint64_t s = block_sse2(p + i, NULL, 0, &acc);
        *m++ = s;
        sohs += bits_swar(s);
    }
    if (i < n) {
        size_t r = n - i;
        uint64_t s;
        if (n >= 64) {
            s = block_sse2(p + n - 64, tail_win + r, (unsigned)(64 - r), &acc);
        } else {
            char tmp[64] __attribute__((aligned(16)));
            memset(tmp, 0, sizeof(tmp));
            memcpy(tmp, p + i, r);
            s = block_sse2(tmp, NULL, 0, &acc);
        }
        *m = s;
        sohs += bits_swar(s);
    }
    ix->sohs += sohs;
    ix->sum += (uint64_t)_mm_cvtsi128_si64(acc) + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc));
}

/* ---- AVX2 -------------------------------------------------------------- */

__attribute__((target("avx2"))) static size_t find_avx2(const char *p, size_t n)
{
    const __m256i soh = _mm256_set1_epi8(TW_FIX_SOH);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
        unsigned m = (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, soh));
        if (m)
            return i + (size_t)__builtin_ctz(m);
    }
    return i + find_sse2(p + i, n - i);
}

__attribute__((target("avx2"))) static uint64_t mask_avx2(const char *p, size_t n)
{
    char blk[64] __attribute__((aligned(32)));
    if (n < 64) {
        memset(blk, 0, sizeof(blk));
        memcpy(blk, p, n);
        p = blk;
    }
    const __m256i soh = _mm256_set1_epi8(TW_FIX_SOH);
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)p);
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
    uint64_t lo = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, soh));
    uint64_t hi = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, soh));
    return lo | hi << 32;
}


__attribute__((target("avx2"))) static inline uint64_t block_avx2(const char *q,
                                                                 const unsigned char *keep,
                                                                 unsigned shift, __m256i *acc)
{
    const __m256i soh = _mm256_set1_epi8(TW_FIX_SOH), zero = _mm256_setzero_si256();
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)q);
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(q + 32));
    uint64_t s = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, soh)) |
                 (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, soh)) << 32;
    if (keep) {
        a = _mm256_and_si256(a, _mm256_loadu_si256((const __m256i *)(const void *)keep));
        b = _mm256_and_si256(b, _mm256_loadu_si256((const __m256i *)(const void *)(keep + 32)));
    }
    *acc = _mm256_add_epi64(*acc, _mm256_add_epi64(_mm256_sad_epu8(a, zero), _mm256_sad_epu8(b, zero)));
    return s >> shift;
}

/* With POPCNT (tw__fix_isa_v3 says the CPU has it whenever this variant
 * is chosen). */
__attribute__((target("avx2,popcnt"))) static void index_avx2(const char *p, size_t n, uint64_t *m,
                                                             tw__fix_ix *ix)
{
    __m256i acc = _mm256_setzero_si256();
    uint64_t sohs = 0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        uint64_t s = block_avx2(p + i, NULL, 0, &acc);
        *m++ = s;
        sohs += (uint64_t)__builtin_popcountll(s);
    }
    if (i < n) {
        size_t r = n - i;
        uint64_t s;
        if (n >= 64) {
            s = block_avx2(p + n - 64, tail_win + r, (unsigned)(64 - r), &acc);
        } else {
            char tmp[64] __attribute__((aligned(32)));
            memset(tmp, 0, sizeof(tmp));
            memcpy(tmp, p + i, r);
            s = block_avx2(tmp, NULL, 0, &acc);
        }
        *m = s;
        sohs += (uint64_t)__builtin_popcountll(s);
    }
    ix->sohs += sohs;
    __m128i x = _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    ix->sum += (uint64_t)_mm_cvtsi128_si64(x) + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(x, x));
}

/* ---- AVX-512BW --------------------------------------------------------- */

/* Masked loads suppress faults on the masked-off bytes, so the tail needs
 * no copy and still never touches the next page. */
__attribute__((target("avx512f,avx512bw"))) static size_t find_avx512(const char *p, size_t n)
{
    const __m512i soh = _mm512_set1_epi8(TW_FIX_SOH);
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512i v = _mm512_loadu_si512((const void *)(p + i));
        uint64_t m = _mm512_cmpeq_epi8_mask(v, soh);
        if (m)
            return i + (size_t)__builtin_ctzll(m);
    }
    if (i < n) {
        __mmask64 k = _cvtu64_mask64(~0ull >> (64 - (n - i)));
        __m512i v = _mm512_maskz_loadu_epi8(k, (const void *)(p + i));
        uint64_t m = _mm512_mask_cmpeq_epi8_mask(k, v, soh);
        if (m)
            return i + (size_t)__builtin_ctzll(m);
    }
    return n;
}

/* Masked loads: the tail needs neither a copy nor an overlapping load. */
__attribute__((target("avx512f,avx512bw,popcnt"))) static void index_avx512(const char *p, size_t n,
                                                                           uint64_t *m,
                                                                           tw__fix_ix *ix)
{
    const __m512i soh = _mm512_set1_epi8(TW_FIX_SOH), zero = _mm512_setzero_si512();
    __m512i acc = _mm512_setzero_si512();
    uint64_t sohs = 0;
    for (size_t i = 0; i < n; i += 64) {
        __mmask64 k = _cvtu64_mask64(n - i >= 64 ? ~0ull : ~0ull >> (64 - (n - i)));
        __m512i v = _mm512_maskz_loadu_epi8(k, (const void *)(p + i));
        uint64_t s = _cvtmask64_u64(_mm512_cmpeq_epi8_mask(v, soh));
        *m++ = s;
        sohs += (uint64_t)__builtin_popcountll(s);
        acc = _mm512_add_epi64(acc, _mm512_sad_epu8(v, zero));
    }
    ix->sohs += sohs;
    ix->sum += (uint64_t)_mm512_reduce_add_epi64(acc);
}

__attribute__((target("avx512f,avx512bw"))) static uint64_t mask_avx512(const char *p, size_t n)
{
    const __m512i soh = _mm512_set1_epi8(TW_FIX_SOH);
    if (n >= 64)
        return _mm512_cmpeq_epi8_mask(_mm512_loadu_si512((const void *)p), soh);
    if (n == 0)
        return 0;
    __mmask64 k = _cvtu64_mask64(~0ull >> (64 - n));
    __m512i v = _mm512_maskz_loadu_epi8(k, (const void *)p);
    return _mm512_mask_cmpeq_epi8_mask(k, v, soh);
}

#endif /* TW_FIX_X86 */

/* ---- dispatch ---------------------------------------------------------- */

/* The ISA AUTO resolves to: the best the CPU has, capped by TW_FIX_ISA
 * (scalar, sse2, avx2, avx512) so that the slower variants can be
 * benchmarked and tested on a machine that has the faster ones.  An
 * explicit ISA the CPU lacks runs as scalar. */
static tw_isa resolve(tw_isa isa)
{
    if (isa != TW_ISA_AUTO)
        return tw_cpu_has(isa) ? isa : TW_ISA_SCALAR;
    tw_isa cap = TW_ISA_AUTO;
    const char *env = getenv("TW_FIX_ISA");
    if (env && *env && tw_isa_parse(env, &cap) != 0)
        cap = TW_ISA_SCALAR; /* a name we do not know: the safe choice */
    static const tw_isa order[] = { TW_ISA_AVX512, TW_ISA_AVX2, TW_ISA_SSE2 };
    for (size_t i = 0; i < TW_ARRAY_SIZE(order); i++) {
        if (cap != TW_ISA_AUTO && cap != order[i])
            continue;
        if (tw_cpu_has(order[i]))
            return order[i];
        if (cap != TW_ISA_AUTO)
            break;
    }
    return TW_ISA_SCALAR;
}

typedef size_t (*find_fn)(const char *, size_t);

static find_fn find_for(tw_isa isa)
{
    switch (isa) {
#ifdef TW_FIX_X86
    case TW_ISA_SSE2: return find_sse2;
    case TW_ISA_AVX2: return find_avx2;
    case TW_ISA_AVX512: return find_avx512;
#endif
    default: return find_scalar;
    }
}

static tw__fix_mask_fn mask_for(tw_isa isa)
{
    switch (isa) {
#ifdef TW_FIX_X86
    case TW_ISA_SSE2: return mask_sse2;
    case TW_ISA_AVX2: return mask_avx2;
    case TW_ISA_AVX512: return mask_avx512;
#endif
    default: return mask_scalar;
    }
}

/* The choice, made once per process.  choose_isa() runs under
 * pthread_once, from the constructor below (before main(), so the hot path
 * finds everything set) or from the first call that finds it unset (a
 * call from another library's constructor).  The pointers are published
 * with release stores; the hot path reads them with acquire loads, which
 * cost nothing on x86. */
static tw__fix_index_fn index_for(tw_isa isa)
{
    switch (isa) {
#ifdef TW_FIX_X86
    case TW_ISA_SSE2: return index_sse2;
    case TW_ISA_AVX2: return tw__fix_isa_v3(isa) ? index_avx2 : index_sse2;
    case TW_ISA_AVX512: return tw__fix_isa_v3(isa) ? index_avx512 : index_sse2;
#endif
    default: return index_scalar;
    }
}

tw__fix_index_fn tw__fix_index_isa(tw_isa isa)
{
    return index_for(resolve(isa));
}

int tw__fix_isa_v3(tw_isa isa)
{
#ifdef TW_FIX_X86
    if (isa != TW_ISA_AVX2 && isa != TW_ISA_AVX512)
        return 0;
    return tw_cpu_has(isa) && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
           __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt");
#else
    (void)isa;
    return 0;
#endif
}

static tw_isa active_isa;
int tw__fix_fast_parse;
int tw__fix_v3;
static int use_avx512_sum; /* CheckSum with 64-byte vpsadbw */
static find_fn active_find;
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
static uint64_t mask_first(const char *p, size_t n);
tw__fix_mask_fn tw__fix_soh_mask = mask_first;
static void index_first(const char *p, size_t n, uint64_t *m, tw__fix_ix *ix);
tw__fix_index_fn tw__fix_index = index_first;

static void choose_isa(void)
{
    tw_isa isa = resolve(TW_ISA_AUTO);
#ifdef TW_FIX_X86
    /* The block-at-a-time parser needs VBMI/VBMI2 on top of AVX-512BW. */
    tw__fix_fast_parse = isa == TW_ISA_AVX512 && __builtin_cpu_supports("avx512vbmi") &&
                         __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("bmi") &&
                         __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt");
#endif
    use_avx512_sum = isa == TW_ISA_AVX512;
    tw__fix_v3 = tw__fix_isa_v3(isa);
    active_isa = isa;
    /* release: pairs with the acquire loads in tw_fix_find_soh(),
     * mask_first() and the parser's load of tw__fix_soh_mask (the flags
     * above are plain ints written before it: a reader that still sees the
     * old pointer takes the lazy path, which waits in pthread_once). */
    __atomic_store_n(&tw__fix_soh_mask, mask_for(isa), __ATOMIC_RELEASE);
    __atomic_store_n(&tw__fix_index, index_for(isa), __ATOMIC_RELEASE);
    __atomic_store_n(&active_find, find_for(isa), __ATOMIC_RELEASE);
}

void tw__fix_isa_init(void)
{
    pthread_once(&isa_once, choose_isa);
}

__attribute__((constructor)) static void choose_isa_at_start(void)
{
    tw__fix_isa_init();
}

static uint64_t mask_first(const char *p, size_t n)
{
    tw__fix_isa_init();
    /* acquire: pairs with the release store in choose_isa() */
    return __atomic_load_n(&tw__fix_soh_mask, __ATOMIC_ACQUIRE)(p, n);
}

static void index_first(const char *p, size_t n, uint64_t *m, tw__fix_ix *ix)
{
    tw__fix_isa_init();
    /* acquire: pairs with the release store in choose_isa() */
    __atomic_load_n(&tw__fix_index, __ATOMIC_ACQUIRE)(p, n, m, ix);
}

tw_isa tw_fix_isa_active(void)
{
    tw__fix_isa_init();
    return active_isa;
}

size_t tw_fix_find_soh(const char *p, size_t n)
{
    /* acquire: pairs with the release store in choose_isa() */
    find_fn f = __atomic_load_n(&active_find, __ATOMIC_ACQUIRE);
    if (TW_UNLIKELY(!f)) {
        tw__fix_isa_init();
        f = __atomic_load_n(&active_find, __ATOMIC_ACQUIRE);
    }
    return f(p, n);
}

size_t tw_fix_find_soh_isa(tw_isa isa, const char *p, size_t n)
{
    return find_for(resolve(isa))(p, n);
}

uint64_t tw__fix_soh_mask_isa(tw_isa isa, const char *p, size_t n)
{
    return mask_for(resolve(isa))(p, n);
}

tw_isa tw__fix_resolve_isa(tw_isa isa)
{
    return resolve(isa);
}

/* ---- CheckSum ------------------------------------------------------------ */

#ifdef TW_FIX_X86
/* 64 bytes per step; the tail goes through a masked load. */
__attribute__((target("avx512f,avx512bw"))) static unsigned checksum_avx512(const char *buf, size_t n)
{
    __m512i acc = _mm512_setzero_si512();
    const __m512i zero = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_loadu_si512((const void *)(buf + i)), zero));
    if (i < n) {
        __mmask64 k = _cvtu64_mask64(~0ull >> (64 - (n - i)));
        acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_maskz_loadu_epi8(k, (const void *)(buf + i)), zero));
    }
    return (unsigned)(_mm512_reduce_add_epi64(acc) & 0xFF);
}
#endif

unsigned tw_fix_checksum(const char *buf, size_t n)
{
    uint64_t sum = 0;
    size_t i = 0;
#ifdef TW_FIX_X86
    /* relaxed: a flag set once in choose_isa() before the release stores;
     * a caller that still reads 0 just sums with SSE2, which is correct. */
    if (__atomic_load_n(&use_avx512_sum, __ATOMIC_RELAXED))
        return checksum_avx512(buf, n);
    /* psadbw against zero adds 8 bytes into each 64-bit lane; SSE2 is part
     * of x86-64, so no dispatch is needed. */
    __m128i acc0 = _mm_setzero_si128(), acc1 = _mm_setzero_si128();
    const __m128i zero = _mm_setzero_si128();
    for (; i + 32 <= n; i += 32) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(buf + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(buf + i + 16));
        acc0 = _mm_add_epi64(acc0, _mm_sad_epu8(a, zero));
        acc1 = _mm_add_epi64(acc1, _mm_sad_epu8(b, zero));
    }
    /* The tail: the 16 bytes that end at buf + n, those already summed
     * masked off (tail_win), rather than a loop per byte. */
    if (n >= 16 && i < n) {
        size_t r = n - i;
        if (r > 16) {
            __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(buf + i));
            acc0 = _mm_add_epi64(acc0, _mm_sad_epu8(a, zero));
            i += 16;
            r -= 16;
        }
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(buf + n - 16));
        a = _mm_and_si128(a, _mm_loadu_si128((const __m128i *)(const void *)(tail_win + 48 + r)));
        acc1 = _mm_add_epi64(acc1, _mm_sad_epu8(a, zero));
        i = n;
    }
    acc0 = _mm_add_epi64(acc0, acc1);
    sum = (uint64_t)_mm_cvtsi128_si64(acc0) + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(acc0, acc0));
#endif
    for (; i + 8 <= n; i += 8) {
        uint64_t w = tw__load64(buf + i);
        /* Add byte pairs, then fold: no lane overflows with 8 bytes. */
        w = (w & 0x00FF00FF00FF00FFull) + ((w >> 8) & 0x00FF00FF00FF00FFull);
        sum += (w * 0x0001000100010001ull) >> 48;
    }
    for (; i < n; i++)
        sum += (unsigned char)buf[i];
    return (unsigned)(sum & 0xFF);
}
