/* The attach segment's doorbell (shm_attach.h, tw_attach_bell): no lost
 * wake-up, and no system call for a ringer while its peer is awake.
 *
 *   attach_bell procs    two processes over a shared mapping (a memfd)
 *   attach_bell threads  the same with two threads (the TSan run)
 *
 * Ping-pong: side A puts item i into ring AB and rings bell B, then waits
 * for the echo in ring BA (bell A); side B the other way round.  Each
 * side that finds its ring empty arms, looks again, and waits (100 ms
 * bound).  Every item carries its index: a side that gets another one
 * than the next stops, and the other with it (an item lost or repeated).
 * A wait that times out is a lost wake-up when its item is in the ring,
 * nobody bumped the bell since it armed, and the ringer had finished
 * ringing for it well before the wait ended (take() says why that is
 * exact); a slow peer (a loaded host) costs timeouts, never a failure.
 * Then a
 * stream: A enqueues as fast as the ring takes (yielding while it is
 * full), B sleeps whenever it is empty; every item arrives, in order.
 * And single-thread cases: a ring with nobody armed makes no system call,
 * an armed one wakes once, a stale ticket does not sleep. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tickwire/clock.h"
#include "tickwire/shm_attach.h"
#include "tw_check.h"

#define SLOTS 64
#define PINGS 5000
#define STREAM 50000
#define WAIT_NS 100000000ll

typedef struct side_stats {
    uint64_t rung;      /* items this side has finished ringing for (atomic) */
    int64_t rung_ns;    /* when it finished ringing for the last of them (atomic) */
    uint64_t wakes;     /* rings that made the FUTEX_WAKE */
    uint64_t rings;
    uint64_t waits, timeouts, lost, bad;
} side_stats;

/* The shared mapping: two bells, two rings, two sides' stats. */
typedef struct shared {
    tw_attach_bell bell[2]; /* bell[s]: side s waits on it */
    side_stats st[2];
    uint64_t stream_done;   /* B took every stream item (atomic) */
    uint32_t abort;         /* a side stopped: the other stops too (atomic) */
    uint8_t pad[64];
} shared;

static size_t ring_bytes(void) { return (tw_ring_memsize(SLOTS, 64) + 127) & ~(size_t)127; }

static size_t map_bytes(void) { return ((sizeof(shared) + 127) & ~(size_t)127) + 2 * ring_bytes(); }

static tw_ring *ring_of(shared *sh, int to)
{
    return (tw_ring *)((uint8_t *)sh + ((sizeof(shared) + 127) & ~(size_t)127) +
                       (size_t)to * ring_bytes());
}

typedef struct item {
    uint64_t idx;
    uint64_t pad[7];
} item;

/* Side me puts item idx into the peer's ring and rings the peer's bell. */
static void put(shared *sh, int me, uint64_t idx)
{
    int peer = !me;
    item it = {.idx = idx};
    /* Acquire: pairs with the stopping side's release-store of abort. */
    while (tw_ring_enqueue_burst_sp(ring_of(sh, peer), &it, 1) != 1 &&
           !__atomic_load_n(&sh->abort, __ATOMIC_ACQUIRE))
        sched_yield();
    side_stats *s = &sh->st[me];
    s->rings++;
    s->wakes += (uint64_t)tw_attach_bell_ring(&sh->bell[peer]);
    /* Relaxed: published by the release-store of rung below. */
    __atomic_store_n(&s->rung_ns, tw_clock_now_ns(), __ATOMIC_RELAXED);
    /* Release: pairs with the waiter's acquire-load in take(), which reads
     * it after a timeout to tell a lost wake-up from a slow ringer. */
    __atomic_store_n(&s->rung, idx, __ATOMIC_RELEASE);
}

/* A side stops: the other sees it in its loops. */
static int stop(shared *sh)
{
    /* Release: pairs with the acquire-loads in put() and take(). */
    __atomic_store_n(&sh->abort, 1, __ATOMIC_RELEASE);
    return -1;
}

