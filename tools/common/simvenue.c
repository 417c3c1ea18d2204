/* The venue on the simulated network: see simvenue.h. */
#include "common/simvenue.h"

#include <string.h>

int tw__simvenue_open(tw__simvenue *sv, const tw_xchg_cfg *xc, const tw_sim_link_config *link,
                      uint64_t seed, tw_error *err)
{
    static const uint8_t vmac[6] = {2, 0, 0, 0x4d, 0, 2}, tmac[6] = {2, 0, 0, 0x4d, 0, 1};
    memset(sv, 0, sizeof(*sv));
    tw_net_config vc;
    tw_net_config_init(&vc, TW__SIMVENUE_IP);
    vc.isn_secret[0] = seed;
    vc.isn_secret[1] = 99;
    int rc;
    if ((rc = tw_sim_net_open(&sv->net, seed, 8192, err)) != 0 ||
        (rc = tw_port_sim_open(&sv->vport, sv->net, vmac, link, 8192, err)) != 0 ||
        (rc = tw_port_sim_open(&sv->tport, sv->net, tmac, link, 8192, err)) != 0 ||
        (rc = tw_xchg_create(&sv->x, xc, err)) != 0 ||
        (rc = tw_net_open(&sv->vst, sv->vport, &vc, err)) != 0 ||
        (rc = tw_xchg_net_open(&sv->xn, sv->x, sv->vst, TW__SIMVENUE_PORT, 4, 8u << 20, err)) != 0) {
        tw__simvenue_close(sv, 0);
        return rc;
    }
    return 0;
}

unsigned tw__simvenue_turn(tw__simvenue *sv, int64_t now_ns)
{
    unsigned work = tw_sim_net_advance(sv->net, now_ns);
    work += tw_net_poll(sv->vst, now_ns);
    work += tw_xchg_net_poll(sv->xn, now_ns);
    (void)tw_xchg_poll(sv->x, now_ns);
    work += tw_xchg_net_poll(sv->xn, now_ns); /* what the venue just wrote */
    return work;
}

void tw__simvenue_close(tw__simvenue *sv, int64_t now_ns)
{
    if (sv->xn)
        tw_xchg_net_close(sv->xn, now_ns);
    if (sv->vst)
        tw_net_close(sv->vst);
    if (sv->x)
        tw_xchg_destroy(sv->x);
    if (sv->net)
        tw_sim_net_close(sv->net); /* its ports with it */
    memset(sv, 0, sizeof(*sv));
}
