/* The exact kernel on AVX2: 4 lanes.  Compiled with -mavx2 (no -mfma: the
 * kernel must not contract, and -ffp-contract=off is global anyway); only
 * called after tw_isa_supported(TW_ISA_AVX2) said yes. */
#include <immintrin.h>

#define SFX(name) name##_avx2
#define VD __m256d
#define VL 4
#define V_LOAD(p) _mm256_loadu_pd(p)
#define V_STORE(p, v) _mm256_storeu_pd((p), (v))
#define V_BCAST(p) _mm256_broadcast_sd(p)
#define V_SET1(x) _mm256_set1_pd(x)
#define V_ZERO() _mm256_setzero_pd()
#define V_ADD(a, b) _mm256_add_pd((a), (b))
#define V_SUB(a, b) _mm256_sub_pd((a), (b))
#define V_MUL(a, b) _mm256_mul_pd((a), (b))
#define V_DIV(a, b) _mm256_div_pd((a), (b))
#define V_GT0(v) ((unsigned)_mm256_movemask_pd(_mm256_cmp_pd((v), _mm256_setzero_pd(), _CMP_GT_OQ)))
#define V_LT0(v) ((unsigned)_mm256_movemask_pd(_mm256_cmp_pd((v), _mm256_setzero_pd(), _CMP_LT_OQ)))
#define V_ADD_POS(a, p, w) _mm256_add_pd((a), _mm256_and_pd((p), _mm256_cmp_pd((w), _mm256_setzero_pd(), _CMP_GT_OQ)))
#define V_ADD_IFGE(a, p, w, c) _mm256_add_pd((a), _mm256_and_pd((p), _mm256_cmp_pd((w), (c), _CMP_GE_OQ)))

#include "kernel/exact_impl.h"
