/* The journal in one process: records written and read back, a torn
 * tail cut at every byte of the last record, every bit of a small journal
 * flipped, damage of each kind refused with its offset, the fsync
 * policies, failed appends rolled back, one writer at a time, the mapped
 * mode, following a journal being appended to. */
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>

#include "journal_test_util.h"
#include "tickwire/util.h" /* tw_crc32c */
#include "tw_check.h"

#define HDR TW_JOURNAL_HDR_BYTES
#define REC TW_JOURNAL_REC_BYTES

static char dir[256], path[512];

/* Appends records first..first+n-1 (payload ju_payload(seq)). */
static int put(tw_journal *j, uint64_t n)
{
    uint8_t pl[TW_JOURNAL_PAYLOAD];
    for (uint64_t i = 0; i < n; i++) {
        ju_payload(j->next_seq, pl);
        int rc = tw_journal_append(j, TW_JOURNAL_EV + (j->next_seq & 1), pl, NULL);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static void make(const char *p, uint64_t n, uint64_t mmap_bytes)
{
    unlink(p);
    tw_journal j;
    tw_error err = {0};
    tw_journal_cfg cfg = {.path = p, .mmap_bytes = mmap_bytes};
    int rc = tw_journal_open(&j, &cfg, &err);
    CHECKF(rc == 0, "%s", err.msg);
    CHECK_EQ(put(&j, n), 0);
    tw_journal_close(&j);
}

/* Reads the whole journal at p (not following).  Returns the records read
 * (each checked: seq in order from 1, payload) or the error; r->counters
 * stay for the caller. */
static int read_all(const char *p, tw_journal_reader *r, tw_error *err)
{
    tw_journal_reader_cfg rc = {.path = p, .buf_records = 3};
    int e = tw_journal_reader_open(r, &rc, err);
    if (e != 0)
        return e;
    tw_journal_rec recs[5];
    int total = 0, k;
    uint64_t want = r->first_seq;
    while ((k = tw_journal_read_burst(r, recs, 5, err)) > 0) {
        for (int i = 0; i < k; i++) {
            CHECK_EQ(recs[i].seq, want);
            CHECK(ju_payload_ok(&recs[i]));
            CHECK_EQ(tw_journal_rec_kind(&recs[i]), TW_JOURNAL_EV + (recs[i].seq & 1));
            want++;
        }
        total += k;
    }
    tw_journal_reader_close(r);
    return k < 0 ? k : total;
}

/* 1 if msg says "offset N" with N exactly off. */
static int names_offset(const char *msg, uint64_t off)
{
    char pat[48];
    snprintf(pat, sizeof(pat), "at offset %llu", (unsigned long long)off);
    const char *s = strstr(msg, pat);
    return s && !(s[strlen(pat)] >= '0' && s[strlen(pat)] <= '9');
}

static void test_basic(void)
{
    make(path, 0, 0);
    tw_journal j;
    tw_error err = {0};
    tw_journal_cfg cfg = {.path = path};
    REQUIRE(tw_journal_open(&j, &cfg, &err) == 0);
    CHECK_EQ(j.records, 0);
    CHECK_EQ(tw_journal_next_seq(&j), 1);
    uint8_t pl[TW_JOURNAL_PAYLOAD];
    ju_payload(1, pl);
    tw_journal_rec r;
    CHECK_EQ(tw_journal_append(&j, 0, pl, NULL), -EINVAL);
    CHECK_EQ(tw_journal_append(&j, 256, pl, NULL), -EINVAL);
    CHECK_EQ(tw_journal_next_seq(&j), 1);
    CHECK_EQ(tw_journal_append(&j, TW_JOURNAL_OUT, pl, &r), 0);
    CHECK_EQ(r.seq, 1);
    CHECK_EQ(tw_journal_rec_kind(&r), TW_JOURNAL_OUT);
    CHECK_EQ(r.crc, tw_journal_rec_crc(&r));
    CHECK(memcmp(r.payload, pl, sizeof(pl)) == 0);
    /* A bulk append: one write, recs as written. */
    uint8_t many[40][TW_JOURNAL_PAYLOAD];
    tw_journal_rec out[40];
    for (int i = 0; i < 40; i++)
        ju_payload(2 + (uint64_t)i, many[i]);
    CHECK_EQ(tw_journal_append_bulk(&j, TW_JOURNAL_OUT, many, 0, NULL), 0);
    CHECK_EQ(tw_journal_append_bulk(&j, TW_JOURNAL_EV, many, 40, out), 0);
    CHECK_EQ(out[39].seq, 41);
    CHECK_EQ(j.records, 41);
    CHECK_EQ(j.appends, 41);
    /* One writer at a time; readers any time. */
    tw_journal j2;
    tw_error e2 = {0};
    CHECK_EQ(tw_journal_open(&j2, &cfg, &e2), -EBUSY);
    CHECKF(strstr(e2.msg, "another writer") && strstr(e2.msg, path), "%s", e2.msg);
    tw_journal_reader rd;
    tw_journal_reader_cfg rcfg = {.path = path, .from_seq = 40};
    REQUIRE(tw_journal_reader_open(&rd, &rcfg, &err) == 0);
    tw_journal_rec got[4];
    CHECK_EQ(tw_journal_read_burst(&rd, got, 4, &err), 2);
    CHECK_EQ(got[0].seq, 40);
    CHECK(memcmp(got[1].payload, many[39], sizeof(pl)) == 0);
    CHECK_EQ(tw_journal_read_burst(&rd, got, 4, &err), 0);
    CHECK_EQ(rd.torn_bytes + rd.zero_bytes, 0);
    CHECK_EQ(tw_journal_reader_seek(&rd, 0), -EINVAL);
    CHECK_EQ(tw_journal_reader_seek(&rd, 1), 0);
    CHECK_EQ(tw_journal_read_burst(&rd, got, 1, &err), 1);
    CHECK_EQ(got[0].seq, 1);
    CHECK_EQ(tw_journal_rec_kind(&got[0]), TW_JOURNAL_OUT);
    tw_journal_reader_close(&rd);
    tw_journal_close(&j);
    /* Reopened: it goes on after the last record. */
    REQUIRE(tw_journal_open(&j, &cfg, &err) == 0);
    CHECK_EQ(j.records, 41);
    CHECK_EQ(tw_journal_next_seq(&j), 42);
    CHECK_EQ(j.torn_bytes + j.zero_bytes, 0);
    tw_journal_close(&j);

    /* A journal that starts elsewhere keeps its first seq. */
    char p2[600];
    snprintf(p2, sizeof(p2), "%s/first", dir);
    tw_journal_cfg c2 = {.path = p2, .first_seq = 1000};
    REQUIRE(tw_journal_open(&j, &c2, &err) == 0);
    CHECK_EQ(tw_journal_next_seq(&j), 1000);
    CHECK_EQ(tw_journal_append(&j, TW_JOURNAL_EV, pl, &r), 0);
    CHECK_EQ(r.seq, 1000);
    tw_journal_close(&j);
    c2.first_seq = 5; /* ignored: the file says 1000 */
    REQUIRE(tw_journal_open(&j, &c2, &err) == 0);
    CHECK_EQ(tw_journal_next_seq(&j), 1001);
    tw_journal_close(&j);
    rcfg = (tw_journal_reader_cfg){.path = p2, .from_seq = 5};
    CHECK_EQ(tw_journal_reader_open(&rd, &rcfg, &err), -EINVAL);
    CHECK_EQ(rd.fd, -1);
    unlink(p2);
    /* A missing file is no journal to read; an empty one is a new journal
     * to the writer and -ENODATA to a reader. */
    rcfg = (tw_journal_reader_cfg){.path = p2};
    CHECK_EQ(tw_journal_reader_open(&rd, &rcfg, &err), -ENOENT);
    CHECK(ju_spill(p2, "", 0) == 0);
    CHECK_EQ(tw_journal_reader_open(&rd, &rcfg, &err), -ENODATA);
    tw_journal_cfg c3 = {.path = p2};
    REQUIRE(tw_journal_open(&j, &c3, &err) == 0);
    CHECK_EQ(j.size, HDR);
    tw_journal_close(&j);
    unlink(p2);
}

/* The last of K records cut at every byte: the records before it read
 * back, the cut record is dropped and counted, and the writer goes on
 * from there.  A header cut at every byte (by fd: a journal being
 * created) is a new journal to the writer. */
static void test_torn_every_byte(uint64_t mmap_bytes)
{
    enum { K = 5 };
    make(path, K, 0);
    size_t len;
    uint8_t *whole = ju_slurp(path, &len);
    REQUIRE(whole && len == HDR + K * REC);
    for (unsigned c = 0; c < REC; c++) {
        size_t cut = HDR + (K - 1) * REC + c;
        REQUIRE(ju_spill(path, whole, cut) == 0);
        tw_journal_reader r;
        tw_error err = {0};
        int n = read_all(path, &r, &err);
        CHECKF(n == K - 1, "cut %u: %d (%s)", c, n, err.msg);
        CHECK_EQ(r.torn_bytes, c);
        if (c)
            CHECK_EQ(r.torn_offset, HDR + (K - 1) * REC);
        tw_journal j;
        tw_journal_cfg cfg = {.path = path, .mmap_bytes = mmap_bytes};
        int rc = tw_journal_open(&j, &cfg, &err);
        CHECKF(rc == 0, "cut %u: %s", c, err.msg);
        if (rc != 0)
            continue;
        CHECK_EQ(j.records, K - 1);
        CHECK_EQ(j.torn_bytes, c);
        CHECK_EQ(tw_journal_next_seq(&j), K);
        CHECK_EQ(put(&j, 2), 0);
        tw_journal_close(&j);
        n = read_all(path, &r, &err);
        CHECKF(n == K + 1, "cut %u, after 2 more: %d (%s)", c, n, err.msg);
        CHECK_EQ(r.torn_bytes + r.zero_bytes, 0);
    }
    /* The header cut at every byte, written by fd. */
    for (unsigned c = 1; c < HDR; c++) {
        REQUIRE(ju_spill(path, whole, c) == 0);
        tw_journal_reader r;
        tw_error err = {0};
        tw_journal_reader_cfg rc = {.path = path};
        CHECK_EQ(tw_journal_reader_open(&r, &rc, &err), -ENODATA);
        int fd = open(path, O_RDWR);
        REQUIRE(fd >= 0);
        tw_journal j;
        tw_journal_cfg cfg = {.fd = fd, .mmap_bytes = mmap_bytes};
        int e = tw_journal_open(&j, &cfg, &err);
        CHECKF(e == 0, "header cut at %u: %s", c, err.msg);
        if (e != 0)
            continue;
        CHECK_EQ(j.torn_bytes, c);
        CHECK_EQ(put(&j, 1), 0);
        tw_journal_close(&j);
        CHECK_EQ(read_all(path, &r, &err), 1);
    }
    /* A short file that is not a header prefix is refused, not rewritten. */
    uint8_t bad[10] = "TWJRNLxx";
    REQUIRE(ju_spill(path, bad, sizeof(bad)) == 0);
    tw_journal j;
    tw_error err = {0};
    tw_journal_cfg cfg = {.path = path};
    CHECK_EQ(tw_journal_open(&j, &cfg, &err), -TW_EFORMAT);
    CHECKF(names_offset(err.msg, 0) && strstr(err.msg, path), "%s", err.msg);
    size_t l2;
    uint8_t *after = ju_slurp(path, &l2);
    CHECK(after && l2 == sizeof(bad) && memcmp(after, bad, sizeof(bad)) == 0);
    free(after);
    free(whole);
}

/* Every bit of a journal of K records flipped, one at a time: in the
 * header or in a record before the last, the reader and the writer refuse
 * it naming the offset (and the writer leaves the file as it was); in the
 * last record, it is a torn tail: dropped and counted. */
static void test_bit_flips(void)
{
    enum { K = 4 };
    make(path, K, 0);
    size_t len;
    uint8_t *whole = ju_slurp(path, &len);
    REQUIRE(whole && len == HDR + K * REC);
    uint8_t *b = malloc(len);
    uint64_t last = HDR + (K - 1) * REC;
    int refused = 0, dropped = 0;
    for (size_t bit = 0; bit < len * 8; bit++) {
        memcpy(b, whole, len);
        b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        REQUIRE(ju_spill(path, b, len) == 0);
        size_t byte = bit / 8;
        uint64_t rec_off = byte < HDR ? 0 : HDR + (byte - HDR) / REC * REC;
        tw_journal_reader r;
        tw_error err = {0};
        int n = read_all(path, &r, &err);
        tw_journal j;
        tw_error werr = {0};
        tw_journal_cfg cfg = {.path = path};
        int wrc = tw_journal_open(&j, &cfg, &werr);
        if (rec_off < last) {
            CHECKF(n == -TW_EFORMAT && names_offset(err.msg, rec_off) && strstr(err.msg, path),
                   "bit %zu: reader %d: %s", bit, n, err.msg);
            CHECKF(wrc == -TW_EFORMAT && names_offset(werr.msg, rec_off),
                   "bit %zu: writer %d: %s", bit, wrc, werr.msg);
            size_t l2;
            uint8_t *after = ju_slurp(path, &l2);
            CHECKF(after && l2 == len && memcmp(after, b, len) == 0,
                   "bit %zu: a refused journal was changed", bit);
            free(after);
            refused++;
        } else {
            CHECKF(n == K - 1 && r.torn_offset == last && r.torn_bytes == REC,
                   "bit %zu: reader %d torn %llu at %llu (%s)", bit, n,
                   (unsigned long long)r.torn_bytes, (unsigned long long)r.torn_offset, err.msg);
            CHECKF(wrc == 0 && j.records == K - 1 && j.torn_bytes == REC && j.size == last,
                   "bit %zu: writer %d (%s)", bit, wrc, werr.msg);
            dropped++;
        }
        if (wrc == 0)
            tw_journal_close(&j);
    }
    CHECK_EQ(refused, (HDR + (K - 1) * REC) * 8);
    CHECK_EQ(dropped, REC * 8);
    free(b);
    free(whole);
}

/* Damage that no single bit flip makes. */
static void test_damage(void)
{
    enum { K = 3 };
    make(path, K, 0);
    size_t len;
    uint8_t *whole = ju_slurp(path, &len);
    REQUIRE(whole);
    uint8_t *b = calloc(1, len + 4096);
    tw_journal_reader r;
    tw_error err = {0};

    /* A zeroed record with good ones after it: a hole. */
    memcpy(b, whole, len);
    memset(b + HDR + REC, 0, REC);
    REQUIRE(ju_spill(path, b, len) == 0);
    CHECK_EQ(read_all(path, &r, &err), -TW_EFORMAT);
    CHECKF(names_offset(err.msg, HDR + REC) && strstr(err.msg, "follows at offset 224"), "%s",
           err.msg);

    /* A whole, good record in the wrong place (its seq says so). */
    memcpy(b, whole, len);
    memcpy(b + HDR + REC, whole + HDR + 2 * REC, REC);
    REQUIRE(ju_spill(path, b, len) == 0);
    CHECK_EQ(read_all(path, &r, &err), -TW_EFORMAT);
    CHECKF(names_offset(err.msg, HDR + REC) && strstr(err.msg, "sequence 3 where 2 belongs"), "%s",
           err.msg);
    /* ... also as the last record (it is whole: not torn). */
    memcpy(b, whole, len);
    memcpy(b + HDR + 2 * REC, whole + HDR + REC, REC);
    REQUIRE(ju_spill(path, b, len) == 0);
    CHECK_EQ(read_all(path, &r, &err), -TW_EFORMAT);
    CHECKF(names_offset(err.msg, HDR + 2 * REC), "%s", err.msg);

    /* Records shifted by a lost byte: the damage is where they start. */
    memcpy(b, whole, HDR + REC);
    memcpy(b + HDR + REC, whole + HDR + REC + 1, len - HDR - REC - 1);
    REQUIRE(ju_spill(path, b, len - 1) == 0);
    CHECK_EQ(read_all(path, &r, &err), -TW_EFORMAT);
    CHECKF(names_offset(err.msg, HDR + REC) && strstr(err.msg, "follows at offset"), "%s",
           err.msg);

    /* Garbage after the records: up to one record's worth is a torn
     * write, more is not. */
    uint64_t s = 7;
    memcpy(b, whole, len);
    for (size_t i = 0; i < 200; i++) {
        s = ju_mix(s);
        b[len + i] = (uint8_t)(s | 1);
    }
    REQUIRE(ju_spill(path, b, len + REC - 1) == 0);
    CHECK_EQ(read_all(path, &r, &err), K);
    CHECK_EQ(r.torn_bytes, REC - 1);
    REQUIRE(ju_spill(path, b, len + REC + 1) == 0);
    CHECK_EQ(read_all(path, &r, &err), -TW_EFORMAT);
    CHECKF(names_offset(err.msg, len) && strstr(err.msg, "not a torn write"), "%s", err.msg);
    /* A torn record then zeros (a mapped writer killed mid-record: the
     * tag is stored last, so it is 0). */
    memcpy(b, whole, len);
    memcpy(b + len, whole + HDR, REC);
    memset(b + len, 0, 4);
    memset(b + len + REC, 0, 4096 - REC);
    REQUIRE(ju_spill(path, b, len + 4096) == 0);
    CHECK_EQ(read_all(path, &r, &err), K);
    CHECK_EQ(r.torn_offset, len);
    CHECK_EQ(r.torn_bytes, 4096);
    /* Zeros only: the free space of a mapped journal, not torn. */
    memset(b + len, 0, 4096);
    REQUIRE(ju_spill(path, b, len + 4096) == 0);
    CHECK_EQ(read_all(path, &r, &err), K);
    CHECK_EQ(r.torn_bytes, 0);
    CHECK_EQ(r.zero_bytes, 4096);
    tw_journal j;
    tw_journal_cfg cfg = {.path = path};
    REQUIRE(tw_journal_open(&j, &cfg, &err) == 0);
    CHECK_EQ(j.zero_bytes, 4096);
    CHECK_EQ(j.size, len);
    tw_journal_close(&j);

    /* Headers: not a journal, another version (with a good CRC), a bad
     * geometry. */
    tw_journal_hdr h;
    memcpy(&h, whole, HDR);
    h.version = 2;
    h.crc = tw_crc32c(0, &h, offsetof(tw_journal_hdr, crc));
    memcpy(b, whole, len);
    memcpy(b, &h, HDR);
    REQUIRE(ju_spill(path, b, len) == 0);
    CHECK_EQ(read_all(path, &r, &err), -EPROTONOSUPPORT);
    CHECKF(strstr(err.msg, "version 2"), "%s", err.msg);
    memcpy(&h, whole, HDR);
    h.rec_bytes = 96;
    h.crc = tw_crc32c(0, &h, offsetof(tw_journal_hdr, crc));
    memcpy(b, &h, HDR);
    REQUIRE(ju_spill(path, b, len) == 0);
    CHECK_EQ(read_all(path, &r, &err), -TW_EFORMAT);
    CHECKF(strstr(err.msg, "geometry") && names_offset(err.msg, 0), "%s", err.msg);
    memset(b, 'x', len);
    REQUIRE(ju_spill(path, b, len) == 0);
    CHECK_EQ(read_all(path, &r, &err), -TW_EFORMAT);
    CHECKF(strstr(err.msg, "not a journal"), "%s", err.msg);
    free(b);
    free(whole);
}

/* Syncs per policy, in both write modes. */
static void test_fsync(void)
{
    for (int mapped = 0; mapped < 2; mapped++) {
        struct {
            tw_journal_fsync p;
            uint32_t n;
            uint64_t want; /* syncs after 10 appends and a bulk of 5 */
        } t[] = {{TW_JOURNAL_FSYNC_NONE, 0, 0}, {TW_JOURNAL_FSYNC_EVERY, 0, 11},
                 {TW_JOURNAL_FSYNC_EVERY_N, 3, 4}, {TW_JOURNAL_FSYNC_EVERY_N, 1, 11}};
        for (size_t i = 0; i < TW_ARRAY_SIZE(t); i++) {
            unlink(path);
            tw_journal j;
            tw_error err = {0};
            tw_journal_cfg cfg = {.path = path, .fsync = t[i].p, .fsync_n = t[i].n,
                                  .mmap_bytes = mapped ? 4096 : 0};
            REQUIRE(tw_journal_open(&j, &cfg, &err) == 0);
            CHECK_EQ(put(&j, 10), 0);
            uint8_t five[5][TW_JOURNAL_PAYLOAD];
            for (int k = 0; k < 5; k++)
                ju_payload(11 + (uint64_t)k, five[k]);
            CHECK_EQ(tw_journal_append_bulk(&j, TW_JOURNAL_OUT, five, 5, NULL), 0);
            CHECKF(j.syncs == t[i].want, "mapped %d policy %d n %u: %llu syncs, want %llu", mapped,
                   (int)t[i].p, t[i].n, (unsigned long long)j.syncs,
                   (unsigned long long)t[i].want);
            CHECK_EQ(tw_journal_sync(&j), 0);
            CHECK_EQ(j.synced, j.size);
            tw_journal_close(&j);
            tw_journal_reader r;
            tw_journal_reader_cfg rc = {.path = path};
            REQUIRE(tw_journal_reader_open(&r, &rc, &err) == 0);
            tw_journal_rec recs[20];
            CHECK_EQ(tw_journal_read_burst(&r, recs, 20, &err), 15);
            tw_journal_reader_close(&r);
        }
    }
    tw_journal j;
    tw_error err = {0};
    tw_journal_cfg bad = {.path = path, .fsync = (tw_journal_fsync)7};
    CHECK_EQ(tw_journal_open(&j, &bad, &err), -EINVAL);
}

/* A write that fails (the file size limit, cut mid-record or mid-bulk) is
 * rolled back: the file and next_seq as before, and the next append after
 * the limit is lifted lands where it belongs. */
static void test_rollback(void)
{
    struct rlimit old;
    REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
    signal(SIGXFSZ, SIG_IGN);
    for (int mapped = 0; mapped < 2; mapped++) {
        unlink(path);
        tw_journal j;
        tw_error err = {0};
        tw_journal_cfg cfg = {.path = path, .mmap_bytes = mapped ? 4096 : 0};
        REQUIRE(tw_journal_open(&j, &cfg, &err) == 0);
        REQUIRE(put(&j, 3) == 0);
        uint64_t size0 = j.size;
        struct rlimit lim = old;
        /* pwrite: the limit cuts the next record in the middle.  mapped:
         * the mapping is filled and may not grow. */
        lim.rlim_cur = mapped ? j.map_cap : size0 + REC / 2;
        REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0);
        if (mapped)
            CHECK_EQ(put(&j, (j.map_cap - j.size) / REC), 0);
        uint64_t seq0 = tw_journal_next_seq(&j);
        size0 = j.size;
        int rc = put(&j, 1);
        CHECKF(rc == -ENOSPC || rc == -EFBIG, "mapped %d: %d", mapped, rc);
        CHECK_EQ(tw_journal_next_seq(&j), seq0);
        CHECK_EQ(j.size, size0);
        CHECK_EQ(j.write_errors, 1);
        /* A bulk whose second chunk fails: none of it stays. */
        if (!mapped) {
            lim.rlim_cur = size0 + 32 * REC + 10;
            REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0);
            uint8_t many[40][TW_JOURNAL_PAYLOAD];
            for (int i = 0; i < 40; i++)
                ju_payload(seq0 + (uint64_t)i, many[i]);
            rc = tw_journal_append_bulk(&j, TW_JOURNAL_EV, many, 40, NULL);
            CHECK(rc == -ENOSPC || rc == -EFBIG);
            CHECK_EQ(tw_journal_next_seq(&j), seq0);
            struct stat st;
            CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size == size0);
        }
        REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
        CHECK_EQ(put(&j, 2), 0);
        tw_journal_close(&j);
        tw_journal_reader r;
        int n = read_all(path, &r, &err);
        CHECKF(n == (int)(seq0 + 1), "mapped %d: %d records (%s)", mapped, n, err.msg);
        CHECK_EQ(r.torn_bytes + r.zero_bytes, 0);
    }
    signal(SIGXFSZ, SIG_DFL);
}

