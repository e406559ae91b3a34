"""Commands: each stage of a run on its own (run, score, analyze) and the whole pilot. The figures
and report are made by figures_job (paper/make_figures.py in a process of its own); a run folder is
read back by recorded_run."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
import sys
import threading
from pathlib import Path

from .backends import check_context_window, preflight
from .bank import analyze_bank, read_bank, results_shape_problems, score_run
from .cells import journal_streams, selected_cells
from .figures_job import FiguresJob, write_figures_and_report
from .inputs import load_task_set, load_tasks, regime_record, task_file_study, task_set_summary
from .launch import (RunOptions, check_study_design, design_settings, make_backend,
                     missing_run_hint, read_run_options, refuse_address_of_the_other_backend,
                     resolve_run_dir, run_settings, study_of)
from .recorded_run import (changed_inputs, load_run, refuse_disagreement, run_inputs,
                           run_tasks_path)
from .records import (BackendOptions, Cell, DiskFull, EXIT_CELLS_FAILED, EXIT_INTERRUPTED,
                      EXIT_OK, FatalCallError, JudgeSetup, NUM_CTX, PilotError, Regime,
                      RunInterrupted, ServerGone, Settings, Study, TransientError, canonical_json,
                      display_path, folder_study, is_simulated, read_canonical, sha256_text,
                      study_named, utc_now, verdict_of)
from .reports import render_analysis_md, render_closing, render_probes_csv
from .runfolder import (Journal, Manifest, RunLock, cell_key, folder_writable, is_complete,
                        journalled_lines, lock_differences, recorded_study, refuse_foreign_folder,
                        repeated_calls, runner_sha256, short, write_atomic)
from .speed import collector_paused, hold_until_exit


def new_manifest(path: Path, config: Settings, lock: dict, tasks_path: Path, models: list[str],
                 shard,
                 regimes: list[Regime], study: Study) -> Manifest:
    return Manifest(path, {
        "run_id": sha256_text(utc_now() + str(os.getpid()))[:12], "protocol": study.protocol_id,
        "study": study.name,
        "tasks": display_path(tasks_path), "tasks_sha256": config.tasks_sha256,
        "task_set": task_set_summary(load_task_set(tasks_path, study)), "models": list(models),
        "regimes": [r.name for r in regimes],
        "regime_definitions": {r.name: regime_record(r) for r in regimes},
        "budgets": list(config.budgets), "samples": config.samples,
        "n_episodes": config.n_episodes, "cells": {}, "lock": lock,
        "amendments": [], "created_at": utc_now(), "shard": list(shard) if shard else None,
        "concurrency_used": [],
        "base_url_spellings": [config.base_url],
    })


def open_manifest(options: RunOptions, config: Settings, lock: dict, models: list[str]) -> Manifest:
    """Create the manifest, or check a resumed one against the current settings and refuse on any
    difference."""
    run_dir, tasks_path, regimes = options.run_dir, options.tasks_path, options.regimes
    path = run_dir / "manifest.json"
    if not path.exists():
        refuse_logs_without_manifest(run_dir)       # again under the folder lock
        return new_manifest(path, config, lock, tasks_path, models, options.shard, regimes,
                            options.study)
    manifest = Manifest.load(path)
    recorded = manifest.data.get("lock", {})
    diffs = lock_differences(recorded, lock)
    if (manifest.data.get("shard") or None) != (list(options.shard) if options.shard else None):
        diffs.append(f"shard ({'/'.join(map(str, manifest.data.get('shard') or [])) or 'none'} -> "
                     f"{'/'.join(map(str, options.shard or [])) or 'none'})")
    if diffs:
        raise PilotError(f"{run_dir} was run with different settings: {'; '.join(diffs)}. Resume "
                         "with the original "
                         f"settings, or start a separate run with --out <new folder>")
    if recorded.get("runner_sha256") != lock["runner_sha256"]:
        if not options.allow_code_change:
            raise PilotError(f"scripts/run_pilot.py changed since {run_dir} was started (runner "
                             f"sha256 {short(recorded.get('runner_sha256'))} -> "
                             f"{short(lock['runner_sha256'])}); restore it, use --out for a new "
                             "run, or pass --allow-code-change to record the change and go on")
        manifest.data["amendments"].append({"at": utc_now(), "what": "runner code changed "
                                            "(--allow-code-change)",
                                            "from_runner_sha256": recorded.get("runner_sha256"),
                                            "to_runner_sha256": lock["runner_sha256"]})
        recorded["runner_sha256"] = lock["runner_sha256"]
    for model, info in lock["models"].items():
        old = recorded.setdefault("models", {}).get(model)
        if old is None:
            recorded["models"][model] = info
        elif (old.get("server") or {}).get("version") != (info.get("server") or {}).get("version"):
            manifest.data["amendments"].append({"at": utc_now(), "what": "server version for "
                                                f"{model} changed",
                                                "from": old.get("server"),
                                                "to": info.get("server")})
            old["server"] = info.get("server")
    spellings = manifest.data.setdefault("base_url_spellings", [recorded.get("base_url")])
    if lock["base_url"] not in spellings:
        spellings.append(lock["base_url"])
    manifest.data["models"] = list(dict.fromkeys(manifest.data["models"] + models))
    manifest.data.setdefault("task_set", task_set_summary(load_task_set(tasks_path, options.study)))
    return manifest


def refuse_logs_without_manifest(run_dir: Path) -> None:
    """A folder whose raw logs hold calls but whose manifest.json is gone is refused: the manifest
    holds the hashes of those records, so without it they cannot be checked, and a new manifest
    would adopt whatever they say."""
    unchecked = journalled_lines(run_dir)
    if unchecked and not (run_dir / "manifest.json").exists():
        raise PilotError(f"{run_dir} has no manifest.json, but its raw logs hold {unchecked} "
                         "journalled call(s) whose hashes it recorded: they cannot be checked, so "
                         "they are never resumed or scored. Restore manifest.json from a backup, "
                         "or run into a new folder (--out NEW)")


def demo_command(study: Study) -> str:
    """The demo of this study, as typed (the default study's needs no --study; a study without one
    shows the default's)."""
    default = study_named(None)
    named = study.demo is not None and study.name != default.name
    return "python3 scripts/run_pilot.py demo" + (f" --study {study.name}" if named else "")


def execute_run(options: RunOptions, tasks: dict, tasks_sha: str, models: list[str], todo: list,
                total_cells: int) -> int:
    # the runner and its transport are imported by the commands that run cells: status, plan and
    # analyze do not
    from .progress import Progress
    from .runner import (RECHECK_FILE, RunContext, StopOnSignal, TemplateMismatch, recheck_pending,
                         repair_journal, run_cells, run_recheck)
    run_dir, regimes, resume = options.run_dir, options.regimes, resume_command(options.argv)
    backend = make_backend(options.backend)
    # before any folder is created
    model_info = preflight(backend, models, demo_command(options.study))
    for line in check_context_window(model_info, options.context_window,
                                     options.context_window != NUM_CTX):
        warn(line)
    prompt_cache, prompt_cache_how = backend.prompt_cache_setting(options.prompt_cache)
    config = dataclasses.replace(run_settings(backend, options, tasks_sha, len(tasks["episodes"])),
                                 prompt_cache=prompt_cache)
    lock = {**json.loads(canonical_json(config.as_lock())), "runner_sha256": runner_sha256(),
            "prompt_cache_how": prompt_cache_how,
            "config_sha256": config.sha256(), "models": model_info}
    (run_dir / "raw").mkdir(parents=True, exist_ok=True)
    run_lock = RunLock(run_dir)
    run_lock.acquire()
    try:
        manifest = open_manifest(options, config, lock, models)
        # the same server under another spelling: the calls keep the configuration hash the run
        # began with
        config = dataclasses.replace(config, base_url=manifest.data["lock"]["base_url"])
        used = manifest.data.setdefault("concurrency_used", [])
        if used and options.concurrency not in used:
            warn(f"resuming with --concurrency {options.concurrency}, but this run used "
                 f"{', '.join(map(str, used))} before (recorded in the manifest): a server that "
                 "batches parallel requests can change outputs")
        if options.concurrency not in used:
            used.append(options.concurrency)
        # so that the resume command keeps it
        manifest.data["recheck_requested"] = options.recheck
        manifest.save()
        journal = Journal(run_dir)
        for note in repair_journal(journal, manifest, tasks):
            warn(note)
        done = {stream: journal.cell_records(*stream) for stream in journal_streams(manifest.data)
                if stream[0] in models}
        todo = [c for c in todo if not is_complete(manifest.data, c)]
        todo_set = set(todo)
        done_calls = sum(len(kinds) for (m, r, b, s), eps in done.items() for e,
                         kinds in eps.items()
                         if Cell(m, r, e, b, s) in todo_set)
        by_name = {r.name: r for r in regimes}
        study = folder_study(manifest.data)
        total_calls = sum(len(study.plan(by_name[c.regime], tasks["episodes"][c.episode], c.budget))
                          for c in todo)
        # a resumed run counts the calls it still has to make, not those its earlier runs made
        from .transport import REPLY_DEADLINES
        progress = Progress(total_cells, total_calls - done_calls, total_cells - len(todo), 0,
                            quiet=options.quiet, interval_s=options.progress_interval,
                            slow_replies=REPLY_DEADLINES.slow_replies)
        stop = threading.Event()
        ctx = RunContext(backend, journal, manifest, tasks, config, lock["runner_sha256"],
                         options.policy, stop,
                         progress, done, by_name, study)

        def hard_stop():
            manifest.save()
            sys.stderr.write(f"\ndropped the calls in flight; resume with: {resume}\n")
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)

        with StopOnSignal(stop, hard_stop), progress:
            outcome = run_cells(ctx, todo, options.concurrency)
            # every cell of this run (its regimes, budgets and samples), not only XR-001's default
            # ones
            cells = selected_cells(models, len(tasks["episodes"]), options.shard,
                                   [r.name for r in regimes],
                                   options.budgets, options.samples)
            if not outcome["FAILED"] and recheck_pending(manifest, options.recheck) and all(
                    (manifest.cell(cell_key(*c)) or {}).get("status") == "COMPLETE" for c in cells):
                try:
                    recheck = run_recheck(ctx, cells, options.recheck, options.concurrency)
                except (TransientError, FatalCallError) as err:
                    # the cells are complete and scored as they are; the probe is tried again on the
                    # next run
                    warn(f"the determinism probe stopped ({err}); run the same command again to "
                         "finish it")
                else:
                    if not options.quiet:
                        print(f"determinism probe: {recheck['changed']} of {recheck['sent']} "
                              "re-sent calls gave a "
                              f"different reply (raw/{RECHECK_FILE})", file=sys.stderr)
        manifest.save()
    except RunInterrupted:
        manifest.save()
        print(f"interrupted; every completed call is saved. Resume with: {resume}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except TemplateMismatch as err:
        # the resumed run sends every flagged reply again, once (repair_journal); `status` counts
        # them as left
        manifest.data["template_stop"] = {"at": utc_now()}
        manifest.save()
        raise TemplateMismatch(f"{err}. Resume with: {resume}") from None
    except ServerGone as err:
        manifest.save()
        left = sum(1 for c in todo if not is_complete(manifest.data, c))
        if getattr(err, "slow", False):
            longer = f"{max(2 * options.backend.read_timeout, 60):g}"
            what = ("The server took the calls but sent no reply within --read-timeout "
                    f"({options.backend.read_timeout:g} s); if it is only slow (a large model, a "
                    f"long prompt), resume with a longer one: {resume} --read-timeout {longer}")
        elif getattr(err, "dripped", False):
            deadline = options.backend.deadline_s
            what = ("The server began its replies but sent none whole within the reply deadline "
                    f"({deadline:g} s; a server or gateway that drips bytes to keep a call open "
                    "does this); if the model is only slow, resume with a longer one: "
                    + resume_command(options.argv, ("--reply-deadline",
                                                    f"{max(2 * deadline, 60):g}")))
        else:
            what = f"Start the server, then resume with: {resume}"
        raise ServerGone(f"{err}; stopped sending with {left} cell(s) left, none marked FAILED "
                         f"for it. {what}") from None
    except DiskFull as err:
        # the manifest on disk is its last complete version; a cell it does not show as COMPLETE is
        # rebuilt from the journal on resume without calling the model again
        raise DiskFull(err.path, f"free some space, then resume with: {resume}") from None
    finally:
        run_lock.release()
    if outcome["FAILED"]:
        warn(f"{outcome['FAILED']} cell(s) FAILED (see `python3 scripts/run_pilot.py status --out "
             f"{shlex.quote(str(run_dir))}`); "
             f"running the same command again retries only failed and unfinished cells")
        return EXIT_CELLS_FAILED
    return EXIT_OK


def resume_command(argv: list[str], replace: tuple[str, str] | None = None) -> str:
    """The command line that resumes this run: the same one again, with replace's (flag, value)
    given once, in place of any value it had."""
    if replace is not None:
        flag, kept, skip = replace[0], [], False
        for arg in argv:
            if not skip and arg != flag and not arg.startswith(flag + "="):
                kept.append(arg)
            skip = arg == flag
        argv = kept + list(replace)
    script = (sys.argv[0] if sys.argv and sys.argv[0].endswith("run_pilot.py")
              else "scripts/run_pilot.py")
    return "python3 " + shlex.join([script, *argv])


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)



