/* `tickwire bench ring`: the one harness every ring runs in.
 *
 * Each ring implementation (ours, DPDK rte_ring two ways, ck_ring) lives
 * in a file of its own, compiled with its library's flags, and supplies
 * three inline operations per item size S (16, 64):
 *
 *   uint32_t X_put_S(ctx, ring, seq, k, base)   writes items seq..seq+k-1
 *            (the way a user of that ring would: in place or by copy) and
 *            returns how many went in (0..k);
 *   uint32_t X_get_S(ctx, ring, &expect, k, base, &bad)  takes up to k
 *            items, checks each is item *expect (counting mismatches in
 *            bad), advances expect, returns how many;
 *   uint32_t X_echo_S(ctx)   moves one item from ring 0 to ring 1 as is.
 *
 * RB_LOOPS(X, S) then generates the thread bodies from them: the same
 * producer, consumer, ping and pong loops for every ring, inlined around
 * each ring's operations, so that the rings differ in their operations
 * only.  Ring 0 carries producer -> consumer (and ping -> pong), ring 1
 * pong -> ping. */
#ifndef TW_BENCH_RING_HARNESS_H
#define TW_BENCH_RING_HARNESS_H

#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "tickwire/clock.h"

#define RB_SLOTS 1024u   /* ring size for every implementation */
#define RB_MAX_BURST 32u

/* Items: the sequence number, a stamp derived from it, and (64 bytes)
 * more words derived from it, all written by the producer. */
typedef struct rb_item16 {
    uint64_t w[2];
} rb_item16;
typedef struct rb_item64 {
    uint64_t w[8];
} rb_item64;

#define RB_K 0x9e3779b97f4a7c15ull

static inline void rb_fill_16(rb_item16 *it, uint64_t seq, uint64_t base)
{
    it->w[0] = seq;
    it->w[1] = seq * RB_K + base;
}
static inline void rb_fill_64(rb_item64 *it, uint64_t seq, uint64_t base)
{
    it->w[0] = seq;
    it->w[1] = seq * RB_K + base;
    for (int j = 2; j < 8; j++)
        it->w[j] = seq + (uint64_t)j;
}
static inline int rb_ok_16(const rb_item16 *it, uint64_t seq, uint64_t base)
{
    return it->w[0] == seq && it->w[1] == seq * RB_K + base;
}
static inline int rb_ok_64(const rb_item64 *it, uint64_t seq, uint64_t base)
{
    return it->w[0] == seq && it->w[1] == seq * RB_K + base && it->w[7] == seq + 7;
}

/* What one run asks for. */
typedef struct rb_cfg {
    uint32_t item_size; /* 16 or 64 */
    uint32_t burst;     /* items per call: 1 or RB_MAX_BURST */
    uint64_t items;     /* throughput runs */
    uint64_t rounds;    /* ping-pong runs */
    int yield;          /* yield while waiting (one CPU for both, or --yield) */
} rb_cfg;

/* One thread's side of a run. */
typedef struct rb_side {
    void *ctx;
    const rb_cfg *cfg;
    uint64_t t0, t1;  /* TSC at its start and end */
    int64_t c0, c1;   /* the thread's CPU time at its start and end, ns */
    uint64_t moved;   /* items put or taken */
    uint64_t bad;     /* items that were not the expected one */
    uint64_t *rtt;    /* ping: cfg->rounds round trips in TSC ticks */
    volatile uint32_t *go;
} rb_side;

/* A ring implementation: set-up and the generated thread bodies. */
typedef void (*rb_body)(rb_side *s);
typedef struct rb_impl {
    const char *name;
    /* 0, or -1 with why filled: creates rings 0 and 1 (RB_SLOTS each). */
    int (*setup)(void **ctx, uint32_t item_size, char *why, size_t cap);
    void (*teardown)(void *ctx);
    /* Called on each bench thread before and after its body (DPDK
     * registers the thread as an lcore for its mempool cache). */
    void (*thread_begin)(void *ctx);
    void (*thread_end)(void *ctx);
    rb_body produce[2], consume[2], ping[2], pong[2]; /* [0]: 16 B, [1]: 64 B */
} rb_impl;

static inline void rb_relax(const rb_cfg *cfg, unsigned *spins)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (cfg->yield && ++*spins % 256 == 0)
        sched_yield();
}

static inline void rb_wait_go(rb_side *s)
{
    while (!*s->go)
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#else
        ;
#endif
}

