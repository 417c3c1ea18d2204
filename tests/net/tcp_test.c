/* Unit tests of the TCP state machine: one scenario per transition or
 * rule, each driving the stack with hand-built segments from a scripted
 * peer (rawpeer.h) and checking the state, the events and the exact
 * segments the stack answers with.  Time is virtual. */
#include "rawpeer.h"

#define PEER_PORT 40000
#define US_PORT 80
#define PEER_ISN 1000u

static tw_tcp_conn g_conn;
static tw_tcp_conn *acc(tw_tcp_listener *l, uint32_t ip, uint16_t port, void *u)
{
    (void)l; (void)ip; (void)port; (void)u;
    return &g_conn;
}

static const uint8_t syn_opts[8] = {2, 4, 0x05, 0xb4, 1, 3, 3, 0}; /* MSS 1460, WS 0 */

/* Passive open up to ESTABLISHED; returns the stack's ISS. */
static uint32_t establish_passive(rawpeer *r, tw_tcp_listener *l, uint8_t syn_extra)
{
    memset(&g_conn, 0, sizeof(g_conn));
    CHECKF(tw_tcp_listen(r->st, l, US_PORT, acc, NULL) == 0, "listen");
    uint8_t f[2048];
    uint32_t n = rp_build(f, PEER_PORT, US_PORT, PEER_ISN, 0, TW_TCP_SYN | syn_extra, 65535,
                          NULL, 0, syn_opts, 8, 0, 0);
    rp_send_raw(r, f, n);
    CHECKF(g_conn.state == TW_TCP_SYN_RCVD, "SYN -> SYN_RCVD, got %s",
           tw_tcp_state_name(g_conn.state));
    seg s;
    CHECKF(rp_seg(r, &s), "SYN-ACK sent");
    CHECKF(s.flags == (TW_TCP_SYN | TW_TCP_ACK | (syn_extra ? TW_TCP_ECE : 0)),
           "SYN-ACK flags %02x", s.flags);
    CHECKF(s.ack == PEER_ISN + 1, "SYN-ACK acks %u", s.ack);
    CHECKF(s.mss == 1460 && s.ws >= 0, "SYN-ACK options mss %u ws %d", s.mss, s.ws);
    rp_tcp(r, PEER_PORT, US_PORT, PEER_ISN + 1, s.seq + 1, TW_TCP_ACK, 65535, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_ESTABLISHED, "ACK -> ESTABLISHED, got %s",
           tw_tcp_state_name(g_conn.state));
    CHECKF(tw_tcp_events(&g_conn) & TW_TCP_EV_CONNECTED, "CONNECTED event");
    return s.seq;
}

static void t_passive_open_and_data(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    uint32_t iss = establish_passive(&r, &l, 0);
    /* Data with PSH: delivered and ACKed at once. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 1, TW_TCP_ACK | TW_TCP_PSH, 65535,
           "hello", 5);
    const uint8_t *p;
    size_t n;
    CHECKF(tw_tcp_recv_peek(&g_conn, &p, &n) == 5 && !memcmp(p, "hello", 5), "read hello");
    tw_tcp_recv_consume(&g_conn, 5);
    seg s;
    /* PSH: the ACK is due at once, sent on the next poll turn. */
    CHECKF(tw_net_next_timer_ns(r.st) <= (int64_t)r.now + 1, "PSH ACK due now");
    rp_run(&r, 1);
    CHECKF(rp_seg(&r, &s) && s.ack == PEER_ISN + 6 && s.flags == TW_TCP_ACK, "PSH acked now");
    /* Without PSH: ACK delayed, but by no more than delack_ns. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 6, iss + 1, TW_TCP_ACK, 65535, "abc", 3);
    CHECKF(!rp_seg(&r, &s), "no immediate ACK without PSH");
    rp_run(&r, 999999);
    CHECKF(!rp_seg(&r, &s), "no ACK before delack_ns");
    rp_run(&r, 1);
    CHECKF(rp_seg(&r, &s) && s.ack == PEER_ISN + 9, "delayed ACK after 1 ms");
    /* Send: one segment with PSH, exact bytes. */
    CHECKF(tw_tcp_send(&g_conn, "world!", 6, r.now) == 6, "send");
    rp_run(&r, 0);
    CHECKF(rp_seg(&r, &s) && s.seq == iss + 1 && s.dlen == 6 && !memcmp(s.data, "world!", 6) &&
               (s.flags & TW_TCP_PSH), "data segment seq %u len %u", s.seq, s.dlen);
    CHECKF(tw_tcp_unacked(&g_conn) == 6, "6 unacked");
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 9, iss + 7, TW_TCP_ACK, 65535, NULL, 0);
    CHECKF(tw_tcp_unacked(&g_conn) == 0, "acked");
    /* A second SYN whose accept callback hands back memory still in use
     * (g_conn): refused with RST, the live connection untouched. */
    rp_tcp(&r, PEER_PORT + 1, US_PORT, 5555, 0, TW_TCP_SYN, 65535, NULL, 0);
    CHECKF(rp_seg(&r, &s) && (s.flags & TW_TCP_RST) && s.dport == PEER_PORT + 1, "refused");
    CHECKF(g_conn.state == TW_TCP_ESTABLISHED && g_conn.remote_port == PEER_PORT, "untouched");
    CHECKF(tw_net_get_stats(r.st)->listen_overflow == 1, "counted");
    rp_close(&r);
}

static void t_active_open(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_conn c;
    memset(&c, 0, sizeof(c));
    CHECKF(tw_tcp_connect(r.st, &c, PEER_IP, 7000, 0, r.now) == 0, "connect");
    CHECKF(c.state == TW_TCP_SYN_SENT, "SYN_SENT");
    seg s;
    CHECKF(rp_seg(&r, &s) && s.flags == TW_TCP_SYN && s.dport == 7000 && s.mss == 1460 &&
               s.ws >= 0, "SYN with options (flags %02x mss %u)", s.flags, s.mss);
    /* A SYN-ACK acking the wrong number: RST, state unchanged. */
    rp_tcp(&r, 7000, s.sport, 5000, s.seq + 7, TW_TCP_SYN | TW_TCP_ACK, 65535, NULL, 0);
    seg rst;
    CHECKF(rp_seg(&r, &rst) && rst.flags == TW_TCP_RST && rst.seq == s.seq + 7, "RST for bad ACK");
    CHECKF(c.state == TW_TCP_SYN_SENT, "still SYN_SENT");
    uint8_t f[2048];
    uint32_t n = rp_build(f, 7000, s.sport, 5000, s.seq + 1, TW_TCP_SYN | TW_TCP_ACK, 1000,
                          NULL, 0, syn_opts, 8, 0, 0);
    rp_send_raw(&r, f, n);
    CHECKF(c.state == TW_TCP_ESTABLISHED, "SYN-ACK -> ESTABLISHED");
    CHECKF(tw_tcp_events(&c) & TW_TCP_EV_CONNECTED, "CONNECTED");
    seg a;
    CHECKF(rp_seg(&r, &a) && a.flags == TW_TCP_ACK && a.ack == 5001, "handshake ACK");
    CHECKF(c.snd_wnd == 1000, "window from SYN-ACK unscaled: %u", c.snd_wnd);
    rp_close(&r);
}

