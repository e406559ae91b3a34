"""XR-S1, the values the agent found or worked out that the next agent needed (issue 40, point 1;
protocol/SESSIONS.md, the amendment of 2026-12-06 (16)): a value the conversation turned on is
given by the user, written by the agent in its own text, or passed to a later tool call; never a
value seen only in a tool's output. These rules take the agent's part of it, from what agents do:

    agent_value_items(turns) -> value items: a value that names one thing (a ticket's or pull
        request's id or number, an address with an id, a version, a long number; not a digest,
        which agents pass on as they walk a history) written in the agent's own words outside code
        and then passed to one of its later tool calls (it found the value and used it), and such a
        value, a digest or a measurement (a number with its unit, a percentage) in the agent's last
        words before the boundary (its latest result), unless those words list more than
        MAX_STATED of them (a listing, not a result).
    address_kept(key, summary), number_kept(key, summary) -> whether an address is kept by the
        id it names, whether a pull request's or issue's number is kept in any spelling.
    changed_in(item, summary_values) -> the summary's value that reads as the item's with a small
        change (a digit altered, a digest cut otherwise) and that the agent's words never gave:
        the value misstated.

Pure functions of the readers' record: no model, no file, no clock.
"""
from __future__ import annotations

import json
import re

from ...rules.spellings import is_close, normalize_value
from ...rules.values import Value, extract_values

# the kinds of value that name one thing wherever they stand
NAMING_KINDS = frozenset({"digest", "url", "email", "version"})

# an identifier that names one thing: letters and digits together, or a number of its own (#165)
NAMED_ID = re.compile(r"^(?=.*[A-Za-z])(?=.*\d)[\w.:/@#-]{4,}$|^#\d+$")

# an identifier that is a word with a number (`30-minute`, `3-gram`, `1-based`) or a range of
# lines (`126-133`): no value of its own
COMPOUND = re.compile(r"^\d+-[A-Za-z]+$|^\d+(?:-\d+)+$")

# a number that only an id is as long as (a review comment's, a thread's in a large tracker)
ID_DIGITS = 9

# the kinds of value an agent passes on while it walks through them (the commits and objects of a
# history it reads): a digest counts where the agent states it last, not where it passes it on
WALKED_KINDS = frozenset({"digest"})

# a measurement: a number with its unit or a percentage (`1489 bytes`, `66.7%`, `2.5k`)
MEASURED = re.compile(r"\d(?:\s?%|\s?[A-Za-z]+)$")

# the agent's words that list more values than this are a listing, not its result
MAX_STATED = 5

# a fenced block of code in the agent's text: code shown, not a value stated
FENCED = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)

# a value given as an approximation (`50k+ lines`, `~300 ms`, `about 40`): no exact value
APPROXIMATE_BEFORE = re.compile(r"(?:[~≈]|\b(?:about|around|approx\w*|roughly|nearly|over|"
                                r"almost|some|under)\s+)$", re.IGNORECASE)
APPROXIMATE_AFTER = re.compile(r"^\+")

# the words either side of a value that stand with it as its source (up to the next value)
SOURCE_CHARS = 100


def names_one_thing(value: Value) -> bool:
    """Whether a value names one thing: an id, a digest, an address with an id in its path, a
    version, a long number; not a code name (snake_case, CONSTANT_NAME), a compound word or a
    range, a regex's class, a page of documentation."""
    text = value.text
    if value.kind == "url":              # an issue's or a pull request's address, not a page's
        return any(NAMED_ID.match(p) or p.isdigit() for p in re.split(r"[/?#=&]", text)[3:])
    if value.kind in NAMING_KINDS:
        return True
    if value.kind == "number":
        return text.isdigit() and len(text) >= ID_DIGITS
    if value.kind != "identifier" or "_" in text or COMPOUND.match(text):
        return False
    pieces = re.split(r"[-.]", text.lstrip("#"))
    return bool(NAMED_ID.match(text)) and all(len(p) > 1 or p.isdigit() for p in pieces)


def is_measurement(value: Value) -> bool:
    return value.kind == "number" and bool(MEASURED.search(value.text))


def prose_values(text: str) -> list[Value]:
    """The exact values of the agent's own words: code blocks left out (blanked, so that every
    other value keeps its place), approximations too."""
    text = text or ""
    return [v for v in extract_values(FENCED.sub(lambda m: " " * len(m.group(0)), text))
            if not APPROXIMATE_BEFORE.search(text[max(0, v.start - 12):v.start])
            and not APPROXIMATE_AFTER.match(text[v.end:v.end + 1])]


# the arguments of an edit or write call that hold a file's text: code written, no value used
CONTENT_FIELDS = frozenset({"content", "new_string", "old_string", "edits", "file_text",
                            "new_str", "old_str", "new_source", "diff", "patch", "code"})


def call_inputs(turn: dict) -> str:
    """What the agent passed to its tool calls in one turn as arguments, as text (a file's text
    that an edit or write call writes left out)."""
    out = []
    for call in turn.get("calls") or []:
        args = call.get("input") if isinstance(call, dict) else None
        if isinstance(args, dict):
            args = {k: v for k, v in args.items() if k not in CONTENT_FIELDS}
        out.append(json.dumps(args, ensure_ascii=False))
    return " ".join(out)


