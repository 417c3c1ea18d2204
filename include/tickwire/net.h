/* The userspace TCP/IP stack (netstack.md): Ethernet, ARP, IPv4, ICMP echo
 * and TCP over one tw_port, driven by a busy-poll loop.
 *
 * Rules the whole API follows:
 * - No allocation after tw_net_open: every buffer (per-connection receive
 *   and retransmit rings, ARP table, connection table) is sized from
 *   tw_net_config and allocated there, once.
 * - No clock reads: every call that can act on time takes now_ns (any
 *   monotonic nanosecond clock chosen by the caller; the simulation passes
 *   virtual time).
 * - Connection handles (tw_tcp_conn, tw_tcp_listener) live in caller memory
 *   (like libuv's uv_tcp_t).  Their fields are private to the stack.  The
 *   memory must stay valid until the connection is back in TW_TCP_CLOSED
 *   with tw_tcp_conn_release() called (or tw_net_close).
 * - Addresses and ports are in host byte order in this API.
 *
 * Typical loop:
 *     tw_net_open(&st, port, &cfg, &err);
 *     tw_tcp_connect(st, &conn, dst_ip, 443, 0, now_ns);
 *     for (;;) {
 *         tw_net_poll(st, now_ns = tw_clock_now_ns()); // rx, timers, tx (clock.h)
 *         unsigned ev = tw_tcp_events(&conn);     // or a callback
 *         while (tw_tcp_recv_peek(&conn, &p, &n) > 0) { use(p, n); tw_tcp_recv_consume(&conn, n); }
 *         tw_tcp_send(&conn, msg, len, now_ns);
 *     }
 */
#ifndef TICKWIRE_NET_H
#define TICKWIRE_NET_H

#include "tickwire/common.h"
#include "tickwire/port.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tw_net tw_net;
typedef struct tw_tcp_conn tw_tcp_conn;
typedef struct tw_tcp_listener tw_tcp_listener;

/* ---- configuration ----------------------------------------------------- */

typedef struct tw_net_config {
    uint32_t ip;         /* our IPv4 address (host order); required */
    uint32_t netmask;    /* e.g. 0xffffff00; 0 = /24 */
    uint32_t gateway;    /* next hop for off-subnet peers; 0 = none */
    uint8_t mac[6];      /* all zero = the port's MAC */
    uint16_t mss;        /* MSS we announce and cap at; 0 = port mtu - 40 */
    unsigned max_conns;  /* connection table size; 0 = 16 */
    unsigned max_listeners;  /* 0 = 4 */
    unsigned rx_buf_bytes;   /* per-connection receive ring, power of two; 0 = 256 KiB */
    unsigned tx_buf_bytes;   /* per-connection retransmit ring, power of two; 0 = 256 KiB */
    unsigned arp_entries;    /* 0 = 16 */
    unsigned tx_burst;       /* packets allocated/sent per tx burst; 0 = 32 */
    /* RFC 6528 secret for initial sequence numbers (ISN = hash(4-tuple,
     * secret) + now/4us); it also seeds the first ephemeral port.  Both
     * zero = filled by getrandom() in tw_net_open; tests set it for
     * reproducible runs. */
    uint64_t isn_secret[2];
    /* Timers; 0 selects the default in brackets. */
    uint64_t rto_init_ns;        /* [1 s, RFC 6298 2.1] */
    uint64_t rto_min_ns;         /* [200 ms] */
    uint64_t rto_max_ns;         /* [60 s] */
    uint64_t delack_ns;          /* bound on a delayed ACK [1 ms] */
    uint64_t keepalive_idle_ns;  /* idle before first probe [0 = keepalive off] */
    uint64_t keepalive_intvl_ns; /* between probes [75 s] */
    unsigned keepalive_probes;   /* unanswered probes before reset [9] */
    unsigned max_retries;        /* RTOs in a row before reset [12] */
    uint64_t time_wait_ns;       /* TIME_WAIT length [1 s: a few sessions, known peers] */
    /* ECN and rate control.  ecn: 1 = negotiate ECN on connections we
     * open and accept it on those we accept.  The token bucket starts at
     * rate_max_Bps; each congestion event (ECE, at most once per RTT)
     * halves it (floor rate_min_Bps); every RTT without one adds
     * rate_add_Bps.  0 = defaults [1.25e9 B/s, 1.25e6 B/s, rate_max/64]. */
    int ecn;
    uint64_t rate_max_Bps;
    uint64_t rate_min_Bps;
    uint64_t rate_add_Bps;
    /* 1 = trust/offload checksums when the port has TW_PORT_CAP_*_CKSUM. */
    int use_offload;
    /* SACK recovery's decrease: a loss found while the recent RTT (the
     * least sample of the last two SRTT) is at most loss_rtt_pct percent
     * of the connection's least RTT (no queue built up on the path: a
     * random loss, not congestion) keeps the window; otherwise ssthresh
     * = 0.7 x FlightSize.  0 = the default [200]; 1..99: every loss
     * decreases (no sample is below the least). */
    unsigned loss_rtt_pct;
} tw_net_config;

