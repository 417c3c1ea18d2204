/* The kernel's data parsers on buffers (data.c), for the file readers and
 * the fuzz targets. */
#ifndef TW_KERNEL_DATA_INTERNAL_H
#define TW_KERNEL_DATA_INTERNAL_H

#include "tickwire/kernel.h"

/* Parses the .npy preamble and header dict in buf[0..len).  Returns the
 * offset of the data (bytes consumed) and sets *count; -1 malformed or
 * unsupported (dtype other than '<f8', fortran order, not 1-D or (n, 1):
 * err says which); -2 incomplete (more bytes needed). */
long tw__npy_parse(const uint8_t *buf, size_t len, size_t *count, tw_error *err);

/* A whole .npy file in memory to a malloc'd array; name is for messages.
 * 0 or -TW_EFORMAT / -TW_ENODATA / -ENOMEM. */
int tw__npy_load(const uint8_t *buf, size_t len, const char *name, double **close,
                 size_t *n, tw_error *err);

/* CSV text in buf[0..len) (header line required, `column` chosen by name,
 * default "close"; an empty field is a NaN gap) to a malloc'd array.  0 or
 * -TW_EFORMAT naming the line (1-based, the header is line 1) /
 * -TW_ENODATA / -ENOMEM. */
int tw__csv_parse(const char *buf, size_t len, const char *column, const char *name,
                  double **close, size_t *n, tw_error *err);

/* A grid file's text in buf[0..len) (tw_read_grid; path is for messages)
 * to a malloc'd (n x 6) array.  0, or -TW_EFORMAT / -TW_ENODATA / -ENOMEM
 * naming the row or column. */
int tw__grid_parse(const char *buf, size_t len, const char *path, int64_t **combos,
                   size_t *n, tw_error *err);

/* A whole file into a malloc'd buffer: 0 or -errno / -ENOMEM naming it. */
int tw__read_file(const char *path, uint8_t **buf, size_t *len, tw_error *err);

/* The generator's parts (kernel.md "Data"), for the tests. */
uint64_t tw__splitmix64(uint64_t *x);
void tw__xoshiro_seed(uint64_t st[4], uint64_t seed);
uint64_t tw__xoshiro_next(uint64_t st[4]);

#endif
