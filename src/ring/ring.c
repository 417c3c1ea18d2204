/* SPSC ring: set-up, attach validation and the slow path of the index
 * checks (include/tickwire/ring.h; the fast path is inline there). */
#include <errno.h>
#include <string.h>

#include "tickwire/ring.h"

size_t tw_ring_memsize(uint32_t count, uint32_t slot_size)
{
    if (count == 0 || count > TW_RING_COUNT_MAX || (count & (count - 1)) != 0)
        return 0;
    if (slot_size < 8 || slot_size > TW_RING_SLOT_MAX || slot_size % 8 != 0)
        return 0;
    return (size_t)TW_RING_HDR_BYTES + (size_t)count * slot_size;
}

static void side_init(tw_ring_side *s, uint32_t count, uint32_t slot_size)
{
    memset(s, 0, sizeof(*s));
    s->mask = count - 1;
    s->slot_size = slot_size;
}

int tw_ring_init(tw_ring *r, uint32_t count, uint32_t slot_size)
{
    size_t bytes = tw_ring_memsize(count, slot_size);
    if (bytes == 0 || ((uintptr_t)r % TW_CACHE_LINE) != 0)
        return -EINVAL;
    /* Clear the magic first: a process attaching while we re-initialise a
     * used ring sees "no ring", never half of the old one and half of the
     * new.  Release pairs with the acquire-load of magic in attach. */
    __atomic_store_n(&r->magic, 0, __ATOMIC_RELEASE);
    memset((uint8_t *)r + sizeof(r->magic), 0, TW_RING_HDR_BYTES - sizeof(r->magic));
    r->version = TW_RING_VERSION;
    r->hdr_bytes = TW_RING_HDR_BYTES;
    r->count = count;
    r->slot_size = slot_size;
    r->mem_bytes = bytes;
    side_init(&r->prod, count, slot_size);
    side_init(&r->cons, count, slot_size);
    /* The producer's cached tail starts at 0 = the tail: count free slots. */
    TW_VERIFY(tw_ring_capacity(r) == count);
    /* Release pairs with the acquire-load of magic in tw_ring_attach: the
     * whole header above is visible to a process that sees the magic. */
    __atomic_store_n(&r->magic, TW_RING_MAGIC, __ATOMIC_RELEASE);
    return 0;
}

/* A -EBADMSG naming the field and its value ("ring: " + a literal). */
#define BAD(err, fmt, ...) tw__err(err, -EBADMSG, "ring: " fmt, __VA_ARGS__)

/* Checks one side's copy of the geometry and its own state. */
static int check_side(const tw_ring_side *s, const char *name, uint32_t count,
                      uint32_t slot_size, tw_error *err)
{
    if (s->mask != count - 1)
        return BAD(err, "%s region: mask %u, expected count - 1 = %u", name, s->mask, count - 1);
    if (s->slot_size != slot_size)
        return BAD(err, "%s region: slot size %u, header says %u", name, s->slot_size, slot_size);
    if (s->pending > count)
        return BAD(err, "%s region: %u slots pending, more than count %u", name, s->pending,
                   count);
    return 0;
}

int tw_ring_attach(tw_ring *r, size_t mem_bytes, tw_error *err)
{
    if (((uintptr_t)r % TW_CACHE_LINE) != 0)
        return tw__err(err, -EINVAL, "ring: memory at %p is not 64-byte aligned", (void *)r);
    if (mem_bytes < TW_RING_HDR_BYTES)
        return tw__err(err, -EINVAL, "ring: mapping of %zu bytes is smaller than the %u-byte header",
                       mem_bytes, TW_RING_HDR_BYTES);
    /* Acquire pairs with the release-store of magic at the end of
     * tw_ring_init: seeing the magic means seeing the header it wrote. */
    uint64_t magic = __atomic_load_n(&r->magic, __ATOMIC_ACQUIRE);
    if (magic != TW_RING_MAGIC)
        return tw__err(err, -EPROTO,
                       "ring: magic 0x%016llx, expected 0x%016llx (not a tickwire ring, or "
                       "its initialisation has not finished)",
                       (unsigned long long)magic, (unsigned long long)TW_RING_MAGIC);
    if (r->version != TW_RING_VERSION)
        return tw__err(err, -EPROTONOSUPPORT, "ring: layout version %u, this library reads %u",
                       r->version, TW_RING_VERSION);
    if (r->hdr_bytes != TW_RING_HDR_BYTES)
        return BAD(err, "header size %u, expected %u", r->hdr_bytes, TW_RING_HDR_BYTES);
    uint32_t count = r->count, slot_size = r->slot_size;
    size_t need = tw_ring_memsize(count, slot_size);
    if (need == 0) {
        if (count == 0 || count > TW_RING_COUNT_MAX || (count & (count - 1)) != 0)
            return BAD(err, "count %u is not a power of two in [1, %u]", count, TW_RING_COUNT_MAX);
        return BAD(err, "slot size %u is not a multiple of 8 in [8, %u]", slot_size,
                   TW_RING_SLOT_MAX);
    }
    if (r->mem_bytes != need)
        return BAD(err, "header says %llu bytes, count and slot size need %zu",
                   (unsigned long long)r->mem_bytes, need);
    if (need > mem_bytes)
        return tw__err(err, -EINVAL, "ring: needs %zu bytes (%u slots of %u), the mapping has %zu",
                       need, count, slot_size, mem_bytes);
    int rc = check_side(&r->prod, "producer", count, slot_size, err);
    if (rc == 0)
        rc = check_side(&r->cons, "consumer", count, slot_size, err);
    if (rc)
        return rc;
    if (r->prod.bad || r->cons.bad) {
        tw_error e;
        (void)tw_ring_error(r, &e);
        return tw__err(err, -EBADMSG, "%s", e.msg);
    }
    /* Relaxed: a snapshot to validate; each side re-checks the other's
     * index whenever it reads it (tw__ring_prod_free / tw__ring_cons_avail). */
    uint32_t head = __atomic_load_n(&r->prod.idx, __ATOMIC_RELAXED);
    uint32_t tail = __atomic_load_n(&r->cons.idx, __ATOMIC_RELAXED);
    if (head - tail > count)
        return BAD(err, "indices: producer head %u and consumer tail %u are more than count apart",
                   head, tail);
    if (tail - r->prod.cached > count || head - r->prod.cached > count)
        return BAD(err, "producer's cached tail %u is not at or behind the tail %u", r->prod.cached,
                   tail);
    if (head - r->cons.cached > count || r->cons.cached - tail > count)
        return BAD(err, "consumer's cached head %u is not between the tail and head %u",
                   r->cons.cached, head);
    /* Relaxed: the flag orders nothing; a side reads it only when a check
     * has already failed (tw__ring_bad). */
    __atomic_or_fetch(&r->flags, TW_RING_F_SHARED, __ATOMIC_RELAXED);
    return 0;
}

