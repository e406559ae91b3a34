"""XR-S1, ground truth and the judging of a state (protocol/SESSIONS.md sections 3 and 5), as two
pure functions that the sessions study and anything that scores a summary against its transcript
share:

    ground_truth(turns) -> {"values", "instructions", "steps"}: each exact value once, with its
        kind, the words that say what it is the value of (its referent) and whether a later word
        supersedes it; each standing instruction of the user, with the turn that withdrew it, if one
        did; each tool call that failed or was denied, with its outcome, whether a later call
        resolved it, and how a state may name it.
    judge_state(truth, state) -> per item a status: a value kept, reformatted, changed or dropped,
        and whether it stands beside its referent; an instruction present, contradicted or absent; a
        step reported with its outcome, claimed done or absent; each with the sentence of the
        transcript and the sentence of the state.

Pure functions of text: no model, no file, no clock; each linear in the session's length and in the
values per turn. The lexical value rules are pilot/rules/values.py; what a sentence claims, and when
one withdraws or corrects an instruction, is pilot/rules/claims.py (the release gate reads claims
with the same words); where a sentence ends is pilot/rules/states.py; a tool result's outcome and
the failed or denied steps are failed_steps.py (section 3.3), which this module re-exports.
tests/labelled/ holds the hand-labelled sets these rules are measured on
(scripts/bench/measure_rules.py prints their precision and recall). """
from __future__ import annotations

import collections
import difflib
import functools
import re
from typing import Callable

from ...rules.claims import (CORRECTION, FORMER_MARK, REVOKES, claim, contradicts, corrected_away,
                              forbids, names_item, reports_failure, says_not_done, stem, terms,
                              withdrawn)
from ...rules.states import (USER_SENTENCE_END, carries_instruction, split_units, state_units,
                             term_stem)
from ...rules.spellings import is_close, normalize_value, number_parts, numeric_key
from ...rules.values import (MASK, VALUE_KINDS, Sentences, Value, edit_distance, extract_values,
                             is_secret, mask_secrets, secret_spans)
# DENIED and FAILED: re-exported for the tests that check each against its whole pattern
from .failed_steps import (DENIED, FAILED, render_arguments, session_steps, step_outcome,
                           turn_outcome)

__all__ = ["MASK", "VALUE_KINDS", "VALUE_CLASSES", "INSTRUCTION_CLASSES", "STEP_CLASSES",
           "extract_values",
           "is_close", "mask_secrets", "normalize_value", "ground_truth", "judge_state",
           "step_outcome", "turn_outcome",
           "is_standing_instruction", "split_sentences", "key_terms"]

# former: a value the session itself replaced, kept in the state (apart from the current one)
VALUE_CLASSES = ("kept", "reformatted", "changed", "dropped", "former")

INSTRUCTION_CLASSES = ("present", "contradicted", "absent")

STEP_CLASSES = ("reported", "claimed done", "absent")    # reported = reported with its outcome

STOP = frozenset(
    """a an the and or but if then so to of in on at by for with from into onto about as is are was
were be been being do does did not no this that these those it its i me my we our you your they
them their he she his her there here what which who when where why how all any each every some
such only own same than too very can could will would should must may might shall just also
please now ever always never until rest more most other one two new get got have has had let
make keep use like want need sure really thing things way""".split()
)


# --- Exact values
# ------------------------------------------------------------------------------------------------
KEYED = re.compile(r"[\"']?([A-Za-z][\w .-]{0,40}?)[\"']?\s*[:=]\s*[\"'(]?\s*$")

# a cheap look before the key is searched for
AFTER_KEY = re.compile(r"[:=]\s*[\"'(]?\s*$")

CLAUSE_BREAK, CLAUSE_END = re.compile(r"[,;:()\[\]]"), re.compile(r"[,;:()\[\].]")

WORD = re.compile(r"[A-Za-z][A-Za-z-]+")

FORMER = re.compile(r"(?:\b(?:from|was|were|not|formerly|previously|originally|old|instead "
                    r"of|rather than|up from|down from|replacing|replaced|superseded|it "
                    r"was)\s*(?:at|as)?\s*[:=]?\s*)$", re.IGNORECASE)


# (a text without them has none)
EXAMPLE_WORDS = re.compile(r"such as|e\.g\.|for example|for instance", re.IGNORECASE)

EXAMPLE_BEFORE = re.compile(r"\b(?:such as|e\.g\.,?|for example,?|for instance,?)\s*$",
                            re.IGNORECASE)


# Words that carry no meaning of their own in an order (`before you push anything`): never key
# terms
FUNCTION_WORDS = frozenset("""anything something everything nothing anyone someone everyone nobody
anywhere somewhere everywhere before after without within else again first once whole
already still even yet both either neither whether because though although while since
unless over under""".split())


