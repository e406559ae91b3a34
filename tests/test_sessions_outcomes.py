"""The failed and denied steps rule (studies/sessions/failed_steps.py, SESSIONS.md section 3.3 and
the amendment of 2026-12-06) on the shapes real logs take: tests/fixtures/outcomes/ holds our own
text in each tool's shape (Codex's shell command as a list, Gemini CLI's and Cline's read_file,
Gemini CLI's older shell result, a test report given only as JSON, SWE-agent's linter refusing an
edit, Cline's saved-file echo and its task_progress reminder), each read by the study's readers."""
from __future__ import annotations

import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "scripts"))

import pilot.studies  # noqa: E402,F401  (registers the studies)
from pilot.studies.sessions import readers  # noqa: E402
from pilot.studies.sessions.truth import ground_truth, step_outcome, turn_outcome  # noqa: E402

OUTCOMES = HERE / "fixtures" / "outcomes"


def read(name: str) -> dict:
    path = OUTCOMES / name
    (session,) = readers.read_session_file(path, path.name)
    return session


def outcomes(session: dict) -> list[tuple[str, str]]:
    return [(t["tool"], turn_outcome(t)) for t in session["turns"] if t["role"] == "tool"]


class ReadingToolsTest(unittest.TestCase):
    """Point 2: what a reading tool returns is content, however the call was written."""

    def test_codex_cat_given_as_a_list_and_ci_logs_read_a_log(self):
        self.assertEqual([("shell", "ok"), ("shell", "ok")],
                         outcomes(read("codex-cat-ci-log.jsonl")))

    def test_gemini_read_file_of_a_failed_deploy_log_is_ok(self):
        self.assertEqual(("read_file", "ok"), outcomes(read("gemini-read-and-shell.json"))[0])

    def test_cline_read_file_and_a_saved_file_echo_are_ok(self):
        session = read("cline-task/api_conversation_history.json")
        self.assertEqual([("read_file", "ok"), ("write_to_file", "ok")], outcomes(session))
        self.assertEqual([], ground_truth(session["turns"])["steps"])

    def test_cline_task_progress_reminder_is_not_the_users_words(self):
        session = read("cline-task/api_conversation_history.json")
        users = [t["text"] for t in session["turns"] if t["role"] == "user"]
        self.assertEqual(["Fix the retry helper in src/retry.ts; the worker log shows why."], users)

    def test_one_rule_for_tail_and_for_a_tool_that_prints_logs(self):
        text = "FAILED tests/test_totals.py::test_rounding\n1 failed, 88 passed"
        for command in ("tail -n 50 build.log", "ci logs 1182", "gh run view 991 --log",
                        "cd /srv && kubectl logs api-7f", "git show HEAD~1"):
            with self.subTest(command=command):
                self.assertEqual("ok", step_outcome(text, False, "Bash", {"command": command}))
        for command in ("pytest -q", "npm test && cat report.txt", "make ci"):
            with self.subTest(command=command):
                self.assertEqual("failed", step_outcome(text, False, "Bash", {"command": command}))


class NothingFailedTest(unittest.TestCase):
    """Point 3: lines that say nothing failed are no failure."""

    def test_gemini_shell_result_with_error_none_and_failed_zero_is_ok(self):
        self.assertEqual(("run_shell_command", "ok"),
                         outcomes(read("gemini-read-and-shell.json"))[1])

    def test_summaries_that_count_no_failure(self):
        for text in ("Error: (none)\nExit Code: 0", "Tests: 12 passed\nFailed: 0",
                     "Errors: 0, Failures: 0", "stderr: (empty)"):
            with self.subTest(text=text):
                self.assertEqual("ok", step_outcome(text, False, "run_shell_command",
                                                    {"command": "make"}))
        self.assertEqual("failed", step_outcome("Failed: 2\nPassed: 10", False, "Bash",
                                                {"command": "make"}))


class MissedFailuresTest(unittest.TestCase):
    """Point 4: failures the log states in a field or in the tool's own words."""

    def test_a_test_report_given_only_as_json_failed_and_an_issue_body_is_data(self):
        self.assertEqual([("run_tests", "failed"), ("get_issue", "ok")],
                         outcomes(read("responses-json-test-report.json")))

    def test_swe_agent_linter_refusal_failed_and_its_retry_is_ok(self):
        session = read("swe-agent-lint-retry.traj")
        self.assertEqual(["failed", "ok"], [o for _, o in outcomes(session)])
        steps = ground_truth(session["turns"])["steps"]
        self.assertEqual(1, len(steps))
        self.assertIn("syntax error", steps[0]["detail"])

    def test_claude_code_harness_errors_and_plan_mode_messages(self):
        self.assertEqual("failed", step_outcome(
            "<tool_use_error>File does not exist.</tool_use_error>", False, "Read",
            {"file_path": "/x/y.go"}))
        self.assertEqual("ok", step_outcome(
            "Entered plan mode. You should now focus on exploring.\n\nIn plan mode, you should:\n"
            "1. Read", False, "EnterPlanMode", {}))


if __name__ == "__main__":
    unittest.main()
