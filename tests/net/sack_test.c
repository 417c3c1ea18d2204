/* Unit tests of SACK and timestamps: option parsing and the sender's
 * scoreboard (table-driven), the handshake's negotiation both ways and off
 * per connection, the receiver's SACK blocks (most recent first), PAWS
 * (an old duplicate refused, the RST exception, the 24-day rule) and RTT
 * samples from echoed timestamps.  Scripted peer (rawpeer.h), virtual time. */
#include "net/net_internal.h"
#include "rawpeer.h"

#define PEER_PORT 40000
#define US_PORT 80
#define PEER_ISN 1000u

/* ---- option parsing ---------------------------------------------------- */

typedef struct opt_case {
    const char *name;
    uint8_t o[44];
    uint32_t n;
    int rc;            /* 0 or -EBADMSG */
    uint16_t mss;
    int ws;
    int sack_ok, has_ts;
    uint32_t tsval, tsecr;
    unsigned sack_n;
    uint32_t first_left, last_right; /* sack[0][0], sack[sack_n-1][1] */
} opt_case;

#define B4(x) (uint8_t)((x) >> 24), (uint8_t)((x) >> 16), (uint8_t)((x) >> 8), (uint8_t)(x)

static const opt_case opt_cases[] = {
    {"linux SYN", {2, 4, 0x05, 0xb4, 4, 2, 8, 10, B4(7), B4(0), 1, 3, 3, 7}, 20, 0,
     1460, 7, 1, 1, 7, 0, 0, 0, 0},
    {"old SYN", {2, 4, 0x05, 0xb4, 1, 3, 3, 0}, 8, 0, 1460, 0, 0, 0, 0, 0, 0, 0, 0},
    {"ts data", {1, 1, 8, 10, B4(0x11223344), B4(0x55667788)}, 12, 0, 0, -1, 0, 1,
     0x11223344, 0x55667788, 0, 0, 0},
    {"one block", {1, 1, 5, 10, B4(100), B4(200)}, 12, 0, 0, -1, 0, 0, 0, 0, 1, 100, 200},
    {"four blocks", {1, 1, 5, 34, B4(1), B4(2), B4(3), B4(4), B4(5), B4(6), B4(7), B4(8)}, 36,
     0, 0, -1, 0, 0, 0, 0, 4, 1, 8},
    {"reversed block parses (checked later)", {1, 1, 5, 10, B4(200), B4(100)}, 12, 0, 0, -1,
     0, 0, 0, 0, 1, 200, 100},
    {"five blocks", {5, 42}, 44, -EBADMSG, 0, -1, 0, 0, 0, 0, 0, 0, 0},
    {"sack length 9", {5, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 12, -EBADMSG, 0, -1, 0, 0, 0, 0, 0,
     0, 0},
    {"sack empty", {5, 2, 1, 1}, 4, -EBADMSG, 0, -1, 0, 0, 0, 0, 0, 0, 0},
    {"ts length 8", {8, 8, 0, 0, 0, 0, 0, 0}, 8, -EBADMSG, 0, -1, 0, 0, 0, 0, 0, 0, 0},
    {"sack-ok length 3", {4, 3, 0, 1}, 4, -EBADMSG, 0, -1, 0, 0, 0, 0, 0, 0, 0},
    {"past the end", {1, 1, 8, 10, 0, 0}, 6, -EBADMSG, 0, -1, 0, 0, 0, 0, 0, 0, 0},
    {"kind without length", {1, 1, 1, 8}, 4, -EBADMSG, 0, -1, 0, 0, 0, 0, 0, 0, 0},
    {"length 1", {30, 1, 1, 1}, 4, -EBADMSG, 0, -1, 0, 0, 0, 0, 0, 0, 0},
    {"unknown skipped", {30, 4, 9, 9, 4, 2, 1, 1}, 8, 0, 0, -1, 1, 0, 0, 0, 0, 0, 0},
    {"EOL ends", {0, 5, 42}, 3, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0},
    {"ws capped", {3, 3, 20, 0}, 4, 0, 0, 14, 0, 0, 0, 0, 0, 0, 0},
};

static void t_parse_opts(void)
{
    for (size_t i = 0; i < TW_ARRAY_SIZE(opt_cases); i++) {
        const opt_case *k = &opt_cases[i];
        tw_tcp_opts o;
        int rc = tw_tcp_parse_opts(k->o, k->n, &o);
        CHECKF(rc == k->rc, "%s: rc %d want %d", k->name, rc, k->rc);
        if (rc)
            continue;
        CHECKF(o.mss == k->mss && o.wscale == k->ws && o.sack_ok == k->sack_ok &&
                   o.has_ts == k->has_ts && o.sack_n == k->sack_n,
               "%s: mss %u ws %d sack_ok %u ts %u blocks %u", k->name, o.mss, o.wscale,
               o.sack_ok, o.has_ts, o.sack_n);
        if (k->has_ts)
            CHECKF(o.tsval == k->tsval && o.tsecr == k->tsecr, "%s: ts %u %u", k->name,
                   o.tsval, o.tsecr);
        if (k->sack_n)
            CHECKF(o.sack[0][0] == k->first_left && o.sack[k->sack_n - 1][1] == k->last_right,
                   "%s: blocks", k->name);
    }
}

/* ---- the scoreboard ---------------------------------------------------- */

typedef struct sb_case {
    const char *name;
    uint32_t una, max;
    unsigned n;
    uint32_t blk[4][2];
    unsigned taken, bad;
    unsigned want_n;
    uint32_t want[4][2];
} sb_case;

#define U 100000u /* snd_una of the cases */

static const sb_case sb_cases[] = {
    {"one block", U, U + 10000, 1, {{U + 1000, U + 2000}}, 1, 0, 1, {{U + 1000, U + 2000}}},
    {"past snd_max", U, U + 10000, 1, {{U + 9000, U + 10001}}, 0, 1, 0, {{0}}},
    {"reversed", U, U + 10000, 1, {{U + 2000, U + 1000}}, 0, 1, 0, {{0}}},
    {"empty", U, U + 10000, 1, {{U + 2000, U + 2000}}, 0, 1, 0, {{0}}},
    {"below snd_una (D-SACK): skipped", U, U + 10000, 1, {{U - 2000, U}}, 0, 0, 0, {{0}}},
    {"D-SACK inside the second block", U, U + 10000, 2,
     {{U + 2000, U + 3000}, {U + 1000, U + 4000}}, 1, 0, 1, {{U + 1000, U + 4000}}},
    {"stale second block below snd_una", U, U + 10000, 2, {{U + 1000, U + 2000}, {U - 2000, U}},
     1, 1, 1, {{U + 1000, U + 2000}}},
    {"across snd_una: trimmed", U, U + 10000, 1, {{U - 500, U + 500}}, 1, 0, 1, {{U, U + 500}}},
    {"overlapping merged", U, U + 10000, 3,
     {{U + 1000, U + 2000}, {U + 1500, U + 3000}, {U + 3000, U + 3500}}, 3, 0, 1,
     {{U + 1000, U + 3500}}},
    {"disjoint sorted", U, U + 10000, 3,
     {{U + 5000, U + 6000}, {U + 1000, U + 2000}, {U + 3000, U + 4000}}, 3, 0, 3,
     {{U + 1000, U + 2000}, {U + 3000, U + 4000}, {U + 5000, U + 6000}}},
    {"mixed good and bad", U, U + 10000, 4,
     {{U + 1000, U + 2000}, {U + 20000, U + 30000}, {U + 4000, U + 3000}, {U + 5000, U + 6000}},
     2, 2, 2, {{U + 1000, U + 2000}, {U + 5000, U + 6000}}},
    {"wrapping sequence space", 0xfffff000u, 0x00001000u, 1, {{0xfffff800u, 0x00000800u}}, 1, 0,
     1, {{0xfffff800u, 0x00000800u}}},
};

static void t_scoreboard(void)
{
    for (size_t i = 0; i < TW_ARRAY_SIZE(sb_cases); i++) {
        const sb_case *k = &sb_cases[i];
        tw_tcp_sackboard sb;
        memset(&sb, 0, sizeof(sb));
        unsigned bad;
        unsigned t = tw__sack_update(&sb, k->una, k->max, k->blk, k->n, &bad);
        CHECKF(t == k->taken && bad == k->bad, "%s: taken %u bad %u", k->name, t, bad);
        CHECKF(sb.n == k->want_n, "%s: %u blocks, want %u", k->name, sb.n, k->want_n);
        for (unsigned b = 0; b < sb.n && b < k->want_n; b++)
            CHECKF(sb.blk[b][0] == k->want[b][0] && sb.blk[b][1] == k->want[b][1],
                   "%s: block %u [%u, %u)", k->name, b, sb.blk[b][0] - U, sb.blk[b][1] - U);
    }
    /* RFC 2883 4: the first block is a D-SACK below the cumulative ACK or
     * inside the second block, never otherwise. */
    const uint32_t d1[2][2] = {{U - 100, U}, {U + 1000, U + 2000}};
    const uint32_t d2[2][2] = {{U + 1200, U + 1300}, {U + 1000, U + 2000}};
    const uint32_t d3[2][2] = {{U + 3000, U + 4000}, {U + 1000, U + 2000}};
    const uint32_t d4[2][2] = {{U + 1000, U + 2100}, {U + 1000, U + 2000}};
    CHECK(tw__sack_is_dsack(d1, 1, U) && tw__sack_is_dsack(d1, 2, U));
    CHECK(tw__sack_is_dsack(d2, 2, U) && !tw__sack_is_dsack(d2, 1, U));
    CHECK(!tw__sack_is_dsack(d3, 2, U) && !tw__sack_is_dsack(d4, 2, U));
    CHECK(!tw__sack_is_dsack(d1, 0, U));
    /* More blocks than the board holds: bounded, sorted, the lowest kept. */
    tw_tcp_sackboard sb;
    memset(&sb, 0, sizeof(sb));
    for (uint32_t b = 12; b-- > 0;) {
        uint32_t blk[1][2] = {{U + 1000 * (2 * b + 1), U + 1000 * (2 * b + 2)}};
        unsigned bad;
        tw__sack_update(&sb, U, U + 100000, blk, 1, &bad);
    }
    CHECKF(sb.n == TW_TCP_SACK_BLOCKS, "board holds %u", sb.n);
    for (unsigned b = 0; b < sb.n; b++)
        CHECKF(sb.blk[b][0] == U + 1000 * (2 * b + 1), "block %u kept in order", b);
    /* A cumulative ACK trims. */
    tw__sack_advance(&sb, U + 3500);
    CHECKF(sb.n == TW_TCP_SACK_BLOCKS - 1 && sb.blk[0][0] == U + 3500 &&
               sb.blk[0][1] == U + 4000, "advance trims: %u [%u, %u)", sb.n,
           sb.blk[0][0] - U, sb.blk[0][1] - U);

    /* IsLost, SetPipe, NextSeg on a window of 10 segments of 1000 bytes:
     * segments 1 and 5 lost, the others SACKed. */
    const uint32_t mss = 1000;
    memset(&sb, 0, sizeof(sb));
    uint32_t blk[2][2] = {{U + 1000, U + 5000}, {U + 6000, U + 10000}};
    unsigned bad;
    tw__sack_update(&sb, U, U + 10000, blk, 2, &bad);
    uint32_t lost = tw__sack_lost_end(&sb, U, mss);
    CHECKF(lost == U + 6000, "lost below %u", lost - U); /* 4000 bytes SACKed above hole 2 */
    CHECKF(tw__sack_pipe(&sb, U, U + 10000, U, mss) == 0, "pipe 0 with both holes lost");
    CHECKF(tw__sack_pipe(&sb, U, U + 10000, U + 1000, mss) == 1000, "pipe counts a resend");
    uint32_t seq, len;
    CHECKF(!tw__sack_next_hole(&sb, U + 1000, lost, mss, &seq, &len) && seq == U + 5000 &&
               len == 1000, "next hole %u+%u", seq - U, len);
    CHECKF(tw__sack_next_hole(&sb, U + 6000, lost, mss, &seq, &len) == -1, "no hole left");
    /* One block of 2 segments above one hole: not lost yet (DupThresh). */
    memset(&sb, 0, sizeof(sb));
    uint32_t b2[1][2] = {{U + 1000, U + 3000}};
    tw__sack_update(&sb, U, U + 3000, b2, 1, &bad);
    CHECKF(tw__sack_lost_end(&sb, U, mss) == U, "2 segments SACKed: not lost");
    CHECKF(tw__sack_pipe(&sb, U, U + 3000, U, mss) == 1000, "pipe 1000");
}

/* ---- through the stack ------------------------------------------------- */

static tw_tcp_conn g_conn;
static tw_tcp_cfg g_cfg;
static tw_tcp_conn *acc(tw_tcp_listener *l, uint32_t ip, uint16_t port, void *u)
{
    (void)l; (void)ip; (void)port; (void)u;
    tw_tcp_set_cfg(&g_conn, &g_cfg);
    return &g_conn;
}

/* The next segment from the stack with its options parsed. */
static int seg_opts(rawpeer *r, seg *s, tw_tcp_opts *o)
{
    uint8_t b[2048];
    uint32_t n;
    while (rp_recv(r, b, &n)) {
        if (!rp_decode(b, n, s))
            continue;
        tw_net_parsed pp;
        CHECK(tw_net_parse(b, n, &pp) >= 0);
        CHECK(tw_tcp_parse_opts(pp.tcp_opts, pp.tcp_opts_len, o) == 0);
        return 1;
    }
    return 0;
}

/* Peer's options: NOP NOP TS [NOP NOP SACK blocks...]. */
static uint32_t peer_opts(uint8_t *o, int ts, uint32_t tsval, uint32_t tsecr)
{
    uint32_t n = 0;
    if (ts) {
        uint8_t t[12] = {1, 1, 8, 10, B4(tsval), B4(tsecr)};
        memcpy(o, t, 12);
        n = 12;
    }
    return n;
}

static void send_opts(rawpeer *r, uint32_t seq, uint32_t ack, uint8_t flags, const void *d,
                      uint32_t dlen, const uint8_t *o, uint32_t on)
{
    uint8_t f[2048];
    uint32_t n = rp_build(f, PEER_PORT, US_PORT, seq, ack, flags, 65535, d, dlen, o, on, 0, 0);
    rp_send_raw(r, f, n);
}

/* Passive open with a Linux SYN (MSS, SACK-permitted, TS, WS); returns
 * the stack's ISS and its SYN-ACK's options in *o. */
static uint32_t open_ts(rawpeer *r, tw_tcp_listener *l, tw_tcp_opts *o, uint32_t tsval)
{
    memset(&g_conn, 0, sizeof(g_conn));
    CHECK(tw_tcp_listen(r->st, l, US_PORT, acc, NULL) == 0);
    const uint8_t syn[20] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, B4(tsval), B4(0), 1, 3, 3, 7};
    send_opts(r, PEER_ISN, 0, TW_TCP_SYN, NULL, 0, syn, 20);
    seg s;
    CHECKF(seg_opts(r, &s, o) && s.flags == (TW_TCP_SYN | TW_TCP_ACK), "SYN-ACK");
    uint8_t po[12];
    uint32_t pn = peer_opts(po, o->has_ts, tsval + 1, o->tsval);
    send_opts(r, PEER_ISN + 1, s.seq + 1, TW_TCP_ACK, NULL, 0, po, pn);
    CHECKF(g_conn.state == TW_TCP_ESTABLISHED, "established: %s", tw_tcp_state_name(g_conn.state));
    return s.seq;
}

