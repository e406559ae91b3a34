"""The audit's release gate counts what the agent's calls did as support (issue 40, point 4;
protocol/SESSIONS.md, the amendment of 2026-12-06 (12)). Three Claude Code logs written for this
project (tests/fixtures/gate_support/), each with one compaction whose summary tells the truth in
the words agents use, are audited as a user would; a variant of each summary that misstates the
work must still be caught:

- failures.jsonl: a file read before it existed and then written, a test suite that failed and then
  passed under another command, and a push the hook declined, which the summary reports;
- changes.jsonl: two edit calls (a rounding, a constant removed) and a test run that failed last;
- approval.jsonl: the user's "yes, go ahead", a task list with every task completed, and a quoted
  banner text that holds a claim word;
- round3.jsonl (the amendment of 2026-12-06 (14)): test-first work whose last run fails on purpose,
  a lookup retried under a corrected id, a merge that conflicts, and a summary in Claude Code's
  template whose words read as claims or orders without being either (a name, a label, an
  adjective, a next step, a claim that names nothing to check, an opinion, a line under "Errors").
"""
import collections
import json
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from pilot.studies.sessions.audit import audit_compaction  # noqa: E402
from pilot.studies.sessions.failed_steps import step_match_terms  # noqa: E402
from pilot.studies.sessions.gate_support import obligation_stands  # noqa: E402
from pilot.studies.sessions.readers import read_session_file  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "gate_support"


def gate_rows(path: Path, summary: str | None = None) -> list[dict]:
    """The audit's gate rows of the log's compaction; with summary, of a copy whose summary is
    that text instead."""
    if summary is not None:
        with tempfile.TemporaryDirectory() as folder:
            lines = path.read_text().splitlines()
            session = read_session_file(path, path.name)[0]
            old = session["compactions"][0]["summary"]
            copy = Path(folder) / path.name
            copy.write_text("\n".join(line.replace(_json(old), _json(summary)) for line in lines)
                            + "\n")
            return gate_rows(copy)
    record = audit_compaction(read_session_file(path, path.name)[0], 0)
    return [row for row in record["rows"] if row["type"] == "gate"]


def _json(text: str) -> str:
    return json.dumps(text)[1:-1]


def needed_statuses(path: Path, summary: str | None, category: str) -> list[tuple[str, str]]:
    """(key, status) of the needed items of one category of the log's compaction; with summary,
    of a copy whose summary is that text instead."""
    if summary is not None:
        with tempfile.TemporaryDirectory() as folder:
            copy = Path(folder) / path.name
            old = summary_of_path(path)
            copy.write_text("\n".join(line.replace(_json(old), _json(summary))
                                      for line in path.read_text().splitlines()) + "\n")
            return needed_statuses(copy, None, category)
    record = audit_compaction(read_session_file(path, path.name)[0], 0)
    return [(row["key"], row["status"]) for row in record["needed"] if row["category"] == category]


def summary_of_path(path: Path) -> str:
    return read_session_file(path, path.name)[0]["compactions"][0]["summary"]


def summary_of(name: str) -> str:
    path = FIXTURES / f"{name}.jsonl"
    return read_session_file(path, path.name)[0]["compactions"][0]["summary"]


class FailuresTest(unittest.TestCase):
    """An unresolved failure is needed.py's (one source): a failure whose purpose was met later is
    none, and one the summary reports is no finding; a reported failure claimed done, or one left
    out, is still caught."""

    def test_only_the_open_failure_counts_and_only_its_misstatement_is_caught(self):
        path = FIXTURES / "failures.jsonl"
        self.assertEqual(gate_rows(path), [])
        record = audit_compaction(read_session_file(path, path.name)[0], 0)
        self.assertEqual([row["key"] for row in record["needed"]
                          if row["category"] == "unresolved_error"],
                         ["git push origin feat/monthly-report"])
        claimed = summary_of("failures").replace(
            "The push of feat/monthly-report failed: the pre-receive hook declined it.",
            "The push of feat/monthly-report succeeded.")
        rows = gate_rows(path, claimed)
        self.assertTrue(any("feat/monthly-report" in row["summary_sentence"] for row in rows),
                        rows)
        left_out = summary_of("failures").replace(
            "The push of feat/monthly-report failed: the pre-receive hook declined it.", "").replace(
            " and a push of feat/monthly-report", "")
        # (a failure left out is a loss: the needed item lost, not a finding of the gate)
        self.assertEqual(gate_rows(path, left_out), [])
        self.assertEqual(needed_statuses(path, left_out, "unresolved_error"),
                         [("git push origin feat/monthly-report", "lost")])


class ChangesTest(unittest.TestCase):
    """A claim of a change is supported by the edit calls that made it, and only by them; a claim
    that tests pass, by the last test run."""

    def setUp(self):
        self.rows = gate_rows(FIXTURES / "changes.jsonl")
        self.flagged = " ".join(row["summary_sentence"] for row in self.rows)

    def test_only_the_changes_the_edit_calls_made_are_supported(self):
        self.assertNotIn("round to cents", self.flagged)
        self.assertNotIn("Removed LEGACY_RATE", self.flagged)
        # a name no call touched and the history never holds; a blanket claim
        self.assertIn("Removed TAX_TABLE_2019", self.flagged)
        self.assertIn("Updated every caller", self.flagged)

    def test_tests_said_to_pass_after_a_failed_last_run_are_caught(self):
        self.assertIn("All tests pass", self.flagged)
        self.assertEqual(len(self.rows), 3, self.rows)


