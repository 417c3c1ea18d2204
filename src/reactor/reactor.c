/* Reactor: per-core polling loops (include/tickwire/reactor.h). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tickwire/reactor.h"

#define FIFO_NAP_NS 50000 /* YIELD under SCHED_FIFO without fds: the longest nap */

static inline void cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* ---- Set-up: CPUs, scheduling, memory. ---- */

/* Reads a whole small file (sysfs, procfs) into buf; returns its length
 * or -1. */
static int read_small(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = 0;
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = 0;
    return (int)n;
}

int tw_cpuset_count(const tw_cpuset *s)
{
    int n = 0;
    for (size_t i = 0; i < TW_ARRAY_SIZE(s->bits); i++)
        n += __builtin_popcountll(s->bits[i]);
    return n;
}

int tw_cpuset_parse(const char *p, tw_cpuset *out)
{
    memset(out, 0, sizeof(*out));
    while (*p == ' ' || *p == '\t')
        p++;
    while (*p && *p != '\n' && *p != ' ') {
        char *end;
        long a = strtol(p, &end, 10);
        if (end == p || a < 0 || a >= TW_CPUSET_MAX)
            return -EINVAL;
        long b = a;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a || b >= TW_CPUSET_MAX)
                return -EINVAL;
            p = end;
        }
        for (long i = a; i <= b; i++)
            tw_cpuset_add(out, (int)i);
        if (*p == ',')
            p++;
        else if (*p && *p != '\n' && *p != ' ')
            return -EINVAL;
    }
    while (*p == ' ' || *p == '\n')
        p++;
    return *p ? -EINVAL : 0;
}

char *tw_cpuset_format(const tw_cpuset *s, char *buf, size_t cap)
{
    size_t n = 0;
    if (cap == 0)
        return buf;
    buf[0] = 0;
    for (int i = 0; i < TW_CPUSET_MAX; i++) {
        if (!tw_cpuset_has(s, i))
            continue;
        int j = i;
        while (j + 1 < TW_CPUSET_MAX && tw_cpuset_has(s, j + 1))
            j++;
        char part[32];
        int len = i == j ? snprintf(part, sizeof(part), "%s%d", n ? "," : "", i)
                         : snprintf(part, sizeof(part), "%s%d-%d", n ? "," : "", i, j);
        if (n + (size_t)len + 4 > cap) {
            snprintf(buf + n, cap - n, "%s", cap - n > 3 ? "..." : "");
            return buf;
        }
        memcpy(buf + n, part, (size_t)len + 1);
        n += (size_t)len;
        i = j;
    }
    return buf;
}

void tw_cpuset_online(tw_cpuset *out)
{
    char text[4096];
    if (read_small("/sys/devices/system/cpu/online", text, sizeof(text)) > 0 &&
        tw_cpuset_parse(text, out) == 0)
        return;
    memset(out, 0, sizeof(*out));
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < n && i < TW_CPUSET_MAX; i++)
        tw_cpuset_add(out, (int)i);
}

int tw_cpus_usable(void)
{
    tw_cpuset on;
    tw_cpuset_online(&on);
    cpu_set_t mine;
    if (sched_getaffinity(0, sizeof(mine), &mine) != 0)
        return tw_cpuset_count(&on) > 0 ? tw_cpuset_count(&on) : 1;
    int n = 0;
    for (int i = 0; i < CPU_SETSIZE && i < TW_CPUSET_MAX; i++)
        n += CPU_ISSET(i, &mine) && tw_cpuset_has(&on, i);
    return n > 0 ? n : 1;
}

tw_reactor_mode tw_reactor_auto_mode(int loops)
{
    return tw_cpus_usable() >= loops ? TW_REACTOR_BUSY : TW_REACTOR_YIELD;
}

