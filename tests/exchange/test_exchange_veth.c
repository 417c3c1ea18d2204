/* `tickwire exchange` on this project's userspace stack over a veth pair
 * (AF_PACKET, AF_XDP or DPDK's net_af_packet), traded by the QuickFIX
 * trader over the kernel's TCP in the peer namespace (netstack.md, "Real
 * peer"; live.md, "Exchange simulator").  The trader checks the protocol
 * itself (bars once, in order, exact closes; fills at the right close bit
 * for bit; the lockstep barrier); this program checks that both ends exit
 * 0, the trader's counts, and the venue's fills log against the datasets.
 * The venue runs with --pcap: where tshark is installed, its capture must
 * read back whole (no frame dropped) and tshark's follow of the trader's
 * connection must hold the FIX session both ways (Logons, the bars, one
 * ExecutionReport with 150=F per fill logged).
 * Root only (namespaces, veth); exits 77 with a message otherwise.
 *
 *   exchange_veth_test KIND TICKWIRE QF_TRADER DICTIONARY [FAULT]
 * KIND: af_packet, af_xdp, dpdk_af_packet. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "capture/capcheck.h"
#include "common/netenv.h"
#include "tickwire/decimal.h"
#include "tickwire/kernel.h"

#define NA 200
#define NB 150

static int slurp_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, needle) != NULL;
}

static long result(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    char k[64];
    long v;
    if (!f)
        return -1;
    while (fscanf(f, "%63s %ld", k, &v) == 2)
        if (!strcmp(k, key)) {
            fclose(f);
            return v;
        }
    fclose(f);
    return -1;
}

static long count_of(const uint8_t *b, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    long c = 0;
    for (size_t i = 0; i + k <= n; i++)
        c += !memcmp(b + i, needle, k);
    return c;
}

/* The venue's --pcap file: whole, nothing dropped, read by tshark, and the
 * FIX session in it.  Returns 0, or 1 after saying what is wrong. */
static int check_capture(const char *file, long fills, int exact)
{
    if (cap_need_tools("exchange_veth (its --pcap check)", 0) != 0)
        return 0;
    cap_file f;
    if (cap_load(file, &f) != 0 || !f.first_shb || f.malformed || f.whole != f.len ||
        f.n_idb != 1 || f.n_isb != 1 || f.isb_drop[0] != 0 || f.n_pkts < 100) {
        fprintf(stderr, "FAIL: --pcap %s: %zu packets, whole %d, drops %llu\n", file, f.n_pkts,
                f.whole == f.len, (unsigned long long)f.isb_drop[0]);
        return 1;
    }
    size_t n_pkts = f.n_pkts;
    cap_free(&f);
    long frames;
    char why[512];
    if (cap_tshark_read(file, &frames, why, sizeof(why)) != 0 || frames != (long)n_pkts) {
        fprintf(stderr, "FAIL: --pcap %s: tshark read %ld of %zu frames: %s\n", file, frames,
                n_pkts, why);
        return 1;
    }
    uint8_t *tr = NULL, *ve = NULL;
    size_t ntr = 0, nve = 0;
    if (cap_follow_bytes(file, 0, 0, &tr, &ntr) != 0 || cap_follow_bytes(file, 0, 1, &ve, &nve)) {
        fprintf(stderr, "FAIL: --pcap %s: tshark's follow,tcp,raw failed\n", file);
        free(tr);
        return 1;
    }
    long er = count_of(ve, nve, "\00135=8\001"), filled = count_of(ve, nve, "\001150=F\001");
    int ok = ntr > 9 && !memcmp(tr, "8=FIX.4.4\001", 10) && count_of(tr, ntr, "\00135=A\001") &&
             count_of(ve, nve, "\00135=A\001") && count_of(ve, nve, "\00135=X\001") > 0 &&
             er >= filled && (exact ? filled == fills : filled > 0);
    if (!ok)
        fprintf(stderr, "FAIL: --pcap %s: the session in the capture: trader sent %zu bytes, "
                        "venue %zu; %ld ExecutionReports, %ld fills (logged %ld)\n",
                file, ntr, nve, er, filled, fills);
    else
        printf("PASS --pcap: %zu frames, the FIX session both ways (%zu / %zu bytes, %ld fills)\n",
               n_pkts, ntr, nve, filled);
    free(tr);
    free(ve);
    return !ok;
}

