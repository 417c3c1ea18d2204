/* The kernel side of the interop tests and the netrtt benchmark: plain
 * Linux TCP sockets, run inside the peer namespace (ip netns exec).  Every
 * server mode prints "ready" on stdout once it listens, then serves one
 * connection.
 *
 *   kpeer echo PORT [spin]           echo bytes back until EOF (TCP_NODELAY);
 *                                    spin: busy-read (MSG_DONTWAIT), never
 *                                    sleeping in read
 *   kpeer bulk PORT NBYTES SEED      send NBYTES of stream SEED while reading
 *                                    to EOF; print "rx N SHA tx N SHA"
 *   kpeer rst PORT                   read one byte, then close with RST
 *   kpeer rttclient IP PORT N SIZE [block]
 *                                    (client) N round trips of SIZE bytes to
 *                                    an echo server; print "rtt NS..." sorted
 *                                    percentiles: p50 p99 p999 max.  It
 *                                    busy-reads (MSG_DONTWAIT) unless block:
 *                                    then it sleeps in recv like a plain
 *                                    client (SO_BUSY_POLL set either way)
 *   kpeer sendclient IP PORT NBYTES SEED
 *                                    (client) connect, send NBYTES of stream
 *                                    SEED, wait until the kernel holds none
 *                                    of it unacknowledged (SIOCOUTQ 0), close;
 *                                    print "sent N NS" (NS: first byte
 *                                    written to last byte acknowledged)
 * Exit status 0 on success. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tickwire/clock.h"

static int die(const char *what)
{
    fprintf(stderr, "kpeer: %s: %s\n", what, strerror(errno));
    exit(1);
}

static int listen_accept(int port)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0)
        die("socket");
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    if (bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0)
        die("bind");
    if (listen(ls, 4) < 0)
        die("listen");
    printf("ready\n");
    fflush(stdout);
    int s = accept(ls, NULL, NULL);
    if (s < 0)
        die("accept");
    close(ls);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return s;
}

/* SO_BUSY_POLL as netstack.md's baseline asks: 50 us of busy polling in a
 * blocking read before sleeping.  It needs a NAPI id on the socket, which
 * veth without XDP does not give, so on veth it has no effect; set anyway
 * so the baseline is what a user tuning a kernel socket would run. */
static void busy_poll(int s)
{
    int us = 50;
    setsockopt(s, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us));
}

static int mode_echo(int port, int spin)
{
    int s = listen_accept(port);
    busy_poll(s);
    static uint8_t buf[65536];
    for (;;) {
        ssize_t n = recv(s, buf, sizeof(buf), spin ? MSG_DONTWAIT : 0);
        if (n < 0 && errno == EAGAIN && spin)
            continue;
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            break; /* EOF, or the client aborted: both end the session */
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("read");
        }
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(s, buf + off, (size_t)(n - off));
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                die("write");
            }
            off += w;
        }
    }
    close(s);
    return 0;
}

