#!/usr/bin/env python3
"""Benchmark of the runner against the in-process fake Ollama (standard library only; not a unit test).

1. Scaling: the fake server answers every call after a fixed latency L with P parallel slots; the
   default pilot (15 episodes, one model, 480 calls) runs at --concurrency 1, 2, 4 and 8, and the wall
   time is printed against the ideal calls x L / min(N, P). Target: at least 90% of ideal when N = P.
2. Overhead: against a zero-latency server, the runner's own time per call: wall time and the CPU
   time of the runner process (every call fsynced, every cell's manifest replaced atomically).
   Target: under 2 ms per call.

The runner runs as a separate process (`python scripts/run_pilot.py run ...`) so that the fake
server in this process does not share its interpreter.

Usage: python scripts/bench_runner.py [--latency 0.05] [--slots 4] [--episodes 15]
"""
from __future__ import annotations

import argparse
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


def run_once(url: str, out: Path, episodes: int, concurrency: int) -> tuple[float, float]:
    """Wall seconds and runner CPU seconds (user + system) of one `run` in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "run_pilot.py"), "run", "--models", MODEL,
                           "--host", url, "--out", str(out), "--episodes", str(episodes), "--concurrency",
                           str(concurrency), "--quiet"], capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark run failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def calls_for(episodes: int) -> int:
    return episodes * (8 + 12 + 12)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per call at the fake server (L)")
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
        print(f"{'N':>3} {'wall s':>9} {'ideal s':>9} {'of ideal':>9}")
        with FakeOllama(models=[MODEL], latency_s=args.latency, slots=args.slots) as server:
            for n in [int(x) for x in args.concurrency.split(",")]:
                wall, _ = run_once(server.url, work / f"scale-{n}", args.episodes, n)
                ideal = calls * args.latency / min(n, args.slots)
                print(f"{n:>3} {wall:>9.2f} {ideal:>9.2f} {100 * ideal / wall:>8.1f}%")
        with FakeOllama(models=[MODEL], latency_s=0.0) as server:
            wall, cpu = run_once(server.url, work / "overhead", args.episodes, 1)
        print(f"\nzero-latency server, concurrency 1: {wall:.2f} s wall for {calls} calls = "
              f"{1000 * wall / calls:.2f} ms per call (process start included); runner CPU "
              f"{1000 * cpu / calls:.2f} ms per call (target: under 2 ms)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