/* The mapped mode: the mapping grows, a clean close cuts the free space,
 * the journal reads the same as a written one. */
static void test_mapped(void)
{
    make(path, 1000, 4096);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size == HDR + 1000 * REC);
    tw_journal_reader r;
    tw_error err = {0};
    CHECK_EQ(read_all(path, &r, &err), 1000);
    tw_journal j;
    tw_journal_cfg cfg = {.path = path, .mmap_bytes = 1 << 16};
    REQUIRE(tw_journal_open(&j, &cfg, &err) == 0);
    CHECK(j.map_cap >= j.size + (1 << 16));
    CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size == j.map_cap);
    CHECK_EQ(put(&j, 10), 0);
    /* A reader sees the records in the mapping, then zeros: the end. */
    CHECK_EQ(read_all(path, &r, &err), 1010);
    CHECK_EQ(r.zero_bytes, j.map_cap - j.size);
    tw_journal_close(&j);
    CHECK_EQ(read_all(path, &r, &err), 1010);
    CHECK_EQ(r.zero_bytes, 0);
}

/* Growth ahead in idle turns: a piece at a time up to 4 steps past the
 * records, or to the limit; the appends then find the room made; a reader
 * sees the records and zeros; the close cuts the file to the records.
 * The pwrite mode has nothing to grow. */
