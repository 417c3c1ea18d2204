"""The live replay and its parity with the sweep (live.md, "Parity").

`tickwire exchange --lockstep` streams datasets as FIX bars, `tickwire
trade` trades them through the whole live path (venue -> TCP -> FIX ->
ring -> strategy -> ring -> FIX -> TCP -> venue fills), and per instance
the trade list, the trade count, the execution PnL and the signal PnL must
equal `tickwire sweep --trades` on the same data, bit for bit.

    python3 -m tickwire.live [--bars N] [--combos K] [--dir DIR]

runs a short replay of the study dataset on loopback and prints, per
instance, the live trades and PnL next to the sweep's and
"parity: bit-identical" (or what differs); exit status 1 when anything
differs.  The functions below are what the tests build their runs from.
"""

import argparse
import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

__all__ = ["Instance", "write_config", "read_config", "check", "sweep_reference", "compare", "free_port", "Venue",
           "run_trader", "replay", "format_table", "main"]

COLUMNS = ["h_half", "h_full", "h_sqrt", "t_third", "t_half", "t_full"]


class Instance:
    """One (instrument, combo) of a strategy section: its report name is
    `<strategy>.<k>`."""

    def __init__(self, strategy, k, symbol, combo):
        self.strategy, self.k, self.symbol, self.combo = strategy, k, symbol, tuple(combo)

    @property
    def name(self):
        return f"{self.strategy}.{self.k}"


