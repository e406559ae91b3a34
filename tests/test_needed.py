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
from pilot.studies.sessions.audit_needed import needed_rows  # noqa: E402
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


def user(text: str) -> dict:
    return {"role": "user", "text": text}


def agent(*calls: tuple[str, dict], text: str = "") -> dict:
    return {"role": "assistant", "text": text,
            "calls": [{"id": f"c{i}", "name": n, "input": a} for i, (n, a) in enumerate(calls)]}


def result(name: str, args: dict, text: str) -> dict:
    return {"role": "tool", "tool": name, "call": {"name": name, "input": args}, "text": text,
            "error": False}


PLAN = """# Add a status line

## Steps
1. Add `lastSeen` to the session state
2. Print it in `status`

## Verification
1. `make test`
2. Unit test for `timeAgo` - formats minutes and hours
3. Manual test: run `app status` in a repo with two worktrees
"""


class SecondRound(unittest.TestCase):
    """The rules of the second round, adopted with the third (protocol/SESSIONS.md, the amendments
    of 2026-12-06): staged files, a scratch repository's commit, a plan's checks, a request's
    directive."""

    def test_a_file_staged_by_name_is_changed_once(self):
        command = "git add src/a.py docs/b.md && git commit -m x"
        turns = [user("commit the subagent's work"),
                 agent(("Edit", {"file_path": "/repo/src/a.py", "old_string": "1",
                                 "new_string": "2"})),
                 result("Edit", {"file_path": "/repo/src/a.py"}, "The file has been updated"),
                 agent(("Bash", {"command": command})),
                 result("Bash", {"command": command}, "[feature/x 1a2b3c4] x")]
        files = [i["key"] for i in needed_items(turns) if i["category"] == "file_changed"]
        self.assertEqual(files, ["/repo/src/a.py", "docs/b.md"])   # a.py not twice

    def test_a_commit_in_a_scratch_repository_is_no_value_of_the_work(self):
        command = "cd /tmp/t && git init && echo a > f.txt && git add f.txt && git commit -m a"
        turns = [user("check how git restore behaves"), agent(("Bash", {"command": command})),
                 result("Bash", {"command": command}, "[main (root-commit) 5dffb3a] a")]
        keys = {i["key"] for i in needed_items(turns)}
        self.assertNotIn("5dffb3a", keys)
        self.assertNotIn("f.txt", keys)

    def plan_turns(self, *done: str) -> list[dict]:
        tasks = [("TaskCreate", {"subject": "Add lastSeen to the session state"}),
                 ("TaskCreate", {"subject": "Print lastSeen in status",
                                 "description": "Unit tests for timeAgo; run make test"})]
        turns = [user("Implement the following plan:\n\n" + PLAN), agent(*tasks)]
        for command in done:
            turns += [agent(("Bash", {"command": command})),
                      result("Bash", {"command": command}, "ok")]
        return turns

    def test_a_plans_check_no_task_took_up_is_an_open_task(self):
        steps = [i for i in needed_items(self.plan_turns()) if i["kind"] == "plan step"]
        self.assertEqual([i["key"] for i in steps],
                         ["Manual test: run `app status` in a repo with two worktrees"])
        summary = "Pending: none. The tasks are done and make test passes."
        self.assertEqual(judge_needed(steps, summary)[0]["status"], "lost")
        kept = "Still to do: a manual test, running app status in a repo with two worktrees."
        self.assertEqual(judge_needed(steps, kept)[0]["status"], "kept")

    def test_a_check_the_agent_ran_or_a_plan_without_tasks_gives_no_step(self):
        ran = needed_items(self.plan_turns("app status"))
        self.assertFalse([i for i in ran if i["kind"] == "plan step"])
        untaken = needed_items([user("Implement the following plan:\n\n" + PLAN)])
        self.assertFalse([i for i in untaken if i["kind"] == "plan step"])

    def test_a_directive_inside_a_request_is_judged_on_its_own(self):
        message = ("Can you handle several state files for one session? The new code should "
                   "reuse the file written today.")
        items = needed_items([user(message)])
        directive = [i for i in items if i["kind"] == "directive"]
        self.assertEqual(len(directive), 1)
        summary = ("The user asked to handle several state files for one session: the new code "
                   "looks them up by session and reuses the oldest file.")
        judged = by_key(judge_needed(items, summary))
        self.assertIn(judged[directive[0]["key"]]["status"], ("lost", "wrong"))
        self.assertEqual(judged["Can you handle several state files for one session?"]["status"],
                         "kept")
        said = summary.replace("the oldest file", "the file written today")
        self.assertEqual(by_key(judge_needed(items, said))[directive[0]["key"]]["status"], "kept")

    def test_a_pasted_message_gives_no_directive(self):
        pasted = "Here is the review:\n" + "The handler should never block. " * 30
        self.assertFalse([i for i in needed_items([user(pasted)]) if i["kind"] == "directive"])


