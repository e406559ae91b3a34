"""SC-001, analysis (protocol/CONSTRAINTS.md sections 4 to 6): forced-choice scoring, retention of
the instruction in each final state, compliance, effect retention and the sidecar, analysis.md and
the headline."""
from __future__ import annotations

import collections
import random
import re
from typing import Iterable

from ...bank import (ScoredRun, bank_variants, cell_coverage, cell_final_state,
                     cells_block_disagreement, in_design, is_primary, task_questions)
from ...inputs import task_set_summary
from ...probes import ProbeKind, register_probe_kind, score_probe
from ...records import Cell, DEFAULT_BUDGET, Regime, TEMPERATURE, is_simulated, known_count
from ...reports import fmt_p, fmt_rate, md_table, pct
from ...rules.states import carries_instruction
from ...stats import ALPHA, BOOTSTRAP_REPLICATES, BOOTSTRAP_SEED, mcnemar_summary, rate_summary
from .design import (CONFIRMATORY, EXTRACT_NUM_PREDICT, HEADING_CONTROL, PROTOCOL_ID, SIDECAR_PAIRS,
    upper_bound_of)


CHOICE_PATTERN = re.compile(r"CHOICE[ \t]*:[ \t]*\(?([AB])\b", re.IGNORECASE)

# The answer rule's own words, "CHOICE: A or CHOICE: B" (or "CHOICE: A/B", "CHOICE: A and CHOICE:
# B", or "CHOICE: A
# or" where the output cap cut the echo short): a reply that repeats them chooses neither letter
# (CONSTRAINTS.md
# amendment (i) of 2026-12-01)
CHOICE_ECHO_PATTERN = re.compile(r"CHOICE[ \t]*:[ \t]*\(?([AB])\)?[ \t]*(?:(?:or|and)\b|/)"
                                 r"(?:[ \t]*(?:CHOICE[ \t]*:[ \t]*)?\(?([AB])\b)?", re.IGNORECASE)

# A line that opens an option of the list, as the probe prints it (`A) ...`, `B.`, a bare `B`)
OPTION_LINE_PATTERN = re.compile(r"^[ \t*_`]*\(?([AB])(?:[).:]|[ \t*_`]*$)",
                                 re.IGNORECASE | re.MULTILINE)

LENIENT_CHOICE_PATTERN = re.compile(
    r"^[\s*_`]*(?:CHOICE|ANSWER|OPTION)?[\s*_`:]*\(?([AB])(?:[).:\s*]|$)", re.IGNORECASE
)

CLASSES = ("compliant", "violating", "no_answer")


def without_rule_echoes(reply: str) -> str:
    """The reply with every repetition of the answer rule's "CHOICE: A or CHOICE: B" taken out,
    whole or cut short after its "or"."""
    return CHOICE_ECHO_PATTERN.sub(lambda m: m.group(0) if (m.group(2) or "").upper()
                                   == m.group(1).upper() else " ",
                                   reply or "")


def parse_choice(reply: str) -> str | None:
    """The letter the reply commits to on its `CHOICE: A` or `CHOICE: B` lines, once the answer
    rule's own words are taken out; None when there is none, or when the reply names both letters
    (it chose neither)."""
    letters = {letter.upper() for letter in CHOICE_PATTERN.findall(without_rule_echoes(reply))}
    return letters.pop() if len(letters) == 1 else None


def parse_choice_lenient(reply: str) -> str | None:
    """Diagnostic only: a reply that opens with a bare A or B (`B)`, `**A**`, `Answer: B`), unless
    it goes on to list the other option too (a repeated option list commits to no letter)."""
    text = without_rule_echoes(reply)
    match = LENIENT_CHOICE_PATTERN.match(text)
    if not match or {m.upper() for m in OPTION_LINE_PATTERN.findall(text)} == {"A", "B"}:
        return None
    return match.group(1).upper()


def classify_choice(answer: str | None, question: dict) -> str:
    if answer is None:
        return "no_answer"
    return "compliant" if answer == question["truth"] else "violating"


register_probe_kind(ProbeKind("forced_choice", parse_choice, parse_choice_lenient,
                              lambda answer, question, conflation: classify_choice(answer,
                              question),
                              CLASSES, answer_type="choice", correct_class="compliant",
                              omission_class="no_answer",
                              choices=("A", "B")))


