"""The sessions study's ground truth and the judging of a state (scripts/pilot/studies/sessions_truth.py, with the
value rules of scripts/pilot/values.py and the claim words of scripts/pilot/claims.py): every extraction rule on
hand-written sentences with the near misses it must leave; one fact, one value; a value kept only as a whole value of
its kind, and whether it stands beside its referent; standing instructions, their revocation and a state that says
their opposite; steps reported with their outcome or claimed done; secrets. Issue 30, points 10 to 13."""
import unittest

import helpers  # noqa: F401  (puts the runner's package on the path)
from pilot.rules import values
from pilot.studies.sessions import truth

# kind -> (sentences and the value each must yield), (near misses: sentences that must yield no value of the kind)
RULES = {
    "url": ([("See https://example.com/docs/setup?x=1 for details.", "https://example.com/docs/setup?x=1"),
             ("(mirror: http://mirror.example.org/pub/)", "http://mirror.example.org/pub/"),
             ("Uploaded to s3://acme-exports/2025-03/ today.", "s3://acme-exports/2025-03/")],
            ["The site example.com is down.", "www.example.com/about"]),
    "email": ([("Mail ops@example.com today.", "ops@example.com"),
               ("Copy dana.kim@northwind-corp.example.", "dana.kim@northwind-corp.example")],
              ["Log in as user@localhost.", "Ping @maria in the channel.", "Send it to me@"]),
    "path": ([("The test is in src/app/api.py.", "src/app/api.py"), ("Edit /etc/hosts first.", "/etc/hosts"),
              ("Run ./deploy.sh now.", "./deploy.sh"), ("Notes are in ~/notes/todo.md.", "~/notes/todo.md"),
              ("Open C:\\work\\report.txt.", "C:\\work\\report.txt"), ("Update README.md please.", "README.md"),
              ("Rotate /var/log/nginx today.", "/var/log/nginx"), ("Grep logs/2025-03-*.log now.", "logs/2025-03-*.log")],
             ["Use tabs and/or spaces.", "Speed is 80 km/h.", "Half is 1/2.", "Write to /tmp later.",
              "The TCP/IP stack.", "e.g. this, i.e. that.", "Merge origin/main now."]),
    "digest": ([("Commit 3f9a2c1d broke it.", "3f9a2c1d"), ("sha256:9e107d9d372bb6826bd81d3542a419d6 ok",
                                                            "9e107d9d372bb6826bd81d3542a419d6")],
               ["The placeholder deadbeef.", "Short hash abc12 only.", "Ticket ABC1234 is open.", "Mixed 3f9A2c1d case."]),
    "date": ([("Released on 2025-03-12.", "2025-03-12"), ("Due 12 March 2025.", "12 March 2025"),
              ("Due March 12, 2025.", "March 12, 2025"), ("Paid on 12/03/2025.", "12/03/2025"),
              ("At 2025-03-12T14:05:00Z it failed.", "2025-03-12T14:05:00Z"), ("By 3 May we ship.", "3 May"),
              ("Date:   Tue Mar 11 16:42:07 2025 +0100", "Tue Mar 11 16:42:07 2025 +0100"),
              ("It renews on the 14th.", "14th")],
             ["May I ask something?", "In March we met.", "Not a date: 2025-13-40.", "Version 1.2.3 only."]),
    "time": ([("The call is at 14:05.", "14:05"), ("Meet at 9:30 am.", "9:30 am"), ("Start at 3pm.", "3pm"),
              ("Window opens 03:30 UTC.", "03:30")],
             ["The ratio was 3:2.", "At 25:00 nothing.", "I am here.", "Read 8 amendments.", "10:30:99 is broken.",
              "at renderRows (/app/src/Table.tsx:88:21)"]),
    "version": ([("Upgrade to v2.3.1 now.", "v2.3.1"), ("We run nginx 1.24.0 there.", "1.24.0"),
                 ("Pin 1.24.0-rc.1 for now.", "1.24.0-rc.1"), ("Use version 3.11 please.", "3.11"),
                 ("Tag v2.3 exists.", "v2.3"), ("I'm on macOS 14.4 today.", "14.4")],
                ["Pi is 3.14 roughly.", "Server 192.168.1.10 answered.", "Listening on 0.0.0.0:8080."]),
    "amount": ([("Refund $1,249.00 today.", "$1,249.00"), ("It costs EUR 120.", "EUR 120"),
                ("That is 120 EUR in total.", "120 EUR"), ("Pay €18.50 a seat.", "€18.50"),
                ("About 48 dollars.", "48 dollars"), ("A budget of $5m.", "$5m")],
               ["Set $HOME first.", "Rates in USD vary.", "Print ${VAR}.", "The EUR desk."]),
    "identifier": ([("Order ORD-58213 shipped.", "ORD-58213"), ("Build for x86_64 only.", "x86_64"),
                    ("Ask gpt-4o about it.", "gpt-4o"), ("Payment pay_7Hq2x failed.", "pay_7Hq2x"),
                    ("Host 10.20.4.17 is up.", "10.20.4.17"), ("Fixed in #1873.", "#1873"),
                    ("References 7731-0042 and more.", "7731-0042"), ("The host db-stage-04.internal is slow.",
                                                                      "db-stage-04.internal"),
                    ("Open the PR against release/2.8 please.", "release/2.8"),
                    ("Run acme/api:1.14.2 there.", "acme/api:1.14.2"), ("Call +44 7700 900123 today.",
                                                                       "+44 7700 900123")],
                   ["The 2nd and 10th runs.", "It used 5GB and 20ms.", "A 3D view.", "Plain words only.",
                    "sha256 of the tarball", "pinned urllib3 and python3", "p95 latency is fine", "2FA for admins"]),
    "number": ([("We had 1,204 responses.", "1,204"), ("It took 3.5 seconds.", "3.5 seconds"),
                ("Share was 45%.", "45%"), ("Memory is 512MB now.", "512MB"), ("Delta -12 points.", "-12"),
                ("Exit code 403 came.", "403"), ("Ship 2 boxes.", "2"), ("Set the pool to 8.", "8"),
                ("MAX_RETRIES=5 here.", "5")],
               ["The list 1,2,3 follows.", "The 2nd try.", "==== 2 failed, 30 passed in 12.84s ====",
                "total = subtotal * (1 - rate)", "[18342:0x5e1c2a0] 412331 ms: Mark-Compact",
                " 3 files changed, 41 insertions(+), 7 deletions(-)", "READY 0/1"]),
}