static void t_simultaneous_open(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_conn c;
    memset(&c, 0, sizeof(c));
    tw_tcp_connect(r.st, &c, PEER_IP, 7000, 45000, r.now);
    seg s;
    CHECKF(rp_seg(&r, &s) && s.flags == TW_TCP_SYN, "SYN");
    /* The peer's own SYN crosses ours (RFC 793 figure 8). */
    uint8_t f[128];
    uint32_t n = rp_build(f, 7000, 45000, 9000, 0, TW_TCP_SYN, 4000, NULL, 0, syn_opts, 8, 0, 0);
    rp_send_raw(&r, f, n);
    CHECKF(c.state == TW_TCP_SYN_RCVD, "SYN_SENT + SYN -> SYN_RCVD, got %s",
           tw_tcp_state_name(c.state));
    seg sa;
    CHECKF(rp_seg(&r, &sa) && sa.flags == (TW_TCP_SYN | TW_TCP_ACK) && sa.seq == s.seq &&
               sa.ack == 9001, "SYN-ACK with our ISN (flags %02x)", sa.flags);
    rp_tcp(&r, 7000, 45000, 9001, s.seq + 1, TW_TCP_ACK, 4000, NULL, 0);
    CHECKF(c.state == TW_TCP_ESTABLISHED, "ACK -> ESTABLISHED");
    rp_close(&r);
}

static void t_syn_rcvd(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    memset(&g_conn, 0, sizeof(g_conn));
    tw_tcp_listen(r.st, &l, US_PORT, acc, NULL);
    uint8_t f[128];
    uint32_t n = rp_build(f, PEER_PORT, US_PORT, PEER_ISN, 0, TW_TCP_SYN, 65535, NULL, 0,
                          syn_opts, 8, 0, 0);
    rp_send_raw(&r, f, n);
    seg s1, s2, s3;
    CHECKF(rp_seg(&r, &s1) && s1.flags == (TW_TCP_SYN | TW_TCP_ACK), "SYN-ACK");
    /* Retransmitted SYN (our SYN-ACK was lost): the same SYN-ACK again. */
    rp_send_raw(&r, f, n);
    CHECKF(rp_seg(&r, &s2) && s2.flags == (TW_TCP_SYN | TW_TCP_ACK) && s2.seq == s1.seq,
           "SYN-ACK resent for a repeated SYN");
    /* No answer at all: the RTO resends it (rto_init 1 s). */
    rp_run(&r, 1000000000ull);
    CHECKF(rp_seg(&r, &s3) && s3.flags == (TW_TCP_SYN | TW_TCP_ACK), "SYN-ACK on RTO");
    /* An ACK that does not ack our SYN: RST, still SYN_RCVD. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, s1.seq + 50, TW_TCP_ACK, 65535, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_SYN_RCVD, "bad ACK in SYN_RCVD ignored");
    /* Exact RST: the half-open connection goes away. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, 0, TW_TCP_RST, 0, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_CLOSED, "SYN_RCVD + RST -> CLOSED");
    rp_close(&r);
}

static void t_syn_sent_rst(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_conn c;
    memset(&c, 0, sizeof(c));
    tw_tcp_connect(r.st, &c, PEER_IP, 7000, 0, r.now);
    seg s;
    rp_seg(&r, &s);
    /* RST without ACK in SYN_SENT: ignored. */
    rp_tcp(&r, 7000, s.sport, 0, 0, TW_TCP_RST, 0, NULL, 0);
    CHECKF(c.state == TW_TCP_SYN_SENT, "RST without ACK ignored");
    rp_tcp(&r, 7000, s.sport, 0, s.seq + 1, TW_TCP_RST | TW_TCP_ACK, 0, NULL, 0);
    CHECKF(c.state == TW_TCP_CLOSED, "refused -> CLOSED");
    CHECKF(tw_tcp_events(&c) & TW_TCP_EV_RESET, "RESET event");
    CHECKF(tw_tcp_conn_release(&c) == 0, "release");
    rp_close(&r);
}

static void t_active_close(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    uint32_t iss = establish_passive(&r, &l, 0);
    tw_tcp_close(&g_conn, r.now);
    CHECKF(g_conn.state == TW_TCP_FIN_WAIT_1, "close -> FIN_WAIT_1");
    seg s;
    CHECKF(rp_seg(&r, &s) && (s.flags & TW_TCP_FIN) && s.seq == iss + 1, "FIN sent");
    CHECKF(tw_tcp_send(&g_conn, "x", 1, r.now) == -EPIPE, "send after close is EPIPE");
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 2, TW_TCP_ACK, 65535, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_FIN_WAIT_2, "ACK of FIN -> FIN_WAIT_2");
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 2, TW_TCP_ACK | TW_TCP_FIN, 65535, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_TIME_WAIT, "FIN -> TIME_WAIT");
    CHECKF(rp_seg(&r, &s) && s.ack == PEER_ISN + 2, "FIN acked");
    /* A retransmitted FIN in TIME_WAIT is acked again. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 2, TW_TCP_ACK | TW_TCP_FIN, 65535, NULL, 0);
    CHECKF(rp_seg(&r, &s) && s.ack == PEER_ISN + 2, "FIN re-acked in TIME_WAIT");
    rp_run(&r, 999000000ull);
    CHECKF(g_conn.state == TW_TCP_TIME_WAIT, "TIME_WAIT holds");
    rp_run(&r, 2000000ull);
    CHECKF(g_conn.state == TW_TCP_CLOSED, "TIME_WAIT expires");
    CHECKF(tw_tcp_events(&g_conn) & TW_TCP_EV_CLOSED, "CLOSED event");
    rp_close(&r);
}

static void t_simultaneous_close(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    uint32_t iss = establish_passive(&r, &l, 0);
    tw_tcp_close(&g_conn, r.now);
    rp_drain(&r);
    /* Peer's FIN crosses ours (it does not ack our FIN). */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 1, TW_TCP_ACK | TW_TCP_FIN, 65535, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_CLOSING, "FIN_WAIT_1 + FIN -> CLOSING, got %s",
           tw_tcp_state_name(g_conn.state));
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 2, iss + 2, TW_TCP_ACK, 65535, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_TIME_WAIT, "CLOSING + ACK -> TIME_WAIT");
    rp_close(&r);

    /* FIN+ACK of our FIN in one segment: FIN_WAIT_1 -> TIME_WAIT. */
    rp_open(&r, NULL);
    iss = establish_passive(&r, &l, 0);
    tw_tcp_close(&g_conn, r.now);
    rp_drain(&r);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 2, TW_TCP_ACK | TW_TCP_FIN, 65535, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_TIME_WAIT, "FIN_WAIT_1 + FIN/ACK -> TIME_WAIT, got %s",
           tw_tcp_state_name(g_conn.state));
    rp_close(&r);
}

