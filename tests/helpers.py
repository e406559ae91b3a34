"""Shared test helpers: the runner's package on the path, temporary folders, a reference-format bank with the
published XR-001 numbers, and a throwaway copy of the repository for subprocess runs."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# A suite started in the background of a script (`... &`) inherits SIGINT ignored, and every process
# a test starts would too: the tests that press Ctrl-C need it delivered. A handler set here is
# reset to the default in each child the tests start.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))


def load_module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


sys.path.insert(0, str(REPO / "scripts"))            # the runner's package, scripts/pilot/
from pilot import cli, prompts, records  # noqa: E402
import pilot.studies  # noqa: E402,F401  (registers the studies)


def call_prompt(regime, episode: dict, spec, state: str = "", study: str | None = None) -> str:
    """The text of a call's last message as the runner sends it (prompts.build_messages), for a study (the default
    one unless named)."""
    return prompts.build_messages(records.study_named(study), regime, episode, spec, state)[-1]["content"]


def compaction_prompt(regime, state: str, segment: str, budget: int = records.DEFAULT_BUDGET,
                      study: str | None = None) -> str:
    """The compaction prompt over `state` and a segment whose text is `segment`."""
    episode = {"segments": [{"index": 1, "text": segment}], "questions": []}
    return call_prompt(regime, episode, records.CallSpec("compact_1", "compaction", budget, segment=1), state, study)


def answer_prompt(regime, episode: dict, question: dict, state: str = "", study: str | None = None) -> str:
    """The prompt of one question of an episode, asked over what the regime lets it see (`state` for a regime that
    compacts)."""
    spec = records.CallSpec(f"question_{question['id']}", "answer", records.ANSWER_NUM_PREDICT,
                            question_id=question["id"])
    return call_prompt(regime, episode, spec, state, study)


def run_main(argv: list[str]) -> tuple[int, str, str]:
    """main([...]) with stdout and stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


class TempDirMixin:
    def make_tmp(self) -> Path:
        path = Path(tempfile.mkdtemp(prefix="ccl-test-"))
        self.addCleanup(shutil.rmtree, path, True)
        return path


# Quick retries, no progress lines, and no determinism probe (its calls are counted in tests of their own).
FAST = ["--quiet", "--retries", "3", "--backoff-base", "0.01", "--backoff-cap", "0.02", "--recheck", "0"]


def repo_copy(root: Path) -> Path:
    """A minimal copy of the project (runner, protocol, tasks, paper) to run as a subprocess."""
    for sub in ("scripts", "protocol", "tasks", "paper"):
        src = REPO / sub
        if src.exists():
            shutil.copytree(src, root / sub, ignore=shutil.ignore_patterns("__pycache__", "figures"))
    return root


