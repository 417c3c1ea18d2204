/* The deterministic simulated network (netstack.md, "Deterministic network
 * simulation"): any number of sim ports joined by one in-process Ethernet
 * segment.  Every frame a port transmits goes through that port's egress
 * link, whose impairments come from the seed: one-way delay (minimum plus
 * an exponential part), loss, duplication, reordering (extra delay on a
 * fraction of frames), corruption (random bit flips, which the stack's
 * checksums must catch), partition, and a capacity limit (frames queued on
 * the link) past which frames are dropped or, with ecn_mark, CE-marked.
 *
 * Time is virtual: tw_sim_net_advance(net, now_ns) delivers every frame due
 * by now_ns into the receiving port's rx queue.  Nothing reads a clock, so
 * a run is a function of (seed, link configs, workload).
 *
 * Buffers: each port has its own fixed pool; a transmitted frame is copied
 * into one of the network's in-flight slots and its buffer returns to the
 * sender's pool at once; delivery copies it into a buffer of the receiver's
 * pool (dropped and counted when that pool is empty).  So after a run,
 * tw_sim_port_pool_free() == pool size shows that nothing leaked. */
#ifndef TICKWIRE_NET_SIM_H
#define TICKWIRE_NET_SIM_H

#include "tickwire/port.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tw_sim_net tw_sim_net;

typedef struct tw_sim_link_config {
    uint64_t delay_min_ns;   /* every frame takes at least this long */
    uint64_t delay_mean_ns;  /* mean of the exponential extra delay (0 = none) */
    uint32_t loss_ppm;       /* per frame, parts per million */
    uint32_t dup_ppm;
    uint32_t reorder_ppm;    /* frames given reorder_extra_ns more delay */
    uint64_t reorder_extra_ns;
    uint32_t corrupt_ppm;    /* frames with 1..3 random bits flipped */
    unsigned queue_limit;    /* frames in flight on this link; 0 = no limit */
    int ecn_mark;            /* 1: over ecn_threshold, mark CE on ECT frames */
    unsigned ecn_threshold;  /* frames in flight; 0 = queue_limit / 2 */
    uint64_t rate_Bps;       /* serialisation rate; 0 = infinite */
} tw_sim_link_config;

typedef struct tw_sim_stats {
    uint64_t sent, delivered, lost, duplicated, reordered, corrupted;
    uint64_t queue_drops, ce_marked, partition_drops, rx_pool_drops, no_dest;
} tw_sim_stats;

/* Opens a network with a PRNG seeded from seed and room for max_in_flight
 * frames at once (all links together).  Returns 0 or a negative code. */
int tw_sim_net_open(tw_sim_net **out, uint64_t seed, unsigned max_in_flight,
                    tw_error *err);
void tw_sim_net_close(tw_sim_net *net);

/* Opens a port on net, the way the other backends open theirs (port.h):
 * MAC mac, egress its link (NULL = perfect, zero delay), a pool of frames
 * buffers.  Returns 0 and sets *out, or a negative errno-style code with
 * err naming what failed (-ENOSPC: the network has 16 ports already;
 * -EINVAL: frames outside [2, 2^20]; -ENOMEM).  The port is owned by the
 * network: tw_port_close on it is a no-op, tw_sim_net_close frees it. */
int tw_port_sim_open(tw_port **out, tw_sim_net *net, const uint8_t mac[6],
                     const tw_sim_link_config *egress, unsigned frames, tw_error *err);

/* Checksum offload: set TW_PORT_CAP_TX_CKSUM / TW_PORT_CAP_RX_CKSUM in
 * the port's caps (p->caps) and the sim acts like such a NIC: on transmit
 * it completes the checksums a frame's TW_PKT_TX_* flags ask for; on
 * receive it sets TW_PKT_RX_*_CKSUM_GOOD for checksums that verify. */

/* Replaces a port's egress link config. */
void tw_sim_port_set_link(tw_port *p, const tw_sim_link_config *egress);

/* Partitions a port: while on, every frame it sends or would receive is
 * dropped (frames already in flight are dropped on delivery too). */
void tw_sim_port_partition(tw_port *p, int on);

/* Moves virtual time to now_ns (never backwards) and delivers every frame
 * due by then.  Returns how many were delivered. */
unsigned tw_sim_net_advance(tw_sim_net *net, int64_t now_ns);

/* The network's virtual time (where tw_sim_net_advance last moved it):
 * what a capture of a simulated run stamps frames with (capture.h,
 * tw_capture_config.now_ns = tw_sim_net_now(net)), so that the capture,
 * like the run, is a function of the seed.  Valid until tw_sim_net_close. */
const uint64_t *tw_sim_net_now(const tw_sim_net *net);

/* The delivery time of the next frame in flight (UINT64_MAX if none). */
uint64_t tw_sim_net_next_event_ns(const tw_sim_net *net);

/* Frames in flight in the network. */
unsigned tw_sim_net_in_flight(const tw_sim_net *net);

/* Buffers free in a port's pool, and its pool size. */
unsigned tw_sim_port_pool_free(const tw_port *p);
unsigned tw_sim_port_pool_size(const tw_port *p);

const tw_sim_stats *tw_sim_net_get_stats(const tw_sim_net *net);

#ifdef __cplusplus
}
#endif
#endif