def command_run(args, then_analyze: bool = False) -> int:
    """`run` (then_analyze: the pilot): the command line read once, then the run."""
    return run_pilot(read_run_options(args), then_analyze)


def run_pilot(options: RunOptions, then_analyze: bool = False) -> int:
    """Run (or resume) every cell of a run; with then_analyze, score and analyze it and write the
    figures."""
    from .runner import recheck_pending
    study, run_dir, tasks_path, regimes = (options.study, options.run_dir, options.tasks_path,
                                           options.regimes)
    refuse_foreign_folder(run_dir)
    if (run_dir / "manifest.json").exists():
        # a folder this runner cannot resume says so first
        resumed = Manifest.load(run_dir / "manifest.json")
        refuse_disagreement(run_dir, resumed.data)
        # its own inputs, gone or changed: the one message
        if tasks_path.resolve() == run_tasks_path(resumed.data).resolve() and \
                recorded_study(run_dir) == study.name:
            problem = run_inputs(run_dir, resumed.data)[1]
            if problem is not None:
                raise PilotError(problem)
    tasks, tasks_sha = load_tasks(tasks_path, options.episodes, study)
    if recorded_study(run_dir) not in (None, study.name):
        raise PilotError(f"{run_dir} holds a run of the {recorded_study(run_dir)} study; resume it "
                         f"with `--study {recorded_study(run_dir)}` (or its own subcommand), or "
                         "use --out for a new run")
    if task_file_study(tasks).name != study.name:
        raise PilotError(f"{display_path(tasks_path)} is a task file of the "
                         f"{task_file_study(tasks).name} study, "
                         f"not {study.name}; pass the matching --study")
    manifest_path = run_dir / "manifest.json"
    recorded = Manifest.load(manifest_path) if manifest_path.exists() else None
    if recorded is None:
        refuse_logs_without_manifest(run_dir)       # before any server is asked
    models = list(options.models) or (recorded.data["models"] if recorded else [])
    if not models:
        raise PilotError("name the models to test, e.g. --models gemma3:4b (several: --models a,b)")
    check_study_design(study, models, options.budgets, options.samples, regimes,
                       options.temperature)
    if recorded and recorded.data.get("tasks_sha256") != tasks_sha:
        raise PilotError(f"{display_path(tasks_path)} (sha256 {tasks_sha[:12]}) is not the task "
                         f"set {run_dir} was "
                         f"run on ({str(recorded.data.get('tasks_sha256'))[:12]}): "
                         f"{changed_inputs(study)}; restore "
                         f"them as they were, or use --out for a new run")
    if recorded and recorded.data.get("n_episodes") != len(tasks["episodes"]):
        raise PilotError(f"{run_dir} holds a run of {recorded.data.get('n_episodes')} "
                         f"{study.episode_noun}s, not "
                         f"{len(tasks['episodes'])}; use --out for a run of another size")
    if recorded:
        # The design is checked even when nothing is left to run, so a finished run is never
        # reported as
        # another; where and how calls are sent (backend, address, options) is checked when calls
        # are made.
        design = json.loads(canonical_json(design_settings(options, tasks_sha,
                                                           len(tasks["episodes"]))))
        diffs = lock_differences(recorded.data.get("lock", {}), design,
                                 ignore=("backend", "base_url", "options", "prompt_cache"))
        if diffs:
            raise PilotError(f"{run_dir} was run with different settings: {'; '.join(diffs)}. "
                             "Resume with the "
                             f"original settings, or start a separate run with --out <new folder>")
    if study.command_line.task_warnings is not None:
        for line in study.command_line.task_warnings(tasks):
            warn(line)
    cells = selected_cells(models, len(tasks["episodes"]), options.shard, [r.name for r in regimes],
                           options.budgets, options.samples)
    # A complete cell whose log lost a record is redone, and an unreadable line quarantined, only by
    # a run that
    # passed every lock check (execute_run repairs the journal under the lock): a refused run writes
    # nothing.
    lost, unreadable = journal_repairs(run_dir, recorded.data, tasks) if recorded else (set(),
        False)
    todo = [c for c in cells if not recorded or not is_complete(recorded.data, c) or c in lost]
    code = EXIT_OK
    if todo or unreadable:
        code = execute_run(options, tasks, tasks_sha, models, todo, len(cells))
        if code == EXIT_INTERRUPTED:
            return code
    probe_left = not todo and not unreadable and recorded and recheck_pending(recorded,
        options.recheck) and \
        folder_writable(run_dir)
    if not (todo or unreadable) and not options.quiet:
        print(f"all {len(cells)} cells in {run_dir} are complete; " +
              (f"the determinism probe still has its {options.recheck} calls to send" if probe_left
               else
               "no model calls needed"), file=sys.stderr)
    if probe_left:
        # the cells finished before the determinism probe did (a kill, or a run older than the
        # probe)
        try:
            code = execute_run(options, tasks, tasks_sha, models, [], len(cells))
        except (RunInterrupted, ServerGone, DiskFull):
            raise
        except PilotError as err:
            warn(f"the determinism probe was not run ({err})")
        if code == EXIT_INTERRUPTED:
            return code
    if not then_analyze:
        if code == EXIT_OK:
            print("next: score the run with `python3 scripts/run_pilot.py score --out "
                  f"{shlex.quote(str(run_dir))}`, then "
                  f"`analyze --out {shlex.quote(str(run_dir))}`" if not options.shard else
                  "next: when every shard is done, combine them with `python3 "
                  "scripts/run_pilot.py merge OUT SHARD_DIR...` (the analysis is made there)")
        return code
    if options.shard:
        print(f"shard {options.shard[0]}/{options.shard[1]} is in {run_dir}; when every shard is "
              "done, combine them with "
              f"`python3 scripts/run_pilot.py merge OUT SHARD_DIR...` (the analysis is made there)")
        return code
    with collector_paused():
        return score_and_analyze_run(options, Manifest.load(manifest_path), tasks, models, code)


