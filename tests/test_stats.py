"""pilot.stats and the XR-001 analysis (protocol section 5) against the published XR-001 numbers."""
import json
import math
import random
import unittest
from fractions import Fraction

from helpers import TempDirMixin, load_tasks, reference_results, run_main
from pilot import bank, records, reports, stats
from pilot.studies.xr001 import analysis as xr001_analysis


class WilsonTest(unittest.TestCase):
    PUBLISHED = [(8, 120, "3.4", "12.6"), (44, 120, "28.6", "45.6"), (17, 120, "9.0", "21.5"),
                 (52, 120, "34.8", "52.3"), (14, 120, "7.1", "18.6"), (0, 120, "0.0", "3.1"),
                 (35, 120, "21.8", "37.8"), (3, 120, "0.9", "7.1")]

    def test_published_intervals(self):
        for k, n, lo, hi in self.PUBLISHED:
            with self.subTest(k=k):
                got = stats.wilson_interval(k, n)
                self.assertEqual((f"{100 * got[0]:.1f}", f"{100 * got[1]:.1f}"), (lo, hi))

    def test_edges(self):
        self.assertEqual(stats.wilson_interval(0, 0), (0.0, 1.0))
        lo, hi = stats.wilson_interval(120, 120)
        self.assertEqual(hi, 1.0)
        self.assertLess(lo, 1.0)


class McNemarTest(unittest.TestCase):
    PUBLISHED = [(11, 108, "3.524e-21"), (5, 32, "7.428e-06"), (3, 35, "6.678e-08"), (3, 41, "1.618e-09")]

    def test_published_p_values(self):
        for b, c, p in self.PUBLISHED:
            with self.subTest(b=b, c=c):
                self.assertEqual(reports.fmt_p(stats.mcnemar_exact(b, c)), p)

    def test_a_p_value_that_underflows_prints_as_below_1e_300(self):
        """Issue 30, point 16: b = 5,000, c = 0 gave p = 0.0 as a double, printed "0.000e+00"."""
        self.assertEqual(stats.mcnemar_exact(5000, 0), 0.0)
        self.assertEqual(reports.fmt_p(stats.mcnemar_exact(5000, 0)), "< 1e-300")
        self.assertEqual(reports.fmt_p(2e-300), "2.000e-300")
        self.assertEqual(reports.fmt_p(0.0254), "0.0254")

    def test_small_exact_values(self):
        self.assertEqual(stats.mcnemar_exact(0, 0), 1.0)
        self.assertEqual(stats.mcnemar_exact(3, 3), 1.0)
        self.assertAlmostEqual(stats.mcnemar_exact(0, 5), 2 / 32)
        self.assertAlmostEqual(stats.mcnemar_exact(1, 4), 2 * 6 / 32)
        self.assertEqual(stats.mcnemar_exact(4, 1), stats.mcnemar_exact(1, 4))

    @staticmethod
    def big_integer_p(b: int, c: int) -> float:
        """The definition, summed in big integers as the former implementation did (it called math.comb per
        term; the same integers are built here term by term, checked against math.comb on small n)."""
        n = b + c
        if n == 0:
            return 1.0
        term = tail = 1
        for i in range(min(b, c)):
            term = term * (n - i) // (i + 1)           # C(n, i + 1), exact
            tail += term
        assert n > 200 or tail == sum(math.comb(n, i) for i in range(min(b, c) + 1))
        return float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))

    def test_linear_sum_equals_the_big_integer_sum(self):
        rng = random.Random(11)
        pairs = [(b, c) for b in range(40) for c in range(40)] + [(b, c) for b, c, _ in self.PUBLISHED]
        pairs += [(rng.randrange(2500), rng.randrange(2500)) for _ in range(150)]
        pairs += [(x, x + d) for x in (700, 1500) for d in (0, 1, 2, 7, 60, 300)]
        pairs += [(0, 1074), (1, 1100), (520, 1600)]          # subnormal and tiny p
        for b, c in pairs:
            with self.subTest(b=b, c=c):
                want, got = self.big_integer_p(b, c), stats.mcnemar_exact(b, c)
                self.assertEqual(reports.fmt_p(got), reports.fmt_p(want))
                if want > 1e-300:
                    self.assertLess(abs(got - want) / want, 1e-12)
                self.assertEqual(got, stats.mcnemar_exact(c, b))


