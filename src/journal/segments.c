/* The journal in segments (tickwire/journal_seg.h; docs/crash.md,
 * "Journal segments").  Each segment is a journal file of journal.c, so a
 * segment is written and validated by the same code as a single-file
 * journal; this layer names, chains, rotates and prunes them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tickwire/journal_seg.h"

#define HDR TW_JOURNAL_HDR_BYTES
#define REC TW_JOURNAL_REC_BYTES

/* 1 if name is a segment's: 20 digits then ".twj". */
static int seg_name(const char *name)
{
    for (int i = 0; i < 20; i++)
        if (name[i] < '0' || name[i] > '9')
            return 0;
    return strcmp(name + 20, ".twj") == 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const tw_jseg_info *)a)->name, ((const tw_jseg_info *)b)->name);
}

static void seg_path(char *out, size_t cap, const char *dir, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

/* DIR/newest: a symbolic link to the newest segment's name, moved (a
 * temporary link renamed over it) after each new segment is in place.  A
 * directory whose newest segment is older than the one it names lost its
 * last segments.  Returns the seq it names, 0 when there is none (a
 * journal written before it), or -TW_EFORMAT (not a segment's name). */
#define NEWEST "newest"

static int64_t newest_read(const char *dir, tw_error *err)
{
    char p[512], t[TW_JSEG_NAME_LEN + 8];
    seg_path(p, sizeof(p), dir, NEWEST);
    ssize_t n = readlink(p, t, sizeof(t) - 1);
    if (n < 0)
        return 0;
    t[n] = '\0';
    if (n != TW_JSEG_NAME_LEN || !seg_name(t))
        return tw__err(err, -TW_EFORMAT, "journal %s: %s is a link to '%.40s', not to a "
                       "segment", dir, NEWEST, t);
    return (int64_t)strtoull(t, NULL, 10);
}

/* Points DIR/newest at the segment of first seq `seq`.  0 or -errno. */
static int newest_write(const char *dir, uint64_t seq)
{
    char p[512], tmp[512], t[TW_JSEG_NAME_LEN + 8];
    seg_path(p, sizeof(p), dir, NEWEST);
    snprintf(tmp, sizeof(tmp), "%s/%s.tmp.%d", dir, NEWEST, (int)getpid());
    snprintf(t, sizeof(t), "%020llu.twj", (unsigned long long)seq);
    (void)unlink(tmp);
    if (symlink(t, tmp) != 0)
        return -errno;
    if (rename(tmp, p) != 0) {
        int e = -errno;
        (void)unlink(tmp);
        return e;
    }
    return 0;
}

/* Reads one segment's header (through the journal reader) and size. */
static int seg_probe(const char *path, tw_jseg_info *s, tw_error *err)
{
    tw_journal_reader rd;
    tw_journal_reader_cfg rc = {.path = path, .buf_records = 2};
    int e = tw_journal_reader_open(&rd, &rc, err);
    if (e != 0)
        return e;
    struct stat st;
    if (fstat(rd.fd, &st) != 0) {
        e = tw__err(err, -errno, "journal %s: fstat: %s", path, strerror(errno));
        tw_journal_reader_close(&rd);
        return e;
    }
    s->first_seq = rd.first_seq;
    s->bytes = (uint64_t)st.st_size;
    s->records = (s->bytes - HDR) / REC;
    tw_journal_reader_close(&rd);
    return 0;
}

/* Returns 0, 1 (a directory without segments) or a negative code. */
static int list_raw(const char *dir, tw_jseg_info **out, uint32_t *n, int *single, tw_error *err)
{
    *out = NULL;
    *n = 0;
    *single = 0;
    struct stat st;
    if (stat(dir, &st) != 0)
        return tw__err(err, -errno, "journal %s: %s", dir, strerror(errno));
    if (S_ISREG(st.st_mode)) {
        tw_jseg_info *s = calloc(1, sizeof(*s));
        if (!s)
            return tw__err(err, -ENOMEM, "journal %s: no memory", dir);
        int e = seg_probe(dir, s, err);
        if (e != 0) {
            free(s);
            return e;
        }
        *out = s;
        *n = 1;
        *single = 1;
        return 0;
    }
    /* Read before the listing: the segment it names was in place before
     * it was, so a listing after it holds that one or a newer one. */
    int64_t newest = newest_read(dir, err);
    if (newest < 0)
        return (int)newest;
    DIR *d = opendir(dir);
    if (!d)
        return tw__err(err, -errno, "journal %s: opendir: %s", dir, strerror(errno));
    uint32_t cap = 0, k = 0;
    tw_jseg_info *v = NULL;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!seg_name(de->d_name))
            continue;
        if (k == cap) {
            cap = cap ? 2 * cap : 16;
            tw_jseg_info *nv = realloc(v, cap * sizeof(*v));
            if (!nv) {
                free(v);
                closedir(d);
                return tw__err(err, -ENOMEM, "journal %s: no memory", dir);
            }
            v = nv;
        }
        memset(&v[k], 0, sizeof(v[k]));
        memcpy(v[k].name, de->d_name, TW_JSEG_NAME_LEN); /* checked by seg_name */
        v[k].name[TW_JSEG_NAME_LEN] = '\0';
        k++;
    }
    closedir(d);
    if (k == 0) {
        free(v);
        if (newest > 0)
            return tw__err(err, -TW_EFORMAT, "journal %s: every segment is missing (deleted? "
                           "%s names %020llu.twj)", dir, NEWEST, (unsigned long long)newest);
        return 1; /* a directory without segments */
    }
    qsort(v, k, sizeof(*v), by_name);
    /* Probed before the newest check: a segment pruned (by another thread
     * or process) since the listing is gone, not missing.  Pruning goes
     * oldest first, so every segment listed before one that vanished has
     * gone too (or is going): they are dropped with it.  A hole in the
     * chain (absent from the listing itself) is chain_check's. */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < k; i++) {
        char p[512];
        seg_path(p, sizeof(p), dir, v[i].name);
        tw_error pe = {0};
        int e = seg_probe(p, &v[i], &pe);
        if (e == -ENOENT && i + 1 < k) {
            kept = 0;
            continue;
        }
        if (e != 0) {
            free(v);
            if (err)
                *err = pe;
            return e;
        }
        unsigned long long named = strtoull(v[i].name, NULL, 10);
        if (named != v[i].first_seq) {
            free(v);
            return tw__err(err, -TW_EFORMAT, "journal %s: segment %s holds first seq %llu", dir,
                           v[i].name, (unsigned long long)v[i].first_seq);
        }
        v[kept++] = v[i];
    }
    k = kept;
    unsigned long long last = strtoull(v[k - 1].name, NULL, 10);
    if ((uint64_t)newest > last) {
        int e = tw__err(err, -TW_EFORMAT, "journal %s: the records from seq %llu on are "
                        "missing (the last segments deleted? %s names %020llu.twj, the newest "
                        "left is %s)", dir, (unsigned long long)newest, NEWEST,
                        (unsigned long long)newest, v[k - 1].name);
        free(v);
        return e;
    }
    *out = v;
    *n = k;
    return 0;
}

