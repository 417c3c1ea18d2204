/* tickwire exchange: the venue of live.md's FIX 4.4 protocol on the
 * command line.  Parses and checks everything (bad arguments or files: one
 * line on stderr, exit 2, before listening), loads the datasets with the
 * kernel's readers, opens the fills log, reads the stores back (a run that
 * resumes), then runs the venue over kernel TCP or the userspace stack
 * until the run is over (or SIGTERM), and prints a one-line summary. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cli_opt.h"
#include "exchange/xchg_cli.h"
#include "tickwire/clock.h"
#include "tickwire/fix_build.h"
#include "tickwire/kernel.h"

/* Over kernel TCP: the library's loop; the listening line on stdout. */
static int run_tcp(tw_xchg *x, const xcli_opts *o)
{
    tw_error err = {0};
    int lfd;
    uint16_t bound;
    if (tw_xchg_tcp_listen(o->host, o->port, &lfd, &bound, &err) != 0) {
        fprintf(stderr, "tickwire exchange: --listen: %s\n", err.msg);
        return 1;
    }
    printf("tickwire exchange: listening on %s:%u (kernel TCP)\n", o->host, bound);
    fflush(stdout);
    if (tw_xchg_tcp_run(x, lfd, o->max_conns, o->busy, &tw__xcli_signals, &err) != 0) {
        fprintf(stderr, "tickwire exchange: %s\n", err.msg);
        return 1;
    }
    return 0;
}

int tw__cli_exchange(int argc, char **argv);

#define MAX_SYMBOLS 256
#define MAX_FAULTS 64

static const char usage[] =
    "usage: tickwire exchange --listen [HOST:]PORT --data SYM=FILE[,SYM=FILE...]\n"
    "                         [--lockstep | --rate TICKS_PER_S] [--sender COMPID]\n"
    "                         [--fills FILE] [--max-bars N] [--fault KIND:ARG]...\n"
    "                         [--port SPEC --ip A.B.C.D [--mac M] [--pcap FILE]] [--busy]\n"
    "                         [--store DIR] [--sessions N] [--column NAME]\n"
    "                         [--logon-timeout S] [--grace S] [--end-timeout S]\n"
    "                         [--max-orders N] [--entries-per-x N] [--quiet]\n"
    "\n"
    "A FIX 4.4 venue (live.md): streams one dataset per symbol as bars\n"
    "(MarketDataIncrementalRefresh, NaN closes are bars without a price), fills\n"
    "market orders at the close of the last priced bar sent, and injects faults.\n"
    "\n"
    "  --listen [HOST:]PORT  where to accept traders (HOST 127.0.0.1; PORT 0: any,\n"
    "                        printed); with --port only PORT counts\n"
    "  --data SYM=FILE,...   datasets (.npy, .csv with a close column, raw float64);\n"
    "                        repeatable; bars of all symbols advance together\n"
    "  --lockstep            TestRequest bar-<i> after each bar, the next bar after\n"
    "                        every subscribed session's Heartbeat (the default)\n"
    "  --rate N              paced: N market-data ticks per second across all\n"
    "                        symbols (a tick: one symbol's entry of a bar; bars every\n"
    "                        symbols/N s on the monotonic clock), no barrier (0:\n"
    "                        flat out)\n"
    "  --busy                never sleep between turns (a paced run keeps its clock\n"
    "                        to the bar; costs a CPU)\n"
    "  --sessions N          bar 0 waits for N subscribed sessions (1)\n"
    "  --sender COMPID       our SenderCompID (VENUE); traders may use any CompID\n"
    "  --store DIR           per-CompID crash-safe stores (a temporary directory);\n"
    "                        stores already there resume their run\n"
    "  --fills FILE          CSV, one line per execution as it happens\n"
    "  --max-bars N          stop after N bars\n"
    "  --fault KIND:ARG      disconnect:BAR, gap:BAR, reject:N, slow:BAR:MS, hasty:BAR\n"
    "  --port SPEC --ip IP   serve over the userspace stack on a port spec\n"
    "                        (af_packet:IF, af_xdp:IF[:Q], dpdk_af_packet:IF, ...)\n"
    "  --pcap FILE[,K=V...]  with --port: every frame of the port into a pcapng file\n"
    "                        (tickwire/capture.h: snap=, size=, files=, port=, ...)\n"
    "  --column NAME         CSV column to read (close)\n"
    "  --logon-timeout S     close connections without a Logon after S s (10)\n"
    "  --grace S             drop a subscribed session away for S s (30)\n"
    "  --end-timeout S       after Closed, wait S s for Logouts (10)\n"
    "  --max-orders N        per session; later orders are rejected (100000)\n"
    "  --entries-per-x N     instruments' entries per X message at most (32)\n"
    "  --quiet               no event lines on stderr\n";

