/* What the capture tests share: loading a pcapng file back with the
 * library's reader (capture.h) into a list of packets, and running tshark
 * / tcpdump on it (skipping with exit 77 where they are not installed). */
#ifndef TW_TESTS_CAPCHECK_H
#define TW_TESTS_CAPCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "common/sha256.h"
#include "tickwire/capture.h"
#include "tickwire/net.h"

#define CAP_SKIP 77

typedef struct cap_pkt {
    uint32_t iface, cap_len, orig_len, dir;
    uint64_t ts; /* ns since the epoch */
    const uint8_t *data;
} cap_pkt;

typedef struct cap_file {
    uint8_t *bytes;
    size_t len;
    size_t whole;   /* bytes in whole blocks from the start */
    int malformed;  /* a block that is bad (not merely cut short) */
    int first_shb;  /* the file starts with a Section Header Block */
    unsigned n_shb, n_idb, n_isb, n_other;
    char idb_name[TW_CAPTURE_MAX_IFACES][TW_CAPTURE_NAME_MAX];
    unsigned idb_tsresol[TW_CAPTURE_MAX_IFACES];
    uint32_t idb_snap[TW_CAPTURE_MAX_IFACES];
    /* From the last Interface Statistics Block of each interface. */
    uint64_t isb_recv[TW_CAPTURE_MAX_IFACES], isb_drop[TW_CAPTURE_MAX_IFACES];
    uint64_t isb_accept[TW_CAPTURE_MAX_IFACES], isb_deliv[TW_CAPTURE_MAX_IFACES];
    cap_pkt *pkts;
    size_t n_pkts;
} cap_file;

/* Loads and walks path.  Returns 0 (see malformed / whole for what it
 * found), or a negative errno when the file cannot be read. */
int cap_load(const char *path, cap_file *f);
void cap_free(cap_file *f);

/* The order checks of a capture of our_ip's port (host order): *bad_dir
 * = IPv4 frames whose direction disagrees with their source address (from
 * our_ip = outbound), *back = frames stamped before the one before them
 * in the same direction. */
void cap_check_order(const cap_file *f, uint32_t our_ip, size_t *bad_dir, size_t *back);

/* 0 when tshark (and tcpdump, if need_tcpdump) can run, else CAP_SKIP
 * after one line saying what is missing. */
int cap_need_tools(const char *test, int need_tcpdump);

/* Runs a shell command (printf-style) and returns what it wrote on stdout
 * (malloc'd, NUL-terminated; NULL if it could not run); *status gets its
 * exit status (-1 if it did not exit normally). */
char *cap_sh(int *status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Options every tshark run here gets (capcheck's and the tests' own):
 * say "-d tcp.port==P,data" so that the random payload of a transfer on
 * port P is not taken for some protocol registered on P (5000 is GSM
 * over IP's) and reported malformed.  Default "". */
extern char cap_tshark_opts[256];

/* tshark -r file: 0 when tshark read it with exit status 0 and nothing on
 * stderr, *frames = the frames it printed; else -1 with why (its
 * stderr) in why. */
int cap_tshark_read(const char *file, long *frames, char *why, size_t cap);

/* One direction of a followed TCP stream. */
typedef struct cap_flow {
    uint64_t bytes;
    char sha[65];
} cap_flow;

/* tshark -q -z follow,tcp,raw,STREAM: the bytes each node sent, as
 * SHA-256 (node 0 = the one that sent the stream's first segment: the
 * connecting side).  Returns 0 or -1 (tshark failed or printed something
 * that does not parse). */
int cap_follow(const char *file, unsigned stream, cap_flow out[2]);

/* The bytes node (0 or 1) sent on a followed TCP stream, malloc'd into
 * *out (*len of them).  Returns 0 or -1 (tshark failed or its output does
 * not parse). */
int cap_follow_bytes(const char *file, unsigned stream, int node, uint8_t **out, size_t *len);

/* SHA-256 hex of bytes [0, n) of the deterministic stream seed
 * (tools/common/sha256.h). */
void cap_stream_sha(uint64_t seed, uint64_t n, char out[65]);

/* Test frames: Ethernet + IPv4 + TCP (proto 6: 20-byte header, data
 * offset 5) or UDP (17) from src:sp to dst:dp (host order) with payload
 * bytes of value fill, checksums left 0; an ARP request (42 bytes).
 * Return the frame length (f needs 54 + payload bytes). */
uint32_t cap_build_ip(uint8_t *f, uint8_t proto, uint32_t src, uint16_t sp, uint32_t dst,
                      uint16_t dp, uint32_t payload, uint8_t fill);
uint32_t cap_build_arp(uint8_t *f);

/* A scripted port backend for the hook's tests: rx_burst hands out
 * mem[0 .. rx_n) (len[] bytes each), tx_burst takes the first tx_take
 * frames offered (and counts them off tx_take), overwriting what it took
 * when scribble is set (the capture must have copied it before). */
typedef struct cap_port {
    tw_port base;
    uint8_t mem[64][2048];
    uint32_t len[64];
    unsigned rx_n, tx_take;
    int scribble;
} cap_port;
void cap_port_init(cap_port *p);

/* A listener's accept callback taking one connection into a cap_accept
 * (user = the cap_accept; have says whether it came). */
typedef struct cap_accept {
    tw_tcp_conn conn;
    int have;
} cap_accept;
tw_tcp_conn *cap_accept_one(tw_tcp_listener *l, uint32_t ip, uint16_t port, void *user);

/* One end of a bulk transfer over the stack: sends `total` bytes of the
 * deterministic stream tx_seed, hashes what it receives, closes its side
 * once everything is sent. */
typedef struct cap_xfer {
    tw_tcp_conn *c;
    uint64_t tx_seed, total, sent, rcvd;
    int closed, peer_fin;
    tw__sha256 rx_hash;
} cap_xfer;

void cap_xfer_init(cap_xfer *x, tw_tcp_conn *c, uint64_t tx_seed, uint64_t total);
/* Moves what it can at now_ns; returns 1 while there is work left for
 * this end (bytes to send, or its close not yet sent). */
int cap_xfer_pump(cap_xfer *x, uint64_t now_ns);
/* SHA-256 hex of what x received. */
void cap_xfer_rx_sha(cap_xfer *x, char out[65]);

#endif
