/* An impaired link in userspace: a relay between two network interfaces
 * (each the relay's end of a veth pair) over AF_PACKET, dropping,
 * delaying, reordering and duplicating IPv4 frames by a seeded schedule.
 *
 *   [A end] <==veth==> a_if  (relay)  b_if <==veth==> [B end]
 *
 * The schedule is a pure function: the fate of the k-th IPv4 frame going
 * one way depends only on the seed, the direction (0: a_if to b_if, 1: the
 * other way) and k, never on the frame's contents or timing.  So whatever
 * runs at the ends (two kernels, this stack and a kernel, two stacks) sees
 * exactly the same losses, frame for frame, when the relay is restarted
 * with the same schedule.  Frames that are not IPv4 (ARP) pass at once,
 * uncounted and unimpaired, so address resolution never shifts k.
 *
 * tw__relay_topology builds the two pairs and their namespaces (netenv.h);
 * `tickwire net relay` is the tool, and `tickwire bench netloss` and the
 * relay interop tests run the same relay on a thread of their own. */
#ifndef TW_TOOLS_NETRELAY_H
#define TW_TOOLS_NETRELAY_H

#include <pthread.h>
#include <stdint.h>

#include "common/netenv.h"

typedef struct tw__relay_sched {
    uint64_t seed;
    double loss;           /* probability of dropping a frame, each direction */
    uint64_t burst_len;    /* frames [burst_at, burst_at + burst_len) of */
    uint64_t burst_at;     /*   direction burst_dir are dropped (0: no burst) */
    unsigned burst_dir;
    int64_t delay_ns;      /* fixed one-way delay */
    int64_t jitter_ns;     /* + uniform [0, jitter_ns), order kept */
    double reorder;        /* probability of holding a frame reorder_ns more */
    int64_t reorder_ns;    /*   (frames behind it overtake it) */
    double dup;            /* probability of sending a frame twice */
} tw__relay_sched;

typedef struct tw__relay_verdict {
    int drop;              /* 1: the frame is lost */
    int copies;            /* 1, or 2 for a duplicate */
    int reordered;         /* held back by reorder_ns */
    int64_t hold_ns;       /* delay + jitter (+ reorder_ns) */
} tw__relay_verdict;

/* The fate of the k-th IPv4 frame in direction dir (0 or 1) under s. */
void tw__relay_decide(const tw__relay_sched *s, unsigned dir, uint64_t k, tw__relay_verdict *v);

typedef struct tw__relay_counts {
    uint64_t frames[2];    /* IPv4 frames seen, per direction (the k's) */
    uint64_t dropped[2], duplicated[2], reordered[2];
    uint64_t sent[2];      /* frames sent on (copies included, others included) */
    uint64_t other[2];     /* non-IPv4 frames passed through */
    uint64_t queue_full;   /* frames lost because the delay queue was full */
    uint64_t tx_fail;      /* send() refused a frame */
    uint64_t sock_drops;   /* frames the kernel dropped before the relay read them */
} tw__relay_counts;

#define TW__RELAY_SLOTS 4096 /* frames held at once (delay queue) */
#define TW__RELAY_FRAME 2048 /* bytes per frame slot (MTU 1500 + header) */

typedef struct tw__relay {
    tw__relay_sched sched;
    int fd[2];             /* packet sockets on a_if (0) and b_if (1) */
    uint8_t *mem;          /* TW__RELAY_SLOTS frames */
    uint32_t *heap;        /* slot numbers, ordered by (due_ns, seq) */
    int64_t *due_ns;
    uint64_t *seq;
    uint16_t *len;
    uint8_t *dir;          /* the direction the frame came in */
    uint32_t *free_slots;
    uint32_t n_free, n_heap;
    uint64_t next_seq;
    int64_t last_due_ns[2]; /* jitter keeps order: never before the last */
    tw__relay_counts c;
    pthread_t thr;
    int running;
    int stop;              /* set by tw__relay_stop; read by the thread */
} tw__relay;

/* Opens packet sockets on the two interfaces (in this network namespace)
 * and allocates the delay queue.  0, or a negative errno-style code with
 * why filled (at least 160 bytes). */
int tw__relay_open(tw__relay *r, const char *a_if, const char *b_if, const tw__relay_sched *s,
                   char *why, size_t why_cap);

/* Relays until *stop becomes nonzero (checked at least every 5 ms), then
 * returns 0; or a negative errno when polling failed. */
int tw__relay_run(tw__relay *r, volatile int *stop);

/* The same on a thread of its own: start, then stop (waits for it). */
int tw__relay_start(tw__relay *r);
void tw__relay_stop(tw__relay *r);

/* Closes the sockets and frees the queue (frames still held are dropped);
 * the counts stay readable.  Idempotent. */
void tw__relay_close(tw__relay *r);

/* The relay topology:
 *
 *   left end  <==veth l==>  l.host (relay)  r.host  <==veth r==>  right end
 *
 * left_ns / right_ns: 1 = that end goes into a namespace of its own with
 * a kernel address (left TW_NETENV_CLIENT_IP, right TW_NETENV_PEER_IP:
 * one /24, so the two kernels talk through the relay as on one wire);
 * 0 = it stays here without an address, for this stack to open (the stack
 * on the left takes TW_NETENV_STACK_IP, on the right TW_NETENV_PEER_IP).
 * The relay's two ends stay here without addresses.  Returns
 * tw__netenv_setup's codes (TW_NETENV_SKIP after saying why). */
typedef struct tw__relay_topology {
    tw__netenv l, r;
} tw__relay_topology;
int tw__relay_topology_setup(tw__relay_topology *t, int left_ns, int right_ns);
void tw__relay_topology_teardown(tw__relay_topology *t);

#endif
