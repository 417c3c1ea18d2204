/* `tickwire doctor`: is this host fit for busy-polled cores?
 *
 * Inspects the machine (read-only: it reads /proc, /sys and the CPU, opens
 * sockets it closes again, and changes nothing) and prints, per item, what
 * it found, whether that is fit for a busy-polled core, and the exact
 * change to make: the TSC and its calibration error, the clocksource,
 * online / isolated / nohz_full / rcu_nocbs CPUs, the frequency governor
 * and idle states where the kernel shows them, transparent and reserved
 * hugepages (and whether DPDK could use them), RLIMIT_MEMLOCK and whether
 * mlockall would succeed, SCHED_FIFO permission and RT throttling, the
 * busy_poll / busy_read sysctls, and with --iface: the interface's state,
 * driver, queues, offloads, the IRQ affinity of its queues, and whether
 * AF_XDP and DPDK can open it.
 *
 * Unprivileged it says less (what needs a capability to find out is
 * "n/a").  Exit status: 0 when no item is NOT fit for the options given
 * (--cores N busy-polled cores, --iface IF), 1 otherwise, 2 for bad
 * options.  --values prints every raw finding as `key value` lines (what
 * the test compares with /proc and /sys). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <math.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cli_opt.h"
#include "tickwire/clock.h"
#include "tickwire/reactor.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif

int tw__cli_doctor(int argc, char **argv);

typedef enum { V_NA, V_FIT, V_WARN, V_NOT } verdict;
static const char *const vname[] = {"n/a", "fit", "warn", "NOT fit"};

enum { MAX_ITEMS = 40, MAX_VALUES = 400 };

typedef struct item {
    const char *name;
    verdict v;
    char found[640];
    char change[640];
} item;

typedef struct doctor {
    int cores;
    int64_t tsc_error_ns; /* the interval the TSC error is measured over */
    const char *iface;
    item items[MAX_ITEMS];
    int nitems;
    char *keys[MAX_VALUES], *vals[MAX_VALUES];
    int nvals;
    tw_cpuset online, mine, busy; /* busy: the CPUs the busy cores would use */
    unsigned long long capeff;
    int caps_known;
} doctor;

/* ---- Small readers. ---- */

/* A whole small file, trailing whitespace cut; -1 when it cannot be read. */
static int slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        buf[0] = 0;
        return -1;
    }
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = 0;
    while (n && isspace((unsigned char)buf[n - 1]))
        buf[--n] = 0;
    return (int)n;
}

static long long slurp_ll(const char *path, long long dflt)
{
    char b[64];
    if (slurp(path, b, sizeof(b)) <= 0)
        return dflt;
    return strtoll(b, NULL, 10);
}

/* The word in [brackets] of a sysfs choice file ("always [madvise] never"). */
static void bracketed(const char *s, char *out, size_t cap)
{
    const char *a = strchr(s, '['), *b = a ? strchr(a, ']') : NULL;
    if (!a || !b) {
        snprintf(out, cap, "%s", s);
        return;
    }
    snprintf(out, cap, "%.*s", (int)(b - a - 1), a + 1);
}

static void value(doctor *d, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void value(doctor *d, const char *key, const char *fmt, ...)
{
    if (d->nvals >= MAX_VALUES)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    d->keys[d->nvals] = strdup(key);
    d->vals[d->nvals] = strdup(buf);
    d->nvals++;
}

static item *add(doctor *d, const char *name, verdict v)
{
    item *it = &d->items[d->nitems < MAX_ITEMS ? d->nitems++ : MAX_ITEMS - 1];
    memset(it, 0, sizeof(*it));
    it->name = name;
    it->v = v;
    return it;
}

static void say(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *dst, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(dst);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + n, cap - n, fmt, ap);
    va_end(ap);
}

static int have_cap(const doctor *d, int cap)
{
    return d->caps_known && ((d->capeff >> cap) & 1);
}

enum { CAP_NET_ADMIN_ = 12, CAP_NET_RAW_ = 13, CAP_IPC_LOCK_ = 14, CAP_SYS_ADMIN_ = 21,
       CAP_SYS_NICE_ = 23, CAP_BPF_ = 39 };

/* The value of word=... on the kernel command line, or NULL. */
static const char *cmdline_arg(const char *cmdline, const char *word, char *out, size_t cap)
{
    size_t wl = strlen(word);
    for (const char *p = cmdline; (p = strstr(p, word)) != NULL; p += wl) {
        if ((p == cmdline || p[-1] == ' ') && p[wl] == '=') {
            size_t n = strcspn(p + wl + 1, " \n");
            snprintf(out, cap, "%.*s", (int)n, p + wl + 1);
            return out;
        }
        if ((p == cmdline || p[-1] == ' ') && (p[wl] == ' ' || p[wl] == 0)) {
            out[0] = 0;
            return out;
        }
    }
    return NULL;
}

/* ---- The items. ---- */

static void check_tsc(doctor *d)
{
    char cpuinfo[1 << 16];
    int inv = tw_tsc_invariant();
    int have_ci = slurp("/proc/cpuinfo", cpuinfo, sizeof(cpuinfo)) > 0;
    int constant = have_ci && strstr(cpuinfo, " constant_tsc") != NULL;
    int nonstop = have_ci && strstr(cpuinfo, " nonstop_tsc") != NULL;
    value(d, "tsc.invariant", "%d", inv);
    value(d, "tsc.constant_tsc", "%d", constant);
    value(d, "tsc.nonstop_tsc", "%d", nonstop);
    tw_tsc_clock c;
    tw_error err = {0};
    double ppm = NAN;
    int cal = tw_tsc_calibrate(&c, 100000000, &err);
    if (cal == 0)
        ppm = tw_tsc_measure_error(&c, d->tsc_error_ns);
    value(d, "tsc.hz", "%.0f", cal == 0 ? c.hz : 0.0);
    value(d, "tsc.error_ppm", "%.3f", ppm);
    int ok = inv && cal == 0 && fabs(ppm) <= 100.0;
    item *it = add(d, "tsc", ok ? V_FIT : V_NOT);
    if (cal != 0) {
        say(it->found, sizeof(it->found), "cannot calibrate: %s", err.msg);
    } else {
        say(it->found, sizeof(it->found),
            "%s (CPUID 80000007 EDX bit 8 %s; /proc/cpuinfo: constant_tsc %s, nonstop_tsc %s), "
            "%.3f GHz, calibration error %+.2f ppm over %.2f s against CLOCK_MONOTONIC",
            inv ? "invariant" : "NOT invariant", inv ? "set" : "clear", constant ? "yes" : "no",
            nonstop ? "yes" : "no", c.hz / 1e9, ppm, (double)c.err_interval_ns / 1e9);
    }
    if (!inv)
        say(it->change, sizeof(it->change),
            "use a CPU (or a VM type that exposes CPUID 80000007 EDX bit 8) with an invariant "
            "TSC; without it TSC deltas are not time");
    else if (!ok)
        say(it->change, sizeof(it->change),
            "the TSC drifts against CLOCK_MONOTONIC: check that NTP is not slewing hard "
            "(chronyc tracking) and that the hypervisor keeps the TSC stable (tsc=reliable)");
}

