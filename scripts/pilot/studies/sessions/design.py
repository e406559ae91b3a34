"""XR-S1, design (protocol/SESSIONS.md sections 2 to 5): the sessions a user brings, rendered as the
compactor sees them and cut at turn boundaries into segments; the ground truth each holds; the
user's probes; the regimes and their prompts; how a cell's calls are planned and each call's
messages built; the study's options; and the stand-in model `demo --study sessions` runs on.
Everything in this study is EXPLORATORY. """
from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import time
import zlib
from pathlib import Path
from typing import Any

from ...inputs import TaskSetError, parse_json
from ...probes import ProbeKind, register_probe_kind
from ...prompts import (COMPACTION_FRAME, PROMPTS as BUILT_IN_PROMPTS, REGIMES as BUILT_IN_REGIMES,
                        CallText)
from ...records import (ANSWER_NUM_PREDICT, CallSpec, DEFAULT_BUDGET, MAX_CONTEXT_WINDOW,
                        MIN_CONTEXT_WINDOW, NUM_CTX, Option, PilotError, REPO_ROOT, Regime,
                        canonical_json, display_path, sha256_bytes, sha256_text)
from .segments import (CHARS_PER_TOKEN, CallRoom, agent_cut, cumulative, cut_points,
                       estimated_tokens, even_cut, largest, segments_of)
# the readers (readers/) and the ground truth (truth.py) are imported by the functions
# that use them:
# `--help`, and every command on another study, import neither


def __getattr__(name: str):
    """The readers' and the ground truth's names, read through this module as before
    (sessions.ground_truth)."""
    import importlib
    for module in (".truth", ".readers"):
        found = getattr(importlib.import_module(module, __package__), name, None)
        if found is not None:
            return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


PROTOCOL_ID = "XR-S1"

STUDY_KEY = "sessions"

PROTOCOL_PATH = REPO_ROOT / "protocol" / "SESSIONS.md"

TASKS_PATH = REPO_ROOT / "tasks" / "sessions" / "logs"

# in the hashed listing: another reader reads another task set
READER_VERSION = "xrs1-read-1"

# The committed example sessions, each file's name and sha256 (LF line endings): the study's pinned
# task set.
PINNED_SESSIONS = [{"file": name, "sha256": sha} for name, sha in (
    ("1-coding-billing.agent.jsonl",
     "7c913e3177c0c96897009a89d844dc8be8b8c2cae41b9648c66ed611bc0cef59"),
    ("2-support-refund.chat.json",
     "b50cae8b09db0ba392f6cc5eb5e63129c858dd8cd0aae4abfbcc85fcb87baa0a"),
    ("3-research-survey.messages.jsonl",
     "4701f614f04470a870b9e2f7346cd756fdb696975c307bedfbccd4e9f6395e74"),
    ("4-coding-proxy.agent.jsonl",
     "b04be8feadf15b5fa6e2b28bf0663f4c63ffc444a9b37ea4ee16bc51a1dbd31f"),
    ("5-support-plan.chat.json",
     "f5c7e611e0ac2f36bb2db674528c110c6a89fcbc98b78fd3aaa2d1681b84d585"),
    ("6-research-bench.messages.jsonl",
     "3f99bfcb043bcad8cff8ed1aa7124cd14c673f7af25bc0cb49da8135794093f4"))]

N_EXAMPLES = len(PINNED_SESSIONS)       # the example sessions `demo --study sessions` runs


def listing_bytes(sessions: list[dict], probes: dict | None) -> bytes:
    """What a task set's sha256 is taken of: the reader's version, each session's name and sha256,
    the probes'."""
    return canonical_json({"reader": READER_VERSION, "sessions": sessions,
                           "probes": probes}).encode("ascii")


# the examples with no probes file
PINNED_TASKS_SHA256 = sha256_bytes(listing_bytes(PINNED_SESSIONS, None))

DEFAULT_SEGMENTS = 4

MAX_SEGMENTS = 200

MAX_TURN_CHARS = 4000                   # a longer turn keeps its head and tail around a marker

CHECKPOINTS = ("even", "agent")         # segments of even size, or ending where the agent compacted

# a file whose reader understood fewer of its items is named on the console
UNDERSTOOD_SHARE = 0.8

MAX_PROBES = 1000

CUT_MARKER = "\n[... the middle of this output is left out by the reader ...]\n"

# --- Prompts and regimes --------------------------------------------------------------------------
# R1 is XR-001's prose prompt unchanged. R2 and R3 keep XR-001's frame and section names, but their
# value lines take
# any exact value as written (a session's values are paths, digests and amounts, not integers), the
# typed block
# gains constraints and status sections, and their answers (like every answer here) ask for the
# value exactly.
SESSION_FORMATS = {
    "typed": ("Format: write the state as a typed state block with these four sections in this "
              "order. values: one line per exact value, of the form name = value, the value copied "
              "character for character (numbers, amounts, dates, times, versions, hashes, ids, "
              "file paths, URLs, e-mail addresses). constraints: one line per standing instruction "
              "the user has given, in the user's words. status: one line per step, tool call or "
              "request that was tried, with its outcome (done, failed, denied, pending). notes: "
              "one line of free text."),
    "sections": ("Format: write the state under six headings, each on a line of its own followed "
                 "by its content: Goal, Constraints, Progress, Decisions, Next steps, Critical "
                 "values. Under Critical values write one line per exact value, of the form name = "
                 "value, the value copied character for character."),
}

