/* Port specs: see portspec.h. */
#include "common/portspec.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#ifdef TW_HAVE_DPDK
/* Each DPDK vdev gets its own index so one process can hold several. */
static unsigned dpdk_vdevs;
#endif

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

/* Opens DPDK with the EAL arguments chosen for the user (no hugepages, no
 * PCI, a per-process file prefix so that runs never share EAL state, one
 * lcore of the affinity mask) and the one virtual device DRV<index>,ARGS
 * (the index its own, so one process can hold several). */
static int open_vdev(tw_port **out, const char *drv, const char *args, unsigned frames,
                     tw_error *err)
{
    char eal[1024];
    int n = snprintf(eal, sizeof(eal),
                     "-l %d --no-huge -m 256 --no-pci --no-shconf --file-prefix=tw%d "
                     "--no-telemetry --log-level=*:error --vdev=%s%u,%s",
                     first_cpu(), (int)getpid(), drv, dpdk_vdevs, args);
    if (n < 0 || (size_t)n >= sizeof(eal))
        return tw__err(err, -EINVAL, "dpdk: device arguments too long: '%s'", args);
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

static int open_dpdk_vdev(tw_port **out, const char *drv, const char *ifname, unsigned frames,
                          tw_error *err)
{
    char args[512];
    snprintf(args, sizeof(args), "iface=%.64s%s", ifname,
             !strcmp(drv, "net_af_xdp") ? ",start_queue=0,queue_count=1" : "");
    return open_vdev(out, drv, args, frames, err);
}
#endif

/* xx:xx:xx:xx:xx:xx, hex digits only. */
static int is_mac(const char *s)
{
    if (strlen(s) != 17)
        return 0;
    for (int i = 0; i < 17; i++)
        if (i % 3 == 2 ? s[i] != ':' : !isxdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

int tw__memif_spec_parse(const char *args, tw__memif_spec *m, tw_error *err)
{
    char buf[512];
    memset(m, 0, sizeof(*m));
    m->server = 1;
    if (strlen(args) >= sizeof(buf))
        return tw__err(err, -EINVAL, "port spec 'memif:...': too long");
    strcpy(buf, args);
    char *opts = strchr(buf, ',');
    if (opts)
        *opts++ = 0;
    if (!buf[0])
        return tw__err(err, -EINVAL, "port spec 'memif:%s': expected memif:SOCKET"
                       "[,role=server|client][,id=N][,mac=M]", args);
    if (strpbrk(buf, " \t\n=;"))
        return tw__err(err, -EINVAL, "port spec 'memif:%s': socket path '%s' has a blank, "
                       "'=' or ';'", args, buf);
    if (strlen(buf) >= sizeof(m->socket))
        return tw__err(err, -EINVAL, "port spec 'memif:%s': socket path longer than %zu bytes",
                       args, sizeof(m->socket) - 1);
    strcpy(m->socket, buf);
    int have_mac = 0;
    char *save = NULL;
    for (char *t = opts ? strtok_r(opts, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "role=server")) {
            m->server = 1;
        } else if (!strcmp(t, "role=client")) {
            m->server = 0;
        } else if (!strncmp(t, "id=", 3)) {
            unsigned long id;
            int rc = spec_number(t + 3, 255, "memif id", args, &id, err);
            if (rc)
                return rc;
            m->id = (unsigned)id;
        } else if (!strncmp(t, "mac=", 4)) {
            if (!is_mac(t + 4))
                return tw__err(err, -EINVAL, "port spec 'memif:%s': mac '%s' is not "
                               "xx:xx:xx:xx:xx:xx", args, t + 4);
            strcpy(m->mac, t + 4);
            have_mac = 1;
        } else {
            return tw__err(err, -EINVAL, "port spec 'memif:%s': unknown memif option '%s' "
                           "(role=server|client, id=N, mac=M)", args, t);
        }
    }
    if (!have_mac)
        snprintf(m->mac, sizeof(m->mac), "02:74:77:6d:%02x:%02x", m->id, m->server ? 1u : 2u);
    return 0;
}

#ifdef TW_HAVE_DPDK
/* A server's socket file left by a process that died (kill -9): nobody
 * accepts on it, and DPDK's bind() would fail on it.  Removed only when it
 * is a socket that refuses connections, so a live server's stays. */
static void remove_dead_socket(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode))
        return;
    struct sockaddr_un un;
    memset(&un, 0, sizeof(un));
    un.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(un.sun_path))
        return;
    strcpy(un.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    if (connect(fd, (struct sockaddr *)&un, sizeof(un)) != 0 && errno == ECONNREFUSED)
        (void)unlink(path);
    close(fd);
}

/* memif:SOCKET[,role=server|client][,id=N][,mac=M]: DPDK's net_memif on
 * the unix socket SOCKET (a file path; the server creates it).  The
 * server's default MAC ends in 01, the client's in 02 (the id in the
 * byte before), so the two ends of a pair never share one. */
static int open_memif(tw_port **out, const char *arg, unsigned frames, const char *spec,
                      tw_error *err)
{
    tw__memif_spec m;
    int rc = tw__memif_spec_parse(arg, &m, err);
    if (rc)
        return rc;
    /* net_memif checks the socket's directory with faccessat(-1, ...),
     * which fails on a relative path: give it an absolute one, and name a
     * missing directory ourselves. */
    if (m.socket[0] != '/') {
        char cwd[PATH_MAX], abs[sizeof(m.socket)];
        if (!getcwd(cwd, sizeof(cwd)))
            return tw__err(err, -errno, "port spec '%s': the working directory: %s", spec,
                           strerror(errno));
        if ((size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, m.socket) >= sizeof(abs))
            return tw__err(err, -ENAMETOOLONG, "memif socket path longer than a unix socket's "
                           "%zu bytes once made absolute: %s/%s", sizeof(abs) - 1, cwd, m.socket);
        memcpy(m.socket, abs, sizeof(abs));
    }
    char dir[sizeof(m.socket)];
    memcpy(dir, m.socket, sizeof(dir));
    *strrchr(dir, '/') = 0;
    if (access(dir[0] ? dir : "/", R_OK | W_OK) != 0)
        return tw__err(err, -errno, "port spec '%s': the socket's directory '%s': %s", spec,
                       dir[0] ? dir : "/", strerror(errno));
    if (m.server)
        remove_dead_socket(m.socket);
    char args[768];
    snprintf(args, sizeof(args), "socket=%s,socket-abstract=no,role=%s,id=%u,mac=%s", m.socket,
             m.server ? "server" : "client", m.id, m.mac);
    return open_vdev(out, "net_memif", args, frames, err);
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
    if (!strcmp(buf, "memif")) {
#ifdef TW_HAVE_DPDK
        return open_memif(out, arg, frames, spec, err);
#else
        return tw__err(err, -ENOTSUP, "this build has no memif port (libdpdk not found)");
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
                   "dpdk_af_packet, dpdk_af_xdp, dpdk, memif)", spec, buf);
}