/* Side me takes the next item from its ring, sleeping on its bell while
 * it is empty; 0 with *idx, or -1 when the item was lost (stopping).
 *
 * A wait that times out although its item was rung is a lost wake-up when
 * nobody bumped the bell since we armed (seq still our ticket) and the
 * ringer had finished ringing well before our wait ended: a ring whose
 * fence came after our arm's must have seen us armed and bumped seq; one
 * whose fence came before it left the item for our second look.  (A ring
 * that came after the timeout, as a slow peer's does, finished after the
 * wait ended: not counted.) */
static int take(shared *sh, int me, uint64_t want, uint64_t *idx)
{
    tw_ring *r = ring_of(sh, me);
    side_stats *s = &sh->st[me];
    item it;
    for (;;) {
        if (tw_ring_dequeue_burst_sc(r, &it, 1) == 1)
            break;
        /* Acquire: pairs with stop()'s release-store. */
        if (__atomic_load_n(&sh->abort, __ATOMIC_ACQUIRE))
            return -1;
        uint32_t t = tw_attach_bell_arm(&sh->bell[me]);
        if (tw_ring_count(r)) {
            tw_attach_bell_disarm(&sh->bell[me]);
            continue;
        }
        s->waits++;
        if (tw_attach_bell_wait(&sh->bell[me], t, WAIT_NS) != -ETIMEDOUT)
            continue;
        int64_t end_ns = tw_clock_now_ns();
        s->timeouts++;
        /* Acquire: pairs with put()'s release-store of rung (rung_ns and
         * the item before it). */
        uint64_t rung = __atomic_load_n(&sh->st[!me].rung, __ATOMIC_ACQUIRE);
        int64_t rung_ns = __atomic_load_n(&sh->st[!me].rung_ns, __ATOMIC_RELAXED);
        /* Relaxed: only a ringer that woke us changes it. */
        uint32_t seq = __atomic_load_n(&sh->bell[me].seq, __ATOMIC_RELAXED);
        if (tw_ring_count(r) && rung >= want && seq == t && rung_ns + WAIT_NS / 2 < end_ns) {
            s->lost++;
            fprintf(stderr, "side %d: item %llu was rung %lld us before the wait timed out and "
                            "nobody woke it: a lost wake-up\n", me, (unsigned long long)want,
                    (long long)((end_ns - rung_ns) / 1000));
            return stop(sh);
        }
    }
    *idx = it.idx;
    if (it.idx != want) {
        s->bad++;
        fprintf(stderr, "side %d: item %llu, expected %llu: lost or repeated\n", me,
                (unsigned long long)it.idx, (unsigned long long)want);
        return stop(sh);
    }
    return 0;
}

/* Side A (0): ping-pong, then the stream. */
static int side_a(shared *sh)
{
    uint64_t got;
    for (uint64_t i = 1; i <= PINGS; i++) {
        put(sh, 0, i);
        if (take(sh, 0, i, &got) != 0)
            return -1;
    }
    for (uint64_t i = PINGS + 1; i <= PINGS + STREAM; i++)
        put(sh, 0, i);
    /* B's last word: it took the whole stream. */
    return take(sh, 0, PINGS + STREAM + 1, &got);
}

/* Side B (1): echoes every ping, then takes the stream. */
static int side_b(shared *sh)
{
    uint64_t got;
    for (uint64_t i = 1; i <= PINGS; i++) {
        if (take(sh, 1, i, &got) != 0)
            return -1;
        put(sh, 1, i);
    }
    for (uint64_t i = PINGS + 1; i <= PINGS + STREAM; i++)
        if (take(sh, 1, i, &got) != 0)
            return -1;
    /* Release: pairs with side A's acquire-load; the last item after it. */
    __atomic_store_n(&sh->stream_done, 1, __ATOMIC_RELEASE);
    put(sh, 1, PINGS + STREAM + 1);
    return 0;
}

