/* Recovery of the strategy core from snapshots and a segmented journal,
 * with the real journal, segment and snapshot code (no network).
 *
 * A writer drives the strategy over 4,000 bars (a BAR event, its intents
 * as OUT records, a fill per order at the bar's close), appends every
 * record to a journal of small segments, and every 700 records saves its
 * state into a snapshot (keep 2) and, with journal_keep = snapshots,
 * prunes the journal to the oldest kept one.  Recovery is: a fresh
 * strategy, the newest snapshot that checks out (tw_snap_load, expecting
 * the configuration digest and the kernel set), its state loaded, the
 * journal after it replayed; no usable snapshot: from seq 1, refused when
 * the journal no longer starts there.  Cases, each against the writer's
 * state at the end (digest and every instance's books, bit for bit):
 *   intact; the newest snapshot with a bit flipped (set aside as *.bad
 *   with its reason, the older one used); the newest deleted; both bad
 *   with the journal pruned (refused, naming the records that are gone);
 *   both bad with journal_keep = all (replayed from seq 1); a segment
 *   deleted (refused naming the missing records); another configuration
 *   (refused naming the kernel line that differs, or the digest). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "st.h"
#include "tickwire/journal_seg.h"
#include "tickwire/snapshot.h"

#define BARS 4000
#define EVERY 700
#define SEG_BYTES 8192

static double px[BARS];
static char root[64];

typedef struct conf {
    tw_instrument_cfg instr;
    tw_instance_cfg inst[4];
    tw_strategy_cfg cfg;
} conf;

static void conf_make(conf *c, double zscore_entry)
{
    static const int64_t w[3][6] = { { 8, 16, 4, 10, 15, 30 }, { 2, 5, 2, 3, 4, 9 },
                                     { 20, 40, 6, 13, 20, 40 } };
    memset(c, 0, sizeof(*c));
    snprintf(c->instr.symbol, TW_NAME_MAX, "AAA");
    for (int j = 0; j < 3; j++) {
        snprintf(c->inst[j].name, TW_NAME_MAX, "h%d", j);
        memcpy(c->inst[j].combo, w[j], sizeof(w[j]));
    }
    const tw_kernel_def *z = tw_kernel_builtin(1);
    snprintf(c->inst[3].name, TW_NAME_MAX, "z");
    c->inst[3].kernel = z;
    for (uint32_t p = 0; p < z->n_params; p++)
        c->inst[3].params[p] = z->params[p].dflt;
    c->inst[3].params[0] = 12;
    c->inst[3].params[1] = zscore_entry;
    c->cfg.fee = TW_FEE_DEFAULT;
    c->cfg.n_sessions = 1;
    c->cfg.n_instruments = 1;
    c->cfg.n_instances = 4;
    c->cfg.instruments = &c->instr;
    c->cfg.instances = c->inst;
    tw_risk_cfg_init(&c->cfg.risk);
}

typedef struct writer {
    st_harness h;
    uint64_t snaps;
    uint64_t snap_seq[64];
    uint64_t pruned;
} writer;

static void expect_of(const tw_strategy *s, uint8_t d[16], char *k, size_t cap)
{
    tw_strategy_config_digest(s, d);
    tw_strategy_kernels_text(s, k, cap);
}

static int append(tw_jseg *j, uint32_t kind, const void *p, uint32_t n)
{
    int rc = n ? tw_jseg_append_bulk(j, kind, p, n, NULL) : 0;
    CHECK(rc == 0);
    return rc;
}

/* The writer's run into jdir / sdir; prune: journal_keep = snapshots. */
static void write_run(writer *w, conf *c, const char *jdir, const char *sdir, int prune)
{
    memset(w, 0, sizeof(*w));
    CHECK(st_open(&w->h, &c->cfg) == 0);
    tw_jseg j;
    tw_error err = { 0 };
    tw_jseg_cfg jc = { .dir = jdir, .segment_bytes = SEG_BYTES };
    CHECKF(tw_jseg_open(&j, &jc, &err) == 0, "%s", err.msg);
    uint8_t digest[16];
    char kernels[512];
    expect_of(w->h.s, digest, kernels, sizeof(kernels));
    size_t cap = tw_strategy_state_size(w->h.s, 0);
    uint8_t *state = malloc(cap);
    tw_ev *fills = malloc(w->h.cap * sizeof(tw_ev));
    tw_out *outs = malloc(w->h.cap * sizeof(tw_out));
    uint64_t rec = 0, next = EVERY;
    for (uint64_t i = 0; i < BARS; i++) {
        w->h.now_ns = (int64_t)(i + 1) * 1000000;
        tw_ev ev = { .type = TW_EV_BAR, .now_ns = w->h.now_ns };
        ev.u.bar.index = i;
        ev.u.bar.close = px[i];
        size_t m = st_take(&w->h, st_event(&w->h, &ev), outs);
        append(&j, TW_JOURNAL_EV, &ev, 1);
        append(&j, TW_JOURNAL_OUT, outs, (uint32_t)m);
        rec += 1 + m;
        size_t nf = 0;
        for (size_t q = 0; q < m; q++)
            if (outs[q].type == TW_OUT_ORDER) {
                tw_ev *f = &fills[nf++];
                memset(f, 0, sizeof(*f));
                f->type = TW_EV_FILL;
                f->side = outs[q].side;
                f->now_ns = w->h.now_ns;
                f->u.fill.order_id = outs[q].order_id;
                f->u.fill.qty = outs[q].qty;
                f->u.fill.px = isnan(px[i]) ? 100.0 : px[i];
                st_event(&w->h, f);
            }
        append(&j, TW_JOURNAL_EV, fills, (uint32_t)nf);
        rec += nf;
        if (rec >= next && w->snaps < 64) {
            next += EVERY;
            size_t n = tw_strategy_state_save(w->h.s, rec, NULL, 0, state, cap);
            CHECK(n == cap);
            tw_snap_buf b;
            tw_snap_begin(&b, rec, digest);
            CHECK(tw_snap_add(&b, TW_SNAP_SEC_KERNELS, kernels, strlen(kernels)) == 0);
            CHECK(tw_snap_add(&b, TW_SNAP_SEC_STRATEGY, state, n) == 0);
            tw_snap_write_cfg wc = { .dir = sdir, .keep = 2 };
            CHECKF(tw_snap_write(&b, &wc, &err) == 0, "%s", err.msg);
            tw_snap_free(&b);
            w->snap_seq[w->snaps++] = rec;
            if (prune) {
                uint64_t oldest = w->snap_seq[w->snaps >= 2 ? w->snaps - 2 : 0] + 1;
                int pr = tw_journal_prune(jdir, oldest, &err);
                CHECKF(pr >= 0, "%s", err.msg);
                w->pruned += pr > 0 ? (uint64_t)pr : 0;
            }
        }
    }
    tw_jseg_close(&j);
    free(state);
    free(fills);
    free(outs);
}

