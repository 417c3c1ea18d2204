/* Data for the kernel: the synthetic generator (kernel.md "Data") and the
 * readers/writers of raw float64, .npy and CSV closes.
 *
 * The parsers work on a buffer (tw__npy_parse, tw__csv_parse) so that the
 * fuzz targets can feed them from memory; the file functions read the
 * whole file and wrap them. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "kernel/kernel_internal.h"
#include "kernel/data_internal.h"

/* ---- generator ---------------------------------------------------------- */

uint64_t tw__splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void tw__xoshiro_seed(uint64_t st[4], uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        st[i] = tw__splitmix64(&x);
}

uint64_t tw__xoshiro_next(uint64_t st[4])
{
    uint64_t result = rotl(st[1] * 5, 7) * 9;
    uint64_t t = st[1] << 17;
    st[2] ^= st[0];
    st[3] ^= st[1];
    st[1] ^= st[2];
    st[0] ^= st[3];
    st[2] ^= t;
    st[3] = rotl(st[3], 45);
    return result;
}

void tw_gen_closes(double *close, size_t n, uint64_t seed, double sigma)
{
    /* 2 pi as a double: doubling M_PI is exact. */
    const double two_pi = 2.0 * 3.14159265358979323846;
    uint64_t st[4];
    tw__xoshiro_seed(st, seed);
    double cum = 0.0;
    for (size_t i = 0; i < n; i += 2) {
        double u1 = (double)(tw__xoshiro_next(st) >> 11) * 0x1.0p-53;
        double u2 = (double)(tw__xoshiro_next(st) >> 11) * 0x1.0p-53;
        u1 = 1.0 - u1; /* (0, 1]: log never sees 0 */
        double r = sqrt(-2.0 * log(u1));
        double z0 = r * cos(two_pi * u2);
        double z1 = r * sin(two_pi * u2);
        cum += sigma * z0;
        close[i] = 100.0 * exp(cum);
        if (i + 1 < n) {
            cum += sigma * z1;
            close[i + 1] = 100.0 * exp(cum);
        }
    }
}

/* ---- little-endian doubles ---------------------------------------------- */

static void le_to_doubles(const uint8_t *src, size_t n, double *dst)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(dst, src, n * sizeof(double));
#else
    for (size_t i = 0; i < n; i++) {
        uint64_t v = 0;
        for (int b = 7; b >= 0; b--)
            v = v << 8 | src[i * 8 + (size_t)b];
        memcpy(&dst[i], &v, 8);
    }
#endif
}

static void doubles_to_le(const double *src, size_t n, uint8_t *dst)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(dst, src, n * sizeof(double));
#else
    for (size_t i = 0; i < n; i++) {
        uint64_t v;
        memcpy(&v, &src[i], 8);
        for (int b = 0; b < 8; b++)
            dst[i * 8 + (size_t)b] = (uint8_t)(v >> (8 * b));
    }
#endif
}

/* ---- .npy --------------------------------------------------------------- */

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

struct cursor {
    const char *p, *end;
};

static void skip_ws(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

static int eat(struct cursor *c, char ch)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* A quoted Python string literal without escapes into out (NUL-terminated,
 * at most cap - 1 chars).  0 or -1. */
static int parse_str(struct cursor *c, char *out, size_t cap)
{
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return -1;
    char q = *c->p++;
    size_t k = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || k + 1 >= cap)
            return -1;
        out[k++] = *c->p++;
    }
    if (c->p >= c->end)
        return -1;
    c->p++;
    out[k] = '\0';
    return 0;
}

static int parse_word(struct cursor *c, const char *w)
{
    skip_ws(c);
    size_t l = strlen(w);
    if ((size_t)(c->end - c->p) >= l && !memcmp(c->p, w, l)) {
        c->p += l;
        return 1;
    }
    return 0;
}