def constructed_bank(b: int, c: int, both_wrong: int, n_episodes: int = 15) -> dict:
    """One model, R1 and R2 only, with exactly b and c discordant probes."""
    probes = []
    slots = [(e, q) for e in range(n_episodes) for q in range(1, 9)]
    r1_wrong = set(slots[:both_wrong] + slots[both_wrong + b: both_wrong + b + c])
    r2_wrong = set(slots[:both_wrong + b])
    for regime, wrong in (("R1", r1_wrong), ("R2", r2_wrong)):
        for e, q in slots:
            cls = "other_wrong" if (e, q) in wrong else "correct"
            probes.append({"model": "m", "regime": regime, "episode": e, "question_id": q,
                           "type": "multihop" if q > 6 else "direct", "truth": 500,
                           "answer": 9999 if cls != "correct" else 500, "class": cls})
    cells = {"complete": 2 * n_episodes, "not_complete": 0, "expected": 2 * n_episodes, "expected_probes_per_cell": 8}
    return {"models": ["m"], "regimes": ["R1", "R2"], "cells": cells, "probes": probes, "compaction_stage": [],
            "compaction_tokens": {}}


class CohenKappaTest(unittest.TestCase):
    @staticmethod
    def pairs(both_yes: int, first_only: int, second_only: int, both_no: int) -> list:
        return ([(True, True)] * both_yes + [(True, False)] * first_only +
                [(False, True)] * second_only + [(False, False)] * both_no)

    def test_a_worked_value(self):
        # 50 items: both yes 20, first only 5, second only 10, both no 15: observed 0.7, chance
        # 0.5 (25*30 + 25*20 over 2500), kappa 0.4
        self.assertAlmostEqual(stats.cohen_kappa(self.pairs(20, 5, 10, 15)), 0.4)

    def test_perfect_chance_and_opposite_agreement(self):
        self.assertAlmostEqual(stats.cohen_kappa(self.pairs(3, 0, 0, 7)), 1.0)
        self.assertAlmostEqual(stats.cohen_kappa(self.pairs(5, 5, 5, 5)), 0.0)
        self.assertAlmostEqual(stats.cohen_kappa(self.pairs(0, 4, 6, 0)), -0.48 / 0.52)

    def test_one_class_only_is_not_measurable(self):
        for name, pairs in (("no item", []), ("both all yes", self.pairs(6, 0, 0, 0)),
                            ("first all no", self.pairs(0, 0, 3, 4)),
                            ("second all yes", self.pairs(2, 3, 0, 0)),
                            ("one item", self.pairs(1, 0, 0, 0))):
            with self.subTest(name):
                self.assertIsNone(stats.cohen_kappa(pairs))


