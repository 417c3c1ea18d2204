/* `tickwire doctor` on this machine: its findings (--values) match what
 * /proc, /sys, CPUID, getrlimit and ethtool say, read here independently;
 * its verdicts follow from them and the exit status from the verdicts;
 * options change what is judged; it changes nothing; it runs unprivileged.
 * The machine need not be tuned: the test checks the doctor tells the
 * truth about it, not that it is good.
 *
 *   test_doctor PATH-TO-tickwire */
#include <cpuid.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tw_check.h"

static const char *g_bin;

enum { MAXV = 512 };
typedef struct run {
    int status; /* exit status, or -1 */
    int n;
    char key[MAXV][64];
    char val[MAXV][512];
    char text[1 << 16]; /* the whole output */
} run;

/* Runs `tickwire doctor ARGS` (as uid nobody when drop is set, if root). */
static void doctor(run *r, const char *args, int drop)
{
    memset(r, 0, sizeof(*r));
    r->status = -1;
    int pfd[2];
    if (pipe(pfd) != 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        if (drop && geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(126);
        char cmd[1024];
        snprintf(cmd, sizeof(cmd), "exec '%s' doctor --quick %s", g_bin, args);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    size_t len = 0;
    ssize_t k;
    while ((k = read(pfd[0], r->text + len, sizeof(r->text) - 1 - len)) > 0)
        len += (size_t)k;
    r->text[len] = 0;
    close(pfd[0]);
    int st;
    if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
        r->status = WEXITSTATUS(st);
    for (char *line = r->text; *line && r->n < MAXV;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        char *sp = strchr(line, ' ');
        if (sp) {
            snprintf(r->key[r->n], sizeof(r->key[0]), "%.*s", (int)(sp - line > 63 ? 63 : sp - line), line);
            snprintf(r->val[r->n], sizeof(r->val[0]), "%.511s", sp + 1);
        } else {
            snprintf(r->key[r->n], sizeof(r->key[0]), "%.63s", line);
        }
        r->n++;
        if (!nl)
            break;
        *nl = '\n';
        line = nl + 1;
    }
}

static const char *get(const run *r, const char *key)
{
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->key[i], key))
            return r->val[i];
    return NULL;
}

#define CHECK_VAL(r, key, want)                                                               \
    do {                                                                                      \
        const char *got_ = get(r, key);                                                       \
        CHECKF(got_ && !strcmp(got_, (want)), "%s: doctor says '%s', the system says '%s'",   \
               key, got_ ? got_ : "(missing)", (want));                                       \
    } while (0)

/* A small file as the kernel has it (trailing newline cut); "" if none. */
static int sys_read(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "re");
    buf[0] = 0;
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = 0;
    while (n && isspace((unsigned char)buf[n - 1]))
        buf[--n] = 0;
    return 0;
}

static void bracket(const char *s, char *out, size_t cap)
{
    const char *a = strchr(s, '['), *b = a ? strchr(a, ']') : NULL;
    snprintf(out, cap, "%.*s", a && b ? (int)(b - a - 1) : 0, a ? a + 1 : "");
}

static unsigned long long cap_eff(void)
{
    char st[8192];
    sys_read("/proc/self/status", st, sizeof(st));
    const char *p = strstr(st, "\nCapEff:");
    return p ? strtoull(p + 8, NULL, 16) : 0;
}

static void rlimit_str(int res, char *out, size_t cap)
{
    struct rlimit rl;
    getrlimit(res, &rl);
    if (rl.rlim_cur == RLIM_INFINITY)
        snprintf(out, cap, "unlimited");
    else
        snprintf(out, cap, "%llu", (unsigned long long)rl.rlim_cur);
}

/* The verdicts and the exit status agree. */
static void check_verdicts(const run *r, const char *what)
{
    int bad = 0, items = 0;
    for (int i = 0; i < r->n; i++)
        if (!strncmp(r->key[i], "verdict.", 8)) {
            items++;
            bad += !strcmp(r->val[i], "NOT fit");
            CHECKF(!strcmp(r->val[i], "fit") || !strcmp(r->val[i], "NOT fit") ||
                       !strcmp(r->val[i], "warn") || !strcmp(r->val[i], "n/a"),
                   "%s: %s is '%s'", what, r->key[i], r->val[i]);
        }
    CHECKF(items >= 13, "%s: %d items", what, items);
    char want[16];
    snprintf(want, sizeof(want), "%d", bad);
    CHECK_VAL(r, "not_fit", want);
    CHECKF(r->status == (bad ? 1 : 0), "%s: exit %d with %d NOT fit", what, r->status, bad);
}

