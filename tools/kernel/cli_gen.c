/* tickwire gen: synthetic closes to a file (kernel.md "Data"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/cli_kernel.h"

int tw__cli_gen(int argc, char **argv);

static const char usage[] =
    "usage: tickwire gen --n N [--seed S] [--sigma X] --output FILE\n"
    "\n"
    "Writes N synthetic closes (xoshiro256** + Box-Muller, close = 100 exp(cumsum(sigma z)))\n"
    "to FILE: .npy (float64), .csv (one column close) or else raw little-endian float64.\n"
    "  --seed S    seed (default 42)\n"
    "  --sigma X   step sigma (default 0.0008)\n";

int tw__cli_gen(int argc, char **argv)
{
    uint64_t n = 0, seed = 42;
    double sigma = 0.0008;
    const char *output = NULL;
    int have_n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a, *v;
        int r = tw__cli_opt_value("gen", usage, argc, argv, &i, &a, &v);
        if (r)
            return r > 0 ? 0 : 2;
        if (!strcmp(a, "--n")) {
            if (tw__cli_u64("gen", a, v, &n))
                return 2;
            have_n = 1;
        } else if (!strcmp(a, "--seed")) {
            if (tw__cli_u64("gen", a, v, &seed))
                return 2;
        } else if (!strcmp(a, "--sigma")) {
            if (tw__cli_double("gen", a, v, &sigma))
                return 2;
        } else if (!strcmp(a, "--output")) {
            output = v;
        } else {
            fprintf(stderr, "tickwire gen: unknown option '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (!have_n || n == 0) {
        fprintf(stderr, "tickwire gen: --n N (at least 1) is required\n");
        return 2;
    }
    if (!output) {
        fprintf(stderr, "tickwire gen: --output FILE is required\n");
        return 2;
    }
    double *close;
    size_t got;
    if (tw__cli_load_closes("gen", NULL, NULL, n, seed, sigma, &close, &got))
        return 1;
    tw_error err;
    int rc = tw_write_closes(output, close, got, &err);
    free(close);
    if (rc) {
        fprintf(stderr, "tickwire gen: %s\n", err.msg);
        return 1;
    }
    return 0;
}
