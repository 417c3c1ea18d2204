/* The venue of live.md on the simulated network, for the in-process runs
 * of the live engine (tests/trade, bench/live): a sim network with two
 * ports, the exchange library (exchange.h) served on its own userspace
 * stack at TW__SIMVENUE_IP:TW__SIMVENUE_PORT on the first, the second left
 * for the trader's stack (`stack = sim` in its configuration, handed to
 * the engine through its open_port hook).  One thread turns it all: the
 * network is not shared between threads. */
#ifndef TW_TOOLS_SIMVENUE_H
#define TW_TOOLS_SIMVENUE_H

#include "tickwire/exchange.h"
#include "tickwire/net.h"
#include "tickwire/net_sim.h"

#define TW__SIMVENUE_IP 0x0a4d0002u /* 10.77.0.2 */
#define TW__SIMVENUE_IP_TEXT "10.77.0.2"
#define TW__SIMVENUE_TRADER_IP_TEXT "10.77.0.1"
#define TW__SIMVENUE_PORT 9878

typedef struct tw__simvenue {
    tw_sim_net *net;
    tw_port *vport;      /* the venue's */
    tw_port *tport;      /* the trader's: give it to the engine */
    tw_xchg *x;
    tw_net *vst;
    tw_xchg_net *xn;
} tw__simvenue;

/* Opens the network (link: each port's egress, NULL = perfect; seed for
 * its impairments and the venue stack's ISNs) and the venue on xc.
 * Returns 0 or a negative errno-style code with err filled (everything
 * opened so far closed again). */
int tw__simvenue_open(tw__simvenue *sv, const tw_xchg_cfg *xc, const tw_sim_link_config *link,
                      uint64_t seed, tw_error *err);
/* One turn at monotonic now_ns: frames due delivered, the venue's stack and
 * the venue polled.  Returns the work done (0: nothing was ready). */
unsigned tw__simvenue_turn(tw__simvenue *sv, int64_t now_ns);
void tw__simvenue_close(tw__simvenue *sv, int64_t now_ns);

#endif