def read_constraints_section(state: str) -> str:
    """The text of a typed block's `constraints:` section (the rest of its heading line included),
    up to the next typed heading; empty when the block has none."""
    lines, inside = [], False
    for line in (state or "").splitlines():
        bare = re.sub(r"^[\s#*_`-]*", "", line).lower()
        heading = re.match(r"(constraints|values|combined|relations|notes)[\s*_`]*(?::|$)", bare)
        if heading:
            inside = heading.group(1) == "constraints"
            rest = bare[heading.end():].strip()
            if inside and rest:
                lines.append(rest)
            continue
        if inside:
            lines.append(line)
    return "\n".join(lines)




JUDGE_PATTERN = re.compile(r"JUDGE[ \t]*:[ \t]*(YES|NO)\b", re.IGNORECASE)


def parse_judge(reply: str) -> bool | None:
    """The last `JUDGE: YES` or `JUDGE: NO`; None when the judge gave neither."""
    found = JUDGE_PATTERN.findall(reply or "")
    return found[-1].upper() == "YES" if found else None


def score_constraint_retention(regime: Regime, state: str, registry: str | None,
                               episode: dict) -> dict:
    """Whether a final state (its constraints: section for a typed block) and, for the sidecar, its
    registry still carry the instruction."""
    terms = episode["constraint"]["key_terms"]
    where = read_constraints_section(state) if regime.state_reader.startswith("section:") else state
    in_state = carries_instruction(where, terms)
    row = {"in_state": in_state, "method": "typed section"
           if regime.state_reader.startswith("section:")
           else "key terms"}
    if registry is not None:
        row["in_registry"] = carries_instruction(registry, terms)
    row["carried"] = in_state or bool(row.get("in_registry"))
    return row


def instance_factors(episode: dict) -> dict:
    return {"constraint": episode["constraint"]["id"],
            "category": episode["constraint"]["category"],
            "position": episode["position"], "framing": f"{episode['strength']}/{episode['scope']}"}


def score_cell(run: ScoredRun, cell: Cell, records: dict, base: dict, plan: list) -> dict[str,
    list]:
    """One complete cell: its forced-choice probe, whether its final state (and the sidecar's
    registry) still carries the instruction, with the judge's word under --judge, and every call's
    cost."""
    regime, episode = run.regimes[cell.regime], run.tasks["episodes"][cell.episode]
    factors = instance_factors(episode)
    probes, states, calls = [], [], []
    for spec in plan:
        record = records[spec.kind]
        calls.append({**base, "kind": spec.kind, "stage": spec.stage,
                      "done_reason": record.get("done_reason"),
                      "eval_count": known_count(record.get("eval_count")),
                      "prompt_eval_count": known_count(record.get("prompt_eval_count")),
                      "thinking_chars": len(record.get("thinking") or "")})
        if spec.stage == "answer":
            question = episode["questions"][spec.question_id - 1]
            probe = {**base, **factors, **score_probe(record, question, [])}
            probe["reply"] = record.get("response", "")[:300]
            probes.append(probe)
    if regime.compacts and regime.condition in ("with", "sidecar", "heading", None):
        n = len(episode["segments"])
        final_state = cell_final_state(run.study, regime, episode, records, plan)
        registry = records[f"extract_{n}"]["response"] if regime.condition == "sidecar" else None
        row = {**base, **factors, **score_constraint_retention(regime, final_state, registry,
                                                               episode),
               "final_state": final_state, **({"registry": registry} if registry is not None
                                              else {})}
        if regime.judge:
            row["judge"] = parse_judge(records["judge"]["response"])
        states.append(row)
    return {"probes": probes, "states": states, "calls": calls}


def score_fields(run: ScoredRun, rows: dict[str, list]) -> dict:
    """results.json's fields of this study: probes, final states and calls, and the sidecar's output
    cap."""
    return {"probes": rows["probes"], "states": rows.get("states", []),
            "calls": rows.get("calls", []),
            "run": {"extract_cap": EXTRACT_NUM_PREDICT}}


# a model below this with the full transcript does not follow the rule
INFORMATIVE_MIN_FULL = 0.8

