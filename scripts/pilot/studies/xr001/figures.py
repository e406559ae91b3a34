"""XR-001, figures (protocol/PROTOCOL.md section 5): the five figures of a bank (corruption,
classes, multi-hop, realized compaction tokens, write-time retention) and the budget sweep's, the
narrative RESULTS.md, and report.html, from the analysis alone (and, for the token histogram,
results.json's call records)."""
from __future__ import annotations

import html
import re

from ...bank import call_stage, is_primary
from ...inputs import budget_words
from ...probes import CLASSES
from ...records import COMPACTION_NUM_PREDICT
from ...reports import (answer_md, confirmatory_note, figures_html, fmt_rate, md_tables_to_html,
                        pct, report_head, report_opening_html)
from ...svg import (LEFT, MARGIN, PLOT_HEIGHT, Figure, Look, Svg, bars_position, group_room,
                    grouped_bars, header, legend, legend_width, make_look, num, text_width, y_axis)
from .design import PROTOCOL_ID
from .analysis import CEILING_MAX_R0_CORRUPTION
from .predictions import evaluate_predictions
from .report import (HEADLINE_FIGURE, answer, label_explanation, render_body,
                     render_corruption_table, status_banner, verdict_with_guards)


CLASS_COLOURS = {"correct": "#D9D9D9", "off_by_one": "#E69F00", "conflation": "#CC79A7",
                 "other_wrong": "#56B4E9", "omission": "#000000"}

FIGURES = (
    ("fig_a_corruption.svg", "Numeric-corruption rate by model and regime"),
    ("fig_b_classes.svg", "Corruption classes by regime, pooled over models"),
    ("fig_c_multihop.svg", "Multi-hop completion by model and regime"),
    ("fig_d_compaction_tokens.svg", "Realized compaction tokens per call"),
    ("fig_e_retention.svg", "Write-time retention of entity values"),
)
SWEEP_FIGURE = ("fig_f_budget_sweep.svg", "Corruption against compaction budget (exploratory)")


def xr001_look(analysis: dict, stamped: bool = True) -> Look:
    """The look of XR-001's figures: models named as the narrowest of its grouped figures allows."""
    retained = [r for r in analysis["regimes"] if r in analysis["retention"]["by_regime"]]
    rooms = [group_room(len(analysis["regimes"]))] + ([group_room(len(retained),
        beside=True)] if retained else [])
    return make_look(analysis, confirmatory_note(analysis), rooms, stamped)


def xr001_why(analysis: dict, cells: dict[str, list[float]]) -> dict[str, str]:
    """On an UNINFORMATIVE bank, one line per figure saying why its bars sit where they do, from the
    bank's own counts (cells: each figure's plotted rates); nothing for any other bank."""
    if analysis["label"] != "UNINFORMATIVE":
        return {}
    classes, regimes = analysis["classes"], analysis["regimes"]
    total = sum(classes[r][c] for r in regimes for c in CLASSES)
    omitted = sum(classes[r]["omission"] for r in regimes)
    wrong = [f"{m} {pct(c['r0_rate'])}" for m, c in analysis["ceiling"].items()]
    who = (
        f"{wrong[0].rsplit(' ', 1)[0]} already gets {wrong[0].rsplit(' ', 1)[1]}"
        if len(wrong) == 1
        else f"the models already get {', '.join(wrong)}"
    )
    ceiling = (f"With the full transcript (R0), {who} wrong, above the "
               f"{pct(CEILING_MAX_R0_CORRUPTION)} ceiling: no model can do the task, so these "
               f"numbers say nothing about compaction.")
    omissions = f"{omitted} of {total} answers gave no parseable ANSWER: line"

    def lead(name: str, because: str) -> str:
        """Why the figure's bars sit at one end (when they do and the bank says why), then the
        ceiling."""
        position = bars_position(cells.get(name, []))
        return (f"Why the bars sit {position}: {because} " if position and because
                else "") + ceiling

    at_cap = analysis["budget"].get("at_cap") or {}
    capped = "; ".join(f"{r} {c['k']} of {c['n']}" for r, c in at_cap.items() if c["n"])
    found = "; ".join(f"{r} {e['retained']} of {e['n_entities']} entities, {e['right']} with the "
                      "right value"
                      for r, e in analysis["retention"]["by_regime"].items() if e["n_entities"])
    return {FIGURES[0][0]: lead(FIGURES[0][0], f"{omissions}, and an omission counts as corrupted."
                                if omitted else ""),
            FIGURES[1][0]: (f"Why the bars are mostly black: {omissions} (omission). " if omitted
                            * 2 > total else "")
            + ceiling,
            FIGURES[2][0]: lead(FIGURES[2][0], f"{omissions}, and an omission is never a completed "
                                "sum."
                                if omitted else ""),
            FIGURES[3][0]: (f"Compactions that stopped at the cap: {capped}. " if capped else "")
            + ceiling,
            FIGURES[4][0]: lead(FIGURES[4][0], f"the final states name {found}." if found else "")}


