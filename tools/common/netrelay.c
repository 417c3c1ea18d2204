/* The impaired relay: see netrelay.h. */
#include "common/netrelay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tickwire/clock.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

/* ---- the schedule ------------------------------------------------------ */

/* SplitMix64's finaliser: a bijection with good avalanche, so consecutive
 * k's give independent-looking draws. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A uniform draw in [0, 1) for (seed, dir, k, what). */
static double draw(uint64_t seed, unsigned dir, uint64_t k, unsigned what)
{
    uint64_t h = mix(seed ^ mix(k * 4 + dir) ^ mix(0x5eedull + what));
    return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

void tw__relay_decide(const tw__relay_sched *s, unsigned dir, uint64_t k, tw__relay_verdict *v)
{
    memset(v, 0, sizeof(*v));
    v->copies = 1;
    if (s->burst_len && dir == s->burst_dir && k >= s->burst_at && k - s->burst_at < s->burst_len) {
        v->drop = 1;
        return;
    }
    if (s->loss > 0 && draw(s->seed, dir, k, 0) < s->loss) {
        v->drop = 1;
        return;
    }
    v->hold_ns = s->delay_ns;
    if (s->jitter_ns > 0)
        v->hold_ns += (int64_t)(draw(s->seed, dir, k, 1) * (double)s->jitter_ns);
    if (s->reorder > 0 && draw(s->seed, dir, k, 2) < s->reorder) {
        v->reordered = 1;
        v->hold_ns += s->reorder_ns;
    }
    if (s->dup > 0 && draw(s->seed, dir, k, 3) < s->dup)
        v->copies = 2;
}

/* ---- the delay queue: a binary heap of slots by (due, seq) ------------- */

static int before(const tw__relay *r, uint32_t a, uint32_t b)
{
    return r->due_ns[a] < r->due_ns[b] || (r->due_ns[a] == r->due_ns[b] && r->seq[a] < r->seq[b]);
}

static void heap_push(tw__relay *r, uint32_t slot)
{
    uint32_t i = r->n_heap++;
    r->heap[i] = slot;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!before(r, r->heap[i], r->heap[p]))
            break;
        uint32_t t = r->heap[p];
        r->heap[p] = r->heap[i];
        r->heap[i] = t;
        i = p;
    }
}

static uint32_t heap_pop(tw__relay *r)
{
    uint32_t top = r->heap[0];
    r->heap[0] = r->heap[--r->n_heap];
    uint32_t i = 0;
    for (;;) {
        uint32_t l = 2 * i + 1, m = i;
        if (l < r->n_heap && before(r, r->heap[l], r->heap[m]))
            m = l;
        if (l + 1 < r->n_heap && before(r, r->heap[l + 1], r->heap[m]))
            m = l + 1;
        if (m == i)
            break;
        uint32_t t = r->heap[m];
        r->heap[m] = r->heap[i];
        r->heap[i] = t;
        i = m;
    }
    return top;
}

/* ---- sockets ------------------------------------------------------------ */

static int open_sock(const char *ifname, char *why, size_t cap)
{
    unsigned idx = if_nametoindex(ifname);
    if (!idx) {
        snprintf(why, cap, "no interface %s", ifname);
        return -ENODEV;
    }
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
    if (fd < 0) {
        int e = errno;
        snprintf(why, cap, "socket(AF_PACKET): %s", strerror(e));
        return -e;
    }
    struct sockaddr_ll sa;
    memset(&sa, 0, sizeof(sa));
    sa.sll_family = AF_PACKET;
    sa.sll_protocol = htons(ETH_P_ALL);
    sa.sll_ifindex = (int)idx;
    /* Our own transmissions would come back through the tap otherwise. */
    int one = 1, buf = 8 << 20;
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) != 0) {
        int e = errno;
        snprintf(why, cap, "bind/PACKET_IGNORE_OUTGOING on %s: %s", ifname, strerror(e));
        close(fd);
        return -e;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf));
    /* Frames already queued before the bind took effect are not ours. */
    uint8_t junk[TW__RELAY_FRAME];
    while (recv(fd, junk, sizeof(junk), MSG_DONTWAIT) >= 0) {
    }
    return fd;
}

