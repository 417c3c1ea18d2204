/* The strategy's whole state as flat bytes and back (docs/crash.md,
 * "The strategy's state"): what a snapshot holds so that a restart
 * replays only the journal after it.
 *
 * The payload (little-endian, native layout, 8-byte aligned; read on the
 * machine that wrote it):
 *
 *     header (64 B)     magic "TWSTRAT1", version, header bytes, the journal
 *                       seq the state reflects, total bytes, the counts,
 *                       pending intents, CRC-32C of the whole payload (this
 *                       field zero)
 *     global            fee, risk limits, the total bucket, exposure,
 *                       trading state, kill mode, counters
 *     sessions          n_sessions x (bucket, state, logged_out)
 *     instruments       per instrument: symbol, session, counts, last bar,
 *                       exposure, then its streaming kernel's state bytes
 *     instances         per instance: name, kernel name / ABI / params /
 *                       combo, books, then its flat kernel state bytes,
 *                       then its row of open-order slots
 *     intents           n_intents tw_out (decided, not yet sent)
 *
 * Saving is copies of flat state (no allocation).  Loading checks the CRC,
 * every size and the configuration the state was saved under against the
 * strategy's (a clear error naming what differs) before it writes
 * anything, then every invariant the event code relies on (the open
 * orders, the exposures, the kernels' positions), so that bad bytes are
 * refused, never run. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "strategy/strategy_internal.h"
#include "tickwire/util.h"

#define STATE_MAGIC "TWSTRAT1"
#define NS_PER_S INT64_C(1000000000)
#define KNAME_MAX 64

typedef struct st_hdr {
    char magic[8];
    uint32_t version;
    uint32_t hdr_bytes;
    uint64_t journal_seq;
    uint64_t total;
    uint32_t n_sessions, n_instruments, n_instances, open_slots;
    uint32_t n_intents;
    uint32_t crc;
    uint64_t reserved;
} st_hdr;
_Static_assert(sizeof(st_hdr) == 64, "state header");

typedef struct st_global {
    double fee;
    tw_risk_cfg risk;
    bucket total_rate;
    int64_t total_exposure;
    uint32_t state, kill_mode, n_closed, finished;
    uint32_t max_open, pad;
    tw_strategy_counters c;
} st_global;

typedef struct st_instr {
    char symbol[TW_NAME_MAX];
    uint32_t session, n_inst, n_sig, pad;
    int64_t last_bar;
    int64_t exposure;
    uint64_t stream_bytes;
} st_instr;

typedef struct st_inst {
    char name[TW_NAME_MAX];
    char kernel[KNAME_MAX];
    uint32_t abi, n_params;
    uint32_t instrument, k;
    int64_t combo[TW_COMBO_WINDOWS];
    double params[TW_KERNEL_MAX_PARAMS];
    uint64_t kstate_bytes;
    int32_t signal;
    uint32_t n_open;
    int64_t position, open_qty;
    double entry_px;
    uint64_t entry_bar;
    double pnl;
    int64_t trades;
    uint64_t orders, fills, rejects, risk_rejects;
    uint32_t state, pad;
    tw_kbook book;
} st_inst;

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

static const tw_kernel_def *kernel_of(const inst_state *it)
{
    return it->kdef ? it->kdef : tw_kernel_builtin(0);
}

static uint32_t n_params_of(const inst_state *it) { return it->kdef ? it->kdef->n_params : 0; }

static tw_stream *sig_stream(const instr_state *in)
{
    return in->n_sig ? tw__sig_stream(in->sig) : NULL;
}

size_t tw_strategy_state_size(const tw_strategy *s, uint32_t n_intents)
{
    size_t n = sizeof(st_hdr) + sizeof(st_global) + (size_t)s->n_sessions * sizeof(sess_state);
    for (uint32_t k = 0; k < s->n_instruments; k++) {
        const tw_stream *st = sig_stream(&s->instr[k]);
        n += sizeof(st_instr) + pad8(st ? tw_stream_state_bytes(st) : 0);
    }
    for (uint32_t i = 0; i < s->n_instances; i++)
        n += sizeof(st_inst) + pad8(s->inst[i].kstate_bytes) +
             (size_t)s->open_slots * sizeof(open_order);
    return n + (size_t)n_intents * sizeof(tw_out);
}

/* ---- save ------------------------------------------------------------------- */