def figure_corruption(analysis: dict, look: Look | None = None, why: str | None = None) -> str:
    cells = {
        (m, r): analysis["corruption"][m][r]
        for m in analysis["models"]
        for r in analysis["regimes"]
    }
    return grouped_bars(FIGURES[0][1], "Probes not answered correctly; whiskers: 95% Wilson "
                        "intervals",
                        analysis["models"], analysis["regimes"], cells, "numeric-corruption rate "
                        "(%)",
                        look or xr001_look(analysis), why=why)


def figure_multihop(analysis: dict, look: Look | None = None, why: str | None = None) -> str:
    cells = {
        (m, r): analysis["multihop"][m][r] for m in analysis["models"] for r in analysis["regimes"]
    }
    return grouped_bars(FIGURES[2][1], "Q7 and Q8 answered correctly; whiskers: 95% Wilson "
                        "intervals",
                        analysis["models"], analysis["regimes"], cells, "multi-hop completion (%)",
                        look or xr001_look(analysis), why=why)


def retention_cells(analysis: dict) -> tuple[list[str], dict, dict, list[str]]:
    """The retention figure's regimes, its solid cells (right values), outlined cells (names found)
    and flags."""
    regimes = [r for r in analysis["regimes"] if r in analysis["retention"]["by_regime"]]
    cells, names, flagged = {}, {}, []
    for model in analysis["models"]:
        for regime in regimes:
            agg = analysis["retention"]["by_model"].get(f"{model}|{regime}")
            if agg and agg["n_entities"]:
                cells[(model, regime)] = {"k": agg["right"], "n": agg["n_entities"],
                                          "rate": agg["right"] / agg["n_entities"], "lo": 0,
                                          "hi": 0}
                names[(model, regime)] = {"k": agg["retained"], "n": agg["n_entities"],
                                          "rate": agg["retained"] / agg["n_entities"], "lo": 0,
                                          "hi": 0}
                if agg["over_retained"]:
                    cells[(model,
                           regime)]["flag"] = "the bank counted more right values than names found"
                    flagged.append(f"{model} {regime}: {agg['correct']} right values over "
                                   f"{agg['retained']} names found")
    return regimes, cells, names, flagged


def figure_retention(analysis: dict, look: Look | None = None, why: str | None = None) -> str:
    """The values P3 reads, found with the right value (solid), beside the names found with any
    value (outlined); a row whose bank counted more right values than names found is flagged, never
    shown above its names."""
    regimes, cells, names, flagged = retention_cells(analysis)
    readers = {analysis["retention"]["by_regime"][r]["right_reader"] for r in regimes}
    subtitle = ("Solid: entity values found with the right value (what P3 reads); outlined: entity "
                "names found, "
                "with any value. Exploratory" + ("; prose read by the sentence that names the "
                                                 "entity"
                                                 if "sentence" in readers else "") +
                ("; prose read by the paper's crude nearest-number heuristic"
                 if "nearest" in readers else ""))
    footnotes = [f"! The bank's own count is inconsistent: {'; '.join(flagged)}. Each such state "
                 "is plotted "
                 f"as its names found."] if flagged else []
    return grouped_bars(FIGURES[4][1], subtitle, analysis["models"], regimes, cells,
                        "values retained with the right value (%)", look or xr001_look(analysis),
                        with_errors=False, beside=names, beside_label="names found (outline)",
                        footnotes=footnotes,
                        why=why)


