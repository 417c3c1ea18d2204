/* The readers and writer of closes: raw float64, .npy and CSV, good files
 * and bad ones (each bad one an error naming what is wrong). */
#include <errno.h>
#include <unistd.h>

#include "kernel/data_internal.h"
#include "kt.h"

static char dir[64];

static const char *path(const char *name)
{
    static char p[256];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return p;
}

static void put(const char *name, const void *data, size_t len)
{
    FILE *f = fopen(path(name), "wb");
    if (!f) {
        perror(name);
        exit(1);
    }
    fwrite(data, 1, len, f);
    fclose(f);
}

/* An .npy file with the given header dict (v1.0) and n doubles 1..n. */
static void put_npy(const char *name, const char *dict, size_t n, size_t data_bytes)
{
    char buf[4096];
    size_t hl = strlen(dict);
    size_t pad = (64 - (10 + hl + 1) % 64) % 64;
    size_t hlen = hl + pad + 1;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)(hlen >> 8);
    memcpy(buf + 10, dict, hl);
    memset(buf + 10 + hl, ' ', pad);
    buf[10 + hl + pad] = '\n';
    size_t off = 10 + hlen;
    for (size_t i = 0; i < n; i++) {
        double v = (double)(i + 1);
        memcpy(buf + off + 8 * i, &v, 8);
    }
    put(name, buf, off + data_bytes);
}

/* Reads a file expecting an error whose message contains `needle`. */
static void bad(const char *name, const char *column, int code, const char *needle)
{
    double *v = (double *)&v;
    size_t n = 12345;
    tw_error err = {0, ""};
    int rc = tw_read_closes(path(name), column, &v, &n, &err);
    CHECKF(rc == code, "%s: rc %d want %d (%s)", name, rc, code, err.msg);
    CHECKF(strstr(err.msg, needle) != NULL, "%s: message '%s' lacks '%s'", name, err.msg, needle);
    CHECKF(n == 12345 && v == (double *)&v, "%s: outputs written", name);
    printf("  %-14s -> %s\n", name, err.msg);
}

