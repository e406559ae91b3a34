"""XR-S1, reading (protocol/SESSIONS.md section 2): the session files a user brings, in the
formats agents write, read into sessions: who said what, in order, with tool names, arguments and
results linked to their calls, the compactions the agent recorded, and every item left out counted
with why. Each format has one module here and one entry in registry.py's READERS, whose docstring
says how to add one; the record every reader fills is turns.py's.

The files are untrusted input: a link, a device or pipe, a file too large (checked before it is
read), JSON nested too deeply, bytes that are not UTF-8, a lone surrogate, or a file that is none of
the formats is refused in one line, before anything is sent to a model; a refusal names the closest
format and what it lacks. The format is decided from the content, never from the file name: the
file is parsed as JSON, JSONL or text, and the first entry of that layout whose checks all pass
reads it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ....inputs import NOT_JSON, TaskSetError, parse_json
from ....records import sha256_bytes
from .registry import FORMATS, FORMATS_READ, READERS, Reader
from .turns import MAX_ARGUMENT_DEPTH, MAX_FILE_BYTES, NestedTooDeep, Refused


# --- Files ------------------------------------------------------------------------------------
# in a folder, the files read (and aider's history files)
SESSION_SUFFIXES = (".json", ".jsonl", ".traj", ".eval")

# .aider.chat.history.md, or a --chat-history-file named like it
AIDER_NAME = "chat.history.md"

MAX_TOTAL_BYTES = 256 * 2 ** 20

MAX_FILES = 1000

# JSON nesting a session may have (content blocks sit 5 or 6 deep)
MAX_DEPTH = 64

MAX_TURNS = 250_000


class SessionFileError(TaskSetError):
    """A session file that cannot be read: one line, exit 2, before any call."""


class NotASession(SessionFileError):
    """A JSON object or list that is none of the session formats (Cline's task_metadata.json beside
    its history): in a folder that holds sessions, left out and named, not a refusal of the folder
    (a damaged file, a bare number, text that is not JSON are still refused)."""


def refuse(where: str, why: str, hint: str = "", kind: type = SessionFileError) -> SessionFileError:
    return kind(f"{where} {why}; " + (hint or f"the sessions study reads {FORMATS_READ}"))


def printable_name(name: str) -> bool:
    """A file name the lock, the manifest and the reports can write: UTF-8 (not bytes the file
    system only keeps as escapes) and printable."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return name.isprintable()


def wanted(name: str) -> bool:
    lower = name.lower()
    return lower.endswith(SESSION_SUFFIXES) or lower.endswith(AIDER_NAME)


def session_files(path: Path) -> tuple[list[tuple[Path, str]], dict[str, str]]:
    """The files to read under path (a file, or a folder's session files, not its subfolders) with
    the name each is shown by, and the folder entries left out with why."""
    if path.is_symlink():
        raise refuse(str(path), "is a link", "give the session file or folder itself")
    if not path.exists():
        raise refuse(f"no sessions at {path}:", "check the path", "give a session file or a folder "
                     "of them with --sessions PATH (the formats read: tasks/sessions/README.md), "
                     "or leave --sessions out to run the example sessions")
    if path.is_file():
        if not printable_name(path.name):
            raise refuse(repr(str(path))[1:-1], "has a name that is not printable UTF-8 (the lock "
                         "and every report "
                         "name each file)", "rename the file")
        return [(path, path.name)], {}
    if not path.is_dir():
        raise refuse(str(path), "is not a regular file or folder (a device, pipe or socket)",
                     "give a session file or a folder of them")
    files, left_out = [], {}
    for entry in sorted(path.iterdir(), key=lambda p: p.name):
        if not printable_name(entry.name):
            raise refuse(repr(str(entry))[1:-1], "has a name that is not printable UTF-8 (the lock "
                         "and every report "
                         "name each file)", "rename the file, or move it out of the folder")
        if entry.name.startswith(".") and not entry.name.lower().endswith(AIDER_NAME):
            left_out[entry.name] = "hidden"
        elif entry.is_symlink():
            raise refuse(str(entry), "is a link", "copy the session file itself into the folder, "
                         "or remove the link")
        elif entry.is_dir():
            left_out[entry.name] = "a folder (not read)"
        elif not wanted(entry.name):
            left_out[entry.name] = "not .json, .jsonl, .traj, .eval or a chat.history.md"
        elif not entry.is_file():
            raise refuse(str(entry), "is not a regular file (a device, pipe or socket)",
                         "remove it from the folder")
        else:
            files.append((entry, entry.name))
    if not files:
        below = files_below(path)
        if below:
            raise refuse(str(path), "holds no session file itself, and the study reads no "
                         f"subfolder; {below[0]} "
                         f"holds one" + (f" ({len(below)} subfolders do)" if len(below)
                                         > 1 else ""),
                         "give that subfolder or a file in it with --sessions, or copy the "
                         "sessions you want into one folder (`audit` reads a whole tree of logs: "
                         "tasks/sessions/README.md)")
        raise refuse(str(path), "holds no session file (.json, .jsonl, .traj, .eval or "
                     ".aider.chat.history.md)",
                     f"put session files there ({FORMATS_READ})")
    if len(files) > MAX_FILES:
        raise refuse(str(path), f"holds {len(files)} session files, more than the {MAX_FILES} one "
                     "run reads",
                     "split them into several folders")
    return files, left_out


