"""SC-001, figures (protocol/CONSTRAINTS.md section 6): compliance per condition and the final
states that still carry the instruction, and report.html, from the analysis alone (RESULTS.md is the
shared one)."""
from __future__ import annotations

from ...records import Answer
from ...reports import (figures_html, fmt_p, label_consequence, md_tables_to_html, pct,
    rates_in_words, report_head, report_opening_html)
from ...svg import Figure, bars_position, group_room, grouped_bars, make_look
from .design import PROTOCOL_ID
from .analysis import INFORMATIVE_MIN_FULL, condition_name, render_body, uninformative_explanation


CONSTRAINT_FIGURES = (("fig_c_compliance.svg", "Compliance with the standing instruction per "
                       "condition"),
                      ("fig_c_retention.svg", "Final states (and sidecar registries) that still "
                       "carry the instruction"))


def constraints_why(analysis: dict, kept: dict) -> dict[str, str]:
    """On an UNINFORMATIVE bank, one line per figure saying why its bars sit where they do, from the
    bank's own counts; nothing for any other bank."""
    if analysis["label"] != "UNINFORMATIVE":
        return {}
    models, cells = analysis["models"], analysis["compliance"]
    replies = sum(s["n"] for m in models for s in cells.get(m, {}).values())
    silent = sum(c["no_answer"] for m in models for c in analysis["classes"].get(m, {}).values())
    full = ", ".join(f"{pct(cells[m]['FULL+']['rate'])} for {m}" for m in models
                     if cells.get(m, {}).get("FULL+"))
    reason = ("With the full transcript and the instruction (FULL+) the replies complied "
              f"{full or 'never'}, under the {INFORMATIVE_MIN_FULL:.0%} a model needs to count: no "
              "model follows the instructions, so compaction has nothing to lose.")
    compliance = [s["rate"] for m in models for s in cells.get(m, {}).values() if s["n"]]
    carried = [s["rate"] for (m, _), s in kept.items() if m in models and s["n"]]
    states = sum(s["n"] for (m, _), s in kept.items() if m in models)
    lead = {name: f"Why the bars sit {position}" if position else "Why these bars"
            for name, position in ((CONSTRAINT_FIGURES[0][0], bars_position(compliance)),
                                   (CONSTRAINT_FIGURES[1][0], bars_position(carried)))}
    return {CONSTRAINT_FIGURES[0][0]: f"{lead[CONSTRAINT_FIGURES[0][0]]}: {silent} of {replies} "
            "replies gave no "
                                      f"CHOICE: line, which is never compliant. {reason}",
            CONSTRAINT_FIGURES[1][0]: f"{lead[CONSTRAINT_FIGURES[1][0]]}: "
                                      f"{sum(s['k'] for (m, _), s in kept.items() if m in models)} "
                                      f"of {states} final states (or registries) hold every key "
                                      f"term of their instruction. {reason}"}


def constraint_figures(analysis: dict, stamped: bool = True) -> dict[str, str]:
    """The study's two figures, one look for both; stamped=False leaves out the label stamp
    (report.html)."""
    note = None if analysis["confirmatory"] else analysis["label"]
    if analysis.get("simulated"):
        note = "SIMULATED (stand-in model, not a result)" + (f": {note}" if note else "")
    groups = analysis["groups"]
    regimes = analysis["regimes"]
    cells = {(m, r): s for m in groups for r, s in analysis["compliance"].get(m, {}).items()}
    kept = {(m, r): e["carried"] for m in groups for r, e in analysis["retention"].get(m,
        {}).items()}
    kept_regimes = [r for r in regimes if any((m, r) in kept for m in groups)]
    rooms = [group_room(len(regimes))] + ([group_room(len(kept_regimes))] if kept_regimes else [])
    look = make_look(analysis, note, rooms, stamped, name_of=condition_name)
    why = constraints_why(analysis, kept)
    return {
        CONSTRAINT_FIGURES[0][0]: grouped_bars(CONSTRAINT_FIGURES[0][1], "share of probes answered "
                                               "with the compliant "
                                               "option; FULL- is the prior, +UB the upper bound",
                                               groups, regimes,
                                               cells, "compliant (%)", look,
                                               why=why.get(CONSTRAINT_FIGURES[0][0])),
        CONSTRAINT_FIGURES[1][0]: grouped_bars(CONSTRAINT_FIGURES[1][1], "deterministic key-term "
                                               "rule", groups,
                                               kept_regimes, kept, "carried (%)", look,
                                               why=why.get(CONSTRAINT_FIGURES[1][0])),
    }


