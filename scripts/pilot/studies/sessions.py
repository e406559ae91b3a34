"""XR-S1, design (protocol/SESSIONS.md sections 2 to 5): the sessions a user brings, rendered as the compactor sees
them and cut at turn boundaries into segments; the ground truth each holds; the user's probes; the regimes and
their prompts; how a cell's calls are planned and each call's messages built; the study's options; and the
stand-in model `demo --study sessions` runs on. Everything in this study is EXPLORATORY.
"""
from __future__ import annotations

import bisect
import dataclasses
import json
import os
import re
import zlib
from pathlib import Path
from typing import Any

from ..bank import ProbeKind, register_probe_kind
from ..inputs import TaskSetError, parse_json
from ..prompts import COMPACTION_FRAME, PROMPTS as BUILT_IN_PROMPTS, REGIMES as BUILT_IN_REGIMES, CallText
from ..records import (CallSpec, Option, PilotError, REPO_ROOT, Regime, canonical_json, display_path, sha256_bytes,
    sha256_text)
from .sessions_formats import check_tree, read_file_text, read_session_file, refuse, session_files, MAX_TOTAL_BYTES
from .sessions_truth import (VALUE_KINDS, extract_values, ground_truth, is_close, is_standing_instruction,
    normalize_value, split_sentences, step_outcome)


PROTOCOL_ID = "XR-S1"

STUDY_KEY = "sessions"

PROTOCOL_PATH = REPO_ROOT / "protocol" / "SESSIONS.md"

TASKS_PATH = REPO_ROOT / "tasks" / "sessions" / "logs"

READER_VERSION = "xrs1-read-1"          # in the hashed listing: another reader reads another task set

# The committed example sessions, each file's name and sha256 (LF line endings): the study's pinned task set.
PINNED_SESSIONS = [{"file": name, "sha256": sha} for name, sha in (
    ("1-coding-billing.agent.jsonl", "7c913e3177c0c96897009a89d844dc8be8b8c2cae41b9648c66ed611bc0cef59"),
    ("2-support-refund.chat.json", "b50cae8b09db0ba392f6cc5eb5e63129c858dd8cd0aae4abfbcc85fcb87baa0a"),
    ("3-research-survey.messages.jsonl", "4701f614f04470a870b9e2f7346cd756fdb696975c307bedfbccd4e9f6395e74"),
    ("4-coding-proxy.agent.jsonl", "b04be8feadf15b5fa6e2b28bf0663f4c63ffc444a9b37ea4ee16bc51a1dbd31f"),
    ("5-support-plan.chat.json", "f5c7e611e0ac2f36bb2db674528c110c6a89fcbc98b78fd3aaa2d1681b84d585"),
    ("6-research-bench.messages.jsonl", "3f99bfcb043bcad8cff8ed1aa7124cd14c673f7af25bc0cb49da8135794093f4"))]

N_EXAMPLES = len(PINNED_SESSIONS)       # the example sessions `demo --study sessions` runs


def listing_bytes(sessions: list[dict], probes: dict | None) -> bytes:
    """What a task set's sha256 is taken of: the reader's version, each session's name and sha256, the probes'."""
    return canonical_json({"reader": READER_VERSION, "sessions": sessions, "probes": probes}).encode("ascii")


PINNED_TASKS_SHA256 = sha256_bytes(listing_bytes(PINNED_SESSIONS, None))   # the examples with no probes file

DEFAULT_SEGMENTS = 4

MAX_SEGMENTS = 200

MAX_TURN_CHARS = 4000                   # a longer turn keeps its head and tail around a marker

MAX_SEGMENT_CHARS = 5000                # two segments (Recent-2) and an answer fit a call's 4,096-token window

MAX_PROBES = 1000

CUT_MARKER = "\n[... the middle of this output is left out by the reader ...]\n"

