/* Recovery: replay only (docs/crash.md, "Wiring it into the engine";
 * live.md, "Crash isolation and recovery").  It reads the event log's
 * records (evlog.c) and feeds them to the strategy host (host.c) and the
 * net cores (gw_restore.c); it appends nothing but its notes (what it
 * settled without an OUT record, below), through the event log.
 *
 * A start that finds a journal without END is a restart after a crash:
 *
 *   1. the intents already sent: the journal's OUT records (after a
 *      snapshot: those after it, and those its folds know that its state
 *      may decide again), and every
 *      NewOrderSingle / OrderCancelRequest of this run in the FIX stores
 *      (a message is stored before it goes out and journaled after, so a
 *      crash between the two leaves it in the store only);
 *   2. a fresh strategy is fed every EV record from the first (the kernel
 *      is path dependent), or the strategy and the net cores' folds are
 *      loaded from the newest snapshot that carries both, of journal seq
 *      J, and fed only the records after J; each intent it decides is
 *      looked up in the set of what was sent (intents.h, which the strategy process asks
 *      too): one that was sent is not sent again (order ids are
 *      (instance, decision bar): a replayed decision has the id it had);
 *      an order or cancel that was not sent goes into its session's ring,
 *      to be sent once the session is logged on again; a barrier ack that was not sent is
 *      dropped (the venue asks again after the Logon: a TestRequest is
 *      never resent); FINISHED is FINISHED;
 *   3. every order the previous run sent must have been decided again
 *      (else the strategy is not the one that ran: refused);
 *   4. the net cores take their state from the same records, through
 *      their folds (gwfold.h: the snapshot's, or the zero fold): last bars
 *      forwarded (a bar the venue resends as PossDup is not forwarded
 *      again), open orders, orders done (an execution of one the venue
 *      resends is not applied twice), the counters; a session that was up
 *      is told DOWN (its connection died with the process).
 *
 * The FIX sessions then resume from their stores (ResendRequest both
 * ways, PossDup): what the venue sent after our last persisted inbound
 * number comes again and is filtered as above. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tickwire/journal_seg.h"
#include "tickwire/util.h"
#include "trade/engine_internal.h"
#include "trade/gwfold.h"
#include "trade/intents.h"

#define READ_BURST 512

typedef struct scan {
    uint64_t n_recs, n_ev, n_out, n_orders;
    int have_meta, ended;
    tw__jr_meta meta;
} scan;

/* The journal's records from seq from (0: its first) on, every record
 * checked (the reader's rules), read once into memory: the passes below
 * go over them.  0 or a negative errno. */
static int load_from(tw_trade_engine *e, uint64_t from, tw_journal_rec **out, uint64_t *n_out,
                     tw_error *err)
{
    tw_jseg_reader r;
    tw_error je = {0};
    int rc = tw_jseg_reader_open(&r, e->journal_path, from, 8192, &je);
    if (rc != 0)
        return tw__err(err, rc, "%s", je.msg);
    /* The writer's open checked them all and counted them: no need to
     * read (and scan) the zeros a mapped journal has after them. */
    const uint64_t first = r.cur.seq, end = tw_jseg_next_seq(&e->jr);
    const uint64_t total = end > first ? end - first : 0;
    uint64_t cap = total + 16, n = 0; /* no realloc: the writer counted them */
    tw_journal_rec *v = malloc(cap * sizeof(*v));
    if (!v)
        rc = tw__err(err, -ENOMEM, "journal: out of memory");
    while (rc == 0 && n < total) {
        uint64_t want = total - n < READ_BURST ? total - n : READ_BURST;
        int k = tw_jseg_read_burst(&r, v + n, (uint32_t)want, &je);
        if (k < 0)
            rc = tw__err(err, k, "%s", je.msg);
        if (k <= 0)
            break;
        n += (uint64_t)k;
    }
    tw_jseg_reader_close(&r);
    if (rc != 0) {
        free(v);
        return rc;
    }
    *out = v;
    *n_out = n;
    return 0;
}

static int load_all(tw_trade_engine *e, tw_journal_rec **out, uint64_t *n_out, tw_error *err)
{
    return load_from(e, 0, out, n_out, err);
}

