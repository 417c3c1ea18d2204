/* `tickwire bench recovery`: kill-to-ready of the strategy core with
 * snapshots and a segmented journal (docs/crash.md, "Recovery bounded by
 * snapshots"; docs/benchmarks.md, "Recovery").
 *
 * For each journal size (10^5, 10^6, 10^7 records; --quick: 10^3, 10^4,
 * 10^5) the strategy core is driven offline over the study bars repeated
 * (no network): per bar a BAR event, the intents it writes, and a fill per
 * order at the bar's close (a lockstep venue), every one appended to a
 * segmented journal (journal_seg.h) as EV or OUT records; every
 * snapshot_every records the core copies its state into a writer slot
 * (tw_strategy_state_copy, timed: the copy on the hot path; the payload's
 * CRC is sealed on the writer thread) and the copy is written as a snapshot
 * (snapshot.h, keep 2), then the journal is pruned to the oldest kept
 * snapshot (journal_keep = snapshots).  The disk used (segments and
 * snapshots, stat'ed) is tracked at every rotation, before and after every
 * snapshot and prune.
 *
 * Then, the writer gone as after kill -9 (its records in the page cache),
 * kill-to-ready is timed: a fresh strategy, the newest snapshot that
 * checks out loaded, the journal after it replayed; the recovered state
 * is compared with the writer's (digest and every instance's books).
 * The three sizes are recovered in alternating rounds (A B C, C B A, ...),
 * the median per size reported.  Ready time is set by the tail after the
 * newest snapshot: the run's end falls where it falls in the cadence, so
 * the worst phase (a kill just before the next snapshot: snapshot_every
 * - 1 records to replay) is reported too, from the measured replay rate. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <pthread.h>
#include <unistd.h>

#include "common/cli_opt.h"
#include "common/stats.h"
#include "tickwire/clock.h"
#include "tickwire/journal_seg.h"
#include "tickwire/kernel.h"
#include "tickwire/snapshot.h"
#include "tickwire/strategy.h"

int tw__cli_bench_recovery(int argc, char **argv);

static const char usage[] =
    "usage: tickwire bench recovery [--dir DIR] [--data FILE] [--snapshot-every N]\n"
    "                               [--segment-bytes B] [--combos K] [--reps N] [--quick]\n"
    "\n"
    "Kill-to-ready of the strategy core (newest snapshot + the journal after it) for\n"
    "journals of 10^5, 10^6 and 10^7 records, and the disk used with journal_keep =\n"
    "snapshots.\n"
    "  --dir DIR            where the journals and snapshots go (default /tmp)\n"
    "  --data FILE          the bars (raw float64; default: a seeded walk of the\n"
    "                       study's size and sigma)\n"
    "  --snapshot-every N   records between snapshots (default 50000)\n"
    "  --segment-bytes B    journal segment size (default 64 MiB)\n"
    "  --combos K           hma_sar combos of the default grid on the one instrument\n"
    "                       (default 8)\n"
    "  --reps N             alternating recovery rounds, the median reported (default 5)\n"
    "  --quick              10^3, 10^4, 10^5 records, snapshots every 10^4, 256 KiB\n"
    "                       segments (a smoke test: every check, figures not judged)\n";

#define N_SIZES 3
#define BURST 256

typedef struct bench {
    const double *close;
    size_t n_close;
    uint64_t every, seg_bytes;
    uint32_t n_combos;
    tw_instrument_cfg instr;
    tw_instance_cfg *inst;
    tw_strategy_cfg cfg;
    size_t mem_bytes;
} bench;

typedef struct run_out {
    char jdir[512], sdir[512];
    uint64_t records, snapshots, rotations, pruned, skipped, prune_failed;
    uint64_t max_disk, max_segments, snap_bytes;
    /* Shared with the snapshot writer thread (its hook and callback). */
    pthread_mutex_t mu;
    uint64_t n_commit, *commit_seq;
    int64_t *commit_ns;
    double *write_ms;
    double copy_ns_median;  /* tw_strategy_state_copy, per snapshot */
    double write_ms_median; /* tw_snap_write, per snapshot */
    double build_s;
    uint64_t digest;        /* of the writer at the end */
    tw_strategy *s;         /* the writer's strategy (books compared) */
    void *mem;
} run_out;

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The study's construction (close = 100 exp(cumsum(N(0, 0.0008)))), with
 * this program's own seeded normals (not numpy's stream). */