/* A stack with the default configuration, connected as above. */
static uint32_t open_default(rawpeer *r, tw_tcp_listener *l, tw_tcp_opts *o, uint32_t tsval)
{
    rp_open(r, NULL);
    memset(&g_cfg, 0, sizeof(g_cfg));
    return open_ts(r, l, o, tsval);
}

static void t_negotiation(void)
{
    /* Both offered: SYN-ACK carries SACK-permitted and TS echoing ours. */
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    tw_tcp_opts o;
    memset(&g_cfg, 0, sizeof(g_cfg));
    open_ts(&r, &l, &o, 4242);
    CHECKF(o.sack_ok && o.has_ts && o.tsecr == 4242 && o.mss == 1460 && o.wscale >= 0,
           "SYN-ACK options sack %u ts %u ecr %u", o.sack_ok, o.has_ts, o.tsecr);
    CHECKF(o.tsval == (uint32_t)(r.now / 1000000) + g_conn.ts_off, "TSval from now (ms)");
    CHECK(tw_tcp_sack_on(&g_conn) && tw_tcp_timestamps_on(&g_conn));
    CHECKF(g_conn.mss == 1460 - 12, "MSS less the timestamp option: %u", g_conn.mss);
    /* A data segment of ours: NOP NOP TS, TSecr = the peer's last TSval. */
    CHECK(tw_tcp_send(&g_conn, "x", 1, r.now) == 1);
    rp_run(&r, 0);
    seg s;
    CHECKF(seg_opts(&r, &s, &o) && s.dlen == 1 && o.has_ts && o.tsecr == 4243, "data TS ecr %u",
           o.tsecr);
    rp_close(&r);

    /* Off on our side: SYN-ACK as before (MSS, WS only). */
    rp_open(&r, NULL);
    g_cfg.no_sack = g_cfg.no_timestamps = 1;
    open_ts(&r, &l, &o, 10);
    CHECKF(!o.sack_ok && !o.has_ts && o.mss == 1460, "no SACK/TS when off");
    CHECK(!tw_tcp_sack_on(&g_conn) && !tw_tcp_timestamps_on(&g_conn) && g_conn.mss == 1460);
    rp_close(&r);

    /* Active open: our SYN offers both; a SYN-ACK without them turns both off. */
    rp_open(&r, NULL);
    tw_tcp_conn c;
    memset(&c, 0, sizeof(c));
    CHECK(tw_tcp_connect(r.st, &c, PEER_IP, 7000, 0, r.now) == 0);
    CHECKF(seg_opts(&r, &s, &o) && s.flags == TW_TCP_SYN && o.sack_ok && o.has_ts &&
               o.tsecr == 0, "SYN offers SACK and TS");
    const uint8_t plain[8] = {2, 4, 0x05, 0xb4, 1, 3, 3, 0};
    uint8_t f[2048];
    uint32_t n = rp_build(f, 7000, s.sport, 5000, s.seq + 1, TW_TCP_SYN | TW_TCP_ACK, 65535,
                          NULL, 0, plain, 8, 0, 0);
    rp_send_raw(&r, f, n);
    CHECK(c.state == TW_TCP_ESTABLISHED && !tw_tcp_sack_on(&c) && !tw_tcp_timestamps_on(&c));
    CHECKF(seg_opts(&r, &s, &o) && !o.has_ts && !o.sack_n, "handshake ACK without options");
    CHECK(c.mss == 1460);
    rp_close(&r);
}

