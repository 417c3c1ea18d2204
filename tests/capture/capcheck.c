/* The capture tests' shared checks (capcheck.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "capture/capcheck.h"

static uint32_t ld32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

char cap_tshark_opts[256];

int cap_load(const char *path, cap_file *f)
{
    memset(f, 0, sizeof(*f));
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -errno;
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0) {
        fclose(fp);
        return -errno;
    }
    f->len = (size_t)sb.st_size;
    f->bytes = malloc(f->len + 1);
    if (!f->bytes || fread(f->bytes, 1, f->len, fp) != f->len) {
        fclose(fp);
        return -EIO;
    }
    fclose(fp);
    size_t cap = 1024;
    f->pkts = malloc(cap * sizeof(*f->pkts));
    unsigned idb = 0;
    size_t off = 0;
    while (off < f->len) {
        tw_pcapng_block b;
        long r = tw_pcapng_block_parse(f->bytes + off, f->len - off, &b);
        if (r == -2)
            break;
        if (r < 0) {
            f->malformed = 1;
            break;
        }
        if (off == 0)
            f->first_shb = b.type == 0x0A0D0D0Au;
        const uint8_t *v;
        uint16_t vl;
        switch (b.type) {
        case 0x0A0D0D0Au:
            f->n_shb++;
            idb = 0; /* a new section numbers its interfaces from 0 */
            break;
        case 1:
            f->n_idb++;
            if (idb < TW_CAPTURE_MAX_IFACES) {
                f->idb_snap[idb] = b.body_len >= 8 ? ld32(b.body + 4) : 0;
                if (tw_pcapng_option(&b, 2, &v, &vl) == 1 && vl < TW_CAPTURE_NAME_MAX) {
                    memcpy(f->idb_name[idb], v, vl);
                    f->idb_name[idb][vl] = 0;
                }
                f->idb_tsresol[idb] = tw_pcapng_option(&b, 9, &v, &vl) == 1 && vl == 1 ? v[0] : 6;
            }
            idb++;
            break;
        case 5: {
            f->n_isb++;
            uint32_t i = b.body_len >= 4 ? ld32(b.body) : TW_CAPTURE_MAX_IFACES;
            if (i < TW_CAPTURE_MAX_IFACES) {
                if (tw_pcapng_option(&b, 4, &v, &vl) == 1 && vl == 8)
                    f->isb_recv[i] = ld64(v);
                if (tw_pcapng_option(&b, 5, &v, &vl) == 1 && vl == 8)
                    f->isb_drop[i] = ld64(v);
                if (tw_pcapng_option(&b, 6, &v, &vl) == 1 && vl == 8)
                    f->isb_accept[i] = ld64(v);
                if (tw_pcapng_option(&b, 8, &v, &vl) == 1 && vl == 8)
                    f->isb_deliv[i] = ld64(v);
            }
            break;
        }
        case 6: {
            tw_pcapng_epb e;
            if (tw_pcapng_epb_decode(&b, &e) != 0 || e.iface >= idb) {
                f->malformed = 1;
                goto out;
            }
            if (f->n_pkts == cap) {
                cap *= 2;
                f->pkts = realloc(f->pkts, cap * sizeof(*f->pkts));
            }
            cap_pkt *p = &f->pkts[f->n_pkts++];
            p->iface = e.iface;
            p->cap_len = e.cap_len;
            p->orig_len = e.orig_len;
            p->dir = e.flags & 3u;
            p->ts = e.ts;
            p->data = e.data;
            break;
        }
        default:
            f->n_other++;
        }
        off += (size_t)r;
    }
out:
    f->whole = off;
    return 0;
}

void cap_free(cap_file *f)
{
    free(f->bytes);
    free(f->pkts);
    memset(f, 0, sizeof(*f));
}

void cap_check_order(const cap_file *f, uint32_t our_ip, size_t *bad_dir, size_t *back)
{
    uint64_t last[4] = {0, 0, 0, 0};
    *bad_dir = *back = 0;
    for (size_t i = 0; i < f->n_pkts; i++) {
        const cap_pkt *p = &f->pkts[i];
        if (p->cap_len >= 34 && p->data[12] == 8 && p->data[13] == 0) {
            uint32_t src = (uint32_t)p->data[26] << 24 | (uint32_t)p->data[27] << 16 |
                           (uint32_t)p->data[28] << 8 | p->data[29];
            *bad_dir += (src == our_ip) != (p->dir == TW_CAPTURE_TX);
        }
        *back += p->ts < last[p->dir & 3];
        last[p->dir & 3] = p->ts;
    }
}

