/* Packet I/O ports: the one interface between the userspace TCP/IP stack
 * and the ways packets reach it (DPDK ethdev, AF_XDP, AF_PACKET, and the
 * deterministic simulated network).  Each backend is its own file behind
 * this ops table (like Redis ae_epoll.c / ae_kqueue.c).
 *
 * Buffers: a port owns a pool of fixed-size packet buffers.  tw_pkt is a
 * small descriptor (pointer + length + backend cookie) that wraps the
 * backend's own buffer without copying (an rte_mbuf, a UMEM frame, a slot
 * of the TPACKET ring, a sim pool slot).  Ownership is explicit: a packet
 * returned by rx_burst or alloc belongs to the caller until it is passed to
 * tx_burst (which takes it, sent or not: see below) or free_burst.
 *
 * No call on this interface allocates after the port is opened, and none
 * reads the clock. */
#ifndef TICKWIRE_PORT_H
#define TICKWIRE_PORT_H

#include "tickwire/capture.h"
#include "tickwire/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A packet buffer.  data points at the first byte of the Ethernet frame and
 * len is its length; room is how many bytes may be written from data.
 * cookie belongs to the backend (the rte_mbuf *, the UMEM address, ...). */
typedef struct tw_pkt {
    uint8_t *data;
    uint32_t len;
    uint32_t room;
    uint32_t ol_flags; /* TW_PKT_* below */
    uint32_t pad_;
    void *cookie;
} tw_pkt;

/* Offload flags on a tw_pkt. */
#define TW_PKT_RX_IP_CKSUM_GOOD  (1u << 0) /* port verified the IPv4 checksum */
#define TW_PKT_RX_L4_CKSUM_GOOD  (1u << 1) /* port verified the TCP checksum */
#define TW_PKT_TX_IP_CKSUM       (1u << 8) /* port should compute IPv4 checksum */
#define TW_PKT_TX_TCP_CKSUM      (1u << 9) /* port should compute TCP checksum */

/* Capabilities a port offers (tw_port.caps). */
#define TW_PORT_CAP_RX_CKSUM (1u << 0)
#define TW_PORT_CAP_TX_CKSUM (1u << 1)

typedef struct tw_port tw_port;

typedef struct tw_port_ops {
    const char *name; /* "dpdk", "af_xdp", "af_packet", "sim" */
    /* Receives up to n packets into pkts; returns how many (burst). */
    unsigned (*rx_burst)(tw_port *p, tw_pkt *pkts, unsigned n);
    /* Queues up to n packets for transmission; returns how many were taken.
     * Packets taken belong to the port from then on; those not taken
     * (pkts[ret..n-1]) still belong to the caller. */
    unsigned (*tx_burst)(tw_port *p, tw_pkt *pkts, unsigned n);
    /* Allocates up to n empty tx buffers (len 0, room >= TW_PORT_MTU_FRAME);
     * returns how many (burst). */
    unsigned (*alloc_burst)(tw_port *p, tw_pkt *pkts, unsigned n);
    /* Returns n buffers to the pool (from rx_burst or alloc_burst). */
    void (*free_burst)(tw_port *p, tw_pkt *pkts, unsigned n);
    /* Flushes queued tx and refills rx where the backend needs a kick
     * (AF_XDP sendto wakeup, AF_PACKET); may be NULL. */
    void (*poll)(tw_port *p);
    /* A file descriptor that becomes readable when rx has packets, for the
     * yielding mode of the reactor; -1 if the port has none. */
    int (*rx_fd)(tw_port *p);
    void (*close)(tw_port *p);
} tw_port_ops;

/* Every backend embeds this as its first member. */
struct tw_port {
    const tw_port_ops *ops;
    uint8_t mac[6];
    uint16_t mtu;  /* IP MTU, default 1500 */
    uint32_t caps; /* TW_PORT_CAP_* */
    /* Packet capture (capture.h), set by tw_port_capture_attach: NULL = off.
     * The common path below is the one place every backend's frames pass. */
    uint32_t capture_if; /* this port's interface id in the capture */
    tw_capture *capture;
    /* Counters every backend keeps.  rx_bad: frames the backend itself
     * dropped as truncated or malformed (never handed to the caller). */
    uint64_t rx_pkts, tx_pkts, tx_full, alloc_fail, rx_bad;
};

#define TW_PORT_MTU_FRAME 1518 /* 1500 + Ethernet header + FCS room */

/* The capture hook of the common path (port.c): every frame received, and
 * every frame a backend's tx_burst takes, is offered to p->capture with one
 * TSC stamp per burst.  Out of line: with capture off the inline wrappers
 * below cost one predictable branch per burst. */
void tw__port_capture_rx(tw_port *p, const tw_pkt *pkts, unsigned n);
unsigned tw__port_capture_tx(tw_port *p, tw_pkt *pkts, unsigned n);