static const char *side_name(const tw_ring *r, const tw_ring_side *s)
{
    return s == &r->prod ? "producer" : "consumer";
}

static int side_error(const tw_ring *r, const tw_ring_side *s, tw_error *err)
{
    uint32_t code = __atomic_load_n(&s->bad, __ATOMIC_RELAXED);
    if (code == TW_RING_OK)
        return 0;
    const char *me = side_name(r, s);
    const char *peer = s == &r->prod ? "consumer tail" : "producer head";
    const char *mine = s == &r->prod ? "head" : "tail";
    switch (code) {
    case TW_RING_BAD_PEER_AHEAD:
        return tw__err(err, -EBADMSG,
                       "ring: %s stopped: %s %u is more than count %u away from %s %u",
                       me, peer, s == &r->prod ? s->bad_b : s->bad_a, s->mask + 1u, mine,
                       s == &r->prod ? s->bad_a : s->bad_b);
    case TW_RING_BAD_PEER_BACK:
        return tw__err(err, -EBADMSG, "ring: %s stopped: %s moved backwards from %u to %u", me,
                       peer, s->bad_a, s->bad_b);
    case TW_RING_BAD_COMMIT:
        return tw__err(err, -EBADMSG, "ring: %s stopped: %u slots %s, only %u were %s", me,
                       s->bad_a, s == &r->prod ? "committed" : "released", s->bad_b,
                       s == &r->prod ? "reserved" : "peeked");
    default:
        return tw__err(err, -EBADMSG, "ring: %s stopped with unknown code %u", me, code);
    }
}

int tw_ring_error(const tw_ring *r, tw_error *err)
{
    int rc = side_error(r, &r->prod, err);
    return rc ? rc : side_error(r, &r->cons, err);
}

uint32_t tw__ring_bad(tw_ring *r, tw_ring_side *s, uint32_t code, uint32_t a, uint32_t b)
{
    /* Relaxed: attach's or of the flag is ordered with nothing we do. */
    uint32_t flags = __atomic_load_n(&r->flags, __ATOMIC_RELAXED);
    s->bad_a = a;
    s->bad_b = b;
    if (!(flags & TW_RING_F_SHARED)) {
        /* Our own ring, both sides in this process: a bad index is our
         * bug, and going on would hand out garbage.  The side's bad_a,
         * bad_b and code (in the core) say what failed. */
        __atomic_store_n(&s->bad, code, __ATOMIC_RELAXED);
        TW_VERIFY(!"SPSC ring index check failed on an unshared ring");
    }
    s->pending = 0;
    /* Make the fast path come back here: the cached peer index now says
     * full (producer) or empty (consumer). */
    s->cached = s == &r->prod ? s->idx - (s->mask + 1u) : s->idx;
    /* Relaxed: read by tw_ring_error for diagnosis, orders nothing. */
    __atomic_store_n(&s->bad, code, __ATOMIC_RELAXED);
    return 0;
}

uint32_t tw__ring_bad_peer(tw_ring *r, tw_ring_side *s, uint32_t peer)
{
    uint32_t cap = s->mask + 1u, mine = s->idx;
    if (s == &r->prod) /* peer = the consumer's tail */
        return mine - peer > cap ? tw__ring_bad(r, s, TW_RING_BAD_PEER_AHEAD, mine, peer)
                                 : tw__ring_bad(r, s, TW_RING_BAD_PEER_BACK, s->cached, peer);
    /* peer = the producer's head */
    return peer - mine > cap ? tw__ring_bad(r, s, TW_RING_BAD_PEER_AHEAD, peer, mine)
                             : tw__ring_bad(r, s, TW_RING_BAD_PEER_BACK, s->cached, peer);
}
