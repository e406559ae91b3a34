"""`audit`: the compactions an agent already recorded in its logs, each summary scored against the
history it replaced (pilot/studies/sessions/audit.py), or one summary made by any compactor against
its transcript (--source/--summary). No model is called and nothing is sent anywhere; the logs are
only read, and audit.csv, analysis.md, report.html and figures/fig_audit.svg go to --out (default:
results/audit-<the first 12 hex digits of the digest of what was read>). """
from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import threading
import time
from pathlib import Path

from .records import EXIT_INTERRUPTED, EXIT_OK, RESULTS_ROOT, DiskFull, PilotError, is_disk_full
from .runfolder import RunLock, folder_writable, refuse_foreign_folder, refuse_unsafe, write_atomic
from .studies.sessions.audit import (LOG_PLACES, AuditInputError, analyze_audit, audit_pair,
                                     audit_sessions, log_files, read_logs,
                                     usable_processes)
from .studies.sessions.audit_report import (AUDIT_FIGURE, audit_figure, render_audit_csv,
                                            render_audit_headline, render_audit_html,
                                            render_audit_md)
from .studies.sessions.readers import read_file_text, read_session_file

OUTPUTS = ("audit.csv", "analysis.md", "report.html")

# seconds one step (reading one file, scoring one compaction) may run before a line says it still is
HEARTBEAT_S = 10.0


def where_logs_are() -> str:
    lines = ["Where each agent keeps its logs (give `audit` a file or a folder; subfolders are "
             "read, links never followed):"]
    for agent, unix, windows, note in LOG_PLACES:
        lines.append(f"  {agent}:\n    Linux, macOS: {unix}\n    Windows: {windows}\n    ({note})")
    lines += ["Then: python3 scripts/run_pilot.py audit ~/.claude/projects ~/.codex/sessions",
              "Or one summary from any compactor: python3 scripts/run_pilot.py audit --source "
              "TRANSCRIPT --summary FILE",
              "Nothing was read. The formats and what each records of a compaction: "
              "tasks/sessions/README.md"]
    return "\n".join(lines)


def check_out(out_dir: Path) -> None:
    """The shared checks of an output folder: new, empty or ours, no link or non-folder where a file
    goes."""
    refuse_foreign_folder(out_dir, "audit")
    if not folder_writable(out_dir):
        raise PilotError(f"cannot write into {out_dir} (read-only); choose another folder with "
                         "--out DIR")


def refuse_out_in_logs(out_dir: Path, log_paths: list[Path]) -> None:
    """The audit writes nothing beside the logs: an output folder equal to or inside a folder given
    as logs, or the folder of a log file given by name, is refused before anything is read."""
    out = out_dir.resolve()
    for given in log_paths:
        if not os.path.lexists(given):
            continue                            # refused, or skipped, with its own message
        folder = given if given.is_dir() else given.parent
        folder = folder.resolve()
        if out == folder or folder in out.parents:
            raise PilotError(f"the output folder {out_dir} is, or lies inside, the logs' folder "
                             f"{folder}, and the audit writes nothing beside the logs; choose a "
                             "folder outside the logs with --out DIR")


class AuditLock(RunLock):
    """One audit at a time in an output folder: <out>/.audit-lock, held for the audit's whole run
    (the run folders' lock, runfolder.RunLock, under a name of its own) and removed as it ends, so
    the folder holds the outputs alone. Removed while held, the file a second audit opened just
    before may no longer be the one at the path: a lock taken on such a file is let go and taken
    again."""

    def __init__(self, out_dir: Path):
        super().__init__(out_dir)
        self.path = out_dir / ".audit-lock"

    def acquire(self) -> None:
        for _ in range(3):
            super().acquire()
            if self.fd is None or self.still_at_path():
                return
            super().release()
        self._refuse("unknown")

    def still_at_path(self) -> bool:
        try:
            at_path = os.stat(self.path)
        except FileNotFoundError:
            return False
        held = os.fstat(self.fd)
        return (held.st_dev, held.st_ino) == (at_path.st_dev, at_path.st_ino)

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):      # Windows removes no open file: it stays
                self.path.unlink()
        super().release()

    def _refuse(self, holder: str):
        raise PilotError(f"another audit (process {holder}) is writing {self.path.parent}; wait "
                         "for it to finish, or choose another folder with --out DIR")


@contextlib.contextmanager
def out_locked(out_dir: Path):
    """The output folder, made if new and locked (AuditLock) while the body runs; a folder made here
    is removed again if nothing was written into it."""
    made = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    lock = AuditLock(out_dir)
    try:
        lock.acquire()
        yield
    finally:
        lock.release()
        if made and not any(out_dir.iterdir()):
            out_dir.rmdir()


