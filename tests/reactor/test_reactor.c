/* Reactor: configuration errors, pinning / SCHED_FIFO / mlockall errors
 * (in child processes without the privileges), the quit flag (from a poll,
 * from another thread, from a signal handler), periodic work, the YIELD
 * mode (sched_yield, waits on an fd, bounded by a poll's wake_ns), AUTO,
 * ring sources with back-pressure, and BUSY mode running under a seccomp
 * filter (any system call on the loop would kill it).
 *
 * Never timing-dependent: every wait is "until a condition holds" (a hang
 * is a ctest timeout, i.e. a failure), and timer checks are bounds that
 * hold however the threads are scheduled. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "tickwire/reactor.h"
#include "tw_check.h"

#if defined(TW_TEST_TSAN) || defined(TW_TEST_ASAN)
#define TW_TEST_SAN 1
#endif

static uint64_t load(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static void bump(uint64_t *p) { __atomic_fetch_add(p, 1, __ATOMIC_RELAXED); }

/* Sleeps a little between looks at a condition (the reactor threads need
 * the CPU on a 2-core machine). */
static void nap(void) { tw_clock_sleep_ns(200000); }

static const tw_reactor_opts yield_opts = {.mode = TW_REACTOR_YIELD};

/* ---- A poll that counts turns and stops the reactor after `stop_at`. */
typedef struct counter {
    tw_reactor *r;
    uint64_t turns;   /* atomic: main reads it */
    uint64_t stop_at; /* 0: never */
    int cpu_seen;
    int policy_seen;
} counter;

static unsigned count_poll(void *arg, tw_reactor_now *now)
{
    counter *c = arg;
    (void)now;
    uint64_t t = __atomic_add_fetch(&c->turns, 1, __ATOMIC_RELAXED);
    c->cpu_seen = sched_getcpu();
    c->policy_seen = sched_getscheduler(0);
    if (c->stop_at && t >= c->stop_at)
        tw_reactor_stop(c->r);
    return 0;
}

static void nop_timer(void *arg, tw_reactor_now *now) { (void)arg, (void)now; }
static uint32_t nop_ring(void *arg, const void *items, uint32_t n, tw_reactor_now *now)
{
    (void)arg, (void)items, (void)now;
    return n;
}

static void test_config_errors(void)
{
    tw_reactor r;
    tw_reactor_init(&r, &yield_opts);
    tw_error err = {0};
    CHECK_EQ(tw_reactor_start(&r, &err), -EINVAL);
    CHECK(strstr(err.msg, "no cores") != NULL);
    CHECK_EQ(tw_reactor_add_core(&r, -2), -EINVAL);
    for (int i = 0; i < TW_REACTOR_MAX_CORES; i++)
        CHECK_EQ(tw_reactor_add_core(&r, -1), i);
    CHECK_EQ(tw_reactor_add_core(&r, -1), -ENOSPC);
    counter c = {.r = &r};
    CHECK_EQ(tw_reactor_add_poll(&r, TW_REACTOR_MAX_CORES, count_poll, &c), -EINVAL);
    CHECK_EQ(tw_reactor_add_poll(&r, 0, NULL, &c), -EINVAL);
    for (int i = 0; i < TW_REACTOR_MAX_POLLS; i++)
        CHECK_EQ(tw_reactor_add_poll(&r, 0, count_poll, &c), 0);
    CHECK_EQ(tw_reactor_add_poll(&r, 0, count_poll, &c), -ENOSPC);
    CHECK_EQ(tw_reactor_add_timer(&r, 1, 999, nop_timer, &c), -EINVAL);
    CHECK_EQ(tw_reactor_add_timer(&r, 1, 1000, NULL, &c), -EINVAL);
    for (int i = 0; i < TW_REACTOR_MAX_TIMERS; i++)
        CHECK_EQ(tw_reactor_add_timer(&r, 1, 1000, nop_timer, &c), 0);
    CHECK_EQ(tw_reactor_add_timer(&r, 1, 1000, nop_timer, &c), -ENOSPC);
    CHECK_EQ(tw_reactor_add_fd(&r, 1, -1), -EINVAL);
    for (int i = 0; i < TW_REACTOR_MAX_FDS; i++)
        CHECK_EQ(tw_reactor_add_fd(&r, 1, 0), 0);
    CHECK_EQ(tw_reactor_add_fd(&r, 1, 0), -ENOSPC);
    /* A copied burst must fit the stack burst. */
    size_t len = tw_ring_memsize(4, 8192);
    void *m = NULL;
    REQUIRE(posix_memalign(&m, 64, len) == 0);
    REQUIRE(tw_ring_init(m, 4, 8192) == 0);
    CHECK_EQ(tw_reactor_add_ring(&r, 2, m, nop_ring, NULL, TW_REACTOR_RING_COPY), -EINVAL);
    CHECK_EQ(tw_reactor_add_ring(&r, 2, m, nop_ring, NULL, 0), 0);
    CHECK_EQ(tw_reactor_add_ring(&r, 2, m, nop_ring, NULL, 0x80), -EINVAL);
    CHECK_EQ(tw_reactor_add_ring(&r, 2, NULL, nop_ring, NULL, 0), -EINVAL);
    free(m);
    tw_reactor_run(&r, 99, &err);
    CHECK(strstr(err.msg, "no core 99") != NULL);
}

