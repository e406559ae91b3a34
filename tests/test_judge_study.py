"""The judge in the sessions study (issue 44, point 1; protocol/SESSIONS.md, the amendment of 2026-12-06 (18)):
`score --judge MODEL RUN_DIR` on a run of the needed items' fixture (tests/fixtures/sessions_needed/), the judge a
model on the in-process fake server. Its statuses reach results.json, the analysis and the report with the rules'
beside them; a reply it cannot read leaves the rules' status, counted; a judge that stops answering ends in one
line with its calls kept; a judging killed with SIGKILL is resumed by the same command, which sends only the calls
not yet made; with no --judge nothing is sent and every output is what main's code wrote.

    python3 tests/test_judge_study.py --write     # print the outputs' hashes with no --judge (only where a
                                                  # change of the unjudged path is meant)
"""
import hashlib
import html
import json
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

from fake_servers import FakeOllama
from helpers import FAST, REPO, TempDirMixin, kill_at_call, run_main
from pilot import cli, launch
from pilot.studies.sessions import analysis as ss_an, report as ss_report
from test_sessions_needed import FIXTURE, MODEL, NeededModel

JUDGE = "judge-model:1b"

DESIGN = ["--study", "sessions", "--sessions", str(FIXTURE), "--models", MODEL,
          "--regime-file", str(REPO / "tasks" / "regimes.example.json")]

# the categories the judge decides, and the written states (R2, R3 and MYAGENT write the same one)
JUDGED = ("request", "instruction", "decision", "open_task")
COMPACTED = ("R1", "R2", "R3", "MYAGENT")

# the fixture's items of those categories (test_sessions_needed.NEEDED: 2 requests, 2 instructions, 2 open tasks,
# 1 decision) in the two distinct written states: the judge's calls
DISTINCT_CALLS = 14

OUTPUTS = ("results.json", "analysis.md", "report.html", "lost.csv", "probes.csv", "RESULTS.md")

# sha256 of each output of `score` and `analyze` with no --judge (the server's address and the temporary folder
# written as one name each), written by main's code at commit 8cb41f3, before the judge came to the study, and equal
# to those of main at 03d3a3f (values4 merged); made again at the sixth round of needed items (issue 40, protocol
# amendment (21)), whose only change here is the unresolved failure's key and words ("go test ./reports/..." and the
# failing test's line, where they were "./reports/" and the exit code): every status is as it was
UNJUDGED_SHA256 = {"results.json": "e14732ed5510b9fa217319ee12ea1740b5fbc777fd50af98c6196e4494d0f838",
                   "analysis.md": "7e5fcd94a6b96b24632dfea506c4610e0e406320ba056c2706916cf9635742f9",
                   "report.html": "c9d4c010f14507a1120127b4f5abfacc2a0e3296ef678594ceae3d52ad2e49a1",
                   "lost.csv": "1d004e5443d5fcfa7cdc2478f4616a1455afc426df8b307c5a0bbc657511c9ec",
                   "probes.csv": "7234343f7ebfa1536c4ee68f44cc77345b0a5986a2d5fd498adb113c75807395",
                   "RESULTS.md": "a64e41f2925ec55883b0a0df5f0a3a346ee0a158eee551ee7841960883b60457"}


class JudgingModel(NeededModel):
    """The fake's model: the run's compactor (NeededModel), and a judge that answers each item's question with
    verdict(summary, item), read from the default question's two blocks."""

    def __init__(self, verdict):
        self.verdict = verdict

    def reply(self, prompt: str) -> str:
        if "=== ITEM ===" not in prompt:
            return super().reply(prompt)
        summary = prompt.split("=== SUMMARY ===\n", 1)[1].split("\n=== END OF SUMMARY ===", 1)[0]
        item = prompt.split("=== ITEM ===\n", 1)[1].split("\n=== END OF ITEM ===", 1)[0]
        return self.verdict(summary, item)


def prose_kept(summary: str, item: str) -> str:
    """A judge that disagrees with the rules both ways: everything kept in the prose summary (R1), lost in the
    typed one."""
    return "KEPT" if "Pushed commit" in summary else "LOST"


def judge_options(server) -> list[str]:
    return ["--judge", JUDGE, "--host", server.url, *FAST]


def output_hashes(out: Path, server_url: str, folder: Path) -> dict:
    def digest(path: Path) -> str:
        data = path.read_bytes().replace(server_url.encode(), b"http://fake")
        return hashlib.sha256(data.replace(str(folder).encode(), b"/tmp/run")).hexdigest()
    return {name: digest(out / name) for name in OUTPUTS}


