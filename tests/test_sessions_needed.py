"""The sessions study reads agent logs through the needed items (issue 40, point 7; protocol/SESSIONS.md, the
amendment of 2026-12-06 (7)): a Claude Code session of our own with tool calls and TodoWrite lists
(tests/fixtures/sessions_needed/report-cache.agent.jsonl) run through the study on the fake server has its needed
items recorded in the manifest before any call, scored per regime, analysed and reported beside the existing figures;
a plain transcript (no tool call) gives the outputs main's code gave, byte for byte.

    python3 tests/test_sessions_needed.py --write     # print the plain transcript's output hashes (only where a
                                                      # change of the plain path is meant)
"""
import hashlib
import json
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

from fake_servers import FakeOllama
from helpers import FAST, REPO, TempDirMixin, kill_at_call, run_main
from pilot.studies.sessions import analysis as ss_an, design as ss, report as ss_report

MODEL = "gemma3:4b"

FIXTURE = REPO / "tests" / "fixtures" / "sessions_needed" / "report-cache.agent.jsonl"

# what needed.py finds in the fixture, at least: (category, key)
NEEDED = [("request", "The report cache in reports/cache.go serves stale totals for tenant TEN-3318."),
          ("request", "Commit what you have, but do not push yet."),
          ("instruction", "Never force-push to the shared branches."),
          ("instruction", "Keep the expiry at 300 seconds."),
          ("file_changed", "/srv/reports/reports/cache.go"),
          ("open_task", "Add a regression test for stale totals"),
          ("open_task", "Note the expiry change in CHANGELOG.md"),
          ("unresolved_error", "go test ./reports/..."),
          ("value", "7c1d2e9"), ("value", "TEN-3318"),
          ("decision", "The root cause is the one-hour expiry, which ignores the invalidation events.")]

# a typed block (R2, R3) and the user's regime (MYAGENT) keep all of it
FAITHFUL = """values:
- tenant = TEN-3318
- commit = 7c1d2e9 (local, not pushed)
constraints:
- Never force-push to the shared branches.
- Keep the expiry at 300 seconds.
status:
- go test ./reports/... failed: TestStaleTotals still fails.
- reports/cache.go edited: expiry shortened to 300 seconds.
notes:
- The report cache in reports/cache.go serves stale totals for tenant TEN-3318; the user said to commit what we
have, but do not push yet.
- Open: add a regression test for stale totals (in progress); note the expiry change in CHANGELOG.md (pending).
- The root cause is the one-hour expiry, which ignores the invalidation events."""

# the prose summary (R1) reports an open task done, the failing tests passing, the local commit pushed, and an
# order the user never gave
PROSE = ("The report cache served stale totals. Note the expiry change in CHANGELOG.md: completed. go test ./reports "
         "passed. Pushed commit 7c1d2e9 to origin. The user asked to delete the staging database on Friday.")

# what R1 misstates
PROSE_WRONG = {("open_task", "Note the expiry change in CHANGELOG.md"), ("unresolved_error", "go test ./reports/..."),
               ("value", "7c1d2e9")}


class NeededModel:
    """The fake's model: a typed block, a sectioned summary and the user's prompt write FAITHFUL, the prose prompt
    writes PROSE, whatever the segment (only the final state is scored)."""

    def reply(self, prompt: str) -> str:
        faithful = any(w in prompt for w in ("typed state block", "Critical values", "context window is almost"))
        return FAITHFUL if faithful else PROSE


def sha256_of(path: Path, server_url: str, folder: Path) -> str:
    """A file's sha256 with the fake server's address (its port changes every run) and the temporary folder
    written as one name each."""
    data = path.read_bytes().replace(server_url.encode(), b"http://fake")
    return hashlib.sha256(data.replace(str(folder).encode(), b"/tmp/plain")).hexdigest()