# --- Prompts and regimes -----------------------------------------------------------------------------------------
# R1 is XR-001's prose prompt unchanged. R2 and R3 keep XR-001's frame and section names, but their value lines take
# any exact value as written (a session's values are paths, digests and amounts, not integers), the typed block
# gains constraints and status sections, and their answers (like every answer here) ask for the value exactly.
SESSION_FORMATS = {
    "typed": ("Format: write the state as a typed state block with these four sections in this order. values: one "
              "line per exact value, of the form name = value, the value copied character for character (numbers, "
              "amounts, dates, times, versions, hashes, ids, file paths, URLs, e-mail addresses). constraints: one "
              "line per standing instruction the user has given, in the user's words. status: one line per step, "
              "tool call or request that was tried, with its outcome (done, failed, denied, pending). notes: one line "
              "of free text."),
    "sections": ("Format: write the state under six headings, each on a line of its own followed by its content: "
                 "Goal, Constraints, Progress, Decisions, Next steps, Critical values. Under Critical values write one "
                 "line per exact value, of the form name = value, the value copied character for character."),
}

EXACT_RULE = ("Reply with a single line of the form ANSWER: <value>, the value copied exactly as the session wrote "
              "it, and nothing else: no working, no explanation.")

PROMPTS = {
    "compact_typed": COMPACTION_FRAME.replace("<<FORMAT>>", SESSION_FORMATS["typed"]),
    "compact_sections": COMPACTION_FRAME.replace("<<FORMAT>>", SESSION_FORMATS["sections"]),
    "answer_state": ("Below is the saved state of a working session; the original transcript is gone.\n\n{context}\n\n"
                     "Question: {question}\nAnswer from the saved state above. " + EXACT_RULE),
    "answer_recent": ("Below are the most recent parts of a working session; everything before them is gone.\n\n"
                      "{context}\n\nQuestion: {question}\nAnswer from the parts above. " + EXACT_RULE),
    "user": "USER: {text}",
    "assistant": "ASSISTANT: {text}",
    "call": "ASSISTANT CALLS {name}:\n{arguments}",
    "result": "TOOL RESULT ({name}{error}): {text}",
    "result_error": ", marked as an error",
}

REGIMES = {
    "R1": dataclasses.replace(BUILT_IN_REGIMES["R1"], description="prose summary, cascaded (XR-001's R1 prompt)",
                              answer_template=PROMPTS["answer_state"], exploratory=True),
    "R2": dataclasses.replace(BUILT_IN_REGIMES["R2"], description="typed state block (values, constraints, status, "
                              "notes), cascaded", compaction_template=PROMPTS["compact_typed"],
                              answer_template=PROMPTS["answer_state"], exploratory=True),
    "R3": dataclasses.replace(BUILT_IN_REGIMES["R3"], description="sectioned summary (goal, constraints, progress, "
                              "decisions, next steps, critical values), cascaded",
                              compaction_template=PROMPTS["compact_sections"],
                              answer_template=PROMPTS["answer_state"]),
    "K1": dataclasses.replace(BUILT_IN_REGIMES["K1"], description="Recent-1: the last segment verbatim, no compaction call",
                              answer_template=PROMPTS["answer_recent"]),
    "K2": dataclasses.replace(BUILT_IN_REGIMES["K2"], description="Recent-2: the last two segments verbatim, no compaction "
                              "call", answer_template=PROMPTS["answer_recent"]),
}

DEFAULT_REGIMES = ("R1", "R2", "R3", "K1", "K2")


def prompts_sha256() -> str:
    return sha256_text(canonical_json({"xr001": BUILT_IN_PROMPTS, "sessions": PROMPTS}))


def user_regimes(extra: list[Regime], names: list[str]) -> tuple[list[Regime], list[str]]:
    """A regime file's regimes as this study runs them: a default answer template (XR-001's, which asks for an
    integer) becomes this study's, which asks for the value exactly; a template the user wrote is kept."""
    defaults = {BUILT_IN_PROMPTS["answer_state"]: PROMPTS["answer_state"],
                BUILT_IN_PROMPTS["answer_recent"]: PROMPTS["answer_recent"]}
    return [dataclasses.replace(r, answer_template=defaults.get(r.answer_template, r.answer_template))
            for r in extra], names


