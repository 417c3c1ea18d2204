/* The engine's journal and its recovery after a crash (docs/crash.md,
 * "Wiring it into the engine"; live.md, "Crash isolation and recovery").
 *
 * The journal (journal.h) holds, in order: a META record (run id, a digest
 * of the configuration), every event the strategy was handed (EV, in
 * evseq order: tw__journal_ev numbers and appends under one mutex), every
 * intent a net core sent (OUT: an order or a cancel once the FIX store has
 * it, a barrier ack or a logout once handled), and END after a clean end.
 *
 * A start that finds a journal without END is a restart after a crash:
 *
 *   1. the intents already sent: the journal's OUT records, and every
 *      NewOrderSingle / OrderCancelRequest of this run in the FIX stores
 *      (a message is stored before it goes out and journaled after, so a
 *      crash between the two leaves it in the store only);
 *   2. a fresh strategy is fed every EV record from the first (the kernel
 *      is path dependent); each intent it decides is looked up: one that
 *      was sent is not sent again (order ids are (instance, decision
 *      bar): a replayed decision has the id it had); an order or cancel
 *      that was not sent goes into its session's ring, to be sent once the
 *      session is logged on again; a barrier ack that was not sent is
 *      dropped (the venue asks again after the Logon: a TestRequest is
 *      never resent); FINISHED is FINISHED;
 *   3. every order the previous run sent must have been decided again
 *      (else the strategy is not the one that ran: refused);
 *   4. the net cores take their state from the same records: last bars
 *      forwarded (a bar the venue resends as PossDup is not forwarded
 *      again), open orders, orders done (an execution of one the venue
 *      resends is not applied twice), the counters; a session that was up
 *      is told DOWN (its connection died with the process).
 *
 * The FIX sessions then resume from their stores (ResendRequest both
 * ways, PossDup): what the venue sent after our last persisted inbound
 * number comes again and is filtered as above. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trade/engine_internal.h"
#include "tickwire/util.h"

#define META_MAGIC "TWTRADE1"
#define READ_BURST 512

/* ---- appends (any thread, under jmu) -------------------------------------- */

static void journal_failed(tw_trade_engine *e, int rc)
{
    /* Under jmu.  Logged once: the run goes on, a later recovery may miss
     * what is not in the journal (the summary counts it). */
    if (e->journal_errors++ == 0)
        fprintf(e->log, "tickwire trade: journal %s: append failed: %s (recovery after a "
                "crash would miss what is not in it)\n", e->journal_path, tw_strerror(rc));
}

void tw__journal_ev(tw_trade_engine *e, const tw_ev *ev, tw__inrec *out)
{
    pthread_mutex_lock(&e->jmu);
    out->evseq = e->evseq_next++;
    out->jseq = 0;
    out->ev = *ev;
    if (e->have_journal) {
        tw_journal_rec rec;
        int rc = tw_journal_append(&e->jr, TW_JOURNAL_EV, ev, &rec);
        if (rc == 0)
            out->jseq = rec.seq;
        else
            journal_failed(e, rc);
    }
    pthread_mutex_unlock(&e->jmu);
}

void tw__journal_out(tw_trade_engine *e, const tw_out *o)
{
    pthread_mutex_lock(&e->jmu);
    if (e->have_journal) {
        int rc = tw_journal_append(&e->jr, TW_JOURNAL_OUT, o, NULL);
        if (rc != 0)
            journal_failed(e, rc);
    }
    pthread_mutex_unlock(&e->jmu);
}

void tw__journal_end(tw_trade_engine *e, int clean)
{
    if (!e->have_journal)
        return;
    pthread_mutex_lock(&e->jmu);
    if (clean) {
        uint8_t end[TW_JOURNAL_PAYLOAD] = {0};
        int rc = tw_journal_append(&e->jr, TW__JR_END, end, NULL);
        if (rc != 0)
            journal_failed(e, rc);
    }
    tw_journal_close(&e->jr);
    e->have_journal = 0;
    pthread_mutex_unlock(&e->jmu);
}

/* ---- the configuration's digest --------------------------------------------- */

/* The basis the digest has always started from (not FNV's own): the
 * event logs' META keeps digests made with it, and recovery compares. */
#define CFG_DIGEST_BASIS 1469598103934665603ull


/* What decides the strategy's intents and their ClOrdIDs: sessions,
 * instruments, instances (name, instrument, combo), fee, risk. */
