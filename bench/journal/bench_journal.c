/* tickwire bench journal: what journaling costs the gateway per event, and
 * how fast a restarted strategy reads its journal back (journal.h).
 *
 *  append   ns per tw_journal_append, per write mode (pwrite / mmap) and
 *           fsync policy (none / every 64 / every record), next to the
 *           floor measured in the same run: a bare 80-byte pwrite, an
 *           80-byte copy into a shared mapping, a pwrite + fdatasync;
 *  replay   records per second through a reader (every record checked:
 *           magic, CRC, seq) and through the writer's open (the same
 *           checks), next to a bare read of the file in 64 KiB chunks;
 *  attach   a strategy process (forked) attached to a gateway over the
 *           replay journal: its replay through tw_attach_st_next_burst
 *           (records per second, next to the bare reader), then kill -9:
 *           the time until the gateway sees it gone (pidfd), until the
 *           rings are reset, and for the next strategy to attach, next to
 *           the kernel's kill -> waitpid and a bare fork -> exit.
 *
 * Every run is checked before its figure is used: the journal it wrote
 * reads back with every record (count, seq, payload).  Runs of the
 * variants are interleaved; the median is reported. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cli_opt.h"
#include "common/stats.h"
#include "tickwire/clock.h"
#include "tickwire/journal.h"
#include "tickwire/kernel.h"
#include "tickwire/shm_attach.h"

int tw__cli_bench_journal(int argc, char **argv);

static const char usage[] =
    "usage: tickwire bench journal [--dir DIR] [--reps N] [--quick]\n"
    "\n"
    "The gateway's journal: ns per append per write mode and fsync policy, next to a\n"
    "bare pwrite / copy / pwrite+fdatasync; replay rate in records per second, next to\n"
    "a bare read of the file; a strategy process's replay through the attach, and\n"
    "kill -9 -> detected -> reset -> reattached.\n"
    "  --dir DIR   where the journals go (default /tmp; fsync figures are the disk's)\n"
    "  --reps N    interleaved runs, the median is reported (default 5)\n"
    "  --quick     small counts (a smoke test: every check, figures not meaningful)\n";

static char dir[3000];
static char jpath[3100];

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void payload(uint64_t seq, uint8_t *p)
{
    for (int i = 0; i < 8; i++) {
        uint64_t v = mix(seq * 8 + (uint64_t)i);
        memcpy(p + 8 * i, &v, 8);
    }
}

/* One timed run: n appends into a new journal.  ns per append, or < 0. */
static double run_append(int mapped, tw_journal_fsync pol, uint32_t every, uint64_t n,
                         const uint8_t *pls)
{
    unlink(jpath);
    tw_journal j;
    tw_error err = {0};
    tw_journal_cfg cfg = {.path = jpath, .fsync = pol, .fsync_n = every,
                          .mmap_bytes = mapped ? (n + 16) * TW_JOURNAL_REC_BYTES : 0};
    if (tw_journal_open(&j, &cfg, &err) != 0) {
        fprintf(stderr, "tickwire bench journal: %s\n", err.msg);
        return -1;
    }
    int64_t t0 = tw_clock_now_ns();
    for (uint64_t i = 0; i < n; i++)
        if (tw_journal_append(&j, TW_JOURNAL_EV, pls + (i & 1023) * TW_JOURNAL_PAYLOAD, NULL) != 0) {
            fprintf(stderr, "tickwire bench journal: append failed\n");
            tw_journal_close(&j);
            return -1;
        }
    int64_t t1 = tw_clock_now_ns();
    tw_journal_close(&j);
    /* The payloads cycle through 1024 prepared ones: payload(seq) for
     * seq 1..1024, so record seq carries payload(((seq - 1) & 1023) + 1). */
    tw_journal_reader r;
    tw_journal_reader_cfg rc = {.path = jpath};
    if (tw_journal_reader_open(&r, &rc, &err) != 0)
        return -1;
    static tw_journal_rec recs[512];
    uint64_t got = 0;
    int k;
    while ((k = tw_journal_read_burst(&r, recs, 512, &err)) > 0)
        for (int i = 0; i < k; i++, got++)
            if (recs[i].seq != got + 1 ||
                memcmp(recs[i].payload, pls + (got & 1023) * TW_JOURNAL_PAYLOAD, TW_JOURNAL_PAYLOAD)) {
                tw_journal_reader_close(&r);
                fprintf(stderr, "tickwire bench journal: record %llu read back wrong\n",
                        (unsigned long long)got + 1);
                return -1;
            }
    tw_journal_reader_close(&r);
    if (k < 0 || got != n) {
        fprintf(stderr, "tickwire bench journal: %llu of %llu records read back\n",
                (unsigned long long)got, (unsigned long long)n);
        return -1;
    }
    return (double)(t1 - t0) / (double)n;
}

