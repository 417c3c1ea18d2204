/* SPSC ring, one thread: geometry, empty, full, wrap (of the slot array
 * and of the 32-bit indices), bursts larger than the free space, the
 * zero-copy calls, a model check against a reference queue, slots placed
 * against a PROT_NONE guard page, and rings that are torn or hostile,
 * attached from another process.  Nothing here depends on timing. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tickwire/ring.h"
#include "tw_check.h"

/* An item of slot_size bytes: the sequence number in the first word, a
 * function of it in every other word (so a torn copy shows). */
static void fill_item(uint8_t *p, uint32_t slot_size, uint64_t seq)
{
    for (uint32_t w = 0; w < slot_size / 8; w++) {
        uint64_t v = w == 0 ? seq : seq * 0x9e3779b97f4a7c15ull + w;
        memcpy(p + 8 * w, &v, 8);
    }
}

static int item_ok(const uint8_t *p, uint32_t slot_size, uint64_t seq)
{
    for (uint32_t w = 0; w < slot_size / 8; w++) {
        uint64_t v, want = w == 0 ? seq : seq * 0x9e3779b97f4a7c15ull + w;
        memcpy(&v, p + 8 * w, 8);
        if (v != want)
            return 0;
    }
    return 1;
}

static tw_ring *ring_new(uint32_t count, uint32_t slot_size)
{
    size_t n = tw_ring_memsize(count, slot_size);
    void *m = NULL;
    if (n == 0 || posix_memalign(&m, 64, n) != 0)
        return NULL;
    memset(m, 0xa5, n); /* init must not depend on zeroed memory */
    if (tw_ring_init((tw_ring *)m, count, slot_size) != 0) {
        free(m);
        return NULL;
    }
    return (tw_ring *)m;
}

static void test_geometry(void)
{
    CHECK_EQ(tw_ring_memsize(1, 8), TW_RING_HDR_BYTES + 8);
    CHECK_EQ(tw_ring_memsize(1024, 64), TW_RING_HDR_BYTES + 65536);
    CHECK_EQ(tw_ring_memsize(0, 8), 0);
    CHECK_EQ(tw_ring_memsize(3, 8), 0);
    CHECK_EQ(tw_ring_memsize(TW_RING_COUNT_MAX * 2u, 8), 0);
    CHECK_EQ(tw_ring_memsize(8, 0), 0);
    CHECK_EQ(tw_ring_memsize(8, 12), 0);
    CHECK_EQ(tw_ring_memsize(8, TW_RING_SLOT_MAX + 8), 0);
    CHECK(tw_ring_memsize(TW_RING_COUNT_MAX, 8) > 0);

    void *m = NULL;
    REQUIRE(posix_memalign(&m, 64, 4096) == 0);
    CHECK_EQ(tw_ring_init((tw_ring *)m, 6, 16), -EINVAL);
    CHECK_EQ(tw_ring_init((tw_ring *)m, 8, 4), -EINVAL);
    CHECK_EQ(tw_ring_init((tw_ring *)((uint8_t *)m + 8), 8, 16), -EINVAL);
    REQUIRE(tw_ring_init((tw_ring *)m, 8, 16) == 0);
    tw_ring *r = (tw_ring *)m;
    CHECK_EQ(tw_ring_capacity(r), 8);
    CHECK_EQ(tw_ring_slot_size(r), 16);
    CHECK_EQ(tw_ring_count(r), 0);
    CHECK_EQ(tw_ring_error(r, NULL), 0);
    free(m);
}

