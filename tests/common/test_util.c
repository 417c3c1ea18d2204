/* The shared helpers of tickwire/util.h: decimal parsing at its edges,
 * the text check's two alphabets, parent directories, loads at odd
 * addresses, FNV-1a against its published test vectors, and the mapped
 * append file growing step by step under one mapping. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tickwire/util.h"
#include "tw_check.h"

static void test_parse_u64(void)
{
    static const struct {
        const char *s;
        int rc;
        uint64_t v;
    } cases[] = {
        {"0", 0, 0},
        {"7", 0, 7},
        {"0042", 0, 42},
        {"18446744073709551615", 0, UINT64_MAX},
        {"18446744073709551616", -ERANGE, 0},
        {"99999999999999999999", -ERANGE, 0},
        {"", -EINVAL, 0},
        {"-1", -EINVAL, 0},
        {"+1", -EINVAL, 0},
        {"12a", -EINVAL, 0},
        {" 1", -EINVAL, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t v = 12345;
        int rc = tw_parse_u64(cases[i].s, strlen(cases[i].s), &v);
        CHECKF(rc == cases[i].rc, "'%s': rc %d", cases[i].s, rc);
        CHECKF(rc != 0 || v == cases[i].v, "'%s'", cases[i].s);
        CHECKF(rc == 0 || v == 12345, "'%s': *out written on error", cases[i].s);
    }
    /* Only n bytes are read: the digits after them do not count. */
    uint64_t v = 0;
    CHECK(tw_parse_u64("123\x01" "9", 3, &v) == 0 && v == 123);
}

static void test_text_ok(void)
{
    CHECK(tw_text_ok("AB-1", 4, 4, 0) == 1);
    CHECK(tw_text_ok("AB-1", 4, 3, 0) == 0);
    CHECK(tw_text_ok("", 0, 8, 0) == 0);
    CHECK(tw_text_ok("a b", 3, 8, 0) == 0);
    CHECK(tw_text_ok("a b", 3, 8, TW_TEXT_SPACE) == 1);
    CHECK(tw_text_ok("a\x01" "b", 3, 8, TW_TEXT_SPACE) == 0);
    CHECK(tw_text_ok("a\x7f", 2, 8, TW_TEXT_SPACE) == 0);
    CHECK(tw_text_ok("~!", 2, 8, 0) == 1);
    CHECK(tw_text_ok("\xc3\xa9", 2, 8, TW_TEXT_SPACE) == 0);
}

static void test_mkdir_parents(void)
{
    char base[] = "/tmp/tw_util_XXXXXX";
    REQUIRE(mkdtemp(base) != NULL);
    char path[256], dir[256];
    snprintf(path, sizeof(path), "%s/a/b/file", base);
    CHECK(tw_mkdir_parents(path) == 0);
    CHECK(tw_mkdir_parents(path) == 0); /* existing directories are fine */
    struct stat sb;
    snprintf(dir, sizeof(dir), "%s/a/b", base);
    CHECK(stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode));
    snprintf(dir, sizeof(dir), "%s/a/b/file", base);
    CHECK(stat(dir, &sb) != 0); /* the last component is not made */
    /* A file where a directory must go. */
    snprintf(dir, sizeof(dir), "%s/f", base);
    FILE *f = fopen(dir, "w");
    REQUIRE(f != NULL);
    fclose(f);
    snprintf(path, sizeof(path), "%s/f/x/y", base);
    CHECK(tw_mkdir_parents(path) == -ENOTDIR);
    char *big = malloc(5000);
    REQUIRE(big != NULL);
    memset(big, 'a', 4999);
    big[4999] = 0;
    CHECK(tw_mkdir_parents(big) == -ENAMETOOLONG);
    free(big);
    unlink(dir);
    snprintf(dir, sizeof(dir), "%s/a/b", base);
    rmdir(dir);
    snprintf(dir, sizeof(dir), "%s/a", base);
    rmdir(dir);
    rmdir(base);
}

