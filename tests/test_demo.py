"""The built-in demo: a SIMULATED pilot on the stand-in model, labelled on every output, never merged with a
real run, and showing the designed pattern (R0 and R2 at the ceiling, R1 worse)."""
import contextlib
import io
import json
import re
import shutil
import socket
import tempfile
import time
import unittest
from pathlib import Path
from unittest import mock

from fake_servers import FakeOllama
from helpers import FAST, REPO, TempDirMixin, answer_prompt, compaction_prompt, load_tasks, run_main
from pilot import bank, cli, commands, demo, figures_job, records, reports
from pilot.studies import episodes
from pilot.studies.xr001 import design as xr001, figures as xr001_figures, report as xr001_report

DEMO_CALLS = 2 * 8 + 2 * 2 * 12          # 2 episodes: R0 8 answers; R1 and R2 4 compactions + 8 answers each
FIGURES = [name for name, _ in xr001_figures.FIGURES]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class CountingModel:
    """Counts the stand-in's replies while patched in (the demo starts its own server inside main)."""

    def __init__(self):
        self.calls = 0
        self.original = episodes.SessionStandIn.reply

    def __enter__(self):
        counter = self

        def reply(model, prompt):
            counter.calls += 1
            return counter.original(model, prompt)

        self.patch = mock.patch.object(episodes.SessionStandIn, "reply", reply)
        self.patch.start()
        return self

    def __exit__(self, *exc):
        self.patch.stop()


def svg_stamps(svg: str) -> list[str]:
    return re.findall(r'<text class="nonconfirmatory"[^>]*>([^<]*)</text>', svg)


