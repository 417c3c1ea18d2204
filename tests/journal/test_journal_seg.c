/* The journal in segments: rotation at every boundary, a torn tail in the
 * last segment, a deleted middle segment refused naming the gap, every bit
 * of a small segmented journal flipped, pruning, a single-file journal read
 * as one segment, the states a kill during a rotation can leave, and a
 * writer killed by SIGKILL at seeded points then reopened. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <sys/wait.h>

#include "journal_test_util.h"
#include "tickwire/journal_seg.h"
#include "tw_check.h"

#define HDR TW_JOURNAL_HDR_BYTES
#define REC TW_JOURNAL_REC_BYTES

static char root[256], jdir[512];

static void seg_file(char *out, size_t cap, uint64_t first)
{
    snprintf(out, cap, "%s/%020llu.twj", jdir, (unsigned long long)first);
}

static void fresh(void)
{
    ju_rmdir(jdir);
    CHECK(mkdir(jdir, 0755) == 0);
}

/* Appends n records, in bulks of up to bulk, payload ju_payload(seq). */
static int put(tw_jseg *j, uint64_t n, uint32_t bulk)
{
    uint8_t pl[8][TW_JOURNAL_PAYLOAD];
    while (n > 0) {
        uint32_t k = n < bulk ? (uint32_t)n : bulk;
        for (uint32_t i = 0; i < k; i++)
            ju_payload(tw_jseg_next_seq(j) + i, pl[i]);
        int rc = tw_jseg_append_bulk(j, TW_JOURNAL_EV, pl, k, NULL);
        if (rc != 0)
            return rc;
        n -= k;
    }
    return 0;
}

/* Reads everything from from_seq; returns the count (each checked) or the error. */
static long read_all(const char *d, uint64_t from, tw_error *err)
{
    tw_jseg_reader r;
    int e = tw_jseg_reader_open(&r, d, from, 3, err);
    if (e != 0)
        return e;
    tw_journal_rec recs[5];
    long total = 0;
    int k;
    uint64_t want = from ? from : r.segs[0].first_seq;
    while ((k = tw_jseg_read_burst(&r, recs, 5, err)) > 0) {
        for (int i = 0; i < k; i++) {
            CHECK_EQ(recs[i].seq, want);
            CHECK(ju_payload_ok(&recs[i]));
            want++;
        }
        total += k;
    }
    tw_jseg_reader_close(&r);
    return k < 0 ? k : total;
}

static void open_w(tw_jseg *j, uint64_t seg_bytes)
{
    tw_error err = {0};
    tw_jseg_cfg c = {.dir = jdir, .segment_bytes = seg_bytes};
    int rc = tw_jseg_open(j, &c, &err);
    CHECKF(rc == 0, "%s", err.msg);
}

static void test_rotation(void)
{
    for (uint64_t per = 1; per <= 5; per++) {
        for (uint32_t bulk = 1; bulk <= 3; bulk++) {
            for (int slack = 0; slack < 2; slack++) {
                fresh();
                uint64_t sb = HDR + per * REC + (slack ? REC - 1 : 0);
                tw_jseg j;
                open_w(&j, sb);
                CHECK_EQ(put(&j, 11, bulk), 0);
                tw_jseg_close(&j);
                open_w(&j, sb); /* reopen mid-stream: continues in the last segment */
                CHECK_EQ(put(&j, 12, bulk), 0);
                CHECK_EQ(tw_jseg_next_seq(&j), 24u);
                tw_jseg_close(&j);
                tw_error err = {0};
                CHECKF(read_all(jdir, 0, &err) == 23, "%s", err.msg);
                tw_jseg_info *v;
                uint32_t n;
                CHECK_EQ(tw_jseg_list(jdir, &v, &n, &err), 0);
                for (uint32_t i = 0; i < n; i++) {
                    /* Never past the size unless one bulk alone is larger. */
                    CHECK(v[i].bytes <= sb || v[i].records <= bulk);
                    CHECK(v[i].records > 0);
                    CHECK_EQ((v[i].bytes - HDR) % REC, 0u);
                }
                CHECK(n >= 23 / (per > bulk ? per : bulk));
                /* Every start seq reads to the end. */
                for (uint64_t s = 1; s <= 24; s++)
                    CHECK_EQ(read_all(jdir, s, &err), (long)(24 - s));
                free(v);
            }
        }
    }
}