typedef struct result {
    int rc;
    char msg[512];
    uint64_t from;      /* the first seq replayed */
    uint64_t replayed;  /* EV records */
    uint32_t set_aside;
    char reason[224];
} result;

/* Recovery into h (opened on c); 0, or the refusal in r. */
static void recover(conf *c, const char *jdir, const char *sdir, st_harness *h, result *r)
{
    memset(r, 0, sizeof(*r));
    tw_error err = { 0 };
    if (st_open(h, &c->cfg) != 0) {
        r->rc = -EINVAL;
        return;
    }
    uint8_t digest[16];
    char kernels[512];
    expect_of(h->s, digest, kernels, sizeof(kernels));
    /* The kernel set is compared by the loader; the digest after the
     * state's own checks, which name what differs (a param, a window). */
    tw_snap_expect e = { .kernels = kernels };
    tw_snap snap;
    tw_snap_report rep;
    memset(&rep, 0, sizeof(rep));
    r->from = 1;
    int rc = tw_snap_load(sdir, &e, &snap, &rep, &err);
    r->set_aside = rep.set_aside;
    if (rep.set_aside)
        snprintf(r->reason, sizeof(r->reason), "%s", rep.reasons[0]);
    if (rc == 0) {
        const tw_snap_section *sec = tw_snap_find(&snap, TW_SNAP_SEC_STRATEGY);
        tw_strategy_state_info info;
        rc = sec ? tw_strategy_state_load(h->s, sec->data, sec->len, NULL, 0, &info, &err)
                 : -ENOENT;
        if (rc == 0 && memcmp(snap.hdr.digest, digest, 16) != 0)
            rc = tw__err(&err, -ESTALE, "%s: taken under another configuration (config "
                         "digest differs)", snap.name);
        if (rc == 0)
            r->from = info.journal_seq + 1;
        tw_snap_release(&snap);
    } else if (rc == -ENOENT) {
        rc = 0; /* no usable snapshot: from seq 1 */
    }
    tw_jseg_reader rd;
    if (rc == 0)
        rc = tw_jseg_reader_open(&rd, jdir, r->from, 64, &err);
    if (rc == 0) {
        tw_journal_rec recs[64];
        int k;
        while ((k = tw_jseg_read_burst(&rd, recs, 64, &err)) > 0)
            for (int q = 0; q < k; q++)
                if (tw_journal_rec_kind(&recs[q]) == TW_JOURNAL_EV) {
                    tw_ev ev;
                    memcpy(&ev, recs[q].payload, sizeof(ev));
                    tw_strategy_on_event(h->s, &ev, h->out, h->cap);
                    r->replayed++;
                }
        if (k < 0)
            rc = k;
        tw_jseg_reader_close(&rd);
    }
    r->rc = rc;
    if (rc)
        snprintf(r->msg, sizeof(r->msg), "%s", err.msg);
}

