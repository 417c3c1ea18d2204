/* Snapshot files (docs/crash.md, "Snapshot files").
 *
 * A versioned, checksummed container of typed sections: the state a
 * process can restart from instead of replaying its journal from seq 1.
 * The container gives sections no meaning beyond their id; the owners
 * (strategy core, gateway) define and fill them.  One file per snapshot,
 * DIR/snap-<journal seq, 20 digits>.tws, written atomically (a temporary
 * file, fsync, rename, directory fsync); the newest `keep` are kept.
 *
 * Layout (little-endian, 8-byte aligned):
 *
 *     0    header, 64 bytes (tw_snap_hdr): magic, version, the journal seq
 *          the state reflects, body bytes, section count, config digest,
 *          CRC-32C of bytes [0, 60)
 *     64   sections: [u32 id][u32 crc32c of the data][u64 len] then len
 *          bytes, zero-padded to a multiple of 8
 *     end  trailer, 16 bytes: "TWSNAPND", u32 crc32c of every byte before
 *          the trailer, u32 zero
 *
 * Loading picks the newest file that checks out; one that does not
 * (torn, a bit flipped, another version) is renamed to *.bad, with the
 * reason reported to the caller, and the next older one is tried.  A
 * snapshot that checks out but was taken under another configuration
 * (config digest) or kernel set (the TW_SNAP_SEC_KERNELS section) is
 * refused naming what differs: it is not set aside (the configuration
 * may be the one that is wrong). */
#ifndef TICKWIRE_SNAPSHOT_H
#define TICKWIRE_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "tickwire/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TW_SNAP_MAGIC "TWSNAP01"
#define TW_SNAP_END_MAGIC "TWSNAPND"
#define TW_SNAP_VERSION 1u
#define TW_SNAP_HDR_BYTES 64u
#define TW_SNAP_SEC_HDR_BYTES 16u
#define TW_SNAP_TRAILER_BYTES 16u
#define TW_SNAP_DIGEST_BYTES 16u
#define TW_SNAP_MAX_SECTIONS 4096u
#define TW_SNAP_DEFAULT_KEEP 2u

/* Section ids.  1..255 the container's own and the strategy core's,
 * 256..511 the gateway's; the content owners define the rest. */
enum {
    TW_SNAP_SEC_KERNELS = 1,  /* text, one "name abi" line per instance: compared on load */
    TW_SNAP_SEC_INSTANCE = 2, /* strategy: per instance kernel name, ABI, params, state, books */
    TW_SNAP_SEC_RISK = 3,
    TW_SNAP_SEC_COUNTERS = 4,
    TW_SNAP_SEC_ORDERS = 5,   /* open orders */
    TW_SNAP_SEC_INTENTS = 6,  /* pending intents */
    TW_SNAP_SEC_TRADES_CSV = 8, /* u64: the trades CSV's length after the rows of every
                                   trade the state booked (flushed before the copy) */
    TW_SNAP_SEC_STRATEGY = 7, /* the strategy core's whole state as one payload
                                 (tw_strategy_state_save: 2..6 in one) */
    TW_SNAP_SEC_GW_ORDERS = 256,  /* gateway: order table */
    TW_SNAP_SEC_GW_CLORDID = 257, /* ClOrdID counters */
    TW_SNAP_SEC_GW_SESSIONS = 258, /* per-session last seqs */
    TW_SNAP_SEC_GW_FOLD = 259     /* a session's gateway fold: what its net core's
                                     recovery takes from the journal (one per
                                     session; src/trade/gwfold.h) */
};

typedef struct tw_snap_hdr {
    char magic[8];
    uint32_t version;
    uint32_t hdr_bytes;
    uint64_t journal_seq;  /* the last journal record the state reflects */
    uint64_t body_bytes;   /* sections, from hdr_bytes to the trailer */
    uint32_t nsections;
    uint32_t reserved0;    /* zero */
    uint8_t digest[TW_SNAP_DIGEST_BYTES]; /* the configuration's digest */
    uint32_t reserved1;    /* zero */
    uint32_t crc;          /* tw_crc32c of bytes [0, 60) */
} tw_snap_hdr;

_Static_assert(sizeof(tw_snap_hdr) == TW_SNAP_HDR_BYTES, "snapshot header size");
_Static_assert(offsetof(tw_snap_hdr, crc) == 60, "snapshot header crc offset");