static double *walk(size_t n)
{
    double *c = malloc(n * sizeof(double));
    if (!c)
        return NULL;
    double lv = 0.0;
    for (size_t i = 0; i < n; i++) {
        double u1 = ((double)(mix64(2 * i) >> 11) + 0.5) / 9007199254740992.0;
        double u2 = ((double)(mix64(2 * i + 1) >> 11) + 0.5) / 9007199254740992.0;
        lv += 0.0008 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
        c[i] = 100.0 * exp(lv);
    }
    return c;
}

static int rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    return rmdir(dir) == 0 ? 0 : -errno;
}

/* Bytes of the regular files in dir (and how many). */
static uint64_t dir_bytes(const char *dir, uint64_t *files)
{
    DIR *d = opendir(dir);
    uint64_t sum = 0, n = 0;
    if (!d)
        return 0;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.' && stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
            sum += (uint64_t)st.st_size;
            n++;
        }
    }
    closedir(d);
    if (files)
        *files = n;
    return sum;
}

/* Called by the appending thread and the snapshot writer's. */
static void track_disk(run_out *o)
{
    pthread_mutex_lock(&o->mu);
    uint64_t segs = 0;
    uint64_t b = dir_bytes(o->jdir, &segs) + dir_bytes(o->sdir, NULL);
    if (b > o->max_disk)
        o->max_disk = b;
    if (segs > o->max_segments)
        o->max_segments = segs;
    pthread_mutex_unlock(&o->mu);
}

/* The writer's hook: the disk with the new snapshot renamed into place and
 * the old ones not yet deleted (the most snapshots on disk at once). */
static void on_write_step(int at, void *arg)
{
    if (at == TW_SNAP_AT_RENAMED)
        track_disk(arg);
}

/* On the writer thread: the strategy's payload sealed (its CRC). */
static void on_finish(void *arg, uint32_t id, void *data, uint64_t len)
{
    (void)arg;
    if (id == TW_SNAP_SEC_STRATEGY)
        tw_strategy_state_seal(data, (size_t)len);
}

/* A snapshot is in place: journal_keep = snapshots prunes to the oldest
 * kept one (on the writer thread, as the trader's writer does). */
static void on_written(void *arg, uint64_t seq, uint64_t oldest_kept)
{
    run_out *o = arg;
    const int64_t now = tw_clock_now_ns();
    track_disk(o);
    tw_error err = {0};
    int pr = tw_journal_prune(o->jdir, oldest_kept + 1, &err);
    pthread_mutex_lock(&o->mu);
    for (uint64_t k = 0; k < o->n_commit; k++)
        if (o->commit_seq[k] == seq)
            o->write_ms[k] = (double)(now - o->commit_ns[k]) / 1e6;
    if (pr >= 0)
        o->pruned += (uint64_t)pr;
    else
        o->prune_failed++;
    pthread_mutex_unlock(&o->mu);
    track_disk(o);
}

static tw_strategy *strategy_new(const bench *b, void **mem, tw_error *err)
{
    *mem = aligned_alloc(64, b->mem_bytes);
    if (!*mem)
        return NULL;
    return tw_strategy_init(*mem, b->mem_bytes, &b->cfg, err);
}

static void expect_of(const tw_strategy *s, uint8_t digest[16], char *kernels, size_t cap)
{
    tw_strategy_config_digest(s, digest);
    tw_strategy_kernels_text(s, kernels, cap);
}

