/* The live engine (trade_engine.h): its set-up, the strategy core, and the
 * control loop that acts on requests and follows the ending.
 *
 * Who owns what: the strategy core's thread owns the tw_strategy, the
 * intents buffer and the consumer side of every inbound ring (and of the
 * control ring); net core k owns session k (gateway.c) and the producer
 * side of in[k] and the consumer side of out[k] (whose producer is the
 * strategy core); the control thread owns the control ring's producer
 * side and the phase.  After the threads are joined, the control thread
 * reads everything (the report). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trade/engine_internal.h"
#include "tickwire/util.h"

#define CTL_SLOTS 64
#define STEP_SLEEP_NS 2000000ll     /* the control loop's nap between steps */
#define DRAIN_WAIT_NS 2000000000ll  /* the strategy's last events, at most */
#define ATT_BEAT_TIMEOUT_NS 3000000000ll /* a strategy process whose beat stands still is hung */
#define ATT_STEP_NS 200000ll        /* the attach control's step, at most this often */

/* ---- doorbell ------------------------------------------------------------------ */

int tw__bell_init(tw__bell *b, int enabled)
{
    b->sleeping = b->rung = 0;
    b->fd = -1;
    if (!enabled)
        return 0;
    b->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return b->fd < 0 ? -errno : 0;
}

void tw__bell_close(tw__bell *b)
{
    if (b->fd >= 0)
        close(b->fd);
    b->fd = -1;
}

void tw__bell_ring(tw__bell *b)
{
    if (b->fd < 0)
        return;
    /* Pairs with the fence in tw__bell_sleep: our enqueue (before this
     * fence) or the consumer's sleeping flag (before its fence) is seen by
     * the other side. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&b->sleeping, __ATOMIC_RELAXED) &&
        !__atomic_exchange_n(&b->rung, 1, __ATOMIC_ACQ_REL)) {
        uint64_t one = 1;
        ssize_t n = write(b->fd, &one, sizeof(one));
        (void)n; /* EAGAIN: the counter is full, i.e. already readable */
    }
}

