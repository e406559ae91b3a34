"""The runner benchmark's measurements of one run (scripts/bench/bench_runner.py; not a unit
test): the runner traced call by call in its child process (traced_run: a few clock readings per
call), and the figures read from that trace and the stand-in server's timeline (server_figures,
call_figures, the breakdown in BREAKDOWN_ORDER)."""
from __future__ import annotations

import importlib
import json
import os
import statistics
import sys
import time
from pathlib import Path


# -- the runner, traced ----------------------------------------------------------------------------
def traced_run(trace_path: Path, runner: Path, argv: list[str]) -> int:
    """Run the runner's main(argv) in this process with a clock reading at each step of each call,
    and write the calls' steps to trace_path as JSON. The steps: make_call entered (the call's
    messages are built), a runner slot asked for and taken, the request written, the reply's headers
    and body read, the slot given back, the journal write and its fsync, make_call done."""
    import http.client
    import threading

    sys.path.insert(0, str(runner.parent))
    from pilot import cli, runfolder, runner as pilot_runner
    import pilot.studies  # noqa: F401  (registers the studies, as run_pilot.py does)
    # the slots' classes: in the runner's namespace, or (since the runner imports them where it
    # sends, not when it is imported) in pilot/slots.py (in the transport, before they moved there)
    slots_home = (pilot_runner if hasattr(pilot_runner, "CallSlots") else importlib.import_module(
        "pilot.slots" if (runner.parent / "pilot" / "slots.py").is_file() else "pilot.transport"))

    clock = time.monotonic
    calls: list[dict] = []
    local = threading.local()

    def current() -> dict | None:
        return getattr(local, "call", None)

    def mark(step: str) -> None:
        call = current()
        if call is not None:
            call[step] = clock()

    def wrap(owner, name, before=None, after=None):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            if before:
                before()
            try:
                return original(*args, **kwargs)
            finally:
                if after:
                    after()
        setattr(owner, name, wrapper)

    def call_started():
        local.call = {"thread": threading.current_thread().name, "made": clock(), "fsync_s": 0.0}
        calls.append(local.call)

    def call_done():
        mark("done")
        local.call = None

    def fsync_timed(original):
        def fsync(fd):
            started = clock()
            try:
                return original(fd)
            finally:
                call = current()
                if call is not None and "journal_start" in call and "journal_end" not in call:
                    call["fsync_s"] += clock() - started
        return fsync

    wrap(pilot_runner, "make_call", call_started, call_done)
    hold = getattr(slots_home, "SlotHold", None)
    if hold is not None and hasattr(hold, "sending"):
        # the request is written once the call holds a slot, by its own thread or by the one that
        # freed the slot
        sending = hold.sending

        def traced_sending(self, send):
            call = current()
            if call is not None:
                call["slot_asked"] = clock()

            def traced_send():
                started = clock()
                send()
                if call is not None:
                    call.update(slot_got=started, sent=clock())
                writer = current()
                # written by the thread that freed the slot
                if writer is not None and writer is not call:
                    writer["handoff_s"] = writer.get("handoff_s", 0.0) + clock() - started
            return sending(self, traced_send)
        hold.sending = traced_sending
    # the runner before issue 24: the slot, then the request, in one thread
    else:
        wrap(slots_home.CallSlots, "acquire", lambda: mark("slot_asked"), lambda: mark("slot_got"))
        wrap(http.client.HTTPConnection, "request", None, lambda: mark("sent"))
    wrap(slots_home.CallSlots, "release", lambda: mark("released"))
    wrap(http.client.HTTPConnection, "getresponse", None, lambda: mark("headers"))
    wrap(http.client.HTTPResponse, "read", None, lambda: mark("body"))
    wrap(runfolder.Journal, "append", lambda: mark("journal_start"), lambda: mark("journal_end"))
    os.fsync = fsync_timed(os.fsync)
    code = cli.main(argv)
    trace_path.write_text(json.dumps(calls))
    return code


# -- the figures -----------------------------------------------------------------------------------
def idle_slot_time(intervals: list[tuple[float, float]], capacity: int, start: float,
                   end: float) -> float:
    """Slot-seconds in [start, end] during which fewer than `capacity` of the intervals were
    open."""
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    idle, open_now, at = 0.0, 0, start
    for moment, step in events:
        moment = min(max(moment, start), end)
        idle += max(0, capacity - open_now) * (moment - at)
        open_now += step
        at = moment
    return idle + max(0, capacity - open_now) * (end - at)


