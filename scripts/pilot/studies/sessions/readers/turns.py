"""XR-S1, reading (protocol/SESSIONS.md section 2): the record every session format is read into,
whatever agent wrote it. A session is its turns in order (who said what: the user's words, the
assistant's text and tool calls, each tool result linked to its call by the call's id, or by
position where the format has no ids), the compactions the agent itself recorded (as events between
turns, never as turns), and a count of every item the reader left out and why, with the items it did
not understand counted apart.

A tool result carries what the log itself says about it: `error` where the log flags an error
(Claude Code's is_error, Gemini's status error, inspect_ai's error, a non-zero exit code in a
structured field), and `marked` (failed or denied) with the `evidence` that decided it where the log
marks a failure or a refusal (Codex's `exec command rejected by user`, Gemini's cancelled status,
OpenHands' user_rejected, an MCP approval refused, an exit code the tool writes in a fixed place).
The ground-truth rules (studies/sessions/truth.py) read the text and these marks.

A compaction event is one record for every format, so that the sessions study can cut its
checkpoints where the agent compacted and `audit` can score each summary against what it replaced:
    n, after_turn (the event sits after this many turns), at (where in the file), source (the record
    that holds it), summary (its text, None when the log holds none or it cannot be read), readable,
    why_unreadable, summary_at, trigger (auto, manual, threshold ... as the log says; None where it
    does not), tokens_before, tokens_after (None where not recorded), replaces ([first, last] turn
    numbers, 1-based, of the history the summary replaced; None when the replaced history is not in
    the file) and kept_turns (turns the agent kept verbatim beside the summary).
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable

from ....inputs import NOT_JSON  # noqa: F401  (the readers' sentinel for text that is not JSON)


TEXT_PARTS = ("text", "input_text", "output_text")

THINKING_PARTS = ("thinking", "redacted_thinking", "reasoning")

MAX_ID_CHARS = 200                      # a call id longer than this is not an id any agent writes



class NestedTooDeep(ValueError):
    """A tool call's arguments, given as a JSON string, nested deeper than any session format
    nests."""


MAX_ARGUMENT_DEPTH = 48

MAX_FILE_BYTES = 64 * 2 ** 20           # a session file's size (checked before it is read)


class Refused(ValueError):
    """A reader's refusal of the file it reads, in one line: why (said after the file's name) and
    what to do (empty: the list of formats read); read_session_file names the file."""

    def __init__(self, why: str, hint: str = ""):
        super().__init__(why)
        self.why, self.hint = why, hint


def parse_arguments(text: str) -> Any:
    """A tool call's arguments given as a JSON string: the value, or the text under `arguments` when
    it is not JSON; NestedTooDeep when it nests deeper than MAX_ARGUMENT_DEPTH (the file is
    refused)."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except RecursionError:
        raise NestedTooDeep(text[:40]) from None
    except ValueError:
        return {"arguments": text}
    if depth_over(value, MAX_ARGUMENT_DEPTH):
        raise NestedTooDeep(text[:40])
    return value


def depth_over(value: Any, limit: int) -> bool:
    """Whether a JSON value nests deeper than limit."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values() if isinstance(v, (dict, list))]
        elif isinstance(item, list):
            stack += [(v, depth + 1) for v in item if isinstance(v, (dict, list))]
    return False


def as_text(value: Any) -> str:
    """A value as the text a transcript shows: text as written, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


