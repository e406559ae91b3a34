#!/usr/bin/env python3
"""Benchmark of the runner against a stand-in Ollama server in a process of its own (standard
library only; not a unit test).

The stand-in is the tests' fake server (tests/fake_servers.py): it answers every /api/chat after a
fixed latency L, counted from the request's arrival, with P parallel slots. It runs as its own
process, the way a user's server runs, in one of two kinds: `nodelay` sets TCP_NODELAY, as Ollama,
vLLM and llama.cpp's server do; `nagle` leaves Nagle's algorithm on and writes each reply's headers
and body apart, as Python's http.server (and the proxies and shims built on it) does. The runner is
`python scripts/run_pilot.py run ...` in a child process, on the default pilot (15 episodes, one
model, 480 calls, no determinism probe).

1. Scaling, with the targets: for each server kind and each N of --concurrency, --repeat runs
   (alternated, so that a slow spell of the machine hits every N), each beside a run of the bare
   client: the same calls (a finished run's requests, in the runner's order and with its
   dependencies: a cell's compactions one after another, then its answers) sent by N threads with
   kept-alive connections (TCP_QUICKACK set before each reply where the system has it) and nothing
   else: no journal, no fsync, no record, no scoring. The bare client is the practical limit of the
   stand-in server for these calls (a client with no runner at all reaches about 84% of the ideal at
   N = 4 and 93% at N = 8: the stand-in's own timer and interpreter), so the targets are the
   runner's throughput as a share of the bare client's in the same run (the bare client's calls span
   over the runner's): at least 97% at N = 4 and N = 8, with and without TCP_NODELAY on the server,
   in every run. Printed beside it: both against the ideal calls x L / min(N, P), and the runner's
   process wall time (which adds starting Python, the checks before the first call and the manifest
   after the last).
2. Breakdown per call, from the same runs: each run is traced (a few clock readings per call, a few
   microseconds) and the server logs each call's arrival, the moment its reply was due and the
   reply. Per call, in ms: building the request, waiting for one of the runner's N slots, sending,
   the server's time, the network and the server's queue, receiving, giving the slot back (with the
   parsing, in runners before issue 24), writing the request of a call that waited for the slot,
   parsing and the record, the journal's write and fsync, and the gap before the same thread's next
   call; then where the span goes against the ideal: the server's slots sitting idle at the start,
   in the middle and at the end (the last cells, with fewer calls left than slots), and the server's
   own lateness (its replies after they were due: its timer and its interpreter, not the runner);
   the middle split into the runner's turnarounds (the server's busy slots dipping for at most 5 ms
   between one reply and the next request) and longer stalls (the machine's: a disk holding an
   fsync, a descheduled process). The disk is measured alone before and after the runs
   (--disk-seconds): a record-sized line appended and fsynced 200 times a second, with no runner,
   gives the fsyncs' median, 99th percentile and longest wait, and the time they spent held for more
   than 20 ms: stalls that any runner fsyncing each call before the next meets.

3. Overhead: against a zero-latency stand-in at N = 1, the runner's CPU per call (the whole run's
   CPU less that of the same command run again on the finished folder, which does everything but the
   calls), beside an fsync-only baseline (a record-sized line appended and fsynced per call, in the
   same folder); and start-up (`run_pilot.py --help`: Python and the imports). Targets: CPU per call
   no more than the XR-001 reference runner's 0.85 ms (which never fsyncs; measured beside this one,
   issue 34) plus the fsync's, in every run; start-up under 0.15 s of CPU (the reference: 0.13 s).

`--runner` given twice (another checkout's run_pilot.py, then this one's) measures both, run by run,
alternated with each other and with the bare client, so that the machine's slow spells hit all of
them. Python's bytecode cache is written to a temporary folder (PYTHONPYCACHEPREFIX), as a user's
second run would find it, even where PYTHONDONTWRITEBYTECODE is set; nothing is written into the
repository. The figures in scripts/BENCHMARKS.md ("The runner against a stand-in server") came from:

    python3 scripts/bench/bench_runner.py --runner BEFORE/scripts/run_pilot.py \
        --runner scripts/run_pilot.py
    python3 scripts/bench/bench_runner.py --latency 0.05 --concurrency 1,4,8 --repeat 1 \
        --servers nodelay --skip-overhead
    python3 scripts/bench/bench_runner.py --latency 0.2 --concurrency 1,4 --repeat 1 \
        --servers nodelay --skip-overhead

Usage: python scripts/bench/bench_runner.py [--latency 0.02] [--slots 4] [--episodes 15]
       [--concurrency 1,4,8]
       [--repeat 3] [--servers nodelay,nagle] [--runner PATH/run_pilot.py [--runner ...]]
       [--disk-seconds 10] [--skip-overhead | --skip-scaling]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench_runner_trace import (BREAKDOWN_ORDER, STALL_S, call_figures, server_figures,
                                traced_run)

REPO_ROOT = Path(__file__).resolve().parents[2]      # scripts/bench/ -> the repository
MODEL = "bench:1b"
# the XR-001 reference runner's CPU per call at zero latency (issue 34)
REFERENCE_CPU_MS = 0.85
REFERENCE_STARTUP_S = 0.13          # and its start-up, measured beside this runner (issue 34)
# this runner's start-up (`--help`, bytecode cached), CPU seconds
STARTUP_TARGET_S = 0.15
# the runner's throughput at least this share of the bare client's, in every run
TARGET_LEVELS = (4, 8)
TARGET_SHARE_OF_BARE = 0.97
SERVER_KINDS = ("nodelay", "nagle")


# -- the stand-in server, in a process of its own --------------------------------------------------
def serve_stand_in(latency: float, slots: int, nagle: bool) -> None:
    """Serve the fake Ollama until stdin closes; the first line on stdout is its address. GET
    /bench/calls gives each chat call's (arrival, the moment its reply was due, reply sent) on the
    machine's monotonic clock, and POST /bench/reset forgets them. A reply is due L after the call's
    arrival, or after it got one of the P slots when it had to wait for one (less the reading of its
    request)."""
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from fake_servers import FakeOllama

    class BenchOllama(FakeOllama):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.timeline: list[tuple[float, float, float]] = []

        def send_reply(self, handler, body, text_override=None, deadline=None):
            super().send_reply(handler, body, text_override, deadline)
            with self.lock:
                self.timeline.append((handler.arrived, deadline, time.monotonic()))

        def handler_class(self):
            owner = self

            class Handler(super().handler_class()):
                def do_GET(self):
                    if self.path == "/bench/calls":
                        with owner.lock:
                            self._send(200, owner.timeline)
                    else:
                        super().do_GET()

                def do_POST(self):
                    if self.path == "/bench/reset":
                        self._body()
                        with owner.lock:
                            owner.timeline = []
                            owner.chat_requests = []
                        self._send(200, {})
                    else:
                        super().do_POST()
            return Handler

    with BenchOllama(models=[MODEL], latency_s=latency, slots=slots, nagle=nagle) as server:
        print(server.url, flush=True)
        sys.stdin.read()


class StandIn:
    """The stand-in server as a child process; use as a context manager."""

    def __init__(self, latency: float, slots: int, kind: str):
        self.kind = kind
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", "--latency",
                                      str(latency), "--slots",
                                      str(slots)] + (["--nagle"] if kind == "nagle" else []),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            raise SystemExit("the stand-in server did not start")

    def timeline(self) -> list[tuple[float, float, float]]:
        with urllib.request.urlopen(self.url + "/bench/calls", timeout=30) as reply:
            return [tuple(item) for item in json.loads(reply.read())]

    def reset(self) -> None:
        request = urllib.request.Request(self.url + "/bench/reset", data=b"{}", method="POST")
        with urllib.request.urlopen(request, timeout=30) as reply:
            reply.read()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


# -- the runner in a child process (traced: bench_runner_trace.py) ---------------------------------
def run_runner(runner: Path, url: str, out: Path, episodes: int, concurrency: int, env: dict,
               trace: Path | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one `run` in a child process."""
    argv = ["run", "--models", MODEL, "--host", url, "--out", str(out), "--episodes", str(episodes),
            "--concurrency", str(concurrency), "--quiet", "--recheck", "0"]
    command = [sys.executable, __file__, "--traced-run", str(trace), "--runner", str(runner), "--",
               *argv] \
        if trace else [sys.executable, str(runner), *argv]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark run failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


