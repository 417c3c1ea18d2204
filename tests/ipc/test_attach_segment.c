/* Hostile and torn segments: a real gateway's segment, copied and damaged
 * one field at a time (each refused with the field named), every bit of
 * its header flipped (refused where the CRC covers it, never a crash),
 * its first ring's header flipped bit by bit, random segments. */
#include <errno.h>

#include "attach_test_util.h"
#include "tickwire/util.h" /* tw_crc32c */
#include "tickwire/strategy.h"
#include "tw_check.h"

/* The engine's records are what the journal and the rings carry. */
_Static_assert(sizeof(tw_ev) == TW_JOURNAL_PAYLOAD, "a tw_ev is one journal payload");
_Static_assert(sizeof(tw_out) == TW_JOURNAL_PAYLOAD && sizeof(tw_out) == TW_ATTACH_OUT_SLOT,
               "a tw_out is one journal payload and one outbound slot");

static uint8_t *seg, *work;
static size_t seg_bytes;
static uint32_t n_cores;

static void fix_crc(uint8_t *b)
{
    tw_attach_hdr *h = (tw_attach_hdr *)b;
    uint8_t g[TW_ATTACH_REGION];
    memcpy(g, b, sizeof(g));
    memset(g + offsetof(tw_attach_hdr, geom_crc), 0, 4);
    uint32_t c = tw_crc32c(0, g, sizeof(g));
    uint32_t n = h->n_rings <= 2 * TW_ATTACH_MAX_CORES ? h->n_rings : 0;
    h->geom_crc = tw_crc32c(c, h->ring, n * sizeof(h->ring[0]));
}

static void fresh(void) { memcpy(work, seg, seg_bytes); }

/* Checks work (seg_bytes, or size) and expects code with what in the message. */
static void expect(const char *name, size_t size, int code, const char *what)
{
    tw_error err = {0};
    tw_ring *rings[2 * TW_ATTACH_MAX_CORES];
    int rc = tw_attach_check_segment(work, size, rings, NULL, &err);
    CHECKF(rc == code && (!what || strstr(err.msg, what)), "%s: %d (want %d): %s", name, rc, code,
           err.msg);
}

static tw_attach_hdr *H(void) { return (tw_attach_hdr *)work; }

