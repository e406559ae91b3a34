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
reads it. A JSONL file whose last line was cut short is read without it (counted); one with another
line that is not JSON is refused, naming that line. A JSONL file is read a line at a time (its
reader keeps what it needs, the file is never held whole); any other file, and one whose lines turn
out not to be JSON lines throughout, is read whole, so that what is read and every refusal are the
same either way. A folder's links and the files that cannot be read are refused together, in one
line."""
from __future__ import annotations

import dataclasses
import hashlib
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

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


def shown_name(name: str) -> str:
    """A file's name as a message prints it: itself when printable_name, else its escapes (never a
    raw control character)."""
    return name if printable_name(name) else repr(name)[1:-1]


# a folder's refusal names at most this many of its files that cannot be read
NAMED_FILES = 5

# a reason, in that refusal, is cut after this many characters
NAMED_REASON_CHARS = 120


class LinkInFolder(SessionFileError):
    """A folder entry that is a link: named, with the path it points to, beside the folder's other
    files that cannot be read."""


def link_in_folder(entry: Path) -> LinkInFolder:
    return refuse(shown_name(entry.name), "is a link, never followed: give the path it points to, "
                  f"{shown_name(str(entry.resolve()))}", "copy the session file itself into the "
                  "folder, or remove the link", LinkInFolder)


def unreadable_files(folder: Path, refused: list[tuple[str, SessionFileError]]) -> SessionFileError:
    """One line naming each (name, refusal) of a folder's files that cannot be read (its links
    among them), with why (at most NAMED_FILES of them, then how many more): the sessions study,
    pre-registered, never runs on part of a folder, so every file to move is named at once."""
    named = []
    for name, err in refused[:NAMED_FILES]:
        why = str(err).removeprefix(name + " ").split("; ", 1)[0]
        if len(why) > NAMED_REASON_CHARS and not isinstance(err, LinkInFolder):
            why = why[:NAMED_REASON_CHARS].rsplit(" ", 1)[0] + " ..."
        named.append(f"{shown_name(name)} ({why})")
    more = len(refused) - len(named)
    listed = ", ".join(named) + (f" and {more} more" if more else "")
    count = f"{len(refused)} session file" + ("s" if len(refused) > 1 else "")
    repair = ("repair or remove each damaged line named, or " if
              any(isinstance(err, DamagedLine) for _, err in refused) else "")
    return refuse(shown_name(str(folder)), f"holds {count} that cannot be read: {listed}",
                  "the sessions study is pre-registered and never runs on part of a folder: "
                  + repair + "move " + ("them" if len(refused) > 1 else "it") + " out of the "
                  "folder (or copy the good files into a folder of their own) and run again")


class SessionFiles(list):
    """A folder's files to read as (path, the name it is shown by), with its links apart as
    (name, LinkInFolder): read_session_files names them with the files that cannot be read."""

    def __init__(self):
        super().__init__()
        self.links: list[tuple[str, LinkInFolder]] = []


def wanted(name: str) -> bool:
    lower = name.lower()
    return lower.endswith(SESSION_SUFFIXES) or lower.endswith(AIDER_NAME)


def session_files(path: Path) -> tuple[list[tuple[Path, str]], dict[str, str]]:
    """The files to read under path (a file, or a folder's session files, not its subfolders) with
    the name each is shown by, and the folder entries left out with why."""
    if path.is_symlink():
        raise refuse(shown_name(str(path)), "is a link, and links are never followed",
                     f"give the path it points to: {shown_name(str(path.resolve()))}")
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
    files, left_out = SessionFiles(), {}
    for entry in sorted(path.iterdir(), key=lambda p: p.name):
        if not printable_name(entry.name):
            raise refuse(repr(str(entry))[1:-1], "has a name that is not printable UTF-8 (the lock "
                         "and every report "
                         "name each file)", "rename the file, or move it out of the folder")
        if entry.name.startswith(".") and not entry.name.lower().endswith(AIDER_NAME):
            left_out[entry.name] = "hidden"
        elif entry.is_symlink():
            files.links.append((entry.name, link_in_folder(entry)))
        elif entry.is_dir():
            left_out[entry.name] = "a folder (not read)"
        elif not wanted(entry.name):
            left_out[entry.name] = "not .json, .jsonl, .traj, .eval or a chat.history.md"
        elif not entry.is_file():
            raise refuse(str(entry), "is not a regular file (a device, pipe or socket)",
                         "remove it from the folder")
        else:
            files.append((entry, entry.name))
    if not files and files.links:
        raise unreadable_files(path, files.links)
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


def open_session_file(path: Path, shown: str) -> BinaryIO:
    """A session file opened to read (never through a link); its size is checked before any of it
    is read (at most MAX_FILE_BYTES)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise refuse(shown, f"cannot be opened ({err.strerror})", "check the file and its "
                     "permissions") from None
    handle = os.fdopen(fd, "rb")
    status = os.fstat(handle.fileno())
    if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_FILE_BYTES:
        handle.close()
        # a file made a pipe or device after it was listed: it is read by seeking in it
        raise too_large(shown) if stat.S_ISREG(status.st_mode) else refuse(
            shown, "is not a regular file (a device, pipe or socket)", "give the file itself")
    return handle


def read_whole(handle: BinaryIO, shown: str) -> bytes:
    """An opened session file's bytes, from its start (at most MAX_FILE_BYTES)."""
    handle.seek(0)
    data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise too_large(shown)
    return data


def read_file_bytes(path: Path, shown: str) -> bytes:
    """A session file's bytes (at most MAX_FILE_BYTES, its size checked before it is read)."""
    with open_session_file(path, shown) as handle:
        return read_whole(handle, shown)


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


# why a JSONL file's last line, cut short, is left out (counted in the session's skipped items)
TORN_LINE = "last line cut short (not JSON)"


class JsonLines(list):
    """The parsed lines of a JSONL file as (line number, value), with the lines left out counted
    and the numbers of the lines that are not JSON (a damaged or cut line before the last)."""

    def __init__(self):
        super().__init__()
        self.skipped: dict[str, int] = {}
        self.torn = 0
        self.damaged: list[int] = []


class DamagedLine(SessionFileError):
    """A JSONL file with a line before its last that is not JSON: refused, naming the line."""


def jsonl_lines(text: str, shown: str) -> JsonLines | None:
    """Every non-blank line parsed; a last line cut short (a log written when the agent was killed)
    is counted and left out, and any other line that is not JSON is named in damaged. None when
    no more lines are JSON than are not: the text is not JSONL."""
    lines = JsonLines()
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    for position, (number, line) in enumerate(numbered):
        value = parse_session_json(line, f"{shown} line {number}")
        if value is NOT_JSON:
            if position == len(numbered) - 1 and position:
                lines.skipped[TORN_LINE] = 1
                lines.torn += 1
            else:
                lines.damaged.append(number)
            continue
        lines.append((number, value))
    return lines if len(lines) > len(lines.damaged) else None


def damaged_lines(lines: JsonLines, shown: str) -> DamagedLine:
    """The refusal of a JSONL file with damaged lines: the first named, the others counted, and
    what to do."""
    first, more = lines.damaged[0], len(lines.damaged) - 1
    others = f" ({more} other line{'s' * (more != 1)} not JSON either)" if more else ""
    return refuse(shown, f"is JSONL, but line {first} is not JSON: a damaged or cut line{others}",
                  f"repair or remove {'that line' if not more else 'those lines'} (only a cut "
                  "last line is left out), or leave the file out", DamagedLine)


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
    if lines is not None and lines and not lines.damaged:
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
    if lines is not None and lines.damaged:
        raise damaged_lines(lines, shown)
    raise refuse(shown, "is neither JSON nor JSONL, nor " +
                 " nor ".join(checks[0][1] for _, checks in tried))


# --- A JSONL file read one line at a time --------------------------------------------------------
# the lines whose values a format's checks are given (turns.first looks at 500, after a first line)
HEAD_LINES = 501

# the first lines, parsed for the checks, are kept for the reader while they hold no more than this
HEAD_CHARS = 4 * 2 ** 20


class NotStreamed(Exception):
    """A file the stream does not read to its end: read_sessions_in reads it whole instead."""


def file_line(handle: BinaryIO, offset: int, size: int) -> bytes:
    """The line of an opened file that begins at offset (with its newline), read no further than
    size; each pass over the file keeps its own offset, so that two never disturb each other."""
    handle.seek(offset)
    return handle.readline(size - offset)


def blank(line: str) -> bool:
    return not line or line.isspace()


@dataclasses.dataclass
class Scan:
    """What one pass over a file's bytes finds before any of it is parsed."""
    sha256: str                         # of the bytes, CRLF read as LF (as read_session_file's)
    size: int                           # the bytes read: later passes read no further
    lines: int                          # non-blank lines
    last: int                           # the number of the last non-blank line (0: none)


def scan_file(handle: BinaryIO, lenient: bool) -> Scan:
    """A file's sha256, size and non-blank lines, one line of it in memory at a time. NotStreamed
    for a zip, a file over MAX_FILE_BYTES or one that is not UTF-8 (strict): read whole, it is
    refused or read as before."""
    digest, size, lines, last, number = hashlib.sha256(), 0, 0, 0, 0
    errors = "replace" if lenient else "strict"
    while size <= MAX_FILE_BYTES:
        raw = file_line(handle, size, MAX_FILE_BYTES + 1)
        if not raw or (size == 0 and raw[:4] == ZIP_MAGIC):
            break
        digest.update(raw.replace(b"\r\n", b"\n"))
        try:
            text = raw.decode("utf-8", errors)
        except UnicodeDecodeError:
            raise NotStreamed from None
        if size == 0 and text.startswith("\ufeff"):
            text = text[1:]
        size += len(raw)
        # a line of the file may hold several lines of the text (U+2028, a form feed)
        for piece in text.splitlines():
            number += 1
            if not blank(piece):
                lines, last = lines + 1, number
    if size > MAX_FILE_BYTES or size == 0:
        raise NotStreamed
    return Scan(digest.hexdigest(), size, lines, last)


class StreamedLines:
    """A JSONL file's lines as (line number, value), parsed from the file one at a time each time
    they are gone through (a reader may go through them more than once), as jsonl_lines parses them:
    a last line cut short is left out and counted (torn); another line that is not JSON stops the
    stream (NotStreamed)."""

    def __init__(self, handle: BinaryIO, shown: str, lenient: bool, scan: Scan):
        self.handle, self.shown, self.lenient, self.scan = handle, shown, lenient, scan
        self.head: list[tuple[int, Any]] = []       # the first lines, kept while small
        self.torn = 0
        self.complete = False                       # gone through to the end once

    def read_head(self) -> list[Any]:
        """The first HEAD_LINES lines' values (what the checks look at), kept for the reader's
        passes when they hold at most HEAD_CHARS characters."""
        head, chars = [], 0
        for number, value, size in self.parsed(skip=0):
            head.append((number, value))
            chars += size
            if len(head) == HEAD_LINES:
                break
        self.head = head if chars <= HEAD_CHARS else []
        return [value for _, value in head]

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        yield from self.head
        for number, value, _ in self.parsed(skip=len(self.head)):
            yield number, value
        self.complete = True

    def parsed(self, skip: int) -> Iterator[tuple[int, Any, int]]:
        """(line number, value, characters) of each non-blank line after the first `skip`."""
        offset, number, position = 0, 0, 0
        errors = "replace" if self.lenient else "strict"
        while offset < self.scan.size:
            raw = file_line(self.handle, offset, self.scan.size)
            if not raw:
                raise NotStreamed                       # the file shrank since it was scanned
            text = raw.decode("utf-8", errors)
            if offset == 0 and text.startswith("\ufeff"):
                text = text[1:]
            offset += len(raw)
            # popped from the end, each line freed once parsed: one line held at a time
            pieces = text.splitlines()[::-1]
            del raw, text
            while pieces:
                line = pieces.pop()
                number += 1
                if blank(line):
                    continue
                position += 1
                if position <= skip:
                    continue
                size = len(line)
                value = parse_session_json(line, f"{self.shown} line {number}")
                del line
                if value is NOT_JSON:
                    if number == self.scan.last and position > 1:
                        self.torn = 1
                        continue
                    raise NotStreamed
                yield number, value, size


def stream_sessions(handle: BinaryIO, shown: str, lenient: bool) -> tuple[str, list, Scan]:
    """(format, [SessionBuilder], scan) of a JSONL file of two lines or more, read one line at a
    time: no more of the file is held than one line, its first lines while they are small
    (HEAD_CHARS) and what its reader keeps. NotStreamed for any other file (JSON, text, a zip) and
    for one the stream cannot read to its end: read_sessions_in reads it whole, so that a damaged
    file is refused as it always was."""
    scan = scan_file(handle, lenient)
    if scan.lines < 2:
        raise NotStreamed                       # one line may be one JSON value: read it whole
    lines = StreamedLines(handle, shown, lenient, scan)
    try:
        reader = choose(candidates("jsonl", lines.read_head()), shown, "JSONL")
        builders = reader.read(lines)
        if not lines.complete:
            for _ in lines:                     # every line parsed, as when the file is read whole
                pass
    except (SessionFileError, ValueError, RecursionError):
        raise NotStreamed from None
    for builder in builders:
        if lines.torn:
            builder.skip(TORN_LINE, lines.torn)
        builder.read += lines.torn
    return reader.name, builders, scan


# --- One file ---------------------------------------------------------------------------------
def read_session_file(path: Path, shown: str, lenient: bool = False) -> list[dict]:
    """The sessions of one file, each {"file" (its name: the file's, or `file#label` for one of
    several), "source", "format", "sha256", "bytes", "turns", "compactions", "kind", "notes",
    "read"}; lenient: a byte that is not UTF-8 read as U+FFFD (decode_text)."""
    with open_session_file(path, shown) as handle:
        try:
            fmt, builders, scan = stream_sessions(handle, shown, lenient)
            sha, size = scan.sha256, scan.size
        except NotStreamed:
            data = read_whole(handle, shown)
            fmt, builders = read_whole_file(data, shown, lenient)
            sha, size = sha256_bytes(data.replace(b"\r\n", b"\n")), len(data)
            del data
    sessions = [b.session() for b in builders]
    empty = [s for s in sessions if not s["turns"]]
    sessions = [s for s in sessions if s["turns"]]
    if not sessions:
        what = f"is read as {fmt}, but holds no user, assistant or tool turn"
        raise refuse(shown, what, "give a session that has at least one turn")
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
        out.append({"file": name, "source": shown, "sha256": sha, "bytes": size, **session})
    return out


def read_whole_file(data: bytes, shown: str, lenient: bool) -> tuple[str, list]:
    """(format, [SessionBuilder]) of a file's bytes read whole, a reader's refusal in one line."""
    try:
        return read_sessions_in(data, shown, lenient)
    except NestedTooDeep:
        raise refuse(shown, "holds a tool call whose arguments are nested more than "
                     f"{MAX_ARGUMENT_DEPTH} levels deep",
                     "no session format nests so deeply") from None
    except Refused as err:
        raise refuse(shown, err.why, err.hint) from None


def read_session_files(files: list[tuple[Path, str]], folder: Path | None, left_out: dict,
                       step: Callable[[int, str], None]) -> list[dict]:
    """The sessions of every file (read_session_file), each read once, `step` told the bytes read
    so far after each. Of a folder's files, a JSON file that is no session (Cline's
    task_metadata.json) is left out and named in left_out, and those that cannot be read are
    refused together once all were read (unreadable_files), the folder's links (SessionFiles.links)
    named among them: the study never runs on part of it."""
    sessions, done = [], 0
    not_sessions: list[NotASession] = []
    unreadable: list[tuple[str, SessionFileError]] = []
    for file, name in files:
        try:
            sessions += read_session_file(file, name)
        except SessionFileError as err:
            if folder is None:
                raise
            if isinstance(err, NotASession):
                not_sessions.append(err)
                left_out[name] = "not a session: " + str(err).split("; ")[0].removeprefix(name +
                                                                                          " ")
            else:
                unreadable.append((name, err))
        done += file.stat().st_size
        step(done, name)
    unreadable += getattr(files, "links", [])
    if unreadable:
        raise unreadable_files(folder, sorted(unreadable, key=lambda named: named[0]))
    if not sessions and not_sessions:
        raise not_sessions[0]
    return sessions


def printable_label(label: str | None) -> str:
    text = "".join(c if c.isalnum() or c in "-_.: " else "-" for c in (label or ""))[:60].strip()
    return text
