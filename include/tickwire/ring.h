/* Single-producer single-consumer ring of fixed-size slots (live.md,
 * "Threads, processes and rings").
 *
 * The ring carries decoded events, not bytes: every slot is slot_size
 * bytes, count is a power of two.  It lives entirely in caller memory
 * (tw_ring_memsize() bytes, 64-byte aligned) and holds no pointer, so the
 * same ring works between two threads and between two processes that map
 * the same memfd or /dev/shm file at different addresses: one process
 * calls tw_ring_init(), the other tw_ring_attach(), which validates what
 * it maps (a torn or hostile ring is an error that names what is wrong).
 *
 * Layout (128-byte regions, so that the adjacent-line prefetcher of one
 * side never pulls in the other side's line):
 *
 *     0    geometry: magic, version, count, slot size, sizes (written once
 *          by init; read by attach)
 *     128  producer region: head, the producer's cached copy of the
 *          consumer's tail, its copy of the geometry, its error state
 *     256  consumer region: tail, the consumer's cached copy of head, ...
 *     384  count slots of slot_size bytes
 *
 * Indices are free-running 32-bit counters (slot = index & mask); the ring
 * is full when head - tail == count, so all count slots are used.  Each
 * side reads only its own region on the fast path and looks at the other
 * side's index only when its cached copy says the ring is full (producer)
 * or empty (consumer), which is what keeps the cache line transfers per
 * item low.
 *
 * Index checks: whenever a side reads the other side's index it checks it
 * (at most count apart, never moving backwards).  On a ring this process
 * initialised and nobody attached, a failed check is a bug of ours:
 * TW_VERIFY.  Once a ring has been attached (the peer is another process)
 * it is outside input: the side stops (its calls move nothing from then
 * on) and tw_ring_error() names what was wrong.  Slot addresses are always
 * masked, so no index value can make a call touch memory outside the ring;
 * the geometry itself is checked by tw_ring_attach() and is trusted after
 * that (a peer must never rewrite it).
 *
 * One producer thread and one consumer thread at a time: the _sp / _sc
 * suffixes (DPDK, ck) say so.  Other threads may call the read-only
 * queries (tw_ring_count, tw_ring_error). */
#ifndef TICKWIRE_RING_H
#define TICKWIRE_RING_H

#include <stdint.h>
#include <string.h>

#include "tickwire/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TW_RING_MAGIC 0x31474e4952575454ull /* "TTWRING1" little-endian */
#define TW_RING_VERSION 1u
#define TW_RING_REGION 128u
#define TW_RING_HDR_BYTES (3u * TW_RING_REGION)
#define TW_RING_COUNT_MAX (1u << 30)
#define TW_RING_SLOT_MAX (1u << 16)

/* Flags in tw_ring.flags. */
#define TW_RING_F_SHARED 1u /* tw_ring_attach() was called: the peer is outside input */

/* What a side found wrong (tw_ring_side.bad). */
enum {
    TW_RING_OK = 0,
    TW_RING_BAD_PEER_AHEAD = 1,  /* the other side's index is more than count away */
    TW_RING_BAD_PEER_BACK = 2,   /* the other side's index moved backwards */
    TW_RING_BAD_COMMIT = 3,      /* more slots committed/released than reserved/peeked */
};

/* One side's region.  Written only by its side (the other side reads idx). */
typedef struct tw_ring_side {
    uint32_t idx;      /* producer: head (next index to write); consumer: tail
                          (next index to read).  Atomic: see the functions. */
    uint32_t cached;   /* this side's last seen value of the other side's idx */
    uint32_t mask;     /* count - 1 (this side's copy of the geometry) */
    uint32_t slot_size;
    uint32_t pending;  /* slots reserved (producer) / peeked (consumer) and not
                          yet committed / released */
    uint32_t bad;      /* TW_RING_BAD_* once this side stopped, else 0 */
    uint32_t bad_a;    /* the values that failed the check */
    uint32_t bad_b;
    uint64_t calls_empty; /* producer: enqueues that found the ring full;
                             consumer: dequeues that found it empty */
    uint8_t pad_[TW_RING_REGION - 40];
} tw_ring_side;