class JudgeInTheStudyTest(TempDirMixin, unittest.TestCase):
    """One run of the fixture (its calls only, not scored), copied for each test."""

    @classmethod
    def setUpClass(cls):
        cls.shared = Path(tempfile.mkdtemp(prefix="ccl-test-"))
        cls.run_dir = cls.shared / "run"
        with FakeOllama(models=[MODEL]) as server:
            server.model = NeededModel()
            code, _, err = run_main(["run", *DESIGN, "--host", server.url, "--out", str(cls.run_dir), *FAST])
        assert code == 0, err
        rules = cls.shared / "rules"
        shutil.copytree(cls.run_dir, rules)
        assert run_main(["score", "--out", str(rules)])[0] == 0
        cls.rules = json.loads((rules / "results.json").read_text())

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.shared, True)

    def copy_run(self) -> Path:
        out = self.make_tmp() / "run"
        shutil.copytree(self.run_dir, out)
        return out

    def category(self, results: dict) -> dict:
        return {i["id"]: i["category"] for i in results["sessions"][0]["needed"]}

    def rules_status(self) -> dict:
        return {(r["regime"], r["needed"]): r["status"] for r in self.rules["needed"]}

    def journal_keys(self, out: Path) -> list[str]:
        path = out / "judge" / "judge-calls.jsonl"
        return [json.loads(line)["key"] for line in path.read_text().splitlines()] if path.exists() else []

    def test_the_judges_statuses_reach_the_analysis_with_the_rules_beside_them(self):
        out = self.copy_run()
        with FakeOllama(models=[MODEL, JUDGE]) as server:
            server.model = JudgingModel(prose_kept)
            code, printed, err = run_main(["score", str(out), *judge_options(server)])
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), DISTINCT_CALLS)   # an identical question is asked once
        self.assertIn(f"judged by {JUDGE}: 28 needed items decided ({DISTINCT_CALLS} calls sent", printed)
        results = json.loads((out / "results.json").read_text())
        category, rules = self.category(results), self.rules_status()
        for row in results["needed"]:
            key = (row["regime"], row["needed"])
            with self.subTest(row=key):
                if row["regime"] in COMPACTED and category[row["needed"]] in JUDGED:
                    self.assertEqual(row["status"], "kept" if row["regime"] == "R1" else "lost")
                    self.assertEqual((row["rules_status"], row["judged_by"]), (rules[key], "judge"))
                else:                   # values, files, failures and the verbatim regimes stay the rules'
                    self.assertEqual(row["status"], rules[key])
                    self.assertNotIn("rules_status", row)
        self.assertEqual((results["judge"]["model"], results["judge"]["threshold"]), (JUDGE, 0.5))
        self.assertIn("agreement not measured", results["judge"]["agreement"])
        lock = json.loads((out / "judge" / "judge-lock.json").read_text())["judges"]
        self.assertEqual([(j["model"], j["prompt_sha256"]) for j in lock],
                         [(JUDGE, results["judge"]["prompt_sha256"])])
        self.assertIn("{summary}", lock[0]["prompt"])
        self.assertEqual(lock[0]["identity"]["quantization"], "Q4_K_M")       # the model as the server said
        # the analysis: the judge's figures, the rules' beside them, the judge's line on every page
        code, analysis, err = run_main(["analyze", "--out", str(out)])
        self.assertEqual(code, 0, err)
        n = len(category)
        judged_r1 = sum(1 for c in category.values() if c in JUDGED)
        rules_r1 = [s for (r, _), s in rules.items() if r == "R1"]
        kept_r1 = judged_r1 + sum(1 for (r, i), s in rules.items()
                                  if r == "R1" and category[i] not in JUDGED and s == "kept")
        self.assertIn(f"| R1 | {kept_r1}/{n} = {100 * kept_r1 / n:.1f}% |", analysis)
        self.assertIn(" / ".join(str(rules_r1.count(s)) for s in ("kept", "lost", "wrong")) + " |", analysis)
        self.assertIn("the rules alone: kept / lost / misstated", analysis)
        self.assertIn(f"The judge decided 28 of 28 items of its categories in written states.", analysis)
        line = f"decided by {JUDGE} (ollama; question tasks/sessions/judge-prompt.txt"
        for page in ("analysis.md", "report.html", "RESULTS.md"):
            with self.subTest(page=page):
                text = html.unescape((out / page).read_text())
                self.assertTrue(line in text and "read as below the protocol's agreement threshold (kappa 0.6)"
                                in text, f"{page} does not name the judge and its agreement")
        self.assertIn(f"judged by {JUDGE}", analysis.split("## ")[1])        # the answer at the top says so
        self.assertIn(f"needed items judged by {JUDGE}", ss_report.render_headline(ss_an.analyze(results)))
        self.assertEqual(ss_an.check_bank(results), [])
        for judge in ("KEPT", {**results["judge"], "threshold": "high"}):
            self.assertIn("`judge` does not name the model", ss_an.check_bank({**results, "judge": judge})[0])
        bad_rules = {**results, "needed": [{**results["needed"][0], "rules_status": "gone"}] + results["needed"][1:]}
        self.assertIn("needed row 1 names", ss_an.check_bank(bad_rules)[0])
        # the run's own manifest and raw logs are untouched: verify reads the run as it was
        code, verified, err = run_main(["verify", "--out", str(out)])
        self.assertEqual(code, 0, verified + err)

    def test_a_reply_with_no_verdict_leaves_the_rules_status_and_is_counted(self):
        out = self.copy_run()

        def garbled_on_instructions(summary: str, item: str) -> str:
            return "I would say it is mostly there" if item.startswith(("Never", "Keep")) else "CHANGED"
        with FakeOllama(models=[MODEL, JUDGE]) as server:
            server.model = JudgingModel(garbled_on_instructions)
            code, printed, err = run_main(["score", str(out), *judge_options(server)])
        self.assertEqual(code, 0, err)
        results = json.loads((out / "results.json").read_text())
        category, rules = self.category(results), self.rules_status()
        unread = [r for r in results["needed"] if r.get("judged_by") == "rules: reply unreadable"]
        self.assertEqual(len(unread), 2 * len(COMPACTED))
        for row in unread:
            self.assertEqual(category[row["needed"]], "instruction")
            self.assertEqual(row["status"], rules[(row["regime"], row["needed"])])
        judged = [r for r in results["needed"] if r.get("judged_by") == "judge"]
        self.assertEqual({r["status"] for r in judged}, {"wrong"})
        self.assertIn("the rules' status stands for 8 (a reply not read: 8", printed)
        code, analysis, err = run_main(["analyze", "--out", str(out)])
        self.assertIn("The judge decided 20 of 28 items of its categories in written states; the rules' status "
                      "stands for 8 (a reply that gave no verdict: 8; a summary too long for the judge: 0)", analysis)

    def test_a_judge_that_stops_answering_ends_in_one_line_and_its_calls_are_kept(self):
        out = self.copy_run()
        with FakeOllama(models=[MODEL, JUDGE]) as server:
            server.model = JudgingModel(prose_kept)
            server.faults = [None] * 3 + [("delay", 3.0)] * 40
            code, _, err = run_main(["score", str(out), "--judge", JUDGE, "--host", server.url, "--read-timeout",
                                     "0.4", "--give-up-after", "1", *FAST])
        self.assertEqual(code, 3, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn(f"error: the judge {JUDGE}: the server has not answered for", err)
        self.assertIn("the judge's 3 calls so far are kept in", err)
        self.assertIn("rerun the same command to go on", err)
        self.assertFalse((out / "results.json").exists())
        self.assertEqual(len(self.journal_keys(out)), 3)
        with FakeOllama(models=[MODEL, JUDGE]) as server:
            server.model = JudgingModel(prose_kept)
            code, _, err = run_main(["score", str(out), *judge_options(server)])
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), DISTINCT_CALLS - 3)

    def test_a_judging_killed_with_sigkill_is_resumed_sending_only_the_calls_not_made(self):
        out = self.copy_run()
        with FakeOllama(models=[MODEL, JUDGE]) as server:
            server.model = JudgingModel(prose_kept)
            kill_at_call(self, server, 6, [sys.executable, str(REPO / "scripts" / "run_pilot.py"), "score",
                                           str(out), *judge_options(server)])
            made = self.journal_keys(out)
            self.assertEqual(len(made), 5)
            before = server.chat_count()
            code, printed, err = run_main(["score", str(out), *judge_options(server)])
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count() - before, DISTINCT_CALLS - 5)
        keys = self.journal_keys(out)
        self.assertEqual(keys[:5], made)
        self.assertEqual(len(set(keys)), len(keys))           # no call answered twice
        self.assertIn(f"({DISTINCT_CALLS - 5} calls sent", printed)
        results = json.loads((out / "results.json").read_text())
        self.assertEqual(sum(r.get("judged_by") == "judge" for r in results["needed"]), 28)

    def test_with_no_judge_nothing_is_sent_and_the_outputs_are_mains(self):
        out = self.copy_run()
        connects: list = []
        watching = [False]

        def hook(event, args):
            if watching[0] and event == "socket.connect":
                connects.append(args[1])
        sys.addaudithook(hook)
        with FakeOllama(models=[MODEL, JUDGE]) as server:
            server.model = JudgingModel(prose_kept)
            watching[0] = True
            try:
                code, _, err = run_main(["score", str(out), "--host", server.url, *FAST])
            finally:
                watching[0] = False
            self.assertEqual(code, 0, err)
            self.assertEqual((connects, server.requests), ([], []))
            self.assertEqual(run_main(["analyze", "--out", str(out)])[0], 0)
            hashes = output_hashes(out, server.url, out.parent)
            self.assertFalse((out / "judge").exists())
            judged = self.copy_run()
            watching[0] = True
            try:
                code, _, err = run_main(["score", str(judged), *judge_options(server)])
            finally:
                watching[0] = False
            self.assertEqual(code, 0, err)
            self.assertTrue(connects)                          # the same command with --judge does send
        self.assertEqual(hashes, UNJUDGED_SHA256)


