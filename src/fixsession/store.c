/* Crash-safe FIX message store: an append-only file of checksummed records
 * (tickwire/fix_session.h).  A live process only ever appends whole
 * records with one pwritev, so after kill -9 the file ends in at most one
 * torn record (and after power loss with TW_FIX_FSYNC_NONE, in some suffix
 * of lost records) - never a hole in the middle.  That is what lets open()
 * tell a torn tail (cut it) from corruption (refuse and report). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tickwire/fix_session.h"
#include "tickwire/util.h"

static int index_push(tw_fix_store *s, uint64_t seq, uint64_t off, uint32_t len)
{
    /* A resent-after-reset or rewound seq replaces everything at or above
     * it, so the index stays sorted by seq. */
    while (s->n > 0 && s->ents[s->n - 1].seq >= seq)
        s->n--;
    if (s->n == s->cap) {
        /* Geometric growth: amortised O(1), and callers that care size
         * index_cap up front so the hot path never gets here. */
        uint32_t ncap = s->cap ? s->cap * 2 : 1024;
        tw_fix_store_ent *e = realloc(s->ents, (size_t)ncap * sizeof(*e));
        if (!e)
            return -ENOMEM;
        s->ents = e;
        s->cap = ncap;
    }
    TW_ASSERT(s->n == 0 || s->ents[s->n - 1].seq < seq);
    s->ents[s->n].seq = seq;
    s->ents[s->n].off = off;
    s->ents[s->n].len = len;
    s->ents[s->n].pad_ = 0;
    s->n++;
    return 0;
}

/* Checks the record at off; returns its total size, or 0 if not valid. */
static size_t valid_record(const unsigned char *p, size_t size, size_t off)
{
    if (size - off < TW_FIX_REC_HDR)
        return 0;
    uint32_t w0 = tw_load_le32(p + off), len = tw_load_le32(p + off + 4), crc = tw_load_le32(p + off + 8);
    uint32_t type = w0 & 255;
    if ((w0 & ~255u) != TW_FIX_REC_MAGIC || type < TW_FIX_REC_SEQS || type > TW_FIX_REC_RESET)
        return 0;
    if (len > TW_FIX_REC_MAX || len > size - off - TW_FIX_REC_HDR)
        return 0;
    uint32_t c = tw_crc32c(0, p + off, 8);
    c = tw_crc32c(c, p + off + TW_FIX_REC_HDR, len);
    if (c != crc)
        return 0;
    return TW_FIX_REC_HDR + len;
}

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* Applies a valid record to the in-memory state.  Returns 0 or -TW_EFORMAT
 * for a record whose payload does not match its type. */
static int apply(tw_fix_store *s, const unsigned char *p, uint64_t off)
{
    uint32_t type = tw_load_le32(p) & 255, len = tw_load_le32(p + 4);
    const unsigned char *pl = p + TW_FIX_REC_HDR;
    switch (type) {
    case TW_FIX_REC_SEQS:
        if (len != 16)
            return -TW_EFORMAT;
        s->next_out = tw_load_le64(pl);
        s->next_in = tw_load_le64(pl + 8);
        while (s->n > 0 && s->ents[s->n - 1].seq >= s->next_out)
            s->n--;
        return 0;
    case TW_FIX_REC_MSG: {
        if (len < 20)
            return -TW_EFORMAT;
        uint64_t seq = tw_load_le64(pl);
        uint32_t tl = tw_load_le32(pl + 16);
        if (tl == 0 || tl > 8 || 20 + tl > len || seq == 0)
            return -TW_EFORMAT;
        int rc = index_push(s, seq, off + TW_FIX_REC_HDR, len);
        if (rc != 0)
            return rc;
        if (s->next_out <= seq)
            s->next_out = seq + 1;
        return 0;
    }
    case TW_FIX_REC_RESET:
        if (len != 0)
            return -TW_EFORMAT;
        s->n = 0;
        s->next_out = 1;
        s->next_in = 1;
        return 0;
    }
    return -TW_EFORMAT;
}