static void test_host(void)
{
    static run r;
    doctor(&r, "--values", 0);
    REQUIRE(r.status == 0 || r.status == 1);
    check_verdicts(&r, "--values");
    char buf[4096], b2[256];

    /* TSC: CPUID and /proc/cpuinfo. */
    unsigned a = 0, b, c, d = 0;
    int inv = 0;
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u) {
        __cpuid(0x80000007u, a, b, c, d);
        inv = (d >> 8) & 1;
    }
    CHECK_VAL(&r, "tsc.invariant", inv ? "1" : "0");
    static char ci[1 << 16];
    sys_read("/proc/cpuinfo", ci, sizeof(ci));
    char *flags = strstr(ci, "\nflags");
    char *eol = flags ? strchr(flags + 1, '\n') : NULL;
    if (eol)
        *eol = 0;
    CHECK_VAL(&r, "tsc.constant_tsc", flags && strstr(flags, " constant_tsc") ? "1" : "0");
    CHECK_VAL(&r, "tsc.nonstop_tsc", flags && strstr(flags, " nonstop_tsc") ? "1" : "0");
    const char *ppm = get(&r, "tsc.error_ppm");
    CHECK(ppm && strcmp(ppm, "nan") != 0);
    CHECKF(!strcmp(get(&r, "verdict.tsc") ? get(&r, "verdict.tsc") : "", "fit") ==
               (inv && ppm && atof(ppm) <= 100 && atof(ppm) >= -100),
           "tsc verdict %s with invariant %d and %s ppm", get(&r, "verdict.tsc"), inv, ppm);

    sys_read("/sys/devices/system/clocksource/clocksource0/current_clocksource", buf, sizeof(buf));
    CHECK_VAL(&r, "clocksource.current", buf);

    /* CPUs: the kernel's lists as the kernel writes them. */
    sys_read("/sys/devices/system/cpu/online", buf, sizeof(buf));
    CHECK_VAL(&r, "cpus.online", buf);
    sys_read("/sys/devices/system/cpu/isolated", buf, sizeof(buf));
    CHECK_VAL(&r, "cpus.isolated", buf);
    int iso_empty = buf[0] == 0;
    if (sys_read("/sys/devices/system/cpu/nohz_full", buf, sizeof(buf)) != 0)
        CHECK_VAL(&r, "cpus.nohz_full", "unsupported");
    else
        CHECK_VAL(&r, "cpus.nohz_full", strcmp(buf, "(null)") ? buf : "");
    sys_read("/proc/cmdline", buf, sizeof(buf));
    if (!strstr(buf, "rcu_nocbs=") && !strstr(buf, "nohz_full="))
        CHECK_VAL(&r, "cpus.rcu_nocbs", "");
    /* One busy core and nothing isolated: isolcpus cannot be fit. */
    if (iso_empty)
        CHECK_VAL(&r, "verdict.isolcpus", "NOT fit");
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK_VAL(&r, "verdict.cpus", online >= 2 ? "fit" : "NOT fit");

    /* cpufreq and cpuidle where the kernel shows them. */
    CHECK_VAL(&r, "governor.visible",
              access("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", R_OK) == 0 ? "1"
                                                                                         : "0");
    if (sys_read("/sys/devices/system/cpu/cpuidle/current_driver", buf, sizeof(buf)) != 0 ||
        !buf[0])
        snprintf(buf, sizeof(buf), "none");
    CHECK_VAL(&r, "idle.driver", buf);
    int has_states = access("/sys/devices/system/cpu/cpu0/cpuidle/state0/name", R_OK) == 0;
    if (!has_states)
        CHECK_VAL(&r, "verdict.cpuidle", "n/a");

    /* Hugepages. */
    if (sys_read("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof(buf)) == 0) {
        bracket(buf, b2, sizeof(b2));
        CHECK_VAL(&r, "thp.enabled", b2);
        CHECK_VAL(&r, "verdict.thp", strcmp(b2, "always") ? get(&r, "verdict.thp") : "warn");
    }
    DIR *dir = opendir("/sys/kernel/mm/hugepages");
    struct dirent *e;
    int sizes = 0;
    while (dir && (e = readdir(dir)) != NULL) {
        long long kb;
        if (sscanf(e->d_name, "hugepages-%lldkB", &kb) != 1)
            continue;
        char path[512], key[64];
        snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/%s/nr_hugepages", e->d_name);
        sys_read(path, buf, sizeof(buf));
        snprintf(key, sizeof(key), "hugepages.%lldkB.total", kb);
        CHECK_VAL(&r, key, buf);
        snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/%s/free_hugepages", e->d_name);
        sys_read(path, buf, sizeof(buf));
        snprintf(key, sizeof(key), "hugepages.%lldkB.free", kb);
        CHECK_VAL(&r, key, buf);
        sizes++;
    }
    if (dir)
        closedir(dir);
    CHECK(sizes > 0 || get(&r, "verdict.hugepages"));

    /* Limits and capabilities of a process like us. */
    unsigned long long caps = cap_eff();
    rlimit_str(RLIMIT_MEMLOCK, buf, sizeof(buf));
    CHECK_VAL(&r, "memlock.rlimit", buf);
    CHECK_VAL(&r, "memlock.cap_ipc_lock", (caps >> 14) & 1 ? "1" : "0");
    CHECK_VAL(&r, "memlock.mlockall_ok",
              (caps >> 14) & 1 || !strcmp(buf, "unlimited") ? "1" : "0");
    rlimit_str(RLIMIT_RTPRIO, buf, sizeof(buf));
    CHECK_VAL(&r, "fifo.rlimit_rtprio", buf);
    CHECK_VAL(&r, "fifo.cap_sys_nice", (caps >> 23) & 1 ? "1" : "0");
    sys_read("/proc/sys/kernel/sched_rt_runtime_us", buf, sizeof(buf));
    CHECK_VAL(&r, "fifo.rt_runtime_us", buf);

    sys_read("/proc/sys/net/core/busy_poll", buf, sizeof(buf));
    CHECK_VAL(&r, "sysctl.busy_poll", buf);
    sys_read("/proc/sys/net/core/busy_read", buf, sizeof(buf));
    CHECK_VAL(&r, "sysctl.busy_read", buf);
}