def shown_path(path: Path) -> str:
    """A path as the audit prints it: relative to the user's working folder inside it, absolute
    outside it, so that it opens from where the command was run."""
    absolute = path.resolve()
    try:
        return str(absolute.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(absolute)


def refuse_irregular(path: Path, what: str) -> None:
    """--source and --summary name files themselves: not a link, a folder or a device."""
    if path.is_symlink() or not path.is_file():
        raise AuditInputError(f"{what} {path} is not a regular file (missing, a link, a folder or "
                              "a device); give the file itself")


def pair_records(source: Path, summary: Path) -> tuple[list[dict], dict]:
    """--source/--summary: the summary scored as one compaction of the whole transcript, and what
    was read."""
    refuse_irregular(source, "--source")
    refuse_irregular(summary, "--summary")
    sessions = read_session_file(source, source.name)
    if len(sessions) != 1:
        raise AuditInputError(f"--source {source} holds {len(sessions)} sessions; give a file of "
                              "one session")
    data, text = read_file_text(summary, summary.name)
    if not text.strip():
        raise AuditInputError(f"--summary {summary} is empty; give the summary's text")
    digest = hashlib.sha256(
        f"{sessions[0]['sha256']}\0{hashlib.sha256(data).hexdigest()}".encode()
    ).hexdigest()
    read = {"files": 2, "bytes": sessions[0]["bytes"] + len(data), "sha256": digest, "sessions": 1,
            "passed": 0,
            "skipped": []}
    return audit_pair(sessions[0], text), read


def progress_printer(quiet: bool, what: str, total_bytes: int | None = None,
                     beat: float = HEARTBEAT_S):
    """A progress line on stderr at once and then at most every 2 seconds (none with --quiet): done
    of total, the MB read of the MB to read, and an estimate of the time left; while one step takes
    longer than `beat` seconds (one huge compaction), a line every `beat` seconds says how long it
    has run. Call its stop() when the work ends, however it ends."""
    started, last, step = time.monotonic(), [float("-inf")], {"done": 0, "total": 0, "at": 0.0}
    lock, stopped = threading.Lock(), threading.Event()

    def say(text: str) -> None:
        last[0] = time.monotonic()
        print(text, file=sys.stderr, flush=True)

    def heartbeat() -> None:
        while not stopped.wait(min(1.0, beat)):
            with lock:
                now = time.monotonic()
                if step["done"] < step["total"] and now - last[0] >= beat:
                    say(f"  {what}: {step['done']:,} of {step['total']:,}; still on the next, "
                        f"{now - step['at']:.0f} s so far")

    def show(done: int, total: int, size: int | None = None) -> None:
        now = time.monotonic()
        with lock:
            step.update(done=done, total=total, at=now)
        if quiet or size == 0 or (now - last[0] < 2 and done < total):
            return
        read = ""
        if size is not None:
            read = f" ({size / 2 ** 20:.1f}" + (f" of {total_bytes / 2 ** 20:.1f}" if total_bytes
                                               else "") + " MB)"
        part = (size / total_bytes if size is not None and total_bytes else done / max(total, 1))
        left = f", about {(now - started) * (1 - part) / part:.0f} s left" if 0 < part < 1 else ""
        with lock:
            say(f"  {what}: {done:,} of {total:,}{read}{left}")
    if not quiet:
        threading.Thread(target=heartbeat, daemon=True).start()
    show.stop = stopped.set
    return show


class AuditInterrupted(PilotError):
    """Ctrl-C during an audit: it keeps nothing until it ends, so a rerun starts over."""

    exit_code = EXIT_INTERRUPTED


def write_outputs(out_dir: Path, outputs: dict[str, str]) -> None:
    """Each output written whole or not at all into out_dir (made and locked by out_locked, which
    removes it again if it made it and nothing was written); a full disk names the file it could not
    write, and a figures/ folder this audit made is removed again when nothing was written into
    it."""
    figures = out_dir / "figures"
    made = any(name.startswith("figures/") for name in outputs) and not figures.exists()
    try:
        if made:
            figures.mkdir()
        for name, text in outputs.items():
            try:
                write_atomic(out_dir / name, text.encode("utf-8"))
            except OSError as err:
                if is_disk_full(err):
                    raise DiskFull(out_dir / name, "free some space (or choose another folder "
                                   "with --out DIR) and run the same command again; the audit "
                                   "starts over") from None
                raise
    finally:
        if made and figures.is_dir() and not any(figures.iterdir()):
            figures.rmdir()


def command_audit(args) -> int:
    try:
        return audit_now(args)
    except KeyboardInterrupt:
        raise AuditInterrupted("interrupted; an audit keeps nothing until it has read and scored "
                               "every log, so a rerun starts over from the first file (nothing "
                               "was written, and the logs are untouched)") from None


def audit_now(args) -> int:
    if any(not p.strip() for p in args.paths):
        # Path("") is the current folder: an unset variable would audit whatever is here
        raise AuditInputError("an empty path was given (an unset variable?); give the folder or "
                              "file of your agent's logs by name, or run `audit` alone to see "
                              "where each agent keeps them")
    paths = [Path(p) for p in args.paths]
    if (args.source is None) != (args.summary is None):
        raise PilotError("--source and --summary go together: the transcript and the summary made "
                         "of it")
    if args.source is not None and paths:
        raise PilotError("give log paths, or --source with --summary, not both")
    if not paths and args.source is None:
        print(where_logs_are())
        return EXIT_OK
    out_dir = Path(args.out) if args.out else None
    given = paths if args.source is None else [Path(args.source), Path(args.summary)]
    if out_dir is None:
        return audit_into(args, paths, None, given)
    refuse_out_in_logs(out_dir, given)
    check_out(out_dir)
    with out_locked(out_dir):
        return audit_into(args, paths, out_dir, given)


def audit_into(args, paths: list[Path], out_dir: Path | None, given: list[Path]) -> int:
    """The audit itself, into out_dir (locked by the caller), or with out_dir None into the default
    folder named by what was read (locked here once it is known)."""
    started = time.monotonic()
    if args.source is not None:
        records, read = pair_records(Path(args.source), Path(args.summary))
    else:
        files, skipped, passed = log_files(paths)
        total = sum(os.lstat(path).st_size for path, _ in files)
        if not args.quiet and files:
            print(f"reading {len(files):,} log file{'s' * (len(files) != 1)} "
                  f"({total / 2 ** 20:.1f} MB) ...", file=sys.stderr, flush=True)
        shown = progress_printer(args.quiet, "log files read", total)
        try:
            sessions, read = read_logs(files, skipped, shown)
        finally:
            shown.stop()
        links = [p for p in paths if p.is_symlink()]
        if not sessions and links:
            raise AuditInputError(f"{links[0]} is a link, and links are never followed; give the "
                                  f"path it points to: {os.path.realpath(links[0])}")
        for name, why in skipped:
            print(f"skipped {name}: {why}", file=sys.stderr)
        for name in read["cut"]:
            print(f"read {name}: its last line was cut and left out (a compaction recorded on it "
                  "is not counted)", file=sys.stderr)
        if read["copies"] and not args.quiet:
            copies = len(read["copies"])
            print(f"set aside {copies:,} cop{'ies' if copies > 1 else 'y'} of logs already read "
                  "(the same sessions and content, counted once)", file=sys.stderr)
        if not sessions:
            raise AuditInputError(f"no session could be read under {', '.join(map(str, paths))} "
                                  f"({len(files)} log file{'s' * (len(files) != 1)}, "
                                  f"{len(skipped)} skipped); give the folder your agent "
                                  f"keeps its logs in (run `audit` alone to see where)")
        shown = progress_printer(args.quiet, "compactions scored")
        try:
            # several files in several processes; one file in this one (no process to start)
            records = audit_sessions(sessions, shown,
                                     usable_processes() if len(files) > 1 else 1)
        finally:
            shown.stop()
        read.update(sessions=len(sessions), passed=passed, skipped=skipped)
    analysis = analyze_audit(records, read)
    if out_dir is None:
        out_dir = RESULTS_ROOT / f"audit-{read['sha256'][:12]}"
        # a folder given as logs that holds the repository (`audit ~`): its results/ would be read
        # as logs next time; a log file's folder that holds it (~/session.jsonl) is no reason
        refuse_out_in_logs(out_dir, [path for path in given if path.is_dir()])
        check_out(out_dir)
        with out_locked(out_dir):
            return write_audit(out_dir, records, analysis, started)
    return write_audit(out_dir, records, analysis, started)


def write_audit(out_dir: Path, records: list[dict], analysis: dict, started: float) -> int:
    figure = audit_figure(analysis)
    outputs = dict(zip(OUTPUTS, (render_audit_csv(records), render_audit_md(analysis),
                                 render_audit_html(analysis, figure))))
    if figure is not None:
        outputs[f"figures/{AUDIT_FIGURE[0]}"] = figure
    # every output checked before any is written: no link, no non-file
    for name in outputs:
        refuse_unsafe(out_dir / name)
    write_outputs(out_dir, outputs)
    print(render_audit_headline(analysis))
    print(f"wrote {', '.join(shown_path(out_dir / n) for n in outputs)} in "
          f"{time.monotonic() - started:.1f} s; "
          f"no model was called and nothing was written beside the logs")
    print(f"Open the report: {shown_path(out_dir / 'report.html')}")
    return EXIT_OK
