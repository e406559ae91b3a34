"""States: reading a compacted state back. The integers a text states; the lines `NAME = N` of a typed block (exact,
and a looser reading beside it); the nearest number to a name in prose (anywhere, or within the sentence that names
it); the lines under a heading; and the key-term rule that says whether a text still carries an instruction. Pure
functions, shared by every study that reads its states."""
from __future__ import annotations

import re
from typing import Iterable


INT_PATTERN = re.compile(r"(?<![\w.])-?\d[\d,]*(?![\w])")

# R2 write-time retention (primary): a whole line that is exactly `NAME = N`, spaces around `=` allowed.
EXACT_TYPED_LINE = re.compile(r"^[ \t]*([A-Za-z]+)[ \t]*=[ \t]*(-?\d+)[ \t]*$")

# The looser reading, shown beside it and labelled: bullets, `NAME: N`, emphasis and trailing text.
LOOSE_TYPED_LINE = re.compile(r"^[\s*\-\u2022]*([A-Za-z]{6})\s*[=:]\s*[*_`]*\s*(-?\d[\d,]*)\b")


def to_int(text: str) -> int | None:
    try:
        return int(text.replace(",", "").rstrip(","))
    except ValueError:
        return None


def _read_lines(state: str, pattern: re.Pattern) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in (state or "").splitlines():
        match = pattern.match(line)
        if match:
            value = to_int(match.group(2))
            if value is not None:
                values.setdefault(match.group(1).upper(), value)
    return values


def read_typed_state(state: str) -> dict[str, int]:
    """R2: exact `NAME = N` lines of a typed block; the first line for a name counts."""
    return _read_lines(state, EXACT_TYPED_LINE)


def read_typed_state_loose(state: str) -> dict[str, int]:
    """R2, labelled diagnostic: also `NAME: N`, bullets, emphasis and trailing text."""
    return _read_lines(state, LOOSE_TYPED_LINE)


def read_prose_state(state: str, names: Iterable[str]) -> dict[str, int | None]:
    """R1 heuristic (crude, flagged): a name is retained if it occurs anywhere in the state; its value
    is the integer nearest (in characters) to the name's first occurrence, None when there is none."""
    state = state or ""
    numbers = [(m.start(), m.end(), to_int(m.group())) for m in INT_PATTERN.finditer(state)]
    numbers = [(start, end, n) for start, end, n in numbers if n is not None]
    values: dict[str, int | None] = {}
    for name in names:
        first = re.search(rf"\b{re.escape(name)}\b", state, re.IGNORECASE)
        if not first:
            continue
        distances = [(max(start - first.end(), first.start() - end, 0), start, n) for start, end, n in numbers]
        values[name] = min(distances)[2] if distances else None
    return values


# Where a sentence ends for the sentence-bounded prose reader: after . ! ? or ; and the space that follows, or at
# a line break.
SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")


def read_prose_state_by_sentence(state: str, names: Iterable[str]) -> dict[str, int | None]:
    """R1, the sentence-bounded reader: a name is retained if it occurs anywhere in the state (as for the paper's
    heuristic); its value is the integer nearest to the name inside the first sentence that names it and holds a
    number (the earlier number on a tie), None when no such sentence holds one. `A is 1. B is 2.` gives B 2,
    where the nearest number anywhere is A's 1."""
    sentences = [part for part in SENTENCE_END.split(state or "") if part]
    values: dict[str, int | None] = {}
    for name in names:
        pattern = re.compile(rf"\b{re.escape(name)}\b", re.IGNORECASE)
        if not pattern.search(state or ""):
            continue
        values[name] = None
        for sentence in sentences:
            found = pattern.search(sentence)
            numbers = [(m.start(), m.end(), to_int(m.group())) for m in INT_PATTERN.finditer(sentence)]
            numbers = [(start, end, n) for start, end, n in numbers if n is not None]
            if found and numbers:
                values[name] = min((max(start - found.end(), found.start() - end, 0), start, n)
                                   for start, end, n in numbers)[2]
                break
    return values


def read_section(state: str, heading: str) -> str:
    """The lines under a heading (`Heading`, `## Heading`, `**Heading:**` ...) up to the next heading."""
    wanted = " ".join(heading.lower().split())
    lines, inside = [], False
    for line in (state or "").splitlines():
        bare = " ".join(re.sub(r"[#*_:`]", " ", line).lower().split())
        looks_like_heading = bool(bare) and len(bare.split()) <= 4 and not re.search(r"[=\d]", line)
        if bare == wanted or (bare.startswith(wanted) and not re.search(r"[=\d]", line)):
            inside = True
            continue
        if inside and looks_like_heading and bare in SECTION_HEADINGS:
            break
        if inside:
            lines.append(line)
    return "\n".join(lines)


SECTION_HEADINGS = frozenset({"goal", "constraints", "progress", "decisions", "next steps", "critical values"})


# The key-term rule: a text carries an instruction when every key term of the instruction appears in it, letter case
# and spacing ignored.
def normalize_for_terms(text: str) -> str:
    """Text as the retention rule compares it: lower case, runs of spaces as one, no spaces around `=`."""
    return re.sub(r"\s*=\s*", "=", " ".join((text or "").lower().split()))


def key_terms_in(text: str, key_terms: Iterable[str]) -> list[str]:
    """The key terms the retention rule finds in a text."""
    norm = normalize_for_terms(text)
    return [term for term in key_terms if normalize_for_terms(term) in norm]


def carries_instruction(text: str, key_terms: Iterable[str]) -> bool:
    """The deterministic retention rule: every key term of the instruction appears in the text (case and
    spacing ignored). Known failure modes: a paraphrase without the terms is missed; terms present for
    another reason count as kept."""
    norm = normalize_for_terms(text)
    return all(normalize_for_terms(term) in norm for term in key_terms)