EXACT_RULE = ("Reply with a single line of the form ANSWER: <value>, the value copied exactly as "
              "the session wrote it, and nothing else: no working, no explanation.")

PROMPTS = {
    "compact_typed": COMPACTION_FRAME.replace("<<FORMAT>>", SESSION_FORMATS["typed"]),
    "compact_sections": COMPACTION_FRAME.replace("<<FORMAT>>", SESSION_FORMATS["sections"]),
    "answer_state": ("Below is the saved state of a working session; the original transcript is "
                     "gone.\n\n{context}\n\n"
                     "Question: {question}\nAnswer from the saved state above. " + EXACT_RULE),
    "answer_recent": ("Below are the most recent parts of a working session; everything before "
                      "them is gone.\n\n"
                      "{context}\n\nQuestion: {question}\nAnswer from the parts above. "
                      + EXACT_RULE),
    "user": "USER: {text}",
    "assistant": "ASSISTANT: {text}",
    "call": "ASSISTANT CALLS {name}:\n{arguments}",
    "result": "TOOL RESULT ({name}{error}): {text}",
    "result_error": ", marked as an error",
}

REGIMES = {
    "R1": dataclasses.replace(BUILT_IN_REGIMES["R1"], description="prose summary, cascaded "
                              "(XR-001's R1 prompt)",
                              answer_template=PROMPTS["answer_state"], exploratory=True),
    "R2": dataclasses.replace(BUILT_IN_REGIMES["R2"], description="typed state block (values, "
                              "constraints, status, "
                              "notes), cascaded", compaction_template=PROMPTS["compact_typed"],
                              answer_template=PROMPTS["answer_state"], exploratory=True),
    "R3": dataclasses.replace(BUILT_IN_REGIMES["R3"], description="sectioned summary (goal, "
                              "constraints, progress, "
                              "decisions, next steps, critical values), cascaded",
                              compaction_template=PROMPTS["compact_sections"],
                              answer_template=PROMPTS["answer_state"]),
    "K1": dataclasses.replace(BUILT_IN_REGIMES["K1"], description="Recent-1: the last segment "
                              "verbatim, no compaction call",
                              answer_template=PROMPTS["answer_recent"]),
    "K2": dataclasses.replace(BUILT_IN_REGIMES["K2"], description="Recent-2: the last two segments "
                              "verbatim, no compaction "
                              "call", answer_template=PROMPTS["answer_recent"]),
}

DEFAULT_REGIMES = ("R1", "R2", "R3", "K1", "K2")


def prompts_sha256() -> str:
    return sha256_text(canonical_json({"xr001": BUILT_IN_PROMPTS, "sessions": PROMPTS}))


def user_regimes(extra: list[Regime], names: list[str]) -> tuple[list[Regime], list[str]]:
    """A regime file's regimes as this study runs them: a default answer template (XR-001's, which
    asks for an integer) becomes this study's, which asks for the value exactly; a template the user
    wrote is kept."""
    defaults = {BUILT_IN_PROMPTS["answer_state"]: PROMPTS["answer_state"],
                BUILT_IN_PROMPTS["answer_recent"]: PROMPTS["answer_recent"]}
    return [dataclasses.replace(r, answer_template=defaults.get(r.answer_template,
                                                                r.answer_template))
            for r in extra], names


# --- The exact-answer probe kind ------------------------------------------------------------------
EXACT_CLASSES = ("correct", "reformatted", "changed", "other_wrong", "omission")

ANSWER_LINE = re.compile(r"^[ \t]*ANSWER[ \t]*:[ \t]*(.*?)[ \t]*$", re.IGNORECASE | re.MULTILINE)

LENIENT_ANSWER_LINE = re.compile(r"ANSWER[*_`\s]*:[*_`\s]*(.+)", re.IGNORECASE)


def parse_exact(reply: str) -> str | None:
    """The text after the last `ANSWER:` that opens a line, spaces trimmed; None (an omission) when
    there is none."""
    found = [a for a in ANSWER_LINE.findall(reply or "") if a]
    return found[-1] if found else None


def parse_exact_lenient(reply: str) -> str | None:
    """Diagnostic only: an ANSWER anywhere, with markdown marks, quotes and a final full stop taken
    off."""
    found = LENIENT_ANSWER_LINE.findall(reply or "")
    return found[-1].strip().strip("*_`\"'").rstrip(".").strip() or None if found else None


def classify_exact(answer: str | None, question: dict, conflation: list) -> str:
    """correct only for the exact text; reformatted for the same value written otherwise; changed
    for a close one (is_close); other_wrong; omission."""
    from .truth import VALUE_KINDS, is_close, normalize_value
    if answer is None:
        return "omission"
    truth, kind = str(question["truth"]), question.get("type", "identifier")
    if answer == truth:
        return "correct"
    if kind in VALUE_KINDS:
        norm_truth, norm_answer = normalize_value(kind, truth), normalize_value(kind, answer)
        if norm_answer == norm_truth:
            return "reformatted"
        if is_close(kind, norm_truth, norm_answer):
            return "changed"
    return "other_wrong"


register_probe_kind(ProbeKind("exact", parse_exact, parse_exact_lenient, classify_exact,
                              EXACT_CLASSES, answer_type="text"))


