/* The --fault syntax (tickwire/exchange.h): disconnect:BAR, gap:BAR,
 * reject:N, slow:BAR:MS, hasty:BAR. */
#include <errno.h>
#include <string.h>

#include "exchange/exchange_internal.h"
#include "tickwire/util.h"

#define KINDS "expected disconnect:BAR, gap:BAR, reject:N, slow:BAR:MS or hasty:BAR"

/* Decimal digits only, at most 18 of them (no sign, no spaces). */
static int num(const char *s, size_t n, uint64_t *v)
{
    return n > 18 ? -ERANGE : tw_parse_u64(s, n, v);
}

int tw_xchg_fault_parse(const char *s, tw_xchg_fault *out, tw_error *err)
{
    memset(out, 0, sizeof(*out));
    const char *c1 = strchr(s, ':');
    if (!c1)
        return tw__err(err, -EINVAL, "fault '%s': " KINDS, s);
    size_t kl = (size_t)(c1 - s);
    const char *a = c1 + 1;
    const char *c2 = strchr(a, ':');
    size_t al = c2 ? (size_t)(c2 - a) : strlen(a);
    uint64_t v1, v2 = 0;
    if (num(a, al, &v1) != 0)
        return tw__err(err, -EINVAL, "fault '%s': '%.*s' is not a number", s, (int)al, a);
    if (c2 && num(c2 + 1, strlen(c2 + 1), &v2) != 0)
        return tw__err(err, -EINVAL, "fault '%s': '%s' is not a number", s, c2 + 1);
    int two = c2 != NULL;
    if (kl == 10 && !memcmp(s, "disconnect", 10) && !two) {
        out->kind = TW_XCHG_FAULT_DISCONNECT;
        out->bar = v1;
    } else if (kl == 3 && !memcmp(s, "gap", 3) && !two) {
        out->kind = TW_XCHG_FAULT_GAP;
        out->bar = v1;
    } else if (kl == 6 && !memcmp(s, "reject", 6) && !two) {
        if (v1 == 0)
            return tw__err(err, -EINVAL, "fault '%s': reject:N needs N >= 1", s);
        out->kind = TW_XCHG_FAULT_REJECT;
        out->every = v1;
    } else if (kl == 5 && !memcmp(s, "hasty", 5) && !two) {
        out->kind = TW_XCHG_FAULT_HASTY;
        out->bar = v1;
    } else if (kl == 4 && !memcmp(s, "slow", 4) && two) {
        if (v2 == 0 || v2 > 3600000)
            return tw__err(err, -EINVAL, "fault '%s': slow:BAR:MS needs 1 <= MS <= 3600000", s);
        out->kind = TW_XCHG_FAULT_SLOW;
        out->bar = v1;
        out->ms = v2;
    } else {
        return tw__err(err, -EINVAL, "fault '%s': " KINDS, s);
    }
    return 0;
}
