"""Shared report pieces: number formats, markdown tables, the label notes, probes.csv, and the analysis.md and
headline of any study (each study renders its own)."""
from __future__ import annotations

import csv
import html
import io
import re
from typing import Any

from .records import SIMULATED_STAMP, study_named


def render_analysis_md(analysis: dict) -> str:
    """analysis.md of any study's analysis, by the study it records."""
    return study_named(analysis.get("study")).render_md(analysis)


def render_headline(analysis: dict) -> str:
    """The short table printed at the end of a run, by the study its analysis records."""
    return study_named(analysis.get("study")).headline(analysis)


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def fmt_p(p: float) -> str:
    return f"{p:.3e}" if p < 0.001 else f"{p:.4f}"


def fmt_rate(summary: dict, interval: bool = True) -> str:
    if not summary["n"]:
        return "no probes"
    text = f"{summary['k']}/{summary['n']} = {pct(summary['rate'])}"
    if interval:
        text += f" [{100 * summary['lo']:.1f}, {100 * summary['hi']:.1f}]"
    return text


def fmt_mean(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def md_cell(value: Any) -> str:
    """A table cell's text: a pipe escaped and a line break folded, so that no value (a cell key, a user's regime
    description, a model's reply) can break the table."""
    return " ".join(str(value).split("\n")).replace("|", "\\|")


def md_table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(md_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


INLINE_CODE = re.compile(r"`([^`\n]+)`")
INLINE_STRONG = re.compile(r"\*\*([^*\n]+)\*\*")


def inline_html(text: str) -> str:
    """A line of markdown as HTML, escaped: `code` and **strong** rendered, a lone backtick or ** kept as written."""
    escaped = html.escape(str(text))
    escaped = INLINE_STRONG.sub(r"<strong>\1</strong>", escaped)
    return INLINE_CODE.sub(r"<code>\1</code>", escaped)


def confirmatory_note(analysis: dict) -> str | None:
    """None for a confirmatory bank; otherwise its label and the main reason, short enough for a figure."""
    if analysis["label"] == "CONFIRMATORY":
        return None
    if analysis["label"] == "UNINFORMATIVE":
        note = "UNINFORMATIVE: no model passed the ceiling check"
    else:
        note = f"NON-CONFIRMATORY: {analysis['label_reasons'][0].split(':')[0]}"
    return f"{SIMULATED_STAMP}; {note}" if analysis.get("simulated") else note


def label_consequence(label: str) -> str:
    return {"CONFIRMATORY": "The pre-registered verdicts below may be reported as confirmatory.",
            "NON-CONFIRMATORY": "The verdicts below are descriptive only; no claim may rest on these numbers.",
            "UNINFORMATIVE": "The verdicts are withheld: a model that fails its own ceiling cannot say whether "
                             "the format of the compacted state matters."}[label]


def render_probes_csv(results: dict) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    fields = ["model", "regime", "episode", "question_id", "type", "truth", "answer", "class"]
    writer.writerow(fields)
    for probe in results["probes"]:
        writer.writerow(["" if probe.get(f) is None else spreadsheet_safe(probe.get(f)) for f in fields])
    return buf.getvalue()


def spreadsheet_safe(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula (= + - @ first) is kept as text with a leading '."""
    return "'" + value if isinstance(value, str) and value[:1] in ("=", "+", "-", "@") else value


def render_recheck_section(analysis: dict) -> list[str]:
    """The determinism probe's section of analysis.md: what was re-sent and how many replies changed."""
    recheck = analysis.get("recheck")
    if recheck is None:
        return ["## Determinism probe", "", "Not run (`--recheck 0`, or the bank was made before the probe existed).",
                ""]
    rows = [[item["cell"], item["kind"], "changed" if item["changed"] else "same"] for item in recheck["items"]]
    return ["## Determinism probe", "",
            f"After the cells finished, {recheck['sent']} journalled calls chosen by seed {recheck['seed']} were sent "
            f"again with the same request; the new replies are kept beside the old ones in `raw/recheck.jsonl` and "
            f"never replace them. Changed: {recheck['changed']} of {recheck['sent']}.", "",
            md_table(["cell", "call", "reply"], rows) if rows else "", ""]