/* The one record of seq (0: the first).  0 or a negative errno. */
static int read_one(tw_trade_engine *e, uint64_t seq, tw_journal_rec *rec, tw_error *err)
{
    tw_jseg_reader r;
    tw_error je = {0};
    int rc = tw_jseg_reader_open(&r, e->journal_path, seq, 1, &je);
    if (rc == 0) {
        int k = tw_jseg_read_burst(&r, rec, 1, &je);
        rc = k == 1 ? 0 : k < 0 ? k : -TW_EFORMAT;
        tw_jseg_reader_close(&r);
    }
    return rc ? tw__err(err, rc, "journal %s: record %llu: %s", e->journal_path,
                        (unsigned long long)seq, je.msg[0] ? je.msg : "not there") : 0;
}

/* Calls fn on every record in order.  0, or fn's error (err names the
 * record). */
static int each(tw_trade_engine *e, const tw_journal_rec *v, uint64_t n,
                int (*fn)(tw_trade_engine *, const tw_journal_rec *, void *), void *ctx,
                tw_error *err)
{
    for (uint64_t i = 0; i < n; i++) {
        int rc = fn(e, &v[i], ctx);
        if (rc != 0)
            return tw__err(err, rc, "journal %s: record %llu (kind %u): not what this engine "
                           "wrote, or not for this configuration", e->journal_path,
                           (unsigned long long)v[i].seq, tw_journal_rec_kind(&v[i]));
    }
    return 0;
}

static int scan_rec(tw_trade_engine *e, const tw_journal_rec *rec, void *ctx)
{
    scan *s = ctx;
    uint32_t k = tw_journal_rec_kind(rec);
    if (s->n_recs++ == 0) {
        if (k != TW__JR_META)
            return -TW_EFORMAT;
        s->have_meta = tw__evlog_meta_check(rec, NULL, &s->meta) == 0;
        return s->have_meta ? 0 : -TW_EFORMAT;
    }
    if (s->ended)
        return -TW_EFORMAT; /* nothing follows END */
    if (k == TW__JR_META) /* a segment's first record: the run's META again */
        return memcmp(rec->payload, &s->meta, sizeof(s->meta)) == 0 ? 0 : -TW_EFORMAT;
    if (k == TW_JOURNAL_EV) {
        s->n_ev++;
    } else if (k == TW_JOURNAL_OUT) {
        const tw_out *o = (const tw_out *)rec->payload;
        if (o->session >= e->n_gw)
            return -TW_EFORMAT;
        s->n_out++;
        s->n_orders += o->type == TW_OUT_ORDER;
    } else if (k == TW__JR_END) {
        s->ended = 1;
    } else if (k == TW__JR_STOP) {
        /* processes mode: the gateway's TERM */
    } else {
        return -TW_EFORMAT;
    }
    return 0;
}

typedef struct replay_ctx {
    tw__intents *sent;
    tw_out *unsent;      /* intents decided and never sent, in order */
    uint64_t n_unsent, cap_unsent;
    tw_out *notes;       /* intents settled without an OUT record (journaled after) */
    uint64_t n_notes, cap_notes;
    uint64_t acks_dropped;
    uint64_t bars;
    int stopped; /* a STOP record came: no more bars or barriers (processes mode) */
    tw__gwfold **folds; /* the net cores', by session */
    uint64_t n_ev;      /* EV records replayed */
} replay_ctx;

static int list_add(tw_out **v, uint64_t *n, uint64_t *cap, const tw_out *o)
{
    if (*n == *cap) {
        uint64_t c = *cap ? 2 * *cap : 256;
        tw_out *p = realloc(*v, c * sizeof(tw_out));
        if (!p)
            return -ENOMEM;
        *v = p;
        *cap = c;
    }
    (*v)[(*n)++] = *o;
    return 0;
}

static int replay_ev(tw_trade_engine *e, const tw_journal_rec *rec, replay_ctx *rc);
static int decided(tw_trade_engine *e, replay_ctx *rc, const tw_out *o);

