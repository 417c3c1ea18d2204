/* Helpers shared by the kernel's subcommands (sweep, gen, bench kernel). */
#ifndef TW_CLI_KERNEL_H
#define TW_CLI_KERNEL_H

#include "common/cli_opt.h"
#include "tickwire/kernel.h"

/* Closes from --data FILE [--column NAME] or synthetic (n, seed, sigma);
 * *close malloc'd.  0 or -1 after printing the error. */
int tw__cli_load_closes(const char *cmd, const char *data, const char *column,
                        uint64_t synthetic, uint64_t seed, double sigma,
                        double **close, size_t *n);

/* Combos from a grid CSV (six window columns, or one `length` column) or
 * the default grid when path is NULL; *combos malloc'd.  0 or -1 after
 * printing the error. */
int tw__cli_load_grid(const char *cmd, const char *path, int64_t **combos, size_t *n);


/* tickwire sweep --kernel NAME|PATH.so (cli_ksweep.c). */
struct tw__ksweep_args {
    const char *kernel, *data, *column, *grid, *output, *trades_path;
    uint64_t synthetic, seed;
    double sigma, fee;
    unsigned threads;
    int json, stats, generic;
};
/* The exit status: 0, 1 (after printing the error). */
int tw__cli_sweep_named(const struct tw__ksweep_args *a);

#endif
