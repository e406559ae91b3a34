"""The study registry: one entry per study, the first the default.

Each study lives in a folder of its own, studies/KEY/, named after its key: its design, analysis,
figures and report, and whatever it shares with no other study (the sessions study's log readers
in sessions/readers/, with a registry of their own). What several studies share is the core's
(pilot/), the text rules' (pilot/rules/) or, for the pseudoword episodes, studies/episodes.py.

To add a study (the sessions study, studies/sessions/, was added this way: its own folder, one
entry below, its protocol and its tests; tests/test_studies.py adds one more, TALLY-T1, through
these steps alone, as a single module studies/tally.py, which a small study may be):
1. Write its protocol document under protocol/ and commit its task file under tasks/ before any run
   (or, for tasks read from files the user brings, the examples it reads by default).
2. Make its folder studies/KEY/ (an __init__.py whose docstring says what the study is) and write
   its design in KEY/design.py, holding, under the same names in every study: PROTOCOL_ID,
   PROTOCOL_PATH, TASKS_PATH, PINNED_TASKS_SHA256, REGIMES (name -> records.Regime; the built-in
   ones of pilot/prompts.py, or its own), DEFAULT_REGIMES, prompts_sha256(), load_task_set(path,
   raw, tasks, sha, in_repo) (with its design checks: refuse, before any call, a task file that
   lacks anything the run later reads, in one TaskSetError naming every problem),
   generate_file({"episodes": N, its generate options}), plan_calls(regime, episode, budget) (or
   cells.cascade_plan: a compaction after every segment, then the questions) and call_text(regime,
   episode, spec, state, registry) -> prompts.CallText: what the call is about, never its messages
   (prompts.build_messages writes them through the regime, with a regime file's `system` and
   `empty_state`; the study's own empty_state stands for "no state yet" where the regime has none).
3. Write its analysis in KEY/analysis.py: score_cell(run, cell, records, base, plan)
   scores one complete cell into named lists of rows (the shared scoring, bank.score_run, checks
   each cell against the manifest, gathers the rows and writes the header every results.json opens
   with), score_fields(run, rows), if it needs one, makes its fields of results.json of them;
   analyze(results, task_set, table) -> the analysis (its "label" computed from the probes
   themselves, "study", "complete" and "coverage": all the shared code reads of it, through
   records.verdict_of), and render_md and render_headline of that analysis. Answers are parsed and
   classified by a probe kind: the shared "integer" kind (`ANSWER: <integer>`), or one of its own
   registered with probes.register_probe_kind, declaring its answer_type ("integer", "text" or
   "choice"), so that `analyze` accepts the banks the pilot makes.
4. Optionally, where it has them:
   - its answer, its figures, in a module of its own (KEY/figures.py, drawn with pilot/svg.py), and
     its own RESULTS.md or report.html: records.Report(answer, figures, results_md, report_html).
     answer(analysis) -> records.Answer(sentences, headline figure's file name, reasons): one plain
     sentence per question, from the analysis's counts, which every page opens with after the label
     (reports.answer_md and answer_html lay it out, the same for every study; a report.html of its
     own opens with reports.report_opening_html), and why its label is not CONFIRMATORY. Without
     them its bank gets no answer and no figures, and the shared RESULTS.md and report.html made of
     its label and analysis.md (pilot/pages.py);
   - its own command-line options: records.CommandLine (records.Option entries for run, the pilot
     and plan, how they are read into the lock, options of `generate`, files the user brings with an
     option of its own); an option of one study given to another is refused;
   - what its pre-registered design allows and how its cascade runs: records.Design;
   - its demo: records.Demo, a stand-in model made in its own module (a reply(prompt) -> text
     object). The shared code marks the demo and every output of a run on it SIMULATED first (the
     results, analysis.md, the headline, each figure and both pages), whatever the study's own text
     says.
5. Register it below by keyword, one field per line, in the order of records.Study: who it is (name,
   question, protocol_id, protocol_path), its tasks, its calls, its results, then the optional hooks
   and sub-records. Import only the shared core, the text rules and its own folder (a helper two
   studies share moves into the core or the rules): tests/test_layout.py refuses an import of
   another study's module, and checks that it fills every required field and that its entry keeps
   this order. Its design module is imported at the top; its analysis, figures and report are named
   with later(".KEY.analysis", "analyze") and imported on their first call, so that a command
   imports only what it uses (a probe kind its analysis registers is named with
   probes.register_probe_kind_module).
Its key is what its run folders record; `--study KEY` then runs it on the shared runner, journal,
lock, retries, resume, status, plan, verify, shards, figures, report and demo. """
from __future__ import annotations

