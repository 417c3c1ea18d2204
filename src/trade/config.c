/* `tickwire trade --config FILE`: the INI file, read with libinih.
 *
 * libinih does the INI syntax (sections, key = value, comments, inline
 * "; comments"); we feed it lines through ini_parse_stream() from our own
 * reader, which is what gives us exact line numbers (for keys, for section
 * headers, and for sections with no keys at all, which libinih never
 * reports), and lets us refuse what libinih would otherwise bend silently:
 * lines longer than its buffer (it splits them), NUL bytes (it truncates),
 * indented lines (it glues them to the previous key as a continuation).
 * Every check reports the first problem by line as "FILE:LINE: what". */
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "tickwire/reactor.h"
#include "tickwire/journal_seg.h"
#include "tickwire/snapshot.h"
#include "tickwire/trade.h"
#include "tickwire/util.h"

/* libinih's line buffer (INI_MAX_LINE, Debian's build: 200) holds a line
 * plus "\r\n\0". */
#define LINE_MAX_CHARS (INI_MAX_LINE - 3)

typedef enum sec_kind {
    SEC_NONE = 0, /* before any header */
    SEC_BAD,      /* a header that failed: its keys are ignored */
    SEC_ENGINE,
    SEC_SESSION,
    SEC_INSTRUMENT,
    SEC_STRATEGY,
    SEC_RISK,
} sec_kind;

enum { KEY_REQUIRED = 1, KEY_REPEAT = 2 };

typedef struct key_def {
    const char *name;
    int flags;
} key_def;

/* Keys of each section, in the order docs/trade.md lists them.  The
 * index in these tables is the key's id in the setters below. */
enum { E_REPORT, E_TRADES, E_LOG, E_JOURNAL, E_FEE, E_MODE, E_BUSY, E_RING, E_CPUS, E_STRATEGY,
       E_SNAP_EVERY, E_SNAP_KEEP, E_SNAP_INTERVAL, E_JSEG_BYTES, E_JKEEP, E_N };
static const key_def engine_keys[E_N] = {
    { "report", KEY_REQUIRED }, { "trades", 0 }, { "log", 0 }, { "journal", 0 },
    { "fee", 0 }, { "mode", 0 }, { "busy_poll", 0 }, { "ring_slots", 0 }, { "cpus", 0 },
    { "strategy", 0 }, { "snapshot_every", 0 }, { "snapshot_keep", 0 },
    { "snapshot_interval_ms", 0 }, { "journal_segment_bytes", 0 }, { "journal_keep", 0 },
};
enum { S_HOST, S_PORT, S_SENDER, S_TARGET, S_STORE, S_STACK, S_IP, S_GATEWAY, S_HEARTBEAT,
       S_RECMIN, S_RECMAX, S_CONNTO, S_PCAP, S_RATE, S_N };
static const key_def session_keys[S_N] = {
    { "host", KEY_REQUIRED }, { "port", KEY_REQUIRED }, { "sender", KEY_REQUIRED },
    { "target", KEY_REQUIRED }, { "store", KEY_REQUIRED }, { "stack", 0 }, { "ip", 0 },
    { "gateway", 0 }, { "heartbeat", 0 }, { "reconnect_min_ms", 0 },
    { "reconnect_max_ms", 0 }, { "connect_timeout_ms", 0 }, { "pcap", 0 },
    { "max_orders_per_s", 0 },
};
enum { I_SESSION, I_N };
static const key_def instrument_keys[I_N] = { { "session", KEY_REQUIRED } };
enum { T_INSTRUMENT, T_COMBO, T_LENGTH, T_GRID, T_KERNEL, T_PARAMS, T_N };
static const key_def strategy_keys[T_N] = {
    { "instrument", KEY_REQUIRED }, { "combo", KEY_REPEAT }, { "length", KEY_REPEAT },
    { "grid", 0 }, { "kernel", 0 }, { "params", KEY_REPEAT },
};
enum { R_MAXPOS, R_MAXTOTAL, R_RATE, R_SRATE, R_LOSS, R_ILOSS, R_TLOSS, R_ONLOSS, R_OPEN, R_N };
static const key_def risk_keys[R_N] = {
    { "max_position", KEY_REQUIRED }, { "max_total_position", KEY_REQUIRED },
    { "max_orders_per_s", KEY_REQUIRED }, { "max_session_orders_per_s", 0 },
    { "max_loss", KEY_REQUIRED }, { "max_instance_loss", 0 }, { "max_total_loss", 0 },
    { "on_loss", 0 }, { "max_open_orders", 0 },
};
#define MAX_KEYS 16

static const key_def *keys_of(sec_kind k, int *n)
{
    switch (k) {
    case SEC_ENGINE: *n = E_N; return engine_keys;
    case SEC_SESSION: *n = S_N; return session_keys;
    case SEC_INSTRUMENT: *n = I_N; return instrument_keys;
    case SEC_STRATEGY: *n = T_N; return strategy_keys;
    case SEC_RISK: *n = R_N; return risk_keys;
    default: *n = 0; return NULL;
    }
}

/* A name given by reference (an instrument's session, a strategy's
 * instrument), resolved when the whole file has been read. */
typedef struct ref {
    char name[TW_NAME_MAX + 1]; /* one more: a name too long is caught at resolution */
    int line;
} ref;

typedef struct pstate {
    const char *file;
    tw_trade_config *cfg;
    /* the reader */
    const char *p, *end;
    int line;
    int indented; /* the line being parsed starts with a blank */
    /* the current section */
    sec_kind kind;
    uint32_t idx;
    int sec_line;
    char sec_title[TW_TRADE_STR_MAX];
    int key_line[MAX_KEYS];
    /* per kind: header lines of the single sections, and names to resolve */
    int engine_line, risk_line;
    ref *instr_session, *strat_instr;
    int *session_rate_line;
    uint32_t cap_sessions, cap_instruments, cap_strategies, cap_instances;
    /* the first error by line */
    int err_line;
    char err[160];
    int oom;
} pstate;

static void fail(pstate *ps, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(pstate *ps, int line, const char *fmt, ...)
{
    if (ps->err_line && ps->err_line <= line)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err, sizeof(ps->err), fmt, ap);
    va_end(ap);
    ps->err_line = line;
}

/* ---- growth --------------------------------------------------------------------- */

static int grow(pstate *ps, void **arr, uint32_t *cap, uint32_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    uint32_t nc = *cap ? *cap * 2 : 8;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p) {
        ps->oom = 1;
        return -1;
    }
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *arr = p;
    *cap = nc;
    return 0;
}

/* ---- values ------------------------------------------------------------------------ */

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    const char *p = s;
    int neg = 0;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    if (*p < '0' || *p > '9')
        return -1;
    uint64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_C(1) << 62))
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (*p || v > (UINT64_C(1) << 62))
        return -1;
    int64_t r = neg ? -(int64_t)v : (int64_t)v;
    if (r < lo || r > hi)
        return -1;
    *out = r;
    return 0;
}

static int parse_f64(const char *s, double *out)
{
    if (!*s || strlen(s) > 64)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || !isfinite(v) || errno == ERANGE)
        return -1;
    *out = v;
    return 0;
}

