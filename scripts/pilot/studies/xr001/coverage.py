"""XR-001, coverage (protocol/PROTOCOL.md section 5, what the labels check first): what a bank's
probes cover against the task set they claim (cells complete, missing, duplicated and extra probes,
truths that differ from the task file), read block by block when the probes lie in the order runs
write them (RunOrder; the study's run-order hook, Study.run_order)."""
from __future__ import annotations

import collections
import dataclasses
import itertools
import operator
from typing import Iterable

from ...bank import distinct_probes, member_of
from ..episodes import QUESTION_PLAN
from ...records import DEFAULT_BUDGET
from ...runfolder import cell_key
from .design import DEFAULT_REGIMES, N_EPISODES


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