class DemoOutputsTest(TempDirMixin, unittest.TestCase):
    """One demo run, read by every test of the class."""

    @classmethod
    def setUpClass(cls):
        cls.root = Path(tempfile.mkdtemp(prefix="ccl-demo-"))
        cls.out = cls.root / "demo"
        started = time.monotonic()
        with CountingModel() as counter:
            cls.code, cls.stdout, cls.stderr = run_main(["demo", "--out", str(cls.out), "--quiet"])
        cls.seconds = time.monotonic() - started
        cls.calls = counter.calls

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, True)

    def test_exits_0_quickly_with_every_file_and_the_next_steps(self):
        self.assertEqual(self.code, 0, self.stderr)
        self.assertLess(self.seconds, 30)
        self.assertEqual(self.calls, DEMO_CALLS)
        for name in ("manifest.json", "results.json", "probes.csv", "analysis.md", "RESULTS.md", "report.html",
                     "raw/stand-in_simulated_R1.jsonl", *(f"figures/{name}" for name in FIGURES)):
            self.assertTrue((self.out / name).is_file(), name)
        self.assertIn(f"Open the report: {self.out / 'report.html'}", self.stdout)
        self.assertIn("python3 scripts/run_pilot.py --models gemma3:4b", self.stdout)
        self.assertIn("Ctrl-C", self.stderr)

    def test_stdout_says_simulated_first(self):
        lines = self.stdout.splitlines()
        self.assertTrue(lines[0].startswith("SIMULATED"), lines[0])
        headline = next(line for line in lines if "NON-CONFIRMATORY" in line)
        self.assertTrue(headline.startswith("SIMULATED"), headline)

    def test_the_closing_lines_are_plain_text_with_the_label_once_and_the_reports_path(self):
        """After the progress: no markdown (** or backticks, no pipe table), SIMULATED and the label said once, the
        answer's sentences, and the report's path."""
        closing = self.stdout.split("\n", 1)[1]             # after the demo's opening line
        for mark in ("**", "`", "|---"):
            self.assertNotIn(mark, closing)
        self.assertEqual(closing.count("SIMULATED"), 1, closing)
        self.assertEqual(closing.count("NON-CONFIRMATORY"), 1, closing)
        self.assertIn("- Prose summaries (R1) corrupted", closing)
        self.assertIn(f"Open the report: {self.out / 'report.html'}", closing)

    def test_analysis_md_says_simulated_first(self):
        lines = [line for line in (self.out / "analysis.md").read_text().splitlines() if line.strip()]
        self.assertTrue(lines[0].startswith("# SIMULATED"), lines[0])
        self.assertTrue(lines[1].startswith("**SIMULATED**"), lines[1])
        self.assertIn("not a language model", lines[1])

    def test_results_md_says_simulated_first(self):
        lines = [line for line in (self.out / "RESULTS.md").read_text().splitlines() if line.strip()]
        self.assertTrue(lines[0].startswith("# SIMULATED"), lines[0])
        banner = next(line for line in lines if "NON-CONFIRMATORY" in line)
        self.assertTrue(banner.startswith("**SIMULATED**"), banner)

    def test_report_title_and_label_block_say_simulated_first(self):
        report = (self.out / "report.html").read_text()
        self.assertRegex(report, r"<title>SIMULATED")
        label = re.search(r'<h1>[^<]*</h1>\n<div class="headline"><p class="label [^"]*">([^<]*)', report).group(1)
        self.assertEqual(label, "SIMULATED · NON-CONFIRMATORY")

    def test_every_figure_is_stamped_simulated_first(self):
        for name in FIGURES:
            with self.subTest(figure=name):
                stamps = svg_stamps((self.out / "figures" / name).read_text())
                self.assertTrue(stamps and stamps[0].startswith("SIMULATED"), stamps)

    def test_the_closing_lines_give_the_status_of_its_own_folder(self):
        self.assertIn("a 2-episode pilot of XR-001", self.stdout)
        status = f"python3 scripts/run_pilot.py status --out {self.out}"
        self.assertIn(status + "\n", self.stdout)
        code, stdout, err = run_main(status.split()[2:])
        self.assertEqual(code, 0, err)
        self.assertIn(f"run {self.out} (2 episodes", stdout)

    def test_analyze_makes_the_figures_of_a_study_that_has_them(self):
        with mock.patch.object(figures_job.subprocess, "Popen",
                               wraps=figures_job.subprocess.Popen) as started:
            code, _, err = run_main(["analyze", "--out", str(self.out)])
        self.assertEqual(code, 0, err)
        self.assertEqual([call.args[0][1] for call in started.call_args_list],
                         [str(figures_job.FIGURES_SCRIPT)])

    def test_manifest_and_results_record_the_simulated_backend(self):
        manifest = json.loads((self.out / "manifest.json").read_text())
        self.assertEqual(manifest["lock"]["backend"], "simulated")
        self.assertTrue(manifest["lock"]["models"][demo.STAND_IN_MODEL]["simulated"])
        results = json.loads((self.out / "results.json").read_text())
        self.assertIs(results["run"]["simulated"], True)
        self.assertEqual(results["run"]["backend"], "simulated")
        self.assertTrue(all(json.loads(line)["backend"] == "simulated"
                            for line in (self.out / "raw" / "stand-in_simulated_R2.jsonl").read_text().splitlines()))

    def test_the_designed_pattern_and_never_confirmatory(self):
        results = json.loads((self.out / "results.json").read_text())
        analysis = bank.analyze_bank(results)
        rates = {r: analysis["pooled"][r]["rate"] for r in ("R0", "R1", "R2")}
        self.assertLessEqual(rates["R0"], 0.1, rates)
        self.assertLessEqual(rates["R2"], 0.1, rates)
        self.assertGreater(rates["R1"], rates["R2"] + 0.2, rates)
        self.assertGreater(rates["R1"], rates["R0"] + 0.2, rates)
        self.assertTrue(analysis["budget_in_band"], analysis["budget"])
        self.assertEqual(analysis["label"], "NON-CONFIRMATORY")
        self.assertTrue(any(r.startswith("simulated") for r in analysis["label_reasons"]))

    def test_a_simulated_bank_is_never_confirmatory(self):
        # even a full-size bank: the simulated reason alone keeps it from CONFIRMATORY
        results = json.loads((self.out / "results.json").read_text())
        for note in (reports.confirmatory_note(bank.analyze_bank(results)), xr001_report.status_banner(bank.analyze_bank(results))):
            self.assertIn("SIMULATED", note.split(";")[0])
        self.assertTrue(records.is_simulated(results))
        del results["run"]
        self.assertFalse(records.is_simulated(results))

    def test_analyze_of_a_demo_bank_keeps_the_label(self):
        elsewhere = self.make_tmp() / "copy"
        code, stdout, err = run_main(["analyze", "--results", str(self.out / "results.json"),
                                      "--out", str(elsewhere)])
        self.assertEqual(code, 0, err)
        self.assertTrue(stdout.startswith("# SIMULATED"), stdout[:80])
        self.assertTrue((elsewhere / "analysis.md").read_text().startswith("# SIMULATED"))
        self.assertTrue((elsewhere / "RESULTS.md").read_text().startswith("# SIMULATED"))
        self.assertRegex((elsewhere / "report.html").read_text(), r'<p class="label [^"]*">SIMULATED')
        for name in FIGURES:
            self.assertTrue(svg_stamps((elsewhere / "figures" / name).read_text())[0].startswith("SIMULATED"))
        code, stdout, _ = run_main(["analyze", "--out", str(self.out)])
        self.assertEqual(code, 0)
        self.assertTrue(stdout.startswith("# SIMULATED"))


