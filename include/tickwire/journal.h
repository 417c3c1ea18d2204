/* The gateway's journal (live.md, "Crash isolation and recovery";
 * docs/crash.md).
 *
 * An append-only file of fixed-size checksummed records: every inbound
 * event the gateway hands to the strategy (a 64-byte tw_ev) and every
 * intent it sent for it (a 64-byte tw_out), in the order the strategy is
 * to see them, each with a record sequence number that grows by one.  The
 * gateway writes it; a restarted strategy reads it from the first record
 * to rebuild its state (the strategy core is deterministic), then follows
 * it while the gateway goes on appending.  The same spirit as the FIX
 * store (fix_session.h), and the same CRC-32C (tw_crc32c, util.h).
 *
 * File layout (little-endian; a journal is read on the machine that wrote
 * it):
 *
 *     0    header, 64 bytes (tw_journal_hdr): magic, version, sizes, the
 *          first record's sequence number, CRC-32C of the rest
 *     64   records, 80 bytes each (tw_journal_rec): record i at
 *          64 + 80 i has seq = first_seq + i
 *
 * A record is [u32 magic|kind][u32 crc32c][u64 seq][64-byte payload]; the
 * CRC covers everything but itself.  Because records have one size and
 * their sequence numbers follow from their place, a record that does not
 * check out is either the last one, cut short by a kill or a power loss
 * (a torn tail: dropped and counted), or damage with good records after
 * it (corruption: refused, naming the file and the offset).  The rules
 * are in docs/crash.md, "Journal format".
 *
 * Writing: one writer per journal (an exclusive flock(2) on open: a second
 * writer gets -EBUSY).  Appends are pwrite(2) of whole records, or, with
 * mmap_bytes, stores into a shared mapping of preallocated space (no system
 * call per record) with each record's first word stored last, so that a
 * kill leaves whole records, at most one torn record and zeros.
 *
 * Reading: any number of readers, in other processes too, with or without
 * the writer running.  A following reader (follow = 1) treats the end of
 * what is written as "nothing yet" and picks up records as they are
 * appended. */
#ifndef TICKWIRE_JOURNAL_H
#define TICKWIRE_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tickwire/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TW_JOURNAL_MAGIC "TWJRNL01" /* 8 bytes, no NUL in the file */
#define TW_JOURNAL_VERSION 1u
#define TW_JOURNAL_HDR_BYTES 64u
#define TW_JOURNAL_PAYLOAD 64u   /* sizeof(tw_ev) == sizeof(tw_out) */
#define TW_JOURNAL_REC_BYTES 80u
#define TW_JOURNAL_REC_MAGIC 0x6a775400u /* top 24 bits of a record's first word */
#define TW_JOURNAL_KIND_MASK 0xffu

/* Record kinds (the low 8 bits of the first word; 0 is never valid, so a
 * zeroed slot is never a record).  The journal itself gives them no
 * meaning beyond that; these are the engine's. */
enum {
    TW_JOURNAL_EV = 1,  /* an inbound event handed to the strategy (tw_ev) */
    TW_JOURNAL_OUT = 2, /* an intent of the strategy the gateway sent (tw_out) */
    TW_JOURNAL_KIND_APP = 16, /* kinds from here to 255 are the application's */
};

/* The file header. */
typedef struct tw_journal_hdr {
    char magic[8];          /* TW_JOURNAL_MAGIC */
    uint32_t version;       /* TW_JOURNAL_VERSION */
    uint32_t hdr_bytes;     /* TW_JOURNAL_HDR_BYTES: where the records start */
    uint32_t rec_bytes;     /* TW_JOURNAL_REC_BYTES */
    uint32_t payload_bytes; /* TW_JOURNAL_PAYLOAD */
    uint64_t first_seq;     /* seq of the record at hdr_bytes (>= 1) */
    uint8_t reserved[28];   /* zero */
    uint32_t crc;           /* tw_crc32c of bytes [0, 60) */
} tw_journal_hdr;

/* One record, the same bytes in the file, in a reader's output and in the
 * inbound ring slots of shm_attach.h (so the gateway builds it once). */
typedef struct tw_journal_rec {
    uint32_t tag;   /* TW_JOURNAL_REC_MAGIC | kind */
    uint32_t crc;   /* tw_crc32c of tag, then of seq and payload */
    uint64_t seq;   /* first_seq + the record's index */
    uint8_t payload[TW_JOURNAL_PAYLOAD] TW_ALIGNED(8);
} tw_journal_rec;

