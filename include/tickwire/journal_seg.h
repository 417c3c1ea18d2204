/* The journal in segments (docs/crash.md, "Journal segments").
 *
 * A directory of journal files (journal.h), each a whole journal with
 * today's header and its own first seq, named by that seq:
 *
 *     DIR/00000000000000000001.twj   records 1 .. k
 *     DIR/0000000000000000000k+1.twj records k+1 .. ...
 *
 * (20 decimal digits, so that the names sort as the seqs do).  The writer
 * appends to the last segment and starts a new one when the next append
 * would take it past segment_bytes; an append never spans two segments (a
 * bulk larger than a segment gets a segment of its own).  A new segment
 * is created atomically (journal.h: header in a temporary file, linked
 * into place), so a kill during a rotation leaves either the old last
 * segment or the old one and a new one with a whole header.
 *
 * Every segment but the last must be whole (a header and whole records)
 * and the next one must start at the seq after its last record; anything
 * else is refused naming the segment and the seqs that are missing.  The
 * last segment follows the single-file rules (a torn tail is cut).
 *
 * A path that is a regular file is read as a directory of one segment, so
 * the readers here take today's single-file journals too. */
#ifndef TICKWIRE_JOURNAL_SEG_H
#define TICKWIRE_JOURNAL_SEG_H

#include <stdint.h>

#include "tickwire/journal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TW_JSEG_DEFAULT_BYTES (64ull << 20)
#define TW_JSEG_NAME_LEN 24 /* 20 digits + ".twj" */
#define TW_JSEG_DIR_MAX 256 /* a journal directory's path, its NUL included */

/* One segment as listed: its first seq, its records (from its size), its
 * file name within the directory. */
typedef struct tw_jseg_info {
    uint64_t first_seq;
    uint64_t records;  /* whole records by size (a torn tail not counted) */
    uint64_t bytes;    /* the file's size */
    char name[TW_JSEG_NAME_LEN + 8];
} tw_jseg_info;

/* Lists the segments of dir (or the one file at dir), checked: each
 * header valid, each segment but the last whole, each one starting where
 * the one before it ends.  *out (malloc'd, the caller frees) receives
 * *n entries in seq order.  Returns 0; -TW_EFORMAT with err naming the
 * segment and what is wrong (a missing segment: "records A..B missing
 * between X and Y"); -ENOENT (no segment); -errno. */
int tw_jseg_list(const char *dir, tw_jseg_info **out, uint32_t *n, tw_error *err);

/* ---- writer ---------------------------------------------------------------- */

typedef struct tw_jseg_cfg {
    const char *dir;        /* created if absent */
    uint64_t segment_bytes; /* 0: TW_JSEG_DEFAULT_BYTES; at least a header and a record */
    tw_journal_fsync fsync;
    uint32_t fsync_n;
    uint64_t first_seq;     /* a new journal's first seq (0 means 1) */
    uint64_t mmap_bytes;    /* each segment's appends into a shared mapping (journal.h) */
    /* Tests: called at each point of a rotation (TW_JSEG_AT_*), so a test
     * can kill the writer there.  May be NULL. */
    void (*hook)(int at, void *arg);
    void *hook_arg;
} tw_jseg_cfg;

/* Points of a rotation where tw_jseg_cfg.hook is called. */
enum {
    TW_JSEG_AT_CLOSED = 1,   /* the full segment closed, the next not yet created */
    TW_JSEG_AT_CREATED = 2,  /* the next segment in place with its header alone */
    TW_JSEG_AT_PREAMBLE = 3, /* its preamble record written, not yet the records */
};

typedef struct tw_jseg {
    tw_journal cur;         /* the last segment */
    char dir[TW_JSEG_DIR_MAX];
    uint64_t segment_bytes;
    tw_journal_fsync fsync;
    uint32_t fsync_n;
    uint64_t mmap_bytes;
    void (*hook)(int at, void *arg);
    void *hook_arg;
    uint64_t first_seq;     /* of the oldest segment at open */
    /* The record every new segment starts with (tw_jseg_set_preamble):
     * kind 0 is none. */
    uint32_t pre_kind;
    uint8_t pre_payload[TW_JOURNAL_PAYLOAD];
    /* Counters. */
    uint64_t segments;      /* segments in the directory (at open + created) */
    uint64_t rotations;     /* segments created since open */
} tw_jseg;

/* Opens (creating if absent) the segmented journal at cfg->dir: the
 * segments are listed and checked (tw_jseg_list) and the last is opened
 * as a journal writer (its torn tail cut; the flock held).  Returns as
 * tw_journal_open. */
int tw_jseg_open(tw_jseg *j, const tw_jseg_cfg *cfg, tw_error *err);

/* Appends as tw_journal_append_bulk, rotating first when the records would
 * take the last segment past segment_bytes (and it holds any record). */
int tw_jseg_append_bulk(tw_jseg *j, uint32_t kind, const void *payloads, uint32_t n,
                        tw_journal_rec *recs);