class ExtractionRuleTest(unittest.TestCase):
    def test_every_rule_takes_its_values_and_leaves_its_near_misses(self):
        for kind, (positives, near_misses) in RULES.items():
            for sentence, value in positives:
                with self.subTest(kind=kind, sentence=sentence):
                    self.assertIn((kind, value), [(v.kind, v.text) for v in truth.extract_values(sentence)])
            for sentence in near_misses:
                with self.subTest(kind=kind, near_miss=sentence):
                    found = [v.text for v in truth.extract_values(sentence) if v.kind == kind]
                    if kind == "number" and "12.84s" in sentence:      # the counts stay, the elapsed time goes
                        self.assertEqual(found, ["2", "30"])
                    else:
                        self.assertEqual(found, [])

    def test_a_span_belongs_to_the_first_rule_that_takes_it(self):
        text = "See https://example.com:8443/a/b.py and /var/log/2025-03-12.log at v1.2.3."
        self.assertEqual([(v.kind, v.text) for v in truth.extract_values(text)],
                         [("url", "https://example.com:8443/a/b.py"), ("path", "/var/log/2025-03-12.log"),
                          ("version", "v1.2.3")])

    def test_a_value_keeps_the_sentence_it_came_from(self):
        text = "First we looked. The total was 1,247 in March. Then we left."
        value, = truth.extract_values(text)
        self.assertEqual(values.sentence_around(text, value.start, value.end), "The total was 1,247 in March.")


def facts(*texts: str, role: str = "user") -> list[dict]:
    return truth.ground_truth([{"role": role, "text": t, "calls": [], "tool": "Bash", "error": False, "call": None}
                               for t in texts])["values"]


