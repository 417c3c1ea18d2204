"""`tickwire exchange` against a QuickFIX 1.15 trader over kernel TCP.

The trader (tests/exchange/qf_trader.cpp) knows nothing of tickwire's code;
it checks the venue against live.md's protocol itself (bars once, in order,
exact float64 closes; fills at the right bar's close bit for bit; the
lockstep barrier) and writes its counts to a results file.  This driver
writes the datasets (.npy for the venue, the same values as raw .f64 for
the trader; one dataset with NaN gaps, as a CSV with empty fields), starts
the venue on an ephemeral port, runs the trader, and checks both sides'
counts and the venue's fills log against the datasets.

Waits are bounded by generous timeouts that only end a broken run; no
assertion depends on how fast anything is.
"""
import csv
import os
import signal
import socket
import struct
import subprocess
import tempfile
import time

import numpy as np
import pytest

BUILD = os.path.abspath(os.environ.get("TICKWIRE_BUILD", "build"))
TICKWIRE = os.path.abspath(os.environ.get("TICKWIRE_BIN", os.path.join(BUILD, "tools", "tickwire")))
TRADER = os.path.join(BUILD, "tests", "exchange", "qf_trader")
DICT = os.path.join(os.path.dirname(__file__), "fix44_venue.xml")
N_A, N_B = 300, 250


def need_trader():
    if not os.path.exists(TRADER):
        pytest.skip(f"{TRADER} not built (QuickFIX missing?)")


def datasets(tmp):
    """AAA: a walk with awkward values (17 digits, tiny, subnormal, huge);
    BBB: shorter, NaN for its first 6 bars (orders there are rejected
    103=2), a run in the middle and the last bar."""
    rng = np.random.default_rng(20260101)
    a = 100 * np.exp(np.cumsum(rng.normal(0, 0.01, N_A)))
    a[5:10] = [100.0000000000001, 0.00001, 5e-324, 1.7976931348623157e308, 0.1]
    b = 50 * np.exp(np.cumsum(rng.normal(0, 0.02, N_B)))
    b[:6] = np.nan
    b[40:45] = np.nan
    b[-1] = np.nan
    np.save(os.path.join(tmp, "a.npy"), a)
    a.tofile(os.path.join(tmp, "a.f64"))
    b.tofile(os.path.join(tmp, "b.f64"))
    with open(os.path.join(tmp, "b.csv"), "w") as f:
        f.write("bar,close\n")
        for i, x in enumerate(b):
            f.write(f"{i},{'' if np.isnan(x) else repr(float(x))}\n")
    return {"AAA": a, "BBB": b}


def results(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, v = line.split()
            out[k] = int(v)
    return out


class Venue:
    def __init__(self, tmp, *args, data="AAA=a.npy,BBB=b.csv"):
        self.tmp = tmp
        self.fills = os.path.join(tmp, "fills.csv")
        self.err = open(os.path.join(tmp, "venue.err"), "w")
        self.proc = subprocess.Popen(
            [TICKWIRE, "exchange", "--listen", "127.0.0.1:0", "--data", data,
             "--fills", self.fills, "--store", os.path.join(tmp, "store")] + list(args),
            cwd=tmp, stdout=subprocess.PIPE, stderr=self.err, text=True)
        line = self.proc.stdout.readline()
        assert "listening on 127.0.0.1:" in line, f"venue did not start: {line!r} {self.stderr()}"
        self.port = int(line.split("127.0.0.1:")[1].split()[0])

    def stderr(self):
        if not self.err.closed:
            self.err.flush()
        with open(self.err.name) as f:
            return f.read()[-3000:]

    def wait(self, timeout=120):
        try:
            rc = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        out = self.proc.stdout.read()
        self.err.close()
        summary = {}
        for line in out.splitlines():
            if "bars=" in line:
                for kv in line.split(": ")[-1].split():
                    k, v = kv.split("=")
                    summary[k] = v
        return rc, summary


def trader(tmp, port, sender="QF1", extra=(), dictionary=True, timeout=300):
    res = os.path.join(tmp, sender + ".res")
    cmd = [TRADER, "--port", str(port), "--sender", sender, "--data",
           "AAA=" + os.path.join(tmp, "a.f64"), "--data", "BBB=" + os.path.join(tmp, "b.f64"),
           "--results", res] + list(extra)
    if dictionary:
        cmd += ["--dict", DICT]
    return subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True), res


