"""XR-S1, the failed and denied steps of a transcript (protocol/SESSIONS.md section 3.3): each
tool result's outcome (denied by the user or the harness, failed, or ok) and each call that failed
or was denied, with whether a later call of the same tool resolved it and how a state may name it.
The ground truth (truth.py) holds these steps beside the values and the instructions.

Pure functions of text: no model, no file, no clock; one pass over the calls, linear in the
session's length."""
from __future__ import annotations

import collections
import functools
import json
import re
from typing import Any

from ...rules.spellings import normalize_value
from ...rules.values import extract_values, folded


# Denied: the user or the harness refused the call (permission not granted, a declined or rejected
# call, a deny rule,
# a policy or sandbox block, a human approver's no). A refusal by the operating system or a remote
# service (a file's
# `Permission denied`, HTTP 403, AccessDenied, branch protection) is a failure of the call, not a
# denial: amendment
# of 2026-12-03 in SESSIONS.md.
class Alternatives:
    """A pattern written as its alternatives, each with the lower-case strings of which a text holds
    one wherever that alternative can match (None: no such string). search(text) says whether the
    whole pattern matches anywhere in text, as `pattern.search` would, running only the alternatives
    whose strings the text holds in lower case (outside ASCII with values.folded: a letter such as
    the dotless i matches `i`)."""

    def __init__(self, alternatives: list[tuple[tuple[str, ...] | None, str]], flags: int):
        self.pattern = re.compile("|".join(alternative for _, alternative in alternatives), flags)
        self.alternatives = [(needs, re.compile(alternative, flags)) for needs,
                             alternative in alternatives]

    def search(self, text: str) -> bool:
        lower = text.lower() if text.isascii() else folded(text)
        return any(pattern.search(text) for needs, pattern in self.alternatives
                   if needs is None or any(need in lower for need in needs))


DENIED = Alternatives([
    (("requested permission",), r"requested permissions? to use"),
    (("not granted", "haven't granted", "has not granted"), r"haven't granted|has not granted|"
                                                            r"permission (?:was )?not granted"),
    (("user ",), r"\buser (?:declined|rejected|denied|refused|did not allow|didn't allow|doesn't "
                 r"want to proceed|chose not)"),
    (("you ",), r"\byou (?:declined|rejected|denied|chose: ?don't)"),
    (("rejected this",), r"\brejected this (?:edit|change|call|tool)"),
    (("did not allow", "not allowed in", "turned off for"), r"\bdid not allow\b|\bnot allowed in "
     r"the current session\b|"
                                                            r"\bturned off for this agent\b"),
    ((" by",), r"\b(?:blocked|denied|disallowed) by (?:the |your |a |this )?(?:\w+ "
               r")?(?:policy|hook|settings|sandbox|administrator|harness)"),
    # plan mode refuses only where the message says so: "User has approved exiting plan mode" and
    # "Entered plan mode" are the mode's own notices, no refusal
    (("deny rule", "plan mode", "hook "), r"\bdeny rule\b|\bplan mode is (?:on|active|enabled)\b|"
     r"\b(?:not (?:allowed|available|permitted)|disabled|blocked) (?:in|during|while in) plan "
     r"mode\b|\bhook (?:blocked|denied|refused)"),
    (("declined", "denied"), r"\bapproval request [\w-]+ was declined\b|\bwas declined by\b|"
                             r"\bapproval (?:was )?(?:denied|declined)\b"),
    (("not run:", "not permitted by"), r"^not run:|\bnot permitted by (?:the "
     r")?(?:settings|harness|policy|user)"),
], re.IGNORECASE | re.MULTILINE)

