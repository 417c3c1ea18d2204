/* libFuzzer target: double -> shortest decimal text.  Every 8 bytes are a
 * double (any bit pattern); its text from tw_double_to_decimal must be the
 * reference's (the printf + strtod shortest search), parse back to the
 * same bits, and tw_decimal_put must write the same bytes when they fit
 * and nothing when one byte short. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "common/decimal_internal.h"
#include "tickwire/decimal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (size_t i = 0; i + 8 <= size && i < 8 * 64; i += 8) {
        double x;
        memcpy(&x, data + i, sizeof x);
        char a[TW_DECIMAL_MAX], b[TW_DECIMAL_MAX], c[TW_DECIMAL_MAX];
        size_t n = tw_double_to_decimal(x, a);
        TW_VERIFY(n < TW_DECIMAL_MAX && strlen(a) == n);
        tw__double_to_decimal_ref(x, b);
        TW_VERIFY(strcmp(a, b) == 0);
        if (isfinite(x)) {
            double y;
            TW_VERIFY(tw_decimal_to_double(a, n, &y) == 0 && memcmp(&x, &y, sizeof x) == 0);
        }
        memset(c, '#', sizeof c);
        TW_VERIFY(tw_decimal_put(x, c, n) == (int)n && memcmp(c, a, n) == 0 && c[n] == '#');
        memset(c, '#', sizeof c);
        TW_VERIFY(tw_decimal_put(x, c, n - 1) == -ENOSPC && c[0] == '#');
    }
    return 0;
}