static void *thread_b(void *arg)
{
    return (void *)(intptr_t)side_b(arg);
}

static shared *map_shared(void)
{
    void *m = mmap(NULL, map_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    shared *sh = m;
    memset(sh, 0, sizeof(*sh));
    for (int i = 0; i < 2; i++)
        if (tw_ring_init(ring_of(sh, i), SLOTS, 64) != 0)
            return NULL;
    return sh;
}

static void t_single(void)
{
    shared *sh = map_shared();
    REQUIRE(sh);
    tw_attach_bell *b = &sh->bell[0];
    /* Nobody armed: no system call, nothing changes. */
    CHECK_EQ(tw_attach_bell_ring(b), 0);
    CHECK_EQ(b->seq, 0);
    /* Armed: one ring wakes (seq moves), the next finds it awake. */
    uint32_t t = tw_attach_bell_arm(b);
    CHECK_EQ(t, 0);
    CHECK_EQ(tw_attach_bell_ring(b), 1);
    CHECK_EQ(tw_attach_bell_ring(b), 0);
    CHECK_EQ(b->seq, 1);
    /* The ticket from before that ring is stale: the wait does not sleep
     * (it would take the whole second otherwise; the result says which). */
    CHECK_EQ(tw_attach_bell_wait(b, t, 1000000000ll), 0);
    CHECK_EQ(b->sleeping, 0);
    /* Armed, then disarmed: a ring makes no system call. */
    t = tw_attach_bell_arm(b);
    tw_attach_bell_disarm(b);
    CHECK_EQ(tw_attach_bell_ring(b), 0);
    /* Armed and nobody rings: the bounded wait ends by its timeout. */
    t = tw_attach_bell_arm(b);
    CHECK_EQ(tw_attach_bell_wait(b, t, 1000000), -ETIMEDOUT);
    CHECK_EQ(b->sleeping, 0);
    munmap(sh, map_bytes());
}

static void report(const shared *sh, const char *how)
{
    for (int s = 0; s < 2; s++) {
        const side_stats *x = &sh->st[s];
        printf("attach_bell %s: side %c: %llu rings, %llu woke the peer; %llu waits, %llu "
               "timed out\n", how, 'A' + s, (unsigned long long)x->rings,
               (unsigned long long)x->wakes, (unsigned long long)x->waits,
               (unsigned long long)x->timeouts);
        CHECK_EQ(x->lost, 0);
        CHECK_EQ(x->bad, 0);
        /* At most one wake per ring (none while the peer was awake). */
        CHECK(x->wakes <= x->rings);
    }
    /* Ping-pong makes the peer sleep: the futex path ran. */
    CHECK(sh->st[0].wakes + sh->st[1].wakes > 0);
    /* Acquire: pairs with side B's release-store (B has exited or been
     * joined by now anyway). */
    CHECK_EQ(__atomic_load_n(&sh->stream_done, __ATOMIC_ACQUIRE), 1);
}

static void t_procs(void)
{
    shared *sh = map_shared();
    REQUIRE(sh);
    pid_t p = fork();
    REQUIRE(p >= 0);
    if (p == 0)
        _exit(side_b(sh) == 0 ? 0 : 1);
    int a = side_a(sh);
    int st = 0;
    CHECK(waitpid(p, &st, 0) == p);
    CHECK(a == 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    report(sh, "procs");
    munmap(sh, map_bytes());
}

static void t_threads(void)
{
    shared *sh = map_shared();
    REQUIRE(sh);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, thread_b, sh) == 0);
    int a = side_a(sh);
    void *rv = NULL;
    CHECK(pthread_join(t, &rv) == 0);
    CHECK(a == 0);
    CHECK(rv == NULL);
    report(sh, "threads");
    munmap(sh, map_bytes());
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "procs";
    t_single();
    if (!strcmp(how, "threads"))
        t_threads();
    else
        t_procs();
    return tw_check_done("attach_bell");
}
