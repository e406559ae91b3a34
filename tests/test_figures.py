"""Figures, RESULTS.md and report.html (paper/make_figures.py), from results.json alone."""
import json
import os
import shutil
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

from helpers import REPO, TempDirMixin, load_module, load_tasks, reference_results, rp

mf = load_module("make_figures", REPO / "paper" / "make_figures.py")
SVG = "{http://www.w3.org/2000/svg}"


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
                    stage.append({"retained": 20 - (e % 3) * (regime == "R1"), "correct": 20, "wrong": 0,
                                  "n_entities": 20, "model": model, "regime": regime, "episode": e})
                    for k in range(1, 5):
                        calls.append({"model": model, "regime": regime, "episode": e, "kind": f"compact_{k}",
                                      "eval_count": 100 + 10 * k + e + mi, "done_reason": "stop",
                                      "prompt_eval_count": 300, "thinking_chars": 0})
    expected = len(models) * len(regimes) * 15
    tokens = {}
    for regime in regimes:
        vals = [c["eval_count"] for c in calls if c["regime"] == regime]
        if vals:
            tokens[regime] = {"n": len(vals), "mean": sum(vals) / len(vals), "by_model": {}}
    return {"models": list(models), "regimes": list(regimes), "probes": probes, "compaction_stage": stage,
            "calls": calls, "compaction_tokens": tokens,
            "cells": {"complete": expected if complete else expected - 1, "expected": expected,
                      "not_complete": 0 if complete else 1, "expected_probes_per_cell": 8}}


def synthetic_task_set(n_episodes: int = 15) -> dict:
    """A task set whose questions match synthetic_results (truth 500), so its labels come out of the probes."""
    questions = [{"id": q + 1, "type": "multihop" if q >= 6 else "direct", "truth": 500} for q in range(8)]
    return {"tasks": {"episodes": [{"questions": questions} for _ in range(n_episodes)]}, "kind": "pinned",
            "sha256": "0" * 64, "path": "synthetic"}


def parse(svg_text: str) -> ET.Element:
    return ET.fromstring(svg_text)


def bars(root: ET.Element) -> list[ET.Element]:
    return [el for el in root.iter(SVG + "rect") if el.get("class") == "bar"]


def errorbars(root: ET.Element) -> list[ET.Element]:
    return [el for el in root.iter(SVG + "g") if el.get("class") == "errorbar"]


