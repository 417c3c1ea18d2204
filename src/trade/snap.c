/* Snapshots of the strategy (docs/crash.md, "In tickwire trade:
 * snapshots"): the copy on the strategy's core, handed to the snapshot
 * writer's thread (snapshot.h), and the loader a recovery starts from.
 * One implementation for both modes: the threads-mode strategy core
 * (host.c) and the strategy process (strategy_proc.c) each hold a
 * tw__snapper.  Threads mode's also carries the gateway's folds
 * (gwfold.h), computed on the writer thread from the journal.  Calls
 * nothing else of src/trade but the fold. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tickwire/journal_seg.h"
#include "trade/engine_internal.h"
#include "trade/gwfold.h"

#define FOLD_BURST 512

/* What a snapshot of this run must carry: the configuration's digest
 * with the run id in it (a snapshot of another run never loads), and the
 * kernel set. */
static void expect_of(uint64_t run_id, const tw_strategy *s, uint8_t digest[16])
{
    tw_strategy_config_digest(s, digest);
    for (int i = 0; i < 8; i++)
        digest[8 + i] ^= (uint8_t)(run_id >> (8 * i));
}

static void dir_of(const char *journal_path, char *dir, size_t n)
{
    snprintf(dir, n, "%s.snap", journal_path);
}

void tw__snap_clear(const char *journal_path)
{
    char dir[TW__SNAP_DIR_MAX];
    dir_of(journal_path, dir, sizeof(dir));
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *ent;
    char p[TW__SNAP_DIR_MAX + 260];
    while ((ent = readdir(d)) != NULL)
        if (!strncmp(ent->d_name, "snap-", 5) &&
            snprintf(p, sizeof(p), "%s/%s", dir, ent->d_name) < (int)sizeof(p))
            unlink(p);
    closedir(d);
}

static void on_finish(void *arg, uint32_t id, void *data, uint64_t len)
{
    (void)arg;
    if (id == TW_SNAP_SEC_STRATEGY)
        tw_strategy_state_seal(data, (size_t)len);
}

/* The writer thread's fold of the journal: each snapshot at journal seq
 * J carries every session's fold of the records with seq <= J.  They are
 * all in the journal by then: the strategy took event J, and the net
 * cores journal before the ring (evlog.c). */
struct tw__snapfold {
    char path[TW__SNAP_DIR_MAX];
    uint32_t n;            /* sessions */
    tw__gwfold *f;         /* n */
    tw__gwfold **fp;       /* &f[k], for tw__gwfold_rec */
    uint64_t seq;          /* the last record folded (0: none) */
    tw_journal_rec *recs;  /* FOLD_BURST */
    uint8_t *buf;          /* one session's serialised fold */
    size_t cap;
    int failed;            /* a record the fold could not take: no more gateway sections */
    uint64_t failed_seq;
    /* journal_keep = snapshots: segments older than the oldest kept
     * snapshot deleted after each write (the writer thread's). */
    int prune;
    uint64_t pruned;       /* segments deleted */
    uint64_t prune_failed;
    char prune_err[200];
};

static void fold_free(tw__snapfold *sf)
{
    if (!sf)
        return;
    for (uint32_t k = 0; sf->f && k < sf->n; k++)
        tw__gwfold_free(&sf->f[k]);
    free(sf->f);
    free(sf->fp);
    free(sf->recs);
    free(sf->buf);
    free(sf);
}

static tw__snapfold *fold_new(const tw_trade_config *cfg, const char *journal_path,
                              const tw__gwfold *seed, uint64_t seed_seq)
{
    tw__snapfold *sf = calloc(1, sizeof(*sf));
    if (!sf)
        return NULL;
    snprintf(sf->path, sizeof(sf->path), "%s", journal_path);
    sf->n = cfg->n_sessions;
    sf->f = calloc(sf->n ? sf->n : 1, sizeof(tw__gwfold));
    sf->fp = calloc(sf->n ? sf->n : 1, sizeof(tw__gwfold *));
    sf->recs = malloc(FOLD_BURST * sizeof(tw_journal_rec));
    int rc = sf->f && sf->fp && sf->recs ? 0 : -ENOMEM;
    for (uint32_t k = 0; k < sf->n && rc == 0; k++) {
        sf->fp[k] = &sf->f[k];
        rc = tw__gwfold_init(&sf->f[k], cfg, k);
        if (rc == 0 && seed)
            rc = tw__gwfold_copy(&sf->f[k], &seed[k]);
    }
    if (rc != 0) {
        fold_free(sf);
        return NULL;
    }
    sf->seq = seed ? seed_seq : 0;
    /* Both modes: every reader of the journal's start (a recovery, the
     * strategy process's stream, the report of processes mode) starts
     * from a snapshot that checks out. */
    sf->prune = !cfg->engine.journal_keep_all;
    return sf;
}

