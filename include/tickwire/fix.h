/* FIX tag=value: zero-copy framer and parser, typed accessors, builder
 * (docs/design/fix.md).  Knows no socket and no clock.
 *
 * The session layer (tickwire/fix_session.h) and the crash-safe store sit
 * on top of this header. */
#ifndef TICKWIRE_FIX_H
#define TICKWIRE_FIX_H

#include "tickwire/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TW_FIX_SOH '\x01'

/* A field: a view into the caller's receive buffer (not NUL-terminated). */
typedef struct tw_fix_field {
    uint32_t tag;
    uint32_t len;
    const char *val;
} tw_fix_field;

/* Parser options. */
#define TW_FIX_NO_CHECKSUM (1u << 0) /* skip CheckSum(10) validation */
#define TW_FIX_NO_BODYLEN  (1u << 1) /* frame on "\x0110=nnn\x01" instead of BodyLength(9) */

/* Results of tw_fix_frame() besides bytes consumed (>= 0). */
#define TW_FIX_GARBLED    (-1) /* *skip bytes are to be dropped to resync */
#define TW_FIX_INCOMPLETE (-2) /* wait for more bytes */

/* Parser: returns bytes consumed (> 0), -1 garbled (TW_FIX_GARBLED), -2 incomplete (TW_FIX_INCOMPLETE).
 * Frames one message at the start of buf[0..len): the message length, or
 * TW_FIX_GARBLED with *skip set to the number of bytes to discard before
 * the next "8=FIX" candidate (>= 1), or TW_FIX_INCOMPLETE (wait for more).
 * Validates BeginString, BodyLength and (unless TW_FIX_NO_CHECKSUM)
 * CheckSum. */
int tw_fix_frame(const char *buf, size_t len, unsigned flags, size_t *skip);

/* A parsed message: views into the framed bytes. */
typedef struct tw_fix_msg {
    tw_fix_field *fields; /* caller array */
    uint32_t cap;         /* its capacity */
    uint32_t count;       /* fields parsed (including 8, 9, 35 and 10) */
    const char *msg_type; /* value of tag 35 */
    uint32_t msg_type_len;
    uint32_t pad_;
} tw_fix_msg;

/* Parses one framed message (from tw_fix_frame) into m->fields.
 * Returns 0; -EBADMSG malformed (a field without '=', a tag that is not a
 * number, an empty value, no MsgType); -E2BIG if more than m->cap fields.
 * The views point into msg, which the caller keeps. */
int tw_fix_parse(const char *msg, size_t len, tw_fix_msg *m);

/* First field with tag, or NULL.  Linear scan from the start; the view
 * points into m's message. */
const tw_fix_field *tw_fix_get(const tw_fix_msg *m, uint32_t tag);

/* Value decoders: return 0 with *out set, -EINVAL if the view is not a
 * valid value of the type, -ERANGE if it is one but does not fit. */
int tw_fix_to_i64(const char *v, uint32_t len, int64_t *out);
/* Price to fixed point: *out = value * 10^decimals, exactly (no floating
 * point); decimals <= 18.  More significant fractional digits than
 * `decimals` is an error (extra trailing zeros are accepted: the value is
 * still exact); so is a result outside int64. */
int tw_fix_to_fixed(const char *v, uint32_t len, unsigned decimals, int64_t *out);
/* UTCTimestamp YYYYMMDD-HH:MM:SS[.sss[sss[sss]]] to ns since the epoch. */
int tw_fix_to_epoch_ns(const char *v, uint32_t len, int64_t *out);

/* SOH scanning, exposed so the ISA variants can be tested against each
 * other: index of the first SOH in p[0..n), or n if none.  The FIX part has
 * a variant for every tw_isa (scalar, sse2, avx2, avx512); one the CPU
 * lacks (tw_cpu_has() == 0) runs as scalar.  The environment variable
 * TW_FIX_ISA (a tw_isa_name) caps the choice AUTO makes, so the slower
 * variants can be tested and benchmarked on a machine with the faster. */
