"""Shared report pieces: number formats, markdown tables, the label notes, probes.csv, the
analysis.md and headline of any study (each study renders its own; a simulated bank's are marked
SIMULATED first here), and the pieces of an HTML report: markdown as HTML, the page's head, its
label block and its figures."""
from __future__ import annotations

import csv
import html
import io
import re
from typing import Any

from .records import SIMULATED_STAMP, Answer, Verdict, study_named, verdict_of


def study_answer(analysis: dict) -> Answer | None:
    """The answer of the study an analysis records (its Report.answer hook), or None for a study
    without one."""
    return verdict_of(analysis).answer


def render_analysis_md(analysis: dict, with_answer: bool = True) -> str:
    """analysis.md of any study's analysis, by the study it records, marked SIMULATED first where it
    must be, a stopped run's partial view said before the study's text, and the study's answer (its
    sentences and headline figure) after its title and label, before its first section."""
    verdict = verdict_of(analysis)
    note = partial_note(verdict)
    text = (f"**{note}**\n\n" if note else "") + study_named(verdict.study).render_md(analysis)
    answer = verdict.answer if with_answer else None
    if answer is not None:
        text = before_first_section(text, answer_md(answer.sentences, figure_link(answer)))
    return stamped(text, verdict, f"# {SIMULATED_STAMP}\n\n")


def rates_in_words(rates: list[tuple[str, int, int]]) -> str:
    """(name, k, n) each as "name 12.5%", the count once where every n is the same ("(of 8 each)"),
    else beside each; a name with no count says so. For the answer's sentences."""
    counted = [(name, k, n) for name, k, n in rates if n]
    if not counted:
        return "none"
    text = ", ".join(f"{name} {pct(k / n)}" if n else f"{name} none" for name, k, n in rates)
    if len({n for _, _, n in counted}) == 1 and len(counted) == len(rates):
        return text + (f" (of {counted[0][2]} each)" if len(rates) > 1 else f" of {counted[0][2]}")
    return ", ".join(f"{name} {pct(k / n)} of {n}" if n else f"{name} none" for name, k, n in rates)


def figure_link(answer: Answer, folder: str = "figures") -> tuple[str, str] | None:
    """(alt text, relative path) of an answer's headline figure, as a markdown page beside figures/
    links it."""
    return ("the headline figure", f"{folder}/{answer.figure}") if answer.figure else None


def before_first_section(markdown: str, insert: str) -> str:
    """The markdown with `insert` placed before its first section heading (## ...) or first table,
    whichever comes first: a report's title and label stay on top, everything else follows the
    answer."""
    lines = markdown.split("\n")
    at = next((i for i, line in enumerate(lines) if line.startswith("## ") or line.startswith("|")),
              len(lines))
    return "\n".join(lines[:at] + insert.rstrip("\n").split("\n") + [""] + lines[at:])


def answer_md(sentences: list[str] | tuple[str, ...], figure: tuple[str, str] | None = None,
              label: str | None = None) -> str:
    """The opening of any markdown report after its title: the label line (where the caller has not
    written it already), one sentence per question as a list, then the headline figure ((alt text,
    relative path) or None). The audit and every study's analysis.md and RESULTS.md open with it."""
    out = [f"**{label}**", ""] if label else []
    out += ["## The answer", ""] + [f"- {sentence}" for sentence in sentences] + [""]
    if figure:
        out += [f"![{figure[0]}]({figure[1]})", ""]
    return "\n".join(out)


def render_headline(analysis: dict) -> str:
    """The short table printed at the end of a run, by the study its analysis records, marked
    SIMULATED first where it must be, and a stopped run's partial view said before the study's
    table."""
    verdict = verdict_of(analysis)
    note = partial_note(verdict)
    text = (f"{note}\n" if note else "") + study_named(verdict.study).headline(analysis)
    return stamped(text, verdict, f"{SIMULATED_STAMP}\n")


