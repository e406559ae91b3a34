#!/usr/bin/env python3
"""Benchmark of `analyze` and `paper/make_figures.py` on large synthetic banks (standard library
only; not a test).

Budget sweeps and repeated samples make banks of a million probes routine. This writes banks in the
runner's own results.json format, every probe on a question of a real task file (so the probes are
checked against it as a user's would be), with many R1/R2 disagreements, in one of two designs:

- `sweep` (default): the pre-registered 15 episodes, compaction budgets 128, 256, 512 and 1024, and
  as many repeated samples (at most the runner's 100) and models as the size needs: the banks budget
  sweeps and repeated samples make (1,000,000 probes: 7 models x 4 budgets x 99 samples, 997,920
  probes);
- `published`: the field set of the published reference bank (no budget, no sample), 6 models, on a
  task file generated with as many episodes as the size needs (written beside the bank and passed
  with --tasks).

Either may carry this runner's per-call records (`--with-calls`: 4/3 of a record per probe). It
times, each in a fresh process as a user runs them:

1. `run_pilot.py analyze --results BANK --out DIR` (analysis.md, figures, RESULTS.md, report.html);
2. `paper/make_figures.py BANK --out DIR`;
3. the exact McNemar p alone at the bank's R1/R2 disagreements b and c (over every budget and
   sample).

Each command's peak memory is that of the largest process it ran (itself, the figures script it
starts, the second process that reads half of a large bank). Targets: a bank of 1,000,000 probes
analysed in under 5 s and under 600 MB, the time growing linearly with the bank.

Usage: python scripts/bench/bench_analysis.py [--probes 100000,300000,1000000]
       [--design sweep|published] [--with-calls] [--repeat 3] [--seed 1] [--runner
       BEFORE/scripts/run_pilot.py --runner scripts/run_pilot.py] (--repeat 1 for a short check; the
       figures in scripts/BENCHMARKS.md are of --repeat 3)
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]      # scripts/bench/ -> the repository
sys.path.insert(0, str(REPO_ROOT / "tests"))
import helpers  # noqa: E402,F401  (puts the runner's package on the path, as the tests do)
from pilot import bank as results_bank, inputs, records, stats  # noqa: E402
from pilot.studies import episodes as sessions
from pilot.studies.xr001 import design as xr001, analysis as xr001_analysis  # noqa: E402

CORRECT_RATE = {"R0": 0.95, "R1": 0.64, "R2": 0.90}     # the published rates, roughly
SWEEP_BUDGETS = [128, 256, 512, 1024]
PUBLISHED_MODELS = 6


def bank_layout(n_probes: int, design: str) -> tuple[list[str], list[int], int, int]:
    """(models, budgets, samples, episodes) of a bank of about n_probes probes."""
    per_episode = len(xr001.DEFAULT_REGIMES) * len(sessions.QUESTION_PLAN)
    if design == "sweep":
        per_model_and_sample = len(SWEEP_BUDGETS) * xr001.N_EPISODES * per_episode
        # as few as the samples allow
        n_models = max(1, -(-n_probes // (per_model_and_sample * records.MAX_SAMPLES)))
        samples = max(1, min(records.MAX_SAMPLES, round(n_probes
                                                        / (n_models * per_model_and_sample))))
        return ([f"bench-model-{i}:7b" for i in range(n_models)], SWEEP_BUDGETS, samples,
                xr001.N_EPISODES)
    episodes = max(1, round(n_probes / (PUBLISHED_MODELS * per_episode)))
    return ([f"bench-model-{i}:7b" for i in range(PUBLISHED_MODELS)], [records.DEFAULT_BUDGET], 1,
            episodes)


def make_bank(tasks: dict, models: list[str], budgets: list[int], samples: int, seed: int,
              with_calls: bool) -> dict:
    """A results.json over every model, regime, budget, sample, episode and question of `tasks`, in
    the order and the form this runner writes (probes at the pre-registered budget and first sample
    carry no budget or sample)."""
    rng = random.Random(seed)
    regimes = list(xr001.DEFAULT_REGIMES)
    probes, calls, stage = [], [], []
    for budget in budgets:
        for sample in range(samples):
            for model in models:
                for regime in regimes:
                    variant = {} if (budget, sample) == (records.DEFAULT_BUDGET,
                                                         0) else {"budget": budget,
                        "sample": sample}
                    for episode, entry in enumerate(tasks["episodes"]):
                        for question in entry["questions"]:
                            truth = question["truth"]
                            right = rng.random() < CORRECT_RATE[regime]
                            answer, cls = (truth, "correct") if right else rng.choice(
                                [(truth + 1, "off_by_one"), (truth + 400, "other_wrong"),
                                 (None, "omission")])
                            probes.append({"model": model, "regime": regime, "episode": episode,
                                           **variant,
                                           "question_id": question["id"], "type": question["type"],
                                           "truth": truth,
                                           "answer": answer, "class": cls})
                            if with_calls:
                                calls.append({"model": model, "regime": regime, "episode": episode,
                                              "kind": f"question_{question['id']}",
                                              "stage": "answer",
                                              "done_reason": "stop", "eval_count": 6,
                                              "prompt_eval_count": 900,
                                              "thinking_chars": 0, **variant})
                        if regime != "R0":
                            if with_calls:
                                for k in range(1, 5):
                                    calls.append({"model": model, "regime": regime,
                                                  "episode": episode,
                                                  "kind": f"compact_{k}", "stage": "compaction",
                                                  "done_reason": "stop",
                                                  "eval_count": min(budget, 200),
                                                  "prompt_eval_count": 500,
                                                  "thinking_chars": 0, **variant})
                            stage.append({"model": model, "regime": regime, "episode": episode,
                                          "retained": 18,
                                          "correct": 16, "wrong": 2, "n_entities": 20, **variant})
    n_episodes = len(tasks["episodes"])
    n_cells = len(models) * len(regimes) * len(budgets) * samples * n_episodes
    tokens = {r: {"n": len(models) * n_episodes * 4, "mean": 200.0, "unknown": 0,
                  "by_model": {m: {"n": n_episodes * 4, "mean": 200.0,
                                   "unknown": 0} for m in models}}
              for r in ("R1", "R2")}
    return {"models": models, "regimes": regimes, "n_episodes": n_episodes, "budgets": budgets,
            "samples": samples,
            "temperature": 0.7 if samples > 1 else 0.0,
            "cells": {"complete": n_cells, "not_complete": 0, "expected": n_cells,
                      "expected_probes_per_cell": 8},
            "probes": probes, "compaction_stage": stage, "compaction_tokens": tokens,
            **({"calls": calls} if with_calls else {}), "example_states": [],
            "run": {"num_ctx": records.NUM_CTX}}


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall seconds of the command in a fresh process, and the peak memory (MB) of the largest
    process it ran (itself, the figures script it starts, the second process that reads half of a
    large bank)."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} failed (exit {code}): {err.strip()[-400:]}")
    return wall, usage.ru_maxrss / 1024


def write_bank(n: int, design: str, seed: int, with_calls: bool, work: Path) -> dict:
    """Write the bank of about n probes (and its task file, for the published design) into `work`;
    its path, task arguments, size, R1/R2 disagreements b and c and the exact McNemar p's time. Run
    in a process of its own, so that the benchmark stays small and the commands it times start
    small."""
    models, budgets, samples, episodes = bank_layout(n, design)
    tasks_argv: list[str] = []
    if design == "published":
        tasks_path = work / f"tasks-{episodes}.json"
        tasks_path.write_bytes(inputs.tasks_to_bytes(xr001.generate_tasks(episodes)))
        tasks_argv = ["--tasks", str(tasks_path)]
        tasks = json.loads(tasks_path.read_text(encoding="utf-8"))
    else:
        tasks = json.loads(xr001.TASKS_PATH.read_text(encoding="utf-8"))
    bank = make_bank(tasks, models, budgets, samples, seed, with_calls)
    path = work / f"bank-{n}.json"
    path.write_text(json.dumps(bank, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    # R1/R2 disagreements over the whole bank (every budget and sample), and the exact p at that
    # size
    test = xr001_analysis.paired_test(results_bank.probe_table(bank["probes"]), "R1", "R2", models,
                                      models)["pooled"]
    started = time.perf_counter()
    stats.mcnemar_exact(test["b"], test["c"])
    return {"path": str(path), "tasks_argv": tasks_argv, "count": len(bank["probes"]),
            "b": test["b"], "c": test["c"],
            "p_s": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--write-bank"]:           # in a process of its own (see write_bank)
        n, design, seed, with_calls, work = argv[1:6]
        print(json.dumps(write_bank(int(n), design, int(seed), with_calls == "1", Path(work))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probes", default="100000,300000,1000000", help="comma-separated bank "
                        "sizes")
    parser.add_argument("--design", choices=("sweep", "published"), default="sweep",
                        help="sweep: 15 episodes, 4 budgets, repeated samples; published: the "
                             "reference bank's fields, one budget and sample, a generated task "
                             "file as large as needed")
    parser.add_argument("--with-calls", action="store_true", help="add this runner's per-call "
                        "records to each bank")
    parser.add_argument("--repeat", type=int, default=3, help="time each command this many times "
                        "(fresh processes)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runner", type=Path, action="append",
                        help="a run_pilot.py whose analyze (and the make_figures.py beside it) to "
                             "time (default: this checkout's); give it twice, another checkout's "
                             "and this one's, to compare them run by run, alternated")
    args = parser.parse_args(argv)
    try:
        sizes = [int(x) for x in args.probes.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1 or args.repeat < 1:
        parser.error("--probes takes whole numbers of at least 1 (100000,300000); --repeat at "
                     "least 1")
    runners = [r.resolve() for r in args.runner or [REPO_ROOT / "scripts" / "run_pilot.py"]]
    missing = [str(r) for r in runners if not r.is_file()]
    if missing:
        parser.error(f"no run_pilot.py at {', '.join(missing)}")
    work = Path(tempfile.mkdtemp(prefix="ccl-bench-analysis-"))
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, "
          f"{platform.system()} {platform.release()}; load average at the start {load_average()}")
    print("design: "
          f"{args.design}{', with per-call records' if args.with_calls else ', probes only'}")
    for number, runner in enumerate(runners, 1):
        print(f"runner {number}: {runner}")
    print(f"{'runner':>6} {'probes':>9} {'MB':>6} {'b':>9} {'c':>9} {'analyze s':>10} "
          f"{'peak MB':>8} {'figures s':>10} "
          f"{'peak MB':>8} {'McNemar s':>10} {'analyze us/probe':>17}")
    try:
        for n in sizes:
            made = subprocess.run([sys.executable, __file__, "--write-bank", str(n), args.design,
                                   str(args.seed),
                                   "1" if args.with_calls else "0", str(work)], capture_output=True,
                                   text=True)
            if made.returncode != 0:
                raise SystemExit(f"writing the bank failed: {made.stderr.strip()[-400:]}")
            bank = json.loads(made.stdout)
            path = Path(bank["path"])
            for _, (number, runner) in itertools.product(range(args.repeat), enumerate(runners, 1)):
                analyze_s, analyze_mb = timed([str(runner), "analyze", "--results", str(path),
                                               "--out",
                                               str(work / f"analysis-{n}-{number}"),
                                               *bank["tasks_argv"]])
                figures_s, figures_mb = timed([str(runner.parent.parent / "paper"
                                                   / "make_figures.py"), str(path),
                                               "--out", str(work / f"figures-{n}-{number}"),
                                               *bank["tasks_argv"]])
                size_mb = path.stat().st_size / 1e6
                print(f"{number:>6} {bank['count']:>9} {size_mb:>6.0f} {bank['b']:>9} "
                      f"{bank['c']:>9} {analyze_s:>10.2f} {analyze_mb:>8.0f} {figures_s:>10.2f} "
                      f"{figures_mb:>8.0f} {bank['p_s']:>10.4f} "
                      f"{1e6 * analyze_s / bank['count']:>17.2f}; load {load_average()}",
                      flush=True)
            path.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