def score_and_analyze_run(options: RunOptions, manifest: "Manifest", tasks: dict, models: list[str],
                          code: int) -> int:
    """The end of `pilot`: score the finished run, analyse it, and write the figures and report."""
    run_dir = options.run_dir
    if not folder_writable(run_dir):
        # A finished run in a read-only folder: report it from memory and say where its files can
        # go.
        analysis = gated_analysis(score_run(manifest.data, tasks, Journal(run_dir), models),
                                  options.allow_partial)
        print(render_closing(analysis))
        if (run_dir / "results.json").is_file():
            where = ("python3 scripts/run_pilot.py analyze --results "
                     f"{shlex.quote(str(run_dir / 'results.json'))} --out DIR")
        # no results.json to analyse elsewhere: a writable copy of the folder
        else:
            where = (f"cp -r {shlex.quote(str(run_dir))} COPY, then python3 scripts/run_pilot.py "
                     "score --out COPY and analyze --out COPY")
        print(f"\n{run_dir} is read-only, so nothing was written there. To write the analysis, "
              f"figures and report elsewhere: {where}")
        return code
    results = write_results(run_dir, manifest.data, tasks, models)
    design = folder_study(manifest.data).design
    if results["cells"]["not_complete"] and not options.allow_partial:
        held = f"results.json holds {scored_what(results)}"
        if not design.partial_by_default:
            print(f"{held}; the analysis waits for the rest. Rerun the same command, or add "
                  f"--allow-partial for an analysis marked {design.partial_label} of the complete "
                  f"{folder_study(manifest.data).episode_noun}s.",
                  file=sys.stderr)
            return code or EXIT_CELLS_FAILED
        print(f"{held}; the analysis below covers them, marked {design.partial_label}: rerun the "
              "same command to "
              f"finish the rest.", file=sys.stderr)
    analysis = write_analysis(run_dir, results, options.allow_partial or design.partial_by_default)
    outputs = write_figures_and_report(run_dir, handover=(results, analysis))
    print(render_closing(analysis))
    print_file_list(run_dir, outputs)
    if not is_simulated(manifest.data):        # the demo closes with its own lines, as these
        print()
        if run_dir / "report.html" in outputs:
            print(f"Open the report: {display_path(run_dir / 'report.html')}")
        print(f"What its run folder holds, cell by cell: python3 scripts/run_pilot.py status "
              f"{shlex.quote(display_path(run_dir))}")
    return code