/* Checks the chain: every segment but the last whole, each starting where
 * the one before ends. */
static int chain_check(const char *dir, const tw_jseg_info *v, uint32_t k, tw_error *err)
{
    for (uint32_t i = 0; i + 1 < k; i++) {
        if ((v[i].bytes - HDR) % REC != 0)
            return tw__err(err, -TW_EFORMAT,
                           "journal %s: segment %s is not the last and ends in a partial record "
                           "(%llu bytes)",
                           dir, v[i].name, (unsigned long long)v[i].bytes);
        uint64_t end = v[i].first_seq + v[i].records;
        if (v[i + 1].first_seq > end)
            return tw__err(err, -TW_EFORMAT,
                           "journal %s: records %llu..%llu missing between segment %s and %s "
                           "(a segment deleted?)",
                           dir, (unsigned long long)end, (unsigned long long)(v[i + 1].first_seq - 1),
                           v[i].name, v[i + 1].name);
        if (v[i + 1].first_seq < end)
            return tw__err(err, -TW_EFORMAT,
                           "journal %s: segment %s starts at seq %llu inside segment %s (which "
                           "ends at %llu)",
                           dir, v[i + 1].name, (unsigned long long)v[i + 1].first_seq, v[i].name,
                           (unsigned long long)(end - 1));
    }
    return 0;
}