volatile sig_atomic_t tw__xcli_signals;

static void on_signal(int sig)
{
    (void)sig;
    tw__xcli_signals++;
}

/* The fills log as it was at start, for a run that resumes from its
 * stores: each line's key ",SESSION,CLORDID," (what follows the time) in
 * an open-addressing table of line offsets, so that a fill the stores
 * give back is logged only when the process that made it had not. */
typedef struct fills_had {
    char *text;     /* the file's bytes */
    size_t len;
    size_t *slot;   /* line offset + 1; 0: free */
    size_t mask;
} fills_had;

/* What the venue's callbacks write to: the fills log and stderr. */
typedef struct log_ctx {
    int fd;     /* the fills log, -1 without --fills */
    int failed; /* a write failed (reported once; the exit status says so) */
    int quiet;
    fills_had had;
} log_ctx;

/* The key of the line at p (ending before e): ",SESSION,CLORDID," as
 * on_fill writes it; 0 when the line has no such fields. */
static size_t line_key(const char *p, const char *e, const char **key)
{
    const char *c = memchr(p, ',', (size_t)(e - p));
    const char *q = c ? memchr(c + 1, ',', (size_t)(e - c - 1)) : NULL;
    if (!q)
        return 0;
    q++;
    if (q < e && *q == '"') {
        /* A quoted ClOrdID: "" is a quote inside it. */
        for (q++; q < e; q++)
            if (*q == '"' && !(q + 1 < e && q[1] == '"'))
                break;
            else if (*q == '"')
                q++;
        q++;
    } else {
        while (q < e && *q != ',')
            q++;
    }
    if (q >= e || *q != ',')
        return 0;
    *key = c;
    return (size_t)(q + 1 - c);
}

/* The slot of key k (n bytes): the line holding it, or the free one it
 * would go in. */
static size_t *had_slot(const fills_had *h, const char *k, size_t n)
{
    for (size_t i = tw_fnv1a64(TW_FNV1A64_INIT, k, n) & h->mask;; i = (i + 1) & h->mask) {
        if (!h->slot[i])
            return &h->slot[i];
        const char *p = h->text + h->slot[i] - 1, *e = memchr(p, '\n', h->len - (h->slot[i] - 1));
        const char *lk;
        size_t ln = line_key(p, e, &lk);
        if (ln == n && !memcmp(lk, k, n))
            return &h->slot[i];
    }
}

/* Reads the fills log (fd, at its start) into h.  Returns 0 or -errno. */
static int had_read(fills_had *h, int fd)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return -errno;
    h->len = (size_t)sb.st_size;
    h->text = malloc(h->len + 1);
    if (!h->text)
        return -ENOMEM;
    size_t lines = 0;
    for (size_t got = 0; got < h->len;) {
        ssize_t r = pread(fd, h->text + got, h->len - got, (off_t)got);
        if (r <= 0)
            return r < 0 ? -errno : -EIO;
        got += (size_t)r;
    }
    for (size_t i = 0; i < h->len; i++)
        lines += h->text[i] == '\n';
    size_t cap = 16;
    while (cap < 2 * lines)
        cap <<= 1;
    h->slot = calloc(cap, sizeof(*h->slot));
    if (!h->slot)
        return -ENOMEM;
    h->mask = cap - 1;
    /* Whole lines only: a torn last one (the process died in its write)
     * is not a fill logged. */
    for (size_t off = 0; off < h->len;) {
        const char *p = h->text + off, *e = memchr(p, '\n', h->len - off), *k;
        if (!e)
            break;
        size_t n = line_key(p, e, &k);
        size_t *sl = n ? had_slot(h, k, n) : NULL;
        if (sl && !*sl)
            *sl = off + 1;
        off = (size_t)(e + 1 - h->text);
    }
    return 0;
}

