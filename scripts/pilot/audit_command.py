"""`audit`: the compactions an agent already recorded in its logs, each summary scored against the
history it replaced (pilot/studies/sessions/audit.py), or one summary made by any compactor against
its transcript (--source/--summary). Without --judge no model is called and nothing is sent; the
logs are only read, and audit.csv, analysis.md, report.html and figures/fig_audit.svg go to --out
(default: results/audit-<the first 12 hex digits of the digest of what was read>).

With --judge MODEL (issue 44), a model on the user's own server then decides the needed items the
rules cannot judge (studies/sessions/audit_judge.py): its server is checked before anything is
read, each call is journalled in --out (judge-calls.jsonl) the moment it returns, and the judge
that wrote them is locked there (judge-lock.json), so a rerun after Ctrl-C, SIGTERM or kill -9
sends only the calls not yet made. """
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from .backends import preflight, server_info_when_loaded
from .cached_calls import CallCache
from .launch import make_backend
from .records import (EXIT_INTERRUPTED, EXIT_OK, RESULTS_ROOT, BackendOptions, DiskFull,
                      FatalCallError, PilotError, ServerGone, TransientError, canonical_json,
                      is_disk_full)
from .runfolder import RunLock, folder_writable, refuse_foreign_folder, refuse_unsafe, write_atomic
from .runner import RetryPolicy
from .studies.sessions.audit import (LOG_PLACES, AuditInputError, analyze_audit, audit_pair,
                                     audit_sessions, compaction_events, log_files, read_logs,
                                     stop_on_terminate, usable_processes)
from .studies.sessions.audit_judge import judge_analysis, judge_records, with_judge
from .studies.sessions.judge import DEFAULT_THRESHOLD, Judge, JudgePrompt, read_judge_prompt
from .studies.sessions.judge_agreement import chosen_threshold, measured_agreement
from .studies.sessions.audit_report import (AUDIT_FIGURE, audit_figure, render_audit_csv,
                                            render_audit_headline, render_audit_html,
                                            render_audit_md)
from .studies.sessions.readers import read_file_text, read_session_file

OUTPUTS = ("audit.csv", "analysis.md", "report.html")

# a judge's journal and lock in --out (kept across reruns: the calls made are never made again)
JUDGE_JOURNAL, JUDGE_LOCK = "judge-calls.jsonl", "judge-lock.json"
JUDGE_LOCK_FORMAT = "audit-judge-lock/1"

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


def pair_records(source: Path, summary: Path) -> tuple[list[dict], dict, list[str]]:
    """--source/--summary: the summary scored as one compaction of the whole transcript, what was
    read, and the summary's text."""
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
    return audit_pair(sessions[0], text), read, [text]


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


# --- The judge (--judge MODEL) --------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class AuditJudge:
    """The audit's judge, its server checked: what decides, and what the report and lock say (a
    study's judge is records.JudgeSetup, opened by the study)."""

    backend: object
    model: str
    identity: dict
    prompt: JudgePrompt
    threshold: float
    policy: RetryPolicy
    agreement: str                      # the sentence the report prints about its agreement
    below: bool                         # under the protocol's threshold, or not measured
    server: str                         # where it listens, any password masked


def judge_setup(args) -> AuditJudge | None:
    """With --judge: the prompt read, the server checked and the model described (its identity)
    before anything is read or written; None without --judge."""
    if not args.judge:
        return None
    from .transport import redact_url
    prompt = read_judge_prompt(Path(args.judge_prompt) if args.judge_prompt else None)
    backend = make_backend(BackendOptions(args.backend, args.host, args.base_url,
                                          args.api_key_env, connect_timeout=args.connect_timeout,
                                          read_timeout=args.read_timeout))
    server = redact_url(backend.base_url)
    try:
        server_info_when_loaded(backend)
    except TransientError as err:
        raise PilotError(f"no judge server answers at {server} ({err.reason}); start Ollama "
                         f"(`ollama serve`, then `ollama pull {args.judge}`), or point "
                         "--backend openai --base-url at your vLLM or llama-server; `audit` "
                         "without --judge needs no model") from None
    identity = preflight(backend, [args.judge])[args.judge]
    policy = RetryPolicy(retries=args.retries, give_up_after_s=args.give_up_after)
    threshold = args.judge_threshold if args.judge_threshold is not None else DEFAULT_THRESHOLD
    agreement, below = (f"Agreement not measured: run `judge-check --judge {args.judge} ...` and "
                        "give its folder with --judge-agreement; read as below the protocol's "
                        "agreement threshold."), True
    if args.judge_agreement:
        folder = Path(args.judge_agreement)
        labels = {"labels_dir": Path(args.labels)} if args.labels else {}
        if args.judge_threshold is None:
            # the one judge-check chose on the dev labels, chosen again from its journal
            threshold = chosen_threshold(folder, args.judge, identity, prompt.sha256, **labels)
        found = measured_agreement(folder, args.judge, identity, prompt.sha256, threshold,
                                   **labels)
        if found is None:
            agreement = (f"Agreement not measured: {args.judge_agreement} holds no judge-check of "
                         f"{args.judge} as this server describes it with this prompt; run "
                         f"`judge-check --judge {args.judge} ...`; read as below the protocol's "
                         "agreement threshold.")
        else:
            agreement, below = found.line(), bool(found.below)
    return AuditJudge(backend, args.judge, identity, prompt, threshold, policy, agreement, below,
                      server)