# --- A session as the compactor sees it -----------------------------------------------------------
def cut_long(text: str, cap: int = MAX_TURN_CHARS) -> str:
    """text cut to at most cap characters: its first two thirds and its end around a marker (a plain
    cut when the cap is too small for the marker)."""
    if len(text) <= cap:
        return text
    if cap < 3 * len(CUT_MARKER):
        return text[:cap - 3] + "..."
    head = cap * 2 // 3
    return text[:head] + CUT_MARKER + text[-(cap - head - len(CUT_MARKER)):]


def render_arguments(arguments: Any) -> str:
    """A tool call's arguments, one `name: value` line each (text as written, anything else as
    JSON)."""
    if not isinstance(arguments, dict):
        return "  " + json.dumps(arguments, ensure_ascii=False)
    lines = []
    for name, value in arguments.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines.append(f"  {name}: " + shown.replace("\n", "\n    "))
    return "\n".join(lines) or "  (no arguments)"


def turn_parts(turn: dict, cap: int | None = MAX_TURN_CHARS) -> list[tuple[str, str]]:
    """A turn as (source, text) parts, the text as the compactor sees it: user, assistant, tool
    call, tool result; a turn longer than cap (MAX_TURN_CHARS) in all has each of its parts cut to
    an equal share of it (cap None: the turn whole, to count what the cut leaves out)."""
    if turn["role"] == "user":
        parts = [("user", PROMPTS["user"].format(text=turn["text"]))]
    elif turn["role"] == "assistant":
        parts = [("assistant",
                  PROMPTS["assistant"].format(text=turn["text"]))] if turn["text"] else []
        parts += [
            (
                "tool call",
                PROMPTS["call"].format(
                    name=call["name"], arguments=render_arguments(call["input"])
                ),
            )
            for call in turn["calls"]
        ]
    else:
        error = PROMPTS["result_error"] if turn["error"] else ""
        parts = [("tool result", PROMPTS["result"].format(name=turn["tool"], error=error,
                                                          text=turn["text"]))]
    if cap is None or sum(len(text) + 1 for _, text in parts) <= cap:
        return parts
    share = cap // len(parts) - 1
    return [(source, cut_long(text, share)) for source, text in parts]


def call_room(questions: list[dict]) -> CallRoom:
    """What a segment's calls need besides it: the longest built-in compaction prompt, the state and
    output caps at the pre-registered budget, the Recent-2 answer prompt with its two headings and
    this session's longest question, and the answer's cap (a regime file's longer prompt or another
    budget may need more: plan names the window each call needs)."""
    frame = max(len(r.compaction_template) for r in REGIMES.values() if r.compaction_template)
    heading = len(BUILT_IN_PROMPTS["segment_heading"].format(index=MAX_SEGMENTS)) + 4
    question = max((len(q["prompt"]) for q in questions), default=0)
    return CallRoom(compaction_frame=estimated_tokens(frame + len(BUILT_IN_PROMPTS["empty_state"])),
                    state=DEFAULT_BUDGET, output=DEFAULT_BUDGET,
                    answer_frame=estimated_tokens(len(PROMPTS["answer_recent"]) + 2 * heading
                                                  + question),
                    answer=ANSWER_NUM_PREDICT)


def plan_segments(session: dict, rendered: list[str], at_least: int, window: int, checkpoints: str,
                  questions: list[dict]) -> dict:
    """A session's cut: {"starts", "how", "window", "cap_tokens", "tokens", "largest_tokens",
    "needs_window", "one_segment_window"}; refused when no cut into at most MAX_SEGMENTS segments
    fits the window."""
    sizes = [len(t) + 2 for t in rendered]
    totals = cumulative(sizes)
    room = call_room(questions)
    cap_tokens = room.segment_cap(window)
    cap_chars = cap_tokens * CHARS_PER_TOKEN
    points = [c["after_turn"] for c in session["compactions"]]
    how = "even"
    if checkpoints == "agent" and points:
        starts, how = agent_cut(sizes, points, cap_chars, MAX_SEGMENTS), "agent"
    else:
        starts = even_cut(sizes, at_least, cap_chars, MAX_SEGMENTS, totals)
    tokens = estimated_tokens(totals[-1] - 2)
    if starts is None:
        turn = estimated_tokens(max(sizes) - 2)
        finest = cut_points(sizes, MAX_SEGMENTS, totals)
        need = room.window_for(max(turn, estimated_tokens(largest(finest, totals))))
        raise TaskSetError(f"{session['file']}: its {tokens:,} estimated tokens do not fit the "
                           f"{window:,}-token window "
                           f"(--context-window) in {MAX_SEGMENTS} segments or fewer" +
                           (" cut where the agent compacted" if how == "agent" else "") +
                           f"; give a window of at least {min(need, MAX_CONTEXT_WINDOW):,} tokens "
                           "with --context-window (your server must serve it: Ollama takes it as "
                           "num_ctx, an OpenAI-compatible server is started with it), or split "
                           "the session into several files")
    largest_tokens = estimated_tokens(largest(starts, totals))
    return {"starts": starts, "how": how, "window": window, "cap_tokens": cap_tokens,
            "tokens": tokens,
            "largest_tokens": largest_tokens, "needs_window": room.window_for(largest_tokens),
            "one_segment_window": room.window_for(tokens, alone=True), "asked": at_least}


