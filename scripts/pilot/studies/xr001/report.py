"""XR-001, report (protocol/PROTOCOL.md section 5): analysis.md and the headline, from the analysis
record only."""
from __future__ import annotations

from ...inputs import budget_words
from ...probes import CLASSES
from ...records import ANSWER_NUM_PREDICT, COMPACTION_NUM_PREDICT, Answer
from ...reports import (confirmatory_note, fmt_mean, fmt_p, fmt_rate, label_consequence, md_table,
    pct, render_recheck_section)
from .design import PROTOCOL_ID
from .analysis import BUDGET_RATIO_BAND, CEILING_MAX_R0_CORRUPTION
from .predictions import RIGHT_READERS, evaluate_predictions


def task_set_line(analysis: dict) -> str:
    task_set = analysis.get("task_set")
    if not task_set:
        return "Task set: not checked (no task file given)."
    kind = {
        "pinned": "the pre-registered task set",
        "external": "external task set",
        "generated": "a generated task set that is not the pre-registered one",
    }[task_set["kind"]]
    return f"Task set: {kind}, sha256 {task_set['sha256']} ({task_set['path']})."


def status_banner(analysis: dict) -> str:
    """The label first, then every reason for it and what it means; the same words in every
    output."""
    label = analysis["label"]
    head = f"{label}: " if label == "CONFIRMATORY" else f"**{label}**: "
    if analysis.get("simulated"):
        head = ("**SIMULATED**: made by the built-in stand-in model (the `demo` command), not by a "
                "language "
                "model; it shows what the tool writes and is never a result. " + head)
    return head + label_explanation(analysis)


def label_explanation(analysis: dict) -> str:
    """Every reason for the label and what it means, as the banner writes them after the label."""
    label, cov = analysis["label"], analysis["coverage"]
    if label == "CONFIRMATORY":
        why = (f"every pre-registered probe is present exactly once ({cov['complete_cells']} "
               f"complete cells, {cov['task_episodes']} episodes). ")
    else:
        why = "; ".join(analysis["label_reasons"]) + ". "
    return why + label_consequence(label) + replaced_prompts_note(analysis)


def replaced_prompts_note(analysis: dict) -> str:
    """Beside the label, when a regime file replaced the prompts of R0, R1 or R2 (a
    replication's)."""
    replaced = analysis.get("replaced_prompts") or {}
    if not replaced:
        return ""
    files = sorted(set(replaced.values()))
    return (f" Prompts: {', '.join(replaced)} ran under the prompts of {', '.join(files)} (a "
            "regime file replacing this protocol's pre-registered prompts), so every verdict is "
            "about those prompts.")


def regime_header(analysis: dict, regime: str) -> str:
    """A regime's column heading; exploratory regimes (not pre-registered) carry a star."""
    return regime + ("*" if (analysis.get("definitions") or {}).get(regime,
        {}).get("exploratory") else "")


def render_corruption_table(analysis: dict) -> str:
    regimes = analysis["regimes"]
    rows = [[m]
            + [fmt_rate(analysis["corruption"][m][r]) for r in regimes] for m in analysis["models"]]
    rows.append(["pooled"] + [fmt_rate(analysis["pooled"][r]) for r in regimes])
    return md_table(["model"] + [regime_header(analysis, r) for r in regimes], rows)


def render_regimes_section(analysis: dict) -> list[str]:
    replaced = analysis.get("replaced_prompts") or {}
    rows = [[regime_header(analysis, r), d.get("description", ""),
             "exploratory" if d.get("exploratory") else
             f"pre-registered, prompts from {replaced[r]}" if r in replaced else "pre-registered"]
            for r, d in analysis["definitions"].items()]
    shown = any(d.get("exploratory") for d in analysis["definitions"].values()) or replaced
    return ["## Regimes", "", md_table(["regime", "what the answers see", "status"], rows), "",
            "A star marks an exploratory regime: shown beside the pre-registered ones, never part "
            "of the "
            "confirmatory test or its label.", ""] if shown else []


