#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli_opt.h"
#include "kernel/cli_kernel.h"

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
    tw_error err;
    if (tw_read_grid(path, combos, n, &err)) {
        fprintf(stderr, "tickwire %s: grid %s\n", cmd, err.msg);
        return -1;
    }
    return 0;
}