void tw__bell_sleep(tw__bell *b)
{
    if (b->fd < 0 || __atomic_load_n(&b->sleeping, __ATOMIC_RELAXED))
        return;
    /* Once per idle spell: clear what an earlier ring left readable, or
     * ppoll would return at once from now on. */
    uint64_t v;
    ssize_t n = read(b->fd, &v, sizeof(v));
    (void)n;
    __atomic_store_n(&b->rung, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&b->sleeping, 1, __ATOMIC_RELAXED);
    /* Pairs with the producer's fence in tw__bell_ring (see there). */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void tw__bell_wake(tw__bell *b)
{
    if (b->fd >= 0 && __atomic_load_n(&b->sleeping, __ATOMIC_RELAXED))
        __atomic_store_n(&b->sleeping, 0, __ATOMIC_RELAXED);
}

/* ---- hooks of the strategy ------------------------------------------------------- */

void tw__strategy_log(FILE *f, const tw_trade_config *cfg, const char *who,
                      const tw_strategy_log *r)
{
    const char *inst = r->instance < cfg->n_instances ? cfg->instances[r->instance].name : "-";
    switch (r->kind) {
    case TW_LOG_RISK_REJECT:
        fprintf(f, "tickwire trade: %srisk: %s rejected an order of %s (qty %lld)\n", who,
                tw_risk_rule_name(r->rule), inst, (long long)r->qty);
        break;
    case TW_LOG_RISK_CUT:
        fprintf(f, "tickwire trade: %srisk: %s cut an order of %s to %lld\n", who,
                tw_risk_rule_name(r->rule), inst, (long long)r->qty);
        break;
    case TW_LOG_BREACH:
        fprintf(f, "tickwire trade: %srisk: loss limit crossed (%s): %s now %s\n", who,
                r->what ? r->what : "", inst, tw_trading_state_name(r->state));
        break;
    case TW_LOG_STATE:
        fprintf(f, "tickwire trade: %strading state %s (%s)\n", who,
                tw_trading_state_name(r->state), r->what ? r->what : "");
        break;
    case TW_LOG_VENUE_REJECT:
        fprintf(f, "tickwire trade: %svenue rejected order %016llx of %s (103=%d)\n", who,
                (unsigned long long)r->order_id, inst, r->reason);
        break;
    case TW_LOG_BAD_EVENT:
        fprintf(f, "tickwire trade: %sevent ignored: %s\n", who, r->what ? r->what : "");
        break;
    }
}

static void on_log(void *ctx, const tw_strategy_log *r)
{
    tw_trade_engine *e = ctx;
    /* Processes mode: the strategy process logs; the gateway's own
     * strategy only rebuilds the report at the end. */
    if (!e->procs)
        tw__strategy_log(e->log, e->cfg, "", r);
}

static void on_trade(void *ctx, const tw_strategy_trade *t)
{
    tw_trade_engine *e = ctx;
    if (e->trades)
        (void)tw_trade_csv_row(e->trades, e->strategy, t);
}

/* Processes mode, at the end: a fresh strategy for the report's replay,
 * and a trades CSV with its header only. */
int tw__strategy_rebuild(tw_trade_engine *e, tw_error *err)
{
    tw_strategy_cfg sc;
    tw_trade_config_strategy(e->cfg, &sc);
    sc.hooks = (tw_strategy_hooks){.log = on_log, .trade = on_trade, .ctx = e};
    size_t bytes = tw_strategy_memsize(&sc);
    tw_error se = {0};
    e->strategy = tw_strategy_init(e->strategy_mem, (bytes + 63) & ~(size_t)63, &sc, &se);
    if (!e->strategy)
        return tw__err(err, se.code ? se.code : -EINVAL, "%s: %s", e->cfg->path, se.msg);
    if (e->trades) {
        if (fflush(e->trades) != 0 || ftruncate(fileno(e->trades), 0) != 0 ||
            fseek(e->trades, 0, SEEK_SET) != 0 || tw_trade_csv_header(e->trades) != 0)
            return tw__err(err, -EIO, "%s: write error", e->cfg->engine.trades);
    }
    return 0;
}

/* ---- the strategy core -------------------------------------------------------------- */

/* Moves the pending intents of the last event into their rings, in order;
 * 1 when all went, 0 when a ring is full (the rest waits). */
static int flush_pending(tw_trade_engine *e)
{
    while (e->pend_off < e->pend_n) {
        const tw_out *o = &e->out_buf[e->pend_off];
        if (o->type == TW_OUT_FINISHED) {
            /* Release pairs with the control thread's acquire-load. */
            __atomic_store_n(&e->finished, 1, __ATOMIC_RELEASE);
        } else {
            TW_VERIFY(o->session < e->n_gw);
            tw__gw *g = e->gw[o->session];
            if (tw_ring_enqueue_burst_sp(tw__gw_out(g), o, 1) != 1)
                return 0;
            tw__bell_ring(tw__gw_bell(g));
        }
        e->pend_off++;
    }
    e->pend_off = e->pend_n = 0;
    return 1;
}

/* The events of one ring that are next in number (next_evseq, +1, ...);
 * returns how many it took.  A ring's records are in number order, and
 * every number is in exactly one ring, so taking whichever ring holds the
 * next number is the journal's order (recover.c). */
static uint32_t take(tw_trade_engine *e, tw_ring *r, int stopped)
{
    const void *v;
    uint32_t n = tw_ring_peek_sc(r, TW_REACTOR_BURST, &v);
    const tw__inrec *recs = v;
    uint32_t k = 0;
    while (k < n && recs[k].evseq == e->next_evseq) {
        /* Numbers are handed out once, in order: one below ours was taken. */
        TW_ASSERT(k + 1 >= n || recs[k + 1].evseq > recs[k].evseq);
        const tw_ev *ev = &recs[k++].ev;
        e->next_evseq++;
        if (e->recovered && !e->first_bar_ns && ev->type == TW_EV_BAR) {
            /* The recovery's figures (once a run): monotonic ns, which a
             * supervisor's clock reads the same. */
            e->first_bar_ns = tw_clock_now_ns();
            fprintf(e->log, "tickwire trade: recovery: first new bar %llu at %lld ns (monotonic; "
                    "%.3f ms after the engine's start)\n", (unsigned long long)ev->u.bar.index,
                    (long long)e->first_bar_ns, (double)(e->first_bar_ns - e->created_ns) / 1e6);
            fflush(e->log);
        }
        if (stopped && (ev->type == TW_EV_BAR || ev->type == TW_EV_BARRIER)) {
            e->events_dropped_stop++; /* TERM: no new decisions */
            continue;
        }
        size_t m = tw_strategy_on_event(e->strategy, ev, e->out_buf, e->out_cap);
        uint64_t t = tw_tsc_read();
        for (size_t i = 0; i < m; i++)
            e->out_buf[i].tsc_decision = t;
        e->pend_off = 0;
        e->pend_n = m;
        if (!flush_pending(e))
            break;
    }
    tw_ring_release_sc(r, k);
    return k;
}

/* 1 when the head of r is the event numbered next_evseq. */
static int next_ready(tw_trade_engine *e, tw_ring *r)
{
    const void *v;
    uint32_t n = tw_ring_peek_sc(r, 1, &v);
    int ready = n && ((const tw__inrec *)v)->evseq == e->next_evseq;
    tw_ring_release_sc(r, 0);
    return ready;
}

static unsigned strategy_poll(void *arg, tw_reactor_now *now)
{
    tw_trade_engine *e = arg;
    (void)now;
    unsigned work = 0;
    if (e->pend_n && !flush_pending(e))
        return 0; /* an outbound ring is full: its net core must drain it */
    /* Acquire pairs with the control thread's release-store of phase. */
    int stopped = __atomic_load_n(&e->phase, __ATOMIC_ACQUIRE) == TW__PH_STOPPING;
    for (int pass = 0; pass < 4 && e->pend_n == 0; pass++) {
        unsigned got = take(e, e->ctl, stopped);
        for (uint32_t k = 0; k < e->n_gw && e->pend_n == 0; k++)
            got += take(e, tw__gw_in(e->gw[k]), stopped);
        work += got;
        if (!got)
            break; /* the next number is in no ring yet (on its way) */
    }
    if (stopped && e->pend_n == 0 && !e->strategy_stopped) {
        /* Release pairs with the net cores' acquire-load: every intent
         * written before this store is in its ring. */
        __atomic_store_n(&e->strategy_stopped, 1, __ATOMIC_RELEASE);
    }
    if (work) {
        tw__bell_wake(&e->strat_bell);
        __atomic_store_n(&e->strategy_idle, 0, __ATOMIC_RELAXED);
        return work;
    }
    tw__bell_sleep(&e->strat_bell);
    /* Work only if the next number is at a ring's head: a later one alone
     * (the next on its way from another net core, or in its spill) is
     * waited for in ppoll: its producer rings the bell after its enqueue. */
    int ready = next_ready(e, e->ctl);
    for (uint32_t k = 0; k < e->n_gw && !ready; k++)
        ready = next_ready(e, tw__gw_in(e->gw[k]));
    if (ready)
        return 1;
    /* Relaxed: a hint for the control thread's drain, which also checks
     * the rings. */
    __atomic_store_n(&e->strategy_idle, e->pend_n == 0, __ATOMIC_RELAXED);
    return 0;
}

/* ---- processes mode: the strategy process ------------------------------------------------- */

size_t tw_trade_engine_attach_sock(const tw_trade_config *cfg, char *buf)
{
    char j[TW_TRADE_STR_MAX + 16];
    tw__journal_path(cfg, j, sizeof(j));
    size_t n = strlen(j);
    if (n + 5 < TW_UNIX_PATH_MAX)
        return (size_t)snprintf(buf, TW_UNIX_PATH_MAX, "%s.sock", j);
    /* Too long for sun_path: the abstract namespace, named by the path. */
    uint64_t h = tw_fnv1a64(TW_FNV1A64_INIT, j, n);
    return (size_t)snprintf(buf, TW_UNIX_PATH_MAX, "@tickwire-%016llx", (unsigned long long)h);
}

static int attach_open(tw_trade_engine *e, tw_error *err)
{
    int rc = pthread_mutex_init(&e->figmu, NULL);
    if (rc != 0)
        return tw__err(err, -rc, "mutex: %s", strerror(rc));
    tw_trade_engine_attach_sock(e->cfg, e->att_sock);
    tw_attach_gw_cfg ac = {.sock_path = e->att_sock, .n_cores = e->n_gw,
                           .in_count = e->cfg->engine.ring_slots,
                           .out_count = e->cfg->engine.ring_slots, .journal = &e->jr,
                           .beat_timeout_ns = ATT_BEAT_TIMEOUT_NS};
    if (e->n_gw > TW_ATTACH_MAX_CORES)
        return tw__err(err, -EINVAL, "mode = processes: at most %u sessions", TW_ATTACH_MAX_CORES);
    tw_error ae = {0};
    if ((rc = tw_attach_gw_open(&e->att, &ac, &ae)) != 0)
        return tw__err(err, rc, "mode = processes: %s", ae.msg);
    /* The segment's journal_end starts at the journal's end (META, and
     * after a crash the records of the run so far). */
    __atomic_store_n(&e->att.hdr->journal_end, tw_journal_next_seq(&e->jr), __ATOMIC_RELEASE);
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

static void spawn_strategy(tw_trade_engine *e)
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
        if (++e->child_fails >= 3) {
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
        spawn_strategy(e);
}

static void attach_step(tw_trade_engine *e, int64_t now)
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
/* strategy = inline: the strategy's poll on the net cores' one loop,
 * after every session's poll (rx .. parse .. in[k]), then each session's
 * sending half (out[k] .. build .. tx), so a decision leaves in the turn,
 * the wake-up, that brought its bar. */
static unsigned inline_poll(void *arg, tw_reactor_now *now)
{
    tw_trade_engine *e = arg;
    TW_ASSERT(e->cfg->engine.strategy == TW_TRADE_STRATEGY_INLINE && !e->started_s);
    unsigned work = strategy_poll(e, now);
    if (work)
        for (uint32_t k = 0; k < e->n_gw; k++)
            work += tw__gw_send(e->gw[k], now);
    return work;
}

_Static_assert(TW_TRADE_INLINE_MAX_SESSIONS <= TW_REACTOR_MAX_FDS &&
               TW_TRADE_INLINE_MAX_SESSIONS + 1 <= TW_REACTOR_MAX_POLLS &&
               TW_TRADE_INLINE_MAX_SESSIONS <= TW_REACTOR_MAX_TIMERS,
               "strategy = inline: one loop holds every session and the strategy");

/* ---- set-up ---------------------------------------------------------------------------- */

static int cpu_of(const tw_trade_config *cfg, uint32_t i)
{
    return i < cfg->engine.n_cpus ? (int)cfg->engine.cpus[i] : -1;
}

/* The TSC's calibration (tw_tsc_default: 20 ms asleep), off the set-up's
 * path: after a crash the stores and the journal are read meanwhile, and
 * the reactors' set-up, the first to need the clock, waits for what is
 * left of it (pthread_once). */
static void *calibrate(void *arg)
{
    (void)arg;
    (void)tw_tsc_default();
    return NULL;
}

static void calibrate_beside(void)
{
    pthread_attr_t a;
    pthread_t t;
    if (pthread_attr_init(&a) != 0)
        return;
    if (pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) == 0)
        (void)pthread_create(&t, &a, calibrate, NULL); /* failed: the reactors calibrate */
    pthread_attr_destroy(&a);
}

int tw_trade_engine_create(tw_trade_engine **out, const tw_trade_config *cfg,
                           const tw_trade_engine_opts *opts, tw_error *err)
{
    *out = NULL;
    calibrate_beside();
    tw_trade_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return tw__err(err, -ENOMEM, "out of memory");
    e->procs = cfg->engine.mode == TW_TRADE_PROCESSES;
    e->att.listen_fd = e->att.conn_fd = e->att.memfd = e->att.journal_ro_fd = e->att.pidfd = -1;
    e->standby_fd = -1;
    e->created_ns = tw_clock_now_ns();
    e->cfg = cfg;
    if (opts)
        e->opts = *opts;
    if (!e->opts.latency_samples)
        e->opts.latency_samples = 65536;
    if (!e->opts.cancel_wait_ms)
        e->opts.cancel_wait_ms = 1000;
    if (!e->opts.end_wait_ms)
        e->opts.end_wait_ms = 5000;
    e->run_id = e->opts.run_id ? e->opts.run_id : (uint64_t)(tw_clock_epoch_ns() / 1000000);
    e->run_id &= TW_TRADE_RUN_ID_MASK;
    e->strat_bell.fd = -1;
    e->log = stderr;
    int rc;
    if (cfg->engine.log[0]) {
        e->log = fopen(cfg->engine.log, "a");
        if (!e->log) {
            rc = -errno;
            e->log = stderr;
            tw_trade_engine_destroy(e);
            return tw__err(err, rc, "%s: %s", cfg->engine.log, strerror(-rc));
        }
        e->own_log = 1;
    }
    if (cfg->engine.strategy_auto || cfg->engine.busy_auto) {
        fprintf(e->log, "tickwire trade: engine: %s\n", cfg->engine.auto_why);
        fflush(e->log);
    }
    if (cfg->engine.trades[0]) {
        e->trades = fopen(cfg->engine.trades, "w");
        e->trades_buf = malloc(1u << 20);
        if (!e->trades || !e->trades_buf) {
            rc = e->trades ? -ENOMEM : -errno;
            tw_trade_engine_destroy(e);
            return tw__err(err, rc, "%s: %s", cfg->engine.trades, strerror(-rc));
        }
        setvbuf(e->trades, e->trades_buf, _IOFBF, 1u << 20);
        if (tw_trade_csv_header(e->trades) != 0) {
            tw_trade_engine_destroy(e);
            return tw__err(err, -EIO, "%s: write error", cfg->engine.trades);
        }
    }
    /* The report must be writable before we trade. */
    {
        char tmp[TW_TRADE_STR_MAX + 8];
        snprintf(tmp, sizeof(tmp), "%s.tmp", cfg->engine.report);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            rc = -errno;
            tw_trade_engine_destroy(e);
            return tw__err(err, rc, "report %s: %s", cfg->engine.report, strerror(-rc));
        }
        close(fd);
        unlink(tmp);
    }
    /* The strategy. */
    tw_strategy_cfg sc;
    tw_trade_config_strategy(cfg, &sc);
    sc.hooks = (tw_strategy_hooks){.log = on_log, .trade = on_trade, .ctx = e};
    size_t bytes = tw_strategy_memsize(&sc);
    tw_error se = {0};
    if (bytes == 0) {
        (void)tw_strategy_init(NULL, 0, &sc, &se);
        tw_trade_engine_destroy(e);
        return tw__err(err, se.code ? se.code : -EINVAL, "%s: %s", cfg->path, se.msg);
    }
    e->strategy_mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!e->strategy_mem) {
        tw_trade_engine_destroy(e);
        return tw__err(err, -ENOMEM, "strategy: out of memory (%zu bytes)", bytes);
    }
    e->strategy = tw_strategy_init(e->strategy_mem, bytes, &sc, &se);
    if (!e->strategy) {
        tw_trade_engine_destroy(e);
        return tw__err(err, se.code ? se.code : -EINVAL, "%s: %s", cfg->path, se.msg);
    }
    e->out_cap = tw_strategy_max_out(e->strategy);
    e->out_buf = calloc(e->out_cap, sizeof(tw_out));
    size_t cb = tw_ring_memsize(CTL_SLOTS, sizeof(tw__inrec));
    e->ctl = aligned_alloc(64, (cb + 63) & ~(size_t)63);
    e->gw = calloc(cfg->n_sessions, sizeof(*e->gw));
    if (!e->out_buf || !e->ctl || !e->gw || tw_ring_init(e->ctl, CTL_SLOTS, sizeof(tw__inrec)) != 0) {
        tw_trade_engine_destroy(e);
        return tw__err(err, -ENOMEM, "out of memory");
    }
    int busy = cfg->engine.busy_poll != 0;
    int inl = cfg->engine.strategy == TW_TRADE_STRATEGY_INLINE;
    /* inline: the strategy's producers are its own thread; the control
     * thread's requests (KILL, a phase) are seen within the loop's
     * longest wait (1 ms; the control loop itself steps every 2 ms). */
    if ((rc = tw__bell_init(&e->strat_bell, !busy && !inl)) != 0) {
        tw_trade_engine_destroy(e);
        return tw__err(err, rc, "eventfd: %s", strerror(-rc));
    }
    /* Sessions. */
    for (uint32_t i = 0; i < cfg->n_sessions; i++) {
        if ((rc = tw__gw_create(&e->gw[i], e, i, err)) != 0) {
            tw_trade_engine_destroy(e);
            return rc;
        }
        e->n_gw++;
    }
    /* The journal; after a crash, the replay (recover.c). */
    if ((rc = tw__journal_start(e, err)) != 0) {
        tw_trade_engine_destroy(e);
        return rc;
    }
    if (e->procs && (rc = attach_open(e, err)) != 0) {
        tw_trade_engine_destroy(e);
        return rc;
    }
    /* The cores: net cores on their CPUs, then the strategy. */
    tw_reactor_opts ro = {.mode = busy ? TW_REACTOR_BUSY : TW_REACTOR_YIELD};
    tw_reactor_init(&e->rn, &ro);
    tw_reactor_init(&e->rs, &ro);
    if (inl && e->n_gw > TW_TRADE_INLINE_MAX_SESSIONS) {
        tw_trade_engine_destroy(e);
        return tw__err(err, -ENOSPC, "strategy = inline: at most %d sessions",
                       TW_TRADE_INLINE_MAX_SESSIONS);
    }
    for (uint32_t i = 0; i < e->n_gw; i++) {
        tw__gw *g = e->gw[i];
        /* inline: every session on the first loop. */
        int c = inl && i ? 0 : tw_reactor_add_core(&e->rn, cpu_of(cfg, i));
        if (c < 0 || tw_reactor_add_poll(&e->rn, c, tw__gw_poll, g) != 0 ||
            tw_reactor_add_timer(&e->rn, c, 10000000, tw__gw_timer, g) != 0 ||
            (tw__gw_fd(g) >= 0 && tw_reactor_add_fd(&e->rn, c, tw__gw_fd(g)) != 0) ||
            (tw__gw_bell(g)->fd >= 0 && tw_reactor_add_fd(&e->rn, c, tw__gw_bell(g)->fd) != 0)) {
            tw_trade_engine_destroy(e);
            return tw__err(err, -ENOSPC, "net core for session %s: more sessions than the "
                           "reactor's %d cores", cfg->sessions[i].name, TW_REACTOR_MAX_CORES);
        }
        if (e->opts.manual_net)
            (void)tw_reactor_set_mode(&e->rn, c, TW_REACTOR_BUSY);
    }
    if (inl) {
        if (tw_reactor_add_poll(&e->rn, 0, inline_poll, e) != 0) {
            tw_trade_engine_destroy(e);
            return tw__err(err, -ENOSPC, "strategy = inline: cannot set it up");
        }
        *out = e;
        return 0;
    }
    int c = e->procs ? 0 : tw_reactor_add_core(&e->rs, cpu_of(cfg, e->n_gw));
    if (!e->procs && (c < 0 || tw_reactor_add_poll(&e->rs, c, strategy_poll, e) != 0 ||
        (e->strat_bell.fd >= 0 && tw_reactor_add_fd(&e->rs, c, e->strat_bell.fd) != 0))) {
        tw_trade_engine_destroy(e);
        return tw__err(err, -ENOSPC, "strategy core: cannot set it up");
    }
    *out = e;
    return 0;
}