def render_extra_section(analysis: dict) -> list[str]:
    extra = analysis["extra"]
    if not extra:
        return []
    rows = []
    # the tests pool the models that pass the ceiling check
    pooled_any = bool(analysis["mcnemar"]["models"])
    for regime, entry in extra.items():
        for reference, test in entry["tests"].items():
            rows.append([regime, fmt_rate(entry["pooled"]), reference] +
                        ([test["b"], test["c"], fmt_p(test["p"]), fmt_p(test["p_holm"]),
                          test["direction"]]
                         if pooled_any else [""] * 5))
    out = ["## Exploratory regimes", "",
           "Not pre-registered: descriptive comparisons only. Each extra regime against R1 and "
           "against R2 on identical probes (exact McNemar, two-sided; b = the extra regime correct "
           "and the reference wrong), with Holm's correction across the whole family of these "
           "tests, pooled over the models that pass the "
           "ceiling check" + ("." if pooled_any else ": none does, so the tests are left empty."),
           "",
           md_table(["regime", "corruption (pooled)", "against", "b", "c", "p", "p (Holm)",
                     "direction"], rows), ""]
    rows = [[r, fmt_mean(e["tokens_mean"]), "n/a" if e["tokens_ratio_R1"] is None
             else f"{e['tokens_ratio_R1']:.3f}",
             "n/a" if e["tokens_ratio_R2"] is None else f"{e['tokens_ratio_R2']:.3f}"] +
            [e["classes"][c] for c in CLASSES] for r, e in extra.items()]
    out += ["Realized budget (mean compaction tokens, n/a for regimes that make no compaction "
            "call) against R1 "
            "and R2, and the class breakdown pooled over models.", "",
            md_table(["regime", "mean tokens", "/ R1", "/ R2", *CLASSES], rows), ""]
    return out


def render_sweep_section(analysis: dict) -> list[str]:
    sweep = analysis["sweep"]
    if not sweep:
        return []
    regimes = analysis["regimes"]
    rows = []
    for budget, entry in sweep.items():
        test = entry["r1_vs_r2"]
        rows.append([f"{budget} ({budget_words(int(budget))} words)"
                     + ("" if entry["exploratory"] else
                                                                        ", pre-registered")]
                    + [fmt_rate(entry["rates"][r]) for r in regimes]
                    + ([f"b = {test['b']}, c = {test['c']}, p = {fmt_p(test['p'])}"] if test
                       else []))
    head = ["compaction budget"] + [regime_header(analysis, r) for r in regimes] + \
        (["R1 vs R2"] if any(e["r1_vs_r2"] for e in sweep.values()) else [])
    intervals = "episode-clustered bootstrap" if analysis["samples"] else "Wilson"
    title = ("Budget sweep (exploratory)" if len(sweep) > 1 else "Corruption over repeated "
             "samples (exploratory)")
    return [f"## {title}", "",
            "Corruption pooled over models at each compaction budget; the output cap and the "
            f"instructed word limit scale together (120 words : 256 tokens). 95% {intervals} "
            "intervals. The confirmatory test "
            f"is read at 256 only; every other budget is exploratory.", "",
            md_table(head, rows), ""]


# up to this many samples, each sample's rate is listed; beyond, their spread is given
SAMPLES_LISTED = 12


def sample_rates_text(rates: list[float | None]) -> str:
    """Each sample's corruption rate, or for many samples the lowest, the median and the highest."""
    if len(rates) <= SAMPLES_LISTED:
        return ", ".join(pct(x) for x in rates)
    known = sorted(x for x in rates if x is not None)
    if not known:
        return f"no sample has probes ({len(rates)} samples)"
    middle = len(known) // 2
    median = known[middle] if len(known) % 2 else (known[middle - 1] + known[middle]) / 2
    missing = len(rates) - len(known)
    return (f"{len(known)} samples: lowest {pct(known[0])}, median {pct(median)}, highest "
            f"{pct(known[-1])}"
            + (f"; {missing} without probes" if missing else ""))