static void check_clocksource(doctor *d)
{
    char cur[64], avail[256];
    slurp("/sys/devices/system/clocksource/clocksource0/current_clocksource", cur, sizeof(cur));
    slurp("/sys/devices/system/clocksource/clocksource0/available_clocksource", avail,
          sizeof(avail));
    value(d, "clocksource.current", "%s", cur);
    value(d, "clocksource.available", "%s", avail);
    /* These are read by the vDSO: clock_gettime stays in user space. */
    int vdso = !strcmp(cur, "tsc") || !strcmp(cur, "kvm-clock") ||
               !strcmp(cur, "hyperv_clocksource_tsc_page") || !strcmp(cur, "arch_sys_counter");
    item *it = add(d, "clocksource", !cur[0] ? V_NA : vdso ? V_FIT : V_NOT);
    if (!cur[0]) {
        say(it->found, sizeof(it->found), "not visible (no /sys/devices/system/clocksource)");
        return;
    }
    say(it->found, sizeof(it->found), "%s (available: %s)%s", cur, avail,
        vdso ? ": clock_gettime runs in the vDSO" : ": clock_gettime is a system call");
    if (!vdso)
        say(it->change, sizeof(it->change),
            "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource "
            "(and clocksource=tsc tsc=reliable on the kernel command line)");
}

/* Picks the CPUs the busy cores would take: isolated ones first, else the
 * highest online CPUs we may use, never CPU 0 when another is free. */
static void pick_busy(doctor *d, const tw_cpuset *iso)
{
    memset(&d->busy, 0, sizeof(d->busy));
    int want = d->cores, got = 0;
    for (int i = TW_CPUSET_MAX - 1; i >= 0 && got < want; i--)
        if (tw_cpuset_has(iso, i) && tw_cpuset_has(&d->online, i)) {
            tw_cpuset_add(&d->busy, i);
            got++;
        }
    for (int i = TW_CPUSET_MAX - 1; i >= 1 && got < want; i--)
        if (tw_cpuset_has(&d->online, i) && tw_cpuset_has(&d->mine, i) &&
            !tw_cpuset_has(&d->busy, i)) {
            tw_cpuset_add(&d->busy, i);
            got++;
        }
}

static int covers(const tw_cpuset *set, const tw_cpuset *need)
{
    for (int i = 0; i < TW_CPUSET_MAX; i++)
        if (tw_cpuset_has(need, i) && !tw_cpuset_has(set, i))
            return 0;
    return 1;
}

