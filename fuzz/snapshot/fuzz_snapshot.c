/* libFuzzer target: any bytes as a snapshot file.
 *
 * Invariants: tw_snap_parse returns 0 or an error with a message, never a
 * crash or a read outside the input; on 0 every section lies inside the
 * input, and rebuilding the sections through the builder
 * and writer gives back the same bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tickwire/util.h"
#include "tickwire/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tw_snap s;
    tw_error err = {0};
    int rc = tw_snap_parse(data, size, &s, &err);
    if (rc != 0) {
        TW_VERIFY(rc < 0 && err.msg[0]);
        return 0;
    }
    tw_snap_buf b;
    tw_snap_begin(&b, s.hdr.journal_seq, s.hdr.digest);
    for (uint32_t i = 0; i < s.nsec; i++) {
        const tw_snap_section *x = &s.sec[i];
        TW_VERIFY(x->data >= data && x->data + x->len <= data + size);
        TW_VERIFY(tw_snap_add(&b, x->id, x->data, x->len) == 0);
    }
    if (!dir[0])
        snprintf(dir, sizeof(dir), "/tmp/tw-fuzz-snap-%d", (int)getpid());
    tw_snap_write_cfg c = {.dir = dir, .keep = 1};
    TW_VERIFY(tw_snap_write(&b, &c, &err) == 0);
    char p[128];
    snprintf(p, sizeof(p), "%s/snap-%020llu.tws", dir, (unsigned long long)s.hdr.journal_seq);
    tw_snap back;
    TW_VERIFY(tw_snap_check_file(p, &back, &err) == 0);
    TW_VERIFY(back.file_len == size && memcmp(back.file, data, size) == 0);
    tw_snap_release(&back);
    unlink(p);
    rmdir(dir);
    tw_snap_free(&b);
    tw_snap_release(&s);
    return 0;
}
