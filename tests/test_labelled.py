"""The precision and recall of the sessions study's ground-truth rules and of the release gate on the hand-labelled
sets in tests/labelled/ (issue 30, point 13): scripts/bench/measure_rules.py measures them; the
held-out half's figures must stay at or above the ones protocol/SESSIONS.md prints, so that a change
to the rules that loses ground fails here. The rules were tuned on the `dev` half only."""
import contextlib
import io
import re
import unittest

from helpers import REPO, load_module

measure_rules = load_module("measure_rules", REPO / "scripts" / "bench" / "measure_rules.py")

# The held-out (`test`) figures SESSIONS.md prints, as (precision, recall): the floor for every later change.
HELD_OUT = {"values": (0.52, 0.79), "instructions": (0.65, 0.35), "steps not succeeded": (1.00, 1.00),
            "steps failed": (0.97, 1.00), "steps denied": (1.00, 0.86), "gate flags a defect": (0.74, 0.69)}


class LabelledSetsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.held_out, cls.wrong = measure_rules.measure("test")

    def test_the_held_out_figures_hold(self):
        for rule, (precision, recall) in HELD_OUT.items():
            got = self.held_out[rule]
            with self.subTest(rule):
                self.assertGreaterEqual(round(got["precision"], 2), precision, self.wrong)
                self.assertGreaterEqual(round(got["recall"], 2), recall, self.wrong)

    def test_the_protocol_prints_these_figures(self):
        text = (REPO / "protocol" / "SESSIONS.md").read_text()
        for rule, (precision, recall) in HELD_OUT.items():
            with self.subTest(rule):
                self.assertRegex(text, rf"\| {re.escape(rule)} \| [^|\n]* \| [^|\n]* \| {precision:.2f} [^|\n]*\| "
                                       rf"{recall:.2f} ")

    def test_every_set_has_its_two_halves_and_enough_snippets(self):
        for name in ("values.json", "instructions.json", "failed_steps.json", "state_claims.json"):
            with self.subTest(name):
                for half in ("dev", "test"):
                    self.assertGreaterEqual(len(measure_rules.load(name, half)), 60)

    def test_the_sets_are_built_from_their_sources(self):
        build = load_module("labelled_build", REPO / "tests" / "labelled" / "build.py")
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(build.main(["--check"]), 0)


if __name__ == "__main__":
    unittest.main()
