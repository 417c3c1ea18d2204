/* The project's instruction-set enum: names and what this CPU has.  Each
 * part decides which of its variants exist (tw_isa_supported for the
 * kernel, tw_fix_find_soh_isa for the FIX scanner); this says only what
 * the processor can run. */
#include <errno.h>
#include <string.h>

#include "tickwire/common.h"

const char *tw_isa_name(tw_isa isa)
{
    switch (isa) {
    case TW_ISA_AUTO: return "auto";
    case TW_ISA_SCALAR: return "scalar";
    case TW_ISA_SSE2: return "sse2";
    case TW_ISA_AVX2: return "avx2";
    case TW_ISA_AVX512: return "avx512";
    }
    return "?";
}

int tw_isa_parse(const char *name, tw_isa *out)
{
    static const tw_isa all[] = { TW_ISA_AUTO, TW_ISA_SCALAR, TW_ISA_SSE2, TW_ISA_AVX2,
                                  TW_ISA_AVX512 };
    for (size_t i = 0; i < TW_ARRAY_SIZE(all); i++) {
        if (strcmp(name, tw_isa_name(all[i])) == 0) {
            *out = all[i];
            return 0;
        }
    }
    return -EINVAL;
}

int tw_cpu_has(tw_isa isa)
{
    switch (isa) {
    case TW_ISA_AUTO:
    case TW_ISA_SCALAR:
        return 1;
#if defined(__x86_64__) || defined(__i386__)
    case TW_ISA_SSE2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("sse2") ? 1 : 0;
    case TW_ISA_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") ? 1 : 0;
    case TW_ISA_AVX512:
        /* F and BW: what every AVX-512 variant in the project needs at
         * least (a part needing more, like VBMI2, checks it itself). */
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") ? 1 : 0;
#else
    case TW_ISA_SSE2:
    case TW_ISA_AVX2:
    case TW_ISA_AVX512:
        return 0;
#endif
    }
    return 0;
}
