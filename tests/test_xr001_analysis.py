"""pilot.studies.xr001_analysis and its report: what the verdicts rest on (issue 20): the prose reader bounded by the
sentence that names an entity, the matched-budget guard and the share of compactions at their cap, the retention
counts the figures read, and the pooled test when no model passes the ceiling."""
import json
import re
import unittest

from fake_servers import FakeOllama, read_facts
from helpers import FAST, TempDirMixin, load_tasks, reference_results, run_main
from pilot import bank, reports
from pilot.studies import episodes
from pilot.rules import states
from pilot.studies.xr001 import design as xr001, analysis as xr001_analysis, figures as xr001_figures, report as xr001_report
from test_figures import synthetic_results, synthetic_task_set


MODEL = "gemma3:4b"


class SentenceReaderTest(unittest.TestCase):
    def test_the_number_of_the_sentence_that_names_the_entity(self):
        names = ["ZOBATI", "KUMELA", "PIDORU", "NOVETA"]
        state = "ZOBATI is 101; KUMELA is 202. PIDORU was mentioned\nNOVETA, one above ZOBATI, at 102."
        nearest = states.read_prose_state(state, names)
        bounded = states.read_prose_state_by_sentence(state, names)
        self.assertEqual(nearest["KUMELA"], 101)            # the paper's heuristic: the previous sentence's number
        self.assertEqual(bounded["KUMELA"], 202)
        self.assertEqual(bounded["ZOBATI"], 101)
        self.assertIsNone(bounded["PIDORU"])                # named, but no sentence naming it holds a number
        self.assertEqual(bounded["NOVETA"], 102)            # `;` and a line break end a sentence too
        self.assertNotIn("ABSENT", states.read_prose_state_by_sentence(state, ["ABSENT"]))

    def test_score_retention_gives_both_readers(self):
        episode = episodes.generate_episode(0)
        truths = {e["name"]: e["value"] for s in episode["segments"] for e in episodes.segment_entities(s)}
        state = " ".join(f"{name} is {value}." for name, value in truths.items())
        scored = xr001_analysis.score_retention(xr001.REGIMES["R1"], state, episode)
        self.assertEqual((scored["retained"], scored["sentence_correct"]), (20, 20))
        self.assertEqual(scored["correct"], 1)              # only the first name has no number before it


class PublishedRetentionTest(unittest.TestCase):
    def test_right_values_are_what_p3_reads_and_an_inconsistent_count_is_flagged(self):
        analysis = bank.analyze_bank(reference_results(load_tasks()))
        text = reports.render_analysis_md(analysis)
        self.assertIn("| R1 | 45 | 587/900 = 65.2% | 159/900 = 17.7% | name anywhere in the state; the paper's crude "
                      "heuristic", text)
        self.assertIn("| R2 | 45 | 898/900 = 99.8% | 898/900 = 99.8% (flagged: the bank counted 899, more right values "
                      "than names found in 1 state(s); each read as its names found) |", text)
        p3 = next(v for v in xr001_analysis.evaluate_predictions(analysis) if v["id"] == "P3")
        self.assertEqual((p3["verdict"], p3["reader"]), ("confirmed", "nearest"))
        self.assertIn("R2 898/900 = 99.8%, R1 159/900 = 17.7%; R1 read by the paper's crude heuristic", p3["evidence"][0])
        self.assertIn("R2: 1 final state(s) scored with more right values than names found", p3["evidence"][1])


class ReaderCountsShapeTest(TempDirMixin, unittest.TestCase):
    def test_a_sentence_count_that_is_not_a_whole_number_is_named(self):
        results = reference_results(load_tasks())
        results["compaction_stage"][0]["sentence_correct"] = "12"
        path = self.make_tmp() / "results.json"
        path.write_text(json.dumps(results))
        code, _, err = run_main(["analyze", "--results", str(path)])
        self.assertEqual(code, 2)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn("`compaction_stage` is not a list of objects with a model, a regime and whole counts", err)


