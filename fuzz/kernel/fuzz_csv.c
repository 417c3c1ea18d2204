/* libFuzzer target: the CSV closes reader from memory.  The first byte
 * picks the column name to look for, the rest is the file. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/data_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const cols[] = {"close", "px", "a", "", "length"};
    if (size < 1)
        return 0;
    const char *col = cols[data[0] % 5];
    /* An exact-size copy without the selector byte so that ASan sees any
     * read past the end. */
    char *buf = malloc(size - 1 ? size - 1 : 1);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, size - 1);
    double *v = NULL;
    size_t n = 0;
    tw_error err;
    int rc = tw__csv_parse(buf, size - 1, col, "fuzz", &v, &n, &err);
    if (rc == 0) {
        TW_VERIFY(n > 0 && n <= size);
        double sum = 0.0;
        for (size_t i = 0; i < n; i++)
            sum += isnan(v[i]) ? 0.0 : 1.0; /* touch every value */
        TW_VERIFY(sum <= (double)n);
        free(v);
    } else {
        TW_VERIFY(rc < 0 && err.msg[0] != '\0');
    }
    free(buf);
    return 0;
}