/* Fills cfg with zeros (= defaults) and the given address. */
void tw_net_config_init(tw_net_config *cfg, uint32_t ip);

/* Parses dotted-quad "a.b.c.d" into *ip (host order); returns 0 or
 * -EINVAL. */
int tw_net_parse_ip4(const char *s, uint32_t *ip);

/* Formats ip (host order) as dotted quad into buf (>= 16 bytes); returns buf. */
char *tw_net_format_ip4(uint32_t ip, char *buf);

/* ---- stack ------------------------------------------------------------- */

/* Opens a stack over port (which the stack uses but does not own: close
 * the port after tw_net_close).  All memory is allocated here.  Returns 0
 * or a negative code with err naming the bad config field. */
int tw_net_open(tw_net **out, tw_port *port, const tw_net_config *cfg,
                tw_error *err);

/* Frees the stack.  Connections still open are dropped without sending
 * anything; their handles become invalid. */
void tw_net_close(tw_net *st);

/* One turn of the loop: receives and processes up to a burst of frames,
 * runs due timers (retransmit, delayed ACK, persist, keepalive,
 * TIME_WAIT), and transmits what is ready.  Returns the number of frames
 * received plus sent (0 = idle; a yielding loop may sleep on rx_fd). */
unsigned tw_net_poll(tw_net *st, int64_t now_ns);

/* The earliest time at which a timer is due (INT64_MAX if none; 0 when
 * an ACK or window update is waiting for the next poll): the simulation
 * advances virtual time to it. */
int64_t tw_net_next_timer_ns(const tw_net *st);

/* Adds a static ARP entry (never expires, never overwritten by replies).
 * Returns 0, or -ENOSPC when the table has no entry left to give. */
int tw_net_arp_add(tw_net *st, uint32_t ip, const uint8_t mac[6]);