# --- The exact-answer probe kind ---------------------------------------------------------------------------------
EXACT_CLASSES = ("correct", "reformatted", "changed", "other_wrong", "omission")

ANSWER_LINE = re.compile(r"^[ \t]*ANSWER[ \t]*:[ \t]*(.*?)[ \t]*$", re.IGNORECASE | re.MULTILINE)

LENIENT_ANSWER_LINE = re.compile(r"ANSWER[*_`\s]*:[*_`\s]*(.+)", re.IGNORECASE)


def parse_exact(reply: str) -> str | None:
    """The text after the last `ANSWER:` that opens a line, spaces trimmed; None (an omission) when there is none."""
    found = [a for a in ANSWER_LINE.findall(reply or "") if a]
    return found[-1] if found else None


def parse_exact_lenient(reply: str) -> str | None:
    """Diagnostic only: an ANSWER anywhere, with markdown marks, quotes and a final full stop taken off."""
    found = LENIENT_ANSWER_LINE.findall(reply or "")
    return found[-1].strip().strip("*_`\"'").rstrip(".").strip() or None if found else None


def classify_exact(answer: str | None, question: dict, conflation: list) -> str:
    """correct only for the exact text; reformatted for the same value written otherwise; changed for a close one
    (is_close); other_wrong; omission."""
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


register_probe_kind(ProbeKind("exact", EXACT_RULE, parse_exact, parse_exact_lenient, classify_exact, EXACT_CLASSES,
                              answer_type="text"))


# --- A session as the compactor sees it --------------------------------------------------------------------------
def cut_long(text: str, cap: int = MAX_TURN_CHARS) -> str:
    """text cut to at most cap characters: its first two thirds and its end around a marker (a plain cut when the
    cap is too small for the marker)."""
    if len(text) <= cap:
        return text
    if cap < 3 * len(CUT_MARKER):
        return text[:cap - 3] + "..."
    head = cap * 2 // 3
    return text[:head] + CUT_MARKER + text[-(cap - head - len(CUT_MARKER)):]


def render_arguments(arguments: Any) -> str:
    """A tool call's arguments, one `name: value` line each (text as written, anything else as JSON)."""
    if not isinstance(arguments, dict):
        return "  " + json.dumps(arguments, ensure_ascii=False)
    lines = []
    for name, value in arguments.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines.append(f"  {name}: " + shown.replace("\n", "\n    "))
    return "\n".join(lines) or "  (no arguments)"


def turn_parts(turn: dict) -> list[tuple[str, str]]:
    """A turn as (source, text) parts, the text as the compactor sees it: user, assistant, tool call, tool result;
    a turn longer than MAX_TURN_CHARS in all has each of its parts cut to an equal share of it."""
    if turn["role"] == "user":
        parts = [("user", PROMPTS["user"].format(text=turn["text"]))]
    elif turn["role"] == "assistant":
        parts = [("assistant", PROMPTS["assistant"].format(text=turn["text"]))] if turn["text"] else []
        parts += [("tool call", PROMPTS["call"].format(name=call["name"],
                                                              arguments=render_arguments(call["input"])))
                  for call in turn["calls"]]
    else:
        error = PROMPTS["result_error"] if turn["error"] else ""
        parts = [("tool result", PROMPTS["result"].format(name=turn["tool"], error=error, text=turn["text"]))]
    if sum(len(text) + 1 for _, text in parts) <= MAX_TURN_CHARS:
        return parts
    share = MAX_TURN_CHARS // len(parts) - 1
    return [(source, cut_long(text, share)) for source, text in parts]


