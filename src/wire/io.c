/* Blocking descriptor I/O of the wire's stream transports (wire_io.h): the
 * C client, the stdin/stdout server and the benchmarks' bare yardsticks
 * all read and write through these, so EINTR and short transfers are
 * handled in one place. */
#include <errno.h>
#include <unistd.h>

#include "tickwire/wire_io.h"

ssize_t tw__read_full(int fd, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, (char *)p + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

int tw__write_full(int fd, const void *p, size_t n)
{
    size_t put = 0;
    while (put < n) {
        ssize_t k = write(fd, (const char *)p + put, n - put);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            return -EPIPE;
        put += (size_t)k;
    }
    return 0;
}

void tw__iov_consume(struct iovec *v, int n, int *i, size_t k)
{
    while (k > 0 && *i < n) {
        if (k >= v[*i].iov_len) {
            k -= v[*i].iov_len;
            (*i)++;
        } else {
            v[*i].iov_base = (char *)v[*i].iov_base + k;
            v[*i].iov_len -= k;
            k = 0;
        }
    }
}
