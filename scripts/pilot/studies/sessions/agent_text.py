"""XR-S1, what a program printed and what an agent said it would do, read for the needed items
(needed.py; protocol/SESSIONS.md, the amendment of 2026-12-06 (21)):

    run_of(command) -> a shell command without what only shapes its output (`2>&1`, `| tail -40`)
    failure_lines(text, limit) -> the lines of a failed call's output that say what failed
    superseded_runs_dropped(items) -> unresolved failures less those a later failed run of the same
        command or the same kinds of check superseded (the last run says what still fails)
    machine_text(sentence) -> whether a sentence of a user's message is a program's pasted text
    intents(sentences) -> the sentences of an agent's text that say what it is about to do
    claims_done(sentence) -> whether a summary's sentence reports a change made
    ABOUT_SUMMARY: the words of a compaction's own request (an order about the summary is no
        invention: it is what made the summary)

Pure functions of text (and of needed.py's item records, for the runs superseded): no model, no
file, no clock.
"""
from __future__ import annotations

import re

from ...rules.claims import terms

# what only shapes a shell command's output (the amendment of 2026-12-06 (21)): `2>&1`, a pipe into
# a pager or a filter; `go test ./... 2>&1 | tail -40` runs the same check as `go test ./...`
OUTPUT_SHAPING = re.compile(r"\s*2>&1|\s*\|\s*(?:head|tail|grep|rg|less|more|tee|sort|uniq|wc|cut|"
                            r"sed|awk|jq|column)\b[^|;&]*")

# a line of a failed call's output that says what failed: a test marked failed, an error, an
# assertion's expected and actual values, a thing not found or not known
FAILURE_LINE = re.compile(
    r"^\s*(?:---\s*FAIL\b|FAIL(?:ED)?\b|ERROR\b|E\s{2,}\S|panic:|(?:\w+)?Error:|error(?:\[\w+\])?:|"
    r"fatal:|\u2717|\u2715|\u00d7\s)|"
    r"\b(?:expected\b.{0,80}\b(?:got|but|received|actual)|want(?:ed)?\b.{0,80}\bgot)\b|"
    r"\b(?:not found|no such file|unknown (?:command|flag|option|shorthand)|undefined:|"
    r"cannot find|does not exist)\b", re.IGNORECASE)
# ... but a package's or a run's closing verdict (`FAIL`, `FAIL  pkg  0.3s`) only where nothing else
RUN_VERDICT = re.compile(r"^\s*FAIL(?:ED)?(?:\s+\S+(?:\s+(?:\[build failed\]|[\d.]+m?s))?)?\s*$")
FAILURE_LINES = 12                      # at most this many such lines beside a failure's row

# the agent's words for what it is about to do (intents), and what only looks
INTENT = re.compile(r"^(?:(?:now|next|then|first),?\s+)?(?:let me|let's|i need to|i'll|i will|"
                    r"i still need to|(?:we |i )?(?:still )?need to|i'm going to|i am going to)\b",
                    re.IGNORECASE)
LOOKING = re.compile(r"^(?:check|read|look|see|verify|view|inspect|examine|find|search|explore|"
                     r"understand|review|run|test|confirm|investigate|get|open|start|try|trace|"
                     r"take a look|provide|summari[sz]e|explain|show|walk|think|figure|analy[sz]e|"
                     r"debug|compare|wait)\b", re.IGNORECASE)
MAX_INTENTS = 3
STILL_TO_MAKE = re.compile(r"\b(?:need|needs|pending|todo|next|remaining|still|in progress|"
                           r"about to|will|plan(?:ned|s)? to)\b", re.IGNORECASE)
CHANGE_DONE = re.compile(r"\b(?:added|updated|fixed|removed|implemented|created|changed|"
                         r"converted|replaced|wrote|written|committed|pushed|merged|applied)\b",
                         re.IGNORECASE)

# what the compaction itself is: an order about it is the request that made this summary
ABOUT_SUMMARY = re.compile(r"\b(?:summary|summari[sz](?:e|es|ed|ing)|compact(?:ion|ed|ing)?)\b",
                           re.IGNORECASE)

