/* What the store shares with its tests and nobody else. */
#ifndef TW_FIXSESSION_STORE_INTERNAL_H
#define TW_FIXSESSION_STORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C by table (slicing-by-8): the portable fallback and the reference
 * the SSE4.2 version of tw_crc32c() is tested against. */
uint32_t tw__crc32c_sw(uint32_t crc, const void *p, size_t n);

#endif