def figure_classes(analysis: dict, look: Look | None = None, why: str | None = None) -> str:
    regimes, look = analysis["regimes"], look or xr001_look(analysis)
    bar_w, gap = 60, 100
    right = LEFT + (bar_w + gap) * len(regimes) + 10
    width = max(560, right + 10 + legend_width(list(CLASSES)) + MARGIN)
    title = FIGURES[1][1]
    svg = Svg(width, 0, title)
    top = header(svg, title, look.stamp, "Share of probes per class; bracket: incident signature "
                 "(off_by_one + "
                 "conflation)", why)
    y_axis(svg, LEFT, top, PLOT_HEIGHT, right, "share of probes (%)")
    base = top + PLOT_HEIGHT
    for i, regime in enumerate(regimes):
        counts = analysis["classes"][regime]
        total = sum(counts[c] for c in CLASSES)
        x = LEFT + 20 + i * (bar_w + gap)
        y = base
        signature_span = []
        for cls in CLASSES:
            share = counts[cls] / total if total else 0.0
            h = PLOT_HEIGHT * share
            svg.rect(x, y - h, bar_w, h, CLASS_COLOURS[cls], cls="bar",
                     extra=f' data-value="{num(100 * share)}" data-group="{regime}" '
                     f'data-series="{cls}" '
                           f'stroke="#FFFFFF" stroke-width="0.5"', tip=f"{regime} {cls}: "
                           f"{counts[cls]}/{total}")
            if cls in ("off_by_one", "conflation"):
                signature_span.append((y - h, y))
            y -= h
        top_s, bottom_s = min(s[0] for s in signature_span), max(s[1] for s in signature_span)
        svg.parts.append(f'<g class="signature" data-count="{counts["signature"]}">')
        svg.line(x + bar_w + 4, top_s, x + bar_w + 4, bottom_s, stroke="#B00000", width=2)
        svg.line(x + bar_w, top_s, x + bar_w + 4, top_s, stroke="#B00000", width=2)
        svg.line(x + bar_w, bottom_s, x + bar_w + 4, bottom_s, stroke="#B00000", width=2)
        label_y = min(max((top_s + bottom_s) / 2 + 4, top + 10), base - 5)   # off the axis lines
        svg.text(x + bar_w + 8, label_y, f"signature {counts['signature']}", size=10,
                 fill="#B00000", cls="value")
        svg.parts.append("</g>")
        svg.line(x + bar_w / 2, base, x + bar_w / 2, base + 4)
        svg.text(x + bar_w / 2, base + 17, regime, size=12, anchor="middle", cls="category")
    svg.text((LEFT + right) / 2, base + 40, "regime", size=11, anchor="middle")
    legend(svg, right + 10, top, [(c, CLASS_COLOURS[c]) for c in CLASSES])
    svg.height = base + 54
    return svg.render()


