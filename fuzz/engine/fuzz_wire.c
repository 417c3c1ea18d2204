/* libFuzzer target for the engine's frame decoder: tw_wire_parse() over an
 * arbitrary buffer, with the invariants every caller relies on. */
#include <string.h>

#include "tickwire/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tw_wire_limits lim;
    tw_wire_limits_init(&lim);
    /* Small limits too, so the limit paths are reachable from short inputs. */
    tw_wire_limits small = lim;
    small.max_frame_bytes = 4096;
    small.max_bars = 64;
    small.max_combos = 8;
    const tw_wire_limits *ls[2] = {&lim, &small};
    for (int k = 0; k < 2; k++) {
        size_t off = 0;
        /* Walk the buffer as a stream of pipelined frames. */
        for (int frames = 0; frames < 64 && off < size; frames++) {
            tw_wire_req rq;
            tw_error err;
            int64_t n = tw_wire_parse(data + off, size - off, ls[k], &rq, &err);
            if (n == -1) {
                TW_VERIFY(rq.wire_err == TW_WERR_BAD_FRAME || rq.wire_err == TW_WERR_TOO_LARGE);
                TW_VERIFY(err.msg[0] != 0);
                break;
            }
            if (n == -2) {
                if (rq.body_len)
                    TW_VERIFY(rq.body_len <= ls[k]->max_frame_bytes &&
                              4 + (size_t)rq.body_len > size - off);
                break;
            }
            TW_VERIFY(n >= 5 && (size_t)n <= size - off && (uint64_t)n == 4u + rq.body_len);
            TW_VERIFY(rq.n_bars <= ls[k]->max_bars && rq.n_combos <= ls[k]->max_combos);
            const uint8_t *end = data + off + n;
            if (rq.close)
                TW_VERIFY(rq.close + 8ull * rq.n_bars <= end);
            if (rq.combos)
                TW_VERIFY(rq.combos + tw_wire_combos_bytes(&rq) == end);
            if (rq.opcode == TW_OP_KSWEEP)
                TW_VERIFY(rq.name_len >= 1 && rq.n_params >= 1 && rq.n_params <= 16 &&
                          !(rq.flags & ~TW_KSWEEP_FLAGS));
            /* Touch every byte the views cover (ASan checks the bounds). */
            volatile uint8_t acc = 0;
            for (const uint8_t *p = data + off; p < end; p++)
                acc ^= *p;
            (void)acc;
            off += (size_t)n;
        }
    }
    return 0;
}