class ApprovalTest(unittest.TestCase):
    """The user's approval, the last task list and a quotation."""

    def test_approval_tasks_and_quotes_support_only_what_the_log_holds(self):
        path = FIXTURES / "approval.jsonl"
        self.assertEqual(gate_rows(path), [])
        text = path.read_text()
        with tempfile.TemporaryDirectory() as folder:
            copy = Path(folder) / path.name
            copy.write_text(text.replace('"content": "yes, go ahead"',
                                         '"content": "let me think about it"'))
            rows = gate_rows(copy)
            self.assertTrue(any("approved" in row["item"] for row in rows), rows)
            copy.write_text(text.replace('"status": "completed"', '"status": "pending"'))
            rows = gate_rows(copy)
            self.assertTrue(any("finished" in row["item"] for row in rows), rows)


class RealSummaryWordsTest(unittest.TestCase):
    """Each finding on a real summary a real misstatement (issue 40, point 4; the amendment of
    2026-12-06 (14)): what agents' summaries say truly raises nothing, and the misstatements
    beside it are still caught."""

    path = FIXTURES / "round3.jsonl"

    def test_a_truthful_summary_in_the_template_raises_nothing(self):
        # (main raised 12: names, labels, adjectives, a next step, an unverifiable claim, checks
        # named by their own run, a reported conflict, a corrected lookup, an opinion, code notes)
        self.assertEqual(gate_rows(self.path), [])
        # and the misstatements beside them are still caught
        summary = summary_of("round3")
        for added, said in [
                ("All tests pass.", "All tests pass"),
                ("Removed `RATE_CACHE_TTL` from settings.py.", "RATE_CACHE_TTL"),
                ("The retry wiring in `fetch_rates` is complete.", "retry wiring"),
                ("Verified the retries against the staging server `rates-stg-2`.", "staging"),
                ("Pushed feat/rate-retries to origin.", "Pushed"),
                ("The changes were pushed.", "pushed"),
                ("Updated every caller of `fetch_rates` across the codebase.", "every caller"),
                ("Fixed the rounding by adding `roundHalfUp` in money.go.", "roundHalfUp")]:
            with self.subTest(added=added):
                rows = gate_rows(self.path, summary.replace("5. Problem Solving:\n",
                                                            f"5. Problem Solving:\n   {added}\n"))
                self.assertTrue(any(said in row["summary_sentence"] for row in rows), rows)

    def test_work_from_before_a_mid_session_file_begins_is_not_called_invented(self):
        summary = summary_of("round3").replace(
            "5. Problem Solving:\n",
            "5. Problem Solving:\n   Fixed the rounding by adding `roundHalfUp` in money.go.\n")
        text = self.path.read_text()
        hook = json.dumps({"parentUuid": "9f0c2e41-0000-4000-8000-00000000beef", "type": "system",
                           "subtype": "stop_hook_summary", "sessionId": "7e2b91c4-round3",
                           "uuid": "00000000-0000-4000-8000-000000000000"})
        with tempfile.TemporaryDirectory() as folder:
            copy = Path(folder) / self.path.name
            copy.write_text(hook + "\n" + text)
            self.assertEqual(gate_rows(copy, summary), [])

    def test_only_a_corrected_lookup_is_no_failure_left_out(self):
        self.assertFalse(any("PAY-12" in row["item"] for row in gate_rows(self.path)))
        text = self.path.read_text().replace('"issue_id": "PAY-21"', '"issue_id": "OPS-4471"')
        with tempfile.TemporaryDirectory() as folder:
            copy = Path(folder) / self.path.name
            copy.write_text(text)
            self.assertFalse(any("PAY-12" in row["item"] for row in gate_rows(copy)))
            self.assertIn(("PAY-12", "lost"), needed_statuses(copy, None, "unresolved_error"))

    def test_a_numeric_option_of_a_call_names_no_step(self):
        call = {"name": "Bash", "input": {"command": "npm test", "timeout": 60000}}
        self.assertEqual(step_match_terms(call, "Bash", collections.Counter()), ["npm test"])

    def test_a_command_option_is_no_negation(self):
        finding = {"category": "obligation", "blocking": True,
                   "detail": 'says the opposite of the instruction "when running `./rates '
                             'explain -c 4f2a --generate --no-pager`"',
                   "text": "- Add `--generate` flag to `rates explain -c <id>` command"}
        self.assertFalse(obligation_stands(finding, finding["text"]))
        finding["text"] = "- Dropped the `--generate` flag: never generate in `rates explain`"
        self.assertTrue(obligation_stands(finding, finding["text"]))


if __name__ == "__main__":
    unittest.main()
