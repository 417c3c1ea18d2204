/* libFuzzer target: the named-param grid reader (tw_read_kgrid) from
 * memory.  The first byte picks the kernel (hma_sar, whose grids may also
 * be six windows or `length`, or zscore); the rest is the CSV. */
#include <stdlib.h>
#include <string.h>

#include "kernel/data_internal.h"
#include "kernel/kbook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const tw_kernel_def *def = tw_kernel_builtin(data[0] & 1);
    size -= 1;
    char *buf = malloc(size ? size : 1); /* exact size: ASan sees a read past the end */
    if (!buf)
        return 0;
    memcpy(buf, data + 1, size);
    double *p = NULL;
    size_t n = 0;
    tw_error err;
    int rc = tw__kgrid_parse(buf, size, "fuzz", def, &p, &n, &err);
    if (rc == 0) {
        TW_VERIFY(n > 0 && n <= size);
        /* The combo check decides on the bounds; it must not crash. */
        for (size_t c = 0; c < n && c < 64; c++)
            (void)tw_kernel_check_combo(def, p + c * def->n_params, &err);
        free(p);
    } else {
        TW_VERIFY(rc < 0 && err.msg[0] != '\0');
    }
    free(buf);
    return 0;
}
