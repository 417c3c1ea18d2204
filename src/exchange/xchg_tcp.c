/* The venue over kernel TCP (tickwire/exchange.h): a poll() loop around it.
 * What the venue writes during one call (a bar's X and TestRequest to
 * every session, a burst of bars flat out, the answers to a batch of
 * orders) is gathered per connection and sent with one send() when the
 * call returns: one system call per connection per turn, not one per
 * message.  Sockets are non-blocking; what send() does not take waits in
 * that buffer (bounded: past it the session is closed, which is what a
 * trader that stops reading gets); the slow-reader fault leaves a socket
 * out of POLLIN so that the kernel's window fills. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tickwire/clock.h"
#include "tickwire/exchange.h"

#define OUT_CAP (16u << 20)         /* bytes a connection may owe its peer */
#define CLOSE_FLUSH_NS 1000000000ll /* a closed connection's output gets this long */
#define READS_PER_TURN 16

typedef struct kconn {
    int fd;                 /* -1: free slot */
    tw_xchg_conn *xc;       /* NULL once the venue or the peer closed */
    int closing;            /* the venue closed: flush, then close the socket */
    int64_t closing_since_ns;
    char *out;
    size_t out_off, out_len; /* bytes out[out_off .. out_len) not yet sent */
} kconn;

/* Gathers: the loop sends after each venue call (flush_all). */
static int k_write(void *ctx, const char *buf, size_t len)
{
    kconn *c = ctx;
    if (c->fd < 0 || c->closing)
        return -EPIPE;
    if (c->out_len == c->out_off)
        c->out_off = c->out_len = 0;
    if (c->out_off && c->out_len + len > OUT_CAP) {
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        c->out_len -= c->out_off;
        c->out_off = 0;
    }
    if (c->out_len + len > OUT_CAP)
        return -ENOBUFS;
    memcpy(c->out + c->out_len, buf, len);
    c->out_len += len;
    return 0;
}

static void k_close(void *ctx)
{
    kconn *c = ctx;
    c->xc = NULL;
    c->closing = 1;
    c->closing_since_ns = tw_clock_now_ns();
}

static size_t k_backlog(void *ctx)
{
    kconn *c = ctx;
    return c->out_len - c->out_off;
}

/* 0 when the buffer is empty or the socket is full; -1 when it is dead. */
static int flush(kconn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n < 0)
            return -1;
        c->out_off += (size_t)n;
    }
    c->out_off = c->out_len = 0;
    return 0;
}

/* After each venue call: what it wrote goes out (as far as the sockets
 * take it); a socket that fails is gone. */
static void flush_all(tw_xchg *x, kconn *cs, unsigned n, int64_t now_ns);

static void release(kconn *c)
{
    close(c->fd);
    c->fd = -1;
    c->xc = NULL;
    c->closing = 0;
    c->out_off = c->out_len = 0;
}

/* The peer is gone (EOF, error): the venue hears of it, the slot frees. */
static void peer_gone(tw_xchg *x, kconn *c, int64_t now_ns)
{
    if (c->xc)
        tw_xchg_conn_closed(x, c->xc, now_ns);
    release(c);
}

static void flush_all(tw_xchg *x, kconn *cs, unsigned n, int64_t now_ns)
{
    for (unsigned i = 0; i < n; i++)
        if (cs[i].fd >= 0 && cs[i].out_len > cs[i].out_off && flush(&cs[i]) != 0)
            peer_gone(x, &cs[i], now_ns);
}

int tw_xchg_tcp_listen(const char *host, uint16_t port, int *fd_out, uint16_t *bound,
                       tw_error *err)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        return tw__err(err, -EINVAL, "'%s' is not an IPv4 address", host);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 64) != 0) {
        int rc = -errno;
        if (fd >= 0)
            close(fd);
        return tw__err(err, rc, "cannot listen on %s:%u: %s", host, port, strerror(-rc));
    }
    socklen_t al = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &al);
    *bound = ntohs(a.sin_port);
    *fd_out = fd;
    return 0;
}

static void accept_all(tw_xchg *x, int lfd, kconn *cs, unsigned n, int64_t now_ns)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        kconn *c = NULL;
        for (unsigned i = 0; i < n && !c; i++)
            if (cs[i].fd < 0)
                c = &cs[i];
        tw_fix_stream io = {.write = k_write, .close = k_close, .ctx = c};
        if (!c || tw_xchg_conn_open(x, &io, k_backlog, now_ns, &c->xc) != 0) {
            close(fd); /* full: counted by the venue when it was its limit */
            continue;
        }
        c->fd = fd;
        c->closing = 0;
        c->out_off = c->out_len = 0;
    }
}