def claim_judge_lock(out_dir: Path, setup: AuditJudge, write: bool = True) -> None:
    """<out>/judge-lock.json names the judge whose calls the journal holds: the same model (as the
    server describes it) with the same prompt may add to them; another judge is refused (checked
    alone, with write False, before the rules run, so that a refused audit leaves nothing)."""
    path = out_dir / JUDGE_LOCK
    refuse_unsafe(path)
    refuse_unsafe(out_dir / JUDGE_JOURNAL)
    if path.exists():
        try:
            held = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):
            held = None
        if not isinstance(held, dict) or held.get("format") != JUDGE_LOCK_FORMAT:
            raise PilotError(f"{path} is not a judge lock this tool wrote; move it away, or "
                             "choose another folder with --out DIR")
        if (held.get("model"), canonical_json(held.get("identity")), held.get("prompt_sha256")) \
                != (setup.model, canonical_json(setup.identity), setup.prompt.sha256):
            raise PilotError(f"{out_dir} holds the calls of another judge ({held.get('model')}, "
                             f"prompt sha256 {str(held.get('prompt_sha256'))[:12]}); give that "
                             "judge and prompt again, or choose another folder with --out DIR")
    if not write:
        return
    lock = {"format": JUDGE_LOCK_FORMAT, "model": setup.model, "identity": setup.identity,
            "prompt": setup.prompt.shown, "prompt_sha256": setup.prompt.sha256,
            "threshold": setup.threshold, "backend": setup.backend.name,
            "server": setup.server, "journal": JUDGE_JOURNAL}
    write_atomic(path, (json.dumps(lock, indent=1, sort_keys=True) + "\n").encode("utf-8"))


def judge_printer(quiet: bool, judge: Judge):
    """"judged N of M items" on stderr at the start, then at most every 2 seconds and at the end
    (none with --quiet)."""
    last = [float("-inf")]

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if quiet or (now - last[0] < 2 and 0 < done < total):
            return
        last[0] = now
        print(f"  judged {done:,} of {total:,} items ({judge.sent:,} sent, {judge.reused:,} "
              "from the journal)", file=sys.stderr, flush=True)
    return show


def run_judge(setup: AuditJudge, out_dir: Path, records: list[dict], summaries: list[str],
              quiet: bool) -> dict:
    """The judge over every scored compaction's judged items, each call journalled in out_dir;
    what the report says of it. A Ctrl-C or SIGTERM, or a server that stops answering, ends the
    audit with the calls made kept."""
    claim_judge_lock(out_dir, setup)
    cache = CallCache(out_dir / JUDGE_JOURNAL)
    judge = Judge(setup.backend, setup.model, setup.identity, setup.prompt, cache, setup.policy,
                  setup.threshold)
    journal = shown_path(out_dir / JUDGE_JOURNAL)
    kept = ("the same command again sends only the rest (the rules score the logs again "
            "first; no report was written, and the logs are untouched)")
    before = signal.signal(signal.SIGTERM, stop_on_terminate)
    try:
        judge_records(records, summaries, judge, judge_printer(quiet, judge))
    except KeyboardInterrupt:
        raise AuditInterrupted(f"interrupted; the judge's {len(cache.records):,} calls made are "
                               f"kept in {journal}, and {kept}") from None
    except ServerGone as err:
        raise ServerGone(f"the judge's server stopped answering ({err}); its "
                         f"{len(cache.records):,} calls made are kept in {journal}: start it "
                         f"again, and {kept}") from None
    except (TransientError, FatalCallError) as err:
        raise PilotError(f"the judge's server failed a call ({err}); its "
                         f"{len(cache.records):,} calls made are kept in {journal}: fix the "
                         f"server or the model, and {kept}") from None
    finally:
        signal.signal(signal.SIGTERM, before)
    return judge_analysis(records, {"model": setup.model, "prompt": setup.prompt.shown,
                                    "prompt_sha256": setup.prompt.sha256,
                                    "threshold": setup.threshold, "agreement": setup.agreement,
                                    "below": setup.below, "sent": judge.sent,
                                    "reused": judge.reused})



