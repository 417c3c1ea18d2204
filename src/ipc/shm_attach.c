/* The gateway and the strategy as two processes (tickwire/shm_attach.h;
 * docs/crash.md, "Attach handshake" and "Recovery").
 *
 * The gateway side is two kinds of thread: the control (handshake, death
 * watch, reset bookkeeping) and the net cores (their rings).  They meet in
 * three words: reset_gen (control -> cores: drain and re-initialise your
 * rings for this generation), each core's done_gen (core -> control: done)
 * and live_gen (control -> cores: the strategy of this generation is
 * attached).  A core touches its rings only in its own thread, so a reset
 * never races a put or a take. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/futex.h>

#include "tickwire/util.h" /* tw_crc32c */
#include "tickwire/shm_attach.h"

#define HDRB TW_ATTACH_HDR_BYTES

static uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* CRC of the geometry region (its crc field as zero) and n ring descriptors. */
static uint32_t geom_crc(const tw_attach_hdr *h, const tw_attach_ring_desc *ring, uint32_t n)
{
    uint8_t g[TW_ATTACH_REGION];
    memcpy(g, h, sizeof(g));
    memset(g + offsetof(tw_attach_hdr, geom_crc), 0, 4);
    uint32_t c = tw_crc32c(0, g, sizeof(g));
    return tw_crc32c(c, ring, (size_t)n * sizeof(*ring));
}

int tw_attach_check_segment(void *seg, size_t seg_bytes, tw_ring **rings, uint32_t *n_cores,
                            tw_error *err)
{
    if (seg_bytes < HDRB)
        return tw__err(err, -EINVAL, "attach segment: %zu bytes, smaller than its %u-byte header",
                       seg_bytes, HDRB);
    if ((uintptr_t)seg % TW_CACHE_LINE)
        return tw__err(err, -EINVAL, "attach segment: mapped at a misaligned address");
    tw_attach_hdr *h = seg;
    /* Acquire pairs with the gateway's release-store of magic in
     * write_geometry: the geometry before it is complete. */
    uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
    if (magic != TW_ATTACH_MAGIC)
        return tw__err(err, -EPROTO, "attach segment: bad magic 0x%016llx (not a segment, or not "
                       "initialised)", (unsigned long long)magic);
    /* From here on every field is read once into a local and checked there:
     * the other process could change the segment under us. */
    tw_attach_hdr g;
    memcpy(&g, h, TW_ATTACH_REGION);
    if (g.version != TW_ATTACH_VERSION)
        return tw__err(err, -EPROTONOSUPPORT, "attach segment: layout version %u, this build has %u",
                       g.version, TW_ATTACH_VERSION);
    if (g.hdr_bytes != HDRB)
        return tw__err(err, -EBADMSG, "attach segment: hdr_bytes %u, expected %u", g.hdr_bytes, HDRB);
    if (g.seg_bytes != seg_bytes)
        return tw__err(err, -EBADMSG, "attach segment: seg_bytes %llu in the header, %zu mapped",
                       (unsigned long long)g.seg_bytes, seg_bytes);
    if (g.n_cores == 0 || g.n_cores > TW_ATTACH_MAX_CORES)
        return tw__err(err, -EBADMSG, "attach segment: n_cores %u (1..%u)", g.n_cores,
                       TW_ATTACH_MAX_CORES);
    if (g.n_rings != 2 * g.n_cores)
        return tw__err(err, -EBADMSG, "attach segment: n_rings %u for %u cores", g.n_rings,
                       g.n_cores);
    tw_attach_ring_desc d[2 * TW_ATTACH_MAX_CORES];
    memcpy(d, h->ring, g.n_rings * sizeof(d[0]));
    uint32_t c = geom_crc(&g, d, g.n_rings);
    if (c != g.geom_crc)
        return tw__err(err, -EBADMSG, "attach segment: geometry CRC 0x%08x, computed 0x%08x",
                       g.geom_crc, c);
    uint64_t end = HDRB;
    for (uint32_t i = 0; i < g.n_rings; i++) {
        uint32_t dir = i < g.n_cores ? TW_ATTACH_IN : TW_ATTACH_OUT;
        uint32_t core = i % g.n_cores;
        uint32_t slot = dir == TW_ATTACH_IN ? TW_ATTACH_IN_SLOT : TW_ATTACH_OUT_SLOT;
        const char *what = dir == TW_ATTACH_IN ? "inbound" : "outbound";
        if (d[i].dir != dir || d[i].core != core || d[i].slot_size != slot)
            return tw__err(err, -EBADMSG,
                           "attach segment: ring %u (core %u %s): dir %u core %u slot %u, expected "
                           "dir %u core %u slot %u",
                           i, core, what, d[i].dir, d[i].core, d[i].slot_size, dir, core, slot);
        size_t mem = tw_ring_memsize(d[i].count, d[i].slot_size);
        if (mem == 0 || mem != d[i].mem_bytes)
            return tw__err(err, -EBADMSG,
                           "attach segment: ring %u (core %u %s): %u slots of %u bytes need %zu "
                           "bytes, descriptor says %llu",
                           i, core, what, d[i].count, d[i].slot_size, mem,
                           (unsigned long long)d[i].mem_bytes);
        if (d[i].off % TW_ATTACH_REGION || d[i].off < end || d[i].off > seg_bytes ||
            d[i].mem_bytes > seg_bytes - d[i].off)
            return tw__err(err, -EBADMSG,
                           "attach segment: ring %u (core %u %s): offset %llu + %llu bytes is "
                           "misaligned, overlaps the one before (ending at %llu) or leaves the "
                           "%zu-byte segment",
                           i, core, what, (unsigned long long)d[i].off,
                           (unsigned long long)d[i].mem_bytes, (unsigned long long)end, seg_bytes);
        end = d[i].off + d[i].mem_bytes;
        tw_ring *r = (tw_ring *)((uint8_t *)seg + d[i].off);
        tw_error re = {0};
        int rc = tw_ring_attach(r, d[i].mem_bytes, &re);
        if (rc != 0)
            return tw__err(err, -EBADMSG, "attach segment: ring %u (core %u %s): %s", i, core,
                           what, re.msg);
        /* The strategy's own side (consumer of an inbound ring, producer
         * of an outbound one) must be as a reset leaves it: nothing
         * reserved or peeked, not stopped.  A side left mid-reserve (a dead
         * strategy's, the gateway not having reset the ring) is refused. */
        const tw_ring_side *mine = dir == TW_ATTACH_IN ? &r->cons : &r->prod;
        uint32_t pend = __atomic_load_n(&mine->pending, __ATOMIC_RELAXED);
        uint32_t bad = __atomic_load_n(&mine->bad, __ATOMIC_RELAXED);
        if (pend != 0 || bad != 0)
            return tw__err(err, -EBADMSG,
                           "attach segment: ring %u (core %u %s): the strategy's side has %u "
                           "slots pending and error state %u (not reset for this attach)",
                           i, core, what, pend, bad);
        /* attach checked the ring against its memory size; the count and
         * slot size must also be the descriptor's (their product alone
         * could match). */
        if (tw_ring_capacity(r) != d[i].count || tw_ring_slot_size(r) != d[i].slot_size)
            return tw__err(err, -EBADMSG,
                           "attach segment: ring %u (core %u %s): %u slots of %u bytes, the "
                           "descriptor says %u of %u",
                           i, core, what, tw_ring_capacity(r), tw_ring_slot_size(r), d[i].count,
                           d[i].slot_size);
        if (rings)
            rings[i] = r;
    }
    if (n_cores)
        *n_cores = g.n_cores;
    return 0;
}