static void t_passive_close(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    uint32_t iss = establish_passive(&r, &l, 0);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 1, TW_TCP_ACK | TW_TCP_FIN | TW_TCP_PSH,
           65535, "bye", 3);
    CHECKF(g_conn.state == TW_TCP_CLOSE_WAIT, "FIN -> CLOSE_WAIT");
    CHECKF(tw_tcp_events(&g_conn) & TW_TCP_EV_PEER_FIN, "PEER_FIN event");
    CHECKF(tw_tcp_readable(&g_conn) == 3, "data before FIN readable");
    seg s;
    CHECKF(rp_seg(&r, &s) && s.ack == PEER_ISN + 5, "FIN acked (ack %u)", s.ack);
    CHECKF(tw_tcp_send(&g_conn, "ok", 2, r.now) == 2, "CLOSE_WAIT may still send");
    tw_tcp_close(&g_conn, r.now);
    CHECKF(g_conn.state == TW_TCP_LAST_ACK, "close -> LAST_ACK");
    rp_run(&r, 0);
    int fin = 0;
    while (rp_seg(&r, &s))
        fin |= (s.flags & TW_TCP_FIN) && s.seq == iss + 3;
    CHECKF(fin, "FIN after the data");
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 5, iss + 4, TW_TCP_ACK, 65535, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_CLOSED, "LAST_ACK + ACK -> CLOSED");
    rp_close(&r);
}

/* A RST after both FINs (RFC 1337 and RFC 793 p.70): in TIME_WAIT it is
 * ignored (no TIME_WAIT assassination); in CLOSING and LAST_ACK, with all
 * data acknowledged, it ends the connection as CLOSED, not RESET; with data
 * still unacknowledged it is a real reset. */
static void t_rst_after_fins(void)
{
    rawpeer r;
    tw_tcp_listener l;
    seg s;
    /* TIME_WAIT: an exact-sequence RST changes nothing. */
    rp_open(&r, NULL);
    uint32_t iss = establish_passive(&r, &l, 0);
    tw_tcp_close(&g_conn, r.now);
    rp_drain(&r);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 2, TW_TCP_ACK | TW_TCP_FIN, 65535, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_TIME_WAIT, "FIN/ACK -> TIME_WAIT");
    rp_drain(&r);
    (void)tw_tcp_events(&g_conn);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 2, 0, TW_TCP_RST, 0, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_TIME_WAIT, "RST in TIME_WAIT ignored, got %s",
           tw_tcp_state_name(g_conn.state));
    CHECKF(!(tw_tcp_events(&g_conn) & TW_TCP_EV_RESET), "no RESET from TIME_WAIT");
    CHECKF(!rp_seg(&r, &s), "a RST is never answered in TIME_WAIT");
    rp_run(&r, 1001000000ull);
    CHECKF(g_conn.state == TW_TCP_CLOSED, "TIME_WAIT still runs out");
    CHECKF(tw_tcp_events(&g_conn) & TW_TCP_EV_CLOSED, "then CLOSED");
    rp_close(&r);

    /* CLOSING (FINs crossed), our FIN not yet acked: RST -> CLOSED. */
    rp_open(&r, NULL);
    iss = establish_passive(&r, &l, 0);
    tw_tcp_close(&g_conn, r.now);
    rp_drain(&r);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 1, TW_TCP_ACK | TW_TCP_FIN, 65535, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_CLOSING, "CLOSING");
    (void)tw_tcp_events(&g_conn);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 2, 0, TW_TCP_RST, 0, NULL, 0);
    unsigned ev = tw_tcp_events(&g_conn);
    CHECKF(g_conn.state == TW_TCP_CLOSED, "RST in CLOSING closes, got %s",
           tw_tcp_state_name(g_conn.state));
    CHECKF((ev & TW_TCP_EV_CLOSED) && !(ev & TW_TCP_EV_RESET),
           "CLOSING + RST is CLOSED, not RESET (events %#x)", ev);
    rp_close(&r);

    /* LAST_ACK with the data acked and only the FIN outstanding. */
    rp_open(&r, NULL);
    iss = establish_passive(&r, &l, 0);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 1, TW_TCP_ACK | TW_TCP_FIN, 65535, NULL, 0);
    CHECKF(tw_tcp_send(&g_conn, "ok", 2, r.now) == 2, "send in CLOSE_WAIT");
    tw_tcp_close(&g_conn, r.now);
    rp_run(&r, 0);
    rp_drain(&r);
    CHECKF(g_conn.state == TW_TCP_LAST_ACK, "LAST_ACK");
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 2, iss + 3, TW_TCP_ACK, 65535, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_LAST_ACK, "data acked, FIN not");
    (void)tw_tcp_events(&g_conn);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 2, 0, TW_TCP_RST, 0, NULL, 0);
    ev = tw_tcp_events(&g_conn);
    CHECKF(g_conn.state == TW_TCP_CLOSED && (ev & TW_TCP_EV_CLOSED) && !(ev & TW_TCP_EV_RESET),
           "LAST_ACK + RST after all data acked: CLOSED, not RESET (events %#x)", ev);
    rp_close(&r);

    /* LAST_ACK with data unacknowledged: the peer lost it, a real reset. */
    rp_open(&r, NULL);
    iss = establish_passive(&r, &l, 0);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 1, TW_TCP_ACK | TW_TCP_FIN, 65535, NULL, 0);
    CHECKF(tw_tcp_send(&g_conn, "ok", 2, r.now) == 2, "send in CLOSE_WAIT");
    tw_tcp_close(&g_conn, r.now);
    rp_run(&r, 0);
    rp_drain(&r);
    (void)tw_tcp_events(&g_conn);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 2, 0, TW_TCP_RST, 0, NULL, 0);
    ev = tw_tcp_events(&g_conn);
    CHECKF(g_conn.state == TW_TCP_CLOSED && (ev & TW_TCP_EV_RESET),
           "LAST_ACK + RST with data unacked: RESET (events %#x)", ev);
    rp_close(&r);
}

/* A PSH segment answered before the next poll turn: the ACK rides on the
 * reply (one segment, no pure ACK); unanswered, a pure ACK goes out on the
 * next turn. */
static void t_psh_ack_piggyback(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    uint32_t iss = establish_passive(&r, &l, 0);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 1, TW_TCP_ACK | TW_TCP_PSH, 65535,
           "ping", 4);
    CHECKF(tw_tcp_readable(&g_conn) == 4, "request readable");
    tw_tcp_recv_consume(&g_conn, 4);
    CHECKF(tw_tcp_send(&g_conn, "pong", 4, r.now) == 4, "reply");
    rp_run(&r, 1);
    seg s;
    CHECKF(rp_seg(&r, &s) && s.dlen == 4 && s.ack == PEER_ISN + 5 && (s.flags & TW_TCP_ACK),
           "reply carries the ACK (len %u ack %u)", s.dlen, s.ack - PEER_ISN);
    CHECKF(!rp_seg(&r, &s), "no pure ACK besides the reply");
    /* Unanswered: a pure ACK on the next turn. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 5, iss + 5, TW_TCP_ACK | TW_TCP_PSH, 65535, "ping", 4);
    CHECKF(!rp_seg(&r, &s), "not in the same turn");
    rp_run(&r, 1);
    CHECKF(rp_seg(&r, &s) && s.dlen == 0 && s.ack == PEER_ISN + 9, "pure ACK on the next turn");
    /* Two segments in a row: the second is acked at once (RFC 5681 4.2). */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 9, iss + 5, TW_TCP_ACK | TW_TCP_PSH, 65535, "a", 1);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 10, iss + 5, TW_TCP_ACK | TW_TCP_PSH, 65535, "b", 1);
    CHECKF(rp_seg(&r, &s) && s.ack == PEER_ISN + 11, "every second segment acked at once");
    rp_close(&r);
}