# -- the bare client: the same calls with no runner at all -----------------------------------------
def recorded_cells(run_dir: Path) -> list[list[list[bytes]]]:
    """The calls of a finished run as a bare client sends them: per cell, in the order the runner
    schedules cells at N > 1 (episode by episode, the longest cells first), its steps in order, each
    step the request bodies sent at once: one compaction at a time, then the answers (the first
    alone where the run's prompt cache was on, as the runner sends them)."""
    cells: dict[tuple, dict[str, dict]] = {}
    cache_on = False
    for path in sorted((run_dir / "raw").glob("*.jsonl")):
        if path.name == "recheck.jsonl":
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            body = dict(record["request"])
            body = {"model": body.pop("model"), "messages": record["messages"], **body}
            cells.setdefault((record["episode"], record["model"], record["regime"]),
                             {})[record["kind"]] = body
            cache_on = cache_on or record.get("prompt_cache") == "on"

    def number(kind: str) -> int:
        return int(kind.rsplit("_", 1)[1])

    plans = []
    for key in sorted(cells, key=lambda k: (k[0], -len(cells[k]), k)):
        kinds = cells[key]
        steps = [[kinds[k]] for k in sorted((k for k in kinds if k.startswith("compact_")),
                                            key=number)]
        answers = [kinds[k] for k in sorted((k for k in kinds if not k.startswith("compact_")),
                                            key=number)]
        if cache_on and len(answers) > 1:
            steps += [answers[:1], answers[1:]]
        elif answers:
            steps.append(answers)
        plans.append([[json.dumps(b).encode("utf-8") for b in step] for step in steps])
    return plans