FAILED = Alternatives(
    [
        (
            None,
            r"^\s*(?:error|fatal|exception|failed|failure|panic)\b\s*[:!\[(]|^\s*[\w.]*(?:Error|"
            r"Exception)\b:",
        ),
        (
            ("traceback (most recent call last)", "npm err!"),
            r"Traceback \(most recent call " r"last\)|\bnpm ERR!",
        ),
        (
            ("fail", "error"),
            r"\b[1-9]\d* (?:failed|errors?|failures?)\b|\b[1-9]\d* of \d+ \w+ failed\b|"
            r"\b[1-9]\d* Error\(s\)|(?-i:\bFAILED\b|\bFAIL\b)",
        ),
        (
            ("exit",),
            r"\bexit(?:ed)?(?: with)?(?: code| status)?[ :=]+[1-9]\d*\b|\bexit code:? "
            r"[1-9]|\bnon-zero exit\b",
        ),
        (
            ("command not found", "no such file or directory", "timed out", "etimedout"),
            r"\bcommand not found\b|No such file or directory|\btimed out\b|\bETIMEDOUT\b",
        ),
        (
            ("segmentation fault", "core dumped", "out of memory", "killed", "connection refused"),
            r"\bSegmentation fault\b|\bcore dumped\b|\bout of "
            r"memory\b|\bOOMKilled\b|\bKilled\b|\bConnection refused\b",
        ),
        (("http",), r"\bHTTP(?:/[\d.]+)? [45]\d\d\b"),
        (
            (" bad", " not", " internal", " forbidden", " unauthorized", " service", " gateway"),
            r"\b[45]\d\d (?:Bad|Not|Internal|Forbidden|Unauthorized|Service|Gateway)\b",
        ),
        (
            ('"status"', '"state"', '"ok"', '"success"', '"error"'),
            r"\"(?:status|state)\":\s*\"(?:error|failed|failure)\"|\"(?:ok|success)\":\s*false|"
            r"^\s*\{\s*\"error\":",
        ),
        (
            ("denied", "forbidden", "authentication failed"),
            r"\bpermission denied\b|\baccess "
            r"?denied\b|\bAccessDenied\b|\bforbidden\b|\bauthentication failed\b",
        ),
        (
            ("did not match any", "does not exist", "not found", "already exists", "conflict"),
            r"\bdid not match any\b|\bdoes not exist\b|\bnot found\b|\balready "
            r"exists\b|\bCONFLICT\b|\bconflict\b",
        ),
        (
            ("remote rejected", "protected branch", "permission to ", "hook failed"),
            r"\bremote rejected\b|\bprotected branch\b|\bpermission to \S+ denied\b|"
            r"\bhook failed\b",
        ),
        (("error",), r"\berror\s*(?:code\s*)?[:=]?\s*[1-9]\d*\b"),
        (
            ("could not", "couldn't", "cannot", "can't", "unable to"),
            r"\b(?:could " r"not|couldn't|cannot|can't|unable to) \w+",
        ),
        (
            ('"fail', '"error', '"num_fail'),
            r"\"(?:failed|failures|failing|errors|num_failed|failed_tests)\":"
            r"\s*(?:[1-9]|\[\s*[{\"])",
        ),
        (
            ("syntax error", "not been applied", "not applied"),
            r"\bhas introduced new syntax error|\b(?:changes|edit) (?:have|has|was|were) "
            r"NOT been applied\b|\bedit (?:was|were) not applied\b",
        ),
        (
            ("upload failed", "integrity checksum failed"),
            r"\bupload failed\b|\bintegrity checksum " r"failed\b",
        ),
    ],
    re.IGNORECASE | re.MULTILINE,
)


# Tools that return what they read (a file, a page, a listing, search hits) or what the user
# answered (Claude Code's AskUserQuestion, Cline's ask_followup_question): failure words there
# are content. Cline's, Gemini CLI's and Codex's read_file, SWE-agent's open, goto and scroll,
# browser tools (amendment of 2026-12-06).
CONTENT_TOOLS = re.compile(
    r"^(?:read\w*|webfetch|web_fetch|websearch|\w*web_search|grep\w*|glob|ls|fetch\w*|"
    r"search\w*|get_\w+|lookup\w*|find\w*|list\w*|query\w*|view\w*|open\w*|goto|scroll_\w+|"
    r"web_browser\w*|browser\w*|\w*planmode|cat|task|agent|ask\w*|disassemble|decompile)$",
    re.IGNORECASE,
)

