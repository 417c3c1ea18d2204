/* A capture written while its process is SIGKILLed:
 * a child runs two stacks on the sim network moving bytes without end,
 * both ports captured by one writer thread, and is killed once its file
 * has grown past a size that differs per round (so the kill lands at
 * different points of the writer's work).  What it leaves must be a
 * pcapng that tshark reads up to the last whole block: our reader finds
 * only whole, well-formed blocks (or one cut-short block at the very end,
 * which only a write the kernel cut short can leave), and tshark reads
 * exactly the packets of the whole blocks.  One round rotates files at
 * 256 KiB: every file before the last is complete.
 *
 * Skips (77) without tshark. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/capcheck.h"
#include "tickwire/clock.h"
#include "tickwire/net.h"
#include "tickwire/net_sim.h"
#include "tw_check.h"

static char dir_path[256];

static cap_accept acc_b; /* B's accepted connection */

/* The child: never returns. */
static void child(const char *spec)
{
    tw_error err;
    tw_capture_config cc;
    if (tw_capture_config_parse(&cc, spec, &err))
        _exit(10);
    cc.writer_idle_ns = 50000;
    tw_sim_net *net;
    static const uint8_t ma[6] = {2, 0, 0, 0, 0, 1}, mb[6] = {2, 0, 0, 0, 0, 2};
    tw_port *pa, *pb;
    tw_sim_link_config L = {.delay_min_ns = 20000};
    if (tw_sim_net_open(&net, 1, 8192, &err) || tw_port_sim_open(&pa, net, ma, &L, 1024, &err) ||
        tw_port_sim_open(&pb, net, mb, &L, 1024, &err))
        _exit(11);
    tw_net *a, *b;
    tw_net_config ca, cb;
    tw_net_config_init(&ca, 0x0a000001);
    tw_net_config_init(&cb, 0x0a000002);
    ca.isn_secret[0] = cb.isn_secret[0] = 5;
    if (tw_net_open(&a, pa, &ca, &err) || tw_net_open(&b, pb, &cb, &err))
        _exit(12);
    tw_capture *cap;
    if (tw_capture_open(&cap, &cc, &err) || tw_port_capture_attach(pa, cap, "sim:a", &err) ||
        tw_port_capture_attach(pb, cap, "sim:b", &err))
        _exit(13);
    tw_tcp_listener l;
    memset(&l, 0, sizeof(l));
    static tw_tcp_conn conn_a;
    uint64_t now = 1000000;
    if (tw_tcp_listen(b, &l, 5000, cap_accept_one, &acc_b) ||
        tw_tcp_connect(a, &conn_a, 0x0a000002, 5000, 0, now))
        _exit(14);
    cap_xfer xa, xb;
    cap_xfer_init(&xa, &conn_a, 1, UINT64_MAX / 2);
    int xb_on = 0;
    for (;;) {
        tw_sim_net_advance(net, now);
        tw_net_poll(a, now);
        tw_net_poll(b, now);
        if (acc_b.have && !xb_on) {
            cap_xfer_init(&xb, &acc_b.conn, 2, UINT64_MAX / 2);
            xb_on = 1;
        }
        cap_xfer_pump(&xa, now);
        if (xb_on)
            cap_xfer_pump(&xb, now);
        uint64_t next = tw_sim_net_next_event_ns(net);
        if (next > now + 100000)
            next = now + 100000;
        now = next > now ? next : now + 1000;
        /* 2 cores: leave the writer thread room now and then. */
        if ((now / 1000) % 64 == 0)
            sched_yield();
    }
}

static long file_size(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? (long)sb.st_size : -1;
}

