"""XR-S1, the audit (protocol/SESSIONS.md section 9, the amendment for issue 32): the compactions an
agent already made and recorded in its own logs, each summary scored against the transcript it
replaced, with no model call (with --judge, a model on the user's server then decides some needed
items: audit_judge.py).

A log folder is walked once (links, pipes, devices and files over the readers' size limit are
skipped with one line each and counted; a file that cannot be read is skipped with its reason, and
the others are read on); each file is read once by the sessions readers (readers/), which
keep the compactions a log records as events. Each readable summary is scored against the history it
replaced: the turns from the session's start, or from the previous compaction (its summary, and the
turns it kept verbatim, included), up to the compaction. The ground truth of that span is taken once
and the summary judged once, by the sessions study's own rules (truth.ground_truth and
judge_state) and the release gate (gate.check_state, with the study's ledger of the span:
analysis.session_ledger, its items and support read from what the calls did: gate_support.py):
every exact value the conversation wrote (a tool's output is not read for values) kept,
reformatted, changed, dropped or former (one the session replaced, kept apart), and whether it
stands beside its referent; every standing instruction present, contradicted or absent; every
failed or denied step reported with its outcome, claimed done or absent; every instruction or claim
the summary invents that the log shows false ("found"), and apart every claim of work it cannot
show either way ("unverified": audit_gate.py). One row per item per compaction, every secret
masked. Nothing here writes a file: audit_report.py renders the rows and their analysis. """
from __future__ import annotations

import collections
import hashlib
import multiprocessing
import os
import signal
import stat
from pathlib import Path

from ...rules.gate import check_state
from ...rules.values import extract_values, secret_pieces
from .audit_gate import audit_findings
from .audit_needed import NOT_IN_FILE, analyze_needed, needed_rows
from .gate_support import gate_support, ledger_items, unsupported
from .analysis import (MIN_SESSIONS_FOR_INTERVAL, clustered_rates, session_ledger, tally_by_session)
from .readers import (MAX_FILE_BYTES, TORN_LINE, SessionFileError, printable_name,
                      read_session_file, wanted)
from .needed import agreed_words, history_in_file
from .truth import (INSTRUCTION_CLASSES, MASK, STEP_CLASSES, VALUE_CLASSES, ground_truth,
                    judge_state, mask_secrets, plain_parts)


# --- Where each agent keeps its logs --------------------------------------------------------------
# agent -> (Linux and macOS, Windows, a note); the formats and their sources are in
# tasks/sessions/README.md
LOG_PLACES = (
    ("Claude Code", "~/.claude/projects/<project>/<session id>.jsonl",
     r"%USERPROFILE%\.claude\projects\<project>\<session id>.jsonl",
     "CLAUDE_CONFIG_DIR moves ~/.claude; sessions older than cleanupPeriodDays (30 by default) "
     "are deleted"),
    ("Codex CLI", "~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl",
     r"%USERPROFILE%\.codex\sessions\YYYY\MM\DD\rollout-*.jsonl",
     "CODEX_HOME moves ~/.codex; archived sessions in ~/.codex/archived_sessions/"),
    ("Gemini CLI", "~/.gemini/tmp/<project id>/chats/session-*.jsonl",
     r"%USERPROFILE%\.gemini\tmp\<project id>\chats\session-*.jsonl",
     "a compaction is recorded in the JSONL sessions (from May 2026) only"),
    ("Cline", "~/.config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/ (macOS: "
              "~/Library/Application Support/Code/User/globalStorage/...)",
     r"%APPDATA%\Code\User\globalStorage\saoudrizwan.claude-dev\tasks",
     "each task's api_conversation_history.json"),
    ("Roo Code", "~/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/ (macOS: "
                 "~/Library/Application Support/Code/User/globalStorage/...)",
     r"%APPDATA%\Code\User\globalStorage\rooveterinaryinc.roo-cline\tasks",
     "or its customStoragePath"),
    ("OpenHands", "a trajectory export (save_trajectory_path)", "the same",
     "one JSON list of events"),
    ("inspect_ai", "./logs/*.json or *.eval (INSPECT_LOG_DIR)", "the same",
     "each sample is a session"),
)