static void test_fields(void)
{
    fresh();
    tw_error err = {0};
    tw_ring *rings[2 * TW_ATTACH_MAX_CORES];
    uint32_t nc = 0;
    REQUIRE(tw_attach_check_segment(work, seg_bytes, rings, &nc, &err) == 0);
    CHECK_EQ(nc, n_cores);
    CHECK(rings[0] == (tw_ring *)(work + H()->ring[0].off));
    CHECK_EQ(tw_ring_slot_size(rings[n_cores]), TW_ATTACH_OUT_SLOT);

    fresh();
    expect("short", TW_ATTACH_HDR_BYTES - 1, -EINVAL, "smaller");
    CHECK_EQ(tw_attach_check_segment(work + 8, seg_bytes - 8, NULL, NULL, &err), -EINVAL);
    CHECKF(strstr(err.msg, "misaligned"), "%s", err.msg);
    H()->magic = 0;
    expect("no magic (not initialised)", seg_bytes, -EPROTO, "magic");
    fresh();
    H()->version = 9;
    expect("version", seg_bytes, -EPROTONOSUPPORT, "version 9");
    fresh();
    H()->hdr_bytes = 8192;
    expect("hdr_bytes", seg_bytes, -EBADMSG, "hdr_bytes 8192");
    fresh();
    expect("mapped short", seg_bytes - 4096, -EBADMSG, "seg_bytes");
    H()->n_cores = 0;
    expect("no cores", seg_bytes, -EBADMSG, "n_cores 0");
    H()->n_cores = TW_ATTACH_MAX_CORES + 1;
    expect("too many cores", seg_bytes, -EBADMSG, "n_cores 17");
    fresh();
    H()->n_rings = 3;
    expect("n_rings", seg_bytes, -EBADMSG, "n_rings 3");
    fresh();
    H()->pad1_[5] ^= 1;
    expect("geometry CRC", seg_bytes, -EBADMSG, "CRC");
    fresh();
    H()->ring[1].off ^= 1;
    expect("table CRC", seg_bytes, -EBADMSG, "CRC");

    /* Descriptors, with the CRC made to match: the field checks hold. */
    struct {
        const char *name;
        int ring, field;
        int64_t delta;
        const char *what;
    } t[] = {
        {"inbound ring marked outbound", 0, 0, 1, "ring 0 (core 0 inbound)"},
        {"wrong core", 1, 1, 1, "ring 1 (core 1 inbound)"},
        {"wrong slot size", 0, 2, -16, "slot 64"},
        {"count not a power of two", 0, 3, 1, "need 0 bytes"},
        {"mem_bytes", 2, 4, 128, "descriptor says"},
        {"offset misaligned", 2, 5, 64, "misaligned"},
        {"offset overlapping", 1, 5, -128, "overlaps"},
        {"offset beyond", 3, 5, 1 << 24, "leaves"},
    };
    for (size_t i = 0; i < TW_ARRAY_SIZE(t); i++) {
        fresh();
        tw_attach_ring_desc *d = &H()->ring[t[i].ring];
        switch (t[i].field) {
        case 0: d->dir = TW_ATTACH_OUT; break;
        case 1: d->core += (uint32_t)t[i].delta; break;
        case 2: d->slot_size += (uint32_t)t[i].delta; break;
        case 3: d->count += (uint32_t)t[i].delta; break;
        case 4: d->mem_bytes += (uint64_t)t[i].delta; break;
        case 5: d->off += (uint64_t)t[i].delta; break;
        }
        fix_crc(work);
        expect(t[i].name, seg_bytes, -EBADMSG, t[i].what);
    }

    /* The rings themselves (ring.h's checks, reported per ring). */
    fresh();
    tw_ring *r0 = (tw_ring *)(work + H()->ring[0].off);
    r0->magic = 0;
    expect("ring not initialised", seg_bytes, -EBADMSG, "ring 0 (core 0 inbound): ");
    fresh();
    r0 = (tw_ring *)(work + H()->ring[0].off);
    uint32_t cnt = H()->ring[0].count;
    REQUIRE(tw_ring_init(r0, cnt / 2, 2 * TW_ATTACH_IN_SLOT) == 0); /* same bytes, other geometry */
    expect("ring of another geometry", seg_bytes, -EBADMSG, "the descriptor says");
    /* A ring whose strategy side was left mid-reserve (a dead strategy's,
     * not reset) or mid-peek: refused, so a new strategy never inherits it. */
    fresh();
    tw_ring *o0 = (tw_ring *)(work + H()->ring[n_cores].off);
    o0->prod.pending = 1;
    expect("outbound ring left reserved", seg_bytes, -EBADMSG, "1 slots pending");
    fresh();
    r0 = (tw_ring *)(work + H()->ring[0].off);
    r0->cons.pending = 2;
    expect("inbound ring left peeked", seg_bytes, -EBADMSG, "ring 0 (core 0 inbound): the strategy's side");
    fresh();
    tw_ring *o1 = (tw_ring *)(work + H()->ring[n_cores + 1].off);
    o1->prod.idx = o1->cons.idx + tw_ring_capacity(o1) + 1;
    expect("ring indices", seg_bytes, -EBADMSG, "ring 3 (core 1 outbound)");
}

/* Every bit of the header page's meaningful bytes flipped: refused where
 * the geometry CRC covers it, and never a crash; the first ring's header
 * likewise (ring.h decides, the segment check reports). */