def referent_of(text: str, start: int, end: int, sentences: Sentences) -> list[str]:
    """The words that say what a value is the value of, stemmed: the key of a `key: value` or `key =
    value`, else the last two content words before it in its clause and the first one after it
    (`refund of $1,249.00` -> refund; `8 parts` -> part; `order ORD-58213` -> order)."""
    left, right = sentences.bounds(start, end)
    # (a bounded look back keeps a long line linear)
    near = max(left, start - 80)
    line_start = max(near, text.rfind("\n", near, start) + 1)
    keyed = KEYED.search(text, line_start, start) if AFTER_KEY.search(text,
        max(line_start, start - 6), start) else None
    if keyed and keyed.end() == start:
        words = [w for w in re.findall(r"[A-Za-z]+", keyed.group(1)) if w.lower() not in STOP]
        if words:
            return list(dict.fromkeys(stem(w.lower()) for w in words))[:3]
    before = CLAUSE_BREAK.split(text[near:start])[-1]
    after = CLAUSE_END.split(text[end:min(right, end + 40)])[0]
    words = [w.lower() for w in WORD.findall(before) if w.lower() not in STOP][-2:]
    words += [w.lower() for w in WORD.findall(after) if w.lower() not in STOP][:1]
    return list(dict.fromkeys(stem(w) for w in words))


# A value the sentence says has lapsed, right after it
LAPSED = re.compile(r"\s+(?:has |have |had |is |was )?(?:now )?(?:expired|lapsed|superseded|"
                    r"deprecated|no longer (?:valid|current|in use))\b", re.IGNORECASE)


def superseded(text: str, start: int, end: int) -> bool:
    """Whether the sentence itself gives the value as a former one: `from 840 ms to 310 ms`, `(it
    was 11:00)`, `not rc.1`, `up from 200`, `quote 0.9184 expired`."""
    before = text[max(0, start - 24):start]
    if LAPSED.match(text, end):
        return True
    if FORMER.search(before):
        return not re.search(r"\bfrom\s*$", before, re.IGNORECASE) or \
            bool(re.match(r"\s+to\b", text[end:end + 6], re.IGNORECASE))
    return False


def value_key(value: Value) -> tuple:
    """What makes two spellings one fact: the same kind and normal form; for amounts and numbers of
    three digits or more (or with a decimal part), the same number (`$1,249.00`, `1249.00` and
    `1249.0`)."""
    return _value_key(value.kind, value.text)


@functools.lru_cache(maxsize=65536)
def _value_key(kind: str, text: str) -> tuple:
    number = numeric_key(kind, text)
    if number is not None:
        return ("number", number)
    return (kind, normalize_value(kind, text))


def bare_key(value: Value) -> tuple | None:
    """The key a number with a unit shares with the same number written bare (`38 ms` and `"p50_ms":
    38`): one fact; None for anything else, and for a single digit."""
    return _bare_key(value.text) if value.kind == "number" else None


@functools.lru_cache(maxsize=65536)
def _bare_key(text: str) -> tuple | None:
    number, _ = number_parts(text)
    return ("bare", number) if number is not None and len(re.sub(r"\D", "", text)) >= 2 else None


def session_values(parts: list[list[tuple[str, str]]], segment_of: list[int]) -> list[dict]:
    """Every fact of the session written as an exact value, once (its first spelling; the others are
    its restatements), with its kind, referent, the sentence it first came from, where it was said,
    its segment, and whether it is a secret (a URL that carries a password) or given as a former
    value."""
    facts: list[dict] = []
    by_key: dict[tuple, dict] = {}
    # month-day -> a fact, so that `3 April` restates `03/04/2025`
    undated: dict[tuple, dict] = {}
    # a number -> the fact it is, with or without its unit
    bare: dict[tuple, dict] = {}
    # (sentence bounds, fact, whether this spelling made it) of the text's values
    said: list[tuple] = []
    for t, turn in enumerate(parts):
        for source, text in turn:
            if source == "tool result":
                text = without_view_numbers(text)
            secrets, sentences = secret_spans(text), Sentences(text)
            examples = EXAMPLE_WORDS.search(text) is not None
            for value in extract_values(text):
                if examples and EXAMPLE_BEFORE.search(text, max(0, value.start - 16), value.start):
                    continue                     # an example of a form, not a fact of the session
                key, plain = value_key(value), bare_key(value)
                fact = by_key.get(key) or (undated.get(month_day(value)) if value.kind
                                           == "date" else None) or \
                    (bare.get(plain) if plain else None)
                own = own_words(text, value.start, value.end, sentences)
                if fact is not None and not other_referent(fact, own):
                    if value.text != fact["text"] and value.text not in fact["forms"]:
                        fact["forms"].append(value.text)
                    if superseded(text, value.start, value.end):
                        fact["current"] = False          # a later sentence gives it as former
                    said.append((sentences.bounds(value.start, value.end), fact, False))
                    continue
                fact = {"id": len(facts) + 1, "kind": value.kind, "text": value.text, "forms": [],
                        "referent": referent_of(text, value.start, value.end, sentences),
                        "own": own,
                        "current": not superseded(text, value.start, value.end), "source": source,
                        "sentence": sentences.around(value.start, value.end), "turn": t + 1,
                        "segment": segment_of[t] if segment_of else 1,
                        "secret": is_secret(value.start, value.end, secrets)}
                facts.append(fact)
                said.append((sentences.bounds(value.start, value.end), fact, True))
                by_key.setdefault(key, fact)
                if plain:
                    bare.setdefault(plain, fact)
                for day in month_days(value):
                    undated.setdefault(day, fact)
            if source == "user":
                correct_facts(text, said, facts)
            said.clear()
    for fact in facts:
        fact["own"] = sorted(fact["own"])
    return facts


