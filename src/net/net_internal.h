/* What the files of the stack share (net.c, net_input.c, tcp_in.c,
 * tcp_out.c, tcp_timer.c, tcp.c).  Nobody else may use it. */
#ifndef TW_NET_INTERNAL_H
#define TW_NET_INTERNAL_H

#include <string.h>

#include "tickwire/net.h"
#include "tickwire/net_wire.h"

/* Sequence-number comparisons modulo 2^32 (RFC 793 3.3). */
#define SEQ_LT(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)) < 0)
#define SEQ_LEQ(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)) <= 0)
#define SEQ_GT(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)) > 0)
#define SEQ_GEQ(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)) >= 0)

/* Connection flags (tw_tcp_conn.flags). */
#define TF_ACK_NOW     (1u << 0)  /* send an ACK on this turn */
#define TF_FIN_PENDING (1u << 1)  /* app closed: FIN after the data */
#define TF_FIN_SENT    (1u << 2)  /* FIN has been sent at seq snd_end */
#define TF_ECN         (1u << 3)  /* ECN negotiated */
#define TF_ECE_ECHO    (1u << 4)  /* saw CE: set ECE until peer's CWR */
#define TF_SEND_CWR    (1u << 5)  /* set CWR on the next data segment */
#define TF_NEED_ARP    (1u << 6)  /* waiting for the next hop's MAC */
#define TF_HDR_READY   (1u << 7)  /* hdr template built */
#define TF_PEER_FIN    (1u << 8)  /* peer's FIN received (rcv_nxt counts it) */
#define TF_IN_RECOVERY (1u << 9)  /* fast recovery until snd_una >= recover */
#define TF_WND_UPDATE  (1u << 10) /* window grew: advertise it */
#define TF_SEND_SYN    (1u << 11) /* (re)send SYN or SYN-ACK */
#define TF_PERSIST     (1u << 12) /* persist timer armed */
#define TF_FIN_OOO     (1u << 13) /* peer's FIN seen past a hole, at fin_seq */
#define TF_SACK        (1u << 14) /* SACK offered (SYN_SENT) / negotiated */
#define TF_TS          (1u << 15) /* timestamps offered (SYN_SENT) / negotiated */
#define TF_TS_RECENT   (1u << 16) /* ts_recent holds a value (PAWS armed) */
#define TF_RESCUE_SET  (1u << 17) /* rescue_rxt defined in this recovery */
#define TF_TLP_SENT    (1u << 18) /* a loss probe went out since the last progress */
#define TF_RECOV_RANDOM (1u << 19) /* this recovery is for random loss: cwnd and ssthresh stay */
#define TF_DSACK       (1u << 20) /* dsack holds a duplicate not yet reported */

#define TW_NET_HDR_LEN 54 /* Ethernet + IPv4 + TCP without options */
#define TW_NET_MAX_BURST 64

enum { ARP_FREE = 0, ARP_PENDING, ARP_OK, ARP_STATIC };

typedef struct arp_entry {
    uint32_t ip;
    uint8_t mac[6];
    uint8_t state;
    uint8_t pad_;
    uint64_t req_ns; /* last request sent */
} arp_entry;

struct tw_net {
    tw_port *port;
    tw_net_config cfg; /* with defaults filled in */
    uint8_t mac[6];
    uint16_t ip_id;
    uint16_t timers_deferred; /* polls in a row whose rx burst was full (tw_net_poll) */
    uint16_t next_port;
    uint32_t ms_pad_;
    tw_net_stats stats;
    arp_entry *arp;
    tw_tcp_conn **conns;        /* cfg.max_conns slots */
    tw_tcp_listener **listeners;
    uint8_t *rx_mem, *tx_mem;   /* slot i owns ring i of each */
    uint8_t slot_faulted[4096 / 8]; /* slot i's rings were touched (max_conns <= 4096) */
    tw_pkt *txq;                /* pending transmissions, cfg.tx_burst */
    unsigned txq_n;
    int64_t now_ns;
};

/* net.c */
void tw__net_tx(tw_net *st, tw_pkt *pkt);  /* queue (flushes when full) */
void tw__net_tx_flush(tw_net *st);
int tw__net_alloc(tw_net *st, tw_pkt *pkt); /* 0 or -ENOBUFS */
/* Next-hop MAC for ip: 0 and mac set, or -EAGAIN after sending (or
 * rate-limiting) an ARP request. */
