/* Snapshot files (tickwire/snapshot.h; docs/crash.md, "Snapshot files"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tickwire/util.h" /* tw_crc32c */
#include "tickwire/snapshot.h"
#include "snapshot/snapshot_internal.h"

#define HDR TW_SNAP_HDR_BYTES
#define SEC TW_SNAP_SEC_HDR_BYTES
#define TRL TW_SNAP_TRAILER_BYTES

static uint64_t pad8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

static int reserve(tw_snap_buf *b, size_t more)
{
    if (b->failed)
        return b->failed;
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    uint8_t *n = realloc(b->buf, cap);
    if (!n) {
        b->failed = -ENOMEM;
        return -ENOMEM;
    }
    b->buf = n;
    b->cap = cap;
    return 0;
}

void tw__snap_hdr_init(uint8_t *p, uint64_t journal_seq, const uint8_t *digest)
{
    tw_snap_hdr h;
    memset(&h, 0, sizeof(h));
    memcpy(h.magic, TW_SNAP_MAGIC, 8);
    h.version = TW_SNAP_VERSION;
    h.hdr_bytes = HDR;
    h.journal_seq = journal_seq;
    if (digest)
        memcpy(h.digest, digest, TW_SNAP_DIGEST_BYTES);
    memcpy(p, &h, HDR);
}

void tw_snap_begin(tw_snap_buf *b, uint64_t journal_seq, const uint8_t digest[TW_SNAP_DIGEST_BYTES])
{
    memset(b, 0, sizeof(*b));
    if (reserve(b, HDR) != 0)
        return;
    tw__snap_hdr_init(b->buf, journal_seq, digest);
    b->len = HDR;
}

int tw_snap_add(tw_snap_buf *b, uint32_t id, const void *data, uint64_t len)
{
    if (b->nsections >= TW_SNAP_MAX_SECTIONS)
        return -E2BIG;
    if (len > ((uint64_t)1 << 40))
        return -E2BIG;
    int rc = reserve(b, SEC + pad8(len));
    if (rc != 0)
        return rc;
    uint8_t *p = b->buf + b->len;
    uint32_t crc = tw_crc32c(0, data, len);
    memcpy(p, &id, 4);
    memcpy(p + 4, &crc, 4);
    memcpy(p + 8, &len, 8);
    if (len)
        memcpy(p + SEC, data, len);
    memset(p + SEC + len, 0, pad8(len) - len);
    b->len += SEC + pad8(len);
    b->nsections++;
    return 0;
}

void tw_snap_free(tw_snap_buf *b)
{
    free(b->buf);
    memset(b, 0, sizeof(*b));
}

/* Header fields and CRC, then the trailer. */
static int finish(tw_snap_buf *b)
{
    int rc = reserve(b, TRL);
    if (rc != 0)
        return rc;
    tw_snap_hdr h;
    memcpy(&h, b->buf, HDR);
    h.body_bytes = b->len - HDR;
    h.nsections = b->nsections;
    h.crc = tw_crc32c(0, &h, offsetof(tw_snap_hdr, crc));
    memcpy(b->buf, &h, HDR);
    uint8_t *t = b->buf + b->len;
    uint32_t crc = tw_crc32c(0, b->buf, b->len), z = 0;
    memcpy(t, TW_SNAP_END_MAGIC, 8);
    memcpy(t + 8, &crc, 4);
    memcpy(t + 12, &z, 4);
    return 0;
}

int tw__snap_name(const char *n, uint64_t *seq)
{
    if (strncmp(n, "snap-", 5) != 0)
        return 0;
    for (int i = 0; i < 20; i++)
        if (n[5 + i] < '0' || n[5 + i] > '9')
            return 0;
    if (strcmp(n + 25, ".tws") != 0)
        return 0;
    if (seq)
        *seq = strtoull(n + 5, NULL, 10);
    return 1;
}

static void dir_sync(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
}

static int cmp_desc(const void *a, const void *b)
{
    return -strcmp(*(char *const *)a, *(char *const *)b);
}

/* The snapshot file names of dir, newest first (malloc'd strings). */
static int list_snaps(const char *dir, char ***out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    uint32_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!tw__snap_name(e->d_name, NULL))
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            char **v = realloc(*out, cap * sizeof(char *));
            if (!v)
                break;
            *out = v;
        }
        (*out)[*n] = strdup(e->d_name);
        if ((*out)[*n])
            (*n)++;
    }
    closedir(d);
    if (*n)
        qsort(*out, *n, sizeof(char *), cmp_desc);
    return 0;
}

