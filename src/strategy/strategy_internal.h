/* What the strategy core's files share (nobody else may include this). */
#ifndef TW_STRATEGY_INTERNAL_H
#define TW_STRATEGY_INTERNAL_H

#include "tickwire/strategy.h"

/* ---- the kernel seam (signal.c) -------------------------------------------
 *
 * One streaming kernel per instrument over the combos of its instances.
 * signal.c is the only file that talks to the kernel. */
typedef struct tw__sig tw__sig;

/* Bytes for these combos (valid: checked by the caller), 0 if they cannot
 * be sized (no memory to plan). */
size_t tw__sig_memsize(const int64_t *combos, uint32_t n_combos);
/* Builds the kernel state in mem (tw__sig_memsize bytes, 64-aligned);
 * NULL if it cannot (no memory to plan: init time only). */
tw__sig *tw__sig_init(void *mem, size_t bytes, const int64_t *combos, uint32_t n_combos,
                      double fee, tw_error *err);
/* Feeds one bar (close NaN for a gap, never <= 0 or infinite) to every
 * combo; returns how many changed position, their indices ascending in
 * changed[] (capacity: the combo count). */
size_t tw__sig_update(tw__sig *g, double close, uint32_t *changed);
/* Combo k's stop-and-reverse state after the last update. */
int tw__sig_pos(const tw__sig *g, uint32_t k);
double tw__sig_entry(const tw__sig *g, uint32_t k);
double tw__sig_pnl(const tw__sig *g, uint32_t k);
int64_t tw__sig_trades(const tw__sig *g, uint32_t k);
/* The stream itself (its state as bytes: state.c). */
tw_stream *tw__sig_stream(tw__sig *g);

/* Non-zero when instance c runs a kernel of its own (not hma_sar by combo). */
static inline int tw__inst_generic(const tw_instance_cfg *c)
{
    return c->kernel && c->kernel != tw_kernel_builtin(0);
}

/* ---- the strategy's memory -------------------------------------------------- */

/* One open order of an instance. */
typedef struct open_order {
    uint64_t id;
    uint64_t bar;       /* the decision bar (flatten: the instrument's last bar) */
    int64_t remaining;  /* signed units not yet filled (never 0 in a live slot) */
    uint8_t kind;       /* TW_ORDER_SIGNAL / TW_ORDER_FLATTEN */
    uint8_t cancel_sent; /* a CANCEL was written for it */
    uint8_t pad[6];
} open_order;

typedef struct inst_state {
    char name[TW_NAME_MAX];
    int64_t combo[TW_COMBO_WINDOWS];
    uint32_t instrument;
    uint32_t k;         /* its combo's index in the instrument's kernel */
    int32_t signal;     /* the kernel's position after the last bar */
    uint32_t n_open;    /* live slots at the front of its open[] */
    int64_t position;   /* filled, signed units */
    int64_t open_qty;   /* sum of its open orders' remaining */
    double entry_px;
    uint64_t entry_bar;
    double pnl;
    int64_t trades;
    uint64_t orders, fills, rejects, risk_rejects;
    tw_trading_state state; /* its own: raised by max_instance_loss */
    uint32_t pad;
    const tw_kernel_def *kernel; /* as configured (NULL: hma_sar by combo) */
    /* A kernel other than hma_sar (kdef not NULL): its flat state in the
     * strategy's memory and the host's books of it. */
    const tw_kernel_def *kdef;
    void *kstate;
    size_t kstate_bytes;
    tw_kbook book;
    double params[TW_KERNEL_MAX_PARAMS];
} inst_state;

typedef struct instr_state {
    char symbol[TW_NAME_MAX];
    uint32_t session;
    uint32_t n_inst;    /* instances on it */
    uint32_t first;     /* their indices: by_instr[first .. first + n_inst) */
    uint32_t n_sig;     /* the first n_sig of them run on sig (hma_sar by combo),
                           the others each on its own kernel state */
    int64_t last_bar;   /* -1 before the first */
    int64_t exposure;   /* sum over its instances of position + open_qty */
    tw__sig *sig;
} instr_state;

/* An order-rate token bucket in nano-tokens (one order costs 1e9), so the
 * refill from now_ns is exact integer arithmetic. */
typedef struct bucket {
    int64_t tokens;
    int64_t last_ns;
    int64_t rate;       /* orders per second */
    uint8_t started;    /* last_ns is set */
    uint8_t pad[7];
} bucket;

typedef struct sess_state {
    bucket rate;
    uint32_t state;     /* tw_session_state */
    uint32_t logged_out; /* LOGOUT written */
} sess_state;

struct tw_strategy {
    double fee;
    uint32_t n_sessions, n_instruments, n_instances;
    uint32_t max_open;      /* per instance, signal orders */
    uint32_t open_slots;    /* per instance: max_open + 1 (a flatten's reserve) */
    uint32_t max_per_instr; /* most instances on one instrument */
    size_t max_out;
    tw_risk_cfg risk;
    tw_strategy_hooks hooks;

    instr_state *instr;
    inst_state *inst;
    uint32_t *by_instr;     /* instance indices grouped by instrument */
    uint32_t *changed;      /* a bar's changed combos (n_instances: any instrument's) */
    open_order *open;       /* n_instances x open_slots */
    sess_state *sess;

    bucket total_rate;
    int64_t total_exposure; /* sum over instruments of |exposure| */
    tw_trading_state state; /* global */
    uint32_t kill_mode;     /* the kill switch fired and no operator ACTIVE since */
    uint32_t n_closed;      /* sessions closed */
    uint32_t finished;      /* FINISHED written */
    tw_strategy_counters c;
};

/* ---- risk.c ------------------------------------------------------------------ */

/* Gives rec to the log hook (if any). */
void tw__slog(tw_strategy *s, const tw_strategy_log *rec);
/* Checks an order of *qty signed units for instance i against every rule;
 * 0 if it may be sent (*qty possibly cut by REDUCING; its tokens taken),
 * -1 if rejected (counted and logged). */
/* tw__risk_check's refusals (each logged and counted by its rule). */
enum {
    TW__RISK_STATE = -1, /* the trading state (HALTED, REDUCING) refuses the order */
    TW__RISK_LIMIT = -2, /* a limit: open orders, position, total position */
    TW__RISK_RATE = -3,  /* an order-rate bucket (session or total) is empty */
};
/* 0: the order goes (*qty, maybe cut to what REDUCING lets close), or a
 * TW__RISK_* refusal. */
int tw__risk_check(tw_strategy *s, uint32_t i, int64_t *qty, uint64_t id, int64_t now_ns);
/* Sets the global trading state, logging a change. */
void tw__risk_set_state(tw_strategy *s, tw_trading_state st, int64_t now_ns, const char *why);
/* After instance i's PnL moved: the loss limits. */
void tw__risk_after_booking(tw_strategy *s, uint32_t i, int64_t now_ns);

#endif
