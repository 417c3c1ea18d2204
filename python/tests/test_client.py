"""tickwire.client against a running `tickwire serve`: every transport gives
the in-process kernel's exact results; error frames raise EngineError with
the server's message and keep the connection usable (except BAD_FRAME)."""

import os
import signal
import socket
import struct
import subprocess
import tempfile
import time

import numpy as np
import pytest

import tickwire
from tickwire.client import Client, EngineError


@pytest.fixture(scope="module")
def server(tickwire_bin):
    if not tickwire_bin:
        pytest.skip("no tickwire program built (set TICKWIRE_BIN)")
    d = tempfile.mkdtemp(prefix="tw-client-test-")
    sock = os.path.join(d, "engine.sock")
    p = subprocess.Popen([tickwire_bin, "serve", "--unix", sock, "--tcp", "0",
                          "--max-bars", "1000000"],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    port = None
    while port is None:
        line = p.stderr.readline()
        if not line:
            p.kill()
            pytest.fail("server exited before listening")
        if "tcp:" in line:
            port = int(line.rsplit(":", 1)[1])
    addrs = {"unix": f"unix:{sock}", "tcp": f"tcp:127.0.0.1:{port}", "shm": f"shm:{sock}",
             "spawn": f"spawn:{tickwire_bin}"}
    yield addrs
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == 0
    assert not os.path.exists(sock), "socket file left after SIGTERM"
    os.rmdir(d)


@pytest.fixture(scope="module")
def data():
    close = tickwire.gen_closes(4000, seed=7)
    combos = np.array([tickwire.combo_from_length(L) for L in (6, 20, 50, 120)], dtype=np.int64)
    pnl, trades = tickwire.sweep(close, combos, threads=1)
    return close, combos, np.asarray(pnl), np.asarray(trades)


TRANSPORTS = ["unix", "tcp", "shm", "spawn"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_roundtrips(server, data, transport):
    close, combos, pnl_ref, trades_ref = data
    with Client(server[transport]) as c:
        x = np.array([42.0])
        assert c.echo(x).tolist() == [42.0]
        big = np.random.default_rng(1).random(150_000) + 1
        assert np.array_equal(c.echo(big), big)
        assert c.echo(np.empty(0)).size == 0
        pnl, trades = c.sweep(close, combos)
        assert np.array_equal(pnl, pnl_ref) and np.array_equal(trades, trades_ref)
        ds = c.load(close)
        pnl, trades = c.sweep_loaded(ds, combos)
        assert np.array_equal(pnl, pnl_ref) and np.array_equal(trades, trades_ref)
        c.drop(ds)
        with pytest.raises(EngineError) as e:
            c.sweep_loaded(ds, combos)
        assert e.value.name == "NO_DATASET" and "unknown dataset" in e.value.message
        if transport in ("unix", "shm"):
            ds = c.load_memfd(close)
            pnl, trades = c.sweep_loaded(ds, combos)
            assert np.array_equal(pnl, pnl_ref)
            c.drop(ds)
        info = c.info()
        assert "counters" in info and info["limits"]["max_bars"] > 0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_errors_keep_connection(server, data, transport):
    close, combos, _, _ = data
    with Client(server[transport]) as c:
        bad = combos.copy()
        bad[0, 5] = 0
        with pytest.raises(EngineError) as e:
            c.sweep(close, bad)
        assert e.value.code == 3 and "outside" in e.value.message
        neg = close.copy()
        neg[3] = -1.0
        with pytest.raises(EngineError) as e:
            c.sweep(neg, combos)
        assert e.value.name == "BAD_PARAMS"
        assert c.echo(np.array([1.0, 2.0])).tolist() == [1.0, 2.0]


def test_too_large_keeps_connection(server):
    with Client(server["unix"]) as c:
        with pytest.raises(EngineError) as e:
            c.echo(np.ones(1_000_001))
        assert e.value.name == "TOO_LARGE"
        assert c.echo(np.array([3.0])).tolist() == [3.0]


def test_bad_frame_closes(server):
    s = socket.socket(socket.AF_UNIX)
    s.connect(server["unix"][5:])
    s.sendall(struct.pack("<IB", 1, 99))
    hdr = s.recv(4)
    (length,) = struct.unpack("<I", hdr)
    assert length & 0x80000000
    body = b""
    while len(body) < length & 0x7FFFFFFF:
        body += s.recv(4096)
    assert struct.unpack_from("<H", body)[0] == 1 and b"unknown opcode" in body
    assert s.recv(1) == b""
    s.close()
    with Client(server["unix"]) as c:
        assert c.echo(np.array([5.0])).tolist() == [5.0]


def test_inputs_converted_without_copy_semantics(server, data):
    close, combos, pnl_ref, _ = data
    with Client(server["unix"]) as c:
        # Lists, float32 and a flat combo array are accepted and converted.
        pnl, _ = c.sweep(close.tolist(), combos.reshape(-1))
        assert np.array_equal(pnl, pnl_ref)
        with pytest.raises(ValueError):
            c.sweep(close, np.ones(7, dtype=np.int64))


def test_bad_address():
    with pytest.raises(ValueError):
        Client("carrier-pigeon:/x")


def test_spawn_serve_args(server, data):
    """serve_args reach the spawned `serve --stdio`: INFO reports them, and
    the limit they set is enforced."""
    close, combos, pnl_ref, trades_ref = data
    exe = server["spawn"][len("spawn:"):]
    with Client(server["spawn"], serve_args=["--threads", "1", "--max-bars", "5000"]) as c:
        info = c.info()
        assert info["threads"] == 1
        assert info["limits"]["max_bars"] == 5000
        pnl, trades = c.sweep(close, combos)
        assert np.array_equal(pnl, pnl_ref) and np.array_equal(trades, trades_ref)
        with pytest.raises(EngineError) as e:
            c.echo(np.ones(5001))
        assert e.value.name == "TOO_LARGE"
    # Without serve_args the defaults stand.
    with Client(server["spawn"]) as c:
        assert c.info()["limits"]["max_bars"] != 5000
    # Tuples work too; misuse is refused before anything is spawned.
    with Client("spawn:" + exe, serve_args=("--threads", "2")) as c:
        assert c.info()["threads"] == 2
    with pytest.raises(TypeError):
        Client(server["spawn"], serve_args="--threads 1")
    with pytest.raises(TypeError):
        Client(server["spawn"], serve_args=["--threads", 1])
    with pytest.raises(ValueError):
        Client(server["unix"], serve_args=["--threads", "1"])
    # A bad option makes the child exit: the first call says so.
    with Client(server["spawn"], serve_args=["--no-such-option"]) as c:
        with pytest.raises(ConnectionError):
            c.echo(np.ones(3))


def test_study_client_unchanged(server, data):
    """The study's own client code (seed 000, build_request verbatim) works
    against this server for opcodes 0 and 1."""
    close, combos, pnl_ref, trades_ref = data

    def build_request(opcode, close, params):
        body = bytes([opcode]) + struct.pack("<II", len(close), len(params))
        body += close.astype("<f8").tobytes()
        body += np.asarray(params, dtype="<i8").reshape(-1).tobytes()
        return struct.pack("<I", len(body)) + body

    def recv_exact(s, n):
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            assert chunk, "server closed"
            buf += chunk
        return buf

    s = socket.socket(socket.AF_UNIX)
    s.connect(server["unix"][5:])
    s.sendall(build_request(0, close, combos.tolist()))
    (n,) = struct.unpack("<I", recv_exact(s, 4))
    body = recv_exact(s, n)
    k = len(combos)
    assert n == 16 * k
    assert np.array_equal(np.frombuffer(body[:8 * k], "<f8"), pnl_ref)
    assert np.array_equal(np.frombuffer(body[8 * k:], "<i8"), trades_ref)
    s.sendall(build_request(1, close, []))
    (n,) = struct.unpack("<I", recv_exact(s, 4))
    assert np.array_equal(np.frombuffer(recv_exact(s, n), "<f8"), close)
    s.close()


# ---- KSWEEP: any kernel by name --------------------------------------------

@pytest.mark.parametrize("transport", ["unix", "tcp", "shm", "spawn"])
def test_ksweep_zscore(server, data, transport):
    close = data[0] if isinstance(data, tuple) else data
    close = np.ascontiguousarray(close, dtype=np.float64)
    g = tickwire.grid(window=[2, 20, 60], entry=[1.5, 2.0], exit=[0.0, 0.5])
    local = tickwire.sweep(close, g, kernel="zscore")
    with Client(server[transport]) as c:
        for stats in (False, True):
            r = c.ksweep("zscore", close, g, stats=stats)
            assert np.array_equal(r["pnl"].view(np.int64), local["pnl"].view(np.int64))
            assert np.array_equal(r["trades"], local["trades"])
            if stats:
                for f in ("wins", "max_drawdown", "exposure", "final_position"):
                    assert np.array_equal(r[f], local[f]), f
        ds = c.load(close)
        r = c.ksweep("zscore", ds, g.to_pandas()[["exit", "entry", "window"]], stats=True)
        assert np.array_equal(r["max_drawdown"], local["max_drawdown"])
        hma = c.ksweep("hma_sar", ds, tickwire.default_grid()[:3].astype(np.float64))
        pnl, trades = c.sweep_loaded(ds, tickwire.default_grid()[:3])
        assert np.array_equal(hma["pnl"], pnl) and np.array_equal(hma["trades"], trades)
        with pytest.raises(EngineError, match="no kernel named"):
            c.ksweep("nope", ds, [(1.0,)])
        with pytest.raises(EngineError, match="window"):
            c.ksweep("zscore", ds, [(1.0, 2.0, 0.5)])
        with pytest.raises(EngineError, match="lacks exit"):
            c.ksweep("zscore", ds, tickwire.grid(window=[20], entry=[2.0]))
        c.drop(ds)
        kernels = {k["name"]: k for k in c.info()["kernels"]}
        assert kernels["zscore"]["params"] == ["window", "entry", "exit"]


def _build_donchian(tmp):
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    src = os.path.join(root, "examples", "kernels", "donchian.c")
    if not os.path.exists(src):
        pytest.skip("examples/kernels/donchian.c not in this tree")
    out = os.path.join(tmp, "libdonchian.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-I", os.path.join(root, "include"), src,
                    "-o", out], check=True)
    return out


def test_serve_preloads_plugin(tickwire_bin, tmp_path, data):
    if not tickwire_bin:
        pytest.skip("no tickwire program built (set TICKWIRE_BIN)")
    so = _build_donchian(str(tmp_path))
    close = np.ascontiguousarray(data[0] if isinstance(data, tuple) else data, dtype=np.float64)
    local = tickwire.sweep(close, [(10.0,), (40.0,)], kernel=so)
    with Client(f"spawn:{tickwire_bin}", serve_args=["--kernel", so]) as c:
        names = {k["name"]: k for k in c.info()["kernels"]}
        assert "donchian" in names and names["donchian"]["source"] == so
        for name in (so, "donchian"):
            r = c.ksweep(name, close, [(10.0,), (40.0,)], stats=True)
            assert np.array_equal(r["pnl"], local["pnl"]) and np.array_equal(r["trades"], local["trades"])
            assert np.array_equal(r["exposure"], local["exposure"])
    # Not preloaded: refused, whatever the path.
    with Client(f"spawn:{tickwire_bin}") as c:
        with pytest.raises(EngineError, match="no kernel named"):
            c.ksweep(so, close, [(10.0,)])
    # A --kernel that cannot be loaded stops serve at start, naming it.
    p = subprocess.run([tickwire_bin, "serve", "--stdio", "--kernel", str(tmp_path / "nope.so")],
                       input=b"", capture_output=True, timeout=60)
    assert p.returncode != 0 and b"nope.so" in p.stderr