# A command that only reads: its first word a reading program, or a subcommand that shows (a log,
# a status, a listing, a view): `tail build.log` and `ci logs 4121` alike. Each part of a command
# joined by `&&`, `;` or `||` reads (a `cd` or `export` aside), and each pipeline starts with a
# read.
READING_PROGRAMS = frozenset("cat head tail less more grep egrep rg ag find ls tree journalctl "
                             "echo awk wc stat file nl bat jq printf pwd view strings xxd hexdump "
                             "od".split())

READING_SUBCOMMANDS = frozenset("log logs show view cat describe get status list ls diff blame "
                                "tail".split())

SHELL_WRAPPER = re.compile(r"^\s*(?:(?:/usr)?/bin/)?(?:ba|z|da)?sh\s+-l?c\s+")

ENV_OR_SUDO = re.compile(r"^(?:\w+=\S*\s+|sudo\s+|timeout\s+\S+\s+|time\s+|command\s+)+")


def reading_command(command: str) -> bool:
    """Whether a shell command only reads (section 3.3: what it returns is content)."""
    command = SHELL_WRAPPER.sub("", command or "").strip().strip("'\"")
    parts = [p.strip() for p in re.split(r"&&|\|\||;|\n", command) if p.strip()]
    acting = [p for p in parts if not re.match(r"^(?:cd|export|set|source|\.)\b", p)]
    if not acting:
        return False
    for part in acting:
        words = ENV_OR_SUDO.sub("", part.split("|")[0].strip()).split()
        if not words:
            return False
        program = words[0].rsplit("/", 1)[-1]
        if program == "sed" and "-n" in words[1:3] or shows_help(words):
            continue
        if program in READING_PROGRAMS:
            continue
        subcommands = [w for w in words[1:4] if not w.startswith("-")][:2]
        if not set(subcommands) & READING_SUBCOMMANDS:
            return False
    return True


def shows_help(words: list[str]) -> bool:
    """A command that only prints its usage (`tool --help`), not one whose quoted text says it."""
    return "--help" in words and not any(q in part for part in words for q in "\"'")


def call_command(arguments: Any) -> str:
    """A call's command-like argument (command, cmd, query, code ...), '' when it has none; a
    command given as a list of words (Codex's shell tool) is joined, a `bash -lc` wrapper
    dropped."""
    if not isinstance(arguments, dict):
        return ""
    for key, value in arguments.items():
        if key not in ("command", "cmd", "query", "sql", "code", "script"):
            continue
        if isinstance(value, str):
            return value
        if isinstance(value, list) and value and all(isinstance(w, str) for w in value):
            if len(value) >= 3 and re.match(r"^(?:\S*/)?(?:ba|z|da)?sh$", value[0]) and \
                    value[1] in ("-c", "-lc"):
                return value[2]
            return " ".join(value)
    return ""


# A file's lines as a tool shows them (`  12→`, `12:`, `12 | `, cat -n's tab) and the blocks in
# which a tool returns a file it wrote or read (Cline's <final_file_content>): content, whatever
# words they hold (amendment of 2026-12-06).
FILE_VIEW_LINE = re.compile(r"^[ \t]*\d+(?:→|\t|:(?!\d)| \| ).*$", re.MULTILINE)

FILE_BLOCK = re.compile(r"<(final_file_content|file_content)\b[^>]*>.*?</\1>", re.DOTALL)

# Cline's list of the editor's problems in a file it has just saved: the saved code's, not the
# save's (amendment of 2026-12-06 (8)).
SAVED_FILE_PROBLEMS = re.compile(r"^New problems detected after saving the file:.*", re.MULTILINE |
                                 re.DOTALL)

