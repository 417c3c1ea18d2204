/* libFuzzer target: the grid file reader (tw_read_grid) from memory: six
 * window columns or one `length` column, header required. */
#include <stdlib.h>
#include <string.h>

#include "kernel/data_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy so that ASan sees any read past the end. */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    int64_t *combos = NULL;
    size_t n = 0;
    tw_error err;
    int rc = tw__grid_parse(buf, size, "fuzz", &combos, &n, &err);
    if (rc == 0) {
        TW_VERIFY(n > 0 && n <= size);
        /* The sweep's own check decides on the ranges; it must not crash. */
        double one = 1.0;
        (void)tw_sweep_check(&one, 1, combos, n, &err);
        free(combos);
    } else {
        TW_VERIFY(rc < 0 && err.msg[0] != '\0');
    }
    free(buf);
    return 0;
}
