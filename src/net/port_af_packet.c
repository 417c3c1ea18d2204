/* AF_PACKET port: TPACKET_V3 mmap rx ring, tx by sendmmsg() with
 * PACKET_QDISC_BYPASS from a pool of buffers allocated at open.
 *
 * Receive latency.  TPACKET_V3 hands whole blocks to user space: a block
 * is marked TP_STATUS_USER (and a poll()ing reader woken) only when it is
 * full or when its retire timer fires, so a reader that waits for the
 * block status adds up to the timer's period to every sparse packet.  The
 * timer is not free either: at 1 ms it cost a busy-polled round trip ~25 us
 * every millisecond (p99 of a 7 us echo went to 18 us).  So it runs every
 * AFP_RETIRE_MS (32 ms), and a yielding loop bounds its own wait on rx_fd
 * (tw__netdrv_turn takes a bound); a busy reader does not need it at all, since
 * this reader does not wait for blocks:
 * it follows the kernel inside the block it is filling.  For V3 the kernel
 * copies the frame (a function call: a compiler barrier), then ORs
 * TP_STATUS_USER into the packet header's tp_status and stores tp_len,
 * tp_snaplen, tp_mac and tp_net (net/packet/af_packet.c, tpacket_rcv).
 * Those five stores have no barrier between them, so the compiler may
 * emit them in any order: a reader that trusted tp_status (or tp_net)
 * alone read half-written headers about once in 10,000 packets, dropped
 * the frame, and TCP waited an RTO for it.  Every block's packet area is
 * zeroed before it is given back to the kernel (and the ring starts
 * zeroed), and each of the five fields is non-zero in a complete header,
 * so the reader takes a packet only when all of them are non-zero, or
 * once the kernel has closed the block (prb_close_block runs after every
 * copy into the block has finished).  The block status and num_pkts
 * remain the authority on where a block ends.  x86 stores are seen in
 * program order (TSO), which this relies on with the acquire loads below.
 *
 * Ownership: an rx packet points into its ring block; the block goes back
 * to the kernel once the reader has moved past it and every packet taken
 * from it has been freed (or transmitted: sendmmsg copies synchronously).
 * A packet's cookie tags which one it is: odd = ring block, even = tx pool
 * buffer. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/port_internal.h"

#define AFP_BLOCK_SIZE (1u << 15)  /* 32 KiB: ~20 full frames, many small */
#define AFP_FRAME_SIZE 2048u       /* tp_frame_size (a hint for V3) */
#define AFP_TX_BUF 2048u           /* one tx pool buffer */
#define AFP_TX_BATCH 64u           /* sendmmsg batch */
#define AFP_RETIRE_MS 32u          /* block retire timer (see top) */

/* Offset of the first packet in a block (BLK_PLUS_PRIV(0) in the kernel). */
#define AFP_FIRST_OFF ((uint32_t)((sizeof(struct tpacket_block_desc) + 7u) & ~7u))

typedef struct afp_port {
    tw_port base;
    int fd;
    int ifindex;
    uint8_t *ring;
    size_t ring_len;
    unsigned nblocks;
    /* Reader position: the block being read, how many packets of it were
     * consumed and the offset of the next one (AFP_BLOCK_SIZE = past the
     * last one). */
    unsigned cur;
    uint32_t cur_consumed;
    uint32_t cur_off;
    uint32_t *blk_out;  /* packets of each block still owned by the caller */
    uint8_t *blk_done;  /* the reader has moved past the block */
    /* tx pool */
    uint8_t *tx_mem;
    uint32_t *tx_free;
    unsigned tx_nfree, tx_n;
    struct mmsghdr msgs[AFP_TX_BATCH];
    struct iovec iov[AFP_TX_BATCH];
    struct sockaddr_ll sll;
    /* buffers held by the caller (rx + alloc - freed - sent) */
    int64_t held;
    uint64_t tx_err;
} afp_port;

static inline struct tpacket_block_desc *blk(afp_port *p, unsigned b)
{
    return (struct tpacket_block_desc *)(p->ring + (size_t)b * AFP_BLOCK_SIZE);
}

