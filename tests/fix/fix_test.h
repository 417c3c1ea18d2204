/* Helpers shared by the FIX parser tests: golden messages, a reference
 * checksum written the slow way, guard-page buffers, and CHECK_STR for
 * string views (the checks themselves are tests/tw_check.h). */
#ifndef TW_FIX_TEST_H
#define TW_FIX_TEST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tickwire/fix.h"
#include "tw_check.h"

#define CHECK_STR(view, s)                                                             \
    do {                                                                               \
        const char *s_ = (s);                                                          \
        if ((view).len != strlen(s_) || memcmp((view).p, s_, strlen(s_)) != 0) {        \
            fprintf(stderr, "%s:%d: %s is '%.*s', expected '%s'\n", __FILE__, __LINE__, \
                    #view, (int)(view).len, (view).p ? (view).p : "", s_);             \
            tw_check_failures++;                                                       \
        }                                                                              \
    } while (0)

/* xorshift64, the deterministic generator of the tests that want one
 * (seed fix_rng to start another sequence). */
static unsigned long long fix_rng = 0x2545F4914F6CDD1Dull;
static inline unsigned fix_rnd(void)
{
    fix_rng ^= fix_rng << 13;
    fix_rng ^= fix_rng >> 7;
    fix_rng ^= fix_rng << 17;
    return (unsigned)(fix_rng >> 11);
}

/* '|' -> SOH into a malloc'd copy (the tests write messages readably). */
static inline char *soh(const char *s, size_t *len)
{
    size_t n = strlen(s);
    char *p = malloc(n + 1);
    for (size_t i = 0; i <= n; i++)
        p[i] = s[i] == '|' ? TW_FIX_SOH : s[i];
    *len = n;
    return p;
}

/* Builds a well-formed message from "35=...|...|" (body with '|'):
 * prepends 8=begin|9=len| and appends 10=sum|, computed the slow way so
 * the library's framer is checked against an independent oracle. */
static inline size_t mkmsg(char *out, size_t cap, const char *begin, const char *body)
{
    char b[1 << 15];
    size_t bl = strlen(body);
    if (bl >= sizeof(b))
        abort();
    for (size_t i = 0; i < bl; i++)
        b[i] = body[i] == '|' ? TW_FIX_SOH : body[i];
    int h = snprintf(out, cap, "8=%s\0019=%zu\001", begin, bl);
    if (h < 0 || (size_t)h + bl + 8 > cap)
        abort();
    memcpy(out + h, b, bl);
    size_t n = (size_t)h + bl;
    unsigned sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (unsigned char)out[i];
    n += (size_t)snprintf(out + n, cap - n, "10=%03u\001", sum % 256);
    return n;
}

/* Golden messages from tests/fix/golden/messages.fix. */
#define GOLDEN_MAX 64
typedef struct golden {
    char *p;
    size_t len;
} golden;

static inline int load_golden(const char *path, golden *g, int max)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof(line), f) && n < max) {
        size_t l = strcspn(line, "\r\n");
        line[l] = 0;
        if (l == 0 || line[0] == '#')
            continue;
        g[n].p = soh(line, &g[n].len);
        n++;
    }
    fclose(f);
    return n;
}

/* A copy of len bytes that ends exactly where a PROT_NONE page begins, so
 * reading one byte past the end faults.  Free with guard_free(). */
typedef struct guard {
    char *map;
    size_t map_len;
    char *p;
} guard;

static inline guard guard_alloc(const void *src, size_t len)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t data_pages = (len + pg - 1) / pg + 1;
    guard g;
    g.map_len = (data_pages + 1) * pg;
    g.map = mmap(NULL, g.map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g.map == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    if (mprotect(g.map + data_pages * pg, pg, PROT_NONE) != 0) {
        perror("mprotect");
        exit(1);
    }
    g.p = g.map + data_pages * pg - len;
    memcpy(g.p, src, len);
    return g;
}

static inline void guard_free(guard *g)
{
    munmap(g->map, g->map_len);
}

#endif