static void test_loads(void)
{
    unsigned char b[16];
    for (int i = 0; i < 16; i++)
        b[i] = (unsigned char)(i + 1);
    /* Odd addresses; little-endian byte order by construction. */
    CHECK(tw_load_le32(b + 1) == 0x05040302u);
    CHECK(tw_load_le64(b + 3) == 0x0b0a090807060504ull);
    tw_store_le32(b + 5, 0xdeadbeefu);
    CHECK(b[5] == 0xef && b[8] == 0xde && tw_load_le32(b + 5) == 0xdeadbeefu);
    tw_store_le64(b + 7, 0x0123456789abcdefull);
    CHECK(b[7] == 0xef && b[14] == 0x01 && tw_load_le64(b + 7) == 0x0123456789abcdefull);
    uint16_t h16 = 0x1234;
    memcpy(b + 1, &h16, 2);
    CHECK(tw_load_u16(b + 1) == 0x1234);
}

static void test_fnv(void)
{
    /* The published FNV-1a 64 vectors. */
    CHECK(tw_fnv1a64(TW_FNV1A64_INIT, "", 0) == 0xcbf29ce484222325ull);
    CHECK(tw_fnv1a64(TW_FNV1A64_INIT, "a", 1) == 0xaf63dc4c8601ec8cull);
    CHECK(tw_fnv1a64(TW_FNV1A64_INIT, "foobar", 6) == 0x85944171f73967e8ull);
    /* Chained calls hash the concatenation. */
    CHECK(tw_fnv1a64(tw_fnv1a64(TW_FNV1A64_INIT, "foo", 3), "bar", 3) == 0x85944171f73967e8ull);
}

/* A file of no name in /tmp, for the mapped-file tests (-1: none). */
static int unnamed_file(void)
{
    char path[] = "/tmp/tw_fmap_XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0)
        unlink(path);
    return fd;
}

/* Every growth extends the file by one step (or to what is needed) and
 * never moves the mapping, so what was written stays where it was and no
 * growth costs more than its own pages; a closed map is nothing. */
static void test_fmap(void)
{
    int fd = unnamed_file();
    REQUIRE(fd >= 0);
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), step = 16 * page;
    char *map = NULL;
    uint64_t res = 0, cap = 0;
    REQUIRE(tw__fmap_grow(fd, &map, &res, &cap, 100, step) == 0);
    CHECK(map != NULL && cap == step && res >= step);
    char *const first = map;
    struct stat sb;
    for (uint64_t k = 0; k < 40; k++) {
        memset(map + cap - page, (int)(k + 1), page); /* the last page of this step */
        uint64_t before = cap;
        REQUIRE(tw__fmap_grow(fd, &map, &res, &cap, cap + 1, step) == 0);
        CHECKF(cap == before + step, "growth %llu: %llu -> %llu bytes, not one step",
               (unsigned long long)k, (unsigned long long)before, (unsigned long long)cap);
        CHECK(map == first);
        CHECK(fstat(fd, &sb) == 0 && (uint64_t)sb.st_size == cap);
    }
    /* A need beyond one step is met at once, rounded to a page. */
    uint64_t before = cap;
    REQUIRE(tw__fmap_grow(fd, &map, &res, &cap, cap + 5 * step + 1, step) == 0);
    CHECK(cap == before + 5 * step + page && map == first);
    int kept = 1;
    for (uint64_t k = 0; k < 40; k++)
        kept &= (unsigned char)map[(k + 1) * step - 1] == (unsigned char)(k + 1);
    CHECK(kept);
    char buf[1];
    CHECK(pread(fd, buf, 1, (off_t)(3 * step - 1)) == 1 && buf[0] == 3); /* in the file */
    tw__fmap_close(&map, &res, &cap);
    CHECK(map == NULL && res == 0 && cap == 0);
    tw__fmap_close(&map, &res, &cap);
    /* A file that cannot be mapped: an error, nothing changed. */
    int bad = open("/dev/null", O_RDONLY);
    CHECK(tw__fmap_grow(bad, &map, &res, &cap, 100, step) < 0 && map == NULL && cap == 0);
    close(bad);
    close(fd);
}

/* Growth ahead: nothing without a mapping; then one piece a call, the
 * mapping never moving, until `ahead` bytes lie past end, and nothing
 * more until end moves on. */
