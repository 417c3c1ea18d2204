/* The shared helpers of tickwire/util.h that are not inline. */
#include <errno.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "tickwire/util.h"

_Static_assert(sizeof(((struct sockaddr_un *)0)->sun_path) == TW_UNIX_PATH_MAX,
               "TW_UNIX_PATH_MAX is the size of sun_path");

int tw_parse_u64(const char *p, size_t n, uint64_t *out)
{
    if (n == 0)
        return -EINVAL;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -EINVAL;
        uint64_t d = (uint64_t)(p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int tw_text_ok(const char *v, size_t n, size_t max, unsigned flags)
{
    unsigned char lo = (flags & TW_TEXT_SPACE) ? 0x20 : 0x21;
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < lo || (unsigned char)v[i] > 0x7e)
            return 0;
    return 1;
}

int tw_mkdir_parents(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n >= sizeof(buf))
        return -ENAMETOOLONG;
    memcpy(buf, path, n + 1);
    /* Bounded by the path's length; the first byte is skipped so that an
     * absolute path does not try mkdir(""). */
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    return 0;
}
