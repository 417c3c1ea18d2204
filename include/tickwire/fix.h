/* FIX tag=value: zero-copy framer and parser, typed accessors, builder
 * (../shared/spec/fix.md).  Knows no socket and no clock.
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

/* Frames one message at the start of buf[0..len).
 * Returns the message length (>0), TW_FIX_INCOMPLETE, or TW_FIX_GARBLED with
 * *skip set to the number of bytes to discard before the next "8=FIX"
 * candidate (>= 1).  Validates BeginString, BodyLength and (unless
 * TW_FIX_NO_CHECKSUM) CheckSum. */
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
 * Returns 0; -1 malformed (a field without '=', a tag that is not a number,
 * an empty value, no MsgType); -E2BIG if more than m->cap fields. */
int tw_fix_parse(const char *msg, size_t len, tw_fix_msg *m);

/* First field with tag, or NULL.  Linear scan from the start. */
const tw_fix_field *tw_fix_get(const tw_fix_msg *m, uint32_t tag);

/* Value decoders: return 0, or -1 if the view is not a valid value. */
int tw_fix_to_i64(const char *v, uint32_t len, int64_t *out);
/* Price to fixed point: *out = value * 10^decimals, exactly (no floating
 * point); more fractional digits than `decimals` is an error. */
int tw_fix_to_fixed(const char *v, uint32_t len, unsigned decimals, int64_t *out);
/* UTCTimestamp YYYYMMDD-HH:MM:SS[.sss[sss[sss]]] to ns since the epoch. */
int tw_fix_to_epoch_ns(const char *v, uint32_t len, int64_t *out);

/* SOH scanning, exposed so the ISA variants can be tested against each
 * other: index of the first SOH in p[0..n), or n if none. */
typedef enum tw_fix_isa { TW_FIX_ISA_AUTO, TW_FIX_ISA_SCALAR, TW_FIX_ISA_SSE2,
                          TW_FIX_ISA_AVX2, TW_FIX_ISA_AVX512 } tw_fix_isa;
size_t tw_fix_find_soh(const char *p, size_t n);
size_t tw_fix_find_soh_isa(tw_fix_isa isa, const char *p, size_t n);
int tw_fix_isa_supported(tw_fix_isa isa);

#ifdef __cplusplus
}
#endif
#endif
