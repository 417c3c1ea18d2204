/* The engine's I/O thread: epoll over the listeners and every socket
 * connection, non-blocking reads into a per-connection staging buffer,
 * bodies read straight into an aligned per-connection buffer, replies sent
 * with one writev (header and arrays gathered, never copied). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "tickwire/clock.h"

void *tw__worker_main(void *arg);

#define STAGE_BYTES (64u * 1024u)

enum { ST_HDR, ST_BODY, ST_DISCARD, ST_COMPUTE, ST_WRITE };

typedef struct conn {
    tw_engine *e;
    int fd;
    int state;
    int is_unix;
    int dead;          /* peer gone while a job was in flight: free on completion */
    int close_after;   /* close once the pending reply is out (BAD_FRAME) */
    int passed_fd;     /* last descriptor received with SCM_RIGHTS, or -1 */
    uint8_t *stage;    /* STAGE_BYTES */
    size_t s_off, s_len;
    uint8_t *body;     /* aligned; holds the body's arrays */
    size_t body_cap, body_got, body_need;
    uint8_t *out;      /* aligned; sweep results */
    size_t out_cap;
    uint64_t discard;  /* bytes of a rejected frame still to skip */
    tw_wire_req rq;
    tw__reply rep;
    tw__job job;
    struct iovec wiov[4];
    int wiov_n, wiov_i;
    struct conn *next_all;
} conn;

static void conn_close(tw_engine *e, conn *c);

/* ---- buffers ------------------------------------------------------------ */

/* Grows *buf to at least need bytes (need already checked against the
 * limits), charging the engine-wide buffer budget.  Returns 0, -ENOBUFS
 * (over the budget) or -ENOMEM. */
static int grow(tw_engine *e, uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t want = need < 4096 ? 4096 : need;
    uint64_t old = atomic_fetch_add(&e->buf_bytes, want);
    if (old + want - *cap > e->lim.max_buffer_bytes) {
        atomic_fetch_sub(&e->buf_bytes, want);
        return -ENOBUFS;
    }
    uint8_t *p = tw__aligned_alloc(want);
    if (!p) {
        atomic_fetch_sub(&e->buf_bytes, want);
        return -ENOMEM;
    }
    free(*buf);
    atomic_fetch_sub(&e->buf_bytes, *cap);
    *buf = p;
    *cap = want;
    return 0;
}

static void set_events(tw_engine *e, conn *c, uint32_t ev)
{
    struct epoll_event ee = {.events = ev, .data.ptr = c};
    epoll_ctl(e->epfd, EPOLL_CTL_MOD, c->fd, &ee);
}

/* ---- writing ------------------------------------------------------------ */

/* Sends what is left of the reply.  Returns 1 when done, 0 when the socket
 * is full (EPOLLOUT armed), -errno when the peer is gone. */
static int flush(tw_engine *e, conn *c)
{
    while (c->wiov_i < c->wiov_n) {
        struct msghdr m = {.msg_iov = c->wiov + c->wiov_i,
                           .msg_iovlen = (size_t)(c->wiov_n - c->wiov_i)};
        ssize_t k = sendmsg(c->fd, &m, MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                set_events(e, c, EPOLLOUT);
                return 0;
            }
            return -errno;
        }
        atomic_fetch_add_explicit(&e->st.bytes_out, (uint64_t)k, memory_order_relaxed);
        tw__iov_consume(c->wiov, c->wiov_n, &c->wiov_i, (size_t)k);
    }
    return 1;
}

/* Queues c->rep and tries to send it.  Returns as flush(). */
static int send_reply(tw_engine *e, conn *c)
{
    tw__reply *r = &c->rep;
    c->wiov[0] = (struct iovec){&r->prefix, 4};
    c->wiov_n = 1;
    if (r->small_len)
        c->wiov[c->wiov_n++] = (struct iovec){r->small, r->small_len};
    for (int i = 0; i < r->n_arr; i++)
        c->wiov[c->wiov_n++] = r->arr[i];
    c->wiov_i = 0;
    if (r->close_conn)
        c->close_after = 1;
    c->state = ST_WRITE;
    return flush(e, c);
}

/* ---- requests ----------------------------------------------------------- */

/* Worker side of a socket connection's sweep: hand the job back to the I/O
 * thread through the done list and its eventfd. */
