/* `tickwire journal info DIR|FILE [--snapshots DIR]` and `tickwire journal
 * export DIR|FILE (--instrument N | --symbol SYM --config trade.ini) --out
 * bars.npy` (docs/crash.md, "Journal
 * segments", "Snapshot files").  Export takes the instrument by index
 * (config order, as BAR events carry it) or by symbol with the trader's
 * configuration (the journal's META record has its digest, not names). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tickwire/journal_seg.h"
#include "tickwire/kernel.h"
#include "tickwire/snapshot.h"
#include "tickwire/strategy.h"
#include "tickwire/trade.h"

int tw__cli_journal_info(int argc, char **argv);
int tw__cli_journal_export(int argc, char **argv);

static void info_snapshots(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        printf("snapshots %s: none (%s)\n", dir, strerror(errno));
        return;
    }
    struct dirent *e;
    unsigned n = 0;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "snap-", 5) != 0)
            continue;
        char p[4096 + 260];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        tw_snap s;
        tw_error err = {0};
        size_t l = strlen(e->d_name);
        if (l > 4 && (strcmp(e->d_name + l - 4, ".bad") == 0 || strcmp(e->d_name + l - 4, ".tmp") == 0)) {
            printf("snapshot %s: set aside / leftover\n", e->d_name);
            n++;
            continue;
        }
        if (tw_snap_check_file(p, &s, &err) == 0) {
            printf("snapshot %s: ok, journal seq %llu, %u sections, %zu bytes\n", e->d_name,
                   (unsigned long long)s.hdr.journal_seq, s.nsec, s.file_len);
            /* The strategy's state, when it holds one: its own check. */
            const tw_snap_section *st = tw_snap_find(&s, TW_SNAP_SEC_STRATEGY);
            tw_strategy_state_info si;
            if (st && tw_strategy_state_info_get(st->data, st->len, &si, &err) == 0)
                printf("  strategy state: %u instances, journal seq %llu, %u pending intents, "
                       "%llu bytes, CRC ok\n", si.n_instances,
                       (unsigned long long)si.journal_seq, si.n_intents,
                       (unsigned long long)si.bytes);
            else if (st)
                printf("  strategy state: BAD: %s\n", err.msg);
            tw_snap_release(&s);
        } else {
            printf("snapshot %s: BAD: %s\n", e->d_name, err.msg);
        }
        n++;
    }
    closedir(d);
    if (n == 0)
        printf("snapshots %s: none\n", dir);
}

int tw__cli_journal_info(int argc, char **argv)
{
    const char *path = NULL, *snaps = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--snapshots") && i + 1 < argc)
            snaps = argv[++i];
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else {
            fprintf(stderr, "journal info: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: tickwire journal info DIR|FILE [--snapshots DIR]\n");
        return 2;
    }
    tw_jseg_info *v;
    uint32_t n;
    tw_error err = {0};
    int rc = tw_jseg_list(path, &v, &n, &err);
    if (rc != 0) {
        fprintf(stderr, "journal info: %s\n", err.msg);
        return 1;
    }
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *nm = v[i].name[0] ? v[i].name : path;
        if (v[i].records)
            printf("segment %s: seq %llu..%llu, %llu records, %llu bytes\n", nm,
                   (unsigned long long)v[i].first_seq,
                   (unsigned long long)(v[i].first_seq + v[i].records - 1),
                   (unsigned long long)v[i].records, (unsigned long long)v[i].bytes);
        else
            printf("segment %s: from seq %llu, empty\n", nm, (unsigned long long)v[i].first_seq);
        total += v[i].records;
    }
    /* Every record checked, across the segments. */
    tw_jseg_reader r;
    rc = tw_jseg_reader_open(&r, path, 0, 4096, &err);
    long long got = 0;
    if (rc == 0) {
        tw_journal_rec recs[256];
        int k;
        while ((k = tw_jseg_read_burst(&r, recs, 256, &err)) > 0)
            got += k;
        rc = k;
        if (rc == 0)
            printf("journal %s: %u segments, seq %llu..%llu, %lld records checked%s\n", path, n,
                   (unsigned long long)v[0].first_seq,
                   (unsigned long long)(v[0].first_seq + (uint64_t)got - (got ? 1 : 0)), got,
                   r.torn_bytes ? " (a torn tail in the last segment)" : "");
        tw_jseg_reader_close(&r);
    }
    (void)total;
    free(v);
    if (rc != 0) {
        printf("journal %s: BAD: %s\n", path, err.msg);
    }
    /* Where the snapshots are: `tickwire trade` keeps them beside its
     * journal (DIR.snap), `bench recovery` inside it. */
    struct stat st;
    char beside[4096];
    if (snprintf(beside, sizeof(beside), "%s.snap", path) >= (int)sizeof(beside))
        beside[0] = '\0';
    if (!snaps && stat(beside, &st) == 0 && S_ISDIR(st.st_mode))
        snaps = beside;
    else if (!snaps && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        snaps = path;
    if (snaps)
        info_snapshots(snaps);
    return rc != 0 ? 1 : 0;
}

