"""XR-001, analysis (protocol/PROTOCOL.md sections 4 and 5): scoring a run folder, the coverage of a
bank by its probes, the labels, the confirmatory test, the exploratory analyses and the predictions'
verdicts."""
from __future__ import annotations

import collections
import dataclasses
import itertools
import operator
from typing import Iterable

from ...bank import (ScoredRun, bank_variants, call_stage, cell_final_state,
                     cells_block_disagreement, class_tallies, distinct_probes, equal_to, is_primary,
                     known_unique, member_of, primary_table, probe_table, regime_summary,
                     rows_where, summarize_compaction_tokens, table_where)
from ..episodes import QUESTION_PLAN, segment_entities
from ...probes import CLASSES, score_probe
from ...prompts import REGIMES
from ...records import (COMPACTION_NUM_PREDICT, Cell, DEFAULT_BUDGET, NUM_CTX, Regime, TEMPERATURE,
                        is_simulated, known_count)
from ...reports import fmt_p, pct
from ...runfolder import cell_key
from ...rules.states import (read_prose_state, read_prose_state_by_sentence, read_section,
                             read_typed_state, read_typed_state_loose)
from ...stats import (ALPHA, BOOTSTRAP_REPLICATES, BOOTSTRAP_SEED, clustered_bootstraps,
                      holm_adjust, mcnemar_counts, rate_summary)
from .design import DEFAULT_REGIMES, N_EPISODES


def score_retention(regime: Regime, state: str, episode: dict) -> dict:
    """Write-time retention of one final state against the episode's 20 entities."""
    truths = {e["name"]: e["value"] for seg in episode["segments"] for e in segment_entities(seg)}

    def counts(found: dict) -> tuple[int, int]:
        retained = [name for name in truths if name in found]
        return len(retained), sum(1 for name in retained if found[name] == truths[name])

    reader = regime.state_reader
    loose = {}
    if reader == "typed":
        retained, correct = counts(read_typed_state(state))
        loose_retained, loose_correct = counts(read_typed_state_loose(state))
        loose = {"loose_retained": loose_retained, "loose_correct": loose_correct}
    elif reader.startswith("section:"):
        retained, correct = counts(read_typed_state(read_section(state, reader[len("section:"):])))
    else:
        # the paper's heuristic, kept for comparability with its table, and the reader bounded by
        # the sentence
        # that names the entity, which P3 reads (amendment of 2026-12-01)
        retained, correct = counts(read_prose_state(state, truths))
        loose = {"sentence_correct": counts(read_prose_state_by_sentence(state, truths))[1]}
    return {"retained": retained, "correct": correct, "wrong": retained - correct,
            "n_entities": len(truths), "method": reader, **loose}


def state_values(regime: Regime, state: str, episode: dict) -> list[dict]:
    """Each pinned entity value of the episode as a final state holds it, read as P3 reads it (a
    typed block by its exact `NAME = N` lines, a prose state by the sentence that names the entity):
    kept (the value written), changed (another value, in "found") or dropped (the name absent, or no
    value beside it). The report marks them."""
    truths = {e["name"]: e["value"] for seg in episode["segments"] for e in segment_entities(seg)}
    reader = regime.state_reader
    if reader == "typed":
        found = read_typed_state(state)
    elif reader.startswith("section:"):
        found = read_typed_state(read_section(state, reader[len("section:"):]))
    else:
        found = read_prose_state_by_sentence(state, truths)
    return [{"name": name, "value": value, "found": found.get(name),
             "class": "kept" if found.get(name) == value else "changed"
             if found.get(name) is not None else "dropped"}
            for name, value in truths.items()]


def score_cell(run: ScoredRun, cell: Cell, records: dict, base: dict, plan: list) -> dict[str,
    list]:
    """One complete cell: its probes, every call's guards (cap hits, token counts, thinking), the
    write-time retention of its final state and, for the first two episodes, the final state itself.
    Probes, states and calls away from the pre-registered budget or first sample carry their
    `budget` and `sample`."""
    regime, episode = run.regimes[cell.regime], run.tasks["episodes"][cell.episode]
    probes, stage, guards, examples = [], [], [], []
    for spec in plan:
        record = records[spec.kind]
        work = record.get("server_work") or {}
        guards.append({**base, **({"control_tokens": True} if record.get("control_tokens") else {}),
                       "kind": spec.kind, "stage": spec.stage,
                       "done_reason": record.get("done_reason"),
                       "eval_count": known_count(record.get("eval_count")),
                       "prompt_eval_count": known_count(record.get("prompt_eval_count")),
                       "prompt_cached": work.get("prompt_cached"),
                       "prompt_evaluated": work.get("prompt_evaluated"),
                       "thinking_chars": len(record.get("thinking") or "")})
        if not spec.is_compaction:
            question = episode["questions"][spec.question_id - 1]
            probes.append({**base, **score_probe(record, question, episode["conflation_set"])})
    if regime.compacts:
        final_state = cell_final_state(run.study, regime, episode, records, plan)
        if regime.state_reader != "none":
            stage.append({**score_retention(regime, final_state, episode), **base})
        if cell.episode < 2 and cell.budget == DEFAULT_BUDGET and not cell.sample:
            examples.append({**base, "final_state": final_state,
                             **({"values": state_values(regime, final_state, episode)}
                                if regime.state_reader != "none" else {})})
    return {"probes": probes, "compaction_stage": stage, "calls": guards,
            "example_states": examples}


def score_fields(run: ScoredRun, rows: dict[str, list]) -> dict:
    """results.json's fields of this study: the probes, the final states' retention, the realized
    compaction tokens per regime (at the pre-registered budget, and per budget), every call's guards
    and the example states."""
    comp_tokens: dict[int, dict[str, list]] = {}
    for call in rows.get("calls", []):
        if call["stage"] == "compaction":
            comp_tokens.setdefault(call.get("budget", DEFAULT_BUDGET),
                                   {}).setdefault(call["regime"], []).append(
                (call["model"], call["eval_count"]))
    return {"probes": rows["probes"], "compaction_stage": rows.get("compaction_stage", []),
            "compaction_tokens": summarize_compaction_tokens(comp_tokens.get(DEFAULT_BUDGET, {})),
            "compaction_tokens_by_budget": {str(b): summarize_compaction_tokens(t) for b,
                                            t in sorted(comp_tokens.items())},
            "calls": rows.get("calls", []), "example_states": rows.get("example_states", [])}