typedef struct tw_ring {
    /* Geometry, written by init before magic; never written after that
     * except flags (by attach). */
    uint64_t magic;     /* TW_RING_MAGIC; release-stored last by init */
    uint32_t version;   /* TW_RING_VERSION */
    uint32_t hdr_bytes; /* TW_RING_HDR_BYTES: where the slots start */
    uint32_t count;
    uint32_t slot_size;
    uint64_t mem_bytes; /* tw_ring_memsize(count, slot_size) */
    uint32_t flags;     /* TW_RING_F_*; atomic (attach sets SHARED) */
    uint32_t pad0_;
    uint8_t pad1_[TW_RING_REGION - 40];
    tw_ring_side prod TW_CACHE_ALIGNED;
    tw_ring_side cons TW_CACHE_ALIGNED;
    /* count * slot_size bytes of slots follow at hdr_bytes. */
} tw_ring;

/* The layout is part of the cross-process contract (TW_RING_VERSION).
 * (C only: C++ spells it static_assert.) */
#ifndef __cplusplus
_Static_assert(sizeof(tw_ring_side) == TW_RING_REGION, "ring side region size");
_Static_assert(offsetof(tw_ring, magic) == 0, "ring magic offset");
_Static_assert(offsetof(tw_ring, mem_bytes) == 24, "ring mem_bytes offset");
_Static_assert(offsetof(tw_ring, flags) == 32, "ring flags offset");
_Static_assert(offsetof(tw_ring, prod) == TW_RING_REGION, "ring producer region offset");
_Static_assert(offsetof(tw_ring, cons) == 2 * TW_RING_REGION, "ring consumer region offset");
_Static_assert(offsetof(tw_ring_side, idx) == 0, "ring index at the start of its line");
_Static_assert(offsetof(tw_ring_side, calls_empty) == 32, "ring side counters offset");
_Static_assert(sizeof(tw_ring) == TW_RING_HDR_BYTES, "ring header size");
#endif

/* Bytes of memory a ring of count slots of slot_size bytes needs (header
 * and slots), or 0 if the geometry is invalid: count a power of two in
 * [1, TW_RING_COUNT_MAX], slot_size a multiple of 8 in [8, TW_RING_SLOT_MAX]. */
size_t tw_ring_memsize(uint32_t count, uint32_t slot_size);

/* Initialises a ring in r, which must be tw_ring_memsize(count, slot_size)
 * bytes, 64-byte aligned, owned by the caller (mapped or not).  Writes the
 * magic last, so a process attaching concurrently sees either no ring or a
 * whole one.  Returns 0, or -EINVAL for a bad geometry or misaligned r. */
int tw_ring_init(tw_ring *r, uint32_t count, uint32_t slot_size);

/* Validates a ring that another process initialised in memory mapped here
 * (mem_bytes of it at r): magic, version, geometry against mem_bytes, both
 * sides' copies of the geometry, and the indices (at most count apart,
 * cached copies between them, nothing pending beyond the ring).  Marks the
 * ring shared (from now on a bad index is an error, not an abort).  Never
 * reads beyond mem_bytes.  Returns 0, or a negative code with err naming
 * the field and its value: -EINVAL (memory too small or misaligned),
 * -EPROTO (no magic: not a ring, or not yet initialised), -EPROTONOSUPPORT
 * (another layout version), -EBADMSG (bad geometry or indices). */
int tw_ring_attach(tw_ring *r, size_t mem_bytes, tw_error *err);

/* 0 while both sides run, else -EBADMSG with err (if not NULL) saying
 * which side stopped on which check and the values it saw. */
int tw_ring_error(const tw_ring *r, tw_error *err);

static inline uint32_t tw_ring_capacity(const tw_ring *r) { return r->prod.mask + 1u; }
static inline uint32_t tw_ring_slot_size(const tw_ring *r) { return r->prod.slot_size; }