size_t tw_fix_find_soh(const char *p, size_t n);
size_t tw_fix_find_soh_isa(tw_isa isa, const char *p, size_t n);

/* ---- Extensions: limits, error detail, more decoders ------------------- */

/* The framer treats a BodyLength above this as garbled rather than waiting
 * for that many bytes, so a corrupt length never makes a caller buffer
 * grow without bound. */
#define TW_FIX_MAX_BODYLEN (1u << 20)

/* Default number of decimals of fixed-point prices in the typed accessors
 * (1e-8, as fix.md suggests). */
#define TW_FIX_PX_DECIMALS 8u

/* tw_fix_frame() with the reason in err when it returns TW_FIX_GARBLED
 * (err may be NULL; err->code is then -EBADMSG).  For tools and the
 * session's reject/log path; the hot path calls tw_fix_frame(). */
int tw_fix_frame_ex(const char *buf, size_t len, unsigned flags, size_t *skip,
                    tw_error *err);

/* tw_fix_parse() with the reason in err when it fails (err may be NULL;
 * err->code is the same -EBADMSG or -E2BIG). */
int tw_fix_parse_ex(const char *msg, size_t len, tw_fix_msg *m, tw_error *err);

/* CheckSum(10) of buf[0..n): sum of the bytes mod 256. */
unsigned tw_fix_checksum(const char *buf, size_t n);

/* Quantity to an integer: "[-]digits" optionally followed by '.' and zeros
 * only ("100.00" is 100).  Returns 0, -EINVAL or -ERANGE. */
int tw_fix_to_qty(const char *v, uint32_t len, int64_t *out);

/* Boolean 'Y' / 'N'.  Returns 0 or -EINVAL. */
int tw_fix_to_bool(const char *v, uint32_t len, int *out);

/* The ISA the FIX scanner and decoder use in this process (never AUTO);
 * tw_isa_name() names it. */
tw_isa tw_fix_isa_active(void);

/* Index of the first field with tag at or after field index `from`, or
 * -ENOENT. */
int tw_fix_find(const tw_fix_msg *m, uint32_t tag, uint32_t from);

/* ---- Repeating groups -------------------------------------------------- */

/* A group as the dictionary would describe it: the NoXxx count tag, the
 * delimiter (first field of every entry) and every tag an entry may hold
 * (the delimiter included; nested groups' tags too).  Without the member
 * list the end of the last entry could not be told from the body fields
 * that follow it. */
typedef struct tw_fix_group_def {
    uint32_t count_tag;
    uint32_t delim_tag;
    const uint32_t *members;
    uint32_t nmembers;
    uint32_t pad_;
} tw_fix_group_def;

extern const tw_fix_group_def tw_fix_grp_md_entries;      /* 268 / 269 (W) */
extern const tw_fix_group_def tw_fix_grp_md_inc_entries;  /* 268 / 279 (X) */
extern const tw_fix_group_def tw_fix_grp_md_entry_types;  /* 267 / 269 (V) */
extern const tw_fix_group_def tw_fix_grp_related_sym;     /* 146 / 55  (V) */

/* Iterator over a group's entries, in message order. */
typedef struct tw_fix_group_iter {
    const tw_fix_msg *m;
    const tw_fix_group_def *def;
    uint32_t pos;   /* field index of the next entry's delimiter */
    uint32_t count; /* entries the count tag announced */
    uint32_t index; /* entries returned so far */
    uint32_t pad_;
} tw_fix_group_iter;

/* Starts iterating the group def in m (from the first count tag at or
 * after field index `from`).  Returns the announced number of entries
 * (>= 0; 0 also when the count tag is absent), or -EBADMSG if the count is
 * not a number or the field after it is not the delimiter. */
int tw_fix_group_begin(tw_fix_group_iter *it, const tw_fix_msg *m,
                       const tw_fix_group_def *def, uint32_t from);