static void rm_dir(const char *d)
{
    DIR *dp = opendir(d);
    if (!dp)
        return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(dp)) != NULL)
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof(p), "%s/%s", d, e->d_name);
            unlink(p);
        }
    closedir(dp);
    rmdir(d);
}

/* The path of the newest (last = 1) or the oldest snapshot, or of the
 * segment after the first (mid). */
static int nth_file(const char *d, const char *suffix, int last, char *out, size_t cap)
{
    DIR *dp = opendir(d);
    if (!dp)
        return -1;
    struct dirent *e;
    char best[256] = "";
    while ((e = readdir(dp)) != NULL) {
        size_t n = strlen(e->d_name), sl = strlen(suffix);
        if (n < sl || strcmp(e->d_name + n - sl, suffix))
            continue;
        if (!best[0] || (last ? strcmp(e->d_name, best) > 0 : strcmp(e->d_name, best) < 0))
            snprintf(best, sizeof(best), "%s", e->d_name);
    }
    closedir(dp);
    if (!best[0])
        return -1;
    snprintf(out, cap, "%s/%s", d, best);
    return 0;
}

static void flip(const char *path, long off)
{
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK(fseek(f, off, SEEK_SET) == 0);
    int ch = fgetc(f);
    CHECK(fseek(f, off, SEEK_SET) == 0);
    fputc(ch ^ 0x10, f);
    fclose(f);
}

static void check_ok(const char *what, const result *r, st_harness *h, const writer *w)
{
    CHECKF(r->rc == 0, "%s: %s", what, r->msg);
    CHECKF(r->rc != 0 || (tw_strategy_digest(h->s) == tw_strategy_digest(w->h.s) &&
                          st_same_books(h->s, w->h.s)),
           "%s: recovered books differ", what);
    printf("%s: from seq %llu, %llu events replayed, %u set aside: parity\n", what,
           (unsigned long long)r->from, (unsigned long long)r->replayed, r->set_aside);
}

