/* Snapshots of the strategy core in threads mode (docs/crash.md, "In
 * tickwire trade: snapshots"): the copy on the strategy core, handed to
 * the snapshot writer's thread (snapshot.h), and the loader the recovery
 * checks its replay with.  Calls nothing else of src/trade. */
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
static void expect_of(tw_trade_engine *e, const tw_strategy *s, uint8_t digest[16])
{
    tw_strategy_config_digest(s, digest);
    for (int i = 0; i < 8; i++)
        digest[8 + i] ^= (uint8_t)(e->run_id >> (8 * i));
}

static void snap_dir(tw_trade_engine *e)
{
    snprintf(e->snap_dir, sizeof(e->snap_dir), "%s.snap", e->journal_path);
}

/* A new run: the last run's snapshots are not its state. */
static void clear_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *ent;
    char p[sizeof(((tw_trade_engine *)0)->snap_dir) + 260];
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

int tw__snap_open(tw_trade_engine *e, tw_error *err)
{
    const uint64_t every = e->cfg->engine.snapshot_every;
    if (e->procs || every == 0 || !e->have_journal)
        return 0;
    snap_dir(e);
    if (!e->recovered)
        clear_dir(e->snap_dir);
    tw_strategy *s = e->host.s;
    expect_of(e, s, e->snap_digest);
    e->snap_klen = tw_strategy_kernels_text(s, NULL, 0);
    e->snap_kernels = malloc(e->snap_klen + 1);
    if (!e->snap_kernels)
        return tw__err(err, -ENOMEM, "snapshots: out of memory");
    tw_strategy_kernels_text(s, e->snap_kernels, e->snap_klen + 1);
    e->snap_bytes = tw_strategy_state_size(s, (uint32_t)e->host.out_cap);
    tw_snap_writer_cfg wc = {
        .write = {.dir = e->snap_dir, .keep = e->cfg->engine.snapshot_keep},
        .digest = e->snap_digest,
        .slot_bytes = tw_snap_section_bytes(e->snap_klen) + tw_snap_section_bytes(e->snap_bytes),
        .finish = on_finish};
    int rc = tw_snap_writer_start(&e->snapw, &wc, err);
    if (rc != 0)
        return rc;
    e->snap_next = (e->next_evseq / every + 1) * every;
    return 0;
}

void tw__snap_close(tw_trade_engine *e)
{
    if (e->snapw) {
        tw_snap_writer_stop(e->snapw);
        e->snapw = NULL;
    }
    free(e->snap_kernels);
    e->snap_kernels = NULL;
}

void tw__snap_take(tw_trade_engine *e)
{
    const uint64_t every = e->cfg->engine.snapshot_every;
    e->snap_next = (e->next_evseq / every + 1) * every;
    tw_snap_slot *slot = tw_snap_writer_begin(e->snapw);
    if (!slot)
        return; /* the writer is still on the last two: skipped (counted) */
    void *k = tw_snap_slot_section(slot, TW_SNAP_SEC_KERNELS, e->snap_klen);
    /* The intents of the last event still on their way to the rings. */
    const uint32_t np = (uint32_t)(e->pend_n - e->pend_off);
    const uint64_t len = tw_strategy_state_size(e->host.s, np);
    void *st = tw_snap_slot_section(slot, TW_SNAP_SEC_STRATEGY, len);
    if (k && st) {
        memcpy(k, e->snap_kernels, e->snap_klen);
        (void)tw_strategy_state_copy(e->host.s, e->next_evseq, e->host.out + e->pend_off, np, st,
                                     (size_t)len);
    }
    tw_snap_writer_commit(e->snapw, slot, e->next_evseq);
}

int tw__snap_newest(tw_trade_engine *e, tw_strategy *s, uint64_t *events, tw_error *err)
{
    snap_dir(e);
    uint8_t digest[16];
    expect_of(e, s, digest);
    char *kernels = malloc(tw_strategy_kernels_text(s, NULL, 0) + 1);
    if (!kernels)
        return tw__err(err, -ENOMEM, "snapshots: out of memory");
    tw_strategy_kernels_text(s, kernels, tw_strategy_kernels_text(s, NULL, 0) + 1);
    tw_snap_expect exp = {.digest = digest, .kernels = kernels};
    tw_snap snap;
    tw_snap_report rep;
    memset(&rep, 0, sizeof(rep));
    int rc = tw_snap_load(e->snap_dir, &exp, &snap, &rep, err);
    for (uint32_t i = 0; i < rep.set_aside && i < 4; i++)
        fprintf(e->log, "tickwire trade: snapshot %s\n", rep.reasons[i]);
    free(kernels);
    if (rc != 0)
        return rc;
    const tw_snap_section *sec = tw_snap_find(&snap, TW_SNAP_SEC_STRATEGY);
    tw_strategy_state_info info;
    tw_out *pend = calloc(e->host.out_cap + 1, sizeof(tw_out));
    if (!pend)
        rc = tw__err(err, -ENOMEM, "snapshots: out of memory");
    else if (!sec)
        rc = tw__err(err, -TW_EFORMAT, "snapshot %s: no strategy state", snap.name);
    else
        rc = tw_strategy_state_load(s, sec->data, sec->len, pend, (uint32_t)e->host.out_cap,
                                    &info, err);
    free(pend);
    if (rc == 0)
        *events = info.journal_seq;
    tw_snap_release(&snap);
    return rc;
}