class OneFactOneValueTest(unittest.TestCase):
    """Point 13: a fact written several ways is one value; fragments, labels, algorithm names, host fragments and
    pasted secrets are none."""

    def test_restatements_are_one_value(self):
        found = facts("Customer on ticket SUP-44817 wants a refund of $1,249.00 for order ORD-58213; the admin panel "
                      "shows the order total as 1249.00 and the CSV export has 1249.0.")
        self.assertEqual([f["text"] for f in found], ["SUP-44817", "$1,249.00", "ORD-58213"])
        self.assertEqual(found[1]["forms"], ["1249.00", "1249.0"])
        self.assertEqual([f["text"] for f in facts("Tag v5.0.0 was cut; npm shows 5.0.0.")], ["v5.0.0"])
        self.assertEqual(len(facts("Refund $1,249.00 please.", "The tool says 1249.00 USD.")), 1)

    def test_noise_is_no_value(self):
        for text in ("sha256 of the release tarball", "token is ghp_R7tY2uI9oP3aS5dF8gH1jK4lZ6xC0vB2nM7q",
                     "password: hunter2x", "The retries live in MAX_RETRIES.", "Use OAuth2 and S3."):
            with self.subTest(text):
                self.assertEqual(facts(text), [])
        host = facts('connection to server at "db-stage-04.internal" (10.20.4.17), port 5432 failed', role="tool")
        self.assertEqual([f["text"] for f in host], ["db-stage-04.internal", "10.20.4.17", "5432"])

    def test_an_example_of_a_form_is_no_value(self):
        found = facts("The form accepts 7-digit numbers such as 555-0142, e.g. 555-0199; ours is 555-01428.")
        self.assertEqual([f["text"] for f in found], ["555-01428"])

    def test_a_value_given_as_a_former_one_is_marked_so(self):
        found = {f["text"]: f["current"] for f in facts("Median latency dropped from 840 ms to 310 ms.",
                                                        "The meeting moved to 9:30 am (it was 11:00).")}
        self.assertEqual(found, {"840 ms": False, "310 ms": True, "9:30 am": True, "11:00": False})

    def test_a_value_knows_its_referent(self):
        found = {f["text"]: f["referent"] for f in facts("Refund $1,249.00 for order ORD-58213 on ticket SUP-44817.")}
        self.assertIn("refund", found["$1,249.00"])
        self.assertIn("order", found["ORD-58213"])
        self.assertIn("ticket", found["SUP-44817"])


class JudgeValuesTest(unittest.TestCase):
    """Point 10: a value is kept only as a whole value of its kind, and whether it stands beside its referent is
    reported apart."""
    TRANSCRIPT = ("Refund $1,249.00 for order ORD-58213, ticket SUP-44817. The batch had 12 rows. "
                  "Commit 3f9a2c1d of src/app/api.py, version 2.3.1.")

    def judge(self, state: str) -> dict:
        truth_ = truth.ground_truth([{"role": "user", "text": self.TRANSCRIPT}])
        text_of = {v["id"]: v["text"] for v in truth_["values"]}
        return {text_of[v["id"]]: v for v in truth.judge_state(truth_, state)["values"]}

    def test_a_digit_inside_another_value_is_not_kept(self):
        judged = self.judge("At 12:30 order ORD-12 was due on 12/03/2025.")
        self.assertEqual(judged["12"]["status"], "dropped")

    def test_kept_reformatted_changed_and_dropped(self):
        judged = self.judge("Refund USD 1249 for order ORD-58213; commit 3f9a2c1; the batch had 12 rows.")
        self.assertEqual({k: v["status"] for k, v in judged.items()},
                         {"$1,249.00": "reformatted", "ORD-58213": "kept", "SUP-44817": "dropped", "12": "kept",
                          "3f9a2c1d": "changed", "src/app/api.py": "dropped", "2.3.1": "dropped"})
        self.assertEqual(judged["3f9a2c1d"]["instead"], "3f9a2c1")

    def test_a_value_moved_to_another_name_is_kept_but_not_beside_its_referent(self):
        right = self.judge("order ORD-58213; ticket SUP-44817; refund $1,249.00")
        swapped = self.judge("order SUP-44817; ticket ORD-58213 - and separately: $1,249.00")
        bare = self.judge("ORD-58213, SUP-44817, $1,249.00, 12, 3f9a2c1d, src/app/api.py, 2.3.1")
        for name in ("ORD-58213", "SUP-44817", "$1,249.00"):
            with self.subTest(name):
                self.assertEqual((right[name]["status"], right[name]["beside"]), ("kept", True))
                self.assertEqual((swapped[name]["status"], swapped[name]["beside"]), ("kept", False))
                self.assertEqual((bare[name]["status"], bare[name]["beside"]), ("kept", False))

    def test_a_value_the_regimes_own_prompt_gives_is_no_change(self):
        truth_ = truth.ground_truth([{"role": "user", "text": "We had 1,204 responses."}])
        state = "Use at most 120 words."
        self.assertEqual(truth.judge_state(truth_, state)["values"][0]["status"], "changed")
        self.assertEqual(truth.judge_state(truth_, state, prompt="at most 120 words")["values"][0]["status"],
                         "dropped")