static void job_done_sock(tw__job *j)
{
    tw_engine *e = ((conn *)j->owner)->e;
    pthread_mutex_lock(&e->dlock);
    j->next = e->dhead;
    e->dhead = j;
    pthread_mutex_unlock(&e->dlock);
    uint64_t one = 1;
    ssize_t ignored = write(e->done_fd, &one, sizeof(one));
    (void)ignored;
}

/* Runs the request in c->rq (whole frame received, arrays in c->body). */
static void run_request(tw_engine *e, conn *c);

/* ---- reading ------------------------------------------------------------ */

/* Reads from the socket into dst, taking any passed descriptor.  Returns
 * bytes read, 0 at end of stream, -EAGAIN when nothing is there, or
 * -errno. */
static ssize_t rd(tw_engine *e, conn *c, void *dst, size_t len)
{
    union {
        char buf[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } cm;
    struct iovec v = {dst, len};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
    if (c->is_unix) {
        m.msg_control = cm.buf;
        m.msg_controllen = sizeof(cm.buf);
    }
    ssize_t k;
    do
        k = recvmsg(c->fd, &m, MSG_CMSG_CLOEXEC);
    while (k < 0 && errno == EINTR);
    if (k < 0)
        return -errno;
    if (c->is_unix && m.msg_controllen > 0) {
        for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
            if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
                continue;
            size_t nfd = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < nfd; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
                /* Keep only the newest descriptor: a peer cannot make us
                 * hold more than one. */
                if (c->passed_fd >= 0)
                    close(c->passed_fd);
                c->passed_fd = fd;
            }
        }
    }
    if (k > 0)
        atomic_fetch_add_explicit(&e->st.bytes_in, (uint64_t)k, memory_order_relaxed);
    return k;
}

/* Rejects the frame at the head of the staging buffer: error reply, then
 * skip its remaining bytes (or close after BAD_FRAME). */
static int reject(tw_engine *e, conn *c, const tw_error *err)
{
    uint32_t body;
    memcpy(&body, c->stage + c->s_off, 4);
    tw__reply_error(e, &c->rep, c->rq.wire_err, "%s", err->msg);
    if (c->rq.wire_err != TW_WERR_BAD_FRAME) {
        uint64_t total = 4ull + body;
        uint64_t have = c->s_len - c->s_off;
        if (have >= total) {
            c->s_off += (size_t)total;
            c->discard = 0;
        } else {
            c->s_off = c->s_len;
            c->discard = total - have;
        }
    }
    int rc = send_reply(e, c);
    if (rc == 1 && !c->close_after)
        c->state = c->discard ? ST_DISCARD : ST_HDR;
    return rc;
}

/* Drives the connection's state machine after readable data.  Returns 0,
 * or a negative errno when the connection must be closed: the read's error
 * or -ECONNRESET at the peer's end of stream, -ECONNABORTED when we end it
 * (after BAD_FRAME or a failed reply, or with its socket handed over to a
 * shared-memory service thread). */
