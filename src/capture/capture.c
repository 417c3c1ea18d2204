/* The capture's writer side (capture.h): the ring drained into pcapng
 * files, rotation, the writer thread, the configuration and its option
 * form.  The producer side is inline in the header. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/capture_internal.h"
#include "tickwire/util.h"

#define WRITER_BUF_MIN (128u * 1024u) /* room for the largest EPB twice over */
#define WRITER_BUF_DEFAULT (256u * 1024u)
#define DRAIN_RUN 64u /* records per peek */

typedef struct iface_info {
    char name[TW_CAPTURE_NAME_MAX];
    uint64_t written;            /* EPBs of this interface (writer only) */
    uint64_t first_ns, last_ns;  /* its first and last packet times */
} iface_info;

struct tw__capture_writer {
    tw_capture_config cfg;
    const tw_tsc_clock *clock;
    void *ring_mem;     /* mmap'd, ring_bytes */
    size_t ring_bytes;
    /* The current file. */
    int fd;             /* -1 once a write or an open failed: output stops */
    uint64_t file_no;   /* number of the current file (0 = cfg.path) */
    uint64_t file_bytes; /* bytes of the current file, buffered ones included */
    uint64_t file_disk;  /* bytes of the current file written out */
    uint64_t file_pkts;
    uint32_t idb_done;  /* interfaces described in the current file */
    /* Whole blocks waiting for write(2). */
    uint8_t *buf;
    size_t buf_len, buf_cap;
    uint64_t buf_pkts;  /* EPBs in the buffer */
    /* Interfaces: entries [0, n_ifaces) are complete.  n_ifaces is
     * release-stored by tw_capture_add_iface after the entry, and
     * acquire-loaded by the writer before it reads one. */
    iface_info ifaces[TW_CAPTURE_MAX_IFACES];
    uint32_t n_ifaces;
    uint64_t last_ns;   /* latest packet time over every interface */
    /* Writer statistics: written by the writer, read as snapshots by
     * tw_capture_get_stats (relaxed on both sides). */
    uint64_t written, truncated, lost, bytes, files, write_errors;
    int err;            /* first write error (negative errno), 0 if none */
    tw_error errd;
    /* The writer thread. */
    pthread_t thread;
    int thread_on;
    uint32_t stop;      /* release-stored by close, acquire-loaded by the thread */
};

static void stat_add(uint64_t *x, uint64_t v)
{
    /* Relaxed: writer-only statistics read as snapshots. */
    __atomic_store_n(x, *x + v, __ATOMIC_RELAXED);
}

/* ---- configuration ----------------------------------------------------- */

int tw_capture_config_init(tw_capture_config *cfg, const char *path)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->snap_len = TW_CAPTURE_SNAP_DEFAULT;
    cfg->ring_slots = TW_CAPTURE_SLOTS_DEFAULT;
    cfg->writer = TW_CAPTURE_WRITER_THREAD;
    cfg->writer_cpu = -1;
    cfg->writer_idle_ns = 1000000;
    cfg->buf_bytes = WRITER_BUF_DEFAULT;
    if (!path)
        return 0;
    size_t n = strlen(path);
    if (n >= sizeof(cfg->path))
        return -ENAMETOOLONG;
    memcpy(cfg->path, path, n + 1);
    return 0;
}

/* A decimal number, with a k/m/g (binary) multiplier when allow_suffix. */
static int parse_size(const char *s, size_t n, uint64_t *v, int allow_suffix)
{
    uint64_t mul = 1, x;
    if (allow_suffix && n > 1) {
        char c = s[n - 1];
        if (c == 'k' || c == 'K')
            mul = 1ull << 10;
        else if (c == 'm' || c == 'M')
            mul = 1ull << 20;
        else if (c == 'g' || c == 'G')
            mul = 1ull << 30;
        if (mul != 1)
            n--;
    }
    if (tw_parse_u64(s, n, &x) != 0 || x > UINT64_MAX / mul)
        return -EINVAL;
    *v = x * mul;
    return 0;
}

