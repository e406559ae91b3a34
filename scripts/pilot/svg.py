"""SVG: a tiny writer of figures, standard library only, and the pieces every study's figures share:
the colours and legend names of the conditions, text laid out on estimated widths, the title with
its label stamp, axes and legends, the look of one report's figures, and bars per group and
condition with their intervals. The same analysis always gives the same bytes: no timestamps, stable
ordering, fixed number formatting."""
from __future__ import annotations

import colorsys
import dataclasses
import html
from typing import Callable, NamedTuple

from .records import SIMULATED_STAMP, verdict_of
from .reports import fmt_rate


# Okabe-Ito: distinguishable with every common form of colour blindness. R0, R1 and R2 keep their
# colours in
# every study; every other condition takes the next colour here in its study's order (then Paul
# Tol's muted
# palette, then evenly spread hues), so that each condition has one colour in all of a report's
# figures.
REGIME_COLOURS = {"R0": "#0072B2", "R1": "#D55E00", "R2": "#009E73"}
REGIME_LABELS = {"R0": "R0 full transcript", "R1": "R1 prose summary", "R2": "R2 typed state block"}
EXTRA_COLOURS = ("#E69F00", "#56B4E9", "#CC79A7", "#F0E442", "#000000", "#999999",
                 "#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677",
                 "#882255", "#AA4499")


def regime_colours(regimes: list[str]) -> dict[str, str]:
    """One colour per condition of a study (its whole list of regimes, whichever a figure shows)."""
    extras = [r for r in regimes if r not in REGIME_COLOURS]
    return {r: REGIME_COLOURS[r] if r in REGIME_COLOURS
            else extra_colour(extras.index(r)) for r in regimes}


def extra_colour(index: int) -> str:
    if index < len(EXTRA_COLOURS):
        return EXTRA_COLOURS[index]
    red, green, blue = colorsys.hls_to_rgb((index - len(EXTRA_COLOURS)) * 0.381966 % 1, 0.45, 0.6)
    return "#" + "".join(f"{round(255 * c):02X}" for c in (red, green, blue))


def regime_definitions(analysis: dict) -> dict:
    """Each regime's summary as the bank recorded it (description, exploratory, condition, ...)."""
    return analysis.get("definitions") or analysis.get("regime_definitions") or {}

def regime_labels(analysis: dict, name_of: Callable[[str, dict], str] | None = None) -> dict[str,
    str]:
    """Each condition's legend text; an exploratory one, and only it, carries a star and says so (a
    regime the bank does not describe is exploratory unless it is R0, R1 or R2). Another
    pre-registered condition is named by the study (name_of(regime, its definition)), else by its
    name."""
    definitions, labels = regime_definitions(analysis), {}
    for regime in analysis["regimes"]:
        definition = definitions.get(regime)
        if (definition or {}).get("exploratory", definition is None
                                  and regime not in REGIME_LABELS):
            labels[regime] = f"{regime}* (exploratory)"
        elif regime in REGIME_LABELS:
            labels[regime] = REGIME_LABELS[regime]
        elif name_of is not None:
            labels[regime] = f"{regime} {name_of(regime, definition or {})}"
        else:
            labels[regime] = regime
    return labels


FONT = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\""


class Figure(NamedTuple):
    """One figure of a report: its file name (under figures/), its caption and its SVG text."""

    name: str
    caption: str
    svg: str