/* A CPU number that is not online, and the first CPU we may use. */
static int first_offline_cpu(void)
{
    /* One past the CPUs the kernel configured: never online. */
    long conf = sysconf(_SC_NPROCESSORS_CONF);
    return conf > 0 && conf < CPU_SETSIZE ? (int)conf : -1;
}

static int first_usable_cpu(void)
{
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof(s), &s) != 0)
        return -1;
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &s))
            return i;
    return -1;
}

static void test_pin_errors(void)
{
    tw_error err = {0};
    /* Out of range. */
    CHECK_EQ(tw_reactor_pin_self(CPU_SETSIZE, &err), -EINVAL);
    CHECKF(strstr(err.msg, "no such CPU (CPU numbers run 0.."), "%s", err.msg);
    /* Not online: core 1 fails, so core 0 must never run its loop. */
    int off = first_offline_cpu();
    if (off >= 0) {
        tw_reactor r;
        tw_reactor_init(&r, &yield_opts);
        counter c0 = {.r = &r};
        int ok = first_usable_cpu();
        CHECK_EQ(tw_reactor_add_core(&r, ok), 0);
        CHECK_EQ(tw_reactor_add_core(&r, off), 1);
        CHECK_EQ(tw_reactor_add_poll(&r, 0, count_poll, &c0), 0);
        CHECK_EQ(tw_reactor_start(&r, &err), -EINVAL);
        CHECKF(strstr(err.msg, "reactor core 1: pin to CPU") &&
                   strstr(err.msg, "no such CPU online (online: "),
               "%s", err.msg);
        CHECK_EQ(load(&c0.turns), 0);
        CHECK_EQ(r.core[0].stats.turns, 0);
    }
    /* A good pin: the poll runs on that CPU. */
    int cpu = first_usable_cpu();
    REQUIRE(cpu >= 0);
    tw_reactor r;
    tw_reactor_init(&r, &yield_opts);
    counter c = {.r = &r, .stop_at = 3, .cpu_seen = -1};
    CHECK_EQ(tw_reactor_add_core(&r, cpu), 0);
    CHECK_EQ(tw_reactor_add_poll(&r, 0, count_poll, &c), 0);
    REQUIRE(tw_reactor_start(&r, &err) == 0);
    tw_reactor_join(&r);
    CHECK_EQ(c.cpu_seen, cpu);
    CHECK(c.turns >= 3);
}

/* Runs fn in a child process that has dropped every privilege it can
 * (RLIMIT_RTPRIO and RLIMIT_MEMLOCK as given, then uid nobody when root),
 * fn writes what it got into msg; returns its code. */
static int unprivileged(int (*fn)(tw_error *), rlim_t memlock, char *msg, size_t cap)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        return -999;
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        struct rlimit zero = {0, 0}, ml = {memlock, memlock};
        int ok = setrlimit(RLIMIT_RTPRIO, &zero) == 0 && setrlimit(RLIMIT_MEMLOCK, &ml) == 0;
        if (ok && geteuid() == 0)
            ok = setgid(65534) == 0 && setuid(65534) == 0;
        tw_error e = {0};
        int rc = ok ? fn(&e) : -998;
        if (write(pfd[1], &rc, sizeof(rc)) != sizeof(rc) ||
            write(pfd[1], e.msg, sizeof(e.msg)) != sizeof(e.msg))
            _exit(3);
        _exit(0);
    }
    close(pfd[1]);
    int rc = -997;
    char buf[sizeof(((tw_error *)0)->msg)] = "";
    if (read(pfd[0], &rc, sizeof(rc)) != sizeof(rc) || read(pfd[0], buf, sizeof(buf)) <= 0)
        rc = -996;
    buf[sizeof(buf) - 1] = 0;
    snprintf(msg, cap, "%s", buf);
    close(pfd[0]);
    int st;
    waitpid(pid, &st, 0);
    return rc;
}

