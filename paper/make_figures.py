#!/usr/bin/env python3
"""Figures, RESULTS.md and report.html, regenerated from a results.json alone (standard library only).

Usage:
    python3 paper/make_figures.py                               # paper/ from the worked example (PAPER_SOURCE)
    python3 paper/make_figures.py results/xr001/results.json    # into that run's own folder
    python3 paper/make_figures.py RESULTS_JSON --out DIR        # everything into DIR, nothing anywhere else

Writes five SVG figures (figures/), the narrative RESULTS.md (never edited by hand) and a self-contained
report.html, all into one folder. With no arguments the source is PAPER_SOURCE, the run the README names, and
the folder is paper/; it never picks the most recent run. The same results.json always gives byte-identical
files: no timestamps, stable ordering, fixed number formatting, and only relative paths inside the files.
No raw logs and no server are needed.
"""
from __future__ import annotations

import argparse
import colorsys
import dataclasses
import html
import json
import os
import re
import sys
from pathlib import Path

PAPER_DIR = Path(__file__).resolve().parent
REPO_ROOT = PAPER_DIR.parent
# The run paper/ is made from: the committed worked example the README describes.
PAPER_SOURCE = REPO_ROOT / "results" / "smollm2-135m-llamacpp" / "results.json"


sys.path.insert(0, str(REPO_ROOT / "scripts"))     # the runner's package, scripts/pilot/
from pilot import bank, commands, inputs, records, reports, runfolder  # noqa: E402
from pilot.studies import (adversarial, adversarial_analysis, constraints, constraints_analysis, xr001,  # noqa: E402
                           xr001_analysis, xr001_report)

# Okabe-Ito: distinguishable with every common form of colour blindness. R0, R1 and R2 keep their colours in
# every study; every other condition takes the next colour here in its study's order (then Paul Tol's muted
# palette, then evenly spread hues), so that each condition has one colour in all of a report's figures.
REGIME_COLOURS = {"R0": "#0072B2", "R1": "#D55E00", "R2": "#009E73"}
REGIME_LABELS = {"R0": "R0 full transcript", "R1": "R1 prose summary", "R2": "R2 typed state block"}
EXTRA_COLOURS = ("#E69F00", "#56B4E9", "#CC79A7", "#F0E442", "#000000", "#999999",
                 "#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255", "#AA4499")


def regime_colours(regimes: list[str]) -> dict[str, str]:
    """One colour per condition of a study (its whole list of regimes, whichever a figure shows)."""
    extras = [r for r in regimes if r not in REGIME_COLOURS]
    return {r: REGIME_COLOURS[r] if r in REGIME_COLOURS else extra_colour(extras.index(r)) for r in regimes}


def extra_colour(index: int) -> str:
    if index < len(EXTRA_COLOURS):
        return EXTRA_COLOURS[index]
    red, green, blue = colorsys.hls_to_rgb((index - len(EXTRA_COLOURS)) * 0.381966 % 1, 0.45, 0.6)
    return "#" + "".join(f"{round(255 * c):02X}" for c in (red, green, blue))


def regime_definitions(analysis: dict) -> dict:
    """Each regime's summary as the bank recorded it (description, exploratory, condition, ...)."""
    return analysis.get("definitions") or analysis.get("regime_definitions") or {}


def regime_labels(analysis: dict) -> dict[str, str]:
    """Each condition's legend text; an exploratory one, and only it, carries a star and says so (a regime the
    bank does not describe is exploratory unless it is R0, R1 or R2)."""
    definitions, labels = regime_definitions(analysis), {}
    for regime in analysis["regimes"]:
        definition = definitions.get(regime)
        if (definition or {}).get("exploratory", definition is None and regime not in REGIME_LABELS):
            labels[regime] = f"{regime}* (exploratory)"
        elif regime in REGIME_LABELS:
            labels[regime] = REGIME_LABELS[regime]
        elif analysis.get("study") == "constraints":
            labels[regime] = f"{regime} {constraints_analysis.condition_name(regime, definition or {})}"
        else:
            labels[regime] = regime
    return labels


CLASS_COLOURS = {"correct": "#D9D9D9", "off_by_one": "#E69F00", "conflation": "#CC79A7",
                 "other_wrong": "#56B4E9", "omission": "#000000"}
FONT = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\""
FIGURES = (
    ("fig_a_corruption.svg", "Numeric-corruption rate by model and regime"),
    ("fig_b_classes.svg", "Corruption classes by regime, pooled over models"),
    ("fig_c_multihop.svg", "Multi-hop completion by model and regime"),
    ("fig_d_compaction_tokens.svg", "Realized compaction tokens per call"),
    ("fig_e_retention.svg", "Write-time retention of entity values"),
)
SWEEP_FIGURE = ("fig_f_budget_sweep.svg", "Corruption against compaction budget (exploratory)")


# ============================================================================================
# A tiny SVG writer: text stays text, numbers are formatted the same way every time
# ============================================================================================
# Layout works on estimated text widths: a glyph of DejaVu Sans is about 0.6 of the font size wide, capitals
# and '%' wider and bold wider still; the estimate errs on the wide side so that nothing estimated to fit overlaps.
GLYPH_WIDTH, WIDE_EXTRA, BOLD_FACTOR = 0.6, 0.15, 1.1
MARGIN = 16


