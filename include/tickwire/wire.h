/* The engine's wire protocol (docs/design/wire.md): frames, opcodes,
 * error codes and the shared-memory ring layout.
 *
 * Every integer and float on the wire is little-endian.  The structs below
 * are packed views of the fixed part of each frame; the variable part (the
 * f64 and i64 arrays) follows them directly.  Code that reads a frame from
 * a byte buffer uses tw_wire_parse() below rather than casting, so that an
 * unaligned or truncated buffer is an error return and never a fault. */
#ifndef TICKWIRE_WIRE_H
#define TICKWIRE_WIRE_H

#include <stdint.h>

#include "tickwire/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tickwire's wire code assumes a little-endian host"
#endif

/* ---- framing ------------------------------------------------------------ */

/* frame := [u32 len][body: len bytes].  A reply with bit 31 of len set is an
 * error frame whose real length is len & TW_WIRE_LEN_MASK. */
#define TW_WIRE_ERROR_BIT 0x80000000u
#define TW_WIRE_LEN_MASK 0x7fffffffu
#define TW_WIRE_PREFIX_BYTES 4u

/* Request opcodes (the first body byte). */
enum {
    TW_OP_SWEEP = 0,        /* [u32 n_bars][u32 n_combos][f64 x n_bars][i64 x 6 x n_combos] */
    TW_OP_ECHO = 1,         /* same layout as SWEEP; reply = the close array verbatim */
    TW_OP_LOAD = 2,         /* [u32 n_bars][f64 x n_bars] -> [u64 dataset_id] */
    TW_OP_SWEEP_LOADED = 3, /* [u64 id][u32 n_combos][i64 x 6 x n_combos] -> as SWEEP */
    TW_OP_DROP = 4,         /* [u64 id] -> empty body */
    TW_OP_INFO = 5,         /* empty -> [u32 json_len][json] */
    TW_OP_LOAD_FD = 6,      /* empty + one memfd by SCM_RIGHTS -> [u64 dataset_id] */
    /* Any kernel by name (docs/engine.md "KSWEEP"): tw_wire_ksweep_hdr, then
     * [f64 x n_bars] (none with TW_KSWEEP_LOADED), [f64 x n_params x
     * n_combos], [name_len bytes of the kernel's name].  Reply: [f64 pnl x
     * n][i64 trades x n], with TW_KSWEEP_STATS also [i64 wins x n][f64
     * max_drawdown x n][f64 exposure x n][i64 final_position x n]. */
    TW_OP_KSWEEP = 7,
    TW_OP_COUNT = 8,
    /* Transport handshake, not a request: the first frame of a Unix-socket
     * connection that switches to the shared-memory transport.  Body
     * [u8 0x7f][u32 ring_bytes wanted]; the reply is [u32 ring_bytes] with
     * the sealed memfd holding struct tw_shm_layout attached by SCM_RIGHTS.
     * From then on frames travel in the rings and the socket only signals
     * that the peer is alive. */
    TW_OP_SHM_ATTACH = 0x7f,
};

/* Error codes carried in error frames ([u16 code][utf-8 message]). */
enum {
    TW_WERR_BAD_FRAME = 1,  /* length/opcode/payload size inconsistent; closes the connection */
    TW_WERR_TOO_LARGE = 2,  /* a limit was exceeded */
    TW_WERR_BAD_PARAMS = 3, /* a window out of range, a non-positive or infinite price */
    TW_WERR_NO_DATASET = 4, /* unknown dataset id */
    TW_WERR_BUSY = 5,       /* over the connection or memory budget */
    TW_WERR_INTERNAL = 6,   /* a bug: logged with context */
    TW_WERR_COUNT = 7,
};

/* Client-side return codes for an error frame: -(TW_EWIRE + wire code), so
 * that they never collide with errno values or common.h's codes. */
#define TW_EWIRE 2000
#define TW_EWIRE_CODE(rc) ((rc) <= -TW_EWIRE - 1 && (rc) > -TW_EWIRE - TW_WERR_COUNT ? -(rc)-TW_EWIRE : 0)

/* The fixed part of each request body, packed, little-endian fields. */
typedef struct __attribute__((packed)) tw_wire_sweep_hdr {
    uint8_t opcode;    /* TW_OP_SWEEP or TW_OP_ECHO */
    uint32_t n_bars;   /* number of f64 closes that follow */
    uint32_t n_combos; /* number of 6 x i64 combos after the closes */
} tw_wire_sweep_hdr;

typedef struct __attribute__((packed)) tw_wire_load_hdr {
    uint8_t opcode;  /* TW_OP_LOAD */
    uint32_t n_bars; /* number of f64 closes that follow */
} tw_wire_load_hdr;

typedef struct __attribute__((packed)) tw_wire_sweep_loaded_hdr {
    uint8_t opcode;     /* TW_OP_SWEEP_LOADED */
    uint64_t dataset;   /* id returned by LOAD or LOAD_FD */
    uint32_t n_combos;  /* number of 6 x i64 combos that follow */
} tw_wire_sweep_loaded_hdr;