# A plain transcript: user and assistant messages, no tool call: the needed items are not read from it.
PLAIN = [{"role": "user", "content": "Draft the Q3 note for the board. Revenue was $4.2m, up 12% on Q2. From now on, "
                                     "always round money to one decimal place."},
         {"role": "assistant", "content": "Drafting it: revenue $4.2m, 12% up on Q2."},
         {"role": "user", "content": "Mention the Lisbon office opening on 2025-10-01 and ticket FIN-2207."},
         {"role": "assistant", "content": "Added: the Lisbon office opens on 2025-10-01 (FIN-2207)."}]

class PlainModel:
    """The fake's model for the plain transcript: a typed block keeps its figures, a prose summary changes one."""

    def reply(self, prompt: str) -> str:
        if "typed state block" in prompt or "Critical values" in prompt:
            return ("values:\n- revenue = $4.2m\n- growth = 12%\n- ticket = FIN-2207\n"
                    "constraints:\n- round money to one decimal")
        return "The board note reports revenue of $4.7m, up 12%. The Lisbon office opens on 2025-10-01."


PLAIN_OUTPUTS = ("results.json", "analysis.md", "report.html", "lost.csv", "probes.csv", "RESULTS.md")

# sha256 of each output of the plain transcript's run, the server's address and the temporary folder written as one
# name each: first written by main's code at commit 6013a1d (before the needed items came to the study), and equal to
# it on the branch that brought them; written again on 2026-12-06 after issue 43 changed every sessions report (the
# rules' measured figures in one line, "not tested" for a test below 6 sessions, the `former` column and the status
# rules), which the needed items do not touch
PLAIN_SHA256 = {"results.json": "b7fc20acba9f0eac05251694a9a3909e05037fb0e9b9fc0130ae802b806d86bb",
                "analysis.md": "8ae5383436399c668d2a6d3890e9f8dc37301078ecba1502e284c4e46731df4f",
                "report.html": "0dde18961b469a27f9907ce13819ee7cfdfa7b5221ea437c98900156d4f38ac5",
                "lost.csv": "bcabbc161a11f71e375fd135891d1d7d8573470c0f726ec3e86c7df425725f07",
                "probes.csv": "7234343f7ebfa1536c4ee68f44cc77345b0a5986a2d5fd498adb113c75807395",
                "RESULTS.md": "dd33dfe1d710685334ebab2ffbf937fd6e6041c86fb35c5f1abc672bc2446718"}


def plain_run(tmp: Path) -> dict[str, str]:
    """The plain transcript run through the study on the fake server: each output's sha256."""
    session = tmp / "board-note.chat.json"
    session.write_text(json.dumps(PLAIN))
    out = tmp / "plain"
    with FakeOllama(models=[MODEL]) as server:
        server.model = PlainModel()
        code, _, err = run_main(["run", "--study", "sessions", "--sessions", str(session), "--models", MODEL,
                                 "--regime-file", str(REPO / "tasks" / "regimes.example.json"), "--host",
                                 server.url, "--out", str(out), *FAST])
        assert code == 0, err
        for command in ("score", "analyze"):
            code, _, err = run_main([command, "--out", str(out)])
            assert code == 0, err
        return {name: sha256_of(out / name, server.url, tmp) for name in PLAIN_OUTPUTS}