static int replay(tw_fix_store *s, const char *name, const unsigned char *p, size_t size,
                  tw_error *err)
{
    size_t off = 8;
    while (off < size) {
        size_t rl = valid_record(p, size, off);
        if (rl == 0 && all_zero(p + off, size - off))
            break; /* free space of an mmap-mode store: the clean end */
        if (rl == 0) {
            /* Torn tail or corruption?  A torn write only ever hits the last
             * record, so if any valid record starts after this point the
             * damage is in the middle and cutting would lose data. */
            for (size_t q = off + 1; q + TW_FIX_REC_HDR <= size; q++) {
                if (valid_record(p, size, q) != 0)
                    return tw__err(err, -TW_EFORMAT,
                                   "fix store %s: record at offset %zu is corrupt (bad header, "
                                   "length or CRC) but a valid record follows at offset %zu; "
                                   "refusing to open (cutting would lose records)",
                                   name, off, q);
            }
            s->torn_bytes = size - off;
            break;
        }
        int rc = apply(s, p + off, off);
        if (rc != 0)
            return tw__err(err, rc == -ENOMEM ? rc : -TW_EFORMAT,
                           "fix store %s: record at offset %zu has a valid CRC but a bad payload",
                           name, off);
        s->records++;
        off += rl;
    }
    s->size = off < size ? off : size;
    return 0;
}

/* mmap mode: room for at least need bytes beyond the valid records, the
 * file extended map_step bytes at a time under one mapping (util.h). */
static int map_grow(tw_fix_store *s, uint64_t need)
{
    return tw__fmap_grow(s->fd, &s->map, &s->map_res, &s->map_cap, s->size + need, s->map_step);
}

int tw_fix_store_open(tw_fix_store *s, const tw_fix_store_cfg *cfg, tw_error *err)
{
    memset(s, 0, sizeof(*s));
    s->fd = -1;
    s->next_out = 1;
    s->next_in = 1;
    s->fsync = cfg->fsync;
    s->fsync_n = cfg->fsync_n ? cfg->fsync_n : 1;
    s->map_step = cfg->mmap_bytes;
    const char *name = cfg->path ? cfg->path : "(fd)";
    int fd = cfg->path ? open(cfg->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644) : cfg->fd;
    if (fd < 0)
        return tw__err(err, -errno, "fix store %s: open: %s", name, strerror(errno));
    s->fd = fd;
    s->cap = cfg->index_cap ? cfg->index_cap : 65536;
    s->ents = malloc((size_t)s->cap * sizeof(*s->ents));
    if (!s->ents) {
        tw_fix_store_close(s);
        return tw__err(err, -ENOMEM, "fix store %s: no memory for the index", name);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        tw_fix_store_close(s);
        return tw__err(err, -e, "fix store %s: fstat: %s", name, strerror(e));
    }
    size_t size = (size_t)st.st_size;
    int rc = 0;
    if (size < 8) {
        /* New file, or one torn while its header was being written. */
        unsigned char hdr[8];
        if (size > 0 && (pread(fd, hdr, size, 0) != (ssize_t)size ||
                         memcmp(hdr, TW_FIX_STORE_MAGIC, size) != 0)) {
            tw_fix_store_close(s);
            return tw__err(err, -TW_EFORMAT, "fix store %s: not a store file (bad header)", name);
        }
        if (ftruncate(fd, 0) != 0 || pwrite(fd, TW_FIX_STORE_MAGIC, 8, 0) != 8) {
            int e = errno ? errno : EIO;
            tw_fix_store_close(s);
            return tw__err(err, -e, "fix store %s: cannot write header: %s", name, strerror(e));
        }
        s->torn_bytes = size;
        s->size = 8;
        if (cfg->mmap_bytes > 0 && (rc = map_grow(s, cfg->mmap_bytes)) != 0) {
            tw_fix_store_close(s);
            return tw__err(err, rc, "fix store %s: cannot map: %s", name, strerror(-rc));
        }
        return 0;
    }
    unsigned char *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        tw_fix_store_close(s);
        return tw__err(err, -e, "fix store %s: mmap: %s", name, strerror(e));
    }
    if (memcmp(p, TW_FIX_STORE_MAGIC, 8) != 0)
        rc = tw__err(err, -TW_EFORMAT, "fix store %s: not a store file (bad header)", name);
    else
        rc = replay(s, name, p, size, err);
    munmap(p, size);
    if (rc == 0 && s->size < size && ftruncate(fd, (off_t)s->size) != 0)
        rc = tw__err(err, -errno, "fix store %s: cannot cut torn record: %s", name,
                     strerror(errno));
    s->synced = s->size;
    if (rc == 0 && cfg->mmap_bytes > 0 && (rc = map_grow(s, cfg->mmap_bytes)) != 0)
        rc = tw__err(err, rc, "fix store %s: cannot map: %s", name, strerror(-rc));
    if (rc != 0)
        tw_fix_store_close(s);
    return rc;
}