def bare_client(run_dir: Path, url: str, concurrency: int) -> int:
    """Send a finished run's calls (recorded_cells) to the server at `url` as a client with no
    runner would: N threads, each with a kept-alive connection (TCP_QUICKACK set before each reply
    where the system has it, so that no server's reply waits for a delayed ACK), taking the ready
    call of the earliest cell; the reply read and parsed, and nothing written, hashed or scored. The
    practical limit of the stand-in server for these calls."""
    import http.client
    import heapq
    import socket
    import threading

    plans = recorded_cells(run_dir)
    host, port = url.rsplit("/", 1)[-1].rsplit(":", 1)
    ready: list = []                    # (cell, step, body index)
    left = {cell: [len(step) for step in plan] for cell, plan in enumerate(plans)}
    lock = threading.Condition()
    state = {"open": sum(len(step) for plan in plans for step in plan), "error": None}
    for cell, plan in enumerate(plans):
        ready += [(cell, 0, i) for i in range(len(plan[0]))]
    heapq.heapify(ready)
    quickack = getattr(socket, "TCP_QUICKACK", None)

    def worker() -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            while True:
                with lock:
                    while not ready and state["open"] and state["error"] is None:
                        lock.wait()
                    if not ready or state["error"] is not None:
                        return
                    cell, step, i = heapq.heappop(ready)
                conn.request("POST", "/api/chat", body=plans[cell][step][i],
                             headers={"Content-Type": "application/json"})
                if quickack is not None and conn.sock is not None:
                    conn.sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)
                reply = conn.getresponse()
                json.loads(reply.read())
                with lock:
                    state["open"] -= 1
                    left[cell][step] -= 1
                    if not left[cell][step] and step + 1 < len(plans[cell]):
                        for j in range(len(plans[cell][step + 1])):
                            heapq.heappush(ready, (cell, step + 1, j))
                    lock.notify_all()
        except BaseException as err:
            with lock:
                state["error"] = err
                lock.notify_all()
        finally:
            conn.close()

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if state["error"] is not None:
        raise SystemExit(f"the bare client failed: {state['error']}")
    return 0


