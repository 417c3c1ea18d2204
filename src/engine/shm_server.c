/* The shared-memory transport, server side.  A client that sent
 * SHM_ATTACH on its Unix socket gets a sealed memfd with two rings and a
 * service thread that waits on the request ring (spin, then futex).  The
 * socket stays open only to carry LOAD_FD descriptors and to tell either
 * side that the other died. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/engine_internal.h"

typedef struct tw__shm_conn {
    tw_engine *e;
    int fd;
    pthread_t th;
    uint8_t *map;
    size_t map_bytes;
    tw__ring req, rep;
    atomic_int stop;
    int64_t *combos; /* private copy: the peer could rewrite windows mid-sweep */
    size_t combos_cap;
    pthread_mutex_t m;
    pthread_cond_t cv;
    int job_done;
    tw__job job;
    tw__reply r;
    struct tw__shm_conn *next;
} tw__shm_conn;

static int shm_alive(void *arg)
{
    tw__shm_conn *s = arg;
    if (atomic_load(&s->stop))
        return -ESHUTDOWN;
    struct pollfd p = {.fd = s->fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
        return -ECONNRESET;
    return 0;
}

static void shm_job_done(tw__job *j)
{
    tw__shm_conn *s = j->owner;
    pthread_mutex_lock(&s->m);
    s->job_done = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->m);
}

/* A descriptor for LOAD_FD arrives on the socket just before the frame is
 * published in the ring.  Returns it (ours to close), or -ENOENT when none
 * came, or -errno. */
static int take_fd(tw__shm_conn *s)
{
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } cm;
    char b;
    struct iovec v = {&b, 1};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1, .msg_control = cm.buf,
                       .msg_controllen = sizeof(cm.buf)};
    ssize_t k = recvmsg(s->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (k < 0)
        return errno == EAGAIN ? -ENOENT : -errno;
    if (k == 0)
        return -ENOENT;
    int fd = -ENOENT;
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS &&
            h->cmsg_len >= CMSG_LEN(sizeof(int))) {
            if (fd >= 0)
                close(fd);
            memcpy(&fd, CMSG_DATA(h), sizeof(int));
        }
    return fd;
}

/* Copies r (not a compute reply) into the reply ring.  Returns 0 or the
 * ring's error. */
static int put_reply(tw__shm_conn *s, tw__reply *r)
{
    size_t total = 4 + r->small_len;
    for (int i = 0; i < r->n_arr; i++)
        total += r->arr[i].iov_len;
    uint8_t *f;
    int rc = tw__ring_reserve(&s->rep, total, 4, &f);
    if (rc)
        return rc;
    memcpy(f, &r->prefix, 4);
    size_t o = 4;
    if (r->small_len)
        memcpy(f + o, r->small, r->small_len);
    o += r->small_len;
    for (int i = 0; i < r->n_arr; i++) {
        if (r->arr[i].iov_len)
            memcpy(f + o, r->arr[i].iov_base, r->arr[i].iov_len);
        o += r->arr[i].iov_len;
    }
    return 0;
}

static int aligned8(const void *p) { return ((uintptr_t)p & 7) == 0; }

/* Serves one request already peeked from the ring.  Returns 0 to go on,
 * or negative to end the connection. */
