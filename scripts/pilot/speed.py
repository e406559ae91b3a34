"""Speed only: the process-level tricks that make a large results bank quick to read, analyse
and leave, kept apart from what the code computes
(scripts/BENCHMARKS.md, "Analysis of large banks"). Nothing here changes an output: without it
every file and printed line is the same, only slower.

- collector_paused: the cyclic garbage collector off while a bank is read and analysed.
- hold_until_exit and end_process: a bank read by the script is freed by the process's end,
  not object by object.

The commands, the pages, the command line and the entry points (scripts/run_pilot.py,
paper/make_figures.py) import them from here. This module imports nothing of the package.
"""
from __future__ import annotations

import contextlib
import gc
import os
import sys
from typing import Any


@contextlib.contextmanager
def collector_paused():
    """Pause the cyclic garbage collector while a bank is read and analysed: that makes millions
    of small objects and no cycles, and the collector's passes over them cost about a fifth of
    the time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# When a command that read a bank is about to end the process, freeing a large bank's millions
# of objects one at a time takes about a second, and ending the process frees them anyway. The
# script's entry point (and make_figures.py's) sets EXIT_WITHOUT_FREEING; every bank read is
# then held here, and a process that holds one ends with os._exit once its output is flushed
# (files are written and closed before that). Imported (by the tests), nothing is held.
EXIT_WITHOUT_FREEING = False

HELD_UNTIL_EXIT: list = []


def hold_until_exit(*objects: Any) -> None:
    if EXIT_WITHOUT_FREEING:
        HELD_UNTIL_EXIT.extend(objects)


def end_process(code: int) -> None:
    """The script's exit: os._exit when a bank is held (after flushing what was printed), else
    sys.exit."""
    if HELD_UNTIL_EXIT:
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except (OSError, ValueError):   # a closed or full stream: what could be written was
                pass
        os._exit(code)
    sys.exit(code)
