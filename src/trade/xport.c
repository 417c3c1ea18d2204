/* What every transport shares (engine_internal.h, "transports"). */
#include <errno.h>
#include <string.h>

#include "trade/engine_internal.h"

int tw__xport_write(tw__xport *t, const char *buf, size_t len)
{
    if (t->state != TW__XP_UP)
        return -ENOTCONN;
    if (t->out_off && t->out_len + len > t->out_cap) {
        memmove(t->out, t->out + t->out_off, t->out_len - t->out_off);
        t->out_len -= t->out_off;
        t->out_off = 0;
    }
    if (t->out_len + len > t->out_cap)
        return -ENOBUFS;
    memcpy(t->out + t->out_len, buf, len);
    t->out_len += len;
    return 0;
}
