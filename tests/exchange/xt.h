/* Test harness of the exchange's C tests: trader sessions of our own
 * (tw_fix_session initiators) wired to the venue through in-memory byte
 * pipes on a virtual clock, a log of every message the venue sent each of
 * them, and the checks of live.md's protocol that every test shares
 * (bars once and in order with the dataset's exact closes, the barrier's
 * TestRequest after each bar's entries, fills at the right close).
 *
 * Deterministic: nothing reads a clock, nothing runs in another thread;
 * a test moves time with xt_advance and bytes with xt_pump, and can hold a
 * trader's bytes back (hold) to see what the venue does meanwhile.
 *
 * Declarations only; the code is xt.c, linked into each exchange test. */
#ifndef TW_TESTS_EXCHANGE_XT_H
#define TW_TESTS_EXCHANGE_XT_H

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tickwire/decimal.h"
#include "tickwire/exchange.h"
#include "tickwire/fix_session.h"
/* The checks count into the test's one counter (xt.c defines it). */
#define TW_CHECK_SHARED 1
#include "tw_check.h"

#define XT_BUF (8u << 20)
#define XT_MAX_CLIENTS 4
#define XT_MAX_BARS 4096
#define XT_EPOCH 1767225600000000000ll /* 2026-01-01T00:00:00Z */

typedef struct xt_env xt_env;

typedef struct xt_msg {
    char *raw;
    size_t len;
} xt_msg;

typedef struct xt_client {
    xt_env *env;
    char name[24];
    tw_fix_session fs;
    tw_fix_store store;
    int has_store;
    tw_xchg_conn *xc;
    int venue_closed;  /* the venue closed our connection */
    int hold;          /* keep our bytes from the venue */
    int deaf;          /* read nothing the venue sends (it piles up in v2c) */
    size_t v2c_cap;    /* how much may pile up (XT_BUF unless set) */
    char *c2v;
    size_t c2v_len;
    char *v2c;
    size_t v2c_len;
    xt_msg *log;       /* every message the venue sent us, in order */
    unsigned n_log, cap_log;
    /* Called for each application message the session hands us. */
    void (*on_app)(struct xt_client *cl, const tw_fix_msg *m, int possdup);
    void *user;
    int logon_events, logout_events, logout_on_closed;
    /* When we first wrote a Heartbeat for bar-<i> (epoch ns, 0: never):
     * bar i+1's SendingTime may not be earlier. */
    int64_t hb_bar_ns[XT_MAX_BARS];
} xt_client;

struct xt_env {
    tw_xchg *x;
    int64_t now;
    xt_client *cl[XT_MAX_CLIENTS];
    unsigned n_cl;
    /* Fills reported by the venue (on_fill). */
    unsigned n_fills;
    tw_xchg_fill fills[4096];
    char fill_cl[4096][24];
    /* Fills read back from a store at create (resumed), their ClOrdIDs. */
    unsigned n_resumed;
    char resumed_cl[64][24];
    int verbose;
};

/* ---- the venue ------------------------------------------------------------- */

void xt_on_fill(void *ctx, const tw_xchg_fill *f);

void xt_on_log(void *ctx, const char *sess, const char *text);

/* Venue config for tests: lockstep, no store, our clock. */
void xt_cfg(tw_xchg_cfg *c, xt_env *e, const tw_xchg_symbol *sy, unsigned n);

int xt_env_open(xt_env *e, const tw_xchg_cfg *c);

/* ---- the pipes -------------------------------------------------------------- */

int xt_cli_write(void *ctx, const char *b, size_t n);

/* Our session closes its connection: the venue sees the transport go. */
void xt_cli_close(void *ctx);

int xt_ven_write(void *ctx, const char *b, size_t n);

void xt_ven_close(void *ctx);

void xt_cli_msg(void *ctx, tw_fix_session *s, const tw_fix_decoded *d, int possdup);

void xt_cli_event(void *ctx, tw_fix_session *s, tw_fix_event ev, const char *text);

/* A trader session CompID name; with_store: a memfd store (sequence
 * numbers survive a reconnect). */
xt_client *xt_client_new(xt_env *e, const char *name, int with_store);

void xt_client_free(xt_client *cl);

void xt_env_close(xt_env *e);

/* Opens a transport connection to the venue; with logon, our session
 * sends its Logon. */
int xt_connect(xt_client *cl, int logon);

/* Our side drops the transport (the venue is told). */
void xt_drop(xt_client *cl);

/* Raw bytes from us to the venue (bypassing our session). */
void xt_raw(xt_client *cl, const char *bytes, size_t n);

/* Moves the venue's bytes to cl: each message is logged, then our session
 * takes it. */
int xt_deliver_v2c(xt_client *cl);

/* Moves bytes both ways until nothing moves (bounded), polling the venue
 * between rounds. */
void xt_pump(xt_env *e);

/* Delivers what cl has written so far to the venue once, whatever
 * cl->hold says, then pumps (with cl's later bytes still held if hold is
 * set). */