static int on_readable(tw_engine *e, conn *c)
{
    /* At most 64 reads per wakeup (fairness between connections); frames
     * already staged are always processed, or nothing would wake us for
     * them.  After a short read the socket is empty: go back to epoll
     * instead of paying a read that returns EAGAIN. */
    int reads = 0;
    int drained = 0;
#define READ_GUARD()                                                                       \
    do {                                                                                   \
        if (drained || reads++ >= 64)                                                      \
            return 0;                                                                      \
    } while (0)
    for (;;) {
        if (c->state == ST_DISCARD) {
            uint8_t *p = c->stage;
            size_t want = c->discard < STAGE_BYTES ? (size_t)c->discard : STAGE_BYTES;
            READ_GUARD();
            ssize_t k = rd(e, c, p, want);
            if (k == -EAGAIN)
                return 0;
            if (k <= 0)
                return k < 0 ? (int)k : -ECONNRESET;
            drained = (size_t)k < want;
            c->discard -= (uint64_t)k;
            if (c->discard == 0) {
                c->state = ST_HDR;
                c->s_off = c->s_len = 0;
            }
            continue;
        }
        if (c->state == ST_BODY) {
            READ_GUARD();
            ssize_t k = rd(e, c, c->body + c->body_got, c->body_need - c->body_got);
            if (k == -EAGAIN)
                return 0;
            if (k <= 0)
                return k < 0 ? (int)k : -ECONNRESET;
            drained = (size_t)k < c->body_need - c->body_got;
            c->body_got += (size_t)k;
            if (c->body_got < c->body_need)
                continue;
            run_request(e, c);
            if (c->close_after && c->state != ST_WRITE)
                return -ECONNABORTED;
            if (c->state != ST_HDR)
                return 0;
            continue;
        }
        if (c->state != ST_HDR)
            return 0;
        /* Parse whatever is staged first (pipelined frames). */
        if (c->s_off < c->s_len) {
            tw_error err = {0};
            const uint8_t *p = c->stage + c->s_off;
            size_t have = c->s_len - c->s_off;
            int64_t n = tw_wire_parse(p, have, &e->lim, &c->rq, &err);
            if (n == -1) {
                int rc = reject(e, c, &err);
                if (rc < 0)
                    return rc;
                if (c->close_after && rc == 1)
                    return -ECONNABORTED;
                if (c->state != ST_HDR)
                    return 0;
                continue;
            }
            if (n >= 0 || c->rq.body_len) {
                /* Header valid: move the arrays into the aligned body
                 * buffer; read the rest of them straight into it. */
                size_t arrays = c->rq.body_len - c->rq.hdr_len;
                if (c->rq.opcode == TW_OP_SHM_ATTACH) {
                    if (!c->is_unix || n < 0) {
                        tw__reply_error(e, &c->rep, TW_WERR_BAD_FRAME,
                                        "SHM_ATTACH is only valid on a Unix socket");
                        send_reply(e, c);
                        return -ECONNABORTED;
                    }
                    c->s_off += (size_t)n;
                    if (c->s_off != c->s_len) {
                        tw__reply_error(e, &c->rep, TW_WERR_BAD_FRAME,
                                        "bytes after SHM_ATTACH before its reply");
                        send_reply(e, c);
                        return -ECONNABORTED;
                    }
                    epoll_ctl(e->epfd, EPOLL_CTL_DEL, c->fd, NULL);
                    int fd = c->fd;
                    c->fd = -1;
                    /* The shm connection counts itself from here on. */
                    atomic_fetch_sub(&e->n_conns, 1);
                    atomic_fetch_sub_explicit(&e->st.conns_open, 1, memory_order_relaxed);
                    tw__shm_attach(e, fd, c->rq.ring_bytes);
                    return -ECONNABORTED;
                }
                if (grow(e, &c->body, &c->body_cap, arrays) != 0) {
                    c->rq.wire_err = TW_WERR_BUSY;
                    tw__err(&err, -ENOMEM,
                            "no buffer budget for a %zu-byte request (%llu of %llu bytes in use)",
                            arrays, (unsigned long long)atomic_load(&e->buf_bytes),
                            (unsigned long long)e->lim.max_buffer_bytes);
                    int rc = reject(e, c, &err);
                    if (rc < 0)
                        return rc;
                    if (c->state != ST_HDR)
                        return 0;
                    continue;
                }
                size_t in_stage = have - 4 - c->rq.hdr_len;
                if (in_stage > arrays)
                    in_stage = arrays;
                if (in_stage)
                    memcpy(c->body, p + 4 + c->rq.hdr_len, in_stage);
                c->s_off += 4 + c->rq.hdr_len + in_stage;
                c->body_got = in_stage;
                c->body_need = arrays;
                if (c->s_off == c->s_len)
                    c->s_off = c->s_len = 0;
                if (in_stage < arrays) {
                    c->state = ST_BODY;
                    continue;
                }
                run_request(e, c);
                if (c->close_after && c->state != ST_WRITE)
                    return -ECONNABORTED;
                if (c->state != ST_HDR)
                    return 0;
                continue;
            }
        }
        /* Need more header bytes: compact and read into the stage. */
        if (c->s_off > 0) {
            memmove(c->stage, c->stage + c->s_off, c->s_len - c->s_off);
            c->s_len -= c->s_off;
            c->s_off = 0;
        }
        READ_GUARD();
        ssize_t k = rd(e, c, c->stage + c->s_len, STAGE_BYTES - c->s_len);
        if (k == -EAGAIN)
            return 0;
        if (k <= 0)
            return k < 0 ? (int)k : -ECONNRESET;
        drained = (size_t)k < STAGE_BYTES - c->s_len;
        c->s_len += (size_t)k;
    }
#undef READ_GUARD
}