class DemoCommandTest(TempDirMixin, unittest.TestCase):
    def test_rerun_makes_no_calls_and_an_interrupted_demo_resumes(self):
        out = self.make_tmp() / "demo"
        self.assertEqual(run_main(["demo", "--out", str(out), "--quiet"])[0], 0)
        with CountingModel() as counter:
            code, stdout, err = run_main(["demo", "--out", str(out)])
        self.assertEqual((code, counter.calls), (0, 0), err)
        self.assertIn("no model calls needed", err)
        self.assertNotIn("Stop it with Ctrl-C", err)        # said only where there are calls to stop
        self.assertTrue(stdout.startswith("SIMULATED"))
        # as if stopped during the last call of one cell: the record and the cell's completion never written
        manifest_path, raw = out / "manifest.json", out / "raw" / "stand-in_simulated_R1.jsonl"
        manifest = json.loads(manifest_path.read_text())
        del manifest["cells"]["stand-in:simulated|R1|1"]
        manifest_path.write_text(json.dumps(manifest))
        raw.write_text("".join(raw.read_text().splitlines(keepends=True)[:-1]))
        code, stdout, _ = run_main(["status", "--out", str(out)])
        self.assertIn(f"finish them with: python3 scripts/run_pilot.py demo --out {out}", stdout)
        with CountingModel() as counter:
            code, _, err = run_main(["demo", "--out", str(out), "--quiet"])
        self.assertEqual((code, counter.calls), (0, 1), err)     # a new port, the same run: one call to finish
        self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)

    def test_study_choice_and_help(self):
        code, stdout, _ = run_main(["--help"])
        self.assertIn("demo", stdout)
        code, _, err = run_main(["demo", "--study", "xr002"])
        self.assertEqual(code, 2)
        self.assertIn("xr001", err)
        code, _, err = run_main(["demo", "--study", "xr001", "--out", str(self.make_tmp() / "d"), "--quiet"])
        self.assertEqual(code, 0, err)

    def test_the_constraints_study_has_a_demo_labelled_simulated_everywhere(self):
        out = self.make_tmp() / "sc"
        code, stdout, err = run_main(["demo", "--study", "constraints", "--out", str(out), "--quiet"])
        self.assertEqual(code, 0, err)
        self.assertTrue(stdout.startswith("SIMULATED"), stdout[:80])
        # the closing hint runs this study on a real model, not XR-001 (issue 20, point 16)
        self.assertIn("python3 scripts/run_pilot.py --study constraints --models gemma3:4b", stdout)
        self.assertTrue((out / "analysis.md").read_text().startswith("# SIMULATED"))
        self.assertIn("SIMULATED", (out / "RESULTS.md").read_text().splitlines()[0])
        self.assertIn('<p class="label label-warn">SIMULATED · NON-CONFIRMATORY</p>', (out / "report.html").read_text())
        self.assertIn("a 2-instance pilot of SC-001", stdout)
        self.assertIn(f"python3 scripts/run_pilot.py status --out {out}\n", stdout)
        for figure in (out / "figures").glob("*.svg"):
            with self.subTest(figure.name):
                stamp = re.search(r'class="nonconfirmatory"[^>]*>([^<]*)<', figure.read_text())
                self.assertTrue(stamp and stamp.group(1).startswith("SIMULATED"), figure.name)
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertEqual((manifest["study"], manifest["lock"]["backend"]), ("constraints", records.SIMULATED_BACKEND))
        analysis = bank.analyze_bank(json.loads((out / "results.json").read_text()))
        full = analysis["compliance"][demo.STAND_IN_MODEL]
        self.assertGreater(full["FULL+"]["rate"], full["R1"]["rate"])          # the designed loss shows

    def test_no_server_message_points_to_the_demo(self):
        url = f"http://127.0.0.1:{free_port()}"
        for argv in (["--host", url], ["--backend", "openai", "--base-url", url]):
            with self.subTest(argv=argv):
                code, _, err = run_main(["--models", "gemma3:4b", *argv, "--out", str(self.make_tmp() / "r")])
                self.assertEqual(code, 2)
                self.assertEqual(err.strip().splitlines()[-1].split(": ")[-1], "python3 scripts/run_pilot.py demo")
        for study in ("constraints", "sessions"):       # the demo of the study being run
            with self.subTest(study=study):
                code, _, err = run_main(["--study", study, "--models", "gemma3:4b", "--host", url,
                                         "--out", str(self.make_tmp() / "r")])
                self.assertEqual(code, 2)
                self.assertTrue(err.strip().endswith(f"python3 scripts/run_pilot.py demo --study {study}"), err)