def cut_points(sizes: list[int], n: int) -> list[int]:
    """Where each of n segments starts (turn indices): the turn boundary nearest each 1/n of the session's
    characters, every segment at least one turn."""
    n = min(n, len(sizes))
    total, cumulative = sum(sizes), [0]
    for size in sizes:
        cumulative.append(cumulative[-1] + size)
    starts = [0]
    for k in range(1, n):
        target = k * total / n
        low, high = starts[-1] + 1, len(sizes) - (n - k)
        near = bisect.bisect_left(cumulative, target)
        candidates = {min(max(b, low), high) for b in (near - 1, near)}
        starts.append(min(candidates, key=lambda b: (abs(cumulative[b] - target), b)))
    return starts


def segment_session(rendered: list[str], n: int) -> list[dict]:
    starts = cut_points([len(t) + 2 for t in rendered], n) + [len(rendered)]
    return [{"index": k + 1, "turns": [starts[k], starts[k + 1]],
             "text": "\n\n".join(rendered[starts[k]:starts[k + 1]])} for k in range(len(starts) - 1)]


def fewest_segments(rendered: list[str]) -> int | None:
    """The smallest segment count at which no segment is longer than MAX_SEGMENT_CHARS (None: none up to the max)."""
    for n in range(1, min(MAX_SEGMENTS, len(rendered)) + 1):
        if all(len(s["text"]) <= MAX_SEGMENT_CHARS for s in segment_session(rendered, n)):
            return n
    return None


def build_episode(index: int, session: dict, segments: int, questions: list[dict]) -> dict:
    """One session as a task: its rendered turns cut into segments, its values, instructions, failed steps and
    probes, and what the reader read of its file."""
    parts = [turn_parts(turn) for turn in session["turns"]]
    rendered = ["\n".join(text for _, text in turn) for turn in parts]
    cut = segment_session(rendered, segments)
    segment_of = [seg["index"] for seg in cut for _ in range(*seg["turns"])]
    return {"episode": index, "file": session["file"], "format": session["format"], "sha256": session["sha256"],
            "read": {**session["read"], "turns": len(rendered), "cut_turns": sum(CUT_MARKER in r for r in rendered),
                     "segments_asked": segments},
            "segments": cut, **ground_truth(session["turns"], segment_of, turn_parts), "questions": questions,
            "conflation_set": [],
            "rendered": rendered}


# --- The probes file ---------------------------------------------------------------------------------------------
PROBE_FIELDS = ("session", "question", "answer", "kind")


def read_probe_file(path: Path, names: list[str]) -> tuple[bytes, dict[str, list[dict]]]:
    """--probes FILE: a JSON list (or {"probes": [...]}) of {session, question, answer, kind}; session may be left
    out when one session is read; kind (a value kind) is inferred from the answer when left out."""
    shown = display_path(path)
    if path.is_symlink() or not path.is_file():
        raise TaskSetError(f"no probes file at {shown} (or it is a link, a folder or a device); give a JSON file of "
                           f"probes, see tasks/sessions/probes.json")
    data, text = read_file_text(path, shown)
    entries = parse_json(text, shown, "a probes file", "give a JSON list of probes, see tasks/sessions/probes.json",
                         error=TaskSetError)
    check_tree(entries, shown)
    entries = entries.get("probes") if isinstance(entries, dict) else entries
    if not isinstance(entries, list) or not entries or len(entries) > MAX_PROBES:
        raise TaskSetError(f"{shown} must hold a list of 1 to {MAX_PROBES} probes (or an object with a `probes` list)")
    by_session: dict[str, list[dict]] = {}
    for number, entry in enumerate(entries, 1):
        where = f"{shown} probe {number}"
        if not isinstance(entry, dict) or set(entry) - set(PROBE_FIELDS):
            raise TaskSetError(f"{where} must be an object with the fields {', '.join(PROBE_FIELDS)} and no others")
        question, answer = entry.get("question"), entry.get("answer")
        if isinstance(answer, (int, float)) and not isinstance(answer, bool):
            answer = str(answer)
        if not isinstance(question, str) or not question.strip() or "\n" in question or len(question) > 1000:
            raise TaskSetError(f"{where}: `question` must be one line of text (at most 1,000 characters)")
        if not isinstance(answer, str) or not answer.strip() or "\n" in answer or len(answer) > 300:
            raise TaskSetError(f"{where}: `answer` must be the exact expected value, one line of at most 300 "
                               f"characters")
        session = entry.get("session")
        if session is None and len(names) == 1:
            session = names[0]
        matches = [n for n in names if session in (n, Path(n).stem)] if isinstance(session, str) else []
        if len(matches) != 1:
            raise TaskSetError(f"{where}: `session` must name one of the sessions read ({', '.join(names[:8])}" +
                               (" ..." if len(names) > 8 else "") + ")")
        found = [k for k, v, _, _ in extract_values(answer.strip()) if v == answer.strip()]
        kind = entry.get("kind", found[0] if found else "identifier")
        if kind not in VALUE_KINDS:
            raise TaskSetError(f"{where}: `kind` must be one of {', '.join(VALUE_KINDS)}")
        questions = by_session.setdefault(matches[0], [])
        questions.append({"id": len(questions) + 1, "kind": "exact", "type": kind, "prompt": question.strip(),
                          "truth": answer.strip()})
    return data, by_session


