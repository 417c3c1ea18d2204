/* The doorbell of a yielding core (engine_internal.h, "doorbell"): an
 * eventfd written once per sleep of its consumer. */
#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "trade/engine_internal.h"

int tw__bell_init(tw__bell *b, int enabled)
{
    b->sleeping = b->rung = 0;
    b->fd = -1;
    if (!enabled)
        return 0;
    b->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return b->fd < 0 ? -errno : 0;
}

void tw__bell_close(tw__bell *b)
{
    if (b->fd >= 0)
        close(b->fd);
    b->fd = -1;
}

void tw__bell_ring(tw__bell *b)
{
    if (b->fd < 0)
        return;
    /* Pairs with the fence in tw__bell_sleep: our enqueue (before this
     * fence) or the consumer's sleeping flag (before its fence) is seen by
     * the other side. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&b->sleeping, __ATOMIC_RELAXED) &&
        !__atomic_exchange_n(&b->rung, 1, __ATOMIC_ACQ_REL)) {
        uint64_t one = 1;
        ssize_t n = write(b->fd, &one, sizeof(one));
        (void)n; /* EAGAIN: the counter is full, i.e. already readable */
    }
}

void tw__bell_sleep(tw__bell *b)
{
    if (b->fd < 0 || __atomic_load_n(&b->sleeping, __ATOMIC_RELAXED))
        return;
    /* Once per idle spell: clear what an earlier ring left readable, or
     * ppoll would return at once from now on. */
    uint64_t v;
    ssize_t n = read(b->fd, &v, sizeof(v));
    (void)n;
    __atomic_store_n(&b->rung, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&b->sleeping, 1, __ATOMIC_RELAXED);
    /* Pairs with the producer's fence in tw__bell_ring (see there). */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void tw__bell_wake(tw__bell *b)
{
    if (b->fd >= 0 && __atomic_load_n(&b->sleeping, __ATOMIC_RELAXED))
        __atomic_store_n(&b->sleeping, 0, __ATOMIC_RELAXED);
}
