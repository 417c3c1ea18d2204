/* tickwire bench decimal: the exact price conversions (tickwire/decimal.h)
 * on the prices of the study's dataset, next to libc measured in the same
 * run: tw_decimal_to_double vs strtod on the texts the venue sends (the
 * shortest round-trip text of each close), and tw_double_to_decimal vs
 * snprintf("%.17g") on the closes.  ns per value, the median of several
 * runs, each run one pass over every value with the four loops
 * interleaved.  Everything is checked before anything is timed: each text
 * parses back to its close bit for bit (ours and strtod), equals the
 * reference shortest search, and "%.17g" reads back through strtod.
 *
 * The prices are tickwire.data.study() (kernel.md "Data"), read from
 * /usr/bin/python3 with numpy; without it, the C generator's closes
 * (tw_gen_closes, the same construction with another random source), and
 * the output says which. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli_opt.h"
#include "common/stats.h"
#include "common/decimal_internal.h"
#include "tickwire/clock.h"
#include "tickwire/decimal.h"
#include "tickwire/kernel.h"

int tw__cli_bench_decimal(int argc, char **argv);

static const char usage[] =
    "usage: tickwire bench decimal [--reps N] [--n N] [--source python|gen]\n"
    "\n"
    "ns per value, exact price conversions against libc, on the study dataset's closes:\n"
    "  parse   tw_decimal_to_double vs strtod, on each close's shortest text\n"
    "  format  tw_double_to_decimal (shortest, fixed notation) vs snprintf(\"%.17g\")\n"
    "  --reps N          runs, the median is reported (default 11)\n"
    "  --n N             the first N closes (default all 150000)\n"
    "  --source python   tickwire.data.study() via /usr/bin/python3 and numpy (default)\n"
    "  --source gen      the C generator's closes (tw_gen_closes, seed 42, sigma 0.0008)\n";

#define STUDY_N 150000

static volatile double sink;
static volatile size_t sink_len;

/* The study's closes from Python: 0, or -1 if it is not there. */
static int load_python(double *close, size_t n)
{
    static const char cmd[] =
        "/usr/bin/python3 -c 'import sys; sys.path.insert(0, \"" TW_PYTHON_DIR "\"); "
        "from tickwire import data; sys.stdout.buffer.write(data.study().tobytes())' 2>/dev/null";
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    double *all = malloc(STUDY_N * sizeof(double));
    size_t got = all ? fread(all, sizeof(double), STUDY_N, p) : 0;
    int rc = pclose(p);
    if (got != STUDY_N || rc != 0) {
        free(all);
        return -1;
    }
    memcpy(close, all, n * sizeof(double));
    free(all);
    return 0;
}

static int fail(const char *what, size_t i, double x, const char *text)
{
    fprintf(stderr, "tickwire bench decimal: check failed before timing: %s (close %zu = %a, '%s')\n",
            what, i, x, text);
    return 1;
}

/* The best ISA this CPU has, by name (the conversions themselves are
 * scalar 64-bit code: the same instructions on every one). */
static const char *cpu_isa(void)
{
    if (tw_cpu_has(TW_ISA_AVX512))
        return tw_isa_name(TW_ISA_AVX512);
    if (tw_cpu_has(TW_ISA_AVX2))
        return tw_isa_name(TW_ISA_AVX2);
    if (tw_cpu_has(TW_ISA_SSE2))
        return tw_isa_name(TW_ISA_SSE2);
    return tw_isa_name(TW_ISA_SCALAR);
}