int tw_capture_config_parse(tw_capture_config *cfg, const char *spec, tw_error *err)
{
    const char *comma = strchr(spec, ',');
    size_t plen = comma ? (size_t)(comma - spec) : strlen(spec);
    if (plen == 0)
        return tw__err(err, -EINVAL, "capture: '%.60s': no file name before the options", spec);
    if (plen >= TW_CAPTURE_PATH_MAX)
        return tw__err(err, -EINVAL, "capture: file name longer than %d bytes",
                       TW_CAPTURE_PATH_MAX - 1);
    tw_capture_config_init(cfg, NULL);
    memcpy(cfg->path, spec, plen);
    cfg->path[plen] = 0;
    const char *p = comma;
    while (p && *p == ',') {
        p++;
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        if (!eq)
            return tw__err(err, -EINVAL, "capture: option '%.*s' is not key=value", (int)n, p);
        size_t kl = (size_t)(eq - p), vl = n - kl - 1;
        const char *v = eq + 1;
        uint64_t x = 0;
#define KEY(s) (kl == sizeof(s) - 1 && !memcmp(p, s, kl))
#define BAD(why) tw__err(err, -EINVAL, "capture: %.*s=%.*s: %s", (int)kl, p, (int)vl, v, why)
        if (KEY("snap")) {
            if (parse_size(v, vl, &x, 0) || x < 1 || x > TW_CAPTURE_SNAP_MAX)
                return BAD("want a byte count in [1, 65520]");
            cfg->snap_len = (uint32_t)x;
        } else if (KEY("slots")) {
            if (parse_size(v, vl, &x, 0) || x < 2 || x > TW_RING_COUNT_MAX || (x & (x - 1)))
                return BAD("want a power of two in [2, 2^30]");
            cfg->ring_slots = (uint32_t)x;
        } else if (KEY("size")) {
            if (parse_size(v, vl, &x, 1) || x == 0)
                return BAD("want a file size in bytes, with k, M or G allowed (1M)");
            cfg->file_max_bytes = x;
        } else if (KEY("files")) {
            if (parse_size(v, vl, &x, 0) || x > 1000000)
                return BAD("want a file count (0 = keep all)");
            cfg->files_max = (uint32_t)x;
        } else if (KEY("dir")) {
            if (vl == 2 && !memcmp(v, "rx", 2))
                cfg->filter.dirs = TW_CAPTURE_RX;
            else if (vl == 2 && !memcmp(v, "tx", 2))
                cfg->filter.dirs = TW_CAPTURE_TX;
            else if (vl == 4 && !memcmp(v, "both", 4))
                cfg->filter.dirs = TW_CAPTURE_RX | TW_CAPTURE_TX;
            else
                return BAD("want rx, tx or both");
        } else if (KEY("ip")) {
            char ipb[20];
            struct in_addr a;
            if (vl == 0 || vl >= sizeof(ipb))
                return BAD("want a dotted-quad IPv4 address");
            memcpy(ipb, v, vl);
            ipb[vl] = 0;
            if (inet_pton(AF_INET, ipb, &a) != 1 || a.s_addr == 0)
                return BAD("want a dotted-quad IPv4 address (not 0.0.0.0)");
            cfg->filter.ip = ntohl(a.s_addr);
        } else if (KEY("port")) {
            if (parse_size(v, vl, &x, 0) || x < 1 || x > 65535)
                return BAD("want a TCP port in [1, 65535]");
            cfg->filter.tcp_port = (uint16_t)x;
        } else if (KEY("nonip")) {
            if (vl != 1 || (v[0] != '0' && v[0] != '1'))
                return BAD("want 0 or 1");
            cfg->filter.flags = (uint16_t)((cfg->filter.flags & ~TW_CAPTURE_F_NON_IP) |
                                           (v[0] == '1' ? TW_CAPTURE_F_NON_IP : 0));
        } else if (KEY("cpu")) {
            if (parse_size(v, vl, &x, 0) || x >= CPU_SETSIZE)
                return BAD("want a CPU number");
            cfg->writer_cpu = (int)x;
        } else if (KEY("idle")) {
            if (parse_size(v, vl, &x, 0) || x < 1 || x > 1000000)
                return BAD("want the writer's idle sleep in us, 1..1000000");
            cfg->writer_idle_ns = (int64_t)x * 1000;
        } else {
            return tw__err(err, -EINVAL,
                           "capture: unknown option '%.*s' (snap, slots, size, files, dir, ip, "
                           "port, nonip, cpu, idle)", (int)kl, p);
        }
#undef KEY
#undef BAD
        p = end;
    }
    return 0;
}

