"""Interop of tickwire's FIX session with QuickFIX 1.15 on loopback.

Our side is tests/fix_interop/tw_fix_peer.c (tw_fix_session over kernel
TCP with the crash-safe store); the other side is qf_acceptor /
qf_initiator, built against Debian's libquickfix.  The QuickFIX side counts
ClOrdIDs (or ExecutionReports) so that "no order lost, none executed twice
as new" is checked by the counterparty, not by ourselves.

Waiting here is bounded by generous timeouts that only end a broken run;
no assertion depends on how fast anything is.
"""
import os
import signal
import socket
import subprocess
import tempfile

import pytest

BUILD = os.environ.get("TICKWIRE_BUILD", "build")
BIN = os.path.join(BUILD, "tests", "fix_interop")
N = 10000


def exe(name):
    p = os.path.join(BIN, name)
    if not os.path.exists(p):
        pytest.skip(f"{p} not built (QuickFIX missing?)")
    return p


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def results(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, v = line.split()
            out[k] = int(v)
    return out


def wait_listening(proc, word="listening"):
    line = proc.stdout.readline()
    assert word in line, f"peer did not start: {line!r}"


class QfAcceptor:
    def __init__(self, tmp, gap_at=0, begin="FIX.4.4"):
        self.res = os.path.join(tmp, "qf_acceptor.res")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [exe("qf_acceptor"), str(self.port), self.res, str(gap_at), begin],
            stdout=subprocess.PIPE, text=True, cwd=tmp)
        wait_listening(self.proc)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=60) == 0
        return results(self.res)


def run_peer(tmp, args, name="peer", timeout=300):
    res = os.path.join(tmp, name + ".res")
    p = subprocess.run([exe("tw_fix_peer")] + args + ["--results", res],
                       cwd=tmp, timeout=timeout, capture_output=True, text=True)
    return p, (results(res) if os.path.exists(res) else None)


def check_counts(qf, n):
    # Every ClOrdID 1..n arrived, none twice as new.
    assert qf["max_clordid"] == n
    assert qf["missing"] == 0
    assert qf["dup_new"] == 0


def test_our_initiator_vs_quickfix_acceptor():
    with tempfile.TemporaryDirectory() as tmp:
        qf = QfAcceptor(tmp)
        try:
            p, r = run_peer(tmp, ["--initiator", "--port", str(qf.port), "--store",
                                  os.path.join(tmp, "tw.store"), "--orders", str(N),
                                  "--hb", "2", "--idle", "5"])
        finally:
            c = qf.stop()
        assert p.returncode == 0, p.stderr[-2000:]
        check_counts(c, N)
        assert c["orders_new"] == N and c["orders_possdup"] == 0
        assert r["acked_run"] == N and r["logged_out"] == 1
        # Idle 5 s with HeartBtInt=2: heartbeats flowed.
        assert r["heartbeats_sent"] >= 1
        assert r["rejects_sent"] == 0 and r["rejects_rcvd"] == 0 and r["garbled"] == 0


@pytest.mark.parametrize("begin", ["FIX.4.4", "FIX.4.2"])
def test_gap_on_each_side_initiator(begin):
    with tempfile.TemporaryDirectory() as tmp:
        qf = QfAcceptor(tmp, gap_at=3000, begin=begin)
        try:
            p, r = run_peer(tmp, ["--initiator", "--port", str(qf.port), "--store",
                                  os.path.join(tmp, "tw.store"), "--orders", str(N),
                                  "--gap-at", "6000", "--begin", begin])
        finally:
            c = qf.stop()
        assert p.returncode == 0, p.stderr[-2000:]
        check_counts(c, N)
        assert c["orders_new"] == N
        # Every ExecutionReport reached us, the ones behind the gap as resends.
        assert r["acked_run"] == N and r["logged_out"] == 1
        # QuickFIX's gap: we asked for a resend.  Ours: QuickFIX asked, and
        # we answered with a GapFill.
        assert r["resend_requests_sent"] >= 1
        assert r["resend_requests_rcvd"] >= 1 and r["gap_fills_sent"] >= 1
        assert r["rejects_rcvd"] == 0


