/* The loop around a tw_net for the tools, tests and benchmark: a clock,
 * and the wait between idle turns (busy-poll, or yielding on the port's
 * rx_fd bounded by the next timer). */
#ifndef TW_TOOLS_NETDRV_H
#define TW_TOOLS_NETDRV_H

#include <stdint.h>

#include "tickwire/net.h"

uint64_t twd_now_ns(void);

/* One turn: tw_net_poll, and when it did nothing and yielding is set, a
 * wait of at most max_wait_ns on the port's rx_fd (or a short sleep when
 * the port has none).  Returns tw_net_poll's count. */
unsigned twd_turn(tw_net *st, tw_port *port, int yielding, uint64_t max_wait_ns);

#endif