static void test_torn_tail(void)
{
    fresh();
    tw_jseg j;
    open_w(&j, HDR + 4 * REC);
    CHECK_EQ(put(&j, 10, 1), 0); /* segments 1..4, 5..8, 9..10 */
    tw_jseg_close(&j);
    char p[600];
    seg_file(p, sizeof(p), 9);
    size_t len;
    uint8_t *b = ju_slurp(p, &len);
    REQUIRE(b && len == HDR + 2 * REC);
    for (size_t cut = HDR + REC + 1; cut < len; cut++) {
        CHECK_EQ(ju_spill(p, b, cut), 0);
        tw_error err = {0};
        tw_jseg_reader r;
        CHECK_EQ(tw_jseg_reader_open(&r, jdir, 0, 4, &err), 0);
        tw_journal_rec recs[16];
        long total = 0;
        int k;
        while ((k = tw_jseg_read_burst(&r, recs, 16, &err)) > 0)
            total += k;
        CHECK_EQ(k, 0);
        CHECK_EQ(total, 9);
        CHECK_EQ(r.torn_bytes, cut - (HDR + REC));
        tw_jseg_reader_close(&r);
        /* The writer cuts it and goes on. */
        open_w(&j, HDR + 4 * REC);
        CHECK_EQ(tw_jseg_next_seq(&j), 10u);
        CHECK_EQ(put(&j, 1, 1), 0);
        tw_jseg_close(&j);
        CHECK_EQ(read_all(jdir, 0, &err), 10);
    }
    /* A torn tail in a segment that is not the last is damage. */
    seg_file(p, sizeof(p), 5);
    uint8_t *m = ju_slurp(p, &len);
    REQUIRE(m);
    CHECK_EQ(ju_spill(p, m, len - 7), 0);
    tw_error err = {0};
    CHECK_EQ(read_all(jdir, 0, &err), -TW_EFORMAT);
    CHECKF(strstr(err.msg, "00000000000000000005.twj") != NULL, "%s", err.msg);
    free(m);
    free(b);
}

/* A fresh journal of records 1..10 in segments 1..3, 4..6, 7..9, 10 (j open). */
static void make10(tw_jseg *j)
{
    fresh();
    open_w(j, HDR + 3 * REC);
    CHECK_EQ(put(j, 10, 1), 0);
}

static void test_missing_segment(void)
{
    tw_jseg j;
    make10(&j);
    tw_jseg_close(&j);
    char p[600];
    seg_file(p, sizeof(p), 4);
    CHECK_EQ(unlink(p), 0);
    tw_error err = {0};
    CHECK_EQ(read_all(jdir, 0, &err), -TW_EFORMAT);
    CHECKF(strstr(err.msg, "records 4..6 missing") != NULL, "%s", err.msg);
    tw_jseg_cfg c = {.dir = jdir, .segment_bytes = HDR + 3 * REC};
    err.msg[0] = '\0';
    CHECK_EQ(tw_jseg_open(&j, &c, &err), -TW_EFORMAT);
    CHECKF(strstr(err.msg, "records 4..6 missing") != NULL, "%s", err.msg);
    /* The first segment gone: what is left reads, from its start only. */
    make10(&j);
    tw_jseg_close(&j);
    seg_file(p, sizeof(p), 1);
    CHECK_EQ(unlink(p), 0);
    CHECK_EQ(read_all(jdir, 0, &err), 7);
    CHECK_EQ(read_all(jdir, 1, &err), -EINVAL);
    CHECKF(strstr(err.msg, "starts at 4") != NULL, "%s", err.msg);
}

/* The last segments lost: DIR/newest names a segment past the newest
 * left, so readers and the writer refuse, naming the seq; a link left
 * behind by a kill (older than the newest segment) is moved on by the
 * writer; a link that names no segment is refused; no link at all (a
 * journal written before it) reads as before. */
