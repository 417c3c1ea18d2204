/* libFuzzer target of the capture (capture.h): the producer path and the
 * writer on arbitrary frames and configurations, and the pcapng reader on
 * arbitrary bytes.
 *
 * Input: byte 0 chooses.
 *   even: a capture.  Bytes 1-5: snap length (an index), ring size (2^1 ..
 *         2^8 slots), filter (none, TCP port 80, IP 10.0.0.2, rx only,
 *         port 81 keeping non-IP), rotation size (0: none, else 256 B
 *         steps, 2 bytes).  Then records [len:2 little-endian, mod 2049]
 *         [how:1][len bytes]: how bit 0 = direction tx, bit 1 = drain the
 *         ring after it, bit 2 = through tw_capture_put rather than the
 *         port hook.  The files written are read back with the library's
 *         reader and must hold, in order, exactly the frames kept (their
 *         first snap bytes and their length), as whole, well-formed
 *         blocks; a violation aborts.
 *   odd:  bytes 1.. are walked as a pcapng file: every block, every EPB
 *         decoded, every option looked up.  Nothing may crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tickwire/capture.h"
#include "tickwire/port.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A port whose rx returns the frame it is given and whose tx takes all. */
typedef struct fz_port {
    tw_port base;
    const uint8_t *frame;
    uint32_t len;
} fz_port;

static unsigned fz_rx(tw_port *p, tw_pkt *pkts, unsigned n)
{
    fz_port *z = (fz_port *)p;
    if (!n || !z->frame)
        return 0;
    pkts[0].data = (uint8_t *)(uintptr_t)z->frame;
    pkts[0].len = z->len;
    z->frame = NULL;
    return 1;
}
static unsigned fz_tx(tw_port *p, tw_pkt *pkts, unsigned n)
{
    (void)p, (void)pkts;
    return n;
}
static unsigned fz_alloc(tw_port *p, tw_pkt *pkts, unsigned n)
{
    (void)p, (void)pkts, (void)n;
    return 0;
}
static void fz_free(tw_port *p, tw_pkt *pkts, unsigned n) { (void)p, (void)pkts, (void)n; }
static void fz_close(tw_port *p) { (void)p; }
static const tw_port_ops fz_ops = {.name = "fuzz", .rx_burst = fz_rx, .tx_burst = fz_tx,
                                   .alloc_burst = fz_alloc, .free_burst = fz_free,
                                   .close = fz_close};

static void walk(const uint8_t *p, size_t n)
{
    size_t off = 0;
    while (off < n) {
        tw_pcapng_block b;
        long r = tw_pcapng_block_parse(p + off, n - off, &b);
        if (r < 0)
            return;
        TW_VERIFY(r >= 12 && (size_t)r <= n - off && b.body_len == b.len - 12);
        tw_pcapng_epb e;
        if (tw_pcapng_epb_decode(&b, &e) == 0)
            TW_VERIFY(e.data + e.cap_len <= b.body + b.body_len);
        for (uint16_t code = 0; code < 12; code++) {
            const uint8_t *v;
            uint16_t vl;
            if (tw_pcapng_option(&b, code, &v, &vl) == 1)
                TW_VERIFY(v >= b.body && v + vl <= b.body + b.body_len);
        }
        off += (size_t)r;
    }
}

/* The frames the capture must hold, in order. */
typedef struct kept {
    const uint8_t *data;
    uint32_t len;
    uint32_t dir;
} kept;
static kept want[65536];

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(len > 0 ? (size_t)len : 1);
    if (b && len > 0 && fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = (size_t)(len > 0 ? len : 0);
    return b;
}