/* Counters (monotonic since open). */
typedef struct tw_net_stats {
    /* rx, per layer.  A refused frame is counted once, under the first
     * reason that refused it.  Two kinds: frames that are not for us
     * (legitimate on a shared wire: other hosts' traffic, multicast, IPv6,
     * ARP for other addresses) and frames that are broken (truncated,
     * malformed, failed a checksum: corruption, or a bug).  Every field
     * named *_bad or *_cksum_bad is of the second kind. */
    uint64_t rx_frames, rx_bytes;
    uint64_t rx_eth_bad;          /* runt: shorter than an Ethernet header */
    /* Not for us, by reason; rx_not_for_us is their sum. */
    uint64_t rx_not_for_us;       /* rx_mac_other + rx_mcast + rx_eth_other + rx_ip_other */
    uint64_t rx_mac_other;        /* unicast to another MAC */
    uint64_t rx_mcast;            /* multicast (a group never joined; not broadcast) */
    uint64_t rx_eth_other;        /* ethertype neither IPv4 nor ARP (IPv6, VLAN, LLDP...) */
    uint64_t rx_ip_other;         /* IPv4 to another address (or a broadcast address) */
    /* Our own source MAC on a frame not addressed to us: one of our
     * transmissions coming back (a port that loops tx into rx), or another
     * station using our MAC.  Refused, never answered; not in
     * rx_not_for_us. */
    uint64_t rx_own_src;
    uint64_t rx_arp, rx_arp_bad, arp_replies_sent, arp_requests_sent;
    uint64_t arp_resolved, arp_table_full;
    uint64_t rx_ip_bad;           /* version/IHL/length/truncation */
    uint64_t rx_ip_src_bad;       /* source ours, zero, broadcast or multicast (spoofed) */
    uint64_t rx_ip_cksum_bad;
    uint64_t rx_ip_frag;          /* fragments: counted and dropped */
    uint64_t rx_ip_proto_other;   /* neither ICMP nor TCP */
    uint64_t rx_ip_options;       /* headers with options (skipped) */
    uint64_t rx_icmp, rx_icmp_bad, icmp_echo_replies;
    uint64_t rx_tcp, rx_tcp_bad;  /* bad header length/offset/flags */
    uint64_t rx_tcp_cksum_bad;
    uint64_t rx_tcp_no_conn;      /* no connection or listener: RST sent */
    uint64_t rx_tcp_out_of_window;/* failed the window check */
    uint64_t rx_tcp_ooo;          /* segments held out of order */
    uint64_t rx_tcp_ooo_drop;     /* out of order, no room in the OOO list */
    uint64_t rx_tcp_dup;          /* wholly old data (duplicate) */
    uint64_t rx_tcp_bytes;        /* payload bytes delivered in order */
    uint64_t challenge_acks;      /* RFC 5961 */
    uint64_t challenge_acks_limited; /* not sent: over 100/s on the connection */
    uint64_t rx_rst, rx_rst_ignored;
    uint64_t listen_overflow;     /* SYN refused: no free slot/accept said no */
    /* tx */
    uint64_t tx_frames, tx_bytes, tx_fail; /* tx_fail: port refused or no buffer */
    uint64_t tx_segs, tx_data_bytes, tx_acks, tx_rst;
    uint64_t retransmits, rto_fires, fast_retransmits;
    uint64_t zero_window_probes, keepalive_probes, delayed_acks;
    uint64_t ecn_ce_rx;           /* CE-marked segments received */
    uint64_t ecn_ece_rx;          /* segments with ECE received */
    uint64_t ecn_rate_cuts;       /* token bucket halvings */
    uint64_t cwr_sent;
    uint64_t rate_limited;        /* times the token bucket held data back */
    uint64_t conns_opened, conns_accepted, conns_reset, conns_timeout;
    /* SACK and timestamps (RFC 2018, 6675, 7323) */
    uint64_t rx_paws_drop;        /* PAWS: TSval older than TS.Recent (ACKed, dropped) */
    uint64_t rx_ts_missing;       /* no timestamp on a timestamped connection: dropped */
    uint64_t rx_sack_blocks;      /* SACK blocks taken into a scoreboard */
    uint64_t rx_sack_bad;         /* blocks refused: reversed, empty, past snd_max, below snd_una */
    uint64_t tx_sack_blocks;      /* SACK blocks sent */
    uint64_t sack_recoveries;     /* RFC 6675 loss recovery episodes */
    uint64_t sack_retransmits;    /* segments resent by NextSeg (in retransmits too) */
    uint64_t rescue_retransmits;  /* RFC 6675 rescue retransmissions */
    uint64_t ts_rtt_samples;      /* RTT samples taken from echoed timestamps */
    uint64_t tlp_probes;          /* loss probes sent (2 SRTT without progress, SACK only) */
    uint64_t sack_random_losses;  /* SACK recoveries that kept the window (loss_rtt_pct) */
    uint64_t lost_retransmits;    /* retransmissions found lost by a later SACK, resent */
    uint64_t tx_dsack;            /* D-SACK blocks sent: a duplicate segment reported (RFC 2883) */
    uint64_t rx_dsack;            /* D-SACK blocks received: a segment arrived twice */
} tw_net_stats;