static int parse_bool(const char *s, int *out)
{
    static const char *yes[] = { "yes", "true", "on", "1" }, *no[] = { "no", "false", "off", "0" };
    for (size_t i = 0; i < 4; i++) {
        if (!strcmp(s, yes[i]))
            return *out = 1, 0;
        if (!strcmp(s, no[i]))
            return *out = 0, 0;
    }
    return -1;
}

/* Names of sessions, instruments and strategies: they become FIX Account
 * (1) and Symbol (55) values and JSON strings. */
static int name_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-' || c == ':' || c == '/';
}

static const char *check_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return "is empty";
    if (n >= TW_NAME_MAX)
        return "is longer than 31 characters";
    for (size_t i = 0; i < n; i++)
        if (!name_char((unsigned char)s[i]))
            return "has a character other than letters, digits and _ . - : /";
    return NULL;
}

/* Printable, no blank: host names, CompIDs. */
static int graph_text(const char *s, size_t max)
{
    return tw_text_ok(s, strlen(s), max - 1, 0);
}

static int parse_ip4(const char *s, uint32_t *ip, uint32_t *prefix)
{
    char buf[32];
    size_t n = strlen(s);
    if (n >= sizeof(buf))
        return -1;
    memcpy(buf, s, n + 1);
    char *slash = strchr(buf, '/');
    if (prefix)
        *prefix = 24;
    if (slash) {
        int64_t v;
        if (!prefix || parse_i64(slash + 1, 1, 32, &v) != 0 || slash[1] == '+' || slash[1] == '-')
            return -1;
        *prefix = (uint32_t)v;
        *slash = 0;
    }
    struct in_addr a;
    if (inet_pton(AF_INET, buf, &a) != 1)
        return -1;
    *ip = ntohl(a.s_addr);
    return 0;
}

/* cpus = 0,2-3 */
static int parse_cpus(const char *s, tw_trade_engine_cfg *e)
{
    char buf[TW_TRADE_STR_MAX];
    if (strlen(s) >= sizeof(buf))
        return -1;
    strcpy(buf, s);
    e->n_cpus = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        size_t tl = strlen(tok);
        while (tl && tok[tl - 1] == ' ')
            tok[--tl] = 0;
        char *dash = strchr(tok, '-');
        int64_t lo, hi;
        if (dash) {
            *dash = 0;
            if (parse_i64(tok, 0, 1023, &lo) || parse_i64(dash + 1, 0, 1023, &hi) || lo > hi ||
                dash[1] == '+' || dash[1] == '-')
                return -1;
        } else if (parse_i64(tok, 0, 1023, &lo)) {
            return -1;
        } else {
            hi = lo;
        }
        if (tok[0] == '+' || tok[0] == '-')
            return -1;
        for (int64_t c = lo; c <= hi; c++) {
            for (uint32_t j = 0; j < e->n_cpus; j++)
                if (e->cpus[j] == c)
                    return -1;
            if (e->n_cpus == TW_TRADE_MAX_CPUS)
                return -1;
            e->cpus[e->n_cpus++] = (uint16_t)c;
        }
    }
    return e->n_cpus ? 0 : -1;
}

/* The CPUs this process may use (its affinity mask, narrowed to cpus =
 * when given) and how many of them are isolated, as `tickwire doctor`
 * reads them. */
static void machine_cpus(const tw_trade_engine_cfg *e, unsigned *n, unsigned *iso)
{
    cpu_set_t m;
    CPU_ZERO(&m);
    if (sched_getaffinity(0, sizeof(m), &m) != 0)
        CPU_SET(0, &m);
    tw_cpuset use = {{0}}, isol = {{0}};
    for (int i = 0; i < CPU_SETSIZE && i < TW_CPUSET_MAX; i++)
        if (CPU_ISSET(i, &m))
            tw_cpuset_add(&use, i);
    if (e->n_cpus) {
        tw_cpuset given = {{0}};
        for (uint32_t i = 0; i < e->n_cpus; i++)
            if (tw_cpuset_has(&use, e->cpus[i]))
                tw_cpuset_add(&given, e->cpus[i]);
        use = given;
    }
    char list[4096] = "";
    FILE *f = fopen("/sys/devices/system/cpu/isolated", "r");
    if (f) {
        if (!fgets(list, sizeof(list), f))
            list[0] = 0;
        fclose(f);
        (void)tw_cpuset_parse(list, &isol);
    }
    *n = *iso = 0;
    for (int i = 0; i < TW_CPUSET_MAX; i++) {
        *n += (unsigned)tw_cpuset_has(&use, i);
        *iso += (unsigned)(tw_cpuset_has(&use, i) && tw_cpuset_has(&isol, i));
    }
    if (*n == 0)
        *n = 1;
}

void tw_trade_engine_auto(tw_trade_engine_cfg *e, uint32_t n_sessions, unsigned n_cpus,
                          unsigned n_isolated)
{
    char sw[128] = "", bw[128] = "";
    if (e->strategy_auto) {
        int inl = e->mode == TW_TRADE_THREADS && n_sessions <= TW_TRADE_INLINE_MAX_SESSIONS &&
                  (n_sessions == 1 || n_cpus < n_sessions + 2);
        e->strategy = inl ? TW_TRADE_STRATEGY_INLINE : TW_TRADE_STRATEGY_THREAD;
        if (e->mode != TW_TRADE_THREADS)
            snprintf(sw, sizeof(sw), "mode = processes runs the strategy in a process of its own");
        else if (n_sessions > TW_TRADE_INLINE_MAX_SESSIONS)
            snprintf(sw, sizeof(sw), "%u sessions, more than inline's %d", n_sessions,
                     TW_TRADE_INLINE_MAX_SESSIONS);
        else if (inl && n_sessions == 1)
            snprintf(sw, sizeof(sw), "one session: rx to tx in one wake-up, no ring hop");
        else if (inl)
            snprintf(sw, sizeof(sw), "%u CPUs cannot give %u net cores and the strategy one each "
                     "and one to spare", n_cpus, n_sessions);
        else
            snprintf(sw, sizeof(sw), "%u CPUs give %u net cores and the strategy one each",
                     n_cpus, n_sessions);
    }
    if (e->busy_auto) {
        unsigned loops = e->strategy == TW_TRADE_STRATEGY_INLINE ? 1u : n_sessions + 1u;
        e->busy_poll = n_isolated >= loops || n_cpus >= loops + 1u;
        if (n_isolated >= loops)
            snprintf(bw, sizeof(bw), "%u busy loop(s) on %u isolated CPUs", loops, n_isolated);
        else
            snprintf(bw, sizeof(bw), "%u busy loop(s) %s %u CPUs", loops,
                     e->busy_poll ? "leave a CPU to the rest of the host of" :
                     "would take every one of", n_cpus);
    }
    snprintf(e->auto_why, sizeof(e->auto_why), "strategy = %s%s%s%s, busy_poll = %s%s%s%s (%u "
             "session(s), %u CPUs usable, %u isolated)",
             e->strategy == TW_TRADE_STRATEGY_INLINE ? "inline" : "thread",
             sw[0] ? " (auto: " : " (given", sw, ")", e->busy_poll ? "yes" : "no",
             bw[0] ? " (auto: " : " (given", bw, ")", n_sessions, n_cpus, n_isolated);
}

