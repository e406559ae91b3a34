"""XR-G1's own runner: its task file, journal and command. It does not run on the shared runner yet; its folders
name themselves to the shared commands (runfolder.FOLDERS_OF_OWN_RUNNERS)."""
from __future__ import annotations

import csv
import io
import json
import os
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from ..backends import preflight
from ..commands import refuse_foreign_folder
from ..gate import GATE_CATEGORIES, check_state, gate_verdict
from ..launch import make_backend, parse_models
from ..records import (ANSWER_NUM_PREDICT, CALL_SEED, ChatRequest, DEFAULT_BUDGET, EXIT_OK, MAX_STATE_WORDS, NUM_CTX,
    PilotError, RESULTS_ROOT, TEMPERATURE, TransientError, display_path, file_sha256, read_canonical, sha256_bytes,
    utc_now)
from ..reports import spreadsheet_safe
from ..runfolder import parse_record_line, record_line, runner_sha256, write_atomic
from ..runner import RetryPolicy
from .adversarial import (ADV_PROTOCOL_ID, ADV_PROTOCOL_PATH, ADV_REGEN_SEED, ADV_REGEN_TEMPERATURE, ADV_TASKS_PATH,
    adversarial_ledger, adversarial_rows, adversarial_source, adversarial_summary, gated_context,
    generate_adversarial_tasks, render_adversarial_md)
from .xr001 import PROMPTS, prompts_sha256, tasks_to_bytes
from ..transport import redact_url


def adversarial_tasks_bytes() -> bytes:
    return tasks_to_bytes(generate_adversarial_tasks())


def load_adversarial_tasks(path: Path) -> tuple[dict, str]:
    """The study's task file; the committed one must be byte for byte what the generator makes."""
    if not path.exists():
        raise PilotError(f"no adversarial task file at {display_path(path)}; write it with `python3 "
                         f"scripts/run_pilot.py adversarial --write-tasks`")
    raw = read_canonical(path)
    if path.resolve() == ADV_TASKS_PATH.resolve() and raw != adversarial_tasks_bytes():
        raise PilotError(f"{display_path(path)} is not the pre-registered adversarial task set; restore it with "
                         f"`git checkout -- {display_path(path)}`")
    try:
        tasks = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise PilotError(f"{display_path(path)} is not JSON ({err})") from None
    return tasks, sha256_bytes(raw)


