/* Engine lifecycle (listeners, pool, teardown) and the stdin/stdout
 * transport used by spawn-per-call clients. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine/engine_internal.h"

void *tw__worker_main(void *arg);

void tw_engine_opts_init(tw_engine_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->unix_mode = 0600;
    o->tcp_host = "127.0.0.1";
    o->tcp_port = -1;
    o->workers = 2;
    tw_sweep_opts_init(&o->sweep);
    o->sweeper_bars = 1u << 18;
    o->shm_ring_max = 64u << 20;
    o->spin_ns = 50000;
    /* The default grid's 136 close windows over a 150,000-bar dataset are
     * 163 MB of passes: a cache that holds fewer never hits a client that
     * walks the grid one combo per call (LRU under a cyclic walk). */
    o->sweep.cache_bytes = TW_ENGINE_CACHE_BYTES_DEFAULT;
    tw_wire_limits_init(&o->limits);
}

static int check_opts(const tw_engine_opts *o, tw_error *err)
{
    const tw_wire_limits *l = &o->limits;
    if (!l->max_frame_bytes || l->max_frame_bytes > TW_WIRE_LEN_MASK)
        return tw__err(err, -EINVAL, "max frame bytes must be in [1, %u]", TW_WIRE_LEN_MASK);
    if (!l->max_bars || !l->max_combos || !l->max_datasets || !l->max_dataset_bytes ||
        !l->max_conns || !l->max_buffer_bytes)
        return tw__err(err, -EINVAL, "every limit must be at least 1");
    if (o->shm_ring_max < TW_SHM_RING_MIN || o->shm_ring_max > TW_SHM_RING_MAX)
        return tw__err(err, -EINVAL, "shm ring max must be in [%u, %u]", TW_SHM_RING_MIN,
                       TW_SHM_RING_MAX);
    if (o->unix_path && strlen(o->unix_path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return tw__err(err, -ENAMETOOLONG, "socket path too long: %s", o->unix_path);
    return 0;
}

static int bind_unix(tw_engine *e, const char *path, unsigned mode, tw_error *err)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strncpy(a.sun_path, path, sizeof(a.sun_path) - 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return tw__err(err, -errno, "socket(AF_UNIX): %s", strerror(errno));
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            close(fd);
            return tw__err(err, -EEXIST, "%s exists and is not a socket", path);
        }
        /* A live server answers; a stale file from a crash does not. */
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int live = probe >= 0 && connect(probe, (struct sockaddr *)&a, sizeof(a)) == 0;
        if (probe >= 0)
            close(probe);
        if (live) {
            close(fd);
            return tw__err(err, -EADDRINUSE, "a server already answers on %s", path);
        }
        unlink(path);
    }
    /* The file is created with the umask's bits: open nothing wider than
     * the mode we will set, so there is no window where others may connect. */
    mode_t old = umask(0777 & ~(mode & 0777));
    int rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
    int bind_errno = errno;
    umask(old);
    if (rc != 0) {
        close(fd);
        return tw__err(err, -bind_errno, "bind %s: %s", path, strerror(bind_errno));
    }
    chmod(path, mode & 07777);
    if (listen(fd, 512) != 0) {
        int en = errno;
        close(fd);
        unlink(path);
        return tw__err(err, -en, "listen %s: %s", path, strerror(en));
    }
    e->unix_fd = fd;
    snprintf(e->unix_path, sizeof(e->unix_path), "%s", path);
    return 0;
}

static int bind_tcp(tw_engine *e, const char *host, int port, tw_error *err)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (!host || !strcmp(host, "localhost"))
        host = "127.0.0.1";
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        return tw__err(err, -EINVAL, "not an IPv4 address: %s", host);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return tw__err(err, -errno, "socket(AF_INET): %s", strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 512) != 0) {
        int en = errno;
        close(fd);
        return tw__err(err, -en, "bind/listen %s:%d: %s", host, port, strerror(en));
    }
    socklen_t al = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &al);
    e->tcp_port = ntohs(a.sin_port);
    e->tcp_fd = fd;
    return 0;
}

static int add_ep(tw_engine *e, int fd, void *tag)
{
    struct epoll_event ee = {.events = EPOLLIN, .data.ptr = tag};
    return epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ee);
}

static tw_engine *engine_alloc(const tw_engine_opts *opts, tw_error *err, int *rc)
{
    *rc = check_opts(opts, err);
    if (*rc)
        return NULL;
    tw_engine *e = calloc(1, sizeof(*e));
    if (!e) {
        *rc = tw__err(err, -ENOMEM, "out of memory");
        return NULL;
    }
    e->opts = *opts;
    e->lim = opts->limits;
    e->epfd = e->unix_fd = e->tcp_fd = e->stop_fd = e->done_fd = -1;
    e->tcp_port = -1;
    e->ds_next_id = 1;
    pthread_mutex_init(&e->qlock, NULL);
    pthread_cond_init(&e->qcond, NULL);
    pthread_mutex_init(&e->dlock, NULL);
    pthread_mutex_init(&e->dslock, NULL);
    pthread_mutex_init(&e->shmlock, NULL);
    e->ds = calloc(e->lim.max_datasets, sizeof(*e->ds));
    if (!e->ds) {
        free(e);
        *rc = tw__err(err, -ENOMEM, "out of memory for %u dataset slots", opts->limits.max_datasets);
        return NULL;
    }
    *rc = tw__engine_kernels(e, err);
    if (*rc) {
        free(e->ds);
        free(e);
        return NULL;
    }
    return e;
}