int tw_trade_engine_start(tw_trade_engine *e, tw_error *err)
{
    int rc;
    if (!e->procs && e->cfg->engine.strategy != TW_TRADE_STRATEGY_INLINE) {
        if ((rc = tw_reactor_start(&e->rs, err)) != 0)
            return rc;
        e->started_s = 1;
    }
    if (!e->opts.manual_net) {
        rc = tw_reactor_start(&e->rn, err);
        if (rc != 0) {
            if (e->started_s) {
                tw_reactor_stop(&e->rs);
                tw_reactor_join(&e->rs);
                e->started_s = 0;
            }
            return rc;
        }
        e->started_n = 1;
    }
    e->phase_since_ns = tw_clock_now_ns();
    if (e->procs)
        spawn_strategy(e);
    return 0;
}

void tw_trade_engine_request(tw_trade_engine *e, tw_trade_request req)
{
    /* Relaxed stores: the control step reads them; nothing else is
     * published with them (signal-handler safe). */
    if (req == TW_TRADE_REQ_TERM)
        __atomic_store_n(&e->req_term, 1, __ATOMIC_RELAXED);
    else if (req == TW_TRADE_REQ_KILL)
        __atomic_add_fetch(&e->req_kill, 1, __ATOMIC_RELAXED);
}

