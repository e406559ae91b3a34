"""XR-S1, reading (protocol/SESSIONS.md section 2.1): Claude Code's JSONL transcripts, read into a
SessionBuilder record (the shape checked against the tool: tasks/sessions/README.md, "The formats");
positions (`at`) are line numbers. Registered in readers/registry.py as claude-code.

Beside the shared record: a message the user typed while the agent worked (a `queue-operation`
enqueue with its text) is a user turn marked `queued`; a compaction event carries the `workspace`
its boundary line records (the git branch and the working folder), and a file that begins
mid-session (its first line's parent is not in the file) with fewer than MIN_HISTORY_TURNS turns
before its first boundary, or whose first model call's context already held all but less than
MIN_HISTORY_SHARE of the tokens that boundary replaced, holds too little of the history that
boundary replaced: its `replaces` is
None (the history is not in the file) and its `why_not_in_file` says so; the first turn of a file
that begins mid-session, by that line or by a first line of any type whose parent is not in the
file (a hook's record), is marked `mid_session`; a `/compact <words>` command recorded right after a
boundary (before any other turn) gives that compaction its `asked`, the words the user gave the
summary (the audit's gate reads them as the user's).
"""
from __future__ import annotations

import re
from typing import Any

from .turns import SessionBuilder, exit_code_in, first, key_of, one_object_a_line, text_of


# --- Claude Code: ~/.claude/projects/<project>/<session>.jsonl ------------------------------------
CLAUDE_NOISE_TYPES = {"summary": "a session title line",
                      "file-history-snapshot": "file backup bookkeeping",
                      "queue-operation": "queued input bookkeeping", "progress": "a progress line",
                      "attachment": "an attachment line", "custom-title": "a session title line",
                      "tag": "a tag line", "agent-name": "a sub-agent name line"}

CLAUDE_DENIAL = re.compile(r"requested permissions to [^\n]{0,300}haven't granted|doesn't want to "
                           r"proceed with this tool use|tool use was rejected|Permission to use "
                           r"[^\n]{0,300}has been denied|"
                           r"This command requires approval", re.IGNORECASE)

DENIAL_HEAD = 600                       # Claude Code's refusals are the whole of a short result

# one of them is in every refusal text
DENIAL_WORDS = ("ermission", "proceed", "rejected", "approval")

LOCAL_COMMAND = re.compile(r"^\s*<local-command-(?:stdout|stderr|caveat)>")

SLASH_COMMAND = re.compile(r"<command-name>\s*/?[^<]*</command-name>")

# `/compact <words>`: the words the user gave the summary it asks for
COMPACT_COMMAND = re.compile(r"<command-name>\s*/compact\s*</command-name>")
COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)

INTERRUPTION = re.compile(r"^\s*\[Request interrupted by user")

# a file that begins mid-session holds the history its first compaction replaced only when at least
# this many turns precede it (a resumed session's file opens with a few turns, then the boundary)
MIN_HISTORY_TURNS = 10

# ... and only when the tokens its first model call's context already held (its usage record: what
# came before the file) leave at least this share of the tokens the boundary says it replaced
# (preTokens) to the turns in the file: a fresh session's first call holds its system prompt and
# tools, about a fifth of a full context; a resumed one's, nearly all of it (the amendment of
# 2026-12-06 (21))
MIN_HISTORY_SHARE = 0.2


def is_claude_line(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and item.get("type") in ("user", "assistant")
        and isinstance(item.get("message"), dict)
    )