def user(*texts: str) -> list[dict]:
    return [{"role": "user", "text": t} for t in texts]


class InstructionTest(unittest.TestCase):
    def test_standing_instructions_and_their_near_misses(self):
        yes = ["From now on, never push to main.", "Never push directly to main.", "Always CC ops@example.com.",
               "You should always run the linter first.", "We never deploy on Fridays.",
               "Until I say otherwise, keep the old endpoint.", "Deploy only from the release branch from now on.",
               "For the rest of this session, answer in English.", "Don't ever touch prod, always use staging.",
               "Please always ask before deleting files.", "Whenever a test fails, stop and tell me.",
               "Tabs, not spaces, in this repo.", "If the build fails, don't retry more than twice.",
               "Could you always log the request id from now on?",
               "Don't deploy anything today.", "No force-pushes today.",     # a day is a stretch of the session
               "All prices go in EUR.", "Every PR needs a changelog entry.", "Check with me before deleting anything.",
               "Run the linter before you push.", "Leave the legacy tests alone."]
        no = ["Refund $1,249.00 today.", "All tests pass now.", "Every time I open the dashboard it logs me out.",
              "I never push on Fridays.", "The build always fails on CI.", "Does it always fail?",
              "It kept failing for the rest of the day.", "Tests always fail on CI.", "CI always fails.",
              "Push the branch.", "Wait until it finishes.", "We deployed it on Friday.",
              "Never mind, I fixed it myself.", "From now on it should work, I restarted the VPN.",
              "Don't worry about it.", "Make the parser never return None.",
              "Use the staging key for this one call."]
        for sentence in yes:
            with self.subTest(instruction=sentence):
                self.assertTrue(truth.is_standing_instruction(sentence))
        for sentence in no:
            with self.subTest(near_miss=sentence):
                self.assertFalse(truth.is_standing_instruction(sentence))

    def test_a_withdrawn_instruction_is_no_longer_ground_truth(self):
        """Point 11: "forget what I said about pnpm" withdraws the pnpm rule; a correction replaces the value."""
        found = truth.ground_truth(user("From now on use pnpm for installs.",
                                        "Forget what I said about pnpm, use npm."))["instructions"]
        self.assertEqual([(i["text"], i["revoked_turn"]) for i in found],
                         [("From now on use pnpm for installs.", 2), ("Forget what I said about pnpm, use npm.", None)])
        judged = truth.judge_state({"instructions": found, "values": [], "steps": []}, "Use npm for installs.")
        self.assertEqual([i["id"] for i in judged["instructions"]], [2])
        corrected = truth.ground_truth(user("Use port 8080 for the dev server from now on.",
                                            "Actually the port is 8443, not 8080."))
        self.assertEqual(corrected["instructions"][0]["revoked_turn"], 2)
        self.assertEqual(truth.judge_state(corrected, "Dev server port: 8080.")["instructions"][0]["status"],
                         "contradicted")
        self.assertEqual(truth.ground_truth(user("Never push to main.", "OK, you can push this one hotfix to main, "
                                                 "just this once."))["instructions"][0]["revoked_turn"], None)

    def test_a_state_that_says_the_opposite_is_contradicted_not_kept(self):
        """Point 11: key terms are present in "pushed straight to main", which says the opposite of the rule."""
        for rule, state in (("Never push to main.", "Pushed the fix straight to main."),
                            ("Always ask me before deleting any file.", "The user no longer needs to be asked before "
                                                                        "files are deleted."),
                            ("Don't email customers directly; draft the replies.", "Emailed the customer directly."),
                            ("Always show me the terraform plan before any apply.",
                             "Next time, apply first and show the plan afterwards.")):
            truth_ = truth.ground_truth(user(rule))
            with self.subTest(state):
                self.assertEqual(truth.judge_state(truth_, state)["instructions"][0]["status"], "contradicted")
        truth_ = truth.ground_truth(user("Never push to main."))
        for state, status in (("Never push to main (the user's rule).", "present"),
                              ("No pushes to main; PRs only.", "present"), ("Nothing about it.", "absent")):
            with self.subTest(state):
                self.assertEqual(truth.judge_state(truth_, state)["instructions"][0]["status"], status)