static int replay_rec(tw_trade_engine *e, const tw_journal_rec *rec, void *ctx)
{
    replay_ctx *rc = ctx;
    /* The net cores' part first (their folds: every kind they take). */
    int r = tw__gwfold_rec(rc->folds, e->n_gw, rec);
    if (r != 0)
        return r;
    uint32_t k = tw_journal_rec_kind(rec);
    if (k == TW__JR_STOP)
        rc->stopped = 1;
    if (k != TW_JOURNAL_EV)
        return 0;
    rc->n_ev++;
    return replay_ev(e, rec, rc);
}

static int replay_ev(tw_trade_engine *e, const tw_journal_rec *rec, replay_ctx *rc)
{
    tw_ev ev;
    memcpy(&ev, rec->payload, sizeof(ev));
    /* The stamps were the live run's: the replay's intents carry none. */
    ev.tsc_rx = ev.tsc_tcp = ev.tsc_parse = 0;
    if (rc->stopped && (ev.type == TW_EV_BAR || ev.type == TW_EV_BARRIER))
        return 0; /* as the strategy process did */
    rc->bars += ev.type == TW_EV_BAR;
    e->replayed_events++;
    size_t m = tw_strategy_on_event(e->host.s, &ev, e->host.out, e->host.out_cap);
    for (size_t i = 0; i < m; i++) {
        int r = decided(e, rc, &e->host.out[i]);
        if (r != 0)
            return r;
    }
    return 0;
}

/* An intent the strategy decided (again): sent already, in a store only,
 * or to send. */
static int decided(tw_trade_engine *e, replay_ctx *rc, const tw_out *o)
{
    e->replayed_intents++;
    tw__intent_seen seen = tw__intents_take(rc->sent, o);
    if (o->type == TW_OUT_FINISHED) {
        /* FINISHED is FINISHED, said before or not.  Release pairs with
         * the control thread's acquire-load. */
        __atomic_store_n(&e->finished, 1, __ATOMIC_RELEASE);
        return 0;
    }
    if (o->session >= e->n_gw)
        return -TW_EFORMAT;
    if (seen != TW__INTENT_NEW) {
        e->suppressed++;
        if (seen == TW__INTENT_STORED) {
            if (o->type == TW_OUT_ORDER)
                tw__gw_restore_order(e->gw[o->session], o); /* in the store only */
            if (list_add(&rc->notes, &rc->n_notes, &rc->cap_notes, o) != 0)
                return -ENOMEM;
        }
        return 0;
    }
    if (o->type == TW_OUT_BARRIER_ACK) {
        rc->acks_dropped++; /* the venue asks again after the Logon */
        if (list_add(&rc->notes, &rc->n_notes, &rc->cap_notes, o) != 0)
            return -ENOMEM;
        return 0;
    }
    return list_add(&rc->unsent, &rc->n_unsent, &rc->cap_unsent, o) != 0 ? -ENOMEM : 0;
}

typedef struct store_ctx {
    tw__intents *sent;
    int rc;
} store_ctx;

static void store_order(void *ctx, char kind, uint64_t id)
{
    store_ctx *c = ctx;
    if (c->rc == 0)
        c->rc = tw__intents_add_stored(c->sent, kind, id);
}


static int redecide(void *ctx, const tw_out *o)
{
    void **c = ctx;
    return decided(c[0], c[1], o);
}

/* The state loaded from a snapshot: what it had decided and maybe not
 * sent is decided again, everything else it had decided is settled
 * (intents.h, the strategy process's rule too). */
static int from_snapshot(tw_trade_engine *e, replay_ctx *rp, tw__intents *sent)
{
    void *c[2] = {e, rp};
    int r = tw__intents_of_state(e->host.s, redecide, c);
    if (r != 0)
        return r;
    if (tw_strategy_finished(e->host.s))
        __atomic_store_n(&e->finished, 1, __ATOMIC_RELEASE);
    tw__intents_settle_state(sent, e->host.s);
    return 0;
}

static int add_out(void *ctx, const tw_out *o)
{
    return tw__intents_add_out(ctx, o);
}

/* The snapshot the replay starts from (threads mode): the strategy's
 * state and the net cores' folds at its journal seq (*jseq), the folds
 * copied for the snapshot writer to go on from; *events: the events the
 * state reflects.  1 when one is used, 0 when none (the strategy and the
 * folds fresh: the replay starts at the first record), or an error. */
