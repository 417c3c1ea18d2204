/* The parser's AVX-512 (VBMI, VBMI2) path.  Instead of looking at each
 * field's bytes one field at a time, every 64-byte block is classified at
 * once:
 *   - SOH, '=', digit and '0' masks from four compares;
 *   - field starts FS (the byte after each SOH) and, with one 64-bit add
 *     that carries from each start through the non-'=' bytes, the first
 *     '=' after each start (FE) and the tag bytes between them (T);
 *   - all syntax checks as mask algebra: a tag byte that is not a digit, an
 *     empty tag, a leading zero, an empty value, a field without '=';
 *   - the tag numbers of up to 16 fields by gathering the four bytes before
 *     each '=' (vpcompressb of the '=' positions, vpermt2b over this block
 *     and the previous one) and two multiply-adds (vpmaddubsw, vpmaddwd).
 * The per-field scalar work left is storing what the masks say.
 *
 * Anything this path does not handle quickly (a malformed message, a tag
 * of five or more digits, too many fields for the array) returns 1 and the
 * generic parser (parse.c) redoes the message, which gives the exact
 * result and error.  So both paths always agree; the tests and the fuzz
 * target check that they do. */
#include "fix_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi,bmi2,popcnt")))

/* Messages up to this long take this path (positions and tags on the
 * stack: a field is at least 4 bytes, so at most FAST_MAX_LEN / 4 of
 * them); longer ones are rare and go to the generic parser. */
#define FAST_MAX_LEN 4096
#define FAST_MAX_FIELDS (FAST_MAX_LEN / 4)

