/* The strategy core: memory layout, init, state getters, digest.  Events
 * are in events.c, risk in risk.c, the kernel seam in signal.c. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "strategy/strategy_internal.h"
#include "tickwire/util.h"

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static int name_ok(const char *s)
{
    size_t n = strnlen(s, TW_NAME_MAX);
    return n > 0 && n < TW_NAME_MAX;
}

/* Everything tw_strategy_init() refuses, with the reason. */
static int validate(const tw_strategy_cfg *cfg, tw_error *err)
{
    if (!cfg || !cfg->instruments || !cfg->instances)
        return tw__err(err, -EINVAL, "strategy config: no instruments or instances");
    if (cfg->n_sessions < 1 || cfg->n_sessions > TW_STRATEGY_MAX_SESSIONS)
        return tw__err(err, -EINVAL, "strategy config: %u sessions (1..%u)", cfg->n_sessions,
                       TW_STRATEGY_MAX_SESSIONS);
    if (cfg->n_instruments < 1 || cfg->n_instruments > TW_STRATEGY_MAX_INSTANCES)
        return tw__err(err, -EINVAL, "strategy config: %u instruments", cfg->n_instruments);
    if (cfg->n_instances < 1 || cfg->n_instances > TW_STRATEGY_MAX_INSTANCES)
        return tw__err(err, -EINVAL, "strategy config: %u instances (1..%u)", cfg->n_instances,
                       TW_STRATEGY_MAX_INSTANCES);
    if (!isfinite(cfg->fee))
        return tw__err(err, -EINVAL, "strategy config: fee is not finite");
    if (cfg->session_orders_per_s)
        for (uint32_t j = 0; j < cfg->n_sessions; j++)
            if (cfg->session_orders_per_s[j] < 1 || cfg->session_orders_per_s[j] > 1000000000)
                return tw__err(err, -EINVAL, "session %u: order rate outside [1, 1e9] per second",
                               j);
    for (uint32_t k = 0; k < cfg->n_instruments; k++) {
        if (!name_ok(cfg->instruments[k].symbol))
            return tw__err(err, -EINVAL, "instrument %u: empty or unterminated symbol", k);
        if (cfg->instruments[k].session >= cfg->n_sessions)
            return tw__err(err, -EINVAL, "instrument %u: session %u of %u", k,
                           cfg->instruments[k].session, cfg->n_sessions);
    }
    for (uint32_t i = 0; i < cfg->n_instances; i++) {
        const tw_instance_cfg *ic = &cfg->instances[i];
        if (!name_ok(ic->name))
            return tw__err(err, -EINVAL, "instance %u: empty or unterminated name", i);
        if (ic->instrument >= cfg->n_instruments)
            return tw__err(err, -EINVAL, "instance %u: instrument %u of %u", i, ic->instrument,
                           cfg->n_instruments);
        if (tw__inst_generic(ic)) {
            tw_error ke = { 0 };
            if (tw_kernel_check_combo(ic->kernel, ic->params, &ke) != 0)
                return tw__err(err, -EINVAL, "instance %u (%s): %s", i, ic->kernel->name,
                               ke.msg);
            size_t sb = ic->kernel->state_bytes(ic->params);
            if (sb < 1 || sb > TW_KERNEL_MAX_STATE_BYTES)
                return tw__err(err, -EINVAL, "instance %u (%s): state_bytes %zu outside "
                               "[1, 1 MiB]", i, ic->kernel->name, sb);
            continue;
        }
        for (int j = 0; j < TW_COMBO_WINDOWS; j++)
            if (ic->combo[j] < TW_WINDOW_MIN || ic->combo[j] > TW_WINDOW_MAX)
                return tw__err(err, -TW_EBADWINDOW,
                               "instance %u: window %d = %lld outside [1, 100000]", i, j,
                               (long long)ic->combo[j]);
    }
    const tw_risk_cfg *r = &cfg->risk;
    const int64_t pos_max = INT64_C(1) << 62;
    if (r->max_position < 0 || r->max_position > pos_max || r->max_total_position < 0 ||
        r->max_total_position > pos_max)
        return tw__err(err, -EINVAL, "risk: position limits outside [0, 2^62]");
    if (r->max_orders_per_s < 1 || r->max_orders_per_s > 1000000000 ||
        r->max_session_orders_per_s < 1 || r->max_session_orders_per_s > 1000000000)
        return tw__err(err, -EINVAL, "risk: order rates outside [1, 1e9] per second");
    if (!(r->max_instance_loss > 0.0) || !(r->max_total_loss > 0.0))
        return tw__err(err, -EINVAL, "risk: loss limits must be > 0");
    if (r->on_loss != TW_TRADING_REDUCING && r->on_loss != TW_TRADING_HALTED)
        return tw__err(err, -EINVAL, "risk: on_loss must be REDUCING or HALTED");
    if (r->max_open_orders < 1 || r->max_open_orders > TW_STRATEGY_MAX_OPEN)
        return tw__err(err, -EINVAL, "risk: max_open_orders outside [1, %d]",
                       TW_STRATEGY_MAX_OPEN);
    return 0;
}