static void global_of(const tw_strategy *s, st_global *g)
{
    memset(g, 0, sizeof(*g));
    g->fee = s->fee;
    g->risk = s->risk;
    g->total_rate = s->total_rate;
    g->total_exposure = s->total_exposure;
    g->state = s->state;
    g->kill_mode = s->kill_mode;
    g->n_closed = s->n_closed;
    g->finished = s->finished;
    g->max_open = s->max_open;
    g->c = s->c;
}

static void inst_of(const tw_strategy *s, uint32_t i, st_inst *r)
{
    const inst_state *it = &s->inst[i];
    memset(r, 0, sizeof(*r));
    memcpy(r->name, it->name, TW_NAME_MAX);
    const tw_kernel_def *kd = kernel_of(it);
    snprintf(r->kernel, sizeof(r->kernel), "%s", kd->name);
    r->abi = kd->abi;
    r->n_params = n_params_of(it);
    r->instrument = it->instrument;
    r->k = it->k;
    memcpy(r->combo, it->combo, sizeof(r->combo));
    memcpy(r->params, it->params, r->n_params * sizeof(double));
    r->kstate_bytes = it->kstate_bytes;
    r->signal = it->signal;
    r->n_open = it->n_open;
    r->position = it->position;
    r->open_qty = it->open_qty;
    r->entry_px = it->entry_px;
    r->entry_bar = it->entry_bar;
    r->pnl = it->pnl;
    r->trades = it->trades;
    r->orders = it->orders;
    r->fills = it->fills;
    r->rejects = it->rejects;
    r->risk_rejects = it->risk_rejects;
    r->state = it->state;
    r->book = it->book;
}

size_t tw_strategy_state_copy(const tw_strategy *s, uint64_t journal_seq, const tw_out *intents,
                              uint32_t n_intents, void *buf, size_t cap)
{
    const size_t total = tw_strategy_state_size(s, n_intents);
    if (!buf || cap < total || (n_intents && !intents))
        return 0;
    uint8_t *p = buf;
    st_hdr h;
    memset(&h, 0, sizeof(h));
    memcpy(h.magic, STATE_MAGIC, 8);
    h.version = TW_STRATEGY_STATE_VERSION;
    h.hdr_bytes = sizeof(h);
    h.journal_seq = journal_seq;
    h.total = total;
    h.n_sessions = s->n_sessions;
    h.n_instruments = s->n_instruments;
    h.n_instances = s->n_instances;
    h.open_slots = s->open_slots;
    h.n_intents = n_intents;
    size_t off = sizeof(h);
    st_global g;
    global_of(s, &g);
    memcpy(p + off, &g, sizeof(g));
    off += sizeof(g);
    memcpy(p + off, s->sess, (size_t)s->n_sessions * sizeof(sess_state));
    off += (size_t)s->n_sessions * sizeof(sess_state);
    for (uint32_t k = 0; k < s->n_instruments; k++) {
        const instr_state *in = &s->instr[k];
        const tw_stream *st = sig_stream(in);
        st_instr r;
        memset(&r, 0, sizeof(r));
        memcpy(r.symbol, in->symbol, TW_NAME_MAX);
        r.session = in->session;
        r.n_inst = in->n_inst;
        r.n_sig = in->n_sig;
        r.last_bar = in->last_bar;
        r.exposure = in->exposure;
        r.stream_bytes = st ? tw_stream_state_bytes(st) : 0;
        memcpy(p + off, &r, sizeof(r));
        off += sizeof(r);
        if (st) {
            size_t b = tw_stream_state_save(st, p + off, cap - off);
            TW_VERIFY(b == r.stream_bytes);
            memset(p + off + b, 0, pad8(b) - b);
            off += pad8(b);
        }
    }
    for (uint32_t i = 0; i < s->n_instances; i++) {
        const inst_state *it = &s->inst[i];
        st_inst r;
        inst_of(s, i, &r);
        memcpy(p + off, &r, sizeof(r));
        off += sizeof(r);
        if (it->kstate_bytes) {
            memcpy(p + off, it->kstate, it->kstate_bytes);
            memset(p + off + it->kstate_bytes, 0, pad8(it->kstate_bytes) - it->kstate_bytes);
            off += pad8(it->kstate_bytes);
        }
        const size_t row = (size_t)s->open_slots * sizeof(open_order);
        memcpy(p + off, &s->open[(size_t)i * s->open_slots], row);
        off += row;
    }
    if (n_intents)
        memcpy(p + off, intents, (size_t)n_intents * sizeof(tw_out));
    off += (size_t)n_intents * sizeof(tw_out);
    TW_VERIFY(off == total);
    memcpy(p, &h, sizeof(h)); /* crc 0: unsealed */
    return total;
}