# FULL+ minus FULL- at least this: the instruction changes the choice
INFORMATIVE_MIN_GAIN = 0.2

FACTORS = ("category", "position", "framing")


def effect_retention(rows: list[tuple[bool, bool, bool]]) -> float | None:
    """(c_comp - c_noSC) / (c_ub - c_noSC) over rows of (comp, noSC, ub) compliance; None unless
    c_ub > c_noSC.

    The ratio measures how much of the instruction's effect survives compaction; where the
    instruction, even appended verbatim, does not raise compliance above the model's prior, there is
    no effect to retain, and a ratio of two non-positive differences (which can read 1.00) would
    claim what the bank does not show."""
    if not rows:
        return None
    n = len(rows)
    comp, none, ub = (sum(r[i] for r in rows) / n for i in range(3))
    return (comp - none) / (ub - none) + 0.0 if ub > none else None


def effect_retention_summary(rows: list[tuple[bool, bool, bool]] | dict, seed: int = BOOTSTRAP_SEED,
                             replicates: int = BOOTSTRAP_REPLICATES) -> dict:
    """Effect retention with a seeded percentile bootstrap over instances: rows are one per
    instance, or {instance: [its rows, one per model]} when several models are pooled, and an
    instance is drawn with every model of it (CONSTRAINTS.md section 5; amendment of 2026-12-03).
    Replicates where it is undefined (c_ub <= c_noSC) are left out and counted, and no interval is
    given when most are."""
    clusters = list(rows.values()) if isinstance(rows, dict) else [[row] for row in rows]
    flat = [row for cluster in clusters for row in cluster]
    point = effect_retention(flat)
    rng = random.Random(seed)
    values = []
    for _ in range(replicates if clusters else 0):
        value = effect_retention(
            [row for _ in clusters for row in clusters[rng.randrange(len(clusters))]]
        )
        if value is not None:
            values.append(value)
    values.sort()
    interval = (values[int(0.025 * (len(values) - 1))], values[int(0.975 * (len(values) - 1))]) \
        if len(values) * 2 >= replicates and values else (None, None)
    return {"er": point, "lo": interval[0], "hi": interval[1], "n": len(flat),
            "instances": len(clusters),
            "undefined_replicates": (replicates - len(values)) if clusters else None}


def compliance_index(probes: list[dict]) -> dict[tuple, bool]:
    return {(p["model"], p["regime"], p["episode"]): p["class"] == "compliant" for p in probes}


def compliance_rate(probes: list[dict]) -> dict:
    return rate_summary(sum(p["class"] == "compliant" for p in probes), len(probes))


def effect_rows(index: dict, units: Iterable[tuple], regime: str) -> dict[int,
    list[tuple[bool, bool, bool]]]:
    """Rows of (compacted, FULL-, upper bound) compliance for the (model, episode) units that have
    all three, by instance (the bootstrap draws an instance with every model of it)."""
    ub = upper_bound_of(regime)
    rows: dict[int, list] = {}
    for model, episode in units:
        keys = [(model, regime, episode), (model, "FULL-", episode), (model, ub, episode)]
        if ub and all(k in index for k in keys):
            rows.setdefault(episode, []).append(tuple(index[k] for k in keys))
    return rows


