/* The snapshot writer thread: slots filled in place and committed, written
 * in commit order off the committing thread, the newest `keep` kept, the
 * `written` callback with the oldest kept seq (snapshots already in the
 * directory counted), a slow writer making the core skip (never wait), a
 * section too large for the slot and a directory that cannot be written
 * counted as failed with the reason. */
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../journal/journal_test_util.h"
#include "tickwire/snapshot.h"
#include "tw_check.h"

static char dir[256];
static const uint8_t digest[TW_SNAP_DIGEST_BYTES] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};

typedef struct seen {
    uint64_t seq[64], oldest[64];
    unsigned n;
} seen;

/* The owner's finishing step: the strategy section's first byte set. */
static unsigned finished;
static void on_finish(void *arg, uint32_t id, void *data, uint64_t len)
{
    (void)arg;
    finished++;
    if (id == TW_SNAP_SEC_STRATEGY && len)
        ((uint8_t *)data)[0] = 0xAB;
}

static void on_written(void *arg, uint64_t seq, uint64_t oldest)
{
    seen *s = arg;
    if (s->n < 64) {
        s->seq[s->n] = seq;
        s->oldest[s->n] = oldest;
        s->n++;
    }
}

/* The writer's test hook: block each write until released. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_closed, gate_waiting;

static void gate(int at, void *arg)
{
    (void)arg;
    if (at != TW_SNAP_AT_BEFORE_FSYNC)
        return;
    pthread_mutex_lock(&gate_mu);
    gate_waiting++;
    pthread_cond_broadcast(&gate_cv);
    while (gate_closed)
        pthread_cond_wait(&gate_cv, &gate_mu);
    gate_waiting--;
    pthread_mutex_unlock(&gate_mu);
}

static void fill(tw_snap_slot *s, uint64_t seq)
{
    uint8_t *a = tw_snap_slot_section(s, TW_SNAP_SEC_KERNELS, 9);
    CHECK(a != NULL);
    if (a)
        memcpy(a, "hma_sar 1", 9);
    uint8_t *b = tw_snap_slot_section(s, TW_SNAP_SEC_STRATEGY, 1000);
    CHECK(b != NULL);
    for (unsigned i = 0; b && i < 1000; i++)
        b[i] = (uint8_t)(seq + i);
    CHECK(tw_snap_slot_section(s, TW_SNAP_SEC_RISK, 0) != NULL);
}

static void check_loaded(uint64_t want)
{
    tw_snap s;
    tw_snap_report rep;
    tw_error err = {0};
    tw_snap_expect e = {.digest = digest, .kernels = "hma_sar 1"};
    int rc = tw_snap_load(dir, &e, &s, &rep, &err);
    CHECKF(rc == 0, "%s", err.msg);
    if (rc)
        return;
    CHECK(s.hdr.journal_seq == want && s.nsec == 3);
    const tw_snap_section *b = tw_snap_find(&s, TW_SNAP_SEC_STRATEGY);
    int ok = b && b->len == 1000 && b->data[0] == 0xAB;
    for (unsigned i = 1; ok && i < 1000; i++)
        ok = b->data[i] == (uint8_t)(want + i);
    CHECK(ok);
    const tw_snap_section *r = tw_snap_find(&s, TW_SNAP_SEC_RISK);
    CHECK(r && r->len == 0);
    tw_snap_release(&s);
}

/* The writer thread's own sections: seq / 10 KiB of them, growing. */
static pthread_t core;
static int appended, append_off_core;
static int append_grown(void *arg, uint64_t seq, tw_snap_buf *b, tw_error *err)
{
    (void)arg;
    appended++;
    append_off_core += !pthread_equal(pthread_self(), core);
    if (seq == 13)
        return tw__err(err, -EIO, "the journal could not be read");
    size_t n = (size_t)(seq / 10) << 10;
    uint8_t *p = malloc(n ? n : 1);
    if (!p)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i ^ seq);
    int rc = tw_snap_add(b, TW_SNAP_SEC_GW_FOLD, p, n);
    free(p);
    return rc;
}