static void t_sack_blocks_sent(void)
{
    rawpeer r;
    tw_tcp_listener l;
    tw_tcp_opts o;
    uint32_t iss = open_default(&r, &l, &o, 100);
    uint8_t d[100];
    memset(d, 'a', sizeof(d));
    uint8_t po[12];
    /* Holes at 0-100, 200-300, 400-500: segments at 100, 300, 500, 700. */
    const uint32_t at[4] = {100, 300, 500, 700};
    seg s;
    for (int i = 0; i < 4; i++) {
        peer_opts(po, 1, 200 + (uint32_t)i, 0);
        send_opts(&r, PEER_ISN + 1 + at[i], iss + 1, TW_TCP_ACK, d, 100, po, 12);
        rp_run(&r, 0);
        CHECKF(seg_opts(&r, &s, &o) && s.ack == PEER_ISN + 1, "dup ACK %d", i);
        unsigned want = i + 1 < 3 ? (unsigned)i + 1 : 3; /* 3 blocks beside TS */
        CHECKF(o.sack_n == want, "ACK %d has %u blocks, want %u", i, o.sack_n, want);
        CHECKF(o.sack[0][0] == PEER_ISN + 1 + at[i] && o.sack[0][1] == PEER_ISN + 1 + at[i] + 100,
               "most recent first (ACK %d)", i);
        if (i >= 1)
            CHECKF(o.sack[1][0] == PEER_ISN + 1 + at[i - 1], "then the one before");
    }
    /* Filling the first hole joins 0-200 to the stream: the blocks left. */
    peer_opts(po, 1, 210, 0);
    send_opts(&r, PEER_ISN + 1, iss + 1, TW_TCP_ACK, d, 100, po, 12);
    rp_run(&r, 0);
    CHECKF(seg_opts(&r, &s, &o) && s.ack == PEER_ISN + 1 + 200 && o.sack_n == 3 &&
               o.sack[0][0] == PEER_ISN + 1 + 700, "after the fill: ack %u blocks %u",
           s.ack - PEER_ISN - 1, o.sack_n);
    CHECK(tw_net_get_stats(r.st)->tx_sack_blocks >= 9);
    rp_close(&r);
}