import importlib

from ..cells import cascade_plan
from ..probes import register_probe_kind_module
from ..records import CommandLine, Demo, Design, Report, Study, register_study
from .adversarial import design as adversarial
from .constraints import design as constraints
from .sessions import design as sessions
from .xr001 import design as xr001


def later(module: str, name: str):
    """A study's hook that imports its module on the first call: a command imports the analyses,
    figures and reports it uses and no others (`--help` and `plan` none of them)."""
    def hook(*args, **kwargs):
        return getattr(importlib.import_module(module, __name__), name)(*args, **kwargs)
    hook.__name__ = hook.__qualname__ = f"{module.lstrip('.')}.{name}"
    return hook


# a probe kind registered by a study's analysis is imported where a probe of that kind is first read
register_probe_kind_module("forced_choice", lambda: importlib.import_module(".constraints.analysis",
    __name__))

register_study(Study(
    name="xr001",
    question="what compaction does to numbers",
    protocol_id=xr001.PROTOCOL_ID,
    protocol_path=xr001.PROTOCOL_PATH,
    tasks_path=xr001.TASKS_PATH,
    pinned_sha256=xr001.PINNED_TASKS_SHA256,
    load_tasks=xr001.load_task_set,
    generate=xr001.generate_file,
    regimes=xr001.REGIMES,
    default_regimes=xr001.DEFAULT_REGIMES,
    prompts_sha256=xr001.prompts_sha256,
    plan_calls=cascade_plan,
    call_text=xr001.call_text,
    score_cell=later(".xr001.scoring", "score_cell"),
    score_fields=later(".xr001.scoring", "score_fields"),
    analyze=later(".xr001.analysis", "analyze"),
    render_md=later(".xr001.report", "render_md"),
    headline=later(".xr001.report", "render_headline"),
    run_order=later(".xr001.coverage", "in_run_order"),
    gate_rows=later(".episodes", "gate_bank"),
    report=Report(answer=later(".xr001.report", "answer"),
                  figures=later(".xr001.figures", "figures"),
                  results_md=later(".xr001.figures", "results_md"),
                  report_html=later(".xr001.figures", "report_html")),
    demo=Demo(stand_in=xr001.stand_in),
))

register_study(Study(
    name="constraints",
    question="whether standing instructions survive compaction",
    protocol_id=constraints.PROTOCOL_ID,
    protocol_path=constraints.PROTOCOL_PATH,
    tasks_path=constraints.TASKS_PATH,
    pinned_sha256=constraints.PINNED_TASKS_SHA256,
    load_tasks=constraints.load_task_set,
    generate=constraints.generate_file,
    episode_noun="instance",
    regimes=constraints.REGIMES,
    default_regimes=constraints.DEFAULT_REGIMES,
    prompts_sha256=constraints.prompts_sha256,
    plan_calls=constraints.plan_calls,
    call_text=constraints.call_text,
    probe_kind="forced_choice",
    score_cell=later(".constraints.analysis", "score_cell"),
    score_fields=later(".constraints.analysis", "score_fields"),
    analyze=later(".constraints.analysis", "analyze"),
    render_md=later(".constraints.analysis", "render_md"),
    headline=later(".constraints.analysis", "render_headline"),
    gate_rows=later(".episodes", "gate_bank"),
    report=Report(answer=later(".constraints.figures", "answer"),
                  figures=later(".constraints.figures", "figures"),
                  report_html=later(".constraints.figures", "report_html")),
    command_line=CommandLine(options=constraints.OPTIONS, adjust_regimes=constraints.adjust_regimes,
                             generate_options=constraints.GENERATE_OPTIONS),
    design=Design(declared_variants_only=True, user_regimes=constraints.user_regimes,
                  reserved_suffixes=((constraints.UPPER_BOUND_SUFFIX, "each regime's upper bound"),
                                     ),
                  plan_note=constraints.plan_note),
    demo=Demo(stand_in=constraints.stand_in),
))