static void release_block(afp_port *p, unsigned b)
{
    struct tpacket_block_desc *bd = blk(p, b);
    uint32_t len = bd->hdr.bh1.blk_len;
    if (len > AFP_BLOCK_SIZE)
        len = AFP_BLOCK_SIZE;
    /* Zero what the kernel wrote so that the reader's "tp_status and tp_net
     * non-zero" test only ever sees headers of the next round. */
    if (len > AFP_FIRST_OFF)
        memset((uint8_t *)bd + AFP_FIRST_OFF, 0, len - AFP_FIRST_OFF);
    p->blk_done[b] = 0;
    /* Release pairs with the kernel's read of block_status in
     * prb_dispatch_next_block / prb_queue_frozen. */
    __atomic_store_n(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
}

static void put_rx(afp_port *p, unsigned b)
{
    TW_VERIFY(b < p->nblocks && p->blk_out[b] > 0);
    if (--p->blk_out[b] == 0 && p->blk_done[b])
        release_block(p, b);
}

static void put_buf(afp_port *p, void *cookie)
{
    uintptr_t c = (uintptr_t)cookie;
    if (c & 1u) {
        put_rx(p, (unsigned)(c >> 1) - 1u);
    } else {
        unsigned i = (unsigned)(c >> 1) - 1u;
        TW_VERIFY(i < p->tx_n && p->tx_nfree < p->tx_n);
        p->tx_free[p->tx_nfree++] = i;
    }
    p->held--;
}

static unsigned afp_rx_burst(tw_port *bp, tw_pkt *pkts, unsigned n)
{
    afp_port *p = (afp_port *)bp;
    unsigned got = 0;
    /* Bounded: each pass consumes a packet or finishes a block, and a
     * block is finished at most once per lap of the ring. */
    for (unsigned guard = 0; guard < n + p->nblocks + 1u; guard++) {
        struct tpacket_block_desc *bd = blk(p, p->cur);
        /* Acquire pairs with the kernel's smp_wmb + store in prb_flush_block. */
        uint32_t bst = __atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE);
        if ((bst & TP_STATUS_USER) && p->cur_consumed >= bd->hdr.bh1.num_pkts) {
            /* The block is closed and read to its end: move on. */
            unsigned b = p->cur;
            p->blk_done[b] = 1;
            if (p->blk_out[b] == 0)
                release_block(p, b);
            p->cur = (p->cur + 1u) % p->nblocks;
            p->cur_consumed = 0;
            p->cur_off = AFP_FIRST_OFF;
            continue;
        }
        if (got == n)
            break;
        if (p->cur_off + sizeof(struct tpacket3_hdr) > AFP_BLOCK_SIZE)
            break; /* wait for the block to close */
        struct tpacket3_hdr *h = (struct tpacket3_hdr *)((uint8_t *)bd + p->cur_off);
        /* Acquire loads pair with the kernel's stores after the frame
         * copy; the header is complete when all five are non-zero or the
         * block is closed (see top). */
        uint32_t st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
        uint32_t len = __atomic_load_n(&h->tp_len, __ATOMIC_ACQUIRE);
        uint32_t snap = __atomic_load_n(&h->tp_snaplen, __ATOMIC_ACQUIRE);
        uint32_t mac = __atomic_load_n(&h->tp_mac, __ATOMIC_ACQUIRE);
        uint32_t net = __atomic_load_n(&h->tp_net, __ATOMIC_ACQUIRE);
        if (!(st & TP_STATUS_USER) || !len || !snap || !mac || !net) {
            if (!(bst & TP_STATUS_USER) || p->cur_consumed >= bd->hdr.bh1.num_pkts)
                break; /* still being written (or nothing there yet) */
            /* The block is closed: this header is final as it stands. */
            len = h->tp_len;
            snap = h->tp_snaplen;
            mac = h->tp_mac;
        }
        uint32_t next = h->tp_next_offset;
        uint32_t hoff = p->cur_off;
        p->cur_consumed++;
        p->cur_off = next ? hoff + next : AFP_BLOCK_SIZE;
        if (snap != len || (size_t)hoff + mac + snap > AFP_BLOCK_SIZE || snap < 14u) {
            p->base.rx_bad++; /* truncated or malformed: dropped and counted */
            continue;
        }
        tw_pkt *k = &pkts[got++];
        k->data = (uint8_t *)h + mac;
        k->len = snap;
        k->room = snap;
        k->ol_flags = 0;
        k->pad_ = 0;
        k->cookie = (void *)(((uintptr_t)p->cur + 1u) << 1 | 1u);
        p->blk_out[p->cur]++;
        p->held++;
    }
    p->base.rx_pkts += got;
    return got;
}