@pytest.mark.parametrize("mode", [[], ["--mmap"]], ids=["pwritev", "mmap"])
def test_kill9_and_resume(mode):
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "tw.store")
        qf = QfAcceptor(tmp)
        try:
            p1, _ = run_peer(tmp, ["--initiator", "--port", str(qf.port), "--store", store,
                                   "--orders", str(N), "--die-at", "4000"] + mode, name="first")
            assert p1.returncode == -signal.SIGKILL, p1.stderr[-2000:]
            p2, r = run_peer(tmp, ["--initiator", "--port", str(qf.port), "--store", store,
                                   "--orders", str(N)] + mode, name="second")
        finally:
            c = qf.stop()
        assert p2.returncode == 0, p2.stderr[-2000:]
        # Resumed after the last stored order, which was stored but never
        # sent: QuickFIX got it only as a PossDup resend.  Orders the first
        # run wrote just before it died may be lost with its socket too
        # (killed with unread data, the kernel resets the connection and
        # drops what it had not yet transmitted): QuickFIX then asks for
        # them and gets them as PossDup resends, never twice as new.
        assert r["run_first_id"] == 4001
        check_counts(c, N)
        assert c["orders_new"] <= N - 1
        assert c["orders_new"] + c["orders_possdup"] >= N
        assert c["orders_possdup"] >= 1
        assert c["logons"] == 2
        assert r["msgs_resent"] >= 1


@pytest.mark.parametrize("begin", ["FIX.4.4", "FIX.4.2"])
def test_quickfix_initiator_vs_our_acceptor(begin):
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        peer = subprocess.Popen(
            [exe("tw_fix_peer"), "--acceptor", "--port", str(port), "--store",
             os.path.join(tmp, "tw.store"), "--gap-at", "5000", "--begin", begin, "--results",
             os.path.join(tmp, "peer.res")],
            cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        qlog = os.path.join(tmp, "qflog")
        try:
            wait_listening(peer)
            qres = os.path.join(tmp, "qf_initiator.res")
            q = subprocess.run([exe("qf_initiator"), str(port), qres, str(N), "2500", "5", "2",
                                begin],
                               cwd=tmp, timeout=300, capture_output=True, text=True,
                               env=dict(os.environ, TW_QF_LOG=qlog))
            assert peer.wait(timeout=60) == 0
        finally:
            if peer.poll() is None:
                peer.kill()
                peer.wait()
        # Should the run stall: what both sides said, the peer's events and
        # QuickFIX's last messages and session events.
        said = [q.stderr[-2000:]]
        if q.returncode != 0:
            said.append("peer: " + peer.stderr.read()[-3000:])
            for n in sorted(os.listdir(qlog)) if os.path.isdir(qlog) else []:
                if n.startswith("FIX"):
                    with open(os.path.join(qlog, n), errors="replace") as f:
                        said.append(f"{n}: ..." + "".join(f.readlines()[-30:]))
        assert q.returncode == 0, "\n".join(said)
        c = results(qres)
        r = results(os.path.join(tmp, "peer.res"))
        assert c["done"] == 1 and c["missing"] == 0 and c["dup_new"] == 0
        assert c["ers_new"] == N
        assert r["orders_rcvd"] >= N and r["logged_out"] == 1
        # QuickFIX's gap at order 2500: we asked for a resend; ours at 5000:
        # QuickFIX asked and we gap-filled.
        assert r["resend_requests_sent"] >= 1
        assert r["resend_requests_rcvd"] >= 1 and r["gap_fills_sent"] >= 1
        # QuickFIX idled 5 s at HeartBtInt=2: our heartbeats reached it.
        assert c["heartbeats_rcvd"] >= 1
        assert r["rejects_rcvd"] == 0


def test_quickfix_initiator_vs_our_acceptor_kill9():
    """Our acceptor dies (SIGKILL) once the ExecutionReport for order 4000
    is stored but before it is sent; it restarts from the store on the same
    port, QuickFIX reconnects, and every order gets exactly one fill: the
    lost report arrives as a PossDup resend, orders QuickFIX resends are
    recognised from the stored reports and not filled again."""
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        store = os.path.join(tmp, "tw.store")
        first = subprocess.Popen(
            [exe("tw_fix_peer"), "--acceptor", "--port", str(port), "--store", store,
             "--die-at", "4000"],
            cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        wait_listening(first)
        qres = os.path.join(tmp, "qf_initiator.res")
        q = subprocess.Popen([exe("qf_initiator"), str(port), qres, str(N), "0", "0", "5"],
                             cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
        second = None
        try:
            assert first.wait(timeout=120) == -signal.SIGKILL
            second = subprocess.Popen(
                [exe("tw_fix_peer"), "--acceptor", "--port", str(port), "--store", store,
                 "--results", os.path.join(tmp, "peer.res")],
                cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            assert q.wait(timeout=300) == 0, q.stderr.read()[-2000:]
            assert second.wait(timeout=60) == 0
        finally:
            for p in (first, q, second):
                if p is not None and p.poll() is None:
                    p.kill()
                    p.wait()
        c = results(qres)
        assert c["done"] == 1 and c["missing"] == 0 and c["dup_new"] == 0
        assert c["ers_new"] == N - 1 and c["ers_possdup"] >= 1
        assert c["logons"] == 2
