/* libFuzzer target: `tickwire trade`'s configuration parser from memory
 * (tw_trade_config_parse over libinih's ini_parse_stream), then, for a
 * file it accepts, what the engine does next with it: the strategy is
 * sized and built from it and its report written to memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickwire/trade.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy so that ASan sees any read past the end. */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    tw_trade_config *c = NULL;
    tw_error err = { 0 };
    int rc = tw_trade_config_parse(buf, size, "fuzz.ini", &c, &err);
    if (rc != 0) {
        /* Every refusal names the file and, for a bad line, the line. */
        TW_VERIFY(!c && !strncmp(err.msg, "fuzz.ini", 8));
        free(buf);
        return 0;
    }
    TW_VERIFY(c && c->n_sessions >= 1 && c->n_instruments >= 1 && c->n_instances >= 1);
    for (uint32_t i = 0; i < c->n_instances; i++)
        TW_VERIFY(c->instances[i].instrument < c->n_instruments);
    /* A config of thousands of grid lines is valid but slow to build:
     * build the strategy for the small ones. */
    if (c->n_instances <= 2000) {
        tw_strategy_cfg sc;
        tw_trade_config_strategy(c, &sc);
        size_t bytes = tw_strategy_memsize(&sc);
        TW_VERIFY(bytes > 0);
        void *mem = aligned_alloc(64, bytes);
        tw_strategy *s = mem ? tw_strategy_init(mem, bytes, &sc, &err) : NULL;
        TW_VERIFY(!mem || s);
        if (s) {
            char *out = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&out, &len);
            if (f) {
                TW_VERIFY(tw_trade_report_fprint(f, s, NULL, 0) == 0);
                fclose(f);
                TW_VERIFY(len > 0 && out[0] == '{');
                free(out);
            }
        }
        free(mem);
    }
    tw_trade_config_free(c);
    free(buf);
    return 0;
}
