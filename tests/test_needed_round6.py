"""What the next agent needed, sixth round (issue 40; protocol/SESSIONS.md, the amendment of
2026-12-06 (21)): a resumed file whose first model call already held the history, one failure per
check that still fails (with what failed), the harness's notices and a program's pasted text not
read as the user's, and the work the agent said it was about to do, reported done, misstated."""
from __future__ import annotations

import json
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from test_needed import agent, result, user  # noqa: E402
from pilot.studies.sessions.needed import (history_in_file, judge_needed, machine_text,  # noqa
                                           needed_items)
from pilot.studies.sessions.readers import read_session_file  # noqa: E402


def claude_log(folder: str, first_context: int, pre_tokens: int, turns: int = 12) -> Path:
    """A Claude Code file that begins mid-session (its first line's parent is not in it): `turns`
    exchanges, the first model call's context `first_context` tokens, then a boundary that says it
    replaced `pre_tokens`."""
    lines, parent = [], "outside-0"
    for n in range(turns):
        lines.append({"parentUuid": parent, "type": "user", "uuid": f"u{n}", "sessionId": "s6",
                      "message": {"role": "user", "content": f"step {n}: rename the {n}th "
                                                             "handler"}})
        lines.append({"parentUuid": f"u{n}", "type": "assistant", "uuid": f"a{n}",
                      "sessionId": "s6",
                      "message": {"role": "assistant", "id": f"m{n}",
                                  "usage": {"input_tokens": 3, "cache_read_input_tokens":
                                            first_context + 900 * n,
                                            "cache_creation_input_tokens": 200},
                                  "content": [{"type": "text", "text": f"Renamed handler {n}."}]}})
        parent = f"a{n}"
    lines.append({"parentUuid": None, "logicalParentUuid": parent, "type": "system",
                  "subtype": "compact_boundary", "uuid": "b1", "content": "Conversation compacted",
                  "compactMetadata": {"trigger": "auto", "preTokens": pre_tokens}})
    lines.append({"parentUuid": "b1", "type": "user", "uuid": "s1", "isCompactSummary": True,
                  "message": {"role": "user", "content": "Summary: handlers renamed."}})
    path = Path(folder) / "resumed.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


class HistoryInFileTest(unittest.TestCase):
    def test_a_resumed_file_whose_first_call_held_nearly_all_of_it_is_not_scored(self):
        with tempfile.TemporaryDirectory() as folder:
            event = read_session_file(claude_log(folder, 140_000, 155_000),
                                      "resumed.jsonl")[0]["compactions"][0]
            inside, why = history_in_file(event)
        self.assertFalse(inside)
        self.assertIn("already held 140,203 of the 155,000 tokens", why)

    def test_one_that_holds_more_than_a_fifth_of_it_is_scored(self):
        # (a fresh session's first call holds about a fifth: its system prompt and tools)
        with tempfile.TemporaryDirectory() as folder:
            for first in (40_000, 110_000):
                event = read_session_file(claude_log(folder, first, 155_000),
                                          "resumed.jsonl")[0]["compactions"][0]
                self.assertEqual(history_in_file(event), (True, None), first)


