/* The C client (client.h).  Depends on the wire part only: the format and
 * codec of wire.h and the ring and descriptor I/O of wire_io.h, never on
 * the server. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tickwire/client.h"
#include "tickwire/wire_io.h"

extern char **environ;

enum { T_UNIX, T_TCP, T_SHM, T_SPAWN };

struct tw_client {
    int kind;
    int rfd, wfd; /* the same socket, or the child's stdout/stdin */
    pid_t child;
    int broken;
    /* shm */
    uint8_t *map;
    size_t map_bytes;
    tw__ring req, rep;
};

#define MAX_IOV 6

size_t tw_client_error_size(void) { return sizeof(tw_error); }

const char *tw_client_transport(const tw_client *c)
{
    static const char *n[] = {"unix", "tcp", "shm", "spawn"};
    return n[c->kind];
}

static tw_client *client_new(int kind)
{
    tw_client *c = calloc(1, sizeof(*c));
    if (c) {
        c->kind = kind;
        c->rfd = c->wfd = -1;
        c->child = -1;
    }
    return c;
}

void tw_client_close(tw_client *c)
{
    if (!c)
        return;
    if (c->map)
        munmap(c->map, c->map_bytes);
    if (c->wfd >= 0 && c->wfd != c->rfd)
        close(c->wfd);
    if (c->rfd >= 0)
        close(c->rfd);
    if (c->child > 0) {
        int st;
        while (waitpid(c->child, &st, 0) < 0 && errno == EINTR)
            ;
    }
    free(c);
}

/* ---- connecting --------------------------------------------------------- */

static int unix_socket(const char *path, tw_error *err)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(a.sun_path))
        return tw__err(err, -ENAMETOOLONG, "socket path too long: %s", path);
    strcpy(a.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return tw__err(err, -errno, "socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        int en = errno;
        close(fd);
        return tw__err(err, -en, "connect %s: %s", path, strerror(en));
    }
    return fd;
}

int tw_client_connect_unix(tw_client **out, const char *path, tw_error *err)
{
    int fd = unix_socket(path, err);
    if (fd < 0)
        return fd;
    tw_client *c = client_new(T_UNIX);
    if (!c) {
        close(fd);
        return tw__err(err, -ENOMEM, "out of memory");
    }
    c->rfd = c->wfd = fd;
    *out = c;
    return 0;
}

int tw_client_connect_tcp(tw_client **out, const char *host, int port, tw_error *err)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (!host || !strcmp(host, "localhost"))
        host = "127.0.0.1";
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        return tw__err(err, -EINVAL, "not an IPv4 address: %s", host);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return tw__err(err, -errno, "socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        int en = errno;
        close(fd);
        return tw__err(err, -en, "connect %s:%d: %s", host, port, strerror(en));
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    tw_client *c = client_new(T_TCP);
    if (!c) {
        close(fd);
        return tw__err(err, -ENOMEM, "out of memory");
    }
    c->rfd = c->wfd = fd;
    *out = c;
    return 0;
}