class ProseReaderOnARunTest(TempDirMixin, unittest.TestCase):
    def test_p3_rests_on_the_sentence_reader_and_names_it(self):
        """On prose such as `A is 1. B is 2.` the paper's heuristic finds almost no right value; the analysis reads
        the sentence that names each entity, reports both, and P3 says which reader it rests on."""
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL], behaviour={"prose_style": "terse", "prose_keep_last": 12}) as server:
            code, stdout, err = run_main(["--models", MODEL, "--host", server.url, "--out", str(out),
                                          "--episodes", "2", *FAST])
        self.assertEqual(code, 0, err)
        tasks = load_tasks()
        right = 0
        for line in (out / "raw" / "gemma3_4b_R1.jsonl").read_text().splitlines():
            record = json.loads(line)
            if record["kind"] == "compact_4":
                values, _ = read_facts(record["response"])
                episode = tasks["episodes"][record["episode"]]
                truths = {e["name"]: e["value"] for s in episode["segments"] for e in episodes.segment_entities(s)}
                right += sum(1 for name, value in values.items() if truths.get(name) == value)
        self.assertEqual(right, 24)                         # 12 values kept in each of the two final states
        analysis = bank.analyze_bank(json.loads((out / "results.json").read_text()))
        r1 = analysis["retention"]["by_regime"]["R1"]
        self.assertEqual((r1["right"], r1["right_reader"]), (right, "sentence"))
        self.assertEqual(r1["correct"], 2)                  # the heuristic: only each state's first name
        p3 = next(v for v in xr001_analysis.evaluate_predictions(analysis) if v["id"] == "P3")
        self.assertEqual(p3["reader"], "sentence")
        self.assertIn("R1 24/40 = 60.0%; R1 read by the number nearest the name within the first sentence", p3["evidence"][0])
        self.assertIn("the paper's nearest-number heuristic reads R1 2/40 = 5.0%", p3["evidence"][1])
        text = (out / "analysis.md").read_text()
        self.assertIn("| R1 | 2 | 31/40 = 77.5% | 24/40 = 60.0% | 2/40 = 5.0% |", text)
        self.assertIn("right by the paper's heuristic", text)


def halved_r1_budget() -> dict:
    """A copy of the published bank whose R1 compactions spent half the tokens they did (R1/R2 ratio 0.495)."""
    results = reference_results(load_tasks())
    r1 = results["compaction_tokens"]["R1"]
    r1["mean"] /= 2
    for entry in r1["by_model"].values():
        entry["mean"] /= 2
    return results


class MatchedBudgetTest(unittest.TestCase):
    def test_unmatched_budgets_give_the_label_a_reason_and_leave_the_falsifier_unjudged(self):
        results = halved_r1_budget()
        analysis = bank.analyze_bank(results)
        self.assertAlmostEqual(analysis["budget"]["ratio"], 0.495, places=3)
        self.assertEqual(analysis["label"], "NON-CONFIRMATORY")
        self.assertIn("the budgets were not matched: the realized R1/R2 ratio of mean compaction tokens is outside the "
                      "pinned band [0.8, 1.25] for gemma3:4b (0.495), qwen3-coder:30b (0.495), qwen3:14b (0.495)",
                      analysis["label_reasons"])
        falsifier = next(v for v in xr001_analysis.evaluate_predictions(analysis) if v["id"] == "F")
        self.assertEqual(falsifier["verdict"], "not judged: the budgets were not matched")
        self.assertIn("(at unmatched budgets)", falsifier["evidence"][0])
        headline = reports.render_headline(analysis)
        self.assertIn("F not judged: the budgets were not matched [the realized R1/R2 ratio of mean compaction "
                      "tokens is outside the pinned band [0.8, 1.25] for gemma3:4b (0.495)", headline)
        self.assertNotIn("F rejected", headline)
        self.assertNotIn("the budgets were not matched [the budgets were not matched", headline)
        body = xr001_report.render_md(analysis)   # the predictions' reminder names the reason the top gives
        self.assertIn("NON-CONFIRMATORY: the budgets were not matched. The verdicts below are descriptive", body)
        narrative = xr001_figures.render_results_md(analysis, "figures", "results.json")
        self.assertIn("### F: not judged: the budgets were not matched [the realized R1/R2 ratio", narrative)
        self.assertNotIn("### F: rejected", narrative)
        report = xr001_figures.report_html(results, analysis, xr001_figures.figures(results, analysis, False))
        # the report's answer says it once, in one sentence, with the ratio that failed (it said it three times)
        sentence = re.search(r"<li>(Falsifier: [^<]*)</li>", report).group(1)
        self.assertIn("at a matched budget: not judged, because the budgets were not matched: the realized R1/R2 "
                      "ratio", sentence)
        self.assertEqual(sentence.count("not matched"), 1, sentence)
        # the published bank itself is untouched: matched, confirmatory, the falsifier rejected
        published = bank.analyze_bank(reference_results(load_tasks()))
        self.assertEqual((published["label"], published["budget_guard"]["status"]), ("CONFIRMATORY", "matched"))
        self.assertIn("F rejected", reports.render_headline(published))

    def test_a_match_made_by_the_cap_is_qualified_and_the_share_at_the_cap_is_reported(self):
        """Every compaction stopped at its 256-token cap: the ratio reads 1.000, inside the band, only because both
        regimes were cut."""
        results = synthetic_results(["m"], wrong=lambda model, regime: {"R0": 3, "R1": 40, "R2": 5}[regime])
        for call in results["calls"]:
            call.update(eval_count=256, done_reason="length")
        for regime in ("R1", "R2"):
            results["compaction_tokens"][regime]["mean"] = 256.0
        analysis = xr001_analysis.analyze(results, synthetic_task_set())
        self.assertEqual(analysis["budget_guard"]["status"], "capped")
        self.assertEqual(analysis["label"], "CONFIRMATORY")     # qualified, not failed
        text = reports.render_analysis_md(analysis)
        self.assertIn("ratio of mean compaction tokens, per model the falsifier is read on: m 1.000; inside the pinned "
                      "band [0.8, 1.25]. Compactions that "
                      "stopped at their 256-token cap: R1 60/60 (100.0%), R2 60/60 (100.0%). The band is passed only "
                      "because most compactions were cut at the cap", text)
        falsifier = next(v for v in xr001_analysis.evaluate_predictions(analysis) if v["id"] == "F")
        self.assertEqual(falsifier["verdict"], "rejected")
        self.assertIn("inside the pinned band only because most compactions stopped at their 256-token cap "
                      "(m: R1 60/60, R2 60/60)", falsifier["guards"][0])
        self.assertIn("F rejected [the R1/R2 ratio (m 1.000) is inside the pinned band only because",
                      reports.render_headline(analysis))
        # the same bank with its compactions under the cap: the share is given, nothing is qualified
        for call in results["calls"]:
            call.update(done_reason="stop")
        analysis = xr001_analysis.analyze(results, synthetic_task_set())
        self.assertEqual(analysis["budget_guard"]["status"], "matched")
        self.assertIn("Compactions that stopped at their 256-token cap: R1 0/60 (0.0%), R2 0/60 (0.0%).",
                      reports.render_analysis_md(analysis))
        self.assertNotIn("[", reports.render_headline(analysis).split("verdicts:")[1])