int tw_reactor_pin_self(int cpu, tw_error *err)
{
    if (cpu < 0 || cpu >= CPU_SETSIZE)
        return tw__err(err, -EINVAL, "pin to CPU %d: no such CPU (CPU numbers run 0..%d)", cpu,
                       CPU_SETSIZE - 1);
    tw_cpuset on;
    char text[256];
    tw_cpuset_online(&on);
    if (!tw_cpuset_has(&on, cpu))
        return tw__err(err, -EINVAL, "pin to CPU %d: no such CPU online (online: %s)", cpu,
                       tw_cpuset_format(&on, text, sizeof(text)));
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        int e = errno;
        if (e == EINVAL)
            return tw__err(err, -EINVAL,
                           "pin to CPU %d: sched_setaffinity: the CPU is online but outside the "
                           "CPUs this process's cpuset allows (cgroup cpuset.cpus, or taskset of "
                           "a parent)",
                           cpu);
        if (e == EPERM)
            return tw__err(err, -EPERM,
                           "pin to CPU %d: sched_setaffinity: not permitted (needs CAP_SYS_NICE "
                           "for another user's thread)",
                           cpu);
        return tw__err(err, -e, "pin to CPU %d: sched_setaffinity: %s", cpu, strerror(e));
    }
    return 0;
}

/* 1 if the effective capability set has cap (from /proc/self/status),
 * 0 if not, -1 if unknown. */
static int have_cap(int cap)
{
    char buf[4096];
    if (read_small("/proc/self/status", buf, sizeof(buf)) < 0)
        return -1;
    const char *p = strstr(buf, "\nCapEff:");
    if (!p)
        return -1;
    unsigned long long v = strtoull(p + 8, NULL, 16);
    return (int)((v >> cap) & 1);
}

static void rlimit_text(int res, char *out, size_t cap)
{
    struct rlimit rl;
    if (getrlimit(res, &rl) != 0)
        snprintf(out, cap, "unknown");
    else if (rl.rlim_cur == RLIM_INFINITY)
        snprintf(out, cap, "unlimited");
    else
        snprintf(out, cap, "%llu", (unsigned long long)rl.rlim_cur);
}

int tw_reactor_fifo_self(int prio, tw_error *err)
{
    int lo = sched_get_priority_min(SCHED_FIFO), hi = sched_get_priority_max(SCHED_FIFO);
    if (prio < lo || prio > hi)
        return tw__err(err, -EINVAL, "SCHED_FIFO priority %d: outside %d..%d", prio, lo, hi);
    struct sched_param sp = {.sched_priority = prio};
    int e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    if (e == 0)
        return 0;
    if (e == EPERM) {
        char rt[32];
        rlimit_text(RLIMIT_RTPRIO, rt, sizeof(rt));
        int cap = have_cap(23); /* CAP_SYS_NICE */
        if (cap == 1)
            return tw__err(err, -EPERM,
                           "SCHED_FIFO priority %d: not permitted although the process has "
                           "CAP_SYS_NICE: its cgroup has no real-time budget (cpu.rt_runtime_us "
                           "is 0 under cgroup v1, or RT is not delegated)",
                           prio);
        return tw__err(err, -EPERM,
                       "SCHED_FIFO priority %d: not permitted: no CAP_SYS_NICE and RLIMIT_RTPRIO "
                       "is %s (raise it with `ulimit -r %d` or in /etc/security/limits.conf, or "
                       "grant CAP_SYS_NICE)",
                       prio, rt, prio);
    }
    return tw__err(err, -e, "SCHED_FIFO priority %d: pthread_setschedparam: %s", prio,
                   strerror(e));
}