static void test_empty_full(uint32_t count, uint32_t slot_size)
{
    tw_ring *r = ring_new(count, slot_size);
    REQUIRE(r);
    uint8_t item[TW_RING_SLOT_MAX];
    const void *view;
    void *wslot;
    CHECK_EQ(tw_ring_dequeue_burst_sc(r, item, 1), 0);
    CHECK_EQ(tw_ring_peek_sc(r, 4, &view), 0);
    tw_ring_release_sc(r, 0);
    CHECK_EQ(r->cons.calls_empty, 2);
    for (uint32_t i = 0; i < count; i++) {
        fill_item(item, slot_size, i);
        CHECK_EQ(tw_ring_enqueue_burst_sp(r, item, 1), 1);
    }
    CHECK_EQ(tw_ring_count(r), count);
    fill_item(item, slot_size, 999);
    CHECK_EQ(tw_ring_enqueue_burst_sp(r, item, 1), 0);
    CHECK_EQ(tw_ring_reserve_sp(r, 1, &wslot), 0);
    tw_ring_commit_sp(r, 0);
    CHECK_EQ(r->prod.calls_empty, 2);
    for (uint32_t i = 0; i < count; i++) {
        CHECK_EQ(tw_ring_dequeue_burst_sc(r, item, 1), 1);
        CHECKF(item_ok(item, slot_size, i), "item %u of %u x %u", i, count, slot_size);
    }
    CHECK_EQ(tw_ring_dequeue_burst_sc(r, item, 1), 0);
    CHECK_EQ(tw_ring_count(r), 0);
    CHECK_EQ(tw_ring_error(r, NULL), 0);
    free(r);
}

/* Bursts larger than the free space, and over the end of the slot array. */
static void test_bursts(void)
{
    enum { N = 16, S = 24 };
    tw_ring *r = ring_new(N, S);
    REQUIRE(r);
    uint8_t in[3 * N * S], out[3 * N * S];
    for (int i = 0; i < 3 * N; i++)
        fill_item(in + i * S, S, (uint64_t)i);
    CHECK_EQ(tw_ring_enqueue_burst_sp(r, in, 3 * N), N);
    CHECK_EQ(tw_ring_enqueue_burst_sp(r, in, 1), 0);
    CHECK_EQ(tw_ring_dequeue_burst_sc(r, out, 5), 5);
    for (int i = 0; i < 5; i++)
        CHECK(item_ok(out + i * S, S, (uint64_t)i));
    /* 5 free: a burst of 10 moves 5, and they wrap around the end. */
    CHECK_EQ(tw_ring_enqueue_burst_sp(r, in + N * S, 10), 5);
    CHECK_EQ(tw_ring_count(r), N);
    CHECK_EQ(tw_ring_dequeue_burst_sc(r, out, 3 * N), N);
    for (int i = 0; i < N - 5; i++)
        CHECK(item_ok(out + i * S, S, (uint64_t)(5 + i)));
    for (int i = 0; i < 5; i++)
        CHECK(item_ok(out + (N - 5 + i) * S, S, (uint64_t)(N + i)));
    CHECK_EQ(tw_ring_dequeue_burst_sc(r, out, 3 * N), 0);
    CHECK_EQ(tw_ring_enqueue_burst_sp(r, in, 0), 0);
    CHECK_EQ(tw_ring_dequeue_burst_sc(r, out, 0), 0);
    free(r);
}

/* Odd burst sizes around a small ring for many laps, with the 32-bit
 * indices starting just below their wrap, so both the slot array and the
 * counters wrap many times. */
static void test_wrap(uint32_t start)
{
    enum { N = 8, S = 16 };
    tw_ring *r = ring_new(N, S);
    REQUIRE(r);
    r->prod.idx = r->prod.cached = r->cons.idx = r->cons.cached = start;
    uint8_t buf[N * 2 * S];
    uint64_t wseq = 0, rseq = 0;
    for (int lap = 0; lap < 2000; lap++) {
        uint32_t k = (uint32_t)(lap % 11) + 1;
        for (uint32_t i = 0; i < k; i++)
            fill_item(buf + i * S, S, wseq + i);
        uint32_t free_before = N - tw_ring_count(r);
        uint32_t put = tw_ring_enqueue_burst_sp(r, buf, k);
        CHECK_EQ(put, k < free_before ? k : free_before);
        wseq += put;
        uint32_t want = (uint32_t)(lap % 7) + 1;
        uint32_t got = tw_ring_dequeue_burst_sc(r, buf, want);
        for (uint32_t i = 0; i < got; i++)
            CHECKF(item_ok(buf + i * S, S, rseq + i), "lap %d item %llu", lap,
                   (unsigned long long)(rseq + i));
        rseq += got;
        CHECK_EQ(tw_ring_count(r), wseq - rseq);
    }
    CHECK(r->prod.idx - start > N * 100u);
    CHECK_EQ(tw_ring_error(r, NULL), 0);
    free(r);
}

