/* Capture of TCP transfers between two stacks on the simulated network,
 * read back by tshark:
 *
 *   clean      300 kB each way and a graceful close, both ports captured
 *              (A on virtual time, B on the TSC): every frame parses,
 *              tshark's follow,tcp,raw reassembles exactly the bytes each
 *              side sent (SHA-256), directions match the addresses,
 *              timestamps never go backwards within a direction
 *   same_seed  the same run twice on virtual time: identical files
 *   impaired   loss, duplication, reordering on both links: retransmitted
 *              and out-of-order segments in the capture, follow still
 *              gives exactly the bytes sent
 *   ring_full  a 16-slot ring drained a few records at a time: frames are
 *              dropped and counted (stats and the file's Interface
 *              Statistics Block), the transfer still completes byte-exact,
 *              what was captured is written whole
 *   filter     port, address and direction filters keep exactly the
 *              frames they name
 *
 * Usage: capture_sim [--keep DIR]  (keep the capture files in DIR).
 * Skips (77) when tshark is missing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/capcheck.h"
#include "tickwire/clock.h"
#include "tickwire/net.h"
#include "tickwire/net_sim.h"
#include "tw_check.h"

#define IP_A 0x0a000001u /* 10.0.0.1: connects */
#define IP_B 0x0a000002u /* 10.0.0.2: listens on PORT_B */
#define PORT_B 5000
#define SEED_A 11
#define SEED_B 22

static char dir_path[256];
/* The loop's virtual time, which virtual-time captures stamp with. */
static uint64_t sim_now_mirror;

typedef struct run_opts {
    const char *name;
    uint64_t seed, bytes;
    tw_sim_link_config link;
    tw_capture_config *cap_a, *cap_b; /* NULL: that port not captured */
    unsigned drain_every;             /* CALLER writers: drain every N steps (0: 1) */
    unsigned drain_max;               /* records per drain (0: 4096) */
} run_opts;

typedef struct run_res {
    int ok;
    tw_capture_stats st_a, st_b;
    uint64_t frames_a; /* frames A's port received + sent */
} run_res;

static cap_accept acc_b; /* B's accepted connection */

static void path_of(char *buf, size_t cap, const char *name, const char *side)
{
    snprintf(buf, cap, "%s/%s_%s.pcapng", dir_path, name, side);
}

