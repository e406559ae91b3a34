"""The study registry: one line per study, the first the default.

To add a study:
1. Write its protocol document under protocol/ and commit its task file under tasks/ before any run.
2. Write a module here for its design (task generator, loader with its design checks, regimes, how a cell's calls
   are planned and each call's messages built) and one for its analysis (score, analyze, render_md, headline).
3. Register it below in one line, `register_study(Study(KEY, ...))`, filling the hooks the Study record names
   (pilot/records.py) and its `question` (what `--study`'s help says of it); the optional ones (a gated cascade,
   a gate ledger, its own command-line options, tasks read from files the user brings with an option of its own
   (read_source, source_option), files beside results.json, its own bank check, a demo on the stand-in model)
   only where it has them. Its key is what its run folders record; `--study KEY` then runs it on the shared
   runner, journal, lock, retries, resume, status, plan, verify and shards, and tests/test_layout.py checks that
   it filled every hook. The sessions study (sessions*.py) is the example of a study added this way: its own
   modules, this one line, its protocol and its tests.
"""
from __future__ import annotations

from ..cells import cascade_plan
from ..episodes import gate_bank
from ..records import Study, register_study
from . import adversarial as adv, adversarial_analysis as adv_an, constraints as sc, constraints_analysis as sc_an
from . import sessions as ss, sessions_analysis as ss_an, xr001, xr001_analysis, xr001_report

register_study(Study("xr001", xr001.PROTOCOL_ID, xr001.PROTOCOL_PATH, xr001.TASKS_PATH, xr001.PINNED_TASKS_SHA256, "xr001", xr001.REGIMES, xr001.DEFAULT_REGIMES, xr001.prompts_sha256, xr001.load_task_set, cascade_plan, xr001.call_text, xr001_analysis.score, xr001_analysis.analyze, xr001_report.render_md, xr001_report.render_headline, xr001.generate_file, demo=True, demo_model=xr001.stand_in, run_order=xr001_analysis.in_run_order, gate_rows=gate_bank, question="what compaction does to numbers"))  # noqa: E501
register_study(Study("constraints", sc.PROTOCOL_ID, sc.PROTOCOL_PATH, sc.TASKS_PATH, sc.PINNED_TASKS_SHA256, "constraints", sc.REGIMES, sc.DEFAULT_REGIMES, sc.prompts_sha256, sc.load_task_set, sc.plan_calls, sc.call_text, sc_an.score, sc_an.analyze, sc_an.render_md, sc_an.render_headline, sc.generate_file, add_options=sc.add_constraint_options, user_regimes=sc.user_regimes, reserved_suffixes=((sc.UPPER_BOUND_SUFFIX, "each regime's upper bound"),), regime_options=("judge",), adjust_regimes=sc.adjust_regimes, plan_note=sc.plan_note, demo_model=sc.stand_in, probe_kind="forced_choice", demo=True, episode_noun="instance", declared_variants_only=True, gate_rows=gate_bank, question="whether standing instructions survive compaction"))  # noqa: E501
register_study(Study("adversarial", adv.PROTOCOL_ID, adv.PROTOCOL_PATH, adv.TASKS_PATH, adv.PINNED_TASKS_SHA256, "adversarial", adv.REGIMES, adv.DEFAULT_REGIMES, xr001.prompts_sha256, adv.load_task_set, adv.plan_calls, adv.call_text, adv_an.score, adv_an.analyze, adv_an.render_md, adv_an.render_headline, adv.generate_file, state_after=adv.gated_state, add_options=adv.add_adversarial_options, read_options=adv.read_options, write_outputs=adv_an.write_outputs, check_bank=adv_an.check_bank, max_models=1, variants=False, question="whether the release gate keeps a corrupted state from being resumed"))  # noqa: E501
register_study(Study("sessions", ss.PROTOCOL_ID, ss.PROTOCOL_PATH, ss.TASKS_PATH, ss.PINNED_TASKS_SHA256, "sessions", ss.REGIMES, ss.DEFAULT_REGIMES, ss.prompts_sha256, ss.load_task_set, cascade_plan, ss.call_text, ss_an.score, ss_an.analyze, ss_an.render_md, ss_an.render_headline, ss.generate_file, probe_kind="exact", demo=True, demo_episodes=ss.N_EXAMPLES, demo_model=ss.stand_in, episode_noun="session", add_options=ss.add_session_options, read_options=ss.read_options, read_source=ss.read_sessions, source_option="sessions", describe_tasks=ss.describe_sessions, user_regimes=ss.user_regimes, write_outputs=ss_an.write_outputs, check_bank=ss_an.check_bank, figures=False, question="what compaction loses from your own transcripts; exploratory"))  # noqa: E501
