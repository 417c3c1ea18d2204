/* libFuzzer target: the loader's checks of a kernel definition
 * (tw_kernel_check_def, tw_kernel_probe, tw_kernel_check_combo) over a
 * definition built in memory from the fuzz bytes: its ABI, name, params
 * (names, bounds, integer flags, defaults as raw doubles: NaN and
 * infinities included), which functions are present, what state_bytes
 * returns and what init and step answer.  The functions are benign; the
 * checks must refuse what is wrong with a message and never crash. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tickwire/kernel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct rd {
    const uint8_t *p;
    size_t n;
};

static uint8_t u8(struct rd *r)
{
    if (r->n == 0)
        return 0;
    r->n--;
    return *r->p++;
}

static double f64(struct rd *r)
{
    uint8_t b[8] = {0};
    for (int i = 0; i < 8; i++)
        b[i] = u8(r);
    double d;
    memcpy(&d, b, sizeof(d));
    return d;
}

/* A string of up to 70 bytes from the input (NULL when the length byte is
 * 255), kept in pool. */
static const char *str(struct rd *r, char *pool, size_t *used)
{
    uint8_t len = u8(r);
    if (len == 255)
        return NULL;
    len %= 71;
    char *s = pool + *used;
    for (uint8_t i = 0; i < len; i++)
        s[i] = (char)u8(r);
    s[len] = '\0';
    *used += (size_t)len + 1;
    return s;
}

/* What the benign functions answer, set from the input. */
static size_t g_state_bytes;
static int g_init_rc, g_step_mode;

static size_t f_state_bytes(const double *p)
{
    (void)p;
    return g_state_bytes;
}

static int f_init(void *s, const double *p)
{
    (void)p;
    memset(s, 0, g_state_bytes < 64 ? g_state_bytes : 64);
    return g_init_rc;
}

static int f_step(void *s, double close)
{
    unsigned char *b = s;
    (void)close;
    b[0]++;
    switch (g_step_mode) {
    case 0:
        return 0;
    case 1:
        return b[0] % 3 - 1; /* deterministic: a counter in the state */
    case 2:
        return b[0] == 200 ? 2 : 1; /* a bad value after some bars */
    default:
        return -1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rd r = {data, size};
    char pool[(TW_KERNEL_MAX_PARAMS + 2) * 72];
    size_t used = 0;
    tw_kparam params[TW_KERNEL_MAX_PARAMS + 4];
    tw_kernel_def d;
    memset(&d, 0, sizeof(d));
    uint8_t flags = u8(&r);
    d.abi = (flags & 1) ? TW_KERNEL_ABI : u8(&r);
    d.name = str(&r, pool, &used);
    d.doc = "fuzz";
    d.n_params = u8(&r) % (TW_KERNEL_MAX_PARAMS + 4);
    for (uint32_t i = 0; i < d.n_params; i++) {
        params[i].name = str(&r, pool, &used);
        uint8_t kind = u8(&r);
        if (kind & 1) { /* small readable values */
            params[i].lo = (double)(int8_t)u8(&r);
            params[i].hi = (double)(int8_t)u8(&r);
            params[i].dflt = (double)(int8_t)u8(&r) / ((kind & 2) ? 2.0 : 1.0);
        } else {
            params[i].lo = f64(&r);
            params[i].hi = f64(&r);
            params[i].dflt = f64(&r);
        }
        params[i].integer = (kind >> 2) & 1;
    }
    d.params = (flags & 2) ? NULL : params;
    d.state_bytes = (flags & 4) ? NULL : f_state_bytes;
    d.init = (flags & 8) ? NULL : f_init;
    d.step = (flags & 16) ? NULL : f_step;
    uint8_t sb = u8(&r);
    g_state_bytes = sb == 255 ? TW_KERNEL_MAX_STATE_BYTES + 1 : (size_t)sb * 97;
    g_init_rc = (flags & 32) ? -EINVAL : 0;
    g_step_mode = u8(&r) % 4;

    tw_error err;
    int rc = tw_kernel_check_def(&d, &err);
    TW_VERIFY(rc == 0 || (rc == -TW_EBADKERNEL && err.msg[0]) || rc == -ENOMEM);
    if (rc == 0) {
        rc = tw_kernel_probe(&d, &err);
        TW_VERIFY(rc == 0 || err.msg[0]);
        double combo[TW_KERNEL_MAX_PARAMS];
        for (uint32_t i = 0; i < d.n_params; i++)
            combo[i] = (u8(&r) & 1) ? f64(&r) : params[i].dflt;
        rc = tw_kernel_check_combo(&d, combo, &err);
        TW_VERIFY(rc == 0 || (rc == -EINVAL && err.msg[0]));
        TW_VERIFY(tw_kernel_param_index(&d, d.params[0].name) == 0);
    }
    return 0;
}