def build_episode(index: int, session: dict, parts: list, rendered: list[str], cut: dict,
                  questions: list[dict]) -> dict:
    """One session as a task: its rendered turns cut into segments, its values, instructions, failed
    steps and probes, what the reader read of its file, how it fits the context window and the
    compactions its agent recorded (events, never turns: `after_turn`, `segment`, the summary and
    what the log says of it)."""
    from .study_needed import session_needed
    from .truth import ground_truth
    whole = [len("\n".join(text for _, text in turn_parts(turn, None))) for turn in
             session["turns"]]
    cut_turns = sum(w > len(r) for w, r in zip(whole, rendered))
    segments = segments_of(rendered, cut["starts"])
    segment_of = [seg["index"] for seg in segments for _ in range(*seg["turns"])]
    compactions = [{**event, "segment": segment_of[event["after_turn"]
                                                   - 1] if event["after_turn"] else 0}
                   for event in session["compactions"]]
    return {"episode": index, "file": session["file"], "format": session["format"],
            "sha256": session["sha256"],
            "read": {**session["read"], "turns": len(rendered), "cut_turns": cut_turns,
                     # (only where a turn was cut: a session cut nowhere reads as before)
                     **({"cut_chars": sum(whole) - sum(map(len, rendered)),
                         "whole_chars": sum(whole)} if cut_turns else {}),
                     "segments_asked": cut["asked"]},
            "kind": session["kind"], "notes": session["notes"],
            "window": {k: cut[k] for k in ("window", "how", "cap_tokens", "tokens",
                                           "largest_tokens", "needs_window",
                                           "one_segment_window")},
            "compactions": compactions,
            "segments": segments, **ground_truth(session["turns"], segment_of, parts=parts),
            **session_needed(session["turns"], segment_of), "questions": questions,
            "conflation_set": []}


# --- The probes file ------------------------------------------------------------------------------
PROBE_FIELDS = ("session", "question", "answer", "kind")


def read_probe_file(path: Path, names: list[str]) -> tuple[bytes, dict[str, list[dict]]]:
    """--probes FILE: a JSON list (or {"probes": [...]}) of {session, question, answer, kind};
    session may be left out when one session is read; kind (a value kind) is inferred from the
    answer when left out."""
    from .truth import VALUE_KINDS, extract_values
    from .readers import check_tree, read_file_text
    shown = display_path(path)
    if path.is_symlink() or not path.is_file():
        raise TaskSetError(f"no probes file at {shown} (or it is a link, a folder or a device); "
                           "give a JSON file of probes, see tasks/sessions/probes.json")
    data, text = read_file_text(path, shown)
    entries = parse_json(text, shown, "a probes file", "give a JSON list of probes, see "
                         "tasks/sessions/probes.json",
                         error=TaskSetError)
    check_tree(entries, shown)
    entries = entries.get("probes") if isinstance(entries, dict) else entries
    if not isinstance(entries, list) or not entries or len(entries) > MAX_PROBES:
        raise TaskSetError(f"{shown} must hold a list of 1 to {MAX_PROBES} probes (or an object "
                           "with a `probes` list)")
    by_session: dict[str, list[dict]] = {}
    for number, entry in enumerate(entries, 1):
        where = f"{shown} probe {number}"
        if not isinstance(entry, dict) or set(entry) - set(PROBE_FIELDS):
            raise TaskSetError(f"{where} must be an object with the fields "
                               f"{', '.join(PROBE_FIELDS)} and no others")
        question, answer = entry.get("question"), entry.get("answer")
        if isinstance(answer, (int, float)) and not isinstance(answer, bool):
            answer = str(answer)
        if not isinstance(question,
                          str) or not question.strip() or "\n" in question or len(question) > 1000:
            raise TaskSetError(f"{where}: `question` must be one line of text (at most 1,000 "
                               "characters)")
        if not isinstance(answer, str) or not answer.strip() or "\n" in answer or len(answer) > 300:
            raise TaskSetError(f"{where}: `answer` must be the exact expected value, one line of "
                               "at most 300 characters")
        session = entry.get("session")
        if session is None and len(names) == 1:
            session = names[0]
        matches = [n for n in names if session in (n, Path(n).stem)] if isinstance(session,
            str) else []
        if len(matches) != 1:
            raise TaskSetError(f"{where}: `session` must name one of the sessions read "
                               f"({', '.join(names[:8])}" +
                               (" ..." if len(names) > 8 else "") + ")")
        found = [k for k, v, _, _ in extract_values(answer.strip()) if v == answer.strip()]
        kind = entry.get("kind", found[0] if found else "identifier")
        if kind not in VALUE_KINDS:
            raise TaskSetError(f"{where}: `kind` must be one of {', '.join(VALUE_KINDS)}")
        questions = by_session.setdefault(matches[0], [])
        questions.append({"id": len(questions) + 1, "kind": "exact", "type": kind,
                          "prompt": question.strip(),
                          "truth": answer.strip()})
    return data, by_session


# --- Reading the sessions (Study.read_source) -----------------------------------------------------
def resolve_option_path(text: str) -> Path:
    path = Path(text)
    return path if path.is_absolute() else REPO_ROOT / path


# the last reading, by path, options and each file's size and time
READ_MEMO: dict = {}