static unsigned afp_tx_burst(tw_port *bp, tw_pkt *pkts, unsigned n)
{
    afp_port *p = (afp_port *)bp;
    unsigned done = 0;
    while (done < n) {
        unsigned m = n - done < AFP_TX_BATCH ? n - done : AFP_TX_BATCH;
        for (unsigned i = 0; i < m; i++) {
            p->iov[i].iov_base = pkts[done + i].data;
            p->iov[i].iov_len = pkts[done + i].len;
            memset(&p->msgs[i], 0, sizeof(p->msgs[i]));
            p->msgs[i].msg_hdr.msg_iov = &p->iov[i];
            p->msgs[i].msg_hdr.msg_iovlen = 1;
            p->msgs[i].msg_hdr.msg_name = &p->sll;
            p->msgs[i].msg_hdr.msg_namelen = sizeof(p->sll);
        }
        int r = sendmmsg(p->fd, p->msgs, m, MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EAGAIN || errno == ENOBUFS || errno == EINTR) {
                p->base.tx_full++;
                break; /* the rest stays with the caller */
            }
            /* The first frame was refused (EMSGSIZE, ENETDOWN...): take it
             * and drop it so one bad frame cannot wedge the caller. */
            p->tx_err++;
            put_buf(p, pkts[done].cookie);
            done++;
            continue;
        }
        /* sendmmsg copied the frames: their buffers are free again. */
        for (int i = 0; i < r; i++)
            put_buf(p, pkts[done + (unsigned)i].cookie);
        p->base.tx_pkts += (unsigned)r;
        done += (unsigned)r;
        if ((unsigned)r < m) {
            p->base.tx_full++;
            break;
        }
    }
    return done;
}

static unsigned afp_alloc_burst(tw_port *bp, tw_pkt *pkts, unsigned n)
{
    afp_port *p = (afp_port *)bp;
    unsigned i = 0;
    for (; i < n && p->tx_nfree > 0; i++) {
        unsigned b = p->tx_free[--p->tx_nfree];
        pkts[i].data = p->tx_mem + (size_t)b * AFP_TX_BUF;
        pkts[i].len = 0;
        pkts[i].room = AFP_TX_BUF;
        pkts[i].ol_flags = 0;
        pkts[i].pad_ = 0;
        pkts[i].cookie = (void *)(((uintptr_t)b + 1u) << 1);
    }
    p->held += i;
    if (i < n)
        p->base.alloc_fail++;
    return i;
}

static void afp_free_burst(tw_port *bp, tw_pkt *pkts, unsigned n)
{
    afp_port *p = (afp_port *)bp;
    for (unsigned i = 0; i < n; i++)
        put_buf(p, pkts[i].cookie);
}

static int afp_rx_fd(tw_port *bp)
{
    return ((afp_port *)bp)->fd;
}

static void afp_close(tw_port *bp)
{
    afp_port *p = (afp_port *)bp;
    tw__port_check_held(&p->base, p->held, "buffers");
    if (p->ring)
        munmap(p->ring, p->ring_len);
    if (p->fd >= 0)
        close(p->fd);
    free(p->tx_mem);
    free(p->tx_free);
    free(p->blk_out);
    free(p->blk_done);
    free(p);
}

static const tw_port_ops afp_ops = {
    .name = "af_packet",
    .rx_burst = afp_rx_burst,
    .tx_burst = afp_tx_burst,
    .alloc_burst = afp_alloc_burst,
    .free_burst = afp_free_burst,
    .poll = NULL,
    .rx_fd = afp_rx_fd,
    .close = afp_close,
};