static void free_list(char **v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

int tw_snap_write(tw_snap_buf *b, const tw_snap_write_cfg *cfg, tw_error *err)
{
    const char *dir = cfg->dir;
    if (b->failed || !b->buf)
        return tw__err(err, -ENOMEM, "snapshot %s: no memory while building", dir);
    int rc = finish(b);
    if (rc != 0)
        return tw__err(err, rc, "snapshot %s: no memory while building", dir);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return tw__err(err, -errno, "snapshot %s: mkdir: %s", dir, strerror(errno));
    tw_snap_hdr h;
    memcpy(&h, b->buf, HDR);
    char path[4200], tmp[4300];
    snprintf(path, sizeof(path), "%s/snap-%020llu.tws", dir, (unsigned long long)h.journal_seq);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return tw__err(err, -errno, "snapshot %s: create: %s", tmp, strerror(errno));
    size_t total = b->len + TRL, done = 0, half = total / 2;
    while (done < total) {
        size_t want = total - done;
        if (cfg->hook && done < half && done + want > half)
            want = half - done;
        ssize_t k = write(fd, b->buf + done, want);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 ? errno : ENOSPC;
            close(fd);
            unlink(tmp);
            return tw__err(err, -e, "snapshot %s: write: %s", tmp, strerror(e));
        }
        done += (size_t)k;
        if (cfg->hook && done == half)
            cfg->hook(TW_SNAP_AT_PARTIAL, cfg->arg);
    }
    if (cfg->hook)
        cfg->hook(TW_SNAP_AT_BEFORE_FSYNC, cfg->arg);
    if (fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return tw__err(err, -e, "snapshot %s: fsync: %s", tmp, strerror(e));
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return tw__err(err, -e, "snapshot %s: rename: %s", path, strerror(e));
    }
    dir_sync(dir);
    if (cfg->hook)
        cfg->hook(TW_SNAP_AT_RENAMED, cfg->arg);
    /* The newest keep stay; older ones and leftovers of killed writers go. */
    uint32_t keep = cfg->keep ? cfg->keep : TW_SNAP_DEFAULT_KEEP;
    char **v;
    uint32_t n;
    if (list_snaps(dir, &v, &n) == 0) {
        for (uint32_t i = keep; i < n; i++) {
            char p[4200];
            snprintf(p, sizeof(p), "%s/%s", dir, v[i]);
            (void)unlink(p);
        }
        free_list(v, n);
    }
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l > 4 && strcmp(e->d_name + l - 4, ".tmp") == 0 && strncmp(e->d_name, "snap-", 5) == 0) {
            char p[4200];
            snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
            (void)unlink(p);
        }
    }
    if (d)
        closedir(d);
    dir_sync(dir);
    return 0;
}

