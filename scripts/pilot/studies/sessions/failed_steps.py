"""XR-S1, the failed and denied steps of a transcript (protocol/SESSIONS.md section 3.3): each
tool result's outcome (denied by the user or the harness, failed, or ok) and each call that failed
or was denied, with whether a later call of the same tool resolved it and how a state may name it.
The ground truth (truth.py) holds these steps beside the values and the instructions.

Pure functions of text: no model, no file, no clock; one pass over the calls, linear in the
session's length."""
from __future__ import annotations

import collections
import re
from typing import Any

from ...rules.spellings import normalize_value
from ...rules.values import extract_values


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
    whose strings an ASCII text holds (a text with other characters is searched with the whole
    pattern: a letter such as the Kelvin sign matches `k`)."""

    def __init__(self, alternatives: list[tuple[tuple[str, ...] | None, str]], flags: int):
        self.pattern = re.compile("|".join(alternative for _, alternative in alternatives), flags)
        self.alternatives = [(needs, re.compile(alternative, flags)) for needs,
                             alternative in alternatives]

    def search(self, text: str) -> bool:
        if not text.isascii():
            return bool(self.pattern.search(text))
        lower = text.lower()
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
    (("deny rule", "plan mode", "hook "), r"\bdeny rule\b|\bplan mode\b|\bhook "
     r"(?:blocked|denied|refused)"),
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
            ("upload failed", "integrity checksum failed"),
            r"\bupload failed\b|\bintegrity checksum " r"failed\b",
        ),
    ],
    re.IGNORECASE | re.MULTILINE,
)


CONTENT_TOOLS = re.compile(
    r"^(?:read|webfetch|websearch|grep|glob|ls|fetch|search\w*|get_\w+|lookup\w*|find\w*|"
    r"list\w*|query\w*|view\w*|open\w*|task|agent)$",
    re.IGNORECASE,
)

CONTENT_COMMANDS = re.compile(r"^\s*(?:cat|head|tail|less|grep|rg|ag|find|ls|journalctl|git "
                              r"(?:log|show|diff|blame|status)|kubectl "
                              r"(?:logs|describe|get)|docker (?:logs|ps)|echo|sed "
                              r"-n|awk|wc|systemctl status)\b")


def call_command(arguments: Any) -> str:
    """A call's command-like argument (command, cmd, query, code ...), '' when it has none."""
    if not isinstance(arguments, dict):
        return ""
    return next((v for k, v in arguments.items() if k in ("command", "cmd", "query", "sql", "code",
                                                          "script")
                 and isinstance(v, str)), "")


def step_outcome(result_text: str, is_error: bool | None = False, tool: str = "",
                 arguments: Any = None) -> str:
    """A tool result's outcome: denied (refused by the user or the harness), failed (the log marks
    it as an error, or its text reports one: a non-zero exit, a traceback, a failing test, an error
    status or body, a refusal by the system or a remote), or ok. Failure words in what a reading
    tool returned (a log that was read, a page, grep's hits) are its content, not its outcome."""
    text = result_text or ""
    head = text[:20000]
    if DENIED.search(head):
        return "denied"
    if is_error:
        return "failed"
    reads = CONTENT_TOOLS.match(tool or "") or CONTENT_COMMANDS.match(call_command(arguments))
    if reads:
        first = next((line for line in head.splitlines() if line.strip()), "")
        own = re.match(r"^\s*(?:[\w./-]+: )?(?:error|fatal):|^\s*\w+: [^:]+: No such "
                       r"file|^\s*\w+: cannot",
                       first, re.IGNORECASE)
        return "failed" if own else "ok"
    bare = re.sub(r"\b0 (?:failed|errors?|failures?)\b|\bno (?:errors?|failures?|problems)\b", " ",
                  head,
                  flags=re.IGNORECASE)
    return "failed" if FAILED.search(bare) else "ok"


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
    acting = {k: v for k,
              v in arguments.items() if k not in CONTENT_ARGUMENTS} if isinstance(arguments, dict) \
        else arguments
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
