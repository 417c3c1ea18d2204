/* tickwire sweep --kernel NAME|PATH.so, and tickwire kernels: any kernel
 * by name (docs/kernel.md "Kernels as plug-ins"). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/cli_kernel.h"
#include "tickwire/clock.h"
#include "tickwire/decimal.h"

int tw__cli_kernels(int argc, char **argv);

/* ---- the trade log of any kernel ---------------------------------------- */

/* Per combo its closed trades, in bar order (one combo's calls never
 * overlap; different combos' calls may, and touch different entries). */
struct klog {
    tw_trade *t;
    size_t n, cap;
    int oom;
};

static void on_ktrade(void *ctx, const tw_trade *t)
{
    struct klog *l = (struct klog *)ctx + t->combo;
    if (l->oom)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        tw_trade *nt = realloc(l->t, cap * sizeof(tw_trade));
        if (!nt) {
            l->oom = 1;
            return;
        }
        l->t = nt;
        l->cap = cap;
    }
    l->t[l->n++] = *t;
}

static int write_ktrades(const char *path, const struct klog *log, const tw_kresult *res,
                         size_t k, double fee)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "tickwire sweep: %s: %s\n", path, strerror(errno));
        return -1;
    }
    fputs("combo,side,entry_bar,entry_price,exit_bar,exit_price,r\n", f);
    char ep[TW_DECIMAL_MAX], xp[TW_DECIMAL_MAX], rs[TW_DECIMAL_MAX];
    for (size_t c = 0; c < k; c++) {
        double sum = 0.0;
        for (size_t i = 0; i < log[c].n; i++) {
            const tw_trade *t = &log[c].t[i];
            sum = sum + (t->r - fee);
            tw_double_to_decimal(t->entry_price, ep);
            tw_double_to_decimal(t->exit_price, xp);
            tw_double_to_decimal(t->r, rs);
            fprintf(f, "%zu,%d,%lld,%s,%lld,%s,%s\n", c, t->side, (long long)t->entry_bar, ep,
                    (long long)t->exit_bar, xp, rs);
        }
        /* The log adds up to the sweep's own totals, bit for bit. */
        TW_VERIFY((int64_t)log[c].n == res[c].trades &&
                  memcmp(&sum, &res[c].pnl, sizeof(sum)) == 0);
        if (res[c].open.side) {
            tw_double_to_decimal(res[c].open.entry_price, ep);
            fprintf(f, "%zu,%d,%lld,%s,,,\n", c, res[c].open.side,
                    (long long)res[c].open.entry_bar, ep);
        }
    }
    int bad = fflush(f) != 0 || ferror(f);
    bad |= fclose(f) != 0;
    if (bad) {
        fprintf(stderr, "tickwire sweep: %s: write error\n", path);
        return -1;
    }
    return 0;
}

/* Loads a kernel for a subcommand: 0, or -1 after printing why. */
static int find_kernel(const char *cmd, const char *name, const tw_kernel_def **def)
{
    tw_error err;
    if (tw_kernel_find(name, def, &err)) {
        fprintf(stderr, "tickwire %s: %s\n", cmd, err.msg);
        return -1;
    }
    return 0;
}

