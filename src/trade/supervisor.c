/* Processes mode's supervisor (trade_engine.h, [engine] mode =
 * processes; docs/crash.md, "Processes mode"): the attach segment the
 * strategy process attaches to, the strategy process and its standby
 * (spawned, watched, reaped), the crash-loop rule, the restarts'
 * detection figures.  The engine's control thread calls it. */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trade/engine_internal.h"
#include "tickwire/util.h"

#define ATT_BEAT_TIMEOUT_NS 3000000000ll /* a strategy process whose beat stands still is hung */
#define REAP_WAIT_NS 2000000000ll        /* a strategy process on its way out, at most */
#define FAILS_IN_A_ROW 3u                /* strategies that exit by themselves with an error */

size_t tw_trade_engine_attach_sock(const tw_trade_config *cfg, char *buf)
{
    char j[TW_TRADE_STR_MAX + 16];
    tw__evlog_path(cfg, j, sizeof(j));
    size_t n = strlen(j);
    if (n + 5 < TW_UNIX_PATH_MAX)
        return (size_t)snprintf(buf, TW_UNIX_PATH_MAX, "%s.sock", j);
    /* Too long for sun_path: the abstract namespace, named by the path. */
    uint64_t h = tw_fnv1a64(TW_FNV1A64_INIT, j, n);
    return (size_t)snprintf(buf, TW_UNIX_PATH_MAX, "@tickwire-%016llx", (unsigned long long)h);
}

int tw__sup_open(tw_trade_engine *e, tw_error *err)
{
    int rc = pthread_mutex_init(&e->figmu, NULL);
    if (rc != 0)
        return tw__err(err, -rc, "mutex: %s", strerror(rc));
    tw_trade_engine_attach_sock(e->cfg, e->att_sock);
    tw_attach_gw_cfg ac = {.sock_path = e->att_sock, .n_cores = e->n_gw,
                           .in_count = e->cfg->engine.ring_slots,
                           .out_count = e->cfg->engine.ring_slots, .jseg = &e->jr,
                           .beat_timeout_ns = ATT_BEAT_TIMEOUT_NS};
    if (e->n_gw > TW_ATTACH_MAX_CORES)
        return tw__err(err, -EINVAL, "mode = processes: at most %u sessions", TW_ATTACH_MAX_CORES);
    tw_error ae = {0};
    if ((rc = tw_attach_gw_open(&e->att, &ac, &ae)) != 0)
        return tw__err(err, rc, "mode = processes: %s", ae.msg);
    /* The segment's journal_end starts at the journal's end (META, and
     * after a crash the records of the run so far). */
    __atomic_store_n(&e->att.hdr->journal_end, tw_jseg_next_seq(&e->jr), __ATOMIC_RELEASE);
    e->have_att = 1;
    fprintf(e->log, "tickwire trade: gateway: the strategy attaches at %s\n", e->att_sock);
    fflush(e->log);
    return 0;
}

/* Spawns the strategy process; standby: it builds its strategy, then
 * waits for a byte on fd 3 (TW__STANDBY_ENV; a socket pair) before it
 * connects (EOF: it exits), so a restart does not wait for its exec and
 * set-up.  Returns
 * the pid, or 0 (logged). */
static pid_t spawn_one(tw_trade_engine *e, int standby, int *go_fd)
{
    extern char **environ;
    posix_spawn_file_actions_t fa;
    int fds[2] = {-1, -1};
    char **own = NULL;
    char gw_pid[sizeof(TW__GATEWAY_PID_ENV) + 24];
    size_t n = 0;
    while (environ[n])
        n++;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return 0;
    own = calloc(n + 3, sizeof(char *));
    if (!own) {
        posix_spawn_file_actions_destroy(&fa);
        return 0;
    }
    memcpy(own, environ, n * sizeof(char *));
    snprintf(gw_pid, sizeof(gw_pid), "%s=%d", TW__GATEWAY_PID_ENV, (int)getpid());
    own[n++] = gw_pid;
    if (standby) {
        /* A socket pair, not a pipe: the go is sent with MSG_NOSIGNAL (a
         * standby that died is no SIGPIPE to a gateway embedded in a
         * program that keeps SIGPIPE's default). */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
            free(own);
            posix_spawn_file_actions_destroy(&fa);
            return 0;
        }
        own[n++] = TW__STANDBY_ENV "=3";
        /* dup2 onto 3 clears close-on-exec (fds[0] is never 3: 0-2 and the
         * log or a store are open below it). */
        (void)posix_spawn_file_actions_adddup2(&fa, fds[0], 3);
    }
    pid_t pid = 0;
    int rc = posix_spawn(&pid, e->opts.strategy_argv[0], &fa, NULL, e->opts.strategy_argv, own);
    posix_spawn_file_actions_destroy(&fa);
    free(own);
    if (fds[0] >= 0)
        close(fds[0]);
    if (rc != 0) {
        if (fds[1] >= 0)
            close(fds[1]);
        fprintf(e->log, "tickwire trade: gateway: cannot start the strategy process %s: %s\n",
                e->opts.strategy_argv[0], strerror(rc));
        fflush(e->log);
        return 0;
    }
    *go_fd = fds[1];
    fprintf(e->log, "tickwire trade: gateway: strategy process %d started%s at %lld ns "
            "(monotonic)\n", (int)pid, standby ? " (standby)" : "", (long long)tw_clock_now_ns());
    fflush(e->log);
    return pid;
}