static void test_lost_tail(void)
{
    tw_jseg j;
    make10(&j);
    tw_jseg_close(&j);
    char p[600], l[600], t[64];
    snprintf(l, sizeof(l), "%s/newest", jdir);
    ssize_t n = readlink(l, t, sizeof(t) - 1);
    REQUIRE(n > 0);
    t[n] = '\0';
    CHECKF(strcmp(t, "00000000000000000010.twj") == 0, "%s", t);
    seg_file(p, sizeof(p), 10);
    CHECK_EQ(unlink(p), 0);
    tw_error err = {0};
    CHECK_EQ(read_all(jdir, 0, &err), -TW_EFORMAT);
    CHECKF(strstr(err.msg, "from seq 10 on are missing") != NULL, "%s", err.msg);
    tw_jseg_cfg c = {.dir = jdir, .segment_bytes = HDR + 3 * REC};
    err.msg[0] = '\0';
    CHECK_EQ(tw_jseg_open(&j, &c, &err), -TW_EFORMAT);
    CHECKF(strstr(err.msg, "from seq 10 on are missing") != NULL, "%s", err.msg);
    seg_file(p, sizeof(p), 7);
    CHECK_EQ(unlink(p), 0); /* two lost: the same */
    CHECK_EQ(read_all(jdir, 0, &err), -TW_EFORMAT);
    /* Every segment lost: not a new journal. */
    for (uint64_t f = 1; f <= 4; f += 3) {
        seg_file(p, sizeof(p), f);
        CHECK_EQ(unlink(p), 0);
    }
    err.msg[0] = '\0';
    CHECK_EQ(tw_jseg_open(&j, &c, &err), -TW_EFORMAT);
    CHECKF(strstr(err.msg, "every segment is missing") != NULL, "%s", err.msg);
    /* Behind (a kill before the move): the writer's open moves it. */
    make10(&j);
    tw_jseg_close(&j);
    CHECK_EQ(unlink(l), 0);
    CHECK_EQ(symlink("00000000000000000007.twj", l), 0);
    CHECK_EQ(read_all(jdir, 0, &err), 10);
    CHECK_EQ(tw_jseg_open(&j, &c, &err), 0);
    tw_jseg_close(&j);
    n = readlink(l, t, sizeof(t) - 1);
    REQUIRE(n > 0);
    t[n] = '\0';
    CHECKF(strcmp(t, "00000000000000000010.twj") == 0, "%s", t);
    /* Not a segment's name. */
    CHECK_EQ(unlink(l), 0);
    CHECK_EQ(symlink("../../etc/passwd", l), 0);
    CHECK_EQ(read_all(jdir, 0, &err), -TW_EFORMAT);
    CHECKF(strstr(err.msg, "not to a segment") != NULL, "%s", err.msg);
    /* None: read as before (and the writer puts one in place). */
    CHECK_EQ(unlink(l), 0);
    CHECK_EQ(read_all(jdir, 0, &err), 10);
    CHECK_EQ(tw_jseg_open(&j, &c, &err), 0);
    tw_jseg_close(&j);
    CHECK(readlink(l, t, sizeof(t) - 1) > 0);
    CHECK_EQ(tw_jseg_remove(jdir, &err), 0);
    CHECK(access(jdir, F_OK) != 0);
}

/* A follower while another thread appends and prunes behind it (as the
 * strategy process's snapshot writer prunes the journal it follows): a
 * segment deleted between a listing and its probe is gone, not missing;
 * every record comes once, in order, and no read fails. */
typedef struct prune_ctx {
    tw_jseg *j;
    uint64_t n;
    uint64_t read_to; /* the follower's next seq (atomic) */
    uint64_t end;     /* the writer's next seq (atomic) */
    int rc;
    int done;         /* atomic */
} prune_ctx;

