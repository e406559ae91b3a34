"""The study registry: one line per study, the first the default.

To add a study:
1. Write its protocol document under protocol/ and commit its task file under tasks/ before any run.
2. Write a module here for its design (task generator, loader with its design checks, regimes, how a cell's calls
   are planned and each call's messages built) and one for its analysis (score, analyze, render_md, headline).
3. Register it below in one line: `register_study(Study(KEY, ...))`, with the hooks the Study record names
   (pilot/records.py). Its key is what its run folders record; `--study KEY` then runs it on the shared runner,
   journal, lock, retries, resume, status, plan, verify and shards.
"""
from __future__ import annotations

from ..records import Study, register_study
from .constraints import (SC_DEFAULT_REGIMES, SC_PINNED_TASKS_SHA256, SC_PROTOCOL_ID, SC_PROTOCOL_PATH, SC_REGIMES,
    SC_RUN_NAME, SC_TASKS_PATH, build_constraint_messages, constraint_prompts_sha256, load_constraint_task_set,
    plan_constraint_calls)
from .constraints_analysis import (analyze_constraints, render_constraints_headline, render_constraints_md,
    score_constraint_bank)
from .xr001 import (DEFAULT_REGIMES, DEFAULT_RUN_NAME, PINNED_TASKS_SHA256, PROTOCOL_ID, PROTOCOL_PATH, REGIMES,
    TASKS_PATH, build_messages, load_xr001_task_set, plan_calls, prompts_sha256)
from .xr001_analysis import analyze_results, in_run_order, score_bank
from .xr001_report import render_xr001_headline, render_xr001_md


# The registry: one line per study, the first the default.
register_study(Study("xr001", PROTOCOL_ID, PROTOCOL_PATH, TASKS_PATH, PINNED_TASKS_SHA256, DEFAULT_RUN_NAME, REGIMES, DEFAULT_REGIMES, prompts_sha256, load_xr001_task_set, plan_calls, build_messages, score_bank, analyze_results, render_xr001_md, render_xr001_headline, demo=True, run_order=in_run_order))

register_study(Study("constraints", SC_PROTOCOL_ID, SC_PROTOCOL_PATH, SC_TASKS_PATH, SC_PINNED_TASKS_SHA256, SC_RUN_NAME, SC_REGIMES, SC_DEFAULT_REGIMES, constraint_prompts_sha256, load_constraint_task_set, plan_constraint_calls, build_constraint_messages, score_constraint_bank, analyze_constraints, render_constraints_md, render_constraints_headline, probe_kind="forced_choice", demo=True, declared_variants_only=True))