/* The writer thread's cfg.written: a snapshot of journal seq `seq` is in
 * place, the oldest kept is of oldest_kept; every segment whose records
 * are all at or before it can go (a recovery that falls back to that
 * snapshot reads from oldest_kept + 1). */
static void fold_written(void *arg, uint64_t seq, uint64_t oldest_kept)
{
    (void)seq;
    tw__snapfold *sf = arg;
    if (!sf->prune)
        return;
    tw_error err = {0};
    int n = tw_journal_prune(sf->path, oldest_kept + 1, &err);
    if (n >= 0) {
        sf->pruned += (uint64_t)n;
    } else {
        sf->prune_failed++;
        snprintf(sf->prune_err, sizeof(sf->prune_err), "%s", err.msg);
    }
}

/* The records after the last one folded, through seq. */
static int fold_to(tw__snapfold *sf, uint64_t seq, tw_error *err)
{
    tw_jseg_reader r;
    tw_error je = {0};
    int rc = tw_jseg_reader_open(&r, sf->path, sf->seq + 1, FOLD_BURST, &je);
    if (rc != 0)
        return tw__err(err, rc, "gateway fold: %s", je.msg);
    while (rc == 0 && sf->seq < seq) {
        uint64_t want = seq - sf->seq < FOLD_BURST ? seq - sf->seq : FOLD_BURST;
        int k = tw_jseg_read_burst(&r, sf->recs, (uint32_t)want, &je);
        if (k <= 0) {
            rc = k < 0 ? tw__err(err, k, "gateway fold: %s", je.msg)
                       : tw__err(err, -TW_EFORMAT, "gateway fold: %s ends at seq %llu, before "
                                 "the snapshot's %llu", sf->path,
                                 (unsigned long long)sf->seq, (unsigned long long)seq);
            break;
        }
        for (int i = 0; i < k && rc == 0; i++) {
            if ((rc = tw__gwfold_rec(sf->fp, sf->n, &sf->recs[i])) != 0) {
                /* Half a record may be in: the fold is no longer one. */
                sf->failed = rc;
                sf->failed_seq = sf->recs[i].seq;
                rc = tw__err(err, rc, "gateway fold: journal %s record %llu: not for this "
                             "configuration", sf->path, (unsigned long long)sf->recs[i].seq);
            } else {
                sf->seq = sf->recs[i].seq;
            }
        }
    }
    tw_jseg_reader_close(&r);
    return rc;
}

/* The writer thread's cfg.append: the folds at the snapshot's seq. */
static int fold_append(void *arg, uint64_t seq, tw_snap_buf *b, tw_error *err)
{
    tw__snapfold *sf = arg;
    if (sf->failed)
        return tw__err(err, sf->failed, "gateway fold: stopped at journal record %llu",
                       (unsigned long long)sf->failed_seq);
    if (seq < sf->seq)
        return tw__err(err, -EINVAL, "gateway fold: a snapshot of journal seq %llu after one of "
                       "%llu", (unsigned long long)seq, (unsigned long long)sf->seq);
    int rc = seq > sf->seq ? fold_to(sf, seq, err) : 0;
    for (uint32_t k = 0; k < sf->n && rc == 0; k++) {
        size_t len = 0;
        if ((rc = tw__gwfold_save(&sf->f[k], seq, &sf->buf, &sf->cap, &len)) == 0)
            rc = tw_snap_add(b, TW_SNAP_SEC_GW_FOLD, sf->buf, len);
        if (rc != 0)
            tw__err(err, rc, "gateway fold: out of memory");
    }
    return rc;
}

