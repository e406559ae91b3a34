"""Results bank (PROTOCOL.md section 4): the checked cells a bank is scored from, the bank read as
columns, its shape checks, and the analysis of a bank by its study (a probe's answer and class are
pilot/probes.py's)."""
from __future__ import annotations

import collections
import dataclasses
import itertools
import operator
import shlex
from pathlib import Path
from typing import Any, Iterable

from .bankfile import NotFast, ProbeRows, read as read_bank_fast
from .cells import all_cells, run_budgets, run_regimes, run_samples, shard_cells
from .inputs import load_task_set, read_json
# PROBE_KINDS and ProbeKind are read here; the other names are re-exported for the tests that read
# them as bank.X
from .probes import (CLASSES, PROBE_KINDS, ProbeKind, classify_answer,  # noqa: F401
                     parse_answer, parse_answer_lenient, score_probe)
from .records import (ANSWER_NUM_PREDICT, COMPACTION_NUM_PREDICT, CallSpec, Cell, DEFAULT_BUDGET,
                      EXIT_VERIFY_FAILED, MAX_SAMPLES, MAX_TOKEN_COUNT, NUM_CTX, PilotError,
                      REPO_ROOT, Regime, Study, TEMPERATURE, folder_study, is_simulated,
                      study_named)
from .runfolder import Journal, cell_key, is_complete, record_variant, records_digest


def regime_summary(regime: Regime) -> dict:
    """What the analysis and figures need to know of a regime, kept in results.json (its condition
    and judge only where it has them, as the manifest's regime records keep them)."""
    summary = {"description": regime.description, "exploratory": regime.exploratory,
               "context": regime.context,
               "compacts": regime.compacts, "state_reader": regime.state_reader,
               "origin": regime.origin}
    if regime.condition is not None:
        summary["condition"] = regime.condition
    if regime.judge:
        summary["judge"] = True
    return summary


class RecordsAltered(PilotError):
    """A complete cell's records no longer match the manifest: never scored."""

    exit_code = EXIT_VERIFY_FAILED


def verify_command(journal: Journal) -> str:
    return "python3 scripts/run_pilot.py verify --out " + shlex.quote(str(journal.raw_dir.parent))


def summarize_compaction_tokens(per_regime: dict[str, list[tuple[str, int | None]]]) -> dict:
    """Mean realized compaction tokens per regime and per model; unknown counts are left out and
    counted."""
    summary = {}
    for regime, items in per_regime.items():
        known = [n for _, n in items if n is not None]
        by_model = {}
        for model in dict.fromkeys(m for m, _ in items):
            vals = [n for m, n in items if m == model and n is not None]
            by_model[model] = {"n": len(vals), "mean": round(sum(vals) / len(vals),
                                                             2) if vals else None,
                               "unknown": sum(1 for m, n in items if m == model and n is None)}
        summary[regime] = {"n": len(known), "mean": round(sum(known) / len(known),
                                                          2) if known else None,
                           "unknown": len(items) - len(known), "by_model": by_model}
    return summary


def cell_final_state(study: Study, regime: Regime, episode: dict, records: dict,
                     plan: list[CallSpec]) -> str:
    """The state a cell's answers were asked from: the cascade's compaction replies, in plan order,
    as the study carries them (the last one, or what a gated regime let through); empty for a regime
    that does not compact."""
    replies = [records[spec.kind]["response"] for spec in plan if spec.is_compaction
               and spec.cascade]
    return study.cascade_state(regime, episode, replies) if replies else ""