static void check_cpus(doctor *d)
{
    char buf[4096], list[4096], cmdline[4096], arg[1024];
    tw_cpuset_online(&d->online);
    cpu_set_t m;
    memset(&d->mine, 0, sizeof(d->mine));
    if (sched_getaffinity(0, sizeof(m), &m) == 0)
        for (int i = 0; i < CPU_SETSIZE && i < TW_CPUSET_MAX; i++)
            if (CPU_ISSET(i, &m))
                tw_cpuset_add(&d->mine, i);
    int n_on = tw_cpuset_count(&d->online), n_mine = 0;
    for (int i = 0; i < TW_CPUSET_MAX; i++)
        n_mine += tw_cpuset_has(&d->online, i) && tw_cpuset_has(&d->mine, i);
    value(d, "cpus.online", "%s", tw_cpuset_format(&d->online, buf, sizeof(buf)));
    value(d, "cpus.allowed", "%s", tw_cpuset_format(&d->mine, buf, sizeof(buf)));

    tw_cpuset iso = {{0}}, nohz = {{0}}, nocb = {{0}};
    int have_iso = slurp("/sys/devices/system/cpu/isolated", list, sizeof(list)) >= 0;
    if (have_iso)
        tw_cpuset_parse(list, &iso);
    value(d, "cpus.isolated", "%s", tw_cpuset_format(&iso, buf, sizeof(buf)));
    int have_nohz = slurp("/sys/devices/system/cpu/nohz_full", list, sizeof(list)) >= 0;
    if (have_nohz && strcmp(list, "(null)") != 0)
        tw_cpuset_parse(list, &nohz);
    value(d, "cpus.nohz_full", "%s", have_nohz ? tw_cpuset_format(&nohz, buf, sizeof(buf))
                                               : "unsupported");
    slurp("/proc/cmdline", cmdline, sizeof(cmdline));
    int have_nocb = cmdline_arg(cmdline, "rcu_nocbs", arg, sizeof(arg)) != NULL;
    if (have_nocb)
        tw_cpuset_parse(arg, &nocb);
    /* nohz_full= implies rcu_nocbs= for the same CPUs (kernel >= 4.x). */
    for (int i = 0; i < TW_CPUSET_MAX; i++)
        if (tw_cpuset_has(&nohz, i))
            tw_cpuset_add(&nocb, i);
    value(d, "cpus.rcu_nocbs", "%s", tw_cpuset_format(&nocb, buf, sizeof(buf)));
    pick_busy(d, &iso);
    value(d, "cpus.busy", "%s", tw_cpuset_format(&d->busy, buf, sizeof(buf)));
    char busy[256];
    tw_cpuset_format(&d->busy, busy, sizeof(busy));

    int need = d->cores + (d->cores > 0); /* the busy cores and one for everything else */
    item *it = add(d, "cpus", d->cores == 0 ? V_NA : n_mine >= need ? V_FIT : V_NOT);
    say(it->found, sizeof(it->found), "%d online (%s), %d of them ours (affinity %s)", n_on,
        tw_cpuset_format(&d->online, buf, sizeof(buf)), n_mine,
        tw_cpuset_format(&d->mine, list, sizeof(list)));
    if (d->cores > 0) {
        say(it->found, sizeof(it->found), "; %d busy core%s want%s %d CPUs (%d for the rest)",
            d->cores, d->cores > 1 ? "s" : "", d->cores > 1 ? "" : "s", need, 1);
        if (n_mine < need)
            say(it->change, sizeof(it->change),
                "run on a machine (or VM) with at least %d CPUs, or fewer busy cores (below "
                "that the reactor's AUTO mode yields instead of spinning)",
                need);
    }

    int busy_iso = d->cores > 0 && tw_cpuset_count(&d->busy) == d->cores && covers(&iso, &d->busy);
    it = add(d, "isolcpus", d->cores == 0 ? V_NA : busy_iso ? V_FIT : V_NOT);
    say(it->found, sizeof(it->found), "isolated: %s",
        tw_cpuset_count(&iso) ? tw_cpuset_format(&iso, buf, sizeof(buf)) : "none");
    if (!have_iso)
        say(it->found, sizeof(it->found), " (no /sys/devices/system/cpu/isolated)");
    if (d->cores > 0 && !busy_iso && busy[0])
        say(it->change, sizeof(it->change),
            "add isolcpus=managed_irq,domain,%s to GRUB_CMDLINE_LINUX in /etc/default/grub, "
            "update-grub, reboot (the scheduler then keeps other tasks off CPU %s)",
            busy, busy);

    int busy_nohz = d->cores > 0 && busy[0] && covers(&nohz, &d->busy);
    it = add(d, "nohz_full", d->cores == 0 ? V_NA : busy_nohz ? V_FIT : V_NOT);
    if (!have_nohz)
        say(it->found, sizeof(it->found),
            "not supported by this kernel (no /sys/devices/system/cpu/nohz_full: built without "
            "CONFIG_NO_HZ_FULL)");
    else
        say(it->found, sizeof(it->found), "nohz_full: %s",
            tw_cpuset_count(&nohz) ? tw_cpuset_format(&nohz, buf, sizeof(buf)) : "none");
    if (d->cores > 0 && !busy_nohz && busy[0])
        say(it->change, sizeof(it->change),
            "%sadd nohz_full=%s to GRUB_CMDLINE_LINUX (the scheduler tick then stops on a CPU "
            "running one task), update-grub, reboot",
            have_nohz ? "" : "use a kernel built with CONFIG_NO_HZ_FULL=y, then ", busy);

    int busy_nocb = d->cores > 0 && busy[0] && covers(&nocb, &d->busy);
    it = add(d, "rcu_nocbs", d->cores == 0 ? V_NA : busy_nocb ? V_FIT : V_NOT);
    say(it->found, sizeof(it->found), "RCU callbacks offloaded from: %s (/proc/cmdline%s)",
        tw_cpuset_count(&nocb) ? tw_cpuset_format(&nocb, buf, sizeof(buf)) : "none",
        have_nocb ? " rcu_nocbs=" : ", and nohz_full");
    if (d->cores > 0 && !busy_nocb && busy[0])
        say(it->change, sizeof(it->change),
            "add rcu_nocbs=%s to GRUB_CMDLINE_LINUX, update-grub, reboot", busy);
}

static void check_governor(doctor *d)
{
    char path[128], gov[64], all[512] = "";
    int seen = 0, bad = 0;
    for (int i = 0; i < TW_CPUSET_MAX; i++) {
        if (!tw_cpuset_has(&d->online, i))
            continue;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", i);
        if (slurp(path, gov, sizeof(gov)) < 0)
            continue;
        seen++;
        char key[64];
        snprintf(key, sizeof(key), "governor.cpu%d", i);
        value(d, key, "%s", gov);
        say(all, sizeof(all), "%scpu%d %s", seen > 1 ? ", " : "", i, gov);
        if ((d->cores == 0 || tw_cpuset_has(&d->busy, i)) && strcmp(gov, "performance") != 0)
            bad++;
    }
    value(d, "governor.visible", "%d", seen > 0);
    item *it = add(d, "governor", !seen ? V_NA : bad ? V_NOT : V_FIT);
    if (!seen) {
        say(it->found, sizeof(it->found),
            "not visible (no cpufreq in /sys/devices/system/cpu/cpu*/cpufreq: the hypervisor or "
            "the firmware sets the frequency; check the BIOS for a performance profile)");
        return;
    }
    say(it->found, sizeof(it->found), "%s", all);
    if (bad)
        say(it->change, sizeof(it->change),
            "cpupower frequency-set -g performance (or echo performance > "
            "/sys/devices/system/cpu/cpuN/cpufreq/scaling_governor for each busy CPU)");
}