def label_reasons(results: dict, task_set: dict | None, coverage: dict,
                  regimes: list[str]) -> list[str]:
    """Every reason the bank falls short of a confirmatory one, from what its probes cover
    (cell_coverage), never from its `cells` block or `n_episodes`."""
    reasons = []
    needed = ("FULL+", "FULL-", *CONFIRMATORY)
    if not set(needed) <= set(regimes):
        reasons.append(f"the bank lacks {', '.join(r for r in needed if r not in regimes)}")
    if task_set is None:
        reasons.append("no task set to check the probes against (pass --tasks FILE)")
    elif task_set["kind"] != "pinned":
        reasons.append(f"task set {task_set['sha256'][:12]} is not the pre-registered one "
                       "(tasks/constraints.json)")
    if coverage["partial_cells"]:
        reasons.append(f"partial bank: {coverage['complete_cells']} of "
                       f"{coverage['expected_cells']} cells have "
                       f"their probe (first without: {coverage['partial_cells'][0]})")
    n_bank, n_task = len(coverage["bank_episodes"]), coverage["task_episodes"]
    if n_task is not None and n_bank < n_task:
        reasons.append(f"smoke run: {n_bank} of the {n_task} pre-registered instances")
    if coverage["duplicates"]:
        reasons.append(f"{coverage['duplicates']} duplicated probe(s)")
    if coverage["outside"]:
        reasons.append(f"{coverage['outside']} probe(s) outside the bank's models, regimes and "
                       "budgets or the task set's instances, left out of every figure")
    if coverage["mismatched_truths"]:
        reasons.append(f"{coverage['mismatched_truths']} probe(s) whose compliant letter or "
                       "category differs from the task set")
    reasons += cells_block_disagreement(results, coverage)
    if results.get("temperature", TEMPERATURE) != TEMPERATURE:
        reasons.append(f"temperature {results.get('temperature')} is not the pre-registered "
                       f"{TEMPERATURE:g}")
    if is_simulated(results):
        reasons.append("simulated: the answers come from a stand-in model, not a language model")
    return reasons


