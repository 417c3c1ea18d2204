/* Option helpers of every subcommand (cli_opt.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli_opt.h"

int tw__cli_u64(const char *cmd, const char *opt, const char *s, uint64_t *v)
{
    char *e;
    errno = 0;
    if (!s || !*s || *s == '-') {
        fprintf(stderr, "tickwire %s: %s needs a non-negative integer\n", cmd, opt);
        return -1;
    }
    unsigned long long x = strtoull(s, &e, 0);
    if (*e || errno) {
        fprintf(stderr, "tickwire %s: %s: '%s' is not a non-negative integer\n", cmd, opt, s);
        return -1;
    }
    *v = x;
    return 0;
}

int tw__cli_u64_range(const char *cmd, const char *opt, const char *s, uint64_t lo,
                      uint64_t hi, uint64_t *v)
{
    if (tw__cli_u64(cmd, opt, s, v))
        return -1;
    if (*v < lo || *v > hi) {
        fprintf(stderr, "tickwire %s: %s: %s is outside [%llu, %llu]\n", cmd, opt, s,
                (unsigned long long)lo, (unsigned long long)hi);
        return -1;
    }
    return 0;
}

int tw__cli_double(const char *cmd, const char *opt, const char *s, double *v)
{
    char *e;
    if (!s || !*s) {
        fprintf(stderr, "tickwire %s: %s needs a number\n", cmd, opt);
        return -1;
    }
    errno = 0;
    double x = strtod(s, &e);
    if (*e || errno || !isfinite(x)) {
        fprintf(stderr, "tickwire %s: %s: '%s' is not a finite number\n", cmd, opt, s);
        return -1;
    }
    *v = x;
    return 0;
}

int tw__cli_mode(const char *cmd, const char *opt, const char *s, unsigned *mode)
{
    /* Octal digits only: strtoul alone would take a sign or blanks. */
    int ok = s && *s >= '0' && *s <= '7';
    unsigned long x = 0;
    if (ok) {
        char *e;
        errno = 0;
        x = strtoul(s, &e, 8);
        ok = !*e && !errno && x <= 0777;
    }
    if (!ok) {
        fprintf(stderr, "tickwire %s: %s needs octal permissions like 0600 (got '%s')\n", cmd,
                opt, s ? s : "");
        return -1;
    }
    *mode = (unsigned)x;
    return 0;
}

int tw__cli_opt_value(const char *cmd, const char *usage, int argc, char **argv, int *i,
                      const char **opt, const char **val)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
        fputs(usage, stdout);
        return 1;
    }
    if (strncmp(a, "--", 2)) {
        fprintf(stderr, "tickwire %s: unexpected argument '%s' (see --help)\n", cmd, a);
        return -1;
    }
    if (*i + 1 >= argc) {
        fprintf(stderr, "tickwire %s: %s needs a value (see --help)\n", cmd, a);
        return -1;
    }
    *opt = a;
    *val = argv[++*i];
    return 0;
}