def checked_cells(manifest: dict, tasks: dict, journal: Journal, cells: list[Cell],
                  regimes: dict[str, Regime]) -> Iterable[tuple[Cell, dict, dict, list[CallSpec]]]:
    """Each COMPLETE cell with its records, its probe key fields and its plan, once its log is
    checked against the manifest: a missing record or records altered since the cell completed stop
    scoring (never scored)."""
    logs: dict[tuple, dict] = {}
    study = folder_study(manifest)
    for cell in cells:
        if not is_complete(manifest, cell):
            continue
        stream = (cell.model, cell.regime, cell.budget, cell.sample)
        if stream not in logs:
            logs[stream] = journal.cell_records(*stream)
        records = logs[stream].get(cell.episode, {})
        base = {"model": cell.model, "regime": cell.regime, "episode": cell.episode}
        if cell.budget != DEFAULT_BUDGET or cell.sample:
            base.update(budget=cell.budget, sample=cell.sample)
        key = cell_key(*cell)
        plan = study.plan(regimes[cell.regime], tasks["episodes"][cell.episode], cell.budget)
        missing = [spec.kind for spec in plan if spec.kind not in records]
        if missing:
            raise RecordsAltered(
                f"cell {key} is marked COMPLETE but its log lacks {', '.join(missing)}; it is not "
                "scored. Rerun the run command (it quarantines unreadable lines and re-runs the "
                f"cell), and see `{verify_command(journal)}`"
            )
        entry = manifest["cells"][key]
        if not entry.get("records_sha256"):
            raise RecordsAltered(f"cell {key} is marked COMPLETE, but the manifest records no "
                                 "sha256 of its records, so they cannot be checked; nothing was "
                                 f"scored. See `{verify_command(journal)}`, and restore the "
                                 "manifest from a backup")
        if records_digest([records[spec.kind] for spec in plan]) != entry["records_sha256"]:
            raise RecordsAltered(f"cell {key} was altered after it completed (its records no "
                                 "longer match the sha256 in the manifest); nothing was scored. "
                                 f"Check it with `{verify_command(journal)}` and restore the raw "
                                 "log from a backup")
        yield cell, records, base, plan


@dataclasses.dataclass(frozen=True)
class ScoredRun:
    """What a study's scoring hooks see of the run they score (Study.score_cell,
    Study.score_fields)."""

    manifest: dict
    tasks: dict
    journal: Journal
    study: Study
    models: list
    regimes: dict                       # name -> Regime, as the run recorded them
    # the study's judge where `score --judge` named one (Study.open_judge); None: the rules alone
    judge: Any = None


def complete_episodes(manifest: dict, cells: list[Cell]) -> list[int]:
    """The episodes all of whose cells among `cells` (every model, regime, budget and sample) are
    COMPLETE: the ones a paired comparison can use while a run is unfinished."""
    episodes: dict[int, bool] = {}
    for cell in cells:
        episodes[cell.episode] = episodes.get(cell.episode, True) and is_complete(manifest, cell)
    return sorted(episode for episode, complete in episodes.items() if complete)


def folder_cells(manifest: dict, models: list[str]) -> list[Cell]:
    """The cells a run folder holds: every cell of its design, or of its shard."""
    cells = all_cells(models, list(manifest["regimes"]), manifest["n_episodes"],
                      run_budgets(manifest),
                      run_samples(manifest))
    return shard_cells(cells, tuple(manifest["shard"]) if manifest.get("shard") else None)


def score_run(manifest: dict, tasks: dict, journal: Journal,
              models: list[str] | None = None, judge: Any = None) -> dict:
    """results.json of a run: the header every study's bank opens with (results_header), then the
    study's own fields, scored from its COMPLETE cells only, each checked against the manifest
    (checked_cells), then the run's settings and its determinism probe. The study scores one cell at
    a time (Study.score_cell: named lists of rows, gathered across cells) and may then make its
    fields of them (Study.score_fields; else the rows as they are). A judge (`score --judge`, the
    study's Study.open_judge) reaches its hooks as ScoredRun.judge.

    A run not yet finished is scored over its complete episodes alone (every model, regime, budget
    and sample of the episode complete), so that every comparison in its analysis is paired; its
    header's `partial` says how many episodes that is and how many complete cells of unfinished
    episodes were left out."""
    study = folder_study(manifest)
    models = models or manifest["models"]
    regimes = run_regimes(manifest)
    cells = all_cells(models, list(regimes), manifest["n_episodes"], run_budgets(manifest),
                      run_samples(manifest))
    own = folder_cells(manifest, models)
    whole = set(complete_episodes(manifest, own))
    scored = [cell for cell in cells if cell.episode in whole]
    run = ScoredRun(manifest, tasks, journal, study, list(models), regimes, judge)
    rows: dict[str, list] = {"probes": []}
    complete = 0
    for cell, records, base, plan in checked_cells(manifest, tasks, journal, scored, regimes):
        complete += 1
        for name, new in study.score_cell(run, cell, records, base, plan).items():
            rows.setdefault(name, []).extend(new)
    fields = dict(study.score_fields(run, rows) if study.score_fields is not None else rows)
    run_block = {**run_settings(manifest), **fields.pop("run", {})}
    if is_simulated(manifest):
        run_block["simulated"] = True
    header = results_header(study, manifest, models, regimes, cells, complete)
    left_out = sum(1 for cell in own if cell.episode not in whole and is_complete(manifest, cell))
    if len(whole) < len({cell.episode for cell in own}):
        header["partial"] = {"episodes_complete": len(whole), "episodes": manifest["n_episodes"],
                             "cells_left_out": left_out}
    return {**header, **fields, "run": run_block, "recheck": manifest.get("recheck")}