def figure_tokens(results: dict, analysis: dict, look: Look | None = None,
                  why: str | None = None) -> str:
    """Histogram of realized tokens per compaction call, one row per regime, the cap marked."""
    look = look or xr001_look(analysis)
    cap = (results.get("run") or {}).get("compaction_cap", COMPACTION_NUM_PREDICT)
    regimes = [r for r in analysis["regimes"] if (analysis.get("definitions") or {}).get(r,
        {}).get("compacts")]
    per_regime = {r: [c["eval_count"] for c in results.get("calls") or []
                      if c["regime"] == r and call_stage(c) == "compaction" and is_primary(c)
                      and c.get("eval_count") is not None
                      and c["model"] in analysis["models"]] for r in regimes}
    top_value = max([cap] + [v for vals in per_regime.values() for v in vals])
    # bins (0, 16], (16, 32], ...: a call at the cap falls left of its line
    bin_w = 16
    n_bins = max(1, -(-top_value // bin_w))
    # Each row: its title, a band for the mean's label, then the bars (never under a label), then
    # the axis.
    row_h, title_band, label_band, axis_band = 124, 16, 16, 34
    bar_room = row_h - title_band - label_band - axis_band
    plot_w = 420
    items = [(f"{r} calls per 16 tokens", look.colours[r]) for r in regimes]
    legend_x = LEFT + plot_w + 70
    width = max(780, legend_x + legend_width([label for label,
                                              _ in items] + [f"cap ({cap} tokens)"]) + MARGIN)
    title = FIGURES[3][1]
    svg = Svg(width, 0, title)
    plot_top = header(svg, title, look.stamp, "Output tokens of each compaction call as the "
                      "server counted them; "
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
            svg.rect(LEFT + b * bin_w * scale + 1, base - h, bin_w * scale - 2, h,
                     look.colours[regime],
                     cls="bar", extra=f' data-value="{count}" data-group="{regime}" '
                     f'data-series="{b * bin_w}"',
                     tip=f"{regime}: {count} calls with {b * bin_w + 1}-{b * bin_w + bin_w} tokens")
        mean = (results.get("compaction_tokens", {}).get(regime) or {}).get("mean")
        if mean is not None:
            mx = LEFT + mean * scale
            label_y = top + title_band + label_band - 4
            svg.line(mx, base + 2, mx, label_y - 8, stroke="#000000", width=1.5, cls="mean")
            label = f"mean {mean:.1f}"
            to_left = mean * scale > plot_w / 2
            span = (mx - 4 - text_width(label, 10), mx - 4) if to_left else (mx + 4,
                mx + 4 + text_width(label, 10))
            if span[0] <= cap_x <= span[1]:       # never across the cap line: the other side then
                to_left = not to_left
            svg.text(mx - 4 if to_left else mx + 4, label_y, label, size=10,
                     anchor="end" if to_left else "start",
                     cls="value")
        if not values:
            svg.text(LEFT + 10, base - bar_room / 2, "per-call counts are not in this results.json"
                     if mean is not None else "no counts reported", size=10, fill="#555555")
        svg.text(LEFT + plot_w + 8, base - 4, f"n = {len(values)}", size=10)
        for tick in range(0, n_bins * bin_w + 1, 64):
            svg.line(LEFT + tick * scale, base, LEFT + tick * scale, base + 4)
            svg.text(LEFT + tick * scale, base + 15, str(tick), size=9, anchor="middle")
        svg.line(cap_x, top + title_band + 2, cap_x, base, stroke="#B00000", width=1.5, dash="5 3",
                 cls="cap")
    rows_bottom = plot_top + row_h * max(1, len(regimes))
    svg.text(LEFT + plot_w / 2, rows_bottom + 4, "output tokens per compaction call", size=11,
             anchor="middle")
    svg.text(18, plot_top + row_h * max(1, len(regimes)) / 2, "calls per 16-token bin", size=11,
             anchor="middle",
             rotate=-90)
    legend(svg, legend_x, plot_top, items)
    key_y = plot_top + 18 * len(regimes) + 10
    svg.line(legend_x, key_y, legend_x + 12, key_y, stroke="#000000", width=1.5)
    svg.text(legend_x + 18, key_y + 4, "mean tokens", size=11)
    svg.line(legend_x, key_y + 18, legend_x + 12, key_y + 18, stroke="#B00000", width=1.5,
             dash="5 3")
    svg.text(legend_x + 18, key_y + 22, f"cap ({cap} tokens)", size=11)
    svg.height = max(rows_bottom + 18, key_y + 40)
    return svg.render()


def figure_sweep(analysis: dict, look: Look | None = None) -> str:
    """Corruption pooled over models against the compaction budget, one line per regime, with 95%
    intervals and, with repeated samples, each sample's own rate as a dot (the spread)."""
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
                 f"Pooled over models; whiskers: 95% {intervals} intervals; 256 tokens is the "
                 "pre-registered point")
    y_axis(svg, LEFT, top, PLOT_HEIGHT, right, "numeric-corruption rate (%)")
    base = top + PLOT_HEIGHT
    xs = {b: LEFT + 40 + i * step for i, b in enumerate(budgets)}
    for b, x in xs.items():
        svg.line(x, base, x, base + 4)
        svg.text(x, base + 17, f"{b} ({budget_words(int(b))} words)", size=11, anchor="middle",
                 cls="category")
    svg.text((LEFT + right) / 2, base + 40, "compaction budget, output tokens (instructed words)",
             size=11,
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
                     extra=f' data-value="{num(100 * summary["rate"])}" data-group="{b}" '
                     f'data-series="{regime}"',
                     tip=f"{regime} at {b} tokens: {fmt_rate(summary)}")
            entry = (samples or {}).get("by_regime", {}).get(f"{regime}|{b}")
            for rate in (entry or {}).get("per_sample", []):
                if rate is not None:
                    svg.parts.append(f'<circle class="sample" cx="{num(cx + 8)}" '
                                     f'cy="{num(base - PLOT_HEIGHT * rate)}" '
                                     f'r="2" fill="#FFFFFF" stroke="{colour}" stroke-width="1"/>')
    legend(svg, right + 20, top, items)
    svg.height = base + 54
    return svg.render()


def figures_for(analysis: dict) -> tuple:
    """The figures a bank gets: the five, and the sweep figure when it has more than one budget."""
    return FIGURES + ((SWEEP_FIGURE,) if analysis.get("sweep") else ())


def render_figures(results: dict, analysis: dict, stamped: bool = True) -> dict[str, str]:
    """The figures, one look for all; stamped=False leaves out the label stamp (report.html states
    it once)."""
    look = xr001_look(analysis, stamped)
    _, retained, _, _ = retention_cells(analysis)
    plotted = {
        FIGURES[0][0]: [
            s["rate"]
            for m in analysis["models"]
            for s in analysis["corruption"][m].values()
            if s["n"]
        ],
        FIGURES[2][0]: [
            s["rate"]
            for m in analysis["models"]
            for s in analysis["multihop"][m].values()
            if s["n"]
        ],
        FIGURES[4][0]: [s["rate"] for s in retained.values()],
    }
    why = xr001_why(analysis, plotted)
    return {
        FIGURES[0][0]: figure_corruption(analysis, look, why.get(FIGURES[0][0])),
        FIGURES[1][0]: figure_classes(analysis, look, why.get(FIGURES[1][0])),
        FIGURES[2][0]: figure_multihop(analysis, look, why.get(FIGURES[2][0])),
        FIGURES[3][0]: figure_tokens(results, analysis, look, why.get(FIGURES[3][0])),
        FIGURES[4][0]: figure_retention(analysis, look, why.get(FIGURES[4][0])),
        **({SWEEP_FIGURE[0]: figure_sweep(analysis, look)} if analysis.get("sweep") else {}),
    }


def render_results_md(analysis: dict, figures_rel: str, source: str) -> str:
    verdicts = evaluate_predictions(analysis)
    title = ("SIMULATED results (stand-in model, not a result)" if analysis.get("simulated")
             else "Results")
    out = [
        f"# {title}",
        "",
        f"Generated by `paper/make_figures.py` from `{source}`; do not edit by hand (rerun the "
        "script).",
        "",
        status_banner(analysis),
        "",
        answer_md(
            answer(analysis).sentences, ("the headline figure", f"{figures_rel}/{HEADLINE_FIGURE}")
        ),
    ]
    out += ["## Verdicts on the pre-registered predictions", ""]
    if not analysis["confirmatory"]:
        out += [f"{confirmatory_note(analysis)}: these verdicts carry no confirmatory weight.", ""]
    for v in verdicts:
        out += [f"### {verdict_with_guards(v, ': ')}", "", v["claim"][0].upper() + v["claim"][1:]
                + ".",
                ""]
        out += [f"- {line}" for line in v["evidence"]] + [""]
    if not verdicts:
        out += ["No prediction can be judged: the bank lacks the regimes the predictions compare.",
                ""]
    out += ["## Numeric-corruption rate", "", render_corruption_table(analysis), ""]
    for name, caption in figures_for(analysis):
        out += [f"![{caption}]({figures_rel}/{name})", ""]
    return "\n".join(out)


def render_report(results: dict, analysis: dict, figures: list[Figure]) -> str:
    """report.html: the label once, at the top, then analysis.md's tables, the figures (as
    render_figures makes them with stamped=False) and the final states side by side."""
    # the demo's stand-in model, never a result
    lead = "SIMULATED: " if analysis.get("simulated") else ""
    parts = report_head(f"{lead}{PROTOCOL_ID} report", f"{PROTOCOL_ID}: what compaction loses")
    parts.append(report_opening_html(analysis, label_explanation(analysis), figures))
    parts.append(md_tables_to_html(render_body(analysis, labelled=False)))
    parts += figures_html(figures, HEADLINE_FIGURE)
    parts.append("<h2 id=\"states\">What was lost: final states side by side</h2>")
    examples = results.get("example_states") or []
    if not examples:
        parts.append("<p>This results.json carries no final states (the reference format does "
                     "not).</p>")
    index = {(e["model"], e["regime"], e["episode"]): e for e in examples}
    if any("values" in e for e in examples):
        parts.append('<p>Each pinned value as the analysis scored it (P3\'s readers): <mark '
                     'class="kept">kept</mark>, '
                     '<mark class="changed">changed</mark> (the value written instead beside it), '
                     '<del class="dropped">dropped</del> (listed under the state).</p>')
    for model in analysis["models"]:
        episodes = sorted({e["episode"] for e in examples if e["model"] == model})
        for episode in episodes:
            parts.append(f"<h3>{html.escape(model)}, episode {episode}</h3><div class=\"states\">")
            for regime, name in (("R1", "R1 prose"), ("R2", "R2 typed block")):
                parts.append(
                    f"<div><h4>{name}</h4>{marked_state(index.get((model, regime, episode)))}</div>"
                )
            parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def marked_state(example: dict | None) -> str:
    """A final state as HTML: each pinned value the scoring found kept or changed marked at its
    name, and the dropped ones listed under it; a bank scored before states carried their values
    shows the text alone."""
    if example is None:
        return "<pre>(not in this bank)</pre>"
    values = example.get("values") or []
    marks = {v["name"]: v for v in values if v["class"] != "dropped"}
    body = html.escape(example["final_state"])
    if marks:
        names = re.compile(r"\b(" + "|".join(re.escape(html.escape(n)) for n in sorted(marks,
            key=len, reverse=True))
                           + r")\b")

        def mark(match: re.Match) -> str:
            value = marks[html.unescape(match.group(1))]
            said = f"kept: {value['value']}" if value["class"] == "kept" else \
                f"changed: {value['found']}, not {value['value']}"
            return f'<mark class="{value["class"]}" title="{said}">{match.group(1)}</mark>'
        body = names.sub(mark, body)
    dropped = [v for v in values if v["class"] == "dropped"]
    counts = ", ".join(f"{sum(v['class'] == c for v in values)} {c}" for c in ("kept", "changed",
        "dropped"))
    summary = (f"<p>{counts} of {len(values)}" + (": " + ", ".join(
        f'<del class="dropped">{html.escape(v["name"])} = {v["value"]}</del>' for v in dropped)
        if dropped else "")
        + (("; changed: " + ", ".join(f"{html.escape(v['name'])} {v['found']} (was {v['value']})"
                                      for v in values if v["class"] == "changed")) if any(
            v["class"] == "changed" for v in values) else "") + "</p>") if values else ""
    return f"<pre>{body}</pre>{summary}"


def figures(results: dict, analysis: dict, stamped: bool = True) -> list[Figure]:
    """The study's figures in order, as Study.report.figures gives them (stamped=False: for
    report.html)."""
    drawn = render_figures(results, analysis, stamped)
    return [Figure(name, caption, drawn[name]) for name, caption in figures_for(analysis)]


def results_md(analysis: dict, figures: list[Figure], source: str) -> str:
    """RESULTS.md, as Study.report.results_md gives it."""
    return render_results_md(analysis, "figures", source)


def report_html(results: dict, analysis: dict, figures: list[Figure]) -> str:
    """report.html, as Study.report.report_html gives it (the figures drawn with stamped=False)."""
    return render_report(results, analysis, figures)
