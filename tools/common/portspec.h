/* Opening a port from a one-line spec, for the tools, tests and benchmarks:
 *
 *   af_packet:IFNAME            AF_PACKET TPACKET_V3 on IFNAME
 *   af_xdp:IFNAME[:QUEUE]       AF_XDP (libxdp) on IFNAME, queue QUEUE (0)
 *   dpdk_af_packet:IFNAME       DPDK net_af_packet vdev on IFNAME, --no-huge
 *   dpdk_af_xdp:IFNAME          DPDK net_af_xdp vdev on IFNAME, --no-huge
 *   dpdk:PORT:EAL ARGS...       DPDK port id PORT with these EAL arguments
 *   memif:SOCKET[,role=server|client][,id=N][,mac=M]
 *                               DPDK net_memif (shared memory, no system call
 *                               per packet) on unix socket file SOCKET; role
 *                               server (the default) creates it; either end
 *                               may start first and a lost peer reconnects
 *
 * Buffers a closed port found still held are counted by the library:
 * tw_port_leaked_total() in tickwire/port.h. */
#ifndef TW_TOOLS_PORTSPEC_H
#define TW_TOOLS_PORTSPEC_H

#include "tickwire/port.h"

/* Returns 0 and sets *out (the caller closes it with tw_port_close), or a
 * negative errno-style code with err naming what was wrong: -EINVAL for a
 * malformed spec (a bad queue or port number included), -ENOTSUP when this
 * build has no such backend, else the backend's own error. */
int tw__port_open_spec(tw_port **out, const char *spec, unsigned frames, tw_error *err);

/* What follows "memif:" in a spec, parsed (no DPDK needed; the fuzz target
 * calls it): the socket path (no blank, '=' or ';': DPDK's devargs), the
 * role (server unless role=client), id (0..255) and the MAC (given, or
 * 02:74:77:6d:ID:01 for a server, ...:02 for a client).  0, or -EINVAL
 * with err naming what was wrong. */
typedef struct tw__memif_spec {
    char socket[108]; /* sun_path */
    int server;
    unsigned id;
    char mac[18];
} tw__memif_spec;
int tw__memif_spec_parse(const char *args, tw__memif_spec *m, tw_error *err);

#endif