# Lines that say nothing failed: `Error: (none)` (Gemini CLI's shell result), `Failed: 0`,
# `0 failed`, `no errors`; and a warning (`Warning: ...`, `[tool] Warning: ...`), which does not
# stop a run (amendment of 2026-12-06 (8)).
NOTHING_FAILED = re.compile(
    r"^Command timed out after \d+ seconds\. Running in background\.|"
    r"^[ \t]*(?:\[[^\]\n]{1,40}\][ \t]*)?warning:.*$|"
    r"\b0 (?:failed|errors?|failures?)\b|\bno (?:errors?|failures?|problems)\b|"
    r"^[ \t]*(?:error|stderr|signal|exception)s?:[ \t]*\((?:none|empty)\)[ \t]*$|"
    r"\b(?:failed|failures?|errors?|failing)[ \t]*[:=][ \t]*0\b(?![.,]\d)",
    re.IGNORECASE | re.MULTILINE)


def without_content(text: str) -> str:
    """A result's text with the file views and saved files it shows blanked out."""
    if "<" in text:
        text = FILE_BLOCK.sub(" ", text)
    if "New problems detected" in text:
        text = SAVED_FILE_PROBLEMS.sub(" ", text)
    views = FILE_VIEW_LINE.findall(text)
    return FILE_VIEW_LINE.sub(" ", text) if len(views) >= 3 else text


def step_outcome(result_text: str, is_error: bool | None = False, tool: str = "",
                 arguments: Any = None) -> str:
    """A tool result's outcome: denied (refused by the user or the harness), failed (the log marks
    it as an error, or its text reports one: a non-zero exit, a traceback, a failing test, an error
    status or body, a refusal by the system or a remote), or ok. Failure words in what a reading
    tool returned (a log that was read, a page, grep's hits, a file's numbered lines) are its
    content, not its outcome."""
    text = result_text or ""
    return edges_outcome(text[:20000], text[-EDGE_CHARS:], bool(is_error), tool or "",
                         call_command(arguments))


# (a result is read by the ground truth and by the needed items alike)
@functools.lru_cache(maxsize=2048)
def edges_outcome(head: str, foot: str, is_error: bool, tool: str, command: str) -> str:
    """step_outcome of a result's first 20,000 characters and its last EDGE_CHARS (all it reads of
    it), and its call's command."""
    reads = CONTENT_TOOLS.match(tool) or reading_command(command) or command.strip() == "view"
    first = next((line for line in head.splitlines() if line.strip()), "")
    if DENIED.search(first if reads else without_content(head)):
        return "denied"
    if is_error or HARNESS_ERROR.search(first):
        return "failed"
    if reads:
        return "failed" if READ_FAILED.match(first) or exit_line(head, foot) else "ok"
    body = json_body(head)
    if body is not None:
        return "failed" if JSON_FAILED.search(body) else "ok"
    bare = NOTHING_FAILED.sub(" ", without_content(head))
    return "failed" if FAILED.search(without_echoes(bare, command)) else "ok"


# What a command prints itself (`echo "File not found"`): the agent's words, not the outcome
ECHOED = re.compile(r"\becho\s+(?:-\w+\s+)?([\"']?)([^\"'&|;\n]+)\1")


def without_echoes(text: str, command: str) -> str:
    """The text without the lines that are only what the command echoes itself (amendment of
    2026-12-06 (8))."""
    said = {m.group(2).strip() for m in ECHOED.finditer(command or "") if m.group(2).strip()}
    if not said:
        return text
    return "\n".join(line for line in text.splitlines()
                     if line.strip().strip("\"'") not in said)


# The harness's own refusal of a call's input (Claude Code's <tool_use_error>), whatever the tool.
HARNESS_ERROR = re.compile(r"^\s*<tool_use_error>")

# What a reading tool says of itself on its first line when the read failed.
READ_FAILED = re.compile(r"^\s*(?:[\w./-]+: )?(?:error|fatal):|^\s*\w+: [^:]+: No such file|"
                         r"^\s*ENOENT\b|"
                         r"^\s*\w+: cannot|^\s*(?:File|Path|Directory) does not exist\b|"
                         r"^\s*File content \(.*\) exceeds maximum", re.IGNORECASE)