/* ---- building and writing ------------------------------------------------- */

/* A snapshot being built in memory (sections appended, then written). */
typedef struct tw_snap_buf {
    uint8_t *buf;
    size_t len, cap;
    uint32_t nsections;
    int failed; /* an allocation failed: writing refuses */
} tw_snap_buf;

void tw_snap_begin(tw_snap_buf *b, uint64_t journal_seq, const uint8_t digest[TW_SNAP_DIGEST_BYTES]);
/* Appends a section (copied).  Returns 0 or -ENOMEM / -E2BIG (too many). */
int tw_snap_add(tw_snap_buf *b, uint32_t id, const void *data, uint64_t len);
void tw_snap_free(tw_snap_buf *b);

/* Points in tw_snap_write where a test hook is called (to kill the writer there). */
enum {
    TW_SNAP_AT_PARTIAL = 1,     /* half the temporary written */
    TW_SNAP_AT_BEFORE_FSYNC = 2,/* the temporary whole, not yet synced */
    TW_SNAP_AT_RENAMED = 3,     /* renamed into place, older ones not yet deleted */
};

typedef struct tw_snap_write_cfg {
    const char *dir;    /* created if absent */
    uint32_t keep;      /* snapshots kept after this one is in place (0: TW_SNAP_DEFAULT_KEEP) */
    void (*hook)(int at, void *arg);
    void *arg;
} tw_snap_write_cfg;

/* Finishes b (the trailer) and writes it as DIR/snap-<seq>.tws, then
 * deletes the older snapshot files beyond keep (and *.tmp leftovers).
 * Returns 0 or -errno with err naming the step. */
int tw_snap_write(tw_snap_buf *b, const tw_snap_write_cfg *cfg, tw_error *err);

/* ---- the writer thread (off the hot path) ----------------------------------
 *
 * The core that owns the state copies it into a slot (tw_snap_slot_section:
 * the section's bytes in place, no allocation) and commits it; a thread of
 * the writer's own computes the CRCs, writes the file (tw_snap_write: the
 * temporary, fsync, rename, directory fsync, the older ones beyond keep
 * deleted), then calls `written`, where the caller prunes its journal.
 * Two slots: while one is being written the core may fill the other; when
 * both are busy tw_snap_writer_begin() returns NULL and that snapshot is
 * skipped (counted), so the core never waits on the disk.  Sections whose
 * size the core cannot know (they grow with the run) are appended by the
 * writer thread itself (`append`), after the slot's. */
typedef struct tw_snap_writer tw_snap_writer;
typedef struct tw_snap_slot tw_snap_slot;

typedef struct tw_snap_writer_cfg {
    tw_snap_write_cfg write; /* dir, keep, test hook (called on the writer thread) */
    const uint8_t *digest;   /* TW_SNAP_DIGEST_BYTES, copied (NULL: zeros) */
    size_t slot_bytes;       /* the sections of one snapshot, headers and padding
                                included (tw_snap_section_bytes) */
    /* After a snapshot is in place, on the writer thread: its journal seq
     * and the oldest kept snapshot's (journal_keep = snapshots prunes the
     * journal to oldest_kept + 1).  May be NULL. */
    void (*written)(void *arg, uint64_t seq, uint64_t oldest_kept);
    /* On the writer thread, before the CRCs, for every section of a slot:
     * what its owner leaves off the hot path (tw_strategy_state_seal for
     * TW_SNAP_SEC_STRATEGY).  May be NULL. */
    void (*finish)(void *arg, uint32_t id, void *data, uint64_t len);
    /* On the writer thread, after the slot's sections (finished): more
     * sections for the snapshot at journal seq `seq`, appended to b
     * (tw_snap_add: it grows).  Non-zero (err says why): that snapshot
     * fails (counted, last_err).  May be NULL (the slot alone, written in
     * place). */
    int (*append)(void *arg, uint64_t seq, tw_snap_buf *b, tw_error *err);
    void *arg;
} tw_snap_writer_cfg;

/* Bytes a section of len data bytes takes in a slot. */
static inline size_t tw_snap_section_bytes(uint64_t len)
{
    return TW_SNAP_SEC_HDR_BYTES + (size_t)((len + 7) & ~(uint64_t)7);
}

