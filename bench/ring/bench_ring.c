/* `tickwire bench ring`: our SPSC ring against DPDK's rte_ring (SP/SC, with
 * pointers and a mempool, and by value) and ck_ring SPSC, in one run and
 * one harness (harness.h): two threads pinned to two CPUs, items of 16
 * and 64 bytes,
 *
 *   - one item at a time, and bursts of 32: ns per item, producer to
 *     consumer (the producer's first call to the consumer's last item);
 *   - ping-pong of one item: round trip p50 / p99 / p99.9;
 *
 * each the median of --runs runs, the implementations interleaved within
 * each run.  Every item is checked (sequence and payload) before any
 * figure is printed.  Then one line per row for the goal "ours at least as
 * fast as rte_ring and ck_ring", and the TSC calibration error. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cli_opt.h"
#include "common/stats.h"
#include "net/port_module.h"
#include "ring/harness.h"
#include "tickwire/common.h"
#include "tickwire/reactor.h"

int tw__cli_bench_ring(int argc, char **argv);

/* DPDK's rings (impl_dpdk.c) live in the DPDK port module
 * (libtickwire-port-dpdk.so), loaded when this benchmark runs so that the
 * program loads DPDK only then.  Built without DPDK or ck (CMake found no
 * libdpdk / ck): the table says so. */
static const rb_impl *dpdk_ptr, *dpdk_elem;
static int (*dpdk_init)(int main_cpu, char *why, size_t cap);
static void (*dpdk_fini)(void);

static int load_dpdk(char *why, size_t cap)
{
#ifdef TW_BENCH_RING_DPDK
    tw_error e = {0};
    const rb_impl *const *p = tw__port_module_symbol(TW_MODULE_DPDK, "tw__rb_dpdk_ptr", &e);
    const rb_impl *const *q = p ? tw__port_module_symbol(TW_MODULE_DPDK, "tw__rb_dpdk_elem", &e)
                                : NULL;
    void *init = q ? tw__port_module_symbol(TW_MODULE_DPDK, "tw__rb_dpdk_init", &e) : NULL;
    void *fini = init ? tw__port_module_symbol(TW_MODULE_DPDK, "tw__rb_dpdk_fini", &e) : NULL;
    if (!fini) {
        snprintf(why, cap, "%.*s", (int)(cap ? cap - 1 : 0), e.msg);
        return -1;
    }
    dpdk_ptr = *p;
    dpdk_elem = *q;
    dpdk_init = (int (*)(int, char *, size_t))init;
    dpdk_fini = (void (*)(void))fini;
    return 0;
#else
    snprintf(why, cap, "not built (apt-get install libdpdk-dev)");
    return -1;
#endif
}
#ifndef TW_BENCH_RING_CK
const rb_impl *const tw__rb_ck = NULL;
#endif

enum { M_ONE, M_BURST, M_P50, M_P99, M_P999, NMETRIC };
static const char *const metric_name[NMETRIC] = {
    "1 at a time, ns/item", "burst of 32, ns/item", "ping-pong p50, ns", "ping-pong p99, ns",
    "ping-pong p99.9, ns"};

enum { I_OURS, I_OURS_ZC, I_DPTR, I_DELEM, I_CK, NIMPL };
enum { MAX_RUNS = 99 };

typedef struct bench {
    const rb_impl *impl[NIMPL];
    char missing[NIMPL][160]; /* why an implementation is not measured */
    int cpu[2];
    uint64_t items, rounds;
    int runs;
    int yield; /* --yield: give the CPU away while waiting (smoke test) */
    tw_tsc_clock clock;
    double v[NIMPL][2][NMETRIC][MAX_RUNS];
    /* Per measurement: the smaller of the two threads' CPU time over its
     * wall time (1 on a quiet machine; less when other work took the CPU). */
    double on_cpu[NIMPL * 2 * 3 * MAX_RUNS];
    int n_on_cpu;
    uint64_t *rtt;
} bench;

