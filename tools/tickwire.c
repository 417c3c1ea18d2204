/* tickwire: one program, many subcommands.  Each part registers its
 * subcommands from its CMakeLists.txt; this file only dispatches. */
#include <stdio.h>
#include <string.h>

#include "tickwire/version.h"

struct tw_cli_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
};

static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("tickwire %s\n", TW_VERSION_STRING);
    return 0;
}

#include "tw_cli_table.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tickwire <command> [options]   (tickwire <command> --help)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(tw_cli_cmds) / sizeof(tw_cli_cmds[0]); i++)
        fprintf(f, "  %-14s %s\n", tw_cli_cmds[i].name, tw_cli_cmds[i].help);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("tickwire %s\n", TW_VERSION_STRING);
        return 0;
    }
    /* Two-word commands ("bench net") first, then one-word ones.  A
     * two-word command gets argv[0] = its second word. */
    if (argc >= 3) {
        char two[128];
        snprintf(two, sizeof(two), "%s %s", argv[1], argv[2]);
        for (size_t i = 0; i < sizeof(tw_cli_cmds) / sizeof(tw_cli_cmds[0]); i++)
            if (!strcmp(two, tw_cli_cmds[i].name))
                return tw_cli_cmds[i].run(argc - 2, argv + 2);
    }
    for (size_t i = 0; i < sizeof(tw_cli_cmds) / sizeof(tw_cli_cmds[0]); i++)
        if (!strcmp(argv[1], tw_cli_cmds[i].name))
            return tw_cli_cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tickwire: unknown command '%s' (try tickwire --help)\n", argv[1]);
    return 2;
}
