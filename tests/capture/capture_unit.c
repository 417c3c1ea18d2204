/* The capture without a network (capture.h, port.h's capture hook):
 *
 *   golden       the blocks of a two-frame capture, byte for byte
 *   filter       a table of frames (TCP, UDP, ARP, fragments, runts,
 *                truncated headers, IPv6) against each kind of filter
 *   ring_full    frames past the ring's room are dropped and counted, in
 *                the stats and in the file's statistics block
 *   port_hook    a scripted backend under the port layer's hook: random
 *                bursts, partial tx, filters, a small ring that wraps and
 *                fills; the file holds exactly the frames received and the
 *                frames the backend took, in order, filtered, or counted
 *                as dropped
 *   rotation     files past the size limit: each a whole pcapng within the
 *                limit, together every packet in order; files=N keeps N
 *   snap         frames longer than the snap length: cut, counted,
 *                original length kept
 *   spec         the option form, good and bad
 *   errors       bad configs, an uncreatable file, a write that fails
 *                (RLIMIT_FSIZE) part way: error reported, file still ends
 *                with a whole block, packets counted as lost
 *   thread       the writer thread under a producer at full speed
 *   reactor      the writer as a reactor poll on a core of its own
 * tshark, when installed, reads every file written here too. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/capcheck.h"
#include "tickwire/capture.h"
#include "tickwire/port.h"
#include "tickwire/reactor.h"
#include "tw_check.h"

static char dir_path[256];
static int have_tshark;

static void path_of(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s.pcapng", dir_path, name);
}

static void tshark_ok(const char *file, long want)
{
    if (!have_tshark)
        return;
    long n;
    char why[512];
    CHECKF(cap_tshark_read(file, &n, why, sizeof(why)) == 0, "tshark %s: %s", file, why);
    CHECKF(n == want, "tshark %s: %ld frames, want %ld", file, n, want);
}

static void cfg_caller(tw_capture_config *c, const char *name)
{
    char p[400];
    path_of(p, sizeof(p), name);
    CHECK(tw_capture_config_init(c, p) == 0);
    c->writer = TW_CAPTURE_WRITER_CALLER;
}

/* ---- frames ------------------------------------------------------------- */

/* ---- golden ------------------------------------------------------------- */

/* The file after its Section Header: IDB "sim0" (snap 2048, if_tsresol
 * 9), an inbound EPB of 60 bytes at 1700000000.000001000, an outbound one
 * of 42 bytes at .000002234, and the ISB.  Checked by hand against the
 * pcapng draft and read by tshark 4.0 / capinfos. */
static const char golden_hex[] =
    /* IDB: type 1, length 40, linktype 1, reserved, snaplen 2048,
     * if_name (2) "sim0", if_tsresol (9) = 9 and padding, end, length */
    "01000000 28000000 0100 0000 00080000 0200 0400 7369 6d30 0900 0100 09 000000 "
    "00000000 28000000 "
    /* EPB: type 6, length 104, interface 0, timestamp high / low (ns),
     * captured 60, original 60, the frame, epb_flags (2) = 1 inbound */
    "06000000 68000000 00000000 fe9c9717 e8032a36 3c000000 3c000000 @60 "
    "0200 0400 01000000 00000000 68000000 "
    /* EPB: 88 bytes, 42 captured and padded to 44, flags 2 outbound */
    "06000000 58000000 00000000 fe9c9717 ba082a36 2a000000 2a000000 @42 0000 "
    "0200 0400 02000000 00000000 58000000 "
    /* ISB: type 5, length 100, interface 0, time of the last packet,
     * isb_starttime (2), isb_endtime (3), ifrecv (4) 2, ifdrop (5) 0,
     * filteraccept (6) 2, usrdeliv (8) 2, end, length */
    "05000000 64000000 00000000 fe9c9717 ba082a36 "
    "0200 0800 fe9c9717 e8032a36 0300 0800 fe9c9717 ba082a36 "
    "0400 0800 0200000000000000 0500 0800 0000000000000000 "
    "0600 0800 0200000000000000 0800 0800 0200000000000000 "
    "00000000 64000000";

static size_t golden_bytes(uint8_t *out, const uint8_t *frame)
{
    size_t n = 0;
    for (const char *p = golden_hex; *p;) {
        if (*p == '@') { /* @N: the first N bytes of the frame */
            int k = atoi(p + 1);
            memcpy(out + n, frame, (size_t)k);
            n += (size_t)k;
            p++;
            while (*p >= '0' && *p <= '9')
                p++;
            continue;
        }
        if (*p == ' ') {
            p++;
            continue;
        }
        unsigned v;
        sscanf(p, "%2x", &v);
        out[n++] = (uint8_t)v;
        p += 2;
    }
    return n;
}