static int fifo_via_reactor(tw_error *err)
{
    tw_reactor r;
    tw_reactor_opts o = {.mode = TW_REACTOR_YIELD, .sched_fifo_prio = 10};
    tw_reactor_init(&r, &o);
    counter c = {.r = &r};
    tw_reactor_add_core(&r, -1);
    tw_reactor_add_poll(&r, 0, count_poll, &c);
    int rc = tw_reactor_start(&r, err);
    if (rc == 0) {
        tw_reactor_stop(&r);
        tw_reactor_join(&r);
    }
    return rc;
}

#ifndef TW_TEST_SAN
static int lock_via_reactor(tw_error *err)
{
    tw_reactor r;
    tw_reactor_opts o = {.mode = TW_REACTOR_YIELD, .lock_memory = 1};
    tw_reactor_init(&r, &o);
    tw_reactor_add_core(&r, -1);
    return tw_reactor_start(&r, err);
}
#endif

static void test_privilege_errors(void)
{
    char msg[256];
    int rc = unprivileged(fifo_via_reactor, 0, msg, sizeof(msg));
    CHECKF(rc == -EPERM, "fifo: %d %s", rc, msg);
    CHECKF(strstr(msg, "reactor core 0: SCHED_FIFO priority 10: not permitted") &&
               strstr(msg, "RLIMIT_RTPRIO is 0"),
           "%s", msg);
#ifdef TW_TEST_SAN
    /* The sanitizers intercept mlockall and make it a no-op that succeeds
     * (their shadow memory cannot be locked): nothing to test here. */
    printf("sanitizer build: mlockall is a no-op, its error paths not run\n");
#else
    rc = unprivileged(lock_via_reactor, 0, msg, sizeof(msg));
    CHECKF(rc == -EPERM, "mlockall, limit 0: %d %s", rc, msg);
    CHECKF(strstr(msg, "mlockall(MCL_CURRENT | MCL_FUTURE): not permitted: no CAP_IPC_LOCK") &&
               strstr(msg, "RLIMIT_MEMLOCK is 0 bytes"),
           "%s", msg);
    rc = unprivileged(lock_via_reactor, 65536, msg, sizeof(msg));
    CHECKF(rc == -ENOMEM, "mlockall, limit 64 KiB: %d %s", rc, msg);
    CHECKF(strstr(msg, "more than RLIMIT_MEMLOCK (65536 bytes) and it has no CAP_IPC_LOCK"), "%s",
           msg);
#endif
    CHECK_EQ(tw_reactor_fifo_self(0, NULL), -EINVAL);
    CHECK_EQ(tw_reactor_fifo_self(100, NULL), -EINVAL);
}

/* SCHED_FIFO where we may (root): the loop's thread is FIFO.  One turn
 * only: a real-time loop on a shared 2-core machine must not linger. */
static void test_fifo_ok(void)
{
    tw_reactor r;
    tw_reactor_opts o = {.mode = TW_REACTOR_YIELD, .sched_fifo_prio = 1};
    tw_reactor_init(&r, &o);
    counter c = {.r = &r, .stop_at = 1, .policy_seen = -1};
    tw_reactor_add_core(&r, -1);
    tw_reactor_add_poll(&r, 0, count_poll, &c);
    tw_error err = {0};
    int rc = tw_reactor_start(&r, &err);
    if (rc == -EPERM) {
        printf("SCHED_FIFO not permitted here, its success path not run: %s\n", err.msg);
        return;
    }
    REQUIRE(rc == 0);
    tw_reactor_join(&r);
    CHECK_EQ(c.policy_seen, SCHED_FIFO);
    CHECK_EQ(r.core[0].fifo, 1);
}

/* ---- BUSY mode makes no system call: under a seccomp filter that lets
 * only exit through and kills the process on anything else.  (Strict mode
 * would do, but it also disables rdtsc.) */
