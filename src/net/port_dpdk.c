/* DPDK port: one ethdev, one rx and one tx queue, zero-copy over rte_mbuf.
 *
 * A tw_pkt wraps an mbuf: cookie = the rte_mbuf *, data =
 * rte_pktmbuf_mtod().  Every mbuf goes back to its mempool on every path:
 * rx_burst hands mbufs to the caller, tx_burst hands them to the PMD (which
 * frees them after sending) or leaves them with the caller, free_burst
 * returns them, and close checks that the pool is whole again.
 *
 * The EAL is initialised once per process, from the first eal_args given.
 * A later open with other --vdev arguments hot-plugs those devices
 * (rte_dev_probe), so one process can drive several virtual ports.  Port
 * id TW_PORT_DPDK_LAST_VDEV (0xffff, never a real port id) selects the
 * ethdev of the last --vdev in eal_args, whatever id it got.
 *
 * net_memif (a shared-memory link to another process) is a cable that can
 * be pulled: its client cannot start while no server listens, and a peer
 * that goes away leaves the link down.  The port opens anyway and watches
 * the link while idle (link_watch, every MEMIF_RETRY_MS at most): a client
 * whose link has been down for MEMIF_HANDSHAKE_CHECKS checks (its server
 * went, or never answered) is stopped and started again, until it is up;
 * the server goes on listening by itself.  Above, TCP sees frames lost. */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_log.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_tcp.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "net/port_internal.h"

#define DPDK_BURST 32u
#define DPDK_DRAIN_MAX 65536u /* frames dropped at open, at most (see open) */
#define TW_PORT_DPDK_LAST_VDEV 0xffffu
#define DPDK_MAX_ARGS 64
#define DPDK_ARGS_LEN 4096
#define MEMIF_RETRY_MS 20u   /* a memif client's reconnect period */
#define MEMIF_IDLE_POLLS 64u /* empty rx bursts between two link checks */
#define MEMIF_HANDSHAKE_CHECKS 10u /* a started client not up after these: again */

typedef struct dpdk_port {
    tw_port base;
    uint16_t port_id;
    struct rte_mempool *mp;
    unsigned mbufs;
    uint64_t tx_offloads;
    int64_t held; /* mbufs owned by the caller */
    uint64_t rx_stale; /* frames queued before open returned, dropped */
    /* net_memif only (watch = 1): the link's state (see the top). */
    int watch, client, started;
    unsigned down_checks; /* link checks down since the last start */
    unsigned idle_polls;
    uint64_t next_check; /* TSC */
    uint64_t reconnects; /* starts after the first */
} dpdk_port;

/* rte_eal_init keeps pointers into argv: the strings live here. */
static char eal_buf[DPDK_ARGS_LEN];
static char *eal_argv[DPDK_MAX_ARGS + 2];
static int eal_state; /* 0 not tried, 1 up, <0 failed with this code */
static char eal_rundir[512];

/* The EAL leaves its runtime directory (/var/run/dpdk/<prefix>) behind even
 * with --no-shconf; remove it at exit when it is empty (rmdir refuses
 * otherwise, so nothing another process uses can go). */
static void remove_rundir(void)
{
    if (eal_rundir[0])
        (void)rmdir(eal_rundir);
}

/* Splits s (whitespace-separated) into argv in buf; returns argc, or
 * -E2BIG when it does not fit (cap bytes, max arguments). */
static int split_args(const char *s, char *buf, size_t cap, char **argv, int max)
{
    size_t n = strlen(s);
    if (n + 1 > cap)
        return -E2BIG;
    memcpy(buf, s, n + 1);
    int argc = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) {
        if (argc >= max)
            return -E2BIG;
        argv[argc++] = t;
    }
    argv[argc] = NULL;
    return argc;
}