int tw_jseg_append(tw_jseg *j, uint32_t kind, const void *payload, tw_journal_rec *rec);
int tw_jseg_sync(tw_jseg *j);
/* tw_journal_grow_ahead on the last segment, within segment_bytes. */
int tw_jseg_grow_ahead(tw_jseg *j);
/* From now on each segment a rotation creates starts with a record of
 * this kind and payload (its own seq, before the records that caused the
 * rotation), so that whatever segments are left after pruning, the first
 * one says what the journal is (the trader's META: its run and
 * configuration).  A last segment that is not the journal's first and
 * holds no record yet (a kill during a rotation left it so) gets it now.
 * kind 0 turns it off.  0, or the append's error. */
int tw_jseg_set_preamble(tw_jseg *j, uint32_t kind, const void *payload);
void tw_jseg_close(tw_jseg *j);

static inline uint64_t tw_jseg_next_seq(const tw_jseg *j) { return j->cur.next_seq; }

/* ---- reader ---------------------------------------------------------------- */

/* A reader over all segments (not following).  Embedded; one thread. */
typedef struct tw_jseg_reader {
    tw_journal_reader cur;
    tw_jseg_info *segs;
    uint32_t nsegs, at;     /* the segments; the one being read */
    int open_cur;
    int failed;
    uint32_t buf_records;
    char dir[TW_JSEG_DIR_MAX];
    tw_error fail_err;
    uint64_t records;       /* records returned */
    uint64_t torn_bytes;    /* the last segment's torn tail (dropped) */
} tw_jseg_reader;

/* Opens a reader at from_seq (0: the first record there is).  -EINVAL
 * with err naming the first seq kept when from_seq is older than every
 * segment (its records were pruned); otherwise as tw_jseg_list. */
int tw_jseg_reader_open(tw_jseg_reader *r, const char *dir, uint64_t from_seq,
                        uint32_t buf_records, tw_error *err);

/* As tw_journal_read_burst across segments: 0 is the end of the last
 * segment.  A segment that ends before the next one starts (or overlaps
 * it) is -TW_EFORMAT naming both and the missing seqs; a torn tail in any
 * segment but the last is -TW_EFORMAT. */
int tw_jseg_read_burst(tw_jseg_reader *r, tw_journal_rec *recs, uint32_t n, tw_error *err);
void tw_jseg_reader_close(tw_jseg_reader *r);

/* ---- follower --------------------------------------------------------------
 *
 * A reader of a journal another process is still appending to, across its
 * rotations (the strategy process's view of the gateway's journal).  The
 * writer publishes its next seq (the end) after each append; every record
 * below the end exists in some segment.  A read that finds nothing new
 * below the end means the segment it reads has ended: the directory is
 * listed again and the segment holding the next seq opened.  Only when no
 * segment holds it is the end passed to the segment's reader, which then
 * names the corruption (journal.h, tw_journal_reader_expect).  dir may be a
 * single-file journal (then it never rotates) or "/proc/self/fd/N". */
typedef struct tw_jseg_follow {
    tw_journal_reader cur;
    int open_cur;
    char dir[TW_JSEG_DIR_MAX];
    uint64_t first_seq;  /* the journal's first seq at open */
    uint64_t seg_first;  /* the segment being read */
    uint64_t seq;        /* the next record returned */
    uint64_t end;        /* records below it are written (the writer said) */
    uint32_t buf_records;
    uint64_t switches;   /* segments moved on to */
} tw_jseg_follow;

/* Opens a follower at from_seq (0: the journal's first record).  Errors
 * as tw_jseg_reader_open. */
int tw_jseg_follow_open(tw_jseg_follow *f, const char *dir, uint64_t from_seq,
                        uint32_t buf_records, tw_error *err);
/* The writer's end: records below end_seq exist.  Never lowers it. */
void tw_jseg_follow_expect(tw_jseg_follow *f, uint64_t end_seq);
/* Moves to seq (the next record returned).  0, or -EINVAL (below the
 * journal's first) / the open's error for another segment. */
int tw_jseg_follow_seek(tw_jseg_follow *f, uint64_t seq, tw_error *err);
/* Up to n records from the follower's seq: 0 is nothing new yet; a
 * negative code (sticky) names the segment and what is wrong. */
int tw_jseg_follow_read(tw_jseg_follow *f, tw_journal_rec *recs, uint32_t n, tw_error *err);
void tw_jseg_follow_close(tw_jseg_follow *f);

/* ---- retention ------------------------------------------------------------- */

/* Deletes the segments of dir whose every record is older than
 * oldest_needed_seq (journal_keep = snapshots: the seq after the oldest
 * kept snapshot), oldest first, never the last segment, then fsyncs the
 * directory.  journal_keep = all never calls it.  Returns the number
 * deleted, or a negative code (as tw_jseg_list; -errno of unlink). */
int tw_journal_prune(const char *dir, uint64_t oldest_needed_seq, tw_error *err);

/* Removes a journal: the segments of dir, then dir when nothing else is
 * left in it (or dir itself when it is a single-file journal).  0 (also
 * when nothing is there) or -errno with err naming what could not go. */
int tw_jseg_remove(const char *dir, tw_error *err);

#ifdef __cplusplus
}
#endif
#endif