/* Next entry: its fields are m->fields[*first .. *first + *n).  Returns 1,
 * 0 after the last announced entry, or -EBADMSG if the message holds fewer
 * entries than announced. */
int tw_fix_group_next(tw_fix_group_iter *it, uint32_t *first, uint32_t *n);

/* ---- Typed accessors --------------------------------------------------- */

/* A string value: a view into the message (len 0 when absent). */
typedef struct tw_fix_str {
    const char *p;
    uint32_t len;
    uint32_t pad_;
} tw_fix_str;

/* Accessors fill a struct from a parsed message in one pass over its
 * fields.  Each returns 0; -EBADMSG when a required field is missing or a
 * value does not decode; -ENOMSG when MsgType is not the accessor's; err
 * (may be NULL) names the tag.  Prices come twice: fixed point with
 * px_decimals decimals (0 when absent; a price with more significant
 * decimals than that, or outside int64 at that scale, is a bad value), and
 * as the correctly rounded float64 of the text (the `_f64` member,
 * tw_decimal_to_double's result; NaN when absent: live.md, "Prices are
 * exact").  Quantities are integers, timestamps ns since the epoch (0
 * when absent).  Views point into the message buffer and live as long as
 * it does.  tw_fix_decode() below fills the same structs in one pass over
 * the raw bytes. */

typedef struct tw_fix_header {
    tw_fix_str begin_string;    /* 8 */
    tw_fix_str msg_type;        /* 35 */
    tw_fix_str sender_comp_id;  /* 49 */
    tw_fix_str target_comp_id;  /* 56 */
    int64_t msg_seq_num;        /* 34 */
    int64_t sending_time_ns;    /* 52 */
    int64_t orig_sending_time_ns; /* 122, 0 if absent */
    int poss_dup;               /* 43 = Y */
    int poss_resend;            /* 97 = Y */
} tw_fix_header;
int tw_fix_read_header(const tw_fix_msg *m, tw_fix_header *h, tw_error *err);

typedef struct tw_fix_logon {                /* A */
    int64_t encrypt_method;                  /* 98 (required) */
    int64_t heart_bt_int_s;                  /* 108 (required) */
    int reset_seq_num;                       /* 141 = Y */
    int pad_;
    tw_fix_str username;                     /* 553 */
    tw_fix_str password;                     /* 554 */
    tw_fix_str default_appl_ver_id;          /* 1137 */
} tw_fix_logon;
int tw_fix_read_logon(const tw_fix_msg *m, tw_fix_logon *o, tw_error *err);

typedef struct tw_fix_heartbeat { tw_fix_str test_req_id; } tw_fix_heartbeat; /* 0: 112 optional */
int tw_fix_read_heartbeat(const tw_fix_msg *m, tw_fix_heartbeat *o, tw_error *err);

typedef struct tw_fix_test_request { tw_fix_str test_req_id; } tw_fix_test_request; /* 1: 112 required */
int tw_fix_read_test_request(const tw_fix_msg *m, tw_fix_test_request *o, tw_error *err);

typedef struct tw_fix_resend_request { /* 2 */
    int64_t begin_seq_no;              /* 7 (required) */
    int64_t end_seq_no;                /* 16 (required; 0 = infinity) */
} tw_fix_resend_request;
int tw_fix_read_resend_request(const tw_fix_msg *m, tw_fix_resend_request *o, tw_error *err);

typedef struct tw_fix_reject {         /* 3 */
    int64_t ref_seq_num;               /* 45 (required) */
    int64_t ref_tag_id;                /* 371, -1 if absent */
    int64_t session_reject_reason;     /* 373, -1 if absent */
    tw_fix_str ref_msg_type;           /* 372 */
    tw_fix_str text;                   /* 58 */
} tw_fix_reject;
int tw_fix_read_reject(const tw_fix_msg *m, tw_fix_reject *o, tw_error *err);