int main(void)
{
    double lv = 0.0;
    for (int i = 0; i < BARS; i++) {
        lv += 0.003 * sin(i * 0.7) + 0.002 * cos(i * 1.9 + 0.3) + 0.0005 * ((i * 7919) % 13 - 6);
        px[i] = (i % 501 < 3) ? NAN : 100.0 * exp(lv);
    }
    snprintf(root, sizeof(root), "/tmp/tw_strategy_recovery.%d", (int)getpid());
    CHECK(mkdir(root, 0700) == 0);
    char jdir[128], sdir[128], p[256];
    snprintf(jdir, sizeof(jdir), "%s/journal", root);
    snprintf(sdir, sizeof(sdir), "%s/snapshots", root);
    conf c, other;
    conf_make(&c, 1.5);
    writer w;
    write_run(&w, &c, jdir, sdir, 1);
    printf("writer: %llu snapshots, %llu segments pruned\n", (unsigned long long)w.snaps,
           (unsigned long long)w.pruned);
    CHECK(w.snaps >= 4 && w.pruned > 0);
    st_harness h;
    result r;

    recover(&c, jdir, sdir, &h, &r);
    check_ok("intact", &r, &h, &w);
    CHECK(r.from == w.snap_seq[w.snaps - 1] + 1 && r.set_aside == 0);
    st_close(&h);

    /* Another configuration: a param (the digest), a kernel (the set). */
    conf_make(&other, 2.5);
    recover(&other, jdir, sdir, &h, &r);
    CHECKF(r.rc == -ESTALE && strstr(r.msg, "param entry is 1.5 in the state, configured 2.5"),
           "another param: %d %s", r.rc, r.msg);
    printf("another param: refused: %s\n", r.msg);
    st_close(&h);
    conf_make(&other, 1.5);
    other.cfg.risk.max_position = 1000; /* the state compares the risk limits too */
    recover(&other, jdir, sdir, &h, &r);
    CHECKF(r.rc == -ESTALE && strstr(r.msg, "risk limits"), "another limit: %d %s", r.rc, r.msg);
    st_close(&h);
    conf_make(&other, 1.5);
    other.inst[3].kernel = NULL; /* hma_sar by windows */
    memcpy(other.inst[3].combo, c.inst[0].combo, sizeof(c.inst[0].combo));
    recover(&other, jdir, sdir, &h, &r);
    CHECKF(r.rc == -ESTALE && strstr(r.msg, "another kernel set") &&
               strstr(r.msg, "zscore 1") && strstr(r.msg, "hma_sar 1"),
           "another kernel: %d %s", r.rc, r.msg);
    printf("another configuration: refused: %s\n", r.msg);
    st_close(&h);

    /* The newest with a bit flipped: set aside, the older one used. */
    CHECK(nth_file(sdir, ".tws", 1, p, sizeof(p)) == 0);
    flip(p, 200);
    recover(&c, jdir, sdir, &h, &r);
    check_ok("newest snapshot flipped", &r, &h, &w);
    CHECKF(r.set_aside == 1 && strstr(r.reason, "snap-"), "reason: %s", r.reason);
    CHECK(r.from == w.snap_seq[w.snaps - 2] + 1);
    printf("  set aside: %s\n", r.reason);
    st_close(&h);

    /* The (now only) snapshot deleted too: the journal was pruned, so
     * nothing can rebuild the books: refused naming the gap. */
    CHECK(nth_file(sdir, ".tws", 1, p, sizeof(p)) == 0);
    CHECK(unlink(p) == 0);
    recover(&c, jdir, sdir, &h, &r);
    CHECKF(r.rc == -EINVAL && strstr(r.msg, "starts at"), "gap: %d %s", r.rc, r.msg);
    printf("no usable snapshot, journal pruned: refused: %s\n", r.msg);
    st_close(&h);
    st_close(&w.h);
    rm_dir(jdir);
    rm_dir(sdir);

    /* journal_keep = all: the newest deleted, then every snapshot bad. */
    write_run(&w, &c, jdir, sdir, 0);
    CHECK(w.pruned == 0);
    CHECK(nth_file(sdir, ".tws", 1, p, sizeof(p)) == 0);
    CHECK(unlink(p) == 0);
    recover(&c, jdir, sdir, &h, &r);
    check_ok("newest snapshot deleted", &r, &h, &w);
    CHECK(r.from == w.snap_seq[w.snaps - 2] + 1);
    st_close(&h);
    CHECK(nth_file(sdir, ".tws", 1, p, sizeof(p)) == 0);
    flip(p, 20); /* the header */
    recover(&c, jdir, sdir, &h, &r);
    check_ok("every snapshot bad, journal_keep = all", &r, &h, &w);
    CHECK(r.from == 1 && r.set_aside == 1);
    st_close(&h);

    /* A segment deleted (the oldest but one): refused naming the records. */
    CHECK(nth_file(jdir, ".twj", 0, p, sizeof(p)) == 0);
    {
        /* the second segment: the oldest is 000..1.twj; find the next */
        DIR *dp = opendir(jdir);
        struct dirent *e;
        char first[256], second[256] = "";
        snprintf(first, sizeof(first), "%s", strrchr(p, '/') + 1);
        while (dp && (e = readdir(dp)) != NULL) {
            if (!strstr(e->d_name, ".twj") || strstr(e->d_name, ".tmp") ||
                strcmp(e->d_name, first) <= 0)
                continue;
            if (!second[0] || strcmp(e->d_name, second) < 0)
                snprintf(second, sizeof(second), "%s", e->d_name);
        }
        if (dp)
            closedir(dp);
        CHECK(second[0] != 0);
        snprintf(p, sizeof(p), "%s/%s", jdir, second);
        CHECK(unlink(p) == 0);
    }
    recover(&c, jdir, sdir, &h, &r);
    CHECKF(r.rc == -TW_EFORMAT && strstr(r.msg, "missing"), "segment deleted: %d %s", r.rc,
           r.msg);
    printf("a segment deleted: refused: %s\n", r.msg);
    st_close(&h);

    st_close(&w.h);
    rm_dir(jdir);
    rm_dir(sdir);
    rmdir(root);
    return tw_check_done("strategy_recovery");
}