/* ---- files ------------------------------------------------------------- */

/* File k of a capture whose first file is path: path itself, then ".k"
 * before a .pcapng / .pcap suffix, else after the name. */
static const char *file_path(const char *path, uint64_t k, char *buf, size_t cap)
{
    if (k == 0) {
        snprintf(buf, cap, "%s", path);
        return buf;
    }
    size_t n = strlen(path);
    static const char *const sfx[] = {".pcapng", ".pcap"};
    for (unsigned i = 0; i < 2; i++) {
        size_t sl = strlen(sfx[i]);
        if (n > sl && !strcmp(path + n - sl, sfx[i])) {
            snprintf(buf, cap, "%.*s.%llu%s", (int)(n - sl), path, (unsigned long long)k, sfx[i]);
            return buf;
        }
    }
    snprintf(buf, cap, "%s.%llu", path, (unsigned long long)k);
    return buf;
}

const char *tw_capture_file_path(const tw_capture *c, uint64_t k, char *buf, size_t cap)
{
    return file_path(c->w->cfg.path, k, buf, cap);
}

/* Stops output after a failure: the first error is kept with its detail. */
static void fail(tw__capture_writer *w, int code, const char *what)
{
    stat_add(&w->write_errors, 1);
    if (!w->err) {
        char path[TW_CAPTURE_PATH_MAX + 24];
        tw__err(&w->errd, code, "capture: %s %s: %s", what,
                file_path(w->cfg.path, w->file_no, path, sizeof(path)), strerror(-code));
        /* Release pairs with the acquire-load in tw_capture_error: the
         * detail is written before the code that says it is there. */
        __atomic_store_n(&w->err, code, __ATOMIC_RELEASE);
    }
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    w->buf_len = 0;
}

/* Writes the buffer (whole blocks only) to the current file.  When a
 * write fails part way (no space, the file size limit), the file is cut
 * back to where this buffer began, so that it still ends with a whole
 * block, and the buffer's packets count as lost instead of written. */
static void flush(tw__capture_writer *w)
{
    size_t off = 0;
    while (w->fd >= 0 && off < w->buf_len) {
        ssize_t r = write(w->fd, w->buf + off, w->buf_len - off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int code = r < 0 ? -errno : -EIO;
            if (off && ftruncate(w->fd, (off_t)w->file_disk) == 0)
                stat_add(&w->bytes, 0 - (uint64_t)off);
            stat_add(&w->written, 0 - w->buf_pkts);
            stat_add(&w->lost, w->buf_pkts);
            w->buf_pkts = 0;
            fail(w, code, "cannot write");
            return;
        }
        off += (size_t)r;
        stat_add(&w->bytes, (uint64_t)r);
    }
    w->file_disk += w->buf_len;
    w->buf_len = 0;
    w->buf_pkts = 0;
}

/* Room for len bytes of whole blocks at the end of the buffer (flushing
 * it first when needed); the block is counted in the file's size.  NULL
 * when output has stopped. */
static uint8_t *room(tw__capture_writer *w, size_t len)
{
    TW_ASSERT(len <= w->buf_cap);
    if (w->buf_len + len > w->buf_cap)
        flush(w);
    if (w->fd < 0)
        return NULL;
    return w->buf + w->buf_len;
}