typedef struct __attribute__((packed)) tw_wire_drop_hdr {
    uint8_t opcode;   /* TW_OP_DROP */
    uint64_t dataset; /* id to forget */
} tw_wire_drop_hdr;

/* KSWEEP flags. */
#define TW_KSWEEP_LOADED 0x01u /* sweep the dataset `dataset` (n_bars must be 0) */
#define TW_KSWEEP_STATS 0x02u  /* reply with the statistics columns too */
#define TW_KSWEEP_FLAGS (TW_KSWEEP_LOADED | TW_KSWEEP_STATS)

typedef struct __attribute__((packed)) tw_wire_ksweep_hdr {
    uint8_t opcode;    /* TW_OP_KSWEEP */
    uint8_t flags;     /* TW_KSWEEP_*; other bits must be 0 */
    uint8_t name_len;  /* bytes of the kernel's name at the end of the body, 1..255 */
    uint8_t n_params;  /* doubles per combo, 1..16 (the kernel's n_params) */
    uint64_t dataset;  /* with TW_KSWEEP_LOADED: id from LOAD or LOAD_FD; else 0 */
    uint32_t n_bars;   /* f64 closes that follow (0 with TW_KSWEEP_LOADED) */
    uint32_t n_combos; /* combos of n_params f64 after the closes */
} tw_wire_ksweep_hdr;

/* Bytes of a KSWEEP reply per combo: pnl and trades, and the statistics. */
#define TW_KSWEEP_REPLY_BYTES(flags) (((flags) & TW_KSWEEP_STATS) ? 48u : 16u)

typedef struct __attribute__((packed)) tw_wire_shm_attach {
    uint8_t opcode;      /* TW_OP_SHM_ATTACH */
    uint32_t ring_bytes; /* wanted capacity of each ring (power of two) */
} tw_wire_shm_attach;

typedef struct __attribute__((packed)) tw_wire_error_hdr {
    uint16_t code; /* TW_WERR_*; a utf-8 message (no NUL) follows */
} tw_wire_error_hdr;

TW_STATIC_ASSERT(sizeof(tw_wire_sweep_hdr) == 9, "sweep header is 9 bytes on the wire");
TW_STATIC_ASSERT(sizeof(tw_wire_load_hdr) == 5, "load header is 5 bytes");
TW_STATIC_ASSERT(sizeof(tw_wire_sweep_loaded_hdr) == 13, "sweep_loaded header is 13 bytes");
TW_STATIC_ASSERT(sizeof(tw_wire_drop_hdr) == 9, "drop header is 9 bytes");
TW_STATIC_ASSERT(sizeof(tw_wire_shm_attach) == 5, "shm attach is 5 bytes");
TW_STATIC_ASSERT(sizeof(tw_wire_ksweep_hdr) == 20, "ksweep header is 20 bytes");
TW_STATIC_ASSERT(sizeof(tw_wire_error_hdr) == 2, "error header is 2 bytes");

#define TW_WIRE_COMBO_BYTES (6u * 8u)

/* ---- limits ------------------------------------------------------------- */

/* Server limits (wire.md "Limits and bad input"); every one is a `tickwire
 * serve` option.  Zero is never a valid limit. */
typedef struct tw_wire_limits {
    uint32_t max_frame_bytes;   /* body length; default 256 MiB, at most 2^31-1 */
    uint32_t max_bars;          /* per request or dataset; default 32 Mi */
    uint32_t max_combos;        /* per request; default 1 Mi */
    uint32_t max_datasets;      /* held at once; default 64 */
    uint64_t max_dataset_bytes; /* all datasets together; default 2 GiB */
    uint32_t max_conns;         /* open connections (all transports); default 256 */
    uint64_t max_buffer_bytes;  /* all connections' buffers together; default 2 GiB */
} tw_wire_limits;

void tw_wire_limits_init(tw_wire_limits *l);

/* ---- decoding ----------------------------------------------------------- */

/* A parsed request header.  Pointers are views into the caller's buffer
 * (NULL while only the header has been seen). */
typedef struct tw_wire_req {
    uint32_t body_len;    /* validated body length */
    uint32_t hdr_len;     /* fixed body part before the arrays */
    uint8_t opcode;
    uint32_t n_bars;      /* SWEEP, ECHO, LOAD */
    uint32_t n_combos;    /* SWEEP, ECHO, SWEEP_LOADED */
    uint64_t dataset;     /* SWEEP_LOADED, DROP */
    uint32_t ring_bytes;  /* SHM_ATTACH */
    uint8_t flags;        /* KSWEEP */
    uint8_t n_params;     /* KSWEEP */
    uint8_t name_len;     /* KSWEEP */
    const uint8_t *close; /* n_bars x f64 (unaligned view) */
    const uint8_t *combos;/* n_combos x 6 x i64; KSWEEP: n_combos x n_params x f64,
                             then the name (unaligned view) */
    uint16_t wire_err;    /* on -1: the TW_WERR_* code to send */
} tw_wire_req;

