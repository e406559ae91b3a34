"""XR-S1, reading (protocol/SESSIONS.md section 2.1): inspect_ai eval logs, the `.json` log and the
`.eval` zip of the same parts, each sample read into a SessionBuilder record of its own; positions
are indices in the sample's `messages`.
"""
from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from .turns import MAX_FILE_BYTES, NOT_JSON, Refused, SessionBuilder, as_text, text_of


# --- inspect_ai: ./logs/<time>_<task>_<id>.json (and .eval, a zip of the same parts) --------------
def read_inspect(value: dict) -> list[SessionBuilder]:
    """An inspect_ai eval log: each sample a session; messages with tool calls (a function and an
    arguments object) and tool results (an `error` with its type: approval is a denied step, any
    other a failed one); a user message marked `metadata.summary` a compaction, with its tokens and
    trigger from the sample's compaction event; system messages and reasoning left out."""
    samples = value.get("samples") if isinstance(value.get("samples"), list) else []
    builders = []
    for sample in samples:
        if not isinstance(sample, dict) or not isinstance(sample.get("messages"), list):
            continue
        b = SessionBuilder("inspect-ai", "messages")
        b.label = f"{sample.get('id', len(builders) + 1)}" + (f" epoch {sample['epoch']}"
                                                              if isinstance(
            sample.get("epoch"), int) and sample["epoch"] != 1 else "")
        attachments = sample.get("attachments") if isinstance(sample.get("attachments"),
                                                              dict) else {}
        events = [e for e in sample.get("events") or [] if isinstance(e,
            dict) and e.get("event") == "compaction"
                  and e.get("type", "summary") == "summary"] if isinstance(sample.get("events"),
                  list) else []
        for k, message in enumerate(sample["messages"]):
            b.read += 1
            inspect_message(b, message, k, attachments, events)
        builders.append(b)
    return builders


def attached(text: Any, attachments: dict) -> Any:
    if isinstance(text, str) and text.startswith("attachment://"):
        return attachments.get(text[len("attachment://"):], text)
    return text


def inspect_message(b: SessionBuilder, message: Any, k: int, attachments: dict,
                    events: list) -> None:
    if not isinstance(message, dict):
        b.skip("not a message", unread=True)
        return
    role = message.get("role")
    content = message.get("content")
    content = attached(content, attachments) if isinstance(content, str) else \
        [dict(p, text=attached(p.get("text"), attachments)) if isinstance(p,
            dict) and "text" in p else p
         for p in content] if isinstance(content, list) else content
    text = text_of(content, b.skip)
    if role == "system":
        b.skip("system or developer message (left out: not session history)")
    elif role == "user" and isinstance(message.get("metadata"),
                                       dict) and message["metadata"].get("summary") is True:
        event = events.pop(0) if events else {}
        meta = event.get("metadata") if isinstance(event.get("metadata"), dict) else {}
        inner = re.search(r"<summary>\s*(.*?)\s*</summary>", text, re.DOTALL)
        b.compaction(k, inner.group(1) if inner else text, source="user message with "
                     "metadata.summary",
                     summary_at=k, trigger=meta.get("trigger") if isinstance(meta.get("trigger"),
                     str) else None,
                     tokens_before=event.get("tokens_before"),
                     tokens_after=event.get("tokens_after"))
        b.skip("compaction record (kept as a compaction event, not a turn)")
    elif role == "user":
        b.user(text, k)
    elif role == "assistant":
        calls = [b.call(c.get("id"), c.get("function"), c.get("arguments"), k)
                 for c in message.get("tool_calls") or [] if isinstance(c, dict)] \
            if isinstance(message.get("tool_calls"), list) else []
        b.assistant(text, calls, k)
    elif role == "tool":
        error = message.get("error") if isinstance(message.get("error"), dict) else None
        if error is not None:
            denied = error.get("type") == "approval"
            body = "\n".join(filter(None, [text, as_text(error.get("message"))])) if as_text(
                error.get("message")) not in text else text
            b.result(message.get("tool_call_id"), body, k, name=message.get("function")
                     if isinstance(
                message.get("function"), str) else None, error=True,
                marked="denied" if denied else "failed",
                evidence=f"error.type {error.get('type')}")
        else:
            b.result(message.get("tool_call_id"), text, k, name=message.get("function")
                     if isinstance(
                message.get("function"), str) else None)
    else:
        b.skip(f"role {str(role)[:20]!r}", unread=True)


# --- The .eval file: a zip of the log's parts -----------------------------------------------------
MAX_ZIP_MEMBERS = 20_000


def unzip(data: bytes, parse) -> dict:
    """An inspect_ai .eval file (a zip of header.json and one JSON file per sample) as the .json
    log's shape; its members' sizes are checked before any is read. parse(text, part) is the JSON
    reader of the file's parts (NOT_JSON for a part that is not JSON)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        raise Refused("is a zip file, but not one this reader can open",
                      "an inspect_ai .eval log must be a whole zip; or convert it with "
                      "`inspect log convert --to json`")
    if len(members) > MAX_ZIP_MEMBERS or sum(m.file_size for m in members) > 4 * MAX_FILE_BYTES:
        raise Refused("unpacks to more than this reader takes", "convert the samples you need to "
                      ".json")
    names = {m.filename for m in members}
    if "header.json" not in names:
        raise Refused("is a zip file, but not an inspect_ai .eval log (it has no header.json)")
    header = zip_json(archive, "header.json", parse)
    samples = [zip_json(archive, name, parse) for name in sorted(names)
               if name.startswith("samples/") and name.endswith(".json")]
    return {"eval": header.get("eval") if isinstance(header, dict) else None, "samples": samples}


def zip_json(archive: zipfile.ZipFile, name: str, parse) -> Any:
    try:
        text = archive.read(name).decode("utf-8")
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError, RuntimeError, ValueError):
        raise Refused(f"holds a part ({name}) that cannot be read as UTF-8") from None
    value = parse(text, name)
    if value is NOT_JSON:
        raise Refused(f"holds a part ({name}) that is not JSON")
    return value


# --- Recognised from the content: the checks its registry entry names ----------------------------
def checks(value: Any) -> list[tuple[bool, str]]:
    """An object with an `eval` object and a list of `samples`."""
    obj = isinstance(value, dict)
    return [(obj, "an object"), (obj and isinstance(value.get("eval"), dict), "an `eval` object"),
            (obj and isinstance(value.get("samples"), list) and bool(value["samples"]),
             "a `samples` list (inspect writes it with --log-samples)")]
