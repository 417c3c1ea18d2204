"""`tickwire trade` in `[engine] mode = processes` (docs/crash.md,
"Processes mode"): the gateway (net cores, FIX sessions, stores, journal)
and the strategy as two processes over the attach segment.

- An uninterrupted lockstep replay in processes mode: per instance the
  trade list, count, execution and signal PnL equal `tickwire sweep
  --trades` bit for bit (one session: the study; two sessions: the study
  and a NaN-gapped dataset, a net core each).
- The strategy process killed -9 at 20 seeded points of progress and
  restarted by the gateway: parity again, the venue's fills log has each
  ClOrdID once and equals the uninterrupted run's, and the FIX sessions
  stayed up the whole time (the venue saw one Logon per session).
- The gateway killed -9 at 5 seeded points (its strategy child exits by
  itself; every second time the strategy is killed with it: the whole
  trader), `tickwire trade` started again each time: the sessions resume
  from their stores, parity, each ClOrdID once, the same fills as the
  uninterrupted run.
- `--no-spawn` and strategies started by hand (`tickwire trade --attach`).
- The full kill sequence in one replay: the strategy killed at 20 points,
  then the gateway at 5, then the whole trader at 5.

Points of progress, not of time: a kill comes once the journal holds a
seeded number of records (or, when the journal is past it already, as soon
as the new strategy has attached: mid-replay).  The seed is printed on
failure; TW_PROCS_SEED reruns one.  No assertion depends on timing; the
recovery figures are printed (medians).
"""
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_trade_crash import (RUN_ID, finish, journal_records, journal_segments,  # noqa: E402
                              make_dataset, reached, segment_bytes, trader)
from test_trade_crash import setup_run as crash_setup_run  # noqa: E402
from test_trade_crash import ROTATION_POINTS, TICKWIRE  # noqa: E402
from test_trade_crash import flip_newest_snapshot, newest_snapshot  # noqa: E402
from test_trade_crash import HDR, REC  # noqa: E402

BUILD = os.path.abspath(os.environ.get("TICKWIRE_BUILD", "build"))
TICKWIRE = os.path.abspath(os.environ.get("TICKWIRE_BIN", os.path.join(BUILD, "tools", "tickwire")))
BARS = int(os.environ.get("TW_PROCS_BARS", "6000"))
STRATEGY_KILLS = int(os.environ.get("TW_PROCS_KILLS", "20"))
GATEWAY_KILLS = int(os.environ.get("TW_PROCS_GW_KILLS", "5"))


@pytest.fixture(scope="module", params=[1, 2], ids=["one_session", "two_sessions"])
def dataset(request, tmp_path_factory):
    return make_dataset(request.param, tmp_path_factory, BARS)


def setup_run(workdir, paths, engine=None):
    return crash_setup_run(workdir, paths, engine=dict({"mode": "processes"}, **(engine or {})))


def snapshot_events(path, journal):
    """The events a snapshot's state reflects: the number in its name, or,
    for one that carries the gateway's folds (section 259: it is named by
    the journal seq J of its last event), the EV records with seq <= J."""
    data = open(path, "rb").read()
    j, nsec = int.from_bytes(data[16:24], "little"), int.from_bytes(data[32:36], "little")
    off, folds = 64, False
    for _ in range(nsec):
        sid = int.from_bytes(data[off:off + 4], "little")
        n = int.from_bytes(data[off + 8:off + 16], "little")
        folds |= sid == 259
        off += 16 + (n + 7) // 8 * 8
    if not folds:
        return j
    evs = 0
    for seg in journal_segments(journal):
        with open(seg, "rb") as f:
            first = int.from_bytes(f.read(HDR)[24:32], "little")
            if first > j:
                break
            recs = f.read((j - first + 1) * REC)
        evs += sum(1 for i in range(0, len(recs), REC) if recs[i] == 1)  # tag's low byte: EV
    return evs


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def finish_seeded(venue, p, w, insts, refs, k, seed, marks):
    """finish(), its failure naming the seed and the marks."""
    try:
        return finish(venue, p, w, insts, refs, k)
    except AssertionError as e:
        raise AssertionError(f"seed {seed} marks {marks}: {e}") from None


def report_checked(err):
    """The gateway's report is the strategy process's: its digest matched
    at FINISHED or STOP, or (from a snapshot past both) the state is the
    strategy process's own snapshot."""
    return "strategy process's digest matches" in err or \
        "the state is the strategy process's own snapshot" in err


def venue_logons(venue):
    m = re.search(r"sessions=(\d+) logons=(\d+)", venue.summary())
    assert m, venue.summary()
    return int(m.group(1)), int(m.group(2))


