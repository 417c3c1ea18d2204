/* libFuzzer target: the .npy parser (header and data) from memory.  Any
 * input is an error or a well-formed result, never a crash or an
 * over-read; a result must agree with what the header said. */
#include <stdlib.h>
#include <string.h>

#include "kernel/data_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t count = 0;
    tw_error err;
    long off = tw__npy_parse(data, size, &count, &err);
    TW_VERIFY(off == -1 || off == -2 || (off >= 10 && (size_t)off <= size));
    double *v = NULL;
    size_t n = 0;
    int rc = tw__npy_load(data, size, "fuzz", &v, &n, &err);
    if (rc == 0) {
        TW_VERIFY(off > 0 && n == count && n > 0 && (size_t)off + 8 * n == size);
        TW_VERIFY(memcmp(v, data + off, 8 * n) == 0);
        free(v);
    } else {
        TW_VERIFY(rc < 0 && err.msg[0] != '\0');
    }
    return 0;
}
