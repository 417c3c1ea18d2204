#!/usr/bin/python3
"""Writes the seed corpus of fuzz_exchange (fuzz/corpus/exchange_input/):
scenarios in the target's line mode (see fuzz_exchange.c), each a short
session of live.md's protocol, well formed or not, that the fuzzer then
mutates.  Run from the repository root; files are overwritten.  The gen_*
files beside them are what a 6-minute run with the library instrumented
(TW_FUZZ_LIB=ON) found, merged to one file per new edge
(-merge=1 -use_counters=0)."""
import os

OUT = "fuzz/corpus/exchange_input"
T = "20260101-00:00:01"


class S:
    def __init__(self, comp="T1"):
        self.comp, self.seq, self.lines = comp, 0, []

    def msg(self, typ, *fields, seq=None):
        if seq is None:
            self.seq += 1
            seq = self.seq
        f = [f"35={typ}", f"49={self.comp}", "56=VENUE", f"34={seq}", f"52={T}"] + list(fields)
        self.lines.append("|".join(f))

    def logon(self):
        self.msg("A", "98=0", "108=30")

    def sub(self, req="m", syms=("AAA", "BBB")):
        self.msg("V", f"262={req}", "263=1", "264=1", "265=1", "267=1", "269=2",
                 f"146={len(syms)}", *[f"55={s}" for s in syms])

    def hb(self, tid):
        self.msg("0", f"112={tid}")

    def order(self, cl, sym="AAA", side="1", qty="1", typ="1", extra=()):
        self.msg("D", f"11={cl}", "1=acct", f"55={sym}", f"54={side}", f"38={qty}",
                 f"40={typ}", f"60={T}", *extra)


def write(name, mode, lines):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(bytes([mode]) + "\n".join(lines).encode() + b"\n")


def lockstep_run(s, bars=6, orders=True):
    s.logon()
    s.sub()
    s.hb("open")
    for b in range(bars):
        if orders:
            s.order(f"o{b}", "AAA" if b % 2 else "BBB", "1" if b % 3 else "2", str(1 + b % 2))
        s.hb(f"bar-{b}")
    s.msg("5")


def main():
    os.makedirs(OUT, exist_ok=True)
    s = S()
    lockstep_run(s)
    write("lockstep_run", 0x01, s.lines)
    write("lockstep_run_faults", 0x05, s.lines)
    write("lockstep_run_chunks", 0x11, s.lines)
    s = S()
    s.logon()
    s.sub()
    s.hb("open")
    lines = s.lines[:]
    for k in range(8):
        s.lines = []
        s.order(f"p{k}")
        lines += s.lines + ["+15"]
    write("paced_run", 0x03, lines)
    # Malformed and unsupported messages.
    s = S()
    s.logon()
    s.sub()
    s.hb("open")
    s.msg("D", "55=AAA", "54=1", "38=1", "40=1", f"60={T}")
    s.msg("D", "11=a", "55=AAA", "54=9", "38=1", "40=1", f"60={T}")
    s.msg("D", "11=b", "55=AAA", "54=1", "38=abc", "40=1", f"60={T}")
    s.msg("D", "11=c", "55=AAA", "54=1", "38=1", "40=1", "60=yesterday")
    s.order("d", qty="0")
    s.order("e", typ="2", extra=("44=1.5",))
    s.order("f", sym="ZZZ")
    s.order("g", sym="BBB")
    s.order("h")
    s.order("h")
    s.msg("F", "41=h", "11=x1", "55=AAA", "54=1", f"60={T}")
    s.msg("F", "41=nope", "11=x2")
    s.msg("F", "11=x3")
    s.msg("G", "11=r", "41=h")
    s.msg("W", "262=m", "55=AAA", "268=1", "269=2", "270=1")
    s.hb("bar-0")
    write("bad_orders", 0x01, s.lines)
    s = S()
    s.logon()
    s.msg("V", "263=1", "264=1", "267=1", "269=2", "146=1", "55=AAA")
    s.msg("V", "262=r", "263=0", "264=1", "267=1", "269=2", "146=1", "55=AAA")
    s.msg("V", "262=r", "263=1", "264=7", "267=1", "269=2", "146=1", "55=AAA")
    s.msg("V", "262=r", "263=1", "264=1", "265=0", "267=1", "269=2", "146=1", "55=AAA")
    s.msg("V", "262=r", "263=1", "264=1", "267=2", "269=0", "269=1", "146=1", "55=AAA")
    s.msg("V", "262=r", "263=1", "264=1", "267=1", "269=2", "146=3", "55=AAA")
    s.msg("V", "262=r", "263=1", "264=1", "267=1", "269=2", "146=1", "55=ZZZ")
    s.msg("V", "262=r", "263=1", "264=1", "267=1", "269=2", "146=1", "55=AAA")
    s.msg("V", "262=r", "263=2", "264=1", "267=1", "269=2", "146=1", "55=AAA")
    write("bad_md_requests", 0x01, s.lines)
    # Two sessions, a held barrier, a third CompID, a twin.
    a, b = S("TA"), S("TB")
    a.logon(); a.sub(); a.hb("open")
    b.logon(); b.sub("b", ("BBB",)); b.hb("open")
    lines = ["#0"] + a.lines + ["#1"] + b.lines
    a.lines, b.lines = [], []
    a.hb("bar-0"); b.hb("bar-0"); a.order("a1"); a.hb("bar-1")
    lines += ["#0"] + a.lines + ["+100", "#1"] + b.lines
    c = S("TA")
    c.logon()
    lines += ["#2"] + c.lines + ["#3"] + S("../x").lines
    write("two_sessions", 0x01, lines)
    # Orders before Logon; Logons that are refused.
    s = S()
    s.order("early")
    write("pre_logon", 0x01, s.lines)
    s = S("bad/comp")
    s.logon()
    t = S()
    t.msg("A", "98=0", "108=99999")
    write("bad_logons", 0x01, s.lines + ["#1"] + t.lines)
    # Our side's sequence problems: a gap, a resend request, too low.
    s = S()
    s.logon(); s.sub(); s.hb("open")
    s.seq += 3
    s.order("gap1")
    s.msg("4", "123=Y", "36=2", seq=2)
    s.msg("2", "7=1", "16=0")
    s.hb("bar-0")
    s.msg("1", "112=hello")
    s.msg("0", "112=bar-0", seq=1)
    write("sequence", 0x01, s.lines)
    # Disconnect and reconnect, then stop.
    s = S()
    s.logon(); s.sub(); s.hb("open"); s.order("k1"); s.hb("bar-0")
    lines = s.lines + ["!", "+500", "#0"]
    s.lines = []
    s.logon(); s.sub(); s.hb("bar-1"); s.hb("bar-1"); s.order("k2")
    lines += s.lines + ["+2000", "~", "+100"]
    write("reconnect_stop", 0x05, lines)
    # Raw: a Logon with garbage around it, a huge BodyLength.
    raw = (b"junk\x018=FIX.4.4\x019=99999999\x01" + b"8=FIX.4.4\x019=5\x0135=A\x0110=000\x01"
           + b"\xff" * 40)
    with open(os.path.join(OUT, "raw_garbage"), "wb") as f:
        f.write(bytes([0x00]) + raw)


if __name__ == "__main__":
    main()
