#include <stdarg.h>
#include <string.h>

#include "tickwire/common.h"
#include "tickwire/wire.h"

int tw__err(tw_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *tw_strerror(int code)
{
    switch (-code) {
    case 0: return "success";
    case TW_EBADWINDOW: return "window out of range [1, 100000]";
    case TW_EBADPRICE: return "price not positive or not finite";
    case TW_ENODATA: return "no data";
    case TW_EFORMAT: return "bad format";
    default:
        /* Error frames from the engine come back as -(TW_EWIRE + code). */
        if (TW_EWIRE_CODE(code))
            return tw_wire_strerror((unsigned)TW_EWIRE_CODE(code));
        return strerror(-code);
    }
}