static void run_request(tw_engine *e, conn *c)
{
    tw_wire_req *rq = &c->rq;
    /* Re-point the array views at the aligned copy. */
    tw__req_repoint(rq, c->body);
    int fd = rq->opcode == TW_OP_LOAD_FD ? c->passed_fd : -1;
    tw__handle(e, rq, fd, &c->rep, &c->job);
    if (fd >= 0) {
        close(fd);
        c->passed_fd = -1;
    }
    if (c->rep.compute) {
        size_t need = c->rep.prefix;
        if (grow(e, &c->out, &c->out_cap, need) != 0) {
            tw__dataset_put(e, c->job.ds);
            c->job.ds = NULL;
            tw__reply_error(e, &c->rep, TW_WERR_BUSY, "no buffer budget for %zu result bytes", need);
        } else {
            c->job.pnl = (double *)(void *)c->out;
            c->job.trades = (int64_t *)(void *)(c->out + 8u * c->job.n_combos);
            c->job.owner = c;
            c->job.done = job_done_sock;
            c->state = ST_COMPUTE;
            set_events(e, c, 0);
            tw__submit(e, &c->job);
            return;
        }
    }
    int rc = send_reply(e, c);
    if (rc != 0)
        c->state = ST_HDR;
    if (rc < 0)
        c->close_after = 1;
}

/* ---- I/O loop ----------------------------------------------------------- */


static void conn_free(tw_engine *e, conn *c)
{
    free(c->stage);
    free(c->body);
    free(c->out);
    atomic_fetch_sub(&e->buf_bytes, STAGE_BYTES + c->body_cap + c->out_cap);
    if (c->passed_fd >= 0)
        close(c->passed_fd);
    free(c);
}

static void conn_close(tw_engine *e, conn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(e->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
        atomic_fetch_sub(&e->n_conns, 1);
        atomic_fetch_sub_explicit(&e->st.conns_open, 1, memory_order_relaxed);
    }
    for (conn **pp = &e->conns; *pp; pp = &(*pp)->next_all)
        if (*pp == c) {
            *pp = c->next_all;
            break;
        }
    if (c->state == ST_COMPUTE)
        c->dead = 1; /* freed when its job comes back */
    else
        conn_free(e, c);
}

static void accept_all(tw_engine *e, int lfd, int is_unix)
{
    for (int i = 0; i < 64; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        atomic_fetch_add_explicit(&e->st.conns_accepted, 1, memory_order_relaxed);
        if (atomic_load(&e->n_conns) >= e->lim.max_conns ||
            atomic_load(&e->buf_bytes) + STAGE_BYTES > e->lim.max_buffer_bytes) {
            /* Best effort: tell the peer why, without waiting on it. */
            uint8_t f[128];
            int n = snprintf((char *)f + 6, sizeof(f) - 6,
                             "too many connections (limit %u)", e->lim.max_conns);
            uint32_t len = (uint32_t)(2 + n) | TW_WIRE_ERROR_BIT;
            uint16_t code = TW_WERR_BUSY;
            memcpy(f, &len, 4);
            memcpy(f + 4, &code, 2);
            ssize_t ignored = send(fd, f, 6 + (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
            (void)ignored;
            close(fd);
            atomic_fetch_add_explicit(&e->st.conns_refused, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&e->st.errors[TW_WERR_BUSY], 1, memory_order_relaxed);
            continue;
        }
        conn *c = calloc(1, sizeof(*c));
        uint8_t *stage = tw__aligned_alloc(STAGE_BYTES);
        if (!c || !stage) {
            free(c);
            free(stage);
            close(fd);
            continue;
        }
        atomic_fetch_add(&e->buf_bytes, STAGE_BYTES);
        c->e = e;
        c->fd = fd;
        c->stage = stage;
        c->is_unix = is_unix;
        c->passed_fd = -1;
        c->state = ST_HDR;
        if (!is_unix) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        }
        struct epoll_event ee = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ee) != 0) {
            close(fd);
            c->fd = -1;
            conn_free(e, c);
            continue;
        }
        c->next_all = e->conns;
        e->conns = c;
        atomic_fetch_add(&e->n_conns, 1);
        atomic_fetch_add_explicit(&e->st.conns_open, 1, memory_order_relaxed);
        if (e->opts.verbose && e->opts.log)
            e->opts.log(e->opts.log_ctx, is_unix ? "tickwire serve: unix connection accepted"
                                                 : "tickwire serve: tcp connection accepted");
    }
}