def finish(p, res, timeout=300):
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    return p.returncode, err, (results(res) if os.path.exists(res) else {})


def bits(x):
    return struct.pack("<d", x)


def check_fills_log(path, data, sessions=None):
    """Every line of the venue's fills log is at a priced bar's close, the
    price text converting (correctly rounded) to the dataset's bits."""
    n = 0
    with open(path) as f:
        r = csv.DictReader(f)
        assert r.fieldnames == ["time", "session", "clordid", "account", "symbol", "side",
                                "qty", "bar", "price"]
        for row in r:
            close = data[row["symbol"]][int(row["bar"])]
            assert not np.isnan(close), row
            assert bits(float(row["price"])) == bits(close), row
            assert "e" not in row["price"].lower(), row
            assert row["account"] == "inst-" + row["symbol"], row
            if sessions:
                assert row["session"] in sessions
            n += 1
    return n


def run_one(tmp, venue_args=(), trader_args=(), dictionary=True):
    data = datasets(tmp)
    v = Venue(tmp, *venue_args)
    p, res = trader(tmp, v.port, extra=["--unknown", "ZZZ"] + list(trader_args),
                    dictionary=dictionary)
    rc, err, r = finish(p, res)
    vrc, summ = v.wait()
    assert rc == 0, f"trader failed:\n{err[-3000:]}\nvenue:\n{v.stderr()}"
    assert vrc == 0, v.stderr()
    assert r["errors"] == 0 and r["closed"] == 1
    assert r["bars_AAA"] == N_A and r["bars_BBB"] == N_B
    n = check_fills_log(v.fills, data)
    assert n == r["fills"] == int(summ["fills"])
    assert summ["bars"] == f"{N_A}/{N_A}"
    return r, summ


def test_lockstep_with_dictionary_and_bad_input():
    """Both instruments' entries in one X (QuickFIX validating every message
    against fix44_venue.xml), an unknown symbol, malformed and unsupported
    messages, orders before any priced bar."""
    need_trader()
    with tempfile.TemporaryDirectory() as tmp:
        r, s = run_one(tmp, trader_args=["--bad"])
        assert r["x_msgs"] == N_A  # one X per bar while both last
        assert r["test_requests"] == N_A and r["hb_bar"] == N_A and r["barrier_late"] == 0
        assert r["y_unknown"] == 1 and s["unknown_symbols"] == "1"
        assert r["rejects"] >= 1  # BBB's first order: no priced bar yet (103=2)
        assert int(s["rejects"]) == r["rejects"] + 4  # + the --bad cases answered with 150=8
        assert s["session_rejects"] == "3" and s["business_rejects"] == "1"
        assert s["dup_clordid"] == "1" and s["cancels"] == "1"
        assert s["barrier_acks"] == str(N_A)


def test_lockstep_without_dictionary():
    """QuickFIX with UseDataDictionary=N takes no repeated tag, so the venue
    sends one entry per X (--entries-per-x 1)."""
    need_trader()
    with tempfile.TemporaryDirectory() as tmp:
        r, _ = run_one(tmp, venue_args=["--entries-per-x", "1"], dictionary=False)
        assert r["x_msgs"] == N_A + N_B


def test_fault_disconnect():
    need_trader()
    with tempfile.TemporaryDirectory() as tmp:
        r, s = run_one(tmp, venue_args=["--fault", "disconnect:40"],
                       trader_args=["--expect-reconnect"])
        assert r["logons"] == 2 and s["logons"] == "2"
        assert s["faults_disconnect"] == "1"


def test_fault_gap():
    need_trader()
    with tempfile.TemporaryDirectory() as tmp:
        r, s = run_one(tmp, venue_args=["--fault", "gap:30", "--fault", "gap:200"])
        assert s["faults_gap"] == "2"


