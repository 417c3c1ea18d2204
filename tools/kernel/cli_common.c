#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli_opt.h"
#include "kernel/cli_kernel.h"
#include "kernel/data_internal.h"

int tw__cli_load_closes(const char *cmd, const char *data, const char *column,
                        uint64_t synthetic, uint64_t seed, double sigma,
                        double **close, size_t *n)
{
    if (data) {
        tw_error err;
        int rc = tw_read_closes(data, column, close, n, &err);
        if (rc) {
            fprintf(stderr, "tickwire %s: %s\n", cmd, err.msg);
            return -1;
        }
        return 0;
    }
    if (synthetic == 0) {
        fprintf(stderr, "tickwire %s: --synthetic needs at least 1 bar\n", cmd);
        return -1;
    }
    if (synthetic > ((uint64_t)1 << 34)) {
        fprintf(stderr, "tickwire %s: --synthetic %llu bars is too many\n", cmd,
                (unsigned long long)synthetic);
        return -1;
    }
    *close = malloc((size_t)synthetic * sizeof(double));
    if (!*close) {
        fprintf(stderr, "tickwire %s: out of memory for %llu bars\n", cmd,
                (unsigned long long)synthetic);
        return -1;
    }
    tw_gen_closes(*close, (size_t)synthetic, seed, sigma);
    *n = (size_t)synthetic;
    return 0;
}

static const char *const grid_cols[TW_COMBO_WINDOWS] = {
    "h_half", "h_full", "h_sqrt", "t_third", "t_half", "t_full",
};

/* An integral window value from the grid file (range is checked later by
 * tw_sweep_check, which names the combo). */
static int grid_int(const char *cmd, const char *path, const char *col, size_t row,
                    double v, int64_t *out)
{
    if (!(v == v) || v != floor(v) || fabs(v) > 1e15) {
        fprintf(stderr, "tickwire %s: %s: row %zu: %s = %g is not an integer\n", cmd, path,
                row + 1, col, v);
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

int tw__cli_load_grid(const char *cmd, const char *path, int64_t **combos, size_t *n)
{
    if (!path) {
        *combos = malloc(TW_GRID_DEFAULT_COMBOS * TW_COMBO_WINDOWS * sizeof(int64_t));
        if (!*combos) {
            fprintf(stderr, "tickwire %s: out of memory\n", cmd);
            return -1;
        }
        *n = tw_grid_default(*combos);
        return 0;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "tickwire %s: %s: %s\n", cmd, path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 12, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            fprintf(stderr, "tickwire %s: out of memory\n", cmd);
            return -1;
        }
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        cap *= 2;
        char *nb = realloc(buf, cap);
        if (!nb)
            free(buf);
        buf = nb;
    }
    fclose(f);

    tw_error err;
    double *col[TW_COMBO_WINDOWS] = {0};
    size_t rows = 0;
    int rc = -1;
    double *lens = NULL;
    /* Six window columns, or else one `length` column. */
    if (tw__csv_parse(buf, len, grid_cols[0], path, &col[0], &rows, &err) == 0) {
        for (int j = 1; j < TW_COMBO_WINDOWS; j++) {
            size_t r2;
            if (tw__csv_parse(buf, len, grid_cols[j], path, &col[j], &r2, &err) != 0) {
                fprintf(stderr, "tickwire %s: grid %s\n", cmd, err.msg);
                goto out;
            }
            if (r2 != rows) {
                fprintf(stderr, "tickwire %s: %s: column %s has %zu rows, h_half %zu\n", cmd,
                        path, grid_cols[j], r2, rows);
                goto out;
            }
        }
        *combos = malloc(rows * TW_COMBO_WINDOWS * sizeof(int64_t));
        if (!*combos)
            goto oom;
        for (size_t r = 0; r < rows; r++)
            for (int j = 0; j < TW_COMBO_WINDOWS; j++)
                if (grid_int(cmd, path, grid_cols[j], r, col[j][r],
                             &(*combos)[r * TW_COMBO_WINDOWS + (size_t)j])) {
                    free(*combos);
                    goto out;
                }
    } else if (strstr(err.msg, "no column") &&
               tw__csv_parse(buf, len, "length", path, &lens, &rows, &err) == 0) {
        *combos = malloc(rows * TW_COMBO_WINDOWS * sizeof(int64_t));
        if (!*combos)
            goto oom;
        for (size_t r = 0; r < rows; r++) {
            int64_t L;
            if (grid_int(cmd, path, "length", r, lens[r], &L)) {
                free(*combos);
                goto out;
            }
            if (L < 1 || L > 2 * TW_WINDOW_MAX) {
                fprintf(stderr, "tickwire %s: %s: row %zu: length %lld outside [1, %d]\n", cmd,
                        path, r + 1, (long long)L, 2 * TW_WINDOW_MAX);
                free(*combos);
                goto out;
            }
            tw_combo_from_length(L, *combos + r * TW_COMBO_WINDOWS);
        }
    } else {
        if (strstr(err.msg, "no column"))
            fprintf(stderr, "tickwire %s: %s: the grid needs the columns "
                    "h_half,h_full,h_sqrt,t_third,t_half,t_full or a column length\n", cmd, path);
        else
            fprintf(stderr, "tickwire %s: grid %s\n", cmd, err.msg);
        goto out;
    }
    *n = rows;
    rc = 0;
    goto out;
oom:
    fprintf(stderr, "tickwire %s: out of memory\n", cmd);
out:
    for (int j = 0; j < TW_COMBO_WINDOWS; j++)
        free(col[j]);
    free(lens);
    free(buf);
    return rc;
}
