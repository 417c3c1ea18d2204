/* CRC-32C (Castagnoli) for the records of the FIX store, the event log and
 * the attach segment: the SSE4.2 instruction chosen at run time, a
 * slicing-by-8 table as the fallback and the reference. */
#include <pthread.h>
#include <string.h>

#include "tickwire/util.h"

/* The slicing-by-8 table and the choice of the hardware instruction, made
 * once per process under pthread_once: every thread that gets past
 * crc_once sees both complete (pthread_once orders them). */
static uint32_t crc_table[8][256];
static int crc_hw;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 255];
    crc_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
}

/* The SSE4.2 crc32 instruction computes CRC-32C directly, 8 bytes per
 * instruction; chosen at run time, the table version is the fallback and
 * the reference the tests compare it with. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t c = ~crc;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, b, 8);
        c = __builtin_ia32_crc32di(c, v);
        b += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--)
        c32 = __builtin_ia32_crc32qi(c32, *b++);
    return ~c32;
}

uint32_t tw_crc32c(uint32_t crc, const void *p, size_t n)
{
    pthread_once(&crc_once, crc_init);
    if (crc_hw)
        return crc32c_hw(crc, p, n);
    return tw__crc32c_sw(crc, p, n);
}

uint32_t tw__crc32c_sw(uint32_t crc, const void *p, size_t n)
{
    pthread_once(&crc_once, crc_init);
    const unsigned char *b = p;
    crc = ~crc;
    /* Slicing-by-8: store records are small, this is plenty. */
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                             (uint32_t)b[3] << 24);
        crc = crc_table[7][lo & 255] ^ crc_table[6][(lo >> 8) & 255] ^
              crc_table[5][(lo >> 16) & 255] ^ crc_table[4][lo >> 24] ^ crc_table[3][b[4]] ^
              crc_table[2][b[5]] ^ crc_table[1][b[6]] ^ crc_table[0][b[7]];
        b += 8;
        n -= 8;
    }
    while (n--)
        crc = (crc >> 8) ^ crc_table[0][(crc ^ *b++) & 255];
    return ~crc;
}
