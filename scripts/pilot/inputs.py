"""Inputs: task files read once, hashed and handed to their study's own checks; regimes as plain
records and their hash; the word limit of a compaction budget."""
from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path
from typing import Any, Iterable

from .records import (DEFAULT_BUDGET, MAX_STATE_WORDS, PilotError, Regime, STUDY_REGISTRY, Study,
                      canonical_json, display_path, file_sha256, lone_surrogate,
                      lone_surrogate_problem, read_canonical, sha256_bytes, sha256_text,
                      study_named)


STATE_READERS = ("none", "prose", "typed")         # and "section:<heading>"


def regime_record(regime: Regime) -> dict:
    """A regime as plain data, as the manifest and results.json keep it (`condition` only where set,
    so the default study's records and hashes are what they always were)."""
    record = dataclasses.asdict(regime)
    if record["condition"] is None:
        del record["condition"]
    if not record["judge"]:
        del record["judge"]
    if not record["gated"]:
        del record["gated"]
    for optional in ("system", "empty_state"):
        if record[optional] is None:
            del record[optional]
    return record


def regime_from_record(record: dict) -> Regime:
    fields = {f.name for f in dataclasses.fields(Regime)}
    return Regime(**{k: v for k, v in record.items() if k in fields})


def regimes_sha256(regimes: Iterable[Regime]) -> str:
    return sha256_text(canonical_json([regime_record(r) for r in regimes]))


def tasks_to_bytes(tasks: dict) -> bytes:
    """The canonical file form of a task file: two-space indent, ASCII, LF, final newline."""
    return (json.dumps(tasks, indent=2, ensure_ascii=True) + "\n").encode("ascii")


def budget_words(budget: int) -> int:
    """The instructed word limit at a compaction budget, in the pinned 120 words : 256 tokens
    ratio."""
    return max(1, round(MAX_STATE_WORDS * budget / DEFAULT_BUDGET))


class TaskSetError(PilotError):
    """A task file that fails the design checks; the message names every failed check, one per
    line."""


MAX_REPORTED_PROBLEMS = 25


def design_check_failure(shown: str, problems: list[str], schema: str, advice: str) -> TaskSetError:
    """A study's refusal of a task file that fails its design checks: how many fail, of which schema
    and what to do, then one problem per line (the first MAX_REPORTED_PROBLEMS, and how many
    more)."""
    lines = problems[:MAX_REPORTED_PROBLEMS]
    if len(problems) > len(lines):
        lines.append(f"... and {len(problems) - len(lines)} more")
    return TaskSetError(f"{shown} fails {len(problems)} design check(s) of the {schema}; "
                        f"{advice}:\n" +
                        "\n".join(f"  - {p}" for p in lines))


# Every JSON file a user brings or a run wrote is read here (task files, regime files, manifests,
# results, ledgers,
# probes files, sessions): one reader, so that each of them is refused the same way, in one line
# that says what is
# wrong with it and what to do, before anything else reads it.
def read_json(path: Path, shown: str, kind: str, advice: str, *, error: type = PilotError,
              bom: bool = False,
              canonical: bool = False) -> tuple[bytes, str, Any]:
    """A JSON file's bytes (with CRLF read as LF where `canonical`), text and value; anything but a
    regular file of UTF-8 JSON text with no lone surrogate is refused: `error` of `{shown} <what is
    wrong>; {advice}`. `kind` says what the file is not when its JSON is nested too deeply ("a task
    file"); `bom`: a leading byte-order mark, as some editors write, is read."""
    if not path.exists():
        raise error(f"{shown} does not exist; {advice}")
    if not path.is_file():
        raise error(f"{shown} is not a regular file (a folder, device, pipe or socket); {advice}")
    try:
        data = read_canonical(path) if canonical else path.read_bytes()
    except OSError as err:
        raise error(f"{shown} cannot be read ({err.strerror or err}); {advice}") from None
    try:
        text = data.decode("utf-8-sig" if bom else "utf-8")
    except UnicodeDecodeError as err:
        raise error(
            f"{shown} is not UTF-8 text (byte {err.start} cannot be decoded); {advice}"
        ) from None
    return data, text, parse_json(text, shown, kind, advice, error=error)