/* One transfer: A connects to B, both send o->bytes and close. */
static void run(const run_opts *o, run_res *r)
{
    memset(r, 0, sizeof(*r));
    int fails0 = tw_check_failures;
    tw_sim_net *net;
    tw_error err = {0};
    static const uint8_t ma[6] = {2, 0, 0, 0, 0, 1}, mb[6] = {2, 0, 0, 0, 0, 2};
    REQUIRE(tw_sim_net_open(&net, o->seed, 8192, &err) == 0);
    tw_port *pa, *pb;
    REQUIRE(tw_port_sim_open(&pa, net, ma, &o->link, 1024, &err) == 0);
    REQUIRE(tw_port_sim_open(&pb, net, mb, &o->link, 1024, &err) == 0);
    tw_net *a, *b;
    tw_net_config ca, cb;
    tw_net_config_init(&ca, IP_A);
    tw_net_config_init(&cb, IP_B);
    ca.isn_secret[0] = 1;
    cb.isn_secret[0] = 2;
    ca.rx_buf_bytes = ca.tx_buf_bytes = cb.rx_buf_bytes = cb.tx_buf_bytes = 65536;
    ca.time_wait_ns = cb.time_wait_ns = 1000000;
    REQUIRE(tw_net_open(&a, pa, &ca, &err) == 0);
    REQUIRE(tw_net_open(&b, pb, &cb, &err) == 0);
    uint64_t now = 1000000;
    sim_now_mirror = now;
    tw_capture *cap_a = NULL, *cap_b = NULL;
    if (o->cap_a) {
        CHECKF(tw_port_capture_open(pa, o->cap_a, "sim:a", &cap_a, &err) == 0, "%s", err.msg);
    }
    if (o->cap_b) {
        CHECKF(tw_port_capture_open(pb, o->cap_b, "sim:b", &cap_b, &err) == 0, "%s", err.msg);
    }
    tw_tcp_listener l;
    memset(&l, 0, sizeof(l));
    acc_b.have = 0;
    REQUIRE(tw_tcp_listen(b, &l, PORT_B, cap_accept_one, &acc_b) == 0);
    static tw_tcp_conn conn_a;
    memset(&conn_a, 0, sizeof(conn_a));
    REQUIRE(tw_tcp_connect(a, &conn_a, IP_B, PORT_B, 0, now) == 0);
    cap_xfer xa, xb;
    cap_xfer_init(&xa, &conn_a, SEED_A, o->bytes);
    int xb_on = 0;
    unsigned every = o->drain_every ? o->drain_every : 1;
    unsigned dmax = o->drain_max ? o->drain_max : 4096;
    int done = 0;
    for (uint64_t step = 0; step < 20000000 && !done; step++) {
        tw_sim_net_advance(net, now);
        for (int k = 0; k < 64 && (tw_net_poll(a, now) | tw_net_poll(b, now)); k++)
            ;
        if (acc_b.have && !xb_on) {
            cap_xfer_init(&xb, &acc_b.conn, SEED_B, o->bytes);
            xb_on = 1;
        }
        cap_xfer_pump(&xa, now);
        if (xb_on)
            cap_xfer_pump(&xb, now);
        if (step % every == 0) {
            if (cap_a && o->cap_a->writer == TW_CAPTURE_WRITER_CALLER)
                tw_capture_drain(cap_a, dmax);
            if (cap_b && o->cap_b->writer == TW_CAPTURE_WRITER_CALLER)
                tw_capture_drain(cap_b, dmax);
        }
        done = xb_on && tw_tcp_get_state(&conn_a) == TW_TCP_CLOSED &&
               tw_tcp_get_state(&acc_b.conn) == TW_TCP_CLOSED;
        uint64_t next = tw_sim_net_next_event_ns(net);
        uint64_t t = tw_net_next_timer_ns(a);
        if (t < next)
            next = t;
        t = tw_net_next_timer_ns(b);
        if (t < next)
            next = t;
        if (next > now + 1000000)
            next = now + 1000000;
        now = next > now ? next : now + 1000;
        sim_now_mirror = now;
    }
    CHECKF(done, "%s: both connections closed", o->name);
    CHECKF(xa.rcvd == o->bytes && xb_on && xb.rcvd == o->bytes, "%s: received %llu / %llu of %llu",
           o->name, (unsigned long long)xa.rcvd, (unsigned long long)(xb_on ? xb.rcvd : 0),
           (unsigned long long)o->bytes);
    /* Byte-exact both ways, whatever the capture did. */
    char got[65], want[65];
    cap_xfer_rx_sha(&xa, got);
    cap_stream_sha(SEED_B, o->bytes, want);
    CHECKF(!strcmp(got, want), "%s: A received B's stream exactly", o->name);
    if (xb_on) {
        cap_xfer_rx_sha(&xb, got);
        cap_stream_sha(SEED_A, o->bytes, want);
        CHECKF(!strcmp(got, want), "%s: B received A's stream exactly", o->name);
    }
    r->frames_a = pa->rx_pkts + pa->tx_pkts;
    tw_port_capture_detach(pa);
    tw_port_capture_detach(pb);
    if (cap_a)
        CHECK(tw_capture_close(cap_a, &r->st_a) == 0);
    if (cap_b)
        CHECK(tw_capture_close(cap_b, &r->st_b) == 0);
    tw_tcp_conn_release(&conn_a);
    if (xb_on)
        tw_tcp_conn_release(&acc_b.conn);
    tw_net_close(a);
    tw_net_close(b);
    tw_sim_net_close(net);
    r->ok = done && tw_check_failures == fails0;
}

/* The checks every capture of a transfer must pass.  a_side: the file is
 * A's port (A's frames outbound) or B's. */
