/* The strategy process of `[engine] mode = processes` (trade_engine.h,
 * tw_trade_strategy_attach; docs/crash.md, "Processes mode").
 *
 * It owns a tw_strategy built from the same configuration as the
 * gateway's, and nothing else: no socket to the venue, no FIX, no store.
 * Its input is the attach segment's stream (shm_attach.h): every journal
 * record in seq order, from the first, each once (the journal for what was
 * written before it attached or fell out of a full ring, the rings for
 * the rest).  So a strategy started after another one died rebuilds the
 * same state by replaying the journal through the same kernel from the
 * first bar (or, with snapshots, from the newest snapshot of the run that
 * checks out, of journal seq J: snap.c; the stream then starts at J + 1,
 * what the state had decided and maybe not sent is decided again by the
 * rule the threads-mode recovery uses, intents.h, and the snapshot's
 * gateway folds stand for the OUT records at or before J), and decides
 * again every intent its predecessors decided, with the same order ids
 * (tw_order_id(instance, decision bar)):
 *
 *   - the journal's OUT records below resume_end (the journal's end when
 *     it attached) are what the gateway sent for earlier strategies: a
 *     multiset; each intent the replay decides that is in it takes one off
 *     and is not sent again; when the replay reaches resume_end every one
 *     must have been taken (else this is not the strategy that ran: stop);
 *   - every other intent goes to its session's outbound ring, in order;
 *   - OUT records at or after resume_end are the gateway's notes of its own
 *     sends; STOP (the gateway's TERM) makes it take no more bars or
 *     barriers, as the threads-mode strategy core does.
 *
 * What it tells the gateway beside intents (engine_internal.h): STOPPED
 * after the STOP record on every session's ring (every intent decided
 * before it is ahead of it), FINISHED with its digest, and RESUMED with
 * the figures of its start once it processed its first new bar.
 *
 * It writes the trades CSV as the threads-mode strategy core does (each
 * snapshot records where its rows end; a restart cuts it there and the
 * replay writes on), and its snapshot writer prunes the gateway's journal
 * behind the oldest kept snapshot (journal_keep = snapshots). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "trade/engine_internal.h"
#include "trade/gwfold.h"
#include "trade/intents.h"

#define BURST 64
#define IDLE_SPINS 64
#define IDLE_SLEEP_NS 50000ll       /* a full outbound ring: look again this often */
#define IDLE_WAIT_NS 1000000ll      /* idle: the doorbell's bound (heartbeat, gateway checks) */
#define GW_BEAT_TIMEOUT_NS 3000000000ll /* a gateway whose beat stands still this long is gone */
#define CONNECT_FOR_NS 60000000000ll

typedef struct sp {
    const tw_trade_config *cfg;
    FILE *log;
    int own_log, quiet;
    tw_attach_st st;
    int attached;
    tw__host host;
    tw__intents sent;   /* the OUT records below resume_end (intents.h) */
    uint64_t beat;
    int stopped, finished, replayed;
    uint64_t suppressed, sent_new, events, bars;
    tw__resumed fig;
    int resumed_sent;
    tw_strategy_hooks hooks;
    /* Snapshots (snap.c): the run (META) and the journal's first seq, the
     * events taken (every EV record, as the threads-mode core counts
     * them), the loaded snapshot's journal seq and gateway folds. */
    char journal_path[TW__SNAP_DIR_MAX];
    uint64_t run_id, head_seq, ev_n, jseq;
    uint64_t stream_from;  /* the stream's first seq (after the snapshot's J) */
    int from_snap;
    tw__snapper snap;
    tw__gwfold *folds;
    tw__gwfold **fp;
    uint32_t n_folds;
    FILE *trades;          /* the trades CSV, or NULL */
    char *trades_buf;
    int kill_at;           /* tests (TW__SNAP_KILL_ENV): the point, 0: none */
    uint32_t kill_nth, kill_seen;
} sp;