def own_words(text: str, start: int, end: int, sentences: Sentences) -> frozenset[str]:
    """What a small number (one or two digits, no unit) counts, for telling two facts with one
    number apart (`a limit of 7 and 7 workers`): the words right after it (two at most, up to a
    stopword: `12 tests pass`), and the nearest content word before it in its clause; empty for
    other values, which are told apart by their spelling."""
    if not re.fullmatch(r"-?\d{1,2}", text[start:end]):
        return frozenset()
    left, right = sentences.bounds(start, end)
    after = []
    for word in re.match(r"(?:\s+[A-Za-z][A-Za-z-]+){0,2}", text[end:right]).group(0).split():
        if word.lower() in STOP:
            break
        after.append(word.lower())
    before = [w.lower() for w in WORD.findall(CLAUSE_BREAK.split(text[max(left, start - 60):
                                                                     start])[-1])
              if w.lower() not in STOP]
    return frozenset(term_stem(w) for w in after + before[-1:])


def other_referent(fact: dict, own: frozenset[str]) -> bool:
    """Whether a number restated with words of its own counts another thing than the fact it
    spells: both say what they count and share no word (one fact per referent)."""
    return bool(own) and bool(fact.get("own")) and not own & set(fact["own"])


def correct_facts(text: str, said: list[tuple], facts: list[dict]) -> None:
    """Marks the facts a user's correcting sentence replaces as no longer current: for each value it
    gives first, the earlier current facts of its kind that the sentence restates beside it, or that
    share a word of its referent, or else the one written most like it (`dana.kim@northwind.example`
    after `Oh, it's dana.kim@northwind-corp.example, sorry`)."""
    by_sentence: dict[tuple, list[tuple[dict, bool]]] = collections.defaultdict(list)
    for bounds, fact, new in said:
        by_sentence[bounds].append((fact, new))
    for (left, right), found in by_sentence.items():
        if not CORRECTION.search(text[left:right]):
            continue
        restated = {f["id"] for f, new in found if not new}
        for fact, new in found:
            if not new:
                continue
            earlier = [f for f in facts if f["id"] < fact["id"] and f["current"] and
                       f["kind"] == fact["kind"] and f["id"] not in
                       {g["id"] for g, n in found if n}]
            replaced = [f for f in earlier if f["id"] in restated or
                        set(f["referent"]) & set(fact["referent"])]
            if not replaced and fact["kind"] not in ("number", "amount"):
                alike = [(written_alike(f["text"], fact["text"]), f["id"], f) for f in earlier]
                replaced = [max(alike)[2]] if alike and max(alike)[0] >= ALIKE else []
            for old in replaced:
                old.update(current=False, replaced_by=fact["id"])


# A file view's line-number prefix (Claude Code's Read `   124→`, `cat -n` and `nl -ba`
# `   124<tab>`, SWE-agent's window `124:`, Roo Code's `124 | `) and a browser page's element id
# (`[123] link`): at the start of a line, or after the result's own heading on its first line
VIEW_NUMBER = re.compile(r"(?m)(?:^|(?<=\): ))[ \t]*(\d{1,7})(→|\t|:| \| )")

ELEMENT_ID = re.compile(r"(?m)^[ \t]*(?:.*?\): [ \t]*)?(\[\d{1,7}\])(?= \w)")


def without_view_numbers(text: str) -> str:
    """A tool result with the numbers it writes only to show where things are blanked: the line
    numbers of a file view (a run of two or more lines numbered one after the other, with the same
    mark; a `N | ` line with another ` | ` is a table's row, not a view) and a browser page's
    element ids (two or more lines that open with one). Blanked, not cut, so that every other value
    keeps its place; a value the result also writes elsewhere stays."""
    spans = []
    numbered = []
    for m in VIEW_NUMBER.finditer(text):
        end = text.find("\n", m.end())
        rest = text[m.end():end if end >= 0 else len(text)] if m.group(2) == " | " else ""
        if " | " not in rest:
            numbered.append((int(m.group(1)), m.group(2), m.span(1)))
    for i, (number, mark, span) in enumerate(numbered):
        before = numbered[i - 1] if i else None
        after = numbered[i + 1] if i + 1 < len(numbered) else None
        if before and before[:2] == (number - 1, mark) or after and after[:2] == (number + 1, mark):
            spans.append(span)
    ids = [m.span(1) for m in ELEMENT_ID.finditer(text)]
    spans += ids if len(ids) >= 2 else []
    if not spans:
        return text
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def month_day(value: Value) -> tuple | None:
    norm = normalize_value("date", value.text)
    return ("md", norm[5:10]) if norm.startswith("----") else None


