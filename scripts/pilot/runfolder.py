"""Run folder (PROTOCOL.md section 6): the fsynced journal of calls, the atomically replaced
manifest, the folder lock (one writer at a time), and the code hash a resumed run is checked
against."""
from __future__ import annotations

import collections
import dataclasses
import errno
import hashlib
import json
import os
import re
import stat
import threading
import time
from pathlib import Path
from typing import Any

from .backends import server_identity
from .inputs import read_json
from .marker import (ForeignFile, MARKER_NAME, OUTPUT_FILES, claim_problem, marked, output_place,
                     refuse_replacing)
from .records import (Cell, DEFAULT_BUDGET, DiskFull, MAX_EPISODES, MAX_SAMPLES, NUM_CTX,
                      PilotError, Settings, canonical_json, folder_study, is_disk_full,
                      lone_surrogate, read_canonical, sha256_bytes, utc_now)


# The folder lock takes the best tool the platform has: flock on POSIX, msvcrt on Windows, and
# otherwise an exclusively created lock file holding the owner's process id (see RunLock).
try:
    import fcntl
except ImportError:
    fcntl = None

try:
    import msvcrt
except ImportError:
    msvcrt = None


def safe_name(model: str) -> str:
    """A model name as a file-name part: [A-Za-z0-9._-] only, bounded length, never a path, never
    hidden (a leading dot) or read as an option (a leading dash)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", model)
    if name.strip(".") == "" or len(name) > 100:
        name = (name[:60].strip("._-")
                or "model") + "-" + hashlib.sha256(model.encode("utf-8")).hexdigest()[:16]
    if name[0] in ".-":
        name = "_" + name
    return name


def cell_key(model: str, regime: str, episode: int, budget: int = DEFAULT_BUDGET,
             sample: int = 0) -> str:
    """The manifest key of a cell: `model|regime|episode` as in the reference format, with
    `|b<budget>` and `|s<sample>` added only away from the pre-registered budget and the first
    sample."""
    return f"{model}|{regime}|{episode}" + variant_suffix(budget, sample, "|")


def variant_suffix(budget: int, sample: int, sep: str) -> str:
    return (f"{sep}b{budget}" if budget != DEFAULT_BUDGET else "") + (f"{sep}s{sample}" if sample
        else "")


def is_complete(manifest: dict, cell: tuple) -> bool:
    """The one answer to "is this cell complete?": its manifest entry says COMPLETE."""
    return (manifest["cells"].get(cell_key(*cell)) or {}).get("status") == "COMPLETE"


def record_variant(record: dict) -> tuple[int, int]:
    """The budget and sample a call record belongs to (records without them are the defaults)."""
    return record.get("budget", DEFAULT_BUDGET), record.get("sample", 0)


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# A run folder's files are written only where the runner made them: never through a symbolic link,
# never over
# anything but a regular file (a folder copied or shared by someone else may hold links to
# anywhere).
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
RUNNER_SUBFOLDERS = ("raw", "figures", "quarantine")     # made by the runner inside a run folder
# what the user of a refused command can do instead
ELSEWHERE = "use a new folder with --out"


class UnsafePath(PilotError):
    """A link, or something that is not a regular file, where the runner reads or writes a run
    folder's file."""


def refuse_unsafe(path: Path, elsewhere: str = ELSEWHERE) -> None:
    """Refuse, before anything is read or written, a file of a run folder that is a symbolic link or
    not a regular file, or that sits in a runner-made subfolder that is a link or not a folder (the
    run folder itself may be a link)."""
    if path.parent.name in RUNNER_SUBFOLDERS:
        refuse_unsafe_subfolder(path.parent, elsewhere)
    refuse_unsafe_place(path, False, elsewhere)


def refuse_unsafe_subfolder(folder: Path, elsewhere: str = ELSEWHERE) -> None:
    """Refuse a runner-made subfolder (raw/, figures/, quarantine/) that is a link or not a
    folder."""
    refuse_unsafe_place(folder, True, elsewhere)


