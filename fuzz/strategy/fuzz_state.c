/* libFuzzer target: any bytes as a strategy state payload
 * (tw_strategy_state_load) for one of two small fixed configurations, by
 * the instance count in the header: one session, one instrument, two
 * hma_sar combos, and (three instances) a zscore instance.
 *
 * Invariants: the load returns 0 or an error with a message, never a
 * crash or a read outside the input; the same bytes with their CRC made
 * good (so that the checks past the CRC are reached) likewise; a state
 * that loads takes events afterwards (bars, fills, a kill switch) without
 * tripping any of the strategy's own checks, and saves back to bytes that
 * load again.  With a zscore instance that last part runs only on bytes
 * whose CRC held as given: a plug-in kernel's state bytes are the kernel's
 * (the ABI has no state check), so bytes forged past the CRC may hold an
 * index the kernel trusts.
 *
 * Built with -DTW_STATE_CORPUS, main() writes the seeds (states saved at
 * a few points of a run, both configurations) into the directory given. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickwire/strategy.h"
#include "tickwire/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tw_instrument_cfg instr = { .symbol = "AAA", .session = 0 };
static tw_instance_cfg inst[3];
static tw_strategy_cfg cfg[2]; /* [0]: hma_sar only, [1]: and zscore */
static void *mem[2];
static size_t mem_bytes[2];
static tw_out outs[64];
static tw_out pending[256];

static void setup(void)
{
    static const int64_t c0[6] = { 8, 16, 4, 10, 15, 30 }, c1[6] = { 2, 5, 2, 3, 4, 9 };
    snprintf(inst[0].name, TW_NAME_MAX, "a");
    memcpy(inst[0].combo, c0, sizeof(c0));
    snprintf(inst[1].name, TW_NAME_MAX, "b");
    memcpy(inst[1].combo, c1, sizeof(c1));
    snprintf(inst[2].name, TW_NAME_MAX, "z");
    inst[2].kernel = tw_kernel_builtin(1);
    for (uint32_t p = 0; p < inst[2].kernel->n_params; p++)
        inst[2].params[p] = inst[2].kernel->params[p].dflt;
    inst[2].params[0] = 5;
    for (int k = 0; k < 2; k++) {
        tw_strategy_cfg *c = &cfg[k];
        c->fee = TW_FEE_DEFAULT;
        c->n_sessions = 1;
        c->n_instruments = 1;
        c->n_instances = 2 + (uint32_t)k;
        c->instruments = &instr;
        c->instances = inst;
        tw_risk_cfg_init(&c->risk);
        c->risk.max_open_orders = 2;
        c->risk.max_session_orders_per_s = 50;
        mem_bytes[k] = tw_strategy_memsize(c);
        TW_VERIFY(mem_bytes[k] > 0);
        mem[k] = aligned_alloc(64, mem_bytes[k]);
        TW_VERIFY(mem[k] != NULL);
    }
}

static tw_strategy *fresh(int k)
{
    if (!mem[0])
        setup();
    tw_error err = { 0 };
    tw_strategy *s = tw_strategy_init(mem[k], mem_bytes[k], &cfg[k], &err);
    TW_VERIFY(s != NULL);
    TW_VERIFY(tw_strategy_max_out(s) <= TW_ARRAY_SIZE(outs));
    return s;
}

static double px(uint64_t i) { return 100.0 + 3.0 * sin((double)i * 0.37) + (double)(i % 7) * 0.1; }