static void t_rfc5961(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    uint32_t iss = establish_passive(&r, &l, 0);
    seg s;
    /* RST in window but not exact: challenge ACK, connection stays. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 100, 0, TW_TCP_RST, 0, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_ESTABLISHED, "inexact RST ignored");
    CHECKF(rp_seg(&r, &s) && s.flags == TW_TCP_ACK && s.ack == PEER_ISN + 1, "challenge ACK");
    CHECKF(tw_net_get_stats(r.st)->challenge_acks == 1, "counted");
    /* RST outside the window: silently dropped. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 10000000, 0, TW_TCP_RST, 0, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_ESTABLISHED && !rp_seg(&r, &s), "out-of-window RST dropped");
    /* SYN on an established connection: challenge ACK. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 5, 0, TW_TCP_SYN, 65535, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_ESTABLISHED, "SYN does not reset");
    CHECKF(rp_seg(&r, &s) && s.flags == TW_TCP_ACK, "challenge ACK for SYN");
    /* ACK of data never sent: challenge ACK, data not accepted. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 5000, TW_TCP_ACK | TW_TCP_PSH, 65535, "zz", 2);
    CHECKF(tw_tcp_readable(&g_conn) == 0, "segment with a future ACK dropped");
    CHECKF(rp_seg(&r, &s) && s.ack == PEER_ISN + 1, "answered");
    /* Data beyond the window is not accepted. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1 + (1u << 20), iss + 1, TW_TCP_ACK, 65535, "q", 1);
    CHECKF(tw_tcp_readable(&g_conn) == 0 && g_conn.ooo_n == 0, "out-of-window data dropped");
    rp_drain(&r);
    /* A flood of forged RSTs gets at most 100 challenge ACKs a second. */
    unsigned answered = 0;
    for (int i = 0; i < 300; i++) {
        uint8_t f[128];
        uint32_t n = rp_build(f, PEER_PORT, US_PORT, PEER_ISN + 50 + (uint32_t)i, 0, TW_TCP_RST,
                              0, NULL, 0, NULL, 0, 0, 0);
        rp_send_raw(&r, f, n);
        answered += rp_drain(&r);
    }
    /* 4 challenge ACKs were sent above in the same second (RST, SYN, future
     * ACK, data beyond the window): 96 more. */
    CHECKF(answered == 96 && tw_net_get_stats(r.st)->challenge_acks == 100,
           "challenge ACKs rate-limited to 100/s: %u", answered);
    CHECKF(tw_net_get_stats(r.st)->challenge_acks_limited >= 200, "limited counted");
    CHECKF(g_conn.state == TW_TCP_ESTABLISHED, "flood did not reset");
    /* Exact RST: reset. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, 0, TW_TCP_RST, 0, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_CLOSED, "exact RST resets");
    CHECKF(tw_tcp_events(&g_conn) & TW_TCP_EV_RESET, "RESET event");
    rp_close(&r);
}

static void t_no_listener_rst(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    rp_tcp(&r, PEER_PORT, 9999, 777, 0, TW_TCP_SYN, 65535, NULL, 0);
    seg s;
    CHECKF(rp_seg(&r, &s) && s.flags == (TW_TCP_RST | TW_TCP_ACK) && s.ack == 778 && s.seq == 0,
           "RST/ACK to a closed port");
    rp_tcp(&r, PEER_PORT, 9999, 777, 4242, TW_TCP_ACK, 65535, NULL, 0);
    CHECKF(rp_seg(&r, &s) && s.flags == TW_TCP_RST && s.seq == 4242, "RST seq = their ack");
    rp_tcp(&r, PEER_PORT, 9999, 777, 4242, TW_TCP_RST, 65535, NULL, 0);
    CHECKF(!rp_seg(&r, &s), "no RST for a RST");
    /* A bad checksum is counted and gets no answer. */
    uint8_t f[2048];
    uint32_t n = rp_build(f, PEER_PORT, 9999, 1, 0, TW_TCP_SYN, 100, NULL, 0, NULL, 0, 0, 1);
    rp_send_raw(&r, f, n);
    CHECKF(!rp_seg(&r, &s) && tw_net_get_stats(r.st)->rx_tcp_cksum_bad == 1, "bad cksum dropped");
    rp_close(&r);
}

static void t_out_of_order(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    uint32_t iss = establish_passive(&r, &l, 0);
    seg s;
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 4, iss + 1, TW_TCP_ACK, 65535, "def", 3);
    CHECKF(tw_tcp_readable(&g_conn) == 0, "hole: nothing readable");
    CHECKF(rp_seg(&r, &s) && s.ack == PEER_ISN + 1, "immediate dup ACK for a hole");
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 10, iss + 1, TW_TCP_ACK, 65535, "jkl", 3);
    /* An overlapping retransmission and the missing piece. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 3, iss + 1, TW_TCP_ACK, 65535, "cdefghi", 7);
    CHECKF(tw_tcp_readable(&g_conn) == 0, "still a hole at the front");
    rp_drain(&r);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 1, TW_TCP_ACK, 65535, "ab", 2);
    const uint8_t *p;
    size_t n;
    tw_tcp_recv_peek(&g_conn, &p, &n);
    CHECKF(n == 12 && !memcmp(p, "abcdefghijkl", 12), "reassembled in order: %.*s", (int)n, p);
    CHECKF(rp_seg(&r, &s) && s.ack == PEER_ISN + 13, "ACK after the hole filled: %u", s.ack);
    /* A full duplicate changes nothing and is acked. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 1, TW_TCP_ACK, 65535, "ab", 2);
    CHECKF(tw_tcp_readable(&g_conn) == 12, "duplicate not delivered twice");
    /* A FIN that arrives past a hole is taken when the hole fills. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 16, iss + 1, TW_TCP_ACK | TW_TCP_FIN, 65535, "pq", 2);
    CHECKF(g_conn.state == TW_TCP_ESTABLISHED, "FIN past a hole waits");
    rp_drain(&r);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 13, iss + 1, TW_TCP_ACK, 65535, "mno", 3);
    CHECKF(g_conn.state == TW_TCP_CLOSE_WAIT, "hole filled: FIN taken, %s",
           tw_tcp_state_name(g_conn.state));
    CHECKF(tw_tcp_readable(&g_conn) == 17, "all 17 bytes before the FIN");
    CHECKF(rp_seg(&r, &s) && s.ack == PEER_ISN + 19, "ACK covers the FIN: %u", s.ack);
    CHECKF(g_conn.rcv_nxt == PEER_ISN + 19, "FIN counted in rcv_nxt: %u", g_conn.rcv_nxt);
    rp_close(&r);
}

/* The out-of-order list is bounded; when it is full the ranges nearest
 * rcv_nxt are kept (a new lower range evicts the highest), so that the
 * retransmission filling the first hole delivers them at once.  Regression:
 * dropping the new range instead left a sender without SACK (the Linux
 * kernel over AF_PACKET, 10% reordering) one backed-off RTO per hole. */