/* Each fill line: price text is the close of its bar, exactly. */
static long check_fills(const char *path, const double *a, const double *b)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    long n = 0;
    if (!fgets(line, sizeof(line), f)) {
        fclose(f);
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        char *fld[9];
        int k = 0;
        for (char *p = strtok(line, ",\n"); p && k < 9; p = strtok(NULL, ",\n"))
            fld[k++] = p;
        if (k != 9)
            return -1;
        long bar = atol(fld[7]);
        const double *c = !strcmp(fld[4], "AAA") ? a : b;
        long nb = c == a ? NA : NB;
        double px;
        if (bar < 0 || bar >= nb || tw_decimal_to_double(fld[8], strlen(fld[8]), &px) != 0 ||
            memcmp(&px, &c[bar], 8) != 0) {
            fprintf(stderr, "FAIL: fill %s %s bar %ld at %s is not that bar's close\n", fld[2],
                    fld[4], bar, fld[8]);
            fclose(f);
            return -1;
        }
        n++;
    }
    fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: exchange_veth_test KIND TICKWIRE QF_TRADER DICT [FAULT]\n");
        return 2;
    }
    const char *kind = argv[1], *tickwire = argv[2], *trader = argv[3], *dict = argv[4];
    const char *fault = argc > 5 ? argv[5] : NULL;
    if (geteuid() != 0) {
        printf("SKIP: exchange over %s needs root (network namespaces, veth)\n", kind);
        return 77;
    }
    if (access(tickwire, X_OK) != 0 || access(trader, X_OK) != 0) {
        fprintf(stderr, "FAIL: %s or %s missing\n", tickwire, trader);
        return 1;
    }
    char tmp[] = "/tmp/tw_xveth_XXXXXX";
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    /* The datasets: AAA a walk with awkward values, BBB with NaN gaps. */
    static double a[NA], b[NB];
    double p = 100, q = 50;
    for (int i = 0; i < NA; i++) {
        p *= 1 + ((i * 7919) % 17 - 8) / 997.0;
        a[i] = p;
    }
    a[3] = 100.0000000000001, a[4] = 0.00001, a[5] = 5e-324, a[6] = 0.1;
    for (int i = 0; i < NB; i++) {
        q *= 1 + ((i * 104729) % 23 - 11) / 1999.0;
        b[i] = (i < 6 || (i >= 40 && i < 45) || i == NB - 1) ? NAN : q;
    }
    char path[512], fa[512], fb[512];
    tw_error err;
    int rc = 0;
    snprintf(path, sizeof(path), "%s/a.npy", tmp);
    rc |= tw_write_closes(path, a, NA, &err);
    snprintf(path, sizeof(path), "%s/b.npy", tmp);
    rc |= tw_write_closes(path, b, NB, &err);
    snprintf(fa, sizeof(fa), "%s/a.f64", tmp);
    rc |= tw_write_closes(fa, a, NA, &err);
    snprintf(fb, sizeof(fb), "%s/b.f64", tmp);
    rc |= tw_write_closes(fb, b, NB, &err);
    if (rc) {
        fprintf(stderr, "FAIL: datasets: %s\n", err.msg);
        return 1;
    }
    tw__netenv e;
    rc = tw__netenv_setup(&e, 1);
    if (rc)
        return rc == TW_NETENV_SKIP ? 77 : 1;
    if (chdir(tmp) != 0)
        return 1;
    char spec[64], data[1100], fills[600], store[600], out[600], faultarg[64], pcap[600];
    snprintf(spec, sizeof(spec), "%s:%s", kind, e.host);
    snprintf(data, sizeof(data), "AAA=%s/a.npy,BBB=%s/b.npy", tmp, tmp);
    snprintf(fills, sizeof(fills), "%s/fills.csv", tmp);
    snprintf(store, sizeof(store), "%s/store", tmp);
    snprintf(out, sizeof(out), "%s/venue.out", tmp);
    snprintf(pcap, sizeof(pcap), "%s/venue.pcapng", tmp);
    snprintf(faultarg, sizeof(faultarg), "%s", fault ? fault : "");
    char *vargv[32] = {(char *)tickwire, (char *)"exchange", (char *)"--listen",
                       (char *)TW_NETENV_STACK_IP ":7010", (char *)"--port", spec, (char *)"--ip",
                       (char *)TW_NETENV_STACK_IP,
                       /* A MAC of its own: the host kernel drops the stack's
                        * frames at its L2 check instead of answering them. */
                       (char *)"--mac", (char *)"02:74:77:00:00:10", (char *)"--data", data,
                       (char *)"--fills", fills, (char *)"--store", store,
                       (char *)"--pcap", pcap};
    int vn = 18;
    if (fault) {
        vargv[vn++] = (char *)"--fault";
        vargv[vn++] = faultarg;
    }
    vargv[vn] = NULL;
    int ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    tw__netenv here;
    memset(&here, 0, sizeof(here));
    pid_t venue = tw__netenv_spawn(&here, vargv, ofd);
    close(ofd);
    if (venue < 0) {
        tw__netenv_teardown(&e);
        return 1;
    }
    for (int t = 0; t < 200 && !slurp_has(out, "listening"); t++)
        usleep(50000);
    char res[600], da[600], db[600];
    snprintf(res, sizeof(res), "%s/trader.res", tmp);
    snprintf(da, sizeof(da), "AAA=%s", fa);
    snprintf(db, sizeof(db), "BBB=%s", fb);
    char *targv[] = {(char *)trader, (char *)"--host", (char *)TW_NETENV_STACK_IP, (char *)"--port",
                     (char *)"7010", (char *)"--sender", (char *)"QFVETH", (char *)"--data", da,
                     (char *)"--data", db, (char *)"--unknown", (char *)"ZZZ", (char *)"--dict",
                     (char *)dict, (char *)"--results", res,
                     fault && !strncmp(fault, "disconnect", 10) ? (char *)"--expect-reconnect"
                                                                 : NULL,
                     NULL};
    pid_t tr = tw__netenv_spawn(&e, targv, -1);
    int trc = tr > 0 ? tw__netenv_wait(tr, 240.0) : -1;
    int vrc = tw__netenv_wait(venue, 60.0);
    tw__netenv_teardown(&e);
    long errors = result(res, "errors"), bars_a = result(res, "bars_AAA"),
         bars_b = result(res, "bars_BBB"), tfills = result(res, "fills");
    long vfills = check_fills(fills, a, b);
    int ok = trc == 0 && vrc == 0 && errors == 0 && bars_a == NA && bars_b == NB &&
             tfills > 0 && vfills == tfills && result(res, "barrier_late") == 0;
    if (!ok) {
        fprintf(stderr,
                "FAIL: exchange over %s%s%s: trader exit %d (errors %ld, bars %ld/%ld, fills %ld), "
                "venue exit %d (fills logged %ld); logs in %s\n",
                kind, fault ? " with " : "", fault ? fault : "", trc, errors, bars_a, bars_b,
                tfills, vrc, vfills, tmp);
        return 1;
    }
    printf("PASS exchange over %s%s%s: %d + %d bars in lockstep to QuickFIX over kernel TCP, "
           "%ld fills exact\n",
           kind, fault ? " with " : "", fault ? fault : "", NA, NB, tfills);
    /* One connection unless a fault reconnects; a gap resends bars, not fills. */
    if (check_capture(pcap, vfills, !fault || !strncmp(fault, "gap", 3))) {
        fprintf(stderr, "  logs in %s\n", tmp);
        return 1;
    }
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    return system(cmd) == 0 ? 0 : 1;
}