static int newest_snapshot(tw_trade_engine *e, tw__gwfold **folds, uint64_t end, uint64_t *events,
                           uint64_t *jseq, tw_error *err)
{
    tw_error se = {0};
    tw__snap_gw ga = {.cfg = e->cfg, .journal_path = e->journal_path, .end = end, .folds = folds};
    int sr = tw__snap_newest_gw(e->log, e->journal_path, e->run_id, e->host.s, e->host.out_cap,
                                tw__snap_accept_gw, &ga, events, jseq, &se);
    e->snap_csv_len = sr == 0 ? ga.csv_len : -1;
    if (ga.beyond)
        /* The strategy had seen event J, and the journal has it before
         * the ring: a journal that ends before J lost records (its last
         * segment deleted, or cut).  An older snapshot would replay a
         * journal without them: the books would not be the run's. */
        return tw__err(err, -TW_EUNRECOVERABLE, "refusing to trade: journal %s ends at seq %llu, "
                       "before the snapshot of seq %llu (records missing)", e->journal_path,
                       (unsigned long long)(end - 1), (unsigned long long)ga.beyond);
    if (sr == 0) {
        e->fold_seed = calloc(e->n_gw, sizeof(tw__gwfold));
        int rc = e->fold_seed ? 0 : -ENOMEM;
        for (uint32_t i = 0; i < e->n_gw && rc == 0; i++)
            if ((rc = tw__gwfold_init(&e->fold_seed[i], e->cfg, i)) == 0)
                rc = tw__gwfold_copy(&e->fold_seed[i], folds[i]);
        if (rc != 0) {
            tw__snap_seed_free(e);
            return tw__err(err, rc, "snapshots: out of memory");
        }
        e->fold_seed_seq = *jseq;
        return 1;
    }
    if (sr != -ENOENT)
        fprintf(e->log, "tickwire trade: snapshot not used: %s\n", se.msg);
    /* A load that failed may have left part of a state: again. */
    for (uint32_t i = 0; i < e->n_gw; i++)
        tw__gwfold_reset(folds[i]);
    return tw__host_engine_build(e, err);
}

