"""XR-S1, reading (protocol/SESSIONS.md section 2.1): Gemini CLI sessions, the JSON file
(gemini-cli) and the JSONL layout (gemini-cli-jsonl), read into SessionBuilder records (the shapes
checked against the tool: tasks/sessions/README.md, "The formats"); positions are indices in the
JSON file's `messages` and line numbers in the JSONL one. """
from __future__ import annotations

from typing import Any

from .turns import SessionBuilder, as_text, exit_code_in, first, key_of, text_of


# --- Gemini CLI: ~/.gemini/tmp/<project>/chats/session-*.json[l] ----------------------------------
GEMINI_NOTICES = ("info", "error", "warning")

STATE_SNAPSHOT = "<state_snapshot>"


def is_gemini_message(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") in ("user", "gemini",
                                                           *GEMINI_NOTICES) and "id" in item


def read_gemini_json(value: dict) -> list[SessionBuilder]:
    """A Gemini CLI session file: `messages` of user and gemini records, each gemini record one
    reply with its tool calls and their results; thoughts and UI notices (info, error, warning) left
    out; the top-level `summary` is the session's title, not a compaction."""
    builder = SessionBuilder("gemini-cli", "messages")
    for index, message in enumerate(value["messages"]):
        builder.read += 1
        gemini_message(builder, message, index, index)
    if isinstance(value.get("summary"), str):
        builder.skip("session title (`summary`, not a compaction)")
    return [builder]


def gemini_message(builder: SessionBuilder, message: Any, at: Any, where: Any) -> None:
    kind = message.get("type") if isinstance(message, dict) else None
    if kind == "user" and tool_responses(message.get("content")):
        gemini_responses(builder, message["content"], at)
    elif kind == "user":
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
        for k, tool in enumerate(message.get("toolCalls") or []
                                 if isinstance(message.get("toolCalls"), list) else []):
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


def tool_responses(content: Any) -> bool:
    """Whether a user message is only tool results (`functionResponse` parts): since May 2026
    Gemini CLI records the results it sends back as such a message (chatRecordingService's
    recordSyntheticMessage), after the gemini message whose toolCalls already hold them."""
    return isinstance(content, list) and bool(content) and all(
        isinstance(part, dict) and isinstance(part.get("functionResponse"), dict)
        for part in content)


def gemini_responses(builder: SessionBuilder, parts: list, at: Any) -> None:
    """The results of such a message: a copy of those the calls hold is left out; a result whose
    call holds none is read as that call's."""
    for k, part in enumerate(parts):
        call = builder.calls.get(key_of(part["functionResponse"].get("id")))
        if call is None or id(call) in builder.answered:
            builder.skip("tool result repeated as a user message (the call holds it)")
        else:
            gemini_result(builder, call, {"result": [part], "status": "success"},
                          f"{at}.content[{k}]")


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
    builder.result(call, text, at, error=error or status == "error", marked=marked,
                   evidence=evidence)


def read_gemini_jsonl(lines: list) -> list[SessionBuilder]:
    """The Gemini CLI JSONL layout: a metadata line, then message records (re-appended with the same
    id when tool calls or tokens are added: the last record of an id wins, in the order ids first
    appear), `$set` patches (`messages` replaces the whole list: a checkpoint; one that holds a
    <state_snapshot> is a compaction, the messages it keeps are the kept turns) and `$rewindTo`
    (drops a message and everything after it)."""
    builder = SessionBuilder("gemini-cli-jsonl", "lines")
    order: list[str] = []
    records: dict[str, tuple[int, dict]] = {}
    # (messages before it, line, the checkpoint's messages)
    checkpoints: list[tuple[int, int, list]] = []
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


def gemini_checkpoint(builder: SessionBuilder, before: int, n: int, messages: list, records: dict,
                      order: list,
                      start_ids: set) -> None:
    """A `$set.messages` checkpoint: at the start, the CLI's environment context (its first message;
    any others are a migrated history, read as turns); later, a compaction when it holds a
    <state_snapshot> summary."""
    if before == 0 and not builder.turns:
        for k, message in enumerate(messages):
            if not isinstance(message, dict):
                continue
            start_ids.add(key_of(message.get("id")))
            if k == 0:
                builder.skip("start-up context (the CLI's environment context)")
            else:
                gemini_message(builder, message, f"{n}:$set.messages[{k}]",
                               f"{n}:$set.messages[{k}]")
        return
    kept_lines = {records[key_of(m.get("id"))][0] for m in messages if isinstance(m, dict) and
                  key_of(m.get("id")) in records}
    kept = [k for k, turn in enumerate(builder.turns, 1) if line_of(turn["at"]) in kept_lines]
    snapshot = next(((k, m) for k, m in enumerate(messages) if isinstance(m,
        dict) and m.get("type") == "user" and
                     STATE_SNAPSHOT in text_of(m.get("content"))), None)
    if snapshot is None:
        builder.skip("message-list checkpoint with no summary (a restart or masked tool output)")
        return
    k, message = snapshot
    previous = builder.compactions[-1] if builder.compactions else None
    candidates = range(previous["after_turn"] + 1 if previous else 1, len(builder.turns) + 1)
    replaced = sorted(set(candidates).union(previous["kept_turns"] if previous else ()) - set(kept))
    builder.compaction(n, text_of(message.get("content")), source="$set.messages checkpoint with "
                       "<state_snapshot>",
                       summary_at=f"{n}:$set.messages[{k}]",
                       replaces=[replaced[0], replaced[-1]] if replaced else None, kept_turns=kept)
    builder.skip("compaction record (kept as a compaction event, not a turn)")


def line_of(at: Any) -> int | None:
    """The line a position names (12, "12.toolCalls[0].result")."""
    if isinstance(at, int):
        return at
    head = str(at).split(".", 1)[0].split(":", 1)[0]
    return int(head) if head.isdigit() else None


# --- Recognised from the content: the checks its registry entry names ----------------------------
def checks(value: Any) -> list[tuple[bool, str]]:
    """An object with a `sessionId` and `messages` of user and gemini records."""
    obj = isinstance(value, dict)
    messages = value.get("messages") if obj else None
    return [(obj, "an object"), (obj and "sessionId" in value, "a `sessionId`"),
            (isinstance(messages, list), "a `messages` list"),
            (isinstance(messages, list) and first(messages, is_gemini_message),
             "messages with an `id` and a `type` of user or gemini")]


def jsonl_checks(values: list) -> list[tuple[bool, str]]:
    """A metadata line with the session's id, then message records or patches."""
    head = values[0] if values else None
    return [(isinstance(head, dict) and "sessionId" in head and "type" not in head,
             "a first line with the session's `sessionId`"),
            (first(values[1:], lambda v: is_gemini_message(v) or isinstance(v, dict) and
                   ("$set" in v or "$rewindTo" in v)), "message records or `$set` lines")]