static void test_zero_copy(void)
{
    enum { N = 8, S = 16 };
    tw_ring *r = ring_new(N, S);
    REQUIRE(r);
    uint8_t *base = (uint8_t *)r + TW_RING_HDR_BYTES;
    void *w;
    const void *v;
    /* Reserve more than the ring: a contiguous run of N. */
    CHECK_EQ(tw_ring_reserve_sp(r, 3 * N, &w), N);
    CHECK(w == base);
    for (int i = 0; i < 6; i++)
        fill_item((uint8_t *)w + i * S, S, (uint64_t)i);
    tw_ring_commit_sp(r, 6); /* fewer than reserved */
    CHECK_EQ(tw_ring_count(r), 6);
    CHECK_EQ(tw_ring_peek_sc(r, 4, &v), 4);
    CHECK(v == base);
    for (int i = 0; i < 4; i++)
        CHECK(item_ok((const uint8_t *)v + i * S, S, (uint64_t)i));
    tw_ring_release_sc(r, 4);
    /* Head at 6: a reservation stops at the end of the array (2 slots),
     * then continues at its start. */
    CHECK_EQ(tw_ring_reserve_sp(r, 5, &w), 2);
    CHECK(w == base + 6 * S);
    fill_item((uint8_t *)w, S, 6);
    fill_item((uint8_t *)w + S, S, 7);
    tw_ring_commit_sp(r, 2);
    CHECK_EQ(tw_ring_reserve_sp(r, 5, &w), 4); /* 4 free: tail is at 4 */
    CHECK(w == base);
    for (int i = 0; i < 4; i++)
        fill_item((uint8_t *)w + i * S, S, (uint64_t)(8 + i));
    tw_ring_commit_sp(r, 4);
    CHECK_EQ(tw_ring_reserve_sp(r, 1, &w), 0);
    tw_ring_commit_sp(r, 0);
    CHECK_EQ(tw_ring_count(r), N);
    /* Peek stops at the end of the array too; the copy path mixes in. */
    CHECK_EQ(tw_ring_peek_sc(r, N, &v), 4);
    CHECK(v == base + 4 * S);
    for (int i = 0; i < 4; i++)
        CHECK(item_ok((const uint8_t *)v + i * S, S, (uint64_t)(4 + i)));
    tw_ring_release_sc(r, 1);
    uint8_t out[N * S];
    CHECK_EQ(tw_ring_dequeue_burst_sc(r, out, N), 7);
    for (int i = 0; i < 7; i++)
        CHECK(item_ok(out + i * S, S, (uint64_t)(5 + i)));
    CHECK_EQ(tw_ring_peek_sc(r, 1, &v), 0);
    tw_ring_release_sc(r, 0);
    CHECK_EQ(tw_ring_error(r, NULL), 0);
    free(r);
}

/* xorshift64*: the model check's generator (seed printed on failure). */
static uint64_t rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* Random mixes of every call against a counter model: what goes in comes
 * out in order, counts are min(asked, free/available), never more. */
