"""XR-S1, the answer and the headline figure (protocol/SESSIONS.md section 6): what the final states
did with the sessions' exact values, per regime, in plain sentences and one figure, from the
analysis alone."""
from __future__ import annotations

from ...records import SIMULATED_STAMP, Answer
from ...reports import rates_in_words
from ...stats import rate_summary
from ...svg import Figure, Look, grouped_bars
from .truth import VALUE_CLASSES

VALUES_FIGURE = ("fig_s_values.svg", "What the final state did with each exact value of the "
                 "sessions, per regime")
CLASS_COLOURS = {"kept": "#009E73", "reformatted": "#56B4E9", "changed": "#E69F00",
                 "dropped": "#B00000", "former": "#CC79A7"}


def value_cells(analysis: dict) -> dict:
    """(regime, class) -> the share of the regime's values in that class, as a rate summary."""
    cells = {}
    for regime in analysis["regimes"]:
        counts = analysis["classes"][regime]
        total = sum(counts[c] for c in VALUE_CLASSES)
        cells.update({(regime, c): rate_summary(counts[c], total) for c in VALUE_CLASSES})
    return cells


def figures(results: dict, analysis: dict, stamped: bool = True) -> list[Figure]:
    """The one figure, values kept, reformatted, changed or dropped per regime (stamped=False: for
    report.html, which states the label once, at its top)."""
    stamp = (f"{SIMULATED_STAMP}; " if analysis.get("simulated") else "") + "EXPLORATORY" + \
        ("" if analysis["complete"] else ", PARTIAL")
    look = Look(stamp if stamped else None, {c: c for c in VALUE_CLASSES}, CLASS_COLOURS,
                {r: r for r in analysis["regimes"]}, [])
    n_values = sum(s["values"] for s in analysis["sessions"])
    svg = grouped_bars(VALUES_FIGURE[1], f"{n_values} exact values in {len(analysis['sessions'])} "
                       "sessions, pooled "
                       f"over models; no intervals (the values of one session are not independent)",
                       analysis["regimes"], list(VALUE_CLASSES), value_cells(analysis),
                       "share of values (%)", look,
                       with_errors=False, x_label="regime")
    return [Figure(VALUES_FIGURE[0], VALUES_FIGURE[1], svg)]


def shares(by_regime: dict, regimes: list[str]) -> str:
    """Each regime's share in words (reports.rates_in_words)."""
    summaries = [(r, by_regime.get(r) or rate_summary(0, 0)) for r in regimes]
    return rates_in_words([(r, s["k"], s["n"]) for r, s in summaries])


def answer(analysis: dict) -> Answer:
    """The study's answer in plain sentences, one per thing a state can lose (exact values, standing
    instructions, failed steps) and the release gate's count, each per regime; and its headline
    figure."""
    regimes, none = analysis["regimes"], rate_summary(0, 0)
    n_values = sum(s["values"] for s in analysis["sessions"])
    sentences = [f"Of {n_values} exact values in {len(analysis['sessions'])} sessions, the final "
                 f"state kept verbatim {shares(analysis['kept'], regimes)}; it lost (changed or "
                 f"dropped) {shares(analysis['lost'], regimes)}."]
    if any(analysis["instructions"].get(r, none)["n"] for r in regimes):
        sentences.append(
            "Standing instructions in force with every key term in the state: "
            f"{shares(analysis['instructions'], regimes)}; said the opposite of: "
            + ", ".join(
                f"{r} {analysis['instruction_classes'][r]['contradicted']}" for r in regimes
            )
            + "."
        )
    if any(analysis["steps"].get(r, none)["n"] for r in regimes):
        sentences.append("Failed or denied steps reported with their outcome: "
                         f"{shares(analysis['steps'], regimes)}; "
                         "claimed done though they were not: " + ", ".join(
                             f"{r} {analysis['step_classes'][r]['claimed done']}" for r in regimes)
                             + ".")
    if analysis["gate"]:
        sentences.append("The release gate failed " + ", ".join(f"{g['fail']} of {g['states']} "
                                                                f"final states of {r}"
                                                                for r,
                                                                g in analysis["gate"].items())
                                                                + ".")
    if "needed_kept" in analysis:
        sentences.append(needed_sentence(analysis))
    return Answer(tuple(sentences), VALUES_FIGURE[0])


def needed_sentence(analysis: dict) -> str:
    """What the final states did with what the next agent needed, in the sessions whose logs
    record tool calls or task lists (study_needed)."""
    regimes, none = analysis["regimes"], rate_summary(0, 0)
    items, sessions = analysis["needed_items"], analysis["needed_sessions"]
    return (f"Of {items} thing{'s' * (items != 1)} the next agent needed in the {sessions} "
            f"session{'s' * (sessions != 1)} with tool calls or task lists, the final state kept "
            f"{shares(analysis['needed_kept'], regimes)}; it misstated "
            + ", ".join(f"{r} {analysis['needed_wrong'].get(r, none)['k']}" for r in regimes)
            + (f" (requests, instructions, decisions and open tasks judged by "
               f"{analysis['judge']['model']}: {analysis['judge']['agreement']})"
               if "judge" in analysis else "") + ".")
