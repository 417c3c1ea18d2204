/* Crash recovery end to end: a gateway (this process) journals events
 * and feeds a strategy process (this program, spawned) over the attach
 * segment; the strategy is killed again and again at seeded points of the
 * record stream: mid-replay, between reserving an outbound slot and
 * committing it, just after committing, or by the gateway (SIGKILL at a
 * progress mark).  Each time the gateway notices (pidfd), drains what was
 * committed, resets the rings, and a new strategy attaches, replays the
 * journal from the first record through a fresh core, suppresses the
 * intents the journal says were sent, and goes on from the rings.
 *
 * At the end, against the same core run once over the journal's events:
 * every intent was sent exactly once, with the same content, in the same
 * order per core; the journal holds one OUT record per intent; nothing
 * half-written was ever taken from a ring.
 *
 * Modes: `single` (one gateway thread does control and both cores) and
 * `threads` (a control thread and one thread per core: the TSan run).
 * Journal in pwrite and in mmap mode.  Yielding throughout; what is
 * checked holds wherever a kill lands.  The seed is printed; TW_SEED=N
 * repeats it. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "attach_test_util.h"
#include "tickwire/clock.h"
#include "tw_check.h"

#define CORES 2
#define WINDOW 512 /* the gateway runs at most this many records ahead of the strategy */

/* Counters the children report through a shared page. */
typedef struct shared {
    uint64_t starts;         /* strategies that attached */
    uint64_t reserve_deaths; /* died between reserve and commit */
    uint64_t replay_deaths;  /* died while replaying (seq below resume_end) */
    uint64_t suppressed;     /* intents not sent again */
    uint64_t from_journal, from_ring, ring_stale;
} shared;

/* ---- the strategy process --------------------------------------------------- */

static void bump(uint64_t *p, uint64_t v)
{
    /* Relaxed: counters read by the parent after the child is gone. */
    __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

static int strategy_run(tw_attach_st *s, shared *sh, uint8_t *sent, uint64_t n, uint64_t die_seq,
                        int die_mode);

static int child_strategy(char **argv)
{
    const char *sock = argv[0];
    uint64_t n = strtoull(argv[1], NULL, 10);
    uint64_t die_seq = strtoull(argv[2], NULL, 10);
    int die_mode = atoi(argv[3]);
    shared *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, atoi(argv[4]), 0);
    if (sh == MAP_FAILED)
        return 2;
    tw_attach_st s;
    tw_error err = {0};
    for (long tries = 0;; tries++) {
        int rc = tw_attach_st_connect(&s, sock, 60000, &err);
        if (rc == 0)
            break;
        if ((rc != -ECONNREFUSED && rc != -ENOENT) || tries > 1000000) {
            fprintf(stderr, "strategy: %s\n", err.msg);
            return 2;
        }
        sched_yield();
    }
    bump(&sh->starts, 1);
    uint8_t *sent = calloc(n + 2, 1);
    int rc = sent ? strategy_run(&s, sh, sent, n, die_seq, die_mode) : 2;
    free(sent);
    tw_attach_st_close(&s);
    return rc;
}