static void test_grow_ahead(void)
{
    make(path, 10, 0);
    tw_journal j;
    tw_error err = {0};
    tw_journal_cfg cfg = {.path = path};
    REQUIRE(tw_journal_open(&j, &cfg, &err) == 0);
    CHECK_EQ(tw_journal_grow_ahead(&j, 0), 0);
    tw_journal_close(&j);
    const uint64_t step = 1 << 16;
    cfg.mmap_bytes = step;
    REQUIRE(tw_journal_open(&j, &cfg, &err) == 0);
    char *const first = j.map;
    unsigned calls = 0;
    while (tw_journal_grow_ahead(&j, 0) == 1 && calls < 10000)
        calls++;
    CHECK(calls > 0 && j.map == first);
    CHECK(j.map_cap >= j.size + 4 * step && j.map_cap < j.size + 4 * step + TW__FMAP_PIECE);
    uint64_t cap = j.map_cap;
    CHECK_EQ(put(&j, 4 * step / REC - 1), 0);
    CHECK_EQ(j.map_cap, cap); /* the appends made no room themselves */
    /* A limit (a segment's size) is not passed by more than a piece. */
    uint64_t limit = j.size + step;
    while (tw_journal_grow_ahead(&j, limit) == 1 && calls < 20000)
        calls++;
    CHECK(j.map_cap >= limit && j.map_cap < limit + TW__FMAP_PIECE);
    CHECK_EQ(tw_journal_grow_ahead(&j, j.size), 0);
    tw_journal_reader r;
    uint64_t n = 10 + 4 * step / REC - 1;
    CHECK_EQ(read_all(path, &r, &err), (int)n);
    CHECK_EQ(r.zero_bytes, j.map_cap - j.size);
    tw_journal_close(&j);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size == HDR + n * REC);
    CHECK_EQ(read_all(path, &r, &err), (int)n);
}