class SessionsDemoTest(TempDirMixin, unittest.TestCase):
    """The sessions study's demo: what it says it ran, the files it wrote, and where to go next."""

    @classmethod
    def setUpClass(cls):
        cls.root = Path(tempfile.mkdtemp(prefix="ccl-demo-sessions-"))
        cls.out = cls.root / "sessions"
        with mock.patch.object(figures_job.subprocess, "Popen",
                               wraps=figures_job.subprocess.Popen) as started:
            cls.code, cls.stdout, cls.stderr = run_main(["demo", "--study", "sessions", "--out", str(cls.out), "--quiet"])
        cls.started = started.call_args_list

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, True)

    def test_it_says_sessions_and_lists_every_file_it_wrote(self):
        self.assertEqual(self.code, 0, self.stderr)
        listed = re.search(r"files in [^\n]*:\n((?:  .*\n)+)", self.stdout).group(1).split()
        for name in ("report.html", "lost.csv", "analysis.md"):        # the study's own files (write_outputs) too
            self.assertIn(str(self.out / name), listed)
        on_disk = sorted(str(self.out / p.name) for p in self.out.iterdir()
                         if not p.name.startswith(".") and p.name != "figures")
        on_disk += [str(p) for p in sorted((self.out / "figures").iterdir())]
        self.assertEqual(sorted(listed), sorted(on_disk))
        self.assertIn("a 6-session pilot of XR-S1", self.stdout)

    def test_the_next_commands_are_its_status_and_a_run_on_your_own_sessions(self):
        status = f"python3 scripts/run_pilot.py status --out {self.out}"
        self.assertIn(status + "\n", self.stdout)
        code, stdout, err = run_main(status.split()[2:])
        self.assertEqual(code, 0, err)
        self.assertIn("(6 sessions, backend simulated)", stdout)        # the study's own noun, not "episodes"
        self.assertIn("python3 scripts/run_pilot.py --study sessions --models gemma3:4b --sessions PATH", self.stdout)
        self.assertIn("on your own sessions", self.stdout)
        # what PATH is, and where the formats are described (the hint once led nowhere)
        self.assertIn("(PATH: a file or a folder of them, like the examples in tasks/sessions/logs; the formats "
                      "read, and how to export yours: tasks/sessions/README.md)", self.stdout)
        self.assertTrue((REPO / "tasks" / "sessions" / "README.md").is_file())

    def test_its_report_is_made_through_its_study_record_with_its_headline_figure(self):
        """The sessions study draws one figure (its values kept, reformatted, changed or dropped per regime); its
        report.html is its own (Study.report.report_html), opening with the label box, the answer and that figure,
        and its RESULTS.md the shared one, written by the figures script as every study's are, and again by
        analyze."""
        self.assertEqual(len(self.started), 1)
        self.assertEqual([p.name for p in (self.out / "figures").iterdir()], ["fig_s_values.svg"])
        report = (self.out / "report.html").read_text()
        self.assertIn("<h1>SIMULATED (stand-in model, not a result): XR-S1", report)
        self.assertIn('<p class="label label-warn">SIMULATED · EXPLORATORY</p>', report)
        self.assertLess(report.index('class="headline-figure"'), report.index("<table"))
        self.assertTrue((self.out / "RESULTS.md").read_text().startswith("# SIMULATED Results: XR-S1"))
        elsewhere = self.make_tmp() / "elsewhere"
        code, _, err = run_main(["analyze", "--results", str(self.out / "results.json"), "--out", str(elsewhere)])
        self.assertEqual(code, 0, err)
        self.assertEqual(sorted(p.name for p in elsewhere.iterdir()), [".pilot-outputs.json", "RESULTS.md",
                                                                      "analysis.md", "figures",
                                                                       "report.html"])
        self.assertEqual((elsewhere / "report.html").read_text(), report)