static void *appender(void *arg)
{
    prune_ctx *c = arg;
    tw_error err = {0};
    while (c->rc == 0 && tw_jseg_next_seq(c->j) < c->n) {
        c->rc = put(c->j, 1, 1);
        __atomic_store_n(&c->end, tw_jseg_next_seq(c->j), __ATOMIC_RELEASE);
        uint64_t r = __atomic_load_n(&c->read_to, __ATOMIC_ACQUIRE);
        if (c->rc == 0 && r > 2 && tw_journal_prune(jdir, r - 1, &err) < 0)
            c->rc = -EIO;
        sched_yield();
    }
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void test_follow_while_pruned(void)
{
    fresh();
    tw_error err = {0};
    tw_jseg j;
    open_w(&j, HDR + 2 * REC);
    CHECK_EQ(put(&j, 1, 1), 0);
    prune_ctx c = {.j = &j, .n = 3000, .end = tw_jseg_next_seq(&j), .read_to = 1};
    tw_jseg_follow f;
    CHECKF(tw_jseg_follow_open(&f, jdir, 0, 2, &err) == 0, "%s", err.msg);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, appender, &c) == 0);
    uint64_t want = 1;
    int k = 0;
    while (want < c.n && k >= 0 &&
           !(__atomic_load_n(&c.done, __ATOMIC_ACQUIRE) && want >= c.end)) {
        tw_jseg_follow_expect(&f, __atomic_load_n(&c.end, __ATOMIC_ACQUIRE));
        tw_journal_rec recs[3];
        k = tw_jseg_follow_read(&f, recs, 3, &err);
        for (int i = 0; i < k; i++, want++)
            CHECK_EQ(recs[i].seq, want);
        __atomic_store_n(&c.read_to, want, __ATOMIC_RELEASE);
        if (k == 0)
            sched_yield();
    }
    CHECKF(k >= 0, "%d %s", k, err.msg);
    pthread_join(t, NULL);
    CHECK_EQ(c.rc, 0);
    CHECK(f.switches > 1000);
    tw_jseg_follow_close(&f);
    tw_jseg_close(&j);
}

static void test_bit_flips(void)
{
    fresh();
    tw_jseg j;
    open_w(&j, HDR + 2 * REC);
    CHECK_EQ(put(&j, 5, 1), 0); /* 1..2, 3..4, 5 */
    tw_jseg_close(&j);
    char p[600];
    seg_file(p, sizeof(p), 3);
    size_t len;
    uint8_t *b = ju_slurp(p, &len);
    REQUIRE(b && len == HDR + 2 * REC);
    long refused = 0;
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            b[i] ^= (uint8_t)(1u << bit);
            CHECK_EQ(ju_spill(p, b, len), 0);
            tw_error err = {0};
            long got = read_all(jdir, 0, &err);
            /* A middle segment: every flip is refused (never a record lost
             * silently, never a wrong one: read_all checks each). */
            CHECKF(got < 0, "flip at byte %zu bit %d read %ld records", i, bit, got);
            refused += got < 0;
            b[i] ^= (uint8_t)(1u << bit);
        }
    }
    CHECK_EQ(refused, (long)len * 8);
    CHECK_EQ(ju_spill(p, b, len), 0);
    tw_error err = {0};
    CHECK_EQ(read_all(jdir, 0, &err), 5);
    free(b);
}

