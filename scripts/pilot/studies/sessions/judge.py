"""XR-S1's judge (issue 44; protocol/SESSIONS.md, the amendment of 2026-12-06 on the judge): a model
on the user's own server that decides what the rules cannot, whether a needed item the rules found
(a request, a standing instruction, a decision, an open task) is kept, lost or stated otherwise in a
summary. The rules still find every item and judge every other category; the judge is asked one
short question per item, through the same backends as a run, each call journalled the moment it
returns (cached_calls.py).

    read_judge_prompt(path) -> JudgePrompt: the question, a file the user may replace
    judge_request(prompt, model, summary, category, item) -> the ChatRequest of one item
    read_verdict(reply) -> "kept" | "lost" | "wrong", or JudgeReplyUnreadable (never a guess)
    kept_probability(token_choices) -> P(KEPT) among the three verdicts, where the server said
    verdict_of(reply, token_choices, threshold) -> (status, P(KEPT) or None)
    Judge(...).decide(summary, category, item) -> one item's judgement, from the journal or a call

The pure parts read no file and call nothing; Judge holds the backend and the journal.
"""
from __future__ import annotations

import dataclasses
import math
import re
import threading
from pathlib import Path

from ...cached_calls import CallCache, call_key, send
from ...records import CALL_SEED, ChatRequest, PilotError, sha256_text, utc_now
from ...runner import RetryPolicy

# the categories the judge decides (needed.CATEGORIES); values, files changed and failures stay the
# rules' (the feasibility check of issue 44: the judge was worse than the rules on exact values)
JUDGED = ("request", "instruction", "decision", "open_task")

# what the question calls each category
CATEGORY_WORDS = {"request": "something the user asked for",
                  "instruction": "a standing instruction the user gave",
                  "decision": "a decision or finding reached in the work",
                  "open_task": "a task that was not yet done",
                  # judge-check's snippets: one sentence of a summary against its history
                  "stated otherwise": "the exchange below, which the summary's one sentence "
                                      "reports on"}

# the answer words and the statuses they stand for
VERDICTS = {"KEPT": "kept", "LOST": "lost", "CHANGED": "wrong"}

PROMPT_FILE = Path(__file__).resolve().parents[4] / "tasks" / "sessions" / "judge-prompt.txt"
PLACES = ("summary", "category", "item")
PLACE = re.compile(r"\{(\w+)\}")
MAX_PROMPT_CHARS = 20_000

# a summary longer than this is not judged (the judge would read part of it, and call the rest lost)
MAX_SUMMARY_CHARS = 48_000
MAX_ITEM_CHARS = 1_000       # the gate's labelled snippets' histories fit
JUDGE_CONTEXT_WINDOW = 16_384
JUDGE_OUTPUT_TOKENS = 8
JUDGE_TOP_LOGPROBS = 5

# P(KEPT) at or above which an item is kept; judge-check chooses one on the dev labels only
DEFAULT_THRESHOLD = 0.5

# the first word of a reply, past spaces, quotes and emphasis; or a line "VERDICT: word"
FIRST_WORD = re.compile(r"^[\s*_`'\"\[(]*(?:(?:verdict|answer)\s*:\s*[\s*_`'\"]*)?([A-Za-z]+)",
                        re.IGNORECASE)
VERDICT_LINE = re.compile(r"^\W*(?:verdict|answer)\W*:\W*([A-Za-z]+)", re.IGNORECASE | re.MULTILINE)


class JudgeInputError(PilotError):
    """A judge prompt file that cannot be used."""


class JudgeReplyUnreadable(Exception):
    """A reply that gives no verdict: the item keeps the rules' status, and the report says so."""


@dataclasses.dataclass(frozen=True)
class JudgePrompt:
    text: str
    sha256: str
    shown: str                          # the file's name as the user gave it


