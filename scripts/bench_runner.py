#!/usr/bin/env python3
"""Benchmark of the runner against the in-process fake Ollama (standard library only; not a unit test).

1. Scaling: the fake server answers every call after a fixed latency L with P parallel slots; the
   default pilot (15 episodes, one model, 480 calls) runs at --concurrency 1, 2, 4 and 8. Printed against
   the ideal calls x L / min(N, P): the calls' span (first request to last reply, as the server saw them)
   and the process's wall time (which adds starting Python, the checks and the manifest).
   Targets at L = 20 ms, P = 4: N = 4 at least 90% of ideal, N = 8 at least 95%.
2. Overhead: against a zero-latency server at concurrency 1, the runner's time per call, side by side
   with an fsync-only baseline (a record-sized line appended and fsynced per call, in the same folder):
   the difference is what the runner itself costs. Target: no more than the XR-001 reference runner's
   0.84 ms per call plus that fsync.

The runner runs as a separate process (`python scripts/run_pilot.py run ...`) so that the fake
server in this process does not share its interpreter.

Usage: python scripts/bench_runner.py [--latency 0.05] [--slots 4] [--episodes 15] [--concurrency 1,2,4,8]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))
from fake_servers import FakeOllama  # noqa: E402  (the tests' fake server is the benchmark's server)

MODEL = "bench:1b"
REFERENCE_OVERHEAD_MS = 0.84          # the XR-001 reference runner per call at zero latency, measured beside this


class TimedOllama(FakeOllama):
    """The fake server, noting when the first call arrived and the last reply went out."""

    def reset_span(self):
        self.first_arrival, self.last_reply, self.busy_s = None, None, 0.0

    def send_reply(self, handler, body, text_override=None, deadline=None):
        super().send_reply(handler, body, text_override, deadline)
        now = time.monotonic()
        with self.lock:
            if self.first_arrival is None or handler.arrived < self.first_arrival:
                self.first_arrival = handler.arrived
            self.last_reply = now
            self.busy_s += now - handler.arrived        # the server's own time on this call, from its request line

    def span(self) -> float:
        return self.last_reply - self.first_arrival


def fsync_baseline(folder: Path, calls: int) -> float:
    """Seconds per call of the journal's durable part alone: one record-sized line appended and fsynced."""
    folder.mkdir(parents=True, exist_ok=True)
    line = (json.dumps({"response": "x" * 600, "messages": [{"content": "y" * 2400}]}) + "\n").encode()
    started = time.perf_counter()
    fd = os.open(folder / "baseline.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        for _ in range(calls):
            os.write(fd, line)
            os.fsync(fd)
    finally:
        os.close(fd)
    return (time.perf_counter() - started) / calls


def run_once(url: str, out: Path, episodes: int, concurrency: int) -> tuple[float, float]:
    """Wall seconds and runner CPU seconds (user + system) of one `run` in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "run_pilot.py"), "run", "--models", MODEL,
                           "--host", url, "--out", str(out), "--episodes", str(episodes), "--concurrency",
                           str(concurrency), "--quiet", "--recheck", "0"], capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark run failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_startup_only() -> tuple[float, float]:
    """Wall and CPU seconds of starting Python and importing the runner (`run_pilot.py --help`)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "run_pilot.py"), "--help"], capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def calls_for(episodes: int) -> int:
    return episodes * (8 + 12 + 12)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per call at the fake server (L)")
    parser.add_argument("--slots", type=int, default=4, help="calls the fake server serves at once (P)")
    parser.add_argument("--episodes", type=int, default=15, help="episodes (15 = the default pilot)")
    parser.add_argument("--concurrency", default="1,2,4,8", help="comma-separated N values")
    args = parser.parse_args(argv)
    calls = calls_for(args.episodes)
    work = Path(tempfile.mkdtemp(prefix="ccl-bench-"))
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"{platform.system()} {platform.release()}")
    print(f"pilot: 1 model x 3 regimes x {args.episodes} episodes = {calls} calls; fake server latency "
          f"L = {args.latency * 1000:.0f} ms, P = {args.slots} parallel slots\n")
    try:
        print(f"{'N':>3} {'ideal s':>9} {'calls span s':>13} {'of ideal':>9} {'process wall s':>15} {'of ideal':>9}")
        with TimedOllama(models=[MODEL], latency_s=args.latency, slots=args.slots) as server:
            for n in [int(x) for x in args.concurrency.split(",")]:
                server.reset_span()
                wall, _ = run_once(server.url, work / f"scale-{n}", args.episodes, n)
                ideal = calls * args.latency / min(n, args.slots)
                print(f"{n:>3} {ideal:>9.2f} {server.span():>13.2f} {100 * ideal / server.span():>8.1f}% "
                      f"{wall:>15.2f} {100 * ideal / wall:>8.1f}%", flush=True)
        with TimedOllama(models=[MODEL], latency_s=0.0) as server:
            server.reset_span()
            wall, cpu = run_once(server.url, work / "overhead", args.episodes, 1)
            span, server_s = server.span(), server.busy_s
        fsync_s = fsync_baseline(work / "fsync", calls)
        startup_wall, startup_cpu = run_startup_only()
        per_call = 1000 * span / calls
        print(f"\nzero-latency server, concurrency 1, {calls} calls:")
        print(f"  calls span        {per_call:6.2f} ms per call (first request to last reply)")
        print(f"  fake server       {1000 * server_s / calls:6.2f} ms per call (reading the request, the fake model, "
              f"the reply; at N = 1 the runner waits for it)")
        print(f"  fsync-only        {1000 * fsync_s:6.2f} ms per call (a record-sized line appended and fsynced)")
        own = per_call - 1000 * (fsync_s + server_s / calls)
        print(f"  runner's own      {own:6.2f} ms per call (span minus server and fsync: HTTP, requests, records, "
              f"manifest; target: at most the reference's {REFERENCE_OVERHEAD_MS} ms)")
        print(f"  runner CPU        {1000 * (cpu - startup_cpu) / calls:6.2f} ms per call (process CPU minus "
              f"{1000 * startup_cpu:.0f} ms to start Python and import the runner)")
        print(f"  process wall      {1000 * wall / calls:6.2f} ms per call ({wall:.2f} s, of which "
              f"{startup_wall:.2f} s start-up and {wall - span:.2f} s outside the calls in all)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