long tw__npy_parse(const uint8_t *buf, size_t len, size_t *count, tw_error *err)
{
    size_t m = len < sizeof(npy_magic) ? len : sizeof(npy_magic);
    if (memcmp(buf, npy_magic, m))
        return tw__err(err, -TW_EFORMAT, "not a .npy file (bad magic)"), -1;
    if (len < 10)
        return -2;
    unsigned major = buf[6];
    size_t hlen, hoff;
    if (major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        hoff = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return -2;
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
               (size_t)buf[11] << 24;
        hoff = 12;
    } else {
        return tw__err(err, -TW_EFORMAT, "unsupported .npy version %u.%u", major, buf[7]), -1;
    }
    if (hlen > len - hoff)
        return -2;
    struct cursor c = {(const char *)buf + hoff, (const char *)buf + hoff + hlen};

    char descr[32] = "";
    int have_descr = 0, have_fortran = 0, have_shape = 0, fortran = 0;
    size_t dims[8];
    int ndim = 0;
    if (!eat(&c, '{'))
        return tw__err(err, -TW_EFORMAT, ".npy header is not a dict"), -1;
    for (;;) {
        if (eat(&c, '}'))
            break;
        char key[32];
        if (parse_str(&c, key, sizeof(key)) || !eat(&c, ':'))
            return tw__err(err, -TW_EFORMAT, ".npy header: bad key"), -1;
        if (!strcmp(key, "descr")) {
            if (parse_str(&c, descr, sizeof(descr)))
                return tw__err(err, -TW_EFORMAT, ".npy header: bad descr (structured dtypes not supported)"), -1;
            have_descr = 1;
        } else if (!strcmp(key, "fortran_order")) {
            if (parse_word(&c, "True"))
                fortran = 1;
            else if (parse_word(&c, "False"))
                fortran = 0;
            else
                return tw__err(err, -TW_EFORMAT, ".npy header: bad fortran_order"), -1;
            have_fortran = 1;
        } else if (!strcmp(key, "shape")) {
            if (!eat(&c, '('))
                return tw__err(err, -TW_EFORMAT, ".npy header: bad shape"), -1;
            while (!eat(&c, ')')) {
                skip_ws(&c);
                if (ndim == (int)TW_ARRAY_SIZE(dims) || c.p >= c.end || *c.p < '0' || *c.p > '9')
                    return tw__err(err, -TW_EFORMAT, ".npy header: bad shape"), -1;
                size_t v = 0;
                while (c.p < c.end && *c.p >= '0' && *c.p <= '9') {
                    if (v > (SIZE_MAX / 8 - 9) / 10)
                        return tw__err(err, -TW_EFORMAT, ".npy header: shape too large"), -1;
                    v = v * 10 + (size_t)(*c.p++ - '0');
                }
                skip_ws(&c);
                if (c.p < c.end && *c.p == 'L')
                    c.p++;
                dims[ndim++] = v;
                if (!eat(&c, ',')) {
                    if (!eat(&c, ')'))
                        return tw__err(err, -TW_EFORMAT, ".npy header: bad shape"), -1;
                    break;
                }
            }
            have_shape = 1;
        } else {
            return tw__err(err, -TW_EFORMAT, ".npy header: unexpected key '%s'", key), -1;
        }
        if (!eat(&c, ',')) {
            if (!eat(&c, '}'))
                return tw__err(err, -TW_EFORMAT, ".npy header: expected ',' or '}'"), -1;
            break;
        }
    }
    if (!have_descr || !have_fortran || !have_shape)
        return tw__err(err, -TW_EFORMAT, ".npy header lacks %s",
                       !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape"), -1;
    if (strcmp(descr, "<f8"))
        return tw__err(err, -TW_EFORMAT,
                       ".npy dtype '%s' not supported (need little-endian float64 '<f8')",
                       descr), -1;
    if (fortran)
        return tw__err(err, -TW_EFORMAT,
                       ".npy fortran_order True not supported (need C order)"), -1;
    if (ndim == 0)
        return tw__err(err, -TW_EFORMAT, ".npy shape () (a scalar) not supported (need 1-D)"), -1;
    if (ndim > 2 || (ndim == 2 && dims[1] != 1)) {
        char shape[96];
        int o = 0;
        for (int d = 0; d < ndim && o < (int)sizeof(shape) - 24; d++)
            o += snprintf(shape + o, sizeof(shape) - (size_t)o, "%s%zu", d ? ", " : "", dims[d]);
        return tw__err(err, -TW_EFORMAT,
                       ".npy shape (%s) not supported (need 1-D or (n, 1))", shape), -1;
    }
    *count = dims[0];
    return (long)(hoff + hlen);
}

/* ---- CSV ---------------------------------------------------------------- */

/* One field [b, e) with surrounding blanks and quotes removed. */
static void trim(const char **b, const char **e)
{
    while (*b < *e && (**b == ' ' || **b == '\t'))
        (*b)++;
    while (*e > *b && ((*e)[-1] == ' ' || (*e)[-1] == '\t' || (*e)[-1] == '\r'))
        (*e)--;
    if (*e - *b >= 2 && **b == '"' && (*e)[-1] == '"') {
        (*b)++;
        (*e)--;
    }
}

/* Field number col of line [b, e); 0 if the line has fewer fields. */
static int field(const char *b, const char *e, size_t col, const char **fb, const char **fe)
{
    for (size_t k = 0;; k++) {
        const char *comma = memchr(b, ',', (size_t)(e - b));
        const char *end = comma ? comma : e;
        if (k == col) {
            *fb = b;
            *fe = end;
            trim(fb, fe);
            return 1;
        }
        if (!comma)
            return 0;
        b = comma + 1;
    }
}

int tw__csv_parse(const char *buf, size_t len, const char *column, const char *name,
                  double **out, size_t *n_out, tw_error *err)
{
    if (!column || !*column)
        column = "close";
    const char *end = buf + len;
    /* Skip a UTF-8 byte order mark. */
    if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
        buf += 3;
    const char *nl = memchr(buf, '\n', (size_t)(end - buf));
    const char *hend = nl ? nl : end;
    if (hend == buf || (hend - buf == 1 && *buf == '\r'))
        return tw__err(err, -TW_EFORMAT, "%s: no header line (a CSV header naming the columns is required)", name);

    /* Find the column in the header. */
    size_t col = 0;
    int found = 0, numeric = 1;
    for (size_t k = 0;; k++) {
        const char *fb, *fe;
        if (!field(buf, hend, k, &fb, &fe))
            break;
        char tmp[64];
        size_t fl = (size_t)(fe - fb);
        if (fl < sizeof(tmp)) {
            memcpy(tmp, fb, fl);
            tmp[fl] = '\0';
            char *ep;
            strtod(tmp, &ep);
            if (fl == 0 || *ep)
                numeric = 0;
        } else {
            numeric = 0;
        }
        if (!found && fl == strlen(column) && !memcmp(fb, column, fl)) {
            col = k;
            found = 1;
        }
    }
    if (!found && numeric)
        return tw__err(err, -TW_EFORMAT, "%s: line 1 looks like data, not a header (a CSV header naming the columns is required)", name);
    if (!found)
        return tw__err(err, -TW_EFORMAT, "%s: no column '%s' in the header", name, column);

    /* Count data lines to size the output once. */
    size_t cap = 0;
    for (const char *p = hend; p < end; p++)
        cap += *p == '\n';
    cap += 1;
    double *v = malloc(cap * sizeof(double));
    if (!v)
        return tw__err(err, -ENOMEM, "%s: out of memory", name);

    size_t n = 0, line = 1;
    const char *p = nl ? nl + 1 : end;
    while (p < end) {
        line++;
        const char *le = memchr(p, '\n', (size_t)(end - p));
        if (!le)
            le = end;
        const char *lb = p;
        p = le < end ? le + 1 : end;
        const char *tb = lb, *te = le;
        trim(&tb, &te);
        if (tb == te)
            continue; /* blank line */
        const char *fb, *fe;
        if (!field(lb, le, col, &fb, &fe)) {
            free(v);
            return tw__err(err, -TW_EFORMAT, "%s: line %zu: no field %zu ('%s')", name,
                           line, col + 1, column);
        }
        size_t fl = (size_t)(fe - fb);
        if (fl == 0) {
            v[n++] = NAN; /* an empty field is a gap */
            continue;
        }
        char tmp[64];
        char *ep = tmp;
        if (fl < sizeof(tmp)) {
            memcpy(tmp, fb, fl);
            tmp[fl] = '\0';
            v[n] = strtod(tmp, &ep);
        }
        if (fl >= sizeof(tmp) || *ep || ep == tmp) {
            int show = fl > 32 ? 32 : (int)fl;
            free(v);
            return tw__err(err, -TW_EFORMAT, "%s: line %zu: bad value '%.*s' in column '%s'",
                           name, line, show, fb, column);
        }
        n++;
    }
    if (n == 0) {
        free(v);
        return tw__err(err, -TW_ENODATA, "%s: no data lines after the header", name);
    }
    *out = v;
    *n_out = n;
    return 0;
}

/* ---- files -------------------------------------------------------------- */

/* The whole file into one malloc'd buffer, sized from the file's size
 * when it has one (so that no more than the file is ever resident), else
 * grown as it is read. */
static int read_file(const char *path, uint8_t **buf, size_t *len, tw_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tw__err(err, -errno, "%s: %s", path, strerror(errno));
    uint8_t *b = NULL;
    size_t n = 0, cap = 0;
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
        (uint64_t)sb.st_size < SIZE_MAX / 2) {
        /* One byte more, so that a file that grew is still seen to. */
        cap = (size_t)sb.st_size + 1;
        b = malloc(cap);
        if (!b) {
            fclose(f);
            return tw__err(err, -ENOMEM, "%s: out of memory for %zu bytes", path, cap - 1);
        }
    }
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            uint8_t *nb = realloc(b, cap);
            if (!nb) {
                free(b);
                fclose(f);
                return tw__err(err, -ENOMEM, "%s: out of memory", path);
            }
            b = nb;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(b);
        return tw__err(err, -EIO, "%s: read error", path);
    }
    *buf = b;
    *len = n;
    return 0;
}

