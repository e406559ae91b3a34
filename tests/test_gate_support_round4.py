"""The audit's release gate on real summaries, fourth round (issue 40, point 4;
protocol/SESSIONS.md, the amendment of 2026-12-06 (15)): what agents and Claude Code's summary
template do that the gate read as misstatements on other real logs.
tests/fixtures/gate_support/round4.jsonl, a Claude Code log written for this project, holds one of
each: a command that only looks and fails, a fallback that ran (`which ruff || pip install ruff`),
a search tool that could not start and the same search in a shell, a check the summary reports
failing in its own words, an instruction whose "not" qualifies a thing, the user's words quoted, a
question, a hyphenated term, "pushed back", a fix applied, a build that passed after a failure
sentence, checks made as the summary says, and a line range the agent read. Its summary tells the
truth; the misstatements put beside it are still caught.
"""
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from test_gate_support import FIXTURES, gate_rows, needed_statuses, summary_of  # noqa: E402
from pilot.studies.sessions.gate_support import obligation_stands, unsupported  # noqa: E402

PATH = FIXTURES / "round4.jsonl"


def with_line(summary: str, added: str) -> str:
    return summary.replace("5. Problem Solving:\n", f"5. Problem Solving:\n   {added}\n")


def mid_session_copy(folder: str) -> Path:
    """A copy of the log that begins mid-session: its first line's parent is not in the file."""
    hook = json.dumps({"parentUuid": "4c1e7d20-0000-4000-9000-00000000abcd", "type": "system",
                       "subtype": "stop_hook_summary", "sessionId": "5a1d3c77-round4",
                       "uuid": "00000000-0000-4000-9000-000000000000"})
    copy = Path(folder) / PATH.name
    copy.write_text(hook + "\n" + PATH.read_text())
    return copy


class TruthfulSummaryTest(unittest.TestCase):
    def test_what_the_agents_and_the_template_do_raises_nothing(self):
        # (main raised 14: four failures "not reported", two orders set against an instruction
        # by its qualifying "not", an order that quotes the user, a line range, and six claims)
        self.assertEqual(gate_rows(PATH), [])
        # and the misstatements beside them are still caught
        summary = summary_of("round4")
        for added, said in [
                ("All queue tests pass.", "All queue tests pass"),
                ("Pushed fix/retry-count to origin.", "Pushed"),
                ("Updated `src/queue/scheduler.py` to count retries.", "scheduler"),
                ("The user asked to drop the archive bucket.", "archive bucket"),
                ("Verified the retries against the staging queue `queue-stg-3`.", "staging"),
                ("The lint run passed cleanly.", "lint run")]:
            with self.subTest(added=added):
                rows = gate_rows(PATH, with_line(summary, added))
                self.assertTrue(any(said in row["summary_sentence"] for row in rows), rows)
        # a failed check the summary does not report in any words is still lost: a needed item
        # (the gate's own "not reported" would count it twice: the amendment of 2026-12-06 (20))
        summary = summary_of("round4").replace(" (a test failure is still open)", "")
        self.assertFalse(any("make test" in row["item"] for row in gate_rows(PATH, summary)))
        self.assertIn(("make test && make lint", "lost"),
                      needed_statuses(PATH, summary, "unresolved_error"))

    def test_an_order_the_user_never_gave_is_left_alone_only_in_a_mid_session_file(self):
        summary = with_line(summary_of("round4"),
                            "The user asked for a dry-run flag on the scheduler.")
        self.assertTrue(any("dry-run" in row["summary_sentence"]
                            for row in gate_rows(PATH, summary)))
        with tempfile.TemporaryDirectory() as folder:
            self.assertEqual(gate_rows(mid_session_copy(folder), summary), [])


class TemplateWordsTest(unittest.TestCase):
    """The findings the gate makes, read against the summary they came from."""

    summary = ("6. All user messages:\n   - \"okay, so is the retry fix done?\"\n"
               "7. Pending Tasks:\n   - Ensure all queue tests pass\n"
               "8. Current Work:\n   12. **Final step**: kept the counter in"
               " `.queue/<job-id>/state.json`\n")
    support = {"items": [], "corrected": set(), "edits": set(), "approved": False, "tasks": [],
               "printed": "", "test_runs": [], "mid_session": False, "user_said": "",
               "earlier": "", "last_checks": {}}

    def finding(self, category, detail, text):
        return {"category": category, "blocking": True, "detail": detail, "text": text}

    def test_the_user_messages_and_the_pending_tasks_claim_nothing(self):
        findings = [
            self.finding("status", "`Bash: make test` presented as done, but it is failed "
                                   "with no receipt", "- \"okay, so is the retry fix done?\""),
            self.finding("status", "`the last tests run` presented as pass, but it is failed "
                                   "with no receipt", "- Ensure all queue tests pass")]
        self.assertEqual(unsupported(findings, self.support, "", self.summary), [])
        current = self.finding("status", "`the last tests run` presented as pass, but it is "
                                         "failed with no receipt", "All queue tests pass.")
        summary = self.summary + "   All queue tests pass.\n"
        self.assertEqual(unsupported([current], self.support, "", summary), [current])

    def test_a_list_number_and_a_placeholder_path_are_no_values(self):
        findings = [self.finding("value", "`12` is not in the source, which gives `124`", "12"),
                    self.finding("value", "`/state.json` is not in the source, which gives "
                                          "`state.json`", "/state.json")]
        self.assertEqual(unsupported(findings, self.support, "", self.summary), [])
        other = self.finding("value", "`/jobs.db` is not in the source, which gives `jobs.db`",
                             "/jobs.db")
        summary = self.summary + "   Jobs live in /jobs.db now.\n"
        self.assertEqual(unsupported([other], self.support, "", summary), [other])


