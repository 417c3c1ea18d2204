/* Packet capture into pcapng, for the userspace stack that tcpdump cannot
 * see (docs/design/netstack.md; live.md "Threads, processes and rings").
 *
 * Two sides, joined by one SPSC ring (ring.h) of fixed-size slots:
 *
 *  - the producer, on the polling core: for each frame a port receives or
 *    sends, an optional filter (direction, IPv4 address, TCP port: a few
 *    compares), then one memcpy of the frame (up to the snap length) into
 *    a ring slot in place, behind a 16-byte record (stamp, lengths,
 *    direction, interface).  No system call, no allocation, no wait: when
 *    the ring is full the frame is counted as dropped and the port goes
 *    on.  The port layer does this for every backend (port.h,
 *    tw_port_capture_attach); anything else may call tw_capture_put().
 *  - the writer: a thread of the capture's own (the default), or whoever
 *    calls tw_capture_drain() (the yielding side of a reactor:
 *    tw_capture_poll is a tw_reactor_poll_fn).  It turns records into
 *    pcapng blocks (a Section Header, one Interface Description per
 *    interface with if_tsresol = 9, so nanoseconds, and an Enhanced Packet
 *    per frame with the direction in epb_flags) in a buffer of whole
 *    blocks, and writes that buffer with write(2): a process killed at any
 *    moment leaves a file that ends at a block boundary (unless the kernel
 *    cut one write short), which tshark reads to its last whole block.
 *    Files are bounded: past file_max_bytes the writer rotates to the next
 *    file (each a complete pcapng of its own), keeping files_max of them.
 *    On close it adds an Interface Statistics Block per interface (frames
 *    seen, dropped, kept by the filter, written).
 *
 * Time: the producer stores the raw TSC (tw_tsc_read, once per burst);
 * the writer converts it with the calibrated clock (clock.h) to monotonic
 * ns plus the clock's epoch offset: wall-clock ns, so that captures of two
 * processes on one machine line up.  A simulation passes its virtual time
 * instead (now_ns), which makes a simulated run's capture a function of
 * its seed, byte for byte.
 *
 * Threads: one producer thread for all the interfaces of a capture (the
 * thread polling their ports: use one capture per polling thread), one
 * writer.  Interfaces are added from one control thread, before or while
 * the writer runs, but before their port is polled.
 *
 * Bad input: the capture parses nothing it does not also bound; a frame
 * of any length and content (runt, truncated headers, garbage) is either
 * filtered or captured as it is, and every block written is well formed. */
#ifndef TICKWIRE_CAPTURE_H
#define TICKWIRE_CAPTURE_H

#include <errno.h>
#include <string.h>

#include "tickwire/clock.h"
#include "tickwire/common.h"
#include "tickwire/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Directions (also the values of pcapng epb_flags bits 0-1). */
#define TW_CAPTURE_RX 1u /* received: inbound */
#define TW_CAPTURE_TX 2u /* sent: outbound */

#define TW_CAPTURE_MAX_IFACES 8
#define TW_CAPTURE_PATH_MAX 512
#define TW_CAPTURE_NAME_MAX 64
#define TW_CAPTURE_SNAP_DEFAULT 2048u  /* every frame whole (ports' buffers are <= 2048) */
#define TW_CAPTURE_SLOTS_DEFAULT 4096u
#define TW_CAPTURE_REC_BYTES 16u
#define TW_CAPTURE_SNAP_MAX (TW_RING_SLOT_MAX - TW_CAPTURE_REC_BYTES) /* 65520 */

/* What the producer writes at the start of each ring slot; cap_len bytes
 * of the frame follow. */
typedef struct tw_capture_rec {
    uint64_t stamp;    /* TSC ticks, or ns of the config's now_ns source */
    uint32_t orig_len; /* the frame's length on the wire */
    uint16_t cap_len;  /* bytes kept: min(orig_len, snap_len) */
    uint8_t dir;       /* TW_CAPTURE_RX or TW_CAPTURE_TX */
    uint8_t iface;     /* interface id (tw_capture_add_iface), < TW_CAPTURE_MAX_IFACES */
} tw_capture_rec;
_Static_assert(sizeof(tw_capture_rec) == TW_CAPTURE_REC_BYTES, "capture record size");
_Static_assert(offsetof(tw_capture_rec, cap_len) == 12, "capture record layout");

