"""Every report opens with the answer (issue 33): in every study's analysis.md, RESULTS.md and report.html the label
comes first, then the answer's sentences and the headline figure, and only then the first table; long values wrap
and nothing is wider than the page; the terminal's text is plain."""
from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys
import unittest
from unittest import mock

from helpers import REPO, TempDirMixin, load_tasks, reference_results
from pilot import bank, pages, records, reports
from pilot.studies.episodes import segment_entities
from pilot.records import study_named
from pilot.studies.xr001 import scoring as xr001_analysis, figures as xr001_figures
from pilot.studies.adversarial import analysis as adversarial_analysis, design as adversarial

EXAMPLES = REPO / "results"
PUBLISHED = REPO / "paper" / "published"


def published_xr001() -> tuple[dict, dict]:
    results = reference_results(load_tasks())
    return results, bank.analyze_bank(results)


def committed(folder: str) -> tuple[dict, dict]:
    results = json.loads((EXAMPLES / folder / "results.json").read_text())
    return results, bank.analyze_bank(results)


def adversarial_bank() -> tuple[dict, dict]:
    """An XR-G1 summary as an analysis of the shared runner gives it (the study has no committed
    example): every session's states keep each value as it stands, every probe is answered right."""
    tasks = adversarial.generate_adversarial_tasks()
    calls = {}
    for episode in tasks["episodes"]:
        e = episode["episode"]
        for name, regime in adversarial.REGIMES.items():
            states = []
            for k in range(1, len(episode["segments"]) + 1):
                entities = adversarial.adversarial_ledger(episode, k)["entities"]
                values = [f"{n} = {v['value']}" for n, v in entities.items()]
                states.append("values:\n" + "\n".join(values))
                calls[(name, e, f"compact_{k}")] = {"response": states[-1], "model": "m"}
            context = adversarial.gated_state(regime, episode, states)
            for probe in episode["probes"]:
                prompt = regime.answer_template.format(context=context, question=probe["prompt"])
                calls[(name, e, f"probe_{probe['id']}")] = {
                    "response": f"ANSWER: {probe['truth']}", "model": "m", "prompt": prompt}
    summary = adversarial_analysis.adversarial_summary(
        adversarial_analysis.adversarial_rows(tasks, calls, 0), 0)
    n = len(tasks["episodes"])
    lock = {"n_episodes": n, "regenerate": 0}
    cells = {"complete_cells": 2 * n, "expected_cells": 2 * n}
    analysis = {"study": "adversarial", "summary": summary, "lock": lock, "complete": True,
                "label": "EXPLORATORY", "coverage": cells, "simulated": False, "recheck": None}
    return {"study": "adversarial", "models": [], "regimes": ["R2", "G2"], "probes": []}, analysis


BANKS = {"xr001 (the published numbers)": published_xr001, "constraints": lambda: committed("smollm2-135m-constraints"),
         "sessions": lambda: committed("smollm2-135m-sessions"), "adversarial": adversarial_bank}


