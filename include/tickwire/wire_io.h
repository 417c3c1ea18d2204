/* Moving frames, shared by both ends of the wire (the engine server and
 * the C client; src/wire): the operations on the shared-memory ring whose
 * layout wire.h defines, and blocking descriptor I/O.
 *
 * These are the library's own (tw__): the server, the client, their tests
 * and benchmarks use them; an application talks to an engine through
 * client.h instead. */
#ifndef TICKWIRE_WIRE_IO_H
#define TICKWIRE_WIRE_IO_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "tickwire/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- shared-memory ring ------------------------------------------------- */

/* Called about every 20 ms while a ring side sleeps; a non-zero return
 * aborts the wait with that (negative) code.  This is how a side notices
 * that its peer died or that the server is shutting down. */
typedef int (*tw__ring_alive_fn)(void *arg);

/* One side's private view of one ring, embedded in the caller's struct.
 * pos is this side's own index (tail for a producer, head for a consumer),
 * never read back from the shared page, so a corrupt peer cannot steer our
 * writes. */
typedef struct tw__ring {
    tw_shm_ring_ctl *ctl;
    uint8_t *buf;
    uint32_t cap;          /* power of two */
    uint64_t pos;          /* private index */
    uint64_t held;         /* consumer: bytes of the record being held; producer: reserved */
    uint64_t head_cache;   /* producer: last head read from the consumer's line */
    uint64_t pad_bytes;    /* producer: padding before the reserved record */
    uint32_t rec_idx;      /* producer: buffer offset of the reserved record */
    int shared;            /* the peer was last seen on our CPU */
    uint32_t waits;        /* waits so far (the CPU hint is sampled every 64th) */
    uint64_t spin_ns;      /* spin at most this long before futex-sleeping */
    uint64_t spin_cur_ns;  /* adaptive budget (tw__ring_spin_result) */
    uint64_t sleeps;       /* waits that outlasted the spin (tests, benchmarks) */
    uint64_t nap_ns;       /* futex sleep timeout between alive() checks; 20 ms */
    uint64_t lost_wakes;   /* sleeps that timed out with the data already there */
    tw__ring_alive_fn alive;
    void *alive_arg;
    int nudge;             /* move off a CPU shared with the peer (server side) */
    uint64_t nudged_ns;    /* when we last did, to do it rarely */
} tw__ring;

/* Sets up r over a ring of the caller's mapping: ctl and buf[cap] (cap a
 * power of two in [TW_SHM_RING_MIN, TW_SHM_RING_MAX]) stay the caller's.
 * alive (may be NULL) and alive_arg as above. */
void tw__ring_init(tw__ring *r, tw_shm_ring_ctl *ctl, uint8_t *buf, uint32_t cap,
                   uint64_t spin_ns, tw__ring_alive_fn alive, void *alive_arg);

/* Producer: reserves a record for a frame of frame_bytes (prefix included)
 * placed so that frame + align_at is 8-byte aligned; *frame points at the
 * frame's length word.  Waits for space.  Returns 0, -E2BIG if the frame
 * can never fit, -EPROTO if the peer's index is corrupt, or the alive
 * callback's code. */
int tw__ring_reserve(tw__ring *r, size_t frame_bytes, size_t align_at, uint8_t **frame);
/* Producer: publishes the reserved record and wakes a sleeping consumer. */
void tw__ring_publish(tw__ring *r);

/* Consumer: waits for the next record; frame and avail view its frame bytes
 * (the frame may be shorter than *avail).  Returns 0, -EPROTO on a corrupt
 * record, or the alive callback's code.  The view stays valid until
 * tw__ring_release(). */
int tw__ring_peek(tw__ring *r, const uint8_t **frame, size_t *avail);
/* Consumer: gives the record of the last peek back to the producer. */
void tw__ring_release(tw__ring *r);

/* The adaptive spin policy of every wait: the budget (ns) for the next
 * wait, and the outcome of a wait: waited_ns, how long it took in all, and
 * spun_ok, whether it ended within the spin (else the side slept).  A wait
 * shorter than spin_ns sets the next budget to 2 x waited_ns + spin_ns / 16;
 * a longer one halves it; it always stays within [spin_ns / 16, spin_ns].
 * A wait that slept but was short therefore raises the budget at once, so
 * the sides cannot get stuck sleeping on a peer that answers within
 * spin_ns. */
uint64_t tw__ring_spin_budget(tw__ring *r);
void tw__ring_spin_result(tw__ring *r, uint64_t budget, uint64_t waited_ns, int spun_ok);

/* Bytes of the shared mapping for rings of ring_bytes each. */
static inline size_t tw__shm_map_bytes(uint32_t ring_bytes)
{
    return TW_SHM_CTL_BYTES + 2 * (size_t)ring_bytes;
}

/* ---- blocking descriptor I/O -------------------------------------------- */

/* Reads up to n bytes into p, retrying EINTR.  Returns how many were read
 * (fewer than n only when the peer closed first: each caller gives that its
 * own meaning) or -errno. */
ssize_t tw__read_full(int fd, void *p, size_t n);

/* Writes all n bytes of p, retrying EINTR and short writes.  Returns 0 or
 * -errno (-EPIPE if the descriptor took nothing). */
int tw__write_full(int fd, const void *p, size_t n);

/* After a writev/sendmsg of v[*i..n) wrote k bytes: moves *i past the
 * iovecs written in full and trims the one written in part. */
void tw__iov_consume(struct iovec *v, int n, int *i, size_t k);

#ifdef __cplusplus
}
#endif
#endif
