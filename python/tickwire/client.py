"""Client of the tickwire engine server (wire.md), numpy arrays in and out.

    from tickwire.client import Client
    with Client("unix:/tmp/engine.sock") as c:       # or tcp:HOST:PORT, spawn:EXE, shm:PATH
        pnl, trades = c.sweep(close, combos)          # close: float64[n], combos: int64[k, 6]
        ds = c.load(close)                            # ship the data once ...
        pnl, trades = c.sweep_loaded(ds, combos)      # ... then parameters only
        c.drop(ds)
        echoed = c.echo(close)
        print(c.info()["counters"])

Transports:
  unix:PATH        Unix socket, pure Python
  tcp:HOST:PORT    TCP with TCP_NODELAY, pure Python
  spawn:EXE        runs `EXE serve --stdio` as a child (pipes), pure Python;
                   the child lives until close().  Extra `serve` options go
                   in serve_args, e.g.
                   Client("spawn:/path/tickwire", serve_args=["--threads", "1"])
  shm:PATH         shared-memory rings set up over the Unix socket at PATH,
                   through the C client in libtickwire (ctypes)

Arrays go into the frame without per-element work: the request is one
gathered write (os.writev of the header and the arrays' buffers) and the
reply is read with os.readv straight into the result arrays.

Errors: an error frame from the server raises EngineError (with .code, the
wire.md code, .name and the server's message); a transport failure raises
ConnectionError.  After BAD_FRAME or a transport failure the server has
closed the connection and the client refuses further calls.
"""

import ctypes
import json
import os
import socket
import struct
import subprocess

import numpy as np

__all__ = ["Client", "EngineError", "ERROR_NAMES", "OP"]

# wire.md opcodes and error codes (include/tickwire/wire.h).
OP = {"sweep": 0, "echo": 1, "load": 2, "sweep_loaded": 3, "drop": 4, "info": 5, "load_fd": 6,
      "ksweep": 7}
KSWEEP_LOADED = 0x01
KSWEEP_STATS = 0x02
ERROR_NAMES = {1: "BAD_FRAME", 2: "TOO_LARGE", 3: "BAD_PARAMS", 4: "NO_DATASET", 5: "BUSY",
               6: "INTERNAL"}
_ERROR_BIT = 0x80000000
_LEN_MASK = 0x7FFFFFFF
_TW_EWIRE = 2000

_sweep_hdr = struct.Struct("<IBII")         # len, opcode, n_bars, n_combos
_load_hdr = struct.Struct("<IBI")           # len, opcode, n_bars
_sweep_loaded_hdr = struct.Struct("<IBQI")  # len, opcode, dataset, n_combos
_drop_hdr = struct.Struct("<IBQ")           # len, opcode, dataset
# len, opcode, flags, name_len, n_params, dataset, n_bars, n_combos
_ksweep_hdr = struct.Struct("<IBBBBQII")
_u32 = struct.Struct("<I")
_u64 = struct.Struct("<Q")


class _KOut(ctypes.Structure):
    # Mirrors `tw_client_kout` in client.h.
    _fields_ = [(f, ctypes.c_void_p) for f in ("pnl", "trades", "wins", "max_drawdown",
                                               "exposure", "final_position")]


class EngineError(Exception):
    """An error frame from the engine: .code (1..6), .name, .message."""

    def __init__(self, code, message):
        self.code = code
        self.name = ERROR_NAMES.get(code, "UNKNOWN")
        self.message = message
        super().__init__(f"{self.name}: {message}")


def _f64(a):
    # No copy when the array is already little-endian float64 and contiguous.
    return np.ascontiguousarray(a, dtype="<f8").reshape(-1)


def _combos(a):
    c = np.ascontiguousarray(a, dtype="<i8")
    if c.ndim == 1:
        if c.size % 6:
            raise ValueError(f"combos: {c.size} windows is not a multiple of 6")
        c = c.reshape(-1, 6)
    if c.ndim != 2 or c.shape[1] != 6:
        raise ValueError(f"combos must have shape (k, 6), got {c.shape}")
    return c


