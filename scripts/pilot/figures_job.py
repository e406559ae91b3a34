"""The figures and the report of a scored run: paper/make_figures.py as a process of its own
(FiguresJob), handed the analysis and the few fields of results.json it reads (figures_input), so
that a large bank is read and analysed once."""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from .bank import call_stage
from .records import DiskFull, EXIT_DISK_FULL, PilotError, REPO_ROOT


FIGURES_SCRIPT = REPO_ROOT / "paper" / "make_figures.py"


def figures_input(results: dict) -> dict:
    """What the figures and the report read besides the analysis: results.json without its probes
    and final-state scores, and of its call records only the compaction calls' token counts (a small
    fraction of a large bank)."""
    slim = {k: v for k, v in results.items() if k not in ("probes", "calls", "compaction_stage")}
    # the figures read the probes and the final states only through the analysis
    slim["probes"] = []
    if isinstance(results.get("calls"), list):
        fields = ("model", "regime", "kind", "stage", "eval_count", "budget", "sample")
        slim["calls"] = [{k: c[k] for k in fields if k in c} for c in results["calls"]
                         if call_stage(c) == "compaction"]
    return slim


def write_figures_and_report(out_dir: Path, source: Path | None = None,
                             tasks_path: Path | None = None,
                             handover: tuple[dict, dict] | None = None) -> list[Path]:
    """figures/, RESULTS.md and report.html into out_dir, made by paper/make_figures.py from the
    results.json `source` (default: the one in out_dir), as the bank's study draws and writes them;
    see FiguresJob."""
    with FiguresJob(out_dir, source, tasks_path, handover=handover is not None) as job:
        job.start()
        return job.finish(handover)


class FiguresJob:
    """paper/make_figures.py making figures/, RESULTS.md and report.html for out_dir, as its own
    process: the figures script imports the runner, never the other way round. It starts once the
    bank is known to be one it can read (start), and every study's bank gets its pages
    (pilot/pages.py: the study's own figures and pages, else the shared ones). With `handover`, the
    caller has analysed (or is analysing) that same results.json, and finish() pipes it the analysis
    and the few fields the figures read, so a large bank is read and analysed once, not twice;
    started before the analysis, the script starts up on the other core meanwhile and waits for it.
    Leaving the `with` block stops a job never finished."""

    def __init__(self, out_dir: Path, source: Path | None = None, tasks_path: Path | None = None,
                 handover: bool = False):
        self.out_dir, self.results_path = out_dir, source or out_dir / "results.json"
        self.tasks_path, self.handover = tasks_path, handover
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the figures script (once)."""
        if self.proc is not None or not FIGURES_SCRIPT.exists():
            return
        argv = [sys.executable, str(FIGURES_SCRIPT), str(self.results_path), "--out",
                str(self.out_dir)]
        argv += ["--tasks", str(self.tasks_path)] if self.tasks_path is not None else []
        argv += ["--handover"] if self.handover else []
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE if self.handover
                                     else subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     encoding="utf-8")

    def finish(self, handover: tuple[dict, dict] | None = None) -> list[Path]:
        if self.proc is None:
            return []
        piped = None
        if handover is not None:
            results, analysis = handover
            piped = json.dumps({"results": figures_input(results), "analysis": analysis},
                               ensure_ascii=False)
        stdout, stderr = self.proc.communicate(piped)
        if self.proc.returncode == EXIT_DISK_FULL:
            raise DiskFull(self.out_dir, "analysis.md and results.json are written; free some "
                           "space, then make the figures and report with: python3 "
                           f"paper/make_figures.py {shlex.quote(str(self.results_path))} --out "
                           f"{shlex.quote(str(self.out_dir))}")
        if self.proc.returncode != 0:
            reason = (stderr.strip().splitlines() or ["no message"])[-1]
            raise PilotError(f"the figures and report were not made ({reason}); analysis.md and "
                             "results.json are written; retry with: python3 paper/make_figures.py "
                             f"{shlex.quote(str(self.results_path))} --out "
                             f"{shlex.quote(str(self.out_dir))}")
        return [Path(line) for line in stdout.splitlines() if line.strip()]

    def __enter__(self) -> "FiguresJob":
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            self.proc.communicate()