typedef struct thread_arg {
    const rb_impl *impl;
    rb_body body;
    rb_side side;
    int cpu;
    uint32_t *ready;
    int rc;
    char why[200];
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    tw_error err = {0};
    if (tw_reactor_pin_self(a->cpu, &err) != 0) {
        a->rc = -1;
        snprintf(a->why, sizeof(a->why), "%s", err.msg);
        /* Relaxed: main only counts; pthread_join orders why and rc. */
        __atomic_add_fetch(a->ready, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    a->impl->thread_begin(a->side.ctx);
    __atomic_add_fetch(a->ready, 1, __ATOMIC_RELAXED);
    a->body(&a->side);
    a->impl->thread_end(a->side.ctx);
    return NULL;
}

/* One measurement of impl: a throughput run (burst 1 or 32) or a
 * ping-pong run.  Fills out[] (ns/item, or p50/p99/p99.9) and returns 0,
 * or -1 after printing what went wrong (a wrong item, a pin failure). */
static int measure(bench *b, const rb_impl *im, int si, int pingpong, uint32_t burst,
                   double *out)
{
    uint32_t size = si ? 64 : 16;
    char why[200] = "";
    void *ctx = NULL;
    if (im->setup(&ctx, size, why, sizeof(why)) != 0) {
        fprintf(stderr, "bench ring: %s: %s\n", im->name, why);
        return -1;
    }
    rb_cfg cfg = {.item_size = size, .burst = burst, .items = b->items, .rounds = b->rounds,
                  .yield = b->yield || b->cpu[0] == b->cpu[1]};
    volatile uint32_t go = 0;
    uint32_t ready = 0;
    thread_arg ta[2];
    for (int i = 0; i < 2; i++) {
        ta[i] = (thread_arg){.impl = im, .cpu = b->cpu[i], .ready = &ready};
        ta[i].side = (rb_side){.ctx = ctx, .cfg = &cfg, .go = &go, .rtt = b->rtt};
    }
    ta[0].body = pingpong ? im->ping[si] : im->produce[si];
    ta[1].body = pingpong ? im->pong[si] : im->consume[si];
    pthread_t th[2];
    int started = 0;
    for (; started < 2; started++)
        if (pthread_create(&th[started], NULL, thread_main, &ta[started]) != 0)
            break;
    /* Relaxed: a count of threads that are ready; the go flag below is
     * what releases them. */
    while (__atomic_load_n(&ready, __ATOMIC_RELAXED) < (uint32_t)started)
        tw_clock_sleep_ns(100000);
    go = 1;
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    im->teardown(ctx);
    int rc = 0;
    for (int i = 0; i < 2; i++)
        if (ta[i].rc != 0 || started < 2) {
            fprintf(stderr, "bench ring: %s: thread %d: %s\n", im->name, i,
                    started < 2 ? "pthread_create failed" : ta[i].why);
            rc = -1;
        }
    if (rc)
        return rc;
    const rb_side *a = &ta[0].side, *c = &ta[1].side;
    for (int i = 0; i < 2; i++) {
        const rb_side *x = &ta[i].side;
        double wall = (double)tw_tsc_delta_ns(&b->clock, x->t1 - x->t0);
        double f = wall > 0 ? (double)(x->c1 - x->c0) / wall : 1;
        if (i == 0 || f < b->on_cpu[b->n_on_cpu])
            b->on_cpu[b->n_on_cpu] = f > 1 ? 1 : f;
    }
    b->n_on_cpu++;
    uint64_t want = pingpong ? b->rounds : b->items;
    if (a->moved != want || c->moved != want || a->bad || c->bad) {
        fprintf(stderr,
                "bench ring: %s, %u-byte items, %s: moved %llu / %llu of %llu, %llu items "
                "wrong\n",
                im->name, size, pingpong ? "ping-pong" : "throughput",
                (unsigned long long)a->moved, (unsigned long long)c->moved,
                (unsigned long long)want, (unsigned long long)(a->bad + c->bad));
        return -1;
    }
    if (!pingpong) {
        out[0] = (double)tw_tsc_delta_ns(&b->clock, c->t1 - a->t0) / (double)b->items;
        return 0;
    }
    /* The first tenth of the round trips warms caches and branch history. */
    uint64_t skip = b->rounds / 10, n = b->rounds - skip;
    uint64_t *r = b->rtt + skip;
    tw__sort_u64(r, n);
    const double q[3] = {0.50, 0.99, 0.999};
    for (int i = 0; i < 3; i++) {
        uint64_t k = (uint64_t)(q[i] * (double)(n - 1));
        out[i] = (double)tw_tsc_delta_ns(&b->clock, r[k]);
    }
    return 0;
}

static double median(const double *v, int n)
{
    static double s[NIMPL * 2 * 3 * MAX_RUNS];
    if (n <= 0)
        return NAN;
    memcpy(s, v, sizeof(double) * (size_t)n);
    return tw__median_f64(s, (size_t)n);
}

static double lowest(const double *v, int n)
{
    double m = n ? v[0] : 0;
    for (int i = 1; i < n; i++)
        if (v[i] < m)
            m = v[i];
    return m;
}

static int parse_cpus(const char *s, int cpu[2])
{
    char *end;
    long a = strtol(s, &end, 10);
    if (end == s || *end != ',')
        return -1;
    const char *t = end + 1;
    long b = strtol(t, &end, 10);
    if (end == t || *end || a < 0 || b < 0 || a >= CPU_SETSIZE || b >= CPU_SETSIZE)
        return -1;
    cpu[0] = (int)a;
    cpu[1] = (int)b;
    return 0;
}

/* The first two CPUs of our affinity mask (one twice on a 1-CPU box). */
static void default_cpus(int cpu[2])
{
    cpu_set_t s;
    int n = 0;
    cpu[0] = cpu[1] = 0;
    if (sched_getaffinity(0, sizeof(s), &s) != 0)
        return;
    for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
        if (CPU_ISSET(i, &s))
            cpu[n++] = i;
    if (n == 1)
        cpu[1] = cpu[0];
}

static void cpu_model(char *out, size_t cap)
{
    snprintf(out, cap, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "re");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        if (!strncmp(line, "model name", 10)) {
            const char *p = strchr(line, ':');
            if (p) {
                p++;
                while (*p == ' ')
                    p++;
                snprintf(out, cap, "%s", p);
                out[strcspn(out, "\n")] = 0;
            }
            break;
        }
    }
    fclose(f);
}

/* "0,2" style SMT siblings of cpu, for the header. */
static void siblings(int cpu, char *out, size_t cap)
{
    char path[128];
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list",
             cpu);
    snprintf(out, cap, "?");
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (fgets(out, (int)cap, f))
        out[strcspn(out, "\n")] = 0;
    fclose(f);
}

