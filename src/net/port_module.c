/* Loader of the port backend modules: see port_module.h.
 *
 * A module leaves the few host functions it calls (tw__err, tw__port_leak,
 * tw__port_check_held) undefined and takes them from the process: a
 * program linked with libtickwire.a exports them (--dynamic-list, set by
 * cmake/tw.cmake), and libtickwire.so, which may have been loaded
 * RTLD_LOCAL (Python's ctypes does), is made global before the module is
 * opened. */
#include "net/port_module.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tickwire/port.h"

#ifndef TW_MODULE_RELDIR
#define TW_MODULE_RELDIR "../lib"
#endif

static const struct {
    const char *file;  /* the shared object */
    const char *what;  /* what it carries */
    const char *debian; /* what to install when its libraries are missing */
} modules[TW_MODULE_COUNT] = {
    [TW_MODULE_DPDK] = {"libtickwire-port-dpdk.so", "the DPDK port",
                        "the Debian package dpdk (its librte-* libraries; libdpdk-dev to build)"},
    [TW_MODULE_XDP] = {"libtickwire-port-xdp.so", "the AF_XDP port",
                       "the Debian packages libxdp1 and libbpf1 (libxdp-dev libbpf-dev to build)"},
    [TW_MODULE_QUICKFIX] = {"libtickwire-bench-quickfix.so", "the QuickFIX comparison",
                            "the Debian package libquickfix17 (libquickfix-dev to build)"},
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *handles[TW_MODULE_COUNT];

/* The directory of the object holding this function, in dir. */
static int own_dir(char *dir, size_t cap)
{
    Dl_info info;
    if (!dladdr((void *)own_dir, &info) || !info.dli_fname || !info.dli_fname[0])
        return -1;
    char path[PATH_MAX];
    const char *f = info.dli_fname;
    if (!strchr(f, '/')) { /* the main program, named without a path */
        ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
        if (n <= 0)
            return -1;
        path[n] = 0;
        f = path;
    }
    const char *slash = strrchr(f, '/');
    int n = snprintf(dir, cap, "%.*s", (int)(slash - f), f);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* Makes libtickwire.so (when that is where this loader lives) global, so
 * that the module's undefined host functions resolve to it. */
static void make_host_global(void)
{
    Dl_info info;
    if (dladdr((void *)make_host_global, &info) && info.dli_fname &&
        strstr(info.dli_fname, "libtickwire")) {
        void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
        if (h)
            dlclose(h); /* the object stays: it was loaded before */
    }
}

static void *open_module(enum tw_port_module m, tw_error *err)
{
    const char *file = modules[m].file;
    char dirs[4][PATH_MAX];
    int nd = 0;
    const char *env = getenv("TICKWIRE_MODULE_DIR");
    if (env && *env) /* the override is the only place looked in */
        snprintf(dirs[nd++], PATH_MAX, "%s", env);
    char own[PATH_MAX];
    if (nd == 0 && own_dir(own, sizeof(own)) == 0) {
        snprintf(dirs[nd++], PATH_MAX, "%s", own);
        snprintf(dirs[nd++], PATH_MAX, "%.*s/%s", PATH_MAX / 2, own, TW_MODULE_RELDIR);
    }
#ifdef TW_MODULE_BUILD_DIR
    if (!(env && *env))
        snprintf(dirs[nd++], PATH_MAX, "%s", TW_MODULE_BUILD_DIR);
#endif
    make_host_global();
    char searched[1024] = "";
    size_t used = 0;
    for (int i = 0; i < nd; i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof(path), "%.*s/%s", PATH_MAX - 1, dirs[i], file);
        if (access(path, F_OK) != 0) {
            int w = snprintf(searched + used, sizeof(searched) - used, "%s%s", used ? ", " : "",
                             dirs[i]);
            if (w > 0 && (size_t)w < sizeof(searched) - used)
                used += (size_t)w;
            continue;
        }
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
        const char *why = dlerror();
        tw__err(err, -ENOENT, "%s: cannot load %s (%s): install %s", modules[m].what, path,
                why ? why : "dlopen failed", modules[m].debian);
        return NULL;
    }
    tw__err(err, -ENOENT,
            "%s: %s not found (looked in %s; TICKWIRE_MODULE_DIR names another directory): "
            "reinstall tickwire, or install %s and rebuild",
            modules[m].what, file, used ? searched : "nowhere", modules[m].debian);
    return NULL;
}

void *tw__port_module_symbol(enum tw_port_module m, const char *symbol, tw_error *err)
{
    if ((unsigned)m >= TW_MODULE_COUNT) {
        tw__err(err, -EINVAL, "no port module %d", (int)m);
        return NULL;
    }
    pthread_mutex_lock(&lock);
    if (!handles[m])
        handles[m] = open_module(m, err);
    void *h = handles[m];
    pthread_mutex_unlock(&lock);
    if (!h)
        return NULL;
    void *f = dlsym(h, symbol);
    if (!f)
        tw__err(err, -ENOENT, "%s: %s has no symbol %s (a module from another version?)",
                modules[m].what, modules[m].file, symbol);
    return f;
}

/* The public open functions (port.h) of the module backends. */
#ifdef TW_HAVE_AF_XDP
int tw_port_af_xdp_open(tw_port **out, const char *ifname, unsigned queue_id, unsigned frames,
                        tw_error *err)
{
    typedef int (*open_fn)(tw_port **, const char *, unsigned, unsigned, tw_error *);
    open_fn f = (open_fn)tw__port_module_symbol(TW_MODULE_XDP, "tw__port_af_xdp_module_open", err);
    return f ? f(out, ifname, queue_id, frames, err) : -ENOENT;
}
#endif

#ifdef TW_HAVE_DPDK
int tw_port_dpdk_open(tw_port **out, const char *eal_args, uint16_t port_id, unsigned mbufs,
                      tw_error *err)
{
    typedef int (*open_fn)(tw_port **, const char *, uint16_t, unsigned, tw_error *);
    open_fn f = (open_fn)tw__port_module_symbol(TW_MODULE_DPDK, "tw__port_dpdk_module_open", err);
    return f ? f(out, eal_args, port_id, mbufs, err) : -ENOENT;
}
#endif
