/* FIX session layer (4.2 and 4.4, initiator and acceptor) and its
 * crash-safe store (docs/design/fix.md, "Session layer").
 *
 * The session never reads the clock and never touches a socket: the caller
 * passes now_ns into every call and gives it a byte-stream interface
 * (write, close), so kernel TCP, the userspace stack and the simulated
 * network all drive the same code.
 *
 * Time.  Every entry point takes one `now_ns`: CLOCK_MONOTONIC in ns
 * (tw_clock_now_ns(), or a simulated clock), which drives the timers
 * (heartbeats, TestRequest, logon and logout timeouts, resend retries).
 * The wall-clock time the session writes (SendingTime 52, and 122 on
 * resends and gap fills) is now_ns + epoch_offset_ns, an offset the
 * session holds: the driver sets it in cfg.epoch_offset_ns from
 * tw_clock_epoch_offset_ns() (and again with
 * tw_fix_session_set_epoch_offset() if it wants to follow clock steps).
 * A simulation passes any fixed offset, or 0 with a now_ns that counts
 * from an epoch time of its choosing, and stays deterministic.  The
 * application stamps its own epoch fields (TransactTime 60) with
 * tw_fix_session_epoch_ns(s, now_ns), the same time SendingTime gets.
 *
 * The store is an append-only file of checksummed records:
 *     [u32 magic|type][u32 payload length][u32 crc32c(header[0..8) + payload)][payload]
 * holding the next sequence numbers and every sent application message
 * (written before the message reaches the stream, so a crash can lose
 * neither).  On open a torn last record is detected and cut off; a damaged
 * record followed by valid ones is reported as corruption, never silently
 * dropped. */
#ifndef TICKWIRE_FIX_SESSION_H
#define TICKWIRE_FIX_SESSION_H

#include "tickwire/common.h"
#include "tickwire/fix.h"
#include "tickwire/fix_build.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- store */

typedef enum tw_fix_fsync {
    TW_FIX_FSYNC_NONE = 0,  /* leave it to the kernel (survives kill -9, not power loss) */
    TW_FIX_FSYNC_EVERY = 1, /* fdatasync after every record */
    TW_FIX_FSYNC_EVERY_N = 2 /* fdatasync after every fsync_n records */
} tw_fix_fsync;

typedef struct tw_fix_store_cfg {
    const char *path;    /* created if absent; or NULL and fd >= 0 */
    int fd;              /* used when path is NULL (e.g. a memfd); the store owns it */
    tw_fix_fsync fsync;
    uint32_t fsync_n;    /* for TW_FIX_FSYNC_EVERY_N */
    uint32_t index_cap;  /* initial message index capacity (default 65536) */
    uint32_t pad_;
    /* > 0: append by copying into a shared mapping of the file (the file
     * extended this many bytes at a time) instead of one pwritev per
     * record: no system call per message.  The file then carries a zeroed
     * tail while open (and after a crash), which open() recognises as free
     * space, not as a torn record; a clean close cuts it off. */
    uint64_t mmap_bytes;
} tw_fix_store_cfg;

typedef struct tw_fix_store_ent {
    uint64_t seq;
    uint64_t off; /* file offset of the record's payload */
    uint32_t len; /* payload length */
    uint32_t pad_;
} tw_fix_store_ent;

typedef struct tw_fix_store {
    int fd;
    tw_fix_fsync fsync;
    uint32_t fsync_n, unsynced;
    uint64_t size;     /* bytes of valid records (the file is cut to this) */
    uint64_t next_out; /* next MsgSeqNum we send */
    uint64_t next_in;  /* next MsgSeqNum we expect */
    tw_fix_store_ent *ents; /* sent application messages, ascending seq */
    uint32_t n, cap;
    uint64_t records;       /* valid records read or written */
    uint64_t torn_bytes;    /* bytes cut off at open (a torn last record) */
    uint64_t write_errors;
    char *map;         /* mmap mode: the file mapped shared, map_res bytes of address */
    uint64_t map_cap;  /* the file's bytes under it (the rest is past its end) */
    uint64_t map_res;
    uint64_t map_step; /* mmap_bytes */
    uint64_t synced;   /* mmap mode: records before this offset are msync'ed */
} tw_fix_store;