int tw_jseg_list(const char *dir, tw_jseg_info **out, uint32_t *n, tw_error *err)
{
    int single;
    int e = list_raw(dir, out, n, &single, err);
    if (e == 1)
        return tw__err(err, -ENOENT, "journal %s: no segment", dir);
    if (e == 0 && (e = chain_check(dir, *out, *n, err)) != 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return e;
}

static void dir_sync(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
}

/* ---- writer ---------------------------------------------------------------- */

static int open_seg(tw_jseg *j, uint64_t first_seq, const char *name, tw_error *err)
{
    char nm[TW_JSEG_NAME_LEN + 8], p[512];
    if (!name) {
        snprintf(nm, sizeof(nm), "%020llu.twj", (unsigned long long)first_seq);
        name = nm;
    }
    seg_path(p, sizeof(p), j->dir, name);
    tw_journal_cfg c = {.path = p, .fd = -1, .fsync = j->fsync, .fsync_n = j->fsync_n,
                        .first_seq = first_seq, .mmap_bytes = j->mmap_bytes};
    return tw_journal_open(&j->cur, &c, err);
}

static int newest_set(tw_jseg *j, uint64_t seq, tw_error *err)
{
    int e = newest_write(j->dir, seq);
    if (e != 0) {
        tw_journal_close(&j->cur); /* nothing to append to: the chain's end is not recorded */
        return tw__err(err, e, "journal %s: %s: %s", j->dir, NEWEST, strerror(-e));
    }
    return 0;
}

int tw_jseg_open(tw_jseg *j, const tw_jseg_cfg *cfg, tw_error *err)
{
    memset(j, 0, sizeof(*j));
    j->cur.fd = -1;
    if (!cfg->dir || strlen(cfg->dir) >= sizeof(j->dir) - 30)
        return tw__err(err, -ENAMETOOLONG, "journal: directory name missing or longer than %zu "
                       "bytes: %.80s", sizeof(j->dir) - 31, cfg->dir ? cfg->dir : "");
    snprintf(j->dir, sizeof(j->dir), "%s", cfg->dir);
    j->segment_bytes = cfg->segment_bytes ? cfg->segment_bytes : TW_JSEG_DEFAULT_BYTES;
    if (j->segment_bytes < HDR + REC)
        return tw__err(err, -EINVAL, "journal %s: segment_bytes %llu below a header and a record",
                       j->dir, (unsigned long long)j->segment_bytes);
    j->fsync = cfg->fsync;
    j->fsync_n = cfg->fsync_n;
    j->mmap_bytes = cfg->mmap_bytes;
    j->hook = cfg->hook;
    j->hook_arg = cfg->hook_arg;
    if (mkdir(j->dir, 0755) != 0 && errno != EEXIST)
        return tw__err(err, -errno, "journal %s: mkdir: %s", j->dir, strerror(errno));
    tw_jseg_info *v = NULL;
    uint32_t k = 0;
    int single;
    int e = list_raw(j->dir, &v, &k, &single, err);
    if (e == 0 && single)
        e = tw__err(err, -ENOTDIR, "journal %s: a single-file journal, not a directory", j->dir);
    if (e == 0)
        e = chain_check(j->dir, v, k, err);
    if (e == 1) {
        uint64_t first = cfg->first_seq ? cfg->first_seq : 1;
        e = open_seg(j, first, NULL, err);
        if (e == 0)
            e = newest_set(j, first, err);
        if (e == 0 && j->fsync != TW_JOURNAL_FSYNC_NONE)
            dir_sync(j->dir);
        j->first_seq = first;
        j->segments = 1;
        return e;
    }
    if (e != 0) {
        free(v);
        return e;
    }
    j->first_seq = v[0].first_seq;
    j->segments = k;
    const uint64_t last = v[k - 1].first_seq;
    e = open_seg(j, last, v[k - 1].name, err);
    free(v);
    /* A kill between a new segment and its link left the link behind
     * (or a journal written before the link): it names the newest now. */
    if (e == 0 && newest_read(j->dir, NULL) != (int64_t)last)
        e = newest_set(j, last, err);
    return e;
}

static int rotate(tw_jseg *j, tw_error *err)
{
    uint64_t next = j->cur.next_seq;
    if (j->fsync != TW_JOURNAL_FSYNC_NONE) {
        int e = tw_journal_sync(&j->cur);
        if (e != 0)
            return e;
    }
    tw_journal_close(&j->cur);
    if (j->hook)
        j->hook(TW_JSEG_AT_CLOSED, j->hook_arg);
    int e = open_seg(j, next, NULL, err);
    if (e != 0)
        return e;
    if ((e = newest_set(j, next, err)) != 0)
        return e;
    if (j->fsync != TW_JOURNAL_FSYNC_NONE)
        dir_sync(j->dir);
    j->segments++;
    j->rotations++;
    if (j->hook)
        j->hook(TW_JSEG_AT_CREATED, j->hook_arg);
    return 0;
}

int tw_jseg_append_bulk(tw_jseg *j, uint32_t kind, const void *payloads, uint32_t n,
                        tw_journal_rec *recs)
{
    if (j->cur.fd < 0)
        return -EIO; /* a rotation failed: nothing is open to append to */
    const uint64_t pre = j->pre_kind ? 1 : 0;
    if (j->cur.records > pre && j->cur.size + (uint64_t)n * REC > j->segment_bytes) {
        tw_error err = {0};
        int e = rotate(j, &err);
        if (e != 0)
            return e;
        if (pre && (e = tw_journal_append(&j->cur, j->pre_kind, j->pre_payload, NULL)) != 0)
            return e;
        if (pre && j->hook)
            j->hook(TW_JSEG_AT_PREAMBLE, j->hook_arg);
    }
    return tw_journal_append_bulk(&j->cur, kind, payloads, n, recs);
}

int tw_jseg_set_preamble(tw_jseg *j, uint32_t kind, const void *payload)
{
    j->pre_kind = kind;
    if (!kind)
        return 0;
    memcpy(j->pre_payload, payload, TW_JOURNAL_PAYLOAD);
    if (j->cur.fd >= 0 && j->cur.records == 0 && j->cur.first_seq > j->first_seq)
        return tw_journal_append(&j->cur, kind, payload, NULL);
    return 0;
}

int tw_jseg_append(tw_jseg *j, uint32_t kind, const void *payload, tw_journal_rec *rec)
{
    return tw_jseg_append_bulk(j, kind, payload, 1, rec);
}

int tw_jseg_sync(tw_jseg *j)
{
    return j->cur.fd < 0 ? -EIO : tw_journal_sync(&j->cur);
}

int tw_jseg_grow_ahead(tw_jseg *j)
{
    return tw_journal_grow_ahead(&j->cur, j->segment_bytes);
}

void tw_jseg_close(tw_jseg *j)
{
    tw_journal_close(&j->cur);
}

/* ---- reader ---------------------------------------------------------------- */

static int rd_fail(tw_jseg_reader *r, tw_error *err, int code)
{
    r->failed = code;
    if (err)
        *err = r->fail_err;
    return code;
}

static int rd_open_seg(tw_jseg_reader *r, uint64_t from, tw_error *err)
{
    char p[512];
    if (r->nsegs == 1 && strcmp(r->segs[0].name, "") == 0)
        snprintf(p, sizeof(p), "%s", r->dir);
    else
        seg_path(p, sizeof(p), r->dir, r->segs[r->at].name);
    tw_journal_reader_cfg c = {.path = p, .from_seq = from, .buf_records = r->buf_records};
    int e = tw_journal_reader_open(&r->cur, &c, err);
    r->open_cur = e == 0;
    return e;
}

int tw_jseg_reader_open(tw_jseg_reader *r, const char *dir, uint64_t from_seq,
                        uint32_t buf_records, tw_error *err)
{
    memset(r, 0, sizeof(*r));
    r->cur.fd = -1;
    if (strlen(dir) >= sizeof(r->dir))
        return tw__err(err, -ENAMETOOLONG, "journal: name longer than %zu bytes: %.80s",
                       sizeof(r->dir) - 1, dir);
    snprintf(r->dir, sizeof(r->dir), "%s", dir);
    r->buf_records = buf_records;
    int e = tw_jseg_list(dir, &r->segs, &r->nsegs, err);
    if (e != 0)
        return e;
    uint64_t first = r->segs[0].first_seq;
    if (from_seq == 0)
        from_seq = first;
    if (from_seq < first) {
        e = tw__err(err, -EINVAL, "journal %s: seq %llu asked for, the journal starts at %llu",
                    dir, (unsigned long long)from_seq, (unsigned long long)first);
        tw_jseg_reader_close(r);
        return e;
    }
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISREG(st.st_mode))
        r->segs[0].name[0] = '\0'; /* the path itself */
    r->at = 0;
    while (r->at + 1 < r->nsegs && r->segs[r->at + 1].first_seq <= from_seq)
        r->at++;
    e = rd_open_seg(r, from_seq, err);
    if (e != 0)
        tw_jseg_reader_close(r);
    return e;
}