static void check_idle(doctor *d)
{
    char drv[64], path[160], name[64], all[640] = "";
    slurp("/sys/devices/system/cpu/cpuidle/current_driver", drv, sizeof(drv));
    value(d, "idle.driver", "%s", drv[0] ? drv : "none");
    int states = 0, deep = 0;
    for (int i = 0; i < TW_CPUSET_MAX && !states; i++) {
        if (!tw_cpuset_has(&d->online, i))
            continue;
        for (int s = 0; s < 16; s++) {
            snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpuidle/state%d/name", i, s);
            if (slurp(path, name, sizeof(name)) < 0)
                break;
            snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpuidle/state%d/latency",
                     i, s);
            long long lat = slurp_ll(path, -1);
            snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpuidle/state%d/disable",
                     i, s);
            long long dis = slurp_ll(path, 0);
            states++;
            if (lat > 10 && !dis)
                deep++;
            say(all, sizeof(all), "%s%s %lld us%s", states > 1 ? ", " : "", name, lat,
                dis ? " (disabled)" : "");
        }
        if (states)
            value(d, "idle.cpu", "%d", i);
    }
    value(d, "idle.states", "%d", states);
    item *it = add(d, "cpuidle", !states ? V_NA : deep ? V_WARN : V_FIT);
    if (!states) {
        say(it->found, sizeof(it->found),
            "none visible (cpuidle driver %s): an idle CPU halts as the kernel or hypervisor "
            "decides; a busy-polled core never idles",
            drv[0] ? drv : "none");
        return;
    }
    say(it->found, sizeof(it->found), "driver %s: %s", drv, all);
    if (deep)
        say(it->change, sizeof(it->change),
            "states deeper than 10 us slow the wake-up of yielding loops and of the other "
            "cores: cpupower idle-set -D 10 (or processor.max_cstate=1 on the kernel command "
            "line); a busy core never enters them");
}

static void check_thp(doctor *d)
{
    char raw[128], en[32], df[32];
    int have = slurp("/sys/kernel/mm/transparent_hugepage/enabled", raw, sizeof(raw)) > 0;
    bracketed(raw, en, sizeof(en));
    slurp("/sys/kernel/mm/transparent_hugepage/defrag", raw, sizeof(raw));
    bracketed(raw, df, sizeof(df));
    value(d, "thp.enabled", "%s", have ? en : "unsupported");
    value(d, "thp.defrag", "%s", have ? df : "unsupported");
    int bad = have && (!strcmp(en, "always") || !strcmp(df, "always"));
    item *it = add(d, "thp", !have ? V_NA : bad ? V_WARN : V_FIT);
    if (!have) {
        say(it->found, sizeof(it->found), "not supported by this kernel");
        return;
    }
    say(it->found, sizeof(it->found), "enabled [%s], defrag [%s]", en, df);
    if (bad)
        say(it->change, sizeof(it->change),
            "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled; echo madvise > "
            "/sys/kernel/mm/transparent_hugepage/defrag (khugepaged compaction stalls a busy "
            "core at random; transparent_hugepage=madvise on the kernel command line keeps it)");
}

static void check_hugepages(doctor *d)
{
    char path[512], all[512] = "", mounts[8192];
    slurp("/proc/mounts", mounts, sizeof(mounts));
    long long def_kb = 0;
    {
        char mi[8192];
        slurp("/proc/meminfo", mi, sizeof(mi));
        const char *p = strstr(mi, "Hugepagesize:");
        if (p)
            def_kb = strtoll(p + 13, NULL, 10);
    }
    /* Mount points of hugetlbfs and their page size (pagesize= or the default). */
    char mnt_for[2][256] = {"", ""};
    long long mnt_kb[2] = {0, 0};
    int nm = 0;
    for (char *line = mounts; line && *line && nm < 2;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        char dev[64], dir[256], type[64], opts[512];
        if (sscanf(line, "%63s %255s %63s %511s", dev, dir, type, opts) == 4 &&
            !strcmp(type, "hugetlbfs")) {
            long long kb = def_kb;
            const char *ps = strstr(opts, "pagesize=");
            if (ps) {
                kb = strtoll(ps + 9, NULL, 10);
                const char *u = ps + 9 + strspn(ps + 9, "0123456789");
                if (*u == 'M')
                    kb *= 1024;
                else if (*u == 'G')
                    kb *= 1024 * 1024;
            }
            snprintf(mnt_for[nm], sizeof(mnt_for[nm]), "%s", dir);
            mnt_kb[nm++] = kb;
        }
        line = next;
    }
    int usable = 0, any = 0;
    DIR *dir = opendir("/sys/kernel/mm/hugepages");
    struct dirent *e;
    while (dir && (e = readdir(dir)) != NULL) {
        long long kb;
        if (sscanf(e->d_name, "hugepages-%lldkB", &kb) != 1)
            continue;
        snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/%s/nr_hugepages", e->d_name);
        long long total = slurp_ll(path, 0);
        snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/%s/free_hugepages", e->d_name);
        long long free_n = slurp_ll(path, 0);
        const char *mp = NULL;
        for (int i = 0; i < nm; i++)
            if (mnt_kb[i] == kb)
                mp = mnt_for[i];
        int writable = mp && access(mp, W_OK) == 0;
        char key[64];
        snprintf(key, sizeof(key), "hugepages.%lldkB.total", kb);
        value(d, key, "%lld", total);
        snprintf(key, sizeof(key), "hugepages.%lldkB.free", kb);
        value(d, key, "%lld", free_n);
        snprintf(key, sizeof(key), "hugepages.%lldkB.mount", kb);
        value(d, key, "%s", mp ? mp : "");
        say(all, sizeof(all), "%s%lld kB: %lld reserved, %lld free, %s", any ? "; " : "", kb,
            total, free_n, mp ? mp : "no hugetlbfs mount");
        any = 1;
        if (free_n > 0 && writable)
            usable = 1;
    }
    if (dir)
        closedir(dir);
    value(d, "hugepages.dpdk_usable", "%d", usable);
    item *it = add(d, "hugepages", !any ? V_NA : usable ? V_FIT : V_WARN);
    if (!any) {
        say(it->found, sizeof(it->found), "not supported by this kernel (no /sys/kernel/mm/hugepages)");
        return;
    }
    say(it->found, sizeof(it->found), "%s; DPDK %s", all,
        usable ? "can use them" : "cannot use any (it needs free pages on a hugetlbfs mount "
                                  "it may write; without, only --no-huge, as the tests run it)");
    if (!usable)
        say(it->change, sizeof(it->change),
            "echo 512 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages; mkdir -p "
            "/dev/hugepages; mount -t hugetlbfs nodev /dev/hugepages (or dpdk-hugepages.py "
            "--setup 1G; hugepages=512 on the kernel command line reserves them at boot)");
}