static int strategy_run(tw_attach_st *s, shared *sh, uint8_t *sent, uint64_t n, uint64_t die_seq,
                        int die_mode)
{
    tw_error err = {0};
    /* What the journal says was sent before we attached. */
    tw_journal_reader pr;
    tw_journal_reader_cfg pc = {.fd = s->jfd, .follow = 1, .buf_records = 512};
    if (tw_journal_reader_open(&pr, &pc, &err) != 0) {
        fprintf(stderr, "strategy: pre-scan: %s\n", err.msg);
        return 2;
    }
    tw_journal_reader_expect(&pr, s->resume_end);
    tw_journal_rec recs[64];
    while (pr.seq < s->resume_end) {
        uint64_t want = s->resume_end - pr.seq;
        int k = tw_journal_read_burst(&pr, recs, want < 64 ? (uint32_t)want : 64, &err);
        if (k <= 0) {
            fprintf(stderr, "strategy: pre-scan at %llu: %s\n", (unsigned long long)pr.seq,
                    k < 0 ? err.msg : "the journal ends early");
            return 2;
        }
        for (int i = 0; i < k; i++) {
            if (tw_journal_rec_kind(&recs[i]) != TW_JOURNAL_OUT)
                continue;
            at_out o;
            memcpy(&o, recs[i].payload, sizeof(o));
            if (!at_out_ok(&o, s->n_cores) || o.idx > n || sent[o.idx]) {
                fprintf(stderr, "strategy: OUT record %llu bad or twice\n",
                        (unsigned long long)recs[i].seq);
                return 2;
            }
            sent[o.idx] = 1;
        }
    }
    tw_journal_reader_close(&pr);
    at_core core = {0};
    uint64_t beat = 0, suppressed = 0;
    int replay_checked = 0;
    for (;;) {
        int k = tw_attach_st_next_burst(s, recs, 32, &err);
        if (k < 0) {
            fprintf(stderr, "strategy: %s\n", err.msg);
            return 2;
        }
        for (int i = 0; i < k; i++) {
            const tw_journal_rec *rec = &recs[i];
            uint32_t kind = tw_journal_rec_kind(rec);
            if (kind == AT_KIND_STOP) {
                bump(&sh->suppressed, suppressed);
                bump(&sh->from_journal, s->from_journal);
                bump(&sh->from_ring, s->from_ring);
                bump(&sh->ring_stale, s->ring_stale);
                return 0;
            }
            if (kind == TW_JOURNAL_OUT)
                continue; /* the gateway's note that an intent went out */
            at_ev e;
            memcpy(&e, rec->payload, sizeof(e));
            if (kind != TW_JOURNAL_EV || !at_ev_ok(&e)) {
                fprintf(stderr, "strategy: record %llu is not an event\n",
                        (unsigned long long)rec->seq);
                return 2;
            }
            int dying = die_seq && rec->seq >= die_seq;
            if (dying && die_mode == 0) {
                if (rec->seq < s->resume_end)
                    bump(&sh->replay_deaths, 1);
                raise(SIGKILL);
            }
            at_out o;
            if (!at_core_step(&core, &e, s->n_cores, &o))
                continue;
            if (sent[o.idx]) {
                sent[o.idx] = 0;
                suppressed++;
                continue;
            }
            tw_ring *r = tw_attach_st_out_ring(s, (uint32_t)o.core);
            void *slot;
            while (tw_ring_reserve_sp(r, 1, &slot) == 0) {
                if (tw_attach_st_check_gateway(s, tw_clock_now_ns(), 0) != 0)
                    return 3;
                tw_attach_st_beat(s, ++beat);
                sched_yield();
            }
            if (dying && die_mode == 1) {
                memcpy(slot, &o, sizeof(o) / 2); /* half written, never committed */
                bump(&sh->reserve_deaths, 1);
                raise(SIGKILL);
            }
            memcpy(slot, &o, sizeof(o));
            tw_ring_commit_sp(r, 1);
            if (dying && die_mode == 2)
                raise(SIGKILL);
        }
        if (!replay_checked && s->next_seq >= s->resume_end) {
            /* Replayed: every intent the journal says was sent came out of
             * the core again (it is deterministic), so none is left. */
            for (uint64_t i = 0; i <= n; i++)
                if (sent[i]) {
                    fprintf(stderr, "strategy: intent %llu was sent but not decided again\n",
                            (unsigned long long)i);
                    return 4;
                }
            replay_checked = 1;
        }
        tw_attach_st_beat(s, ++beat);
        if (k == 0) {
            if (tw_attach_st_check_gateway(s, tw_clock_now_ns(), 0) != 0)
                return 3;
            sched_yield();
        }
    }
}

/* ---- the gateway ------------------------------------------------------------- */

typedef struct world {
    tw_attach_gw gw;
    tw_journal j;
    shared *sh;
    int shared_fd;
    char sock[300], jpath[300];
    uint64_t n;            /* events */
    uint64_t seed, rng;    /* control's random source */
    int kills_planned;     /* children to kill in all */
    int kills_done;
    int spawned;
    /* The running child and its plan. */
    pid_t child;
    uint64_t die_seq;
    int die_mode;          /* 0..2 in the child, 3: the gateway kills it at die_seq */
    /* Cross-thread words (atomic). */
    uint64_t progress;     /* highest st_next_seq seen: paces the events */
    int finished;          /* a strategy processed STOP and exited */
    int done;              /* ... and every core has drained and reset */
    int failed;
    int produced[CORES];   /* core c put all its events */
    /* Core c's thread only. */
    uint64_t next_idx[CORES];
    int stop_put;
    uint64_t *order[CORES]; /* idx of each intent core c sent, in order */
    uint64_t n_order[CORES];
    uint64_t *sent_h;       /* idx -> h of the intent sent (core idx % CORES writes it) */
    uint8_t *sent_n;        /* idx -> times sent */
    uint64_t drained_intents;
} world;

