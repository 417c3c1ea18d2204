/* SPSC ring under two concurrent sides: 100M items through a small ring
 * with a sequence check on every item, either between two threads or
 * between two processes mapping one memfd (the consumer maps it at its own
 * address and attaches).  Both sides yield when a call moves nothing, so
 * the test passes on 2 shared cores; nothing depends on timing.
 *
 *   test_ring_stress threads|processes [items]
 *
 * Then an eighth as many again with only the copying calls, and with only
 * the zero-copy ones.
 *
 * Under the sanitizers the default is fewer items (ASan 20M, TSan 10M):
 * each instrumented item costs tens of times more, and the interleavings
 * that matter (full, empty, wrap) come around every few hundred items. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tickwire/ring.h"
#include "tw_check.h"

#if defined(TW_TEST_TSAN)
#define DEFAULT_ITEMS 10000000ull
#elif defined(TW_TEST_ASAN)
#define DEFAULT_ITEMS 20000000ull
#else
#define DEFAULT_ITEMS 100000000ull
#endif

enum { COUNT = 1024, MAX_BURST = 48 };

/* 16 bytes: the sequence number and a check word derived from it. */
typedef struct item {
    uint64_t seq;
    uint64_t check;
} item;

static uint64_t check_of(uint64_t seq) { return (seq * 0x9e3779b97f4a7c15ull) ^ 0x5555; }

/* Back-off when a call moved nothing: a few pauses, then give the CPU
 * away (the other side may be waiting for this core). */
static void idle(unsigned *spins)
{
    if (++*spins < 32) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        return;
    }
    *spins = 0;
    sched_yield();
}

static uint32_t burst_of(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    /* Mostly small bursts, sometimes a large one. */
    uint32_t r = (uint32_t)(*s >> 32);
    return (r & 7) == 0 ? (r >> 8) % MAX_BURST + 1 : (r >> 8) % 4 + 1;
}

/* Which calls a side uses: both mixed at random, or one style only (a
 * missing release or acquire on one path shows under TSan only when the
 * other path's barriers do not cover for it). */
enum { MIXED, COPY_ONLY, ZC_ONLY };

typedef struct side_arg {
    tw_ring *r;
    int style;
    uint64_t items;
    uint64_t moved;
    uint64_t bad;      /* items out of sequence or with a wrong check word */
    uint64_t first_bad; /* the sequence number expected at the first bad one */
    uint64_t zero_copy;
} side_arg;

static void *produce(void *p)
{
    side_arg *a = p;
    item buf[MAX_BURST];
    uint64_t seq = 0, s = 0x1234567;
    unsigned spins = 0;
    while (seq < a->items) {
        uint32_t k = burst_of(&s);
        if (k > a->items - seq)
            k = (uint32_t)(a->items - seq);
        uint32_t n;
        if (a->style == ZC_ONLY || (a->style == MIXED && (s & 0x100))) { /* in place */
            void *w;
            n = tw_ring_reserve_sp(a->r, k, &w);
            for (uint32_t i = 0; i < n; i++) {
                item it = {seq + i, check_of(seq + i)};
                memcpy((uint8_t *)w + i * sizeof(item), &it, sizeof(it));
            }
            tw_ring_commit_sp(a->r, n);
            a->zero_copy += n;
        } else {
            for (uint32_t i = 0; i < k; i++)
                buf[i] = (item){seq + i, check_of(seq + i)};
            n = tw_ring_enqueue_burst_sp(a->r, buf, k);
        }
        if (n == 0)
            idle(&spins);
        seq += n;
    }
    a->moved = seq;
    return NULL;
}

static void take(side_arg *a, const item *it, uint64_t *seq)
{
    if (TW_UNLIKELY(it->seq != *seq || it->check != check_of(*seq))) {
        if (a->bad++ == 0)
            a->first_bad = *seq;
    }
    ++*seq;
}

static void *consume(void *p)
{
    side_arg *a = p;
    item buf[MAX_BURST];
    uint64_t seq = 0, s = 0x7654321;
    unsigned spins = 0;
    while (seq < a->items) {
        uint32_t k = burst_of(&s);
        uint32_t n;
        if (a->style == ZC_ONLY || (a->style == MIXED && (s & 0x200))) { /* in place */
            const void *v;
            n = tw_ring_peek_sc(a->r, k, &v);
            for (uint32_t i = 0; i < n; i++) {
                item it;
                memcpy(&it, (const uint8_t *)v + i * sizeof(item), sizeof(it));
                take(a, &it, &seq);
            }
            tw_ring_release_sc(a->r, n);
            a->zero_copy += n;
        } else {
            n = tw_ring_dequeue_burst_sc(a->r, buf, k);
            for (uint32_t i = 0; i < n; i++)
                take(a, &buf[i], &seq);
        }
        if (n == 0)
            idle(&spins);
    }
    a->moved = seq;
    return NULL;
}