def render_closing(analysis: dict) -> str:
    """What a run prints when it ends, as plain text (no markdown): the label once (SIMULATED first
    where it must be), a stopped run's partial view, then the study's answer sentences; a study
    without an answer gives its headline instead, its markup taken out. The caller adds the report's
    path."""
    verdict = verdict_of(analysis)
    answer = verdict.answer
    if answer is None:
        return plain_text(render_headline(analysis))
    simulated = "SIMULATED (stand-in model, not a result) · " if verdict.simulated else ""
    marks = simulated + verdict.label
    reasons = [r for r in answer.reasons if not (verdict.simulated and r.startswith("simulated"))]
    marks += (": " + "; ".join(reasons)) if reasons and verdict.label != "CONFIRMATORY" else ""
    note = partial_note(verdict)
    return "\n".join([marks] + ([plain_text(note)] if note else [])
                     + [f"- {plain_text(s)}" for s in answer.sentences + answer.closing])


def plain_text(markdown: str) -> str:
    """Markdown as a terminal shows it: **strong** and `code` without their marks, pipe tables as
    aligned columns (their |---| rule dropped), headings without their #."""
    out, table = [], []

    def flush():
        if table:
            rows = [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|",
                line.strip().strip("|"))] for line in table
                    if not re.fullmatch(r"\|?(\s*:?-+:?\s*\|)+\s*", line.strip())]
            widths = [max(len(row[i]) for row in rows if i < len(row)) for i in range(max(map(len,
                rows)))]
            out.extend("  ".join(cell.ljust(widths[i]) for i,
                                 cell in enumerate(row)).rstrip() for row in rows)
            table.clear()

    for line in markdown.splitlines():
        if line.lstrip().startswith("|"):
            table.append(INLINE_CODE.sub(r"\1", INLINE_STRONG.sub(r"\1", line)))
            continue
        flush()
        out.append(INLINE_CODE.sub(r"\1", INLINE_STRONG.sub(r"\1",
                                                            line.lstrip("#").strip()
                                                            if line.startswith("#")
                                                                   else line)))
    flush()
    return "\n".join(out)


def partial_note(verdict: Verdict) -> str | None:
    """The line that opens the analysis of a run not yet finished (bank.score_run scores it over its
    complete episodes alone; the verdict's partial view); None for a finished run, or where the
    study's own label is CONFIRMATORY (the label comes from the probes, never from the file's
    word)."""
    partial = verdict.partial
    if not partial or verdict.label == "CONFIRMATORY":
        return None
    study = study_named(verdict.study)
    left, noun, label = partial["cells_left_out"], study.episode_noun, study.design.partial_label
    # a study with no confirmatory test
    view = "PARTIAL VIEW" if label == "PARTIAL" else f"PARTIAL VIEW, {label}"
    return (f"{view}: the run is not finished; this compares the regimes over the "
            f"{partial['episodes_complete']} of its {partial['episodes']} {noun}s complete in "
            "every model and regime"
            + (f" ({left} complete cell{'' if left == 1 else 's'} of unfinished {noun}s left out "
               "until they finish)"
               if left else "") + ".")


def stamped(text: str, verdict: Verdict, stamp: str) -> str:
    """A study's text of a simulated bank (the demo's stand-in model), with the SIMULATED stamp in
    front of it unless its first line already says so: no study can leave it out."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return stamp + text if verdict.simulated and "SIMULATED" not in first else text


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


# below it a double no longer holds the p-value: it underflows to 0
SMALLEST_P = 1e-300


def fmt_p(p: float) -> str:
    """A p-value as printed: four decimals, or three significant digits below 0.001, or "< 1e-300"
    where it has underflowed (an exact McNemar p of b = 5000, c = 0 is 0.0 as a double, not 0)."""
    if p < SMALLEST_P:
        return "< 1e-300"
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
    """A table cell's text: a pipe escaped and a line break folded, so that no value (a cell key, a
    user's regime description, a model's reply) can break the table."""
    return " ".join(str(value).split("\n")).replace("|", "\\|")


def md_table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(md_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


INLINE_CODE = re.compile(r"`([^`\n]+)`")
INLINE_STRONG = re.compile(r"\*\*([^*\n]+)\*\*")


def inline_html(text: str) -> str:
    """A line of markdown as HTML, escaped: `code` and **strong** rendered, a lone backtick or **
    kept as written."""
    escaped = html.escape(str(text))
    escaped = INLINE_STRONG.sub(r"<strong>\1</strong>", escaped)
    return INLINE_CODE.sub(r"<code>\1</code>", escaped)


def confirmatory_note(analysis: dict) -> str | None:
    """None for a confirmatory bank; otherwise its label and the main reason, short enough for a
    figure."""
    verdict = verdict_of(analysis)
    if verdict.label == "CONFIRMATORY":
        return None
    if verdict.label == "UNINFORMATIVE":
        note = "UNINFORMATIVE: no model passed the ceiling check"
    else:
        note = f"NON-CONFIRMATORY: {verdict.answer.reasons[0].split(':')[0]}"
    return f"{SIMULATED_STAMP}; {note}" if verdict.simulated else note


# the labels label_consequence says
LABEL_WORDS = ("EXPLORATORY", "CONFIRMATORY", "NON-CONFIRMATORY", "UNINFORMATIVE")


def label_consequence(label: str) -> str:
    return {"EXPLORATORY": "No test was pre-registered for these numbers: they describe this run, "
            "this model and "
                           "these prompts, and support no confirmatory claim.",
            "CONFIRMATORY": "The pre-registered verdicts below may be reported as confirmatory.",
            "NON-CONFIRMATORY": "The verdicts below are descriptive only; no claim may rest on "
            "these numbers.",
            "UNINFORMATIVE": "The verdicts are withheld: a model that fails its own ceiling cannot "
            "say whether "
                             "the format of the compacted state matters."}[label]


def render_probes_csv(results: dict) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    fields = ["model", "regime", "episode", "question_id", "type", "truth", "answer", "class"]
    writer.writerow(fields)
    for probe in results["probes"]:
        writer.writerow(["" if probe.get(f) is None
                         else spreadsheet_safe(probe.get(f)) for f in fields])
    return buf.getvalue()


def spreadsheet_safe(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula (= + - @ first) is kept as text with a
    leading '."""
    return "'" + value if isinstance(value, str) and value[:1] in ("=", "+", "-", "@") else value


