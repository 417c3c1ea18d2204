/* The port backend modules: the backends that need DPDK or libxdp/libbpf
 * are built as their own shared objects (libtickwire-port-dpdk.so,
 * libtickwire-port-xdp.so) and loaded with dlopen on first use, so that
 * libtickwire and the programs built on it load neither library until a
 * port of that kind is opened (port_module.c holds the loader). */
#ifndef TW_NET_PORT_MODULE_H
#define TW_NET_PORT_MODULE_H

#include "tickwire/common.h"

/* TW_MODULE_QUICKFIX: `tickwire bench fix`'s QuickFIX side
 * (libtickwire-bench-quickfix.so), loaded the same way. */
enum tw_port_module { TW_MODULE_DPDK, TW_MODULE_XDP, TW_MODULE_QUICKFIX, TW_MODULE_COUNT };

/* The address of symbol in module m, loading the module on first use
 * (thread-safe).  The module is looked for in $TICKWIRE_MODULE_DIR only
 * when that is set, else beside the object that holds this loader (libtickwire.so, or a program
 * linked with libtickwire.a), then in the library directory relative to a
 * program's bin directory, then in the build tree it was built in.  NULL
 * with err naming the module, where it was looked for and the Debian
 * package to install when it is missing or cannot be loaded. */
void *tw__port_module_symbol(enum tw_port_module m, const char *symbol, tw_error *err);

#endif
