"""Cells: the cells of a run in their canonical order (the order shards are cut from), a shard's
slice of them, the raw logs they are journalled in, a run's regimes, budgets and samples as its
manifest records them, and the plan of a cell most studies share (a cascade, then its questions). A
cell is a model x regime x episode at a budget, for one sample (records.Cell); the run folder keeps
each one's status."""
from __future__ import annotations

from typing import Iterable

from .inputs import regime_from_record
from .records import ANSWER_NUM_PREDICT, CallSpec, Cell, DEFAULT_BUDGET, Regime, folder_study


def run_regimes(manifest: dict) -> dict[str, Regime]:
    """The regimes of a run as its manifest records them (built-in definitions for older
    manifests)."""
    recorded = manifest.get("regime_definitions") or {}
    built_in = folder_study(manifest).regimes
    return {name: regime_from_record(recorded[name]) if name in recorded else built_in[name]
            for name in manifest["regimes"]}


def run_budgets(manifest: dict) -> list[int]:
    return list(manifest.get("budgets") or [DEFAULT_BUDGET])


def run_samples(manifest: dict) -> int:
    return int(manifest.get("samples") or 1)


def journal_streams(manifest: dict) -> list[tuple[str, str, int, int]]:
    """Every raw log of a run: (model, regime, budget, sample)."""
    return [(m, r, b, s) for b in run_budgets(manifest) for s in range(run_samples(manifest))
            for m in manifest["models"] for r in manifest["regimes"]]


def all_cells(models: Iterable[str], regimes: Iterable[str], n_episodes: int,
              budgets: Iterable[int] = (DEFAULT_BUDGET,), samples: int = 1) -> list[Cell]:
    """Every cell of a run in its canonical order (the order shards are cut from)."""
    return [Cell(m, r, e, b, s) for b in budgets for s in range(samples)
            for m in models for r in regimes for e in range(n_episodes)]


def shard_cells(cells: list, shard: tuple[int, int] | None) -> list:
    """Shard I of N: every N-th cell starting at I-1; the N shards are disjoint and cover every
    cell."""
    if not shard:
        return list(cells)
    index, count = shard
    return [c for i, c in enumerate(cells) if i % count == index - 1]


def calls_per_cell(regime: Regime, n_segments: int, n_questions: int) -> int:
    return (n_segments if regime.compacts else 0) + n_questions


def selected_cells(models: list[str], n_episodes: int, shard, regimes: Iterable[str],
                   budgets: Iterable[int] = (DEFAULT_BUDGET,), samples: int = 1) -> list[Cell]:
    """The cells of a run (or of its shard) in canonical order."""
    return shard_cells(all_cells(models, list(regimes), n_episodes, budgets, samples), shard)


def cascade_plan(regime: Regime, episode: dict, budget: int = DEFAULT_BUDGET,
                 **options) -> list[CallSpec]:
    """The calls of one cell in cascade order: a compaction after every segment (regimes that
    compact), then one answer per question; each call carries its stage and output budget. A study's
    own options do not change it."""
    calls = []
    if regime.compacts:
        calls += [CallSpec(f"compact_{seg['index']}", "compaction", budget, segment=seg["index"])
                  for seg in episode["segments"]]
    calls += [CallSpec(f"question_{q['id']}", "answer", ANSWER_NUM_PREDICT, question_id=q["id"])
              for q in episode["questions"]]
    return calls
