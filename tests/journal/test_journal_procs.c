/* The journal between processes (children are this program, exec'd):
 *
 *  follow   a writer process appends N records in bulks of seeded sizes
 *           while this process follows the file with a reader: every
 *           record arrives once, in order, whole (pwrite and mapped mode);
 *  kill     a writer process appends for ever and is sent SIGKILL at
 *           seeded random points (or kills itself after a seeded count);
 *           each time the journal reopens with every record it had
 *           reported appended, a torn tail of at most one record, zeros
 *           after it in mapped mode, and the next writer goes on from
 *           there.
 *
 * Yielding throughout (2 cores); nothing depends on timing: where a kill
 * lands varies, what is checked holds wherever it lands.  The seed is
 * printed; TW_SEED=N repeats a run. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "journal_test_util.h"
#include "tw_check.h"

static char dir[256], path[512];
static uint64_t rng;

static uint64_t rnd(uint64_t n)
{
    rng = ju_mix(rng);
    return rng % n;
}

/* ---- children -------------------------------------------------------------- */

/* writer PATH N MAPPED SEED: appends N records in bulks of 1..8. */
static int child_writer(char **argv)
{
    const char *p = argv[0];
    uint64_t n = strtoull(argv[1], NULL, 10);
    int mapped = atoi(argv[2]);
    rng = strtoull(argv[3], NULL, 10);
    tw_journal j;
    tw_error err = {0};
    tw_journal_cfg cfg = {.path = p, .mmap_bytes = mapped ? 4096 : 0};
    if (tw_journal_open(&j, &cfg, &err) != 0) {
        fprintf(stderr, "writer: %s\n", err.msg);
        return 2;
    }
    uint8_t pl[8][TW_JOURNAL_PAYLOAD];
    while (tw_journal_next_seq(&j) <= n) {
        uint64_t k = 1 + rnd(8), left = n + 1 - tw_journal_next_seq(&j);
        if (k > left)
            k = left;
        for (uint64_t i = 0; i < k; i++)
            ju_payload(tw_journal_next_seq(&j) + i, pl[i]);
        int rc = tw_journal_append_bulk(&j, TW_JOURNAL_EV, pl, (uint32_t)k, NULL);
        if (rc != 0) {
            fprintf(stderr, "writer: append: %s\n", tw_strerror(rc));
            return 2;
        }
        if (rnd(4) == 0)
            sched_yield();
    }
    tw_journal_close(&j);
    return 0;
}

/* appender PATH MAPPED SEED COUNTER_FD SELF_KILL_AT: appends until killed;
 * after each append, stores next_seq in the counter (shared memory). */
static int child_appender(char **argv)
{
    const char *p = argv[0];
    int mapped = atoi(argv[1]);
    rng = strtoull(argv[2], NULL, 10);
    int cfd = atoi(argv[3]);
    uint64_t self_kill = strtoull(argv[4], NULL, 10);
    uint64_t *counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
    if (counter == MAP_FAILED)
        return 2;
    tw_journal j;
    tw_error err = {0};
    tw_journal_cfg cfg = {.path = p, .mmap_bytes = mapped ? 8192 : 0,
                          .fsync = TW_JOURNAL_FSYNC_NONE};
    if (tw_journal_open(&j, &cfg, &err) != 0) {
        fprintf(stderr, "appender: %s\n", err.msg);
        return 2;
    }
    uint8_t pl[8][TW_JOURNAL_PAYLOAD];
    for (;;) {
        uint64_t k = 1 + rnd(8);
        for (uint64_t i = 0; i < k; i++)
            ju_payload(tw_journal_next_seq(&j) + i, pl[i]);
        if (tw_journal_append_bulk(&j, TW_JOURNAL_EV, pl, (uint32_t)k, NULL) != 0)
            return 2;
        /* Release pairs with the parent's acquire-load: the count it reads
         * is of appends that returned. */
        __atomic_store_n(counter, tw_journal_next_seq(&j), __ATOMIC_RELEASE);
        if (self_kill && tw_journal_next_seq(&j) >= self_kill)
            raise(SIGKILL);
        if (rnd(8) == 0)
            sched_yield();
    }
}

