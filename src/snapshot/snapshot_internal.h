/* What the snapshot part's files share (nobody else may include this). */
#ifndef TW_SNAPSHOT_INTERNAL_H
#define TW_SNAPSHOT_INTERNAL_H

#include <stdint.h>

/* 1 when n is "snap-<20 digits>.tws" (*seq set, if not NULL), else 0. */
int tw__snap_name(const char *n, uint64_t *seq);

/* Writes a fresh header (TW_SNAP_HDR_BYTES) for journal_seq and digest
 * (NULL: zeros) at p; body, sections and CRC are filled when written. */
void tw__snap_hdr_init(uint8_t *p, uint64_t journal_seq, const uint8_t *digest);

#endif
