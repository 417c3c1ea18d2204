/* Helpers shared by the kernel's subcommands (sweep, gen, bench kernel). */
#ifndef TW_CLI_KERNEL_H
#define TW_CLI_KERNEL_H

#include "tickwire/kernel.h"

/* Numbers from the command line: 0, or -1 after printing one line on
 * stderr naming the option. */
int tw__cli_u64(const char *cmd, const char *opt, const char *s, uint64_t *v);
int tw__cli_double(const char *cmd, const char *opt, const char *s, double *v);

/* Closes from --data FILE [--column NAME] or synthetic (n, seed, sigma);
 * *close malloc'd.  0 or -1 after printing the error. */
int tw__cli_load_closes(const char *cmd, const char *data, const char *column,
                        uint64_t synthetic, uint64_t seed, double sigma,
                        double **close, size_t *n);

/* Combos from a grid CSV (six window columns, or one `length` column) or
 * the default grid when path is NULL; *combos malloc'd.  0 or -1 after
 * printing the error. */
int tw__cli_load_grid(const char *cmd, const char *path, int64_t **combos, size_t *n);

/* One `--opt VALUE` pair of the subcommands' command lines at argv[*i]
 * (*i moves past the value).  0 with *opt and *val set; 1 after printing
 * usage for -h/--help; -1 after printing why argv[*i] is not an option
 * with a value.  So `r ? (r > 0 ? 0 : 2)` is the subcommand's exit status. */
int tw__cli_opt_value(const char *cmd, const char *usage, int argc, char **argv, int *i,
                      const char **opt, const char **val);

double tw__cli_now(void);

#endif