/* Record types (the low byte of the first header word). */
#define TW_FIX_REC_SEQS 1  /* u64 next_out, u64 next_in */
#define TW_FIX_REC_MSG 2   /* u64 seq, i64 orig_sending_ns, u32 type_len, type, body */
#define TW_FIX_REC_RESET 3 /* sequence reset: forget messages, seqs back to 1 */
#define TW_FIX_REC_MAGIC 0x54574600u /* "\0FWT": high bytes of the first word */
#define TW_FIX_REC_HDR 12
#define TW_FIX_REC_MAX (1u << 20)   /* largest payload accepted on read */
#define TW_FIX_STORE_MAGIC "TWFIXST1" /* 8-byte file header */

/* Opens (creating if absent) and replays the store.  Returns 0 (a torn last
 * record is cut off and counted in s->torn_bytes; a zero-filled tail, as an
 * mmap-mode store leaves, is free space and not counted); -TW_EFORMAT when a record
 * in the middle is damaged (err names its offset; the file is left
 * untouched); -errno on I/O errors. */
int tw_fix_store_open(tw_fix_store *s, const tw_fix_store_cfg *cfg, tw_error *err);
void tw_fix_store_close(tw_fix_store *s);

/* Appends records.  Return 0 or -errno (a failed append is rolled back so
 * the file never holds a half record written by a live process). */
int tw_fix_store_set_seqs(tw_fix_store *s, uint64_t next_out, uint64_t next_in);
int tw_fix_store_add_msg(tw_fix_store *s, uint64_t seq, int64_t orig_sending_ns,
                         const char *msg_type, size_t type_len, const char *body,
                         size_t body_len);
int tw_fix_store_reset(tw_fix_store *s);
/* For an idle turn of the thread that appends, in mmap mode: extends the
 * file by a piece toward 4 x mmap_bytes past the records (journal.h,
 * tw_journal_grow_ahead).  1 when it did, 0 when there was nothing to do,
 * -errno (nothing is lost: the next append grows the file itself). */
int tw_fix_store_grow_ahead(tw_fix_store *s);

/* A stored message read back; type and body point into the caller buffer. */
typedef struct tw_fix_stored {
    uint64_t seq;
    int64_t orig_sending_ns;
    const char *type;
    const char *body;
    uint32_t type_len;
    uint32_t body_len;
} tw_fix_stored;

/* Index of the first stored message with seq >= `seq` (s->n if none). */
uint32_t tw_fix_store_lower_bound(const tw_fix_store *s, uint64_t seq);
/* Reads message i of the index into buf.  Returns 0, -ENOBUFS, -TW_EFORMAT
 * (the record changed under us), -errno. */
int tw_fix_store_read(const tw_fix_store *s, uint32_t i, char *buf, size_t cap,
                      tw_fix_stored *out);

/* -------------------------------------------------------------- session */

typedef enum tw_fix_state {
    TW_FIX_DISCONNECTED = 0, /* no stream */
    TW_FIX_CONNECTED,        /* stream up, no Logon yet (acceptor waits for it) */
    TW_FIX_LOGON_SENT,       /* initiator sent Logon, waits for the answer */
    TW_FIX_ACTIVE,           /* logged on */
    TW_FIX_LOGOUT_SENT       /* we sent Logout, wait for the answer or a timeout */
} tw_fix_state;

/* Events reported to the application. */
typedef enum tw_fix_event {
    TW_FIX_EV_LOGON = 1,
    TW_FIX_EV_LOGOUT,        /* logout handshake done (or peer logged out) */
    TW_FIX_EV_DISCONNECT,    /* the session closed the stream; text says why */
    TW_FIX_EV_REJECT_SENT,   /* we sent a session Reject; text says why */
    TW_FIX_EV_REJECT_RCVD,   /* peer sent Reject (35=3) */
    TW_FIX_EV_GAP,           /* inbound gap detected; ResendRequest sent */
    TW_FIX_EV_GARBLED,       /* bytes dropped as garbled */
    TW_FIX_EV_RESEND         /* we answered a ResendRequest */
} tw_fix_event;

/* The byte stream.  write must take all bytes or fail (return <0; the
 * session then closes).  close is called once when the session ends the
 * connection. */
