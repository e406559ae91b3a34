"""XR-G1, the answer and the headline figure (protocol/ADVERSARIAL.md): per state category, how
often the final states handed to the successor carried the category's defect under each regime, and
the release verdict, from the analysis alone (RESULTS.md and report.html are the shared pages)."""
from __future__ import annotations

from ...reports import pct
from ...records import SIMULATED_STAMP, Answer
from ...svg import (REGIME_LABELS, Figure, Look, group_labels, group_room, grouped_bars,
                    regime_colours)
from .design import THRESHOLDS

REGIME_NAMES = {"G2": "G2 typed state block, gated"}
RELEASE_FIGURE = ("fig_g_release.svg", "Final states handed to the successor that carry each "
                  "category's defect")


def figures(results: dict, analysis: dict, stamped: bool = True) -> list[Figure]:
    """The one figure: per category, the share of the handed-over states carrying its defect under
    each regime, with 95% Wilson intervals (stamped=False: for report.html, which states the label
    once, at its top)."""
    release = analysis["summary"]["release"]
    regimes = list(release)
    categories = [c for c in THRESHOLDS if any(c in release[r] for r in regimes)]
    names, key = group_labels(categories, group_room(len(regimes)))
    stamp = (f"{SIMULATED_STAMP}; " if analysis.get("simulated") else "") + "EXPLORATORY"
    look = Look(stamp if stamped else None, {r: REGIME_NAMES.get(r,
        REGIME_LABELS.get(r, r)) for r in regimes},
                regime_colours(regimes), dict(zip(categories, names)), key)
    cells = {(c, r): release[r][c] for r in regimes for c in categories if c in release[r]}
    return [Figure(RELEASE_FIGURE[0], RELEASE_FIGURE[1],
                   grouped_bars(RELEASE_FIGURE[1], "whiskers: 95% Wilson intervals; a category is "
                                "released only "
                                "when the upper end is at or below its threshold", categories,
                                regimes, cells,
                                "states with the defect (%)", look, x_label="state category"))]


def answer(analysis: dict) -> Answer:
    """One sentence per regime: each category's release verdict with the count it rests on; then the
    quarantine."""
    summary, sentences = analysis["summary"], []
    for regime, categories in summary["release"].items():
        said = [f"{name} {v['verdict']} ({v['k']} of {v['n']} states carry it, threshold "
                f"{pct(v['threshold'])})"
                for name, v in categories.items() if v.get("verdict")]
        unjudged = [name for name, v in categories.items() if not v.get("verdict")]
        sentences.append(f"Under {regime}: " + ("; ".join(said) if said
                                                else "no category could be judged")
                         + (f"; not judged: {', '.join(unjudged)}" if unjudged else "") + ".")
    if summary.get("quarantined") is not None:
        sentences.append(f"The gate quarantined {summary['quarantined']} candidate states.")
    return Answer(tuple(sentences), RELEASE_FIGURE[0])