#define RB_LOOPS(X, S)                                                                    \
    static void X##_produce_##S(rb_side *s)                                              \
    {                                                                                    \
        const rb_cfg *cfg = s->cfg;                                                      \
        uint64_t seq = 0, n = cfg->items;                                                \
        uint32_t b = cfg->burst;                                                         \
        unsigned spins = 0;                                                              \
        rb_wait_go(s);                                                                   \
        s->c0 = tw_clock_thread_cpu_ns();                                                \
        s->t0 = tw_tsc_read();                                                           \
        while (seq < n) {                                                                \
            uint32_t k = n - seq < b ? (uint32_t)(n - seq) : b;                          \
            uint32_t m = X##_put_##S(s->ctx, 0, seq, k, 0);                              \
            if (m == 0)                                                                  \
                rb_relax(cfg, &spins);                                                   \
            seq += m;                                                                    \
        }                                                                                \
        s->t1 = tw_tsc_read();                                                           \
        s->c1 = tw_clock_thread_cpu_ns();                                                \
        s->moved = seq;                                                                  \
    }                                                                                    \
    static void X##_consume_##S(rb_side *s)                                              \
    {                                                                                    \
        const rb_cfg *cfg = s->cfg;                                                      \
        uint64_t expect = 0, bad = 0, n = cfg->items;                                    \
        uint32_t b = cfg->burst;                                                         \
        unsigned spins = 0;                                                              \
        rb_wait_go(s);                                                                   \
        s->c0 = tw_clock_thread_cpu_ns();                                                \
        s->t0 = tw_tsc_read();                                                           \
        while (expect < n) {                                                             \
            if (X##_get_##S(s->ctx, 0, &expect, b, 0, &bad) == 0)                        \
                rb_relax(cfg, &spins);                                                   \
        }                                                                                \
        s->t1 = tw_tsc_read();                                                           \
        s->c1 = tw_clock_thread_cpu_ns();                                                \
        s->moved = expect;                                                               \
        s->bad = bad;                                                                    \
    }                                                                                    \
    static void X##_ping_##S(rb_side *s)                                                 \
    {                                                                                    \
        const rb_cfg *cfg = s->cfg;                                                      \
        uint64_t bad = 0, i;                                                             \
        unsigned spins = 0;                                                              \
        rb_wait_go(s);                                                                   \
        s->c0 = tw_clock_thread_cpu_ns();                                                \
        s->t0 = tw_tsc_read();                                                           \
        for (i = 0; i < cfg->rounds; i++) {                                              \
            uint64_t t = tw_tsc_read(), expect = i;                                      \
            while (X##_put_##S(s->ctx, 0, i, 1, t) == 0)                                 \
                rb_relax(cfg, &spins);                                                   \
            while (X##_get_##S(s->ctx, 1, &expect, 1, t, &bad) == 0)                     \
                rb_relax(cfg, &spins);                                                   \
            s->rtt[i] = tw_tsc_read() - t;                                               \
        }                                                                                \
        s->t1 = tw_tsc_read();                                                           \
        s->c1 = tw_clock_thread_cpu_ns();                                                \
        s->moved = i;                                                                    \
        s->bad = bad;                                                                    \
    }                                                                                    \
    static void X##_pong_##S(rb_side *s)                                                 \
    {                                                                                    \
        const rb_cfg *cfg = s->cfg;                                                      \
        unsigned spins = 0;                                                              \
        uint64_t i;                                                                      \
        rb_wait_go(s);                                                                   \
        s->c0 = tw_clock_thread_cpu_ns();                                                \
        s->t0 = tw_tsc_read();                                                           \
        for (i = 0; i < cfg->rounds; i++)                                                \
            while (X##_echo_##S(s->ctx) == 0)                                            \
                rb_relax(cfg, &spins);                                                   \
        s->t1 = tw_tsc_read();                                                           \
        s->c1 = tw_clock_thread_cpu_ns();                                                \
        s->moved = i;                                                                    \
    }

#define RB_BODIES(X)                                                                      \
    .produce = {X##_produce_16, X##_produce_64}, .consume = {X##_consume_16, X##_consume_64}, \
    .ping = {X##_ping_16, X##_ping_64}, .pong = {X##_pong_16, X##_pong_64}

/* The implementations (each file defines one or two; NULL when its
 * library is not built in). */
extern const rb_impl tw__rb_ours, tw__rb_ours_zc;
extern const rb_impl *const tw__rb_dpdk_ptr, *const tw__rb_dpdk_elem;
extern const rb_impl *const tw__rb_ck;
/* DPDK's EAL for the DPDK rings: 0, or -1 with why (once per process). */
int tw__rb_dpdk_init(int main_cpu, char *why, size_t cap);
void tw__rb_dpdk_fini(void);

#endif