def read_claude_code(lines: list) -> list[SessionBuilder]:
    """Claude Code: user and assistant lines (an assistant reply written one content block per line,
    joined by its message id), tool results inside user lines, a slash command's expanded body as
    the user's turn, the compact_boundary line and the summary after it as a compaction, side
    conversations (isSidechain) left out unless the file holds nothing else (a sub-agent's own
    file)."""
    builder = SessionBuilder("claude-code", "lines")
    sidechain_only = only_side_conversations(lines)
    if sidechain_only:
        builder.kind = "sub-agent"
        builder.notes.append("every line is a side conversation (isSidechain): a sub-agent's own "
                             "log, read as its own session")
    after_command = False
    seen: set[str] = set()
    mid_session: bool | None = None     # decided by the first user or assistant line
    first_context: int | None = None    # the tokens the first model call's context held
    begins_inside: bool | None = None   # and by the first line of any type with a parent
    for n, line in lines:
        builder.read += 1
        command, after_command = after_command, False
        kind = key_of(line.get("type")) if isinstance(line, dict) else None
        if mid_session is None and kind in ("user", "assistant"):
            parent = key_of(line.get("parentUuid"))
            mid_session = isinstance(parent, str) and parent not in seen
        if begins_inside is None and isinstance(line, dict) and "parentUuid" in line:
            begins_inside = isinstance(key_of(line.get("parentUuid")), str)
        if isinstance(line, dict) and isinstance(key_of(line.get("uuid")), str):
            seen.add(line["uuid"])
        if kind == "system" and line.get("subtype") == "compact_boundary":
            meta = line.get("compactMetadata") if isinstance(line.get("compactMetadata"),
                                                             dict) else {}
            trigger = meta.get("trigger") if isinstance(meta.get("trigger"), str) else None
            event = builder.compaction(n, None, source="compact_boundary", trigger=trigger,
                                       tokens_before=meta.get("preTokens"),
                                       tokens_after=meta.get("postTokens"),
                                       why_unreadable="the summary line after the boundary is "
                                                      "missing")
            event["workspace"] = {"branch": clean_text(line.get("gitBranch")),
                                  "cwd": clean_text(line.get("cwd"))}
            if mid_session and event["n"] == 1 and len(builder.turns) < MIN_HISTORY_TURNS:
                event["replaces"] = None
                event["why_not_in_file"] = (f"the file begins mid-session and holds "
                                            f"{len(builder.turns)} turns before the boundary")
            elif (mid_session or begins_inside) and event["n"] == 1 and first_context and \
                    event["tokens_before"] and \
                    event["tokens_before"] - first_context < \
                    MIN_HISTORY_SHARE * event["tokens_before"]:
                event["replaces"] = None
                event["why_not_in_file"] = (
                    f"the file begins mid-session: its first model call already held "
                    f"{first_context:,} of the {event['tokens_before']:,} tokens the compaction "
                    "replaced")
            builder.skip("compaction record (kept as a compaction event, not a turn)")
        elif kind == "queue-operation" and line.get("operation") == "enqueue" and \
                isinstance(line.get("content"), str) and line["content"].strip():
            builder.user(line["content"], n)
            builder.turns[-1]["queued"] = True
        elif kind not in ("user", "assistant"):
            if kind in CLAUDE_NOISE_TYPES or kind == "system":
                builder.skip(f"line type {kind!r} (no turn)")
            else:
                builder.skip(f"line type {str(kind)[:30]!r} (not known to this reader)"
                             if isinstance(kind, str)
                             else "line with no type", unread=True)
        elif line.get("isSidechain") is True and not sidechain_only:
            builder.skip("side conversation (isSidechain, left out)")
        elif not isinstance(line.get("message"), dict):
            builder.skip("no message", unread=True)
        elif line.get("isCompactSummary") is True:
            summary = text_of(line["message"].get("content"))
            if not builder.summary_for_last(summary, n, "isCompactSummary"):
                builder.compaction(n, summary, source="isCompactSummary", summary_at=n)
            builder.skip("compaction record (kept as a compaction event, not a turn)")
        elif kind == "assistant":
            if first_context is None:
                first_context = context_tokens(line["message"].get("usage"))
            read_claude_assistant(builder, line["message"], n)
        else:
            after_command = read_claude_user(builder, line, n, command)
    if (mid_session or begins_inside) and builder.turns:
        # (work done before the file begins may be summarized, and the file cannot check it)
        builder.turns[0]["mid_session"] = True
    return [builder]


def only_side_conversations(lines) -> bool:
    """Whether the file holds user or assistant lines and every one is a side conversation: one pass
    over the lines (a stream, read from the file), stopped at the first line of the main one."""
    found = False
    for _, item in lines:
        if is_claude_line(item):
            if item.get("isSidechain") is not True:
                return False
            found = True
    return found


def clean_text(value: Any) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= 1000 else None


def context_tokens(usage: Any) -> int | None:
    """The tokens a model call's context held, from its usage record (new, read from the cache and
    written to it), or None where the record gives no count."""
    if not isinstance(usage, dict):
        return None
    counts = [usage.get(k) for k in ("input_tokens", "cache_read_input_tokens",
                                     "cache_creation_input_tokens")]
    counts = [c for c in counts if isinstance(c, int) and not isinstance(c, bool) and c >= 0]
    return sum(counts) if counts else None