# Validity guards, pinned by the amendment of 2026-11-30 (PROTOCOL.md sections 5 and 7).
CEILING_MAX_R0_CORRUPTION = 0.5        # a model above this on R0 cannot do the task: uninformative

# realized R1/R2 mean compaction tokens outside it: budgets not matched
BUDGET_RATIO_BAND = (0.8, 1.25)

# above this share of R1's or R2's compactions at the cap, a match is qualified
MOSTLY_AT_CAP = 0.5

LABELS = ("CONFIRMATORY", "NON-CONFIRMATORY", "UNINFORMATIVE")


@dataclasses.dataclass(frozen=True)
class RunOrder:
    """Where the probes of a bank in_run_order lie: one block per (variant, model, regime) of
    n_episodes x the questions, the blocks one after another in all_cells order."""
    models: tuple
    regimes: tuple
    variants: tuple
    n_episodes: int

    @property
    def block(self) -> int:
        return self.n_episodes * len(QUESTION_PLAN)

    def blocks(self, regime: str) -> Iterable[tuple[int, int, str, int]]:
        """(budget, sample, model, first probe) of each block of `regime`."""
        r = self.regimes.index(regime)
        for v, (budget, sample) in enumerate(self.variants):
            for m, model in enumerate(self.models):
                yield budget, sample, model, ((v * len(self.models) + m) * len(self.regimes)
                                              + r) * self.block


def in_run_order(table: dict[str, list], models: list[str], regimes: list[str],
                 variants: list[tuple[int, int]]) -> bool:
    """Whether the probes are each cell's questions once, for every cell of the first episodes, in
    the order runs write them (budget, sample, model, regime, episode, question: all_cells). Checked
    by comparing each column with the one that order gives, at C speed; such a bank has no repeats
    and no probe of a model, regime, question or variant outside its design (its episodes are
    checked against the task set apart), so the costlier checks are skipped, and its counts are read
    block by block. Kept in the table, as table["run_order"] (a RunOrder) when it holds."""
    key = ("in_run_order", tuple(models), tuple(regimes), tuple(variants))
    if key not in table:
        order = run_order_of(table, models, regimes, variants)
        table[key] = order is not None
        if order is not None:
            table["run_order"] = order
    return table[key]


def run_order_of(table: dict[str, list], models: list[str], regimes: list[str],
                 variants: list[tuple[int, int]]) -> RunOrder | None:
    question_ids = [qid for qid, _, _ in QUESTION_PLAN]
    per_cell = len(question_ids)
    cells_per_episode = len(variants) * len(models) * len(regimes)
    if not cells_per_episode or not table["model"] or len(table["model"]) % (cells_per_episode
        * per_cell) or \
            any(len(set(names)) != len(names) for names in (models, regimes, variants)):
        return None
    n_episodes = len(table["model"]) // (cells_per_episode * per_cell)
    repeat = lambda values, each: list(itertools.chain.from_iterable([v] * each for v in values))
    per_regime = n_episodes * per_cell
    per_variant = len(models) * len(regimes) * per_regime
    expected = {"question_id": question_ids * (cells_per_episode * n_episodes),
                "episode": repeat(range(n_episodes), per_cell) * cells_per_episode,
                "regime": repeat(regimes, per_regime) * (len(variants) * len(models)),
                "model": repeat(models, len(regimes) * per_regime) * len(variants),
                "budget": repeat([b for b, _ in variants], per_variant),
                "sample": repeat([s for _, s in variants], per_variant)}
    if not all(table[field] == column for field, column in expected.items()):
        return None
    return RunOrder(tuple(models), tuple(regimes), tuple(map(tuple, variants)), n_episodes)


def probe_coverage(table: dict[str, list], models: list[str], regimes: list[str],
                   task_set: dict | None,
                   variants: list[tuple[int, int]] = ((DEFAULT_BUDGET, 0),)) -> dict:
    """What the probes themselves cover, against the task set they claim: cells complete, missing,
    duplicated and extra probes, truths that disagree with the task file. Never reads `cells`."""
    question_ids = [qid for qid, _, _ in QUESTION_PLAN]
    tasks = task_set["tasks"] if task_set else None
    task_episodes = range(len(tasks["episodes"])) if tasks else range(N_EPISODES)
    n_probes = len(table["model"])
    if in_run_order(table, models, regimes, variants) and n_probes // (
        len(variants) * len(models) * len(regimes) * len(question_ids)
    ) <= len(task_episodes):
        return run_order_coverage(table, models, regimes, variants, tasks, len(task_episodes))
    distinct = distinct_probes(table)
    # inside: a probe whose model, regime, episode, question and variant are all ones the bank
    # pre-registers;
    # a column whose values are all allowed needs no look per probe
    allowed = [("model", set(models)), ("regime", set(regimes)), ("episode", set(task_episodes)),
               ("question_id", set(question_ids))]
    budgets, samples = {b for b, _ in variants}, {s for _, s in variants}
    variant_of = None
    if set(variants) == set(itertools.product(budgets, samples)):
        allowed += [("budget", budgets), ("sample", samples)]
    else:
        variant_of = list(zip(table["budget"], table["sample"]))
    inside = None
    for column, values in [(table[field], values) for field, values in allowed] + \
            ([(variant_of, set(variants))] if variant_of is not None else []):
        if set(column) <= values:
            continue
        flags = member_of(column, values)
        inside = list(flags) if inside is None else list(map(operator.and_, inside, flags))
    outside = 0 if inside is None else inside.count(False)
    mismatched = 0
    if tasks is not None:
        expected = {(episode, position): (question["truth"], question["type"])
                    for episode, entry in enumerate(tasks["episodes"])
                    for position, question in enumerate(entry["questions"], 1)}
        differs = map(operator.ne, zip(table["truth"], table["type"]),
                      map(expected.get, zip(table["episode"], table["question_id"])))
        mismatched = sum(differs if inside is None else itertools.compress(differs, inside))
    bank_episodes = sorted({e for e in set(table["episode"]) if e in task_episodes})
    expected_cells = len(variants) * len(models) * len(regimes) * len(bank_episodes)
    complete_cells, partial_cells, primary_partial = 0, [], []
    if inside is None and len(distinct) == len(question_ids) * expected_cells:
        # every probe lies in an expected cell, which holds each question at most once, and there
        # are as many
        # distinct probes as the cells have questions: every cell is complete
        complete_cells = expected_cells
    else:
        present = distinct if inside is None else set(itertools.compress(
            zip(table["model"], table["regime"], table["episode"], table["question_id"],
                table["budget"],
                table["sample"]), inside))
        questions_in_cell = collections.Counter(map(operator.itemgetter(0, 1, 2, 4, 5), present))
        for budget, sample in variants:
            for model in models:
                for regime in regimes:
                    for episode in bank_episodes:
                        if questions_in_cell.get((model, regime, episode, budget,
                                                  sample)) == len(question_ids):
                            complete_cells += 1
                            continue
                        name = cell_key(model, regime, episode, budget, sample)
                        partial_cells.append(name)
                        if regime in DEFAULT_REGIMES and (budget, sample) == (DEFAULT_BUDGET, 0):
                            primary_partial.append(name)
    return {"bank_episodes": bank_episodes, "task_episodes": len(task_episodes),
            "complete_cells": complete_cells, "expected_cells": expected_cells,
            "partial_cells": partial_cells, "primary_partial_cells": primary_partial,
            "duplicates": n_probes - len(distinct),
            "outside": outside, "mismatched_truths": mismatched}


