"""XR-S1, reading (protocol/SESSIONS.md section 2.1): the logs coding agents write on the command line, read into
SessionBuilder records: Claude Code's JSONL transcripts, Codex CLI rollouts (the payload layout and the older one)
and Gemini CLI sessions (the JSON file and the JSONL layout). Each shape is the one checked against the tool's source
or documentation (tasks/sessions/README.md, "The formats"); positions (`at`) are line numbers in JSONL files and
indices in JSON lists.
"""
from __future__ import annotations

import re
from typing import Any

from .run_logs import ResponseItems
from .turns import SessionBuilder, as_text, exit_code_in, key_of, text_of


# --- Claude Code: ~/.claude/projects/<project>/<session>.jsonl ---------------------------------------------------
CLAUDE_NOISE_TYPES = {"summary": "a session title line", "file-history-snapshot": "file backup bookkeeping",
                      "queue-operation": "queued input bookkeeping", "progress": "a progress line",
                      "attachment": "an attachment line", "custom-title": "a session title line",
                      "tag": "a tag line", "agent-name": "a sub-agent name line"}

CLAUDE_DENIAL = re.compile(r"requested permissions to [^\n]{0,300}haven't granted|doesn't want to proceed with this "
                           r"tool use|tool use was rejected|Permission to use [^\n]{0,300}has been denied|"
                           r"This command requires approval", re.IGNORECASE)

DENIAL_HEAD = 600                       # Claude Code's refusals are the whole of a short result

DENIAL_WORDS = ("ermission", "proceed", "rejected", "approval")     # one of them is in every refusal text

LOCAL_COMMAND = re.compile(r"^\s*<local-command-(?:stdout|stderr|caveat)>")

SLASH_COMMAND = re.compile(r"<command-name>\s*/?[^<]*</command-name>")

INTERRUPTION = re.compile(r"^\s*\[Request interrupted by user")


def is_claude_line(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") in ("user", "assistant") and isinstance(item.get("message"),
                                                                                              dict)