void xt_push(xt_client *cl);

/* Time passes in steps of at most 10 ms: timers on both sides, then
 * bytes. */
void xt_advance(xt_env *e, int64_t ns);

/* Pumps and advances until pred holds or max_ns pass.  Returns pred. */
int xt_until(xt_env *e, int (*pred)(xt_env *, void *), void *arg, int64_t max_ns);

int xt_pred_done(xt_env *e, void *a);

/* ---- sending ---------------------------------------------------------------- */

tw_fix_wbuf *xt_begin(xt_client *cl, const char *type);

void xt_send(xt_client *cl);

/* V: 263=1 264=1 265=1 267=1 269=2, 146 + the symbols. */
void xt_subscribe(xt_client *cl, const char *req, const char *const *sy, unsigned n);

/* D: a market order (ord_type '1') unless told otherwise. */
void xt_order(xt_client *cl, const char *id, const char *sym, char side, long qty,
                     char ord_type, const char *account);

/* ---- reading the log -------------------------------------------------------- */

/* Parses log message i (views valid until the next call). */
int xt_parse(const xt_client *cl, unsigned i, tw_fix_msg *m);

int xt_is(const tw_fix_msg *m, const char *type);

/* Field value as a NUL-terminated string in a static buffer ("" if absent). */
const char *xt_str(const tw_fix_msg *m, uint32_t tag);

int xt_has(const tw_fix_msg *m, uint32_t tag);

/* Index of the k-th (0-based) message of type after index from, or -1. */
int xt_find(const xt_client *cl, const char *type, unsigned from, unsigned k);

unsigned xt_count(const xt_client *cl, const char *type);

/* The last message of type, parsed into m; -1 if none. */
int xt_last(const xt_client *cl, const char *type, tw_fix_msg *m);

/* ---- the protocol checks ------------------------------------------------------ */

/* What xt_check_stream found. */
typedef struct xt_stream {
    unsigned bars[128];       /* per symbol: bars received (next expected) */
    unsigned possdup_dups;    /* resent entries of bars already seen, ignored */
    unsigned test_requests;   /* bar-<i> TestRequests */
    int opened, closed;       /* h 340=2 before the first X; 340=3 after the last */
    int errors;
} xt_stream;

int xt_sym_of(const tw_xchg_symbol *sy, unsigned n, const char *name, size_t len);

int xt_bits_eq(double a, double b);

/* Walks everything the venue sent cl and checks live.md's rules: each
 * symbol's bars arrive in order, each once (a PossDup copy of a bar
 * already seen is ignored, as a trader must), with 279=0 269=2 278=<bar>
 * 271=1 and 270 the dataset's close exactly (absent for NaN); the X's 262
 * is the MDReqID under which its first entry's symbol was subscribed
 * (md_req[s], NULL = not checked); in lockstep a TestRequest bar-<i>
 * follows the entries of bar i before any entry of bar i+1; Open comes
 * before the first bar and Closed after the last. */
xt_stream xt_check_stream(const xt_client *cl, const tw_xchg_symbol *sy, unsigned n,
                                 const char *const *md_req, int lockstep);

/* The close an order placed when bar `bar` was the last one sent must get:
 * the last priced bar at or before it (-1 when none). */
long xt_fill_bar(const tw_xchg_symbol *y, long bar);

/* The ExecutionReport for ClOrdID id (the first, or -1). */
int xt_er(const xt_client *cl, const char *id, tw_fix_msg *m);

/* Checks that the ER for id is a full fill at symbol y's close of bar b
 * (bit for bit) with every field live.md lists. */
void xt_check_fill(const xt_client *cl, const char *id, const tw_xchg_symbol *y, long b,
                          long qty, const char *account);

/* Checks that the ER for id is a reject 150=8 39=8 with 103=reason. */
void xt_check_reject(const xt_client *cl, const char *id, int reason);

/* ---- what the tests trade on ---------------------------------------------------- */

/* AAA: prices whose shortest exact text is awkward (17 digits, tiny,
 * subnormal, huge, negative, zero) and then a walk.  BBB: shorter, with
 * NaN gaps at the start, in the middle and last. */
extern double aaa[20], bbb[12];

extern tw_xchg_symbol syms[2];

void make_data(void);

extern const char *const both[2];

/* ---- a trader rule ------------------------------------------------------------ */

/* Sends orders from inside the session's callback, before the session
 * reaches the TestRequest behind the bar (live.md: how a FIX engine that
 * answers TestRequests itself keeps the barrier).  AAA: every third bar,
 * buy 1 or 2.  BBB: sell 2 at bars 1 (no price yet), 7 (a gap) and 11 (the
 * last, a gap). */
void rule(xt_client *cl, const tw_fix_msg *m, int possdup);

/* The rule's fills, and `extra` fills of other orders (not checked here). */
void check_rule_fills_n(const xt_client *cl, xt_env *e, unsigned extra);

void check_rule_fills(const xt_client *cl, xt_env *e);

#endif