static void rlimit_text(int res, char *out, size_t cap, unsigned long long *cur)
{
    struct rlimit rl;
    if (getrlimit(res, &rl) != 0) {
        snprintf(out, cap, "unknown");
        *cur = 0;
    } else if (rl.rlim_cur == RLIM_INFINITY) {
        snprintf(out, cap, "unlimited");
        *cur = ~0ull;
    } else {
        snprintf(out, cap, "%llu", (unsigned long long)rl.rlim_cur);
        *cur = rl.rlim_cur;
    }
}

static void check_memlock(doctor *d)
{
    char lim[32], st[8192];
    unsigned long long cur;
    rlimit_text(RLIMIT_MEMLOCK, lim, sizeof(lim), &cur);
    long long vm_kb = 0;
    if (slurp("/proc/self/status", st, sizeof(st)) > 0) {
        const char *p = strstr(st, "\nVmSize:");
        if (p)
            vm_kb = strtoll(p + 8, NULL, 10);
    }
    int cap = have_cap(d, CAP_IPC_LOCK_);
    value(d, "memlock.rlimit", "%s", lim);
    value(d, "memlock.cap_ipc_lock", "%d", cap);
    /* mlockall(MCL_CURRENT | MCL_FUTURE) succeeds with CAP_IPC_LOCK or an
     * unlimited RLIMIT_MEMLOCK; with a finite one it succeeds only while
     * everything mapped fits, and later mappings beyond it fail. */
    int ok = cap || cur == ~0ull;
    int now = ok || (cur > 0 && (unsigned long long)vm_kb * 1024 <= cur);
    value(d, "memlock.mlockall_ok", "%d", ok);
    item *it = add(d, "mlockall", ok ? V_FIT : V_WARN);
    say(it->found, sizeof(it->found),
        "RLIMIT_MEMLOCK %s%s, %s CAP_IPC_LOCK; this process maps %lld kB: mlockall(MCL_CURRENT "
        "| MCL_FUTURE) would %s",
        lim, cur != ~0ull && cur != 0 ? " bytes" : "", cap ? "with" : "without", vm_kb,
        ok ? "succeed" : now ? "succeed now, and later allocations beyond the limit fail"
                             : "fail");
    if (!ok)
        say(it->change, sizeof(it->change),
            "ulimit -l unlimited in the shell that starts tickwire (or `* - memlock unlimited` "
            "in /etc/security/limits.conf, LimitMEMLOCK=infinity in a systemd unit), or grant "
            "CAP_IPC_LOCK");
}

static void check_fifo(doctor *d)
{
    char lim[32];
    unsigned long long cur;
    rlimit_text(RLIMIT_RTPRIO, lim, sizeof(lim), &cur);
    int cap = have_cap(d, CAP_SYS_NICE_);
    long long rt = slurp_ll("/proc/sys/kernel/sched_rt_runtime_us", -2);
    long long period = slurp_ll("/proc/sys/kernel/sched_rt_period_us", -2);
    value(d, "fifo.rlimit_rtprio", "%s", lim);
    value(d, "fifo.cap_sys_nice", "%d", cap);
    value(d, "fifo.rt_runtime_us", "%lld", rt);
    value(d, "fifo.rt_period_us", "%lld", period);
    int allowed = cap || cur >= 1;
    int throttled = rt >= 0 && period > 0 && rt < period;
    value(d, "fifo.allowed", "%d", allowed);
    item *it = add(d, "sched_fifo", allowed && !throttled ? V_FIT : V_WARN);
    say(it->found, sizeof(it->found), "%s (%s CAP_SYS_NICE, RLIMIT_RTPRIO %s)",
        allowed ? "permitted" : "not permitted", cap ? "with" : "without", lim);
    if (rt == -1)
        say(it->found, sizeof(it->found), "; RT throttling off (sched_rt_runtime_us -1)");
    else if (throttled)
        say(it->found, sizeof(it->found),
            "; RT throttling on: a SCHED_FIFO loop is stopped for %lld us of every %lld us",
            period - rt, period);
    if (!allowed)
        say(it->change, sizeof(it->change),
            "ulimit -r 99 (or `* - rtprio 99` in /etc/security/limits.conf, "
            "LimitRTPRIO=99 in a systemd unit), or grant CAP_SYS_NICE%s",
            throttled ? "; and " : "");
    if (throttled)
        say(it->change, sizeof(it->change),
            "sysctl -w kernel.sched_rt_runtime_us=-1 (only with isolated CPUs: a FIFO busy loop "
            "then never yields its CPU)");
}

static void check_busy_poll(doctor *d)
{
    long long bp = slurp_ll("/proc/sys/net/core/busy_poll", -1);
    long long br = slurp_ll("/proc/sys/net/core/busy_read", -1);
    value(d, "sysctl.busy_poll", "%lld", bp);
    value(d, "sysctl.busy_read", "%lld", br);
    item *it = add(d, "busy_poll", bp < 0 ? V_NA : bp > 0 && br > 0 ? V_FIT : V_WARN);
    if (bp < 0) {
        say(it->found, sizeof(it->found), "not visible (no /proc/sys/net/core/busy_poll)");
        return;
    }
    say(it->found, sizeof(it->found),
        "net.core.busy_poll %lld us, net.core.busy_read %lld us (kernel sockets only: the "
        "userspace stack polls its port itself)",
        bp, br);
    if (!(bp > 0 && br > 0))
        say(it->change, sizeof(it->change),
            "for sessions over kernel TCP: sysctl -w net.core.busy_poll=50 "
            "net.core.busy_read=50 (per socket: SO_BUSY_POLL)");
}

/* ---- The interface. ---- */

static int ethtool_ioctl(const char *ifname, void *cmd)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
    ifr.ifr_data = cmd;
    int rc = ioctl(fd, SIOCETHTOOL, &ifr) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

/* The offloads the stack needs off (what the veth tests turn off:
 * ethtool -K IF tx off rx off tso off gso off gro off).  Fills on[] with
 * the names of those that are on; returns their count, or -errno. */
