/* libFuzzer target: decimal text -> double (tw_decimal_parse,
 * tw_decimal_scan) against strtod on a checked copy
 * (tw__decimal_to_double_ref): the same verdict, the same bits, a reason
 * for every refusal, and a scan that agrees with the whole-text parse.
 *
 * The first byte picks how the rest becomes text: even, as it is (the
 * corpus holds exact ties and long mantissas); odd, every byte mapped to a
 * digit, with '.' and '-' for two byte values, so that most inputs are
 * numbers, and a run of zeros (byte 1 times 4) inserted after the first
 * digits to reach the long-input paths. */
#include <stdlib.h>
#include <string.h>

#include "common/decimal_internal.h"
#include "tickwire/decimal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static void check(const char *s, size_t n)
{
    double v = -1, r = -2;
    tw_error err = { 0, "" };
    int rc = tw_decimal_parse(s, n, &v, &err);
    int rr = tw__decimal_to_double_ref(s, n, &r);
    TW_VERIFY(rc == rr);
    if (rc == 0)
        TW_VERIFY(same(v, r));
    else
        TW_VERIFY(err.code == rc && err.msg[0] != '\0' && v == -1);
    double d = -3;
    TW_VERIFY(tw_decimal_to_double(s, n, &d) == rc && (rc != 0 || same(d, v)));
    double p = -4;
    int k = tw_decimal_scan(s, n, &p);
    if (rc == 0)
        TW_VERIFY(k == (int)n && same(p, v));
    if (k > 0) {
        /* What the scan took is a decimal by itself, of the same value, and
         * it stopped at a byte that cannot continue it. */
        double q;
        TW_VERIFY(tw_decimal_to_double(s, (size_t)k, &q) == 0 && same(q, p));
        if ((size_t)k < n) {
            char c = s[k];
            int dot_before = memchr(s, '.', (size_t)k) != NULL;
            TW_VERIFY(!(c >= '0' && c <= '9') && !(c == '.' && !dot_before));
        }
    } else {
        TW_VERIFY(k == -1 && p == -4);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t n = size - 1;
    const uint8_t *in = data + 1;
    if ((data[0] & 1) == 0) {
        /* An exact-size copy, so that ASan sees any read past the end. */
        char *s = malloc(n ? n : 1);
        if (!s)
            return 0;
        memcpy(s, in, n);
        check(s, n);
        free(s);
        return 0;
    }
    size_t zeros = n > 1 ? (size_t)in[0] * 4 : 0, head = n > 1 ? 3 : 0;
    if (n > 1) {
        in++;
        n--;
    }
    if (head > n)
        head = n;
    size_t len = n + zeros;
    char *s = malloc(len ? len : 1);
    if (!s)
        return 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = in[i];
        s[o++] = b == 0xFF ? '.' : b == 0xFE ? '-' : (char)('0' + b % 10);
        if (i + 1 == head) {
            memset(s + o, '0', zeros);
            o += zeros;
        }
    }
    check(s, o);
    free(s);
    return 0;
}
