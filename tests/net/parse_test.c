/* Table-driven tests of the packet layer: golden frames (hand-built
 * Ethernet/ARP/IPv4/ICMP/TCP with checksums computed by an independent
 * implementation and checked again here), every truncation of each valid
 * frame parsed from a buffer that ends at a PROT_NONE guard page, malformed
 * variants, checksum properties (RFC 1071 / RFC 1624), and the stack's
 * answers to an ARP request and an ICMP echo compared byte for byte with
 * golden replies; which reason each refused frame is counted under. */
#include <sys/mman.h>
#include <unistd.h>

#include "rawpeer.h"

/* g_tcp_syn */
static const char g_tcp_syn[] =
    "0200000000010200000000020800450000301c46400040060a800a0000020a00"
    "0001c000138801020304000000007002ffff98870000020405b401030307"
    ;
/* g_tcp_data */
static const char g_tcp_data[] =
    "02000000000102000000000208004500002e1c47400040060a810a0000020a00"
    "0001c000138801020305a0b0c0d1501801f61ce0000068656c6c6f0a"
    ;
/* g_arp_req */
static const char g_arp_req[] =
    "ffffffffffff020000000002080600010800060400010200000000020a000002"
    "0000000000000a000001000000000000000000000000000000000000"
    ;
/* g_icmp_req */
static const char g_icmp_req[] =
    "02000000000102000000000208004500002400014000400126d60a0000020a00"
    "00010800543512340001616263646566676800000000000000000000"
    ;
/* g_icmp_rep */
static const char g_icmp_rep[] =
    "02000000000202000000000108004500002400004000400126d70a0000010a00"
    "000200005c3512340001616263646566676800000000000000000000"
    ;
/* g_arp_rep */
static const char g_arp_rep[] =
    "020000000002020000000001080600010800060400020200000000010a000001"
    "0200000000020a000002000000000000000000000000000000000000"
    ;
/* g_ip_opts */
static const char g_ip_opts[] =
    "02000000000102000000000208004600002c1c464000400607830a0000020a00"
    "000101010100c00013880000000700000009501003e8c45100000000"
    ;
/* g_ip_frag */
static const char g_ip_frag[] =
    "0200000000010200000000020800450000281c46200040062a880a0000020a00"
    "0001c00013880000000700000009501003e8c4510000000000000000"
    ;

static uint32_t unhex(const char *h, uint8_t *out)
{
    uint32_t n = 0;
    for (; h[0] && h[1]; h += 2) {
        unsigned v;
        sscanf(h, "%2x", &v);
        out[n++] = (uint8_t)v;
    }
    return n;
}