int tw__relay_open(tw__relay *r, const char *a_if, const char *b_if, const tw__relay_sched *s,
                   char *why, size_t why_cap)
{
    memset(r, 0, sizeof(*r));
    r->fd[0] = r->fd[1] = -1;
    r->sched = *s;
    r->mem = malloc((size_t)TW__RELAY_SLOTS * TW__RELAY_FRAME);
    r->heap = calloc(TW__RELAY_SLOTS, sizeof(uint32_t));
    r->free_slots = calloc(TW__RELAY_SLOTS, sizeof(uint32_t));
    r->due_ns = calloc(TW__RELAY_SLOTS, sizeof(int64_t));
    r->seq = calloc(TW__RELAY_SLOTS, sizeof(uint64_t));
    r->len = calloc(TW__RELAY_SLOTS, sizeof(uint16_t));
    r->dir = calloc(TW__RELAY_SLOTS, 1);
    if (!r->mem || !r->heap || !r->free_slots || !r->due_ns || !r->seq || !r->len || !r->dir) {
        snprintf(why, why_cap, "out of memory for the delay queue");
        tw__relay_close(r);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < TW__RELAY_SLOTS; i++)
        r->free_slots[i] = TW__RELAY_SLOTS - 1 - i;
    r->n_free = TW__RELAY_SLOTS;
    int fd = open_sock(a_if, why, why_cap);
    if (fd < 0) {
        tw__relay_close(r);
        return fd;
    }
    r->fd[0] = fd;
    fd = open_sock(b_if, why, why_cap);
    if (fd < 0) {
        tw__relay_close(r);
        return fd;
    }
    r->fd[1] = fd;
    return 0;
}

void tw__relay_close(tw__relay *r)
{
    if (r->running)
        tw__relay_stop(r);
    for (int i = 0; i < 2; i++) {
        if (r->fd[i] >= 0) {
            struct tpacket_stats st;
            socklen_t l = sizeof(st);
            if (getsockopt(r->fd[i], SOL_PACKET, PACKET_STATISTICS, &st, &l) == 0)
                r->c.sock_drops += st.tp_drops;
            close(r->fd[i]);
        }
        r->fd[i] = -1;
    }
    free(r->mem);
    free(r->heap);
    free(r->free_slots);
    free(r->due_ns);
    free(r->seq);
    free(r->len);
    free(r->dir);
    r->mem = NULL;
    r->heap = r->free_slots = NULL;
    r->due_ns = NULL;
    r->seq = NULL;
    r->len = NULL;
    r->dir = NULL;
}

static void out(tw__relay *r, unsigned dir, const uint8_t *f, size_t len)
{
    if (send(r->fd[dir ^ 1], f, len, MSG_DONTWAIT) == (ssize_t)len)
        r->c.sent[dir]++;
    else
        r->c.tx_fail++;
}

/* A frame that came in on fd[dir], to go out on the other. */
static void arrive(tw__relay *r, unsigned dir, const uint8_t *f, size_t len, int64_t now_ns)
{
    if (len < 14 || f[12] != 0x08 || f[13] != 0x00) {
        r->c.other[dir]++;
        out(r, dir, f, len);
        return;
    }
    uint64_t k = r->c.frames[dir]++;
    tw__relay_verdict v;
    tw__relay_decide(&r->sched, dir, k, &v);
    if (v.drop) {
        r->c.dropped[dir]++;
        return;
    }
    r->c.duplicated[dir] += v.copies == 2;
    r->c.reordered[dir] += (uint64_t)v.reordered;
    int64_t due = now_ns + v.hold_ns;
    if (!v.reordered) {
        /* Jitter delays but keeps order: never before the frame ahead. */
        if (due < r->last_due_ns[dir])
            due = r->last_due_ns[dir];
        r->last_due_ns[dir] = due;
    }
    for (int c = 0; c < v.copies; c++) {
        if (due <= now_ns && r->n_heap == 0) {
            out(r, dir, f, len);
            continue;
        }
        if (r->n_free == 0) {
            r->c.queue_full++;
            continue;
        }
        uint32_t s = r->free_slots[--r->n_free];
        memcpy(r->mem + (size_t)s * TW__RELAY_FRAME, f, len);
        r->len[s] = (uint16_t)len;
        r->dir[s] = (uint8_t)dir;
        r->due_ns[s] = due;
        r->seq[s] = r->next_seq++;
        heap_push(r, s);
    }
}

