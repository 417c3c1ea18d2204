/* The doorbells of yielding cores (engine_internal.h, "doorbell"): in
 * threads mode an eventfd written once per sleep of its consumer; in
 * processes mode the attach segment's futex bells (shm_attach.h) between
 * a net core and the strategy process. */
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

unsigned tw__bell_attach_idle(tw_attach_gw *att, uint32_t core, tw_reactor_now *now)
{
    /* The second look after arming is inside tw_attach_gw_wait (the ring,
     * then the strategy's done mark against the journal's end). */
    int rc = tw_attach_gw_wait(att, core, TW__BELL_ATT_WAIT_NS);
    if (rc == 0)
        return 1; /* intents, or the strategy finished its records */
    int64_t bound = rc == 1 ? TW__BELL_ATT_IDLE_NS : TW__BELL_ATT_WAIT_NS;
    if (now->wake_ns > now->ns + bound)
        now->wake_ns = now->ns + bound;
    return 0;
}