/* stack = a port spec as tools/common/portspec.h opens it (kept verbatim
 * for the engine): KIND:ARGS, or sim.  DPDK's EAL arguments have blanks. */
static int parse_stack(const char *s, tw_trade_stack *out)
{
    static const struct {
        const char *kind;
        tw_trade_stack stack;
    } kinds[] = {
        { "af_xdp", TW_STACK_AF_XDP }, { "af_packet", TW_STACK_AF_PACKET },
        { "dpdk", TW_STACK_DPDK }, { "dpdk_af_packet", TW_STACK_DPDK },
        { "dpdk_af_xdp", TW_STACK_DPDK }, { "memif", TW_STACK_DPDK }, { "sim", TW_STACK_SIM },
    };
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            return -1;
    if (!strcmp(s, "sim"))
        return *out = TW_STACK_SIM, 0;
    const char *colon = strchr(s, ':');
    if (!colon || !colon[1] || colon[1] == ' ')
        return -1;
    for (size_t i = 0; i < TW_ARRAY_SIZE(kinds); i++)
        if (strlen(kinds[i].kind) == (size_t)(colon - s) &&
            !memcmp(s, kinds[i].kind, (size_t)(colon - s)))
            return *out = kinds[i].stack, 0;
    return -1;
}

/* combo = 3,6,2,1,2,3 */
static int parse_combo(pstate *ps, const char *v, int64_t combo[TW_COMBO_WINDOWS])
{
    static const char *wname[TW_COMBO_WINDOWS] = { "h_half", "h_full", "h_sqrt",
                                                   "t_third", "t_half", "t_full" };
    const char *p = v;
    for (int j = 0; j < TW_COMBO_WINDOWS; j++) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *start = p;
        if (*p == '-' || *p == '+')
            p++;
        while (*p >= '0' && *p <= '9')
            p++;
        char num[24];
        size_t n = (size_t)(p - start);
        while (*p == ' ' || *p == '\t')
            p++;
        if (n == 0 || n >= sizeof(num) || (j < TW_COMBO_WINDOWS - 1 ? *p != ',' : *p != 0)) {
            fail(ps, ps->line, "combo: '%s' is not six integers separated by commas", v);
            return -1;
        }
        memcpy(num, start, n);
        num[n] = 0;
        int64_t w;
        if (parse_i64(num, INT64_MIN + 1, INT64_MAX, &w) != 0 || w < TW_WINDOW_MIN ||
            w > TW_WINDOW_MAX) {
            fail(ps, ps->line, "combo: window %d (%s) = %s is outside [1, 100000]", j + 1,
                 wname[j], num);
            return -1;
        }
        combo[j] = w;
        if (*p == ',')
            p++;
    }
    return 0;
}

/* ---- sections --------------------------------------------------------------------- */

/* The checks that need a whole section: required keys, keys that go
 * together. */
static void close_section(pstate *ps)
{
    int nk;
    const key_def *kd = keys_of(ps->kind, &nk);
    for (int k = 0; k < nk; k++)
        if ((kd[k].flags & KEY_REQUIRED) && !ps->key_line[k])
            fail(ps, ps->sec_line, "%s: missing key '%s'", ps->sec_title, kd[k].name);
    tw_trade_config *c = ps->cfg;
    if (ps->kind == SEC_SESSION) {
        tw_trade_session_cfg *se = &c->sessions[ps->idx];
        if (ps->key_line[S_IP] && !ps->key_line[S_STACK])
            fail(ps, ps->key_line[S_IP], "%s: ip without stack (ip is the userspace stack's "
                 "address; kernel TCP takes none)", ps->sec_title);
        if (ps->key_line[S_GATEWAY] && !ps->key_line[S_STACK])
            fail(ps, ps->key_line[S_GATEWAY], "%s: gateway without stack", ps->sec_title);
        if (ps->key_line[S_PCAP] && !ps->key_line[S_STACK])
            fail(ps, ps->key_line[S_PCAP], "%s: pcap without stack (the capture is the "
                 "userspace stack's)", ps->sec_title);
        if (ps->key_line[S_STACK] && !ps->key_line[S_IP])
            fail(ps, ps->key_line[S_STACK], "%s: stack = %s needs ip = A.B.C.D", ps->sec_title,
                 se->stack_spec);
        if (se->reconnect_min_ms > se->reconnect_max_ms)
            fail(ps, ps->key_line[S_RECMIN] ? ps->key_line[S_RECMIN] : ps->key_line[S_RECMAX],
                 "%s: reconnect_min_ms %u above reconnect_max_ms %u", ps->sec_title,
                 se->reconnect_min_ms, se->reconnect_max_ms);
    }
    if (ps->kind == SEC_STRATEGY) {
        const tw_trade_strategy_section *st = &c->strategies[ps->idx];
        if (!st->n_instances && !ps->err_line && st->kernel)
            fail(ps, ps->sec_line, "%s: kernel = %s and no params (params = %s=V,...)",
                 ps->sec_title, st->kernel->name, st->kernel->params[0].name);
        else if (!st->n_instances && !ps->err_line)
            fail(ps, ps->sec_line, "%s: no combo (combo = 6 windows, length = L or "
                 "grid = default)", ps->sec_title);
    }
    ps->kind = SEC_NONE;
}

/* Finds a name among n entries of `stride` bytes whose name is at the
 * start; returns the index or -1. */
static int find_name(const void *arr, uint32_t n, size_t stride, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp((const char *)arr + (size_t)i * stride, name))
            return (int)i;
    return -1;
}