int tw_snap_parse(const uint8_t *p, size_t len, tw_snap *s, tw_error *err)
{
    memset(s, 0, sizeof(*s));
    if (len < HDR + TRL)
        return tw__err(err, -TW_EFORMAT, "%zu bytes, shorter than a header and a trailer", len);
    tw_snap_hdr h;
    memcpy(&h, p, HDR);
    if (memcmp(h.magic, TW_SNAP_MAGIC, 8) != 0)
        return tw__err(err, -TW_EFORMAT, "offset 0: bad magic (not a snapshot)");
    uint32_t c = tw_crc32c(0, &h, offsetof(tw_snap_hdr, crc));
    if (c != h.crc)
        return tw__err(err, -TW_EFORMAT, "offset 0: header CRC mismatch (stored 0x%08x, computed 0x%08x)",
                       h.crc, c);
    if (h.version != TW_SNAP_VERSION)
        return tw__err(err, -EPROTONOSUPPORT, "offset 0: version %u, this build reads %u", h.version,
                       TW_SNAP_VERSION);
    if (h.hdr_bytes != HDR || h.reserved0 || h.reserved1 || h.nsections > TW_SNAP_MAX_SECTIONS ||
        h.body_bytes != len - HDR - TRL)
        return tw__err(err, -TW_EFORMAT,
                       "offset 0: bad geometry (header %u bytes, %u sections, body %llu bytes in a "
                       "file of %zu: torn?)",
                       h.hdr_bytes, h.nsections, (unsigned long long)h.body_bytes, len);
    const uint8_t *t = p + len - TRL;
    uint32_t tc, tz;
    memcpy(&tc, t + 8, 4);
    memcpy(&tz, t + 12, 4);
    if (memcmp(t, TW_SNAP_END_MAGIC, 8) != 0 || tz != 0)
        return tw__err(err, -TW_EFORMAT, "offset %zu: bad trailer (torn?)", len - TRL);
    c = tw_crc32c(0, p, len - TRL);
    if (c != tc)
        return tw__err(err, -TW_EFORMAT, "offset %zu: file CRC mismatch (stored 0x%08x, computed 0x%08x)",
                       len - TRL, tc, c);
    tw_snap_section *sec = calloc(h.nsections ? h.nsections : 1, sizeof(*sec));
    if (!sec)
        return tw__err(err, -ENOMEM, "no memory");
    uint64_t off = HDR, end = len - TRL;
    for (uint32_t i = 0; i < h.nsections; i++) {
        if (end - off < SEC) {
            free(sec);
            return tw__err(err, -TW_EFORMAT, "offset %llu: section %u header past the end",
                           (unsigned long long)off, i);
        }
        uint32_t id, crc;
        uint64_t l;
        memcpy(&id, p + off, 4);
        memcpy(&crc, p + off + 4, 4);
        memcpy(&l, p + off + 8, 8);
        if (l > end - off - SEC || pad8(l) > end - off - SEC) {
            free(sec);
            return tw__err(err, -TW_EFORMAT, "offset %llu: section %u (id %u) of %llu bytes past the end",
                           (unsigned long long)off, i, id, (unsigned long long)l);
        }
        const uint8_t *d = p + off + SEC;
        if (tw_crc32c(0, d, l) != crc) {
            free(sec);
            return tw__err(err, -TW_EFORMAT, "offset %llu: section %u (id %u) CRC mismatch",
                           (unsigned long long)off, i, id);
        }
        for (uint64_t k = l; k < pad8(l); k++)
            if (d[k]) {
                free(sec);
                return tw__err(err, -TW_EFORMAT, "offset %llu: section %u padding not zero",
                               (unsigned long long)(off + SEC + k), i);
            }
        sec[i] = (tw_snap_section){.id = id, .len = l, .data = d};
        off += SEC + pad8(l);
    }
    if (off != end) {
        free(sec);
        return tw__err(err, -TW_EFORMAT, "offset %llu: %llu bytes after the last section",
                       (unsigned long long)off, (unsigned long long)(end - off));
    }
    s->hdr = h;
    s->sec = sec;
    s->nsec = h.nsections;
    return 0;
}

const tw_snap_section *tw_snap_find(const tw_snap *s, uint32_t id)
{
    for (uint32_t i = 0; i < s->nsec; i++)
        if (s->sec[i].id == id)
            return &s->sec[i];
    return NULL;
}

void tw_snap_release(tw_snap *s)
{
    free(s->sec);
    free(s->file);
    memset(s, 0, sizeof(*s));
}

