/* The shared-memory ring on its own (src/wire/shm_ring.c), in one
 * process with two threads:
 *  - the adaptive spin policy, driven step by step (no timing): it stays
 *    within [floor, full], a wait shorter than the full budget sizes the
 *    next one to twice that wait plus the floor (even a wait that slept,
 *    so it cannot stay stuck in futex sleeps), a longer one halves it;
 *  - a producer and a consumer moving frames of many sizes through a small
 *    ring (so it wraps, with padding, many times), checked byte for byte,
 *    once with a normal spin and once with spin_ns = 0 (every wait that is
 *    not ready at once goes through the futex path: a lost wake-up shows
 *    as a wait that times out with the data already there). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickwire/wire_io.h"
#include "tw_check.h"

static void test_policy(void)
{
    tw__ring r;
    static uint8_t buf[TW_SHM_RING_MIN];
    tw_shm_ring_ctl ctl;
    memset(&ctl, 0, sizeof(ctl));
    const uint64_t full = 64000, floor_ns = full / 16;
    tw__ring_init(&r, &ctl, buf, TW_SHM_RING_MIN, full, NULL, NULL);

    /* Fresh: the full budget. */
    REQUIRE(tw__ring_spin_budget(&r) == full);
    /* Waits longer than the full budget (a slow or idle peer) halve it,
     * never below the floor. */
    uint64_t b = full;
    int saw_floor = 0;
    for (int i = 0; i < 40; i++) {
        tw__ring_spin_result(&r, b, 10 * full, 0);
        b = tw__ring_spin_budget(&r);
        REQUIRE(b >= floor_ns && b <= full);
        saw_floor |= b == floor_ns;
    }
    REQUIRE(saw_floor);
    REQUIRE(r.sleeps == 40);
    /* At the floor, the peer answers in 20 us: the wait sleeps (the floor
     * is 4 us) and, with the futex wake-up, is over after 30 us, within the
     * full budget.  That is proof that spinning would have paid: the next
     * budget covers it at once (2 x 30 us + floor, capped at the full
     * budget) instead of staying stuck at the floor. */
    tw__ring_spin_result(&r, b, 30000, 0);
    b = tw__ring_spin_budget(&r);
    REQUIRE(b == full);
    /* Spinning, the 20 us waits succeed and size the budget to 2 x 20 us
     * + floor, where it stays. */
    for (int i = 0; i < 16; i++) {
        tw__ring_spin_result(&r, b, 20000, 1);
        b = tw__ring_spin_budget(&r);
        REQUIRE(b == 2 * 20000 + floor_ns);
    }
    /* A prompt peer (0.3 us) keeps the spin short: near the floor. */
    tw__ring_spin_result(&r, b, 300, 1);
    REQUIRE(tw__ring_spin_budget(&r) == 2 * 300 + floor_ns);
    REQUIRE(r.sleeps == 41);
    /* spin_ns = 0 (always sleep) stays at 0. */
    tw__ring_init(&r, &ctl, buf, TW_SHM_RING_MIN, 0, NULL, NULL);
    for (int i = 0; i < 20; i++) {
        b = tw__ring_spin_budget(&r);
        REQUIRE(b == 0);
        tw__ring_spin_result(&r, b, 0, 0);
    }
    printf("%-34s -> ok\n", "spin policy");
}

/* ---- two threads over one ring ------------------------------------------ */

#define FRAMES 20000

typedef struct pair {
    tw__ring prod, cons;
    uint64_t checked;
    int bad;
} pair;

/* Frame i's body: n_i bytes, byte k = (i * 31 + k) & 0xff.  Sizes cycle
 * through small, cache-line-crossing and near-the-limit ones. */
static size_t body_len(uint32_t i, uint32_t cap)
{
    static const size_t sizes[] = {0, 1, 7, 8, 44, 45, 60, 61, 200, 1000, 4096, 9999};
    size_t n = sizes[i % 12];
    if (i % 97 == 0)
        n = TW_SHM_MAX_FRAME(cap) - TW_WIRE_PREFIX_BYTES; /* the largest allowed */
    return n;
}

