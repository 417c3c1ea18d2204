/* The pcapng reader of capture.h: bounds-checked views into a buffer,
 * nothing allocated, nothing trusted. */
#include <string.h>

#include "capture/capture_internal.h"
#include "tickwire/util.h"


long tw_pcapng_block_parse(const uint8_t *p, size_t n, tw_pcapng_block *b)
{
    if (n < 8)
        return -2;
    uint32_t type = tw_load_u32(p), len = tw_load_u32(p + 4);
    if (type == TW__PCAPNG_SHB) {
        if (n < 12)
            return -2;
        /* The byte-order magic decides how len reads; we read ours only. */
        if (tw_load_u32(p + 8) != TW__PCAPNG_BOM)
            return -1;
    }
    if (len < 12 || (len & 3u))
        return -1;
    if (len > n)
        return -2;
    if (tw_load_u32(p + len - 4) != len)
        return -1;
    if (type == TW__PCAPNG_SHB && (len < 28 || tw_load_u16(p + 12) != 1))
        return -1;
    b->type = type;
    b->len = len;
    b->body = p + 8;
    b->body_len = len - 12;
    return (long)len;
}

int tw_pcapng_epb_decode(const tw_pcapng_block *b, tw_pcapng_epb *e)
{
    if (b->type != TW__PCAPNG_EPB || b->body_len < 20)
        return -1;
    const uint8_t *q = b->body;
    e->iface = tw_load_u32(q);
    e->ts = (uint64_t)tw_load_u32(q + 4) << 32 | tw_load_u32(q + 8);
    e->cap_len = tw_load_u32(q + 12);
    e->orig_len = tw_load_u32(q + 16);
    if (e->cap_len > b->body_len - 20 || e->cap_len > e->orig_len)
        return -1;
    e->data = q + 20;
    e->flags = 0;
    const uint8_t *v;
    uint16_t vl;
    int r = tw_pcapng_option(b, 2 /* epb_flags */, &v, &vl);
    if (r < 0 || (r == 1 && vl != 4))
        return -1;
    if (r == 1)
        e->flags = tw_load_u32(v);
    return 0;
}

int tw_pcapng_option(const tw_pcapng_block *b, uint16_t code, const uint8_t **val,
                     uint16_t *len)
{
    uint64_t off; /* where the options start in the body */
    switch (b->type) {
    case TW__PCAPNG_SHB: off = 16; break;
    case TW__PCAPNG_IDB: off = 8; break;
    case TW__PCAPNG_ISB: off = 12; break;
    case TW__PCAPNG_EPB:
        if (b->body_len < 20)
            return -1;
        off = 20 + (((uint64_t)tw_load_u32(b->body + 12) + 3) & ~(uint64_t)3);
        break;
    default:
        return -1;
    }
    if (off > b->body_len)
        return -1;
    /* Bounded: every option takes at least 4 bytes of the body. */
    while (off + 4 <= b->body_len) {
        uint16_t c = tw_load_u16(b->body + off), l = tw_load_u16(b->body + off + 2);
        uint64_t next = off + 4 + (((uint64_t)l + 3) & ~(uint64_t)3);
        if (c == 0)
            return 0; /* opt_endofopt */
        if (next > b->body_len)
            return -1;
        if (c == code) {
            *val = b->body + off + 4;
            *len = l;
            return 1;
        }
        off = next;
    }
    return off == b->body_len ? 0 : -1;
}