static void commit_bytes(tw__capture_writer *w, uint32_t len)
{
    w->buf_len += len;
    w->file_bytes += len;
}

static void put_idb(tw__capture_writer *w, uint32_t i)
{
    uint8_t *p = room(w, TW__PCAPNG_IDB_MAX);
    if (p)
        commit_bytes(w, tw__pcapng_idb(p, w->ifaces[i].name, w->cfg.snap_len));
}

static uint32_t ifaces_now(tw__capture_writer *w)
{
    /* Acquire pairs with the release-store in tw_capture_add_iface: the
     * entries below the count are complete. */
    return __atomic_load_n(&w->n_ifaces, __ATOMIC_ACQUIRE);
}

/* An unnamed file in path's directory (O_TMPFILE), or -1 where the file
 * system has none. */
static int open_unnamed(const char *path)
{
    char dir[TW_CAPTURE_PATH_MAX + 24];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == dir)
        dir[1] = 0;
    else
        *slash = 0;
    return open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
}

/* Creates file number file_no and starts it: Section Header, then an
 * Interface Description for every interface known.  The file gets its
 * name only once those are in it (written unnamed, then linked), so that
 * a writer killed right after a rotation leaves a file tshark reads (with
 * no packets yet), never an empty one; where the file system has no
 * O_TMPFILE it is created by name and the headers written at once. */
static void open_file(tw__capture_writer *w)
{
    char path[TW_CAPTURE_PATH_MAX + 24];
    file_path(w->cfg.path, w->file_no, path, sizeof(path));
    TW_ASSERT(w->buf_len == 0); /* the previous file was flushed and closed */
    int unnamed = 1;
    w->fd = open_unnamed(path);
    if (w->fd < 0) {
        unnamed = 0;
        w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    if (w->fd < 0) {
        fail(w, -errno, "cannot create");
        return;
    }
    w->file_bytes = 0;
    w->file_disk = 0;
    w->file_pkts = 0;
    uint8_t *p = room(w, TW__PCAPNG_SHB_MAX);
    if (p)
        commit_bytes(w, tw__pcapng_shb(p));
    uint32_t n = ifaces_now(w);
    for (w->idb_done = 0; w->idb_done < n; w->idb_done++)
        put_idb(w, w->idb_done);
    flush(w);
    if (w->fd < 0)
        return; /* the write failed: fail() said why */
    if (unnamed) {
        /* Linked through /proc (linkat with AT_EMPTY_PATH would need
         * CAP_DAC_READ_SEARCH); an older file of that name is replaced. */
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", w->fd);
        if (unlink(path) != 0 && errno != ENOENT) {
            fail(w, -errno, "cannot replace");
            return;
        }
        if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) != 0) {
            fail(w, -errno, "cannot name");
            return;
        }
    }
    stat_add(&w->files, 1);
    if (w->cfg.files_max && w->file_no >= w->cfg.files_max) {
        char old[TW_CAPTURE_PATH_MAX + 24];
        unlink(file_path(w->cfg.path, w->file_no - w->cfg.files_max, old, sizeof(old)));
    }
}

static void put_isbs(tw__capture_writer *w, const tw_capture *c)
{
    for (uint32_t i = 0; i < w->idb_done; i++) {
        const tw__capture_ctr *k = &c->ctr[i];
        /* Relaxed: snapshots of the producer's statistics (exact once it
         * has stopped, as it has at close). */
        uint64_t kept = __atomic_load_n(&k->kept, __ATOMIC_RELAXED);
        uint64_t drop = __atomic_load_n(&k->dropped, __ATOMIC_RELAXED);
        uint64_t filt = __atomic_load_n(&k->filtered, __ATOMIC_RELAXED);
        tw__pcapng_isb s = {
            .ts_ns = w->last_ns,
            .start_ns = w->ifaces[i].first_ns,
            .end_ns = w->ifaces[i].last_ns,
            .ifrecv = kept + drop + filt,
            .ifdrop = drop,
            .filteraccept = kept + drop,
            .usrdeliv = w->ifaces[i].written,
        };
        uint8_t *p = room(w, TW__PCAPNG_ISB_MAX);
        if (p)
            commit_bytes(w, tw__pcapng_isb_write(p, i, &s));
    }
}