/* The filter, evaluated on the polling core before the copy.  Every field
 * at zero keeps everything. */
typedef struct tw_capture_filter {
    uint32_t dirs;     /* TW_CAPTURE_RX | TW_CAPTURE_TX to keep; 0 = both */
    uint32_t ip;       /* host order; 0 = any, else IPv4 frames from or to ip */
    uint16_t tcp_port; /* 0 = any, else TCP segments from or to this port
                          (first fragments only: a later one has no ports) */
    uint16_t flags;    /* TW_CAPTURE_F_* */
} tw_capture_filter;

#define TW_CAPTURE_F_NON_IP 1u /* with ip or tcp_port set, still keep frames
                                  that are not IPv4 (ARP, ...) */

typedef enum tw_capture_writer {
    TW_CAPTURE_WRITER_THREAD = 0, /* the capture starts a thread that drains the ring */
    TW_CAPTURE_WRITER_CALLER = 1, /* the caller drains: tw_capture_drain / tw_capture_poll */
} tw_capture_writer;

/* Plain data (the path is held, not pointed to): copy it freely. */
typedef struct tw_capture_config {
    char path[TW_CAPTURE_PATH_MAX]; /* the first file; rotated ones are PATH with
                                       ".N" before a ".pcapng"/".pcap" suffix
                                       (cap.pcapng, cap.1.pcapng, ...), else
                                       after it */
    uint32_t snap_len;       /* bytes kept of each frame, 1..TW_CAPTURE_SNAP_MAX */
    uint32_t ring_slots;     /* frames the ring holds: a power of two */
    uint64_t file_max_bytes; /* rotate before a file would pass this; 0 = one
                                file, no limit.  A file always takes its
                                headers and at least one packet, so a limit
                                below that gives one packet per file. */
    uint32_t files_max;      /* with rotation: files kept (the oldest deleted
                                when a new one opens); 0 = all */
    tw_capture_filter filter;
    tw_capture_writer writer;
    int writer_cpu;          /* writer thread pinned to this CPU; -1 = not */
    int64_t writer_idle_ns;  /* writer thread's sleep when the ring is empty (0: 1 ms) */
    uint32_t buf_bytes;      /* the writer's buffer of whole blocks (at least 128 KiB) */
    const tw_tsc_clock *clock; /* TSC stamps -> ns; NULL = tw_tsc_default() */
    /* Virtual time (a simulation): stamps are *now_ns instead of the TSC,
     * read by the producer, and written as epoch_base_ns + *now_ns. */
    const uint64_t *now_ns;
    int64_t epoch_base_ns;
} tw_capture_config;

/* Defaults: snap TW_CAPTURE_SNAP_DEFAULT, TW_CAPTURE_SLOTS_DEFAULT slots,
 * no rotation, no filter, a writer thread not pinned sleeping 1 ms when
 * idle, a 256 KiB buffer, the default TSC clock.  Returns 0, or
 * -ENAMETOOLONG (path longer than TW_CAPTURE_PATH_MAX - 1; cfg->path is
 * then empty). */
int tw_capture_config_init(tw_capture_config *cfg, const char *path);

/* The option form every tool and config file shares (`--pcap SPEC`,
 * `pcap = SPEC`):
 *
 *     FILE[,key=value]...
 *       snap=N        bytes kept per frame          (snap_len)
 *       slots=N       ring slots, a power of two    (ring_slots)
 *       size=N[k|M|G] rotate at this file size      (file_max_bytes; k = 1024)
 *       files=N       files kept with rotation      (files_max)
 *       dir=rx|tx|both                              (filter.dirs)
 *       ip=A.B.C.D                                  (filter.ip)
 *       port=N        TCP port                      (filter.tcp_port)
 *       nonip=1       keep non-IPv4 frames too      (TW_CAPTURE_F_NON_IP)
 *       cpu=N         pin the writer thread         (writer_cpu)
 *       idle=US       writer thread's sleep when idle (writer_idle_ns)
 *
 * FILE ends at the first comma (a path with commas cannot be given here).
 * Fills cfg (tw_capture_config_init first, then the keys).  Returns 0, or
 * -EINVAL with err naming the key and what is wrong with its value. */
int tw_capture_config_parse(tw_capture_config *cfg, const char *spec, tw_error *err);