class FailuresTest(unittest.TestCase):
    OUTPUT = ("=== RUN   TestHoldOverLimit\n--- FAIL: TestHoldOverLimit (0.01s)\n"
              "    hold_test.go:41: expected status held, got dropped\n"
              "--- FAIL: TestExportHeader (0.00s)\n    export_test.go:12: want 7 columns, got 6\n"
              "FAIL\nFAIL\texample.com/ledger\t0.31s\nFAIL")

    def test_one_item_per_check_still_failing_says_what_failed(self):
        run = {"command": "go test ./... 2>&1 | head -80"}
        tail = {"command": "go test ./... 2>&1 | tail -5"}
        turns = [user("Hold invoices over the limit instead of dropping them"),
                 agent(("Bash", run)), {**result("Bash", run, self.OUTPUT), "error": True},
                 agent(("Bash", tail)),
                 {**result("Bash", tail, "    export_test.go:12: want 7 columns, got 6\nFAIL\n"
                                         "FAIL\texample.com/ledger\t0.30s"), "error": True}]
        failed = [i for i in needed_items(turns) if i["category"] == "unresolved_error"]
        self.assertEqual([i["key"] for i in failed], ["go test ./..."])
        # the last run's lines, then those of the same check an earlier view printed
        self.assertEqual(failed[0]["source"].splitlines(),
                         ["go test ./... 2>&1 | tail -5", "export_test.go:12: want 7 columns, got 6",
                          "--- FAIL: TestHoldOverLimit (0.01s)",
                          "hold_test.go:41: expected status held, got dropped",
                          "--- FAIL: TestExportHeader (0.00s)"])

    def test_a_later_run_of_the_same_kind_of_check_supersedes_an_earlier(self):
        first, second = {"command": "pytest tests/test_hold.py"}, {"command": "pytest -q"}
        turns = [user("Fix the hold job"),
                 agent(("Bash", first)), {**result("Bash", first, "FAILED a"), "error": True},
                 agent(("Bash", second)), {**result("Bash", second, "FAILED b"), "error": True}]
        self.assertEqual([i["key"] for i in needed_items(turns)
                          if i["category"] == "unresolved_error"], ["pytest -q"])


class UsersWordsTest(unittest.TestCase):
    def test_a_harness_notice_gives_no_value(self):
        turns = [user("Ship ticket PAY-2231 today"),
                 user("<task-notification>\n<task-id>a3e3b71</task-id>\n<status>completed"
                      "</status>\n</task-notification>")]
        values = [i["key"] for i in needed_items(turns) if i["category"] == "value"]
        self.assertIn("PAY-2231", values)
        self.assertNotIn("a3e3b71", values)

    def test_a_programs_text_pasted_by_the_user_is_no_instruction(self):
        for line in ["Feb  9 09:07:20.570 |DEBU| attribution: none", "2026-02-01 10:00:01 INFO "
                     "keep alive", 'HOLD_LIMIT = "5000"', '"retries": 3,',
                     "Keeping test repo at: /var/tmp/x1", "Useful commands:"]:
            with self.subTest(line=line):
                self.assertTrue(machine_text(line))
        for line in ["Never push to main.", "Keep the counter per job.", "Use pnpm, not npm."]:
            with self.subTest(line=line):
                self.assertFalse(machine_text(line))
        pasted = ("the lint job failed again, here is the log:\n"
                  "Running [/home/runner/golangci-lint run] in [/home/runner/work]\n"
                  "Keeping test repo at: /var/tmp/x1\nalways run the linter before you push")
        instructions = [i["key"] for i in needed_items([user(pasted)])
                        if i["category"] == "instruction"]
        self.assertTrue(any("always run the linter" in k for k in instructions), instructions)
        self.assertFalse([k for k in instructions if "Running" in k or "Keeping" in k])


class IntentTest(unittest.TestCase):
    def turns(self, last: str) -> list[dict]:
        edit = {"file_path": "/srv/ledger/hold.go", "old_string": "a", "new_string": "b"}
        return [user("Convert the hold job to the new queue"), agent(("Edit", edit)),
                result("Edit", edit, "The file /srv/ledger/hold.go has been updated."),
                agent(text=last)]

    def test_what_the_agent_was_about_to_do_is_an_open_task(self):
        items = needed_items(self.turns("Hold.go is converted. Next I need to convert the export "
                                        "job in export.go to the new queue. Let me check the "
                                        "tests first."))
        tasks = [i for i in items if i["category"] == "open_task"]
        self.assertEqual([i["key"] for i in tasks],
                         ["Next I need to convert the export job in export.go to the new queue."])
        said = {"lost": "Converted hold.go to the new queue.",
                "kept": "Hold.go is converted; still to do: convert the export job in export.go "
                        "to the new queue.",
                "wrong": "Converted the export job in export.go to the new queue."}
        for status, summary in said.items():
            with self.subTest(status=status):
                self.assertEqual(judge_needed(tasks, summary)[0]["status"], status)


if __name__ == "__main__":
    unittest.main()