/* Ends the current file: statistics, the last write, close. */
static void finish_file(tw__capture_writer *w, const tw_capture *c)
{
    if (w->fd < 0)
        return;
    put_isbs(w, c);
    flush(w);
    if (w->fd >= 0 && close(w->fd) != 0) {
        w->fd = -1;
        fail(w, -errno, "cannot close");
    }
    w->fd = -1;
}

/* One record from the ring into an Enhanced Packet Block (rotating first
 * when the block would take the file past its limit). */
static void put_record(tw_capture *c, const uint8_t *slot)
{
    tw__capture_writer *w = c->w;
    tw_capture_rec rec;
    memcpy(&rec, slot, sizeof(rec));
    /* Our own producer wrote it (the ring is never shared): a record out
     * of bounds is a bug here, not outside input. */
    TW_VERIFY(rec.cap_len <= c->snap_len && rec.cap_len <= rec.orig_len);
    TW_VERIFY(rec.dir == TW_CAPTURE_RX || rec.dir == TW_CAPTURE_TX);
    uint32_t n = ifaces_now(w);
    TW_VERIFY(rec.iface < n);
    if (w->fd < 0) {
        stat_add(&w->lost, 1);
        return;
    }
    int64_t ts;
    if (c->now_ns)
        ts = w->cfg.epoch_base_ns + (int64_t)rec.stamp;
    else
        ts = tw_tsc_to_ns(w->clock, rec.stamp) + w->clock->epoch_offset_ns;
    uint64_t ts_ns = ts < 0 ? 0 : (uint64_t)ts;
    uint32_t blen = TW__PCAPNG_EPB_BYTES(rec.cap_len);
    if (w->cfg.file_max_bytes && w->file_pkts) {
        uint32_t upto = (uint32_t)rec.iface + 1u; /* interfaces this block needs described */
        uint32_t known = upto > w->idb_done ? upto : w->idb_done;
        uint64_t need = blen + (uint64_t)(known - w->idb_done) * TW__PCAPNG_IDB_MAX;
        uint64_t tail = (uint64_t)known * TW__PCAPNG_ISB_MAX;
        if (w->file_bytes + need + tail > w->cfg.file_max_bytes) {
            finish_file(w, c);
            if (!w->err) {
                w->file_no++;
                open_file(w);
            }
            if (w->fd < 0) {
                stat_add(&w->lost, 1);
                return;
            }
        }
    }
    while (w->idb_done <= rec.iface)
        put_idb(w, w->idb_done++);
    uint8_t *p = room(w, blen);
    if (!p) {
        stat_add(&w->lost, 1);
        return;
    }
    commit_bytes(w, tw__pcapng_epb(p, rec.iface, ts_ns, slot + sizeof(rec), rec.cap_len,
                                   rec.orig_len, rec.dir));
    w->file_pkts++;
    iface_info *in = &w->ifaces[rec.iface];
    if (!in->written)
        in->first_ns = ts_ns;
    in->last_ns = ts_ns;
    stat_add(&in->written, 1);
    stat_add(&w->written, 1);
    if (rec.cap_len < rec.orig_len)
        stat_add(&w->truncated, 1);
    w->buf_pkts++;
    if (ts_ns > w->last_ns)
        w->last_ns = ts_ns;
}

