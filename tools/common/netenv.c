/* Real-peer topology for the interop tests and the netrtt benchmark: see
 * netenv.h. */
#include "common/netenv.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tickwire/clock.h"

#define MAX_ENVS 12

static tw__netenv *live[MAX_ENVS];
static int hooks_installed;
static int env_seq;

int tw__netenv_sh(int quiet, const char *fmt, ...)
{
    char cmd[1100];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, 1000, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= 1000)
        return -E2BIG;
    if (quiet)
    {
        /* Wrap so that the redirection covers the whole command list. */
        char inner[1100];
        snprintf(inner, sizeof(inner), "( %.1000s ) >/dev/null 2>&1", cmd);
        memcpy(cmd, inner, sizeof(cmd));
    }
    int r = system(cmd);
    if (r == -1 || !WIFEXITED(r))
        return -ECHILD;
    return WEXITSTATUS(r);
}

void tw__netenv_teardown(tw__netenv *e)
{
    if (!e || !e->active)
        return;
    e->active = 0;
    /* Deleting one end of a veth pair deletes both; deleting the namespace
     * deletes the end inside it.  Either may already be gone. */
    tw__netenv_sh(1, "ip link del %s", e->host);
    if (e->ns2[0])
        tw__netenv_sh(1, "ip netns del %s", e->ns2);
    if (e->ns[0])
        tw__netenv_sh(1, "ip netns del %s", e->ns);
    else
        tw__netenv_sh(1, "ip link del %s", e->peer);
    for (int i = 0; i < MAX_ENVS; i++)
        if (live[i] == e)
            live[i] = NULL;
}

static void teardown_all(void)
{
    for (int i = 0; i < MAX_ENVS; i++)
        if (live[i])
            tw__netenv_teardown(live[i]);
}