def check_fills(log, whole, seed, marks, rep):
    clids = [r[0] for r in log]
    dup = [c for c in set(clids) if clids.count(c) > 1] if len(set(clids)) != len(clids) else []
    assert not dup, (seed, marks, dup[:5])
    assert sorted(log) == sorted(whole), (seed, marks, len(log), len(whole),
                                          sorted(set(log) ^ set(whole))[:5])
    assert rep["totals"]["fills"] == len(log)


@pytest.fixture(scope="module")
def uninterrupted(dataset, tmp_path_factory):
    w = str(tmp_path_factory.mktemp("whole"))
    venue, config, insts = setup_run(w, dataset["paths"])
    try:
        p = trader(config, w, 0)
        rep, log = finish(venue, p, w, insts, dataset["refs"], 0)
        logons = venue_logons(venue)
    finally:
        venue.stop()
    err = read(os.path.join(w, "trader0.err"))
    assert "strategy process's digest matches" in err, err[-3000:]
    n = journal_records(os.path.join(w, "store", "venue.journal"))
    assert n > BARS
    return {"fills": log, "records": n, "report": rep, "logons": logons}


def test_processes_mode_matches_the_sweep(uninterrupted, dataset):
    log = uninterrupted["fills"]
    assert len(log) > 50 and len({r[0] for r in log}) == len(log)
    assert uninterrupted["report"]["totals"]["fills"] == len(log)
    sessions, logons = uninterrupted["logons"]
    assert logons == sessions == len(dataset["paths"])


def attached_pids(err):
    return [int(x) for x in re.findall(r"strategy process (\d+) attached", err)]


def attached_at(p, err_path, journal, mark, killed):
    """Waits (bounded: a broken run only) until the journal is at or past
    mark with a strategy attached that is not in killed; returns its pid
    (None: the trader ended, or the wait ran out)."""
    deadline = time.monotonic() + 300
    while p.poll() is None and time.monotonic() < deadline:
        live_pids = [x for x in attached_pids(read(err_path)) if x not in killed]
        if live_pids and reached_or_past(journal, mark):
            return live_pids[-1]
        time.sleep(0.002)
    return None