uint64_t tw__cfg_digest(const tw_trade_config *c)
{
    uint64_t h = CFG_DIGEST_BASIS;
    h = tw_fnv1a64(h, &c->n_sessions, sizeof(c->n_sessions));
    for (uint32_t i = 0; i < c->n_sessions; i++)
        h = tw_fnv1a64(h, c->sessions[i].name, strlen(c->sessions[i].name) + 1);
    for (uint32_t i = 0; i < c->n_instruments; i++) {
        h = tw_fnv1a64(h, c->strategy_instruments[i].symbol, strlen(c->strategy_instruments[i].symbol) + 1);
        h = tw_fnv1a64(h, &c->strategy_instruments[i].session, sizeof(c->strategy_instruments[i].session));
    }
    for (uint32_t i = 0; i < c->n_instances; i++) {
        const tw_instance_cfg *in = &c->instances[i];
        h = tw_fnv1a64(h, in->name, strlen(in->name) + 1);
        h = tw_fnv1a64(h, &in->instrument, sizeof(in->instrument));
        h = tw_fnv1a64(h, in->combo, sizeof(in->combo));
        if (in->kernel) {
            /* kernel = given: its name, ABI and params decide too (a
             * config without kernel = hashes as it always did). */
            h = tw_fnv1a64(h, in->kernel->name, strlen(in->kernel->name) + 1);
            h = tw_fnv1a64(h, &in->kernel->abi, sizeof(in->kernel->abi));
            h = tw_fnv1a64(h, in->params, in->kernel->n_params * sizeof(double));
        }
    }
    h = tw_fnv1a64(h, &c->engine.fee, sizeof(c->engine.fee));
    const tw_risk_cfg *r = &c->risk;
    int64_t ri[] = {r->max_position, r->max_total_position, r->max_orders_per_s,
                    r->max_session_orders_per_s, (int64_t)r->on_loss, (int64_t)r->max_open_orders};
    h = tw_fnv1a64(h, ri, sizeof(ri));
    h = tw_fnv1a64(h, &r->max_instance_loss, sizeof(double));
    h = tw_fnv1a64(h, &r->max_total_loss, sizeof(double));
    for (uint32_t i = 0; i < c->n_sessions; i++)
        h = tw_fnv1a64(h, &c->session_orders_per_s[i], sizeof(int64_t));
    return h;
}

/* ---- the set of intents already sent ------------------------------------------ */

/* Key: what an intent is (type, session, order id or ref). */
typedef struct sent_ent {
    uint64_t id;     /* order id (ORDER, CANCEL) or ref (BARRIER_ACK); 0 for LOGOUT */
    uint32_t kind;   /* type | session << 8; 0: empty slot */
    uint8_t from_journal; /* an OUT record (else the FIX store only) */
    uint8_t matched;      /* a replayed decision was this one */
    uint8_t pad[2];
} sent_ent;

typedef struct sent_set {
    sent_ent *t;
    uint64_t mask;
    uint64_t n;
} sent_set;

static uint32_t kind_of(uint8_t type, uint16_t session)
{
    /* Order ids are unique across sessions; acks and logouts are per session. */
    if (type == TW_OUT_ORDER || type == TW_OUT_CANCEL)
        session = 0;
    return (uint32_t)type | (uint32_t)session << 8;
}

static sent_ent *sent_slot(sent_set *s, uint32_t kind, uint64_t id)
{
    uint64_t h = (id ^ ((uint64_t)kind << 40)) * 0x9e3779b97f4a7c15ull;
    for (uint64_t i = h >> 20 & s->mask;; i = (i + 1) & s->mask) {
        sent_ent *x = &s->t[i];
        if (x->kind == 0 || (x->kind == kind && x->id == id))
            return x;
    }
}

static void sent_add(sent_set *s, uint32_t kind, uint64_t id, int from_journal)
{
    TW_VERIFY(s->n < s->mask); /* sized for every record at the set's creation */
    sent_ent *x = sent_slot(s, kind, id);
    if (x->kind == 0) {
        x->kind = kind;
        x->id = id;
        s->n++;
    }
    x->from_journal |= (uint8_t)from_journal;
}

static void store_order(void *ctx, char kind, uint64_t id)
{
    sent_set *s = ctx;
    sent_add(s, kind_of(kind == 'T' ? TW_OUT_ORDER : TW_OUT_CANCEL, 0), id, 0);
}