static void capture(const uint8_t *d, size_t n)
{
    static const uint32_t snaps[] = {1, 14, 54, 64, 1514, 2048, 65520, 100};
    if (n < 6)
        return;
    char path[128];
    snprintf(path, sizeof(path), "/dev/shm/tw_fuzz_capture_%d.pcapng", (int)getpid());
    tw_capture_config c;
    tw_capture_config_init(&c, path);
    c.writer = TW_CAPTURE_WRITER_CALLER;
    c.snap_len = snaps[d[1] % 8];
    c.ring_slots = 1u << (1 + d[2] % 8);
    switch (d[3] % 5) {
    case 1: c.filter.tcp_port = 80; break;
    case 2: c.filter.ip = 0x0a000002; break;
    case 3: c.filter.dirs = TW_CAPTURE_RX; break;
    case 4: c.filter.tcp_port = 81; c.filter.flags = TW_CAPTURE_F_NON_IP; break;
    default: break;
    }
    c.file_max_bytes = (uint64_t)(d[4] | d[5] << 8) * 256u;
    c.files_max = 0;
    static fz_port z;
    memset(&z, 0, sizeof(z));
    z.base.ops = &fz_ops;
    tw_capture *cap;
    tw_error err;
    if (tw_port_capture_open(&z.base, &c, "fuzz", &cap, &err) != 0) {
        fprintf(stderr, "fuzz_capture: %s\n", err.msg);
        abort();
    }
    size_t nwant = 0;
    size_t off = 6;
    while (off + 3 <= n && nwant < TW_ARRAY_SIZE(want)) {
        uint32_t len = (uint32_t)(d[off] | d[off + 1] << 8) % 2049u;
        uint8_t how = d[off + 2];
        off += 3;
        if (len > n - off)
            len = (uint32_t)(n - off);
        const uint8_t *f = d + off;
        off += len;
        unsigned dir = (how & 1) ? TW_CAPTURE_TX : TW_CAPTURE_RX;
        uint32_t room = c.ring_slots - tw_ring_count(cap->ring);
        int match = tw_capture_match(cap, dir, f, len);
        if (how & 4) {
            int r = tw_capture_put(cap, 0, dir, off, f, len);
            TW_VERIFY(r == (match ? (room ? 1 : -ENOBUFS) : 0));
        } else if (dir == TW_CAPTURE_RX) {
            z.frame = f;
            z.len = len;
            tw_pkt pk[4];
            TW_VERIFY(tw_port_rx_burst(&z.base, pk, 4) == 1);
        } else {
            tw_pkt pk = {.data = (uint8_t *)(uintptr_t)f, .len = len};
            TW_VERIFY(tw_port_tx_burst(&z.base, &pk, 1) == 1);
        }
        if (match && room)
            want[nwant++] = (kept){f, len, dir};
        if (how & 2)
            tw_capture_drain(cap, 1u << (how >> 4));
    }
    tw_port_capture_detach(&z.base);
    tw_capture_stats st;
    TW_VERIFY(tw_capture_close(cap, &st) == 0);
    TW_VERIFY(st.written == nwant && st.lost == 0);
    size_t at = 0;
    for (uint64_t k = 0; k < st.files; k++) {
        char p[160];
        if (k == 0)
            snprintf(p, sizeof(p), "%s", path);
        else
            snprintf(p, sizeof(p), "/dev/shm/tw_fuzz_capture_%d.%llu.pcapng", (int)getpid(),
                     (unsigned long long)k);
        size_t fl;
        uint8_t *b = slurp(p, &fl);
        TW_VERIFY(b != NULL);
        size_t o = 0, npk = 0;
        int first = 1;
        while (o < fl) {
            tw_pcapng_block blk;
            long r = tw_pcapng_block_parse(b + o, fl - o, &blk);
            TW_VERIFY(r > 0); /* whole, well-formed blocks only */
            TW_VERIFY(!first || blk.type == 0x0A0D0D0Au);
            first = 0;
            if (blk.type == 6) {
                tw_pcapng_epb e;
                TW_VERIFY(tw_pcapng_epb_decode(&blk, &e) == 0 && at < nwant);
                const kept *w = &want[at++];
                npk++;
                uint32_t cl = w->len < c.snap_len ? w->len : c.snap_len;
                TW_VERIFY(e.iface == 0 && e.orig_len == w->len && e.cap_len == cl &&
                          (e.flags & 3u) == w->dir && !memcmp(e.data, w->data, cl));
            }
            o += (size_t)r;
        }
        /* Over the limit only a file of one packet (the first packet of a
         * file always goes in). */
        TW_VERIFY(!c.file_max_bytes || fl <= c.file_max_bytes || npk <= 1);
        free(b);
        unlink(p);
    }
    TW_VERIFY(at == nwant);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        walk(data + 1, size - 1);
    else
        capture(data, size);
    return 0;
}