int tw_reactor_lock_memory(tw_error *err)
{
    if (mlockall(MCL_CURRENT | MCL_FUTURE) == 0)
        return 0;
    int e = errno;
    char lim[32];
    rlimit_text(RLIMIT_MEMLOCK, lim, sizeof(lim));
    int cap = have_cap(14); /* CAP_IPC_LOCK */
    if (e == EPERM)
        return tw__err(err, -EPERM,
                       "mlockall(MCL_CURRENT | MCL_FUTURE): not permitted: no CAP_IPC_LOCK and "
                       "RLIMIT_MEMLOCK is %s bytes (`ulimit -l unlimited`, memlock in "
                       "/etc/security/limits.conf, or grant CAP_IPC_LOCK)",
                       lim);
    if (e == ENOMEM) {
        char st[4096], vm[64] = "?";
        if (read_small("/proc/self/status", st, sizeof(st)) > 0) {
            const char *p = strstr(st, "\nVmSize:");
            if (p)
                sscanf(p + 8, " %63[^\n]", vm);
        }
        return tw__err(err, -ENOMEM,
                       "mlockall(MCL_CURRENT | MCL_FUTURE): the process maps %s, more than "
                       "RLIMIT_MEMLOCK (%s bytes)%s (`ulimit -l unlimited`, or grant "
                       "CAP_IPC_LOCK)",
                       vm, lim, cap == 1 ? "" : " and it has no CAP_IPC_LOCK");
    }
    return tw__err(err, -e, "mlockall(MCL_CURRENT | MCL_FUTURE): %s", strerror(e));
}

/* ---- Configuration. ---- */

void tw_reactor_init(tw_reactor *r, const tw_reactor_opts *opts)
{
    memset(r, 0, sizeof(*r));
    if (opts)
        r->opts = *opts;
    r->clock = r->opts.clock ? r->opts.clock : tw_tsc_default();
    r->max_wait_ns = r->opts.max_wait_ns > 0 ? r->opts.max_wait_ns : 1000000;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
}

static tw_reactor_mode resolve_mode(const tw_reactor *r);

static tw_reactor_core *core_of(tw_reactor *r, int core)
{
    return core >= 0 && core < r->ncores ? &r->core[core] : NULL;
}

int tw_reactor_add_core(tw_reactor *r, int cpu)
{
    if (cpu < -1)
        return -EINVAL;
    if (r->ncores >= TW_REACTOR_MAX_CORES)
        return -ENOSPC;
    tw_reactor_core *c = &r->core[r->ncores];
    memset(c, 0, sizeof(*c));
    c->cpu = cpu;
    c->owner = r;
    c->next_timer_tsc = UINT64_MAX;
    for (int i = 0; i < TW_REACTOR_MAX_FDS; i++)
        c->fd[i] = -1;
    return r->ncores++;
}

int tw_reactor_add_poll(tw_reactor *r, int core, tw_reactor_poll_fn fn, void *arg)
{
    tw_reactor_core *c = core_of(r, core);
    if (!c || !fn)
        return -EINVAL;
    if (c->npoll >= TW_REACTOR_MAX_POLLS)
        return -ENOSPC;
    c->poll[c->npoll++] = (struct tw_reactor_poll){.poll = fn, .arg = arg};
    return 0;
}

int tw_reactor_add_ring(tw_reactor *r, int core, tw_ring *ring, tw_reactor_ring_fn fn,
                        void *arg, uint32_t flags)
{
    tw_reactor_core *c = core_of(r, core);
    if (!c || !fn || !ring || (flags & ~TW_REACTOR_RING_COPY))
        return -EINVAL;
    uint32_t burst = TW_REACTOR_BURST;
    if (flags & TW_REACTOR_RING_COPY) {
        uint32_t fit = TW_REACTOR_BURST_BYTES / tw_ring_slot_size(ring);
        if (fit == 0)
            return -EINVAL;
        if (fit < burst)
            burst = fit;
    }
    if (c->npoll >= TW_REACTOR_MAX_POLLS)
        return -ENOSPC;
    c->poll[c->npoll++] = (struct tw_reactor_poll){
        .ring_fn = fn, .ring = ring, .arg = arg, .flags = flags, .burst = burst};
    return 0;
}