def files_below(path: Path, depth: int = 4, most: int = 20) -> list[Path]:
    """Subfolders under path (links never followed, hidden ones passed over, at most `depth` levels
    down) that hold a session file themselves: what to name when a folder holds none (at most `most`
    of them)."""
    found: list[Path] = []
    level = [path]
    for _ in range(depth):
        deeper = []
        for folder in level:
            try:
                entries = sorted(folder.iterdir(), key=lambda p: p.name)
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(".") or entry.is_symlink() or not entry.is_dir():
                    continue
                try:
                    holds = any(wanted(f.name) and f.is_file()
                                and not f.is_symlink() for f in entry.iterdir())
                except OSError:
                    continue
                if holds:
                    found.append(entry)
                    if len(found) >= most:
                        return found
                deeper.append(entry)
        level = deeper
    return found


def read_file_bytes(path: Path, shown: str) -> bytes:
    """A session file's bytes; its size is checked before any of it is read (at most
    MAX_FILE_BYTES)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise refuse(shown, f"cannot be opened ({err.strerror})", "check the file and its "
                     "permissions") from None
    with os.fdopen(fd, "rb") as handle:
        if os.fstat(handle.fileno()).st_size > MAX_FILE_BYTES:
            raise too_large(shown)
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise too_large(shown)
    return data


def too_large(shown: str) -> SessionFileError:
    return refuse(shown, f"is larger than {MAX_FILE_BYTES // 2 ** 20} MiB",
                  "cut it into smaller sessions, or remove the large tool outputs")


def decode_text(data: bytes, shown: str, lenient: bool = False) -> str:
    """A file's text: UTF-8, a leading byte-order mark dropped; lenient (the audit, which only
    reads), a byte that is not UTF-8 read as U+FFFD instead of refusing the whole file."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        if lenient:
            return decode_text(data.decode("utf-8", errors="replace").encode("utf-8"), shown)
        raise refuse(shown, f"is not UTF-8 text (byte {err.start} cannot be decoded)",
                     "save it as UTF-8 and run again") from None
    return text[1:] if text.startswith("\ufeff") else text


def read_file_text(path: Path, shown: str) -> tuple[bytes, str]:
    """A file's bytes (at most MAX_FILE_BYTES) and its UTF-8 text."""
    data = read_file_bytes(path, shown)
    return data, decode_text(data, shown)


def check_tree(value: Any, shown: str) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH (lone surrogates are refused by the shared JSON
    reader)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise refuse(shown, f"is nested more than {MAX_DEPTH} levels deep",
                         "no session format nests so deeply")
        if isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values() if isinstance(v, (dict, list))]
        elif isinstance(item, list):
            stack += [(v, depth + 1) for v in item if isinstance(v, (dict, list))]


def parse_session_json(text: str, shown: str) -> Any:
    """A session file's JSON value (through the shared reader of JSON inputs, and no deeper than
    MAX_DEPTH), or NOT_JSON when the text is not JSON at all (JSONL, say)."""
    value = parse_json(text, shown, "a session", f"the sessions study reads {FORMATS_READ}",
                       error=SessionFileError,
                       or_not_json=True)
    if (
        value is not NOT_JSON
        and isinstance(value, (dict, list))
        and text.count("[") + text.count("{") > MAX_DEPTH
    ):
        check_tree(value, shown)                # fewer brackets than MAX_DEPTH cannot nest deeper
    return value


class JsonLines(list):
    """The parsed lines of a JSONL file as (line number, value), with the lines left out counted."""

    def __init__(self):
        super().__init__()
        self.skipped: dict[str, int] = {}
        self.torn = 0


def jsonl_lines(text: str, shown: str) -> JsonLines | None:
    """Every non-blank line parsed; a last line cut short (a log written when the agent was killed)
    is counted and left out. None when another line is not JSON: the text is not JSONL."""
    lines = JsonLines()
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    for position, (number, line) in enumerate(numbered):
        value = parse_session_json(line, f"{shown} line {number}")
        if value is NOT_JSON:
            if position == len(numbered) - 1 and position:
                lines.skipped["last line cut short (not JSON)"] = 1
                lines.torn += 1
                continue
            return None
        lines.append((number, value))
    return lines


# --- Deciding the format (registry.py: each format's checks, in the order they are tried) ---------
ZIP_MAGIC = b"PK\x03\x04"


def candidates(layout: str, value: Any) -> list[tuple[Reader, list[tuple[bool, str]]]]:
    """Each format of a layout that has checks, with its checks on the value: (passed, what it
    needs)."""
    return [(reader, reader.checks(value)) for reader in READERS
            if reader.layout == layout and reader.checks is not None]


