/* tickwire net relay: an impaired link between two interfaces in
 * userspace (common/netrelay.h), for runs by hand through the same seeded
 * losses the netloss benchmark uses.
 *
 *   tickwire net relay --a IF --b IF [schedule options]
 *   tickwire net relay --topology [schedule options]
 *
 * --a/--b relay between two existing interfaces (each the relay's end of a
 * veth pair).  --topology makes the benchmark's topology instead (two veth
 * pairs, a kernel end in a namespace of its own at each side: left
 * 10.99.0.3, right 10.99.0.1), prints the `ip netns exec` prefixes to use,
 * and removes it all at exit.  Both run until SIGINT/SIGTERM, then print
 * what the relay did.  Root only.
 *
 * Schedule: --seed N, --loss P (0..1), --burst N --burst-at K [--burst-dir
 * 0|1] (frames K..K+N-1 of that direction lost; 0 is a to b), --delay US,
 * --jitter US, --reorder P --reorder-us US, --dup P.  The fate of the k-th
 * IPv4 frame each way depends only on the seed, the direction and k. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cli_opt.h"
#include "common/netrelay.h"

int tw__cli_net_relay(int argc, char **argv);

static volatile int relay_quit;
static void on_sig(int s)
{
    (void)s;
    relay_quit = 1;
}

static const char relay_usage[] =
    "usage: tickwire net relay (--a IF --b IF | --topology) [--seed N] [--loss P]\n"
    "                          [--burst N --burst-at K [--burst-dir 0|1]] [--delay US]\n"
    "                          [--jitter US] [--reorder P --reorder-us US] [--dup P]\n"
    "  relays frames between two interfaces, dropping, delaying, reordering and\n"
    "  duplicating IPv4 frames by a seeded schedule (the k-th frame's fate each way\n"
    "  depends only on seed, direction and k); --topology makes two veth pairs with\n"
    "  a kernel in a namespace at each end (10.99.0.3 left, 10.99.0.1 right) (root)\n";

static int prob(const char *cmd, const char *opt, const char *val, double *p)
{
    if (tw__cli_double(cmd, opt, val, p))
        return -1;
    if (*p < 0 || *p > 1) {
        fprintf(stderr, "tickwire %s: %s wants a probability in [0, 1] (got %s)\n", cmd, opt, val);
        return -1;
    }
    return 0;
}

static int usecs(const char *cmd, const char *opt, const char *val, int64_t *ns)
{
    uint64_t v;
    if (tw__cli_u64_range(cmd, opt, val, 0, 10000000, &v))
        return -1;
    *ns = (int64_t)v * 1000;
    return 0;
}

int tw__cli_net_relay(int argc, char **argv)
{
    static const char cmd[] = "net relay";
    const char *a_if = NULL, *b_if = NULL;
    int topo = 0;
    tw__relay_sched s;
    memset(&s, 0, sizeof(s));
    s.seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--topology")) {
            topo = 1;
            continue;
        }
        const char *opt, *val;
        int r = tw__cli_opt_value(cmd, relay_usage, argc, argv, &i, &opt, &val);
        if (r)
            return r > 0 ? 0 : 2;
        uint64_t v;
        int bad = 0;
        if (!strcmp(opt, "--a"))
            a_if = val;
        else if (!strcmp(opt, "--b"))
            b_if = val;
        else if (!strcmp(opt, "--seed"))
            bad = tw__cli_u64(cmd, opt, val, &s.seed);
        else if (!strcmp(opt, "--loss"))
            bad = prob(cmd, opt, val, &s.loss);
        else if (!strcmp(opt, "--burst"))
            bad = tw__cli_u64_range(cmd, opt, val, 0, 1000000, &s.burst_len);
        else if (!strcmp(opt, "--burst-at"))
            bad = tw__cli_u64(cmd, opt, val, &s.burst_at);
        else if (!strcmp(opt, "--burst-dir")) {
            bad = tw__cli_u64_range(cmd, opt, val, 0, 1, &v);
            s.burst_dir = (unsigned)v;
        } else if (!strcmp(opt, "--delay"))
            bad = usecs(cmd, opt, val, &s.delay_ns);
        else if (!strcmp(opt, "--jitter"))
            bad = usecs(cmd, opt, val, &s.jitter_ns);
        else if (!strcmp(opt, "--reorder"))
            bad = prob(cmd, opt, val, &s.reorder);
        else if (!strcmp(opt, "--reorder-us"))
            bad = usecs(cmd, opt, val, &s.reorder_ns);
        else if (!strcmp(opt, "--dup"))
            bad = prob(cmd, opt, val, &s.dup);
        else {
            fprintf(stderr, "tickwire %s: unknown option '%s' (see --help)\n", cmd, opt);
            return 2;
        }
        if (bad)
            return 2;
    }
    if (topo == (a_if || b_if) || (!topo && !(a_if && b_if))) {
        fprintf(stderr, "tickwire %s: give --a IF and --b IF, or --topology (see --help)\n", cmd);
        return 2;
    }
    tw__relay_topology t;
    if (topo) {
        int rc = tw__relay_topology_setup(&t, 1, 1);
        if (rc)
            return rc == TW_NETENV_SKIP ? 77 : 1;
        a_if = t.l.host;
        b_if = t.r.host;
        printf("left:  ip netns exec %s ...   (%s on %s)\n", t.l.ns, TW_NETENV_CLIENT_IP, t.l.peer);
        printf("right: ip netns exec %s ...   (%s on %s)\n", t.r.ns, TW_NETENV_PEER_IP, t.r.peer);
    } else if (geteuid() != 0) {
        fprintf(stderr, "tickwire %s: needs root (packet sockets)\n", cmd);
        return 77;
    }
    static tw__relay r;
    char why[200];
    int rc = tw__relay_open(&r, a_if, b_if, &s, why, sizeof(why));
    if (rc) {
        fprintf(stderr, "tickwire %s: %s\n", cmd, why);
        if (topo)
            tw__relay_topology_teardown(&t);
        return 1;
    }
    signal(SIGINT, on_sig);
    signal(SIGTERM, on_sig);
    printf("relaying %s <-> %s (seed %llu, loss %g, burst %llu at %llu, delay %lld us); "
           "Ctrl-C stops\n", a_if, b_if, (unsigned long long)s.seed, s.loss,
           (unsigned long long)s.burst_len, (unsigned long long)s.burst_at,
           (long long)(s.delay_ns / 1000));
    fflush(stdout);
    rc = tw__relay_run(&r, &relay_quit);
    tw__relay_close(&r);
    const tw__relay_counts *c = &r.c;
    for (unsigned d = 0; d < 2; d++)
        printf("%s: %llu IPv4 frames, %llu dropped, %llu duplicated, %llu reordered, "
               "%llu sent, %llu other passed\n", d ? "b->a" : "a->b",
               (unsigned long long)c->frames[d], (unsigned long long)c->dropped[d],
               (unsigned long long)c->duplicated[d], (unsigned long long)c->reordered[d],
               (unsigned long long)c->sent[d], (unsigned long long)c->other[d]);
    printf("queue full %llu, send refused %llu, socket drops %llu\n",
           (unsigned long long)c->queue_full, (unsigned long long)c->tx_fail,
           (unsigned long long)c->sock_drops);
    if (topo)
        tw__relay_topology_teardown(&t);
    return rc ? 1 : 0;
}