int tw_jseg_read_burst(tw_jseg_reader *r, tw_journal_rec *recs, uint32_t n, tw_error *err)
{
    if (r->failed) {
        if (err)
            *err = r->fail_err;
        return r->failed;
    }
    for (;;) {
        int k = tw_journal_read_burst(&r->cur, recs, n, &r->fail_err);
        if (k < 0)
            return rd_fail(r, err, k);
        if (k > 0) {
            r->records += (uint64_t)k;
            return k;
        }
        /* The end of this segment. */
        if (r->at + 1 >= r->nsegs) {
            r->torn_bytes = r->cur.torn_bytes;
            return 0;
        }
        const tw_jseg_info *a = &r->segs[r->at], *b = &r->segs[r->at + 1];
        if (r->cur.torn_bytes || r->cur.zero_bytes) {
            tw__err(&r->fail_err, -TW_EFORMAT,
                    "journal %s: segment %s is not the last and ends in %llu bytes that are not "
                    "records",
                    r->dir, a->name,
                    (unsigned long long)(r->cur.torn_bytes + r->cur.zero_bytes));
            return rd_fail(r, err, -TW_EFORMAT);
        }
        if (r->cur.seq != b->first_seq) {
            tw__err(&r->fail_err, -TW_EFORMAT,
                    "journal %s: segment %s ends at seq %llu, segment %s starts at %llu", r->dir,
                    a->name, (unsigned long long)(r->cur.seq - 1), b->name,
                    (unsigned long long)b->first_seq);
            return rd_fail(r, err, -TW_EFORMAT);
        }
        tw_journal_reader_close(&r->cur);
        r->open_cur = 0;
        r->at++;
        int e = rd_open_seg(r, 0, &r->fail_err);
        if (e != 0)
            return rd_fail(r, err, e);
    }
}

