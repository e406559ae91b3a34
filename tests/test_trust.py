"""Verdicts you can trust (protocol sections 2, 4, 5, 7): faithful episodes and prompts, the paper's parsing
and retention rules, labels computed from the probes, the ceiling check, scoring that checks its inputs, and
external task sets."""
import json
import re
import unittest

from fake_servers import FakeOllama
from helpers import FAST, TempDirMixin, answer_prompt, compaction_prompt, load_tasks, reference_results, run_main
from pilot import bank, cli, inputs, launch, pages, records, reports
from pilot.studies import episodes
from pilot.rules import states
from pilot.studies.xr001 import design as xr001, analysis as xr001_analysis

MODEL = "gemma3:4b"


def sentences(text: str) -> list[str]:
    return re.split(r"(?<=[.!?])\s+", text)


class EpisodeRelationTest(unittest.TestCase):
    def test_every_neighbor_sentence_names_its_base_and_the_relation(self):
        for seed in range(300):
            episode = episodes.generate_episode(0, base_seed=seed)
            for segment in episode["segments"]:
                with self.subTest(seed=seed, segment=segment["index"]):
                    base, neighbor = segment["entities"]["base"], segment["entities"]["neighbor"]
                    stated = [s for s in sentences(segment["text"]) if neighbor["name"] in s]
                    self.assertEqual(len(stated), 1)
                    self.assertIn(base["name"], stated[0])
                    self.assertRegex(stated[0], r"\bone (above|more than)\b")
                    self.assertIn(str(neighbor["value"]), stated[0])

    def test_committed_tasks_pass_the_design_checks(self):
        self.assertEqual(xr001.check_task_design(load_tasks()), [])


class PromptSymmetryTest(unittest.TestCase):
    def test_only_the_format_paragraph_differs(self):
        prose = compaction_prompt(xr001.REGIMES["R1"], "STATE", "SEGMENT").split("\n\n")
        typed = compaction_prompt(xr001.REGIMES["R2"], "STATE", "SEGMENT").split("\n\n")
        self.assertEqual(len(prose), len(typed))
        differing = [i for i, (a, b) in enumerate(zip(prose, typed)) if a != b]
        self.assertEqual(len(differing), 1)
        self.assertTrue(prose[differing[0]].startswith("Format:") and typed[differing[0]].startswith("Format:"))
        shared = "\n\n".join(p for i, p in enumerate(prose) if i not in differing)
        self.assertIn("Keep every named quantity with its exact value.", shared)
        self.assertIn(f"at most {records.MAX_STATE_WORDS} words", shared)
        # the keep-everything instruction lives only in the shared text, never in one format
        for paragraph in (prose[differing[0]], typed[differing[0]]):
            self.assertNotRegex(paragraph.lower(), r"every|each named|one line per")

    def test_answer_prompts_ask_for_the_integer_alone(self):
        episode = episodes.generate_episode(0)
        for regime in ("R0", "R1"):
            text = answer_prompt(xr001.REGIMES[regime], episode, episode["questions"][0], "CONTEXT")
            with self.subTest(regime=regime):
                self.assertIn("ANSWER: <integer>", text)
                self.assertIn("no working", text)
                self.assertNotIn("reason", text.lower())