def month_days(value: Value) -> list[tuple]:
    """The month-day keys a full date stands for (both readings of an ambiguous 03/04/2025)."""
    if value.kind != "date":
        return []
    norm = normalize_value("date", value.text)
    if not re.match(r"\d{4}-\d{2}-\d{2}", norm):
        return [] if norm.startswith("----") else []
    month, day = norm[5:7], norm[8:10]
    keys = [("md", f"{month}-{day}")]
    if norm.endswith("~"):
        keys.append(("md", f"{day}-{month}"))
    return keys


# --- Standing instructions
# ---------------------------------------------------------------------------------------
EMPHASIS = re.compile(r"^(?:ever|never|always|for (?:everything|anything|all of it)|no "
                      r"exceptions?|period|"
                      r"every (?:single )?time|at all|anywhere)[.!]*$", re.IGNORECASE)

SCOPE = re.compile(r"\b(from now on|from here on|from this point|going forward|for the rest of|for "
                   r"the remainder of|until further notice|until i (?:say|tell|confirm)|for this "
                   r"(?:session|ticket|customer|repo|project|task)|in this "
                   r"(?:repo|repository|project|codebase|session)|rule for "
                   r"this|always|never|ever|every time|whenever|at all times|anymore|any ?more|no "
                   r"more|under any circumstances|in (?:all|every|any) \w+|every \w+|each \w+|for "
                   r"(?:anything|everything|any|all)\b|while "
                   r"you|only\b|instead\b|here\b|working|running|alive|intact|unchanged|in "
                   r"place|alone|untouched|as it is|as is)\b",
                   re.IGNORECASE)

ORDER_START = re.compile(
    r"^(?:please\s+|ok(?:ay)?,?\s+|and\s+|also,?\s+|so\s+|just\s+|one more "
    r"thing:?\s+)*"
    r"(?:(?:from now on|from here on|from this point|going forward|for the "
    r"rest of [\w ]+|for [^,:;]{1,40}(?=,)|"
    r"until i [^,]+|until further notice|"
    r"(?P<cond>whenever [^,]+|when [^,]+|if [^,]+|even if [^,]+|unless "
    r"[^,]+)|for anything [^,]+|"
    r"rule for this \w+:)[,:]?\s*(?:please\s+)?)*(?:don't|do "
    r"not|never(?!-)|always(?!-)|no\b(?!,)|"
    r"stop|keep|"
    r"use|stick|treat|write|log|reply|answer|"
    r"address|quote|show|ask|tell|run|push|commit|deploy|delete|send|email|cc|round|tabs|"
    r"spaces|make|be|put|add|avoid|prefer|only|check|test|open|leave|call|wait|refund|follow|"
    r"limit|include|mention|sign|respond|confirm|note|record|report|escalate|[a-z]+ only\b)",
    re.IGNORECASE,
)

ADDRESSED = re.compile(r"\b(?:you|we)\b(?:[\s,]+\w+){0,3}?[\s,]+(?:should|must|need to|have to|are "
                       r"to|will|shall|always|never|don't|do not)\b|\b(?:i want you to|i need you "
                       r"to|i'd like you to|could you always|can you always)\b|\bshould be\b|\byou "
                       r"can\b[^.]*\bnow\b",
                       re.IGNORECASE)

# Verbs of an order about how things are done (in what form, with what, to whom), which holds beyond
# the next
# step unless the sentence says it is for now: "Use British spelling in all replies", "Keep replies
# short",
# "Treat the staging database as read-only"; not "Keep going", "Use the staging key for this one
# call".
POLICY_VERBS = frozenset("use stick treat reply answer address quote prefer avoid follow limit "
                         "include mention sign "
                         "respond round cc log write keep".split())

POLITE_ORDER = re.compile(r"^(?:could|can|would|will) you(?: please)? (?:always|never|from now "
                          r"on)\b|^(?:could|can|would|will) you\b[^?]*\b(?:from now on|going "
                          r"forward|from here on)\b",
                          re.IGNORECASE)

NOT_AN_ORDER = re.compile(r"^\w+s (?:always|never)\b|\b(never mind|don't worry|do not worry|no "
                          r"worries|no need|not now|never heard|says?\b[^.]*\balways|say never|i "
                          r"(?:always|never)|it "
                          r"(?:always|never)|(?:ci|build|tests?|it|this|that|he|she|they|the \w+) "
                          r"(?:always|never) \w+s\b)",
                          re.IGNORECASE)

CODE_TO_BUILD = re.compile(
    r"^(?:please\s+)?(?:add|write|make|create|implement|build|change)\b[^.]*\b(?:rule|function|"
    r"parser|app|endpoint|method|class|test|check|validator|script|job|code)\b[^.]*\b(?:always|"
    r"never|every)\b|^(?:please\s+)?(?:make|have) (?:the|it|this) \w+ "
    r"(?:always|never)\b",
    re.IGNORECASE,
)

NARRATIVE = re.compile(
    r"^(?:the|a|an|my|our|their|his|her|it|this|that|ci|we've|i've|i|she|he|they|customer|"
    r"everyone|nobody)\b(?![^.]*\b(?:should|must|need|has to|have to|goes "
    r"to|go to|always|only)\b)",
    re.IGNORECASE,
)