/* Bars from `from`, each order filled (or rejected) at the next bar. */
static void drive(tw_strategy *s, uint64_t from, uint64_t n, uint32_t *n_pend, int kill)
{
    for (uint64_t i = from; i < from + n; i++) {
        uint32_t np = *n_pend;
        *n_pend = 0;
        tw_out now[256];
        memcpy(now, pending, np * sizeof(tw_out));
        for (uint32_t q = 0; q < np; q++) {
            tw_ev ev = { .type = TW_EV_FILL, .side = now[q].side, .now_ns = (int64_t)i * 1000000 };
            ev.u.fill.order_id = now[q].order_id;
            ev.u.fill.qty = now[q].qty > 0 ? now[q].qty : 1;
            ev.u.fill.px = px(i);
            if (now[q].type == TW_OUT_CANCEL) {
                ev.type = TW_EV_CANCELED;
                ev.u.order.order_id = now[q].order_id;
            } else if (now[q].order_id % 11 == 3) {
                ev.type = TW_EV_REJECT;
                ev.u.reject.order_id = now[q].order_id;
            }
            tw_strategy_on_event(s, &ev, outs, TW_ARRAY_SIZE(outs));
        }
        tw_ev bar = { .type = TW_EV_BAR, .now_ns = (int64_t)i * 1000000 };
        bar.u.bar.index = i;
        bar.u.bar.close = i % 17 == 5 ? NAN : px(i);
        size_t m = tw_strategy_on_event(s, &bar, outs, TW_ARRAY_SIZE(outs));
        if (kill && i == from + n / 2) {
            tw_ev k = { .type = TW_EV_KILL, .now_ns = bar.now_ns };
            m = tw_strategy_on_event(s, &k, outs, TW_ARRAY_SIZE(outs));
        }
        for (size_t j = 0; j < m && *n_pend < TW_ARRAY_SIZE(pending); j++)
            if (outs[j].type == TW_OUT_ORDER || outs[j].type == TW_OUT_CANCEL)
                pending[(*n_pend)++] = outs[j];
    }
}

static void fix_crc(uint8_t *p, size_t len)
{
    uint32_t zero = 0;
    memcpy(p + 52, &zero, 4);
    uint32_t crc = tw_crc32c(0, p, len);
    memcpy(p + 52, &crc, 4);
}

/* The configuration a payload names by its instance count (offset 40). */
static int cfg_of(const uint8_t *data, size_t size)
{
    uint32_t n = 0;
    if (size >= 44)
        memcpy(&n, data + 40, 4);
    return n == 3;
}

static void try_load(const uint8_t *data, size_t size, int crc_as_given)
{
    const int k = cfg_of(data, size);
    tw_strategy *s = fresh(k);
    tw_error err = { 0 };
    tw_strategy_state_info info;
    int rc = tw_strategy_state_load(s, data, size, pending, TW_ARRAY_SIZE(pending), &info, &err);
    if (rc != 0) {
        TW_VERIFY(rc < 0 && err.msg[0]);
        return;
    }
    if (k == 1 && !crc_as_given)
        return; /* the zscore state's bytes are the kernel's (above) */
    uint32_t np = info.n_intents;
    int64_t last = tw_strategy_last_bar(s, 0);
    drive(s, (uint64_t)(last + 1), 12, &np, 1);
    size_t n = tw_strategy_state_size(s, np);
    uint8_t *back = malloc(n);
    TW_VERIFY(back && tw_strategy_state_save(s, 7, pending, np, back, n) == n);
    s = fresh(k);
    TW_VERIFY(tw_strategy_state_load(s, back, n, pending, TW_ARRAY_SIZE(pending), NULL, &err) == 0);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    try_load(data, size, 1);
    if (size >= 64 && size <= (1u << 20)) {
        uint8_t *c = malloc(size);
        if (!c)
            return 0;
        memcpy(c, data, size);
        fix_crc(c, size);
        try_load(c, size, 0);
        free(c);
    }
    return 0;
}

#ifdef TW_STATE_CORPUS
int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    static const uint64_t at[] = { 0, 3, 40, 90 };
    for (int c = 0; c < 2; c++)
        for (size_t k = 0; k < TW_ARRAY_SIZE(at); k++) {
            tw_strategy *s = fresh(c);
            uint32_t np = 0;
            drive(s, 0, at[k], &np, k == 3);
            size_t n = tw_strategy_state_size(s, np);
            uint8_t *buf = malloc(n);
            TW_VERIFY(tw_strategy_state_save(s, at[k], pending, np, buf, n) == n);
            char path[512];
            snprintf(path, sizeof(path), "%s/seed-%d-%zu", argv[1], c, k);
            FILE *f = fopen(path, "wb");
            TW_VERIFY(f && fwrite(buf, 1, n, f) == n && fclose(f) == 0);
            free(buf);
        }
    return 0;
}
#endif