static void open_section(pstate *ps, const char *title, size_t len)
{
    close_section(ps);
    memset(ps->key_line, 0, sizeof(ps->key_line));
    ps->sec_line = ps->line;
    ps->kind = SEC_BAD;
    char t[TW_TRADE_STR_MAX];
    if (len >= sizeof(t))
        len = sizeof(t) - 1;
    memcpy(t, title, len);
    t[len] = 0;
    /* Trim, then split "KIND NAME". */
    char *a = t;
    while (*a == ' ' || *a == '\t')
        a++;
    size_t n = strlen(a);
    while (n && (a[n - 1] == ' ' || a[n - 1] == '\t'))
        a[--n] = 0;
    char *name = a + strcspn(a, " \t");
    if (*name) {
        *name++ = 0;
        while (*name == ' ' || *name == '\t')
            name++;
    }
    snprintf(ps->sec_title, sizeof(ps->sec_title), "[%s%s%s]", a, *name ? " " : "", name);
    static const struct {
        const char *word;
        sec_kind kind;
        int named;
    } kinds[] = { { "engine", SEC_ENGINE, 0 }, { "session", SEC_SESSION, 1 },
                  { "instrument", SEC_INSTRUMENT, 1 }, { "strategy", SEC_STRATEGY, 1 },
                  { "risk", SEC_RISK, 0 } };
    int k = -1;
    for (int i = 0; i < (int)TW_ARRAY_SIZE(kinds); i++)
        if (!strcmp(a, kinds[i].word))
            k = i;
    if (k < 0) {
        fail(ps, ps->line, "unknown section [%s] (sections: engine, session NAME, "
             "instrument SYMBOL, strategy NAME, risk)", a);
        return;
    }
    const sec_kind kind = kinds[k].kind;
    if (!kinds[k].named && *name) {
        fail(ps, ps->line, "[%s] takes no name (got '%s')", a, name);
        return;
    }
    if (kinds[k].named) {
        const char *why = *name ? check_name(name) : NULL;
        if (!*name) {
            fail(ps, ps->line, "[%s] needs a name: [%s %s]", a, a,
                 kind == SEC_INSTRUMENT ? "SYMBOL" : "NAME");
            return;
        }
        if (strcspn(name, " \t") != strlen(name)) {
            fail(ps, ps->line, "%s: a name has no blanks", ps->sec_title);
            return;
        }
        if (why) {
            fail(ps, ps->line, "%s: the name '%s' %s", ps->sec_title, name, why);
            return;
        }
    }
    tw_trade_config *c = ps->cfg;
    switch (kind) {
    case SEC_ENGINE:
    case SEC_RISK: {
        int *first = kind == SEC_ENGINE ? &ps->engine_line : &ps->risk_line;
        if (*first) {
            fail(ps, ps->line, "duplicate section [%s] (first at line %d)", a, *first);
            return;
        }
        *first = ps->line;
        if (kind == SEC_ENGINE)
            c->engine.line = ps->line;
        break;
    }
    case SEC_SESSION: {
        int d = find_name(c->sessions, c->n_sessions, sizeof(*c->sessions), name);
        if (d >= 0) {
            fail(ps, ps->line, "duplicate session '%s' (first at line %d)", name,
                 c->sessions[d].line);
            return;
        }
        if (c->n_sessions >= TW_STRATEGY_MAX_SESSIONS) {
            fail(ps, ps->line, "more than %d sessions", TW_STRATEGY_MAX_SESSIONS);
            return;
        }
        uint32_t cap = ps->cap_sessions;
        if (grow(ps, (void **)&c->sessions, &ps->cap_sessions, c->n_sessions, sizeof(*c->sessions)) ||
            grow(ps, (void **)&ps->session_rate_line, &cap, c->n_sessions, sizeof(int)))
            return;
        tw_trade_session_cfg *se = &c->sessions[c->n_sessions];
        strcpy(se->name, name);
        se->line = ps->line;
        se->prefix = 24;
        se->heartbeat_s = 30;
        se->reconnect_min_ms = 100;
        se->reconnect_max_ms = 5000;
        se->connect_timeout_ms = 2000;
        ps->idx = c->n_sessions++;
        break;
    }
    case SEC_INSTRUMENT: {
        int d = find_name(c->instruments, c->n_instruments, sizeof(*c->instruments), name);
        if (d >= 0) {
            fail(ps, ps->line, "duplicate instrument '%s' (first at line %d)", name,
                 c->instruments[d].line);
            return;
        }
        if (c->n_instruments >= TW_STRATEGY_MAX_INSTANCES) {
            fail(ps, ps->line, "too many instruments");
            return;
        }
        uint32_t cap = ps->cap_instruments;
        if (grow(ps, (void **)&c->instruments, &ps->cap_instruments, c->n_instruments,
                 sizeof(*c->instruments)) ||
            grow(ps, (void **)&ps->instr_session, &cap, c->n_instruments, sizeof(ref)))
            return;
        tw_trade_instrument_cfg *in = &c->instruments[c->n_instruments];
        strcpy(in->symbol, name);
        in->line = ps->line;
        ps->idx = c->n_instruments++;
        break;
    }
    case SEC_STRATEGY: {
        int d = find_name(c->strategies, c->n_strategies, sizeof(*c->strategies), name);
        if (d >= 0) {
            fail(ps, ps->line, "duplicate strategy '%s' (first at line %d)", name,
                 c->strategies[d].line);
            return;
        }
        uint32_t cap = ps->cap_strategies;
        if (grow(ps, (void **)&c->strategies, &ps->cap_strategies, c->n_strategies,
                 sizeof(*c->strategies)) ||
            grow(ps, (void **)&ps->strat_instr, &cap, c->n_strategies, sizeof(ref)))
            return;
        tw_trade_strategy_section *st = &c->strategies[c->n_strategies];
        strcpy(st->name, name);
        st->line = ps->line;
        st->first_instance = c->n_instances;
        ps->idx = c->n_strategies++;
        break;
    }
    default:
        return;
    }
    ps->kind = kind;
}

/* Appends one instance to the current strategy: a combo of hma_sar's six
 * windows (params NULL), or the params of the section's kernel. */
static void add_instance_k(pstate *ps, const int64_t combo[TW_COMBO_WINDOWS],
                           const double *params)
{
    tw_trade_config *c = ps->cfg;
    tw_trade_strategy_section *st = &c->strategies[ps->idx];
    if (params) {
        const size_t np = st->kernel->n_params;
        for (uint32_t i = st->first_instance; i < st->first_instance + st->n_instances; i++)
            if (!memcmp(c->instances[i].params, params, np * sizeof(double))) {
                fail(ps, ps->line, "%s: params given twice (as %s.%u)", ps->sec_title,
                     st->name, i - st->first_instance);
                return;
            }
    }
    for (uint32_t i = st->first_instance; i < st->first_instance + st->n_instances && !params;
         i++)
        if (!memcmp(c->instances[i].combo, combo, sizeof(int64_t) * TW_COMBO_WINDOWS)) {
            fail(ps, ps->line, "%s: combo %lld,%lld,%lld,%lld,%lld,%lld given twice",
                 ps->sec_title, (long long)combo[0], (long long)combo[1], (long long)combo[2],
                 (long long)combo[3], (long long)combo[4], (long long)combo[5]);
            return;
        }
    if (c->n_instances >= TW_STRATEGY_MAX_INSTANCES) {
        fail(ps, ps->line, "more than %u instances", TW_STRATEGY_MAX_INSTANCES);
        return;
    }
    if (grow(ps, (void **)&c->instances, &ps->cap_instances, c->n_instances, sizeof(*c->instances)))
        return;
    tw_instance_cfg *ic = &c->instances[c->n_instances];
    int n = snprintf(ic->name, sizeof(ic->name), "%s.%u", st->name, st->n_instances);
    if (n < 0 || n >= (int)sizeof(ic->name)) {
        fail(ps, ps->line, "%s: instance name '%s.%u' is longer than 31 characters",
             ps->sec_title, st->name, st->n_instances);
        memset(ic, 0, sizeof(*ic));
        return;
    }
    if (combo)
        memcpy(ic->combo, combo, sizeof(ic->combo));
    ic->kernel = st->kernel;
    if (params)
        memcpy(ic->params, params, st->kernel->n_params * sizeof(double));
    c->n_instances++;
    st->n_instances++;
}

static void add_instance(pstate *ps, const int64_t combo[TW_COMBO_WINDOWS])
{
    add_instance_k(ps, combo, NULL);
}