typedef struct tw_fix_sequence_reset { /* 4 */
    int64_t new_seq_no;                /* 36 (required) */
    int gap_fill;                      /* 123 = Y */
    int pad_;
} tw_fix_sequence_reset;
int tw_fix_read_sequence_reset(const tw_fix_msg *m, tw_fix_sequence_reset *o, tw_error *err);

typedef struct tw_fix_logout { tw_fix_str text; } tw_fix_logout; /* 5: 58 optional */
int tw_fix_read_logout(const tw_fix_msg *m, tw_fix_logout *o, tw_error *err);

typedef struct tw_fix_exec_report {    /* 8 */
    tw_fix_str order_id;               /* 37 (required) */
    tw_fix_str cl_ord_id;              /* 11 */
    tw_fix_str orig_cl_ord_id;         /* 41 */
    tw_fix_str exec_id;                /* 17 (required) */
    tw_fix_str symbol;                 /* 55 (required) */
    tw_fix_str account;                /* 1 */
    tw_fix_str text;                   /* 58 */
    char exec_type;                    /* 150 (required) */
    char ord_status;                   /* 39 (required) */
    char side;                         /* 54 (required) */
    char ord_type;                     /* 40, 0 if absent */
    char time_in_force;                /* 59, 0 if absent */
    char exec_trans_type;              /* 20 (FIX 4.2), 0 if absent */
    char pad_[2];
    int64_t order_qty;                 /* 38, 0 if absent */
    int64_t price;                     /* 44, fixed point, 0 if absent */
    int64_t last_qty;                  /* 32 */
    int64_t last_px;                   /* 31, fixed point */
    int64_t leaves_qty;                /* 151 (required) */
    int64_t cum_qty;                   /* 14 (required) */
    int64_t avg_px;                    /* 6 (required), fixed point */
    int64_t transact_time_ns;          /* 60 */
    double price_f64;                  /* 44 as float64, NaN if absent */
    double last_px_f64;                /* 31 as float64, NaN if absent */
    double avg_px_f64;                 /* 6 as float64 */
    int32_t ord_rej_reason;            /* 103 (a reject: 150=8), -1 if absent */
    int32_t pad2_;
} tw_fix_exec_report;
int tw_fix_read_exec_report(const tw_fix_msg *m, unsigned px_decimals,
                            tw_fix_exec_report *o, tw_error *err);

typedef struct tw_fix_cancel_reject {  /* 9 */
    tw_fix_str order_id;               /* 37 (required) */
    tw_fix_str cl_ord_id;              /* 11 (required) */
    tw_fix_str orig_cl_ord_id;         /* 41 (required) */
    tw_fix_str text;                   /* 58 */
    char ord_status;                   /* 39 (required) */
    char cxl_rej_response_to;          /* 434 (required) */
    char pad_[2];
    int32_t cxl_rej_reason;            /* 102, -1 if absent */
} tw_fix_cancel_reject;
int tw_fix_read_cancel_reject(const tw_fix_msg *m, tw_fix_cancel_reject *o, tw_error *err);

typedef struct tw_fix_new_order {      /* D */
    tw_fix_str cl_ord_id;              /* 11 (required) */
    tw_fix_str symbol;                 /* 55 (required) */
    tw_fix_str account;                /* 1 */
    char side;                         /* 54 (required) */
    char ord_type;                     /* 40 (required) */
    char time_in_force;                /* 59, 0 if absent */
    char handl_inst;                   /* 21, 0 if absent */
    int32_t pad_;
    int64_t order_qty;                 /* 38 (required) */
    int64_t price;                     /* 44, fixed point; required if ord_type is '2' */
    int64_t transact_time_ns;          /* 60 */
    double price_f64;                  /* 44 as float64, NaN if absent */
} tw_fix_new_order;
int tw_fix_read_new_order(const tw_fix_msg *m, unsigned px_decimals,
                          tw_fix_new_order *o, tw_error *err);

