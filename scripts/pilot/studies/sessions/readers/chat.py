"""XR-S1, reading (protocol/SESSIONS.md section 2.1): OpenAI-style chat messages, as a JSON list,
an object with a `messages` list (chat-json) or one message per line (chat-jsonl), read into a
SessionBuilder record; positions are indices in the list, or line numbers.
"""
from __future__ import annotations

from typing import Any

from .turns import SessionBuilder, first, json_error, one_object_a_line, text_of


# --- OpenAI-style chat messages -------------------------------------------------------------------
def is_chat_message(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("role"), str)


def read_chat(messages: list, fmt: str, unit: str, positions: list
              | None = None) -> list[SessionBuilder]:
    """Chat messages: user, assistant (text, `tool_calls` or a `function_call`, content blocks with
    tool_use), tool or function results linked by tool_call_id (or tool_result blocks by
    tool_use_id); system and developer messages and reasoning left out."""
    b = SessionBuilder(fmt, unit)
    for k, message in enumerate(messages):
        at = positions[k] if positions else k
        b.read += 1
        if not is_chat_message(message):
            b.skip("not a chat message (an object with a role)", unread=True)
            continue
        role = message["role"].lower()
        if role in ("system", "developer"):
            b.skip("system or developer message (left out: not session history)")
        elif role == "user":
            chat_user(b, message.get("content"), at)
        elif role == "assistant":
            chat_assistant(b, message, at)
        elif role in ("tool", "function"):
            text = text_of(message.get("content"), b.skip) if not isinstance(message.get("content"),
                str) else \
                message["content"]
            error = message.get("is_error") is True
            found = json_error(text)
            b.result(message.get("tool_call_id"), text, at, name=message.get("name") if isinstance(
                message.get("name"), str) else None, error=error,
                marked="failed" if error or found else None,
                evidence="is_error" if error else found)
        else:
            b.skip(f"role {role[:20]!r} (not user, assistant or tool)", unread=True)
    return [b]


def chat_user(b: SessionBuilder, content: Any, at: Any) -> None:
    if not isinstance(content, list):
        if isinstance(content, str):
            b.user(content, at)
        elif content is not None:
            b.skip("content that is neither text nor a list of parts", unread=True)
        return
    words = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "tool_result":
            text = text_of(part.get("content"), b.skip)
            error = part.get("is_error") is True
            b.result(part.get("tool_use_id"), text, at, error=error,
                     marked="failed" if error else None,
                     evidence="is_error" if error else None)
        elif kind == "tool_use":
            b.skip("tool call in a user turn", unread=True)
        else:
            words.append(text_of([part], b.skip))
    b.user("\n\n".join(w for w in words if w.strip()), at)


def chat_assistant(b: SessionBuilder, message: dict, at: Any) -> None:
    content = message.get("content")
    texts, calls = [], []
    if isinstance(message.get("reasoning_content"), str) or isinstance(message.get("reasoning"),
        str):
        b.skip("thinking left out")
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "tool_use":
            calls.append(b.call(part.get("id"), part.get("name"), part.get("input"), at))
        else:
            texts.append(text_of([part], b.skip))
    if isinstance(content, str):
        texts.append(content)
    elif content is not None and not isinstance(content, list):
        b.skip("content that is neither text nor a list of parts", unread=True)
    tool_calls = message.get("tool_calls")
    for call in tool_calls if isinstance(tool_calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            b.skip("tool call with no function", unread=True)
            continue
        calls.append(b.call(call.get("id"), function.get("name"), function.get("arguments"), at))
    if isinstance(message.get("function_call"), dict):
        function = message["function_call"]
        calls.append(b.call(None, function.get("name"), function.get("arguments"), at))
    b.assistant("\n\n".join(t for t in texts if t.strip()), calls, at)


# --- Recognised from the content: the checks its registry entry names ----------------------------
def json_checks(value: Any) -> list[tuple[bool, str]]:
    """A list of messages with a `role`, or an object with such a `messages` list."""
    lst = isinstance(value, list)
    messages = value.get("messages") if isinstance(value, dict) else None
    return [(lst or isinstance(messages, list), "a list of messages or an object with a "
             "`messages` list"),
            (first(value if lst else messages if isinstance(messages, list) else [],
                   is_chat_message),
             "messages with a `role`")]


def read_json(value: Any) -> list[SessionBuilder]:
    return read_chat(value if isinstance(value, list) else value["messages"], "chat-json",
                     "messages")


def jsonl_checks(values: list) -> list[tuple[bool, str]]:
    """One message with a `role` a line."""
    return [one_object_a_line(values), (first(values, is_chat_message), "messages with a `role`")]


def read_jsonl(lines: list) -> list[SessionBuilder]:
    return read_chat([value for _, value in lines], "chat-jsonl", "lines", [n for n, _ in lines])