static void test_model(uint64_t seed)
{
    enum { N = 32, S = 40 };
    tw_ring *r = ring_new(N, S);
    REQUIRE(r);
    uint64_t s = seed, wseq = 0, rseq = 0;
    uint8_t buf[2 * N * S];
    int fails_before = tw_check_failures;
    for (int step = 0; step < 200000 && tw_check_failures == fails_before; step++) {
        uint32_t k = (uint32_t)(rnd(&s) % (2 * N)) + 1;
        uint32_t used = (uint32_t)(wseq - rseq);
        uint32_t got;
        switch (rnd(&s) % 4) {
        case 0:
            for (uint32_t i = 0; i < k; i++)
                fill_item(buf + i * S, S, wseq + i);
            got = tw_ring_enqueue_burst_sp(r, buf, k);
            CHECKF(got == (k < N - used ? k : N - used), "seed %llu step %d enqueue",
                   (unsigned long long)seed, step);
            wseq += got;
            break;
        case 1: {
            void *w;
            got = tw_ring_reserve_sp(r, k, &w);
            uint32_t contiguous = N - (uint32_t)(wseq % N);
            uint32_t lim = N - used < contiguous ? N - used : contiguous;
            CHECKF(got == (k < lim ? k : lim), "seed %llu step %d reserve",
                   (unsigned long long)seed, step);
            uint32_t c = got ? (uint32_t)(rnd(&s) % (got + 1)) : 0;
            for (uint32_t i = 0; i < c; i++)
                fill_item((uint8_t *)w + i * S, S, wseq + i);
            tw_ring_commit_sp(r, c);
            wseq += c;
            break;
        }
        case 2:
            got = tw_ring_dequeue_burst_sc(r, buf, k);
            CHECKF(got == (k < used ? k : used), "seed %llu step %d dequeue",
                   (unsigned long long)seed, step);
            for (uint32_t i = 0; i < got; i++)
                CHECKF(item_ok(buf + i * S, S, rseq + i), "seed %llu step %d item",
                       (unsigned long long)seed, step);
            rseq += got;
            break;
        default: {
            const void *v;
            got = tw_ring_peek_sc(r, k, &v);
            uint32_t contiguous = N - (uint32_t)(rseq % N);
            uint32_t lim = used < contiguous ? used : contiguous;
            CHECKF(got == (k < lim ? k : lim), "seed %llu step %d peek",
                   (unsigned long long)seed, step);
            for (uint32_t i = 0; i < got; i++)
                CHECKF(item_ok((const uint8_t *)v + i * S, S, rseq + i),
                       "seed %llu step %d peeked item", (unsigned long long)seed, step);
            uint32_t c = got ? (uint32_t)(rnd(&s) % (got + 1)) : 0;
            tw_ring_release_sc(r, c);
            rseq += c;
            break;
        }
        }
        CHECK_EQ(tw_ring_count(r), wseq - rseq);
    }
    CHECK(wseq > 100000);
    free(r);
}

/* The ring as the last bytes before a PROT_NONE page, its start where
 * the caller's memory starts: every call's slot accesses stay inside. */
static void test_guard_page(uint32_t count, uint32_t slot_size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t need = tw_ring_memsize(count, slot_size);
    size_t span = (need + page - 1) / page * page;
    uint8_t *m = mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
    REQUIRE(m != MAP_FAILED);
    REQUIRE(mprotect(m + span, page, PROT_NONE) == 0);
    uint8_t *start = m + span - need;
    start -= (uintptr_t)start % 64; /* at most 63 bytes short of the guard */
    tw_ring *r = (tw_ring *)start;
    REQUIRE(tw_ring_init(r, count, slot_size) == 0);
    static uint8_t buf[5 * 4096];
    uint64_t wseq = 0, rseq = 0;
    for (int lap = 0; lap < 100; lap++) {
        uint32_t k = (uint32_t)(lap % 5) + 1;
        for (uint32_t i = 0; i < k; i++)
            fill_item(buf + i * slot_size, slot_size, wseq + i);
        wseq += tw_ring_enqueue_burst_sp(r, buf, k);
        void *w;
        uint32_t z = tw_ring_reserve_sp(r, 3, &w);
        for (uint32_t i = 0; i < z; i++)
            fill_item((uint8_t *)w + i * slot_size, slot_size, wseq + i);
        tw_ring_commit_sp(r, z);
        wseq += z;
        const void *v;
        uint32_t p = tw_ring_peek_sc(r, 2, &v);
        for (uint32_t i = 0; i < p; i++)
            CHECK(item_ok((const uint8_t *)v + i * slot_size, slot_size, rseq + i));
        tw_ring_release_sc(r, p);
        rseq += p;
        uint32_t got = tw_ring_dequeue_burst_sc(r, buf, (uint32_t)(lap % 4) + 1);
        for (uint32_t i = 0; i < got; i++)
            CHECK(item_ok(buf + i * slot_size, slot_size, rseq + i));
        rseq += got;
    }
    CHECK(wseq > 4 * count);
    munmap(m, span + page);
}

