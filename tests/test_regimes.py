"""Regimes as data (protocol sections 2 and 5): the registry, a user's regime file, the built-in exploratory
regimes, probe kinds, exploratory comparisons, a budget sweep and repeated samples."""
import ast
import dataclasses
import json
import unittest
from pathlib import Path
from unittest import mock

from fake_servers import FakeOllama
from helpers import (FAST, REPO, TempDirMixin, call_prompt, compaction_prompt, kill_at_call, run_main,
    runner_command)
from pilot import bank, cells, cli, inputs, launch, records, reports, stats
from pilot.studies import episodes
from pilot.rules import states
from pilot.studies.xr001 import design as xr001, analysis as xr001_analysis, figures as xr001_figures, report as xr001_report

MODEL = "gemma3:4b"

# A user's compaction prompt, written as an agent would (the fake model needs the two section markers).
USER_TEMPLATE = ("Context is nearly full. Fold the new messages into the running notes, keeping every figure.\n\n"
                 "PREVIOUS STATE:\n{previous_state}\n\nNEW SEGMENT:\n{segment}\n\nAt most {max_words} words.")


def regime_file(folder: Path, entries, name: str = "mine.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(entries) if not isinstance(entries, str) else entries)
    return path


class RegistryTest(unittest.TestCase):
    def test_every_built_in_regime_is_one_record(self):
        self.assertEqual(tuple(xr001.REGIMES)[:3], xr001.DEFAULT_REGIMES)
        for name, regime in xr001.REGIMES.items():
            with self.subTest(name):
                self.assertEqual(regime.name, name)
                self.assertEqual(regime.exploratory, name not in xr001.DEFAULT_REGIMES)
                if regime.compacts:
                    self.assertEqual(launch.template_fields(regime.compaction_template),
                                     {"previous_state", "segment", "max_words"})
                self.assertEqual(launch.template_fields(regime.answer_template), {"context", "question"})

    def test_calls_carry_stage_and_budget(self):
        episode = episodes.generate_episode(0)
        plan = cells.cascade_plan(xr001.REGIMES["R2"], episode, 128)
        self.assertEqual([(c.stage, c.max_output_tokens) for c in plan[:5]],
                         [("compaction", 128)] * 4 + [("answer", records.ANSWER_NUM_PREDICT)])
        self.assertTrue(all(c.stage == "answer" for c in cells.cascade_plan(xr001.REGIMES["K2"], episode)))
        self.assertEqual([inputs.budget_words(b) for b in (128, 256, 512)], [60, 120, 240])
        prompt = compaction_prompt(xr001.REGIMES["R1"], "", "SEG", 512)
        self.assertIn("at most 240 words", prompt)

    def test_recent_k_sees_only_the_last_segments(self):
        episode = episodes.generate_episode(0)
        spec = cells.cascade_plan(xr001.REGIMES["K1"], episode)[0]
        text = call_prompt(xr001.REGIMES["K1"], episode, spec)
        self.assertIn(episode["segments"][3]["text"], text)
        self.assertNotIn(episode["segments"][2]["text"], text)

    def test_section_reader(self):
        state = ("Goal\nkeep the ledger\nProgress\nBAKUTO = 5\nCritical values:\nNEMATA = 412\nKOLAPE = 7\n"
                 "Next steps\nSIMOTE = 9")
        self.assertEqual(states.read_typed_state(states.read_section(state, "critical values")), {"NEMATA": 412, "KOLAPE": 7})

    def test_holm_and_bootstrap(self):
        self.assertEqual(stats.holm_adjust([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
        by_episode = {e: (e % 3, 8) for e in range(15)}
        first = stats.clustered_bootstrap(by_episode)
        self.assertEqual(first, stats.clustered_bootstrap(by_episode))          # seeded
        self.assertLess(first[0], sum(w for w, _ in by_episode.values()) / 120)
        self.assertGreater(first[1], sum(w for w, _ in by_episode.values()) / 120)

    def test_a_new_probe_kind_is_one_entry(self):
        kind = bank.ProbeKind("choice", lambda reply: reply.strip()[:1] or None, None,
                            lambda answer, question, conflation: "compliant" if answer == question["truth"] else
                            "violating", ("compliant", "violating", "no answer"), "compliant", "no answer")
        with mock.patch.dict(bank.PROBE_KINDS, {"choice": kind}):
            probe = bank.score_probe({"response": "B"}, {"id": 1, "type": "choice", "truth": "B", "kind": "choice"}, [])
        self.assertEqual(probe["class"], "compliant")

    def test_the_runner_never_imports_the_figures_script(self):
        tree = ast.parse((REPO / "scripts" / "run_pilot.py").read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        self.assertFalse({"importlib", "importlib.util", "make_figures"} & imported)


class RegimeFileTest(TempDirMixin, unittest.TestCase):
    def test_the_shipped_example_loads(self):
        regimes = launch.load_regime_file(REPO / "tasks" / "regimes.example.json")
        self.assertEqual([r.name for r in regimes], ["MYAGENT"])
        self.assertTrue(regimes[0].exploratory)

    def test_every_problem_is_named_on_its_own_line(self):
        folder = self.make_tmp()
        entries = [
            {"name": "A1", "compaction_template": "{previous_state} {segment}"},                  # no {max_words}
            {"name": "A2", "compaction_template": USER_TEMPLATE, "state_reader": "psychic"},
            {"name": "A3", "compaction_template": USER_TEMPLATE},
            {"name": "A3", "compaction_template": USER_TEMPLATE},                                  # duplicate
            {"name": "R1", "compaction_template": USER_TEMPLATE},                                  # reserved
            {"name": "A4", "compaction_template": USER_TEMPLATE + " {oops}", "colour": "red"},
            {"name": "A5", "kind": "recent"},
            {"name": "full+", "compaction_template": USER_TEMPLATE},               # another study's, any case
            {"name": "MINE+UB", "compaction_template": USER_TEMPLATE},             # the upper bounds' suffix
            {"name": "a3", "compaction_template": USER_TEMPLATE},                  # A3 again, in other letters
        ]
        path = regime_file(folder, entries)
        code, _, err = run_main(["plan", "--models", MODEL, "--regime-file", str(path)])
        self.assertEqual(code, 2)
        for expected in ("regime 1 (A1): `compaction_template` lacks {max_words}",
                         "regime 2 (A2): unknown state_reader 'psychic'", "regime 4 (A3): the name A3 is used twice",
                         "regime 5 (R1): the name R1 is reserved", "regime 6 (A4): unknown field(s) colour",
                         "regime 6 (A4): `compaction_template` has unknown placeholder(s) {oops}",
                         "regime 7 (A5): a recent regime needs `keep_last`",
                         "regime 8 (full+): the name full+ is reserved", "regime 9 (MINE+UB): the name MINE+UB ends in +UB",
                         "regime 10 (a3): the name a3 is used twice"):
            with self.subTest(expected):
                self.assertIn(expected, err)
        self.assertNotIn("Traceback", err)
        code, _, err = run_main(["plan", "--models", MODEL, "--regime-file", str(regime_file(folder, "{nope"))])
        self.assertEqual(code, 2)
        self.assertIn("is not valid JSON", err)

    def test_a_regime_file_gets_a_folder_of_its_own(self):
        """Regimes added from a file never share the pre-registered run's folder (its lock would refuse them)."""
        path = REPO / "tasks" / "regimes.example.json"
        sha = records.file_sha256(path)[:12]
        for study, argv in (("xr001", []), ("constraints", ["--study", "constraints"])):
            with self.subTest(study):
                args = cli.build_parser("pilot").parse_args(["--models", MODEL, "--regime-file", str(path), *argv])
                self.assertEqual(launch.resolve_run_dir(args).name, f"{study}-regimes-{sha}")
        args = cli.build_parser("pilot").parse_args(["--models", MODEL])
        self.assertEqual(launch.resolve_run_dir(args).name, "xr001")

    def test_unknown_regime_fails_before_anything_is_made(self):
        out = self.make_tmp() / "run"
        code, _, err = run_main(["--models", MODEL, "--regimes", "R0,R9", "--out", str(out), "--host",
                                 "http://127.0.0.1:9"])
        self.assertEqual(code, 2)
        self.assertIn("unknown regime(s) R9", err)
        self.assertFalse(out.exists())


class UserRegimeRunTest(TempDirMixin, unittest.TestCase):
    def test_a_regime_file_runs_beside_r0_r2_and_is_locked(self):
        folder = self.make_tmp()
        path = regime_file(folder, {"regimes": [{"name": "MINE", "description": "my agent's prompt",
                                                 "compaction_template": USER_TEMPLATE}]})
        out = folder / "run"
        with FakeOllama(models=[MODEL], behaviour={"prose_keep_last": 6}) as server:
            argv = ["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "2",
                    "--regime-file", str(path), *FAST]
            code, stdout, err = run_main(argv)
            self.assertEqual(code, 0, err)
            manifest = json.loads((out / "manifest.json").read_text())
            self.assertEqual(manifest["regimes"], ["R0", "R1", "R2", "MINE"])
            self.assertEqual(manifest["regime_definitions"]["MINE"]["compaction_template"], USER_TEMPLATE)
            self.assertEqual(manifest["lock"]["regimes_sha256"],
                             inputs.regimes_sha256(launch.select_regimes(["R0", "R1", "R2", "MINE"],
                                                                 launch.load_regime_file(path))))
            raw = [json.loads(line) for line in (out / "raw" / "gemma3_4b_MINE.jsonl").read_text().splitlines()]
            self.assertEqual(sum(1 for r in raw if r["stage"] == "compaction"), 2 * 4)
            self.assertIn("Context is nearly full", raw[0]["messages"][0]["content"])
            analysis = (out / "analysis.md").read_text()
            self.assertIn("## Exploratory regimes", analysis)
            self.assertIn("| MINE |", analysis)
            self.assertIn("p (Holm)", analysis)
            self.assertIn("| model | R0 | R1 | R2 | MINE* |", analysis)
            self.assertIn("MINE", (out / "figures" / "fig_a_corruption.svg").read_text())
            self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)
            # the regime's text is part of the lock: an edited file is refused on resume
            path.write_text(path.read_text().replace("nearly full", "almost full"))
            code, _, err = run_main(argv)
            self.assertEqual(code, 2)
            self.assertIn("regimes_sha256", err)

    def test_recent_k_makes_no_compaction_call(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            code, _, err = run_main(["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "1",
                                     "--regimes", "R0,R1,R2,K1,R3", *FAST])
            self.assertEqual(code, 0, err)
        raw = [json.loads(line) for line in (out / "raw" / "gemma3_4b_K1.jsonl").read_text().splitlines()]
        self.assertEqual([r["stage"] for r in raw], ["answer"] * 8)
        results = json.loads((out / "results.json").read_text())
        self.assertEqual({r["regime"] for r in results["compaction_stage"]}, {"R1", "R2", "R3"})
        self.assertIn("| K1* |", (out / "analysis.md").read_text())


class SystemAndEmptyStateTest(TempDirMixin, unittest.TestCase):
    """A regime's `system` and `empty_state` are sent by every study (issue 29): each study says what a call is
    about and one builder (pilot/prompts.py) writes its messages, so no study can drop them."""

    SYSTEM, EMPTY = "You keep the notes of a session.", "(no notes kept so far)"

    def sent(self, out: Path, regimes: list[str]) -> list[dict]:
        """Every record of these regimes' raw logs, each checked to carry the system message first."""
        records = [json.loads(line) for regime in regimes
                   for line in (out / "raw" / f"gemma3_4b_{regime}.jsonl").read_text().splitlines()]
        self.assertTrue(records)
        for record in records:
            with self.subTest(regime=record["regime"], call=record["kind"]):
                self.assertEqual(record["messages"][0], {"role": "system", "content": self.SYSTEM})
                self.assertEqual(record["messages"][-1]["role"], "user")
        return records

    def assert_empty_state_sent(self, records: list[dict]) -> None:
        first = [r for r in records if r["kind"] == "compact_1"]
        self.assertTrue(first)
        for record in first:
            self.assertIn(f"PREVIOUS STATE:\n{self.EMPTY}\n\nNEW SEGMENT:", record["messages"][-1]["content"])

    def test_every_study_that_takes_a_regime_file_sends_both(self):
        mine = regime_file(self.make_tmp(), [{"name": "MINE", "compaction_template": USER_TEMPLATE,
                                              "system": self.SYSTEM, "empty_state": self.EMPTY}])
        for study, ran in (("xr001", ["MINE"]), ("constraints", ["MINE", "MINE+UB"]), ("sessions", ["MINE"])):
            with self.subTest(study=study), FakeOllama(models=[MODEL]) as server:
                out = self.make_tmp() / study
                code, _, err = run_main(["run", "--study", study, "--regime-file", str(mine), "--regimes", "MINE",
                                         "--episodes", "1", "--models", MODEL, "--host", server.url, "--out",
                                         str(out), *FAST])
                self.assertEqual(code, 0, err)
                self.assert_empty_state_sent(self.sent(out, ran))

    def test_the_adversarial_study_sends_them_too(self):
        """Its design takes no regime file, so its own R2 and G2 are given both fields: the calls of its cascade,
        gated or not, and its probes carry them as every study's do."""
        study = records.study_named("adversarial")
        given = {name: dataclasses.replace(regime, system=self.SYSTEM, empty_state=self.EMPTY)
                 for name, regime in study.regimes.items()}
        out = self.make_tmp() / "adversarial"
        with mock.patch.dict(study.regimes, given), FakeOllama(models=[MODEL]) as server:
            code, _, err = run_main(["adversarial", "--episodes", "1", "--models", MODEL, "--host", server.url,
                                     "--out", str(out), *FAST])
        self.assertEqual(code, 0, err)
        self.assert_empty_state_sent(self.sent(out, ["R2", "G2"]))


class SweepAndSamplesTest(TempDirMixin, unittest.TestCase):
    DESIGN = ["--budgets", "128,256", "--samples", "2", "--temperature", "0.7", "--episodes", "2"]

    def run_design(self, server, out, *extra):
        return run_main(["--models", MODEL, "--host", server.url, "--out", str(out), *self.DESIGN, *FAST, *extra])

    def test_sweep_with_samples_survives_kill_9_and_resumes_identically(self):
        folder = self.make_tmp()
        with FakeOllama(models=[MODEL], behaviour={"prose_keep_last": 7}) as server:
            clean = folder / "clean"
            code, _, err = self.run_design(server, clean)
            self.assertEqual(code, 0, err)
            calls = server.chat_count()
            self.assertEqual(calls, 2 * 2 * 2 * (8 + 12 + 12))
            killed = folder / "killed"
            kill_at_call(self, server, 75, runner_command("run", "--models", MODEL, "--host", server.url, "--out",
                                                          str(killed), *self.DESIGN, *FAST))
            before = server.chat_count()
            code, _, err = self.run_design(server, killed)
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count() - before, calls - 74)
        clean_results = json.loads((clean / "results.json").read_text())
        self.assertEqual(json.loads((killed / "results.json").read_text())["probes"], clean_results["probes"])
        manifest = json.loads((killed / "manifest.json").read_text())
        self.assertEqual((manifest["budgets"], manifest["samples"], manifest["lock"]["temperature"]), ([128, 256], 2, 0.7))
        self.assertIn("gemma3:4b|R1|0|b128|s1", manifest["cells"])
        record = json.loads((killed / "raw" / "gemma3_4b_R1_b128_s1.jsonl").read_text().splitlines()[0])
        self.assertEqual((record["budget"], record["sample"], record["seed"]), (128, 1, records.CALL_SEED + 1))
        self.assertEqual(record["request"]["options"]["num_predict"], 128)
        self.assertIn("at most 60 words", record["messages"][0]["content"])
        self.assertEqual(record["request"]["options"]["temperature"], 0.7)
        analysis = (killed / "analysis.md").read_text()
        self.assertIn("## Budget sweep (exploratory)", analysis)
        self.assertIn("## Repeated samples (exploratory)", analysis)
        self.assertIn("temperature 0.7 is not the pre-registered 0", analysis)
        self.assertTrue((killed / "figures" / "fig_f_budget_sweep.svg").exists())
        self.assertEqual(run_main(["verify", "--out", str(killed)])[0], 0)
        code, out, _ = run_main(["plan", "--out", str(killed)])
        self.assertIn(f"total: {calls} calls ({calls} done)", out)

    def test_samples_at_one_budget_still_get_the_spread_figure(self):
        probes = [{"model": "m", "regime": r, "episode": e, "question_id": q, "type": "direct", "truth": 1,
                   "answer": 1, "class": "correct" if (e + q + s) % 3 else "other_wrong", "sample": s,
                   "budget": records.DEFAULT_BUDGET} for r in ("R0", "R1", "R2") for e in range(15) for q in range(1, 9)
                  for s in range(2)]
        for probe in probes:
            if probe["sample"] == 0:
                del probe["sample"], probe["budget"]
        results = {"models": ["m"], "regimes": ["R0", "R1", "R2"], "probes": probes, "samples": 2,
                   "budgets": [records.DEFAULT_BUDGET], "temperature": 0.7, "compaction_stage": [], "compaction_tokens": {}}
        analysis = xr001_analysis.analyze(results)
        self.assertIn("fig_f_budget_sweep.svg", xr001_figures.render_figures(results, analysis))
        self.assertIn("## Corruption over repeated samples (exploratory)", reports.render_analysis_md(analysis))
        self.assertIn('class="sample"', xr001_figures.render_figures(results, analysis)["fig_f_budget_sweep.svg"])

    def test_many_samples_are_summarised_not_listed(self):
        self.assertEqual(xr001_report.sample_rates_text([0.1, None, 0.25]), "10.0%, n/a, 25.0%".replace("n/a", reports.pct(None)))
        many = [i / 100 for i in range(20)] + [None]
        self.assertEqual(xr001_report.sample_rates_text(many),
                         "20 samples: lowest 0.0%, median 9.5%, highest 19.0%; 1 without probes")

    def test_another_temperature_on_resume_is_refused(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            self.assertEqual(run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out),
                                       "--episodes", "1", *FAST])[0], 0)
            code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out),
                                     "--episodes", "1", "--temperature", "0.5", *FAST])
        self.assertEqual(code, 2)
        self.assertIn("temperature (0", err)

    def test_shards_of_a_sweep_merge_into_the_unsharded_bank(self):
        folder = self.make_tmp()
        design = ["--budgets", "128,256", "--episodes", "1"]
        with FakeOllama(models=[MODEL]) as server:
            base = ["--models", MODEL, "--host", server.url, *design, *FAST]
            self.assertEqual(run_main([*base, "--out", str(folder / "whole")])[0], 0)
            for i in (1, 2):
                self.assertEqual(run_main(["run", *base, "--shard", f"{i}/2", "--out", str(folder / f"s{i}")])[0], 0)
        code, _, err = run_main(["merge", str(folder / "merged"), str(folder / "s1"), str(folder / "s2")])
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads((folder / "merged" / "results.json").read_text())["probes"],
                         json.loads((folder / "whole" / "results.json").read_text())["probes"])


if __name__ == "__main__":
    unittest.main()
