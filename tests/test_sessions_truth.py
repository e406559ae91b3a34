"""The sessions study's ground truth (scripts/pilot/studies/sessions_truth.py): every extraction rule on hand-written
sentences, with the near misses it must not take; how a state's value is classed; standing instructions; failed and
denied steps; secrets."""
import unittest

import helpers  # noqa: F401  (puts the runner's package on the path)
from pilot.studies import sessions_truth as truth

# kind -> (sentences and the value each must yield), (near misses: sentences that must yield no value of the kind)
RULES = {
    "url": ([("See https://example.com/docs/setup?x=1 for details.", "https://example.com/docs/setup?x=1"),
             ("(mirror: http://mirror.example.org/pub/)", "http://mirror.example.org/pub/")],
            ["The site example.com is down.", "Use ftp://files.example.com instead.", "www.example.com/about"]),
    "email": ([("Mail ops@example.com today.", "ops@example.com"),
               ("Copy dana.kim@northwind-corp.example.", "dana.kim@northwind-corp.example")],
              ["Log in as user@localhost.", "Ping @maria in the channel.", "Send it to me@"]),
    "path": ([("The test is in src/app/api.py.", "src/app/api.py"), ("Edit /etc/hosts first.", "/etc/hosts"),
              ("Run ./deploy.sh now.", "./deploy.sh"), ("Notes are in ~/notes/todo.md.", "~/notes/todo.md"),
              ("Open C:\\work\\report.txt.", "C:\\work\\report.txt"), ("Update README.md please.", "README.md"),
              ("Rotate /var/log/nginx today.", "/var/log/nginx")],
             ["Use tabs and/or spaces.", "Speed is 80 km/h.", "Half is 1/2.", "Write to /tmp later.",
              "The TCP/IP stack.", "e.g. this, i.e. that.", "Merge origin/main now."]),
    "digest": ([("Commit 3f9a2c1d broke it.", "3f9a2c1d"), ("sha256:9e107d9d372bb6826bd81d3542a419d6 ok",
                                                            "9e107d9d372bb6826bd81d3542a419d6")],
               ["The value 1234567 is a count.", "The placeholder deadbeef.", "Short hash abc12 only.",
                "Ticket ABC1234 is open.", "Mixed 3f9A2c1d case."]),
    "date": ([("Released on 2025-03-12.", "2025-03-12"), ("Due 12 March 2025.", "12 March 2025"),
              ("Due March 12, 2025.", "March 12, 2025"), ("Paid on 12/03/2025.", "12/03/2025"),
              ("At 2025-03-12T14:05:00Z it failed.", "2025-03-12T14:05:00Z"), ("By 3 May we ship.", "3 May")],
             ["May I ask something?", "In March we met.", "Not a date: 2025-13-40.", "Version 1.2.3 only."]),
    "time": ([("The call is at 14:05.", "14:05"), ("Meet at 9:30 am.", "9:30 am"), ("Start at 3pm.", "3pm"),
              ("Window opens 03:30 UTC.", "03:30")],
             ["The ratio was 3:2.", "At 25:00 nothing.", "I am here.", "Read 8 amendments.", "10:30:99 is broken."]),
    "version": ([("Upgrade to v2.3.1 now.", "v2.3.1"), ("We run nginx 1.24.0 there.", "1.24.0"),
                 ("Pin 1.24.0-rc.1 for now.", "1.24.0-rc.1"), ("Use version 3.11 please.", "3.11"),
                 ("Tag v2.3 exists.", "v2.3")],
                ["Pi is 3.14 roughly.", "Server 192.168.1.10 answered.", "Python 3.11 is installed."]),
    "amount": ([("Refund $1,249.00 today.", "$1,249.00"), ("It costs EUR 120.", "EUR 120"),
                ("That is 120 EUR in total.", "120 EUR"), ("Pay €18.50 a seat.", "€18.50"),
                ("About 48 dollars.", "48 dollars"), ("A budget of $5m.", "$5m")],
               ["Set $HOME first.", "Rates in USD vary.", "Print ${VAR}.", "The EUR desk."]),
    "identifier": ([("Order ORD-58213 shipped.", "ORD-58213"), ("Build for x86_64 only.", "x86_64"),
                    ("Ask gpt-4o about it.", "gpt-4o"), ("Payment pay_7Hq2x failed.", "pay_7Hq2x"),
                    ("Host 10.20.4.17 is up.", "10.20.4.17")],
                   ["The 2nd and 10th runs.", "It used 5GB and 20ms.", "A 3D view.", "Plain words only."]),
    "number": ([("We had 1,204 responses.", "1,204"), ("It took 3.5 seconds.", "3.5"), ("Share was 45%.", "45%"),
                ("Memory is 512MB now.", "512MB"), ("Delta -12 points.", "-12"), ("Exit code 403 came.", "403")],
               ["There were 7 files.", "The list 1,2,3 follows.", "The 2nd try.", "A 5GB disk."]),
}


