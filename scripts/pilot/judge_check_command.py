"""`judge-check`: the judge (studies/sessions/judge.py) asked about every hand-labelled item it may
decide, and its agreement with the labels printed per category and half (issue 44, point 3;
protocol/SESSIONS.md, the amendment of 2026-12-06 (17)). Every call is journalled in
<out>/judge-calls.jsonl the moment it returns, so a rerun sends only the calls not yet made; the
model, its identity as the server describes it and the prompt are locked in <out>/judge-lock.json.
The threshold on P(KEPT) is chosen on the dev labels only; the figures go to stdout,
<out>/judge-check.md and <out>/judge-check.json (for people: studies/sessions/judge_agreement.py
recomputes them from the journal whenever a report names them)."""
from __future__ import annotations

import json
import re
import sys
import threading
import time
from pathlib import Path

from .backends import preflight
from .cached_calls import CallCache
from .launch import make_backend
from .records import (EXIT_CELLS_FAILED, EXIT_OK, RESULTS_ROOT, BackendOptions, FatalCallError,
                      PilotError, ServerGone, TransientError, canonical_json, utc_now)
from .runfolder import refuse_unsafe, write_atomic
from .runner import RetryPolicy
from .studies.sessions import audit_needed, measured
from .studies.sessions.audit_judge import masked_summary
from .studies.sessions.judge import JUDGED, MAX_SUMMARY_CHARS, Judge, read_judge_prompt
from .studies.sessions.judge_agreement import (AGREEMENT_KAPPA, CALLS_FILE, CATEGORIES, HALVES,
                                               LABELS_DIR, LOCK_FILE, agreement_of,
                                               choose_threshold, figures, journal_calls,
                                               kappa_text, labelled_items)
from .studies.sessions.readers import SessionFileError, read_session_file
from .transport import redact_url

OUTPUTS = ("judge-check.md", "judge-check.json")
PROGRESS_EVERY_S = 5.0


class JudgeCheckStopped(PilotError):
    """The server stopped answering: what was judged is kept, the same command goes on."""

    exit_code = EXIT_CELLS_FAILED


# --- The folder and its lock ---------------------------------------------------------------------
def default_out(model: str) -> Path:
    return RESULTS_ROOT / ("judge-check-" + (re.sub(r"[^A-Za-z0-9._-]+", "-", model) or "model"))


def check_out(out_dir: Path) -> None:
    """New, empty, or a judge-check's own folder (it holds the lock): never someone's files."""
    if out_dir.exists() and not out_dir.is_dir():
        raise PilotError(f"{out_dir} is a file, not a folder; choose a new or empty folder with "
                         "--out DIR")
    if out_dir.is_symlink():
        raise PilotError(f"{out_dir} is a link (links are never followed); give the folder itself")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / LOCK_FILE).is_file():
        raise PilotError(f"{out_dir} holds files that are not a judge-check's; choose a new or "
                         "empty folder with --out DIR")
    for name in (LOCK_FILE, CALLS_FILE, *OUTPUTS):
        refuse_unsafe(out_dir / name)


def lock_of(model: str, identity: dict, prompt, backend) -> dict:
    return {"model": model, "identity": json.loads(canonical_json(identity)),
            "prompt_sha256": prompt.sha256, "prompt_file": prompt.shown,
            "backend": backend.name, "server": redact_url(backend.base_url)}


def hold_lock(out_dir: Path, lock: dict) -> None:
    """Write the lock, or refuse a folder whose lock names another model, identity or prompt."""
    path = out_dir / LOCK_FILE
    if path.is_file():
        try:
            held = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            raise PilotError(f"{path} cannot be read; choose a new folder with --out DIR") from None
        for key, what in (("model", "model"), ("prompt_sha256", "judge prompt"),
                          ("identity", "model identity (the server describes the model "
                                       "otherwise now)")):
            if canonical_json(held.get(key)) != canonical_json(lock[key]):
                raise PilotError(f"{out_dir} holds a judge-check of another {what} (model "
                                 f"{held.get('model')!r}, prompt {held.get('prompt_file')}); "
                                 "check this one into a new folder with --out DIR")
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps({**lock, "written_at": utc_now()}, indent=1) + "\n").encode())