/* Builds a journal of n records with snapshots; o keeps the writer. */
static int build(const bench *b, const char *base, uint64_t n, run_out *o, tw_error *err)
{
    memset(o, 0, sizeof(*o));
    pthread_mutex_init(&o->mu, NULL);
    if (snprintf(o->jdir, sizeof(o->jdir), "%s/journal-%llu", base, (unsigned long long)n) >=
            (int)sizeof(o->jdir) ||
        snprintf(o->sdir, sizeof(o->sdir), "%s/snapshots-%llu", base, (unsigned long long)n) >=
            (int)sizeof(o->sdir))
        return tw__err(err, -ENAMETOOLONG, "%s: path too long", base);
    rm_tree(o->jdir);
    rm_tree(o->sdir);
    tw_strategy *s = strategy_new(b, &o->mem, err);
    if (!s)
        return -ENOMEM;
    o->s = s;
    tw_jseg j;
    tw_jseg_cfg jc = {.dir = o->jdir, .segment_bytes = b->seg_bytes};
    int rc = tw_jseg_open(&j, &jc, err);
    if (rc)
        return rc;
    uint8_t digest[16];
    char kernels[4096];
    expect_of(s, digest, kernels, sizeof(kernels));
    const size_t state_cap = tw_strategy_state_size(s, 0), klen = strlen(kernels);
    const size_t max_out = tw_strategy_max_out(s);
    tw_out *outs = malloc(max_out * sizeof(tw_out));
    tw_ev *fills = malloc(max_out * sizeof(tw_ev));
    uint64_t n_snaps_cap = n / b->every + 2, n_snaps = 0;
    o->commit_seq = calloc(n_snaps_cap, sizeof(uint64_t));
    o->commit_ns = calloc(n_snaps_cap, sizeof(int64_t));
    o->write_ms = calloc(n_snaps_cap, sizeof(double));
    double *copy_ns = calloc(n_snaps_cap, sizeof(double));
    tw_snap_writer *wr = NULL;
    tw_snap_writer_cfg wc = {
        .write = {.dir = o->sdir, .keep = TW_SNAP_DEFAULT_KEEP, .hook = on_write_step, .arg = o},
        .digest = digest,
        .slot_bytes = tw_snap_section_bytes(klen) + tw_snap_section_bytes(state_cap),
        .written = on_written,
        .finish = on_finish,
        .arg = o};
    if (!outs || !fills || !copy_ns || !o->write_ms || !o->commit_seq || !o->commit_ns) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = tw_snap_writer_start(&wr, &wc, err)) != 0)
        goto out;
    const int64_t t0 = tw_clock_now_ns();
    uint64_t rec = 0, next_snap = b->every, rotations = 0;
    uint64_t bar = 0;
    tw_ev ev_up = {.type = TW_EV_SESSION, .now_ns = 1};
    ev_up.u.session.state = TW_SESSION_UP;
    tw_strategy_on_event(s, &ev_up, outs, max_out);
    rc = tw_jseg_append(&j, TW_JOURNAL_EV, &ev_up, NULL);
    rec++;
    track_disk(o);
    while (rc == 0 && rec < n) {
        tw_ev ev = {.type = TW_EV_BAR, .now_ns = (int64_t)(bar + 2) * 1000};
        ev.u.bar.index = bar;
        ev.u.bar.close = b->close[bar % b->n_close];
        bar++;
        size_t m = tw_strategy_on_event(s, &ev, outs, max_out);
        /* This event, its intents and the venue's fills, as the gateway
         * journals them (truncated at n records). */
        if ((rc = tw_jseg_append(&j, TW_JOURNAL_EV, &ev, NULL)) != 0)
            break;
        rec++;
        size_t k = m < n - rec ? m : (size_t)(n - rec);
        if (k && (rc = tw_jseg_append_bulk(&j, TW_JOURNAL_OUT, outs, (uint32_t)k, NULL)) != 0)
            break;
        rec += k;
        size_t nf = 0;
        for (size_t q = 0; q < k; q++) {
            if (outs[q].type != TW_OUT_ORDER)
                continue;
            tw_ev *f = &fills[nf++];
            memset(f, 0, sizeof(*f));
            f->type = TW_EV_FILL;
            f->side = outs[q].side;
            f->now_ns = ev.now_ns;
            f->u.fill.order_id = outs[q].order_id;
            f->u.fill.qty = outs[q].qty;
            f->u.fill.px = isnan(ev.u.bar.close) ? 100.0 : ev.u.bar.close;
        }
        if (nf > n - rec)
            nf = (size_t)(n - rec);
        for (size_t q = 0; q < nf; q++)
            tw_strategy_on_event(s, &fills[q], outs, max_out);
        if (nf && (rc = tw_jseg_append_bulk(&j, TW_JOURNAL_EV, fills, (uint32_t)nf, NULL)) != 0)
            break;
        rec += nf;
        if (j.rotations != rotations) {
            rotations = j.rotations;
            track_disk(o);
        }
        if (rec >= next_snap && rec < n) {
            next_snap += b->every;
            /* The copy on the core, into a writer slot, handed over. */
            tw_snap_slot *slot = tw_snap_writer_begin(wr);
            if (slot) {
                void *kp = tw_snap_slot_section(slot, TW_SNAP_SEC_KERNELS, klen);
                void *sp = tw_snap_slot_section(slot, TW_SNAP_SEC_STRATEGY, state_cap);
                const int64_t c0 = tw_clock_now_ns();
                if (kp && sp) {
                    memcpy(kp, kernels, klen);
                    tw_strategy_state_copy(s, rec, NULL, 0, sp, state_cap);
                }
                copy_ns[n_snaps++] = (double)(tw_clock_now_ns() - c0);
                pthread_mutex_lock(&o->mu);
                o->commit_seq[o->n_commit] = rec;
                o->commit_ns[o->n_commit++] = tw_clock_now_ns();
                pthread_mutex_unlock(&o->mu);
                tw_snap_writer_commit(wr, slot, rec);
            }
        }
    }
    tw_snap_writer_flush(wr); /* every committed snapshot written */
    tw_snap_writer_stats ws;
    tw_snap_writer_stats_get(wr, &ws);
    o->skipped = ws.skipped;
    if (rc == 0 && ws.failed)
        rc = tw__err(err, -EIO, "%llu snapshots failed: %s", (unsigned long long)ws.failed,
                     ws.last_err);
    if (rc == 0 && o->prune_failed)
        rc = tw__err(err, -EIO, "%llu journal prunes failed", (unsigned long long)o->prune_failed);
    track_disk(o);
    o->records = rec;
    o->snapshots = n_snaps;
    o->rotations = j.rotations;
    o->build_s = (double)(tw_clock_now_ns() - t0) / 1e9;
    o->digest = tw_strategy_digest(s);
    o->copy_ns_median = n_snaps ? tw__median_f64(copy_ns, n_snaps) : 0.0;
    o->write_ms_median = n_snaps ? tw__median_f64(o->write_ms, n_snaps) : 0.0;
    o->snap_bytes = TW_SNAP_HDR_BYTES + wc.slot_bytes + TW_SNAP_TRAILER_BYTES;
    tw_jseg_close(&j); /* as kill -9: no sync; the records are in the page cache */
