/* The stack on a reactor: see netdrv.h. */
#include "common/netdrv.h"

#include "tickwire/clock.h"

uint64_t tw__netdrv_now_ns(void)
{
    return (uint64_t)tw_tsc_to_ns(tw_tsc_default(), tw_tsc_read());
}

/* The driver's bound on this turn's wait; the reactor's own is an hour, so
 * the one the caller gives each turn is what counts. */
static unsigned bound_poll(void *arg, tw_reactor_now *now)
{
    const tw__netdrv *d = arg;
    int64_t w = now->ns + (int64_t)d->max_wait_ns;
    if (w < now->wake_ns)
        now->wake_ns = w;
    return 0;
}

unsigned tw__netdrv_poll(void *arg, tw_reactor_now *now)
{
    tw_net *st = arg;
    unsigned n = tw_net_poll(st, now->ns);
    int64_t due = tw_net_next_timer_ns(st);
    if (due < now->wake_ns)
        now->wake_ns = due;
    return n;
}

int tw__netdrv_add(tw__netdrv *d, tw_net *st, tw_port *port)
{
    int rc = tw_reactor_add_poll(&d->r, 0, tw__netdrv_poll, st);
    int fd = port && port->ops->rx_fd ? port->ops->rx_fd(port) : -1;
    if (rc == 0 && fd >= 0)
        rc = tw_reactor_add_fd(&d->r, 0, fd);
    return rc;
}

int tw__netdrv_init(tw__netdrv *d, tw_net *st, tw_port *port)
{
    tw_reactor_opts o = {.mode = TW_REACTOR_YIELD, .max_wait_ns = 3600ll * 1000000000ll};
    tw_reactor_init(&d->r, &o);
    d->max_wait_ns = 1000000;
    int rc = tw_reactor_add_core(&d->r, -1);
    if (rc < 0)
        return rc;
    rc = tw_reactor_add_poll(&d->r, 0, bound_poll, d);
    return rc ? rc : tw__netdrv_add(d, st, port);
}

unsigned tw__netdrv_turn(tw__netdrv *d, int yielding, uint64_t max_wait_ns)
{
    (void)tw_reactor_set_mode(&d->r, 0, yielding ? TW_REACTOR_YIELD : TW_REACTOR_BUSY);
    d->max_wait_ns = max_wait_ns;
    return tw_reactor_turn(&d->r, 0);
}

void tw__netdrv_run(tw__netdrv *d, int yielding, uint64_t max_wait_ns)
{
    (void)tw_reactor_set_mode(&d->r, 0, yielding ? TW_REACTOR_YIELD : TW_REACTOR_BUSY);
    d->max_wait_ns = max_wait_ns;
    (void)tw_reactor_run(&d->r, 0, NULL); /* not pinned: cannot fail */
}