static void t_ooo_full_keeps_lowest(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    uint32_t iss = establish_passive(&r, &l, 0);
    static uint8_t pat[4096];
    for (unsigned i = 0; i < sizeof(pat); i++)
        pat[i] = (uint8_t)(i * 7 + 3);
    unsigned cap = (unsigned)TW_ARRAY_SIZE(g_conn.ooo);
    /* cap disjoint ranges well past a hole: [1000 + 20k, +10). */
    for (unsigned k = 0; k < cap; k++) {
        uint32_t off = 1000 + 20 * k;
        rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1 + off, iss + 1, TW_TCP_ACK, 65535,
               pat + off, 10);
        rp_drain(&r);
    }
    CHECKF(g_conn.ooo_n == cap, "ooo list full: %u of %u", g_conn.ooo_n, cap);
    uint64_t drops = tw_net_get_stats(r.st)->rx_tcp_ooo_drop;
    /* A range above all of them, with the list full: not kept. */
    uint32_t hi = 1000 + 20 * cap + 100;
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1 + hi, iss + 1, TW_TCP_ACK, 65535, pat + hi, 10);
    rp_drain(&r);
    CHECKF(tw_net_get_stats(r.st)->rx_tcp_ooo_drop == drops + 1, "highest new range dropped");
    /* A range just past the first hole: kept, the highest one evicted. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1 + 10, iss + 1, TW_TCP_ACK, 65535, pat + 10, 10);
    rp_drain(&r);
    CHECKF(g_conn.ooo_n == cap, "still %u ranges, got %u", cap, g_conn.ooo_n);
    CHECKF(g_conn.ooo[0][0] == PEER_ISN + 11, "lowest range kept at the front");
    CHECKF(g_conn.ooo[cap - 1][0] == PEER_ISN + 1 + 1000 + 20 * (cap - 2),
           "highest range evicted");
    /* The hole fills: both the hole and the range behind it are delivered. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 1, TW_TCP_ACK, 65535, pat, 10);
    const uint8_t *p;
    size_t n;
    tw_tcp_recv_peek(&g_conn, &p, &n);
    CHECKF(n == 20 && !memcmp(p, pat, 20), "hole + kept range delivered: %zu bytes", n);
    seg s;
    int acked = 0;
    while (rp_seg(&r, &s))
        acked = s.ack == PEER_ISN + 21;
    CHECKF(acked, "ACK covers the kept range");
    /* Everything else arrives in order; the stream is exact. */
    tw_tcp_recv_consume(&g_conn, n);
    size_t got = n;
    for (uint32_t off = 20; off < 1000 + 20 * cap; off += 500) {
        uint32_t len = 1000 + 20 * cap - off < 500 ? 1000 + 20 * cap - off : 500;
        rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1 + off, iss + 1, TW_TCP_ACK, 65535,
               pat + off, len);
        rp_drain(&r);
        while (tw_tcp_recv_peek(&g_conn, &p, &n) > 0) {
            CHECKF(!memcmp(p, pat + got, n), "bytes at %zu exact", got);
            got += n;
            tw_tcp_recv_consume(&g_conn, n);
        }
    }
    CHECKF(got == 1000 + 20 * cap, "all %u bytes once, got %zu", 1000 + 20 * cap, got);
    CHECKF(g_conn.ooo_n == 0, "no range left");
    rp_close(&r);
}

/* A peer that filled our whole window (out-of-order data behind a hole)
 * sends its ACKs with seq = our right edge; they must be taken, or none of
 * its acknowledgements of our data gets through while the hole is open. */
static void t_ack_at_right_edge(void)
{
    rawpeer r;
    tw_net_config cfg;
    tw_net_config_init(&cfg, US_IP);
    cfg.isn_secret[0] = 1;
    cfg.rx_buf_bytes = 4096;
    rp_open(&r, &cfg);
    tw_tcp_listener l;
    uint32_t iss = establish_passive(&r, &l, 0);
    CHECKF(tw_tcp_send(&g_conn, "hello", 5, r.now) == 5, "send");
    rp_run(&r, 0);
    rp_drain(&r);
    CHECKF(g_conn.snd_max == iss + 6, "our 5 bytes are out");
    static uint8_t junk[1000];
    memset(junk, 'z', sizeof(junk));
    /* A 100-byte hole, then the rest of the 4096-byte window. */
    for (uint32_t off = 100; off < 4096; off += 1000) {
        uint32_t len = 4096 - off < 1000 ? 4096 - off : 1000;
        rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1 + off, iss + 1, TW_TCP_ACK, 65535, junk, len);
        rp_drain(&r);
    }
    CHECKF(tw_tcp_readable(&g_conn) == 0, "hole at the front");
    uint64_t oow = tw_net_get_stats(r.st)->rx_tcp_out_of_window;
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1 + 4096, iss + 6, TW_TCP_ACK, 65535, NULL, 0);
    CHECKF(g_conn.snd_una == iss + 6, "ACK at the right edge taken: snd_una %u, want %u",
           g_conn.snd_una - iss, 6u);
    CHECKF(tw_net_get_stats(r.st)->rx_tcp_out_of_window == oow, "not counted out of window");
    /* One byte past the right edge is still out of window. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1 + 4097, iss + 6, TW_TCP_ACK, 65535, NULL, 0);
    CHECKF(tw_net_get_stats(r.st)->rx_tcp_out_of_window == oow + 1, "past the edge: out of window");
    /* A RST at the right edge is not in the window (RFC 5961): no reset. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1 + 4096, 0, TW_TCP_RST, 0, NULL, 0);
    CHECKF(g_conn.state == TW_TCP_ESTABLISHED, "RST at the right edge ignored");
    rp_close(&r);
}

/* The segments the stack has sent since the last look. */
static int segs_out(rawpeer *r)
{
    int k = 0;
    seg s;
    while (rp_seg(r, &s))
        k++;
    return k;
}

/* Writes n bytes on g_conn, runs the stack, returns the segments sent. */
static int send_bulk(rawpeer *r, size_t n)
{
    static char big[64 * 1460];
    TW_VERIFY(n <= sizeof(big));
    memset(big, 'b', n);
    tw_tcp_send(&g_conn, big, n, r->now);
    rp_run(r, 0);
    return segs_out(r);
}

