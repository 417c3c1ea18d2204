/* libFuzzer target: any bytes as a journal file.
 *
 * Input: the first byte picks the read-ahead (1 + b % 7 records, so chunk
 * edges fall everywhere) and whether a follower also reads it with the
 * second byte as its known end; the rest is the file.
 * Invariants checked: the reader returns whole records with the right CRC
 * and consecutive seqs, then 0 or an error, never a crash; the writer's
 * open agrees with the reader (the same records, or the same refusal, and
 * a refused file is left as it was); a journal the writer accepted takes
 * one more record that a reader then finds after the others. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tickwire/journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads the whole journal in fd; returns the records or the error. */
static long read_all(int fd, int follow, uint64_t known_end, uint32_t buf_records)
{
    tw_journal_reader r;
    tw_error err = {0};
    tw_journal_reader_cfg cfg = {.fd = fd, .follow = follow, .buf_records = buf_records};
    int rc = tw_journal_reader_open(&r, &cfg, &err);
    if (rc != 0) {
        TW_VERIFY(rc < 0 && err.msg[0]);
        return rc;
    }
    if (follow)
        tw_journal_reader_expect(&r, known_end);
    tw_journal_rec recs[5];
    long n = 0;
    uint64_t seq = r.first_seq;
    int k;
    while ((k = tw_journal_read_burst(&r, recs, 5, &err)) > 0) {
        for (int i = 0; i < k; i++) {
            TW_VERIFY(recs[i].seq == seq);
            TW_VERIFY(tw_journal_rec_crc(&recs[i]) == recs[i].crc);
            TW_VERIFY((recs[i].tag & ~TW_JOURNAL_KIND_MASK) == TW_JOURNAL_REC_MAGIC);
            TW_VERIFY(tw_journal_rec_kind(&recs[i]) != 0);
            seq++;
        }
        n += k;
    }
    if (k < 0)
        TW_VERIFY(err.msg[0] && r.failed == k);
    tw_journal_reader_close(&r);
    return k < 0 ? k : n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint32_t buf_records = 1 + data[0] % 7;
    int follow = data[0] & 0x80;
    uint64_t known_end = data[1];
    data += 2;
    size -= 2;
    int fd = memfd_create("fuzz-journal", MFD_CLOEXEC);
    TW_VERIFY(fd >= 0);
    TW_VERIFY(size == 0 || write(fd, data, size) == (ssize_t)size);
    long n = read_all(fd, 0, 0, buf_records);
    if (follow)
        (void)read_all(fd, 1, known_end, buf_records);
    /* The writer's open on the same bytes. */
    tw_journal j;
    tw_error err = {0};
    tw_journal_cfg cfg = {.fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)};
    TW_VERIFY(cfg.fd >= 0);
    int rc = tw_journal_open(&j, &cfg, &err);
    if (n >= 0) {
        TW_VERIFY(rc == 0 && (long)j.records == n);
        uint8_t pl[TW_JOURNAL_PAYLOAD] = {1, 2, 3};
        tw_journal_rec rec;
        TW_VERIFY(tw_journal_append(&j, TW_JOURNAL_EV, pl, &rec) == 0);
        TW_VERIFY(rec.seq == j.first_seq + (uint64_t)n);
        tw_journal_close(&j);
        TW_VERIFY(read_all(fd, 0, 0, buf_records) == n + 1);
    } else if (n == -ENODATA) {
        /* Shorter than a header: a new journal if it is a header's start. */
        if (rc == 0)
            tw_journal_close(&j);
        else
            TW_VERIFY(rc == -TW_EFORMAT);
    } else {
        TW_VERIFY(rc == n);
        struct stat st;
        TW_VERIFY(fstat(fd, &st) == 0 && (size_t)st.st_size == size);
        uint8_t *back = malloc(size ? size : 1);
        TW_VERIFY(pread(fd, back, size, 0) == (ssize_t)size && memcmp(back, data, size) == 0);
        free(back);
    }
    close(fd);
    return 0;
}