static void t_golden(void)
{
    tw_capture_config c;
    cfg_caller(&c, "golden");
    static uint64_t now = 1000;
    c.now_ns = &now;
    c.epoch_base_ns = 1700000000000000000ll;
    tw_capture *cap;
    tw_error err;
    REQUIRE(tw_capture_open(&cap, &c, &err) == 0);
    CHECK_EQ(tw_capture_add_iface(cap, "sim0", &err), 0);
    uint8_t f[60];
    for (int i = 0; i < 60; i++)
        f[i] = (uint8_t)(i * 7 + 1);
    CHECK_EQ(tw_capture_put(cap, 0, TW_CAPTURE_RX, tw_capture_stamp(cap), f, 60), 1);
    now += 1234;
    CHECK_EQ(tw_capture_put(cap, 0, TW_CAPTURE_TX, tw_capture_stamp(cap), f, 42), 1);
    tw_capture_stats st;
    CHECK_EQ(tw_capture_close(cap, &st), 0);
    CHECK(st.kept == 2 && st.written == 2 && st.dropped == 0 && st.files == 1);
    cap_file cf;
    REQUIRE(cap_load(c.path, &cf) == 0);
    CHECK_EQ(cf.len, st.bytes);
    /* The Section Header: type, length twice, byte-order magic, 1.0,
     * unknown section length, shb_userappl "tickwire <version>". */
    REQUIRE(cf.len > 52);
    uint32_t shb_len;
    memcpy(&shb_len, cf.bytes + 4, 4);
    static const uint8_t shb_head[] = {0x0a, 0x0d, 0x0d, 0x0a};
    static const uint8_t bom_ver[] = {0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0,
                                      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    CHECK(!memcmp(cf.bytes, shb_head, 4) && !memcmp(cf.bytes + 8, bom_ver, 16));
    CHECK(cf.bytes[24] == 4 && cf.bytes[25] == 0 && !memcmp(cf.bytes + 28, "tickwire ", 9));
    REQUIRE(shb_len < cf.len);
    uint8_t want[1024];
    size_t wn = golden_bytes(want, f);
    CHECKF(cf.len - shb_len == wn && !memcmp(cf.bytes + shb_len, want, wn),
           "blocks after the SHB match the golden bytes (%zu / %zu bytes)", cf.len - shb_len, wn);
    if (cf.len - shb_len == wn)
        for (size_t i = 0; i < wn; i++)
            if (cf.bytes[shb_len + i] != want[i]) {
                fprintf(stderr, "  first difference at byte %zu after the SHB: %02x, want %02x\n",
                        i, cf.bytes[shb_len + i], want[i]);
                break;
            }
    CHECK(cf.n_pkts == 2 && cf.pkts[0].dir == TW_CAPTURE_RX && cf.pkts[1].dir == TW_CAPTURE_TX);
    CHECK(cf.pkts[1].ts - cf.pkts[0].ts == 1234);
    cap_free(&cf);
    tshark_ok(c.path, 2);
}

/* ---- filter ------------------------------------------------------------- */

static void t_filter(void)
{
    enum { TCP80, TCP80_REV, TCP81, UDP80, ARP, FRAG, RUNT, TRUNC_IP, TCP_SHORT, IP6, OTHER_IP,
           NFRAMES };
    static uint8_t fr[NFRAMES][128];
    uint32_t len[NFRAMES];
    const uint32_t A = 0x0a000001, B = 0x0a000002, C = 0x0a000003;
    len[TCP80] = cap_build_ip(fr[TCP80], 6, A, 1234, B, 80, 10, 0xaa);
    len[TCP80_REV] = cap_build_ip(fr[TCP80_REV], 6, B, 80, A, 1234, 10, 0xaa);
    len[TCP81] = cap_build_ip(fr[TCP81], 6, A, 1234, B, 81, 10, 0xaa);
    len[UDP80] = cap_build_ip(fr[UDP80], 17, A, 1234, B, 80, 10, 0xaa);
    len[ARP] = cap_build_arp(fr[ARP]);
    len[FRAG] = cap_build_ip(fr[FRAG], 6, A, 1234, B, 80, 10, 0xaa);
    fr[FRAG][14 + 7] = 0x10; /* fragment offset 16: no TCP header here */
    len[RUNT] = 10;
    memset(fr[RUNT], 0, 10);
    len[TRUNC_IP] = 30; /* IPv4 ethertype, header cut short */
    cap_build_ip(fr[TRUNC_IP], 6, A, 1234, B, 80, 0, 0);
    len[TCP_SHORT] = cap_build_ip(fr[TCP_SHORT], 6, A, 1234, B, 80, 0, 0);
    fr[TCP_SHORT][14] = 0x4f; /* IHL 15: the ports would be past the end */
    len[IP6] = 60;
    memset(fr[IP6], 0, 60);
    fr[IP6][12] = 0x86;
    fr[IP6][13] = 0xdd;
    len[OTHER_IP] = cap_build_ip(fr[OTHER_IP], 6, C, 1234, C, 80, 10, 0xaa);
    struct {
        const char *spec;
        unsigned dir;
        const char *keep; /* per frame, in enum order: 1 kept */
    } cases[] = {
        {"", TW_CAPTURE_RX, "11111111111"},
        {",dir=rx", TW_CAPTURE_TX, "00000000000"},
        {",dir=tx", TW_CAPTURE_TX, "11111111111"},
        {",port=80", TW_CAPTURE_RX, "11000000001"},
        {",port=81", TW_CAPTURE_RX, "00100000000"},
        {",port=1234", TW_CAPTURE_RX, "11100000001" /* UDP is not TCP */},
        {",ip=10.0.0.2", TW_CAPTURE_RX, "11110100100"},
        {",ip=10.0.0.3", TW_CAPTURE_RX, "00000000001"},
        {",ip=10.0.0.2,port=80", TW_CAPTURE_RX, "11000000000"},
        {",port=80,nonip=1", TW_CAPTURE_RX, "11001010011"},
        {",ip=10.0.0.9,nonip=1,dir=rx", TW_CAPTURE_RX, "00001010010"},
    };
    for (int i = 0; i < NFRAMES; i++)
        TW_VERIFY(len[i] <= sizeof(fr[i]));
    CHECK(cases[0].keep[0] == '1');
    for (unsigned k = 0; k < TW_ARRAY_SIZE(cases); k++) {
        char spec[600];
        tw_capture_config c;
        tw_error err;
        snprintf(spec, sizeof(spec), "%s/filter.pcapng%s", dir_path, cases[k].spec);
        REQUIRE(tw_capture_config_parse(&c, spec, &err) == 0);
        c.writer = TW_CAPTURE_WRITER_CALLER;
        tw_capture *cap;
        REQUIRE(tw_capture_open(&cap, &c, &err) == 0);
        int id = tw_capture_add_iface(cap, "f", &err);
        unsigned kept = 0;
        for (int i = 0; i < NFRAMES; i++) {
            int got = tw_capture_put(cap, (unsigned)id, cases[k].dir, 1, fr[i], len[i]);
            int want = cases[k].keep[i] == '1';
            CHECKF(got == want, "filter '%s', frame %d: put %d, want %d", cases[k].spec, i, got,
                   want);
            kept += want;
        }
        tw_capture_stats st;
        tw_capture_get_stats(cap, id, &st);
        CHECK(st.kept == kept && st.filtered == NFRAMES - kept);
        CHECK_EQ(tw_capture_close(cap, NULL), 0);
    }
}

/* ---- ring full ---------------------------------------------------------- */

static void t_ring_full(void)
{
    tw_capture_config c;
    cfg_caller(&c, "ring_full");
    c.ring_slots = 8;
    tw_capture *cap;
    tw_error err;
    REQUIRE(tw_capture_open(&cap, &c, &err) == 0);
    int id = tw_capture_add_iface(cap, "r", &err);
    uint8_t f[100];
    uint32_t n = cap_build_ip(f, 6, 1, 2, 3, 4, 40, 0);
    int ok = 0, full = 0;
    for (int i = 0; i < 20; i++) {
        int r = tw_capture_put(cap, (unsigned)id, TW_CAPTURE_TX, (uint64_t)i, f, n);
        ok += r == 1;
        full += r == -ENOBUFS;
    }
    CHECK(ok == 8 && full == 12);
    CHECK_EQ(tw_capture_drain(cap, 100), 8);
    CHECK_EQ(tw_capture_drain(cap, 100), 0);
    for (int i = 0; i < 5; i++)
        CHECK_EQ(tw_capture_put(cap, (unsigned)id, TW_CAPTURE_RX, 100 + (uint64_t)i, f, n), 1);
    tw_capture_stats st;
    CHECK_EQ(tw_capture_close(cap, &st), 0);
    CHECK(st.kept == 13 && st.dropped == 12 && st.written == 13 && st.lost == 0);
    cap_file cf;
    REQUIRE(cap_load(c.path, &cf) == 0);
    CHECK(cf.n_pkts == 13 && cf.n_isb == 1 && cf.isb_drop[0] == 12 && cf.isb_recv[0] == 25 &&
          cf.isb_accept[0] == 25 && cf.isb_deliv[0] == 13);
    cap_free(&cf);
    tshark_ok(c.path, 13);
}

/* ---- the port hook under a scripted backend ------------------------------ */

static uint64_t hook_rng;
static uint32_t hook_seq; /* sequence number written into each frame */

static uint64_t fp_rnd(void)
{
    uint64_t z = (hook_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Frame `slot` of the port: to TCP port 80 or 81 (odd seq), carrying the
 * next sequence number in its payload. */
static void fp_frame(cap_port *fp, unsigned slot, tw_pkt *p)
{
    uint32_t s = hook_seq++;
    fp->len[slot] = cap_build_ip(fp->mem[slot], 6, 0x0a000001, 1000, 0x0a000002,
                                 (uint16_t)(80 + (s & 1)), 4 + (uint32_t)(fp_rnd() % 150), 0);
    memcpy(fp->mem[slot] + 54, &s, 4);
    if (p) {
        p->data = fp->mem[slot];
        p->len = fp->len[slot];
    }
}

static void t_port_hook(void)
{
    for (int variant = 0; variant < 3; variant++) {
        /* 0: everything; 1: port 80 only; 2: port 80 with a ring that fills */
        char name[32];
        snprintf(name, sizeof(name), "port_hook%d", variant);
        tw_capture_config c;
        cfg_caller(&c, name);
        c.ring_slots = variant == 2 ? 16 : 64;
        if (variant)
            c.filter.tcp_port = 80;
        static cap_port fp;
        cap_port_init(&fp);
        fp.scribble = 1;
        hook_rng = 77 + (uint64_t)variant;
        hook_seq = 0;
        tw_capture *cap;
        tw_error err;
        REQUIRE(tw_port_capture_open(&fp.base, &c, "script0", &cap, &err) == 0);
        CHECK(fp.base.capture == cap && fp.base.capture_if == 0);
        CHECK_EQ(tw_port_capture_attach(&fp.base, cap, NULL, &err), -EBUSY);
        /* The model: which sequence numbers must be in the file, in order. */
        static uint32_t want[200000];
        static uint8_t want_dir[200000];
        size_t nwant = 0;
        uint64_t offered = 0, filtered = 0;
        for (int round = 0; round < 3000; round++) {
            tw_pkt pk[64];
            unsigned n = 1 + (unsigned)(fp_rnd() % 64);
            uint32_t free_slots = c.ring_slots - tw_ring_count(cap->ring);
            if (fp_rnd() & 1) {
                uint32_t s0 = hook_seq;
                for (unsigned i = 0; i < n; i++)
                    fp_frame(&fp, i, NULL);
                fp.rx_n = n;
                unsigned got = tw_port_rx_burst(&fp.base, pk, 64);
                CHECK_EQ(got, n);
                for (uint32_t s = s0; s < s0 + got; s++) {
                    offered++;
                    if (variant && (s & 1)) {
                        filtered++;
                        continue;
                    }
                    if (free_slots) {
                        free_slots--;
                        want_dir[nwant] = TW_CAPTURE_RX;
                        want[nwant++] = s;
                    }
                }
            } else {
                uint32_t s0 = hook_seq;
                for (unsigned i = 0; i < n; i++)
                    fp_frame(&fp, i, &pk[i]);
                fp.tx_take = (unsigned)(fp_rnd() % (n + 1));
                if (fp_rnd() % 4 == 0)
                    fp.tx_take = n;
                unsigned take = fp.tx_take;
                unsigned got = tw_port_tx_burst(&fp.base, pk, n);
                CHECK_EQ(got, take);
                for (uint32_t s = s0; s < s0 + got; s++) {
                    offered++;
                    if (variant && (s & 1)) {
                        filtered++; /* only frames that went out count */
                        continue;
                    }
                    if (free_slots) {
                        free_slots--;
                        want_dir[nwant] = TW_CAPTURE_TX;
                        want[nwant++] = s;
                    }
                }
            }
            if (fp_rnd() % (variant == 2 ? 8 : 2) == 0)
                tw_capture_drain(cap, (unsigned)(fp_rnd() % 40));
            TW_VERIFY(nwant + 64 < TW_ARRAY_SIZE(want));
        }
        tw_port_capture_detach(&fp.base);
        CHECK(fp.base.capture == NULL);
        tw_capture_stats st;
        CHECK_EQ(tw_capture_close(cap, &st), 0);
        CHECKF(st.written == nwant && st.kept == nwant, "variant %d: written %llu, model %zu",
               variant, (unsigned long long)st.written, nwant);
        CHECKF(st.filtered == filtered && st.kept + st.dropped + st.filtered == offered,
               "variant %d: filtered %llu (model %llu), all %llu", variant,
               (unsigned long long)st.filtered, (unsigned long long)filtered,
               (unsigned long long)offered);
        CHECKF(st.dropped > 0, "variant %d fills the ring", variant);
        cap_file cf;
        REQUIRE(cap_load(c.path, &cf) == 0);
        size_t bad = 0;
        for (size_t i = 0; i < cf.n_pkts && i < nwant; i++) {
            uint32_t s;
            memcpy(&s, cf.pkts[i].data + 54, 4);
            if (s != want[i] || cf.pkts[i].dir != want_dir[i])
                bad++;
        }
        CHECKF(cf.n_pkts == nwant && bad == 0, "variant %d: %zu packets, %zu differ from the model",
               variant, cf.n_pkts, bad);
        cap_free(&cf);
        tshark_ok(c.path, (long)nwant);
    }
}

/* ---- rotation ----------------------------------------------------------- */

static void t_rotation(void)
{
    for (int keep = 0; keep < 2; keep++) {
        tw_capture_config c;
        cfg_caller(&c, keep ? "rot_keep" : "rot");
        c.file_max_bytes = 4096;
        c.files_max = keep ? 3 : 0;
        tw_capture *cap;
        tw_error err;
        REQUIRE(tw_capture_open(&cap, &c, &err) == 0);
        int id = tw_capture_add_iface(cap, "rot", &err);
        uint8_t f[200];
        for (uint32_t i = 0; i < 200; i++) {
            uint32_t n = cap_build_ip(f, 6, 1, 2, 3, 4, 46, 0); /* 100 bytes: EPB 144 */
            memcpy(f + 54, &i, 4);
            CHECK_EQ(tw_capture_put(cap, (unsigned)id, TW_CAPTURE_RX, i, f, n), 1);
            tw_capture_drain(cap, 64);
        }
        tw_capture_stats st;
        char p0[600];
        tw_capture_file_path(cap, 0, p0, sizeof(p0));
        char p2[600];
        tw_capture_file_path(cap, 2, p2, sizeof(p2));
        CHECK_EQ(tw_capture_close(cap, &st), 0);
        CHECK(!strcmp(p0, c.path));
        char want2[600];
        snprintf(want2, sizeof(want2), "%s/%s.2.pcapng", dir_path, keep ? "rot_keep" : "rot");
        CHECKF(!strcmp(p2, want2), "rotated name %s", p2);
        CHECKF(st.files >= 7, "200 packets of 144 bytes in 4 KiB files: %llu files",
               (unsigned long long)st.files);
        uint32_t next = 0;
        uint64_t bytes = 0;
        for (uint64_t k = 0; k < st.files; k++) {
            char p[600];
            if (k == 0)
                snprintf(p, sizeof(p), "%s", c.path);
            else
                snprintf(p, sizeof(p), "%s/%s.%llu.pcapng", dir_path, keep ? "rot_keep" : "rot",
                         (unsigned long long)k);
            struct stat sb;
            int exists = stat(p, &sb) == 0;
            if (keep && k + 3 < st.files) {
                CHECKF(!exists, "files=3: %s removed", p);
                continue;
            }
            REQUIRE(exists);
            bytes += (uint64_t)sb.st_size;
            cap_file cf;
            REQUIRE(cap_load(p, &cf) == 0);
            CHECKF(cf.first_shb && !cf.malformed && cf.whole == cf.len && cf.n_shb == 1 &&
                       cf.n_idb == 1 && cf.n_isb == 1 && cf.len <= 4096 && cf.n_pkts > 0,
                   "%s: a whole pcapng within the limit (%zu bytes, %zu packets)", p, cf.len,
                   cf.n_pkts);
            for (size_t i = 0; i < cf.n_pkts; i++) {
                uint32_t s;
                memcpy(&s, cf.pkts[i].data + 54, 4);
                if (keep && next == 0 && k > 0 && i == 0)
                    next = s; /* the files kept start later */
                CHECKF(s == next, "%s: packet %zu is %u, want %u", p, i, s, next);
                next = s + 1;
            }
            tshark_ok(p, (long)cf.n_pkts);
            cap_free(&cf);
        }
        CHECK_EQ(next, 200);
        if (!keep)
            CHECK_EQ(bytes, st.bytes);
    }
    /* A limit below one packet's file: one packet per file. */
    tw_capture_config c;
    cfg_caller(&c, "rot_tiny");
    c.file_max_bytes = 10;
    tw_capture *cap;
    tw_error err;
    REQUIRE(tw_capture_open(&cap, &c, &err) == 0);
    tw_capture_add_iface(cap, "t", &err);
    uint8_t f[64];
    uint32_t n = cap_build_arp(f);
    for (int i = 0; i < 5; i++)
        tw_capture_put(cap, 0, TW_CAPTURE_TX, 1, f, n);
    tw_capture_stats st;
    CHECK_EQ(tw_capture_close(cap, &st), 0);
    CHECK(st.files == 5 && st.written == 5);
}

/* ---- snap --------------------------------------------------------------- */

static void t_snap(void)
{
    tw_capture_config c;
    cfg_caller(&c, "snap");
    c.snap_len = 64;
    tw_capture *cap;
    tw_error err;
    REQUIRE(tw_capture_open(&cap, &c, &err) == 0);
    tw_capture_add_iface(cap, "s", &err);
    uint8_t f[1600];
    uint32_t lens[] = {0, 1, 63, 64, 65, 1514};
    for (unsigned i = 0; i < TW_ARRAY_SIZE(lens); i++) {
        for (uint32_t k = 0; k < lens[i]; k++)
            f[k] = (uint8_t)(k + i);
        CHECK_EQ(tw_capture_put(cap, 0, TW_CAPTURE_RX, i, f, lens[i]), 1);
    }
    tw_capture_stats st;
    CHECK_EQ(tw_capture_close(cap, &st), 0);
    CHECK(st.truncated == 2 && st.written == TW_ARRAY_SIZE(lens));
    cap_file cf;
    REQUIRE(cap_load(c.path, &cf) == 0);
    REQUIRE(cf.n_pkts == TW_ARRAY_SIZE(lens));
    CHECK(cf.idb_snap[0] == 64);
    for (unsigned i = 0; i < TW_ARRAY_SIZE(lens); i++) {
        const cap_pkt *p = &cf.pkts[i];
        uint32_t want = lens[i] < 64 ? lens[i] : 64;
        CHECKF(p->orig_len == lens[i] && p->cap_len == want, "snap: frame %u: %u of %u", i,
               p->cap_len, p->orig_len);
        for (uint32_t k = 0; k < p->cap_len; k++)
            if (p->data[k] != (uint8_t)(k + i)) {
                CHECKF(0, "snap: frame %u byte %u", i, k);
                break;
            }
    }
    cap_free(&cf);
    tshark_ok(c.path, TW_ARRAY_SIZE(lens));
}

/* ---- option form -------------------------------------------------------- */

static void t_spec(void)
{
    tw_capture_config c;
    tw_error err;
    CHECK_EQ(tw_capture_config_parse(&c, "x.pcapng", &err), 0);
    CHECK(!strcmp(c.path, "x.pcapng") && c.snap_len == TW_CAPTURE_SNAP_DEFAULT &&
          c.ring_slots == TW_CAPTURE_SLOTS_DEFAULT && c.file_max_bytes == 0 &&
          c.writer == TW_CAPTURE_WRITER_THREAD && c.writer_cpu == -1 && c.filter.dirs == 0);
    CHECK_EQ(tw_capture_config_parse(&c, "/tmp/a b.pcapng,snap=128,slots=1024,size=1M,files=4,"
                                         "dir=rx,ip=10.1.2.3,port=80,nonip=1,cpu=1", &err), 0);
    CHECK(!strcmp(c.path, "/tmp/a b.pcapng") && c.snap_len == 128 && c.ring_slots == 1024 &&
          c.file_max_bytes == 1048576 && c.files_max == 4 && c.filter.dirs == TW_CAPTURE_RX &&
          c.filter.ip == 0x0a010203 && c.filter.tcp_port == 80 &&
          c.filter.flags == TW_CAPTURE_F_NON_IP && c.writer_cpu == 1);
    CHECK_EQ(tw_capture_config_parse(&c, "y,size=2k,dir=both", &err), 0);
    CHECK(c.file_max_bytes == 2048 && c.filter.dirs == 3);
    struct {
        const char *spec, *names;
    } bad[] = {
        {"", "no file name"},       {",snap=1", "no file name"}, {"x,snap=0", "snap=0"},
        {"x,snap=65521", "snap"},   {"x,snap=12a", "snap"},      {"x,slots=1000", "slots"},
        {"x,slots=1", "slots"},     {"x,size=", "size"},         {"x,size=1X", "size"},
        {"x,size=0", "size"},       {"x,dir=up", "dir"},         {"x,ip=10.1.2", "ip"},
        {"x,ip=0.0.0.0", "ip"},     {"x,port=0", "port"},        {"x,port=65536", "port"},
        {"x,port=-1", "port"},      {"x,bogus=1", "bogus"},      {"x,snap", "snap"},
        {"x,nonip=2", "nonip"},     {"x,cpu=x", "cpu"},          {"x,", "''"},
        {"x,size=99999999999999999999", "size"},
    };
    for (unsigned i = 0; i < TW_ARRAY_SIZE(bad); i++) {
        memset(&err, 0, sizeof(err));
        int rc = tw_capture_config_parse(&c, bad[i].spec, &err);
        CHECKF(rc == -EINVAL && strstr(err.msg, bad[i].names), "spec '%s': %d '%s'", bad[i].spec,
               rc, err.msg);
    }
    char longp[TW_CAPTURE_PATH_MAX + 10];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = 0;
    CHECK_EQ(tw_capture_config_parse(&c, longp, &err), -EINVAL);
    CHECK_EQ(tw_capture_config_init(&c, longp), -ENAMETOOLONG);
}

/* ---- errors ------------------------------------------------------------- */

static void t_errors(void)
{
    tw_capture_config c;
    tw_capture *cap;
    tw_error err;
    CHECK(tw_capture_config_init(&c, "/nonexistent-dir/x.pcapng") == 0);
    CHECK_EQ(tw_capture_open(&cap, &c, &err), -ENOENT);
    CHECKF(strstr(err.msg, "/nonexistent-dir/x.pcapng") != NULL, "%s", err.msg);
    cfg_caller(&c, "err");
    c.snap_len = 0;
    CHECK_EQ(tw_capture_open(&cap, &c, &err), -EINVAL);
    CHECK(strstr(err.msg, "snap_len") != NULL);
    cfg_caller(&c, "err");
    c.ring_slots = 1000;
    CHECK_EQ(tw_capture_open(&cap, &c, &err), -EINVAL);
    CHECK(strstr(err.msg, "ring_slots") != NULL);
    cfg_caller(&c, "err");
    c.filter.dirs = 4;
    CHECK_EQ(tw_capture_open(&cap, &c, &err), -EINVAL);
    cfg_caller(&c, "err");
    c.path[0] = 0;
    CHECK_EQ(tw_capture_open(&cap, &c, &err), -EINVAL);
    /* Interfaces: names and the table bound. */
    cfg_caller(&c, "ifaces");
    REQUIRE(tw_capture_open(&cap, &c, &err) == 0);
    char longn[TW_CAPTURE_NAME_MAX + 1];
    memset(longn, 'n', sizeof(longn) - 1);
    longn[sizeof(longn) - 1] = 0;
    CHECK_EQ(tw_capture_add_iface(cap, longn, &err), -EINVAL);
    CHECK_EQ(tw_capture_add_iface(cap, NULL, &err), -EINVAL);
    for (int i = 0; i < TW_CAPTURE_MAX_IFACES; i++)
        CHECK_EQ(tw_capture_add_iface(cap, "i", &err), i);
    CHECK_EQ(tw_capture_add_iface(cap, "i", &err), -ENOSPC);
    CHECK_EQ(tw_capture_close(cap, NULL), 0);
    /* A write that fails part way: a child under RLIMIT_FSIZE. */
    cfg_caller(&c, "fsize");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {40000, 40000};
        setrlimit(RLIMIT_FSIZE, &rl);
        int bad = 0;
        if (tw_capture_open(&cap, &c, &err) != 0)
            _exit(10);
        tw_capture_add_iface(cap, "fsize", &err);
        uint8_t f[300];
        uint32_t n = cap_build_ip(f, 6, 1, 2, 3, 4, 200, 1);
        for (int i = 0; i < 2000; i++) {
            tw_capture_put(cap, 0, TW_CAPTURE_RX, (uint64_t)i, f, n);
            tw_capture_drain(cap, 1000);
        }
        tw_error e2;
        bad |= tw_capture_error(cap, &e2) != -EFBIG;
        bad |= strstr(e2.msg, "fsize.pcapng") == NULL;
        tw_capture_stats st;
        tw_capture_get_stats(cap, -1, &st);
        bad |= !(st.lost > 0 && st.write_errors == 1 && st.written + st.lost == 2000);
        int rc = tw_capture_close(cap, &st);
        bad |= rc != -EFBIG;
        _exit(bad ? 11 : 0);
    }
    int ws;
    REQUIRE(waitpid(pid, &ws, 0) == pid);
    CHECKF(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "fsize child: status %d", ws);
    cap_file cf;
    REQUIRE(cap_load(c.path, &cf) == 0);
    CHECKF(cf.first_shb && !cf.malformed && cf.whole == cf.len && cf.len <= 40000 &&
               cf.n_pkts > 0,
           "after EFBIG the file ends with a whole block (%zu bytes, %zu whole, %zu packets)",
           cf.len, cf.whole, cf.n_pkts);
    cap_free(&cf);
}

/* ---- writer thread ------------------------------------------------------ */

static void t_thread(void)
{
    tw_capture_config c;
    char p[400];
    path_of(p, sizeof(p), "thread");
    tw_capture_config_init(&c, p);
    c.ring_slots = 256;
    c.writer_idle_ns = 100000;
    tw_capture *cap;
    tw_error err;
    REQUIRE(tw_capture_open(&cap, &c, &err) == 0);
    tw_capture_add_iface(cap, "t", &err);
    uint8_t f[128];
    uint32_t n = cap_build_ip(f, 6, 1, 2, 3, 4, 40, 0);
    const uint32_t N = 200000;
    uint64_t ok = 0, full = 0;
    for (uint32_t i = 0; i < N; i++) {
        memcpy(f + 54, &i, 4);
        int r = tw_capture_put(cap, 0, (i & 1) ? TW_CAPTURE_RX : TW_CAPTURE_TX,
                               tw_capture_stamp(cap), f, n);
        ok += r == 1;
        full += r == -ENOBUFS;
        if (r == -ENOBUFS)
            sched_yield(); /* 2 cores: let the writer run */
    }
    tw_capture_stats st;
    CHECK_EQ(tw_capture_close(cap, &st), 0);
    CHECK(ok + full == N && st.kept == ok && st.dropped == full && st.written == ok);
    cap_file cf;
    REQUIRE(cap_load(c.path, &cf) == 0);
    CHECK(cf.n_pkts == ok && !cf.malformed && cf.whole == cf.len);
    uint32_t last = 0;
    size_t order = 0, back = 0;
    uint64_t lts[4] = {0};
    for (size_t i = 0; i < cf.n_pkts; i++) {
        uint32_t s;
        memcpy(&s, cf.pkts[i].data + 54, 4);
        order += i && s <= last;
        last = s;
        back += cf.pkts[i].ts < lts[cf.pkts[i].dir & 3];
        lts[cf.pkts[i].dir & 3] = cf.pkts[i].ts;
    }
    CHECK(order == 0 && back == 0);
    /* TSC stamps converted to wall-clock ns: within a minute of now. */
    int64_t now = tw_clock_epoch_ns();
    CHECKF(cf.n_pkts && llabs((long long)((int64_t)cf.pkts[0].ts - now)) < 60000000000ll,
           "TSC stamp %llu vs epoch %lld", cf.n_pkts ? (unsigned long long)cf.pkts[0].ts : 0ull,
           (long long)now);
    cap_free(&cf);
}

/* ---- the writer as a reactor poll ---------------------------------------- */

typedef struct prod_state {
    tw_capture *cap;
    uint32_t sent, n;
    uint8_t f[128];
    uint32_t len;
} prod_state;

static unsigned prod_poll(void *arg, tw_reactor_now *now)
{
    prod_state *ps = arg;
    unsigned done = 0;
    while (ps->sent < ps->n && done < 16) {
        memcpy(ps->f + 54, &ps->sent, 4);
        if (tw_capture_put(ps->cap, 0, TW_CAPTURE_RX, now->tsc, ps->f, ps->len) != 1)
            break; /* full: try again next turn (this test wants every frame) */
        ps->sent++;
        done++;
    }
    return done;
}

static void t_reactor(void)
{
    tw_capture_config c;
    cfg_caller(&c, "reactor");
    c.ring_slots = 64;
    tw_capture *cap;
    tw_error err;
    REQUIRE(tw_capture_open(&cap, &c, &err) == 0);
    tw_capture_add_iface(cap, "r", &err);
    static prod_state ps;
    memset(&ps, 0, sizeof(ps));
    ps.cap = cap;
    ps.n = 20000;
    ps.len = cap_build_ip(ps.f, 6, 1, 2, 3, 4, 40, 0);
    static tw_reactor r;
    tw_reactor_opts ro = {.mode = TW_REACTOR_YIELD};
    tw_reactor_init(&r, &ro);
    int c0 = tw_reactor_add_core(&r, -1), c1 = tw_reactor_add_core(&r, -1);
    REQUIRE(c0 >= 0 && c1 >= 0);
    CHECK_EQ(tw_reactor_add_poll(&r, c0, prod_poll, &ps), 0);
    CHECK_EQ(tw_reactor_add_poll(&r, c1, tw_capture_poll, cap), 0);
    REQUIRE(tw_reactor_start(&r, &err) == 0);
    /* Bounded wait (no timing asserted): the writer core has taken every
     * frame once written == n. */
    tw_capture_stats st;
    for (int i = 0; i < 60000; i++) {
        tw_capture_get_stats(cap, -1, &st);
        if (st.written == ps.n)
            break;
        tw_clock_sleep_ns(1000000);
    }
    tw_reactor_stop(&r);
    tw_reactor_join(&r);
    CHECK_EQ(tw_capture_close(cap, &st), 0);
    /* Frames that found the ring full were counted and offered again. */
    CHECK(st.written == ps.n && st.kept == ps.n);
    cap_file cf;
    REQUIRE(cap_load(c.path, &cf) == 0);
    size_t bad = 0;
    for (size_t i = 0; i < cf.n_pkts; i++) {
        uint32_t s;
        memcpy(&s, cf.pkts[i].data + 54, 4);
        bad += s != i;
    }
    CHECK(cf.n_pkts == ps.n && bad == 0);
    cap_free(&cf);
}

int main(int argc, char **argv)
{
    int keep = argc == 3 && !strcmp(argv[1], "--keep");
    if (keep) {
        snprintf(dir_path, sizeof(dir_path), "%s", argv[2]);
    } else {
        snprintf(dir_path, sizeof(dir_path), "/tmp/tw_capture_unit_XXXXXX");
        if (!mkdtemp(dir_path)) {
            perror("mkdtemp");
            return 1;
        }
    }
    have_tshark = cap_need_tools("capture_unit (tshark checks only)", 0) == 0;
    t_golden();
    t_filter();
    t_ring_full();
    t_port_hook();
    t_rotation();
    t_snap();
    t_spec();
    t_errors();
    t_thread();
    t_reactor();
    if (!keep && !tw_check_failures) {
        int st;
        free(cap_sh(&st, "rm -rf '%s'", dir_path));
    } else {
        fprintf(stderr, "capture_unit: files in %s\n", dir_path);
    }
    return tw_check_done("capture_unit");
}