/* kernel = NAME | PATH.so, before any instance of the section. */
static void set_kernel(pstate *ps, const char *v)
{
    tw_trade_strategy_section *st = &ps->cfg->strategies[ps->idx];
    if (st->n_instances) {
        fail(ps, ps->line, "kernel: after the section's first instance (kernel = goes above "
             "combo =, length =, grid = and params =)");
        return;
    }
    tw_error ke = { 0 };
    const tw_kernel_def *def = NULL;
    if (tw_kernel_find(v, &def, &ke) != 0) {
        fail(ps, ps->line, "kernel: %s", ke.msg);
        return;
    }
    st->kernel = def;
    st->kernel_line = ps->line;
}

/* params = NAME=V,NAME=V,...: every param of the section's kernel once,
 * then tw_kernel_check_combo(). */
static void set_params(pstate *ps, const char *v)
{
    tw_trade_strategy_section *st = &ps->cfg->strategies[ps->idx];
    const tw_kernel_def *def = st->kernel;
    if (!def) {
        fail(ps, ps->line, "params: needs kernel = NAME above it");
        return;
    }
    double p[TW_KERNEL_MAX_PARAMS] = { 0 };
    int seen[TW_KERNEL_MAX_PARAMS] = { 0 };
    const char *q = v;
    while (*q) {
        while (*q == ' ' || *q == '\t')
            q++;
        const char *ne = q;
        while (*ne && *ne != '=' && *ne != ',')
            ne++;
        const char *nt = ne;
        while (nt > q && (nt[-1] == ' ' || nt[-1] == '\t'))
            nt--;
        char name[64];
        size_t nl = (size_t)(nt - q);
        if (*ne != '=' || nl == 0 || nl >= sizeof(name)) {
            fail(ps, ps->line, "params: '%s' is not NAME=VALUE,... (%s's params: see "
                 "`tickwire kernels`)", v, def->name);
            return;
        }
        memcpy(name, q, nl);
        name[nl] = 0;
        int k = tw_kernel_param_index(def, name);
        if (k < 0) {
            fail(ps, ps->line, "params: %s has no param '%s'", def->name, name);
            return;
        }
        if (seen[k]) {
            fail(ps, ps->line, "params: '%s' given twice", name);
            return;
        }
        const char *vs = ne + 1;
        const char *ve = vs;
        while (*ve && *ve != ',')
            ve++;
        char num[48];
        size_t vl = (size_t)(ve - vs);
        while (vl && (vs[vl - 1] == ' ' || vs[vl - 1] == '\t'))
            vl--;
        while (vl && (*vs == ' ' || *vs == '\t')) {
            vs++;
            vl--;
        }
        char *endp = NULL;
        if (vl == 0 || vl >= sizeof(num)) {
            fail(ps, ps->line, "params: %s: no number", name);
            return;
        }
        memcpy(num, vs, vl);
        num[vl] = 0;
        errno = 0;
        double x = strtod(num, &endp);
        if (*endp || errno == ERANGE || !isfinite(x)) {
            fail(ps, ps->line, "params: %s = '%s' is not a finite number", name, num);
            return;
        }
        p[k] = x;
        seen[k] = 1;
        q = *ve ? ve + 1 : ve;
    }
    for (uint32_t k = 0; k < def->n_params; k++)
        if (!seen[k]) {
            fail(ps, ps->line, "params: %s's param '%s' is missing (every param is required)",
                 def->name, def->params[k].name);
            return;
        }
    tw_error ke = { 0 };
    if (tw_kernel_check_combo(def, p, &ke) != 0) {
        fail(ps, ps->line, "params: %s", ke.msg);
        return;
    }
    if (def != tw_kernel_builtin(0)) {
        add_instance_k(ps, NULL, p);
        return;
    }
    /* hma_sar by name: its six windows, on the streaming kernel. */
    int64_t combo[TW_COMBO_WINDOWS];
    for (int j = 0; j < TW_COMBO_WINDOWS; j++)
        combo[j] = (int64_t)p[j];
    add_instance(ps, combo);
}

/* ---- key = value --------------------------------------------------------------- */

static void set_str(pstate *ps, char *dst, size_t cap, const char *key, const char *v)
{
    if (!*v) {
        fail(ps, ps->line, "%s: empty value", key);
        return;
    }
    if (strlen(v) >= cap) {
        fail(ps, ps->line, "%s: longer than %zu characters", key, cap - 1);
        return;
    }
    strcpy(dst, v);
}

static int64_t get_i64(pstate *ps, const char *key, const char *v, int64_t lo, int64_t hi)
{
    int64_t x = lo;
    if (parse_i64(v, lo, hi, &x) != 0)
        fail(ps, ps->line, "%s: '%s' is not an integer in [%lld, %lld]", key, v, (long long)lo,
             (long long)hi);
    return x;
}

static double get_f64(pstate *ps, const char *key, const char *v, double lo)
{
    double x = lo;
    if (parse_f64(v, &x) != 0 || !(x >= lo)) {
        fail(ps, ps->line, "%s: '%s' is not a finite number >= %g", key, v, lo);
        return lo;
    }
    return x;
}

static void set_engine(pstate *ps, int k, const char *key, const char *v)
{
    tw_trade_engine_cfg *e = &ps->cfg->engine;
    switch (k) {
    case E_REPORT: set_str(ps, e->report, sizeof(e->report), key, v); break;
    case E_TRADES: set_str(ps, e->trades, sizeof(e->trades), key, v); break;
    case E_LOG: set_str(ps, e->log, sizeof(e->log), key, v); break;
    case E_JOURNAL: set_str(ps, e->journal, sizeof(e->journal), key, v); break;
    case E_FEE: e->fee = get_f64(ps, key, v, 0.0); break;
    case E_MODE:
        if (!strcmp(v, "threads"))
            e->mode = TW_TRADE_THREADS;
        else if (!strcmp(v, "processes"))
            e->mode = TW_TRADE_PROCESSES;
        else
            fail(ps, ps->line, "mode: '%s' is neither threads nor processes", v);
        break;
    case E_STRATEGY:
        e->strategy_line = ps->line;
        if (!strcmp(v, "thread"))
            e->strategy = TW_TRADE_STRATEGY_THREAD;
        else if (!strcmp(v, "inline"))
            e->strategy = TW_TRADE_STRATEGY_INLINE;
        else if (strcmp(v, "auto"))
            fail(ps, ps->line, "strategy: '%s' is not thread, inline or auto", v);
        e->strategy_auto = !strcmp(v, "auto");
        break;
    case E_BUSY:
        e->busy_auto = !strcmp(v, "auto");
        if (!e->busy_auto && parse_bool(v, &e->busy_poll) != 0)
            fail(ps, ps->line, "busy_poll: '%s' is not yes, no or auto", v);
        break;
    case E_RING: {
        int64_t n = get_i64(ps, key, v, 64, 1 << 20);
        if (n & (n - 1))
            fail(ps, ps->line, "ring_slots: %lld is not a power of two", (long long)n);
        e->ring_slots = (uint32_t)n;
        break;
    }
    case E_SNAP_EVERY:
        e->snapshot_every = (uint64_t)get_i64(ps, key, v, 0, INT64_C(1) << 40);
        break;
    case E_SNAP_KEEP:
        e->snapshot_keep = (uint32_t)get_i64(ps, key, v, 1, 64);
        break;
    case E_SNAP_INTERVAL:
        e->snapshot_interval_ms = (uint64_t)get_i64(ps, key, v, 0, INT64_C(86400000));
        break;
    case E_JSEG_BYTES:
        e->journal_segment_bytes = (uint64_t)get_i64(ps, key, v, 4096, INT64_C(1) << 40);
        break;
    case E_JKEEP:
        if (!strcmp(v, "all"))
            e->journal_keep_all = 1;
        else if (!strcmp(v, "snapshots"))
            e->journal_keep_all = 0;
        else
            fail(ps, ps->line, "journal_keep: '%s' is not snapshots or all", v);
        break;
    case E_CPUS:
        if (parse_cpus(v, e) != 0)
            fail(ps, ps->line, "cpus: '%s' is not a list of distinct CPUs like 0,2-3 "
                 "(0..1023, at most %d)", v, TW_TRADE_MAX_CPUS);
        break;
    }
}