void tw__sup_spawn(tw_trade_engine *e)
{
    if (!e->opts.strategy_argv || e->child > 0)
        return;
    e->spawn_ns = tw_clock_now_ns();
    if (e->standby > 0) {
        /* The standby has its strategy built: go. */
        char one = 1;
        ssize_t k = send(e->standby_fd, &one, 1, MSG_NOSIGNAL);
        close(e->standby_fd);
        e->standby_fd = -1;
        if (k == 1) {
            e->child = e->standby;
            e->standby = 0;
            fprintf(e->log, "tickwire trade: gateway: strategy process %d (standby) goes\n",
                    (int)e->child);
            fflush(e->log);
            return;
        }
        /* It is gone: reaped in attach_step; start one the slow way. */
        (void)kill(e->standby, SIGKILL);
        (void)waitpid(e->standby, NULL, 0);
        e->standby = 0;
    }
    int fd = -1;
    e->child = spawn_one(e, 0, &fd);
}

/* The next strategy, spawned ahead and waiting. */
static void spawn_standby(tw_trade_engine *e)
{
    if (!e->opts.strategy_argv || e->standby > 0 ||
        __atomic_load_n(&e->phase, __ATOMIC_ACQUIRE) != TW__PH_RUNNING)
        return;
    e->standby = spawn_one(e, 1, &e->standby_fd);
}

/* Signals of a crash (not of an operator or the gateway: KILL, TERM). */
static int crash_signal(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGABRT ||
           sig == SIGTRAP || sig == SIGSYS;
}

/* Our child is gone (status st): say so, and start the next one unless
 * the run is ending. */
static void child_gone(tw_trade_engine *e, int st, int64_t now)
{
    char how[64];
    if (WIFSIGNALED(st))
        snprintf(how, sizeof(how), "killed by signal %d", WTERMSIG(st));
    else
        snprintf(how, sizeof(how), "exit status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    fprintf(e->log, "tickwire trade: gateway: strategy process %d gone (%s) at %lld ns "
            "(monotonic)\n", (int)e->child, how, (long long)now);
    e->child = 0;
    if (WIFSIGNALED(st) && crash_signal(WTERMSIG(st))) {
        /* A crash (the kernel's step, most likely): where.  The same
         * record three times in a row is a loop a restart cannot leave. */
        uint64_t seq = __atomic_load_n(&e->att.hdr->st_cur_seq, __ATOMIC_RELAXED);
        e->crash_count = seq && seq == e->crash_seq ? e->crash_count + 1 : 1;
        e->crash_seq = seq;
        fprintf(e->log, "tickwire trade: gateway: the strategy process crashed at journal record "
                "%llu (%u time%s in a row there)\n", (unsigned long long)seq, e->crash_count,
                e->crash_count == 1 ? "" : "s");
        if (e->crash_count >= TW__CRASH_LOOP) {
            e->crash_loop_seq = seq;
            fprintf(e->log, "tickwire trade: gateway: crash loop: the strategy process died %u "
                    "times at journal record %llu: kill switch (no restart, no new orders: the "
                    "run stops; the report ends before that record)\n", e->crash_count,
                    (unsigned long long)seq);
            __atomic_store_n(&e->req_term, 1, __ATOMIC_RELAXED);
            fflush(e->log);
            return;
        }
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
        if (++e->child_fails >= FAILS_IN_A_ROW) {
            fprintf(e->log, "tickwire trade: gateway: the strategy process failed %u times in a "
                    "row by itself (see its lines above): stopping\n", e->child_fails);
            __atomic_store_n(&e->req_term, 1, __ATOMIC_RELAXED);
            fflush(e->log);
            return;
        }
    } else {
        e->child_fails = 0;
    }
    fflush(e->log);
    if (__atomic_load_n(&e->phase, __ATOMIC_ACQUIRE) != TW__PH_DONE)
        tw__sup_spawn(e);
}