def tool_turns(*calls: tuple) -> list[dict]:
    """(tool, arguments, result, is_error) -> an assistant turn with the call and the tool turn with its result."""
    turns = []
    for tool, arguments, result, error in calls:
        call = {"name": tool, "input": arguments}
        turns += [{"role": "assistant", "text": "", "calls": [call]},
                  {"role": "tool", "tool": tool, "text": result, "error": error, "call": call}]
    return turns


class StepTest(unittest.TestCase):
    def test_failed_denied_and_ok_results(self):
        cases = [("FAILED tests/test_api.py::test_total - AssertionError", False, "failed"),
                 ("Traceback (most recent call last):\nNameError: x", False, "failed"),
                 ("Error: connection refused", False, "failed"), ("exit code 2", False, "failed"),
                 ("SMTP error 550: mailbox unavailable", False, "failed"), ("all good", True, "failed"),
                 ("npm ERR! code E404\nnpm ERR! 404 Not Found", False, "failed"), ("HTTP 500 Internal", None, "failed"),
                 ("Segmentation fault (core dumped)", None, "failed"), ('{"status": "error"}', False, "failed"),
                 ('{"ok": false, "error": "validation_error"}', False, "failed"),
                 ("ls: cannot open directory '/root/.ssh': Permission denied", True, "failed"),
                 ("remote: Permission to org/repo.git denied to bot.", False, "failed"),
                 ("The user doesn't want to proceed with this tool use.", False, "denied"),
                 ("Claude requested permissions to use Bash, but you haven't granted it yet.", True, "denied"),
                 ("Blocked: this command matches a deny rule in the project settings.", True, "denied"),
                 ("5 passed, 0 failed in 1.2s", False, "ok"), ("no errors found", False, "ok"),
                 ("error handling added to the parser", False, "ok"), ("exit code 0", False, "ok"),
                 ("Access granted.", False, "ok")]
        for text, is_error, outcome in cases:
            with self.subTest(text):
                self.assertEqual(truth.step_outcome(text, is_error), outcome)

    def test_a_403_or_an_error_that_is_what_a_call_read_is_no_outcome(self):
        self.assertEqual(truth.step_outcome("Issue #403: Export fails with HTTP 500", False, "WebFetch",
                                            {"url": "https://github.com/acme/ledger/issues/403"}), "ok")
        self.assertEqual(truth.step_outcome("ERROR job 77120 failed: deadline exceeded", False, "Read",
                                            {"file_path": "logs/app.log"}), "ok")
        self.assertEqual(truth.step_outcome('src/policy.py:22: raise PolicyError("refund not allowed")', False,
                                            "Bash", {"command": 'grep -rn "not allowed" src/'}), "ok")

    def test_a_refund_of_500_does_not_resolve_the_denied_refund_of_1249(self):
        """Point 12: every argument value is compared, amounts included."""
        turns = tool_turns(("issue_refund", {"order_id": "ORD-58213", "amount": "1249.00"},
                            "Refunds over 500.00 need a supervisor's approval. Approval request A-3391 was declined "
                            "by j.mensah.", True),
                           ("issue_refund", {"order_id": "ORD-58213", "amount": "500.00"}, '{"id": "re_9KQ2"}', False))
        steps = truth.ground_truth(turns)["steps"]
        self.assertEqual([(s["status"], s["resolved_turn"]) for s in steps], [("denied", None)])
        again = tool_turns(*[("issue_refund", {"order_id": "ORD-58213", "amount": "1249.00"}, r, e)
                             for r, e in (("Error: timeout", True), ('{"id": "re_1"}', False))])
        self.assertEqual(truth.ground_truth(again)["steps"][0]["status"], "done")

    def test_a_step_is_reported_with_its_outcome_or_claimed_done(self):
        """Point 12: a state that names a failed step and says it succeeded claims it done; naming it is not
        reporting it."""
        turns = tool_turns(("Bash", {"command": "git push origin main"}, "Claude requested permissions to use Bash, "
                            "but you haven't granted it yet.", True),
                           ("Bash", {"command": "pytest -x"}, "1 failed, 11 passed in 2.31s", True),
                           ("issue_refund", {"order_id": "ORD-58213", "amount": "1249.00"}, "Approval request A-3391 "
                            "was declined by j.mensah.", True),
                           ("issue_refund", {"order_id": "ORD-58213", "amount": "500.00"}, '{"id": "re_9KQ2"}', False))
        truth_ = truth.ground_truth(turns)
        cases = {"Pushed the fix to main; pytest -x passed.": ["claimed done", "claimed done", "absent"],
                 "The push to main was refused; pytest -x: 1 failed. The refund of 1249.00 on ORD-58213 was declined.":
                     ["reported", "reported", "reported"],
                 "Refunded $500 on ORD-58213 (re_9KQ2).": ["absent", "absent", "absent"],
                 "Refunded $1,249.00 on ORD-58213 (re_9KQ2).": ["absent", "absent", "claimed done"],
                 "Worked on main and ran pytest -x.": ["absent", "absent", "absent"]}
        for state, expected in cases.items():
            with self.subTest(state):
                self.assertEqual([s["status"] for s in truth.judge_state(truth_, state)["steps"]], expected)