def text_of(content: Any, skip=None) -> str:
    """The text of a message's content: a string, or the text of its text parts (`skip(why)` counts
    the others)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        if content is not None and skip:
            skip("content that is neither text nor a list of parts", unread=True)
        return ""
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and (part.get("type") in TEXT_PARTS
                                         or part.get("type") is None) and \
                isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, dict) and part.get("type") in THINKING_PARTS:
            if skip:
                skip("thinking left out")
        elif skip:
            kind = part.get("type") if isinstance(part, dict) else None
            skip(f"{str(kind)[:30]} part (not text)" if isinstance(kind,
                str) else "a part of no known type",
                 unread=not isinstance(kind, str))
    return "\n".join(t for t in texts if t.strip())


EXIT_CODE_LINE = re.compile(r"^\s*Exit code:?\s*(-?\d+)\s*$", re.IGNORECASE | re.MULTILINE)


# how far into a long result its fixed header or footer lines are looked for
HEAD_CHARS = 2000


def exit_code_in(text: str) -> int | None:
    """The exit code a tool writes on a line of its own (`Exit code: 1`, `Exit Code: 28`) at the
    head or the foot of its output, None when there is none."""
    text = text or ""
    match = EXIT_CODE_LINE.search(text if len(text) <= 2 * HEAD_CHARS else text[:HEAD_CHARS]) or \
        (EXIT_CODE_LINE.search(text[-HEAD_CHARS:]) if len(text) > 2 * HEAD_CHARS else None)
    return int(match.group(1)) if match else None


def json_error(text: str) -> str | None:
    """The error a tool's JSON output reports in a field of its own ({"error": ...}, {"is_error":
    true}, {"success": false}, {"status": "error"}): a tool convention, read from the output text.
    None when there is none."""
    stripped = (text or "").strip()
    if not (stripped.startswith("{") and stripped.endswith("}")) or len(stripped) > 200_000:
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    if value.get("error") not in (None, "", False, {}, []):
        return "a JSON `error` field in the output"
    if (
        value.get("is_error") is True
        or value.get("success") is False
        or value.get("status") in ("error", "failed")
    ):
        return "the output's JSON status"
    return None


def first(items: list, test: Callable, limit: int = 500) -> bool:
    """Whether one of the first `limit` items passes test: what a format's checks look at."""
    return any(test(item) for item in items[:limit])


def one_object_a_line(values: list) -> tuple[bool, str]:
    """The check a JSONL format of objects opens with (values: the lines' values)."""
    return bool(values) and first(values, lambda v: isinstance(v, dict)), "JSON objects, one a line"


def key_of(value: Any) -> Any:
    """A value a reader may look up or compare by (a text, a whole number, None); anything else (a
    list, an object) is None, so that a malformed field never stops the reading."""
    return value if value is None or isinstance(value, (str, int, float)) else None


def clean_id(value: Any) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS else None


