/* `tickwire journal export` and `journal info` on a segmented journal
 * written through the public API: bars of two instruments interleaved
 * with fills and intents, gap bars (NaN closes), bars never sent, a bar
 * replayed after a restart (PossDup: the same bar again), across several
 * segments.  The export must hold exactly the closes the trader saw, NaN
 * where it saw none, and `tickwire sweep` on it must print the same books
 * as on those closes written directly. */
#include <math.h>
#include <sys/wait.h>

#include "journal_test_util.h"
#include "tickwire/journal_seg.h"
#include "tickwire/kernel.h"
#include "tickwire/strategy.h"
#include "tw_check.h"

static const char *tw_bin;
static char root[256];

static int run(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void put_ev(tw_jseg *j, const tw_ev *ev)
{
    uint8_t pl[TW_JOURNAL_PAYLOAD] = {0};
    memcpy(pl, ev, sizeof(*ev));
    CHECK_EQ(tw_jseg_append(j, TW_JOURNAL_EV, pl, NULL), 0);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: journal_export TICKWIRE\n");
        return 2;
    }
    tw_bin = argv[1];
    ju_mkdir(root, sizeof(root), "jexport");
    char jdir[512], out[600], ref[600], cmd[4096];
    snprintf(jdir, sizeof(jdir), "%s/j", root);
    snprintf(out, sizeof(out), "%s/bars.npy", root);
    snprintf(ref, sizeof(ref), "%s/ref.npy", root);
    enum { N = 3000 };
    static double want[N];
    tw_jseg j;
    tw_error err = {0};
    tw_jseg_cfg c = {.dir = jdir, .segment_bytes = 64 + 80 * 700};
    CHECKF(tw_jseg_open(&j, &c, &err) == 0, "%s", err.msg);
    uint8_t meta[TW_JOURNAL_PAYLOAD] = "TWTRADE1";
    CHECK_EQ(tw_jseg_append(&j, 16, meta, NULL), 0);
    uint64_t x = 7;
    double px = 100.0;
    for (uint64_t i = 0; i < N; i++) {
        x = ju_mix(x);
        px *= 1.0 + ((double)(x % 2001) - 1000.0) * 1e-6;
        want[i] = NAN;
        if (i % 997 == 500)
            continue; /* never sent: a gap */
        tw_ev ev = {.type = TW_EV_BAR, .instrument = 1};
        ev.u.bar.index = i;
        ev.u.bar.close = i % 211 == 3 ? NAN : px; /* a gap bar: no close */
        want[i] = ev.u.bar.close;
        put_ev(&j, &ev);
        tw_ev other = {.type = TW_EV_BAR, .instrument = 0};
        other.u.bar.index = i;
        other.u.bar.close = -1.0; /* another instrument: never exported with 1 */
        put_ev(&j, &other);
        if (i % 50 == 0) {
            tw_ev fill = {.type = TW_EV_FILL, .instrument = 1};
            fill.u.fill.px = 1e9;
            put_ev(&j, &fill);
            uint8_t o[TW_JOURNAL_PAYLOAD] = {1};
            CHECK_EQ(tw_jseg_append(&j, TW_JOURNAL_OUT, o, NULL), 0);
        }
        if (i == 1800)
            put_ev(&j, &ev); /* replayed after a restart: the same bar */
    }
    CHECK(j.rotations >= 5);
    tw_jseg_close(&j);

    snprintf(cmd, sizeof(cmd), "%s journal info %s > %s/info.txt", tw_bin, jdir, root);
    CHECK_EQ(run(cmd), 0);
    snprintf(cmd, sizeof(cmd), "grep -q 'records checked' %s/info.txt && grep -c '^segment ' %s/info.txt > %s/nseg.txt", root, root, root);
    CHECK_EQ(run(cmd), 0);

    snprintf(cmd, sizeof(cmd), "%s journal export %s --instrument 1 --out %s", tw_bin, jdir, out);
    CHECK_EQ(run(cmd), 0);
    double *got = NULL;
    size_t n = 0;
    CHECKF(tw_read_npy(out, &got, &n, &err) == 0, "%s", err.msg);
    CHECK_EQ(n, (size_t)N);
    for (size_t i = 0; got && i < n && i < N; i++) {
        if (isnan(want[i]))
            CHECKF(isnan(got[i]), "bar %zu: %g, want NaN", i, got[i]);
        else
            CHECKF(memcmp(&got[i], &want[i], 8) == 0, "bar %zu: %.17g, want %.17g", i, got[i], want[i]);
    }
    free(got);

    /* The sweep on the export prints what it prints on the closes themselves. */
    CHECK_EQ(tw_write_closes(ref, want, N, &err), 0);
    snprintf(cmd, sizeof(cmd),
             "%s sweep --data %s --threads 1 --format csv > %s/a.csv && %s sweep --data %s "
             "--threads 1 --format csv > %s/b.csv && cmp -s %s/a.csv %s/b.csv && test -s %s/a.csv",
             tw_bin, out, root, tw_bin, ref, root, root, root, root);
    CHECK_EQ(run(cmd), 0);

    /* A deleted middle segment: info and export fail naming the gap. */
    snprintf(cmd, sizeof(cmd), "rm %s/00000000000000000701.twj && ! %s journal export %s --instrument 1 --out %s 2> %s/e.txt && grep -q 'records 701..1400 missing' %s/e.txt && ! %s journal info %s > /dev/null 2>&1",
             jdir, tw_bin, jdir, out, root, root, tw_bin, jdir);
    CHECK_EQ(run(cmd), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    (void)run(cmd);
    return tw_check_done("journal_export");
}
