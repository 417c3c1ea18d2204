/* The userspace stack on a reactor (include/tickwire/reactor.h), for the
 * tools, tests and benchmarks that drive it:
 *
 *  - tw__netdrv_poll: a reactor poll that runs a tw_net at the turn's
 *    now->ns and lowers now->wake_ns to the stack's next timer, so that a
 *    yielding core's wait on the port's rx_fd ends when a timer is due;
 *  - tw__netdrv: a one-core reactor around one or two stacks, turned one
 *    turn at a time by a driver with steps of its own between turns (wait
 *    for a state, send, check what came back), or run until stopped.
 *
 * One clock: the now_ns a driver hands the stack (tw_tcp_send, connect,
 * close) must come from tw__netdrv_now_ns(), the reactor's TSC clock,
 * never from CLOCK_MONOTONIC, which NTP may slew away from it. */
#ifndef TW_TOOLS_NETDRV_H
#define TW_TOOLS_NETDRV_H

#include <stdint.h>

#include "tickwire/net.h"
#include "tickwire/reactor.h"

/* Monotonic ns on the reactor's clock (tw_tsc_default()). */
uint64_t tw__netdrv_now_ns(void);

/* A reactor poll: arg is the tw_net.  Returns tw_net_poll's count. */
unsigned tw__netdrv_poll(void *arg, tw_reactor_now *now);

typedef struct tw__netdrv {
    tw_reactor r;        /* core 0: the stacks' polls, the ports' rx_fds */
    uint64_t max_wait_ns; /* the longest idle wait of the current turn */
} tw__netdrv;

/* Sets up d around st over port: core 0, not pinned, polling st, waiting
 * on port's rx_fd when yielding (a port without one: pause and
 * sched_yield).  The caller may add polls (tw_reactor_add_poll(&d->r, 0,
 * ...)) before the first turn.  Returns 0 or a negative errno. */
int tw__netdrv_init(tw__netdrv *d, tw_net *st, tw_port *port);
/* Adds a second stack (both ends of a connection driven in one loop). */
int tw__netdrv_add(tw__netdrv *d, tw_net *st, tw_port *port);

/* One turn: every stack polled once; when nothing had work and yielding
 * is set, the reactor's idle back-off (a wait of at most max_wait_ns on
 * the rx_fds, bounded by the stacks' timers); busy otherwise (pause, no
 * system call).  Returns the work done (frames and timers handled). */
unsigned tw__netdrv_turn(tw__netdrv *d, int yielding, uint64_t max_wait_ns);

/* Turns until tw_reactor_stop(&d->r) (a signal handler may call it). */
void tw__netdrv_run(tw__netdrv *d, int yielding, uint64_t max_wait_ns);

#endif