register_study(Study(
    name="adversarial",
    question="whether the release gate keeps a corrupted state from being resumed",
    protocol_id=adversarial.PROTOCOL_ID,
    protocol_path=adversarial.PROTOCOL_PATH,
    tasks_path=adversarial.TASKS_PATH,
    pinned_sha256=adversarial.PINNED_TASKS_SHA256,
    load_tasks=adversarial.load_task_set,
    generate=adversarial.generate_file,
    regimes=adversarial.REGIMES,
    default_regimes=adversarial.DEFAULT_REGIMES,
    prompts_sha256=adversarial.prompts_sha256,
    plan_calls=adversarial.plan_calls,
    call_text=adversarial.call_text,
    score_cell=later(".adversarial.analysis", "score_cell"),
    score_fields=later(".adversarial.analysis", "score_fields"),
    analyze=later(".adversarial.analysis", "analyze"),
    render_md=later(".adversarial.analysis", "render_md"),
    headline=later(".adversarial.analysis", "render_headline"),
    check_bank=later(".adversarial.analysis", "check_bank"),
    write_outputs=later(".adversarial.analysis", "write_outputs"),
    report=Report(answer=later(".adversarial.figures", "answer"),
                  figures=later(".adversarial.figures", "figures")),
    command_line=CommandLine(options=adversarial.OPTIONS, read_options=adversarial.read_options),
    design=Design(max_models=1, variants=False, state_after=adversarial.gated_state,
                  partial_label="PARTIAL"),
))

register_study(Study(
    name="sessions",
    question="what compaction loses from your own transcripts; exploratory",
    protocol_id=sessions.PROTOCOL_ID,
    protocol_path=sessions.PROTOCOL_PATH,
    tasks_path=sessions.TASKS_PATH,
    pinned_sha256=sessions.PINNED_TASKS_SHA256,
    load_tasks=sessions.load_task_set,
    generate=sessions.generate_file,
    episode_noun="session",
    regimes=sessions.REGIMES,
    default_regimes=sessions.DEFAULT_REGIMES,
    prompts_sha256=sessions.prompts_sha256,
    plan_calls=cascade_plan,
    call_text=sessions.call_text,
    probe_kind="exact",
    score_cell=later(".sessions.analysis", "score_cell"),
    score_fields=later(".sessions.analysis", "score_fields"),
    analyze=later(".sessions.analysis", "analyze"),
    render_md=later(".sessions.report", "render_md"),
    headline=later(".sessions.report", "render_headline"),
    check_bank=later(".sessions.analysis", "check_bank"),
    write_outputs=later(".sessions.analysis", "write_outputs"),
    open_judge=later(".sessions.study_judge", "open_judge"),
    report=Report(answer=later(".sessions.figures", "answer"),
                  figures=later(".sessions.figures", "figures"),
                  report_html=later(".sessions.report", "report_html")),
    command_line=CommandLine(options=sessions.OPTIONS, read_options=sessions.read_options,
                             source_option="sessions", read_source=sessions.read_sessions,
                             describe_tasks=sessions.describe_sessions,
                             task_warnings=sessions.task_warnings),
    design=Design(user_regimes=sessions.user_regimes, partial_label="PARTIAL",
                  partial_by_default=True),
    demo=Demo(stand_in=sessions.stand_in, episodes=sessions.N_EXAMPLES),
))