typedef struct tw_fix_cancel_request { /* F */
    tw_fix_str orig_cl_ord_id;         /* 41 (required) */
    tw_fix_str cl_ord_id;              /* 11 (required) */
    tw_fix_str order_id;               /* 37 */
    tw_fix_str symbol;                 /* 55 (required) */
    char side;                         /* 54 (required) */
    char pad_[7];
    int64_t order_qty;                 /* 38, 0 if absent */
    int64_t transact_time_ns;          /* 60 */
} tw_fix_cancel_request;
int tw_fix_read_cancel_request(const tw_fix_msg *m, tw_fix_cancel_request *o, tw_error *err);

/* MarketDataRequest (V).  The symbols are tw_fix_grp_related_sym entries
 * (iterate with tw_fix_group_begin); the entry types are copied here. */
typedef struct tw_fix_md_request {
    tw_fix_str md_req_id;              /* 262 (required) */
    char subscription_request_type;    /* 263 (required) */
    char md_update_type;               /* 265, 0 if absent */
    char entry_types[14];              /* 269 of each 267 entry, in order */
    int64_t market_depth;              /* 264 (required) */
    uint32_t n_entry_types;            /* 267 */
    uint32_t n_symbols;                /* 146 */
} tw_fix_md_request;
int tw_fix_read_md_request(const tw_fix_msg *m, tw_fix_md_request *o, tw_error *err);

/* One entry of W or X. */
typedef struct tw_fix_md_entry {
    tw_fix_str symbol;                 /* 55 (X: per entry; W: the message's) */
    tw_fix_str entry_id;               /* 278 */
    char update_action;                /* 279 (X, required there; W: 0) */
    char entry_type;                   /* 269 (required) */
    char pad_[2];
    int32_t position_no;               /* 290, 0 if absent */
    int64_t px;                        /* 270, fixed point, 0 if absent */
    int64_t size;                      /* 271, 0 if absent */
    int64_t number_of_orders;          /* 346, 0 if absent */
    double px_f64;                     /* 270 as float64, NaN if absent (a gap bar) */
} tw_fix_md_entry;

/* MarketDataSnapshotFullRefresh (W) or IncrementalRefresh (X). */
typedef struct tw_fix_md {
    tw_fix_str md_req_id;              /* 262 */
    tw_fix_str symbol;                 /* 55 (W, required there) */
    uint32_t n_entries;                /* entries written to the caller array */
    uint32_t pad_;
} tw_fix_md;

/* Fill o and entries[0..cap) (in message order) from a W message; -E2BIG if
 * the message holds more than cap entries. */
int tw_fix_read_md_snapshot(const tw_fix_msg *m, unsigned px_decimals, tw_fix_md *o,
                            tw_fix_md_entry *entries, uint32_t cap, tw_error *err);
/* The same from an X message. */
int tw_fix_read_md_incremental(const tw_fix_msg *m, unsigned px_decimals, tw_fix_md *o,
                               tw_fix_md_entry *entries, uint32_t cap, tw_error *err);

/* TradingSessionStatus (h): the venue's session open / close (live.md). */
typedef struct tw_fix_trading_session_status {
    tw_fix_str trading_session_id;     /* 336 (required) */
    tw_fix_str trad_ses_req_id;        /* 335 */
    tw_fix_str text;                   /* 58 */
    int32_t trad_ses_status;           /* 340 (required): 2 Open, 3 Closed, ... */
    int32_t pad_;
} tw_fix_trading_session_status;
int tw_fix_read_trading_session_status(const tw_fix_msg *m, tw_fix_trading_session_status *o,
                                       tw_error *err);

/* MarketDataRequestReject (Y): an unknown symbol (live.md). */
typedef struct tw_fix_md_request_reject {
    tw_fix_str md_req_id;              /* 262 (required) */
    tw_fix_str text;                   /* 58 */
    char md_req_rej_reason;            /* 281, 0 if absent */
    char pad_[7];
} tw_fix_md_request_reject;
int tw_fix_read_md_request_reject(const tw_fix_msg *m, tw_fix_md_request_reject *o,
                                  tw_error *err);