def render_samples_section(analysis: dict) -> list[str]:
    samples = analysis["samples"]
    if not samples:
        return []
    rows = [[e["regime"], e["budget"], f"{e['k']}/{e['n']} = {pct(e['rate'])}",
             f"[{100 * e['lo']:.1f}, {100 * e['hi']:.1f}]",
             sample_rates_text(e["per_sample"])] for e in samples["by_regime"].values()]
    return ["## Repeated samples (exploratory)", "",
            f"{samples['samples']} samples per cell at temperature {samples['temperature']:g}, "
            "each with its own "
            f"recorded seed. Intervals: 95% percentile bootstrap resampling whole episodes, "
            f"{samples['replicates']} replicates, seed {samples['seed']}.", "",
            md_table(["regime", "budget", "corruption, all samples", "95% interval", "each sample"],
                     rows), ""]


def render_md(analysis: dict) -> str:
    """analysis.md: every table of the pre-registered analysis plan, from the analysis record
    only."""
    title = (
        f"SIMULATED {PROTOCOL_ID} analysis (stand-in model, not a result)"
        if analysis.get("simulated")
        else f"{PROTOCOL_ID} analysis"
    )
    return "\n".join([f"# {title}", "", status_banner(analysis), "", render_body(analysis)])


def render_body(analysis: dict, labelled: bool = True) -> str:
    """analysis.md after its title and label banner; labelled=False also leaves out what repeats the
    label (its note before the verdicts, and a withheld verdict's reason): report.html states the
    label once, at its top."""
    regimes, models = analysis["regimes"], analysis["models"]
    # a changed determinism probe is said in the answer, above, and beside the verdicts
    out = []
    out += [task_set_line(analysis), ""]
    out += render_regimes_section(analysis)
    out += ["## Numeric-corruption rate", "",
            "Probes not answered correctly / probes, per model and regime, with 95% Wilson "
            "intervals.", "",
            render_corruption_table(analysis), ""]
    mc = analysis["mcnemar"]
    if mc["pooled"]:
        # with no model past the ceiling check nothing is pooled: the row stays empty rather than
        # reading b = c = 0
        rows = [["pooled", mc["pooled"]["b"], mc["pooled"]["c"], fmt_p(mc["pooled"]["p"]),
                 mc["pooled"]["direction"]]
                if mc["models"] else ["pooled (none: no model passed the ceiling check)", "", "",
                                      "", ""]]
        rows += [[m if m in mc["models"] else f"{m} (uninformative, not pooled)", s["b"], s["c"],
                  fmt_p(s["p"]),
                  s["direction"]] for m, s in mc["by_model"].items()]
        out += ["## Confirmatory test: exact McNemar, R1 vs R2", "",
                "Paired on identical probes, two-sided. b = R1 correct and R2 wrong; c = R2 "
                "correct and R1 wrong. "
                "The pooled test takes the models that pass the ceiling check.",
                "", md_table(["scope", "b", "c", "p", "direction"], rows), ""]
    out += render_validity_section(analysis)
    rows = [[r] + [analysis["classes"][r][c] for c in CLASSES]
            + [analysis["classes"][r]["signature"]]
            for r in regimes]
    out += ["## Corruption classes, pooled over models", "",
            "Precedence: omission, correct, off_by_one, conflation, other_wrong. The incident "
            "signature is the "
            "union off_by_one + conflation.", "",
            md_table(["regime", *CLASSES, "signature"], rows), ""]
    out += render_extra_section(analysis)
    out += render_sweep_section(analysis)
    out += render_samples_section(analysis)
    out += render_budget_section(analysis)
    rows = [[m] + [fmt_rate(analysis["multihop"][m][r],
                            interval=False) for r in regimes] for m in models]
    out += ["## Multi-hop completion", "", "Q7 and Q8 (sums of two entities from different "
            "segments) answered "
            "correctly.", "", md_table(["model"] + regimes, rows), ""]
    out += render_retention_section(analysis)
    out += render_guards_section(analysis)
    out += render_server_work_section(analysis)
    out += render_recheck_section(analysis)
    # the gate (its patterns compiled at import) only for a gated bank
    if analysis.get("gate"):
        from ...gate_report import render_gate_section
        out += render_gate_section(analysis)
    verdicts = evaluate_predictions(analysis)
    if verdicts:
        out += ["## Pre-registered predictions", ""]
        if labelled and not analysis["confirmatory"]:
            note = confirmatory_note(analysis)
            # every reason's lead, as the top gives them
            if analysis["label"] == "NON-CONFIRMATORY":
                leads = [r.split(":")[0] for r in analysis["label_reasons"]]
                leads = [lead for lead in leads if not (analysis.get("simulated") and lead
                                                        == "simulated")] or leads
                note = (note.split("NON-CONFIRMATORY")[0] + "NON-CONFIRMATORY: "
                        + "; ".join(dict.fromkeys(leads)))
            out += [f"{note}. {label_consequence(analysis['label'])}", ""]
        if recheck_note(analysis):
            out += [recheck_note(analysis), ""]
        for v in verdicts:
            # a verdict withheld for the label says only the label: left to the label where it is
            # stated once
            evidence = ("" if not labelled and v["verdict"] == "withheld" else " "
                        + "; ".join(v["evidence"]) + ".")
            out.append(f"- **{v['id']}** ({v['claim']}): **{v['verdict']}**." + evidence)
        out.append("")
    return "\n".join(out)


