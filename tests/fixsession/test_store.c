/* Crash-safe store tests: round trip, torn writes at every byte of the last
 * record (truncated and garbage-filled), a corrupted record in the middle,
 * restart at every record boundary, reset, fsync policies. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tw_check.h"
#include "tickwire/util.h"
#include "tickwire/fix_session.h"

static char path[256], path2[256];
/* Each test runs with pwritev appends and again with mmap appends. */
static uint64_t mmap_bytes;

/* The model: what the store must hold after each record. */
typedef struct model {
    uint64_t next_out, next_in;
    uint32_t n;
    uint64_t last_seq;
    uint64_t size; /* file size at this record boundary */
} model;

#define NREC 40
static model states[NREC + 1];

static int open_store(tw_fix_store *s, const char *p, tw_fix_fsync fs, tw_error *err)
{
    tw_fix_store_cfg cfg = { .path = p, .fsync = fs, .fsync_n = 3, .index_cap = 4,
                             .mmap_bytes = mmap_bytes };
    return tw_fix_store_open(s, &cfg, err);
}

static void snap(const tw_fix_store *s, model *m)
{
    m->next_out = s->next_out;
    m->next_in = s->next_in;
    m->n = s->n;
    m->last_seq = s->n ? s->ents[s->n - 1].seq : 0;
    m->size = s->size;
}

static int same(const model *a, const model *b)
{
    return a->next_out == b->next_out && a->next_in == b->next_in && a->n == b->n &&
           a->last_seq == b->last_seq && a->size == b->size;
}

static void body_for(uint64_t seq, char *b, size_t *len)
{
    *len = (size_t)snprintf(b, 200, "11=ORD%llu\x01" "55=EURUSD\x01" "54=1\x01" "38=%llu\x01",
                            (unsigned long long)seq, (unsigned long long)(seq * 7 % 1000));
}

/* Writes NREC records of mixed types, recording the model after each. */
static void build_file(tw_fix_fsync fs)
{
    unlink(path);
    tw_fix_store s;
    tw_error err;
    TW_VERIFY(open_store(&s, path, fs, &err) == 0);
    snap(&s, &states[0]);
    uint64_t out = 1, in = 1;
    for (int i = 0; i < NREC; i++) {
        int rc;
        if (i == 25) {
            rc = tw_fix_store_reset(&s);
            out = in = 1;
        } else if (i % 3 == 1) {
            in++;
            rc = tw_fix_store_set_seqs(&s, out, in);
        } else if (i % 5 == 4) {
            out++; /* an admin message */
            rc = tw_fix_store_set_seqs(&s, out, in);
        } else {
            char b[200];
            size_t bl;
            body_for(out, b, &bl);
            rc = tw_fix_store_add_msg(&s, out, 1000000000LL * (int64_t)out, "D", 1, b, bl);
            out++;
        }
        CHECK(rc == 0);
        CHECK(s.next_out == out && s.next_in == in);
        snap(&s, &states[i + 1]);
    }
    tw_fix_store_close(&s);
}

static void copy_prefix(const char *from, const char *to, uint64_t len)
{
    int a = open(from, O_RDONLY), b = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    TW_VERIFY(a >= 0 && b >= 0);
    char buf[65536];
    uint64_t done = 0;
    while (done < len) {
        size_t want = len - done < sizeof(buf) ? (size_t)(len - done) : sizeof(buf);
        ssize_t n = read(a, buf, want);
        TW_VERIFY(n > 0);
        TW_VERIFY(write(b, buf, (size_t)n) == n);
        done += (uint64_t)n;
    }
    close(a);
    close(b);
}

static uint64_t file_size(const char *p)
{
    struct stat st;
    TW_VERIFY(stat(p, &st) == 0);
    return (uint64_t)st.st_size;
}

static void test_round_trip(void)
{
    build_file(TW_FIX_FSYNC_NONE);
    tw_fix_store s;
    tw_error err;
    CHECK(open_store(&s, path, TW_FIX_FSYNC_NONE, &err) == 0);
    model m;
    snap(&s, &m);
    CHECK(same(&m, &states[NREC]));
    CHECK(s.torn_bytes == 0);
    CHECK(s.records == NREC);
    /* Every stored message reads back exactly as written. */
    for (uint32_t i = 0; i < s.n; i++) {
        char buf[512], want[200];
        size_t wl;
        tw_fix_stored st;
        CHECK(tw_fix_store_read(&s, i, buf, sizeof(buf), &st) == 0);
        body_for(st.seq, want, &wl);
        CHECK(st.body_len == wl && memcmp(st.body, want, wl) == 0);
        CHECK(st.type_len == 1 && st.type[0] == 'D');
        CHECK(st.orig_sending_ns == 1000000000LL * (int64_t)st.seq);
        CHECK(tw_fix_store_lower_bound(&s, st.seq) == i);
    }
    char small[8];
    tw_fix_stored st;
    if (s.n > 0)
        CHECK(tw_fix_store_read(&s, 0, small, sizeof(small), &st) == -ENOBUFS);
    tw_fix_store_close(&s);
}