def read_sessions(path: Path, segments: int = DEFAULT_SEGMENTS, probes: str | None = None,
                  context_window: int = NUM_CTX, checkpoints: str = "even") -> tuple[bytes, dict]:
    """Every session under path read, rendered, cut into segments that fit the context window and
    given its ground truth, before any call; the bytes hashed are the listing of each file's name
    and sha256 (and the probes file's). A command reads its task set several times (to name its
    folder, to check the lock, to plan): an unchanged reading is done once."""
    from .readers import session_files
    files, left_out = session_files(path)
    probe_path = resolve_option_path(probes) if probes else None
    stamps = [(name, file.stat().st_size, file.stat().st_mtime_ns) for file, name in files]
    if probe_path is not None and probe_path.is_file():
        stamps.append((str(probe_path), probe_path.stat().st_size, probe_path.stat().st_mtime_ns))
    key = canonical_json([str(path.resolve()), segments, probes, context_window, checkpoints,
                          stamps])
    if key not in READ_MEMO:
        READ_MEMO.clear()
        READ_MEMO[key] = read_sessions_now(path, files, left_out, segments, probe_path,
                                           context_window, checkpoints)
    return READ_MEMO[key]


# sessions this large in all get a progress line while they are read
PROGRESS_BYTES = 8 * 2 ** 20

PROGRESS_EVERY_S = 2.0


class ReadProgress:
    """A line on stderr every few seconds while a large set of sessions is read and its ground truth
    taken."""

    def __init__(self, total_bytes: int):
        self.total, self.on = total_bytes, total_bytes >= PROGRESS_BYTES
        self.start = self.last = time.monotonic()
        if self.on:
            self.say(f"reading {total_bytes / 2 ** 20:.1f} MiB of sessions before any call")

    def say(self, text: str) -> None:
        print(f"sessions: {text}", file=sys.stderr, flush=True)

    def step(self, text: str) -> None:
        now = time.monotonic()
        if self.on and now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            self.say(f"{text} ({now - self.start:.0f} s)")

    def done(self, sessions: int) -> None:
        if self.on:
            self.say(f"{sessions} session(s) read in {time.monotonic() - self.start:.1f} s")


def read_sessions_now(path: Path, files: list, left_out: dict, segments: int,
                      probe_path: Path | None,
                      context_window: int, checkpoints: str) -> tuple[bytes, dict]:
    """The sizes first (every file's, then every session's against the window), the ground truth
    last."""
    from .readers import MAX_TOTAL_BYTES, read_session_files, refuse
    from .study_needed import scored_record
    total = sum(p.stat().st_size for p, _ in files)
    if total > MAX_TOTAL_BYTES:
        raise refuse(str(path), f"holds {total // 2 ** 20} MiB of sessions, more than the "
                     f"{MAX_TOTAL_BYTES // 2 ** 20} "
                     f"MiB one run reads", "run the sessions in several folders")
    progress = ReadProgress(total)
    sessions = read_session_files(files, path if path.is_dir() else None, left_out, lambda done,
                                  name: progress.step(f"read {done / 2 ** 20:.1f} of "
                                                      f"{total / 2 ** 20:.1f} MiB ({name})"))
    names = [s["file"] for s in sessions]
    probe_listing, by_session = None, {}
    if probe_path is not None:
        data, by_session = read_probe_file(probe_path, names)
        probe_listing = {"file": display_path(probe_path),
                         "sha256": sha256_bytes(data.replace(b"\r\n", b"\n"))}
    rendered_sessions = []
    # every session against the window before any ground truth
    for session in sessions:
        parts = [turn_parts(turn) for turn in session["turns"]]
        rendered = ["\n".join(text for _, text in turn) for turn in parts]
        cut = plan_segments(session, rendered, segments, context_window, checkpoints,
                            by_session.get(session["file"], []))
        rendered_sessions.append((parts, rendered, cut))
        progress.step(f"rendered {session['file']}")
    episodes = []
    for i, (session, (parts, rendered, cut)) in enumerate(zip(sessions, rendered_sessions)):
        progress.step(f"ground truth of {session['file']} ({i + 1} of {len(sessions)})")
        episodes.append(build_episode(i, session, parts, rendered, cut,
                                      by_session.get(session["file"], [])))
    progress.done(len(episodes))
    listing = list({s["source"]: {"file": s["source"],
                                  "sha256": s["sha256"]} for s in sessions}.values())
    tasks = {"study": STUDY_KEY, "protocol": PROTOCOL_ID, "n_episodes": len(episodes),
             "segments": segments, "left_out": left_out, "listing": listing,
             "probes": probe_listing, "episodes": episodes, **scored_record(episodes)}
    if context_window != NUM_CTX or checkpoints != "even":
        tasks.update(context_window=context_window, checkpoints=checkpoints)
    return listing_bytes(listing, probe_listing), tasks


def load_task_set(path: Path, raw: bytes, tasks: dict, sha: str, in_repo: bool) -> dict:
    """The task set: `pinned` for the committed example sessions (their probes file may be added),
    `external` for the user's; the committed examples, changed, are refused."""
    kind = "pinned" if tasks["listing"] == PINNED_SESSIONS else "external"
    if in_repo and kind != "pinned":
        shown = display_path(path)
        raise PilotError(f"{shown} is not the committed example sessions; restore them with `git "
                         f"checkout -- {shown}`, or give your own with --sessions PATH")
    # what is scored beyond section 5 (needed items), recorded in the manifest before any call
    return {"tasks": tasks, "sha256": sha, "kind": kind, "path": display_path(path),
            **{k: tasks[k] for k in ("scored",) if k in tasks}}