static uint64_t out_id(const tw_out *o)
{
    if (o->type == TW_OUT_BARRIER_ACK)
        return o->ref;
    if (o->type == TW_OUT_LOGOUT)
        return 0;
    return o->order_id;
}

/* ---- start ---------------------------------------------------------------------- */

static int open_fresh(tw_trade_engine *e, tw_error *err)
{
    tw_journal_cfg jc = {.path = e->journal_path, .fd = -1, .fsync = TW_JOURNAL_FSYNC_NONE,
                         .mmap_bytes = 1u << 20};
    tw_error je = {0};
    int rc = tw_journal_open(&e->jr, &jc, &je);
    if (rc != 0)
        return tw__err(err, rc, "journal: %s", je.msg);
    e->have_journal = 1;
    return 0;
}

static int append_meta(tw_trade_engine *e, tw_error *err)
{
    tw__jr_meta m;
    memset(&m, 0, sizeof(m));
    memcpy(m.magic, META_MAGIC, 8);
    m.run_id = e->run_id;
    m.cfg_digest = tw__cfg_digest(e->cfg);
    m.n_sessions = e->cfg->n_sessions;
    m.n_instances = e->cfg->n_instances;
    int rc = tw_journal_append(&e->jr, TW__JR_META, &m, NULL);
    if (rc == 0)
        rc = tw_journal_sync(&e->jr);
    return rc ? tw__err(err, rc, "journal %s: %s", e->journal_path, tw_strerror(rc)) : 0;
}

typedef struct scan {
    uint64_t n_recs, n_ev, n_out, n_orders;
    int have_meta, ended;
    tw__jr_meta meta;
} scan;

/* The whole journal, every record checked (the reader's rules), read once
 * into memory: the passes below go over it.  0 or a negative errno. */