static int serve_one(tw__shm_conn *s, const uint8_t *frame, size_t avail)
{
    tw_engine *e = s->e;
    tw__reply *r = &s->r;
    tw_wire_req rq;
    tw_error perr = {0};
    int64_t n = tw_wire_parse(frame, avail, &e->lim, &rq, &perr);
    if (n == -2) {
        rq.wire_err = TW_WERR_BAD_FRAME;
        tw__err(&perr, -EBADMSG, "frame longer than its ring record (%zu bytes)", avail);
        n = -1;
    }
    if (n == -1 || rq.opcode == TW_OP_SHM_ATTACH ||
        (rq.close && !aligned8(rq.close)) || (rq.combos && !aligned8(rq.combos))) {
        if (n != -1)
            rq.wire_err = TW_WERR_BAD_FRAME;
        tw__reply_error(e, r, rq.wire_err, "%s",
                        n == -1 ? perr.msg : "SHM_ATTACH again or misaligned arrays in the ring");
        int rc = put_reply(s, r);
        if (rc)
            return rc;
        tw__ring_release(&s->req);
        tw__ring_publish(&s->rep);
        return r->close_conn ? -EBADMSG : 0;
    }
    if (rq.combos && rq.n_combos) {
        size_t bytes = tw_wire_combos_bytes(&rq);
        if (bytes > s->combos_cap) {
            free(s->combos);
            s->combos = tw__aligned_alloc(bytes);
            s->combos_cap = s->combos ? bytes : 0;
        }
        if (!s->combos) {
            tw__reply_error(e, r, TW_WERR_BUSY, "no memory for %u combos", rq.n_combos);
            goto small;
        }
        memcpy(s->combos, rq.combos, bytes);
        rq.combos = (const uint8_t *)s->combos;
    }
    int fd = rq.opcode == TW_OP_LOAD_FD ? take_fd(s) : -ENOENT;
    tw__handle(e, &rq, fd, r, &s->job);
    if (fd >= 0)
        close(fd);
    if (r->compute) {
        /* The kernel writes its results straight into the reply ring. */
        size_t res = r->prefix;
        size_t room = res > 512 ? res : 512;
        uint8_t *f;
        int rc = tw__ring_reserve(&s->rep, 4 + room, 4, &f);
        if (rc) {
            tw__dataset_put(e, s->job.ds);
            return rc;
        }
        s->job.pnl = (double *)(void *)(f + 4);
        s->job.trades = (int64_t *)(void *)(f + 4 + 8u * s->job.n_combos);
        s->job.owner = s;
        s->job.done = shm_job_done;
        s->job_done = 0;
        tw__submit(e, &s->job);
        pthread_mutex_lock(&s->m);
        while (!s->job_done)
            pthread_cond_wait(&s->cv, &s->m);
        pthread_mutex_unlock(&s->m);
        tw__finish_compute(e, &s->job, r);
        if (r->prefix & TW_WIRE_ERROR_BIT) {
            memcpy(f + 4, r->small, r->small_len);
        }
        memcpy(f, &r->prefix, 4);
        atomic_fetch_add_explicit(&e->st.bytes_out, 4 + res, memory_order_relaxed);
        tw__ring_release(&s->req);
        tw__ring_publish(&s->rep);
        return 0;
    }
small:;
    int rc = put_reply(s, r);
    if (rc)
        return rc;
    tw__ring_release(&s->req);
    tw__ring_publish(&s->rep);
    return 0;
}

static void *shm_main(void *arg)
{
    tw__shm_conn *s = arg;
    for (;;) {
        const uint8_t *frame;
        size_t avail;
        if (tw__ring_peek(&s->req, &frame, &avail) != 0)
            break;
        atomic_fetch_add_explicit(&s->e->st.bytes_in, avail, memory_order_relaxed);
        if (serve_one(s, frame, avail) != 0)
            break;
    }
    munmap(s->map, s->map_bytes);
    s->map = NULL;
    close(s->fd);
    s->fd = -1;
    atomic_fetch_sub(&s->e->buf_bytes, s->map_bytes + s->combos_cap);
    free(s->combos);
    s->combos = NULL;
    atomic_fetch_sub(&s->e->n_conns, 1);
    atomic_fetch_sub_explicit(&s->e->st.conns_open, 1, memory_order_relaxed);
    return NULL;
}

/* Sends buf[len] in one message, with fd attached when it is >= 0.
 * Returns 0, -errno, or -EIO when the socket took only part of it. */
static int send_with_fd(int sock, const void *buf, size_t len, int fd)
{
    union {
        char b[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } cm;
    memset(&cm, 0, sizeof(cm));
    struct iovec v = {(void *)buf, len};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
    if (fd >= 0) {
        m.msg_control = cm.b;
        m.msg_controllen = sizeof(cm.b);
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &fd, sizeof(int));
    }
    ssize_t k = sendmsg(sock, &m, MSG_NOSIGNAL);
    return k == (ssize_t)len ? 0 : k < 0 ? -errno : -EIO;
}

static void refuse(tw_engine *e, int fd, uint16_t code, const char *msg)
{
    uint8_t f[256];
    size_t n = strlen(msg);
    if (n > 200)
        n = 200;
    uint32_t len = (uint32_t)(2 + n) | TW_WIRE_ERROR_BIT;
    memcpy(f, &len, 4);
    memcpy(f + 4, &code, 2);
    memcpy(f + 6, msg, n);
    send_with_fd(fd, f, 6 + n, -1);
    atomic_fetch_add_explicit(&e->st.errors[code], 1, memory_order_relaxed);
    close(fd);
}