void tw_fix_store_close(tw_fix_store *s)
{
    if (s->map) {
        tw__fmap_close(&s->map, &s->map_res, &s->map_cap);
        /* A clean close leaves no free space behind. */
        if (ftruncate(s->fd, (off_t)s->size) != 0)
            s->write_errors++;
    }
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    free(s->ents);
    s->ents = NULL;
    s->n = s->cap = 0;
}

/* mmap mode: the record is copied into the shared mapping (the page cache,
 * so it survives kill -9 as a write() would); msync per fsync policy. */
static int append_mapped(tw_fix_store *s, const struct iovec *iov, int niov, size_t total)
{
    if (s->size + total > s->map_cap) {
        int rc = map_grow(s, total);
        if (rc != 0) {
            s->write_errors++;
            return rc;
        }
    }
    char *p = s->map + s->size;
    for (int i = 0; i < niov; i++) {
        memcpy(p, iov[i].iov_base, iov[i].iov_len);
        p += iov[i].iov_len;
    }
    TW_ASSERT(p == s->map + s->size + total);
    s->size += total;
    s->records++;
    if (s->fsync == TW_FIX_FSYNC_EVERY ||
        (s->fsync == TW_FIX_FSYNC_EVERY_N && ++s->unsynced >= s->fsync_n)) {
        s->unsynced = 0;
        uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
        uint64_t from = s->synced / page * page;
        if (msync(s->map + from, s->size - from, MS_SYNC) != 0) {
            s->write_errors++;
            return -errno;
        }
        s->synced = s->size;
    }
    return 0;
}

static int append(tw_fix_store *s, uint32_t type, struct iovec *iov, int niov)
{
    /* iov[0] is the header, filled here. */
    unsigned char *h = iov[0].iov_base;
    size_t len = 0;
    for (int i = 1; i < niov; i++)
        len += iov[i].iov_len;
    TW_VERIFY(len <= TW_FIX_REC_MAX);
    tw_store_le32(h, TW_FIX_REC_MAGIC | type);
    tw_store_le32(h + 4, (uint32_t)len);
    uint32_t c = tw_crc32c(0, h, 8);
    for (int i = 1; i < niov; i++)
        c = tw_crc32c(c, iov[i].iov_base, iov[i].iov_len);
    tw_store_le32(h + 8, c);
    size_t total = TW_FIX_REC_HDR + len;
    if (s->map)
        return append_mapped(s, iov, niov, total);
    ssize_t n = pwritev(s->fd, iov, niov, (off_t)s->size);
    if (n != (ssize_t)total) {
        int e = n < 0 ? errno : ENOSPC;
        /* Roll back a partial append so later records do not land after a
         * hole that open() would report as corruption. */
        if (ftruncate(s->fd, (off_t)s->size) != 0) {
            /* Nothing more to do: open() will treat it as a torn tail. */
        }
        s->write_errors++;
        return -e;
    }
    s->size += total;
    s->records++;
    if (s->fsync == TW_FIX_FSYNC_EVERY ||
        (s->fsync == TW_FIX_FSYNC_EVERY_N && ++s->unsynced >= s->fsync_n)) {
        s->unsynced = 0;
        if (fdatasync(s->fd) != 0) {
            s->write_errors++;
            return -errno;
        }
    }
    return 0;
}