def refuse_unsafe_place(path: Path, is_folder: bool, elsewhere: str) -> None:
    """Refuse a link at path, or anything there (nothing is fine) but a folder or a regular file as
    asked."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as err:
        raise UnsafePath(f"cannot check {path} ({err.strerror or err}); check the folder's "
                         "permissions") from None
    if stat.S_ISLNK(mode):
        raise UnsafePath(f"{path} is a symbolic link; the runner never reads or writes a run "
                         "folder's files through a link, and left it and what it points to "
                         f"untouched. Replace it with a real {'folder' if is_folder else 'file'}, "
                         f"or {elsewhere}")
    if not (stat.S_ISDIR(mode) if is_folder else stat.S_ISREG(mode)):
        what = ("a folder (a file, pipe, device or socket stands where the runner keeps its "
                f"{path.name}/ folder)"
                if is_folder else "a regular file")
        raise UnsafePath(f"{path} is not {what}, so the runner left it untouched; move it away, "
                         f"or {elsewhere}")


# The files a run or an analysis writes in a run folder, besides those in its subfolders.
RUN_FOLDER_FILES = (".lock", "manifest.json", "results.json", "probes.csv", "gate.csv",
                    "analysis.md", "RESULTS.md",
                    "report.html")


def refuse_unsafe_folder(run_dir: Path, elsewhere: str = ELSEWHERE) -> None:
    """Refuse a run folder in which any file the runner reads or writes, or any of its subfolders,
    is a link or not what the runner makes there; checked before a command reads the folder or
    writes anything into it, so that a command refused for it has written nothing."""
    for name in RUNNER_SUBFOLDERS:
        refuse_unsafe_subfolder(run_dir / name, elsewhere)
    for name in RUN_FOLDER_FILES:
        refuse_unsafe(run_dir / name, elsewhere)
    for name in RUNNER_SUBFOLDERS:
        if (run_dir / name).is_dir():
            for entry in (run_dir / name).iterdir():
                if not entry.name.startswith("."):
                    refuse_unsafe(entry, elsewhere)


def folder_writable(folder: Path) -> bool:
    """Whether files can be made in folder (or, while it does not exist, in its nearest existing
    parent)."""
    probe = folder
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    return probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)


def refuse_foreign_folder(folder: Path, purpose: str = "run") -> None:
    """An --out folder must be new, empty or ours by its folder marker (marker.py) and of the kind
    the command writes (run, report, audit): never someone's files, and nothing but a real file or
    folder where the runner writes one (checked before anything is written)."""
    if folder.exists() and not folder.is_dir():
        raise PilotError(f"{folder} is a file, not a folder; choose a new or empty folder with "
                         "--out")
    above = next((p for p in folder.parents if p.exists()), None)
    if not folder.exists() and above is not None and not above.is_dir():
        raise PilotError(f"{folder} lies under the file {above}; choose a new or empty folder "
                         "with --out")
    if not folder.is_dir():
        return
    refuse_unsafe_folder(folder)
    for name in (MARKER_NAME, *OUTPUT_FILES):
        refuse_unsafe(folder / name)
    manifest = folder / "manifest.json"
    try:
        run_manifest = manifest.is_file() and manifest_problem(json.loads(
            manifest.read_bytes())) is None
    except (OSError, ValueError, RecursionError):
        run_manifest = False
    problem = claim_problem(folder, purpose, run_manifest)
    if problem:
        raise ForeignFile(problem)


def open_no_follow(path: Path, flags: int, mode: int = 0o644) -> int:
    """os.open of a run folder's file that refuses links (checked first for the message, and by
    O_NOFOLLOW against one planted in between)."""
    refuse_unsafe(path)
    try:
        return os.open(path, flags | NOFOLLOW | getattr(os, "O_BINARY", 0), mode)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UnsafePath(f"{path} is a symbolic link; the runner never writes through a link, "
                             "and left it and what it points to untouched. Replace it with a real "
                             "file, or use a new folder with "
                             f"--out") from None
        raise


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temporary file, fsync, rename over the target, fsync the folder; a link or
    non-regular file at the target, or an output its folder marker does not record, is refused
    first, and the marker records each output written."""
    refuse_unsafe(path)
    refuse_replacing(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | getattr(os, "O_BINARY",
            0), 0o644)
        with open(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()                        # the target still holds its last complete version
        except OSError:
            pass
        raise
    fsync_dir(path.parent)
    marker = marked(path, data)
    if marker is not None:
        write_atomic(output_place(path)[0] / MARKER_NAME, marker)


def record_line(record: dict) -> bytes:
    return (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


class Journal:
    """The raw call logs: one JSONL file per model x regime (x budget x sample away from the
    defaults), appended and fsynced per call."""

    def __init__(self, run_dir: Path):
        self.raw_dir = run_dir / "raw"
        self._locks: dict[Path, threading.Lock] = {}
        self._guard = threading.Lock()

    def path(self, model: str, regime: str, budget: int = DEFAULT_BUDGET, sample: int = 0) -> Path:
        return (self.raw_dir
                / f"{safe_name(model)}_{regime}{variant_suffix(budget, sample, '_')}.jsonl")

    def _lock_for(self, path: Path) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(path, threading.Lock())

    def append(self, record: dict, path: Path | None = None) -> bytes:
        """Append one record as a line and fsync it; the line written."""
        path = path or self.path(record["model"], record["regime"], *record_variant(record))
        line = record_line(record)
        try:
            fd = open_no_follow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                with self._lock_for(path):          # one whole line per write, never interleaved
                    written = 0
                    while written < len(line):
                        written += os.write(fd, line[written:])
                # outside the lock: concurrent cells share the disk flush
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as err:
            if is_disk_full(err):                    # a torn line is quarantined on resume
                raise DiskFull(path) from None
            raise
        return line

    def repair(self, model: str, regime: str, budget: int = DEFAULT_BUDGET,
               sample: int = 0) -> str | None:
        """Move every unreadable line (a torn last line, or garbage anywhere) to a quarantine file
        and keep the readable ones in order; say what was done."""
        path = self.path(model, regime, budget, sample)
        refuse_unsafe(path)
        if not path.exists():
            return None
        data = path.read_bytes()
        lines = data.splitlines(keepends=True)
        bad = [i for i, line in enumerate(lines) if not line.endswith(b"\n")
               or parse_record_line(line) is None]
        if not bad:
            return None
        self._quarantine(path, [lines[i] for i in bad])
        write_atomic(path, b"".join(line for i, line in enumerate(lines) if i not in set(bad)))
        where = ", ".join(str(i + 1) for i in bad[:5]) + (" ..." if len(bad) > 5 else "")
        return (f"{path.name}: moved {len(bad)} torn or unreadable line(s) (line {where}) to "
                f"{path.name}.quarantine")

    def drop(self, cell: Cell, kinds: set[str]) -> int:
        """Move the records of these calls of one cell to the quarantine file; how many were
        moved."""
        path = self.path(cell.model, cell.regime, cell.budget, cell.sample)
        episode = cell.episode
        lines = path.read_bytes().splitlines(keepends=True) if path.exists() else []
        moved = [line for line in lines if (lambda r: r is not None and r.get("episode") == episode
                                            and r.get("kind") in kinds)(parse_record_line(line))]
        if moved:
            self._quarantine(path, moved)
            write_atomic(path, b"".join(line for line in lines if line not in moved))
        return len(moved)

    @staticmethod
    def _quarantine(path: Path, lines: list[bytes]) -> None:
        fd = open_no_follow(path.with_name(path.name + ".quarantine"),
                            os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        with open(fd, "ab") as fh:
            fh.write(b"".join(line.rstrip(b"\n") + b"\n" for line in lines))
            fh.flush()
            os.fsync(fh.fileno())

    def unreadable_lines(self, model: str, regime: str, budget: int = DEFAULT_BUDGET,
                         sample: int = 0) -> list[int]:
        """Line numbers (1-based) that are not a readable record."""
        path = self.path(model, regime, budget, sample)
        if not path.exists():
            return []
        lines = path.read_bytes().splitlines(keepends=True)
        return [i + 1 for i, line in enumerate(lines)
                if not line.endswith(b"\n") or parse_record_line(line) is None]

    def read(self, model: str, regime: str, budget: int = DEFAULT_BUDGET,
             sample: int = 0) -> list[dict]:
        """Every readable record of this model, regime, budget and sample, in file order."""
        path = self.path(model, regime, budget, sample)
        refuse_unsafe(path)
        if not path.exists():
            return []
        records = []
        with open(path, "rb") as fh:
            for line in fh:
                record = parse_record_line(line)
                if (
                    record is not None
                    and record.get("model") == model
                    and record.get("regime") == regime
                    and record_variant(record) == (budget, sample)
                ):
                    records.append(record)
        return records

    def cell_records(self, model: str, regime: str, budget: int = DEFAULT_BUDGET,
                     sample: int = 0) -> dict[int, dict[str, dict]]:
        """episode -> kind -> the first record of that call (a retried or repeated call counts
        once)."""
        cells: dict[int, dict[str, dict]] = {}
        for record in self.read(model, regime, budget, sample):
            cells.setdefault(record.get("episode"), {}).setdefault(record.get("kind"), record)
        return cells


def journalled_lines(run_dir: Path) -> int:
    """How many lines the raw logs of a folder hold (every regular `raw/*.jsonl`, links and other
    files left alone): without the manifest that records their hashes, none of them can be
    checked."""
    raw = run_dir / "raw"
    if raw.is_symlink() or not raw.is_dir():
        return 0
    count = 0
    for path in sorted(raw.glob("*.jsonl")):
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as handle:
                count += sum(1 for line in handle if line.strip())
    return count


def repeated_calls(records: list[dict]) -> list[tuple]:
    """(episode, kind, times) of every call a log records more than once; the first record is the
    one scored."""
    counts = collections.Counter((r.get("episode"), r.get("kind")) for r in records)
    return sorted(((e, k, n) for (e, k), n in counts.items() if n > 1), key=str)


def parse_record_line(line: bytes) -> dict | None:
    """One journal line as a record, or None when it is not a readable JSON object (or holds a lone
    surrogate, which the runner never writes)."""
    try:
        text = line.decode("utf-8")
        record = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or lone_surrogate(text,
                                                      record) or not record_fields_fit(record):
        return None
    return record


def whole(value: Any, lo: int = 0, hi: int | None = None) -> bool:
    """A whole number (not a bool) from lo to hi, as the runner writes counts, episodes and
    settings."""
    return isinstance(value, int) and not isinstance(value,
                                                     bool) and value >= lo and (hi is None or value
        <= hi)


def record_fields_fit(record: dict) -> bool:
    """The fields that place a record in its cell, where it has them, are of the kinds the runner
    writes: a record whose kind or episode is a list (an edit, never a run) is unreadable, not a key
    that breaks every command."""
    return all(isinstance(record[f], str) for f in ("model", "regime", "kind") if f in record) and \
        all(whole(record[f]) for f in ("episode", "budget", "sample") if f in record)


def records_digest(records: list[dict], written: dict | None = None) -> str:
    """sha256 of a cell's records as journalled lines; `written` maps id(record) to (record, line)
    for the records this process journalled itself, whose lines need not be serialized a second
    time."""
    written = written or {}

    def line_of(record: dict) -> bytes:
        hit = written.get(id(record))
        return hit[1] if hit is not None and hit[0] is record else record_line(record)

    return sha256_bytes(b"".join(line_of(r) for r in records))


class RunLock:
    """One runner per folder: <run>/.lock, holding the owner's process id.

    Where the platform has fcntl (POSIX) or msvcrt (Windows), the operating system holds the lock
    and drops it when the holder dies, so it is never stale. Elsewhere the lock is the file itself,
    created exclusively; a lock file whose process is gone is stale and is taken over. """

    # msvcrt locks a byte past the process id, so a refused runner can read it
    MSVCRT_OFFSET = 1 << 20

    def __init__(self, run_dir: Path):
        self.path = run_dir / ".lock"
        self.fd: int | None = None
        self.method = "fcntl" if fcntl else "msvcrt" if msvcrt else "exclusive file"
        self.owns_file = False

    def acquire(self) -> None:
        refuse_unsafe_folder(self.path.parent)
        if self.method == "exclusive file":
            self._acquire_file()
            return
        fd = open_no_follow(self.path, os.O_RDWR | os.O_CREAT)
        try:
            if fcntl:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            else:
                os.lseek(fd, self.MSVCRT_OFFSET, os.SEEK_SET)
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            os.lseek(fd, 0, os.SEEK_SET)
            holder = os.read(fd, 64).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            self._refuse(holder)
        if fcntl:
            os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        # padded: msvcrt cannot truncate under a lock
        os.write(fd, str(os.getpid()).encode("ascii").ljust(20))
        self.fd = fd

    def _acquire_file(self) -> None:
        for _ in range(3):
            try:
                fd = open_no_follow(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                holder = self._holder_of_file()
                if holder is None:
                    continue                    # stale, removed: try again
                self._refuse(holder)
            try:
                os.write(fd, str(os.getpid()).encode("ascii"))
            finally:
                os.close(fd)
            self.owns_file = True
            return
        self._refuse("unknown")

    def _holder_of_file(self) -> str | None:
        """The live holder of an existing lock file, or None after removing a stale one."""
        try:
            text = self.path.read_text(encoding="ascii", errors="replace").strip()
            age_s = time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return None
        if text.isdigit() and process_alive(int(text)):
            return text
        if not text.isdigit() and age_s < 10:
            return "unknown"                    # being written by a runner that has just started
        try:
            self.path.unlink()                  # left by a runner that died
        except FileNotFoundError:
            pass
        return None

    def _refuse(self, holder: str):
        raise PilotError(f"another runner (process {holder}) is writing {self.path.parent}; wait "
                         "for it to finish or stop it, or use --out for a separate run (if no "
                         f"runner is running, remove {self.path})")

    def release(self) -> None:
        if self.fd is not None:
            if fcntl:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            else:
                os.lseek(self.fd, self.MSVCRT_OFFSET, os.SEEK_SET)
                msvcrt.locking(self.fd, msvcrt.LK_UNLCK, 1)
            os.close(self.fd)
            self.fd = None
        if self.owns_file:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
            self.owns_file = False


def process_alive(pid: int) -> bool:
    """Whether a process id is in use; where that cannot be asked safely, assume it is."""
    if pid == os.getpid():
        return True
    if os.name != "posix":
        # os.kill on Windows would end the process, not probe it
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def manifest_problem(data: Any) -> str | None:
    """The first way a parsed manifest is not one this runner wrote (every field the commands read,
    with its type and range), or None: a manifest from elsewhere is refused in one line instead of
    failing deep inside."""
    def texts(value) -> bool:           # names the messages quote: one printable line each
        return (
            isinstance(value, list)
            and bool(value)
            and all(isinstance(v, str) and v.isprintable() and v for v in value)
            and len(set(value)) == len(value)
        )

    if not isinstance(data, dict):
        return "not a JSON object"
    if not isinstance(data.get("cells"), dict):
        return "no `cells`"
    if not texts([data.get("tasks")]) or not re.fullmatch(r"[0-9a-f]{64}",
                                                          str(data.get("tasks_sha256"))):
        return "no `tasks` and `tasks_sha256`"
    if not texts(data.get("models")) or not texts(data.get("regimes")):
        return "`models` and `regimes` must be lists of distinct names, each on one line"
    if not whole(data.get("n_episodes"), 1, MAX_EPISODES):
        return f"`n_episodes` is not a whole number from 1 to {MAX_EPISODES}"
    budgets, samples = data.get("budgets"), data.get("samples")
    if budgets is not None and not (isinstance(budgets, list) and budgets and
                                    all(whole(b, 16, 2048) for b in budgets) and len(set(budgets))
                                    == len(budgets)):
        return "`budgets` is not a list of distinct whole numbers from 16 to 2048"
    if samples is not None and not whole(samples, 1, MAX_SAMPLES):
        return f"`samples` is not a whole number from 1 to {MAX_SAMPLES}"
    lock = data.get("lock")
    if not isinstance(lock, dict):
        return "no `lock` object"
    for field, kinds in (("backend", (str,)), ("base_url", (str, type(None))),
                         ("runner_sha256", (str, type(None))),
                         ("models", (dict,)), ("study_options", (dict,)), ("options", (dict,))):
        if field in lock and not isinstance(lock[field], kinds):
            return f"the lock's `{field}` is of the wrong type"
    if "temperature" in lock and (isinstance(lock["temperature"], bool) or
                                  not isinstance(lock["temperature"], (int, float))):
        return "the lock's `temperature` is not a number"
    if any(not isinstance(info, dict) for info in (lock.get("models") or {}).values()):
        return "the lock's `models` holds an entry that is not an object"
    for key, entry in data["cells"].items():
        if not isinstance(entry, dict) or entry.get("status") not in ("COMPLETE", "FAILED") or \
                not isinstance(entry.get("model"), str) or not isinstance(entry.get("regime"),
                    str) or \
                not whole(entry.get("episode")) or not all(whole(entry[f]) for f in ("budget",
                    "sample", "n_calls")
                                                            if f in entry) or \
                not isinstance(entry.get("records_sha256", ""), str) or \
                not isinstance(entry.get("reason"), (str, type(None))):
            return f"cell {key!r} is not a cell entry"
    definitions = data.get("regime_definitions")
    if definitions is not None:
        if not isinstance(definitions, dict):
            return "`regime_definitions` is not an object"
        for name, record in definitions.items():
            problem = regime_record_problem(record)
            if problem:
                return f"the definition of regime {name!r} {problem}"
    shard = data.get("shard")
    if shard is not None and not (isinstance(shard, list) and len(shard) == 2 and whole(shard[0],
        1) and
                                  whole(shard[1], 1) and shard[0] <= shard[1]):
        return "`shard` is not [I, N] with 1 <= I <= N"
    for field, kinds in (("study", (str, type(None))), ("amendments", (list,)),
                         ("recheck", (dict, type(None))),
                         ("task_set", (dict, type(None))), ("base_url_spellings", (list,)),
                         ("concurrency_used", (list,)), ("connections", (list,))):
        if field in data and not isinstance(data[field], kinds):
            return f"`{field}` is of the wrong type"
    if not all(isinstance(u, str) for u in data.get("base_url_spellings") or []):
        return "`base_url_spellings` is not a list of addresses"
    if not all(isinstance(entry, dict) for field in ("connections",
                                                     "amendments") for entry in data.get(field)
               or []):
        return "`connections` and `amendments` must be lists of objects"
    task_set = data.get("task_set")
    if isinstance(task_set, dict) and not all(isinstance(task_set.get(f), (str, type(None)))
                                              for f in ("kind", "sha256", "path")):
        return "`task_set` is not a task set's summary"
    if not all(whole(c, 1) for c in data.get("concurrency_used") or []):
        return "`concurrency_used` is not a list of whole numbers"
    if "recheck_requested" in data and not whole(data["recheck_requested"], 0, 10000):
        return "`recheck_requested` is not a whole number from 0 to 10000"
    recheck = data.get("recheck")
    if isinstance(recheck, dict) and not (whole(recheck.get("k")) and whole(recheck.get("sent")) and
                                          whole(recheck.get("changed"))
                                          and isinstance(recheck.get("items"), list) and
                                          all(isinstance(i, dict) and isinstance(i.get("cell"),
                                          str) and
                                              isinstance(i.get("kind"),
                                                         str) for i in recheck["items"])):
        return "`recheck` is not the determinism probe's summary"
    try:
        study = folder_study(data)
    except PilotError as err:
        return str(err)
    undefined = [r for r in data["regimes"] if r not in (definitions or {})
                 and r not in study.regimes]
    if undefined:
        return f"regime {undefined[0]!r} has no definition"
    return None


REGIME_RECORD_TYPES = {"name": (str,), "description": (str,), "context": (str,),
                       "answer_template": (str,),
                       "compaction_template": (str, type(None)), "state_reader": (str,),
                       "keep_last": (int, type(None)),
                       "exploratory": (bool,), "origin": (str,), "condition": (str, type(None)),
                       "judge": (bool,),
                       "gated": (bool,), "system": (str, type(None)),
                       "empty_state": (str, type(None))}


def regime_record_problem(record: Any) -> str | None:
    """What is wrong with a regime as a manifest records it, or None."""
    if not isinstance(record, dict):
        return "is not an object"
    for field in ("name", "description", "context", "answer_template"):
        if field not in record:
            return f"lacks `{field}`"
    for field, value in record.items():
        if field in REGIME_RECORD_TYPES and not isinstance(value, REGIME_RECORD_TYPES[field]):
            return f"has `{field}` of the wrong type"
    if record["context"] not in ("transcript", "state", "recent") or \
            (record["context"] == "state" and not isinstance(record.get("compaction_template"),
                                                             str)) or \
            (record["context"] == "recent" and not (isinstance(record.get("keep_last"), int) and
                                                    record["keep_last"] >= 1)):
        return "does not say how its answers see the session"
    return None


class Manifest:
    """The run ledger, rewritten atomically; thread-safe."""

    def __init__(self, path: Path, data: dict):
        self.path = path
        self.data = data
        # the data: held to change it or to serialize it, never for I/O
        self._lock = threading.Lock()
        # the file: rewrites one at a time, each with the newest data
        self._save_lock = threading.Lock()

    @classmethod
    def load(cls, path: Path) -> "Manifest":
        refuse_unsafe_folder(path.parent)
        _, _, data = read_json(path, f"the manifest {path}", "a run manifest",
                               "nothing was changed; restore it from "
                               "a backup, or start a separate run in a new folder")
        problem = manifest_problem(data)
        if problem:
            raise PilotError(f"the manifest {path} is not a run manifest ({problem}); nothing was "
                             "changed; restore it, or start a separate run in a new folder")
        # a manifest with none recorded: every resume appends to the list
        data.setdefault("amendments", [])
        return cls(path, data)

    def save(self) -> None:
        # The data lock is let go before the write and its fsyncs, so that a cell ending while the
        # disk holds an
        # fsync is not kept waiting to record its end; the save lock keeps an older payload from
        # landing last.
        with self._save_lock:
            with self._lock:
                self.data["updated_at"] = utc_now()
                payload = (json.dumps(self.data, indent=2, ensure_ascii=False,
                                      sort_keys=True) + "\n").encode()
            try:
                write_atomic(self.path, payload)
            except OSError as err:
                if is_disk_full(err):
                    raise DiskFull(self.path) from None
                raise

    def set_cell(self, key: str, entry: dict) -> None:
        with self._lock:
            self.data["cells"][key] = entry
        self.save()

    def cell(self, key: str) -> dict | None:
        with self._lock:
            return self.data["cells"].get(key)


# scripts/: the entry point and this package
SCRIPTS_DIR = Path(__file__).resolve().parent.parent


def runner_files() -> list[Path]:
    """The files the code lock covers: scripts/run_pilot.py and every .py file of the package, in
    sorted path order (caches skipped)."""
    package = sorted(p for p in (SCRIPTS_DIR / "pilot").rglob("*.py")
                     if "__pycache__" not in p.parts)
    return [SCRIPTS_DIR / "run_pilot.py", *package]


def runner_sha256() -> str:
    """The code hash a resumed run is checked against: each file's path (from scripts/) and bytes,
    in order, so that a change to any module, a new module or a renamed one changes it."""
    digest = hashlib.sha256()
    for path in runner_files():
        data = read_canonical(path)
        name = path.relative_to(SCRIPTS_DIR).as_posix().encode("utf-8")
        digest.update(b"%d:%s\n%d:" % (len(name), name, len(data)) + data)
    return digest.hexdigest()


def lock_differences(recorded: dict, current: dict, ignore: tuple = ()) -> list[str]:
    """Every way the current settings differ from the ones a run folder was locked to: each field of
    the Settings record, then each model's identity."""
    diffs = []
    for field in (f.name for f in dataclasses.fields(Settings)):
        # a lock without a study's options or replaced regimes had none
        # a lock without a window had the pinned one
        absent = {} if field in ("study_options", "replaced_regimes") else \
            NUM_CTX if field == "context_window" else None
        old, new = recorded.get(field, absent), current.get(field, absent)
        # the same server under another spelling (localhost or 127.0.0.1, default port or not) is
        # the same
        same = server_identity(old) == server_identity(new) if field == "base_url" else \
            canonical_json(old) == canonical_json(new)
        if field not in ignore and not same:
            diffs.append(f"{field} ({short(old)} -> {short(new)})")
    for model, info in current.get("models", {}).items():
        old = recorded.get("models", {}).get(model)
        if old and old.get("digest") != info.get("digest"):
            diffs.append(f"model {model} digest ({short(old.get('digest'))} -> "
                         f"{short(info.get('digest'))}: re-pulled under the same tag)")
        elif old and old.get("fingerprint") != info.get("fingerprint"):
            diffs.append(f"model {model} as the server describes it "
                         f"({short(old.get('fingerprint'))} -> "
                         f"{short(info.get('fingerprint'))}: another model behind the same id)")
    return diffs


def short(value: Any) -> str:
    text = value if isinstance(value, str) else canonical_json(value)
    return text[:12] if re.fullmatch(r"[0-9a-f]{64}", text or "") else text[:80]


def recorded_study(run_dir: Path) -> str | None:
    """The study a run folder's manifest records (the default study when it names none); None
    without a manifest."""
    path = run_dir / "manifest.json"
    if not path.exists():
        return None
    try:
        return folder_study(json.loads(path.read_text(encoding="utf-8"))).name
    except (OSError, ValueError, AttributeError, PilotError):
        return None
