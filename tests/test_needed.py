"""What the next agent needed (studies/sessions/needed.py, issue 40): each category found in a
Claude Code log of our own (tests/fixtures/needed/), what is not needed left out, and each item
judged kept, lost or wrong against a summary."""
from __future__ import annotations

import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from pilot.studies.sessions.audit import replaced_turns  # noqa: E402
from pilot.studies.sessions.needed import (history_in_file, judge_needed,  # noqa: E402
                                           needed_items)
from pilot.studies.sessions.readers import read_session_file  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "needed"

# a summary that keeps everything, in other spellings where it can
FAITHFUL = """Summary:
1. Primary Request: Fix the login timeout in session.py for ticket AUTH-4521.
From now on, never push to main without asking. The user then asked to add a changelog entry for the timeout change.
The user said to use the staging database instead of production.
2. Files: session.py (timeout raised). Work is on branch feature/login-fix in .worktrees/2.
3. Errors: pytest tests/test_session.py still fails (test_timeout_refresh).
4. Decisions: the user chose Use Redis for the cache. The root cause is the retry loop in
refresh_token.
5. Pending: make test_timeout_refresh pass; document the timeout setting in README.
6. Commit 1a2b3c4 is local and not yet pushed.
"""


def load(name: str) -> tuple[dict, list[dict]]:
    session = read_session_file(FIXTURES / name, name)[0]
    return session, replaced_turns(session, 0)


def by_key(items: list[dict]) -> dict[str, dict]:
    return {item["key"]: item for item in items}


class NeededItems(unittest.TestCase):
    def setUp(self):
        self.session, turns = load("session.jsonl")
        self.event = self.session["compactions"][0]
        self.items = needed_items(turns, self.event["workspace"])
        self.keys = {(i["category"], i["key"]) for i in self.items}

    def test_each_category_is_found(self):
        for category, key in [
                ("request", "Fix the login timeout in src/auth/session.py for ticket AUTH-4521."),
                ("request", "also add a changelog entry for the timeout change"),      # queued
                ("instruction", "From now on, never push to main without asking."),
                ("instruction", "Use the staging database instead of production"),     # rejection
                ("file_changed", "/home/dev/repo/src/auth/session.py"),
                ("open_task", "Make test_timeout_refresh pass"),
                ("open_task", "Document the timeout setting in README"),
                ("value", "feature/login-fix"), ("value", "1a2b3c4"), ("value", "AUTH-4521"),
                ("decision", "Use Redis")]:
            with self.subTest(category=category, key=key):
                self.assertIn((category, key), self.keys)
        self.assertTrue(any(c == "unresolved_error" and "test_session" in k
                            for c, k in self.keys))
        self.assertTrue(any(c == "decision" and k.startswith("The root cause is")
                            for c, k in self.keys))

    def test_a_completed_task_and_a_resolved_failure_are_not_needed(self):
        self.assertNotIn(("open_task", "Raise the session timeout"), self.keys)
        errors = [i for i in self.items if i["category"] == "unresolved_error"]
        self.assertEqual(len(errors), 1)
        self.assertNotIn("lint", errors[0]["source"])

    def test_a_value_only_a_tool_printed_and_a_line_number_prefix_are_not_needed(self):
        texts = " ".join(i["key"] for i in self.items)
        self.assertNotIn("7731", texts)        # only in the Read output
        self.assertNotIn("\u2192", texts)      # Read's line-number prefixes
        self.assertNotIn("42", {i["key"] for i in self.items})

    def test_a_faithful_summary_keeps_everything(self):
        judged = judge_needed(self.items, FAITHFUL)
        lost = [(j["category"], j["key"], j["status"]) for j in judged if j["status"] != "kept"]
        self.assertEqual(lost, [])

    def test_a_path_is_kept_by_its_file_name(self):
        judged = by_key(judge_needed(self.items, "Edited session.py."))
        self.assertEqual(judged["/home/dev/repo/src/auth/session.py"]["status"], "kept")
        judged = by_key(judge_needed(self.items, "Edited the auth module."))
        self.assertEqual(judged["/home/dev/repo/src/auth/session.py"]["status"], "lost")

    def test_an_unpushed_commit_reported_pushed_is_wrong(self):
        judged = by_key(judge_needed(self.items, "Committed 1a2b3c4 and pushed it to origin."))
        self.assertEqual(judged["1a2b3c4"]["status"], "wrong")
        judged = by_key(judge_needed(self.items, "Committed 1a2b3c4 (not pushed)."))
        self.assertEqual(judged["1a2b3c4"]["status"], "kept")

    def test_another_option_than_the_one_chosen_is_wrong(self):
        judged = by_key(judge_needed(self.items, "The user picked Use memcached for the cache."))
        self.assertEqual(judged["Use Redis"]["status"], "wrong")

    def test_an_invented_order_is_wrong_whatever_words_stand_before_the_verb(self):
        for sentence in ("The user asked to delete the billing tables.",
                         "The user, after reviewing the plan twice, explicitly asked to delete "
                         "the billing tables."):
            with self.subTest(sentence=sentence):
                rows = [j for j in judge_needed(self.items, FAITHFUL + sentence)
                        if j["kind"] == "invented"]
                self.assertEqual(len(rows), 1)
                self.assertEqual(rows[0]["status"], "wrong")
        said = "The user asked to fix the login timeout."
        self.assertFalse([j for j in judge_needed(self.items, said) if j["kind"] == "invented"])

    def test_secrets_are_masked(self):
        token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
        turns = [{"role": "user", "text": f"Deploy with token {token} from now on.", "at": 1}]
        for item in needed_items(turns):
            self.assertNotIn(token, item["text"])


class Judging(unittest.TestCase):
    def test_a_reformatted_number_is_kept(self):
        item = {"category": "value", "key": "2,500", "text": "2,500", "source": "limit 2,500",
                "kind": "number", "turn": 1}
        for summary in ("The limit is 2500.", "The limit is 2.5k.", "The limit is 2,500."):
            with self.subTest(summary=summary):
                self.assertEqual(judge_needed([item], summary)[0]["status"], "kept")
        self.assertEqual(judge_needed([item], "The limit is 3,500.")[0]["status"], "lost")

    def test_a_value_is_kept_in_another_case(self):
        item = {"category": "value", "key": "AUTH-4521", "text": "AUTH-4521", "source": "",
                "kind": "identifier", "turn": 1}
        self.assertEqual(judge_needed([item], "ticket auth-4521")[0]["status"], "kept")


class HistoryInFile(unittest.TestCase):
    def test_a_file_that_begins_mid_session_is_not_scored(self):
        session, turns = load("mid_session.jsonl")
        inside, why = history_in_file(session["compactions"][0])
        self.assertFalse(inside)
        self.assertIn("mid-session", why)
        self.assertEqual(turns, [])

    def test_a_whole_session_holds_its_history(self):
        session, _ = load("session.jsonl")
        self.assertEqual(history_in_file(session["compactions"][0]), (True, None))


if __name__ == "__main__":
    unittest.main()