/* Frames from the peer that reach the stack in one rx burst. */
static void send_burst(rawpeer *r, const uint32_t *at, unsigned n, uint32_t ack,
                       const uint8_t *d, uint32_t len, uint32_t tsval)
{
    for (unsigned i = 0; i < n; i++) {
        uint8_t f[2048], po[12];
        peer_opts(po, 1, tsval + i, 0);
        uint32_t fl = rp_build(f, PEER_PORT, US_PORT, PEER_ISN + 1 + at[i], ack, TW_TCP_ACK, 65535,
                               d, len, po, 12, 0, 0);
        tw_pkt p;
        CHECK(tw_port_alloc_burst(r->peer_port, &p, 1) == 1);
        memcpy(p.data, f, fl);
        p.len = fl;
        CHECK(tw_port_tx_burst(r->peer_port, &p, 1) == 1);
    }
    rp_run(r, 0);
}

/* In-order segments of one rx burst share one ACK; each segment past a
 * hole, or filling one, gets an ACK of its own with its block first
 * (RFC 5681 4.2, RFC 2018 4), even when they all came in one burst. */
static void t_ack_per_gap_segment(void)
{
    rawpeer r;
    tw_tcp_listener l;
    tw_tcp_opts o;
    uint32_t iss = open_default(&r, &l, &o, 100);
    uint8_t d[100];
    memset(d, 'b', sizeof(d));
    seg s;
    /* Four in order: one ACK for the burst (one per poll would be two). */
    const uint32_t inorder[4] = {0, 100, 200, 300};
    send_burst(&r, inorder, 4, iss + 1, d, 100, 200);
    CHECKF(seg_opts(&r, &s, &o) && s.ack == PEER_ISN + 1 + 400 && o.sack_n == 0,
           "in-order burst: ack %u", s.ack - PEER_ISN - 1);
    CHECKF(!seg_opts(&r, &s, &o), "in-order burst: a second ACK (ack %u)",
           s.ack - PEER_ISN - 1);
    /* Four past holes (400-500, 600-700, 800-900 missing), one burst. */
    const uint32_t past[4] = {500, 700, 900, 1000};
    send_burst(&r, past, 4, iss + 1, d, 100, 210);
    const uint32_t first[4] = {500, 700, 900, 900}; /* 900-1100 is one range */
    for (unsigned i = 0; i < 4; i++) {
        CHECKF(seg_opts(&r, &s, &o) && s.ack == PEER_ISN + 1 + 400 && s.dlen == 0,
               "past a hole: ACK %u of 4", i + 1);
        CHECKF(o.sack_n >= 1 && o.sack[0][0] == PEER_ISN + 1 + first[i],
               "ACK %u: first block at %u, want %u", i + 1, o.sack[0][0] - PEER_ISN - 1,
               first[i]);
    }
    CHECKF(!seg_opts(&r, &s, &o), "past a hole: a fifth ACK");
    /* Two fills in one burst: the first hole whole, the second in part. */
    const uint32_t fill[2] = {400, 600};
    send_burst(&r, fill, 2, iss + 1, d, 100, 220);
    CHECKF(seg_opts(&r, &s, &o) && s.ack == PEER_ISN + 1 + 600, "fill 1: ack %u",
           s.ack - PEER_ISN - 1);
    CHECKF(seg_opts(&r, &s, &o) && s.ack == PEER_ISN + 1 + 800 && o.sack_n == 1 &&
               o.sack[0][0] == PEER_ISN + 1 + 900, "fill 2: ack %u", s.ack - PEER_ISN - 1);
    CHECKF(!seg_opts(&r, &s, &o), "fills: a third ACK");
    rp_close(&r);
}

/* RFC 2883: a segment that arrived before, below the cumulative ACK or
 * inside a held range, is reported first in the next ACK, once; and a
 * D-SACK from the peer is counted, not boarded, and is not a duplicate
 * ACK. */