def test_fault_reject():
    need_trader()
    with tempfile.TemporaryDirectory() as tmp:
        r, s = run_one(tmp, venue_args=["--fault", "reject:4"], trader_args=["--allow-injected"])
        assert r["injected"] >= 10 and s["faults_reject"] == str(r["injected"])


def test_fault_slow_with_a_flood():
    """The venue stops reading for 1.5 s after bar 20 while the trader sends
    20,000 orders at that bar (several MB: its send window fills); every
    one fills at bar 20's close, and the barrier holds throughout."""
    need_trader()
    with tempfile.TemporaryDirectory() as tmp:
        r, s = run_one(tmp, venue_args=["--fault", "slow:20:1500"],
                       trader_args=["--burst", "20:20000"])
        assert s["faults_slow"] == "1"
        assert r["fills"] >= 20000
        with open(os.path.join(tmp, "fills.csv")) as f:
            at20 = sum(1 for row in csv.DictReader(f) if row["bar"] == "20")
        assert at20 >= 20000


def test_fault_hasty_is_caught_by_the_trader():
    """A venue that sends bar 31 right after bar 30's TestRequest, without
    waiting for the Heartbeat: the QuickFIX trader's barrier check (the
    venue's own SendingTimes, a few ms of held-back Heartbeat between
    them) says so, for that bar alone: the venue sends bar 31 in the call
    that sent the TestRequest, so nothing here rests on timing."""
    need_trader()
    with tempfile.TemporaryDirectory() as tmp:
        datasets(tmp)
        v = Venue(tmp, "--fault", "hasty:30")
        p, res = trader(tmp, v.port)
        rc, err, r = finish(p, res)
        vrc, summ = v.wait()
        assert vrc == 0, v.stderr()
        assert summ["faults_hasty"] == "1", summ
        # Bar 31 of each symbol (the orders of bar 30 then fill at bar 31's
        # close, which the trader also reports).
        late = [x for x in err.splitlines() if "after TestRequest" in x]
        assert rc != 0 and r["barrier_late"] == 2 == len(late), (rc, r, err[-2000:])
        assert all(f"{sym} bar 31 sent" in x and "after TestRequest bar-30" in x
                   for sym, x in zip(("AAA", "BBB"), sorted(late))), late
        assert r["bars_AAA"] == N_A and r["bars_BBB"] == N_B


def test_paced():
    need_trader()
    with tempfile.TemporaryDirectory() as tmp:
        # 800 ticks/s over two symbols: 400 bars/s; --busy over kernel TCP.
        r, s = run_one(tmp, venue_args=["--rate", "800", "--busy"], trader_args=["--paced"])
        assert r["test_requests"] == 0
        assert float(s["pace_lag_max_us"]) >= 0 and int(s["pace_held"]) >= 0


def test_two_sessions_share_the_barrier():
    need_trader()
    with tempfile.TemporaryDirectory() as tmp:
        data = datasets(tmp)
        v = Venue(tmp, "--sessions", "2")
        p1, r1 = trader(tmp, v.port, sender="QF1")
        p2, r2 = trader(tmp, v.port, sender="QF2", extra=["--every", "3"])
        a = finish(p1, r1)
        b = finish(p2, r2)
        vrc, s = v.wait()
        for rc, err, r in (a, b):
            assert rc == 0, err[-3000:] + v.stderr()
            assert r["errors"] == 0 and r["bars_AAA"] == N_A and r["barrier_late"] == 0
        assert vrc == 0 and s["sessions"] == "2"
        assert check_fills_log(v.fills, data, {"QF1", "QF2"}) == a[2]["fills"] + b[2]["fills"]