# --- What is asked ----------------------------------------------------------------------------
def summaries_of(items, logs_dir: Path | None) -> tuple[dict, list[str]]:
    """(log, compaction) -> its recorded summary, read as measure_audit.py reads a log; and one
    note per label file whose log could not be used."""
    summaries, notes, missing = {}, [], []
    for log, number in sorted({(i.log, i.compaction) for i in items if i.log is not None}):
        path = logs_dir / log if logs_dir is not None else None
        if path is None or not path.is_file():
            missing.append(log)
            continue
        try:
            event = read_session_file(path, path.name)[0]["compactions"][number - 1]
        except (SessionFileError, OSError, IndexError) as err:
            notes.append(f"{log}: not read ({err})")
            continue
        if event.get("readable") and isinstance(event.get("summary"), str):
            summaries[(log, number)] = event["summary"]
        else:
            notes.append(f"{log}: compaction {number} has no readable summary")
    if missing and logs_dir is None:
        notes.insert(0, f"the real compactions' labels ({len(missing)} logs) are skipped: give "
                        "--real-logs DIR, the folder of the Claude Code logs they name "
                        "(tests/labelled/compactions/README.md says where they are published)")
    elif missing:
        notes.insert(0, f"{len(missing)} label files had no log in {logs_dir} and were skipped: "
                        + ", ".join(missing))
    return summaries, notes


def ask_all(judge: Judge, asked: list, quiet: bool) -> int:
    """Each item asked (or answered from the journal), progress on stderr; the number the judge
    could not be asked (a summary too long for it)."""
    started = last_shown = time.monotonic()
    not_asked = 0
    for done, (item, summary) in enumerate(asked, 1):
        # masked as the audit masks what it sends, so the check asks what an audit would
        decided = judge.decide(masked_summary(summary), item.category, masked_summary(item.item),
                               item.item_id)
        not_asked += decided["reply"] is None
        now = time.monotonic()
        if not quiet and (now - last_shown >= PROGRESS_EVERY_S or done == len(asked)):
            per_call = (now - started) / judge.sent if judge.sent else 0.0
            print(f"judge-check: {done}/{len(asked)} items judged ({judge.sent} calls sent, "
                  f"{judge.reused} from the journal; {per_call:.2f} s per call)", file=sys.stderr)
            last_shown = now
    return not_asked


def calls_made(cache: CallCache) -> str:
    count = len(cache.records)
    return f"the {count} call made is" if count == 1 else f"the {count} calls made are"


