/* SPSC frame ring in shared memory (wire.h "shared-memory transport";
 * operations in wire_io.h).
 * Each side spins for a bounded time, then sleeps on a futex word that the
 * other side bumps after every publish or release. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tickwire/clock.h"
#include "tickwire/wire_io.h"


static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Not FUTEX_PRIVATE: the word lives in a mapping shared between processes. */
/* Returns 1 when the wait ran out its timeout. */
static int futex_wait(uint32_t *addr, uint32_t val, uint64_t timeout_ns)
{
    struct timespec ts = {(time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u)};
    return syscall(SYS_futex, addr, FUTEX_WAIT, val, &ts, NULL, 0) != 0 && errno == ETIMEDOUT;
}

static void futex_wake(uint32_t *addr)
{
    syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void tw__ring_init(tw__ring *r, tw_shm_ring_ctl *ctl, uint8_t *buf, uint32_t cap,
                   uint64_t spin_ns, tw__ring_alive_fn alive, void *alive_arg)
{
    TW_VERIFY(cap >= TW_SHM_RING_MIN && (cap & (cap - 1)) == 0);
    memset(r, 0, sizeof(*r));
    r->ctl = ctl;
    r->buf = buf;
    r->cap = cap;
    r->spin_ns = spin_ns;
    r->spin_cur_ns = spin_ns;
    r->nap_ns = 20 * 1000 * 1000;
    r->alive = alive;
    r->alive_arg = alive_arg;
}

/* The spin policy (see wait_until).  Separate functions so that a test
 * can drive the policy without depending on timing. */
uint64_t tw__ring_spin_budget(tw__ring *r)
{
    uint64_t floor_ns = r->spin_ns / 16;
    return r->spin_cur_ns < floor_ns ? floor_ns : r->spin_cur_ns;
}

void tw__ring_spin_result(tw__ring *r, uint64_t budget, uint64_t waited_ns, int spun_ok)
{
    uint64_t floor_ns = r->spin_ns / 16;
    uint64_t next;
    if (!spun_ok)
        r->sleeps++;
    if (spun_ok || waited_ns < r->spin_ns)
        next = 2 * waited_ns + floor_ns;
    else
        next = budget / 2;
    if (next < floor_ns)
        next = floor_ns;
    r->spin_cur_ns = next < r->spin_ns ? next : r->spin_ns;
}

/* Waits until ready(r) is true: spin for spin_ns, then futex-sleep on seq
 * with the sleeping flag raised, waking every 20 ms to ask alive(). */
/* Moves the calling thread off CPU `cpu` (then lets it run anywhere
 * again).  The kernel tends to wake a futex sleeper on its waker's CPU;
 * two ring sides spinning on one CPU only take turns, so the server side
 * steps aside when it sees the client's CPU hint equal to its own. */
static void step_off(tw__ring *r, uint32_t cpu)
{
    uint64_t now = (uint64_t)tw_clock_now_ns();
    if (now - r->nudged_ns < 10 * 1000 * 1000)
        return;
    r->nudged_ns = now;
    cpu_set_t all, other;
    if (sched_getaffinity(0, sizeof(all), &all) != 0 || CPU_COUNT(&all) < 2 ||
        !CPU_ISSET(cpu, &all))
        return;
    other = all;
    CPU_CLR(cpu, &other);
    if (sched_setaffinity(0, sizeof(other), &other) == 0)
        sched_setaffinity(0, sizeof(all), &all);
}

static int wait_until(tw__ring *r, int (*ready)(tw__ring *), uint32_t *seq, uint32_t *sleeping,
                      const uint32_t *peer_cpu)
{
    if (ready(r))
        return 0;
    /* Spin for spin_ns (a peer on another core answers within that), then
     * sleep on the futex.  If the peer last ran on our own CPU, spinning
     * only delays it: yield between polls instead.  (Yielding otherwise
     * would hand the CPU to any other runnable task for a whole slice; a
     * futex sleeper is woken promptly.) */
    /* The peer's CPU hint sits on the peer's cache line: look at it only
     * every 64th wait, so the steady state moves no extra line. */
    int shared = r->shared;
    if ((r->waits++ & 63) == 0) {
        uint32_t me = (uint32_t)sched_getcpu() + 1;
        shared = r->shared = __atomic_load_n(peer_cpu, __ATOMIC_RELAXED) == me;
    }
    if (shared && r->nudge) {
        step_off(r, (uint32_t)sched_getcpu());
        shared = r->shared = 0;
    }
    /* The budget adapts like an adaptive mutex, so that a peer that works
     * long between frames (copying megabytes) is not robbed of a CPU by our
     * spinning on this oversubscribed machine.  The earlier rule (double on
     * a spin success, halve on a sleep) could get stuck: once the budget is
     * shorter than the peer's gap between frames (a Python caller's few
     * microseconds), every wait sleeps, the peer then waits out our futex
     * wake-up and sleeps too, every round trip pays two wake-ups (~25 to
     * ~160 us on this VM instead of ~0.5 us), and no wait ever succeeds by
     * spinning, so the budget never grows back.  Now the budget follows
     * how long waits really take (tw__ring_spin_result):
     *  - a wait that ended within spin_ns, spinning or asleep, sets the
     *    next budget to twice its length plus a floor (spin_ns / 16): a
     *    wait that slept but was over within spin_ns says that spinning
     *    would have paid, so the stuck state above lasts one frame;
     *  - a wait longer than spin_ns (a slow or idle peer) halves it, down
     *    to the floor, which costs little CPU per wait.
     * An idle peer costs one bounded spin, then futex sleep: no CPU. */
    uint64_t budget = tw__ring_spin_budget(r);
    uint64_t t0 = (uint64_t)tw_clock_now_ns(), dt = 0;
    for (unsigned i = 1;; i++) {
        cpu_relax();
        if (ready(r)) {
            /* How long the wait took sizes the next budget.  A wait that
             * ended within a few polls took ~nothing: no clock read, so
             * the small-echo fast path stays fast.  Otherwise read it:
             * the last periodic reading can be short by 64 polls (several
             * us), enough to size the budget just under the peer's usual
             * gap and to alternate between spinning and sleeping. */
            if (i >= 16)
                dt = (uint64_t)tw_clock_now_ns() - t0;
            tw__ring_spin_result(r, budget, dt, 1);
            return 0;
        }
        if ((i & 63) == 0) {
            dt = (uint64_t)tw_clock_now_ns() - t0;
            if (dt >= budget)
                break;
            if (shared)
                sched_yield();
        }
    }
    for (;;) {
        /* seq_cst store pairs with the peer's seq_cst increment and load of
         * *sleeping: either the peer sees the flag and wakes us, or we see
         * its new seq (futex_wait then returns at once). */
        __atomic_store_n(sleeping, 1, __ATOMIC_SEQ_CST);
        uint32_t s = __atomic_load_n(seq, __ATOMIC_SEQ_CST);
        if (ready(r)) {
            __atomic_store_n(sleeping, 0, __ATOMIC_RELAXED);
            tw__ring_spin_result(r, budget, (uint64_t)tw_clock_now_ns() - t0, 0);
            return 0;
        }
        int timed_out = futex_wait(seq, s, r->nap_ns);
        __atomic_store_n(sleeping, 0, __ATOMIC_RELAXED);
        if (ready(r)) {
            /* Ready although nobody woke us: the peer published without
             * seeing our flag (a lost wake-up), or it was preempted for
             * the whole nap between publishing and waking. */
            r->lost_wakes += (uint64_t)timed_out;
            tw__ring_spin_result(r, budget, (uint64_t)tw_clock_now_ns() - t0, 0);
            return 0;
        }
        if (r->alive) {
            int rc = r->alive(r->alive_arg);
            if (rc)
                return rc;
        }
    }
}

static void notify(uint32_t *seq, uint32_t *sleeping)
{
    /* Pairs with wait_until(): bump then check the flag, both seq_cst. */
    __atomic_add_fetch(seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(sleeping, __ATOMIC_SEQ_CST))
        futex_wake(seq);
}

/* ---- producer ----------------------------------------------------------- */

static int space_ready(tw__ring *r)
{
    /* Space freed by a head we already saw stays free: only read the
     * consumer's cache line when the cached head says the ring is too
     * full (like rte_ring's cached consumer tail), which keeps small round
     * trips at one line each way for the data plus one for the index. */
    if (r->pos + r->held - r->head_cache <= r->cap)
        return 1;
    /* Acquire pairs with the consumer's release-store of head: once we see
     * the space freed, the consumer is done reading it. */
    uint64_t head = __atomic_load_n(&r->ctl->head, __ATOMIC_ACQUIRE);
    if (r->pos - head > r->cap || head > r->pos)
        return 1; /* corrupt: let tw__ring_reserve() report it */
    r->head_cache = head;
    return r->pos + r->held - head <= r->cap;
}

int tw__ring_reserve(tw__ring *r, size_t frame_bytes, size_t align_at, uint8_t **frame)
{
    size_t off = TW_SHM_REC_HDR + ((8 - (TW_SHM_REC_HDR + align_at) % 8) % 8);
    size_t rec = (off + frame_bytes + 63) & ~(size_t)63;
    if (frame_bytes > TW_SHM_MAX_FRAME(r->cap) || rec > r->cap / 2)
        return -E2BIG;
    uint32_t idx = (uint32_t)(r->pos & (r->cap - 1));
    size_t to_end = r->cap - idx;
    size_t pad = rec > to_end ? to_end : 0;
    r->held = pad + rec;
    int rc = wait_until(r, space_ready, &r->ctl->head_seq, &r->ctl->prod_sleeping,
                        &r->ctl->cons_cpu);
    if (rc) {
        r->held = 0;
        return rc;
    }
    if (r->pos + r->held - r->head_cache > r->cap) {
        r->held = 0;
        return -EPROTO; /* space_ready() saw a head beyond our tail */
    }
    r->pad_bytes = pad;
    if (pad) {
        uint32_t h[2] = {(uint32_t)pad, 0};
        memcpy(r->buf + idx, h, 8);
        idx = 0;
    }
    uint32_t h[2] = {(uint32_t)rec, (uint32_t)off};
    memcpy(r->buf + idx, h, 8);
    r->rec_idx = idx;
    *frame = r->buf + idx + off;
    TW_ASSERT(((uintptr_t)(*frame + align_at) & 7) == 0);
    return 0;
}

void tw__ring_publish(tw__ring *r)
{
    TW_VERIFY(r->held > 0);
    /* The stamp (the record's position + 1) is what the consumer polls:
     * it lives in the record's own first cache line, so a small frame
     * crosses as one line.  Release pairs with the consumer's acquire-load
     * in data_ready(): the frame's bytes are visible before the stamp.
     * Padding is stamped last, so a consumer that sees it also sees the
     * record after it. */
    uint64_t rec_pos = r->pos + r->pad_bytes;
    __atomic_store_n((uint64_t *)(void *)(r->buf + r->rec_idx + 8), rec_pos + 1,
                     __ATOMIC_RELEASE);
    if (r->pad_bytes) {
        uint32_t pidx = (uint32_t)(r->pos & (r->cap - 1));
        __atomic_store_n((uint64_t *)(void *)(r->buf + pidx + 8), r->pos + 1, __ATOMIC_RELEASE);
    }
    r->pos += r->held;
    r->held = 0;
    /* tail only serves sleepers and observers; the stamps carry the data. */
    __atomic_store_n(&r->ctl->tail, r->pos, __ATOMIC_RELEASE);
    /* Our own cache line, written anyway: the CPU hint costs no traffic. */
    __atomic_store_n(&r->ctl->prod_cpu, (uint32_t)sched_getcpu() + 1, __ATOMIC_RELAXED);
    notify(&r->ctl->tail_seq, &r->ctl->cons_sleeping);
}

/* ---- consumer ----------------------------------------------------------- */

static int data_ready(tw__ring *r)
{
    /* Acquire pairs with the producer's release-store of the stamp in
     * tw__ring_publish.  A stale stamp from an earlier lap (or the zeroed
     * mapping) never equals pos + 1. */
    uint32_t idx = (uint32_t)(r->pos & (r->cap - 1));
    return __atomic_load_n((const uint64_t *)(const void *)(r->buf + idx + 8), __ATOMIC_ACQUIRE) ==
           r->pos + 1;
}

int tw__ring_peek(tw__ring *r, const uint8_t **frame, size_t *avail)
{
    TW_VERIFY(r->held == 0);
    for (;;) {
        int rc = wait_until(r, data_ready, &r->ctl->tail_seq, &r->ctl->cons_sleeping,
                            &r->ctl->prod_cpu);
        if (rc)
            return rc;
        uint32_t idx = (uint32_t)(r->pos & (r->cap - 1));
        /* Read the record header once: the peer may rewrite it. */
        uint32_t rec = __atomic_load_n((uint32_t *)(r->buf + idx), __ATOMIC_RELAXED);
        uint32_t off = __atomic_load_n((uint32_t *)(r->buf + idx + 4), __ATOMIC_RELAXED);
        if (rec < 64 || (rec & 63) != 0 || rec > r->cap - idx)
            return -EPROTO;
        if (off == 0) {
            /* Padding to the end of the buffer; consumed with the record
             * that follows it. */
            r->pos += rec;
            continue;
        }
        if (off < TW_SHM_REC_HDR || (size_t)off + TW_WIRE_PREFIX_BYTES > rec)
            return -EPROTO;
        r->held = rec;
        *frame = r->buf + idx + off;
        *avail = rec - off;
        return 0;
    }
}

void tw__ring_release(tw__ring *r)
{
    TW_VERIFY(r->held > 0);
    r->pos += r->held;
    r->held = 0;
    /* Release pairs with the producer's acquire-load of head in
     * space_ready(): we are done reading the record before it is reused. */
    __atomic_store_n(&r->ctl->head, r->pos, __ATOMIC_RELEASE);
    __atomic_store_n(&r->ctl->cons_cpu, (uint32_t)sched_getcpu() + 1, __ATOMIC_RELAXED);
    notify(&r->ctl->head_seq, &r->ctl->prod_sleeping);
}
