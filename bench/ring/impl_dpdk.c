/* `tickwire bench ring`: DPDK's rte_ring created single-producer /
 * single-consumer (RING_F_SP_ENQ | RING_F_SC_DEQ), two ways:
 *
 *  - "rte_ring + mempool": the ring holds pointers, as rte_ring has always
 *    done; items come from an rte_mempool with a per-lcore cache (both
 *    bench threads are registered as lcores), the producer fills an item
 *    in place and enqueues its pointer, the consumer reads it in place and
 *    puts it back: what a DPDK user does with mbufs;
 *  - "rte_ring elem": the same ring type carrying the items by value
 *    (rte_ring_create_elem, DPDK >= 20.02), nearest to what our ring does.
 *
 * The EAL runs with --no-huge --no-pci -m 256 --no-shconf --no-telemetry
 * and a file prefix of its own; it pins the calling thread, which we undo. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "ring/harness.h"

static int eal_up;
static char eal_rundir[512];

int tw__rb_dpdk_init(int main_cpu, char *why, size_t cap)
{
    if (eal_up)
        return 0;
    static char prefix[64], lcores[32];
    snprintf(prefix, sizeof(prefix), "--file-prefix=tw-bench-ring-%d", (int)getpid());
    snprintf(lcores, sizeof(lcores), "-l%d", main_cpu);
    char *argv[] = {(char *)"tickwire", lcores, (char *)"--no-huge", (char *)"--no-pci",
                    (char *)"-m", (char *)"256", (char *)"--no-shconf", prefix,
                    /* No telemetry socket: it would be unlinked at exit,
                     * after we remove the runtime directory. */
                    (char *)"--no-telemetry", (char *)"--log-level=error", NULL};
    cpu_set_t cpus;
    int have = sched_getaffinity(0, sizeof(cpus), &cpus) == 0;
    int rc = rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv);
    if (have)
        (void)sched_setaffinity(0, sizeof(cpus), &cpus);
    if (rc < 0) {
        snprintf(why, cap, "rte_eal_init: %s", rte_strerror(rte_errno));
        return -1;
    }
    snprintf(eal_rundir, sizeof(eal_rundir), "%s", rte_eal_get_runtime_dir());
    eal_up = 1;
    return 0;
}

void tw__rb_dpdk_fini(void)
{
    if (!eal_up)
        return;
    rte_eal_cleanup();
    /* --no-shconf still leaves the (empty) runtime directory behind. */
    if (eal_rundir[0])
        (void)rmdir(eal_rundir);
    eal_up = 0;
}

typedef struct dpdk_ctx {
    struct rte_ring *ring[2];
    struct rte_mempool *pool;
    uint32_t size;
} dpdk_ctx;

static int ctx_new(void **out, uint32_t item_size, int elem, char *why, size_t cap)
{
    static unsigned seq;
    char name[RTE_RING_NAMESIZE];
    dpdk_ctx *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    c->size = item_size;
    unsigned flags = RING_F_SP_ENQ | RING_F_SC_DEQ;
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof(name), "twb%u", seq++);
        c->ring[i] = elem ? rte_ring_create_elem(name, item_size, RB_SLOTS, SOCKET_ID_ANY, flags)
                          : rte_ring_create(name, RB_SLOTS, SOCKET_ID_ANY, flags);
        if (!c->ring[i]) {
            snprintf(why, cap, "rte_ring_create%s: %s", elem ? "_elem" : "",
                     rte_strerror(rte_errno));
            goto fail;
        }
    }
    if (!elem) {
        /* Enough items for a full ring plus both threads' caches (each can
         * hold up to 1.5 x cache_size), 2^q - 1 as the docs advise. */
        snprintf(name, sizeof(name), "twp%u", seq++);
        c->pool = rte_mempool_create(name, 4095, item_size, 256, 0, NULL, NULL, NULL, NULL,
                                     SOCKET_ID_ANY, 0);
        if (!c->pool) {
            snprintf(why, cap, "rte_mempool_create: %s", rte_strerror(rte_errno));
            goto fail;
        }
    }
    *out = c;
    return 0;
fail:
    for (int i = 0; i < 2; i++)
        rte_ring_free(c->ring[i]);
    free(c);
    return -1;
}

static int ptr_setup(void **out, uint32_t s, char *why, size_t cap)
{
    return ctx_new(out, s, 0, why, cap);
}
static int elem_setup(void **out, uint32_t s, char *why, size_t cap)
{
    return ctx_new(out, s, 1, why, cap);
}

static void dpdk_teardown(void *ctx)
{
    dpdk_ctx *c = ctx;
    rte_ring_free(c->ring[0]);
    rte_ring_free(c->ring[1]);
    rte_mempool_free(c->pool);
    free(c);
}

/* The mempool cache is per lcore: a thread without an lcore id would go
 * to the pool's shared ring on every get and put. */
static void register_thread(void *ctx)
{
    (void)ctx;
    if (rte_lcore_id() == LCORE_ID_ANY)
        (void)rte_thread_register();
}
static void unregister_thread(void *ctx)
{
    (void)ctx;
    rte_thread_unregister();
}