void tw_strategy_state_seal(void *buf, size_t len)
{
    uint8_t *p = buf;
    st_hdr h;
    if (len < sizeof(h))
        return;
    memcpy(&h, p, sizeof(h));
    h.crc = 0;
    memcpy(p, &h, sizeof(h));
    h.crc = tw_crc32c(0, p, len);
    memcpy(p, &h, sizeof(h));
}

size_t tw_strategy_state_save(const tw_strategy *s, uint64_t journal_seq, const tw_out *intents,
                              uint32_t n_intents, void *buf, size_t cap)
{
    size_t n = tw_strategy_state_copy(s, journal_seq, intents, n_intents, buf, cap);
    if (n)
        tw_strategy_state_seal(buf, n);
    return n;
}

/* ---- load --------------------------------------------------------------------- */

/* A bounded reader over the payload. */
typedef struct cur {
    const uint8_t *p;
    size_t len, off;
} cur;

static const uint8_t *take(cur *c, size_t n)
{
    if (n > c->len - c->off)
        return NULL;
    const uint8_t *q = c->p + c->off;
    c->off += n;
    return q;
}

static int same_f64(double a, double b) { return memcmp(&a, &b, sizeof(a)) == 0; }

static int bucket_ok(const bucket *b, int64_t rate)
{
    const int64_t lim = INT64_C(1) << 62;
    return b->rate == rate && b->started <= 1 && b->tokens >= 0 && b->tokens <= rate * NS_PER_S &&
           b->last_ns > -lim && b->last_ns < lim;
}

static int64_t iabs(int64_t v) { return v < 0 ? -v : v; }

/* The configuration part of a saved instance against instance i. */
static int inst_matches(const tw_strategy *s, uint32_t i, const st_inst *r, tw_error *err)
{
    const inst_state *it = &s->inst[i];
    const tw_kernel_def *kd = kernel_of(it);
    if (strnlen(r->name, TW_NAME_MAX) == TW_NAME_MAX || memcmp(r->name, it->name, TW_NAME_MAX))
        return tw__err(err, -ESTALE, "instance %u: the state has \"%.*s\", configured \"%s\"", i,
                       TW_NAME_MAX - 1, r->name, it->name);
    if (strnlen(r->kernel, KNAME_MAX) == KNAME_MAX || strcmp(r->kernel, kd->name) != 0 ||
        r->abi != kd->abi)
        return tw__err(err, -ESTALE, "instance %u (%s): the state has kernel \"%.*s %u\", "
                       "configured \"%s %u\"", i, it->name, KNAME_MAX - 1, r->kernel, r->abi,
                       kd->name, kd->abi);
    if (r->instrument != it->instrument)
        return tw__err(err, -ESTALE, "instance %u (%s): the state trades instrument %u, "
                       "configured %u", i, it->name, r->instrument, it->instrument);
    if (r->n_params != n_params_of(it))
        return tw__err(err, -ESTALE, "instance %u (%s): the state has %u params, configured %u",
                       i, it->name, r->n_params, n_params_of(it));
    for (uint32_t j = 0; j < r->n_params; j++)
        if (!same_f64(r->params[j], it->params[j]))
            return tw__err(err, -ESTALE, "instance %u (%s): param %s is %.17g in the state, "
                           "configured %.17g", i, it->name, it->kdef->params[j].name,
                           r->params[j], it->params[j]);
    if (!it->kdef)
        for (int j = 0; j < TW_COMBO_WINDOWS; j++)
            if (r->combo[j] != it->combo[j])
                return tw__err(err, -ESTALE, "instance %u (%s): window %d is %lld in the state, "
                               "configured %lld", i, it->name, j, (long long)r->combo[j],
                               (long long)it->combo[j]);
    if (r->k != it->k || r->kstate_bytes != it->kstate_bytes)
        return tw__err(err, -ESTALE, "instance %u (%s): kernel state of %llu bytes in the state, "
                       "%zu here", i, it->name, (unsigned long long)r->kstate_bytes,
                       it->kstate_bytes);
    return 0;
}