_Static_assert(sizeof(tw_journal_hdr) == TW_JOURNAL_HDR_BYTES, "journal header size");
_Static_assert(offsetof(tw_journal_hdr, first_seq) == 24, "journal header first_seq offset");
_Static_assert(offsetof(tw_journal_hdr, crc) == 60, "journal header crc offset");
_Static_assert(sizeof(tw_journal_rec) == TW_JOURNAL_REC_BYTES, "journal record size");
_Static_assert(offsetof(tw_journal_rec, seq) == 8, "journal record seq offset");
_Static_assert(offsetof(tw_journal_rec, payload) == 16, "journal record payload offset");
_Static_assert(TW_JOURNAL_HDR_BYTES % 16 == 0 && TW_JOURNAL_REC_BYTES % 16 == 0,
               "records 16-byte aligned in the file and in ring slots");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the journal's file format is little-endian; a big-endian port must swap fields"
#endif

static inline uint32_t tw_journal_rec_kind(const tw_journal_rec *r)
{
    return r->tag & TW_JOURNAL_KIND_MASK;
}

/* The CRC a record must carry (over tag, seq and payload). */
uint32_t tw_journal_rec_crc(const tw_journal_rec *r);

/* ---- writer ---------------------------------------------------------------- */

typedef enum tw_journal_fsync {
    TW_JOURNAL_FSYNC_NONE = 0,   /* the page cache only: survives kill -9, not power loss */
    TW_JOURNAL_FSYNC_EVERY = 1,  /* fdatasync (msync in mmap mode) after every append */
    TW_JOURNAL_FSYNC_EVERY_N = 2 /* ... after every fsync_n records */
} tw_journal_fsync;

typedef struct tw_journal_cfg {
    const char *path;    /* the file; created if absent */
    int fd;              /* used when path is NULL (a memfd, an open file); the journal owns it */
    tw_journal_fsync fsync;
    uint32_t fsync_n;    /* for TW_JOURNAL_FSYNC_EVERY_N (0 means 1) */
    uint64_t mmap_bytes; /* 0: pwrite per append; else append into a shared mapping,
                            the file extended this many bytes at a time */
    uint64_t first_seq;  /* seq of a new journal's first record (0 means 1); an
                            existing journal keeps its own */
} tw_journal_cfg;

/* A writer.  Embedded in the caller's struct; one thread at a time. */
typedef struct tw_journal {
    int fd;
    int failed;          /* 0, or the -errno every append returns after a rollback failed */
    char *map;           /* mmap mode: the shared mapping, map_res bytes of address */
    uint64_t map_cap;    /* the file's bytes under it (the rest is past its end) */
    uint64_t map_res;
    uint64_t map_step;   /* mmap_bytes */
    uint64_t size;       /* bytes of header and records written */
    uint64_t synced;     /* bytes known to be on disk (fsync policy) */
    uint64_t first_seq;
    uint64_t next_seq;   /* seq the next append gets */
    tw_journal_fsync fsync;
    uint32_t fsync_n, unsynced;
    char name[160];      /* the path (or "fd N"), for messages */
    /* Counters. */
    uint64_t records;      /* records in the journal (found at open + appended) */
    uint64_t appends;      /* records appended since open */
    uint64_t syncs;        /* fdatasync / msync calls */
    uint64_t write_errors; /* appends that failed (each rolled back) */
    uint64_t torn_bytes;   /* bytes of a torn last record dropped at open (0: none) */
    uint64_t torn_offset;  /* where that record started */
    uint64_t zero_bytes;   /* zeros after the last record dropped at open (mmap-mode
                              free space, or blocks a power loss left unwritten) */
} tw_journal;

/* Opens the journal, creating it if absent (atomically, when by path: the
 * header is written to a temporary file that is then linked into place, so
 * nobody ever sees a journal without a whole header), else validating
 * every record.  A torn last record and a zero tail are cut off (counted
 * in torn_bytes / zero_bytes); after that next_seq follows the last
 * record.  Takes an exclusive flock on the file.  Returns 0; -TW_EFORMAT
 * (corruption, with err naming the file, the offset and what is wrong:
 * nothing is cut or changed then); -EBUSY (another writer has it open);
 * -EINVAL (bad cfg); -errno.  On error nothing is left open. */
int tw_journal_open(tw_journal *j, const tw_journal_cfg *cfg, tw_error *err);

/* Appends one record of kind (1..255) with the 64 payload bytes at
 * payload; rec, if not NULL, receives the record as written (its seq and
 * CRC: what the gateway puts in the strategy's ring).  Returns 0, or
 * -EINVAL (kind), -errno of the write or the sync (the append is rolled
 * back: the file and next_seq are as before), -EIO after a rollback that
 * itself failed (the journal refuses appends from then on). */
int tw_journal_append(tw_journal *j, uint32_t kind, const void *payload, tw_journal_rec *rec);

/* Appends n records of one kind (payloads: n x 64 bytes) as one write, all
 * or nothing: returns 0 with recs[0..n) (if not NULL) as written, or an
 * error as tw_journal_append with nothing appended.  A kill during it
 * leaves a prefix of them (and at most one torn record). */