static void test_prune_and_single(void)
{
    tw_jseg j;
    make10(&j);
    tw_error err = {0};
    CHECK_EQ(tw_journal_prune(jdir, 1, &err), 0);
    CHECK_EQ(tw_journal_prune(jdir, 3, &err), 0); /* seq 3 still needed */
    CHECK_EQ(tw_journal_prune(jdir, 4, &err), 1);
    CHECK_EQ(tw_journal_prune(jdir, 8, &err), 1);
    CHECK_EQ(read_all(jdir, 7, &err), 4);
    CHECK_EQ(read_all(jdir, 6, &err), -EINVAL);
    /* Never the last segment, even when everything is older. */
    CHECK_EQ(tw_journal_prune(jdir, 1000, &err), 1);
    tw_jseg_info *v;
    uint32_t n;
    CHECK_EQ(tw_jseg_list(jdir, &v, &n, &err), 0);
    CHECK_EQ(n, 1u);
    CHECK_EQ(v[0].first_seq, 10u);
    free(v);
    CHECK_EQ(put(&j, 4, 1), 0); /* the open writer goes on */
    tw_jseg_close(&j);
    CHECK_EQ(read_all(jdir, 0, &err), 5);

    /* Today's single-file journal, read as one segment. */
    char f[600];
    snprintf(f, sizeof(f), "%s/single.j", root);
    unlink(f);
    tw_journal sj;
    tw_journal_cfg c = {.path = f};
    CHECK_EQ(tw_journal_open(&sj, &c, &err), 0);
    uint8_t pl[TW_JOURNAL_PAYLOAD];
    for (int i = 0; i < 7; i++) {
        ju_payload(sj.next_seq, pl);
        CHECK_EQ(tw_journal_append(&sj, TW_JOURNAL_EV, pl, NULL), 0);
    }
    tw_journal_close(&sj);
    CHECK_EQ(read_all(f, 0, &err), 7);
    CHECK_EQ(read_all(f, 5, &err), 3);
    CHECK_EQ(tw_journal_prune(f, 100, &err), 0);
    tw_jseg_cfg dc = {.dir = f};
    CHECK_EQ(tw_jseg_open(&j, &dc, &err), -ENOTDIR);
    unlink(f);
}

/* What a kill during a rotation can leave: the full segment alone, a
 * leftover temporary (empty or with its header), the new segment with only
 * its header.  Each reopens to the same records and goes on. */
static void test_rotation_states(void)
{
    for (int state = 0; state < 4; state++) {
        fresh();
        tw_jseg j;
        open_w(&j, HDR + 2 * REC);
        CHECK_EQ(put(&j, 4, 1), 0); /* 1..2, 3..4: the next append rotates */
        tw_jseg_close(&j);
        char p[600], t[700];
        seg_file(p, sizeof(p), 5);
        snprintf(t, sizeof(t), "%s.tmp.%d", p, 999999);
        if (state == 1)
            CHECK_EQ(ju_spill(t, "", 0), 0);
        if (state == 2) {
            char q[600];
            seg_file(q, sizeof(q), 3);
            size_t len;
            uint8_t *b = ju_slurp(q, &len);
            REQUIRE(b);
            CHECK_EQ(ju_spill(t, b, HDR / 2), 0); /* a half-written header */
            free(b);
        }
        if (state == 3) {
            tw_journal sj;
            tw_error err = {0};
            tw_journal_cfg c = {.path = p, .first_seq = 5};
            CHECK_EQ(tw_journal_open(&sj, &c, &err), 0);
            tw_journal_close(&sj);
        }
        tw_error err = {0};
        CHECKF(read_all(jdir, 0, &err) == 4, "state %d: %s", state, err.msg);
        open_w(&j, HDR + 2 * REC);
        CHECK_EQ(tw_jseg_next_seq(&j), 5u);
        CHECK_EQ(put(&j, 3, 1), 0);
        tw_jseg_close(&j);
        CHECKF(read_all(jdir, 0, &err) == 7, "state %d: %s", state, err.msg);
        unlink(t);
    }
}

static uint64_t count_segments(void)
{
    DIR *d = opendir(jdir);
    uint64_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strlen(e->d_name) == 24 && strstr(e->d_name, ".twj") != NULL;
    if (d)
        closedir(d);
    return n;
}

/* A writer in a child, SIGKILLed once the directory holds a seeded number
 * of segments (the kill lands wherever the child is: in an append, in a
 * rotation, between them); the journal must reopen to whole records from
 * 1 with good payloads, and take appends after them. */
static void test_kill(void)
{
    uint64_t seed = 0x5eedull;
    for (int round = 0; round < 12; round++) {
        fresh();
        seed = ju_mix(seed);
        uint64_t target = 2 + seed % 6;
        uint32_t bulk = 1 + (uint32_t)(seed >> 8) % 3;
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            tw_jseg j;
            tw_error err = {0};
            tw_jseg_cfg c = {.dir = jdir, .segment_bytes = HDR + 3 * REC};
            if (tw_jseg_open(&j, &c, &err) != 0)
                _exit(3);
            for (;;)
                if (put(&j, 1, bulk) != 0)
                    _exit(4);
        }
        while (count_segments() < target)
            sched_yield();
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        tw_error err = {0};
        long got = read_all(jdir, 0, &err);
        CHECKF(got >= 0, "round %d: %s", round, err.msg);
        tw_jseg j;
        open_w(&j, HDR + 3 * REC);
        CHECK_EQ(tw_jseg_next_seq(&j), (uint64_t)got + 1);
        CHECK_EQ(put(&j, 5, bulk), 0);
        tw_jseg_close(&j);
        CHECK_EQ(read_all(jdir, 0, &err), got + 5);
    }
}