/* The books and open orders of a saved instance: what the event code
 * relies on. */
static int inst_sane(const tw_strategy *s, uint32_t i, const st_inst *r, const open_order *row,
                     tw_error *err)
{
    const char *name = s->inst[i].name;
    const int64_t lim = INT64_C(1) << 62;
    if (r->signal < -1 || r->signal > 1 || r->state > TW_TRADING_HALTED)
        return tw__err(err, -TW_EFORMAT, "instance %u (%s): signal %d, state %u out of range", i,
                       name, r->signal, r->state);
    if (iabs(r->position) > INT32_MAX || r->position < -lim || r->open_qty < -lim ||
        r->open_qty > lim)
        return tw__err(err, -TW_EFORMAT, "instance %u (%s): position %lld out of range", i, name,
                       (long long)r->position);
    if (s->inst[i].kdef &&
        (r->book.pos < -1 || r->book.pos > 1 || r->book.stopped < 0 || r->book.stopped > 1 ||
         r->book.pos != r->signal))
        return tw__err(err, -TW_EFORMAT, "instance %u (%s): kernel books out of range "
                       "(position %d, signal %d)", i, name, r->book.pos, r->signal);
    if (r->n_open > s->open_slots)
        return tw__err(err, -TW_EFORMAT, "instance %u (%s): %u open orders, %u slots", i, name,
                       r->n_open, s->open_slots);
    int64_t sum = 0;
    uint32_t flatten = 0, signal = 0;
    for (uint32_t j = 0; j < r->n_open; j++) {
        const open_order *o = &row[j];
        if (o->remaining == 0 || iabs(o->remaining) > INT32_MAX || o->kind > TW_ORDER_FLATTEN ||
            o->cancel_sent > 1 || tw_order_id_instance(o->id) != i ||
            tw_order_id_kind(o->id) != o->kind)
            return tw__err(err, -TW_EFORMAT, "instance %u (%s): open order %u is not one of its "
                           "orders", i, name, j);
        sum += o->remaining;
        flatten += o->kind == TW_ORDER_FLATTEN;
        signal += o->kind == TW_ORDER_SIGNAL;
    }
    if (sum != r->open_qty || flatten > 1 || signal > s->max_open)
        return tw__err(err, -TW_EFORMAT, "instance %u (%s): open orders sum to %lld, open "
                       "quantity %lld (%u signal, %u flatten)", i, name, (long long)sum,
                       (long long)r->open_qty, signal, flatten);
    return 0;
}

/* Instance i's record at c into r: 0, or truncated. */
static int inst_take(cur *c, uint32_t i, st_inst *r, tw_error *err)
{
    const uint8_t *q = take(c, sizeof(*r));
    if (!q)
        return tw__err(err, -TW_EFORMAT, "strategy state: truncated (instance %u)", i);
    memcpy(r, q, sizeof(*r));
    return 0;
}