int tw_journal_append_bulk(tw_journal *j, uint32_t kind, const void *payloads, uint32_t n,
                           tw_journal_rec *recs);

/* Makes everything appended so far durable (fdatasync, or msync in mmap
 * mode), whatever the policy.  Returns 0 or -errno. */
int tw_journal_sync(tw_journal *j);

/* For an idle turn of the writer's thread, in mmap mode: extends the file
 * by a piece (util.h, tw__fmap_ahead) toward 4 x mmap_bytes past the
 * records, and no further than limit bytes (0: no limit; a segment's
 * size), so that appends rarely extend the file themselves.  1 when it
 * did, 0 when there was nothing to do (pwrite mode included), -errno
 * (nothing is lost: the next append grows the file itself). */
int tw_journal_grow_ahead(tw_journal *j, uint64_t limit);

/* Closes the file (a mapped journal is cut to its records first, so a
 * clean close leaves no zero tail).  Safe on a journal whose open failed. */
void tw_journal_close(tw_journal *j);

static inline uint64_t tw_journal_next_seq(const tw_journal *j) { return j->next_seq; }

/* ---- reader ---------------------------------------------------------------- */

typedef struct tw_journal_reader_cfg {
    const char *path;     /* the file, opened read-only */
    int fd;               /* used when path is NULL; the reader dups it (the caller keeps its own) */
    int follow;           /* 1: the writer may still be appending (see the reader below) */
    uint64_t from_seq;    /* first record to return (0: the journal's first) */
    uint32_t buf_records; /* read-ahead, in records (0: 512) */
} tw_journal_reader_cfg;

/* A reader.  Embedded in the caller's struct; one thread at a time.  The
 * read-ahead buffer is allocated by open (never while reading). */
typedef struct tw_journal_reader {
    int fd;
    int follow;
    int at_end;          /* not following: the end was reached */
    int failed;          /* 0, or the error every later read returns */
    uint64_t first_seq;
    uint64_t off;        /* offset of the next record to return */
    uint64_t seq;        /* its seq */
    uint64_t known_end;  /* following: records below this seq are known written */
    uint8_t *buf;        /* read-ahead: buf_len bytes of the file from buf_off */
    uint32_t buf_cap, buf_len;
    uint64_t buf_off;
    int probe;           /* following: the last read found nothing new: read one record */
    char name[160];
    tw_error fail_err;   /* the message of failed */
    /* Counters. */
    uint64_t records;     /* records returned */
    uint64_t torn_bytes;  /* not following: bytes of a torn last record dropped */
    uint64_t torn_offset;
    uint64_t zero_bytes;  /* not following: zeros after the last record */
    uint64_t polls_empty; /* following: reads that found nothing new */
    uint64_t rereads;     /* following: records read again because a later one was
                             already valid (a write seen in progress) */
} tw_journal_reader;

/* Opens a reader and checks the header.  Returns 0; -TW_EFORMAT (not a
 * journal, another version, a bad header CRC: err names the file and the
 * offset); -ENODATA (shorter than a header: a journal being created by fd);
 * -EINVAL (from_seq below the journal's first); -errno. */
int tw_journal_reader_open(tw_journal_reader *r, const tw_journal_reader_cfg *cfg,
                           tw_error *err);

/* Reads up to n records at the reader's position into recs (caller memory,
 * n records), each checked (magic, kind, CRC, the expected seq).  Returns
 * how many (0..n), or a negative code with err naming the file and offset:
 * -TW_EFORMAT when a record is corrupt (a bad record with a good one after
 * it, a good CRC with the wrong seq, or more than one record's worth of
 * non-zero bytes that are not records), -errno of the read.  An error is
 * sticky (every later call returns it).  Not following, 0 means the end:
 * a torn last record or a zero tail is then counted (torn_bytes,
 * zero_bytes) and never returned.  Following, 0 means nothing new yet: the
 * end of what is written, a record still being written, or a torn one
 * (the reader cannot tell them apart until known_end says the record
 * exists; see tw_journal_reader_expect). */
int tw_journal_read_burst(tw_journal_reader *r, tw_journal_rec *recs, uint32_t n, tw_error *err);

/* Following: the writer says every record below end_seq is written (it
 * publishes its next_seq after each append, e.g. in the shared-memory
 * header).  A record below it that still does not check out on a second
 * read is corruption, not a write in progress.  Never lowers known_end. */
void tw_journal_reader_expect(tw_journal_reader *r, uint64_t end_seq);

/* Moves the reader to seq (the next record returned is seq).  O(1): the
 * offset follows from seq; the records skipped are not checked.  Returns
 * 0, or -EINVAL for a seq below the first. */
int tw_journal_reader_seek(tw_journal_reader *r, uint64_t seq);

void tw_journal_reader_close(tw_journal_reader *r);

#ifdef __cplusplus
}
#endif
#endif