int tw_fix_store_set_seqs(tw_fix_store *s, uint64_t next_out, uint64_t next_in)
{
    unsigned char h[TW_FIX_REC_HDR], pl[16];
    tw_store_le64(pl, next_out);
    tw_store_le64(pl + 8, next_in);
    struct iovec iov[2] = { { h, sizeof(h) }, { pl, sizeof(pl) } };
    int rc = append(s, TW_FIX_REC_SEQS, iov, 2);
    if (rc == 0) {
        s->next_out = next_out;
        s->next_in = next_in;
        /* Messages at or above a rewound next_out can no longer be resent
         * under their numbers. */
        while (s->n > 0 && s->ents[s->n - 1].seq >= next_out)
            s->n--;
    }
    return rc;
}

int tw_fix_store_grow_ahead(tw_fix_store *s)
{
    if (s->fd < 0)
        return 0;
    return tw__fmap_ahead(s->fd, &s->map, &s->map_res, &s->map_cap, s->size,
                          TW__FMAP_AHEAD_STEPS * s->map_step);
}

int tw_fix_store_add_msg(tw_fix_store *s, uint64_t seq, int64_t orig_sending_ns,
                         const char *msg_type, size_t type_len, const char *body,
                         size_t body_len)
{
    if (seq == 0 || type_len == 0 || type_len > 8 || body_len > TW_FIX_REC_MAX - 64)
        return -EINVAL;
    unsigned char h[TW_FIX_REC_HDR], fx[20];
    tw_store_le64(fx, seq);
    tw_store_le64(fx + 8, (uint64_t)orig_sending_ns);
    tw_store_le32(fx + 16, (uint32_t)type_len);
    struct iovec iov[4] = { { h, sizeof(h) }, { fx, sizeof(fx) },
                            { (void *)msg_type, type_len }, { (void *)body, body_len } };
    uint64_t off = s->size + TW_FIX_REC_HDR;
    int rc = append(s, TW_FIX_REC_MSG, iov, 4);
    if (rc != 0)
        return rc;
    rc = index_push(s, seq, off, (uint32_t)(20 + type_len + body_len));
    if (s->next_out <= seq)
        s->next_out = seq + 1;
    return rc;
}

int tw_fix_store_reset(tw_fix_store *s)
{
    unsigned char h[TW_FIX_REC_HDR];
    struct iovec iov[1] = { { h, sizeof(h) } };
    int rc = append(s, TW_FIX_REC_RESET, iov, 1);
    if (rc == 0) {
        s->n = 0;
        s->next_out = 1;
        s->next_in = 1;
    }
    return rc;
}

uint32_t tw_fix_store_lower_bound(const tw_fix_store *s, uint64_t seq)
{
    uint32_t lo = 0, hi = s->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->ents[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int tw_fix_store_read(const tw_fix_store *s, uint32_t i, char *buf, size_t cap,
                      tw_fix_stored *out)
{
    TW_VERIFY(i < s->n);
    const tw_fix_store_ent *e = &s->ents[i];
    if (e->len > cap)
        return -ENOBUFS;
    if (s->map) {
        TW_VERIFY(e->off + e->len <= s->size);
        memcpy(buf, s->map + e->off, e->len);
    } else {
        ssize_t n = pread(s->fd, buf, e->len, (off_t)e->off);
        if (n < 0)
            return -errno;
        if ((size_t)n != e->len)
            return -TW_EFORMAT;
    }
    const unsigned char *p = (const unsigned char *)buf;
    uint32_t tl = tw_load_le32(p + 16);
    if (tw_load_le64(p) != e->seq || tl == 0 || tl > 8 || 20 + tl > e->len)
        return -TW_EFORMAT;
    out->seq = e->seq;
    out->orig_sending_ns = (int64_t)tw_load_le64(p + 8);
    out->type = buf + 20;
    out->type_len = tl;
    out->body = buf + 20 + tl;
    out->body_len = e->len - 20 - tl;
    return 0;
}