def read_claude_user(builder: SessionBuilder, line: dict, n: int, after_command: bool) -> bool:
    """A user line; True when it invokes a slash command (the next isMeta line is its body)."""
    content = line["message"].get("content")
    text = content if isinstance(content, str) else None
    if line.get("isMeta") is True:
        body = text_of(content)
        if after_command and body.strip() and not LOCAL_COMMAND.match(body):
            # a slash command's expanded body: what the user asked
            builder.user(body, n)
        else:
            builder.skip("meta message (isMeta)")
        return False
    if text is not None and SLASH_COMMAND.search(text):
        asked = COMPACT_COMMAND.search(text) and COMMAND_ARGS.search(text)
        last = builder.compactions[-1] if builder.compactions else None
        if asked and asked.group(1).strip() and last and last["after_turn"] == len(builder.turns):
            # (recorded after the boundary it asked for: the user's words for that summary)
            last["asked"] = asked.group(1).strip()
        builder.skip("slash command invocation (its expanded body is the user's turn)")
        return True
    if text is not None and LOCAL_COMMAND.match(text):
        builder.skip("local command output")
        return False
    if not isinstance(content, list):
        if text is not None and INTERRUPTION.match(text):
            builder.skip("interruption marker")
        elif text is not None:
            builder.user(text, n)
        else:
            builder.skip("content that is neither text nor a list of parts", unread=True)
        return False
    words = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "tool_result":
            result_text = text_of(part.get("content"), builder.skip)
            error = part.get("is_error") is True
            marked, evidence = None, None
            head = result_text[:DENIAL_HEAD]
            if any(word in head for word in DENIAL_WORDS) and CLAUDE_DENIAL.search(head):
                marked, evidence = "denied", "a permission refusal in the result" + (" (is_error)"
                    if error else "")
            elif error:
                code = exit_code_in(result_text)
                marked, evidence = "failed", "is_error" + (f", exit code {code}" if code is not None
                                                           else "")
            builder.result(part.get("tool_use_id"), result_text, n, error=error, marked=marked,
                           evidence=evidence)
        elif kind == "text" and isinstance(part.get("text"), str):
            if INTERRUPTION.match(part["text"]):
                builder.skip("interruption marker")
            elif LOCAL_COMMAND.match(part["text"]):
                builder.skip("local command output")
            else:
                words.append(part["text"])
        elif kind in ("thinking", "redacted_thinking"):
            builder.skip("thinking left out")
        else:
            builder.skip(f"{str(kind)[:30]} part (not text)" if isinstance(kind,
                str) else "a part of no known type",
                         unread=not isinstance(kind, str))
    builder.user("\n\n".join(w for w in words if w.strip()), n)
    return False


def read_claude_assistant(builder: SessionBuilder, message: dict, n: int) -> None:
    content = message.get("content")
    texts, calls = [], []
    for part in content if isinstance(content, list) else [content]:
        kind = part.get("type") if isinstance(part, dict) else "text" if isinstance(part,
            str) else None
        if isinstance(part, str):
            texts.append(part)
        elif kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind in ("thinking", "redacted_thinking"):
            builder.skip("thinking left out")
        elif kind == "tool_use":
            calls.append(builder.call(part.get("id"), part.get("name"), part.get("input"), n))
        elif part is not None:
            builder.skip(f"{str(kind)[:30]} part (not text)" if isinstance(kind,
                str) else "a part of no known type",
                         unread=not isinstance(kind, str))
    message_id = message.get("id") if isinstance(message.get("id"), str) else None
    builder.assistant("\n\n".join(t for t in texts if t.strip()), calls, n, message_id=message_id)


# --- Recognised from the content: the checks its registry entry names ----------------------------
def checks(values: list) -> list[tuple[bool, str]]:
    """JSONL lines of user and assistant turns, each with a `message` object."""
    return [one_object_a_line(values),
            (first(values, lambda v: isinstance(v, dict) and v.get("type") in ("user",
            "assistant")),
             "lines with a `type` of user or assistant"),
            (first(values, is_claude_line), "a `message` object on those lines")]