def results_header(study: Study, manifest: dict, models: list[str], regimes: dict,
                   cells: list[Cell],
                   complete: int) -> dict:
    """What every study's results.json opens with: its study and protocol, the task set, models,
    regimes and design of the run, and how many of its cells were complete and scored."""
    lock = manifest.get("lock") or {}
    return {"study": study.name, "protocol": study.protocol_id, "tasks": manifest.get("tasks"),
            "tasks_sha256": manifest.get("tasks_sha256"),
            "task_set": manifest.get("task_set") or {"kind": None,
                                                     "sha256": manifest.get("tasks_sha256"),
                                                     "path": manifest.get("tasks")},
            "models": list(models), "regimes": list(regimes), "n_episodes": manifest["n_episodes"],
            "regime_definitions": {name: regime_summary(r) for name, r in regimes.items()},
            "budgets": run_budgets(manifest), "samples": run_samples(manifest),
            "temperature": lock.get("temperature", TEMPERATURE),
            "cells": {"complete": complete, "not_complete": len(cells) - complete,
                      "expected": len(cells)}}


def run_settings(manifest: dict) -> dict:
    """The settings of the run a bank was scored from (results.json's `run`): backend, wire options,
    context window, output caps, the models as the server described them, the shard and the prompt
    cache."""
    lock = manifest.get("lock") or {}
    return {"backend": lock.get("backend"), "options": lock.get("options"), "num_ctx": NUM_CTX,
            "compaction_cap": COMPACTION_NUM_PREDICT, "answer_cap": ANSWER_NUM_PREDICT,
            "model_info": lock.get("models"), "shard": manifest.get("shard"),
            "prompt_cache": lock.get("prompt_cache"),
            "prompt_cache_how": lock.get("prompt_cache_how")}


# A bank may hold millions of probes, so analysis reads them as a table of columns: one list per
# field, parallel
# to the probes, built with map (C speed). Selections use itertools.compress and counts use Counter
# over zipped
# columns, so no Python loop runs once per probe; such a loop costs several times as much. A probe
# without a
# budget or a sample has the defaults, as record_variant reads it.
PROBE_FIELDS = (("model", None), ("regime", None), ("episode", None), ("question_id", None),
                ("type", None),
                ("class", None), ("truth", None), ("answer", None), ("budget", DEFAULT_BUDGET),
                ("sample", 0))


def probe_column(rows: list[dict], field: str, default: Any = None) -> list:
    """One field of every row (all of them objects), `default` where a row lacks it."""
    try:
        # the common case, a little faster
        return list(map(operator.itemgetter(field), rows))
    except KeyError:
        return list(map(dict.get, rows, itertools.repeat(field), itertools.repeat(default)))


def probe_table(probes: list[dict] | ProbeRows) -> dict[str, list]:
    """The probes as columns (PROBE_FIELDS), and under "rows" the probes themselves, for fields read
    rarely."""
    # read as columns already (read_bank)
    if isinstance(probes, ProbeRows) and probes.places is None:
        return {**probes.columns, "rows": probes, "types": probes.kinds}
    table = {field: probe_column(probes, field, default) for field, default in PROBE_FIELDS}
    table["rows"] = probes
    return table


def rows_where(table: dict[str, list], flags: Iterable[bool]) -> list[dict]:
    """The probes (as objects) where flags holds, picked by place: a bank read as columns makes an
    object only for the probes picked."""
    rows = table["rows"]
    return [rows[i] for i in itertools.compress(range(len(rows)), flags)]


def table_where(table: dict[str, list], flags: Iterable[bool],
                fields: Iterable[str] | None = None) -> dict[str, list]:
    """The table's rows where flags holds (its columns, or only `fields`); the table itself when
    every flag does and no `fields` are named. The rows are picked by index, so a small selection
    costs little however many columns it takes."""
    picked = list(itertools.compress(range(len(table["model"])), flags))
    if fields is None and len(picked) == len(table["model"]):
        return table
    chosen = {field: list(map(table[field].__getitem__, picked))
              for field in (fields if fields is not None else [f for f, _ in PROBE_FIELDS])
              if field != "rows"}
    if fields is None or "rows" in fields:
        rows = table["rows"]
        chosen["rows"] = rows.take(picked) if isinstance(rows,
                                                         ProbeRows) else list(map(rows.__getitem__,
            picked))
    # rows of a table without repeats have none either
    chosen["unique"] = known_unique(table)
    return chosen