class ParsingRulesTest(unittest.TestCase):
    PRIMARY = [
        ("upper case", "ANSWER: 412", 412),
        ("other letter case is an answer", "Answer: 412", 412),
        ("lower case", "answer:412", 412),
        ("commas tolerated", "ANSWER: 1,237", 1237),
        ("markdown emphasis is an omission", "ANSWER: **412**", None),
        ("bold label is an omission", "**ANSWER:** 412", None),
        ("last ANSWER followed by an integer", "ANSWER: 12\nANSWER: **13**", 12),
        ("bare number", "412", None),
        ("the integer on the next line, as the reference reads it", "ANSWER:\n412", 412),
        ("any whitespace after the colon", "ANSWER: \t\r\n 412", 412),
        ("a space before the colon is an omission, as in the reference", "ANSWER : 412", None),
    ]

    def test_primary_parse(self):
        for label, reply, expected in self.PRIMARY:
            with self.subTest(label):
                self.assertEqual(bank.parse_answer(reply), expected)

    def test_lenient_parse_is_a_labelled_diagnostic(self):
        self.assertEqual(bank.parse_answer_lenient("ANSWER: **412**"), 412)
        self.assertEqual(bank.parse_answer_lenient("**ANSWER:** 412"), 412)
        probe = bank.score_probe({"response": "ANSWER: **412**"}, {"id": 1, "type": "direct", "truth": 412}, [])
        self.assertEqual((probe["class"], probe["lenient_answer"], probe["lenient_class"]),
                         ("omission", 412, "correct"))

    def test_r2_retention_reads_exact_lines_only(self):
        episode = episodes.generate_episode(0)
        truths = {e["name"]: e["value"] for s in episode["segments"] for e in episodes.segment_entities(s)}
        names = list(truths)
        state = "\n".join(["values:", f"{names[0]} = {truths[names[0]]}", f"- {names[1]} = {truths[names[1]]}",
                           f"{names[2]}: {truths[names[2]]}", f"{names[3]} = {truths[names[3]]} (checked)",
                           f"  {names[4]}={truths[names[4]]}  "])
        scored = xr001_analysis.score_retention(xr001.REGIMES["R2"], state, episode)
        self.assertEqual((scored["retained"], scored["correct"]), (2, 2))
        self.assertEqual((scored["loose_retained"], scored["loose_correct"]), (5, 5))

    def test_r1_retention_name_anywhere_number_nearest_first_occurrence(self):
        episode = episodes.generate_episode(0)
        truths = {e["name"]: e["value"] for s in episode["segments"] for e in episodes.segment_entities(s)}
        a, b, c = list(truths)[:3]
        state = (f"The figure for {a} is {truths[a]}. Later the notes call {a} about {truths[a] + 50}. "
                 f"{b.lower()} was mentioned. {c}")
        found = states.read_prose_state(state, [a, b, c])
        self.assertEqual(found[a], truths[a])           # nearest to the first occurrence, not the later one
        self.assertIn(b, found)                         # retained although no number sits in its sentence
        self.assertEqual(found[c], truths[a] + 50)      # the nearest number anywhere in the state
        scored = xr001_analysis.score_retention(xr001.REGIMES["R1"], state, episode)
        self.assertEqual((scored["retained"], scored["correct"]), (3, 1))

    def test_p3_reads_correct_values_and_is_exploratory(self):
        results = reference_results(load_tasks())
        for row in results["compaction_stage"]:
            if row["regime"] == "R2":                   # every name kept, every value wrong
                row.update(retained=20, correct=0, wrong=20)
        verdicts = {v["id"]: v for v in xr001_analysis.evaluate_predictions(bank.analyze_bank(results))}
        self.assertEqual(verdicts["P3"]["verdict"], "not confirmed")
        self.assertTrue(verdicts["P3"]["claim"].startswith("exploratory"))


def analyse(results: dict, *extra: str, folder=None) -> tuple[int, str, str]:
    path = folder / "results.json"
    path.write_text(json.dumps(results))
    return run_main(["analyze", "--results", str(path), *extra])