/* Tests only: "AT:N" kills the strategy process (SIGKILL, itself) at
 * point AT (snapshot.h, TW_SNAP_AT_*) of its N-th snapshot write, so a
 * test kills it inside a write at a point it chose, not by timing. */
#define TW__SNAP_KILL_ENV "TW_TRADE_TEST_SNAP_KILL"

static void kill_hook(int at, void *arg)
{
    sp *p = arg; /* the writer's thread alone calls it */
    if (at == p->kill_at && ++p->kill_seen == p->kill_nth)
        kill(getpid(), SIGKILL);
}

/* ---- hooks --------------------------------------------------------------------- */

static void on_log(void *ctx, const tw_strategy_log *r)
{
    sp *p = ctx;
    if (p->replayed) /* the replay's lines were the earlier strategies' */
        tw__strategy_log(p->log, p->cfg, "strategy process: ", r);
}

static void on_trade(void *ctx, const tw_strategy_trade *t)
{
    sp *p = ctx;
    if (p->trades) /* the replay's too: the CSV was cut where its state began */
        (void)tw_trade_csv_row(p->trades, p->host.s, t);
}

/* ---- sending --------------------------------------------------------------------- */

/* Whether the gateway is still there (0), else -ECONNRESET with err. */
static int gateway_alive(sp *p, tw_error *err)
{
    int rc = tw_attach_st_check_gateway(&p->st, tw_clock_now_ns(), GW_BEAT_TIMEOUT_NS);
    if (rc == 0)
        return 0;
    return tw__err(err, -ECONNRESET, "the gateway went away (%s)",
                   rc == -ETIMEDOUT ? "its heartbeat stopped" : "the socket hung up");
}

static int send_out(sp *p, const tw_out *o, tw_error *err)
{
    TW_ASSERT(o->session < p->st.n_cores);
    tw_ring *r = tw_attach_st_out_ring(&p->st, o->session);
    while (tw_ring_enqueue_burst_sp(r, o, 1) != 1) {
        /* Full: the net core drains it (or the gateway is gone). */
        if (tw_ring_error(r, NULL) != 0)
            return tw__err(err, -EBADMSG, "outbound ring of session %u stopped", o->session);
        int rc = gateway_alive(p, err);
        if (rc != 0)
            return rc;
        tw_attach_st_beat(&p->st, ++p->beat);
        tw_clock_sleep_ns(IDLE_SLEEP_NS);
    }
    return 0;
}

/* STOPPED carries the state's digest at the STOP (0: the state is past
 * it, loaded from a snapshot). */
static int send_marker(sp *p, uint8_t type, uint16_t session, tw_error *err)
{
    tw_out o;
    memset(&o, 0, sizeof(o));
    if (type == TW__OUT_STOPPED) {
        o.type = type;
        o.session = session;
        o.order_id = p->stopped == 2 ? 0 : tw_strategy_digest(p->host.s);
    } else { /* RESUMED: the figures (engine_internal.h, tw__resumed_msg) */
        TW_ASSERT(type == TW__OUT_RESUMED && session == 0);
        tw__resumed_pack(&p->fig, &o);
    }
    return send_out(p, &o, err);
}

/* ---- the stream ------------------------------------------------------------------- */

static int check_meta(sp *p, const tw_journal_rec *rec, tw_error *err)
{
    tw__jr_meta m;
    int rc = tw__evlog_meta_check(rec, p->cfg, &m);
    p->run_id = m.run_id;
    if (rc == -TW_EFORMAT)
        return tw__err(err, -TW_EFORMAT, "the journal's first record is not the engine's META");
    if (rc != 0)
        return tw__err(err, -TW_EFORMAT, "the gateway's journal is of another configuration "
                       "(sessions, instruments, instances, fee or risk differ from %s)",
                       p->cfg->path);
    return 0;
}

/* The journal's first record (the run's META: seq 1, or the first
 * segment's preamble after pruning): the run, checked. */