class NeededItemsInTheStudyTest(TempDirMixin, unittest.TestCase):
    """One run of the fixture with the user's regime beside the built-in ones, read by the tests below."""

    @classmethod
    def setUpClass(cls):
        cls.shared = Path(tempfile.mkdtemp(prefix="ccl-test-"))
        cls.design = ["--study", "sessions", "--sessions", str(FIXTURE), "--models", MODEL,
                      "--regime-file", str(REPO / "tasks" / "regimes.example.json")]
        cls.out = cls.shared / "run"
        with FakeOllama(models=[MODEL]) as server:
            server.model = NeededModel()
            cls.printed = run_main(["run", *cls.design, "--host", server.url, "--out", str(cls.out), *FAST])
        assert run_main(["score", "--out", str(cls.out)])[0] == 0
        cls.results = json.loads((cls.out / "results.json").read_text())

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.shared, True)

    def n_items(self) -> int:
        return len(self.results["sessions"][0]["needed"])

    def statuses(self, regime: str) -> dict:
        items = {i["id"]: (i["category"], i["key"]) for i in self.results["sessions"][0]["needed"]}
        return {items[r["needed"]]: r["status"] for r in self.results["needed"] if r["regime"] == regime}

    def test_plan_and_the_manifest_say_before_any_call_that_needed_items_are_scored(self):
        code, out, err = run_main(["plan", *self.design, "--out", str(self.make_tmp() / "new")])
        self.assertEqual(code, 0, err)
        self.assertIn(f"0 probes, {self.n_items()} needed items (tool calls or task lists)", out)
        killed = self.make_tmp() / "killed"
        with FakeOllama(models=[MODEL]) as server:
            server.model = NeededModel()
            kill_at_call(self, server, 1, [sys.executable, str(REPO / "scripts" / "run_pilot.py"), "run",
                                           *self.design, "--host", server.url, "--out", str(killed), *FAST])
        self.assertEqual(sum(len(p.read_text().splitlines()) for p in (killed / "raw").glob("*.jsonl")), 0)
        recorded = json.loads((killed / "manifest.json").read_text())["task_set"]["scored"]["needed_items"]
        self.assertEqual((recorded["sessions"], recorded["items"]), ([FIXTURE.name], self.n_items()))
        self.assertIn("needed.py", recorded["rules"])
        self.assertEqual(self.results["task_set"]["scored"]["needed_items"], recorded)

    def test_each_needed_item_is_judged_in_every_regimes_final_state(self):
        self.assertEqual(self.printed[0], 0, self.printed[2])
        found = [(i["category"], i["key"]) for i in self.results["sessions"][0]["needed"]]
        self.assertLessEqual(set(NEEDED), set(found))
        self.assertEqual(self.results["sessions"][0]["needed"][0]["segment"], 1)
        self.assertFalse(any(set(i) - {"id", "category", "kind", "key", "text", "segment"}
                             for i in self.results["sessions"][0]["needed"]))     # no tool output kept
        for regime in ("R2", "R3", "MYAGENT"):
            with self.subTest(regime):
                self.assertEqual(len(self.statuses(regime)), len(found))         # one row per item and regime
                self.assertEqual({item: self.statuses(regime)[item] for item in NEEDED},
                                 {item: "kept" for item in NEEDED})
        prose = self.statuses("R1")
        self.assertEqual({item: prose[item] for item in PROSE_WRONG}, {item: "wrong" for item in PROSE_WRONG})
        self.assertEqual(prose[("value", "TEN-3318")], "lost")
        r1 = next(s for s in self.results["states"] if s["regime"] == "R1")
        self.assertEqual(r1["invented_orders"], ["The user asked to delete the staging database on Friday."])
        for regime in ("K1", "K2"):            # the last segments verbatim: never misstated, no invented order
            with self.subTest(regime):
                self.assertNotIn("wrong", self.statuses(regime).values())
                self.assertNotIn("invented_orders", next(s for s in self.results["states"] if s["regime"] == regime))
        # the existing ground truth is scored beside them, as before
        self.assertEqual(len([r for r in self.results["values"] if r["regime"] == "R2"]),
                         len(self.results["sessions"][0]["values"]))

    def test_the_analysis_and_report_give_the_needed_items_beside_the_existing_figures(self):
        out = self.make_tmp() / "run"
        shutil.copytree(self.out, out)
        code, analysis, err = run_main(["analyze", "--out", str(out)])
        self.assertEqual(code, 0, err)
        for heading in ("## Exact values in the final state", "## What the next agent needed",
                        "## Your regime against each built-in one", "## Standing instructions and failed steps"):
            self.assertIn(heading, analysis)
        n, prose = self.n_items(), list(self.statuses("R1").values())
        self.assertIn(f"| R2 | {n}/{n} = 100.0% | 0/{n} = 0.0% | 0/{n} = 0.0% | 0 of 1 |", analysis)
        kept, lost, wrong = (prose.count(s) for s in ("kept", "lost", "wrong"))
        self.assertIn(f"| R1 | {kept}/{n} = {100 * kept / n:.1f}% | {lost}/{n} = {100 * lost / n:.1f}% | "
                      f"{wrong}/{n} = {100 * wrong / n:.1f}% | 1 of 1 |", analysis)
        self.assertRegex(analysis, r"\| open_task \| \d / \d / 1 \| 2 / 0 / 0 \| 2 / 0 / 0 \|")
        self.assertIn("**misstated** value `7c1d2e9` (report-cache.agent.jsonl): the state says \"Pushed commit "
                      "7c1d2e9 to origin.\"", analysis)
        self.assertIn("R1: \"The user asked to delete the staging database on Friday.\"", analysis)
        # the paired comparison on the needed items, in one Holm family with the values' tests
        self.assertIn("| yours | built-in | sessions | items paired |", analysis)
        self.assertIn(f"| MYAGENT | R1 | 1 | {n} | 1 | 0 | none: 1 of 6 sessions | - | not tested |",
                      analysis)
        self.assertIn(f"Of {n} things the next agent needed in the 1 session with tool calls or task lists, the "
                      f"final state kept R1 {100 * kept / n:.1f}%", analysis)
        self.assertIn("What the next agent needed", (out / "report.html").read_text())
        headline = ss_report.render_headline(ss_an.analyze(self.results))
        self.assertIn(f"needed items kept {kept}/{n} = {100 * kept / n:.1f}%, misstated {wrong}", headline)

    def test_a_bank_missing_or_repeating_a_needed_row_is_partial_or_refused(self):
        self.assertEqual(ss_an.check_bank(self.results), [])
        self.assertTrue(ss_an.analyze(self.results)["complete"])
        short = {**self.results, "needed": self.results["needed"][1:]}
        self.assertFalse(ss_an.analyze(short)["complete"])
        doubled = {**self.results, "needed": self.results["needed"] + self.results["needed"][:1]}
        self.assertIn(f"needed row {len(doubled['needed'])} repeats an earlier row", ss_an.check_bank(doubled)[0])
        unknown = {**self.results, "needed": [{**self.results["needed"][0], "needed": 99}]}
        self.assertIn("needed row 1 names a regime, session or item", ss_an.check_bank(unknown)[0])
        session = {**self.results["sessions"][0], "needed": [{"id": 1, "key": "x"}]}
        self.assertIn("lack an id, a category or a key",
                      ss_an.check_bank({**self.results, "sessions": [session]})[0])

    def test_a_folder_whose_manifest_recorded_no_needed_items_is_scored_as_before(self):
        out = self.make_tmp() / "run"
        shutil.copytree(self.out, out)
        manifest = json.loads((out / "manifest.json").read_text())
        del manifest["task_set"]["scored"]
        (out / "manifest.json").write_text(json.dumps(manifest))
        self.assertEqual(run_main(["score", "--out", str(out)])[0], 0)
        self.assertEqual(run_main(["analyze", "--out", str(out)])[0], 0)
        results = json.loads((out / "results.json").read_text())
        self.assertNotIn("needed", results)
        self.assertNotIn("needed", results["sessions"][0])
        self.assertNotIn("What the next agent needed", (out / "analysis.md").read_text())
        for field in ("values", "instructions", "steps", "probes"):
            self.assertEqual(results[field], self.results[field])


class PlainTranscriptTest(TempDirMixin, unittest.TestCase):
    def test_a_plain_transcript_gives_the_outputs_mains_code_gave(self):
        tmp = self.make_tmp()
        _, tasks = ss.read_sessions(Path(self.make_plain(tmp)))
        self.assertNotIn("needed", tasks["episodes"][0])
        self.assertNotIn("scored", tasks)
        self.assertEqual(plain_run(self.make_tmp()), PLAIN_SHA256)

    @staticmethod
    def make_plain(tmp: Path) -> Path:
        path = tmp / "board-note.chat.json"
        path.write_text(json.dumps(PLAIN))
        return path


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        print(json.dumps(plain_run(Path(tempfile.mkdtemp(prefix="ccl-plain-"))), indent=1))
    else:
        unittest.main()
