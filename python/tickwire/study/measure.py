"""The measurements: architectures (with the equivalence gate), the echo
curve from Python and from C, the paired rounds behind the performance
goals, the serialization tax, the spawn cost.

Every figure becomes one Row (one line of measurements.csv).  Nothing here
formats a report; report.py reads the rows.
"""

import gc
import json
import os
import pickle
import struct
import subprocess
import time
from dataclasses import dataclass, field

import numpy as np

import tickwire
from tickwire import reference

from .cclient import CClient
from .server import StudyError

__all__ = ["Row", "CSV_COLUMNS", "ARCHITECTURES", "PNL_TOL", "open_python_client",
           "run_architectures", "python_echo_curve", "c_echo_curve", "python_c_pairs",
           "serialization",
           "spawn_cost", "gate_compare"]

PNL_TOL = 1e-6

CSV_COLUMNS = ("section", "item", "source", "transport", "n", "bytes", "run", "iters",
               "seconds", "p10_s", "p90_s", "min_s", "max_s", "gate", "max_dpnl",
               "trade_mismatches")

# (name, transport, what it is): the study's architectures plus this
# project's preloaded and shared-memory ones, in report order.
ARCHITECTURES = (
    ("in-process numba", "-", "the numba reference kernel called directly (no boundary)"),
    ("in-process C", "-", "libtickwire's exact kernel through ctypes (no boundary)"),
    ("batched unix", "unix", "one SWEEP frame over the Unix socket: all closes + all combos"),
    ("batched tcp", "tcp", "the same over loopback TCP (TCP_NODELAY)"),
    ("chatty unix", "unix", "one SWEEP per combo, the closes re-sent every call"),
    ("preloaded unix", "unix", "LOAD once, then one SWEEP_LOADED per combo (params only)"),
    ("shared memory", "shm", "one SWEEP frame through the shared-memory rings"),
    ("spawn per sweep", "stdio", "subprocess `tickwire serve --stdio`, one SWEEP over its stdin, "
                                 "wait for exit"),
)

# Test hook: TICKWIRE_STUDY_PERTURB names an architecture whose results are
# deliberately corrupted after it ran, so that a test can prove the gate
# catches a wrong kernel.  Never set outside tests.
PERTURB_ENV = "TICKWIRE_STUDY_PERTURB"


@dataclass
class Row:
    section: str
    item: str
    source: str = ""
    transport: str = ""
    n: int = 0
    bytes: int = 0
    run: int = 0
    iters: int = 1
    seconds: float = float("nan")
    p10_s: float = float("nan")
    p90_s: float = float("nan")
    min_s: float = float("nan")
    max_s: float = float("nan")
    gate: str = ""
    max_dpnl: float = float("nan")
    trade_mismatches: int = -1
    extra: dict = field(default_factory=dict)

    def csv(self):
        out = []
        for c in CSV_COLUMNS:
            v = getattr(self, c)
            if isinstance(v, float):
                out.append("" if v != v else repr(v))
            elif c == "trade_mismatches" and v < 0:
                out.append("")
            else:
                out.append(str(v))
        return out


# ---- clients ----------------------------------------------------------------

def open_python_client(address, shm_ring=0):
    """(client, kind): the Python client tickwire.client when it exists and
    offers this transport, else the C client through ctypes (for shm with a
    ring of shm_ring bytes, 0: the default)."""
    try:
        from tickwire import client as pyclient  # noqa: F401  (may not exist yet)
        cls = getattr(pyclient, "Client", None)
    except ImportError:
        cls = None
    # The harness calls these; a Python client without one of them is not
    # used (the C client is, and the report says which was).
    needed = ("echo", "sweep", "load", "sweep_loaded", "close")
    if cls is not None and all(callable(getattr(cls, m, None)) for m in needed):
        try:
            if address.startswith("shm:") and shm_ring:
                return cls(address, ring_bytes=shm_ring), "tickwire.client"
            return cls(address), "tickwire.client"
        except (ValueError, NotImplementedError, TypeError, OSError):
            pass  # a transport it does not speak: fall through to ctypes
    return CClient(address, shm_ring=shm_ring), "ctypes C client"


def _drop(c, ds):
    fn = getattr(c, "drop", None)
    if fn is not None:
        fn(ds)