static int snapper_start(tw__snapper *p, const tw_trade_config *cfg, const char *journal_path,
                         uint64_t run_id, const tw_strategy *s, size_t out_cap, uint64_t events,
                         int64_t now_ns, void (*hook)(int at, void *arg), void *hook_arg,
                         tw__snapfold *fold, FILE *trades, tw_error *err)
{
    p->trades = trades;
    p->every = cfg->engine.snapshot_every;
    p->interval_ns = (int64_t)cfg->engine.snapshot_interval_ms * 1000000;
    dir_of(journal_path, p->dir, sizeof(p->dir));
    expect_of(run_id, s, p->digest);
    p->klen = tw_strategy_kernels_text(s, NULL, 0);
    p->kernels = malloc(p->klen + 1);
    if (!p->kernels) {
        fold_free(fold);
        return tw__err(err, -ENOMEM, "snapshots: out of memory");
    }
    tw_strategy_kernels_text(s, p->kernels, p->klen + 1);
    size_t bytes = tw_strategy_state_size(s, (uint32_t)out_cap);
    tw_snap_writer_cfg wc = {
        .write = {.dir = p->dir, .keep = cfg->engine.snapshot_keep, .hook = hook,
                  .arg = hook_arg},
        .digest = p->digest,
        .slot_bytes = tw_snap_section_bytes(p->klen) + tw_snap_section_bytes(bytes),
        .finish = on_finish,
        .append = fold ? fold_append : NULL,
        .written = fold ? fold_written : NULL,
        .arg = fold};
    if (trades)
        wc.slot_bytes += tw_snap_section_bytes(sizeof(uint64_t));
    int rc = tw_snap_writer_start(&p->w, &wc, err);
    if (rc != 0) {
        free(p->kernels);
        p->kernels = NULL;
        fold_free(fold);
        return rc;
    }
    p->fold = fold;
    p->next = p->every ? (events / p->every + 1) * p->every : UINT64_MAX;
    p->next_ns = p->interval_ns ? now_ns + p->interval_ns : INT64_MAX;
    return 0;
}

int tw__snapper_open(tw__snapper *p, const tw_trade_config *cfg, const char *journal_path,
                     uint64_t run_id, const tw_strategy *s, size_t out_cap, uint64_t events,
                     int64_t now_ns, void (*hook)(int at, void *arg), void *hook_arg,
                     tw_error *err)
{
    memset(p, 0, sizeof(*p));
    if (cfg->engine.snapshot_every == 0 && cfg->engine.snapshot_interval_ms == 0)
        return 0;
    return snapper_start(p, cfg, journal_path, run_id, s, out_cap, events, now_ns, hook,
                         hook_arg, NULL, NULL, err);
}

int tw__snapper_open_gw(tw__snapper *p, const tw_trade_config *cfg, const char *journal_path,
                        uint64_t run_id, const tw_strategy *s, size_t out_cap, uint64_t events,
                        int64_t now_ns, void (*hook)(int at, void *arg), void *hook_arg,
                        const tw__gwfold *seed, uint64_t seed_seq, FILE *trades,
                        tw_error *err)
{
    memset(p, 0, sizeof(*p));
    if (cfg->engine.snapshot_every == 0 && cfg->engine.snapshot_interval_ms == 0)
        return 0;
    tw__snapfold *fold = fold_new(cfg, journal_path, seed, seed_seq);
    if (!fold)
        return tw__err(err, -ENOMEM, "snapshots: out of memory");
    return snapper_start(p, cfg, journal_path, run_id, s, out_cap, events, now_ns, hook,
                         hook_arg, fold, trades, err);
}

void tw__snapper_log_pruned(const tw__snapper *p, FILE *log, const char *who)
{
    const tw__snapfold *sf = p->fold;
    if (sf && sf->prune)
        fprintf(log, "tickwire trade: %sjournal: %llu segments deleted behind the oldest kept "
                "snapshot (journal_keep = snapshots)%s%s\n", who, (unsigned long long)sf->pruned,
                sf->prune_failed ? "; a deletion failed: " : "",
                sf->prune_failed ? sf->prune_err : "");
}

void tw__snapper_close(tw__snapper *p)
{
    if (p->w) {
        tw_snap_writer_stop(p->w);
        p->w = NULL;
    }
    fold_free(p->fold);
    p->fold = NULL;
    free(p->kernels);
    p->kernels = NULL;
}

