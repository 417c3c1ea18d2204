/* Opening a port from a one-line spec, for the tools, tests and benchmark:
 *
 *   af_packet:IFNAME            AF_PACKET TPACKET_V3 on IFNAME
 *   af_xdp:IFNAME[:QUEUE]       AF_XDP (libxdp) on IFNAME, queue QUEUE (0)
 *   dpdk_af_packet:IFNAME       DPDK net_af_packet vdev on IFNAME, --no-huge
 *   dpdk_af_xdp:IFNAME          DPDK net_af_xdp vdev on IFNAME, --no-huge
 *   dpdk:PORT:EAL ARGS...       DPDK port id PORT with these EAL arguments
 */
#ifndef TW_TOOLS_PORTSPEC_H
#define TW_TOOLS_PORTSPEC_H

#include "tickwire/port.h"

/* Returns 0 and sets *out, or a negative code with err filled; -ENOTSUP
 * when this build has no such backend. */
int twp_open_spec(tw_port **out, const char *spec, unsigned frames, tw_error *err);

/* Buffers that closed ports of this kind found still held (0 = none). */
unsigned long long twp_leaked(void);

#endif