static void t_dsack(void)
{
    rawpeer r;
    tw_tcp_listener l;
    tw_tcp_opts o;
    uint32_t iss = open_default(&r, &l, &o, 100);
    const tw_net_stats *st = tw_net_get_stats(r.st);
    uint8_t d[200];
    memset(d, 'c', sizeof(d));
    uint8_t po[12];
    seg s;
    const uint32_t P = PEER_ISN + 1;
#define PEER_SEG(at, len, tsv)                                                       \
    do {                                                                             \
        peer_opts(po, 1, (tsv), 0);                                                  \
        send_opts(&r, P + (at), iss + 1, TW_TCP_ACK | TW_TCP_PSH, d, (len), po, 12); \
        rp_run(&r, 0);                                                               \
    } while (0)
    PEER_SEG(0, 100, 200);
    r.now += 1000000;
    rp_run(&r, 0);
    CHECKF(seg_opts(&r, &s, &o) && s.ack == P + 100 && o.sack_n == 0, "in order: ack %u",
           s.ack - P);
    /* The same segment again: the ACK's one block is it, below the ACK. */
    PEER_SEG(0, 100, 201);
    CHECKF(seg_opts(&r, &s, &o) && s.ack == P + 100 && o.sack_n == 1 && o.sack[0][0] == P &&
               o.sack[0][1] == P + 100, "old duplicate: %u blocks [%u, %u)", o.sack_n,
           o.sack_n ? o.sack[0][0] - P : 0, o.sack_n ? o.sack[0][1] - P : 0);
    CHECK(st->tx_dsack == 1 && st->rx_tcp_dup == 1);
    /* Held out of order, then again: the duplicate, then its range. */
    PEER_SEG(300, 100, 202);
    CHECKF(seg_opts(&r, &s, &o) && o.sack_n == 1 && o.sack[0][0] == P + 300, "held");
    PEER_SEG(300, 100, 203);
    CHECKF(seg_opts(&r, &s, &o) && o.sack_n == 2 && o.sack[0][0] == P + 300 &&
               o.sack[0][1] == P + 400 && o.sack[1][0] == P + 300 && o.sack[1][1] == P + 400,
           "held duplicate: %u blocks", o.sack_n);
    CHECK(st->tx_dsack == 2);
    /* Reported once: the next ACK has the SACK blocks only. */
    PEER_SEG(500, 100, 204);
    CHECKF(seg_opts(&r, &s, &o) && o.sack_n == 2 && o.sack[0][0] == P + 500 &&
               o.sack[1][0] == P + 300, "no D-SACK twice: %u blocks, first at %u", o.sack_n,
           o.sack_n ? o.sack[0][0] - P : 0);
    /* Partly old (50-100), partly new (100-250): the old part first. */
    PEER_SEG(50, 200, 205);
    CHECKF(seg_opts(&r, &s, &o) && s.ack == P + 250 && o.sack_n == 3 && o.sack[0][0] == P + 50 &&
               o.sack[0][1] == P + 100 && o.sack[1][0] == P + 500 && o.sack[2][0] == P + 300,
           "partial duplicate: ack %u, %u blocks", s.ack - P, o.sack_n);
    CHECK(st->tx_dsack == 3);
    rp_run(&r, 0);
    rp_drain(&r);

    /* Sender: four segments out, the first ACKed; then three ACKs that
     * only D-SACK the first again.  Counted, not boarded, no recovery. */
    uint8_t big[400];
    memset(big, 'd', sizeof(big));
    CHECK(tw_tcp_send(&g_conn, big, sizeof(big), r.now) == (long)sizeof(big));
    rp_run(&r, 0);
    uint32_t tsv = 0, n = 0;
    while (seg_opts(&r, &s, &o))
        if (s.dlen) {
            n++;
            tsv = o.tsval;
        }
    CHECKF(n >= 1, "data out (%u segments)", n);
    uint32_t base = iss + 1, una = base + 100;
    uint8_t ack_o[24];
    for (int k = 0; k < 4; k++) {
        uint32_t pn = peer_opts(ack_o, 1, 300 + (uint32_t)k, tsv);
        uint8_t sk[12] = {1, 1, 5, 10, B4(base), B4(base + 100)};
        memcpy(ack_o + pn, sk, 12);
        send_opts(&r, P + 250, una, TW_TCP_ACK, NULL, 0, ack_o, k ? pn + 12 : pn);
    }
    CHECKF(st->rx_dsack == 3 && st->rx_sack_bad == 0 && g_conn.sb.n == 0,
           "D-SACKs received %llu, refused %llu, board %u", (unsigned long long)st->rx_dsack,
           (unsigned long long)st->rx_sack_bad, g_conn.sb.n);
    CHECKF(st->fast_retransmits == 0 && !(g_conn.flags & TF_IN_RECOVERY) && g_conn.dupacks == 0,
           "D-SACKs are not duplicate ACKs: %u dupacks", g_conn.dupacks);
#undef PEER_SEG
    rp_close(&r);
}

static void t_paws(void)
{
    rawpeer r;
    tw_tcp_listener l;
    tw_tcp_opts o;
    uint32_t iss = open_default(&r, &l, &o, 5000);
    uint8_t po[12];
    seg s;
    /* In-order data with TSval 6000: taken, TS.Recent = 6000. */
    peer_opts(po, 1, 6000, o.tsval);
    send_opts(&r, PEER_ISN + 1, iss + 1, TW_TCP_ACK | TW_TCP_PSH, "abc", 3, po, 12);
    rp_run(&r, 1);
    CHECKF(tw_tcp_readable(&g_conn) == 3 && g_conn.ts_recent == 6000, "data taken, recent %u",
           g_conn.ts_recent);
    CHECK(seg_opts(&r, &s, &o) && s.ack == PEER_ISN + 4 && o.tsecr == 6000);
    /* An old duplicate: in the window (new sequence numbers) but TSval
     * 5500 < TS.Recent: refused, acknowledged, not delivered. */
    peer_opts(po, 1, 5500, 0);
    send_opts(&r, PEER_ISN + 4, iss + 1, TW_TCP_ACK | TW_TCP_PSH, "OLD", 3, po, 12);
    rp_run(&r, 1);
    CHECKF(tw_tcp_readable(&g_conn) == 3, "old duplicate not delivered");
    CHECKF(tw_net_get_stats(r.st)->rx_paws_drop == 1, "PAWS drop counted");
    CHECKF(seg_opts(&r, &s, &o) && s.ack == PEER_ISN + 4 && !s.dlen, "PAWS answered with ACK");
    /* No timestamp at all on a timestamped connection: dropped. */
    send_opts(&r, PEER_ISN + 4, iss + 1, TW_TCP_ACK | TW_TCP_PSH, "NTS", 3, NULL, 0);
    CHECKF(tw_tcp_readable(&g_conn) == 3 && tw_net_get_stats(r.st)->rx_ts_missing == 1,
           "missing TS dropped");
    /* The same data with a current TSval: taken. */
    peer_opts(po, 1, 6001, 0);
    send_opts(&r, PEER_ISN + 4, iss + 1, TW_TCP_ACK | TW_TCP_PSH, "new", 3, po, 12);
    CHECKF(tw_tcp_readable(&g_conn) == 6, "current TSval taken");
    rp_run(&r, 1); /* its ACK: Last.ACK.sent moves to the new data's end */
    rp_drain(&r);
    /* 24 days and more idle: TS.Recent no longer trusted, an older TSval
     * (the peer's clock wrapped, or it rebooted) is taken. */
    r.now += 25ull * 86400 * 1000000000ull;
    peer_opts(po, 1, 10, 0);
    send_opts(&r, PEER_ISN + 7, iss + 1, TW_TCP_ACK | TW_TCP_PSH, "ok!", 3, po, 12);
    CHECKF(tw_tcp_readable(&g_conn) == 9 && g_conn.ts_recent == 10, "24-day rule: readable %zu",
           tw_tcp_readable(&g_conn));
    CHECK(tw_net_get_stats(r.st)->rx_paws_drop == 1);
    /* RST exception: a RST with an old TSval (or none) at rcv_nxt resets. */
    peer_opts(po, 1, 1, 0);
    send_opts(&r, PEER_ISN + 10, 0, TW_TCP_RST, NULL, 0, po, 12);
    CHECKF(g_conn.state == TW_TCP_CLOSED, "RST with an old TSval resets: %s",
           tw_tcp_state_name(g_conn.state));
    rp_close(&r);
}