class ExtractionRuleTest(unittest.TestCase):
    def test_every_rule_takes_its_values_and_leaves_its_near_misses(self):
        for kind, (positives, near_misses) in RULES.items():
            for sentence, value in positives:
                with self.subTest(kind=kind, sentence=sentence):
                    found = [(k, v) for k, v, _, _ in truth.extract_values(sentence)]
                    self.assertIn((kind, value), found)
            for sentence in near_misses:
                with self.subTest(kind=kind, near_miss=sentence):
                    self.assertEqual([v for k, v, _, _ in truth.extract_values(sentence) if k == kind], [])

    def test_a_span_belongs_to_the_first_rule_that_takes_it(self):
        text = "See https://example.com:8443/a/b.py and /var/log/2025-03-12.log at v1.2.3."
        self.assertEqual([(k, v) for k, v, _, _ in truth.extract_values(text)],
                         [("url", "https://example.com:8443/a/b.py"), ("path", "/var/log/2025-03-12.log"),
                          ("version", "v1.2.3")])

    def test_a_value_keeps_the_sentence_it_came_from(self):
        text = "First we looked. The total was 1,247 in March. Then we left."
        (kind, value, start, end), = truth.extract_values(text)
        self.assertEqual(truth.sentence_around(text, start, end), "The total was 1,247 in March.")


class ClassifyTest(unittest.TestCase):
    SOURCE = [{"kind": "number", "text": "1,247"}, {"kind": "digest", "text": "3f9a2c1d"},
              {"kind": "path", "text": "src/app/api.py"}, {"kind": "amount", "text": "$48.00"},
              {"kind": "date", "text": "2025-03-12"}, {"kind": "version", "text": "2.3.1"},
              {"kind": "identifier", "text": "A-1042"}, {"kind": "email", "text": "ops@example.com"},
              {"kind": "number", "text": "512"}]

    def classify(self, state: str) -> list[tuple]:
        norms = {}
        for value in self.SOURCE:
            norms.setdefault(value["kind"], set()).add(truth.normalize_value(value["kind"], value["text"]))
        return truth.classify_values(self.SOURCE, state, norms)

    def test_kept_reformatted_changed_and_dropped(self):
        state = ("We saw 1,274 errors after commit 3f9a2c1; the file src/api.py failed; refund USD 48 on "
                 "March 12, 2025; version v2.3.1; order A-1024 for ops@example.com.")
        self.assertEqual(self.classify(state), [
            ("changed", "1,274"), ("changed", "3f9a2c1"), ("changed", "src/api.py"), ("reformatted", "USD 48"),
            ("reformatted", "March 12, 2025"), ("reformatted", "v2.3.1"), ("changed", "A-1024"), ("kept", None),
            ("dropped", None)])

    def test_a_value_in_a_longer_one_is_not_kept(self):
        for state in ("5120 and 1,2470", "3.512 and 512.5", "src/app/api.pyc"):
            with self.subTest(state):
                self.assertNotIn(("kept", None), self.classify(state)[:1] + self.classify(state)[2:3] +
                                 self.classify(state)[8:])

    def test_a_value_the_transcript_gives_is_never_a_change_of_another(self):
        source = [{"kind": "number", "text": "1,247"}, {"kind": "number", "text": "1,248"}]
        norms = {"number": {"1247", "1248"}}
        self.assertEqual(truth.classify_values(source, "only 1,248 was seen", norms), [("dropped", None),
                                                                                       ("kept", None)])

    def test_closeness_per_kind(self):
        close = [("number", "1247", "1250"), ("number", "1247", "1274"), ("amount", "USD 48", "EUR 48"),
                 ("amount", "USD 48", "USD 84"), ("digest", "3f9a2c1d", "3f9a2c1"), ("version", "2.3.1", "2.3.0"),
                 ("version", "2.3.1", "2.3"), ("path", "src/app/api.py", "lib/api.py"),
                 ("date", "2025-03-12", "2025-03-13"), ("time", "14:05", "14:50"), ("identifier", "A1042", "A1024"),
                 ("email", "ops@example.com", "op@example.com")]
        far = [("number", "12", "13"), ("number", "1247", "9000"), ("amount", "USD 48", "EUR 50"),
               ("digest", "3f9a2c1d", "9e107d9d"), ("version", "2.3.1", "2.4.0"), ("path", "src/a.py", "docs/b.md"),
               ("identifier", "ABC", "ABD"), ("date", "2025-03-12", "2024-11-02")]
        for kind, a, b in close:
            with self.subTest(kind=kind, close=(a, b)):
                self.assertTrue(truth.is_close(kind, a, b))
        for kind, a, b in far:
            with self.subTest(kind=kind, far=(a, b)):
                self.assertFalse(truth.is_close(kind, a, b))

    def test_normal_forms(self):
        cases = [("number", "1,250", "1250"), ("number", "3.50", "3.5"), ("amount", "$48.00", "USD 48"),
                 ("amount", "$5m", "USD 5000000"), ("date", "March 12, 2025", "2025-03-12"),
                 ("date", "12 March", "-----03-12"), ("date", "12/03/2025", "2025-12-03~"),
                 ("time", "9:30 pm", "21:30"), ("version", "v2.3.1", "2.3.1"), ("identifier", "ord_58213", "ORD58213"),
                 ("path", "./src/a.py", "src/a.py"), ("url", "HTTPS://Example.com/a/", "https://example.com/a")]
        for kind, text, expected in cases:
            with self.subTest(kind=kind, text=text):
                self.assertEqual(truth.normalize_value(kind, text), expected)