# A shell tool's own line with a non-zero exit code (Gemini CLI's `Exit Code: 2` after the output,
# Claude Code's `Exit code 1` before it): a reading command that failed (amendment of 2026-12-06
# (8))
EXIT_LINE = re.compile(r"^[ \t]*Exit code:?[ \t]*-?[1-9]\d*[ \t]*$", re.IGNORECASE | re.MULTILINE)

# how far into a result its tool's own header or footer lines are looked for
EDGE_CHARS = 2000


def exit_line(head: str, foot: str) -> bool:
    """Whether the head or the foot of a result (its first 20,000 and its last EDGE_CHARS
    characters) holds a non-zero exit code line."""
    return bool(EXIT_LINE.search(head[:EDGE_CHARS]) or EXIT_LINE.search(foot))


# A JSON body's fields that say a call failed; the words of its values are data (an issue's text,
# a review comment), not the call's outcome (amendment of 2026-12-06).
JSON_FAILED = re.compile(
    r"^\s*\{\s*\"(?:error|errors)\":\s*(?!null|\[\]|\{\}|false|\"\")|"
    r"\"(?:status|state|conclusion)\":\s*\"(?:error|failed|failure)\"|\"(?:ok|success)\":\s*false|"
    r"\"(?:failed|failures|failing|errors|num_failed|failed_tests)\":\s*(?:[1-9]|\[\s*[{\"])",
    re.IGNORECASE)


def json_body(text: str) -> str | None:
    """The text when it is one JSON object or list (a tool's structured output), else None."""
    stripped = text.strip()
    if not stripped[:1] in ("{", "[") or not stripped[-1:] in ("}", "]"):
        return None
    try:
        json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    return stripped


def turn_outcome(turn: dict) -> str:
    """A tool result's outcome under the step rules, with what the log itself marks: a refusal the
    log marks (a permission not granted, a command rejected, a call cancelled or not approved) is
    denied whatever its words, a failure it marks (an exit code, an error status) is failed."""
    marked = turn.get("marked")
    if marked == "denied":
        return "denied"
    return step_outcome(turn["text"], turn["error"] or marked == "failed", turn["tool"],
                        (turn.get("call") or {}).get("input"))


NAMING_KINDS = ("path", "url", "email", "identifier", "digest", "version", "amount", "number")

# the arguments that tune how a call runs (a timeout, a limit, an offset), not what it acts on: a
# number given to one is no name of the step (`timeout: 60000` names no test run)
OPTION_ARGUMENT = re.compile(r"^(?:timeout\w*|\w*_(?:ms|timeout|limit)|limit|offset|max_?\w*|"
                             r"min_?\w*|head_limit|-[ABCn]|context|depth|page(?:_size)?|per_page)$",
                             re.IGNORECASE)

# Arguments that carry what a call writes or says, not what it acts on: their values do not name the
# step.
CONTENT_ARGUMENTS = frozenset({"content", "body", "text", "message", "new_string", "old_string",
                               "patch", "diff", "row",
                               "rows", "data", "values", "description", "prompt", "notes",
                               "comment", "subject"})

# later successes of a tool looked at per failed call (keeps the rule linear)
MAX_RESOLVERS = 64


def render_arguments(arguments: Any) -> str:
    """A call's arguments as text, one `name: value` line each."""
    if not isinstance(arguments, dict):
        return str(arguments)
    return "\n".join(f"{k}: {v}" for k, v in arguments.items())


def argument_values(call: dict | None) -> set[str]:
    """Every exact value a call's arguments give, in normal form, amounts and counts included: a
    refund of 500 does not resolve a refund of 1,249 on the same order."""
    if not call:
        return set()
    return {
        f"{v.kind}:{normalize_value(v.kind, v.text)}"
        for v in extract_values(render_arguments(call["input"]))
    }