# files one audit reads (a home folder's logs of several years fit)
MAX_FILES = 100_000

# folder levels walked under a given path (Codex's YYYY/MM/DD is 3)
MAX_DEPTH = 12

# The characters of one turn the ground truth reads (the 2026-12-06 amendment, protocol/SESSIONS.md
# section 9): a quarter of a 200k-token window. A longer turn is a paste (a log, an export), not
# what a person asks or instructs: its first characters, up to the last space before this many,
# are read for values, instructions and steps, and the rest only for the lines that hold one of
# the summary's values, so that the gate does not call them invented
MAX_TURN_CHARS = 200_000

# The characters of each of the user's messages the gate reads as what the user asked (a longer
# message is a paste after the request; the gate compares every such message with each sentence
# that gives the user an order)
MAX_REQUEST_CHARS = 4_000

# The processes an audit of several sessions is scored in (one session a task): each holds its
# session and the rules' caches, so that two keep the peak memory of the 86 MB development set
# under 1 GB (scripts/BENCHMARKS.md); a single file is scored in the audit's own process
MAX_PROCESSES = 2

# audit.csv: an excerpt's characters, and either side of the item where the same sentence was
# already shown on an earlier row of the compaction (so the csv stays smaller than the logs)
EXCERPT_CHARS = 240
REPEAT_CHARS = 40

ITEM_TYPES = ("value", "instruction", "step", "gate")

CLASSES = {"value": VALUE_CLASSES, "instruction": INSTRUCTION_CLASSES, "step": STEP_CLASSES}

LOST = {"value": ("changed", "dropped"), "instruction": ("contradicted", "absent"),
        "step": ("claimed done", "absent")}

# worse than a loss
HARMFUL = {("value", "changed"), ("instruction", "contradicted"), ("step", "claimed done")}

GATE_MEANS = {
    "obligation": "an order the user did not give or withdrew, or one to set the rules aside",
    "status": "a failure presented as a success, or a claim the transcript contradicts",
    "value": "a value the transcript does not give",
    "schema": "a field that steers the " "successor",
}


class AuditInputError(SessionFileError):
    """A path or file the audit cannot take: one line, exit 2."""


# --- The files ------------------------------------------------------------------------------------
def log_files(paths: list[Path]) -> tuple[list[tuple[Path, str]], list[tuple[str, str]], int]:
    """The files to read under the paths given (a file, or a folder walked without following links),
    each with the name it is shown by; what was skipped with why (a link, a pipe or device, a file
    too large, an unprintable name, a path given that does not exist: refused only when none of them
    does); and how many other files (not a log's suffix) were passed over."""
    files: list[tuple[Path, str]] = []
    skipped: list[tuple[str, str]] = []
    passed, missing = 0, []
    for given in paths:
        try:
            mode = os.lstat(given).st_mode
        except OSError as err:
            missing.append(f"{given} ({err.strerror})")
            skipped.append((str(given), f"cannot be read ({err.strerror})"))
            continue
        if stat.S_ISLNK(mode):
            skipped.append((str(given), "a link (never followed); give the path it points to: "
                            f"{os.path.realpath(given)}"))
        elif stat.S_ISREG(mode):
            take(given, str(given), os.lstat(given).st_size, files, skipped)
        elif not stat.S_ISDIR(mode):
            skipped.append((str(given), "not a regular file or folder (a pipe, device or socket)"))
        else:
            passed += walk(given, files, skipped)
    if len(missing) == len(paths):
        raise AuditInputError(f"no logs at {', '.join(missing)}; give a log file or a folder of "
                              "them, or run `audit` alone to see where each agent keeps its logs")
    return files, skipped, passed