class InstructionTest(unittest.TestCase):
    def test_standing_instructions_and_their_near_misses(self):
        yes = ["From now on, never push to main.", "Never push directly to main.", "Always CC ops@example.com.",
               "You should always run the linter first.", "We never deploy on Fridays.",
               "Until I say otherwise, keep the old endpoint.", "Deploy only from the release branch from now on.",
               "For the rest of this session, answer in English.", "Don't ever touch prod, always use staging.",
               "Please always ask before deleting files.", "Whenever a test fails, stop and tell me."]
        no = ["I never push on Fridays.", "The build always fails on CI.", "Does it always fail?",
              "It kept failing for the rest of the day.", "Tests always fail on CI.", "CI always fails.",
              "Push the branch.", "Wait until it finishes.", "We deployed it on Friday."]
        for sentence in yes:
            with self.subTest(instruction=sentence):
                self.assertTrue(truth.is_standing_instruction(sentence))
        for sentence in no:
            with self.subTest(near_miss=sentence):
                self.assertFalse(truth.is_standing_instruction(sentence))

    def test_key_terms_are_values_then_long_content_words_as_stems(self):
        self.assertEqual(truth.key_terms("Always CC ops@example.com on refunds."), ["ops@example.com", "refund"])
        self.assertEqual(truth.key_terms("From now on, run the linter before committing."), ["commit", "lint"])
        self.assertEqual(truth.key_terms("Until I confirm, do not restart the production proxy."),
                         ["produc", "restar"])


class StepOutcomeTest(unittest.TestCase):
    def test_failed_denied_and_ok_results(self):
        cases = [("FAILED tests/test_api.py::test_total - AssertionError", False, "failed"),
                 ("Traceback (most recent call last):\nNameError: x", False, "failed"),
                 ("Error: connection refused", False, "failed"), ("exit code 2", False, "failed"),
                 ("SMTP error 550: mailbox unavailable", False, "failed"), ("all good", True, "failed"),
                 ("remote: Permission to org/repo.git denied to bot.", False, "denied"),
                 ("The user doesn't want to proceed with this tool use.", False, "denied"),
                 ("sudo: ops is not allowed to run dpkg", False, "denied"),
                 ("5 passed, 0 failed in 1.2s", False, "ok"), ("no errors found", False, "ok"),
                 ("error handling added to the parser", False, "ok"), ("exit code 0", False, "ok"),
                 ("Access granted.", False, "ok")]
        for text, is_error, outcome in cases:
            with self.subTest(text):
                self.assertEqual(truth.step_outcome(text, is_error), outcome)


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

    def test_near_misses_are_left_alone(self):
        for text in ("max_tokens: 256", "token count: 1234", "the password is long", "sk-1 is short"):
            with self.subTest(text):
                self.assertEqual(truth.mask_secrets(text), text)


if __name__ == "__main__":
    unittest.main()