/* The data part of a parsed .npy: exactly count values after the header. */
static int npy_check(const uint8_t *b, size_t len, size_t off, size_t count, const char *name,
                     tw_error *err)
{
    (void)b;
    size_t data = len - off;
    if (data < count * 8)
        return tw__err(err, -TW_EFORMAT,
                       "%s: truncated: the header says %zu values, the file holds %zu bytes of data",
                       name, count, data);
    if (data > count * 8)
        return tw__err(err, -TW_EFORMAT, "%s: %zu bytes after the %zu values", name,
                       data - count * 8, count);
    if (count == 0)
        return tw__err(err, -TW_ENODATA, "%s: no values", name);
    return 0;
}

/* The n little-endian float64 at buf + off, made the buffer's own
 * doubles in place (moved to its start, byte order fixed on big-endian
 * hosts) and the buffer shrunk to them; buf was malloc'd and is now the
 * caller's as the returned array. */
static double *in_place_doubles(uint8_t *buf, size_t off, size_t n)
{
    if (off)
        memmove(buf, buf + off, n * 8);
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
    for (size_t i = 0; i < n; i++) {
        uint64_t v = 0;
        for (int b = 7; b >= 0; b--)
            v = v << 8 | buf[i * 8 + (size_t)b];
        memcpy(buf + i * 8, &v, 8);
    }
#endif
    double *v = realloc(buf, n * sizeof(double));
    return v ? v : (double *)(void *)buf;
}