unsigned tw_capture_drain(tw_capture *c, unsigned max)
{
    tw__capture_writer *w = c->w;
    unsigned total = 0;
    int empty = 0;
    while (total < max) {
        const void *s;
        uint32_t want = max - total < DRAIN_RUN ? max - total : DRAIN_RUN;
        uint32_t k = tw_ring_peek_sc(c->ring, want, &s);
        if (k == 0) {
            empty = 1;
            break;
        }
        for (uint32_t i = 0; i < k; i++)
            put_record(c, (const uint8_t *)s + (size_t)i * c->slot_size);
        tw_ring_release_sc(c->ring, k);
        total += k;
    }
    /* A quiet ring: what is buffered goes out now, so a live file lags by
     * one drain at most.  A busy one: whenever the buffer is half full. */
    if (w->buf_len && (empty || w->buf_len >= w->buf_cap / 2))
        flush(w);
    return total;
}

unsigned tw_capture_poll(void *c, struct tw_reactor_now *now)
{
    (void)now;
    return tw_capture_drain((tw_capture *)c, 256);
}

static void *writer_main(void *arg)
{
    tw_capture *c = arg;
    tw__capture_writer *w = c->w;
    /* Acquire pairs with the release-store of stop in tw_capture_close;
     * close drains what is left after joining, so nothing is missed. */
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
        if (tw_capture_drain(c, 4096) == 0)
            tw_clock_sleep_ns(w->cfg.writer_idle_ns);
    }
    return NULL;
}

/* ---- open / close ------------------------------------------------------ */

/* The ring's memory, every page touched now: the producer must never take
 * a page fault on the hot path (a fault per new page of a fresh ring cost
 * the first 4096 frames ~2 us each).  Transparent huge pages where the
 * kernel gives them, so that a ring of megabytes takes a few TLB entries
 * instead of one per slot.  The writer's buffer likewise.  NULL when the
 * memory is not there. */
static void *alloc_ring(size_t bytes)
{
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(m, bytes, MADV_HUGEPAGE); /* a hint: fine if refused */
#endif
    memset(m, 0, bytes);
    return m;
}

static void free_capture(tw_capture *c)
{
    if (!c)
        return;
    if (c->w) {
        if (c->w->ring_mem)
            munmap(c->w->ring_mem, c->w->ring_bytes);
        free(c->w->buf);
        free(c->w);
    }
    free(c);
}

