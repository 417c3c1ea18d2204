/* Snapshot files: written and loaded back; the newest `keep` kept; every
 * bit of the newest flipped and every length of it cut (set aside as
 * *.bad with a reason, the older one loaded); another version; a deleted
 * snapshot; another configuration or kernel set refused naming it; the
 * owners' accept refusing the newest (left in place with its reason, the
 * older one loaded); a writer killed by SIGKILL before its temporary is whole, before the
 * fsync, and between the rename and the deletion of old files. */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

#include "../journal/journal_test_util.h"
#include "tickwire/util.h"
#include "tickwire/snapshot.h"
#include "tw_check.h"

static char dir[256];
static const uint8_t digest[TW_SNAP_DIGEST_BYTES] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const char *kernels = "hma_sar 1\nema_cross 1\n";

static void build(tw_snap_buf *b, uint64_t seq)
{
    tw_snap_begin(b, seq, digest);
    CHECK_EQ(tw_snap_add(b, TW_SNAP_SEC_KERNELS, kernels, strlen(kernels)), 0);
    uint8_t state[37];
    for (unsigned i = 0; i < sizeof(state); i++)
        state[i] = (uint8_t)(seq * 31 + i);
    CHECK_EQ(tw_snap_add(b, TW_SNAP_SEC_INSTANCE, state, sizeof(state)), 0);
    CHECK_EQ(tw_snap_add(b, TW_SNAP_SEC_RISK, NULL, 0), 0);
    CHECK_EQ(tw_snap_add(b, TW_SNAP_SEC_GW_SESSIONS, &seq, 8), 0);
}

static void write_snap(uint64_t seq, uint32_t keep)
{
    tw_snap_buf b;
    build(&b, seq);
    tw_error err = {0};
    tw_snap_write_cfg c = {.dir = dir, .keep = keep};
    CHECKF(tw_snap_write(&b, &c, &err) == 0, "%s", err.msg);
    tw_snap_free(&b);
}

static void snap_path(char *out, size_t cap, uint64_t seq)
{
    snprintf(out, cap, "%s/snap-%020llu.tws", dir, (unsigned long long)seq);
}

/* Loads; returns the journal seq loaded (checking its content) or the error. */
static long long load(tw_snap_report *rep, tw_error *err)
{
    tw_snap s;
    tw_snap_expect e = {.digest = digest, .kernels = kernels};
    int rc = tw_snap_load(dir, &e, &s, rep, err);
    if (rc != 0)
        return rc;
    const tw_snap_section *st = tw_snap_find(&s, TW_SNAP_SEC_INSTANCE);
    CHECK(st && st->len == 37);
    if (!st || st->len != 37) {
        tw_snap_release(&s);
        return -1;
    }
    for (unsigned i = 0; i < 37; i++)
        CHECK_EQ(st->data[i], (uint8_t)(s.hdr.journal_seq * 31 + i));
    const tw_snap_section *g = tw_snap_find(&s, TW_SNAP_SEC_GW_SESSIONS);
    CHECK(g && g->len == 8 && memcmp(g->data, &s.hdr.journal_seq, 8) == 0);
    CHECK_EQ(s.nsec, 4u);
    long long seq = (long long)s.hdr.journal_seq;
    tw_snap_release(&s);
    return seq;
}

static int exists(const char *p) { return access(p, F_OK) == 0; }

static void fresh(void)
{
    ju_rmdir(dir);
    CHECK(mkdir(dir, 0755) == 0);
}

static void test_round_trip_keep(void)
{
    fresh();
    tw_snap_report rep;
    tw_error err = {0};
    CHECK_EQ(load(&rep, &err), -ENOENT);
    for (uint64_t s = 100; s <= 500; s += 100)
        write_snap(s, 2);
    char p[600];
    snap_path(p, sizeof(p), 500);
    CHECK(exists(p));
    snap_path(p, sizeof(p), 400);
    CHECK(exists(p));
    snap_path(p, sizeof(p), 300);
    CHECK(!exists(p));
    CHECK_EQ(load(&rep, &err), 500);
    CHECK_EQ(rep.set_aside, 0u);
    /* A deleted snapshot: the older one. */
    snap_path(p, sizeof(p), 500);
    CHECK_EQ(unlink(p), 0);
    CHECK_EQ(load(&rep, &err), 400);
    snap_path(p, sizeof(p), 400);
    CHECK_EQ(unlink(p), 0);
    CHECK_EQ(load(&rep, &err), -ENOENT);
}

/* Every bit of the newest flipped, every length of it cut: set aside with
 * a reason, the older one loaded. */