class AnalysisTest(TempDirMixin, unittest.TestCase):
    def test_constructed_bank_known_b_and_c(self):
        for b, c, direction in ((4, 20, "R2 better"), (9, 2, "R1 better"), (5, 5, "no difference")):
            with self.subTest(b=b, c=c):
                analysis = xr001_analysis.analyze(constructed_bank(b, c, both_wrong=7))
                pooled = analysis["mcnemar"]["pooled"]
                self.assertEqual((pooled["b"], pooled["c"], pooled["direction"]), (b, c, direction))
                self.assertEqual(pooled["p"], stats.mcnemar_exact(b, c))
                self.assertEqual(analysis["corruption"]["m"]["R1"]["k"], 7 + c)
                self.assertEqual(analysis["corruption"]["m"]["R2"]["k"], 7 + b)

    def test_reference_bank_reproduces_every_published_table(self):
        folder = self.make_tmp()
        path = folder / "results.json"
        path.write_text(json.dumps(reference_results(load_tasks())))
        code, out, _ = run_main(["analyze", "--results", str(path)])
        self.assertEqual(code, 0)
        self.assertFalse((folder / "analysis.md").exists())      # never written over someone else's bank
        code, out, _ = run_main(["analyze", "--results", str(path), "--out", str(folder / "ours")])
        self.assertEqual(code, 0)
        text = (folder / "ours" / "analysis.md").read_text()
        self.assertEqual(out.strip(), text.strip())
        expected_rows = [
            "| gemma3:4b | 8/120 = 6.7% [3.4, 12.6] | 44/120 = 36.7% [28.6, 45.6] | 17/120 = 14.2% [9.0, 21.5] |",
            "| qwen3:14b | 8/120 = 6.7% [3.4, 12.6] | 52/120 = 43.3% [34.8, 52.3] | 14/120 = 11.7% [7.1, 18.6] |",
            "| qwen3-coder:30b | 0/120 = 0.0% [0.0, 3.1] | 35/120 = 29.2% [21.8, 37.8] | 3/120 = 2.5% [0.9, 7.1] |",
            "| pooled | 16/360 = 4.4%", "| 131/360 = 36.4%", "| 34/360 = 9.4%",
            "| pooled | 11 | 108 | 3.524e-21 | R2 better |",
            "| gemma3:4b | 5 | 32 | 7.428e-06 | R2 better |",
            "| qwen3-coder:30b | 3 | 35 | 6.678e-08 | R2 better |",
            "| qwen3:14b | 3 | 41 | 1.618e-09 | R2 better |",
            "| R0 | 344 | 1 | 3 | 12 | 0 | 4 |", "| R1 | 229 | 1 | 16 | 84 | 30 | 17 |",
            "| R2 | 326 | 1 | 3 | 25 | 5 | 4 |",
            "| R1 | 180 | 219.2 |", "| R2 | 180 | 221.4 |",
            "| gemma3:4b | 22/30 = 73.3% | 9/30 = 30.0% | 15/30 = 50.0% |",
            "| qwen3:14b | 22/30 = 73.3% | 6/30 = 20.0% | 16/30 = 53.3% |",
            "| qwen3-coder:30b | 30/30 = 100.0% | 14/30 = 46.7% | 30/30 = 100.0% |",
            "| R1 | 45 | 587/900 = 65.2%", "| R2 | 45 | 898/900 = 99.8%",
            "CONFIRMATORY: every pre-registered probe is present exactly once (135 complete cells, 15 episodes)",
        ]
        for row in expected_rows:
            with self.subTest(row=row):
                self.assertIn(row, text)

    def test_column_counts_equal_counts_probe_by_probe(self):
        """The analysis reads the bank as columns; on sweeps with repeated samples, an extra regime and a few wrong
        truths, shuffled with probes outside the design and duplicates, in model order (R1 and R2 then pair by
        position) or in the order runs write (whose coverage is read from the layout), every count equals one
        made probe by probe."""
        tasks = load_tasks()
        for seed in range(6):
            with self.subTest(seed=seed):
                rng = random.Random(seed)
                results = sweep_bank(rng, tasks, ("messy", "model order", "run order")[seed % 3])
                analysis = xr001_analysis.analyze(results, {"tasks": tasks, "kind": "pinned", "sha256": "x", "path": "t"})
                probes, models = results["probes"], results["models"]
                variant = lambda p: (p.get("budget", records.DEFAULT_BUDGET), p.get("sample", 0))
                primary = [p for p in probes if variant(p) == (records.DEFAULT_BUDGET, 0)]
                for model in models:
                    for regime in results["regimes"]:
                        cell = [p for p in primary if p["model"] == model and p["regime"] == regime]
                        wrong = sum(p["class"] != "correct" for p in cell)
                        self.assertEqual((analysis["corruption"][model][regime]["k"],
                                          analysis["corruption"][model][regime]["n"]), (wrong, len(cell)))
                keys = [(p["model"], p["regime"], p["episode"], p["question_id"], *variant(p)) for p in probes]
                coverage = analysis["coverage"]
                self.assertEqual(coverage["duplicates"], len(keys) - len(set(keys)))
                self.assertEqual(coverage["outside"], sum(p["model"] not in models or p["question_id"] > 8
                                                          for p in probes))
                self.assertEqual(coverage["mismatched_truths"], sum(
                    p["model"] in models and p["question_id"] <= 8
                    and p["truth"] != tasks["episodes"][p["episode"]]["questions"][p["question_id"] - 1]["truth"]
                    for p in probes))
                last: dict[tuple, bool] = {}
                for p in primary:
                    last[(p["model"], p["regime"], p["episode"], p["question_id"])] = p["class"] == "correct"
                firsts = [(m, e, q, ok) for (m, r, e, q), ok in last.items() if r == "R1" and m in models]
                b = sum(ok and last.get((m, "R2", e, q)) is False for m, e, q, ok in firsts)
                c = sum(not ok and last.get((m, "R2", e, q)) is True for m, e, q, ok in firsts)
                self.assertEqual(analysis["informative_models"], models)
                pooled = analysis["mcnemar"]["pooled"]
                self.assertEqual((pooled["b"], pooled["c"]), (b, c))
                for budget in results["budgets"]:
                    mine = [p for p in probes if variant(p)[0] == budget and p["model"] in models]
                    for regime in results["regimes"]:
                        cell = [p for p in mine if p["regime"] == regime]
                        row = analysis["sweep"][str(budget)]["rates"][regime]
                        self.assertEqual((row["k"], row["n"]), (sum(p["class"] != "correct" for p in cell), len(cell)))
                        spread = analysis["samples"]["by_regime"][f"{regime}|{budget}"]["per_sample"]
                        for sample, rate in enumerate(spread):
                            picked = [p for p in cell if variant(p)[1] == sample]
                            self.assertEqual(rate, sum(p["class"] != "correct" for p in picked) / len(picked))
                extra = analysis["extra"]["R3"]["tests"]["R1"]
                self.assertEqual(extra["n_pairs"], sum(1 for (m, r, e, q) in last if r == "R3"
                                                       and (m, "R1", e, q) in last and m in models))

    def test_partial_bank_needs_allow_partial(self):
        folder = self.make_tmp()
        results = reference_results(load_tasks())
        # one cell's probes are missing: partial, whatever the `cells` block claims (here 135/135)
        results["probes"] = [p for p in results["probes"]
                             if (p["model"], p["regime"], p["episode"]) != ("gemma3:4b", "R1", 4)]
        path = folder / "results.json"
        path.write_text(json.dumps(results))
        code, _, err = run_main(["analyze", "--results", str(path), "--out", str(folder)])
        self.assertEqual(code, 2)
        self.assertIn("--allow-partial", err)
        self.assertFalse((folder / "analysis.md").exists())
        code, _, err = run_main(["analyze", "--results", str(path)])
        self.assertEqual(code, 2)
        code, out, _ = run_main(["analyze", "--results", str(path), "--allow-partial"])
        self.assertEqual(code, 0)
        self.assertIn("**NON-CONFIRMATORY**: partial bank: 1 cell(s) lack probes (first: gemma3:4b|R1|4)", out)
        self.assertIn("disagrees with its probes (134 complete cells)", out)

    def test_unreadable_results_file(self):
        path = self.make_tmp() / "results.json"
        path.write_text("{not json")
        code, _, err = run_main(["analyze", "--results", str(path)])
        self.assertEqual(code, 2)
        self.assertIn("is not valid JSON", err)
        self.assertIn("point --results at a results.json", err)

    def test_predictions_on_published_numbers(self):
        verdicts = {v["id"]: v["verdict"] for v in xr001_analysis.evaluate_predictions(
            bank.analyze_bank(reference_results(load_tasks())))}
        self.assertEqual(verdicts, {"P1": "confirmed", "P2": "confirmed", "P3": "confirmed", "F": "rejected"})