def two_models(wrong: dict, tokens: dict) -> dict:
    """A synthetic bank of models `good` and `bad` (wrong[(model, regime)] of 120 probes wrong) with the compaction
    tokens per model given as {model: (R1 mean, R2 mean)}."""
    results = synthetic_results(["good", "bad"], wrong=lambda m, r: wrong[(m, r)])
    for regime, i in (("R1", 0), ("R2", 1)):
        by_model = results["compaction_tokens"][regime]["by_model"]
        for model, means in tokens.items():
            by_model[model]["mean"] = means[i]
        results["compaction_tokens"][regime]["mean"] = sum(m[i] for m in tokens.values()) / len(tokens)
    return results


class GuardsOnTheModelsJudgedTest(unittest.TestCase):
    """Issue 30, points 1 to 3: the matched budget, P2 and F are read on the models the falsifier is read on."""
    UNINFORMATIVE_BAD = {("good", "R0"): 3, ("good", "R1"): 40, ("good", "R2"): 5,
                         ("bad", "R0"): 120, ("bad", "R1"): 60, ("bad", "R2"): 60}

    def test_the_band_applies_to_each_informative_model_not_to_a_pool_with_excluded_ones(self):
        results = two_models(self.UNINFORMATIVE_BAD, {"good": (100.0, 200.0), "bad": (300.0, 200.0)})
        analysis = xr001_analysis.analyze(results, synthetic_task_set())
        self.assertAlmostEqual(analysis["budget"]["ratio"], 1.0)          # the pool reads "inside the band"
        self.assertEqual(analysis["informative_models"], ["good"])
        self.assertEqual((analysis["label"], analysis["budget_guard"]["status"]), ("NON-CONFIRMATORY", "unmatched"))
        self.assertIn("for good (0.500)", analysis["budget_guard"]["text"])
        falsifier = next(v for v in xr001_analysis.evaluate_predictions(analysis) if v["id"] == "F")
        self.assertEqual(falsifier["verdict"], "not judged: the budgets were not matched")
        self.assertIn("good 0.500 (OUTSIDE)", reports.render_analysis_md(analysis))
        # the informative model alone reads the same
        alone = synthetic_results(["good"], wrong=lambda m, r: self.UNINFORMATIVE_BAD[(m, r)])
        for regime, mean in (("R1", 100.0), ("R2", 200.0)):
            alone["compaction_tokens"][regime].update(mean=mean, by_model={"good": {"n": 60, "mean": mean}})
        self.assertEqual(xr001_analysis.analyze(alone, synthetic_task_set())["label"], "NON-CONFIRMATORY")

    def test_p2_is_read_on_the_informative_models(self):
        results = two_models(self.UNINFORMATIVE_BAD, {"good": (200.0, 200.0), "bad": (200.0, 200.0)})
        for probe in results["probes"]:
            if probe["model"] == "bad" and probe["regime"] == "R1" and probe["class"] != "correct":
                probe.update(answer=501, **{"class": "off_by_one"})
        analysis = xr001_analysis.analyze(results, synthetic_task_set())
        self.assertEqual(analysis["classes"]["R1"]["signature"], 60)      # all from the excluded model
        p2 = next(v for v in xr001_analysis.evaluate_predictions(analysis) if v["id"] == "P2")
        self.assertEqual(p2["verdict"], "not confirmed")
        self.assertIn("signature R1 0 vs R2 0 (probe counts pooled over good)", p2["evidence"][0])
        self.assertIn("left out (failed the ceiling check): bad", p2["evidence"])

    def test_the_answer_rates_are_read_on_the_informative_models_the_excluded_one_apart(self):
        # issue 43, point 5: the first answer sentence pooled the model the ceiling check left out
        results = two_models(self.UNINFORMATIVE_BAD, {"good": (200.0, 200.0), "bad": (200.0, 200.0)})
        analysis = xr001_analysis.analyze(results, synthetic_task_set())
        sentences = xr001_report.answer(analysis).sentences
        self.assertEqual(sentences[0], "Prose summaries (R1) corrupted 33.3% of answers, the typed state block "
                                       "(R2) 4.2%, the full transcript (R0) 2.5% (good, the models the verdicts "
                                       "are read on).")
        self.assertEqual(sentences[1], "bad, left out by the ceiling check, apart: prose summaries (R1) 50.0%, "
                                       "the typed state block (R2) 50.0%, the full transcript (R0) 100.0%.")
        self.assertNotIn("41.7%", " ".join(sentences))                    # the pool of both: (40 + 60) / 240

    def test_a_model_significantly_better_under_prose_keeps_the_falsifier_from_being_rejected(self):
        wrong = {("good", "R0"): 3, ("good", "R1"): 100, ("good", "R2"): 5,
                 ("bad", "R0"): 3, ("bad", "R1"): 0, ("bad", "R2"): 24}
        analysis = xr001_analysis.analyze(two_models(wrong, {"good": (200.0, 200.0), "bad": (200.0, 200.0)}),
                                          synthetic_task_set())
        pooled = analysis["mcnemar"]["pooled"]
        self.assertEqual((pooled["b"], pooled["c"], pooled["direction"]), (24, 95, "R2 better"))
        self.assertLess(pooled["p"], 0.05)
        falsifier = next(v for v in xr001_analysis.evaluate_predictions(analysis) if v["id"] == "F")
        self.assertEqual(falsifier["verdict"], "not rejected: bad is significantly better under prose (b = 24, c = 0, "
                                               "p = 1.192e-07)")
        self.assertNotIn("F rejected", reports.render_headline(analysis))