int tw_reactor_add_timer(tw_reactor *r, int core, int64_t period_ns, tw_reactor_timer_fn fn,
                         void *arg)
{
    tw_reactor_core *c = core_of(r, core);
    if (!c || !fn || period_ns < 1000)
        return -EINVAL;
    if (c->ntimer >= TW_REACTOR_MAX_TIMERS)
        return -ENOSPC;
    /* The division is here, once; the loop compares TSC values only. */
    uint64_t ticks = tw_tsc_ticks(r->clock, (uint64_t)period_ns);
    c->timer[c->ntimer++] = (struct tw_reactor_timer){
        .fn = fn, .arg = arg, .period_tsc = ticks ? ticks : 1, .period_ns = period_ns};
    return 0;
}

int tw_reactor_set_mode(tw_reactor *r, int core, tw_reactor_mode mode)
{
    tw_reactor_core *c = core_of(r, core);
    if (!c || (mode != TW_REACTOR_AUTO && mode != TW_REACTOR_BUSY && mode != TW_REACTOR_YIELD))
        return -EINVAL;
    tw_reactor_mode m = mode == TW_REACTOR_AUTO ? resolve_mode(r) : mode;
    if (c->mode != m) {
        c->mode = m;
        c->idle_spins = 0;
    }
    return 0;
}

int tw_reactor_add_fd(tw_reactor *r, int core, int fd)
{
    tw_reactor_core *c = core_of(r, core);
    if (!c || fd < 0)
        return -EINVAL;
    if (c->nfd >= TW_REACTOR_MAX_FDS)
        return -ENOSPC;
    c->fd[c->nfd++] = fd;
    return 0;
}

/* ---- The loop. ---- */

static void arm_timers(tw_reactor_core *c)
{
    uint64_t now = tw_tsc_read(), next = UINT64_MAX;
    for (int i = 0; i < c->ntimer; i++) {
        c->timer[i].next_tsc = now + c->timer[i].period_tsc;
        if (c->timer[i].next_tsc < next)
            next = c->timer[i].next_tsc;
    }
    c->next_timer_tsc = next;
    c->begun = 1;
}

static void run_timers(tw_reactor_core *c, tw_reactor_now *now)
{
    uint64_t next = UINT64_MAX;
    for (int i = 0; i < c->ntimer; i++) {
        struct tw_reactor_timer *t = &c->timer[i];
        if (now->tsc >= t->next_tsc) {
            t->fn(t->arg, now);
            c->stats.timer_runs++;
            t->next_tsc += t->period_tsc;
            if (t->next_tsc <= now->tsc) /* more than a period late: no catch-up */
                t->next_tsc = now->tsc + t->period_tsc;
        }
        if (t->next_tsc < next)
            next = t->next_tsc;
    }
    TW_ASSERT(next > now->tsc);
    c->next_timer_tsc = next;
}

static uint32_t drain_ring(struct tw_reactor_poll *p, tw_reactor_now *now, uint8_t *burst)
{
    if (p->flags & TW_REACTOR_RING_COPY) {
        uint32_t n = tw_ring_dequeue_burst_sc(p->ring, burst, p->burst);
        if (n == 0)
            return 0;
        uint32_t took = p->ring_fn(p->arg, burst, n, now);
        TW_VERIFY(took == n); /* a copy cannot go back into the ring */
        return n;
    }
    const void *v;
    uint32_t n = tw_ring_peek_sc(p->ring, p->burst, &v);
    if (n == 0)
        return 0;
    uint32_t took = p->ring_fn(p->arg, v, n, now);
    TW_VERIFY(took <= n);
    tw_ring_release_sc(p->ring, took);
    return took;
}

