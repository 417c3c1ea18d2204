/* The engine's event log (engine_internal.h, "the event log"): the one
 * place that appends to the journal.  It holds, in order: a META record
 * (run id, a digest of the configuration), every event the strategy was
 * handed (EV, in evseq order: numbered and appended under one mutex),
 * every intent a net core handled (OUT: an order or a cancel once the FIX
 * store has it, a barrier ack or a logout once handled), in processes
 * mode the gateway's STOP, and END after a clean end.  Recovery
 * (recover.c) reads it back. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trade/engine_internal.h"
#include "tickwire/util.h"

#define META_MAGIC "TWTRADE1"

/* ---- appends (any thread, under jmu) -------------------------------------- */

static void journal_failed(tw_trade_engine *e, int rc)
{
    /* Under jmu.  Logged once: the run goes on, a later recovery may miss
     * what is not in the journal (the summary counts it). */
    if (e->journal_errors++ == 0)
        fprintf(e->log, "tickwire trade: journal %s: append failed: %s (recovery after a "
                "crash would miss what is not in it)\n", e->journal_path, tw_strerror(rc));
}

void tw__evlog_ev(tw_trade_engine *e, const tw_ev *ev, tw__inrec *out)
{
    pthread_mutex_lock(&e->jmu);
    out->evseq = e->evseq_next++;
    out->jseq = 0;
    out->ev = *ev;
    if (e->have_journal) {
        tw_journal_rec rec;
        int rc = tw_jseg_append(&e->jr, TW_JOURNAL_EV, ev, &rec);
        if (rc == 0)
            out->jseq = rec.seq;
        else
            journal_failed(e, rc);
    }
    pthread_mutex_unlock(&e->jmu);
}

void tw__evlog_out(tw_trade_engine *e, const tw_out *o)
{
    pthread_mutex_lock(&e->jmu);
    if (e->have_journal) {
        int rc = tw_jseg_append(&e->jr, TW_JOURNAL_OUT, o, NULL);
        if (rc != 0)
            journal_failed(e, rc);
    }
    pthread_mutex_unlock(&e->jmu);
}

int tw__evlog_grow_ahead(tw_trade_engine *e)
{
    /* Never waits: the lock held means an append is under way. */
    if (!e->have_jmu || pthread_mutex_trylock(&e->jmu) != 0)
        return 0;
    int rc = e->have_journal ? tw_jseg_grow_ahead(&e->jr) : 0;
    pthread_mutex_unlock(&e->jmu);
    return rc;
}