def render_validity_section(analysis: dict) -> list[str]:
    """The validity guards that can withhold a verdict: ceiling, omissions (the format check),
    budget match."""
    regimes = analysis["regimes"]
    out = ["## Validity guards", ""]
    if analysis["ceiling"]:
        rows = [[m, pct(c["r0_rate"]), "passes" if c["passes"] else "fails: uninformative"]
                for m, c in analysis["ceiling"].items()]
        out += [f"Ceiling check: a model whose R0 corruption (full transcript) is above "
                f"{pct(CEILING_MAX_R0_CORRUPTION)} cannot do the task, and is uninformative about "
                "compaction.", "",
                md_table(["model", "R0 corruption", "ceiling check"], rows), ""]
    else:
        out += ["Ceiling check: not possible, the bank has no R0 cells.", ""]
    rows = [[m] + [fmt_rate(analysis["omissions"][m][r],
                            interval=False) for r in regimes] for m in analysis["models"]]
    out += ["Omissions (the format check): share of answers with no parseable `ANSWER: <integer>` "
            "line; 0% means "
            "every answer kept the format.", "",
            md_table(["model"] + [f"{r} omitted" for r in regimes], rows), ""]
    out += [matched_budget_line(analysis), ""]
    lenient = analysis["lenient"]
    if any(v["lenient_read"] for v in lenient.values()):
        rows = [[r, v["omissions"], v["lenient_read"], v["lenient_correct"]] for r,
                v in lenient.items()]
        out += ["Diagnostic, not part of any metric: omissions that a lenient parse (markdown "
                "marks around "
                "`ANSWER:` or the number) would have read.", "",
                md_table(["regime", "omissions", "read leniently", "of which correct"], rows), ""]
    return out


def matched_budget_line(analysis: dict) -> str:
    """The matched-budget guard: the R1/R2 ratio of each model the falsifier is read on against the
    pinned band, with the share of compactions that stopped at their cap beside it, and what the
    guard does to the label and the falsifier."""
    guard, band = analysis.get("budget_guard"), BUDGET_RATIO_BAND
    if guard is None:
        return "Matched budget: not checked, the bank lacks R1 or R2."
    if guard["status"] == "unknown":
        return (f"Matched budget: {guard['text']}, so the label is NON-CONFIRMATORY and the "
                "falsifier is not judged.")
    ratios = guard.get("ratios") or {}
    per_model = "; ".join(f"{m} {r:.3f}" + ("" if band[0] <= r <= band[1] else " (OUTSIDE)")
                          for m, r in ratios.items() if r is not None)
    pooled = analysis["budget"]["ratio"]
    text = ("Matched budget: realized R1/R2 ratio of mean compaction tokens, per model the "
            "falsifier is read on: "
            f"{per_model}" + (f" (pooled over every model: {pooled:.3f})" if pooled is not None and
                              len(analysis["models"]) > 1 else "") + "; ")
    if guard["status"] == "unmatched":
        text += (f"outside the pinned band [{band[0]}, {band[1]}], so the budgets were not "
                 "matched: the label is NON-CONFIRMATORY and the falsifier is not judged.")
    else:
        text += f"inside the pinned band [{band[0]}, {band[1]}]."
    at_cap = analysis["budget"].get("at_cap")
    if at_cap:
        text += (
            " Compactions that stopped at their "
            + str(COMPACTION_NUM_PREDICT)
            + "-token cap: "
            + ", ".join(
                f"{r} {c['k']}/{c['n']}" + (f" ({pct(c['k'] / c['n'])})" if c["n"] else "")
                for r, c in at_cap.items()
            )
            + "."
        )
    else:
        text += " The bank does not say which compactions stopped at their cap."
    if guard["status"] == "capped":
        text += (" The band is passed only because most compactions were cut at the cap, so it "
                 "does not show that the two formats needed the same budget.")
    return text


