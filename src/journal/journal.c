/* The gateway's journal (tickwire/journal.h; docs/crash.md, "Journal
 * format").
 *
 * One validation path for everything: the writer's open reads the file
 * through a reader, so what a restarted strategy accepts and what a
 * restarted gateway accepts are the same records.  Records have one size
 * and their seq follows from their place, which makes the torn-tail rule
 * simple: a live writer only ever leaves whole records, at most one torn
 * record and zeros behind a kill, so a bad record with nothing valid after
 * it and at most one record's worth of non-zero bytes is a torn tail;
 * anything else is damage, refused with the offset. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tickwire/util.h" /* tw_crc32c */
#include "tickwire/journal.h"

#define HDR TW_JOURNAL_HDR_BYTES
#define REC TW_JOURNAL_REC_BYTES
#define BULK_CHUNK 32u /* records built on the stack per pwrite */

uint32_t tw_journal_rec_crc(const tw_journal_rec *r)
{
    uint32_t c = tw_crc32c(0, &r->tag, 4);
    return tw_crc32c(c, (const uint8_t *)r + 8, REC - 8);
}

static int kind_ok(uint32_t kind) { return kind >= 1 && kind <= TW_JOURNAL_KIND_MASK; }

/* 1 if the 80 bytes at p are a record (magic, kind, CRC), seq not looked at. */
static int rec_intact(const uint8_t *p)
{
    tw_journal_rec r;
    memcpy(&r, p, REC);
    if ((r.tag & ~TW_JOURNAL_KIND_MASK) != TW_JOURNAL_REC_MAGIC || (r.tag & TW_JOURNAL_KIND_MASK) == 0)
        return 0;
    return tw_journal_rec_crc(&r) == r.crc;
}

/* Why the have bytes at p are not record seq (for messages). */
static const char *rec_fault(const uint8_t *p, size_t have, uint64_t seq, char *buf, size_t cap)
{
    if (have < REC) {
        snprintf(buf, cap, "cut short (%zu of %u bytes)", have, REC);
        return buf;
    }
    tw_journal_rec r;
    memcpy(&r, p, REC);
    if ((r.tag & ~TW_JOURNAL_KIND_MASK) != TW_JOURNAL_REC_MAGIC)
        snprintf(buf, cap, "bad record magic 0x%08x", r.tag);
    else if ((r.tag & TW_JOURNAL_KIND_MASK) == 0)
        snprintf(buf, cap, "record kind 0");
    else if (tw_journal_rec_crc(&r) != r.crc)
        snprintf(buf, cap, "CRC mismatch (stored 0x%08x, computed 0x%08x)", r.crc,
                 tw_journal_rec_crc(&r));
    else if (r.seq != seq)
        snprintf(buf, cap, "sequence %llu where %llu belongs", (unsigned long long)r.seq,
                 (unsigned long long)seq);
    else
        snprintf(buf, cap, "valid");
    return buf;
}

static void hdr_build(tw_journal_hdr *h, uint64_t first_seq)
{
    memset(h, 0, sizeof(*h));
    memcpy(h->magic, TW_JOURNAL_MAGIC, 8);
    h->version = TW_JOURNAL_VERSION;
    h->hdr_bytes = HDR;
    h->rec_bytes = REC;
    h->payload_bytes = TW_JOURNAL_PAYLOAD;
    h->first_seq = first_seq;
    h->crc = tw_crc32c(0, h, offsetof(tw_journal_hdr, crc));
}

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* ---- reader ---------------------------------------------------------------- */