static void set_session(pstate *ps, int k, const char *key, const char *v)
{
    tw_trade_session_cfg *se = &ps->cfg->sessions[ps->idx];
    switch (k) {
    case S_HOST:
        if (!graph_text(v, sizeof(se->host)))
            fail(ps, ps->line, "host: '%s' is not a host name or address", v);
        else
            strcpy(se->host, v);
        break;
    case S_PORT: se->port = (uint16_t)get_i64(ps, key, v, 1, 65535); break;
    case S_SENDER:
    case S_TARGET: {
        char *dst = k == S_SENDER ? se->sender : se->target;
        if (!graph_text(v, sizeof(se->sender)))
            fail(ps, ps->line, "%s: '%s' is not a CompID (1 to 63 printable characters, "
                 "no blanks)", key, v);
        else
            strcpy(dst, v);
        break;
    }
    case S_STORE: set_str(ps, se->store, sizeof(se->store), key, v); break;
    case S_STACK:
        if (parse_stack(v, &se->stack) != 0)
            fail(ps, ps->line, "stack: '%s' is not a port spec (af_xdp:IF[:QUEUE], "
                 "af_packet:IF, dpdk:PORT:EAL ARGS, dpdk_af_packet:IF, dpdk_af_xdp:IF, "
                 "memif:SOCKET[,role=...] or sim)",
                 v);
        else
            strcpy(se->stack_spec, v);
        break;
    case S_IP:
        if (parse_ip4(v, &se->ip4, &se->prefix) != 0)
            fail(ps, ps->line, "ip: '%s' is not an IPv4 address A.B.C.D[/PREFIX]", v);
        else
            strcpy(se->ip, v);
        break;
    case S_GATEWAY:
        if (parse_ip4(v, &se->gateway4, NULL) != 0)
            fail(ps, ps->line, "gateway: '%s' is not an IPv4 address A.B.C.D", v);
        break;
    case S_HEARTBEAT: se->heartbeat_s = (uint32_t)get_i64(ps, key, v, 1, 3600); break;
    case S_RECMIN: se->reconnect_min_ms = (uint32_t)get_i64(ps, key, v, 1, 3600000); break;
    case S_RECMAX: se->reconnect_max_ms = (uint32_t)get_i64(ps, key, v, 1, 3600000); break;
    case S_CONNTO: se->connect_timeout_ms = (uint32_t)get_i64(ps, key, v, 1, 3600000); break;
    case S_PCAP: set_str(ps, se->pcap, sizeof(se->pcap), key, v); break;
    case S_RATE:
        se->max_orders_per_s = get_i64(ps, key, v, 1, 1000000000);
        ps->session_rate_line[ps->idx] = ps->line;
        break;
    }
}

static void set_strategy(pstate *ps, int k, const char *key, const char *v)
{
    switch (k) {
    case T_INSTRUMENT: {
        ref *r = &ps->strat_instr[ps->idx];
        if (strlen(v) > TW_NAME_MAX) {
            fail(ps, ps->line, "instrument: '%s' is longer than 31 characters", v);
            return;
        }
        strcpy(r->name, v);
        r->line = ps->line;
        break;
    }
    case T_KERNEL: set_kernel(ps, v); break;
    case T_PARAMS: set_params(ps, v); break;
    case T_COMBO:
    case T_LENGTH:
    case T_GRID:
        if (ps->cfg->strategies[ps->idx].kernel &&
            ps->cfg->strategies[ps->idx].kernel != tw_kernel_builtin(0)) {
            fail(ps, ps->line, "%s: hma_sar's; kernel = %s takes params = instead", key,
                 ps->cfg->strategies[ps->idx].kernel->name);
            return;
        }
        break;
    }
    switch (k) {
    case T_COMBO: {
        int64_t combo[TW_COMBO_WINDOWS];
        if (parse_combo(ps, v, combo) == 0)
            add_instance(ps, combo);
        break;
    }
    case T_LENGTH: {
        int64_t combo[TW_COMBO_WINDOWS];
        int64_t L = get_i64(ps, key, v, 1, TW_WINDOW_MAX);
        if (ps->err_line == ps->line)
            return;
        tw_combo_from_length(L, combo);
        add_instance(ps, combo);
        break;
    }
    case T_GRID: {
        if (strcmp(v, "default") != 0) {
            fail(ps, ps->line, "grid: '%s' is not a known grid (grid = default: the 80 "
                 "combos of kernel.md)", v);
            return;
        }
        int64_t g[TW_GRID_DEFAULT_COMBOS * TW_COMBO_WINDOWS];
        size_t n = tw_grid_default(g);
        for (size_t i = 0; i < n && !ps->oom; i++)
            add_instance(ps, g + i * TW_COMBO_WINDOWS);
        break;
    }
    }
}