/* Items in the ring as seen now (exact only when both sides are quiet). */
static inline uint32_t tw_ring_count(const tw_ring *r)
{
    /* Relaxed: a snapshot for statistics, ordering nothing. */
    uint32_t t = __atomic_load_n(&r->cons.idx, __ATOMIC_RELAXED);
    uint32_t h = __atomic_load_n(&r->prod.idx, __ATOMIC_RELAXED);
    uint32_t n = h - t;
    return n > r->prod.mask + 1u ? 0u : n;
}

/* Out of line: records (or, on an unshared ring, TW_VERIFYs) a failed
 * check and stops side s.  Returns 0 (the count the caller returns). */
uint32_t tw__ring_bad(tw_ring *r, tw_ring_side *s, uint32_t code, uint32_t a, uint32_t b);
/* The same for a peer index that failed the fast check: works out which
 * check (too far ahead, or backwards) from s's own state. */
uint32_t tw__ring_bad_peer(tw_ring *r, tw_ring_side *s, uint32_t peer);

static inline uint8_t *tw__ring_slot(tw_ring *r, uint32_t off, uint32_t size)
{
    return (uint8_t *)r + TW_RING_HDR_BYTES + (size_t)off * size;
}

/* Copies bytes (a multiple of 8, at least 8) with a few fixed-size moves
 * when it is at most 64, the last ones overlapping (no call, no loop for
 * one event); memcpy beyond.  GCC, seeing a caller's 16-byte item and the
 * 64-byte branch it cannot rule out (the size is the ring's, known at run
 * time), would warn about the branch that never runs for that caller. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#if __GNUC__ >= 11
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif
#endif
static inline void tw__ring_copy(void *dst, const void *src, size_t bytes)
{
    typedef struct { uint64_t w[2]; } w16;
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    if (bytes <= 16) {
        /* 8 or 16: one move each way, so that a caller's 16-byte store
         * forwards to our load whole (two halves may not forward). */
        if (bytes == 8) {
            memcpy(d, s, 8);
        } else {
            w16 a;
            memcpy(&a, s, 16);
            memcpy(d, &a, 16);
        }
    } else if (bytes <= 32) {
        w16 a, b;
        memcpy(&a, s, 16);
        memcpy(&b, s + bytes - 16, 16);
        memcpy(d, &a, 16);
        memcpy(d + bytes - 16, &b, 16);
    } else if (bytes <= 64) {
        w16 a, b, c, e;
        memcpy(&a, s, 16);
        memcpy(&b, s + 16, 16);
        memcpy(&c, s + bytes - 32, 16);
        memcpy(&e, s + bytes - 16, 16);
        memcpy(d, &a, 16);
        memcpy(d + 16, &b, 16);
        memcpy(d + bytes - 32, &c, 16);
        memcpy(d + bytes - 16, &e, 16);
    } else {
        memcpy(d, s, bytes);
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* The producer's free slots after reading the consumer's tail, when its
 * cached copy showed free_n (fewer than it wanted). */
static inline uint32_t tw__ring_prod_refresh(tw_ring *r, uint32_t head, uint32_t free_n)
{
    tw_ring_side *p = &r->prod;
    if (TW_UNLIKELY(p->bad))
        return 0;
    uint32_t cap = p->mask + 1u;
    /* Acquire pairs with the consumer's release-store of its tail in
     * tw_ring_dequeue_burst_sc / tw_ring_release_sc: once we see the new
     * tail, the consumer's reads of those slots are done and we may
     * overwrite them. */
    uint32_t tail = __atomic_load_n(&r->cons.idx, __ATOMIC_ACQUIRE);
    /* The tail moves from our cached copy towards head and never past it:
     * tail - cached <= head - cached = cap - free_n.  One compare catches
     * both a tail beyond head and one that went backwards (it wraps). */
    if (TW_UNLIKELY(tail - p->cached > cap - free_n))
        return tw__ring_bad_peer(r, p, tail);
    p->cached = tail;
    return tail + cap - head;
}

/* The consumer's readable items after reading the producer's head, when
 * its cached copy showed avail (fewer than it wanted). */
static inline uint32_t tw__ring_cons_refresh(tw_ring *r, uint32_t tail, uint32_t avail)
{
    tw_ring_side *c = &r->cons;
    if (TW_UNLIKELY(c->bad))
        return 0;
    uint32_t cap = c->mask + 1u;
    /* Acquire pairs with the producer's release-store of head in
     * tw_ring_enqueue_burst_sp / tw_ring_commit_sp: the slot writes before
     * that store are visible once we see the new head. */
    uint32_t head = __atomic_load_n(&r->prod.idx, __ATOMIC_ACQUIRE);
    /* head moves forward from our cached copy, at most cap past the tail:
     * head - cached <= cap - avail.  One compare for too far ahead and for
     * backwards. */
    if (TW_UNLIKELY(head - c->cached > cap - avail))
        return tw__ring_bad_peer(r, c, head);
    c->cached = head;
    return head - tail;
}

/* Copies up to n items (n * slot_size bytes at items, caller's memory)
 * into the ring.  Returns how many were enqueued (0 when full, or when the
 * producer side stopped on a bad index: see tw_ring_error). */
static inline uint32_t tw_ring_enqueue_burst_sp(tw_ring *r, const void *items, uint32_t n)
{
    tw_ring_side *p = &r->prod;
    uint32_t head = p->idx; /* our own index: only we write it */
    uint32_t mask = p->mask, size = p->slot_size;
    uint32_t free_n = p->cached + mask + 1u - head;
    if (TW_UNLIKELY(free_n < n)) {
        free_n = tw__ring_prod_refresh(r, head, free_n);
        if (n > free_n)
            n = free_n;
        if (n == 0) {
            p->calls_empty++;
            return 0;
        }
    }
    TW_ASSERT(p->pending == 0); /* no enqueue between reserve and commit */
    uint32_t off = head & mask;
    const uint8_t *src = (const uint8_t *)items;
    if (TW_LIKELY(off + n <= mask + 1u)) {
        tw__ring_copy(tw__ring_slot(r, off, size), src, (size_t)n * size);
    } else {
        uint32_t first = mask + 1u - off; /* slots before the wrap */
        memcpy(tw__ring_slot(r, off, size), src, (size_t)first * size);
        memcpy(tw__ring_slot(r, 0, size), src + (size_t)first * size,
               (size_t)(n - first) * size);
    }
    /* Release pairs with the consumer's acquire-load of head in
     * tw__ring_cons_refresh: the slot writes above are visible before it
     * can see the new head. */
    __atomic_store_n(&p->idx, head + n, __ATOMIC_RELEASE);
    return n;
}

/* Copies up to n items out of the ring into items (n * slot_size bytes,
 * caller's memory).  Returns how many were dequeued (0 when empty, or when
 * the consumer side stopped on a bad index). */
static inline uint32_t tw_ring_dequeue_burst_sc(tw_ring *r, void *items, uint32_t n)
{
    tw_ring_side *c = &r->cons;
    uint32_t tail = c->idx; /* our own index */
    uint32_t mask = c->mask, size = c->slot_size;
    uint32_t avail = c->cached - tail;
    if (TW_UNLIKELY(avail < n)) {
        avail = tw__ring_cons_refresh(r, tail, avail);
        if (n > avail)
            n = avail;
        if (n == 0) {
            c->calls_empty++;
            return 0;
        }
    }
    TW_ASSERT(c->pending == 0); /* no dequeue between peek and release */
    uint32_t off = tail & mask;
    uint8_t *dst = (uint8_t *)items;
    if (TW_LIKELY(off + n <= mask + 1u)) {
        tw__ring_copy(dst, tw__ring_slot(r, off, size), (size_t)n * size);
    } else {
        uint32_t first = mask + 1u - off;
        memcpy(dst, tw__ring_slot(r, off, size), (size_t)first * size);
        memcpy(dst + (size_t)first * size, tw__ring_slot(r, 0, size),
               (size_t)(n - first) * size);
    }
    /* Release pairs with the producer's acquire-load of tail in
     * tw__ring_prod_refresh: our reads of these slots are done before it
     * can see them free and overwrite them. */
    __atomic_store_n(&c->idx, tail + n, __ATOMIC_RELEASE);
    return n;
}

/* Zero-copy enqueue, step 1: reserves up to n free slots at the
 * producer's index, contiguous in memory (a run stops at the end of the
 * slot array: call again after committing for the rest).  Returns k
 * (0..n) and *slot = the first of them; the caller writes them in place
 * (slot i at *slot + i * slot_size) and publishes them with
 * tw_ring_commit_sp().  The slots belong to the producer until then. */
static inline uint32_t tw_ring_reserve_sp(tw_ring *r, uint32_t n, void **slot)
{
    tw_ring_side *p = &r->prod;
    uint32_t head = p->idx, mask = p->mask;
    uint32_t off = head & mask;
    if (TW_UNLIKELY(n > mask + 1u - off))
        n = mask + 1u - off;
    uint32_t free_n = p->cached + mask + 1u - head;
    if (TW_UNLIKELY(free_n < n)) {
        free_n = tw__ring_prod_refresh(r, head, free_n);
        if (n > free_n)
            n = free_n;
        if (n == 0)
            p->calls_empty++;
    }
    *slot = tw__ring_slot(r, off, p->slot_size);
    p->pending = n;
    return n;
}

/* Zero-copy enqueue, step 2: publishes the first k (<= the count
 * reserved) slots of the last reservation.  Committing more than was
 * reserved is a caller bug (TW_VERIFY on an unshared ring). */
static inline void tw_ring_commit_sp(tw_ring *r, uint32_t k)
{
    tw_ring_side *p = &r->prod;
    if (TW_UNLIKELY(k > p->pending)) {
        (void)tw__ring_bad(r, p, TW_RING_BAD_COMMIT, k, p->pending);
        return;
    }
    p->pending = 0;
    /* Release pairs with the consumer's acquire-load of head in
     * tw__ring_cons_refresh: the caller's in-place writes are visible
     * first. */
    __atomic_store_n(&p->idx, p->idx + k, __ATOMIC_RELEASE);
}

/* Zero-copy dequeue, step 1: up to n readable items at the consumer's
 * index, contiguous in memory (a run stops at the end of the slot array).
 * Returns k (0..n) and *slot = the first; the caller reads them in place
 * and gives them back with tw_ring_release_sc().  The slots stay valid and
 * unchanged until then. */
static inline uint32_t tw_ring_peek_sc(tw_ring *r, uint32_t n, const void **slot)
{
    tw_ring_side *c = &r->cons;
    uint32_t tail = c->idx, mask = c->mask;
    uint32_t off = tail & mask;
    if (TW_UNLIKELY(n > mask + 1u - off))
        n = mask + 1u - off;
    uint32_t avail = c->cached - tail;
    if (TW_UNLIKELY(avail < n)) {
        avail = tw__ring_cons_refresh(r, tail, avail);
        if (n > avail)
            n = avail;
        if (n == 0)
            c->calls_empty++;
    }
    *slot = tw__ring_slot(r, off, c->slot_size);
    c->pending = n;
    return n;
}

/* Zero-copy dequeue, step 2: frees the first k (<= the count peeked)
 * items of the last peek for the producer. */
static inline void tw_ring_release_sc(tw_ring *r, uint32_t k)
{
    tw_ring_side *c = &r->cons;
    if (TW_UNLIKELY(k > c->pending)) {
        (void)tw__ring_bad(r, c, TW_RING_BAD_COMMIT, k, c->pending);
        return;
    }
    c->pending = 0;
    /* Release pairs with the producer's acquire-load of tail in
     * tw__ring_prod_refresh: our in-place reads are done before the
     * producer may overwrite the slots. */
    __atomic_store_n(&c->idx, c->idx + k, __ATOMIC_RELEASE);
}

#ifdef __cplusplus
}
#endif
#endif