unsigned tw_trade_engine_poll(tw_trade_engine *e)
{
    if (!e->opts.manual_net || e->done)
        return 0;
    unsigned work = 0;
    for (int i = 0; i < e->rn.ncores; i++)
        work += tw_reactor_turn(&e->rn, i);
    return work;
}

/* ---- control ------------------------------------------------------------------------------ */

static void set_phase(tw_trade_engine *e, uint32_t ph, int64_t now)
{
    /* Release pairs with the cores' acquire-loads of phase. */
    __atomic_store_n(&e->phase, ph, __ATOMIC_RELEASE);
    e->phase_since_ns = now;
    tw__bell_ring(&e->strat_bell);
    for (uint32_t i = 0; i < e->n_gw; i++)
        tw__bell_ring(tw__gw_bell(e->gw[i]));
}

static int rings_empty(const tw_trade_engine *e)
{
    if (tw_ring_count(e->ctl))
        return 0;
    for (uint32_t i = 0; i < e->n_gw; i++)
        if (tw_ring_count(tw__gw_in(e->gw[i])))
            return 0;
    return 1;
}

static int write_results(tw_trade_engine *e, int rc, tw_error *err);

/* Ends the strategy process: the segment closes (it sees the hangup and
 * exits), bounded, then SIGKILL. */