def read_claude_code(lines: list) -> list[SessionBuilder]:
    """Claude Code: user and assistant lines (an assistant reply written one content block per line, joined by its
    message id), tool results inside user lines, a slash command's expanded body as the user's turn, the
    compact_boundary line and the summary after it as a compaction, side conversations (isSidechain) left out
    unless the file holds nothing else (a sub-agent's own file)."""
    builder = SessionBuilder("claude-code", "lines")
    sidechain_only = not any(is_claude_line(item) and item.get("isSidechain") is not True for _, item in lines) and \
        any(is_claude_line(item) for _, item in lines)
    if sidechain_only:
        builder.kind = "sub-agent"
        builder.notes.append("every line is a side conversation (isSidechain): a sub-agent's own log, read as its "
                             "own session")
    after_command = False
    for n, line in lines:
        builder.read += 1
        command, after_command = after_command, False
        kind = key_of(line.get("type")) if isinstance(line, dict) else None
        if kind == "system" and line.get("subtype") == "compact_boundary":
            meta = line.get("compactMetadata") if isinstance(line.get("compactMetadata"), dict) else {}
            trigger = meta.get("trigger") if isinstance(meta.get("trigger"), str) else None
            builder.compaction(n, None, source="compact_boundary", trigger=trigger,
                               tokens_before=meta.get("preTokens"), tokens_after=meta.get("postTokens"),
                               why_unreadable="the summary line after the boundary is missing")
            builder.skip("compaction record (kept as a compaction event, not a turn)")
        elif kind not in ("user", "assistant"):
            if kind in CLAUDE_NOISE_TYPES or kind == "system":
                builder.skip(f"line type {kind!r} (no turn)")
            else:
                builder.skip(f"line type {str(kind)[:30]!r} (not known to this reader)" if isinstance(kind, str)
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
            read_claude_assistant(builder, line["message"], n)
        else:
            after_command = read_claude_user(builder, line, n, command)
    return [builder]


def read_claude_user(builder: SessionBuilder, line: dict, n: int, after_command: bool) -> bool:
    """A user line; True when it invokes a slash command (the next isMeta line is its body)."""
    content = line["message"].get("content")
    text = content if isinstance(content, str) else None
    if line.get("isMeta") is True:
        body = text_of(content)
        if after_command and body.strip() and not LOCAL_COMMAND.match(body):
            builder.user(body, n)                       # a slash command's expanded body: what the user asked
        else:
            builder.skip("meta message (isMeta)")
        return False
    if text is not None and SLASH_COMMAND.search(text):
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
                marked, evidence = "denied", "a permission refusal in the result" + (" (is_error)" if error else "")
            elif error:
                code = exit_code_in(result_text)
                marked, evidence = "failed", "is_error" + (f", exit code {code}" if code is not None else "")
            builder.result(part.get("tool_use_id"), result_text, n, error=error, marked=marked, evidence=evidence)
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
            builder.skip(f"{str(kind)[:30]} part (not text)" if isinstance(kind, str) else "a part of no known type",
                         unread=not isinstance(kind, str))
    builder.user("\n\n".join(w for w in words if w.strip()), n)
    return False


def read_claude_assistant(builder: SessionBuilder, message: dict, n: int) -> None:
    content = message.get("content")
    texts, calls = [], []
    for part in content if isinstance(content, list) else [content]:
        kind = part.get("type") if isinstance(part, dict) else "text" if isinstance(part, str) else None
        if isinstance(part, str):
            texts.append(part)
        elif kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind in ("thinking", "redacted_thinking"):
            builder.skip("thinking left out")
        elif kind == "tool_use":
            calls.append(builder.call(part.get("id"), part.get("name"), part.get("input"), n))
        elif part is not None:
            builder.skip(f"{str(kind)[:30]} part (not text)" if isinstance(kind, str) else "a part of no known type",
                         unread=not isinstance(kind, str))
    message_id = message.get("id") if isinstance(message.get("id"), str) else None
    builder.assistant("\n\n".join(t for t in texts if t.strip()), calls, n, message_id=message_id)


# --- Codex CLI: ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl -----------------------------------------------------
CODEX_LINE_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")

RESPONSE_ITEM_TYPES = ("message", "function_call", "function_call_output", "custom_tool_call",
                       "custom_tool_call_output", "local_shell_call", "reasoning", "web_search_call", "ghost_snapshot",
                       "compaction", "compaction_summary")

def is_codex_line(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") in CODEX_LINE_TYPES and isinstance(item.get("payload"), dict)


def is_codex_legacy_item(item: Any) -> bool:
    return isinstance(item, dict) and (item.get("type") in RESPONSE_ITEM_TYPES or "record_type" in item)


def read_codex(lines: list) -> list[SessionBuilder]:
    """Codex CLI rollouts, `{timestamp, type, payload}` lines: response items are the session (messages, function
    and custom tool calls and their outputs), harness context (role developer, the project's AGENTS file,
    environment context) and reasoning left out, event_msg lines are echoes or status, a `compacted` line is a
    compaction (its summary in `message`, or encrypted in `replacement_history` after a remote compaction)."""
    codex = CodexReader("codex")
    for n, line in lines:
        codex.builder.read += 1
        kind = line.get("type") if isinstance(line, dict) else None
        payload = line.get("payload") if isinstance(line, dict) else None
        if kind == "response_item" and isinstance(payload, dict):
            codex.item(payload, n)
        elif kind == "compacted" and isinstance(payload, dict):
            codex.compacted(payload, n)
        elif kind == "event_msg" and isinstance(payload, dict):
            codex.event(payload)
        elif kind in ("session_meta", "turn_context"):
            codex.builder.skip(f"{kind} (session settings, no turn)")
            if kind == "session_meta" and isinstance(payload, dict) and "SubAgent" in as_text(payload.get("source")):
                codex.builder.kind = "sub-agent"
        else:
            codex.builder.skip(f"line type {str(kind)[:30]!r} (not known to this reader)" if isinstance(kind, str)
                               else "line with no type", unread=True)
    return [codex.builder]


def read_codex_legacy(lines: list) -> list[SessionBuilder]:
    """The older Codex rollout: a first line with the session's id, then bare response items and `record_type`
    lines (state records; an intermediate version wrote `record_type: response` with the item's fields beside it).
    No events, no compaction."""
    codex = CodexReader("codex-legacy")
    for position, (n, line) in enumerate(lines):
        codex.builder.read += 1
        if position == 0 and isinstance(line, dict) and "type" not in line and "record_type" not in line:
            codex.builder.skip("session meta (first line)")
        elif isinstance(line, dict) and "record_type" in line:
            if line["record_type"] == "response":
                codex.item({k: v for k, v in line.items() if k not in ("record_type", "timestamp")}, n)
            else:
                codex.builder.skip(f"record_type {str(line['record_type'])[:30]!r} (no turn)")
        elif isinstance(line, dict) and isinstance(line.get("type"), str):
            codex.item(line, n)
        else:
            codex.builder.skip("line with no type", unread=True)
    return [codex.builder]


class CodexReader(ResponseItems):
    """Response items of either Codex layout, its compacted lines and its events, into a SessionBuilder."""

    def __init__(self, fmt: str):
        super().__init__(fmt, "lines")

    def compacted(self, payload: dict, n: int) -> None:
        b = self.builder
        message = payload.get("message") if isinstance(payload.get("message"), str) else ""
        history = payload.get("replacement_history") if isinstance(payload.get("replacement_history"), list) else []
        encrypted = any(isinstance(i, dict) and i.get("type") in ("compaction", "compaction_summary") for i in history)
        users = {t["text"]: k for k, t in enumerate(b.turns, 1) if t["role"] == "user"}
        kept = [users[text_of(i.get("content")).strip()] for i in history if isinstance(i, dict) and
                i.get("role") == "user" and text_of(i.get("content")).strip() in users]
        b.compaction(n, message, source="compacted", summary_at=n, tokens_before=self.tokens, kept_turns=kept,
                     why_unreadable="remote compaction: the summary is encrypted in replacement_history" if encrypted
                     else "the compacted line holds no summary text")
        b.skip("compaction record (kept as a compaction event, not a turn)")

    def event(self, payload: dict) -> None:
        kind = payload.get("type")
        if kind == "token_count":
            info = payload.get("info") if isinstance(payload.get("info"), dict) else {}
            total = info.get("total_token_usage") if isinstance(info.get("total_token_usage"), dict) else {}
            if isinstance(total.get("total_tokens"), int):
                self.tokens = total["total_tokens"]
        self.builder.skip("event_msg (an echo or status line, no turn)")


# --- Gemini CLI: ~/.gemini/tmp/<project>/chats/session-*.json[l] --------------------------------------------------
GEMINI_NOTICES = ("info", "error", "warning")

STATE_SNAPSHOT = "<state_snapshot>"


def is_gemini_message(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") in ("user", "gemini", *GEMINI_NOTICES) and "id" in item


def read_gemini_json(value: dict) -> list[SessionBuilder]:
    """A Gemini CLI session file: `messages` of user and gemini records, each gemini record one reply with its tool
    calls and their results; thoughts and UI notices (info, error, warning) left out; the top-level `summary` is the
    session's title, not a compaction."""
    builder = SessionBuilder("gemini-cli", "messages")
    for index, message in enumerate(value["messages"]):
        builder.read += 1
        gemini_message(builder, message, index, index)
    if isinstance(value.get("summary"), str):
        builder.skip("session title (`summary`, not a compaction)")
    return [builder]


def gemini_message(builder: SessionBuilder, message: Any, at: Any, where: Any) -> None:
    kind = message.get("type") if isinstance(message, dict) else None
    if kind == "user":
        text = text_of(message.get("content"), builder.skip)
        if STATE_SNAPSHOT in text:
            builder.compaction(at, text, source="state_snapshot message", summary_at=at)
            builder.skip("compaction record (kept as a compaction event, not a turn)")
        else:
            builder.user(text, at)
    elif kind == "gemini":
        thoughts = message.get("thoughts")
        if isinstance(thoughts, list) and thoughts:
            builder.skip("thinking left out")
        calls, results = [], []
        for k, tool in enumerate(message.get("toolCalls") or [] if isinstance(message.get("toolCalls"), list) else []):
            if not isinstance(tool, dict):
                builder.skip("tool call that is not an object", unread=True)
                continue
            call = builder.call(tool.get("id"), tool.get("name"), tool.get("args"), at)
            calls.append(call)
            results.append((call, tool, f"{where}.toolCalls[{k}].result"))
        builder.assistant(text_of(message.get("content"), builder.skip), calls, at)
        for call, tool, result_at in results:
            gemini_result(builder, call, tool, result_at)
    elif kind in GEMINI_NOTICES:
        builder.skip(f"{kind} message (a UI notice, no turn)")
    else:
        builder.skip(f"message type {str(kind)[:20]!r} (not known to this reader)", unread=True)


def gemini_result(builder: SessionBuilder, call: dict, tool: dict, at: str) -> None:
    result, status = tool.get("result"), tool.get("status")
    if not isinstance(result, list) or not result:
        if status == "cancelled":
            builder.result(call, "(cancelled)", at, marked="denied", evidence="status cancelled")
        return                                  # a call the log holds no result for
    texts, error = [], False
    for part in result:
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) and \
            isinstance(part.get("functionResponse"), dict) else None
        if isinstance(response, dict) and "error" in response:
            texts.append(as_text(response["error"]))
            error = True
        elif isinstance(response, dict):
            texts.append(as_text(response.get("output", response)))
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    text = "\n".join(texts)
    marked, evidence = None, None
    if status == "cancelled":
        marked, evidence = "denied", "status cancelled" + (": " + text[:80] if text else "")
    elif status == "error":
        marked, evidence = "failed", "status error"
    else:
        code = exit_code_in(text)
        if code:
            marked, evidence = "failed", f"`Exit Code: {code}` in the shell output (status success)"
    builder.result(call, text, at, error=error or status == "error", marked=marked, evidence=evidence)


def read_gemini_jsonl(lines: list) -> list[SessionBuilder]:
    """The Gemini CLI JSONL layout: a metadata line, then message records (re-appended with the same id when tool
    calls or tokens are added: the last record of an id wins, in the order ids first appear), `$set` patches
    (`messages` replaces the whole list: a checkpoint; one that holds a <state_snapshot> is a compaction, the messages
    it keeps are the kept turns) and `$rewindTo` (drops a message and everything after it)."""
    builder = SessionBuilder("gemini-cli-jsonl", "lines")
    order: list[str] = []
    records: dict[str, tuple[int, dict]] = {}
    checkpoints: list[tuple[int, int, list]] = []      # (messages before it, line, the checkpoint's messages)
    for position, (n, line) in enumerate(lines):
        builder.read += 1
        if not isinstance(line, dict):
            builder.skip("line that is not an object", unread=True)
        elif position == 0 and "sessionId" in line and "type" not in line:
            builder.skip("metadata line (session id, project, times)")
        elif isinstance(line.get("$set"), dict):
            for key, value in line["$set"].items():
                if key == "messages" and isinstance(value, list):
                    checkpoints.append((len(order), n, value))
                else:
                    builder.skip(f"$set {str(key)[:30]} patch")
        elif "$rewindTo" in line:
            target = line["$rewindTo"]
            if target in order:
                dropped = order[order.index(target):]
                del order[order.index(target):]
                builder.skip("message rewound ($rewindTo)", len(dropped))
                checkpoints = [c for c in checkpoints if c[0] <= len(order)]
        elif is_gemini_message(line) and isinstance(line["id"], str):
            if line["id"] in records:
                builder.skip("earlier copy of a message record (superseded by the same id)")
            else:
                order.append(line["id"])
            records[line["id"]] = (n, line)
        else:
            builder.skip("line of no known kind", unread=True)
    start_ids: set[str] = set()
    pending = list(checkpoints)
    for index, message_id in enumerate([*order, None]):
        while pending and pending[0][0] == index:
            gemini_checkpoint(builder, *pending.pop(0), records, order, start_ids)
        if message_id is not None:
            n, message = records[message_id]
            gemini_message(builder, message, n, n)
    return [builder]


def gemini_checkpoint(builder: SessionBuilder, before: int, n: int, messages: list, records: dict, order: list,
                      start_ids: set) -> None:
    """A `$set.messages` checkpoint: at the start, the CLI's environment context (its first message; any others are
    a migrated history, read as turns); later, a compaction when it holds a <state_snapshot> summary."""
    if before == 0 and not builder.turns:
        for k, message in enumerate(messages):
            if not isinstance(message, dict):
                continue
            start_ids.add(key_of(message.get("id")))
            if k == 0:
                builder.skip("start-up context (the CLI's environment context)")
            else:
                gemini_message(builder, message, f"{n}:$set.messages[{k}]", f"{n}:$set.messages[{k}]")
        return
    kept_lines = {records[key_of(m.get("id"))][0] for m in messages if isinstance(m, dict) and
                  key_of(m.get("id")) in records}
    kept = [k for k, turn in enumerate(builder.turns, 1) if line_of(turn["at"]) in kept_lines]
    snapshot = next(((k, m) for k, m in enumerate(messages) if isinstance(m, dict) and m.get("type") == "user" and
                     STATE_SNAPSHOT in text_of(m.get("content"))), None)
    if snapshot is None:
        builder.skip("message-list checkpoint with no summary (a restart or masked tool output)")
        return
    k, message = snapshot
    previous = builder.compactions[-1] if builder.compactions else None
    candidates = range(previous["after_turn"] + 1 if previous else 1, len(builder.turns) + 1)
    replaced = sorted(set(candidates).union(previous["kept_turns"] if previous else ()) - set(kept))
    builder.compaction(n, text_of(message.get("content")), source="$set.messages checkpoint with <state_snapshot>",
                       summary_at=f"{n}:$set.messages[{k}]",
                       replaces=[replaced[0], replaced[-1]] if replaced else None, kept_turns=kept)
    builder.skip("compaction record (kept as a compaction event, not a turn)")


def line_of(at: Any) -> int | None:
    """The line a position names (12, "12.toolCalls[0].result")."""
    if isinstance(at, int):
        return at
    head = str(at).split(".", 1)[0].split(":", 1)[0]
    return int(head) if head.isdigit() else None