static void on_signal(int sig)
{
    teardown_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Removes tw<pid>... links and twpeer<pid>... namespaces whose process is
 * gone (a run killed by SIGKILL cannot clean up after itself). */
static void remove_stale(void)
{
    tw__netenv_sh(1, "for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^tw(peer|cli)[0-9]*x'); do "
                "p=${n#twpeer}; p=${p#twcli}; p=${p%%%%x*}; [ -d /proc/$p ] || ip netns del $n; done");
    tw__netenv_sh(1, "for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | "
                "sed 's/@.*//' | grep '^tw[0-9]*x[0-9]*[ab]$'); do "
                "p=${l#tw}; p=${p%%%%x*}; [ -d /proc/$p ] || ip link del $l; done");
}

static int read_mac(const char *ns, const char *ifname, uint8_t mac[6])
{
    char path[128], cmd[256], buf[64];
    snprintf(path, sizeof(path), "/sys/class/net/%s/address", ifname);
    FILE *f;
    if (ns[0]) {
        snprintf(cmd, sizeof(cmd), "ip netns exec %s cat %s", ns, path);
        f = popen(cmd, "r");
    } else {
        f = fopen(path, "r");
    }
    if (!f)
        return -ENOENT;
    char *ok = fgets(buf, sizeof(buf), f);
    if (ns[0])
        pclose(f);
    else
        fclose(f);
    unsigned m[6];
    if (!ok || sscanf(buf, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
        return -EINVAL;
    for (int i = 0; i < 6; i++)
        mac[i] = (uint8_t)m[i];
    return 0;
}

int tw__netenv_setup(tw__netenv *e, int with_ns)
{
    return tw__netenv_setup_ip(e, with_ns, TW_NETENV_PEER_IP);
}

int tw__netenv_setup_ip(tw__netenv *e, int with_ns, const char *peer_ip)
{
    memset(e, 0, sizeof(*e));
    if (geteuid() != 0) {
        fprintf(stderr, "SKIP: needs root (network namespaces and veth pairs)\n");
        return TW_NETENV_SKIP;
    }
    if (tw__netenv_sh(1, "command -v ip && command -v ethtool && command -v tc") != 0) {
        fprintf(stderr, "SKIP: needs ip (iproute2), ethtool and tc\n");
        return TW_NETENV_SKIP;
    }
    if (!hooks_installed) {
        hooks_installed = 1;
        atexit(teardown_all);
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        signal(SIGABRT, on_signal);
        signal(SIGSEGV, on_signal);
        signal(SIGBUS, on_signal);
        signal(SIGHUP, on_signal);
        signal(SIGPIPE, SIG_IGN);
        remove_stale();
    }
    int slot = -1;
    for (int i = 0; i < MAX_ENVS; i++)
        if (!live[i]) {
            slot = i;
            break;
        }
    if (slot < 0) {
        fprintf(stderr, "netenv: too many topologies in one process\n");
        return -EBUSY;
    }
    unsigned k = (unsigned)env_seq++ % 100u;
    unsigned pid = (unsigned)getpid() % 10000000u; /* pid_max is at most 2^22 */
    snprintf(e->host, sizeof(e->host), "tw%ux%ua", pid, k);
    snprintf(e->peer, sizeof(e->peer), "tw%ux%ub", pid, k);
    if (with_ns)
        snprintf(e->ns, sizeof(e->ns), "twpeer%ux%u", pid, k);
    if (with_ns == 2)
        snprintf(e->ns2, sizeof(e->ns2), "twcli%ux%u", pid, k);
    live[slot] = e;

    if (with_ns && tw__netenv_sh(1, "ip netns add %s", e->ns) != 0) {
        live[slot] = NULL;
        fprintf(stderr, "SKIP: the kernel refused a network namespace (ip netns add %s)\n", e->ns);
        return TW_NETENV_SKIP;
    }
    e->active = 1;
    if (tw__netenv_sh(1, "ip link add %s type veth peer name %s", e->host, e->peer) != 0) {
        tw__netenv_teardown(e);
        fprintf(stderr, "SKIP: the kernel refused a veth pair (ip link add %s type veth)\n", e->host);
        return TW_NETENV_SKIP;
    }
    int bad = 0;
    /* Our end: up, no address, no IPv6 chatter; checksum and segmentation
     * offloads off or frames arrive with partial checksums. */
    if (e->ns2[0]) {
        /* Both ends kernel: our end goes into a second namespace with
         * TW_NETENV_CLIENT_IP (the kernel-to-kernel baseline). */
        const char *y = e->ns2;
        bad |= tw__netenv_sh(1, "ip netns add %s", y) != 0;
        bad |= tw__netenv_sh(1, "ip link set %s netns %s", e->host, y) != 0;
        bad |= tw__netenv_sh(1, "ip netns exec %s ip link set lo up", y) != 0;
        bad |= tw__netenv_sh(1, "ip netns exec %s ethtool -K %s tx off rx off tso off gso off gro off",
                        y, e->host) != 0;
        bad |= tw__netenv_sh(1, "ip netns exec %s ip addr add %s/24 dev %s", y, TW_NETENV_CLIENT_IP,
                        e->host) != 0;
        bad |= tw__netenv_sh(1, "ip netns exec %s ip link set %s up", y, e->host) != 0;
    } else {
        bad |= tw__netenv_sh(1, "sysctl -qw net.ipv6.conf.%s.disable_ipv6=1", e->host) != 0;
        /* Never route what arrives here (a host with ip_forward=1 would
         * otherwise forward the peer's frames for the stack's address). */
        tw__netenv_sh(1, "sysctl -qw net.ipv4.conf.%s.forwarding=0", e->host);
        bad |= tw__netenv_sh(1, "ethtool -K %s tx off rx off tso off gso off gro off", e->host) != 0;
        bad |= tw__netenv_sh(1, "ip link set %s up", e->host) != 0;
    }
    if (with_ns) {
        const char *x = e->ns;
        bad |= tw__netenv_sh(1, "ip link set %s netns %s", e->peer, x) != 0;
        bad |= tw__netenv_sh(1, "ip netns exec %s ip link set lo up", x) != 0;
        bad |= tw__netenv_sh(1, "ip netns exec %s sysctl -qw net.ipv6.conf.%s.disable_ipv6=1", x,
                        e->peer) != 0;
        bad |= tw__netenv_sh(1, "ip netns exec %s ethtool -K %s tx off rx off tso off gso off gro off",
                        x, e->peer) != 0;
        bad |= tw__netenv_sh(1, "ip netns exec %s ip addr add %s/24 dev %s", x, peer_ip,
                        e->peer) != 0;
        bad |= tw__netenv_sh(1, "ip netns exec %s ip link set %s up", x, e->peer) != 0;
    } else {
        bad |= tw__netenv_sh(1, "sysctl -qw net.ipv6.conf.%s.disable_ipv6=1", e->peer) != 0;
        bad |= tw__netenv_sh(1, "ethtool -K %s tx off rx off tso off gso off gro off", e->peer) != 0;
        bad |= tw__netenv_sh(1, "ip link set %s up", e->peer) != 0;
    }
    bad |= read_mac(e->ns2, e->host, e->host_mac) != 0;
    bad |= read_mac(e->ns, e->peer, e->peer_mac) != 0;
    if (bad) {
        fprintf(stderr, "netenv: configuring %s/%s failed\n", e->host, e->peer);
        tw__netenv_teardown(e);
        return -EIO;
    }
    /* Both links must report carrier before frames flow. */
    for (int i = 0; i < 200 && !e->ns2[0]; i++) {
        char path[96], c = '0';
        snprintf(path, sizeof(path), "/sys/class/net/%s/carrier", e->host);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fread(&c, 1, 1, f) != 1)
                c = '0';
            fclose(f);
        }
        if (c == '1')
            break;
        usleep(10000);
    }
    return 0;
}

pid_t tw__netenv_spawn(const tw__netenv *e, char *const argv[], int out_fd)
{
    char *args[64];
    int n = 0;
    if (e->ns[0]) {
        args[n++] = (char *)"ip";
        args[n++] = (char *)"netns";
        args[n++] = (char *)"exec";
        args[n++] = (char *)e->ns;
    }
    for (int i = 0; argv[i] && n < 63; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        if (out_fd >= 0) {
            dup2(out_fd, 1);
            close(out_fd);
        }
        signal(SIGPIPE, SIG_DFL);
        execvp(args[0], args);
        _exit(127);
    }
    return pid;
}

int tw__netenv_wait(pid_t pid, double timeout_s)
{
    int64_t t0_ns = tw_clock_now_ns();
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (r < 0 && errno != EINTR)
            return -errno;
        if ((double)(tw_clock_now_ns() - t0_ns) * 1e-9 > timeout_s) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return 128 + SIGKILL;
        }
        usleep(2000);
    }
}

int tw__netenv_qdisc(const tw__netenv *e, const char *spec)
{
    const char *pre = e->ns[0] ? "ip netns exec " : "";
    const char *ns = e->ns;
    if (!spec)
        return tw__netenv_sh(1, "%s%s tc qdisc del dev %s root", pre, ns, e->peer) == 0 ? 0 : -EIO;
    return tw__netenv_sh(0, "%s%s tc qdisc replace dev %s root %s", pre, ns, e->peer, spec) == 0 ? 0 : -EIO;
}