def describe_sessions(tasks: dict) -> list[str]:
    """What `plan` prints about the sessions read: per file its format, what was read and left out,
    its truth, how it fits the context window and the compactions its agent recorded."""
    window = tasks.get("context_window", NUM_CTX)
    how = ("where the agent compacted (--checkpoints agent), else " if tasks.get("checkpoints")
           == "agent" else "")
    lines = [f"sessions read: {len(tasks['episodes'])} session(s), each cut at turn boundaries "
             f"{how}into at least {tasks['segments']} segments (--segments), more where a segment "
             f"would not fit the {window:,}-token context window (--context-window; tokens "
             f"estimated at {CHARS_PER_TOKEN} characters each)"]
    for name, why in tasks["left_out"].items():
        lines.append(f"  {name}: left out ({why})")
    for e in tasks["episodes"]:
        read, fit = e["read"], e.get("window") or {}
        skipped = "; ".join(f"{n} {why}" for why, n in read["skipped"].items()) or "none"
        lines.append(f"  {e['file']}: {e['format']}" + (f" ({e['kind']})" if e.get("kind") else "")
                     +
                     f", {read['read']} {read['unit']} read, skipped: {skipped}; {read['turns']} "
                     f"turns in {len(e['segments'])} segments; {len(e['values'])} exact values, "
                     f"{sum(not i['revoked_turn'] for i in e['instructions'])} standing "
                     "instructions in force" +
                     (f" ({sum(bool(i['revoked_turn']) for i in e['instructions'])} withdrawn or "
                      "corrected), "
                      if any(i["revoked_turn"] for i in e["instructions"]) else ", ") +
                     f"{sum(s['status'] != 'done' for s in e['steps'])} failed or denied steps, "
                     f"{len(e['questions'])} probes" + (f", {len(e['needed'])} needed items (tool "
                                                         "calls or task lists)" if "needed" in e
                                                         else ""))
        if fit:
            lines.append(f"    window: about {fit['tokens']:,} tokens in all; its largest segment, "
                         f"about {fit['largest_tokens']:,} tokens, needs a "
                         f"{fit['needs_window']:,}-token window (this run's {fit['window']:,} "
                         f"takes up to {fit['cap_tokens']:,} a segment); the whole session in one "
                         f"segment would need {fit['one_segment_window']:,}")
        lines += [f"    {line}" for line in session_notes(e)]
    lines += folder_notes(tasks)
    return lines


def session_notes(episode: dict) -> list[str]:
    """The lines about one session that plan and the run's console both print: what the reader did
    not understand, calls and results it could not link, the agent's own compactions, a cut finer
    than asked."""
    read, notes = episode["read"], list(episode.get("notes") or [])
    unread = sum((read.get("not_understood") or {}).values())
    if unread:
        notes.append(f"{unread} of {read['read']} {read['unit']} not understood by the reader and "
                     "left out")
    if read.get("calls_without_result") or read.get("results_without_call"):
        notes.append(f"{read.get('calls_without_result', 0)} tool call(s) with no result in the "
                     f"file, {read.get('results_without_call', 0)} result(s) naming no call in it")
    events = episode.get("compactions") or []
    if events:
        described = "; ".join(
            f"after turn {c['after_turn']}" + (f" ({c['trigger']})" if c["trigger"] else "") +
            (f", {c['tokens_before']:,} tokens before" if c["tokens_before"] else "") +
            ("" if c["readable"] else f", unreadable: {c['why_unreadable']}") for c in events[:6])
        notes.append(f"the agent compacted {len(events)} time(s) ({described}"
                     + ("; ..." if len(events) > 6 else "") +
                     "): kept as events, their summaries are not turns")
    if read.get("cut_turns"):
        whole = read.get("whole_chars") or 1
        notes.append(f"{read['cut_turns']} of {read['turns']} turns are longer than "
                     f"{MAX_TURN_CHARS:,} characters and cut to that at every window size (the "
                     f"middle of each left out): {read.get('cut_chars', 0):,} of the session's "
                     f"{whole:,} characters ({100 * read.get('cut_chars', 0) / whole:.0f}%) are "
                     "not in any segment")
    fit = episode.get("window") or {}
    if fit.get("how") == "agent":
        notes.append("segments end where the agent compacted")
    if len(episode["segments"]) > read.get("segments_asked", 0) and fit.get("how") != "agent" and \
            len(episode["segments"]) < read["turns"]:
        notes.append(f"cut into {len(episode['segments'])} segments, not {read['segments_asked']}, "
                     f"so that each fits the {fit.get('window', NUM_CTX):,}-token window")
    return notes


def folder_notes(tasks: dict) -> list[str]:
    kinds = [e.get("kind") for e in tasks["episodes"]]
    if kinds and all(k == "sub-agent" for k in kinds):
        return ["  every session here is a sub-agent's own log (its lines are side conversations, "
                "isSidechain): the main sessions are the <session id>.jsonl files in the project's "
                "folder, one level up"]
    return []