class SessionBuilder:
    """Turns, tool links and compaction events from any format, counting what is left out and
    why."""

    def __init__(self, fmt: str, unit: str):
        self.format, self.unit = fmt, unit
        self.turns: list[dict] = []
        self.compactions: list[dict] = []
        self.read, self.joined = 0, 0
        self.skipped: dict[str, int] = {}
        self.unread: dict[str, int] = {}        # the reasons of items the reader did not understand
        self.calls: dict[str, dict] = {}        # tool call id -> the call
        self.answered: set[int] = set()         # id() of the calls that have a result
        # id() of the calls this builder made (a dict from the file is not one)
        self.made: set[int] = set()
        self.call_count = 0
        self.orphans = 0                        # results that name a call the file does not hold
        # the last turn is an assistant turn that may take more items
        self.joinable = False
        # "sub-agent" for a file that holds only a side conversation
        self.kind: str | None = None
        # which session of a file that holds several (a sample, a date)
        self.label: str | None = None
        self.notes: list[str] = []

    # --- what is left out ---
    def skip(self, why: str, n: int = 1, unread: bool = False) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + n
        if unread:
            self.unread[why] = self.unread.get(why, 0) + n

    # --- turns ---
    def user(self, text: str, at: Any) -> None:
        if not text or not text.strip():
            return
        self.turns.append({"role": "user", "text": text.strip(), "at": at})
        self.joinable = False

    def call(self, call_id: Any, name: Any, arguments: Any, at: Any) -> dict:
        """A tool call (not yet in a turn): its id, the tool's name and its arguments (a JSON string
        is parsed)."""
        if isinstance(arguments, str):
            arguments = parse_arguments(arguments)
        call = {"id": clean_id(call_id), "name": name if isinstance(name,
            str) and name.strip() else "tool",
                "input": arguments, "at": at}
        if call["id"] is not None:
            self.calls[call["id"]] = call
        self.call_count += 1
        self.made.add(id(call))
        return call

    def assistant(self, text: str, calls: list[dict], at: Any, message_id: str | None = None,
                  join: bool = False) -> None:
        """One model reply; join: it continues the assistant turn before it when nothing came
        between (a reply written as several items); message_id: it continues the turn with the same
        message id (a reply split over several lines)."""
        text = (text or "").strip()
        if not text and not calls:
            return
        last = self.turns[-1] if self.turns else None
        same_message = (message_id and last and last["role"]
                        == "assistant" and last.get("message_id") == message_id)
        if same_message or (join and self.joinable and last and last["role"] == "assistant"):
            last["text"] = "\n\n".join(filter(None, [last["text"], text]))
            last["calls"] += calls
            self.joined += 1
            return
        turn = {"role": "assistant", "text": text, "calls": list(calls), "at": at}
        if message_id:
            turn["message_id"] = message_id
        self.turns.append(turn)
        self.joinable = True

    def result(self, call: dict | str | None, text: str, at: Any, *, name: str | None = None,
               error: bool = False,
               marked: str | None = None, evidence: str | None = None,
               unasked: bool = False) -> None:
        """A tool result: `call` is the call it answers (or its id); marked: failed or denied where
        the log says so, with the evidence; unasked: input that answers no call (another agent's
        message), not counted as a result whose call is missing."""
        if not (isinstance(call, dict) and id(call) in self.made):
            found = self.calls.get(call) if isinstance(call, str) else None
            if found is None and not unasked:
                self.orphans += 1
            call = found
        if call is not None:
            self.answered.add(id(call))
        turn = {"role": "tool", "tool": name or (call["name"] if call else "tool"), "call": call,
                "text": text or "", "error": bool(error), "at": at}
        if marked:
            turn["marked"], turn["evidence"] = marked, evidence
        self.turns.append(turn)
        self.joinable = False

    def pending(self, name: str | None = None) -> dict | None:
        """The oldest call of the last assistant turn (of this tool, when named) that has no result
        yet: how formats without ids link a result to its call."""
        for turn in reversed(self.turns):
            if turn["role"] == "assistant":
                return next((c for c in turn["calls"] if id(c) not in self.answered and
                             (name is None or c["name"] == name)), None)
        return None

    # --- the agent's own compactions ---
    def compaction(self, at: Any, summary: str | None, *, source: str,
                   why_unreadable: str | None = None,
                   summary_at: Any = None, trigger: str | None = None, tokens_before: Any = None,
                   tokens_after: Any = None, replaces: list | None | str = "since-last",
                   kept_turns: list[int] = ()) -> dict:
        """A compaction the log records, placed after the turns read so far. replaces: the turns it
        replaced (default: every turn since the previous compaction, or the start)."""
        after = len(self.turns)
        if replaces == "since-last":
            first = self.compactions[-1]["after_turn"] + 1 if self.compactions else 1
            replaces = [first, after] if after >= first else None
        summary = summary.strip() if isinstance(summary, str) and summary.strip() else None
        event = {"n": len(self.compactions) + 1, "after_turn": after, "at": at, "source": source,
                 "summary": summary, "readable": summary is not None,
                 "why_unreadable": None if summary is not None else why_unreadable
                 or "the log holds no summary text",
                 "summary_at": summary_at if summary is not None else None, "trigger": trigger,
                 "tokens_before": count_or_none(tokens_before),
                 "tokens_after": count_or_none(tokens_after),
                 "replaces": replaces, "kept_turns": sorted(set(kept_turns))}
        self.compactions.append(event)
        return event

    def summary_for_last(self, summary: str, at: Any, source: str) -> bool:
        """Give the last compaction, recorded without its text, the summary that follows it; False
        when there is no such compaction."""
        last = self.compactions[-1] if self.compactions else None
        if last is None or last["summary"] is not None or last["after_turn"] != len(self.turns) or \
                not summary.strip():
            return False
        last.update(summary=summary.strip(), readable=True, why_unreadable=None, summary_at=at,
                    source=f"{last['source']} + {source}")
        return True

    # --- the record ---
    def session(self) -> dict:
        unanswered = sum(1 for t in self.turns if t["role"] == "assistant" for c in t["calls"]
                         if id(c) not in self.answered)
        return {"format": self.format, "turns": self.turns, "compactions": self.compactions,
                "kind": self.kind,
                "label": self.label, "notes": self.notes,
                "read": {"unit": self.unit, "read": self.read,
                         "skipped": dict(sorted(self.skipped.items())),
                         "joined": self.joined, "not_understood": dict(sorted(self.unread.items())),
                         "calls_without_result": unanswered, "results_without_call": self.orphans,
                         "agent_compactions": len(self.compactions)}}


def count_or_none(value: Any) -> int | None:
    return (value if isinstance(value, int) and not isinstance(value,
                                                               bool) and 0 <= value <= 100_000_000
            else None)