# --- The report --------------------------------------------------------------------------------
def share(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def render_md(model: str, lock: dict, measured_figures: dict, threshold, dev_kappa,
              notes: list[str]) -> str:
    if threshold is None:
        chosen = "none: the server gave no probabilities, so each reply's word stands"
    elif dev_kappa is None:
        chosen = (f"the default {threshold:g} on P(KEPT): no dev item of a judged category gave "
                  "a measurable kappa to choose one by")
    else:
        chosen = (f"{threshold:g} on P(KEPT), chosen on the dev labels only (pooled dev kappa of "
                  f"the judged categories {kappa_text(dev_kappa)})")
    agreement = agreement_of(model, measured_figures, threshold)
    lines = [f"# judge-check: {model}", "",
             f"Prompt {lock['prompt_file']} (sha256 {lock['prompt_sha256'][:12]}), server "
             f"{lock['server']} ({lock['backend']}). Threshold: {chosen}.", "",
             agreement.line(), "",
             "Not kept = lost or stated otherwise. Precision and recall are of not kept; kappa is "
             "Cohen's, of kept vs not kept. For the gate's snippets (stated otherwise) only "
             "CHANGED counts as not kept.", "",
             "| category | half | n | labelled not kept | precision | recall | kappa | "
             "unreadable replies |", "|---|---|---|---|---|---|---|---|"]
    for category in CATEGORIES:
        for half in HALVES:
            f = measured_figures[category][half]
            lines.append(f"| {category} | {half} | {f['n']} | {f['labelled_not_kept']} | "
                         f"{share(f['precision'])} | {share(f['recall'])} | "
                         f"{kappa_text(f['kappa'])} | {f['unreadable']} |")
    rules = audit_needed.MEASURED
    lines += ["", f"The rules beside it (measured {audit_needed.MEASURED_ON}, "
                  f"{audit_needed.MEASURED_FROM}; not recomputed here): on the real compactions, "
                  "recall of lost/wrong (decisions aside) " + "; ".join(
                      f"{half} {rules[half][1]}, false loss {rules[half][2]}" for half in HALVES)
              + f"; {audit_needed.DECISION_PRECISION}.", "", measured.rules_line(), "",
              f"The protocol's agreement threshold: kappa {AGREEMENT_KAPPA:g} per judged category "
              f"({', '.join(JUDGED)}) on the held-out half."]
    if notes:
        lines += ["", "Not asked:", *[f"- {note}" for note in notes]]
    return "\n".join(lines) + "\n"


def render_json(model: str, lock: dict, measured_figures: dict, threshold, dev_kappa,
                notes: list[str]) -> str:
    return json.dumps({"model": model, "prompt_sha256": lock["prompt_sha256"],
                       "prompt_file": lock["prompt_file"], "threshold": threshold,
                       "threshold_chosen_on": "dev", "dev_kappa_pooled": dev_kappa,
                       "agreement_kappa": AGREEMENT_KAPPA, "figures": measured_figures,
                       "not_asked": notes}, indent=1) + "\n"


# --- The command -------------------------------------------------------------------------------
def command_judge_check(args) -> int:
    model = args.judge
    prompt = read_judge_prompt(Path(args.judge_prompt) if args.judge_prompt else None)
    logs_dir = Path(args.real_logs) if args.real_logs else None
    if logs_dir is not None and not logs_dir.is_dir():
        raise PilotError(f"--real-logs {logs_dir} is not a folder; give the folder of the Claude "
                         "Code logs the labels in tests/labelled/compactions/ name")
    labels_dir = Path(args.labels) if args.labels else LABELS_DIR
    out_dir = Path(args.out) if args.out else default_out(model)
    check_out(out_dir)
    items = labelled_items(labels_dir)
    summaries, notes = summaries_of(items, logs_dir)
    for note in notes:
        print(f"judge-check: {note}", file=sys.stderr)
    asked = [(item, item.summary if item.summary is not None else
              summaries[(item.log, item.compaction)]) for item in items
             if item.summary is not None or (item.log, item.compaction) in summaries]
    backend = make_backend(BackendOptions(
        name=args.backend, host=args.host, base_url=args.base_url, api_key_env=args.api_key_env,
        connect_timeout=args.connect_timeout, read_timeout=args.read_timeout))
    identity = preflight(backend, [model], "python3 scripts/run_pilot.py demo")[model]
    lock = lock_of(model, identity, prompt, backend)
    hold_lock(out_dir, lock)
    cache = CallCache(out_dir / CALLS_FILE)
    if cache.quarantined:
        print(f"judge-check: {cache.quarantined} unreadable journal lines (a kill mid-write) set "
              f"aside in {CALLS_FILE}.quarantine", file=sys.stderr)
    policy = RetryPolicy(retries=args.retries, give_up_after_s=args.give_up_after)
    judge = Judge(backend, model, identity, prompt, cache, policy, stop=threading.Event())
    try:
        too_long = ask_all(judge, asked, args.quiet)
    except (ServerGone, TransientError) as err:
        raise JudgeCheckStopped(f"{err}; {calls_made(cache)} kept in {out_dir / CALLS_FILE}: "
                                "run the same command to go on") from None
    except FatalCallError as err:
        raise PilotError(f"the server refused a judge call ({err}); {calls_made(cache)} kept in "
                         f"{out_dir / CALLS_FILE}: once that is fixed, the same command goes "
                         "on") from None
    if too_long:
        notes.append(f"{too_long} items whose summary is over {MAX_SUMMARY_CHARS:,} characters "
                     "(the judge is not asked about them; the rules' status stands)")
    calls = journal_calls(out_dir / CALLS_FILE, model, prompt.sha256)
    threshold, dev_kappa = choose_threshold(items, calls)
    measured_figures = figures(items, calls, threshold)
    outputs = {"judge-check.md": render_md(model, lock, measured_figures, threshold, dev_kappa,
                                           notes),
               "judge-check.json": render_json(model, lock, measured_figures, threshold,
                                               dev_kappa, notes)}
    for name, text in outputs.items():
        write_atomic(out_dir / name, text.encode("utf-8"))
    print(outputs["judge-check.md"], end="")
    return EXIT_OK