/* ---- sockets ---------------------------------------------------------------- */

static int sock_addr(const char *path, struct sockaddr_un *a, socklen_t *len)
{
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof(a->sun_path))
        return -ENAMETOOLONG;
    memcpy(a->sun_path, path, n);
    if (path[0] == '@')
        a->sun_path[0] = '\0'; /* the abstract namespace */
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] == '@' ? 0 : 1));
    return 0;
}

static void msg_init(tw_attach_msg *m, uint32_t type)
{
    memset(m, 0, sizeof(*m));
    m->magic = TW_ATTACH_MAGIC;
    m->version = TW_ATTACH_VERSION;
    m->type = type;
}

/* Sends m with fds (n of them, may be 0).  Returns 0 or -errno. */
static int send_msg(int fd, const tw_attach_msg *m, const int *fds, int n)
{
    union {
        char buf[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } cm;
    struct iovec v = {(void *)m, sizeof(*m)};
    struct msghdr h = {.msg_iov = &v, .msg_iovlen = 1};
    if (n > 0) {
        memset(&cm, 0, sizeof(cm));
        h.msg_control = cm.buf;
        h.msg_controllen = CMSG_SPACE((size_t)n * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&h);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
        memcpy(CMSG_DATA(c), fds, (size_t)n * sizeof(int));
    }
    ssize_t k = sendmsg(fd, &h, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0)
        return -errno;
    return k == (ssize_t)sizeof(*m) ? 0 : -EPROTO;
}

/* Receives one message and up to 2 fds (the rest closed; *nfds how many
 * kept, -1 each unused).  Returns the message's size (0: hangup), or
 * -errno (-EAGAIN: nothing yet). */
static ssize_t recv_msg(int fd, tw_attach_msg *m, int fds[2], int *nfds, int *ctrunc)
{
    union {
        char buf[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } cm;
    uint8_t raw[sizeof(*m) + 16];
    struct iovec v = {raw, sizeof(raw)};
    struct msghdr h = {.msg_iov = &v, .msg_iovlen = 1, .msg_control = cm.buf,
                       .msg_controllen = sizeof(cm.buf)};
    fds[0] = fds[1] = -1;
    *nfds = 0;
    *ctrunc = 0;
    ssize_t k = recvmsg(fd, &h, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (k < 0)
        return -errno;
    *ctrunc = (h.msg_flags & MSG_CTRUNC) != 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int f;
            memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (*nfds < 2)
                fds[(*nfds)++] = f;
            else
                close(f);
        }
    }
    if (h.msg_flags & MSG_TRUNC)
        return (ssize_t)sizeof(raw); /* longer than any message: caller rejects the size */
    memset(m, 0, sizeof(*m));
    memcpy(m, raw, (size_t)k < sizeof(*m) ? (size_t)k : sizeof(*m));
    return k;
}

/* ---- processes --------------------------------------------------------------- */

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

static void kill_strategy(tw_attach_gw *g)
{
#ifdef SYS_pidfd_send_signal
    if (g->pidfd >= 0 && syscall(SYS_pidfd_send_signal, g->pidfd, SIGKILL, NULL, 0) == 0)
        return;
#endif
    if (g->st_pid > 0)
        kill(g->st_pid, SIGKILL);
}

/* 1 once the strategy can no longer write to the segment: its pidfd is
 * readable (every thread exited, the memory unmapped), or without one,
 * the process is gone or a zombie. */
static int strategy_gone(tw_attach_gw *g)
{
    if (g->pidfd >= 0) {
        struct pollfd p = {.fd = g->pidfd, .events = POLLIN};
        return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
    }
    if (g->st_pid <= 0)
        return 1;
    if (kill(g->st_pid, 0) != 0 && errno == ESRCH)
        return 1;
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)g->st_pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    ssize_t k = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (k <= 0)
        return 1;
    buf[k] = 0;
    const char *rp = strrchr(buf, ')'); /* the state follows "(comm)" */
    return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

/* ---- doorbells ----------------------------------------------------------------- */

int tw_attach_bell_wait(tw_attach_bell *b, uint32_t ticket, int64_t timeout_ns)
{
    if (timeout_ns <= 0)
        timeout_ns = 1;
    if (timeout_ns > 1000000000ll)
        timeout_ns = 1000000000ll;
    struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000ll),
                          .tv_nsec = (long)(timeout_ns % 1000000000ll)};
    /* A shared futex (the peer is another process): sleeps only while seq
     * == ticket, compared by the kernel under its own lock, so a ring
     * since arm() (which bumped seq) returns EAGAIN at once. */
    long rc = syscall(SYS_futex, &b->seq, FUTEX_WAIT, ticket, &ts, NULL, 0);
    int e = rc == 0 ? 0 : errno;
    /* Relaxed: pairs with the ringer's exchange; we are awake either way. */
    __atomic_store_n(&b->sleeping, 0u, __ATOMIC_RELAXED);
    if (rc == 0 || e == EAGAIN)
        return 0;
    return e == ETIMEDOUT ? -ETIMEDOUT : -EINTR;
}

int tw_attach_bell_wake(tw_attach_bell *b)
{
    /* Exchange: of several ringers, one wakes.  Relaxed: ordered by the
     * caller's seq_cst fence; pairs with arm's store of 1. */
    if (!__atomic_exchange_n(&b->sleeping, 0u, __ATOMIC_RELAXED))
        return 0;
    /* Release: pairs with the waiter's FUTEX_WAIT, which compares seq to
     * its ticket (the kernel orders the compare with the wake). */
    __atomic_add_fetch(&b->seq, 1u, __ATOMIC_RELEASE);
    syscall(SYS_futex, &b->seq, FUTEX_WAKE, 1, NULL, NULL, 0);
    return 1;
}