def written_in(text: str, within: str, start: int = 0) -> bool:
    """Whether a value stands in a text (from start) as a whole (`125` is not in `1250`)."""
    return within.find(text, start) >= 0 and bool(
        re.compile(r"(?<![\w-])" + re.escape(text) + r"(?![\w-])").search(within, start))


def agent_value_items(turns: list[dict]) -> list[dict]:
    """The values of the agent's own words that the work turned on: passed on to a later call, or
    stated in its last words before the boundary (see the module's docstring)."""
    spoken = [t for t, turn in enumerate(turns)
              if turn["role"] == "assistant" and (turn.get("text") or "").strip()]
    # every call's arguments in one text, and where the calls of each turn begin in it
    calls, begins, at = [], [], 0
    for turn in turns:
        begins.append(at)
        calls.append(call_inputs(turn) if turn["role"] == "assistant" else "")
        at += len(calls[-1]) + 1
    called = "\n".join(calls)
    out, seen = [], set()
    for t in spoken:
        named = [v for v in prose_values(turns[t]["text"]) if names_one_thing(v)]
        if len({v.text for v in named}) > MAX_STATED:            # a listing
            continue
        for value in named:
            after = begins[t + 1] if t + 1 < len(turns) else len(called)
            if value.kind not in WALKED_KINDS and value.text not in seen and \
                    written_in(value.text, called, after):
                seen.add(value.text)
                out.append(agent_value(value, turns[t]["text"], t + 1, "passed on"))
    if spoken:
        last = spoken[-1]
        result = [v for v in prose_values(turns[last]["text"])
                  if names_one_thing(v) or is_measurement(v)]
        if len({v.text for v in result}) <= MAX_STATED:
            out += [agent_value(v, turns[last]["text"], last + 1, "stated last") for v in result
                    if v.text not in seen and not seen.add(v.text)]
    return mark_near(out, turns, called)


def agent_value(value: Value, text: str, turn: int, how: str) -> dict:
    """A value item, its source the words of its line that stand with it (up to the values beside
    it: another value's words are that value's)."""
    others = [v for v in extract_values(text) if v.end <= value.start or v.start >= value.end]
    start = max([0, text.rfind("\n", 0, value.start) + 1, value.start - SOURCE_CHARS]
                + [v.end for v in others if v.end <= value.start])
    ends = [e for e in (text.find("\n", value.end), value.end + SOURCE_CHARS) if e >= 0]
    end = min(ends + [v.start for v in others if v.start >= value.end])
    return {"category": "value", "key": value.text, "text": value.text,
            "source": text[start:end].strip(), "kind": value.kind, "turn": turn,
            "how_found": how}


def mark_near(items: list[dict], turns: list[dict], called: str) -> list[dict]:
    """Each item with `near`: the values of its kind that the agent's words, its calls and the
    user's words give and that read as it changed (the summary giving one is no misstatement)."""
    if not items:
        return items
    given: dict[str, set[str]] = {}
    texts = [turn.get("text") or "" for turn in turns
             if turn["role"] in ("assistant", "user") and not turn.get("summary")]
    for text in texts + [called]:
        for value in extract_values(text):
            given.setdefault(value.kind, set()).add(normalize_value(value.kind, value.text))
    for item in items:
        own = normalize_value(item["kind"], item["key"])
        item["near"] = sorted(v for v in given.get(item["kind"], ())
                              if v != own and is_close(item["kind"], own, v))
    return items


def address_kept(key: str, lower: str) -> bool:
    """An address kept by the id it names (`ENT-96` for an issue's address, `pull/121` for a pull
    request's), where one of its path's parts is an id."""
    parts = re.split(r"[/?#]", key.split("://", 1)[-1])[1:]
    numbered = re.search(r"/(?:pull|issues)/(\d+)", key)
    return any(NAMED_ID.match(p) and not COMPOUND.match(p) and "_" not in p
               and written_in(p.lower(), lower) for p in parts) or \
        bool(numbered) and number_kept("#" + numbered.group(1), lower)


def number_kept(key: str, lower: str) -> bool:
    """A pull request's or an issue's number (#165) kept by any way of writing it: `#165`,
    `pull/165`, `PR 165`, `issue 165`."""
    number = key.lstrip("#")
    return bool(re.search(r"(?:#|\bpulls?/|\bissues?/|\b(?:pr|pull request|issue)[ -]?#?)"
                          + re.escape(number) + r"\b", lower))


def changed_in(item: dict, summary_values: list[Value]) -> Value | None:
    """The summary's value that reads as the item's with a small change and that no word of the
    agent's or the user's gave (spellings.is_close); None when there is none."""
    own = normalize_value(item["kind"], item["key"])
    near = set(item.get("near") or ())
    for value in summary_values:
        if value.kind != item["kind"]:
            continue
        other = normalize_value(value.kind, value.text)
        if other != own and other not in near and is_close(item["kind"], own, other):
            return value
    return None