/* Counters.  Per interface and summed (tw_capture_stats). */
typedef struct tw_capture_stats {
    uint64_t kept;      /* frames published into the ring (the filter kept
                           them and a slot was free) */
    uint64_t dropped;   /* frames the filter kept but the ring had no slot for */
    uint64_t filtered;  /* frames the filter rejected */
    uint64_t truncated; /* frames written cut to the snap length */
    uint64_t written;   /* Enhanced Packet Blocks written (those of the last
                           buffer once it is out, or move to lost if its
                           write fails) */
    uint64_t lost;      /* frames taken from the ring but not written: in
                           a buffer whose write failed, or after that */
    uint64_t bytes;     /* bytes written to files, all files together */
    uint64_t files;     /* files opened */
    uint64_t write_errors;
} tw_capture_stats;

typedef struct tw__capture_writer tw__capture_writer;

/* One interface's producer counters: written by the producer thread only
 * (relaxed stores), read by anyone as a snapshot (relaxed loads). */
typedef struct tw__capture_ctr {
    uint64_t kept, dropped, filtered;
} tw__capture_ctr;

/* A capture.  The fields are private; the producer's (read every burst)
 * come first, on cache lines the writer never writes: the configuration
 * and interface 0's counters fill the first line exactly, so a capture of
 * one port touches one line of it per burst. */
typedef struct tw_capture {
    tw_ring *ring;
    uint32_t slot_size;
    uint32_t snap_len;
    uint32_t dirs;     /* filter, in wire form: direction bits kept */
    uint32_t ip_be;    /* 0 = any */
    uint16_t port_be;  /* 0 = any */
    uint16_t non_ip;   /* keep non-IPv4 frames when ip/port are set */
    uint32_t match_l3; /* ip_be or port_be set: frames are parsed */
    const uint64_t *now_ns;
    tw__capture_ctr ctr[TW_CAPTURE_MAX_IFACES];
    /* The writer's side and the configuration (not on the hot path). */
    tw__capture_writer *w TW_CACHE_ALIGNED;
} tw_capture;
_Static_assert(offsetof(tw_capture, ctr) + sizeof(tw__capture_ctr) == TW_CACHE_LINE,
               "the hot configuration and interface 0's counters share the first line");

/* Opens a capture: checks cfg, allocates the ring and the writer's buffer,
 * creates the first file and writes its Section Header Block, and starts
 * the writer thread (TW_CAPTURE_WRITER_THREAD).  Returns 0 and sets *out
 * (closed with tw_capture_close), or a negative code with err naming what
 * failed: -EINVAL (a config field, named), -ENOMEM, or the errno of
 * creating the file / the thread. */
int tw_capture_open(tw_capture **out, const tw_capture_config *cfg, tw_error *err);

/* Adds an interface named name (written as its if_name: a port spec, say)
 * with link type Ethernet.  Returns its id (0, 1, ...; the pcapng interface
 * id) or -ENOSPC (TW_CAPTURE_MAX_IFACES), -EINVAL (name NULL or too long). */
int tw_capture_add_iface(tw_capture *c, const char *name, tw_error *err);

/* Stops the writer thread, writes everything still in the ring, then the
 * Interface Statistics Blocks, and closes the file; frees c.  The
 * producer must have stopped (every port detached: tw_port_capture_detach,
 * or its loop ended).  If st is not NULL it gets the final counters.
 * Returns 0, or the first write error (a negative errno) that happened
 * during the capture (the file then ends at the last block written). */
int tw_capture_close(tw_capture *c, tw_capture_stats *st);

/* Writer side, for TW_CAPTURE_WRITER_CALLER: takes up to max records from
 * the ring into the buffer, and writes the buffer out when it is half full or
 * the ring was found empty (so a live file lags by at most one drain).
 * Returns records taken (0 = the ring was empty).  One thread at a time;
 * never while the capture's own writer thread runs. */
unsigned tw_capture_drain(tw_capture *c, unsigned max);

/* tw_capture_drain(c, 256) with the reactor's poll signature
 * (tw_reactor_poll_fn in reactor.h): tw_reactor_add_poll(r, core,
 * tw_capture_poll, c) makes that core the writer. */
struct tw_reactor_now;
unsigned tw_capture_poll(void *c, struct tw_reactor_now *now);