static void test_fmap_ahead(void)
{
    int fd = unnamed_file();
    REQUIRE(fd >= 0);
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), step = 16 * page;
    char *map = NULL;
    uint64_t res = 0, cap = 0;
    CHECK(tw__fmap_ahead(fd, &map, &res, &cap, 0, 4 * step) == 0 && map == NULL && cap == 0);
    REQUIRE(tw__fmap_grow(fd, &map, &res, &cap, 100, step) == 0);
    char *const first = map;
    memset(map, 7, 100);
    unsigned calls = 0;
    struct stat sb;
    int exact = 1;
    for (uint64_t before = cap; tw__fmap_ahead(fd, &map, &res, &cap, 100, 4 * step) == 1;
         before = cap) {
        calls++;
        exact &= cap == before + TW__FMAP_PIECE && map == first;
        REQUIRE(calls < 10000);
    }
    CHECK(exact);
    CHECKF(cap >= 100 + 4 * step && cap < 100 + 4 * step + TW__FMAP_PIECE,
           "ahead: %llu bytes under the mapping for 100 + %llu", (unsigned long long)cap,
           (unsigned long long)(4 * step));
    CHECK(calls == (cap - step) / TW__FMAP_PIECE);
    CHECK(fstat(fd, &sb) == 0 && (uint64_t)sb.st_size == cap);
    CHECK(tw__fmap_ahead(fd, &map, &res, &cap, 100, 4 * step) == 0);
    CHECK((unsigned char)map[99] == 7);
    uint64_t before = cap;
    CHECK(tw__fmap_ahead(fd, &map, &res, &cap, cap, 4 * step) == 1 &&
          cap == before + TW__FMAP_PIECE);
    /* Not past the reservation: a growth beyond it is tw__fmap_grow's. */
    uint64_t full = res;
    CHECK(tw__fmap_ahead(fd, &map, &res, &cap, cap, full) == 1);
    uint64_t kept = res;
    res = cap; /* as if the reservation ended here */
    CHECK(tw__fmap_ahead(fd, &map, &res, &cap, cap, full) == 0);
    res = kept;
    tw__fmap_close(&map, &res, &cap);
    close(fd);
}

/* Under an address-space limit that the 1 GiB reservation would break,
 * the file is still mapped and grows (each growth mapping it again), and
 * what was written stays. */
static void test_fmap_limited(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    printf("common_util: fmap under ulimit -v skipped (the sanitizers reserve the address space)\n");
#else
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        char path[] = "/tmp/tw_fmapl_XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0)
            _exit(2);
        unlink(path);
        FILE *f = fopen("/proc/self/statm", "r");
        unsigned long pages = 0;
        if (!f || fscanf(f, "%lu", &pages) != 1)
            _exit(3);
        fclose(f);
        const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
        struct rlimit rl = {.rlim_cur = pages * page + (256u << 20), .rlim_max = RLIM_INFINITY};
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(4);
        char *map = NULL;
        uint64_t res = 0, cap = 0;
        for (int k = 0; k < 8; k++) {
            if (tw__fmap_grow(fd, &map, &res, &cap, cap + 1, 1u << 20) != 0)
                _exit(10 + k);
            map[cap - 1] = (char)(k + 1);
        }
        for (int k = 0; k < 8; k++)
            if (map[((uint64_t)k + 1) * (1u << 20) - 1] != (char)(k + 1))
                _exit(20 + k);
        _exit(res < (UINT64_C(1) << 30) ? 0 : 5);
    }
    int st = 0;
    REQUIRE(waitpid(pid, &st, 0) == pid);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fmap under ulimit -v: child status %d",
           WIFEXITED(st) ? WEXITSTATUS(st) : -1);
#endif
}

int main(void)
{
    test_parse_u64();
    test_text_ok();
    test_mkdir_parents();
    test_loads();
    test_fnv();
    test_fmap();
    test_fmap_ahead();
    test_fmap_limited();
    CHECK(tw_crc32c(0, "123456789", 9) == 0xE3069283u);
    return tw_check_done("common_util");
}
