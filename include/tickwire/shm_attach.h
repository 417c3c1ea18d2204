/* The gateway and the strategy as two processes (live.md, "Crash isolation
 * and recovery" and "Threads, processes and rings"; docs/crash.md).
 *
 * The gateway creates one sealed memfd, the segment: a versioned header
 * (tw_attach_hdr) followed by the SPSC rings (ring.h), per net core one
 * inbound ring (gateway -> strategy: journal records, 80-byte
 * tw_journal_rec slots) and one outbound ring (strategy -> gateway:
 * intents, 64-byte slots).  It listens on a Unix socket; a strategy
 * process connects, says HELLO, gets WELCOME with the segment's fd and a
 * read-only fd of the journal (SCM_RIGHTS), checks the header and every
 * ring (tw_ring_attach), and says READY.  From then on the net cores put
 * every record they journal into their inbound ring too, and take the
 * strategy's intents from their outbound ring.
 *
 * Death and reattach: the gateway watches the strategy through a pidfd
 * (readable once every thread of it is gone, so it no longer writes to
 * the segment), the socket's hangup (then it has exit_grace_ns to be gone
 * before it is killed), and its heartbeat word (a strategy whose word
 * stays still for beat_timeout_ns is killed).  Then each net
 * core drains what the strategy committed to its outbound ring (those
 * intents are sent and journaled like any others) and re-initialises both
 * of its rings from the gateway's own copy of the geometry: what the dead
 * strategy reserved and never committed is gone, what it had not yet
 * consumed inbound is in the journal.  The gateway rewrites the header,
 * bumps the generation and accepts the next strategy.  Who resets what,
 * and how a restarted strategy resumes, is docs/crash.md, "Recovery".
 *
 * The strategy's inbound stream is the journal in seq order, each record
 * exactly once: tw_attach_st_next_burst() takes records from the rings
 * when one holds the next seq, and reads the journal otherwise (records
 * written before it attached, and any the gateway could not put into a
 * full ring).
 *
 * Threads on the gateway side: one control thread calls tw_attach_gw_poll
 * (and _beat, _pollfds); net core c's thread calls tw_attach_gw_core_sync
 * and tw_attach_gw_put for core c and consumes core c's outbound ring.
 * tw_attach_gw_put serialises journal appends across cores itself.
 *
 * Trust: everything the strategy can write (its messages, the strategy
 * region of the header, the rings' consumer sides) is checked where the
 * gateway reads it, and the gateway never reads its own geometry back
 * from the segment.  The rings keep each side's state in the segment, so
 * a strategy that scribbles over the gateway's side of a live ring can
 * still stop that ring (ring.h: checks, never a wild write); the segment
 * is reset from scratch at each attach. */
#ifndef TICKWIRE_SHM_ATTACH_H
#define TICKWIRE_SHM_ATTACH_H

#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "tickwire/common.h"
#include "tickwire/journal.h"
#include "tickwire/journal_seg.h"
#include "tickwire/ring.h"
#include "tickwire/util.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TW_ATTACH_MAGIC 0x4843415454415754ull /* "TWATTACH" little-endian */
#define TW_ATTACH_VERSION 2u /* 2: the doorbells */
#define TW_ATTACH_MAX_CORES 16u
#define TW_ATTACH_HDR_BYTES 4096u /* rings start on a page of their own */
#define TW_ATTACH_REGION 128u
#define TW_ATTACH_IN_SLOT TW_JOURNAL_REC_BYTES /* inbound: journal records */
#define TW_ATTACH_OUT_SLOT TW_JOURNAL_PAYLOAD  /* outbound: 64-byte intents */

/* Ring directions (tw_attach_ring_desc.dir). */
enum {
    TW_ATTACH_IN = 1,  /* gateway -> strategy: tw_journal_rec */
    TW_ATTACH_OUT = 2, /* strategy -> gateway: 64-byte intents */
};

/* Where one ring lives in the segment. */
typedef struct tw_attach_ring_desc {
    uint64_t off;       /* from the segment's start; a multiple of 128 */
    uint64_t mem_bytes; /* tw_ring_memsize(count, slot_size) */
    uint32_t count;     /* slots (a power of two) */
    uint32_t slot_size; /* TW_ATTACH_IN_SLOT or TW_ATTACH_OUT_SLOT */
    uint32_t dir;       /* TW_ATTACH_IN / TW_ATTACH_OUT */
    uint32_t core;      /* the net core it belongs to */
} tw_attach_ring_desc;