static void t_rto_and_fast_retransmit(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    uint32_t iss = establish_passive(&r, &l, 0);
    seg s;
    /* The handshake gave an RTT sample of 0: RTO = rto_min (200 ms). */
    CHECKF(g_conn.rto_ns == 200000000ull, "rto after handshake %llu",
           (unsigned long long)g_conn.rto_ns);
    tw_tcp_send(&g_conn, "AAAA", 4, r.now);
    rp_run(&r, 0);
    CHECKF(rp_seg(&r, &s) && s.dlen == 4, "sent");
    rp_run(&r, 199000000ull);
    CHECKF(!rp_seg(&r, &s), "no retransmit before RTO");
    rp_run(&r, 1000000ull);
    CHECKF(rp_seg(&r, &s) && s.seq == iss + 1 && s.dlen == 4, "RTO retransmit");
    CHECKF(g_conn.rto_ns == 400000000ull, "backoff doubles RTO");
    rp_run(&r, 400000000ull);
    CHECKF(rp_seg(&r, &s) && s.seq == iss + 1, "second retransmit after 2x");
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 5, TW_TCP_ACK, 65535, NULL, 0);
    CHECKF(g_conn.rto_at_ns == 0 && g_conn.retries == 0, "ACK stops the timer");
    CHECKF(g_conn.cwnd == 1460u + 4, "after a loss, one segment plus the bytes acked: %u",
           g_conn.cwnd);
    rp_close(&r);
    /* Fast retransmit on a fresh connection: 4 segments out, the first
     * lost, 3 dup ACKs. */
    rp_open(&r, NULL);
    iss = establish_passive(&r, &l, 0) - 4;
    int k = send_bulk(&r, 4 * 1460);
    CHECKF(k == 4, "4 segments sent, got %d", k);
    for (int i = 0; i < 3; i++)
        rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 5, TW_TCP_ACK, 65535, NULL, 0);
    CHECKF(rp_seg(&r, &s) && s.seq == iss + 5 && s.dlen == 1460, "fast retransmit of the hole");
    CHECKF(tw_net_get_stats(r.st)->fast_retransmits == 1, "counted");
    rp_close(&r);
}

/* Slow start counts every byte an ACK covers: one stretch ACK for four
 * segments (a receiver that ACKs a whole rx burst) grows cwnd by four,
 * not by RFC 3465's L of two. */
static void t_slow_start_stretch_ack(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    uint32_t iss = establish_passive(&r, &l, 0);
    int k = send_bulk(&r, 32 * 1460);
    uint32_t cw0 = g_conn.cwnd, mss = g_conn.mss;
    CHECKF(k == 10 && cw0 == 10 * mss && cw0 < g_conn.ssthresh, "initial window: %d sent", k);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 1 + 4 * mss, TW_TCP_ACK, 65535, NULL, 0);
    CHECKF(g_conn.cwnd == cw0 + 4 * mss, "stretch ACK of 4 segments: cwnd %u, want %u",
           g_conn.cwnd, cw0 + 4 * mss);
    rp_run(&r, 0);
    k = segs_out(&r);
    CHECKF(k == 8, "4 segments acknowledged, 8 more sent: %d", k);
    rp_close(&r);
}

static void t_zero_window_and_keepalive(void)
{
    rawpeer r;
    tw_net_config cfg;
    tw_net_config_init(&cfg, US_IP);
    cfg.keepalive_idle_ns = 5000000000ull;
    cfg.keepalive_intvl_ns = 1000000000ull;
    cfg.keepalive_probes = 2;
    rp_open(&r, &cfg);
    tw_tcp_listener l;
    uint32_t iss = establish_passive(&r, &l, 0);
    seg s;
    /* The peer closes its window: data waits, probes follow. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 1, TW_TCP_ACK, 0, NULL, 0);
    CHECKF(g_conn.snd_wnd == 0, "zero window");
    tw_tcp_send(&g_conn, "data", 4, r.now);
    rp_run(&r, 0);
    CHECKF(!rp_seg(&r, &s), "nothing sent into a zero window");
    rp_run(&r, 1000000000ull);
    CHECKF(rp_seg(&r, &s) && s.dlen == 0 && s.seq == iss, "zero-window probe (seq %u)", s.seq);
    CHECKF(tw_net_get_stats(r.st)->zero_window_probes >= 1, "probe counted");
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 1, TW_TCP_ACK, 1000, NULL, 0);
    rp_run(&r, 0);
    CHECKF(rp_seg(&r, &s) && s.dlen == 4, "window opened: data sent");
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 5, TW_TCP_ACK, 1000, NULL, 0);
    rp_drain(&r);
    /* Data in flight when the window closes without an ACK of it: the
     * RTO must not kill a peer that keeps answering probes with a zero
     * window, however long its reader stalls (here 10 minutes). */
    tw_tcp_send(&g_conn, "more", 4, r.now);
    rp_run(&r, 0);
    rp_drain(&r);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 5, TW_TCP_ACK, 0, NULL, 0);
    unsigned probes = 0;
    for (int i = 0; i < 600; i++) {
        rp_run(&r, 1000000000ull);
        while (rp_seg(&r, &s)) {
            probes++;
            rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 5, TW_TCP_ACK, 0, NULL, 0);
        }
    }
    CHECKF(g_conn.state == TW_TCP_ESTABLISHED, "zero window for 10 min: still %s",
           tw_tcp_state_name(g_conn.state));
    CHECKF(probes >= 10, "probed while the window was shut: %u", probes);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 5, TW_TCP_ACK, 1000, NULL, 0);
    rp_run(&r, 0);
    CHECKF(rp_seg(&r, &s) && s.dlen == 4 && s.seq == iss + 5 && !memcmp(s.data, "more", 4),
           "window reopened: data resent");
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 9, TW_TCP_ACK, 1000, NULL, 0);
    rp_drain(&r);
    /* Keepalive: idle 5 s, then probes 1 s apart, then timeout. */
    rp_run(&r, 4900000000ull);
    CHECKF(!rp_seg(&r, &s), "no probe before idle time");
    rp_run(&r, 200000000ull);
    CHECKF(rp_seg(&r, &s) && s.dlen == 0 && s.seq == iss + 8, "keepalive probe (seq %u)", s.seq);
    rp_run(&r, 1000000000ull);
    CHECKF(rp_seg(&r, &s), "second probe");
    rp_run(&r, 1000000000ull);
    CHECKF(g_conn.state == TW_TCP_CLOSED && (tw_tcp_events(&g_conn) & TW_TCP_EV_TIMEOUT),
           "unanswered keepalives time out: %s", tw_tcp_state_name(g_conn.state));
    rp_close(&r);
}

static void t_zero_window_dead_peer(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    uint32_t iss = establish_passive(&r, &l, 0);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 1, TW_TCP_ACK, 0, NULL, 0);
    tw_tcp_send(&g_conn, "data", 4, r.now);
    /* The peer never answers a probe: after max_retries probes the
     * connection times out instead of probing forever. */
    for (int i = 0; i < 3600 && g_conn.state != TW_TCP_CLOSED; i++) {
        rp_run(&r, 1000000000ull);
        rp_drain(&r);
    }
    CHECKF(g_conn.state == TW_TCP_CLOSED && (tw_tcp_events(&g_conn) & TW_TCP_EV_TIMEOUT),
           "silent zero-window peer times out: %s", tw_tcp_state_name(g_conn.state));
    rp_close(&r);
}