static void read_conn(tw_xchg *x, kconn *c, int64_t now_ns)
{
    for (int k = 0; k < READS_PER_TURN && c->xc && c->fd >= 0; k++) {
        char *p;
        size_t room = tw_xchg_conn_rx_space(c->xc, &p);
        if (room == 0)
            return;
        ssize_t n = recv(c->fd, p, room, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            peer_gone(x, c, now_ns);
            return;
        }
        tw_xchg_conn_rx_commit(x, c->xc, (size_t)n, now_ns);
        /* Less than room: the socket was empty (a second recv would be an
         * EAGAIN per message); poll() tells us of what comes next. */
        if ((size_t)n < room)
            return;
    }
}

int tw_xchg_tcp_run(tw_xchg *x, int lfd, unsigned max_conns, int busy,
                    const volatile sig_atomic_t *signals, tw_error *err)
{
    unsigned n = max_conns;
    int rc = 0;
    kconn *cs = calloc(n, sizeof(*cs));
    struct pollfd *pf = calloc(n + 1, sizeof(*pf));
    if (!cs || !pf) {
        free(cs);
        free(pf);
        close(lfd);
        return tw__err(err, -ENOMEM, "out of memory for %u connections", n);
    }
    for (unsigned i = 0; i < n; i++)
        cs[i].fd = -1;
    for (unsigned i = 0; i < n; i++) {
        cs[i].out = malloc(OUT_CAP);
        if (!cs[i].out) {
            rc = tw__err(err, -ENOMEM, "out of memory for connection buffers");
            goto out;
        }
    }
    int stopped = 0;
    int64_t done_at = 0;
    for (;;) {
        int64_t now = tw_clock_now_ns();
        if (*signals >= 2)
            break;
        if (*signals && !stopped) {
            tw_xchg_stop(x, now);
            stopped = 1;
        }
        int64_t next = tw_xchg_poll(x, now);
        flush_all(x, cs, n, now);
        if (tw_xchg_done(x) && !done_at)
            done_at = now;
        /* Done: what is still owed to peers gets CLOSE_FLUSH_NS. */
        int owed = 0;
        for (unsigned i = 0; i < n; i++)
            owed |= cs[i].fd >= 0 && cs[i].out_len > cs[i].out_off;
        if (done_at && (!owed || now - done_at > CLOSE_FLUSH_NS))
            break;
        unsigned np = 0;
        pf[np++] = (struct pollfd){.fd = lfd, .events = done_at ? 0 : POLLIN};
        for (unsigned i = 0; i < n; i++) {
            kconn *c = &cs[i];
            pf[np] = (struct pollfd){.fd = -1};
            if (c->fd >= 0) {
                pf[np].fd = c->fd;
                if (c->xc && tw_xchg_conn_read_at(c->xc) <= now)
                    pf[np].events |= POLLIN;
                if (c->out_len > c->out_off)
                    pf[np].events |= POLLOUT;
                if (c->xc && tw_xchg_conn_read_at(c->xc) > now &&
                    tw_xchg_conn_read_at(c->xc) < next)
                    next = tw_xchg_conn_read_at(c->xc);
            }
            np++;
        }
        /* To the microsecond (a paced clock's next bar), at most 100 ms
         * (signals); busy: never asleep, the clock is read every turn. */
        int64_t wait = busy ? 0 : next - now;
        /* Time to spare before the next deadline: a piece of the venue's
         * housekeeping, then look again at once. */
        if (next > now && tw_xchg_idle(x))
            wait = 0;
        if (wait < 0)
            wait = 0;
        if (wait > 100000000)
            wait = 100000000;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)wait};
        if (ppoll(pf, np, &ts, NULL) < 0 && errno != EINTR) {
            rc = tw__err(err, -errno, "ppoll: %s", strerror(errno));
            break;
        }
        now = tw_clock_now_ns();
        if (pf[0].revents & POLLIN)
            accept_all(x, lfd, cs, n, now);
        for (unsigned i = 0; i < n; i++) {
            kconn *c = &cs[i];
            short rev = pf[i + 1].revents;
            if (c->fd < 0 || pf[i + 1].fd != c->fd)
                continue;
            if ((rev & POLLOUT) && flush(c) != 0) {
                peer_gone(x, c, now);
                continue;
            }
            if (rev & (POLLIN | POLLHUP | POLLERR))
                read_conn(x, c, now);
        }
        flush_all(x, cs, n, now);
        for (unsigned i = 0; i < n; i++) {
            kconn *c = &cs[i];
            if (c->fd >= 0 && c->closing &&
                (c->out_len == c->out_off || flush(c) != 0 ||
                 now - c->closing_since_ns > CLOSE_FLUSH_NS))
                release(c);
        }
    }
out:
    for (unsigned i = 0; i < n; i++) {
        if (cs[i].fd >= 0) {
            if (cs[i].xc)
                tw_xchg_conn_closed(x, cs[i].xc, tw_clock_now_ns());
            close(cs[i].fd);
        }
        free(cs[i].out);
    }
    free(cs);
    free(pf);
    close(lfd);
    return rc;
}