PLAN_CHECKS = """# Fix the merge case

## Steps
1. Walk both parents of a merge commit

## Testing
New files:
- `merge_test.go`
- Add `TestMergeFromMain` to `explain_test.go` with a merge at HEAD
- This is the exact scenario that was broken
- Expected: FAILS before the fix

Manual test in `playground`:
  - commit after merging main and run `app explain`
"""


class ThirdRound(unittest.TestCase):
    """The third round (protocol/SESSIONS.md, the amendment of 2026-12-06, third round): a plan's
    checks are orders, not headings, outcomes or descriptions; a handed plan's item that forbids
    something is an instruction; a question orders nothing; the harness's text is not the user's;
    a call the user stopped without a word is an instruction; a finding says what was found; an
    order the summary recounts from a question or from the previous summary is not invented."""

    def test_a_plans_check_is_an_order_not_a_heading_an_outcome_or_a_description(self):
        turns = [user("Implement the following plan:\n\n" + PLAN_CHECKS),
                 agent(("TaskCreate", {"subject": "Walk both parents of a merge commit"}))]
        steps = [i["key"] for i in needed_items(turns) if i["kind"] == "plan step"]
        self.assertEqual(steps, [
            "Add `TestMergeFromMain` to `explain_test.go` with a merge at HEAD",
            "Manual test in `playground`:"])

    def test_a_handed_plans_item_that_forbids_something_is_an_instruction(self):
        plan = ("Implement the following plan:\n\n# Status shows sessions\n\n## Step 3\n"
                "- Add `timeAgo(t)`, a relative time formatter\n"
                "- No external dependencies (don't import go-humanize for this)\n" + "x " * 400)
        items = needed_items([user(plan)])
        forbids = [i for i in items if i["kind"] == "directive"]
        self.assertEqual([i["key"] for i in forbids],
                         ["No external dependencies (don't import go-humanize for this)"])
        summary = "The user asked to implement the status plan: timeAgo added in setup.go."
        self.assertEqual(judge_needed(forbids, summary)[0]["status"], "lost")
        kept = summary + " No external dependencies: go-humanize is not imported for this."
        self.assertEqual(judge_needed(forbids, kept)[0]["status"], "kept")

    def test_a_question_gives_no_directive(self):
        asked = ("Is there any reason we don't parse the stdin on entry? The stdin should be "
                 "parsed once, at entry.")
        directives = [i["key"] for i in needed_items([user(asked)]) if i["kind"] == "directive"]
        self.assertEqual(directives, ["The stdin should be parsed once, at entry."])

    def test_text_the_harness_writes_into_a_user_turn_is_not_the_users(self):
        turns = [user("<bash-input>git status</bash-input>"),
                 user("<bash-stdout>nothing to commit</bash-stdout><bash-stderr></bash-stderr>"),
                 user("/ide"), user("Base directory for this skill: /home/u/.claude/skills/pr\n\n"
                                    "# PR review\nRead every comment."),
                 user("<task-notification>\n<status>completed</status>\n</task-notification>"),
                 user("Fix the flaky merge test")]
        self.assertEqual([i["key"] for i in needed_items(turns) if i["category"] == "request"],
                         ["Fix the flaky merge test"])

    def test_a_call_the_user_stopped_without_a_word_is_an_order_not_to_go_on(self):
        args = {"command": "git commit -m 'Fix token counts'", "description": "Commit the fixes"}
        refused = result("Bash", args, "The user doesn't want to proceed with this tool use. The "
                                       "tool use was rejected. STOP what you are doing and wait "
                                       "for the user to tell you how to proceed.")
        refused["marked"] = "denied"
        items = needed_items([user("Fix the token counts"), agent(("Bash", args)), refused])
        stopped = [i for i in items if i["kind"] == "refusal"]
        self.assertEqual([(i["category"], i["key"]) for i in stopped],
                         [("instruction", "Commit the fixes")])
        self.assertFalse([i for i in items if i["category"] == "unresolved_error"])
        lost = "Fixed the token counts; next, commit the fixes and push."
        self.assertEqual(judge_needed(stopped, lost)[0]["status"], "lost")
        kept = "The user rejected the commit of the fixes: they will commit themselves."
        self.assertEqual(judge_needed(stopped, kept)[0]["status"], "kept")

    def test_a_finding_says_what_was_found(self):
        said = ("The fix is complete. The issue is becoming clearer. Decision: keep or reset? "
                "The issue is that the hook reads stdin twice.")
        findings = [i["key"] for i in needed_items([user("Why does the hook hang?"),
                                                    agent(text=said)])
                    if i["category"] == "decision"]
        self.assertEqual(findings, ["The issue is that the hook reads stdin twice."])

    def test_a_recounted_question_or_an_earlier_summarys_order_is_not_invented(self):
        earlier = {"role": "user", "summary": True,
                   "text": "Summary: the user asked to drop the legacy billing tables."}
        turns = [earlier, user("Fix the flaky merge test")]

        def invented(summary, history):
            return [r for r in needed_rows(history, None, summary, []) if r["kind"] == "invented"]
        for sentence in ("The user asked whether the legacy billing tables are still read.",
                         "The user asked about the legacy billing tables."):
            with self.subTest(sentence=sentence):
                self.assertFalse(invented(sentence, turns[1:]))
        recounted = "The user asked to drop the legacy billing tables."
        self.assertFalse(invented(recounted, turns))
        self.assertEqual(len(invented(recounted, turns[1:])), 1)