def render_budget_section(analysis: dict) -> list[str]:
    budget = analysis["budget"]
    tokens = budget["by_regime"]
    if not tokens:
        return []
    rows = [[r, tokens[r].get("n"), fmt_mean(tokens[r].get("mean")), tokens[r].get("unknown", 0)]
            for r in analysis["regimes"] if r in tokens]
    out = ["## Matched budget: realized compaction tokens", "",
           "Mean output tokens of the compaction calls as the server counted them (cap "
           f"{COMPACTION_NUM_PREDICT} "
           "per call, both regimes). Unknown counts are left out of the means and counted.", "",
           md_table(["regime", "compaction calls", "mean tokens", "unknown counts"], rows), ""]
    if budget["ratio"] is not None:
        out += [f"R1/R2 ratio of mean compaction tokens: {budget['ratio']:.3f}.", ""]
    by_model_rows = []
    for model in analysis["models"]:
        cells = [fmt_mean(((tokens.get(r) or {}).get("by_model") or {}).get(model, {}).get("mean"))
                 for r in ("R1", "R2") if r in tokens]
        ratio = budget["ratio_by_model"].get(model)
        by_model_rows.append([model, *cells, "n/a" if ratio is None else f"{ratio:.3f}"])
    if "R1" in tokens and "R2" in tokens:
        out += [md_table(["model", "R1 mean tokens", "R2 mean tokens", "R1/R2"], by_model_rows), ""]
    guards = analysis["guards"]
    if guards:
        rows = [[key.split("|")[0], key.split("|")[1],
                 f"{g['compaction_at_cap']}/{g['compaction_calls']}",
                 f"{g['answer_at_cap']}/{g['answer_calls']}"] for key,
                 g in guards["by_cell"].items()]
        out += ["Calls that stopped at their output cap (`done_reason` length): compaction at "
                f"{COMPACTION_NUM_PREDICT} tokens, answers at {ANSWER_NUM_PREDICT}.", "",
                md_table(["model", "regime", "compaction at cap", "answers at cap"], rows), ""]
    return out


def right_values_text(agg: dict) -> str:
    """The right values of a retention row (what P3 reads), flagged where the bank counted more
    right values than names found, instead of a share above the names found."""
    text = f"{agg['right']}/{agg['n_entities']} = {pct(agg['right'] / agg['n_entities'])}"
    if agg["over_retained"]:
        text += (f" (flagged: the bank counted {agg['correct']}, more right values than names "
                 f"found in {agg['over_retained']} state(s); each read as its names found)")
    return text