/* Reaps pid, which is on its way out: 2 s, then SIGKILL. */
static void reap_bounded(pid_t pid)
{
    int st;
    int64_t t0 = tw_clock_now_ns();
    while (waitpid(pid, &st, WNOHANG) != pid) {
        if (tw_clock_now_ns() - t0 > 2000000000ll) {
            kill(pid, SIGKILL);
            (void)waitpid(pid, &st, 0);
            return;
        }
        tw_clock_sleep_ns(1000000);
    }
}

static void strategy_end(tw_trade_engine *e)
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

static int finish_procs(tw_trade_engine *e, tw_error *err)
{
    strategy_end(e);
    __atomic_store_n(&e->phase, TW__PH_DONE, __ATOMIC_RELEASE);
    e->done = 1;
    /* The report is the strategy's: rebuilt from the journal, every event
     * the strategy process saw, and checked against its digests. */
    int rc = tw__journal_report_replay(e, err);
    tw__journal_end(e, 1);
    return write_results(e, rc, err);
}

static int finish(tw_trade_engine *e, tw_error *err)
{
    if (e->started_n) {
        tw_reactor_stop(&e->rn);
        tw_reactor_join(&e->rn);
        e->started_n = 0;
    }
    if (e->procs)
        return finish_procs(e, err);
    /* The strategy takes what the net cores put in its rings last (the
     * final fills, the sessions going down). */
    int64_t t0 = tw_clock_now_ns();
    while (e->started_s && tw_clock_now_ns() - t0 < DRAIN_WAIT_NS &&
           !(rings_empty(e) && __atomic_load_n(&e->strategy_idle, __ATOMIC_RELAXED))) {
        tw__bell_ring(&e->strat_bell);
        tw_clock_sleep_ns(200000);
    }
    if (e->started_s) {
        tw_reactor_stop(&e->rs);
        tw_reactor_join(&e->rs);
        e->started_s = 0;
    }
    if (e->cfg->engine.strategy == TW_TRADE_STRATEGY_INLINE) {
        /* The net cores' loop is over (joined, or the caller's): this
         * thread owns the strategy now and takes what is left. */
        tw_reactor_now now = {.tsc = tw_tsc_read()};
        while (tw_clock_now_ns() - t0 < DRAIN_WAIT_NS && strategy_poll(e, &now))
            ;
    }
    __atomic_store_n(&e->phase, TW__PH_DONE, __ATOMIC_RELEASE);
    e->done = 1;
    /* The run ended (the venue's end, or TERM: logged out): the journal
     * is done, and the next start is a new run.  Only a crash leaves a
     * journal without END, which the next start resumes. */
    tw__journal_end(e, 1);
    return write_results(e, 0, err);
}