static void had_free(fills_had *h)
{
    free(h->text);
    free(h->slot);
    memset(h, 0, sizeof(*h));
}

/* A CSV field: quoted when it holds a comma, a quote or a line break. */
static size_t csv_field(char *out, const char *v, size_t n)
{
    int quote = 0;
    for (size_t i = 0; i < n; i++)
        quote |= v[i] == ',' || v[i] == '"' || v[i] == '\n' || v[i] == '\r';
    size_t k = 0;
    if (quote)
        out[k++] = '"';
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '"')
            out[k++] = '"';
        out[k++] = v[i];
    }
    if (quote)
        out[k++] = '"';
    return k;
}

static void on_fill(void *ctx, const tw_xchg_fill *f)
{
    log_ctx *fl = ctx;
    if (fl->fd < 0 || fl->failed)
        return;
    char line[1024];
    size_t ts_len = tw_fix_fmt_ts(line, f->epoch_ns, 9), k = ts_len;
    line[k++] = ',';
    k += csv_field(line + k, f->session, strlen(f->session));
    line[k++] = ',';
    k += csv_field(line + k, f->cl_ord_id.p, f->cl_ord_id.len);
    line[k++] = ',';
    if (f->resumed && fl->had.slot && *had_slot(&fl->had, line + ts_len, k - ts_len))
        return; /* logged by the process that made it */
    k += csv_field(line + k, f->account.p, f->account.len);
    line[k++] = ',';
    k += csv_field(line + k, f->symbol, strlen(f->symbol));
    k += (size_t)snprintf(line + k, sizeof(line) - k, ",%s,%lld,%llu,", f->side == '1' ? "buy" : "sell",
                          (long long)f->qty, (unsigned long long)f->bar);
    size_t pl = strlen(f->price_text);
    if (k + pl + 2 > sizeof(line))
        pl = 0;
    memcpy(line + k, f->price_text, pl);
    k += pl;
    line[k++] = '\n';
    /* One write per line, straight to the file: a crash of anyone after
     * this call cannot lose the execution. */
    if (write(fl->fd, line, k) != (ssize_t)k) {
        fl->failed = 1;
        fprintf(stderr, "tickwire exchange: fills log write failed: %s\n", strerror(errno));
    }
}