def run_order_coverage(table: dict[str, list], models: list[str], regimes: list[str],
                       variants: list[tuple[int, int]], tasks: dict | None,
                       n_task_episodes: int) -> dict:
    """probe_coverage of a bank in_run_order within the task set: every cell of its episodes
    complete, no repeats, nothing outside; only the truths are left to check."""
    n_episodes = len(table["model"]) // (len(variants) * len(models) * len(regimes)
                                         * len(QUESTION_PLAN))
    mismatched = 0
    if tasks is not None:
        expected = [(question["truth"],
                     question["type"]) for entry in tasks["episodes"][:n_episodes]
                    for question in entry["questions"]]
        cells = len(table["model"]) // len(expected)
        mismatched = sum(map(operator.ne, zip(table["truth"], table["type"]), expected * cells))
    n_cells = len(variants) * len(models) * len(regimes) * n_episodes
    return {"bank_episodes": list(range(n_episodes)), "task_episodes": n_task_episodes,
            "complete_cells": n_cells, "expected_cells": n_cells, "partial_cells": [],
            "primary_partial_cells": [],
            "duplicates": 0, "outside": 0, "mismatched_truths": mismatched}


def label_reasons(results: dict, coverage: dict, task_set: dict | None,
                  regimes: list[str]) -> list[str]:
    """Every reason the bank falls short of a confirmatory one; empty when it does not."""
    reasons = []
    if not {"R0", "R1", "R2"} <= set(regimes):
        reasons.append("the bank lacks "
                       f"{', '.join(r for r in ('R0', 'R1', 'R2') if r not in regimes)}: the "
                       f"confirmatory test needs R1 and R2 and the ceiling check needs R0")
    if task_set is None:
        reasons.append("no task set to check the probes against (pass --tasks FILE)")
    elif task_set["kind"] == "generated":
        reasons.append(f"task set {task_set['sha256'][:12]} is not the pre-registered one "
                       "(tasks/tasks.json)")
    if coverage["primary_partial_cells"]:
        reasons.append(f"partial bank: {len(coverage['primary_partial_cells'])} cell(s) lack "
                       "probes "
                       f"(first: {coverage['primary_partial_cells'][0]})")
    temperature = results.get("temperature", TEMPERATURE)
    if temperature != TEMPERATURE:
        reasons.append(f"temperature {temperature} is not the pre-registered {TEMPERATURE:g}")
    n_bank, n_task = len(coverage["bank_episodes"]), coverage["task_episodes"]
    if task_set is not None and n_task != N_EPISODES:
        reasons.append(f"the task set has {n_task} episodes; the protocol pre-registers "
                       f"{N_EPISODES}")
    if n_bank < n_task:
        reasons.append(f"smoke run: {n_bank} of the {n_task} pre-registered episodes")
    if coverage["duplicates"]:
        reasons.append(f"{coverage['duplicates']} duplicated probe(s)")
    if coverage["outside"]:
        reasons.append(f"{coverage['outside']} probe(s) outside the pre-registered models, "
                       "regimes, episodes "
                       f"or questions")
    if coverage["mismatched_truths"]:
        reasons.append(f"{coverage['mismatched_truths']} probe(s) whose truth or type differs "
                       "from the task set")
    reasons += cells_block_disagreement(results, coverage)
    if is_simulated(results):
        reasons.append("simulated: the answers come from the built-in stand-in model (`demo`), "
                       "not a language model")
    return reasons


def ceiling_check(corruption: dict, models: list[str]) -> dict:
    """Per model: R0 corruption against the pinned bound; above it the model is uninformative."""
    checks = {}
    for model in models:
        r0 = (corruption.get(model) or {}).get("R0")
        rate = r0["rate"] if r0 and r0["n"] else None
        checks[model] = {"r0_rate": rate, "passes": rate is not None and rate
                         <= CEILING_MAX_R0_CORRUPTION}
    return checks


