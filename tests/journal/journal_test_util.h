/* What the journal tests share: deterministic payloads, files read and
 * written whole, a scratch directory. */
#ifndef TW_TESTS_JOURNAL_UTIL_H
#define TW_TESTS_JOURNAL_UTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tickwire/journal.h"

static inline uint64_t ju_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The payload every test writes for record seq: a function of seq alone,
 * so a reader in another process can check each record it gets. */
static inline void ju_payload(uint64_t seq, uint8_t out[TW_JOURNAL_PAYLOAD])
{
    for (unsigned i = 0; i < TW_JOURNAL_PAYLOAD / 8; i++) {
        uint64_t v = ju_mix(seq * 8 + i);
        memcpy(out + 8 * i, &v, 8);
    }
}

static inline int ju_payload_ok(const tw_journal_rec *r)
{
    uint8_t want[TW_JOURNAL_PAYLOAD];
    ju_payload(r->seq, want);
    return memcmp(want, r->payload, sizeof(want)) == 0;
}

/* The whole file (malloc'd, *len bytes), or NULL. */
static inline uint8_t *ju_slurp(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return NULL;
    }
    uint8_t *b = malloc((size_t)st.st_size + 1);
    ssize_t k = b ? pread(fd, b, (size_t)st.st_size, 0) : -1;
    close(fd);
    if (k != st.st_size) {
        free(b);
        return NULL;
    }
    *len = (size_t)st.st_size;
    return b;
}

/* Replaces path's contents with len bytes.  Returns 0 or -1. */
static inline int ju_spill(const char *path, const void *b, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    ssize_t k = len ? write(fd, b, len) : 0;
    close(fd);
    return k == (ssize_t)len ? 0 : -1;
}

/* A fresh directory under /tmp for one test program (removed by ju_rmdir). */
static inline void ju_mkdir(char *dir, size_t cap, const char *tag)
{
    snprintf(dir, cap, "/tmp/tw-%s-XXXXXX", tag);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
}

static inline void ju_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

#endif
