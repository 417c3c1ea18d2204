/* The real-peer topology of netstack.md, made and removed by each test or
 * benchmark run:
 *
 *   [this stack] --port-- <host>  <==veth==>  <peer> (netns <ns>) -- Linux TCP
 *
 * <host> stays in our namespace with no address (or the host kernel would
 * answer the peer's SYN-ACK with RST); <peer> gets TW_NETENV_PEER_IP/24 in the
 * namespace; the stack uses TW_NETENV_STACK_IP, which no kernel owns.  Names
 * carry our pid and an index (tw<pid>x<k>a/b, twpeer<pid>x<k>) so that
 * concurrent runs never collide; everything is removed at exit, on a fatal
 * signal, and stale ones of dead processes are removed at setup. */
#ifndef TW_TOOLS_NETENV_H
#define TW_TOOLS_NETENV_H

#include <stdint.h>
#include <sys/types.h>

#define TW_NETENV_PEER_IP "10.99.0.1"
#define TW_NETENV_STACK_IP "10.99.0.2"
#define TW_NETENV_CLIENT_IP "10.99.0.3" /* kernel client of the baseline (with_ns 2) */
#define TW_NETENV_PEER_IP_BE 0x0a630001u  /* host order value of 10.99.0.1 */
#define TW_NETENV_STACK_IP_BE 0x0a630002u /* host order value of 10.99.0.2 */
#define TW_NETENV_SKIP 77

typedef struct tw__netenv {
    char ns[32];   /* namespace of the peer end ("" when both ends are ours) */
    char ns2[32];  /* with_ns 2: namespace of our end too (kernel baseline) */
    char host[16]; /* our end of the veth pair */
    char peer[16]; /* the other end */
    uint8_t host_mac[6], peer_mac[6];
    int active;
} tw__netenv;

/* Creates the topology.  with_ns: 1 = the peer end goes into a new netns
 * with TW_NETENV_PEER_IP; 0 = both ends stay here without addresses (for the
 * stack on both ends); 2 = as 1, and our end goes into a second namespace
 * with TW_NETENV_CLIENT_IP (kernel to kernel).  Returns 0, TW_NETENV_SKIP
 * after printing why (not root, no netns/veth support), or a negative
 * errno-style code after printing what failed.  e is the caller's, and
 * must stay valid until tw__netenv_teardown (the exit hooks hold it). */
int tw__netenv_setup(tw__netenv *e, int with_ns);

/* As tw__netenv_setup, with peer_ip ("a.b.c.d") instead of TW_NETENV_PEER_IP
 * on the peer end (with_ns 1 or 2): the relay topology puts two kernels of
 * one subnet at the far ends of two pairs. */
int tw__netenv_setup_ip(tw__netenv *e, int with_ns, const char *peer_ip);

/* Removes the topology (idempotent; also run at exit and on signals). */
void tw__netenv_teardown(tw__netenv *e);

/* Runs a shell command; returns its exit status (>= 0), or -E2BIG when the
 * command is too long, -ECHILD when it did not exit normally.  quiet: 1
 * sends its output to /dev/null. */
int tw__netenv_sh(int quiet, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Starts argv inside the peer namespace (ip netns exec; in ours when e->ns
 * is empty) with stdout going to out_fd if >= 0; returns the pid, or a
 * negative errno-style code when fork failed. */
pid_t tw__netenv_spawn(const tw__netenv *e, char *const argv[], int out_fd);

/* Waits for pid with a timeout; kills it (SIGKILL) when it runs over.
 * Returns its exit status, 128+signal if it died by one, or a negative
 * errno-style code when waitpid failed. */
int tw__netenv_wait(pid_t pid, double timeout_s);

/* Applies a tc qdisc spec to the peer end ("netem loss 2% ..."), or
 * removes it (spec NULL).  Returns 0 or -EIO (tc refused). */
int tw__netenv_qdisc(const tw__netenv *e, const char *spec);

#endif
