/* A test-only kernel plug-in whose step crashes (abort()) on the bar
 * whose index (bars fed since init, gaps included) is its param `at`:
 * the crash-loop rule of `tickwire trade` in mode = processes
 * (docs/crash.md).  Before that bar it flips its target every 16 bars
 * (it trades).  Its default `at` is past any probe or dataset. */
#include <stdlib.h>

#include "tickwire/kernel_abi.h"

struct crasher {
    double at;
    double bars;
};

static const tw_kparam crasher_params[] = {
    { .name = "at", .lo = 0, .hi = 1e15, .integer = 1, .dflt = 1e15 },
};

static size_t crasher_state_bytes(const double *p)
{
    (void)p;
    return sizeof(struct crasher);
}

static int crasher_init(void *state, const double *p)
{
    struct crasher *c = state;
    c->at = p[0];
    c->bars = 0;
    return 0;
}

static int crasher_step(void *state, double close)
{
    struct crasher *c = state;
    (void)close;
    if (c->bars == c->at)
        abort();
    c->bars += 1;
    return ((long long)c->bars / 16) % 2 ? 1 : -1;
}

static const tw_kernel_def crasher_def = {
    .abi = TW_KERNEL_ABI,
    .name = "crasher",
    .doc = "test only: aborts on bar `at`",
    .n_params = 1,
    .params = crasher_params,
    .state_bytes = crasher_state_bytes,
    .init = crasher_init,
    .step = crasher_step,
};

const tw_kernel_def *tw_kernel_entry(void) { return &crasher_def; }