def known_unique(table: dict[str, list]) -> bool:
    """Whether the table is known to hold no probe twice (False when it does, or when that was not
    checked)."""
    if "unique" in table:
        return table["unique"]
    return "run_order" in table or ("distinct" in table and len(table["distinct"])
                                    == len(table["model"]))


def equal_to(column: list, value: Any) -> Iterable[bool]:
    return map(operator.eq, column, itertools.repeat(value))


def member_of(column: list, values: Iterable) -> Iterable[bool]:
    return map(set(values).__contains__, column)


def distinct_probes(table: dict[str, list]) -> set[tuple]:
    """The (model, regime, episode, question, budget, sample) of the table's probes, once each; kept
    in the table, since the shape check and the coverage both need it."""
    if "distinct" not in table:
        table["distinct"] = set(zip(table["model"], table["regime"], table["episode"],
                                    table["question_id"],
                                    table["budget"], table["sample"]))
    return table["distinct"]


def is_primary(probe: dict) -> bool:
    """A probe at the pre-registered budget and first sample: the only ones the confirmatory test
    reads."""
    return probe.get("budget", DEFAULT_BUDGET) == DEFAULT_BUDGET and probe.get("sample", 0) == 0


def primary_table(table: dict[str, list]) -> dict[str, list]:
    """The probes is_primary keeps: the pre-registered budget and the first sample."""
    return table_where(table, map(operator.and_, equal_to(table["budget"], DEFAULT_BUDGET),
                                  equal_to(table["sample"], 0)))


def class_tallies(table: dict[str, list]) -> tuple[dict, dict]:
    """Per (model, regime): a Counter of the probes' classes, and one of the multi-hop probes'
    correctness (True/False); cells without probes give empty Counters."""
    combos = collections.Counter(zip(table["model"], table["regime"], table["type"],
                                     table["class"]))
    classes: dict[tuple, collections.Counter] = collections.defaultdict(collections.Counter)
    multihop: dict[tuple, collections.Counter] = collections.defaultdict(collections.Counter)
    for (model, regime, question_type, cls), n in combos.items():
        classes[(model, regime)][cls] += n
        if question_type == "multihop":
            multihop[(model, regime)][cls == "correct"] += n
    return classes, multihop


def bank_variants(results: dict) -> list[tuple[int, int]]:
    budgets = results.get("budgets") or [DEFAULT_BUDGET]
    return [(b, s) for b in budgets for s in range(int(results.get("samples") or 1))]


def task_questions(task_set: dict | None) -> list[dict[int, tuple]] | None:
    """Per episode of a task set, its questions' (truth, type) by id; None without a task set."""
    if task_set is None:
        return None
    return [
        {q["id"]: (q["truth"], q["type"]) for q in entry["questions"]}
        for entry in task_set["tasks"]["episodes"]
    ]


def in_design(probe: dict, models: list[str], regimes: list[str], variants: list[tuple[int, int]],
              questions: list[dict[int, tuple]] | None) -> bool:
    """Whether a probe belongs to a cell the bank pre-registers: one of its models, regimes and
    variants, and an episode and question the task set has (any episode and question without a task
    set)."""
    episode = probe.get("episode")
    return (probe.get("model") in models and probe.get("regime") in regimes
            and record_variant(probe) in variants
            and isinstance(episode, int) and not isinstance(episode, bool) and episode >= 0
            and isinstance(probe.get("question_id"), int)
            and (questions is None or (episode < len(questions)
                                       and probe["question_id"] in questions[episode])))