static uint64_t wrnd(world *w, uint64_t m)
{
    w->rng = ju_mix(w->rng);
    return w->rng % m;
}

static void spawn_child(world *w)
{
    /* Kill i of the run lands near record (i + 1) * spacing of the stream
     * (every child replays from the first record), in mode i % 4. */
    w->die_seq = 0;
    w->die_mode = 0;
    int i = w->spawned;
    if (i < w->kills_planned) {
        uint64_t spacing = (w->n * 4 / 3) / (uint64_t)(w->kills_planned + 2);
        w->die_seq = (uint64_t)(i + 1) * spacing + wrnd(w, spacing / 2 + 1);
        w->die_mode = i % 4;
        /* Every fourth child dies while it replays: at a record the journal
         * already holds now (so below the end it will resume from). */
        uint64_t end = __atomic_load_n(&w->gw.hdr->journal_end, __ATOMIC_ACQUIRE);
        if (w->die_mode == 0 && end > 2)
            w->die_seq = 1 + wrnd(w, end - 1);
    }
    char n_s[32], die_s[32], mode_s[8], fd_s[16];
    snprintf(n_s, sizeof(n_s), "%llu", (unsigned long long)w->n);
    snprintf(die_s, sizeof(die_s), "%llu", (unsigned long long)(w->die_mode == 3 ? 0 : w->die_seq));
    snprintf(mode_s, sizeof(mode_s), "%d", w->die_mode);
    snprintf(fd_s, sizeof(fd_s), "%d", w->shared_fd);
    char *args[] = {"attach_recovery", "strategy", w->sock, n_s, die_s, mode_s, fd_s, NULL};
    w->child = at_spawn(args);
    w->spawned++;
    if (w->child <= 0) {
        fprintf(stderr, "attach_recovery: spawn failed\n");
        __atomic_store_n(&w->failed, 1, __ATOMIC_RELAXED);
    }
}

/* One step of the control: returns 0 to go on, 1 when done. */
static int control_step(world *w)
{
    tw_error err = {0};
    int ev = tw_attach_gw_poll(&w->gw, tw_clock_now_ns(), &err);
    if (ev < 0) {
        fprintf(stderr, "attach_recovery: gateway: %s\n", err.msg);
        __atomic_store_n(&w->failed, 1, __ATOMIC_RELAXED);
        return 1;
    }
    /* Relaxed: progress paces the producers, it orders nothing. */
    uint64_t p = __atomic_load_n(&w->gw.hdr->st_next_seq, __ATOMIC_RELAXED);
    if (p > __atomic_load_n(&w->progress, __ATOMIC_RELAXED))
        __atomic_store_n(&w->progress, p, __ATOMIC_RELAXED);
    if (ev == TW_ATTACH_EV_DETACHED) {
        int st = 0;
        if (waitpid(w->child, &st, 0) != w->child)
            st = -1;
        w->child = 0;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            __atomic_store_n(&w->finished, 1, __ATOMIC_RELEASE);
        } else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
            w->kills_done++;
            spawn_child(w);
        } else {
            fprintf(stderr, "attach_recovery: strategy ended with status 0x%x (seed %llu)\n", st,
                    (unsigned long long)w->seed);
            __atomic_store_n(&w->failed, 1, __ATOMIC_RELAXED);
            return 1;
        }
    }
    if (ev == TW_ATTACH_EV_WAITING && __atomic_load_n(&w->finished, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
        return 1;
    }
    if (w->child > 0 && w->die_mode == 3 && w->die_seq && p >= w->die_seq &&
        w->gw.state == TW_ATTACH_GW_LIVE) {
        kill(w->child, SIGKILL);
        w->die_seq = 0;
    }
    return 0;
}

