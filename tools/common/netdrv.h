/* The loop around a tw_net for the tools, tests and benchmarks that run
 * the stack without a reactor: a turn of the stack at the current
 * monotonic time, and the wait between idle turns (busy-poll, or yielding
 * on the port's rx_fd bounded by the stack's next timer).  Clock reads go
 * through tickwire/clock.h. */
#ifndef TW_TOOLS_NETDRV_H
#define TW_TOOLS_NETDRV_H

#include <stdint.h>

#include "tickwire/net.h"

/* Waits until the port may have something to receive, the stack's next
 * timer is due, or max_wait_ns has passed, whichever comes first: poll()
 * on the port's rx_fd, or a short sleep when the port has none (DPDK
 * virtual devices).  Returns at once when a timer is already due. */
void tw__netdrv_idle(tw_net *st, tw_port *port, uint64_t now_ns, uint64_t max_wait_ns);

/* One turn: tw_net_poll at tw_clock_now_ns(), and when that did nothing
 * and yielding is set, tw__netdrv_idle.  Returns tw_net_poll's count. */
unsigned tw__netdrv_turn(tw_net *st, tw_port *port, int yielding, uint64_t max_wait_ns);

#endif