def cells_block_disagreement(results: dict, coverage: dict) -> list[str]:
    """The label reason when what a results file says of its cells (`cells`: complete, not_complete)
    disagrees with what its probes cover (`coverage`: complete_cells, partial_cells): the file's own
    claim is never the count, only a sign that it was edited or made by something else."""
    cells = results.get("cells")
    if not isinstance(cells, dict):
        return []
    claimed_complete, claimed_left = cells.get("complete"), cells.get("not_complete")
    # cells left to run with none of them partial: whole episodes missing (a stopped run is scored
    # over its complete
    # episodes), which only a bank of every episode of its task set cannot have
    every_episode = coverage.get("task_episodes") is not None and \
        len(coverage.get("bank_episodes", ())) >= coverage["task_episodes"]
    if (claimed_complete is not None and claimed_complete != coverage["complete_cells"]) or \
            (claimed_left and not coverage["partial_cells"] and every_episode):
        return [f"the file's `cells` block (complete {claimed_complete}, not complete "
                f"{claimed_left}) disagrees "
                f"with its probes ({coverage['complete_cells']} complete cells)"]
    return []


def cell_coverage(probes: list[dict], models: list[str], regimes: list[str],
                  variants: list[tuple[int, int]],
                  questions: list[dict[int, tuple]] | None) -> dict:
    """What a bank's probes cover, read from the probes alone and never from its `cells` or
    `n_episodes`: every cell (variant x model x regime x episode the bank holds) with each question
    of its episode exactly once, probes repeated, probes outside the design (in_design), and probes
    whose truth or type differs from the task set (`questions`, task_questions). It looks at each
    probe, which suits a study whose banks are small; a study with large banks checks by columns
    instead."""
    seen: collections.Counter = collections.Counter()
    outside = mismatched = 0
    for probe in probes:
        if not in_design(probe, models, regimes, variants, questions):
            outside += 1
            continue
        seen[(probe["model"], probe["regime"], probe["episode"], probe["question_id"],
              record_variant(probe))] += 1
        if questions is not None and (probe.get("truth"), probe.get("type")) != \
                questions[probe["episode"]][probe["question_id"]]:
            mismatched += 1
    bank_episodes = sorted({key[2] for key in seen})
    # without a task set: the questions any cell of the episode has
    asked = collections.defaultdict(set)
    for key in seen:
        asked[key[2]].add(key[3])
    per_cell = collections.Counter(key[:3] + (key[4],) for key in seen)
    partial = [cell_key(model, regime, episode,
                        *variant) for variant in variants for model in models
               for regime in regimes for episode in bank_episodes
               if per_cell[(model, regime, episode, variant)] != len(questions[episode] if questions
               else asked[episode])]
    expected = len(variants) * len(models) * len(regimes) * len(bank_episodes)
    return {"bank_episodes": bank_episodes, "task_episodes": len(questions) if questions is not None
            else None,
            "complete_cells": expected - len(partial), "expected_cells": expected,
            "partial_cells": partial,
            "duplicates": sum(seen.values()) - len(seen), "outside": outside,
            "mismatched_truths": mismatched}


def call_stage(call: dict) -> str:
    """A call's stage as recorded, or from its kind for records made before calls carried one."""
    return call.get("stage") or ("compaction" if str(call.get("kind",
                                                              "")).startswith("compact_")
                                 else "answer")


def analyze_bank(results: dict, tasks_path: Path | None = None,
                 table: dict[str, list] | None = None) -> dict:
    """The study's analysis of a bank, with the task set its probes are checked against: the file
    given, else the one the bank records (when it is still there with the recorded hash), else the
    pre-registered one. `table` is bank_table(results), when the caller has it already. Whether the
    bank comes from the demo's stand-in model is the core's to say (its Verdict's simulated), so
    that every output of such a bank is marked SIMULATED."""
    study = study_named(results.get("study"))
    recorded = results.get("task_set") if isinstance(results.get("task_set"), dict) else {}
    task_set = None
    if study.command_line.read_source is not None:
        # a study that reads the user's own files is analysed from its bank alone
        pass
    elif tasks_path is not None:
        task_set = load_task_set(tasks_path)
    else:
        path = recorded.get("path") if isinstance(recorded.get("path"), str) else None
        candidate = (REPO_ROOT / path if path and not Path(path).is_absolute()
                     else Path(path)) if path \
            else study.tasks_path
        try:
            task_set = load_task_set(candidate)
        except PilotError:
            task_set = None
        if task_set and recorded.get("sha256") and task_set["sha256"] != recorded["sha256"]:
            task_set = None
    analysis = study.analyze(results, task_set, table)
    analysis["simulated"] = is_simulated(results)
    analysis["partial"] = partial_view(results)
    return analysis