static void check_capture(const char *file, const char *name, int a_side, uint64_t bytes,
                          const tw_capture_stats *st, int complete)
{
    cap_file f;
    REQUIRE(cap_load(file, &f) == 0);
    CHECKF(f.first_shb && !f.malformed && f.whole == f.len, "%s: whole blocks only", name);
    CHECKF(f.n_idb == 1 && f.idb_tsresol[0] == 9, "%s: one interface, ns resolution", name);
    CHECKF(!strcmp(f.idb_name[0], a_side ? "sim:a" : "sim:b"), "%s: if_name '%s'", name,
           f.idb_name[0]);
    CHECKF(f.n_pkts == st->written && st->written == st->kept, "%s: %zu packets, %llu written",
           name, f.n_pkts, (unsigned long long)st->written);
    CHECKF(f.n_isb == 1 && f.isb_drop[0] == st->dropped && f.isb_deliv[0] == st->written,
           "%s: statistics block (drop %llu)", name, (unsigned long long)f.isb_drop[0]);
    /* Direction and address agree; no stamp goes backwards per direction. */
    size_t bad_dir, back;
    cap_check_order(&f, a_side ? IP_A : IP_B, &bad_dir, &back);
    CHECKF(bad_dir == 0, "%s: %zu frames with the wrong direction", name, bad_dir);
    CHECKF(back == 0, "%s: %zu stamps went backwards", name, back);
    cap_free(&f);
    long frames;
    char why[1024];
    CHECKF(cap_tshark_read(file, &frames, why, sizeof(why)) == 0, "%s: tshark: %s", name, why);
    CHECKF(frames == (long)st->written, "%s: tshark read %ld frames of %llu", name, frames,
           (unsigned long long)st->written);
    int rc;
    char *o = cap_sh(&rc, "tshark -n %s -r '%s' -Y '_ws.malformed || _ws.expert.severity >= error' "
                          "-T fields -e frame.number 2>/dev/null | wc -l",
                     cap_tshark_opts, file);
    CHECKF(o && rc == 0 && atoi(o) == 0, "%s: %s frames tshark calls malformed", name, o ? o : "?");
    free(o);
    /* tshark's own idea of the direction (epb_flags) against the address. */
    o = cap_sh(&rc, "tshark -n %s -r '%s' -Y ip -T fields -e frame.packet_flags_direction "
                    "-e ip.src 2>/dev/null | sort | uniq -c", cap_tshark_opts, file);
    char want_out[64], want_in[64];
    snprintf(want_out, sizeof(want_out), "0x00000002\t%s", a_side ? "10.0.0.1" : "10.0.0.2");
    snprintf(want_in, sizeof(want_in), "0x00000001\t%s", a_side ? "10.0.0.2" : "10.0.0.1");
    int lines = 0, good = 0;
    for (char *line = o ? strtok(o, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        lines++;
        good += strstr(line, want_out) != NULL || strstr(line, want_in) != NULL;
    }
    CHECKF(o && lines == 2 && good == 2, "%s: tshark directions per address:\n%s", name,
           o ? o : "?");
    free(o);
    if (!complete)
        return;
    cap_flow fl[2];
    CHECKF(cap_follow(file, 0, fl) == 0, "%s: follow,tcp,raw", name);
    char sa[65], sb[65];
    cap_stream_sha(SEED_A, bytes, sa);
    cap_stream_sha(SEED_B, bytes, sb);
    CHECKF(fl[0].bytes == bytes && !strcmp(fl[0].sha, sa),
           "%s: follow: A (node 0) sent %llu bytes %s, want %s", name,
           (unsigned long long)fl[0].bytes, fl[0].sha, sa);
    CHECKF(fl[1].bytes == bytes && !strcmp(fl[1].sha, sb),
           "%s: follow: B (node 1) sent %llu bytes %s, want %s", name,
           (unsigned long long)fl[1].bytes, fl[1].sha, sb);
}

static void cfg_for(tw_capture_config *c, const char *name, const char *side, int virtual_time,
                    const uint64_t *now_src)
{
    char p[400];
    path_of(p, sizeof(p), name, side);
    CHECK(tw_capture_config_init(c, p) == 0);
    c->writer = TW_CAPTURE_WRITER_CALLER;
    if (virtual_time) {
        c->now_ns = now_src;
        c->epoch_base_ns = 1700000000000000000ll;
    }
}

static void t_clean(void)
{
    tw_capture_config ca, cb;
    cfg_for(&ca, "clean", "a", 0, NULL);
    cfg_for(&cb, "clean", "b", 0, NULL);
    run_opts o = {.name = "clean", .seed = 1, .bytes = 300000, .cap_a = &ca, .cap_b = &cb};
    o.link.delay_min_ns = 50000;
    run_res r;
    run(&o, &r);
    REQUIRE(r.ok);
    CHECKF(r.st_a.dropped == 0 && r.st_a.kept == r.frames_a,
           "clean: A kept %llu of %llu frames", (unsigned long long)r.st_a.kept,
           (unsigned long long)r.frames_a);
    check_capture(ca.path, "clean A", 1, o.bytes, &r.st_a, 1);
    check_capture(cb.path, "clean B", 0, o.bytes, &r.st_b, 1);
}

static void t_same_seed(void)
{
    tw_capture_config c1, c2;
    cfg_for(&c1, "same_seed1", "a", 1, &sim_now_mirror);
    cfg_for(&c2, "same_seed2", "a", 1, &sim_now_mirror);
    run_opts o = {.name = "same_seed", .seed = 7, .bytes = 100000, .cap_a = &c1};
    o.link.delay_min_ns = 20000;
    o.link.delay_mean_ns = 30000;
    o.link.loss_ppm = 10000;
    run_res r1, r2;
    run(&o, &r1);
    o.cap_a = &c2;
    run(&o, &r2);
    REQUIRE(r1.ok && r2.ok);
    cap_file f1, f2;
    REQUIRE(cap_load(c1.path, &f1) == 0 && cap_load(c2.path, &f2) == 0);
    CHECKF(f1.len == f2.len && f1.len > 0 && !memcmp(f1.bytes, f2.bytes, f1.len),
           "same seed, same file (%zu / %zu bytes)", f1.len, f2.len);
    /* Virtual stamps: the first frame (the SYN) at the run's start. */
    CHECKF(f1.n_pkts && f1.pkts[0].ts >= 1700000000000000000ull &&
               f1.pkts[0].ts < 1700000000000000000ull + 10000000ull,
           "virtual time stamps (%llu)", f1.n_pkts ? (unsigned long long)f1.pkts[0].ts : 0ull);
    cap_free(&f1);
    cap_free(&f2);
    check_capture(c1.path, "same_seed", 1, o.bytes, &r1.st_a, 1);
}

static void t_impaired(void)
{
    tw_capture_config ca;
    cfg_for(&ca, "impaired", "a", 1, &sim_now_mirror);
    run_opts o = {.name = "impaired", .seed = 3, .bytes = 200000, .cap_a = &ca};
    o.link.delay_min_ns = 100000;
    o.link.delay_mean_ns = 100000;
    o.link.loss_ppm = 20000;
    o.link.dup_ppm = 10000;
    o.link.reorder_ppm = 50000;
    o.link.reorder_extra_ns = 300000;
    run_res r;
    run(&o, &r);
    REQUIRE(r.ok);
    check_capture(ca.path, "impaired", 1, o.bytes, &r.st_a, 1);
    int rc;
    char *out = cap_sh(&rc, "tshark -n %s -r '%s' -Y 'tcp.analysis.retransmission || "
                            "tcp.analysis.out_of_order || tcp.analysis.duplicate_ack' "
                            "-T fields -e frame.number 2>/dev/null | wc -l",
                       cap_tshark_opts, ca.path);
    CHECKF(out && atoi(out) > 0, "impaired: tshark sees retransmissions / reordering (%s)",
           out ? out : "?");
    free(out);
}

static void t_ring_full(void)
{
    tw_capture_config ca;
    cfg_for(&ca, "ring_full", "a", 1, &sim_now_mirror);
    ca.ring_slots = 16;
    run_opts o = {.name = "ring_full", .seed = 5, .bytes = 400000, .cap_a = &ca,
                  .drain_every = 4, .drain_max = 2};
    o.link.delay_min_ns = 30000;
    run_res r;
    run(&o, &r);
    REQUIRE(r.ok); /* run() checked the transfer byte-exact */
    CHECKF(r.st_a.dropped > 0, "ring_full: frames dropped (%llu)",
           (unsigned long long)r.st_a.dropped);
    CHECKF(r.st_a.kept + r.st_a.dropped == r.frames_a,
           "ring_full: kept %llu + dropped %llu == %llu frames on the port",
           (unsigned long long)r.st_a.kept, (unsigned long long)r.st_a.dropped,
           (unsigned long long)r.frames_a);
    check_capture(ca.path, "ring_full", 1, o.bytes, &r.st_a, 0);
}

static void t_filter(void)
{
    /* Three captures of the same run's A side would need three ports; one
     * capture per run, three runs of the same seed instead. */
    struct {
        const char *name, *spec;
        int want_rx, want_tx, want_arp;
    } cases[] = {
        {"f_port", ",port=5000", 1, 1, 0},
        {"f_other_port", ",port=5001", 0, 0, 0},
        {"f_ip", ",ip=10.0.0.2", 1, 1, 0},
        {"f_rx", ",dir=rx", 1, 0, 1},
        {"f_tx_nonip", ",dir=tx,port=5000,nonip=1", 0, 1, 1},
    };
    for (unsigned i = 0; i < TW_ARRAY_SIZE(cases); i++) {
        char spec[600];
        tw_capture_config ca;
        tw_error err;
        snprintf(spec, sizeof(spec), "%s/%s.pcapng%s", dir_path, cases[i].name, cases[i].spec);
        REQUIRE(tw_capture_config_parse(&ca, spec, &err) == 0);
        ca.writer = TW_CAPTURE_WRITER_CALLER;
        ca.now_ns = &sim_now_mirror;
        run_opts o = {.name = cases[i].name, .seed = 9, .bytes = 20000, .cap_a = &ca};
        run_res r;
        run(&o, &r);
        REQUIRE(r.ok);
        cap_file f;
        REQUIRE(cap_load(ca.path, &f) == 0);
        unsigned rx = 0, tx = 0, arp = 0, other = 0;
        for (size_t k = 0; k < f.n_pkts; k++) {
            const cap_pkt *p = &f.pkts[k];
            int is_arp = p->cap_len >= 14 && p->data[12] == 8 && p->data[13] == 6;
            if (is_arp) {
                arp++;
                continue;
            }
            rx += p->dir == TW_CAPTURE_RX;
            tx += p->dir == TW_CAPTURE_TX;
            if (p->dir == TW_CAPTURE_TX ? !cases[i].want_tx : !cases[i].want_rx)
                other++;
        }
        CHECKF(other == 0 && (rx > 0) == cases[i].want_rx && (tx > 0) == cases[i].want_tx &&
                   (arp > 0) == cases[i].want_arp,
               "%s: rx %u tx %u arp %u unwanted %u", cases[i].name, rx, tx, arp, other);
        CHECKF(r.st_a.kept + r.st_a.filtered == r.frames_a, "%s: kept + filtered = all frames",
               cases[i].name);
        cap_free(&f);
    }
}

int main(int argc, char **argv)
{
    int keep = 0;
    if (argc == 3 && !strcmp(argv[1], "--keep")) {
        snprintf(dir_path, sizeof(dir_path), "%s", argv[2]);
        keep = 1;
    } else {
        snprintf(dir_path, sizeof(dir_path), "/tmp/tw_capture_sim_XXXXXX");
        if (!mkdtemp(dir_path)) {
            perror("mkdtemp");
            return 1;
        }
    }
    snprintf(cap_tshark_opts, sizeof(cap_tshark_opts), "-d tcp.port==%d,data", PORT_B);
    int rc = cap_need_tools("capture_sim", 0);
    if (rc)
        return rc;
    t_clean();
    t_same_seed();
    t_impaired();
    t_ring_full();
    t_filter();
    if (!keep && !tw_check_failures) {
        int st;
        free(cap_sh(&st, "rm -rf '%s'", dir_path));
    } else {
        fprintf(stderr, "capture_sim: files kept in %s\n", dir_path);
    }
    return tw_check_done("capture_sim");
}
