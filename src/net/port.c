/* What every port backend shares: the count of buffers leaked by callers
 * (port_internal.h; tw_port_leaked_total in port.h), and the capture hook
 * of the common rx/tx path (port.h, capture.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "net/port_internal.h"

/* Relaxed: a statistic with no ordering to keep.  Ports may close on any
 * thread; the add in tw__port_leak and the load here pair with nothing
 * else. */
static uint64_t leaked;
/* The last close's complaint, for the tool to print (the library prints
 * nothing).  last_lock is a spinlock: taken only by a close that leaked
 * and by tw_port_last_leak, both rare. */
static char last_leak[256];
static int last_lock;

static void lock_last(void)
{
    /* Acquire pairs with the release in unlock_last. */
    while (__atomic_exchange_n(&last_lock, 1, __ATOMIC_ACQUIRE))
        ;
}

static void unlock_last(void) { __atomic_store_n(&last_lock, 0, __ATOMIC_RELEASE); }

uint64_t tw_port_leaked_total(void)
{
    return __atomic_load_n(&leaked, __ATOMIC_RELAXED);
}

size_t tw_port_last_leak(char *buf, size_t cap)
{
    if (!cap)
        return 0;
    lock_last();
    size_t n = strlen(last_leak);
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, last_leak, n);
    buf[n] = 0;
    unlock_last();
    return n;
}

void tw__port_leak(const tw_port *p, uint64_t n, const char *fmt, ...)
{
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    lock_last();
    snprintf(last_leak, sizeof(last_leak), "%s: closed with %s", p->ops->name, what);
    unlock_last();
    __atomic_fetch_add(&leaked, n, __ATOMIC_RELAXED);
}

void tw__port_check_held(const tw_port *p, int64_t held, const char *unit)
{
    if (held == 0)
        return;
    uint64_t n = held < 0 ? (uint64_t)-held : (uint64_t)held;
    tw__port_leak(p, n, "%lld %s still held by the caller", (long long)held, unit);
}

/* ---- capture hook (port.h) --------------------------------------------
 * Each burst gets one stamp and as few ring reservations as the ring
 * allows (one, unless the burst wraps the ring's end or fills it). */

void tw__port_capture_rx(tw_port *p, const tw_pkt *pkts, unsigned n)
{
    tw_capture *c = p->capture;
    unsigned ifc = p->capture_if;
    uint64_t stamp = tw_capture_stamp(c);
    uint32_t rejected = 0;
    unsigned i = 0;
    while (i < n) {
        uint8_t *s;
        uint32_t k = tw_capture_reserve(c, n - i, &s), used = 0;
        if (k == 0) {
            /* Full: count what the filter keeps as dropped, never wait. */
            uint32_t d = 0;
            for (; i < n; i++) {
                int m = tw_capture_match(c, TW_CAPTURE_RX, pkts[i].data, pkts[i].len);
                d += (uint32_t)m;
                rejected += (uint32_t)!m;
            }
            tw_capture_drop(c, ifc, d);
            break;
        }
        for (; i < n && used < k; i++) {
            if (!tw_capture_match(c, TW_CAPTURE_RX, pkts[i].data, pkts[i].len)) {
                rejected++;
                continue;
            }
            tw_capture_fill(c, s + (size_t)used++ * c->slot_size, ifc, TW_CAPTURE_RX, stamp,
                            pkts[i].data, pkts[i].len);
        }
        tw_capture_commit(c, ifc, used);
    }
    if (rejected)
        tw_capture_filtered(c, ifc, rejected);
}

/* Sent frames are copied before the backend takes them (after tx_burst
 * they are the port's), and only what concerns frames it took is
 * published or counted: a chunk of at most 64 frames is matched, copied
 * into reserved slots, handed to the backend, and the copies of its first
 * `taken` frames committed. */
unsigned tw__port_capture_tx(tw_port *p, tw_pkt *pkts, unsigned n)
{
    tw_capture *c = p->capture;
    unsigned ifc = p->capture_if;
    uint64_t stamp = tw_capture_stamp(c);
    unsigned done = 0;
    while (done < n) {
        unsigned chunk = n - done < 64 ? n - done : 64;
        uint8_t *s;
        uint32_t k = tw_capture_reserve(c, chunk, &s), used = 0;
        uint64_t pass = 0; /* bit j: the filter keeps frame done + j */
        unsigned j = 0;
        for (; j < chunk; j++) {
            const tw_pkt *q = &pkts[done + j];
            if (!tw_capture_match(c, TW_CAPTURE_TX, q->data, q->len))
                continue;
            if (k && used == k)
                break; /* out of reserved slots: the rest is the next chunk */
            pass |= 1ull << j;
            if (k)
                tw_capture_fill(c, s + (size_t)used++ * c->slot_size, ifc, TW_CAPTURE_TX, stamp,
                                q->data, q->len);
        }
        unsigned taken = p->ops->tx_burst(p, pkts + done, j);
        TW_ASSERT(taken <= j);
        uint64_t mask = taken >= 64 ? ~0ull : (1ull << taken) - 1;
        /* With slots, every passing frame before j has one, in order: the
         * first `kept` slots are the taken frames' copies. */
        uint32_t kept = (uint32_t)__builtin_popcountll(pass & mask);
        uint32_t rejected = taken - kept;
        if (k)
            tw_capture_commit(c, ifc, kept);
        else
            tw_capture_drop(c, ifc, kept);
        if (rejected)
            tw_capture_filtered(c, ifc, rejected);
        done += taken;
        if (taken < j)
            break; /* the port is full: the rest stays the caller's */
    }
    return done;
}

int tw_port_capture_attach(tw_port *p, tw_capture *c, const char *if_name, tw_error *err)
{
    if (p->capture)
        return tw__err(err, -EBUSY, "port %s: capture already on", p->ops->name);
    int id = tw_capture_add_iface(c, if_name ? if_name : p->ops->name, err);
    if (id < 0)
        return id;
    p->capture_if = (uint32_t)id;
    p->capture = c;
    return 0;
}

void tw_port_capture_detach(tw_port *p)
{
    p->capture = NULL;
}

int tw_port_capture_open(tw_port *p, const tw_capture_config *cfg, const char *if_name,
                         tw_capture **out, tw_error *err)
{
    *out = NULL;
    tw_capture *c;
    int rc = tw_capture_open(&c, cfg, err);
    if (rc)
        return rc;
    if ((rc = tw_port_capture_attach(p, c, if_name, err)) != 0) {
        tw_capture_close(c, NULL);
        return rc;
    }
    *out = c;
    return 0;
}
