/* The snapshot writer thread (tickwire/snapshot.h, "the writer thread";
 * docs/crash.md, "Snapshot files"): two slots the owning core fills in
 * place and commits, written in commit order by a thread of their own,
 * which may append sections of its own (cfg.append). */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/snapshot_internal.h"
#include "tickwire/snapshot.h"
#include "tickwire/util.h"

enum { SLOT_FREE = 0, SLOT_FILLING, SLOT_READY, SLOT_WRITING };

struct tw_snap_slot {
    uint8_t *buf;  /* header, sections, room for the trailer */
    size_t cap;    /* bytes for the header and the sections */
    size_t len;    /* used so far */
    uint32_t nsec;
    int overflow;  /* a section did not fit */
    uint64_t seq;
    int state;
};

struct tw_snap_writer {
    tw_snap_writer_cfg cfg;
    char dir[4096];
    uint8_t digest[TW_SNAP_DIGEST_BYTES];
    uint32_t keep;
    tw_snap_slot slot[2];
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    pthread_t th;
    int stop;
    uint64_t *kept; /* the kept snapshots' seqs, oldest first */
    uint32_t n_kept;
    tw_snap_writer_stats st;
};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Appends seq to the kept list (sorted), dropping the oldest beyond keep. */
static void kept_push(tw_snap_writer *w, uint64_t seq)
{
    if (w->n_kept == w->keep) {
        memmove(w->kept, w->kept + 1, (w->keep - 1) * sizeof(uint64_t));
        w->n_kept--;
    }
    w->kept[w->n_kept++] = seq;
    qsort(w->kept, w->n_kept, sizeof(uint64_t), cmp_u64);
}

/* The snapshots already in the directory count as kept. */
static void kept_scan(tw_snap_writer *w)
{
    DIR *d = opendir(w->dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        uint64_t seq;
        if (tw__snap_name(e->d_name, &seq)) {
            if (w->n_kept == w->keep && seq < w->kept[0])
                continue;
            kept_push(w, seq);
        }
    }
    closedir(d);
}

/* Each section of the slot through cfg.finish, then either its CRC in
 * place (b NULL) or a copy into b. */
static void finish_sections(tw_snap_writer *w, tw_snap_slot *s, tw_snap_buf *b)
{
    size_t off = TW_SNAP_HDR_BYTES;
    for (uint32_t i = 0; i < s->nsec; i++) {
        uint64_t len;
        uint32_t id;
        memcpy(&id, s->buf + off, 4);
        memcpy(&len, s->buf + off + 8, 8);
        uint8_t *data = s->buf + off + TW_SNAP_SEC_HDR_BYTES;
        if (w->cfg.finish)
            w->cfg.finish(w->cfg.arg, id, data, len);
        if (b) {
            (void)tw_snap_add(b, id, data, len); /* a failure is b's: the write refuses */
        } else {
            uint32_t crc = tw_crc32c(0, data, (size_t)len);
            memcpy(s->buf + off + 4, &crc, 4);
        }
        off += tw_snap_section_bytes(len);
    }
}

/* The sections' CRCs, the header, then the file.  With cfg.append, the
 * slot's sections and the appended ones are built in a buffer of their
 * own: the slot's size is the core's, fixed. */
static int write_slot(tw_snap_writer *w, tw_snap_slot *s, tw_error *err)
{
    if (s->overflow)
        return tw__err(err, -ENOSPC, "snapshot %s: a section did not fit the slot (%zu bytes)",
                       w->dir, s->cap);
    tw_snap_write_cfg wc = w->cfg.write;
    wc.dir = w->dir;
    wc.keep = w->keep;
    if (w->cfg.append) {
        tw_snap_buf b;
        tw_snap_begin(&b, s->seq, w->digest);
        finish_sections(w, s, &b);
        int rc = w->cfg.append(w->cfg.arg, s->seq, &b, err);
        if (rc == 0)
            rc = tw_snap_write(&b, &wc, err);
        tw_snap_free(&b);
        return rc;
    }
    tw__snap_hdr_init(s->buf, s->seq, w->digest);
    finish_sections(w, s, NULL);
    tw_snap_buf b = {.buf = s->buf, .len = s->len, .cap = s->cap + TW_SNAP_TRAILER_BYTES,
                     .nsections = s->nsec};
    return tw_snap_write(&b, &wc, err);
}