/* Pointers and a mempool. */
#define PTR_OPS(S)                                                                         \
    static inline uint32_t dptr_put_##S(void *ctx, int ring, uint64_t seq, uint32_t k,     \
                                        uint64_t base)                                     \
    {                                                                                      \
        dpdk_ctx *c = ctx;                                                                 \
        void *obj[RB_MAX_BURST];                                                           \
        if (rte_mempool_get_bulk(c->pool, obj, k) != 0)                                    \
            return 0;                                                                      \
        for (uint32_t i = 0; i < k; i++)                                                   \
            rb_fill_##S((rb_item##S *)obj[i], seq + i, base);                              \
        uint32_t n = rte_ring_sp_enqueue_burst(c->ring[ring], obj, k, NULL);               \
        if (n < k)                                                                         \
            rte_mempool_put_bulk(c->pool, obj + n, k - n);                                 \
        return n;                                                                          \
    }                                                                                      \
    static inline uint32_t dptr_get_##S(void *ctx, int ring, uint64_t *expect, uint32_t k, \
                                        uint64_t base, uint64_t *bad)                      \
    {                                                                                      \
        dpdk_ctx *c = ctx;                                                                 \
        void *obj[RB_MAX_BURST];                                                           \
        uint32_t n = rte_ring_sc_dequeue_burst(c->ring[ring], obj, k, NULL);               \
        for (uint32_t i = 0; i < n; i++)                                                   \
            *bad += !rb_ok_##S((const rb_item##S *)obj[i], (*expect)++, base);             \
        if (n)                                                                             \
            rte_mempool_put_bulk(c->pool, obj, n);                                         \
        return n;                                                                          \
    }                                                                                      \
    static inline uint32_t dptr_echo_##S(void *ctx)                                        \
    {                                                                                      \
        dpdk_ctx *c = ctx;                                                                 \
        void *obj;                                                                         \
        if (rte_ring_sc_dequeue(c->ring[0], &obj) != 0)                                    \
            return 0;                                                                      \
        while (rte_ring_sp_enqueue(c->ring[1], obj) != 0)                                  \
            ;                                                                              \
        return 1;                                                                          \
    }
PTR_OPS(16)
PTR_OPS(64)
RB_LOOPS(dptr, 16)
RB_LOOPS(dptr, 64)

/* Items by value. */
#define ELEM_OPS(S)                                                                        \
    static inline uint32_t delem_put_##S(void *ctx, int ring, uint64_t seq, uint32_t k,    \
                                         uint64_t base)                                    \
    {                                                                                      \
        rb_item##S it[RB_MAX_BURST];                                                       \
        for (uint32_t i = 0; i < k; i++)                                                   \
            rb_fill_##S(&it[i], seq + i, base);                                            \
        return rte_ring_sp_enqueue_burst_elem(((dpdk_ctx *)ctx)->ring[ring], it, S, k,     \
                                              NULL);                                       \
    }                                                                                      \
    static inline uint32_t delem_get_##S(void *ctx, int ring, uint64_t *expect, uint32_t k, \
                                         uint64_t base, uint64_t *bad)                     \
    {                                                                                      \
        rb_item##S it[RB_MAX_BURST];                                                       \
        uint32_t n =                                                                       \
            rte_ring_sc_dequeue_burst_elem(((dpdk_ctx *)ctx)->ring[ring], it, S, k, NULL); \
        for (uint32_t i = 0; i < n; i++)                                                   \
            *bad += !rb_ok_##S(&it[i], (*expect)++, base);                                 \
        return n;                                                                          \
    }                                                                                      \
    static inline uint32_t delem_echo_##S(void *ctx)                                       \
    {                                                                                      \
        dpdk_ctx *c = ctx;                                                                 \
        rb_item##S it;                                                                     \
        if (rte_ring_sc_dequeue_elem(c->ring[0], &it, S) != 0)                             \
            return 0;                                                                      \
        while (rte_ring_sp_enqueue_elem(c->ring[1], &it, S) != 0)                          \
            ;                                                                              \
        return 1;                                                                          \
    }
ELEM_OPS(16)
ELEM_OPS(64)
RB_LOOPS(delem, 16)
RB_LOOPS(delem, 64)

static const rb_impl dpdk_ptr = {.name = "rte_ring + mempool", .setup = ptr_setup,
                                 .teardown = dpdk_teardown, .thread_begin = register_thread,
                                 .thread_end = unregister_thread, RB_BODIES(dptr)};
static const rb_impl dpdk_elem = {.name = "rte_ring elem", .setup = elem_setup,
                                  .teardown = dpdk_teardown, .thread_begin = register_thread,
                                  .thread_end = unregister_thread, RB_BODIES(delem)};
const rb_impl *const tw__rb_dpdk_ptr = &dpdk_ptr;
const rb_impl *const tw__rb_dpdk_elem = &dpdk_elem;
