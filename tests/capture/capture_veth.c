/* Capture on a real port, checked against the kernel's own view,
 * over the veth topology of netstack.md ("Real peer"):
 *
 *   [stack + capture] --KIND-- veth  <==>  veth (netns) -- kpeer bulk
 *                                              \-- tcpdump -w
 *
 *   bulk   the stack connects to a kernel peer and both send 4 MB; our
 *          capture (TSC stamps, writer thread) is read by tshark: every
 *          frame parses, follow,tcp,raw gives exactly the bytes each side
 *          sent (SHA-256 against the stream and the kernel's own hash),
 *          directions agree with the addresses, stamps never go backwards
 *          within a direction; and tcpdump on the kernel's side of the
 *          veth saw the same TCP segments (sequence and acknowledgement
 *          numbers, lengths, flags, in order, each direction) at wall-
 *          clock times within a second of ours
 *   cli    `tickwire net echo --pcap FILE` serving 500 kernel round trips:
 *          the file it leaves holds both directions byte-exact
 *
 *   capture_veth KIND KPEER TICKWIRE
 *
 * Needs root, tshark and tcpdump: skips (77) saying which is missing. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/capcheck.h"
#include "common/netdrv.h"
#include "common/netenv.h"
#include "common/portspec.h"
#include "tickwire/clock.h"
#include "tickwire/net.h"
#include "tw_check.h"

#define BULK_PORT 7201
#define BULK_BYTES (4u << 20)
#define SEED_STACK 31
#define SEED_KERNEL 32

static const char *kind, *kpeer, *tickwire;
static char dir_path[256];
static tw__netenv env;

/* Reads one line from fd into buf (bounded, blocking). */
static int read_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap) {
        char c;
        if (read(fd, &c, 1) != 1)
            return -1;
        if (c == '\n')
            break;
        buf[n++] = c;
    }
    buf[n] = 0;
    return (int)n;
}

/* Starts tcpdump on the peer end, in its namespace; returns its pid once
 * it says it is listening (bounded wait on its stderr file). */
static pid_t start_tcpdump(const char *file, const char *errfile)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "exec ip netns exec %s tcpdump -i %s -n -s 0 -U -B 16384 -Z root -w '%s' tcp "
             "2>'%s'", env.ns, env.peer, file, errfile);
    char *argv[] = {(char *)"/bin/sh", (char *)"-c", cmd, NULL};
    tw__netenv here;
    memset(&here, 0, sizeof(here));
    pid_t pid = tw__netenv_spawn(&here, argv, -1);
    if (pid < 0)
        return -1;
    for (int i = 0; i < 1000; i++) {
        int st;
        char *o = cap_sh(&st, "grep -c 'listening on' '%s' 2>/dev/null", errfile);
        int up = o && atoi(o) > 0;
        free(o);
        if (up)
            return pid;
        if (waitpid(pid, NULL, WNOHANG) == pid)
            break;
        tw_clock_sleep_ns(10000000);
    }
    fprintf(stderr, "[%s] tcpdump did not start (see %s)\n", kind, errfile);
    kill(pid, SIGKILL);
    return -1;
}