static void good(const char *name, const char *column, const double *want, size_t n_want)
{
    double *v = NULL;
    size_t n = 0;
    tw_error err = {0, ""};
    int rc = tw_read_closes(path(name), column, &v, &n, &err);
    CHECKF(rc == 0, "%s: rc %d: %s", name, rc, err.msg);
    if (rc)
        return;
    CHECKF(n == n_want, "%s: n %zu want %zu", name, n, n_want);
    for (size_t i = 0; i < n && i < n_want; i++)
        CHECKF(kt_same(v[i], want[i]), "%s: [%zu] %.17g want %.17g", name, i, v[i], want[i]);
    free(v);
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/tw_kernel_data_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    double seq[5] = {1, 2, 3, 4, 5};
    tw_error err;

    /* Writer round trips, every format. */
    double gen[1000];
    tw_gen_closes(gen, 1000, 7, 0.001);
    gen[10] = NAN;
    static const char *const names[] = {"w.npy", "w.f64", "w.csv", "W.NPY"};
    for (size_t i = 0; i < TW_ARRAY_SIZE(names); i++) {
        CHECK(tw_write_closes(path(names[i]), gen, 1000, &err) == 0);
        good(names[i], NULL, gen, 1000);
    }
    /* The .npy header is 64-byte aligned like numpy's. */
    {
        FILE *f = fopen(path("w.npy"), "rb");
        unsigned char h[10];
        CHECK(f && fread(h, 1, 10, f) == 10);
        CHECK((10 + (h[8] | h[9] << 8)) % 64 == 0);
        if (f)
            fclose(f);
    }
    CHECK(tw_write_closes("/nonexistent-dir/x.npy", gen, 3, &err) < 0);

    /* npy: accepted layouts. */
    put_npy("v1.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }", 5, 40);
    good("v1.npy", NULL, seq, 5);
    put_npy("col.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (5, 1), }", 5, 40);
    good("col.npy", NULL, seq, 5);
    put_npy("order.npy", "{'shape': (5,), 'fortran_order': False, 'descr': '<f8'}", 5, 40);
    good("order.npy", NULL, seq, 5);
    /* npy: rejected, each naming why. */
    put_npy("f4.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", 5, 40);
    bad("f4.npy", NULL, -TW_EFORMAT, "'<f4'");
    put_npy("be.npy", "{'descr': '>f8', 'fortran_order': False, 'shape': (5,), }", 5, 40);
    bad("be.npy", NULL, -TW_EFORMAT, "'>f8'");
    put_npy("i8.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }", 5, 40);
    bad("i8.npy", NULL, -TW_EFORMAT, "'<i8'");
    put_npy("fort.npy", "{'descr': '<f8', 'fortran_order': True, 'shape': (5,), }", 5, 40);
    bad("fort.npy", NULL, -TW_EFORMAT, "fortran_order");
    put_npy("2d.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 6, 48);
    bad("2d.npy", NULL, -TW_EFORMAT, "(2, 3)");
    put_npy("3d.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 5), }", 5, 40);
    bad("3d.npy", NULL, -TW_EFORMAT, "(1, 1, 5)");
    put_npy("0d.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 1, 8);
    bad("0d.npy", NULL, -TW_EFORMAT, "shape ()");
    put_npy("trunc.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }", 5, 37);
    bad("trunc.npy", NULL, -TW_EFORMAT, "truncated");
    put_npy("extra.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }", 5, 40);
    bad("extra.npy", NULL, -TW_EFORMAT, "after");
    put_npy("empty.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (0,), }", 0, 0);
    bad("empty.npy", NULL, -TW_ENODATA, "no values");
    put_npy("garbage.npy", "{'descr' '<f8'}", 0, 0);
    bad("garbage.npy", NULL, -TW_EFORMAT, "bad key");
    put_npy("nodescr.npy", "{'fortran_order': False, 'shape': (5,), }", 5, 40);
    bad("nodescr.npy", NULL, -TW_EFORMAT, "descr");
    put("magic.npy", "NUMPY\x01\x00xxxxxxxx", 14);
    bad("magic.npy", NULL, -TW_EFORMAT, "magic");
    put("short.npy", "\x93NUM", 4);
    bad("short.npy", NULL, -TW_EFORMAT, "truncated");
    bad("missing.npy", NULL, -ENOENT, "missing.npy");
    /* Every truncation of a good header is an error, never a crash. */
    {
        FILE *f = fopen(path("v1.npy"), "rb");
        unsigned char buf[256];
        size_t len = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        for (size_t cut = 0; cut < len; cut++) {
            size_t count;
            long r = tw__npy_parse(buf, cut, &count, &err);
            CHECKF(cut < 128 ? r == -2 : r == 128, "cut %zu: %ld", cut, r);
            double *v;
            size_t n;
            CHECK(tw__npy_load(buf, cut, "x", &v, &n, &err) != 0);
        }
    }

    /* raw. */
    put("r.f64", seq, 40);
    good("r.f64", NULL, seq, 5);
    put("odd.f64", seq, 39);
    bad("odd.f64", NULL, -TW_EFORMAT, "39 bytes");
    put("zero.f64", seq, 0);
    bad("zero.f64", NULL, -TW_ENODATA, "empty");

    /* CSV. */
    const char *c1 = "date,open,close\n2024-01-01,1.5,1\n2024-01-02,1.5,2\n2024-01-03,1.5,3\n"
                     "2024-01-04,1.5,4\n2024-01-05,1.5,5\n\n";
    put("a.csv", c1, strlen(c1));
    good("a.csv", NULL, seq, 5);
    double opens[5] = {1.5, 1.5, 1.5, 1.5, 1.5};
    good("a.csv", "open", opens, 5);
    const char *c2 = "\"ts\" , \"px\"\r\n1, 1\r\n2,  2 \r\n3,3\r\n4,4\r\n5,5";
    put("crlf.csv", c2, strlen(c2));
    good("crlf.csv", "px", seq, 5);
    const char *c3 = "close\n1\n\n2\nnan\n\n";
    double w3[3] = {1, 2, NAN};
    put("gaps.csv", c3, strlen(c3));
    good("gaps.csv", NULL, w3, 3);
    const char *c4 = "t,close\n1,1\n2,\n3,3\n";
    double w4[3] = {1, NAN, 3};
    put("empty_field.csv", c4, strlen(c4));
    good("empty_field.csv", NULL, w4, 3);

    const char *b1 = "1.0\n2.0\n3.0\n";
    put("nohdr.csv", b1, strlen(b1));
    bad("nohdr.csv", NULL, -TW_EFORMAT, "header");
    put("nohdr2.csv", b1, strlen(b1));
    bad("nohdr2.csv", "close", -TW_EFORMAT, "line 1");
    const char *b2 = "date,open\n1,2\n";
    put("nocol.csv", b2, strlen(b2));
    bad("nocol.csv", NULL, -TW_EFORMAT, "no column 'close'");
    const char *b3 = "date,close\n1,100\n2,101\n3,abc\n4,102\n";
    put("badline.csv", b3, strlen(b3));
    bad("badline.csv", NULL, -TW_EFORMAT, "line 4");
    const char *b4 = "date,x,close\n1,2,3\n2,3\n";
    put("short.csv", b4, strlen(b4));
    bad("short.csv", NULL, -TW_EFORMAT, "line 3");
    const char *b5 = "close\n1.5x\n";
    put("junk.csv", b5, strlen(b5));
    bad("junk.csv", NULL, -TW_EFORMAT, "line 2: bad value '1.5x'");
    put("hdronly.csv", "close\n", 6);
    bad("hdronly.csv", NULL, -TW_ENODATA, "no data");
    put("zero.csv", "", 0);
    bad("zero.csv", NULL, -TW_EFORMAT, "header");

    /* Clean up. */
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return tw_check_done("kernel_data");
}
