/* The shared helpers of tickwire/util.h that are not inline. */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

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

/* Address space reserved for a mapped file at first: 1 GiB, doubled past
 * that (the one path that remaps). */
#define FMAP_RESERVE (UINT64_C(1) << 30)

int tw__fmap_grow(int fd, char **map, uint64_t *reserve, uint64_t *cap, uint64_t end,
                  uint64_t step)
{
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    if (step < page)
        step = page;
    uint64_t want = *cap + step > end ? *cap + step : end;
    want = (want + page - 1) / page * page;
    if (!*map || want > *reserve) {
        uint64_t res = *reserve ? *reserve : FMAP_RESERVE;
        while (res < want)
            res *= 2;
        void *m = mmap(NULL, res, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED && errno == ENOMEM && res > want) {
            /* An address-space limit (ulimit -v): map what is needed now;
             * each growth past it maps the file again. */
            res = want;
            m = mmap(NULL, res, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        }
        if (m == MAP_FAILED)
            return -errno;
        if (*map)
            munmap(*map, *reserve);
        *map = m;
        *reserve = res;
    }
    /* Blocks allocated now (fallocate where the filesystem can), so the
     * first store into a page does not allocate in a page fault on the hot
     * path; the file is extended with zeros either way. */
    int e = posix_fallocate(fd, (off_t)*cap, (off_t)(want - *cap));
    if (e != 0 && e != EOPNOTSUPP && e != EINVAL)
        return -e;
    struct stat st;
    if (e != 0 && (fstat(fd, &st) != 0 ||
                   ((uint64_t)st.st_size < want && ftruncate(fd, (off_t)want) != 0)))
        return -errno;
#ifdef MADV_POPULATE_WRITE
    /* Write-fault the step's pages now (Linux 5.14+), not one page fault
     * per page on the hot path; where it is refused the faults come later. */
    (void)madvise(*map + *cap, want - *cap, MADV_POPULATE_WRITE);
#endif
    *cap = want;
    return 0;
}

int tw__fmap_ahead(int fd, char **map, uint64_t *reserve, uint64_t *cap, uint64_t end,
                   uint64_t ahead)
{
    if (!*map || *cap >= end + ahead || *cap + TW__FMAP_PIECE > *reserve)
        return 0;
    int rc = tw__fmap_grow(fd, map, reserve, cap, *cap + TW__FMAP_PIECE, TW__FMAP_PIECE);
    return rc < 0 ? rc : 1;
}

void tw__fmap_close(char **map, uint64_t *reserve, uint64_t *cap)
{
    if (*map)
        munmap(*map, *reserve);
    *map = NULL;
    *reserve = *cap = 0;
}