static void test_damage(void)
{
    fresh();
    write_snap(10, 2);
    write_snap(20, 2);
    char p[600], bad[700];
    snap_path(p, sizeof(p), 20);
    snprintf(bad, sizeof(bad), "%s.bad", p);
    size_t len;
    uint8_t *b = ju_slurp(p, &len);
    REQUIRE(b);
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            b[i] ^= (uint8_t)(1u << bit);
            CHECK_EQ(ju_spill(p, b, len), 0);
            tw_snap_report rep;
            tw_error err = {0};
            CHECKF(load(&rep, &err) == 10, "byte %zu bit %d: %s", i, bit, err.msg);
            CHECK_EQ(rep.set_aside, 1u);
            CHECKF(strstr(rep.reasons[0], "snap-00000000000000000020.tws") != NULL, "%s",
                   rep.reasons[0]);
            CHECK(exists(bad) && !exists(p));
            unlink(bad);
            b[i] ^= (uint8_t)(1u << bit);
        }
    }
    for (size_t cut = 0; cut < len; cut++) {
        CHECK_EQ(ju_spill(p, b, cut), 0);
        tw_snap_report rep;
        tw_error err = {0};
        CHECK_EQ(load(&rep, &err), 10);
        CHECK_EQ(rep.set_aside, 1u);
        unlink(bad);
    }
    /* Another version (header CRC made right): set aside too, reason says so. */
    tw_snap_hdr h;
    memcpy(&h, b, sizeof(h));
    h.version = 2;
    h.crc = tw_crc32c(0, &h, offsetof(tw_snap_hdr, crc));
    memcpy(b, &h, sizeof(h));
    CHECK_EQ(ju_spill(p, b, len), 0);
    tw_snap_report rep;
    tw_error err = {0};
    CHECK_EQ(load(&rep, &err), 10);
    CHECKF(strstr(rep.reasons[0], "version 2") != NULL, "%s", rep.reasons[0]);
    free(b);
}

static void test_refusals(void)
{
    fresh();
    write_snap(7, 2);
    tw_snap s;
    tw_snap_report rep;
    tw_error err = {0};
    uint8_t other[TW_SNAP_DIGEST_BYTES] = {0};
    tw_snap_expect e = {.digest = other, .kernels = kernels};
    CHECK_EQ(tw_snap_load(dir, &e, &s, &rep, &err), -ESTALE);
    CHECKF(strstr(err.msg, "config digest differs") != NULL, "%s", err.msg);
    e = (tw_snap_expect){.digest = digest, .kernels = "hma_sar 1\nema_cross 2\n"};
    CHECK_EQ(tw_snap_load(dir, &e, &s, &rep, &err), -ESTALE);
    CHECKF(strstr(err.msg, "\"ema_cross 1\", configured \"ema_cross 2\"") != NULL, "%s", err.msg);
    char p[600];
    snap_path(p, sizeof(p), 7);
    CHECK(exists(p)); /* refused, not set aside */
    CHECK_EQ(rep.set_aside, 0u);
}

/* The owners' accept: a refused snapshot is skipped with its reason, not
 * set aside, and the next older one is loaded; none taken is -ENOENT. */
static int refuse_above(void *arg, const tw_snap *s, tw_error *err)
{
    uint64_t above = *(const uint64_t *)arg;
    if (s->hdr.journal_seq > above)
        return tw__err(err, -TW_EFORMAT, "seq %llu above %llu",
                       (unsigned long long)s->hdr.journal_seq, (unsigned long long)above);
    return 0;
}

static void test_accept(void)
{
    fresh();
    write_snap(10, 3);
    write_snap(20, 3);
    write_snap(30, 3);
    uint64_t above = 15;
    tw_snap s;
    tw_snap_report rep;
    tw_error err = {0};
    tw_snap_expect e = {.digest = digest, .kernels = kernels, .accept = refuse_above,
                        .arg = &above};
    CHECKF(tw_snap_load(dir, &e, &s, &rep, &err) == 0, "%s", err.msg);
    CHECK(s.hdr.journal_seq == 10 && rep.refused == 2 && rep.set_aside == 0);
    CHECKF(strstr(rep.reasons[0], "snap-00000000000000000030.tws not used: seq 30 above 15") &&
           strstr(rep.reasons[1], "00020.tws not used"), "%s | %s", rep.reasons[0],
           rep.reasons[1]);
    tw_snap_release(&s);
    char p[600];
    snap_path(p, sizeof(p), 30);
    CHECK(exists(p));
    above = 5;
    CHECK_EQ(tw_snap_load(dir, &e, &s, &rep, &err), -ENOENT);
    CHECKF(rep.refused == 3 && strstr(err.msg, "0 set aside, 3 not used"), "%s", err.msg);
}

static int kill_at;
static void hook(int at, void *arg)
{
    (void)arg;
    if (at == kill_at)
        raise(SIGKILL);
}

static void test_kill(void)
{
    for (int at = TW_SNAP_AT_PARTIAL; at <= TW_SNAP_AT_RENAMED; at++) {
        fresh();
        write_snap(1, 2);
        write_snap(2, 2);
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            kill_at = at;
            tw_snap_buf b;
            build(&b, 3);
            tw_error err = {0};
            tw_snap_write_cfg c = {.dir = dir, .keep = 2, .hook = hook};
            (void)tw_snap_write(&b, &c, &err);
            _exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        tw_snap_report rep;
        tw_error err = {0};
        long long want = at == TW_SNAP_AT_RENAMED ? 3 : 2;
        CHECKF(load(&rep, &err) == want, "kill at %d: %s", at, err.msg);
        CHECK_EQ(rep.set_aside, 0u); /* a temporary is never taken for a snapshot */
        /* The next write cleans up: the leftover temporary and the old ones. */
        write_snap(4, 2);
        char p[600], t[700];
        snap_path(p, sizeof(p), 3);
        snprintf(t, sizeof(t), "%s.tmp", p);
        CHECK(!exists(t));
        snap_path(p, sizeof(p), 2);
        CHECK(exists(p) == (want == 2));
        snap_path(p, sizeof(p), 1);
        CHECK(!exists(p));
        CHECK_EQ(load(&rep, &err), 4);
    }
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/tw-snap-%d", (int)getpid());
    ju_rmdir(dir);
    test_round_trip_keep();
    test_damage();
    test_refusals();
    test_accept();
    test_kill();
    ju_rmdir(dir);
    return tw_check_done("snapshot");
}