# A rule stated of every member of a kind ("Every PR needs a changelog entry", "All prices go in
# EUR", "No secrets
# should be logged"): standing, however it is worded.
RULE_FOR_ALL = re.compile(
    r"^(?:every|each|all|any|no)\s+[\w-]+(?:\s+[\w-]+)?\s+(?:needs?|must|should|go(?:es)? "
    r"(?:in|to|into|through)|has to|have to|stays?|(?:is|are) to)\b",
    re.IGNORECASE,
)

# An order tied to what is done each time ("Check with me before deleting anything", "Run the linter
# before you
# push"): it holds whenever that is done, not only once.
BEFORE_EACH = re.compile(r"\bbefore (?:you |we )\w+|\bbefore \w+ing\b", re.IGNORECASE)


def split_sentences(text: str) -> list[str]:
    """A turn's sentences (states.USER_SENTENCE_END); a fragment that only stresses the one before
    ("Ever.", "For everything.") is joined to it."""
    out: list[str] = []
    for sentence in split_units(text, USER_SENTENCE_END):
        if out and EMPHASIS.match(sentence):
            out[-1] += " " + sentence
        else:
            out.append(sentence)
    return out


def is_standing_instruction(sentence: str) -> bool:
    """Whether a user's sentence gives a standing instruction: an order, prohibition or permission
    meant to hold beyond the next step (a scope word, or the form of a rule), not a question, a
    one-off request, a story, a dismissal, a rule quoted from elsewhere or a description of code to
    build (SESSIONS.md section 3.2); a sentence that gives its rule after a colon ("We're in code
    freeze until Monday: no merges to release/2026.12") is read by that rule."""
    if reads_as_instruction(sentence):
        return True
    head, colon, rule = sentence.partition(": ")
    return bool(colon) and not head.rstrip().endswith(("says", "said", "reads")) and \
        reads_as_instruction(rule)


def reads_as_instruction(sentence: str) -> bool:
    text = sentence.strip().strip('"').strip()
    if not text or text.endswith("?") and not POLITE_ORDER.search(text) or text.startswith(">") or \
            NOT_AN_ORDER.search(text) or CODE_TO_BUILD.search(text) or \
            re.search(r"\b(?:readme|policy|docs?|wiki|guide|it|ticket|page|contributing(?:\.md)?) "
                      r"(?:says|said|reads|"
                      r"states)\b|\bpolicy says\b", text, re.IGNORECASE):
        return False
    if re.search(r"\b(?:just|only) (?:this|for this) (?:once|one)\b|\bthis one "
                 r"(?:call|time)\b|\bjust this once\b",
                 text, re.IGNORECASE):
        return False
    start = ORDER_START.search(text)
    one_off = re.search(r"\b(?:yet|now|this time|for now|right now|that one|it|this "
                        r"one|going|ahead|again|"
                        r"next|them|these|those)\b", text, re.I)
    verb = start.group(0).split()[-1].lower() if start else ""
    # "Write a hello world function": one thing to make, not how things are done
    one_thing = verb in POLICY_VERBS and not start.group("cond") and not SCOPE.search(text) and \
        re.match(r"\s+(?:me\s+|us\s+)?(?:a|an)\s", text[start.end():], re.I)
    if start and (start.group("cond") or verb in ("no", "never", "don't",
                                                  "not") or verb in POLICY_VERBS) and \
            not one_off and not one_thing:
        # a conditional order, a prohibition, an order about how things are done: standing
        return True
    if POLITE_ORDER.search(text) or RULE_FOR_ALL.search(text):
        return True
    order = bool(start or ADDRESSED.search(text) or
                 re.match(r"^[\w.-]+(?: \w+)?, not [\w.-]+", text) or re.match(r"^[\w.-]+ only\b",
                 text, re.I) or re.fullmatch(r"[\w.-]+ [\w.-]+ only[.!]?", text, re.I))
    if not order:
        if NARRATIVE.search(text):
            return False
        order = bool(re.search(r"\b(?:goes to|go to|should be|must be|has to be|have to "
                               r"be|stays?)\b", text, re.I)
                     and SCOPE.search(text))
    return order and bool(SCOPE.search(text) or re.search(r"\b(?:short|in \w+ish|in spanish|in "
                                                          r"french|in german|"
                                                         r"read-only|first|instead|tabs|spaces)\b",
                                                         text, re.I) or
                          BEFORE_EACH.search(text))


def corrected(sentence: str, earlier: list[dict]) -> list[dict]:
    """The earlier standing instructions whose value a user's sentence corrects ("Actually the port
    is 8443, not 8080" after "Use port 8080 from now on"): those that give the value it says is not
    the one."""
    olds = corrected_away(sentence)
    return [i for i in earlier if not i.get("revoked_turn") and any(
        v.text in olds for v in extract_values(i["text"]))] if olds else []


# How alike two spellings of one kind must be for a correction to replace the one with the other
ALIKE = 0.75


def written_alike(old: str, new: str) -> float:
    return difflib.SequenceMatcher(None, old, new).ratio()