static void take(tw__snapper *p, const tw_strategy *s, uint64_t events, uint64_t seq,
                 const tw_out *pend, uint32_t np, int64_t now_ns)
{
    if (p->every)
        p->next = (events / p->every + 1) * p->every;
    if (p->interval_ns)
        p->next_ns = now_ns + p->interval_ns;
    tw_snap_slot *slot = tw_snap_writer_begin(p->w);
    if (!slot)
        return; /* the writer is still on the last two: skipped (counted) */
    void *k = tw_snap_slot_section(slot, TW_SNAP_SEC_KERNELS, p->klen);
    const uint64_t len = tw_strategy_state_size(s, np);
    void *st = tw_snap_slot_section(slot, TW_SNAP_SEC_STRATEGY, len);
    if (k && st) {
        memcpy(k, p->kernels, p->klen);
        (void)tw_strategy_state_copy(s, events, pend, np, st, (size_t)len);
    }
    if (p->trades) {
        /* The rows of every trade the state booked, out of our buffer
         * (one write; kill -9 keeps what the kernel has): a recovery from
         * this snapshot cuts the CSV here and the replay writes on. */
        uint64_t *csv = tw_snap_slot_section(slot, TW_SNAP_SEC_TRADES_CSV, sizeof(uint64_t));
        off_t at = fflush(p->trades) == 0 ? ftello(p->trades) : -1;
        if (csv)
            *csv = at >= 0 ? (uint64_t)at : UINT64_MAX;
    }
    tw_snap_writer_commit(p->w, slot, seq);
}

void tw__snapper_take(tw__snapper *p, const tw_strategy *s, uint64_t events, const tw_out *pend,
                      uint32_t np, int64_t now_ns)
{
    TW_ASSERT(!p->fold); /* the folds need the journal seq: tw__snapper_take_at */
    take(p, s, events, events, pend, np, now_ns);
}

void tw__snapper_take_at(tw__snapper *p, const tw_strategy *s, uint64_t events, uint64_t jseq,
                         const tw_out *pend, uint32_t np, int64_t now_ns)
{
    take(p, s, events, jseq, pend, np, now_ns);
}

static int newest(FILE *log, const char *journal_path, uint64_t run_id, tw_strategy *s,
                  size_t out_cap, int (*accept)(void *, const tw_snap *, tw_error *), void *arg,
                  uint64_t *events, uint64_t *jseq, tw_error *err)
{
    char dir[TW__SNAP_DIR_MAX];
    dir_of(journal_path, dir, sizeof(dir));
    uint8_t digest[16];
    expect_of(run_id, s, digest);
    size_t klen = tw_strategy_kernels_text(s, NULL, 0);
    char *kernels = malloc(klen + 1);
    if (!kernels)
        return tw__err(err, -ENOMEM, "snapshots: out of memory");
    tw_strategy_kernels_text(s, kernels, klen + 1);
    tw_snap_expect exp = {.digest = digest, .kernels = kernels, .accept = accept, .arg = arg};
    tw_snap snap;
    tw_snap_report rep;
    memset(&rep, 0, sizeof(rep));
    int rc = tw_snap_load(dir, &exp, &snap, &rep, err);
    for (uint32_t i = 0; i < rep.set_aside + rep.refused && i < 4; i++)
        fprintf(log, "tickwire trade: snapshot %s\n", rep.reasons[i]);
    free(kernels);
    if (rc != 0)
        return rc;
    const tw_snap_section *sec = tw_snap_find(&snap, TW_SNAP_SEC_STRATEGY);
    tw_strategy_state_info info;
    tw_out *pend = calloc(out_cap + 1, sizeof(tw_out));
    if (!pend)
        rc = tw__err(err, -ENOMEM, "snapshots: out of memory");
    else if (!sec)
        rc = tw__err(err, -TW_EFORMAT, "snapshot %s: no strategy state", snap.name);
    else
        rc = tw_strategy_state_load(s, sec->data, sec->len, pend, (uint32_t)out_cap, &info, err);
    free(pend);
    if (rc == 0) {
        *events = info.journal_seq;
        if (jseq)
            *jseq = snap.hdr.journal_seq;
    }
    tw_snap_release(&snap);
    return rc;
}

int tw__snap_newest(FILE *log, const char *journal_path, uint64_t run_id, tw_strategy *s,
                    size_t out_cap, uint64_t *events, tw_error *err)
{
    return newest(log, journal_path, run_id, s, out_cap, NULL, NULL, events, NULL, err);
}

int tw__snap_newest_gw(FILE *log, const char *journal_path, uint64_t run_id, tw_strategy *s,
                       size_t out_cap, int (*accept)(void *, const tw_snap *, tw_error *),
                       void *arg, uint64_t *events, uint64_t *jseq, tw_error *err)
{
    return newest(log, journal_path, run_id, s, out_cap, accept, arg, events, jseq, err);
}

