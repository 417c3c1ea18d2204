"""The harness's own engine: `tickwire serve` on a temporary Unix socket and
a free loopback TCP port, stopped at the end (also on error or signal)."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

__all__ = ["Server", "find_binary", "StudyError"]


class StudyError(RuntimeError):
    """The study cannot run (missing program, server failed to start...)."""


def find_binary(env, default_rel, what, hint):
    """Path from $env, else from $TICKWIRE_BUILD/default_rel, else StudyError."""
    p = os.environ.get(env)
    if p:
        if not os.access(p, os.X_OK):
            raise StudyError(f"{what}: ${env} = {p} is not an executable file")
        return p
    build = os.environ.get("TICKWIRE_BUILD")
    if build:
        p = os.path.join(build, default_rel)
        if os.access(p, os.X_OK):
            return p
    here = os.path.dirname(os.path.abspath(__file__))
    p = os.path.normpath(os.path.join(here, "..", "..", "..", "build", default_rel))
    if os.access(p, os.X_OK):
        return p
    raise StudyError(f"{what} not found: set ${env} or run through `tickwire study` ({hint})")


class Server:
    """Context manager running `tickwire serve --unix SOCK --tcp 0`."""

    def __init__(self, binary, threads=1, workers=1, extra=()):
        self.binary = binary
        self.threads = threads
        self.workers = workers
        self.extra = list(extra)
        self.dir = None
        self.proc = None
        self.sock = None
        self.tcp_port = None
        self._log = None

    @property
    def unix_addr(self):
        return f"unix:{self.sock}"

    @property
    def tcp_addr(self):
        return f"tcp:127.0.0.1:{self.tcp_port}"

    @property
    def shm_addr(self):
        return f"shm:{self.sock}"

    def log_text(self):
        try:
            with open(os.path.join(self.dir, "serve.log"), errors="replace") as f:
                return f.read()
        except (OSError, TypeError):
            return ""

    def start(self, timeout=15.0):
        self.dir = tempfile.mkdtemp(prefix="tw-study-")
        if len(self.dir) > 90:
            # sun_path holds 108 bytes: a deep $TMPDIR would not bind.
            os.rmdir(self.dir)
            self.dir = tempfile.mkdtemp(prefix="tw-study-", dir="/tmp")
        self.sock = os.path.join(self.dir, "engine.sock")
        self._log = open(os.path.join(self.dir, "serve.log"), "wb")
        cmd = [self.binary, "serve", "--unix", self.sock, "--tcp", "0",
               "--host", "127.0.0.1", "--threads", str(self.threads),
               "--workers", str(self.workers)] + self.extra
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._log)
        deadline = time.monotonic() + timeout
        pat = re.compile(r"listening on tcp:[^\s]*:(\d+)")
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise StudyError(f"tickwire serve exited with {self.proc.returncode}: "
                                 f"{self.log_text().strip() or '(no output)'}")
            text = self.log_text()
            m = pat.search(text)
            if m and "listening on unix:" in text and os.path.exists(self.sock):
                self.tcp_port = int(m.group(1))
                return self
            time.sleep(0.02)
        raise StudyError(f"tickwire serve did not start within {timeout:.0f} s: "
                         f"{self.log_text().strip() or '(no output)'}")

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()