const tw_net_stats *tw_net_get_stats(const tw_net *st);

/* Frames refused as broken (runt, malformed or truncated header, bad
 * checksum, at any layer): the sum of the *_bad and *_cksum_bad rx
 * counters of s.  On a clean link this stays 0; frames that are merely
 * not for us (rx_not_for_us) and rx_own_src are not in it. */
uint64_t tw_net_stats_rx_broken(const tw_net_stats *s);

/* Writes one line of s's refused frames, each reason with its count
 * ("broken N (eth .., ..), spoofed source N, own frames back N; not for
 * us N (other mac .., ..)"), NUL-terminated; returns its length
 * (truncated to cap - 1). */
size_t tw_net_stats_rx_refused(const tw_net_stats *s, char *buf, size_t cap);

/* ---- TCP --------------------------------------------------------------- */

typedef enum tw_tcp_state {
    TW_TCP_CLOSED = 0,
    TW_TCP_LISTEN,
    TW_TCP_SYN_SENT,
    TW_TCP_SYN_RCVD,
    TW_TCP_ESTABLISHED,
    TW_TCP_FIN_WAIT_1,
    TW_TCP_FIN_WAIT_2,
    TW_TCP_CLOSING,
    TW_TCP_TIME_WAIT,
    TW_TCP_CLOSE_WAIT,
    TW_TCP_LAST_ACK,
} tw_tcp_state;

const char *tw_tcp_state_name(tw_tcp_state s);

/* Events, accumulated on the connection until tw_tcp_events() reads them,
 * and passed to the callback (if set) as they happen. */
#define TW_TCP_EV_CONNECTED (1u << 0) /* reached ESTABLISHED */
#define TW_TCP_EV_READABLE  (1u << 1) /* new in-order bytes */
#define TW_TCP_EV_WRITABLE  (1u << 2) /* retransmit ring space freed by ACKs */
#define TW_TCP_EV_PEER_FIN  (1u << 3) /* peer closed its side (no more bytes) */
#define TW_TCP_EV_CLOSED    (1u << 4) /* back to CLOSED after a graceful close */
#define TW_TCP_EV_RESET     (1u << 5) /* reset by the peer, or refused */
#define TW_TCP_EV_TIMEOUT   (1u << 6) /* too many retransmissions / keepalives */
#define TW_TCP_EV_ECN_CUT   (1u << 7) /* send rate halved after ECE */

typedef void (*tw_tcp_event_cb)(tw_tcp_conn *c, unsigned events, void *user);

/* Per-connection options (all zero = the defaults: SACK and timestamps
 * offered on connections we open and accepted on those we accept).  Set
 * with tw_tcp_set_cfg before tw_tcp_connect, or in the accept callback
 * before returning the handle; they survive the handle's reuse. */
typedef struct tw_tcp_cfg {
    uint8_t no_sack;       /* 1 = neither offer nor accept SACK (RFC 2018) */
    uint8_t no_timestamps; /* 1 = neither offer nor accept timestamps (RFC 7323) */
    uint8_t pad_[6];
} tw_tcp_cfg;

/* The SACK scoreboard of the sender (RFC 6675): the peer's SACKed ranges
 * above snd_una, sorted and disjoint, at most TW_TCP_SACK_BLOCKS of them
 * (when full, the highest is forgotten: it only costs a resend). */
