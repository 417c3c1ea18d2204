/* Random frames through the capture path: for each
 * seed, a random capture configuration (snap length, ring size, filter,
 * rotation size) and a few thousand frames, valid Ethernet/IPv4/TCP ones,
 * mutated ones (bits flipped, cut at any byte, header fields set to
 * extremes) and garbage of any length from 0 to 2048 bytes, sent and
 * received through the port layer's hook on a scripted port (random
 * bursts, the backend taking part of a tx burst) and by tw_capture_put
 * directly, with the writer draining at random.  Checked: nothing
 * crashes (ASan/UBSan in the sanitizer build); every file is whole
 * blocks our reader accepts and holds exactly the frames the stats say,
 * each equal to the frame's first bytes up to the snap length; and tshark
 * reads every file with exit status 0 and no complaint, frame count equal.
 *
 *   capture_fuzz [--seeds N] [--first S]     (a failure prints its seed)
 * Skips (77) without tshark. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/capcheck.h"
#include "tickwire/port.h"
#include "tw_check.h"

static char dir_path[256];
static uint64_t rng;

static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint32_t rndn(uint32_t n) { return n ? (uint32_t)(rnd() % n) : 0; }

/* A random frame into f (2048 bytes of room); returns its length. */
static uint32_t random_frame(uint8_t *f)
{
    uint32_t len;
    switch (rndn(4)) {
    case 0: /* valid TCP/IP */
        len = cap_build_ip(f, 6, 0x0a000000 | rndn(4), (uint16_t)(rndn(3) + 79),
                           0x0a000000 | rndn(4), (uint16_t)(rndn(3) + 79), rndn(1460),
                           (uint8_t)rnd());
        break;
    case 1: /* valid, then mutated */
        len = cap_build_ip(f, rndn(2) ? 6 : 17, 0x0a000001, 80, 0x0a000002, (uint16_t)rndn(65536),
                           rndn(200), 0x55);
        for (uint32_t k = rndn(8); k; k--)
            f[rndn(len)] ^= (uint8_t)(1u << rndn(8));
        if (rndn(2))
            f[14] = (uint8_t)rnd(); /* version / IHL anything */
        if (rndn(2))
            len = rndn(len + 1); /* cut anywhere, even to 0 */
        break;
    case 2: /* ARP, maybe cut */
        len = cap_build_arp(f);
        if (rndn(2))
            len = rndn(len + 1);
        break;
    default: /* garbage of any length */
        len = rndn(2049);
        for (uint32_t k = 0; k < len; k++)
            f[k] = (uint8_t)rnd();
        if (len >= 14 && rndn(2)) {
            f[12] = 8; /* claims IPv4 */
            f[13] = 0;
        }
        break;
    }
    return len;
}

/* Frames that must be in the files, in order (a copy of their first
 * snap bytes and their length). */
typedef struct want_frame {
    uint32_t len;
    uint8_t dir;
    uint8_t bytes[2048];
} want_frame;
static want_frame want[8192];