static int read_head(sp *p, tw_error *err)
{
    tw_jseg_reader r;
    tw_journal_rec rec;
    int rc = tw_jseg_reader_open(&r, p->st.jpath, 0, 1, err);
    if (rc != 0)
        return rc;
    int k = tw_jseg_read_burst(&r, &rec, 1, err);
    tw_jseg_reader_close(&r);
    if (k < 0)
        return k;
    if (k == 0)
        return tw__err(err, -TW_EFORMAT, "the journal has no META record");
    p->head_seq = rec.seq;
    return check_meta(p, &rec, err);
}

static int add_out(void *ctx, const tw_out *o)
{
    return tw__intents_add_out(ctx, o);
}

/* What the gateway sent before we attached: the OUT records from seq from
 * to resume_end (after a snapshot: those after it, and the ones its folds
 * know that its state may decide again). */
static int prescan(sp *p, uint64_t from, tw_error *err)
{
    for (uint32_t i = 0; i < p->n_folds && p->from_snap; i++)
        if (tw__gwfold_outs(&p->folds[i], add_out, &p->sent) != 0)
            return tw__err(err, -ENOMEM, "out of memory");
    if (from >= p->st.resume_end)
        return 0;
    tw_jseg_follow r;
    int k = tw_jseg_follow_open(&r, p->st.jpath, from, 4096, err);
    if (k != 0)
        return k;
    tw_jseg_follow_expect(&r, p->st.resume_end);
    tw_journal_rec recs[BURST];
    int rv = 0;
    while (r.seq < p->st.resume_end && rv == 0) {
        uint64_t want = p->st.resume_end - r.seq;
        k = tw_jseg_follow_read(&r, recs, want < BURST ? (uint32_t)want : BURST, err);
        if (k <= 0) {
            rv = k < 0 ? k : tw__err(err, -TW_EFORMAT, "the journal ends at %llu, before the "
                                     "%llu the gateway said", (unsigned long long)r.seq,
                                     (unsigned long long)p->st.resume_end);
            break;
        }
        if ((rv = tw__intents_add_records(&p->sent, recs, (uint64_t)k, p->st.resume_end)) != 0)
            tw__err(err, rv, "out of memory");
    }
    tw_jseg_follow_close(&r);
    return rv;
}

static int on_ev(sp *p, const tw_journal_rec *rec, tw_error *err)
{
    tw_ev ev;
    memcpy(&ev, rec->payload, sizeof(ev));
    int replay = rec->seq < p->st.resume_end;
    p->ev_n++;
    if (replay)
        ev.tsc_rx = ev.tsc_tcp = ev.tsc_parse = 0; /* the live run's stamps */
    if (p->stopped && (ev.type == TW_EV_BAR || ev.type == TW_EV_BARRIER))
        return 0; /* TERM: no new decisions (as the threads-mode core) */
    p->events += replay;
    p->bars += replay && ev.type == TW_EV_BAR;
    size_t m = tw_strategy_on_event(p->host.s, &ev, p->host.out, p->host.out_cap);
    uint64_t t = tw_tsc_read();
    for (size_t i = 0; i < m; i++) {
        tw_out *o = &p->host.out[i];
        o->tsc_decision = replay ? 0 : t;
        if (o->type == TW_OUT_FINISHED) {
            o->session = 0;
            o->order_id = tw_strategy_digest(p->host.s); /* the gateway's replay checks it */
            p->finished = 1;
        }
        if (tw__intents_take(&p->sent, o) != TW__INTENT_NEW) {
            p->suppressed++;
            continue;
        }
        if (o->session >= p->st.n_cores)
            return tw__err(err, -EINVAL, "an intent for session %u of %u", o->session,
                           p->st.n_cores);
        int rc = send_out(p, o, err);
        if (rc != 0)
            return rc;
        p->sent_new++;
    }
    /* Every intent of the event is in its ring: nothing pending. */
    const int64_t now = tw_tsc_to_ns(tw_tsc_default(), t);
    if (!replay && tw__snapper_due(&p->snap, p->ev_n, now))
        tw__snapper_take_at(&p->snap, p->host.s, p->ev_n, rec->seq, NULL, 0, now);
    if (!replay && ev.type == TW_EV_BAR && !p->resumed_sent) {
        p->fig.first_bar_ns = tw_clock_now_ns();
        p->resumed_sent = 1;
        return send_marker(p, TW__OUT_RESUMED, 0, err);
    }
    return 0;
}

