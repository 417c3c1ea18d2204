/* Frame decoding shared by the server, the clients and the fuzz target.
 * The decoder only looks at bytes in the buffer it is given and reads each
 * field once, so a peer that changes shared memory under it can make it
 * return garbage values but never read out of bounds. */
#include <errno.h>
#include <string.h>

#include "tickwire/util.h"
#include "tickwire/wire.h"

void tw_wire_limits_init(tw_wire_limits *l)
{
    l->max_frame_bytes = 256u << 20;
    l->max_bars = 32u << 20;
    l->max_combos = 1u << 20;
    l->max_datasets = 64;
    l->max_dataset_bytes = 2ull << 30;
    l->max_conns = 256;
    l->max_buffer_bytes = 2ull << 30;
}

uint32_t tw_wire_hdr_len(uint8_t opcode)
{
    switch (opcode) {
    case TW_OP_SWEEP:
    case TW_OP_ECHO: return sizeof(tw_wire_sweep_hdr);
    case TW_OP_LOAD: return sizeof(tw_wire_load_hdr);
    case TW_OP_SWEEP_LOADED: return sizeof(tw_wire_sweep_loaded_hdr);
    case TW_OP_DROP: return sizeof(tw_wire_drop_hdr);
    case TW_OP_INFO:
    case TW_OP_LOAD_FD: return 1;
    case TW_OP_SHM_ATTACH: return sizeof(tw_wire_shm_attach);
    case TW_OP_KSWEEP: return sizeof(tw_wire_ksweep_hdr);
    default: return 0;
    }
}

const char *tw_wire_strerror(unsigned wire_code)
{
    switch (wire_code) {
    case TW_WERR_BAD_FRAME: return "BAD_FRAME";
    case TW_WERR_TOO_LARGE: return "TOO_LARGE";
    case TW_WERR_BAD_PARAMS: return "BAD_PARAMS";
    case TW_WERR_NO_DATASET: return "NO_DATASET";
    case TW_WERR_BUSY: return "BUSY";
    case TW_WERR_INTERNAL: return "INTERNAL";
    default: return "UNKNOWN";
    }
}

/* tw_strerror() for the client's error-frame codes, -(TW_EWIRE + code). */
static const char *wire_rc_strerror(int rc)
{
    return tw_wire_strerror((unsigned)TW_EWIRE_CODE(rc));
}

/* Registered at load, from the file every program that can see such a
 * code links (the client's error path calls tw_wire_strerror). */
__attribute__((constructor)) static void register_wire_errors(void)
{
    TW_VERIFY(tw__strerror_register(TW_EWIRE + 1, TW_WERR_COUNT - 1, wire_rc_strerror) == 0);
}

/* The n_bars and n_combos limits, as BAD() when broken. */
#define LIMITS()                                                                        \
    do {                                                                                \
        if (req->n_bars > lim->max_bars)                                                \
            return BAD(TW_WERR_TOO_LARGE, "n_bars %u exceeds the limit of %u",          \
                       req->n_bars, lim->max_bars);                                     \
        if (req->n_combos > lim->max_combos)                                            \
            return BAD(TW_WERR_TOO_LARGE, "n_combos %u exceeds the limit of %u",        \
                       req->n_combos, lim->max_combos);                                 \
    } while (0)

/* Records the error frame code and the message, and returns -1. */
#define BAD(code, ...)                                                                  \
    (req->wire_err = (code),                                                            \
     tw__err(err, (code) == TW_WERR_TOO_LARGE ? -E2BIG : -EBADMSG, __VA_ARGS__), (int64_t)-1)