static int eal_init_once(const char *eal_args, tw_error *err)
{
    if (eal_state == 1) {
        /* Already up: hot-plug any --vdev of this call not yet present. */
        char buf[DPDK_ARGS_LEN];
        char *argv[DPDK_MAX_ARGS + 1];
        int argc = split_args(eal_args, buf, sizeof(buf), argv, DPDK_MAX_ARGS);
        if (argc < 0)
            return tw__err(err, -E2BIG, "dpdk: EAL argument string too long: '%s'", eal_args);
        for (int i = 0; i < argc; i++) {
            const char *v = NULL;
            if (!strncmp(argv[i], "--vdev=", 7))
                v = argv[i] + 7;
            else if (!strcmp(argv[i], "--vdev") && i + 1 < argc)
                v = argv[++i];
            if (!v)
                continue;
            int r = rte_dev_probe(v);
            if (r < 0 && r != -EEXIST && r != -EALREADY)
                return tw__err(err, r, "dpdk: rte_dev_probe('%s'): %s", v, rte_strerror(-r));
        }
        return 0;
    }
    if (eal_state < 0)
        return tw__err(err, eal_state, "dpdk: EAL initialisation failed earlier in this process");
    eal_argv[0] = (char *)"tickwire";
    int argc = split_args(eal_args, eal_buf, sizeof(eal_buf), eal_argv + 1, DPDK_MAX_ARGS);
    if (argc < 0)
        return tw__err(err, -E2BIG, "dpdk: EAL argument string too long: '%s'", eal_args);
    /* The EAL pins the calling thread to its main lcore; the caller (and
     * the processes it forks) keep the CPU set they had: pinning is the
     * application's decision. */
    cpu_set_t cpus;
    int have_cpus = sched_getaffinity(0, sizeof(cpus), &cpus) == 0;
    int r = rte_eal_init(argc + 1, eal_argv);
    if (have_cpus)
        (void)sched_setaffinity(0, sizeof(cpus), &cpus);
    if (r < 0) {
        int e = rte_errno ? rte_errno : EINVAL;
        eal_state = -e;
        return tw__err(err, -e, "dpdk: rte_eal_init('%s'): %s", eal_args, rte_strerror(e));
    }
    eal_state = 1;
    snprintf(eal_rundir, sizeof(eal_rundir), "%s", rte_eal_get_runtime_dir());
    atexit(remove_rundir);
    return 0;
}

/* Stops the device, quietly: stopping a memif client whose link is down
 * logs an EAL line for each interrupt handle it never registered. */
static void stop_quiet(dpdk_port *p)
{
    uint32_t lvl = rte_log_get_global_level();
    rte_log_set_global_level(RTE_LOG_EMERG);
    (void)rte_eth_dev_stop(p->port_id);
    rte_log_set_global_level(lvl);
}

/* Starts the device, quietly: a memif client's failed connect() is an
 * ERR line of the PMD's each time, and here an expected state. */
static int start_quiet(dpdk_port *p)
{
    uint32_t lvl = rte_log_get_global_level();
    rte_log_set_global_level(RTE_LOG_EMERG);
    int rc = rte_eth_dev_start(p->port_id);
    rte_log_set_global_level(lvl);
    if (rc == 0) {
        if (p->started >= 0)
            p->reconnects++;
        p->started = 1;
        (void)rte_eth_promiscuous_enable(p->port_id);
    }
    return rc;
}

/* The memif link's upkeep, at most every MEMIF_RETRY_MS (see the top). */
static void link_watch(dpdk_port *p)
{
    uint64_t now = rte_rdtsc();
    if (now < p->next_check)
        return;
    p->next_check = now + rte_get_tsc_hz() / 1000u * MEMIF_RETRY_MS;
    if (p->started <= 0) {
        (void)start_quiet(p);
        return;
    }
    struct rte_eth_link link;
    memset(&link, 0, sizeof(link));
    if (rte_eth_link_get_nowait(p->port_id, &link) != 0)
        return;
    if (link.link_status == RTE_ETH_LINK_UP) {
        p->down_checks = 0;
        return;
    }
    /* The server went, or never answered: connect again, but not at once.
     * The PMD's interrupt thread tears the link down by itself when the
     * server's socket closes, and a stop from this thread meanwhile races
     * it in DPDK 22.11 (its disconnect frees what the other is using; the
     * interrupt thread has been seen to crash the process so): the link
     * stays down MEMIF_HANDSHAKE_CHECKS checks first either way. */
    if (p->client && ++p->down_checks >= MEMIF_HANDSHAKE_CHECKS) {
        p->down_checks = 0;
        stop_quiet(p);
        p->started = 0;
        (void)start_quiet(p);
    }
}

