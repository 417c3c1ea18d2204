/* Command-line helpers every `tickwire` subcommand uses (and the tests and
 * benchmarks that parse options the same way).  Each prints one line on
 * stderr naming the subcommand and the option at fault, so a subcommand
 * only has to turn the result into its exit status. */
#ifndef TW_TOOLS_CLI_OPT_H
#define TW_TOOLS_CLI_OPT_H

#include <stdint.h>

/* Numbers from the command line: 0, or -1 after printing one line on
 * stderr naming the option.  u64 takes decimal, 0x hex or 0 octal; u64_range
 * also checks lo <= v <= hi; double takes any finite strtod number. */
int tw__cli_u64(const char *cmd, const char *opt, const char *s, uint64_t *v);
int tw__cli_u64_range(const char *cmd, const char *opt, const char *s, uint64_t lo,
                      uint64_t hi, uint64_t *v);
int tw__cli_double(const char *cmd, const char *opt, const char *s, double *v);
/* Unix permission bits in octal (0600, 755, at most 0777): 0, or -1 after
 * printing one line on stderr naming the option. */
int tw__cli_mode(const char *cmd, const char *opt, const char *s, unsigned *mode);

/* One `--opt VALUE` pair of the subcommands' command lines at argv[*i]
 * (*i moves past the value).  0 with *opt and *val set; 1 after printing
 * usage for -h/--help; -1 after printing why argv[*i] is not an option
 * with a value.  So `r ? (r > 0 ? 0 : 2)` is the subcommand's exit status. */
int tw__cli_opt_value(const char *cmd, const char *usage, int argc, char **argv, int *i,
                      const char **opt, const char **val);

#endif
