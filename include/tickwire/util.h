/* The small helpers every part shares, owned by common so that no part
 * includes a higher one to get them: FNV-1a hashing, decimal parsing,
 * FIX-safe text checks, parent directories, unaligned loads and stores,
 * CRC-32C, and the size of a Unix socket path. */
#ifndef TICKWIRE_UTIL_H
#define TICKWIRE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* sizeof(sockaddr_un.sun_path) on Linux: the longest Unix socket path,
 * its NUL included (util.c asserts it against <sys/un.h>). */
#define TW_UNIX_PATH_MAX 108

/* 64-bit FNV-1a: the offset basis to start from, and one step over n
 * bytes from h (chain calls to hash several pieces). */
#define TW_FNV1A64_INIT UINT64_C(0xcbf29ce484222325)
#define TW_FNV1A64_PRIME UINT64_C(0x100000001b3)
static inline uint64_t tw_fnv1a64(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * TW_FNV1A64_PRIME;
    return h;
}

/* Parses p[0..n) as a decimal number, all of it digits.  Returns 0 with
 * *out set, -EINVAL for an empty or non-digit text, -ERANGE above
 * UINT64_MAX. */
int tw_parse_u64(const char *p, size_t n, uint64_t *out);

/* tw_text_ok flags: TW_TEXT_SPACE also admits ' ' (FIX text fields), else
 * only graphic characters (CompIDs, host names, symbols). */
#define TW_TEXT_SPACE 1u
/* 1 when v[0..n) is 1 to max bytes of printable ASCII (0x21-0x7e, or
 * 0x20-0x7e with TW_TEXT_SPACE): a value that can go into a FIX field
 * (no SOH, no control byte), else 0. */
int tw_text_ok(const char *v, size_t n, size_t max, unsigned flags);

/* Creates each directory above the last '/' of path (mode 0755), like
 * mkdir -p of its dirname.  Returns 0, -ENAMETOOLONG, or -errno of the
 * mkdir that failed (an existing directory is not a failure). */
int tw_mkdir_parents(const char *path);

/* Loads and stores at any alignment: host order (u16/u32/u64) and
 * little-endian (le32/le64, for files that must read the same on every
 * host). */
static inline uint16_t tw_load_u16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}
static inline uint32_t tw_load_u32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}
static inline uint64_t tw_load_u64(const void *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define TW__LE32(v) __builtin_bswap32(v)
#define TW__LE64(v) __builtin_bswap64(v)
#else
#define TW__LE32(v) (v)
#define TW__LE64(v) (v)
#endif
static inline uint32_t tw_load_le32(const void *p) { return TW__LE32(tw_load_u32(p)); }
static inline uint64_t tw_load_le64(const void *p) { return TW__LE64(tw_load_u64(p)); }
static inline void tw_store_le32(void *p, uint32_t v)
{
    v = TW__LE32(v);
    memcpy(p, &v, sizeof(v));
}
static inline void tw_store_le64(void *p, uint64_t v)
{
    v = TW__LE64(v);
    memcpy(p, &v, sizeof(v));
}

/* CRC-32C (Castagnoli) of p[0..n), continuing crc (0 to start): the
 * SSE4.2 instruction where the CPU has it, else slicing-by-8. */
uint32_t tw_crc32c(uint32_t crc, const void *p, size_t n);
/* The table version alone: the reference tw_crc32c is tested against. */
uint32_t tw__crc32c_sw(uint32_t crc, const void *p, size_t n);

/* An append-only file mapped shared (the journal's and the FIX store's
 * mmap mode).  The address space is reserved once, past the end of the
 * file; the file is extended beneath it `step` bytes at a time (blocks
 * allocated, pages write-faulted where the kernel can), so that a growth
 * costs one step's pages, never a remap of all that was written.  Under an
 * address-space limit too low for the reservation it maps only what is
 * needed (each growth then maps again).  *map is NULL before the first
 * call; *reserve and *cap (the file's bytes under the mapping) are kept
 * here.  end: the offset the next appends need.  0, or -errno with *cap
 * unchanged (a mapping already made stays, for tw__fmap_close). */
int tw__fmap_grow(int fd, char **map, uint64_t *reserve, uint64_t *cap, uint64_t end,
                  uint64_t step);
/* Growth ahead of the appends, for the appending thread's idle turns: when
 * fewer than `ahead` bytes of file lie under the mapping past end, the
 * file is extended by one piece (TW__FMAP_PIECE bytes: a few µs of page
 * work, where a whole step costs a few hundred) within the reservation.
 * Appends then find their room made and rarely extend the file
 * themselves.  1 when it grew; 0 when there was nothing to do (no
 * mapping, far enough ahead, or the reservation full: a growth past it is
 * left to tw__fmap_grow); -errno as tw__fmap_grow. */
#define TW__FMAP_PIECE (16u << 10)
/* How far ahead the journal and the stores grow: this many steps. */
#define TW__FMAP_AHEAD_STEPS 4
int tw__fmap_ahead(int fd, char **map, uint64_t *reserve, uint64_t *cap, uint64_t end,
                   uint64_t ahead);
/* Unmaps what tw__fmap_grow mapped (a NULL *map is nothing). */
void tw__fmap_close(char **map, uint64_t *reserve, uint64_t *cap);

#ifdef __cplusplus
}
#endif

#endif