static unsigned dp_rx_burst(tw_port *bp, tw_pkt *pkts, unsigned n)
{
    dpdk_port *p = (dpdk_port *)bp;
    struct rte_mbuf *m[DPDK_BURST];
    unsigned got = 0;
    if (p->watch) {
        if (++p->idle_polls >= MEMIF_IDLE_POLLS) {
            p->idle_polls = 0;
            link_watch(p);
        }
        if (p->started <= 0)
            return 0;
    }
    while (got < n) {
        unsigned want = n - got < DPDK_BURST ? n - got : DPDK_BURST;
        unsigned r = rte_eth_rx_burst(p->port_id, 0, m, (uint16_t)want);
        for (unsigned i = 0; i < r; i++) {
            struct rte_mbuf *b = m[i];
            if (b->nb_segs != 1 || b->data_len < 14u) {
                /* A chained mbuf cannot be one (pointer, length) view; the
                 * MTU keeps them from happening, so this is a count. */
                p->base.rx_bad++;
                rte_pktmbuf_free(b);
                continue;
            }
            tw_pkt *k = &pkts[got++];
            p->idle_polls = 0;
            k->data = rte_pktmbuf_mtod(b, uint8_t *);
            k->len = b->data_len;
            k->room = (uint32_t)(b->data_len + rte_pktmbuf_tailroom(b));
            uint32_t fl = 0;
            if ((b->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_GOOD)
                fl |= TW_PKT_RX_IP_CKSUM_GOOD;
            if ((b->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
                fl |= TW_PKT_RX_L4_CKSUM_GOOD;
            k->ol_flags = fl;
            k->pad_ = 0;
            k->cookie = b;
            p->held++;
        }
        if (r < want)
            break;
    }
    p->base.rx_pkts += got;
    return got;
}

/* Prepares the mbuf's offload request: DPDK wants l2/l3 lengths and, for
 * TCP checksum offload, the pseudo-header sum in the TCP checksum field. */
static void tx_offload(dpdk_port *p, struct rte_mbuf *b, uint32_t fl)
{
    if (!(fl & (TW_PKT_TX_IP_CKSUM | TW_PKT_TX_TCP_CKSUM)) || b->data_len < 34u)
        return;
    uint8_t *d = rte_pktmbuf_mtod(b, uint8_t *);
    struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(d + 14);
    unsigned ihl = (ip->version_ihl & 0xfu) * 4u;
    b->l2_len = 14;
    b->l3_len = ihl;
    b->ol_flags |= RTE_MBUF_F_TX_IPV4;
    if ((fl & TW_PKT_TX_IP_CKSUM) && (p->tx_offloads & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM)) {
        b->ol_flags |= RTE_MBUF_F_TX_IP_CKSUM;
        ip->hdr_checksum = 0;
    }
    if ((fl & TW_PKT_TX_TCP_CKSUM) && (p->tx_offloads & RTE_ETH_TX_OFFLOAD_TCP_CKSUM) &&
        b->data_len >= 14u + ihl + 20u) {
        struct rte_tcp_hdr *t = (struct rte_tcp_hdr *)((uint8_t *)ip + ihl);
        b->ol_flags |= RTE_MBUF_F_TX_TCP_CKSUM;
        t->cksum = rte_ipv4_phdr_cksum(ip, b->ol_flags);
    }
}

static unsigned dp_tx_burst(tw_port *bp, tw_pkt *pkts, unsigned n)
{
    dpdk_port *p = (dpdk_port *)bp;
    struct rte_mbuf *m[DPDK_BURST];
    unsigned done = 0;
    if (p->watch && p->started <= 0) {
        p->base.tx_full++; /* no link: the frames stay the caller's */
        return 0;
    }
    while (done < n) {
        unsigned want = n - done < DPDK_BURST ? n - done : DPDK_BURST;
        for (unsigned i = 0; i < want; i++) {
            tw_pkt *k = &pkts[done + i];
            struct rte_mbuf *b = k->cookie;
            /* The caller may have moved data inside the buffer (an rx
             * frame echoed back): re-derive the mbuf's view from it. */
            uint8_t *base = (uint8_t *)b->buf_addr;
            TW_VERIFY(k->data >= base && k->data + k->len <= base + b->buf_len);
            b->data_off = (uint16_t)(k->data - base);
            b->data_len = (uint16_t)k->len;
            b->pkt_len = k->len;
            b->ol_flags = 0;
            tx_offload(p, b, k->ol_flags);
            m[i] = b;
        }
        unsigned r = rte_eth_tx_burst(p->port_id, 0, m, (uint16_t)want);
        done += r;
        p->held -= r;
        p->base.tx_pkts += r;
        if (r < want) {
            p->base.tx_full++;
            break; /* pkts[done..] still belong to the caller */
        }
    }
    return done;
}

static unsigned dp_alloc_burst(tw_port *bp, tw_pkt *pkts, unsigned n)
{
    dpdk_port *p = (dpdk_port *)bp;
    unsigned got = 0;
    while (got < n) {
        struct rte_mbuf *m[DPDK_BURST];
        unsigned want = n - got < DPDK_BURST ? n - got : DPDK_BURST;
        if (rte_pktmbuf_alloc_bulk(p->mp, m, want) != 0) {
            /* Bulk is all-or-nothing; fall back to one at a time. */
            want = 0;
            while (got + want < n && want < DPDK_BURST && (m[want] = rte_pktmbuf_alloc(p->mp)))
                want++;
            if (want == 0)
                break;
        }
        for (unsigned i = 0; i < want; i++) {
            tw_pkt *k = &pkts[got + i];
            k->data = rte_pktmbuf_mtod(m[i], uint8_t *);
            k->len = 0;
            k->room = rte_pktmbuf_tailroom(m[i]);
            k->ol_flags = 0;
            k->pad_ = 0;
            k->cookie = m[i];
        }
        got += want;
    }
    p->held += got;
    if (got < n)
        p->base.alloc_fail++;
    return got;
}

static void dp_free_burst(tw_port *bp, tw_pkt *pkts, unsigned n)
{
    dpdk_port *p = (dpdk_port *)bp;
    struct rte_mbuf *m[DPDK_BURST];
    unsigned done = 0;
    while (done < n) {
        unsigned k = n - done < DPDK_BURST ? n - done : DPDK_BURST;
        for (unsigned i = 0; i < k; i++)
            m[i] = pkts[done + i].cookie;
        rte_pktmbuf_free_bulk(m, k);
        done += k;
    }
    p->held -= n;
}

static void dp_poll(tw_port *bp)
{
    dpdk_port *p = (dpdk_port *)bp;
    /* Sent mbufs go back to the pool without waiting for the tx ring to
     * wrap (PMDs that hold them until then: ixgbe, i40e...). */
    rte_eth_tx_done_cleanup(p->port_id, 0, 0);
}

static int dp_rx_fd(tw_port *bp)
{
    (void)bp;
    /* Yielding mode on DPDK would need rx interrupts, which the virtual
     * devices here do not offer: the reactor polls with short sleeps. */
    return -1;
}

static void dp_close(tw_port *bp)
{
    dpdk_port *p = (dpdk_port *)bp;
    if (!p->watch || p->started > 0)
        rte_eth_dev_stop(p->port_id);
    rte_eth_dev_close(p->port_id);
    if (p->mp) {
        unsigned in_use = rte_mempool_in_use_count(p->mp);
        if (in_use != 0 || p->held != 0) {
            /* The caller still holds mbufs: leave the pool alive rather than
             * let those pointers dangle, and say so. */
            tw__port_leak(&p->base, in_use,
                          "%u mbufs of port %u not returned (%lld held by the caller)", in_use,
                          p->port_id, (long long)p->held);
        } else {
            rte_mempool_free(p->mp);
        }
    }
    free(p);
}

static const tw_port_ops dp_ops = {
    .name = "dpdk",
    .rx_burst = dp_rx_burst,
    .tx_burst = dp_tx_burst,
    .alloc_burst = dp_alloc_burst,
    .free_burst = dp_free_burst,
    .poll = dp_poll,
    .rx_fd = dp_rx_fd,
    .close = dp_close,
};

int tw_port_dpdk_open(tw_port **out, const char *eal_args, uint16_t port_id,
                      unsigned mbufs, tw_error *err)
{
    *out = NULL;
    if (!eal_args)
        eal_args = "";
    int rc = eal_init_once(eal_args, err);
    if (rc < 0)
        return rc;
    if (port_id == TW_PORT_DPDK_LAST_VDEV) {
        const char *v = NULL;
        for (const char *s = strstr(eal_args, "--vdev="); s; s = strstr(s + 7, "--vdev="))
            v = s + 7;
        char name[RTE_DEV_NAME_MAX_LEN];
        size_t n = v ? strcspn(v, ", \t\n") : 0;
        if (!v || n == 0 || n >= sizeof(name))
            return tw__err(err, -EINVAL, "dpdk: no --vdev=NAME in '%s'", eal_args);
        memcpy(name, v, n);
        name[n] = 0;
        if (rte_eth_dev_get_port_by_name(name, &port_id) != 0)
            return tw__err(err, -ENODEV, "dpdk: vdev '%s' has no ethdev", name);
    }
    if (!rte_eth_dev_is_valid_port(port_id))
        return tw__err(err, -ENODEV, "dpdk: no ethdev with port id %u (%u ports; eal '%s')",
                       port_id, rte_eth_dev_count_avail(), eal_args);
    if (mbufs < 512)
        mbufs = 512;
    dpdk_port *p = calloc(1, sizeof(*p));
    if (!p)
        return tw__err(err, -ENOMEM, "dpdk: out of memory");
    p->base.ops = &dp_ops;
    p->port_id = port_id;
    p->mbufs = mbufs;
    const char *what;

    struct rte_eth_dev_info info;
    rc = rte_eth_dev_info_get(port_id, &info);
    if (rc) {
        what = "rte_eth_dev_info_get";
        goto fail_nopool;
    }
    int socket = rte_eth_dev_socket_id(port_id);
    if (socket < 0)
        socket = (int)rte_socket_id();
    char name[RTE_MEMPOOL_NAMESIZE];
    snprintf(name, sizeof(name), "tw_mbuf_p%u", port_id);
    p->mp = rte_pktmbuf_pool_create(name, mbufs, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, socket);
    if (!p->mp) {
        rc = -rte_errno;
        what = "rte_pktmbuf_pool_create";
        goto fail_nopool;
    }

    struct rte_eth_conf conf;
    memset(&conf, 0, sizeof(conf));
    const uint64_t rx_ck = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_TCP_CKSUM;
    const uint64_t tx_ck = RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_TCP_CKSUM;
    if ((info.rx_offload_capa & rx_ck) == rx_ck) {
        conf.rxmode.offloads |= rx_ck;
        p->base.caps |= TW_PORT_CAP_RX_CKSUM;
    }
    if ((info.tx_offload_capa & tx_ck) == tx_ck) {
        conf.txmode.offloads |= tx_ck;
        p->tx_offloads = tx_ck;
        p->base.caps |= TW_PORT_CAP_TX_CKSUM;
    }
    rc = rte_eth_dev_configure(port_id, 1, 1, &conf);
    if (rc) {
        what = "rte_eth_dev_configure";
        goto fail;
    }
    /* A quarter of the pool for each ring leaves half for the caller. */
    uint16_t nb_rxd = 1024;
    while (nb_rxd > 64 && nb_rxd > mbufs / 4u)
        nb_rxd /= 2;
    uint16_t nb_txd = nb_rxd;
    rc = rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &nb_rxd, &nb_txd);
    if (rc) {
        what = "rte_eth_dev_adjust_nb_rx_tx_desc";
        goto fail;
    }
    if (nb_rxd + nb_txd + 2u * DPDK_BURST >= mbufs) {
        rc = -ENOBUFS;
        what = "mbuf count (rx + tx descriptors need more)";
        goto fail;
    }
    rc = rte_eth_rx_queue_setup(port_id, 0, nb_rxd, (unsigned)socket, NULL, p->mp);
    if (rc) {
        what = "rte_eth_rx_queue_setup";
        goto fail;
    }
    rc = rte_eth_tx_queue_setup(port_id, 0, nb_txd, (unsigned)socket, NULL);
    if (rc) {
        what = "rte_eth_tx_queue_setup";
        goto fail;
    }
    if (info.driver_name && !strcmp(info.driver_name, "net_memif")) {
        const struct rte_devargs *da = info.device ? rte_dev_devargs(info.device) : NULL;
        p->watch = 1;
        p->client = da && da->args && strstr(da->args, "role=client") != NULL;
        p->started = -1; /* the first start is no reconnect */
        rc = start_quiet(p);
        if (rc && !p->client) {
            what = "rte_eth_dev_start";
            goto fail;
        }
        rc = 0; /* a client with no server yet: link_watch connects it */
    } else {
        rc = rte_eth_dev_start(port_id);
        if (rc) {
            what = "rte_eth_dev_start";
            goto fail;
        }
    }
    /* Not every virtual device has promiscuous mode; unicast to our own
     * MAC is all the stack needs. */
    (void)rte_eth_promiscuous_enable(port_id);
    /* Whatever the queue holds now came before the port was ours, and
     * some of it not from this device at all: DPDK 22.11's net_af_packet
     * opens its socket with ETH_P_ALL and binds it to the interface only
     * later, so frames of every interface (loopback TCP, other veths)
     * land in its ring in between (the probe runs in rte_eal_init or
     * rte_dev_probe, long before this).  bind() waits for deliveries in
     * flight (synchronize_net), so one drain here takes all of them.
     * Bounded: a live NIC keeps its queue filling.  (A memif client not
     * yet connected has no queue to drain.) */
    while (p->rx_stale < DPDK_DRAIN_MAX && (!p->watch || p->started > 0)) {
        struct rte_mbuf *m[DPDK_BURST];
        uint16_t r = rte_eth_rx_burst(port_id, 0, m, DPDK_BURST);
        if (r == 0)
            break;
        rte_pktmbuf_free_bulk(m, r);
        p->rx_stale += r;
    }
    struct rte_ether_addr mac;
    rc = rte_eth_macaddr_get(port_id, &mac);
    if (rc) {
        what = "rte_eth_macaddr_get";
        goto fail;
    }
    memcpy(p->base.mac, mac.addr_bytes, 6);
    uint16_t mtu = 1500;
    if (rte_eth_dev_get_mtu(port_id, &mtu) != 0 || mtu == 0 || mtu > 1500)
        mtu = 1500;
    p->base.mtu = mtu;
    *out = &p->base;
    return 0;

fail:
    /* Close before freeing the pool: the rx queue may hold its mbufs. */
    rte_eth_dev_stop(port_id);
    rte_eth_dev_close(port_id);
    rte_mempool_free(p->mp);
fail_nopool:
    free(p);
    if (rc > 0)
        rc = -rc;
    if (rc == 0)
        rc = -EIO;
    return tw__err(err, rc, "dpdk port %u: %s: %s", port_id, what, rte_strerror(-rc));
}