typedef struct tw_fix_stream {
    int (*write)(void *ctx, const char *buf, size_t len);
    void (*close)(void *ctx);
    void *ctx;
} tw_fix_stream;

typedef struct tw_fix_session tw_fix_session;

typedef struct tw_fix_app {
    /* An application message in sequence (possdup: PossDupFlag=Y), as
     * tw_fix_decode() gave it: d->msg holds every field as a view, d->kind
     * and d->u the typed body when d->rc is 0 (the session checked the
     * header; a body that does not decode, d->rc < 0, is the
     * application's to judge), X/W entries in cfg.md_entries.  Valid
     * during the call only. */
    void (*on_msg)(void *ctx, tw_fix_session *s, const tw_fix_decoded *d, int possdup);
    void (*on_event)(void *ctx, tw_fix_session *s, tw_fix_event ev, const char *text);
    /* Optional: a TestRequest in sequence.  Return 0 and the session
     * answers it with a Heartbeat at once (FIX's rule); return 1 and the
     * application answers it later with tw_fix_session_heartbeat() (a
     * lockstep barrier: live.md, "Lockstep").  id is valid during the call
     * only. */
    int (*on_test_request)(void *ctx, tw_fix_session *s, const char *id, size_t len);
    void *ctx;
} tw_fix_app;

typedef struct tw_fix_session_cfg {
    const char *begin_string; /* "FIX.4.2" or "FIX.4.4" */
    const char *sender_comp_id;
    const char *target_comp_id;
    int initiator;
    uint32_t heart_bt_int_s;    /* initiator: sent in Logon; acceptor: taken from peer */
    int reset_on_logon;         /* initiator: send ResetSeqNumFlag=Y */
    unsigned ts_digits;         /* SendingTime precision: 0 (seconds), 3, 6 or 9 */
    uint64_t logon_timeout_ns;  /* default 10 s */
    uint64_t logout_timeout_ns; /* default 2 s */
    /* epoch_ns - now_ns: what turns the monotonic now_ns of every call
     * into SendingTime (tw_clock_epoch_offset_ns(); 0 if the driver's
     * now_ns already counts from the epoch, as a simulated clock may). */
    int64_t epoch_offset_ns;
    tw_fix_store *store;        /* NULL: nothing persisted, resends are all gap-fill */
    /* How received messages are decoded for on_msg: prices' fixed-point
     * decimals (0: TW_FIX_PX_DECIMALS), TW_FIX_PX_F64 or 0, and the caller's
     * array for X/W entries (NULL: such a message decodes with rc -E2BIG
     * when it has entries; its fields are still there). */
    unsigned px_decimals;
    unsigned decode_flags;
    tw_fix_md_entry *md_entries;
    uint32_t md_entries_cap;
    uint32_t pad_;
    tw_fix_stream stream;
    tw_fix_app app;
} tw_fix_session_cfg;

#define TW_FIX_MAX_FIELDS 256
#define TW_FIX_TX_BUF 8192

/* Counters for the hot path (bad input is counted, never fatal to us). */
typedef struct tw_fix_session_stats {
    uint64_t msgs_in, msgs_out, app_in, app_out;
    uint64_t garbled, garbled_bytes, rejects_sent, rejects_rcvd;
    uint64_t resend_requests_sent, resend_requests_rcvd, msgs_resent, gap_fills_sent;
    uint64_t possdup_ignored, heartbeats_sent, test_requests_sent;
    uint64_t store_errors;
} tw_fix_session_stats;

/* One session; embed it in the caller's connection state (about 26 KB:
 * its buffers are inside, nothing is allocated after init).  Callbacks may
 * call tw_fix_session_begin/send/logout (to answer an order, say) but must
 * not feed input or run the timer re-entrantly. */