def journal_repairs(run_dir: Path, manifest: dict, tasks: dict) -> tuple[set[Cell], bool]:
    """What a run must repair in a folder's journal, found without writing anything: the complete
    cells whose log lost a record, and whether a log holds an unreadable line."""
    from .runner import flagged_cells, lost_records
    journal = Journal(run_dir)
    lost = {cell for cell, _ in lost_records(journal, manifest, tasks)}
    # the run stopped for a template mismatch: its flagged replies
    if manifest.get("template_stop"):
        lost |= set(flagged_cells(journal, manifest))
    return lost, any(journal.unreadable_lines(*stream) for stream in journal_streams(manifest))


def write_results(run_dir: Path, manifest: dict, tasks: dict,
                  models: list[str] | None = None, force: bool = False, judge=None) -> dict:
    # the gate is imported by the commands that gate states
    from .gate_report import gate_summary, render_gate_csv
    study = folder_study(manifest)
    journal = Journal(run_dir)
    flagged = total = 0
    for model, regime, budget, sample in journal_streams(manifest):
        records = journal.read(model, regime, budget, sample)
        total += len(records)
        flagged += sum(1 for record in records if record.get("control_tokens"))
        for episode, kind, times in repeated_calls(records):
            warn(f"{cell_key(model, regime, episode, budget, sample)}: {kind} is recorded {times} "
                 "times in raw/; the first is scored (see `python3 scripts/run_pilot.py verify "
                 f"--out {shlex.quote(str(run_dir))}`)")
    if flagged:
        warn(f"{flagged} of {total} replies in raw/ carry chat-template control tokens: the "
             "server's template does not match the model there, and such replies are noise")
    results = score_run(manifest, tasks, journal, models, judge)
    hold_until_exit(results)
    if not force:
        refuse_shrinking(run_dir, len(results["probes"]))
    gate_rows = study.gate_rows(manifest, tasks, Journal(run_dir),
                                models) if study.gate_rows else []
    if gate_rows:                       # every compacted state through the release gate (issue 13)
        results["gate"] = gate_summary(gate_rows)
        write_atomic(run_dir / "gate.csv", render_gate_csv(gate_rows).encode("utf-8"))
    write_atomic(run_dir / "results.json", (json.dumps(results, indent=1,
                                                       ensure_ascii=False) + "\n").encode("utf-8"))
    write_atomic(run_dir / "probes.csv", render_probes_csv(results).encode("utf-8"))
    if study.write_outputs is not None:
        study.write_outputs(run_dir, results)
    return results