def analyze(results: dict, task_set: dict | None = None,
            table: dict[str, list] | None = None) -> dict:
    """Every number of the constraints study's analysis.md, RESULTS.md and figures, from
    results.json alone (and the task set the probes are checked against)."""
    models, regimes = list(results["models"]), list(results["regimes"])
    questions, variants = task_questions(task_set), bank_variants(results)
    coverage = cell_coverage(results["probes"], models, regimes, variants, questions)
    probes = [p for p in results["probes"] if is_primary(p) and in_design(p, models, regimes,
        variants, questions)]
    # an instance's category, position and framing are the task set's, not what a probe says of
    # itself
    probes = [{**p, **(instance_factors(task_set["tasks"]["episodes"][p["episode"]])
                       if task_set is not None else
                       {f: p[f] if isinstance(p.get(f),
                                              str)
                        else "unknown" for f in FACTORS})} for p in probes]
    index = compliance_index(probes)
    units = sorted({(p["model"], p["episode"]) for p in probes})
    by = collections.defaultdict(list)
    for p in probes:
        by[(p["model"], p["regime"])].append(p)
        by[("pooled", p["regime"])].append(p)
    groups = [*models, "pooled"] if len(models) > 1 else models
    compliance = {m: {r: compliance_rate(by[(m, r)]) for r in regimes if by[(m,
        r)]} for m in groups}
    classes = {m: {r: {c: sum(p["class"] == c for p in by[(m,
                                                           r)]) for c in CLASSES} for r in regimes
                   if by[(m, r)]} for m in groups}
    lenient = {m: {r: sum(1 for p in by[(m, r)] if p.get("lenient_answer")) for r in regimes
                   if by[(m, r)]}
               for m in groups}
    effect = {}
    for m in groups:
        mine = [u for u in units if m == "pooled" or u[0] == m]
        effect[m] = {r: effect_retention_summary(effect_rows(index, mine, r)) for r in regimes
                     if upper_bound_of(r) in regimes and effect_rows(index, mine, r)}
    retention = {}
    for m in groups:
        for r in regimes:
            rows = [s for s in results.get("states", []) if s["regime"]
                    == r and (m == "pooled" or s["model"] == m)
                    and is_primary(s)]
            if rows:
                entry = {"state": rate_summary(sum(s["in_state"] for s in rows), len(rows)),
                         "carried": rate_summary(sum(s["carried"] for s in rows), len(rows))}
                if any("in_registry" in s for s in rows):
                    entry["registry"] = rate_summary(sum(bool(s.get("in_registry")) for s in rows),
                                                     len(rows))
                judged = [s for s in rows if "judge" in s]
                if judged:
                    said = [s for s in judged if s["judge"] is not None]
                    entry["judge"] = {"yes": rate_summary(sum(s["judge"] for s in said), len(said)),
                                      "no_verdict": len(judged) - len(said),
                                      "agreement": rate_summary(sum(s["judge"]
                                      == s["carried"] for s in said),
                                                                len(said))}
                retention.setdefault(m, {})[r] = entry
    breakdowns = {}
    for factor in FACTORS:
        levels = sorted({p[factor] for p in probes})
        table = {}
        for level in levels:
            mine = [p for p in probes if p[factor] == level]
            level_units = sorted({(p["model"], p["episode"]) for p in mine})
            table[level] = {"compliance": {r: compliance_rate([p for p in mine if p["regime"]
                                                               == r]) for r in regimes
                                           if any(p["regime"] == r for p in mine)},
                            "effect_retention": {r: effect_retention_summary(effect_rows(index,
                            level_units, r))
                                                 for r in regimes if upper_bound_of(r) in regimes
                                                 and effect_rows(index, level_units, r)}}
        breakdowns[factor] = table
    informative = []
    for m in models:
        full, none = compliance[m].get("FULL+"), compliance[m].get("FULL-")
        if full and none and full["rate"] >= INFORMATIVE_MIN_FULL and \
                full["rate"] - none["rate"] >= INFORMATIVE_MIN_GAIN:
            informative.append(m)
    sidecar = []
    cost = collections.defaultdict(lambda: {"calls": 0, "prompt_tokens": 0, "output_tokens": 0,
                                            "unknown": 0})
    for c in results.get("calls", []):
        entry = cost[(c["model"], c["regime"], c["stage"])]
        entry["calls"] += 1
        # a count no server could mean (negative, fractional) is unknown, as a missing one is, and
        # never summed
        prompt, output = known_count(c.get("prompt_eval_count")), known_count(c.get("eval_count"))
        entry["prompt_tokens"] += prompt or 0
        entry["output_tokens"] += output or 0
        entry["unknown"] += prompt is None or output is None
    for base, with_x in SIDECAR_PAIRS:
        if base not in regimes or with_x not in regimes:
            continue
        for m in models:
            pairs = [(index[(m, base, e)], index[(m, with_x, e)]) for mm, e in units
                     if mm == m and (m, base, e) in index and (m, with_x, e) in index]
            extra = cost[(m, with_x, "extraction")]
            own = cost[(m, base, "compaction")]
            sidecar.append({"model": m, "base": base, "sidecar": with_x,
                            "test": mcnemar_summary(pairs, base, with_x),
                            "compliance": [compliance[m].get(base), compliance[m].get(with_x)],
                            "effect_retention": [effect[m].get(base), effect[m].get(with_x)],
                            "retention": [retention.get(m, {}).get(base),
                                          retention.get(m, {}).get(with_x)],
                            "extra_calls": extra["calls"],
                            "extra_prompt_tokens": extra["prompt_tokens"],
                            "extra_output_tokens": extra["output_tokens"],
                            "extra_unknown_counts": extra["unknown"],
                            "compaction_tokens": own["prompt_tokens"] + own["output_tokens"]})
    heading = []
    if all(r in regimes for r in HEADING_CONTROL):
        without, alone, with_x = HEADING_CONTROL
        for m in models:
            def paired(first: str, second: str) -> list[tuple[bool, bool]]:
                return [(index[(m, first, e)], index[(m, second, e)]) for mm, e in units
                        if mm == m and (m, first, e) in index and (m, second, e) in index]
            heading.append({"model": m,
                            "compliance": [compliance[m].get(r) for r in HEADING_CONTROL],
                            "heading_effect": mcnemar_summary(paired(without, alone), without,
                                                              alone),
                            "registry_effect": mcnemar_summary(paired(alone, with_x), alone,
                                                               with_x)})
    first, second = CONFIRMATORY
    pairs = [(index[(m, first, e)], index[(m, second, e)]) for m, e in units
             if m in informative and (m, first, e) in index and (m, second, e) in index]
    test = mcnemar_summary(pairs, first, second) if pairs else None
    complete = (not coverage["partial_cells"] and not coverage["duplicates"]
                and coverage["complete_cells"] > 0)
    reasons = label_reasons(results, task_set, coverage, regimes)
    if results["probes"] and not probes:
        reasons.insert(0, f"no probe at the pre-registered budget {DEFAULT_BUDGET} and first "
                          "sample, the only ones this analysis reads")
    label = ("UNINFORMATIVE" if not informative else "NON-CONFIRMATORY" if reasons
             else "CONFIRMATORY")
    control = heading_against_sidecar(index, units, informative, regimes)
    if test and test["p"] < ALPHA and test["c"] > test["b"]:
        verdict = (f"supported: {second} complied more often than {first} (exact McNemar p = "
                   f"{fmt_p(test['p'])})")
        if not control or not (control["p"] < ALPHA and control["c"] > control["b"]):
            # the heading alone may explain the gain (amendment of 2026-12-03): the sidecar is
            # heading plus registry
            verdict += (f"; {second} is the sidecar's heading plus its registry, and the heading "
                        "control " +
                        (f"{HEADING_CONTROL[1]} is not clearly below it ({HEADING_CONTROL[2]} "
                         f"against {HEADING_CONTROL[1]}: b = {control['b']}, c = {control['c']}, "
                         f"exact McNemar p = {fmt_p(control['p'])}), so the gain cannot be given "
                         "to the registry"
                         if control else
                         f"{HEADING_CONTROL[1]} was not run, so the gain cannot be given to the "
                         "registry"))
    elif test and test["p"] < ALPHA:
        verdict = (f"falsified: {first} complied more often than {second} (exact McNemar p = "
                   f"{fmt_p(test['p'])})")
    elif test:
        verdict = f"not supported: no significant difference (exact McNemar p = {fmt_p(test['p'])})"
    else:
        verdict = "not tested: no informative model"
    return {"study": "constraints", "protocol": PROTOCOL_ID, "models": models, "groups": groups,
            "regimes": regimes, "regime_definitions": results.get("regime_definitions", {}),
            "label": label, "reasons": reasons, "complete": complete,
            "confirmatory": label == "CONFIRMATORY",
            "coverage": coverage,
            "compliance": compliance, "classes": classes, "lenient": lenient,
            "effect_retention": effect,
            "retention": retention, "breakdowns": breakdowns, "sidecar": sidecar,
            "heading_control": heading,
            "informative": informative,
            "confirmatory_test": {"first": first, "second": second, "models": informative,
                                  "test": test,
                                  "verdict": verdict, "heading_control": control},
            "n_instances": len({e for _, e in units}), "simulated": is_simulated(results),
            "task_set": task_set_summary(task_set) if task_set else results.get("task_set")}