def run_bare(template: Path, url: str, concurrency: int, env: dict) -> float:
    """Wall seconds of the bare client in a child process of its own, as the runner's runs are."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--bare-client", str(template), "--host", url,
                           "--concurrency",
                           str(concurrency)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"the bare client failed (exit {proc.returncode}): "
                         f"{proc.stderr.strip()[-400:]}")
    return time.perf_counter() - started


# -- the disk alone, and the tables' helpers -------------------------------------------------------
def fsync_baseline(folder: Path, calls: int) -> tuple[float, float]:
    """Wall and CPU seconds per call of the journal's durable part alone: a record-sized line
    appended, fsynced."""
    folder.mkdir(parents=True, exist_ok=True)
    line = (json.dumps({"response": "x" * 600, "messages": [{"content": "y" * 2400}]})
            + "\n").encode()
    started, cpu = time.perf_counter(), time.process_time()
    fd = os.open(folder / "baseline.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        for _ in range(calls):
            os.write(fd, line)
            os.fsync(fd)
    finally:
        os.close(fd)
    return (time.perf_counter() - started) / calls, (time.process_time() - cpu) / calls


def disk_profile(folder: Path, seconds: float, rate: int = 200) -> str:
    """The disk alone, with no runner: a record-sized line appended and fsynced `rate` times a
    second for `seconds`, as a run at N = 4 fsyncs, in the folder the runs write to. Says how long
    its fsyncs took and how much time they spent held for more than 20 ms: stalls no runner that
    fsyncs each call can avoid."""
    line = b'{"record": "' + b"x" * 700 + b'"}\n'
    fd = os.open(folder / "disk.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    held = []
    try:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            started = time.perf_counter()
            os.write(fd, line)
            os.fsync(fd)
            held.append(1000 * (time.perf_counter() - started))
            time.sleep(max(0.0, 1 / rate - (time.perf_counter() - started)))
    finally:
        os.close(fd)
    held.sort()
    long = [ms for ms in held if ms > 20]
    return (
        f"{len(held)} fsyncs in {seconds:g} s: median {statistics.median(held):.2f} ms, 99th "
        f"percentile {held[int(0.99 * (len(held) - 1))]:.1f} ms, longest {held[-1]:.0f} ms; "
        f"{len(long)} held over 20 ms, {sum(long) / 1000:.2f} s in all "
        f"({100 * sum(long) / 1000 / seconds:.1f}% of the time)"
    )


def timed_child(command: list[str], env: dict) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, capture_output=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def calls_for(episodes: int) -> int:
    return episodes * (8 + 12 + 12)


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def spread(values: list[float], fmt: str = "{:.1f}") -> str:
    return ", ".join(fmt.format(v) for v in values)


# -- the benchmark ---------------------------------------------------------------------------------
def scaling(args, runners: list[Path], work: Path, env: dict, calls: int) -> dict[Path, bool]:
    """Parts 1 and 2: every server kind, N, repetition and runner, each run beside one of the bare
    client on the same calls (alternated, so that a slow spell of the machine hits each); prints the
    tables and returns, per runner, whether every target was met in every run."""
    levels = [int(x) for x in args.concurrency.split(",")]
    met = {runner: True for runner in runners}
    template = work / "template"                # a finished run whose calls the bare client sends
    for kind in args.servers.split(","):
        results = {runner: {n: [] for n in levels} for runner in [BARE, *runners]}
        with StandIn(args.latency, args.slots, kind) as server:
            if not template.exists():
                run_runner(runners[-1], server.url, template, args.episodes, max(levels), env)
            for rep in range(args.repeat):
                for n in levels:
                    for number, runner in enumerate([BARE, *runners]):
                        server.reset()
                        trace_path = work / f"trace-{number}-{kind}-{n}-{rep}.json"
                        if runner is BARE:
                            wall, cpu, trace = run_bare(template, server.url, n, env), 0.0, []
                        else:
                            wall, cpu = run_runner(runner, server.url,
                                                   work / f"scale-{number}-{kind}-{n}-{rep}",
                                                   args.episodes, n, env, trace_path)
                            trace = json.loads(trace_path.read_text())
                        timeline = server.timeline()
                        if len(timeline) != calls:
                            raise SystemExit(f"the server saw {len(timeline)} chat calls, not "
                                             f"{calls}")
                        figures = server_figures(timeline, n, args.slots, args.latency)
                        figures.update(wall=wall, cpu=cpu, load=load_average(),
                                       steps=call_figures(trace, timeline, n) if trace else {})
                        results[runner][n].append(figures)
                        who = "bare client" if runner is BARE else f"runner {number}"
                        print(f"  [{who}, {kind}, N={n}, run {rep + 1}: span {figures['span']:.2f} "
                              f"s, {100 * figures['ideal'] / figures['span']:.1f}% of ideal; load "
                              f"{figures['load']}]",
                              file=sys.stderr, flush=True)
        for number, runner in enumerate(runners, 1):
            met[runner] &= print_scaling(kind, results[runner], results[BARE], args,
                                         number if len(runners) > 1 else None)
    return met


BARE = Path("bare client")              # the bare client's place among the runners measured


def print_scaling(kind: str, results: dict[int, list[dict]], bare: dict[int, list[dict]], args,
                  number: int | None) -> bool:
    what = ("TCP_NODELAY set" if kind == "nodelay" else "Nagle on (no TCP_NODELAY), headers and "
            "body written apart")
    print(f"\n{f'runner {number}: ' if number else ''}stand-in server as its own process, {what}; "
          f"L = {1000 * args.latency:.0f} ms, P = {args.slots}; {args.repeat} runs each, each "
          "beside one of the bare client on the same calls")
    print(f"{'N':>3} {'ideal s':>8} {'bare client span s':>20} {'runner span s':>20} "
          f"{'runner of bare':>22} "
          f"{'bare of ideal':>22} {'runner of ideal':>22} {'process wall s':>20}")
    met = True
    for n, runs in results.items():
        ideal = runs[0]["ideal"]
        share = [100 * b["span"] / r["span"] for b, r in zip(bare[n], runs)]
        print(f"{n:>3} {ideal:>8.2f} {spread([b['span'] for b in bare[n]], '{:.2f}'):>20} "
              f"{spread([r['span'] for r in runs], '{:.2f}'):>20} {spread(share) + '%':>22} "
              f"{spread([100 * ideal / b['span'] for b in bare[n]]) + '%':>22} "
              f"{spread([100 * ideal / r['span'] for r in runs]) + '%':>22} "
              f"{spread([r['wall'] for r in runs], '{:.2f}'):>20}")
        if n in TARGET_LEVELS:
            ok = all(x >= 100 * TARGET_SHARE_OF_BARE for x in share)
            met &= ok
            print(f"    target at N = {n}: the runner's throughput at least "
                  f"{100 * TARGET_SHARE_OF_BARE:.0f}% of the bare client's in every run: "
                  f"{'met' if ok else 'NOT met'} ({min(share):.1f}% at worst)")
    print("    load average (1, 5, 15 min) after each run: " +
          "; ".join(f"N={n}: " + " | ".join(r["load"] for r in runs) for n,
                    runs in results.items()))
    print("\n  where the time goes, ms per call: mean (median) of each run, the runs in order")
    for n, runs in results.items():
        print(f"  N = {n}:")
        for step in BREAKDOWN_ORDER:
            values = [r["steps"].get(step) for r in runs if r["steps"]]
            if values and all(v is not None for v in values):
                print(f"    {step:<36} " + ", ".join(f"{m:6.2f}"
                                                     + (f" ({d:5.2f})" if d is not None else " "
                                                        * 8)
                                                      for m, d in values))
        print(f"    {'the server late (reply after due)':<36} "
              f"{spread([r['late_ms'] for r in runs], '{:6.2f}')}"
              f"   (bare client: {spread([b['late_ms'] for b in bare[n]], '{:6.2f}')})")
        print("    span against the ideal, s: the server's slots idle at the start | in the "
              "middle | at the end, and the server's own lateness; the middle split into the "
              f"client's turnarounds (dips of at most {1000 * STALL_S:g} ms between a reply and "
              "the next request: how many, median) and longer stalls")
        for who, series in (("runner", runs), ("bare  ", bare[n])):
            for r in series:
                late = r["calls"] * r["late_ms"] / 1000 / min(n, args.slots)
                print(f"      {who} span {r['span']:.3f} = ideal {r['ideal']:.3f} + idle "
                      f"{r['idle_start']:.3f} | {r['idle_middle']:.3f} | {r['idle_end']:.3f} + "
                      f"server late {late:.3f}; middle = turnarounds {r['idle_turnaround']:.3f} "
                      f"({r['dips']} dips, median {r['dip_median_ms']:.2f} ms) + stalls "
                      f"{r['idle_stalls']:.3f}")
    return met


def overhead(args, runners: list[Path], work: Path, env: dict, calls: int) -> None:
    """Part 3: CPU per call and start-up against a zero-latency stand-in, the runners alternated."""
    rows: dict[Path, list[dict]] = {runner: [] for runner in runners}
    with StandIn(0.0, args.slots, "nodelay") as server:
        for rep in range(args.repeat):
            for number, runner in enumerate(runners, 1):
                server.reset()
                out = work / f"overhead-{number}-{rep}"
                wall, cpu = run_runner(runner, server.url, out, args.episodes, 1, env)
                timeline = server.timeline()
                again_wall, again_cpu = run_runner(runner, server.url, out, args.episodes, 1, env)
                span = max(t[2] for t in timeline) - min(t[0] for t in timeline)
                server_s = sum(t[2] - t[0] for t in timeline)
                fsync_wall, fsync_cpu = fsync_baseline(work / f"fsync-{number}-{rep}", calls)
                startup_wall, startup_cpu = timed_child([sys.executable, str(runner), "--help"],
                                                        env)
                rows[runner].append({"span": span, "server": server_s, "wall": wall, "cpu": cpu,
                                     "again_wall": again_wall, "again_cpu": again_cpu,
                                     "fsync_wall": fsync_wall,
                                     "fsync_cpu": fsync_cpu, "startup_wall": startup_wall,
                                     "startup_cpu": startup_cpu, "load": load_average()})
    for number, runner in enumerate(runners, 1):
        print(f"\n{f'runner {number}: ' if len(runners) > 1 else ''}zero-latency stand-in "
              f"(TCP_NODELAY), N = 1, {calls} calls, {args.repeat} runs:")
        print_overhead(rows[runner], calls)


def print_overhead(rows: list[dict], calls: int) -> None:
    per = lambda f: [1000 * f(r) / calls for r in rows]          # noqa: E731
    cpu_per_call = per(lambda r: r["cpu"] - r["again_cpu"])
    fsync_cpu = [1000 * r["fsync_cpu"] for r in rows]
    print(f"  calls span                {spread(per(lambda r: r['span']), '{:5.2f}')} ms per call")
    print(f"  the server's time         {spread(per(lambda r: r['server']), '{:5.2f}')} ms per "
          "call (at N = 1 the runner waits for it)")
    print("  fsync-only baseline       "
          f"{spread([1000 * r['fsync_wall'] for r in rows], '{:5.2f}')} ms per call "
          f"(CPU {spread(fsync_cpu, '{:.3f}')} ms)")
    print("  runner's own time         "
          f"{spread(per(lambda r: r['span'] - r['server'] - calls * r['fsync_wall']), '{:5.2f}')}"
          f" ms per call (span less the server and the fsync)")
    print(f"  runner CPU                {spread(cpu_per_call, '{:5.2f}')} ms per call (the run's "
          "CPU less the same command on the finished folder: "
          f"{spread([r['again_cpu'] for r in rows], '{:.2f}')} s)")
    target = [REFERENCE_CPU_MS + f for f in fsync_cpu]
    print(f"    target: at most the reference's {REFERENCE_CPU_MS} ms plus the fsync's CPU "
          f"({spread(target, '{:.2f}')} ms): met in "
          f"{sum(c <= t for c, t in zip(cpu_per_call, target))} of {len(rows)} runs")
    startup = [r["startup_cpu"] for r in rows]
    print(f"  start-up (--help)         {spread([r['startup_wall'] for r in rows], '{:.3f}')} s "
          f"wall, {spread(startup, '{:.3f}')} s CPU (the reference: {REFERENCE_STARTUP_S} s)")
    print(f"    target: under {STARTUP_TARGET_S} s of CPU: met in "
          f"{sum(c < STARTUP_TARGET_S for c in startup)} of {len(rows)} runs")
    print(f"  a run with nothing to do  {spread([r['again_wall'] for r in rows], '{:.3f}')} s "
          f"wall, {spread([r['again_cpu'] for r in rows], '{:.3f}')} s CPU (start-up, the server "
          "check, the manifest)")
    print(f"  process wall              {spread([r['wall'] for r in rows], '{:.2f}')} s")
    print(f"  load average after each run: {' | '.join(r['load'] for r in rows)}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # the runner in a child process, traced (see traced_run)
    if argv[:1] == ["--traced-run"]:
        split = argv.index("--")
        return traced_run(Path(argv[1]), Path(argv[argv.index("--runner") + 1]), argv[split + 1:])
    # the bare client in a child process (see bare_client)
    if argv[:1] == ["--bare-client"]:
        return bare_client(Path(argv[1]), argv[argv.index("--host") + 1],
                           int(argv[argv.index("--concurrency") + 1]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per call at the "
                        "stand-in (L)")
    parser.add_argument("--slots", type=int, default=4,
                        help="calls the stand-in serves at once (P)")
    parser.add_argument("--episodes", type=int, default=15,
                        help="episodes (15 = the default pilot)")
    parser.add_argument("--concurrency", default="1,4,8", help="comma-separated N values")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each N and server kind")
    parser.add_argument("--servers", default=",".join(SERVER_KINDS),
                        help="stand-in kinds: nodelay (TCP_NODELAY set), nagle (left off)")
    parser.add_argument("--runner", type=Path, action="append",
                        help="a run_pilot.py to measure (default: this checkout's); give it twice, "
                        "another "
                             "checkout's and this one's, to compare them run by run, alternated")
    parser.add_argument("--disk-seconds", type=float, default=10.0,
                        help="seconds of fsyncs alone, before and after the runs, to show how "
                             "often the disk holds one (default 10; 0: none)")
    parser.add_argument("--skip-overhead", action="store_true", help="only the scaling runs")
    parser.add_argument("--skip-scaling", action="store_true", help="only the zero-latency "
                        "overhead runs")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--nagle", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve_stand_in(args.latency, args.slots, args.nagle)
        return 0
    if any(k not in SERVER_KINDS for k in args.servers.split(",")):
        parser.error(f"--servers takes {', '.join(SERVER_KINDS)}")
    try:
        levels = [int(x) for x in args.concurrency.split(",")]
    except ValueError:
        levels = []
    if (
        not levels
        or min(levels) < 1
        or args.repeat < 1
        or args.slots < 1
        or args.episodes < 1
        or args.latency < 0
    ):
        parser.error("--concurrency takes whole numbers of at least 1 (1,4,8); --repeat, --slots "
                     "and --episodes at least 1; --latency at least 0")
    runners = [r.resolve() for r in args.runner or [REPO_ROOT / "scripts" / "run_pilot.py"]]
    missing = [str(r) for r in runners if not r.is_file()]
    if missing:
        parser.error(f"no run_pilot.py at {', '.join(missing)}")
    calls = calls_for(args.episodes)
    work = Path(tempfile.mkdtemp(prefix="ccl-bench-"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",
                                                            "OLLAMA_HOST")}
    # bytecode cached as a user's second run finds it
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, "
          f"{platform.system()} {platform.release()}; load average at the start {load_average()}")
    for number, runner in enumerate(runners, 1):
        print(f"runner {number}: {runner}")
    print(f"pilot: 1 model x 3 regimes x {args.episodes} episodes = {calls} calls")
    try:
        for runner in runners:                  # fills the bytecode cache
            subprocess.run([sys.executable, str(runner), "--help"], capture_output=True, env=env)
        if args.disk_seconds > 0:
            print(f"disk before the runs: {disk_profile(work, args.disk_seconds)}", flush=True)
        if not args.skip_scaling:
            met = scaling(args, runners, work, env, calls)
        if not args.skip_overhead:
            overhead(args, runners, work, env, calls)
        if args.disk_seconds > 0:
            print(f"\ndisk after the runs: {disk_profile(work, args.disk_seconds)}")
        if not args.skip_scaling and set(TARGET_LEVELS) & set(levels):
            for number, runner in enumerate(runners, 1):
                print(f"\nrunner {number}: scaling target (N = 4 and 8: the runner's throughput at "
                      f"least {100 * TARGET_SHARE_OF_BARE:.0f}% of the bare client's, in every "
                      f"run): {'met' if met[runner] else 'NOT met'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
