/* A session over the kernel's TCP (engine_internal.h, "transports").
 *
 * One non-blocking socket at a time.  Its descriptor number never changes:
 * a yielding net core waits on it in ppoll() and the reactor's fd list is
 * fixed at start, so each new socket is moved onto a reserved number
 * (dup3) and, when it closes, a never-signalled eventfd takes the number
 * back.  A turn reads until EAGAIN (bounded) and sends what the session
 * wrote with one send(). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "trade/engine_internal.h"

#define READS_PER_TURN 8

typedef struct xtcp {
    tw__xport x; /* first: the ops see a tw__xport */
    struct sockaddr_in addr;
    int placeholder; /* eventfd that holds the reserved number while idle */
} xtcp;

static void park(xtcp *t)
{
    /* dup3 closes the socket on the reserved number and puts the idle
     * eventfd there in one step: the number stays valid for ppoll. */
    TW_VERIFY(dup3(t->placeholder, t->x.fd, O_CLOEXEC) == t->x.fd);
    t->x.state = TW__XP_IDLE;
}

static int tcp_connect(tw__xport *x, int64_t now_ns)
{
    xtcp *t = (xtcp *)x;
    TW_ASSERT(x->state == TW__XP_IDLE);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) {
        snprintf(x->why, sizeof(x->why), "socket: %s", strerror(errno));
        return -errno;
    }
    int one = 1;
    x->rx_drained = 0;
    (void)setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int rc = dup3(s, x->fd, O_CLOEXEC);
    int e = errno;
    close(s);
    if (rc != x->fd) {
        snprintf(x->why, sizeof(x->why), "dup3: %s", strerror(e));
        return -e;
    }
    x->rx_len = 0;
    x->out_off = x->out_len = 0;
    if (connect(x->fd, (struct sockaddr *)&t->addr, sizeof(t->addr)) != 0 &&
        errno != EINPROGRESS) {
        e = errno;
        snprintf(x->why, sizeof(x->why), "connect: %s", strerror(e));
        park(t);
        return -e;
    }
    x->state = TW__XP_CONNECTING;
    x->connect_deadline_ns = now_ns + x->connect_timeout_ns;
    return 0;
}

static void tcp_close(tw__xport *x, int64_t now_ns)
{
    (void)now_ns;
    if (x->state != TW__XP_IDLE)
        park((xtcp *)x);
}

