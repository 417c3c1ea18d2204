/* libFuzzer target: any bytes as a directory of journal segments.
 *
 * Input: the first byte is the number of segments (1 + b % 4); then each
 * segment is a u16 length (little-endian) and that many bytes, the last
 * taking whatever is left.  Each is stored under the name its header's
 * first seq gives (a header too short or too large: 1 + its index).  Bit
 * 0x80 of the first byte adds the `newest` link, to the segment of first
 * seq (b >> 2) % 8, or (bit 0x40 too) to a name that is not a segment's.
 * Invariants: listing and reading return records with consecutive seqs
 * and good CRCs across the segments, then 0 or an error with a message,
 * never a crash; the writer's open agrees with the list (a directory the
 * list refuses, the writer refuses too). */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tickwire/journal_seg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void clear(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!dir[0]) {
        snprintf(dir, sizeof(dir), "/tmp/tw-fuzz-jseg-%d", (int)getpid());
        (void)mkdir(dir, 0755);
    }
    clear();
    unsigned nseg = 1 + data[0] % 4;
    size_t off = 1;
    for (unsigned i = 0; i < nseg; i++) {
        size_t len = size - off;
        if (i + 1 < nseg) {
            if (size - off < 2)
                break;
            len = (size_t)data[off] | (size_t)data[off + 1] << 8;
            off += 2;
            if (len > size - off)
                len = size - off;
        }
        uint64_t first = 1 + i;
        if (len >= TW_JOURNAL_HDR_BYTES) {
            memcpy(&first, data + off + 24, 8);
            if (first > 99999999999999999ull)
                first = 1 + i;
        }
        char p[512];
        snprintf(p, sizeof(p), "%s/%020llu.twj", dir, (unsigned long long)first);
        FILE *f = fopen(p, "wb");
        TW_VERIFY(f != NULL);
        TW_VERIFY(len == 0 || fwrite(data + off, 1, len, f) == len);
        fclose(f);
        off += len;
    }
    if (data[0] & 0x80) {
        char l[512], t[64];
        snprintf(l, sizeof(l), "%s/newest", dir);
        if (data[0] & 0x40)
            snprintf(t, sizeof(t), "../%u.twj", (unsigned)data[0]);
        else
            snprintf(t, sizeof(t), "%020llu.twj", (unsigned long long)((data[0] >> 2) % 8));
        TW_VERIFY(symlink(t, l) == 0);
    }
    tw_error err = {0};
    tw_jseg_reader r;
    int rc = tw_jseg_reader_open(&r, dir, 0, 1 + data[0] % 5, &err);
    if (rc == 0) {
        tw_journal_rec recs[4];
        uint64_t seq = r.segs[0].first_seq;
        int k;
        while ((k = tw_jseg_read_burst(&r, recs, 4, &err)) > 0)
            for (int i = 0; i < k; i++) {
                TW_VERIFY(recs[i].seq == seq);
                TW_VERIFY(tw_journal_rec_crc(&recs[i]) == recs[i].crc);
                seq++;
            }
        TW_VERIFY(k == 0 || (k < 0 && err.msg[0]));
        tw_jseg_reader_close(&r);
    } else {
        TW_VERIFY(rc < 0 && err.msg[0]);
    }
    tw_jseg_info *v;
    uint32_t n;
    int lrc = tw_jseg_list(dir, &v, &n, &err);
    if (lrc == 0)
        free(v);
    tw_jseg j;
    tw_jseg_cfg c = {.dir = dir, .segment_bytes = 4096};
    int wrc = tw_jseg_open(&j, &c, &err);
    if (lrc != 0 && lrc != -ENODATA)
        TW_VERIFY(wrc != 0);
    if (wrc == 0)
        tw_jseg_close(&j);
    clear();
    return 0;
}