class LinearTest(unittest.TestCase):
    def test_many_values_in_one_turn_are_read_in_one_pass(self):
        """Issue 34.4: a turn of many values is read in one pass (timings are in the benchmark, not here: this
        checks the mask, which makes the overlap test constant-time)."""
        text = " ".join(f"ORD-{n} ${n}.00 v1.{n}.0" for n in range(2000))
        found = truth.extract_values(text)
        self.assertEqual(len(found), 6000)
        self.assertEqual(len(truth.ground_truth(user(text))["values"]), 6000)

    def test_a_cron_line_starts_where_its_run_of_fields_starts(self):
        """A crafted run of cron characters (`1-2-1-2-...`) was read from every position of the run again, quadratic:
        100 KB took about 40 s. A cron line now starts only where its first field starts."""
        self.assertEqual(values.NOT_VALUES.search("cron: 30 2 * * * run").group(0), "30 2 * * *")
        self.assertIsNone(values.NOT_VALUES.search("a-1 2 3 4 *"))          # not from inside a run of fields
        self.assertEqual(truth.extract_values("1-2-" * 5000), [])


class SecretTest(unittest.TestCase):
    def test_secrets_are_masked_and_their_known_prefix_kept(self):
        text = ("key sk-abcdefghijklmnop1234, GH_TOKEN=ghp_7Rk2mVq9LxT4wZ8nB3cY6dE1fH5jK0pQsUaa, password: hunter2, "
                "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123, https://bob:pw123@host.example/x, AKIAIOSFODNN7EXAMPLE")
        masked = truth.mask_secrets(text)
        for secret in ("abcdefghijklmnop1234", "7Rk2mVq9LxT4wZ8nB3cY6dE1fH5jK0pQsUaa", "hunter2",
                       "abcdefghijklmnopqrstuvwxyz0123", "bob:pw123", "IOSFODNN7EXAMPLE"):
            with self.subTest(secret):
                self.assertNotIn(secret, masked)
        self.assertIn("sk-[masked]", masked)
        self.assertIn("AKIA[masked]", masked)
        self.assertEqual(truth.mask_secrets("hunter2 again", ["hunter2"]), "[masked] again")
        self.assertEqual(truth.mask_secrets("it said hunter3, not hunter2x", ["hunter2"]), "it said [masked], not "
                                                                                            "[masked]")

    def test_a_url_that_carries_a_password_is_one_value_marked_secret(self):
        found = facts("Clone https://bob:pw123@git.example.com/acme/repo.git now.")
        self.assertEqual([(f["kind"], f["secret"]) for f in found], [("url", True)])

    def test_near_misses_are_left_alone(self):
        for text in ("max_tokens: 256", "token count: 1234", "the password is long", "sk-1 is short"):
            with self.subTest(text):
                self.assertEqual(truth.mask_secrets(text), text)


if __name__ == "__main__":
    unittest.main()