static unsigned tcp_io(tw__xport *x, int64_t now_ns, int64_t *wake_ns)
{
    xtcp *t = (xtcp *)x;
    if (x->state == TW__XP_CONNECTING) {
        /* The connect's completion is POLLOUT, which the reactor's wait
         * does not watch: come back within a millisecond. */
        if (now_ns + 1000000 < *wake_ns)
            *wake_ns = now_ns + 1000000;
        struct pollfd pf = {.fd = x->fd, .events = POLLOUT};
        if (poll(&pf, 1, 0) <= 0) {
            if (now_ns < x->connect_deadline_ns)
                return 0;
            snprintf(x->why, sizeof(x->why), "connect: timed out");
            park(t);
            return TW__XP_EV_DOWN;
        }
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (getsockopt(x->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
            soerr = errno;
        if (soerr) {
            snprintf(x->why, sizeof(x->why), "connect: %s", strerror(soerr));
            park(t);
            return TW__XP_EV_DOWN;
        }
        x->state = TW__XP_UP;
        return TW__XP_EV_UP;
    }
    if (x->state != TW__XP_UP)
        return 0;
    unsigned ev = 0;
    for (int k = 0; k < READS_PER_TURN && x->rx_len < x->rx_cap; k++) {
        size_t room = x->rx_cap - x->rx_len;
        ssize_t n = recv(x->fd, x->rx + x->rx_len, room, 0);
        if (n > 0) {
            if (!(ev & TW__XP_EV_DATA)) {
                /* recv() returned: the kernel did TCP, so both stamps. */
                x->tsc_rx = x->tsc_tcp = tw_tsc_read();
            }
            x->rx_len += (size_t)n;
            x->bytes_in += (uint64_t)n;
            ev |= TW__XP_EV_DATA;
            /* Less than room: the socket was empty then, and another recv
             * now would most likely be EAGAIN (a system call per bar for
             * nothing).  What comes later is the next turn's, or wakes
             * the core's ppoll (level-triggered: nothing is missed). */
            x->rx_drained = (size_t)n < room;
            if (x->rx_drained)
                break;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            x->rx_drained = 1;
            break;
        }
        snprintf(x->why, sizeof(x->why), "%s", n == 0 ? "closed by the peer" : strerror(errno));
        park(t);
        return ev | TW__XP_EV_DOWN;
    }
    return ev;
}

static int tcp_flush(tw__xport *x, int64_t now_ns)
{
    (void)now_ns;
    if (x->state != TW__XP_UP)
        return x->out_len > x->out_off ? -ENOTCONN : 0;
    while (x->out_off < x->out_len) {
        ssize_t n = send(x->fd, x->out + x->out_off, x->out_len - x->out_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0; /* the rest next turn */
        if (n < 0) {
            int e = errno;
            snprintf(x->why, sizeof(x->why), "send: %s", strerror(e));
            return -e;
        }
        x->out_off += (size_t)n;
        x->bytes_out += (uint64_t)n;
    }
    x->out_off = x->out_len = 0;
    return 0;
}

static void tcp_destroy(tw__xport *x)
{
    xtcp *t = (xtcp *)x;
    close(x->fd);
    close(t->placeholder);
    free(x->rx);
    free(x->out);
    free(t);
}

static const tw__xport_ops tcp_ops = {
    .name = "kernel TCP",
    .connect = tcp_connect,
    .io = tcp_io,
    .flush = tcp_flush,
    .close = tcp_close,
    .destroy = tcp_destroy,
};

int tw__xport_tcp_open(tw__xport **out, const char *host, uint16_t port, size_t rx_cap,
                       size_t out_cap, int64_t connect_timeout_ns, tw_error *err)
{
    xtcp *t = calloc(1, sizeof(*t));
    if (!t)
        return tw__err(err, -ENOMEM, "out of memory");
    t->addr.sin_family = AF_INET;
    t->addr.sin_port = htons(port);
    if (inet_pton(AF_INET, host, &t->addr.sin_addr) != 1) {
        /* A name: resolved once, here, never on the path. */
        struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
        int rc = getaddrinfo(host, NULL, &hints, &ai);
        if (rc != 0 || !ai) {
            free(t);
            return tw__err(err, -EINVAL, "host '%s': %s", host,
                                rc ? gai_strerror(rc) : "no IPv4 address");
        }
        t->addr.sin_addr = ((struct sockaddr_in *)ai->ai_addr)->sin_addr;
        freeaddrinfo(ai);
    }
    t->x.ops = &tcp_ops;
    t->x.rx_syscall = 1;
    t->x.connect_timeout_ns = connect_timeout_ns;
    t->x.rx_cap = rx_cap;
    t->x.out_cap = out_cap;
    t->x.rx = malloc(rx_cap);
    t->x.out = malloc(out_cap);
    t->placeholder = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    t->x.fd = t->placeholder >= 0 ? fcntl(t->placeholder, F_DUPFD_CLOEXEC, 0) : -1;
    if (!t->x.rx || !t->x.out || t->placeholder < 0 || t->x.fd < 0) {
        int e = errno ? errno : ENOMEM;
        if (t->x.fd >= 0)
            close(t->x.fd);
        if (t->placeholder >= 0)
            close(t->placeholder);
        free(t->x.rx);
        free(t->x.out);
        free(t);
        return tw__err(err, -e, "kernel TCP transport: %s", strerror(e));
    }
    *out = &t->x;
    return 0;
}