/* A byte-at-a-time reference checksum, independent of tw_net_csum_add. */
static uint16_t ref_csum(const uint8_t *p, uint32_t n)
{
    uint32_t s = 0;
    for (uint32_t i = 0; i < n; i += 2)
        s += (uint32_t)(p[i] << 8) | (i + 1 < n ? p[i + 1] : 0);
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

typedef struct pcase {
    const char *name;
    const char *hex;
    int ret;            /* expected tw_net_parse result */
    uint16_t ethertype;
    uint8_t proto;
    uint16_t sport, dport;
    uint32_t payload_len, opts_len;
    uint32_t need;      /* shortest length that parses (truncations below it: -2) */
} pcase;

static const pcase cases[] = {
    {"tcp_syn_opts", g_tcp_syn, 62, 0x0800, 6, 49152, 5000, 0, 8, 62},
    {"tcp_data", g_tcp_data, 54, 0x0800, 6, 49152, 5000, 6, 0, 60},
    {"arp_request", g_arp_req, 42, 0x0806, 0, 0, 0, 28, 0, 42},
    {"icmp_echo", g_icmp_req, 34, 0x0800, 1, 0, 0, 16, 0, 50},
    {"ip_options", g_ip_opts, 58, 0x0800, 6, 49152, 5000, 0, 0, 58},
    {"ip_fragment", g_ip_frag, -1, 0x0800, 6, 0, 0, 0, 0, 54},
};

static uint8_t *guard_page;
static long page;

/* Copies len bytes so that they end exactly at the guard page. */
static const uint8_t *at_guard(const uint8_t *f, uint32_t len)
{
    uint8_t *p = guard_page + page - len;
    memcpy(p, f, len);
    return p;
}

static void test_table(void)
{
    for (size_t i = 0; i < TW_ARRAY_SIZE(cases); i++) {
        const pcase *c = &cases[i];
        uint8_t f[256];
        uint32_t n = unhex(c->hex, f);
        tw_net_parsed pp;
        int r = tw_net_parse(at_guard(f, n), n, &pp);
        CHECKF(r == c->ret, "%s: parse %d, want %d", c->name, r, c->ret);
        CHECKF(pp.ethertype == c->ethertype, "%s: ethertype %04x", c->name, pp.ethertype);
        if (r < 0)
            continue;
        if (c->ethertype == 0x0800) {
            CHECKF(pp.ip_proto == c->proto, "%s: proto %u", c->name, pp.ip_proto);
            /* Golden IP header checksum verifies both ways. */
            CHECKF(ref_csum((const uint8_t *)pp.ip, pp.ip_hlen) == 0, "%s: ref ip cksum", c->name);
            CHECKF(tw_net_csum_fold(tw_net_csum_add(0, pp.ip, pp.ip_hlen)) == 0,
                   "%s: ip cksum", c->name);
        }
        if (c->proto == 6) {
            CHECKF(tw_be16(pp.tcp->sport_be) == c->sport && tw_be16(pp.tcp->dport_be) == c->dport,
                   "%s: ports", c->name);
            CHECKF(pp.payload_len == c->payload_len, "%s: payload %u", c->name, pp.payload_len);
            CHECKF(pp.tcp_opts_len == c->opts_len, "%s: opts %u", c->name, pp.tcp_opts_len);
            uint8_t buf[300];
            memcpy(buf, &pp.ip->src_be, 8);
            buf[8] = 0;
            buf[9] = 6;
            buf[10] = (uint8_t)(pp.l4_len >> 8);
            buf[11] = (uint8_t)pp.l4_len;
            memcpy(buf + 12, pp.tcp, pp.l4_len);
            CHECKF(ref_csum(buf, 12 + pp.l4_len) == 0, "%s: ref tcp cksum", c->name);
            CHECKF(tw_net_csum_fold(tw_net_csum_add(0, buf, 12 + pp.l4_len)) == 0,
                   "%s: tcp cksum", c->name);
        }
        if (c->proto == 1)
            CHECKF(ref_csum(pp.payload, pp.payload_len) == 0, "%s: icmp cksum", c->name);
        /* Every truncation: -2 below the needed length, clean either way. */
        for (uint32_t t = 0; t < n; t++) {
            int rt = tw_net_parse(at_guard(f, t), t, &pp);
            if (t < c->need)
                CHECKF(rt == -2, "%s: truncated to %u: %d", c->name, t, rt);
            else
                CHECKF(rt == c->ret, "%s: padding cut to %u: %d", c->name, t, rt);
        }
    }
}

static void test_malformed(void)
{
    uint8_t f[256], g[256];
    uint32_t n = unhex(g_tcp_data, f);
    tw_net_parsed pp;
    struct {
        const char *name;
        uint32_t off;
        uint8_t val;
        int ret;
    } m[] = {
        {"ip version 6", 14, 0x65, -1},
        {"ihl 4", 14, 0x44, -1},
        {"ihl 15 beyond total", 14, 0x4f, -1},
        {"total_len 19", 17, 19, -1},
        {"total_len beyond frame", 17, 200, -2},
        {"tcp doff 4", 46, 0x40, -1},
        {"tcp doff 15 beyond segment", 46, 0xf0, -1},
        {"fragment offset", 21, 0x01, -1},
    };
    for (size_t i = 0; i < TW_ARRAY_SIZE(m); i++) {
        memcpy(g, f, n);
        g[m[i].off] = m[i].val;
        int r = tw_net_parse(at_guard(g, n), n, &pp);
        CHECKF(r == m[i].ret, "%s: %d, want %d", m[i].name, r, m[i].ret);
    }
    /* VLAN-tagged and unknown ethertypes: header consumed, not parsed. */
    memcpy(g, f, n);
    g[12] = 0x81;
    g[13] = 0x00;
    CHECKF(tw_net_parse(g, n, &pp) == 14 && pp.ethertype == 0x8100 && !pp.ip, "vlan");
}

static void test_checksum(void)
{
    /* Odd lengths, every alignment, against the reference. */
    uint8_t b[200];
    for (int i = 0; i < 200; i++)
        b[i] = (uint8_t)(i * 37 + 11);
    for (uint32_t off = 0; off < 8; off++)
        for (uint32_t n = 0; n < 150; n++)
            CHECKF(tw_be16(tw_net_csum_fold(tw_net_csum_add(0, b + off, n))) == ref_csum(b + off, n),
                   "csum off %u len %u", off, n);
    /* RFC 1624 incremental update equals recomputation. */
    uint8_t h[20];
    memcpy(h, b, 20);
    h[10] = h[11] = 0;
    uint16_t c = tw_net_csum_fold(tw_net_csum_add(0, h, 20));
    memcpy(h + 10, &c, 2);
    uint16_t oldw, neww;
    memcpy(&oldw, h + 4, 2);
    h[4] ^= 0x5a;
    memcpy(&neww, h + 4, 2);
    uint64_t s = (uint16_t)~c;
    s += (uint16_t)~oldw;
    s += neww;
    uint16_t inc = tw_net_csum_fold(s);
    memcpy(h + 10, &inc, 2);
    CHECKF(tw_net_csum_fold(tw_net_csum_add(0, h, 20)) == 0, "incremental update verifies");
}

static void test_stack_golden(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    uint8_t f[256], want[256], got[2048];
    uint32_t n, wn, gn;
    /* ICMP echo: exact golden reply (IP id 0: the stack's first frame). */
    n = unhex(g_icmp_req, f);
    wn = unhex(g_icmp_rep, want);
    rp_send_raw(&r, f, n);
    CHECKF(rp_recv(&r, got, &gn) && gn == wn && !memcmp(got, want, wn), "icmp echo reply bytes");
    CHECKF(tw_net_get_stats(r.st)->icmp_echo_replies == 1, "echo counted");
    /* ARP request for our IP: exact golden reply. */
    n = unhex(g_arp_req, f);
    wn = unhex(g_arp_rep, want);
    rp_send_raw(&r, f, n);
    CHECKF(rp_recv(&r, got, &gn) && gn == wn && !memcmp(got, want, wn), "arp reply bytes");
    /* Fragment: counted, dropped, unanswered. */
    n = unhex(g_ip_frag, f);
    rp_send_raw(&r, f, n);
    CHECKF(!rp_recv(&r, got, &gn) && tw_net_get_stats(r.st)->rx_ip_frag == 1, "fragment dropped");
    /* IP options skipped: the TCP segment inside is handled (RST, no port). */
    n = unhex(g_ip_opts, f);
    rp_send_raw(&r, f, n);
    seg s;
    CHECKF(rp_seg(&r, &s) && (s.flags & TW_TCP_RST) && s.seq == 9, "options skipped, RST sent");
    CHECKF(tw_net_get_stats(r.st)->rx_ip_options == 1, "options counted");
    /* Corrupt IP header: counted as a checksum error. */
    n = unhex(g_tcp_data, f);
    f[22] ^= 0x01; /* ttl */
    rp_send_raw(&r, f, n);
    CHECKF(!rp_recv(&r, got, &gn) && tw_net_get_stats(r.st)->rx_ip_cksum_bad == 1,
           "bad ip cksum dropped");
    /* Every truncation of every golden frame fed to the stack: no reply,
     * no crash, counted. */
    const char *all[] = {g_tcp_syn, g_tcp_data, g_arp_req, g_icmp_req, g_ip_opts};
    uint64_t before = tw_net_get_stats(r.st)->rx_frames;
    for (size_t i = 0; i < TW_ARRAY_SIZE(all); i++) {
        n = unhex(all[i], f);
        for (uint32_t t = 6; t < 34 && t < n; t++) /* 6: the sim routes by dst MAC */
            rp_send_raw(&r, f, t);
    }
    CHECKF(rp_drain(&r) == 0, "no answer to truncated frames");
    CHECKF(tw_net_get_stats(r.st)->rx_frames - before == 5 * 28, "all counted: %llu",
           (unsigned long long)(tw_net_get_stats(r.st)->rx_frames - before));
    rp_close(&r);
}

/* What the stack refuses, and under which reason: frames that are only
 * not for us (another MAC, multicast, IPv6 or another ethertype, another
 * IPv4 address) never count as broken, truncated or not; our own frames
 * coming back are rx_own_src; runts and bad checksums are broken. */
static void test_refused(void)
{
    rawpeer r;
    rp_open(&r, NULL);
    uint8_t f[256];
    const tw_net_stats *S = tw_net_get_stats(r.st);
    static const uint8_t v6_mcast[6] = {0x33, 0x33, 0, 0, 0, 0x01};
    static const uint8_t v4_mcast[6] = {0x01, 0x00, 0x5e, 0, 0, 0xfb};
    /* IPv6 neighbour chatter to a multicast group, whole and truncated. */
    uint32_t n = unhex(g_tcp_data, f);
    memcpy(f, v6_mcast, 6);
    f[12] = 0x86;
    f[13] = 0xdd;
    rp_send_raw(&r, f, n);
    rp_send_raw(&r, f, 20);
    CHECKF(S->rx_mcast == 2, "ipv6 multicast: rx_mcast %llu", (unsigned long long)S->rx_mcast);
    /* IPv4 multicast (mDNS), cut inside the IP header. */
    n = unhex(g_tcp_data, f);
    memcpy(f, v4_mcast, 6);
    rp_send_raw(&r, f, 20);
    CHECKF(S->rx_mcast == 3, "ipv4 multicast truncated: rx_mcast %llu",
           (unsigned long long)S->rx_mcast);
    /* IPv6 and an 802.1Q tag to our MAC: another ethertype. */
    n = unhex(g_tcp_data, f);
    f[12] = 0x86;
    f[13] = 0xdd;
    rp_send_raw(&r, f, n);
    f[12] = 0x81;
    f[13] = 0x00;
    rp_send_raw(&r, f, n);
    CHECKF(S->rx_eth_other == 2, "other ethertypes: rx_eth_other %llu",
           (unsigned long long)S->rx_eth_other);
    /* IPv4 to another address, and to the subnet broadcast (the checksum
     * is not even looked at: it is not our packet). */
    n = unhex(g_tcp_data, f);
    f[33] = 0x09; /* dst 10.0.0.9 */
    rp_send_raw(&r, f, n);
    memset(f, 0xff, 6);
    f[33] = 0xff;
    rp_send_raw(&r, f, n);
    CHECKF(S->rx_ip_other == 2, "other ip: rx_ip_other %llu", (unsigned long long)S->rx_ip_other);
    /* Our own ARP request coming back (broadcast, our source MAC): not
     * answered, not learnt, not "not for us". */
    n = unhex(g_arp_req, f);
    memcpy(f + 6, US_MAC, 6);
    rp_send_raw(&r, f, n);
    memcpy(f, v6_mcast, 6);
    rp_send_raw(&r, f, n);
    CHECKF(S->rx_own_src == 2 && S->rx_arp == 0, "own frames back: rx_own_src %llu rx_arp %llu",
           (unsigned long long)S->rx_own_src, (unsigned long long)S->rx_arp);
    CHECKF(S->rx_not_for_us == S->rx_mac_other + S->rx_mcast + S->rx_eth_other + S->rx_ip_other &&
           S->rx_not_for_us == 7, "rx_not_for_us %llu is the sum of its reasons",
           (unsigned long long)S->rx_not_for_us);
    CHECKF(tw_net_stats_rx_broken(S) == 0, "nothing above is broken: %llu",
           (unsigned long long)tw_net_stats_rx_broken(S));
    /* Broken: a runt to our MAC, a bad IP checksum, a bad TCP checksum. */
    n = unhex(g_tcp_data, f);
    rp_send_raw(&r, f, 12);
    f[22] ^= 0x01;
    rp_send_raw(&r, f, n);
    f[22] ^= 0x01;
    f[n - 1] ^= 0x01;
    rp_send_raw(&r, f, n);
    CHECKF(S->rx_eth_bad == 1 && S->rx_ip_cksum_bad == 1 && S->rx_tcp_cksum_bad == 1,
           "broken: eth %llu ip cksum %llu tcp cksum %llu", (unsigned long long)S->rx_eth_bad,
           (unsigned long long)S->rx_ip_cksum_bad, (unsigned long long)S->rx_tcp_cksum_bad);
    CHECKF(tw_net_stats_rx_broken(S) == 3, "broken total %llu",
           (unsigned long long)tw_net_stats_rx_broken(S));
    char line[512];
    size_t ln = tw_net_stats_rx_refused(S, line, sizeof(line));
    CHECKF(ln == strlen(line) && strstr(line, "broken 3 (eth 1,") &&
           strstr(line, "own frames back 2; not for us 7 (other mac 0, multicast 3, "
                        "other ethertype 2, other ip 2)"), "refused line: %s", line);
    CHECKF(tw_net_stats_rx_refused(S, line, 8) == 7 && !strcmp(line, "broken "),
           "refused line truncated: '%s'", line);
    /* Spoofed source (our own address): refused, its own reason. */
    n = unhex(g_tcp_data, f);
    f[29] = 0x01; /* src 10.0.0.1, with a good IP checksum */
    f[24] = f[25] = 0;
    uint16_t ck = tw_net_csum_fold(tw_net_csum_add(0, f + 14, 20));
    memcpy(f + 24, &ck, 2);
    rp_send_raw(&r, f, n);
    CHECKF(S->rx_ip_src_bad == 1, "spoofed source: rx_ip_src_bad %llu",
           (unsigned long long)S->rx_ip_src_bad);
    CHECKF(rp_drain(&r) == 0, "no answer to any of it");
    rp_close(&r);

    /* Unicast to another MAC: a stack with a MAC of its own on a port
     * whose MAC the peer sends to (as on a veth with --mac). */
    tw_net_config c;
    tw_net_config_init(&c, US_IP);
    c.isn_secret[0] = 1;
    static const uint8_t own[6] = {0x02, 0x74, 0x77, 0, 0, 0x07};
    memcpy(c.mac, own, 6);
    rp_open(&r, &c);
    S = tw_net_get_stats(r.st);
    n = unhex(g_tcp_data, f);
    rp_send_raw(&r, f, n);
    rp_send_raw(&r, f, 20); /* truncated: still only not for us */
    CHECKF(S->rx_mac_other == 2 && S->rx_not_for_us == 2 && tw_net_stats_rx_broken(S) == 0,
           "other MAC: rx_mac_other %llu broken %llu", (unsigned long long)S->rx_mac_other,
           (unsigned long long)tw_net_stats_rx_broken(S));
    CHECKF(rp_drain(&r) == 0, "no answer to another MAC's frames");
    rp_close(&r);
}

static void test_ip_parse(void)
{
    uint32_t ip;
    char b[16];
    CHECKF(tw_net_parse_ip4("10.0.0.1", &ip) == 0 && ip == 0x0a000001, "parse ip");
    CHECKF(!strcmp(tw_net_format_ip4(0xc0a80164, b), "192.168.1.100"), "format ip");
    const char *bad[] = {"", "1.2.3", "1.2.3.4.5", "256.0.0.1", "1..2.3", "a.b.c.d", "1.2.3.4 "};
    for (size_t i = 0; i < TW_ARRAY_SIZE(bad); i++)
        CHECKF(tw_net_parse_ip4(bad[i], &ip) == -EINVAL, "reject '%s'", bad[i]);
}

int main(void)
{
    page = sysconf(_SC_PAGESIZE);
    guard_page = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (guard_page == MAP_FAILED || mprotect(guard_page + page, (size_t)page, PROT_NONE)) {
        perror("mmap");
        return 1;
    }
    test_table();
    test_malformed();
    test_checksum();
    test_stack_golden();
    test_refused();
    test_ip_parse();
    return tw_check_done("net_parse_test");
}