static inline unsigned tw_port_rx_burst(tw_port *p, tw_pkt *pkts, unsigned n)
{
    unsigned got = p->ops->rx_burst(p, pkts, n);
    if (TW_UNLIKELY(p->capture != NULL) && got)
        tw__port_capture_rx(p, pkts, got);
    return got;
}
static inline unsigned tw_port_tx_burst(tw_port *p, tw_pkt *pkts, unsigned n)
{
    if (TW_UNLIKELY(p->capture != NULL))
        return tw__port_capture_tx(p, pkts, n);
    return p->ops->tx_burst(p, pkts, n);
}
static inline unsigned tw_port_alloc_burst(tw_port *p, tw_pkt *pkts, unsigned n)
{
    return p->ops->alloc_burst(p, pkts, n);
}
static inline void tw_port_free_burst(tw_port *p, tw_pkt *pkts, unsigned n)
{
    p->ops->free_burst(p, pkts, n);
}
static inline void tw_port_poll(tw_port *p)
{
    if (p->ops->poll)
        p->ops->poll(p);
}
static inline void tw_port_close(tw_port *p)
{
    if (p)
        p->ops->close(p);
}

/* Buffers that closed ports found still owned by their callers, over every
 * backend since the process started (0 = none).  A port closed while its
 * caller holds packets is a caller bug (every packet goes back through
 * tx_burst or free_burst): its close counts them here, so that a test
 * can assert the count stays 0, and keeps a line saying what it found
 * (tw_port_last_leak) for the tool to print.  Thread-safe. */
uint64_t tw_port_leaked_total(void);

/* The last leak a close found, "NAME: closed with N buffers still held by
 * the caller", NUL-terminated into buf (truncated to cap - 1); returns its
 * length, 0 when no close has leaked.  Thread-safe. */
size_t tw_port_last_leak(char *buf, size_t cap);

/* ---- capture (capture.h) -----------------------------------------------
 * Capture of a port's frames: received ones as rx_burst returns them,
 * sent ones as tx_burst takes them (a frame the backend did not take is
 * not captured: it never went out).  Copied on the polling thread into the
 * capture's ring; a full ring drops the copy, never the frame.  With
 * transmit checksum offload on, a sent frame is captured before the port
 * fills its checksums (like tcpdump on a kernel with offload).
 *
 * Turning it on for a tool or a session (the `--pcap SPEC` of `tickwire
 * net echo/connect`, `tickwire exchange`, a `pcap = SPEC` key of `tickwire
 * trade`):
 *
 *     tw_capture_config cc;
 *     if (tw_capture_config_parse(&cc, spec, &err) ||    // FILE[,snap=N,...]
 *         tw_port_capture_open(port, &cc, "af_xdp:eth1", &cap, &err))
 *         fail(err.msg);
 *     ... poll the port ...
 *     tw_port_capture_detach(port);                     // the polling thread, or after it
 *     tw_capture_close(cap, &stats);                    // writes the rest, closes the file
 *
 * Several ports polled by one thread may share one capture (one file, an
 * interface each): tw_capture_open once, tw_port_capture_attach per port. */

/* Attaches port p to capture c as a new interface named if_name (NULL:
 * the backend's name).  Call it before p is polled, or on p's polling
 * thread; p's frames go to c from then on.  Returns 0, -EBUSY (p already
 * has a capture), or tw_capture_add_iface's error. */
int tw_port_capture_attach(tw_port *p, tw_capture *c, const char *if_name, tw_error *err);

/* Stops capture on p (its polling thread, or once nobody polls it). */
void tw_port_capture_detach(tw_port *p);

/* tw_capture_open(cfg) and tw_port_capture_attach in one: *out is the
 * capture, the caller's to close (after tw_port_capture_detach).  Returns
 * 0 or the first failure, with nothing left open. */
int tw_port_capture_open(tw_port *p, const tw_capture_config *cfg, const char *if_name,
                         tw_capture **out, tw_error *err);

/* ---- backends ----------------------------------------------------------
 * Each open function returns 0 and sets *out, or a negative errno-style
 * code with err naming what failed (the interface, the EAL argument, ...). */

/* AF_PACKET with a TPACKET_V3 mmap ring on interface ifname. */
int tw_port_af_packet_open(tw_port **out, const char *ifname, unsigned frames,
                           tw_error *err);

/* AF_XDP (libxdp/libbpf) on ifname, queue queue_id. */
int tw_port_af_xdp_open(tw_port **out, const char *ifname, unsigned queue_id,
                        unsigned frames, tw_error *err);

/* DPDK: eal_args is a whitespace-separated EAL argument string (for
 * example "--no-huge -m 256 --no-pci --no-shconf --vdev=net_af_packet0,iface=veth0");
 * port_id selects the ethdev.  The EAL is initialised once per process. */
#define TW_PORT_DPDK_LAST_VDEV 0xffffu /* port_id: the ethdev of the last --vdev in eal_args */
int tw_port_dpdk_open(tw_port **out, const char *eal_args, uint16_t port_id,
                      unsigned mbufs, tw_error *err);

#ifdef __cplusplus
}
#endif
#endif
