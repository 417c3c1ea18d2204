/* Kernels by name: the built-ins, plug-ins loaded with dlopen, and the
 * loader's checks of a definition (docs/kernel.md "Loader rules"). */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernel/kbook.h"
#include "kernel/kernel_internal.h"

static const tw_kernel_def *const builtins[] = {&tw__hma_sar_def, &tw__zscore_def};

size_t tw_kernel_builtin_count(void) { return TW_ARRAY_SIZE(builtins); }

const tw_kernel_def *tw_kernel_builtin(size_t i)
{
    return i < TW_ARRAY_SIZE(builtins) ? builtins[i] : NULL;
}

size_t tw__kernel_state_limit(const tw_kernel_def *def)
{
    if (def == &tw__hma_sar_def)
        return sizeof(double) * (3 * (size_t)TW_WINDOW_MAX + 32);
    return TW_KERNEL_MAX_STATE_BYTES;
}

/* [A-Za-z_][A-Za-z0-9_]*, 1..63 bytes. */
static int ident_ok(const char *s)
{
    if (!s)
        return 0;
    size_t i = 0;
    for (; s[i] && i < 64; i++) {
        char c = s[i];
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
            return 0;
    }
    return i >= 1 && i <= 63;
}

/* The aligned scratch state for a check (16-byte aligned, as promised). */
static void *state_alloc(size_t bytes)
{
    size_t b = (bytes + 63) & ~(size_t)63;
    return aligned_alloc(64, b ? b : 64);
}

int tw__kernel_check_bounds(const tw_kernel_def *def, const double *p, size_t *bytes,
                            tw_error *err)
{
    const char *kn = def->name;
    for (uint32_t i = 0; i < def->n_params; i++) {
        const tw_kparam *q = &def->params[i];
        double v = p[i];
        if (!isfinite(v))
            return tw__err(err, -EINVAL, "kernel %s: param %s = %g is not finite", kn, q->name, v);
        if (v < q->lo || v > q->hi)
            return tw__err(err, -EINVAL, "kernel %s: param %s = %.17g outside [%.17g, %.17g]", kn,
                           q->name, v, q->lo, q->hi);
        if (q->integer && v != floor(v))
            return tw__err(err, -EINVAL, "kernel %s: param %s = %.17g is not an integer", kn,
                           q->name, v);
    }
    size_t sb = def->state_bytes(p);
    if (sb == 0 || sb > tw__kernel_state_limit(def))
        return tw__err(err, -EINVAL, "kernel %s: state of %zu bytes for this combo (1..%zu)", kn,
                       sb, tw__kernel_state_limit(def));
    if (bytes)
        *bytes = sb;
    return 0;
}

int tw_kernel_check_combo(const tw_kernel_def *def, const double *p, tw_error *err)
{
    size_t sb;
    int rc = tw__kernel_check_bounds(def, p, &sb, err);
    if (rc)
        return rc;
    void *st = state_alloc(sb);
    if (!st)
        return tw__err(err, -ENOMEM, "kernel %s: out of memory for a state of %zu bytes",
                       def->name, sb);
    rc = def->init(st, p);
    free(st);
    if (rc)
        return tw__err(err, -EINVAL, "kernel %s: init refuses the combo (%s)", def->name,
                       rc == -EINVAL ? "invalid combination of params" : "error");
    return 0;
}

int tw_kernel_param_index(const tw_kernel_def *def, const char *name)
{
    if (!def || !name)
        return -1;
    for (uint32_t i = 0; i < def->n_params; i++)
        if (def->params[i].name && strcmp(def->params[i].name, name) == 0)
            return (int)i;
    return -1;
}