static void *producer(void *arg)
{
    pair *p = arg;
    for (uint32_t i = 0; i < FRAMES; i++) {
        size_t n = body_len(i, p->prod.cap);
        uint8_t *f;
        int rc = tw__ring_reserve(&p->prod, TW_WIRE_PREFIX_BYTES + n, TW_WIRE_PREFIX_BYTES, &f);
        if (rc) {
            fprintf(stderr, "reserve of frame %u (%zu bytes): %d\n", i, n, rc);
            p->bad = 1;
            return NULL;
        }
        uint32_t len = (uint32_t)n;
        memcpy(f, &len, 4);
        for (size_t k = 0; k < n; k++)
            f[4 + k] = (uint8_t)(i * 31 + k);
        tw__ring_publish(&p->prod);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    pair *p = arg;
    for (uint32_t i = 0; i < FRAMES; i++) {
        const uint8_t *f;
        size_t avail;
        int rc = tw__ring_peek(&p->cons, &f, &avail);
        if (rc) {
            fprintf(stderr, "peek of frame %u: %d\n", i, rc);
            p->bad = 1;
            return NULL;
        }
        uint32_t len;
        memcpy(&len, f, 4);
        size_t n = body_len(i, p->cons.cap);
        int ok = len == n && avail >= 4 + n;
        for (size_t k = 0; ok && k < n; k++)
            ok = f[4 + k] == (uint8_t)(i * 31 + k);
        if (!ok) {
            fprintf(stderr, "frame %u: length %u (want %zu) or bytes differ\n", i, len, n);
            p->bad = 1;
            return NULL;
        }
        p->checked++;
        tw__ring_release(&p->cons);
    }
    return NULL;
}

static void test_threads(uint64_t spin_ns, const char *name)
{
    const uint32_t cap = TW_SHM_RING_MIN;
    tw_shm_layout *L = aligned_alloc(4096, tw__shm_map_bytes(cap));
    REQUIRE(L != NULL);
    memset(L, 0, tw__shm_map_bytes(cap));
    uint8_t *ring = (uint8_t *)L + TW_SHM_CTL_BYTES;
    pair p;
    memset(&p, 0, sizeof(p));
    tw__ring_init(&p.prod, &L->req, ring, cap, spin_ns, NULL, NULL);
    tw__ring_init(&p.cons, &L->req, ring, cap, spin_ns, NULL, NULL);
    /* Naps long enough that only a lost wake-up, not a preempted peer on
     * this busy machine, can make a wait time out with its data there. */
    p.prod.nap_ns = p.cons.nap_ns = 2000000000u;
    pthread_t tc, tp;
    pthread_create(&tc, NULL, consumer, &p);
    pthread_create(&tp, NULL, producer, &p);
    pthread_join(tp, NULL);
    pthread_join(tc, NULL);
    uint64_t laps = p.prod.pos / cap, sleeps = p.prod.sleeps + p.cons.sleeps;
    uint64_t lost = p.prod.lost_wakes + p.cons.lost_wakes;
    free(L);
    REQUIRE(!p.bad);
    REQUIRE(p.checked == FRAMES);
    REQUIRE(laps >= 10); /* the ring wrapped many times */
    /* A wait that timed out although its data was there means a wake-up
     * was lost (the 20 ms timeout is only a safety net). */
    REQUIRE(lost == 0);
    printf("%-34s -> ok (%d frames, %llu laps, %llu waits slept)\n", name, FRAMES,
           (unsigned long long)laps, (unsigned long long)sleeps);
}

int main(void)
{
    test_policy();
    test_threads(50000, "ring, spin then sleep");
    test_threads(0, "ring, always futex");
    return tw_check_done("test_engine_shm_ring");
}