void tw__evlog_end(tw_trade_engine *e, int clean)
{
    if (!e->have_journal)
        return;
    pthread_mutex_lock(&e->jmu);
    if (clean) {
        uint8_t end[TW_JOURNAL_PAYLOAD] = {0};
        int rc = tw_jseg_append(&e->jr, TW__JR_END, end, NULL);
        if (rc != 0)
            journal_failed(e, rc);
    }
    tw_jseg_close(&e->jr);
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

void tw__evlog_path(const tw_trade_config *cfg, char *buf, size_t n)
{
    if (cfg->engine.journal[0])
        snprintf(buf, n, "%s", cfg->engine.journal);
    else
        snprintf(buf, n, "%s.journal", cfg->sessions[0].store);
}

/* ---- opening ----------------------------------------------------------------------- */

/* Tests only: "AT:N" kills the trader (SIGKILL, itself) at point AT
 * (journal_seg.h, TW_JSEG_AT_*) of its journal's N-th rotation, so a test
 * kills it inside a rotation at a point it chose, not by timing. */
#define TW__JSEG_KILL_ENV "TW_TRADE_TEST_JSEG_KILL"

static int g_jkill_at;
static unsigned g_jkill_nth, g_jkill_seen;

static void jseg_kill_hook(int at, void *arg)
{
    (void)arg; /* under the journal's mutex: one caller at a time */
    if (at == TW_JSEG_AT_CLOSED) /* where each rotation starts */
        g_jkill_seen++;
    if (at == g_jkill_at && g_jkill_seen == g_jkill_nth)
        kill(getpid(), SIGKILL);
}

static int open_fresh(tw_trade_engine *e, tw_error *err)
{
    struct stat st;
    if (stat(e->journal_path, &st) == 0 && !S_ISDIR(st.st_mode))
        return tw__err(err, -ENOTDIR, "journal %s is a single file (an older tickwire's journal; "
                       "a journal is now a directory of segments): finish or export that run "
                       "with the tickwire that wrote it, or start a new run with --reset-seqs",
                       e->journal_path);
    tw_jseg_cfg jc = {.dir = e->journal_path, .segment_bytes = e->cfg->engine.journal_segment_bytes,
                      .fsync = TW_JOURNAL_FSYNC_NONE, .mmap_bytes = 1u << 20};
    const char *jk = getenv(TW__JSEG_KILL_ENV);
    if (jk && sscanf(jk, "%d:%u", &g_jkill_at, &g_jkill_nth) == 2 && g_jkill_at > 0) {
        g_jkill_seen = 0;
        jc.hook = jseg_kill_hook;
    }
    tw_error je = {0};
    int rc = tw_jseg_open(&e->jr, &jc, &je);
    if (rc == -TW_EFORMAT) /* a segment missing or damaged: the books cannot be rebuilt */
        return tw__err(err, -TW_EUNRECOVERABLE, "refusing to trade: %s", je.msg);
    if (rc != 0)
        return tw__err(err, rc, "%s", je.msg);
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
    int rc = tw_jseg_append(&e->jr, TW__JR_META, &m, NULL);
    if (rc == 0)
        rc = tw_jseg_sync(&e->jr);
    if (rc == 0)
        rc = tw_jseg_set_preamble(&e->jr, TW__JR_META, &m);
    return rc ? tw__err(err, rc, "journal %s: %s", e->journal_path, tw_strerror(rc)) : 0;
}

/* A journal with records: its first record (a META, or recovery refuses
 * the journal) starts every segment from now on, as it did before. */
static int first_meta(tw_trade_engine *e, tw_error *err)
{
    tw_jseg_reader r;
    tw_journal_rec rec;
    int rc = tw_jseg_reader_open(&r, e->journal_path, 0, 1, err);
    if (rc != 0)
        return rc;
    rc = tw_jseg_read_burst(&r, &rec, 1, err);
    tw_jseg_reader_close(&r);
    if (rc < 0)
        return rc;
    if (rc == 1 && tw_journal_rec_kind(&rec) == TW__JR_META &&
        (rc = tw_jseg_set_preamble(&e->jr, TW__JR_META, rec.payload)) != 0)
        return tw__err(err, rc, "journal %s: %s", e->journal_path, tw_strerror(rc));
    return 0;
}

int tw__evlog_open(tw_trade_engine *e, tw_error *err)
{
    int rc = pthread_mutex_init(&e->jmu, NULL);
    if (rc != 0)
        return tw__err(err, -rc, "mutex: %s", strerror(rc));
    e->have_jmu = 1;
    tw__evlog_path(e->cfg, e->journal_path, sizeof(e->journal_path));
    if ((rc = tw_mkdir_parents(e->journal_path)) != 0)
        return tw__err(err, rc, "journal %s: cannot create its directory: %s", e->journal_path,
                       strerror(-rc));
    if (e->opts.reset_seqs && (rc = tw_jseg_remove(e->journal_path, err)) != 0)
        return rc;
    if ((rc = open_fresh(e, err)) != 0)
        return rc;
    if (tw_jseg_next_seq(&e->jr) == e->jr.first_seq)
        return append_meta(e, err);
    rc = first_meta(e, err);
    return rc == 0 ? 1 : rc;
}

int tw__evlog_rotate(tw_trade_engine *e, tw_error *err)
{
    char done[sizeof(e->journal_path) + 8];
    snprintf(done, sizeof(done), "%s.done", e->journal_path);
    tw_jseg_close(&e->jr);
    e->have_journal = 0;
    /* The run before the last is forgotten: one ended run is kept. */
    int rc = tw_jseg_remove(done, err);
    if (rc != 0)
        return rc;
    if (rename(e->journal_path, done) != 0)
        return tw__err(err, -errno, "journal %s: cannot move it to %s: %s", e->journal_path,
                       done, strerror(errno));
    rc = open_fresh(e, err);
    return rc ? rc : append_meta(e, err);
}

int tw__evlog_meta_check(const tw_journal_rec *rec, const tw_trade_config *cfg, tw__jr_meta *m)
{
    memcpy(m, rec->payload, sizeof(*m));
    if (tw_journal_rec_kind(rec) != TW__JR_META || memcmp(m->magic, META_MAGIC, 8) != 0)
        return -TW_EFORMAT;
    if (cfg && (m->cfg_digest != tw__cfg_digest(cfg) || m->n_sessions != cfg->n_sessions ||
                m->n_instances != cfg->n_instances))
        return -ESTALE;
    return 0;
}

/* ---- appends of recovery and of processes mode ---------------------------------------- */

int tw__evlog_note(tw_trade_engine *e, const tw_out *o, tw_error *err)
{
    /* Set-up (one thread, before the cores): no jmu needed, but cheap. */
    pthread_mutex_lock(&e->jmu);
    int rc = tw_jseg_append(&e->jr, TW_JOURNAL_OUT, o, NULL);
    pthread_mutex_unlock(&e->jmu);
    return rc ? tw__err(err, rc, "journal %s: %s", e->journal_path, tw_strerror(rc)) : 0;
}

int tw__evlog_put(tw_trade_engine *e, uint32_t core, uint32_t kind, const void *payload)
{
    /* Before the segment exists: the recovery at set-up, one thread. */
    if (!e->have_att)
        return tw_jseg_append(&e->jr, kind, payload, NULL);
    return tw_attach_gw_put(&e->att, core, kind, payload, NULL);
}

int tw__evlog_append(tw_trade_engine *e, uint32_t kind, const void *payload)
{
    return tw_attach_gw_append(&e->att, kind, payload, NULL);
}