void tw__sup_step(tw_trade_engine *e, int64_t now)
{
    tw_attach_gw_beat(&e->att, now);
    tw_error ae = {0};
    int ev = tw_attach_gw_poll(&e->att, now, &ae);
    if (ev < 0) {
        fprintf(e->log, "tickwire trade: gateway: attach: %s\n", ae.msg);
        return;
    }
    if (ev == TW_ATTACH_EV_ATTACHED) {
        fprintf(e->log, "tickwire trade: gateway: strategy process %d attached (generation %llu)\n",
                (int)e->att.st_pid, (unsigned long long)e->att.generation);
        fflush(e->log);
    }
    /* The standby is spawned once the attached strategy has replayed and
     * processed a new bar (its RESUMED): its exec and set-up then take no
     * CPU from that replay. */
    pthread_mutex_lock(&e->figmu);
    uint32_t nf = e->n_figs;
    pthread_mutex_unlock(&e->figmu);
    if (nf != e->figs_seen) {
        e->figs_seen = nf;
        if (e->att.state == TW_ATTACH_GW_LIVE)
            spawn_standby(e);
    }
    if (ev == TW_ATTACH_EV_DETACHED) {
        e->detect_ns = now;
        e->st_restarts++;
        fprintf(e->log, "tickwire trade: gateway: the strategy detached at %lld ns (monotonic): "
                "the net cores drain and reset its rings\n", (long long)now);
        /* The cores reset at their next turn: wake them. */
        for (uint32_t i = 0; i < e->n_gw; i++)
            tw__bell_ring(tw__gw_bell(e->gw[i]));
    }
    /* The standby, gone by itself (its next spawn comes after an attach). */
    int st = 0;
    if (e->standby > 0 && waitpid(e->standby, &st, WNOHANG) == e->standby) {
        fprintf(e->log, "tickwire trade: gateway: standby strategy process %d gone (status 0x%x)\n",
                (int)e->standby, st);
        e->standby = 0;
        close(e->standby_fd);
        e->standby_fd = -1;
    }
    /* Our child, gone (attached or not). */
    if (e->child > 0 && waitpid(e->child, &st, WNOHANG) == e->child) {
        int64_t t = ev == TW_ATTACH_EV_DETACHED ? now : tw_clock_now_ns();
        if (ev != TW_ATTACH_EV_DETACHED)
            e->detect_ns = t;
        child_gone(e, st, t);
        pthread_mutex_lock(&e->figmu);
        if (e->n_detects < sizeof(e->fig_detect_ns) / sizeof(e->fig_detect_ns[0])) {
            e->fig_detect_ns[e->n_detects] = e->detect_ns;
            e->fig_spawn_ns[e->n_detects] = e->child ? e->spawn_ns : 0;
            e->n_detects++;
        }
        pthread_mutex_unlock(&e->figmu);
    }
}

/* Reaps pid, which is on its way out: 2 s, then SIGKILL. */
static void reap_bounded(pid_t pid)
{
    int st;
    int64_t t0 = tw_clock_now_ns();
    while (waitpid(pid, &st, WNOHANG) != pid) {
        if (tw_clock_now_ns() - t0 > REAP_WAIT_NS) {
            kill(pid, SIGKILL);
            (void)waitpid(pid, &st, 0);
            return;
        }
        tw_clock_sleep_ns(1000000);
    }
}

void tw__sup_end(tw_trade_engine *e)
{
    if (e->have_att) {
        tw_attach_gw_close(&e->att);
        e->have_att = 0;
    }
    if (e->standby > 0) {
        close(e->standby_fd); /* EOF: it exits */
        e->standby_fd = -1;
        reap_bounded(e->standby);
        e->standby = 0;
    }
    if (e->child > 0)
        reap_bounded(e->child);
    e->child = 0;
}