/* --cores 0: the per-core items are not judged. */
static void test_cores0(void)
{
    static run r;
    doctor(&r, "--values --cores 0", 0);
    check_verdicts(&r, "--cores 0");
    CHECK_VAL(&r, "verdict.cpus", "n/a");
    CHECK_VAL(&r, "verdict.isolcpus", "n/a");
    CHECK_VAL(&r, "verdict.nohz_full", "n/a");
    CHECK_VAL(&r, "verdict.rcu_nocbs", "n/a");
    /* More cores than CPUs: not fit. */
    doctor(&r, "--values --cores 200", 0);
    CHECK_VAL(&r, "verdict.cpus", "NOT fit");
    CHECK(r.status == 1);
}

/* The features ethtool -k shows as on for the groups the stack needs off. */
static int ethtool_on(const char *ifname, char *out, size_t cap)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "ethtool -k %s 2>/dev/null", ifname);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[256];
    int n = 0, lines = 0;
    out[0] = 0;
    while (fgets(line, sizeof(line), p)) {
        lines++;
        char name[128], state[16];
        if (sscanf(line, " %127[^:]: %15s", name, state) != 2 || strcmp(state, "on"))
            continue;
        /* ethtool's names for the kernel's feature strings. */
        static const char *const map[][2] = {
            {"tx-checksum-ipv4", "tx-checksum-ipv4"},
            {"tx-checksum-ip-generic", "tx-checksum-ip-generic"},
            {"tx-checksum-ipv6", "tx-checksum-ipv6"},
            {"tx-checksum-fcoe-crc", "tx-checksum-fcoe-crc"},
            {"tx-checksum-sctp", "tx-checksum-sctp"},
            {"rx-checksumming", "rx-checksum"},
            {"tx-tcp-segmentation", "tx-tcp-segmentation"},
            {"tx-tcp6-segmentation", "tx-tcp6-segmentation"},
            {"generic-segmentation-offload", "tx-generic-segmentation"},
            {"generic-receive-offload", "rx-gro"},
            {"large-receive-offload", "rx-lro"},
        };
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
            if (!strcmp(name, map[i][0])) {
                size_t l = strlen(out);
                snprintf(out + l, cap - l, "%s%s", l ? " " : "", map[i][1]);
                n++;
            }
    }
    pclose(p);
    return lines ? n : -1;
}