int tw_read_raw(const char *path, double **close, size_t *n, tw_error *err)
{
    uint8_t *b;
    size_t len;
    int rc = read_file(path, &b, &len, err);
    if (rc)
        return rc;
    if (len % 8) {
        free(b);
        return tw__err(err, -TW_EFORMAT,
                       "%s: %zu bytes is not a whole number of float64 values", path, len);
    }
    if (len == 0) {
        free(b);
        return tw__err(err, -TW_ENODATA, "%s: empty file", path);
    }
    /* The file's bytes become the array, converted in place: the input
     * is resident once, not twice. */
    double *v = in_place_doubles(b, 0, len / 8);
    *close = v;
    *n = len / 8;
    return 0;
}

int tw__npy_load(const uint8_t *b, size_t len, const char *name, double **close,
                 size_t *n, tw_error *err)
{
    size_t count;
    tw_error e2;
    long off = tw__npy_parse(b, len, &count, &e2);
    if (off == -2)
        return tw__err(err, -TW_EFORMAT, "%s: truncated .npy header", name);
    if (off < 0)
        return tw__err(err, -TW_EFORMAT, "%s: %s", name, e2.msg);
    int rc = npy_check(b, len, (size_t)off, count, name, err);
    if (rc)
        return rc;
    double *v = malloc(count * sizeof(double));
    if (!v)
        return tw__err(err, -ENOMEM, "%s: out of memory", name);
    le_to_doubles(b + off, count, v);
    *close = v;
    *n = count;
    return 0;
}