/* Finished sweeps: send their replies and resume reading. */
static void drain_done(tw_engine *e)
{
    uint64_t v;
    ssize_t ignored = read(e->done_fd, &v, sizeof(v));
    (void)ignored;
    pthread_mutex_lock(&e->dlock);
    tw__job *j = e->dhead;
    e->dhead = NULL;
    pthread_mutex_unlock(&e->dlock);
    while (j) {
        tw__job *next = j->next;
        conn *c = j->owner;
        tw__finish_compute(e, j, &c->rep);
        c->state = ST_HDR;
        if (c->dead) {
            conn_free(e, c);
        } else {
            if (!(c->rep.prefix & TW_WIRE_ERROR_BIT)) {
                c->rep.arr[0] = (struct iovec){c->out, c->rep.prefix};
                c->rep.n_arr = 1;
            }
            set_events(e, c, EPOLLIN);
            int rc = send_reply(e, c);
            if (rc < 0 || (rc == 1 && c->close_after))
                conn_close(e, c);
            else if (rc == 1) {
                c->state = ST_HDR;
                /* Frames may already wait in the stage (pipelining). */
                if (on_readable(e, c) < 0)
                    conn_close(e, c);
            }
        }
        j = next;
    }
}

static int pending_work(tw_engine *e)
{
    for (conn *c = e->conns; c; c = c->next_all)
        if (c->state == ST_COMPUTE || c->state == ST_WRITE)
            return 1;
    return 0;
}

void tw_engine_run(tw_engine *e)
{
    struct epoll_event evs[64];
    int64_t stop_deadline = 0; /* monotonic ns; 0 while running */
    for (;;) {
        int n = epoll_wait(e->epfd, evs, 64, stop_deadline ? 50 : -1);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &e->unix_fd) {
                accept_all(e, e->unix_fd, 1);
            } else if (p == &e->tcp_fd) {
                accept_all(e, e->tcp_fd, 0);
            } else if (p == &e->done_fd) {
                drain_done(e);
            } else if (p == &e->stop_fd) {
                if (!stop_deadline) {
                    /* Stop accepting at once; finish what is in flight. */
                    atomic_store(&e->stopping, 1);
                    stop_deadline = tw_clock_now_ns() + 5000000000ll;
                    uint64_t v;
                    ssize_t ignored = read(e->stop_fd, &v, sizeof(v));
                    (void)ignored;
                    if (e->unix_fd >= 0) {
                        epoll_ctl(e->epfd, EPOLL_CTL_DEL, e->unix_fd, NULL);
                        close(e->unix_fd);
                        e->unix_fd = -1;
                        unlink(e->unix_path);
                    }
                    if (e->tcp_fd >= 0) {
                        epoll_ctl(e->epfd, EPOLL_CTL_DEL, e->tcp_fd, NULL);
                        close(e->tcp_fd);
                        e->tcp_fd = -1;
                    }
                    tw__shm_stop_all(e);
                }
            } else {
                conn *c = p;
                if (c->state == ST_WRITE) {
                    int rc = flush(e, c);
                    if (rc < 0 || (rc == 1 && c->close_after)) {
                        conn_close(e, c);
                        continue;
                    }
                    if (rc == 0)
                        continue;
                    c->state = c->discard ? ST_DISCARD : ST_HDR;
                    set_events(e, c, EPOLLIN);
                }
                if (c->state == ST_COMPUTE)
                    continue;
                if (on_readable(e, c) < 0 || (c->close_after && c->state != ST_WRITE))
                    conn_close(e, c);
            }
        }
        if (stop_deadline && (!pending_work(e) || tw_clock_now_ns() > stop_deadline))
            break;
    }
    /* Close every connection; a job still running (deadline passed) keeps
     * its connection until the pool is joined in destroy. */
    while (e->conns)
        conn_close(e, e->conns);
}

void tw_engine_stop(tw_engine *e)
{
    uint64_t one = 1;
    ssize_t ignored = write(e->stop_fd, &one, sizeof(one));
    (void)ignored;
}

int tw_engine_tcp_port(const tw_engine *e) { return e->tcp_port; }

void tw__free_dead_conns(tw_engine *e)
{
    pthread_mutex_lock(&e->dlock);
    tw__job *j = e->dhead;
    e->dhead = NULL;
    pthread_mutex_unlock(&e->dlock);
    while (j) {
        tw__job *next = j->next;
        conn *c = j->owner;
        tw__dataset_put(e, j->ds);
        j->ds = NULL;
        if (c->dead)
            conn_free(e, c);
        j = next;
    }
}