def free_port():
    """A TCP port nobody listens on now (loopback)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write_config(path, *, report, sessions, instruments, strategies, trades=None, fee=0.09,
                 risk=None, engine=None):
    """Writes a `tickwire trade` INI file.

    sessions: {name: {key: value}} (host, port, sender, target, store, ...);
    instruments: {symbol: session}; strategies: {name: (symbol, [combo, ...])}
    for the built-in HMA/HMA3 kernel, or {name: (symbol, [params, ...],
    kernel, [param name, ...])} for a kernel by name or plug-in path;
    risk: [risk] keys (defaults never bind); engine: more [engine] keys.
    Returns the list of Instance in report order."""
    lines = ["[engine]", f"report = {report}", f"fee = {fee!r}"]
    if trades:
        lines.append(f"trades = {trades}")
    # Tests poll yielding (2-CPU hosts run several at once); strategy is
    # left to the engine (auto) unless given.
    for k, v in {"busy_poll": "no", **(engine or {})}.items():
        lines.append(f"{k} = {v}")
    for name, keys in sessions.items():
        lines.append(f"[session {name}]")
        lines += [f"{k} = {v}" for k, v in keys.items()]
    for sym, sess in instruments.items():
        lines += [f"[instrument {sym}]", f"session = {sess}"]
    out = []
    for name, (sym, combos, *kern) in strategies.items():
        lines += [f"[strategy {name}]", f"instrument = {sym}"]
        if kern:
            lines.append(f"kernel = {kern[0]}")
        for k, c in enumerate(combos):
            if kern:
                lines.append("params = " + ",".join(f"{n}={num_text(v)}" for n, v in zip(kern[1], c)))
            else:
                lines.append("combo = " + ",".join(str(int(w)) for w in c))
            out.append(Instance(name, k, sym, c))
    r = {"max_position": 1000000, "max_total_position": 100000000,
         "max_orders_per_s": 1000000000, "max_loss": 1e300}
    r.update(risk or {})
    lines.append("[risk]")
    lines += [f"{k} = {v}" for k, v in r.items()]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return out


def sweep_reference(tickwire, data, combos, workdir, tag, fee=0.09, kernel=None, names=None):
    """`tickwire sweep --trades` over data for combos: per combo index a
    dict with the closed trades (tuples of text, as written), pnl, trades
    and the open position (side, entry_bar) or None.  kernel: a kernel by
    name or plug-in path (`--kernel`), with names its parameters in order
    (the grid's header); by default the built-in HMA/HMA3 windows."""
    grid = os.path.join(workdir, f"grid_{tag}.csv")
    with open(grid, "w") as f:
        f.write(",".join(names or COLUMNS) + "\n")
        for c in combos:
            f.write(",".join(num_text(v) for v in c) + "\n")
    out = os.path.join(workdir, f"sweep_{tag}.csv")
    tr = os.path.join(workdir, f"sweep_trades_{tag}.csv")
    cmd = [tickwire, "sweep"] + (["--kernel", kernel] if kernel else [])
    subprocess.run(cmd + ["--data", data, "--grid", grid, "--fee", repr(fee),
                          "--output", out, "--trades", tr], check=True, stdout=subprocess.DEVNULL)
    ref = {}
    with open(out, newline="") as f:
        for row in csv.DictReader(f):
            ref[int(row["combo"])] = {"pnl": float(row["pnl"]), "trades": int(row["trades"]),
                                      "list": [], "open": None}
    with open(tr, newline="") as f:
        for row in csv.DictReader(f):
            r = ref[int(row["combo"])]
            if row["exit_bar"] == "":
                r["open"] = (int(row["side"]), int(row["entry_bar"]))
            else:
                r["list"].append((row["side"], row["entry_bar"], row["entry_price"],
                                  row["exit_bar"], row["exit_price"], row["r"]))
    return ref


def num_text(x):
    """A parameter as the grid CSV writes it: integers without a point."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _bits(x):
    return np.float64(x).view(np.uint64).item()


def compare(report_path, trades_path, instances, refs, signal=True):
    """Per instance: (Instance, report entry, live trade list, reference,
    [differences]).  refs: {symbol: sweep_reference(...)} with the
    instances of a symbol in combo order."""
    with open(report_path) as f:
        rep = json.load(f)
    by_name = {i["name"]: i for i in rep["instances"]}
    live = {}
    if trades_path:
        with open(trades_path, newline="") as f:
            for row in csv.DictReader(f):
                live.setdefault(row["instance"], []).append(
                    (row["side"], row["entry_bar"], row["entry_price"], row["exit_bar"],
                     row["exit_price"], row["r"]))
    index = {}
    rows = []
    for inst in instances:
        k = index.get(inst.symbol, 0)
        index[inst.symbol] = k + 1
        ref = refs[inst.symbol][k]
        got = by_name.get(inst.name)
        diffs = []
        if got is None:
            diffs.append("not in the report")
            rows.append((inst, None, [], ref, diffs))
            continue
        if got["trades"] != ref["trades"]:
            diffs.append(f"trades {got['trades']} != sweep {ref['trades']}")
        if got["pnl"] is None or _bits(got["pnl"]) != _bits(ref["pnl"]):
            diffs.append(f"pnl {got['pnl']!r} != sweep {ref['pnl']!r}")
        if signal and (got["signal_pnl"] is None or _bits(got["signal_pnl"]) != _bits(ref["pnl"])):
            diffs.append(f"signal_pnl {got['signal_pnl']!r} != sweep {ref['pnl']!r}")
        pos = ref["open"][0] if ref["open"] else 0
        if got["position"] != pos:
            diffs.append(f"position {got['position']} != sweep {pos}")
        lt = live.get(inst.name, [])
        if trades_path and lt != ref["list"]:
            n = next((j for j, (a, b) in enumerate(zip(lt, ref["list"])) if a != b),
                     min(len(lt), len(ref["list"])))
            diffs.append(f"trade lists differ from trade {n} "
                         f"(live {lt[n] if n < len(lt) else None}, "
                         f"sweep {ref['list'][n] if n < len(ref['list']) else None})")
        rows.append((inst, got, lt, ref, diffs))
    return rows


class Venue:
    """`tickwire exchange` as a child process; `port` once listening."""

    def __init__(self, tickwire, data, workdir, args=(), port=None, name="venue"):
        self.out = os.path.join(workdir, f"{name}.out")
        self.err = os.path.join(workdir, f"{name}.err")
        self.fills = os.path.join(workdir, f"{name}_fills.csv")
        spec = ",".join(f"{k}={v}" for k, v in data.items())
        listen = f"127.0.0.1:{port or 0}"
        cmd = [tickwire, "exchange", "--listen", listen, "--data", spec, "--fills", self.fills,
               "--max-orders", "10000000", "--store", os.path.join(workdir, f"{name}_store")]
        cmd += list(args)
        self.p = subprocess.Popen(cmd, stdout=open(self.out, "w"), stderr=open(self.err, "w"))
        self.port = None
        for _ in range(400):
            with open(self.out) as f:
                for line in f:
                    if "listening on" in line:
                        self.port = int(line.split(":")[-1].split()[0])
            if self.port or self.p.poll() is not None:
                break
            time.sleep(0.025)
        if not self.port:
            self.p.kill()
            raise RuntimeError("tickwire exchange did not start: " + open(self.err).read())

    def wait(self, timeout=600):
        return self.p.wait(timeout=timeout)

    def summary(self):
        with open(self.out) as f:
            return f.read()

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.p.kill()


def run_trader(tickwire, config, workdir, args=(), timeout=900, name="trader"):
    """Runs `tickwire trade --config` to its end; returns (exit status,
    stdout, stderr)."""
    out = os.path.join(workdir, f"{name}.out")
    err = os.path.join(workdir, f"{name}.err")
    with open(out, "w") as fo, open(err, "w") as fe:
        rc = subprocess.run([tickwire, "trade", "--config", config] + list(args), stdout=fo,
                            stderr=fe, timeout=timeout).returncode
    return rc, open(out).read(), open(err).read()


def replay(tickwire, workdir, data, combos, *, venue_args=(), trader_args=(), sessions=1,
           fee=0.09, session_keys=None, risk=None, engine=None):
    """One lockstep replay over kernel TCP on loopback.

    data: {symbol: dataset path}; combos: {symbol: [combo, ...]}; sessions:
    1 (every instrument on one session) or "per-instrument" (one session,
    and CompID, per instrument).  Returns a dict with the instances, the
    report and trades paths, the venue and the trader's exit, output."""
    venue = Venue(tickwire, data, workdir, args=list(venue_args) +
                  (["--sessions", str(len(data))] if sessions != 1 else []))
    sess, instr, strat = {}, {}, {}
    for j, sym in enumerate(data):
        sname = "venue" if sessions == 1 else f"s{j}"
        if sname not in sess:
            keys = {"host": "127.0.0.1", "port": venue.port, "sender": f"TRADER{j if sessions != 1 else ''}",
                    "target": "VENUE", "store": os.path.join(workdir, "store", sname),
                    "reconnect_min_ms": 20, "reconnect_max_ms": 200}
            keys.update(session_keys or {})
            sess[sname] = keys
        instr[sym] = sname
        strat[f"st_{sym}"] = (sym, combos[sym])
    config = os.path.join(workdir, "trade.ini")
    report = os.path.join(workdir, "report.json")
    trades = os.path.join(workdir, "trades.csv")
    instances = write_config(config, report=report, trades=trades, sessions=sess,
                             instruments=instr, strategies=strat, fee=fee, risk=risk,
                             engine=engine)
    try:
        rc, out, err = run_trader(tickwire, config, workdir, args=trader_args)
        vrc = venue.wait(timeout=120)
    finally:
        venue.stop()
    return {"instances": instances, "report": report, "trades": trades, "rc": rc, "out": out,
            "err": err, "venue_rc": vrc, "venue_out": venue.summary(), "fills": venue.fills,
            "config": config}


def read_config(path):
    """The instances of a `tickwire trade` INI file (strategy sections in
    file order, their combos in order), as write_config returns them.
    Only what parity needs: `combo =` lines (not `length =` or `grid =`)."""
    out, strat, sym, k = [], None, None, 0
    with open(path) as f:
        for line in f:
            line = line.split(";")[0].strip()
            if line.startswith("["):
                strat = line[1:-1].split()[1] if line.startswith("[strategy ") else None
                sym, k = None, 0
            elif strat and "=" in line:
                key, val = (x.strip() for x in line.split("=", 1))
                if key == "instrument":
                    sym = val
                elif key == "combo":
                    out.append(Instance(strat, k, sym, [int(w) for w in val.split(",")]))
                    k += 1
    return out


def check(tickwire, config, report, trades, data, workdir, fee=0.09):
    """Compares a finished run's report and trades CSV with `tickwire sweep
    --trades` on data ({symbol: path}); returns (rows, differences)."""
    insts = read_config(config)
    refs = {}
    for sym, path in data.items():
        cs = [i.combo for i in insts if i.symbol == sym]
        refs[sym] = sweep_reference(tickwire, path, cs, workdir, sym, fee=fee)
    rows = compare(report, trades, insts, refs)
    return rows, [(i.name, x) for i, _, _, _, ds in rows for x in ds]


def format_table(rows):
    """Per instance: live trades and PnL next to the sweep's."""
    lines = [f"{'instance':<12} {'combo':<24} {'trades':>7} {'sweep':>7} "
             f"{'PnL (live)':>22} {'PnL (sweep)':>22}  same"]
    for inst, got, _, ref, diffs in rows:
        c = ",".join(str(int(w)) for w in inst.combo)
        lines.append(f"{inst.name:<12} {c:<24} {got['trades'] if got else '-':>7} "
                     f"{ref['trades']:>7} {got['pnl'] if got else float('nan'):>22.15g} "
                     f"{ref['pnl']:>22.15g}  {'yes' if not diffs else 'NO'}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m tickwire.live", description=__doc__.split("\n\n")[0])
    ap.add_argument("--tickwire", default=os.environ.get("TICKWIRE_BIN", "tickwire"))
    ap.add_argument("--bars", type=int, default=20000, help="bars of the study dataset (20000)")
    ap.add_argument("--combos", type=int, default=4, help="default-grid combos (4)")
    ap.add_argument("--dir", help="keep the run's files here (default: a temporary directory)")
    ap.add_argument("--check", nargs=3, metavar=("CONFIG", "REPORT", "TRADES"),
                    help="no replay: compare a finished run with the sweep (needs --data)")
    ap.add_argument("--data", action="append", default=[], metavar="SYM=PATH")
    a = ap.parse_args(argv)
    if a.check:
        work = a.dir or tempfile.mkdtemp(prefix="tw_live_")
        data = dict(x.split("=", 1) for x in a.data)
        rows, bad = check(a.tickwire, *a.check, data, work)
        print(format_table(rows))
        for n, d_ in bad:
            print(f"  {n}: {d_}")
        print("parity: bit-identical" if not bad else "parity: DIFFERS")
        if not a.dir:
            shutil.rmtree(work, ignore_errors=True)
        return 1 if bad else 0
    from tickwire import data as d
    work = a.dir or tempfile.mkdtemp(prefix="tw_live_")
    os.makedirs(work, exist_ok=True)
    try:
        path = os.path.join(work, "study.npy")
        np.save(path, d.study()[:a.bars])
        grid = d.default_grid_np()
        pick = np.linspace(0, grid.shape[0] - 1, a.combos).round().astype(int)
        combos = [tuple(int(w) for w in grid[k]) for k in pick]
        t0 = time.monotonic()
        r = replay(a.tickwire, work, {"STUDY": path}, {"STUDY": combos})
        t1 = time.monotonic()
        if r["rc"] != 0 or r["venue_rc"] != 0:
            print(f"live: the replay failed (trade exit {r['rc']}, exchange exit {r['venue_rc']})")
            print(r["err"][-2000:])
            return 1
        refs = {"STUDY": sweep_reference(a.tickwire, path, combos, work, "STUDY")}
        rows = compare(r["report"], r["trades"], r["instances"], refs)
        print(f"live: {a.bars} bars of the study dataset through `tickwire exchange --lockstep` "
              f"and `tickwire trade` on loopback in {t1 - t0:.1f} s "
              f"({a.bars / (t1 - t0):.0f} bars/s through the barrier)")
        print(format_table(rows))
        bad = [(i.name, d_) for i, _, _, _, ds in rows for d_ in ds]
        if bad:
            print("parity: DIFFERS")
            for n, d_ in bad:
                print(f"  {n}: {d_}")
            return 1
        print("parity: bit-identical (trade lists, trade counts, execution and signal PnL)")
        return 0
    finally:
        if not a.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