/* The floors: bare 80-byte pwrites (what 0), copies into a shared mapping
 * (1), pwrites each followed by fdatasync (2) or every 64th (3).  ns per
 * record. */
static double run_floor(int what, uint64_t n)
{
    unlink(jpath);
    int fd = open(jpath, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    uint8_t rec[TW_JOURNAL_REC_BYTES];
    memset(rec, 0x5a, sizeof(rec));
    int64_t t0 = 0, t1 = 0;
    if (what == 1) { /* copy into a mapping */
        size_t bytes = (size_t)n * sizeof(rec);
        if (posix_fallocate(fd, 0, (off_t)bytes) != 0 && ftruncate(fd, (off_t)bytes) != 0) {
            close(fd);
            return -1;
        }
        uint8_t *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            return -1;
        }
#ifdef MADV_POPULATE_WRITE
        (void)madvise(m, bytes, MADV_POPULATE_WRITE); /* faulted in ahead, as the journal's */
#endif
        t0 = tw_clock_now_ns();
        for (uint64_t i = 0; i < n; i++) {
            rec[0] = (uint8_t)i;
            memcpy(m + i * sizeof(rec), rec, sizeof(rec));
        }
        t1 = tw_clock_now_ns();
        int ok = m[(n - 1) * sizeof(rec)] == (uint8_t)(n - 1);
        munmap(m, bytes);
        close(fd);
        return ok ? (double)(t1 - t0) / (double)n : -1;
    }
    t0 = tw_clock_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        if (pwrite(fd, rec, sizeof(rec), (off_t)(i * sizeof(rec))) != (ssize_t)sizeof(rec) ||
            ((what == 2 || (what == 3 && i % 64 == 63)) && fdatasync(fd) != 0)) {
            close(fd);
            return -1;
        }
    }
    t1 = tw_clock_now_ns();
    close(fd);
    return (double)(t1 - t0) / (double)n;
}

/* Replay: records per second through a reader, through the writer's open,
 * and a bare read of the same bytes (records' worth per second). */
static int run_replay(uint64_t n, double *rd, double *wo, double *raw)
{
    int64_t t0, t1;
    tw_journal_reader r;
    tw_error err = {0};
    tw_journal_reader_cfg cfg = {.path = jpath, .buf_records = 1024};
    if (tw_journal_reader_open(&r, &cfg, &err) != 0)
        return -1;
    static tw_journal_rec recs[512];
    uint64_t cnt = 0, sum = 0;
    int k;
    t0 = tw_clock_now_ns();
    while ((k = tw_journal_read_burst(&r, recs, 512, &err)) > 0) {
        cnt += (uint64_t)k;
        sum += recs[k - 1].seq;
    }
    t1 = tw_clock_now_ns();
    tw_journal_reader_close(&r);
    if (k < 0 || cnt != n || sum == 0)
        return -1;
    *rd = (double)n / ((double)(t1 - t0) * 1e-9);

    tw_journal j;
    tw_journal_cfg wc = {.path = jpath};
    t0 = tw_clock_now_ns();
    if (tw_journal_open(&j, &wc, &err) != 0)
        return -1;
    t1 = tw_clock_now_ns();
    uint64_t recs_open = j.records;
    tw_journal_close(&j);
    if (recs_open != n)
        return -1;
    *wo = (double)n / ((double)(t1 - t0) * 1e-9);

    int fd = open(jpath, O_RDONLY);
    if (fd < 0)
        return -1;
    static uint8_t buf[1 << 16];
    uint64_t total = 0, x = 0;
    ssize_t m;
    t0 = tw_clock_now_ns();
    while ((m = pread(fd, buf, sizeof(buf), (off_t)total)) > 0) {
        total += (uint64_t)m;
        x += buf[0];
    }
    t1 = tw_clock_now_ns();
    close(fd);
    if (total != TW_JOURNAL_HDR_BYTES + n * TW_JOURNAL_REC_BYTES || x == UINT64_MAX)
        return -1;
    *raw = (double)n / ((double)(t1 - t0) * 1e-9);
    return 0;
}