def num(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def text_width(text: str, size: float, bold: bool = False) -> float:
    """A conservative estimate of the rendered width of text, in pixels."""
    wide = sum(1 for ch in text if ch.isupper() or ch in "%@mwMW")
    return (len(text) * GLYPH_WIDTH + wide * WIDE_EXTRA) * size * (BOLD_FACTOR if bold else 1.0)


def wrap(text: str, size: float, max_width: float, bold: bool = False) -> list[str]:
    """Greedy word wrap to max_width; a word wider than a line is cut into pieces that fit."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        while text_width(word, size, bold) > max_width and len(word) > 1:
            cut = max(1, int(max_width / (size * (GLYPH_WIDTH + WIDE_EXTRA) * (BOLD_FACTOR if bold else 1.0))))
            if current:
                lines.append(current)
                current = ""
            lines.append(word[:cut])
            word = word[cut:]
        candidate = f"{current} {word}" if current else word
        if current and text_width(candidate, size, bold) > max_width:
            lines.append(current)
            current = word
        else:
            current = candidate
    if current:
        lines.append(current)
    return lines or [""]


class Svg:
    def __init__(self, width: float, height: float, title: str):
        self.width, self.height, self.title = width, height, title
        self.parts: list[str] = []

    def rect(self, x, y, w, h, fill, cls="", extra="", tip=""):
        cls_attr = f' class="{cls}"' if cls else ""
        body = f"<title>{html.escape(tip)}</title>" if tip else ""
        self.parts.append(f'<rect{cls_attr} x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}" '
                          f'fill="{fill}"{extra}>{body}</rect>' if body else
                          f'<rect{cls_attr} x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}" '
                          f'fill="{fill}"{extra}/>')

    def line(self, x1, y1, x2, y2, stroke="#000000", width=1.0, cls="", dash=""):
        cls_attr = f' class="{cls}"' if cls else ""
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<line{cls_attr} x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" '
                          f'stroke="{stroke}" stroke-width="{num(width)}"{dash_attr}/>')

    def text(self, x, y, content, size=12, anchor="start", weight="normal", rotate=None, fill="#000000", cls=""):
        transform = f' transform="rotate({num(rotate)} {num(x)} {num(y)})"' if rotate is not None else ""
        cls_attr = f' class="{cls}"' if cls else ""
        self.parts.append(f'<text{cls_attr} x="{num(x)}" y="{num(y)}" font-size="{num(size)}" {FONT} '
                          f'text-anchor="{anchor}" font-weight="{weight}" fill="{fill}"{transform}>'
                          f'{html.escape(str(content))}</text>')

    def lines(self, x, y, lines: list[str], size, step, **kwargs) -> float:
        """Several lines of text one under another from baseline y; returns the last baseline."""
        for i, content in enumerate(lines):
            self.text(x, y + i * step, content, size=size, **kwargs)
        return y + (len(lines) - 1) * step

    def render(self) -> str:
        # The canvas size is fixed only here, so a figure may grow while it is laid out.
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{num(self.width)}" height="{num(self.height)}" '
                f'viewBox="0 0 {num(self.width)} {num(self.height)}" role="img">\n'
                f'<title>{html.escape(self.title)}</title>\n'
                f'<rect x="0" y="0" width="{num(self.width)}" height="{num(self.height)}" fill="#FFFFFF"/>\n'
                + "\n".join(self.parts) + "\n</svg>\n")


def header(svg: Svg, title: str, note: str | None, subtitle: str = "", why: str | None = None) -> float:
    """Title, then the NON-CONFIRMATORY stamp on its own line, then why the bars sit where they do (an
    UNINFORMATIVE bank), then the subtitle; returns where the plot may start."""
    room = svg.width - 2 * MARGIN
    y = svg.lines(MARGIN, 24, wrap(title, 15, room, bold=True), 15, 19, weight="bold")
    if note:
        y = svg.lines(MARGIN, y + 19, wrap(note, 12, room, bold=True), 12, 16, weight="bold", fill="#B00000",
                      cls="nonconfirmatory")
    if why:
        y = svg.lines(MARGIN, y + 17, wrap(why, 11, room), 11, 14, fill="#B00000", cls="why")
    if subtitle:
        y = svg.lines(MARGIN, y + 18, wrap(subtitle, 11, room), 11, 14, fill="#333333")
    return y + 26           # room above the plot for a value label at 100%


def legend(svg: Svg, x: float, y: float, items: list[tuple[str, str]]) -> None:
    for i, (label, colour) in enumerate(items):
        svg.rect(x, y + i * 18, 12, 12, colour, cls="legend-key", extra=' stroke="#333333" stroke-width="0.5"')
        svg.text(x + 18, y + i * 18 + 10, label, size=11)


def legend_width(labels: list[str]) -> float:
    return 18 + max((text_width(label, 11) for label in labels), default=0)


def y_axis(svg: Svg, left: float, top: float, height: float, right: float, label: str, maximum: float = 100,
           step: float = 20, unit: str = "%") -> None:
    tick = 0.0
    while tick <= maximum + 1e-9:
        y = top + height - height * tick / maximum
        svg.line(left, y, right, y, stroke="#E5E5E5")
        svg.line(left - 4, y, left, y)
        svg.text(left - 7, y + 4, f"{num(tick)}{unit}", size=10, anchor="end")
        tick += step
    svg.line(left, top, left, top + height, cls="axis")
    svg.line(left, top + height, right, top + height, cls="axis")
    svg.text(18, top + height / 2, label, size=11, anchor="middle", rotate=-90)


@dataclasses.dataclass(frozen=True)
class Look:
    """What every figure of one report shares: the label stamp (None where the page states the label once, at its
    top), each condition's legend text and colour, and how the models are written: their names, or M1, M2, ...
    with a key to the names (key) in every figure when one name does not fit the narrowest slot of any of them."""

    stamp: str | None
    labels: dict
    colours: dict
    models: dict
    key: list


BAR_W, GROUP_GAP = 30, 40


def group_room(n_series: int, beside: bool = False) -> float:
    """The room under a group of grouped_bars for its name."""
    return BAR_W * (2 if beside else 1) * n_series + GROUP_GAP - 6


def make_look(analysis: dict, stamp: str | None, rooms: list[float]) -> Look:
    groups = analysis.get("groups") or analysis["models"]
    names, key = group_labels(groups, min(rooms))
    return Look(stamp, regime_labels(analysis), regime_colours(analysis["regimes"]), dict(zip(groups, names)), key)


def group_labels(groups: list[str], room: float, size: float = 11) -> tuple[list[str], list[tuple[str, str]]]:
    """Names under the groups when every one fits its slot; otherwise M1, M2, ... and a key to the full names."""
    if all(text_width(g, size) <= room for g in groups):
        return list(groups), []
    short = [f"M{i + 1}" for i in range(len(groups))]
    return short, list(zip(short, groups))


def model_key(svg: Svg, x: float, y: float, key: list[tuple[str, str]], room: float) -> float:
    """'M1  full/model:name' lines from baseline y (long names wrap); returns the last baseline."""
    for short, name in key:
        svg.text(x, y, short, size=10, weight="bold", cls="key")
        y = svg.lines(x + 30, y, wrap(name, 10, room - 30), 10, 13, cls="key") + 15
    return y - 15


def key_height(key: list[tuple[str, str]], room: float) -> float:
    return sum(13 * len(wrap(name, 10, room - 30)) + 2 for _, name in key)


# ============================================================================================
# The five figures
# ============================================================================================
PLOT_HEIGHT, LEFT = 260, 70
VALUE_SIZE, VALUE_GAP = 9, 5          # value labels: font size, and clearance above a bar or whisker cap


def percent_label(rate: float) -> str:
    """A whole percentage that never rounds a few cases to 0% or all but a few to 100%."""
    if 0 < rate < 0.005:
        return "<1%"
    if 0.995 <= rate < 1:
        return ">99%"
    return f"{100 * rate:.0f}%"


def grouped_bars(title: str, subtitle: str, groups: list[str], regimes: list[str], cells: dict, y_label: str,
                 look: Look, with_errors: bool = True, beside: dict | None = None, beside_label: str = "",
                 footnotes: list[str] = (), why: str | None = None) -> str:
    """Bars per (group, regime) with optional Wilson error bars; cells[(group, regime)] = rate summary. `beside`
    draws a second, outlined bar right of each (another count of the same cell, named by beside_label in the
    legend); a cell whose summary carries "flag" gets a ! before its value, and footnotes go under the plot."""
    bar_w, gap = BAR_W, GROUP_GAP
    slot_w = bar_w * (2 if beside is not None else 1)
    group_w = slot_w * len(regimes) + gap
    right = LEFT + group_w * len(groups) + 10
    items = [(look.labels[r], look.colours[r]) for r in regimes]
    if beside is not None:
        items.append((beside_label, "#FFFFFF"))
    labels, key = [look.models[g] for g in groups], look.key
    width = max(600, right + 20 + legend_width([label for label, _ in items]) + MARGIN)
    if key:
        width = max(width, LEFT + 30 + max(text_width(name, 10) for _, name in key) + MARGIN)
        width = min(width, max(900, right + 20 + legend_width([label for label, _ in items]) + MARGIN))
    svg = Svg(width, 0, title)
    top = header(svg, title, look.stamp, subtitle, why)
    y_axis(svg, LEFT, top, PLOT_HEIGHT, right, y_label)
    base = top + PLOT_HEIGHT
    for g, group in enumerate(groups):
        x0 = LEFT + 10 + g * group_w
        for r, regime in enumerate(regimes):
            summary = cells.get((group, regime))
            x = x0 + r * slot_w
            if not summary or not summary["n"]:
                svg.text(x + bar_w / 2, base - 4, "n/a", size=VALUE_SIZE, anchor="middle")
                continue
            other = (beside or {}).get((group, regime))
            if other and other["n"]:
                h = PLOT_HEIGHT * other["rate"]
                svg.rect(x + bar_w + 2, base - h, bar_w - 4, h, "#FFFFFF", cls="beside",
                         extra=f' stroke="{look.colours[regime]}" stroke-width="1.5" '
                               f'data-value="{num(100 * other["rate"])}" data-group="{html.escape(group)}" '
                               f'data-series="{regime}"', tip=f"{group} {regime} {beside_label}: {reports.fmt_rate(other, False)}")
                svg.text(x + bar_w * 1.5, base - h - VALUE_GAP, percent_label(other["rate"]), size=VALUE_SIZE,
                         anchor="middle", cls="beside-value")
            h = PLOT_HEIGHT * summary["rate"]
            tip = f"{group} {regime}: {reports.fmt_rate(summary, with_errors)}" + \
                (f" ({summary['flag']})" if summary.get("flag") else "")
            svg.rect(x + 2, base - h, bar_w - 4, h, look.colours[regime], cls="bar",
                     extra=f' data-value="{num(100 * summary["rate"])}" data-group="{html.escape(group)}" '
                           f'data-series="{regime}"' + (' data-flag="1"' if summary.get("flag") else ""), tip=tip)
            label_above = base - h
            if with_errors:
                lo, hi = base - PLOT_HEIGHT * summary["lo"], base - PLOT_HEIGHT * summary["hi"]
                cx = x + bar_w / 2
                svg.parts.append(f'<g class="errorbar" data-lo="{num(100 * summary["lo"])}" '
                                 f'data-hi="{num(100 * summary["hi"])}">')
                svg.line(cx, lo, cx, hi, width=1.2)
                svg.line(cx - 4, lo, cx + 4, lo, width=1.2)
                svg.line(cx - 4, hi, cx + 4, hi, width=1.2)
                svg.parts.append("</g>")
                label_above = min(label_above, hi)
            svg.text(x + bar_w / 2, label_above - VALUE_GAP,
                     ("!" if summary.get("flag") else "") + percent_label(summary["rate"]), size=VALUE_SIZE,
                     anchor="middle", cls="value", fill="#B00000" if summary.get("flag") else "#000000")
        centre = x0 + slot_w * len(regimes) / 2
        svg.line(centre, base, centre, base + 4)
        svg.text(centre, base + 17, labels[g], size=11, anchor="middle", cls="category")
    svg.text((LEFT + right) / 2, base + 40, "model", size=11, anchor="middle")
    bottom = base + 40
    if key:
        room = width - LEFT - MARGIN
        bottom = model_key(svg, LEFT, base + 62, key, room)
    for line in footnotes:
        bottom = svg.lines(MARGIN, bottom + 20, wrap(line, 10, width - 2 * MARGIN), 10, 13, fill="#B00000",
                           cls="footnote")
    legend(svg, right + 20, top, items)
    svg.height = bottom + 14
    return svg.render()


def xr001_look(analysis: dict, stamped: bool = True) -> Look:
    """The look of XR-001's figures: models named as the narrowest of its grouped figures allows."""
    retained = [r for r in analysis["regimes"] if r in analysis["retention"]["by_regime"]]
    rooms = [group_room(len(analysis["regimes"]))] + ([group_room(len(retained), beside=True)] if retained else [])
    return make_look(analysis, reports.confirmatory_note(analysis) if stamped else None, rooms)


def bars_position(rates: list[float]) -> str | None:
    """Where a figure's bars sit, when they all sit at one end: "at 100%", "near 0%", ...; None otherwise."""
    if not rates:
        return None
    for end, name in ((1.0, "100%"), (0.0, "0%")):
        if all(rate == end for rate in rates):
            return f"at {name}"
        if all(abs(rate - end) <= 0.1 for rate in rates):
            return f"at or near {name}"
    return None


def xr001_why(analysis: dict, cells: dict[str, list[float]]) -> dict[str, str]:
    """On an UNINFORMATIVE bank, one line per figure saying why its bars sit where they do, from the bank's own
    counts (cells: each figure's plotted rates); nothing for any other bank."""
    if analysis["label"] != "UNINFORMATIVE":
        return {}
    classes, regimes = analysis["classes"], analysis["regimes"]
    total = sum(classes[r][c] for r in regimes for c in bank.CLASSES)
    omitted = sum(classes[r]["omission"] for r in regimes)
    wrong = [f"{m} {reports.pct(c['r0_rate'])}" for m, c in analysis["ceiling"].items()]
    who = f"{wrong[0].rsplit(' ', 1)[0]} already gets {wrong[0].rsplit(' ', 1)[1]}" if len(wrong) == 1 else \
        f"the models already get {', '.join(wrong)}"
    ceiling = (f"With the full transcript (R0), {who} wrong, above the "
               f"{reports.pct(xr001_analysis.CEILING_MAX_R0_CORRUPTION)} ceiling: no model can do the task, so these "
               f"numbers say nothing about compaction.")
    omissions = f"{omitted} of {total} answers gave no parseable ANSWER: line"

    def lead(name: str, because: str) -> str:
        """Why the figure's bars sit at one end (when they do and the bank says why), then the ceiling."""
        position = bars_position(cells.get(name, []))
        return (f"Why the bars sit {position}: {because} " if position and because else "") + ceiling

    at_cap = analysis["budget"].get("at_cap") or {}
    capped = "; ".join(f"{r} {c['k']} of {c['n']}" for r, c in at_cap.items() if c["n"])
    found = "; ".join(f"{r} {e['retained']} of {e['n_entities']} entities, {e['right']} with the right value"
                      for r, e in analysis["retention"]["by_regime"].items() if e["n_entities"])
    return {FIGURES[0][0]: lead(FIGURES[0][0], f"{omissions}, and an omission counts as corrupted." if omitted else ""),
            FIGURES[1][0]: (f"Why the bars are mostly black: {omissions} (omission). " if omitted * 2 > total else "")
            + ceiling,
            FIGURES[2][0]: lead(FIGURES[2][0], f"{omissions}, and an omission is never a completed sum."
                                if omitted else ""),
            FIGURES[3][0]: (f"Compactions that stopped at the cap: {capped}. " if capped else "") + ceiling,
            FIGURES[4][0]: lead(FIGURES[4][0], f"the final states name {found}." if found else "")}


def figure_corruption(analysis: dict, look: Look | None = None, why: str | None = None) -> str:
    cells = {(m, r): analysis["corruption"][m][r] for m in analysis["models"] for r in analysis["regimes"]}
    return grouped_bars(FIGURES[0][1], "Probes not answered correctly; whiskers: 95% Wilson intervals",
                        analysis["models"], analysis["regimes"], cells, "numeric-corruption rate (%)",
                        look or xr001_look(analysis), why=why)


def figure_multihop(analysis: dict, look: Look | None = None, why: str | None = None) -> str:
    cells = {(m, r): analysis["multihop"][m][r] for m in analysis["models"] for r in analysis["regimes"]}
    return grouped_bars(FIGURES[2][1], "Q7 and Q8 answered correctly; whiskers: 95% Wilson intervals",
                        analysis["models"], analysis["regimes"], cells, "multi-hop completion (%)",
                        look or xr001_look(analysis), why=why)


def retention_cells(analysis: dict) -> tuple[list[str], dict, dict, list[str]]:
    """The retention figure's regimes, its solid cells (right values), outlined cells (names found) and flags."""
    regimes = [r for r in analysis["regimes"] if r in analysis["retention"]["by_regime"]]
    cells, names, flagged = {}, {}, []
    for model in analysis["models"]:
        for regime in regimes:
            agg = analysis["retention"]["by_model"].get(f"{model}|{regime}")
            if agg and agg["n_entities"]:
                cells[(model, regime)] = {"k": agg["right"], "n": agg["n_entities"],
                                          "rate": agg["right"] / agg["n_entities"], "lo": 0, "hi": 0}
                names[(model, regime)] = {"k": agg["retained"], "n": agg["n_entities"],
                                          "rate": agg["retained"] / agg["n_entities"], "lo": 0, "hi": 0}
                if agg["over_retained"]:
                    cells[(model, regime)]["flag"] = "the bank counted more right values than names found"
                    flagged.append(f"{model} {regime}: {agg['correct']} right values over {agg['retained']} names "
                                   f"found")
    return regimes, cells, names, flagged


def figure_retention(analysis: dict, look: Look | None = None, why: str | None = None) -> str:
    """The values P3 reads, found with the right value (solid), beside the names found with any value (outlined);
    a row whose bank counted more right values than names found is flagged, never shown above its names."""
    regimes, cells, names, flagged = retention_cells(analysis)
    readers = {analysis["retention"]["by_regime"][r]["right_reader"] for r in regimes}
    subtitle = ("Solid: entity values found with the right value (what P3 reads); outlined: entity names found, "
                "with any value. Exploratory" + ("; prose read by the sentence that names the entity"
                                                 if "sentence" in readers else "") +
                ("; prose read by the paper's crude nearest-number heuristic" if "nearest" in readers else ""))
    footnotes = [f"! The bank's own count is inconsistent: {'; '.join(flagged)}. Each such state is plotted "
                 f"as its names found."] if flagged else []
    return grouped_bars(FIGURES[4][1], subtitle, analysis["models"], regimes, cells,
                        "values retained with the right value (%)", look or xr001_look(analysis),
                        with_errors=False, beside=names, beside_label="names found (outline)", footnotes=footnotes,
                        why=why)


def figure_classes(analysis: dict, look: Look | None = None, why: str | None = None) -> str:
    regimes, look = analysis["regimes"], look or xr001_look(analysis)
    bar_w, gap = 60, 100
    right = LEFT + (bar_w + gap) * len(regimes) + 10
    width = max(560, right + 10 + legend_width(list(bank.CLASSES)) + MARGIN)
    title = FIGURES[1][1]
    svg = Svg(width, 0, title)
    top = header(svg, title, look.stamp, "Share of probes per class; bracket: incident signature (off_by_one + "
                 "conflation)", why)
    y_axis(svg, LEFT, top, PLOT_HEIGHT, right, "share of probes (%)")
    base = top + PLOT_HEIGHT
    for i, regime in enumerate(regimes):
        counts = analysis["classes"][regime]
        total = sum(counts[c] for c in bank.CLASSES)
        x = LEFT + 20 + i * (bar_w + gap)
        y = base
        signature_span = []
        for cls in bank.CLASSES:
            share = counts[cls] / total if total else 0.0
            h = PLOT_HEIGHT * share
            svg.rect(x, y - h, bar_w, h, CLASS_COLOURS[cls], cls="bar",
                     extra=f' data-value="{num(100 * share)}" data-group="{regime}" data-series="{cls}" '
                           f'stroke="#FFFFFF" stroke-width="0.5"', tip=f"{regime} {cls}: {counts[cls]}/{total}")
            if cls in ("off_by_one", "conflation"):
                signature_span.append((y - h, y))
            y -= h
        top_s, bottom_s = min(s[0] for s in signature_span), max(s[1] for s in signature_span)
        svg.parts.append(f'<g class="signature" data-count="{counts["signature"]}">')
        svg.line(x + bar_w + 4, top_s, x + bar_w + 4, bottom_s, stroke="#B00000", width=2)
        svg.line(x + bar_w, top_s, x + bar_w + 4, top_s, stroke="#B00000", width=2)
        svg.line(x + bar_w, bottom_s, x + bar_w + 4, bottom_s, stroke="#B00000", width=2)
        label_y = min(max((top_s + bottom_s) / 2 + 4, top + 10), base - 5)   # off the axis lines
        svg.text(x + bar_w + 8, label_y, f"signature {counts['signature']}", size=10, fill="#B00000", cls="value")
        svg.parts.append("</g>")
        svg.line(x + bar_w / 2, base, x + bar_w / 2, base + 4)
        svg.text(x + bar_w / 2, base + 17, regime, size=12, anchor="middle", cls="category")
    svg.text((LEFT + right) / 2, base + 40, "regime", size=11, anchor="middle")
    legend(svg, right + 10, top, [(c, CLASS_COLOURS[c]) for c in bank.CLASSES])
    svg.height = base + 54
    return svg.render()


def figure_tokens(results: dict, analysis: dict, look: Look | None = None, why: str | None = None) -> str:
    """Histogram of realized tokens per compaction call, one row per regime, the cap marked."""
    look = look or xr001_look(analysis)
    cap = (results.get("run") or {}).get("compaction_cap", records.COMPACTION_NUM_PREDICT)
    regimes = [r for r in analysis["regimes"] if (analysis.get("definitions") or {}).get(r, {}).get("compacts")]
    per_regime = {r: [c["eval_count"] for c in results.get("calls") or []
                      if c["regime"] == r and bank.call_stage(c) == "compaction" and bank.is_primary(c)
                      and c.get("eval_count") is not None
                      and c["model"] in analysis["models"]] for r in regimes}
    top_value = max([cap] + [v for vals in per_regime.values() for v in vals])
    bin_w = 16                      # bins (0, 16], (16, 32], ...: a call at the cap falls left of its line
    n_bins = max(1, -(-top_value // bin_w))
    # Each row: its title, a band for the mean's label, then the bars (never under a label), then the axis.
    row_h, title_band, label_band, axis_band = 124, 16, 16, 34
    bar_room = row_h - title_band - label_band - axis_band
    plot_w = 420
    items = [(f"{r} calls per 16 tokens", look.colours[r]) for r in regimes]
    legend_x = LEFT + plot_w + 70
    width = max(780, legend_x + legend_width([label for label, _ in items] + [f"cap ({cap} tokens)"]) + MARGIN)
    title = FIGURES[3][1]
    svg = Svg(width, 0, title)
    plot_top = header(svg, title, look.stamp, f"Output tokens of each compaction call as the server counted them; "
                      f"dashed line: the {cap}-token cap", why) - 10
    scale = plot_w / (n_bins * bin_w)
    cap_x = LEFT + cap * scale
    for i, regime in enumerate(regimes):
        values = per_regime[regime]
        top = plot_top + i * row_h
        base = top + row_h - axis_band
        counts = [0] * n_bins
        for v in values:
            counts[min(max(v - 1, 0) // bin_w, n_bins - 1)] += 1
        peak = max(counts) or 1
        svg.text(LEFT, top + 12, look.labels[regime], size=11, weight="bold")
        svg.line(LEFT, base, LEFT + plot_w, base, cls="axis")
        svg.line(LEFT, base, LEFT, base - bar_room, cls="axis")
        for tick in (0, peak):
            ty = base - bar_room * tick / peak
            svg.line(LEFT - 4, ty, LEFT, ty)
            svg.text(LEFT - 7, ty + 3, str(tick), size=9, anchor="end")
        for b, count in enumerate(counts):
            h = bar_room * count / peak
            svg.rect(LEFT + b * bin_w * scale + 1, base - h, bin_w * scale - 2, h, look.colours[regime],
                     cls="bar", extra=f' data-value="{count}" data-group="{regime}" data-series="{b * bin_w}"',
                     tip=f"{regime}: {count} calls with {b * bin_w + 1}-{b * bin_w + bin_w} tokens")
        mean = (results.get("compaction_tokens", {}).get(regime) or {}).get("mean")
        if mean is not None:
            mx = LEFT + mean * scale
            label_y = top + title_band + label_band - 4
            svg.line(mx, base + 2, mx, label_y - 8, stroke="#000000", width=1.5, cls="mean")
            label = f"mean {mean:.1f}"
            to_left = mean * scale > plot_w / 2
            span = (mx - 4 - text_width(label, 10), mx - 4) if to_left else (mx + 4, mx + 4 + text_width(label, 10))
            if span[0] <= cap_x <= span[1]:       # never across the cap line: the other side then
                to_left = not to_left
            svg.text(mx - 4 if to_left else mx + 4, label_y, label, size=10, anchor="end" if to_left else "start",
                     cls="value")
        if not values:
            svg.text(LEFT + 10, base - bar_room / 2, "per-call counts are not in this results.json"
                     if mean is not None else "no counts reported", size=10, fill="#555555")
        svg.text(LEFT + plot_w + 8, base - 4, f"n = {len(values)}", size=10)
        for tick in range(0, n_bins * bin_w + 1, 64):
            svg.line(LEFT + tick * scale, base, LEFT + tick * scale, base + 4)
            svg.text(LEFT + tick * scale, base + 15, str(tick), size=9, anchor="middle")
        svg.line(cap_x, top + title_band + 2, cap_x, base, stroke="#B00000", width=1.5, dash="5 3", cls="cap")
    rows_bottom = plot_top + row_h * max(1, len(regimes))
    svg.text(LEFT + plot_w / 2, rows_bottom + 4, "output tokens per compaction call", size=11, anchor="middle")
    svg.text(18, plot_top + row_h * max(1, len(regimes)) / 2, "calls per 16-token bin", size=11, anchor="middle",
             rotate=-90)
    legend(svg, legend_x, plot_top, items)
    key_y = plot_top + 18 * len(regimes) + 10
    svg.line(legend_x, key_y, legend_x + 12, key_y, stroke="#000000", width=1.5)
    svg.text(legend_x + 18, key_y + 4, "mean tokens", size=11)
    svg.line(legend_x, key_y + 18, legend_x + 12, key_y + 18, stroke="#B00000", width=1.5, dash="5 3")
    svg.text(legend_x + 18, key_y + 22, f"cap ({cap} tokens)", size=11)
    svg.height = max(rows_bottom + 18, key_y + 40)
    return svg.render()


def figure_sweep(analysis: dict, look: Look | None = None) -> str:
    """Corruption pooled over models against the compaction budget, one line per regime, with 95% intervals
    and, with repeated samples, each sample's own rate as a dot (the spread)."""
    sweep, samples = analysis["sweep"], analysis.get("samples")
    budgets, regimes, look = list(sweep), analysis["regimes"], look or xr001_look(analysis)
    step = 110
    right = LEFT + 40 + step * (len(budgets) - 1) + 40
    items = [(look.labels[r], look.colours[r]) for r in regimes]
    if samples:
        items.append(("one sample", "#FFFFFF"))
    width = max(600, right + 20 + legend_width([label for label, _ in items]) + MARGIN)
    svg = Svg(width, 0, SWEEP_FIGURE[1])
    intervals = "episode-clustered bootstrap" if samples else "Wilson"
    top = header(svg, SWEEP_FIGURE[1], look.stamp,
                 f"Pooled over models; whiskers: 95% {intervals} intervals; 256 tokens is the pre-registered point")
    y_axis(svg, LEFT, top, PLOT_HEIGHT, right, "numeric-corruption rate (%)")
    base = top + PLOT_HEIGHT
    xs = {b: LEFT + 40 + i * step for i, b in enumerate(budgets)}
    for b, x in xs.items():
        svg.line(x, base, x, base + 4)
        svg.text(x, base + 17, f"{b} ({inputs.budget_words(int(b))} words)", size=11, anchor="middle", cls="category")
    svg.text((LEFT + right) / 2, base + 40, "compaction budget, output tokens (instructed words)", size=11,
             anchor="middle")
    for r, regime in enumerate(regimes):
        colour, offset = look.colours[regime], (r - (len(regimes) - 1) / 2) * 6
        points = [(xs[b] + offset, base - PLOT_HEIGHT * sweep[b]["rates"][regime]["rate"])
                  for b in budgets if sweep[b]["rates"][regime]["n"]]
        for (x1, y1), (x2, y2) in zip(points, points[1:]):
            svg.line(x1, y1, x2, y2, stroke=colour, width=2)
        for b in budgets:
            summary = sweep[b]["rates"][regime]
            if not summary["n"]:
                continue
            cx = xs[b] + offset
            lo, hi = base - PLOT_HEIGHT * summary["lo"], base - PLOT_HEIGHT * summary["hi"]
            svg.parts.append(f'<g class="errorbar" data-lo="{num(100 * summary["lo"])}" '
                             f'data-hi="{num(100 * summary["hi"])}">')
            svg.line(cx, lo, cx, hi, stroke=colour, width=1.2)
            svg.line(cx - 3, lo, cx + 3, lo, stroke=colour, width=1.2)
            svg.line(cx - 3, hi, cx + 3, hi, stroke=colour, width=1.2)
            svg.parts.append("</g>")
            svg.rect(cx - 3, base - PLOT_HEIGHT * summary["rate"] - 3, 6, 6, colour, cls="point",
                     extra=f' data-value="{num(100 * summary["rate"])}" data-group="{b}" data-series="{regime}"',
                     tip=f"{regime} at {b} tokens: {reports.fmt_rate(summary)}")
            entry = (samples or {}).get("by_regime", {}).get(f"{regime}|{b}")
            for rate in (entry or {}).get("per_sample", []):
                if rate is not None:
                    svg.parts.append(f'<circle class="sample" cx="{num(cx + 8)}" cy="{num(base - PLOT_HEIGHT * rate)}" '
                                     f'r="2" fill="#FFFFFF" stroke="{colour}" stroke-width="1"/>')
    legend(svg, right + 20, top, items)
    svg.height = base + 54
    return svg.render()


def figures_for(analysis: dict) -> tuple:
    """The figures a bank gets: the five, and the sweep figure when it has more than one budget."""
    return FIGURES + ((SWEEP_FIGURE,) if analysis.get("sweep") else ())


def render_figures(results: dict, analysis: dict, stamped: bool = True) -> dict[str, str]:
    """The figures, one look for all; stamped=False leaves out the label stamp (report.html states it once)."""
    look = xr001_look(analysis, stamped)
    _, retained, _, _ = retention_cells(analysis)
    plotted = {FIGURES[0][0]: [s["rate"] for m in analysis["models"] for s in analysis["corruption"][m].values()
                               if s["n"]],
               FIGURES[2][0]: [s["rate"] for m in analysis["models"] for s in analysis["multihop"][m].values()
                               if s["n"]],
               FIGURES[4][0]: [s["rate"] for s in retained.values()]}
    why = xr001_why(analysis, plotted)
    return {
        FIGURES[0][0]: figure_corruption(analysis, look, why.get(FIGURES[0][0])),
        FIGURES[1][0]: figure_classes(analysis, look, why.get(FIGURES[1][0])),
        FIGURES[2][0]: figure_multihop(analysis, look, why.get(FIGURES[2][0])),
        FIGURES[3][0]: figure_tokens(results, analysis, look, why.get(FIGURES[3][0])),
        FIGURES[4][0]: figure_retention(analysis, look, why.get(FIGURES[4][0])),
        **({SWEEP_FIGURE[0]: figure_sweep(analysis, look)} if analysis.get("sweep") else {}),
    }


# ============================================================================================
# RESULTS.md and report.html
# ============================================================================================
def render_results_md(analysis: dict, figures_rel: str, source: str) -> str:
    verdicts = xr001_analysis.evaluate_predictions(analysis)
    title = "SIMULATED results (stand-in model, not a result)" if analysis.get("simulated") else "Results"
    out = [f"# {title}", "",
           f"Generated by `paper/make_figures.py` from `{source}`; do not edit by hand (rerun the script).", "",
           xr001_report.status_banner(analysis), ""]
    out += ["## Verdicts on the pre-registered predictions", ""]
    if not analysis["confirmatory"]:
        out += [f"{reports.confirmatory_note(analysis)}: these verdicts carry no confirmatory weight.", ""]
    for v in verdicts:
        out += [f"### {xr001_report.verdict_with_guards(v, ': ')}", "", v["claim"][0].upper() + v["claim"][1:] + ".",
                ""]
        out += [f"- {line}" for line in v["evidence"]] + [""]
    if not verdicts:
        out += ["No prediction can be judged: the bank lacks the regimes the predictions compare.", ""]
    out += ["## Numeric-corruption rate", "", xr001_report.render_corruption_table(analysis), ""]
    for name, caption in figures_for(analysis):
        out += [f"![{caption}]({figures_rel}/{name})", ""]
    return "\n".join(out)


def md_tables_to_html(markdown: str) -> str:
    """The markdown of analysis.md as HTML: headings, paragraphs, lists and pipe tables, `code` and **strong**
    rendered."""
    out, table = [], []
    inline = reports.inline_html

    def cells(line: str) -> list[str]:
        """A table row's cells; a pipe escaped as \\| is a pipe inside a cell."""
        inner = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
        return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]

    def flush():
        if table:
            head, rows = table[0], table[2:]
            out.append("<table><thead><tr>" + "".join(f"<th>{inline(c)}</th>" for c in cells(head)) + "</tr></thead><tbody>"
                       + "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in cells(r)) + "</tr>" for r in rows)
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


REPORT_STYLE = ("body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;"
                "padding:0 1em;color:#111}table{border-collapse:collapse;margin:0.6em 0}td,th{border:1px solid #bbb;"
                "padding:3px 8px;text-align:left;font-size:0.9em}th{background:#f0f0f0}.headline{font-size:1.1em;"
                "padding:0.2em 0.9em;border-left:5px solid #0072B2;background:#f4f8fb}.headline p{margin:0.6em 0}"
                ".headline .label{font-weight:bold;letter-spacing:0.03em;font-size:1.1em}.label-ok{color:#0072B2}"
                ".label-warn{color:#B00000}.headline .verdicts{font-weight:bold}"
                ".states{display:grid;grid-template-columns:1fr 1fr;gap:1em}.states pre{white-space:pre-wrap;"
                "background:#fafafa;border:1px solid #ddd;padding:0.6em;font-size:0.85em}figure{margin:1.5em 0}"
                "figcaption{color:#555;font-size:0.85em}")


def report_head(title: str, heading: str) -> list[str]:
    """A report's opening: the document title (the tab's name) and the page heading; neither states the label."""
    return ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{html.escape(title)}</title>",
            f"<style>{REPORT_STYLE}</style></head><body>", f"<h1>{html.escape(heading)}</h1>"]


def label_block(label: str, simulated: bool, why: str, verdicts: str) -> str:
    """The one place a report states its label and the SIMULATED mark: the marks, why and what they mean, then
    the verdicts."""
    marks = ("SIMULATED · " if simulated else "") + label
    tone = "label-ok" if label == "CONFIRMATORY" and not simulated else "label-warn"
    why = why[:1].upper() + why[1:]
    return (f'<div class="headline"><p class="label {tone}">{html.escape(marks)}</p>'
            + (f'<p class="why">{reports.inline_html(why)}</p>' if why else "")
            + f'<p class="verdicts">{reports.inline_html(verdicts)}</p></div>')


def figures_html(figures: dict[str, str], names: list[str]) -> list[str]:
    """The figures, each captioned with its number and its file (the title is the figure's own)."""
    parts = ["<h2>Figures</h2>"]
    for number, name in enumerate(names, 1):
        parts.append(f'<figure>{figures[name]}<figcaption>Figure {number} · file: <a href="figures/{name}">'
                     f"figures/{name}</a></figcaption></figure>")
    return parts


def xr001_verdicts(analysis: dict) -> str:
    """The verdicts in one line, the falsifier first; a withheld one without the reason the label gives."""
    verdicts = xr001_analysis.evaluate_predictions(analysis)
    falsifier = next((v for v in verdicts if v["id"] == "F"), None)
    if not falsifier:
        return "No confirmatory test: the bank lacks R1 or R2."
    guards = f" [{'; '.join(falsifier['guards'])}]" if falsifier.get("guards") else ""
    lead = "Falsifier withheld." if falsifier["verdict"] == "withheld" else \
        f"Falsifier {falsifier['verdict']}: {falsifier['evidence'][0]}{guards}."
    return " ".join([lead] + [f"{xr001_report.verdict_with_guards(v)}." for v in verdicts if v["id"] != "F"])


def render_report(results: dict, analysis: dict, figures: dict[str, str]) -> str:
    """report.html: the label once, at the top, then analysis.md's tables, the figures (as render_figures makes
    them with stamped=False) and the final states side by side."""
    lead = "SIMULATED: " if analysis.get("simulated") else ""       # the demo's stand-in model, never a result
    parts = report_head(f"{lead}{xr001.PROTOCOL_ID} report", f"{xr001.PROTOCOL_ID}: what compaction loses")
    parts.append(label_block(analysis["label"], bool(analysis.get("simulated")),
                             xr001_report.label_explanation(analysis), xr001_verdicts(analysis)))
    parts.append(md_tables_to_html(xr001_report.render_body(analysis, labelled=False)))
    parts += figures_html(figures, [name for name, _ in figures_for(analysis)])
    parts.append("<h2>What was lost: final states side by side</h2>")
    examples = results.get("example_states") or []
    if not examples:
        parts.append("<p>This results.json carries no final states (the reference format does not).</p>")
    index = {(e["model"], e["regime"], e["episode"]): e["final_state"] for e in examples}
    for model in analysis["models"]:
        episodes = sorted({e["episode"] for e in examples if e["model"] == model})
        for episode in episodes:
            prose, typed = index.get((model, "R1", episode)), index.get((model, "R2", episode))
            parts.append(f"<h3>{html.escape(model)}, episode {episode}</h3><div class=\"states\">")
            for name, state in (("R1 prose", prose), ("R2 typed block", typed)):
                body = html.escape(state) if state is not None else "(not in this bank)"
                parts.append(f"<div><h4>{name}</h4><pre>{body}</pre></div>")
            parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# ============================================================================================
# Entry points
# ============================================================================================
def write_outputs(outputs: dict[Path, str]) -> list[Path]:
    """Write each output (path -> text), all of them checked first: a link, or anything but a regular file where
    one goes (or anything but a folder where figures/ goes), refuses the whole set before the first is written."""
    for path in outputs:
        runfolder.refuse_unsafe(path)
    for path, text in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        runfolder.write_atomic(path, text.encode("utf-8"))
    return list(outputs)


def source_label(source: Path, out_dir: Path) -> str:
    """How RESULTS.md names its source: relative to the output folder or to the repository, never absolute."""
    source, out_dir = source.resolve(), out_dir.resolve()
    for base in (out_dir, REPO_ROOT):
        if source.is_relative_to(base):
            return Path(os.path.relpath(source, out_dir if base == out_dir else REPO_ROOT)).as_posix()
    return f"{source.parent.name}/{source.name}"


def regenerate(results: dict, out_dir: Path, source: str = "results.json", tasks_path: Path | None = None,
               analysis: dict | None = None, table: dict | None = None) -> list[Path]:
    """Write figures/, RESULTS.md and report.html into out_dir, and nothing anywhere else; `analysis` is the
    bank's analysis when the caller has made it already (a large bank is then analysed once, not twice), and
    `table` its probes as columns when the caller has them."""
    analysis = analysis or bank.analyze_bank(results, tasks_path, table)
    if analysis.get("study") == "constraints":
        return regenerate_constraints(analysis, out_dir, source)
    if analysis.get("study") == "adversarial":
        return regenerate_adversarial(analysis, out_dir, source)
    figures = render_figures(results, analysis)
    outputs = {out_dir / "figures" / name: svg for name, svg in figures.items()}
    outputs[out_dir / "RESULTS.md"] = render_results_md(analysis, "figures", source)
    outputs[out_dir / "report.html"] = render_report(results, analysis, render_figures(results, analysis, False))
    return write_outputs(outputs)


# ============================================================================================
# Constraints study (protocol/CONSTRAINTS.md): its figures, RESULTS.md and report
# ============================================================================================
CONSTRAINT_FIGURES = (("fig_c_compliance.svg", "Compliance with the standing instruction per condition"),
                      ("fig_c_retention.svg", "Final states (and sidecar registries) that still carry the instruction"))


def constraints_why(analysis: dict, kept: dict) -> dict[str, str]:
    """On an UNINFORMATIVE bank, one line per figure saying why its bars sit where they do, from the bank's own
    counts; nothing for any other bank."""
    if analysis["label"] != "UNINFORMATIVE":
        return {}
    models, cells = analysis["models"], analysis["compliance"]
    replies = sum(s["n"] for m in models for s in cells.get(m, {}).values())
    silent = sum(c["no_answer"] for m in models for c in analysis["classes"].get(m, {}).values())
    full = ", ".join(f"{reports.pct(cells[m]['FULL+']['rate'])} for {m}" for m in models
                     if cells.get(m, {}).get("FULL+"))
    reason = (f"With the full transcript and the instruction (FULL+) the replies complied {full or 'never'}, under "
              f"the {constraints_analysis.INFORMATIVE_MIN_FULL:.0%} a model needs to count: no model follows the "
              f"instructions, so compaction has nothing to lose.")
    compliance = [s["rate"] for m in models for s in cells.get(m, {}).values() if s["n"]]
    carried = [s["rate"] for (m, _), s in kept.items() if m in models and s["n"]]
    states = sum(s["n"] for (m, _), s in kept.items() if m in models)
    lead = {name: f"Why the bars sit {position}" if position else "Why these bars"
            for name, position in ((CONSTRAINT_FIGURES[0][0], bars_position(compliance)),
                                   (CONSTRAINT_FIGURES[1][0], bars_position(carried)))}
    return {CONSTRAINT_FIGURES[0][0]: f"{lead[CONSTRAINT_FIGURES[0][0]]}: {silent} of {replies} replies gave no "
                                      f"CHOICE: line, which is never compliant. {reason}",
            CONSTRAINT_FIGURES[1][0]: f"{lead[CONSTRAINT_FIGURES[1][0]]}: "
                                      f"{sum(s['k'] for (m, _), s in kept.items() if m in models)} of {states} final "
                                      f"states (or registries) hold every key term of their instruction. {reason}"}


def constraint_figures(analysis: dict, stamped: bool = True) -> dict[str, str]:
    """The study's two figures, one look for both; stamped=False leaves out the label stamp (report.html)."""
    note = None if analysis["confirmatory"] else analysis["label"]
    if analysis.get("simulated"):
        note = "SIMULATED (stand-in model, not a result)" + (f": {note}" if note else "")
    groups = analysis["groups"]
    regimes = analysis["regimes"]
    cells = {(m, r): s for m in groups for r, s in analysis["compliance"].get(m, {}).items()}
    kept = {(m, r): e["carried"] for m in groups for r, e in analysis["retention"].get(m, {}).items()}
    kept_regimes = [r for r in regimes if any((m, r) in kept for m in groups)]
    look = make_look(analysis, note if stamped else None,
                     [group_room(len(regimes))] + ([group_room(len(kept_regimes))] if kept_regimes else []))
    why = constraints_why(analysis, kept)
    return {
        CONSTRAINT_FIGURES[0][0]: grouped_bars(CONSTRAINT_FIGURES[0][1], "share of probes answered with the compliant "
                                               "option; FULL- is the prior, +UB the upper bound", groups, regimes,
                                               cells, "compliant (%)", look, why=why.get(CONSTRAINT_FIGURES[0][0])),
        CONSTRAINT_FIGURES[1][0]: grouped_bars(CONSTRAINT_FIGURES[1][1], "deterministic key-term rule", groups,
                                               kept_regimes, kept, "carried (%)", look,
                                               why=why.get(CONSTRAINT_FIGURES[1][0])),
    }


def constraints_label_why(analysis: dict) -> str:
    """Why a constraints bank has its label and what that means (the report's label block)."""
    label = analysis["label"]
    why = "; ".join(analysis["reasons"]) + ". " if analysis["reasons"] else ""
    meaning = constraints_analysis.uninformative_explanation() if label == "UNINFORMATIVE" else \
        reports.label_consequence(label)
    return why + meaning[:1].upper() + meaning[1:]


def regenerate_constraints(analysis: dict, out_dir: Path, source: str) -> list[Path]:
    figures = constraint_figures(analysis)
    outputs = {out_dir / "figures" / name: svg for name, svg in figures.items()}
    body = constraints_analysis.render_md(analysis)
    lead = "SIMULATED " if analysis.get("simulated") else ""
    md = [f"# {lead}Results: {constraints.PROTOCOL_ID}", "",
          f"Generated by `paper/make_figures.py` from `{source}`; do not edit by hand (rerun the script).", "",
          body, ""] + [f"![{caption}](figures/{name})\n" for name, caption in CONSTRAINT_FIGURES]
    outputs[out_dir / "RESULTS.md"] = "\n".join(md)
    test = analysis["confirmatory_test"]
    parts = report_head(f"{lead}{constraints.PROTOCOL_ID} report",
                        f"{constraints.PROTOCOL_ID}: do standing instructions survive compaction?")
    parts.append(label_block(analysis["label"], bool(analysis.get("simulated")), constraints_label_why(analysis),
                             f"Confirmatory test, {test['second']} vs {test['first']}: {test['verdict']}."))
    parts.append(md_tables_to_html(constraints_analysis.render_body(analysis)))
    parts += figures_html(constraint_figures(analysis, stamped=False), [name for name, _ in CONSTRAINT_FIGURES])
    parts.append("</body></html>")
    outputs[out_dir / "report.html"] = "\n".join(parts) + "\n"
    return write_outputs(outputs)


# ============================================================================================
# Adversarial study (protocol/ADVERSARIAL.md): its RESULTS.md and report (its tables are the result; no figures)
# ============================================================================================
def regenerate_adversarial(analysis: dict, out_dir: Path, source: str) -> list[Path]:
    body = adversarial_analysis.render_md(analysis)
    lead = "SIMULATED " if analysis.get("simulated") else ""
    md = [f"# {lead}Results: {adversarial.PROTOCOL_ID}", "",
          f"Generated by `paper/make_figures.py` from `{source}`; do not edit by hand (rerun the script).", "", body]
    outputs = {out_dir / "RESULTS.md": "\n".join(md) + "\n"}
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{lead}{adversarial.PROTOCOL_ID} report</title>",
             f"<style>{REPORT_STYLE}</style></head><body>",
             *(f"<p><b>{reports.inline_html(line)}</b></p>"
               for line in adversarial_analysis.render_headline(analysis).splitlines()),
             md_tables_to_html(body), "</body></html>"]
    outputs[out_dir / "report.html"] = "\n".join(parts) + "\n"
    return write_outputs(outputs)


class InputError(Exception):
    """Bad input or an unusable output folder: main prints it as one line and exits 2."""


def read_results(path: Path) -> tuple[dict, dict]:
    """The parsed results.json and its probes as columns (run_pilot.bank_table), or InputError saying what is
    wrong with it and what to do."""
    if path.is_dir():
        inside = path / "results.json"
        hint = f"; did you mean {inside}?" if inside.is_file() else "; name the results.json of a run"
        raise InputError(f"{path} is a folder, not a results.json{hint}")
    if not path.exists():
        raise InputError(f"no results.json at {path}; run the pilot first, or name an existing results.json")
    if not path.is_file():
        raise InputError(f"{path} is not a regular file (a device, pipe or socket); name the results.json of a run")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read {path} ({getattr(err, 'strerror', None) or err}); check the path and its "
                         f"permissions") from None
    try:
        results = json.loads(text)
    except RecursionError:
        raise InputError(f"{path} is not a results file these figures can be made from (its JSON is nested too "
                         f"deeply); point at the results.json a run wrote") from None
    except ValueError as err:
        raise InputError(f"{path} is not valid JSON ({err}); point at the results.json a run wrote") from None
    surrogate = records.lone_surrogate(text, results)
    problem = records.lone_surrogate_problem("it", surrogate) if surrogate else shape_problem(results)
    table = None if problem else bank.bank_table(results)
    bank.hold_until_exit(results, table)
    if not problem:
        problems = bank.results_shape_problems(results, table)
        problem = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
    if problem:
        raise InputError(f"{path} is not a results file these figures can be made from: {problem}")
    return results, table


def read_handover(stream) -> tuple[dict, dict]:
    """The (results, analysis) pair run_pilot.py pipes in after analysing a bank."""
    if stream is None or stream.isatty():
        raise InputError("--handover reads what run_pilot.py pipes in, and nothing is piped in here; leave "
                         "--handover out")
    try:
        data = json.loads(stream.read())
    except ValueError as err:
        raise InputError(f"--handover expects the JSON run_pilot.py pipes in ({err}); without run_pilot.py, "
                         f"leave --handover out") from None
    if not isinstance(data, dict) or not isinstance(data.get("analysis"), dict) or not data["analysis"].get("label") \
            or shape_problem(data.get("results")):
        raise InputError("--handover expects the results and analysis run_pilot.py pipes in; without run_pilot.py, "
                         "leave --handover out")
    return data["results"], data["analysis"]


JSON_TYPES = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
              list: "a list", dict: "an object"}


def shape_problem(results) -> str | None:
    """What is wrong with the shape of a parsed results.json, or None; the fields the figures read."""
    if not isinstance(results, dict):
        return f"expected a JSON object, found {JSON_TYPES.get(type(results), type(results).__name__)}"
    expected = {"models": list, "regimes": list, "probes": list, "cells": dict, "compaction_stage": list,
                "compaction_tokens": dict, "calls": list, "example_states": list, "run": dict}
    required = ("models", "regimes", "probes")
    for field, kind in expected.items():
        if field not in results:
            if field in required:
                return f'"{field}" is missing'
            continue
        if not isinstance(results[field], kind):
            found = JSON_TYPES.get(type(results[field]), type(results[field]).__name__)
            return f'"{field}" is {found}, expected {"a list" if kind is list else "an object"}'
    for field in ("probes", "compaction_stage", "calls", "example_states"):
        if not bank.rows_are_objects(results.get(field, [])):
            return f'"{field}" holds an entry that is not an object'
    if any(not isinstance(v, dict) for v in results.get("compaction_tokens", {}).values()):
        return '"compaction_tokens" holds an entry that is not an object'
    return None


def check_out_dir(out_dir: Path) -> None:
    """Refuse a folder that cannot be written, or that holds someone else's files (paper/ is ours)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{out_dir} is a file, not a folder; choose a folder with --out DIR")
    above = next(p for p in (out_dir, *out_dir.parents) if p.exists())
    if not above.is_dir():
        raise InputError(f"{out_dir} lies under the file {above}; choose a folder with --out DIR")
    if out_dir.resolve() != PAPER_DIR:
        try:
            commands.refuse_foreign_folder(out_dir)
        except records.PilotError as err:
            raise InputError(str(err)) from None
    if not commands.folder_writable(out_dir):
        raise InputError(f"cannot write into {out_dir} (read-only); write the figures and report elsewhere with "
                         f"--out DIR")


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad option gives one line that says what to do next."""

    def error(self, message):
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="make_figures.py", description="Regenerate figures, RESULTS.md and report.html from "
                           "a results.json (no raw logs, no server), all into one folder.")
    parser.add_argument("results_json", nargs="?", metavar="RESULTS_JSON", help=f"a results.json (default: {records.display_path(PAPER_SOURCE)}, "
                        f"the worked example the README names, never the most recent run)")
    parser.add_argument("--out", metavar="DIR", help="folder for figures/, RESULTS.md and report.html (default: paper/ with no "
                                      "RESULTS_JSON, else the folder of RESULTS_JSON)")
    parser.add_argument("--tasks", metavar="FILE", help="the task file the probes are checked against (default: the "
                        "one the bank records, else tasks/tasks.json); for a bank made on an external task set")
    parser.add_argument("--handover", action="store_true", help="used by run_pilot.py, which has just analysed "
                        "RESULTS_JSON: read its analysis and the few fields the figures need from standard input "
                        "instead of reading and analysing the file again")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:          # --help, or a bad option already explained in one line
        return exc.code if isinstance(exc.code, int) else 2
    path = Path(args.results_json) if args.results_json else PAPER_SOURCE
    out_dir = Path(args.out) if args.out else (path.parent if args.results_json else PAPER_DIR)
    if args.handover and not (args.results_json and args.out):
        print("error: --handover needs RESULTS_JSON and --out (it is how run_pilot.py hands over an analysis it "
              "has just made); leave --handover out", file=sys.stderr)
        return 2
    try:
        with bank.collector_paused():       # a large bank: millions of small objects and no cycles
            analysis = table = None
            if args.handover:
                results, analysis = read_handover(sys.stdin)
            else:
                results, table = read_results(path)
            check_out_dir(out_dir)
            written = regenerate(results, out_dir, source_label(path, out_dir),
                                 Path(args.tasks) if args.tasks else None, analysis, table)
    except records.PilotError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, ZeroDivisionError) as err:
        if args.handover:
            print(f"error: the analysis piped in with --handover is not one run_pilot.py makes ({type(err).__name__}: "
                  f"{err}); leave --handover out to analyse {path} itself", file=sys.stderr)
        else:
            print(f"error: {path} is not a results file these figures can be made from ({type(err).__name__}: "
                  f"{err}); point at the results.json a run wrote", file=sys.stderr)
        return 2
    except OSError as err:
        if records.is_disk_full(err):
            print(f"error: {records.DiskFull(err.filename or out_dir, 'free some space and run the same command again')}",
                  file=sys.stderr)
            return records.EXIT_DISK_FULL
        print(f"error: cannot write {err.filename or out_dir} ({err.strerror or err}); choose another folder with "
              f"--out DIR", file=sys.stderr)
        return 2
    for item in written:
        print(item)
    return 0


if __name__ == "__main__":
    bank.EXIT_WITHOUT_FREEING = True
    bank.end_process(main())