#define TW_TCP_SACK_BLOCKS 8
typedef struct tw_tcp_sackboard {
    uint32_t n;
    uint32_t blk[TW_TCP_SACK_BLOCKS][2]; /* [start, end) */
} tw_tcp_sackboard;

/* Called for a SYN to a listening port: return a zeroed (or released)
 * tw_tcp_conn from caller memory to accept, or NULL to refuse (RST). */
typedef tw_tcp_conn *(*tw_tcp_accept_cb)(tw_tcp_listener *l, uint32_t peer_ip,
                                         uint16_t peer_port, void *user);

/* The private layout of a connection.  Embedded in caller memory; every
 * field is the stack's.  Sequence arithmetic is modulo 2^32. */
struct tw_tcp_conn {
    tw_net *st;
    tw_tcp_event_cb cb;
    void *user;
    uint32_t state;           /* tw_tcp_state */
    unsigned events;          /* pending TW_TCP_EV_* */
    int slot;                 /* index in the stack's table, -1 when free */
    uint32_t flags;           /* internal TF_* */
    /* 4-tuple, host order */
    uint32_t local_ip, remote_ip;
    uint16_t local_port, remote_port;
    uint8_t remote_mac[6];
    uint8_t snd_wscale, rcv_wscale;
    uint16_t mss;             /* effective send MSS */
    /* send side (RFC 793 names) */
    uint32_t iss, snd_una, snd_nxt, snd_max, snd_wl1, snd_wl2, snd_wnd;
    uint32_t snd_end;         /* seq after the last byte the app wrote */
    uint32_t recover;         /* fast-recovery point (NewReno-like) */
    uint32_t cwnd, ssthresh;
    uint32_t dupacks;
    uint8_t *tx_buf;          /* retransmit ring, tx_size bytes */
    uint32_t tx_size;
    /* receive side */
    uint32_t irs, rcv_nxt, rcv_adv; /* rcv_adv: right edge last advertised */
    uint8_t *rx_buf;          /* receive ring, rx_size bytes */
    uint32_t rx_size;
    uint32_t rx_head;         /* seq of the first unconsumed byte */
    uint32_t rx_tail;         /* seq after the last in-order data byte */
    uint32_t unacked_segs;    /* in-order segments received since our last ACK */
    uint32_t fin_seq;         /* where the peer's FIN sits when it came early */
    uint32_t ooo_n;           /* out-of-order intervals held */
    uint32_t ooo[32][2];      /* [start, end) seq, sorted, disjoint; 32 holes
                               * cover a reordering peer filling a 256 KiB
                               * window (netstack.md: bounded OOO buffer) */
    /* RTT and timers (ns; 0 = not armed) */
    uint64_t srtt_ns, rttvar_ns, rto_ns;
    uint64_t rtt_min_ns, rtt_last_ns; /* timed samples only (ns; ms echoes are too coarse) */
    uint32_t rtt_seq;         /* seq being timed (Karn: only new data) */
    /* The loss rule's recent RTT: send times of up to 16 first
     * transmissions in flight, each taken by the SACK or the cumulative
     * ACK that first covers it and dropped when a retransmission overlaps
     * it (Karn); the least sample of this and of the last window of one
     * SRTT. */
    uint32_t rs_end[16];      /* seq after the timed segment, oldest first */
    int64_t rs_at[16];        /* its send time */
    uint32_t rs_n;
    uint64_t rtt_win_ns[2];   /* least sample: this window, the last */
    int64_t rtt_win_at_ns;    /* this window's start; 0 = no sample yet */
    int64_t rtt_start_ns;    /* 0 = no sample in progress */
    int64_t rto_at_ns, delack_at_ns, persist_at_ns, keepalive_at_ns;
    int64_t timewait_at_ns, last_rx_ns;
    int64_t pace_at_ns;       /* token bucket refilled enough to send */
    int64_t tlp_at_ns;        /* loss probe due (SACK only; with rto_at_ns armed) */
    unsigned retries, ka_probes_sent;
    uint32_t persist_backoff;
    /* ECN / token bucket */
    uint64_t rate_Bps, tokens;
    int64_t token_at_ns;
    int64_t rate_epoch_ns;    /* start of the current RTT for cut/increase */
    uint32_t ecn_cut_seq;     /* no second cut until snd_una passes this */
    uint32_t challenge_n;     /* challenge ACKs sent since challenge_at_ns */
    int64_t challenge_at_ns;  /* start of the current 1 s rate-limit window */
    /* Options (tcp_sack.c, tcp_in.c).  Timestamps: TSval = now in ms +
     * ts_off; ts_recent is the peer's last TSval taken (RFC 7323 4.3),
     * ts_recent_ns when it was taken (the 24-day PAWS rule). */
    tw_tcp_cfg cfg;
    uint32_t ts_off, ts_recent;
    int64_t ts_recent_ns;
    uint32_t last_ack_sent;   /* Last.ACK.sent of RFC 7323 */
    uint16_t mss_opt;         /* the limit on TCP options + payload per segment */
    uint16_t tlp_n;           /* loss probes since the last cumulative ACK */
    uint32_t sack_recent_n;   /* receiver: seqs of the latest OOO arrivals, newest first */
    uint32_t sack_recent[4];
    uint32_t dsack[2];        /* receiver: the latest duplicate, [start, end); with TF_DSACK */
    tw_tcp_sackboard sb;      /* sender: what the peer SACKed */
    uint32_t high_rxt;        /* RFC 6675 HighRxt (exclusive end of the last resend) */
    uint32_t rescue_rxt;      /* RFC 6675 RescueRxt; valid with TF_RESCUE_SET */
    /* The latest retransmissions in recovery: [seq, snd_max when sent];
     * a SACK for data first sent after one, with its bytes still missing,
     * says it was lost again (after RFC 8985's RACK, by sequence). */
    uint32_t rxt_log[8][2];
    uint32_t rxt_log_n;       /* entries written (the ring wraps) */
    /* prebuilt Ethernet+IPv4+TCP header (54 bytes, no options) */
    uint8_t hdr[56];
    uint32_t hdr_csum_part;   /* pseudo-header + constant fields partial sum */
};