/* A doorbell: lets the consumer of a ring sleep when it finds nothing to
 * do, and costs its producer no system call while the consumer is awake.
 * One waiter per bell (the ring's consumer), any number of ringers.
 *
 *   waiter (found nothing to do)          ringer (after publishing work)
 *     t = tw_attach_bell_arm(b)              tw_attach_bell_ring(b)
 *     look again: work?                        seq_cst fence, then reads
 *       yes: tw_attach_bell_disarm(b)          `sleeping`: 0 -> nothing (no
 *       no:  tw_attach_bell_wait(b, t, ns)     syscall); 1 -> clears it,
 *                                              bumps `seq`, FUTEX_WAKE
 *
 * No lost wake-up: the waiter's store of `sleeping` and the ringer's
 * publish of the work are each followed by a seq_cst fence before the
 * other's load, so either the waiter's second look sees the work or the
 * ringer sees `sleeping`; and FUTEX_WAIT sleeps only while `seq` still
 * holds the ticket the waiter read just before arming, so a ring that
 * clears `sleeping` after the arm makes the wait return at once.  The wait is always
 * bounded: a bell is shared memory the peer can scribble on, so a
 * corrupted bell costs at most a timeout, never a hang.  The futex is a
 * shared one (no FUTEX_PRIVATE_FLAG): the two sides are processes. */
typedef struct tw_attach_bell {
    uint32_t seq;      /* the futex word: bumped by a ringer that wakes (atomic) */
    uint32_t sleeping; /* 1: the waiter armed and may be asleep (atomic) */
    uint8_t pad_[TW_CACHE_LINE - 8];
} tw_attach_bell;
_Static_assert(sizeof(tw_attach_bell) == TW_CACHE_LINE, "a bell is one cache line");

/* Waiter: says it is about to sleep.  Returns the ticket for the wait;
 * look for work once more after this call, before waiting. */