out:
    tw_snap_writer_stop(wr);
    free(outs);
    free(fills);
    free(copy_ns);
    return rc;
}

typedef struct recovered {
    double ready_ms;
    uint64_t tail_records, tail_events, snap_seq;
    int from_snapshot;
    int books_equal;
} recovered;

static int same_books(const tw_strategy *a, const tw_strategy *b)
{
    if (tw_strategy_digest(a) != tw_strategy_digest(b))
        return 0;
    for (uint32_t i = 0; i < tw_strategy_n_instances(a); i++) {
        tw_instance_stats x, y;
        tw_strategy_instance(a, i, &x);
        tw_strategy_instance(b, i, &y);
        if (x.position != y.position || x.trades != y.trades ||
            memcmp(&x.pnl, &y.pnl, sizeof(double)) || x.signal_trades != y.signal_trades ||
            memcmp(&x.signal_pnl, &y.signal_pnl, sizeof(double)) || x.orders != y.orders ||
            x.fills != y.fills || x.signal != y.signal)
            return 0;
    }
    return 1;
}

/* Kill-to-ready: a fresh strategy (memory allocated beforehand, as a
 * standby has it), the newest good snapshot, the tail. */
static int recover(const bench *b, const run_out *o, void *mem, recovered *r, tw_error *err)
{
    memset(r, 0, sizeof(*r));
    tw_journal_rec *recs = malloc(BURST * sizeof(tw_journal_rec));
    tw_out *outs = NULL;
    if (!recs)
        return -ENOMEM;
    const int64_t t0 = tw_clock_now_ns();
    tw_strategy *s = tw_strategy_init(mem, b->mem_bytes, &b->cfg, err);
    int rc = s ? 0 : -EINVAL;
    if (rc)
        goto out;
    const size_t max_out = tw_strategy_max_out(s);
    outs = malloc(max_out * sizeof(tw_out));
    uint8_t digest[16];
    char kernels[4096];
    expect_of(s, digest, kernels, sizeof(kernels));
    tw_snap_expect exp = {.digest = digest, .kernels = kernels};
    tw_snap snap;
    tw_snap_report rep;
    memset(&rep, 0, sizeof(rep));
    uint64_t from = 1;
    rc = tw_snap_load(o->sdir, &exp, &snap, &rep, err);
    if (rc == 0) {
        const tw_snap_section *sec = tw_snap_find(&snap, TW_SNAP_SEC_STRATEGY);
        tw_strategy_state_info info;
        rc = sec ? tw_strategy_state_load(s, sec->data, sec->len, NULL, 0, &info, err) : -ENOENT;
        if (rc == 0) {
            from = info.journal_seq + 1;
            r->snap_seq = info.journal_seq;
            r->from_snapshot = 1;
        }
        tw_snap_release(&snap);
        if (rc)
            goto out;
    } else if (rc != -ENOENT) {
        goto out;
    }
    tw_jseg_reader rd;
    rc = tw_jseg_reader_open(&rd, o->jdir, from, BURST, err);
    if (rc)
        goto out; /* the journal no longer starts at `from`: a gap */
    for (;;) {
        int k = tw_jseg_read_burst(&rd, recs, BURST, err);
        if (k < 0) {
            rc = k;
            break;
        }
        if (k == 0)
            break;
        r->tail_records += (uint64_t)k;
        for (int q = 0; q < k; q++)
            if (tw_journal_rec_kind(&recs[q]) == TW_JOURNAL_EV) {
                tw_ev ev;
                memcpy(&ev, recs[q].payload, sizeof(ev));
                tw_strategy_on_event(s, &ev, outs, max_out);
                r->tail_events++;
            }
    }
    tw_jseg_reader_close(&rd);
    r->ready_ms = (double)(tw_clock_now_ns() - t0) / 1e6;
    if (rc == 0)
        r->books_equal = same_books(s, o->s);
out:
    free(recs);
    free(outs);
    return rc;
}

