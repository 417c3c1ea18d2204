"""From rows to results: the fits, the derived tables (chatty vs chunky,
spawn, break-even, goals), report.md, measurements.csv and the plots."""

import csv
import math
import os

import numpy as np

from .measure import ARCHITECTURES, CSV_COLUMNS, PNL_TOL, SPAWN_PY

__all__ = ["analyse", "write_csv", "write_report", "write_plots", "fit_curve"]


def _med(v):
    return float(np.median(v)) if len(v) else float("nan")


def _us(s):
    return s * 1e6


def _fmt_t(s):
    """Seconds in the unit that reads best."""
    if s != s:
        return "n/a"
    if s < 0:
        return "−" + _fmt_t(-s)
    if s >= 1.0:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.1f} µs"
    return f"{s * 1e9:.0f} ns"


def _fmt_bytes(b):
    if b >= 1e6:
        return f"{b / 1e6:.1f} MB"
    if b >= 1e3:
        return f"{b / 1e3:.0f} KB"
    return f"{b} B"


def _fmt_x(r, digits=2):
    return "n/a" if r != r else f"{r:.{digits}f}x"


# ---- analysis -------------------------------------------------------------------

def fit_curve(points):
    """points: [(bytes one way, seconds)].  T = floor + 2b / bandwidth:
    floor = the smallest payload's time; bandwidth from a least-squares
    slope through the origin of (T - floor) against 2b over the payloads of
    8 KB and more (below that the curve is flat: the call, not the bytes).
    Returns (floor_s, bandwidth_bytes_per_s or nan)."""
    pts = sorted(points)
    if not pts:
        return float("nan"), float("nan")
    floor = pts[0][1]
    big = [(2.0 * b, t - floor) for b, t in pts if b >= 8000]
    if not big:
        big = [(2.0 * b, t - floor) for b, t in pts[1:]]
    sxx = sum(x * x for x, _ in big)
    sxy = sum(x * y for x, y in big)
    if sxx <= 0 or sxy <= 0:
        return floor, float("nan")
    return floor, sxx / sxy


class Results:
    pass


def analyse(cfg, rows, meta):
    R = Results()
    R.cfg, R.meta, R.rows = cfg, meta, rows
    arch = [r for r in rows if r.section == "architecture"]
    R.arch = []
    by_name = {}
    for name, transport, what in ARCHITECTURES:
        rs = [r for r in arch if r.item == name]
        if not rs:
            continue
        t = [r.seconds for r in rs]
        ok = all(r.gate == "ok" for r in rs)
        d = dict(name=name, transport=transport, what=what, median=_med(t), min=min(t),
                 max=max(t), runs=len(t), gate_ok=ok,
                 max_dpnl=max(r.max_dpnl for r in rs),
                 mism=max(r.trade_mismatches for r in rs))
        R.arch.append(d)
        by_name[name] = d
    R.by_name = by_name
    # Ratios to the in-process baselines: the median of the per-run ratios
    # (each run measures every architecture back to back), not the ratio of
    # medians taken in different minutes.
    per_run = {(r.item, r.run): r.seconds for r in arch}
    for d in R.arch:
        d["ratio"] = _paired(per_run, d["name"], "in-process numba")
        d["ratio_c"] = _paired(per_run, d["name"], "in-process C")
        d["spread"] = (d["max"] - d["min"]) / d["median"] if d["median"] > 0 else float("nan")
    R.gate_ok = bool(R.arch) and all(d["gate_ok"] for d in R.arch)
    if meta.get("fingerprint") is not None:
        R.gate_ok = R.gate_ok and meta["fingerprint"][0]

    parts = [r for r in rows if r.section == "architecture_part"]
    R.pre_load = _med([r.seconds for r in parts if r.item.startswith("preloaded: LOAD")])
    R.pre_calls = _med([r.seconds for r in parts if "SWEEP_LOADED" in r.item])
    calls = {("calls", r.run): r.seconds for r in parts if "SWEEP_LOADED" in r.item}
    calls.update({("batched", r.run): r.seconds for r in arch if r.item == "batched unix"})
    R.pre_ratio = _paired(calls, "calls", "batched")

    # Paired rounds: {(pair, n): {side: {round: seconds}}}; a side is the
    # transport (C pairs) or the client (python/c).
    R.pairs = {}
    for r in rows:
        if r.section == "paired":
            side = r.source if r.item == "python/c" else r.transport
            R.pairs.setdefault((r.item, r.n), {}).setdefault(side, {})[r.run] = r.seconds

    # Echo curves: {(source, transport): [(n, bytes, median, p10, p90)]}
    R.curves = {}
    for r in rows:
        if r.section == "echo" and r.item == "echo":
            R.curves.setdefault((r.source, r.transport), []).append(
                (r.n, r.bytes, r.seconds, r.p10_s, r.p90_s))
    for v in R.curves.values():
        v.sort()
    R.fits = {k: fit_curve([(b, t) for _, b, t, _, _ in v]) for k, v in R.curves.items()}
    lfd = [r for r in rows if r.section == "echo" and r.item == "load_fd"]
    R.load_fd = (lfd[0].n, lfd[0].seconds) if lfd else None

    # Serialization: {name: {direction: (median, min, max), bytes}}
    R.ser = {}
    for r in rows:
        if r.section != "serialization":
            continue
        fmt, direction = r.item.rsplit(" ", 1)
        e = R.ser.setdefault(fmt, {"bytes": r.bytes})
        e.setdefault(direction, []).append(r.seconds)
    for e in R.ser.values():
        for k in ("encode", "decode"):
            v = e.get(k, [])
            e[k] = (_med(v), min(v), max(v)) if v else (float("nan"),) * 3

    R.spawns = {}
    for r in rows:
        if r.section == "spawn":
            R.spawns.setdefault(r.item, []).append(r.seconds)
    R.spawns = {k: (_med(v), min(v), max(v)) for k, v in R.spawns.items()}
    # The spawn pattern's floor: the cheaper of the two ways measured.
    R.spawn = min(R.spawns.values(), default=(float("nan"),) * 3)
    R.goals = _goals(R)
    R.breakeven = _breakeven(R)
    return R