def read_judge_prompt(path: Path | None = None) -> JudgePrompt:
    """The judge's question: UTF-8 text holding {summary}, {category} and {item} once each, and no
    other {name}; the default is tasks/sessions/judge-prompt.txt."""
    # the default named as the repository holds it, not by this machine's absolute path
    shown = str(path) if path else "tasks/sessions/judge-prompt.txt"
    path = Path(path) if path else PROMPT_FILE
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise JudgeInputError(f"--judge-prompt {shown} is not a plain file (links are never "
                              "followed); give the file itself")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise JudgeInputError(f"--judge-prompt {shown} does not exist; give a text file with "
                              "{summary}, {category} and {item}, or leave the option out for "
                              "tasks/sessions/judge-prompt.txt") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise JudgeInputError(f"--judge-prompt {shown} is not UTF-8 text; save it as UTF-8") \
            from None
    if len(text) > MAX_PROMPT_CHARS:
        raise JudgeInputError(f"--judge-prompt {shown} has {len(text):,} characters, more than a "
                              f"question needs ({MAX_PROMPT_CHARS:,} at most); shorten it")
    found = PLACE.findall(text)
    unknown = sorted({name for name in found if name not in PLACES})
    missing = [name for name in PLACES if found.count(name) != 1]
    if unknown or missing:
        what = (f"names {{{unknown[0]}}}, which is none of" if unknown else
                f"must hold {{{missing[0]}}} exactly once, like each of")
        raise JudgeInputError(f"--judge-prompt {shown} {what} {{summary}}, {{category}} and "
                              "{item}; write each once where the question needs it")
    return JudgePrompt(text=text, sha256=sha256_text(text), shown=shown)


def judge_request(prompt: JudgePrompt, model: str, summary: str, category: str,
                  item: str) -> ChatRequest:
    """One item's question: the prompt with its three places filled in one pass (a summary that
    holds "{item}" is text, not a place). Temperature 0 and the pre-registered seed."""
    values = {"summary": summary, "category": CATEGORY_WORDS.get(category, category),
              "item": item[:MAX_ITEM_CHARS]}
    text = PLACE.sub(lambda m: values.get(m.group(1), m.group(0)), prompt.text)
    return ChatRequest(model=model, messages=({"role": "user", "content": text},),
                       max_output_tokens=JUDGE_OUTPUT_TOKENS,
                       context_window=JUDGE_CONTEXT_WINDOW, temperature=0.0, seed=CALL_SEED,
                       thinking_off=True, top_logprobs=JUDGE_TOP_LOGPROBS)


def read_verdict(reply: str) -> str:
    """KEPT, LOST or CHANGED as the reply's first word (past quotes and emphasis, in any case), or
    on a line "VERDICT: ..." or "ANSWER: ..."; anything else is unreadable, never guessed."""
    for match in (FIRST_WORD.match(reply), *reversed(list(VERDICT_LINE.finditer(reply)))):
        if match and match.group(1).upper() in VERDICTS:
            return VERDICTS[match.group(1).upper()]
    shown = " ".join(reply.split())[:60] or "(empty)"
    raise JudgeReplyUnreadable(f"no KEPT, LOST or CHANGED in the reply: {shown!r}")


def kept_probability(token_choices) -> float | None:
    """P(KEPT) among the three answer words, read at the reply's first position whose chosen token
    is not blank or punctuation: each alternative counts for the word it can begin. None where the
    server gave no alternatives or none of them begins an answer word."""
    for chosen, alternatives in token_choices:
        if not re.sub(r"[\W_]+", "", chosen):
            continue
        mass = dict.fromkeys(VERDICTS, 0.0)
        for token, logprob in alternatives:
            piece = re.sub(r"[\W_]+", "", token).upper()
            for word in VERDICTS:
                if piece and word.startswith(piece):
                    mass[word] += math.exp(logprob)
        total = sum(mass.values())
        return mass["KEPT"] / total if total > 0 else None
    return None


def verdict_of(reply: str, token_choices, threshold: float) -> tuple[str, float | None]:
    """The item's status: kept where P(KEPT) reaches the threshold, else the reply's word if it is
    LOST or CHANGED, else the likelier of those two; the reply's word alone where the server gave
    no probabilities. Raises JudgeReplyUnreadable on a reply with no answer word."""
    said = read_verdict(reply)
    p_kept = kept_probability(token_choices)
    if p_kept is None:
        return said, None
    if p_kept >= threshold:
        return "kept", p_kept
    if said != "kept":
        return said, p_kept
    return ("wrong" if changed_likelier(token_choices) else "lost"), p_kept