int tw_port_af_packet_open(tw_port **out, const char *ifname, unsigned frames,
                           tw_error *err)
{
    *out = NULL;
    if (!ifname || !*ifname || strlen(ifname) >= IFNAMSIZ)
        return tw__err(err, -EINVAL, "af_packet: bad interface name");
    if (frames < 64)
        frames = 64;
    if (frames > (1u << 20))
        return tw__err(err, -EINVAL, "af_packet: %u frames is too many", frames);
    afp_port *p = calloc(1, sizeof(*p));
    if (!p)
        return tw__err(err, -ENOMEM, "af_packet: out of memory");
    p->base.ops = &afp_ops;
    p->fd = -1;
    int rc;
    const char *what;

    p->ifindex = (int)if_nametoindex(ifname);
    if (!p->ifindex) {
        rc = -errno;
        what = "if_nametoindex";
        goto fail;
    }
    /* Protocol 0: the socket hears nothing until bind() names the
     * interface and ETH_P_ALL.  Opened with ETH_P_ALL it would hear every
     * interface of the host (lo, other veths) from here to bind(), and
     * those frames would wait in the ring for the first rx_burst: the
     * interop tests saw loopback TCP that way, more of it under load. */
    p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (p->fd < 0) {
        rc = -errno;
        what = "socket(AF_PACKET)";
        goto fail;
    }
    int v = TPACKET_V3;
    if (setsockopt(p->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)) < 0) {
        rc = -errno;
        what = "PACKET_VERSION V3";
        goto fail;
    }
    /* Our own transmissions must not come back on the rx ring. */
    v = 1;
    if (setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &v, sizeof(v)) < 0) {
        rc = -errno;
        what = "PACKET_IGNORE_OUTGOING";
        goto fail;
    }
    v = 1;
    if (setsockopt(p->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &v, sizeof(v)) < 0) {
        rc = -errno;
        what = "PACKET_QDISC_BYPASS";
        goto fail;
    }
    size_t bytes = (size_t)frames * AFP_FRAME_SIZE;
    p->nblocks = (unsigned)((bytes + AFP_BLOCK_SIZE - 1) / AFP_BLOCK_SIZE);
    if (p->nblocks < 4)
        p->nblocks = 4;
    struct tpacket_req3 req;
    memset(&req, 0, sizeof(req));
    req.tp_block_size = AFP_BLOCK_SIZE;
    req.tp_block_nr = p->nblocks;
    req.tp_frame_size = AFP_FRAME_SIZE;
    req.tp_frame_nr = (AFP_BLOCK_SIZE / AFP_FRAME_SIZE) * p->nblocks;
    req.tp_retire_blk_tov = AFP_RETIRE_MS;
    req.tp_sizeof_priv = 0;
    req.tp_feature_req_word = 0;
    if (setsockopt(p->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) < 0) {
        rc = -errno;
        what = "PACKET_RX_RING";
        goto fail;
    }
    p->ring_len = (size_t)p->nblocks * AFP_BLOCK_SIZE;
    p->ring = mmap(NULL, p->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_LOCKED,
                   p->fd, 0);
    if (p->ring == MAP_FAILED) {
        /* MAP_LOCKED can fail under a low RLIMIT_MEMLOCK; the ring works
         * unlocked too. */
        p->ring = mmap(NULL, p->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
    }
    if (p->ring == MAP_FAILED) {
        p->ring = NULL;
        rc = -errno;
        what = "mmap rx ring";
        goto fail;
    }
    p->cur_off = AFP_FIRST_OFF;

    memset(&p->sll, 0, sizeof(p->sll));
    p->sll.sll_family = AF_PACKET;
    p->sll.sll_protocol = htons(ETH_P_ALL);
    p->sll.sll_ifindex = p->ifindex;
    if (bind(p->fd, (struct sockaddr *)&p->sll, sizeof(p->sll)) < 0) {
        rc = -errno;
        what = "bind";
        goto fail;
    }
    p->sll.sll_halen = ETH_ALEN;

    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, ifname, strlen(ifname) + 1);
    if (ioctl(p->fd, SIOCGIFHWADDR, &ifr) < 0) {
        rc = -errno;
        what = "SIOCGIFHWADDR";
        goto fail;
    }
    memcpy(p->base.mac, ifr.ifr_hwaddr.sa_data, 6);
    p->base.mtu = 1500;
    if (ioctl(p->fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0 && ifr.ifr_mtu < 1500)
        p->base.mtu = (uint16_t)ifr.ifr_mtu;
    p->base.caps = 0; /* veth with offloads off: software checksums */

    p->tx_n = frames;
    p->tx_mem = aligned_alloc(64, (size_t)frames * AFP_TX_BUF);
    p->tx_free = calloc(frames, sizeof(uint32_t));
    p->blk_out = calloc(p->nblocks, sizeof(uint32_t));
    p->blk_done = calloc(p->nblocks, 1);
    if (!p->tx_mem || !p->tx_free || !p->blk_out || !p->blk_done) {
        rc = -ENOMEM;
        what = "buffers";
        goto fail;
    }
    memset(p->tx_mem, 0, (size_t)frames * AFP_TX_BUF);
    for (unsigned i = 0; i < frames; i++)
        p->tx_free[i] = frames - 1u - i;
    p->tx_nfree = frames;
    *out = &p->base;
    return 0;

fail:
    afp_close(&p->base);
    return tw__err(err, rc, "af_packet %s: %s: %s", ifname, what, strerror(-rc));
}