static int forbid_syscalls(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_exit, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog prog = {.len = (unsigned short)TW_ARRAY_SIZE(f), .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0 ? 0 : -1;
}
typedef struct busy_state {
    tw_reactor *r;
    uint64_t turns, timer_runs, items;
    tw_ring *ring;
} busy_state;

static unsigned busy_poll(void *arg, tw_reactor_now *now)
{
    busy_state *b = arg;
    if (++b->turns >= 200000)
        tw_reactor_stop(b->r);
    /* Keep the ring source fed (this is the ring's producer). */
    uint64_t v[2] = {b->turns, now->tsc};
    (void)tw_ring_enqueue_burst_sp(b->ring, v, 1);
    return 0; /* idle as far as the loop knows: BUSY pauses */
}

static void busy_timer(void *arg, tw_reactor_now *now)
{
    (void)now;
    ((busy_state *)arg)->timer_runs++;
}

static uint32_t busy_ring(void *arg, const void *items, uint32_t n, tw_reactor_now *now)
{
    (void)items, (void)now;
    ((busy_state *)arg)->items += n;
    return n;
}

static void test_busy_no_syscalls(void)
{
#ifdef TW_TEST_TSAN
    /* TSan's runtime makes system calls of its own (shadow memory). */
    printf("TSan build: the no-system-call check of BUSY mode not run\n");
    return;
#endif
    size_t len = tw_ring_memsize(64, 16);
    void *m = NULL;
    REQUIRE(posix_memalign(&m, 64, len) == 0);
    REQUIRE(tw_ring_init(m, 64, 16) == 0);
    tw_reactor r;
    tw_reactor_opts o = {.mode = TW_REACTOR_BUSY};
    tw_reactor_init(&r, &o);
    busy_state b = {.r = &r, .ring = m};
    tw_reactor_add_core(&r, -1);
    tw_reactor_add_poll(&r, 0, busy_poll, &b);
    tw_reactor_add_ring(&r, 0, m, busy_ring, &b, 0);
    tw_reactor_add_timer(&r, 0, 1000, busy_timer, &b);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    tw_reactor_add_fd(&r, 0, fds[0]); /* BUSY never waits on it */
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        if (forbid_syscalls() != 0)
            syscall(SYS_exit, 5);
        int rc = tw_reactor_run(&r, 0, NULL);
        /* exit_group is not allowed by the filter: the thread's exit. */
        syscall(SYS_exit, rc == 0 && b.turns >= 200000 && b.timer_runs > 0 && b.items > 0 &&
                                  r.core[0].stats.yields == 0 && r.core[0].stats.waits == 0
                              ? 0
                              : 6);
    }
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "busy loop under seccomp: status 0x%x (signal %d: it made a system call)", st,
           WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    close(fds[0]);
    close(fds[1]);
    free(m);
}

/* ---- The quit flag. */
static tw_reactor *g_sig_reactor;
static void on_usr1(int sig)
{
    (void)sig;
    tw_reactor_stop(g_sig_reactor);
}

typedef struct run_arg {
    tw_reactor *r;
    int rc;
} run_arg;

static void *run_thread(void *p)
{
    run_arg *a = p;
    a->rc = tw_reactor_run(a->r, 0, NULL);
    return NULL;
}

static void test_quit(void)
{
    /* From another thread, two cores. */
    tw_reactor r;
    tw_reactor_init(&r, &yield_opts);
    counter c0 = {.r = &r}, c1 = {.r = &r};
    tw_reactor_add_core(&r, -1);
    tw_reactor_add_core(&r, -1);
    tw_reactor_add_poll(&r, 0, count_poll, &c0);
    tw_reactor_add_poll(&r, 1, count_poll, &c1);
    REQUIRE(tw_reactor_start(&r, NULL) == 0);
    while (load(&c0.turns) < 100 || load(&c1.turns) < 100)
        nap();
    tw_reactor_stop(&r);
    CHECK(tw_reactor_stopping(&r));
    tw_reactor_join(&r);
    uint64_t t0 = c0.turns, t1 = c1.turns;
    CHECK_EQ(r.core[0].stats.turns, t0);
    CHECK_EQ(r.core[1].stats.turns, t1);
    CHECK_EQ(r.core[0].stats.busy_turns, 0);
    /* From a poll: exactly the turn that asked is the last one. */
    tw_reactor_init(&r, &yield_opts);
    counter c = {.r = &r, .stop_at = 500};
    tw_reactor_add_core(&r, -1);
    tw_reactor_add_poll(&r, 0, count_poll, &c);
    REQUIRE(tw_reactor_start(&r, NULL) == 0);
    tw_reactor_join(&r);
    CHECK_EQ(c.turns, 500);
    CHECK_EQ(r.core[0].stats.turns, 500);
    /* From a signal handler, with the core on a thread of ours. */
    tw_reactor_init(&r, &yield_opts);
    counter cs = {.r = &r};
    tw_reactor_add_core(&r, -1);
    tw_reactor_add_poll(&r, 0, count_poll, &cs);
    g_sig_reactor = &r;
    struct sigaction sa = {.sa_handler = on_usr1};
    sigemptyset(&sa.sa_mask);
    REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
    run_arg ra = {.r = &r, .rc = -1};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, run_thread, &ra) == 0);
    while (load(&cs.turns) < 100)
        nap();
    pthread_kill(th, SIGUSR1);
    pthread_join(th, NULL);
    CHECK_EQ(ra.rc, 0);
    CHECK(tw_reactor_stopping(&r));
    signal(SIGUSR1, SIG_DFL);
}