int tw_capture_open(tw_capture **out, const tw_capture_config *cfg, tw_error *err)
{
    *out = NULL;
    if (!cfg->path[0] || !memchr(cfg->path, 0, sizeof(cfg->path)))
        return tw__err(err, -EINVAL, "capture: no file name (path)");
    if (cfg->snap_len < 1 || cfg->snap_len > TW_CAPTURE_SNAP_MAX)
        return tw__err(err, -EINVAL, "capture: snap_len %u outside [1, %u]", cfg->snap_len,
                       (unsigned)TW_CAPTURE_SNAP_MAX);
    if (cfg->ring_slots < 2 || (cfg->ring_slots & (cfg->ring_slots - 1)))
        return tw__err(err, -EINVAL, "capture: ring_slots %u is not a power of two >= 2",
                       cfg->ring_slots);
    if (cfg->filter.dirs & ~(TW_CAPTURE_RX | TW_CAPTURE_TX))
        return tw__err(err, -EINVAL, "capture: filter.dirs 0x%x has bits beyond RX | TX",
                       cfg->filter.dirs);
    if (cfg->writer != TW_CAPTURE_WRITER_THREAD && cfg->writer != TW_CAPTURE_WRITER_CALLER)
        return tw__err(err, -EINVAL, "capture: writer %d is neither THREAD nor CALLER",
                       (int)cfg->writer);
    if (cfg->writer_cpu < -1 || cfg->writer_cpu >= CPU_SETSIZE)
        return tw__err(err, -EINVAL, "capture: writer_cpu %d", cfg->writer_cpu);
    if (cfg->writer_idle_ns < 0 || cfg->writer_idle_ns > 1000000000)
        return tw__err(err, -EINVAL, "capture: writer_idle_ns %lld outside [0, 1 s]",
                       (long long)cfg->writer_idle_ns);
    /* Whole cache lines per slot: a slot starts a line, so a small frame
     * and its record take as few lines as they can (the ring's slots start
     * at a multiple of 64 too). */
    uint32_t slot = (TW_CAPTURE_REC_BYTES + cfg->snap_len + 63u) & ~63u;
    size_t rbytes = tw_ring_memsize(cfg->ring_slots, slot);
    if (!rbytes)
        return tw__err(err, -EINVAL, "capture: a ring of %u slots of %u bytes is too large",
                       cfg->ring_slots, slot);
    tw_capture *c = aligned_alloc(TW_CACHE_LINE, (sizeof(*c) + TW_CACHE_LINE - 1) &
                                                     ~(size_t)(TW_CACHE_LINE - 1));
    if (!c)
        return tw__err(err, -ENOMEM, "capture: out of memory");
    memset(c, 0, sizeof(*c));
    tw__capture_writer *w = calloc(1, sizeof(*w));
    c->w = w;
    if (!w) {
        free_capture(c);
        return tw__err(err, -ENOMEM, "capture: out of memory");
    }
    w->cfg = *cfg;
    w->fd = -1;
    if (!w->cfg.writer_idle_ns)
        w->cfg.writer_idle_ns = 1000000;
    w->buf_cap = cfg->buf_bytes < WRITER_BUF_MIN ? WRITER_BUF_MIN : cfg->buf_bytes;
    if (w->buf_cap < 2u * TW__PCAPNG_EPB_BYTES(cfg->snap_len))
        w->buf_cap = 2u * TW__PCAPNG_EPB_BYTES(cfg->snap_len);
    w->buf = malloc(w->buf_cap);
    if (w->buf)
        memset(w->buf, 0, w->buf_cap); /* touched now, not on the first drain */
    w->ring_bytes = rbytes;
    w->ring_mem = alloc_ring(rbytes);
    if (!w->buf || !w->ring_mem) {
        free_capture(c);
        return tw__err(err, -ENOMEM, "capture: cannot allocate the ring (%zu bytes) and buffer",
                       rbytes);
    }
    c->ring = w->ring_mem;
    TW_VERIFY(tw_ring_init(c->ring, cfg->ring_slots, slot) == 0);
    c->slot_size = slot;
    c->snap_len = cfg->snap_len;
    c->dirs = cfg->filter.dirs ? cfg->filter.dirs : TW_CAPTURE_RX | TW_CAPTURE_TX;
    c->ip_be = htonl(cfg->filter.ip);
    c->port_be = htons(cfg->filter.tcp_port);
    c->non_ip = (cfg->filter.flags & TW_CAPTURE_F_NON_IP) != 0;
    c->match_l3 = c->ip_be || c->port_be;
    c->now_ns = cfg->now_ns;
    w->clock = cfg->clock ? cfg->clock : tw_tsc_default();
    open_file(w);
    flush(w); /* a valid (empty) pcapng from the start */
    if (w->err) {
        int rc = w->err;
        if (err)
            *err = w->errd;
        free_capture(c);
        return rc;
    }
    if (cfg->writer == TW_CAPTURE_WRITER_THREAD) {
        pthread_attr_t at;
        pthread_attr_init(&at);
        if (cfg->writer_cpu >= 0) {
            cpu_set_t s;
            CPU_ZERO(&s);
            CPU_SET(cfg->writer_cpu, &s);
            pthread_attr_setaffinity_np(&at, sizeof(s), &s);
        }
        /* The writer takes no signals: they go to the application's
         * threads (a SIGINT handler's wake-up must reach the loop). */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int rc = pthread_create(&w->thread, &at, writer_main, c);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&at);
        if (rc != 0) {
            close(w->fd);
            free_capture(c);
            return tw__err(err, -rc, "capture: cannot start the writer thread%s: %s",
                           cfg->writer_cpu >= 0 ? " on that CPU" : "", strerror(rc));
        }
        pthread_setname_np(w->thread, "tw-capture");
        w->thread_on = 1;
    }
    *out = c;
    return 0;
}