def render_retention_section(analysis: dict) -> list[str]:
    ret = analysis["retention"]["by_regime"]
    if not ret:
        return []
    def method(regime: str) -> str:
        reader = (analysis.get("definitions") or {}).get(regime, {}).get("state_reader") or \
            {"R1": "prose", "R2": "typed"}.get(regime, "")
        if reader.startswith("section:"):
            return f"exact `NAME = N` lines under the {reader[8:]} heading"
        return {"prose": "name anywhere in the state; "
                + RIGHT_READERS[ret[regime]["right_reader"]],
                "typed": RIGHT_READERS["lines"]}.get(reader, reader)

    both = any(agg["right_reader"] == "sentence" for agg in ret.values())
    rows = []
    for regime in analysis["regimes"]:
        if regime in ret and ret[regime]["n_entities"]:
            agg = ret[regime]
            retained = agg["retained"] / agg["n_entities"]
            heuristic = [f"{agg['consistent_correct']}/{agg['n_entities']} = "
                         f"{pct(agg['consistent_correct'] / agg['n_entities'])}"
                         if agg["right_reader"] == "sentence" else "same"] if both else []
            rows.append([regime, agg["states"], f"{agg['retained']}/{agg['n_entities']} = "
                         f"{pct(retained)}",
                         right_values_text(agg), *heuristic, method(regime)])
    out = ["## Write-time retention (exploratory)", "",
           "Entity names found in each final state (retained) and entity values found with the "
           "right value; P3 "
           "reads the right values." + (" Prose states are read by the sentence that names the "
                                        "entity (amendment of 2026-12-01); the paper's "
                                        "nearest-number heuristic is shown beside them "
                                        "for comparison with its table." if both else ""), "",
           md_table(["regime", "final states", "names retained", "values retained correctly",
                     *(["right by the paper's heuristic"] if both else []), "method"], rows), ""]
    loose = ret.get("R2", {})
    if "loose_correct" in loose:
        out += ["Diagnostic, not the metric: a looser reading of R2 (bullets, `NAME: N`, trailing "
                f"text) finds {loose['loose_retained']}/{loose['n_entities']} names, "
                f"{loose['loose_correct']} with the right "
                f"value.", ""]
    return out


def render_guards_section(analysis: dict) -> list[str]:
    guards = analysis["guards"]
    if not guards:
        return []
    out = ["## Guards", ""]
    r0 = guards["r0_prompt_tokens"]
    if r0["n"]:
        out.append(f"- R0 transcript size: answer prompts of {fmt_mean(r0['mean'])} tokens on "
                   f"average, {r0['max']} at most, against num_ctx {guards['num_ctx']}.")
    leaks = sum(g["thinking_returned"] for g in guards["by_cell"].values())
    out.append(f"- Calls that returned thinking text although thinking was turned off: {leaks}.")
    unknown = sum(g["unknown_output_tokens"] for g in guards["by_cell"].values())
    out.append(f"- Calls whose output token count the server did not report: {unknown}.")
    if guards.get("control_token_calls"):
        out.append("- Replies carrying chat-template control tokens (the server's template does "
                   "not match the model, and such replies are noise): "
                   f"{guards['control_token_calls']} of {guards['calls']} calls.")
    return out + [""]


def render_server_work_section(analysis: dict) -> list[str]:
    table = analysis.get("server_work")
    if not table:
        return []
    rows = []
    for key, row in table.items():
        if not row["calls"]:
            continue
        known = row["calls"] - row["unknown_evaluated"]
        evaluated = (f"{row['evaluated']} ({row['cached']} from the cache)" if known
                     else "not reported")
        if known and row["unknown_evaluated"]:
            evaluated += f"; {row['unknown_evaluated']} call(s) not reported"
        sent = str(row["prompt_tokens"]) + (f" ({row['unknown_prompt']} unreported)"
                                            if row["unknown_prompt"] else "")
        rows.append([*key.split("|"), row["calls"], sent, evaluated])
    cache = analysis.get("prompt_cache")
    how = (f"Prompt cache: {cache} ({analysis.get('prompt_cache_how')})." if cache
           else "Prompt cache: not recorded.")
    return ["## Server work: prompt tokens sent and evaluated", "",
            f"{how} Tokens as the server counted them: the prompt sent, and how many of them it "
            "evaluated rather "
            "than reused from its prompt cache (llama.cpp `timings.prompt_n` and `cache_n`; vLLM "
            "`usage.prompt_tokens_details.cached_tokens`; Ollama does not say).", "",
            md_table(["model", "regime", "calls", "prompt tokens sent", "evaluated"], rows), ""]