/* ---- parent ---------------------------------------------------------------- */

static pid_t spawn(char **args)
{
    pid_t pid = fork();
    if (pid == 0) {
        execv("/proc/self/exe", args);
        _exit(127);
    }
    return pid;
}

static void test_follow(int mapped, uint64_t seed)
{
    enum { N = 20000 };
    unlink(path);
    tw_journal j;
    tw_error err = {0};
    tw_journal_cfg cfg = {.path = path};
    REQUIRE(tw_journal_open(&j, &cfg, &err) == 0);
    tw_journal_close(&j);
    char n_s[32], m_s[8], seed_s[32];
    snprintf(n_s, sizeof(n_s), "%d", N);
    snprintf(m_s, sizeof(m_s), "%d", mapped);
    snprintf(seed_s, sizeof(seed_s), "%llu", (unsigned long long)seed);
    char *args[] = {"journal_procs", "writer", path, n_s, m_s, seed_s, NULL};
    pid_t pid = spawn(args);
    REQUIRE(pid > 0);
    tw_journal_reader r;
    tw_journal_reader_cfg rc = {.path = path, .follow = 1, .buf_records = 16};
    REQUIRE(tw_journal_reader_open(&r, &rc, &err) == 0);
    tw_journal_rec recs[32];
    uint64_t seen = 0;
    int exited = 0, status = 0;
    while (seen < N) {
        int k = tw_journal_read_burst(&r, recs, 1 + (uint32_t)rnd(32), &err);
        if (k < 0) {
            CHECKF(0, "mapped %d: after %llu records: %s", mapped, (unsigned long long)seen, err.msg);
            break;
        }
        for (int i = 0; i < k; i++) {
            CHECK_EQ(recs[i].seq, seen + 1);
            CHECK(ju_payload_ok(&recs[i]));
            seen++;
        }
        if (k == 0) {
            if (exited) {
                CHECKF(0, "mapped %d: the writer exited (status %d) at %llu of %d records", mapped,
                       status, (unsigned long long)seen, N);
                break;
            }
            /* One more read after the writer is seen gone, then judge. */
            exited = waitpid(pid, &status, WNOHANG) == pid;
            sched_yield();
        }
    }
    printf("follow (mapped %d): %llu records, %llu empty polls, %llu rereads\n", mapped,
           (unsigned long long)seen, (unsigned long long)r.polls_empty,
           (unsigned long long)r.rereads);
    tw_journal_reader_close(&r);
    if (!exited)
        CHECK(waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer status %d", status);
}

static void test_kill(int mapped, uint64_t seed, int rounds)
{
    unlink(path);
    int cfd = memfd_create("tw-journal-counter", 0);
    REQUIRE(cfd >= 0 && ftruncate(cfd, 4096) == 0);
    uint64_t *counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
    REQUIRE(counter != MAP_FAILED);
    uint64_t have = 0; /* records the journal held after the last round */
    uint64_t torn = 0, zero = 0;
    for (int round = 0; round < rounds; round++) {
        __atomic_store_n(counter, 0, __ATOMIC_RELAXED);
        uint64_t target = have + 1 + rnd(3000);
        int self = rnd(3) == 0; /* the child kills itself at target */
        char m_s[8], seed_s[32], fd_s[16], sk_s[32];
        snprintf(m_s, sizeof(m_s), "%d", mapped);
        snprintf(seed_s, sizeof(seed_s), "%llu", (unsigned long long)(seed + (uint64_t)round));
        snprintf(fd_s, sizeof(fd_s), "%d", cfd);
        snprintf(sk_s, sizeof(sk_s), "%llu", (unsigned long long)(self ? target : 0));
        char *args[] = {"journal_procs", "appender", path, m_s, seed_s, fd_s, sk_s, NULL};
        pid_t pid = spawn(args);
        REQUIRE(pid > 0);
        int status = 0;
        if (!self) {
            /* Acquire pairs with the child's release-store of its count. */
            while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < target) {
                if (waitpid(pid, &status, WNOHANG) == pid)
                    break;
                sched_yield();
            }
            for (uint64_t s = rnd(64); s > 0; s--)
                sched_yield();
            kill(pid, SIGKILL);
        }
        REQUIRE(waitpid(pid, &status, 0) == pid);
        CHECKF(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "round %d: status %d", round,
               status);
        uint64_t reported = __atomic_load_n(counter, __ATOMIC_ACQUIRE);
        CHECKF(reported >= target, "round %d: the child reached %llu of %llu", round,
               (unsigned long long)reported, (unsigned long long)target);
        /* Reopened by the next writer: everything reported is there. */
        tw_journal j;
        tw_error err = {0};
        tw_journal_cfg cfg = {.path = path, .mmap_bytes = mapped ? 8192 : 0};
        int rc = tw_journal_open(&j, &cfg, &err);
        CHECKF(rc == 0, "round %d (seed %llu): %s", round, (unsigned long long)seed, err.msg);
        if (rc != 0)
            break;
        CHECKF(j.records >= reported - 1, "round %d: %llu records, %llu reported", round,
               (unsigned long long)j.records, (unsigned long long)reported - 1);
        CHECK(j.records >= have);
        CHECK(j.torn_bytes == 0 || j.torn_bytes <= (mapped ? (uint64_t)j.map_cap : 79));
        torn += j.torn_bytes > 0;
        zero += j.zero_bytes > 0;
        have = j.records;
        tw_journal_close(&j);
        /* ... and every record checks out. */
        tw_journal_reader r;
        tw_journal_reader_cfg rcfg = {.path = path, .buf_records = 64};
        REQUIRE(tw_journal_reader_open(&r, &rcfg, &err) == 0);
        tw_journal_rec recs[64];
        uint64_t n = 0;
        int k;
        while ((k = tw_journal_read_burst(&r, recs, 64, &err)) > 0)
            for (int i = 0; i < k; i++) {
                CHECK_EQ(recs[i].seq, n + 1);
                CHECK(ju_payload_ok(&recs[i]));
                n++;
            }
        CHECKF(k == 0 && n == have, "round %d: %llu of %llu (%s)", round, (unsigned long long)n,
               (unsigned long long)have, err.msg);
        tw_journal_reader_close(&r);
    }
    printf("kill (mapped %d): %d rounds, %llu records, %llu torn tails, %llu zero tails\n", mapped,
           rounds, (unsigned long long)have, (unsigned long long)torn, (unsigned long long)zero);
    munmap(counter, 4096);
    close(cfd);
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "writer"))
        return child_writer(argv + 2);
    if (argc > 2 && !strcmp(argv[1], "appender"))
        return child_appender(argv + 2);
    const char *s = getenv("TW_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 10) : (uint64_t)getpid() ^ (uint64_t)time(NULL);
    printf("journal_procs: seed %llu (TW_SEED=%llu repeats it)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    fflush(stdout);
    rng = seed;
    ju_mkdir(dir, sizeof(dir), "journal-procs");
    snprintf(path, sizeof(path), "%s/j", dir);
    int rounds = 40;
#if defined(TW_TEST_ASAN) || defined(TW_TEST_TSAN)
    rounds = 15;
#endif
    test_follow(0, seed);
    test_follow(1, seed + 1);
    test_kill(0, seed + 2, rounds);
    test_kill(1, seed + 3, rounds);
    ju_rmdir(dir);
    if (tw_check_failures)
        fprintf(stderr, "journal_procs: seed %llu\n", (unsigned long long)seed);
    return tw_check_done("journal_procs");
}
