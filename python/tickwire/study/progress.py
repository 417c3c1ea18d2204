"""The progress line on stderr: rewritten in place on a terminal, a compact
line per stage otherwise (CI logs, pipes)."""

import sys
import time

__all__ = ["Progress"]


class Progress:
    def __init__(self, stream=None, enabled=True):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.monotonic()
        self.stage = None
        self._width = 0

    def __call__(self, stage, detail="", done=None, total=None):
        if not self.enabled:
            return
        el = time.monotonic() - self.t0
        count = f" {done}/{total}" if done is not None and total is not None else ""
        if self.tty:
            text = f"study [{el:6.1f} s] {stage}{count} {detail}"[:119]
            pad = max(0, self._width - len(text))
            self.stream.write("\r" + text + " " * pad)
            self._width = len(text)
            self.stream.flush()
        elif stage != self.stage:
            # Not a terminal: one line when a stage starts, nothing more.
            self.stream.write(f"study [{el:6.1f} s] {stage}{(' ' + detail) if detail else ''}\n")
            self.stream.flush()
        self.stage = stage

    def done(self, message):
        if not self.enabled:
            return
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
        self.stream.write(message + "\n")
        self.stream.flush()
        self._width = 0