static void set_risk(pstate *ps, int k, const char *key, const char *v)
{
    tw_risk_cfg *r = &ps->cfg->risk;
    const int64_t pos_max = INT32_MAX;
    switch (k) {
    case R_MAXPOS: r->max_position = get_i64(ps, key, v, 0, pos_max); break;
    case R_MAXTOTAL: r->max_total_position = get_i64(ps, key, v, 0, pos_max); break;
    case R_RATE: r->max_orders_per_s = get_i64(ps, key, v, 1, 1000000000); break;
    case R_SRATE: r->max_session_orders_per_s = get_i64(ps, key, v, 1, 1000000000); break;
    case R_LOSS:
    case R_ILOSS:
    case R_TLOSS: {
        double x = get_f64(ps, key, v, 0.0);
        if (ps->err_line == ps->line)
            return;
        if (!(x > 0.0)) {
            fail(ps, ps->line, "%s: must be > 0 (percentage points)", key);
            return;
        }
        if (k == R_LOSS || k == R_ILOSS)
            r->max_instance_loss = k == R_LOSS && ps->key_line[R_ILOSS] ? r->max_instance_loss : x;
        if (k == R_LOSS || k == R_TLOSS)
            r->max_total_loss = k == R_LOSS && ps->key_line[R_TLOSS] ? r->max_total_loss : x;
        break;
    }
    case R_ONLOSS:
        if (!strcmp(v, "reducing"))
            r->on_loss = TW_TRADING_REDUCING;
        else if (!strcmp(v, "halted"))
            r->on_loss = TW_TRADING_HALTED;
        else
            fail(ps, ps->line, "on_loss: '%s' is neither reducing nor halted", v);
        break;
    case R_OPEN: r->max_open_orders = (uint32_t)get_i64(ps, key, v, 1, TW_STRATEGY_MAX_OPEN); break;
    }
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    pstate *ps = user;
    (void)section; /* ours (ps->kind), from the reader: libinih truncates long names */
    if (ps->oom)
        return 0;
    if (ps->indented) {
        fail(ps, ps->line, "indented line: keys start at column 1 (continuation lines are "
             "not supported)");
    } else if (ps->kind == SEC_NONE) {
        fail(ps, ps->line, "key '%s' before any [section]", name);
    } else if (ps->kind != SEC_BAD) {
        int nk;
        const key_def *kd = keys_of(ps->kind, &nk);
        int k = -1;
        for (int i = 0; i < nk; i++)
            if (!strcmp(kd[i].name, name))
                k = i;
        if (k < 0) {
            fail(ps, ps->line, "unknown key '%s' in %s", name, ps->sec_title);
        } else if (ps->key_line[k] && !(kd[k].flags & KEY_REPEAT)) {
            fail(ps, ps->line, "duplicate key '%s' in %s (first at line %d)", name,
                 ps->sec_title, ps->key_line[k]);
        } else {
            if (!ps->key_line[k])
                ps->key_line[k] = ps->line;
            if (!*value) {
                fail(ps, ps->line, "%s: empty value", name);
            } else {
                switch (ps->kind) {
                case SEC_ENGINE: set_engine(ps, k, name, value); break;
                case SEC_SESSION: set_session(ps, k, name, value); break;
                case SEC_INSTRUMENT: {
                    ref *r = &ps->instr_session[ps->idx];
                    if (strlen(value) > TW_NAME_MAX) {
                        fail(ps, ps->line, "session: '%s' is longer than 31 characters", value);
                        break;
                    }
                    strcpy(r->name, value);
                    r->line = ps->line;
                    break;
                }
                case SEC_STRATEGY: set_strategy(ps, k, name, value); break;
                case SEC_RISK: set_risk(ps, k, name, value); break;
                default: break;
                }
            }
        }
    }
    /* Nonzero: go on.  libinih remembers the first line we refused (we
     * keep the message; the earliest of its line and ours wins). */
    return ps->err_line != ps->line && !ps->oom;
}

/* ---- the reader ------------------------------------------------------------------ */

/* Where a header's title ends, as libinih finds it: the first ']', unless
 * an inline comment (';' after a blank) comes first.  NULL: no header. */
static const char *header_end(const char *p, const char *end)
{
    for (const char *q = p; q < end; q++) {
        if (*q == ']')
            return q;
        if (*q == ';' && q > p && (q[-1] == ' ' || q[-1] == '\t'))
            return NULL;
    }
    return NULL;
}

static char *reader(char *str, int num, void *stream)
{
    pstate *ps = stream;
    if (ps->p >= ps->end)
        return NULL;
    const char *nl = memchr(ps->p, '\n', (size_t)(ps->end - ps->p));
    const char *line_end = nl ? nl + 1 : ps->end;
    const char *s = ps->p;
    size_t len = (size_t)(line_end - s);
    ps->p = line_end;
    ps->line++;
    ps->indented = 0;
    size_t body = len - (nl ? 1 : 0);
    if (body && s[body - 1] == '\r')
        body--;
    if (memchr(s, 0, len)) {
        fail(ps, ps->line, "NUL byte in the line");
        strcpy(str, "\n");
        return str;
    }
    if (body > LINE_MAX_CHARS || len + 1 > (size_t)num) {
        fail(ps, ps->line, "line longer than %d characters", LINE_MAX_CHARS);
        strcpy(str, "\n");
        return str;
    }
    memcpy(str, s, len);
    str[len] = 0;
    /* What libinih will make of it: a header opens a section (ours, with
     * its line, even if no key follows); an indented key line would be
     * glued to the previous key. */
    const char *q = s, *e = s + body;
    if (ps->line == 1 && body >= 3 && !memcmp(q, "\xEF\xBB\xBF", 3))
        q += 3;
    const char *t = q;
    while (t < e && (*t == ' ' || *t == '\t'))
        t++;
    if (t < e && *t == '[') {
        const char *he = header_end(t + 1, e);
        if (he)
            open_section(ps, t + 1, (size_t)(he - t - 1));
    } else if (t > q && t < e && *t != ';' && *t != '#') {
        ps->indented = 1;
    }
    return str;
}

/* ---- the whole file ---------------------------------------------------------------- */

static void resolve(pstate *ps)
{
    tw_trade_config *c = ps->cfg;
    const int last = ps->line ? ps->line : 1;
    if (!ps->engine_line)
        fail(ps, last, "no [engine] section (report = FILE is required)");
    if (!ps->risk_line)
        fail(ps, last, "no [risk] section (max_position, max_total_position, "
             "max_orders_per_s and max_loss are required)");
    if (!c->n_sessions)
        fail(ps, last, "no [session NAME] section");
    if (!c->n_instruments)
        fail(ps, last, "no [instrument SYMBOL] section");
    if (!c->n_strategies)
        fail(ps, last, "no [strategy NAME] section");
    if (c->engine.strategy_auto || c->engine.busy_auto) {
        unsigned n = 0, iso = 0;
        machine_cpus(&c->engine, &n, &iso);
        tw_trade_engine_auto(&c->engine, c->n_sessions, n, iso);
    }
    /* inline: every session's net core and the strategy on one reactor
     * loop, which waits on one fd per session. */
    if (c->engine.strategy == TW_TRADE_STRATEGY_INLINE && c->n_sessions > TW_TRADE_INLINE_MAX_SESSIONS)
        fail(ps, c->engine.strategy_line, "strategy = inline: %u sessions, at most %d on its one "
             "thread", c->n_sessions, TW_TRADE_INLINE_MAX_SESSIONS);
    if (c->engine.strategy == TW_TRADE_STRATEGY_INLINE && c->engine.mode == TW_TRADE_PROCESSES)
        fail(ps, c->engine.strategy_line, "strategy = inline runs the strategy in the gateway's "
             "thread: it needs mode = threads");
    /* Two sessions that would log on as one (the venue refuses the
     * second), or share a store (each would corrupt the other's). */
    for (uint32_t b = 0; b < c->n_sessions; b++)
        for (uint32_t a = 0; a < b; a++) {
            const tw_trade_session_cfg *x = &c->sessions[a], *y = &c->sessions[b];
            if (!strcmp(x->host, y->host) && x->port == y->port && !strcmp(x->sender, y->sender) &&
                !strcmp(x->target, y->target) && x->host[0])
                fail(ps, y->line, "[session %s]: the same host, port, sender and target as "
                     "[session %s] (line %d)", y->name, x->name, x->line);
            if (x->store[0] && !strcmp(x->store, y->store))
                fail(ps, y->line, "[session %s]: store '%s' is [session %s]'s too (line %d)",
                     y->name, y->store, x->name, x->line);
        }
    for (uint32_t k = 0; k < c->n_instruments; k++) {
        const ref *r = &ps->instr_session[k];
        if (!r->line)
            continue; /* missing key: reported by close_section() */
        int j = find_name(c->sessions, c->n_sessions, sizeof(*c->sessions), r->name);
        if (j < 0)
            fail(ps, r->line, "[instrument %s]: no [session %s]", c->instruments[k].symbol,
                 r->name);
        else
            c->instruments[k].session = (uint32_t)j;
    }
    for (uint32_t k = 0; k < c->n_strategies; k++) {
        const ref *r = &ps->strat_instr[k];
        if (!r->line)
            continue;
        int j = find_name(c->instruments, c->n_instruments, sizeof(*c->instruments), r->name);
        if (j < 0) {
            fail(ps, r->line, "[strategy %s]: no [instrument %s]", c->strategies[k].name,
                 r->name);
            continue;
        }
        tw_trade_strategy_section *st = &c->strategies[k];
        st->instrument = (uint32_t)j;
        for (uint32_t i = st->first_instance; i < st->first_instance + st->n_instances; i++)
            c->instances[i].instrument = (uint32_t)j;
    }
}

