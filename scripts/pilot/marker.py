"""The folder marker (issue 41): a folder is the tool's own only by the marker it wrote there,
.pilot-outputs.json, which records every output it wrote in that folder (results, tables,
analysis, report, figures) with the sha256 of what it wrote, never by the names of the files it
holds. A file the marker does not record with its present bytes is someone else's, and no command
replaces it. A folder made before the marker is taken as ours once, by content (a run manifest
this runner can load, a results bank, an audit table), and the marker is written at its next
output."""
from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from .records import PilotError

MARKER_NAME = ".pilot-outputs.json"
MARKER_FORMAT = "pilot-outputs/1"
MARKER_NOTE = ("written by scripts/run_pilot.py: each file it wrote in this folder and the sha256 "
               "of what it wrote; a file not listed here, or changed since, is never replaced")
# The outputs the marker records: the files a command writes whole (the manifest and raw/ are the
# run's ledger, checked against each other by `verify`), and whatever figures/ holds.
OUTPUT_FILES = ("results.json", "probes.csv", "gate.csv", "lost.csv", "analysis.md", "RESULTS.md",
                "report.html", "audit.csv")
FIGURES = "figures"
# The outputs each kind of command may replace (`run` also scores and reports).
REPLACED = {"report": ("analysis.md", "RESULTS.md", "report.html", "lost.csv", FIGURES),
            "audit": ("audit.csv", "analysis.md", "report.html", FIGURES)}
REPLACED["run"] = OUTPUT_FILES + (FIGURES,)
MOVE_AWAY = "move it away, or choose a new or empty folder with --out"
# what an audit with a judge keeps in its folder before any output is written (its calls and the
# judge that made them), so that a rerun after an interrupt finds the folder its own
JUDGE_FILES = ("judge-calls.jsonl", "judge-calls.jsonl.quarantine", "judge-lock.json")


class ForeignFile(PilotError):
    """A file the tool did not write (or that was changed since) where an output goes."""


def output_place(path: Path) -> tuple[Path, str] | None:
    """The folder whose marker covers path and path's name in it (`report.html`,
    `figures/fig_a.svg`; `manifest.json`, which is never hashed), or None for any other file."""
    if path.name in OUTPUT_FILES or path.name == "manifest.json":
        return path.parent, path.name
    if path.parent.name == FIGURES and path.suffix == ".svg":
        return path.parent.parent, f"{FIGURES}/{path.name}"
    return None


def file_sha256(path: Path) -> str | None:
    """The sha256 of a regular file's bytes (read in blocks), or None where there is none."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    except OSError:
        return None


def present_outputs(folder: Path) -> list[str]:
    """The outputs folder holds, by the marker's names, in sorted order."""
    names = [name for name in OUTPUT_FILES if (folder / name).is_file()]
    if (folder / FIGURES).is_dir() and not (folder / FIGURES).is_symlink():
        names += [f"{FIGURES}/{p.name}" for p in (folder / FIGURES).iterdir() if p.is_file()
                  and p.suffix == ".svg" and not p.name.startswith(".")]
    return sorted(names)


def read_marker(folder: Path) -> dict[str, str] | None:
    """The files folder's marker records (name -> sha256), or None without a marker; a file by that
    name that is not one this tool wrote is refused."""
    path = folder / MARKER_NAME
    if not os.path.lexists(path):
        return None
    try:
        data = json.loads(path.read_bytes()) if not path.is_symlink() else None
    except (OSError, ValueError):
        data = None
    files = data.get("files") if isinstance(data, dict) and data.get("format") == MARKER_FORMAT \
        else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise ForeignFile(f"{path} is not the folder marker this tool writes, so nothing in "
                          f"{folder} is replaced; {MOVE_AWAY}")
    return files


def marker_bytes(files: dict[str, str]) -> bytes:
    return (json.dumps({"format": MARKER_FORMAT, "note": MARKER_NOTE, "files": files},
                       indent=1, sort_keys=True) + "\n").encode("utf-8")


