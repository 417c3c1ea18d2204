/* AF_XDP port: an XSK socket (libxdp) over a UMEM allocated at open.
 *
 * The XDP program is our own five-instruction redirect into an XSKMAP
 * (loaded with libbpf), not libxdp's dispatcher: the dispatcher needs a
 * mounted bpffs, which CI machines and containers often lack, and we want
 * every frame of the interface anyway.  The program is attached in native
 * (driver) mode where the driver has it (veth does), else in generic
 * (skb) mode, and the socket binds zero-copy where the driver allows it,
 * else in copy mode (veth: copy).
 *
 * Frames: a UMEM of `frames` frames of 2 KiB.  A frame is in exactly one
 * place: the free stack, the fill ring, the kernel's rx ring, the caller's
 * hands (rx_burst/alloc_burst), the tx ring, or the completion ring.  A
 * packet's cookie is its frame's base address in the UMEM. */
#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "net/port_internal.h"

#define AXP_FRAME 2048u
#define AXP_HEADROOM 0u

typedef struct axp_port {
    tw_port base;
    struct xsk_ring_prod fq, tx;
    struct xsk_ring_cons cq, rx;
    struct xsk_umem *umem;
    struct xsk_socket *xsk;
    uint8_t *area;
    size_t area_len;
    unsigned nframes, ring;
    uint64_t *free_stack;
    unsigned nfree;
    int xsk_fd;
    int ifindex;
    int map_fd, prog_fd;
    uint32_t xdp_flags; /* how the program was attached (for detach) */
    int64_t held;       /* frames owned by the caller */
    unsigned tx_inflight;
    uint64_t wakeups;
} axp_port;

static inline uint64_t frame_base(uint64_t addr)
{
    return addr & ~(uint64_t)(AXP_FRAME - 1u);
}

/* Moves completed tx frames back to the free stack. */
static void reap_cq(axp_port *p)
{
    uint32_t idx;
    unsigned n = xsk_ring_cons__peek(&p->cq, p->ring, &idx);
    for (unsigned i = 0; i < n; i++) {
        TW_VERIFY(p->nfree < p->nframes);
        p->free_stack[p->nfree++] = frame_base(*xsk_ring_cons__comp_addr(&p->cq, idx + i));
    }
    if (n) {
        xsk_ring_cons__release(&p->cq, n);
        TW_VERIFY(p->tx_inflight >= n);
        p->tx_inflight -= n;
    }
}

/* Gives free frames to the kernel for receiving, keeping a few back for
 * alloc_burst so that a burst of received data cannot starve tx. */