static void test_boundaries(void)
{
    /* Restart at every record boundary: the state is exactly the model's. */
    for (int i = 0; i <= NREC; i++) {
        copy_prefix(path, path2, states[i].size);
        tw_fix_store s;
        tw_error err;
        int rc = open_store(&s, path2, TW_FIX_FSYNC_NONE, &err);
        CHECK(rc == 0);
        if (rc != 0)
            continue;
        model m;
        snap(&s, &m);
        if (!same(&m, &states[i]))
            fprintf(stderr, "boundary %d: out %llu in %llu n %u\n", i,
                    (unsigned long long)m.next_out, (unsigned long long)m.next_in, m.n);
        CHECK(same(&m, &states[i]));
        CHECK(s.torn_bytes == 0);
        tw_fix_store_close(&s);
    }
}

static void test_torn(void)
{
    /* Every proper prefix of the last record: cut back to the boundary
     * before it, and the store is usable (append, reopen) afterwards. */
    uint64_t lo = states[NREC - 1].size, hi = states[NREC].size;
    for (uint64_t cut = lo; cut < hi; cut++) {
        copy_prefix(path, path2, cut);
        tw_fix_store s;
        tw_error err;
        int rc = open_store(&s, path2, TW_FIX_FSYNC_NONE, &err);
        CHECK(rc == 0);
        if (rc != 0) {
            fprintf(stderr, "cut %llu: %s\n", (unsigned long long)cut, err.msg);
            continue;
        }
        model m;
        snap(&s, &m);
        CHECK(same(&m, &states[NREC - 1]));
        CHECK(s.torn_bytes == cut - lo);
        CHECK(mmap_bytes ? s.size == lo : file_size(path2) == lo);
        CHECK(tw_fix_store_set_seqs(&s, 99, 77) == 0);
        tw_fix_store_close(&s);
        CHECK(open_store(&s, path2, TW_FIX_FSYNC_NONE, &err) == 0);
        CHECK(s.next_out == 99 && s.next_in == 77 && s.torn_bytes == 0);
        tw_fix_store_close(&s);
    }
    /* The same with the missing bytes replaced by garbage (a torn write
     * that reached the disk as junk rather than a short file). */
    for (uint64_t cut = lo; cut < hi; cut++) {
        copy_prefix(path, path2, hi);
        int fd = open(path2, O_WRONLY);
        TW_VERIFY(fd >= 0);
        for (uint64_t k = cut; k < hi; k++) {
            unsigned char g = (unsigned char)(k * 131 + 7);
            TW_VERIFY(pwrite(fd, &g, 1, (off_t)k) == 1);
        }
        close(fd);
        tw_fix_store s;
        tw_error err;
        int rc = open_store(&s, path2, TW_FIX_FSYNC_NONE, &err);
        /* A garbage tail that happens to leave the record intact is fine
         * too; otherwise it must be cut, never reported as corruption. */
        CHECK(rc == 0);
        if (rc == 0) {
            model m;
            snap(&s, &m);
            CHECK(same(&m, &states[NREC - 1]) || same(&m, &states[NREC]));
            tw_fix_store_close(&s);
        }
    }
    /* A file torn while its 8-byte header was written. */
    for (uint64_t cut = 0; cut < 8; cut++) {
        copy_prefix(path, path2, cut);
        tw_fix_store s;
        tw_error err;
        CHECK(open_store(&s, path2, TW_FIX_FSYNC_NONE, &err) == 0);
        CHECK(s.next_out == 1 && s.next_in == 1 && s.n == 0);
        tw_fix_store_close(&s);
        CHECK(file_size(path2) == 8); /* a clean close cuts the free space */
    }
}