/* The report and the trades CSV (rc: an error already in err). */
static int write_results(tw_trade_engine *e, int rc, tw_error *err)
{
    if (e->trades && fflush(e->trades) != 0 && rc == 0)
        rc = tw__err(err, -EIO, "%s: write error", e->cfg->engine.trades);
    tw_trade_session_stats *ss = calloc(e->n_gw ? e->n_gw : 1, sizeof(*ss));
    if (!ss)
        return tw__err(err, -ENOMEM, "report: out of memory");
    for (uint32_t i = 0; i < e->n_gw; i++)
        tw__gw_stats(e->gw[i], &ss[i], NULL);
    tw_error re = {0};
    tw_trade_run_stats run = { .crash_loop_record = e->crash_loop_seq,
                               .crash_loop_crashes = e->crash_loop_seq ? e->crash_count : 0 };
    int r2 = tw_trade_report_write_run(e->cfg->engine.report, e->strategy, ss, e->n_gw, &run, &re);
    free(ss);
    if (r2 != 0 && rc == 0)
        rc = tw__err(err, r2, "%s", re.msg);
    fflush(e->log);
    return rc;
}

int tw_trade_engine_step(tw_trade_engine *e, tw_error *err)
{
    if (e->done)
        return 1;
    int64_t now = tw_clock_now_ns();
    if (e->procs && now - e->att_step_ns >= ATT_STEP_NS) {
        /* (A caller may step on every turn of its loop: a few system
         * calls each, so at most this often.) */
        e->att_step_ns = now;
        attach_step(e, now);
    }
    uint32_t kills = __atomic_exchange_n(&e->req_kill, 0, __ATOMIC_RELAXED);
    e->kills_pending += kills;
    while (e->procs && e->kills_pending) {
        /* Journaled (no net core's ring): the strategy process takes it in
         * its place in the stream. */
        tw_ev ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = TW_EV_KILL;
        ev.now_ns = tw_tsc_to_ns(tw_tsc_default(), tw_tsc_read());
        int rc = tw_attach_gw_append(&e->att, TW_JOURNAL_EV, &ev, NULL);
        if (rc != 0) {
            fprintf(e->log, "tickwire trade: kill switch: journal append failed: %s\n",
                    tw_strerror(rc));
            break;
        }
        e->kills_pending--;
        fprintf(e->log, "tickwire trade: kill switch (cancel, flatten, halt)\n");
    }
    while (e->kills_pending) {
        tw_ev ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = TW_EV_KILL;
        ev.now_ns = tw_tsc_to_ns(tw_tsc_default(), tw_tsc_read());
        /* Numbered only with room for it (we are the ring's one
         * producer): a number never goes missing. */
        if (tw_ring_count(e->ctl) >= tw_ring_capacity(e->ctl))
            break;
        tw__inrec rec;
        tw__journal_ev(e, &ev, &rec);
        TW_VERIFY(tw_ring_enqueue_burst_sp(e->ctl, &rec, 1) == 1);
        e->kills_pending--;
        fprintf(e->log, "tickwire trade: kill switch (cancel, flatten, halt)\n");
        tw__bell_ring(&e->strat_bell);
    }
    uint32_t ph = e->phase;
    if (ph == TW__PH_RUNNING) {
        if (__atomic_load_n(&e->req_term, __ATOMIC_RELAXED)) {
            fprintf(e->log, "tickwire trade: stopping (finish, cancel open orders, log out)\n");
            set_phase(e, TW__PH_STOPPING, now);
            if (e->procs) {
                /* The strategy process takes no bars or barriers after
                 * this record, and says so on every session's ring. */
                uint8_t z[TW_JOURNAL_PAYLOAD] = {0};
                int rc = tw_attach_gw_append(&e->att, TW__JR_STOP, z, NULL);
                if (rc != 0)
                    fprintf(e->log, "tickwire trade: journal: STOP: %s\n", tw_strerror(rc));
            }
        } else if (__atomic_load_n(&e->finished, __ATOMIC_ACQUIRE)) {
            /* Acquire pairs with the strategy core's release-store. */
            set_phase(e, TW__PH_FINISHING, now);
        }
        return 0;
    }
    int settled = 1;
    for (uint32_t i = 0; i < e->n_gw; i++)
        settled &= tw__gw_settled(e->gw[i]);
    int64_t bound = ((int64_t)e->opts.cancel_wait_ms + e->opts.end_wait_ms + 2000) * 1000000;
    if (!settled && now - e->phase_since_ns < bound)
        return 0;
    if (!settled)
        fprintf(e->log, "tickwire trade: sessions did not end within %lld ms: stopping anyway\n",
                (long long)(bound / 1000000));
    int rc = finish(e, err);
    return rc ? rc : 1;
}