def recheck_note(analysis: dict) -> str | None:
    """One line beside the verdict when the determinism probe found replies that changed; None
    otherwise."""
    recheck = analysis.get("recheck")
    if not recheck or not recheck.get("changed"):
        return None
    return (f"Determinism probe: {recheck['changed']} of {recheck['sent']} re-sent calls gave a "
            "different reply than the first time, so this server's replies are not reproducible "
            "under this run's settings (prompt cache "
            f"{analysis.get('prompt_cache') or 'not recorded'}); see \"Determinism probe\" below.")


def render_headline(analysis: dict) -> str:
    """The short table printed on stdout at the end of a run."""
    lines = [status_banner(analysis), ""] + ([recheck_note(analysis),
                                              ""] if recheck_note(analysis) else [])
    lines += ["numeric-corruption rate (95% Wilson):", render_corruption_table(analysis)]
    pooled = analysis["mcnemar"]["pooled"]
    if pooled and not analysis["mcnemar"]["models"]:
        lines.append("exact McNemar R1 vs R2, pooled: none (no model passed the ceiling check)")
    elif pooled:
        lines.append(f"exact McNemar R1 vs R2, pooled: b = {pooled['b']}, c = {pooled['c']}, "
                     f"p = {fmt_p(pooled['p'])} ({pooled['direction']})")
    verdicts = evaluate_predictions(analysis)
    if verdicts:
        lines.append("verdicts: " + "; ".join(verdict_with_guards(v) for v in verdicts))
    return "\n".join(lines)


READER_PHRASES = {"sentence": "the sentence that names each entity",
                  "nearest": "the paper's nearest-number heuristic"}


def verdict_with_guards(verdict: dict, sep: str = " ") -> str:
    """A verdict in one phrase, with every validity guard that qualifies it beside it and, for P3,
    its reader."""
    text = f"{verdict['id']}{sep}{verdict['verdict']}"
    if verdict.get("reader") and verdict["verdict"] != "withheld":
        text += " (R1 read by " + READER_PHRASES.get(verdict["reader"], verdict["reader"]) + ")"
    # a guard's lead the verdict already says is not said twice
    if verdict.get("guards"):
        said = [g.split(": ", 1)[1] if ": " in g and g.split(": ",
                                                             1)[0] in verdict["verdict"] else g
                for g in verdict["guards"]]
        text += " [" + "; ".join(said) + "]"
    return text


# The answer every report opens with (reports.answer_md, answer_html): plain sentences from the
# analysis's counts.
REGIME_WORDS = {"R0": "the full transcript", "R1": "prose summaries", "R2": "the typed state block"}
PREDICTION_WORDS = {
    "P1": "the full transcript corrupts no more answers than the typed state block, and the typed "
    "block fewer "
          "than prose, in every model",
    "P2": "prose makes more off-by-one and swapped-value errors (the incident signature) than the "
    "typed state block",
    "P3": "exploratory: the typed final states keep more entity values right than the prose ones",
    "F": "falsifier: prose is as good as the typed state block at a matched budget"}
HEADLINE_FIGURE = "fig_a_corruption.svg"