static void test_corrupt(void)
{
    /* One flipped bit in any record but the last: open refuses, names the
     * offset, and leaves the file alone. */
    uint64_t total = states[NREC].size;
    for (int r = 0; r < NREC - 1; r++) {
        uint64_t off = states[r].size + (uint64_t)(r * 7) % (states[r + 1].size - states[r].size);
        copy_prefix(path, path2, total);
        int fd = open(path2, O_RDWR);
        unsigned char b;
        TW_VERIFY(pread(fd, &b, 1, (off_t)off) == 1);
        b ^= 0x10;
        TW_VERIFY(pwrite(fd, &b, 1, (off_t)off) == 1);
        close(fd);
        tw_fix_store s;
        tw_error err = { 0, "" };
        int rc = open_store(&s, path2, TW_FIX_FSYNC_NONE, &err);
        CHECK(rc == -TW_EFORMAT);
        char want[64];
        snprintf(want, sizeof(want), "offset %llu", (unsigned long long)states[r].size);
        CHECK(strstr(err.msg, want) != NULL);
        if (rc == 0)
            tw_fix_store_close(&s);
        CHECK(file_size(path2) == total);
    }
    /* Not a store at all. */
    int fd = open(path2, O_WRONLY | O_TRUNC);
    TW_VERIFY(write(fd, "hello world, not a store", 24) == 24);
    close(fd);
    tw_fix_store s;
    tw_error err;
    CHECK(open_store(&s, path2, TW_FIX_FSYNC_NONE, &err) == -TW_EFORMAT);
    CHECK(strstr(err.msg, "not a store") != NULL);
}

static void test_fsync_policies(void)
{
    tw_fix_fsync pol[] = { TW_FIX_FSYNC_EVERY, TW_FIX_FSYNC_EVERY_N };
    for (int p = 0; p < 2; p++) {
        model saved[NREC + 1];
        memcpy(saved, states, sizeof(states));
        build_file(pol[p]);
        for (int i = 0; i <= NREC; i++)
            CHECK(same(&saved[i], &states[i]));
    }
}

static void test_rewind(void)
{
    /* Rewinding next_out drops stored messages at or above it, so a resend
     * never offers a message under a number reused later. */
    unlink(path2);
    tw_fix_store s;
    tw_error err;
    CHECK(open_store(&s, path2, TW_FIX_FSYNC_NONE, &err) == 0);
    for (uint64_t q = 1; q <= 5; q++)
        CHECK(tw_fix_store_add_msg(&s, q, 0, "D", 1, "11=a\x01", 5) == 0);
    CHECK(s.n == 5 && s.next_out == 6);
    CHECK(tw_fix_store_set_seqs(&s, 3, 1) == 0);
    CHECK(s.n == 2);
    CHECK(tw_fix_store_add_msg(&s, 3, 0, "8", 1, "37=b\x01", 5) == 0);
    tw_fix_store_close(&s);
    CHECK(open_store(&s, path2, TW_FIX_FSYNC_NONE, &err) == 0);
    CHECK(s.n == 3 && s.next_out == 4 && s.ents[2].seq == 3);
    char buf[64];
    tw_fix_stored st;
    CHECK(tw_fix_store_read(&s, 2, buf, sizeof(buf), &st) == 0);
    CHECK(st.type[0] == '8');
    CHECK(tw_fix_store_add_msg(&s, 0, 0, "D", 1, "", 0) == -EINVAL);
    tw_fix_store_close(&s);
}

static void test_crc(void)
{
    /* The standard CRC-32C check value, both implementations. */
    CHECK(tw_crc32c(0, "123456789", 9) == 0xE3069283u);
    CHECK(tw__crc32c_sw(0, "123456789", 9) == 0xE3069283u);
    CHECK(tw_crc32c(tw_crc32c(0, "1234", 4), "56789", 5) == 0xE3069283u);
    /* Run-time choice against the table at every length and alignment. */
    unsigned char buf[300];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 167 + 13);
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n + off <= sizeof(buf); n++)
            CHECK(tw_crc32c(7, buf + off, n) == tw__crc32c_sw(7, buf + off, n));
}

/* mmap mode after a crash: the file keeps its zeroed free space behind the
 * records (and maybe a torn record in it); open must take the zeros for
 * free space and cut only what is torn. */
static void test_mmap_crash_tail(void)
{
    uint64_t lo = states[NREC - 1].size, hi = states[NREC].size;
    unsigned char last[512];
    int fd = open(path, O_RDONLY);
    TW_VERIFY(fd >= 0 && hi - lo <= sizeof(last) &&
              pread(fd, last, hi - lo, (off_t)lo) == (ssize_t)(hi - lo));
    close(fd);
    for (uint64_t cut = lo; cut <= hi; cut++) {
        copy_prefix(path, path2, cut);
        TW_VERIFY(truncate(path2, (off_t)(hi + 8192)) == 0); /* zero tail */
        /* Where the record's own last bytes are zeros, zero-filling restores
         * it whole: then it must be kept. */
        int intact = 1;
        for (uint64_t k = cut; k < hi; k++)
            intact &= last[k - lo] == 0;
        tw_fix_store s;
        tw_error err;
        int rc = open_store(&s, path2, TW_FIX_FSYNC_NONE, &err);
        CHECK(rc == 0);
        if (rc != 0)
            continue;
        model m;
        snap(&s, &m);
        CHECK(same(&m, &states[intact ? NREC : NREC - 1]));
        CHECK(s.torn_bytes == (intact || cut == lo ? 0 : hi + 8192 - lo));
        tw_fix_store_close(&s);
    }
}