/* The copy on the core, warm (the same buffer reps times): ns per
 * instance, the median; *bytes the payload; < 0 on error. */
static double copy_warm_ns(const tw_strategy_cfg *c, int reps, size_t *bytes_out)
{
    size_t bytes = tw_strategy_memsize(c);
    void *mem = bytes ? aligned_alloc(64, bytes) : NULL;
    tw_error err = {0};
    tw_strategy *s = mem ? tw_strategy_init(mem, bytes, c, &err) : NULL;
    double r = -1;
    if (s) {
        size_t cap = tw_strategy_state_size(s, 0);
        uint8_t *buf = malloc(cap);
        double *t = calloc((size_t)reps, sizeof(double));
        if (buf && t) {
            for (int k = 0; k < reps; k++) {
                int64_t t0 = tw_clock_now_ns();
                size_t w = tw_strategy_state_copy(s, 1, NULL, 0, buf, cap);
                t[k] = w ? (double)(tw_clock_now_ns() - t0) / c->n_instances : -1;
            }
            r = tw__median_f64(t, (size_t)reps);
            *bytes_out = cap;
        }
        free(buf);
        free(t);
    }
    free(mem);
    return r;
}

/* The copy for n instances of a flat kernel (zscore, default params). */
static double copy_flat_ns(uint32_t n, int reps)
{
    const tw_kernel_def *z = tw_kernel_builtin(1);
    tw_instrument_cfg in = {.symbol = "AAA"};
    tw_instance_cfg *ic = calloc(n, sizeof(*ic));
    if (!ic || !z)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        snprintf(ic[i].name, TW_NAME_MAX, "z%u", i);
        ic[i].kernel = z;
        for (uint32_t p = 0; p < z->n_params; p++)
            ic[i].params[p] = z->params[p].dflt;
    }
    tw_strategy_cfg c = {.fee = TW_FEE_DEFAULT, .n_sessions = 1, .n_instruments = 1,
                         .n_instances = n, .instruments = &in, .instances = ic};
    tw_risk_cfg_init(&c.risk);
    size_t bytes = 0;
    double r = copy_warm_ns(&c, reps, &bytes);
    if (r >= 0)
        printf("the copy on the core, warm, flat kernel state: %u zscore instances, %zu bytes "
               "(%zu of kernel state each): %.1f ns per instance (median of %d)\n", n, bytes,
               z->state_bytes(ic[0].params), r, reps);
    free(ic);
    return r;
}