class FolderCommandTest(unittest.TestCase):
    def test_out_only_where_the_command_would_look_elsewhere_and_study_only_where_it_takes_it(self):
        xr001_study, constraints = records.study_named("xr001"), records.study_named("constraints")
        root = records.RESULTS_ROOT
        cases = [("status", root / "demo", xr001_study, "status --out results/demo"),
                 ("status", root / "xr001", xr001_study, "status"),
                 ("status", root / "demo-constraints", constraints, "status --out results/demo-constraints"),
                 ("status", root / "constraints", constraints, "status --study constraints"),
                 ("verify", root / "constraints-e5", constraints, "verify --out results/constraints-e5"),
                 ("plan", root / "constraints", constraints, "plan --study constraints"),
                 ("plan", root / "demo-constraints", constraints, "plan --study constraints --out "
                                                                   "results/demo-constraints")]
        for command, folder, study, expected in cases:
            with self.subTest(command=command, folder=folder.name):
                self.assertEqual(cli.folder_command(command, folder, study), f"python3 scripts/run_pilot.py {expected}")


class DemoMergeTest(TempDirMixin, unittest.TestCase):
    def simulated_run(self, server, out: Path, shard: str) -> None:
        """A `run` on the stand-in (what `demo` does), as a shard: the simulated backend is never a CLI choice."""
        args = cli.build_parser("run").parse_args(["--models", demo.STAND_IN_MODEL, "--episodes", "1", "--host",
                                                  server.url, "--shard", shard, "--out", str(out), *FAST])
        args.backend, args.argv = records.SIMULATED_BACKEND, ["run"]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(commands.command_run(args), 0)

    def test_merge_refuses_a_simulated_folder_with_a_real_one(self):
        tmp = self.make_tmp()
        demo, real = tmp / "demo", tmp / "real"
        self.assertEqual(run_main(["demo", "--out", str(demo), "--quiet"])[0], 0)
        with FakeOllama(models=["gemma3:4b"]) as server:
            code, _, err = run_main(["run", "--models", "gemma3:4b", "--host", server.url, "--episodes", "1",
                                     "--out", str(real), *FAST])
        self.assertEqual(code, 0, err)
        for order in ((demo, real), (real, demo)):
            with self.subTest(order=[p.name for p in order]):
                merged = tmp / f"merged-{order[0].name}"
                code, _, err = run_main(["merge", str(merged), *map(str, order)])
                self.assertEqual(code, 2)
                lines = err.strip().splitlines()
                self.assertEqual(len(lines), 1, err)
                self.assertIn("SIMULATED", lines[0])
                self.assertIn(str(demo), lines[0])
                self.assertIn(str(real), lines[0])
                self.assertFalse(merged.exists())

    def test_simulated_shards_merge_and_stay_simulated(self):
        tmp = self.make_tmp()
        with demo.StandInServer(episodes.SessionStandIn()) as server:
            self.simulated_run(server, tmp / "s1", "1/2")
            self.simulated_run(server, tmp / "s2", "2/2")
        with contextlib.redirect_stdout(io.StringIO()):
            code = cli.main(["merge", str(tmp / "merged"), str(tmp / "s1"), str(tmp / "s2")])
        self.assertEqual(code, 0)
        results = json.loads((tmp / "merged" / "results.json").read_text())
        self.assertTrue(results["run"]["simulated"])
        self.assertTrue((tmp / "merged" / "analysis.md").read_text().startswith("# SIMULATED"))


