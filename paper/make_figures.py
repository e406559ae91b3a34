#!/usr/bin/env python3
"""Figures, RESULTS.md and report.html, regenerated from a results.json alone (standard library
only).

Usage:
    python3 paper/make_figures.py                             # paper/, from PAPER_SOURCE
    python3 paper/make_figures.py results/xr001/results.json  # into that run's own folder
    python3 paper/make_figures.py RESULTS_JSON --out DIR      # all into DIR, nothing elsewhere

Writes the bank's figures (figures/, as its study draws them: XR-001's five, for instance), the
narrative RESULTS.md (never edited by hand) and a self-contained report.html, all into one folder.
With no arguments the source is PAPER_SOURCE, the run the README names, and the folder is paper/; it
never picks the most recent run. The same results.json always gives byte-identical files: no
timestamps, stable ordering, fixed number formatting, and only relative paths inside the files. No
raw logs and no server are needed.

The code is the runner's package (scripts/pilot/pages.py and each study's figures module); this is
its command. """
from __future__ import annotations

import sys
from pathlib import Path

PAPER_DIR = Path(__file__).resolve().parent
REPO_ROOT = PAPER_DIR.parent
# The run paper/ is made from: the committed worked example the README describes.
PAPER_SOURCE = REPO_ROOT / "results" / "smollm2-135m-llamacpp" / "results.json"

sys.path.insert(0, str(REPO_ROOT / "scripts"))     # the runner's package, scripts/pilot/
from pilot import pages, speed  # noqa: E402
import pilot.studies  # noqa: E402,F401  (registers the studies)


def main(argv: list[str] | None = None) -> int:
    return pages.main(argv, PAPER_SOURCE)


if __name__ == "__main__":
    speed.EXIT_WITHOUT_FREEING = True
    speed.end_process(main())