def constraints_label_why(analysis: dict) -> str:
    """Why a constraints bank has its label and what that means (the report's label block)."""
    label = analysis["label"]
    why = "; ".join(analysis["reasons"]) + ". " if analysis["reasons"] else ""
    meaning = uninformative_explanation() if label == "UNINFORMATIVE" else \
        label_consequence(label)
    return why + meaning[:1].upper() + meaning[1:]


def figures(results: dict, analysis: dict, stamped: bool = True) -> list[Figure]:
    """The study's figures in order, as Study.report.figures gives them (stamped=False: for
    report.html)."""
    drawn = constraint_figures(analysis, stamped)
    return [Figure(name, caption, drawn[name]) for name, caption in CONSTRAINT_FIGURES]


def report_html(results: dict, analysis: dict, figures: list[Figure]) -> str:
    """report.html: the label and the confirmatory test's verdict once, at the top, the tables, then
    the figures (drawn with stamped=False)."""
    lead = "SIMULATED " if analysis.get("simulated") else ""
    parts = report_head(f"{lead}{PROTOCOL_ID} report", f"{PROTOCOL_ID}: do standing instructions "
                        "survive compaction?")
    parts.append(report_opening_html(analysis, constraints_label_why(analysis), figures))
    parts.append(md_tables_to_html(render_body(analysis)))
    parts += figures_html(figures, CONSTRAINT_FIGURES[0][0])
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def pooled_rates(by_group: dict, groups: list[str], regimes: list[str]) -> dict[str,
    tuple[int, int]]:
    """(k, n) per regime summed over the groups, from each group's rate summaries."""
    out = {}
    for r in regimes:
        cells = [by_group.get(g, {}).get(r) for g in groups]
        cells = [c for c in cells if c and c["n"]]
        if cells:
            out[r] = (sum(c["k"] for c in cells), sum(c["n"] for c in cells))
    return out


def answer(analysis: dict) -> Answer:
    """The study's answer in plain sentences (how often each condition complied, the pre-registered
    test and its verdict, how many final states still carry the instruction), its headline figure,
    compliance, and its label's reasons."""
    groups, regimes, defs = (analysis["groups"], analysis["regimes"],
                             analysis.get("regime_definitions", {}))
    named = lambda r: f"{r} [{condition_name(r, defs.get(r) or {})}]"      # noqa: E731
    sentences = []
    complied = pooled_rates(analysis["compliance"], groups, regimes)
    if complied:
        sentences.append("Replies that followed the standing instruction: "
                         + rates_in_words([(named(r), k, n) for r, (k,
                         n) in complied.items()]) + ".")
    test = analysis["confirmatory_test"]
    # a verdict that gives its p already is not given it twice
    said_p = "p =" in test["verdict"]
    if test["test"]:
        t = test["test"]
        sentences.append(f"On the same instances, {test['second']} complied where {test['first']} "
                         f"did not {t['c']} times and the reverse happened {t['b']} times"
                         + ("" if said_p else f" (exact McNemar p = {fmt_p(t['p'])})")
                         + f"; the pre-registered test says: {test['verdict']}.")
    else:
        sentences.append(f"The pre-registered test, {test['second']} against {test['first']}: "
                         f"{test['verdict']}.")
    carried = pooled_rates({g: {r: e["carried"] for r, e in analysis["retention"].get(g,
        {}).items()}
                            for g in groups}, groups, regimes)
    if carried:
        sentences.append("Final states that still carry every key term of the instruction: "
                         + rates_in_words([(r, k, n) for r, (k, n) in carried.items()]) + ".")
    return Answer(tuple(sentences), CONSTRAINT_FIGURES[0][0], tuple(analysis["reasons"]))