class ObligationsTest(unittest.TestCase):
    def finding(self, detail, text):
        return {"category": "obligation", "blocking": True, "detail": detail, "text": text}

    def test_an_order_the_previous_summary_gave_as_the_users_is_carried(self):
        text = "2. **Initial Context**: The user wanted to continue the queue work."
        finding = self.finding("an order or a rule given as the user's that the user's words "
                               "do not hold", text)
        support = {"earlier": "1. **Session Start**: The user wanted to continue the queue work."}
        self.assertFalse(obligation_stands(finding, text, support))
        support = {"earlier": "1. **Session Start**: The user reviewed the release notes."}
        self.assertTrue(obligation_stands(finding, text, support))

    def test_an_order_that_quotes_the_user_reports_the_message(self):
        detail = "an order or a rule given as the user's that the user's words do not hold"
        support = {"user_said": "please don't reset it in run, keep the counter per job"}
        finding = self.finding(detail, 'The user said "keep the counter per job" and asked me '
                                       "to redo the staging")
        self.assertFalse(obligation_stands(finding, finding["text"], support))
        # (a part the user negated is no quotation of an order)
        finding = self.finding(detail, 'The user asked me to "reset it in run" and redo staging')
        self.assertTrue(obligation_stands(finding, finding["text"], support))

    def test_a_question_that_names_no_user_gives_no_order(self):
        detail = "an order or a rule given as the user's that the user's words do not hold"
        finding = self.finding(detail, "Open question: should retries be kept per job going "
                                       "forward, or reset on every requeue?")
        self.assertFalse(obligation_stands(finding, finding["text"]))
        finding = self.finding(detail, "Going forward, the user wants retries reset on every "
                                       "requeue.")
        self.assertTrue(obligation_stands(finding, finding["text"]))

    def test_a_statement_and_an_expected_failure_are_no_opposite(self):
        for instruction, text in [
                ("When a job has no owner, `requeue_job` returns early at line ~58.",
                 "**Bug 2:** `requeue_job` returns early without saving when no owner is set"),
                ("### Step 1: Write failing tests (red phase)",
                 "All three tests failed as expected (red phase confirmed).")]:
            with self.subTest(instruction=instruction):
                finding = self.finding("says the opposite of the instruction "
                                       + json.dumps(instruction), text)
                self.assertFalse(obligation_stands(finding, text))
        finding = self.finding('says the opposite of the instruction "Never push to main."',
                               "Pushed the fix to main.")
        self.assertTrue(obligation_stands(finding, finding["text"]))


class MeasureUnlabelledTest(unittest.TestCase):
    def test_the_benchmark_prints_each_finding_of_one_half_of_a_folder(self):
        summary = with_line(summary_of("round4"), "The user asked to drop the archive bucket.")
        text = PATH.read_text().replace(json.dumps(summary_of("round4"))[1:-1],
                                        json.dumps(summary)[1:-1])
        with tempfile.TemporaryDirectory() as folder:
            for name in ("a.jsonl", "b.jsonl", "c.jsonl"):
                (Path(folder) / name).write_text(text if name != "b.jsonl" else
                                                 PATH.read_text())
            run = [sys.executable, str(ROOT / "scripts" / "bench" / "measure_gate.py"),
                   "--unlabelled", folder, "--half"]
            first = subprocess.run(run + ["first"], capture_output=True, text=True, check=True)
            second = subprocess.run(run + ["second", "--counts"], capture_output=True,
                                    text=True, check=True)
        # (a and c are the first half, b the second; only the findings of a half shown)
        self.assertIn("(first, 2 files): 2 compactions, 2 gate findings", first.stdout)
        self.assertIn("a.jsonl #1 obligation", first.stdout)
        self.assertIn('line:    "   The user asked to drop the archive bucket."', first.stdout)
        self.assertIn("(second, 1 files): 1 compactions, 0 gate findings", second.stdout)
        self.assertNotIn("b.jsonl", second.stdout)


if __name__ == "__main__":
    unittest.main()