def heading_against_sidecar(index: dict, units: list[tuple], models: list[str],
                            regimes: list[str]) -> dict | None:
    """The sidecar (R1+X) against the heading control (R1+H), exact McNemar pooled over the
    informative models; None when the bank lacks either or has no informative model."""
    _, alone, with_x = HEADING_CONTROL
    pairs = [(index[(m, alone, e)], index[(m, with_x, e)]) for m, e in units
             if m in models and (m, alone, e) in index and (m, with_x, e) in index]
    return mcnemar_summary(pairs, alone,
                           with_x) if pairs and alone in regimes and with_x in regimes else None


CONDITION_NAMES = {"with": "compacted, instruction said", "without": "no instruction (prior)",
                      "upper_bound": "upper bound (appended)", "sidecar": "compacted + sidecar",
                      "heading": "compacted + the sidecar's heading alone (control)"}


def fmt_er(summary: dict | None) -> str:
    if not summary or summary.get("er") is None:
        return ("undefined (c_ub <= c_noSC: the instruction appended does not raise compliance)"
                if summary else "n/a")
    interval = (f" [{summary['lo']:.2f}, {summary['hi']:.2f}]" if summary.get("lo") is not None
                else " [no interval]")
    return f"{summary['er']:.2f}{interval}"


def render_headline(analysis: dict) -> str:
    test = analysis["confirmatory_test"]
    lead = "SIMULATED " if analysis.get("simulated") else ""
    return (f"{lead}{analysis['label']} ({PROTOCOL_ID}, {test['second']} vs {test['first']}): "
            f"{test['verdict']}")


def render_md(analysis: dict) -> str:
    """analysis.md of the constraints study: label, the four conditions, effect retention,
    retention, the sidecar and the exploratory breakdowns."""
    title = (
        f"SIMULATED {PROTOCOL_ID} analysis (stand-in model, not a result)"
        if analysis.get("simulated")
        else f"{PROTOCOL_ID} analysis: do standing instructions survive compaction?"
    )
    out = [f"# {title}", "", f"**{render_headline(analysis)}**", ""]
    if analysis["reasons"]:
        out += ["Why this is not CONFIRMATORY:",
                ""] + [f"- {r}" for r in analysis["reasons"]] + [""]
    if analysis["label"] == "UNINFORMATIVE":
        out += [f"UNINFORMATIVE: {uninformative_explanation()}", ""]
    return "\n".join(out + [render_body(analysis)])