int tw__shm_attach(tw_engine *e, int fd, uint32_t ring_bytes)
{
    if (atomic_load(&e->stopping)) {
        refuse(e, fd, TW_WERR_BUSY, "server is shutting down");
        return -ESHUTDOWN;
    }
    uint32_t ring = TW_SHM_RING_MIN;
    uint32_t want = ring_bytes ? ring_bytes : TW_SHM_RING_DEFAULT;
    while (ring < want && ring < e->opts.shm_ring_max)
        ring <<= 1;
    size_t bytes = tw__shm_map_bytes(ring);
    if (atomic_load(&e->n_conns) >= e->lim.max_conns) {
        refuse(e, fd, TW_WERR_BUSY, "too many connections");
        return -EBUSY;
    }
    uint64_t old = atomic_fetch_add(&e->buf_bytes, bytes);
    if (old + bytes > e->lim.max_buffer_bytes) {
        atomic_fetch_sub(&e->buf_bytes, bytes);
        refuse(e, fd, TW_WERR_BUSY, "no buffer budget for the shared-memory rings");
        return -ENOMEM;
    }
    tw__shm_conn *s = calloc(1, sizeof(*s));
    int mfd = memfd_create("tickwire-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    void *map = MAP_FAILED;
    if (s && mfd >= 0 && ftruncate(mfd, (off_t)bytes) == 0)
        /* Pre-faulted: a page fault costs ~12 us here, and a ring's first
         * pass would otherwise pay one per 4 KiB inside round trips. */
        map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, mfd, 0);
    /* Sealed so that the client cannot shrink the file and fault us. */
    if (map == MAP_FAILED ||
        fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        if (map != MAP_FAILED)
            munmap(map, bytes);
        if (mfd >= 0)
            close(mfd);
        free(s);
        atomic_fetch_sub(&e->buf_bytes, bytes);
        refuse(e, fd, TW_WERR_BUSY, "cannot create the shared-memory rings");
        return -ENOMEM;
    }
    tw_shm_layout *L = map;
    L->magic = TW_SHM_MAGIC;
    L->version = TW_SHM_VERSION;
    L->ring_bytes = ring;
    s->e = e;
    s->fd = fd;
    s->map = map;
    s->map_bytes = bytes;
    pthread_mutex_init(&s->m, NULL);
    pthread_cond_init(&s->cv, NULL);
    uint8_t *base = (uint8_t *)map;
    tw__ring_init(&s->req, &L->req, base + TW_SHM_CTL_BYTES, ring, e->opts.spin_ns, shm_alive, s);
    tw__ring_init(&s->rep, &L->rep, base + TW_SHM_CTL_BYTES + ring, ring, e->opts.spin_ns,
                  shm_alive, s);
    s->req.nudge = s->rep.nudge = 1;
    /* The socket becomes blocking: the service thread polls it only. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    uint8_t rep[8];
    uint32_t len = 4;
    memcpy(rep, &len, 4);
    memcpy(rep + 4, &ring, 4);
    int ok = send_with_fd(fd, rep, 8, mfd) == 0;
    close(mfd);
    atomic_fetch_add(&e->n_conns, 1);
    atomic_fetch_add_explicit(&e->st.conns_open, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&e->st.shm_conns, 1, memory_order_relaxed);
    if (!ok || pthread_create(&s->th, NULL, shm_main, s) != 0) {
        munmap(map, bytes);
        close(fd);
        free(s);
        atomic_fetch_sub(&e->buf_bytes, bytes);
        atomic_fetch_sub(&e->n_conns, 1);
        atomic_fetch_sub_explicit(&e->st.conns_open, 1, memory_order_relaxed);
        return -EIO;
    }
    pthread_mutex_lock(&e->shmlock);
    s->next = e->shm_list;
    e->shm_list = s;
    pthread_mutex_unlock(&e->shmlock);
    return 0;
}

void tw__shm_stop_all(tw_engine *e)
{
    pthread_mutex_lock(&e->shmlock);
    tw__shm_conn *list = e->shm_list;
    e->shm_list = NULL;
    pthread_mutex_unlock(&e->shmlock);
    for (tw__shm_conn *s = list; s; s = s->next)
        atomic_store(&s->stop, 1);
    while (list) {
        tw__shm_conn *next = list->next;
        pthread_join(list->th, NULL);
        pthread_mutex_destroy(&list->m);
        pthread_cond_destroy(&list->cv);
        free(list);
        list = next;
    }
}