int tw_read_npy(const char *path, double **close, size_t *n, tw_error *err)
{
    uint8_t *b;
    size_t len;
    int rc = read_file(path, &b, &len, err);
    if (rc)
        return rc;
    /* Checked as tw__npy_load does, then converted in place. */
    size_t count;
    tw_error e2;
    long off = tw__npy_parse(b, len, &count, &e2);
    rc = 0;
    if (off == -2)
        rc = tw__err(err, -TW_EFORMAT, "%s: truncated .npy header", path);
    else if (off < 0)
        rc = tw__err(err, -TW_EFORMAT, "%s: %s", path, e2.msg);
    if (rc) {
        free(b);
        return rc;
    }
    rc = npy_check(b, len, (size_t)off, count, path, err);
    if (rc) {
        free(b);
        return rc;
    }
    *close = in_place_doubles(b, (size_t)off, count);
    *n = count;
    return 0;
}

int tw_read_csv(const char *path, const char *column, double **close, size_t *n,
                tw_error *err)
{
    uint8_t *b;
    size_t len;
    int rc = read_file(path, &b, &len, err);
    if (rc)
        return rc;
    rc = tw__csv_parse((const char *)b, len, column, path, close, n, err);
    free(b);
    return rc;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcasecmp(s + a - b, suffix);
}

int tw_read_closes(const char *path, const char *column, double **close, size_t *n,
                   tw_error *err)
{
    if (ends_with(path, ".npy"))
        return tw_read_npy(path, close, n, err);
    if (ends_with(path, ".csv"))
        return tw_read_csv(path, column, close, n, err);
    return tw_read_raw(path, close, n, err);
}

int tw_write_closes(const char *path, const double *close, size_t n, tw_error *err)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return tw__err(err, -errno, "%s: %s", path, strerror(errno));
    int ok = 1;
    if (ends_with(path, ".csv")) {
        ok = fputs("close\n", f) >= 0;
        for (size_t i = 0; i < n && ok; i++)
            ok = fprintf(f, "%.17g\n", close[i]) > 0;
    } else {
        if (ends_with(path, ".npy")) {
            char hdr[128];
            int hl = snprintf(hdr, sizeof(hdr),
                              "{'descr': '<f8', 'fortran_order': False, 'shape': (%zu,), }", n);
            /* Pad with spaces so that magic + length + header + '\n' is a
             * multiple of 64, as numpy does. */
            size_t total = 10 + (size_t)hl + 1;
            size_t pad = (64 - total % 64) % 64;
            size_t hlen = (size_t)hl + pad + 1;
            uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                               (uint8_t)(hlen & 0xff), (uint8_t)(hlen >> 8)};
            ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)hl, f) == (size_t)hl;
            for (size_t i = 0; i < pad && ok; i++)
                ok = fputc(' ', f) != EOF;
            ok = ok && fputc('\n', f) != EOF;
        }
        uint8_t chunk[8 * 1024];
        for (size_t i = 0; i < n && ok; i += 1024) {
            size_t m = n - i < 1024 ? n - i : 1024;
            doubles_to_le(close + i, m, chunk);
            ok = fwrite(chunk, 8, m, f) == m;
        }
    }
    if (fclose(f) != 0)
        ok = 0;
    if (!ok)
        return tw__err(err, -EIO, "%s: write error", path);
    return 0;
}

/* ---- grid files ---------------------------------------------------------- */