/* ---- Periodic work. */
enum { MAX_RUNS = 64 };
typedef struct timer_log {
    tw_reactor *r;
    const tw_tsc_clock *clock;
    uint64_t at[MAX_RUNS];
    uint64_t runs; /* atomic: main reads it */
    int ns_ok;
    uint64_t stall_ticks; /* stall the loop this long after run 2 */
    int stalled;
} timer_log;

static void log_timer(void *arg, tw_reactor_now *now)
{
    timer_log *l = arg;
    uint64_t k = load(&l->runs);
    if (k < MAX_RUNS)
        l->at[k] = now->tsc;
    if (now->ns != tw_tsc_to_ns(l->clock, now->tsc))
        l->ns_ok = 0;
    bump(&l->runs);
    if (l->stall_ticks && k == 1 && !l->stalled) {
        /* The loop is stuck for five periods (in this timer's call). */
        uint64_t until = tw_tsc_read() + l->stall_ticks;
        while (tw_tsc_read() < until)
            ;
        l->stalled = 1;
    }
}

static void test_timers(void)
{
    tw_reactor r;
    tw_reactor_init(&r, &yield_opts);
    timer_log a = {.r = &r, .clock = r.clock, .ns_ok = 1};
    timer_log b = {.r = &r, .clock = r.clock, .ns_ok = 1};
    tw_reactor_add_core(&r, -1);
    counter c = {.r = &r};
    tw_reactor_add_poll(&r, 0, count_poll, &c);
    CHECK_EQ(tw_reactor_add_timer(&r, 0, 2000000, log_timer, &a), 0);
    CHECK_EQ(tw_reactor_add_timer(&r, 0, 500000, log_timer, &b), 0);
    uint64_t pa = r.core[0].timer[0].period_tsc, pb = r.core[0].timer[1].period_tsc;
    b.stall_ticks = 5 * pb;
    uint64_t t0 = tw_tsc_read(); /* before the timers are armed */
    REQUIRE(tw_reactor_start(&r, NULL) == 0);
    while (load(&a.runs) < 6 || load(&b.runs) < 12)
        nap();
    tw_reactor_stop(&r);
    tw_reactor_join(&r);
    CHECK(a.ns_ok && b.ns_ok);
    CHECK_EQ(r.core[0].stats.timer_runs, a.runs + b.runs);
    /* Run k (from 1) happens no earlier than k periods after arming:
     * never more runs than deadlines passed, however late the turns. */
    for (uint64_t k = 1; k <= a.runs && k <= MAX_RUNS; k++)
        CHECKF(a.at[k - 1] >= t0 + k * pa, "2 ms timer run %llu early", (unsigned long long)k);
    /* b stalled for five periods inside its run 2; no catch-up burst
     * afterwards: run 3 comes at once (it is late), run 4 a whole period
     * after run 3. */
    REQUIRE(b.runs >= 4);
    CHECK(b.stalled);
    CHECKF(b.at[3] - b.at[2] >= pb, "after a stall, runs 3 and 4 were %llu ticks apart (< %llu)",
           (unsigned long long)(b.at[3] - b.at[2]), (unsigned long long)pb);
    CHECK(b.at[2] - b.at[1] >= 5 * pb);
}

/* ---- YIELD mode. */
typedef struct idle_poll {
    tw_reactor *r;
    uint64_t idle_turns; /* atomic */
    uint64_t stop_at;
    int fd;
    uint64_t bytes; /* atomic */
    uint64_t stop_bytes;
    int64_t lower_wake_ns; /* > 0: lower now->wake_ns to now + this */
} idle_poll;

static unsigned idle_poll_fn(void *arg, tw_reactor_now *now)
{
    idle_poll *p = arg;
    if (p->lower_wake_ns > 0 && now->ns + p->lower_wake_ns < now->wake_ns)
        now->wake_ns = now->ns + p->lower_wake_ns;
    if (p->fd >= 0) {
        char buf[16];
        ssize_t n = read(p->fd, buf, sizeof(buf));
        if (n > 0) {
            uint64_t b = __atomic_add_fetch(&p->bytes, (uint64_t)n, __ATOMIC_RELAXED);
            __atomic_store_n(&p->idle_turns, 0, __ATOMIC_RELAXED);
            if (b >= p->stop_bytes)
                tw_reactor_stop(p->r);
            return (unsigned)n;
        }
    }
    uint64_t t = __atomic_add_fetch(&p->idle_turns, 1, __ATOMIC_RELAXED);
    if (p->stop_at && t >= p->stop_at)
        tw_reactor_stop(p->r);
    return 0;
}