static int on_rec(sp *p, const tw_journal_rec *rec, tw_error *err)
{
    switch (tw_journal_rec_kind(rec)) {
    case TW_JOURNAL_EV:
        return on_ev(p, rec, err);
    case TW__JR_STOP:
        if (p->stopped)
            return 0;
        p->stopped = 1;
        for (uint32_t s = 0; s < p->st.n_cores; s++) {
            int rc = send_marker(p, TW__OUT_STOPPED, (uint16_t)s, err);
            if (rc != 0)
                return rc;
        }
        return 0;
    default:
        return 0; /* META (checked), OUT (pre-scanned, or the gateway's notes), END */
    }
}

static int replay_done(sp *p, tw_error *err)
{
    p->replayed = 1;
    p->fig.replay_end_ns = tw_clock_now_ns();
    p->fig.events = p->events;
    p->fig.bars = p->bars;
    /* From a snapshot: the acks, logouts and FINISHED decided before it
     * are not decided again (its orders and cancels are settled). */
    uint64_t left = tw__intents_left(&p->sent, p->from_snap ? TW__INTENT_ORDERS : TW__INTENT_ALL);
    if (left) {
        /* Deterministic cores decide again what they decided: one that
         * does not is not the strategy that ran. */
        return tw__err(err, -TW_EFORMAT, "%llu intents the gateway sent for earlier strategies "
                       "were not decided again by the replay: this is not the strategy that "
                       "ran; refusing to trade on", (unsigned long long)left);
    }
    if (!p->quiet)
        fprintf(p->log, "tickwire trade: strategy process %d: replayed %llu events (%llu bars) "
                "of %llu journal records from seq %llu in %.3f ms, %llu intents already sent, "
                "%llu sent\n", (int)getpid(),
                (unsigned long long)p->events, (unsigned long long)p->bars,
                (unsigned long long)(p->st.resume_end - p->stream_from),
                (unsigned long long)p->stream_from,
                (double)(p->fig.replay_end_ns - p->fig.attach_ns) / 1e6,
                (unsigned long long)p->suppressed, (unsigned long long)p->sent_new);
    fflush(p->log);
    return 0;
}

/* The newest snapshot of the run that checks out (snap.c, as the
 * threads-mode recovery): its state and the gateway's folds at its
 * journal seq J; the stream then starts at J + 1.  None, or one that does
 * not load: the replay from the journal's first record, which must then
 * be seq 1 (else the books cannot be rebuilt: refused).  The trades CSV
 * placed: cut where the snapshot's rows end, or emptied. */