/* A follower of a journal being appended to: 0 while nothing is new, then
 * the records as they come; a record the writer says is written but is
 * not there is corruption. */
static void test_follow(void)
{
    for (int mapped = 0; mapped < 2; mapped++) {
        unlink(path);
        tw_journal j;
        tw_error err = {0};
        tw_journal_cfg cfg = {.path = path, .mmap_bytes = mapped ? 8192 : 0};
        REQUIRE(tw_journal_open(&j, &cfg, &err) == 0);
        tw_journal_reader r;
        tw_journal_reader_cfg rc = {.path = path, .follow = 1, .buf_records = 4};
        REQUIRE(tw_journal_reader_open(&r, &rc, &err) == 0);
        tw_journal_rec recs[8];
        CHECK_EQ(tw_journal_read_burst(&r, recs, 8, &err), 0);
        CHECK_EQ(tw_journal_read_burst(&r, recs, 8, &err), 0);
        CHECK_EQ(r.polls_empty, 2);
        uint64_t seen = 0;
        for (int round = 0; round < 50; round++) {
            CHECK_EQ(put(&j, (uint64_t)round % 7), 0);
            tw_journal_reader_expect(&r, tw_journal_next_seq(&j));
            int k;
            while ((k = tw_journal_read_burst(&r, recs, 8, &err)) > 0)
                for (int i = 0; i < k; i++) {
                    CHECK_EQ(recs[i].seq, seen + 1);
                    CHECK(ju_payload_ok(&recs[i]));
                    seen++;
                }
            CHECKF(k == 0, "%s", err.msg);
            CHECK_EQ(seen, tw_journal_next_seq(&j) - 1);
        }
        CHECK_EQ(r.torn_bytes + r.zero_bytes, 0);
        /* The writer "published" a record it never wrote. */
        tw_journal_reader_expect(&r, tw_journal_next_seq(&j) + 1);
        CHECK_EQ(tw_journal_read_burst(&r, recs, 8, &err), -TW_EFORMAT);
        CHECKF(strstr(err.msg, "published") && names_offset(err.msg, j.size), "%s", err.msg);
        CHECK_EQ(tw_journal_read_burst(&r, recs, 8, &err), -TW_EFORMAT); /* sticky */
        tw_journal_reader_close(&r);
        tw_journal_close(&j);
    }
    /* By fd: the reader dups it, the caller keeps its own. */
    int fd = open(path, O_RDONLY);
    REQUIRE(fd >= 0);
    tw_journal_reader r;
    tw_error err = {0};
    tw_journal_reader_cfg rc = {.fd = fd};
    REQUIRE(tw_journal_reader_open(&r, &rc, &err) == 0);
    tw_journal_reader_close(&r);
    CHECK(fcntl(fd, F_GETFD) >= 0);
    close(fd);
}

int main(void)
{
    ju_mkdir(dir, sizeof(dir), "journal");
    snprintf(path, sizeof(path), "%s/j", dir);
    test_basic();
    test_torn_every_byte(0);
    test_torn_every_byte(4096);
    test_bit_flips();
    test_damage();
    test_fsync();
    test_rollback();
    test_mapped();
    test_grow_ahead();
    test_follow();
    ju_rmdir(dir);
    return tw_check_done("journal");
}