int tw_snap_check_file(const char *path, tw_snap *s, tw_error *err)
{
    memset(s, 0, sizeof(*s));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tw__err(err, -errno, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 0 || (uint64_t)st.st_size > ((uint64_t)1 << 40)) {
        close(fd);
        return tw__err(err, -EFBIG, "%s: cannot size", path);
    }
    size_t len = (size_t)st.st_size;
    uint8_t *buf = malloc(len ? len : 1);
    size_t got = 0;
    while (buf && got < len) {
        ssize_t k = pread(fd, buf + got, len - got, (off_t)got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    if (!buf || got != len) {
        free(buf);
        return tw__err(err, buf ? -EIO : -ENOMEM, "%s: cannot read", path);
    }
    tw_error pe = {0};
    int rc = tw_snap_parse(buf, len, s, &pe);
    if (rc != 0) {
        free(buf);
        return tw__err(err, rc, "%s: %s", path, pe.msg);
    }
    s->file = buf;
    s->file_len = len;
    const char *slash = strrchr(path, '/');
    snprintf(s->name, sizeof(s->name), "%s", slash ? slash + 1 : path);
    return 0;
}

/* The first line where a and b differ, into out. */
static void first_diff(const char *a, size_t al, const char *b, size_t bl, char *out, size_t cap)
{
    size_t i = 0, ls = 0;
    while (i < al && i < bl && a[i] == b[i]) {
        if (a[i] == '\n')
            ls = i + 1;
        i++;
    }
    size_t ae = ls, be = ls;
    while (ae < al && a[ae] != '\n')
        ae++;
    while (be < bl && b[be] != '\n')
        be++;
    snprintf(out, cap, "snapshot has \"%.*s\", configured \"%.*s\"", (int)(ae - ls > 60 ? 60 : ae - ls),
             a + ls, (int)(be - ls > 60 ? 60 : be - ls), b + ls);
}

int tw_snap_load(const char *dir, const tw_snap_expect *exp, tw_snap *s, tw_snap_report *rep,
                 tw_error *err)
{
    memset(s, 0, sizeof(*s));
    memset(rep, 0, sizeof(*rep));
    char **v;
    uint32_t n;
    int rc = list_snaps(dir, &v, &n);
    if (rc == -ENOENT)
        return tw__err(err, -ENOENT, "snapshot %s: no snapshot", dir);
    if (rc != 0)
        return tw__err(err, rc, "snapshot %s: %s", dir, strerror(-rc));
    for (uint32_t i = 0; i < n; i++) {
        char p[4200];
        snprintf(p, sizeof(p), "%s/%s", dir, v[i]);
        tw_error e = {0};
        rc = tw_snap_check_file(p, s, &e);
        if (rc == 0) {
            uint64_t named = 0;
            (void)tw__snap_name(v[i], &named);
            if (named != s->hdr.journal_seq) {
                rc = tw__err(&e, -TW_EFORMAT, "%s: holds journal seq %llu", p,
                             (unsigned long long)s->hdr.journal_seq);
                tw_snap_release(s);
            }
        }
        if (rc == -ENOMEM || rc == -EIO || rc == -EFBIG) {
            free_list(v, n);
            return tw__err(err, rc, "snapshot %s", e.msg);
        }
        if (rc != 0) {
            char bad[4300];
            snprintf(bad, sizeof(bad), "%s.bad", p);
            (void)rename(p, bad);
            uint32_t r = rep->set_aside++ + rep->refused;
            if (r < 4)
                snprintf(rep->reasons[r], sizeof(rep->reasons[0]), "set aside: %s", e.msg);
            continue;
        }
        /* The kernel set first: it names what differs; the digest only
         * says that something does. */
        if (exp && exp->kernels) {
            const tw_snap_section *k = tw_snap_find(s, TW_SNAP_SEC_KERNELS);
            const char *have = k ? (const char *)k->data : "";
            size_t hl = k ? k->len : 0, el = strlen(exp->kernels);
            if (hl != el || memcmp(have, exp->kernels, el) != 0) {
                char why[160], name[64];
                first_diff(have, hl, exp->kernels, el, why, sizeof(why));
                snprintf(name, sizeof(name), "%s", s->name);
                tw_snap_release(s);
                free_list(v, n);
                return tw__err(err, -ESTALE, "snapshot %s/%s: another kernel set: %s", dir, name, why);
            }
        }
        if (exp && exp->digest && memcmp(exp->digest, s->hdr.digest, TW_SNAP_DIGEST_BYTES) != 0) {
            char name[64];
            snprintf(name, sizeof(name), "%s", s->name);
            tw_snap_release(s);
            free_list(v, n);
            return tw__err(err, -ESTALE,
                           "snapshot %s/%s: taken under another configuration (config digest "
                           "differs)",
                           dir, name);
        }
        if (exp && exp->accept && (rc = exp->accept(exp->arg, s, &e)) != 0) {
            uint32_t r = rep->set_aside + rep->refused++;
            if (r < 4)
                snprintf(rep->reasons[r], sizeof(rep->reasons[0]), "%s not used: %s", v[i], e.msg);
            tw_snap_release(s);
            if (rc == -ENOMEM) {
                free_list(v, n);
                return tw__err(err, rc, "snapshot %s/%s: %s", dir, v[i], e.msg);
            }
            continue;
        }
        free_list(v, n);
        return 0;
    }
    free_list(v, n);
    return tw__err(err, -ENOENT, "snapshot %s: no usable snapshot (%u set aside, %u not used)", dir,
                   rep->set_aside, rep->refused);
}