def answer(analysis: dict) -> Answer:
    """The study's answer in plain sentences (how often each regime corrupted an answer, the paired
    comparison, each prediction by what it says and its verdict), its headline figure, the
    corruption rates, and its label's reasons."""
    regimes = analysis["regimes"]
    order = [r for r in ("R1", "R2") if r in regimes] + [r for r in regimes if r not in ("R1",
        "R2")]
    read_on, left_out = models_read(analysis)
    sentences = []
    rates = rate_phrases(analysis, read_on, order)
    if rates:
        first, *rest = rates
        lead, rate = first.rsplit(" ", 1)
        sentences.append(f"{lead[:1].upper()}{lead[1:]} corrupted {rate} of answers"
                         + (", " + ", ".join(rest) if rest else "")
                         + (f" ({', '.join(read_on)}, the models the verdicts are read on)"
                            if left_out else "") + ".")
    for model in left_out:
        apart = rate_phrases(analysis, [model], order)
        if apart:
            sentences.append(f"{model}, left out by the ceiling check, apart: "
                             + ", ".join(apart) + ".")
    mc = analysis["mcnemar"]
    if mc.get("pooled") and mc.get("models"):
        p = mc["pooled"]
        sentences.append(f"On the same probes prose was worse {p['c']} times and better {p['b']} "
                         f"(exact McNemar p = {fmt_p(p['p'])}; models: {', '.join(mc['models'])}).")
    elif mc.get("pooled"):
        sentences.append("Prose and the typed block are not compared: no model passed the ceiling "
                         "check.")
    verdicts = evaluate_predictions(analysis)
    if verdicts and all(v["verdict"] == "withheld" for v in verdicts):
        sentences.append("Every prediction and the falsifier are withheld: no model passed the "
                         "ceiling check.")
    else:
        sentences += [prediction_sentence(v, analysis) for v in verdicts]
    # what qualifies every verdict goes with them, wherever they are read (the terminal has no label
    # box)
    sentences += [note.strip() for note in (replaced_prompts_note(analysis),
                                            recheck_note(analysis)) if note]
    return Answer(tuple(sentences), HEADLINE_FIGURE, tuple(analysis["label_reasons"]),
                  omission_closing(analysis))


def models_read(analysis: dict) -> tuple[list[str], list[str]]:
    """The models the answer's rates are read on (those that passed the ceiling check, as every
    verdict is; all of them where none passed, since the answer then withholds every verdict), and
    the models left out, whose rates are given apart."""
    models = list(analysis["models"])
    informative = [m for m in analysis.get("informative_models", models) if m in models]
    if not informative:
        return models, []
    return informative, [m for m in models if m not in informative]


def rate_phrases(analysis: dict, models: list[str], order: list[str]) -> list[str]:
    """"prose summaries (R1) 36.4%" per regime, the corrupted answers pooled over `models`."""
    out = []
    for regime in order:
        cells = [analysis["corruption"][m][regime] for m in models]
        n = sum(c["n"] for c in cells)
        if n:
            k = sum(c["k"] for c in cells)
            out.append(f"{REGIME_WORDS.get(regime, 'regime ' + regime)} ({regime}) {pct(k / n)}")
    return out


def omission_closing(analysis: dict) -> tuple[str, ...]:
    """The terminal's word on answers with no parseable ANSWER: line, where they are at least half:
    the corruption rates then count unanswered questions (analysis.md has the table)."""
    cells = [analysis["omissions"][m][r] for m in analysis["models"] for r in analysis["regimes"]]
    omitted, total = sum(c["k"] for c in cells), sum(c["n"] for c in cells)
    if not total or 2 * omitted < total:
        return ()
    share = "every answer" if omitted == total else f"{omitted} of {total} answers"
    return (f"Why: {share} had no parseable `ANSWER: <integer>` line (omitted), and an omitted "
            "answer counts as corrupted: the rates above say the model did not keep the answer "
            "format, not what its states kept (analysis.md, Omissions).",)


def prediction_sentence(verdict: dict, analysis: dict) -> str:
    """One prediction by what it says, then its verdict; a verdict not judged says why once, and a
    model left out by the ceiling check is named."""
    words = PREDICTION_WORDS.get(verdict["id"], verdict["claim"])
    said = verdict["verdict"]
    guard = analysis.get("budget_guard") or {}
    if verdict["id"] == "F" and guard.get("status") in ("unmatched",
                                                        "unknown") and said != "withheld":
        said = "not judged, because " + guard["text"]
    elif verdict["id"] == "F" and guard.get("status",
                                            "matched") != "matched" and said != "withheld":
        said += f" ({guard['text']})"
    elif said == "withheld":
        said = "withheld (no model passed the ceiling check)"
    left_out = [g for g in verdict.get("guards", []) if "ceiling check" in g]
    kind, _, words = words.rpartition(": ")
    lead = "Falsifier" if verdict["id"] == "F" else "Prediction" + (f" ({kind})" if kind else "")
    return f"{lead}: {words}: {said}" + \
        (f" ({'; '.join(left_out)})" if left_out else "") + "."