/* Offsets of every array in the strategy's memory; the kernels follow. */
typedef struct layout {
    size_t instr, inst, by_instr, changed, combos, open, sess, sig;
} layout;

/* The combos of instrument k's instances that run on its streaming
 * hma_sar kernel (generic 0), or the indices of those that run a kernel of
 * their own (generic 1), in instance order, into out and idx. */
static uint32_t gather(const tw_strategy_cfg *cfg, uint32_t k, int generic, int64_t *out,
                       uint32_t *idx)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < cfg->n_instances; i++)
        if (cfg->instances[i].instrument == k &&
            tw__inst_generic(&cfg->instances[i]) == generic) {
            if (out)
                memcpy(out + (size_t)n * TW_COMBO_WINDOWS, cfg->instances[i].combo,
                       sizeof(cfg->instances[i].combo));
            if (idx)
                idx[n] = i;
            n++;
        }
    return n;
}

/* Offsets of the fixed arrays; the kernels start at l->sig. */
static void plan(const tw_strategy_cfg *cfg, layout *l)
{
    const size_t slots = (size_t)cfg->risk.max_open_orders + 1;
    size_t p = align64(sizeof(tw_strategy));
    l->instr = p;
    p += align64(cfg->n_instruments * sizeof(instr_state));
    l->inst = p;
    p += align64(cfg->n_instances * sizeof(inst_state));
    l->by_instr = p;
    p += align64(cfg->n_instances * sizeof(uint32_t));
    l->changed = p;
    p += align64(cfg->n_instances * sizeof(uint32_t));
    l->combos = p;
    p += align64((size_t)cfg->n_instances * TW_COMBO_WINDOWS * sizeof(int64_t));
    l->open = p;
    p += align64((size_t)cfg->n_instances * slots * sizeof(open_order));
    l->sess = p;
    p += align64(cfg->n_sessions * sizeof(sess_state));
    l->sig = p;
}

size_t tw_strategy_memsize(const tw_strategy_cfg *cfg)
{
    if (validate(cfg, NULL) != 0)
        return 0;
    layout l;
    plan(cfg, &l);
    /* The kernels are sized from each instrument's combos, contiguous:
     * group them in a scratch copy (init time, not the hot path). */
    int64_t *tmp = malloc((size_t)cfg->n_instances * TW_COMBO_WINDOWS * sizeof(int64_t));
    if (!tmp)
        return 0;
    size_t total = l.sig;
    for (uint32_t k = 0; k < cfg->n_instruments; k++) {
        uint32_t n = gather(cfg, k, 0, tmp, NULL);
        size_t b = n ? tw__sig_memsize(tmp, n) : 0;
        if (n && !b) {
            free(tmp);
            return 0;
        }
        total += align64(b);
    }
    free(tmp);
    /* Then the flat state of every instance with a kernel of its own. */
    for (uint32_t i = 0; i < cfg->n_instances; i++)
        if (tw__inst_generic(&cfg->instances[i]))
            total += align64(cfg->instances[i].kernel->state_bytes(cfg->instances[i].params));
    return align64(total);
}

