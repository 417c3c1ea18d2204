/* What every port backend shares: the count of buffers leaked by callers
 * (port_internal.h; tw_port_leaked_total in port.h). */
#include <stdarg.h>
#include <stdio.h>

#include "net/port_internal.h"

/* Relaxed: a statistic with no ordering to keep.  Ports may close on any
 * thread; the add in tw__port_leak and the load here pair with nothing
 * else. */
static uint64_t leaked;

uint64_t tw_port_leaked_total(void)
{
    return __atomic_load_n(&leaked, __ATOMIC_RELAXED);
}

void tw__port_leak(const tw_port *p, uint64_t n, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    fprintf(stderr, "tickwire %s: closed with %s\n", p->ops->name, what);
    __atomic_fetch_add(&leaked, n, __ATOMIC_RELAXED);
}

void tw__port_check_held(const tw_port *p, int64_t held, const char *unit)
{
    if (held == 0)
        return;
    uint64_t n = held < 0 ? (uint64_t)-held : (uint64_t)held;
    tw__port_leak(p, n, "%lld %s still held by the caller", (long long)held, unit);
}
