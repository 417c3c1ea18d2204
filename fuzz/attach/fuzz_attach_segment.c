/* libFuzzer target: any bytes as the attach segment a strategy maps.
 *
 * Input: the segment itself (its size is the mapping's).  Invariants
 * checked: tw_attach_check_segment never reads outside the segment and
 * either refuses it with a message or accepts it; an accepted segment's
 * rings lie inside it, and the strategy's side of each (consumer of the
 * inbound rings, producer of the outbound ones) moves items whatever the
 * other side's indices say, never touching memory outside or crashing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tickwire/shm_attach.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    /* Exactly size bytes, aligned, so ASan sees any read past the end. */
    size_t cap = (size + 63) / 64 * 64;
    uint8_t *seg = aligned_alloc(64, cap ? cap : 64);
    TW_VERIFY(seg);
    memcpy(seg, data, size);
    tw_ring *rings[2 * TW_ATTACH_MAX_CORES];
    uint32_t n = 0;
    tw_error err = {0};
    int rc = tw_attach_check_segment(seg, size, rings, &n, &err);
    if (rc != 0) {
        TW_VERIFY(rc < 0 && err.msg[0]);
    } else {
        TW_VERIFY(n >= 1 && n <= TW_ATTACH_MAX_CORES);
        /* The strategy's roles only: it consumes the inbound rings and
         * produces into the outbound ones (the other sides are the
         * gateway's, which never takes them from the segment). */
        for (uint32_t i = 0; i < 2 * n; i++) {
            tw_ring *r = rings[i];
            TW_VERIFY((uint8_t *)r >= seg + TW_ATTACH_HDR_BYTES && (uint8_t *)r < seg + size);
            uint8_t item[TW_ATTACH_IN_SLOT * 4];
            memset(item, 0x5a, sizeof(item));
            if (i < n) {
                (void)tw_ring_dequeue_burst_sc(r, item, 2);
                const void *slot;
                uint32_t k = tw_ring_peek_sc(r, 4, &slot);
                if (k)
                    memcpy(item, slot, tw_ring_slot_size(r));
                tw_ring_release_sc(r, k);
            } else {
                (void)tw_ring_enqueue_burst_sp(r, item, 2);
                void *slot;
                uint32_t k = tw_ring_reserve_sp(r, 2, &slot);
                if (k)
                    memset(slot, 0x33, tw_ring_slot_size(r));
                tw_ring_commit_sp(r, k);
            }
            (void)tw_ring_error(r, NULL);
        }
    }
    free(seg);
    return 0;
}
