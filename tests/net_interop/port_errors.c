/* Bad arguments to the port backends get a negative code and a message
 * naming what was wrong, never a crash.  Needs no root: every case fails
 * before a privileged call. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/portspec.h"
#include "tickwire/port.h"
#include "tw_check.h"

static void expect(int rc, int want, const tw_error *err, const char *needle)
{
    printf("  rc %d: %s\n", rc, err->msg);
    CHECK(rc == want);
    CHECK(err->code == rc);
    CHECK(strstr(err->msg, needle) != NULL);
}

int main(void)
{
    tw_port *p = (tw_port *)&p;
    tw_error err;
    memset(&err, 0, sizeof(err));
    int rc = tw_port_af_packet_open(&p, "twnosuchif0", 256, &err);
    expect(rc, -ENODEV, &err, "twnosuchif0");
    CHECK(p == NULL);
    rc = tw_port_af_packet_open(&p, "", 256, &err);
    expect(rc, -EINVAL, &err, "interface name");
    rc = tw_port_af_packet_open(&p, "a-name-longer-than-ifnamsiz", 256, &err);
    expect(rc, -EINVAL, &err, "interface name");
    rc = tw_port_af_packet_open(&p, "lo", 1u << 30, &err);
    expect(rc, -EINVAL, &err, "frames");
#ifdef TW_HAVE_AF_XDP
    rc = tw_port_af_xdp_open(&p, "twnosuchif0", 0, 256, &err);
    expect(rc, -ENODEV, &err, "twnosuchif0");
    rc = tw_port_af_xdp_open(&p, "lo", 0, 1u << 30, &err);
    expect(rc, -EINVAL, &err, "frames");
#endif
    rc = tw__port_open_spec(&p, "af_packet", 256, &err);
    expect(rc, -EINVAL, &err, "KIND:ARGS");
    rc = tw__port_open_spec(&p, "carrier_pigeon:eth0", 256, &err);
    expect(rc, -EINVAL, &err, "carrier_pigeon");
#ifdef TW_HAVE_AF_XDP
    /* Numbers in a spec are checked, not read as 0. */
    rc = tw__port_open_spec(&p, "af_xdp:lo:one", 256, &err);
    expect(rc, -EINVAL, &err, "queue 'one'");
#endif
#ifdef TW_HAVE_DPDK
    /* memif specs are checked before the EAL sees them. */
    rc = tw__port_open_spec(&p, "memif:", 256, &err);
    expect(rc, -EINVAL, &err, "memif:SOCKET");
    rc = tw__port_open_spec(&p, "memif:/tmp/tw_x.sock,role=boss", 256, &err);
    expect(rc, -EINVAL, &err, "unknown memif option 'role=boss'");
    rc = tw__port_open_spec(&p, "memif:/tmp/tw_x.sock,id=300", 256, &err);
    expect(rc, -EINVAL, &err, "memif id '300'");
    rc = tw__port_open_spec(&p, "memif:/tmp/tw_x.sock,mac=02:00:zz:00:00:01", 256, &err);
    expect(rc, -EINVAL, &err, "mac '02:00:zz:00:00:01'");
    rc = tw__port_open_spec(&p, "memif:/tmp/a b.sock", 256, &err);
    expect(rc, -EINVAL, &err, "has a blank");
    /* The socket's directory: named when it is missing; a relative path
     * is made absolute (DPDK's memif takes absolute ones only), within a
     * unix socket's 107 bytes. */
    rc = tw__port_open_spec(&p, "memif:/nonexistent-tw-dir/m.sock", 256, &err);
    expect(rc, -ENOENT, &err, "the socket's directory '/nonexistent-tw-dir'");
    rc = tw__port_open_spec(&p, "memif:nonexistent-tw-dir/m.sock", 256, &err);
    expect(rc, -ENOENT, &err, "/nonexistent-tw-dir'");
    {
        char longrel[160] = "memif:";
        memset(longrel + 6, 'd', 100);
        strcpy(longrel + 106, "/m.sock");
        rc = tw__port_open_spec(&p, longrel, 256, &err);
        expect(rc, -ENAMETOOLONG, &err, "longer than a unix socket's");
    }
#else
    rc = tw__port_open_spec(&p, "memif:/tmp/tw_x.sock", 256, &err);
    expect(rc, -ENOTSUP, &err, "memif");
#endif
    rc = tw__port_open_spec(&p, "dpdk:0", 256, &err);
#ifdef TW_HAVE_DPDK
    expect(rc, -EINVAL, &err, "dpdk:PORT:EAL ARGS");
    rc = tw__port_open_spec(&p, "dpdk:70000:--no-huge", 256, &err);
    expect(rc, -EINVAL, &err, "port id '70000'");
    /* An EAL option DPDK does not know: the init fails, says so, and a
     * later open in the same process reports the earlier failure. */
    rc = tw_port_dpdk_open(&p, "--no-huge --no-pci --no-shconf --tw-not-an-eal-option", 0, 1024,
                           &err);
    printf("  rc %d: %s\n", rc, err.msg);
    CHECK(rc < 0 && strstr(err.msg, "rte_eal_init") && strstr(err.msg, "--tw-not-an-eal-option"));
    rc = tw_port_dpdk_open(&p, "--no-huge", 0, 1024, &err);
    printf("  rc %d: %s\n", rc, err.msg);
    CHECK(rc < 0 && strstr(err.msg, "failed earlier"));
#else
    expect(rc, -ENOTSUP, &err, "DPDK");
#endif
    return tw_check_done("net_port_errors");
}