def refuse_shrinking(run_dir: Path, probes: int) -> None:
    """results.json is never replaced by fewer probes than it holds, unless score --force says so
    (a manifest edited by hand, or a journal cut short, would otherwise empty the bank)."""
    path = run_dir / "results.json"
    try:
        held = json.loads(path.read_bytes()).get("probes") if path.is_file() else None
    except (OSError, ValueError, AttributeError, RecursionError):
        return                          # not a bank: the folder checks say whose it is
    if isinstance(held, list) and len(held) > probes:
        raise PilotError(f"{path} holds {len(held)} probes and this scoring gives {probes}, so it "
                         "was left as it is; check the run with `python3 scripts/run_pilot.py "
                         f"verify --out {shlex.quote(str(run_dir))}`, or replace it anyway with "
                         "`score --force`")


def gated_analysis(results: dict, allow_partial: bool, tasks_path: Path | None = None,
                   table: dict[str, list] | None = None) -> dict:
    """The analysis, refused for an incomplete bank unless the user allowed a NON-CONFIRMATORY
    one."""
    analysis = analyze_bank(results, tasks_path, table)
    verdict = verdict_of(analysis)
    design = study_named(results.get("study")).design
    partial = verdict.partial
    if partial and not allow_partial and not design.partial_by_default:
        noun = study_named(verdict.study or results.get("study")).episode_noun
        raise PilotError(
            f"the bank is of a run not yet finished (scored over the "
            f"{partial['episodes_complete']} of {partial['episodes']} {noun}s complete in every "
            f"model and regime); finish the run, or pass --allow-partial for an analysis of those "
            f"marked {design.partial_label}")
    if not verdict.complete and not allow_partial and not design.partial_by_default:
        raise PilotError(
            f"the bank is incomplete ({verdict.complete_cells}/{verdict.expected_cells} cells have "
            f"all their probes); finish the run, or pass --allow-partial for an analysis marked "
            f"{design.partial_label}")
    return analysis