static int word_in(const char *list, const char *w)
{
    size_t wl = strlen(w);
    for (const char *p = list; (p = strstr(p, w)) != NULL; p += wl)
        if ((p == list || p[-1] == ' ') && (p[wl] == ' ' || p[wl] == 0))
            return 1;
    return 0;
}

/* Two space-separated word lists hold the same words. */
static int same_words(const char *a, const char *b)
{
    char w[128];
    for (const char *p = a; sscanf(p, "%127s", w) == 1; p = strstr(p, w) + strlen(w))
        if (!word_in(b, w))
            return 0;
    for (const char *p = b; sscanf(p, "%127s", w) == 1; p = strstr(p, w) + strlen(w))
        if (!word_in(a, w))
            return 0;
    return 1;
}

static void check_iface(const char *ifname)
{
    static run r;
    char args[128], path[256], buf[4096];
    snprintf(args, sizeof(args), "--values --iface %s", ifname);
    doctor(&r, args, 0);
    check_verdicts(&r, args);
    CHECK_VAL(&r, "iface.exists", "1");
    snprintf(path, sizeof(path), "/sys/class/net/%s/operstate", ifname);
    sys_read(path, buf, sizeof(buf));
    CHECK_VAL(&r, "iface.operstate", buf);
    int rxq = 0, txq = 0;
    snprintf(path, sizeof(path), "/sys/class/net/%s/queues", ifname);
    DIR *dir = opendir(path);
    struct dirent *e;
    while (dir && (e = readdir(dir)) != NULL) {
        rxq += !strncmp(e->d_name, "rx-", 3);
        txq += !strncmp(e->d_name, "tx-", 3);
    }
    if (dir)
        closedir(dir);
    snprintf(buf, sizeof(buf), "%d", rxq);
    CHECK_VAL(&r, "iface.rx_queues", buf);
    snprintf(buf, sizeof(buf), "%d", txq);
    CHECK_VAL(&r, "iface.tx_queues", buf);
    /* The driver of a device-backed interface is its sysfs driver link. */
    snprintf(path, sizeof(path), "/sys/class/net/%s/device/driver", ifname);
    char link[512];
    ssize_t ln = readlink(path, link, sizeof(link) - 1);
    if (ln > 0) {
        link[ln] = 0;
        CHECK_VAL(&r, "iface.driver", strrchr(link, '/') + 1);
    }
    char on[1024];
    if (ethtool_on(ifname, on, sizeof(on)) >= 0) {
        const char *got = get(&r, "iface.offloads_on");
        CHECKF(got && same_words(got, on), "%s offloads: doctor '%s', ethtool -k '%s'", ifname,
               got ? got : "(missing)", on);
        CHECK_VAL(&r, "verdict.offloads", on[0] ? "NOT fit" : "fit");
    } else {
        printf("ethtool not found: offloads not compared\n");
    }
    /* Each IRQ the doctor names goes where /proc/irq says. */
    int irqs = 0;
    for (int i = 0; i < r.n; i++) {
        int irq;
        if (sscanf(r.key[i], "iface.irq.%d", &irq) != 1)
            continue;
        irqs++;
        snprintf(path, sizeof(path), "/proc/irq/%d/effective_affinity_list", irq);
        if (sys_read(path, buf, sizeof(buf)) != 0 || !buf[0]) {
            snprintf(path, sizeof(path), "/proc/irq/%d/smp_affinity_list", irq);
            sys_read(path, buf, sizeof(buf));
        }
        CHECKF(!strcmp(r.val[i], buf), "IRQ %d: doctor %s, /proc/irq %s", irq, r.val[i], buf);
    }
    snprintf(buf, sizeof(buf), "%d", irqs);
    CHECK_VAL(&r, "iface.irqs", buf);
    if (irqs == 0)
        CHECK_VAL(&r, "verdict.irq_affinity", "n/a");
}