int tw__net_resolve(tw_net *st, uint32_t ip, uint8_t mac[6], int64_t now_ns);
void tw__net_event(tw_tcp_conn *c, unsigned ev);
/* Next-hop MAC for ip from the ARP table only (no request): 0 or -ENOENT. */
int tw__net_arp_lookup(tw_net *st, uint32_t ip, uint8_t mac[6]);

/* net_input.c */
void tw__net_input(tw_net *st, tw_pkt *pkt, int64_t now_ns);
void tw__net_arp_input(tw_net *st, const tw_arp_hdr *a, int64_t now_ns);

/* tcp_in.c */
void tw__tcp_input(tw_net *st, const tw_net_parsed *pp, int64_t now_ns);

/* tcp_out.c */
void tw__tcp_output(tw_tcp_conn *c, int64_t now_ns);
/* Sends one segment: data [seq, seq+len) from the tx ring, flags. */
int tw__tcp_send_seg(tw_tcp_conn *c, uint32_t seq, uint32_t len, uint8_t flags,
                     int64_t now_ns);
void tw__tcp_send_ack(tw_tcp_conn *c, int64_t now_ns);
/* RST in reply to a segment that has no connection (RFC 793 p.36). */
void tw__tcp_send_rst_reply(tw_net *st, const tw_net_parsed *pp, int64_t now_ns);
void tw__tcp_build_template(tw_tcp_conn *c);
uint32_t tw__tcp_rcv_window(const tw_tcp_conn *c);
void tw__tcp_tokens_refill(tw_tcp_conn *c, int64_t now_ns);
/* Our TSval for now_ns (ms clock plus the connection's offset). */
static inline uint32_t tw__tcp_tsval(const tw_tcp_conn *c, int64_t now_ns)
{
    return (uint32_t)(now_ns / 1000000u) + c->ts_off;
}
uint64_t tw__tcp_bucket_cap(const tw_tcp_conn *c);

/* tcp_sack.c */
/* Takes the peer's SACK blocks into c->sb: each is checked against
 * [snd_una, snd_max) (a block reversed, empty, wholly below snd_una or
 * reaching past snd_max is refused and counted in *bad; a first block
 * that is a D-SACK is skipped, not refused); returns the number of
 * blocks taken. */
unsigned tw__sack_update(tw_tcp_sackboard *sb, uint32_t snd_una, uint32_t snd_max,
                         const uint32_t (*blk)[2], unsigned n, unsigned *bad);
/* RFC 2883 4: 1 when the first of n blocks reports a duplicate (a
 * D-SACK): it lies below the cumulative ACK una, or inside the second
 * block. */
int tw__sack_is_dsack(const uint32_t (*blk)[2], unsigned n, uint32_t una);
/* Drops everything below una from the scoreboard (a cumulative ACK). */
void tw__sack_advance(tw_tcp_sackboard *sb, uint32_t una);
/* Bytes the board holds as SACKed (the sum of its ranges). */
uint32_t tw__sack_bytes(const tw_tcp_sackboard *sb);
/* RFC 6675 IsLost as a boundary: every unSACKed byte below the returned
 * sequence is lost (DupThresh 3 blocks, or more than 2 * mss bytes,
 * SACKed above it); una when none is. */
uint32_t tw__sack_lost_end(const tw_tcp_sackboard *sb, uint32_t una, uint32_t mss);
/* RFC 6675 SetPipe: the bytes in flight. */
uint32_t tw__sack_pipe(const tw_tcp_sackboard *sb, uint32_t una, uint32_t snd_max,
                       uint32_t high_rxt, uint32_t mss);
/* The first unSACKed byte at or above from and below to; *len is the run
 * of unSACKed bytes from it (capped at mss).  Returns 0, or -1 if none. */
int tw__sack_next_hole(const tw_tcp_sackboard *sb, uint32_t from, uint32_t to,
                       uint32_t mss, uint32_t *seq, uint32_t *len);
/* 1 when seq is inside a SACKed block (then *end is the block's end). */
int tw__sack_covered(const tw_tcp_sackboard *sb, uint32_t seq, uint32_t *end);
/* Receiver: notes an out-of-order arrival at seq (most recent first). */
void tw__sack_note_arrival(tw_tcp_conn *c, uint32_t seq);
/* Receiver: a segment's bytes [s, e) had all arrived before (below
 * rcv_nxt or inside a held range): the next ACK reports them first, as a
 * D-SACK (RFC 2883), once. */
