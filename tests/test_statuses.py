"""The statuses the sessions study and the audit print, on the simple cases issue 43 (point 3) found
wrong (protocol/SESSIONS.md sections 3 and 5): a verbatim copy of an instruction is no
contradiction of it; key terms and values are found whole, never inside a longer word or number,
and function words are no key terms; a rule is withdrawn by the meaning of the words that lift it;
a corrected value is kept apart as the former one, and a value kept as the former one reads
`former`; two facts with one number stay two; other formats of a value read `reformatted`."""
import unittest

import helpers
from pilot.rules import claims, states
from pilot.studies.sessions import readers as formats
from pilot.studies.sessions import truth


def user(*texts: str) -> list[dict]:
    return [{"role": "user", "text": t} for t in texts]


def instruction_status(rule: str, state: str) -> str:
    found = truth.ground_truth(user(rule))
    return truth.judge_state(found, state)["instructions"][0]["status"]


def value_statuses(history: list[str], state: str) -> dict[str, str]:
    found = truth.ground_truth(user(*history))
    texts = {f["id"]: f["text"] for f in found["values"]}
    return {texts[j["id"]] + "@" + str(j["id"]): j["status"]
            for j in truth.judge_state(found, state)["values"]}


class VerbatimCopyTest(unittest.TestCase):
    def test_an_instruction_judged_against_itself_is_present(self):
        for rule in ("For the rest of this analysis, report latencies in milliseconds, never "
                     "seconds.", "Never, ever push to main.", "Keep the pool at 12 connections.",
                     "Don't email customers directly; draft the replies."):
            with self.subTest(rule):
                self.assertEqual(instruction_status(rule, rule), "present")

    def test_the_opposite_of_a_clause_is_still_contradicted(self):
        rule = "For the rest of this analysis, report latencies in milliseconds, never seconds."
        self.assertEqual(instruction_status(rule, "Latencies are reported in seconds."),
                         "contradicted")
        self.assertFalse(claims.contradicts("Report latencies in milliseconds.", rule))


class WholeTermsTest(unittest.TestCase):
    def test_a_value_is_not_found_inside_a_longer_number(self):
        rule = "Keep the pool at 12 connections."
        self.assertEqual(instruction_status(rule, "The pool has 1249 connections."), "absent")
        self.assertEqual(instruction_status(rule, "Pool: 12 connections, kept."), "present")
        self.assertFalse(states.carries_instruction("version 12.5", ["12"]))

    def test_function_words_are_no_key_terms(self):
        rule = "always run the whole suite with -x before you push anything"
        terms = truth.ground_truth(user(rule))["instructions"][0]["key_terms"]
        for word in ("anything", "before", "anyth"):
            self.assertNotIn(word, terms)
        self.assertEqual(instruction_status(rule, "Before anything else, check the logs."),
                         "absent")
        self.assertNotIn("without", truth.key_terms("Never deploy without a review."))

    def test_a_word_is_found_whole_with_its_endings(self):
        self.assertTrue(states.carries_instruction("Committing is fine.", ["commit"]))
        self.assertTrue(states.carries_instruction("Pushed twice.", ["push"]))
        self.assertFalse(states.carries_instruction("The pushover.", ["push"]))


class WithdrawnByMeaningTest(unittest.TestCase):
    def withdrawn(self, rule: str, later: str) -> int | None:
        return truth.ground_truth(user(rule, later))["instructions"][0]["revoked_turn"]

    def test_the_words_that_lift_a_rule_withdraw_it(self):
        rule = "Don't deploy anything today."
        for later in ("OK, the freeze is over, you can deploy.", "The deploy ban is lifted.",
                      "We no longer need to hold deploys."):
            with self.subTest(later):
                self.assertEqual(self.withdrawn(rule, later), 2)
        for later in ("The meeting is over, thanks.", "You can deploy just this once."):
            with self.subTest(later):
                self.assertIsNone(self.withdrawn(rule, later))

    def test_a_condition_met_withdraws_the_rule_that_waited_for_it(self):
        rule = "Don't email the customer about the incident until legal signs off."
        self.assertEqual(self.withdrawn(rule, "Legal signed off at 16:10."), 2)
        self.assertIsNone(self.withdrawn(rule, "Legal has not signed off yet."))


class FormerValuesTest(unittest.TestCase):
    def test_a_value_given_as_the_former_one_reads_former(self):
        self.assertIn("former", truth.VALUE_CLASSES)
        got = value_statuses(["The billing service listens on 8080.",
                              "Actually make it 9090, 8080 clashes with the proxy."],
                             "The port moved from 8080 to 9090.")
        self.assertEqual(got, {"8080@1": "former", "9090@2": "kept"})

    def test_the_former_value_stated_as_current_changes_the_current_one(self):
        history = ["The call is Thursday at 14:00 CET.", "Correction: they moved it to 10:30 CET."]
        found = truth.ground_truth(user(*history))
        self.assertEqual([f["current"] for f in found["values"]], [False, True])
        judged = truth.judge_state(found, "Call on Thursday at 14:00 CET.")["values"]
        self.assertEqual([(j["status"], j["instead"]) for j in judged],
                         [("former", None), ("changed", "14:00")])

    def test_the_pinned_support_session_corrects_the_address(self):
        path = helpers.REPO / "tasks" / "sessions" / "logs" / "2-support-refund.chat.json"
        turns = formats.read_session_file(path, path.name)[0]["turns"]
        found = truth.ground_truth(turns)
        current = {f["text"]: f["current"] for f in found["values"] if f["kind"] == "email"}
        self.assertFalse(current["dana.kim@northwind.example"])
        self.assertTrue(current["dana.kim@northwind-corp.example"])
        in_force = [i["text"] for i in found["instructions"] if not i["revoked_turn"]]
        self.assertTrue(any("dana.kim@northwind-corp.example" in i for i in in_force))
        self.assertFalse(any("dana.kim@northwind.example" in i for i in in_force))
        judged = truth.judge_state(found, "Copy dana.kim@northwind.example on every update.")
        self.assertNotIn("present", [j["status"] for j in judged["instructions"]])


class OneFactPerReferentTest(unittest.TestCase):
    def test_two_facts_with_one_number_stay_two(self):
        got = value_statuses(["Set a limit of 7 and run 7 workers."], "The limit is 7.")
        self.assertEqual(got, {"7@1": "kept", "7@2": "dropped"})
        found = truth.ground_truth(user("Set the pool to 8.", "The pool of 8 connections is full."))
        self.assertEqual([f["text"] for f in found["values"]], ["8"])


class OtherFormatsTest(unittest.TestCase):
    def test_another_format_of_the_same_value_is_reformatted(self):
        for said, state in (("The export holds 2,500 rows.", "The export holds 2.5k rows."),
                            ("The job took 90 seconds.", "The job took 1.5 minutes."),
                            ("Coverage is 85%.", "Coverage is 85 %.")):
            with self.subTest(state):
                self.assertEqual(list(value_statuses([said], state).values()), ["reformatted"])
        self.assertNotEqual(list(value_statuses(["The job took 90 seconds."],
                                                "The job took 1.5 hours.").values()),
                            ["reformatted"])


if __name__ == "__main__":
    unittest.main()