int tw_client_spawn(tw_client **out, const char *exe, const char *const *extra_args,
                    tw_error *err)
{
    int in[2], outp[2];
    if (pipe2(in, O_CLOEXEC) != 0)
        return tw__err(err, -errno, "pipe: %s", strerror(errno));
    if (pipe2(outp, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return tw__err(err, -errno, "pipe: %s", strerror(errno));
    }
    const char *argv[40] = {exe, "serve", "--stdio"};
    int n = 3;
    for (int i = 0; extra_args && extra_args[i] && n < 39; i++)
        argv[n++] = extra_args[i];
    argv[n] = NULL;
    /* posix_spawn, not fork: glibc implements it with clone(CLONE_VM |
     * CLONE_VFORK), so the cost does not grow with the caller's address
     * space (fork from a large process copies its page tables: ~2x slower
     * than Python's subprocess, which also avoids fork).  The pipes become
     * the child's stdin/stdout through file actions; every other
     * descriptor of ours is O_CLOEXEC (the pipe ends included: dup2 clears
     * the flag on 0 and 1 only). */
    posix_spawn_file_actions_t fa;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
    pid_t pid = -1;
    if (rc == 0)
        rc = posix_spawn(&pid, exe, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        close(in[0]), close(in[1]), close(outp[0]), close(outp[1]);
        return tw__err(err, -rc, "spawning %s: %s", exe, strerror(rc));
    }
    close(in[0]);
    close(outp[1]);
    tw_client *c = client_new(T_SPAWN);
    if (!c) {
        close(in[1]);
        close(outp[0]);
        waitpid(pid, NULL, 0);
        return tw__err(err, -ENOMEM, "out of memory");
    }
    c->wfd = in[1];
    c->rfd = outp[0];
    c->child = pid;
    *out = c;
    return 0;
}

static int client_alive(void *arg)
{
    tw_client *c = arg;
    struct pollfd p = {.fd = c->rfd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
        return -ECONNRESET;
    return 0;
}

/* The server closing mid-reply is a lost connection, whatever was read. */
static int read_exact(int fd, void *p, size_t n)
{
    ssize_t got = tw__read_full(fd, p, n);
    if (got < 0)
        return (int)got;
    return (size_t)got < n ? -ECONNRESET : 0;
}

int tw_client_connect_shm(tw_client **out, const char *path, uint32_t ring_bytes, tw_error *err)
{
    int fd = unix_socket(path, err);
    if (fd < 0)
        return fd;
    uint8_t f[9];
    uint32_t len = sizeof(tw_wire_shm_attach);
    memcpy(f, &len, 4);
    f[4] = TW_OP_SHM_ATTACH;
    memcpy(f + 5, &ring_bytes, 4);
    if (send(fd, f, 9, MSG_NOSIGNAL) != 9) {
        close(fd);
        return tw__err(err, -EIO, "shm attach: cannot write to %s", path);
    }
    union {
        char b[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } cm;
    uint8_t rep[8];
    struct iovec v = {rep, 8};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1, .msg_control = cm.b,
                       .msg_controllen = sizeof(cm.b)};
    ssize_t k = recvmsg(fd, &m, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    int mfd = -1;
    for (struct cmsghdr *h = k > 0 ? CMSG_FIRSTHDR(&m) : NULL; h; h = CMSG_NXTHDR(&m, h))
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
            memcpy(&mfd, CMSG_DATA(h), sizeof(int));
    uint32_t rlen = 0, ring = 0;
    if (k >= 4)
        memcpy(&rlen, rep, 4);
    if (k >= 6 && (rlen & TW_WIRE_ERROR_BIT)) {
        uint16_t code;
        memcpy(&code, rep + 4, 2);
        char msg[256] = {0};
        size_t ml = (rlen & TW_WIRE_LEN_MASK) - 2, have = (size_t)k - 6;
        if (ml > 200)
            ml = 200;
        memcpy(msg, rep + 6, have < ml ? have : ml);
        if (have < ml)
            read_exact(fd, msg + have, ml - have);
        close(fd);
        return tw__err(err, -(TW_EWIRE + code), "%s", msg);
    }
    if (k == 8)
        memcpy(&ring, rep + 4, 4);
    if (k != 8 || rlen != 4 || mfd < 0 || ring < TW_SHM_RING_MIN || ring > TW_SHM_RING_MAX ||
        (ring & (ring - 1))) {
        if (mfd >= 0)
            close(mfd);
        close(fd);
        return tw__err(err, -EPROTO, "shm attach: bad reply from %s", path);
    }
    size_t bytes = tw__shm_map_bytes(ring);
    /* Pre-faulted for the same reason as on the server side. */
    void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, mfd, 0);
    close(mfd);
    tw_client *c = map == MAP_FAILED ? NULL : client_new(T_SHM);
    if (!c) {
        if (map != MAP_FAILED)
            munmap(map, bytes);
        close(fd);
        return tw__err(err, -ENOMEM, "shm attach: cannot map %zu bytes", bytes);
    }
    tw_shm_layout *L = map;
    if (L->magic != TW_SHM_MAGIC || L->version != TW_SHM_VERSION || L->ring_bytes != ring) {
        munmap(map, bytes);
        close(fd);
        free(c);
        return tw__err(err, -EPROTO, "shm attach: bad ring header");
    }
    c->rfd = c->wfd = fd;
    c->map = map;
    c->map_bytes = bytes;
    uint8_t *base = map;
    /* The client spins a little longer than the server: it is the side
     * waiting on a reply it asked for. */
    tw__ring_init(&c->req, &L->req, base + TW_SHM_CTL_BYTES, ring, 100000, client_alive, c);
    tw__ring_init(&c->rep, &L->rep, base + TW_SHM_CTL_BYTES + ring, ring, 100000, client_alive, c);
    *out = c;
    return 0;
}

int tw_client_connect(tw_client **out, const char *address, tw_error *err)
{
    if (!strncmp(address, "unix:", 5))
        return tw_client_connect_unix(out, address + 5, err);
    if (!strncmp(address, "shm:", 4))
        return tw_client_connect_shm(out, address + 4, 0, err);
    if (!strncmp(address, "spawn:", 6))
        return tw_client_spawn(out, address + 6, NULL, err);
    if (!strncmp(address, "tcp:", 4)) {
        char host[256];
        const char *colon = strrchr(address + 4, ':');
        if (!colon || (size_t)(colon - address - 4) >= sizeof(host))
            return tw__err(err, -EINVAL, "bad TCP address %s (want tcp:HOST:PORT)", address);
        memcpy(host, address + 4, (size_t)(colon - address - 4));
        host[colon - address - 4] = 0;
        return tw_client_connect_tcp(out, host, atoi(colon + 1), err);
    }
    return tw__err(err, -EINVAL, "bad address %s (unix:PATH, tcp:HOST:PORT, shm:PATH, spawn:EXE)",
                   address);
}

/* ---- one round trip ----------------------------------------------------- */

/* Writes every iovec.  Pipes raise SIGPIPE on a dead child: block it for
 * the write and swallow a pending one, so the library never kills its
 * caller. */
static int write_all(tw_client *c, struct iovec *v, int n)
{
    sigset_t pipe_set, old;
    int is_sock = c->kind != T_SPAWN;
    if (!is_sock) {
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    }
    int i = 0, rc = 0;
    while (i < n) {
        ssize_t k;
        if (is_sock) {
            struct msghdr m = {.msg_iov = v + i, .msg_iovlen = (size_t)(n - i)};
            k = sendmsg(c->wfd, &m, MSG_NOSIGNAL);
        } else {
            k = writev(c->wfd, v + i, n - i);
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            rc = -errno;
            break;
        }
        tw__iov_consume(v, n, &i, (size_t)k);
        while (i < n && v[i].iov_len == 0)
            i++;
    }
    if (!is_sock) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) > 0)
            ;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    return rc;
}