/* "PATH:LINE: msg" into err, shortening PATH at its start if needed. */
static int report_error(tw_error *err, int code, const char *file, int line, const char *msg)
{
    char where[32];
    if (line > 0)
        snprintf(where, sizeof(where), ":%d: ", line);
    else
        snprintf(where, sizeof(where), ": ");
    size_t room = sizeof(err->msg) - 1 - strlen(where) - strlen(msg);
    size_t fl = strlen(file);
    if (room < 8)
        room = 8;
    if (fl > room)
        return tw__err(err, code, "...%s%s%s", file + fl - (room - 3), where, msg);
    return tw__err(err, code, "%s%s%s", file, where, msg);
}

int tw_trade_config_parse(const char *text, size_t len, const char *name,
                          tw_trade_config **out, tw_error *err)
{
    *out = NULL;
    if (!name)
        name = "(config)";
    tw_trade_config *c = calloc(1, sizeof(*c));
    if (!c)
        return tw__err(err, -ENOMEM, "%s: out of memory", name);
    snprintf(c->path, sizeof(c->path), "%s", name);
    c->engine.fee = TW_FEE_DEFAULT;
    c->engine.ring_slots = 4096;
    c->engine.snapshot_every = 50000;
    c->engine.snapshot_keep = TW_SNAP_DEFAULT_KEEP;
    c->engine.journal_segment_bytes = TW_JSEG_DEFAULT_BYTES;
    c->engine.strategy_auto = c->engine.busy_auto = 1;
    tw_risk_cfg_init(&c->risk);
    /* Set from [risk] (max_loss is required); 0 = not given. */
    c->risk.max_instance_loss = c->risk.max_total_loss = 0.0;
    c->risk.max_session_orders_per_s = 0;
    pstate ps = { .file = name, .cfg = c, .p = text, .end = text + len };

    int rc = ini_parse_stream(reader, &ps, handler, &ps);
    if (!ps.oom)
        close_section(&ps);
    if (!ps.oom && !ps.err_line && rc == 0)
        resolve(&ps);
    if (!ps.oom && rc > 0 && (!ps.err_line || rc < ps.err_line)) {
        /* libinih's own complaint: a line that is neither a header nor
         * key = value. */
        const char *p = text, *e = text + len;
        for (int l = 1; l < rc && p < e; l++) {
            const char *nl = memchr(p, '\n', (size_t)(e - p));
            p = nl ? nl + 1 : e;
        }
        while (p < e && (*p == ' ' || *p == '\t'))
            p++;
        fail(&ps, rc, "%s", p < e && *p == '[' ? "section header without ']'"
                                               : "expected [section] or key = value");
    }
    free(ps.instr_session);
    free(ps.strat_instr);
    int *rate_line = ps.session_rate_line;
    if (ps.oom) {
        free(rate_line);
        tw_trade_config_free(c);
        return tw__err(err, -ENOMEM, "%s: out of memory", name);
    }
    if (ps.err_line || rc != 0) {
        free(rate_line);
        tw_trade_config_free(c);
        return report_error(err, -TW_EFORMAT, name, ps.err_line ? ps.err_line : rc, ps.err);
    }
    /* What the strategy takes, derived once. */
    if (!c->risk.max_session_orders_per_s)
        c->risk.max_session_orders_per_s = c->risk.max_orders_per_s;
    c->strategy_instruments = calloc(c->n_instruments, sizeof(*c->strategy_instruments));
    c->session_orders_per_s = calloc(c->n_sessions, sizeof(*c->session_orders_per_s));
    if (!c->strategy_instruments || !c->session_orders_per_s) {
        free(rate_line);
        tw_trade_config_free(c);
        return tw__err(err, -ENOMEM, "%s: out of memory", name);
    }
    for (uint32_t k = 0; k < c->n_instruments; k++) {
        strcpy(c->strategy_instruments[k].symbol, c->instruments[k].symbol);
        c->strategy_instruments[k].session = c->instruments[k].session;
    }
    for (uint32_t j = 0; j < c->n_sessions; j++)
        c->session_orders_per_s[j] = rate_line[j] ? c->sessions[j].max_orders_per_s
                                                  : c->risk.max_session_orders_per_s;
    free(rate_line);
    *out = c;
    return 0;
}

int tw_trade_config_load(const char *path, tw_trade_config **out, tw_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return report_error(err, -errno, path, 0, strerror(errno));
    /* A config file is small; 16 MiB is far beyond any real one. */
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        if (cap >= ((size_t)16 << 20)) {
            free(buf);
            fclose(f);
            return report_error(err, -EFBIG, path, 0, "larger than 16 MiB");
        }
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int rerr = ferror(f);
    fclose(f);
    if (!buf)
        return tw__err(err, -ENOMEM, "%s: out of memory", path);
    if (rerr) {
        free(buf);
        return report_error(err, -EIO, path, 0, "read error");
    }
    int rc = tw_trade_config_parse(buf, n, path, out, err);
    free(buf);
    return rc;
}

void tw_trade_config_free(tw_trade_config *c)
{
    if (!c)
        return;
    free(c->sessions);
    free(c->instruments);
    free(c->strategies);
    free(c->instances);
    free(c->strategy_instruments);
    free(c->session_orders_per_s);
    free(c);
}

void tw_trade_config_strategy(const tw_trade_config *c, tw_strategy_cfg *out)
{
    memset(out, 0, sizeof(*out));
    out->fee = c->engine.fee;
    out->n_sessions = c->n_sessions;
    out->n_instruments = c->n_instruments;
    out->n_instances = c->n_instances;
    out->instruments = c->strategy_instruments;
    out->instances = c->instances;
    out->risk = c->risk;
    out->session_orders_per_s = c->session_orders_per_s;
}