def value_corrected(sentence: str, earlier: list[dict]) -> list[tuple[dict, str]]:
    """The earlier standing instructions whose value a user's correcting sentence
    (claims.CORRECTION) replaces, each with its text as corrected: a value of the same kind that
    the sentence restates beside the new one ("make it 9090, 8080 clashes"), or, for a kind other
    than a number, the one written most like it (`Oh, it's dana.kim@northwind-corp.example,
    sorry`)."""
    if not CORRECTION.search(sentence):
        return []
    given = extract_values(sentence)
    out = []
    for instruction in earlier:
        if instruction.get("revoked_turn"):
            continue
        theirs = extract_values(instruction["text"])
        for new in given:
            if any(v.text == new.text for v in theirs):
                continue
            same = [v for v in theirs if v.kind == new.kind and (v.text in sentence or
                    new.kind not in ("number", "amount") and written_alike(v.text, new.text)
                    >= ALIKE)]
            if same:
                out.append((instruction, instruction["text"].replace(same[0].text, new.text)))
                break
    return out


def revoked_by(sentence: str, earlier: list[dict]) -> list[dict]:
    """The earlier standing instructions a user's sentence withdraws or replaces ("forget what I
    said about pnpm", "you don't need to ask about /tmp anymore", "you can reply in English now",
    "the freeze is over, you can deploy"), or whose condition it says is met (condition_met):
    those that share a word of what it names (claims.withdrawn, the one revocation rule, by which a
    one-off exception, "just this once", withdraws nothing)."""
    met = [i for i in earlier if not i.get("revoked_turn") and condition_met(i["text"], sentence)]
    what = withdrawn(sentence)
    if what is None:
        return met
    named = terms(what)
    # "in /tmp": an exception
    narrower = [v.text for v in extract_values(what)] + re.findall(r"(?<![\w/])/[\w.-]+", what)
    return met + [i for i in earlier if not i.get("revoked_turn") and i not in met and
                  named & set(terms(i["text"])) and all(v in i["text"] for v in narrower)]


UNTIL = re.compile(r"\buntil (?!i (?:say|tell|confirm)|further notice)(?P<event>[^,.;]+)",
                   re.IGNORECASE)


def condition_met(instruction: str, sentence: str) -> bool:
    """Whether a user's sentence says the event an instruction holds until has happened ("Don't
    email the customer until legal signs off", then "Legal signed off at 16:10"): every word of
    the event (two at least), and no word that says it has not."""
    until = UNTIL.search(instruction)
    event = terms(until.group("event")) if until else set()
    return len(event) >= 2 and event <= terms(sentence) and not forbids(sentence)


def key_terms(instruction: str, limit: int = 2) -> list[str]:
    """The terms the presence rule looks for: the instruction's exact values, then its longest
    content words (not a stopword, not a function word such as `anything` or `before`, not an -ly
    adverb), whole: the rule finds each as a whole word or value (states.carries_instruction, by
    which `committing` finds `commit` and `12` is not in `1249`)."""
    olds = set(corrected_away(instruction))
    # not the value it corrects away
    found = [f for f in extract_values(instruction) if f.text not in olds]
    words_text = re.sub(r"\buntil i \w+|" + SCOPE.pattern[2:-2], " ", instruction,
                        flags=re.IGNORECASE)
    for old in olds:
        words_text = words_text.replace(old, " ")
    found = [f for f in found if f.text in words_text]
    for value in found:
        at = words_text.find(value.text)
        words_text = words_text[:at] + " " * len(value.text) + words_text[at + len(value.text):]
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'-]+", words_text)]
    content = [w for w in dict.fromkeys(words) if w not in STOP and w not in FUNCTION_WORDS and
               len(w) >= 3 and not w.endswith("ly")]
    ranked = sorted(content, key=lambda w: (-len(w), content.index(w)))
    return list(dict.fromkeys([v.text for v in found]
                              + ranked))[:limit] or [instruction.strip()[:40]]


def session_instructions(turns: list[dict], segment_of: list[int]) -> list[dict]:
    """The standing instructions of the user's turns, in order, each with the terms the presence
    rule looks for; one the user later withdrew, replaced or corrected carries the turn that did so
    (a revocation is a rule, not a guess), and a correction of one is itself a standing instruction
    in its place (a corrected value: the instruction with the new value in place of the old)."""
    found: list[dict] = []
    seen: set[str] = set()
    for t, turn in enumerate(turns):
        if turn["role"] != "user":
            continue
        for sentence in split_sentences(turn["text"]):
            fixed, revoked = corrected(sentence, found), revoked_by(sentence, found)
            rewritten = value_corrected(sentence, [i for i in found if i not in fixed + revoked])
            for old in revoked + fixed + [i for i, _ in rewritten]:
                old.update(revoked_turn=t + 1, revoked_by=sentence[:400])
            for _, text in rewritten:
                if text not in seen:
                    seen.add(text)
                    found.append(instruction_record(len(found) + 1, text, t, segment_of))
            replaced = bool(revoked) and bool(
                ORDER_START.search(REVOKES.sub("", sentence).strip(" ,;")))
            if (fixed or replaced or is_standing_instruction(sentence)) and sentence not in seen:
                seen.add(sentence)
                found.append(instruction_record(len(found) + 1, sentence, t, segment_of))
    return found


