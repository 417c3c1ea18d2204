/* What the files of src/capture share: the pcapng block encoders
 * (pcapng.c).  Nobody outside src/capture may use it. */
#ifndef TW_CAPTURE_INTERNAL_H
#define TW_CAPTURE_INTERNAL_H

#include <stdint.h>

#include "tickwire/capture.h"

/* pcapng block types and option codes we write (draft-ietf-opsawg-pcapng). */
#define TW__PCAPNG_SHB 0x0A0D0D0Au
#define TW__PCAPNG_IDB 0x00000001u
#define TW__PCAPNG_ISB 0x00000005u
#define TW__PCAPNG_EPB 0x00000006u
#define TW__PCAPNG_BOM 0x1A2B3C4Du
#define TW__PCAPNG_LINKTYPE_ETHERNET 1u

/* Largest blocks, for buffer sizing: an SHB with our application name,
 * an IDB with a name of TW_CAPTURE_NAME_MAX - 1 bytes, an ISB with every
 * counter, an EPB of snap bytes. */
#define TW__PCAPNG_SHB_MAX 64u
#define TW__PCAPNG_IDB_MAX (20u + 4u + TW_CAPTURE_NAME_MAX + 8u + 4u)
#define TW__PCAPNG_ISB_MAX (24u + 6u * 12u + 4u)
#define TW__PCAPNG_EPB_BYTES(cap) (32u + (((uint32_t)(cap) + 3u) & ~3u) + 8u + 4u)

/* Each writes one whole block at out (room for its _MAX or _BYTES above)
 * and returns its length (a multiple of 4).  Byte order: the host's (the
 * Section Header's byte-order magic tells readers which). */
uint32_t tw__pcapng_shb(uint8_t *out);
uint32_t tw__pcapng_idb(uint8_t *out, const char *name, uint32_t snap_len);
uint32_t tw__pcapng_epb(uint8_t *out, uint32_t iface, uint64_t ts_ns, const uint8_t *data,
                        uint32_t cap_len, uint32_t orig_len, uint32_t dir);
/* Statistics of one interface: start/end are its first and last packet
 * times (both 0: none, and the options are left out). */
typedef struct tw__pcapng_isb {
    uint64_t ts_ns, start_ns, end_ns;
    uint64_t ifrecv, ifdrop, filteraccept, usrdeliv;
} tw__pcapng_isb;
uint32_t tw__pcapng_isb_write(uint8_t *out, uint32_t iface, const tw__pcapng_isb *s);

#endif