int tw_engine_create(tw_engine **out, const tw_engine_opts *opts, tw_error *err)
{
    int rc;
    tw_engine *e = engine_alloc(opts, err, &rc);
    if (!e)
        return rc;
    e->epfd = epoll_create1(EPOLL_CLOEXEC);
    e->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    e->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (e->epfd < 0 || e->stop_fd < 0 || e->done_fd < 0) {
        rc = tw__err(err, -errno, "epoll/eventfd: %s", strerror(errno));
        goto fail;
    }
    if (opts->unix_path && (rc = bind_unix(e, opts->unix_path, opts->unix_mode, err)))
        goto fail;
    if (opts->tcp_port >= 0 && (rc = bind_tcp(e, opts->tcp_host, opts->tcp_port, err)))
        goto fail;
    if (e->unix_fd < 0 && e->tcp_fd < 0) {
        rc = tw__err(err, -EINVAL, "no listener: give a Unix socket path or a TCP port");
        goto fail;
    }
    if ((e->unix_fd >= 0 && add_ep(e, e->unix_fd, &e->unix_fd)) ||
        (e->tcp_fd >= 0 && add_ep(e, e->tcp_fd, &e->tcp_fd)) ||
        add_ep(e, e->stop_fd, &e->stop_fd) || add_ep(e, e->done_fd, &e->done_fd)) {
        rc = tw__err(err, -errno, "epoll_ctl: %s", strerror(errno));
        goto fail;
    }
    /* A sweeper with these options now, so that a kernel option this CPU
     * cannot run fails at start rather than on every request; it also
     * tells INFO what the kernel really runs. */
    {
        tw_sweeper *probe;
        rc = tw_sweeper_create(&probe, 1, &opts->sweep);
        if (rc) {
            rc = tw__err(err, rc, "kernel options rejected by the sweeper: %s", tw_strerror(rc));
            goto fail;
        }
        e->kernel_isa = tw_sweeper_isa(probe);
        e->kernel_threads = tw_sweeper_threads(probe);
        tw_sweeper_destroy(probe);
    }
    e->n_workers = opts->workers ? opts->workers : 1;
    e->workers = calloc(e->n_workers, sizeof(pthread_t));
    if (!e->workers) {
        rc = tw__err(err, -ENOMEM, "out of memory");
        goto fail;
    }
    for (unsigned i = 0; i < e->n_workers; i++)
        if (pthread_create(&e->workers[i], NULL, tw__worker_main, e) != 0) {
            e->n_workers = i;
            rc = tw__err(err, -EAGAIN, "cannot start compute thread %u", i);
            goto fail;
        }
    *out = e;
    return 0;
fail:
    tw_engine_destroy(e);
    return rc;
}

void tw_engine_destroy(tw_engine *e)
{
    if (!e)
        return;
    tw__shm_stop_all(e);
    pthread_mutex_lock(&e->qlock);
    e->qstop = 1;
    pthread_cond_broadcast(&e->qcond);
    pthread_mutex_unlock(&e->qlock);
    for (unsigned i = 0; i < e->n_workers; i++)
        pthread_join(e->workers[i], NULL);
    free(e->workers);
    /* Jobs of connections closed while computing come back here last. */
    tw__free_dead_conns(e);
    for (uint32_t i = 0; i < e->lim.max_datasets; i++)
        if (e->ds[i])
            tw__dataset_put(e, e->ds[i]);
    free(e->ds);
    if (e->unix_fd >= 0) {
        close(e->unix_fd);
        unlink(e->unix_path);
    }
    if (e->tcp_fd >= 0)
        close(e->tcp_fd);
    if (e->epfd >= 0)
        close(e->epfd);
    if (e->stop_fd >= 0)
        close(e->stop_fd);
    if (e->done_fd >= 0)
        close(e->done_fd);
    free(e);
}

/* ---- stdin/stdout ------------------------------------------------------- */

/* Reads n bytes of a frame (tw__read_full) and says how the input ended:
 * 0, or 1 when it ended cleanly before a frame, -EPIPE when it ended
 * inside one, -errno. */
static int read_frame_bytes(int fd, void *p, size_t n)
{
    ssize_t got = tw__read_full(fd, p, n);
    if (got < 0)
        return (int)got;
    return (size_t)got == n ? 0 : got ? -EPIPE : 1;
}