def write_analysis(out_dir: Path, results: dict, allow_partial: bool,
                   tasks_path: Path | None = None,
                   table: dict[str, list] | None = None) -> dict:
    analysis = gated_analysis(results, allow_partial, tasks_path, table)
    write_atomic(out_dir / "analysis.md", render_analysis_md(analysis).encode("utf-8"))
    return analysis


def print_file_list(run_dir: Path, extra: list[Path]) -> None:
    """The run's files: the shared ones in pipeline order, then `extra` (the figures and report),
    then whatever else the run wrote there (a study's own files, its write_outputs)."""
    names = [name for name in ("manifest.json", "raw/", "results.json", "probes.csv", "gate.csv",
                               "analysis.md",
                               "quarantine/") if (run_dir / name.rstrip("/")).exists()]
    listed = {name.rstrip("/") for name in names} | {
        path.relative_to(run_dir).parts[0] for path in extra if path.is_relative_to(run_dir)
    }
    others = sorted(p.name for p in run_dir.iterdir() if p.name not in listed
                    and not p.name.startswith("."))
    print(f"\nfiles in {run_dir}:")
    for name in names:
        print(f"  {run_dir / name}")
    for path in extra:
        print(f"  {path}")
    for name in others:
        print(f"  {run_dir / name}")