static const char *verdict(int ok) { return ok ? "met" : "NOT met"; }

int tw__cli_bench_recovery(int argc, char **argv)
{
    const char *cmd = "bench recovery";
    char base_dir[400] = "/tmp";
    const char *data = NULL;
    uint64_t reps = 5, every = 50000, seg = TW_JSEG_DEFAULT_BYTES, combos = 8;
    int quick = 0, every_set = 0, seg_set = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
            continue;
        }
        const char *opt, *val;
        int r = tw__cli_opt_value(cmd, usage, argc, argv, &i, &opt, &val);
        if (r)
            return r > 0 ? 0 : 2;
        if (!strcmp(opt, "--reps")) {
            if (tw__cli_u64_range(cmd, opt, val, 1, 101, &reps))
                return 2;
        } else if (!strcmp(opt, "--snapshot-every")) {
            if (tw__cli_u64_range(cmd, opt, val, 100, UINT64_C(1) << 40, &every))
                return 2;
            every_set = 1;
        } else if (!strcmp(opt, "--segment-bytes")) {
            if (tw__cli_u64_range(cmd, opt, val, 4096, UINT64_C(1) << 40, &seg))
                return 2;
            seg_set = 1;
        } else if (!strcmp(opt, "--combos")) {
            if (tw__cli_u64_range(cmd, opt, val, 1, TW_GRID_DEFAULT_COMBOS, &combos))
                return 2;
        } else if (!strcmp(opt, "--dir")) {
            snprintf(base_dir, sizeof(base_dir), "%s", val);
        } else if (!strcmp(opt, "--data")) {
            data = val;
        } else {
            fprintf(stderr, "tickwire bench recovery: unknown option '%s' (see --help)\n", opt);
            return 2;
        }
    }
    uint64_t sizes[N_SIZES] = {100000, 1000000, 10000000};
    if (quick) {
        sizes[0] = 1000, sizes[1] = 10000, sizes[2] = 100000;
        if (!every_set)
            every = 10000;
        if (!seg_set)
            seg = 256 * 1024;
        if (reps > 3)
            reps = 3;
    }
    const int defaults = !quick && every == 50000 && seg == TW_JSEG_DEFAULT_BYTES;

    bench b = {.every = every, .seg_bytes = seg, .n_combos = (uint32_t)combos};
    tw_error err = {0};
    double *close = NULL;
    size_t n_close = 0;
    if (data) {
        if (tw_read_raw(data, &close, &n_close, &err) != 0 || n_close == 0) {
            fprintf(stderr, "tickwire bench recovery: %s: %s\n", data, err.msg);
            return 1;
        }
    } else {
        n_close = 150000;
        close = walk(n_close);
    }
    b.close = close;
    b.n_close = n_close;
    int64_t grid[TW_GRID_DEFAULT_COMBOS * TW_COMBO_WINDOWS];
    size_t ng = tw_grid_default(grid);
    b.inst = calloc(combos, sizeof(tw_instance_cfg));
    snprintf(b.instr.symbol, TW_NAME_MAX, "AAA");
    for (uint32_t c = 0; c < combos; c++) {
        snprintf(b.inst[c].name, TW_NAME_MAX, "hma%u", c);
        memcpy(b.inst[c].combo, grid + (size_t)(c * ng / combos) * TW_COMBO_WINDOWS,
               sizeof(b.inst[c].combo));
    }
    b.cfg.fee = TW_FEE_DEFAULT;
    b.cfg.n_sessions = 1;
    b.cfg.n_instruments = 1;
    b.cfg.n_instances = (uint32_t)combos;
    b.cfg.instruments = &b.instr;
    b.cfg.instances = b.inst;
    tw_risk_cfg_init(&b.cfg.risk);
    b.mem_bytes = tw_strategy_memsize(&b.cfg);
    if (!b.mem_bytes)
        return 1;

    char base[512];
    snprintf(base, sizeof(base), "%s/tw-bench-recovery.%d", base_dir, (int)getpid());
    if (mkdir(base, 0700) != 0) {
        fprintf(stderr, "tickwire bench recovery: mkdir %s: %s\n", base, strerror(errno));
        return 1;
    }
    printf("tickwire bench recovery: ISA %s; one session, one instrument, %llu hma_sar combos; "
           "bars: %s (%zu, repeated)\n", tw_isa_name(tw_isa_best()), (unsigned long long)combos,
           data ? data : "seeded walk of the study's size and sigma", n_close);
    printf("settings: snapshot_every %llu records, journal_segment_bytes %llu, snapshot_keep 2, "
           "journal_keep = snapshots; journal and snapshots in %s (page cache: kill -9, not power "
           "loss)\n", (unsigned long long)every, (unsigned long long)seg, base_dir);

    run_out runs[N_SIZES];
    memset(runs, 0, sizeof(runs));
    int rc = 0;
    for (int k = 0; k < N_SIZES && rc == 0; k++) {
        rc = build(&b, base, sizes[k], &runs[k], &err);
        if (rc) {
            fprintf(stderr, "tickwire bench recovery: building %llu records: %s\n",
                    (unsigned long long)sizes[k], err.msg);
            break;
        }
        printf("built %llu records in %.2f s: %llu snapshots (%llu bytes each; the copy on the "
               "core %.0f ns = %.1f ns per instance; commit to in place %.2f ms on the writer "
               "thread; %llu skipped), %llu rotations, %llu segments pruned\n", (unsigned long long)runs[k].records, runs[k].build_s,
               (unsigned long long)runs[k].snapshots, (unsigned long long)runs[k].snap_bytes,
               runs[k].copy_ns_median, runs[k].copy_ns_median / (double)combos,
               runs[k].write_ms_median, (unsigned long long)runs[k].skipped,
               (unsigned long long)runs[k].rotations,
               (unsigned long long)runs[k].pruned);
    }
    if (rc == 0) {
        size_t bytes = 0;
        double hns = copy_warm_ns(&b.cfg, quick ? 5 : 101, &bytes);
        printf("the copy on the core, warm, this configuration: %zu bytes, %.1f ns per hma_sar "
               "combo (median of %d; in the run above the slot is cold: the cache misses of a "
               "copy every snapshot_every records)\n", bytes, hns, quick ? 5 : 101);
        if (hns < 0 || copy_flat_ns(quick ? 100 : 1000, quick ? 5 : 101) < 0)
            rc = 1;
    }
    double ready[N_SIZES] = {0};
    recovered last[N_SIZES];
    int all_equal = 1;
    if (rc == 0) {
        double *t[N_SIZES];
        void *mem = aligned_alloc(64, b.mem_bytes);
        for (int k = 0; k < N_SIZES; k++)
            t[k] = calloc(reps, sizeof(double));
        for (uint64_t round = 0; round < reps && rc == 0; round++)
            for (int q = 0; q < N_SIZES && rc == 0; q++) {
                int k = round % 2 ? N_SIZES - 1 - q : q; /* A B C, C B A, ... */
                rc = recover(&b, &runs[k], mem, &last[k], &err);
                if (rc) {
                    fprintf(stderr, "tickwire bench recovery: recovering %llu records: %s\n",
                            (unsigned long long)sizes[k], err.msg);
                    break;
                }
                t[k][round] = last[k].ready_ms;
                all_equal &= last[k].books_equal;
            }
        for (int k = 0; k < N_SIZES && rc == 0; k++)
            ready[k] = tw__median_f64(t[k], reps);
        for (int k = 0; k < N_SIZES; k++)
            free(t[k]);
        free(mem);
    }
    if (rc == 0) {
        printf("\n| journal | snapshot used | tail replayed | ready (median of %llu) | recovered "
               "books == uninterrupted |\n|---|---|---|---|---|\n", (unsigned long long)reps);
        for (int k = 0; k < N_SIZES; k++) {
            char used[64];
            if (last[k].from_snapshot)
                snprintf(used, sizeof(used), "seq %llu", (unsigned long long)last[k].snap_seq);
            else
                snprintf(used, sizeof(used), "none (from seq 1)");
            printf("| %llu records | %s | %llu records (%llu events) | %.3f ms | %s |\n",
                   (unsigned long long)sizes[k], used, (unsigned long long)last[k].tail_records,
                   (unsigned long long)last[k].tail_events, ready[k],
                   last[k].books_equal ? "yes" : "NO");
        }
        /* The worst phase, from the replay rate of the longest tail. */
        int kr = 0;
        for (int k = 1; k < N_SIZES; k++)
            if (last[k].tail_records > last[kr].tail_records)
                kr = k;
        double per_rec_ms = last[kr].tail_records ? ready[kr] / (double)last[kr].tail_records : 0;
        printf("replay rate: %.0f records/s (the %llu-record tail); a kill just before the next "
               "snapshot replays %llu records: about %.1f ms\n",
               per_rec_ms > 0 ? 1e3 / per_rec_ms : 0.0,
               (unsigned long long)last[kr].tail_records, (unsigned long long)(every - 1),
               per_rec_ms * (double)(every - 1));
        if (per_rec_ms > 0)
            printf("at this rate a 30 ms worst case wants snapshot_every <= %.0f records\n",
                   30.0 / per_rec_ms);
        const double ratio = ready[0] > 0 ? ready[2] / ready[0] : 0.0;
        const uint64_t bound = 2 * seg + 2 * runs[2].snap_bytes;
        printf("disk used during the %llu-record run: max %.1f MiB (%llu segments at most) vs 2 "
               "segments + 2 snapshots = %.1f MiB\n", (unsigned long long)sizes[2],
               (double)runs[2].max_disk / 1048576.0, (unsigned long long)runs[2].max_segments,
               (double)bound / 1048576.0);
        printf("(journal_keep = snapshots keeps the tail of the oldest kept snapshot, the "
               "fallback: %llu records = %.1f MiB, plus the segment it starts in)\n",
               (unsigned long long)(TW_SNAP_DEFAULT_KEEP * every),
               (double)(TW_SNAP_DEFAULT_KEEP * every * TW_JOURNAL_REC_BYTES) / 1048576.0);
        printf("\ngoal: ready at %llu records <= 1.2x ready at %llu (%.3f / %.3f ms = %.2fx): "
               "%s\n", (unsigned long long)sizes[2], (unsigned long long)sizes[0], ready[2],
               ready[0], ratio, verdict(ratio <= 1.2));
        if (defaults)
            printf("goal: ready at %llu records <= 30 ms with the default settings (%.3f ms): "
                   "%s\n", (unsigned long long)sizes[2], ready[2], verdict(ready[2] <= 30.0));
        else
            printf("goal: ready at %llu records <= 30 ms with the default settings: not judged "
                   "(settings not the defaults)\n", (unsigned long long)sizes[2]);
        printf("goal: disk used <= 2 segments + 2 snapshots at every point of the %llu-record "
               "run (%.1f <= %.1f MiB): %s\n", (unsigned long long)sizes[2],
               (double)runs[2].max_disk / 1048576.0, (double)bound / 1048576.0,
               verdict(runs[2].max_disk <= bound));
        printf("check: recovered books equal the uninterrupted run's at every size: %s\n",
               all_equal ? "yes" : "NO");
        if (!all_equal)
            rc = 1;
    }
    for (int k = 0; k < N_SIZES; k++) {
        if (runs[k].jdir[0])
            pthread_mutex_destroy(&runs[k].mu);
        if (runs[k].jdir[0]) {
            rm_tree(runs[k].jdir);
            rm_tree(runs[k].sdir);
        }
        free(runs[k].mem);
        free(runs[k].commit_seq);
        free(runs[k].commit_ns);
        free(runs[k].write_ms);
    }
    rmdir(base);
    free(b.inst);
    free(close);
    return rc == 0 ? 0 : 1;
}