/* ---- Attaching torn and hostile rings, from another process. ---- */

enum { HC = 16, HS = 32 };

typedef struct hostile_case {
    const char *name;
    void (*corrupt)(tw_ring *r, size_t *len);
    int code;
    const char *says; /* a substring of the error message */
} hostile_case;

static void c_none(tw_ring *r, size_t *len) { (void)r, (void)len; }
static void c_small_map(tw_ring *r, size_t *len) { (void)r, *len = 100; }
static void c_short_slots(tw_ring *r, size_t *len) { (void)r, *len -= HS; }
static void c_torn_init(tw_ring *r, size_t *len) { (void)len, r->magic = 0; }
static void c_garbage(tw_ring *r, size_t *len)
{
    uint64_t s = 77;
    for (size_t i = 0; i < *len; i++)
        ((uint8_t *)r)[i] = (uint8_t)rnd(&s);
}
static void c_version(tw_ring *r, size_t *len) { (void)len, r->version = 7; }
static void c_hdr(tw_ring *r, size_t *len) { (void)len, r->hdr_bytes = 64; }
static void c_count(tw_ring *r, size_t *len) { (void)len, r->count = 12; }
static void c_count_big(tw_ring *r, size_t *len) { (void)len, r->count = 1u << 20; }
static void c_slot(tw_ring *r, size_t *len) { (void)len, r->slot_size = 20; }
static void c_mem(tw_ring *r, size_t *len) { (void)len, r->mem_bytes += 8; }
static void c_mask(tw_ring *r, size_t *len) { (void)len, r->cons.mask = 0xffff; }
static void c_side_slot(tw_ring *r, size_t *len) { (void)len, r->prod.slot_size = 64; }
static void c_pending(tw_ring *r, size_t *len) { (void)len, r->prod.pending = HC + 1; }
static void c_indices(tw_ring *r, size_t *len)
{
    (void)len;
    r->prod.idx = 1000;
    r->cons.idx = 3;
}
static void c_tail_ahead(tw_ring *r, size_t *len)
{
    (void)len;
    r->prod.idx = 5;
    r->cons.idx = 9;
}
static void c_cached(tw_ring *r, size_t *len)
{
    (void)len;
    r->prod.idx = 10;
    r->cons.idx = 4;
    r->prod.cached = 5000;
}
static void c_cons_cached(tw_ring *r, size_t *len)
{
    (void)len;
    r->prod.idx = 10;
    r->cons.idx = 4;
    r->prod.cached = 4;
    r->cons.cached = 2;
}
static void c_stopped(tw_ring *r, size_t *len)
{
    (void)len;
    r->cons.bad = TW_RING_BAD_PEER_AHEAD;
}