void tw_jseg_reader_close(tw_jseg_reader *r)
{
    if (r->open_cur)
        tw_journal_reader_close(&r->cur);
    r->open_cur = 0;
    free(r->segs);
    r->segs = NULL;
    r->nsegs = 0;
}

/* ---- follower -------------------------------------------------------------- */

/* Opens the segment of the listing that holds seq (the last one whose
 * first seq is at most seq) as a following reader at seq. */
static int fl_open_at(tw_jseg_follow *f, uint64_t seq, tw_error *err)
{
    tw_jseg_info *v = NULL;
    uint32_t k = 0;
    int single;
    int e = list_raw(f->dir, &v, &k, &single, err);
    if (e == 1)
        return tw__err(err, -ENOENT, "journal %s: no segment", f->dir);
    if (e != 0)
        return e;
    if (seq == 0)
        seq = v[0].first_seq;
    if (seq < v[0].first_seq) {
        e = tw__err(err, -EINVAL, "journal %s: seq %llu asked for, the journal starts at %llu",
                    f->dir, (unsigned long long)seq, (unsigned long long)v[0].first_seq);
        free(v);
        return e;
    }
    uint32_t at = 0;
    while (at + 1 < k && v[at + 1].first_seq <= seq)
        at++;
    char p[512];
    if (single)
        snprintf(p, sizeof(p), "%s", f->dir);
    else
        seg_path(p, sizeof(p), f->dir, v[at].name);
    if (f->open_cur)
        tw_journal_reader_close(&f->cur);
    f->open_cur = 0;
    tw_journal_reader_cfg c = {.path = p, .follow = 1, .from_seq = seq,
                               .buf_records = f->buf_records};
    e = tw_journal_reader_open(&f->cur, &c, err);
    if (e == 0) {
        f->open_cur = 1;
        f->seg_first = v[at].first_seq;
        if (f->first_seq == 0)
            f->first_seq = v[0].first_seq;
        f->seq = seq;
    }
    free(v);
    return e;
}

int tw_jseg_follow_open(tw_jseg_follow *f, const char *dir, uint64_t from_seq,
                        uint32_t buf_records, tw_error *err)
{
    memset(f, 0, sizeof(*f));
    f->cur.fd = -1;
    if (strlen(dir) >= sizeof(f->dir))
        return tw__err(err, -ENAMETOOLONG, "journal: name too long: %s", dir);
    snprintf(f->dir, sizeof(f->dir), "%s", dir);
    f->buf_records = buf_records;
    return fl_open_at(f, from_seq, err);
}

