/* What the files of `tickwire exchange` share: the parsed command line and
 * the userspace-stack loop. */
#ifndef TW_TOOLS_XCHG_CLI_H
#define TW_TOOLS_XCHG_CLI_H

#include <signal.h>
#include <stdint.h>

#include "tickwire/capture.h"
#include "tickwire/exchange.h"

typedef struct xcli_opts {
    const char *host;     /* --listen HOST (kernel TCP) */
    uint16_t port;        /* --listen PORT (0: any, printed) */
    const char *port_spec; /* --port SPEC: the userspace stack */
    const char *ip, *mac; /* --ip, --mac with --port */
    int busy;             /* --busy: poll without sleeping (either transport) */
    int quiet;            /* --quiet: no event lines on stderr */
    unsigned max_conns;
    const char *pcap;     /* --pcap SPEC with --port: capture the port's frames */
    tw_capture_config cc; /* --pcap, parsed */
} xcli_opts;

/* Set by SIGTERM/SIGINT: 1 asks for a clean stop, 2 or more to quit now. */
extern volatile sig_atomic_t tw__xcli_signals;

/* Serves the venue over the userspace stack on o->port_spec with o->ip
 * until it is done (or signalled twice); kernel TCP is the library's
 * (tw_xchg_tcp_run). */
int tw__xcli_run_stack(tw_xchg *x, const xcli_opts *o);

#endif