/* pread until want bytes or EOF.  Returns the count or -errno. */
static ssize_t pread_full(int fd, void *buf, size_t want, uint64_t off)
{
    size_t got = 0;
    while (got < want) {
        ssize_t k = pread(fd, (uint8_t *)buf + got, want - got, (off_t)(off + got));
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

static int fill(tw_journal_reader *r, uint64_t off, uint32_t want)
{
    ssize_t k = pread_full(r->fd, r->buf, want, off);
    if (k < 0) {
        r->buf_len = 0;
        return (int)k;
    }
    r->buf_off = off;
    r->buf_len = (uint32_t)k;
    return 0;
}

static int reader_fail(tw_journal_reader *r, tw_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int reader_fail(tw_journal_reader *r, tw_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    r->fail_err.code = code;
    vsnprintf(r->fail_err.msg, sizeof(r->fail_err.msg), fmt, ap);
    va_end(ap);
    r->failed = code;
    if (err)
        *err = r->fail_err;
    return code;
}

/* After a bad record at off: the first offset q > off where an intact
 * record starts (UINT64_MAX if none) and the end of the last non-zero byte
 * from off on (off if all zero).  Reads to the end of the file through the
 * buffer (which it leaves empty).  Returns 0 or -errno. */
/* 1 + the index of the last non-zero byte of b[0, len), 0 if all are
 * zero (8 bytes at a time: the zero tail is most of what it sees). */
static uint32_t last_nonzero(const uint8_t *b, uint32_t len)
{
    uint32_t i = len;
    while (i >= 8) {
        uint64_t w;
        memcpy(&w, b + i - 8, 8);
        if (w)
            break;
        i -= 8;
    }
    for (; i > 0; i--)
        if (b[i - 1])
            return i;
    return 0;
}

static int scan_after(tw_journal_reader *r, uint64_t off, uint64_t *valid_q, uint64_t *nz_end)
{
    *valid_q = UINT64_MAX;
    *nz_end = off;
    uint64_t pos = off; /* buffer start */
    for (;;) {
        int rc = fill(r, pos, r->buf_cap);
        if (rc != 0)
            return rc;
        uint32_t len = r->buf_len;
        uint32_t last = last_nonzero(r->buf, len);
        if (last && pos + last > *nz_end)
            *nz_end = pos + last;
        /* Candidate starts in this chunk: every q with a whole record in
         * the buffer, q > off.  The magic's top byte found by memchr (a
         * mapped journal's zero tail, megabytes of it, goes at memory
         * speed), then its other two bytes, then the CRC. */
        for (uint32_t i = 0; i + REC <= len; i++) {
            const uint8_t *hit = memchr(r->buf + i + 3, (int)(TW_JOURNAL_REC_MAGIC >> 24),
                                        len - REC - i + 1);
            if (!hit)
                break;
            i = (uint32_t)(hit - r->buf) - 3;
            uint64_t q = pos + i;
            if (q <= off)
                continue;
            const uint8_t *p = r->buf + i;
            if (p[1] == ((TW_JOURNAL_REC_MAGIC >> 8) & 255) && p[2] == ((TW_JOURNAL_REC_MAGIC >> 16) & 255) &&
                rec_intact(p)) {
                *valid_q = q;
                r->buf_len = 0;
                return 0;
            }
        }
        if (len < r->buf_cap)
            break; /* EOF */
        pos += len - (REC - 1); /* overlap so no start is missed */
    }
    r->buf_len = 0;
    return 0;
}

/* The record at r->off does not check out (or is not all there).  Returns
 * 1 to read again (it may have been a write in progress), 0 to stop here
 * (the end, or following: nothing yet), or the error. */
static int anomaly(tw_journal_reader *r, int *retried, tw_error *err)
{
    uint64_t rel = r->off - r->buf_off;
    size_t have = r->buf_len > rel ? r->buf_len - rel : 0;
    if (have > REC)
        have = REC;
    const uint8_t *p = r->buf + rel;
    char why[96];
    /* An intact record with the wrong seq is never a torn write. */
    if (have == REC && rec_intact(p))
        return reader_fail(r, err, -TW_EFORMAT,
                           "journal %s: record at offset %llu: %s: refusing to read on", r->name,
                           (unsigned long long)r->off, rec_fault(p, have, r->seq, why, sizeof(why)));
    /* Following and not yet known written: a write in progress or not yet
     * begun looks the same as the end; the next read sees more. */
    if (r->follow && r->seq >= r->known_end)
        return 0;
    /* A writer in another process may have been mid-record when we read
     * it, with a later record already in place when we scan: read it once
     * more before judging (a writer finishes a record before it starts the
     * next one, so the second read sees it whole). */
    if (!*retried) {
        *retried = 1;
        r->rereads++;
        int rc = fill(r, r->off, r->buf_cap);
        if (rc != 0)
            return reader_fail(r, err, rc, "journal %s: read at offset %llu: %s", r->name,
                               (unsigned long long)r->off, strerror(-rc));
        return 1;
    }
    rec_fault(p, have, r->seq, why, sizeof(why));
    uint64_t q, nz;
    int rc = scan_after(r, r->off, &q, &nz);
    if (rc != 0)
        return reader_fail(r, err, rc, "journal %s: read after offset %llu: %s", r->name,
                           (unsigned long long)r->off, strerror(-rc));
    if (q != UINT64_MAX)
        return reader_fail(r, err, -TW_EFORMAT,
                           "journal %s: record at offset %llu (seq %llu): %s, but a valid record "
                           "follows at offset %llu: corruption, refusing to read on (dropping it "
                           "would lose records)",
                           r->name, (unsigned long long)r->off, (unsigned long long)r->seq, why,
                           (unsigned long long)q);
    if (r->follow) /* known written (r->seq < known_end), still not there */
        return reader_fail(r, err, -TW_EFORMAT,
                           "journal %s: record at offset %llu (seq %llu): %s, though the writer "
                           "published records up to seq %llu",
                           r->name, (unsigned long long)r->off, (unsigned long long)r->seq, why,
                           (unsigned long long)r->known_end - 1);
    struct stat st;
    if (fstat(r->fd, &st) != 0)
        return reader_fail(r, err, -errno, "journal %s: fstat: %s", r->name, strerror(errno));
    uint64_t size = (uint64_t)st.st_size;
    if (nz == r->off) {
        r->zero_bytes = size > r->off ? size - r->off : 0;
    } else if (nz - r->off <= REC) {
        r->torn_offset = r->off;
        r->torn_bytes = size - r->off;
    } else {
        return reader_fail(r, err, -TW_EFORMAT,
                           "journal %s: record at offset %llu (seq %llu): %s, and %llu non-zero "
                           "bytes from there are not records (more than one record: not a torn "
                           "write): refusing to read on",
                           r->name, (unsigned long long)r->off, (unsigned long long)r->seq, why,
                           (unsigned long long)(nz - r->off));
    }
    r->at_end = 1;
    return 0;
}

int tw_journal_read_burst(tw_journal_reader *r, tw_journal_rec *recs, uint32_t n, tw_error *err)
{
    if (r->failed) {
        if (err)
            *err = r->fail_err;
        return r->failed;
    }
    if (r->at_end)
        return 0;
    uint32_t got = 0;
    int retried = 0;
    while (got < n) {
        if (r->off < r->buf_off || r->off - r->buf_off + REC > r->buf_len) {
            /* A follower that found nothing last time reads one record
             * first, not a whole buffer of the zeros a mapped writer's
             * preallocated space holds. */
            uint32_t want = r->probe && got == 0 ? REC : r->buf_cap;
            int rc = fill(r, r->off, want);
            if (rc != 0)
                return reader_fail(r, err, rc, "journal %s: read at offset %llu: %s", r->name,
                                   (unsigned long long)r->off, strerror(-rc));
            if (r->buf_len == 0 && (!r->follow || r->seq >= r->known_end)) {
                if (!r->follow)
                    r->at_end = 1; /* a clean end */
                break;
            }
        }
        const uint8_t *p = r->buf + (r->off - r->buf_off);
        if (r->buf_len - (r->off - r->buf_off) >= REC && rec_intact(p)) {
            tw_journal_rec *o = &recs[got];
            memcpy(o, p, REC);
            if (o->seq == r->seq) {
                TW_ASSERT(tw_journal_rec_crc(o) == o->crc);
                got++;
                r->off += REC;
                r->seq++;
                r->records++;
                retried = 0;
                continue;
            }
        }
        int rc = anomaly(r, &retried, err);
        if (rc < 0)
            return rc;
        if (rc == 0) {
            /* What the buffer holds from here on is stale by the next
             * read (a follower's writer goes on). */
            r->buf_len = 0;
            break;
        }
    }
    if (r->follow) {
        r->probe = got == 0;
        if (got == 0)
            r->polls_empty++;
    }
    TW_ASSERT(r->off == HDR + (r->seq - r->first_seq) * REC);
    return (int)got;
}

void tw_journal_reader_expect(tw_journal_reader *r, uint64_t end_seq)
{
    if (end_seq > r->known_end)
        r->known_end = end_seq;
}

int tw_journal_reader_seek(tw_journal_reader *r, uint64_t seq)
{
    if (seq < r->first_seq || seq - r->first_seq > (UINT64_MAX - HDR) / REC)
        return -EINVAL;
    r->seq = seq;
    r->off = HDR + (seq - r->first_seq) * REC;
    r->at_end = 0;
    r->probe = 0;
    r->buf_len = 0;
    return 0;
}

/* Checks the header at the start of r's file.  Returns 0 or the error. */
static int check_header(tw_journal_reader *r, tw_error *err)
{
    tw_journal_hdr h;
    ssize_t k = pread_full(r->fd, &h, sizeof(h), 0);
    if (k < 0)
        return tw__err(err, (int)k, "journal %s: read: %s", r->name, strerror((int)-k));
    if (k < (ssize_t)sizeof(h))
        return tw__err(err, -ENODATA, "journal %s: %zd bytes, shorter than the %u-byte header",
                       r->name, k, HDR);
    if (memcmp(h.magic, TW_JOURNAL_MAGIC, 8) != 0)
        return tw__err(err, -TW_EFORMAT, "journal %s: header at offset 0: bad magic (not a journal)",
                       r->name);
    uint32_t c = tw_crc32c(0, &h, offsetof(tw_journal_hdr, crc));
    if (c != h.crc)
        return tw__err(err, -TW_EFORMAT,
                       "journal %s: header at offset 0: CRC mismatch (stored 0x%08x, computed "
                       "0x%08x)",
                       r->name, h.crc, c);
    if (h.version != TW_JOURNAL_VERSION)
        return tw__err(err, -EPROTONOSUPPORT,
                       "journal %s: header at offset 0: version %u, this build reads %u", r->name,
                       h.version, TW_JOURNAL_VERSION);
    if (h.hdr_bytes != HDR || h.rec_bytes != REC || h.payload_bytes != TW_JOURNAL_PAYLOAD ||
        h.first_seq == 0 || h.first_seq > (UINT64_MAX >> 1) ||
        !all_zero(h.reserved, sizeof(h.reserved)))
        return tw__err(err, -TW_EFORMAT,
                       "journal %s: header at offset 0: bad geometry (header %u, record %u, "
                       "payload %u bytes, first seq %llu)",
                       r->name, h.hdr_bytes, h.rec_bytes, h.payload_bytes,
                       (unsigned long long)h.first_seq);
    r->first_seq = h.first_seq;
    return 0;
}

/* Sets r up over fd (r owns it from here on, also on error). */
static int reader_init(tw_journal_reader *r, int fd, const char *name, int follow,
                       uint64_t from_seq, uint32_t buf_records, tw_error *err)
{
    memset(r, 0, sizeof(*r));
    r->fd = fd;
    r->follow = follow ? 1 : 0;
    snprintf(r->name, sizeof(r->name), "%s", name);
    if (buf_records == 0)
        buf_records = 512;
    if (buf_records < 2)
        buf_records = 2; /* the scan overlaps REC - 1 bytes between chunks */
    if (buf_records > (1u << 20))
        buf_records = 1u << 20;
    r->buf_cap = buf_records * REC;
    r->buf = malloc(r->buf_cap);
    if (!r->buf) {
        tw_journal_reader_close(r);
        return tw__err(err, -ENOMEM, "journal %s: no memory for the read buffer", name);
    }
    int rc = check_header(r, err);
    if (rc == 0 && tw_journal_reader_seek(r, from_seq ? from_seq : r->first_seq) != 0)
        rc = tw__err(err, -EINVAL, "journal %s: from seq %llu is below the first, %llu", name,
                     (unsigned long long)from_seq, (unsigned long long)r->first_seq);
    if (rc != 0)
        tw_journal_reader_close(r);
    return rc;
}

int tw_journal_reader_open(tw_journal_reader *r, const tw_journal_reader_cfg *cfg, tw_error *err)
{
    char name[160];
    int fd;
    if (cfg->path) {
        snprintf(name, sizeof(name), "%s", cfg->path);
        fd = open(cfg->path, O_RDONLY | O_CLOEXEC);
    } else {
        snprintf(name, sizeof(name), "fd %d", cfg->fd);
        fd = fcntl(cfg->fd, F_DUPFD_CLOEXEC, 0);
    }
    if (fd < 0) {
        memset(r, 0, sizeof(*r));
        r->fd = -1;
        return tw__err(err, -errno, "journal %s: open: %s", name, strerror(errno));
    }
    return reader_init(r, fd, name, cfg->follow, cfg->from_seq, cfg->buf_records, err);
}

void tw_journal_reader_close(tw_journal_reader *r)
{
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    free(r->buf);
    r->buf = NULL;
    r->buf_len = r->buf_cap = 0;
}

/* ---- writer ---------------------------------------------------------------- */

/* Creates path with a whole header, atomically: the header goes into a
 * temporary file that is then hard-linked into place (failing if someone
 * else created path meanwhile, whose file we then open).  Returns the fd or
 * -errno. */
static int create_atomic(const char *path, const tw_journal_cfg *cfg, tw_error *err)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
        return tw__err(err, -ENAMETOOLONG, "journal %s: path too long", path);
    (void)unlink(tmp); /* a leftover of a dead process that had our pid */
    int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return tw__err(err, -errno, "journal %s: create %s: %s", path, tmp, strerror(errno));
    tw_journal_hdr h;
    hdr_build(&h, cfg->first_seq ? cfg->first_seq : 1);
    int rc = 0;
    if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
        rc = tw__err(err, errno ? -errno : -EIO, "journal %s: write header: %s", path,
                     strerror(errno ? errno : EIO));
    else if (cfg->fsync != TW_JOURNAL_FSYNC_NONE && fdatasync(fd) != 0)
        rc = tw__err(err, -errno, "journal %s: fdatasync: %s", path, strerror(errno));
    if (rc == 0 && link(tmp, path) != 0) {
        int e = errno;
        close(fd);
        fd = -1;
        if (e == EEXIST) {
            fd = open(path, O_RDWR | O_CLOEXEC);
            if (fd < 0)
                rc = tw__err(err, -errno, "journal %s: open: %s", path, strerror(errno));
        } else {
            rc = tw__err(err, -e, "journal %s: link %s: %s", path, tmp, strerror(e));
        }
    }
    (void)unlink(tmp);
    if (rc != 0) {
        if (fd >= 0)
            close(fd);
        return rc;
    }
    if (cfg->fsync != TW_JOURNAL_FSYNC_NONE) {
        /* The new name itself must survive a power loss. */
        char dir[4200];
        snprintf(dir, sizeof(dir), "%s", path);
        int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
    }
    return fd;
}

/* mmap mode: room for at least need bytes beyond the records, the file
 * extended map_step bytes at a time under one mapping (util.h). */
static int map_grow(tw_journal *j, uint64_t need)
{
    return tw__fmap_grow(j->fd, &j->map, &j->map_res, &j->map_cap, j->size + need, j->map_step);
}

int tw_journal_grow_ahead(tw_journal *j, uint64_t limit)
{
    uint64_t want = j->size + TW__FMAP_AHEAD_STEPS * j->map_step;
    if (limit && want > limit)
        want = limit;
    if (j->failed || j->fd < 0 || want <= j->size)
        return 0;
    return tw__fmap_ahead(j->fd, &j->map, &j->map_res, &j->map_cap, j->size, want - j->size);
}

int tw_journal_open(tw_journal *j, const tw_journal_cfg *cfg, tw_error *err)
{
    memset(j, 0, sizeof(*j));
    j->fd = -1;
    if (cfg->fsync > TW_JOURNAL_FSYNC_EVERY_N)
        return tw__err(err, -EINVAL, "journal: unknown fsync policy %d", (int)cfg->fsync);
    j->fsync = cfg->fsync;
    j->fsync_n = cfg->fsync_n ? cfg->fsync_n : 1;
    uint64_t first = cfg->first_seq ? cfg->first_seq : 1;
    if (first > (UINT64_MAX >> 1))
        return tw__err(err, -EINVAL, "journal: first seq %llu too large", (unsigned long long)first);
    int fd;
    if (cfg->path) {
        snprintf(j->name, sizeof(j->name), "%s", cfg->path);
        fd = open(cfg->path, O_RDWR | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
            fd = create_atomic(cfg->path, cfg, err);
        else if (fd < 0)
            fd = tw__err(err, -errno, "journal %s: open: %s", j->name, strerror(errno));
        if (fd < 0)
            return fd;
    } else {
        snprintf(j->name, sizeof(j->name), "fd %d", cfg->fd);
        fd = cfg->fd;
    }
    j->fd = fd;
    int rc = 0;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
        tw__err(err, rc, "journal %s: %s", j->name,
                rc == -EBUSY ? "another writer has it open" : strerror(-rc));
        goto fail;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = tw__err(err, -errno, "journal %s: fstat: %s", j->name, strerror(errno));
        goto fail;
    }
    uint64_t size = (uint64_t)st.st_size;
    if (size < HDR) {
        /* Empty, or (by fd) torn while its header was being written: then
         * what is there must be a prefix of the header we would write. */
        tw_journal_hdr h;
        hdr_build(&h, first);
        uint8_t have[HDR];
        if (size > 0 && (pread_full(fd, have, size, 0) != (ssize_t)size || memcmp(have, &h, size) != 0)) {
            rc = tw__err(err, -TW_EFORMAT,
                         "journal %s: header at offset 0: %llu bytes that are not a journal header",
                         j->name, (unsigned long long)size);
            goto fail;
        }
        if (ftruncate(fd, 0) != 0 || pwrite(fd, &h, HDR, 0) != (ssize_t)HDR ||
            (j->fsync != TW_JOURNAL_FSYNC_NONE && fdatasync(fd) != 0)) {
            int e = errno ? errno : EIO;
            rc = tw__err(err, -e, "journal %s: write header: %s", j->name, strerror(e));
            goto fail;
        }
        j->torn_bytes = size;
        j->first_seq = first;
        j->size = HDR;
    } else {
        /* Every record read and checked, through the reader (the same rules
         * as a restarted strategy's). */
        tw_journal_reader rd;
        int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (dfd < 0) {
            rc = tw__err(err, -errno, "journal %s: dup: %s", j->name, strerror(errno));
            goto fail;
        }
        rc = reader_init(&rd, dfd, j->name, 0, 0, 4096, err);
        if (rc != 0)
            goto fail;
        tw_journal_rec batch[64];
        int k;
        while ((k = tw_journal_read_burst(&rd, batch, 64, err)) > 0)
            ;
        rc = k < 0 ? k : 0;
        j->first_seq = rd.first_seq;
        j->records = rd.records;
        j->torn_bytes = rd.torn_bytes;
        j->torn_offset = rd.torn_offset;
        j->zero_bytes = rd.zero_bytes;
        tw_journal_reader_close(&rd);
        if (rc != 0)
            goto fail;
        j->size = HDR + j->records * REC;
        TW_VERIFY(j->size <= size);
        if (j->size < size && ftruncate(fd, (off_t)j->size) != 0) {
            rc = tw__err(err, -errno, "journal %s: cannot cut the torn tail at offset %llu: %s",
                         j->name, (unsigned long long)j->size, strerror(errno));
            goto fail;
        }
    }
    j->next_seq = j->first_seq + j->records;
    j->synced = j->size;
    j->map_step = cfg->mmap_bytes;
    if (cfg->mmap_bytes > 0 && (rc = map_grow(j, cfg->mmap_bytes)) != 0) {
        tw__err(err, rc, "journal %s: cannot map %llu bytes: %s", j->name,
                (unsigned long long)cfg->mmap_bytes, strerror(-rc));
        goto fail;
    }
    return 0;
fail:
    tw_journal_close(j);
    return rc;
}

void tw_journal_close(tw_journal *j)
{
    if (j->map) {
        tw__fmap_close(&j->map, &j->map_res, &j->map_cap);
        /* A clean close leaves no free space behind. */
        if (j->fd >= 0 && ftruncate(j->fd, (off_t)j->size) != 0)
            j->write_errors++;
    }
    if (j->fd >= 0)
        close(j->fd); /* and the flock with it */
    j->fd = -1;
}

static void rec_build(tw_journal_rec *r, uint32_t kind, uint64_t seq, const void *payload)
{
    r->tag = TW_JOURNAL_REC_MAGIC | kind;
    r->seq = seq;
    memcpy(r->payload, payload, TW_JOURNAL_PAYLOAD);
    r->crc = tw_journal_rec_crc(r);
}

/* Undoes an append that started at size0 (pwrite mode). */
static int rollback(tw_journal *j, uint64_t size0, int code)
{
    j->write_errors++;
    if (ftruncate(j->fd, (off_t)size0) != 0) {
        /* The file may now hold records under seqs we would hand out
         * again: refuse every later append rather than write them twice. */
        j->failed = -EIO;
        return -EIO;
    }
    return code;
}

static int sync_range(tw_journal *j)
{
    int rc = 0;
    if (j->map) {
        uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
        uint64_t from = j->synced / page * page;
        if (msync(j->map + from, j->size - from, MS_SYNC) != 0)
            rc = -errno;
    } else if (fdatasync(j->fd) != 0) {
        rc = -errno;
    }
    j->syncs++;
    if (rc == 0) {
        j->synced = j->size;
        j->unsynced = 0;
    }
    return rc;
}

/* Syncs per policy after n records were appended from size0 / seq0;
 * rolls them back if the sync fails. */
static int after_append(tw_journal *j, uint32_t n, uint64_t size0, uint64_t seq0)
{
    int rc = 0;
    j->unsynced += n;
    if (j->fsync == TW_JOURNAL_FSYNC_EVERY ||
        (j->fsync == TW_JOURNAL_FSYNC_EVERY_N && j->unsynced >= j->fsync_n))
        rc = sync_range(j);
    if (rc != 0) {
        j->size = size0;
        j->next_seq = seq0;
        j->unsynced = 0;
        if (j->map) {
            /* Zero the records again (their first words first), so that a
             * reader stops where the journal now ends. */
            for (uint64_t off = size0; off < size0 + (uint64_t)n * REC; off += REC)
                __atomic_store_n((uint32_t *)(void *)(j->map + off), 0u, __ATOMIC_RELAXED);
            memset(j->map + size0, 0, (size_t)n * REC);
            j->write_errors++;
            return rc;
        }
        return rollback(j, size0, rc);
    }
    j->records += n;
    j->appends += n;
    return 0;
}

int tw_journal_append_bulk(tw_journal *j, uint32_t kind, const void *payloads, uint32_t n,
                           tw_journal_rec *recs)
{
    if (!kind_ok(kind))
        return -EINVAL;
    if (j->failed)
        return j->failed;
    if (n == 0)
        return 0;
    TW_VERIFY(j->fd >= 0);
    TW_ASSERT(j->size == HDR + (j->next_seq - j->first_seq) * REC);
    const uint8_t *src = payloads;
    uint64_t size0 = j->size, seq0 = j->next_seq;
    if (j->map) {
        if (j->size + (uint64_t)n * REC > j->map_cap) {
            int rc = map_grow(j, (uint64_t)n * REC);
            if (rc != 0) {
                j->write_errors++;
                return rc;
            }
        }
        uint32_t tag = TW_JOURNAL_REC_MAGIC | kind;
        uint32_t crc_tag = tw_crc32c(0, &tag, 4);
        for (uint32_t i = 0; i < n; i++) {
            /* Built in place (seq, payload, then the CRC over them). */
            char *dst = j->map + size0 + (uint64_t)i * REC;
            uint64_t seq = seq0 + i;
            memcpy(dst + 8, &seq, 8);
            memcpy(dst + 16, src + (size_t)i * TW_JOURNAL_PAYLOAD, TW_JOURNAL_PAYLOAD);
            uint32_t crc = tw_crc32c(crc_tag, dst + 8, REC - 8);
            memcpy(dst + 4, &crc, 4);
            /* The first word last: a reader (pread of the same page cache
             * pages) that sees the tag sees the record whole, and a kill
             * leaves a record with its tag or zeros where it goes.  x86
             * keeps stores in order; the release keeps the compiler from
             * moving the body's stores after it. */
            __atomic_store_n((uint32_t *)(void *)dst, tag, __ATOMIC_RELEASE);
            TW_ASSERT(tw_journal_rec_crc((const tw_journal_rec *)(const void *)dst) == crc);
            if (recs)
                memcpy(&recs[i], dst, REC);
        }
        j->size += (uint64_t)n * REC;
        j->next_seq += n;
        return after_append(j, n, size0, seq0);
    }
    tw_journal_rec chunk[BULK_CHUNK];
    for (uint32_t done = 0; done < n;) {
        uint32_t k = n - done < BULK_CHUNK ? n - done : BULK_CHUNK;
        for (uint32_t i = 0; i < k; i++)
            rec_build(&chunk[i], kind, seq0 + done + i, src + (size_t)(done + i) * TW_JOURNAL_PAYLOAD);
        size_t bytes = (size_t)k * REC;
        ssize_t w = pwrite(j->fd, chunk, bytes, (off_t)j->size);
        if (w != (ssize_t)bytes) {
            int e = w < 0 ? errno : ENOSPC; /* a short write: the disk or a limit */
            j->size = size0;
            j->next_seq = seq0;
            return rollback(j, size0, -e);
        }
        if (recs)
            memcpy(recs + done, chunk, bytes);
        j->size += bytes;
        j->next_seq += k;
        done += k;
    }
    return after_append(j, n, size0, seq0);
}

int tw_journal_append(tw_journal *j, uint32_t kind, const void *payload, tw_journal_rec *rec)
{
    return tw_journal_append_bulk(j, kind, payload, 1, rec);
}

int tw_journal_sync(tw_journal *j)
{
    if (j->failed)
        return j->failed;
    return sync_range(j);
}