/* TCP segments of the file sent by src, one line each: seq ack len flags. */
static char *segments(const char *file, const char *src)
{
    int st;
    return cap_sh(&st, "tshark -n -r '%s' -Y 'tcp && ip.src==%s' -T fields -e tcp.seq_raw "
                       "-e tcp.ack_raw -e tcp.len -e tcp.flags 2>/dev/null", file, src);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of s (modified in place) in sorted order, joined again: the
 * same multiset of segments compares equal whatever order each side saw
 * them in. */
static void sort_lines(char *s)
{
    size_t n = count_lines(s), k = 0;
    char **v = malloc((n + 1) * sizeof(*v));
    char *copy = strdup(s);
    REQUIRE(v && copy);
    for (char *p = copy, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
        *nl = 0;
        v[k++] = p;
    }
    qsort(v, k, sizeof(*v), cmp_line);
    char *o = s;
    for (size_t i = 0; i < k; i++)
        o += sprintf(o, "%s\n", v[i]);
    free(v);
    free(copy);
}

/* Compares two segment lists as sets of (seq, ack, len, flags): tcpdump
 * on the kernel's side stamps a segment when a CPU hands it to the
 * device, and with the sender's process and its softirq on two CPUs that
 * order can differ from the order frames cross the veth (which ours sees),
 * by a few segments; what each side carried must be the same.  Names the
 * first difference in sorted order. */
static void same_segments(const char *what, char *ours, char *theirs)
{
    REQUIRE(ours && theirs);
    sort_lines(ours);
    sort_lines(theirs);
    if (!strcmp(ours, theirs)) {
        CHECKF(count_lines(ours) > 100, "%s: %zu segments", what, count_lines(ours));
        return;
    }
    size_t line = 1;
    const char *a = ours, *b = theirs;
    while (*a && *a == *b) {
        line += *a == '\n';
        a++;
        b++;
    }
    CHECKF(0, "%s: our capture and tcpdump differ at segment %zu (ours %zu, tcpdump %zu "
              "segments): ours '%.60s' tcpdump '%.60s'", what, line, count_lines(ours),
           count_lines(theirs), a, b);
}

/* Wall-clock stamps of one segment in both captures: within a second. */
static void times_line_up(const char *ours, const char *theirs)
{
    int st;
    char *a = cap_sh(&st, "tshark -n -r '%s' -Y 'tcp && ip.src==%s && tcp.len > 0' -T fields "
                          "-e frame.time_epoch -e tcp.seq_raw 2>/dev/null | head -1", ours,
                     TW_NETENV_STACK_IP);
    double ta = a ? atof(a) : 0;
    const char *seq = a ? strchr(a, '\t') : NULL;
    char *b = NULL;
    if (seq)
        b = cap_sh(&st, "tshark -n -r '%s' -Y 'tcp.seq_raw == %ld && ip.src==%s' -T fields "
                        "-e frame.time_epoch 2>/dev/null | head -1", theirs, atol(seq + 1),
                   TW_NETENV_STACK_IP);
    double tb = b ? atof(b) : 0;
    CHECKF(ta > 1e9 && tb > 1e9 && ta - tb < 1.0 && tb - ta < 1.0,
           "first data segment: ours at %.6f, tcpdump's at %.6f (epoch s)", ta, tb);
    free(a);
    free(b);
}

static void check_ours(const char *file, const char *label, uint64_t bytes_a, const char *sha_a,
                       uint64_t bytes_b, const char *sha_b, const char *stack_ip)
{
    long frames;
    char why[1024];
    cap_file f;
    REQUIRE(cap_load(file, &f) == 0);
    CHECKF(f.first_shb && !f.malformed && f.whole == f.len && f.n_idb == 1 &&
               f.idb_tsresol[0] == 9,
           "%s: a whole pcapng, one interface in ns", label);
    CHECKF(f.n_isb == 1 && f.isb_drop[0] == 0, "%s: %llu frames dropped by the capture", label,
           (unsigned long long)f.isb_drop[0]);
    uint32_t us = 0;
    unsigned q[4];
    if (sscanf(stack_ip, "%u.%u.%u.%u", &q[0], &q[1], &q[2], &q[3]) == 4)
        us = q[0] << 24 | q[1] << 16 | q[2] << 8 | q[3];
    size_t bad_dir, back;
    cap_check_order(&f, us, &bad_dir, &back);
    CHECKF(bad_dir == 0 && back == 0, "%s: %zu wrong directions, %zu stamps backwards", label,
           bad_dir, back);
    size_t n = f.n_pkts;
    cap_free(&f);
    CHECKF(cap_tshark_read(file, &frames, why, sizeof(why)) == 0 && frames == (long)n,
           "%s: tshark read %ld of %zu frames: %s", label, frames, n, why);
    int st;
    char *o = cap_sh(&st, "tshark -n %s -r '%s' -Y '_ws.malformed || _ws.expert.severity >= error' "
                          "-T fields -e frame.number 2>/dev/null | wc -l", cap_tshark_opts, file);
    CHECKF(o && atoi(o) == 0, "%s: %s frames tshark calls malformed", label, o ? o : "?");
    free(o);
    cap_flow fl[2];
    CHECKF(cap_follow(file, 0, fl) == 0, "%s: follow,tcp,raw", label);
    CHECKF(fl[0].bytes == bytes_a && !strcmp(fl[0].sha, sha_a),
           "%s: follow: the connecting side sent %llu bytes %s, want %llu %s", label,
           (unsigned long long)fl[0].bytes, fl[0].sha, (unsigned long long)bytes_a, sha_a);
    CHECKF(fl[1].bytes == bytes_b && !strcmp(fl[1].sha, sha_b),
           "%s: follow: the accepting side sent %llu bytes %s, want %llu %s", label,
           (unsigned long long)fl[1].bytes, fl[1].sha, (unsigned long long)bytes_b, sha_b);
}

/* ---- bulk, with tcpdump on the other end --------------------------------- */

static void t_bulk(void)
{
    char ours[400], theirs[400], tderr[400];
    snprintf(ours, sizeof(ours), "%s/bulk_%s.pcapng", dir_path, kind);
    snprintf(theirs, sizeof(theirs), "%s/bulk_%s_tcpdump.pcap", dir_path, kind);
    snprintf(tderr, sizeof(tderr), "%s/tcpdump.err", dir_path);
    pid_t td = start_tcpdump(theirs, tderr);
    REQUIRE(td > 0);
    char spec[64];
    snprintf(spec, sizeof(spec), "%s:%s", kind, env.host);
    tw_port *port;
    tw_error err = {0};
    if (tw__port_open_spec(&port, spec, 4096, &err) != 0) {
        CHECKF(0, "[%s] port: %s", kind, err.msg);
        kill(td, SIGKILL);
        return;
    }
    tw_net_config cfg;
    tw_net_config_init(&cfg, TW_NETENV_STACK_IP_BE);
    cfg.isn_secret[0] = 0xcafe;
    cfg.isn_secret[1] = (uint64_t)getpid();
    static const uint8_t mac[6] = {0x02, 0x74, 0x77, 0x00, 0x00, 0x15};
    memcpy(cfg.mac, mac, 6);
    tw_net *st;
    REQUIRE(tw_net_open(&st, port, &cfg, &err) == 0);
    static tw__netdrv drv;
    REQUIRE(tw__netdrv_init(&drv, st, port) == 0);
    tw_capture_config cc;
    tw_capture_config_init(&cc, ours);
    cc.snap_len = 1518;
    cc.ring_slots = 16384;
    tw_capture *cap;
    CHECKF(tw_port_capture_open(port, &cc, spec, &cap, &err) == 0, "capture: %s", err.msg);
    /* The kernel peer. */
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    char pb[16], nb[24], sb[16];
    snprintf(pb, sizeof(pb), "%d", BULK_PORT);
    snprintf(nb, sizeof(nb), "%u", BULK_BYTES);
    snprintf(sb, sizeof(sb), "%d", SEED_KERNEL);
    char *kargv[] = {(char *)kpeer, (char *)"bulk", pb, nb, sb, NULL};
    pid_t kp = tw__netenv_spawn(&env, kargv, fds[1]);
    close(fds[1]);
    char line[512];
    REQUIRE(kp > 0 && read_line(fds[0], line, sizeof(line)) > 0 && !strcmp(line, "ready"));
    static tw_tcp_conn c;
    memset(&c, 0, sizeof(c));
    REQUIRE(tw_tcp_connect(st, &c, TW_NETENV_PEER_IP_BE, BULK_PORT, 0, tw__netdrv_now_ns()) == 0);
    cap_xfer x;
    cap_xfer_init(&x, &c, SEED_STACK, BULK_BYTES);
    uint64_t dl = tw__netdrv_now_ns() + 120000000000ull;
    while (tw_tcp_get_state(&c) != TW_TCP_CLOSED && tw__netdrv_now_ns() < dl) {
        tw__netdrv_turn(&drv, 1, 1000000);
        cap_xfer_pump(&x, tw__netdrv_now_ns());
        if (tw_tcp_get_state(&c) == TW_TCP_TIME_WAIT && x.peer_fin)
            break;
    }
    CHECKF(x.rcvd == BULK_BYTES && x.sent == BULK_BYTES, "[%s] transfer: sent %llu, received %llu",
           kind, (unsigned long long)x.sent, (unsigned long long)x.rcvd);
    /* Let TIME_WAIT's last ACKs go, then stop capturing. */
    for (int i = 0; i < 50; i++)
        tw__netdrv_turn(&drv, 1, 1000000);
    int ok_line = read_line(fds[0], line, sizeof(line)) > 0;
    close(fds[0]);
    CHECK(tw__netenv_wait(kp, 30.0) == 0);
    tw_port_capture_detach(port);
    tw_capture_stats cs;
    CHECK(tw_capture_close(cap, &cs) == 0);
    if (tw_tcp_get_state(&c) != TW_TCP_CLOSED)
        tw_tcp_abort(&c, tw__netdrv_now_ns());
    tw_tcp_conn_release(&c);
    tw_net_close(st);
    tw_port_close(port);
    CHECKF(cs.dropped == 0 && cs.written == cs.kept && cs.kept > 0,
           "[%s] capture: %llu kept, %llu dropped, %llu written", kind,
           (unsigned long long)cs.kept, (unsigned long long)cs.dropped,
           (unsigned long long)cs.written);
    /* The kernel's hashes of what it received and sent. */
    unsigned long long krx = 0, ktx = 0;
    char ksha_rx[65] = "", ksha_tx[65] = "";
    CHECKF(ok_line && sscanf(line, "rx %llu %64s tx %llu %64s", &krx, ksha_rx, &ktx, ksha_tx) == 4,
           "[%s] kpeer said '%s'", kind, line);
    char sha_stack[65], sha_kernel[65], got[65];
    cap_stream_sha(SEED_STACK, BULK_BYTES, sha_stack);
    cap_stream_sha(SEED_KERNEL, BULK_BYTES, sha_kernel);
    cap_xfer_rx_sha(&x, got);
    CHECKF(!strcmp(ksha_rx, sha_stack) && !strcmp(ksha_tx, sha_kernel) && !strcmp(got, sha_kernel),
           "[%s] both ends byte-exact", kind);
    /* tcpdump: wait (bounded) until it has every segment we saw, then stop it. */
    char *mine_tx = segments(ours, TW_NETENV_STACK_IP), *mine_rx = segments(ours, TW_NETENV_PEER_IP);
    size_t want = count_lines(mine_tx) + count_lines(mine_rx);
    for (int i = 0; i < 200; i++) {
        int s2;
        char *o = cap_sh(&s2, "tshark -n -r '%s' -T fields -e frame.number 2>/dev/null | wc -l",
                         theirs);
        size_t have = o ? (size_t)atol(o) : 0;
        free(o);
        if (have >= want)
            break;
        tw_clock_sleep_ns(50000000);
    }
    kill(td, SIGINT);
    CHECK(tw__netenv_wait(td, 20.0) == 0);
    check_ours(ours, kind, BULK_BYTES, sha_stack, BULK_BYTES, sha_kernel, TW_NETENV_STACK_IP);
    char *td_tx = segments(theirs, TW_NETENV_STACK_IP), *td_rx = segments(theirs, TW_NETENV_PEER_IP);
    char what[80];
    snprintf(what, sizeof(what), "[%s] stack -> kernel", kind);
    same_segments(what, mine_tx, td_tx);
    snprintf(what, sizeof(what), "[%s] kernel -> stack", kind);
    same_segments(what, mine_rx, td_rx);
    times_line_up(ours, theirs);
    free(mine_tx);
    free(mine_rx);
    free(td_tx);
    free(td_rx);
}

/* ---- tickwire net echo --pcap ---------------------------------------------- */

static void t_cli(void)
{
    char file[400];
    snprintf(file, sizeof(file), "%s/cli_%s.pcapng", dir_path, kind);
    char spec[64], pcap[460];
    snprintf(spec, sizeof(spec), "%s:%s", kind, env.host);
    snprintf(pcap, sizeof(pcap), "%s,port=7007", file);
    char *srv_argv[] = {(char *)tickwire, (char *)"net", (char *)"echo", (char *)"--port", spec,
                        (char *)"--ip", (char *)TW_NETENV_STACK_IP, (char *)"--listen",
                        (char *)"7007", (char *)"--mac", (char *)"02:74:77:00:00:16",
                        (char *)"--pcap", pcap, NULL};
    tw__netenv here;
    memset(&here, 0, sizeof(here));
    pid_t srv = tw__netenv_spawn(&here, srv_argv, -1);
    REQUIRE(srv > 0);
    int ok = 0;
    for (int t = 0; t < 50 && !ok; t++) {
        char *cli_argv[] = {(char *)kpeer, (char *)"rttclient", (char *)TW_NETENV_STACK_IP,
                            (char *)"7007", (char *)"500", (char *)"64", NULL};
        pid_t cli = tw__netenv_spawn(&env, cli_argv, -1);
        ok = tw__netenv_wait(cli, 30.0) == 0;
        if (!ok)
            tw_clock_sleep_ns(200000000);
        if (waitpid(srv, NULL, WNOHANG) == srv) {
            srv = -1;
            break;
        }
    }
    int src = -1;
    if (srv > 0) {
        kill(srv, SIGTERM);
        src = tw__netenv_wait(srv, 10.0);
    }
    CHECKF(ok && src == 0, "[%s] net echo --pcap: client ok %d, server exit %d", kind, ok, src);
    REQUIRE(ok && src == 0);
    /* rttclient sends stream 7, 500 messages of 64 bytes; the echo sends
     * it back.  Failed tries before the server was up are other streams:
     * the last stream in the file is the one that got through. */
    int st;
    char *o = cap_sh(&st, "tshark -n -r '%s' -T fields -e tcp.stream 2>/dev/null | sort -n | "
                          "tail -1", file);
    unsigned stream = o ? (unsigned)atoi(o) : 0;
    free(o);
    char sha[65];
    cap_stream_sha(7, 500 * 64, sha);
    cap_flow fl[2];
    CHECKF(cap_follow(file, stream, fl) == 0 && fl[0].bytes == 500 * 64 &&
               !strcmp(fl[0].sha, sha) && fl[1].bytes == 500 * 64 && !strcmp(fl[1].sha, sha),
           "[%s] net echo --pcap: follow of stream %u: %llu / %llu bytes", kind, stream,
           (unsigned long long)fl[0].bytes, (unsigned long long)fl[1].bytes);
    long frames;
    char why[512];
    CHECKF(cap_tshark_read(file, &frames, why, sizeof(why)) == 0 && frames > 1000,
           "[%s] net echo --pcap: tshark read %ld frames: %s", kind, frames, why);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: capture_veth KIND KPEER TICKWIRE\n");
        return 2;
    }
    kind = argv[1];
    kpeer = argv[2];
    tickwire = argv[3];
    if (geteuid() != 0) {
        printf("SKIP: capture_veth: needs root (network namespaces, veth pairs)\n");
        return CAP_SKIP;
    }
    int rc = cap_need_tools("capture_veth", 1);
    if (rc)
        return rc;
    if (access(kpeer, X_OK) != 0 || access(tickwire, X_OK) != 0) {
        fprintf(stderr, "FAIL: %s or %s missing\n", kpeer, tickwire);
        return 1;
    }
    snprintf(dir_path, sizeof(dir_path), "/tmp/tw_capture_veth_XXXXXX");
    if (!mkdtemp(dir_path)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(cap_tshark_opts, sizeof(cap_tshark_opts), "-d tcp.port==%d,data", BULK_PORT);
    rc = tw__netenv_setup(&env, 1);
    if (rc)
        return rc == TW_NETENV_SKIP ? CAP_SKIP : 1;
    t_bulk();
    t_cli();
    tw__netenv_teardown(&env);
    if (!tw_check_failures) {
        int st;
        free(cap_sh(&st, "rm -rf '%s'", dir_path));
    } else {
        fprintf(stderr, "capture_veth: files kept in %s\n", dir_path);
    }
    char name[64];
    snprintf(name, sizeof(name), "capture_veth_%s", kind);
    return tw_check_done(name);
}