/* What a forked strategy reports through shared memory. */
typedef struct attach_report {
    uint64_t replayed; /* records taken up to resume_end */
    int64_t replay_ns; /* connect -> the last of them */
    int done;          /* release-stored last */
    int failed;
} attach_report;

/* The forked strategy: attaches, replays to resume_end, reports, then
 * keeps polling (beating) until it is killed. */
static void attach_child(const char *sock, attach_report *rep)
{
    tw_attach_st s;
    tw_error err = {0};
    int rc;
    while ((rc = tw_attach_st_connect(&s, sock, 60000, &err)) == -ECONNREFUSED)
        sched_yield();
    if (rc != 0) {
        rep->failed = 1;
        __atomic_store_n(&rep->done, 1, __ATOMIC_RELEASE);
        _exit(1);
    }
    int64_t t0 = tw_clock_now_ns();
    static tw_journal_rec recs[512];
    uint64_t got = 0, beat = 0;
    while (s.next_seq < s.resume_end) {
        int k = tw_attach_st_next_burst(&s, recs, 512, &err);
        if (k < 0) {
            rep->failed = 1;
            break;
        }
        got += (uint64_t)k;
    }
    rep->replay_ns = tw_clock_now_ns() - t0;
    rep->replayed = got;
    /* Release pairs with the parent's acquire-load of done. */
    __atomic_store_n(&rep->done, 1, __ATOMIC_RELEASE);
    for (;;) {
        (void)tw_attach_st_next_burst(&s, recs, 512, &err);
        tw_attach_st_beat(&s, ++beat);
        sched_yield();
    }
}

/* One control + core step of the gateway; the event. */
static int gw_step(tw_attach_gw *g)
{
    tw_error err = {0};
    int ev = tw_attach_gw_poll(g, tw_clock_now_ns(), &err);
    (void)tw_attach_gw_core_sync(g, 0);
    return ev;
}

static int gw_until(tw_attach_gw *g, int want)
{
    for (long i = 0; i < 100000000; i++) {
        int ev = gw_step(g);
        if (ev < 0)
            return -1;
        if (ev == want)
            return 0;
        sched_yield();
    }
    return -1;
}

/* Over the replay journal at jpath (n records): a strategy attaches and
 * replays, is killed, and the next attaches.  Figures in ns (replay in
 * records/s), or -1 after saying what failed. */