static const char *const grid_cols[TW_COMBO_WINDOWS] = {
    "h_half", "h_full", "h_sqrt", "t_third", "t_half", "t_full",
};

/* An integral value of the grid file (its range is the sweep's to check,
 * which names the combo). */
static int grid_int(const char *path, const char *col, size_t row, double v, int64_t *out,
                    tw_error *err)
{
    if (!(v == v) || v != floor(v) || fabs(v) > 1e15)
        return tw__err(err, -TW_EFORMAT, "%s: row %zu: %s = %g is not an integer", path,
                       row + 1, col, v);
    *out = (int64_t)v;
    return 0;
}

int tw__read_file(const char *path, uint8_t **buf, size_t *len, tw_error *err)
{
    return read_file(path, buf, len, err);
}

int tw_read_grid(const char *path, int64_t **combos_out, size_t *n_out, tw_error *err)
{
    uint8_t *raw;
    size_t len;
    int rc = read_file(path, &raw, &len, err);
    if (rc)
        return rc;
    rc = tw__grid_parse((const char *)raw, len, path, combos_out, n_out, err);
    free(raw);
    return rc;
}

int tw__grid_parse(const char *buf, size_t len, const char *path, int64_t **combos_out,
                   size_t *n_out, tw_error *err)
{
    int rc;
    double *col[TW_COMBO_WINDOWS] = {0}, *lens = NULL;
    int64_t *combos = NULL;
    size_t rows = 0;
    tw_error e2;
    /* Six window columns, or else one `length` column. */
    rc = tw__csv_parse(buf, len, grid_cols[0], path, &col[0], &rows, &e2);
    if (rc == 0) {
        for (int j = 1; j < TW_COMBO_WINDOWS && rc == 0; j++) {
            size_t r2;
            rc = tw__csv_parse(buf, len, grid_cols[j], path, &col[j], &r2, err);
            if (rc == 0 && r2 != rows)
                rc = tw__err(err, -TW_EFORMAT, "%s: column %s has %zu rows, h_half %zu", path,
                             grid_cols[j], r2, rows);
        }
        if (rc == 0 && !(combos = malloc(rows * TW_COMBO_WINDOWS * sizeof(int64_t))))
            rc = tw__err(err, -ENOMEM, "%s: out of memory", path);
        for (size_t r = 0; rc == 0 && r < rows; r++)
            for (int j = 0; rc == 0 && j < TW_COMBO_WINDOWS; j++)
                rc = grid_int(path, grid_cols[j], r, col[j][r],
                              &combos[r * TW_COMBO_WINDOWS + (size_t)j], err);
    } else if (strstr(e2.msg, "no column") &&
               (rc = tw__csv_parse(buf, len, "length", path, &lens, &rows, &e2)) == 0) {
        if (!(combos = malloc(rows * TW_COMBO_WINDOWS * sizeof(int64_t))))
            rc = tw__err(err, -ENOMEM, "%s: out of memory", path);
        for (size_t r = 0; rc == 0 && r < rows; r++) {
            int64_t L = 0;
            rc = grid_int(path, "length", r, lens[r], &L, err);
            if (rc == 0 && (L < 1 || L > 2 * TW_WINDOW_MAX))
                rc = tw__err(err, -TW_EFORMAT, "%s: row %zu: length %lld outside [1, %d]",
                             path, r + 1, (long long)L, 2 * TW_WINDOW_MAX);
            if (rc == 0)
                tw_combo_from_length(L, combos + r * TW_COMBO_WINDOWS);
        }
    } else if (strstr(e2.msg, "no column")) {
        rc = tw__err(err, -TW_EFORMAT, "%s: the grid needs the columns "
                     "h_half,h_full,h_sqrt,t_third,t_half,t_full or a column length", path);
    } else {
        rc = tw__err(err, e2.code, "%s", e2.msg);
    }
    for (int j = 0; j < TW_COMBO_WINDOWS; j++)
        free(col[j]);
    free(lens);
    if (rc) {
        free(combos);
        return rc;
    }
    *combos_out = combos;
    *n_out = rows;
    return 0;
}