void tw_jseg_follow_expect(tw_jseg_follow *f, uint64_t end_seq)
{
    if (end_seq > f->end)
        f->end = end_seq;
}

int tw_jseg_follow_seek(tw_jseg_follow *f, uint64_t seq, tw_error *err)
{
    if (seq < f->first_seq)
        return -EINVAL;
    if (seq >= f->seg_first && f->open_cur && tw_journal_reader_seek(&f->cur, seq) == 0) {
        /* Past this segment's end the next read finds nothing and moves on. */
        f->seq = seq;
        return 0;
    }
    return fl_open_at(f, seq, err);
}

int tw_jseg_follow_read(tw_jseg_follow *f, tw_journal_rec *recs, uint32_t n, tw_error *err)
{
    if (!f->open_cur)
        return tw__err(err, -EBADF, "journal %s: not open", f->dir);
    for (int pass = 0;; pass++) {
        int k = tw_journal_read_burst(&f->cur, recs, n, err);
        if (k != 0 || f->seq >= f->end) {
            if (k > 0)
                f->seq += (uint64_t)k;
            return k;
        }
        /* Below the end and nothing here: the segment ended (a rotation),
         * or the record is missing. */
        if (pass == 0) {
            uint64_t seg = f->seg_first;
            int e = fl_open_at(f, f->seq, err);
            if (e != 0)
                return e;
            if (f->seg_first != seg) {
                f->switches++;
                continue;
            }
        }
        /* No later segment holds it: the segment's reader judges it. */
        tw_journal_reader_expect(&f->cur, f->end);
        k = tw_journal_read_burst(&f->cur, recs, n, err);
        if (k > 0)
            f->seq += (uint64_t)k;
        return k;
    }
}

void tw_jseg_follow_close(tw_jseg_follow *f)
{
    if (f->open_cur)
        tw_journal_reader_close(&f->cur);
    f->open_cur = 0;
}

/* ---- retention ------------------------------------------------------------- */

int tw_journal_prune(const char *dir, uint64_t oldest_needed_seq, tw_error *err)
{
    tw_jseg_info *v = NULL;
    uint32_t k = 0;
    int single;
    int e = list_raw(dir, &v, &k, &single, err);
    if (e == 1)
        return 0;
    if (e != 0)
        return e;
    if (single) {
        free(v);
        return 0; /* a single-file journal is never cut */
    }
    int deleted = 0;
    /* Oldest first, so that a kill midway leaves a chain without a hole. */
    for (uint32_t i = 0; i + 1 < k; i++) {
        if (v[i + 1].first_seq > oldest_needed_seq)
            break; /* segment i holds seq >= oldest_needed_seq (or a later one does not start yet) */
        char p[512];
        seg_path(p, sizeof(p), dir, v[i].name);
        if (unlink(p) != 0) {
            e = tw__err(err, -errno, "journal %s: unlink %s: %s", dir, v[i].name, strerror(errno));
            free(v);
            return e;
        }
        deleted++;
    }
    free(v);
    if (deleted)
        dir_sync(dir);
    return deleted;
}

int tw_jseg_remove(const char *dir, tw_error *err)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        return errno == ENOENT ? 0 : tw__err(err, -errno, "journal %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        if (unlink(dir) != 0)
            return tw__err(err, -errno, "journal %s: unlink: %s", dir, strerror(errno));
        return 0;
    }
    DIR *d = opendir(dir);
    if (!d)
        return tw__err(err, -errno, "journal %s: opendir: %s", dir, strerror(errno));
    struct dirent *de;
    int e = 0;
    while ((de = readdir(d)) != NULL && e == 0) {
        if (!seg_name(de->d_name) && strcmp(de->d_name, NEWEST) != 0)
            continue;
        char p[512];
        seg_path(p, sizeof(p), dir, de->d_name);
        if (unlink(p) != 0)
            e = tw__err(err, -errno, "journal %s: unlink %s: %s", dir, de->d_name, strerror(errno));
    }
    closedir(d);
    if (e == 0 && rmdir(dir) != 0 && errno != ENOTEMPTY && errno != EEXIST)
        e = tw__err(err, -errno, "journal %s: rmdir: %s", dir, strerror(errno));
    return e;
}