# --- Reading the sessions (Study.read_source) ----------------------------------------------------------------------
def resolve_option_path(text: str) -> Path:
    path = Path(text)
    return path if path.is_absolute() else REPO_ROOT / path


READ_MEMO: dict = {}                    # the last reading, by path, options and each file's size and time


def read_sessions(path: Path, segments: int = DEFAULT_SEGMENTS, probes: str | None = None) -> tuple[bytes, dict]:
    """Every session under path read, rendered, cut into segments and given its ground truth, before any call; the
    bytes hashed are the listing of each file's name and sha256 (and the probes file's). A command reads its task
    set several times (to name its folder, to check the lock, to plan): an unchanged reading is done once."""
    files, left_out = session_files(path)
    probe_path = resolve_option_path(probes) if probes else None
    stamps = [(name, file.stat().st_size, file.stat().st_mtime_ns) for file, name in files]
    if probe_path is not None and probe_path.is_file():
        stamps.append((str(probe_path), probe_path.stat().st_size, probe_path.stat().st_mtime_ns))
    key = canonical_json([str(path.resolve()), segments, probes, stamps])
    if key not in READ_MEMO:
        READ_MEMO.clear()
        READ_MEMO[key] = read_sessions_now(path, files, left_out, segments, probe_path)
    return READ_MEMO[key]


def read_sessions_now(path: Path, files: list, left_out: dict, segments: int,
                      probe_path: Path | None) -> tuple[bytes, dict]:
    total = sum(p.stat().st_size for p, _ in files)
    if total > MAX_TOTAL_BYTES:
        raise refuse(str(path), f"holds {total // 2 ** 20} MiB of sessions, more than the {MAX_TOTAL_BYTES // 2 ** 20} "
                     f"MiB one run reads", "run the sessions in several folders")
    sessions = [read_session_file(p, name) for p, name in files]
    names = [s["file"] for s in sessions]
    probe_listing, by_session = None, {}
    if probe_path is not None:
        data, by_session = read_probe_file(probe_path, names)
        probe_listing = {"file": display_path(probe_path), "sha256": sha256_bytes(data.replace(b"\r\n", b"\n"))}
    episodes = [build_episode(i, s, segments, by_session.get(s["file"], [])) for i, s in enumerate(sessions)]
    too_long = [(e, seg) for e in episodes for seg in e["segments"] if len(seg["text"]) > MAX_SEGMENT_CHARS]
    if too_long:
        episode, seg = too_long[0]
        needed = [fewest_segments(e["rendered"]) for e in episodes]
        advice = (f"cut the sessions finer with --segments {max(needed)}" if None not in needed else
                  f"no segment count up to {MAX_SEGMENTS} fits; split the longest sessions into several files")
        raise TaskSetError(f"{episode['file']}: segment {seg['index']} of {len(episode['segments'])} is "
                           f"{len(seg['text']):,} characters, more than the {MAX_SEGMENT_CHARS:,} that leave room in a "
                           f"call's 4,096-token window; {advice}")
    listing = [{"file": s["file"], "sha256": s["sha256"]} for s in sessions]
    for episode in episodes:
        del episode["rendered"]
    tasks = {"study": STUDY_KEY, "protocol": PROTOCOL_ID, "n_episodes": len(episodes), "segments": segments,
             "left_out": left_out, "listing": listing, "probes": probe_listing, "episodes": episodes}
    return listing_bytes(listing, probe_listing), tasks


