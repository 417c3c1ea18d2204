/* libFuzzer target: the memif port spec's parser (what follows "memif:"
 * in `stack =`, `--port`), tw__memif_spec_parse in tools/common/portspec.c.
 * Accepted or refused, never a crash; what it accepts is a spec DPDK's
 * devargs can carry (a socket path with no blank, '=', ',' or ';', shorter
 * than sun_path; id 0..255; a MAC xx:xx:xx:xx:xx:xx), and a refusal names
 * the spec. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/portspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0;
    tw__memif_spec m;
    tw_error err = { 0 };
    int rc = tw__memif_spec_parse(s, &m, &err);
    if (rc != 0) {
        TW_VERIFY(rc == -EINVAL && !strncmp(err.msg, "port spec", 9));
    } else {
        size_t n = strlen(m.socket);
        TW_VERIFY(n > 0 && n < sizeof(m.socket) && !strpbrk(m.socket, " \t\n=,;"));
        TW_VERIFY(m.id <= 255 && (m.server == 0 || m.server == 1) && strlen(m.mac) == 17);
        for (int i = 0; i < 17; i++)
            TW_VERIFY(i % 3 == 2 ? m.mac[i] == ':' : m.mac[i] != ':');
    }
    free(s);
    return 0;
}