int64_t tw_wire_parse(const uint8_t *buf, size_t len, const tw_wire_limits *lim,
                      tw_wire_req *req, tw_error *err)
{
    memset(req, 0, sizeof(*req));
    if (len < TW_WIRE_PREFIX_BYTES)
        return -2;
    uint32_t body = tw_load_le32(buf);
    if (body == 0)
        return BAD(TW_WERR_BAD_FRAME, "empty frame (length 0)");
    if (body > lim->max_frame_bytes)
        return BAD(TW_WERR_TOO_LARGE, "frame length %u exceeds the limit of %u bytes",
                   body, lim->max_frame_bytes);
    if (len < TW_WIRE_PREFIX_BYTES + 1)
        return -2;
    const uint8_t *b = buf + TW_WIRE_PREFIX_BYTES;
    uint8_t op = b[0];
    uint32_t hl = tw_wire_hdr_len(op);
    if (hl == 0)
        return BAD(TW_WERR_BAD_FRAME, "unknown opcode %u (frame length %u)", op, body);
    if (body < hl)
        return BAD(TW_WERR_BAD_FRAME, "frame length %u shorter than the opcode's %u-byte header",
                   body, hl);
    if (len < TW_WIRE_PREFIX_BYTES + hl)
        return -2;
    req->opcode = op;
    req->hdr_len = hl;
    uint64_t want = hl;
    switch (op) {
    case TW_OP_SWEEP:
    case TW_OP_ECHO:
        req->n_bars = tw_load_le32(b + 1);
        req->n_combos = tw_load_le32(b + 5);
        LIMITS();
        want += 8ull * req->n_bars + (uint64_t)TW_WIRE_COMBO_BYTES * req->n_combos;
        break;
    case TW_OP_LOAD:
        req->n_bars = tw_load_le32(b + 1);
        if (req->n_bars > lim->max_bars)
            return BAD(TW_WERR_TOO_LARGE, "n_bars %u exceeds the limit of %u",
                       req->n_bars, lim->max_bars);
        want += 8ull * req->n_bars;
        break;
    case TW_OP_SWEEP_LOADED:
        req->dataset = tw_load_le64(b + 1);
        req->n_combos = tw_load_le32(b + 9);
        if (req->n_combos > lim->max_combos)
            return BAD(TW_WERR_TOO_LARGE, "n_combos %u exceeds the limit of %u",
                       req->n_combos, lim->max_combos);
        want += (uint64_t)TW_WIRE_COMBO_BYTES * req->n_combos;
        break;
    case TW_OP_DROP:
        req->dataset = tw_load_le64(b + 1);
        break;
    case TW_OP_SHM_ATTACH:
        req->ring_bytes = tw_load_le32(b + 1);
        break;
    case TW_OP_KSWEEP:
        req->flags = b[1];
        req->name_len = b[2];
        req->n_params = b[3];
        req->dataset = tw_load_le64(b + 4);
        req->n_bars = tw_load_le32(b + 12);
        req->n_combos = tw_load_le32(b + 16);
        if (req->flags & ~TW_KSWEEP_FLAGS)
            return BAD(TW_WERR_BAD_FRAME, "KSWEEP flags 0x%02x: unknown bits", req->flags);
        if (req->name_len == 0)
            return BAD(TW_WERR_BAD_FRAME, "KSWEEP without a kernel name (name_len 0)");
        if (req->n_params == 0 || req->n_params > 16)
            return BAD(TW_WERR_BAD_FRAME, "KSWEEP n_params %u outside 1..16", req->n_params);
        if ((req->flags & TW_KSWEEP_LOADED) && req->n_bars)
            return BAD(TW_WERR_BAD_FRAME, "KSWEEP of a loaded dataset with n_bars %u (must be 0)",
                       req->n_bars);
        if (!(req->flags & TW_KSWEEP_LOADED) && req->dataset)
            return BAD(TW_WERR_BAD_FRAME, "KSWEEP with closes names dataset %llu (must be 0)",
                       (unsigned long long)req->dataset);
        LIMITS();
        want += 8ull * req->n_bars + 8ull * req->n_params * req->n_combos + req->name_len;
        break;
    default:
        break;
    }
    if (want != body)
        return BAD(TW_WERR_BAD_FRAME,
                   "frame length %u disagrees with its header, which implies %llu", body,
                   (unsigned long long)want);
    req->body_len = body;
    if (len < TW_WIRE_PREFIX_BYTES + (size_t)body)
        return -2;
    const uint8_t *arr = b + hl;
    if (op == TW_OP_SWEEP || op == TW_OP_ECHO || op == TW_OP_LOAD ||
        (op == TW_OP_KSWEEP && req->n_bars)) {
        req->close = arr;
        arr += 8ull * req->n_bars;
    }
    if (op == TW_OP_SWEEP || op == TW_OP_ECHO || op == TW_OP_SWEEP_LOADED || op == TW_OP_KSWEEP)
        req->combos = arr;
    return (int64_t)TW_WIRE_PREFIX_BYTES + body;
}
