/* Internet checksum (RFC 1071) in software.  Sums 32-bit words into a
 * 64-bit accumulator so carries never need folding inside the loop; the
 * caller folds once (RFC 1071 "deferred carries"). */
#include <string.h>

#include "tickwire/net.h"

uint64_t tw_net_csum_add(uint64_t sum, const void *data, size_t len)
{
    const uint8_t *p = data;
    /* The one's-complement sum is byte-order independent (RFC 1071 2(B)):
     * summing little-endian words and storing the folded result with the
     * same byte order gives the right bytes on the wire. */
    while (len >= 32) {
        uint32_t w[8];
        memcpy(w, p, 32);
        sum += (uint64_t)w[0] + w[1] + w[2] + w[3];
        sum += (uint64_t)w[4] + w[5] + w[6] + w[7];
        p += 32;
        len -= 32;
    }
    while (len >= 4) {
        uint32_t w;
        memcpy(&w, p, 4);
        sum += w;
        p += 4;
        len -= 4;
    }
    if (len >= 2) {
        uint16_t h;
        memcpy(&h, p, 2);
        sum += h;
        p += 2;
        len -= 2;
    }
    if (len) {
        /* An odd last byte is the high byte of a big-endian word, i.e. the
         * low byte in memory order. */
        uint16_t h = 0;
        memcpy(&h, p, 1);
        sum += h;
    }
    return sum;
}

uint16_t tw_net_csum_fold(uint64_t sum)
{
    sum = (sum & 0xffffffffu) + (sum >> 32);
    sum = (sum & 0xffffffffu) + (sum >> 32);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}
