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

    def test_gemini_cli_exit_code_of_a_reading_command_in_both_layouts(self):
        # the older JSON (`Exit Code: 2` after Stdout/Stderr) and the JSONL file (the newer
        # llmContent, `Exit Code: 1` after Output, in <untrusted_context>): packages/core's shell
        # tool writes the line only when the command exits non-zero
        for name in ("gemini-failed-read.json", "gemini-failed-read.jsonl"):
            with self.subTest(name=name):
                (turn,) = [t for t in read(name)["turns"] if t["role"] == "tool"]
                self.assertEqual("failed", turn_outcome(turn))
                self.assertEqual("failed", step_outcome(turn["text"], False, turn["tool"],
                                                        turn["call"]["input"]))

    def test_gemini_cli_tool_results_recorded_as_a_user_message(self):
        # since May 2026 the CLI records the results it sends back as a user message of
        # functionResponse parts (recordSyntheticMessage): a copy where the call holds its result,
        # the only record where it does not (the cart tests' `Exit Code: 1`)
        session = read("gemini-tool-results-as-user.jsonl")
        self.assertEqual({}, session["read"]["not_understood"])
        self.assertEqual(0, session["read"]["calls_without_result"])
        self.assertEqual([("run_shell_command", "ok"), ("run_shell_command", "failed")],
                         outcomes(session))
        self.assertEqual(["Run the unit tests, then the cart tests."],
                         [t["text"] for t in session["turns"] if t["role"] == "user"])

    def test_claude_code_harness_errors_and_plan_mode_messages(self):
        self.assertEqual("failed", step_outcome(
            "<tool_use_error>File does not exist.</tool_use_error>", False, "Read",
            {"file_path": "/x/y.go"}))
        self.assertEqual("ok", step_outcome(
            "Entered plan mode. You should now focus on exploring.\n\nIn plan mode, you should:\n"
            "1. Read", False, "EnterPlanMode", {}))
        # issue 40: leaving plan mode with the user's approval is no denial; a refusal in it is
        for tool in ("ExitPlanMode", "Bash"):
            self.assertEqual("ok", step_outcome(
                "User has approved exiting plan mode. You can now start coding. Start with updating "
                "your todo list if applicable", False, tool, {"plan": "1. Fix the parser"}))
        self.assertEqual("denied", step_outcome(
            "Edits are not allowed in plan mode: the file was left as it is.", True, "Edit",
            {"file_path": "a.py"}))


class HandLabelledTest(unittest.TestCase):
    """The general causes the hand labels of real logs showed (amendment of 2026-12-06 (8))."""

    def test_cline_saved_file_problems_background_commands_and_echoes(self):
        # the save worked (the problems are the new code's), a server left running, the command's
        # own echo; a real error printed before the command went to the background still counts
        self.assertEqual([("write_to_file", "ok"), ("execute_command", "ok"),
                          ("execute_command", "ok"), ("execute_command", "failed")],
                         outcomes(read("cline-2026-steps/api_conversation_history.json")))

    def test_a_users_answer_and_a_help_text_are_content(self):
        answer = ('User has answered your questions: "Is the old flag needed?"="No, the deploy '
                  'failed because of it". You can now continue with the user\'s answers in mind.')
        self.assertEqual("ok", step_outcome(answer, False, "AskUserQuestion", {"questions": []}))
        usage = "Usage: tool [options]\n  --strict   Exit with code 1 if any check failed"
        self.assertEqual("ok", step_outcome(usage, False, "Bash", {"command": "tool --help"}))

    def test_warnings_and_tools_that_show_a_binary_are_no_failure(self):
        # SWE-agent's CTF observations and a Go test run: a warning does not stop a run; a
        # disassembly's own note and the strings of an image are content
        for text, tool, arguments in (
                ("Warning: _curses.error: setupterm: could not find terminfo database\n\n"
                 "[+] Opening connection to ctf.example on port 8000: Done\nFLAG{own_flag}",
                 "python", {"command": "python exploit.py"}),
                ("[hooks] Warning: replacing pre-push (backup pre-push.old already exists)\n"
                 "--- PASS: TestInstallHook (0.02s)\nPASS\nok  \texample.org/hooks\t0.6s", "Bash",
                 {"command": "go test ./hooks/... -v"}),
                ("Function main not found! Instead, here is the disassembly of equivalent "
                 "function FUN_00401136:\n.text:00401136   55   PUSH RBP", "disassemble",
                 {"command": "disassemble warmup"}),
                ("the black flag waved\nthe French had killed the\nflag{own_flag}", "strings",
                 {"command": "strings disk.img | grep flag"})):
            with self.subTest(text=text[:20]):
                self.assertEqual("ok", step_outcome(text, False, tool, arguments))
        for text, arguments in (
                ("warning: unused variable `x`\nerror: aborting due to 1 previous error",
                 {"command": "cargo build"}),
                ("strings: 'disk.img': No such file", {"command": "strings disk.img | grep flag"})):
            with self.subTest(text=text[:20]):
                self.assertEqual("failed", step_outcome(text, False, "Bash", arguments))

    def test_a_reading_command_whose_first_line_is_a_non_zero_exit(self):
        for text, tool, arguments in (
                ("Exit code 1\nwc: src/state.go: open: No such file or directory", "Bash",
                 {"command": "wc -l src/state.go"}),
                ("Exit code 128\nfatal: unable to read 3f1c", "Bash", {"command": "git status"}),
                ("ENOENT: no such file or directory, posix_spawn '/opt/tool/rg'", "Grep",
                 {"pattern": "main"})):
            with self.subTest(text=text[:20]):
                self.assertEqual("failed", step_outcome(text, False, tool, arguments))