class AnswerFirstTest(TempDirMixin, unittest.TestCase):
    """The label, the answer's first sentence and the headline figure before the first table, in every study."""

    def test_every_studys_pages_open_with_the_answer(self):
        for name, make in BANKS.items():
            results, analysis = make()
            answer = reports.study_answer(analysis)
            with self.subTest(study=name):
                self.assertIsNotNone(answer, "every registered study gives its answer")
                self.assertTrue(answer.sentences and answer.figure)
                out = self.make_tmp()
                pages.regenerate(results, out, "results.json", analysis=analysis)
                first = reports.inline_html(answer.sentences[0])
                report = (out / "report.html").read_text()
                self.assertLess(report.index('<div class="headline">'), report.index(first))
                self.assertLess(report.index(first), report.index('<figure class="headline-figure">'))
                self.assertLess(report.index('<figure class="headline-figure">'), report.index("<table"))
                self.assertIn(f'href="figures/{answer.figure}"', report)
                self.assertTrue((out / "figures" / answer.figure).is_file())
                self.assertEqual(report.count(f'figures/{answer.figure}"'), 1, "the headline figure is shown once")
                for markdown in (reports.render_analysis_md(analysis), (out / "RESULTS.md").read_text()):
                    table = re.search(r"^\|", markdown, re.M).start()
                    self.assertLess(markdown.index(answer.sentences[0]), table)
                    self.assertLess(markdown.index(f"(figures/{answer.figure})"), table)

    def test_the_sentences_come_from_the_counts(self):
        """The published XR-001 numbers give the issue's sentence; changing a count changes the words."""
        results, analysis = published_xr001()
        sentences = reports.study_answer(analysis).sentences
        self.assertEqual(sentences[0], "Prose summaries (R1) corrupted 36.4% of answers, the typed state block (R2) "
                                       "9.4%, the full transcript (R0) 4.4%.")
        self.assertIn("prose was worse 108 times and better 11 (exact McNemar p = 3.524e-21", sentences[1])
        self.assertNotIn("P1", " ".join(sentences))          # each prediction by what it says, not by its code
        # the rates are the corrupted answers counted over the models the verdicts are read on
        corruption = {m: {**cells, "R2": {**cells["R2"], "k": cells["R2"]["n"] // 2}}
                      for m, cells in analysis["corruption"].items()}
        changed = dict(analysis, corruption=corruption)
        self.assertIn("the typed state block (R2) 50.0%", reports.study_answer(changed).sentences[0])

    def test_withheld_verdicts_are_said_once(self):
        """An UNINFORMATIVE bank withholds every verdict for one reason: one sentence, not one per prediction."""
        results, analysis = committed("smollm2-135m-llamacpp")
        self.assertEqual(analysis["label"], "UNINFORMATIVE")
        sentences = reports.study_answer(analysis).sentences
        self.assertEqual(sum("withheld" in s for s in sentences), 1, sentences)

    def test_a_study_without_an_answer_keeps_its_pages(self):
        """The shared layout takes a study with no answer hook (a new study's first version) as it is."""
        study = study_named("xr001")
        self.assertIsNotNone(study.report.answer)
        self.assertEqual(reports.before_first_section("# t\n\nlabel\n\n## s\n\n| a |", "X\n"),
                         "# t\n\nlabel\n\nX\n\n## s\n\n| a |")


class VerdictTest(unittest.TestCase):
    """What the core reads of a study's analysis is one record, records.Verdict (issue 39): made of
    the keys every analysis holds, the study's answer hook and the core's own two keys."""

    def test_each_studys_verdict_is_its_analysis_and_its_answer(self):
        reasons = {"xr001 (the published numbers)": "label_reasons", "constraints": "reasons"}
        for name, make in BANKS.items():
            results, analysis = make()
            verdict = records.verdict_of(analysis)
            with self.subTest(study=name):
                self.assertEqual(verdict.label, analysis["label"])
                self.assertEqual((verdict.complete, verdict.complete_cells, verdict.expected_cells),
                                 (analysis["complete"], analysis["coverage"]["complete_cells"],
                                  analysis["coverage"]["expected_cells"]))
                hook = study_named(analysis.get("study")).report.answer
                self.assertEqual(verdict.answer, hook(analysis))
                self.assertEqual(verdict.answer.reasons, tuple(analysis.get(reasons.get(name), ())))
                self.assertEqual((verdict.simulated, verdict.partial), (False, None))
                self.assertEqual(records.verdict_of(dict(analysis, simulated=True)).simulated, True)

    def test_the_verdict_is_frozen_and_an_analysis_without_a_label_is_refused(self):
        verdict = records.verdict_of(published_xr001()[1])
        with self.assertRaises(dataclasses.FrozenInstanceError):
            verdict.label = "CONFIRMATORY"
        for analysis in ({}, {"study": "constraints", "label": ""}, []):
            with self.subTest(analysis=analysis), self.assertRaises(records.PilotError):
                records.verdict_of(analysis)

    def test_a_study_without_an_answer_has_a_verdict_without_one(self):
        results, analysis = published_xr001()
        study = study_named("xr001")
        bare = dataclasses.replace(study, report=records.Report())
        with mock.patch.dict(records.STUDY_REGISTRY, {study.name: bare}):
            verdict = records.verdict_of(analysis)
            self.assertIsNone(verdict.answer)
            self.assertEqual(verdict.label, "CONFIRMATORY")
            self.assertEqual(reports.render_closing(analysis),
                             reports.plain_text(reports.render_headline(analysis)))

    def test_every_field_is_documented(self):
        """Each record's docstring says what each of its fields holds, who fills it and who reads
        it."""
        for record in (records.Verdict, records.Answer):
            documented = re.findall(r"^\s*- ([\w, ]+):", record.__doc__, re.MULTILINE)
            named = {field.strip() for line in documented for field in line.split(",")}
            with self.subTest(record.__name__):
                self.assertEqual(named, {field.name for field in dataclasses.fields(record)})


class PublishedBankTest(TempDirMixin, unittest.TestCase):
    """The front page's figure: paper/published/ is the bank of the published counts and what make_figures.py draws
    from it, byte for byte; the README shows it and names the command."""

    def test_the_committed_bank_is_the_published_counts(self):
        committed_bank = (PUBLISHED / "results.json").read_text()
        self.assertEqual(committed_bank, json.dumps(reference_results(load_tasks()), indent=1) + "\n",
                         "paper/published/results.json is stale: rebuild it as paper/published/README.md says")

    def test_make_figures_regenerates_the_committed_bytes(self):
        out = self.make_tmp()
        shutil.copy(PUBLISHED / "results.json", out / "results.json")
        proc = subprocess.run([sys.executable, str(REPO / "paper" / "make_figures.py"), str(out / "results.json")],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        made = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()
                      and p.name != ".pilot-outputs.json")        # the folder marker is never committed
        committed_files = sorted(p.relative_to(PUBLISHED).as_posix() for p in PUBLISHED.rglob("*") if p.is_file()
                                 and p.name != "README.md")
        self.assertEqual(made, committed_files)
        for name in made:
            with self.subTest(file=name):
                self.assertEqual((out / name).read_bytes(), (PUBLISHED / name).read_bytes(),
                                 "paper/published/ is stale: run python3 paper/make_figures.py "
                                 "paper/published/results.json and commit it")

    def test_the_front_page_shows_the_figure_and_a_cheap_first_run(self):
        readme = (REPO / "README.md").read_text()
        self.assertIn("](paper/published/figures/fig_a_corruption.svg)", readme)
        self.assertIn("python3 paper/make_figures.py paper/published/results.json", readme)
        self.assertIn("python3 scripts/run_pilot.py --models gemma3:4b --episodes 2", readme)
        self.assertLessEqual(len(readme.splitlines()), 160)


class LostValuesMarkedTest(TempDirMixin, unittest.TestCase):
    """XR-001's final states side by side mark each pinned value kept, changed or dropped, as the scoring reads it."""

    def test_state_values_read_as_the_scoring_reads(self):
        episode = load_tasks()["episodes"][0]
        truths = {e["name"]: e["value"] for seg in episode["segments"] for e in segment_entities(seg)}
        (kept, value), (changed, old), (dropped, _) = list(truths.items())[:3]
        state = f"values:\n{kept} = {value}\n{changed} = {old + 1}\n"
        typed = study_named("xr001").regimes["R2"]
        classes = {v["name"]: (v["class"], v["found"]) for v in xr001_analysis.state_values(typed, state, episode)}
        self.assertEqual(classes[kept], ("kept", value))
        self.assertEqual(classes[changed], ("changed", old + 1))
        self.assertEqual(classes[dropped], ("dropped", None))
        self.assertEqual(len(classes), len(truths))

    def test_the_report_marks_them(self):
        results, analysis = committed("smollm2-135m-llamacpp")
        page = xr001_figures.report_html(results, analysis, xr001_figures.figures(results, analysis, False))
        states = page[page.index('id="states"'):]
        example = results["example_states"][0]
        self.assertTrue(example["values"])
        for value in example["values"]:
            with self.subTest(value=value["name"], cls=value["class"]):
                if value["class"] == "dropped":
                    self.assertIn(f'<del class="dropped">{value["name"]} = {value["value"]}</del>', states)
                elif value["name"] in example["final_state"]:
                    self.assertIn(f'<mark class="{value["class"]}"', states)
                    self.assertRegex(states, f'<mark class="{value["class"]}" title="[^"]*">{value["name"]}</mark>')


class FitsThePageTest(TempDirMixin, unittest.TestCase):
    """Long values wrap: no table or state is wider than the page (the sessions report's long URL)."""

    def test_long_values_wrap_in_every_report(self):
        style = reports.REPORT_STYLE
        self.assertIn("overflow-wrap:anywhere", re.search(r"td,th\{[^}]*\}", style).group(0))
        self.assertIn("max-width:100%", re.search(r"table\{[^}]*\}", style).group(0))
        self.assertIn("figure svg{width:100%;height:auto}", style)
        results, analysis = committed("smollm2-135m-sessions")
        out = self.make_tmp()
        pages.regenerate(results, out, "results.json", analysis=analysis)
        self.assertIn(style, (out / "report.html").read_text())     # the sessions report uses the shared style


class PlainTerminalTest(unittest.TestCase):
    """What a run prints at its end is plain text: no markdown marks, tables as columns, the label once."""

    def test_markdown_becomes_plain_text(self):
        text = reports.plain_text("**SIMULATED**: the `demo`\n\n| model | R1 |\n|---|---|\n| a\\|b | 1 |\n## Head")
        self.assertEqual(text, "SIMULATED: the demo\n\nmodel  R1\na|b    1\nHead")

    def test_the_closing_lines_say_the_label_once(self):
        results, analysis = published_xr001()
        closing = reports.render_closing(dict(analysis, simulated=True))
        self.assertEqual(closing.splitlines()[0], "SIMULATED (stand-in model, not a result) · CONFIRMATORY")
        for mark in ("**", "`", "|"):
            self.assertNotIn(mark, closing)
        self.assertEqual(closing.count("SIMULATED"), 1)


if __name__ == "__main__":
    unittest.main()