class StandInModelTest(unittest.TestCase):
    def test_reads_every_fact_sentence_of_the_generator(self):
        for template in episodes.VALUE_SENTENCES:
            with self.subTest(template=template):
                self.assertEqual(episodes.stand_in_facts(template.format(name="TOPOVO", value=645))[0], {"TOPOVO": 645})
        for template in episodes.NEIGHBOR_SENTENCES:
            with self.subTest(template=template):
                values, _, relations = episodes.stand_in_facts(template.format(name="GIBEZA", base="TOPOVO", value=646))
                self.assertEqual((values, relations), ({"GIBEZA": 646}, [("GIBEZA", "TOPOVO")]))
        for template in episodes.COMBINED_SENTENCES:
            with self.subTest(template=template):
                self.assertEqual(episodes.stand_in_facts(template.format(a="TOPOVO", b="NEKOMU", value=1083))[1],
                                 {("TOPOVO", "NEKOMU"): 1083})

    def test_prose_forgets_about_the_documented_share_and_typed_keeps_all(self):
        names = [e["name"] for ep in load_tasks()["episodes"] for seg in ep["segments"]
                 for e in episodes.segment_entities(seg)]
        share = sum(episodes.stand_in_forgets(n) for n in names) / len(names)
        self.assertAlmostEqual(share, demo.STAND_IN_PROSE_FORGETS, delta=0.08)
        self.assertEqual([episodes.stand_in_forgets(n) for n in names], [episodes.stand_in_forgets(n) for n in names])
        episode = load_tasks()["episodes"][0]
        model, state = episodes.SessionStandIn(), {}
        for regime in ("R1", "R2"):
            state[regime] = ""
            for segment in episode["segments"]:
                state[regime] = model.reply(compaction_prompt(xr001.REGIMES[regime], state[regime], segment["text"]))
        truth = {e["name"]: e["value"] for seg in episode["segments"] for e in episodes.segment_entities(seg)}
        self.assertEqual(episodes.stand_in_facts(state["R2"])[0], truth)
        kept = episodes.stand_in_facts(state["R1"])[0]
        self.assertEqual(kept, {n: v for n, v in truth.items() if not episodes.stand_in_forgets(n)})

    def test_answers_from_the_prompt(self):
        episode = load_tasks()["episodes"][0]
        for question in episode["questions"]:
            with self.subTest(question=question["id"]):
                prompt = answer_prompt(xr001.REGIMES["R0"], episode, question)
                self.assertEqual(bank.parse_answer(episodes.SessionStandIn().reply(prompt)), question["truth"])


if __name__ == "__main__":
    unittest.main()