class StudyJournal:
    """The study's calls, one JSON line each, appended and fsynced the moment a call returns."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / "raw" / "calls.jsonl"
        self.lock = threading.Lock()
        self.records: dict[tuple, dict] = {}
        if self.path.exists():
            data = self.path.read_bytes()
            if data and not data.endswith(b"\n"):      # a line torn by a kill: end it, so the next one stays whole
                with open(self.path, "ab") as fh:
                    fh.write(b"\n")
            for line in data.splitlines():
                record = parse_record_line(line)
                if record is not None:
                    self.records.setdefault((record.get("regime"), record.get("episode"), record.get("kind")), record)

    def get(self, key: tuple) -> dict | None:
        with self.lock:
            return self.records.get(key)

    def add(self, record: dict) -> None:
        line = record_line(record)
        with self.lock:
            with open(self.path, "ab") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
            self.records.setdefault((record["regime"], record["episode"], record["kind"]), record)


def run_adversarial_episode(call: Callable[..., dict], episode: dict, regen_k: int, quarantine_dir: Path) -> None:
    """R2, its regenerated last checkpoint, then G2 (the gated regime), for one session, in cascade order."""
    e, segments = episode["episode"], episode["segments"]
    n = len(segments)

    def compaction(previous: str, text: str) -> str:
        return PROMPTS["compact_typed"].format(max_words=MAX_STATE_WORDS, segment=text,
                                               previous_state=previous or PROMPTS["empty_state"])

    def answer(context: str, probe: dict) -> str:
        return PROMPTS["answer_state"].format(context=context, question=probe["prompt"])

    states = [""]
    for k, seg in enumerate(segments, 1):
        states.append(call("R2", e, f"compact_{k}", compaction(states[-1], seg["text"]), "compaction")["response"])
    for j in range(regen_k):
        call("R2", e, f"regen_{j}", compaction(states[n - 1], segments[-1]["text"]), "compaction",
             ADV_REGEN_TEMPERATURE, ADV_REGEN_SEED + j)
    for probe in episode["probes"]:
        call("R2", e, f"probe_{probe['id']}", answer(states[n], probe), "answer")
    context, last_passing, raw = "", "", []
    for k, seg in enumerate(segments, 1):
        candidate = call("G2", e, f"compact_{k}", compaction(context, seg["text"]), "compaction")["response"]
        findings = check_state(candidate, adversarial_ledger(episode, k), adversarial_source(episode, k))
        if gate_verdict(findings) == "PASS":
            context, last_passing, raw = candidate, candidate, []
            continue
        try:          # kept as evidence, never overwritten, never regenerated until one passes
            with open(quarantine_dir / f"G2_ep{e}_compact_{k}.json", "x", encoding="utf-8") as fh:
                json.dump({"episode": e, "case": episode["case"], "checkpoint": k, "candidate": candidate,
                           "findings": findings}, fh, indent=1, ensure_ascii=False)
        except FileExistsError:
            pass
        raw.append(seg["text"])
        context = gated_context(last_passing, raw)
    for probe in episode["probes"]:
        call("G2", e, f"probe_{probe['id']}", answer(context, probe), "answer")


def write_adversarial_outputs(run_dir: Path, tasks: dict, records: dict, lock: dict) -> dict:
    scored = adversarial_rows(tasks, records, lock["regenerate"])
    summary = adversarial_summary(scored, lock["regenerate"])
    fields = ("model", "regime", "case", "episode", "sample", "seed", "temperature", "checkpoint", "final", "verdict",
              "blocking", *GATE_CATEGORIES, "omitted", "planted_found", "downstream_corrupted", "first_finding")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in scored["states"]:
        writer.writerow({k: spreadsheet_safe("" if row.get(k) is None else row.get(k)) for k in fields})
    write_atomic(run_dir / "gate.csv", buffer.getvalue().encode("utf-8"))
    results = {"study": ADV_PROTOCOL_ID, "lock": lock, "summary": summary, "states": scored["states"],
               "probes": scored["probes"]}
    write_atomic(run_dir / "results.json", (json.dumps(results, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
    write_atomic(run_dir / "analysis.md", render_adversarial_md(summary, lock).encode("utf-8"))
    return summary


def command_adversarial(args) -> int:
    """The adversarial study (protocol/ADVERSARIAL.md): run, resume, gate and report in one command."""
    if args.write_tasks:
        if ADV_TASKS_PATH.exists() and ADV_TASKS_PATH.read_bytes() != adversarial_tasks_bytes():
            raise PilotError(f"{display_path(ADV_TASKS_PATH)} exists and differs from the generator's output; "
                             f"the committed file is the pre-registered one")
        write_atomic(ADV_TASKS_PATH, adversarial_tasks_bytes())
        print(f"wrote {display_path(ADV_TASKS_PATH)}")
        return EXIT_OK
    if args.shard:
        raise PilotError("the adversarial study does not take --shard")
    tasks, tasks_sha = load_adversarial_tasks(Path(args.tasks) if args.tasks else ADV_TASKS_PATH)
    if args.episodes:
        tasks = {**tasks, "episodes": tasks["episodes"][:args.episodes]}
    models = parse_models(args.models)
    if len(models) != 1:
        raise PilotError("the adversarial study runs one model at a time: --models NAME")
    run_dir = Path(args.out) if args.out else RESULTS_ROOT / "adversarial"
    refuse_foreign_folder(run_dir)
    backend = make_backend(args)
    preflight(backend, models)
    lock = {"study": ADV_PROTOCOL_ID, "tasks_sha256": tasks_sha, "n_episodes": len(tasks["episodes"]),
            "protocol_sha256": file_sha256(ADV_PROTOCOL_PATH) if ADV_PROTOCOL_PATH.exists() else None,
            "prompts_sha256": prompts_sha256(), "model": models[0], "backend": backend.name,
            "base_url": redact_url(backend.base_url), "temperature": TEMPERATURE, "budget": DEFAULT_BUDGET,
            "regenerate": args.regenerate, "regen_temperature": ADV_REGEN_TEMPERATURE, "regen_seed": ADV_REGEN_SEED}
    manifest_path = run_dir / "manifest.json"
    if manifest_path.exists():
        recorded = json.loads(manifest_path.read_text(encoding="utf-8")).get("lock", {})
        changed = [k for k in lock if k not in ("base_url",) and recorded.get(k) != lock[k]]
        if changed:
            raise PilotError(f"{run_dir} holds a study run with other settings ({', '.join(changed)}); use a new --out")
    (run_dir / "raw").mkdir(parents=True, exist_ok=True)
    (run_dir / "quarantine").mkdir(exist_ok=True)
    write_atomic(manifest_path, (json.dumps({"study": ADV_PROTOCOL_ID, "lock": lock, "runner_sha256": runner_sha256(),
                                             "updated_at": utc_now()}, indent=1) + "\n").encode("utf-8"))
    journal = StudyJournal(run_dir)
    policy = RetryPolicy(args.retries, args.backoff_base, args.backoff_cap, args.give_up_after)
    jitter = random.Random()

    def call(regime: str, episode: int, kind: str, prompt: str, stage: str, temperature: float = TEMPERATURE,
             seed: int = CALL_SEED) -> dict:
        key = (regime, episode, kind)
        done = journal.get(key)
        if done is not None:
            return done
        if regime == "G2":      # the same prompt as R2's at temperature 0 is the same candidate: reuse it
            twin = journal.get(("R2", episode, kind))
            if twin is not None and twin["prompt"] == prompt:
                record = {**twin, "regime": "G2", "reused_from": "R2", "utc": utc_now()}
                journal.add(record)
                return record
        cap = ANSWER_NUM_PREDICT if stage == "answer" else DEFAULT_BUDGET
        request = ChatRequest(model=models[0], messages=({"role": "user", "content": prompt},), max_output_tokens=cap,
                              context_window=NUM_CTX, temperature=temperature, seed=seed, thinking_off=True)
        for attempt in range(1, args.retries + 2):
            started = time.monotonic()
            try:
                response, _ = backend.chat(request)
                break
            except TransientError as err:
                if attempt > args.retries:
                    raise
                time.sleep(policy.delay(attempt, err.retry_after, jitter))
        record = {"regime": regime, "episode": episode, "kind": kind, "stage": stage, "model": models[0],
                  "prompt": prompt, "response": response.text, "prompt_tokens": response.prompt_tokens,
                  "output_tokens": response.output_tokens, "done_reason": response.stop_reason,
                  "temperature": temperature, "seed": seed, "attempt": attempt,
                  "wall_s": round(time.monotonic() - started, 3), "utc": utc_now()}
        journal.add(record)
        return record

    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        futures = {pool.submit(run_adversarial_episode, call, ep, args.regenerate, run_dir / "quarantine"): ep
                   for ep in tasks["episodes"]}
        for future in futures:
            future.result()
            if not args.quiet:
                ep = futures[future]
                print(f"episode {ep['episode']} ({ep['case']}) done", file=sys.stderr)
    summary = write_adversarial_outputs(run_dir, tasks, journal.records, lock)
    print(render_adversarial_md(summary, lock))
    print(f"wrote:\n  {run_dir / 'analysis.md'}\n  {run_dir / 'gate.csv'}\n  {run_dir / 'results.json'}\n  "
          f"{run_dir / 'quarantine'}/", file=sys.stderr)
    return EXIT_OK