def analyze(results: dict, task_set: dict | None = None,
            table: dict[str, list] | None = None) -> dict:
    """Every number of analysis.md, RESULTS.md and the figures, computed from results.json and the
    task set the probes are checked against; the label comes from the probes, never from the file's
    word. `table` is probe_table of the results' probes, when the caller has it already."""
    models, regimes = list(results["models"]), list(results["regimes"])
    table = table if table is not None else probe_table(results.get("probes", []))
    coverage = probe_coverage(table, models, regimes, task_set, bank_variants(results))
    primary = primary_table(table)
    classes_in_cell, multihop_in_cell = class_tallies(primary)
    corruption, classes_by_model, multihop, omissions = {}, {}, {}, {}
    for model in models:
        corruption[model], classes_by_model[model], multihop[model], omissions[model] = (
            {},
            {},
            {},
            {},
        )
        for regime in regimes:
            counts = classes_in_cell[(model, regime)]
            n = sum(counts.values())
            corruption[model][regime] = rate_summary(n - counts["correct"], n)
            classes_by_model[model][regime] = {c: counts[c] for c in CLASSES}
            omissions[model][regime] = rate_summary(counts["omission"], n)
            hops = multihop_in_cell[(model, regime)]
            multihop[model][regime] = rate_summary(hops[True], hops[True] + hops[False])
    pooled, classes = {}, {}
    for regime in regimes:
        n = sum(corruption[model][regime]["n"] for model in models)
        counts = {c: sum(classes_by_model[model][regime][c] for model in models) for c in CLASSES}
        pooled[regime] = rate_summary(n - counts["correct"], n)
        classes[regime] = {**counts, "signature": counts["off_by_one"] + counts["conflation"]}
    ceiling = ceiling_check(corruption, models) if "R0" in regimes else {}
    informative = [m for m in models if ceiling.get(m,
                                                    {}).get("passes")] if ceiling else list(models)
    mcnemar = {"pooled": None, "by_model": {}, "models": informative}
    if "R1" in regimes and "R2" in regimes:
        mcnemar.update(paired_test(primary, "R1", "R2", models, informative))
    guards = analyze_guards(results, models, regimes)
    budget = analyze_budget(results, models, guards)
    guard = budget_guard(budget, regimes, informative or models)
    reasons = label_reasons(results, coverage, task_set, regimes)
    if guard and guard["status"] in ("unmatched", "unknown"):
        # the falsifier is about a matched budget (amendment of 2026-12-01): unmatched or unchecked,
        # it is not read
        reasons.append(guard["text"])
    label = ("UNINFORMATIVE" if ceiling and not informative else "NON-CONFIRMATORY" if reasons
             else "CONFIRMATORY")
    if label == "UNINFORMATIVE":
        failing = ", ".join(f"{m} {pct(c['r0_rate'])}" for m, c in ceiling.items())
        reasons.insert(0, f"no model passed the ceiling check (R0 corruption above "
                          f"{pct(CEILING_MAX_R0_CORRUPTION)}: {failing})")
    return {
        "models": models, "regimes": regimes, "coverage": coverage,
        "complete": not coverage["partial_cells"] and not coverage["duplicates"],
        "smoke": len(coverage["bank_episodes"]) < coverage["task_episodes"],
        "label": label, "label_reasons": reasons, "confirmatory": label == "CONFIRMATORY",
        "simulated": is_simulated(results),
        "task_set": None if task_set is None else {k: task_set[k] for k in ("kind", "sha256",
        "path")},
        "n_episodes": len(coverage["bank_episodes"]), "cells": results.get("cells", {}),
        "ceiling": ceiling, "informative_models": informative, "omissions": omissions,
        "budget_in_band": None if not guard or guard["status"] == "unknown" else guard["status"]
        != "unmatched",
        "budget_guard": guard,
        "corruption": corruption, "pooled": pooled, "classes": classes,
        "classes_by_model": classes_by_model,
        "multihop": multihop, "mcnemar": mcnemar, "budget": budget,
        "retention": analyze_retention(results, models, regime_definitions(results)),
        "guards": guards,
        "lenient": analyze_lenient(primary, models, regimes),
        "server_work": summarize_server_work(results.get("calls"), models, regimes),
        "prompt_cache": (results.get("run") or {}).get("prompt_cache"),
        "prompt_cache_how": (results.get("run") or {}).get("prompt_cache_how"),
        "recheck": results.get("recheck"),
        "definitions": regime_definitions(results),
        "replaced_prompts": {name: d.get("origin") for name,
                             d in regime_definitions(results).items()
                             if name in DEFAULT_REGIMES and d.get("origin",
                             "built-in") != "built-in"},
        "extra": analyze_extra_regimes(primary, models, regimes, informative, pooled, classes,
                                       budget),
        **analyze_variants(table, models, regimes, results),
        "gate": results.get("gate"),
    }


def regime_definitions(results: dict) -> dict:
    """Each regime's summary as the bank records it (built-in ones for banks that do not)."""
    recorded = results.get("regime_definitions") if isinstance(results.get("regime_definitions"),
                                                               dict) else {}
    return {r: recorded.get(r) or (regime_summary(REGIMES[r]) if r in REGIMES else
                                   {"description": "not described by the bank",
                                    "exploratory": True})
            for r in results["regimes"]}


def paired_outcomes(table: dict[str, list], first: str, second: str) -> collections.Counter:
    """How many probes of regime `first` had each ((model, budget, sample), first correct, second
    correct), the second None where `second` lacks the probe; a probe repeated in one regime counts
    once, as its last copy."""
    order = table.get("run_order")
    if order is not None and first in order.regimes and second in order.regimes:
        outcomes: collections.Counter = collections.Counter()
        correct = table["class"]
        for (budget, sample, model, a), (_, _, _, b) in zip(order.blocks(first),
                                                            order.blocks(second)):
            pairs = collections.Counter(zip(equal_to(correct[a:a + order.block], "correct"),
                                            equal_to(correct[b:b + order.block], "correct")))
            for (first_ok, second_ok), n in pairs.items():
                outcomes[((model, budget, sample), first_ok, second_ok)] += n
        return outcomes
    key_fields = ("model", "budget", "sample", "episode", "question_id")
    mine, theirs = (table_where(table, equal_to(table["regime"], regime), (*key_fields, "class"))
                    for regime in (first, second))
    if known_unique(table) and all(mine[field] == theirs[field] for field in key_fields):
        # the same probes in the same order, as runs and the reference bank write them: paired by
        # position
        return collections.Counter(zip(zip(mine["model"], mine["budget"], mine["sample"]),
                                       equal_to(mine["class"], "correct"),
                                       equal_to(theirs["class"], "correct")))

    def correct_by_probe(side: dict[str, list]) -> dict[tuple, bool]:
        keys = zip(side["model"], side["budget"], side["sample"], side["episode"],
                   side["question_id"])
        return dict(zip(keys, equal_to(side["class"], "correct")))

    firsts, seconds = correct_by_probe(mine), correct_by_probe(theirs)
    return collections.Counter(zip(map(operator.itemgetter(0, 1, 2), firsts), firsts.values(),
                                   map(seconds.get, firsts)))