static void take_intents(world *w, uint32_t c)
{
    tw_ring *r = tw_attach_gw_out_ring(&w->gw, c);
    at_out o[8];
    uint32_t k = tw_ring_dequeue_burst_sc(r, o, 8);
    for (uint32_t i = 0; i < k; i++) {
        if (!at_out_ok(&o[i], CORES) || o[i].core != c || o[i].idx > w->n) {
            fprintf(stderr, "attach_recovery: core %u took a bad intent (idx %llu)\n", c,
                    (unsigned long long)o[i].idx);
            __atomic_store_n(&w->failed, 1, __ATOMIC_RELAXED);
            return;
        }
        /* "Sent": then journaled, and so fed back to the strategy. */
        w->sent_n[o[i].idx]++;
        w->sent_h[o[i].idx] = o[i].h;
        w->order[c][w->n_order[c]++] = o[i].idx;
        if (tw_attach_gw_put(&w->gw, c, TW_JOURNAL_OUT, &o[i], NULL) != 0)
            __atomic_store_n(&w->failed, 1, __ATOMIC_RELAXED);
    }
}

/* One step of net core c: sync, take intents, put a few events. */
static void core_step(world *w, uint32_t c, uint64_t *rng)
{
    int st = tw_attach_gw_core_sync(&w->gw, c);
    if (st == TW_ATTACH_CORE_LIVE || st == TW_ATTACH_CORE_DRAIN) {
        uint64_t before = w->n_order[c];
        take_intents(w, c);
        /* Both cores may drain at once: relaxed, read after the joins. */
        if (st == TW_ATTACH_CORE_DRAIN)
            __atomic_fetch_add(&w->drained_intents, w->n_order[c] - before, __ATOMIC_RELAXED);
    }
    /* Acquire pairs with the journal end's release-store in put (our own
     * or the other core's): an estimate for pacing only. */
    uint64_t end = __atomic_load_n(&w->gw.hdr->journal_end, __ATOMIC_ACQUIRE);
    uint64_t prog = __atomic_load_n(&w->progress, __ATOMIC_RELAXED);
    if (end < prog + WINDOW && w->next_idx[c] <= w->n) {
        *rng = ju_mix(*rng);
        for (uint64_t b = 1 + *rng % 8; b > 0 && w->next_idx[c] <= w->n; b--) {
            at_ev e;
            at_ev_make(&e, w->next_idx[c]);
            if (tw_attach_gw_put(&w->gw, c, TW_JOURNAL_EV, &e, NULL) != 0)
                __atomic_store_n(&w->failed, 1, __ATOMIC_RELAXED);
            w->next_idx[c] += CORES;
        }
        if (w->next_idx[c] > w->n)
            /* Release pairs with core 0's acquire-load before STOP. */
            __atomic_store_n(&w->produced[c], 1, __ATOMIC_RELEASE);
    }
    if (c == 0 && !w->stop_put) {
        int all = 1;
        for (int i = 0; i < CORES; i++)
            all &= __atomic_load_n(&w->produced[i], __ATOMIC_ACQUIRE);
        if (all) {
            at_ev e;
            at_ev_make(&e, 0);
            if (tw_attach_gw_put(&w->gw, 0, AT_KIND_STOP, &e, NULL) != 0)
                __atomic_store_n(&w->failed, 1, __ATOMIC_RELAXED);
            w->stop_put = 1;
        }
    }
}

static int stopped(world *w)
{
    return __atomic_load_n(&w->done, __ATOMIC_ACQUIRE) || __atomic_load_n(&w->failed, __ATOMIC_RELAXED);
}

typedef struct core_arg {
    world *w;
    uint32_t c;
} core_arg;

static void *core_thread(void *p)
{
    core_arg *a = p;
    uint64_t rng = a->w->seed * 7 + a->c;
    while (!stopped(a->w)) {
        core_step(a->w, a->c, &rng);
        sched_yield();
    }
    return NULL;
}

static void *control_thread(void *p)
{
    world *w = p;
    while (!stopped(w)) {
        if (control_step(w))
            break;
        sched_yield();
    }
    return NULL;
}