static int fail(tw_client *c, int rc, tw_error *err, const char *what)
{
    c->broken = 1;
    return tw__err(err, rc, "%s: %s", what, rc == -EPROTO ? "protocol error" : strerror(-rc));
}

/* Turns an error frame body into the return code. */
static int wire_error(tw_client *c, const uint8_t *body, size_t len, tw_error *err)
{
    uint16_t code = 0;
    if (len >= 2)
        memcpy(&code, body, 2);
    if (code == 0 || code >= TW_WERR_COUNT)
        code = TW_WERR_INTERNAL;
    if (code == TW_WERR_BAD_FRAME)
        c->broken = 1;
    size_t ml = len > 2 ? len - 2 : 0;
    if (ml > 190)
        ml = 190;
    return tw__err(err, -(TW_EWIRE + code), "%s: %.*s", tw_wire_strerror(code), (int)ml,
                   (const char *)body + 2);
}

/* One request/reply.  req[0..nreq) is the whole frame (prefix included),
 * hdr_len the fixed part of its body (for ring alignment).  The reply body
 * goes to rep[0..nrep); if var is set the reply length may be anything up
 * to the total of rep (INFO), and *got receives it. */
static int call(tw_client *c, struct iovec *req, int nreq, uint32_t hdr_len, struct iovec *rep,
                int nrep, int var, size_t *got, tw_error *err)
{
    if (c->broken)
        return tw__err(err, -EPIPE, "connection closed after an earlier error");
    size_t want = 0, frame = 0;
    for (int i = 0; i < nrep; i++)
        want += rep[i].iov_len;
    for (int i = 0; i < nreq; i++)
        frame += req[i].iov_len;
    if (c->kind == T_SHM) {
        uint8_t *f;
        int rc = tw__ring_reserve(&c->req, frame, 4 + hdr_len, &f);
        if (rc == -E2BIG)
            return tw__err(err, rc, "a %zu-byte frame exceeds the shm ring's limit of %u bytes "
                                    "(use LOAD_FD or a larger ring)",
                           frame, TW_SHM_MAX_FRAME(c->req.cap));
        if (rc)
            return fail(c, rc, err, "shm request");
        size_t o = 0;
        for (int i = 0; i < nreq; i++) {
            if (req[i].iov_len)
                memcpy(f + o, req[i].iov_base, req[i].iov_len);
            o += req[i].iov_len;
        }
        tw__ring_publish(&c->req);
        const uint8_t *r;
        size_t avail;
        rc = tw__ring_peek(&c->rep, &r, &avail);
        if (rc)
            return fail(c, rc, err, "shm reply");
        uint32_t len;
        memcpy(&len, r, 4);
        size_t blen = len & TW_WIRE_LEN_MASK;
        if (blen + 4 > avail) {
            tw__ring_release(&c->rep);
            return fail(c, -EPROTO, err, "shm reply");
        }
        if (len & TW_WIRE_ERROR_BIT) {
            rc = wire_error(c, r + 4, blen, err);
            tw__ring_release(&c->rep);
            return rc;
        }
        if (var ? blen > want : blen != want) {
            tw__ring_release(&c->rep);
            return fail(c, -EPROTO, err, "shm reply length");
        }
        size_t o2 = 4, left = blen;
        for (int i = 0; i < nrep && left; i++) {
            size_t m = rep[i].iov_len < left ? rep[i].iov_len : left;
            if (m)
                memcpy(rep[i].iov_base, r + o2, m);
            o2 += m;
            left -= m;
        }
        if (got)
            *got = blen;
        tw__ring_release(&c->rep);
        return 0;
    }
    int rc = write_all(c, req, nreq);
    if (rc)
        return fail(c, rc, err, "sending the request");
    /* Read the prefix together with the body, straight into the caller's
     * arrays; an error frame is noticed from the prefix and re-gathered. */
    uint32_t len = 0;
    struct iovec v[MAX_IOV + 1];
    v[0] = (struct iovec){&len, 4};
    int nv = 1;
    if (!var)
        for (int i = 0; i < nrep; i++)
            v[nv++] = rep[i];
    size_t total = 4 + (var ? 0 : want), have = 0;
    int vi = 0;
    while (have < total) {
        ssize_t k = readv(c->rfd, v + vi, nv - vi);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return fail(c, k == 0 ? -ECONNRESET : -errno, err, "reading the reply");
        have += (size_t)k;
        while (k > 0 && vi < nv) {
            if ((size_t)k >= v[vi].iov_len) {
                k -= (ssize_t)v[vi].iov_len;
                v[vi].iov_len = 0;
                vi++;
            } else {
                v[vi].iov_base = (char *)v[vi].iov_base + k;
                v[vi].iov_len -= (size_t)k;
                k = 0;
            }
        }
        if (have >= 4 && (len & TW_WIRE_ERROR_BIT || (!var && len != want)))
            break;
    }
    size_t blen = len & TW_WIRE_LEN_MASK;
    if (len & TW_WIRE_ERROR_BIT) {
        uint8_t msg[512];
        if (blen > sizeof(msg))
            return fail(c, -EPROTO, err, "error frame too long");
        /* Gather the body bytes that landed in the caller's arrays. */
        size_t in = have - 4, o = 0;
        for (int i = 0; i < nrep && o < in; i++) {
            size_t m = rep[i].iov_len < in - o ? rep[i].iov_len : in - o;
            if (m)
                memcpy(msg + o, rep[i].iov_base, m);
            o += m;
        }
        if (in > blen)
            return fail(c, -EPROTO, err, "error frame");
        if ((rc = read_exact(c->rfd, msg + in, blen - in)))
            return fail(c, rc, err, "reading an error frame");
        return wire_error(c, msg, blen, err);
    }
    if (var) {
        if (blen > want)
            return fail(c, -EPROTO, err, "reply larger than the buffer");
        size_t o = 0;
        for (int i = 0; i < nrep && o < blen; i++) {
            size_t m = rep[i].iov_len < blen - o ? rep[i].iov_len : blen - o;
            if ((rc = read_exact(c->rfd, rep[i].iov_base, m)))
                return fail(c, rc, err, "reading the reply");
            o += m;
        }
        if (got)
            *got = blen;
        return 0;
    }
    if (len != want)
        return fail(c, -EPROTO, err, "reply length disagrees with the request");
    if (got)
        *got = blen;
    return 0;
}