int tw__cli_bench_decimal(int argc, char **argv)
{
    uint64_t reps = 11, n = STUDY_N;
    const char *source = "python";
    for (int i = 1; i < argc; i++) {
        const char *opt, *val;
        int r = tw__cli_opt_value("bench decimal", usage, argc, argv, &i, &opt, &val);
        if (r)
            return r > 0 ? 0 : 2;
        if (!strcmp(opt, "--reps")) {
            if (tw__cli_u64_range("bench decimal", opt, val, 1, 101, &reps))
                return 2;
        } else if (!strcmp(opt, "--n")) {
            if (tw__cli_u64_range("bench decimal", opt, val, 1, STUDY_N, &n))
                return 2;
        } else if (!strcmp(opt, "--source")) {
            if (strcmp(val, "python") && strcmp(val, "gen")) {
                fprintf(stderr, "tickwire bench decimal: --source is python or gen\n");
                return 2;
            }
            source = val;
        } else {
            fprintf(stderr, "tickwire bench decimal: unknown option '%s' (see --help)\n", opt);
            return 2;
        }
    }

    double *close = malloc(n * sizeof(double));
    double *parsed = malloc(n * sizeof(double));
    size_t *off = malloc((n + 1) * sizeof(size_t));
    char *pool = malloc(n * 32);
    double *t_parse = malloc(reps * sizeof(double)), *t_strtod = malloc(reps * sizeof(double));
    double *t_fmt = malloc(reps * sizeof(double)), *t_printf = malloc(reps * sizeof(double));
    if (!close || !parsed || !off || !pool || !t_parse || !t_strtod || !t_fmt || !t_printf) {
        fprintf(stderr, "tickwire bench decimal: out of memory\n");
        return 1;
    }
    const char *what = "tickwire.data.study() via /usr/bin/python3 + numpy";
    if (strcmp(source, "python") || load_python(close, n) != 0) {
        if (!strcmp(source, "python"))
            fprintf(stderr, "tickwire bench decimal: Python with numpy not available, "
                            "using the C generator's closes\n");
        tw_gen_closes(close, n, 42, 0.0008);
        what = "the C generator's closes (tw_gen_closes, seed 42, sigma 0.0008), not numpy's";
    }

    /* The texts the venue would send, and the checks. */
    int bad = 0;
    size_t o = 0;
    for (size_t i = 0; i < n && !bad; i++) {
        char *t = pool + o, ref[TW_DECIMAL_MAX], g[40];
        off[i] = o;
        size_t len = tw_double_to_decimal(close[i], t);
        if (len >= 32)
            return fail("a close's text is longer than 31 bytes", i, close[i], t);
        double x, y;
        if (tw_decimal_to_double(t, len, &x) != 0 || memcmp(&x, &close[i], sizeof x) != 0)
            bad = fail("tw_decimal_to_double does not give the close back", i, close[i], t);
        y = strtod(t, NULL);
        if (memcmp(&y, &close[i], sizeof y) != 0)
            bad = fail("strtod does not give the close back", i, close[i], t);
        tw__double_to_decimal_ref(close[i], ref);
        if (strcmp(ref, t) != 0)
            bad = fail("not the reference's shortest text", i, close[i], ref);
        snprintf(g, sizeof g, "%.17g", close[i]);
        y = strtod(g, NULL);
        if (memcmp(&y, &close[i], sizeof y) != 0)
            bad = fail("%.17g does not read back", i, close[i], g);
        o += len + 1;
    }
    off[n] = o;
    if (bad)
        return 1;

    /* Interleaved runs.  The sums (into sink) keep the compiler from
     * dropping work. */
    char buf[TW_DECIMAL_MAX];
    for (uint64_t r = 0; r < reps; r++) {
        int64_t t0 = tw_clock_now_ns();
        for (size_t i = 0; i < n; i++)
            tw_decimal_to_double(pool + off[i], off[i + 1] - off[i] - 1, &parsed[i]);
        int64_t t1 = tw_clock_now_ns();
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += strtod(pool + off[i], NULL);
        int64_t t2 = tw_clock_now_ns();
        size_t l = 0;
        for (size_t i = 0; i < n; i++)
            l += tw_double_to_decimal(close[i], buf);
        int64_t t3 = tw_clock_now_ns();
        for (size_t i = 0; i < n; i++)
            l += (size_t)snprintf(buf, sizeof buf, "%.17g", close[i]);
        int64_t t4 = tw_clock_now_ns();
        sink += s;
        sink_len += l;
        t_parse[r] = (double)(t1 - t0) / (double)n;
        t_strtod[r] = (double)(t2 - t1) / (double)n;
        t_fmt[r] = (double)(t3 - t2) / (double)n;
        t_printf[r] = (double)(t4 - t3) / (double)n;
        /* What was timed still gives every close back. */
        if (memcmp(parsed, close, n * sizeof(double)) != 0) {
            fprintf(stderr, "tickwire bench decimal: a timed parse differs\n");
            return 1;
        }
    }
    double p = tw__median_f64(t_parse, (size_t)reps), ps = tw__median_f64(t_strtod, (size_t)reps);
    double f = tw__median_f64(t_fmt, (size_t)reps), fs = tw__median_f64(t_printf, (size_t)reps);
    double pr = ps / p, fr = fs / f;

    printf("tickwire bench decimal: %llu prices, %s; ns per value, median of %llu runs\n",
           (unsigned long long)n, what, (unsigned long long)reps);
    printf("CPU ISA: %s (the conversions are scalar 64-bit code, the same on every ISA)\n",
           cpu_isa());
    printf("checked first: every text parses back bit for bit (tickwire and strtod) and is the\n"
           "reference shortest text; the timed parses give every close back\n\n");
    printf("| conversion                                   | tickwire ns | libc ns | ratio  |\n");
    printf("|----------------------------------------------|------------:|--------:|-------:|\n");
    printf("| parse: tw_decimal_to_double vs strtod        | %11.1f | %7.1f | %5.1fx |\n", p,
           ps, pr);
    printf("| format: tw_double_to_decimal vs %%.17g        | %11.1f | %7.1f | %5.1fx |\n", f,
           fs, fr);
    printf("\ngoal: parse >= 4x strtod: %.1fx -> %s\n", pr, pr >= 4 ? "met" : "NOT met");
    printf("goal: format >= 4x snprintf(\"%%.17g\"): %.1fx -> %s\n", fr, fr >= 4 ? "met" : "NOT met");
    free(close);
    free(parsed);
    free(off);
    free(pool);
    free(t_parse);
    free(t_strtod);
    free(t_fmt);
    free(t_printf);
    return 0;
}