int cap_need_tools(const char *test, int need_tcpdump)
{
    int st;
    char *o = cap_sh(&st, "command -v tshark >/dev/null && tshark -v >/dev/null 2>&1 && echo ok");
    int ok = o && st == 0 && !strncmp(o, "ok", 2);
    free(o);
    if (!ok) {
        printf("SKIP: %s: tshark is not installed (Debian package tshark; scripts/setup)\n", test);
        return CAP_SKIP;
    }
    if (need_tcpdump) {
        o = cap_sh(&st, "command -v tcpdump >/dev/null && echo ok");
        ok = o && st == 0 && !strncmp(o, "ok", 2);
        free(o);
        if (!ok) {
            printf("SKIP: %s: tcpdump is not installed (Debian package tcpdump; scripts/setup)\n",
                   test);
            return CAP_SKIP;
        }
    }
    return 0;
}

char *cap_sh(int *status, const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    *status = -1;
    if (n < 0 || (size_t)n >= sizeof(cmd))
        return NULL;
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 65536, len = 0;
    char *out = malloc(cap);
    size_t r;
    while (out && (r = fread(out + len, 1, cap - len - 1, p)) > 0) {
        len += r;
        if (cap - len < 4096) {
            cap *= 2;
            out = realloc(out, cap);
        }
    }
    int st = pclose(p);
    if (!out)
        return NULL;
    out[len] = 0;
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

int cap_tshark_read(const char *file, long *frames, char *why, size_t cap)
{
    char errf[] = "/tmp/tw_capcheck_errXXXXXX";
    int fd = mkstemp(errf);
    if (fd < 0) {
        snprintf(why, cap, "mkstemp: %s", strerror(errno));
        return -1;
    }
    int st;
    /* -n: no name resolution; frame.number per line: one line a frame.
     * (Running as root, tshark prints a warning on stderr: filtered.) */
    char *o = cap_sh(&st, "tshark -n %s -r '%s' -T fields -e frame.number 2>'%s'",
                     cap_tshark_opts, file, errf);
    FILE *ef = fdopen(fd, "r");
    char line[512];
    size_t wl = 0;
    why[0] = 0;
    int bad_stderr = 0;
    while (ef && fgets(line, sizeof(line), ef)) {
        if (strstr(line, "Running as user \"root\"") || strstr(line, "could be dangerous"))
            continue;
        bad_stderr = 1;
        size_t l = strlen(line);
        if (wl + l + 1 < cap) {
            memcpy(why + wl, line, l + 1);
            wl += l;
        }
    }
    if (ef)
        fclose(ef);
    unlink(errf);
    if (!o) {
        snprintf(why, cap, "tshark did not run");
        return -1;
    }
    long n = 0;
    for (char *p = o; *p; p++)
        n += *p == '\n';
    free(o);
    *frames = n;
    if (st != 0 && !why[0])
        snprintf(why, cap, "tshark exit status %d", st);
    return st == 0 && !bad_stderr ? 0 : -1;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Runs tshark's follow,tcp,raw on a stream and hands each segment's bytes
 * to fn(node, bytes, n, arg).  The raw form: a header between lines of
 * '=', "Node 0: ..." and "Node 1: ..." lines, then one line of hex per
 * segment, node 1's indented by a tab, and a closing line of '='.
 * Returns 0 or -1. */
static int follow(const char *file, unsigned stream,
                  void (*fn)(int node, const uint8_t *b, size_t n, void *arg), void *arg)
{
    int st;
    char *o = cap_sh(&st, "tshark -n %s -r '%s' -q -z follow,tcp,raw,%u 2>/dev/null",
                     cap_tshark_opts, file, stream);
    if (!o || st != 0) {
        free(o);
        return -1;
    }
    int bars = 0, bad = 0;
    char *save = NULL;
    for (char *line = strtok_r(o, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '=') {
            bars++;
            continue;
        }
        if (bars != 1 || !strncmp(line, "Follow:", 7) || !strncmp(line, "Filter:", 7) ||
            !strncmp(line, "Node ", 5))
            continue;
        int node = line[0] == '\t';
        char *p = line + node;
        uint8_t buf[4096];
        size_t n = 0;
        while (p[0] && p[1]) {
            int hi = hexval(p[0]), lo = hexval(p[1]);
            if (hi < 0 || lo < 0) {
                bad = 1;
                break;
            }
            buf[n++] = (uint8_t)(hi << 4 | lo);
            p += 2;
            if (n == sizeof(buf)) {
                fn(node, buf, n, arg);
                n = 0;
            }
        }
        if (*p)
            bad = 1;
        fn(node, buf, n, arg);
    }
    free(o);
    return bad || bars < 2 ? -1 : 0;
}

typedef struct flow_hash {
    tw__sha256 h[2];
    cap_flow *out;
} flow_hash;

static void hash_seg(int node, const uint8_t *b, size_t n, void *arg)
{
    flow_hash *fh = arg;
    tw__sha256_update(&fh->h[node], b, n);
    fh->out[node].bytes += n;
}

int cap_follow(const char *file, unsigned stream, cap_flow out[2])
{
    flow_hash fh;
    fh.out = out;
    memset(out, 0, 2 * sizeof(*out));
    tw__sha256_init(&fh.h[0]);
    tw__sha256_init(&fh.h[1]);
    int rc = follow(file, stream, hash_seg, &fh);
    for (int i = 0; i < 2; i++) {
        uint8_t d[32];
        tw__sha256_final(&fh.h[i], d);
        tw__sha256_hex(d, out[i].sha);
    }
    return rc;
}

typedef struct flow_bytes {
    int node;
    uint8_t *buf;
    size_t len, cap;
    int oom;
} flow_bytes;

static void keep_seg(int node, const uint8_t *b, size_t n, void *arg)
{
    flow_bytes *fb = arg;
    if (node != fb->node || fb->oom)
        return;
    if (fb->len + n > fb->cap) {
        size_t c = fb->cap ? fb->cap * 2 : 65536;
        while (c < fb->len + n)
            c *= 2;
        uint8_t *nb = realloc(fb->buf, c);
        if (!nb) {
            fb->oom = 1;
            return;
        }
        fb->buf = nb;
        fb->cap = c;
    }
    memcpy(fb->buf + fb->len, b, n);
    fb->len += n;
}

int cap_follow_bytes(const char *file, unsigned stream, int node, uint8_t **out, size_t *len)
{
    flow_bytes fb = {.node = node};
    int rc = follow(file, stream, keep_seg, &fb);
    if (rc || fb.oom) {
        free(fb.buf);
        return -1;
    }
    *out = fb.buf;
    *len = fb.len;
    return 0;
}

void cap_stream_sha(uint64_t seed, uint64_t n, char out[65])
{
    tw__sha256 h;
    tw__sha256_init(&h);
    uint8_t buf[65536];
    for (uint64_t off = 0; off < n;) {
        size_t k = n - off < sizeof(buf) ? (size_t)(n - off) : sizeof(buf);
        tw__stream_fill(seed, off, buf, k);
        tw__sha256_update(&h, buf, k);
        off += k;
    }
    uint8_t d[32];
    tw__sha256_final(&h, d);
    tw__sha256_hex(d, out);
}

tw_tcp_conn *cap_accept_one(tw_tcp_listener *l, uint32_t ip, uint16_t port, void *user)
{
    (void)l, (void)ip, (void)port;
    cap_accept *a = user;
    if (a->have)
        return NULL;
    a->have = 1;
    memset(&a->conn, 0, sizeof(a->conn));
    return &a->conn;
}

void cap_xfer_init(cap_xfer *x, tw_tcp_conn *c, uint64_t tx_seed, uint64_t total)
{
    memset(x, 0, sizeof(*x));
    x->c = c;
    x->tx_seed = tx_seed;
    x->total = total;
    tw__sha256_init(&x->rx_hash);
}

int cap_xfer_pump(cap_xfer *x, uint64_t now_ns)
{
    tw__sha256 *h = &x->rx_hash;
    if (tw_tcp_events(x->c) & TW_TCP_EV_PEER_FIN)
        x->peer_fin = 1;
    const uint8_t *p;
    size_t n;
    while (tw_tcp_recv_peek(x->c, &p, &n) > 0) {
        tw__sha256_update(h, p, n);
        x->rcvd += n;
        tw_tcp_recv_consume(x->c, n);
    }
    tw_tcp_state s = tw_tcp_get_state(x->c);
    if (s != TW_TCP_ESTABLISHED && s != TW_TCP_CLOSE_WAIT)
        return !x->closed && s != TW_TCP_CLOSED;
    uint8_t buf[16384];
    while (x->sent < x->total) {
        size_t k = x->total - x->sent < sizeof(buf) ? (size_t)(x->total - x->sent) : sizeof(buf);
        tw__stream_fill(x->tx_seed, x->sent, buf, k);
        long w = tw_tcp_send(x->c, buf, k, now_ns);
        if (w <= 0)
            break;
        x->sent += (uint64_t)w;
    }
    if (x->sent == x->total && !x->closed) {
        tw_tcp_close(x->c, now_ns);
        x->closed = 1;
    }
    return !x->closed;
}

void cap_xfer_rx_sha(cap_xfer *x, char out[65])
{
    uint8_t d[32];
    tw__sha256 h = x->rx_hash;
    tw__sha256_final(&h, d);
    tw__sha256_hex(d, out);
}

/* ---- frames ------------------------------------------------------------ */

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* Ethernet + IPv4 + TCP (or UDP with proto 17) from src:sp to dst:dp,
 * payload bytes of value fill; returns the frame length. */
uint32_t cap_build_ip(uint8_t *f, uint8_t proto, uint32_t src, uint16_t sp, uint32_t dst,
                         uint16_t dp, uint32_t payload, uint8_t fill)
{
    static const uint8_t macs[12] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
    memcpy(f, macs, 12);
    f[12] = 8;
    f[13] = 0;
    uint8_t *ip = f + 14;
    uint32_t l4len = proto == 6 ? 20 : 8;
    memset(ip, 0, 20);
    ip[0] = 0x45;
    put_be16(ip + 2, (uint16_t)(20 + l4len + payload));
    ip[8] = 64;
    ip[9] = proto;
    for (int i = 0; i < 4; i++) {
        ip[12 + i] = (uint8_t)(src >> (24 - 8 * i));
        ip[16 + i] = (uint8_t)(dst >> (24 - 8 * i));
    }
    uint8_t *l4 = ip + 20;
    memset(l4, 0, l4len);
    put_be16(l4, sp);
    put_be16(l4 + 2, dp);
    if (proto == 6)
        l4[12] = 0x50;
    memset(l4 + l4len, fill, payload);
    return 14 + 20 + l4len + payload;
}

uint32_t cap_build_arp(uint8_t *f)
{
    memset(f, 0, 42);
    memset(f, 0xff, 6);
    f[6] = 2;
    f[12] = 8;
    f[13] = 6;
    return 42;
}

/* ---- scripted port ------------------------------------------------------ */

static unsigned sp_rx(tw_port *p, tw_pkt *pkts, unsigned n)
{
    cap_port *z = (cap_port *)p;
    unsigned k = z->rx_n < n ? z->rx_n : n;
    for (unsigned i = 0; i < k; i++) {
        pkts[i].data = z->mem[i];
        pkts[i].len = z->len[i];
        pkts[i].room = sizeof(z->mem[i]);
        pkts[i].ol_flags = 0;
        pkts[i].cookie = NULL;
    }
    z->rx_n = 0;
    return k;
}

static unsigned sp_tx(tw_port *p, tw_pkt *pkts, unsigned n)
{
    cap_port *z = (cap_port *)p;
    unsigned k = z->tx_take < n ? z->tx_take : n;
    if (z->scribble)
        for (unsigned i = 0; i < k; i++)
            memset(pkts[i].data, 0xee, pkts[i].len);
    z->tx_take -= k;
    return k;
}

static unsigned sp_alloc(tw_port *p, tw_pkt *pkts, unsigned n)
{
    (void)p, (void)pkts, (void)n;
    return 0; /* the tests build their frames in mem themselves */
}
static void sp_free(tw_port *p, tw_pkt *pkts, unsigned n) { (void)p, (void)pkts, (void)n; }
static void sp_close(tw_port *p) { (void)p; }
static const tw_port_ops sp_ops = {.name = "script", .rx_burst = sp_rx, .tx_burst = sp_tx,
                                   .alloc_burst = sp_alloc, .free_burst = sp_free,
                                   .close = sp_close};

void cap_port_init(cap_port *p)
{
    memset(p, 0, sizeof(*p));
    p->base.ops = &sp_ops;
}