def _paired(by_key, a, b):
    """Median over runs (rounds) of a's time / b's time in the same run;
    by_key: {(name, run): seconds}."""
    v = [t / by_key[(b, run)] for (name, run), t in by_key.items()
         if name == a and by_key.get((b, run), 0) > 0]
    return _med(v)


def _pair(R, pair, n):
    """(subject median, yardstick median, median of the per-round ratios)
    of one paired measurement, or nans."""
    a, b = pair.split("/")
    sides = R.pairs.get((pair, n), {})
    A, B = sides.get(a, {}), sides.get(b, {})
    by_key = {(a, run): t for run, t in A.items()}
    by_key.update({(b, run): t for run, t in B.items()})
    return _med(list(A.values())), _med(list(B.values())), _paired(by_key, a, b)


def _point(R, source, transport, n=None, largest=False):
    v = R.curves.get((source, transport))
    if not v:
        return float("nan"), None
    if largest:
        return v[-1][2], v[-1][0]
    for p in v:
        if p[0] == n:
            return p[2], n
    return float("nan"), None


def _goals(R):
    """The performance-goal rows: (what, value, yardstick, ratio, goal text,
    status).  Every ratio is the median of per-round ratios, subject and
    yardstick measured in alternating rounds (or, for the sweep, in the
    same run), so that both see the same phase of a shared machine."""
    out = []

    def add(what, val, yard_name, yard, ratio, goal, ok):
        st = "n/a" if ratio != ratio else ("PASS" if ok else "MISS")
        out.append((what, val, yard_name, yard, ratio, goal, st))

    small = min(R.cfg.sizes)
    c_unix8, bare8, r = _pair(R, "unix/bare_unix", small)
    add(f"echo {_fmt_bytes(8 * small)}, C client, Unix socket", c_unix8, "bare socketpair ping-pong (C)",
        bare8, r, "<= 1.3x", r <= 1.3)
    u8, c_shm8, r = _pair(R, "unix/shm", small)
    add(f"echo {_fmt_bytes(8 * small)}, C client, shared memory", c_shm8, "Unix-socket floor (C client)",
        u8, r, ">= 30x lower", r >= 30)
    nb = max(R.cfg.sizes)
    c_big, bare_big, r = _pair(R, "unix/bare_unix", nb)
    mb = _fmt_bytes(8 * nb)
    add(f"echo {mb} round trip, C client, Unix socket", c_big, "bare socket round trip, same bytes",
        bare_big, r, "<= 1.25x", r <= 1.25)
    u_s, shm_big, r1 = _pair(R, "unix/shm", nb)
    u_l, lfd, r2 = _pair(R, "unix/load_fd", nb)
    # The faster of the two ways to ship the payload, with its own pairing.
    if r2 == r2 and (r1 != r1 or r2 > r1):
        best, val, yard = r2, lfd, u_l
    else:
        best, val, yard = r1, shm_big, u_s
    add(f"{mb} over shm (echo) / LOAD_FD (one way): faster by", val,
        f"{mb} Unix-socket round trip (C)", yard, best, ">= 2x faster", best >= 2)
    pre = R.pre_calls
    bat = R.by_name.get("batched unix", {}).get("median", float("nan"))
    r = R.pre_ratio
    add(f"preloaded chatty sweep ({R.meta['n_combos']} SWEEP_LOADED calls)", pre,
        "one batched SWEEP (Unix socket)", bat, r, "<= 1.01x", r <= 1.01)
    py8, c8, r = _pair(R, "python/c", small)
    add(f"echo {_fmt_bytes(8 * small)}, Python client, Unix socket", py8, "C client, same transport",
        c8, r, "<= 1.2x", r <= 1.2)
    return out