static void one_seed(uint64_t seed)
{
    rng = seed;
    int fails0 = tw_check_failures;
    char base[400];
    snprintf(base, sizeof(base), "%s/fz%llu.pcapng", dir_path, (unsigned long long)seed);
    tw_capture_config c;
    tw_capture_config_init(&c, base);
    c.writer = TW_CAPTURE_WRITER_CALLER;
    static const uint32_t snaps[] = {1, 13, 14, 54, 64, 100, 1514, 2048, 65520};
    c.snap_len = snaps[rndn(TW_ARRAY_SIZE(snaps))];
    c.ring_slots = 1u << (1 + rndn(8));
    if (rndn(3) == 0)
        c.file_max_bytes = 200 + rndn(60000);
    switch (rndn(5)) {
    case 0: c.filter.tcp_port = 80; break;
    case 1: c.filter.ip = 0x0a000002; break;
    case 2: c.filter.dirs = TW_CAPTURE_RX; break;
    case 3: c.filter.tcp_port = 81; c.filter.flags = TW_CAPTURE_F_NON_IP; break;
    default: break;
    }
    static cap_port z;
    cap_port_init(&z);
    tw_capture *cap;
    tw_error err;
    REQUIRE(tw_port_capture_open(&z.base, &c, "fuzz0", &cap, &err) == 0);
    size_t nwant = 0;
    uint64_t filt = 0, drop = 0;
    for (int round = 0; round < 200 && nwant + 64 < TW_ARRAY_SIZE(want); round++) {
        unsigned n = 1 + rndn(64), dir = rndn(3);
        for (unsigned i = 0; i < n; i++)
            z.len[i] = random_frame(z.mem[i]);
        uint32_t room = c.ring_slots - tw_ring_count(cap->ring);
        unsigned done = n;
        if (dir == 0) {
            z.rx_n = n;
            tw_pkt pk[64];
            CHECK_EQ(tw_port_rx_burst(&z.base, pk, 64), n);
        } else if (dir == 1) {
            tw_pkt pk[64];
            for (unsigned i = 0; i < n; i++) {
                pk[i].data = z.mem[i];
                pk[i].len = z.len[i];
            }
            z.tx_take = rndn(n + 1);
            done = z.tx_take;
            CHECK_EQ(tw_port_tx_burst(&z.base, pk, n), done);
        } else {
            for (unsigned i = 0; i < n; i++)
                tw_capture_put(cap, 0, TW_CAPTURE_RX, rnd(), z.mem[i], z.len[i]);
        }
        /* The model: the frames the filter keeps, while there is room. */
        unsigned d = dir == 1 ? TW_CAPTURE_TX : TW_CAPTURE_RX;
        for (unsigned i = 0; i < done; i++) {
            if (!tw_capture_match(cap, d, z.mem[i], z.len[i])) {
                filt++;
                continue;
            }
            if (!room) {
                drop++;
                continue;
            }
            room--;
            want_frame *w = &want[nwant++];
            w->len = z.len[i];
            w->dir = (uint8_t)d;
            memcpy(w->bytes, z.mem[i], z.len[i] < c.snap_len ? z.len[i] : c.snap_len);
        }
        if (rndn(3) == 0)
            tw_capture_drain(cap, rndn(100));
    }
    tw_port_capture_detach(&z.base);
    tw_capture_stats st;
    CHECK_EQ(tw_capture_close(cap, &st), 0);
    CHECKF(st.written == nwant && st.filtered == filt && st.dropped == drop,
           "written %llu / %zu, filtered %llu / %llu, dropped %llu / %llu",
           (unsigned long long)st.written, nwant, (unsigned long long)st.filtered,
           (unsigned long long)filt, (unsigned long long)st.dropped, (unsigned long long)drop);
    /* Every file: whole blocks, and together the model's frames in order.
     * tshark reads them all at once: concatenated, each file is a section
     * of one pcapng (a Section Header starts each). */
    char all[600];
    snprintf(all, sizeof(all), "%s/fz%llu_all.pcapng", dir_path, (unsigned long long)seed);
    FILE *allf = fopen(all, "wb");
    REQUIRE(allf);
    size_t at = 0;
    for (uint64_t k = 0; k < st.files; k++) {
        char p[600];
        if (k == 0)
            snprintf(p, sizeof(p), "%s", base);
        else
            snprintf(p, sizeof(p), "%s/fz%llu.%llu.pcapng", dir_path, (unsigned long long)seed,
                     (unsigned long long)k);
        cap_file f;
        if (cap_load(p, &f) != 0) {
            CHECKF(0, "cannot read %s", p);
            break;
        }
        CHECKF(f.first_shb && !f.malformed && f.whole == f.len, "%s: whole blocks", p);
        if (c.file_max_bytes && f.n_pkts > 1)
            CHECKF(f.len <= c.file_max_bytes, "%s: %zu bytes over the %llu limit", p, f.len,
                   (unsigned long long)c.file_max_bytes);
        for (size_t i = 0; i < f.n_pkts && at < nwant; i++, at++) {
            const cap_pkt *q = &f.pkts[i];
            const want_frame *w = &want[at];
            uint32_t cl = w->len < c.snap_len ? w->len : c.snap_len;
            if (q->orig_len != w->len || q->cap_len != cl || q->dir != w->dir ||
                memcmp(q->data, w->bytes, cl)) {
                CHECKF(0, "%s: packet %zu (frame %zu) differs: len %u/%u cap %u/%u dir %u/%u", p,
                       i, at, q->orig_len, w->len, q->cap_len, cl, q->dir, w->dir);
                break;
            }
        }
        CHECK(fwrite(f.bytes, 1, f.len, allf) == f.len);
        cap_free(&f);
        unlink(p);
    }
    CHECK(fclose(allf) == 0);
    CHECKF(at == nwant, "files held %zu of %zu frames", at, nwant);
    long frames;
    char why[512];
    CHECKF(cap_tshark_read(all, &frames, why, sizeof(why)) == 0 && frames == (long)nwant,
           "%s (%llu files): tshark read %ld of %zu frames: %s", all,
           (unsigned long long)st.files, frames, nwant, why);
    if (tw_check_failures == fails0)
        unlink(all);
    if (tw_check_failures != fails0)
        fprintf(stderr, "capture_fuzz: seed %llu failed (replay: capture_fuzz --seeds 1 "
                        "--first %llu)\n", (unsigned long long)seed, (unsigned long long)seed);
}

int main(int argc, char **argv)
{
    uint64_t seeds = 40, first = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seeds"))
            seeds = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--first"))
            first = strtoull(argv[i + 1], NULL, 0);
    }
    int rc = cap_need_tools("capture_fuzz", 0);
    if (rc)
        return rc;
    snprintf(dir_path, sizeof(dir_path), "/tmp/tw_capture_fuzz_XXXXXX");
    if (!mkdtemp(dir_path)) {
        perror("mkdtemp");
        return 1;
    }
    for (uint64_t s = first; s < first + seeds; s++)
        one_seed(s);
    int st;
    if (!tw_check_failures)
        free(cap_sh(&st, "rm -rf '%s'", dir_path));
    else
        fprintf(stderr, "capture_fuzz: files kept in %s\n", dir_path);
    return tw_check_done("capture_fuzz");
}