/* ---- Typed decoding in one pass: the fast path --------------------------- */

/* tw_fix_decode() makes one pass over the raw bytes of a message: it frames
 * it (BeginString, BodyLength and, unless TW_FIX_NO_CHECKSUM, CheckSum),
 * checks the syntax of every field, and fills the standard header and the
 * typed struct of its MsgType directly, with SIMD (SSE2, AVX2, AVX-512BW:
 * tw_fix_isa_active()) finding the SOHs and summing the bytes.
 * ExecutionReport (8), NewOrderSingle (D), MarketDataIncrementalRefresh (X,
 * entries included), Heartbeat (0) and TestRequest (1) take the one-pass
 * path; every other MsgType with an accessor above is parsed with
 * tw_fix_parse() and read with its accessor, so the result has one shape
 * for all.  The result is, field for field, what tw_fix_frame +
 * tw_fix_parse + tw_fix_read_header + the type's accessor give (the tests
 * and the fuzz target hold the two paths to that).
 *
 * The caller sets the first block of tw_fix_decoded once and reuses it;
 * tw_fix_decode() fills the rest. */

/* A flag for tw_fix_decoded.flags, besides TW_FIX_NO_CHECKSUM and
 * TW_FIX_NO_BODYLEN: prices need only be exact as float64.  A price whose
 * fixed-point form does not fit px_decimals (more significant decimals, or
 * outside int64 at that scale) is then not a bad value: its fixed-point
 * member is TW_FIX_PX_NONE and its `_f64` member holds it.  For the live
 * path, where a price is any float64's shortest text (live.md, "Prices are
 * exact").  The accessors above are always strict. */
#define TW_FIX_PX_F64 (1u << 8)
#define TW_FIX_PX_NONE INT64_MIN

/* Which member of tw_fix_decoded.u holds the body. */
typedef enum tw_fix_kind {
    TW_FIX_K_OTHER = 0,              /* no typed reader for this MsgType: header only */
    TW_FIX_K_HEARTBEAT,              /* 0: u.heartbeat */
    TW_FIX_K_TEST_REQUEST,           /* 1: u.test_request */
    TW_FIX_K_RESEND_REQUEST,         /* 2: u.resend_request */
    TW_FIX_K_REJECT,                 /* 3: u.reject */
    TW_FIX_K_SEQUENCE_RESET,         /* 4: u.sequence_reset */
    TW_FIX_K_LOGOUT,                 /* 5: u.logout */
    TW_FIX_K_EXEC_REPORT,            /* 8: u.exec_report */
    TW_FIX_K_CANCEL_REJECT,          /* 9: u.cancel_reject */
    TW_FIX_K_LOGON,                  /* A: u.logon */
    TW_FIX_K_NEW_ORDER,              /* D: u.new_order */
    TW_FIX_K_CANCEL_REQUEST,         /* F: u.cancel_request */
    TW_FIX_K_MD_REQUEST,             /* V: u.md_request */
    TW_FIX_K_MD_SNAPSHOT,            /* W: u.md, entries[0 .. u.md.n_entries) */
    TW_FIX_K_MD_INCREMENTAL,         /* X: u.md, entries[0 .. u.md.n_entries) */
    TW_FIX_K_MD_REQUEST_REJECT,      /* Y: u.md_request_reject */
    TW_FIX_K_TRADING_SESSION_STATUS  /* h: u.trading_session_status */
} tw_fix_kind;

