/* `tickwire bench ring`: our SPSC ring, two ways: the copying calls
 * (enqueue_burst_sp / dequeue_burst_sc, what the goal rows use) and the
 * zero-copy ones (reserve, write in place, commit; peek, read, release). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "ring/harness.h"
#include "tickwire/ring.h"

typedef struct tw_ctx {
    tw_ring *ring[2];
    void *mem[2];
} tw_ctx;

static int tw_setup(void **out, uint32_t item_size, char *why, size_t cap)
{
    tw_ctx *c = calloc(1, sizeof(*c));
    size_t len = tw_ring_memsize(RB_SLOTS, item_size);
    if (!c || len == 0)
        goto fail;
    for (int i = 0; i < 2; i++) {
        if (posix_memalign(&c->mem[i], 4096, len) != 0)
            goto fail;
        memset(c->mem[i], 0, len); /* fault the pages in before timing */
        c->ring[i] = c->mem[i];
        if (tw_ring_init(c->ring[i], RB_SLOTS, item_size) != 0)
            goto fail;
    }
    *out = c;
    return 0;
fail:
    snprintf(why, cap, "tickwire ring: out of memory");
    if (c) {
        free(c->mem[0]);
        free(c->mem[1]);
    }
    free(c);
    return -1;
}

static void tw_teardown(void *ctx)
{
    tw_ctx *c = ctx;
    free(c->mem[0]);
    free(c->mem[1]);
    free(c);
}

static void nothing(void *ctx) { (void)ctx; }

/* The copying calls: items built in a local array, then one burst call. */
#define TW_OPS(S)                                                                          \
    static inline uint32_t ours_put_##S(void *ctx, int ring, uint64_t seq, uint32_t k,     \
                                        uint64_t base)                                     \
    {                                                                                      \
        rb_item##S it[RB_MAX_BURST];                                                       \
        for (uint32_t i = 0; i < k; i++)                                                   \
            rb_fill_##S(&it[i], seq + i, base);                                            \
        return tw_ring_enqueue_burst_sp(((tw_ctx *)ctx)->ring[ring], it, k);               \
    }                                                                                      \
    static inline uint32_t ours_get_##S(void *ctx, int ring, uint64_t *expect, uint32_t k, \
                                        uint64_t base, uint64_t *bad)                      \
    {                                                                                      \
        rb_item##S it[RB_MAX_BURST];                                                       \
        uint32_t n = tw_ring_dequeue_burst_sc(((tw_ctx *)ctx)->ring[ring], it, k);         \
        for (uint32_t i = 0; i < n; i++)                                                   \
            *bad += !rb_ok_##S(&it[i], (*expect)++, base);                                 \
        return n;                                                                          \
    }                                                                                      \
    static inline uint32_t ours_echo_##S(void *ctx)                                        \
    {                                                                                      \
        rb_item##S it;                                                                     \
        tw_ctx *c = ctx;                                                                   \
        if (tw_ring_dequeue_burst_sc(c->ring[0], &it, 1) == 0)                             \
            return 0;                                                                      \
        while (tw_ring_enqueue_burst_sp(c->ring[1], &it, 1) == 0)                          \
            ;                                                                              \
        return 1;                                                                          \
    }
TW_OPS(16)
TW_OPS(64)
RB_LOOPS(ours, 16)
RB_LOOPS(ours, 64)

/* Zero copy: items written and read where they lie in the ring. */
#define TW_ZC_OPS(S)                                                                       \
    static inline uint32_t ourszc_put_##S(void *ctx, int ring, uint64_t seq, uint32_t k,   \
                                          uint64_t base)                                   \
    {                                                                                      \
        tw_ring *r = ((tw_ctx *)ctx)->ring[ring];                                          \
        void *w;                                                                           \
        uint32_t n = tw_ring_reserve_sp(r, k, &w);                                         \
        for (uint32_t i = 0; i < n; i++)                                                   \
            rb_fill_##S((rb_item##S *)w + i, seq + i, base);                               \
        tw_ring_commit_sp(r, n);                                                           \
        return n;                                                                          \
    }                                                                                      \
    static inline uint32_t ourszc_get_##S(void *ctx, int ring, uint64_t *expect, uint32_t k, \
                                          uint64_t base, uint64_t *bad)                    \
    {                                                                                      \
        tw_ring *r = ((tw_ctx *)ctx)->ring[ring];                                          \
        const void *v;                                                                     \
        uint32_t n = tw_ring_peek_sc(r, k, &v);                                            \
        for (uint32_t i = 0; i < n; i++)                                                   \
            *bad += !rb_ok_##S((const rb_item##S *)v + i, (*expect)++, base);              \
        tw_ring_release_sc(r, n);                                                          \
        return n;                                                                          \
    }                                                                                      \
    static inline uint32_t ourszc_echo_##S(void *ctx)                                      \
    {                                                                                      \
        tw_ctx *c = ctx;                                                                   \
        const void *v;                                                                     \
        void *w;                                                                           \
        if (tw_ring_peek_sc(c->ring[0], 1, &v) == 0)                                       \
            return 0;                                                                      \
        while (tw_ring_reserve_sp(c->ring[1], 1, &w) == 0)                                 \
            ;                                                                              \
        memcpy(w, v, S);                                                                   \
        tw_ring_commit_sp(c->ring[1], 1);                                                  \
        tw_ring_release_sc(c->ring[0], 1);                                                 \
        return 1;                                                                          \
    }
TW_ZC_OPS(16)
TW_ZC_OPS(64)
RB_LOOPS(ourszc, 16)
RB_LOOPS(ourszc, 64)

const rb_impl tw__rb_ours = {.name = "tickwire", .setup = tw_setup, .teardown = tw_teardown,
                             .thread_begin = nothing, .thread_end = nothing, RB_BODIES(ours)};
const rb_impl tw__rb_ours_zc = {.name = "tickwire zero-copy", .setup = tw_setup,
                                .teardown = tw_teardown, .thread_begin = nothing,
                                .thread_end = nothing, RB_BODIES(ourszc)};
