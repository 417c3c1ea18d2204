/* libFuzzer target: the one-pass typed decoder (tw_fix_decode) on the
 * input as a byte stream, held to the four-call path it replaces on every
 * message it frames (tests/fix/decode_ref.h: same return and skip, same
 * codes, same header, body, entries and views), with every ISA the CPU
 * has.  The first byte picks the framer flags, TW_FIX_PX_F64, the price
 * decimals, the entry and view capacities, so that capacity errors and
 * checksum-off framing (where the fuzzer reaches the body easily) are
 * covered too.  Bad input must come back as an error, never a crash, an
 * over-read or a disagreement. */
#include <stdint.h>
#include <stdlib.h>

#include "fix/decode_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    static const tw_isa isas[] = { TW_ISA_SCALAR, TW_ISA_SSE2, TW_ISA_AVX2, TW_ISA_AVX512 };
    static const unsigned decs[] = { 8, 0, 2, 10, 11, 18, 4, 6 };
    unsigned flags = (data[0] & 3u) | ((data[0] & 4u) ? TW_FIX_PX_F64 : 0u);
    unsigned dec = decs[(data[0] >> 3) & 7u];
    uint32_t ecap = data[1] & 1u ? 64 : data[1] >> 5;
    uint32_t fcap = data[1] & 2u ? 4096 : 2u + (data[1] >> 2);
    int with_fields = (data[1] & 4u) != 0;
    const char *p = (const char *)data + 2;
    size_t left = size - 2;
    static ref r;
    int rounds = 0;
    while (left > 0) {
        if (++rounds > 100000)
            abort(); /* the framer must make progress */
        int ret = 0;
        size_t skip = 0;
        for (size_t k = 0; k < sizeof(isas) / sizeof(isas[0]); k++) {
            if (!tw_cpu_has(isas[k]))
                continue;
            int decoded;
            /* Loose prices have no four-call reference (the accessors are
             * strict): they are held to it where it decodes, below. */
            unsigned f = flags & ~TW_FIX_PX_F64;
            if (ref_agree(isas[k], p, left, f, dec, ecap, fcap, with_fields, &r, &decoded))
                abort();
            ret = r.ret;
            skip = r.skip;
        }
        if (flags & TW_FIX_PX_F64) {
            /* Loose: the same frame, and whatever strict decodes, loose
             * decodes the same. */
            static tw_fix_md_entry ent[64];
            tw_fix_decoded d = { .flags = flags, .px_decimals = dec, .entries = ent,
                                 .entries_cap = ecap > 64 ? 64 : ecap };
            size_t s2 = 0;
            if (tw_fix_decode(p, left, &d, &s2) != ret || (ret == TW_FIX_GARBLED && s2 != skip))
                abort();
            if (ret > 0 && r.rc == 0 &&
                (d.rc != 0 || memcmp(&d.u, &r.u, ref_body_size(d.kind)) != 0 ||
                 memcmp(&d.hdr, &r.hdr, sizeof(d.hdr)) != 0))
                abort();
        }
        if (ret == TW_FIX_INCOMPLETE)
            break;
        if (ret == TW_FIX_GARBLED) {
            if (skip == 0 || skip > left)
                abort();
            p += skip;
            left -= skip;
            continue;
        }
        if (ret <= 0 || (size_t)ret > left)
            abort();
        p += ret;
        left -= (size_t)ret;
    }
    return 0;
}