/* The follower: a writer appending (mapped, as the trader does) with
 * tiny segments while a follower reads, each read bounded by the end the
 * writer published; seeks forward and back across segments; the journal
 * removed; a segment deleted under the follower is named, not waited on. */
static void test_follow(void)
{
    fresh();
    tw_error err = {0};
    tw_jseg j;
    tw_jseg_cfg c = {.dir = jdir, .segment_bytes = HDR + 4 * REC, .mmap_bytes = 4096};
    CHECKF(tw_jseg_open(&j, &c, &err) == 0, "%s", err.msg);
    CHECK_EQ(put(&j, 3, 1), 0);
    tw_jseg_follow f;
    CHECKF(tw_jseg_follow_open(&f, jdir, 0, 3, &err) == 0, "%s", err.msg);
    tw_journal_rec recs[7];
    uint64_t want = 1;
    for (uint32_t round = 0; round < 40; round++) {
        CHECK_EQ(put(&j, 1 + round % 5, 1 + round % 3), 0);
        tw_jseg_follow_expect(&f, tw_jseg_next_seq(&j));
        int k;
        while ((k = tw_jseg_follow_read(&f, recs, 1 + round % 7, &err)) > 0)
            for (int i = 0; i < k; i++, want++) {
                CHECK_EQ(recs[i].seq, want);
                CHECK(ju_payload_ok(&recs[i]));
            }
        CHECKF(k == 0, "%s", err.msg);
        CHECK_EQ(want, tw_jseg_next_seq(&j)); /* everything below the end, no more */
    }
    CHECK(f.switches >= 20);
    /* Seeks: back into the first segment, forward past several. */
    const uint64_t end = tw_jseg_next_seq(&j);
    uint64_t to[] = {2, end - 1, 5, 1, end / 2};
    for (unsigned t = 0; t < sizeof(to) / sizeof(to[0]); t++) {
        CHECK_EQ(tw_jseg_follow_seek(&f, to[t], &err), 0);
        int k = tw_jseg_follow_read(&f, recs, 1, &err);
        CHECKF(k == 1 && recs[0].seq == to[t], "seek %llu: %d %s", (unsigned long long)to[t], k,
               err.msg);
    }
    CHECK_EQ(tw_jseg_follow_seek(&f, 0, &err), -EINVAL);
    tw_jseg_follow_close(&f);
    /* A segment in the middle deleted: a follower reading into it names
     * the hole once the end says the records exist. */
    char p[600];
    seg_file(p, sizeof(p), 5);
    CHECK_EQ(unlink(p), 0);
    CHECKF(tw_jseg_follow_open(&f, jdir, 1, 3, &err) == 0, "%s", err.msg);
    tw_jseg_follow_expect(&f, end);
    int k, got = 0;
    while ((k = tw_jseg_follow_read(&f, recs, 7, &err)) > 0)
        got += k;
    CHECK_EQ(got, 4);
    CHECKF(k < 0 && strstr(err.msg, "journal"), "%d %s", k, err.msg);
    tw_jseg_follow_close(&f);
    tw_jseg_close(&j);
    /* Removal: the segments and the directory; nothing there is not an error. */
    CHECK_EQ(tw_jseg_remove(jdir, &err), 0);
    struct stat st;
    CHECK(stat(jdir, &st) != 0 && errno == ENOENT);
    CHECK_EQ(tw_jseg_remove(jdir, &err), 0);
}

/* A preamble: every segment a rotation creates starts with it (its own
 * seq), then the records that caused the rotation; one bulk never splits. */