def step_match_terms(call: dict | None, tool: str, shared: collections.Counter) -> list[str]:
    """How a state may name a step: the values of its arguments that no other call of the same tool
    gives; else its command (a one-line `command`, `query`, `path` ... argument); else the tool's
    name."""
    if not call:
        return [tool] if tool != "tool" else []
    arguments = call["input"]
    acting = {k: v for k, v in arguments.items() if k not in CONTENT_ARGUMENTS and
              not OPTION_ARGUMENT.match(k)} if isinstance(arguments, dict) else arguments
    mine = [v.text for v in extract_values(render_arguments(acting)) if v.kind in NAMING_KINDS and
            (v.kind != "number" or len(re.sub(r"\D", "", v.text)) >= 3)]
    terms_ = [v for v in dict.fromkeys(mine) if shared[v] <= 1]
    if not terms_ and isinstance(call["input"], dict):
        terms_ = [v.strip() for k, v in call["input"].items() if k in ("command", "cmd", "query",
            "sql", "url", "path",
                                                                       "file_path")
                                                                       and isinstance(v, str) and
                  "\n" not in v.strip() and 4 <= len(v.strip()) <= 120]
    return list(dict.fromkeys(terms_))[:4] or [tool]


def session_steps(turns: list[dict], segment_of: list[int]) -> list[dict]:
    """Every tool call whose result failed or was denied, with its outcome at the end of the
    session: done (the turn as its receipt) when a later call of the same tool succeeded that gives
    every value the failed one gave (the same file, id, digest, amount ...), or, for a call that
    gives none, runs the same command; else failed or denied. One pass over the calls, and at most
    MAX_RESOLVERS later successes looked at per failure."""
    calls = [(t, turn) for t, turn in enumerate(turns) if turn["role"] == "tool"]
    outcomes = [turn_outcome(turn) for _, turn in calls]
    values = [argument_values(turn.get("call")) for _, turn in calls]
    named: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    # (tool, value or command) -> positions
    successes: dict[tuple, list[int]] = collections.defaultdict(list)
    for position, (_, turn) in enumerate(calls):
        call = turn.get("call")
        if call:
            for v in dict.fromkeys(x.text for x in extract_values(render_arguments(call["input"]))):
                named[turn["tool"]][v] += 1
        if outcomes[position] == "ok":
            keys = values[position] or {"command:" + call_command((call or {}).get("input"))}
            for key in keys:
                successes[(turn["tool"], key)].append(position)
    steps = []
    for position, (t, turn) in enumerate(calls):
        if outcomes[position] == "ok":
            continue
        call = turn.get("call")
        keys = values[position] or {"command:" + call_command((call or {}).get("input"))}
        rarest = min((successes.get((turn["tool"], key), []) for key in keys), key=len)
        first = _first_after(rarest, position)
        later = [p for p in rarest[first:first + MAX_RESOLVERS]
                 if keys <= (values[p] or {"command:" + call_command((calls[p][1].get("call")
                 or {}).get("input"))})]
        resolved = calls[later[0]][0] if later else None
        detail = next((line.strip() for line in turn["text"].splitlines() if line.strip()),
                      "")[:160]
        steps.append({"id": len(steps) + 1, "tool": turn["tool"], "outcome": outcomes[position],
                      "status": "done" if resolved is not None else outcomes[position],
                      "match": step_match_terms(call, turn["tool"],
                                                named[turn["tool"]]) or [detail[:40] or "tool"],
                      "detail": detail, "turn": t + 1, "segment": segment_of[t] if segment_of
                      else 1,
                      "resolved_turn": resolved + 1 if resolved is not None else None})
    return steps


def _first_after(positions: list[int], position: int) -> int:
    low, high = 0, len(positions)
    while low < high:
        middle = (low + high) // 2
        if positions[middle] <= position:
            low = middle + 1
        else:
            high = middle
    return low