def partial_view(results: dict) -> dict | None:
    """What the bank of a run not yet finished says of itself (score_run's `partial`: the episodes
    complete in every model and regime, of how many, and the complete cells left out), when it is
    whole numbers; None otherwise. It only ever weakens what is said of the bank
    (reports.partial_note)."""
    partial = results.get("partial")
    fields = ("episodes_complete", "episodes", "cells_left_out")
    if not isinstance(partial, dict) or not all(is_count(partial.get(f)) for f in fields):
        return None
    return {f: partial[f] for f in fields}


def column_types(rows: list[dict], field: str, default: Any = None) -> set[type]:
    """The types a field takes over rows (all of them objects), `default` where a row lacks it."""
    return set(map(type, probe_column(rows, field, default)))


# tokens, as score keeps them
CALL_COUNTS = ("eval_count", "prompt_eval_count", "prompt_evaluated", "prompt_cached")
MAX_CONTEXT = 10_000_000                # no context window or output cap is larger


def is_count(value: Any, whole: bool = True) -> bool:
    """A number of tokens (or states, or entities) a run could have counted: from 0 to
    MAX_TOKEN_COUNT, whole unless `whole` is False (a mean); anything else in a results.json was not
    written by score (compared, never converted, so a number too large for a float is refused rather
    than overflowing)."""
    kinds = int if whole else (int, float)
    return isinstance(value, kinds) and not isinstance(value,
                                                       bool) and 0 <= value <= MAX_TOKEN_COUNT


def whole_counts(values: list) -> bool:
    """Whether every value is_count (whole), checked a column at a time (a large bank's final states
    are many)."""
    return set(map(type, values)) <= {int} and (not values or (min(values) >= 0 and max(values)
                                                               <= MAX_TOKEN_COUNT))


def gate_summary_problems(gate: dict) -> list[str]:
    """Every way a results.json's `gate` block is not the release gate's summary (the fields the
    reports read)."""
    def share(value) -> bool:
        return value is None or (isinstance(value, (int, float)) and not isinstance(value,
            bool) and 0 <= value <= 1)

    def interval(value) -> bool:
        return (
            isinstance(value, dict)
            and is_count(value.get("k"))
            and is_count(value.get("n"))
            and value["k"] <= value["n"]
            and all(share(value.get(f)) for f in ("rate", "lo", "hi"))
        )

    problems = []
    if not is_count(gate.get("max_omissions")) or not is_count(gate.get("n_states")):
        problems.append("has no whole `max_omissions` and `n_states`")
    by_regime = gate.get("by_regime")
    if not isinstance(by_regime, dict) or not all(
            isinstance(r, dict) and interval(r.get("states")) and interval(r.get("final_states"))
            and
            isinstance(r.get("by_category"),
                       dict) and all(is_count(v) for v in r["by_category"].values())
            for r in by_regime.values()):
        problems.append("`by_regime` is not an object of state counts and intervals (shares from "
                        "0 to 1)")
    prediction = gate.get("prediction")
    # precision, recall and the corrupted share among passes are null where there was nothing to
    # tell apart
    if not isinstance(prediction, dict) or not all(is_count(prediction.get(f)) for f in (
            "n", "fail_corrupted", "fail_clean", "pass_corrupted", "pass_clean")) or not all(
            prediction.get(f) is None or interval(prediction[f]) for f in ("precision", "recall",
            "corrupted_if_pass")) \
            or not share(prediction.get("fisher_p")) or not isinstance(prediction.get("verdict"),
                str):
        problems.append("`prediction` is not counts, intervals (shares from 0 to 1), a p-value "
                        "and a verdict")
    return problems


def rows_are_objects(rows: list | ProbeRows) -> bool:
    return isinstance(rows, ProbeRows) or set(map(type, rows)) <= {dict}


def is_row_list(value: Any) -> bool:
    """A list of a bank, as json reads it or as read_bank reads its probes."""
    return isinstance(value, (list, ProbeRows))


def bank_table(results: Any) -> dict[str, list] | None:
    """probe_table of a parsed bank's probes, or None when they are not a list of objects (the shape
    check then names what is wrong)."""
    probes = results.get("probes") if isinstance(results, dict) else None
    return probe_table(probes) if is_row_list(probes) and rows_are_objects(probes) else None


def read_bank(path: Path, shown: str, kind: str, advice: str,
              error: type = PilotError) -> tuple[Any, dict | None]:
    """A results.json and its probes as columns (bank_table): a large one in pieces, on two cores,
    without a million probe objects at once (pilot/bankfile.py); any other file whole, with
    read_json's checks and messages."""
    try:
        data = path.read_bytes() if path.is_file() else b""
        return read_bank_fast(data, path, PROBE_FIELDS)
    except (OSError, NotFast):
        pass
    _, _, results = read_json(path, shown, kind, advice, error=error)
    return results, bank_table(results)