static void t_ecn(void)
{
    rawpeer r;
    tw_net_config cfg;
    tw_net_config_init(&cfg, US_IP);
    cfg.ecn = 1;
    cfg.rate_max_Bps = 100000000ull;
    cfg.rate_min_Bps = 1000000ull;
    cfg.rate_add_Bps = 1000000ull;
    rp_open(&r, &cfg);
    tw_tcp_listener l;
    uint32_t iss = establish_passive(&r, &l, TW_TCP_ECE | TW_TCP_CWR);
    CHECKF(g_conn.flags & (1u << 3), "ECN negotiated");
    seg s;
    /* Data is ECT(0). */
    tw_tcp_send(&g_conn, "m1", 2, r.now);
    rp_run(&r, 0);
    CHECKF(rp_seg(&r, &s) && (s.tos & 3) == TW_IP_ECN_ECT0, "data ECT(0), tos %02x", s.tos);
    /* ECE from the peer halves the rate once, then CWR on the next data. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 3, TW_TCP_ACK | TW_TCP_ECE, 65535, NULL, 0);
    CHECKF(tw_tcp_rate_Bps(&g_conn) == 50000000ull, "rate halved: %llu",
           (unsigned long long)tw_tcp_rate_Bps(&g_conn));
    CHECKF(tw_tcp_events(&g_conn) & TW_TCP_EV_ECN_CUT, "ECN_CUT event");
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 3, TW_TCP_ACK | TW_TCP_ECE, 65535, NULL, 0);
    CHECKF(tw_tcp_rate_Bps(&g_conn) == 50000000ull, "no second cut in the same window");
    tw_tcp_send(&g_conn, "m2", 2, r.now);
    rp_run(&r, 0);
    CHECKF(rp_seg(&r, &s) && (s.flags & TW_TCP_CWR), "CWR on the next data");
    /* A new window's ECE cuts again. */
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 5, TW_TCP_ACK | TW_TCP_ECE, 65535, NULL, 0);
    CHECKF(tw_tcp_rate_Bps(&g_conn) == 25000000ull, "second event cuts again");
    /* Additive recovery: an RTT later, ACKs without ECE add rate_add. */
    tw_tcp_send(&g_conn, "m3", 2, r.now);
    rp_run(&r, 300000000ull);
    rp_drain(&r);
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 7, TW_TCP_ACK, 65535, NULL, 0);
    CHECKF(tw_tcp_rate_Bps(&g_conn) == 26000000ull, "additive increase: %llu",
           (unsigned long long)tw_tcp_rate_Bps(&g_conn));
    /* CE on received data: our ACKs carry ECE until the peer's CWR. */
    uint8_t f[2048];
    uint32_t n = rp_build(f, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 7, TW_TCP_ACK | TW_TCP_PSH,
                          65535, "ce", 2, NULL, 0, TW_IP_ECN_CE, 0);
    rp_send_raw(&r, f, n);
    CHECKF(rp_seg(&r, &s) && (s.flags & TW_TCP_ECE), "ECE echoed for CE");
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 3, iss + 7, TW_TCP_ACK | TW_TCP_PSH, 65535, "x", 1);
    rp_run(&r, 1);
    CHECKF(rp_seg(&r, &s) && (s.flags & TW_TCP_ECE), "ECE repeated until CWR");
    rp_tcp(&r, PEER_PORT, US_PORT, PEER_ISN + 4, iss + 7, TW_TCP_ACK | TW_TCP_PSH | TW_TCP_CWR,
           65535, "y", 1);
    rp_run(&r, 1);
    CHECKF(rp_seg(&r, &s) && !(s.flags & TW_TCP_ECE), "CWR stops ECE");
    rp_close(&r);
}

static void t_token_bucket_paces(void)
{
    rawpeer r;
    tw_net_config cfg;
    tw_net_config_init(&cfg, US_IP);
    cfg.ecn = 1;
    cfg.rate_max_Bps = 1460000ull; /* 1000 segments/s; bucket = 16 segments */
    cfg.rate_min_Bps = 146000ull;
    rp_open(&r, &cfg);
    tw_tcp_listener l;
    establish_passive(&r, &l, TW_TCP_ECE | TW_TCP_CWR);
    int k = send_bulk(&r, 64 * 1460);
    CHECKF(k == 10, "initial cwnd (10) sent in a burst: %d", k); /* cwnd < bucket */
    CHECKF(tw_net_get_stats(r.st)->rate_limited == 0, "not rate limited yet");
    rp_close(&r);
}

static void t_icmp_arp(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    /* ARP request for our IP. */
    uint8_t f[64] = {0};
    tw_eth_hdr *e = (tw_eth_hdr *)f;
    memset(e->dst, 0xff, 6);
    memcpy(e->src, PEER_MAC, 6);
    e->type_be = tw_htobe16(TW_ETHERTYPE_ARP);
    tw_arp_hdr *a = (tw_arp_hdr *)(e + 1);
    a->htype_be = tw_htobe16(1);
    a->ptype_be = tw_htobe16(0x0800);
    a->hlen = 6;
    a->plen = 4;
    a->op_be = tw_htobe16(1);
    memcpy(a->sha, PEER_MAC, 6);
    a->spa_be = tw_htobe32(PEER_IP);
    a->tpa_be = tw_htobe32(US_IP);
    rp_send_raw(&r, f, 60);
    uint8_t b[2048];
    uint32_t n;
    CHECKF(rp_recv(&r, b, &n) && n == 60, "ARP reply");
    const tw_arp_hdr *ra = (const tw_arp_hdr *)(b + 14);
    CHECKF(tw_be16(ra->op_be) == 2 && !memcmp(ra->sha, US_MAC, 6) &&
               tw_be32(ra->spa_be) == US_IP && tw_be32(ra->tpa_be) == PEER_IP &&
               !memcmp(b, PEER_MAC, 6), "ARP reply fields");
    /* An ARP request for someone else: no answer. */
    a->tpa_be = tw_htobe32(0x0a000009);
    rp_send_raw(&r, f, 60);
    CHECKF(!rp_recv(&r, b, &n), "no reply for another IP");
    rp_close(&r);
}

static void t_arp_resolution(void)
{
    /* Without a static entry, connect ARPs for the peer first. */
    rawpeer r;
    tw_error err;
    memset(&r, 0, sizeof(r));
    tw_sim_net_open(&r.net, 1, 64, &err);
    tw_port_sim_open(&r.us_port, r.net, US_MAC, NULL, 64, &err);
    tw_port_sim_open(&r.peer_port, r.net, PEER_MAC, NULL, 64, &err);
    tw_net_config cfg;
    tw_net_config_init(&cfg, US_IP);
    tw_net_open(&r.st, r.us_port, &cfg, &err);
    r.now = 1;
    tw_tcp_conn c;
    memset(&c, 0, sizeof(c));
    tw_tcp_connect(r.st, &c, PEER_IP, 7000, 0, r.now);
    uint8_t b[2048];
    uint32_t n;
    rp_run(&r, 0);
    CHECKF(rp_recv(&r, b, &n) && tw_be16(((tw_eth_hdr *)b)->type_be) == TW_ETHERTYPE_ARP,
           "ARP request first");
    const tw_arp_hdr *q = (const tw_arp_hdr *)(b + 14);
    CHECKF(tw_be16(q->op_be) == 1 && tw_be32(q->tpa_be) == PEER_IP, "who-has peer");
    uint8_t f[64] = {0};
    tw_eth_hdr *e = (tw_eth_hdr *)f;
    memcpy(e->dst, US_MAC, 6);
    memcpy(e->src, PEER_MAC, 6);
    e->type_be = tw_htobe16(TW_ETHERTYPE_ARP);
    tw_arp_hdr *a = (tw_arp_hdr *)(e + 1);
    a->htype_be = tw_htobe16(1);
    a->ptype_be = tw_htobe16(0x0800);
    a->hlen = 6;
    a->plen = 4;
    a->op_be = tw_htobe16(2);
    memcpy(a->sha, PEER_MAC, 6);
    a->spa_be = tw_htobe32(PEER_IP);
    memcpy(a->tha, US_MAC, 6);
    a->tpa_be = tw_htobe32(US_IP);
    rp_send_raw(&r, f, 60);
    seg s;
    CHECKF(rp_seg(&r, &s) && s.flags == TW_TCP_SYN, "SYN once resolved");
    rp_close(&r);
}