static int load_snapshot(sp *p, tw_error *err)
{
    const tw_trade_config *cfg = p->cfg;
    int sr = -ENOENT;
    tw_error se = {0};
    if (cfg->engine.snapshot_every || cfg->engine.snapshot_interval_ms) {
        p->folds = calloc(cfg->n_sessions ? cfg->n_sessions : 1, sizeof(*p->folds));
        p->fp = calloc(cfg->n_sessions ? cfg->n_sessions : 1, sizeof(*p->fp));
        if (!p->folds || !p->fp)
            return tw__err(err, -ENOMEM, "out of memory");
        for (; p->n_folds < cfg->n_sessions; p->n_folds++) {
            p->fp[p->n_folds] = &p->folds[p->n_folds];
            if (tw__gwfold_init(&p->folds[p->n_folds], cfg, p->n_folds) != 0)
                return tw__err(err, -ENOMEM, "out of memory");
        }
        tw__snap_gw ga = {.cfg = cfg, .journal_path = p->st.jpath, .end = p->st.resume_end,
                          .folds = p->fp, .need_csv = p->trades};
        sr = tw__snap_newest_gw(p->log, p->journal_path, p->run_id, p->host.s, p->host.out_cap,
                                tw__snap_accept_gw, &ga, &p->ev_n, &p->jseq, &se);
        if (sr == 0) {
            p->from_snap = 1;
            p->finished = tw_strategy_finished(p->host.s);
            fprintf(p->log, "tickwire trade: strategy process %d: recovering from the snapshot "
                    "of event %llu (journal seq %llu)\n", (int)getpid(),
                    (unsigned long long)p->ev_n, (unsigned long long)p->jseq);
            fflush(p->log);
            if (p->trades && tw__trades_reset(p->trades, ga.csv_len) != 0)
                return tw__err(err, -EIO, "%s: write error", cfg->engine.trades);
            return 0;
        }
        p->ev_n = p->jseq = 0;
        for (uint32_t i = 0; i < p->n_folds; i++)
            tw__gwfold_reset(&p->folds[i]);
        if (sr != -ENOENT)
            fprintf(p->log, "tickwire trade: strategy process %d: snapshot not used: %s\n",
                    (int)getpid(), se.msg);
        fflush(p->log);
    }
    if (p->head_seq != 1)
        return tw__err(err, -TW_EUNRECOVERABLE, "refusing to trade: the journal starts at seq "
                       "%llu (the records before it pruned) and no snapshot that checks out "
                       "covers them", (unsigned long long)p->head_seq);
    if (p->trades && tw__trades_reset(p->trades, -1) != 0)
        return tw__err(err, -EIO, "%s: write error", cfg->engine.trades);
    /* A load that failed may have left part of a state: again. */
    return sr == -ENOENT ? 0 : tw__host_build(&p->host, cfg, &p->hooks, err);
}

/* An intent the loaded state had decided and maybe not sent: sent once. */
static int redecide(void *ctx, const tw_out *o)
{
    sp *p = ctx;
    if (tw__intents_take(&p->sent, o) != TW__INTENT_NEW) {
        p->suppressed++;
        return 0;
    }
    if (o->session >= p->st.n_cores)
        return -EINVAL;
    tw_error e = {0};
    int rc = send_out(p, o, &e);
    p->sent_new += rc == 0;
    return rc;
}

/* After the prescan, from a snapshot: what its state had decided and
 * maybe not sent is decided again (sent once), the rest of what it
 * decided is settled; a STOP at or before J is said again (the rings may
 * be a new gateway's); the stream starts after J. */
static int resume_snapshot(sp *p, tw_error *err)
{
    int rc = tw__intents_of_state(p->host.s, redecide, p);
    if (rc != 0)
        return tw__err(err, rc, "sending the snapshot's open intents: %s", tw_strerror(rc));
    tw__intents_settle_state(&p->sent, p->host.s);
    if (p->n_folds && p->folds[0].stopped) {
        p->stopped = 2; /* no digest: the state is past the STOP */
        for (uint32_t s = 0; s < p->st.n_cores; s++)
            if ((rc = send_marker(p, TW__OUT_STOPPED, (uint16_t)s, err)) != 0)
                return rc;
    }
    if (tw_attach_st_skip_to(&p->st, p->jseq + 1) != 0)
        return tw__err(err, -EINVAL, "the snapshot's journal seq %llu is not in the gateway's "
                       "stream (%llu to %llu)", (unsigned long long)p->jseq,
                       (unsigned long long)p->st.next_seq, (unsigned long long)p->st.resume_end);
    return 0;
}