static void *run(void *arg)
{
    tw_snap_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        tw_snap_slot *s = NULL;
        for (int i = 0; i < 2; i++)
            if (w->slot[i].state == SLOT_READY && (!s || w->slot[i].seq < s->seq))
                s = &w->slot[i];
        if (!s) {
            if (w->stop)
                break;
            pthread_cond_wait(&w->work, &w->mu);
            continue;
        }
        s->state = SLOT_WRITING;
        pthread_mutex_unlock(&w->mu);
        tw_error err = {0};
        int rc = write_slot(w, s, &err);
        uint64_t oldest = 0;
        pthread_mutex_lock(&w->mu);
        if (rc == 0) {
            kept_push(w, s->seq);
            oldest = w->kept[0];
            w->st.written++;
            w->st.last_seq = s->seq;
        } else {
            w->st.failed++;
            snprintf(w->st.last_err, sizeof(w->st.last_err), "%s", err.msg);
        }
        const uint64_t seq = s->seq;
        pthread_mutex_unlock(&w->mu);
        if (rc == 0 && w->cfg.written)
            w->cfg.written(w->cfg.arg, seq, oldest);
        pthread_mutex_lock(&w->mu);
        s->state = SLOT_FREE;
        pthread_cond_broadcast(&w->done);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int tw_snap_writer_start(tw_snap_writer **out, const tw_snap_writer_cfg *cfg, tw_error *err)
{
    *out = NULL;
    if (!cfg || !cfg->write.dir || cfg->slot_bytes == 0)
        return tw__err(err, -EINVAL, "snapshot writer: no directory or slot size");
    tw_snap_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return tw__err(err, -ENOMEM, "snapshot writer: no memory");
    w->cfg = *cfg;
    snprintf(w->dir, sizeof(w->dir), "%s", cfg->write.dir);
    if (cfg->digest)
        memcpy(w->digest, cfg->digest, TW_SNAP_DIGEST_BYTES);
    w->keep = cfg->write.keep ? cfg->write.keep : TW_SNAP_DEFAULT_KEEP;
    w->kept = calloc(w->keep, sizeof(uint64_t));
    int rc = w->kept ? 0 : -ENOMEM;
    for (int i = 0; i < 2 && rc == 0; i++) {
        tw_snap_slot *s = &w->slot[i];
        s->cap = TW_SNAP_HDR_BYTES + cfg->slot_bytes;
        /* Touched now, so that the core's first copy takes no page fault. */
        s->buf = malloc(s->cap + TW_SNAP_TRAILER_BYTES);
        if (!s->buf)
            rc = -ENOMEM;
        else
            memset(s->buf, 0, s->cap + TW_SNAP_TRAILER_BYTES);
    }
    if (rc)
        goto fail;
    kept_scan(w);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->done, NULL);
    rc = -pthread_create(&w->th, NULL, run, w);
    if (rc) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->work);
        pthread_cond_destroy(&w->done);
        goto fail;
    }
    *out = w;
    return 0;
fail:
    for (int i = 0; i < 2; i++)
        free(w->slot[i].buf);
    free(w->kept);
    free(w);
    return tw__err(err, rc, "snapshot writer: %s", strerror(-rc));
}

tw_snap_slot *tw_snap_writer_begin(tw_snap_writer *w)
{
    tw_snap_slot *s = NULL;
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < 2 && !s; i++)
        if (w->slot[i].state == SLOT_FREE)
            s = &w->slot[i];
    if (s) {
        s->state = SLOT_FILLING;
        s->len = TW_SNAP_HDR_BYTES;
        s->nsec = 0;
        s->overflow = 0;
    } else {
        w->st.skipped++;
    }
    pthread_mutex_unlock(&w->mu);
    return s;
}

void *tw_snap_slot_section(tw_snap_slot *s, uint32_t id, uint64_t len)
{
    const size_t need = tw_snap_section_bytes(len);
    if (s->overflow || len > s->cap || need > s->cap - s->len ||
        s->nsec >= TW_SNAP_MAX_SECTIONS) {
        s->overflow = 1;
        return NULL;
    }
    uint8_t *p = s->buf + s->len;
    uint32_t zero = 0;
    memcpy(p, &id, 4);
    memcpy(p + 4, &zero, 4);
    memcpy(p + 8, &len, 8);
    if (len)
        memset(p + need - 8, 0, 8); /* the padding (the data overwrites its own part) */
    s->len += need;
    s->nsec++;
    return p + TW_SNAP_SEC_HDR_BYTES;
}

void tw_snap_writer_commit(tw_snap_writer *w, tw_snap_slot *s, uint64_t journal_seq)
{
    pthread_mutex_lock(&w->mu);
    s->seq = journal_seq;
    s->state = SLOT_READY;
    w->st.committed++;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
}

void tw_snap_writer_flush(tw_snap_writer *w)
{
    pthread_mutex_lock(&w->mu);
    while (w->slot[0].state >= SLOT_READY || w->slot[1].state >= SLOT_READY)
        pthread_cond_wait(&w->done, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

void tw_snap_writer_stats_get(tw_snap_writer *w, tw_snap_writer_stats *out)
{
    pthread_mutex_lock(&w->mu);
    *out = w->st;
    pthread_mutex_unlock(&w->mu);
}

void tw_snap_writer_stop(tw_snap_writer *w)
{
    if (!w)
        return;
    tw_snap_writer_flush(w);
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->work);
    pthread_cond_destroy(&w->done);
    for (int i = 0; i < 2; i++)
        free(w->slot[i].buf);
    free(w->kept);
    free(w);
}
