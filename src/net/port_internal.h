/* What the port backends share (port_af_packet.c, port_af_xdp.c,
 * port_dpdk.c; port.c holds it).  Nobody outside src/net may use it. */
#ifndef TW_NET_PORT_INTERNAL_H
#define TW_NET_PORT_INTERNAL_H

#include "tickwire/port.h"

/* A backend's close found buffers not back where they belong (owned by
 * the caller, or missing from the pool): "NAME: closed with " and fmt kept
 * for tw_port_last_leak(), and n of them added to tw_port_leaked_total().
 * Nothing is printed: the tool that closed the port reports it. */
void tw__port_leak(const tw_port *p, uint64_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The close check of a backend that counts the buffers its caller owns
 * (held = rx + alloc - freed - sent; negative after a double free, which
 * loses buffers the other way): when held is not 0, tw__port_leak of
 * |held| UNIT ("buffers", "frames") still held by the caller. */
void tw__port_check_held(const tw_port *p, int64_t held, const char *unit);

#endif
