/* Error detail (tw__err) and error strings (tw_strerror).  Common sits
 * below every part and knows none of them: a part with codes of its own
 * registers a strerror function for its range (tw__strerror_register),
 * and tw_strerror() asks the registered ranges before errno's table. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>

#include "tickwire/common.h"

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

/* common's own codes (common.h): TW_EBADWINDOW ... TW_EUNRECOVERABLE. */
#define COMMON_FIRST TW_EBADWINDOW
#define COMMON_LAST TW_EUNRECOVERABLE

typedef struct range {
    int first, last; /* positive: the codes -first ... -last */
    tw__strerror_fn fn;
} range;

/* Entries [0, n_ranges) are complete and never change again.  Writers
 * serialise on reg_lock; readers take no lock (see tw_strerror). */
static range ranges[16];
static int n_ranges;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

int tw__strerror_register(int first, int count, tw__strerror_fn fn)
{
    if (!fn || first <= 0 || count <= 0 || first > INT_MAX - count + 1)
        return -EINVAL;
    int last = first + count - 1;
    if (first <= COMMON_LAST && last >= COMMON_FIRST)
        return -EINVAL;
    int rc = 0;
    pthread_mutex_lock(&reg_lock);
    int n = n_ranges; /* only writers change it, and we hold the lock */
    for (int i = 0; i < n && rc == 0; i++)
        if (first <= ranges[i].last && last >= ranges[i].first)
            rc = -EINVAL;
    if (rc == 0 && n == (int)TW_ARRAY_SIZE(ranges))
        rc = -ENOSPC;
    if (rc == 0) {
        ranges[n] = (range){first, last, fn};
        /* Release pairs with the acquire-load in tw_strerror(): a reader
         * that sees the new count sees the entry filled in. */
        __atomic_store_n(&n_ranges, n + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&reg_lock);
    return rc;
}

const char *tw_strerror(int code)
{
    switch (-code) {
    case 0: return "success";
    case TW_EBADWINDOW: return "window out of range [1, 100000]";
    case TW_EBADPRICE: return "price not positive or not finite";
    case TW_ENODATA: return "no data";
    case TW_EFORMAT: return "bad format";
    case TW_EBADKERNEL: return "kernel refused";
    case TW_EUNRECOVERABLE: return "state cannot be rebuilt";
    default: break;
    }
    /* Acquire pairs with the release-store in tw__strerror_register(). */
    int n = __atomic_load_n(&n_ranges, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (-code >= ranges[i].first && -code <= ranges[i].last)
            return ranges[i].fn(code);
    return strerror(-code);
}