static void on_log(void *ctx, const char *session, const char *text)
{
    const log_ctx *lc = ctx;
    if (!lc->quiet)
        fprintf(stderr, "tickwire exchange: [%s] %s\n", session, text);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

/* Seconds on the command line as ns (0 < S <= 1 day). */
static int secs(const char *opt, const char *val, uint64_t *ns)
{
    double s;
    if (tw__cli_double("exchange", opt, val, &s))
        return -1;
    if (s <= 0 || s > 86400) {
        fprintf(stderr, "tickwire exchange: %s: %s is outside (0, 86400] seconds\n", opt, val);
        return -1;
    }
    *ns = (uint64_t)(s * 1e9);
    return 0;
}

int tw__cli_exchange(int argc, char **argv)
{
    static tw_xchg_symbol syms[MAX_SYMBOLS];
    static char *sym_names[MAX_SYMBOLS];
    static double *closes[MAX_SYMBOLS];
    static tw_xchg_fault faults[MAX_FAULTS];
    const char *data[MAX_SYMBOLS];
    unsigned n_data = 0, n_faults = 0;
    const char *listen = NULL, *fills = NULL, *store = NULL, *column = NULL, *rate = NULL;
    int lockstep = 0;
    xcli_opts o = {.host = "127.0.0.1", .max_conns = 64};
    tw_xchg_cfg cfg;
    tw_xchg_cfg_init(&cfg);
    tw_error err = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *opt, *val;
        if (!strcmp(a, "--lockstep")) {
            lockstep = 1;
            continue;
        }
        if (!strcmp(a, "--busy")) {
            o.busy = 1;
            continue;
        }
        if (!strcmp(a, "--quiet")) {
            o.quiet = 1;
            continue;
        }
        int r = tw__cli_opt_value("exchange", usage, argc, argv, &i, &opt, &val);
        if (r)
            return r > 0 ? 0 : 2;
        uint64_t v;
        if (!strcmp(opt, "--listen")) {
            listen = val;
        } else if (!strcmp(opt, "--data")) {
            if (n_data == MAX_SYMBOLS) {
                fprintf(stderr, "tickwire exchange: --data: more than %d given\n", MAX_SYMBOLS);
                return 2;
            }
            data[n_data++] = val;
        } else if (!strcmp(opt, "--rate")) {
            rate = val;
        } else if (!strcmp(opt, "--sender")) {
            cfg.sender_comp_id = val;
        } else if (!strcmp(opt, "--fills")) {
            fills = val;
        } else if (!strcmp(opt, "--store")) {
            store = val;
        } else if (!strcmp(opt, "--column")) {
            column = val;
        } else if (!strcmp(opt, "--port")) {
            o.port_spec = val;
        } else if (!strcmp(opt, "--ip")) {
            o.ip = val;
        } else if (!strcmp(opt, "--mac")) {
            o.mac = val;
        } else if (!strcmp(opt, "--pcap")) {
            if (tw_capture_config_parse(&o.cc, val, &err) != 0) {
                fprintf(stderr, "tickwire exchange: --pcap: %s\n", err.msg);
                return 2;
            }
            o.pcap = val;
        } else if (!strcmp(opt, "--max-bars")) {
            if (tw__cli_u64_range("exchange", opt, val, 1, UINT64_MAX, &cfg.max_bars))
                return 2;
        } else if (!strcmp(opt, "--sessions")) {
            if (tw__cli_u64_range("exchange", opt, val, 1, 64, &v))
                return 2;
            cfg.min_sessions = (unsigned)v;
        } else if (!strcmp(opt, "--max-orders")) {
            if (tw__cli_u64_range("exchange", opt, val, 1, 100000000, &v))
                return 2;
            cfg.max_orders = (uint32_t)v;
        } else if (!strcmp(opt, "--entries-per-x")) {
            if (tw__cli_u64_range("exchange", opt, val, 1, 64, &v))
                return 2;
            cfg.max_entries = (unsigned)v;
        } else if (!strcmp(opt, "--logon-timeout")) {
            if (secs(opt, val, &cfg.logon_timeout_ns))
                return 2;
        } else if (!strcmp(opt, "--grace")) {
            if (secs(opt, val, &cfg.reconnect_grace_ns))
                return 2;
        } else if (!strcmp(opt, "--end-timeout")) {
            if (secs(opt, val, &cfg.end_timeout_ns))
                return 2;
        } else if (!strcmp(opt, "--fault")) {
            if (n_faults == MAX_FAULTS) {
                fprintf(stderr, "tickwire exchange: --fault: more than %d given\n", MAX_FAULTS);
                return 2;
            }
            if (tw_xchg_fault_parse(val, &faults[n_faults], &err) != 0) {
                fprintf(stderr, "tickwire exchange: --fault: %s\n", err.msg);
                return 2;
            }
            n_faults++;
        } else {
            fprintf(stderr, "tickwire exchange: unknown option %s (see --help)\n", opt);
            return 2;
        }
    }
    /* ---- what the options mean together */
    if (!listen) {
        fprintf(stderr, "tickwire exchange: --listen [HOST:]PORT is required (see --help)\n");
        return 2;
    }
    static char host[64];
    const char *colon = strrchr(listen, ':');
    const char *port_s = colon ? colon + 1 : listen;
    if (colon) {
        size_t hl = (size_t)(colon - listen);
        if (hl == 0 || hl >= sizeof(host)) {
            fprintf(stderr, "tickwire exchange: --listen: bad HOST in '%s'\n", listen);
            return 2;
        }
        memcpy(host, listen, hl);
        host[hl] = 0;
        o.host = host;
    }
    uint64_t pv;
    if (tw__cli_u64_range("exchange", "--listen", port_s, 0, 65535, &pv))
        return 2;
    o.port = (uint16_t)pv;
    if (o.port_spec) {
        if (!o.ip) {
            fprintf(stderr, "tickwire exchange: --port needs --ip A.B.C.D\n");
            return 2;
        }
        if (colon && strcmp(host, o.ip)) {
            fprintf(stderr, "tickwire exchange: --listen HOST %s is not --ip %s\n", host, o.ip);
            return 2;
        }
        if (o.port == 0) {
            fprintf(stderr, "tickwire exchange: --listen PORT 0 needs kernel TCP; give a port\n");
            return 2;
        }
    } else if (o.ip || o.mac || o.pcap) {
        fprintf(stderr, "tickwire exchange: --ip/--mac/--pcap go with --port SPEC "
                        "(over kernel TCP, tcpdump sees the traffic)\n");
        return 2;
    }
    if (lockstep && rate) {
        fprintf(stderr, "tickwire exchange: --lockstep and --rate exclude each other\n");
        return 2;
    }
    cfg.lockstep = !rate;
    if (rate) {
        double r;
        if (tw__cli_double("exchange", "--rate", rate, &r))
            return 2;
        if (r != 0 && !(r >= 1 && r <= 1e9)) {
            fprintf(stderr, "tickwire exchange: --rate: %s is outside [1, 1e9] ticks/s (0: flat "
                            "out)\n", rate);
            return 2;
        }
        cfg.ticks_per_s = (uint64_t)llround(r);
    }
    if (n_data == 0) {
        fprintf(stderr, "tickwire exchange: --data SYM=FILE is required (see --help)\n");
        return 2;
    }
    /* ---- datasets */
    unsigned ns = 0;
    int rc = 2;
    for (unsigned d = 0; d < n_data; d++) {
        const char *p = data[d];
        while (*p) {
            const char *end = strchr(p, ',');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            const char *eq = memchr(p, '=', len);
            if (!eq || eq == p || eq + 1 == p + len) {
                fprintf(stderr, "tickwire exchange: --data: '%.*s' is not SYM=FILE\n", (int)len,
                        p);
                goto out;
            }
            if (ns == MAX_SYMBOLS) {
                fprintf(stderr, "tickwire exchange: --data: more than %d symbols\n", MAX_SYMBOLS);
                goto out;
            }
            sym_names[ns] = strndup(p, (size_t)(eq - p));
            char *path = strndup(eq + 1, (size_t)(p + len - eq - 1));
            size_t n = 0;
            int r = tw_read_closes(path, column, &closes[ns], &n, &err);
            if (r != 0) {
                fprintf(stderr, "tickwire exchange: --data %s: %s\n", sym_names[ns], err.msg);
                free(path);
                free(sym_names[ns]);
                goto out;
            }
            for (size_t b = 0; b < n; b++)
                if (isinf(closes[ns][b])) {
                    fprintf(stderr, "tickwire exchange: --data %s: %s: bar %zu is infinite\n",
                            sym_names[ns], path, b);
                    free(path);
                    ns++;
                    goto out;
                }
            free(path);
            syms[ns] = (tw_xchg_symbol){sym_names[ns], closes[ns], n};
            ns++;
            p += len;
            if (*p == ',')
                p++;
        }
    }
    cfg.symbols = syms;
    cfg.n_symbols = ns;
    cfg.faults = faults;
    cfg.n_faults = n_faults;
    cfg.epoch_offset_ns = tw_clock_epoch_offset_ns();
    cfg.run_id = (uint64_t)tw_clock_epoch_ns() / 1000000u;
    cfg.max_conns = o.max_conns;
    /* ---- the store directory and the fills log */
    static char tmp_store[] = "/tmp/tickwire-exchange-XXXXXX";
    int own_store = 0;
    if (!store) {
        if (!mkdtemp(tmp_store)) {
            fprintf(stderr, "tickwire exchange: cannot make a store directory: %s\n",
                    strerror(errno));
            goto out;
        }
        store = tmp_store;
        own_store = 1;
    } else {
        struct stat sb;
        if (stat(store, &sb) != 0 && mkdir(store, 0755) != 0) {
            fprintf(stderr, "tickwire exchange: --store %s: %s\n", store, strerror(errno));
            goto out;
        }
    }
    cfg.store_dir = store;
    static log_ctx lc;
    lc.fd = -1;
    lc.quiet = o.quiet;
    cfg.on_fill = on_fill;
    cfg.on_log = on_log;
    cfg.ctx = &lc;
    static const char head[] = "time,session,clordid,account,symbol,side,qty,bar,price\n";
    if (fills) {
        /* Kept until the stores are read: a resumed run goes on with the
         * fills its first process wrote, the stores' fills it had not. */
        lc.fd = open(fills, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        int e = lc.fd < 0 ? -errno : had_read(&lc.had, lc.fd);
        if (e == 0 && lc.had.len == 0 && write(lc.fd, head, sizeof(head) - 1) != sizeof(head) - 1)
            e = -errno;
        if (e != 0) {
            fprintf(stderr, "tickwire exchange: --fills %s: %s\n", fills, strerror(-e));
            goto out_fills;
        }
    }
    tw_xchg *x;
    if (tw_xchg_create(&x, &cfg, &err) != 0) {
        fprintf(stderr, "tickwire exchange: %s\n", err.msg);
        goto out_fills;
    }
    had_free(&lc.had);
    if (lc.fd >= 0 && tw_xchg_get_stats(x)->sessions_resumed == 0 &&
        (ftruncate(lc.fd, 0) != 0 || write(lc.fd, head, sizeof(head) - 1) != sizeof(head) - 1)) {
        fprintf(stderr, "tickwire exchange: --fills %s: %s\n", fills, strerror(errno));
        tw_xchg_destroy(x);
        goto out_fills;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (!o.quiet) {
        uint64_t bars = tw_xchg_get_stats(x)->bars_total;
        fprintf(stderr, "tickwire exchange: %u symbol(s), %llu bars, %s, sender %s, store %s\n",
                ns, (unsigned long long)bars,
                cfg.lockstep ? "lockstep" : cfg.ticks_per_s ? "paced" : "flat out",
                cfg.sender_comp_id ? cfg.sender_comp_id : "VENUE", store);
    }
    rc = o.port_spec ? tw__xcli_run_stack(x, &o) : run_tcp(x, &o);
    char sum[1024];
    tw_xchg_summary(x, sum, sizeof(sum));
    printf("tickwire exchange: %s%s\n", tw__xcli_signals ? "stopped by signal: " : "", sum);
    fflush(stdout);
    if (rc == 0 && !tw_xchg_done(x) && tw__xcli_signals < 2)
        rc = 1;
    tw_xchg_destroy(x);
out_fills:
    had_free(&lc.had);
    if (lc.fd >= 0)
        close(lc.fd);
    if (lc.failed && rc == 0)
        rc = 1;
    if (own_store)
        nftw(tmp_store, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
out:
    for (unsigned i = 0; i < ns; i++) {
        free(closes[i]);
        free(sym_names[i]);
    }
    return rc;
}
