/* `tickwire trade` on this project's userspace stack over a veth pair
 * (AF_PACKET, AF_XDP or DPDK's net_af_packet), against `tickwire exchange
 * --lockstep` over the kernel's TCP in the peer namespace (netstack.md,
 * "Real peer"; live.md, "Parity").  The study dataset and a NaN-gapped one
 * (their first --bars bars) as two instruments, 8 combos each; per
 * instance the trade list, trade count, execution and signal PnL must
 * equal `tickwire sweep --trades` bit for bit (python3 -m tickwire.live
 * --check), both programs exit 0, and the session's capture (pcap =) holds
 * its NewOrderSingles.
 * Root only (namespaces, veth); exits 77 with a message otherwise.
 *
 *   trade_veth_test KIND TICKWIRE SOURCE_DIR [--bars N]
 * KIND: af_packet, af_xdp, dpdk_af_packet. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/netenv.h"

static int has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, needle) != NULL;
}

static const char *combos[] = {
    "6,12,3,2,4,6",     "39,78,9,13,20,39", "102,204,14,34,51,102", "200,400,20,67,100,200",
    "397,400,19,45,67,133", "1,1,1,1,1,1",   "7,13,3,5,9,11",        "101,203,17,33,51,399",
};

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: trade_veth_test KIND TICKWIRE SOURCE_DIR [--bars N]\n");
        return 2;
    }
    const char *kind = argv[1], *tickwire = argv[2], *src = argv[3];
    long bars = argc > 5 && !strcmp(argv[4], "--bars") ? atol(argv[5]) : 30000;
    if (geteuid() != 0) {
        printf("SKIP: trade over %s needs root (network namespaces, veth)\n", kind);
        return 77;
    }
    if (access(tickwire, X_OK) != 0) {
        fprintf(stderr, "FAIL: %s missing\n", tickwire);
        return 1;
    }
    char tmp[] = "/tmp/tw_tveth_XXXXXX";
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "PYTHONPATH=%s/python /usr/bin/python3 -c \"import numpy as np; from tickwire import "
             "data; np.save('%s/a.npy', data.study()[:%ld]); "
             "np.save('%s/b.npy', data.with_nan_gaps(data.study(seed=43))[:%ld])\"",
             src, tmp, bars, tmp, bars);
    if (system(cmd) != 0) {
        printf("SKIP: /usr/bin/python3 with numpy could not build the datasets\n");
        return 77;
    }
    tw__netenv e;
    int rc = tw__netenv_setup(&e, 1);
    if (rc)
        return rc == TW_NETENV_SKIP ? 77 : 1;
    /* The venue in the peer namespace, over the kernel's TCP. */
    char data[1200], fills[600], store[600], vout[600];
    snprintf(data, sizeof(data), "AAA=%s/a.npy,BBB=%s/b.npy", tmp, tmp);
    snprintf(fills, sizeof(fills), "%s/fills.csv", tmp);
    snprintf(store, sizeof(store), "%s/venue_store", tmp);
    snprintf(vout, sizeof(vout), "%s/venue.out", tmp);
    char *vargv[] = {(char *)tickwire, (char *)"exchange", (char *)"--listen",
                     (char *)TW_NETENV_PEER_IP ":7020", (char *)"--data", data, (char *)"--fills",
                     fills, (char *)"--store", store, (char *)"--max-orders", (char *)"10000000",
                     (char *)"--quiet", NULL};
    int ofd = open(vout, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t venue = tw__netenv_spawn(&e, vargv, ofd);
    close(ofd);
    if (venue < 0) {
        tw__netenv_teardown(&e);
        return 1;
    }
    for (int t = 0; t < 200 && !has(vout, "listening"); t++)
        usleep(50000);
    /* The trader here, on the stack over our end of the pair. */
    char ini[600], report[600], trades[600], tout[600];
    snprintf(ini, sizeof(ini), "%s/trade.ini", tmp);
    snprintf(report, sizeof(report), "%s/report.json", tmp);
    snprintf(trades, sizeof(trades), "%s/trades.csv", tmp);
    snprintf(tout, sizeof(tout), "%s/trader.out", tmp);
    FILE *f = fopen(ini, "w");
    if (!f) {
        tw__netenv_teardown(&e);
        return 1;
    }
    fprintf(f,
            "[engine]\nreport = %s\ntrades = %s\nlog = %s/trader.log\nbusy_poll = no\n"
            "[session venue]\nhost = " TW_NETENV_PEER_IP "\nport = 7020\nsender = TRADER\n"
            "target = VENUE\nstore = %s/store/venue\nstack = %s:%s\nip = " TW_NETENV_STACK_IP
            "/24\nreconnect_min_ms = 50\npcap = %s/trader.pcapng\n"
            "[instrument AAA]\nsession = venue\n[instrument BBB]\nsession = venue\n",
            report, trades, tmp, tmp, kind, e.host, tmp);
    for (int s = 0; s < 2; s++) {
        fprintf(f, "[strategy %s]\ninstrument = %s\n", s ? "b" : "a", s ? "BBB" : "AAA");
        for (size_t c = 0; c < sizeof(combos) / sizeof(combos[0]); c++)
            fprintf(f, "combo = %s\n", combos[c]);
    }
    fprintf(f, "[risk]\nmax_position = 1000000\nmax_total_position = 100000000\n"
               "max_orders_per_s = 1000000000\nmax_loss = 1e300\n");
    fclose(f);
    char *targv[] = {(char *)tickwire, (char *)"trade", (char *)"--config", ini, NULL};
    tw__netenv here;
    memset(&here, 0, sizeof(here));
    ofd = open(tout, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t tr = tw__netenv_spawn(&here, targv, ofd);
    close(ofd);
    int trc = tr > 0 ? tw__netenv_wait(tr, 900.0) : -1;
    int vrc = tw__netenv_wait(venue, 60.0);
    tw__netenv_teardown(&e);
    snprintf(cmd, sizeof(cmd),
             "PYTHONPATH=%s/python /usr/bin/python3 -m tickwire.live --tickwire %s --dir %s "
             "--check %s %s %s --data AAA=%s/a.npy --data BBB=%s/b.npy > %s/parity.out",
             src, tickwire, tmp, ini, report, trades, tmp, tmp, tmp);
    int prc = trc == 0 && vrc == 0 ? system(cmd) : -1;
    /* The session's capture (pcap =) holds its orders on the wire. */
    snprintf(cmd, sizeof(cmd), "grep -caP '\\x0135=D\\x01' %s/trader.pcapng > /dev/null", tmp);
    int cap_ok = system(cmd) == 0;
    snprintf(cmd, sizeof(cmd), "%s/parity.out", tmp);
    if (trc != 0 || vrc != 0 || prc != 0 || !has(cmd, "parity: bit-identical") || !cap_ok) {
        fprintf(stderr, "FAIL: trade over %s: trader exit %d, venue exit %d, parity check %d, "
                "capture %s; files in %s\n", kind, trc, vrc, prc, cap_ok ? "ok" : "without orders", tmp);
        return 1;
    }
    printf("PASS trade over %s (userspace stack) to the venue over kernel TCP: %ld + %ld bars in "
           "lockstep, 16 instances bit-identical to tickwire sweep --trades; its frames captured (pcap =)\n", kind, bars, bars);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    return system(cmd) == 0 ? 0 : 1;
}