tw_strategy *tw_strategy_init(void *mem, size_t bytes, const tw_strategy_cfg *cfg,
                              tw_error *err)
{
    if (validate(cfg, err) != 0)
        return NULL;
    size_t need = tw_strategy_memsize(cfg);
    if (need == 0) {
        tw__err(err, -ENOMEM, "strategy: no memory to size the kernels");
        return NULL;
    }
    if (!mem || bytes < need || ((uintptr_t)mem & 63)) {
        tw__err(err, -ENOSPC, "strategy: %zu bytes at %p, need %zu, 64-byte aligned", bytes,
                mem, need);
        return NULL;
    }
    memset(mem, 0, need);
    layout l;
    plan(cfg, &l);
    char *base = mem;
    tw_strategy *s = (tw_strategy *)base;
    s->fee = cfg->fee;
    s->n_sessions = cfg->n_sessions;
    s->n_instruments = cfg->n_instruments;
    s->n_instances = cfg->n_instances;
    s->risk = cfg->risk;
    s->hooks = cfg->hooks;
    s->max_open = cfg->risk.max_open_orders;
    s->open_slots = s->max_open + 1;
    s->instr = (instr_state *)(base + l.instr);
    s->inst = (inst_state *)(base + l.inst);
    s->by_instr = (uint32_t *)(base + l.by_instr);
    s->changed = (uint32_t *)(base + l.changed);
    int64_t *combos = (int64_t *)(base + l.combos);
    s->open = (open_order *)(base + l.open);
    s->sess = (sess_state *)(base + l.sess);

    size_t p = l.sig;
    uint32_t first = 0;
    for (uint32_t k = 0; k < s->n_instruments; k++) {
        instr_state *in = &s->instr[k];
        memcpy(in->symbol, cfg->instruments[k].symbol, TW_NAME_MAX);
        in->session = cfg->instruments[k].session;
        in->last_bar = -1;
        in->first = first;
        in->n_sig = gather(cfg, k, 0, combos + (size_t)first * TW_COMBO_WINDOWS,
                           s->by_instr + first);
        in->n_inst = in->n_sig + gather(cfg, k, 1, NULL, s->by_instr + first + in->n_sig);
        if (in->n_inst > s->max_per_instr)
            s->max_per_instr = in->n_inst;
        if (in->n_sig) {
            size_t b = align64(tw__sig_memsize(combos + (size_t)first * TW_COMBO_WINDOWS,
                                               in->n_sig));
            tw_error se = {0};
            in->sig = tw__sig_init(base + p, b, combos + (size_t)first * TW_COMBO_WINDOWS,
                                   in->n_sig, s->fee, &se);
            if (!in->sig) {
                tw__err(err, se.code ? se.code : -ENOMEM,
                        "strategy: the kernel of instrument %u cannot be set up: %s", k, se.msg);
                return NULL;
            }
            p += b;
            for (uint32_t j = 0; j < in->n_inst; j++)
                s->inst[s->by_instr[first + j]].k = j;
        }
        for (uint32_t j = in->n_sig; j < in->n_inst; j++)
            s->inst[s->by_instr[first + j]].k = j;
        first += in->n_inst;
    }
    TW_VERIFY(first == s->n_instances && p <= need);
    for (uint32_t i = 0; i < s->n_instances; i++) {
        inst_state *it = &s->inst[i];
        const tw_instance_cfg *ic = &cfg->instances[i];
        memcpy(it->name, ic->name, TW_NAME_MAX);
        memcpy(it->combo, ic->combo, sizeof(it->combo));
        it->instrument = ic->instrument;
        it->state = TW_TRADING_ACTIVE;
        it->kernel = ic->kernel;
        if (!tw__inst_generic(ic))
            continue;
        /* Its flat state, in the memory zeroed (pre-faulted) above: the
         * hot path allocates nothing. */
        it->kdef = ic->kernel;
        memcpy(it->params, ic->params, sizeof(it->params));
        it->kstate_bytes = ic->kernel->state_bytes(ic->params);
        it->kstate = base + p;
        p += align64(it->kstate_bytes);
        tw_kbook_init(&it->book);
        if (ic->kernel->init(it->kstate, it->params) != 0) {
            tw__err(err, -EINVAL, "instance %u (%s): the kernel's init refused its params", i,
                    ic->kernel->name);
            return NULL;
        }
    }
    TW_VERIFY(p <= need);
    for (uint32_t j = 0; j < s->n_sessions; j++) {
        s->sess[j].rate.rate = cfg->session_orders_per_s ? cfg->session_orders_per_s[j]
                                                         : cfg->risk.max_session_orders_per_s;
        s->sess[j].state = TW_SESSION_DOWN;
    }
    s->total_rate.rate = cfg->risk.max_orders_per_s;
    s->state = TW_TRADING_ACTIVE;
    size_t kill = (size_t)s->n_instances * s->open_slots;
    s->max_out = s->max_per_instr;
    if (kill > s->max_out)
        s->max_out = kill;
    if (s->max_out < 2)
        s->max_out = 2;
    return s;
}

