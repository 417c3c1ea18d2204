/* The report of `tickwire trade` (JSON) and its trades CSV.  Every double
 * is written as its shortest round-trip decimal (decimal.h), so whoever
 * reads the report gets the very bits the strategy booked. */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tickwire/decimal.h"
#include "tickwire/trade.h"
#include "trade/engine_internal.h"

/* A float that JSON readers see as a float: the shortest round-trip text,
 * with ".0" when it has no point ("100" -> "100.0"); null if not finite. */
static void put_f64(FILE *f, double x)
{
    if (!isfinite(x)) {
        fputs("null", f);
        return;
    }
    char buf[TW_DECIMAL_MAX + 2];
    size_t n = tw_double_to_decimal(x, buf);
    if (!memchr(buf, '.', n))
        memcpy(buf + n, ".0", 3);
    fputs(buf, f);
}

static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void put_key(FILE *f, const char *k)
{
    put_str(f, k);
    fputs(": ", f);
}

static void put_u64(FILE *f, const char *k, uint64_t v, int comma)
{
    put_key(f, k);
    fprintf(f, "%llu%s", (unsigned long long)v, comma ? ", " : "");
}

static void put_i64(FILE *f, const char *k, int64_t v, int comma)
{
    put_key(f, k);
    fprintf(f, "%lld%s", (long long)v, comma ? ", " : "");
}

static void put_fk(FILE *f, const char *k, double v, int comma)
{
    put_key(f, k);
    put_f64(f, v);
    if (comma)
        fputs(", ", f);
}

int tw_trade_report_fprint(FILE *f, const tw_strategy *s, const tw_trade_session_stats *sessions,
                           size_t n_sessions)
{
    return tw_trade_report_fprint_run(f, s, sessions, n_sessions, NULL);
}

int tw_trade_report_fprint_run(FILE *f, const tw_strategy *s,
                               const tw_trade_session_stats *sessions, size_t n_sessions,
                               const tw_trade_run_stats *run)
{
    const uint32_t n = tw_strategy_n_instances(s);
    uint64_t orders = 0, fills = 0, rejects = 0;
    int64_t trades = 0;
    double pnl = 0.0, signal_pnl = 0.0;
    fputs("{\n\"instances\": [\n", f);
    for (uint32_t i = 0; i < n; i++) {
        tw_instance_stats st;
        tw_strategy_instance(s, i, &st);
        fputs("  {", f);
        put_key(f, "name");
        put_str(f, st.name);
        fputs(", ", f);
        put_key(f, "instrument");
        put_str(f, tw_strategy_symbol(s, st.instrument));
        fputs(", ", f);
        put_key(f, "combo");
        fputc('[', f);
        for (int j = 0; j < TW_COMBO_WINDOWS; j++)
            fprintf(f, "%s%lld", j ? ", " : "", (long long)st.combo[j]);
        fputs("], ", f);
        if (st.kernel) {
            /* kernel = given: which kernel, its ABI, its params by name. */
            put_key(f, "kernel");
            put_str(f, st.kernel->name);
            fputs(", ", f);
            put_u64(f, "abi", st.kernel->abi, 1);
            put_key(f, "params");
            fputc('{', f);
            for (uint32_t j = 0; j < st.kernel->n_params; j++) {
                double v = st.params ? st.params[j] : (double)st.combo[j];
                put_fk(f, st.kernel->params[j].name, v, j + 1 < st.kernel->n_params);
            }
            fputs("}, ", f);
            put_i64(f, "kernel_stopped", st.stopped, 1);
        }
        put_i64(f, "trades", st.trades, 1);
        put_fk(f, "pnl", st.pnl, 1);
        put_fk(f, "signal_pnl", st.signal_pnl, 1);
        put_i64(f, "signal_trades", st.signal_trades, 1);
        put_u64(f, "orders", st.orders, 1);
        put_u64(f, "fills", st.fills, 1);
        put_u64(f, "rejects", st.rejects, 1);
        put_u64(f, "risk_rejects", st.risk_rejects, 1);
        put_i64(f, "position", st.position, 1);
        put_i64(f, "signal", st.signal, 1);
        put_key(f, "state");
        put_str(f, tw_trading_state_name(st.state));
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
        /* Totals in instance order: a fixed order, so the same run gives
         * the same bits. */
        trades += st.trades;
        pnl = pnl + st.pnl;
        signal_pnl = signal_pnl + st.signal_pnl;
        orders += st.orders;
        fills += st.fills;
        rejects += st.rejects;
    }
    fputs("],\n\"sessions\": [\n", f);
    for (size_t j = 0; j < n_sessions; j++) {
        const tw_trade_session_stats *ss = &sessions[j];
        fputs("  {", f);
        put_key(f, "name");
        put_str(f, ss->name);
        fputs(", ", f);
        put_u64(f, "sent", ss->sent, 1);
        put_u64(f, "received", ss->received, 1);
        put_u64(f, "resends", ss->resends, 1);
        put_u64(f, "reconnects", ss->reconnects, 1);
        put_u64(f, "rejects", ss->rejects, 0);
        fprintf(f, "}%s\n", j + 1 < n_sessions ? "," : "");
    }
    tw_strategy_counters c;
    tw_strategy_counters_get(s, &c);
    fputs("],\n\"risk\": {", f);
    put_key(f, "state");
    put_str(f, tw_trading_state_name(c.state));
    fputs(", ", f);
    put_key(f, "rejected_by_rule");
    fputc('{', f);
    for (int r = 0; r < TW_RULE_COUNT; r++)
        put_u64(f, tw_risk_rule_name((tw_risk_rule)r), c.rejected_by_rule[r],
                r + 1 < TW_RULE_COUNT);
    fputs("}, ", f);
    put_key(f, "breaches");
    fputc('{', f);
    put_u64(f, "max_instance_loss", c.breaches_instance, 1);
    put_u64(f, "max_total_loss", c.breaches_total, 0);
    fputs("}, ", f);
    put_u64(f, "kills", c.kills, 1);
    put_u64(f, "flatten_orders", c.flatten_orders, 1);
    put_u64(f, "cancels", c.cancels, 0);
    fputs("},\n\"totals\": {", f);
    put_i64(f, "trades", trades, 1);
    put_fk(f, "pnl", pnl, 1);
    put_fk(f, "signal_pnl", signal_pnl, 1);
    put_u64(f, "orders", orders, 1);
    put_u64(f, "fills", fills, 1);
    put_u64(f, "rejects", rejects, 0);
    fputs("},\n\"events\": {", f);
    put_u64(f, "events", c.events, 1);
    put_u64(f, "bars", c.bars, 1);
    put_u64(f, "gap_bars", c.gap_bars, 1);
    put_u64(f, "dup_bars", c.dup_bars, 1);
    put_u64(f, "skipped_bars", c.skipped_bars, 1);
    put_u64(f, "bad_prices", c.bad_prices, 1);
    put_u64(f, "bad_events", c.bad_events, 1);
    put_u64(f, "fills", c.fills, 1);
    put_u64(f, "rejects", c.rejects, 1);
    put_u64(f, "canceled", c.canceled, 1);
    put_u64(f, "cancel_rejects", c.cancel_rejects, 1);
    put_u64(f, "overfills", c.overfills, 1);
    put_u64(f, "barriers", c.barriers, 0);
    fputs("}", f);
    if (run && run->engine) {
        /* What the engine ran as, and what auto chose and why. */
        const tw_trade_engine_cfg *ec = run->engine;
        fputs(",\n\"engine\": {", f);
        put_key(f, "mode");
        put_str(f, ec->mode == TW_TRADE_PROCESSES ? "processes" : "threads");
        fputs(", ", f);
        put_key(f, "strategy");
        put_str(f, ec->strategy == TW_TRADE_STRATEGY_INLINE ? "inline" : "thread");
        fputs(", ", f);
        put_key(f, "busy_poll");
        fputs(ec->busy_poll ? "true, " : "false, ", f);
        put_key(f, "strategy_auto");
        fputs(ec->strategy_auto ? "true, " : "false, ", f);
        put_key(f, "busy_auto");
        fputs(ec->busy_auto ? "true, " : "false, ", f);
        put_key(f, "auto_why");
        put_str(f, ec->auto_why);
        fputs("}", f);
    }
    if (run && run->crash_loop_crashes) {
        fputs(",\n\"crash_loop\": {", f);
        put_u64(f, "record", run->crash_loop_record, 1);
        put_u64(f, "crashes", run->crash_loop_crashes, 0);
        fputs("}", f);
    }
    fputs("\n}\n", f);
    return ferror(f) ? -EIO : 0;
}