static int run_attach(uint64_t n, double *replay, double *detect, double *reset, double *attach,
                      double *floor_kill, double *floor_fork)
{
    char sock[3200];
    snprintf(sock, sizeof(sock), "%s/tw-bench-attach.%d", dir, (int)getpid());
    tw_journal j;
    tw_error err = {0};
    tw_journal_cfg jc = {.path = jpath};
    if (tw_journal_open(&j, &jc, &err) != 0 || j.records != n) {
        fprintf(stderr, "tickwire bench journal: attach: %s\n", err.msg);
        return -1;
    }
    tw_attach_gw g;
    tw_attach_gw_cfg gc = {.sock_path = sock, .n_cores = 1, .in_count = 1024, .out_count = 256,
                           .journal = &j};
    if (tw_attach_gw_open(&g, &gc, &err) != 0) {
        fprintf(stderr, "tickwire bench journal: attach: %s\n", err.msg);
        tw_journal_close(&j);
        return -1;
    }
    attach_report *rep = mmap(NULL, 2 * sizeof(*rep), PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int rc = -1;
    pid_t kids[2] = {-1, -1};
    if (rep == MAP_FAILED)
        goto out;
    memset(rep, 0, 2 * sizeof(*rep));
    for (int k = 0; k < 2; k++) {
        int64_t t0 = tw_clock_now_ns();
        kids[k] = fork();
        if (kids[k] == 0)
            attach_child(sock, &rep[k]);
        if (kids[k] < 0 || gw_until(&g, TW_ATTACH_EV_ATTACHED) != 0)
            goto out;
        if (k == 1)
            *attach = (double)(tw_clock_now_ns() - t0);
        /* Acquire pairs with the child's release-store of done. */
        while (!__atomic_load_n(&rep[k].done, __ATOMIC_ACQUIRE)) {
            (void)gw_step(&g);
            sched_yield();
        }
        if (rep[k].failed || rep[k].replayed != n) {
            fprintf(stderr, "tickwire bench journal: attach: the strategy replayed %llu of %llu\n",
                    (unsigned long long)rep[k].replayed, (unsigned long long)n);
            goto out;
        }
        if (k == 0) {
            *replay = (double)n / ((double)rep[0].replay_ns * 1e-9);
            int64_t t1 = tw_clock_now_ns();
            kill(kids[0], SIGKILL);
            if (gw_until(&g, TW_ATTACH_EV_DETACHED) != 0)
                goto out;
            int64_t t2 = tw_clock_now_ns();
            if (gw_until(&g, TW_ATTACH_EV_WAITING) != 0)
                goto out;
            int64_t t3 = tw_clock_now_ns();
            waitpid(kids[0], NULL, 0);
            kids[0] = -1;
            *detect = (double)(t2 - t1);
            *reset = (double)(t3 - t2);
        }
    }
    /* The floors: kill -> reaped, and fork -> a child's exit reaped. */
    pid_t p = fork();
    if (p == 0)
        for (;;)
            pause();
    int64_t t0 = tw_clock_now_ns();
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    int64_t t1 = tw_clock_now_ns();
    p = fork();
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0);
    int64_t t2 = tw_clock_now_ns();
    *floor_kill = (double)(t1 - t0);
    *floor_fork = (double)(t2 - t1);
    rc = 0;
out:
    for (int k = 0; k < 2; k++)
        if (kids[k] > 0) {
            kill(kids[k], SIGKILL);
            waitpid(kids[k], NULL, 0);
        }
    if (rep != MAP_FAILED)
        munmap(rep, 2 * sizeof(*rep));
    tw_attach_gw_close(&g);
    tw_journal_close(&j);
    if (rc != 0)
        fprintf(stderr, "tickwire bench journal: the attach run failed\n");
    return rc;
}

static const char *fs_name(const char *d)
{
    struct statfs s;
    if (statfs(d, &s) != 0)
        return "?";
    switch ((unsigned long)s.f_type) {
    case 0xEF53: return "ext2/3/4";
    case 0x01021994: return "tmpfs (fsync is a no-op)";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x794c7630: return "overlayfs";
    default: return "other";
    }
}

