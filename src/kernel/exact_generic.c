/* The exact kernel without vector instructions (one lane); the fallback on
 * CPUs with neither AVX2 nor AVX-512, and TW_ISA_SCALAR. */
#include <stdint.h>

#define SFX(name) name##_generic
#define VD double
#define VL 1
#define V_LOAD(p) (*(p))
#define V_STORE(p, v) (*(p) = (v))
#define V_BCAST(p) (*(p))
#define V_SET1(x) (x)
#define V_ZERO() 0.0
#define V_ADD(a, b) ((a) + (b))
#define V_SUB(a, b) ((a) - (b))
#define V_MUL(a, b) ((a) * (b))
#define V_DIV(a, b) ((a) / (b))
#define V_GT0(v) ((unsigned)((v) > 0.0))
#define V_LT0(v) ((unsigned)((v) < 0.0))
#define V_ADD_POS(a, p, w) ((w) > 0.0 ? (a) + (p) : (a))
#define V_ADD_IFGE(a, p, w, c) ((w) >= (c) ? (a) + (p) : (a))

#include "kernel/exact_impl.h"