def command_pilot(args) -> int:
    return command_run(args, then_analyze=True)


def command_adversarial(args) -> int:
    """`adversarial`: the pilot of the adversarial study (the same as `--study adversarial`), or
    --write-tasks."""
    if not args.write_tasks:
        return command_pilot(args)
    study = study_of(args)
    data, what = study.generate({})
    if study.tasks_path.exists() and read_canonical(study.tasks_path) != data:
        raise PilotError(f"{display_path(study.tasks_path)} exists and differs from the "
                         "generator's output; the committed file is the pre-registered one "
                         f"(restore it with `git checkout -- {display_path(study.tasks_path)}`)")
    write_atomic(study.tasks_path, data)
    print(f"wrote {display_path(study.tasks_path)}: {what}")
    return EXIT_OK


def command_score(args) -> int:
    run_dir = resolve_run_dir(args)
    manifest, tasks = load_run(run_dir, missing_run_hint(args))
    refuse_foreign_folder(run_dir)          # no output it writes may replace someone else's
    setup = judge_setup(args, folder_study(manifest.data)) if args.judge else None
    run_lock = RunLock(run_dir)             # one writer at a time: never beside a running runner
    run_lock.acquire()
    try:
        judge = folder_study(manifest.data).open_judge(run_dir, setup) if setup else None
        try:
            results = write_results(run_dir, Manifest.load(manifest.path).data, tasks,
                                    force=args.force, judge=judge)
        except (ServerGone, TransientError, FatalCallError) as err:
            if judge is None:
                raise
            raise type(err)(f"the judge {args.judge}: {err}; {judge.kept_line()}") from None
    finally:
        run_lock.release()
    print(f"scored {len(results['probes'])} probes from {scored_what(results)} into "
          f"{run_dir / 'results.json'} and {run_dir / 'probes.csv'}")
    if judge is not None:
        print(judge.done_line())
    return EXIT_OK


def judge_setup(args, study: Study) -> JudgeSetup | None:
    """`--judge MODEL` and its options as one record, its server checked before anything is
    scored: reachable, and the model on it (None: --judge alone, a constraints run's option)."""
    from .runner import RetryPolicy
    if study.open_judge is None:
        if args.judge is True:          # the constraints study's --judge, as its run was typed
            return None
        raise PilotError(f"--judge: the {study.name} study has nothing a judge decides (the "
                         "sessions study and `audit` do); leave --judge out")
    if args.judge is True:
        raise PilotError("--judge needs the judge model's name, as the server lists it (e.g. "
                         "--judge qwen2.5-coder:1.5b)")
    refuse_address_of_the_other_backend(args)
    backend = make_backend(BackendOptions(args.backend, args.host, args.base_url,
                                          args.api_key_env, args.thinking_control,
                                          args.connect_timeout, args.read_timeout,
                                          args.reply_deadline))
    try:
        identity = preflight(backend, [args.judge])[args.judge]
    except PilotError as err:           # its first line: the demo it names next runs no judge
        raise PilotError(f"the judge: {str(err).splitlines()[0]}") from None
    return JudgeSetup(backend=backend, model=args.judge, identity=identity,
                      policy=RetryPolicy(args.retries, args.backoff_base, args.backoff_cap,
                                         args.give_up_after),
                      prompt_path=Path(args.judge_prompt) if args.judge_prompt else None,
                      threshold=args.judge_threshold,
                      agreement_dir=Path(args.judge_agreement) if args.judge_agreement else None)