static void test_yield(void)
{
    /* No fds: idle turns end in sched_yield, IDLE_SPINS apart. */
    tw_reactor r;
    tw_reactor_init(&r, &yield_opts);
    idle_poll p = {.r = &r, .stop_at = 10 * TW_REACTOR_IDLE_SPINS, .fd = -1};
    tw_reactor_add_core(&r, -1);
    tw_reactor_add_poll(&r, 0, idle_poll_fn, &p);
    REQUIRE(tw_reactor_start(&r, NULL) == 0);
    tw_reactor_join(&r);
    CHECK_EQ(r.core[0].mode, TW_REACTOR_YIELD);
    CHECK_EQ(r.core[0].stats.yields, 10);
    CHECK_EQ(r.core[0].stats.waits, 0);

    /* A pipe: each idle stretch ends in a ppoll that only the byte we
     * write wakes (max_wait is an hour: a missed wake-up hangs). */
    int fds[2];
    REQUIRE(pipe2(fds, O_NONBLOCK) == 0);
    tw_reactor_opts o = {.mode = TW_REACTOR_YIELD, .max_wait_ns = 3600ll * 1000000000ll};
    tw_reactor_init(&r, &o);
    idle_poll q = {.r = &r, .fd = fds[0], .stop_bytes = 3};
    tw_reactor_add_core(&r, -1);
    tw_reactor_add_poll(&r, 0, idle_poll_fn, &q);
    tw_reactor_add_fd(&r, 0, fds[0]);
    REQUIRE(tw_reactor_start(&r, NULL) == 0);
    for (uint64_t i = 1; i <= 3; i++) {
        /* Idle long enough that the next idle turn waits in ppoll. */
        while (load(&q.idle_turns) < TW_REACTOR_IDLE_SPINS - 1)
            nap();
        REQUIRE(write(fds[1], "x", 1) == 1);
        while (load(&q.bytes) < i)
            nap();
    }
    tw_reactor_join(&r);
    CHECK_EQ(q.bytes, 3);
    CHECK(r.core[0].stats.waits >= 3);
    CHECK_EQ(r.core[0].stats.work, 3);

    /* The same hour-long max_wait, but the poll lowers wake_ns to 100 us
     * each turn: waits end on their own and the loop goes on. */
    tw_reactor_init(&r, &o);
    idle_poll w = {.r = &r, .fd = fds[0], .stop_at = 5 * TW_REACTOR_IDLE_SPINS,
                   .lower_wake_ns = 100000, .stop_bytes = 1000};
    tw_reactor_add_core(&r, -1);
    tw_reactor_add_poll(&r, 0, idle_poll_fn, &w);
    tw_reactor_add_fd(&r, 0, fds[0]);
    REQUIRE(tw_reactor_start(&r, NULL) == 0);
    tw_reactor_join(&r);
    CHECK_EQ(r.core[0].stats.waits, 5);
    /* And a timer bounds the wait the same way. */
    tw_reactor_init(&r, &o);
    idle_poll t = {.r = &r, .fd = fds[0], .stop_at = 3 * TW_REACTOR_IDLE_SPINS,
                   .stop_bytes = 1000};
    timer_log tl = {.r = &r, .clock = r.clock, .ns_ok = 1};
    tw_reactor_add_core(&r, -1);
    tw_reactor_add_poll(&r, 0, idle_poll_fn, &t);
    tw_reactor_add_fd(&r, 0, fds[0]);
    tw_reactor_add_timer(&r, 0, 200000, log_timer, &tl);
    REQUIRE(tw_reactor_start(&r, NULL) == 0);
    tw_reactor_join(&r);
    CHECK(r.core[0].stats.waits >= 2);
    close(fds[0]);
    close(fds[1]);
}

static void test_auto(void)
{
    int n = tw_cpus_usable();
    cpu_set_t s;
    REQUIRE(sched_getaffinity(0, sizeof(s), &s) == 0);
    CHECK(n >= 1 && n <= CPU_COUNT(&s));
    CHECK(n <= sysconf(_SC_NPROCESSORS_ONLN));
    CHECK_EQ(tw_reactor_auto_mode(n), TW_REACTOR_BUSY);
    CHECK_EQ(tw_reactor_auto_mode(n + 1), TW_REACTOR_YIELD);
    /* More loops than CPUs under AUTO: every core yields. */
    if (n + 1 > TW_REACTOR_MAX_CORES)
        return;
    tw_reactor r;
    tw_reactor_init(&r, NULL);
    counter c[TW_REACTOR_MAX_CORES];
    for (int i = 0; i <= n; i++) {
        c[i] = (counter){.r = &r, .stop_at = 1};
        tw_reactor_add_core(&r, -1);
        tw_reactor_add_poll(&r, i, count_poll, &c[i]);
    }
    REQUIRE(tw_reactor_start(&r, NULL) == 0);
    tw_reactor_join(&r);
    for (int i = 0; i <= n; i++)
        CHECK_EQ(r.core[i].mode, TW_REACTOR_YIELD);
}