struct tw_tcp_listener {
    tw_net *st;
    tw_tcp_accept_cb accept;
    void *user;
    uint16_t port;
    int slot;
};

/* Active open to ip:port.  local_port 0 picks an ephemeral port.  c is
 * caller memory (zeroed or released); the SYN goes out on the next poll
 * (after ARP, when needed).  Returns 0, -EBUSY (no table slot or no
 * buffer ring), -EADDRINUSE, or -EINVAL. */
int tw_tcp_connect(tw_net *st, tw_tcp_conn *c, uint32_t ip, uint16_t port,
                   uint16_t local_port, int64_t now_ns);

/* Passive open on port; l is caller memory, valid until tw_tcp_unlisten.
 * Accepted connections come through accept_cb.  Returns 0, -EINVAL (port
 * 0 or no callback), -EADDRINUSE, or -EBUSY (no listener slot left). */
int tw_tcp_listen(tw_net *st, tw_tcp_listener *l, uint16_t port,
                  tw_tcp_accept_cb accept_cb, void *user);
void tw_tcp_unlisten(tw_tcp_listener *l);

/* Sets the per-connection options (cfg NULL = defaults).  Takes effect
 * at the next open of c (tw_tcp_connect, or the accept callback's return). */
void tw_tcp_set_cfg(tw_tcp_conn *c, const tw_tcp_cfg *cfg);

/* What the handshake agreed: 1 when SACK / timestamps are in use on c. */
int tw_tcp_sack_on(const tw_tcp_conn *c);
int tw_tcp_timestamps_on(const tw_tcp_conn *c);