def refuse_replacing(path: Path) -> None:
    """Before path is replaced: refuse when its folder has a marker that does not record path's
    present bytes (a file the tool did not write, or one changed since)."""
    place = output_place(path)
    if place is None or place[1] == "manifest.json" or not os.path.lexists(path):
        return
    folder, name = place
    files = read_marker(folder)
    if files is not None and files.get(name) != file_sha256(path):
        raise ForeignFile(foreign_message(folder, name, name in files))


def foreign_message(folder: Path, name: str, recorded: bool) -> str:
    why = "was changed since this tool wrote it" if recorded else "was not written by this tool"
    return (f"{folder / name} {why} (its folder marker {MARKER_NAME} says so), so it is never "
            f"replaced; {MOVE_AWAY}")


def marked(path: Path, data: bytes) -> bytes | None:
    """The folder marker to write after path was written with data (adopting, when the folder has
    none yet, every output already there), or None when it does not change."""
    place = output_place(path)
    if place is None:
        return None
    folder, name = place
    files = read_marker(folder)
    if files is None:
        files = {n: file_sha256(folder / n) for n in present_outputs(folder)}
        files = {n: digest for n, digest in files.items() if digest is not None}
    elif name == "manifest.json":
        return None
    if name != "manifest.json":
        files[name] = hashlib.sha256(data).hexdigest()
    return marker_bytes(files)


def legacy_owned(folder: Path, run_manifest: bool) -> bool:
    """Whether a folder made before the marker is ours by content: a run manifest this runner
    loads (run_manifest), a results bank (an object with `models`, `regimes` and `probes`), or an
    audit table."""
    if run_manifest:
        return True
    try:
        if (folder / "results.json").is_file():
            bank = json.loads((folder / "results.json").read_bytes())
            return isinstance(bank, dict) and all(isinstance(bank.get(f), list)
                                                  for f in ("models", "regimes", "probes"))
        if (folder / "audit.csv").is_file():
            with open(folder / "audit.csv", "rb") as fh:
                return fh.readline().startswith(b"file,session,compaction,")
    except (OSError, ValueError, RecursionError):
        return False
    return False


def claim_problem(folder: Path, purpose: str, run_manifest: bool) -> str | None:
    """Why a command of this purpose (run, report, audit) may not write into an existing folder,
    or None: a file it would replace that is not ours, or a folder of another kind."""
    names = {p.name for p in folder.iterdir() if not p.name.startswith(".")}
    if not names:
        return None
    files = read_marker(folder)
    outputs = present_outputs(folder)
    if files is None and not legacy_owned(folder, run_manifest):
        if outputs:
            return (f"{folder / outputs[0]} was not written by this tool ({folder} has no folder "
                    f"marker {MARKER_NAME}, and it is not a run, bank or audit of this tool), so "
                    f"it is never replaced; {MOVE_AWAY}")
        foreign = sorted(names - {"manifest.json", "raw", "figures", "quarantine", *JUDGE_FILES})
        if foreign:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more"
                                              if len(foreign) > 3 else "")
            return (f"{folder} is not a run folder and holds other files ({shown}); choose a "
                    "new or empty folder with --out")
    is_run = "manifest.json" in names or "raw" in names
    if purpose == "audit" and (is_run or "results.json" in names
                               or os.path.lexists(folder / ".lock")):
        return (f"{folder} holds a run (manifest.json, raw/ or results.json), not an audit; "
                "choose a new or empty folder with --out")
    if purpose != "audit" and "audit.csv" in names and not is_run:
        return (f"{folder} holds an audit (audit.csv), not a run; choose a new or empty folder "
                "with --out")
    if purpose == "run" and "results.json" in names and not is_run:
        return (f"{folder} holds a results.json but no run (no manifest.json), which a run would "
                "replace; choose a new or empty folder with --out")
    if files is not None:
        for name in outputs:
            if name.split("/")[0] in REPLACED[purpose] and files.get(name) != \
                    file_sha256(folder / name):
                return foreign_message(folder, name, name in files)
    return None