def paired_summary(outcomes: collections.Counter, first: str, second: str, models: list[str],
                   pooled_models: list[str], budget: int | None = None) -> dict:
    """Exact McNemar of `first` against `second` from paired_outcomes, per model and pooled over
    pooled_models, at one budget or (None) all; b = first correct and second wrong, c = the
    reverse."""
    per_model: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for ((model, probe_budget, _), first_ok, second_ok), n in outcomes.items():
        if second_ok is not None and (budget is None or probe_budget == budget):
            per_model[model][(first_ok, second_ok)] += n
    by_model, totals = {}, collections.Counter()
    for model in models:
        pairs = per_model[model]
        b, c, n_pairs = pairs[(True, False)], pairs[(False, True)], sum(pairs.values())
        by_model[model] = mcnemar_counts(b, c, n_pairs, first, second)
        if model in pooled_models:
            totals.update(b=b, c=c, n_pairs=n_pairs)
    return {"pooled": mcnemar_counts(totals["b"], totals["c"], totals["n_pairs"], first, second),
            "by_model": by_model}


def paired_test(table: dict[str, list], first: str, second: str, models: list[str],
                pooled_models: list[str]) -> dict:
    """Exact McNemar of regime `first` against `second` on identical probes of the table, per model
    and pooled over pooled_models."""
    return paired_summary(paired_outcomes(table, first, second), first, second, models,
                          pooled_models)


def analyze_extra_regimes(primary: dict[str, list], models: list[str], regimes: list[str],
                          informative: list[str],
                          pooled: dict, classes: dict, budget: dict) -> dict:
    """Exploratory comparisons of every regime beyond R0-R2: rate, McNemar against R1 and against R2
    with Holm's correction across the family, realized budget against R1/R2, classes."""
    extra = [r for r in regimes if r not in DEFAULT_REGIMES]
    table, family = {}, []
    for regime in extra:
        entry = {"pooled": pooled[regime], "classes": classes[regime], "tests": {}}
        mean = (budget["by_regime"].get(regime) or {}).get("mean")
        entry["tokens_mean"] = mean
        for reference in ("R1", "R2"):
            if reference in regimes:
                test = paired_test(primary, regime, reference, models, informative)["pooled"]
                entry["tests"][reference] = test
                family.append(test)
            ref_mean = (budget["by_regime"].get(reference) or {}).get("mean")
            entry[f"tokens_ratio_{reference}"] = mean / ref_mean if mean and ref_mean else None
        table[regime] = entry
    for test, adjusted in zip(family, holm_adjust([t["p"] for t in family])):
        test["p_holm"] = adjusted
    return table


def wrong_by_episode_and_sample(table: dict[str, list]) -> tuple[dict, dict]:
    """(wrong, probes) per (regime, budget) and episode, and per (regime, budget, sample)."""
    # (regime, budget) -> episode -> (wrong, n)
    by_episode: dict[tuple, dict] = collections.defaultdict(dict)
    # (regime, budget, sample) -> [wrong, n]
    by_sample: dict[tuple, list] = collections.defaultdict(lambda: [0, 0])
    wrong_of = list(map(operator.ne, table["class"], itertools.repeat("correct")))
    order = table.get("run_order")
    if order is not None:
        # block by block: sum each (regime, budget)'s blocks position by position, then per episode
        questions = len(QUESTION_PLAN)
        for regime in order.regimes:
            summed: dict[int, list] = {}
            for budget, sample, _, start in order.blocks(regime):
                block = wrong_of[start:start + order.block]
                summed[budget] = list(map(operator.add, summed[budget],
                                          block)) if budget in summed else block
                by_sample[(regime, budget, sample)][0] += sum(block)
                by_sample[(regime, budget, sample)][1] += order.block
            for budget, positions in summed.items():
                blocks = sum(1 for b, _ in order.variants if b == budget) * len(order.models)
                by_episode[(regime, budget)] = {e: (sum(positions[e * questions:(e + 1)
                    * questions]),
                                                    blocks
                                                    * questions) for e in range(order.n_episodes)}
        return by_episode, by_sample
    tally = collections.Counter(zip(table["regime"], table["budget"], table["sample"],
                                    table["episode"], wrong_of))
    for (regime, budget, sample, episode, wrong), n in tally.items():
        before_wrong, before_n = by_episode[(regime, budget)].get(episode, (0, 0))
        by_episode[(regime, budget)][episode] = (before_wrong + n * wrong, before_n + n)
        by_sample[(regime, budget, sample)][0] += n * wrong
        by_sample[(regime, budget, sample)][1] += n
    return by_episode, by_sample


def analyze_variants(table: dict[str, list], models: list[str], regimes: list[str],
                     results: dict) -> dict:
    """The budget sweep and the repeated samples (both exploratory), from one count of the chosen
    models' probes: wrong and total per (regime, budget, sample, episode). A cell's bootstrap
    interval is the same in both."""
    budgets = results.get("budgets") or [DEFAULT_BUDGET]
    samples = int(results.get("samples") or 1)
    if len(budgets) < 2 and samples < 2:
        # one budget and one sample: the main tables say it all
        return {"sweep": None, "samples": None}
    chosen = table if set(table["model"]) <= set(models) else table_where(table,
        member_of(table["model"], models))
    by_episode, by_sample = wrong_by_episode_and_sample(chosen)
    intervals: dict[tuple, tuple[float, float]] = {}
    if samples > 1:                 # every cell's interval, in one pass of draws
        keys = [key for key in by_episode if key[0] in regimes and key[1] in budgets]
        intervals = dict(zip(keys, clustered_bootstraps([by_episode[key] for key in keys])))

    outcomes = paired_outcomes(chosen, "R1", "R2") if {"R1", "R2"} <= set(regimes) else None
    sweep = {}
    for budget in budgets:
        rows = {}
        for regime in regimes:
            per_episode = by_episode.get((regime, budget), {})
            summary = rate_summary(sum(w for w, _ in per_episode.values()),
                                   sum(n for _, n in per_episode.values()))
            if samples > 1 and per_episode:
                summary["lo"], summary["hi"] = intervals[(regime, budget)]
                summary["interval"] = "bootstrap"
            rows[regime] = summary
        tests = paired_summary(outcomes, "R1", "R2", models, models,
                               budget)["pooled"] if outcomes is not None \
            else None
        sweep[str(budget)] = {"rates": rows, "r1_vs_r2": tests,
                              "exploratory": budget != DEFAULT_BUDGET}
    if samples < 2:
        return {"sweep": sweep, "samples": None}
    table_of_samples = {}
    for budget in budgets:
        for regime in regimes:
            per_episode = by_episode.get((regime, budget))
            if not per_episode:
                continue
            wrong, n = sum(w for w, _ in per_episode.values()), sum(n for _,
                n in per_episode.values())
            lo, hi = intervals[(regime, budget)]
            per_sample = []
            for sample in range(samples):
                sample_wrong, sample_n = by_sample.get((regime, budget, sample), (0, 0))
                per_sample.append(sample_wrong / sample_n if sample_n else None)
            table_of_samples[f"{regime}|{budget}"] = {"regime": regime, "budget": budget,
                                                      "k": wrong, "n": n,
                                                     "rate": wrong / n, "lo": lo, "hi": hi,
                                                     "per_sample": per_sample}
    return {"sweep": sweep, "samples": {"samples": samples,
                                        "temperature": results.get("temperature", TEMPERATURE),
                                        "seed": BOOTSTRAP_SEED, "replicates": BOOTSTRAP_REPLICATES,
                                        "by_regime": table_of_samples}}


