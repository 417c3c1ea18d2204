/* `tickwire study`: the study harness is Python (numba reference, numpy,
 * matplotlib), so this subcommand only points the interpreter at this
 * build and execs it:
 *     /usr/bin/python3 -m tickwire.study <args>
 * with PYTHONPATH prefixed by the source tree's python/ directory and
 * TICKWIRE_BIN / TICKWIRE_LIB / TICKWIRE_ECHO_CURVE naming this build's
 * program, library and echo-curve program, so that the harness measures
 * exactly what was built here. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "study_paths.h"

int tw__cli_study(int argc, char **argv);

#define PYTHON "/usr/bin/python3"

/* Sets name=value unless the path does not exist (an installed program
 * whose build tree is gone): then whatever the environment says stays.
 * Returns 0, or -errno after printing why. */
static int set_path(const char *name, const char *value)
{
    if (access(value, F_OK) != 0)
        return 0;
    if (setenv(name, value, 1) != 0) {
        int en = errno;
        fprintf(stderr, "tickwire study: setenv %s: %s\n", name, strerror(en));
        return -en;
    }
    return 0;
}

int tw__cli_study(int argc, char **argv)
{
    /* The running program is the engine the harness starts: whatever
     * path it was invoked by, /proc/self/exe is this very binary. */
    char self[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (k > 0) {
        self[k] = 0;
        if (set_path("TICKWIRE_BIN", self))
            return 2;
    }
    if (set_path("TICKWIRE_LIB", TW_STUDY_LIB) || set_path("TICKWIRE_ECHO_CURVE", TW_STUDY_ECHO_CURVE))
        return 2;

    const char *old = getenv("PYTHONPATH");
    size_t need = strlen(TW_STUDY_PYDIR) + (old && *old ? strlen(old) + 1 : 0) + 1;
    char *pp = malloc(need);
    if (!pp) {
        fprintf(stderr, "tickwire study: out of memory\n");
        return 2;
    }
    snprintf(pp, need, "%s%s%s", TW_STUDY_PYDIR, old && *old ? ":" : "", old && *old ? old : "");
    if (setenv("PYTHONPATH", pp, 1) != 0) {
        fprintf(stderr, "tickwire study: setenv PYTHONPATH: %s\n", strerror(errno));
        free(pp);
        return 2;
    }
    free(pp);

    /* argv[0] is "study"; the rest go to the harness unchanged. */
    char **av = calloc((size_t)argc + 4, sizeof(*av));
    if (!av) {
        fprintf(stderr, "tickwire study: out of memory\n");
        return 2;
    }
    av[0] = PYTHON;
    av[1] = "-m";
    av[2] = "tickwire.study";
    for (int i = 1; i < argc; i++)
        av[i + 2] = argv[i];
    av[argc + 2] = NULL;
    fflush(NULL);
    execv(PYTHON, av);
    fprintf(stderr, "tickwire study: cannot run %s: %s\n", PYTHON, strerror(errno));
    free(av);
    return 2;
}
