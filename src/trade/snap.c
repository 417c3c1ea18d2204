/* Snapshots of the strategy (docs/crash.md, "In tickwire trade:
 * snapshots"): the copy on the strategy's core, handed to the snapshot
 * writer's thread (snapshot.h), and the loader a recovery starts from.
 * One implementation for both modes: the threads-mode strategy core
 * (host.c) and the strategy process (strategy_proc.c) each hold a
 * tw__snapper.  Calls nothing else of src/trade. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trade/engine_internal.h"

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

int tw__snapper_open(tw__snapper *p, const tw_trade_config *cfg, const char *journal_path,
                     uint64_t run_id, const tw_strategy *s, size_t out_cap, uint64_t events,
                     int64_t now_ns, void (*hook)(int at, void *arg), void *hook_arg,
                     tw_error *err)
{
    memset(p, 0, sizeof(*p));
    p->every = cfg->engine.snapshot_every;
    p->interval_ns = (int64_t)cfg->engine.snapshot_interval_ms * 1000000;
    if (p->every == 0 && p->interval_ns == 0)
        return 0;
    dir_of(journal_path, p->dir, sizeof(p->dir));
    expect_of(run_id, s, p->digest);
    p->klen = tw_strategy_kernels_text(s, NULL, 0);
    p->kernels = malloc(p->klen + 1);
    if (!p->kernels)
        return tw__err(err, -ENOMEM, "snapshots: out of memory");
    tw_strategy_kernels_text(s, p->kernels, p->klen + 1);
    size_t bytes = tw_strategy_state_size(s, (uint32_t)out_cap);
    tw_snap_writer_cfg wc = {
        .write = {.dir = p->dir, .keep = cfg->engine.snapshot_keep, .hook = hook,
                  .arg = hook_arg},
        .digest = p->digest,
        .slot_bytes = tw_snap_section_bytes(p->klen) + tw_snap_section_bytes(bytes),
        .finish = on_finish};
    int rc = tw_snap_writer_start(&p->w, &wc, err);
    if (rc != 0) {
        free(p->kernels);
        p->kernels = NULL;
        return rc;
    }
    p->next = p->every ? (events / p->every + 1) * p->every : UINT64_MAX;
    p->next_ns = p->interval_ns ? now_ns + p->interval_ns : INT64_MAX;
    return 0;
}

void tw__snapper_close(tw__snapper *p)
{
    if (p->w) {
        tw_snap_writer_stop(p->w);
        p->w = NULL;
    }
    free(p->kernels);
    p->kernels = NULL;
}

void tw__snapper_take(tw__snapper *p, const tw_strategy *s, uint64_t events, const tw_out *pend,
                      uint32_t np, int64_t now_ns)
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
    tw_snap_writer_commit(p->w, slot, events);
}

int tw__snap_newest(FILE *log, const char *journal_path, uint64_t run_id, tw_strategy *s,
                    size_t out_cap, uint64_t *events, tw_error *err)
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
    tw_snap_expect exp = {.digest = digest, .kernels = kernels};
    tw_snap snap;
    tw_snap_report rep;
    memset(&rep, 0, sizeof(rep));
    int rc = tw_snap_load(dir, &exp, &snap, &rep, err);
    for (uint32_t i = 0; i < rep.set_aside && i < 4; i++)
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
    if (rc == 0)
        *events = info.journal_seq;
    tw_snap_release(&snap);
    return rc;
}

/* ---- the engine's (threads mode) ---------------------------------------------------- */

int tw__snap_open(tw_trade_engine *e, tw_error *err)
{
    if (!e->have_journal)
        return 0;
    if (!e->recovered)
        tw__snap_clear(e->journal_path); /* a new run: the last run's are not its state */
    if (e->procs) /* the strategy process takes them (strategy_proc.c) */
        return 0;
    return tw__snapper_open(&e->snap, e->cfg, e->journal_path, e->run_id, e->host.s,
                            e->host.out_cap, e->next_evseq, tw_clock_now_ns(), NULL, NULL, err);
}

void tw__snap_close(tw_trade_engine *e)
{
    tw__snapper_close(&e->snap);
}