class FigureShapeTest(TempDirMixin, unittest.TestCase):
    def test_counts_of_bars_and_error_bars_for_one_to_eight_models(self):
        for n in (1, 2, 3, 8):
            with self.subTest(models=n):
                models = [f"model-{i}:{'x' * (40 if i == 0 else 2)}" for i in range(n)]
                results = synthetic_results(models)
                analysis = rp.analyze_results(results, synthetic_task_set())
                figs = {k: parse(v) for k, v in mf.render_figures(results, analysis).items()}
                self.assertEqual(len(bars(figs["fig_a_corruption.svg"])), 3 * n)
                self.assertEqual(len(errorbars(figs["fig_a_corruption.svg"])), 3 * n)
                self.assertEqual(len(bars(figs["fig_b_classes.svg"])), 3 * 5)
                self.assertEqual(len(bars(figs["fig_c_multihop.svg"])), 3 * n)
                self.assertEqual(len(errorbars(figs["fig_c_multihop.svg"])), 3 * n)
                self.assertEqual(len(bars(figs["fig_e_retention.svg"])), 2 * n)
                token_bars = bars(figs["fig_d_compaction_tokens.svg"])
                self.assertEqual(sum(int(b.get("data-value")) for b in token_bars), 2 * 60 * n)
                caps = [el for el in figs["fig_d_compaction_tokens.svg"].iter(SVG + "line") if el.get("class") == "cap"]
                self.assertEqual(len(caps), 1)
                for name, root in figs.items():
                    texts = " ".join(t.text or "" for t in root.iter(SVG + "text"))
                    self.assertNotIn("NON-CONFIRMATORY", texts)
                    self.assertTrue(root.find(SVG + "title").text)
                    keys = [el for el in root.iter(SVG + "rect") if el.get("class") == "legend-key"]
                    self.assertGreaterEqual(len(keys), 2, name)         # every figure has a legend
                    self.assertNotIn("<path", ET.tostring(root, encoding="unicode"))   # text stays text
                    if name.startswith(("fig_a", "fig_c", "fig_e")):   # the long name is shortened
                        self.assertTrue(any(t.text and "\u2026" in t.text for t in root.iter(SVG + "text")))

    def test_bar_heights_are_proportional_to_rates(self):
        rates = {"R0": 0, "R1": 120, "R2": 30}     # 0%, 100% and 25% cells
        results = synthetic_results(["a", "b"], wrong=lambda m, r: rates[r] if m == "a" else 60)
        analysis = rp.analyze_results(results, synthetic_task_set())
        root = parse(mf.figure_corruption(analysis))
        for bar in bars(root):
            model, regime = bar.get("data-group"), bar.get("data-series")
            rate = analysis["corruption"][model][regime]["rate"]
            with self.subTest(model=model, regime=regime):
                self.assertAlmostEqual(float(bar.get("height")), mf.PLOT_HEIGHT * rate, places=1)
                self.assertAlmostEqual(float(bar.get("data-value")), 100 * rate, places=1)
        heights = {(b.get("data-group"), b.get("data-series")): float(b.get("height")) for b in bars(root)}
        self.assertEqual(heights[("a", "R0")], 0.0)
        self.assertEqual(heights[("a", "R1")], mf.PLOT_HEIGHT)
        self.assertAlmostEqual(heights[("a", "R2")] * 4, mf.PLOT_HEIGHT, places=1)
        classes = parse(mf.figure_classes(analysis))
        r1_total = sum(float(b.get("height")) for b in bars(classes) if b.get("data-group") == "R1")
        self.assertAlmostEqual(r1_total, mf.PLOT_HEIGHT, places=1)

    def test_single_regime_and_partial_bank(self):
        results = synthetic_results(["solo"], regimes=("R1",), complete=False)
        analysis = rp.analyze_results(results, synthetic_task_set())
        figs = mf.render_figures(results, analysis)
        for name, svg in figs.items():
            with self.subTest(name):
                root = parse(svg)
                texts = " ".join(t.text or "" for t in root.iter(SVG + "text"))
                self.assertIn("NON-CONFIRMATORY", texts)
        self.assertEqual(len(bars(parse(figs["fig_a_corruption.svg"]))), 1)


class RegenerateTest(TempDirMixin, unittest.TestCase):
    def published(self) -> Path:
        folder = self.make_tmp()
        path = folder / "results.json"
        path.write_text(json.dumps(reference_results(load_tasks())))
        return path

    def run_cli(self, path: Path, folder: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(REPO / "paper" / "make_figures.py"), str(path), "--out",
                               str(folder / "figures"), "--results-md", str(folder / "RESULTS.md")],
                              capture_output=True, text=True, timeout=60)

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
        analysis_md = rp.render_analysis_md(rp.analyze_bank(reference_results(load_tasks())))
        tables = sum(1 for block in analysis_md.split("\n\n") if block.startswith("|"))
        self.assertEqual(report.count("<table>"), tables)
        for cell in ("<td>8/120 = 6.7% [3.4, 12.6]</td>", "<td>3.524e-21</td>", "<td>219.2</td>",
                     "<td>22/30 = 73.3%</td>", "<td>898/900 = 99.8%</td>", "<td>344</td>"):
            self.assertIn(cell, report)
        self.assertEqual(report.count("<svg"), 5)
        self.assertNotIn("<script", report)
        self.assertNotIn("http://", report.replace("http://www.w3.org/2000/svg", ""))
        self.assertIn("Falsifier rejected", report)

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
        self.assertEqual((alone / "figures" / "fig_b_classes.svg").read_bytes(),
                         (out / "figures" / "fig_b_classes.svg").read_bytes())

    def test_default_is_the_most_recent_run(self):
        root = self.make_tmp()
        for name, mtime in (("old", 1_000_000), ("new", 2_000_000), ("mid", 1_500_000)):
            (root / name).mkdir()
            path = root / name / "results.json"
            path.write_text("{}")
            os.utime(path, (mtime, mtime))
        self.assertEqual(mf.latest_results(root), root / "new" / "results.json")
        self.assertIsNone(mf.latest_results(self.make_tmp()))

    def test_missing_results_file_is_a_clear_error(self):
        proc = subprocess.run([sys.executable, str(REPO / "paper" / "make_figures.py"),
                               str(self.make_tmp() / "none.json")], capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("no results.json", proc.stderr)


if __name__ == "__main__":
    unittest.main()