def load_task_set(path: Path, raw: bytes, tasks: dict, sha: str, in_repo: bool) -> dict:
    """The task set: `pinned` for the committed example sessions (their probes file may be added), `external` for
    the user's; the committed examples, changed, are refused."""
    kind = "pinned" if tasks["listing"] == PINNED_SESSIONS else "external"
    if in_repo and kind != "pinned":
        shown = display_path(path)
        raise PilotError(f"{shown} is not the committed example sessions; restore them with `git checkout -- {shown}`, "
                         f"or give your own with --sessions PATH")
    return {"tasks": tasks, "sha256": sha, "kind": kind, "path": display_path(path)}


def describe_sessions(tasks: dict) -> list[str]:
    """What `plan` prints about the sessions read: per file its format, what was read and left out, and its truth."""
    lines = [f"sessions read: {len(tasks['episodes'])} file(s), each cut into segments at turn boundaries "
             f"(--segments {tasks['segments']})"]
    for name, why in tasks["left_out"].items():
        lines.append(f"  {name}: left out ({why})")
    for e in tasks["episodes"]:
        read = e["read"]
        skipped = "; ".join(f"{n} {why}" for why, n in read["skipped"].items()) or "none"
        lines.append(f"  {e['file']}: {e['format']}, {read['read']} {read['unit']} read, skipped: {skipped}; "
                     f"{read['turns']} turns in {len(e['segments'])} segments; {len(e['values'])} exact values, "
                     f"{sum(not i['revoked_turn'] for i in e['instructions'])} standing instructions in force" +
                     (f" ({sum(bool(i['revoked_turn']) for i in e['instructions'])} withdrawn or corrected), "
                      if any(i["revoked_turn"] for i in e["instructions"]) else ", ") +
                     f"{sum(s['status'] != 'done' for s in e['steps'])} failed or denied steps, "
                     f"{len(e['questions'])} probes")
    return lines


# --- The study's options and the cell's calls --------------------------------------------------------------------
OPTIONS = (
    Option("--sessions", {"metavar": "PATH",
                          "help": "sessions study: your agent's transcripts, a file or a folder of .json/.jsonl files "
                                  "(default: the examples in tasks/sessions/logs/)"}),
    Option("--segments", {"type": int, "metavar": "N",
                          "help": f"sessions study: segments each session is cut into at turn boundaries, one "
                                  f"compaction after each (default {DEFAULT_SEGMENTS})"}),
    Option("--probes", {"metavar": "FILE",
                        "help": "sessions study: your questions with their exact answers (see "
                                "tasks/sessions/probes.json); without it no probe is asked"}),
)


def read_options(given: dict) -> dict:
    """--segments N (when not the default) and --probes FILE (as the repository shows its path) for the lock."""
    options = {}
    segments = given.get("segments")
    if segments is not None:
        if not 1 <= segments <= MAX_SEGMENTS:
            raise PilotError(f"--segments takes a whole number from 1 to {MAX_SEGMENTS}")
        if segments != DEFAULT_SEGMENTS:
            options["segments"] = segments
    if given.get("probes"):
        options["probes"] = display_path(Path(os.path.abspath(given["probes"])))     # a link stays a link, refused
    return options


def recent_context(episode: dict, keep_last: int) -> str:
    """What a Recent-k regime leaves: its last k segments verbatim."""
    return "\n\n".join(BUILT_IN_PROMPTS["segment_heading"].format(index=seg["index"]) + "\n" + seg["text"]
                       for seg in episode["segments"][-keep_last:])


