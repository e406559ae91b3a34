"""XR-S1, reading (protocol/SESSIONS.md section 2): the session files a user brings, in the formats agents write,
read into turns: who said what, in order, with tool names, arguments and results kept, and thinking and side
conversations left out. Each file records how many lines or messages were read, skipped and why.

The files are untrusted input: a link, a device or pipe, a file too large, JSON nested too deeply, bytes that are
not UTF-8, a lone surrogate, or a file that is none of the formats is refused in one line, before anything is sent to
a model. The format is decided from the content, never from the file name.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..inputs import NOT_JSON, TaskSetError, parse_json
from ..records import sha256_bytes


FORMATS = {
    "chat-json": "a JSON list of chat messages or an object with a `messages` list (OpenAI style, tool calls and "
                 "tool results included)",
    "chat-jsonl": "JSONL with one chat message per line",
    "agent-log": "a coding-agent session log (JSONL lines with a `type` and a `message` of content blocks)",
}

FORMATS_READ = "; ".join(FORMATS.values())

SESSION_SUFFIXES = (".json", ".jsonl")     # in a folder, the files read; a file named on its own is read whatever its name

MAX_FILE_BYTES = 32 * 2 ** 20

MAX_TOTAL_BYTES = 256 * 2 ** 20

MAX_FILES = 1000

MAX_DEPTH = 64                          # JSON nesting a session may have (content blocks sit 5 or 6 deep)

MAX_TURNS = 50_000

TEXT_PARTS = ("text", "input_text", "output_text")

THINKING_PARTS = ("thinking", "redacted_thinking", "reasoning")


class SessionFileError(TaskSetError):
    """A session file that cannot be read: one line, exit 2, before any call."""


def refuse(where: str, why: str, hint: str = "") -> SessionFileError:
    return SessionFileError(f"{where} {why}; " + (hint or f"the sessions study reads {FORMATS_READ}"))


# --- Files -------------------------------------------------------------------------------------------------------
def printable_name(name: str) -> bool:
    """A file name the lock, the manifest and the reports can write: UTF-8 (not bytes the file system only keeps
    as escapes) and printable."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return name.isprintable()


def session_files(path: Path) -> tuple[list[tuple[Path, str]], dict[str, str]]:
    """The files to read under path (a file, or a folder's .json and .jsonl files, not its subfolders) with the name
    each is shown by, and the folder entries left out with why."""
    if path.is_symlink():
        raise refuse(str(path), "is a link", "give the session file or folder itself")
    if not path.exists():
        raise refuse(f"no sessions at {path}:", "check the path", "give a session file or a folder of them with "
                     "--sessions PATH (the formats read: tasks/sessions/README.md), or leave --sessions out to run "
                     "the example sessions")
    if path.is_file():
        if not printable_name(path.name):
            raise refuse(repr(str(path))[1:-1], "has a name that is not printable UTF-8 (the lock and every report "
                         "name each file)", "rename the file")
        return [(path, path.name)], {}
    if not path.is_dir():
        raise refuse(str(path), "is not a regular file or folder (a device, pipe or socket)",
                     "give a session file or a folder of them")
    files, left_out = [], {}
    for entry in sorted(path.iterdir(), key=lambda p: p.name):
        if not printable_name(entry.name):
            raise refuse(repr(str(entry))[1:-1], "has a name that is not printable UTF-8 (the lock and every report "
                         "name each file)", "rename the file, or move it out of the folder")
        if entry.name.startswith("."):
            left_out[entry.name] = "hidden"
        elif entry.is_symlink():
            raise refuse(str(entry), "is a link", "copy the session file itself into the folder, or remove the link")
        elif entry.is_dir():
            left_out[entry.name] = "a folder (not read)"
        elif not entry.name.lower().endswith(SESSION_SUFFIXES):
            left_out[entry.name] = "not .json or .jsonl"
        elif not entry.is_file():
            raise refuse(str(entry), "is not a regular file (a device, pipe or socket)", "remove it from the folder")
        else:
            files.append((entry, entry.name))
    if not files:
        raise refuse(str(path), "holds no .json or .jsonl file", f"put session files there ({FORMATS_READ})")
    if len(files) > MAX_FILES:
        raise refuse(str(path), f"holds {len(files)} session files, more than the {MAX_FILES} one run reads",
                     "split them into several folders")
    return files, left_out