/* Counters summed over interfaces (iface < 0) or of one interface.  A
 * snapshot: exact once the producer and the writer are quiet. */
void tw_capture_get_stats(const tw_capture *c, int iface, tw_capture_stats *st);

/* The first write error (negative errno) so far, 0 if none; err says on
 * which file and what failed. */
int tw_capture_error(const tw_capture *c, tw_error *err);

/* The path of file number k (0 = the first) of this capture, into buf. */
const char *tw_capture_file_path(const tw_capture *c, uint64_t k, char *buf, size_t cap);

/* ---- reading pcapng -----------------------------------------------------
 * A small reader of what the writer writes (blocks in this host's byte
 * order), for tests, benchmarks and tools that check a capture.  Files
 * written in the other byte order are reported malformed, not swapped. */

typedef struct tw_pcapng_block {
    uint32_t type;       /* 0x0A0D0D0A SHB, 1 IDB, 5 ISB, 6 EPB, ... */
    uint32_t len;        /* total length, both length fields included */
    const uint8_t *body; /* the len - 12 bytes between the length fields */
    uint32_t body_len;
} tw_pcapng_block;

/* One block at p (n bytes available): returns its length (> 0), -1 if
 * malformed (length below 12 or not a multiple of 4, the trailing length
 * differs, a Section Header in the other byte order or of another major
 * version), -2 if incomplete (the file ends inside it). */
long tw_pcapng_block_parse(const uint8_t *p, size_t n, tw_pcapng_block *b);

typedef struct tw_pcapng_epb {
    uint32_t iface;
    uint64_t ts;         /* in the interface's if_tsresol units (ns for ours) */
    uint32_t cap_len, orig_len;
    uint32_t flags;      /* epb_flags, 0 if absent; bits 0-1: TW_CAPTURE_RX/TX */
    const uint8_t *data; /* cap_len bytes, inside the block */
} tw_pcapng_epb;

/* Decodes an Enhanced Packet Block.  Returns 0, or -1 if malformed (not
 * an EPB, captured length beyond the block or above the original length,
 * options running past the block). */
int tw_pcapng_epb_decode(const tw_pcapng_block *b, tw_pcapng_epb *e);

/* Finds option code in a SHB, IDB, EPB or ISB: returns 1 with *val, *len
 * (a view into the block), 0 if absent, -1 if the options are malformed or
 * the block type has none we know. */
int tw_pcapng_option(const tw_pcapng_block *b, uint16_t code, const uint8_t **val,
                     uint16_t *len);

/* ---- producer, on the polling core --------------------------------------
 * tw_capture_put() for one frame; the port layer's burst path uses the
 * steps (match, reserve, fill, commit, and the counts filtered / drop) to
 * move a burst with one reservation. */

static inline void tw__capture_prefetchw(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}

/* The stamp to give frames of a burst: the TSC now, or the virtual time. */
static inline uint64_t tw_capture_stamp(const tw_capture *c)
{
    return TW_UNLIKELY(c->now_ns != NULL) ? *c->now_ns : tw_tsc_read();
}

static inline uint16_t tw__capture_ld16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static inline uint32_t tw__capture_ld32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* 1 if the filter keeps frame f (len bytes, any content) going in
 * direction dir, else 0.  No side effect: the caller counts what it
 * rejects (tw_capture_filtered), once it knows the frame went in or out. */
static inline int tw_capture_match(const tw_capture *c, unsigned dir, const uint8_t *f,
                                   uint32_t len)
{
    if (!(c->dirs & dir))
        return 0;
    if (TW_LIKELY(!c->match_l3))
        return 1;
    /* Ethernet II, IPv4 (no VLAN tag: the stack sends none). */
    int is_ip = len >= 14 && tw__capture_ld16(f + 12) == 0x0008u; /* 0x0800 on the wire */
    if (!is_ip)
        return c->non_ip;
    if (len < 14 + 20 || (f[14] >> 4) != 4)
        return 0;
    if (c->ip_be && tw__capture_ld32(f + 26) != c->ip_be && tw__capture_ld32(f + 30) != c->ip_be)
        return 0;
    if (!c->port_be)
        return 1;
    uint32_t l4 = 14u + (f[14] & 15u) * 4u;
    /* Protocol TCP, fragment offset 0 (mask 0x1fff in wire order), both
     * ports inside the frame. */
    return f[23] == 6 && (tw__capture_ld16(f + 20) & 0xff1fu) == 0 && l4 + 4 <= len &&
           (tw__capture_ld16(f + l4) == c->port_be || tw__capture_ld16(f + l4 + 2) == c->port_be);
}