def _breakeven(R):
    """Rows of the break-even table from the measured numbers."""
    k = R.meta["n_combos"]
    n = R.meta["n_bars"]
    c_sweep = R.by_name.get("in-process C", {}).get("median", float("nan"))
    nb_sweep = R.by_name.get("in-process numba", {}).get("median", float("nan"))
    grans = (("per sweep", 1, 1.0), ("per combo", k, 1.0 / k), ("per bar, per combo", k * n, 1.0 / (k * n)))
    floors = []
    for label, key in (("Python, Unix socket", ("python", "unix")),
                       ("Python, TCP", ("python", "tcp")),
                       ("Python, shared memory", ("python", "shm")),
                       ("C, Unix socket", ("c", "unix")),
                       ("C, shared memory", ("c", "shm"))):
        f = R.fits.get(key, (float("nan"),))[0]
        if f == f:
            floors.append((label, f))
    if R.spawn[0] == R.spawn[0]:
        floors.append(("spawn per call", R.spawn[0]))
    out = []
    for gname, calls, frac in grans:
        comp_c = c_sweep * frac
        comp_nb = nb_sweep * frac
        for label, f in floors:
            G = comp_c / f
            out.append(dict(gran=gname, calls=calls, compute=comp_c, compute_numba=comp_nb,
                            transport=label, floor=f, G=G, share=1.0 / (1.0 + G),
                            G_numba=comp_nb / f, total=calls * f))
    return out


# ---- outputs ------------------------------------------------------------------

def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in rows:
            w.writerow(r.csv())


def _table(hdr, body, align=None):
    align = align or ["l"] + ["r"] * (len(hdr) - 1)
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(hdr) + " |", "| " + " | ".join(sep) + " |"]
    for b in body:
        lines.append("| " + " | ".join(str(x) for x in b) + " |")
    return "\n".join(lines)