def walk(root: Path, files: list, skipped: list) -> int:
    """A folder's log files, its subfolders included (MAX_DEPTH levels), in name order; a link, to a
    file or a folder, is skipped with one line and never followed. Returns how many other files were
    passed over."""
    passed, stack = 0, [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as err:
            skipped.append((str(folder), f"cannot be listed ({err.strerror})"))
            continue
        below = []
        for entry in entries:
            shown = os.path.relpath(entry.path, root.parent) if root.parent != root else entry.path
            if entry.name.startswith(".") and not entry.name.endswith("chat.history.md"):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as err:
                skipped.append((shown, f"cannot be read ({err.strerror})"))
                continue
            if stat.S_ISLNK(info.st_mode):
                skipped.append((shown, "a link (never followed)"))
            elif stat.S_ISDIR(info.st_mode):
                if depth + 1 < MAX_DEPTH:
                    below.append((Path(entry.path), depth + 1))
                else:
                    skipped.append((shown,
                                    f"a folder more than {MAX_DEPTH} levels down (not read)"))
            elif not wanted(entry.name):
                passed += 1
            elif not stat.S_ISREG(info.st_mode):
                skipped.append((shown, "not a regular file (a pipe, device or socket)"))
            else:
                take(Path(entry.path), shown, info.st_size, files, skipped)
        stack += reversed(below)
    return passed


def take(path: Path, shown: str, size: int, files: list, skipped: list) -> None:
    """A log file to read, unless its name cannot be shown or it is over the readers' size limit."""
    if not printable_name(shown):
        skipped.append((repr(shown)[1:-1], "a name that is not printable UTF-8"))
    elif size > MAX_FILE_BYTES:
        skipped.append((shown, f"larger than {MAX_FILE_BYTES // 2 ** 20} MiB (cut it into smaller "
                        "files)"))
    elif len(files) >= MAX_FILES:
        raise AuditInputError(f"more than {MAX_FILES:,} log files under the paths given; audit "
                              "fewer at a time")
    else:
        files.append((path, shown))


def read_logs(files: list[tuple[Path, str]], skipped: list[tuple[str, str]],
              progress=None) -> tuple[list, dict]:
    """Every session of every file (readers.read_session_file), each file read once; a file
    that cannot be read is added to skipped with its one-line reason and the others are read on; a
    file whose content was already read (a copy: the same sessions, ids and all) is set aside.
    Also what was read: files and bytes, a digest of every file's name and sha256, the copies, and
    the files read whose last line was cut short and left out (a compaction recorded there is
    lost)."""
    sessions, digest, size, read = [], hashlib.sha256(), 0, 0
    first_of: dict[str, str] = {}       # a file's content (sha256) -> the name it was first read by
    copies: list[tuple[str, str]] = []
    cut: list[str] = []
    if progress:
        progress(0, len(files), 0)          # no line: the time the first file takes is counted
    for k, (path, shown) in enumerate(files, 1):
        try:
            # one byte that is not UTF-8 does not make a log unreadable
            found = read_session_file(path, shown, lenient=True)
        except SessionFileError as err:
            skipped.append((shown, str(err).split(f"{shown} ",
                                                  1)[-1].split("; the sessions study reads")[0]))
            continue
        except (OSError, RecursionError, MemoryError) as err:
            skipped.append((shown, f"cannot be read ({type(err).__name__})"))
            continue
        if found[0]["sha256"] in first_of:
            # the same sessions (their ids and content) counted once: a copy is no more evidence
            copies.append((shown, first_of[found[0]["sha256"]]))
            continue
        first_of[found[0]["sha256"]] = shown
        if any(TORN_LINE in session["read"]["skipped"] for session in found):
            cut.append(shown)
        size, read = size + found[0]["bytes"], read + 1
        digest.update(f"{shown}\0{found[0]['sha256']}\n".encode("utf-8"))
        sessions += found
        if progress:
            progress(k, len(files), size)
    # the files read and their bytes together: a file skipped counts in neither
    return sessions, {"files": read, "bytes": size, "sha256": digest.hexdigest(), "copies": copies,
                      "cut": cut}


# --- The history each compaction replaced ---------------------------------------------------------
def replaced_turns(session: dict, k: int) -> list[dict]:
    """The turns compaction k (0-based) replaced: from the session's start, or from the previous
    compaction (its summary as the user turn the agent resumed from, and the turns it kept
    verbatim), up to compaction k."""
    events = session["compactions"]
    event, turns, span = events[k], session["turns"], []
    previous = events[k - 1] if k else None
    if previous is not None:
        span += [turns[t - 1] for t in previous["kept_turns"] if 0 < t <= len(turns)]
        if previous["summary"]:
            span.append({"role": "user", "text": previous["summary"], "at": previous["at"],
                         "summary": True})
    if event["replaces"]:
        first, last = event["replaces"]
        span += turns[first - 1:last]
    return span


def compaction_events(sessions: list[dict]):
    """(session index, session, compaction index) of every compaction recorded, in order."""
    for s, session in enumerate(sessions):
        for k in range(len(session["compactions"])):
            yield s, session, k


# --- Scoring one summary --------------------------------------------------------------------------
def capped_turns(turns: list[dict]) -> tuple[list[dict], list[str]]:
    """The turns with each text cut after the last space within MAX_TURN_CHARS (a copy only of a
    turn that is cut), and the tails cut off."""
    out, tails = [], []
    for turn in turns:
        text = turn.get("text") or ""
        if len(text) <= MAX_TURN_CHARS:
            out.append(turn)
            continue
        # a cut at a space never splits a secret, which holds none: its pieces stay maskable
        cut = max(text.rfind(" ", 0, MAX_TURN_CHARS), text.rfind("\n", 0, MAX_TURN_CHARS), 0)
        out.append({**turn, "text": text[:cut]})
        tails.append(text[cut:])
    return out, tails


def lines_holding(tails: list[str], summary: str) -> list[str]:
    """The lines of the tails that hold one of the summary's values (as written), each once."""
    wanted_values = {v.text for v in extract_values(summary)}
    found: dict[str, None] = {}
    for tail in tails:
        for line in tail.splitlines():
            if line not in found and any(v in line for v in wanted_values):
                found[line] = None
    return list(found)


def span_truth(turns: list[dict], summary: str = "", asked: str | None = None
               ) -> tuple[dict, str, list[str]]:
    """The ground truth of the turns a summary replaced (truth.ground_truth, each turn read up to
    MAX_TURN_CHARS), its values read from what the conversation wrote (the user's and the agent's
    text, the agent's tool calls), never from a tool's output (protocol/SESSIONS.md, the amendment
    of 2026-12-06 for issue 40, point 8); their text as the gate's source: the same, and the lines
    cut off that hold one of the summary's values; and the conversation's texts, whose values the
    gate compares the summary's with. `asked`: the words the user gave this summary (a `/compact
    <words>` command), which the gate reads as the user's too."""
    head, tails = capped_turns(turns)
    parts = [plain_parts(turn) for turn in head]
    written = [[(said, text) for said, text in turn if said != "tool result"] for turn in parts]
    source = "\n\n".join([text for turn in parts for _, text in turn] +
                          lines_holding(tails, summary))
    # what the user asked or agreed to, for the gate: an order the summary gives the user is checked
    # against it
    requests = [text[:MAX_REQUEST_CHARS] for text in agreed_words(head)] + \
        ([asked[:MAX_REQUEST_CHARS]] if asked else [])
    truth = ground_truth(head, parts=written)
    # what the gate counts as support and as an unresolved failure: what the calls did
    support = gate_support(head, truth["steps"], summary)
    if asked:
        support["user_said"] += "\n" + asked
    return ({**truth, "user_requests": requests, "gate_support": support}, source,
            [text for turn in written for _, text in turn])


def score_summary(turns: list[dict], summary: str, asked: str | None = None
                  ) -> tuple[list[dict], dict]:
    """One summary against the turns it replaced: the rows (one per value, instruction in force,
    failed or denied step, and each finding of the release gate: an instruction or a claim the
    summary invents), every secret masked, and the span's counts."""
    truth, source, written = span_truth(turns, summary, asked)
    return judge_summary(truth, source, summary, written), span_counts(turns, truth)


def span_counts(turns: list[dict], truth: dict) -> dict:
    cut = [len(t.get("text") or "") for t in turns if len(t.get("text") or "") > MAX_TURN_CHARS]
    return {"turns": len(turns), "values": len(truth["values"]), "cut_turns": len(cut),
            "cut_chars": sum(cut) - MAX_TURN_CHARS * len(cut),
            "instructions": sum(not i.get("revoked_turn") for i in truth["instructions"]),
            "withdrawn": sum(bool(i.get("revoked_turn")) for i in truth["instructions"]),
            "steps": sum(s["status"] != "done" for s in truth["steps"]),
            "resolved_steps": sum(s["status"] == "done" for s in truth["steps"])}


def excerpt(text: str | None, item: str, seen: set[str]) -> str | None:
    """text cut to EXCERPT_CHARS around item (where it stands in text), or to REPEAT_CHARS either
    side of it where an earlier row showed the same text (seen); ... marks a cut."""
    if not text:
        return text
    width = (2 * REPEAT_CHARS + len(item)) if text in seen else EXCERPT_CHARS
    seen.add(text)
    if len(text) <= width:
        return text
    at = max(text.find(item), 0) if item else 0
    start = max(0, min(at + len(item) // 2 - width // 2, len(text) - width))
    return ("..." * (start > 0) + text[start:start + width] +
            "..." * (start + width < len(text)))


def gate_findings(truth: dict, source: str, summary: str,
                  written: list[str] | None = None) -> list[dict]:
    """The release gate's blocking findings on a summary (gate.check_state, with the study's
    ledger of the span), as the audit reports them and scripts/bench/measure_gate.py counts them:
    where span_truth read what the calls did (gate_support), the ledger's items are theirs, a
    finding they support is dropped (gate_support.unsupported) and each other has its tier, a
    misstatement the log shows ("found") or a claim it cannot show false ("unverified"), some
    left out (audit_gate.audit_findings); else each is "found"."""
    support = truth.get("gate_support")
    ledger = session_ledger(truth, ledger_items(support) if support else None)
    findings = [f for f in check_state(summary, ledger, source, written) if f["blocking"]]
    if not support:
        return [{**f, "tier": "found"} for f in findings]
    return audit_findings(unsupported(findings, support, source, summary), support, summary)


def judge_summary(truth: dict, source: str, summary: str,
                  written: list[str] | None = None) -> list[dict]:
    """The summary judged once (truth.judge_state) and gated once (gate.check_state, with
    the study's ledger of the span; the summary's values compared with those of `written`, the
    conversation's own texts, where given): its rows, every secret masked."""
    judged = judge_state(truth, summary)
    findings = gate_findings(truth, source, summary, written)
    secrets = [v["text"] for v in truth["values"] if v["secret"]]
    # every secret of the whole texts, found before the excerpts below were cut from them
    pieces = secret_pieces((source, summary))

    def mask(text):
        return mask_secrets(text, secrets, pieces) if text else text

    # every excerpt cut after masking, from the masked whole
    shown_source: set[str] = set()
    shown_summary: set[str] = set()

    def cut(item, source_text, summary_text):
        return {"source_sentence": excerpt(mask(source_text), item, shown_source),
                "summary_sentence": excerpt(mask(summary_text), item, shown_summary)}

    rows = []
    for fact, j in zip(truth["values"], judged["values"]):
        item = MASK if fact["secret"] else mask(fact["text"])
        rows.append({"type": "value", "kind": fact["kind"], "item": item,
                     "status": j["status"], "beside": j["beside"],
                     "instead": None if j["instead"] is None else MASK if fact["secret"]
                     else mask(j["instead"]), **cut(item, fact["sentence"], j["state_sentence"])})
    by_id = {i["id"]: i for i in truth["instructions"]}
    for j in judged["instructions"]:
        item = excerpt(mask(by_id[j["id"]]["text"]), "", set())
        rows.append({"type": "instruction", "kind": "standing instruction", "item": item,
                     "status": j["status"], "beside": None, "instead": None,
                     **cut(item, by_id[j["id"]]["text"], j["state_sentence"])})
    steps = {s["id"]: s for s in truth["steps"]}
    for j in judged["steps"]:
        step = steps[j["id"]]
        item = excerpt(mask(f"{step['tool']}: " f"{step['match'][0]}"), "", set())
        rows.append({"type": "step", "kind": step["outcome"], "item": item,
                     "status": j["status"], "beside": None, "instead": None,
                     **cut(item, step["detail"], j["state_sentence"])})
    for f in findings:
        rows.append({"type": "gate", "kind": f["category"],
                     "item": excerpt(mask(f["detail"]), "", set()), "status": f["tier"],
                     "beside": None, "instead": None,
                     **cut("", None, f["text"])})
    return rows


def audit_sessions(sessions: list[dict], progress=None, processes: int = 1) -> list[dict]:
    """Every compaction of every session, scored where its summary is readable and its replaced
    history is in the file (audit_compaction); with processes > 1 and several sessions, the
    sessions are scored in that many processes and their records kept in session order."""
    out = []
    events = list(compaction_events(sessions))
    if progress:
        progress(0, len(events))                # a line from the start, however long the first
    if processes > 1 and sum(bool(s["compactions"]) for s in sessions) > 1:
        return audit_in_processes(sessions, processes, progress)
    for done, (s, session, k) in enumerate(events, 1):
        out.append(audit_compaction(session, k, s + 1))
        if progress:
            progress(done, len(events))
    return out


def usable_processes() -> int:
    """The processes an audit of several sessions runs in: the CPUs this process may use, at most
    MAX_PROCESSES."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_PROCESSES, cpus or 1))


def session_records(task: tuple[int, dict]) -> tuple[int, list[dict]]:
    """The records of every compaction of one session (one task of audit_in_processes), with the
    session's index."""
    index, session = task
    return index, [audit_compaction(session, k, index + 1)
                   for k in range(len(session["compactions"]))]


def ignore_interrupt() -> None:
    # where a spawned process does not inherit SIGINT ignored (Windows), from its first task on
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def workers_started(processes: int):
    """A pool of `processes` spawned workers that never see a Ctrl-C: SIGINT is ignored here for the
    few milliseconds their processes take to start, so each inherits it ignored through exec and
    Python installs no KeyboardInterrupt in them at all (not even while they import the package, as
    a signal mask would not survive the spawn)."""
    answered = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return multiprocessing.get_context("spawn").Pool(processes, initializer=ignore_interrupt)
    finally:
        signal.signal(signal.SIGINT, answered)


def audit_in_processes(sessions: list[dict], processes: int, progress=None) -> list[dict]:
    """audit_sessions in `processes` worker processes, one session a task, the longest first (so
    that no long one is left to run alone at the end); the records the same, in the same order,
    as one process makes them (each record is a pure function of its session). A Ctrl-C reaches
    every process of the group, but only this one answers it: the workers ignore it
    (workers_started), and on a Ctrl-C, or any failure, they are terminated and joined before this
    returns, so none outlives the audit."""
    total = sum(len(s["compactions"]) for s in sessions)
    order = sorted((s for s in range(len(sessions)) if sessions[s]["compactions"]),
                   key=lambda s: -sum(len(t.get("text") or "") for t in sessions[s]["turns"]))
    records: list[list[dict]] = [[] for _ in sessions]
    pool = None
    # a SIGTERM (kill, a closing terminal) ends the audit as a Ctrl-C does, so that the workers are
    # terminated below instead of left scoring for minutes after the audit is gone
    before = signal.signal(signal.SIGTERM, stop_on_terminate)
    try:
        pool = workers_started(processes)
        done = 0
        tasks = ((s, sessions[s]) for s in order)
        for index, session_rows in pool.imap_unordered(session_records, tasks):
            records[index] = session_rows
            done += len(session_rows)
            if progress:
                progress(done, total)
        pool.close()
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        signal.signal(signal.SIGTERM, before)
    return [record for session in records for record in session]


def stop_on_terminate(signum, frame) -> None:
    raise KeyboardInterrupt


def audit_compaction(session: dict, k: int, number: int = 1) -> dict:
    """Compaction k (0-based) of a session, as the audit reports it (and as
    scripts/bench/measure_audit.py measures it): {session, file, format, n, trigger, tokens_before,
    tokens_after, source, scored, why, counts, rows, needed}."""
    event = session["compactions"][k]
    record = {"session": number, "file": session["file"], "format": session["format"],
              "n": event["n"],
              "trigger": event["trigger"], "tokens_before": event["tokens_before"],
              "tokens_after": event["tokens_after"], "source": event["source"],
              "kept_turns": len(event["kept_turns"]), "scored": False, "why": None,
              "counts": {}, "rows": []}
    turns = replaced_turns(session, k)
    inside, missing = history_in_file(event)
    if not event["readable"]:
        record["why"] = event["why_unreadable"]
    elif not inside or not turns:
        # listed apart, never as losses (issue 40, point 3)
        record["why"] = f"{NOT_IN_FILE} ({missing or 'no turn before it'})"
        record["history_missing"] = True
    else:
        record["rows"], record["counts"] = score_summary(turns, event["summary"],
                                                          event.get("asked"))
        # the needed items read each turn as the ground truth does, up to MAX_TURN_CHARS
        record["needed"] = needed_rows(capped_turns(turns)[0], event.get("workspace"),
                                       event["summary"], record["rows"], event.get("asked"))
        record["scored"] = True
    return record


def audit_pair(source_session: dict, summary: str) -> list[dict]:
    """--source TRANSCRIPT --summary FILE: the summary scored against the whole transcript, as one
    compaction."""
    record = {"session": 1, "file": source_session["file"], "format": source_session["format"],
              "n": 1,
              "trigger": None, "tokens_before": None, "tokens_after": None, "source": "--summary",
              "kept_turns": 0, "scored": True, "why": None}
    record["rows"], record["counts"] = score_summary(source_session["turns"], summary)
    record["needed"] = needed_rows(capped_turns(source_session["turns"])[0], None, summary,
                                   record["rows"])
    return [record]


# --- Across compactions and sessions --------------------------------------------------------------
TOKEN_BANDS = ((0, 50_000, "under 50k"), (50_000, 100_000, "50k to 100k"),
               (100_000, 150_000, "100k to 150k"),
               (150_000, 200_000, "150k to 200k"), (200_000, None, "200k and over"))


def token_band(tokens: int | None) -> str:
    if tokens is None:
        return "not recorded"
    return next(name for low, high, name in TOKEN_BANDS if tokens
                >= low and (high is None or tokens < high))


def harm(record: dict) -> tuple:
    """How bad a compaction was, worst first: harmful statuses (a value changed, an instruction
    contradicted, a step claimed done) and invented items, then items lost, then items in all."""
    rows = record["rows"]
    bad = sum((r["type"], r["status"]) in HARMFUL or (r["type"], r["status"]) == ("gate", "found")
              for r in rows)
    lost = sum(r["status"] in LOST.get(r["type"], ()) for r in rows)
    return (-bad, -lost, record["session"], record["n"])


def analyze_audit(records: list[dict], read: dict) -> dict:
    """Totals and rates per item type and class, per value kind, per trigger and by tokens before
    compaction, with session-clustered intervals only where enough sessions support them
    (analysis.clustered_rates); the compactions worst first; the label with its reasons,
    computed from what was read."""
    scored = [r for r in records if r["scored"]]
    rows = [{**row, "episode": r["session"], "trigger": r["trigger"] or "not recorded",
             "band": token_band(r["tokens_before"])} for r in scored for row in r["rows"]]
    sessions = sorted({r["session"] for r in scored})
    of = {t: [row for row in rows if row["type"] == t] for t in ITEM_TYPES}
    tallies = {}
    for t in ("value", "instruction", "step"):
        tallies[f"{t}_lost"] = tally_by_session(of[t], lambda row: "all",
                                                lambda row: row["status"] in LOST[t])
        tallies[f"{t}_lost_by_trigger"] = tally_by_session(of[t], lambda row: row["trigger"],
                                                           lambda row: row["status"] in LOST[t])
        tallies[f"{t}_lost_by_band"] = tally_by_session(of[t], lambda row: row["band"],
                                                        lambda row: row["status"] in LOST[t])
    tallies["value_lost_by_kind"] = tally_by_session(of["value"], lambda row: row["kind"],
                                                     lambda row: row["status"] in LOST["value"])
    tallies["value_beside"] = tally_by_session([r for r in of["value"] if r["beside"] is not None],
                                               lambda row: "all", lambda row: row["beside"])
    rates = clustered_rates(tallies)
    classes = {t: {c: sum(r["status"] == c for r in of[t]) for c in CLASSES[t]} for t in CLASSES}
    invented = collections.Counter(r["kind"] for r in of["gate"] if r["status"] == "found")
    unverified = sum(r["status"] == "unverified" for r in of["gate"])
    reasons = [f"{len(scored)} compaction{'s' * (len(scored) != 1)} scored in {len(sessions)} "
               f"session{'s' * (len(sessions) != 1)}, from logs the user chose after the fact: no "
               "protocol was registered before they were read, so the rates describe these "
               + ("sessions; the intervals read them as a sample of sessions like them (the same "
                  "agents, users and kind of work) and cover that sampling only"
                  if len(sessions) >= MIN_SESSIONS_FOR_INTERVAL else
                  "sessions and nothing beyond them"),
               "the items are found and judged by lexical rules (their measured figures are in "
               "the report, under How sure these are): a status is the rules' reading, not a "
               "person's"]
    missing = [r for r in records if r.get("history_missing")]
    if missing:
        reasons.append(f"{len(missing)} compaction{'s' * (len(missing) != 1)} whose replaced "
                       "history is not in the file listed apart, not scored")
    if len(sessions) < MIN_SESSIONS_FOR_INTERVAL:
        reasons.append(f"fewer than {MIN_SESSIONS_FOR_INTERVAL} sessions hold a scored compaction, "
                       "so no interval is printed")
    cut = sum(r["counts"].get("cut_turns", 0) for r in scored)
    if cut:
        reasons.append(f"{cut} turn{'s' * (cut != 1)} longer than {MAX_TURN_CHARS:,} characters "
                       f"(a paste, not what a person asks) {'were' if cut != 1 else 'was'} read "
                       f"for {'their' if cut != 1 else 'its'} first {MAX_TURN_CHARS:,} only; "
                       f"{sum(r['counts'].get('cut_chars', 0) for r in scored):,} characters "
                       "after them were read only for the summaries' values")
    unscored = [r for r in records if not r["scored"] and not r.get("history_missing")]
    if unscored:
        reasons.append(f"{len(unscored)} recorded compaction{'s' * (len(unscored) != 1)} could not "
                       "be scored (listed below with why)")
    return {"label": "EXPLORATORY", "reasons": reasons, "read": read, "n_compactions": len(records),
            "n_scored": len(scored), "n_sessions": len(sessions),
            "min_sessions": MIN_SESSIONS_FOR_INTERVAL,
            "classes": classes, "gate": dict(sorted(invented.items())),
            "gate_unverified": unverified, "rates": rates,
            "beside": {c: sum(r["beside"] is True for r in of["value"] if r["status"] == c) for c in
                       ("kept", "reformatted", "former")},
            "worst": sorted(scored, key=harm), "unscored": unscored,
            "needed_items": analyze_needed(records),
            "triggers": sorted({row["trigger"] for row in rows}),
            "bands": [name for _, _, name in TOKEN_BANDS if any(row["band"]
                                                                == name for row in rows)] +
            (["not recorded"] if any(row["band"] == "not recorded" for row in rows) else [])}