# parse_json(..., or_not_json=True) of a text that is not JSON
NOT_JSON = object()


def parse_json(text: str, shown: str, kind: str, advice: str, *, error: type = PilotError,
               or_not_json: bool = False) -> Any:
    """The value of a JSON text read from `shown` (a file, or what a command was piped), refused as
    read_json refuses it; with or_not_json, a text that is not JSON at all is NOT_JSON (a reader
    that tries another format)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise error(f"{shown} is not {kind} (its JSON is nested too deeply); {advice}") from None
    except ValueError as err:
        if or_not_json:
            return NOT_JSON
        raise error(f"{shown} is not valid JSON ({err}); {advice}") from None
    surrogate = lone_surrogate(text, value)
    if surrogate:
        raise error(f"{lone_surrogate_problem(shown, surrogate)}; {advice}")
    return value


def load_task_set(path: Path, study: Study | None = None) -> dict:
    """A task file with its sha256 and kind: `pinned` (the pre-registered tasks/tasks.json),
    `generated` (this generator, other seed or size) or `external` (brought by the user; must pass
    the design checks). A study that reads its own source (its CommandLine.read_source: a file or
    folder the user brings) reads it here, with its options, and its sha256 is that of the bytes the
    study says it read."""
    in_repo = path.resolve() in {
        registered.tasks_path.resolve() for registered in STUDY_REGISTRY.values()
    }
    if study is not None and study.command_line.read_source is not None:
        raw, tasks = study.command_line.read_source(path, **study.options)
        return study.load_tasks(path, raw, tasks, sha256_bytes(raw), in_repo)
    shown = display_path(path)
    if not path.exists():
        if in_repo:
            raise PilotError(f"{shown} is missing; restore it with `git checkout -- {shown}` (it "
                             "is committed before any run: pre-registration)")
        raise PilotError(f"no tasks file at {path}; check the path, or make one with: python3 "
                         f"scripts/run_pilot.py generate --tasks {shlex.quote(str(path))}")
    if path.is_dir():
        raise PilotError(f"{path} is a folder; --tasks takes a tasks JSON file")
    hint = (f"restore it with `git checkout -- {shown}`" if in_repo else "point --tasks at a "
            "tasks JSON file")
    raw, _, tasks = read_json(path, shown, "a task file", hint, canonical=True)
    return task_file_study(tasks).load_tasks(path, raw, tasks, sha256_bytes(raw), in_repo)


def task_file_study(tasks: Any) -> Study:
    """The study a task file belongs to: the one its `study` field names, else the one whose
    protocol it names, else the default study (whose design checks then judge it)."""
    if not isinstance(tasks, dict):
        return study_named(None)
    if isinstance(tasks.get("study"), str):
        return study_named(tasks["study"])
    protocol = tasks.get("protocol")
    named = [s for s in STUDY_REGISTRY.values() if isinstance(protocol,
                                                              str) and s.protocol_id == protocol]
    return named[0] if named else study_named(None)


def load_tasks(path: Path, n_episodes: int | None, study: Study | None = None) -> tuple[dict, str]:
    """Read a task set (see load_task_set) and cut it to its first n episodes."""
    task_set = load_task_set(path, study)
    tasks = task_set["tasks"]
    available = len(tasks["episodes"])
    n = available if n_episodes is None else n_episodes
    if not 1 <= n <= available:
        raise PilotError(f"--episodes must be between 1 and {available} for {task_set['path']}; "
                         "for more, generate a larger task file with `generate --episodes N "
                         "--tasks PATH` and pass --tasks")
    return {**tasks, "episodes": tasks["episodes"][:n]}, task_set["sha256"]


def task_set_summary(task_set: dict) -> dict:
    """What the manifest records of a task set before any call: its kind, sha256 and path, and
    what a study says it scores beyond its design (`scored`), where it says so."""
    return {k: task_set[k] for k in ("kind", "sha256", "path", "scored") if k in task_set}


def protocol_sha256(path: Path) -> str:
    if not path.exists():
        raise PilotError(f"{display_path(path)} is missing; restore it from git (the run is locked "
                         f"to the pre-registered protocol)")
    return file_sha256(path)
