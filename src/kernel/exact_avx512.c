/* The exact kernel on AVX-512F: 8 lanes.  Compiled with -mavx512f; only
 * called after tw_isa_supported(TW_ISA_AVX512) said yes.  AVX-512F has FMA
 * instructions, so the separate mul/add intrinsics below plus the global
 * -ffp-contract=off are what keep every product rounded on its own. */
#include <immintrin.h>

#define SFX(name) name##_avx512
#define VD __m512d
#define VL 8
#define V_LOAD(p) _mm512_loadu_pd(p)
#define V_STORE(p, v) _mm512_storeu_pd((p), (v))
#define V_BCAST(p) _mm512_set1_pd(*(p))
#define V_SET1(x) _mm512_set1_pd(x)
#define V_ZERO() _mm512_setzero_pd()
#define V_ADD(a, b) _mm512_add_pd((a), (b))
#define V_SUB(a, b) _mm512_sub_pd((a), (b))
#define V_MUL(a, b) _mm512_mul_pd((a), (b))
#define V_DIV(a, b) _mm512_div_pd((a), (b))
#define V_GT0(v) ((unsigned)_mm512_cmp_pd_mask((v), _mm512_setzero_pd(), _CMP_GT_OQ))
#define V_LT0(v) ((unsigned)_mm512_cmp_pd_mask((v), _mm512_setzero_pd(), _CMP_LT_OQ))
#define V_ADD_POS(a, p, w) _mm512_mask_add_pd((a), _mm512_cmp_pd_mask((w), _mm512_setzero_pd(), _CMP_GT_OQ), (a), (p))
#define V_ADD_IFGE(a, p, w, c) _mm512_mask_add_pd((a), _mm512_cmp_pd_mask((w), (c), _CMP_GE_OQ), (a), (p))

#include "kernel/exact_impl.h"