static void t_ts_rtt_and_sack_recovery(void)
{
    rawpeer r;
    tw_tcp_listener l;
    tw_tcp_opts o;
    uint32_t iss = open_default(&r, &l, &o, 100);
    /* Ten segments out; the peer loses the first and the fifth and SACKs
     * the rest, three dup ACKs. */
    static uint8_t buf[14480];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)i;
    CHECK(tw_tcp_send(&g_conn, buf, sizeof(buf), r.now) == (long)sizeof(buf));
    rp_run(&r, 0);
    seg s;
    uint32_t mss = g_conn.mss, n = 0, tsv = 0;
    while (seg_opts(&r, &s, &o))
        if (s.dlen) {
            n++;
            tsv = o.tsval;
        }
    CHECKF(n == 10 && mss == 1448, "10 segments of %u (%u)", mss, n);
    uint8_t po[40];
    uint32_t base = iss + 1;
    for (int k = 0; k < 3; k++) {
        uint32_t pn = peer_opts(po, 1, 200 + (uint32_t)k, tsv);
        uint32_t b[2][2] = {{base + mss, base + 4 * mss}, {base + 5 * mss, base + (6u + k) * mss}};
        uint8_t sk[20] = {1, 1, 5, 18, B4(b[1][0]), B4(b[1][1]), B4(b[0][0]), B4(b[0][1])};
        memcpy(po + pn, sk, 20);
        r.now += 200000; /* 0.2 ms apart: within the loss probe's 1 ms */
        send_opts(&r, PEER_ISN + 1, base, TW_TCP_ACK, NULL, 0, po, pn + 20);
    }
    const tw_net_stats *st = tw_net_get_stats(r.st);
    CHECKF(st->sack_recoveries == 1 && st->rx_sack_blocks == 6, "recovery %llu blocks %llu",
           (unsigned long long)st->sack_recoveries, (unsigned long long)st->rx_sack_blocks);
    rp_run(&r, 0);
    /* Resent: the first hole, then the second (lost by the SACKed bytes
     * above it): nothing SACKed goes again. */
    int got1 = 0, got5 = 0, other = 0;
    while (seg_opts(&r, &s, &o))
        if (s.dlen) {
            if (s.seq == base)
                got1++;
            else if (s.seq == base + 4 * mss)
                got5++;
            else if (SEQ_LT(s.seq, base + 8 * mss))
                other++;
        }
    CHECKF(got1 == 1 && got5 == 1 && other == 0, "resent holes: first %d fifth %d other %d",
           got1, got5, other);
    /* The ACK of everything echoes the retransmission's TSval, 3 ms later:
     * a timestamp RTT sample although Karn stopped the timed one. */
    uint32_t pn = peer_opts(po, 1, 300, tw__tcp_tsval(&g_conn, r.now));
    r.now += 3000000;
    send_opts(&r, PEER_ISN + 1, base + (uint32_t)sizeof(buf), TW_TCP_ACK, NULL, 0, po, pn);
    CHECKF(tw_tcp_unacked(&g_conn) == 0 && !(g_conn.flags & TF_IN_RECOVERY), "recovered");
    CHECKF(st->ts_rtt_samples == 1, "TS RTT samples %llu", (unsigned long long)st->ts_rtt_samples);
    rp_close(&r);
}

/* Opens a connection (Linux's SYN), writes n bytes and lets the stack
 * send what its window allows, dropping it all; returns the first data
 * byte's sequence number. */
static uint32_t open_send(rawpeer *r, tw_tcp_listener *l, tw_tcp_opts *o, const uint8_t *buf,
                          size_t n)
{
    memset(&g_cfg, 0, sizeof(g_cfg));
    uint32_t iss = open_ts(r, l, o, 100);
    CHECK(tw_tcp_send(&g_conn, buf, n, r->now) == (long)n);
    rp_run(r, 0);
    rp_drain(r);
    return iss + 1;
}

/* A lost tail: the last two of ten segments never arrive and no ACK
 * says so.  The loss probe (2 SRTT, at least 1 ms, without progress)
 * resends the last segment; its SACK shows the hole below it, which is
 * resent at once: no RTO. */
static void t_tail_loss_probe(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    tw_tcp_opts o;
    static uint8_t buf[14480];
    uint32_t base = open_send(&r, &l, &o, buf, sizeof(buf));
    uint32_t mss = g_conn.mss;
    uint8_t po[40];
    uint32_t pn = peer_opts(po, 1, 200, tw__tcp_tsval(&g_conn, r.now));
    r.now += 100000;
    send_opts(&r, PEER_ISN + 1, base + 8 * mss, TW_TCP_ACK, NULL, 0, po, pn);
    rp_drain(&r);
    const tw_net_stats *st = tw_net_get_stats(r.st);
    CHECK(st->tlp_probes == 0);
    /* No ACK for 1.5 ms: the probe, the last segment again. */
    r.now += 1500000;
    rp_run(&r, 0);
    seg s;
    int probe = 0, other = 0;
    while (seg_opts(&r, &s, &o))
        if (s.dlen)
            *(s.seq == base + 9 * mss ? &probe : &other) += 1;
    CHECKF(probe == 1 && other == 0 && st->tlp_probes == 1 && st->rto_fires == 0,
           "probe %d other %d probes %llu", probe, other, (unsigned long long)st->tlp_probes);
    /* Its SACK: the ninth segment is the hole, resent now. */
    pn = peer_opts(po, 1, 201, tw__tcp_tsval(&g_conn, r.now));
    uint32_t b0 = base + 9 * mss, b1 = base + 10 * mss;
    uint8_t sk[12] = {1, 1, 5, 10, B4(b0), B4(b1)};
    memcpy(po + pn, sk, 12);
    r.now += 100000;
    send_opts(&r, PEER_ISN + 1, base + 8 * mss, TW_TCP_ACK, NULL, 0, po, pn + 12);
    rp_run(&r, 0);
    int hole = 0;
    other = 0;
    while (seg_opts(&r, &s, &o))
        if (s.dlen)
            *(s.seq == base + 8 * mss ? &hole : &other) += 1;
    CHECKF(hole == 1 && other == 0 && st->sack_recoveries == 1, "hole %d other %d", hole, other);
    pn = peer_opts(po, 1, 202, tw__tcp_tsval(&g_conn, r.now));
    r.now += 100000;
    send_opts(&r, PEER_ISN + 1, base + (uint32_t)sizeof(buf), TW_TCP_ACK, NULL, 0, po, pn);
    CHECKF(tw_tcp_unacked(&g_conn) == 0 && st->rto_fires == 0, "all acknowledged, no RTO");
    rp_close(&r);
}