static const char usage[] =
    "usage: tickwire bench ring [--runs R] [--items N] [--rounds N] [--cpus A,B] [--quick]\n"
    "                           [--no-dpdk] [--yield]\n"
    "  our SPSC ring against DPDK rte_ring (SP/SC; pointers + mempool, and by value) and\n"
    "  ck_ring SPSC: two threads on CPUs A and B (default: the first two we may use),\n"
    "  16- and 64-byte items, one at a time and bursts of 32 (ns/item over N items,\n"
    "  default 2000000), ping-pong of one item (p50/p99/p99.9 over N rounds, default\n"
    "  200000); medians of R runs (default 5).  --quick: 1 run, 100000 items, 20000\n"
    "  rounds.  --no-dpdk: leave rte_ring out (no EAL).  --yield: sched_yield while\n"
    "  waiting (for tests on shared CPUs; the figures are then not busy-polled).\n";

int tw__cli_bench_ring(int argc, char **argv)
{
    static bench b; /* large: the per-run figures */
    memset(&b, 0, sizeof(b));
    b.items = 2000000;
    b.rounds = 200000;
    b.runs = 5;
    int no_dpdk = 0, have_cpus = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            b.runs = 1;
            b.items = 100000;
            b.rounds = 20000;
            continue;
        }
        if (!strcmp(argv[i], "--no-dpdk")) {
            no_dpdk = 1;
            continue;
        }
        if (!strcmp(argv[i], "--yield")) {
            b.yield = 1;
            continue;
        }
        const char *opt, *val;
        int r = tw__cli_opt_value("bench ring", usage, argc, argv, &i, &opt, &val);
        if (r)
            return r > 0 ? 0 : 2;
        uint64_t v;
        if (!strcmp(opt, "--runs")) {
            if (tw__cli_u64_range("bench ring", opt, val, 1, MAX_RUNS, &v))
                return 2;
            b.runs = (int)v;
        } else if (!strcmp(opt, "--items")) {
            if (tw__cli_u64_range("bench ring", opt, val, 1000, 1ull << 40, &b.items))
                return 2;
        } else if (!strcmp(opt, "--rounds")) {
            if (tw__cli_u64_range("bench ring", opt, val, 100, 1ull << 32, &b.rounds))
                return 2;
        } else if (!strcmp(opt, "--cpus")) {
            if (parse_cpus(val, b.cpu)) {
                fprintf(stderr, "tickwire bench ring: --cpus wants A,B (two CPU numbers)\n");
                return 2;
            }
            have_cpus = 1;
        } else {
            fprintf(stderr, "tickwire bench ring: unknown option %s (see --help)\n", opt);
            return 2;
        }
    }
    if (!have_cpus)
        default_cpus(b.cpu);

    /* The clock: calibrated over 100 ms, its error measured over 1 s. */
    tw_error err = {0};
    if (tw_tsc_calibrate(&b.clock, 100000000, &err) != 0) {
        fprintf(stderr, "tickwire bench ring: %s\n", err.msg);
        return 1;
    }
    double ppm = tw_tsc_measure_error(&b.clock, 1000000000);

    b.impl[I_OURS] = &tw__rb_ours;
    b.impl[I_OURS_ZC] = &tw__rb_ours_zc;
    if (!tw__rb_ck)
        snprintf(b.missing[I_CK], sizeof(b.missing[I_CK]),
                 "not built (apt-get install libck-dev)");
    else
        b.impl[I_CK] = tw__rb_ck;
    char dpdk_why[140] = "left out (--no-dpdk)";
    if (no_dpdk || load_dpdk(dpdk_why, sizeof(dpdk_why)) != 0) {
        snprintf(b.missing[I_DPTR], sizeof(b.missing[I_DPTR]), "%s", dpdk_why);
        snprintf(b.missing[I_DELEM], sizeof(b.missing[I_DELEM]), "%s", dpdk_why);
    } else {
        char why[140];
        if (dpdk_init(b.cpu[0], why, sizeof(why)) != 0) {
            snprintf(b.missing[I_DPTR], sizeof(b.missing[I_DPTR]), "EAL: %s", why);
            snprintf(b.missing[I_DELEM], sizeof(b.missing[I_DELEM]), "EAL: %s", why);
        } else {
            b.impl[I_DPTR] = dpdk_ptr;
            b.impl[I_DELEM] = dpdk_elem;
        }
    }
    b.rtt = calloc(b.rounds, sizeof(*b.rtt));
    if (!b.rtt) {
        fprintf(stderr, "tickwire bench ring: out of memory\n");
        return 1;
    }

    /* Interleaved: within each run every implementation measures each row
     * once, in an order that rotates from run to run. */
    int rc = 0;
    for (int run = 0; run < b.runs && rc == 0; run++) {
        fprintf(stderr, "bench ring: run %d of %d\n", run + 1, b.runs);
        for (int si = 0; si < 2 && rc == 0; si++)
            for (int mode = 0; mode < 3 && rc == 0; mode++)
                for (int j = 0; j < NIMPL && rc == 0; j++) {
                    int ii = (j + run) % NIMPL;
                    const rb_impl *im = b.impl[ii];
                    if (!im)
                        continue;
                    double out[3];
                    rc = measure(&b, im, si, mode == 2, mode == 1 ? RB_MAX_BURST : 1, out);
                    if (rc)
                        break;
                    if (mode < 2) {
                        b.v[ii][si][mode][run] = out[0];
                    } else {
                        b.v[ii][si][M_P50][run] = out[0];
                        b.v[ii][si][M_P99][run] = out[1];
                        b.v[ii][si][M_P999][run] = out[2];
                    }
                }
    }
    free(b.rtt);
    if (b.impl[I_DPTR])
        dpdk_fini();
    if (rc) {
        fprintf(stderr, "tickwire bench ring: FAILED (see above); no figures printed\n");
        return 1;
    }

    /* Every item of every run arrived in order and intact: now the figures. */
    char model[128], sib0[64], sib1[64];
    cpu_model(model, sizeof(model));
    siblings(b.cpu[0], sib0, sizeof(sib0));
    siblings(b.cpu[1], sib1, sizeof(sib1));
    tw_isa isa = tw_cpu_has(TW_ISA_AVX512) ? TW_ISA_AVX512
                 : tw_cpu_has(TW_ISA_AVX2) ? TW_ISA_AVX2
                                           : TW_ISA_SSE2;
    printf("tickwire bench ring: producer on CPU %d, consumer on CPU %d (SMT siblings: %s / %s); "
           "rings of %u slots; medians of %d run%s; %llu items per throughput run, %llu round "
           "trips per ping-pong run (first tenth not counted); %s\n",
           b.cpu[0], b.cpu[1], sib0, sib1, RB_SLOTS, b.runs, b.runs > 1 ? "s" : "",
           (unsigned long long)b.items, (unsigned long long)b.rounds,
           b.yield ? "waiting with pause and sched_yield (--yield: NOT busy-polled figures)"
                   : "busy-polling with pause");
    printf("CPU: %s; ISA: %s; %d online CPUs, load average ", model, tw_isa_name(isa),
           (int)sysconf(_SC_NPROCESSORS_ONLN));
    double load[3];
    if (getloadavg(load, 3) == 3)
        printf("%.2f %.2f %.2f\n", load[0], load[1], load[2]);
    else
        printf("?\n");
    printf("Threads on their CPUs: median %.0f%%, lowest %.0f%% of each measurement's wall time "
           "(the smaller of the two threads; 100%% on a quiet machine)\n",
           100 * median(b.on_cpu, b.n_on_cpu), 100 * lowest(b.on_cpu, b.n_on_cpu));
    printf("TSC: %s, %.3f GHz, calibration error %+.2f ppm over %.2f s (calibrated over 100 ms "
           "against CLOCK_MONOTONIC)\n",
           b.clock.invariant ? "invariant" : "NOT invariant (CPUID 80000007 EDX bit 8 clear)",
           b.clock.hz / 1e9, ppm, (double)b.clock.err_interval_ns / 1e9);
    for (int i = 0; i < NIMPL; i++)
        if (!b.impl[i])
            printf("%s: %s\n", i == I_CK ? "ck_ring" : i == I_DPTR ? "rte_ring + mempool"
                                                                   : "rte_ring elem",
                   b.missing[i]);
    printf("\n| item | row | tickwire | tickwire zero-copy | rte_ring + mempool | x | "
           "rte_ring elem | x | ck_ring | x |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    double med[NIMPL][2][NMETRIC];
    for (int i = 0; i < NIMPL; i++)
        for (int si = 0; si < 2; si++)
            for (int m = 0; m < NMETRIC; m++)
                med[i][si][m] = b.impl[i] ? median(b.v[i][si][m], b.runs) : NAN;
    for (int si = 0; si < 2; si++)
        for (int m = 0; m < NMETRIC; m++) {
            double o = med[I_OURS][si][m];
            printf("| %d B | %s | %.1f | %.1f |", si ? 64 : 16, metric_name[m], o,
                   med[I_OURS_ZC][si][m]);
            const int cmp[3] = {I_DPTR, I_DELEM, I_CK};
            for (int k = 0; k < 3; k++) {
                double t = med[cmp[k]][si][m];
                if (isnan(t))
                    printf(" - | - |");
                else
                    printf(" %.1f | %.2fx |", t, t / o);
            }
            printf("\n");
        }
    printf("\nx = their median / ours (above 1: ours is faster).  Goal: ours (the copying calls, "
           "column tickwire) at least as fast as rte_ring (both ways) and ck_ring in every "
           "row.\n");
    int all = 1;
    for (int si = 0; si < 2; si++)
        for (int m = 0; m < NMETRIC; m++) {
            double o = med[I_OURS][si][m], zc = med[I_OURS_ZC][si][m];
            int met = 1, zc_met = 1, judged = 1;
            const int cmp[3] = {I_DPTR, I_DELEM, I_CK};
            char slower[128] = "";
            for (int k = 0; k < 3; k++) {
                double t = med[cmp[k]][si][m];
                if (isnan(t)) {
                    judged = 0;
                    continue;
                }
                if (o > t) {
                    met = 0;
                    size_t l = strlen(slower);
                    snprintf(slower + l, sizeof(slower) - l, "%s%s", l ? ", " : "",
                             b.impl[cmp[k]]->name);
                }
                if (zc > t)
                    zc_met = 0;
            }
            if (!judged)
                met = 0;
            all &= met;
            printf("goal %d B %s: %s", si ? 64 : 16, metric_name[m], met ? "met" : "NOT met");
            if (!judged)
                printf(" (not every comparison was measured)");
            else if (!met)
                printf(" (slower than %s; zero-copy calls: %s)", slower, zc_met ? "met" : "NOT met");
            printf("\n");
        }
    printf("goal, every row: %s\n", all ? "met" : "NOT met");
    return 0;
}