def command_audit(args) -> int:
    try:
        return audit_now(args)
    except KeyboardInterrupt:
        if getattr(args, "judge", None):
            raise AuditInterrupted("interrupted; the rules keep nothing until they have read and "
                                   "scored every log, and the judge's calls already journalled "
                                   f"in the output folder ({JUDGE_JOURNAL}) are kept, so a rerun "
                                   "of the same command sends only the rest (no report was "
                                   "written, and the logs are untouched)") from None
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
    unjudged = [flag for flag, value in (("--judge-prompt", args.judge_prompt),
                                         ("--judge-threshold", args.judge_threshold),
                                         ("--judge-agreement", args.judge_agreement))
                if value is not None]
    if args.judge is not None and not args.judge.strip():
        raise PilotError("--judge was given no model name (an unset variable?); give the model "
                         "as your server lists it, e.g. --judge qwen2.5-coder:1.5b, or leave "
                         "--judge out for the rules alone")
    if unjudged and not args.judge:
        raise PilotError(f"{unjudged[0]} is an option of the judge: give --judge MODEL too, or "
                         f"leave {unjudged[0]} out for the rules alone")
    out_dir = Path(args.out) if args.out else None
    given = paths if args.source is None else [Path(args.source), Path(args.summary)]
    if out_dir is not None:
        refuse_out_in_logs(out_dir, given)
        check_out(out_dir)
    # the judge's server checked before anything is read or any folder made
    judge = judge_setup(args)
    if out_dir is None:
        return audit_into(args, paths, None, given, judge)
    with out_locked(out_dir):
        if judge is not None:
            claim_judge_lock(out_dir, judge, write=False)
        return audit_into(args, paths, out_dir, given, judge)


def audit_into(args, paths: list[Path], out_dir: Path | None, given: list[Path],
               judge: AuditJudge | None = None) -> int:
    """The audit itself, into out_dir (locked by the caller), or with out_dir None into the default
    folder named by what was read (locked here once it is known); the judge, where given, after
    the rules."""
    started = time.monotonic()
    if args.source is not None:
        records, read, summaries = pair_records(Path(args.source), Path(args.summary))
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
        # the summary each record scored, in the records' order (the workers return no text)
        summaries = [session["compactions"][k]["summary"]
                     for _, session, k in compaction_events(sessions)]
    if out_dir is None:
        out_dir = RESULTS_ROOT / f"audit-{read['sha256'][:12]}"
        # a folder given as logs that holds the repository (`audit ~`): its results/ would be read
        # as logs next time; a log file's folder that holds it (~/session.jsonl) is no reason
        refuse_out_in_logs(out_dir, [path for path in given if path.is_dir()])
        check_out(out_dir)
        with out_locked(out_dir):
            return judge_and_write(out_dir, records, read, summaries, judge, args.quiet, started)
    return judge_and_write(out_dir, records, read, summaries, judge, args.quiet, started)


def judge_and_write(out_dir: Path, records: list[dict], read: dict, summaries: list[str],
                    judge: AuditJudge | None, quiet: bool, started: float) -> int:
    """The judge's statuses on its items (with --judge), then the analysis and the outputs."""
    judged = run_judge(judge, out_dir, records, summaries, quiet) if judge else None
    analysis = analyze_audit(records, read)
    if judged:
        analysis = with_judge(analysis, judged)
    return write_audit(out_dir, records, analysis, started)


def write_audit(out_dir: Path, records: list[dict], analysis: dict, started: float) -> int:
    figure = audit_figure(analysis)
    judged = analysis.get("judge")
    outputs = dict(zip(OUTPUTS, (render_audit_csv(records, judged=bool(judged)),
                                 render_audit_md(analysis),
                                 render_audit_html(analysis, figure))))
    if figure is not None:
        outputs[f"figures/{AUDIT_FIGURE[0]}"] = figure
    # every output checked before any is written: no link, no non-file
    for name in outputs:
        refuse_unsafe(out_dir / name)
    write_outputs(out_dir, outputs)
    print(render_audit_headline(analysis))
    called = (f"the judge {judged['model']} was asked {judged['sent']:,} item"
              f"{'s' * (judged['sent'] != 1)} ({judged['reused']:,} more answered from "
              f"{shown_path(out_dir / JUDGE_JOURNAL)})" if judged else "no model was called")
    print(f"wrote {', '.join(shown_path(out_dir / n) for n in outputs)} in "
          f"{time.monotonic() - started:.1f} s; "
          f"{called} and nothing was written beside the logs")
    print(f"Open the report: {shown_path(out_dir / 'report.html')}")
    return EXIT_OK
