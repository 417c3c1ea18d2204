/* `tickwire engine info ADDRESS` and `tickwire engine ping ADDRESS`: talk to
 * a running engine with the C client (unix:PATH, tcp:HOST:PORT, shm:PATH,
 * spawn:EXE). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickwire/client.h"
#include "tickwire/clock.h"
#include "common/cli_opt.h"

int tw__cli_engine_info(int argc, char **argv);
int tw__cli_engine_ping(int argc, char **argv);

int tw__cli_engine_info(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fprintf(argc == 2 ? stdout : stderr,
                "usage: tickwire engine info ADDRESS   (unix:PATH, tcp:HOST:PORT, shm:PATH, "
                "spawn:EXE)\nPrints the engine's INFO JSON (version, limits, counters).\n");
        return argc == 2 ? 0 : 2;
    }
    tw_client *c;
    tw_error err = {0};
    static char buf[65536];
    int rc = tw_client_connect(&c, argv[1], &err);
    if (rc == 0)
        rc = tw_client_info(c, buf, sizeof(buf), &err);
    tw_client_close(c);
    if (rc < 0) {
        fprintf(stderr, "tickwire engine info: %s\n", err.msg);
        return 1;
    }
    printf("%s\n", buf);
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int tw__cli_engine_ping(int argc, char **argv)
{
    if (argc < 2 || argc > 4 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fprintf(argc >= 2 ? stdout : stderr,
                "usage: tickwire engine ping ADDRESS [FLOATS [COUNT]]\n"
                "ECHO round trips of FLOATS doubles (default 1), COUNT times (default 1000);\n"
                "prints the median and the 10th/90th percentiles.\n");
        return argc >= 2 ? 0 : 2;
    }
    uint64_t n64 = 1, count64 = 1000;
    if ((argc > 2 && tw__cli_u64_range("engine ping", "FLOATS", argv[2], 0, 64u << 20, &n64)) ||
        (argc > 3 && tw__cli_u64_range("engine ping", "COUNT", argv[3], 1, 10000000, &count64)))
        return 2;
    long n = (long)n64, count = (long)count64;
    double *in = malloc(8 * (size_t)(n ? n : 1)), *out = malloc(8 * (size_t)(n ? n : 1));
    uint64_t *t = malloc(sizeof(uint64_t) * (size_t)count);
    tw_client *c = NULL;
    tw_error err = {0};
    int rc = in && out && t ? tw_client_connect(&c, argv[1], &err) : -ENOMEM;
    for (long i = 0; i < n && in; i++)
        in[i] = 1.0 + (double)i;
    for (long i = 0; rc == 0 && i < count; i++) {
        int64_t t0 = tw_clock_now_ns();
        rc = tw_client_echo(c, in, (size_t)n, out, &err);
        t[i] = (uint64_t)(tw_clock_now_ns() - t0);
        if (rc == 0 && n && memcmp(in, out, 8 * (size_t)n)) {
            snprintf(err.msg, sizeof(err.msg), "echo returned different bytes");
            rc = -EPROTO;
        }
    }
    tw_client_close(c);
    if (rc) {
        fprintf(stderr, "tickwire engine ping: %s\n", err.msg[0] ? err.msg : "out of memory");
        free(in), free(out), free(t);
        return 1;
    }
    qsort(t, (size_t)count, sizeof(*t), cmp_u64);
    printf("%s: %ld x echo of %ld floats: median %.2f us (p10 %.2f, p90 %.2f)\n", argv[1], count,
           n, t[count / 2] / 1e3, t[count / 10] / 1e3, t[count * 9 / 10] / 1e3);
    free(in), free(out), free(t);
    return 0;
}