typedef struct tw_fix_decoded {
    /* -- set by the caller, kept across calls -- */
    unsigned flags;           /* TW_FIX_NO_CHECKSUM, TW_FIX_NO_BODYLEN, TW_FIX_PX_F64 */
    unsigned px_decimals;     /* fixed-point decimals of prices (<= 18) */
    tw_fix_md_entry *entries; /* W/X entries (caller array; may be NULL if entries_cap is 0) */
    uint32_t entries_cap;
    uint32_t fields_cap;      /* capacity of fields */
    /* Optional: the field views as tw_fix_parse() gives them, in msg.
     * NULL: not recorded (the one-pass types are a little faster without);
     * the other types then parse into TW_FIX_DECODE_FIELDS on the stack. */
    tw_fix_field *fields;
    /* -- filled by tw_fix_decode() when it frames a message -- */
    int rc;        /* 0: header and body decoded.  Else the first failure of
                      parse (parse_rc), header (tw_fix_read_header) and body
                      (the type's accessor), in that order: -EBADMSG, -E2BIG
                      (more fields than the array, or entries than
                      entries_cap), or -ENOTSUP (header decoded, kind OTHER) */
    int parse_rc;  /* what tw_fix_parse() returns for the message alone (0,
                      -EBADMSG, -E2BIG); when 0 and fields was given, msg
                      holds every field */
    tw_fix_kind kind;         /* from MsgType alone, set even when rc != 0 */
    int pad_;
    tw_fix_msg msg;           /* the views (count 0 when fields is NULL) */
    tw_fix_header hdr;
    union {
        tw_fix_heartbeat heartbeat;
        tw_fix_test_request test_request;
        tw_fix_resend_request resend_request;
        tw_fix_reject reject;
        tw_fix_sequence_reset sequence_reset;
        tw_fix_logout logout;
        tw_fix_exec_report exec_report;
        tw_fix_cancel_reject cancel_reject;
        tw_fix_logon logon;
        tw_fix_new_order new_order;
        tw_fix_cancel_request cancel_request;
        tw_fix_md_request md_request;
        tw_fix_md md;
        tw_fix_md_request_reject md_request_reject;
        tw_fix_trading_session_status trading_session_status;
    } u;
    /* -- the decoder's own, kept across calls: zero it with the rest and
     *    leave it alone -- */
    uint64_t ts_key_[2]; /* the first 16 bytes ("YYYYMMDD-HH:MM:S") of the
                            last UTCTimestamp it read */
    int64_t ts_base_;    /* their seconds since the epoch */
    uint32_t ts_smax_;   /* the largest seconds digit that may follow them */
    uint32_t ts_pad_;
} tw_fix_decoded;

/* Fields parsed on the stack for the types without a one-pass reader when
 * tw_fix_decoded.fields is NULL. */
#define TW_FIX_DECODE_FIELDS 256

/* Parser: returns bytes consumed (> 0), -1 garbled (TW_FIX_GARBLED), -2 incomplete (TW_FIX_INCOMPLETE).
 * Frames the message at the start of buf[0..len) exactly as tw_fix_frame()
 * does with d->flags (same return, same *skip) and, when it frames,
 * decodes it into d: d->rc says whether it decoded, d's views point into
 * buf (the caller keeps it).  Nothing is allocated. */
int tw_fix_decode(const char *buf, size_t len, tw_fix_decoded *d, size_t *skip);

/* The same with the SOH classification of a given ISA (one the CPU lacks
 * runs as scalar), so the variants can be tested against each other. */
int tw_fix_decode_isa(tw_isa isa, const char *buf, size_t len, tw_fix_decoded *d,
                      size_t *skip);

/* 1 if tag's FIX type is Price or PriceOffset (6, 31, 44, 270, ...): what
 * tools print as a float64.  Else 0. */
int tw_fix_tag_is_price(uint32_t tag);

/* ---- Names, for tools and logs ----------------------------------------- */

/* Name of a tag ("MsgSeqNum"), or NULL if not in the table. */
const char *tw_fix_tag_name(uint32_t tag);
/* Name of a MsgType value ("ExecutionReport"), or NULL. */
const char *tw_fix_msg_type_name(const char *v, uint32_t len);
/* Meaning of an enumerated value of tag (Side '1' -> "Buy"), or NULL. */
const char *tw_fix_enum_name(uint32_t tag, const char *v, uint32_t len);


#ifdef __cplusplus
}
#endif
#endif
