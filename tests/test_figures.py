"""Figures, RESULTS.md and report.html (paper/make_figures.py), from results.json alone.

`python3 tests/test_figures.py --write-example` rewrites paper/example_multimodel.svg (the README's figure).
"""
import contextlib
import hashlib
import html.parser
import io
import itertools
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path
from unittest import mock

from helpers import REPO, TempDirMixin, load_module, load_tasks, reference_results, run_main
from pilot import bank, commands, folder_commands, gate_command, pages, reports, runfolder, svg
from pilot.studies.xr001 import analysis as xr001_analysis, figures as xr001_figures

mf = load_module("make_figures", REPO / "paper" / "make_figures.py")
SVG = "{http://www.w3.org/2000/svg}"
# Realistic names that differ only at the end or in the middle.
LONG_NAMES = ["hf.co/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M",
              "hf.co/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q8_0",
              "hf.co/bartowski/Meta-Llama-3.1-70B-Instruct-GGUF:Q4_K_M"]
EXAMPLE_SVG = REPO / "paper" / "example_multimodel.svg"


def synthetic_results(models, regimes=("R0", "R1", "R2"), wrong=lambda m, r: 3, complete=True) -> dict:
    """A bank where cell (model, regime) has wrong(m, r) of 120 probes wrong, with per-call token counts."""
    probes, stage, calls = [], [], []
    for mi, model in enumerate(models):
        for regime in regimes:
            n_wrong = wrong(model, regime)
            for i in range(120):
                e, q = divmod(i, 8)
                bad = i < n_wrong
                probes.append({"model": model, "regime": regime, "episode": e, "question_id": q + 1,
                               "type": "multihop" if q >= 6 else "direct", "truth": 500,
                               "answer": 600 if bad else 500, "class": "other_wrong" if bad else "correct"})
            if regime != "R0":
                for e in range(15):
                    retained = 20 - (e % 3) * (regime == "R1")
                    stage.append({"retained": retained, "correct": retained - (e % 2) * (regime == "R1"),
                                  "wrong": (e % 2) * (regime == "R1"), "n_entities": 20, "model": model,
                                  "regime": regime, "episode": e})
                    for k in range(1, 5):
                        calls.append({"model": model, "regime": regime, "episode": e, "kind": f"compact_{k}",
                                      "eval_count": 100 + 10 * k + e + mi, "done_reason": "stop",
                                      "prompt_eval_count": 300, "thinking_chars": 0})
    expected = len(models) * len(regimes) * 15
    tokens = {}
    for regime in regimes:
        vals = [c["eval_count"] for c in calls if c["regime"] == regime]
        if vals:
            by_model = {m: [c["eval_count"] for c in calls if c["regime"] == regime and c["model"] == m] for m in models}
            tokens[regime] = {"n": len(vals), "mean": sum(vals) / len(vals),
                              "by_model": {m: {"n": len(v), "mean": sum(v) / len(v)} for m, v in by_model.items()}}
    return {"models": list(models), "regimes": list(regimes), "probes": probes, "compaction_stage": stage,
            "calls": calls, "compaction_tokens": tokens,
            "cells": {"complete": expected if complete else expected - 1, "expected": expected,
                      "not_complete": 0 if complete else 1, "expected_probes_per_cell": 8}}


def synthetic_task_set(n_episodes: int = 15) -> dict:
    """A task set whose questions match synthetic_results (truth 500), so its labels come out of the probes."""
    questions = [{"id": q + 1, "type": "multihop" if q >= 6 else "direct", "truth": 500} for q in range(8)]
    return {"tasks": {"episodes": [{"questions": questions} for _ in range(n_episodes)]}, "kind": "pinned",
            "sha256": "0" * 64, "path": "synthetic"}


def example_bank() -> dict:
    """The synthetic three-model bank of the README's figure (paper/example_multimodel.svg)."""
    rates = {"R0": 6, "R1": 48, "R2": 16}
    return synthetic_results(LONG_NAMES, wrong=lambda m, r: rates[r] + 7 * LONG_NAMES.index(m))


def example_svg() -> str:
    results = example_bank()
    return xr001_figures.figure_corruption(xr001_analysis.analyze(results, synthetic_task_set()))


def parse(svg_text: str) -> ET.Element:
    return ET.fromstring(svg_text)


def bars(root: ET.Element) -> list[ET.Element]:
    return [el for el in root.iter(SVG + "rect") if el.get("class") == "bar"]


def errorbars(root: ET.Element) -> list[ET.Element]:
    return [el for el in root.iter(SVG + "g") if el.get("class") == "errorbar"]


# ------------------------------------------------------------------------------------------
# Geometry: text boxes estimated as font size x characters x 0.6 wide, from 0.8 of the size above the
# baseline to 0.25 below; rotated text (-90) turns its box on its anchor point.
# ------------------------------------------------------------------------------------------
def text_box(el: ET.Element) -> tuple[float, float, float, float]:
    x, y, size = float(el.get("x")), float(el.get("y")), float(el.get("font-size"))
    width = size * len(el.text or "") * 0.6
    start = {"start": 0.0, "middle": -width / 2, "end": -width}[el.get("text-anchor", "start")]
    if el.get("transform"):
        assert el.get("transform").startswith("rotate(-90 "), el.get("transform")
        return x - 0.8 * size, y - start - width, x + 0.25 * size, y - start
    return x + start, y - 0.8 * size, x + start + width, y + 0.25 * size


def rect_box(el: ET.Element) -> tuple[float, float, float, float]:
    x, y = float(el.get("x")), float(el.get("y"))
    return x, y, x + float(el.get("width")), y + float(el.get("height"))


def line_box(el: ET.Element) -> tuple[float, float, float, float]:
    x1, y1, x2, y2 = (float(el.get(k)) for k in ("x1", "y1", "x2", "y2"))
    return min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)


