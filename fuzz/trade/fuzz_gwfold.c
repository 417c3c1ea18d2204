/* libFuzzer target: any bytes as a snapshot's gateway section
 * (TW_SNAP_SEC_GW_FOLD, src/trade/gwfold.h), loaded into a session's fold
 * of a fixed configuration of two sessions (the session and journal seq
 * the loader expects are the ones the bytes claim, so that the checks
 * past them are reached).
 *
 * Invariants: tw__gwfold_load returns 0 or an error with a message, never
 * a crash or a read outside the input; a refused input leaves the zero
 * fold; an accepted one saves back to exactly its bytes (the form is
 * canonical), and the fold then takes journal records as any other. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trade/engine_internal.h"
#include "trade/gwfold.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char config[] =
    "[engine]\nreport = r.json\njournal = j.bin\n"
    "[session a]\nhost = h\nport = 1\nsender = S\ntarget = T\nstore = sa\n"
    "[session b]\nhost = h\nport = 2\nsender = S2\ntarget = T2\nstore = sb\n"
    "[instrument AAA]\nsession = a\n"
    "[instrument BBB]\nsession = b\n"
    "[instrument CCC]\nsession = a\n"
    "[strategy s]\ninstrument = AAA\ncombo = 1,2,1,1,1,2\n"
    "[strategy t]\ninstrument = BBB\ncombo = 1,2,1,1,1,2\n"
    "[risk]\nmax_position = 100\nmax_total_position = 1000\nmax_orders_per_s = 100000\n"
    "max_loss = 1e9\nmax_open_orders = 2\n";

static tw_trade_config *cfg;
static tw__gwfold folds[2];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!cfg) {
        tw_error e = {0};
        TW_VERIFY(tw_trade_config_parse(config, sizeof(config) - 1, "fuzz.ini", &cfg, &e) == 0);
        for (uint32_t k = 0; k < 2; k++)
            TW_VERIFY(tw__gwfold_init(&folds[k], cfg, k) == 0);
    }
    uint32_t session = 0;
    uint64_t seq = 0;
    if (size >= 16) {
        memcpy(&session, data + 4, 4);
        memcpy(&seq, data + 8, 8);
    }
    tw__gwfold *f = &folds[session < 2 ? session : 0];
    tw_error err = {0};
    int rc = tw__gwfold_load(f, data, size, seq, &err);
    if (rc != 0) {
        TW_VERIFY(rc < 0 && err.msg[0]);
        TW_VERIFY(f->open.n == 0 && !f->done.ids && f->bars == 0 && !f->up);
        return 0;
    }
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    TW_VERIFY(tw__gwfold_save(f, seq, &buf, &cap, &len) == 0);
    TW_VERIFY(len == size && memcmp(buf, data, size) == 0);
    /* A fill, a reject and an order of whatever it holds. */
    tw__gwfold *fp[2] = {&folds[0], &folds[1]};
    tw_journal_rec rec;
    memset(&rec, 0, sizeof(rec));
    tw_ev ev;
    memset(&ev, 0, sizeof(ev));
    ev.session = (uint16_t)f->session;
    ev.type = TW_EV_FILL;
    ev.u.fill.order_id = f->open.n ? f->open.v[0].id : 1;
    ev.u.fill.qty = 1;
    rec.tag = TW_JOURNAL_REC_MAGIC | TW_JOURNAL_EV;
    memcpy(rec.payload, &ev, sizeof(ev));
    TW_VERIFY(tw__gwfold_rec(fp, 2, &rec) == 0);
    ev.type = TW_EV_REJECT;
    memcpy(rec.payload, &ev, sizeof(ev));
    TW_VERIFY(tw__gwfold_rec(fp, 2, &rec) == 0);
    TW_VERIFY(tw__gwfold_done_has(f, ev.u.order.order_id));
    free(buf);
    tw__gwfold_reset(f);
    return 0;
}