# A tiny SVG writer: text stays text, numbers are formatted the same way every time.
# Layout works on estimated text widths: a glyph of DejaVu Sans is about 0.6 of the font size wide,
# capitals
# and '%' wider and bold wider still; the estimate errs on the wide side so that nothing estimated
# to fit overlaps.
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
            cut = max(1, int(max_width / (size * (GLYPH_WIDTH + WIDE_EXTRA)
                                          * (BOLD_FACTOR if bold else 1.0))))
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
        self.parts.append(f'<rect{cls_attr} x="{num(x)}" y="{num(y)}" width="{num(w)}" '
                          f'height="{num(h)}" '
                          f'fill="{fill}"{extra}>{body}</rect>' if body else
                          f'<rect{cls_attr} x="{num(x)}" y="{num(y)}" width="{num(w)}" '
                          f'height="{num(h)}" '
                          f'fill="{fill}"{extra}/>')

    def line(self, x1, y1, x2, y2, stroke="#000000", width=1.0, cls="", dash=""):
        cls_attr = f' class="{cls}"' if cls else ""
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<line{cls_attr} x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" '
                          f'y2="{num(y2)}" '
                          f'stroke="{stroke}" stroke-width="{num(width)}"{dash_attr}/>')

    def text(self, x, y, content, size=12, anchor="start", weight="normal", rotate=None,
             fill="#000000", cls=""):
        transform = (f' transform="rotate({num(rotate)} {num(x)} {num(y)})"' if rotate is not None
                     else "")
        cls_attr = f' class="{cls}"' if cls else ""
        self.parts.append(f'<text{cls_attr} x="{num(x)}" y="{num(y)}" font-size="{num(size)}" '
                          f'{FONT} '
                          f'text-anchor="{anchor}" font-weight="{weight}" fill="{fill}"{transform}>'
                          f'{html.escape(str(content))}</text>')

    def lines(self, x, y, lines: list[str], size, step, **kwargs) -> float:
        """Several lines of text one under another from baseline y; returns the last baseline."""
        for i, content in enumerate(lines):
            self.text(x, y + i * step, content, size=size, **kwargs)
        return y + (len(lines) - 1) * step

    def render(self) -> str:
        # The canvas size is fixed only here, so a figure may grow while it is laid out.
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{num(self.width)}" '
                f'height="{num(self.height)}" '
                f'viewBox="0 0 {num(self.width)} {num(self.height)}" role="img">\n'
                f'<title>{html.escape(self.title)}</title>\n'
                f'<rect x="0" y="0" width="{num(self.width)}" height="{num(self.height)}" '
                'fill="#FFFFFF"/>\n'
                + "\n".join(self.parts) + "\n</svg>\n")


def header(svg: Svg, title: str, note: str | None, subtitle: str = "",
           why: str | None = None) -> float:
    """Title, then the NON-CONFIRMATORY stamp on its own line, then why the bars sit where they do
    (an UNINFORMATIVE bank), then the subtitle; returns where the plot may start."""
    room = svg.width - 2 * MARGIN
    y = svg.lines(MARGIN, 24, wrap(title, 15, room, bold=True), 15, 19, weight="bold")
    if note:
        y = svg.lines(MARGIN, y + 19, wrap(note, 12, room, bold=True), 12, 16, weight="bold",
                      fill="#B00000",
                      cls="nonconfirmatory")
    if why:
        y = svg.lines(MARGIN, y + 17, wrap(why, 11, room), 11, 14, fill="#B00000", cls="why")
    if subtitle:
        y = svg.lines(MARGIN, y + 18, wrap(subtitle, 11, room), 11, 14, fill="#333333")
    return y + 26           # room above the plot for a value label at 100%


def legend(svg: Svg, x: float, y: float, items: list[tuple[str, str]]) -> None:
    for i, (label, colour) in enumerate(items):
        svg.rect(x, y + i * 18, 12, 12, colour, cls="legend-key", extra=' stroke="#333333" '
                 'stroke-width="0.5"')
        svg.text(x + 18, y + i * 18 + 10, label, size=11)


def legend_width(labels: list[str]) -> float:
    return 18 + max((text_width(label, 11) for label in labels), default=0)


