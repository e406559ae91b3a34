#!/usr/bin/env python3
"""Benchmark of `analyze` and `paper/make_figures.py` on large synthetic banks (standard library only; not a test).

Budget sweeps and repeated samples make banks of a million probes routine. This writes banks in the
runner's own results.json format (probes, per-call records, final states, token means) with many R1/R2
disagreements, and times, each in a fresh process as a user runs them:

1. `run_pilot.py analyze --results BANK --out DIR` (analysis.md, figures, RESULTS.md, report.html);
2. `paper/make_figures.py BANK --out DIR`;
3. the exact McNemar p alone at the bank's pooled b and c.

Target: a bank of 1,000,000 probes analysed in under 10 s, the time growing linearly with the bank.

Usage: python scripts/bench_analysis.py [--probes 100000,300000,1000000] [--models 2] [--seed 1]
"""
from __future__ import annotations

import argparse
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

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))
from helpers import rp  # noqa: E402  (the runner, imported as the tests import it)

CORRECT_RATE = {"R0": 0.95, "R1": 0.64, "R2": 0.90}     # the published rates, roughly


def make_bank(n_probes: int, n_models: int, seed: int, with_calls: bool = True) -> dict:
    """A results.json of about n_probes probes: models x 3 regimes x episodes x 8 questions; with_calls adds the
    per-call records this runner writes (4/3 of a record per probe), without them it has the shape of the
    published reference bank."""
    rng = random.Random(seed)
    models = [f"bench-model-{i}:7b" for i in range(n_models)]
    regimes = list(rp.DEFAULT_REGIMES)
    n_episodes = max(1, n_probes // (n_models * len(regimes) * 8))
    probes, calls, stage = [], [], []
    for model in models:
        for regime in regimes:
            for episode in range(n_episodes):
                for qid, qtype, _ in rp.QUESTION_PLAN:
                    truth = 101 + (episode * 8 + qid) % 880
                    right = rng.random() < CORRECT_RATE[regime]
                    answer, cls = (truth, "correct") if right else rng.choice(
                        [(truth + 1, "off_by_one"), (truth + 400, "other_wrong"), (None, "omission")])
                    probes.append({"model": model, "regime": regime, "episode": episode, "question_id": qid,
                                   "type": qtype, "truth": truth, "answer": answer, "class": cls})
                    if with_calls:
                        calls.append({"model": model, "regime": regime, "episode": episode, "kind": f"question_{qid}",
                                      "done_reason": "stop", "eval_count": 6, "prompt_eval_count": 900,
                                      "thinking_chars": 0})
                if regime != "R0" and with_calls:
                    for k in range(1, 5):
                        calls.append({"model": model, "regime": regime, "episode": episode, "kind": f"compact_{k}",
                                      "done_reason": "stop", "eval_count": 200, "prompt_eval_count": 500,
                                      "thinking_chars": 0})
                if regime != "R0":
                    stage.append({"model": model, "regime": regime, "episode": episode, "retained": 18,
                                  "correct": 16, "wrong": 2, "n_entities": 20})
    tokens = {r: {"n": n_models * n_episodes * 4, "mean": 200.0, "unknown": 0,
                  "by_model": {m: {"n": n_episodes * 4, "mean": 200.0, "unknown": 0} for m in models}}
              for r in ("R1", "R2")}
    return {"models": models, "regimes": regimes, "n_episodes": n_episodes,
            "cells": {"complete": n_models * 3 * n_episodes, "not_complete": 0,
                      "expected": n_models * 3 * n_episodes, "expected_probes_per_cell": 8},
            "probes": probes, "compaction_stage": stage, "compaction_tokens": tokens,
            **({"calls": calls} if with_calls else {}), "example_states": [], "run": {"num_ctx": rp.NUM_CTX}}


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed (exit {proc.returncode}): {proc.stderr.strip()[-400:]}")
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probes", default="100000,300000,1000000", help="comma-separated bank sizes")
    parser.add_argument("--models", type=int, default=2, help="models in each bank")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-calls", action="store_true", help="probes only, as in the published reference bank "
                                                                  "(default: with this runner's per-call records)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="ccl-bench-analysis-"))
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"{platform.system()} {platform.release()}")
    print(f"{'probes':>9} {'MB':>6} {'pooled b':>9} {'pooled c':>9} {'analyze s':>10} {'figures s':>10} "
          f"{'McNemar s':>10} {'analyze us/probe':>17}")
    try:
        for n in [int(x) for x in args.probes.split(",")]:
            bank = make_bank(n, args.models, args.seed, with_calls=not args.no_calls)
            path = work / f"bank-{n}.json"
            path.write_text(json.dumps(bank), encoding="utf-8")
            pairs = {}
            for p in bank["probes"]:
                if p["regime"] in ("R1", "R2"):
                    pairs.setdefault((p["model"], p["episode"], p["question_id"]), {})[p["regime"]] = \
                        p["class"] == "correct"
            b = sum(1 for v in pairs.values() if v["R1"] and not v["R2"])
            c = sum(1 for v in pairs.values() if v["R2"] and not v["R1"])
            started = time.perf_counter()
            rp.mcnemar_exact(b, c)
            p_s = time.perf_counter() - started
            analyze_s = timed([str(REPO_ROOT / "scripts" / "run_pilot.py"), "analyze", "--results", str(path),
                               "--out", str(work / f"analysis-{n}")])
            figures_s = timed([str(REPO_ROOT / "paper" / "make_figures.py"), str(path), "--out",
                               str(work / f"figures-{n}")])
            size_mb = path.stat().st_size / 1e6
            print(f"{len(bank['probes']):>9} {size_mb:>6.0f} {b:>9} {c:>9} {analyze_s:>10.2f} {figures_s:>10.2f} "
                  f"{p_s:>10.4f} {1e6 * analyze_s / len(bank['probes']):>17.2f}", flush=True)
            path.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