def server_figures(timeline: list[tuple[float, float, float]], concurrency: int, slots: int,
                   latency: float) -> dict:
    """Span, the server's time per call and its lateness, and its slots' idle time at the start, in
    the middle and at the end. A call takes a slot's L from L before its reply was due until its
    reply went out."""
    capacity = min(concurrency, slots)
    first, last = min(t[0] for t in timeline), max(t[2] for t in timeline)
    served = [(due - latency, r) for _, due, r in timeline]
    # the start: until `capacity` calls are first served at once; the end: after the last moment
    # they were
    events = sorted([(s, 1) for s, _ in served] + [(r, -1) for _, r in served])
    open_now, full_at, full_until = 0, None, None
    for moment, step in events:
        was_full = open_now >= capacity
        open_now += step
        if open_now >= capacity and full_at is None:
            full_at = moment
        if was_full and open_now < capacity:
            full_until = moment
    full_at = full_at or last
    full_until = max(full_until or full_at, full_at)
    calls = len(timeline)
    dips = capacity_dips(events, capacity, full_at, full_until)
    return {"calls": calls, "span": last - first, "ideal": calls * latency / capacity,
            "server_ms": 1000 * statistics.fmean(r - a for a, _, r in timeline),
            "late_ms": 1000 * statistics.fmean(r - due for _, due, r in timeline),
            "idle_start": idle_slot_time(served, capacity, first, full_at) / capacity,
            "idle_middle": idle_slot_time(served, capacity, full_at, full_until) / capacity,
            "idle_end": idle_slot_time(served, capacity, full_until, last) / capacity,
            "dips": len(dips), "dip_median_ms": 1000 * statistics.median(d for d,
            _ in dips) if dips else 0.0,
            "idle_turnaround": sum(i for d, i in dips if d <= STALL_S) / capacity,
            "idle_stalls": sum(i for d, i in dips if d > STALL_S) / capacity}


# a dip of the server's busy slots longer than this is a stall, not a call's turnaround
STALL_S = 0.005


def capacity_dips(events: list[tuple[float, int]], capacity: int, start: float,
                  end: float) -> list[tuple]:
    """Each spell in [start, end] during which fewer than `capacity` calls were served: (its length,
    the slot- seconds left idle in it). Between one reply and the next request a slot dips for the
    runner's turnaround."""
    dips, open_now, spell, idle, at = [], 0, None, 0.0, start
    for moment, step in events:
        if start <= moment <= end and open_now < capacity:
            idle += (capacity - open_now) * (moment - max(at, start))
        at = moment
        open_now += step
        if start <= moment <= end:
            if open_now < capacity and spell is None:
                spell, idle = moment, 0.0
            elif open_now >= capacity and spell is not None:
                dips.append((moment - spell, idle))
                spell = None
    return dips


def call_figures(trace: list[dict], timeline: list[tuple[float, float, float]],
                 concurrency: int) -> dict:
    """Mean ms per call of each step the runner's calls went through (see traced_run)."""
    calls = [c for c in trace if all(k in c for k in ("slot_asked", "slot_got", "sent", "headers",
                                                      "body",
                                                       "released", "journal_end", "done"))]
    if not calls:
        return {}
    def mean(f) -> tuple[float, float]:
        values = [f(c) for c in calls]
        return 1000 * statistics.fmean(values), 1000 * statistics.median(values)

    server = [r - a for a, _, r in timeline]
    server_ms = 1000 * statistics.fmean(server), 1000 * statistics.median(server)
    figures = {
        "building the request": mean(lambda c: c["slot_asked"] - c["made"]),
        "waiting for a slot": mean(lambda c: c["slot_got"] - c["slot_asked"]),
        "sending": mean(lambda c: c["sent"] - c["slot_got"]),
        "the server's time": server_ms,
        "network and queue": (mean(lambda c: c["headers"] - c["sent"])[0] - server_ms[0], None),
        "receiving": mean(lambda c: c["body"] - c["headers"]),
        "until the slot is given back": mean(lambda c: c["released"] - c["body"]),
        "writing a waiting call's request": mean(lambda c: c.get("handoff_s", 0.0)),
        "parsing and the record": mean(lambda c: c["journal_start"] - c["released"]
                                       - c.get("handoff_s", 0.0)),
        "journal write": mean(lambda c: c["journal_end"] - c["journal_start"] - c["fsync_s"]),
        "journal fsync": mean(lambda c: c["fsync_s"]),
        "after the journal": mean(lambda c: c["done"] - c["journal_end"]),
    }
    by_thread: dict[str, list[dict]] = {}
    for c in sorted(calls, key=lambda c: c["made"]):
        by_thread.setdefault(c["thread"], []).append(c)
    gaps = [b["made"] - a["done"] for seq in by_thread.values() for a, b in zip(seq, seq[1:])]
    figures["gap before the thread's next call"] = \
        (1000 * statistics.fmean(gaps), 1000 * statistics.median(gaps)) if gaps else (0.0, 0.0)
    held = [(c["slot_got"], c["released"]) for c in calls]
    start, end = min(h[0] for h in held), max(h[1] for h in held)
    idle = 1000 * idle_slot_time(held, concurrency, start, end) / concurrency / len(calls)
    figures["runner slots idle"] = (idle, None)
    return figures


BREAKDOWN_ORDER = ["building the request", "waiting for a slot", "sending", "the server's time",
                   "network and queue",
                   "receiving", "until the slot is given back", "writing a waiting call's request",
                   "parsing and the record", "journal write", "journal fsync",
                   "after the journal", "gap before the thread's next call", "runner slots idle"]