typedef struct tw_snap_writer_stats {
    uint64_t committed; /* snapshots handed over */
    uint64_t written;   /* in place */
    uint64_t skipped;   /* tw_snap_writer_begin() found no free slot */
    uint64_t failed;    /* tw_snap_write failed (last_err says why) */
    uint64_t last_seq;  /* the newest written */
    char last_err[256];
} tw_snap_writer_stats;

/* Starts the thread; the snapshots already in write.dir count as kept
 * (for `oldest_kept`).  0 or -errno with err. */
int tw_snap_writer_start(tw_snap_writer **out, const tw_snap_writer_cfg *cfg, tw_error *err);
/* Core: a free slot, or NULL (both busy: skipped, counted).  One core. */
tw_snap_slot *tw_snap_writer_begin(tw_snap_writer *w);
/* Core: room for a section of len bytes in the slot: the pointer to fill
 * (8-byte aligned), or NULL when the slot has no room (the snapshot will
 * then fail, counted). */
void *tw_snap_slot_section(tw_snap_slot *s, uint32_t id, uint64_t len);
/* Core: hands the slot over as the state at journal_seq (no system call
 * unless the writer thread sleeps: then one wake-up). */
void tw_snap_writer_commit(tw_snap_writer *w, tw_snap_slot *s, uint64_t journal_seq);
/* Waits until every committed snapshot is written (or failed). */
void tw_snap_writer_flush(tw_snap_writer *w);
void tw_snap_writer_stats_get(tw_snap_writer *w, tw_snap_writer_stats *out);
/* Flushes, stops the thread, frees. */
void tw_snap_writer_stop(tw_snap_writer *w);

/* ---- checking and loading --------------------------------------------------- */

typedef struct tw_snap_section {
    uint32_t id;
    uint64_t len;
    const uint8_t *data; /* into the loaded file's bytes */
} tw_snap_section;

/* A snapshot that checked out. */
typedef struct tw_snap {
    uint8_t *file;       /* the whole file (malloc'd) */
    size_t file_len;
    tw_snap_hdr hdr;
    tw_snap_section *sec;
    uint32_t nsec;
    char name[64];       /* its file name */
} tw_snap;

/* Checks len bytes as a snapshot: header, every section's CRC and bounds,
 * the trailer's CRC.  On 0, s->sec points into p (s->file stays NULL).
 * Returns 0, -TW_EFORMAT (err names the offset and what is wrong) or
 * -EPROTONOSUPPORT (another version). */
int tw_snap_parse(const uint8_t *p, size_t len, tw_snap *s, tw_error *err);

/* The first section with id, or NULL. */
const tw_snap_section *tw_snap_find(const tw_snap *s, uint32_t id);

void tw_snap_release(tw_snap *s);

/* What the loader expects (NULL / 0: not compared). */
typedef struct tw_snap_expect {
    const uint8_t *digest;  /* TW_SNAP_DIGEST_BYTES */
    const char *kernels;    /* the TW_SNAP_SEC_KERNELS text */
    /* The owners' own checks of a snapshot that checks out and matches
     * digest and kernels: non-zero (err saying why) and it is not used
     * (not set aside either: it may be a build's that wrote other
     * sections), the next older one is tried.  May be NULL. */
    int (*accept)(void *arg, const tw_snap *s, tw_error *err);
    void *arg;
} tw_snap_expect;

/* What the loader did with files that did not check out. */
typedef struct tw_snap_report {
    uint32_t set_aside;     /* files renamed to *.bad */
    uint32_t refused;       /* files exp->accept refused (left in place) */
    char reasons[4][224];   /* the first four reasons (of either), each naming its file */
} tw_snap_report;

/* Loads the newest snapshot of dir that checks out and that exp->accept
 * takes (files that do not check out are set aside, see above).  Returns
 * 0 with s filled; -ENOENT when none is usable (report says what was set
 * aside or refused); -ESTALE when the newest that
 * checks out differs from exp, err naming what (config digest, or the
 * first kernel line that differs); -errno. */
int tw_snap_load(const char *dir, const tw_snap_expect *exp, tw_snap *s, tw_snap_report *rep,
                 tw_error *err);

/* One file's check status, for `journal info`: 0 valid, else the error
 * with err saying why. */
int tw_snap_check_file(const char *path, tw_snap *s, tw_error *err);

#ifdef __cplusplus
}
#endif
#endif