/* Sets the event callback (may be NULL: poll with tw_tcp_events). */
void tw_tcp_set_callback(tw_tcp_conn *c, tw_tcp_event_cb cb, void *user);

/* Returns and clears the pending events. */
unsigned tw_tcp_events(tw_tcp_conn *c);

static inline tw_tcp_state tw_tcp_get_state(const tw_tcp_conn *c)
{
    return (tw_tcp_state)c->state;
}

/* Receive: *p, *len are set to a view of the first contiguous run of
 * in-order bytes in the receive ring (a later call after consume returns
 * the part that wrapped).  Returns *len (0 = nothing to read).  The bytes
 * stay valid until tw_tcp_recv_consume. */
size_t tw_tcp_recv_peek(tw_tcp_conn *c, const uint8_t **p, size_t *len);

/* Releases n bytes from the front of the receive ring (n <= readable);
 * opens the window (a window update is sent on the next poll when it grew
 * by at least 2*MSS or half the ring). */
void tw_tcp_recv_consume(tw_tcp_conn *c, size_t n);

/* Bytes readable now. */
size_t tw_tcp_readable(const tw_tcp_conn *c);

/* Send by copy: copies up to len bytes of buf (the caller's; not kept)
 * into the retransmit ring and transmits at once as far as window and rate
 * allow (no Nagle; each call ends with PSH).  Returns a count or an error:
 * the number of bytes taken, 0 <= n <= len (0 when the ring is full; the
 * rest is the caller's to send again after TW_TCP_EV_WRITABLE), or
 * -ENOTCONN (CLOSED or LISTEN) / -EPIPE (closing, or after tw_tcp_close). */
long tw_tcp_send(tw_tcp_conn *c, const void *buf, size_t len, int64_t now_ns);

/* Send in place: *p is set to free space in the retransmit ring (contiguous
 * up to its wrap point); returns the room (0 = full).  Write the message
 * there and call tw_tcp_send_commit with the bytes written.  Headers come
 * from the connection's template; only seq/ack/len/checksum are written
 * per packet. */
size_t tw_tcp_send_reserve(tw_tcp_conn *c, uint8_t **p);
/* Returns 0, the errors of tw_tcp_send, or -EINVAL when n is more than the
 * ring has room for. */
int tw_tcp_send_commit(tw_tcp_conn *c, size_t n, int64_t now_ns);

/* Free space in the retransmit ring, and bytes sent but not yet ACKed. */
size_t tw_tcp_writable(const tw_tcp_conn *c);
size_t tw_tcp_unacked(const tw_tcp_conn *c);

/* Graceful close: a FIN follows the queued data.  Returns 0 (also when
 * already closing), or -ENOTCONN on a CLOSED or LISTEN connection. */
int tw_tcp_close(tw_tcp_conn *c, int64_t now_ns);

/* Abort: sends RST (when synchronised) and goes to CLOSED at once. */
void tw_tcp_abort(tw_tcp_conn *c, int64_t now_ns);

/* Once a connection is CLOSED (by close/abort/reset/timeout), returns its
 * table slot and rings to the stack; the memory of c may then be reused.
 * Calling it on a connection not CLOSED returns -EBUSY. */
int tw_tcp_conn_release(tw_tcp_conn *c);

/* The current token-bucket send rate in bytes/s (halved by ECN congestion
 * events, recovering additively), for tests and tools. */
uint64_t tw_tcp_rate_Bps(const tw_tcp_conn *c);

/* ---- checksums (exported for ports and tests) --------------------------- */

/* 16-bit one's-complement sum of len bytes added to sum (not folded,
 * not complemented). */
uint64_t tw_net_csum_add(uint64_t sum, const void *data, size_t len);
/* Folds to 16 bits and complements: the value for a checksum field
 * (network byte order when stored with memcpy from a big-endian view). */
uint16_t tw_net_csum_fold(uint64_t sum);

#ifdef __cplusplus
}
#endif
#endif