/* One pass over the payload: checks (apply 0) or writes (apply 1). */
static int walk(tw_strategy *s, const uint8_t *p, size_t len, const st_hdr *h, int apply,
                tw_out *intents, tw_error *err)
{
    cur c = { p, len, sizeof(st_hdr) };
    const uint8_t *q = take(&c, sizeof(st_global));
    if (!q)
        return tw__err(err, -TW_EFORMAT, "strategy state: truncated (global)");
    st_global g;
    memcpy(&g, q, sizeof(g));
    if (!same_f64(g.fee, s->fee))
        return tw__err(err, -ESTALE, "strategy state: fee %.17g, configured %.17g", g.fee,
                       s->fee);
    if (memcmp(&g.risk, &s->risk, sizeof(g.risk)) != 0 || g.max_open != s->max_open)
        return tw__err(err, -ESTALE, "strategy state: saved under other risk limits");
    if (!bucket_ok(&g.total_rate, s->total_rate.rate) || g.state > TW_TRADING_HALTED ||
        g.kill_mode > 1 || g.n_closed > s->n_sessions || g.finished > 1 ||
        g.total_exposure < 0 || g.c.state > TW_TRADING_HALTED)
        return tw__err(err, -TW_EFORMAT, "strategy state: global state out of range");
    const size_t sb = (size_t)s->n_sessions * sizeof(sess_state);
    const uint8_t *sq = take(&c, sb);
    if (!sq)
        return tw__err(err, -TW_EFORMAT, "strategy state: truncated (sessions)");
    uint32_t closed = 0;
    for (uint32_t j = 0; j < s->n_sessions; j++) {
        sess_state se;
        memcpy(&se, sq + (size_t)j * sizeof(se), sizeof(se));
        if (!bucket_ok(&se.rate, s->sess[j].rate.rate))
            return tw__err(err, -ESTALE, "session %u: order rate %lld in the state, configured "
                           "%lld (or its bucket is out of range)", j, (long long)se.rate.rate,
                           (long long)s->sess[j].rate.rate);
        if (se.state > TW_SESSION_CLOSED || se.logged_out > 1)
            return tw__err(err, -TW_EFORMAT, "session %u: state %u out of range", j, se.state);
        closed += se.state == TW_SESSION_CLOSED;
    }
    if (closed != g.n_closed)
        return tw__err(err, -TW_EFORMAT, "strategy state: %u sessions closed, %u counted", closed,
                       g.n_closed);
    /* The instances' configuration first (what differs, named there),
     * stepping over the instruments by their recorded sizes. */
    if (!apply) {
        cur pre = c;
        for (uint32_t k = 0; k < s->n_instruments; k++) {
            const uint8_t *rq = take(&pre, sizeof(st_instr));
            st_instr r;
            if (rq)
                memcpy(&r, rq, sizeof(r));
            if (!rq || r.stream_bytes > len || !take(&pre, pad8((size_t)r.stream_bytes)))
                return tw__err(err, -TW_EFORMAT, "strategy state: truncated (instrument %u)", k);
        }
        for (uint32_t i = 0; i < s->n_instances; i++) {
            st_inst r;
            int rc = inst_take(&pre, i, &r, err);
            if (rc == 0)
                rc = inst_matches(s, i, &r, err);
            if (rc)
                return rc;
            if (!take(&pre, pad8(s->inst[i].kstate_bytes) +
                                (size_t)s->open_slots * sizeof(open_order)))
                return tw__err(err, -TW_EFORMAT, "strategy state: truncated (instance %u's "
                               "state)", i);
        }
    }
    /* Instruments: their configuration, then their streams. */
    int64_t total_exposure = 0;
    for (uint32_t k = 0; k < s->n_instruments; k++) {
        instr_state *in = &s->instr[k];
        const uint8_t *rq = take(&c, sizeof(st_instr));
        if (!rq)
            return tw__err(err, -TW_EFORMAT, "strategy state: truncated (instrument %u)", k);
        st_instr r;
        memcpy(&r, rq, sizeof(r));
        if (memcmp(r.symbol, in->symbol, TW_NAME_MAX) != 0 || r.session != in->session)
            return tw__err(err, -ESTALE, "instrument %u: the state has \"%.*s\" on session %u, "
                           "configured \"%s\" on %u", k, TW_NAME_MAX - 1, r.symbol, r.session,
                           in->symbol, in->session);
        if (r.n_inst != in->n_inst || r.n_sig != in->n_sig)
            return tw__err(err, -ESTALE, "instrument %u (%s): the state has %u instances (%u on "
                           "its hma_sar stream), configured %u (%u): an instance or its kernel "
                           "differs", k, in->symbol, r.n_inst, r.n_sig, in->n_inst, in->n_sig);
        tw_stream *st = sig_stream(in);
        const size_t want = st ? tw_stream_state_bytes(st) : 0;
        if (r.stream_bytes != want)
            return tw__err(err, -ESTALE, "instrument %u (%s): kernel stream of %llu bytes in the "
                           "state, %zu here", k, in->symbol,
                           (unsigned long long)r.stream_bytes, want);
        if (r.last_bar < -1 || r.last_bar > (int64_t)TW_ORDER_SEQ_MASK || r.exposure < -(INT64_C(1) << 62) ||
            r.exposure > (INT64_C(1) << 62))
            return tw__err(err, -TW_EFORMAT, "instrument %u (%s): last bar %lld out of range", k,
                           in->symbol, (long long)r.last_bar);
        const uint8_t *bq = take(&c, pad8(want));
        if (!bq)
            return tw__err(err, -TW_EFORMAT, "strategy state: truncated (instrument %u's kernel)",
                           k);
        total_exposure += iabs(r.exposure);
        if (apply) {
            if (st) {
                tw_error se = { 0 };
                if (tw_stream_state_load(st, bq, want, &se) != 0)
                    return tw__err(err, -TW_EFORMAT, "instrument %u (%s): %s", k, in->symbol,
                                   se.msg);
            }
            in->last_bar = r.last_bar;
            in->exposure = r.exposure;
        }
    }
    if (total_exposure != g.total_exposure)
        return tw__err(err, -TW_EFORMAT, "strategy state: total exposure %lld, instruments sum to "
                       "%lld", (long long)g.total_exposure, (long long)total_exposure);
    /* Instances. */
    for (uint32_t i = 0; i < s->n_instances; i++) {
        inst_state *it = &s->inst[i];
        st_inst r;
        int rc = inst_take(&c, i, &r, err); /* matched in the first pass */
        if (rc)
            return rc;
        const uint8_t *kq = take(&c, pad8(it->kstate_bytes));
        const size_t row = (size_t)s->open_slots * sizeof(open_order);
        const uint8_t *oq = take(&c, row);
        if (!kq || !oq)
            return tw__err(err, -TW_EFORMAT, "strategy state: truncated (instance %u's state)",
                           i);
        open_order *orow = &s->open[(size_t)i * s->open_slots];
        if (!apply) {
            /* Checked from a copy: the payload need not be aligned. */
            open_order tmp[TW_STRATEGY_MAX_OPEN + 1];
            memcpy(tmp, oq, row);
            rc = inst_sane(s, i, &r, tmp, err);
            if (rc)
                return rc;
            continue;
        }
        if (it->kstate_bytes)
            memcpy(it->kstate, kq, it->kstate_bytes);
        memcpy(orow, oq, row);
        it->signal = r.signal;
        it->n_open = r.n_open;
        it->position = r.position;
        it->open_qty = r.open_qty;
        it->entry_px = r.entry_px;
        it->entry_bar = r.entry_bar;
        it->pnl = r.pnl;
        it->trades = r.trades;
        it->orders = r.orders;
        it->fills = r.fills;
        it->rejects = r.rejects;
        it->risk_rejects = r.risk_rejects;
        it->state = (tw_trading_state)r.state;
        if (it->kdef)
            it->book = r.book;
    }
    /* After writing (a mismatch leaves s to be built again): each
     * instrument's exposure is its instances' positions and open orders,
     * a hma_sar instance's signal its stream's position. */
    for (uint32_t k = 0; apply && k < s->n_instruments; k++) {
        const instr_state *in = &s->instr[k];
        int64_t sum = 0;
        for (uint32_t j = 0; j < in->n_inst; j++) {
            const inst_state *it = &s->inst[s->by_instr[in->first + j]];
            sum += it->position + it->open_qty;
            if (j < in->n_sig && tw__sig_pos(in->sig, j) != it->signal)
                return tw__err(err, -TW_EFORMAT, "instance %s: signal %d, its kernel's "
                               "position %d", it->name, it->signal, tw__sig_pos(in->sig, j));
        }
        if (sum != in->exposure)
            return tw__err(err, -TW_EFORMAT, "instrument %u (%s): exposure %lld, its "
                           "instances sum to %lld", k, in->symbol, (long long)in->exposure,
                           (long long)sum);
    }
    const uint8_t *iq = take(&c, (size_t)h->n_intents * sizeof(tw_out));
    if (!iq || c.off != len)
        return tw__err(err, -TW_EFORMAT, "strategy state: %zu bytes, the layout says %zu", len,
                       c.off);
    if (apply) {
        s->total_rate = g.total_rate;
        s->total_exposure = g.total_exposure;
        s->state = (tw_trading_state)g.state;
        s->kill_mode = g.kill_mode;
        s->n_closed = g.n_closed;
        s->finished = g.finished;
        s->c = g.c;
        memcpy(s->sess, sq, sb);
        if (intents && h->n_intents)
            memcpy(intents, iq, (size_t)h->n_intents * sizeof(tw_out));
    }
    return 0;
}