static int offloads_on(const char *ifname, char *on, size_t cap)
{
    /* struct ethtool_sset_info ends in data[]: one length follows it. */
    uint64_t ssbuf[(sizeof(struct ethtool_sset_info) + sizeof(uint32_t) + 7) / 8] = {0};
    struct ethtool_sset_info *ss = (struct ethtool_sset_info *)ssbuf;
    ss->cmd = ETHTOOL_GSSET_INFO;
    ss->sset_mask = 1ull << ETH_SS_FEATURES;
    int rc = ethtool_ioctl(ifname, ss);
    if (rc)
        return rc;
    uint32_t n = ss->sset_mask ? ss->data[0] : 0;
    if (n == 0 || n > 4096)
        return -EOPNOTSUPP;
    struct ethtool_gstrings *gs = calloc(1, sizeof(*gs) + (size_t)n * ETH_GSTRING_LEN);
    uint32_t blocks = (n + 31) / 32;
    struct ethtool_gfeatures *gf =
        calloc(1, sizeof(*gf) + blocks * sizeof(struct ethtool_get_features_block));
    if (!gs || !gf) {
        free(gs);
        free(gf);
        return -ENOMEM;
    }
    gs->cmd = ETHTOOL_GSTRINGS;
    gs->string_set = ETH_SS_FEATURES;
    gs->len = n;
    gf->cmd = ETHTOOL_GFEATURES;
    gf->size = blocks;
    rc = ethtool_ioctl(ifname, gs);
    if (rc == 0)
        rc = ethtool_ioctl(ifname, gf);
    int count = 0;
    on[0] = 0;
    static const char *const wanted_off[] = {"tx-checksum-", "rx-checksum", "tx-tcp-segmentation",
                                             "tx-tcp6-segmentation", "tx-generic-segmentation",
                                             "rx-gro", "rx-lro"};
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        const char *name = (const char *)gs->data + (size_t)i * ETH_GSTRING_LEN;
        int active = (gf->features[i / 32].active >> (i % 32)) & 1;
        if (!active)
            continue;
        for (size_t w = 0; w < TW_ARRAY_SIZE(wanted_off); w++) {
            size_t wl = strlen(wanted_off[w]);
            int prefix = wanted_off[w][wl - 1] == '-';
            if (prefix ? !strncmp(name, wanted_off[w], wl) : !strcmp(name, wanted_off[w])) {
                size_t l = strlen(on);
                snprintf(on + l, cap - l, "%s%.*s", l ? " " : "", ETH_GSTRING_LEN, name);
                count++;
                break;
            }
        }
    }
    free(gs);
    free(gf);
    return rc ? rc : count;
}

/* The IRQs of the interface's device: its msi_irqs directory (the PCI
 * device itself, or the PCI parent of a virtio device). */
