/* A small SHA-256 (FIPS 180-4) for verifying bulk transfers end to end,
 * and the deterministic byte stream those transfers carry (the interop
 * tests, their kernel peer and the round-trip benchmark share both). */
#ifndef TW_TOOLS_SHA256_H
#define TW_TOOLS_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct tw__sha256 {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    unsigned nbuf;
} tw__sha256;

void tw__sha256_init(tw__sha256 *s);
void tw__sha256_update(tw__sha256 *s, const void *data, size_t n);
void tw__sha256_final(tw__sha256 *s, uint8_t out[32]);
/* out: 65 bytes, lower-case hex. */
void tw__sha256_hex(const uint8_t d[32], char out[65]);

/* The deterministic stream: byte i of stream `seed`.  fill() writes
 * bytes [off, off+n) of it. */
void tw__stream_fill(uint64_t seed, uint64_t off, uint8_t *dst, size_t n);

#endif
