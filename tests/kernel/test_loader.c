/* The plug-in loader: a good plug-in loads once per path; each bad one is
 * refused with an error naming the file and the fault.  Arguments:
 * VARIANT=path of each plug-in built from plugins/plug_bad.c. */
#include <errno.h>
#include <unistd.h>

#include "kt.h"
#include "tickwire/kernel.h"

static const char *plug(int argc, char **argv, const char *v)
{
    size_t n = strlen(v);
    for (int i = 1; i < argc; i++)
        if (!strncmp(argv[i], v, n) && argv[i][n] == '=')
            return argv[i] + n + 1;
    return NULL;
}

static void refused(int argc, char **argv, const char *v, const char *why)
{
    const char *path = plug(argc, argv, v);
    const tw_kernel_def *d = NULL;
    tw_error err = {0};
    CHECKF(path, "no plug-in %s given", v);
    if (!path)
        return;
    int rc = tw_kernel_find(path, &d, &err);
    const char *base = strrchr(path, '/');
    CHECKF(rc == -TW_EBADKERNEL, "%s: rc %d (%s)", v, rc, err.msg);
    CHECKF(strstr(err.msg, base + 1) && strstr(err.msg, why), "%s: message '%s' lacks '%s'", v,
           err.msg, why);
    printf("  %s refused: %s\n", v, err.msg);
    /* Refused twice the same way (a refused object is not kept). */
    CHECK(tw_kernel_find(path, &d, &err) == -TW_EBADKERNEL);
}

int main(int argc, char **argv)
{
    const tw_kernel_def *d = NULL, *d2 = NULL;
    tw_error err = {0};
    const char *ok = plug(argc, argv, "OK");
    if (!ok)
        return 1;
    CHECKF(tw_kernel_find(ok, &d, &err) == 0, "%s", err.msg);
    CHECK(d && strcmp(d->name, "plug") == 0 && d->n_params == 2);
    CHECK(tw_kernel_find(ok, &d2, &err) == 0 && d2 == d);
    if (d) {
        /* A sweep of it books a closes-above-100 rule. */
        double x[6] = {99, 101, 102, NAN, 98, 103}, p[2] = {3, 0.5};
        tw_kresult r;
        tw_ksweep_opts o;
        tw_ksweep_opts_init(&o);
        o.fee = 0.0;
        CHECK(tw_ksweep(d, x, 6, p, 1, &o, &r, NULL, NULL, &err) == 0);
        CHECK(r.trades == 3 && r.open.side == 1 && r.open.entry_bar == 5);
        double p2[2] = {3.5, 0.5}, p3[2] = {3, 2};
        CHECK(tw_kernel_check_combo(d, p2, &err) == -EINVAL && strstr(err.msg, "integer"));
        CHECK(tw_kernel_check_combo(d, p3, &err) == -EINVAL && strstr(err.msg, "outside"));
    }
    refused(argc, argv, "BAD_ABI", "ABI 2");
    refused(argc, argv, "NO_ENTRY", "no symbol tw_kernel_entry");
    refused(argc, argv, "NONDET", "not deterministic");
    refused(argc, argv, "BADSTEP", "step returned 2");
    refused(argc, argv, "MANYPARAMS", "17 params");
    refused(argc, argv, "BIGSTATE", "state_bytes");
    refused(argc, argv, "DUPPARAM", "named twice");
    refused(argc, argv, "LOHI", "lo 10 > hi 1");
    refused(argc, argv, "NONAME", "no name");
    refused(argc, argv, "DFLT", "default 11 outside");
    refused(argc, argv, "NOSTEP", "no step");

    /* A text file named .so. */
    char path[] = "/tmp/tw_kernel_notso_XXXXXX.so";
    int fd = mkstemps(path, 3);
    if (fd < 0)
        return 1;
    CHECK(write(fd, "not an ELF\n", 11) == 11);
    close(fd);
    int rc = tw_kernel_find(path, &d, &err);
    CHECKF(rc == -TW_EBADKERNEL && strstr(err.msg, path) && strstr(err.msg, "shared object"),
           "%d %s", rc, err.msg);
    printf("  text file refused: %s\n", err.msg);
    unlink(path);
    /* A directory and a missing file. */
    CHECK(tw_kernel_find("/tmp/", &d, &err) == -TW_EBADKERNEL && strstr(err.msg, "regular"));
    CHECK(tw_kernel_find("/nonexistent/x.so", &d, &err) == -ENOENT &&
          strstr(err.msg, "/nonexistent/x.so"));
    return tw_check_done("kernel_loader");
}