class ComputedLabelTest(TempDirMixin, unittest.TestCase):
    def test_published_bank_is_confirmatory(self):
        analysis = bank.analyze_bank(reference_results(load_tasks()))
        self.assertEqual((analysis["label"], analysis["label_reasons"]), ("CONFIRMATORY", []))

    def test_three_episode_reference_bank_is_not_confirmatory(self):
        results = reference_results(load_tasks())
        results["probes"] = [p for p in results["probes"] if p["episode"] < 3]     # `cells` still says 135/135
        code, out, err = analyse(results, folder=self.make_tmp())
        self.assertEqual(code, 0, err)
        self.assertIn("**NON-CONFIRMATORY**", out)
        self.assertIn("smoke run: 3 of the 15 pre-registered episodes", out)
        self.assertIn("disagrees with its probes", out)
        self.assertNotIn("\nCONFIRMATORY", out)

    def test_each_shortfall_is_named(self):
        cases = {
            "not complete claimed": (lambda r: r["cells"].update(not_complete=1), "disagrees with its probes"),
            "extra episodes": (lambda r: r["probes"].append({**r["probes"][0], "episode": 15}),
                               "outside the pre-registered"),
            "duplicated probe": (lambda r: r["probes"].append(dict(r["probes"][5])), "duplicated probe"),
            "other task file": (lambda r: r["probes"][0].update(truth=r["probes"][0]["truth"] + 3),
                                "differs from the task set"),
        }
        for label, (change, reason) in cases.items():
            with self.subTest(label):
                results = reference_results(load_tasks())
                change(results)
                analysis = bank.analyze_bank(results)
                self.assertEqual(analysis["label"], "NON-CONFIRMATORY")
                self.assertTrue(any(reason in r for r in analysis["label_reasons"]), analysis["label_reasons"])

    def test_generated_task_set_that_is_not_pinned(self):
        folder = self.make_tmp()
        other = folder / "tasks16.json"
        self.assertEqual(run_main(["generate", "--tasks", str(other), "--episodes", "16"])[0], 0)
        results = reference_results(load_tasks())
        analysis = bank.analyze_bank(results, other)
        self.assertEqual(analysis["label"], "NON-CONFIRMATORY")
        self.assertTrue(any("not the pre-registered one" in r for r in analysis["label_reasons"]))


    def test_a_generated_task_set_is_known_in_any_layout_but_not_with_other_values(self):
        folder = self.make_tmp()
        generated = xr001.generate_tasks(16)
        relaid = folder / "relaid.json"
        relaid.write_text(json.dumps(generated))                            # one line, not the indented form
        self.assertEqual(inputs.load_task_set(relaid)["kind"], "generated")
        for label, edit in (("a value written as a float", lambda t: t["episodes"][3]["questions"][0].update(
                                 truth=float(t["episodes"][3]["questions"][0]["truth"]))),
                            ("a sentence changed", lambda t: t["episodes"][15]["segments"][0].update(
                                 text=t["episodes"][15]["segments"][0]["text"] + " "))):
            with self.subTest(label):
                tasks = json.loads(json.dumps(generated))
                edit(tasks)
                self.assertFalse(xr001.is_generator_output(tasks))

def uninformative(results: dict, models: list[str]) -> dict:
    """Make the R0 probes of these models fail (omissions), past the ceiling bound."""
    for probe in results["probes"]:
        if probe["model"] in models and probe["regime"] == "R0":
            probe.update(answer=None, **{"class": "omission"})
    return results