def test_sigterm_closes_and_logs_out():
    need_trader()
    with tempfile.TemporaryDirectory() as tmp:
        datasets(tmp)
        v = Venue(tmp, "--rate", "20")  # 15 s of bars: stopped long before the end
        p, res = trader(tmp, v.port, extra=["--paced", "--partial"])
        deadline = time.monotonic() + 60
        while "bars start" not in v.stderr() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        v.proc.send_signal(signal.SIGTERM)
        rc, err, r = finish(p, res)
        vrc, s = v.wait()
        assert vrc == 0, v.stderr()
        assert rc == 0, err[-3000:]
        assert r["closed"] == 1 and 0 < r["bars_AAA"] < N_A
        assert r["unanswered"] <= 2  # orders in flight when the venue logged out
        assert "logged out" in v.stderr()


def test_idle_and_pre_logon_connections_are_closed():
    with tempfile.TemporaryDirectory() as tmp:
        datasets(tmp)
        v = Venue(tmp, "--logon-timeout", "1", "--end-timeout", "1")
        # Silence: closed after the Logon timeout.
        idle = socket.create_connection(("127.0.0.1", v.port))
        idle.settimeout(30)
        assert idle.recv(100) == b""  # counted as idle_closed below
        # An order before any Logon: closed at once, nothing answered.
        body = "35=D\x0149=X\x0156=VENUE\x0134=1\x0152=20260101-00:00:00\x0111=1\x01"
        msg = f"8=FIX.4.4\x019={len(body)}\x01{body}"
        msg += "10=%03d\x01" % (sum(msg.encode()) % 256)
        d = socket.create_connection(("127.0.0.1", v.port))
        d.settimeout(30)
        d.sendall(msg.encode())
        assert d.recv(100) == b""
        # Garbage: dropped, counted, then closed for want of a Logon.
        g = socket.create_connection(("127.0.0.1", v.port))
        g.settimeout(30)
        g.sendall(b"GET / HTTP/1.0\r\n\r\n")
        assert g.recv(100) == b""
        v.proc.send_signal(signal.SIGTERM)
        vrc, s = v.wait()
        assert vrc == 0
        assert s["idle_closed"] == "2" and s["pre_logon"] == "1"
        assert int(s["garbled_bytes"]) == 18


@pytest.mark.parametrize("args,needle", [
    ([], "--listen"),
    (["--listen", "0"], "--data"),
    (["--listen", "0", "--data", "AAA"], "SYM=FILE"),
    (["--listen", "0", "--data", "AAA=missing.npy"], "missing.npy"),
    (["--listen", "0", "--data", "AAA=a.npy,AAA=a.npy"], "twice"),
    (["--listen", "0", "--data", "AAA=a.npy", "--fault", "gap"], "fault"),
    (["--listen", "0", "--data", "AAA=a.npy", "--fault", "slow:1:0"], "MS"),
    (["--listen", "0", "--data", "AAA=a.npy", "--rate", "10", "--lockstep"], "exclude"),
    (["--listen", "0", "--data", "AAA=a.npy", "--rate", "-1"], "--rate"),
    (["--listen", "0", "--data", "AAA=a.npy", "--rate", "0.5"], "ticks/s"),
    (["--listen", "99999", "--data", "AAA=a.npy"], "--listen"),
    (["--listen", "0", "--data", "AAA=a.npy", "--sender", "a/b"], "CompID"),
    (["--listen", "0", "--data", "AAA=a.npy", "--ip", "10.0.0.1"], "--port"),
    (["--listen", "0", "--data", "AAA=a.npy", "--port", "af_packet:lo"], "--ip"),
    (["--listen", "0", "--data", "AAA=a.npy", "--bogus", "1"], "unknown option"),
    (["--listen", "0", "--data", "AAA=bad.csv"], "bad.csv"),
])
def test_bad_arguments(args, needle):
    with tempfile.TemporaryDirectory() as tmp:
        datasets(tmp)
        with open(os.path.join(tmp, "bad.csv"), "w") as f:
            f.write("close\n1.5\nnot-a-number\n")
        p = subprocess.run([TICKWIRE, "exchange"] + args, cwd=tmp, capture_output=True,
                           text=True, timeout=30)
        assert p.returncode == 2, p.stderr
        assert p.stdout == ""  # nothing listened
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], p.stderr