static void test_append(void)
{
    tw_snap_writer *w;
    tw_error err = {0};
    core = pthread_self();
    tw_snap_writer_cfg cfg = {.write = {.dir = dir, .keep = 2},
                              .digest = digest,
                              .slot_bytes = tw_snap_section_bytes(9) + tw_snap_section_bytes(1000) +
                                            tw_snap_section_bytes(0),
                              .finish = on_finish,
                              .append = append_grown};
    CHECKF(tw_snap_writer_start(&w, &cfg, &err) == 0, "%s", err.msg);
    if (!w)
        return;
    const uint64_t seqs[] = {1000, 2000, 13, 4000};
    for (unsigned k = 0; k < 4; k++) {
        tw_snap_slot *s = tw_snap_writer_begin(w);
        CHECK(s != NULL);
        if (!s)
            continue;
        fill(s, seqs[k]);
        tw_snap_writer_commit(w, s, seqs[k]);
        tw_snap_writer_flush(w);
        if (seqs[k] == 13)
            continue;
        tw_snap snap;
        tw_snap_report rep;
        tw_snap_expect e = {.digest = digest, .kernels = "hma_sar 1"};
        int rc = tw_snap_load(dir, &e, &snap, &rep, &err);
        CHECKF(rc == 0, "%s", err.msg);
        if (rc)
            continue;
        const tw_snap_section *g = tw_snap_find(&snap, TW_SNAP_SEC_GW_FOLD);
        const tw_snap_section *b = tw_snap_find(&snap, TW_SNAP_SEC_STRATEGY);
        CHECK(snap.hdr.journal_seq == seqs[k] && snap.nsec == 4 && g && b);
        CHECK(b && b->len == 1000 && b->data[0] == 0xAB && b->data[1] == (uint8_t)(seqs[k] + 1));
        int ok = g && g->len == (seqs[k] / 10) << 10;
        for (size_t i = 0; ok && i < g->len; i++)
            ok = g->data[i] == (uint8_t)(i ^ seqs[k]);
        CHECK(ok);
        tw_snap_release(&snap);
    }
    tw_snap_writer_stats st;
    tw_snap_writer_stats_get(w, &st);
    CHECKF(st.written == 3 && st.failed == 1 && strstr(st.last_err, "could not be read") &&
           st.last_seq == 4000, "%llu %llu %s", (unsigned long long)st.written,
           (unsigned long long)st.failed, st.last_err);
    CHECK(appended == 4 && append_off_core == 4);
    tw_snap_writer_stop(w);
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/tw_snap_writer.%d", (int)getpid());
    ju_rmdir(dir);
    CHECK(mkdir(dir, 0755) == 0);
    /* One older snapshot already there (a restarted process). */
    {
        tw_snap_buf b;
        tw_error err = {0};
        tw_snap_begin(&b, 5, digest);
        tw_snap_write_cfg c = {.dir = dir, .keep = 2};
        CHECKF(tw_snap_write(&b, &c, &err) == 0, "%s", err.msg);
        tw_snap_free(&b);
    }
    seen sn = {0};
    tw_snap_writer *w;
    tw_error err = {0};
    tw_snap_writer_cfg cfg = {.write = {.dir = dir, .keep = 2, .hook = gate},
                              .digest = digest,
                              .slot_bytes = tw_snap_section_bytes(9) + tw_snap_section_bytes(1000) +
                                            tw_snap_section_bytes(0),
                              .written = on_written,
                              .finish = on_finish,
                              .arg = &sn};
    CHECKF(tw_snap_writer_start(&w, &cfg, &err) == 0, "%s", err.msg);
    if (!w)
        return tw_check_done("snapshot_writer");
    for (uint64_t seq = 100; seq <= 500; seq += 100) {
        tw_snap_slot *s = tw_snap_writer_begin(w);
        CHECK(s != NULL);
        if (!s)
            continue;
        fill(s, seq);
        tw_snap_writer_commit(w, s, seq);
        tw_snap_writer_flush(w);
    }
    check_loaded(500);
    CHECK(finished == 15); /* 3 sections x 5 */
    CHECK(sn.n == 5 && sn.seq[0] == 100 && sn.oldest[0] == 5 && sn.oldest[1] == 100 &&
          sn.oldest[4] == 400);
    char p[400];
    snprintf(p, sizeof(p), "%s/snap-%020llu.tws", dir, 300ull);
    CHECK(access(p, F_OK) != 0);

    /* A slow disk: both slots busy, the core skips, never waits. */
    pthread_mutex_lock(&gate_mu);
    gate_closed = 1;
    pthread_mutex_unlock(&gate_mu);
    tw_snap_slot *a = tw_snap_writer_begin(w);
    CHECK(a != NULL);
    fill(a, 600);
    tw_snap_writer_commit(w, a, 600);
    pthread_mutex_lock(&gate_mu);
    while (gate_waiting == 0)
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
    tw_snap_slot *b = tw_snap_writer_begin(w);
    CHECK(b != NULL && b != a);
    fill(b, 700);
    tw_snap_writer_commit(w, b, 700);
    CHECK(tw_snap_writer_begin(w) == NULL);
    tw_snap_writer_stats st;
    tw_snap_writer_stats_get(w, &st);
    CHECK(st.skipped == 1 && st.committed == 7 && st.written == 5);
    pthread_mutex_lock(&gate_mu);
    gate_closed = 0;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
    tw_snap_writer_flush(w);
    check_loaded(700);
    CHECK(sn.n == 7 && sn.seq[5] == 600 && sn.seq[6] == 700 && sn.oldest[6] == 600);

    /* A section larger than the slot: refused, the snapshot fails. */
    tw_snap_slot *c = tw_snap_writer_begin(w);
    CHECK(c != NULL && tw_snap_slot_section(c, TW_SNAP_SEC_STRATEGY, 1u << 20) == NULL);
    tw_snap_writer_commit(w, c, 800);
    tw_snap_writer_flush(w);
    tw_snap_writer_stats_get(w, &st);
    CHECK(st.failed == 1 && strstr(st.last_err, "did not fit") && st.last_seq == 700);
    tw_snap_writer_stop(w);

    /* A directory that cannot be created: failed, with the reason. */
    char bad[400];
    snprintf(bad, sizeof(bad), "%s/snap-%020llu.tws/sub", dir, 700ull);
    cfg.write.dir = bad;
    cfg.write.hook = NULL;
    cfg.written = NULL;
    cfg.finish = NULL;
    CHECK(tw_snap_writer_start(&w, &cfg, &err) == 0);
    if (w) {
        tw_snap_slot *d = tw_snap_writer_begin(w);
        CHECK(d != NULL);
        if (d) {
            fill(d, 900);
            tw_snap_writer_commit(w, d, 900);
        }
        tw_snap_writer_flush(w);
        tw_snap_writer_stats_get(w, &st);
        CHECKF(st.failed == 1 && st.written == 0 && st.last_err[0], "%s", st.last_err);
        tw_snap_writer_stop(w);
    }
    ju_rmdir(dir);
    CHECK(mkdir(dir, 0755) == 0);
    test_append();
    ju_rmdir(dir);
    return tw_check_done("snapshot_writer");
}