/* Counts k frames the filter rejected on iface. */
static inline void tw_capture_filtered(tw_capture *c, unsigned iface, uint32_t k)
{
    uint64_t *x = &c->ctr[iface].filtered;
    /* Relaxed: a statistic written by this (the producer) thread only;
     * readers take snapshots (tw_capture_get_stats). */
    __atomic_store_n(x, *x + k, __ATOMIC_RELAXED);
}

/* Reserves up to n contiguous ring slots (fewer at the end of the ring or
 * when it is nearly full; 0 when full).  *slots = the first; slot i is at
 * *slots + i * c->slot_size. */
static inline uint32_t tw_capture_reserve(tw_capture *c, uint32_t n, uint8_t **slots)
{
    void *s;
    uint32_t k = tw_ring_reserve_sp(c->ring, n, &s);
    *slots = (uint8_t *)s;
    return k;
}

/* Writes frame f into a reserved slot: the record, then one memcpy of
 * min(len, snap_len) bytes. */
static inline void tw_capture_fill(tw_capture *c, uint8_t *slot, unsigned iface, unsigned dir,
                                   uint64_t stamp, const uint8_t *f, uint32_t len)
{
    TW_ASSERT(iface < TW_CAPTURE_MAX_IFACES && (dir == TW_CAPTURE_RX || dir == TW_CAPTURE_TX));
    uint32_t cap = len < c->snap_len ? len : c->snap_len;
    tw_capture_rec rec = {stamp, len, (uint16_t)cap, (uint8_t)dir, (uint8_t)iface};
    memcpy(slot, &rec, sizeof(rec));
    memcpy(slot + sizeof(rec), f, cap);
}

/* Publishes the first k slots of the last reservation (frames of iface)
 * to the writer; the rest of the reservation is given up. */
static inline void tw_capture_commit(tw_capture *c, unsigned iface, uint32_t k)
{
    tw_ring_commit_sp(c->ring, k);
    uint64_t *x = &c->ctr[iface].kept;
    /* Relaxed: producer-only statistic (see tw_capture_filtered). */
    __atomic_store_n(x, *x + k, __ATOMIC_RELAXED);
    /* The next slot's first lines were last read by the writer, on another
     * core: ask for them in exclusive state now (PREFETCHW; a no-op where
     * the CPU lacks it), so that the next frame's copy does not wait for
     * their transfer.  Measured: without it each frame's copy stalls on
     * two or three cross-core line transfers (~1 us per 64-byte round
     * trip of two stacks in bench netrtt). */
    uint8_t *next = tw__ring_slot(c->ring, c->ring->prod.idx & c->ring->prod.mask, c->slot_size);
    for (uint32_t off = 0; off < 256 && off < c->slot_size; off += 64) /* inside the slot */
        tw__capture_prefetchw(next + off);
}

/* Counts k frames the filter kept that found no slot. */
static inline void tw_capture_drop(tw_capture *c, unsigned iface, uint32_t k)
{
    uint64_t *x = &c->ctr[iface].dropped;
    /* Relaxed: producer-only statistic (see tw_capture_filtered). */
    __atomic_store_n(x, *x + k, __ATOMIC_RELAXED);
}

/* One frame: filter, copy, publish.  Returns 1 (captured), 0 (filtered)
 * or -ENOBUFS (the ring was full: counted as dropped, nothing waited). */
static inline int tw_capture_put(tw_capture *c, unsigned iface, unsigned dir, uint64_t stamp,
                                 const uint8_t *f, uint32_t len)
{
    if (!tw_capture_match(c, dir, f, len)) {
        tw_capture_filtered(c, iface, 1);
        return 0;
    }
    uint8_t *s;
    if (TW_UNLIKELY(tw_capture_reserve(c, 1, &s) == 0)) {
        tw_capture_drop(c, iface, 1);
        return -ENOBUFS;
    }
    tw_capture_fill(c, s, iface, dir, stamp, f, len);
    tw_capture_commit(c, iface, 1);
    return 1;
}

#ifdef __cplusplus
}
#endif
#endif