/* ---- Ring sources: the strategy core's shape, two inbound rings on one
 * core, one zero-copy with back-pressure, one copied into the burst. */
enum { RING_ITEMS = 300000 };
typedef struct src {
    tw_reactor *r;
    tw_ring *ring;
    uint64_t next; /* next sequence expected */
    uint64_t bad;
    uint64_t calls;
    uint64_t max_n;
    int halve; /* take only about half of each view */
    uint64_t *done; /* shared count of finished sources */
} src;

static uint32_t src_fn(void *arg, const void *items, uint32_t n, tw_reactor_now *now)
{
    src *s = arg;
    (void)now;
    uint32_t take = s->halve && (s->calls & 1) ? n / 2 + 1 : n;
    if (take > n)
        take = n;
    for (uint32_t i = 0; i < take; i++) {
        uint64_t v[2];
        memcpy(v, (const uint8_t *)items + 16 * i, 16);
        if (v[0] != s->next || v[1] != ~s->next)
            s->bad++;
        s->next++;
    }
    s->calls++;
    if (n > s->max_n)
        s->max_n = n;
    if (s->next == RING_ITEMS && __atomic_add_fetch(s->done, 1, __ATOMIC_RELAXED) == 2)
        tw_reactor_stop(s->r);
    return take;
}

static void *feed(void *p)
{
    tw_ring *ring = p;
    uint64_t seq = 0;
    unsigned spins = 0;
    while (seq < RING_ITEMS) {
        uint64_t v[8][2];
        uint32_t k = (uint32_t)(seq % 7) + 1;
        if (k > RING_ITEMS - seq)
            k = (uint32_t)(RING_ITEMS - seq);
        for (uint32_t i = 0; i < k; i++) {
            v[i][0] = seq + i;
            v[i][1] = ~(seq + i);
        }
        uint32_t n = tw_ring_enqueue_burst_sp(ring, v, k);
        seq += n;
        if (n == 0 && ++spins % 16 == 0)
            sched_yield();
    }
    return NULL;
}

static void test_rings(void)
{
    size_t len = tw_ring_memsize(256, 16);
    void *m1 = NULL, *m2 = NULL;
    REQUIRE(posix_memalign(&m1, 64, len) == 0 && posix_memalign(&m2, 64, len) == 0);
    REQUIRE(tw_ring_init(m1, 256, 16) == 0 && tw_ring_init(m2, 256, 16) == 0);
    tw_reactor r;
    tw_reactor_init(&r, &yield_opts);
    uint64_t done = 0;
    src a = {.r = &r, .ring = m1, .halve = 1, .done = &done};
    src b = {.r = &r, .ring = m2, .done = &done};
    tw_reactor_add_core(&r, -1);
    CHECK_EQ(tw_reactor_add_ring(&r, 0, m1, src_fn, &a, 0), 0);
    CHECK_EQ(tw_reactor_add_ring(&r, 0, m2, src_fn, &b, TW_REACTOR_RING_COPY), 0);
    REQUIRE(tw_reactor_start(&r, NULL) == 0);
    pthread_t f1, f2;
    REQUIRE(pthread_create(&f1, NULL, feed, m1) == 0);
    REQUIRE(pthread_create(&f2, NULL, feed, m2) == 0);
    pthread_join(f1, NULL);
    pthread_join(f2, NULL);
    tw_reactor_join(&r);
    CHECK_EQ(a.next, RING_ITEMS);
    CHECK_EQ(b.next, RING_ITEMS);
    CHECK_EQ(a.bad + b.bad, 0);
    CHECK(a.max_n <= TW_REACTOR_BURST && b.max_n <= TW_REACTOR_BURST);
    CHECK_EQ(r.core[0].stats.work, 2 * RING_ITEMS);
    CHECK_EQ(tw_ring_count(m1) + tw_ring_count(m2), 0);
    free(m1);
    free(m2);
}

/* ---- tw_reactor_turn: one turn at a time on the caller's thread. */
static unsigned two_poll(void *arg, tw_reactor_now *now)
{
    (void)now;
    return ++*(unsigned *)arg % 2 ? 2u : 0u;
}