/* Sends every held frame that is due; returns the next due time or
 * INT64_MAX. */
static int64_t release(tw__relay *r, int64_t now_ns)
{
    while (r->n_heap) {
        uint32_t s = r->heap[0];
        if (r->due_ns[s] > now_ns)
            return r->due_ns[s];
        heap_pop(r);
        out(r, r->dir[s], r->mem + (size_t)s * TW__RELAY_FRAME, r->len[s]);
        r->free_slots[r->n_free++] = s;
    }
    return INT64_MAX;
}

int tw__relay_run(tw__relay *r, volatile int *stop)
{
    uint8_t buf[TW__RELAY_FRAME];
    struct pollfd pf[2] = {{.fd = r->fd[0], .events = POLLIN}, {.fd = r->fd[1], .events = POLLIN}};
    /* Relaxed load: the flag only asks the loop to end; the join in
     * tw__relay_stop orders everything else. */
    while (!__atomic_load_n(stop, __ATOMIC_RELAXED)) {
        int64_t now = tw_clock_now_ns();
        int64_t next = release(r, now);
        int64_t wait = 5000000;
        if (next != INT64_MAX && next - now < wait)
            wait = next - now;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = wait};
        int n = ppoll(pf, 2, &ts, NULL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        for (unsigned d = 0; d < 2 && n > 0; d++) {
            if (!(pf[d].revents & POLLIN))
                continue;
            for (int i = 0; i < 256; i++) {
                struct sockaddr_ll from;
                socklen_t fl = sizeof(from);
                ssize_t m = recvfrom(r->fd[d], buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC,
                                     (struct sockaddr *)&from, &fl);
                if (m < 0)
                    break;
                if (from.sll_pkttype == PACKET_OUTGOING || (size_t)m > sizeof(buf))
                    continue;
                arrive(r, d, buf, (size_t)m, tw_clock_now_ns());
            }
        }
    }
    return 0;
}

static void *relay_thread(void *arg)
{
    tw__relay *r = arg;
    (void)tw__relay_run(r, &r->stop);
    return NULL;
}

int tw__relay_start(tw__relay *r)
{
    r->stop = 0;
    int e = pthread_create(&r->thr, NULL, relay_thread, r);
    if (e)
        return -e;
    r->running = 1;
    return 0;
}

void tw__relay_stop(tw__relay *r)
{
    if (!r->running)
        return;
    /* Pairs with the relaxed load in tw__relay_run; the join orders the
     * thread's counts before our reads. */
    __atomic_store_n(&r->stop, 1, __ATOMIC_RELAXED);
    pthread_join(r->thr, NULL);
    r->running = 0;
}

/* ---- topology ----------------------------------------------------------- */

int tw__relay_topology_setup(tw__relay_topology *t, int left_ns, int right_ns)
{
    memset(t, 0, sizeof(*t));
    int rc = tw__netenv_setup_ip(&t->l, left_ns ? 1 : 0, TW_NETENV_CLIENT_IP);
    if (rc)
        return rc;
    rc = tw__netenv_setup_ip(&t->r, right_ns ? 1 : 0, TW_NETENV_PEER_IP);
    if (rc) {
        tw__netenv_teardown(&t->l);
        return rc;
    }
    return 0;
}

void tw__relay_topology_teardown(tw__relay_topology *t)
{
    tw__netenv_teardown(&t->l);
    tw__netenv_teardown(&t->r);
}