static inline uint32_t tw_attach_bell_arm(tw_attach_bell *b)
{
    /* The ticket first.  A ringer that saw an earlier arm may clear
     * `sleeping` after our store below and bump seq after that: read
     * after the store, the ticket could already hold that bump, and we
     * would sleep unarmed (the next ringer sees 0 and wakes nobody).  Read
     * before it, any bump that follows our store makes the wait return at
     * once.  Acquire: keeps the store below after this load; pairs with
     * the ringer's release-add to seq in tw_attach_bell_wake. */
    uint32_t ticket = __atomic_load_n(&b->seq, __ATOMIC_ACQUIRE);
    /* Relaxed store, then the fence: the fence pairs with the one in
     * tw_attach_bell_ring, between the ringer's publish of work (a ring's
     * release-store of its head) and its load of `sleeping`; the two
     * fences order the stores before the loads on both sides, so one side
     * sees the other's store. */
    __atomic_store_n(&b->sleeping, 1u, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return ticket;
}

/* Waiter: found work after arming; stays awake. */
static inline void tw_attach_bell_disarm(tw_attach_bell *b)
{
    /* Relaxed: a ringer that still saw 1 wakes nobody (one spare syscall);
     * pairs with the ringer's exchange of `sleeping`. */
    __atomic_store_n(&b->sleeping, 0u, __ATOMIC_RELAXED);
}

/* Waiter: sleeps until a ringer wakes it, the ticket is stale (a ring came
 * after arming), a signal, or timeout_ns (> 0; at most 1 s is taken).
 * Disarms.  Returns 0 (woken, or the ticket was stale), -ETIMEDOUT or
 * -EINTR. */
int tw_attach_bell_wait(tw_attach_bell *b, uint32_t ticket, int64_t timeout_ns);

/* Ringer's slow path: the waiter sleeps.  Clears `sleeping`, bumps `seq`
 * and wakes it.  Returns 1 when this call woke it (one FUTEX_WAKE), 0
 * when another ringer had already. */
int tw_attach_bell_wake(tw_attach_bell *b);

/* Ringer: after publishing work (a ring's commit).  Returns 0 without a
 * system call when the waiter is awake, else tw_attach_bell_wake(). */
static inline int tw_attach_bell_ring(tw_attach_bell *b)
{
    /* Pairs with the fence of tw_attach_bell_arm (see there): the work
     * published before this fence is seen by a waiter whose `sleeping` we
     * do not see. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    /* Relaxed: ordered by the fence above; pairs with arm's store. */
    if (!__atomic_load_n(&b->sleeping, __ATOMIC_RELAXED))
        return 0;
    return tw_attach_bell_wake(b);
}

/* The segment's header.  Ring i < n_cores is core i's inbound ring, ring
 * n_cores + i its outbound ring. */
typedef struct tw_attach_hdr {
    /* Geometry: written by the gateway (magic last) before each WELCOME,
     * from its own copy; read by the strategy at attach. */
    uint64_t magic;     /* TW_ATTACH_MAGIC */
    uint32_t version;   /* TW_ATTACH_VERSION */
    uint32_t hdr_bytes; /* TW_ATTACH_HDR_BYTES */
    uint64_t seg_bytes; /* the segment's size (the memfd's, sealed) */
    uint32_t n_cores;   /* 1..TW_ATTACH_MAX_CORES */
    uint32_t n_rings;   /* 2 * n_cores */
    uint32_t geom_crc;  /* tw_crc32c of this region (with geom_crc = 0) and the ring table */
    uint32_t pad0_;
    uint8_t pad1_[TW_ATTACH_REGION - 40];
    /* Gateway region: written by the gateway only. */
    uint64_t generation;  /* the attach in force; bumped at each reset (atomic) */
    uint64_t gw_beat_ns;  /* the gateway's heartbeat: monotonic ns (atomic) */
    uint64_t journal_end; /* every journal record with seq below is written; release-
                             stored after each append (atomic) */
    uint32_t gw_pid;      /* the gateway's pid */
    uint32_t st_pid;      /* the attached strategy's pid, from SO_PEERCRED */
    uint8_t pad2_[TW_ATTACH_REGION - 32];
    /* Strategy region: written by the strategy only; the gateway reads it
     * as outside input. */
    uint64_t st_generation; /* the generation it attached as (atomic) */
    uint64_t st_beat;       /* its heartbeat: any value that changes (atomic) */
    uint64_t st_next_seq;   /* the next journal seq it will take (progress; atomic) */
    uint32_t st_pid_self;   /* its pid as it sees it */
    uint32_t st_pad_;
    uint64_t st_cur_seq;    /* the journal seq of the record it is processing, stored
                               before it starts on it (a crash's record; atomic) */
    uint64_t st_done_seq;   /* every record below it is processed and its intents are
                               committed (tw_attach_st_done; atomic) */
    uint8_t pad3_[TW_ATTACH_REGION - 48];
    uint8_t pad4_[TW_ATTACH_REGION];
    tw_attach_ring_desc ring[2 * TW_ATTACH_MAX_CORES];
    /* Doorbells, written by both sides (zeroed at each reset): the
     * strategy waits on st_bell when no core's inbound ring nor the
     * journal has its next record (the net cores ring it after a put or
     * an append); net core c may wait on gw_bell[c] for its outbound ring
     * (the strategy rings it after a commit).  Outside input for the
     * gateway: it only ever waits on them with a bound. */
    tw_attach_bell st_bell;
    tw_attach_bell gw_bell[TW_ATTACH_MAX_CORES];
} tw_attach_hdr;

_Static_assert(sizeof(tw_attach_ring_desc) == 32, "attach ring descriptor size");
_Static_assert(offsetof(tw_attach_hdr, generation) == TW_ATTACH_REGION, "attach gateway region");
_Static_assert(offsetof(tw_attach_hdr, st_generation) == 2 * TW_ATTACH_REGION,
               "attach strategy region");
_Static_assert(offsetof(tw_attach_hdr, ring) == 4 * TW_ATTACH_REGION, "attach ring table");
_Static_assert(offsetof(tw_attach_hdr, st_bell) == 4 * TW_ATTACH_REGION + 2 * TW_ATTACH_MAX_CORES * 32,
               "attach doorbells after the ring table");
_Static_assert(offsetof(tw_attach_hdr, st_bell) % TW_CACHE_LINE == 0, "doorbells on their lines");
_Static_assert(sizeof(tw_attach_hdr) <= TW_ATTACH_HDR_BYTES, "attach header fits its page");

/* The handshake's messages (SOCK_SEQPACKET, one per packet). */
enum {
    TW_ATTACH_MSG_HELLO = 1,   /* strategy -> gateway */
    TW_ATTACH_MSG_WELCOME = 2, /* gateway -> strategy, with the fds */
    TW_ATTACH_MSG_READY = 3,   /* strategy -> gateway: attached as generation */
    TW_ATTACH_MSG_REFUSE = 4,  /* gateway -> strategy: another strategy is attached */
};

typedef struct tw_attach_msg {
    uint64_t magic;       /* TW_ATTACH_MAGIC */
    uint32_t version;     /* TW_ATTACH_VERSION */
    uint32_t type;        /* TW_ATTACH_MSG_* */
    uint64_t generation;  /* WELCOME, READY */
    uint64_t seg_bytes;   /* WELCOME: the segment's size */
    uint64_t journal_end; /* WELCOME: the journal's end when it was sent */
    uint32_t pid;         /* HELLO: the sender's pid (checked against SO_PEERCRED) */
    uint32_t n_fds;       /* WELCOME: 2 (the segment, the journal read-only) */
} tw_attach_msg;
_Static_assert(sizeof(tw_attach_msg) == 48, "attach message size");

/* Checks a segment another process built, mapped here (seg_bytes of it at
 * seg, 64-byte aligned): header magic, version, sizes, the geometry CRC,
 * every ring descriptor (in bounds, aligned, in order without overlap, the
 * right size, direction, core and slot size), then tw_ring_attach() on
 * every ring.  Works on a copy of each field it checks and never reads
 * beyond seg_bytes.  rings (if not NULL, 2 * TW_ATTACH_MAX_CORES entries)
 * receives ring i's address: i < n_cores core i's inbound ring, n_cores + i
 * its outbound ring; *n_cores the count.  Returns 0, or a negative code
 * with err naming the field and its value: -EINVAL (too small,
 * misaligned), -EPROTO (no magic), -EPROTONOSUPPORT (another version),
 * -EBADMSG (anything else wrong, a ring's own error included). */
int tw_attach_check_segment(void *seg, size_t seg_bytes, tw_ring **rings, uint32_t *n_cores,
                            tw_error *err);

/* ---- gateway ---------------------------------------------------------------- */

typedef struct tw_attach_gw_cfg {
    const char *sock_path;     /* the Unix socket; "@name" for the abstract namespace */
    uint32_t n_cores;          /* net cores, 1..TW_ATTACH_MAX_CORES */
    uint32_t in_count;         /* slots per inbound ring (a power of two) */
    uint32_t out_count;        /* slots per outbound ring (a power of two) */
    tw_journal *journal;       /* the gateway's journal, open: tw_attach_gw_put appends
                                  to it, each strategy gets a read-only fd of it */
    tw_jseg *jseg;             /* or a journal in segments (exactly one of the two): each
                                  strategy gets a read-only fd of its directory and follows
                                  it across rotations (journal_seg.h, the follower) */
    int64_t beat_timeout_ns;   /* a strategy whose beat stays still this long is killed (0: off) */
    int64_t hello_timeout_ns;  /* a connection with no HELLO/READY this long is dropped (0: 1 s) */
    int64_t exit_grace_ns;     /* a strategy that hung up has this long to be gone before it
                                  is killed (0: 1 s) */
} tw_attach_gw_cfg;

/* States of the gateway's control (tw_attach_gw.state). */
enum {
    TW_ATTACH_GW_WAITING = 1,   /* no strategy; rings reset; accepting */
    TW_ATTACH_GW_HANDSHAKE = 2, /* WELCOME sent, waiting for READY */
    TW_ATTACH_GW_LIVE = 3,      /* a strategy is attached */
    TW_ATTACH_GW_KILLING = 4,   /* the strategy hung up or was killed: waiting for its pidfd
                                   (killed after exit_grace_ns if it hung up by itself) */
    TW_ATTACH_GW_RESETTING = 5, /* it is gone: the net cores drain and reset their rings */
};

/* What tw_attach_gw_poll() says happened (>= 0). */
enum {
    TW_ATTACH_EV_NONE = 0,
    TW_ATTACH_EV_ATTACHED = 1, /* a strategy said READY: the rings are live */
    TW_ATTACH_EV_DETACHED = 2, /* the strategy is gone (died, hung up, killed) */
    TW_ATTACH_EV_WAITING = 3,  /* every core has reset: a new strategy may attach */
};

/* What tw_attach_gw_core_sync() tells net core c's thread. */
enum {
    TW_ATTACH_CORE_DOWN = 0,  /* no strategy: journal only (tw_attach_gw_put does) */
    TW_ATTACH_CORE_LIVE = 1,  /* put into the inbound ring, take from the outbound one */
    TW_ATTACH_CORE_DRAIN = 2, /* the strategy died: take what it committed to the
                                 outbound ring (send, journal as usual), call again */
};

/* Per net core, one cache line each: written by that core's thread
 * (done_gen is read by the control). */
typedef struct tw_attach_core {
    uint64_t done_gen;   /* the generation whose reset this core finished (atomic) */
    uint32_t live;       /* the last core_sync said LIVE (core-private) */
    uint32_t pad_;
    uint64_t in_put;     /* records put into the inbound ring */
    uint64_t in_dropped; /* records journaled only: no strategy, or its ring full */
    uint64_t drained;    /* core_sync calls that said DRAIN */
    uint64_t resets;     /* ring resets done */
    uint64_t ring_errors;/* resets of an outbound ring that had stopped on a bad index */
    uint8_t pad2_[TW_CACHE_LINE - 48];
} TW_CACHE_ALIGNED tw_attach_core;

typedef struct tw_attach_gw {
    int memfd;
    int journal_ro_fd;  /* read-only fd of the journal, passed to each strategy */
    int listen_fd;
    int conn_fd;        /* the strategy's connection, or -1 */
    int pidfd;          /* the strategy's pidfd, or -1 (pidfd_open unavailable) */
    uint32_t state;     /* TW_ATTACH_GW_*: control thread only */
    pid_t st_pid;
    uint8_t *seg;
    size_t seg_bytes;
    tw_attach_hdr *hdr;
    tw_attach_ring_desc desc[2 * TW_ATTACH_MAX_CORES]; /* the geometry, never read back */
    uint32_t n_cores;
    uint64_t generation; /* control's: the generation being offered / in force */
    uint64_t reset_gen;  /* control -> cores: reset your rings for this generation (atomic) */
    uint64_t live_gen;   /* control -> cores: this generation's strategy is attached (atomic) */
    int64_t conn_since_ns;   /* when the connection was accepted / WELCOME sent */
    int64_t beat_change_ns;  /* our time when the strategy's beat last changed */
    uint64_t beat_seen;
    int64_t beat_timeout_ns, hello_timeout_ns, exit_grace_ns;
    int64_t hangup_ns;   /* when the strategy hung up (KILLING) */
    int killed;          /* KILLING: SIGKILL sent */
    tw_journal *journal;
    tw_jseg *jseg;
    pthread_mutex_t jlock; /* serialises journal appends across cores */
    uint64_t journal_end;  /* our own copy of the header's (atomic): the doorbell's waits */
    char sock_path[TW_UNIX_PATH_MAX];
    /* Counters (control thread). */
    uint64_t attaches, detaches;
    uint64_t hangups;       /* detaches first seen as the socket's hangup */
    uint64_t exits;         /* strategies gone by themselves (not killed by the gateway) */
    uint64_t beat_timeouts; /* strategies killed for a still heartbeat */
    uint64_t refused;       /* connections refused: another strategy attached */
    uint64_t bad_hello;     /* connections dropped: bad, missing or late HELLO/READY */
    tw_error last_err;      /* why the last connection was dropped */
    tw_attach_core core[TW_ATTACH_MAX_CORES];
} tw_attach_gw;

/* Creates the segment (sealed memfd: it can neither shrink nor grow), the
 * rings, the listening socket (an existing socket file at sock_path is
 * replaced), and the read-only journal fd.  The gateway starts WAITING.
 * Returns 0, -EINVAL (cfg) or -errno, with err. */
int tw_attach_gw_open(tw_attach_gw *g, const tw_attach_gw_cfg *cfg, tw_error *err);

/* Closes everything (the strategy sees the hangup); unlinks the socket
 * file.  Safe after a failed open. */
void tw_attach_gw_close(tw_attach_gw *g);

/* The control thread's step, never blocking: accepts and handshakes a
 * strategy, watches the attached one (pidfd, hangup, heartbeat against
 * now_ns), kills and replaces it, and finishes a reset once every core
 * has done its part.  Returns a TW_ATTACH_EV_* (>= 0), or a negative code
 * for a failure of the gateway itself (accept, socket: err says which).
 * A misbehaving strategy is never an error here: it is dropped and counted
 * (last_err says why). */
int tw_attach_gw_poll(tw_attach_gw *g, int64_t now_ns, tw_error *err);

/* The descriptors the control thread may wait on (poll(2)) between steps:
 * the listening socket, the connection, the pidfd.  Returns how many were
 * written (at most cap, at most 3). */
int tw_attach_gw_pollfds(const tw_attach_gw *g, struct pollfd *fds, int cap);

/* The gateway's heartbeat (the strategy checks it). */
static inline void tw_attach_gw_beat(tw_attach_gw *g, int64_t now_ns)
{
    /* Relaxed: a value the strategy compares over time, ordering nothing. */
    __atomic_store_n(&g->hdr->gw_beat_ns, (uint64_t)now_ns, __ATOMIC_RELAXED);
}

/* Net core's thread, once per loop turn: resets the core's rings when the
 * control asks for it (after the outbound ring is drained).  Returns a
 * TW_ATTACH_CORE_*. */
int tw_attach_gw_core_sync(tw_attach_gw *g, uint32_t core);

/* Net core's outbound ring, to consume while core_sync says LIVE or DRAIN. */
static inline tw_ring *tw_attach_gw_out_ring(tw_attach_gw *g, uint32_t core)
{
    return (tw_ring *)(g->seg + g->desc[g->n_cores + core].off);
}

/* Net core's thread: appends one record (kind, 64-byte payload) to the
 * journal, publishes the journal's new end in the header and, while the
 * core is LIVE, puts the record into the core's inbound ring (a full ring
 * is counted in in_dropped: the strategy reads the record from the
 * journal).  rec, if not NULL, receives the record.  Returns 0, or the
 * journal's error (nothing journaled, nothing put). */
int tw_attach_gw_put(tw_attach_gw *g, uint32_t core, uint32_t kind, const void *payload,
                     tw_journal_rec *rec);

/* Net core's thread, when a turn found nothing to do: sleeps on the
 * core's doorbell while the strategy has records it has not finished
 * (its st_done_seq below the journal's end), until it commits intents or
 * finishes them (tw_attach_st_ring_gw, tw_attach_st_done ring it), or
 * timeout_ns (bounded: the bell and st_done_seq are the strategy's to
 * write).  Returns 0 at once when the outbound ring holds intents, 0 when
 * woken; 1 at once when the strategy has nothing in flight (no intent can
 * come before the next put: wait on the transport instead); -ETIMEDOUT or
 * -EINTR (tw_attach_bell_wait). */
int tw_attach_gw_wait(tw_attach_gw *g, uint32_t core, int64_t timeout_ns);

/* (tw_attach_gw_put and tw_attach_gw_append ring the strategy's doorbell
 * after they publish: no system call while the strategy is awake.) */

/* Any thread: appends one record to the journal and publishes the
 * journal's new end, putting it into no ring (a record of no net core: the
 * control's KILL, the engine's own notes).  The strategy reads it from the
 * journal, in its place in seq order.  Returns 0 or the journal's error. */
int tw_attach_gw_append(tw_attach_gw *g, uint32_t kind, const void *payload,
                        tw_journal_rec *rec);

/* ---- strategy --------------------------------------------------------------- */

typedef struct tw_attach_st {
    int sock;
    int memfd;
    uint8_t *seg;
    size_t seg_bytes;
    tw_attach_hdr *hdr;
    uint32_t n_cores;
    uint64_t generation;
    uint64_t resume_end;  /* the journal's end at WELCOME: records below were written
                             before this strategy attached (read from the journal) */
    uint64_t next_seq;    /* the next journal seq to hand out */
    tw_ring *in[TW_ATTACH_MAX_CORES];  /* from the checked geometry, never re-read */
    tw_ring *out[TW_ATTACH_MAX_CORES];
    int jfd;              /* the journal's fd the gateway passed (a file or a directory) */
    char jpath[32];       /* "/proc/self/fd/<jfd>": a path the journal readers take */
    tw_jseg_follow jr;    /* the journal, following across its segments */
    uint32_t miss_polls;  /* consecutive polls without the next seq in a ring */
    uint32_t journal_after; /* go to the journal after this many such polls (multi-core) */
    uint64_t gw_beat_seen;
    int64_t gw_beat_change_ns;
    /* Counters. */
    uint64_t from_ring, from_journal;
    uint64_t ring_stale; /* ring records below next_seq (already read from the journal) */
} tw_attach_st;

/* Connects to the gateway at sock_path, handshakes (HELLO, WELCOME with the
 * fds, checks the segment with tw_attach_check_segment and the generation,
 * READY) and opens the journal reader (following) at its first record.  Waits at most
 * timeout_ms for the WELCOME (a gateway still resetting holds the
 * connection in its backlog).  Returns 0; -ECONNREFUSED (another strategy
 * is attached); -ETIMEDOUT; -EPROTO / -EBADMSG / ... for anything wrong in
 * what the gateway sent (err names it); -errno. */
int tw_attach_st_connect(tw_attach_st *s, const char *sock_path, int timeout_ms, tw_error *err);

void tw_attach_st_close(tw_attach_st *s);

/* The next up to n records of the journal, in seq order from the first,
 * each exactly once, into out (caller memory): from core rings when one
 * holds the next seq (its CRC checked), else from the journal.  Returns
 * how many (0: nothing new), or a negative code: the journal reader's
 * error, or -EBADMSG for a ring record with a bad CRC (err says which). */
int tw_attach_st_next_burst(tw_attach_st *s, tw_journal_rec *out, uint32_t n, tw_error *err);

/* Before the first tw_attach_st_next_burst(): the records below seq are
 * not handed out (the strategy has their effect from a snapshot); seq
 * must not be below the next one or past resume_end.  Returns 0 or
 * -EINVAL. */
int tw_attach_st_skip_to(tw_attach_st *s, uint64_t seq);

/* Net core's outbound ring (the strategy produces into it). */
static inline tw_ring *tw_attach_st_out_ring(tw_attach_st *s, uint32_t core)
{
    return s->out[core];
}

/* When tw_attach_st_next_burst() returned nothing: sleeps on the
 * strategy's doorbell until the gateway appends a record (its put and
 * append ring it), or timeout_ns (bounded; keep it short enough for the
 * heartbeat and the gateway checks).  Returns 0 at once when the journal
 * already has the next record, 0 when woken, -ETIMEDOUT or -EINTR. */
int tw_attach_st_wait(tw_attach_st *s, int64_t timeout_ns);

/* After the records handed out so far are processed (their intents
 * committed): publishes st_done_seq and wakes every net core that sleeps
 * in tw_attach_gw_wait (no system call for one that is awake). */
void tw_attach_st_done(tw_attach_st *s);

/* After committing intents to core's outbound ring: wakes the net core if
 * it sleeps in tw_attach_gw_wait (no system call otherwise).  Returns 1
 * when it woke it. */
static inline int tw_attach_st_ring_gw(tw_attach_st *s, uint32_t core)
{
    return tw_attach_bell_ring(&s->hdr->gw_bell[core]);
}

/* The strategy's heartbeat: beat is anything that changes (a counter). */
static inline void tw_attach_st_beat(tw_attach_st *s, uint64_t beat)
{
    /* Relaxed: the gateway only compares it with its last reading. */
    __atomic_store_n(&s->hdr->st_beat, beat, __ATOMIC_RELAXED);
}

/* Whether the gateway is still there: 0, -ECONNRESET (the socket hung up:
 * it died or closed), -ETIMEDOUT (its beat has not moved for timeout_ns of
 * now_ns; 0 turns that check off). */
int tw_attach_st_check_gateway(tw_attach_st *s, int64_t now_ns, int64_t timeout_ns);

#ifdef __cplusplus
}
#endif
#endif