def run_script(repo: Path, argv: list[str], timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OLLAMA_HOST", "OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(kwargs.pop("env", {}))
    return subprocess.run([sys.executable, str(repo / "scripts" / "run_pilot.py"), *argv], capture_output=True,
                          text=True, timeout=timeout, env=env, **kwargs)


# ------------------------------------------------------------------------------------------
# The published XR-001 numbers as a results.json in the reference format
# ------------------------------------------------------------------------------------------
PUBLISHED = {
    # model: (R0 wrong, R1 wrong, R2 wrong, b, c, multi-hop correct R0/R1/R2 of 30)
    "gemma3:4b": (8, 44, 17, 5, 32, (22, 9, 15)),
    "qwen3-coder:30b": (0, 35, 3, 3, 35, (30, 14, 30)),
    "qwen3:14b": (8, 52, 14, 3, 41, (22, 6, 16)),
}
# Write-time retention of each final state as the reference run published it: (names retained, right values) per
# episode. R1 retains 587/900 names and 159 right values; R2 898 names and, by the reference's per-line counter,
# 899 right values (gemma3:4b episode 1 counts 21 of its 20 names).
PUBLISHED_RETENTION = {
    ("gemma3:4b", "R1"): [(12, 3), (11, 9), (13, 6), (14, 4), (13, 5), (11, 5), (17, 3), (16, 4), (15, 7), (11, 7),
                          (17, 1), (13, 3), (14, 3), (16, 1), (14, 4)],
    ("gemma3:4b", "R2"): [(20, 20), (20, 21)] + [(20, 20)] * 9 + [(19, 19), (19, 19), (20, 20), (20, 20)],
    ("qwen3-coder:30b", "R1"): [(10, 2), (10, 4), (20, 1), (20, 3), (10, 2), (12, 4), (20, 4), (11, 3), (14, 5),
                                (10, 4), (9, 4), (13, 2), (13, 3), (16, 2), (17, 2)],
    ("qwen3-coder:30b", "R2"): [(20, 20)] * 15,
    ("qwen3:14b", "R1"): [(9, 4), (10, 5), (10, 5), (14, 2), (9, 3), (9, 5), (10, 3), (12, 5), (15, 1), (9, 6),
                          (10, 3), (18, 1), (15, 3), (10, 1), (15, 2)],
    ("qwen3:14b", "R2"): [(20, 20)] * 15,
}
PUBLISHED_CLASSES = {  # pooled wrong-answer classes: off_by_one, conflation, other_wrong, omission
    "R0": (1, 3, 12, 0), "R1": (1, 16, 84, 30), "R2": (1, 3, 25, 5),
}


def _wrong_answer(cls: str, question: dict, conflation_set: list[int]):
    truth = question["truth"]
    if cls == "omission":
        return None
    if cls == "off_by_one":
        return truth + 1
    if cls == "conflation":
        return next(v for v in conflation_set if abs(v - truth) > 1)
    value = truth + 500
    while value in conflation_set or abs(value - truth) <= 1:
        value += 7
    return value


def reference_results(tasks: dict) -> dict:
    """A reference-format bank whose analysis must reproduce every published XR-001 table."""
    episodes = tasks["episodes"][:15]
    slots_mh = [(e, q) for e in range(15) for q in (7, 8)]
    slots_other = [(e, q) for e in range(15) for q in range(1, 7)]
    wrong: dict = {}
    for model, (w0, w1, w2, b, c, hops) in PUBLISHED.items():
        both = w1 - c
        mh_wrong = [30 - h for h in hops]
        both_mh = min(both, mh_wrong[1], mh_wrong[2])
        r2_only_mh, r1_only_mh = mh_wrong[2] - both_mh, mh_wrong[1] - both_mh
        mh, other = list(slots_mh), list(slots_other)
        take = lambda pool, n: [pool.pop(0) for _ in range(n)]  # noqa: E731
        both_slots = take(mh, both_mh) + take(other, both - both_mh)
        r2_only = take(mh, r2_only_mh) + take(other, b - r2_only_mh)
        r1_only = take(mh, r1_only_mh) + take(other, c - r1_only_mh)
        wrong[(model, "R1")] = set(both_slots + r1_only)
        wrong[(model, "R2")] = set(both_slots + r2_only)
        r0_mh = mh_wrong[0]
        wrong[(model, "R0")] = set(slots_mh[:r0_mh] + slots_other[:w0 - r0_mh])
    class_queue = {r: [c for c, n in zip(("off_by_one", "conflation", "other_wrong", "omission"), counts)
                       for _ in range(n)] for r, counts in PUBLISHED_CLASSES.items()}
    probes = []
    for model in PUBLISHED:
        for regime in ("R0", "R1", "R2"):
            for e, episode in enumerate(episodes):
                for question in episode["questions"]:
                    if (e, question["id"]) in wrong[(model, regime)]:
                        cls = class_queue[regime].pop(0)
                        answer = _wrong_answer(cls, question, episode["conflation_set"])
                    else:
                        cls, answer = "correct", question["truth"]
                    probes.append({"model": model, "regime": regime, "episode": e, "question_id": question["id"],
                                   "type": question["type"], "truth": question["truth"], "answer": answer,
                                   "class": cls})
    stage = [{"retained": retained, "correct": correct, "wrong": max(0, retained - correct), "n_entities": 20,
              "model": model, "regime": regime, "episode": e}
             for model in PUBLISHED for regime in ("R1", "R2")
             for e, (retained, correct) in enumerate(PUBLISHED_RETENTION[(model, regime)])]
    tokens = {r: {"n": 180, "mean": mean, "by_model": {m: {"n": 60, "mean": mean} for m in PUBLISHED}}
              for r, mean in (("R1", 219.2), ("R2", 221.4))}
    return {"tasks": "tasks.json", "models": list(PUBLISHED), "regimes": ["R0", "R1", "R2"],
            "cells": {"complete": 135, "not_complete": 0, "expected": 135, "expected_probes_per_cell": 8},
            "probes": probes, "compaction_stage": stage, "compaction_tokens": tokens}


def load_tasks() -> dict:
    return json.loads((REPO / "tasks" / "tasks.json").read_text())


def runner_command(*argv: str, repo: Path = REPO) -> list[str]:
    """scripts/run_pilot.py with these arguments, as a process of its own (for a test that kills it)."""
    return [sys.executable, str(repo / "scripts" / "run_pilot.py"), *argv]


# The kill-and-resume helpers: every test that kills a run (kill -9) goes through one of them.
def kill_at_call(test, server, number: int, command: list[str], sig: int = signal.SIGKILL) -> str:
    """Start `command` as its own process, wait until its `number`-th call from now reaches the fake `server`,
    SIGKILL it there (or send it `sig`: SIGTERM stops it as a user does, the calls in flight finished and written),
    let the server go on, and return what it wrote on stderr."""
    server.held.clear()
    server.release.clear()
    server.hold_at = server.chat_count() + number
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        test.assertTrue(server.held.wait(30), proc.communicate()[1] if proc.poll() is not None else "")
        proc.send_signal(sig)
    finally:
        server.release.set()
        server.hold_at = None
    return proc.communicate(timeout=60)[1]


def kill_after(command: list[str], seconds: float) -> None:
    """Start `command` as its own process and SIGKILL it after `seconds`, wherever it is then."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(seconds)
    finally:
        proc.kill()
        proc.communicate()