def overlaps(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def layout_problems(svg_text: str) -> list[str]:
    """Texts that leave the viewBox, overlap each other, or sit on a bar, a legend key, a whisker, an axis or
    the cap line."""
    root = parse(svg_text)
    _, _, width, height = (float(v) for v in root.get("viewBox").split())
    texts = [(el.text, text_box(el)) for el in root.iter(SVG + "text")]
    problems = [f"{t!r} leaves the canvas" for t, (x0, y0, x1, y1) in texts
                if x0 < 0 or y0 < 0 or x1 > width or y1 > height]
    problems += [f"{a!r} overlaps {b!r}" for (a, box_a), (b, box_b) in itertools.combinations(texts, 2)
                 if overlaps(box_a, box_b)]
    solid = [rect_box(el) for el in root.iter(SVG + "rect")
             if el.get("class") in ("bar", "legend-key") and float(el.get("height")) > 0.5]
    marks = [line_box(el) for g in root.iter(SVG + "g") if g.get("class") == "errorbar" for el in g.iter(SVG + "line")]
    marks += [line_box(el) for el in root.iter(SVG + "line") if el.get("class") in ("cap", "axis")]
    problems += [f"{t!r} sits on a bar or key" for t, box in texts if any(overlaps(box, r) for r in solid)]
    problems += [f"{t!r} sits on a whisker, an axis or the cap line" for t, box in texts
                 if any(overlaps(box, m) for m in marks)]
    return problems


class FigureLayoutTest(unittest.TestCase):
    def figures(self, models, **kwargs) -> dict[str, str]:
        results = synthetic_results(models, **kwargs)
        return xr001_figures.render_figures(results, xr001_analysis.analyze(results, synthetic_task_set()))

    def assert_clean(self, figures: dict[str, str]) -> None:
        for name, svg in figures.items():
            with self.subTest(figure=name):
                self.assertEqual(layout_problems(svg), [])

    def test_long_realistic_names_never_collide_or_leave_the_canvas(self):
        cases = {"one": LONG_NAMES[:1], "three": LONG_NAMES, "eight": [f"{n}-{i}" for i in range(4)
                                                                        for n in LONG_NAMES[:2]],
                 "huge": ["org/" + "very-long-model-name-" * 12 + ":q4"], "short": ["a", "b"]}
        for case, models in cases.items():
            for complete in (True, False):
                with self.subTest(case=case, complete=complete):
                    self.assert_clean(self.figures(models, complete=complete))

    def test_abbreviated_names_have_a_key_to_the_full_names(self):
        root = parse(self.figures(LONG_NAMES)["fig_a_corruption.svg"])
        categories = [t.text for t in root.iter(SVG + "text") if t.get("class") == "category"]
        self.assertEqual(categories, ["M1", "M2", "M3"])
        keys = [t.text for t in root.iter(SVG + "text") if t.get("class") == "key"]
        self.assertEqual(keys, ["M1", LONG_NAMES[0], "M2", LONG_NAMES[1], "M3", LONG_NAMES[2]])
        short = parse(self.figures(["gemma3:4b", "qwen3:14b"])["fig_a_corruption.svg"])
        self.assertEqual([t.text for t in short.iter(SVG + "text") if t.get("class") == "category"],
                         ["gemma3:4b", "qwen3:14b"])      # names that fit are written out, with no key
        self.assertFalse([t for t in short.iter(SVG + "text") if t.get("class") == "key"])

    def test_the_stamp_has_its_own_line_however_long(self):
        long_note = "UNINFORMATIVE: " + "; ".join(f"reason number {i} why no claim may rest on this" for i in range(6))
        for note in ("NON-CONFIRMATORY (partial bank)", long_note):
            with self.subTest(note=note[:20]), mock.patch.object(xr001_figures, "confirmatory_note", return_value=note):
                figures = self.figures(LONG_NAMES)
                self.assert_clean(figures)
                for svg in figures.values():
                    root = parse(svg)
                    stamp = " ".join(t.text for t in root.iter(SVG + "text") if t.get("class") == "nonconfirmatory")
                    self.assertEqual(stamp, note)
                    title_y = max(float(t.get("y")) for t in root.iter(SVG + "text") if t.get("font-size") == "15")
                    stamp_y = min(float(t.get("y")) for t in root.iter(SVG + "text")
                                  if t.get("class") == "nonconfirmatory")
                    self.assertGreater(stamp_y - title_y, 15)

    def test_the_worked_example_all_omissions_and_counts_at_the_cap(self):
        results = json.loads(mf.PAPER_SOURCE.read_text(encoding="utf-8"))
        self.assert_clean(xr001_figures.render_figures(results, bank.analyze_bank(results)))

    def test_token_histogram_with_counts_beyond_the_cap(self):
        results = synthetic_results(["m"])
        for i, call in enumerate(results["calls"]):
            call["eval_count"] = 40 + (i * 37) % 600
        figure = xr001_figures.figure_tokens(results, xr001_analysis.analyze(results, synthetic_task_set()))
        self.assertEqual(layout_problems(figure), [])

    def test_value_labels_above_bars_and_whisker_caps(self):
        for name, svg in self.figures(LONG_NAMES).items():
            root = parse(svg)
            values = [t for t in root.iter(SVG + "text") if t.get("class") == "value"]
            with self.subTest(figure=name):
                self.assertTrue(values)
                if name.startswith(("fig_a", "fig_c", "fig_e")):
                    self.assertEqual(len(values), len(bars(root)))
                    for bar, label in zip(bars(root), values):
                        self.assertLess(float(label.get("y")), float(bar.get("y")))

    def test_percent_labels_never_round_a_few_away(self):
        for rate, label in ((0, "0%"), (1 / 300, "<1%"), (0.004, "<1%"), (0.25, "25%"), (0.996, ">99%"), (1, "100%")):
            with self.subTest(rate=rate):
                self.assertEqual(svg.percent_label(rate), label)

    def test_every_axis_has_a_label_and_ticks(self):
        figures = {k: parse(v) for k, v in self.figures(LONG_NAMES).items()}
        for name, root in figures.items():
            texts = [t.text for t in root.iter(SVG + "text")]
            rotated = [t.text for t in root.iter(SVG + "text") if t.get("transform")]
            short_lines = [el for el in root.iter(SVG + "line") if line_box(el)[2] - line_box(el)[0] == 4
                           or line_box(el)[3] - line_box(el)[1] == 4]
            with self.subTest(figure=name):
                self.assertEqual(len(rotated), 1)                   # the y-axis label
                self.assertGreaterEqual(len(short_lines), 4)        # tick marks on both axes
                x_label = {"fig_b": "regime", "fig_d": "output tokens per compaction call"}.get(name[:5], "model")
                self.assertIn(x_label, texts)
                if name.startswith("fig_d"):
                    self.assertIn("64", texts)
                    self.assertIn("0", texts)
                else:
                    self.assertIn("100%", texts)
                    self.assertIn("0%", texts)

    def test_readme_example_figure_is_current(self):
        self.assertEqual(EXAMPLE_SVG.read_text(encoding="utf-8"), example_svg(),
                         "regenerate it: python3 tests/test_figures.py --write-example")
        self.assertEqual(layout_problems(example_svg()), [])
        readme = (REPO / "README.md").read_text(encoding="utf-8")
        self.assertTrue("(paper/example_multimodel.svg)" in readme, "README must show the example figure")


class FigureShapeTest(TempDirMixin, unittest.TestCase):
    def test_counts_of_bars_and_error_bars_for_one_to_eight_models(self):
        for n in (1, 2, 3, 8):
            with self.subTest(models=n):
                models = [f"model-{i}:{'x' * (40 if i == 0 else 2)}" for i in range(n)]
                results = synthetic_results(models)
                analysis = xr001_analysis.analyze(results, synthetic_task_set())
                figs = {k: parse(v) for k, v in xr001_figures.render_figures(results, analysis).items()}
                self.assertEqual(len(bars(figs["fig_a_corruption.svg"])), 3 * n)
                self.assertEqual(len(errorbars(figs["fig_a_corruption.svg"])), 3 * n)
                self.assertEqual(len(bars(figs["fig_b_classes.svg"])), 3 * 5)
                self.assertEqual(len(bars(figs["fig_c_multihop.svg"])), 3 * n)
                self.assertEqual(len(errorbars(figs["fig_c_multihop.svg"])), 3 * n)
                self.assertEqual(len(bars(figs["fig_e_retention.svg"])), 2 * n)
                token_bars = bars(figs["fig_d_compaction_tokens.svg"])
                self.assertEqual(sum(int(b.get("data-value")) for b in token_bars), 2 * 60 * n)
                caps = [el for el in figs["fig_d_compaction_tokens.svg"].iter(SVG + "line") if el.get("class") == "cap"]
                self.assertEqual(len(caps), 2)                  # the cap marked in each regime's row
                for name, root in figs.items():
                    texts = " ".join(t.text or "" for t in root.iter(SVG + "text"))
                    self.assertNotIn("NON-CONFIRMATORY", texts)
                    self.assertTrue(root.find(SVG + "title").text)
                    keys = [el for el in root.iter(SVG + "rect") if el.get("class") == "legend-key"]
                    self.assertGreaterEqual(len(keys), 2, name)         # every figure has a legend
                    self.assertNotIn("<path", ET.tostring(root, encoding="unicode"))   # text stays text
                    if name.startswith(("fig_a", "fig_c", "fig_e")):   # the long name is in a key
                        keys = [t.text for t in root.iter(SVG + "text") if t.get("class") == "key"]
                        self.assertIn(models[0], keys)

    def test_bar_heights_are_proportional_to_rates(self):
        rates = {"R0": 0, "R1": 120, "R2": 30}     # 0%, 100% and 25% cells
        results = synthetic_results(["a", "b"], wrong=lambda m, r: rates[r] if m == "a" else 60)
        analysis = xr001_analysis.analyze(results, synthetic_task_set())
        root = parse(xr001_figures.figure_corruption(analysis))
        for bar in bars(root):
            model, regime = bar.get("data-group"), bar.get("data-series")
            rate = analysis["corruption"][model][regime]["rate"]
            with self.subTest(model=model, regime=regime):
                self.assertAlmostEqual(float(bar.get("height")), svg.PLOT_HEIGHT * rate, places=1)
                self.assertAlmostEqual(float(bar.get("data-value")), 100 * rate, places=1)
        heights = {(b.get("data-group"), b.get("data-series")): float(b.get("height")) for b in bars(root)}
        self.assertEqual(heights[("a", "R0")], 0.0)
        self.assertEqual(heights[("a", "R1")], svg.PLOT_HEIGHT)
        self.assertAlmostEqual(heights[("a", "R2")] * 4, svg.PLOT_HEIGHT, places=1)
        classes = parse(xr001_figures.figure_classes(analysis))
        r1_total = sum(float(b.get("height")) for b in bars(classes) if b.get("data-group") == "R1")
        self.assertAlmostEqual(r1_total, svg.PLOT_HEIGHT, places=1)

    def test_single_regime_and_partial_bank(self):
        results = synthetic_results(["solo"], regimes=("R1",), complete=False)
        analysis = xr001_analysis.analyze(results, synthetic_task_set())
        figs = xr001_figures.render_figures(results, analysis)
        for name, svg in figs.items():
            with self.subTest(name):
                root = parse(svg)
                texts = " ".join(t.text or "" for t in root.iter(SVG + "text"))
                self.assertIn("NON-CONFIRMATORY", texts)
        self.assertEqual(len(bars(parse(figs["fig_a_corruption.svg"]))), 1)


class RetentionFigureTest(unittest.TestCase):
    def test_the_published_bank_plots_right_values_beside_names_found_and_flags_its_inconsistent_row(self):
        """R1 keeps the right value for 159/900 (17.7%) although it names 587/900 (65.2%); the bars read the right
        values, labelled so, with the names found beside them; 899 right values over 898 names is flagged."""
        results = reference_results(load_tasks())
        svg = xr001_figures.figure_retention(bank.analyze_bank(results))
        root = parse(svg)
        solid = {(b.get("data-group"), b.get("data-series")): b for b in bars(root)}
        outlined = {(b.get("data-group"), b.get("data-series")): float(b.get("data-value"))
                    for b in root.iter(SVG + "rect") if b.get("class") == "beside"}
        expected = {"gemma3:4b": (65, 207), "qwen3-coder:30b": (45, 205), "qwen3:14b": (49, 175)}
        for model, (right, names) in expected.items():
            with self.subTest(model=model):
                self.assertAlmostEqual(float(solid[(model, "R1")].get("data-value")), 100 * right / 300, places=1)
                self.assertAlmostEqual(outlined[(model, "R1")], 100 * names / 300, places=1)
        for key, bar in solid.items():
            self.assertLessEqual(float(bar.get("data-value")), outlined[key], key)      # never above its names
        flagged = [key for key, bar in solid.items() if bar.get("data-flag")]
        self.assertEqual(flagged, [("gemma3:4b", "R2")])
        self.assertAlmostEqual(float(solid[("gemma3:4b", "R2")].get("data-value")), 100 * 298 / 300, places=1)
        texts = [t.text for t in root.iter(SVG + "text")]
        self.assertIn("values retained with the right value (%)", texts)
        self.assertIn("!99%", texts)                   # 298 of 300, flagged; never 99.7% from 299
        self.assertNotIn("values retained (%)", texts)
        footnote = " ".join(t.text for t in root.iter(SVG + "text") if t.get("class") == "footnote")
        self.assertIn("gemma3:4b R2: 299 right values over 298 names found", footnote)
        self.assertEqual(layout_problems(svg), [])


class RegenerateTest(TempDirMixin, unittest.TestCase):
    def published(self) -> Path:
        folder = self.make_tmp()
        path = folder / "results.json"
        path.write_text(json.dumps(reference_results(load_tasks())))
        return path

    def run_cli(self, path: Path, folder: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(REPO / "paper" / "make_figures.py"), str(path), "--out",
                               str(folder)], capture_output=True, text=True, timeout=60)

    def test_published_numbers_give_the_published_verdicts_byte_identically(self):
        path = self.published()
        folder = path.parent
        proc = self.run_cli(path, folder)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        first = {p.name: p.read_bytes() for p in sorted((folder / "figures").iterdir())}
        first["RESULTS.md"] = (folder / "RESULTS.md").read_bytes()
        first["report.html"] = (folder / "report.html").read_bytes()
        self.assertEqual(len(first), 7)
        proc = self.run_cli(path, folder)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        second = {p.name: p.read_bytes() for p in sorted((folder / "figures").iterdir())}
        second["RESULTS.md"] = (folder / "RESULTS.md").read_bytes()
        second["report.html"] = (folder / "report.html").read_bytes()
        self.assertEqual(first, second)
        narrative = (folder / "RESULTS.md").read_text()
        for verdict in ("### P1: confirmed", "### P2: confirmed", "### P3: confirmed", "### F: rejected"):
            self.assertIn(verdict, narrative)
        self.assertIn("p = 3.524e-21", narrative)
        self.assertIn("![Numeric-corruption rate by model and regime](figures/fig_a_corruption.svg)", narrative)
        report = (folder / "report.html").read_text()
        analysis_md = reports.render_analysis_md(bank.analyze_bank(reference_results(load_tasks())))
        tables = sum(1 for block in analysis_md.split("\n\n") if block.startswith("|"))
        self.assertEqual(report.count("<table>"), tables)
        for cell in ("<td>8/120 = 6.7% [3.4, 12.6]</td>", "<td>3.524e-21</td>", "<td>219.2</td>",
                     "<td>22/30 = 73.3%</td>", "<td>898/900 = 99.8%</td>", "<td>344</td>"):
            self.assertIn(cell, report)
        self.assertEqual(report.count("<svg"), 5)
        self.assertNotIn("<script", report)
        self.assertNotIn("http://", report.replace("http://www.w3.org/2000/svg", ""))
        self.assertIn("Falsifier: prose is as good as the typed state block at a matched budget: rejected.", report)
        self.assertIn("Prose summaries (R1) corrupted 36.4% of answers, the typed state block (R2) 9.4%", report)
        self.assertIn("prose was worse 108 times and better 11 (exact McNemar p = 3.524e-21", report)

    def test_from_a_lone_results_json_of_a_real_run(self):
        from fake_servers import FakeOllama
        from helpers import FAST, run_main
        out = self.make_tmp() / "run"
        with FakeOllama(models=["m:1"], behaviour={"prose_keep_last": 6}) as server:
            code, _, err = run_main(["--models", "m:1", "--host", server.url, "--out", str(out), "--episodes", "2",
                                     *FAST])
        self.assertEqual(code, 0, err)
        for name in ("report.html", "RESULTS.md", "figures/fig_a_corruption.svg"):
            self.assertTrue((out / name).exists(), name)
        report = (out / "report.html").read_text()
        self.assertIn("R1 prose", report)
        self.assertIn("values:", report)          # an R2 block shown beside the prose
        alone = self.make_tmp()
        shutil.copy(out / "results.json", alone / "results.json")
        proc = self.run_cli(alone / "results.json", alone)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # the run handed its analysis to the figures script; reading the file alone gives the same bytes
        made = ["RESULTS.md", "report.html", *(f"figures/{p.name}" for p in (out / "figures").iterdir())]
        self.assertGreaterEqual(len(made), 7)
        for name in made:
            with self.subTest(name):
                self.assertEqual((alone / name).read_bytes(), (out / name).read_bytes())

    def test_a_handover_that_is_not_the_runners_is_one_clear_line(self):
        path = self.published()
        # without RESULTS_JSON and --out it would write into paper/: refused before anything is read
        proc = subprocess.run([sys.executable, str(REPO / "paper" / "make_figures.py"), "--handover"],
                              input='{"results": {"models": [], "regimes": [], "probes": []}, "analysis": {}}',
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--handover needs RESULTS_JSON and --out", proc.stderr)
        for piped in ("not json", json.dumps({"analysis": []}), json.dumps({"results": {}, "analysis": {}}),
                      json.dumps({"results": {"models": [], "regimes": [], "probes": []}, "analysis": {}})):
            with self.subTest(piped[:20]):
                proc = subprocess.run([sys.executable, str(REPO / "paper" / "make_figures.py"), str(path), "--out",
                                       str(path.parent), "--handover"], input=piped, capture_output=True, text=True,
                                      timeout=60)
                self.assertEqual(proc.returncode, 2)
                self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
                self.assertIn("leave --handover out", proc.stderr)

    def test_report_headline_leads_with_the_label(self):
        def headline(report: str) -> str:
            return page_text(re.search('<div class="headline">(.*?)</div>', report).group(1))
        complete = reference_results(load_tasks())
        analysis = bank.analyze_bank(complete)
        text = headline(xr001_figures.report_html(complete, analysis, xr001_figures.figures(complete, analysis, False)))
        self.assertTrue(text.startswith(analysis.get("label", "CONFIRMATORY")), text)
        self.assertNotIn("Falsifier", text)          # the verdicts are the answer's sentences, under the box
        partial = synthetic_results(["m"], complete=False)
        analysis = xr001_analysis.analyze(partial, synthetic_task_set())
        text = headline(xr001_figures.report_html(partial, analysis, xr001_figures.figures(partial, analysis, False)))
        reason = analysis["label_reasons"][0].replace("`", "")          # its `cells` rendered as code
        self.assertTrue(text.startswith(f"NON-CONFIRMATORY {reason[0].upper()}{reason[1:]}"), text)
        labelled = dict(analysis, label="UNINFORMATIVE", label_reasons=["R0 fails the ceiling", "all omissions"])
        text = headline(xr001_figures.report_html(partial, labelled, xr001_figures.figures(partial, labelled, False)))
        self.assertTrue(text.startswith("UNINFORMATIVE R0 fails the ceiling; all omissions"), text)


class PageText(html.parser.HTMLParser):
    """The text a browser shows of a page: no <style>, no <title> (the tab's, or an SVG's tooltip), and without
    <pre> (a model's reply, shown as it wrote it) when skip_pre."""

    def __init__(self, skip_pre: bool = False):
        super().__init__()
        self.hidden = {"style", "title", "script"} | ({"pre"} if skip_pre else set())
        self.depth, self.parts = 0, []

    def handle_starttag(self, tag, attrs):
        self.depth += tag in self.hidden

    def handle_endtag(self, tag):
        self.depth -= tag in self.hidden

    def handle_data(self, data):
        if not self.depth:
            self.parts.append(data)


def page_text(page: str, skip_pre: bool = False) -> str:
    reader = PageText(skip_pre)
    reader.feed(page)
    return " ".join(" ".join(reader.parts).split())


def svgs_of(page: str) -> list[ET.Element]:
    return [parse(svg) for svg in re.findall(r"<svg .*?</svg>", page, re.S)]


def texts_of(root: ET.Element, cls: str) -> list[str]:
    return [t.text for t in root.iter(SVG + "text") if t.get("class") == cls]


def legend_colours(root: ET.Element) -> dict[str, str]:
    """Each legend entry's text and the colour of its key."""
    keys = [el for el in root.iter(SVG + "rect") if el.get("class") == "legend-key"]
    texts = {(float(t.get("x")), float(t.get("y"))): t.text for t in root.iter(SVG + "text")}
    return {texts[(float(k.get("x")) + 18, float(k.get("y")) + 10)]: k.get("fill") for k in keys}


def simulated_smoke_bank(models=("stand-in:simulated",), regimes=("R0", "R1", "R2")) -> tuple[dict, dict]:
    """A bank as the demo makes it (SIMULATED, so NON-CONFIRMATORY with a reason that names `demo`)."""
    results = synthetic_results(list(models), regimes=regimes, wrong=lambda m, r: {"R1": 40}.get(r, 2))
    results["run"] = {"simulated": True, "backend": "simulated"}
    return results, xr001_analysis.analyze(results, synthetic_task_set())


def uninformative_bank() -> tuple[dict, dict]:
    """Every answer an omission (as from a model that never writes the answer line): no model passes the ceiling
    check."""
    results = synthetic_results(["m:1"], wrong=lambda m, r: 120)
    for probe in results["probes"]:
        if probe["class"] != "correct":
            probe.update({"answer": None, "class": "omission"})
    return results, xr001_analysis.analyze(results, synthetic_task_set())


def committed_constraints(simulated: bool = False) -> tuple[dict, dict]:
    """The committed constraints example (UNINFORMATIVE; R1+H and a user regime beside the design's conditions)."""
    results = json.loads((REPO / "results" / "smollm2-135m-constraints" / "results.json").read_text())
    if simulated:
        results["run"] = {**results.get("run", {}), "simulated": True}
    return results, bank.analyze_bank(results)


def constraints_report(results: dict, analysis: dict, out: Path) -> tuple[str, dict[str, str]]:
    pages.regenerate(results, out, "results.json", analysis=analysis)
    return ((out / "report.html").read_text(), {p.name: p.read_text() for p in (out / "figures").iterdir()})


class ReportAtAGlanceTest(TempDirMixin, unittest.TestCase):
    """report.html and the figures read at a glance (issue 23, point 4): markup rendered, the label once, captions
    that are not the titles, the same models and colours in every figure, the exploratory mark only where it
    belongs, and on an UNINFORMATIVE bank a line in every figure saying why its bars sit where they do."""

    def xr001_report(self, results: dict, analysis: dict) -> str:
        out = self.make_tmp()
        pages.regenerate(results, out, "results.json", analysis=analysis)
        return (out / "report.html").read_text()

    def test_markup_is_rendered_never_shown_as_backticks(self):
        results, analysis = simulated_smoke_bank()
        self.assertIn("`demo`", "; ".join(analysis["label_reasons"]))       # the label's reason carries markup
        page = self.xr001_report(results, analysis)
        self.assertNotIn("`", page_text(page, skip_pre=True))
        self.assertIn("<code>demo</code>", page)
        self.assertIn("<code>ANSWER: &lt;integer&gt;</code>", page)
        sc_page, _ = constraints_report(*committed_constraints(), self.make_tmp())
        self.assertNotIn("`", page_text(sc_page, skip_pre=True))
        self.assertIn("<code>--judge</code>", sc_page)
        self.assertEqual(reports.inline_html("a `b` and **c**, a lone ` and **"),
                         "a <code>b</code> and <strong>c</strong>, a lone ` and **")

    def test_the_label_and_the_simulated_mark_are_said_once_at_the_top(self):
        results, analysis = simulated_smoke_bank()
        cases = {"xr001": (self.xr001_report(results, analysis), "NON-CONFIRMATORY"),
                 "constraints": (constraints_report(*committed_constraints(simulated=True), self.make_tmp())[0],
                                 "UNINFORMATIVE")}
        for study, (page, label) in cases.items():
            with self.subTest(study):
                text = page_text(page)
                self.assertEqual(text.count("SIMULATED"), 1, text[:600])
                self.assertEqual(text.count(label), 1, text[:600])
                block = re.search(r'<div class="headline">(.*?)</div>', page, re.S).group(1)
                self.assertTrue(page_text(block).startswith(f"SIMULATED · {label}"), block)
                self.assertLess(page.index('<div class="headline">'), page.index("<table>"))
                self.assertNotRegex(page_text(block), r"\. [a-z]")       # each sentence of the box begins upper case
        # each figure file, which travels alone, keeps its stamp
        self.assertTrue(all(texts_of(root, "nonconfirmatory") for root in
                            map(parse, xr001_figures.render_figures(results, analysis).values())))

    def test_no_caption_repeats_its_figures_title(self):
        results, analysis = simulated_smoke_bank()
        pages = [self.xr001_report(results, analysis), constraints_report(*committed_constraints(), self.make_tmp())[0]]
        for page in pages:
            figures = re.findall(r"<figure[^>]*>(.*?)</figure>", page, re.S)
            self.assertGreaterEqual(len(figures), 2)
            for figure in figures:
                title = parse(re.search(r"<svg .*?</svg>", figure, re.S).group(0)).find(SVG + "title").text
                caption = page_text(re.search(r"<figcaption>(.*?)</figcaption>", figure, re.S).group(1))
                with self.subTest(title=title):
                    self.assertNotIn(title.lower(), caption.lower())
                    self.assertIn("figures/", caption)            # it says where the figure's own file is

    def test_models_are_written_the_same_way_in_every_figure(self):
        # 20 characters: too wide for a group of three bars, wide enough for the retention figure's two pairs
        for models in (["llama3.1:8b-instruct"], ["gemma3:4b", "qwen3:14b"], LONG_NAMES):
            results, analysis = simulated_smoke_bank(models)
            figures = {name: parse(svg) for name, svg in xr001_figures.render_figures(results, analysis).items()
                       if name.startswith(("fig_a", "fig_c", "fig_e"))}
            with self.subTest(models=models):
                written = {name: texts_of(root, "category") for name, root in figures.items()}
                keys = {name: texts_of(root, "key") for name, root in figures.items()}
                self.assertEqual(len({tuple(v) for v in written.values()}), 1, written)
                self.assertEqual(len({tuple(v) for v in keys.values()}), 1, keys)
                fits = models != LONG_NAMES and models != ["llama3.1:8b-instruct"]
                self.assertEqual(next(iter(written.values())), models if fits else
                                 [f"M{i + 1}" for i in range(len(models))])
        _, figures = constraints_report(*committed_constraints(), self.make_tmp())
        self.assertEqual(len({tuple(texts_of(parse(svg), "category")) for svg in figures.values()}), 1)

    def test_the_exploratory_mark_only_on_exploratory_conditions(self):
        _, figures = constraints_report(*committed_constraints(), self.make_tmp())
        legends = {}
        for svg in figures.values():
            legends.update(legend_colours(parse(svg)))
        marked = sorted(label.split()[0].rstrip("*") for label in legends if "exploratory" in label)
        # protocol/CONSTRAINTS.md: R1+X is the confirmatory arm; R1+H (amendment h) and a user's regime are not
        self.assertEqual(marked, ["MYAGENT", "MYAGENT+UB", "R1+H"])
        for label in legends:
            if label.split()[0] in ("FULL+", "FULL-", "R1", "R2", "R1+UB", "R2+UB", "R1+X", "R2+X"):
                self.assertNotIn("*", label)
        results, analysis = simulated_smoke_bank(regimes=("R0", "R1", "R2", "R3"))
        legend = legend_colours(parse(xr001_figures.render_figures(results, analysis)["fig_a_corruption.svg"]))
        self.assertEqual(sorted(label for label in legend if "exploratory" in label), ["R3* (exploratory)"])

    def test_one_colour_per_condition_across_a_studys_figures(self):
        sc_results, sc_analysis = committed_constraints()
        _, sc_figures = constraints_report(sc_results, sc_analysis, self.make_tmp())
        results, analysis = simulated_smoke_bank(regimes=("R0", "R1", "R2", "R3", "K1", "K2"))
        xr_figures = xr001_figures.render_figures(results, analysis)
        conditions = set(analysis["regimes"] + sc_analysis["regimes"])
        for study, figures in (("constraints", sc_figures), ("xr001", xr_figures)):
            colours: dict[str, set] = {}
            for svg in figures.values():
                root = parse(svg)
                for bar in root.iter(SVG + "rect"):
                    if bar.get("class") == "bar" and bar.get("data-series") in conditions:
                        colours.setdefault(bar.get("data-series"), set()).add(bar.get("fill"))
            with self.subTest(study):
                self.assertGreaterEqual(len(colours), 6)
                self.assertTrue(all(len(fills) == 1 for fills in colours.values()), colours)
                owners = [next(iter(fills)) for fills in colours.values()]
                self.assertEqual(len(owners), len(set(owners)), colours)      # no colour shared by two

    def test_an_uninformative_bank_says_in_every_figure_why_its_bars_sit_where_they_do(self):
        results, analysis = uninformative_bank()
        self.assertEqual(analysis["label"], "UNINFORMATIVE")
        page = self.xr001_report(results, analysis)
        sc_page, sc_figures = constraints_report(*committed_constraints(), self.make_tmp())
        figures = {**xr001_figures.render_figures(results, analysis), **sc_figures}
        in_pages = svgs_of(page) + svgs_of(sc_page)
        self.assertEqual(len(in_pages), len(figures))
        for name, root in [*((n, parse(svg)) for n, svg in figures.items()), *(("report", r) for r in in_pages)]:
            with self.subTest(figure=name, title=root.find(SVG + "title").text):
                why = " ".join(texts_of(root, "why"))
                self.assertTrue(why, "no line says why")
                self.assertRegex(why, r"\d+ of \d+|\d+\.\d%")          # from the bank's own counts
        why = " ".join(texts_of(parse(figures["fig_a_corruption.svg"]), "why"))
        self.assertIn("Why the bars sit at 100%: 360 of 360 answers gave no parseable ANSWER: line", why)
        why = " ".join(texts_of(parse(sc_figures["fig_c_compliance.svg"]), "why"))
        self.assertIn("Why the bars sit at 0%: 55 of 55 replies gave no CHOICE: line", why)
        results, analysis = simulated_smoke_bank()
        self.assertFalse([t for svg in xr001_figures.render_figures(results, analysis).values()
                          for t in texts_of(parse(svg), "why")])            # only an UNINFORMATIVE bank

    def test_the_omissions_table_is_headed_by_what_it_shows(self):
        results, analysis = simulated_smoke_bank()
        md = reports.render_analysis_md(analysis)
        self.assertNotIn("Format compliance", md)
        lines = md.splitlines()
        head = lines.index("| model | R0 omitted | R1 omitted | R2 omitted |")
        self.assertTrue(lines[head - 2].startswith("Omissions (the format check)"), lines[head - 2])
        self.assertIn("| stand-in:simulated | 0/120 = 0.0% | 0/120 = 0.0% | 0/120 = 0.0% |", md)


@contextlib.contextmanager
def read_only(folder: Path):
    """folder and everything in it made read-only. Root ignores permissions, so for root the writability check
    is also told the truth about the folder (it cannot be made read-only without a mount)."""
    paths = [folder, *folder.rglob("*")]
    modes = {p: p.stat().st_mode for p in paths}
    for p in paths:
        p.chmod(modes[p] & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    real = runfolder.folder_writable
    inside = lambda f: f.resolve() == folder.resolve() or folder.resolve() in f.resolve().parents  # noqa: E731
    told = lambda f: not inside(f) and real(f)  # noqa: E731
    # who asks whether it is
    users = ((runfolder, commands, folder_commands, gate_command, pages) if os.geteuid() == 0
             else ())
    try:
        with contextlib.ExitStack() as stack:
            for module in users:
                stack.enter_context(mock.patch.object(module, "folder_writable", told))
            yield folder
    finally:
        for p in reversed(paths):
            p.chmod(modes[p])


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Every file under root: content hash and modification time."""
    return {p.relative_to(root).as_posix(): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def call_main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = mf.main(argv)
    return code, out.getvalue(), err.getvalue()


class BadInputTest(TempDirMixin, unittest.TestCase):
    """Every bad input or unusable output folder is one line `error: ...` and exit 2, never a traceback."""

    def assert_one_line_error(self, argv: list[str], *expected: str) -> str:
        code, _, err = call_main(argv)
        self.assertEqual(code, 2, err)
        self.assertNotIn("Traceback", err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertTrue(err.startswith("error: "), err)
        for text in expected:
            self.assertIn(text, err)
        return err

    def bank(self, results) -> Path:
        path = self.make_tmp() / "results.json"
        path.write_text(results if isinstance(results, str) else json.dumps(results))
        return path

    def test_a_folder_missing_file_or_bad_json(self):
        run = self.make_tmp()
        self.assert_one_line_error([str(run)], "is a folder", "name the results.json")
        (run / "results.json").write_text("{}")
        self.assert_one_line_error([str(run)], "is a folder", f"did you mean {run / 'results.json'}")
        self.assert_one_line_error([str(run / "none.json")], "no results.json at", "run the pilot first")
        self.assert_one_line_error([str(self.bank("{\"models\": [")), "--out", str(self.make_tmp())],
                                   "is not valid JSON")
        self.assert_one_line_error(["--bogus"], "unrecognized arguments", "--help")

    def test_results_of_the_wrong_shape(self):
        good = synthetic_results(["m"])
        cases = {"compaction_tokens null": ({**good, "compaction_tokens": None}, '"compaction_tokens" is null'),
                 "probes not a list": ({**good, "probes": {"a": 1}}, '"probes" is an object, expected a list'),
                 "models missing": ({k: v for k, v in good.items() if k != "models"}, '"models" is missing'),
                 "a list": ([1, 2], "expected a JSON object, found a list"),
                 "a probe not an object": ({**good, "probes": [1]}, '"probes" holds an entry'),
                 "a token entry null": ({**good, "compaction_tokens": {"R1": None}}, '"compaction_tokens" holds'),
                 "probe fields missing": ({**good, "probes": [{"model": "m"}]}, "is not a results file")}
        for case, (results, expected) in cases.items():
            with self.subTest(case):
                self.assert_one_line_error([str(self.bank(results)), "--out", str(self.make_tmp())], expected)

    def test_unusable_output_folders(self):
        path = self.bank(synthetic_results(["m"]))
        a_file = self.make_tmp() / "file.txt"
        a_file.write_text("x")
        self.assert_one_line_error([str(path), "--out", str(a_file)], "is a file, not a folder")
        self.assert_one_line_error([str(path), "--out", str(a_file / "below")], "lies under the file", "--out DIR")
        with read_only(self.make_tmp()) as locked:
            self.assert_one_line_error([str(path), "--out", str(locked)], "read-only", "--out DIR")
            self.assert_one_line_error([str(path), "--out", str(locked / "new")], "read-only", "--out DIR")
            self.assertEqual(list(locked.iterdir()), [])
        with mock.patch.object(pages, "write_atomic", side_effect=PermissionError(13, "Permission denied", "x.svg")):
            self.assert_one_line_error([str(path), "--out", str(self.make_tmp())], "cannot write x.svg",
                                       "Permission denied")

    def test_a_folder_of_other_files_is_refused_and_left_alone(self):
        path = self.bank(synthetic_results(["m"]))
        folder = self.make_tmp()
        for name in ("notes.txt", "thesis.tex", "a.py", "b.py", ".hidden"):
            (folder / name).write_text(name)
        before = snapshot(folder)
        err = self.assert_one_line_error([str(path), "--out", str(folder)], "a.py, b.py, notes.txt and 1 more",
                                         "--out")
        self.assertNotIn(".hidden", err)
        self.assertEqual(snapshot(folder), before)
        code, stdout, err = run_main(["analyze", "--results", str(path), "--out", str(folder)])
        self.assertEqual((code, stdout), (2, ""), err)
        self.assertIn("a.py, b.py, notes.txt and 1 more", err)
        self.assertEqual(snapshot(folder), before)
        code, _, err = run_main(["--models", "m:1", "--out", str(folder), "--host", "http://127.0.0.1:9"])
        self.assertEqual(code, 2, err)
        self.assertIn("is not a run folder", err)
        self.assertEqual(snapshot(folder), before)


class OutputPlacesTest(TempDirMixin, unittest.TestCase):
    """Outputs go where the user says and nowhere else; paths inside them are relative."""

    def repo(self) -> Path:
        root = self.make_tmp() / "repo"
        for sub in ("scripts", "protocol", "tasks", "paper", "results/smollm2-135m-llamacpp"):
            shutil.copytree(REPO / sub, root / sub, ignore=shutil.ignore_patterns("__pycache__"))
        return root

    def make_figures(self, repo: Path, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(repo / "paper" / "make_figures.py"), *argv], capture_output=True,
                              text=True, timeout=120, cwd=self.make_tmp())

    def test_out_writes_everything_there_and_changes_nothing_in_the_repository(self):
        repo = self.repo()
        before = snapshot(repo)
        out = self.make_tmp() / "report"
        source = repo / "results" / "smollm2-135m-llamacpp" / "results.json"
        proc = self.make_figures(repo, str(source), "--out", str(out))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(snapshot(repo), before)
        self.assertEqual(sorted(snapshot(out)), [".pilot-outputs.json", "RESULTS.md",     # with its folder marker
                                                 *[f"figures/{n}" for n, _ in xr001_figures.FIGURES],
                                                 "report.html"])
        for name in snapshot(out):
            text = (out / name).read_text(encoding="utf-8")
            for absolute in (str(repo), str(out), str(REPO), os.path.expanduser("~")):
                self.assertNotIn(absolute, text, name)
        results_md = (out / "RESULTS.md").read_text(encoding="utf-8")
        self.assertIn("from `results/smollm2-135m-llamacpp/results.json`", results_md)   # repository-relative
        self.assertIn("](figures/fig_a_corruption.svg)", results_md)
        again = self.make_figures(repo, str(source), "--out", str(out))     # our own folder may be rewritten
        self.assertEqual(again.returncode, 0, again.stderr)
        outside = self.make_tmp() / "run"
        outside.mkdir()
        shutil.copy(source, outside / "results.json")
        proc = self.make_figures(repo, str(outside / "results.json"))        # no --out: the run's own folder
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(snapshot(repo), before)
        self.assertIn("from `results.json`", (outside / "RESULTS.md").read_text(encoding="utf-8"))

    def test_no_arguments_regenerates_paper_from_the_named_run_never_the_newest(self):
        repo = self.repo()
        smoke = repo / "results" / "xr001-e1"
        smoke.mkdir()
        (smoke / "results.json").write_text(json.dumps(synthetic_results(["smoke:1"], complete=False)))
        committed = {p: (REPO / "paper" / p).read_bytes() for p in snapshot(REPO / "paper")
                     if not p.endswith((".py", ".pyc"))}
        proc = self.make_figures(repo)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(mf.PAPER_SOURCE.relative_to(REPO).as_posix(), "results/smollm2-135m-llamacpp/results.json")
        regenerated = {p: (repo / "paper" / p).read_bytes() for p in committed}
        self.assertEqual(regenerated, committed, "paper/ is stale: run python3 paper/make_figures.py and commit it")
        self.assertEqual(sorted(snapshot(smoke)), ["results.json"])
        help_text = self.make_figures(repo, "--help").stdout
        self.assertIn("results/smollm2-135m-llamacpp/results.json", " ".join(help_text.split()))
        self.assertTrue("results/smollm2-135m-llamacpp/results.json" in (REPO / "README.md").read_text(),
                        "README must name the run paper/ is made from")

    def finished_run(self) -> Path:
        from fake_servers import FakeOllama
        from helpers import FAST
        out = self.make_tmp() / "run"
        with FakeOllama(models=["m:1"]) as server:
            code, _, err = run_main(["--models", "m:1", "--host", server.url, "--out", str(out), "--episodes", "1",
                                     *FAST])
        self.assertEqual(code, 0, err)
        return out

    def test_a_finished_run_in_a_read_only_folder_is_reported_and_analysed_elsewhere(self):
        run = self.finished_run()
        before = snapshot(run)
        elsewhere = self.make_tmp() / "elsewhere"
        with read_only(run):
            code, stdout, err = run_main(["--models", "m:1", "--out", str(run), "--episodes", "1", "--quiet"])
            self.assertEqual(code, 0, err)
            self.assertIn("- Prose summaries (R1) corrupted", stdout)
            self.assertIn("is read-only", stdout)
            self.assertIn(f"analyze --results {run / 'results.json'} --out DIR", stdout)
            code, stdout, err = run_main(["analyze", "--out", str(run)])
            self.assertEqual(code, 0, err)
            self.assertIn("is read-only", err)
            code, stdout, err = run_main(["analyze", "--results", str(run / "results.json"), "--out", str(elsewhere)])
            self.assertEqual(code, 0, err)
            self.assertIn("Numeric-corruption rate", stdout)
            code, _, err = run_main(["analyze", "--results", str(run / "results.json"), "--out", str(run / "x")])
            self.assertEqual(code, 2)
            self.assertIn("read-only", err)
        self.assertEqual(snapshot(run), before)
        self.assertEqual(sorted(snapshot(elsewhere)), [".pilot-outputs.json", "RESULTS.md", "analysis.md",
                                                       *[f"figures/{n}" for n, _ in xr001_figures.FIGURES], "report.html"])
        self.assertEqual((elsewhere / "figures" / "fig_a_corruption.svg").read_bytes(),
                         (run / "figures" / "fig_a_corruption.svg").read_bytes())
        self.assertIn("from `run/results.json`", (elsewhere / "RESULTS.md").read_text())   # not the absolute path
        self.assertIn("from `results.json`", (run / "RESULTS.md").read_text())


if __name__ == "__main__":
    if sys.argv[1:] == ["--write-example"]:
        EXAMPLE_SVG.write_text(example_svg(), encoding="utf-8")
        print(f"wrote {EXAMPLE_SVG.relative_to(REPO)}")
    else:
        unittest.main()