static void test_bit_flips(void)
{
    size_t table_end = offsetof(tw_attach_hdr, ring) + 2 * n_cores * sizeof(tw_attach_ring_desc);
    int refused = 0, covered = 0;
    for (size_t bit = 0; bit < table_end * 8; bit++) {
        fresh();
        work[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        size_t byte = bit / 8;
        int in_crc = byte < TW_ATTACH_REGION || byte >= offsetof(tw_attach_hdr, ring);
        tw_error err = {0};
        int rc = tw_attach_check_segment(work, seg_bytes, NULL, NULL, &err);
        if (in_crc) {
            covered++;
            CHECKF(rc < 0, "bit %zu of the geometry accepted", bit);
        }
        refused += rc < 0;
    }
    CHECK(refused >= covered);
    uint64_t r0 = ((tw_attach_hdr *)seg)->ring[0].off;
    int ring_refused = 0;
    for (size_t bit = 0; bit < TW_RING_HDR_BYTES * 8; bit++) {
        fresh();
        work[r0 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
        tw_error err = {0};
        int rc = tw_attach_check_segment(work, seg_bytes, NULL, NULL, &err);
        if (rc < 0) {
            CHECKF(strstr(err.msg, "ring 0"), "bit %zu: %s", bit, err.msg);
            ring_refused++;
        }
    }
    printf("header bits flipped: %zu (%d under the CRC, %d refused); ring 0 header bits: %u "
           "(%d refused)\n",
           table_end * 8, covered, refused, TW_RING_HDR_BYTES * 8, ring_refused);
    CHECK(ring_refused > 0);
}

/* Random segments: with the magic and version right, and with a CRC that
 * matches random geometry too. */
static void test_random(void)
{
    uint64_t s = 12345;
    for (int i = 0; i < 2000; i++) {
        for (size_t k = 0; k < TW_ATTACH_HDR_BYTES; k += 8) {
            s = ju_mix(s);
            memcpy(work + k, &s, 8);
        }
        tw_attach_hdr *h = H();
        h->magic = TW_ATTACH_MAGIC;
        h->version = TW_ATTACH_VERSION;
        h->hdr_bytes = TW_ATTACH_HDR_BYTES;
        h->seg_bytes = seg_bytes;
        if (i & 1) {
            h->n_cores = 1 + (uint32_t)(s % TW_ATTACH_MAX_CORES);
            h->n_rings = 2 * h->n_cores;
            fix_crc(work);
        }
        tw_error err = {0};
        CHECK(tw_attach_check_segment(work, seg_bytes, NULL, NULL, &err) < 0);
    }
}

int main(void)
{
    char dir[256], jp[300], sock[300];
    ju_mkdir(dir, sizeof(dir), "attach-seg");
    snprintf(jp, sizeof(jp), "%s/j", dir);
    snprintf(sock, sizeof(sock), "%s/s", dir);
    tw_journal j;
    tw_error err = {0};
    tw_journal_cfg jc = {.path = jp};
    if (tw_journal_open(&j, &jc, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    tw_attach_gw g;
    tw_attach_gw_cfg gc = {.sock_path = sock, .n_cores = 2, .in_count = 16, .out_count = 8,
                           .journal = &j};
    if (tw_attach_gw_open(&g, &gc, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    n_cores = 2;
    seg_bytes = g.seg_bytes;
    seg = aligned_alloc(4096, seg_bytes);
    work = aligned_alloc(4096, seg_bytes);
    memcpy(seg, g.seg, seg_bytes);
    tw_attach_gw_close(&g);
    tw_journal_close(&j);
    /* A bad configuration never gets as far as a segment. */
    gc.in_count = 3;
    CHECK_EQ(tw_attach_gw_open(&g, &gc, &err), -EINVAL);
    tw_attach_gw_cfg none = {.sock_path = sock, .n_cores = 1, .in_count = 4, .out_count = 4};
    CHECK_EQ(tw_attach_gw_open(&g, &none, &err), -EINVAL); /* no journal */
    test_fields();
    test_bit_flips();
    test_random();
    free(seg);
    free(work);
    ju_rmdir(dir);
    return tw_check_done("attach_segment");
}