size_t tw_strategy_max_out(const tw_strategy *s) { return s->max_out; }
uint32_t tw_strategy_n_instances(const tw_strategy *s) { return s->n_instances; }
uint32_t tw_strategy_n_instruments(const tw_strategy *s) { return s->n_instruments; }
uint32_t tw_strategy_n_sessions(const tw_strategy *s) { return s->n_sessions; }
tw_trading_state tw_strategy_state(const tw_strategy *s) { return s->state; }

const char *tw_strategy_symbol(const tw_strategy *s, uint32_t k)
{
    TW_VERIFY(k < s->n_instruments);
    return s->instr[k].symbol;
}

uint32_t tw_strategy_instrument_session(const tw_strategy *s, uint32_t k)
{
    TW_VERIFY(k < s->n_instruments);
    return s->instr[k].session;
}

int64_t tw_strategy_last_bar(const tw_strategy *s, uint32_t k)
{
    TW_VERIFY(k < s->n_instruments);
    return s->instr[k].last_bar;
}

void tw_strategy_instance(const tw_strategy *s, uint32_t i, tw_instance_stats *out)
{
    TW_VERIFY(i < s->n_instances);
    const inst_state *it = &s->inst[i];
    memset(out, 0, sizeof(*out));
    out->name = it->name;
    out->instrument = it->instrument;
    memcpy(out->combo, it->combo, sizeof(out->combo));
    out->position = it->position;
    out->open_qty = it->open_qty;
    out->signal = it->signal;
    out->trades = it->trades;
    out->pnl = it->pnl;
    out->kernel = it->kernel;
    if (it->kdef) {
        out->params = it->params;
        out->signal_trades = it->book.trades;
        out->signal_pnl = it->book.pnl;
        out->stopped = it->book.stopped;
    } else {
        const tw__sig *g = s->instr[it->instrument].sig;
        out->signal_trades = tw__sig_trades(g, it->k);
        out->signal_pnl = tw__sig_pnl(g, it->k);
    }
    out->entry_px = it->position ? it->entry_px : 0.0;
    out->orders = it->orders;
    out->fills = it->fills;
    out->rejects = it->rejects;
    out->risk_rejects = it->risk_rejects;
    out->state = it->state;
}

void tw_strategy_counters_get(const tw_strategy *s, tw_strategy_counters *out)
{
    *out = s->c;
    out->state = s->state;
}