def task_warnings(tasks: dict) -> list[str]:
    """What a run says on its console about the sessions it read (plan says more): a file whose
    items the reader largely did not understand, sessions cut finer than asked, a folder of
    sub-agent logs only."""
    from .readers import FORMATS
    warnings = []
    for e in tasks["episodes"]:
        read = e["read"]
        why = read.get("not_understood") or {}
        unread = sum(why.values())
        if unread > (1 - UNDERSTOOD_SHARE) * max(1, read["read"]):
            worst = max(why.items(), key=lambda item: item[1])[0]
            warnings.append(f"{e['file']}: the reader did not understand {unread} of its "
                            f"{read['read']} {read['unit']} "
                            f"({100 * unread // max(1, read['read'])}%, the most: {worst}) and "
                            f"left them out; check it is {FORMATS.get(e['format'], e['format'])}, "
                            "or run `plan` to see every reason")
        elif unread:
            warnings.append(f"{e['file']}: {unread} of {read['read']} {read['unit']} not "
                            "understood and left out (`plan` lists why)")
    cut_finer = [e for e in tasks["episodes"] if len(e["segments"])
                 > e["read"].get("segments_asked", 0) and
                 (e.get("window") or {}).get("how") != "agent" and len(e["segments"])
                 < e["read"]["turns"]]
    if cut_finer:
        warnings.append(f"{len(cut_finer)} session(s) cut into more segments than --segments asks "
                        "so that each fits the context window (the most: "
                        f"{max(len(e['segments']) for e in cut_finer)}); a larger --context-window "
                        "makes fewer")
    return warnings + [line.strip() for line in folder_notes(tasks)]


# --- The study's options and the cell's calls -----------------------------------------------------
OPTIONS = (
    Option("--sessions", {"metavar": "PATH",
                          "help": "sessions study: your agent's logs, a file or a folder of them "
                          "(Claude Code, Codex, Gemini CLI, Cline, Roo Code, aider, SWE-agent, "
                          "OpenHands, inspect_ai, Responses API or chat messages; default: the "
                          "examples in tasks/sessions/logs/); a file there that cannot be read "
                          "stops the study before any call, one line naming each"}),
    Option("--segments", {"type": int, "metavar": "N",
                          "help": "sessions study: the fewest segments each session is cut into "
                          "at turn boundaries, one compaction after each; more where a segment "
                          f"would not fit the context window (default {DEFAULT_SEGMENTS})"}),
    Option("--checkpoints", {"choices": CHECKPOINTS, "metavar": "even|agent",
                             "help": "sessions study: `agent` ends the segments where the agent's "
                             "own log records a compaction (each part cut further to fit the "
                             "window); default even"}),
    Option("--probes", {"metavar": "FILE",
                        "help": "sessions study: your questions with their exact answers (see "
                                "tasks/sessions/probes.json); without it no probe is asked"}),
)


def read_options(given: dict) -> dict:
    """For the lock: --segments N and --checkpoints agent when not the default, --probes FILE (as
    the repository shows its path), and the context window (the runner's --context-window) when not
    the default, since it decides where the sessions are cut."""
    options = {}
    segments = given.get("segments")
    if segments is not None:
        if not 1 <= segments <= MAX_SEGMENTS:
            raise PilotError(f"--segments takes a whole number from 1 to {MAX_SEGMENTS}")
        if segments != DEFAULT_SEGMENTS:
            options["segments"] = segments
    if given.get("checkpoints") not in (None, "even"):
        options["checkpoints"] = given["checkpoints"]
    if given.get("probes"):
        # a link stays a link, refused
        options["probes"] = display_path(Path(os.path.abspath(given["probes"])))
    window = given.get("context_window")
    if window is not None and window != NUM_CTX:
        if not MIN_CONTEXT_WINDOW <= window <= MAX_CONTEXT_WINDOW:
            raise PilotError("--context-window takes a whole number of tokens from "
                             f"{MIN_CONTEXT_WINDOW:,} to {MAX_CONTEXT_WINDOW:,}")
        options["context_window"] = window
    return options


def recent_context(episode: dict, keep_last: int) -> str:
    """What a Recent-k regime leaves: its last k segments verbatim."""
    return "\n\n".join(BUILT_IN_PROMPTS["segment_heading"].format(index=seg["index"]) + "\n"
                       + seg["text"]
                       for seg in episode["segments"][-keep_last:])


def call_text(regime: Regime, episode: dict, spec: CallSpec, state: str, registry: str = "",
              **options) -> CallText:
    """A compaction takes the segment; a probe is asked over the final state, or the last segments
    of a Recent-k regime."""
    if spec.is_compaction:
        return CallText(segment=episode["segments"][spec.segment - 1]["text"])
    question = episode["questions"][spec.question_id - 1]
    context = state if regime.compacts else recent_context(episode,
                                                           regime.keep_last
                                                           or len(episode["segments"]))
    return CallText(context=context, question=question["prompt"])


def generate_file(options: dict) -> tuple[bytes, str]:
    raise PilotError("the sessions study reads the sessions you bring (--sessions PATH) and has no "
                     "task file to generate; see tasks/sessions/README.md")


# --- The demo's stand-in model --------------------------------------------------------------------
STAND_IN_SEED = 22001

STAND_IN_FORGETS, STAND_IN_ALTERS, STAND_IN_UPGRADES = 0.35, 0.12, 0.5   # prose states only

# a state it writes stays under its 256-token cap (1,024 characters)
STAND_IN_STATE_CHARS = 1000

