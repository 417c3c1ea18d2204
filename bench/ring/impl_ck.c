/* `tickwire bench ring`: Concurrency Kit's ck_ring SPSC (Debian
 * libck-dev), carrying the items by value through its type-safe
 * interface (CK_RING_PROTOTYPE: a struct per slot, copied in and out).
 * ck_ring has no burst call: a burst is a loop of single calls, as a ck
 * user writes it. */
#include <stdio.h>
#include <stdlib.h>

#include <ck_ring.h>

#include "ring/harness.h"

CK_RING_PROTOTYPE(item16, rb_item16)
CK_RING_PROTOTYPE(item64, rb_item64)

typedef struct ck_ctx {
    struct ck_ring ring[2];
    void *buf[2];
} ck_ctx;

static int ck_setup(void **out, uint32_t item_size, char *why, size_t cap)
{
    ck_ctx *c = NULL;
    if (posix_memalign((void **)&c, 128, sizeof(*c)) != 0) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    memset(c, 0, sizeof(*c));
    for (int i = 0; i < 2; i++) {
        if (posix_memalign(&c->buf[i], 4096, (size_t)RB_SLOTS * item_size) != 0) {
            snprintf(why, cap, "out of memory");
            return -1;
        }
        memset(c->buf[i], 0, (size_t)RB_SLOTS * item_size);
        ck_ring_init(&c->ring[i], RB_SLOTS);
    }
    *out = c;
    return 0;
}

static void ck_teardown(void *ctx)
{
    ck_ctx *c = ctx;
    free(c->buf[0]);
    free(c->buf[1]);
    free(c);
}

static void nothing(void *ctx) { (void)ctx; }

#define CK_OPS(S)                                                                          \
    static inline uint32_t ck_put_##S(void *ctx, int ring, uint64_t seq, uint32_t k,       \
                                      uint64_t base)                                       \
    {                                                                                      \
        ck_ctx *c = ctx;                                                                   \
        uint32_t n = 0;                                                                    \
        for (; n < k; n++) {                                                               \
            struct rb_item##S it;                                                          \
            rb_fill_##S(&it, seq + n, base);                                               \
            if (!ck_ring_enqueue_spsc_item##S(&c->ring[ring], c->buf[ring], &it))          \
                break;                                                                     \
        }                                                                                  \
        return n;                                                                          \
    }                                                                                      \
    static inline uint32_t ck_get_##S(void *ctx, int ring, uint64_t *expect, uint32_t k,   \
                                      uint64_t base, uint64_t *bad)                        \
    {                                                                                      \
        ck_ctx *c = ctx;                                                                   \
        uint32_t n = 0;                                                                    \
        for (; n < k; n++) {                                                               \
            struct rb_item##S it;                                                          \
            if (!ck_ring_dequeue_spsc_item##S(&c->ring[ring], c->buf[ring], &it))          \
                break;                                                                     \
            *bad += !rb_ok_##S(&it, (*expect)++, base);                                    \
        }                                                                                  \
        return n;                                                                          \
    }                                                                                      \
    static inline uint32_t ck_echo_##S(void *ctx)                                          \
    {                                                                                      \
        ck_ctx *c = ctx;                                                                   \
        struct rb_item##S it;                                                              \
        if (!ck_ring_dequeue_spsc_item##S(&c->ring[0], c->buf[0], &it))                    \
            return 0;                                                                      \
        while (!ck_ring_enqueue_spsc_item##S(&c->ring[1], c->buf[1], &it))                 \
            ;                                                                              \
        return 1;                                                                          \
    }
CK_OPS(16)
CK_OPS(64)
RB_LOOPS(ck, 16)
RB_LOOPS(ck, 64)

static const rb_impl ck = {.name = "ck_ring", .setup = ck_setup, .teardown = ck_teardown,
                           .thread_begin = nothing, .thread_end = nothing, RB_BODIES(ck)};
const rb_impl *const tw__rb_ck = &ck;