/* ---- digest ------------------------------------------------------------------ */

typedef struct fnv {
    uint64_t h;
} fnv;

static void mix(fnv *f, const void *p, size_t n)
{
    f->h = tw_fnv1a64(f->h, p, n);
}
static void mix_u64(fnv *f, uint64_t v) { mix(f, &v, sizeof(v)); }
static void mix_i64(fnv *f, int64_t v) { mix(f, &v, sizeof(v)); }
static void mix_f64(fnv *f, double v) { mix(f, &v, sizeof(v)); }
static void mix_bucket(fnv *f, const bucket *b)
{
    mix_i64(f, b->tokens);
    mix_i64(f, b->last_ns);
    mix_u64(f, b->started);
}

uint64_t tw_strategy_digest(const tw_strategy *s)
{
    fnv f = { TW_FNV1A64_INIT };
    for (uint32_t k = 0; k < s->n_instruments; k++) {
        const instr_state *in = &s->instr[k];
        mix_i64(&f, in->last_bar);
        mix_i64(&f, in->exposure);
        for (uint32_t j = 0; j < in->n_sig; j++) {
            mix_i64(&f, tw__sig_pos(in->sig, j));
            mix_f64(&f, tw__sig_entry(in->sig, j));
            mix_f64(&f, tw__sig_pnl(in->sig, j));
            mix_i64(&f, tw__sig_trades(in->sig, j));
        }
        for (uint32_t j = in->n_sig; j < in->n_inst; j++) {
            const inst_state *it = &s->inst[s->by_instr[in->first + j]];
            const tw_kbook *b = &it->book;
            mix_i64(&f, b->pos);
            mix_i64(&f, b->stopped);
            mix_i64(&f, b->entry_bar);
            mix_f64(&f, b->entry_price);
            mix_f64(&f, b->pnl);
            mix_i64(&f, b->trades);
            mix_i64(&f, b->wins);
            mix_f64(&f, b->max_drawdown);
            mix_u64(&f, b->bars);
            mix_u64(&f, b->bars_in_pos);
            mix(&f, it->kstate, it->kstate_bytes);
        }
    }
    for (uint32_t i = 0; i < s->n_instances; i++) {
        const inst_state *it = &s->inst[i];
        mix_i64(&f, it->signal);
        mix_i64(&f, it->position);
        mix_i64(&f, it->open_qty);
        mix_f64(&f, it->entry_px);
        mix_u64(&f, it->entry_bar);
        mix_f64(&f, it->pnl);
        mix_i64(&f, it->trades);
        mix_u64(&f, it->orders);
        mix_u64(&f, it->fills);
        mix_u64(&f, it->rejects);
        mix_u64(&f, it->risk_rejects);
        mix_u64(&f, it->state);
        mix_u64(&f, it->n_open);
        for (uint32_t j = 0; j < it->n_open; j++) {
            const open_order *o = &s->open[(size_t)i * s->open_slots + j];
            mix_u64(&f, o->id);
            mix_u64(&f, o->bar);
            mix_i64(&f, o->remaining);
            mix_u64(&f, o->kind);
            mix_u64(&f, o->cancel_sent);
        }
    }
    for (uint32_t j = 0; j < s->n_sessions; j++) {
        mix_bucket(&f, &s->sess[j].rate);
        mix_u64(&f, s->sess[j].state);
        mix_u64(&f, s->sess[j].logged_out);
    }
    mix_bucket(&f, &s->total_rate);
    mix_i64(&f, s->total_exposure);
    mix_u64(&f, s->state);
    mix_u64(&f, s->kill_mode);
    mix_u64(&f, s->n_closed);
    mix_u64(&f, s->finished);
    /* The counters are all 8-byte fields up to pnl; state is s->state. */
    mix(&f, &s->c, offsetof(tw_strategy_counters, pnl));
    mix_f64(&f, s->c.pnl);
    return f.h;
}