KIND_WORDS = {"path": ("file", "path", "folder"), "digest": ("commit", "hash", "digest", "sha"),
              "version": ("version", "release"), "amount": ("amount", "refund", "price", "cost",
                                                            "charge", "total"),
              "date": ("date", "day"), "time": ("time", "hour"),
              "url": ("url", "link", "page", "address"),
              "email": ("e-mail", "email", "mail"), "identifier": ("id", "order", "ticket",
              "number", "code"),
              "number": ("how many", "count", "figure", "rate", "size")}


def stand_in_share(text: str, share: float) -> bool:
    return zlib.crc32(f"{STAND_IN_SEED}:{text}".encode("utf-8")) < share * 2 ** 32


class SessionsStandIn:
    """The stand-in `demo --study sessions` runs on: it writes states and answers from what its
    prompt holds, deterministically. A typed block or sectioned summary keeps every value it reads
    with a few words of where it came from (the newest first when its cap is near), every standing
    instruction and every failed step; a prose summary forgets about a third of the values, alters a
    digit in some, leaves the instructions out and reports half of the failed steps as done, so that
    the demo shows each kind of loss."""

    def reply(self, prompt: str) -> str:
        if "\nQuestion: " in prompt:
            return self.answer(prompt)
        return self.compact(prompt)

    @staticmethod
    def new_facts(segment: str) -> tuple[list, list, list]:
        """(value, words) of each value in a segment, the user's standing instructions, and the
        failed steps."""
        from .truth import extract_values, is_standing_instruction, split_sentences, step_outcome
        facts, rules, steps = [], [], []
        for line in segment.splitlines():
            found = extract_values(line)
            words = line
            for _, _, start, end in reversed(found):
                words = words[:start] + words[end:]
            words = " ".join(re.findall(r"[A-Za-z][A-Za-z-]+", words.split(":", 1)[-1])[:5])
            facts += [(value, words) for _, value, _, _ in found]
            if line.startswith("USER:"):
                rules += [x for x in split_sentences(line[5:]) if is_standing_instruction(x)]
            result = re.match(r"TOOL RESULT \((\w+)(, marked as an error)?\): (.*)", line)
            if result and step_outcome(result.group(3), bool(result.group(2))) != "ok":
                steps.append(f"{result.group(1)} ({result.group(3)[:60]})")
        return facts, rules, steps

    def compact(self, prompt: str) -> str:
        head, _, rest = prompt.partition("PREVIOUS STATE:")
        previous, _, segment = rest.partition("NEW SEGMENT:")
        if not segment:                     # a prompt of the user's own: the whole of it is read
            head, previous, segment = prompt, prompt, prompt
        facts, rules, steps = self.new_facts(segment)
        typed = "typed state block" in head or "Critical values" in head
        if typed:
            old = re.findall(r"^- (.+?) \| (.*)$", previous, re.MULTILINE)
            rules = re.findall(r"^- rule: (.*)$", previous, re.MULTILINE) + rules
            steps = re.findall(r"^- step: (.*) failed$", previous, re.MULTILINE) + steps
            kept = dict(old + facts)
            header = ["constraints:"] + [f"- rule: {r}" for r in dict.fromkeys(rules)] + \
                [f"- step: {x} failed" for x in dict.fromkeys(steps)] + ["values:"
                    if "typed" in head else
                                                                         "Critical values"]
            lines = header + [f"- {value} | {words}" for value, words in reversed(kept.items())]
            text = "\n".join(lines)
            return (text[:STAND_IN_STATE_CHARS].rsplit("\n", 1)[0] if len(text)
                    > STAND_IN_STATE_CHARS else text)
        old = re.findall(r"Noted (.+?) \((.*?)\)\.", previous)
        steps = re.findall(r"The (\w+ \(.*?\)) step (?:failed|was completed)\.", previous) + steps
        said = []
        for value, words in dict(old + facts).items():
            if stand_in_share(value, STAND_IN_FORGETS):
                continue
            if stand_in_share("alter:" + value, STAND_IN_ALTERS) and value[-1].isdigit():
                value = value[:-1] + str((int(value[-1]) + 1) % 10)
            said.append(f"Noted {value} ({words}).")
        outcomes = [f"The {x} step was completed." if stand_in_share(x,
            STAND_IN_UPGRADES) else f"The {x} step failed."
                    for x in dict.fromkeys(steps)]
        return " ".join(["The session so far."] + outcomes + said)[:STAND_IN_STATE_CHARS]

    def answer(self, prompt: str) -> str:
        from .truth import extract_values
        context, _, question = prompt.rpartition("\nQuestion: ")
        question = question.split("\n", 1)[0].lower()
        wanted = [kind for kind, words in KIND_WORDS.items() if any(w in question for w in words)]
        asked = set(re.findall(r"[a-z]{4,}", question))
        best, best_score = None, 0
        for unit in re.split(r"\n|(?<=\.) (?=Noted)", context):
            found = extract_values(unit)
            score = len(asked & set(re.findall(r"[a-z]{4,}", unit.lower())))
            if found and score and score >= best_score:
                best_score = score
                best = next((v for k, v, _, _ in found if k in wanted), found[0][1])
        return f"ANSWER: {best}" if best else "The notes do not say."


def stand_in(tasks: dict) -> SessionsStandIn:
    return SessionsStandIn()
