/* Plug-ins the loader must refuse, one fault each (chosen by a define),
 * and OK: a good one.  Built as MODULE libraries by tests/kernel. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include <tickwire/kernel_abi.h>

struct st {
    int target;
    int pad;
};

static size_t sb(const double *p)
{
    (void)p;
#ifdef BIGSTATE
    return TW_KERNEL_MAX_STATE_BYTES + 1;
#else
    return sizeof(struct st);
#endif
}

static int init(void *s, const double *p)
{
    (void)p;
    memset(s, 0, sizeof(struct st));
    return 0;
}

#ifdef NONDET
static int counter;
#endif

static int step(void *s, double close)
{
    struct st *x = s;
    if (isnan(close))
        return x->target;
#ifdef NONDET
    counter++;
    x->target = counter % 7 == 0 ? 1 : counter % 7 == 3 ? -1 : x->target;
#elif defined(BADSTEP)
    x->target = close > 100.5 ? 2 : -1;
#else
    x->target = close > 100.0 ? 1 : -1;
#endif
    return x->target;
}

static const tw_kparam params[17] = {
    {.name = "n", .lo = 1, .hi = 10, .integer = 1, .dflt = 3},
#ifdef DUPPARAM
    {.name = "n", .lo = 1, .hi = 10, .integer = 1, .dflt = 3},
#elif defined(LOHI)
    {.name = "m", .lo = 10, .hi = 1, .integer = 0, .dflt = 3},
#elif defined(NONAME)
    {.name = NULL, .lo = 1, .hi = 10, .integer = 0, .dflt = 3},
#elif defined(DFLT)
    {.name = "m", .lo = 1, .hi = 10, .integer = 0, .dflt = 11},
#else
    {.name = "m", .lo = 0, .hi = 1, .integer = 0, .dflt = 0.5},
#endif
};

#ifndef NO_ENTRY
static const tw_kernel_def def = {
#ifdef BAD_ABI
    .abi = TW_KERNEL_ABI + 1,
#else
    .abi = TW_KERNEL_ABI,
#endif
    .name = "plug",
    .doc = "a test plug-in",
#ifdef MANYPARAMS
    .n_params = 17,
#else
    .n_params = 2,
#endif
    .params = params,
    .state_bytes = sb,
    .init = init,
#ifndef NOSTEP
    .step = step,
#endif
};

const tw_kernel_def *tw_kernel_entry(void) { return &def; }
#else
int tw_kernel_other(void);
int tw_kernel_other(void) { return 1; }
#endif