int tw__cli_journal_export(int argc, char **argv)
{
    const char *path = NULL, *out = NULL, *sym = NULL, *conf = NULL;
    long inst = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--instrument") && i + 1 < argc) {
            char *end;
            inst = strtol(argv[++i], &end, 10);
            if (*end || inst < 0) {
                fprintf(stderr, "journal export: --instrument %s: not an index\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--symbol") && i + 1 < argc) {
            sym = argv[++i];
        } else if (!strcmp(argv[i], "--config") && i + 1 < argc) {
            conf = argv[++i];
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            out = argv[++i];
        } else if (argv[i][0] != '-' && !path) {
            path = argv[i];
        } else {
            fprintf(stderr, "journal export: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    tw_error err = {0};
    if (sym && conf && inst < 0) {
        tw_trade_config *tc;
        if (tw_trade_config_load(conf, &tc, &err) != 0) {
            fprintf(stderr, "journal export: %s\n", err.msg);
            return 1;
        }
        for (uint32_t i = 0; i < tc->n_instruments; i++)
            if (!strcmp(tc->instruments[i].symbol, sym))
                inst = (long)i;
        tw_trade_config_free(tc);
        if (inst < 0) {
            fprintf(stderr, "journal export: %s: no [instrument %s]\n", conf, sym);
            return 1;
        }
    }
    if (!path || !out || inst < 0) {
        fprintf(stderr, "usage: tickwire journal export DIR|FILE (--instrument N | --symbol SYM "
                        "--config trade.ini) --out bars.npy\n");
        return 2;
    }
    tw_jseg_reader r;
    if (tw_jseg_reader_open(&r, path, 0, 4096, &err) != 0) {
        fprintf(stderr, "journal export: %s\n", err.msg);
        return 1;
    }
    size_t cap = 1024, n = 0;
    double *close = malloc(cap * sizeof(double));
    tw_journal_rec recs[256];
    int k;
    uint64_t bars = 0;
    while (close && (k = tw_jseg_read_burst(&r, recs, 256, &err)) > 0) {
        for (int i = 0; i < k; i++) {
            if (tw_journal_rec_kind(&recs[i]) != TW_JOURNAL_EV)
                continue;
            tw_ev ev;
            memcpy(&ev, recs[i].payload, sizeof(ev));
            if (ev.type != TW_EV_BAR || ev.instrument != (uint32_t)inst)
                continue;
            uint64_t idx = ev.u.bar.index;
            if (idx > ((uint64_t)1 << 32)) {
                fprintf(stderr, "journal export: seq %llu: bar index %llu out of range\n",
                        (unsigned long long)recs[i].seq, (unsigned long long)idx);
                k = -TW_EFORMAT;
                break;
            }
            while (idx >= cap) {
                double *nc = realloc(close, 2 * cap * sizeof(double));
                if (!nc) {
                    k = -ENOMEM;
                    break;
                }
                close = nc;
                cap *= 2;
            }
            if (k < 0)
                break;
            for (; n <= idx; n++)
                close[n] = NAN; /* bars never seen are gaps */
            close[idx] = ev.u.bar.close; /* a replayed bar is the same bar */
            bars++;
        }
        if (k < 0)
            break;
    }
    tw_jseg_reader_close(&r);
    if (!close || k < 0) {
        fprintf(stderr, "journal export: %s\n", close ? err.msg : "no memory");
        free(close);
        return 1;
    }
    int rc = tw_write_closes(out, close, n, &err);
    free(close);
    if (rc != 0) {
        fprintf(stderr, "journal export: %s\n", err.msg);
        return 1;
    }
    printf("journal export: instrument %ld: %zu bars (%llu journaled) to %s\n", inst, n,
           (unsigned long long)bars, out);
    return 0;
}