/* Parses one request frame from buf[0..len).  Returns the bytes the whole
 * frame occupies (prefix + body) when it is complete, -2 when more bytes are
 * needed, -1 when the frame is malformed or breaks a limit (req->wire_err
 * and err say which; err->code is -EBADMSG or -E2BIG).  On -2 with the
 * header complete, req->body_len and req->hdr_len are already validated
 * against the limits, so the caller may size a buffer for the body. */
int64_t tw_wire_parse(const uint8_t *buf, size_t len, const tw_wire_limits *lim,
                      tw_wire_req *req, tw_error *err);

/* Size of the fixed part of the body for an opcode (the opcode byte
 * included), or 0 for an unknown opcode. */
uint32_t tw_wire_hdr_len(uint8_t opcode);

/* Bytes from req->combos to the end of the body: the combos (and, for
 * KSWEEP, its params and the kernel's name). */
static inline size_t tw_wire_combos_bytes(const tw_wire_req *req)
{
    if (req->opcode == TW_OP_KSWEEP)
        return 8u * (size_t)req->n_combos * req->n_params + req->name_len;
    return (size_t)req->n_combos * (6u * 8u);
}

/* A static name for a TW_WERR_* code. */
const char *tw_wire_strerror(unsigned wire_code);

/* ---- shared-memory transport -------------------------------------------- */

/* One SPSC ring in the shared mapping.  Indices are free-running byte
 * counters; a record starts at an index that is a multiple of 64:
 *   [u32 rec_bytes (multiple of 64)][u32 frame_off][u64 stamp][... frame ...]
 * stamp = the record's index + 1, stored last (release): the consumer polls
 * the stamp of the record at its index, so a small frame crosses between
 * cores as a single cache line.  frame_off = 0 marks padding to the end of
 * the buffer.  The producer picks frame_off (>= 16) so that the frame's
 * arrays land 8-byte aligned and may be used in place.  Each side keeps its
 * own index privately and only publishes it here (tail for sleepers and
 * observers, head for the producer's space check); it never trusts the
 * other side's copy beyond bounds checks. */
#define TW_SHM_REC_HDR 16u
typedef struct tw_shm_ring_ctl {
    /* Producer's cache line. */
    _Alignas(64) uint64_t tail;   /* bytes published; release-stored by the producer,
                                     acquire-loaded by the consumer */
    uint32_t tail_seq;             /* futex word bumped after each publish */
    uint32_t cons_sleeping;        /* set by a consumer about to futex-sleep on tail_seq */
    uint32_t prod_cpu;             /* hint: CPU the producer last published from, + 1 */
    /* Consumer's cache line. */
    _Alignas(64) uint64_t head;   /* bytes released; release-stored by the consumer */
    uint32_t head_seq;             /* futex word bumped after each release */
    uint32_t prod_sleeping;        /* set by a producer waiting for space on head_seq */
    uint32_t cons_cpu;             /* hint: CPU the consumer last released from, + 1 */
} tw_shm_ring_ctl;

TW_STATIC_ASSERT(sizeof(tw_shm_ring_ctl) == 128, "ring control is two cache lines");
TW_STATIC_ASSERT(__builtin_offsetof(tw_shm_ring_ctl, head) == 64, "head on its own line");

/* The mapping: a 4 KiB control page, then the request ring's buffer, then
 * the reply ring's buffer, each ring_bytes long. */
typedef struct tw_shm_layout {
    uint32_t magic;       /* TW_SHM_MAGIC */
    uint32_t version;     /* TW_SHM_VERSION */
    uint32_t ring_bytes;  /* capacity of each ring, a power of two */
    uint32_t reserved;
    _Alignas(64) tw_shm_ring_ctl req; /* client -> server */
    tw_shm_ring_ctl rep;              /* server -> client */
} tw_shm_layout;

#define TW_SHM_MAGIC 0x4d485754u /* "TWHM" */
#define TW_SHM_VERSION 1u
#define TW_SHM_CTL_BYTES 4096u
#define TW_SHM_RING_MIN (1u << 16)
#define TW_SHM_RING_DEFAULT (1u << 22)
#define TW_SHM_RING_MAX (1u << 30)
TW_STATIC_ASSERT(sizeof(tw_shm_layout) <= TW_SHM_CTL_BYTES, "layout fits the control page");
TW_STATIC_ASSERT(__builtin_offsetof(tw_shm_layout, req) == 64, "request ring on line 1");

/* The largest frame one ring of ring_bytes carries: a record never exceeds
 * half the ring, so that wrap padding plus the record always fit. */
#define TW_SHM_MAX_FRAME(ring_bytes) ((ring_bytes) / 2u - 128u)

#ifdef __cplusplus
}
#endif
#endif