int tw_trade_report_write(const char *path, const tw_strategy *s,
                          const tw_trade_session_stats *sessions, size_t n_sessions,
                          tw_error *err)
{
    return tw_trade_report_write_run(path, s, sessions, n_sessions, NULL, err);
}

int tw_trade_report_write_run(const char *path, const tw_strategy *s,
                              const tw_trade_session_stats *sessions, size_t n_sessions,
                              const tw_trade_run_stats *run, tw_error *err)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return tw__err(err, -ENAMETOOLONG, "%s: path too long", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        int e = errno;
        return tw__err(err, -e, "%s: %s", tmp, strerror(e));
    }
    int rc = tw_trade_report_fprint_run(f, s, sessions, n_sessions, run);
    if (rc == 0 && (fflush(f) != 0 || fsync(fileno(f)) != 0))
        rc = -errno;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc != 0) {
        unlink(tmp);
        return tw__err(err, rc, "%s: %s", path, strerror(-rc));
    }
    return 0;
}

int tw__trades_reset(FILE *f, int64_t keep)
{
    if (fflush(f) != 0)
        return -EIO;
    if (keep >= 0) {
        /* A recovery from a snapshot: its rows stay, the replay writes on. */
        struct stat st;
        if (fstat(fileno(f), &st) != 0 || st.st_size < keep)
            return -ENODATA;
        return ftruncate(fileno(f), (off_t)keep) == 0 && fseeko(f, (off_t)keep, SEEK_SET) == 0
                   ? 0 : -EIO;
    }
    if (ftruncate(fileno(f), 0) != 0 || fseeko(f, 0, SEEK_SET) != 0)
        return -EIO;
    return tw_trade_csv_header(f);
}

int tw_trade_csv_header(FILE *f)
{
    fputs("instance,instrument,side,entry_bar,entry_price,exit_bar,exit_price,r\n", f);
    return ferror(f) ? -EIO : 0;
}

int tw_trade_csv_row(FILE *f, const tw_strategy *s, const tw_strategy_trade *t)
{
    tw_instance_stats st;
    tw_strategy_instance(s, t->instance, &st);
    char a[TW_DECIMAL_MAX], b[TW_DECIMAL_MAX], r[TW_DECIMAL_MAX];
    tw_double_to_decimal(t->entry_px, a);
    tw_double_to_decimal(t->exit_px, b);
    tw_double_to_decimal(t->r, r);
    fprintf(f, "%s,%s,%d,%llu,%s,%llu,%s,%s\n", st.name, tw_strategy_symbol(s, st.instrument),
            t->side, (unsigned long long)t->entry_bar, a, (unsigned long long)t->exit_bar, b, r);
    return ferror(f) ? -EIO : 0;
}