int tw_trade_engine_run(tw_trade_engine *e, tw_error *err)
{
    int rc = tw_trade_engine_start(e, err);
    if (rc != 0)
        return rc;
    for (;;) {
        rc = tw_trade_engine_step(e, err);
        if (rc != 0)
            return rc < 0 ? rc : 0;
        if (e->procs && e->have_att &&
            (e->att.state == TW_ATTACH_GW_WAITING || e->att.state == TW_ATTACH_GW_LIVE ||
             e->att.state == TW_ATTACH_GW_HANDSHAKE)) {
            /* Woken by a strategy's connection, hangup or death (pidfd). */
            struct pollfd fds[3];
            int n = tw_attach_gw_pollfds(&e->att, fds, 3);
            (void)poll(fds, (nfds_t)n, (int)(STEP_SLEEP_NS / 1000000));
        } else {
            tw_clock_sleep_ns(STEP_SLEEP_NS);
        }
    }
}

/* ---- results ---------------------------------------------------------------------------- */

const tw_strategy *tw_trade_engine_strategy(const tw_trade_engine *e) { return e->strategy; }

void tw_trade_engine_session_stats(const tw_trade_engine *e, uint32_t session,
                                   tw_trade_session_stats *out)
{
    TW_VERIFY(session < e->n_gw);
    tw__gw_stats(e->gw[session], out, NULL);
}

void tw_trade_engine_gw_stats(const tw_trade_engine *e, uint32_t session, tw_trade_gw_stats *out)
{
    TW_VERIFY(session < e->n_gw);
    tw__gw_stats(e->gw[session], NULL, out);
}

size_t tw_trade_engine_latency(const tw_trade_engine *e, uint32_t session,
                               const tw_trade_latency **samples)
{
    TW_VERIFY(session < e->n_gw);
    return tw__gw_latency(e->gw[session], samples);
}

uint64_t tw_trade_engine_run_id(const tw_trade_engine *e) { return e->run_id; }