def gate_compare(pnl, trades, ref_pnl, ref_trades):
    """(ok, max |dPnL|, trade mismatches) against the numba reference."""
    pnl = np.asarray(pnl, dtype=np.float64)
    trades = np.asarray(trades, dtype=np.int64)
    if pnl.shape != ref_pnl.shape or trades.shape != ref_trades.shape:
        return False, float("inf"), int(ref_trades.shape[0])
    dp = np.abs(pnl - ref_pnl)
    # NaN can only come from a broken result: count it as infinitely wrong.
    max_dpnl = float(np.max(np.where(np.isnan(dp), np.inf, dp))) if dp.size else 0.0
    mism = int(np.count_nonzero(trades != ref_trades))
    return (mism == 0 and max_dpnl <= PNL_TOL), max_dpnl, mism


def _perturb(name, pnl, trades):
    want = os.environ.get(PERTURB_ENV, "")
    if not want or want.replace("_", " ").replace("-", " ") != name.replace("-", " "):
        return pnl, trades
    pnl = np.array(pnl, dtype=np.float64, copy=True)
    trades = np.array(trades, dtype=np.int64, copy=True)
    pnl[0] += 1e-3          # over the 1e-6 tolerance
    trades[-1] += 1         # and one trade count off
    return pnl, trades


# ---- architectures ---------------------------------------------------------

def run_architectures(cfg, close, combos, server, progress, spawn_args):
    """Runs every architecture cfg.runs times, interleaved run by run (so
    slow drift on a shared machine hits all of them alike) and gated
    against the first numba run.  Returns (rows, part_rows, ref,
    {transport: client kind})."""
    k = combos.shape[0]
    T = cfg.threads
    progress("architectures", "warming up (numba JIT, connections)")
    # Warm-up, untimed: numba compiles (or loads its cache), the C kernel's
    # pages are touched, the server's sweepers are sized.
    reference.sweep(close[:2000], combos[:1])
    tickwire.sweep(close[:2000], combos[:1], threads=T)
    c_unix, kind = open_python_client(server.unix_addr)
    c_tcp, _ = open_python_client(server.tcp_addr)
    c_shm, shm_kind = open_python_client(server.shm_addr,
                                         _ring_for(close.nbytes + combos.nbytes))
    for c in (c_unix, c_tcp, c_shm):
        c.sweep(close, combos[:1])

    def numba():
        return reference.sweep(close, combos)

    def inproc_c():
        return tickwire.sweep(close, combos, threads=T, kernel="exact")

    def batched(c):
        return lambda: c.sweep(close, combos)

    def chatty():
        pnl = np.empty(k)
        tr = np.empty(k, dtype=np.int64)
        for i in range(k):
            p, t = c_unix.sweep(close, combos[i:i + 1])
            pnl[i], tr[i] = p[0], t[0]
        return pnl, tr

    parts = {}

    def preloaded():
        t0 = time.perf_counter()
        ds = c_unix.load(close)
        t1 = time.perf_counter()
        pnl = np.empty(k)
        tr = np.empty(k, dtype=np.int64)
        for i in range(k):
            p, t = c_unix.sweep_loaded(ds, combos[i:i + 1])
            pnl[i], tr[i] = p[0], t[0]
        t2 = time.perf_counter()
        _drop(c_unix, ds)
        parts["load"] = t1 - t0
        parts["calls"] = t2 - t1
        return pnl, tr

    def spawn():
        return spawn_sweep(cfg.binary, spawn_args, close, combos)

    fns = {
        "in-process numba": numba,
        "in-process C": inproc_c,
        "batched unix": batched(c_unix),
        "batched tcp": batched(c_tcp),
        "chatty unix": chatty,
        "preloaded unix": preloaded,
        "shared memory": batched(c_shm),
        "spawn per sweep": spawn,
    }
    req_bytes = 4 + 9 + close.nbytes + combos.nbytes
    bytes_of = {
        "batched unix": req_bytes, "batched tcp": req_bytes, "shared memory": req_bytes,
        "spawn per sweep": req_bytes,
        "chatty unix": k * (4 + 9 + close.nbytes + 48),
        "preloaded unix": 4 + 5 + close.nbytes + k * (4 + 13 + 48),
    }
    rows, part_rows = [], []
    ref = None
    total = cfg.runs * len(ARCHITECTURES)
    step = 0
    try:
        results = []  # (run, name, transport, pnl, trades, seconds), gated after all runs
        names = [a[0] for a in ARCHITECTURES]
        for r in range(cfg.runs):
            # The order rotates from run to run: on a shared machine whatever
            # follows a 10-second numba run (or precedes the spawns) would
            # otherwise always meet the same conditions.
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                transport = next(a[1] for a in ARCHITECTURES if a[0] == name)
                step += 1
                progress("architectures", f"run {r + 1}/{cfg.runs}: {name}", step, total)
                gc.collect()
                gc.disable()
                try:
                    t0 = time.perf_counter()
                    pnl, trades = fns[name]()
                    dt = time.perf_counter() - t0
                finally:
                    gc.enable()
                pnl, trades = _perturb(name, pnl, trades)
                results.append((r, name, transport, np.asarray(pnl, dtype=np.float64).copy(),
                                np.asarray(trades, dtype=np.int64).copy(), dt))
                if name == "preloaded unix":
                    part_rows.append(Row("architecture_part", "preloaded: LOAD", "python", "unix",
                                         close.shape[0], close.nbytes, r, 1, parts["load"]))
                    part_rows.append(Row("architecture_part", f"preloaded: {k} SWEEP_LOADED calls",
                                         "python", "unix", close.shape[0], k * 48, r, k,
                                         parts["calls"]))
        # The reference is the first numba run; every row (numba's later runs
        # included) is compared with it.
        ref = next((p, t) for _, n, _, p, t, _ in results if n == "in-process numba")
        results.sort(key=lambda x: (x[0], names.index(x[1])))
        for r, name, transport, pnl, trades, dt in results:
            ok, dmax, mism = gate_compare(pnl, trades, *ref)
            rows.append(Row("architecture", name, "python", transport, close.shape[0],
                            bytes_of.get(name, 0), r, 1, dt, gate="ok" if ok else "FAIL",
                            max_dpnl=dmax, trade_mismatches=mism))
    finally:
        for c in (c_unix, c_tcp, c_shm):
            try:
                c.close()
            except Exception:
                pass
    return rows, part_rows, ref, {"unix": kind, "shm": shm_kind}