/* The same core once over the journal's events, against what was sent. */
static void verify(world *w)
{
    tw_journal_reader r;
    tw_error err = {0};
    tw_journal_reader_cfg rc = {.path = w->jpath, .buf_records = 512};
    REQUIRE(tw_journal_reader_open(&r, &rc, &err) == 0);
    uint8_t *seen = calloc(w->n + 2, 1), *outs = calloc(w->n + 2, 1);
    uint8_t *decided = calloc(w->n + 2, 1);
    uint64_t *want[CORES], n_want[CORES] = {0};
    for (int c = 0; c < CORES; c++)
        want[c] = calloc(w->n + 1, sizeof(uint64_t));
    at_core core = {0};
    uint64_t events = 0, intents = 0, stops = 0;
    tw_journal_rec recs[256];
    int k;
    while ((k = tw_journal_read_burst(&r, recs, 256, &err)) > 0)
        for (int i = 0; i < k; i++) {
            uint32_t kind = tw_journal_rec_kind(&recs[i]);
            if (kind == AT_KIND_STOP) {
                stops++;
                continue;
            }
            if (kind == TW_JOURNAL_OUT) {
                at_out o;
                memcpy(&o, recs[i].payload, sizeof(o));
                CHECK(at_out_ok(&o, CORES) && o.idx <= w->n);
                if (o.idx <= w->n)
                    outs[o.idx]++;
                continue;
            }
            at_ev e;
            memcpy(&e, recs[i].payload, sizeof(e));
            CHECK(kind == TW_JOURNAL_EV && at_ev_ok(&e) && e.idx >= 1 && e.idx <= w->n);
            if (stops || e.idx < 1 || e.idx > w->n)
                continue;
            CHECKF(!seen[e.idx], "event %llu journaled twice", (unsigned long long)e.idx);
            seen[e.idx] = 1;
            events++;
            at_out o;
            if (at_core_step(&core, &e, CORES, &o)) {
                intents++;
                want[o.core][n_want[o.core]++] = o.idx;
                CHECKF(w->sent_n[o.idx] == 1 && w->sent_h[o.idx] == o.h,
                       "intent %llu: sent %u times, h %s", (unsigned long long)o.idx,
                       w->sent_n[o.idx], w->sent_h[o.idx] == o.h ? "right" : "wrong");
                w->sent_n[o.idx] = 0; /* matched */
                decided[o.idx] = 1;
            }
        }
    CHECKF(k == 0, "%s", err.msg);
    tw_journal_reader_close(&r);
    CHECK_EQ(events, w->n);
    CHECK_EQ(stops, 1);
    int bad = 0;
    for (uint64_t i = 0; i <= w->n && bad < 20; i++) {
        CHECKF(w->sent_n[i] == 0, "intent %llu sent but never decided", (unsigned long long)i);
        /* One OUT record per intent sent (they follow their events). */
        CHECKF(outs[i] == decided[i], "intent %llu: %u OUT records", (unsigned long long)i, outs[i]);
        bad += w->sent_n[i] != 0 || outs[i] != decided[i];
    }
    for (int c = 0; c < CORES; c++) {
        CHECK_EQ(w->n_order[c], n_want[c]);
        CHECK(memcmp(w->order[c], want[c], n_want[c] * sizeof(uint64_t)) == 0);
        free(want[c]);
    }
    printf("  %llu events, %llu intents; %d kills (%llu between reserve and commit, %llu mid-"
           "replay), %llu strategies attached, %llu intents not sent again, %llu drained after a "
           "death\n",
           (unsigned long long)events, (unsigned long long)intents, w->kills_done,
           (unsigned long long)w->sh->reserve_deaths, (unsigned long long)w->sh->replay_deaths,
           (unsigned long long)w->sh->starts, (unsigned long long)w->sh->suppressed,
           (unsigned long long)w->drained_intents);
    uint64_t dropped = 0;
    for (int c = 0; c < CORES; c++)
        dropped += w->gw.core[c].in_dropped;
    printf("  gateway: %llu attaches, %llu detaches (%llu gone by themselves), %llu records journal-only; "
           "last strategy: %llu from the journal, %llu from rings, %llu stale ring records\n",
           (unsigned long long)w->gw.attaches, (unsigned long long)w->gw.detaches,
           (unsigned long long)w->gw.exits, (unsigned long long)dropped,
           (unsigned long long)w->sh->from_journal, (unsigned long long)w->sh->from_ring,
           (unsigned long long)w->sh->ring_stale);
    CHECK_EQ(w->kills_done, w->kills_planned);
    CHECK(w->sh->reserve_deaths >= 1);
    CHECK(w->sh->replay_deaths >= (w->kills_planned > 4 ? 1 : 0));
    CHECK(dropped > 0); /* records were journaled while no strategy was attached */
    free(seen);
    free(outs);
    free(decided);
}

