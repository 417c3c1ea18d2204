/* pcapng block encoders (capture_internal.h).  Blocks are written in the
 * host's byte order, which the Section Header's byte-order magic records;
 * every block and option is padded to 32 bits, and every block ends with
 * its own length repeated, so a reader can walk the file both ways. */
#include <string.h>

#include "capture/capture_internal.h"
#include "tickwire/version.h"

static uint8_t *put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
    return p + 4;
}
static uint8_t *put16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, 2);
    return p + 2;
}
static uint8_t *put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
    return p + 8;
}

/* An option: code, length, value, zero padding to 32 bits. */
static uint8_t *opt(uint8_t *p, uint16_t code, const void *v, uint32_t len)
{
    p = put16(p, code);
    p = put16(p, (uint16_t)len);
    memcpy(p, v, len);
    uint32_t pad = (4u - (len & 3u)) & 3u;
    memset(p + len, 0, pad);
    return p + len + pad;
}

/* A timestamp as pcapng stores it with if_tsresol 9: the 64-bit count of
 * ns, upper 32 bits first. */
static uint8_t *ts64(uint8_t *p, uint64_t ns)
{
    p = put32(p, (uint32_t)(ns >> 32));
    return put32(p, (uint32_t)ns);
}

/* Writes the total length at offset 4 and at the end; returns it. */
static uint32_t close_block(uint8_t *start, uint8_t *p)
{
    uint32_t len = (uint32_t)(p - start) + 4u;
    put32(start + 4, len);
    put32(p, len);
    return len;
}

uint32_t tw__pcapng_shb(uint8_t *out)
{
    static const char app[] = "tickwire " TW_VERSION_STRING;
    _Static_assert(24 + 4 + sizeof(app) + 3 + 4 + 4 <= TW__PCAPNG_SHB_MAX, "SHB room");
    uint8_t *p = put32(out, TW__PCAPNG_SHB);
    p += 4; /* length */
    p = put32(p, TW__PCAPNG_BOM);
    p = put16(p, 1); /* major version */
    p = put16(p, 0); /* minor version */
    p = put64(p, UINT64_MAX); /* section length: not given (-1) */
    p = opt(p, 4 /* shb_userappl */, app, (uint32_t)(sizeof(app) - 1));
    p = put32(p, 0); /* opt_endofopt */
    return close_block(out, p);
}

uint32_t tw__pcapng_idb(uint8_t *out, const char *name, uint32_t snap_len)
{
    size_t nl = strnlen(name, TW_CAPTURE_NAME_MAX - 1);
    uint8_t *p = put32(out, TW__PCAPNG_IDB);
    p += 4;
    p = put16(p, TW__PCAPNG_LINKTYPE_ETHERNET);
    p = put16(p, 0); /* reserved */
    p = put32(p, snap_len);
    if (nl)
        p = opt(p, 2 /* if_name */, name, (uint32_t)nl);
    const uint8_t tsresol = 9; /* 10^-9 s: nanoseconds */
    p = opt(p, 9 /* if_tsresol */, &tsresol, 1);
    p = put32(p, 0);
    return close_block(out, p);
}

uint32_t tw__pcapng_epb(uint8_t *out, uint32_t iface, uint64_t ts_ns, const uint8_t *data,
                        uint32_t cap_len, uint32_t orig_len, uint32_t dir)
{
    uint8_t *p = put32(out, TW__PCAPNG_EPB);
    p += 4;
    p = put32(p, iface);
    p = ts64(p, ts_ns);
    p = put32(p, cap_len);
    p = put32(p, orig_len);
    memcpy(p, data, cap_len);
    uint32_t pad = (4u - (cap_len & 3u)) & 3u;
    memset(p + cap_len, 0, pad);
    p += cap_len + pad;
    /* epb_flags bits 0-1: 01 inbound, 10 outbound (our TW_CAPTURE_RX/TX). */
    uint32_t flags = dir & 3u;
    p = opt(p, 2 /* epb_flags */, &flags, 4);
    p = put32(p, 0);
    uint32_t len = close_block(out, p);
    TW_ASSERT(len == TW__PCAPNG_EPB_BYTES(cap_len));
    return len;
}

uint32_t tw__pcapng_isb_write(uint8_t *out, uint32_t iface, const tw__pcapng_isb *s)
{
    uint8_t *p = put32(out, TW__PCAPNG_ISB);
    p += 4;
    p = put32(p, iface);
    p = ts64(p, s->ts_ns);
    uint8_t v[8];
    if (s->start_ns || s->end_ns) {
        ts64(v, s->start_ns);
        p = opt(p, 2 /* isb_starttime */, v, 8);
        ts64(v, s->end_ns);
        p = opt(p, 3 /* isb_endtime */, v, 8);
    }
    p = opt(p, 4 /* isb_ifrecv */, &s->ifrecv, 8);
    p = opt(p, 5 /* isb_ifdrop */, &s->ifdrop, 8);
    p = opt(p, 6 /* isb_filteraccept */, &s->filteraccept, 8);
    p = opt(p, 8 /* isb_usrdeliv */, &s->usrdeliv, 8);
    p = put32(p, 0);
    uint32_t len = close_block(out, p);
    TW_ASSERT(len <= TW__PCAPNG_ISB_MAX);
    return len;
}
