/* Port specs: see portspec.h. */
#include "common/portspec.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef TW_HAVE_DPDK
/* Each DPDK vdev gets its own index so one process can hold several. */
static unsigned dpdk_vdevs;
#endif

#if defined(TW_HAVE_AF_XDP) || defined(TW_HAVE_DPDK)
/* A decimal number in [0, max] taking all of s: 0 and *v set, or -EINVAL
 * with err naming the spec and what the number is. */
static int spec_number(const char *s, unsigned long max, const char *what, const char *spec,
                       unsigned long *v, tw_error *err)
{
    char *e = NULL;
    errno = 0;
    unsigned long x = *s >= '0' && *s <= '9' ? strtoul(s, &e, 10) : ULONG_MAX;
    if (!e || *e || errno || x > max)
        return tw__err(err, -EINVAL, "port spec '%s': %s '%s' is not a number in [0, %lu]",
                       spec, what, s, max);
    *v = x;
    return 0;
}
#endif

#ifdef TW_HAVE_DPDK
static int first_cpu(void)
{
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof(s), &s) == 0)
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &s))
                return i;
    return 0;
}

static int open_dpdk_vdev(tw_port **out, const char *drv, const char *ifname, unsigned frames,
                          tw_error *err)
{
    char eal[512];
    unsigned k = dpdk_vdevs;
    /* --no-shconf and a per-process prefix: runs never share EAL state. */
    snprintf(eal, sizeof(eal),
             "-l %d --no-huge -m 256 --no-pci --no-shconf --file-prefix=tw%d "
             "--no-telemetry --log-level=*:error "
             "--vdev=%s%u,iface=%s",
             first_cpu(), (int)getpid(), drv, k, ifname);
    if (!strcmp(drv, "net_af_xdp"))
        strncat(eal, ",start_queue=0,queue_count=1", sizeof(eal) - strlen(eal) - 1);
    /* net_af_xdp makes its UMEM from our mempool and wants 1024 mbufs for
     * its fill ring up front: give DPDK a pool well above the rings. */
    if (frames < 8192)
        frames = 8192;
    /* The ethdev of this --vdev, whatever id it got (port_dpdk.c). */
    int rc = tw_port_dpdk_open(out, eal, TW_PORT_DPDK_LAST_VDEV, frames, err);
    if (rc == 0)
        dpdk_vdevs++;
    return rc;
}
#endif

int tw__port_open_spec(tw_port **out, const char *spec, unsigned frames, tw_error *err)
{
    char buf[512];
    if (strlen(spec) >= sizeof(buf))
        return tw__err(err, -EINVAL, "port spec too long");
    strcpy(buf, spec);
    char *arg = strchr(buf, ':');
    if (!arg)
        return tw__err(err, -EINVAL, "port spec '%s': expected KIND:ARGS", spec);
    *arg++ = 0;
    if (!strcmp(buf, "af_packet"))
        return tw_port_af_packet_open(out, arg, frames, err);
    if (!strcmp(buf, "af_xdp")) {
#ifdef TW_HAVE_AF_XDP
        unsigned long q = 0;
        char *c = strchr(arg, ':');
        if (c) {
            *c++ = 0;
            int rc = spec_number(c, UINT_MAX, "queue", spec, &q, err);
            if (rc)
                return rc;
        }
        return tw_port_af_xdp_open(out, arg, (unsigned)q, frames, err);
#else
        return tw__err(err, -ENOTSUP, "this build has no AF_XDP port (libxdp not found)");
#endif
    }
    if (!strncmp(buf, "dpdk", 4)) {
#ifdef TW_HAVE_DPDK
        if (!strcmp(buf, "dpdk_af_packet"))
            return open_dpdk_vdev(out, "net_af_packet", arg, frames, err);
        if (!strcmp(buf, "dpdk_af_xdp"))
            return open_dpdk_vdev(out, "net_af_xdp", arg, frames, err);
        if (!strcmp(buf, "dpdk")) {
            char *c = strchr(arg, ':');
            if (!c)
                return tw__err(err, -EINVAL, "port spec '%s': expected dpdk:PORT:EAL ARGS", spec);
            *c++ = 0;
            unsigned long id;
            /* 0xffff is TW_PORT_DPDK_LAST_VDEV: allowed, it names the last --vdev. */
            int rc = spec_number(arg, 0xffff, "port id", spec, &id, err);
            if (rc)
                return rc;
            return tw_port_dpdk_open(out, c, (uint16_t)id, frames, err);
        }
#else
        return tw__err(err, -ENOTSUP, "this build has no DPDK port (libdpdk not found)");
#endif
    }
    return tw__err(err, -EINVAL, "port spec '%s': unknown kind '%s' (af_packet, af_xdp, "
                   "dpdk_af_packet, dpdk_af_xdp, dpdk)", spec, buf);
}