/* The trades CSV, not emptied yet (load_snapshot places it). */
static int open_trades(sp *p, tw_error *err)
{
    const char *path = p->cfg->engine.trades;
    if (!path[0])
        return 0;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    p->trades = fd >= 0 ? fdopen(fd, "r+") : NULL;
    p->trades_buf = malloc(1u << 20);
    if (!p->trades || !p->trades_buf) {
        int rc = p->trades ? -ENOMEM : -errno;
        if (fd >= 0 && !p->trades)
            close(fd);
        return tw__err(err, rc, "%s: %s", path, strerror(-rc));
    }
    setvbuf(p->trades, p->trades_buf, _IOFBF, 1u << 20);
    return 0;
}

static int run(sp *p, tw_error *err)
{
    tw_journal_rec recs[BURST];
    uint32_t idle = 0;
    if (p->st.next_seq >= p->st.resume_end) {
        int rc = replay_done(p, err);
        if (rc != 0)
            return rc;
    }
    for (;;) {
        int k = tw_attach_st_next_burst(&p->st, recs, BURST, err);
        if (k < 0)
            return k;
        for (int i = 0; i < k; i++) {
            /* Where a crash of the kernel would leave us: the gateway's
             * crash-loop rule reads it after our death. */
            __atomic_store_n(&p->st.hdr->st_cur_seq, recs[i].seq, __ATOMIC_RELAXED);
            int rc = on_rec(p, &recs[i], err);
            if (rc != 0)
                return rc;
            if (!p->replayed && recs[i].seq + 1 >= p->st.resume_end &&
                (rc = replay_done(p, err)) != 0)
                return rc;
        }
        tw_attach_st_beat(&p->st, ++p->beat);
        if (k > 0) {
            /* The burst's intents are committed: wakes a net core that
             * waits for them (no system call for one that is awake). */
            tw_attach_st_done(&p->st);
            idle = 0;
            continue;
        }
        int rc = gateway_alive(p, err);
        if (rc != 0)
            return (p->finished || p->stopped) ? 0 : rc; /* the run's end, or a dead gateway */
        if (++idle < IDLE_SPINS)
            sched_yield();
        else
            (void)tw_attach_st_wait(&p->st, IDLE_WAIT_NS); /* the gateway's put rings it */
    }
}

static int attach(sp *p, const char *sock, tw_error *err)
{
    int64_t t0 = tw_clock_now_ns();
    for (;;) {
        int rc = tw_attach_st_connect(&p->st, sock, 10000, err);
        if (rc == 0)
            return 0;
        /* Refused (another is attached: the one we replace is being
         * reaped), not there yet, or the gateway is resetting. */
        if ((rc != -ECONNREFUSED && rc != -ENOENT && rc != -ETIMEDOUT && rc != -ECONNRESET) ||
            tw_clock_now_ns() - t0 > CONNECT_FOR_NS)
            return rc;
        tw_clock_sleep_ns(1000000);
    }
}