class CeilingCheckTest(TempDirMixin, unittest.TestCase):
    def test_no_model_passes_withholds_the_verdict_everywhere(self):
        results = uninformative(reference_results(load_tasks()), ["gemma3:4b", "qwen3:14b", "qwen3-coder:30b"])
        analysis = bank.analyze_bank(results)
        self.assertEqual(analysis["label"], "UNINFORMATIVE")
        verdicts = xr001_analysis.evaluate_predictions(analysis)
        self.assertEqual({v["verdict"] for v in verdicts}, {"withheld"})
        out = self.make_tmp()
        pages.regenerate(results, out)
        wording = "UNINFORMATIVE: no model passed the ceiling check"
        self.assertIn(wording, reports.render_analysis_md(analysis))
        for name in ("RESULTS.md", "figures/fig_a_corruption.svg", "figures/fig_e_retention.svg"):
            with self.subTest(name):
                self.assertIn(wording, (out / name).read_text())
        page = " ".join(re.sub(r"<[^>]+>", " ", (out / "report.html").read_text()).split())
        self.assertIn("UNINFORMATIVE No model passed the ceiling check", page)    # its label box: the label, then why
        self.assertNotIn("not rejected", (out / "RESULTS.md").read_text())

    def test_one_failing_model_is_named_and_left_out_of_the_pooled_test(self):
        results = uninformative(reference_results(load_tasks()), ["qwen3:14b"])
        analysis = bank.analyze_bank(results)
        self.assertEqual(analysis["label"], "CONFIRMATORY")
        self.assertEqual(analysis["informative_models"], ["gemma3:4b", "qwen3-coder:30b"])
        self.assertEqual((analysis["mcnemar"]["pooled"]["b"], analysis["mcnemar"]["pooled"]["c"]), (8, 67))
        text = reports.render_analysis_md(analysis)
        self.assertIn("| qwen3:14b | 100.0% | fails: uninformative |", text)
        self.assertIn("qwen3:14b (uninformative, not pooled)", text)
        self.assertIn("left out (failed the ceiling check): qwen3:14b", text)

    def test_omission_share_and_budget_band_are_reported(self):
        results = reference_results(load_tasks())
        results["compaction_tokens"]["R1"]["mean"] = 120.0
        for entry in results["compaction_tokens"]["R1"]["by_model"].values():
            entry["mean"] = 120.0
        text = reports.render_analysis_md(bank.analyze_bank(results))
        self.assertIn("| qwen3:14b | 0/120 = 0.0% | 30/120 = 25.0% | 5/120 = 4.2% |", text)
        self.assertIn("qwen3:14b 0.542 (OUTSIDE) (pooled over every model: 0.542); outside the pinned band [0.8, 1.25], "
                      "so the budgets were not matched", text)

    def test_a_run_whose_model_never_answers_is_uninformative(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL], behaviour={"answer_style": "plain"}) as server:
            code, stdout, err = run_main(["--models", MODEL, "--host", server.url, "--out", str(out), *FAST])
        self.assertEqual(code, 0, err)
        self.assertIn("UNINFORMATIVE: no model passed the ceiling check", stdout)
        analysis = (out / "analysis.md").read_text()
        self.assertIn("**F** (falsifier", analysis)
        self.assertIn("**withheld**", analysis)