if __name__ == "__main__":
    unittest.main()


def sweep_bank(rng: random.Random, tasks: dict, layout: str) -> dict:
    """Two models, R0-R3, budgets 128 and 256, three samples, five episodes, a few truths that differ from the
    task file; "messy" is also shuffled, with a few probes of an unknown model or a ninth question and a few
    duplicates; the others are in model order or in the order runs write."""
    messy = layout == "messy"
    cells = [(m, r, b, s) for m in ("m1", "m2", "stranger") for r in ("R0", "R1", "R2", "R3") for b in (128, 256)
             for s in range(3)]
    if layout == "run order":
        cells.sort(key=lambda cell: ((128, 256).index(cell[2]), cell[3]))    # stable: models, regimes in order
    probes = []
    for model, regime, budget, sample in cells:
        for episode in range(5):
            for question in tasks["episodes"][episode]["questions"]:
                if model == "stranger" and (not messy or rng.random() < 0.9):
                    continue
                cls = rng.choice(bank.CLASSES + ("correct",) * 10)
                truth = question["truth"] + (1 if rng.random() < 0.02 else 0)
                probe = {"model": model, "regime": regime, "episode": episode,
                         "question_id": question["id"] if not messy or rng.random() > 0.01 else 9,
                         "type": question["type"], "truth": truth,
                         "answer": truth if cls == "correct" else None, "class": cls}
                if (budget, sample) != (records.DEFAULT_BUDGET, 0) or rng.random() < 0.3:
                    probe.update(budget=budget, sample=sample)
                probes.append(probe)
                if messy and rng.random() < 0.01:
                    probes.append(dict(probe, **{"class": "omission"}))
    if messy:
        rng.shuffle(probes)
    return {"models": ["m1", "m2"], "regimes": ["R0", "R1", "R2", "R3"], "budgets": [128, 256], "samples": 3,
            "temperature": 0.7, "probes": probes, "compaction_stage": [], "compaction_tokens": {}}