int tw_trade_strategy_attach(const tw_trade_config *cfg, const char *sock, int quiet,
                             tw_error *err)
{
    sp *p = calloc(1, sizeof(*p));
    if (!p)
        return tw__err(err, -ENOMEM, "out of memory");
    p->cfg = cfg;
    p->quiet = quiet;
    p->log = stderr;
    int rc = 0;
    tw_snap_writer_stats ss;
    if (cfg->engine.log[0]) {
        p->log = fopen(cfg->engine.log, "a");
        if (!p->log) {
            rc = tw__err(err, -errno, "%s: %s", cfg->engine.log, strerror(errno));
            p->log = stderr;
            goto out;
        }
        p->own_log = 1;
    }
    p->hooks = (tw_strategy_hooks){.log = on_log, .trade = on_trade, .ctx = p};
    if ((rc = tw__host_build(&p->host, cfg, &p->hooks, err)) != 0)
        goto out;
    tw__evlog_path(cfg, p->journal_path, sizeof(p->journal_path));
    const char *sk = getenv(TW__SNAP_KILL_ENV);
    if (sk && sscanf(sk, "%d:%u", &p->kill_at, &p->kill_nth) != 2)
        p->kill_at = 0;
    const char *gp = getenv(TW__GATEWAY_PID_ENV);
    if (gp) {
        /* Spawned by a gateway: die with it.  getppid() after the prctl
         * closes the race with a gateway that died before it (we were
         * reparented already). */
        pid_t g = (pid_t)atoi(gp);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != g) {
            rc = tw__err(err, -ESRCH, "the gateway (pid %d) that started this strategy is gone",
                         (int)g);
            goto out;
        }
    }
    const char *sb = getenv(TW__STANDBY_ENV);
    if (sb) {
        /* A standby: built, now wait for the gateway's go (EOF: not
         * needed, or the gateway is gone). */
        int fd = atoi(sb);
        char c;
        ssize_t k;
        while ((k = read(fd, &c, 1)) < 0 && errno == EINTR)
            ;
        close(fd);
        if (k != 1)
            goto out;
    }
    p->fig.start_ns = tw_clock_now_ns(); /* configuration read, strategy built */
    if (tw__intents_init(&p->sent, 1024) != 0) {
        rc = tw__err(err, -ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = attach(p, sock, err)) != 0)
        goto out;
    p->attached = 1;
    p->fig.attach_ns = tw_clock_now_ns();
    if (p->st.n_cores != cfg->n_sessions) {
        rc = tw__err(err, -EPROTO, "the gateway has %u net cores, %s has %u sessions",
                     p->st.n_cores, cfg->path, cfg->n_sessions);
        goto out;
    }
    if (!quiet)
        fprintf(p->log, "tickwire trade: strategy process %d attached to %s (generation %llu; "
                "journal records to replay: %llu)\n", (int)getpid(), sock,
                (unsigned long long)p->st.generation,
                (unsigned long long)(p->st.resume_end - p->st.next_seq));
    fflush(p->log);
    if ((rc = read_head(p, err)) != 0 || (rc = open_trades(p, err)) != 0 ||
        (rc = load_snapshot(p, err)) != 0 ||
        (rc = prescan(p, p->from_snap ? p->jseq + 1 : p->head_seq, err)) != 0 ||
        (p->from_snap && (rc = resume_snapshot(p, err)) != 0))
        goto out;
    p->stream_from = p->st.next_seq;
    if ((rc = tw__snapper_open_gw(&p->snap, cfg, p->journal_path, p->run_id, p->host.s,
                                  p->host.out_cap, p->ev_n,
                                  tw_tsc_to_ns(tw_tsc_default(), tw_tsc_read()),
                                  p->kill_at ? kill_hook : NULL, p,
                                  p->from_snap ? p->folds : NULL, p->jseq, p->trades, err)) != 0)
        goto out;
    rc = run(p, err);
out:
    memset(&ss, 0, sizeof(ss));
    if (p->snap.w) {
        tw_snap_writer_flush(p->snap.w);
        tw_snap_writer_stats_get(p->snap.w, &ss);
    }
    if (rc == 0 && !quiet) {
        fprintf(p->log, "tickwire trade: strategy process %d: the gateway ended the run "
                "(snapshots: %llu written, %llu skipped with the writer busy, %llu failed)\n",
                (int)getpid(), (unsigned long long)ss.written, (unsigned long long)ss.skipped,
                (unsigned long long)ss.failed);
        tw__snapper_log_pruned(&p->snap, p->log, "strategy process: ");
    }
    tw__snapper_close(&p->snap); /* what was committed is written */
    if (p->attached)
        tw_attach_st_close(&p->st);
    if (p->trades && fclose(p->trades) != 0 && rc == 0)
        rc = tw__err(err, -EIO, "%s: write error", cfg->engine.trades);
    free(p->trades_buf);
    for (uint32_t i = 0; i < p->n_folds; i++)
        tw__gwfold_free(&p->folds[i]);
    free(p->folds);
    free(p->fp);
    if (p->own_log)
        fclose(p->log);
    tw__intents_free(&p->sent);
    tw__host_free(&p->host);
    free(p);
    return rc;
}