struct tw_fix_session {
    tw_fix_session_cfg cfg;
    tw_fix_template tmpl;
    tw_fix_state state;
    int fix44;                /* FIX.4.4 (else 4.2 rules) */
    uint64_t next_out, next_in;
    uint32_t heart_bt_int_s;
    uint32_t pad_;
    uint64_t hb_ns;
    int64_t epoch_offset_ns;  /* SendingTime = now_ns + this */
    /* Monotonic times (now_ns of the call that did it). */
    int64_t last_sent_ns, last_recv_ns, state_since_ns;
    int64_t test_req_sent_ns; /* 0: no TestRequest outstanding */
    uint64_t test_req_id;
    uint64_t resend_until;    /* >0: a ResendRequest is outstanding up to this seq */
    int64_t resend_sent_ns;   /* when it was (last) sent */
    int logon_received;
    int pad2_;
    tw_fix_session_stats st;
    /* Message being built by the application (tw_fix_session_begin). */
    size_t app_body_off;
    int64_t app_time_ns;      /* its SendingTime (epoch ns), stored as OrigSendingTime */
    uint64_t app_seq;
    char app_type[8];
    tw_fix_wbuf w;
    tw_fix_decoded dec;       /* the message being handled */
    tw_fix_field fields[TW_FIX_MAX_FIELDS];
    char tx[TW_FIX_TX_BUF];
    char rs[TW_FIX_TX_BUF];   /* resend: stored message read back */
};

/* Sets up s (no I/O).  Sequence numbers come from cfg.store (or start at
 * 1).  Returns 0 or -EINVAL with err filled. */
int tw_fix_session_init(tw_fix_session *s, const tw_fix_session_cfg *cfg, tw_error *err);

/* Replaces the offset from now_ns to SendingTime (see "Time" above). */
void tw_fix_session_set_epoch_offset(tw_fix_session *s, int64_t epoch_offset_ns);

/* The epoch time the session writes as SendingTime at monotonic now_ns:
 * what the application puts in its own timestamps (TransactTime). */
int64_t tw_fix_session_epoch_ns(const tw_fix_session *s, int64_t now_ns);

/* The stream is up: an initiator sends Logon; an acceptor waits.  Returns
 * 0, or -EIO when the store or the stream failed (the session is then
 * DISCONNECTED again). */
int tw_fix_session_connected(tw_fix_session *s, int64_t now_ns);

/* The stream went down under us (peer closed, error).  No close callback. */
void tw_fix_session_disconnected(tw_fix_session *s, int64_t now_ns);

/* The receive buffer a caller passes to tw_fix_session_input() must be able
 * to hold this many bytes: a message that does not frame within it is
 * dropped as garbled, so a bogus BodyLength cannot stall the stream. */
#define TW_FIX_RX_MIN 65536

/* Feeds received bytes.  Returns the number of bytes consumed (the caller
 * keeps the rest and passes it again with more); never fails on bad input
 * (garbled bytes are consumed and counted). */
size_t tw_fix_session_input(tw_fix_session *s, const char *buf, size_t len, int64_t now_ns);

/* Time passes: heartbeats, TestRequest, timeouts.  Call at least every
 * second or so. */
void tw_fix_session_timer(tw_fix_session *s, int64_t now_ns);

/* Application messages: begin gives a writer with the header already in
 * it; add body fields with tw_fix_put_*; send stores then writes.
 * begin returns NULL unless ACTIVE; send returns 0, -ENOBUFS, -ENOTCONN,
 * -ESTALE (another session call sent a message between begin and send:
 * build it again), -EIO (store or stream failed).  The store write comes
 * before the stream write. */
tw_fix_wbuf *tw_fix_session_begin(tw_fix_session *s, const char *msg_type, int64_t now_ns);
int tw_fix_session_send(tw_fix_session *s, int64_t now_ns);

/* A Heartbeat answering TestReqID test_req_id[0..len) (the application's
 * answer to a TestRequest it took with on_test_request).  Returns 0,
 * -ENOTCONN unless logged on, -EIO when the store or the stream failed. */
int tw_fix_session_heartbeat(tw_fix_session *s, const char *test_req_id, size_t len,
                             int64_t now_ns);

/* Starts the Logout handshake (text may be NULL).  Returns 0, -ENOTCONN
 * unless ACTIVE, -EIO when the store or the stream failed. */
int tw_fix_session_logout(tw_fix_session *s, const char *text, int64_t now_ns);

/* Test and recovery hooks: set the next outgoing MsgSeqNum (persisted),
 * e.g. to inject a gap the peer must resolve.  Returns 0, -EINVAL for 0,
 * or the store's -errno. */
int tw_fix_session_set_next_out(tw_fix_session *s, uint64_t next_out);

const char *tw_fix_state_name(tw_fix_state st);

#ifdef __cplusplus
}
#endif
#endif
