"""XR-001, analysis (protocol/PROTOCOL.md sections 5 and 5b): the labels, the ceiling check, the
confirmatory test, the matched-budget guard and the exploratory analyses, from results.json and the
task set. Scoring a run folder is scoring.py's, the coverage of a bank by its probes coverage.py's
and the predictions' verdicts predictions.py's."""
from __future__ import annotations

import collections
import itertools
import operator

from ...bank import (bank_variants, call_stage, cells_block_disagreement, class_tallies, equal_to,
                     is_primary, known_unique, member_of, primary_table, probe_table,
                     regime_summary, rows_where, table_where)
from ..episodes import QUESTION_PLAN
from ...probes import CLASSES
from ...prompts import REGIMES
from ...records import COMPACTION_NUM_PREDICT, DEFAULT_BUDGET, NUM_CTX, TEMPERATURE, is_simulated
from ...reports import pct
from ...stats import (BOOTSTRAP_REPLICATES, BOOTSTRAP_SEED, clustered_bootstraps, holm_adjust,
                      mcnemar_counts, rate_summary)
from .coverage import probe_coverage
from .design import DEFAULT_REGIMES, N_EPISODES
# re-exported for the callers that reach them here, as they did before scoring and predictions
# had modules of their own
from .predictions import evaluate_predictions  # noqa: F401
from .scoring import score_retention  # noqa: F401


# Validity guards, pinned by the amendment of 2026-11-30 (PROTOCOL.md sections 5 and 7).
CEILING_MAX_R0_CORRUPTION = 0.5        # a model above this on R0 cannot do the task: uninformative

# realized R1/R2 mean compaction tokens outside it: budgets not matched
BUDGET_RATIO_BAND = (0.8, 1.25)

# above this share of R1's or R2's compactions at the cap, a match is qualified
MOSTLY_AT_CAP = 0.5

LABELS = ("CONFIRMATORY", "NON-CONFIRMATORY", "UNINFORMATIVE")


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
                       f"probes (first: {coverage['primary_partial_cells'][0]})")
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
                       "regimes, episodes or questions")
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
            f"ratio of mean compaction tokens is outside the pinned band [{band[0]}, {band[1]}] "
            f"for {', '.join(f'{m} ({ratios[m]:.3f})' for m in outside)}",
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
                f"only because most compactions stopped at their {COMPACTION_NUM_PREDICT}-token "
                "cap ("
                                            + "; ".join(f"{m}: {', '.join(c)}" for m,
                                                        c in capped.items()) +
                                            "): states cut at the same cap match whatever each "
                                            "format needed",
                "ratios": ratios}
    return {"status": "matched", "text": "the realized R1/R2 ratio of mean compaction tokens "
            f"({shown}) is inside the pinned band [{band[0]}, {band[1]}] for every model the "
            "falsifier is "
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