static void run(const char *dir, int threads, int mapped, uint64_t seed, uint64_t n, int kills)
{
    printf("run: %s gateway, %s journal, %llu events, %d kills, seed %llu\n",
           threads ? "threaded" : "one-thread", mapped ? "mmap" : "pwrite", (unsigned long long)n,
           kills, (unsigned long long)seed);
    fflush(stdout);
    world *w = calloc(1, sizeof(*w));
    w->n = n;
    w->seed = w->rng = seed;
    w->kills_planned = kills;
    snprintf(w->sock, sizeof(w->sock), "%s/gw.sock", dir);
    snprintf(w->jpath, sizeof(w->jpath), "%s/journal.%d%d", dir, threads, mapped);
    w->shared_fd = memfd_create("attach-recovery", 0); /* inherited by the children */
    REQUIRE(w->shared_fd >= 0 && ftruncate(w->shared_fd, 4096) == 0);
    w->sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, w->shared_fd, 0);
    REQUIRE(w->sh != MAP_FAILED);
    for (int c = 0; c < CORES; c++) {
        w->order[c] = calloc(n + 1, sizeof(uint64_t));
        w->next_idx[c] = (uint64_t)c + 1;
    }
    w->sent_h = calloc(n + 2, sizeof(uint64_t));
    w->sent_n = calloc(n + 2, 1);
    tw_error err = {0};
    tw_journal_cfg jc = {.path = w->jpath, .mmap_bytes = mapped ? 1 << 16 : 0};
    REQUIRE(tw_journal_open(&w->j, &jc, &err) == 0);
    tw_attach_gw_cfg gc = {.sock_path = w->sock, .n_cores = CORES, .in_count = 64,
                           .out_count = 16, .journal = &w->j};
    int rc = tw_attach_gw_open(&w->gw, &gc, &err);
    CHECKF(rc == 0, "%s", err.msg);
    if (rc != 0)
        return;
    spawn_child(w);
    if (threads) {
        pthread_t ct, th[CORES];
        core_arg ca[CORES];
        REQUIRE(pthread_create(&ct, NULL, control_thread, w) == 0);
        for (uint32_t c = 0; c < CORES; c++) {
            ca[c] = (core_arg){w, c};
            REQUIRE(pthread_create(&th[c], NULL, core_thread, &ca[c]) == 0);
        }
        pthread_join(ct, NULL);
        for (int c = 0; c < CORES; c++)
            pthread_join(th[c], NULL);
    } else {
        uint64_t rng[CORES] = {seed * 7, seed * 7 + 1};
        while (!stopped(w)) {
            if (control_step(w))
                break;
            for (uint32_t c = 0; c < CORES; c++)
                core_step(w, c, &rng[c]);
            sched_yield();
        }
    }
    if (w->child > 0) {
        kill(w->child, SIGKILL);
        waitpid(w->child, NULL, 0);
    }
    CHECKF(!w->failed, "the run failed (seed %llu)", (unsigned long long)seed);
    tw_attach_gw_close(&w->gw);
    tw_journal_close(&w->j);
    if (!w->failed)
        verify(w);
    munmap(w->sh, 4096);
    close(w->shared_fd);
    for (int c = 0; c < CORES; c++)
        free(w->order[c]);
    free(w->sent_h);
    free(w->sent_n);
    free(w);
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "strategy"))
        return child_strategy(argv + 2);
    int threads = argc > 1 && !strcmp(argv[1], "threads");
    const char *s = getenv("TW_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 10) : (uint64_t)getpid() ^ (uint64_t)time(NULL);
    printf("attach_recovery (%s): seed %llu (TW_SEED=%llu repeats it)\n",
           threads ? "threads" : "single", (unsigned long long)seed, (unsigned long long)seed);
    signal(SIGPIPE, SIG_IGN);
    char dir[256];
    ju_mkdir(dir, sizeof(dir), "attach");
    uint64_t n = 20000;
    int kills = 20;
#if defined(TW_TEST_ASAN) || defined(TW_TEST_TSAN)
    n = 4000;
    kills = 8;
#endif
    run(dir, threads, 0, seed, n, kills);
    run(dir, threads, 1, seed + 1, n, kills);
    ju_rmdir(dir);
    if (tw_check_failures)
        fprintf(stderr, "attach_recovery: seed %llu\n", (unsigned long long)seed);
    return tw_check_done(threads ? "attach_recovery_threads" : "attach_recovery");
}