static void test_preamble(void)
{
    fresh();
    tw_error err = {0};
    tw_jseg j;
    open_w(&j, HDR + 3 * REC);
    uint8_t pre[TW_JOURNAL_PAYLOAD];
    memset(pre, 0xa5, sizeof(pre));
    tw_jseg_set_preamble(&j, TW_JOURNAL_KIND_APP, pre);
    uint8_t pl[2][TW_JOURNAL_PAYLOAD];
    memset(pl, 0, sizeof(pl));
    for (int i = 0; i < 9; i++)
        CHECK_EQ(tw_jseg_append_bulk(&j, TW_JOURNAL_EV, pl, 1 + i % 2, NULL), 0);
    tw_jseg_close(&j);
    tw_jseg_info *v;
    uint32_t n;
    CHECKF(tw_jseg_list(jdir, &v, &n, &err) == 0, "%s", err.msg);
    CHECK(n >= 4);
    for (uint32_t i = 1; i < n; i++) {
        char p[600];
        seg_file(p, sizeof(p), v[i].first_seq);
        tw_jseg_reader r;
        tw_journal_rec rec;
        CHECKF(tw_jseg_reader_open(&r, p, 0, 1, &err) == 0, "%s", err.msg);
        CHECK_EQ(tw_jseg_read_burst(&r, &rec, 1, &err), 1);
        CHECK_EQ(tw_journal_rec_kind(&rec), (uint32_t)TW_JOURNAL_KIND_APP);
        CHECK(memcmp(rec.payload, pre, sizeof(pre)) == 0);
        CHECK(v[i].records >= 2 && v[i].records <= 3); /* the preamble and a bulk of 1 or 2 */
        tw_jseg_reader_close(&r);
    }
    /* A kill between a rotation's new segment and its preamble leaves the
     * last segment with its header alone: the preamble, set again at the
     * next open, goes in first. */
    uint64_t next = v[n - 1].first_seq + v[n - 1].records;
    char p[600];
    seg_file(p, sizeof(p), next);
    tw_journal jf;
    tw_journal_cfg jc = {.path = p, .fd = -1, .first_seq = next};
    CHECKF(tw_journal_open(&jf, &jc, &err) == 0, "%s", err.msg);
    tw_journal_close(&jf);
    open_w(&j, HDR + 3 * REC);
    CHECK_EQ(tw_jseg_set_preamble(&j, TW_JOURNAL_KIND_APP, pre), 0);
    CHECK_EQ(tw_jseg_append(&j, TW_JOURNAL_EV, pl[0], NULL), 0);
    tw_jseg_close(&j);
    tw_jseg_reader r;
    tw_journal_rec rec[2];
    CHECKF(tw_jseg_reader_open(&r, p, 0, 2, &err) == 0, "%s", err.msg);
    CHECK_EQ(tw_jseg_read_burst(&r, rec, 2, &err), 2);
    CHECK(tw_journal_rec_kind(&rec[0]) == TW_JOURNAL_KIND_APP && rec[0].seq == next);
    CHECK(tw_journal_rec_kind(&rec[1]) == TW_JOURNAL_EV);
    tw_jseg_reader_close(&r);
    /* The journal's own first segment, empty, is not given one: its
     * owner writes what starts it. */
    fresh();
    open_w(&j, HDR + 3 * REC);
    CHECK_EQ(tw_jseg_set_preamble(&j, TW_JOURNAL_KIND_APP, pre), 0);
    CHECK_EQ(tw_jseg_next_seq(&j), 1u);
    tw_jseg_close(&j);
    free(v);
}

int main(void)
{
    ju_mkdir(root, sizeof(root), "jseg");
    snprintf(jdir, sizeof(jdir), "%s/j", root);
    test_rotation();
    test_torn_tail();
    test_missing_segment();
    test_lost_tail();
    test_follow_while_pruned();
    test_bit_flips();
    test_prune_and_single();
    test_rotation_states();
    test_kill();
    test_follow();
    test_preamble();
    ju_rmdir(jdir);
    ju_rmdir(root);
    return tw_check_done("journal_seg");
}
