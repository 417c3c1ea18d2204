/* `tickwire bench net`: every benchmark of the stack in one run: parse
 * ns/packet and TCP tx/rx ns/segment over the sim port
 * (bench/net/bench_net_core.c), then the veth round-trip table of
 * `tickwire bench netrtt` (bench/netrtt/bench_netrtt_core.c: kernel to
 * kernel, this stack as client on each port, this stack on both ends)
 * when it is built and we are root.
 * Options go to the part that knows them; --no-rtt skips the round trips. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int tw__bench_net_run(int argc, char **argv);
int tw__cli_bench_net(int argc, char **argv);
/* Defined when the AF_PACKET port (and so the veth benchmark) is built. */
int tw__bench_netrtt_run(int argc, char **argv) __attribute__((weak));

int tw__cli_bench_net(int argc, char **argv)
{
    char *core[32], *rtt[32];
    int nc = 0, nr = 0, no_rtt = 0;
    core[nc++] = argv[0];
    rtt[nr++] = (char *)"bench netrtt";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int with_value = !strcmp(a, "-n") || !strcmp(a, "--runs") || !strcmp(a, "--cpus") ||
                         !strcmp(a, "--kpeer") || !strcmp(a, "--trace");
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: tickwire bench net [--quick] [--reps N] [--iters N] [--segs N]\n"
                   "                          [--no-rtt] [-n MSGS] [--runs R] [--rt] [--cpus C,S]\n"
                   "  parse and sim-port TCP figures (--quick: fewer repetitions), then the\n"
                   "  veth round-trip table of `tickwire bench netrtt` (root; its options\n"
                   "  -n, --runs, --rt, --cpus, --kpeer, --trace pass through; --no-rtt skips it)\n");
            return 0;
        }
        if (!strcmp(a, "--no-rtt")) {
            no_rtt = 1;
        } else if (with_value || !strcmp(a, "--rt")) {
            if (nr >= 30 || (with_value && i + 1 >= argc)) {
                fprintf(stderr, "bench net: %s needs a value\n", a);
                return 2;
            }
            rtt[nr++] = argv[i];
            if (with_value)
                rtt[nr++] = argv[++i];
        } else {
            if (nc >= 30) {
                fprintf(stderr, "bench net: too many arguments\n");
                return 2;
            }
            core[nc++] = argv[i];
            if ((!strcmp(a, "--reps") || !strcmp(a, "--iters") || !strcmp(a, "--segs")) &&
                i + 1 < argc)
                core[nc++] = argv[++i];
        }
    }
    core[nc] = NULL;
    rtt[nr] = NULL;
    int rc = tw__bench_net_run(nc, core);
    if (rc != 0 || no_rtt)
        return rc;
    printf("\n");
    if (!tw__bench_netrtt_run) {
        printf("round trip over veth: not built (this build has no AF_PACKET port)\n");
        return 0;
    }
    if (geteuid() != 0) {
        printf("round trip over veth: skipped (needs root for namespaces and veth; "
               "or pass --no-rtt)\n");
        return 0;
    }
    fflush(stdout);
    return tw__bench_netrtt_run(nr, rtt);
}