static int mode_bulk(int port, uint64_t nbytes, uint64_t seed)
{
    int s = listen_accept(port);
    tw__sha256 hrx, htx;
    tw__sha256_init(&hrx);
    tw__sha256_init(&htx);
    static uint8_t rbuf[1 << 16], tbuf[1 << 16];
    uint64_t rx = 0, tx = 0;
    size_t tlen = 0, toff = 0;
    int rx_done = 0, tx_done = nbytes == 0;
    if (tx_done)
        shutdown(s, SHUT_WR);
    while (!rx_done || !tx_done) {
        struct pollfd pf = {.fd = s, .events = (short)((rx_done ? 0 : POLLIN) | (tx_done ? 0 : POLLOUT))};
        if (poll(&pf, 1, 60000) <= 0)
            die("poll (60 s without progress)");
        if (pf.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = recv(s, rbuf, sizeof(rbuf), MSG_DONTWAIT);
            if (n == 0)
                rx_done = 1;
            else if (n > 0) {
                tw__sha256_update(&hrx, rbuf, (size_t)n);
                rx += (uint64_t)n;
            } else if (errno != EAGAIN && errno != EINTR)
                die("recv");
        }
        if (!tx_done && (pf.revents & POLLOUT)) {
            if (toff == tlen) {
                uint64_t left = nbytes - tx;
                tlen = left < sizeof(tbuf) ? (size_t)left : sizeof(tbuf);
                tw__stream_fill(seed, tx, tbuf, tlen);
                tw__sha256_update(&htx, tbuf, tlen);
                toff = 0;
            }
            ssize_t w = send(s, tbuf + toff, tlen - toff, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (w > 0) {
                toff += (size_t)w;
                if (toff == tlen) {
                    tx += tlen;
                    if (tx == nbytes) {
                        tx_done = 1;
                        shutdown(s, SHUT_WR);
                    }
                }
            } else if (w < 0 && errno != EAGAIN && errno != EINTR)
                die("send");
        }
    }
    uint8_t d[32];
    char hx[65], ht[65];
    tw__sha256_final(&hrx, d);
    tw__sha256_hex(d, hx);
    tw__sha256_final(&htx, d);
    tw__sha256_hex(d, ht);
    printf("rx %llu %s tx %llu %s\n", (unsigned long long)rx, hx, (unsigned long long)tx, ht);
    fflush(stdout);
    close(s);
    return 0;
}

static int mode_rst(int port)
{
    int s = listen_accept(port);
    uint8_t b;
    if (read(s, &b, 1) != 1)
        die("read");
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(s); /* linger 0: RST instead of FIN */
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int connect_to(const char *ip, int port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        die("socket");
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    busy_poll(s);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
        die("address");
    if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0)
        die("connect");
    return s;
}

static int mode_rttclient(const char *ip, int port, unsigned n, unsigned size, int block)
{
    int s = connect_to(ip, port);
    uint64_t *lat = calloc(n, sizeof(uint64_t));
    uint8_t msg[4096], in[4096];
    if (!lat || size == 0 || size > sizeof(msg))
        die("size");
    for (unsigned i = 0; i < n; i++) {
        tw__stream_fill(7, (uint64_t)i * size, msg, size);
        uint64_t t0 = (uint64_t)tw_clock_now_ns();
        if (write(s, msg, size) != (ssize_t)size)
            die("write");
        size_t got = 0;
        while (got < size) {
            /* Busy-read (the stack's client busy-polls too), or sleep. */
            ssize_t r = recv(s, in + got, size - got, block ? 0 : MSG_DONTWAIT);
            if (r > 0)
                got += (size_t)r;
            else if (r == 0 || (errno != EAGAIN && errno != EINTR))
                die("recv");
        }
        lat[i] = (uint64_t)tw_clock_now_ns() - t0;
        if (memcmp(in, msg, size) != 0) {
            fprintf(stderr, "kpeer: echo mismatch at message %u\n", i);
            return 1;
        }
    }
    close(s);
    qsort(lat, n, sizeof(uint64_t), cmp_u64);
    printf("rtt %llu %llu %llu %llu\n", (unsigned long long)lat[n / 2],
           (unsigned long long)lat[(size_t)((double)n * 0.99)],
           (unsigned long long)lat[(size_t)((double)n * 0.999)], (unsigned long long)lat[n - 1]);
    fflush(stdout);
    free(lat);
    return 0;
}

static int mode_sendclient(const char *ip, int port, uint64_t nbytes, uint64_t seed)
{
    int s = connect_to(ip, port);
    static uint8_t buf[1 << 16];
    int64_t t0 = tw_clock_now_ns();
    for (uint64_t off = 0; off < nbytes;) {
        size_t n = nbytes - off < sizeof(buf) ? (size_t)(nbytes - off) : sizeof(buf);
        tw__stream_fill(seed, off, buf, n);
        for (size_t w = 0; w < n;) {
            ssize_t r = write(s, buf + w, n - w);
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                die("write");
            }
            w += (size_t)r;
        }
        off += n;
    }
    /* Everything written is acknowledged when the send queue is empty;
     * a short sleep between looks keeps this off the CPU the peers share. */
    for (int64_t dl = t0 + 120000000000ll;;) {
        int q = 0;
        if (ioctl(s, SIOCOUTQ, &q) != 0)
            die("SIOCOUTQ");
        if (q == 0)
            break;
        if (tw_clock_now_ns() > dl) {
            fprintf(stderr, "kpeer: %d bytes still unacknowledged after 120 s\n", q);
            return 1;
        }
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    int64_t t1 = tw_clock_now_ns();
    close(s);
    printf("sent %llu %lld\n", (unsigned long long)nbytes, (long long)(t1 - t0));
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 6 && !strcmp(argv[1], "sendclient"))
        return mode_sendclient(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 0),
                               strtoull(argv[5], NULL, 0));
    if (argc >= 3 && !strcmp(argv[1], "echo"))
        return mode_echo(atoi(argv[2]), argc >= 4 && !strcmp(argv[3], "spin"));
    if (argc >= 5 && !strcmp(argv[1], "bulk"))
        return mode_bulk(atoi(argv[2]), strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0));
    if (argc >= 3 && !strcmp(argv[1], "rst"))
        return mode_rst(atoi(argv[2]));
    if (argc >= 6 && !strcmp(argv[1], "rttclient"))
        return mode_rttclient(argv[2], atoi(argv[3]), (unsigned)atoi(argv[4]),
                              (unsigned)atoi(argv[5]), argc >= 7 && !strcmp(argv[6], "block"));
    fprintf(stderr, "usage: kpeer echo PORT [spin] | bulk PORT NBYTES SEED | rst PORT | "
                    "rttclient IP PORT N SIZE [block] | sendclient IP PORT NBYTES SEED\n");
    return 2;
}