static void idle(tw_reactor *r, tw_reactor_core *c, const tw_reactor_now *now)
{
    if (c->mode != TW_REACTOR_YIELD || ++c->idle_spins < TW_REACTOR_IDLE_SPINS) {
        cpu_pause(); /* BUSY: this is all, no system call */
        return;
    }
    c->idle_spins = 0;
    int64_t wake = now->wake_ns;
    if (c->next_timer_tsc != UINT64_MAX) {
        int64_t t = tw_tsc_to_ns(r->clock, c->next_timer_tsc);
        if (t < wake)
            wake = t;
    }
    int64_t wait = wake - now->ns;
    if (wait <= 0)
        return; /* something is due: straight to the next turn */
    if (c->nfd > 0) {
        struct pollfd pf[TW_REACTOR_MAX_FDS];
        for (int i = 0; i < c->nfd; i++)
            pf[i] = (struct pollfd){.fd = c->fd[i], .events = POLLIN};
        struct timespec ts = {(time_t)(wait / 1000000000), (long)(wait % 1000000000)};
        (void)ppoll(pf, (nfds_t)c->nfd, &ts, NULL);
        c->stats.waits++;
    } else if (c->fifo) {
        /* sched_yield() under SCHED_FIFO gives the CPU only to other
         * real-time threads; a short nap lets normal tasks run. */
        tw_clock_sleep_ns(wait < FIFO_NAP_NS ? wait : FIFO_NAP_NS);
        c->stats.yields++;
    } else {
        sched_yield();
        c->stats.yields++;
    }
}

/* One turn with the loop's stack burst. */
static unsigned turn(tw_reactor *r, tw_reactor_core *c, uint8_t *burst)
{
    tw_reactor_now now;
    now.tsc = tw_tsc_read();
    now.ns = tw_tsc_to_ns(r->clock, now.tsc);
    /* Only a turn that may end in a wait needs the polls' deadlines: a
     * BUSY loop never waits, a YIELD loop on its TW_REACTOR_IDLE_SPINS-th
     * idle turn in a row.  Otherwise wake_ns starts at now, which tells a
     * poll it may skip working its deadline out (the stack's timer scan
     * over every connection was 6% of a busy trader's turns). */
    int may_wait = c->mode == TW_REACTOR_YIELD && c->idle_spins + 1 >= TW_REACTOR_IDLE_SPINS;
    now.wake_ns = may_wait ? now.ns + r->max_wait_ns : now.ns;
    unsigned work = 0;
    for (int i = 0; i < c->npoll; i++) {
        struct tw_reactor_poll *p = &c->poll[i];
        work += p->ring ? drain_ring(p, &now, burst) : p->poll(p->arg, &now);
    }
    if (now.tsc >= c->next_timer_tsc)
        run_timers(c, &now);
    c->stats.turns++;
    if (work) {
        c->stats.busy_turns++;
        c->stats.work += work;
        c->idle_spins = 0;
    } else {
        idle(r, c, &now);
    }
    return work;
}

static tw_reactor_mode resolve_mode(const tw_reactor *r)
{
    return r->opts.mode != TW_REACTOR_AUTO ? r->opts.mode : tw_reactor_auto_mode(r->ncores);
}

static void loop(tw_reactor *r, tw_reactor_core *c)
{
    /* The bounded burst on the stack (l2fwd's pkts_burst): ring items of
     * TW_REACTOR_RING_COPY sources land here. */
    uint8_t burst[TW_REACTOR_BURST_BYTES] TW_CACHE_ALIGNED;
    if (!c->begun)
        arm_timers(c);
    while (!tw_reactor_stopping(r))
        turn(r, c, burst);
}

unsigned tw_reactor_turn(tw_reactor *r, int core)
{
    tw_reactor_core *c = core_of(r, core);
    TW_VERIFY(c != NULL);
    uint8_t burst[TW_REACTOR_BURST_BYTES] TW_CACHE_ALIGNED;
    if (!c->begun) {
        if (c->mode == TW_REACTOR_AUTO)
            c->mode = resolve_mode(r);
        arm_timers(c);
    }
    return turn(r, c, burst);
}