int tw_capture_add_iface(tw_capture *c, const char *name, tw_error *err)
{
    tw__capture_writer *w = c->w;
    if (!name)
        return tw__err(err, -EINVAL, "capture: interface name NULL");
    if (strlen(name) >= TW_CAPTURE_NAME_MAX)
        return tw__err(err, -EINVAL, "capture: interface name '%.40s...' longer than %d bytes",
                       name, TW_CAPTURE_NAME_MAX - 1);
    /* Relaxed: only this (the control) thread writes the count. */
    uint32_t n = __atomic_load_n(&w->n_ifaces, __ATOMIC_RELAXED);
    if (n == TW_CAPTURE_MAX_IFACES)
        return tw__err(err, -ENOSPC, "capture: more than %d interfaces", TW_CAPTURE_MAX_IFACES);
    snprintf(w->ifaces[n].name, sizeof(w->ifaces[n].name), "%s", name);
    /* Release pairs with the writer's acquire-load in ifaces_now: it sees
     * the name before the count that makes it valid. */
    __atomic_store_n(&w->n_ifaces, n + 1, __ATOMIC_RELEASE);
    return (int)n;
}

int tw_capture_close(tw_capture *c, tw_capture_stats *st)
{
    if (!c)
        return 0;
    tw__capture_writer *w = c->w;
    if (w->thread_on) {
        /* Release pairs with the thread's acquire-load of stop. */
        __atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
        pthread_join(w->thread, NULL);
        w->thread_on = 0;
    }
    /* Bounded: the producer has stopped, so the ring only empties. */
    for (uint32_t i = 0; i <= c->ring->count && tw_capture_drain(c, 4096); i++)
        ;
    TW_VERIFY(tw_ring_count(c->ring) == 0);
    uint32_t n = ifaces_now(w);
    if (w->fd >= 0)
        while (w->idb_done < n)
            put_idb(w, w->idb_done++);
    finish_file(w, c);
    if (st)
        tw_capture_get_stats(c, -1, st);
    int rc = w->err;
    free_capture(c);
    return rc;
}

void tw_capture_get_stats(const tw_capture *c, int iface, tw_capture_stats *st)
{
    const tw__capture_writer *w = c->w;
    memset(st, 0, sizeof(*st));
    uint32_t n = __atomic_load_n(&w->n_ifaces, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < TW_CAPTURE_MAX_IFACES; i++) {
        if (iface >= 0 && (uint32_t)iface != i)
            continue;
        const tw__capture_ctr *k = &c->ctr[i];
        /* Relaxed: snapshots of single-writer statistics. */
        st->kept += __atomic_load_n(&k->kept, __ATOMIC_RELAXED);
        st->dropped += __atomic_load_n(&k->dropped, __ATOMIC_RELAXED);
        st->filtered += __atomic_load_n(&k->filtered, __ATOMIC_RELAXED);
        if (i < n && iface >= 0)
            st->written += __atomic_load_n(&w->ifaces[i].written, __ATOMIC_RELAXED);
    }
    if (iface < 0) {
        st->written = __atomic_load_n(&w->written, __ATOMIC_RELAXED);
        st->truncated = __atomic_load_n(&w->truncated, __ATOMIC_RELAXED);
        st->lost = __atomic_load_n(&w->lost, __ATOMIC_RELAXED);
        st->bytes = __atomic_load_n(&w->bytes, __ATOMIC_RELAXED);
        st->files = __atomic_load_n(&w->files, __ATOMIC_RELAXED);
        st->write_errors = __atomic_load_n(&w->write_errors, __ATOMIC_RELAXED);
    }
}

int tw_capture_error(const tw_capture *c, tw_error *err)
{
    /* Acquire pairs with the release-store in fail(): errd is complete
     * once the code is seen (it is written once). */
    int rc = __atomic_load_n(&c->w->err, __ATOMIC_ACQUIRE);
    if (rc && err)
        *err = c->w->errd;
    return rc;
}