/* Checks one file left by a killed writer.  last: it may end cut short. */
static void check_file(const char *p, int last, int round)
{
    cap_file f;
    REQUIRE(cap_load(p, &f) == 0);
    CHECKF(f.first_shb && !f.malformed && f.n_idb >= 1,
           "round %d: %s: only whole, well-formed blocks (%zu whole bytes of %zu)", round, p,
           f.whole, f.len);
    CHECKF(f.whole == f.len || last, "round %d: %s: a complete file ends with a whole block",
           round, p);
    if (f.whole < f.len)
        fprintf(stderr, "capture_kill: round %d: %s ends with %zu bytes of a cut-short block\n",
                round, p, f.len - f.whole);
    /* The file being written when the kill came may hold only its
     * headers (a rotation just before it); the others hold packets. */
    CHECKF(f.n_pkts > 0 || last, "round %d: %s holds packets", round, p);
    int st;
    char *o = cap_sh(&st, "tshark -n -r '%s' -T fields -e frame.number 2>&1 | "
                          "grep -v -e 'Running as user' -e '^[0-9]*$' | head -3; "
                          "tshark -n -r '%s' -T fields -e frame.number 2>/dev/null | wc -l", p, p);
    REQUIRE(o);
    /* Output: tshark's complaints (if any), then the frame count. */
    char *nl = strrchr(o, '\n');
    if (nl)
        *nl = 0;
    char *cnt = strrchr(o, '\n');
    long frames = atol(cnt ? cnt + 1 : o);
    if (cnt)
        *cnt = 0;
    else
        o[0] = 0;
    CHECKF(frames == (long)f.n_pkts, "round %d: %s: tshark read %ld frames, %zu whole packet "
                                     "blocks", round, p, frames, f.n_pkts);
    if (f.whole == f.len)
        CHECKF(o[0] == 0, "round %d: %s: tshark complained: %s", round, p, o);
    else
        CHECKF(o[0] == 0 || strstr(o, "cut short") != NULL,
               "round %d: %s: tshark's only complaint may be the cut-short end: %s", round, p, o);
    free(o);
    cap_free(&f);
}

/* One round: run the child, kill it, check what it left. */
static void one_round(int r, int rotate)
{
    char file[400], spec[500];
    snprintf(file, sizeof(file), "%s/kill%d.pcapng", dir_path, r);
    snprintf(spec, sizeof(spec), "%s%s", file, rotate ? ",size=256k" : "");
    /* Kill once the (first) file passes this many bytes. */
    long at = 200000 + 170000L * r;
    char watch[420];
    snprintf(watch, sizeof(watch), "%s", file);
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0)
        child(spec);
    int grew = 0;
    for (int i = 0; i < 12000 && !grew; i++) {
        if (rotate) {
            /* Rotation: wait for the fourth file. */
            snprintf(watch, sizeof(watch), "%s/kill%d.3.pcapng", dir_path, r);
            grew = file_size(watch) > 1000;
        } else {
            grew = file_size(file) >= at;
        }
        int ws;
        if (waitpid(pid, &ws, WNOHANG) == pid) {
            CHECKF(0, "round %d: child exited by itself (status %d)", r, ws);
            pid = -1;
            break;
        }
        if (!grew)
            tw_clock_sleep_ns(5000000);
    }
    CHECKF(grew, "round %d: the capture grew", r);
    if (pid > 0) {
        kill(pid, SIGKILL);
        int ws;
        waitpid(pid, &ws, 0);
        CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
    }
    if (!grew)
        return;
    if (!rotate) {
        check_file(file, 1, r);
        return;
    }
    /* Rotated: kill2.pcapng, kill2.1.pcapng, ...; all but the last whole. */
    int nfiles = 0;
    for (int k = 0; k < 1000; k++) {
        char p[420];
        if (k == 0)
            snprintf(p, sizeof(p), "%s", file);
        else
            snprintf(p, sizeof(p), "%s/kill%d.%d.pcapng", dir_path, r, k);
        if (file_size(p) < 0)
            break;
        nfiles++;
    }
    CHECKF(nfiles >= 4, "round %d: %d rotated files", r, nfiles);
    for (int k = 0; k < nfiles; k++) {
        char p[420];
        if (k == 0)
            snprintf(p, sizeof(p), "%s", file);
        else
            snprintf(p, sizeof(p), "%s/kill%d.%d.pcapng", dir_path, r, k);
        /* A file before the last one was finished (statistics and
         * all) before the next was opened. */
        check_file(p, k == nfiles - 1, r);
        if (k < nfiles - 1) {
            cap_file f;
            if (cap_load(p, &f) == 0) {
                CHECKF(f.n_isb == 2 && (long)f.len <= 256 * 1024,
                       "round %d: %s: finished (%u statistics blocks), within the limit", r,
                       p, f.n_isb);
                cap_free(&f);
            }
        }
    }
}

int main(void)
{
    int rc = cap_need_tools("capture_kill", 0);
    if (rc)
        return rc;
    snprintf(dir_path, sizeof(dir_path), "/tmp/tw_capture_kill_XXXXXX");
    if (!mkdtemp(dir_path)) {
        perror("mkdtemp");
        return 1;
    }
    const int rounds = 6;
    for (int r = 0; r < rounds; r++)
        one_round(r, r == rounds - 1);
    if (!tw_check_failures) {
        int st;
        free(cap_sh(&st, "rm -rf '%s'", dir_path));
    } else {
        fprintf(stderr, "capture_kill: files kept in %s\n", dir_path);
    }
    return tw_check_done("capture_kill");
}