/* Three duplicate ACKs SACKing segments 2..4 of ten, arriving gap[k] ns
 * after the one before (the first after the data went): recovery. */
static void dupacks_at(rawpeer *r, uint32_t base, uint32_t mss, const int64_t gap[3])
{
    uint8_t po[40];
    for (uint32_t k = 0; k < 3; k++) {
        uint32_t pn = peer_opts(po, 1, 200 + k, tw__tcp_tsval(&g_conn, r->now));
        uint32_t b0 = base + mss, b1 = base + (2 + k) * mss;
        uint8_t sk[12] = {1, 1, 5, 10, B4(b0), B4(b1)};
        memcpy(po + pn, sk, 12);
        r->now += gap[k];
        send_opts(r, PEER_ISN + 1, base, TW_TCP_ACK, NULL, 0, po, pn + 12);
    }
}

static void three_dupacks(rawpeer *r, uint32_t base, uint32_t mss)
{
    static const int64_t gap[3] = {100000, 100000, 100000};
    dupacks_at(r, base, mss, gap);
}

/* Sets the RTT history a test wants: a least RTT and a long SRTT (the
 * handshake in zero time leaves 1 ns of both). */
static void set_rtt(uint64_t rtt_min, uint64_t srtt)
{
    g_conn.rtt_min_ns = rtt_min;
    g_conn.srtt_ns = srtt;
}

/* The loss response by the RTT at the loss (loss_rtt_pct): within the
 * bound the recovery leaves cwnd and ssthresh alone, and the ACK that
 * ends it grows cwnd by all it covers (slow start goes on); past it (or
 * without a timed sample, or with the rule off) ssthresh = 0.7 x
 * FlightSize, which is cwnd when the recovery ends.  The RTT is the
 * least of the samples over the last two SRTT: here the three SACKs time
 * segments 2..4, sent together, gap[0], gap[0] + gap[1] and the sum of
 * the three after they went. */
typedef struct {
    uint64_t rtt_min;
    int64_t gap[3];
    unsigned pct;
    int keep;
    int how; /* 0: as it comes; 1: no sample at all; 2: only samples older
              * than two SRTT and a latest one of rtt_last */
    uint64_t rtt_last;
} loss_case;
static const loss_case loss_cases[] = {
    {300000, {300000, 100000, 100000}, 0, 1, 0, 0},   /* at the least RTT: random loss */
    {300000, {600000, 100000, 100000}, 0, 1, 0, 0},   /* twice it: still within 200% */
    {300000, {600001, 100000, 100000}, 0, 0, 0, 0},   /* past it: a queue built up */
    {300000, {300000, 100000, 4700000}, 0, 1, 0, 0},  /* one late sample (5 ms): the
                                                       * least of the recent ones decides */
    {0, {300000, 100000, 100000}, 0, 0, 1, 0},        /* no timed sample yet */
    {300000, {300000, 100000, 100000}, 0, 0, 2, 900000}, /* only stale windows: the latest */
    {300000, {300000, 100000, 100000}, 0, 1, 2, 500000}, /* the same, within the bound */
    {300000, {300000, 100000, 100000}, 1, 0, 0, 0},   /* the rule off: every loss decreases */
    {300000, {900000, 100000, 100000}, 400, 1, 0, 0}  /* a wider bound */
};

static void t_loss_response(void)
{
    for (size_t i = 0; i < TW_ARRAY_SIZE(loss_cases); i++) {
        const loss_case *lc = &loss_cases[i];
        rawpeer r;
        tw_net_config nc;
        tw_net_config_init(&nc, US_IP);
        nc.isn_secret[0] = 1;
        nc.loss_rtt_pct = lc->pct;
        rp_open(&r, &nc);
        tw_tcp_listener l;
        tw_tcp_opts o;
        static uint8_t buf[14480];
        uint32_t base = open_send(&r, &l, &o, buf, sizeof(buf));
        set_rtt(lc->rtt_min, 10000000);
        g_conn.rtt_last_ns = lc->rtt_last;
        if (lc->how) {
            g_conn.rs_n = 0; /* nothing timed in flight */
            g_conn.rtt_win_at_ns = lc->how == 2 ? r.now - 30000000 : 0;
            g_conn.rtt_win_ns[0] = g_conn.rtt_win_ns[1] = lc->how == 2 ? lc->rtt_min : 0;
        }
        uint32_t mss = g_conn.mss, flight = 10 * mss;
        uint32_t ss0 = g_conn.ssthresh, cw0 = g_conn.cwnd;
        dupacks_at(&r, base, mss, lc->gap);
        const tw_net_stats *st = tw_net_get_stats(r.st);
        uint32_t want = lc->keep ? ss0 : flight * 7 / 10;
        uint32_t want_cw = lc->keep ? cw0 : want;
        CHECKF(st->sack_recoveries == 1 && g_conn.ssthresh == want && g_conn.cwnd == want_cw &&
                   st->sack_random_losses == (lc->keep ? 1u : 0u),
               "loss case %zu: ssthresh %u cwnd %u, want %u and %u, kept %llu (RTT least %llu, "
               "latest %llu)",
               i, g_conn.ssthresh, g_conn.cwnd, want, want_cw,
               (unsigned long long)st->sack_random_losses, (unsigned long long)g_conn.rtt_min_ns,
               (unsigned long long)g_conn.rtt_last_ns);
        /* What stays timed: segments 5..10; 2..4 were taken by the SACKs
         * and the first, resent, is void (Karn), as is the tenth when the
         * window let the rescue retransmission resend it. */
        if (!lc->how) {
            int ok = g_conn.rs_n == (st->rescue_retransmits ? 5u : 6u);
            for (uint32_t k = 0; ok && k < g_conn.rs_n; k++)
                ok = g_conn.rs_end[k] == base + (5 + k) * mss;
            CHECKF(ok, "loss case %zu: %u segments timed, the first ending at %u (base %u)", i,
                   g_conn.rs_n, g_conn.rs_n ? g_conn.rs_end[0] - base : 0, base);
        }
        /* Everything acknowledged: the recovery ends. */
        uint8_t po[40];
        uint32_t pn = peer_opts(po, 1, 300, tw__tcp_tsval(&g_conn, r.now));
        r.now += 100000;
        send_opts(&r, PEER_ISN + 1, base + (uint32_t)sizeof(buf), TW_TCP_ACK, NULL, 0, po, pn);
        want_cw = lc->keep ? cw0 + flight : want;
        CHECKF(tw_tcp_unacked(&g_conn) == 0 && g_conn.cwnd == want_cw &&
                   g_conn.ssthresh == want && g_conn.rs_n == 0,
               "loss case %zu, recovered: cwnd %u ssthresh %u, want %u and %u", i, g_conn.cwnd,
               g_conn.ssthresh, want_cw, want);
        rp_close(&r);
    }
}