int tw_strategy_state_info_get(const void *buf, size_t len, tw_strategy_state_info *info,
                               tw_error *err)
{
    st_hdr h;
    if (!buf || len < sizeof(h))
        return tw__err(err, -TW_EFORMAT, "strategy state: %zu bytes, shorter than its header",
                       len);
    memcpy(&h, buf, sizeof(h));
    if (memcmp(h.magic, STATE_MAGIC, 8) != 0)
        return tw__err(err, -TW_EFORMAT, "strategy state: bad magic");
    if (h.version != TW_STRATEGY_STATE_VERSION || h.hdr_bytes != sizeof(h))
        return tw__err(err, -EPROTONOSUPPORT, "strategy state: version %u (header %u bytes), "
                       "this build reads %u", h.version, h.hdr_bytes, TW_STRATEGY_STATE_VERSION);
    if (h.total != len)
        return tw__err(err, -TW_EFORMAT, "strategy state: %zu bytes, its header says %llu", len,
                       (unsigned long long)h.total);
    const uint32_t want = h.crc;
    h.crc = 0;
    uint32_t crc = tw_crc32c(0, &h, sizeof(h));
    crc = tw_crc32c(crc, (const uint8_t *)buf + sizeof(h), len - sizeof(h));
    if (crc != want)
        return tw__err(err, -TW_EFORMAT, "strategy state: CRC-32C %08x, computed %08x", want,
                       crc);
    if (info) {
        info->journal_seq = h.journal_seq;
        info->n_intents = h.n_intents;
        info->n_instances = h.n_instances;
        info->bytes = h.total;
    }
    return 0;
}