# a program's text pasted into a user's message (machine_text)
LOG_LINE = re.compile(r"^\W*(?:\d{4}-\d{2}-\d{2}\b|\d{1,2}:\d{2}:\d{2}\b|"
                      r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+\d{1,2}\s+"
                      r"\d{1,2}:\d{2}|"
                      r"(?:DEBUG|INFO|WARN(?:ING)?|ERROR|TRACE)\b\s*[:\]|-])|"
                      r".*\|(?:DEBU|INFO|WARN|ERRO|TRAC)\|")
FIELD_LINE = re.compile(r"^\s*\"?[\w.-]+\"?\s*[:=]\s*(?:\"[^\"]*\"|-?\d[\d.]*|true|false|null|"
                        r"None|True|False)\s*[,;]?\s*$")
PROGRESS_LINE = re.compile(r"^(?:[A-Z][a-z]+ing)\b[^.?!]{0,80}(?:\s\[?/|\bat:?\s+/)")
LABEL_ONLY = re.compile(r"^[\w' -]{1,40}:\s*$")
FAILURE_LINE_CHARS = 160


def run_of(command: str) -> str:
    """A shell command without what only shapes its output (OUTPUT_SHAPING)."""
    return re.sub(r"\s+", " ", OUTPUT_SHAPING.sub("", command or "")).strip()


def failure_lines(text: str) -> list[str]:
    """The lines of a failed call's output that say what failed (FAILURE_LINE), each once, at most
    FAILURE_LINES of them, each cut to FAILURE_LINE_CHARS."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line and FAILURE_LINE.search(line) and line[:FAILURE_LINE_CHARS] not in out:
            out.append(line[:FAILURE_LINE_CHARS])
    said = [line for line in out if not RUN_VERDICT.match(line)]
    return (said or out)[:FAILURE_LINES]


def superseded_runs_dropped(items: list[dict]) -> list[dict]:
    """The unresolved failures less each a later failed run superseded: the same command (output
    shaping aside), or the same kinds of check (the tests run again and failing again: the last run
    says what still fails). A run the same command superseded (shown through another pager or
    filter) gives the last one the failures it printed that the last one does not."""
    out = []
    for n, item in enumerate(items):
        later = [o for o in items[n + 1:] if o["category"] == "unresolved_error"]
        if item["category"] != "unresolved_error":
            out.append(item)
            continue
        same = next((o for o in later if item["run"] and o["run"] == item["run"]), None)
        if same is not None:
            lines = item["source"].splitlines()[1:]
            same["earlier_lines"] = same.get("earlier_lines", []) + lines
        if same is not None or any(item["checks"] and o["checks"] == item["checks"]
                                   for o in later):
            continue
        out.append(item)
    for item in out:
        extra = [line for line in item.pop("earlier_lines", [])
                 if line not in item["source"].splitlines()]
        if extra:
            item["source"] += "\n" + "\n".join(extra[:FAILURE_LINES])
            item["text"] += " / " + " / ".join(extra[:FAILURE_LINES])
    return out


def machine_text(sentence: str) -> bool:
    """Whether a sentence of a user's message is a program's text the user pasted, not words the
    user wrote (the amendment of 2026-12-06 (21)): a log line (a time or date first, a level
    marker), a line of code or data (a field given a value), a program's report of what it is
    doing to a path, or a label that closes with its colon."""
    line = sentence.strip()
    return bool(LOG_LINE.match(line) or FIELD_LINE.match(line) or PROGRESS_LINE.match(line)
                or LABEL_ONLY.match(line))


def intents(sentences: list[str]) -> list[str]:
    """The sentences that say what the agent is about to do (INTENT: "Let me fix ...", "Next I
    need to ..."), at most MAX_INTENTS: not one that only looks (check, read, verify ...), nor one
    that closes with a colon (the calls that follow it carry it out), nor one of fewer than three
    content words."""
    out = []
    for sentence in (s.strip() for s in sentences):
        said = INTENT.match(sentence)
        if said and not LOOKING.match(sentence[said.end():].lstrip()) and \
                not sentence.endswith(":") and len(terms(sentence)) >= 3:
            out.append(sentence)
    return out[:MAX_INTENTS]


def claims_done(sentence: str) -> bool:
    """Whether a sentence reports a change made (CHANGE_DONE), not one still to make."""
    return bool(CHANGE_DONE.search(sentence)) and not STILL_TO_MAKE.search(sentence)