def probes_well_formed(table: dict[str, list], regimes: list[str], kind: ProbeKind | None = None,
                       run_order: bool = False) -> bool:
    """Every probe has the fields and types analyze reads, a known class and regime, and no probe
    comes twice: checked a column at a time (a million probes in about a second); when this says no,
    results_shape_problems looks at each probe to name the problems."""
    if not regimes:
        return False
    types = table.get("types") or {field: set(map(type, table[field])) for field, _ in PROBE_FIELDS}
    if any(types[f] - {str} for f in ("model", "regime", "type", "class")) or \
            any(types[f] - {int} for f in ("episode", "question_id", "budget", "sample")):
        return False
    kind = kind or PROBE_KINDS["integer"]
    if kind.answer_type == "choice":
        try:
            answers_ok = set(table["answer"]) <= {*kind.choices, None}
        except TypeError:                                   # an unhashable answer
            return False
    else:
        answers_ok = types["answer"] <= {str if kind.answer_type == "text" else int, type(None)}
    return (answers_ok and set(table["class"]) <= set(kind.classes)
            and set(table["regime"]) <= set(regimes)
            and (run_order or len(distinct_probes(table)) == len(table["model"])))


def results_shape_problems(results: Any, table: dict[str, list] | None = None) -> list[str]:
    """Every way a results bank is not one `analyze` can read (our format or the reference one);
    `table` is bank_table(results), when the caller has it already."""
    if not isinstance(results, dict):
        return [f"the file holds a {type(results).__name__}, not an object"]
    problems = []

    def is_int(value) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    def string_list(field: str) -> list[str]:
        value = results.get(field)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            problems.append(f"`{field}` is {'missing' if value is None else 'not a list of names'}")
            return []
        return value

    def is_mean(value) -> bool:
        return value is None or is_count(value, whole=False)

    models = string_list("models")
    regimes = string_list("regimes")
    for field, names in (("models", models), ("regimes", regimes)):
        repeated = sorted(n for n, times in collections.Counter(names).items() if times > 1)
        if repeated:
            problems.append(f"`{field}` names {', '.join(repeated)} more than once")
    budgets, samples = results.get("budgets"), results.get("samples")
    if budgets is not None and (not isinstance(budgets, list) or not budgets or len(set(map(str,
        budgets))) != len(budgets)
                                or not all(is_int(b) and 16 <= b <= 2048 for b in budgets)):
        problems.append("`budgets` is not a list of distinct whole numbers from 16 to 2048")
        budgets = None
    if samples is not None and not (is_int(samples) and 1 <= samples <= MAX_SAMPLES):
        problems.append(f"`samples` is not a whole number from 1 to {MAX_SAMPLES}")
        samples = None
    temperature = results.get("temperature")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature,
        (int, float))):
        problems.append("`temperature` is not a number")
    try:
        study = study_named(results.get("study") if isinstance(results.get("study"), str) else None)
    except PilotError as err:
        return problems + [str(err)]
    # a study whose results are not probes of the shared kinds
    if study.check_bank is not None:
        return study.check_bank(results)
    kind = PROBE_KINDS[study.probe_kind]
    classes, answer_ok, answer_kind = kind.classes, kind.answer_ok, kind.answer_desc
    probes = results.get("probes")
    if not is_row_list(probes):
        problems.append("`probes` is " + ("missing" if probes is None else "not a list"))
        probes = []
    table = table if table is not None else bank_table(results)
    # unreadable ones were named above
    variants = bank_variants({"budgets": budgets, "samples": samples})
    run_order = table is not None and study.run_order is not None and study.run_order(table, models,
        regimes, variants)
    well_formed = table is not None and probes_well_formed(table, regimes, kind, run_order)
    if well_formed and study.design.declared_variants_only:
        # such a study's analysis reads the first sample at the pre-registered budget and has no
        # notion of a
        # probe outside the design: a probe of a variant the bank does not declare is a problem
        outside = set(zip(table["budget"], table["sample"])) - set(variants)
        if outside:
            budget, sample = sorted(outside)[0]
            problems.append(f"{len(outside)} probe variant(s) the bank's `budgets` and `samples` "
                            f"do not declare (first: budget {budget}, sample {sample})")
    if well_formed:
        # nothing to report: skip the loop that names problems
        probes = []
    seen = set()
    for number, probe in enumerate(probes, 1):
        where = f"probe {number}"
        if not isinstance(probe, dict):
            problems.append(f"{where} is not an object")
            continue
        wrong = [f for f in ("model", "regime", "type", "class") if not isinstance(probe.get(f),
            str)]
        wrong += [f for f in ("episode", "question_id") if not is_int(probe.get(f))]
        wrong += [f for f in ("budget", "sample") if f in probe and not is_int(probe[f])]
        if wrong:
            problems.append(f"{where} has no usable {', '.join(wrong)}")
            continue
        if probe["class"] not in classes:
            problems.append(f"{where} has the unknown class {probe['class']!r} (known: "
                            f"{', '.join(classes)})")
        if regimes and probe["regime"] not in regimes:
            problems.append(f"{where} has the regime {probe['regime']!r}, which `regimes` does "
                            "not list")
        if probe.get("answer") is not None and not answer_ok(probe.get("answer")):
            problems.append(f"{where} has the answer {probe.get('answer')!r}, not {answer_kind}")
        key = (probe["model"], probe["regime"], probe["episode"], probe["question_id"],
               record_variant(probe))
        if key in seen:
            variant = "" if key[4] == (DEFAULT_BUDGET,
                                       0) else f" (budget {key[4][0]}, sample {key[4][1]})"
            problems.append(f"{where} repeats {probe['model']} {probe['regime']} episode "
                            f"{probe['episode']} question {probe['question_id']}{variant}")
        seen.add(key)
    tokens = results.get("compaction_tokens", {})
    if not isinstance(tokens, dict):
        problems.append("`compaction_tokens` is not an object")
    else:
        for regime, entry in tokens.items():
            by_model = entry.get("by_model", {}) if isinstance(entry, dict) else None
            if not isinstance(by_model, dict) or not is_mean(entry.get("mean")) or not all(
                    isinstance(v, dict) and is_mean(v.get("mean")) for v in by_model.values()):
                problems.append(f"`compaction_tokens` for {regime} is not an object of means")
    stage = results.get("compaction_stage", [])
    if not isinstance(stage, list) or not rows_are_objects(stage) or column_types(stage,
        "model") - {str} \
            or column_types(stage, "regime") - {str} \
            or not all(whole_counts(probe_column(stage, f, 0)) for f in ("retained", "correct",
                "n_entities",
                                                                          "loose_retained",
                                                                          "loose_correct",
                                                                          "sentence_correct")):
        problems.append("`compaction_stage` is not a list of objects with a model, a regime and "
                        "whole counts")
    for field, kind in (("cells", dict), ("run", dict), ("calls", list), ("gate", dict),
                        ("recheck", dict)):
        if results.get(field) is not None and not isinstance(results[field], kind):
            problems.append(f"`{field}` is not {'an object' if kind is dict else 'a list'}")
    calls = results.get("calls")
    if isinstance(calls, list) and (not rows_are_objects(calls) or any(column_types(calls,
        f) - {str}
                                                                       for f in ("model", "regime",
                                                                       "kind"))):
        problems.append("`calls` is not a list of objects with a model, a regime and a kind")
    elif isinstance(calls, list) and not all(v is None or is_count(v) for f in CALL_COUNTS
                                             for v in probe_column(calls, f)):
        problems.append("`calls` holds a token count that is not a whole number from 0 to "
                        f"{MAX_TOKEN_COUNT} (score records any other as unknown)")
    run = results.get("run")
    if isinstance(run, dict) and not all(is_count(run[f]) and 1 <= run[f] <= MAX_CONTEXT
                                         for f in ("num_ctx", "compaction_cap",
                                                   "answer_cap") if f in run):
        problems.append("`run` holds a context window or an output cap that is not a whole number "
                        "of tokens")
    if isinstance(results.get("gate"), dict):
        problems += [f"`gate` {problem}" for problem in gate_summary_problems(results["gate"])][:1]
    if results.get("n_episodes") is not None and not is_int(results["n_episodes"]):
        problems.append("`n_episodes` is not a whole number")
    if results.get("partial") is not None and partial_view(results) is None:
        problems.append("`partial` is not an object of whole counts (episodes_complete, episodes, "
                        "cells_left_out)")
    return problems