int tw_strategy_state_load(tw_strategy *s, const void *buf, size_t len, tw_out *intents,
                           uint32_t intents_cap, tw_strategy_state_info *info, tw_error *err)
{
    tw_strategy_state_info in;
    int rc = tw_strategy_state_info_get(buf, len, &in, err);
    if (rc)
        return rc;
    st_hdr h;
    memcpy(&h, buf, sizeof(h));
    if (h.n_sessions != s->n_sessions || h.n_instruments != s->n_instruments ||
        h.n_instances != s->n_instances)
        return tw__err(err, -ESTALE, "strategy state: %u sessions, %u instruments, %u "
                       "instances; configured %u, %u, %u", h.n_sessions, h.n_instruments,
                       h.n_instances, s->n_sessions, s->n_instruments, s->n_instances);
    if (h.open_slots != s->open_slots)
        return tw__err(err, -ESTALE, "strategy state: %u open-order slots per instance, "
                       "configured %u (max_open_orders)", h.open_slots, s->open_slots);
    if (h.n_intents > intents_cap || (h.n_intents && !intents))
        return tw__err(err, -ENOSPC, "strategy state: %u pending intents, room for %u",
                       h.n_intents, intents_cap);
    rc = walk(s, buf, len, &h, 0, intents, err);
    if (rc == 0)
        rc = walk(s, buf, len, &h, 1, intents, err);
    if (rc == 0 && info)
        *info = in;
    return rc;
}