def _read_exact(fd, n):
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = os.readv(fd, [view[got:]])
        if k == 0:
            raise StudyError(f"spawned engine closed its stdout after {got} of {n} bytes")
        got += k
    return buf


def spawn_sweep(binary, args, close, combos):
    """The study's spawn pattern, from Python: start `tickwire serve --stdio`
    with subprocess (as a Python script shelling out to an engine would),
    write one SWEEP frame (wire.md) to its stdin, read the reply from its
    stdout, close stdin and wait for the child to exit.  Everything from
    the spawn to the exit is the architecture's cost."""
    k = combos.shape[0]
    hdr = struct.pack("<IBII", 9 + close.nbytes + combos.nbytes, 0, close.shape[0], k)
    p = subprocess.Popen([binary, "serve", "--stdio"] + list(args), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, bufsize=0)
    try:
        wfd, rfd = p.stdin.fileno(), p.stdout.fileno()
        parts = [memoryview(hdr), memoryview(close).cast("B"), memoryview(combos).cast("B")]
        total = sum(len(x) for x in parts)
        sent = 0
        while sent < total:  # a pipe takes a gathered write in pieces
            n = os.writev(wfd, parts)
            sent += n
            while parts and n >= len(parts[0]):
                n -= len(parts[0])
                parts.pop(0)
            if parts and n:
                parts[0] = parts[0][n:]
        (length,) = struct.unpack("<I", _read_exact(rfd, 4))
        if length & 0x80000000:
            body = _read_exact(rfd, length & 0x7FFFFFFF)
            code = struct.unpack_from("<H", body)[0]
            raise StudyError(f"spawned engine answered error {code}: "
                             f"{bytes(body[2:]).decode('utf-8', 'replace')}")
        if length != 16 * k:
            raise StudyError(f"spawned engine's reply is {length} bytes, expected {16 * k}")
        body = _read_exact(rfd, length)
        pnl = np.frombuffer(body, dtype="<f8", count=k).copy()
        trades = np.frombuffer(body, dtype="<i8", count=k, offset=8 * k).copy()
    finally:
        p.stdin.close()
        p.stdout.close()
        p.wait()
    if p.returncode != 0:
        raise StudyError(f"spawned engine exited with {p.returncode}")
    return pnl, trades


def _ring_for(frame_bytes):
    ring = 1 << 20
    while ring // 2 < frame_bytes + 64 and ring < (1 << 30):
        ring <<= 1
    return ring


# ---- echo curve ---------------------------------------------------------------

def iters_for(n, base):
    """Round trips per point: many for small payloads, fewer for large ones
    (the same rule as bench/study/echo_curve.c)."""
    it = base if n <= 2000 else base * 2000 // n
    return max(15, it)