class _Closing:
    """`with` support and close-on-collect for a class with a close() that
    may be called more than once (Client here, the study's CClient)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Client(_Closing):
    """One connection to an engine; not for concurrent use from several threads."""

    def __init__(self, address, ring_bytes=0, serve_args=None):
        """address: unix:PATH, tcp:HOST:PORT, spawn:EXE or shm:PATH.
        ring_bytes: shm only, the capacity wanted for each ring (0: 4 MiB).
        serve_args: spawn only, extra arguments appended to `EXE serve
        --stdio` (a sequence of strings, e.g. ["--threads", "1"])."""
        if serve_args is not None:
            if isinstance(serve_args, (str, bytes)) or not all(
                    isinstance(a, str) for a in serve_args):
                raise TypeError("serve_args must be a sequence of strings, e.g. "
                                "['--threads', '1']")
            serve_args = list(serve_args)
            if not address.startswith("spawn:"):
                raise ValueError("serve_args is only for spawn: addresses")
        self.address = address
        self._rfd = self._wfd = -1
        self._sock = None
        self._proc = None
        self._c = None
        self._broken = False
        self._hdr4 = bytearray(4)
        kind, _, rest = address.partition(":")
        self.transport = kind
        if kind == "unix":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(rest)
            self._sock = s
        elif kind == "tcp":
            host, _, port = rest.rpartition(":")
            s = socket.create_connection((host or "127.0.0.1", int(port)))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sock = s
        elif kind == "spawn":
            self._proc = subprocess.Popen([rest, "serve", "--stdio", *(serve_args or [])],
                                          stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, bufsize=0)
            self._wfd = self._proc.stdin.fileno()
            self._rfd = self._proc.stdout.fileno()
        elif kind == "shm":
            self._c = _CClient(rest, ring_bytes)
        else:
            raise ValueError(f"bad address {address!r} (unix:PATH, tcp:HOST:PORT, spawn:EXE, "
                             "shm:PATH)")
        if self._sock is not None:
            self._rfd = self._wfd = self._sock.fileno()

    # ---- plumbing -------------------------------------------------------

    def _write(self, bufs):
        if self._broken:
            raise ConnectionError("connection closed after an earlier error")
        try:
            sent = os.writev(self._wfd, bufs)
        except OSError as e:
            self._broken = True
            raise ConnectionError(f"sending to the engine: {e}") from None
        self._write_rest(bufs, sent)

    def _write_rest(self, bufs, sent):
        """Finishes a gathered write that the kernel took only part of."""
        views = [memoryview(b).cast("B") for b in bufs]
        views = [v for v in views if len(v)]
        try:
            while True:
                while views and sent >= len(views[0]):
                    sent -= len(views[0])
                    views.pop(0)
                if not views:
                    return
                views[0] = views[0][sent:]
                sent = os.writev(self._wfd, views)
        except OSError as e:
            self._broken = True
            raise ConnectionError(f"sending to the engine: {e}") from None

    def _readv_exact(self, bufs):
        views = [memoryview(b).cast("B") for b in bufs if len(b)]
        while views:
            try:
                n = os.readv(self._rfd, views)
            except OSError as e:
                self._broken = True
                raise ConnectionError(f"reading from the engine: {e}") from None
            if n == 0:
                self._broken = True
                raise ConnectionError("the engine closed the connection")
            while n and views:
                if n >= len(views[0]):
                    n -= len(views[0])
                    views.pop(0)
                else:
                    views[0] = views[0][n:]
                    n = 0

    def _reply(self, outs, expect):
        """Reads one reply of `expect` body bytes into outs (1-D arrays) with
        the prefix in the same readv; raises EngineError for an error frame."""
        hdr = self._hdr4
        bufs = [hdr]
        bufs.extend(o for o in outs if o.nbytes)
        try:
            n = os.readv(self._rfd, bufs)
        except OSError as e:
            self._broken = True
            raise ConnectionError(f"reading from the engine: {e}") from None
        if n == 4 + expect and _u32.unpack(hdr)[0] == expect:
            return  # the common case: the whole reply in one call
        self._reply_after(n, outs, expect)

    def _reply_after(self, n, outs, expect):
        """Finishes a reply of which a first readv into (prefix, outs...)
        returned n bytes: error frames, short reads, bad lengths."""
        hdr = self._hdr4
        bufs = [hdr]
        bufs.extend(o for o in outs if o.nbytes)
        if n == 0:
            self._broken = True
            raise ConnectionError("the engine closed the connection")
        got = n
        views = [memoryview(b).cast("B") for b in bufs]
        while n and views:
            if n >= len(views[0]):
                n -= len(views[0])
                views.pop(0)
            else:
                views[0] = views[0][n:]
                n = 0
        if got < 4:
            self._readv_exact(views[:1])
            views = views[1:]
            got = 4
        length = _u32.unpack(hdr)[0]
        if length & _ERROR_BIT:
            blen = length & _LEN_MASK
            landed = bytearray()
            have = got - 4
            for o in outs:
                if have <= 0:
                    break
                b = memoryview(o).cast("B")[:have]
                landed += b
                have -= len(b)
            landed = landed[:blen]
            rest = bytearray(blen - len(landed))
            self._readv_exact([rest])
            body = bytes(landed) + bytes(rest)
            code = struct.unpack_from("<H", body)[0]
            if code == 1:
                self._broken = True
            raise EngineError(code, body[2:].decode("utf-8", "replace"))
        if length != expect:
            self._broken = True
            raise ConnectionError(f"reply of {length} bytes where {expect} were expected")
        self._readv_exact(views)

    # ---- operations -----------------------------------------------------

    def echo(self, x):
        """ECHO: the array comes back verbatim (float64)."""
        x = np.ascontiguousarray(x, dtype="<f8")
        if x.ndim != 1:
            x = x.reshape(-1)
        if self._c is not None:
            return self._c.echo(x)
        n = x.size
        out = np.empty(n, dtype="<f8")
        hdr = _sweep_hdr.pack(9 + 8 * n, 1, n, 0)
        if self._broken:
            raise ConnectionError("connection closed after an earlier error")
        try:
            sent = os.writev(self._wfd, (hdr, x))
        except OSError as e:
            self._broken = True
            raise ConnectionError(f"sending to the engine: {e}") from None
        if sent < 13 + 8 * n:
            self._write_rest([hdr, x], sent)
        elif n and n <= 8192:
            # Small echo (the latency path): prefix and body in one readv,
            # inline rather than through _reply, to keep Python's share of
            # the round trip small.
            hdr4 = self._hdr4
            try:
                got = os.readv(self._rfd, (hdr4, out))
            except OSError as e:
                self._broken = True
                raise ConnectionError(f"reading from the engine: {e}") from None
            if got == 4 + 8 * n and _u32.unpack(hdr4)[0] == 8 * n:
                return out
            return self._reply_after(got, [out], 8 * n)
        self._reply([out], 8 * n)
        return out

    def sweep(self, close, combos):
        """SWEEP: every combo over close; returns (pnl float64[k], trades int64[k])."""
        close, combos = _f64(close), _combos(combos)
        if self._c is not None:
            return self._c.sweep(close, combos)
        n, k = close.size, combos.shape[0]
        pnl = np.empty(k, dtype="<f8")
        trades = np.empty(k, dtype="<i8")
        self._write([_sweep_hdr.pack(9 + 8 * n + 48 * k, 0, n, k), close, combos])
        self._reply([pnl, trades], 16 * k)
        return pnl, trades

    def load(self, close):
        """LOAD: ships close once; returns the dataset id."""
        close = _f64(close)
        if self._c is not None:
            return self._c.load(close)
        n = close.size
        out = np.empty(1, dtype="<u8")
        self._write([_load_hdr.pack(5 + 8 * n, 2, n), close])
        self._reply([out], 8)
        return int(out[0])

    def sweep_loaded(self, dataset, combos):
        """SWEEP_LOADED: parameters only, against a loaded dataset."""
        combos = _combos(combos)
        if self._c is not None:
            return self._c.sweep_loaded(dataset, combos)
        k = combos.shape[0]
        pnl = np.empty(k, dtype="<f8")
        trades = np.empty(k, dtype="<i8")
        self._write([_sweep_loaded_hdr.pack(13 + 48 * k, 3, dataset, k), combos])
        self._reply([pnl, trades], 16 * k)
        return pnl, trades

    def _kernel_params(self, name):
        """The param names of kernel `name` as this engine's INFO lists them."""
        cache = getattr(self, "_kparams", None)
        if cache is None:
            cache = self._kparams = {}
            for k in self.info().get("kernels", []):
                cache[k["name"]] = tuple(k["params"])
                if k.get("source") not in (None, "builtin"):
                    cache[k["source"]] = tuple(k["params"])
        if name not in cache:
            raise EngineError(3, f"KSWEEP: the engine has no kernel named {name!r} "
                                 f"(it has {', '.join(sorted(cache))})")
        return cache[name]

    def ksweep(self, kernel, data, grid, *, stats=False):
        """KSWEEP: any kernel the engine has (a built-in, or one it was
        started with by `serve --kernel NAME|PATH`) over closes (an array)
        or a loaded dataset (an int id from load()).  grid: a tickwire.grid,
        a DataFrame (columns by param name, ordered as the engine's INFO
        lists the kernel's params) or rows in the kernel's param order.
        Returns a tickwire.SweepResult: r["pnl"], r["trades"] and with
        stats=True r["wins"], r["max_drawdown"], r["exposure"],
        r["final_position"]."""
        from .kernels import Grid, SweepResult, RESULT_FIELDS, STATS_FIELDS, _RESULT_DTYPE
        name = os.fsencode(os.fspath(kernel)) if not isinstance(kernel, bytes) else kernel
        if not 1 <= len(name) <= 255:
            raise ValueError("ksweep: a kernel name of 1..255 bytes")
        kname = name.decode("utf-8", "replace")
        names = None
        if isinstance(grid, Grid):
            names, vals = grid.names, grid.values
        elif getattr(grid, "columns", None) is not None:
            names, vals = tuple(str(c) for c in grid.columns), grid.to_numpy(dtype=np.float64)
        if names is not None:
            want = self._kernel_params(kname)
            missing = [p for p in want if p not in names]
            extra = [n for n in names if n not in want]
            if missing or extra:
                raise EngineError(3, f"KSWEEP: grid for {kname} ({', '.join(want)}): "
                                     + "; ".join(x for x in (
                                         "lacks " + ", ".join(missing) if missing else "",
                                         "has unknown " + ", ".join(extra) if extra else "") if x))
            params = np.ascontiguousarray(np.asarray(vals, dtype="<f8")[:, [names.index(p) for p in want]])
        else:
            params = np.asarray(grid, dtype="<f8")
            if params.ndim == 1:
                params = params.reshape(1, -1)
            params = np.ascontiguousarray(params)
            want = tuple(f"p{i}" for i in range(params.shape[1])) if params.ndim == 2 else ()
        if params.ndim != 2 or not 1 <= params.shape[1] <= 16:
            raise ValueError(f"ksweep: params must be (k, 1..16), got shape {params.shape}")
        k, npar = params.shape
        flags = KSWEEP_STATS if stats else 0
        if isinstance(data, (int, np.integer)):
            flags |= KSWEEP_LOADED
            close, dataset, n = None, int(data), 0
        else:
            close, dataset = _f64(data), 0
            n = close.size
        if self._c is not None:
            out = self._c.ksweep(name, close, dataset, params, flags)
        else:
            width = 6 if stats else 2
            out = np.empty(width * k, dtype="<f8")
            body = 20 + 8 * n + 8 * k * npar + len(name)
            bufs = [_ksweep_hdr.pack(body, 7, flags, len(name), npar, dataset, n, k)]
            if close is not None:
                bufs.append(close)
            bufs += [params, name]
            self._write(bufs)
            self._reply([out], 8 * width * k)
        res = np.empty(k, dtype=_RESULT_DTYPE)
        res["pnl"] = out[:k]
        res["trades"] = out[k:2 * k].view("<i8")
        res["stopped"] = False
        if stats:
            res["wins"] = out[2 * k:3 * k].view("<i8")
            res["max_drawdown"] = out[3 * k:4 * k]
            res["exposure"] = out[4 * k:5 * k]
            res["final_position"] = out[5 * k:6 * k].view("<i8")
        else:
            for f in ("wins", "max_drawdown", "exposure", "final_position"):
                res[f] = 0
        return SweepResult(kname, Grid(want, params), res, STATS_FIELDS if stats else RESULT_FIELDS)

    def drop(self, dataset):
        """DROP: forgets a dataset."""
        if self._c is not None:
            return self._c.drop(dataset)
        self._write([_drop_hdr.pack(9, 4, dataset)])
        self._reply([], 0)

    def info(self):
        """INFO: the server's version, limits and counters (a dict)."""
        if self._c is not None:
            return self._c.info()
        self._write([struct.pack("<IB", 1, 5)])
        hdr = bytearray(4)
        self._readv_exact([hdr])
        length = _u32.unpack(hdr)[0]
        body = bytearray(length & _LEN_MASK)
        self._readv_exact([body])
        if length & _ERROR_BIT:
            raise EngineError(struct.unpack_from("<H", body)[0], body[2:].decode())
        (jl,) = _u32.unpack_from(body)
        return json.loads(bytes(body[4:4 + jl]))

    def load_fd(self, fd):
        """LOAD_FD: ships a dataset by descriptor (unix and shm only); fd holds
        float64 closes from offset 0.  Returns the dataset id."""
        if self._c is not None:
            return self._c.load_fd(fd)
        if self.transport != "unix":
            raise ValueError("LOAD_FD needs the unix or shm transport")
        socket.send_fds(self._sock, [struct.pack("<IB", 1, 6)], [fd])
        out = np.empty(1, dtype="<u8")
        self._reply([out], 8)
        return int(out[0])

    def load_memfd(self, close):
        """Copies close into a sealed memfd and ships it with LOAD_FD."""
        close = _f64(close)
        fd = os.memfd_create("tickwire-dataset", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, close.nbytes)
            mv = memoryview(close).cast("B")
            off = 0
            while off < len(mv):
                off += os.pwrite(fd, mv[off:], off)
            import fcntl
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                        fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE)
            return self.load_fd(fd)
        finally:
            os.close(fd)

    def close(self):
        """Closes the connection (and waits for a spawned engine)."""
        if self._c is not None:
            self._c.close()
            self._c = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._proc is not None:
            self._proc.stdin.close()
            self._proc.stdout.close()
            self._proc.wait()
            self._proc = None
        self._rfd = self._wfd = -1