def run_measure_real_logs(argv: list[str]) -> str:
    """scripts/bench/measure_real_logs.py's main, called with argv; what it printed."""
    import contextlib
    import importlib.util
    import io
    spec = importlib.util.spec_from_file_location(
        "measure_real_logs", HERE.parent / "scripts" / "bench" / "measure_real_logs.py")
    measure = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(measure)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        measure.main(argv)
    return printed.getvalue()


class MeasureRealLogsTest(unittest.TestCase):
    """scripts/bench/measure_real_logs.py scores against the log's labels and the hand labels."""

    def measured_with(self, labels_text: str) -> str:
        """measure_real_logs.py on the Cline fixture, with these hand labels."""
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            labels = Path(tmp) / "labels.tsv"
            labels.write_text(labels_text, encoding="utf-8")
            return run_measure_real_logs([str(OUTCOMES / "cline-2026-steps"), "--hand-labels",
                                          str(labels)])

    def test_a_hand_label_replaces_the_logs_label(self):
        # the log records no failure; by hand, the server's start failed (its port was taken)
        out = self.measured_with("# own\ncline-2026-steps/api_conversation_history.json\t"
                                 "toolu_own_c3\tfailed\tport taken\n")
        self.assertIn("1 of 1 hand labels used; 0 dev disagreements without one", out)
        by_log, by_hand = out.split("corrected by hand")
        self.assertIn("| cline | dev | 4 | 0.00 (0/1) | - (0/0) | 0.00 (0/1) | - (0/0) |", by_log)
        self.assertIn("| cline | dev | 4 | 1.00 (1/1) | 1.00 (1/1) | 1.00 (1/1) | 1.00 (1/1) |",
                      by_hand)

    def test_an_unsure_verdict_counts_as_that_verdict(self):
        out = self.measured_with("cline-2026-steps/api_conversation_history.json\t"
                                 "toolu_own_c3\tok?\tstill running, maybe\n")
        by_hand = out.split("corrected by hand")[1]
        self.assertIn("| cline | dev | 4 | 0.00 (0/1) | - (0/0) | 0.00 (0/1) | - (0/0) |", by_hand)

    def test_the_held_out_half_is_listed_for_a_labeller_and_scored_by_hand(self):
        import shutil
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            # report.json falls in the held-out half (the sha256 of the name is odd)
            folder = Path(tmp) / "own-logs"
            folder.mkdir()
            log = shutil.copy(OUTCOMES / "responses-json-test-report.json", folder / "report.json")
            labels = Path(tmp) / "labels.tsv"
            labels.write_text("# none yet\n", encoding="utf-8")
            unlabelled = run_measure_real_logs([str(log), "--hand-labels", str(labels),
                                                "--unlabelled-held-out"])
            labels.write_text("own-logs/report.json\tcall_t1\tfailed\t2 tests fail\n",
                              encoding="utf-8")
            labelled = run_measure_real_logs([str(log), "--hand-labels", str(labels),
                                              "--unlabelled-held-out"])
            dev_only = run_measure_real_logs([str(log), "--hand-labels", str(labels),
                                              "--half", "dev"])
        self.assertIn("0 dev disagreements without one, 1 held-out)", unlabelled)
        self.assertIn("without a hand label (1):\n- own-logs/report.json\tcall_t1\trun_tests: "
                      "log ok, text failed\n  call: '{\"suite\": \"billing-contract\"}'\n"
                      "  result: '{\"suite\": \"billing-contract\", \"passed\": 37", unlabelled)
        by_hand = labelled.split("corrected by hand")[1]
        self.assertIn("1 of 1 hand labels used; 0 dev disagreements without one, 0 held-out)",
                      by_hand)
        self.assertIn("| openai-responses | held-out | 2 | 1.00 (1/1) | 1.00 (1/1) ", by_hand)
        self.assertIn("without a hand label (0):", by_hand)
        self.assertIn("0 of 0 hand labels used", dev_only)
        self.assertNotIn("held-out", dev_only)

    def test_the_hand_labels_are_well_formed(self):
        path = HERE / "labelled" / "real_steps.tsv"
        rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#")]
        self.assertGreater(len(rows), 0)
        for row in rows:
            with self.subTest(row=row[:2]):
                self.assertEqual(4, len(row))
                self.assertIn(row[2].removesuffix("?"), ("failed", "denied", "ok"))
                self.assertLessEqual(len(row[3]), 60)
        self.assertEqual(len(rows), len({(r[0], r[1]) for r in rows}))


if __name__ == "__main__":
    unittest.main()