void tw_trade_engine_summary(const tw_trade_engine *e, FILE *f)
{
    uint64_t late = 0, late_bars = 0, fills = 0;
    for (uint32_t i = 0; i < e->n_gw; i++) {
        tw_trade_session_stats ss;
        tw_trade_gw_stats gs;
        tw__gw_stats(e->gw[i], &ss, &gs);
        fprintf(f,
                "tickwire trade: session %s: bars %llu (gaps %llu), orders %llu, fills %llu, "
                "rejects %llu, barrier acks %llu, reconnects %llu, resends %llu, sent %llu, "
                "received %llu, late fills %llu, intents dropped %llu\n",
                ss.name, (unsigned long long)gs.bars, (unsigned long long)gs.gap_bars,
                (unsigned long long)gs.orders_sent, (unsigned long long)gs.fills,
                (unsigned long long)gs.rejects, (unsigned long long)gs.barrier_acks,
                (unsigned long long)ss.reconnects, (unsigned long long)ss.resends,
                (unsigned long long)ss.sent, (unsigned long long)ss.received,
                (unsigned long long)gs.late_fills, (unsigned long long)gs.intents_dropped);
        late += gs.late_fills;
        late_bars += gs.late_fill_bars;
        fills += gs.fills;
    }
    tw_strategy_counters c;
    tw_strategy_counters_get(e->strategy, &c);
    double pnl = 0, spnl = 0;
    int64_t trades = 0;
    for (uint32_t i = 0; i < tw_strategy_n_instances(e->strategy); i++) {
        tw_instance_stats is;
        tw_strategy_instance(e->strategy, i, &is);
        pnl += is.pnl;
        spnl += is.signal_pnl;
        trades += is.trades;
    }
    fprintf(f,
            "tickwire trade: %u instances, %lld trades, execution PnL %.6f, signal PnL %.6f; "
            "fills on a later bar than the decision: %llu of %llu (%llu bars in all), costing "
            "%.6f PnL points (execution - signal); state %s\n",
            tw_strategy_n_instances(e->strategy), (long long)trades, pnl, spnl,
            (unsigned long long)late, (unsigned long long)fills, (unsigned long long)late_bars,
            pnl - spnl, tw_trading_state_name(c.state));
    if (e->procs && e->st_restarts) {
        /* The strategy process's restarts (each logged as it came). */
        double med[5] = {0}, v[64];
        uint32_t n = 0;
        uint64_t bars = 0;
        for (int m = 0; m < 5; m++) {
            n = 0;
            for (uint32_t i = 0; i < e->n_figs; i++) {
                const tw__resumed *r = &e->figs[i];
                if (!r->detect_ns)
                    continue;
                double rs = (double)(r->replay_end_ns - r->attach_ns) / 1e9;
                double x = m == 0   ? (double)(r->attach_ns - r->detect_ns) / 1e6
                           : m == 1 ? rs * 1e3
                           : m == 2 ? (rs > 0 ? (double)r->bars / rs : 0)
                           : m == 3 ? (double)(r->first_bar_ns - r->replay_end_ns) / 1e6
                                    : (double)(r->first_bar_ns - r->detect_ns) / 1e6;
                bars = r->bars;
                /* insertion: a handful of values */
                uint32_t j = n++;
                while (j > 0 && v[j - 1] > x) {
                    v[j] = v[j - 1];
                    j--;
                }
                v[j] = x;
            }
            med[m] = n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
        }
        fprintf(f,
                "tickwire trade: strategy process: %llu restarts, %u with figures (median): "
                "detection -> attached %.3f ms, replay %.3f ms (%.0f bars/s through the kernel; "
                "last %llu bars), resync %.3f ms; detection -> first new bar %.3f ms\n",
                (unsigned long long)e->st_restarts, n, med[0], med[1], med[2],
                (unsigned long long)bars, med[3], med[4]);
    }
    if (e->recovered) {
        /* From the engine's start (the process's, give or take the exec). */
        int64_t logon = 0;
        for (uint32_t i = 0; i < e->n_gw; i++)
            if (tw__gw_first_logon_ns(e->gw[i]) > logon)
                logon = tw__gw_first_logon_ns(e->gw[i]);
        double rs = (double)e->replay_ns / 1e9;
        fprintf(f,
                "tickwire trade: recovery: replay %.3f ms (%llu events, %llu bars: %.0f bars/s; "
                "through the strategy alone %.3f ms, %.0f bars/s), resent %llu intents, "
                "suppressed %llu; logged on at %.3f ms, first new bar at %.3f ms after the "
                "engine's start\n",
                rs * 1e3, (unsigned long long)e->replayed_events,
                (unsigned long long)e->replayed_bars, rs > 0 ? (double)e->replayed_bars / rs : 0,
                (double)e->replay_kernel_ns / 1e6,
                e->replay_kernel_ns > 0 ? (double)e->replayed_bars * 1e9 / (double)e->replay_kernel_ns
                                        : 0.0,
                (unsigned long long)e->resent, (unsigned long long)e->suppressed,
                logon ? (double)(logon - e->created_ns) / 1e6 : -1.0,
                e->first_bar_ns ? (double)(e->first_bar_ns - e->created_ns) / 1e6 : -1.0);
    }
}

void tw_trade_engine_destroy(tw_trade_engine *e)
{
    if (!e)
        return;
    if (e->started_n) {
        tw_reactor_stop(&e->rn);
        tw_reactor_join(&e->rn);
    }
    if (e->started_s) {
        tw_reactor_stop(&e->rs);
        tw_reactor_join(&e->rs);
    }
    strategy_end(e);
    tw__journal_end(e, 0);
    for (uint32_t i = 0; i < e->n_gw; i++)
        tw__gw_destroy(e->gw[i]);
    if (e->have_jmu)
        pthread_mutex_destroy(&e->jmu);
    free(e->gw);
    free(e->ctl);
    free(e->out_buf);
    free(e->strategy_mem);
    tw__bell_close(&e->strat_bell);
    if (e->trades)
        fclose(e->trades);
    free(e->trades_buf);
    if (e->own_log)
        fclose(e->log);
    free(e);
}