class JudgeOptionsTest(TempDirMixin, unittest.TestCase):
    def test_a_study_without_a_judge_or_a_judge_without_a_model_is_one_line(self):
        with FakeOllama(models=[MODEL, JUDGE]) as server:
            out = self.make_tmp() / "xr"
            code, _, err = run_main(["run", "--models", MODEL, "--episodes", "1", "--regimes", "R1",
                                     "--host", server.url, "--out", str(out), *FAST])
            self.assertEqual(code, 0, err)
            code, _, err = run_main(["score", str(out), "--judge", JUDGE, "--host", server.url])
            self.assertEqual(code, 2)
            self.assertEqual(err.count("\n"), 1, err)
            self.assertIn("has nothing a judge decides", err)
            self.assertFalse((out / "results.json").exists())
            sessions = self.make_tmp() / "sessions"
            code, _, err = run_main(["run", *DESIGN, "--host", server.url, "--out", str(sessions), *FAST])
            self.assertEqual(code, 0, err)
            code, _, err = run_main(["score", str(sessions), "--judge", "--host", server.url])
            self.assertEqual((code, err.count("\n")), (2, 1), err)
            self.assertIn("--judge needs the judge model's name", err)
            for argv, said in ((["--judge", "absent:7b", "--host", server.url], "model 'absent:7b' is not on the"),
                               (["--judge", JUDGE, "--host", "http://127.0.0.1:9"], "no model server answers")):
                code, _, err = run_main(["score", str(sessions), *argv, *FAST])
                self.assertEqual((code, err.count("\n")), (2, 1), err)
                self.assertIn(f"error: the judge: {said}", err)
            self.assertFalse((sessions / "results.json").exists())

    def test_a_judge_model_is_no_design_option_and_the_constraints_judge_still_names_its_folder(self):
        typed = ["--study", "constraints", "--episodes", "3", "--models", MODEL]
        parser = cli.build_parser("score")
        self.assertEqual(launch.resolve_run_dir(parser.parse_args([*typed, "--judge"])).name,
                         launch.resolve_run_dir(cli.build_parser("run").parse_args([*typed, "--judge"])).name)
        self.assertTrue(launch.resolve_run_dir(parser.parse_args([*typed, "--judge"])).name.endswith("-judge"))
        # a judge model's name is no design option: the folder is the run's own
        self.assertEqual(launch.resolve_run_dir(parser.parse_args([*typed, "--judge", JUDGE])),
                         launch.resolve_run_dir(cli.build_parser("run").parse_args(typed)))


def write_hashes() -> None:
    test = JudgeInTheStudyTest()
    JudgeInTheStudyTest.setUpClass()
    try:
        out = test.copy_run()
        with FakeOllama(models=[MODEL, JUDGE]) as server:
            assert run_main(["score", str(out), "--host", server.url, *FAST])[0] == 0
            assert run_main(["analyze", "--out", str(out)])[0] == 0
            print(json.dumps(output_hashes(out, server.url, out.parent), indent=1))
    finally:
        test.doCleanups()
        JudgeInTheStudyTest.tearDownClass()


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write_hashes()
    else:
        unittest.main()