def test_strategy_killed_20_times(dataset, uninterrupted, tmp_path):
    seed = int(os.environ.get("TW_PROCS_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    total = uninterrupted["records"]
    marks = sorted(rng.randrange(total // 50, total * 9 // 10) for _ in range(STRATEGY_KILLS))
    w = str(tmp_path)
    journal = os.path.join(w, "store", "venue.journal")
    gw_err = os.path.join(w, "trader0.err")
    # Segments of about a twelfth of the run: each restarted strategy reads
    # the gateway's journal across its rotations, some of them while they
    # happen.
    venue, config, insts = setup_run(w, dataset["paths"],
                                     engine={"journal_segment_bytes": segment_bytes(total, 12)})
    killed = {}  # pid -> monotonic ns of the kill
    try:
        p = trader(config, w, 0)
        for k, mark in enumerate(marks):
            pid = attached_at(p, gw_err, journal, mark, killed)
            assert p.poll() is None, f"seed {seed}: the trader ended before kill {k} (mark {mark})"
            assert pid, f"seed {seed}: no strategy attached for kill {k}"
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            killed[pid] = time.monotonic_ns()
        rep, log = finish_seeded(venue, p, w, insts, dataset["refs"], 0, seed, marks)
        sessions, logons = venue_logons(venue)
    finally:
        if p.poll() is None:
            p.kill()
        venue.stop()
    err = read(gw_err)
    gone = re.findall(r"strategy process (\d+) gone \(killed by signal 9\)", err)
    assert len(gone) == len(marks), (seed, err[-3000:])
    # The FIX sessions stayed up: one Logon per session at the venue, none
    # after a strategy's death.
    assert logons == sessions == len(dataset["paths"]), (seed, venue.summary())
    assert "connection lost" not in err, (seed, err[-3000:])
    check_fills(log, uninterrupted["fills"], seed, marks, rep)
    assert "strategy process's digest matches" in err, err[-3000:]
    assert len(journal_segments(journal)) >= 10, (seed, journal_segments(journal))
    print(f"seed {seed}: strategy killed at journal records {marks} of {total}; "
          f"{len(log)} fills, each ClOrdID once, as the uninterrupted run; "
          f"{logons} logons for {sessions} sessions")
    strategy_figures(err, killed)


def reached_or_past(journal, mark):
    """The journal is at or past mark (a restarted strategy replays
    first: a kill now lands mid-replay)."""
    return os.path.exists(journal) and reached(journal, mark)


def strategy_figures(err, killed):
    """kill -9 -> the first bar processed after reattaching, split:
    detection (kill -> the gateway saw it gone), start/attach (-> the new
    strategy attached: spawn, exec, configuration, handshake), replay (the
    journal through the kernel), resync (-> its first new bar processed:
    the pending barrier acked, the venue's next bar).  Ordering asserted,
    durations printed."""
    rows = []
    for m in re.finditer(r"strategy restart \d+: detected at (\d+) ns, attached ([\d.]+) ms "
                         r"later, replay ([\d.]+) ms \((\d+) events, (\d+) bars: (\d+) bars/s\), "
                         r"resync ([\d.]+) ms; detection -> first new bar ([\d.]+) ms "
                         r"\(first bar at (\d+) ns", err):
        det = int(m.group(1))
        kills = [t for t in killed.values() if t <= det]
        if not kills:
            continue
        kt = max(kills)
        first = int(m.group(9))
        assert kt <= det <= first
        rows.append(((det - kt) / 1e6, float(m.group(2)), float(m.group(3)), int(m.group(5)),
                     int(m.group(6)), float(m.group(7)), (first - kt) / 1e6))
    assert rows, err[-3000:]
    med = [statistics.median(r[i] for r in rows) for i in range(7)]
    print(f"strategy restarts, median of {len(rows)} (ms): detection {med[0]:.2f}, "
          f"start/attach {med[1]:.2f}, replay {med[2]:.2f} ({med[3]:.0f} bars, {med[4]:.0f} bars/s), "
          f"resync {med[5]:.2f}; kill -9 -> first new bar {med[6]:.2f}")


def test_gateway_killed_at_5_moments(dataset, uninterrupted, tmp_path):
    seed = int(os.environ.get("TW_PROCS_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed + 1)
    total = uninterrupted["records"]
    marks = sorted(rng.randrange(total // 50, total * 9 // 10) for _ in range(GATEWAY_KILLS))
    w = str(tmp_path)
    journal = os.path.join(w, "store", "venue.journal")
    venue, config, insts = setup_run(w, dataset["paths"])
    clock = []  # per kill: (killed, reaped, restarted), monotonic ns like the trader's
    try:
        for k, mark in enumerate(marks):
            if clock:
                clock[-1].append(time.monotonic_ns())
            p = trader(config, w, k)
            attached_at(p, os.path.join(w, f"trader{k}.err"), journal, mark, ())
            assert p.poll() is None, f"seed {seed}: the trader ended before mark {mark}"
            err = read(os.path.join(w, f"trader{k}.err"))
            children = [int(x) for x in re.findall(r"strategy process (\d+) started", err)]
            if k % 2:
                # The whole trader: the strategy and the gateway together.
                for c in children:
                    try:
                        os.kill(c, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            killed = time.monotonic_ns()
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
            clock.append([killed, time.monotonic_ns()])
            # Its strategy sees the hangup and exits by itself.
            for c in children:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and alive(c):
                    time.sleep(0.005)
                assert not alive(c), f"seed {seed}: strategy {c} outlived its gateway"
        clock[-1].append(time.monotonic_ns())
        p = trader(config, w, len(marks))
        rep, log = finish_seeded(venue, p, w, insts, dataset["refs"], len(marks), seed, marks)
    finally:
        venue.stop()
    err = "".join(read(os.path.join(w, f"trader{k}.err")) for k in range(1, len(marks) + 1))
    assert err.count(f"recovered run {RUN_ID}") == len(marks), (seed, err[-3000:])
    check_fills(log, uninterrupted["fills"], seed, marks, rep)
    print(f"seed {seed}: gateway killed at journal records {marks} of {total}; "
          f"{len(log)} fills, each ClOrdID once, as the uninterrupted run")
    gateway_figures(w, clock)


def test_gateway_killed_inside_rotations(dataset, uninterrupted, tmp_path):
    """The gateway (which writes the journal) kills itself inside a
    journal rotation, at each of its points, on a seeded rotation of each
    run (TW_TRADE_TEST_JSEG_KILL); its strategy process sees the hangup and
    exits; every restart recovers and its new strategy follows the
    journal across the segments; the books equal the sweep's."""
    seed = int(os.environ.get("TW_PROCS_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed + 2)
    total = uninterrupted["records"]
    w = str(tmp_path)
    journal = os.path.join(w, "store", "venue.journal")
    venue, config, insts = setup_run(w, dataset["paths"],
                                     engine={"journal_segment_bytes": segment_bytes(total, 16)})
    kills = [(name, at, rng.randrange(1, 4)) for name, at in ROTATION_POINTS.items()]
    try:
        for k, (name, at, nth) in enumerate(kills):
            env = dict(os.environ, TW_TRADE_TEST_JSEG_KILL=f"{at}:{nth}")
            p = subprocess.Popen([TICKWIRE, "trade", "--config", config, "--run-id", str(RUN_ID)],
                                 stdout=open(os.path.join(w, f"trader{k}.out"), "w"),
                                 stderr=open(os.path.join(w, f"trader{k}.err"), "w"), env=env)
            rc = p.wait(timeout=600)
            err = read(os.path.join(w, f"trader{k}.err"))
            assert rc == -signal.SIGKILL, (seed, name, nth, rc, err[-2000:])
            for c in (int(x) for x in re.findall(r"strategy process (\d+) started", err)):
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and alive(c):
                    time.sleep(0.005)
                assert not alive(c), f"seed {seed}: strategy {c} outlived its gateway"
        p = trader(config, w, len(kills))
        try:
            rep, log = finish(venue, p, w, insts, dataset["refs"], len(kills))
        except AssertionError as e:
            raise AssertionError(f"seed {seed} kills {kills}: {e}") from None
    finally:
        venue.stop()
    errs = [read(os.path.join(w, f"trader{k}.err")) for k in range(1, len(kills) + 1)]
    assert f"recovered run {RUN_ID}" in errs[-1], (seed, errs[-1][-3000:])
    check_fills(log, uninterrupted["fills"], seed, kills, rep)
    assert len(journal_segments(journal)) >= 12, (seed, journal_segments(journal))
    print(f"seed {seed}: gateway killed inside rotations {kills} (point, rotation of that run); "
          f"{len(log)} fills, each ClOrdID once, as the uninterrupted run")


def gateway_figures(w, clock):
    """kill -9 of the gateway -> the first bar its new strategy processed:
    detection (kill -> reaped by the test), restart (-> the engine's start),
    recovery (-> the gateway's own replay of the journal: net cores' state,
    notes), attach (-> the new strategy attached), its replay, resync (->
    its first new bar).  The total leaves out the test's wait between the
    reap and the restart (for the old strategy to be gone: a supervisor
    restarts at once).  Ordering asserted, durations printed."""
    rows = []
    for k, (killed, reaped, restarted) in enumerate(clock, start=1):
        err = read(os.path.join(w, f"trader{k}.err"))
        m = re.search(r"engine start (\d+) ns, replay end (\d+) ns", err)
        f = re.search(r"gateway restart: the strategy attached at ([\d.]+) ms after the engine's "
                      r"start, replay ([\d.]+) ms \(\d+ events, (\d+) bars: (\d+) bars/s\), resync "
                      r"([\d.]+) ms; first new bar at [\d.]+ ms after the engine's start \((\d+) ns",
                      err)
        assert m, err[-2000:]
        start, end = int(m.group(1)), int(m.group(2))
        assert killed <= reaped <= restarted <= start <= end
        if not f:
            continue  # killed again before a new bar came
        first = int(f.group(6))
        assert end <= first
        attach = start + float(f.group(1)) * 1e6
        rows.append(((reaped - killed) / 1e6, (start - restarted) / 1e6, (end - start) / 1e6,
                     (attach - end) / 1e6, float(f.group(2)), int(f.group(3)), int(f.group(4)),
                     float(f.group(5)), (reaped - killed + first - restarted) / 1e6))
    assert rows
    med = [statistics.median(r[i] for r in rows) for i in range(9)]
    print(f"gateway restarts, median of {len(rows)} (ms): detection {med[0]:.2f}, restart "
          f"{med[1]:.2f}, the gateway's recovery {med[2]:.2f}, strategy attached {med[3]:.2f} "
          f"later, its replay {med[4]:.2f} ({med[5]:.0f} bars, {med[6]:.0f} bars/s), resync "
          f"{med[7]:.2f}; kill -9 -> first new bar {med[8]:.2f}")


def alive(pid):
    """pid exists and is not a zombie (the test's children are reaped by
    their parent, the gateway, which is dead: init reaps them)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
    except OSError:
        return False
    return st[st.rindex(")") + 2] not in "ZX"


def no_spawn_gateway(config, w):
    """`tickwire trade --no-spawn` started in w: (the process, the socket
    its log names for strategies started by hand)."""
    gw_err = os.path.join(w, "trader0.err")
    p = subprocess.Popen([TICKWIRE, "trade", "--config", config, "--run-id", str(RUN_ID),
                          "--no-spawn"],
                         stdout=open(os.path.join(w, "trader0.out"), "w"),
                         stderr=open(gw_err, "w"))
    sock = None
    deadline = time.monotonic() + 60
    while sock is None and time.monotonic() < deadline and p.poll() is None:
        m = re.search(r"the strategy attaches at (\S+)", read(gw_err))
        sock = m.group(1) if m else None
        time.sleep(0.01)
    assert sock, read(gw_err)[-2000:]
    return p, sock


def by_hand(sock, config, w, k, kill=None):
    """Strategy k started by hand (`tickwire trade --attach`); kill: (AT,
    N) for TW_TRADE_TEST_SNAP_KILL."""
    env = dict(os.environ)
    env.pop("TW_TRADE_TEST_SNAP_KILL", None)
    if kill:
        env["TW_TRADE_TEST_SNAP_KILL"] = f"{kill[0]}:{kill[1]}"
    return subprocess.Popen([TICKWIRE, "trade", "--attach", sock, "--config", config],
                            stdout=subprocess.DEVNULL, env=env,
                            stderr=open(os.path.join(w, f"strategy{k}.err"), "w"))


def test_strategy_attached_by_hand(dataset, uninterrupted, tmp_path):
    """`tickwire trade --no-spawn`: the gateway starts no strategy; one is
    started by hand (`tickwire trade --attach SOCK --config FILE`, SOCK
    from the gateway's log), killed -9 once the journal is a third written,
    and another started by hand: parity, the uninterrupted run's fills."""
    w = str(tmp_path)
    journal = os.path.join(w, "store", "venue.journal")
    venue, config, insts = setup_run(w, dataset["paths"])
    gw_err = os.path.join(w, "trader0.err")
    strategies = []
    try:
        p, sock = no_spawn_gateway(config, w)

        def strategy(k, kill=None):
            return by_hand(sock, config, w, k, kill)
        strategies.append(strategy(0))
        mark = uninterrupted["records"] // 3
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and p.poll() is None and not reached_or_past(journal, mark):
            time.sleep(0.005)
        strategies[0].send_signal(signal.SIGKILL)
        strategies[0].wait(timeout=30)
        assert "started" not in read(gw_err)  # --no-spawn: the gateway spawned none
        strategies.append(strategy(1))
        rep, log = finish(venue, p, w, insts, dataset["refs"], 0)
        assert strategies[1].wait(timeout=60) == 0, read(os.path.join(w, "strategy1.err"))[-2000:]
    finally:
        for s in strategies:
            if s.poll() is None:
                s.kill()
        venue.stop()
    check_fills(log, uninterrupted["fills"], "by hand", [mark], rep)
    assert len(attached_pids(read(gw_err))) == 2


def kill9(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_strategy_then_gateway_then_whole_trader_in_one_replay(dataset, uninterrupted, tmp_path):
    """The full kill sequence in one replay: the strategy process killed at
    20 seeded points (the gateway restarts it), then the gateway alone at 5
    (its strategy exits by itself; `tickwire trade` started again), then
    the whole trader at 5 (gateway and strategy together), each a later
    point of progress than the last.  At the end: parity with the sweep,
    each ClOrdID once, the uninterrupted run's fills.  `interval`: no event
    count, a snapshot whenever 2 ms passed since the last one
    (`snapshot_interval_ms`): how many there are depends on the machine,
    so only what holds for any number is asserted."""
    seed = int(os.environ.get("TW_PROCS_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed + 2)
    total = uninterrupted["records"]
    plan = ["strategy"] * STRATEGY_KILLS + ["gateway"] * GATEWAY_KILLS + ["whole"] * GATEWAY_KILLS
    marks = sorted(rng.randrange(total // 50, total * 9 // 10) for _ in plan)
    w = str(tmp_path)
    journal = os.path.join(w, "store", "venue.journal")
    venue, config, insts = setup_run(w, dataset["paths"])
    gen, killed, p = 0, set(), None
    try:
        p = trader(config, w, gen)
        for what, mark in zip(plan, marks):
            err_path = os.path.join(w, f"trader{gen}.err")
            pid = attached_at(p, err_path, journal, mark, killed)
            assert p.poll() is None, f"seed {seed}: the trader ended before the {what} kill at {mark}"
            assert pid, f"seed {seed}: no strategy attached for the {what} kill at {mark}"
            if what == "strategy":
                kill9(pid)
                killed.add(pid)
                continue
            children = [int(x) for x in re.findall(r"strategy process (\d+) started",
                                                    read(err_path))]
            if what == "whole":
                for c in children:
                    kill9(c)
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
            for c in children:  # a gateway's strategy (and standby) exit by themselves
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and alive(c):
                    time.sleep(0.005)
                assert not alive(c), f"seed {seed}: strategy {c} outlived its gateway"
            gen += 1
            p = trader(config, w, gen)
        rep, log = finish_seeded(venue, p, w, insts, dataset["refs"], gen, seed, marks)
    finally:
        if p is not None and p.poll() is None:
            p.kill()
        venue.stop()
    first = read(os.path.join(w, "trader0.err"))
    gone = re.findall(r"strategy process (\d+) gone \(killed by signal 9\)", first)
    assert len(gone) == STRATEGY_KILLS, (seed, first[-3000:])
    assert "connection lost" not in first, (seed, first[-3000:])
    later = "".join(read(os.path.join(w, f"trader{k}.err")) for k in range(1, gen + 1))
    assert gen == 2 * GATEWAY_KILLS
    assert later.count(f"recovered run {RUN_ID}") == gen, (seed, later[-3000:])
    check_fills(log, uninterrupted["fills"], seed, marks, rep)
    print(f"seed {seed}: strategy killed 20 times, then the gateway 5, then the whole trader 5, "
          f"at journal records {marks} of {total}; {len(log)} fills, each ClOrdID once")


@pytest.mark.parametrize("every", ["events", "interval"])
def test_strategy_killed_with_snapshots(dataset, uninterrupted, tmp_path, every):
    """Snapshots every 300 events in processes mode: the strategy process
    hands a copy of its state to its own writer thread; a strategy started
    after one died loads the newest snapshot that checks out and takes only
    the events after it through the kernel.  The gateway runs with
    `--no-spawn` and the strategies are started by hand, so the test acts
    while none is attached (the lockstep venue waits: nothing moves): each
    is killed -9 at a seeded point of progress (during a snapshot's write
    too, or mid-replay when the journal is past the point already); before
    the third restart a bit of the newest snapshot is flipped (set aside
    with its reason, an older one or the first event used).  Parity with
    the sweep, the strategy process's digest matches the journal's replay,
    each ClOrdID once, the uninterrupted run's fills.  `interval`: no event
    count, a snapshot whenever 2 ms passed since the last one
    (`snapshot_interval_ms`): how many there are depends on the machine,
    so only what holds for any number is asserted."""
    seed = int(os.environ.get("TW_PROCS_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    total = uninterrupted["records"]
    marks = sorted(rng.randrange(total // 10, total * 9 // 10) for _ in range(5))
    w = str(tmp_path)
    journal = os.path.join(w, "store", "venue.journal")
    snaps = journal + ".snap"
    venue, config, insts = crash_setup_run(w, dataset["paths"],
                                           engine=dict({"mode": "processes"}, **(
                                               {"snapshot_every": 300} if every == "events" else
                                               {"snapshot_every": 0, "snapshot_interval_ms": 2})))
    gw_err = os.path.join(w, "trader0.err")
    strategies, had, flipped = [], [], None
    try:
        p, sock = no_spawn_gateway(config, w)

        def strategy(k, kill=None):
            return by_hand(sock, config, w, k, kill)
        for k, mark in enumerate(marks):
            if k == 3:
                flipped = flip_newest_snapshot(snaps)
            had.append(newest_snapshot(snaps))
            s = strategy(k)
            strategies.append(s)
            serr = os.path.join(w, f"strategy{k}.err")
            deadline = time.monotonic() + 300
            # Killed once it chose its start (with a snapshot there: it
            # says which), then anywhere: mid-replay or live.
            while time.monotonic() < deadline and p.poll() is None and s.poll() is None and \
                    not ("attached" in read(serr) and reached_or_past(journal, mark) and
                         (not had[k] or "snapshot" in read(serr))):
                time.sleep(0.002)
            assert p.poll() is None and s.poll() is None, \
                (seed, marks, k, read(serr)[-2000:], read(gw_err)[-2000:])
            s.send_signal(signal.SIGKILL)
            s.wait(timeout=30)
        had.append(newest_snapshot(snaps))
        last = len(marks)
        strategies.append(strategy(last))
        rep, log = finish(venue, p, w, insts, dataset["refs"], 0)
        assert strategies[-1].wait(timeout=60) == 0, \
            read(os.path.join(w, f"strategy{last}.err"))[-2000:]
    finally:
        for s in strategies:
            if s.poll() is None:
                s.kill()
        if p.poll() is None:
            p.kill()
        venue.stop()
    errs = [read(os.path.join(w, f"strategy{k}.err")) for k in range(len(marks) + 1)]
    assert "recovering from the snapshot" not in errs[0], errs[0][-2000:]
    used = 0
    for k in range(1, len(marks) + 1):
        err = errs[k]
        m = re.search(r"recovering from the snapshot of event (\d+)", err)
        if had[k] and k != 3:
            # A snapshot was there when it started: it loads.
            assert m and int(m.group(1)) > 0, (seed, marks, k, had[k], err[-2000:])
        used += m is not None
        assert "not used" not in err, (seed, marks, k, err[-2000:])
    if flipped:
        assert "set aside" in errs[3] and os.path.basename(flipped) in errs[3], errs[3][-2000:]
        assert os.path.exists(flipped + ".bad")
    if every == "events":
        assert used > 0, (seed, marks, had)
    check_fills(log, uninterrupted["fills"], seed, marks, rep)
    err = read(gw_err)
    assert report_checked(err), err[-3000:]
    print(f"seed {seed}: processes mode, snapshots every "
          f"{'300 events' if every == 'events' else '2 ms'}, the strategy killed at "
          f"journal records {marks} of {total}: {used} restarts from a snapshot; {len(log)} "
          f"fills, each ClOrdID once, as the uninterrupted run")


SNAP_POINTS = {1: "half the temporary written", 2: "the temporary whole, before its fsync",
               3: "renamed into place, the older ones not yet deleted"}


def test_strategy_killed_inside_snapshot_writes(dataset, uninterrupted, tmp_path):
    """The strategy process killed -9 inside a snapshot's write, at each of
    the writer's points (TW_TRADE_TEST_SNAP_KILL=AT:N: it kills itself at
    point AT of its second write: the first is whole, and early in the run,
    so a writer whose fsyncs make it skip copies still gets there), a
    strategy started by hand after each (the gateway with `--no-spawn`): a
    temporary left behind is never
    loaded, a snapshot renamed into place is; each restart after a written
    snapshot recovers from one; parity with the sweep, the strategy
    process's digest equal to the journal's replay, the uninterrupted run's
    fills, each ClOrdID once."""
    seed = "points 1, 2, 3 of write 2"
    w = str(tmp_path)
    snaps = os.path.join(w, "store", "venue.journal") + ".snap"
    venue, config, insts = crash_setup_run(w, dataset["paths"],
                                           engine={"mode": "processes", "snapshot_every": 300})
    gw_err = os.path.join(w, "trader0.err")
    strategies, plan, left, newest = [], [], [], []  # newest: its events, per kill
    try:
        p, sock = no_spawn_gateway(config, w)

        def strategy(k, kill=None):
            return by_hand(sock, config, w, k, kill)
        for k, at in enumerate((1, 2, 3)):
            kill = (at, 2)
            plan.append(kill)
            s = strategy(k, kill)
            strategies.append(s)
            rc = s.wait(timeout=300)
            assert rc == -signal.SIGKILL, (seed, plan, rc,
                                           read(os.path.join(w, f"strategy{k}.err"))[-2000:])
            names = sorted(os.listdir(snaps))
            left.append(names)
            whole = [n for n in names if n.endswith(".tws")]
            last = max(whole, key=lambda n: int(n[5:-4])) if whole else None
            newest.append(snapshot_events(os.path.join(snaps, last),
                                          os.path.join(w, "store", "venue.journal"))
                          if last else None)
            if at in (1, 2):
                assert any(n.endswith(".tmp") for n in names), (seed, plan, names)
        strategies.append(strategy(3))
        rep, log = finish(venue, p, w, insts, dataset["refs"], 0)
        assert strategies[-1].wait(timeout=60) == 0, \
            read(os.path.join(w, "strategy3.err"))[-2000:]
    finally:
        for s in strategies:
            if s.poll() is None:
                s.kill()
        if p.poll() is None:
            p.kill()
        venue.stop()
    errs = [read(os.path.join(w, f"strategy{k}.err")) for k in range(4)]
    for k in range(1, 4):
        whole = [n for n in left[k - 1] if n.endswith(".tws")]
        m = re.search(r"recovering from the snapshot of event (\d+)", errs[k])
        if whole:
            assert m and int(m.group(1)) == newest[k - 1], (seed, plan, k, whole,
                                                            errs[k][-2000:])
        assert "not used" not in errs[k] and "set aside" not in errs[k], (seed, k, errs[k][-2000:])
    # The kill after the rename: that snapshot is in place, and loads.
    assert any(n.endswith(".tws") for n in left[2]), (seed, plan, left[2])
    check_fills(log, uninterrupted["fills"], seed, plan, rep)
    err = read(gw_err)
    assert report_checked(err), err[-3000:]
    print("processes mode, the strategy killed inside its snapshot writes "
          + ", ".join(f"{SNAP_POINTS[a]} (write {n})" for a, n in plan)
          + f": each restart from the newest whole snapshot; {len(log)} fills, each ClOrdID "
          "once, as the uninterrupted run")


def test_pruned_journal_in_processes_mode(dataset, uninterrupted, tmp_path):
    """journal_keep = snapshots (the default) in processes mode, with small
    segments (1/400 of the run) and a snapshot every 300 events: the
    strategy process's writer deletes the segments behind the oldest kept
    snapshot, so the journal soon no longer starts at seq 1.  The strategy
    is killed -9 twice (the gateway starts another, which loads the newest
    snapshot and takes the stream from the seq after it), then the whole
    trader once (the new gateway recovers from a snapshot too); on a copy
    of that moment, with the snapshots deleted, the gateway refuses to
    trade (exit 2).  At the end the report is rebuilt from a snapshot and
    the journal after it, the trades CSV cut where the snapshot's rows end:
    parity with the sweep, each ClOrdID once, the uninterrupted run's
    fills."""
    seed = int(os.environ.get("TW_PROCS_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed + 7)
    total = uninterrupted["records"]
    marks = sorted(rng.randrange(total // 4, total * 9 // 10) for _ in range(3))
    w = str(tmp_path)
    journal = os.path.join(w, "store", "venue.journal")
    gw_err = os.path.join(w, "trader0.err")
    venue, config, insts = setup_run(w, dataset["paths"],
                                     engine={"journal_segment_bytes": segment_bytes(total, 400),
                                             "snapshot_every": 300})
    killed = {}
    p = None
    try:
        p = trader(config, w, 0)
        for k, mark in enumerate(marks[:2]):
            pid = attached_at(p, gw_err, journal, mark, killed)
            assert p.poll() is None and pid, (seed, marks, k, read(gw_err)[-2000:])
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            killed[pid] = time.monotonic_ns()
        attached_at(p, gw_err, journal, marks[2], killed)
        assert p.poll() is None, (seed, marks, read(gw_err)[-2000:])
        children = [int(x) for x in re.findall(r"strategy process (\d+) started", read(gw_err))]
        for c in children:
            try:
                os.kill(c, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        first = int(os.path.basename(journal_segments(journal)[0])[:20])
        # The refusal, on a copy: no snapshot covers the pruned records.
        cw = os.path.join(w, "refuse")
        shutil.copytree(os.path.join(w, "store"), os.path.join(cw, "store"), symlinks=True,
                        ignore=shutil.ignore_patterns("*.sock"))
        ccfg = os.path.join(cw, "trade.ini")
        open(ccfg, "w").write(open(config).read().replace(os.path.join(w, "store"),
                                                          os.path.join(cw, "store")))
        shutil.rmtree(os.path.join(cw, "store", "venue.journal.snap"))
        r = subprocess.run([TICKWIRE, "trade", "--config", ccfg, "--run-id", str(RUN_ID)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "refusing to trade" in r.stderr and \
            "the records before it pruned" in r.stderr, (seed, r.returncode, r.stderr[-2000:])
        p = trader(config, w, 1)
        rep, log = finish_seeded(venue, p, w, insts, dataset["refs"], 1, seed, marks)
    finally:
        if p is not None and p.poll() is None:
            p.kill()
        venue.stop()
    # The last strategy process writes its summary once it sees the
    # gateway gone (bounded wait: a broken run only).
    err1 = read(os.path.join(w, "trader1.err"))
    for c in [int(x) for x in re.findall(r"strategy process (\d+) started", err1)]:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and alive(c):
            time.sleep(0.005)
    err0, err1 = read(gw_err), read(os.path.join(w, "trader1.err"))
    assert first > 1, (seed, marks, journal_segments(journal)[:3])
    restarts = re.findall(r"strategy process \d+: recovering from the snapshot of event \d+ "
                          r"\(journal seq (\d+)\)", err0)
    assert len(restarts) >= 2, (seed, marks, err0[-3000:])
    assert f"recovered run {RUN_ID}" in err1 and "recovering from the snapshot" in err1, \
        err1[-3000:]
    assert re.search(r"strategy process \d+: recovering from the snapshot", err1), err1[-3000:]
    m = re.search(r"strategy process: journal: (\d+) segments deleted behind the oldest kept "
                  r"snapshot", err1)
    assert m and int(m.group(1)) > 0, err1[-3000:]
    assert "the report's strategy from the snapshot of event" in err1, err1[-3000:]
    assert report_checked(err1), err1[-3000:]
    segs = journal_segments(journal)
    assert int(os.path.basename(segs[0])[:20]) > 1 and len(segs) < 60, segs[:3]
    check_fills(log, uninterrupted["fills"], seed, marks, rep)
    print(f"seed {seed}: processes mode, segments of 1/400 of the run pruned behind the "
          f"snapshots (the journal's first seq {first} at the gateway's kill, {len(segs)} "
          f"segments at the end); the strategy killed at {marks[:2]}, the whole trader at "
          f"{marks[2]} of {total}; no snapshots refused with exit 2; {len(log)} fills, each "
          f"ClOrdID once")