/* ---- gateway ---------------------------------------------------------------- */

/* Writes the header's geometry and resets the strategy region (no
 * strategy is attached), magic last. */
static void write_geometry(tw_attach_gw *g)
{
    tw_attach_hdr *h = g->hdr;
    /* Release pairs with check_segment's acquire-load of magic: a strategy
     * that sees the magic sees the rest.  Cleared first so that nobody
     * takes a half-written header for a whole one. */
    __atomic_store_n(&h->magic, 0, __ATOMIC_RELEASE);
    h->version = TW_ATTACH_VERSION;
    h->hdr_bytes = HDRB;
    h->seg_bytes = g->seg_bytes;
    h->n_cores = g->n_cores;
    h->n_rings = 2 * g->n_cores;
    h->pad0_ = 0;
    memset(h->pad1_, 0, sizeof(h->pad1_));
    memcpy(h->ring, g->desc, 2 * g->n_cores * sizeof(g->desc[0]));
    memset(&h->st_generation, 0, TW_ATTACH_REGION); /* the strategy region */
    /* The doorbells, from scratch (a dead strategy may have scribbled on
     * them).  Atomic stores: the net cores ring the strategy's bell from
     * their puts meanwhile (their loads in tw_attach_bell_ring pair with
     * nothing here: a ring that sees the old or the new words wakes at
     * most nobody), and a core's bounded wait just ends early or late. */
    tw_attach_bell *bells[1 + TW_ATTACH_MAX_CORES];
    bells[0] = &h->st_bell;
    for (uint32_t c = 0; c < TW_ATTACH_MAX_CORES; c++)
        bells[1 + c] = &h->gw_bell[c];
    for (uint32_t i = 0; i < 1 + TW_ATTACH_MAX_CORES; i++) {
        __atomic_store_n(&bells[i]->sleeping, 0u, __ATOMIC_RELAXED);
        __atomic_store_n(&bells[i]->seq, 0u, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&h->generation, g->generation, __ATOMIC_RELAXED);
    h->gw_pid = (uint32_t)getpid();
    h->st_pid = 0;
    tw_attach_hdr tmp;
    memcpy(&tmp, h, TW_ATTACH_REGION);
    tmp.magic = TW_ATTACH_MAGIC;
    h->geom_crc = geom_crc(&tmp, g->desc, 2 * g->n_cores);
    __atomic_store_n(&h->magic, TW_ATTACH_MAGIC, __ATOMIC_RELEASE);
}

/* Re-initialises one ring from the gateway's own geometry, and marks it
 * shared (a bad index from the strategy is then an error, not an abort). */
static void ring_reset(tw_attach_gw *g, uint32_t i)
{
    tw_ring *r = (tw_ring *)(g->seg + g->desc[i].off);
    TW_VERIFY(tw_ring_init(r, g->desc[i].count, g->desc[i].slot_size) == 0);
    TW_VERIFY(tw_ring_attach(r, g->desc[i].mem_bytes, NULL) == 0);
}

/* The journal's next seq, whichever kind it is. */
static uint64_t gw_journal_end(const tw_attach_gw *g)
{
    return g->jseg ? tw_jseg_next_seq(g->jseg) : tw_journal_next_seq(g->journal);
}

int tw_attach_gw_open(tw_attach_gw *g, const tw_attach_gw_cfg *cfg, tw_error *err)
{
    memset(g, 0, sizeof(*g));
    g->memfd = g->journal_ro_fd = g->listen_fd = g->conn_fd = g->pidfd = -1;
    pthread_mutex_init(&g->jlock, NULL);
    if (!cfg->sock_path || !cfg->journal == !cfg->jseg || cfg->n_cores == 0 ||
        cfg->n_cores > TW_ATTACH_MAX_CORES)
        return tw__err(err, -EINVAL, "attach: a socket path, one journal (a file or segments) "
                       "and 1..%u cores are needed", TW_ATTACH_MAX_CORES);
    if (strlen(cfg->sock_path) >= sizeof(g->sock_path))
        return tw__err(err, -ENAMETOOLONG, "attach: socket path too long: %s", cfg->sock_path);
    snprintf(g->sock_path, sizeof(g->sock_path), "%s", cfg->sock_path);
    g->n_cores = cfg->n_cores;
    g->journal = cfg->journal;
    g->jseg = cfg->jseg;
    g->beat_timeout_ns = cfg->beat_timeout_ns;
    g->hello_timeout_ns = cfg->hello_timeout_ns > 0 ? cfg->hello_timeout_ns : 1000000000;
    g->exit_grace_ns = cfg->exit_grace_ns > 0 ? cfg->exit_grace_ns : 1000000000;
    uint64_t off = HDRB;
    for (uint32_t i = 0; i < 2 * g->n_cores; i++) {
        int in = i < g->n_cores;
        tw_attach_ring_desc *d = &g->desc[i];
        d->count = in ? cfg->in_count : cfg->out_count;
        d->slot_size = in ? TW_ATTACH_IN_SLOT : TW_ATTACH_OUT_SLOT;
        d->dir = in ? TW_ATTACH_IN : TW_ATTACH_OUT;
        d->core = i % g->n_cores;
        d->mem_bytes = tw_ring_memsize(d->count, d->slot_size);
        if (d->mem_bytes == 0)
            return tw__err(err, -EINVAL, "attach: %s ring of %u slots (a power of two, 1..2^30)",
                           in ? "inbound" : "outbound", d->count);
        d->off = off;
        off = round_up(off + d->mem_bytes, TW_ATTACH_REGION);
    }
    g->seg_bytes = round_up(off, (uint64_t)sysconf(_SC_PAGESIZE));
    int rc = 0;
    g->memfd = memfd_create("tickwire-attach", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (g->memfd < 0) {
        rc = tw__err(err, -errno, "attach: memfd_create: %s", strerror(errno));
        goto fail;
    }
    /* Sealed: a strategy cannot shrink the segment under the gateway (a
     * store into a truncated mapping is SIGBUS) nor grow it. */
    if (ftruncate(g->memfd, (off_t)g->seg_bytes) != 0 ||
        fcntl(g->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        rc = tw__err(err, -errno, "attach: sizing and sealing the segment: %s", strerror(errno));
        goto fail;
    }
    g->seg = mmap(NULL, g->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, g->memfd, 0);
    if (g->seg == MAP_FAILED) {
        g->seg = NULL;
        rc = tw__err(err, -errno, "attach: mmap of %zu bytes: %s", g->seg_bytes, strerror(errno));
        goto fail;
    }
    g->hdr = (tw_attach_hdr *)g->seg;
    if (g->jseg) {
        /* The directory: the strategy lists it and follows the rotations. */
        g->journal_ro_fd = open(g->jseg->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } else {
        char jp[64];
        snprintf(jp, sizeof(jp), "/proc/self/fd/%d", g->journal->fd);
        g->journal_ro_fd = open(jp, O_RDONLY | O_CLOEXEC);
    }
    if (g->journal_ro_fd < 0) {
        rc = tw__err(err, -errno, "attach: reopening journal %s read-only: %s",
                     g->jseg ? g->jseg->dir : g->journal->name, strerror(errno));
        goto fail;
    }
    g->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_un a;
    socklen_t alen;
    if (g->listen_fd < 0 || sock_addr(g->sock_path, &a, &alen) != 0) {
        rc = tw__err(err, g->listen_fd < 0 ? -errno : -ENAMETOOLONG, "attach: socket %s: %s",
                     g->sock_path, strerror(g->listen_fd < 0 ? errno : ENAMETOOLONG));
        goto fail;
    }
    if (g->sock_path[0] != '@')
        (void)unlink(g->sock_path); /* a previous gateway's */
    if (bind(g->listen_fd, (struct sockaddr *)&a, alen) != 0 || listen(g->listen_fd, 8) != 0) {
        rc = tw__err(err, -errno, "attach: listen on %s: %s", g->sock_path, strerror(errno));
        goto fail;
    }
    g->generation = 1;
    for (uint32_t i = 0; i < 2 * g->n_cores; i++)
        ring_reset(g, i);
    for (uint32_t c = 0; c < g->n_cores; c++)
        g->core[c].done_gen = 1;
    g->reset_gen = 1;
    g->live_gen = 0;
    __atomic_store_n(&g->hdr->journal_end, gw_journal_end(g), __ATOMIC_RELEASE);
    /* Relaxed: no core runs yet. */
    __atomic_store_n(&g->journal_end, gw_journal_end(g), __ATOMIC_RELAXED);
    write_geometry(g);
    g->state = TW_ATTACH_GW_WAITING;
    return 0;
fail:
    tw_attach_gw_close(g);
    return rc;
}

static void drop_conn(tw_attach_gw *g)
{
    if (g->conn_fd >= 0)
        close(g->conn_fd);
    if (g->pidfd >= 0)
        close(g->pidfd);
    g->conn_fd = g->pidfd = -1;
    g->st_pid = 0;
}

void tw_attach_gw_close(tw_attach_gw *g)
{
    drop_conn(g);
    if (g->listen_fd >= 0) {
        close(g->listen_fd);
        if (g->sock_path[0] && g->sock_path[0] != '@')
            (void)unlink(g->sock_path);
    }
    if (g->journal_ro_fd >= 0)
        close(g->journal_ro_fd);
    if (g->seg)
        munmap(g->seg, g->seg_bytes);
    if (g->memfd >= 0)
        close(g->memfd);
    g->listen_fd = g->journal_ro_fd = g->memfd = -1;
    g->seg = NULL;
    g->hdr = NULL;
    pthread_mutex_destroy(&g->jlock);
}

/* The strategy is gone for good: start the reset of the next generation. */
static int detached(tw_attach_gw *g)
{
    drop_conn(g);
    g->detaches++;
    g->generation++;
    /* Release pairs with the cores' acquire-load of reset_gen in
     * core_sync: they reset for the new generation. */
    __atomic_store_n(&g->reset_gen, g->generation, __ATOMIC_RELEASE);
    g->state = TW_ATTACH_GW_RESETTING;
    return TW_ATTACH_EV_DETACHED;
}

/* Something is wrong with the attached (or attaching) strategy: kill it
 * and wait for it to be gone before touching the rings. */
static void condemn(tw_attach_gw *g)
{
    if (g->conn_fd >= 0) {
        close(g->conn_fd); /* it sees the hangup, whatever else happens */
        g->conn_fd = -1;
    }
    kill_strategy(g);
    g->killed = 1;
    g->state = TW_ATTACH_GW_KILLING;
}

/* The strategy hung up: most likely it is exiting.  Give it exit_grace_ns
 * to be gone by itself (a clean exit stays one), then kill it; either way
 * nothing is touched until it is gone. */
static void hangup_seen(tw_attach_gw *g, int64_t now_ns)
{
    g->hangups++;
    if (g->conn_fd >= 0) {
        close(g->conn_fd);
        g->conn_fd = -1;
    }
    g->killed = 0;
    g->hangup_ns = now_ns;
    g->state = TW_ATTACH_GW_KILLING;
}

/* A connection that is not (yet) our strategy is dropped: counted, why kept. */
static void reject(tw_attach_gw *g, int fd, const char *why)
{
    g->bad_hello++;
    tw__err(&g->last_err, -EPROTO, "attach: connection dropped: %s", why);
    close(fd);
}

static void refuse_extra(tw_attach_gw *g)
{
    for (int i = 0; i < 4; i++) {
        int fd = accept4(g->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        tw_attach_msg m;
        msg_init(&m, TW_ATTACH_MSG_REFUSE);
        (void)send_msg(fd, &m, NULL, 0);
        /* Read what it sent first: closing with unread data would reset
         * the connection, and the peer would see that, not the REFUSE. */
        int fds[2], nfds, trunc;
        while (recv_msg(fd, &m, fds, &nfds, &trunc) > 0)
            for (int k = 0; k < nfds; k++)
                close(fds[k]);
        close(fd);
        g->refused++;
    }
}

/* WAITING: accept a connection and, once its HELLO is in, welcome it. */
static int step_waiting(tw_attach_gw *g, int64_t now_ns, tw_error *err)
{
    if (g->conn_fd < 0) {
        int fd = accept4(g->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
                return TW_ATTACH_EV_NONE;
            return tw__err(err, -errno, "attach: accept on %s: %s", g->sock_path, strerror(errno));
        }
        struct ucred cr;
        socklen_t cl = sizeof(cr);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 || cr.pid <= 0) {
            reject(g, fd, "no peer credentials on the connection");
            return TW_ATTACH_EV_NONE;
        }
        g->conn_fd = fd;
        g->st_pid = cr.pid;
        g->conn_since_ns = now_ns;
    }
    tw_attach_msg m;
    int fds[2], nfds, trunc;
    ssize_t k = recv_msg(g->conn_fd, &m, fds, &nfds, &trunc);
    for (int i = 0; i < nfds; i++)
        close(fds[i]); /* a strategy sends none */
    if (k == -EAGAIN || k == -EWOULDBLOCK) {
        if (now_ns - g->conn_since_ns > g->hello_timeout_ns) {
            reject(g, g->conn_fd, "no HELLO within the timeout");
            g->conn_fd = -1;
        }
        return TW_ATTACH_EV_NONE;
    }
    int fd = g->conn_fd;
    g->conn_fd = -1;
    char why[128];
    if (k <= 0) {
        reject(g, fd, "the connection closed before HELLO");
        return TW_ATTACH_EV_NONE;
    }
    if (k != (ssize_t)sizeof(m) || m.magic != TW_ATTACH_MAGIC || m.type != TW_ATTACH_MSG_HELLO) {
        snprintf(why, sizeof(why), "not a HELLO (%zd bytes, magic 0x%llx, type %u)", k,
                 (unsigned long long)m.magic, m.type);
        reject(g, fd, why);
        return TW_ATTACH_EV_NONE;
    }
    if (m.version != TW_ATTACH_VERSION) {
        snprintf(why, sizeof(why), "HELLO of version %u, this gateway speaks %u", m.version,
                 TW_ATTACH_VERSION);
        reject(g, fd, why);
        return TW_ATTACH_EV_NONE;
    }
    if ((pid_t)m.pid != g->st_pid) {
        snprintf(why, sizeof(why), "HELLO from pid %u, the socket says %d", m.pid, (int)g->st_pid);
        reject(g, fd, why);
        return TW_ATTACH_EV_NONE;
    }
    g->pidfd = pidfd_open_(g->st_pid); /* -1: hangup and /proc instead */
    g->hdr->st_pid = (uint32_t)g->st_pid;
    tw_attach_msg w;
    msg_init(&w, TW_ATTACH_MSG_WELCOME);
    w.generation = g->generation;
    w.seg_bytes = g->seg_bytes;
    /* Acquire pairs with tw_attach_gw_put's release-store. */
    w.journal_end = __atomic_load_n(&g->hdr->journal_end, __ATOMIC_ACQUIRE);
    w.n_fds = 2;
    int pass[2] = {g->memfd, g->journal_ro_fd};
    int rc = send_msg(fd, &w, pass, 2);
    g->conn_fd = fd;
    if (rc != 0) {
        tw__err(&g->last_err, rc, "attach: sending WELCOME: %s", strerror(-rc));
        g->bad_hello++;
        condemn(g);
        return TW_ATTACH_EV_NONE;
    }
    g->conn_since_ns = now_ns;
    g->state = TW_ATTACH_GW_HANDSHAKE;
    return TW_ATTACH_EV_NONE;
}

/* HANDSHAKE / LIVE: is the strategy still there?  1 if it hung up. */
static int hung_up(const tw_attach_gw *g)
{
    struct pollfd p = {.fd = g->conn_fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

int tw_attach_gw_poll(tw_attach_gw *g, int64_t now_ns, tw_error *err)
{
    switch (g->state) {
    case TW_ATTACH_GW_WAITING:
        return step_waiting(g, now_ns, err);
    case TW_ATTACH_GW_HANDSHAKE:
    case TW_ATTACH_GW_LIVE: {
        if (g->state == TW_ATTACH_GW_LIVE)
            refuse_extra(g);
        if (strategy_gone(g)) {
            g->exits++;
            return detached(g);
        }
        tw_attach_msg m;
        int fds[2], nfds, trunc;
        ssize_t k = recv_msg(g->conn_fd, &m, fds, &nfds, &trunc);
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        /* A message queued before a hangup is taken first (a READY and
         * then a close is an attach and then a detach). */
        int nothing = k == -EAGAIN || k == -EWOULDBLOCK;
        if (k == 0 || (k < 0 && !nothing) || (nothing && hung_up(g))) {
            hangup_seen(g, now_ns);
            return TW_ATTACH_EV_NONE;
        }
        if (g->state == TW_ATTACH_GW_HANDSHAKE) {
            if (k < 0) {
                if (now_ns - g->conn_since_ns > g->hello_timeout_ns) {
                    g->bad_hello++;
                    tw__err(&g->last_err, -ETIMEDOUT, "attach: no READY within the timeout");
                    condemn(g);
                }
                return TW_ATTACH_EV_NONE;
            }
            /* Acquire pairs with the strategy's release-store of
             * st_generation, made before it sent READY. */
            uint64_t sg = __atomic_load_n(&g->hdr->st_generation, __ATOMIC_ACQUIRE);
            if (k != (ssize_t)sizeof(m) || m.magic != TW_ATTACH_MAGIC ||
                m.type != TW_ATTACH_MSG_READY || m.generation != g->generation || sg != g->generation) {
                g->bad_hello++;
                tw__err(&g->last_err, -EPROTO,
                        "attach: not a READY for generation %llu (%zd bytes, type %u, generation "
                        "%llu, segment says %llu)",
                        (unsigned long long)g->generation, k, m.type,
                        (unsigned long long)m.generation, (unsigned long long)sg);
                condemn(g);
                return TW_ATTACH_EV_NONE;
            }
            g->beat_seen = __atomic_load_n(&g->hdr->st_beat, __ATOMIC_RELAXED);
            g->beat_change_ns = now_ns;
            g->attaches++;
            g->state = TW_ATTACH_GW_LIVE;
            /* Release pairs with the cores' acquire-load of live_gen: the
             * strategy attached every ring of this generation. */
            __atomic_store_n(&g->live_gen, g->generation, __ATOMIC_RELEASE);
            return TW_ATTACH_EV_ATTACHED;
        }
        /* LIVE: nothing more is expected on the socket; a heartbeat that
         * stands still means a hung strategy. */
        if (g->beat_timeout_ns > 0) {
            uint64_t b = __atomic_load_n(&g->hdr->st_beat, __ATOMIC_RELAXED);
            if (b != g->beat_seen) {
                g->beat_seen = b;
                g->beat_change_ns = now_ns;
            } else if (now_ns - g->beat_change_ns > g->beat_timeout_ns) {
                g->beat_timeouts++;
                condemn(g);
            }
        }
        return TW_ATTACH_EV_NONE;
    }
    case TW_ATTACH_GW_KILLING:
        if (strategy_gone(g)) {
            g->exits += !g->killed;
            return detached(g);
        }
        if (!g->killed && now_ns - g->hangup_ns > g->exit_grace_ns) {
            kill_strategy(g);
            g->killed = 1;
        }
        return TW_ATTACH_EV_NONE;
    case TW_ATTACH_GW_RESETTING:
        for (uint32_t c = 0; c < g->n_cores; c++)
            /* Acquire pairs with the core's release-store of done_gen: its
             * rings are re-initialised. */
            if (__atomic_load_n(&g->core[c].done_gen, __ATOMIC_ACQUIRE) != g->generation)
                return TW_ATTACH_EV_NONE;
        write_geometry(g);
        g->state = TW_ATTACH_GW_WAITING;
        return TW_ATTACH_EV_WAITING;
    }
    TW_VERIFY(0 && "attach: bad control state");
    return TW_ATTACH_EV_NONE;
}

int tw_attach_gw_pollfds(const tw_attach_gw *g, struct pollfd *fds, int cap)
{
    int n = 0;
    if (n < cap && g->listen_fd >= 0)
        fds[n++] = (struct pollfd){.fd = g->listen_fd, .events = POLLIN};
    if (n < cap && g->conn_fd >= 0)
        fds[n++] = (struct pollfd){.fd = g->conn_fd, .events = POLLIN | POLLRDHUP};
    if (n < cap && g->pidfd >= 0)
        fds[n++] = (struct pollfd){.fd = g->pidfd, .events = POLLIN};
    return n;
}

int tw_attach_gw_core_sync(tw_attach_gw *g, uint32_t core)
{
    TW_VERIFY(core < g->n_cores);
    tw_attach_core *k = &g->core[core];
    /* Acquire pairs with the control's release-store in detached(). */
    uint64_t reset = __atomic_load_n(&g->reset_gen, __ATOMIC_ACQUIRE);
    if (k->done_gen != reset) { /* our own word: only we write it */
        TW_ASSERT(reset > k->done_gen);
        k->live = 0;
        tw_ring *out = tw_attach_gw_out_ring(g, core);
        /* What the dead strategy committed is sent like anything else;
         * what it only reserved lies beyond head and is never seen. */
        if (tw_ring_error(out, NULL) == 0) {
            /* Acquire pairs with the producer's release-store of head. */
            uint32_t head = __atomic_load_n(&out->prod.idx, __ATOMIC_ACQUIRE);
            if (head != out->cons.idx) {
                k->drained++;
                return TW_ATTACH_CORE_DRAIN;
            }
        } else {
            k->ring_errors++;
        }
        ring_reset(g, core);
        ring_reset(g, g->n_cores + core);
        k->resets++;
        /* Release pairs with the control's acquire-load of done_gen:
         * our rings are whole again before a strategy may map them. */
        __atomic_store_n(&k->done_gen, reset, __ATOMIC_RELEASE);
        return TW_ATTACH_CORE_DOWN;
    }
    /* Acquire pairs with the control's release-store after READY. */
    uint64_t live = __atomic_load_n(&g->live_gen, __ATOMIC_ACQUIRE);
    k->live = live == reset;
    return k->live ? TW_ATTACH_CORE_LIVE : TW_ATTACH_CORE_DOWN;
}

/* The append of tw_attach_gw_append, without the doorbell. */
static int append_quiet(tw_attach_gw *g, uint32_t kind, const void *payload,
                        tw_journal_rec *rec)
{
    pthread_mutex_lock(&g->jlock);
    int rc = g->jseg ? tw_jseg_append(g->jseg, kind, payload, rec)
                     : tw_journal_append(g->journal, kind, payload, rec);
    if (rc == 0)
        /* Release pairs with the strategy's acquire-load of journal_end in
         * tw_attach_st_next_burst: the record is in the journal (the page
         * cache) before the strategy can see the end past it. */
    {
        uint64_t end = gw_journal_end(g);
        __atomic_store_n(&g->hdr->journal_end, end, __ATOMIC_RELEASE);
        /* Relaxed: the waits below read it to decide whether to sleep;
         * the doorbell's fences order it (see tw_attach_gw_wait). */
        __atomic_store_n(&g->journal_end, end, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&g->jlock);
    return rc;
}

int tw_attach_gw_append(tw_attach_gw *g, uint32_t kind, const void *payload,
                        tw_journal_rec *rec)
{
    int rc = append_quiet(g, kind, payload, rec);
    if (rc == 0)
        /* After the release-store of journal_end: the bell's fence orders
         * it before the load of the strategy's `sleeping` (pairs with
         * tw_attach_st_wait's arm and its look at journal_end). */
        (void)tw_attach_bell_ring(&g->hdr->st_bell);
    return rc;
}

int tw_attach_gw_wait(tw_attach_gw *g, uint32_t core, int64_t timeout_ns)
{
    TW_VERIFY(core < g->n_cores);
    tw_attach_bell *b = &g->hdr->gw_bell[core];
    uint32_t t = tw_attach_bell_arm(b);
    /* tw_ring_count's relaxed loads are ordered after arm's fence: pairs
     * with the strategy's commit (release-store of the ring's head) and
     * the fence of its tw_attach_st_ring_gw. */
    if (tw_ring_count(tw_attach_gw_out_ring(g, core))) {
        tw_attach_bell_disarm(b);
        return 0;
    }
    /* Acquire pairs with tw_attach_st_done's release-store (itself before
     * the strategy's fence and its look at our `sleeping`); our journal
     * end is what we have put so far (relaxed: our own cores' stores). */
    uint64_t done = __atomic_load_n(&g->hdr->st_done_seq, __ATOMIC_ACQUIRE);
    if (done >= __atomic_load_n(&g->journal_end, __ATOMIC_RELAXED)) {
        tw_attach_bell_disarm(b);
        return 1;
    }
    return tw_attach_bell_wait(b, t, timeout_ns);
}

int tw_attach_gw_put(tw_attach_gw *g, uint32_t core, uint32_t kind, const void *payload,
                     tw_journal_rec *rec)
{
    TW_VERIFY(core < g->n_cores);
    tw_journal_rec r;
    int rc = append_quiet(g, kind, payload, &r);
    if (rc != 0)
        return rc;
    if (rec)
        *rec = r;
    tw_attach_core *k = &g->core[core];
    if (k->live && tw_ring_enqueue_burst_sp((tw_ring *)(g->seg + g->desc[core].off), &r, 1) == 1)
        k->in_put++;
    else
        k->in_dropped++;
    /* After the journal's end and the ring's head are published (both
     * release-stores): pairs with tw_attach_st_wait, as in append. */
    (void)tw_attach_bell_ring(&g->hdr->st_bell);
    return 0;
}

/* ---- strategy --------------------------------------------------------------- */

void tw_attach_st_done(tw_attach_st *s)
{
    /* Release: pairs with tw_attach_gw_wait's acquire-load; the intents
     * committed before (the rings' release-stores) come first. */
    __atomic_store_n(&s->hdr->st_done_seq, s->next_seq, __ATOMIC_RELEASE);
    for (uint32_t c = 0; c < s->n_cores; c++)
        (void)tw_attach_bell_ring(&s->hdr->gw_bell[c]); /* fence inside: see tw_attach_bell_ring */
}

int tw_attach_st_wait(tw_attach_st *s, int64_t timeout_ns)
{
    tw_attach_bell *b = &s->hdr->st_bell;
    uint32_t t = tw_attach_bell_arm(b);
    /* Acquire pairs with the gateway's release-store of journal_end after
     * each append (and is ordered after arm's fence, which pairs with the
     * fence of the gateway's ring after that store): every record below
     * the end is readable, from a ring or the journal. */
    if (__atomic_load_n(&s->hdr->journal_end, __ATOMIC_ACQUIRE) > s->next_seq) {
        tw_attach_bell_disarm(b);
        return 0;
    }
    return tw_attach_bell_wait(b, t, timeout_ns);
}

int tw_attach_st_connect(tw_attach_st *s, const char *sock_path, int timeout_ms, tw_error *err)
{
    memset(s, 0, sizeof(*s));
    s->sock = s->memfd = s->jfd = -1;
    s->jr.cur.fd = -1;
    s->journal_after = 64;
    struct sockaddr_un a;
    socklen_t alen;
    if (sock_addr(sock_path, &a, &alen) != 0)
        return tw__err(err, -ENAMETOOLONG, "attach: socket path too long: %s", sock_path);
    int rc = 0;
    int fds[2] = {-1, -1}, nfds = 0;
    s->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s->sock < 0 || connect(s->sock, (struct sockaddr *)&a, alen) != 0) {
        rc = tw__err(err, -errno, "attach: connect to %s: %s", sock_path, strerror(errno));
        goto fail;
    }
    tw_attach_msg m;
    msg_init(&m, TW_ATTACH_MSG_HELLO);
    m.pid = (uint32_t)getpid();
    int hello_rc = send_msg(s->sock, &m, NULL, 0);
    struct pollfd p = {.fd = s->sock, .events = POLLIN};
    int pr;
    while ((pr = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
        ;
    if (pr == 0) {
        rc = tw__err(err, -ETIMEDOUT, "attach: no WELCOME from %s within %d ms", sock_path, timeout_ms);
        goto fail;
    }
    int trunc;
    ssize_t k = recv_msg(s->sock, &m, fds, &nfds, &trunc);
    if (k == -ECONNRESET) /* the error is reported first; a REFUSE may be queued behind it */
        k = recv_msg(s->sock, &m, fds, &nfds, &trunc);
    if (hello_rc != 0 && !(k == (ssize_t)sizeof(m) && m.type == TW_ATTACH_MSG_REFUSE)) {
        /* A gateway that refused us may have closed before our HELLO went
         * out; its REFUSE is then still in our queue. */
        rc = tw__err(err, hello_rc, "attach: sending HELLO to %s: %s", sock_path,
                     strerror(-hello_rc));
        goto fail;
    }
    if (k < 0 || k == 0) {
        rc = tw__err(err, k < 0 ? (int)k : -ECONNRESET, "attach: %s: %s", sock_path,
                     k < 0 ? strerror((int)-k) : "the gateway closed the connection");
        goto fail;
    }
    if (k != (ssize_t)sizeof(m) || m.magic != TW_ATTACH_MAGIC || m.version != TW_ATTACH_VERSION) {
        rc = tw__err(err, -EPROTO, "attach: %s: not a message of ours (%zd bytes, magic 0x%llx, "
                     "version %u)", sock_path, k, (unsigned long long)m.magic, m.version);
        goto fail;
    }
    if (m.type == TW_ATTACH_MSG_REFUSE) {
        rc = tw__err(err, -ECONNREFUSED, "attach: %s: another strategy is attached", sock_path);
        goto fail;
    }
    if (m.type != TW_ATTACH_MSG_WELCOME || m.n_fds != 2 || nfds != 2 || trunc) {
        rc = tw__err(err, -EPROTO, "attach: %s: expected WELCOME with 2 fds, got type %u with %d "
                     "(says %u)%s", sock_path, m.type, nfds, m.n_fds, trunc ? ", truncated" : "");
        goto fail;
    }
    struct stat st;
    int seals = fcntl(fds[0], F_GET_SEALS);
    if (fstat(fds[0], &st) != 0 || (uint64_t)st.st_size != m.seg_bytes) {
        rc = tw__err(err, -EBADMSG, "attach: %s: the segment is %lld bytes, WELCOME says %llu",
                     sock_path, (long long)st.st_size, (unsigned long long)m.seg_bytes);
        goto fail;
    }
    if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
        rc = tw__err(err, -EPROTO, "attach: %s: the segment is not sealed against shrinking",
                     sock_path);
        goto fail;
    }
    s->memfd = fds[0];
    fds[0] = -1;
    s->seg_bytes = (size_t)st.st_size;
    s->seg = mmap(NULL, s->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->memfd, 0);
    if (s->seg == MAP_FAILED) {
        s->seg = NULL;
        rc = tw__err(err, -errno, "attach: mmap of the segment: %s", strerror(errno));
        goto fail;
    }
    s->hdr = (tw_attach_hdr *)s->seg;
    tw_ring *rings[2 * TW_ATTACH_MAX_CORES];
    if ((rc = tw_attach_check_segment(s->seg, s->seg_bytes, rings, &s->n_cores, err)) != 0)
        goto fail;
    for (uint32_t c = 0; c < s->n_cores; c++) {
        s->in[c] = rings[c];
        s->out[c] = rings[s->n_cores + c];
    }
    s->generation = __atomic_load_n(&s->hdr->generation, __ATOMIC_RELAXED);
    if (s->generation != m.generation) {
        rc = tw__err(err, -EBADMSG, "attach: %s: the segment's generation is %llu, WELCOME's %llu",
                     sock_path, (unsigned long long)s->generation, (unsigned long long)m.generation);
        goto fail;
    }
    /* Kept open: the path through /proc reaches it (and a directory's
     * segments) for as long as we live. */
    s->jfd = fds[1];
    fds[1] = -1;
    snprintf(s->jpath, sizeof(s->jpath), "/proc/self/fd/%d", s->jfd);
    if ((rc = tw_jseg_follow_open(&s->jr, s->jpath, 0, 1024, err)) != 0)
        goto fail;
    /* Acquire pairs with tw_attach_gw_put's release-store. */
    uint64_t end = __atomic_load_n(&s->hdr->journal_end, __ATOMIC_ACQUIRE);
    s->resume_end = end > m.journal_end ? end : m.journal_end;
    s->next_seq = s->jr.first_seq;
    tw_jseg_follow_expect(&s->jr, s->resume_end);
    s->hdr->st_pid_self = (uint32_t)getpid();
    __atomic_store_n(&s->hdr->st_next_seq, s->next_seq, __ATOMIC_RELAXED);
    /* Release pairs with the gateway's acquire-load after READY. */
    __atomic_store_n(&s->hdr->st_generation, s->generation, __ATOMIC_RELEASE);
    msg_init(&m, TW_ATTACH_MSG_READY);
    m.generation = s->generation;
    if ((rc = send_msg(s->sock, &m, NULL, 0)) != 0) {
        tw__err(err, rc, "attach: sending READY to %s: %s", sock_path, strerror(-rc));
        goto fail;
    }
    return 0;
fail:
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    tw_attach_st_close(s);
    return rc;
}

void tw_attach_st_close(tw_attach_st *s)
{
    tw_jseg_follow_close(&s->jr);
    if (s->jfd >= 0)
        close(s->jfd);
    s->jfd = -1;
    if (s->seg)
        munmap(s->seg, s->seg_bytes);
    if (s->memfd >= 0)
        close(s->memfd);
    if (s->sock >= 0)
        close(s->sock);
    s->seg = NULL;
    s->hdr = NULL;
    s->memfd = s->sock = -1;
}

/* Takes from the rings every record that continues next_seq.  Returns how
 * many (into out, at most n) or -EBADMSG; *beyond = every ring holds a
 * record past next_seq (so next_seq will not come by ring). */
static int take_rings(tw_attach_st *s, tw_journal_rec *out, uint32_t n, int *beyond, tw_error *err)
{
    uint32_t got = 0;
    int progress = 1;
    while (progress && got < n) {
        progress = 0;
        int all_beyond = 1;
        for (uint32_t c = 0; c < s->n_cores && got < n; c++) {
            tw_ring *r = s->in[c];
            const void *slot;
            uint32_t k = tw_ring_peek_sc(r, 64, &slot);
            uint32_t used = 0;
            const tw_journal_rec *v = slot;
            while (used < k && got < n) {
                uint64_t seq = v[used].seq;
                if (seq < s->next_seq) { /* read from the journal already */
                    used++;
                    s->ring_stale++;
                    continue;
                }
                if (seq != s->next_seq)
                    break;
                out[got] = v[used];
                if ((out[got].tag & ~TW_JOURNAL_KIND_MASK) != TW_JOURNAL_REC_MAGIC ||
                    tw_journal_rec_crc(&out[got]) != out[got].crc) {
                    tw_ring_release_sc(r, used);
                    return tw__err(err, -EBADMSG, "attach: inbound ring of core %u: record seq "
                                   "%llu has a bad tag or CRC", c, (unsigned long long)seq);
                }
                got++;
                used++;
                s->next_seq++;
                s->from_ring++;
                progress = 1;
            }
            if (used == k) {
                /* Nothing left in this run: the ring may hold more after
                 * the wrap, or be empty (then next may still come). */
                all_beyond = 0;
            }
            tw_ring_release_sc(r, used);
        }
        *beyond = all_beyond;
    }
    return (int)got;
}

int tw_attach_st_next_burst(tw_attach_st *s, tw_journal_rec *out, uint32_t n, tw_error *err)
{
    /* Acquire pairs with tw_attach_gw_put's release-store: every record
     * below end is in the journal. */
    uint64_t end = __atomic_load_n(&s->hdr->journal_end, __ATOMIC_ACQUIRE);
    tw_jseg_follow_expect(&s->jr, end);
    uint32_t got = 0;
    while (got < n) {
        uint64_t want = 0; /* records to read from the journal, if any */
        int beyond = 0;
        if (s->next_seq < s->resume_end) {
            /* Written before we attached: only the journal has them. */
            want = s->resume_end - s->next_seq;
        } else {
            int k = take_rings(s, out + got, n - got, &beyond, err);
            if (k < 0)
                return k;
            got += (uint32_t)k;
            if (k > 0) {
                s->miss_polls = 0;
                continue;
            }
            if (s->next_seq >= end)
                break; /* nothing more written yet */
            /* Written, and in no ring: dropped (a full ring, or no strategy
             * then), or in flight on another core.  Every ring past it
             * proves the former; else give the cores a few polls. */
            if (!beyond && ++s->miss_polls <= s->journal_after)
                break;
            want = end - s->next_seq;
        }
        s->miss_polls = 0;
        if (want > n - got)
            want = n - got;
        if (s->jr.seq != s->next_seq && tw_jseg_follow_seek(&s->jr, s->next_seq, err) != 0)
            return tw__err(err, -EINVAL, "attach: journal seek to %llu", (unsigned long long)s->next_seq);
        int k = tw_jseg_follow_read(&s->jr, out + got, (uint32_t)want, err);
        if (k < 0)
            return k;
        if (k == 0)
            break;
        got += (uint32_t)k;
        s->next_seq += (uint64_t)k;
        s->from_journal += (uint64_t)k;
    }
    /* Relaxed: progress the gateway reads for statistics only. */
    __atomic_store_n(&s->hdr->st_next_seq, s->next_seq, __ATOMIC_RELAXED);
    return (int)got;
}

int tw_attach_st_skip_to(tw_attach_st *s, uint64_t seq)
{
    if (seq < s->next_seq || seq > s->resume_end)
        return -EINVAL;
    s->next_seq = seq;
    __atomic_store_n(&s->hdr->st_next_seq, s->next_seq, __ATOMIC_RELAXED);
    return 0;
}

int tw_attach_st_check_gateway(tw_attach_st *s, int64_t now_ns, int64_t timeout_ns)
{
    struct pollfd p = {.fd = s->sock, .events = POLLRDHUP};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
        return -ECONNRESET;
    uint64_t b = __atomic_load_n(&s->hdr->gw_beat_ns, __ATOMIC_RELAXED);
    if (b != s->gw_beat_seen || s->gw_beat_change_ns == 0) {
        s->gw_beat_seen = b;
        s->gw_beat_change_ns = now_ns;
        return 0;
    }
    if (timeout_ns > 0 && now_ns - s->gw_beat_change_ns > timeout_ns)
        return -ETIMEDOUT;
    return 0;
}