def summarize_server_work(calls: list[dict] | None, models: list[str],
                          regimes: list[str]) -> dict | None:
    """Per model and regime: prompt tokens sent, and how many the server evaluated or took from its
    prompt cache, where it said so (calls it did not say it for are counted, never read as 0)."""
    if calls is None:
        return None
    table = {f"{m}|{r}": {"calls": 0, "prompt_tokens": 0, "evaluated": 0, "cached": 0,
                          "unknown_prompt": 0,
                          "unknown_evaluated": 0} for m in models for r in regimes}
    for call in calls:
        row = table.get(f"{call.get('model')}|{call.get('regime')}")
        if row is None:
            continue
        row["calls"] += 1
        sent, evaluated, cached = (call.get("prompt_eval_count"), call.get("prompt_evaluated"),
                                   call.get("prompt_cached"))
        if sent is None:
            row["unknown_prompt"] += 1
        else:
            row["prompt_tokens"] += sent
        if evaluated is None:
            row["unknown_evaluated"] += 1
        else:
            row["evaluated"] += evaluated
            row["cached"] += cached or 0
    return table


def analyze_lenient(table: dict[str, list], models: list[str], regimes: list[str]) -> dict:
    """Diagnostic: omissions a lenient parse (markdown marks tolerated) would have read, per
    regime."""
    table_out = {regime: {"omissions": 0, "lenient_read": 0,
                          "lenient_correct": 0} for regime in regimes}
    chosen = set(models)
    for p in rows_where(table, equal_to(table["class"], "omission")):
        if p["regime"] in table_out and p["model"] in chosen:
            row = table_out[p["regime"]]
            row["omissions"] += 1
            if p.get("lenient_answer") is not None:
                row["lenient_read"] += 1
                row["lenient_correct"] += p.get("lenient_class") == "correct"
    return table_out


def analyze_budget(results: dict, models: list[str], guards: dict | None = None) -> dict:
    """Mean realized compaction tokens per regime, the R1/R2 ratio (pooled and per model), and how
    many of R1's and R2's compactions stopped at their output cap (None where the bank has no
    per-call records)."""
    tokens = results.get("compaction_tokens", {})
    budget = {"by_regime": tokens, "ratio": None, "ratio_by_model": {}, "at_cap": None}
    r1, r2 = tokens.get("R1") or {}, tokens.get("R2") or {}
    if r1.get("mean") and r2.get("mean"):
        budget["ratio"] = r1["mean"] / r2["mean"]
    for model in models:
        m1 = (r1.get("by_model") or {}).get(model, {}).get("mean")
        m2 = (r2.get("by_model") or {}).get(model, {}).get("mean")
        budget["ratio_by_model"][model] = m1 / m2 if m1 and m2 else None
    if len(models) == 1 and budget["ratio_by_model"].get(models[0]) is None:
        # a bank without per-model counts: its one model
        budget["ratio_by_model"][models[0]] = budget["ratio"]
    if guards:
        budget["at_cap"] = {
            regime: {
                "k": sum(guards["by_cell"][f"{m}|{regime}"]["compaction_at_cap"] for m in models),
                "n": sum(guards["by_cell"][f"{m}|{regime}"]["compaction_calls"] for m in models),
            }
            for regime in ("R1", "R2")
            if all(f"{m}|{regime}" in guards["by_cell"] for m in models)
        }
        budget["at_cap_by_model"] = {
            m: {
                regime: {
                    k: guards["by_cell"][f"{m}|{regime}"][f"compaction_{k}"]
                    for k in ("at_cap", "calls")
                }
                for regime in ("R1", "R2")
                if f"{m}|{regime}" in guards["by_cell"]
            }
            for m in models
        }
    return budget


def budget_guard(budget: dict, regimes: list[str], read_on: list[str]) -> dict | None:
    """The matched-budget guard (PROTOCOL.md section 5, amendment of 2026-12-03), applied to each
    model the falsifier is read on (the informative ones), never to a pool that holds models the
    ceiling check left out: "matched", "unmatched" (a model's R1/R2 ratio outside the pinned band),
    "unknown" (a model without token counts) or "capped" (inside the band, but most of a model's
    compactions of R1 or of R2 stopped at their cap, so the budgets match because the states were
    cut); with the line that says so. None without R1 and R2."""
    if not {"R1", "R2"} <= set(regimes):
        return None
    band = BUDGET_RATIO_BAND
    ratios = {m: budget["ratio_by_model"].get(m) for m in read_on}
    shown = "; ".join(f"{m} {r:.3f}" for m, r in ratios.items() if r is not None)
    unknown = [m for m, r in ratios.items() if r is None]
    if unknown:
        return {"status": "unknown", "text": "the matched budget was not checked: the bank holds "
                "no compaction token "
                                             f"counts for R1 or R2 of {', '.join(unknown)}",
                                             "ratios": ratios}
    outside = [m for m, r in ratios.items() if not band[0] <= r <= band[1]]
    if outside:
        return {
            "status": "unmatched",
            "text": "the budgets were not matched: the realized R1/R2 "
            "ratio of mean "
            "compaction tokens is outside the pinned band "
            f"[{band[0]}, {band[1]}] for "
            f"{', '.join(f'{m} ({ratios[m]:.3f})' for m in outside)}",
            "ratios": ratios,
        }
    capped = {}
    for m in read_on:
        at_cap = (budget.get("at_cap_by_model") or {}).get(m) or {}
        over = [f"{r} {c['at_cap']}/{c['calls']}" for r, c in at_cap.items()
                if c["calls"] and c["at_cap"] / c["calls"] > MOSTLY_AT_CAP]
        if over:
            capped[m] = over
    if capped:
        return {"status": "capped", "text": f"the R1/R2 ratio ({shown}) is inside the pinned band "
                "only because most "
                                            "compactions stopped at their "
                                            f"{COMPACTION_NUM_PREDICT}-token cap ("
                                            + "; ".join(f"{m}: {', '.join(c)}" for m,
                                                        c in capped.items()) +
                                            "): states cut at the same cap match whatever each "
                                            "format needed",
                "ratios": ratios}
    return {"status": "matched", "text": "the realized R1/R2 ratio of mean compaction tokens "
            f"({shown}) is inside "
                                         f"the pinned band [{band[0]}, {band[1]}] for every model "
                                         "the falsifier is "
                                         f"read on", "ratios": ratios}