def instruction_record(number: int, text: str, t: int, segment_of: list[int]) -> dict:
    return {"id": number, "text": text[:400], "key_terms": key_terms(text), "turn": t + 1,
            "segment": segment_of[t] if segment_of else 1, "revoked_turn": None,
            "revoked_by": None}


# --- The ground truth of a transcript
# ----------------------------------------------------------------------------
def plain_parts(turn: dict) -> list[tuple[str, str]]:
    """A turn as (where it was said, its text), when no rendering is given."""
    if turn["role"] == "user":
        return [("user", turn["text"])]
    if turn["role"] == "assistant":
        return [("assistant", turn["text"])] * bool(turn["text"]) + \
            [("tool call", render_arguments(call["input"])) for call in turn.get("calls", [])]
    return [("tool result", turn["text"])]


def ground_truth(turns: list[dict], segment_of: list[int] | None = None,
                 render: Callable[[dict], list[tuple[str, str]]] = plain_parts,
                 parts: list[list[tuple[str, str]]] | None = None) -> dict:
    """The ground truth of a transcript's turns ({role, text, calls | tool, error, call}, as the
    session readers give them): its values, standing instructions and failed or denied steps. render
    (or parts, already rendered) gives each turn's parts as the compactor saw them (values are read
    from what it saw); segment_of, each turn's segment."""
    parts = parts if parts is not None else [render(turn) for turn in turns]
    return {"values": session_values(parts, segment_of or []),
            "instructions": session_instructions(turns, segment_of or []),
            "steps": session_steps(turns, segment_of or [])}


# --- Judging a state against the ground truth
# --------------------------------------------------------------------
# words either side of a value in which its referent must stand
NEAR_WORDS = 6


def beside_referent(state: str, value: Value, referent: list[str], found: list[Value],
                    sentences: Sentences) -> bool:
    """Whether a value of a state stands beside a word of its referent: within NEAR_WORDS words of
    it, in its clause, with no other value between (a value moved to another name does not)."""
    left, right = sentences.bounds(value.start, value.end)
    for other in found:                                  # another value bounds the window
        if other.end <= value.start:
            left = max(left, other.end)
        elif other.start >= value.end:
            right = min(right, other.start)
    before = re.split(r"[;,|\n]", state[left:value.start])[-1]
    after = re.split(r"[;,|\n]", state[value.end:right])[0]
    words = re.findall(r"[A-Za-z][A-Za-z-]+", before.replace("_", " "))[-NEAR_WORDS:] + \
        re.findall(r"[A-Za-z][A-Za-z-]+", after.replace("_", " "))[:NEAR_WORDS]
    return bool({stem(w.lower()) for w in words} & set(referent))


def judge_values(facts: list[dict], state: str, prompt: str = "") -> list[dict]:
    """Each fact of the session in a state: kept (one of the session's spellings written as a whole
    value of the state), reformatted (the same value written otherwise), former (a fact the session
    itself replaced, kept or reformatted: the state keeps it, as it should, apart from the current
    one), changed (the closest value of its kind in the state that neither the session nor the
    regime's own prompt gives and that reads as it with a small change, or the value it replaced
    given as current, or a small number counting what it counted), or dropped; with, for a kept,
    reformatted or former value, whether it stands beside its referent. A number that spells two
    facts (`a limit of 7 and 7 workers`) is kept for the one whose own words it stands with (one
    fact per referent)."""
    found = state_values(state or "")
    sentences = Sentences(state or "")
    by_text: dict[str, list[Value]] = collections.defaultdict(list)
    by_key: dict[tuple, list[Value]] = collections.defaultdict(list)
    for value in found:
        by_text[value.text].append(value)
        by_key[value_key(value)].append(value)
    given = {value_key(Value(f["kind"], form, 0, 0)) for f in facts for form in [f["text"],
        *f["forms"]]}
    given |= {value_key(v) for v in extract_values(prompt)}
    novel = collections.defaultdict(list)
    for value in found:
        if value_key(value) not in given:
            novel[value.kind].append(value)
    spelled = collections.Counter(value_key(Value(f["kind"], f["text"], 0, 0)) for f in facts)
    out = []
    for fact in facts:
        spellings = [fact["text"], *fact["forms"]]
        kept = [v for form in spellings for v in by_text.get(form, ())]
        same = [v for form in spellings for v in by_key.get(value_key(Value(fact["kind"], form, 0,
            0)), ())]
        if fact.get("own") and spelled[value_key(Value(fact["kind"], fact["text"], 0, 0))] > 1:
            kept, same = ([v for v in held if set(fact["own"]) & own_words(
                state, v.start, v.end, sentences)] for held in (kept, same))
        status, at = ("kept", kept) if kept else ("reformatted", same) if same else ("dropped", [])
        if at and not fact["current"]:
            status = "former"
        if not at:
            stale = [v for f in facts if f.get("replaced_by") == fact["id"] for form in
                     [f["text"], *f["forms"]] for v in by_key.get(value_key(Value(
                         f["kind"], form, 0, 0)), ()) if not given_as_former(state, v)]
            norm = normalize_value(fact["kind"], fact["text"])
            close = [(edit_distance(norm, normalize_value(v.kind, v.text), 8), v.start,
                      v) for v in novel[fact["kind"]]
                     if is_close(fact["kind"], norm, normalize_value(v.kind, v.text))]
            # a small number is told by what it counts: another one counting the same thing
            counting = [v for v in novel[fact["kind"]] if fact.get("own") and set(fact["own"]) &
                        own_words(state, v.start, v.end, sentences)]
            if stale and fact["current"]:
                status, at = "changed", stale[:1]
            elif close or counting:
                status, at = "changed", [min(close)[2]] if close else counting[:1]
        beside = None
        if at and status != "changed" and fact["referent"]:
            beside = any(beside_referent(state, v, fact["referent"], found, sentences) for v in at)
        out.append({"id": fact["id"], "status": status, "beside": beside,
                    "instead": None if status in ("kept", "dropped", "former") else at[0].text,
                    "state_sentence": sentences.around(at[0].start, at[0].end) if at else None})
    return out