def render_recheck_section(analysis: dict) -> list[str]:
    """The determinism probe's section of analysis.md: what was re-sent and how many replies
    changed."""
    recheck = analysis.get("recheck")
    if recheck is None:
        return ["## Determinism probe", "", "Not run (`--recheck 0`, or the bank was made before "
                "the probe existed).",
                ""]
    rows = [[item["cell"], item["kind"], "changed" if item["changed"]
             else "same"] for item in recheck["items"]]
    return ["## Determinism probe", "",
            f"After the cells finished, {recheck['sent']} journalled calls chosen by seed "
            f"{recheck['seed']} were sent again with the same request; the new replies are kept "
            "beside the old ones in `raw/recheck.jsonl` and "
            f"never replace them. Changed: {recheck['changed']} of {recheck['sent']}.", "",
            md_table(["cell", "call", "reply"], rows) if rows else "", ""]


# The pieces of an HTML report (report.html): every study's is made of them (pilot/pages.py has the
# shared page).
def md_tables_to_html(markdown: str) -> str:
    """The markdown of analysis.md as HTML: headings, paragraphs, lists and pipe tables, `code` and
    **strong** rendered."""
    out, table = [], []
    inline = inline_html

    def cells(line: str) -> list[str]:
        """A table row's cells; a pipe escaped as \\| is a pipe inside a cell."""
        inner = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
        return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]

    def flush():
        if table:
            head, rows = table[0], table[2:]
            out.append("<table><thead><tr>" + "".join(f"<th>{inline(c)}</th>" for c in cells(head))
                       + "</tr></thead><tbody>"
                       + "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in cells(r))
                                 + "</tr>" for r in rows)
                       + "</tbody></table>")
            table.clear()

    for line in markdown.splitlines():
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        if line.startswith("#"):
            level = min(len(line) - len(line.lstrip("#")) + 1, 4)
            out.append(f"<h{level}>{inline(line.lstrip('#').strip())}</h{level}>")
        elif line.startswith("- "):
            out.append(f"<ul><li>{inline(line[2:])}</li></ul>")
        elif line.strip():
            out.append(f"<p>{inline(line)}</p>")
    flush()
    return "\n".join(out)