def analyze_retention(results: dict, models: list[str], definitions: dict | None = None) -> dict:
    """Write-time retention per regime and per model and regime, with what P3 and the figures read
    (retention_right)."""
    retention = {}
    for row in results.get("compaction_stage", []):
        if row["model"] not in models or not is_primary(row):
            continue
        for key in (row["regime"], (row["regime"], row["model"])):
            agg = retention.setdefault(key, {"states": 0, "retained": 0, "correct": 0,
                                             "n_entities": 0,
                                             "over_retained": 0, "consistent_correct": 0,
                                             "sentence_states": 0})
            agg["states"] += 1
            for field in ("retained", "correct", "n_entities", "loose_retained", "loose_correct",
                          "sentence_correct"):
                if field in row:
                    agg[field] = agg.get(field, 0) + row[field]
            # a state the bank scored with more right values than names found (the reference's
            # per-line counter
            # did so once: 21 of 20) is flagged, and read as its names found
            agg["over_retained"] += row["correct"] > row["retained"]
            agg["consistent_correct"] += min(row["correct"], row["retained"])
            agg["sentence_states"] += "sentence_correct" in row
    for key, agg in retention.items():
        regime = key if isinstance(key, str) else key[0]
        reader = ((definitions or {}).get(regime) or {}).get("state_reader") or \
            {"R1": "prose", "R2": "typed"}.get(regime, "")
        agg.update(retention_right(agg, reader))
    return {"by_regime": {k: v for k, v in retention.items() if isinstance(k, str)},
            "by_model": {f"{k[1]}|{k[0]}": v for k, v in retention.items() if isinstance(k, tuple)}}


def retention_right(agg: dict, reader: str) -> dict:
    """The right values P3 and the figures read, and by which reader: for prose, the
    sentence-bounded reader when every state has it (the paper's nearest-number heuristic otherwise,
    as in a reference bank); for typed states, the exact lines; never more, in a state, than the
    names found in it."""
    if reader == "prose" and agg["sentence_states"] == agg["states"]:
        return {"right": agg["sentence_correct"], "right_reader": "sentence"}
    return {"right": agg["consistent_correct"], "right_reader": "nearest" if reader
            == "prose" else "lines"}


RIGHT_READERS = {"sentence": "the number nearest the name within the first sentence that names it "
                 "and holds one",
                 "nearest": "the paper's crude heuristic, the number nearest the name's first "
                 "occurrence anywhere",
                 "lines": "exact `NAME = N` lines"}


def analyze_guards(results: dict, models: list[str], regimes: list[str]) -> dict | None:
    """Cap hits, thinking text despite think off, unknown counts and R0 prompt size, from the call
    list."""
    calls = results.get("calls")
    if calls is None:
        return None
    # one pass over the calls (a large bank holds more calls than probes), counting per (model,
    # regime)
    zero = {"compaction_calls": 0, "compaction_at_cap": 0, "answer_calls": 0, "answer_at_cap": 0,
            "thinking_returned": 0, "unknown_output_tokens": 0}
    counts: dict[tuple, dict] = {}
    flagged = 0
    r0_sizes: dict[str, list[int]] = {model: [] for model in models}
    for c in calls:
        if not is_primary(c):
            continue
        key = (c["model"], c["regime"])
        row = counts.get(key)
        if row is None:
            row = counts[key] = dict(zero)
        stage = call_stage(c)
        capped = c.get("done_reason") == "length"
        if stage == "compaction":
            row["compaction_calls"] += 1
            row["compaction_at_cap"] += capped
        elif stage == "answer":
            row["answer_calls"] += 1
            row["answer_at_cap"] += capped
            if key[1] == "R0" and key[0] in r0_sizes and c.get("prompt_eval_count") is not None:
                r0_sizes[key[0]].append(c["prompt_eval_count"])
        if c.get("thinking_chars"):
            row["thinking_returned"] += 1
        if c.get("eval_count") is None:
            row["unknown_output_tokens"] += 1
        if c.get("control_tokens"):
            flagged += 1
    table = {f"{model}|{regime}": counts.get((model, regime),
                                             dict(zero)) for model in models for regime in regimes}

    def size_summary(values: list[int]) -> dict:
        return {"n": len(values), "mean": sum(values) / len(values) if values else None,
                "max": max(values) if values else None}

    pooled = size_summary([v for values in r0_sizes.values() for v in values])
    return {"by_cell": table,
            "r0_prompt_tokens": {**pooled, "by_model": {m: size_summary(v) for m,
                                                        v in r0_sizes.items()}},
            "num_ctx": (results.get("run") or {}).get("num_ctx", NUM_CTX),
            **({"control_token_calls": flagged, "calls": sum(1 for c in calls if is_primary(c))}
               if flagged else {})}