class ScoringChecksInputsTest(TempDirMixin, unittest.TestCase):
    def run_pilot(self, server, out, *extra):
        return run_main(["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "2", *FAST, *extra])

    def test_an_edited_raw_record_stops_score_and_the_pilot(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            self.assertEqual(self.run_pilot(server, out)[0], 0)
            raw = out / "raw" / "gemma3_4b_R2.jsonl"
            lines = raw.read_text().splitlines(keepends=True)
            record = json.loads(lines[10])
            record["response"] = "ANSWER: 1"
            lines[10] = json.dumps(record) + "\n"
            raw.write_text("".join(lines))
            before = (out / "results.json").read_text()
            code, _, err = run_main(["score", "--out", str(out)])
            self.assertEqual(code, 1)
            self.assertIn("cell gemma3:4b|R2|0 was altered after it completed", err)
            self.assertIn("verify --out", err)
            code, _, err = self.run_pilot(server, out)
            self.assertEqual(code, 1)
            self.assertIn("gemma3:4b|R2|0", err)
        self.assertEqual((out / "results.json").read_text(), before)

    def test_a_garbage_line_mid_log_is_quarantined_and_the_cell_rerun_from_the_last_good_call(self):
        clean, damaged = self.make_tmp() / "clean", self.make_tmp() / "damaged"
        with FakeOllama(models=[MODEL]) as server:
            self.assertEqual(self.run_pilot(server, clean)[0], 0)
            self.assertEqual(self.run_pilot(server, damaged)[0], 0)
            raw = damaged / "raw" / "gemma3_4b_R1.jsonl"
            lines = raw.read_text().splitlines(keepends=True)
            self.assertEqual(json.loads(lines[1])["kind"], "compact_2")
            lines[1] = "#### not a record ####\n"                       # compact_2 of episode 0 is lost
            raw.write_text("".join(lines))
            code, _, err = run_main(["score", "--out", str(damaged)])
            self.assertEqual(code, 1)
            self.assertIn("lacks compact_2", err)
            before = server.chat_count()
            code, _, err = self.run_pilot(server, damaged)
            self.assertEqual(code, 0, err)
            self.assertIn("torn or unreadable line(s) (line 2)", err)
            self.assertIn("gemma3:4b|R1|0 lost compact_2", err)
            self.assertEqual(server.chat_count() - before, 3 + 8)           # compact_2..4 and the 8 answers
        quarantine = (raw.parent / (raw.name + ".quarantine")).read_text()
        self.assertIn("#### not a record ####", quarantine)
        self.assertEqual(len(quarantine.splitlines()), 1 + 2 + 8)
        self.assertEqual(run_main(["verify", "--out", str(damaged)])[0], 0)
        strip = lambda p: {k: v for k, v in json.loads(p.read_text()).items() if k not in ("task_set", "tasks")}
        self.assertEqual(json.loads((damaged / "results.json").read_text())["probes"],
                         json.loads((clean / "results.json").read_text())["probes"])
        self.assertEqual(strip(damaged / "results.json")["compaction_stage"],
                         strip(clean / "results.json")["compaction_stage"])


class UncheckedRecordsTest(TempDirMixin, unittest.TestCase):
    """Raw records whose hashes cannot be checked against a manifest are never scored (issue 20, 12)."""

    def finished_run(self, server):
        out = self.make_tmp() / "run"
        code, _, err = run_main(["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "1", *FAST])
        self.assertEqual(code, 0, err)
        return out

    def test_a_deleted_manifest_and_an_edited_answer_are_refused_not_adopted(self):
        with FakeOllama(models=[MODEL]) as server:
            out = self.finished_run(server)
            (out / "manifest.json").unlink()
            raw = out / "raw" / "gemma3_4b_R2.jsonl"
            lines = raw.read_text().splitlines(keepends=True)
            record = json.loads(lines[-1])
            record["response"] = "ANSWER: 1"
            lines[-1] = json.dumps(record) + "\n"
            raw.write_text("".join(lines))
            logs = {p.name: p.read_bytes() for p in (out / "raw").iterdir()}
            before = server.chat_count()
            for argv in (["run", "--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "1", *FAST],
                         ["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "1", *FAST]):
                with self.subTest(argv[0]):
                    code, _, err = run_main(argv)
                    self.assertEqual(code, 2, err)
                    self.assertEqual(len(err.strip().splitlines()), 1, err)
                    self.assertIn("has no manifest.json, but its raw logs hold 32 journalled call(s)", err)
            self.assertEqual(server.chat_count(), before)           # no server asked, no call adopted
        self.assertFalse((out / "manifest.json").exists())
        self.assertEqual({p.name: p.read_bytes() for p in (out / "raw").iterdir()}, logs)
        code, stdout, _ = run_main(["verify", "--out", str(out)])
        self.assertEqual(code, 1)
        self.assertIn("no manifest.json, so none of the 32 journalled call(s)", stdout)
        self.assertNotIn("ok", stdout)
        code, _, err = run_main(["score", "--out", str(out)])
        self.assertEqual(code, 2)
        self.assertIn("no manifest.json", err)

    def test_a_complete_cell_without_a_recorded_hash_is_not_scored_and_verify_says_so(self):
        with FakeOllama(models=[MODEL]) as server:
            out = self.finished_run(server)
        manifest = json.loads((out / "manifest.json").read_text())
        del manifest["cells"][f"{MODEL}|R1|0"]["records_sha256"]
        (out / "manifest.json").write_text(json.dumps(manifest))
        code, _, err = run_main(["score", "--out", str(out)])
        self.assertEqual(code, 1)
        self.assertIn("cell gemma3:4b|R1|0 is marked COMPLETE, but the manifest records no sha256 of its records", err)
        code, stdout, _ = run_main(["verify", "--out", str(out)])
        self.assertEqual(code, 1)
        self.assertIn("gemma3:4b|R1|0: COMPLETE, but the manifest records no sha256 of its records, so they could not "
                      "be checked", stdout)

    def test_verify_names_the_calls_no_hash_covers_yet(self):
        with FakeOllama(models=[MODEL]) as server:
            out = self.finished_run(server)
        manifest = json.loads((out / "manifest.json").read_text())
        manifest["cells"][f"{MODEL}|R2|0"].update(status="FAILED", reason="cut short")
        del manifest["cells"][f"{MODEL}|R2|0"]["records_sha256"]
        (out / "manifest.json").write_text(json.dumps(manifest))
        code, stdout, _ = run_main(["verify", "--out", str(out)])
        self.assertEqual(code, 0, stdout)
        self.assertIn("verify: ok, 2 complete cells", stdout)
        self.assertIn("12 journalled call(s) of unfinished cells have no hash yet and were not checked", stdout)


def external_tasks(n_episodes: int = 2) -> dict:
    """The pinned episodes retold in other words: a task file this generator did not make."""
    tasks = json.loads(json.dumps(load_tasks()))
    tasks["generator_version"] = "someone-else-1"
    tasks["episodes"] = tasks["episodes"][:n_episodes]
    tasks["n_episodes"] = n_episodes
    for episode in tasks["episodes"]:
        for segment in episode["segments"]:
            segment["text"] = segment["text"].replace("The ledger lists", "The register shows")
            segment["text"] = segment["text"].replace("Coffee arrived", "Tea arrived")
    return tasks


class ExternalTaskSetTest(TempDirMixin, unittest.TestCase):
    def test_external_task_file_runs_end_to_end(self):
        folder = self.make_tmp()
        path = folder / "published_tasks.json"
        path.write_text(json.dumps(external_tasks(), indent=1))
        task_set = inputs.load_task_set(path)
        self.assertEqual(task_set["kind"], "external")
        out = folder / "run"
        with FakeOllama(models=[MODEL]) as server:
            code, stdout, err = run_main(["--models", MODEL, "--host", server.url, "--tasks", str(path),
                                          "--out", str(out), *FAST])
        self.assertEqual(code, 0, err)
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertEqual(manifest["task_set"]["kind"], "external")
        self.assertEqual(manifest["lock"]["tasks_sha256"], task_set["sha256"])
        analysis = (out / "analysis.md").read_text()
        self.assertIn(f"Task set: external task set, sha256 {task_set['sha256']}", analysis)
        self.assertIn(f"external task set, sha256 {task_set['sha256']}", (out / "report.html").read_text())
        self.assertIn("NON-CONFIRMATORY", analysis)                         # two episodes, not fifteen

    def test_external_run_gets_its_own_default_folder(self):
        folder = self.make_tmp()
        path = folder / "t.json"
        path.write_text(json.dumps(external_tasks()))
        args = cli.build_parser("pilot").parse_args(["--tasks", str(path)])
        self.assertEqual(launch.resolve_run_dir(args).name, f"xr001-tasks-{records.file_sha256(path)[:12]}")

    def test_failed_design_checks_are_named_one_per_line(self):
        tasks = external_tasks()
        segment = tasks["episodes"][0]["segments"][1]
        segment["entities"]["neighbor"]["value"] += 5
        tasks["episodes"][1]["questions"][2]["truth"] = 1
        tasks["episodes"][1]["segments"][0]["text"] += " It rained 3 days."
        path = self.make_tmp() / "bad.json"
        path.write_text(json.dumps(tasks))
        code, _, err = run_main(["plan", "--models", MODEL, "--tasks", str(path)])
        self.assertEqual(code, 2)
        lines = err.splitlines()
        self.assertIn("fails", lines[0])
        self.assertTrue(any("episode 0: segment 2: neighbor" in line for line in lines), err)
        self.assertTrue(any("episode 1: question 3: `truth`" in line for line in lines), err)
        self.assertTrue(any("episode 1: segment 1: numbers outside the facts" in line for line in lines), err)
        self.assertNotIn("Traceback", err)

    def test_missing_file_outside_the_repository_never_suggests_git(self):
        code, _, err = run_main(["plan", "--models", MODEL, "--tasks", "/nonexistent/tasks.json"])
        self.assertEqual(code, 2)
        self.assertNotIn("git", err)


if __name__ == "__main__":
    unittest.main()