static void test_turn(void)
{
    tw_reactor r;
    tw_reactor_opts o = {.mode = TW_REACTOR_BUSY};
    tw_reactor_init(&r, &o);
    unsigned calls = 0;
    tw_reactor_add_core(&r, -1);
    tw_reactor_add_poll(&r, 0, two_poll, &calls);
    unsigned work = 0;
    for (int i = 0; i < 1000; i++)
        work += tw_reactor_turn(&r, 0);
    CHECK_EQ(work, 1000);
    CHECK_EQ(calls, 1000);
    CHECK_EQ(r.core[0].stats.busy_turns, 500);
    CHECK_EQ(r.core[0].stats.turns, 1000);
    CHECK_EQ(r.core[0].stats.yields, 0);
    /* Switched to YIELD between turns: the idle half of the turns now
     * back off, one sched_yield per TW_REACTOR_IDLE_SPINS idle turns in a
     * row (the busy turns in between reset the count, so none here)... */
    CHECK_EQ(tw_reactor_set_mode(&r, 0, TW_REACTOR_YIELD), 0);
    for (int i = 0; i < 1000; i++)
        (void)tw_reactor_turn(&r, 0);
    CHECK_EQ(r.core[0].stats.yields, 0);
    /* ... and with only idle turns, every TW_REACTOR_IDLE_SPINS of them. */
    tw_reactor q;
    tw_reactor_init(&q, &o);
    tw_reactor_add_core(&q, -1);
    counter c = {.r = &q};
    tw_reactor_add_poll(&q, 0, count_poll, &c);
    CHECK_EQ(tw_reactor_set_mode(&q, 0, TW_REACTOR_YIELD), 0);
    for (int i = 0; i < 10 * TW_REACTOR_IDLE_SPINS; i++)
        (void)tw_reactor_turn(&q, 0);
    CHECK_EQ(q.core[0].mode, TW_REACTOR_YIELD);
    CHECK_EQ(q.core[0].stats.yields, 10);
    CHECK_EQ(tw_reactor_set_mode(&q, 0, TW_REACTOR_BUSY), 0);
    for (int i = 0; i < 10 * TW_REACTOR_IDLE_SPINS; i++)
        (void)tw_reactor_turn(&q, 0);
    CHECK_EQ(q.core[0].stats.yields, 10);
    CHECK_EQ(tw_reactor_set_mode(&q, 0, (tw_reactor_mode)7), -EINVAL);
    CHECK_EQ(tw_reactor_set_mode(&q, 3, TW_REACTOR_BUSY), -EINVAL);
}

/* CPU lists in the kernel's form, both ways (table-driven). */
static void test_cpuset(void)
{
    static const struct {
        const char *in, *out;
        int count, rc;
    } cases[] = {
        {"", "", 0, 0},
        {"0", "0", 1, 0},
        {"0-1", "0-1", 2, 0},
        {"0-3,8,10-11", "0-3,8,10-11", 7, 0},
        {"3,1,2", "1-3", 3, 0},
        {" 0-1\n", "0-1", 2, 0},
        {"1023", "1023", 1, 0},
        {"1024", "", 0, -EINVAL},
        {"2-1", "", 0, -EINVAL},
        {"a", "", 0, -EINVAL},
        {"1,,2", "1", 1, -EINVAL},
        {"1-", "", 0, -EINVAL},
    };
    for (size_t i = 0; i < TW_ARRAY_SIZE(cases); i++) {
        tw_cpuset s;
        char buf[64];
        int rc = tw_cpuset_parse(cases[i].in, &s);
        CHECKF(rc == cases[i].rc, "'%s': %d", cases[i].in, rc);
        if (rc == 0) {
            CHECKF(!strcmp(tw_cpuset_format(&s, buf, sizeof(buf)), cases[i].out), "'%s' -> '%s'",
                   cases[i].in, buf);
            CHECK_EQ(tw_cpuset_count(&s), cases[i].count);
        }
    }
    /* Cut short, never overflowing. */
    tw_cpuset s;
    memset(&s, 0, sizeof(s));
    for (int i = 0; i < 200; i += 2)
        tw_cpuset_add(&s, i);
    char small[16];
    tw_cpuset_format(&s, small, sizeof(small));
    CHECKF(strlen(small) < sizeof(small) && strstr(small, "..."), "'%s'", small);
    /* The online set is what sysfs says, and it holds this CPU. */
    tw_cpuset on;
    tw_cpuset_online(&on);
    CHECK(tw_cpuset_count(&on) >= 1);
    CHECK(tw_cpuset_has(&on, sched_getcpu()));
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* nothing buffered is copied by fork */
    /* The tests that fork come first, before this process has threads. */
    test_busy_no_syscalls();
    test_privilege_errors();
    test_config_errors();
    test_pin_errors();
    test_fifo_ok();
    test_quit();
    test_timers();
    test_yield();
    test_auto();
    test_rings();
    test_turn();
    test_cpuset();
    return tw_check_done("reactor");
}