def scored_what(results: dict) -> str:
    """Which cells a bank was scored from: all its complete cells, or, for a run not yet finished,
    those of its episodes complete in every model and regime (bank.score_run)."""
    cells, partial = results["cells"], results.get("partial")
    text = f"{cells['complete']}/{cells['expected']} complete cells"
    if partial:
        noun = study_named(results.get("study")).episode_noun
        left = partial["cells_left_out"]
        text += (f" (the {partial['episodes_complete']} of {partial['episodes']} {noun}s complete "
                 "in every model and "
                 f"regime" + (f"; {left} complete cell{'' if left == 1 else 's'} of unfinished "
                              f"{noun}s wait for "
                              f"them" if left else "") + ")")
    return text


def command_analyze(args) -> int:
    if args.results:
        # Someone else's bank: print the analysis, and write it only where --out says (never over
        # theirs).
        results_path = Path(args.results)
        out_dir = Path(args.out) if args.out else None
    else:
        out_dir = resolve_run_dir(args)
        results_path = out_dir / "results.json"
        if (out_dir / "manifest.json").is_file():     # a run folder: its ledger must agree
            refuse_disagreement(out_dir, Manifest.load(out_dir / "manifest.json").data)
    if not results_path.exists():
        if args.results:
            raise PilotError(f"no file at {results_path}; point --results at a results.json")
        raise PilotError(f"no results.json at {results_path}; score the run first with "
                         f"`python3 scripts/run_pilot.py score --out {shlex.quote(str(out_dir))}`")
    if out_dir is not None:
        refuse_foreign_folder(out_dir, "report")
        if not folder_writable(out_dir):
            if args.results:
                raise PilotError(f"cannot write into {out_dir} (read-only); choose another folder "
                                 "with --out DIR")
            print(f"{out_dir} is read-only, so nothing is written there; to write the analysis, "
                  "figures and report elsewhere: python3 scripts/run_pilot.py analyze --results "
                  f"{results_path} --out DIR",
                  file=sys.stderr)
            out_dir = None
    tasks_path = Path(args.tasks) if args.tasks else None
    # the figures script starts once the bank's study is read, on the other core, and waits for the
    # analysis
    with FiguresJob(out_dir, results_path, tasks_path, handover=True) if out_dir is not None else \
            contextlib.nullcontext() as figures:
        text, outputs = read_and_analyze(results_path, out_dir, args.allow_partial, tasks_path,
                                         figures)
    print(text)
    if outputs:
        print("wrote:\n" + "\n".join(f"  {path}" for path in outputs), file=sys.stderr)
    return EXIT_OK


def read_and_analyze(results_path: Path, out_dir: Path | None, allow_partial: bool,
                     tasks_path: Path | None,
                     figures: "FiguresJob | None") -> tuple[str, list[Path]]:
    """`analyze` on a results.json: its analysis as text, and with out_dir analysis.md, the figures
    and the report written there."""
    results, table = read_bank(results_path, str(results_path), "a results file this runner can "
                               "read",
                               "point --results at a results.json")
    hold_until_exit(results, table)
    problems = results_shape_problems(results, table)
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems)
                                           > 3 else "")
        raise PilotError(f"{results_path} is not a results file this runner can read: {shown}. Fix "
                         "it, or make it again from its run with `python3 scripts/run_pilot.py "
                         "score --out RUN`")
    if figures is not None:             # it starts up on the other core while the bank is analysed
        figures.start()
    try:
        if out_dir is None:
            return render_analysis_md(gated_analysis(results, allow_partial, tasks_path, table)), []
        out_dir.mkdir(parents=True, exist_ok=True)
        analysis = write_analysis(out_dir, results, allow_partial, tasks_path, table)
        return render_analysis_md(analysis), [out_dir / "analysis.md"] + figures.finish((results,
            analysis))
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, ZeroDivisionError) as err:
        raise PilotError(f"{results_path} is not a results file this runner can read "
                         f"({type(err).__name__}: "
                         f"{err}); point --results at a results.json") from None