static int load_all(tw_trade_engine *e, tw_journal_rec **out, uint64_t *n_out, tw_error *err)
{
    tw_journal_reader r;
    tw_error je = {0};
    int rc = tw_journal_reader_open(&r, &(tw_journal_reader_cfg){.path = e->journal_path,
                                                                  .fd = -1,
                                                                  .buf_records = 8192}, &je);
    if (rc != 0)
        return tw__err(err, rc, "journal: %s", je.msg);
    uint64_t cap = e->jr.records + READ_BURST + 16, n = 0; /* no realloc: the writer counted them */
    tw_journal_rec *v = malloc(cap * sizeof(*v));
    for (;;) {
        if (!v) {
            rc = tw__err(err, -ENOMEM, "journal: out of memory");
            break;
        }
        if (n + READ_BURST > cap) {
            tw_journal_rec *p = realloc(v, 2 * cap * sizeof(*v));
            if (!p) {
                rc = tw__err(err, -ENOMEM, "journal: out of memory");
                break;
            }
            v = p;
            cap *= 2;
        }
        /* The writer's open checked them all and counted them: no need
         * to read (and scan) the zeros a mapped journal has after them. */
        uint64_t want = e->jr.records - n < READ_BURST ? e->jr.records - n : READ_BURST;
        if (want == 0)
            break;
        int k = tw_journal_read_burst(&r, v + n, (uint32_t)want, &je);
        if (k < 0) {
            rc = tw__err(err, k, "journal: %s", je.msg);
            break;
        }
        if (k == 0)
            break;
        n += (uint64_t)k;
    }
    tw_journal_reader_close(&r);
    if (rc != 0) {
        free(v);
        return rc;
    }
    *out = v;
    *n_out = n;
    return 0;
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
    (void)e;
    uint32_t k = tw_journal_rec_kind(rec);
    if (s->n_recs++ == 0) {
        if (k != TW__JR_META)
            return -TW_EFORMAT;
        memcpy(&s->meta, rec->payload, sizeof(s->meta));
        s->have_meta = memcmp(s->meta.magic, META_MAGIC, 8) == 0;
        return s->have_meta ? 0 : -TW_EFORMAT;
    }
    if (s->ended)
        return -TW_EFORMAT; /* nothing follows END */
    if (k == TW_JOURNAL_EV) {
        s->n_ev++;
    } else if (k == TW_JOURNAL_OUT) {
        const tw_out *o = (const tw_out *)rec->payload;
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

static int collect_out(tw_trade_engine *e, const tw_journal_rec *rec, void *ctx)
{
    sent_set *s = ctx;
    if (tw_journal_rec_kind(rec) != TW_JOURNAL_OUT)
        return 0;
    const tw_out *o = (const tw_out *)rec->payload;
    if (o->session >= e->n_gw)
        return -TW_EFORMAT;
    sent_add(s, kind_of(o->type, o->session), out_id(o), 1);
    return 0;
}

typedef struct replay_ctx {
    sent_set *sent;
    tw_out *unsent;      /* intents decided and never sent, in order */
    uint64_t n_unsent, cap_unsent;
    tw_out *notes;       /* intents settled without an OUT record (journaled after) */
    uint64_t n_notes, cap_notes;
    uint64_t acks_dropped;
    uint64_t bars;
    int stopped; /* a STOP record came: no more bars or barriers (processes mode) */
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

static int replay_rec(tw_trade_engine *e, const tw_journal_rec *rec, void *ctx)
{
    replay_ctx *rc = ctx;
    uint32_t k = tw_journal_rec_kind(rec);
    if (k == TW_JOURNAL_OUT) {
        const tw_out *o = (const tw_out *)rec->payload;
        if (o->type == TW_OUT_ORDER)
            tw__gw_restore_order(e->gw[o->session], o);
        return 0;
    }
    if (k == TW__JR_STOP)
        rc->stopped = 1;
    if (k != TW_JOURNAL_EV)
        return 0;
    tw_ev ev;
    memcpy(&ev, rec->payload, sizeof(ev));
    /* The stamps were the live run's: the replay's intents carry none. */
    ev.tsc_rx = ev.tsc_tcp = ev.tsc_parse = 0;
    if (rc->stopped && (ev.type == TW_EV_BAR || ev.type == TW_EV_BARRIER))
        return 0; /* as the strategy process did */
    if (ev.type != TW_EV_KILL && ev.type != TW_EV_OPERATOR) {
        if (ev.session >= e->n_gw)
            return -TW_EFORMAT;
        tw__gw_restore_ev(e->gw[ev.session], &ev);
    }
    rc->bars += ev.type == TW_EV_BAR;
    e->replayed_events++;
    size_t m = tw_strategy_on_event(e->strategy, &ev, e->out_buf, e->out_cap);
    for (size_t i = 0; i < m; i++) {
        const tw_out *o = &e->out_buf[i];
        e->replayed_intents++;
        if (o->type == TW_OUT_FINISHED) {
            /* Release pairs with the control thread's acquire-load. */
            __atomic_store_n(&e->finished, 1, __ATOMIC_RELEASE);
            continue;
        }
        if (o->session >= e->n_gw)
            return -TW_EFORMAT;
        sent_ent *x = sent_slot(rc->sent, kind_of(o->type, o->session), out_id(o));
        if (x->kind != 0) {
            x->matched = 1;
            e->suppressed++;
            if (!x->from_journal) {
                if (o->type == TW_OUT_ORDER)
                    tw__gw_restore_order(e->gw[o->session], o); /* in the store only */
                x->from_journal = 1;
                if (list_add(&rc->notes, &rc->n_notes, &rc->cap_notes, o) != 0)
                    return -ENOMEM;
            }
            continue;
        }
        if (o->type == TW_OUT_BARRIER_ACK) {
            rc->acks_dropped++; /* the venue asks again after the Logon */
            if (list_add(&rc->notes, &rc->n_notes, &rc->cap_notes, o) != 0)
                return -ENOMEM;
            continue;
        }
        if (list_add(&rc->unsent, &rc->n_unsent, &rc->cap_unsent, o) != 0)
            return -ENOMEM;
    }
    return 0;
}

void tw__journal_path(const tw_trade_config *cfg, char *buf, size_t n)
{
    if (cfg->engine.journal[0])
        snprintf(buf, n, "%s", cfg->engine.journal);
    else
        snprintf(buf, n, "%s.journal", cfg->sessions[0].store);
}

/* Processes mode: the report's strategy (engine_internal.h). */
int tw__journal_report_replay(tw_trade_engine *e, tw_error *err)
{
    int rc = tw__strategy_rebuild(e, err);
    if (rc != 0)
        return rc;
    tw_journal_rec *buf = NULL;
    uint64_t n = 0;
    if ((rc = load_all(e, &buf, &n, err)) != 0)
        return rc;
    int stopped = 0, fin_seen = 0;
    uint64_t fin_digest = 0, stop_digest = 0, events = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t k = tw_journal_rec_kind(&buf[i]);
        /* A crash loop: the record that killed the strategy process three
         * times would kill this replay too; the books stop before it. */
        if (e->crash_loop_seq && buf[i].seq >= e->crash_loop_seq)
            break;
        if (k == TW__JR_STOP && !stopped) {
            stopped = 1;
            stop_digest = tw_strategy_digest(e->strategy);
        }
        if (k != TW_JOURNAL_EV)
            continue;
        tw_ev ev;
        memcpy(&ev, buf[i].payload, sizeof(ev));
        if (stopped && (ev.type == TW_EV_BAR || ev.type == TW_EV_BARRIER))
            continue;
        events++;
        size_t m = tw_strategy_on_event(e->strategy, &ev, e->out_buf, e->out_cap);
        for (size_t j = 0; j < m; j++)
            if (e->out_buf[j].type == TW_OUT_FINISHED && !fin_seen) {
                fin_seen = 1;
                fin_digest = tw_strategy_digest(e->strategy);
            }
    }
    free(buf);
    /* What the strategy process said its state was, at the same places. */
    if (fin_seen && e->st_digest_finished && e->st_digest_finished != fin_digest)
        rc = tw__err(err, -TW_EFORMAT, "the strategy process's state at FINISHED (digest %016llx) "
                     "is not the journal's replay (%016llx): the report would not be its own",
                     (unsigned long long)e->st_digest_finished, (unsigned long long)fin_digest);
    else if (stopped && e->st_digest_stopped && e->st_digest_stopped != stop_digest)
        rc = tw__err(err, -TW_EFORMAT, "the strategy process's state at STOP (digest %016llx) "
                     "is not the journal's replay (%016llx): the report would not be its own",
                     (unsigned long long)e->st_digest_stopped, (unsigned long long)stop_digest);
    fprintf(e->log, "tickwire trade: gateway: the report's strategy rebuilt from the journal "
            "(%llu events)%s\n", (unsigned long long)events,
            rc ? "" : (fin_seen && e->st_digest_finished) || (stopped && e->st_digest_stopped)
                          ? "; the strategy process's digest matches"
                          : "; no digest from the strategy process to check");
    return rc;
}

int tw__journal_start(tw_trade_engine *e, tw_error *err)
{
    const tw_trade_config *cfg = e->cfg;
    int64_t t0 = tw_clock_now_ns(); /* the replay's time includes the writer's open (a read) */
    int rc = pthread_mutex_init(&e->jmu, NULL);
    if (rc != 0)
        return tw__err(err, -rc, "mutex: %s", strerror(rc));
    e->have_jmu = 1;
    tw__journal_path(cfg, e->journal_path, sizeof(e->journal_path));
    if ((rc = tw_mkdir_parents(e->journal_path)) != 0)
        return tw__err(err, rc, "journal %s: cannot create its directory: %s", e->journal_path,
                       strerror(-rc));
    if (e->opts.reset_seqs && unlink(e->journal_path) != 0 && errno != ENOENT)
        return tw__err(err, -errno, "journal %s: %s", e->journal_path, strerror(errno));
    if ((rc = open_fresh(e, err)) != 0)
        return rc;
    if (e->jr.records == 0)
        return append_meta(e, err);
    tw_journal_rec *buf = NULL;
    uint64_t n_buf = 0;
    if ((rc = load_all(e, &buf, &n_buf, err)) != 0)
        return rc;
    scan sc = {0};
    if ((rc = each(e, buf, n_buf, scan_rec, &sc, err)) != 0) {
        free(buf);
        return rc;
    }
    if (sc.ended || sc.n_recs == 1) {
        /* The last run ended (or never got past its start): a new run. */
        free(buf);
        char done[sizeof(e->journal_path) + 8];
        snprintf(done, sizeof(done), "%s.done", e->journal_path);
        tw_journal_close(&e->jr);
        e->have_journal = 0;
        if (rename(e->journal_path, done) != 0)
            return tw__err(err, -errno, "journal %s: cannot move it to %s: %s",
                           e->journal_path, done, strerror(errno));
        if ((rc = open_fresh(e, err)) != 0)
            return rc;
        return append_meta(e, err);
    }
    if (sc.meta.cfg_digest != tw__cfg_digest(cfg) || sc.meta.n_sessions != cfg->n_sessions ||
        sc.meta.n_instances != cfg->n_instances) {
        free(buf);
        return tw__err(err, -TW_EFORMAT, "journal %s is the crashed run of another "
                       "configuration (sessions, instruments, instances, fee or risk differ): "
                       "restart with the configuration it was written with, or start a new "
                       "run with --reset-seqs", e->journal_path);
    }
    if (e->opts.run_id && e->opts.run_id != sc.meta.run_id)
        fprintf(e->log, "tickwire trade: --run-id %llu ignored: resuming run %llu of %s\n",
                (unsigned long long)e->opts.run_id, (unsigned long long)sc.meta.run_id,
                e->journal_path);
    e->run_id = sc.meta.run_id;
    /* 1. What was sent: the OUT records, and the stores' orders and cancels. */
    uint64_t cap = 1024, want = sc.n_out + 16;
    sent_set sent = {0};
    uint64_t stored = 0;
    for (uint32_t i = 0; i < e->n_gw; i++)
        stored += tw__gw_store_count(e->gw[i]);
    want += stored;
    while (cap < 2 * want)
        cap <<= 1;
    sent.t = calloc(cap, sizeof(sent_ent));
    sent.mask = cap - 1;
    replay_ctx rp = {.sent = &sent};
    if (!sent.t) {
        free(buf);
        return tw__err(err, -ENOMEM, "journal: out of memory");
    }
    if ((rc = each(e, buf, n_buf, collect_out, &sent, err)) != 0)
        goto out;
    for (uint32_t i = 0; i < e->n_gw && rc == 0; i++)
        if ((rc = tw__gw_store_orders(e->gw[i], e->run_id, store_order, &sent)) != 0)
            tw__err(err, rc, "session %s: store %s: cannot read it back: %s",
                    cfg->sessions[i].name, cfg->sessions[i].store, tw_strerror(rc));
    for (uint32_t i = 0; i < e->n_gw && rc == 0; i++)
        if ((rc = tw__gw_restore_begin(e->gw[i], sc.n_orders + stored)) != 0)
            tw__err(err, rc, "journal: out of memory");
    if (rc != 0)
        goto out;
    /* 2. The replay. */
    e->evseq_next = 0;
    int64_t k0 = tw_clock_now_ns();
    if ((rc = each(e, buf, n_buf, replay_rec, &rp, err)) != 0)
        goto out;
    e->replay_kernel_ns = tw_clock_now_ns() - k0;
    /* 3. Every order and cancel the last run sent was decided again. */
    uint64_t lost = 0;
    for (uint64_t i = 0; i <= sent.mask; i++) {
        const sent_ent *x = &sent.t[i];
        uint8_t t = (uint8_t)(x->kind & 0xff);
        lost += x->kind && x->from_journal && !x->matched && (t == TW_OUT_ORDER || t == TW_OUT_CANCEL);
    }
    if (lost) {
        rc = tw__err(err, -TW_EFORMAT, "journal %s: %llu orders or cancels the crashed run sent "
                     "were not decided again by the replay: the strategy is not the one that "
                     "ran; refusing to trade on", e->journal_path, (unsigned long long)lost);
        goto out;
    }
    /* 4. The unsent intents wait in their rings for the Logon, in order
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
        if ((rc = tw_journal_append(&e->jr, TW_JOURNAL_OUT, &rp.notes[i], NULL)) != 0)
            tw__err(err, rc, "journal %s: %s", e->journal_path, tw_strerror(rc));
    if (rc != 0)
        goto out;
    e->next_evseq = e->evseq_next = sc.n_ev;
    for (uint32_t i = 0; i < e->n_gw; i++)
        tw__gw_restore_done(e->gw[i]);
    e->recovered = 1;
    e->replay_ns = tw_clock_now_ns() - t0;
    fprintf(e->log,
            "tickwire trade: recovered run %llu from %s: %llu events replayed (%llu bars) in "
            "%.3f s, %llu intents decided again, %llu of them already sent, %llu to send, "
            "%llu barrier acks left to the venue's reissue; the events through the strategy "
            "%.3f ms (%.0f bars/s), the rest reading the journal and the stores; engine start "
            "%lld ns, replay end %lld ns (monotonic)\n",
            (unsigned long long)e->run_id, e->journal_path, (unsigned long long)e->replayed_events,
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
    free(sent.t);
    free(buf);
    return rc;
}