static const hostile_case hostile[] = {
    {"valid ring", c_none, 0, ""},
    {"mapping smaller than the header", c_small_map, -EINVAL, "smaller than the"},
    {"mapping shorter than the slots", c_short_slots, -EINVAL, "the mapping has"},
    {"torn: initialisation not finished", c_torn_init, -EPROTO, "not finished"},
    {"random bytes", c_garbage, -EPROTO, "not a tickwire ring"},
    {"other layout version", c_version, -EPROTONOSUPPORT, "version 7"},
    {"header size", c_hdr, -EBADMSG, "header size 64"},
    {"count not a power of two", c_count, -EBADMSG, "count 12"},
    {"count beyond the mapping", c_count_big, -EBADMSG, "need"},
    {"slot size not a multiple of 8", c_slot, -EBADMSG, "slot size 20"},
    {"mem_bytes disagrees", c_mem, -EBADMSG, "header says"},
    {"consumer's mask", c_mask, -EBADMSG, "consumer region: mask 65535"},
    {"producer's slot size", c_side_slot, -EBADMSG, "producer region: slot size 64"},
    {"pending beyond the ring", c_pending, -EBADMSG, "pending"},
    {"indices more than count apart", c_indices, -EBADMSG, "more than count apart"},
    {"tail ahead of head", c_tail_ahead, -EBADMSG, "more than count apart"},
    {"producer's cached tail", c_cached, -EBADMSG, "cached tail 5000"},
    {"consumer's cached head", c_cons_cached, -EBADMSG, "cached head 2"},
    {"a side already stopped", c_stopped, -EBADMSG, "consumer stopped"},
};

/* Builds the case in a memfd, then a child process maps it (at its own
 * address) and attaches; the child sends back the code and message. */
static void test_hostile_case(const hostile_case *hc)
{
    size_t len = tw_ring_memsize(HC, HS);
    int fd = memfd_create("tw-ring-hostile", 0);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, (off_t)len) == 0);
    tw_ring *r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    REQUIRE(r != MAP_FAILED);
    REQUIRE(tw_ring_init(r, HC, HS) == 0);
    size_t map_len = len;
    hc->corrupt(r, &map_len);
    int pfd[2];
    REQUIRE(pipe(pfd) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        /* A mapping of exactly map_len bytes (rounded up to a page by the
         * kernel; the ring must not read past map_len regardless). */
        tw_ring *c = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        tw_error err = {0};
        int rc = c == MAP_FAILED ? -ENOMEM : tw_ring_attach(c, map_len, &err);
        if (write(pfd[1], &rc, sizeof(rc)) != sizeof(rc) ||
            write(pfd[1], err.msg, sizeof(err.msg)) != sizeof(err.msg))
            _exit(3);
        _exit(0);
    }
    close(pfd[1]);
    int rc = 1;
    char msg[sizeof(((tw_error *)0)->msg)] = "";
    CHECK(read(pfd[0], &rc, sizeof(rc)) == sizeof(rc));
    CHECK(read(pfd[0], msg, sizeof(msg)) == sizeof(msg));
    msg[sizeof(msg) - 1] = 0;
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child status 0x%x", hc->name, st);
    CHECKF(rc == hc->code, "%s: attach returned %d (%s), expected %d", hc->name, rc, msg,
           hc->code);
    CHECKF(strstr(msg, hc->says) != NULL, "%s: message '%s' does not say '%s'", hc->name, msg,
           hc->says);
    if (hc->code == 0) /* the child's attach marked it shared */
        CHECK(r->flags & TW_RING_F_SHARED);
    close(pfd[0]);
    munmap(r, len);
    close(fd);
}

/* After attach (the peer is another process), a bad index the peer
 * publishes stops the side with an error, never an abort. */