int tw__cli_bench_journal(int argc, char **argv)
{
    uint64_t reps = 5;
    int quick = 0;
    snprintf(dir, sizeof(dir), "/tmp");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
            continue;
        }
        const char *opt, *val;
        int r = tw__cli_opt_value("bench journal", usage, argc, argv, &i, &opt, &val);
        if (r)
            return r > 0 ? 0 : 2;
        if (!strcmp(opt, "--reps")) {
            if (tw__cli_u64_range("bench journal", opt, val, 1, 101, &reps))
                return 2;
        } else if (!strcmp(opt, "--dir")) {
            snprintf(dir, sizeof(dir), "%s", val);
        } else {
            fprintf(stderr, "tickwire bench journal: unknown option '%s' (see --help)\n", opt);
            return 2;
        }
    }
    snprintf(jpath, sizeof(jpath), "%s/tw-bench-journal.%d", dir, (int)getpid());
    uint8_t *pls = malloc(1024 * TW_JOURNAL_PAYLOAD);
    if (!pls)
        return 1;
    for (uint64_t s = 1; s <= 1024; s++)
        payload(s, pls + (s - 1) * TW_JOURNAL_PAYLOAD);

    /* The rows: mode x policy, each with its floor. */
    struct row {
        const char *name;
        int mapped;
        tw_journal_fsync pol;
        uint32_t every;
        uint64_t n;
        int floor; /* run_floor's what */
        const char *floor_name;
        double t[101], f[101];
    };
    static struct row rows[] = {
        {.name = "pwrite, fsync none", .mapped = 0, .pol = TW_JOURNAL_FSYNC_NONE, .every = 0, .n = 200000, .floor = 0,
         .floor_name = "pwrite 80 B"},
        {.name = "pwrite, fdatasync every 64", .mapped = 0, .pol = TW_JOURNAL_FSYNC_EVERY_N, .every = 64, .n = 50000, .floor = 3,
         .floor_name = "pwrite, fdatasync/64"},
        {.name = "pwrite, fdatasync every record", .mapped = 0, .pol = TW_JOURNAL_FSYNC_EVERY, .every = 0, .n = 1000, .floor = 2,
         .floor_name = "pwrite+fdatasync"},
        {.name = "mmap, fsync none", .mapped = 1, .pol = TW_JOURNAL_FSYNC_NONE, .every = 0, .n = 1000000, .floor = 1,
         .floor_name = "copy 80 B to a mapping"},
        {.name = "mmap, msync every 64", .mapped = 1, .pol = TW_JOURNAL_FSYNC_EVERY_N, .every = 64, .n = 50000, .floor = 3,
         .floor_name = "pwrite, fdatasync/64"},
        {.name = "mmap, msync every record", .mapped = 1, .pol = TW_JOURNAL_FSYNC_EVERY, .every = 0, .n = 1000, .floor = 2,
         .floor_name = "pwrite+fdatasync"},
    };
    const size_t nrows = sizeof(rows) / sizeof(rows[0]);
    uint64_t replay_n = quick ? 20000 : 1000000;
    static double rd[101], wo[101], raw[101];
    static double a_rep[101], a_det[101], a_res[101], a_att[101], a_fk[101], a_ff[101];
    for (uint64_t r = 0; r < reps; r++) {
        for (size_t i = 0; i < nrows; i++) {
            uint64_t n = quick ? rows[i].n / 100 + 10 : rows[i].n;
            rows[i].t[r] = run_append(rows[i].mapped, rows[i].pol, rows[i].every, n, pls);
            rows[i].f[r] = run_floor(rows[i].floor, n);
            if (rows[i].t[r] < 0 || rows[i].f[r] < 0) {
                fprintf(stderr, "tickwire bench journal: run '%s' failed its checks\n", rows[i].name);
                unlink(jpath);
                return 1;
            }
        }
        /* The replay journal: written, checked, then read three ways. */
        if (run_append(1, TW_JOURNAL_FSYNC_NONE, 0, replay_n, pls) < 0 ||
            run_replay(replay_n, &rd[r], &wo[r], &raw[r]) != 0) {
            fprintf(stderr, "tickwire bench journal: the replay run failed its checks\n");
            unlink(jpath);
            return 1;
        }
        if (run_attach(replay_n, &a_rep[r], &a_det[r], &a_res[r], &a_att[r], &a_fk[r], &a_ff[r]) != 0) {
            unlink(jpath);
            return 1;
        }
    }
    unlink(jpath);
    free(pls);

    printf("tickwire bench journal: %s in %s (%s); median of %llu interleaved runs%s\n", "journal",
           dir, fs_name(dir), (unsigned long long)reps, quick ? " (--quick: figures not meaningful)" : "");
    printf("CPU ISA: %s (the journal is scalar code and the SSE4.2 crc32 instruction)\n",
           tw_isa_name(tw_isa_best()));
    printf("checked first: every run's journal reads back whole (count, seq, payload of every "
           "record)\n\n");
    printf("| append (80-byte record)          | ns/append | floor                  | floor ns | ratio |\n");
    printf("|----------------------------------|----------:|------------------------|---------:|------:|\n");
    double mmap_none = 0;
    for (size_t i = 0; i < nrows; i++) {
        double t = tw__median_f64(rows[i].t, (size_t)reps), f = tw__median_f64(rows[i].f, (size_t)reps);
        if (i == 3)
            mmap_none = t;
        printf("| %-32s | %9.1f | %-22s | %8.1f | %5.2f |\n", rows[i].name, t, rows[i].floor_name,
               f, t / f);
    }
    double r_rd = tw__median_f64(rd, (size_t)reps), r_wo = tw__median_f64(wo, (size_t)reps), r_raw = tw__median_f64(raw, (size_t)reps);
    printf("\n| replay (%llu records)            | records/s | bare read records/s | ratio |\n",
           (unsigned long long)replay_n);
    printf("|----------------------------------|----------:|--------------------:|------:|\n");
    printf("| reader (every record checked)    | %8.2fM | %18.2fM | %5.2f |\n", r_rd / 1e6,
           r_raw / 1e6, r_rd / r_raw);
    printf("| writer's open (the same checks)  | %8.2fM | %18.2fM | %5.2f |\n", r_wo / 1e6,
           r_raw / 1e6, r_wo / r_raw);
    double m_rep = tw__median_f64(a_rep, (size_t)reps), m_det = tw__median_f64(a_det, (size_t)reps);
    double m_res = tw__median_f64(a_res, (size_t)reps), m_att = tw__median_f64(a_att, (size_t)reps);
    double m_fk = tw__median_f64(a_fk, (size_t)reps), m_ff = tw__median_f64(a_ff, (size_t)reps);
    printf("\n| attach (strategy process, 1 core)           | figure      | comparison                      |\n");
    printf("|---------------------------------------------|-------------|---------------------------------|\n");
    printf("| replay through tw_attach_st_next_burst      | %8.2fM/s | bare reader %6.2fM/s (%.2fx)   |\n",
           m_rep / 1e6, r_rd / 1e6, m_rep / r_rd);
    printf("| kill -9 -> gateway sees it gone (pidfd)     | %8.1f us | kill -> waitpid %8.1f us      |\n",
           m_det / 1e3, m_fk / 1e3);
    printf("| gone -> rings reset, waiting                | %8.1f us |                                 |\n",
           m_res / 1e3);
    printf("| new strategy: fork -> attached (handshake)  | %8.1f us | fork -> exit reaped %8.1f us  |\n",
           m_att / 1e3, m_ff / 1e3);
    printf("\ngoal: mmap append, fsync none <= 100 ns (no system call per event): %.1f ns -> %s\n",
           mmap_none, mmap_none <= 100 ? "met" : "NOT met");
    printf("goal: replay >= 10 M records/s (a 150,000-bar day plus its fills in < 20 ms): %.1f M/s "
           "-> %s\n",
           r_rd / 1e6, r_rd >= 10e6 ? "met" : "NOT met");
    printf("goal: kill -9 of the strategy detected within 10 ms: %.1f us -> %s\n", m_det / 1e3,
           m_det <= 10e6 ? "met" : "NOT met");
    return 0;
}