REPORT_STYLE = (
    "body{font-family:'DejaVu "
    "Sans',Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;"
    "padding:0 1em;color:#111}table{border-collapse:collapse;margin:0.6em "
    "0;max-width:100%}"
    "td,th{border:1px solid #bbb;padding:3px "
    "8px;text-align:left;vertical-align:top;font-size:0.9em;min-width:4.5em;"
    "overflow-wrap:anywhere}th{background:#f0f0f0;overflow-wrap:normal;hyphens:auto}"
    "code,pre{overflow-wrap:anywhere}.headline{font-size:1.1em;"
    "padding:0.2em 0.9em;border-left:5px solid #0072B2;background:#f4f8fb}.headline "
    "p{margin:0.6em 0}"
    ".headline .label{font-weight:bold;letter-spacing:0.03em;font-size:1.1em}"
    ".label-ok{color:#0072B2}"
    ".label-warn{color:#B00000}.headline .verdicts{font-weight:bold}.answer "
    "h2{margin:0.8em 0 0.3em}"
    ".answer ul{margin:0.3em 0;padding-left:1.3em}.answer li{margin:0.25em "
    "0;font-size:1.05em}"
    "figure svg{width:100%;height:auto}.headline-figure{margin:0.8em "
    "0}.headline-figure svg{max-height:46vh}"
    ".states{display:grid;grid-template-columns:minmax(0,1fr) "
    "minmax(0,1fr);gap:1em}.states pre{"
    "white-space:pre-wrap;background:#fafafa;border:1px solid "
    "#ddd;padding:0.6em;font-size:0.85em}"
    "mark.kept{background:#cdeccd}mark.changed{background:#ffe08a}del.dropped{color:#B00000}"
    "figure{margin:1.5em 0}figcaption{color:#555;font-size:0.85em}"
)


def report_head(title: str, heading: str) -> list[str]:
    """A report's opening: the document title (the tab's name) and the page heading; neither states
    the label."""
    return ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{html.escape(title)}</title>",
            f"<style>{REPORT_STYLE}</style></head><body>", f"<h1>{html.escape(heading)}</h1>"]


def label_block(label: str, simulated: bool, why: str, verdicts: str = "") -> str:
    """The one place a report states its label and the SIMULATED mark: the marks, why and what they
    mean, then the verdicts (where there is a line of them)."""
    marks = ("SIMULATED · " if simulated else "") + label
    tone = "label-ok" if label == "CONFIRMATORY" and not simulated else "label-warn"
    why = why[:1].upper() + why[1:]
    return (f'<div class="headline"><p class="label {tone}">{html.escape(marks)}</p>'
            + (f'<p class="why">{inline_html(why)}</p>' if why else "")
            + (f'<p class="verdicts">{inline_html(verdicts)}</p>' if verdicts else "") + "</div>")


def answer_html(label: str, simulated: bool, why: str, sentences: list[str] | tuple[str, ...],
                figure_svg: str | None = None, figure_file: str | None = None) -> str:
    """The opening of any HTML report, in this order: the label box (label, SIMULATED, why), one
    plain sentence per question, then the headline figure at the page's width (its SVG, and its file
    under figures/ where it has one). Every study's report.html and the audit's open with it."""
    parts = [label_block(label, simulated, why),
             '<div class="answer"><h2>The answer</h2><ul>'
             + "".join(f"<li>{inline_html(sentence)}</li>" for sentence in sentences)
             + "</ul></div>"]
    if figure_svg:
        link = ('<figcaption>file: <a '
                f'href="figures/{html.escape(figure_file)}">figures/{html.escape(figure_file)}'
                f"</a></figcaption>" if figure_file else "")
        parts.append(f'<figure class="headline-figure">{figure_svg}{link}</figure>')
    return "\n".join(parts)


def report_opening_html(analysis: dict, why: str, figures: list) -> str:
    """A study's report.html opening (answer_html) from its analysis: its label, its answer's
    sentences and its headline figure, found by name among the figures drawn for the page."""
    verdict = verdict_of(analysis)
    answer = verdict.answer or Answer(())
    svg = next((figure.svg for figure in figures if figure.name == answer.figure), None)
    return answer_html(verdict.label, verdict.simulated, why, answer.sentences, svg,
                       answer.figure if svg else None)


def figures_html(figures: list, headline: str | None = None) -> list[str]:
    """The figures ((file name, caption, svg) each) but the headline one the page opens with, each
    captioned with its number and its file (the title is the figure's own)."""
    figures = [figure for figure in figures if figure[0] != headline]
    if not figures:
        return []
    parts = ["<h2>More figures</h2>" if headline else "<h2>Figures</h2>"]
    for number, (name, _, svg) in enumerate(figures, 2 if headline else 1):
        parts.append(f'<figure>{svg}<figcaption>Figure {number} · file: <a href="figures/{name}">'
                     f"figures/{name}</a></figcaption></figure>")
    return parts
