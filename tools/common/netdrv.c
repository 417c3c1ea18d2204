/* Loop helpers: see netdrv.h. */
#include "common/netdrv.h"

#include <poll.h>
#include <unistd.h>

#include "tickwire/clock.h"

void tw__netdrv_idle(tw_net *st, tw_port *port, uint64_t now_ns, uint64_t max_wait_ns)
{
    uint64_t due = tw_net_next_timer_ns(st);
    uint64_t wait = max_wait_ns;
    if (due <= now_ns)
        return;
    if (due - now_ns < wait)
        wait = due - now_ns;
    int fd = port->ops->rx_fd ? port->ops->rx_fd(port) : -1;
    if (fd >= 0) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int ms = (int)((wait + 999999u) / 1000000u);
        poll(&pf, 1, ms > 0 ? ms : 0);
    } else {
        /* DPDK virtual devices have no rx interrupt: nap briefly. */
        usleep(wait < 50000u ? (unsigned)(wait / 1000u) + 1u : 50u);
    }
}

unsigned tw__netdrv_turn(tw_net *st, tw_port *port, int yielding, uint64_t max_wait_ns)
{
    uint64_t now_ns = (uint64_t)tw_clock_now_ns();
    unsigned n = tw_net_poll(st, now_ns);
    if (n || !yielding)
        return n;
    tw__netdrv_idle(st, port, now_ns, max_wait_ns);
    return 0;
}