/* Writes the reply r to fd, gathered.  Returns 0 or -errno. */
static int write_reply(int fd, tw__reply *r)
{
    struct iovec v[4];
    int n = 0;
    v[n++] = (struct iovec){&r->prefix, 4};
    if (r->small_len)
        v[n++] = (struct iovec){r->small, r->small_len};
    for (int i = 0; i < r->n_arr; i++)
        v[n++] = r->arr[i];
    int i = 0;
    while (i < n) {
        ssize_t k = writev(fd, v + i, n - i);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        tw__iov_consume(v, n, &i, (size_t)k);
    }
    return 0;
}

int tw_engine_serve_fds(const tw_engine_opts *opts, int in_fd, int out_fd, tw_error *err)
{
    int rc;
    tw_engine *e = engine_alloc(opts, err, &rc);
    if (!e)
        return rc;
    tw_sweeper *sw = NULL;
    size_t sw_cap = 0;
    uint8_t *body = NULL, *outb = NULL;
    size_t body_cap = 0, out_cap = 0;
    tw__reply *r = malloc(sizeof(*r));
    tw__job job;
    rc = r ? 0 : -ENOMEM;
    while (rc == 0) {
        uint8_t hdr[32];
        tw_wire_req rq;
        tw_error perr = {0};
        int k = read_frame_bytes(in_fd, hdr, 5);
        if (k == 1)
            break; /* clean end of input */
        if (k) {
            rc = tw__err(err, k, "reading a frame header: %s", strerror(-k));
            break;
        }
        size_t got = 5;
        int64_t n = tw_wire_parse(hdr, 5, &e->lim, &rq, &perr);
        if (n == -2 && rq.body_len == 0 && tw_wire_hdr_len(hdr[4]) > 1) {
            uint32_t hl = tw_wire_hdr_len(hdr[4]);
            if ((k = read_frame_bytes(in_fd, hdr + 5, hl - 1))) {
                rc = tw__err(err, k < 0 ? k : -EPIPE, "truncated frame header");
                break;
            }
            got = 4 + hl;
            n = tw_wire_parse(hdr, got, &e->lim, &rq, &perr);
        }
        if (n == -1 || rq.opcode == TW_OP_SHM_ATTACH) {
            if (n != -1)
                rq.wire_err = TW_WERR_BAD_FRAME;
            tw__reply_error(e, r, rq.wire_err, "%s",
                            n == -1 ? perr.msg : "SHM_ATTACH needs a Unix socket");
            write_reply(out_fd, r);
            if (r->close_conn) {
                rc = tw__err(err, -EBADMSG, "%s", perr.msg);
                break;
            }
            /* Skip the rejected frame's remaining bytes. */
            uint32_t blen;
            memcpy(&blen, hdr, 4);
            uint64_t left = (uint64_t)blen + 4 - got;
            uint8_t sink[4096];
            while (left && rc == 0) {
                size_t m = left < sizeof(sink) ? (size_t)left : sizeof(sink);
                if (read_frame_bytes(in_fd, sink, m))
                    rc = -EPIPE;
                left -= m;
            }
            continue;
        }
        size_t arrays = rq.body_len - rq.hdr_len;
        if (arrays > body_cap) {
            free(body);
            body = tw__aligned_alloc(arrays);
            body_cap = body ? arrays : 0;
            if (!body) {
                rc = tw__err(err, -ENOMEM, "no memory for a %zu-byte frame", arrays);
                break;
            }
        }
        if (arrays && (k = read_frame_bytes(in_fd, body, arrays))) {
            rc = tw__err(err, -EPIPE, "frame truncated: end of input inside a %u-byte body",
                         rq.body_len);
            break;
        }
        tw__req_repoint(&rq, body);
        tw__handle(e, &rq, -1, r, &job);
        if (r->compute) {
            size_t need = r->prefix;
            if (need > out_cap) {
                free(outb);
                outb = tw__aligned_alloc(need);
                out_cap = outb ? need : 0;
            }
            if (!sw || job.n_bars > sw_cap) {
                tw_sweeper_destroy(sw);
                sw = NULL;
                sw_cap = 0;
                if (tw_sweeper_create(&sw, job.n_bars, &e->opts.sweep) == 0)
                    sw_cap = job.n_bars;
            }
            if (!outb || !sw) {
                job.rc = tw__err(&job.err, -ENOMEM, "no memory for the sweep");
            } else {
                job.pnl = (double *)(void *)outb;
                job.trades = (int64_t *)(void *)(outb + 8u * job.n_combos);
                job.rc = tw__job_run(sw, &job);
            }
            tw__finish_compute(e, &job, r);
            if (!(r->prefix & TW_WIRE_ERROR_BIT)) {
                r->arr[0] = (struct iovec){outb, need};
                r->n_arr = 1;
            }
        }
        if ((k = write_reply(out_fd, r))) {
            rc = tw__err(err, k, "writing a reply: %s", strerror(-k));
            break;
        }
    }
    tw_sweeper_destroy(sw);
    free(body);
    free(outb);
    free(r);
    tw_engine_destroy(e);
    return rc;
}