int tw_kernel_check_def(const tw_kernel_def *def, tw_error *err)
{
    if (!def)
        return tw__err(err, -TW_EBADKERNEL, "no kernel definition (NULL)");
    if (def->abi != TW_KERNEL_ABI)
        return tw__err(err, -TW_EBADKERNEL, "kernel ABI %u, this host takes ABI %d", def->abi,
                       TW_KERNEL_ABI);
    if (!ident_ok(def->name))
        return tw__err(err, -TW_EBADKERNEL,
                       "kernel name missing or not [A-Za-z_][A-Za-z0-9_]* of at most 63 bytes");
    const char *kn = def->name;
    if (def->n_params == 0 || def->n_params > TW_KERNEL_MAX_PARAMS)
        return tw__err(err, -TW_EBADKERNEL, "kernel %s: %u params (1..%d)", kn, def->n_params,
                       TW_KERNEL_MAX_PARAMS);
    if (!def->params)
        return tw__err(err, -TW_EBADKERNEL, "kernel %s: no params array", kn);
    double dflt[TW_KERNEL_MAX_PARAMS];
    for (uint32_t i = 0; i < def->n_params; i++) {
        const tw_kparam *q = &def->params[i];
        if (!ident_ok(q->name))
            return tw__err(err, -TW_EBADKERNEL,
                           "kernel %s: param %u has no name or one that is not an identifier", kn,
                           i);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(def->params[j].name, q->name) == 0)
                return tw__err(err, -TW_EBADKERNEL, "kernel %s: param %s named twice", kn,
                               q->name);
        if (!isfinite(q->lo) || !isfinite(q->hi))
            return tw__err(err, -TW_EBADKERNEL, "kernel %s: param %s: bounds not finite", kn,
                           q->name);
        if (q->lo > q->hi)
            return tw__err(err, -TW_EBADKERNEL, "kernel %s: param %s: lo %g > hi %g", kn,
                           q->name, q->lo, q->hi);
        if (!isfinite(q->dflt) || q->dflt < q->lo || q->dflt > q->hi)
            return tw__err(err, -TW_EBADKERNEL, "kernel %s: param %s: default %g outside [%g, %g]",
                           kn, q->name, q->dflt, q->lo, q->hi);
        if (q->integer && q->dflt != floor(q->dflt))
            return tw__err(err, -TW_EBADKERNEL,
                           "kernel %s: param %s: integer param with default %g", kn, q->name,
                           q->dflt);
        dflt[i] = q->dflt;
    }
    if (!def->state_bytes || !def->init || !def->step)
        return tw__err(err, -TW_EBADKERNEL, "kernel %s: no %s function", kn,
                       !def->state_bytes ? "state_bytes" : !def->init ? "init" : "step");
    size_t sb = def->state_bytes(dflt);
    if (sb == 0 || sb > tw__kernel_state_limit(def))
        return tw__err(err, -TW_EBADKERNEL,
                       "kernel %s: state_bytes of the defaults is %zu (1..%zu)", kn, sb,
                       tw__kernel_state_limit(def));
    void *st = state_alloc(sb);
    if (!st)
        return tw__err(err, -ENOMEM, "kernel %s: out of memory", kn);
    int rc = def->init(st, dflt);
    free(st);
    if (rc)
        return tw__err(err, -TW_EBADKERNEL, "kernel %s: init refuses the defaults (%d)", kn, rc);
    return 0;
}

/* ---- the determinism probe ------------------------------------------------ */

#define PROBE_BARS 10000

/* 10,000 closes of the generator (fixed seed) with gaps: every 97th bar,
 * a run of 40 at bar 3000 and the last bar. */
static void probe_series(double *c)
{
    tw_gen_closes(c, PROBE_BARS, 0x70726f6265ULL, 0.002);
    for (size_t i = 0; i < PROBE_BARS; i++)
        if (i % 97 == 13 || (i >= 3000 && i < 3040) || i == PROBE_BARS - 1)
            c[i] = NAN;
}

static int probe_run(const tw_kernel_def *def, const double *p, void *st, size_t sb, int fill,
                     const double *c, int8_t *pos, tw_error *err)
{
    memset(st, fill, sb);
    if (def->init(st, p))
        return tw__err(err, -TW_EBADKERNEL, "kernel %s: init refuses the defaults", def->name);
    for (size_t i = 0; i < PROBE_BARS; i++) {
        int t = def->step(st, c[i]);
        if (t < -1 || t > 1)
            return tw__err(err, -TW_EBADKERNEL,
                           "kernel %s: step returned %d at probe bar %zu (-1, 0 or +1 only)",
                           def->name, t, i);
        pos[i] = (int8_t)t;
    }
    return 0;
}