def _stats_row(section, item, source, transport, n, nbytes, t_ns, run=0):
    t = np.sort(np.asarray(t_ns, dtype=np.float64)) / 1e9
    m = len(t)
    return Row(section, item, source, transport, n, nbytes, run, m, float(np.median(t)),
               float(t[m // 10]), float(t[(m * 9) // 10]), float(t[0]), float(t[-1]))


def _timed_echoes(echo, x, it):
    """(ns of each of `it` echo(x) calls, the last reply), the collector off."""
    t = []
    pc = time.perf_counter_ns
    gc.disable()
    try:
        for _ in range(it):
            t0 = pc()
            y = echo(x)
            t.append(pc() - t0)
    finally:
        gc.enable()
    return t, y


def python_echo_curve(cfg, server, progress):
    """The echo curve from Python: returns (rows, {transport: client kind})."""
    rows, kinds = [], {}
    biggest = max(cfg.sizes)
    payload = 100.0 + 0.25 * np.arange(biggest, dtype=np.float64)
    addrs = (("unix", server.unix_addr), ("tcp", server.tcp_addr), ("shm", server.shm_addr))
    total = len(addrs) * len(cfg.sizes)
    step = 0
    for transport, addr in addrs:
        c, kind = open_python_client(addr, _ring_for(8 * biggest))
        kinds[transport] = kind
        try:
            for n in cfg.sizes:
                step += 1
                progress("echo curve (Python)", f"{transport} n={n}", step, total)
                x = payload[:n].copy()
                it = iters_for(n, cfg.iters)
                echo = c.echo
                for _ in range(it // 10 + 2):
                    y = echo(x)
                if not np.array_equal(y, x):
                    raise StudyError(f"echo over {transport} (Python) returned different values")
                t, y = _timed_echoes(echo, x, it)
                if not np.array_equal(y, x):
                    raise StudyError(f"echo over {transport} (Python) returned different values")
                rows.append(_stats_row("echo", "echo", "python", transport, n, 8 * n, t))
        finally:
            c.close()
    return rows, kinds


def _c_row(d, section="echo"):
    """A Row from one JSON line of tw_echo_curve."""
    item = d["pair"] if section == "paired" else (
        "load_fd" if d["transport"] == "load_fd" else "echo")
    return Row(section, item, "c", d["transport"], int(d["n"]), int(d["bytes"]),
               int(d.get("round", 0)), int(d["iters"]), d["median_ns"] / 1e9, d["p10_ns"] / 1e9,
               d["p90_ns"] / 1e9, d["min_ns"] / 1e9, d["max_ns"] / 1e9)


def c_echo_curve(cfg, server, progress, exe):
    """The echo curve from C (tw_echo_curve) with the bare yardsticks and
    LOAD_FD, then the paired rounds of the C goals (subject and yardstick
    alternating, section "paired", run = round): returns rows."""
    progress("echo curve (C)", "bare yardsticks, unix, tcp, shm, LOAD_FD, paired rounds")
    cmd = [exe, "--bare", "--load-fd", "--unix", server.sock, "--shm", server.sock,
           "--tcp", f"127.0.0.1:{server.tcp_port}", "--sizes", ",".join(map(str, cfg.sizes)),
           "--iters", str(cfg.iters), "--pairs", str(cfg.pair_rounds)]
    n_pairs = 5 if len(set(cfg.sizes)) > 1 else 3
    total = 5 * len(cfg.sizes) + 1 + 2 * cfg.pair_rounds * n_pairs
    lines = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as p:
        try:
            # One line per point as it is measured: the progress line follows.
            for line in p.stdout:
                lines.append(line)
                try:
                    d = json.loads(line)
                    progress("echo curve (C)", f"{d['transport']} n={d['n']}", len(lines), total)
                except (ValueError, KeyError):
                    pass
            err = p.stderr.read()
            p.wait()
        except BaseException:
            p.kill()
            raise
    if p.returncode != 0:
        raise StudyError(f"tw_echo_curve failed ({p.returncode}): {err.strip()}")
    rows = []
    for line in lines:
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except ValueError:
            raise StudyError(f"tw_echo_curve printed a line that is not JSON: {line!r}") from None
        rows.append(_c_row(d, "paired" if "pair" in d else "echo"))
    return rows


def python_c_pairs(cfg, server, progress, exe):
    """The Python client's echo floor against the C client's, in
    cfg.pair_rounds alternating rounds over the Unix socket (Python first in
    even rounds, C first in odd ones): one block of round trips per side
    and round, the C block by a tw_echo_curve run of its own.  Rows of
    section "paired", item "python/c", run = round."""
    n = min(cfg.sizes)
    it = iters_for(n, cfg.iters)
    x = 100.0 + 0.25 * np.arange(n, dtype=np.float64)
    c, _ = open_python_client(server.unix_addr)
    cmd = [exe, "--unix", server.sock, "--sizes", str(n), "--iters", str(cfg.iters)]
    rows = []

    def python_block(r):
        for _ in range(2):
            c.echo(x)
        t, y = _timed_echoes(c.echo, x, it)
        if not np.array_equal(y, x):
            raise StudyError("echo over unix (Python) returned different values")
        rows.append(_stats_row("paired", "python/c", "python", "unix", n, 8 * n, t, run=r))

    def c_block(r):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise StudyError(f"tw_echo_curve failed ({p.returncode}): {p.stderr.strip()}")
        try:
            d = json.loads(p.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise StudyError(f"tw_echo_curve printed {p.stdout!r}, not one JSON line") from None
        d["pair"], d["round"] = "python/c", r
        rows.append(_c_row(d, "paired"))

    try:
        for r in range(cfg.pair_rounds):
            progress("paired rounds", f"Python vs C client, round {r + 1}", r + 1,
                     cfg.pair_rounds)
            for block in ((python_block, c_block) if r % 2 == 0 else (c_block, python_block)):
                block(r)
    finally:
        c.close()
    return rows


# ---- serialization tax ------------------------------------------------------

def _codecs():
    def raw_enc(a):
        return a.astype("<f8").tobytes()

    def raw_dec(b):
        return np.frombuffer(b, dtype="<f8").copy()

    def pk_enc(a):
        return pickle.dumps(a, protocol=pickle.HIGHEST_PROTOCOL)

    def pk_dec(b):
        return pickle.loads(b)

    def js_enc(a):
        return json.dumps(a.tolist())

    def js_dec(s):
        return np.array(json.loads(s), dtype=np.float64)

    return (("raw bytes", raw_enc, raw_dec), ("pickle", pk_enc, pk_dec), ("JSON", js_enc, js_dec))


def serialization(cfg, series, progress):
    """Encode and decode of the series as raw bytes, pickle and JSON: one row
    per (format, direction, run), the median of cfg.ser_reps repetitions."""
    rows = []
    codecs = _codecs()
    total = cfg.runs * len(codecs)
    step = 0
    for r in range(cfg.runs):
        for name, enc, dec in codecs:
            step += 1
            progress("serialization tax", f"run {r + 1}: {name}", step, total)
            reps = cfg.ser_reps if name != "JSON" else max(2, cfg.ser_reps // 10)
            blob = enc(series)
            back = dec(blob)
            if not np.array_equal(back, series):
                raise StudyError(f"{name} round trip changed the series")
            nbytes = len(blob.encode() if isinstance(blob, str) else blob)
            for direction, fn, arg in (("encode", enc, series), ("decode", dec, blob)):
                t = []
                for _ in range(reps):
                    t0 = time.perf_counter_ns()
                    fn(arg)
                    t.append(time.perf_counter_ns() - t0)
                row = _stats_row("serialization", f"{name} {direction}", "python", "-",
                                 series.shape[0], nbytes, t, run=r)
                rows.append(row)
    return rows


# ---- spawn cost ---------------------------------------------------------------

SPAWN_C = "spawn + 8-byte echo + exit (C client: fork/exec)"
SPAWN_PY = "spawn + 8-byte echo + exit (Python client: subprocess)"


def spawn_cost(cfg, progress, spawn_args):
    """Spawn `tickwire serve --stdio`, one 8-byte echo, end of input and wait
    for the child: the fixed cost of the spawn-per-call pattern.  Through
    the C client (fork/exec from C, as the spawn-per-sweep architecture)
    and, when it exists, through the Python client (subprocess.Popen, what
    a Python script shelling out to an engine pays)."""
    rows = []
    x = np.array([42.0])
    makers = [(SPAWN_C, "c", lambda: CClient.spawn(cfg.binary, spawn_args))]
    try:
        from tickwire.client import Client as PyClient
        makers.append((SPAWN_PY, "python", lambda: PyClient(f"spawn:{cfg.binary}")))
    except ImportError:
        pass
    total = cfg.spawn_reps * len(makers)
    step = 0
    for r in range(cfg.spawn_reps):
        for item, source, make in makers:
            step += 1
            progress("spawn cost", source, step, total)
            t0 = time.perf_counter()
            c = make()
            try:
                y = c.echo(x)
            finally:
                c.close()
            dt = time.perf_counter() - t0
            if y[0] != 42.0:
                raise StudyError("spawned engine echoed a different value")
            rows.append(Row("spawn", item, source, "stdio", 1, 8, r, 1, dt))
    return rows