class _CClient:
    """The shm transport: libtickwire's C client (include/tickwire/client.h)."""

    def __init__(self, path, ring_bytes):
        from tickwire import _lib

        L = _lib.lib()
        vp, sz, ip = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
        err = ctypes.POINTER(_lib.TwError)
        protos = {
            "tw_client_connect_shm": [ctypes.POINTER(vp), ctypes.c_char_p, ctypes.c_uint32, err],
            "tw_client_close": [vp],
            "tw_client_echo": [vp, vp, sz, vp, err],
            "tw_client_sweep": [vp, vp, sz, vp, sz, vp, vp, err],
            "tw_client_load": [vp, vp, sz, ctypes.POINTER(ctypes.c_uint64), err],
            "tw_client_load_fd": [vp, ip, ctypes.POINTER(ctypes.c_uint64), err],
            "tw_client_sweep_loaded": [vp, ctypes.c_uint64, vp, sz, vp, vp, err],
            "tw_client_drop": [vp, ctypes.c_uint64, err],
            "tw_client_info": [vp, ctypes.c_char_p, sz, err],
            "tw_client_ksweep": [vp, ctypes.c_char_p, vp, sz, ctypes.c_uint64, vp, sz, sz,
                                 ctypes.POINTER(_KOut), err],
        }
        self._f = {}
        for name, args in protos.items():
            fn = getattr(L, name)
            fn.argtypes = args
            fn.restype = None if name == "tw_client_close" else ctypes.c_int
            self._f[name] = fn
        self._err = _lib.TwError()
        self._h = vp()
        rc = self._f["tw_client_connect_shm"](ctypes.byref(self._h), path.encode(), ring_bytes,
                                              ctypes.byref(self._err))
        self._check(rc)

    def _check(self, rc):
        if rc >= 0:
            return rc
        msg = self._err.msg.decode("utf-8", "replace")
        if -rc - _TW_EWIRE in ERROR_NAMES:
            # The C client prefixes the server's message with the code's name.
            name = ERROR_NAMES[-rc - _TW_EWIRE] + ": "
            raise EngineError(-rc - _TW_EWIRE, msg[len(name):] if msg.startswith(name) else msg)
        raise ConnectionError(msg or os.strerror(-rc))

    def echo(self, x):
        out = np.empty(x.size, dtype="<f8")
        self._check(self._f["tw_client_echo"](self._h, x.ctypes.data, x.size, out.ctypes.data,
                                              ctypes.byref(self._err)))
        return out

    def sweep(self, close, combos):
        k = combos.shape[0]
        pnl, trades = np.empty(k, dtype="<f8"), np.empty(k, dtype="<i8")
        self._check(self._f["tw_client_sweep"](self._h, close.ctypes.data, close.size,
                                               combos.ctypes.data, k, pnl.ctypes.data,
                                               trades.ctypes.data, ctypes.byref(self._err)))
        return pnl, trades

    def load(self, close):
        ds = ctypes.c_uint64()
        self._check(self._f["tw_client_load"](self._h, close.ctypes.data, close.size,
                                              ctypes.byref(ds), ctypes.byref(self._err)))
        return ds.value

    def load_fd(self, fd):
        ds = ctypes.c_uint64()
        self._check(self._f["tw_client_load_fd"](self._h, fd, ctypes.byref(ds),
                                                 ctypes.byref(self._err)))
        return ds.value

    def sweep_loaded(self, dataset, combos):
        k = combos.shape[0]
        pnl, trades = np.empty(k, dtype="<f8"), np.empty(k, dtype="<i8")
        self._check(self._f["tw_client_sweep_loaded"](self._h, dataset, combos.ctypes.data, k,
                                                      pnl.ctypes.data, trades.ctypes.data,
                                                      ctypes.byref(self._err)))
        return pnl, trades

    def ksweep(self, name, close, dataset, params, flags):
        k, npar = params.shape
        width = 6 if flags & KSWEEP_STATS else 2
        out = np.empty(width * k, dtype="<f8")
        cols = [out.ctypes.data + 8 * k * i for i in range(width)] + [None] * (6 - width)
        ko = _KOut(*cols)
        n = 0 if close is None else close.size
        self._check(self._f["tw_client_ksweep"](self._h, name, None if close is None else
                                                close.ctypes.data, n, dataset,
                                                params.ctypes.data, npar, k, ctypes.byref(ko),
                                                ctypes.byref(self._err)))
        return out

    def drop(self, dataset):
        self._check(self._f["tw_client_drop"](self._h, dataset, ctypes.byref(self._err)))

    def info(self):
        buf = ctypes.create_string_buffer(65536)
        n = self._check(self._f["tw_client_info"](self._h, buf, len(buf), ctypes.byref(self._err)))
        return json.loads(buf.raw[:n])

    def close(self):
        if self._h:
            self._f["tw_client_close"](self._h)
            self._h = ctypes.c_void_p()