int tw__snap_accept_gw(void *arg, const tw_snap *s, tw_error *err)
{
    tw__snap_gw *a = arg;
    const uint64_t j = s->hdr.journal_seq;
    if (j >= a->end) {
        if (j > a->beyond)
            a->beyond = j;
        return tw__err(err, -TW_EFORMAT, "of journal seq %llu, beyond the journal's %llu records",
                       (unsigned long long)j, (unsigned long long)(a->end - 1));
    }
    /* Record J: the strategy's last event, in the journal. */
    tw_jseg_reader r;
    tw_journal_rec rec;
    tw_error je = {0};
    int rc = tw_jseg_reader_open(&r, a->journal_path, j, 1, &je);
    if (rc == 0) {
        int k = tw_jseg_read_burst(&r, &rec, 1, &je);
        rc = k == 1 && rec.seq == j && tw_journal_rec_kind(&rec) == TW_JOURNAL_EV ? 0
                                                                               : -TW_EFORMAT;
        tw_jseg_reader_close(&r);
    }
    if (rc != 0)
        return tw__err(err, -TW_EFORMAT, "of journal seq %llu, which is not an event of the "
                       "journal: %s", (unsigned long long)j, je.msg[0] ? je.msg : "another kind");
    /* The trades CSV's length at the copy (written by the strategy's
     * core or process, with a CSV). */
    const tw_snap_section *csv = tw_snap_find(s, TW_SNAP_SEC_TRADES_CSV);
    uint64_t len = UINT64_MAX;
    if (csv && csv->len == sizeof(len))
        memcpy(&len, csv->data, sizeof(len));
    a->csv_len = len <= INT64_MAX ? (int64_t)len : -1;
    if (a->need_csv) {
        struct stat st;
        if (a->csv_len < 0)
            return tw__err(err, -TW_EFORMAT, "without the trades CSV's length (its rows before "
                           "it could not be kept)");
        if (fstat(fileno(a->need_csv), &st) != 0 || st.st_size < a->csv_len)
            return tw__err(err, -TW_EFORMAT, "of a trades CSV of %lld bytes, longer than the "
                           "file's %lld", (long long)a->csv_len,
                           (long long)(fstat(fileno(a->need_csv), &st) == 0 ? st.st_size : -1));
    }
    return a->folds ? tw__gwfold_load_snap(a->folds, a->cfg->n_sessions, a->cfg, s, err) : 0;
}

/* ---- the engine's (threads mode) ---------------------------------------------------- */

int tw__snap_open(tw_trade_engine *e, tw_error *err)
{
    if (!e->have_journal)
        return 0;
    if (!e->recovered)
        tw__snap_clear(e->journal_path); /* a new run: the last run's are not its state */
    if (e->procs) { /* the strategy process takes them (strategy_proc.c) */
        tw__snap_seed_free(e);
        return 0;
    }
    memset(&e->snap, 0, sizeof(e->snap));
    const tw_trade_config *cfg = e->cfg;
    int rc = 0;
    if (cfg->engine.snapshot_every || cfg->engine.snapshot_interval_ms) {
        tw__snapfold *fold = fold_new(cfg, e->journal_path, e->fold_seed, e->fold_seed_seq);
        rc = fold ? snapper_start(&e->snap, cfg, e->journal_path, e->run_id, e->host.s,
                                  e->host.out_cap, e->next_evseq, tw_clock_now_ns(), NULL, NULL,
                                  fold, e->trades, err)
                  : tw__err(err, -ENOMEM, "snapshots: out of memory");
    }
    tw__snap_seed_free(e);
    return rc;
}

void tw__snap_seed_free(tw_trade_engine *e)
{
    for (uint32_t k = 0; e->fold_seed && k < e->n_gw; k++)
        tw__gwfold_free(&e->fold_seed[k]);
    free(e->fold_seed);
    e->fold_seed = NULL;
    e->fold_seed_seq = 0;
}

void tw__snap_close(tw_trade_engine *e)
{
    if (e->snap.w && !e->opts.quiet) {
        tw_snap_writer_stats ss;
        tw_snap_writer_flush(e->snap.w);
        tw_snap_writer_stats_get(e->snap.w, &ss);
        fprintf(e->log, "tickwire trade: snapshots: %llu written, %llu skipped with the writer "
                "busy, %llu failed%s%s\n", (unsigned long long)ss.written,
                (unsigned long long)ss.skipped, (unsigned long long)ss.failed,
                ss.failed ? "; the last: " : "", ss.failed ? ss.last_err : "");
        tw__snapper_log_pruned(&e->snap, e->log, "");
    }
    tw__snapper_close(&e->snap);
    tw__snap_seed_free(e);
}