/* Pins and schedules the calling thread for core c. */
static int setup_thread(tw_reactor *r, int index, tw_reactor_core *c, tw_error *err)
{
    tw_error e = {0};
    if (c->mode == TW_REACTOR_AUTO)
        c->mode = resolve_mode(r);
    if (c->cpu >= 0 && tw_reactor_pin_self(c->cpu, &e) != 0)
        return tw__err(err, e.code, "reactor core %d: %s", index, e.msg);
    if (r->opts.sched_fifo_prio > 0) {
        if (tw_reactor_fifo_self(r->opts.sched_fifo_prio, &e) != 0)
            return tw__err(err, e.code, "reactor core %d: %s", index, e.msg);
        c->fifo = 1;
    }
    return 0;
}

static void *core_main(void *arg)
{
    tw_reactor_core *c = arg;
    tw_reactor *r = c->owner;
    int rc = setup_thread(r, (int)(c - r->core), c, &c->err);
    pthread_mutex_lock(&r->mu);
    c->rc = rc;
    r->nready++;
    pthread_cond_broadcast(&r->cv);
    while (!r->go && !tw_reactor_stopping(r))
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    if (rc == 0 && !tw_reactor_stopping(r))
        loop(r, c);
    return NULL;
}

int tw_reactor_start(tw_reactor *r, tw_error *err)
{
    if (r->ncores == 0)
        return tw__err(err, -EINVAL, "reactor: no cores to start");
    if (r->opts.lock_memory) {
        tw_error e = {0};
        if (tw_reactor_lock_memory(&e) != 0)
            return tw__err(err, e.code, "reactor: %s", e.msg);
    }
    r->nready = 0;
    r->go = 0;
    int started = 0, rc = 0;
    for (int i = 0; i < r->ncores; i++) {
        tw_reactor_core *c = &r->core[i];
        c->rc = 0;
        c->err = (tw_error){0};
        int e = pthread_create(&c->thread, NULL, core_main, c);
        if (e != 0) {
            rc = tw__err(err, -e, "reactor core %d: pthread_create: %s", i, strerror(e));
            break;
        }
        c->started = 1;
        started++;
    }
    pthread_mutex_lock(&r->mu);
    while (r->nready < started)
        pthread_cond_wait(&r->cv, &r->mu);
    for (int i = 0; rc == 0 && i < started; i++)
        if (r->core[i].rc != 0)
            rc = tw__err(err, r->core[i].rc, "%s", r->core[i].err.msg);
    if (rc != 0)
        tw_reactor_stop(r);
    r->go = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (rc != 0)
        tw_reactor_join(r);
    return rc;
}

void tw_reactor_stop(tw_reactor *r)
{
    /* Relaxed: pairs with the relaxed load in tw_reactor_stopping; the
     * flag carries no data (pthread_join orders what the loops wrote). */
    __atomic_store_n(&r->quit, 1, __ATOMIC_RELAXED);
}

int tw_reactor_join(tw_reactor *r)
{
    for (int i = 0; i < r->ncores; i++) {
        tw_reactor_core *c = &r->core[i];
        if (c->started) {
            pthread_join(c->thread, NULL);
            c->started = 0;
        }
    }
    return 0;
}

int tw_reactor_run(tw_reactor *r, int core, tw_error *err)
{
    tw_reactor_core *c = core_of(r, core);
    if (!c)
        return tw__err(err, -EINVAL, "reactor: no core %d (%d added)", core, r->ncores);
    if (r->opts.lock_memory) {
        tw_error e = {0};
        if (tw_reactor_lock_memory(&e) != 0)
            return tw__err(err, e.code, "reactor: %s", e.msg);
    }
    int rc = setup_thread(r, core, c, err);
    if (rc != 0)
        return rc;
    loop(r, c);
    return 0;
}