/* The peer closes its window in the middle of a SACK recovery (a partial
 * ACK with window 0) and the update that reopens it is lost: the RTO
 * must hand over to the persist timer, whose probes get the new window,
 * and the transfer ends.  (The recovery once re-armed the RTO on every
 * turn instead, and nothing was ever sent again.) */
static void t_zero_window_in_recovery(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    tw_tcp_opts o;
    static uint8_t buf[14480];
    uint32_t base = open_send(&r, &l, &o, buf, sizeof(buf));
    uint32_t mss = g_conn.mss;
    three_dupacks(&r, base, mss);
    const tw_net_stats *st = tw_net_get_stats(r.st);
    CHECK(st->sack_recoveries == 1);
    uint8_t po[40], f[2048];
    uint32_t pn = peer_opts(po, 1, 210, tw__tcp_tsval(&g_conn, r.now));
    r.now += 100000;
    rp_send_raw(&r, f, rp_build(f, PEER_PORT, US_PORT, PEER_ISN + 1, base + 4 * mss, TW_TCP_ACK,
                                0, NULL, 0, po, pn, 0, 0));
    rp_drain(&r);
    CHECKF(g_conn.snd_wnd == 0 && tw_tcp_unacked(&g_conn) == 6u * mss, "window %u, unacked %zu",
           g_conn.snd_wnd, tw_tcp_unacked(&g_conn));
    /* Three seconds, nothing from the peer: probes, nothing resent into
     * the closed window. */
    int data = 0;
    seg s;
    for (int i = 0; i < 300; i++) {
        rp_run(&r, 10000000);
        while (seg_opts(&r, &s, &o))
            data += s.dlen != 0;
    }
    CHECKF(st->zero_window_probes >= 1 && data == 0, "probes %llu, data segments %d",
           (unsigned long long)st->zero_window_probes, data);
    /* The answer to a probe opens the window: the rest goes, and is
     * acknowledged. */
    pn = peer_opts(po, 1, 220, tw__tcp_tsval(&g_conn, r.now));
    send_opts(&r, PEER_ISN + 1, base + 4 * mss, TW_TCP_ACK, NULL, 0, po, pn);
    data = 0;
    while (seg_opts(&r, &s, &o))
        data += s.dlen != 0;
    pn = peer_opts(po, 1, 230, tw__tcp_tsval(&g_conn, r.now));
    r.now += 100000;
    send_opts(&r, PEER_ISN + 1, base + (uint32_t)sizeof(buf), TW_TCP_ACK, NULL, 0, po, pn);
    CHECKF(data >= 1 && tw_tcp_unacked(&g_conn) == 0, "data segments %d, unacked %zu", data,
           tw_tcp_unacked(&g_conn));
    rp_close(&r);
}

/* A lost retransmission: the first of twenty segments is lost, and so is
 * its fast retransmission.  A SACK of more old data says nothing (those
 * were sent before the resend); the SACK of a segment first sent after
 * it does: the hole goes again at once, no probe and no RTO. */
static void t_lost_retransmission(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    tw_tcp_listener l;
    tw_tcp_opts o;
    static uint8_t buf[20 * 1448];
    uint32_t base = open_send(&r, &l, &o, buf, sizeof(buf));
    uint32_t mss = g_conn.mss;
    set_rtt(100000, 10000000); /* the SACKs' 100-300 us: random loss, cwnd kept */
    three_dupacks(&r, base, mss);
    rp_run(&r, 0);
    seg s;
    int head = 0, fresh = 0;
    while (seg_opts(&r, &s, &o)) {
        if (s.dlen && s.seq == base)
            head++;
        else if (s.dlen && SEQ_GEQ(s.seq, base + 10 * mss))
            fresh++;
    }
    CHECKF(head == 1 && fresh >= 1, "recovery: head resent %d, new segments %d", head, fresh);
    const tw_net_stats *st = tw_net_get_stats(r.st);
    /* Rows: SACK blocks (most recent first), and whether the head goes. */
    static const struct {
        uint32_t b[2][2]; /* in segments from base */
        int resend;
    } rows[] = {{{{1, 10}, {0, 0}}, 0}, {{{11, 12}, {1, 10}}, 1}};
    for (size_t i = 0; i < TW_ARRAY_SIZE(rows); i++) {
        uint8_t po[40];
        uint32_t pn = peer_opts(po, 1, 300 + (uint32_t)i, tw__tcp_tsval(&g_conn, r.now));
        unsigned nb = rows[i].b[1][1] ? 2 : 1;
        po[pn++] = 1;
        po[pn++] = 1;
        po[pn++] = 5;
        po[pn++] = (uint8_t)(2 + 8 * nb);
        for (unsigned k = 0; k < nb; k++) {
            uint32_t e[2] = {base + rows[i].b[k][0] * mss, base + rows[i].b[k][1] * mss};
            uint8_t w[8] = {B4(e[0]), B4(e[1])};
            memcpy(po + pn, w, 8);
            pn += 8;
        }
        r.now += 100000;
        send_opts(&r, PEER_ISN + 1, base, TW_TCP_ACK, NULL, 0, po, pn);
        rp_run(&r, 0);
        head = 0;
        while (seg_opts(&r, &s, &o))
            if (s.dlen && s.seq == base)
                head++;
        CHECKF(head == rows[i].resend && st->lost_retransmits == (uint64_t)rows[i].resend,
               "row %zu: head resent %d, lost retransmissions %llu", i, head,
               (unsigned long long)st->lost_retransmits);
    }
    CHECKF(st->tlp_probes == 0 && st->rto_fires == 0, "no probe, no RTO");
    uint8_t po[40];
    uint32_t pn = peer_opts(po, 1, 400, tw__tcp_tsval(&g_conn, r.now));
    r.now += 100000;
    send_opts(&r, PEER_ISN + 1, g_conn.snd_max, TW_TCP_ACK, NULL, 0, po, pn);
    CHECKF(!(g_conn.flags & TF_IN_RECOVERY), "recovery over");
    rp_close(&r);
}

int main(void)
{
    t_parse_opts();
    t_scoreboard();
    t_negotiation();
    t_sack_blocks_sent();
    t_ack_per_gap_segment();
    t_dsack();
    t_paws();
    t_ts_rtt_and_sack_recovery();
    t_tail_loss_probe();
    t_loss_response();
    t_lost_retransmission();
    t_zero_window_in_recovery();
    return tw_check_done("net_sack_test");
}