def call_text(regime: Regime, episode: dict, spec: CallSpec, state: str, registry: str = "", **options) -> CallText:
    """A compaction takes the segment; a probe is asked over the final state, or the last segments of a Recent-k
    regime."""
    if spec.is_compaction:
        return CallText(segment=episode["segments"][spec.segment - 1]["text"])
    question = episode["questions"][spec.question_id - 1]
    context = state if regime.compacts else recent_context(episode, regime.keep_last or len(episode["segments"]))
    return CallText(context=context, question=question["prompt"])


def generate_file(options: dict) -> tuple[bytes, str]:
    raise PilotError("the sessions study reads the sessions you bring (--sessions PATH) and has no task file to "
                     "generate; see tasks/sessions/README.md")


# --- The demo's stand-in model -----------------------------------------------------------------------------------
STAND_IN_SEED = 22001

STAND_IN_FORGETS, STAND_IN_ALTERS, STAND_IN_UPGRADES = 0.35, 0.12, 0.5   # prose states only

STAND_IN_STATE_CHARS = 1000             # a state it writes stays under its 256-token cap (1,024 characters)

KIND_WORDS = {"path": ("file", "path", "folder"), "digest": ("commit", "hash", "digest", "sha"),
              "version": ("version", "release"), "amount": ("amount", "refund", "price", "cost", "charge", "total"),
              "date": ("date", "day"), "time": ("time", "hour"), "url": ("url", "link", "page", "address"),
              "email": ("e-mail", "email", "mail"), "identifier": ("id", "order", "ticket", "number", "code"),
              "number": ("how many", "count", "figure", "rate", "size")}


def stand_in_share(text: str, share: float) -> bool:
    return zlib.crc32(f"{STAND_IN_SEED}:{text}".encode("utf-8")) < share * 2 ** 32


class SessionsStandIn:
    """The stand-in `demo --study sessions` runs on: it writes states and answers from what its prompt holds,
    deterministically. A typed block or sectioned summary keeps every value it reads with a few words of where it
    came from (the newest first when its cap is near), every standing instruction and every failed step; a prose
    summary forgets about a third of the values, alters a digit in some, leaves the instructions out and reports
    half of the failed steps as done, so that the demo shows each kind of loss."""

    def reply(self, prompt: str) -> str:
        if "\nQuestion: " in prompt:
            return self.answer(prompt)
        return self.compact(prompt)

    @staticmethod
    def new_facts(segment: str) -> tuple[list, list, list]:
        """(value, words) of each value in a segment, the user's standing instructions, and the failed steps."""
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
                [f"- step: {x} failed" for x in dict.fromkeys(steps)] + ["values:" if "typed" in head else
                                                                         "Critical values"]
            lines = header + [f"- {value} | {words}" for value, words in reversed(kept.items())]
            text = "\n".join(lines)
            return text[:STAND_IN_STATE_CHARS].rsplit("\n", 1)[0] if len(text) > STAND_IN_STATE_CHARS else text
        old = re.findall(r"Noted (.+?) \((.*?)\)\.", previous)
        steps = re.findall(r"The (\w+ \(.*?\)) step (?:failed|was completed)\.", previous) + steps
        said = []
        for value, words in dict(old + facts).items():
            if stand_in_share(value, STAND_IN_FORGETS):
                continue
            if stand_in_share("alter:" + value, STAND_IN_ALTERS) and value[-1].isdigit():
                value = value[:-1] + str((int(value[-1]) + 1) % 10)
            said.append(f"Noted {value} ({words}).")
        outcomes = [f"The {x} step was completed." if stand_in_share(x, STAND_IN_UPGRADES) else f"The {x} step failed."
                    for x in dict.fromkeys(steps)]
        return " ".join(["The session so far."] + outcomes + said)[:STAND_IN_STATE_CHARS]

    def answer(self, prompt: str) -> str:
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