void tw__sack_note_dup(tw_tcp_conn *c, uint32_t s, uint32_t e);
/* 1 when [s, e) lies inside one held out-of-order range. */
int tw__sack_held(const tw_tcp_conn *c, uint32_t s, uint32_t e);
/* Receiver: writes up to max SACK blocks into blk and returns their
 * number: a pending D-SACK first (then the held range that holds it, if
 * one does), then c's out-of-order ranges, most recent first. */
unsigned tw__sack_blocks(const tw_tcp_conn *c, uint32_t (*blk)[2], unsigned max);
/* Sender, in SACK loss recovery: RFC 6675 NextSeg and the rescue
 * retransmission, while the congestion window has room.  Returns 1 when
 * it sent what the window allows (the normal send loop is skipped). */
int tw__sack_output(tw_tcp_conn *c, int64_t now_ns);
/* The loss probe (tcp_timer.c runs it when tlp_at_ns is due): outside
 * recovery, one new segment if the window allows, else the last one sent
 * again, so that the peer's SACK shows what a lost tail left out; in
 * recovery, the first hole again (its retransmission was lost).  Sets
 * TF_TLP_SENT: one probe until the next cumulative ACK. */
void tw__sack_probe(tw_tcp_conn *c, int64_t now_ns);
/* In SACK recovery: resends the first hole again when the peer SACKed a
 * segment sent after its last retransmission (that one was lost). */
void tw__sack_lost_rxt(tw_tcp_conn *c, int64_t now_ns);
/* Arms the loss probe's timer (tcp_timer.c; tw__tcp_arm_rto does too):
 * 2 SRTT (at least 1 ms, more with one segment out) doubled per probe
 * already sent, before the RTO, at most three since the last progress. */
void tw__tcp_arm_tlp(tw_tcp_conn *c, int64_t now_ns);

/* tcp_timer.c */
void tw__tcp_timers(tw_tcp_conn *c, int64_t now_ns);
int64_t tw__tcp_next_timer_ns(const tw_tcp_conn *c);
void tw__tcp_rtt_sample(tw_tcp_conn *c, uint64_t rtt_ns);
/* The loss rule's recent RTT (tcp_in.c): tw__tcp_rs_sent notes a segment
 * sent (new data at snd_max is timed, a retransmission voids what it
 * overlaps); tw__tcp_rs_acked takes the samples an ACK gives (cumulative
 * up to ack, and what the scoreboard now covers); tw__tcp_rtt_recent is
 * the least sample of the last two windows of one SRTT, 0 when none
 * is that recent. */
void tw__tcp_rs_sent(tw_tcp_conn *c, uint32_t seq, uint32_t len, int64_t now_ns);
void tw__tcp_rs_acked(tw_tcp_conn *c, uint32_t ack, int sacked, int64_t now_ns);
uint64_t tw__tcp_rtt_recent(const tw_tcp_conn *c, int64_t now_ns);
void tw__tcp_arm_rto(tw_tcp_conn *c, int64_t now_ns);

/* tcp.c */
void tw__tcp_set_closed(tw_tcp_conn *c, unsigned ev);
uint32_t tw__tcp_isn(const tw_net *st, uint32_t lip, uint16_t lport,
                     uint32_t rip, uint16_t rport, int64_t now_ns);
int tw__tcp_slot_alloc(tw_net *st, tw_tcp_conn *c);
tw_tcp_conn *tw__tcp_lookup(tw_net *st, uint32_t rip, uint16_t rport,
                            uint16_t lport);
/* What active and passive open share: resets the handle c (keeping its
 * callback), takes a table slot and sets up the send side and the
 * timers' start for the 4-tuple.  The caller then sets the state, the
 * receive side and (once the MSS is final) tw__tcp_conn_init_rate.
 * Returns 0 or -EBUSY (no free slot). */
int tw__tcp_conn_open(tw_net *st, tw_tcp_conn *c, uint32_t rip, uint16_t rport,
                      uint16_t lport, int64_t now_ns);
/* Fills the token bucket for the configured maximum rate (its size
 * depends on the MSS, so it comes after the MSS is negotiated). */
void tw__tcp_conn_init_rate(tw_tcp_conn *c, int64_t now_ns);
/* 1 when c holds a slot of st's table (memory the stack is using). */
int tw__tcp_conn_in_use(tw_net *st, const tw_tcp_conn *c);

static inline uint32_t tcp_data_una(const tw_tcp_conn *c)
{
    /* snd_una can pass snd_end by one when our FIN is ACKed. */
    return SEQ_GT(c->snd_una, c->snd_end) ? c->snd_end : c->snd_una;
}

#endif