int tw_kernel_probe(const tw_kernel_def *def, tw_error *err)
{
    int rc = tw_kernel_check_def(def, err);
    if (rc)
        return rc;
    double p[TW_KERNEL_MAX_PARAMS];
    for (uint32_t i = 0; i < def->n_params; i++)
        p[i] = def->params[i].dflt;
    size_t sb = def->state_bytes(p);
    double *c = malloc(PROBE_BARS * sizeof(double));
    int8_t *pa = malloc(2 * PROBE_BARS);
    void *sa = state_alloc(sb), *sbuf = state_alloc(sb);
    if (!c || !pa || !sa || !sbuf) {
        rc = tw__err(err, -ENOMEM, "kernel %s: out of memory for the probe", def->name);
        goto out;
    }
    probe_series(c);
    rc = probe_run(def, p, sa, sb, 0x00, c, pa, err);
    if (rc == 0)
        rc = probe_run(def, p, sbuf, sb, 0xa5, c, pa + PROBE_BARS, err);
    for (size_t i = 0; rc == 0 && i < PROBE_BARS; i++)
        if (pa[i] != pa[PROBE_BARS + i])
            rc = tw__err(err, -TW_EBADKERNEL,
                         "kernel %s: step is not deterministic: two runs over the probe series "
                         "differ at bar %zu (%d, then %d)",
                         def->name, i, pa[i], pa[PROBE_BARS + i]);
out:
    free(c);
    free(pa);
    free(sa);
    free(sbuf);
    return rc;
}

/* ---- plug-ins ---------------------------------------------------------------- */

struct loaded {
    struct loaded *next;
    void *handle;
    const tw_kernel_def *def;
    char path[];
};

static pthread_mutex_t loaded_mu = PTHREAD_MUTEX_INITIALIZER;
static struct loaded *loaded_list;

static int is_path(const char *s)
{
    size_t n = strlen(s);
    return strchr(s, '/') != NULL || (n >= 3 && strcmp(s + n - 3, ".so") == 0);
}

/* Opens, checks and probes one plug-in; the caller holds loaded_mu. */
static int load_plugin(const char *shown, const char *real, const tw_kernel_def **out,
                       tw_error *err)
{
    tw_error e;
    dlerror();
    void *h = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return tw__err(err, -TW_EBADKERNEL, "kernel %s: not a loadable shared object (%s)", shown,
                       why ? why : "dlopen failed");
    }
    tw_kernel_entry_fn entry;
    void *sym = dlsym(h, "tw_kernel_entry");
    memcpy(&entry, &sym, sizeof(entry));
    if (!sym) {
        dlclose(h);
        return tw__err(err, -TW_EBADKERNEL, "kernel %s: no symbol tw_kernel_entry", shown);
    }
    const tw_kernel_def *def = entry();
    int rc = tw_kernel_probe(def, &e);
    if (rc) {
        dlclose(h);
        return tw__err(err, rc, "kernel %s: %s", shown, e.msg);
    }
    size_t len = strlen(real);
    struct loaded *l = malloc(sizeof(*l) + len + 1);
    if (!l) {
        dlclose(h);
        return tw__err(err, -ENOMEM, "kernel %s: out of memory", shown);
    }
    l->handle = h;
    l->def = def;
    memcpy(l->path, real, len + 1);
    l->next = loaded_list;
    loaded_list = l;
    *out = def;
    return 0;
}

int tw_kernel_find(const char *name, const tw_kernel_def **def, tw_error *err)
{
    if (!name || !*name || !def)
        return tw__err(err, -EINVAL, "no kernel named");
    for (size_t i = 0; i < TW_ARRAY_SIZE(builtins); i++)
        if (strcmp(builtins[i]->name, name) == 0) {
            *def = builtins[i];
            return 0;
        }
    if (!is_path(name))
        return tw__err(err, -ENOENT,
                       "no kernel named %s (built-ins: hma_sar, zscore; a plug-in is a path to "
                       "a .so)",
                       name);
    char real[PATH_MAX];
    struct stat sb;
    if (!realpath(name, real) || stat(real, &sb) != 0)
        return tw__err(err, -ENOENT, "kernel %s: %s", name, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return tw__err(err, -TW_EBADKERNEL, "kernel %s: not a regular file", name);
    pthread_mutex_lock(&loaded_mu);
    int rc = 0;
    struct loaded *l = loaded_list;
    while (l && strcmp(l->path, real) != 0)
        l = l->next;
    if (l)
        *def = l->def;
    else
        rc = load_plugin(name, real, def, err);
    pthread_mutex_unlock(&loaded_mu);
    return rc;
}

int tw_kernel_default_grid(const tw_kernel_def *def, double **params, size_t *n_combos,
                           tw_error *err)
{
    size_t n = 0;
    const double *g = def->default_grid ? def->default_grid(&n) : NULL;
    if (!g || n == 0)
        return tw__err(err, -ENOENT, "kernel %s has no default grid: give one (--grid)",
                       def->name);
    double *p = malloc(n * def->n_params * sizeof(double));
    if (!p)
        return tw__err(err, -ENOMEM, "kernel %s: out of memory", def->name);
    memcpy(p, g, n * def->n_params * sizeof(double));
    *params = p;
    *n_combos = n;
    return 0;
}