/* ---- what a snapshot compares ---------------------------------------------------- */

size_t tw_strategy_kernels_text(const tw_strategy *s, char *buf, size_t cap)
{
    size_t n = 0;
    for (uint32_t i = 0; i < s->n_instances; i++) {
        const tw_kernel_def *kd = kernel_of(&s->inst[i]);
        char line[KNAME_MAX + 16];
        int w = snprintf(line, sizeof(line), "%s %u\n", kd->name, kd->abi);
        if (buf && n + (size_t)w < cap)
            memcpy(buf + n, line, (size_t)w);
        n += (size_t)w;
    }
    if (buf && cap)
        buf[n < cap ? n : cap - 1] = '\0';
    return n;
}

void tw_strategy_config_digest(const tw_strategy *s, uint8_t out[16])
{
    uint64_t a = TW_FNV1A64_INIT, b = UINT64_C(0x84222325cbf29ce4);
#define MIX(p, n)                                                                           \
    do {                                                                                    \
        a = tw_fnv1a64(a, (p), (n));                                                        \
        b = tw_fnv1a64(b ^ (uint64_t)(n), (p), (n));                                        \
    } while (0)
    MIX(&s->fee, sizeof(s->fee));
    MIX(&s->n_sessions, sizeof(uint32_t) * 3);
    MIX(&s->risk, sizeof(s->risk));
    for (uint32_t j = 0; j < s->n_sessions; j++)
        MIX(&s->sess[j].rate.rate, sizeof(int64_t));
    for (uint32_t k = 0; k < s->n_instruments; k++) {
        MIX(s->instr[k].symbol, TW_NAME_MAX);
        MIX(&s->instr[k].session, sizeof(uint32_t));
    }
    for (uint32_t i = 0; i < s->n_instances; i++) {
        const inst_state *it = &s->inst[i];
        const tw_kernel_def *kd = kernel_of(it);
        MIX(it->name, TW_NAME_MAX);
        MIX(&it->instrument, sizeof(uint32_t));
        MIX(kd->name, strlen(kd->name));
        MIX(&kd->abi, sizeof(kd->abi));
        if (it->kdef)
            MIX(it->params, n_params_of(it) * sizeof(double));
        else
            MIX(it->combo, sizeof(it->combo));
    }
#undef MIX
    memcpy(out, &a, 8);
    memcpy(out + 8, &b, 8);
}

/* ---- what a recovery from a state asks -------------------------------------------- */

size_t tw_strategy_open_orders(const tw_strategy *s, uint32_t i, tw_strategy_open_order *out,
                               size_t cap)
{
    TW_VERIFY(i < s->n_instances);
    const inst_state *it = &s->inst[i];
    const open_order *o = &s->open[(size_t)i * s->open_slots];
    for (uint32_t j = 0; j < it->n_open && j < cap; j++) {
        out[j].id = o[j].id;
        out[j].bar = o[j].bar;
        out[j].remaining = o[j].remaining;
        out[j].kind = o[j].kind;
        out[j].cancel_sent = o[j].cancel_sent;
    }
    return it->n_open;
}

int tw_strategy_session_logged_out(const tw_strategy *s, uint32_t j)
{
    TW_VERIFY(j < s->n_sessions);
    return s->sess[j].logged_out != 0;
}

int tw_strategy_finished(const tw_strategy *s) { return s->finished != 0; }
uint64_t tw_strategy_flatten_orders(const tw_strategy *s) { return s->c.flatten_orders; }