def passes(checks: list[tuple[bool, str]]) -> bool:
    return all(ok for ok, _ in checks)


def choose(tried: list, shown: str, what: str, kind: type = SessionFileError) -> Reader:
    """The first format whose checks all pass; else a refusal naming the closest one (the most of
    its checks beyond the first, which only asks for a list or an object) and what it lacks."""
    for reader, checks in tried:
        if passes(checks):
            return reader
    reader, checks = max(tried, key=lambda c: sum(ok for ok, _ in c[1][1:]) / max(1, len(c[1]) - 1))
    if not any(ok for ok, _ in checks[1:]):
        raise refuse(shown, f"is {what}, but none of the session formats", kind=kind)
    missing = next(need for ok, need in checks if not ok)
    raise refuse(shown, f"is {what}, but none of the session formats: the closest is {reader.name} "
                        f"({reader.about}), and it lacks {missing}", kind=kind)


def read_sessions_in(data: bytes, shown: str, lenient: bool = False) -> tuple[str, list]:
    """(format, [SessionBuilder]) of one file's bytes (lenient: decode_text's)."""
    zipped = next((reader for reader in READERS if reader.unzip is not None), None)
    if data[:4] == ZIP_MAGIC and zipped is not None:
        value = zipped.unzip(data, lambda text, part: parse_session_json(text, f"{shown} ({part})"))
        return zipped.name, zipped.read(value)
    text = decode_text(data, shown, lenient)
    if not text.strip():
        raise refuse(shown, "is empty")
    whole = parse_session_json(text, shown) if text.lstrip()[:1] in "[{" else NOT_JSON
    if isinstance(whole, (dict, list)):
        tried = candidates("json", whole)
        one_line = JsonLines()
        one_line.append((1, whole))
        if isinstance(whole, dict) and not any(passes(checks) for _, checks in tried):
            tried += candidates("jsonl", [whole])                # a JSONL file of one line
        reader = choose(tried, shown, f"JSON ({type(whole).__name__})", NotASession)
        return reader.name, reader.read(one_line if reader.layout == "jsonl" else whole)
    if whole is not NOT_JSON:
        raise refuse(shown, f"is JSON ({type(whole).__name__}), but not a session")
    lines = jsonl_lines(text, shown)
    if lines is not None and lines:
        reader = choose(candidates("jsonl", [value for _, value in lines]), shown, "JSONL")
        builders = reader.read(lines)
        for builder in builders:
            for why, n in lines.skipped.items():
                builder.skip(why, n)
            builder.read += lines.torn
        return reader.name, builders
    tried = candidates("text", text)
    reader = next((reader for reader, checks in tried if passes(checks)), None)
    if reader is not None:
        return reader.name, reader.read(text)
    raise refuse(shown, "is neither JSON nor JSONL, nor " +
                 " nor ".join(checks[0][1] for _, checks in tried))


# --- One file ---------------------------------------------------------------------------------
def read_session_file(path: Path, shown: str, lenient: bool = False) -> list[dict]:
    """The sessions of one file, each {"file" (its name: the file's, or `file#label` for one of
    several), "source", "format", "sha256", "bytes", "turns", "compactions", "kind", "notes",
    "read"}; lenient: a byte that is not UTF-8 read as U+FFFD (decode_text)."""
    data = read_file_bytes(path, shown)
    try:
        fmt, builders = read_sessions_in(data, shown, lenient)
    except NestedTooDeep:
        raise refuse(shown, "holds a tool call whose arguments are nested more than "
                     f"{MAX_ARGUMENT_DEPTH} levels deep",
                     "no session format nests so deeply") from None
    except Refused as err:
        raise refuse(shown, err.why, err.hint) from None
    sessions = [b.session() for b in builders]
    empty = [s for s in sessions if not s["turns"]]
    sessions = [s for s in sessions if s["turns"]]
    if not sessions:
        what = f"is read as {fmt}, but holds no user, assistant or tool turn"
        raise refuse(shown, what, "give a session that has at least one turn")
    sha = sha256_bytes(data.replace(b"\r\n", b"\n"))
    out, names = [], set()
    for k, session in enumerate(sessions, 1):
        if len(session["turns"]) > MAX_TURNS:
            raise refuse(shown, f"holds {len(session['turns'])} turns, more than the {MAX_TURNS} "
                         "one session may "
                         f"have", "cut it into smaller sessions")
        name = shown if len(sessions) == 1 else f"{shown}#{printable_label(session['label']) or k}"
        name = f"{name} ({k})" if name in names else name
        names.add(name)
        if empty and k == 1:
            session["notes"].append(f"{len(empty)} other session(s) in the file hold no turn and "
                                    "are left out")
        out.append({"file": name, "source": shown, "sha256": sha, "bytes": len(data), **session})
    return out


def printable_label(label: str | None) -> str:
    text = "".join(c if c.isalnum() or c in "-_.: " else "-" for c in (label or ""))[:60].strip()
    return text