static void report(const char *mode, const side_arg *pa, const side_arg *ca)
{
    CHECK_EQ(pa->moved, pa->items);
    CHECK_EQ(ca->moved, ca->items);
    CHECKF(ca->bad == 0, "%s: %llu items out of sequence, the first at %llu", mode,
           (unsigned long long)ca->bad, (unsigned long long)ca->first_bad);
    /* The calls of the style ran, and only those. */
    if (pa->style == MIXED) {
        CHECK(pa->zero_copy > 0 && pa->zero_copy < pa->items);
        CHECK(ca->zero_copy > 0 && ca->zero_copy < ca->items);
    } else {
        CHECK_EQ(pa->zero_copy, pa->style == ZC_ONLY ? pa->items : 0);
        CHECK_EQ(ca->zero_copy, ca->style == ZC_ONLY ? ca->items : 0);
    }
    static const char *const style[] = {"mixed", "copy only", "zero-copy only"};
    printf("%s, %s: %llu items, in order (zero-copy: %llu in, %llu out)\n", mode,
           style[pa->style], (unsigned long long)ca->moved, (unsigned long long)pa->zero_copy,
           (unsigned long long)ca->zero_copy);
}

static void test_threads(uint64_t items, int style)
{
    size_t len = tw_ring_memsize(COUNT, sizeof(item));
    void *m = NULL;
    REQUIRE(posix_memalign(&m, 64, len) == 0);
    tw_ring *r = m;
    REQUIRE(tw_ring_init(r, COUNT, sizeof(item)) == 0);
    side_arg pa = {.r = r, .style = style, .items = items};
    side_arg ca = {.r = r, .style = style, .items = items};
    pthread_t pt, ct;
    REQUIRE(pthread_create(&ct, NULL, consume, &ca) == 0);
    REQUIRE(pthread_create(&pt, NULL, produce, &pa) == 0);
    pthread_join(pt, NULL);
    pthread_join(ct, NULL);
    report("threads", &pa, &ca);
    CHECK_EQ(tw_ring_count(r), 0);
    CHECK_EQ(tw_ring_error(r, NULL), 0);
    free(m);
}

static void test_processes(uint64_t items, int style)
{
    size_t len = tw_ring_memsize(COUNT, sizeof(item));
    int fd = memfd_create("tw-ring-stress", 0);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, (off_t)len) == 0);
    tw_ring *r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    REQUIRE(r != MAP_FAILED);
    REQUIRE(tw_ring_init(r, COUNT, sizeof(item)) == 0);
    /* The consumer's results come back through a second shared page. */
    side_arg *ca = mmap(NULL, sizeof(*ca), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                        -1, 0);
    REQUIRE(ca != MAP_FAILED);
    *ca = (side_arg){.style = style, .items = items};
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        /* Map the ring again, at another address, and drop the inherited
         * mapping: nothing in the ring may depend on where it is. */
        tw_ring *c = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (c == MAP_FAILED || c == r)
            _exit(2);
        munmap(r, len);
        tw_error err = {0};
        if (tw_ring_attach(c, len, &err) != 0) {
            fprintf(stderr, "child: %s\n", err.msg);
            _exit(3);
        }
        ca->r = c;
        consume(ca);
        _exit(tw_ring_error(c, NULL) == 0 ? 0 : 4);
    }
    side_arg pa = {.r = r, .style = style, .items = items};
    produce(&pa);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "consumer process status 0x%x", st);
    CHECK(r->flags & TW_RING_F_SHARED);
    report("processes", &pa, ca);
    CHECK_EQ(tw_ring_count(r), 0);
    munmap(ca, sizeof(*ca));
    munmap(r, len);
    close(fd);
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "threads") && strcmp(argv[1], "processes"))) {
        fprintf(stderr, "usage: test_ring_stress threads|processes [items]\n");
        return 2;
    }
    uint64_t items = argc > 2 ? strtoull(argv[2], NULL, 0) : DEFAULT_ITEMS;
    /* All the items with both call styles mixed, then an eighth as many
     * with each style alone. */
    void (*run)(uint64_t, int) = !strcmp(argv[1], "threads") ? test_threads : test_processes;
    run(items, MIXED);
    run(items / 8 + 1, COPY_ONLY);
    run(items / 8 + 1, ZC_ONLY);
    return tw_check_done(!strcmp(argv[1], "threads") ? "ring_stress_threads"
                                                     : "ring_stress_processes");
}