int tw__recover(tw_trade_engine *e, int64_t t0, tw_error *err)
{
    const tw_trade_config *cfg = e->cfg;
    int rc;
    /* 0. The first record (the run's META) and the last (END: the run
     * ended). */
    const uint64_t end = tw_jseg_next_seq(&e->jr);
    tw_journal_rec head, last;
    if ((rc = read_one(e, 0, &head, err)) != 0 || (rc = read_one(e, end - 1, &last, err)) != 0)
        return rc;
    scan sc = {0};
    if ((rc = each(e, &head, 1, scan_rec, &sc, err)) != 0)
        return rc;
    if (tw_journal_rec_kind(&last) == TW__JR_END || last.seq == head.seq) {
        /* The last run ended (or never got past its start): a new run. */
        return tw__evlog_rotate(e, err);
    }
    if (tw__evlog_meta_check(&head, cfg, &sc.meta) != 0)
        return tw__err(err, -TW_EFORMAT, "journal %s is the crashed run of another "
                       "configuration (sessions, instruments, instances, fee or risk differ): "
                       "restart with the configuration it was written with, or start a new "
                       "run with --reset-seqs", e->journal_path);
    if (e->opts.run_id && e->opts.run_id != sc.meta.run_id)
        fprintf(e->log, "tickwire trade: --run-id %llu ignored: resuming run %llu of %s\n",
                (unsigned long long)e->opts.run_id, (unsigned long long)sc.meta.run_id,
                e->journal_path);
    e->run_id = sc.meta.run_id;
    tw__gwfold **folds = calloc(e->n_gw ? e->n_gw : 1, sizeof(tw__gwfold *));
    if (!folds)
        return tw__err(err, -ENOMEM, "journal: out of memory");
    for (uint32_t i = 0; i < e->n_gw; i++)
        folds[i] = tw__gw_fold(e->gw[i]);
    /* 1. Where the replay starts: the newest snapshot that loads (its
     * state and the net cores' folds at its journal seq J, then the
     * records after J; processes mode: the strategy process's, when they
     * carry the folds), else the first record. */
    uint64_t snap_events = 0, jseq = 0;
    int from_snap = 0;
    if (e->have_journal &&
        (cfg->engine.snapshot_every || cfg->engine.snapshot_interval_ms)) {
        from_snap = newest_snapshot(e, folds, end, &snap_events, &jseq, err);
        if (from_snap < 0) {
            free(folds);
            return from_snap;
        }
    }
    if (!from_snap && head.seq != 1) {
        /* Records 1 .. head.seq - 1 were pruned behind snapshots, and none
         * that checks out is left: the books cannot be rebuilt. */
        free(folds);
        return tw__err(err, -TW_EUNRECOVERABLE, "refusing to trade: journal %s starts at seq "
                       "%llu (the records before it pruned) and no snapshot that checks out "
                       "covers them", e->journal_path, (unsigned long long)head.seq);
    }
    if (!from_snap)
        e->snap_csv_len = -1;
    tw_journal_rec *buf = NULL;
    uint64_t n_buf = 0;
    if ((rc = load_from(e, from_snap ? jseq + 1 : head.seq, &buf, &n_buf, err)) != 0) {
        free(folds);
        return rc;
    }
    const uint64_t read_from = from_snap ? jseq + 1 : head.seq;
    /* The records read, checked (the scan of the first is done). */
    if ((rc = each(e, from_snap ? buf : buf + 1, from_snap ? n_buf : n_buf - 1, scan_rec, &sc,
                   err)) != 0) {
        free(folds);
        free(buf);
        return rc;
    }
    /* 2. What was sent: the OUT records read, the ones the snapshot's
     * folds know of that its strategy may decide again, and the stores'
     * orders and cancels (every one of the run). */
    tw__intents sent = {0};
    uint64_t stored = 0, fold_outs = 0;
    for (uint32_t i = 0; i < e->n_gw; i++) {
        stored += tw__gw_store_count(e->gw[i]);
        fold_outs += 2 * (uint64_t)folds[i]->open.n + 1;
    }
    /* (A STOP before J: the folds have it, and so must the replay.) */
    replay_ctx rp = {.sent = &sent, .folds = folds, .stopped = e->n_gw && folds[0]->stopped};
    if (tw__intents_init(&sent, sc.n_out + stored + fold_outs + 16) != 0) {
        free(folds);
        free(buf);
        return tw__err(err, -ENOMEM, "journal: out of memory");
    }
    /* (Every OUT record names a session of ours: the scan's rule.) */
    if ((rc = tw__intents_add_records(&sent, buf, n_buf, UINT64_MAX)) != 0) {
        tw__err(err, rc, "journal: out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < e->n_gw && rc == 0 && from_snap; i++)
        if ((rc = tw__gwfold_outs(folds[i], add_out, &sent)) != 0)
            tw__err(err, rc, "journal: out of memory");
    for (uint32_t i = 0; i < e->n_gw && rc == 0; i++) {
        store_ctx stc = {.sent = &sent};
        if ((rc = tw__gw_store_orders(e->gw[i], e->run_id, store_order, &stc)) == 0)
            rc = stc.rc;
        if (rc != 0)
            tw__err(err, rc, "session %s: store %s: cannot read it back: %s",
                    cfg->sessions[i].name, cfg->sessions[i].store, tw_strerror(rc));
    }
    if (rc != 0)
        goto out;
    if (from_snap) {
        if ((rc = from_snapshot(e, &rp, &sent)) != 0) {
            tw__err(err, rc, "journal: out of memory");
            goto out;
        }
        e->snap_recovered = 1;
        fprintf(e->log, "tickwire trade: recovering from the snapshot of event %llu (journal "
                "seq %llu)\n", (unsigned long long)snap_events, (unsigned long long)jseq);
    }
    /* 3. The replay, its trades into a CSV placed for it: cut where the
     * snapshot's rows end, or empty (processes mode: the strategy
     * process places and writes it, the report at the end again). */
    if (e->trades && !e->trades_placed && !e->procs) {
        int tr = tw__trades_reset(e->trades, from_snap ? e->snap_csv_len : -1);
        if (tr == -ENODATA) {
            fprintf(e->log, "tickwire trade: trades CSV %s is shorter than the snapshot's %lld "
                    "bytes: written again from the journal at the end\n", cfg->engine.trades,
                    (long long)e->snap_csv_len);
            e->snap_csv_len = -1;
            tr = tw__trades_reset(e->trades, -1);
        }
        if (tr != 0) {
            rc = tw__err(err, -EIO, "%s: write error", cfg->engine.trades);
            goto out;
        }
        if (from_snap && e->snap_csv_len >= 0)
            fprintf(e->log, "tickwire trade: the trades CSV kept to the snapshot's %lld bytes; "
                    "the replay writes on\n", (long long)e->snap_csv_len);
        e->trades_placed = 1;
    }
    e->evseq_next = 0;
    int64_t k0 = tw_clock_now_ns();
    rc = each(e, buf, n_buf, replay_rec, &rp, err);
    if (rc != 0)
        goto out;
    e->replay_kernel_ns = tw_clock_now_ns() - k0;
    /* 4. Every order and cancel the last run sent was decided again. */
    uint64_t lost = tw__intents_left(&sent, TW__INTENT_ORDERS);
    if (lost) {
        rc = tw__err(err, -TW_EFORMAT, "journal %s: %llu orders or cancels the crashed run sent "
                     "were not decided again by the replay: the strategy is not the one that "
                     "ran; refusing to trade on", e->journal_path, (unsigned long long)lost);
        goto out;
    }
    /* 5. The unsent intents wait in their rings for the Logon, in order
     * (processes mode: the strategy process decides them again and sends
     * them: none of them has an OUT record). */
    for (uint64_t i = 0; i < rp.n_unsent && !e->procs; i++) {
        tw__gw *g = e->gw[rp.unsent[i].session];
        if (tw_ring_enqueue_burst_sp(tw__gw_out(g), &rp.unsent[i], 1) != 1) {
            rc = tw__err(err, -ENOBUFS, "journal %s: %llu intents to send again, more than "
                         "ring_slots holds", e->journal_path, (unsigned long long)rp.n_unsent);
            goto out;
        }
    }
    e->resent = rp.n_unsent;
    e->replayed_bars = rp.bars;
    /* Notes for the next recovery: what this one settled without a send
     * in the journal (orders the store alone had, acks left to the
     * venue's reissue) is journaled as handled, so a later replay finds
     * it there. */
    for (uint64_t i = 0; i < rp.n_notes && rc == 0; i++)
        rc = tw__evlog_note(e, &rp.notes[i], err);
    if (rc != 0)
        goto out;
    e->next_evseq = e->evseq_next = snap_events + rp.n_ev;
    for (uint32_t i = 0; i < e->n_gw; i++)
        tw__gw_restore_done(e->gw[i]);
    e->recovered = 1;
    e->replay_ns = tw_clock_now_ns() - t0;
    fprintf(e->log,
            "tickwire trade: recovered run %llu from %s: %llu journal records read from seq %llu; "
            "%llu events replayed (%llu bars) in "
            "%.3f s, %llu intents decided again, %llu of them already sent, %llu to send, "
            "%llu barrier acks left to the venue's reissue; the events through the strategy "
            "%.3f ms (%.0f bars/s), the rest reading the journal and the stores; engine start "
            "%lld ns, replay end %lld ns (monotonic)\n",
            (unsigned long long)e->run_id, e->journal_path, (unsigned long long)n_buf,
            (unsigned long long)read_from, (unsigned long long)e->replayed_events,
            (unsigned long long)rp.bars, (double)e->replay_ns / 1e9,
            (unsigned long long)e->replayed_intents, (unsigned long long)e->suppressed,
            (unsigned long long)rp.n_unsent, (unsigned long long)rp.acks_dropped,
            (double)e->replay_kernel_ns / 1e6,
            e->replay_kernel_ns > 0 ? (double)rp.bars * 1e9 / (double)e->replay_kernel_ns : 0.0,
            (long long)e->created_ns, (long long)(t0 + e->replay_ns));
    fflush(e->log);
out:
    free(rp.unsent);
    free(rp.notes);
    tw__intents_free(&sent);
    free(buf);
    free(folds);
    return rc;
}

/* The report's start (processes mode, at the end): the newest snapshot
 * that checks out and places the trades CSV (the strategy process wrote
 * its rows through it), its journal seq in *jseq and whether a STOP came
 * at or before it in *stopped; 1 when one is used, 0 when none (a fresh
 * strategy from the journal's first record), or an error. */
static int report_snapshot(tw_trade_engine *e, uint64_t end, uint64_t *jseq, int *stopped,
                           tw_error *err)
{
    const tw_trade_config *cfg = e->cfg;
    if (!cfg->engine.snapshot_every && !cfg->engine.snapshot_interval_ms)
        return 0;
    tw__gwfold *f = calloc(e->n_gw ? e->n_gw : 1, sizeof(*f));
    tw__gwfold **fp = calloc(e->n_gw ? e->n_gw : 1, sizeof(*fp));
    int rc = f && fp ? 0 : -ENOMEM;
    uint32_t inited = 0;
    for (; inited < e->n_gw && rc == 0; inited++) {
        fp[inited] = &f[inited];
        rc = tw__gwfold_init(&f[inited], cfg, inited);
    }
    if (rc != 0) {
        rc = tw__err(err, rc, "snapshots: out of memory");
        goto out;
    }
    tw__snap_gw ga = {.cfg = cfg, .journal_path = e->journal_path, .end = end, .folds = fp,
                      .need_csv = e->trades};
    tw_error se = {0};
    uint64_t events = 0;
    int sr = tw__snap_newest_gw(e->log, e->journal_path, e->run_id, e->host.s, e->host.out_cap,
                                tw__snap_accept_gw, &ga, &events, jseq, &se);
    if (sr == 0 && e->trades && tw__trades_reset(e->trades, ga.csv_len) != 0) {
        rc = tw__err(err, -EIO, "%s: write error", cfg->engine.trades);
    } else if (sr == 0) {
        *stopped = e->n_gw && f[0].stopped;
        fprintf(e->log, "tickwire trade: gateway: the report's strategy from the snapshot of "
                "event %llu (journal seq %llu)\n", (unsigned long long)events,
                (unsigned long long)*jseq);
        rc = 1;
    } else {
        if (sr != -ENOENT)
            fprintf(e->log, "tickwire trade: gateway: snapshot not used for the report: %s\n",
                    se.msg);
        /* A load that failed may have left part of a state: again. */
        rc = tw__host_engine_build(e, err);
    }
out:
    for (uint32_t i = 0; i < inited; i++)
        tw__gwfold_free(&f[i]);
    free(f);
    free(fp);
    return rc;
}

int tw__recover_report(tw_trade_engine *e, tw_error *err)
{
    int rc = tw__host_engine_build(e, err);
    if (rc != 0)
        return rc;
    tw_journal_rec head;
    const uint64_t end = tw_jseg_next_seq(&e->jr);
    if ((rc = read_one(e, 0, &head, err)) != 0)
        return rc;
    uint64_t jseq = 0;
    int stopped = 0;
    int from_snap = report_snapshot(e, end, &jseq, &stopped, err);
    if (from_snap < 0)
        return from_snap;
    if (!from_snap && head.seq != 1)
        return tw__err(err, -TW_EUNRECOVERABLE, "the report cannot be rebuilt: journal %s "
                       "starts at seq %llu (the records before it pruned) and no snapshot that "
                       "checks out covers them", e->journal_path, (unsigned long long)head.seq);
    if (!from_snap && e->trades && tw__trades_reset(e->trades, -1) != 0)
        return tw__err(err, -EIO, "%s: write error", e->cfg->engine.trades);
    tw_journal_rec *buf = NULL;
    uint64_t n = 0;
    if ((rc = load_from(e, from_snap ? jseq + 1 : 0, &buf, &n, err)) != 0)
        return rc;
    int fin_seen = 0, stop_seen = 0;
    uint64_t fin_digest = 0, stop_digest = 0, events = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t k = tw_journal_rec_kind(&buf[i]);
        /* A crash loop: the record that killed the strategy process three
         * times would kill this replay too; the books stop before it. */
        if (e->crash_loop_seq && buf[i].seq >= e->crash_loop_seq)
            break;
        if (k == TW__JR_STOP && !stopped) {
            stopped = stop_seen = 1;
            stop_digest = tw_strategy_digest(e->host.s);
        }
        if (k != TW_JOURNAL_EV)
            continue;
        tw_ev ev;
        memcpy(&ev, buf[i].payload, sizeof(ev));
        if (stopped && (ev.type == TW_EV_BAR || ev.type == TW_EV_BARRIER))
            continue;
        events++;
        size_t m = tw_strategy_on_event(e->host.s, &ev, e->host.out, e->host.out_cap);
        for (size_t j = 0; j < m; j++)
            if (e->host.out[j].type == TW_OUT_FINISHED && !fin_seen) {
                fin_seen = 1;
                fin_digest = tw_strategy_digest(e->host.s);
            }
    }
    free(buf);
    /* What the strategy process said its state was, at the same places
     * (those after the snapshot). */
    if (fin_seen && e->st_digest_finished && e->st_digest_finished != fin_digest)
        rc = tw__err(err, -TW_EFORMAT, "the strategy process's state at FINISHED (digest %016llx) "
                     "is not the journal's replay (%016llx): the report would not be its own",
                     (unsigned long long)e->st_digest_finished, (unsigned long long)fin_digest);
    else if (stop_seen && e->st_digest_stopped && e->st_digest_stopped != stop_digest)
        rc = tw__err(err, -TW_EFORMAT, "the strategy process's state at STOP (digest %016llx) "
                     "is not the journal's replay (%016llx): the report would not be its own",
                     (unsigned long long)e->st_digest_stopped, (unsigned long long)stop_digest);
    fprintf(e->log, "tickwire trade: gateway: the report's strategy rebuilt from the journal "
            "(%llu events%s)%s\n", (unsigned long long)events,
            from_snap ? " after the snapshot" : "",
            rc ? "" : (fin_seen && e->st_digest_finished) || (stop_seen && e->st_digest_stopped)
                          ? "; the strategy process's digest matches"
                      : from_snap ? "; the state is the strategy process's own snapshot, no "
                                    "FINISHED or STOP after it to check a digest at"
                                  : "; no digest from the strategy process to check");
    return rc;
}

/* The trades CSV after a recovery from a snapshot: the trades before it
 * were the crashed run's, so the CSV is written again from the journal,
 * every EV record through a strategy of its own (the engine's is left as
 * it is), whose state must then be the engine's. */
typedef struct csv_ctx {
    tw_trade_engine *e;
    tw__host *h;
} csv_ctx;

static void csv_trade(void *ctx, const tw_strategy_trade *t)
{
    csv_ctx *c = ctx;
    if (c->e->trades)
        (void)tw_trade_csv_row(c->e->trades, c->h->s, t);
}

int tw__recover_trades(tw_trade_engine *e, tw_error *err)
{
    if (!e->trades)
        return 0;
    if (tw__trades_reset(e->trades, -1) != 0)
        return tw__err(err, -EIO, "%s: write error", e->cfg->engine.trades);
    tw__host h = {0};
    csv_ctx c = {e, &h};
    tw_strategy_hooks hk = {.trade = csv_trade, .ctx = &c};
    int rc = tw__host_build(&h, e->cfg, &hk, err);
    tw_journal_rec *buf = NULL;
    uint64_t n = 0;
    if (rc == 0)
        rc = load_all(e, &buf, &n, err);
    uint64_t events = 0;
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        if (tw_journal_rec_kind(&buf[i]) != TW_JOURNAL_EV)
            continue;
        tw_ev ev;
        memcpy(&ev, buf[i].payload, sizeof(ev));
        (void)tw_strategy_on_event(h.s, &ev, h.out, h.out_cap);
        events++;
    }
    if (rc == 0)
        fprintf(e->log, "tickwire trade: the trades CSV written again from the journal (%llu "
                "events): the replay's state %s the engine's\n", (unsigned long long)events,
                tw_strategy_digest(h.s) == tw_strategy_digest(e->host.s) ? "is" : "is NOT");
    free(buf);
    tw__host_free(&h);
    return rc;
}