def read_file_text(path: Path, shown: str) -> tuple[bytes, str]:
    """A session file's bytes (at most MAX_FILE_BYTES) and its text (UTF-8, a leading byte-order mark dropped)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise refuse(shown, f"cannot be opened ({err.strerror})", "check the file and its permissions") from None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise refuse(shown, f"is larger than {MAX_FILE_BYTES // 2 ** 20} MiB",
                     "cut it into smaller sessions, or remove the large tool outputs")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise refuse(shown, f"is not UTF-8 text (byte {err.start} cannot be decoded)",
                     "save it as UTF-8 and run again") from None
    return data, text[1:] if text.startswith("\ufeff") else text


def check_tree(value: Any, shown: str) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH or holding a lone surrogate (a string no UTF-8 file can carry)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise refuse(shown, f"is nested more than {MAX_DEPTH} levels deep", "no session format nests so deeply")
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise refuse(shown, "holds a lone surrogate (\\ud800 to \\udfff) in a string",
                             "fix the escape in the file and run again") from None
        elif isinstance(item, dict):
            stack += [(k, depth + 1) for k in item] + [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            stack += [(v, depth + 1) for v in item]


def parse_session_json(text: str, shown: str) -> Any:
    """A session file's JSON value (through the shared reader of JSON inputs, and no deeper than MAX_DEPTH), or
    NOT_JSON when the text is not JSON at all (JSONL, say)."""
    value = parse_json(text, shown, "a session", f"the sessions study reads {FORMATS_READ}", error=SessionFileError,
                       or_not_json=True)
    if value is not NOT_JSON:
        check_tree(value, shown)
    return value


# --- Formats -----------------------------------------------------------------------------------------------------
def is_agent_line(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") in ("user", "assistant") and isinstance(item.get("message"),
                                                                                              dict)


def is_chat_message(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("role"), str)


def read_session_file(path: Path, shown: str) -> dict:
    """One session file: {"file", "format", "sha256", "bytes", "turns", "read": {unit, read, skipped, joined}}."""
    data, text = read_file_text(path, shown)
    whole = parse_session_json(text, shown) if text.strip() else NOT_JSON
    if isinstance(whole, list) or (isinstance(whole, dict) and isinstance(whole.get("messages"), list)):
        messages = whole if isinstance(whole, list) else whole["messages"]
        if not any(is_chat_message(m) for m in messages):
            raise refuse(shown, "is JSON, but holds no chat message (an object with a `role`)")
        reader = SessionReader("chat-json", "messages", shown)
        reader.read_chat(messages)
    else:
        if whole is not NOT_JSON and not (is_agent_line(whole) or is_chat_message(whole)):
            raise refuse(shown, f"is JSON ({type(whole).__name__}), but not a session")
        lines = jsonl_lines(text, shown)
        if any(is_agent_line(item) for _, item in lines):
            reader = SessionReader("agent-log", "lines", shown)
            reader.read_agent_log(lines)
        elif any(is_chat_message(item) for _, item in lines):
            reader = SessionReader("chat-jsonl", "lines", shown)
            reader.read_chat([item for _, item in lines])
        else:
            raise refuse(shown, "is neither JSON nor JSONL of chat messages or agent-log lines")
        reader.skipped.update({k: v for k, v in lines.skipped.items()})
        reader.read += lines.torn
    if not reader.turns:
        raise refuse(shown, f"is read as {reader.format}, but holds no user, assistant or tool turn",
                     "give a session that has at least one turn")
    if len(reader.turns) > MAX_TURNS:
        raise refuse(shown, f"holds {len(reader.turns)} turns, more than the {MAX_TURNS} one session may have",
                     "cut it into smaller sessions")
    return {"file": shown, "format": reader.format, "sha256": sha256_bytes(data.replace(b"\r\n", b"\n")),
            "bytes": len(data), "turns": reader.turns,
            "read": {"unit": reader.unit, "read": reader.read, "skipped": dict(sorted(reader.skipped.items())),
                     "joined": reader.joined}}


class JsonLines(list):
    """The parsed lines of a JSONL file as (line number, value), with the lines left out counted."""

    def __init__(self):
        super().__init__()
        self.skipped: dict[str, int] = {}
        self.torn = 0


def jsonl_lines(text: str, shown: str) -> JsonLines:
    """Every non-blank line parsed; a last line cut short (a log written when the agent was killed) is counted and
    left out, any other line that is not JSON refuses the file."""
    lines = JsonLines()
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not numbered:
        raise refuse(shown, "is empty")
    for position, (number, line) in enumerate(numbered):
        value = parse_session_json(line, f"{shown} line {number}")
        if value is NOT_JSON:
            if position == len(numbered) - 1 and position:
                lines.skipped["last line cut short (not JSON)"] = 1
                lines.torn += 1
                continue
            raise refuse(shown, f"is not JSON, and its line {number} is not a JSON value either, so it is not "
                                f"JSONL")
        lines.append((number, value))
    return lines


class SessionReader:
    """Turns from chat messages or agent-log lines, counting what is left out and why."""

    def __init__(self, fmt: str, unit: str, shown: str):
        self.format, self.unit, self.shown = fmt, unit, shown
        self.turns: list[dict] = []
        self.read, self.joined = 0, 0
        self.skipped: dict[str, int] = {}
        self.calls: dict[str, dict] = {}        # tool call id -> the call, to name a tool result

    def skip(self, why: str, n: int = 1) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + n

    def read_chat(self, messages: list) -> None:
        for message in messages:
            self.read += 1
            if not is_chat_message(message):
                self.skip("not a chat message (an object with a role)")
                continue
            role = message["role"].lower()
            if role in ("system", "developer"):
                self.skip("system or developer message (left out: not session history)")
            elif role == "user":
                self.add_user(self.blocks(message.get("content")))
            elif role == "assistant":
                blocks = self.blocks(message.get("content"))
                if isinstance(message.get("reasoning_content"), str) or isinstance(message.get("reasoning"), str):
                    self.skip("thinking left out")
                calls = message.get("tool_calls")
                for call in calls if isinstance(calls, list) else []:
                    blocks.append(self.chat_call(call))
                if isinstance(message.get("function_call"), dict):
                    blocks.append(self.chat_call({"function": message["function_call"]}))
                self.add_assistant([b for b in blocks if b is not None], None)
            elif role in ("tool", "function"):
                call_id = message.get("tool_call_id")
                name = message.get("name") if isinstance(message.get("name"), str) else None
                self.add_result(call_id, name, self.result_text(message.get("content")),
                                message.get("is_error") is True)
            else:
                self.skip(f"role {role[:20]!r} (not user, assistant or tool)")

    def read_agent_log(self, lines: list) -> None:
        for _, line in lines:
            self.read += 1
            kind = line.get("type") if isinstance(line, dict) else None
            if kind not in ("user", "assistant"):
                self.skip(f"line type {str(kind)[:30]!r} (no turn)" if isinstance(kind, str) else "line with no type")
            elif line.get("isSidechain") is True:
                self.skip("side conversation (isSidechain, left out)")
            elif line.get("isMeta") is True:
                self.skip("meta message (isMeta)")
            elif line.get("isCompactSummary") is True:
                self.skip("an earlier compaction summary (isCompactSummary)")
            elif not isinstance(line.get("message"), dict):
                self.skip("no message")
            elif kind == "user":
                self.add_user(self.blocks(line["message"].get("content")))
            else:
                message = line["message"]
                self.add_assistant(self.blocks(message.get("content")),
                                   message.get("id") if isinstance(message.get("id"), str) else None)

    # content: a string, null, or a list of parts or blocks
    def blocks(self, content: Any) -> list[dict]:
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        if content is None:
            return []
        if not isinstance(content, list):
            self.skip("content that is neither text nor a list of parts")
            return []
        out = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else "text" if isinstance(part, str) else None
            if isinstance(part, str):
                out.append({"type": "text", "text": part})
            elif kind in TEXT_PARTS or (kind is None and isinstance(part, dict) and isinstance(part.get("text"), str)):
                if isinstance(part.get("text"), str):
                    out.append({"type": "text", "text": part["text"]})
            elif kind in THINKING_PARTS:
                self.skip("thinking left out")
            elif kind == "tool_use":
                name = part.get("name") if isinstance(part.get("name"), str) else "tool"
                out.append({"type": "call", "id": part.get("id"), "name": name, "input": part.get("input")})
            elif kind == "tool_result":
                out.append({"type": "result", "id": part.get("tool_use_id"), "text": self.result_text(
                    part.get("content")), "error": part.get("is_error") is True})
            else:
                self.skip(f"{str(kind)[:30]} part (not text)" if isinstance(kind, str) else "a part of no known type")
        return out

    def result_text(self, content: Any) -> str:
        if isinstance(content, str):
            return content
        return "\n".join(b["text"] for b in self.blocks(content) if b["type"] == "text")

    def chat_call(self, call: Any) -> dict | None:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            self.skip("tool call with no function")
            return None
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            parsed = parse_session_json(arguments, f"{self.shown}: a tool call's arguments") \
                if arguments.strip() else {}
            arguments = {"arguments": arguments} if parsed is NOT_JSON else parsed
        name = function.get("name") if isinstance(function.get("name"), str) else "tool"
        return {"type": "call", "id": call.get("id"), "name": name, "input": arguments}

    def add_user(self, blocks: list[dict]) -> None:
        text = [b["text"] for b in blocks if b["type"] == "text" and b["text"].strip()]
        for block in blocks:
            if block["type"] == "result":
                self.add_result(block["id"], None, block["text"], block["error"])
            elif block["type"] == "call":
                self.skip("tool call in a user turn")
        if text:
            self.turns.append({"role": "user", "text": "\n\n".join(text)})

    def add_assistant(self, blocks: list[dict], message_id: str | None) -> None:
        text = [b["text"] for b in blocks if b["type"] == "text" and b["text"].strip()]
        calls = [{"id": b["id"], "name": b["name"], "input": b["input"]} for b in blocks if b["type"] == "call"]
        for call in calls:
            if isinstance(call["id"], str):
                self.calls[call["id"]] = call
        if not text and not calls:
            return
        last = self.turns[-1] if self.turns else None
        if message_id and last and last["role"] == "assistant" and last.get("message_id") == message_id:
            last["text"] = "\n\n".join(filter(None, [last["text"], *text]))
            last["calls"] += calls
            self.joined += 1
            return
        turn = {"role": "assistant", "text": "\n\n".join(text), "calls": calls}
        if message_id:
            turn["message_id"] = message_id
        self.turns.append(turn)

    def add_result(self, call_id: Any, name: str | None, text: str, error: bool) -> None:
        call = self.calls.get(call_id) if isinstance(call_id, str) else None
        self.turns.append({"role": "tool", "tool": name or (call["name"] if call else "tool"),
                           "call": call, "text": text, "error": error})