def evaluate_predictions(analysis: dict) -> list[dict]:
    """The pre-registered verdicts (PROTOCOL.md section 3), each with the numbers behind it and,
    under "guards", every validity guard that failed or holds only in part and qualifies it. Models
    that fail the ceiling check are left out and named; with none left, every verdict is withheld.
    The falsifier is read only at a matched budget (amendment of 2026-12-01)."""
    verdicts = []
    regimes = analysis["regimes"]
    informative = analysis["informative_models"]
    excluded = [m for m in analysis["models"] if m not in informative]
    excluded_note = ([f"left out (failed the ceiling check): {', '.join(excluded)}"] if excluded
                     else [])
    ceiling_guard = [f"{', '.join(excluded)} failed the ceiling check and "
                     f"{'is' if len(excluded) == 1 else 'are'} "
                     f"left out"] if excluded else []
    withheld = analysis["label"] == "UNINFORMATIVE"
    if {"R0", "R1", "R2"} <= set(regimes):
        checks, all_hold = [], bool(informative)
        for model in informative:
            rates = {r: analysis["corruption"][model][r]["rate"] for r in ("R0", "R1", "R2")}
            holds = None not in rates.values() and rates["R0"] <= rates["R2"] < rates["R1"]
            all_hold = all_hold and holds
            checks.append(f"{model}: R0 {pct(rates['R0'])} <= R2 {pct(rates['R2'])} < R1 "
                          f"{pct(rates['R1'])} "
                          f"{'holds' if holds else 'fails'}")
        verdicts.append({"id": "P1", "claim": "corruption ordering R0 <= R2 < R1 in every model",
                         "verdict": "confirmed" if all_hold else "not confirmed",
                         "evidence": checks + excluded_note, "guards": ceiling_guard})
    if {"R1", "R2"} <= set(regimes):
        # read on the informative models, as P1 and F are (amendment of 2026-12-03)
        by_model = analysis["classes_by_model"]
        sig1, sig2 = (sum(by_model[m][r]["off_by_one"]
                          + by_model[m][r]["conflation"] for m in informative)
                      for r in ("R1", "R2"))
        verdicts.append({"id": "P2", "claim": "the incident signature (off_by_one + conflation) is "
                         "more frequent "
                         "under prose (R1) than under typed state (R2), pooled over the "
                         "informative models",
                         "verdict": "confirmed" if informative and sig1 > sig2 else "not confirmed",
                         "evidence": [f"signature R1 {sig1} vs R2 {sig2} (probe counts pooled over "
                                      f"{', '.join(informative) or 'no model'})"] + excluded_note,
                         "guards": ceiling_guard})
        p3 = evaluate_p3(analysis["retention"]["by_regime"])
        if p3:
            verdicts.append(p3)
        pooled = analysis["mcnemar"]["pooled"]
        rejected = pooled["p"] < ALPHA and pooled["direction"] == "R2 better"
        directions = [f"{m}: {s['direction']} (b = {s['b']}, c = {s['c']}, p = {fmt_p(s['p'])})"
                      for m, s in analysis["mcnemar"]["by_model"].items() if m in informative]
        # the direction is checked per model (amendment of 2026-12-03): an informative model
        # significantly better
        # under prose is a reversal, and the hypothesis is not supported for it, whatever the pool
        # says
        reversals = [f"{m} is significantly better under prose (b = {s['b']}, c = {s['c']}, p = "
                     f"{fmt_p(s['p'])})"
                     for m, s in analysis["mcnemar"]["by_model"].items()
                     if m in informative and s["p"] < ALPHA and s["direction"] == "R1 better"]
        guard = analysis.get("budget_guard") or {"status": "matched"}
        verdict = "rejected" if rejected else "not rejected"
        test = (f"pooled b = {pooled['b']}, c = {pooled['c']}, p = {fmt_p(pooled['p'])}, "
                f"{pooled['direction']}")
        if reversals:
            verdict = "not rejected: " + "; ".join(reversals)
        if guard["status"] == "unmatched":
            verdict, test = ("not judged: the budgets were not matched",
                             test + " (at unmatched budgets)")
        elif guard["status"] == "unknown":
            verdict = "not judged: the matched budget was not checked"
        verdicts.append({"id": "F", "claim": "falsifier: prose is as good as typed state at "
                         "matched budget "
                         f"(pooled exact McNemar, two-sided, alpha = {ALPHA}; a model "
                         "significantly better under "
                         f"prose keeps it from being rejected)", "verdict": verdict,
                         "evidence": [test] + directions + excluded_note +
                                     ([guard["text"]] if guard["status"] != "matched" else []),
                         "guards": ceiling_guard + ([guard["text"]] if guard["status"]
                                                    != "matched" else [])})
    if withheld:
        for verdict in verdicts:
            verdict["verdict"] = "withheld"
            verdict["evidence"] = ["UNINFORMATIVE: no model passed the ceiling check"]
            verdict["guards"] = []
    return verdicts


def evaluate_p3(ret: dict) -> dict | None:
    """P3 on the right values of the final states (retention_right), saying which reader it rests
    on; where R1 was read by the sentence-bounded reader, the paper's nearest-number heuristic is
    given beside it."""
    if not ("R1" in ret and "R2" in ret and ret["R1"]["n_entities"] and ret["R2"]["n_entities"]):
        return None
    r1, r2 = ret["R1"], ret["R2"]
    share = lambda count, agg: count / agg["n_entities"]   # noqa: E731
    confirmed = share(r2["right"], r2) > share(r1["right"], r1)
    evidence = [f"values retained with the right value: R2 {r2['right']}/{r2['n_entities']} = "
                f"{pct(share(r2['right'], r2))}, R1 {r1['right']}/{r1['n_entities']} = "
                f"{pct(share(r1['right'], r1))}; "
                f"R1 read by {RIGHT_READERS[r1['right_reader']]}"]
    if r1["right_reader"] == "sentence":
        heuristic = share(r1["consistent_correct"], r1)
        other = "confirmed" if share(r2["right"], r2) > heuristic else "not confirmed"
        evidence.append(f"the paper's nearest-number heuristic reads R1 {r1['consistent_correct']}/"
                        f"{r1['n_entities']} = {pct(heuristic)}" +
                        ("" if (other == "confirmed") == confirmed else ", on which P3 would be "
                         f"{other}"))
    for regime, agg in (("R1", r1), ("R2", r2)):
        if agg["over_retained"]:
            evidence.append(f"{regime}: {agg['over_retained']} final state(s) scored with more "
                            "right values than "
                            "names found (the bank's own count, inconsistent); each is read as "
                            "its names found")
    return {"id": "P3", "claim": "exploratory: write-time retention of correct entity values is "
            "higher in the typed "
            "final states (R2) than in the prose ones (R1)", "verdict": "confirmed" if confirmed
            else "not confirmed",
            "reader": r1["right_reader"], "evidence": evidence, "guards": []}
