/* Grids of any kernel: a CSV whose header names the kernel's params
 * (tw_read_kgrid); hma_sar also takes tw_read_grid()'s `length` grids. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "kernel/data_internal.h"
#include "kernel/kbook.h"

/* The header's field k, trimmed of blanks and quotes as tw__csv_parse
 * does; 0 past the last. */
static int header_field(const char *b, const char *e, size_t k, const char **fb, size_t *fl)
{
    for (size_t i = 0;; i++) {
        const char *comma = memchr(b, ',', (size_t)(e - b));
        const char *end = comma ? comma : e;
        if (i == k) {
            const char *x = b, *y = end;
            while (x < y && (*x == ' ' || *x == '\t'))
                x++;
            while (y > x && (y[-1] == ' ' || y[-1] == '\t' || y[-1] == '\r'))
                y--;
            if (y - x >= 2 && *x == '"' && y[-1] == '"') {
                x++;
                y--;
            }
            *fb = x;
            *fl = (size_t)(y - x);
            return 1;
        }
        if (!comma)
            return 0;
        b = comma + 1;
    }
}

int tw__kgrid_parse(const char *buf, size_t len, const char *path, const tw_kernel_def *def,
                    double **params_out, size_t *n_out, tw_error *err)
{
    const uint32_t np = def->n_params;
    const char *end = buf + len, *b = buf;
    if (len >= 3 && !memcmp(b, "\xef\xbb\xbf", 3))
        b += 3;
    const char *nl = memchr(b, '\n', (size_t)(end - b));
    const char *hend = nl ? nl : end;
    int seen[TW_KERNEL_MAX_PARAMS] = {0};
    int length_only = 0;
    size_t nf = 0;
    for (size_t k = 0;; k++, nf++) {
        const char *fb;
        size_t fl;
        if (!header_field(b, hend, k, &fb, &fl))
            break;
        char name[64];
        if (fl == 0 || fl >= sizeof(name))
            return tw__err(err, -TW_EFORMAT, "%s: header column %zu: empty or too long a name",
                           path, k + 1);
        memcpy(name, fb, fl);
        name[fl] = '\0';
        if (def == &tw__hma_sar_def && strcmp(name, "length") == 0) {
            length_only = 1;
            continue;
        }
        int idx = tw_kernel_param_index(def, name);
        if (idx < 0) {
            char *ep;
            strtod(name, &ep);
            if (!*ep)
                return tw__err(err, -TW_EFORMAT,
                               "%s: line 1 looks like data, not a header (the header names the "
                               "params of kernel %s)",
                               path, def->name);
            return tw__err(err, -TW_EFORMAT, "%s: column '%s' is not a param of kernel %s", path,
                           name, def->name);
        }
        if (seen[idx])
            return tw__err(err, -TW_EFORMAT, "%s: column '%s' named twice", path, name);
        seen[idx] = 1;
    }
    if (length_only) {
        if (nf != 1)
            return tw__err(err, -TW_EFORMAT,
                           "%s: a `length` grid has that one column (or give the six windows)",
                           path);
        int64_t *c = NULL;
        size_t n = 0;
        int rc = tw__grid_parse(buf, len, path, &c, &n, err);
        if (rc)
            return rc;
        double *p = malloc(n * TW_COMBO_WINDOWS * sizeof(double));
        if (!p) {
            free(c);
            return tw__err(err, -ENOMEM, "%s: out of memory", path);
        }
        for (size_t i = 0; i < n * TW_COMBO_WINDOWS; i++)
            p[i] = (double)c[i];
        free(c);
        *params_out = p;
        *n_out = n;
        return 0;
    }
    for (uint32_t i = 0; i < np; i++)
        if (!seen[i])
            return tw__err(err, -TW_EFORMAT, "%s: no column '%s' (kernel %s needs every param)",
                           path, def->params[i].name, def->name);
    double *col[TW_KERNEL_MAX_PARAMS] = {0};
    double *p = NULL;
    size_t rows = 0;
    int rc = 0;
    for (uint32_t i = 0; i < np && rc == 0; i++) {
        size_t r2 = 0;
        rc = tw__csv_parse(buf, len, def->params[i].name, path, &col[i], &r2, err);
        if (rc == 0 && i > 0 && r2 != rows)
            rc = tw__err(err, -TW_EFORMAT, "%s: column %s has %zu rows, %s %zu", path,
                         def->params[i].name, r2, def->params[0].name, rows);
        rows = r2;
    }
    if (rc == 0 && rows == 0)
        rc = tw__err(err, -TW_ENODATA, "%s: no rows", path);
    if (rc == 0 && !(p = malloc(rows * np * sizeof(double))))
        rc = tw__err(err, -ENOMEM, "%s: out of memory", path);
    for (size_t r = 0; rc == 0 && r < rows; r++)
        for (uint32_t i = 0; rc == 0 && i < np; i++) {
            double v = col[i][r];
            if (!isfinite(v))
                rc = tw__err(err, -TW_EFORMAT, "%s: row %zu: column %s: %s", path, r + 1,
                             def->params[i].name, isnan(v) ? "empty" : "not finite");
            else
                p[r * np + i] = v;
        }
    for (uint32_t i = 0; i < np; i++)
        free(col[i]);
    if (rc) {
        free(p);
        return rc;
    }
    *params_out = p;
    *n_out = rows;
    return 0;
}

int tw_read_kgrid(const char *path, const tw_kernel_def *def, double **params, size_t *n_combos,
                  tw_error *err)
{
    uint8_t *raw;
    size_t len;
    int rc = tw__read_file(path, &raw, &len, err);
    if (rc)
        return rc;
    rc = tw__kgrid_parse((const char *)raw, len, path, def, params, n_combos, err);
    free(raw);
    return rc;
}