def state_values(state: str) -> list[Value]:
    """The values of a state, a number written with a spaced percent sign (`85 %`) read with it, and
    a time written with a stop before am or pm (`10.30 am`) read as a time."""
    out = []
    for value in extract_values(state):
        if value.kind == "number" and re.match(r"[ \u00a0]%", state[value.end:value.end + 2]):
            value = Value("number", state[value.start:value.end + 2], value.start, value.end + 2)
        elif value.kind == "number" and re.fullmatch(r"\d{1,2}\.[0-5]\d", value.text):
            half = TIME_HALF.match(state, value.end)
            if half:
                value = Value("time", state[value.start:half.end()], value.start, half.end())
        out.append(value)
    return out


TIME_HALF = re.compile(r"\s?[AaPp]\.?[Mm]\b\.?")


def given_as_former(state: str, value: Value) -> bool:
    """Whether a state writes a value as a former one (`from 8080 to 9090`, `not v1`, `(was
    14:00)`)."""
    return superseded(state, value.start, value.end) or bool(
        FORMER_MARK.search(state[max(0, value.start - 24):value.start])) or bool(
        re.match(r"\s*\((?:was|old|former)", state[value.end:value.end + 12]))


def judge_instructions(instructions: list[dict], units: list[str], state: str,
                       written: bool = True) -> list[dict]:
    """Each standing instruction still in force: contradicted (a sentence of a written state says
    the opposite: a prohibition stated, planned or granted as done, the order lifted), present
    (every key term in the state: the terms are present, which is not proof the meaning is), or
    absent. A withdrawn instruction is not judged. The transcript's own turns kept verbatim (a
    Recent-k regime) state nothing: an attempted push to main there is what happened, not a claim,
    so they are never read as contradicting."""
    out = []
    for instruction in instructions:
        if instruction.get("revoked_turn"):
            continue
        against = next((u for u in units if contradicts(u, instruction["text"])),
                       None) if written else None
        if against is not None:
            out.append({"id": instruction["id"], "status": "contradicted",
                        "state_sentence": against[:240]})
            continue
        present = carries_instruction(state or "", instruction["key_terms"])
        term = instruction["key_terms"][:1]
        where = next((u for u in units if carries_instruction(u, term)), None) if present else None
        out.append({"id": instruction["id"], "status": "present" if present else "absent",
                    "state_sentence": where[:240] if where else None})
    return out


def judge_steps(steps: list[dict], units: list[str]) -> list[dict]:
    """Each step still failed or denied: claimed done (a sentence that names it says it was done,
    passed, sent ..., and reports no failure), reported (a sentence that names it says it failed,
    was denied, refused, not done), or absent (never named, or named without its outcome). A
    sentence names a step by its match terms, and not where it gives another value of the same kind
    in their place (claims.names_item)."""
    out = []
    for step in steps:
        if step["status"] == "done":
            continue
        naming = [u for u in units if any(names_item(u, m) for m in step["match"])]
        done = next((u for u in naming if claim(u, True) and not says_not_done(u)), None)
        told = next((u for u in naming if reports_failure(u)), None)
        status, where = ("claimed done", done) if done else ("reported",
                                                             told) if told else ("absent", None)
        out.append({"id": step["id"], "status": status, "state_sentence": where[:240] if where
                    else None})
    return out


def judge_state(truth: dict, state: str, prompt: str = "", written: bool = True) -> dict:
    """A state against the ground truth of its transcript: per value, instruction in force and step
    still failed or denied, its status and the state's sentence where there is one (the transcript's
    sentence is the item's own). prompt: the regime's own prompt text, whose values (a word limit)
    are no change of the session's; written: False for the transcript's last turns kept verbatim,
    which claim nothing."""
    units = state_units(state)
    return {"values": judge_values(truth["values"], state, prompt),
            "instructions": judge_instructions(truth["instructions"], units, state, written),
            "steps": judge_steps(truth["steps"], units)}