int tw__cli_sweep_named(const struct tw__ksweep_args *a)
{
    const tw_kernel_def *def;
    if (find_kernel("sweep", a->kernel, &def)) {
        /* An unknown name is a bad option value; a plug-in's file, an error. */
        size_t kl = strlen(a->kernel);
        int path = strchr(a->kernel, '/') || (kl >= 3 && !strcmp(a->kernel + kl - 3, ".so"));
        return path ? 1 : 2;
    }
    double *close = NULL, *params = NULL;
    size_t n = 0, k = 0;
    tw_kresult *res = NULL;
    struct klog *log = NULL;
    FILE *out = NULL;
    int ret = 1;
    tw_error err;
    if (tw__cli_load_closes("sweep", a->data, a->column, a->synthetic, a->seed, a->sigma, &close,
                            &n))
        goto done;
    int rc = a->grid ? tw_read_kgrid(a->grid, def, &params, &k, &err)
                     : tw_kernel_default_grid(def, &params, &k, &err);
    if (rc) {
        fprintf(stderr, "tickwire sweep: %s%s\n", a->grid ? "grid " : "", err.msg);
        goto done;
    }
    res = calloc(k, sizeof(*res));
    if (a->trades_path)
        log = calloc(k, sizeof(*log));
    if (!res || (a->trades_path && !log)) {
        fprintf(stderr, "tickwire sweep: out of memory\n");
        goto done;
    }
    tw_ksweep_opts o;
    tw_ksweep_opts_init(&o);
    o.threads = a->threads;
    o.fee = a->fee;
    o.generic = a->generic;
    double t0 = (1e-9 * (double)tw_clock_now_ns());
    rc = tw_ksweep(def, close, n, params, k, &o, res, log ? on_ktrade : NULL, log, &err);
    double secs = (1e-9 * (double)tw_clock_now_ns()) - t0;
    if (rc) {
        fprintf(stderr, "tickwire sweep: %s%s%s\n", a->data ? a->data : "", a->data ? ": " : "",
                err.msg);
        goto done;
    }
    for (size_t c = 0; log && c < k; c++)
        if (log[c].oom) {
            fprintf(stderr, "tickwire sweep: out of memory for the trade log\n");
            goto done;
        }
    size_t stopped = 0;
    for (size_t c = 0; c < k; c++)
        stopped += res[c].stopped != 0;
    out = a->output ? fopen(a->output, "w") : stdout;
    if (!out) {
        fprintf(stderr, "tickwire sweep: %s: %s\n", a->output, strerror(errno));
        goto done;
    }
    const uint32_t np = def->n_params;
    if (!a->json) {
        fputs("combo", out);
        for (uint32_t j = 0; j < np; j++)
            fprintf(out, ",%s", def->params[j].name);
        fputs(",pnl,trades", out);
        if (a->stats)
            fputs(",wins,max_drawdown,exposure,final_position", out);
        fputc('\n', out);
        for (size_t c = 0; c < k; c++) {
            fprintf(out, "%zu", c);
            for (uint32_t j = 0; j < np; j++)
                fprintf(out, ",%.17g", params[c * np + j]);
            fprintf(out, ",%.17g,%lld", res[c].pnl, (long long)res[c].trades);
            if (a->stats)
                fprintf(out, ",%lld,%.17g,%.17g,%d", (long long)res[c].wins,
                        res[c].max_drawdown, res[c].exposure, res[c].open.side);
            fputc('\n', out);
        }
    } else {
        unsigned th = a->threads;
        fprintf(out, "{\"n_bars\":%zu,\"n_combos\":%zu,\"kernel\":\"%s\",\"abi\":%u,"
                     "\"threads\":%u,\"seconds\":%.6f,\"stopped\":%zu,\"results\":[",
                n, k, def->name, def->abi, th, secs, stopped);
        for (size_t c = 0; c < k; c++) {
            fprintf(out, "%s{\"combo\":[", c ? "," : "");
            for (uint32_t j = 0; j < np; j++)
                fprintf(out, "%s%.17g", j ? "," : "", params[c * np + j]);
            fputs("],\"params\":{", out);
            for (uint32_t j = 0; j < np; j++)
                fprintf(out, "%s\"%s\":%.17g", j ? "," : "", def->params[j].name,
                        params[c * np + j]);
            fprintf(out, "},\"pnl\":%.17g,\"trades\":%lld", res[c].pnl, (long long)res[c].trades);
            if (a->stats)
                fprintf(out, ",\"wins\":%lld,\"max_drawdown\":%.17g,\"exposure\":%.17g,"
                             "\"final_position\":%d",
                        (long long)res[c].wins, res[c].max_drawdown, res[c].exposure,
                        res[c].open.side);
            if (res[c].stopped)
                fputs(",\"stopped\":true", out);
            fputc('}', out);
        }
        fputs("]}\n", out);
    }
    if (fflush(out) != 0 || ferror(out)) {
        fprintf(stderr, "tickwire sweep: %s: write error\n", a->output ? a->output : "stdout");
        goto done;
    }
    if (a->trades_path && write_ktrades(a->trades_path, log, res, k, a->fee))
        goto done;
    if (stopped)
        fprintf(stderr, "tickwire sweep: kernel %s: %zu of %zu combos stopped (step returned a "
                        "value other than -1, 0, +1; booked up to that bar)\n",
                def->name, stopped, k);
    ret = 0;
done:
    if (out && out != stdout && fclose(out) != 0 && ret == 0) {
        fprintf(stderr, "tickwire sweep: %s: write error\n", a->output);
        ret = 1;
    }
    for (size_t c = 0; log && c < k; c++)
        free(log[c].t);
    free(log);
    free(res);
    free(params);
    free(close);
    return ret;
}

/* ---- tickwire kernels ------------------------------------------------------ */

static const char kernels_usage[] =
    "usage: tickwire kernels [NAME|PATH.so]...\n"
    "\n"
    "Lists kernels and their params: the built-ins, or the kernels named (a plug-in is\n"
    "loaded, checked and probed as a sweep would).  Per param: its bounds, whether it\n"
    "is an integer, and its default.\n";

static void print_kernel(const tw_kernel_def *d, const char *where)
{
    size_t ng = 0;
    if (d->default_grid)
        d->default_grid(&ng);
    printf("%s  (%s, ABI %u)\n  %s\n", d->name, where, d->abi, d->doc ? d->doc : "");
    for (uint32_t j = 0; j < d->n_params; j++) {
        const tw_kparam *q = &d->params[j];
        printf("    %-12s %-7s [%.15g, %.15g]  default %.15g\n", q->name,
               q->integer ? "integer" : "float", q->lo, q->hi, q->dflt);
    }
    if (ng)
        printf("  default grid: %zu combos\n", ng);
    else
        printf("  default grid: none (give --grid)\n");
}

int tw__cli_kernels(int argc, char **argv)
{
    int named = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(kernels_usage, stdout);
            return 0;
        }
        if (argv[i][0] == '-') {
            fprintf(stderr, "tickwire kernels: unknown option '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    for (int i = 1; i < argc; i++) {
        const tw_kernel_def *d;
        if (find_kernel("kernels", argv[i], &d))
            return 1;
        int builtin = 0;
        for (size_t b = 0; b < tw_kernel_builtin_count(); b++)
            builtin |= tw_kernel_builtin(b) == d;
        print_kernel(d, builtin ? "built in" : argv[i]);
        named = 1;
    }
    for (size_t b = 0; !named && b < tw_kernel_builtin_count(); b++)
        print_kernel(tw_kernel_builtin(b), "built in");
    return 0;
}