class AgentValues(unittest.TestCase):
    """Values the agent found or worked out and wrote in its own words (needed.py's value items,
    agent_values.py; protocol/SESSIONS.md, the amendment of 2026-12-06 (16))."""

    def values(self, turns: list[dict]) -> dict[str, dict]:
        return {i["key"]: i for i in needed_items(turns) if i["category"] == "value"}

    def judged(self, turns: list[dict], summary: str) -> dict[str, str]:
        items = [i for i in needed_items(turns) if i["category"] == "value"]
        return {i["key"]: i["status"] for i in judge_needed(items, summary)
                if i["category"] == "value"}

    def found_turns(self) -> list[dict]:
        log = "gh api repos/acme/app/pulls/77/comments"
        listing = '[{"id": 2734900755, "body": "nil check"}, {"id": 2734900762, "body": "typo"}]'
        said = ("The open comment is 2734900755 (the nil check, ticket ENT-512, about 40 ms). "
                "It came in with commit `4f2a9c1e`; `MAX_RETRIES_2` is the cause.\n"
                "```\ngh api repos/acme/app/pulls/77/comments/88888888888/replies\n```")
        reply = ("gh api repos/acme/app/pulls/77/comments/2734900755/replies -f body=ENT-512 "
                 "&& git show 4f2a9c1e && gh api .../comments/88888888888/replies")
        return [user("Answer the review of PR 77"), agent(("Bash", {"command": log})),
                result("Bash", {"command": log}, listing), agent(text=said),
                agent(("Bash", {"command": reply})),
                result("Bash", {"command": reply}, '{"id": 2734999001}'),
                agent(("Edit", {"file_path": "src/auth.py", "old_string": "40",
                                "new_string": "MAX_RETRIES_2 = 1"})),
                result("Edit", {"file_path": "src/auth.py"}, "The file has been updated"),
                agent(text="Replying to the rest now.")]

    def test_a_value_the_agent_found_and_passed_to_a_later_call_is_needed(self):
        values = self.values(self.found_turns())
        self.assertEqual({k: v["how_found"] for k, v in values.items()},
                         {"2734900755": "passed on", "ENT-512": "passed on"})
        # not the ids only the tool printed, a value in the agent's code block, an
        # approximation, a code name, a value written into a file's text, nor a commit the
        # agent passes on as it walks a history
        self.assertEqual(self.judged(self.found_turns(), "Answering comment 2734900755."),
                         {"2734900755": "kept", "ENT-512": "lost"})

    def test_a_value_stated_in_the_agents_last_words_is_needed(self):
        last = ("Done: coverage is now 87.5% and the suite takes 42 s (about 300 ms less). Opened "
                "https://github.com/acme/app/pull/77 (see https://docs.example.com/guide/setup).")
        turns = [user("Raise the coverage and open a pull request"), agent(text=last)]
        self.assertEqual(set(self.values(turns)),
                         {"87.5%", "42 s", "https://github.com/acme/app/pull/77"})
        summary = "Coverage reached 87.5%; PR #77 is open."
        self.assertEqual(self.judged(turns, summary),
                         {"87.5%": "kept", "42 s": "lost",
                          "https://github.com/acme/app/pull/77": "kept"})
        # last words that list more than a handful of values are a listing, not a result
        listing = "Checked: " + ", ".join(f"build {n} took {n} s" for n in range(20, 27))
        self.assertEqual(self.values([user("check the builds"), agent(text=listing)]), {})

    def test_a_value_of_the_agents_the_summary_gives_changed_is_misstated(self):
        turns = [user("Which commit broke login?"),
                 agent(text="The regression came in with commit `4f2a9c1e`.")]
        summary = "The regression came in with commit 4f2a9c1f."
        judged = judge_needed([self.values(turns)["4f2a9c1e"]], summary)
        self.assertEqual(judged[0]["status"], "wrong")
        self.assertIn("4f2a9c1f", judged[0]["summary_sentence"])
        # another value the history itself gives is no misstatement of this one
        turns.insert(1, agent(text="Not 4f2a9c1f, which only bumped the docs."))
        judged = judge_needed([self.values(turns)["4f2a9c1e"]], summary)
        self.assertEqual(judged[0]["status"], "lost")


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
