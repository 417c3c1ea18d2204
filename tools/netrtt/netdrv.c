/* Loop helpers: see netdrv.h. */
#include "netdrv.h"

#include <poll.h>
#include <time.h>
#include <unistd.h>

uint64_t twd_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

unsigned twd_turn(tw_net *st, tw_port *port, int yielding, uint64_t max_wait_ns)
{
    uint64_t now = twd_now_ns();
    unsigned n = tw_net_poll(st, now);
    if (n || !yielding)
        return n;
    uint64_t due = tw_net_next_timer_ns(st);
    uint64_t wait = max_wait_ns;
    if (due <= now)
        return 0;
    if (due - now < wait)
        wait = due - now;
    int fd = port->ops->rx_fd ? port->ops->rx_fd(port) : -1;
    if (fd >= 0) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int ms = (int)((wait + 999999u) / 1000000u);
        poll(&pf, 1, ms > 0 ? ms : 0);
    } else {
        /* DPDK virtual devices have no rx interrupt: nap briefly. */
        usleep(wait < 50000u ? (unsigned)(wait / 1000u) + 1u : 50u);
    }
    return 0;
}