static void t_gateway_and_static_arp(void)
{
    rawpeer r;
    tw_error err;
    memset(&r, 0, sizeof(r));
    tw_sim_net_open(&r.net, 1, 64, &err);
    tw_port_sim_open(&r.us_port, r.net, US_MAC, NULL, 64, &err);
    tw_port_sim_open(&r.peer_port, r.net, PEER_MAC, NULL, 64, &err);
    tw_net_config cfg;
    tw_net_config_init(&cfg, US_IP);
    cfg.gateway = 0x0a0000feu;
    tw_net_open(&r.st, r.us_port, &cfg, &err);
    r.now = 1;
    /* Off-subnet: ARP asks for the gateway, not the destination. */
    tw_tcp_conn c;
    memset(&c, 0, sizeof(c));
    CHECKF(tw_tcp_connect(r.st, &c, 0xc0a80105u, 443, 0, r.now) == 0, "connect off-subnet");
    uint8_t b[2048];
    uint32_t n;
    CHECKF(rp_recv(&r, b, &n) && tw_be32(((const tw_arp_hdr *)(b + 14))->tpa_be) == 0x0a0000feu,
           "who-has gateway");
    /* A static entry for the gateway: the SYN goes to its MAC, and an ARP
     * reply claiming another MAC does not overwrite it. */
    static const uint8_t gw_mac[6] = {0x02, 0, 0, 0, 0, 0x02}; /* the peer port */
    CHECKF(tw_net_arp_add(r.st, 0x0a0000feu, gw_mac) == 0, "static entry");
    uint8_t f[64] = {0};
    tw_eth_hdr *e = (tw_eth_hdr *)f;
    memcpy(e->dst, US_MAC, 6);
    memcpy(e->src, PEER_MAC, 6);
    e->type_be = tw_htobe16(TW_ETHERTYPE_ARP);
    tw_arp_hdr *a = (tw_arp_hdr *)(e + 1);
    a->htype_be = tw_htobe16(1);
    a->ptype_be = tw_htobe16(0x0800);
    a->hlen = 6;
    a->plen = 4;
    a->op_be = tw_htobe16(2);
    static const uint8_t evil[6] = {0x02, 0xee, 0xee, 0xee, 0xee, 0xee};
    memcpy(a->sha, evil, 6);
    a->spa_be = tw_htobe32(0x0a0000feu);
    memcpy(a->tha, US_MAC, 6);
    a->tpa_be = tw_htobe32(US_IP);
    rp_send_raw(&r, f, 60);
    rp_run(&r, 1000000000ull); /* the SYN's RTO resends it */
    seg s;
    CHECKF(rp_seg(&r, &s) && s.flags == TW_TCP_SYN && s.dport == 443, "SYN via the gateway MAC");
    rp_close(&r);
}

static void t_checksum_offload(void)
{
    /* The port offers checksum offload: the stack leaves the checksums to
     * the "NIC" (the sim completes them as one would) and trusts its RX
     * verdicts.  Frames reaching the peer must verify; a segment the NIC
     * flags bad must still be dropped by the software check. */
    rawpeer r;
    tw_net_config cfg;
    tw_net_config_init(&cfg, US_IP);
    cfg.use_offload = 1;
    rp_open(&r, &cfg);
    r.us_port->caps |= TW_PORT_CAP_TX_CKSUM | TW_PORT_CAP_RX_CKSUM;
    tw_tcp_listener l;
    uint32_t iss = establish_passive(&r, &l, 0); /* decodes verify checksums */
    tw_tcp_send(&g_conn, "offload", 7, r.now);
    rp_run(&r, 0);
    seg s;
    CHECKF(rp_seg(&r, &s) && s.dlen == 7 && !memcmp(s.data, "offload", 7), "offloaded data ok");
    uint8_t f[256];
    uint32_t n = rp_build(f, PEER_PORT, US_PORT, PEER_ISN + 1, iss + 8, TW_TCP_ACK | TW_TCP_PSH,
                          65535, "bad", 3, NULL, 0, 0, 1);
    rp_send_raw(&r, f, n);
    CHECKF(tw_tcp_readable(&g_conn) == 0 && tw_net_get_stats(r.st)->rx_tcp_cksum_bad == 1,
           "bad checksum caught with RX offload on");
    rp_close(&r);
}

static void t_isn(void)
{
    rawpeer r;
    tw_net_config cfg;
    tw_net_config_init(&cfg, US_IP);
    cfg.isn_secret[0] = 42;
    rp_open(&r, &cfg);
    tw_tcp_conn c1, c2;
    memset(&c1, 0, sizeof(c1));
    memset(&c2, 0, sizeof(c2));
    tw_tcp_connect(r.st, &c1, PEER_IP, 7000, 50000, r.now);
    tw_tcp_connect(r.st, &c2, PEER_IP, 7000, 50001, r.now);
    /* Different 4-tuples: unrelated ISNs (RFC 6528), same clock. */
    CHECKF(c1.iss != c2.iss && c1.iss - c2.iss != 1 && c2.iss - c1.iss != 1, "ISNs differ");
    rp_close(&r);
    tw_net_config_init(&cfg, US_IP);
    cfg.isn_secret[0] = 43;
    rp_open(&r, &cfg);
    tw_tcp_conn c3;
    memset(&c3, 0, sizeof(c3));
    tw_tcp_connect(r.st, &c3, PEER_IP, 7000, 50000, r.now);
    CHECKF(c3.iss != c1.iss, "the secret changes the ISN");
    rp_close(&r);
}

int main(void)
{
    t_passive_open_and_data();
    t_psh_ack_piggyback();
    t_active_open();
    t_simultaneous_open();
    t_syn_rcvd();
    t_syn_sent_rst();
    t_active_close();
    t_simultaneous_close();
    t_passive_close();
    t_rst_after_fins();
    t_rfc5961();
    t_no_listener_rst();
    t_out_of_order();
    t_ooo_full_keeps_lowest();
    t_ack_at_right_edge();
    t_rto_and_fast_retransmit();
    t_slow_start_stretch_ack();
    t_zero_window_and_keepalive();
    t_zero_window_dead_peer();
    t_ecn();
    t_token_bucket_paces();
    t_icmp_arp();
    t_arp_resolution();
    t_gateway_and_static_arp();
    t_checksum_offload();
    t_isn();
    return tw_check_done("net_tcp_test");
}