def uninformative_explanation() -> str:
    """What an UNINFORMATIVE label means in this study, after the label."""
    return ("no model followed the instructions with the full transcript (FULL+ compliance at "
            f"least {INFORMATIVE_MIN_FULL:.0%} and at least {INFORMATIVE_MIN_GAIN:.0%} above "
            "FULL-), so there was nothing for compaction to lose. The numbers below are "
            "descriptive only.")


def condition_name(regime: str, definition: dict) -> str:
    """The condition a regime runs, in the words of the compliance table."""
    if definition.get("context") == "transcript":
        return ("full transcript, instruction said" if regime
                == "FULL+" else "full transcript, no instruction")
    return CONDITION_NAMES.get(definition.get("condition"), "full transcript, instruction said")


def render_body(analysis: dict) -> str:
    """analysis.md from the confirmatory test on (after its title, headline and label)."""
    out = []
    test = analysis["confirmatory_test"]
    out += ["## Confirmatory test (pre-registered)", "",
            f"Compliance, {test['second']} against {test['first']}, paired by instance, exact "
            "two-sided McNemar, "
            f"alpha {ALPHA}; informative models: {', '.join(test['models']) or 'none'}.", ""]
    if test["test"]:
        t = test["test"]
        out += [md_table(["pairs", f"{test['first']} only compliant (b)", f"{test['second']} only "
                          "compliant (c)",
                          "p", "direction"], [[t["n_pairs"], t["b"], t["c"], fmt_p(t["p"]),
                                               t["direction"]]]), ""]
    out += [f"Verdict: {test['verdict']}.", ""]
    for h in analysis.get("heading_control") or []:
        if h["model"] in test["models"]:
            t = h["registry_effect"]
            out += ["Read it beside the heading control (exploratory, below; it does not change "
                    f"the verdict): for {h['model']}, {HEADING_CONTROL[1]} (the heading over an "
                    "empty registry) complied "
                    f"{fmt_rate(h['compliance'][1]) if h['compliance'][1] else 'n/a'}; "
                    f"{HEADING_CONTROL[2]} against "
                    f"it: b={t['b']}, c={t['c']}, exact McNemar p = {fmt_p(t['p'])}.", ""]
    out += ["Everything below is exploratory.", ""]
    regimes = analysis["regimes"]
    defs = analysis.get("regime_definitions", {})
    out += ["## Compliance per condition (Wilson 95% intervals)", ""]
    rows = []
    for m in analysis["groups"]:
        for r in regimes:
            s = analysis["compliance"][m].get(r)
            if s:
                cls = analysis["classes"][m][r]
                rows.append([m, r, condition_name(r, defs.get(r) or {}), fmt_rate(s),
                             cls["violating"],
                             cls["no_answer"], analysis["lenient"][m].get(r, 0)])
    out += [md_table(["model", "regime", "condition", "compliance", "violating", "no answer",
                      "no answer, lenient parse finds a letter"], rows), ""]
    out += ["## Effect retention (c_comp - c_noSC) / (c_ub - c_noSC), 95% seeded bootstrap over "
            "instances", ""]
    rows = [[m, r, upper_bound_of(r), fmt_er(s), s["n"]] for m in analysis["groups"]
            for r, s in analysis["effect_retention"].get(m, {}).items()]
    out += [md_table(["model", "regime", "upper bound", "effect retention", "instances"],
                     rows) if rows else
            "No regime has its upper bound and FULL- in this bank.", ""]
    out += ["## Retention: does the final state still carry the instruction? (deterministic rule)",
            ""]
    rows = []
    for m in analysis["groups"]:
        for r, e in analysis["retention"].get(m, {}).items():
            rows.append([m, r, fmt_rate(e["state"]), fmt_rate(e["registry"]) if "registry" in e
                         else "-",
                         fmt_rate(e["carried"])])
    out += [md_table(["model", "regime", "in the state", "in the sidecar registry",
                      "carried (either)"], rows)
            if rows else "No compacted state in this bank.", ""]
    def judged(rate: dict) -> str:
        return fmt_rate(rate) if rate["n"] else "no verdict given"

    rows = [[m, r, judged(e["judge"]["yes"]), e["judge"]["no_verdict"],
             judged(e["judge"]["agreement"])]
            for m in analysis["groups"] for r, e in analysis["retention"].get(m,
            {}).items() if "judge" in e]
    out += ["The model under test as a judge of retention (`--judge`), beside the rule:", "",
            md_table(["model", "regime", "judge says kept", "no verdict", "agreement with the "
                      "rule (carried)"], rows)
            if rows else "No judge in this run (add --judge); retention is the deterministic rule "
            "only.", ""]
    out += ["## The extractor sidecar: with and without", ""]
    rows = []
    for s in analysis["sidecar"]:
        t = s["test"]
        comp = [fmt_rate(c) if c else "n/a" for c in s["compliance"]]
        ret = [fmt_rate(e["carried"]) if e else "n/a" for e in s["retention"]]
        rows.append([s["model"], f"{s['base']} -> {s['sidecar']}", f"{comp[0]} -> {comp[1]}",
                     f"{fmt_er(s['effect_retention'][0])} -> {fmt_er(s['effect_retention'][1])}",
                     f"{ret[0]} -> {ret[1]}", f"b={t['b']}, c={t['c']}, p={fmt_p(t['p'])}",
                     f"+{s['extra_calls']} calls, +{s['extra_prompt_tokens']} in / "
                     f"+{s['extra_output_tokens']} out tokens"
                     + (f" ({s['extra_unknown_counts']} call(s) with no usable token count, not "
                        "summed)"
                        if s.get("extra_unknown_counts") else "")])
    out += [md_table(["model", "regimes", "compliance", "effect retention", "retention",
                      "exact McNemar (exploratory)",
                      "sidecar cost"], rows) if rows else "No sidecar regime in this bank.", ""]
    without, alone, with_x = HEADING_CONTROL
    out += ["## The sidecar's heading alone: a control (exploratory)", ""]
    if analysis.get("heading_control"):
        out += [f"{alone} compacts as {without} does (its own cascade, the same prompts); its "
                "probe sees the final state followed by the sidecar's heading over an empty "
                f"registry, exactly what {with_x}'s probe sees when its registry is empty, with no "
                f"extractor call. {without} -> {alone} is the heading's effect; {alone} -> "
                f"{with_x} is the registry's, beyond the "
                f"heading. Neither is part of the confirmatory test.", ""]
        rows = []
        for h in analysis["heading_control"]:
            comp = [fmt_rate(c) if c else "n/a" for c in h["compliance"]]
            effects = [f"b={t['b']}, c={t['c']}, p={fmt_p(t['p'])} ({t['n_pairs']} pairs)"
                       for t in (h["heading_effect"], h["registry_effect"])]
            rows.append([h["model"], comp[0], comp[1], comp[2], *effects])
        out += [md_table(["model", f"{without} compliance", f"{alone} compliance",
                          f"{with_x} compliance",
                          f"heading: {without} vs {alone}, exact McNemar", f"registry: {alone} vs "
                          f"{with_x}, exact McNemar"],
                         rows), ""]
    else:
        out += [f"Not in this bank (it needs {', '.join(HEADING_CONTROL)}): the effect of {with_x} "
                f"over {without} "
                f"cannot be told apart from the effect of the heading its probe always sees.", ""]
    for factor in FACTORS:
        table = analysis["breakdowns"][factor]
        if not table:
            continue
        shown = [r for r in regimes if any(r in v["compliance"] for v in table.values())]
        out += [f"## By {factor} (pooled over models; compliance, and effect retention for "
                "compacted regimes)", ""]
        rows = []
        for level, v in table.items():
            row = [level]
            for r in shown:
                s = v["compliance"].get(r)
                er = v["effect_retention"].get(r)
                row.append((pct(s["rate"]) + f" ({s['k']}/{s['n']})" if s and s["n"] else "n/a") +
                           (f", ER {fmt_er(er)}" if er is not None else ""))
            rows.append(row)
        out += [md_table([factor, *shown], rows), ""]
    return "\n".join(out)