TARGET int tw__fix_parse_avx512(const char *msg, size_t len, tw_fix_msg *m)
{
    if (len == 0 || len > FAST_MAX_LEN || msg[len - 1] != TW_FIX_SOH)
        return 1;
    /* Phase 1 writes whole vectors at the current count, so each array has
     * a vector of slack past the most fields a message can hold. */
    uint32_t tags[FAST_MAX_FIELDS + 16] __attribute__((aligned(64)));
    uint16_t eqpos[FAST_MAX_FIELDS + 64] __attribute__((aligned(64)));
    uint16_t sohpos[FAST_MAX_FIELDS + 64] __attribute__((aligned(64)));
    const uint32_t cap = m->cap;
    uint32_t count = 0; /* '=' that end a tag, i.e. fields */
    uint32_t nsoh = 0;

    const __m512i soh = _mm512_set1_epi8(TW_FIX_SOH);
    const __m512i eqc = _mm512_set1_epi8('=');
    const __m512i zero_c = _mm512_set1_epi8('0');
    const __m512i ten = _mm512_set1_epi8(10);
    /* Byte i of iota is i: compressed by FE (or S) it lists the '=' (or
     * SOH) positions of the block. */
    const __m512i iota = _mm512_set_epi8(
        63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42,
        41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20,
        19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    /* Each of the 16 positions four times, then the offsets -4..-1 from
     * the '=' into the 128-byte window (previous block, this block). */
    const __m512i rep4 = _mm512_set_epi8(
        15, 15, 15, 15, 14, 14, 14, 14, 13, 13, 13, 13, 12, 12, 12, 12, 11, 11, 11, 11, 10, 10,
        10, 10, 9, 9, 9, 9, 8, 8, 8, 8, 7, 7, 7, 7, 6, 6, 6, 6, 5, 5, 5, 5, 4, 4, 4, 4, 3, 3, 3, 3,
        2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    const __m512i off4 = _mm512_set1_epi32(0x3F3E3D3C); /* 64-4 .. 64-1 */
    /* vpmaddubsw weights 10,1 per byte pair, then vpmaddwd 100,1. */
    const __m512i w10 = _mm512_set1_epi16(0x010A);
    const __m512i w100 = _mm512_set1_epi32(0x00010064);

    __m512i prev = _mm512_setzero_si512();   /* previous block's bytes */
    __m512i prev_t = _mm512_setzero_si512(); /* its tag-byte mask as bytes */
    uint64_t prev_tbits = 0;
    uint64_t s_carry = 1;  /* the message starts a field */
    uint64_t fe_carry = 0; /* an '=' in the last byte of the previous block */
    unsigned char add_carry = 0;
    uint64_t bad = 0;

    /* Phase 1, per 64-byte block: classify, check, and append the tag
     * numbers, '=' positions and SOH positions to the arrays. */
    for (size_t base = 0; base < len; base += 64) {
        size_t n = len - base < 64 ? len - base : 64;
        uint64_t valid = n == 64 ? ~0ull : (1ull << n) - 1;
        __m512i v = _mm512_maskz_loadu_epi8(_cvtu64_mask64(valid), msg + base);
        uint64_t S = _cvtmask64_u64(_mm512_cmpeq_epi8_mask(v, soh));
        uint64_t E = _cvtmask64_u64(_mm512_cmpeq_epi8_mask(v, eqc));
        uint64_t D = _cvtmask64_u64(_mm512_cmplt_epu8_mask(_mm512_sub_epi8(v, zero_c), ten));
        uint64_t Z = _cvtmask64_u64(_mm512_cmpeq_epi8_mask(v, zero_c));

        uint64_t FS = ((S << 1) | s_carry) & valid;
        s_carry = S >> 63;
        uint64_t M = ~E;
        unsigned long long sum;
        /* The carry from each start runs over the bytes that are not '='
         * and stops on the first '=' after it. */
        add_carry = _addcarry_u64(add_carry, M, FS, &sum);
        uint64_t FE = sum & E;
        uint64_t T = M & ~(uint64_t)sum;
        bad |= (T & ~D) | (FS & E) | (FS & Z) | (((FE << 1) | fe_carry) & S);
        fe_carry = FE >> 63;
        /* A tag of five digits or more: a run of five tag bytes ending in
         * this block (the previous block's bits shifted in). */
        uint64_t long_tag = T & ((T << 1) | (prev_tbits >> 63)) & ((T << 2) | (prev_tbits >> 62)) &
                            ((T << 3) | (prev_tbits >> 61)) & ((T << 4) | (prev_tbits >> 60));
        unsigned nf = (unsigned)_mm_popcnt_u64(FE);
        if (TW_UNLIKELY(bad | long_tag) || nf > 16 || cap - count < nf)
            return 1;

        __m512i tv = _mm512_movm_epi8(_cvtu64_mask64(T));
        /* Positions as 16-bit message offsets: a block holds at most 16
         * fields (each is at least 4 bytes), so 16 lanes are enough. */
        __m256i vbase = _mm256_set1_epi16((short)base);
        if (nf) {
            /* Tag numbers of the nf fields whose '=' is in this block: the
             * four bytes before each '=', non-tag bytes zeroed. */
            __m512i pos = _mm512_maskz_compress_epi8(_cvtu64_mask64(FE), iota);
            __m512i idx = _mm512_add_epi8(_mm512_permutexvar_epi8(rep4, pos), off4);
            __m512i win = _mm512_permutex2var_epi8(prev, idx, v);
            __m512i wt = _mm512_permutex2var_epi8(prev_t, idx, tv);
            __m512i dig = _mm512_and_si512(_mm512_sub_epi8(win, zero_c), wt);
            __m512i quads = _mm512_madd_epi16(_mm512_maddubs_epi16(dig, w10), w100);
            _mm512_storeu_si512(tags + count, quads);
            _mm256_storeu_si256((__m256i *)(void *)(eqpos + count),
                                _mm256_add_epi16(_mm256_cvtepu8_epi16(_mm512_castsi512_si128(pos)), vbase));
            count += nf;
        }
        unsigned ns = (unsigned)_mm_popcnt_u64(S);
        if (ns) {
            if (TW_UNLIKELY(nsoh + ns > count || ns > 16))
                return 1; /* an SOH before its field's '=': checked above too */
            __m512i spos = _mm512_maskz_compress_epi8(_cvtu64_mask64(S), iota);
            _mm256_storeu_si256((__m256i *)(void *)(sohpos + nsoh),
                                _mm256_add_epi16(_mm256_cvtepu8_epi16(_mm512_castsi512_si128(spos)), vbase));
            nsoh += ns;
        }
        prev = v;
        prev_t = tv;
        prev_tbits = T;
    }
    if (nsoh != count || add_carry || count == 0)
        return 1;
    uint32_t i = 2;
    if (count <= 2 || tags[2] != 35)
        for (i = 0; i < count && tags[i] != 35; i++)
            ;
    if (i >= count)
        return 1;

    /* Phase 2: eight fields per step, {tag, len, val} records built in
     * registers and stored with a mask (never past count). */
    const __m512i vmsg = _mm512_set1_epi64((long long)(uintptr_t)(msg + 1));
    const __m512i ones = _mm512_set1_epi64(1);
    const __m512i ilo = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
    const __m512i ihi = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
    tw_fix_field *f = m->fields;
    for (uint32_t k = 0; k < count; k += 8) {
        __m512i eq = _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *)(const void *)(eqpos + k)));
        __m512i so = _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *)(const void *)(sohpos + k)));
        __m512i tg = _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)(const void *)(tags + k)));
        __m512i ln = _mm512_sub_epi64(_mm512_sub_epi64(so, eq), ones);
        __m512i tl = _mm512_or_si512(tg, _mm512_slli_epi64(ln, 32));
        __m512i vl = _mm512_add_epi64(eq, vmsg);
        uint32_t r = count - k;
        unsigned rlo = r < 4 ? r : 4, rhi = r < 4 ? 0 : (r - 4 < 4 ? r - 4 : 4);
        _mm512_mask_storeu_epi64(f + k, (__mmask8)((1u << (2 * rlo)) - 1),
                                 _mm512_permutex2var_epi64(tl, ilo, vl));
        _mm512_mask_storeu_epi64(f + k + 4, (__mmask8)((1u << (2 * rhi)) - 1),
                                 _mm512_permutex2var_epi64(tl, ihi, vl));
    }
    TW_STATIC_ASSERT(sizeof(tw_fix_field) == 16, "records are stored as two qwords");
    m->count = count;
    m->msg_type = msg + eqpos[i] + 1;
    m->msg_type_len = (uint32_t)(sohpos[i] - eqpos[i] - 1);
    return 0;
}

#else

int tw__fix_parse_avx512(const char *msg, size_t len, tw_fix_msg *m)
{
    (void)msg;
    (void)len;
    (void)m;
    return 1;
}

#endif