static void refill_fq(axp_port *p)
{
    unsigned keep = p->nframes / 8u;
    if (p->nfree <= keep)
        return;
    unsigned want = xsk_prod_nb_free(&p->fq, p->nfree - keep);
    if (want > p->nfree - keep)
        want = p->nfree - keep;
    uint32_t idx;
    if (!want || xsk_ring_prod__reserve(&p->fq, want, &idx) != want)
        return;
    for (unsigned i = 0; i < want; i++)
        *xsk_ring_prod__fill_addr(&p->fq, idx + i) = p->free_stack[--p->nfree];
    xsk_ring_prod__submit(&p->fq, want);
    if (xsk_ring_prod__needs_wakeup(&p->fq)) {
        p->wakeups++;
        recvfrom(p->xsk_fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
    }
}

static unsigned axp_rx_burst(tw_port *bp, tw_pkt *pkts, unsigned n)
{
    axp_port *p = (axp_port *)bp;
    uint32_t idx;
    unsigned got = 0;
    unsigned r = xsk_ring_cons__peek(&p->rx, n, &idx);
    for (unsigned i = 0; i < r; i++) {
        const struct xdp_desc *d = xsk_ring_cons__rx_desc(&p->rx, idx + i);
        uint64_t addr = xsk_umem__add_offset_to_addr(d->addr);
        uint64_t base = frame_base(addr);
        if (d->len < 14u || addr + d->len > base + AXP_FRAME || base >= p->area_len) {
            /* Cannot come from a sane kernel; count it and recycle. */
            p->base.rx_bad++;
            if (base < p->area_len)
                p->free_stack[p->nfree++] = base;
            continue;
        }
        tw_pkt *k = &pkts[got++];
        k->data = p->area + addr;
        k->len = d->len;
        k->room = (uint32_t)(base + AXP_FRAME - addr);
        k->ol_flags = 0;
        k->pad_ = 0;
        k->cookie = (void *)(uintptr_t)base;
    }
    if (r)
        xsk_ring_cons__release(&p->rx, r);
    p->held += got;
    p->base.rx_pkts += got;
    refill_fq(p);
    return got;
}

static void kick_tx(axp_port *p)
{
    if (xsk_ring_prod__needs_wakeup(&p->tx)) {
        p->wakeups++;
        /* EAGAIN/EBUSY/ENOBUFS mean the kernel is still busy with earlier
         * descriptors; they stay on the ring and the next kick sends them. */
        sendto(p->xsk_fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
    }
}

static unsigned axp_tx_burst(tw_port *bp, tw_pkt *pkts, unsigned n)
{
    axp_port *p = (axp_port *)bp;
    reap_cq(p);
    unsigned m = xsk_prod_nb_free(&p->tx, n);
    if (m > n)
        m = n;
    uint32_t idx;
    if (m == 0 || xsk_ring_prod__reserve(&p->tx, m, &idx) != m) {
        p->base.tx_full++;
        kick_tx(p);
        return 0;
    }
    for (unsigned i = 0; i < m; i++) {
        struct xdp_desc *d = xsk_ring_prod__tx_desc(&p->tx, idx + i);
        /* Only frames of this UMEM can be sent (ours, from rx or alloc). */
        TW_VERIFY(pkts[i].data >= p->area && pkts[i].len <= AXP_FRAME &&
                  pkts[i].data + pkts[i].len <= p->area + p->area_len);
        d->addr = (uint64_t)(pkts[i].data - p->area);
        d->len = pkts[i].len;
        d->options = 0;
    }
    xsk_ring_prod__submit(&p->tx, m);
    p->tx_inflight += m;
    p->held -= m;
    p->base.tx_pkts += m;
    if (m < n)
        p->base.tx_full++;
    kick_tx(p);
    return m;
}

static unsigned axp_alloc_burst(tw_port *bp, tw_pkt *pkts, unsigned n)
{
    axp_port *p = (axp_port *)bp;
    if (p->nfree < n)
        reap_cq(p);
    unsigned i = 0;
    for (; i < n && p->nfree > 0; i++) {
        uint64_t base = p->free_stack[--p->nfree];
        pkts[i].data = p->area + base + AXP_HEADROOM;
        pkts[i].len = 0;
        pkts[i].room = AXP_FRAME - AXP_HEADROOM;
        pkts[i].ol_flags = 0;
        pkts[i].pad_ = 0;
        pkts[i].cookie = (void *)(uintptr_t)base;
    }
    p->held += i;
    if (i < n)
        p->base.alloc_fail++;
    return i;
}

static void axp_free_burst(tw_port *bp, tw_pkt *pkts, unsigned n)
{
    axp_port *p = (axp_port *)bp;
    for (unsigned i = 0; i < n; i++) {
        uint64_t base = (uint64_t)(uintptr_t)pkts[i].cookie;
        TW_VERIFY(base < p->area_len && p->nfree < p->nframes);
        p->free_stack[p->nfree++] = base;
    }
    p->held -= n;
}

static void axp_poll(tw_port *bp)
{
    axp_port *p = (axp_port *)bp;
    reap_cq(p);
    refill_fq(p);
    if (p->tx_inflight)
        kick_tx(p);
}

static int axp_rx_fd(tw_port *bp)
{
    return ((axp_port *)bp)->xsk_fd;
}

static void axp_close(tw_port *bp)
{
    axp_port *p = (axp_port *)bp;
    tw__port_check_held(&p->base, p->held, "frames");
    if (p->prog_fd >= 0)
        bpf_xdp_detach(p->ifindex, p->xdp_flags, NULL);
    if (p->xsk)
        xsk_socket__delete(p->xsk);
    if (p->umem)
        xsk_umem__delete(p->umem);
    if (p->prog_fd >= 0)
        close(p->prog_fd);
    if (p->map_fd >= 0)
        close(p->map_fd);
    if (p->area)
        munmap(p->area, p->area_len);
    free(p->free_stack);
    free(p);
}

static const tw_port_ops axp_ops = {
    .name = "af_xdp",
    .rx_burst = axp_rx_burst,
    .tx_burst = axp_tx_burst,
    .alloc_burst = axp_alloc_burst,
    .free_burst = axp_free_burst,
    .poll = axp_poll,
    .rx_fd = axp_rx_fd,
    .close = axp_close,
};

/* r0 = bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS): frames for
 * a queue with no socket go on to the kernel stack. */
static int load_prog(int map_fd)
{
    struct bpf_insn insns[6];
    memset(insns, 0, sizeof(insns));
    insns[0].code = BPF_LDX | BPF_MEM | BPF_W;
    insns[0].dst_reg = BPF_REG_2;
    insns[0].src_reg = BPF_REG_1;
    insns[0].off = offsetof(struct xdp_md, rx_queue_index);
    insns[1].code = BPF_LD | BPF_DW | BPF_IMM; /* 64-bit immediate: two slots */
    insns[1].dst_reg = BPF_REG_1;
    insns[1].src_reg = BPF_PSEUDO_MAP_FD;
    insns[1].imm = map_fd;
    insns[3].code = BPF_ALU64 | BPF_MOV | BPF_K;
    insns[3].dst_reg = BPF_REG_3;
    insns[3].imm = XDP_PASS;
    insns[4].code = BPF_JMP | BPF_CALL;
    insns[4].imm = BPF_FUNC_redirect_map;
    insns[5].code = BPF_JMP | BPF_EXIT;
    return bpf_prog_load(BPF_PROG_TYPE_XDP, "tw_xsk_redir", "GPL", insns, 6, NULL);
}

static unsigned pow2_ceil(unsigned v)
{
    unsigned r = 1;
    while (r < v)
        r <<= 1;
    return r;
}

int tw_port_af_xdp_open(tw_port **out, const char *ifname, unsigned queue_id,
                        unsigned frames, tw_error *err)
{
    *out = NULL;
    if (!ifname || !*ifname || strlen(ifname) >= IFNAMSIZ)
        return tw__err(err, -EINVAL, "af_xdp: bad interface name");
    if (frames > (1u << 18))
        return tw__err(err, -EINVAL, "af_xdp: %u frames is too many", frames);
    frames = pow2_ceil(frames < 256 ? 256 : frames);
    axp_port *p = calloc(1, sizeof(*p));
    if (!p)
        return tw__err(err, -ENOMEM, "af_xdp: out of memory");
    p->base.ops = &axp_ops;
    p->map_fd = p->prog_fd = p->xsk_fd = -1;
    p->nframes = frames;
    p->ring = frames / 2u;
    int rc;
    const char *what;

    p->ifindex = (int)if_nametoindex(ifname);
    if (!p->ifindex) {
        rc = -errno;
        what = "if_nametoindex";
        goto fail;
    }
    p->area_len = (size_t)frames * AXP_FRAME;
    p->area = mmap(NULL, p->area_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p->area == MAP_FAILED) {
        p->area = NULL;
        rc = -errno;
        what = "mmap umem";
        goto fail;
    }
    p->free_stack = calloc(frames, sizeof(uint64_t));
    if (!p->free_stack) {
        rc = -ENOMEM;
        what = "free stack";
        goto fail;
    }
    for (unsigned i = 0; i < frames; i++)
        p->free_stack[i] = (uint64_t)(frames - 1u - i) * AXP_FRAME;
    p->nfree = frames;

    struct xsk_umem_config ucfg = {
        .fill_size = p->ring,
        .comp_size = p->ring,
        .frame_size = AXP_FRAME,
        .frame_headroom = AXP_HEADROOM,
        .flags = 0,
    };
    rc = xsk_umem__create(&p->umem, p->area, p->area_len, &p->fq, &p->cq, &ucfg);
    if (rc) {
        p->umem = NULL;
        what = "xsk_umem__create";
        goto fail;
    }
    struct xsk_socket_config scfg;
    memset(&scfg, 0, sizeof(scfg));
    scfg.rx_size = p->ring;
    scfg.tx_size = p->ring;
    scfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
    scfg.bind_flags = XDP_USE_NEED_WAKEUP | XDP_ZEROCOPY;
    rc = xsk_socket__create(&p->xsk, ifname, queue_id, p->umem, &p->rx, &p->tx, &scfg);
    if (rc) {
        /* veth and most virtual drivers: copy mode only. */
        scfg.bind_flags = XDP_USE_NEED_WAKEUP | XDP_COPY;
        rc = xsk_socket__create(&p->xsk, ifname, queue_id, p->umem, &p->rx, &p->tx, &scfg);
    }
    if (rc) {
        p->xsk = NULL;
        what = "xsk_socket__create";
        goto fail;
    }
    p->xsk_fd = xsk_socket__fd(p->xsk);

    p->map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "tw_xsks", sizeof(int), sizeof(int),
                               queue_id + 1u, NULL);
    if (p->map_fd < 0) {
        rc = -errno;
        what = "bpf_map_create(XSKMAP)";
        goto fail;
    }
    p->prog_fd = load_prog(p->map_fd);
    if (p->prog_fd < 0) {
        rc = -errno;
        what = "bpf_prog_load(XDP)";
        goto fail;
    }
    /* UPDATE_IF_NOEXIST: never replace a program someone else attached. */
    p->xdp_flags = XDP_FLAGS_DRV_MODE;
    rc = bpf_xdp_attach(p->ifindex, p->prog_fd, p->xdp_flags | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
    if (rc && rc != -EBUSY && rc != -EEXIST) {
        p->xdp_flags = XDP_FLAGS_SKB_MODE;
        rc = bpf_xdp_attach(p->ifindex, p->prog_fd, p->xdp_flags | XDP_FLAGS_UPDATE_IF_NOEXIST,
                            NULL);
    }
    if (rc) {
        close(p->prog_fd);
        p->prog_fd = -1;
        what = "bpf_xdp_attach";
        goto fail;
    }
    rc = xsk_socket__update_xskmap(p->xsk, p->map_fd);
    if (rc) {
        what = "xsk_socket__update_xskmap";
        goto fail;
    }

    refill_fq(p);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, ifname, strlen(ifname) + 1);
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0 || ioctl(s, SIOCGIFHWADDR, &ifr) < 0) {
        rc = -errno;
        if (s >= 0)
            close(s);
        what = "SIOCGIFHWADDR";
        goto fail;
    }
    memcpy(p->base.mac, ifr.ifr_hwaddr.sa_data, 6);
    p->base.mtu = 1500;
    if (ioctl(s, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0 && ifr.ifr_mtu < 1500)
        p->base.mtu = (uint16_t)ifr.ifr_mtu;
    close(s);
    p->base.caps = 0;
    *out = &p->base;
    return 0;

fail:
    if (rc > 0)
        rc = -rc;
    axp_close(&p->base);
    return tw__err(err, rc, "af_xdp %s queue %u: %s: %s", ifname, queue_id, what,
                   strerror(-rc));
}