static void test_bad_peer_index(void)
{
    tw_ring *r = ring_new(HC, HS);
    REQUIRE(r);
    REQUIRE(tw_ring_attach(r, tw_ring_memsize(HC, HS), NULL) == 0);
    uint8_t buf[HC * HS];
    for (int i = 0; i < 3; i++)
        fill_item(buf + i * HS, HS, (uint64_t)i);
    CHECK_EQ(tw_ring_enqueue_burst_sp(r, buf, 3), 3);
    CHECK_EQ(tw_ring_dequeue_burst_sc(r, buf, 1), 1);
    /* The peer's head jumps 1000 ahead: the consumer's refresh (it holds 2
     * cached, asks for 5) sees it and stops. */
    r->prod.idx += 1000;
    CHECK_EQ(tw_ring_dequeue_burst_sc(r, buf, 5), 0);
    tw_error err = {0};
    CHECK_EQ(tw_ring_error(r, &err), -EBADMSG);
    CHECKF(strstr(err.msg, "consumer stopped") && strstr(err.msg, "producer head 1003"),
           "%s", err.msg);
    /* It stays stopped, even when the index comes back. */
    r->prod.idx -= 1000;
    CHECK_EQ(tw_ring_dequeue_burst_sc(r, buf, 1), 0);
    const void *v;
    CHECK_EQ(tw_ring_peek_sc(r, 1, &v), 0);
    /* The producer: the consumer's tail moves backwards. */
    CHECK_EQ(tw_ring_enqueue_burst_sp(r, buf, HC), HC - 2); /* fills its cache */
    r->cons.idx = 0xfffffff0u;
    CHECK_EQ(tw_ring_enqueue_burst_sp(r, buf, 1), 0);
    tw_ring_side *p = &r->prod;
    CHECK_EQ(p->bad, TW_RING_BAD_PEER_AHEAD);
    CHECK_EQ(tw_ring_enqueue_burst_sp(r, buf, 1), 0);
    /* Committing more than reserved: a stop too on a shared ring. */
    tw_ring *q = ring_new(HC, HS);
    REQUIRE(q);
    REQUIRE(tw_ring_attach(q, tw_ring_memsize(HC, HS), NULL) == 0);
    void *w;
    CHECK_EQ(tw_ring_reserve_sp(q, 2, &w), 2);
    tw_ring_commit_sp(q, 3);
    CHECK_EQ(tw_ring_error(q, &err), -EBADMSG);
    CHECKF(strstr(err.msg, "3 slots committed, only 2 were reserved"), "%s", err.msg);
    CHECK_EQ(tw_ring_count(q), 0);
    free(q);
    free(r);
}

/* On a ring nobody attached, a bad index is our own bug: TW_VERIFY. */
static void expect_abort(const char *what, void (*fn)(void))
{
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        /* Silence the expected report. */
        if (!freopen("/dev/null", "w", stderr))
            _exit(4);
        fn();
        _exit(0);
    }
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s: child status 0x%x, expected SIGABRT",
           what, st);
}

static void own_bad_index(void)
{
    tw_ring *r = ring_new(HC, HS);
    uint8_t buf[HS];
    r->prod.idx = 5000;
    (void)tw_ring_dequeue_burst_sc(r, buf, 1);
}

static void own_bad_commit(void)
{
    tw_ring *r = ring_new(HC, HS);
    const void *v;
    (void)tw_ring_peek_sc(r, 1, &v);
    tw_ring_release_sc(r, 1);
}

int main(void)
{
    test_geometry();
    const uint32_t sizes[] = {8, 16, 24, 64, 72, 4096};
    for (size_t i = 0; i < TW_ARRAY_SIZE(sizes); i++) {
        test_empty_full(1, sizes[i]);
        test_empty_full(2, sizes[i]);
        test_empty_full(64, sizes[i]);
        test_guard_page(8, sizes[i]);
        test_guard_page(32, sizes[i]);
    }
    test_bursts();
    test_wrap(0);
    test_wrap(0xffffffffu - 37);
    test_wrap(0x7ffffffau);
    test_zero_copy();
    const char *seed_env = getenv("TW_TEST_SEED");
    uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : 20240611;
    test_model(seed);
    test_model(seed + 1);
    for (size_t i = 0; i < TW_ARRAY_SIZE(hostile); i++)
        test_hostile_case(&hostile[i]);
    test_bad_peer_index();
    expect_abort("bad index on an unshared ring", own_bad_index);
    expect_abort("release beyond the peek on an unshared ring", own_bad_commit);
    return tw_check_done("ring");
}