static int device_irqs(const char *ifname, int *irqs, int max)
{
    char path[256];
    int n = 0;
    for (int up = 0; up < 2 && n == 0; up++) {
        snprintf(path, sizeof(path), "/sys/class/net/%s/device/%smsi_irqs", ifname,
                 up ? "../" : "");
        DIR *dir = opendir(path);
        struct dirent *e;
        while (dir && (e = readdir(dir)) != NULL && n < max)
            if (isdigit((unsigned char)e->d_name[0]))
                irqs[n++] = atoi(e->d_name);
        if (dir)
            closedir(dir);
    }
    /* Sorted, for stable output. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && irqs[j - 1] > irqs[j]; j--) {
            int t = irqs[j];
            irqs[j] = irqs[j - 1];
            irqs[j - 1] = t;
        }
    return n;
}

static void check_iface(doctor *d)
{
    const char *ifn = d->iface;
    char path[256], drvname[64] = "", bus[64] = "";
    snprintf(path, sizeof(path), "/sys/class/net/%s", ifn);
    struct stat stt;
    int exists = strlen(ifn) < IFNAMSIZ && stat(path, &stt) == 0;
    value(d, "iface.exists", "%d", exists);
    item *it = add(d, "interface", exists ? V_FIT : V_NOT);
    if (!exists) {
        say(it->found, sizeof(it->found), "%s: no such interface (no %s)", ifn, path);
        say(it->change, sizeof(it->change), "name an interface of `ip -br link`");
        return;
    }
    char oper[32];
    snprintf(path, sizeof(path), "/sys/class/net/%s/operstate", ifn);
    slurp(path, oper, sizeof(oper));
    struct ethtool_drvinfo di = {.cmd = ETHTOOL_GDRVINFO};
    if (ethtool_ioctl(ifn, &di) == 0) {
        snprintf(drvname, sizeof(drvname), "%s", di.driver);
        snprintf(bus, sizeof(bus), "%s", di.bus_info);
    }
    int rxq = 0, txq = 0;
    snprintf(path, sizeof(path), "/sys/class/net/%s/queues", ifn);
    DIR *dir = opendir(path);
    struct dirent *e;
    while (dir && (e = readdir(dir)) != NULL) {
        rxq += !strncmp(e->d_name, "rx-", 3);
        txq += !strncmp(e->d_name, "tx-", 3);
    }
    if (dir)
        closedir(dir);
    value(d, "iface.operstate", "%s", oper);
    value(d, "iface.driver", "%s", drvname);
    value(d, "iface.bus", "%s", bus);
    value(d, "iface.rx_queues", "%d", rxq);
    value(d, "iface.tx_queues", "%d", txq);
    int up = !strcmp(oper, "up") || !strcmp(oper, "unknown");
    it->v = up ? V_FIT : V_NOT;
    say(it->found, sizeof(it->found), "%s: state %s, driver %s%s%s, %d rx / %d tx queues", ifn,
        oper, drvname[0] ? drvname : "?", bus[0] ? " at " : "", bus, rxq, txq);
    if (!up)
        say(it->change, sizeof(it->change), "ip link set %s up", ifn);

    char on[1024];
    int off = offloads_on(ifn, on, sizeof(on));
    value(d, "iface.offloads_on", "%s", off >= 0 ? on : "unknown");
    it = add(d, "offloads", off < 0 ? V_NA : off == 0 ? V_FIT : V_NOT);
    if (off < 0)
        say(it->found, sizeof(it->found), "cannot read (ETHTOOL_GFEATURES: %s)", strerror(-off));
    else if (off == 0)
        say(it->found, sizeof(it->found),
            "checksum, segmentation and receive-coalescing offloads are off");
    else
        say(it->found, sizeof(it->found),
            "on: %s (the stack computes checksums and sees every segment itself: with these on "
            "it gets partial checksums and coalesced frames)",
            on);
    if (off > 0)
        say(it->change, sizeof(it->change), "ethtool -K %s tx off rx off tso off gso off gro off%s",
            ifn, strstr(on, "rx-lro") ? " lro off" : "");

    int irqs[256];
    int nirq = device_irqs(ifn, irqs, 256);
    char list[2048] = "";
    int on_busy = 0;
    char busy[256];
    tw_cpuset_format(&d->busy, busy, sizeof(busy));
    for (int i = 0; i < nirq; i++) {
        char aff[256], eff[256];
        snprintf(path, sizeof(path), "/proc/irq/%d/smp_affinity_list", irqs[i]);
        slurp(path, aff, sizeof(aff));
        snprintf(path, sizeof(path), "/proc/irq/%d/effective_affinity_list", irqs[i]);
        if (slurp(path, eff, sizeof(eff)) <= 0)
            snprintf(eff, sizeof(eff), "%s", aff);
        char key[64];
        snprintf(key, sizeof(key), "iface.irq.%d", irqs[i]);
        value(d, key, "%s", eff);
        tw_cpuset s;
        if (tw_cpuset_parse(eff, &s) == 0)
            for (int c = 0; c < TW_CPUSET_MAX; c++)
                if (tw_cpuset_has(&s, c) && tw_cpuset_has(&d->busy, c)) {
                    on_busy++;
                    break;
                }
        /* The handler's name is a directory under /proc/irq/N. */
        char action[64] = "";
        snprintf(path, sizeof(path), "/proc/irq/%d", irqs[i]);
        DIR *id = opendir(path);
        struct dirent *ie;
        while (id && (ie = readdir(id)) != NULL)
            if (ie->d_type == DT_DIR && ie->d_name[0] != '.')
                snprintf(action, sizeof(action), "%.63s", ie->d_name);
        if (id)
            closedir(id);
        say(list, sizeof(list), "%sIRQ %d%s%s%s -> CPU %s", i ? ", " : "", irqs[i],
            action[0] ? " (" : "", action, action[0] ? ")" : "", eff);
    }
    value(d, "iface.irqs", "%d", nirq);
    it = add(d, "irq_affinity", nirq == 0 ? V_NA : on_busy && d->cores > 0 ? V_NOT : V_FIT);
    if (nirq == 0)
        say(it->found, sizeof(it->found),
            "no device IRQs (%s): nothing to steer",
            drvname[0] && !strcmp(drvname, "veth") ? "a veth pair is software" : "no msi_irqs");
    else
        say(it->found, sizeof(it->found), "%s%s%s", list, d->cores > 0 ? "; busy CPUs: " : "",
            d->cores > 0 ? busy : "");
    if (on_busy && d->cores > 0) {
        tw_cpuset rest = d->online;
        for (int c = 0; c < TW_CPUSET_MAX; c++)
            if (tw_cpuset_has(&d->busy, c))
                rest.bits[c / 64] &= ~(1ull << (c % 64));
        char r[256];
        tw_cpuset_format(&rest, r, sizeof(r));
        say(it->change, sizeof(it->change),
            "for each IRQ above on a busy CPU: echo %s > /proc/irq/N/smp_affinity_list, and keep "
            "irqbalance off those CPUs (IRQBALANCE_BANNED_CPULIST=%s in /etc/default/irqbalance)",
            r[0] ? r : "0", busy);
    }

    /* AF_XDP: the socket (needs CAP_NET_RAW) and a BPF program (CAP_BPF or
     * CAP_SYS_ADMIN).  Opening one would attach a program to the
     * interface, which is a change: this only checks what it needs. */
    int fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
    int xerr = fd < 0 ? errno : 0;
    if (fd >= 0)
        close(fd);
    int bpf = have_cap(d, CAP_BPF_) || have_cap(d, CAP_SYS_ADMIN_);
    value(d, "iface.af_xdp_socket", "%s", xerr ? strerror(xerr) : "ok");
    value(d, "iface.bpf_allowed", "%d", bpf);
    static const char *const native[] = {"veth", "virtio_net", "i40e", "ice", "ixgbe", "igb",
                                         "igc", "mlx5_core", "mlx4_en", "bnxt_en", "ena",
                                         "tun", "nfp", "qede", "sfc", "stmmac", "thunder",
                                         "mvneta", "mvpp2", "enetc", "fec", "ixgbevf",
                                         "gve", "hv_netvsc", "lan966x", "dpaa2-eth"};
    int is_native = 0;
    for (size_t i = 0; i < TW_ARRAY_SIZE(native); i++)
        is_native |= !strcmp(drvname, native[i]);
    verdict xv = xerr == EPERM || xerr == EACCES ? V_NA
                 : xerr                          ? V_NOT
                 : bpf                           ? V_FIT
                                                 : V_NA;
    it = add(d, "af_xdp", xv);
    if (xerr == EAFNOSUPPORT)
        say(it->found, sizeof(it->found), "this kernel has no AF_XDP (CONFIG_XDP_SOCKETS)");
    else if (xerr == EPERM || xerr == EACCES)
        say(it->found, sizeof(it->found),
            "cannot check without CAP_NET_RAW (run as root for this item)");
    else if (xerr)
        say(it->found, sizeof(it->found), "socket(AF_XDP): %s", strerror(xerr));
    else
        say(it->found, sizeof(it->found),
            "AF_XDP sockets open; BPF programs %s; driver %s: %s XDP", bpf ? "allowed" : "need CAP_BPF",
            drvname[0] ? drvname : "?", is_native ? "native (driver mode)" : "generic (skb mode, slower) only, as far as known");
    if (xerr == EAFNOSUPPORT)
        say(it->change, sizeof(it->change), "use a kernel built with CONFIG_XDP_SOCKETS=y (>= 4.18)");
    else if (!xerr && !bpf)
        say(it->change, sizeof(it->change), "run as root or grant CAP_BPF and CAP_NET_ADMIN");

    /* DPDK: a kernel netdev is reachable through the net_af_packet /
     * net_af_xdp virtual devices (what the port uses: CAP_NET_RAW); a PCI
     * NIC's own PMD needs the NIC bound to vfio-pci, which takes it away
     * from the kernel, with an IOMMU (or vfio's no-IOMMU mode). */
    int raw = have_cap(d, CAP_NET_RAW_);
    int iommu = 0;
    dir = opendir("/sys/kernel/iommu_groups");
    while (dir && (e = readdir(dir)) != NULL)
        iommu += isdigit((unsigned char)e->d_name[0]) != 0;
    if (dir)
        closedir(dir);
    int vfio = access("/sys/module/vfio_pci", F_OK) == 0;
    int pci = bus[0] && strchr(bus, ':') && strchr(bus, '.');
    value(d, "iface.dpdk_vdev_ok", "%d", raw);
    value(d, "iface.iommu_groups", "%d", iommu);
    value(d, "iface.vfio_pci_loaded", "%d", vfio);
    it = add(d, "dpdk", raw ? V_FIT : V_NA);
    if (raw)
        say(it->found, sizeof(it->found),
            "can open %s through --vdev=net_af_packet0,iface=%s (or net_af_xdp0,iface=%s)", ifn,
            ifn, ifn);
    else
        say(it->found, sizeof(it->found), "cannot check without CAP_NET_RAW (run as root)");
    if (pci)
        say(it->found, sizeof(it->found),
            "; its own PMD needs the PCI device %s bound to vfio-pci (IOMMU groups: %d, vfio-pci "
            "%sloaded)",
            bus, iommu, vfio ? "" : "not ");
    if (pci)
        say(it->change, sizeof(it->change),
            "for the PMD (the interface leaves the kernel): modprobe vfio-pci; "
            "dpdk-devbind.py --bind=vfio-pci %s%s",
            bus, iommu ? "" : " (no IOMMU: intel_iommu=on / amd_iommu=on, or echo 1 > "
                              "/sys/module/vfio/parameters/enable_unsafe_noiommu_mode)");
}