def changed_likelier(token_choices) -> bool:
    for chosen, alternatives in token_choices:
        if re.sub(r"[\W_]+", "", chosen):
            mass = {"LOST": 0.0, "CHANGED": 0.0}
            for token, logprob in alternatives:
                piece = re.sub(r"[\W_]+", "", token).upper()
                for word in mass:
                    if piece and word.startswith(piece):
                        mass[word] += math.exp(logprob)
            return mass["CHANGED"] > mass["LOST"]
    return False


class Judge:
    """The judge of one command: a backend that passed its preflight, the model's identity as the
    server described it, the prompt, the threshold and the journal. decide() answers from the
    journal where the same call was made before, and otherwise sends it and writes it down before
    returning."""

    def __init__(self, backend, model: str, identity: dict, prompt: JudgePrompt,
                 cache: CallCache, policy: RetryPolicy, threshold: float = DEFAULT_THRESHOLD,
                 stop: threading.Event | None = None):
        self.backend, self.model, self.identity = backend, model, identity
        self.prompt, self.cache, self.policy, self.threshold = prompt, cache, policy, threshold
        self.stop = stop
        self.sent = self.reused = 0

    def decide(self, summary: str, category: str, item: str, item_id: str = "") -> dict:
        """{status, p_kept, judged_by, reply}: judged_by is "judge", or says why the rules' status
        stands (a summary too long for the judge, a reply it could not read)."""
        if len(summary) > MAX_SUMMARY_CHARS:
            return {"status": None, "p_kept": None, "reply": None,
                    "judged_by": f"rules (summary over {MAX_SUMMARY_CHARS:,} characters)"}
        request = judge_request(self.prompt, self.model, summary, category, item)
        key = call_key(self.identity, request)
        record = self.cache.get(key)
        if record is None:
            response, attempts, seconds = send(self.backend, request, self.policy, self.stop)
            record = {"key": key, "written_at": utc_now(), "model": self.model,
                      "prompt_sha256": self.prompt.sha256, "item_id": item_id,
                      "category": category, "reply": response.text,
                      "token_choices": [[t, [list(a) for a in alts]]
                                        for t, alts in response.token_choices],
                      "prompt_tokens": response.prompt_tokens,
                      "output_tokens": response.output_tokens,
                      "seconds": round(seconds, 3), "attempts": attempts}
            self.cache.add(record)
            self.sent += 1
        else:
            self.reused += 1
        return judgement(record, self.threshold)


def judgement(record: dict, threshold: float) -> dict:
    """A journalled call read as a judgement (the threshold is applied here, so judge-check can
    choose one from calls already made)."""
    reply = record.get("reply") if isinstance(record.get("reply"), str) else ""
    choices = journalled_choices(record.get("token_choices"))
    try:
        status, p_kept = verdict_of(reply, choices, threshold)
    except JudgeReplyUnreadable as err:
        return {"status": None, "p_kept": None, "reply": reply,
                "judged_by": f"rules (the judge's reply could not be read: {err})"}
    return {"status": status, "p_kept": p_kept, "reply": reply, "judged_by": "judge"}


def journalled_choices(value) -> tuple:
    """token_choices as the journal holds them ([[token, [[alt, logprob], ...]], ...]), with
    anything a hand-edited or torn journal could hold read as none."""
    if not isinstance(value, list):
        return ()
    out = []
    for position in value:
        if not (isinstance(position, list) and len(position) == 2 and isinstance(position[0], str)
                and isinstance(position[1], list)):
            return ()
        alternatives = tuple((a[0], float(a[1])) for a in position[1]
                             if isinstance(a, list) and len(a) == 2 and isinstance(a[0], str)
                             and isinstance(a[1], (int, float)) and not isinstance(a[1], bool)
                             and -1e9 < a[1] <= 0.0)
        out.append((position[0], alternatives))
    return tuple(out)

