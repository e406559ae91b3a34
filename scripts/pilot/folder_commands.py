"""Folder commands: what reads a run folder without running it (status, plan, verify, merge,
generate); the gate of a run folder is gate_command's."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Callable

from .backends import estimate_tokens
from .bank import analyze_bank, score_run
from .cells import all_cells, journal_streams, run_budgets, run_regimes, run_samples, selected_cells
from .commands import print_file_list, scored_what, write_analysis, write_results
from .figures_job import write_figures_and_report
from .inputs import load_tasks, read_json, task_file_study
from .launch import (check_study_design, chosen_regimes, context_window_of, given_source,
                     missing_run_hint, parse_models, resolve_run_dir, study_of)
from .prompts import build_messages
from .recorded_run import (journal_disagreement, load_run, run_command_for, run_inputs,
                           run_tasks_path)
from .records import (ANSWER_NUM_PREDICT, Cell, DEFAULT_BUDGET, DEFAULT_RECHECK, DiskFull,
                      EXIT_CELLS_FAILED, EXIT_OK, EXIT_VERIFY_FAILED, PilotError, STUDY_REGISTRY,
                      Study, canonical_json, display_path, folder_study, is_disk_full,
                      is_simulated, known_count, read_canonical, sha256_bytes, sha256_text,
                      study_named, utc_now)
from .reports import md_table, plain_text, render_headline
from .runfolder import (Journal, Manifest, RunLock, UnsafePath, cell_key, folder_writable,
    is_complete, journalled_lines, lock_differences, parse_record_line, process_alive,
    record_variant, records_digest, refuse_unsafe_folder, variant_suffix, write_atomic)


def command_generate(args) -> int:
    """generate: the study's task file, the pinned one by default; another design to --tasks
    PATH."""
    study = study_of(args)
    path = Path(args.tasks) if args.tasks else study.tasks_path
    given = vars(args)
    for other in STUDY_REGISTRY.values():
        taken = [option.flag for option in other.command_line.generate_options
                 if other is not study and option.given(given)]
        if taken:
            raise PilotError(f"{taken[0]} belongs to the {other.name} study; add --study "
                             f"{other.name}")
    data, what = study.generate(
        {
            "episodes": args.episodes,
            **{
                option.dest: given.get(option.dest)
                for option in study.command_line.generate_options
            },
        }
    )
    # what is there is read (to compare) and replaced: only a regular file, never a link, pipe or
    # device
    if path.is_symlink():
        raise PilotError(f"{display_path(path)} is a link; generate writes a task file of its own: "
                         "give --tasks a new path")
    if path.exists() and not path.is_file():
        raise PilotError(f"{display_path(path)} is not a regular file (a folder, pipe or device); "
                         "give --tasks the path of a task file")
    if path.exists():
        if read_canonical(path) == data:
            print(f"{display_path(path)} is already this task set (sha256 "
                  f"{sha256_bytes(data)[:12]}); unchanged")
            return EXIT_OK
        if not args.force:
            raise PilotError(f"{display_path(path)} exists and differs; changing committed tasks "
                             "needs a dated protocol amendment. Pass --force to overwrite, or "
                             "--tasks PATH for a new file")
        if not is_task_file(path):
            raise PilotError(f"{display_path(path)} is not a task file (a JSON object with an "
                             "`episodes` list whose `study` or `protocol` names a study of this "
                             "runner), so --force does not overwrite it; give --tasks a new path")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)
    print(f"wrote {display_path(path)}: {what}, sha256 {sha256_bytes(data)}")
    return EXIT_OK


def is_task_file(path: Path) -> bool:
    """Whether path holds a task file of one of this runner's studies (what `generate --force` may
    overwrite): never the runner's code, a README, a run's manifest or results, or anything that is
    not JSON."""
    try:
        _, _, data = read_json(path, str(path), "a task file", "")
    except PilotError:
        return False
    if not isinstance(data, dict) or not isinstance(data.get("episodes"), list):
        return False
    return any(data.get("study") == study.name or data.get("protocol") == study.protocol_id
               for study in STUDY_REGISTRY.values())


def command_status(args) -> int:
    from .runner import flagged_cells, lost_records
    run_dir = resolve_run_dir(args)
    manifest, tasks = load_run(run_dir, missing_run_hint(args), folder_alone=True)
    journal = Journal(run_dir)
    data = manifest.data
    rows = []
    totals = {"COMPLETE": 0, "FAILED": 0, "partial": 0, "not started": 0}
    shard = tuple(data["shard"]) if data.get("shard") else None
    cells = selected_cells(data["models"], data["n_episodes"], shard, data["regimes"],
                           run_budgets(data),
                           run_samples(data))
    for model, regime, budget, sample in journal_streams(data):
        counts = dict.fromkeys(totals, 0)
        started = journal.cell_records(model, regime, budget, sample)
        for cell in cells:
            if (cell.model, cell.regime, cell.budget, cell.sample) != (model, regime, budget,
                sample):
                continue
            status = (data["cells"].get(cell_key(*cell)) or {}).get("status")
            state = (
                status
                if status in ("COMPLETE", "FAILED")
                else "partial" if started.get(cell.episode) else "not started"
            )
            counts[state] += 1
        rows.append([model, regime + variant_suffix(budget, sample,
                                                    " ")] + [counts[k] for k in totals])
        for k in totals:
            totals[k] += counts[k]
    # episodes, instances or sessions
    n, noun = data["n_episodes"], folder_study(data).episode_noun
    print(f"run {run_dir} ({n} {noun}{'' if n == 1 else 's'}, backend "
          f"{data['lock'].get('backend') or 'not recorded'})")
    print(md_table(["model", "regime", "complete", "failed", "partial", "not started"], rows))
    failed = [(k, c.get("reason")) for k, c in data["cells"].items() if c.get("status") == "FAILED"]
    for key, reason in failed:
        print(f"FAILED {key}: {reason or 'no reason recorded'}")
    redo = [(cell, kind) for cell, kind in lost_records(journal, data, tasks) if cell in set(cells)]
    for cell, kind in redo:
        print(f"TO REDO {cell_key(*cell)}: COMPLETE in the manifest, but its raw log lacks {kind}; "
              "the run command re-runs it")
    flagged = flagged_cells(journal, data) if data.get("template_stop") else {}
    for cell, kinds in sorted(flagged.items()):
        print(f"TO SEND AGAIN {cell_key(*cell)}: {len(kinds)} "
              f"repl{'y' if len(kinds) == 1 else 'ies'} carrying chat-template control tokens (the "
              "run stopped for a template mismatch); the run command moves "
              f"{'it' if len(kinds) == 1 else 'them'} to raw/*.quarantine and sends "
              f"{'it' if len(kinds) == 1 else 'them'} again, with the calls made from "
              f"{'it' if len(kinds) == 1 else 'them'}")
    again = [cell for cell in flagged if cell in set(cells) and cell not in {c for c, _ in redo} and
             is_complete(data, cell)]
    totals["COMPLETE"] -= len(redo) + len(again)
    left = totals["FAILED"] + totals["partial"] + totals["not started"] + len(redo) + len(again)
    print(f"{totals['COMPLETE']} complete, {left} left" + ("" if not left else
                                                          "; finish them with: "
                                                          f"{run_command_for(run_dir, data)}"))
    if tasks is None:
        print(f"note: {run_inputs(run_dir, data)[1]}")
    # without its inputs a run is not scored (the note says why)
    if left and not redo and tasks is not None:
        print()
        print(partial_comparison(run_dir, data, tasks, journal))
    return EXIT_OK


def partial_comparison(run_dir: Path, data: dict, tasks: dict, journal: Journal) -> str:
    """What a run not yet finished shows so far: its study's headline over the episodes complete in
    every model and regime (bank.score_run scores it so), marked as a partial view; or why there is
    none yet."""
    noun = folder_study(data).episode_noun
    try:
        results = score_run(data, tasks, journal)
    # records altered since their cell completed: never scored
    except PilotError as err:
        return f"no comparison so far: {err}"
    partial = results.get("partial") or {}
    if not partial.get("episodes_complete"):
        n = data["n_episodes"]
        return (f"no comparison so far: no {noun} is complete in every model and regime yet" +
                (f" (the run finishes {noun}s one after another: the first comes after about 1/{n} "
                 "of the calls)"
                 if n > 1 else ""))
    analysis = analyze_bank(results, run_tasks_path(data))
    shown = shlex.quote(display_path(run_dir))
    headline = plain_text(render_headline(analysis))
    return (f"so far, over the complete {noun}s:\n{headline}\n\nthe whole analysis so far: python3 "
            f"scripts/run_pilot.py score --out {shown}, then analyze --out {shown} --allow-partial")


def command_plan(args) -> int:
    from .runner import recheck_pending
    regimes = {r.name: r for r in chosen_regimes(args)}
    run_dir = resolve_run_dir(args)
    manifest = Manifest.load(run_dir / "manifest.json") if (run_dir
                                                            / "manifest.json").exists() else None
    # An existing run is planned as it was made (its episodes, tasks, models and shard), as `status`
    # counts it.
    recorded = manifest.data if manifest else {}
    episodes = args.episodes if args.episodes is not None else recorded.get("n_episodes")
    planned = folder_study(recorded) if recorded else study_of(args)
    tasks_path = Path(given_source(args, planned)) if given_source(args, planned) else \
        run_tasks_path(recorded) if recorded else planned.tasks_path
    if recorded and tasks_path.resolve() == run_tasks_path(recorded).resolve():
        # the run's own inputs, gone or changed: the one message
        problem = run_inputs(run_dir, recorded)[1]
        if problem is not None:
            raise PilotError(problem)
    tasks, _ = load_tasks(tasks_path, episodes, planned)
    models = parse_models(args.models) or recorded.get("models", [])
    if not models:
        raise PilotError("name the models to plan for, e.g. plan --models gemma3:4b")
    if task_file_study(tasks).name != planned.name:
        raise PilotError(f"{display_path(tasks_path)} is a task file of the "
                         f"{task_file_study(tasks).name} study, "
                         f"not {planned.name}; pass the matching --study")
    if (
        recorded
        and getattr(args, "study", None) not in (None, planned.name)
        and args.study != study_named(None).name
    ):
        raise PilotError(f"{run_dir} holds a run of the {planned.name} study, not {args.study}; "
                         "drop --study")
    check_study_design(planned, models, args.budgets, args.samples)
    shard = args.shard or (tuple(recorded["shard"]) if recorded.get("shard") else None)
    if recorded and not args.regimes and not args.regime_file:
        regimes = run_regimes(recorded)
    budgets = (args.budgets if args.budgets != [DEFAULT_BUDGET] or not recorded
               else run_budgets(recorded))
    samples = args.samples if args.samples != 1 or not recorded else run_samples(recorded)
    cells = selected_cells(models, len(tasks["episodes"]), shard, list(regimes), budgets, samples)
    study = folder_study(recorded) if recorded else study_of(args)
    window_of = plan_window_of(args, recorded)
    estimate = plan_estimate(study, tasks, cells, manifest.data if manifest else None, regimes,
                             window_of)
    rows = [[m, r, v["cells"], v["calls"], v["done_calls"], v["input_tokens"], v["output_tokens"]]
            for (m, r), v in estimate["by_cell"].items()]
    print(md_table(["model", "regime", "cells", "calls", "calls done", "input tokens (est.)",
                    "output tokens (at most)"], rows))
    for (model, regime), entry in estimate["by_cell"].items():
        if entry["over_window"]:
            window, where = window_of(model)
            print(f"warning: {model} {regime}: {entry['over_window']} of its {entry['calls']} "
                  f"calls cannot fit {where}, {window} tokens (prompt estimate plus output cap; "
                  f"the largest needs about {entry['largest_call']}): the server refuses such a "
                  "call, or cuts its prompt; drop the regime, shorten its prompts or what they "
                  "carry, or give the model a larger window")
    print(f"total: {estimate['calls']} calls ({estimate['done_calls']} done), about "
          f"{estimate['input_tokens']} input "
          f"tokens and at most {estimate['output_tokens']} output tokens")
    replaced = [r for r in regimes.values() if r.name in study.regimes and r.origin != "built-in"]
    if replaced:
        print(f"prompts: {', '.join(r.name for r in replaced)} run under the prompts of "
              f"{', '.join(sorted({r.origin for r in replaced}))}, replacing the pre-registered "
              "ones (marked so in the lock and every output)")
    given = getattr(args, "recheck", None)
    started_with = recorded.get("recheck_requested") if recorded else None
    recheck = (given if given is not None else started_with if started_with is not None
               else DEFAULT_RECHECK)
    probe_calls = recheck if recheck and (not manifest or recheck_pending(manifest, recheck)) else 0
    if probe_calls:
        why = (
            "as given"
            if given is not None
            else "as the run was started" if started_with is not None else "the default"
        )
        print(f"determinism probe: {probe_calls} more calls once the cells are complete (--recheck "
              f"{probe_calls}, {why}; --recheck 0 turns it off)")
    if planned.design.plan_note is not None:
        print(planned.design.plan_note(estimate["calls"] // max(1, len(models))))
    if planned.command_line.describe_tasks is not None:
        print("\n".join(planned.command_line.describe_tasks(tasks)))
    print("estimate: input tokens are prompt characters / 4, with every previous state taken at "
          f"its full compaction cap; output tokens are the caps ({', '.join(map(str, budgets))} "
          f"per compaction, {ANSWER_NUM_PREDICT} per answer); regimes that make no compaction call "
          "have none")
    if manifest:
        print(server_work_line(Journal(run_dir), manifest.data))
    rate = measured_rate(Journal(run_dir), manifest.data) if manifest else None
    left = estimate["calls"] - estimate["done_calls"] + probe_calls
    if rate:
        print(f"time: {left} calls left at the measured {rate:.2f} s per call = about "
              f"{left * rate / 60:.1f} min at concurrency 1 (from {run_dir})")
    else:
        print("time: no measured rate yet (the run folder has no calls)" +
              ("; the reference run took 84 min for 1,440 calls" if planned.name
               == study_named(None).name else ""))
    return EXIT_OK


def plan_estimate(study: Study, tasks: dict, cells: list[Cell], manifest: dict | None,
                  regimes: dict | None = None, window_of: Callable | None = None) -> dict:
    """Calls and token estimates per (model, regime), how many of those calls are already done, and
    (with window_of: model -> (context window, where it comes from)) how many cannot fit the
    window."""
    regimes = regimes or study.regimes
    by_cell: dict = {}
    for cell in cells:
        regime = regimes[cell.regime]
        episode = tasks["episodes"][cell.episode]
        label = cell.regime + variant_suffix(cell.budget, cell.sample, " ")
        entry = by_cell.setdefault((cell.model, label), {"cells": 0, "calls": 0, "done_calls": 0,
                                                         "input_tokens": 0, "output_tokens": 0,
                                                         "over_window": 0,
                                                         "largest_call": 0})
        entry["cells"] += 1
        state_stub = "x" * (cell.budget * 4)
        window = window_of(cell.model)[0] if window_of else None
        for spec in study.plan(regime, episode, cell.budget):
            messages = build_messages(study, regime, episode, spec, state_stub)
            # a system message too
            prompt = sum(estimate_tokens(m["content"]) for m in messages)
            entry["calls"] += 1
            entry["input_tokens"] += prompt
            entry["output_tokens"] += spec.max_output_tokens
            entry["largest_call"] = max(entry["largest_call"], prompt + spec.max_output_tokens)
            entry["over_window"] += window is not None and prompt + spec.max_output_tokens > window
        if manifest is not None and is_complete(manifest, cell):
            entry["done_calls"] += len(study.plan(regime, episode, cell.budget))
    totals = {k: sum(v[k] for v in by_cell.values()) for k in ("calls", "done_calls",
                                                               "input_tokens", "output_tokens")}
    return {"by_cell": by_cell, **totals}


def plan_window_of(args, recorded: dict) -> Callable[[str], tuple[int, str]]:
    """model -> (the context window plan checks a call against, where it comes from): in a run
    folder, the window its OpenAI-compatible server reported for the model; else the one the run
    gives every call (launch.context_window_of: --context-window, else the run's lock, else 4,096;
    Ollama's num_ctx). An OpenAI-compatible server's own window is not known before the server
    check, and may differ."""
    lock = recorded.get("lock") or {}
    given = context_window_of(args, lock)

    def window(model: str) -> tuple[int, str]:
        info = (lock.get("models") or {}).get(model) or {}
        reported = info.get("server_context_window") if isinstance(info, dict) else None
        if known_count(reported):
            return reported, "the context window its server reported"
        return (given, "the context window the run gives every call (--context-window; Ollama's "
                "num_ctx)")
    return window


def server_work_line(journal: Journal, manifest: dict) -> str:
    """The prompt tokens the run's calls sent so far, and how many the server evaluated rather than
    reused."""
    sent = evaluated = cached = unknown = calls = 0
    for model in manifest["models"]:
        for regime in manifest["regimes"]:
            for record in journal.read(model, regime):
                work = record.get("server_work") or {}
                calls += 1
                sent += work.get("prompt_tokens") or record.get("prompt_eval_count") or 0
                if work.get("prompt_evaluated") is None:
                    unknown += 1
                else:
                    evaluated += work["prompt_evaluated"]
                    cached += work.get("prompt_cached") or 0
    if unknown == calls:
        return (f"server work so far: {sent} prompt tokens sent in {calls} calls; the server did "
                "not say how many it evaluated (prompt cache: "
                f"{manifest.get('lock', {}).get('prompt_cache') or 'not recorded'})")
    return (f"server work so far: {sent} prompt tokens sent, {evaluated} evaluated by the server "
            f"({cached} reused "
            f"from its prompt cache) in {calls} calls" + (f"; {unknown} call(s) unreported"
                                                          if unknown else ""))


def measured_rate(journal: Journal, manifest: dict) -> float | None:
    walls = [r["wall_s"] for stream in journal_streams(manifest) for r in journal.read(*stream)
             if isinstance(r.get("wall_s"), (int, float))]
    return sum(walls) / len(walls) if walls else None


def verify_run(run_dir: Path, manifest: dict, tasks: dict | None) -> list[str]:
    """Every way the raw logs disagree with the manifest: missing, extra, altered, duplicated, torn.
    Without the task set (the user's sessions moved, say), each complete cell is checked against the
    plan its entry recorded."""
    from .runner import planned_kinds
    problems = []
    journal = Journal(run_dir)
    kinds_of = planned_kinds(manifest, tasks)
    for model, regime_name, budget, sample in journal_streams(manifest):
        path = journal.path(model, regime_name, budget, sample)
        if path.exists():
            data = path.read_bytes()
            for number, line in enumerate(data.splitlines(), 1):
                if parse_record_line(line) is None:
                    problems.append(f"{path.name} line {number}: unreadable record")
            if data and not data.endswith(b"\n"):
                problems.append(f"{path.name}: torn last line")
        seen: dict[tuple[int, str], int] = {}
        first: dict[int, dict[str, dict]] = {}
        for record in journal.read(model, regime_name, budget, sample):
            where = (record.get("episode"), record.get("kind"))
            seen[where] = seen.get(where, 0) + 1
            first.setdefault(where[0], {}).setdefault(where[1], record)
        for (episode, kind), count in sorted(seen.items(), key=lambda x: (str(x[0][0]),
            str(x[0][1]))):
            valid = isinstance(episode, int) and 0 <= episode < manifest["n_episodes"]
            if count > 1:
                problems.append(f"{cell_key(model, regime_name, episode, budget, sample)}: {kind} "
                                f"recorded {count} times")
            kinds = kinds_of(Cell(model, regime_name, episode, budget, sample)) if valid else []
            # each episode against its own plan
            if not valid or kinds is not None and kind not in kinds:
                problems.append(f"{path.name}: extra record {kind} for episode {episode} outside "
                                "the run")
        for episode_index in range(manifest["n_episodes"]):
            cell = Cell(model, regime_name, episode_index, budget, sample)
            if not is_complete(manifest, cell):
                continue
            key, entry = cell_key(*cell), manifest["cells"][cell_key(*cell)]
            records = first.get(episode_index, {})
            plan = kinds_of(cell)
            if plan is None:
                problems.append(f"{key}: COMPLETE, but not checked: without the run's inputs its "
                                "plan is known only from its manifest entry, which (made before "
                                "entries recorded it) does not say it")
                continue
            missing = [kind for kind in plan if kind not in records]
            if missing:
                problems.append(f"{key}: COMPLETE but missing {', '.join(missing)}")
                continue
            ordered = [records[kind] for kind in plan]
            if entry.get("n_calls") != len(ordered):
                said = ("records no call count" if entry.get("n_calls") is None
                        else f"says {entry['n_calls']} calls")
                problems.append(f"{key}: the manifest {said}, the log has {len(ordered)}")
            if not entry.get("records_sha256"):
                problems.append(f"{key}: COMPLETE, but the manifest records no sha256 of its "
                                "records, so they could not be checked")
            elif records_digest(ordered) != entry["records_sha256"]:
                problems.append(
                    f"{key}: records altered since the cell completed (sha256 mismatch)"
                )
    return problems


def unchecked_calls(run_dir: Path, manifest: dict) -> int:
    """Journalled calls of cells that are not COMPLETE: no hash covers them until their cells
    complete."""
    journal = Journal(run_dir)
    return sum(len(kinds) for model, regime, budget, sample in journal_streams(manifest)
               for episode, kinds in journal.cell_records(model, regime, budget, sample).items()
               if not (isinstance(episode, int) and is_complete(manifest,
                                                                Cell(model, regime, episode, budget,
               sample))))


def command_verify(args) -> int:
    run_dir = resolve_run_dir(args)
    if not (run_dir / "manifest.json").exists() and journalled_lines(run_dir):
        # the hashes live in the manifest: without it nothing in raw/ can be checked
        print(f"problem: no manifest.json, so none of the {journalled_lines(run_dir)} journalled "
              f"call(s) in {run_dir / 'raw'} can be checked against a recorded hash")
        print(f"verify: nothing checked in {run_dir}; restore manifest.json from a backup")
        return EXIT_VERIFY_FAILED
    manifest, tasks = load_run(run_dir, missing_run_hint(args), folder_alone=True,
                               check_journal=False)
    if tasks is None:
        print(f"note: {run_inputs(run_dir, manifest.data)[1]}")
    disagreement = journal_disagreement(run_dir, manifest.data)
    problems = ([f"manifest.json disagrees with its own journal: {disagreement}"]
                if disagreement else []) + verify_run(run_dir, manifest.data, tasks)
    complete = sum(1 for c in manifest.data["cells"].values() if c.get("status") == "COMPLETE")
    if problems:
        for problem in problems:
            print(f"problem: {problem}")
        print(f"verify: {len(problems)} problem(s) in {run_dir}")
        return EXIT_VERIFY_FAILED
    pending = unchecked_calls(run_dir, manifest.data)
    print(f"verify: ok, {complete} complete cells in {run_dir} match their recorded hashes" +
          (f"; {pending} journalled call(s) of unfinished cells have no hash yet and were not "
           "checked (they are "
           f"hashed when their cells complete)" if pending else ""))
    return EXIT_OK


def command_merge(args) -> int:
    """Combine shard folders into one bank after checking that their locks agree. The merged run is
    made in a folder beside OUT and moved into place whole, so OUT is never half made: a merge
    stopped by a full disk, a signal or a kill leaves OUT as it was, and the same command starts it
    again."""
    out = Path(args.out_dir)
    # the merged run is a folder of its own, never inside a shard or above one
    for folder in args.shard_dirs:
        inside, outside = Path(os.path.abspath(out)), Path(os.path.abspath(folder))
        if inside == outside or outside in inside.parents or inside in outside.parents:
            raise PilotError(f"the merged folder {out} and the shard {folder} lie one inside the "
                             "other; merge into a folder of its own, beside the shards")
    refuse_merge_target(out)
    with contextlib.ExitStack() as held:
        shards = []
        for folder in args.shard_dirs:
            manifest, tasks = load_run(Path(folder),
                                       "name the run folders of the shards to combine")
            # read while no runner writes it
            hold_folder(held, Path(folder), "merge the shard once it is done")
            shards.append((Path(folder), Manifest.load(manifest.path).data, tasks))
        cells, models = merged_cells(shards)
        staging = merge_staging(out)
        try:
            lines, outputs = write_merged_folder(staging, shards, cells, models)
            install_merged_folder(staging, out)
        except BaseException as err:
            shutil.rmtree(staging, ignore_errors=True)         # OUT is as it was before the merge
            if isinstance(err, DiskFull) or isinstance(err, OSError) and is_disk_full(err):
                raise DiskFull(out, f"nothing was written to {out}; free some space, then run the "
                               "same command "
                                    f"again") from None
            raise
    for line in lines:
        print(line.replace(str(staging), str(out)))
    if outputs is None:
        return EXIT_CELLS_FAILED
    print_file_list(out, [out / path.relative_to(staging) for path in outputs])
    return EXIT_OK


def shard_text(shard) -> str:
    """A shard as a message shows it: I/N, or none (never Python's None)."""
    return "/".join(map(str, shard)) if shard else "none"


def hold_folder(held: contextlib.ExitStack, folder: Path, wait: str) -> None:
    """Take a run folder's lock until `held` closes, so that no runner writes it meanwhile (a runner
    that holds it is named and the command refused, `wait` saying what to do); a read-only folder
    has no runner to keep out."""
    if not folder_writable(folder):
        return
    lock = RunLock(folder)
    try:
        lock.acquire()
    except UnsafePath:
        raise
    except PilotError as err:
        raise PilotError(f"{err}; or {wait}") from None
    held.callback(lock.release)


def merged_cells(shards: list[tuple]) -> tuple[dict, list[str]]:
    """The shards' complete cells (key -> (folder, entry)) and models, once their locks are checked
    to agree."""
    simulated = [folder for folder, data, _ in shards if is_simulated(data)]
    if simulated and len(simulated) < len(shards):
        real = [folder for folder, data, _ in shards if not is_simulated(data)]
        raise PilotError(f"{simulated[0]} is a SIMULATED demo folder (stand-in model) and "
                         f"{real[0]} a real run; "
                         f"a simulated folder is never merged with a real one")
    reference = shards[0][1]["lock"]
    cells: dict = {}
    models: list[str] = []
    for folder, data, _ in shards:
        # Shards may run against different servers (base_url) but everything else must agree.
        diffs = lock_differences(reference, data["lock"], ignore=("base_url",))
        if data["lock"].get("runner_sha256") != reference.get("runner_sha256"):
            diffs.append("runner_sha256")
        if (data.get("shard") or [None, None])[1] != (shards[0][1].get("shard") or [None, None])[1]:
            diffs.append(f"shard count ({shard_text(shards[0][1].get('shard'))} vs "
                         f"{shard_text(data.get('shard'))})")
        if diffs:
            raise PilotError(f"{folder} was run with other settings than {shards[0][0]} "
                             f"({'; '.join(diffs)}); only shards of one locked run can be merged")
        for key, entry in data["cells"].items():
            if entry.get("status") != "COMPLETE":
                continue
            if key in cells:
                raise PilotError(f"cell {key} is complete in more than one shard; shards must be "
                                 "disjoint")
            cells[key] = (folder, entry)
        models += [m for m in data["models"] if m not in models]
    return cells, models


MERGE_STAGING = re.compile(r"\.(?P<name>.+)\.merging-(?P<pid>\d+)")


def merge_staging(out: Path) -> Path:
    """A new folder beside OUT to make the merged run in (`.OUT.merging-PID`); those a stopped merge
    left, whose process is gone, are removed first."""
    parent = Path(os.path.abspath(out)).parent
    parent.mkdir(parents=True, exist_ok=True)
    for entry in parent.iterdir():
        found = MERGE_STAGING.fullmatch(entry.name)
        if found and found["name"] == out.name and entry.is_dir() and not entry.is_symlink() and \
                int(found["pid"]) != os.getpid() and not process_alive(int(found["pid"])):
            shutil.rmtree(entry, ignore_errors=True)
    staging = parent / f".{out.name}.merging-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    return staging


def write_merged_folder(staging: Path, shards: list[tuple], cells: dict,
                        models: list[str]) -> tuple[list[str], list[Path] | None]:
    """The whole merged run in `staging`: raw logs, manifest, results, analysis, figures and report;
    the lines to print, and the figures and pages written (None when the bank is incomplete, and so
    not analysed)."""
    merged = write_merged_run(staging, shards, cells, models)
    data0 = shards[0][1]
    expected = len(all_cells(models, data0["regimes"], data0["n_episodes"], run_budgets(data0),
                             run_samples(data0)))
    lines = [f"merged {len(cells)} complete cells of {expected} from {len(shards)} shard folders "
             f"into {staging}"]
    results = write_results(staging, merged.data, shards[0][2])
    if results["cells"]["not_complete"]:
        lines.append(f"the merged bank is incomplete (scored from {scored_what(results)}): finish "
                     "the missing shards and merge them again into a new folder (or remove "
                     f"{staging} first), or analyse this one with `python3 scripts/run_pilot.py "
                     f"analyze --out {shlex.quote(str(staging))} --allow-partial`")
        return lines, None
    analysis = write_analysis(staging, results, allow_partial=False)
    outputs = write_figures_and_report(staging, handover=(results, analysis))
    return lines + [plain_text(render_headline(analysis))], outputs


def install_merged_folder(staging: Path, out: Path) -> None:
    """Move the finished merged run into OUT's place in one rename (OUT may be missing, or a folder
    that holds nothing: its empty subfolders and a lock file no runner holds are removed first)."""
    if out.is_dir():
        refuse_merge_target(out)                # still new or empty: nothing of anyone's is removed
        for folder in sorted((p for p in out.rglob("*") if p.is_dir() and not p.is_symlink()),
                             reverse=True):
            folder.rmdir()
        if (out / ".lock").is_file():
            with contextlib.ExitStack() as held:
                hold_folder(held, out, "merge into a new folder")
                (out / ".lock").unlink()
        out.rmdir()
    try:
        os.rename(staging, out)
    except OSError as err:
        if is_disk_full(err):
            raise
        raise PilotError(f"{out} was filled while the merge ran (by another merge or a run?), so "
                         "the merged run was "
                         f"not moved there; merge into a new folder") from None


def refuse_merge_target(out: Path) -> None:
    """merge writes a whole run into a new or empty folder: anything else there is refused before
    anything is read or written (a link or a file planted where the merged run goes, or someone's
    files)."""
    if out.is_symlink():
        raise PilotError(f"{out} is a link; merge into a new folder (the merged run is moved into "
                         "place whole)")
    if out.exists() and not out.is_dir():
        raise PilotError(f"{out} is a file, not a folder; merge into a new folder")
    if not out.is_dir():
        return
    refuse_unsafe_folder(out, elsewhere="merge into a new folder")
    if (out / "manifest.json").exists():
        raise PilotError(f"{out} already holds a run; merge into a new folder")
    # a folder of empty folders holds nothing
    held = sorted(p.name for p in out.iterdir() if p.name != ".lock" and
                  not (p.is_dir() and not p.is_symlink() and all(q.is_dir() and not q.is_symlink()
                                                                 for q in p.rglob("*"))))
    if held:
        shown = ", ".join(held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
        raise PilotError(f"{out} is not empty (it holds {shown}); merge into a new or empty folder")


def write_merged_run(out: Path, shards: list[tuple], cells: dict, models: list[str]) -> Manifest:
    """The merged raw logs, checked against the merged manifest before it is saved: the folder
    becomes a run only once all of it is written and verifies."""
    from .runner import merge_rechecks
    (out / "raw").mkdir(exist_ok=True)
    journal = Journal(out)
    regimes, study = run_regimes(shards[0][1]), folder_study(shards[0][1])
    for key, (folder, entry) in cells.items():
        budget, sample = record_variant(entry)
        source = Journal(folder).cell_records(entry["model"], entry["regime"], budget,
                                              sample).get(entry["episode"], {})
        plan = study.plan(regimes[entry["regime"]], shards[0][2]["episodes"][entry["episode"]],
                          budget)
        for spec in plan:
            if spec.kind not in source:
                raise PilotError(f"cell {key} is COMPLETE in {folder}, but its raw log lacks "
                                 f"{spec.kind}; run the "
                                 f"run command in that shard to redo it, then merge again")
            journal.append(source[spec.kind])
    data0 = shards[0][1]
    lock = dict(data0["lock"])
    lock["models"] = {m: info for _, d, _ in shards for m, info in d["lock"]["models"].items()}
    merged = Manifest(out / "manifest.json", {
        **{k: data0[k] for k in ("protocol", "tasks", "tasks_sha256", "regimes", "n_episodes")},
        **{k: data0[k] for k in ("task_set", "regime_definitions", "budgets", "samples",
                                 "study") if k in data0},
        "run_id": sha256_text("merge" + utc_now())[:12], "models": models, "lock": lock,
        "cells": {k: e for k, (_, e) in cells.items()},
        "amendments": [a for _, d, _ in shards for a in d.get("amendments", [])],
        "created_at": utc_now(), "shard": None, "merged_from": [str(f) for f, _, _ in shards],
        "concurrency_used": sorted({c for _, d, _ in shards for c in d.get("concurrency_used",
        [])}),
        # every spelling of the server and every connection choice a shard recorded, each once
        "base_url_spellings": list(dict.fromkeys(u for _, d,
                                                 _ in shards for u in d.get("base_url_spellings",
        []))),
        "connections": list({canonical_json(c): c for _, d,
                             _ in shards for c in d.get("connections", [])}.values()),
        # the shards' determinism probes are the merged run's: it sends no call of its own
        # (runner.recheck_pending)
        "recheck": merge_rechecks([d.get("recheck") for _, d, _ in shards]),
    })
    problems = verify_run(out, merged.data, shards[0][2])
    if problems:
        raise PilotError(f"the merged run does not verify ({problems[0]}), so nothing was kept in "
                         f"{out}; check the "
                         f"shards with `python3 scripts/run_pilot.py verify --out SHARD_DIR`")
    merged.save()
    return merged