/* mmap mode across remaps: 1000 messages through a 4 KB initial mapping,
 * read back in both modes; a clean close leaves exactly the records. */
static void test_mmap_grow(void)
{
    unlink(path2);
    tw_fix_store s;
    tw_error err;
    tw_fix_store_cfg cfg = { .path = path2, .mmap_bytes = 4096, .fsync = TW_FIX_FSYNC_EVERY_N,
                             .fsync_n = 100 };
    CHECK(tw_fix_store_open(&s, &cfg, &err) == 0);
    for (uint64_t q = 1; q <= 1000; q++) {
        char b[200];
        size_t bl;
        body_for(q, b, &bl);
        CHECK(tw_fix_store_add_msg(&s, q, (int64_t)q, "D", 1, b, bl) == 0);
    }
    CHECK(s.map_cap > 4096);
    uint64_t size = s.size;
    tw_fix_store_close(&s);
    CHECK(file_size(path2) == size);
    for (int mode = 0; mode < 2; mode++) {
        cfg.mmap_bytes = mode ? 4096 : 0;
        CHECK(tw_fix_store_open(&s, &cfg, &err) == 0);
        CHECK(s.n == 1000 && s.next_out == 1001 && s.torn_bytes == 0);
        for (uint32_t i = 0; i < s.n; i += 37) {
            char buf[512], want[200];
            size_t wl;
            tw_fix_stored st;
            CHECK(tw_fix_store_read(&s, i, buf, sizeof(buf), &st) == 0);
            body_for(st.seq, want, &wl);
            CHECK(st.seq == i + 1 && st.body_len == wl && memcmp(st.body, want, wl) == 0);
        }
        tw_fix_store_close(&s);
    }
}

/* Growth ahead in idle turns: pieces up to 4 steps past the records, the
 * messages then appended into room already made, all read back after a
 * reopen (the close cuts the file to the records). */
static void test_grow_ahead(void)
{
    unlink(path2);
    tw_fix_store s;
    tw_error err;
    tw_fix_store_cfg cfg = { .path = path2, .mmap_bytes = 1 << 16 };
    REQUIRE(tw_fix_store_open(&s, &cfg, &err) == 0);
    unsigned calls = 0;
    while (tw_fix_store_grow_ahead(&s) == 1 && calls < 10000)
        calls++;
    CHECK(calls > 0 && s.map_cap >= s.size + 4 * cfg.mmap_bytes);
    uint64_t cap = s.map_cap;
    for (uint64_t q = 1; q <= 500; q++) {
        char b[200];
        size_t bl;
        body_for(q, b, &bl);
        CHECK(tw_fix_store_add_msg(&s, q, (int64_t)q, "D", 1, b, bl) == 0);
    }
    CHECK(s.size < cap && s.map_cap == cap);
    uint64_t size = s.size;
    tw_fix_store_close(&s);
    CHECK(file_size(path2) == size);
    cfg.mmap_bytes = 0;
    REQUIRE(tw_fix_store_open(&s, &cfg, &err) == 0);
    CHECK(s.n == 500 && s.next_out == 501 && s.torn_bytes == 0);
    CHECK_EQ(tw_fix_store_grow_ahead(&s), 0); /* pwritev mode: nothing to grow */
    tw_fix_store_close(&s);
}

int main(void)
{
    snprintf(path, sizeof(path), "/tmp/tw_fixstore_%d.a", (int)getpid());
    snprintf(path2, sizeof(path2), "/tmp/tw_fixstore_%d.b", (int)getpid());
    test_crc();
    for (int mode = 0; mode < 2; mode++) {
        mmap_bytes = mode ? 4096 : 0; /* small: forces remaps while writing */
        test_round_trip();
        test_boundaries();
        test_torn();
        test_corrupt();
        test_fsync_policies();
        test_rewind();
        test_mmap_crash_tail();
    }
    test_mmap_grow();
    test_grow_ahead();
    unlink(path);
    unlink(path2);
    return tw_check_done("fix_session_store");
}