def write_report(path, R):
    cfg, meta = R.cfg, R.meta
    L = []
    add = L.append
    add("# tickwire study: the IPC tax, measured on this machine\n")
    add(f"Command: `{meta['command']}`  ")
    add(f"Date: {meta['date']}  ")
    add(f"Machine: {meta['cpu']}, {meta['cores']} online cores; {meta['platform']}  ")
    add(f"Software: Python {meta['python']}, numpy {meta['numpy']}, numba {meta['numba']}; "
        f"libtickwire {meta['lib']} (exact kernel, {meta['isa']}, {cfg.threads} thread(s) in "
        f"process and in the engine)  ")
    add(f"Workload: {meta['n_bars']:,} bars × {meta['n_combos']} combos (seed 42, fee 0.09%); the "
        f"close series is {meta['series_bytes']:,} bytes on the wire. {cfg.runs} runs per "
        f"architecture{' (--quick)' if cfg.quick else ''}.  ")
    add(f"Python client: {meta['client_kinds']}.  ")
    steal = meta.get("steal", float("nan"))
    add(f"Load average (1 min) at start / end: {meta['load'][0]:.2f} / {meta['load'][1]:.2f} "
        f"on {meta['cores']} cores; CPU steal during the run: "
        f"{'n/a' if steal != steal else f'{steal:.1f}%'}.\n")
    add("> **Read the figures as medians from a shared virtual machine.** Other work on the "
        "same cores moves single runs by tens of percent; every table shows the median with "
        "its min–max spread (architectures: over runs; echo: p10–p90 over round trips). "
        "Compare rows of one report with each other, not with another machine's.\n")

    # Gate
    add("## Equivalence gate\n")
    add(f"Every architecture's per-combo (PnL, trades) is compared with the in-process numba "
        f"reference of the same run: trades equal and |ΔPnL| ≤ {PNL_TOL:g}.")
    if meta.get("fingerprint") is not None:
        add(f" Fingerprint: {meta['fingerprint'][1]}.")
    add(f"\n\n**Gate: {'PASS' if R.gate_ok else 'FAIL'}**\n")

    # Architectures
    add("## Architectures\n")
    body = []
    for d in R.arch:
        gate = "ok" if d["gate_ok"] else (f"FAIL (max ΔPnL {d['max_dpnl']:.3g}, "
                                          f"{d['mism']} trade mismatches)")
        body.append((d["name"], d["what"], _fmt_t(d["median"]),
                     f"{_fmt_t(d['min'])} – {_fmt_t(d['max'])}", f"{100 * d['spread']:.1f}%",
                     _fmt_x(d["ratio"], 3), _fmt_x(d["ratio_c"], 2), gate))
    add(_table(("architecture", "what", "median", "min – max", "spread",
                "vs in-process numba", "vs in-process C", "gate"), body,
               ["l", "l", "r", "r", "r", "r", "r", "l"]))
    add("\n![architectures](architectures.png)\n")

    # Echo curve
    add("## The echo curve\n")
    add("ECHO round trip of n floats (8n bytes each way): median per point, from the Python "
        "client and from the C client (`tw_echo_curve`), next to the bare yardsticks "
        "(the same bytes ping-ponged with plain read/write between two processes over a "
        "socketpair and over loopback TCP). Spawn is excluded here; see the spawn cost.\n")
    keys = [k for k in (("python", "unix"), ("python", "tcp"), ("python", "shm"),
                        ("c", "unix"), ("c", "tcp"), ("c", "shm"),
                        ("c", "bare_unix"), ("c", "bare_tcp")) if k in R.curves]
    names = {"python": "Py", "c": "C"}
    hdr = ["n floats", "bytes"] + [f"{names[s]} {t}" for s, t in keys]
    body = []
    for n in sorted(cfg.sizes):
        row = [f"{n:,}", f"{8 * n:,}"]
        for k in keys:
            p = [x for x in R.curves[k] if x[0] == n]
            row.append(f"{_us(p[0][2]):,.1f} µs" if p else "-")
        body.append(row)
    add(_table(hdr, body))
    add("\nFit of `T = floor + 2b / bandwidth` (floor: the smallest payload; bandwidth: "
        "least squares over payloads of 8 KB and more):\n")
    body = []
    for k in keys:
        f, bw = R.fits[k]
        spread = [x for x in R.curves[k]][0]
        body.append((f"{names[k[0]]} {k[1]}", f"{_us(f):.1f} µs",
                     f"{_us(spread[3]):.1f} – {_us(spread[4]):.1f} µs",
                     "n/a" if bw != bw else f"{bw / 1e9:.2f} GB/s",
                     "n/a" if bw != bw else f"{_us(f + 2 * meta['series_bytes'] / bw):,.0f} µs"))
    add(_table(("curve", "floor", "floor p10 – p90", "bandwidth", f"T({meta['series_bytes']:,} B)"),
               body))
    if R.load_fd:
        add(f"\nLOAD_FD of {R.load_fd[0]:,} floats (sealed memfd passed over the socket, no bytes "
            f"copied through it), C client: {_fmt_t(R.load_fd[1])} one way.")
    add("\n![echo curve](echo_curve.png)\n")

    # Serialization
    add(f"## Serialization tax ({meta['n_ser']:,} floats)\n")
    raw_enc = R.ser.get("raw bytes", {}).get("encode", (float("nan"),))[0]
    raw_rt = raw_enc + R.ser.get("raw bytes", {}).get("decode", (float("nan"),))[0]
    body = []
    for fmt, e in R.ser.items():
        enc, dec = e["encode"], e["decode"]
        body.append((fmt, f"{e['bytes']:,}", f"{_us(enc[0]):,.1f} µs",
                     f"{_us(enc[1]):,.1f} – {_us(enc[2]):,.1f}",
                     f"{_us(dec[0]):,.1f} µs", f"{_us(dec[1]):,.1f} – {_us(dec[2]):,.1f}",
                     _fmt_x(enc[0] / raw_enc, 1), _fmt_x((enc[0] + dec[0]) / raw_rt, 1)))
    add(_table(("format", "bytes", "encode", "encode min – max", "decode", "decode min – max",
                "encode vs raw", "encode+decode vs raw"), body))
    js = R.ser.get("JSON", {}).get("encode", (float("nan"),))[0]
    nb = R.by_name.get("in-process numba", {}).get("median", float("nan"))
    cc = R.by_name.get("in-process C", {}).get("median", float("nan"))
    k = meta["n_combos"]
    add(f"\nJSON-encoding the series once costs {100 * js / nb:.2f}% of the in-process numba "
        f"sweep and {100 * js / cc:.1f}% of the in-process C sweep; a chatty JSON client "
        f"encoding it for each of {k} calls would spend {_fmt_t(k * js)} on the client side "
        f"alone.\n")

    # Chatty vs chunky
    add("## Chatty vs chunky\n")
    b = R.by_name.get("batched unix", {}).get("median", float("nan"))
    ch = R.by_name.get("chatty unix", {}).get("median", float("nan"))
    pre = R.by_name.get("preloaded unix", {}).get("median", float("nan"))
    fpy, bwpy = R.fits.get(("python", "unix"), (float("nan"), float("nan")))
    sb = meta["series_bytes"]
    pred = (k - 1) * (fpy / 2 + sb / bwpy) if bwpy == bwpy else float("nan")
    body = [
        ("batched (1 call)", _fmt_t(b), "-", "-"),
        (f"chatty ({k} calls, closes re-sent)", _fmt_t(ch), _fmt_t(ch - b),
         _fmt_t((ch - b) / max(1, k - 1)) + " per extra call"),
        (f"preloaded ({k} calls, params only; LOAD included)", _fmt_t(pre), _fmt_t(pre - b),
         _fmt_t((pre - b) / k) + " per call"),
        (f"preloaded, the {k} calls alone", _fmt_t(R.pre_calls), _fmt_t(R.pre_calls - b),
         _fmt_t((R.pre_calls - b) / k) + " per call"),
        ("LOAD of the series (once)", _fmt_t(R.pre_load), "-", "-"),
    ]
    add(_table(("pattern (Unix socket, Python client)", "median", "vs batched", "per call"), body))
    add(f"\nPrediction from the echo curve (Python, Unix socket): {k - 1} extra one-way "
        f"transfers of the series ≈ {_fmt_t(pred)} (measured: {_fmt_t(ch - b)}); "
        f"{k} parameter-only calls at the floor ≈ {_fmt_t(k * fpy)} (measured: "
        f"{_fmt_t(R.pre_calls - b)}). Chatty minus preloaded calls, {_fmt_t(ch - R.pre_calls)}, "
        f"is the price of re-sending the data alone; what the preloaded calls cost beyond the "
        f"echo floor is per-call work in the engine (dispatch to a compute thread, one kernel "
        f"call per combo), not the boundary.\n")

    # Spawn
    add("## Spawn cost\n")
    sp = R.by_name.get("spawn per sweep", {}).get("median", float("nan"))
    body = [(f"`tickwire serve --stdio`: {item}", _fmt_t(v[0]), f"{_fmt_t(v[1])} – {_fmt_t(v[2])}")
            for item, v in R.spawns.items()]
    body.append(("spawn per sweep minus batched Unix socket", _fmt_t(sp - b), "-"))
    sp_py = R.spawns.get(SPAWN_PY, (float("nan"),))[0]
    if sp_py == sp_py:
        extra = sp - b - sp_py
        body.append(("… minus the spawn cost (subprocess): the fresh engine's extra compute",
                     _fmt_t(extra) + (" (within the noise)" if extra < 0 else ""), "-"))
    add(_table(("what", "median", "min – max"), body))
    add("\nThe last row is what a freshly started engine spends on the sweep beyond what the "
        "resident engine (warm sweeper, memory already mapped) spends: part of the spawn "
        "pattern's price that the spawn-and-echo figure alone does not show.")
    add(f"\nAt the cheaper spawn cost, spawning per combo would cost about {k} × "
        f"{_fmt_t(R.spawn[0])} = "
        f"{_fmt_t(k * R.spawn[0])} on top of the compute; spawning per bar "
        f"{meta['n_bars'] * k:,} × that.\n")

    # Break-even
    add("## Break-even\n")
    add("Granularity G = compute per call / floor; the boundary's share of the wall time is "
        "about 1/(1+G) (plus the payload's transfer time when the call carries data). Compute "
        "per call is the in-process C kernel's (the engine's kernel); G for the numba "
        "reference's compute is shown too.\n")
    body = []
    for e in R.breakeven:
        body.append((e["gran"], f"{e['calls']:,}", _fmt_t(e["compute"]), e["transport"],
                     _fmt_t(e["floor"]), f"{e['G']:,.3g}", f"{100 * e['share']:.3g}%",
                     f"{e['G_numba']:,.3g}", _fmt_t(e["total"])))
    add(_table(("granularity", "calls", "compute per call", "boundary", "floor", "G",
                "boundary share", "G (numba compute)", "calls × floor"), body))

    # Side by side with the published study.
    add("\n## Side by side with the published study\n")
    add("The published article's figures (Apple M2 Max, numba reference, a Rust engine, Python "
        "client over a Unix socket, 150,000 bars × 80 combos, medians of 10 runs) next to this "
        "run's. Different machine, different engine: compare the shapes (ratios, orders of "
        "magnitude), not the absolute values."
        + (" This run is not the study's workload (--quick or --bars/--combos): the sweep "
           "figures are not comparable." if (meta["n_bars"] != 150000 or meta["n_combos"] != 80)
           else "") + "\n")
    nbm = R.by_name.get("in-process numba", {}).get("median", float("nan"))

    def ratio_of(name):
        return R.by_name.get(name, {}).get("ratio", float("nan"))

    py_big = [x for x in R.curves.get(("python", "unix"), []) if x[0] == 150000]
    raw_e = R.ser.get("raw bytes", {}).get("encode", (float("nan"),))[0]
    js_e = R.ser.get("JSON", {}).get("encode", (float("nan"),))[0]
    per_combo = nbm / meta["n_combos"]
    G_py = per_combo / fpy if fpy == fpy else float("nan")
    body = [
        ("in-process numba sweep", "2.010 s", _fmt_t(nbm)),
        ("batched over a Unix socket, vs numba", "1.13x", _fmt_x(ratio_of("batched unix"), 3)),
        ("chatty (data re-sent per combo), vs numba", "1.19x", _fmt_x(ratio_of("chatty unix"), 3)),
        ("spawn per sweep, vs numba", "1.14x", _fmt_x(ratio_of("spawn per sweep"), 3)),
        ("preloaded (params only), vs numba", "not measured (its 80 calls ≈ 1.3 ms, derived)",
         _fmt_x(ratio_of("preloaded unix"), 3)),
        ("echo floor, 8 B, Python client, Unix socket", "14.05 µs", _fmt_t(fpy)),
        ("echo 1.2 MB round trip, Python client, Unix socket", "2,043.4 µs",
         _fmt_t(py_big[0][2]) if py_big else "not measured"),
        ("effective bandwidth (T = floor + 2b/bw)", "1.2 GB/s",
         "n/a" if bwpy != bwpy else f"{bwpy / 1e9:.2f} GB/s"),
        ("raw encode of 150,000 floats", "49.1 µs", _fmt_t(raw_e)),
        ("JSON encode of 150,000 floats", "66,243 µs", _fmt_t(js_e)),
        ("JSON encode / raw encode", "1348x", _fmt_x(js_e / raw_e, 0)),
        ("spawn cost", "~24 ms", _fmt_t(R.spawn[0])),
        ("in-process compute per combo (numba)", "25,130 µs", _fmt_t(per_combo)),
        ("G per combo (numba compute / Python Unix floor)", "≈1795", f"{G_py:,.0f}"),
        ("per-bar calls at the floor (150,000 × floor)", "≈2.1 s", _fmt_t(150000 * fpy)),
    ]
    add(_table(("figure", "published study", "this run"), body))

    # Goals
    add("\n## Performance goals\n")
    add(f"Each goal's subject and yardstick are measured in {cfg.pair_rounds} alternating rounds "
        "(A B, B A, ...: one block of round trips per side and round), so that both see the "
        "same phase of the machine; the ratio is the median of the per-round ratios, the "
        "figures the medians of the blocks. The sweep goal pairs the two architectures run by "
        "run. A MISS is reported, not fatal: timing on a shared machine is noise, correctness "
        "is the gate.\n")
    body = []
    for what, val, yname, yard, ratio, goal, st in R.goals:
        body.append((what, _fmt_t(val), yname, _fmt_t(yard),
                     "n/a" if ratio != ratio else f"{ratio:.3g}", goal, st))
    add(_table(("what", "measured", "yardstick", "yardstick value", "paired ratio", "goal", "status"),
               body))
    add("")
    add("Files: `measurements.csv` (every measurement), `echo_curve.png`, `architectures.png`.")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def write_plots(out_dir, R):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Echo curve, log-log.
    fig, ax = plt.subplots(figsize=(8.5, 5.5))
    styles = {"unix": "o", "tcp": "s", "shm": "^", "bare_unix": "x", "bare_tcp": "+"}
    for (src, tr), pts in sorted(R.curves.items()):
        x = [max(b, 8) for _, b, _, _, _ in pts]
        y = [_us(t) for _, _, t, _, _ in pts]
        lo = [_us(p10) for _, _, _, p10, _ in pts]
        hi = [_us(p90) for _, _, _, _, p90 in pts]
        ls = "--" if tr.startswith("bare") else ("-" if src == "c" else ":")
        label = ("C " if src == "c" else "Python ") + tr.replace("_", " ")
        line, = ax.plot(x, y, ls, marker=styles.get(tr, "."), label=label)
        ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.12)
    f, bw = R.fits.get(("python", "unix"), (float("nan"), float("nan")))
    if bw == bw:
        xs = np.logspace(0.9, math.log10(max(8 * max(R.cfg.sizes), 10)), 50)
        ax.plot(xs, _us(f + 2 * xs / bw), color="gray", lw=0.8,
                label=f"fit Py unix: {_us(f):.1f} µs + 2b/{bw / 1e9:.2f} GB/s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("payload, bytes each way")
    ax.set_ylabel("round trip, µs (median; band p10–p90)")
    ax.set_title("Echo round trip by transport (shared VM: medians)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "echo_curve.png"), dpi=110)
    plt.close(fig)

    # Architectures: bars with min-max whiskers.
    fig, ax = plt.subplots(figsize=(8.5, 0.5 * len(R.arch) + 1.6))
    names = [d["name"] for d in R.arch][::-1]
    med = [d["median"] for d in R.arch][::-1]
    lo = [d["median"] - d["min"] for d in R.arch][::-1]
    hi = [d["max"] - d["median"] for d in R.arch][::-1]
    colors = ["tab:blue" if d["gate_ok"] else "tab:red" for d in R.arch][::-1]
    ax.barh(names, med, xerr=[lo, hi], color=colors, capsize=3)
    for i, d in enumerate(R.arch[::-1]):
        ax.text(d["max"] * 1.04, i, f" {d['ratio']:.3f}x numba" + ("" if d["gate_ok"] else "  GATE FAIL"),
                va="center", fontsize=8)
    ax.set_xlabel("sweep wall time, s (median of runs, whiskers min–max)")
    ax.set_xscale("log")
    ax.set_title(f"{R.meta['n_combos']}-combo sweep on {R.meta['n_bars']:,} bars by architecture")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "architectures.png"), dpi=110)
    plt.close(fig)