/* ---- operations --------------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static int sweep_like(tw_client *c, uint8_t op, const double *close, size_t n_bars,
                      const int64_t *combos, size_t n_combos, struct iovec *rep, int nrep,
                      tw_error *err)
{
    if (n_bars > UINT32_MAX || n_combos > UINT32_MAX ||
        9 + 8 * (uint64_t)n_bars + 48 * (uint64_t)n_combos > TW_WIRE_LEN_MASK)
        return tw__err(err, -E2BIG, "request too large for one frame");
    uint8_t h[13];
    put32(h, (uint32_t)(9 + 8 * n_bars + 48 * n_combos));
    h[4] = op;
    put32(h + 5, (uint32_t)n_bars);
    put32(h + 9, (uint32_t)n_combos);
    struct iovec req[3] = {{h, 13}, {(void *)close, 8 * n_bars}, {(void *)combos, 48 * n_combos}};
    return call(c, req, 3, 9, rep, nrep, 0, NULL, err);
}

int tw_client_echo(tw_client *c, const double *in, size_t n, double *out, tw_error *err)
{
    struct iovec rep[1] = {{out, 8 * n}};
    return sweep_like(c, TW_OP_ECHO, in, n, NULL, 0, rep, 1, err);
}

int tw_client_sweep(tw_client *c, const double *close, size_t n_bars, const int64_t *combos,
                    size_t n_combos, double *pnl, int64_t *trades, tw_error *err)
{
    struct iovec rep[2] = {{pnl, 8 * n_combos}, {trades, 8 * n_combos}};
    return sweep_like(c, TW_OP_SWEEP, close, n_bars, combos, n_combos, rep, 2, err);
}

int tw_client_load(tw_client *c, const double *close, size_t n_bars, uint64_t *dataset,
                   tw_error *err)
{
    if (n_bars > (TW_WIRE_LEN_MASK - 5) / 8)
        return tw__err(err, -E2BIG, "dataset too large for one frame (use load_fd)");
    uint8_t h[9];
    put32(h, (uint32_t)(5 + 8 * n_bars));
    h[4] = TW_OP_LOAD;
    put32(h + 5, (uint32_t)n_bars);
    struct iovec req[2] = {{h, 9}, {(void *)close, 8 * n_bars}};
    struct iovec rep[1] = {{dataset, 8}};
    return call(c, req, 2, 5, rep, 1, 0, NULL, err);
}

int tw_client_sweep_loaded(tw_client *c, uint64_t dataset, const int64_t *combos,
                           size_t n_combos, double *pnl, int64_t *trades, tw_error *err)
{
    if (n_combos > (TW_WIRE_LEN_MASK - 13) / 48)
        return tw__err(err, -E2BIG, "too many combos for one frame");
    uint8_t h[17];
    put32(h, (uint32_t)(13 + 48 * n_combos));
    h[4] = TW_OP_SWEEP_LOADED;
    put64(h + 5, dataset);
    put32(h + 13, (uint32_t)n_combos);
    struct iovec req[2] = {{h, 17}, {(void *)combos, 48 * n_combos}};
    struct iovec rep[2] = {{pnl, 8 * n_combos}, {trades, 8 * n_combos}};
    return call(c, req, 2, 13, rep, 2, 0, NULL, err);
}

int tw_client_ksweep(tw_client *c, const char *kernel, const double *close, size_t n_bars,
                     uint64_t dataset, const double *params, size_t n_params, size_t n_combos,
                     const tw_client_kout *out, tw_error *err)
{
    size_t name_len = kernel ? strlen(kernel) : 0;
    if (name_len == 0 || name_len > 255)
        return tw__err(err, -EINVAL, "KSWEEP: a kernel name of 1..255 bytes");
    if (n_params == 0 || n_params > 16)
        return tw__err(err, -EINVAL, "KSWEEP: n_params %zu outside 1..16", n_params);
    int stats = out->wins != NULL;
    if (stats && (!out->max_drawdown || !out->exposure || !out->final_position))
        return tw__err(err, -EINVAL, "KSWEEP: statistics need wins, max_drawdown, exposure "
                                     "and final_position");
    if (!close)
        n_bars = 0;
    if (n_bars > UINT32_MAX || n_combos > UINT32_MAX ||
        20 + 8 * (uint64_t)n_bars + 8 * (uint64_t)n_params * n_combos + name_len >
            TW_WIRE_LEN_MASK)
        return tw__err(err, -E2BIG, "request too large for one frame");
    uint8_t h[24];
    put32(h, (uint32_t)(20 + 8 * n_bars + 8 * n_params * n_combos + name_len));
    h[4] = TW_OP_KSWEEP;
    h[5] = (uint8_t)((close ? 0 : TW_KSWEEP_LOADED) | (stats ? TW_KSWEEP_STATS : 0));
    h[6] = (uint8_t)name_len;
    h[7] = (uint8_t)n_params;
    put64(h + 8, close ? 0 : dataset);
    put32(h + 16, (uint32_t)n_bars);
    put32(h + 20, (uint32_t)n_combos);
    struct iovec req[4] = {{h, 24},
                           {(void *)close, 8 * n_bars},
                           {(void *)params, 8 * n_params * n_combos},
                           {(void *)kernel, name_len}};
    size_t k8 = 8 * n_combos;
    struct iovec rep[6] = {{out->pnl, k8},          {out->trades, k8},   {out->wins, k8},
                           {out->max_drawdown, k8}, {out->exposure, k8}, {out->final_position, k8}};
    return call(c, req, 4, 20, rep, stats ? 6 : 2, 0, NULL, err);
}

int tw_client_drop(tw_client *c, uint64_t dataset, tw_error *err)
{
    uint8_t h[13];
    put32(h, 9);
    h[4] = TW_OP_DROP;
    put64(h + 5, dataset);
    struct iovec req[1] = {{h, 13}};
    return call(c, req, 1, 9, NULL, 0, 0, NULL, err);
}

int tw_client_info(tw_client *c, char *buf, size_t cap, tw_error *err)
{
    if (cap < 5)
        return tw__err(err, -ENOSPC, "INFO buffer too small");
    uint8_t h[5];
    put32(h, 1);
    h[4] = TW_OP_INFO;
    struct iovec req[1] = {{h, 5}};
    uint32_t jl = 0;
    struct iovec rep[2] = {{&jl, 4}, {buf, cap - 1}};
    size_t got = 0;
    int rc = call(c, req, 1, 1, rep, 2, 1, &got, err);
    if (rc)
        return rc;
    if (got < 4 || jl != got - 4) {
        c->broken = 1;
        return tw__err(err, -EPROTO, "INFO reply's JSON length disagrees with the frame");
    }
    buf[jl] = 0;
    return (int)jl;
}

int tw_client_load_fd(tw_client *c, int fd, uint64_t *dataset, tw_error *err)
{
    if (c->kind != T_UNIX && c->kind != T_SHM)
        return tw__err(err, -EOPNOTSUPP, "LOAD_FD needs the unix or shm transport");
    if (c->broken)
        return tw__err(err, -EPIPE, "connection closed after an earlier error");
    union {
        char b[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } cm;
    memset(&cm, 0, sizeof(cm));
    uint8_t h[5];
    put32(h, 1);
    h[4] = TW_OP_LOAD_FD;
    /* On a socket the descriptor rides with the frame itself; over shm it
     * goes first on the socket as one byte, then the frame in the ring. */
    uint8_t one = 0;
    struct iovec v = c->kind == T_UNIX ? (struct iovec){h, 5} : (struct iovec){&one, 1};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1, .msg_control = cm.b,
                       .msg_controllen = sizeof(cm.b)};
    struct cmsghdr *ch = CMSG_FIRSTHDR(&m);
    ch->cmsg_level = SOL_SOCKET;
    ch->cmsg_type = SCM_RIGHTS;
    ch->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(ch), &fd, sizeof(int));
    if (sendmsg(c->wfd, &m, MSG_NOSIGNAL) != (ssize_t)v.iov_len)
        return fail(c, -errno ? -errno : -EIO, err, "sending the descriptor");
    struct iovec rep[1] = {{dataset, 8}};
    if (c->kind == T_UNIX)
        return call(c, NULL, 0, 1, rep, 1, 0, NULL, err);
    struct iovec req[1] = {{h, 5}};
    return call(c, req, 1, 1, rep, 1, 0, NULL, err);
}

int tw_client_load_memfd(tw_client *c, const double *prices, size_t n_bars, uint64_t *dataset,
                         tw_error *err)
{
    int fd = memfd_create("tickwire-dataset", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return tw__err(err, -errno, "memfd_create: %s", strerror(errno));
    size_t bytes = 8 * n_bars, o = 0;
    int rc = ftruncate(fd, (off_t)bytes) == 0 ? 0 : -errno;
    while (rc == 0 && o < bytes) {
        ssize_t k = pwrite(fd, (const char *)prices + o, bytes - o, (off_t)o);
        if (k <= 0)
            rc = k < 0 ? -errno : -EIO;
        else
            o += (size_t)k;
    }
    /* Sealed: the server may then map it instead of copying. */
    if (rc == 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) != 0)
        rc = -errno;
    if (rc) {
        close(fd);
        return tw__err(err, rc, "preparing the memfd: %s", strerror(-rc));
    }
    rc = tw_client_load_fd(c, fd, dataset, err);
    close(fd);
    return rc;
}
