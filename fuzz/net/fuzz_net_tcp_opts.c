/* libFuzzer target: TCP option parsing and the SACK scoreboard.
 *
 * Input: [una:4][window:2][mss:2], then chunks of [len:1][len bytes of
 * options].  Each chunk is parsed as one segment's options; the SACK
 * blocks it carries (past the window, overlapping, reversed, wrapping,
 * whatever the bytes say) go into one scoreboard for [una, una + window),
 * and the first byte of the chunk's length also moves una forward (a
 * cumulative ACK).  After each chunk the harness checks the board: sorted,
 * disjoint, bounded, inside [una, snd_max); IsLost's boundary, the pipe
 * and NextSeg inside it too. */
#include <stdint.h>
#include <string.h>

#include "net/net_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_board(const tw_tcp_sackboard *sb, uint32_t una, uint32_t max, uint32_t mss)
{
    TW_VERIFY(sb->n <= TW_TCP_SACK_BLOCKS);
    for (unsigned k = 0; k < sb->n; k++) {
        TW_VERIFY(SEQ_LT(sb->blk[k][0], sb->blk[k][1]));
        TW_VERIFY(SEQ_GEQ(sb->blk[k][0], una) && SEQ_LEQ(sb->blk[k][1], max));
        if (k)
            TW_VERIFY(SEQ_LT(sb->blk[k - 1][1], sb->blk[k][0]));
    }
    uint32_t lost = tw__sack_lost_end(sb, una, mss);
    TW_VERIFY(SEQ_GEQ(lost, una) && SEQ_LEQ(lost, max));
    uint32_t pipe = tw__sack_pipe(sb, una, max, una + (max - una) / 2, mss);
    TW_VERIFY(pipe <= 2 * (max - una));
    uint32_t seq, len, end;
    if (!tw__sack_next_hole(sb, una, max, mss, &seq, &len)) {
        TW_VERIFY(len >= 1 && len <= mss && SEQ_GEQ(seq, una) && SEQ_LEQ(seq + len, max));
        TW_VERIFY(!tw__sack_covered(sb, seq, &end) && !tw__sack_covered(sb, seq + len - 1, &end));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    uint32_t una = (uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 |
                   (uint32_t)data[2] << 8 | data[3];
    uint32_t wnd = (uint32_t)(data[4] << 8 | data[5]) << 8;
    uint32_t mss = (uint32_t)(data[6] << 8 | data[7]) % 9000 + 1;
    uint32_t max = una + wnd;
    tw_tcp_sackboard sb;
    memset(&sb, 0, sizeof(sb));
    size_t i = 8;
    while (i < size) {
        uint32_t len = data[i++];
        if (len > size - i)
            len = (uint32_t)(size - i);
        tw_tcp_opts o;
        if (tw_tcp_parse_opts(data + i, len, &o) == 0) {
            TW_VERIFY(o.sack_n <= 4 && o.wscale >= -1 && o.wscale <= 14);
            unsigned bad;
            unsigned taken = tw__sack_update(&sb, una, max, (const uint32_t(*)[2])o.sack,
                                             o.sack_n, &bad);
            /* Each block taken or refused, but a first block that is a
             * D-SACK (RFC 2883), skipped. */
            unsigned dsack = (unsigned)tw__sack_is_dsack((const uint32_t(*)[2])o.sack,
                                                         o.sack_n, una);
            TW_VERIFY(dsack <= 1 && taken + bad + dsack == o.sack_n);
        }
        check_board(&sb, una, max, mss);
        uint32_t step = (len * 977u) % (max - una + 1); /* never past snd_max */
        una += step; /* a cumulative ACK */
        tw__sack_advance(&sb, una);
        check_board(&sb, una, max, mss);
        i += len;
    }
    return 0;
}