def y_axis(svg: Svg, left: float, top: float, height: float, right: float, label: str,
           maximum: float = 100,
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
    """What every figure of one report shares: the label stamp (None where the page states the label
    once, at its top), each condition's legend text and colour, and how the models are written:
    their names, or M1, M2, ... with a key to the names (key) in every figure when one name does not
    fit the narrowest slot of any of them."""

    stamp: str | None
    labels: dict
    colours: dict
    models: dict
    key: list


BAR_W, GROUP_GAP = 30, 40


def group_room(n_series: int, beside: bool = False) -> float:
    """The room under a group of grouped_bars for its name."""
    return BAR_W * (2 if beside else 1) * n_series + GROUP_GAP - 6


def make_look(analysis: dict, stamp: str | None, rooms: list[float], stamped: bool = True,
              name_of: Callable[[str, dict], str] | None = None) -> Look:
    """The look of one report's figures. `stamp` is the label note a figure carries (stamped=False:
    none, where the page states the label once, at its top); a simulated bank's figures say
    SIMULATED first, whatever the study's note says."""
    groups = analysis.get("groups") or analysis["models"]
    names, key = group_labels(groups, min(rooms))
    if stamped and verdict_of(analysis).simulated and "SIMULATED" not in (stamp or ""):
        stamp = SIMULATED_STAMP + (f"; {stamp}" if stamp else "")
    return Look(stamp if stamped else None, regime_labels(analysis, name_of),
                regime_colours(analysis["regimes"]),
                dict(zip(groups, names)), key)


def group_labels(groups: list[str], room: float, size: float = 11) -> tuple[list[str],
    list[tuple[str, str]]]:
    """Names under the groups when every one fits its slot; otherwise M1, M2, ... and a key to the
    full names."""
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


# Bars per group and condition
PLOT_HEIGHT, LEFT = 260, 70
# value labels: font size, and clearance above a bar or whisker cap
VALUE_SIZE, VALUE_GAP = 9, 5


def percent_label(rate: float) -> str:
    """A whole percentage that never rounds a few cases to 0% or all but a few to 100%."""
    if 0 < rate < 0.005:
        return "<1%"
    if 0.995 <= rate < 1:
        return ">99%"
    return f"{100 * rate:.0f}%"


def grouped_bars(title: str, subtitle: str, groups: list[str], regimes: list[str], cells: dict,
                 y_label: str,
                 look: Look, with_errors: bool = True, beside: dict | None = None,
                 beside_label: str = "",
                 footnotes: list[str] = (), why: str | None = None, x_label: str = "model") -> str:
    """Bars per (group, regime) with optional Wilson error bars; cells[(group, regime)] = rate
    summary. `beside` draws a second, outlined bar right of each (another count of the same cell,
    named by beside_label in the legend); a cell whose summary carries "flag" gets a ! before its
    value, and footnotes go under the plot."""
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
        width = min(width, max(900, right + 20 + legend_width([label for label,
                                                               _ in items]) + MARGIN))
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
                               f'data-value="{num(100 * other["rate"])}" '
                               f'data-group="{html.escape(group)}" '
                               f'data-series="{regime}"', tip=f"{group} {regime} {beside_label}: "
                               f"{fmt_rate(other, False)}")
                svg.text(x + bar_w * 1.5, base - h - VALUE_GAP, percent_label(other["rate"]),
                         size=VALUE_SIZE,
                         anchor="middle", cls="beside-value")
            h = PLOT_HEIGHT * summary["rate"]
            tip = f"{group} {regime}: {fmt_rate(summary, with_errors)}" + \
                (f" ({summary['flag']})" if summary.get("flag") else "")
            svg.rect(x + 2, base - h, bar_w - 4, h, look.colours[regime], cls="bar",
                     extra=f' data-value="{num(100 * summary["rate"])}" '
                     f'data-group="{html.escape(group)}" '
                           f'data-series="{regime}"' + (' data-flag="1"' if summary.get("flag")
                                                        else ""), tip=tip)
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
                     ("!" if summary.get("flag") else "") + percent_label(summary["rate"]),
                     size=VALUE_SIZE,
                     anchor="middle", cls="value", fill="#B00000" if summary.get("flag")
                     else "#000000")
        centre = x0 + slot_w * len(regimes) / 2
        svg.line(centre, base, centre, base + 4)
        svg.text(centre, base + 17, labels[g], size=11, anchor="middle", cls="category")
    svg.text((LEFT + right) / 2, base + 40, x_label, size=11, anchor="middle")
    bottom = base + 40
    if key:
        room = width - LEFT - MARGIN
        bottom = model_key(svg, LEFT, base + 62, key, room)
    for line in footnotes:
        bottom = svg.lines(MARGIN, bottom + 20, wrap(line, 10, width - 2 * MARGIN), 10, 13,
                           fill="#B00000",
                           cls="footnote")
    legend(svg, right + 20, top, items)
    svg.height = bottom + 14
    return svg.render()


def bars_position(rates: list[float]) -> str | None:
    """Where a figure's bars sit, when they all sit at one end: "at 100%", "near 0%", ...; None
    otherwise."""
    if not rates:
        return None
    for end, name in ((1.0, "100%"), (0.0, "0%")):
        if all(rate == end for rate in rates):
            return f"at {name}"
        if all(abs(rate - end) <= 0.1 for rate in rates):
            return f"at or near {name}"
    return None
