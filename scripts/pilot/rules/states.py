"""States: reading a compacted state back. Where a text's sentences end (the one splitter every
text rule cuts its units with); the integers a text states; the lines `NAME = N` of a typed block
(exact, and a looser reading beside it); the nearest number to a name in prose (anywhere, or within
the sentence that names it); the lines under a heading; and the key-term rule that says whether a
text still carries an instruction. Pure functions, shared by every study that reads its states.
"""
from __future__ import annotations

import re
from typing import Iterable


# --- Sentences: the one splitter ---------------------------------------------------------------
# A sentence ends after a stop mark followed by white space, or at a line break. Every unit a text
# rule reads is cut by this one rule (unit_end, split_units); the units below differ only in their
# stop marks, in what they count as a line break and in the words after which a stop ends nothing,
# each for the reason given beside it.
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"        # every line break str.splitlines knows


def unit_end(stops: str = ".!?", breaks: str = "\n", not_after: str = "") -> re.Pattern:
    """The mark a unit ends with (the unit ends at the mark's end): a character of `breaks`, or
    one of `stops` followed by white space where the text up to it does not end as `not_after`
    (look-behinds) says."""
    stop = f"[{re.escape(stops)}]{not_after}(?=\\s)"
    return re.compile(f"[{breaks}]|{stop}" if breaks else stop)


# A transcript's sentence (the sentence around a value, values.Sentences).
SENTENCE_END = unit_end()

# A sentence of prose whose line breaks only wrap it (a generated episode's segment).
WRAPPED_SENTENCE_END = unit_end(breaks="")

# A user's sentence (the instructions of a turn): a stop after a title or an abbreviation ends none.
USER_SENTENCE_END = unit_end(not_after=r"(?<!\b(?:Dr|Mr|Ms|St|vs|Jr|Sr|No)\.)(?<!\bMrs\.)"
                                       r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)")

# A state's unit (what values and claims are read from, by the gate and by judge_state): a state
# lists its items with semicolons too, and is read line by line at every line break.
STATE_UNIT_END = unit_end(".!?;", LINE_BREAKS)

# A sentence of a state for the sentence-bounded prose reader (R1): as a state's unit, with only
# `\n` as a line break (the reader as it was measured).
PROSE_SENTENCE_END = unit_end(".!?;")

# An instruction's orders (claims.rule_clauses): an order ends at a full stop, a semicolon or a
# colon (not at `!`, `?` or a line break: the rule as it was measured); its clauses are cut
# further at joining words.
ORDER_END = unit_end(".;:", breaks="")


def split_units(text: str, end: re.Pattern = SENTENCE_END) -> list[str]:
    """text cut after each mark of `end` into units, white space stripped, empty ones left out."""
    text = text or ""
    cuts = [0, *(mark.end() for mark in end.finditer(text)), len(text)]
    return [unit for start, stop in zip(cuts, cuts[1:]) if (unit := text[start:stop].strip())]


def state_units(text: str) -> list[str]:
    """A state's sentences and lines: the units values and claims are read from."""
    return split_units(text, STATE_UNIT_END)


# --- Numbers and typed lines -------------------------------------------------------------------
INT_PATTERN = re.compile(r"(?<![\w.])-?\d[\d,]*(?![\w])")

# R2 write-time retention (primary): a whole line that is exactly `NAME = N`, spaces around `=`
# allowed.
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
    """R1 heuristic (crude, flagged): a name is retained if it occurs anywhere in the state; its
    value is the integer nearest (in characters) to the name's first occurrence, None when there is
    none."""
    state = state or ""
    numbers = [(m.start(), m.end(), to_int(m.group())) for m in INT_PATTERN.finditer(state)]
    numbers = [(start, end, n) for start, end, n in numbers if n is not None]
    values: dict[str, int | None] = {}
    for name in names:
        first = re.search(rf"\b{re.escape(name)}\b", state, re.IGNORECASE)
        if not first:
            continue
        distances = [(max(start - first.end(), first.start() - end, 0), start, n) for start, end,
                     n in numbers]
        values[name] = min(distances)[2] if distances else None
    return values


def read_prose_state_by_sentence(state: str, names: Iterable[str]) -> dict[str, int | None]:
    """R1, the sentence-bounded reader: a name is retained if it occurs anywhere in the state (as
    for the paper's heuristic); its value is the integer nearest to the name inside the first
    sentence that names it and holds a number (the earlier number on a tie), None when no such
    sentence holds one. `A is 1. B is 2.` gives B 2, where the nearest number anywhere is A's 1."""
    sentences = split_units(state, PROSE_SENTENCE_END)
    values: dict[str, int | None] = {}
    for name in names:
        pattern = re.compile(rf"\b{re.escape(name)}\b", re.IGNORECASE)
        if not pattern.search(state or ""):
            continue
        values[name] = None
        for sentence in sentences:
            found = pattern.search(sentence)
            numbers = [(m.start(), m.end(),
                        to_int(m.group())) for m in INT_PATTERN.finditer(sentence)]
            numbers = [(start, end, n) for start, end, n in numbers if n is not None]
            if found and numbers:
                values[name] = min((max(start - found.end(), found.start() - end, 0), start, n)
                                   for start, end, n in numbers)[2]
                break
    return values


def read_section(state: str, heading: str) -> str:
    """The lines under a heading (`Heading`, `## Heading`, `**Heading:**` ...) up to the next
    heading."""
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


SECTION_HEADINGS = frozenset({"goal", "constraints", "progress", "decisions", "next steps",
                              "critical values"})


# The key-term rule: a text carries an instruction when every key term of the instruction appears in
# it, letter case
# and spacing ignored.
def normalize_for_terms(text: str) -> str:
    """Text as the retention rule compares it: lower case, runs of spaces as one, no spaces around
    `=`."""
    return re.sub(r"\s*=\s*", "=", " ".join((text or "").lower().split()))


def key_terms_in(text: str, key_terms: Iterable[str]) -> list[str]:
    """The key terms the retention rule finds in a text."""
    norm = normalize_for_terms(text)
    return [term for term in key_terms if normalize_for_terms(term) in norm]


def term_stem(word: str) -> str:
    """A word as the key-term rule compares it: lower case, one common ending taken off (`pushes`,
    `pushed`, `pushing` -> push; `committing` -> commit; `pass` and `passed` -> pass), never cut
    shorter than three letters."""
    word = word.lower()
    if word.endswith(("ied", "ies")) and len(word) > 4:
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[:-len(suffix)]
            if suffix in ("ing", "ed") and len(word) > 3 and word[-1] == word[-2] and \
                    word[-1] not in "lsz":
                word = word[:-1]
            break
    return word


TERM_WORD = re.compile(r"[a-z][a-z'-]*[a-z]|[a-z]")


def carries_instruction(text: str, key_terms: Iterable[str]) -> bool:
    """The deterministic retention rule: every key term of the instruction appears in the text as a
    whole (case and spacing ignored): a word as a word of the text with the same stem (term_stem),
    a value or a phrase between word boundaries, never inside a longer word or number (`12` is not
    in `1249`). Known failure modes: a paraphrase without the terms is missed; terms present for
    another reason count as kept."""
    norm = normalize_for_terms(text)
    stems = None
    for term in key_terms:
        want = normalize_for_terms(term)
        if TERM_WORD.fullmatch(want):
            stems = stems if stems is not None else {term_stem(w) for w in TERM_WORD.findall(norm)}
            if term_stem(want) not in stems:
                return False
        elif not re.search(r"(?<![\w.])" + re.escape(want) + r"(?![\w]|\.\w)", norm):
            return False
    return True