class CeilingTest(unittest.TestCase):
    def test_no_model_past_the_ceiling_leaves_the_pooled_row_empty(self):
        results = reference_results(load_tasks())
        for probe in results["probes"]:
            if probe["regime"] == "R0":
                probe.update(answer=None, **{"class": "omission"})
        analysis = bank.analyze_bank(results)
        self.assertEqual(analysis["label"], "UNINFORMATIVE")
        text = reports.render_analysis_md(analysis)
        self.assertIn("| pooled (none: no model passed the ceiling check) |  |  |  |  |", text)
        self.assertNotIn("| pooled | 0 | 0 |", text)
        self.assertIn("exact McNemar R1 vs R2, pooled: none (no model passed the ceiling check)",
                      reports.render_headline(analysis))

    def test_the_exploratory_regimes_pool_nothing_either(self):
        results = synthetic_results(["m"], regimes=("R0", "R1", "R2", "R3"),
                                    wrong=lambda model, regime: 120 if regime == "R0" else 10)
        text = reports.render_analysis_md(xr001_analysis.analyze(results, synthetic_task_set()))
        self.assertIn("ceiling check: none does, so the tests are left empty.", text)
        self.assertIn("| R3 | 10/120 = 8.3% [4.6, 14.7] | R1 |  |  |  |  |  |", text)


if __name__ == "__main__":
    unittest.main()