static void test_ifaces(void)
{
    check_iface("lo");
    /* And the first interface backed by a device, if there is one. */
    DIR *dir = opendir("/sys/class/net");
    struct dirent *e;
    char name[64] = "";
    while (dir && (e = readdir(dir)) != NULL && !name[0]) {
        char path[512];
        snprintf(path, sizeof(path), "/sys/class/net/%s/device", e->d_name);
        if (e->d_name[0] != '.' && access(path, F_OK) == 0)
            snprintf(name, sizeof(name), "%.63s", e->d_name);
    }
    if (dir)
        closedir(dir);
    if (name[0])
        check_iface(name);
    else
        printf("no device-backed interface here: only lo checked\n");

    static run r;
    doctor(&r, "--values --iface tw-no-such-if0", 0);
    CHECK_VAL(&r, "iface.exists", "0");
    CHECK_VAL(&r, "verdict.interface", "NOT fit");
    CHECK(r.status == 1);
}

/* Read-only: what the doctor reads is the same before and after, and so
 * are the settings it suggests changing. */
static void test_read_only(void)
{
    static const char *const files[] = {
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
        "/proc/sys/kernel/sched_rt_runtime_us",
        "/proc/sys/net/core/busy_poll",
        "/proc/sys/net/core/busy_read",
        "/sys/devices/system/clocksource/clocksource0/current_clocksource",
    };
    char before[6][256], after[6][256];
    for (int i = 0; i < 6; i++)
        sys_read(files[i], before[i], sizeof(before[i]));
    static run r1, r2;
    doctor(&r1, "--values --iface lo", 0);
    doctor(&r2, "--values --iface lo", 0);
    for (int i = 0; i < 6; i++) {
        sys_read(files[i], after[i], sizeof(after[i]));
        CHECKF(!strcmp(before[i], after[i]), "%s changed: '%s' -> '%s'", files[i], before[i],
               after[i]);
    }
    CHECK_VAL(&r2, "iface.offloads_on", get(&r1, "iface.offloads_on"));
}

/* Unprivileged: still runs, says less, never crashes. */
static void test_unprivileged(void)
{
    if (geteuid() != 0) {
        printf("not root: the unprivileged run is the main one\n");
        return;
    }
    static run r;
    doctor(&r, "--iface lo", 1);
    CHECKF(r.status == 0 || r.status == 1, "unprivileged exit %d", r.status);
    CHECK(strstr(r.text, "not root") != NULL);
    CHECK(strstr(r.text, "[n/a] af_xdp: cannot check without CAP_NET_RAW") != NULL);
    doctor(&r, "--values --iface lo", 1);
    CHECK_VAL(&r, "caps.effective", "0000000000000000");
    CHECK_VAL(&r, "memlock.cap_ipc_lock", "0");
    check_verdicts(&r, "unprivileged");
}

static void test_usage(void)
{
    static run r;
    doctor(&r, "--cores x", 0);
    CHECK_EQ(r.status, 2);
    doctor(&r, "--bogus 1", 0);
    CHECK_EQ(r.status, 2);
    doctor(&r, "--help", 0);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.text, "usage: tickwire doctor") != NULL);
    /* The human form names every item with its verdict. */
    doctor(&r, "--iface lo", 0);
    CHECK(strstr(r.text, "] tsc: ") && strstr(r.text, "] isolcpus: ") &&
          strstr(r.text, "] offloads: "));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_doctor PATH-TO-tickwire\n");
        return 2;
    }
    g_bin = argv[1];
    test_host();
    test_cores0();
    test_ifaces();
    test_read_only();
    test_unprivileged();
    test_usage();
    return tw_check_done("doctor");
}
