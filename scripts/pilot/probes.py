"""Probes (PROTOCOL.md section 4): how a probe's reply becomes an answer and a class. The integer
answer's parse (strict, and a lenient diagnostic beside it) and its five classes, probe kinds as
data (ProbeKind) in a registry a study adds its own kinds to, and one probe scored by its kind."""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Iterable

from .rules.states import to_int


CLASSES = ("correct", "off_by_one", "conflation", "other_wrong", "omission")

# The primary parse, as the paper's reference implementation reads an answer: the last `ANSWER:`
# (any letter case) followed, after any whitespace (a line break included), by an integer; commas
# inside the number are ignored. Anything else, including `ANSWER: **412**` and `ANSWER : 412`, is
# an omission.
ANSWER_PATTERN = re.compile(r"ANSWER:\s*(-?\d[\d,]*)", re.IGNORECASE)

# The lenient parse, a labelled diagnostic only: also reads markdown emphasis or code marks around
# the label or the number (`**ANSWER:** 412`, `ANSWER: **412**`, `ANSWER: `412``).
LENIENT_ANSWER_PATTERN = re.compile(r"ANSWER[*_`\s]*:[*_`\s]*(-?\d[\d,]*)", re.IGNORECASE)


def _last_integer(pattern: re.Pattern, reply: str) -> int | None:
    matches = pattern.findall(reply or "")
    return to_int(matches[-1]) if matches else None


def parse_answer(reply: str) -> int | None:
    """The integer of the last `ANSWER:` followed by an integer, or None (an omission)."""
    return _last_integer(ANSWER_PATTERN, reply)


def parse_answer_lenient(reply: str) -> int | None:
    """Diagnostic only, never the primary metric: the last ANSWER with markdown marks tolerated."""
    return _last_integer(LENIENT_ANSWER_PATTERN, reply)


def classify_answer(answer: int | None, truth: int, conflation_set: Iterable[int]) -> str:
    """The five classes in their pinned precedence: omission, correct, off_by_one, conflation,
    other_wrong."""
    if answer is None:
        return "omission"
    if answer == truth:
        return "correct"
    if abs(answer - truth) == 1:
        return "off_by_one"
    if answer in set(conflation_set):
        return "conflation"
    return "other_wrong"


@dataclasses.dataclass(frozen=True)
class ProbeKind:
    """A kind of probe as data: how its answer is parsed and classified, its classes, and what a
    scored answer is (answer_type), which the shape check of a bank reads as the scorer wrote it."""

    name: str
    parse: Callable[[str], Any]         # reply -> answer, None for an omission
    parse_lenient: Callable[[str], Any] | None   # a labelled diagnostic beside the primary parse
    classify: Callable[[Any, dict, list], str]   # (answer, question, conflation set) -> class
    classes: tuple
    # a scored answer: "integer", "text", or "choice" (one of `choices`)
    answer_type: str = "integer"
    correct_class: str = "correct"
    omission_class: str = "omission"
    choices: tuple | None = None        # the answers a reply may give, for answer_type "choice"

    def answer_ok(self, answer: Any) -> bool:
        """Whether a scored answer is one this kind can give (None, an omission, always is)."""
        if answer is None:
            return True
        if self.answer_type == "choice":
            return isinstance(answer, str) and answer in (self.choices or ())
        if self.answer_type == "text":
            return isinstance(answer, str)
        return isinstance(answer, int) and not isinstance(answer, bool)

    @property
    def answer_desc(self) -> str:
        if self.answer_type == "choice":
            return ", ".join(self.choices or ()) + " or null"
        return "a text or null" if self.answer_type == "text" else "an integer or null"


ANSWER_TYPES = ("integer", "text", "choice")


def integer_classes(answer: Any, question: dict, conflation: list) -> str:
    return classify_answer(answer, question["truth"], conflation)


# The answer line every integer question ends with (pilot/prompts.py).
ANSWER_RULE = ("Reply with a single line of the form ANSWER: <integer> and nothing else: "
               "no working, no explanation.")


class ProbeKinds(dict):
    """name -> ProbeKind; a kind registered by a module not yet imported is imported where it is
    first looked up."""

    def __missing__(self, name: str) -> ProbeKind:
        load = PROBE_KIND_MODULES.pop(name, None)
        if load is None:
            raise KeyError(name)
        load()
        return self[name]


PROBE_KINDS = ProbeKinds()              # a study registers its own kinds with register_probe_kind
# name -> what imports the module that registers it (a study's analysis)
PROBE_KIND_MODULES: dict = {}


def register_probe_kind_module(name: str, load: Callable[[], Any]) -> None:
    """Say which module registers the probe kind `name`, to be imported when a probe of that kind is
    first read."""
    if name not in PROBE_KINDS:
        PROBE_KIND_MODULES[name] = load


def register_probe_kind(kind: ProbeKind) -> ProbeKind:
    if kind.answer_type not in ANSWER_TYPES or (kind.answer_type == "choice") != bool(kind.choices):
        raise ValueError(f"probe kind {kind.name}: answer_type is one of "
                         f"{', '.join(ANSWER_TYPES)}, and `choices` "
                         f"are given for a choice and only for it")
    PROBE_KINDS[kind.name] = kind
    return kind


register_probe_kind(ProbeKind("integer", parse_answer, parse_answer_lenient, integer_classes,
                              CLASSES))


def probe_kind(question: dict) -> ProbeKind:
    return PROBE_KINDS[question.get("kind", "integer")]


def score_probe(record: dict, question: dict, conflation_set: list[int]) -> dict:
    kind = probe_kind(question)
    reply = record.get("response", "")
    answer = kind.parse(reply)
    probe = {"question_id": question["id"], "type": question["type"], "truth": question["truth"],
             "answer": answer, "class": kind.classify(answer, question, conflation_set)}
    if answer is None and kind.parse_lenient is not None:
        # Diagnostic beside the primary class, never in it: what a lenient parse would have read.
        lenient = kind.parse_lenient(reply)
        if lenient is not None:
            probe["lenient_answer"] = lenient
            probe["lenient_class"] = kind.classify(lenient, question, conflation_set)
    return probe