/* ---- Output. ---- */

static const char usage[] =
    "usage: tickwire doctor [--cores N] [--iface IF] [--values] [--quick]\n"
    "  inspects this host (read-only) and says, per item, what it found, whether it is fit\n"
    "  for N busy-polled cores (default 1; 0: only the host-wide items), and the exact\n"
    "  change to make; with --iface, the interface too.  Exit status 0 when nothing is\n"
    "  NOT fit, 1 otherwise.  --values: the raw findings as `key value` lines.\n"
    "  --quick: measure the TSC's error over 0.1 s instead of 1 s.\n";

int tw__cli_doctor(int argc, char **argv)
{
    static doctor d;
    memset(&d, 0, sizeof(d));
    d.cores = 1;
    d.tsc_error_ns = 1000000000;
    int values = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--values")) {
            values = 1;
            continue;
        }
        if (!strcmp(argv[i], "--quick")) {
            d.tsc_error_ns = 100000000;
            continue;
        }
        const char *opt, *val;
        int r = tw__cli_opt_value("doctor", usage, argc, argv, &i, &opt, &val);
        if (r)
            return r > 0 ? 0 : 2;
        uint64_t v;
        if (!strcmp(opt, "--cores")) {
            if (tw__cli_u64_range("doctor", opt, val, 0, 256, &v))
                return 2;
            d.cores = (int)v;
        } else if (!strcmp(opt, "--iface")) {
            d.iface = val;
        } else {
            fprintf(stderr, "tickwire doctor: unknown option %s (see --help)\n", opt);
            return 2;
        }
    }
    char st[8192];
    if (slurp("/proc/self/status", st, sizeof(st)) > 0) {
        const char *p = strstr(st, "\nCapEff:");
        if (p) {
            d.capeff = strtoull(p + 8, NULL, 16);
            d.caps_known = 1;
        }
    }
    value(&d, "caps.effective", "%016llx", d.capeff);
    value(&d, "cores", "%d", d.cores);
    check_tsc(&d);
    check_clocksource(&d);
    check_cpus(&d);
    check_governor(&d);
    check_idle(&d);
    check_thp(&d);
    check_hugepages(&d);
    check_memlock(&d);
    check_fifo(&d);
    check_busy_poll(&d);
    if (d.iface)
        check_iface(&d);

    int bad = 0;
    for (int i = 0; i < d.nitems; i++)
        bad += d.items[i].v == V_NOT;
    if (values) {
        for (int i = 0; i < d.nvals; i++)
            printf("%s %s\n", d.keys[i], d.vals[i]);
        for (int i = 0; i < d.nitems; i++)
            printf("verdict.%s %s\n", d.items[i].name, vname[d.items[i].v]);
        printf("not_fit %d\n", bad);
    } else {
        printf("tickwire doctor: this host for %d busy-polled core%s%s%s%s\n", d.cores,
               d.cores == 1 ? "" : "s", d.iface ? " and interface " : "", d.iface ? d.iface : "",
               geteuid() == 0 ? "" : " (not root: some items cannot be checked)");
        for (int i = 0; i < d.nitems; i++) {
            const item *it = &d.items[i];
            printf("\n[%s] %s: %s\n", vname[it->v], it->name, it->found);
            if (it->change[0])
                printf("    change: %s\n", it->change);
        }
        printf("\n%d item%s NOT fit%s\n", bad, bad == 1 ? "" : "s",
               bad ? "" : ": fit for the options given");
    }
    for (int i = 0; i < d.nvals; i++) {
        free(d.keys[i]);
        free(d.vals[i]);
    }
    return bad ? 1 : 0;
}
