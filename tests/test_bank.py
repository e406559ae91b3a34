"""pilot.bank: answer parsing and the five classes (protocol section 4), and XR-001's write-time retention."""
import json
import unittest

from helpers import REPO, run_main  # noqa: F401  (also puts the runner's package on the path)
from pilot import bank, episodes
from pilot.studies import xr001, xr001_analysis

CONFLATION_SET = [150, 151, 300, 450, 612]


class ParseAnswerTest(unittest.TestCase):
    CASES = [
        ("plain", "ANSWER: 412", 412),
        ("reasoning first", "The ledger says 300.\nANSWER: 412", 412),
        ("comma thousands", "ANSWER: 1,237", 1237),
        ("several lines, last wins", "ANSWER: 12\nwait, no\nANSWER: 13", 13),
        ("negative", "ANSWER: -5", -5),
        ("markdown emphasis is an omission (the paper's parser)", "ANSWER: **412**", None),
        ("no space", "ANSWER:412", 412),
        ("trailing period", "ANSWER: 412.", 412),
        ("no answer line", "The value is 412.", None),
        ("empty", "", None),
        ("answer without number", "ANSWER: unknown", None),
        ("any letter case", "answer: 412", 412),
    ]

    def test_cases(self):
        for label, reply, expected in self.CASES:
            with self.subTest(label):
                self.assertEqual(bank.parse_answer(reply), expected)


class ClassifyTest(unittest.TestCase):
    CASES = [
        ("omission", None, 150, "omission"),
        ("correct", 150, 150, "correct"),
        ("off_by_one above", 151, 150, "off_by_one"),
        ("off_by_one below", 149, 150, "off_by_one"),
        # the designed trap: base value on a neighbor probe is truth - 1 AND in the conflation set
        ("trap precedence: off_by_one before conflation", 150, 151, "off_by_one"),
        ("conflation", 450, 150, "conflation"),
        ("conflation with a stated sum", 612, 150, "conflation"),
        ("other_wrong", 999, 150, "other_wrong"),
        ("negative other_wrong", -150, 150, "other_wrong"),
    ]

    def test_cases(self):
        for label, answer, truth, expected in self.CASES:
            with self.subTest(label):
                self.assertEqual(bank.classify_answer(answer, truth, CONFLATION_SET), expected)

    def test_end_to_end_from_reply_text(self):
        for reply, expected in (("ANSWER: 1,50", "correct"), ("nothing", "omission"), ("ANSWER: 300", "conflation")):
            with self.subTest(reply):
                self.assertEqual(bank.classify_answer(bank.parse_answer(reply), 150, CONFLATION_SET), expected)


class RetentionTest(unittest.TestCase):
    def setUp(self):
        self.episode = episodes.generate_episode(0)
        self.truths = {e["name"]: e["value"] for s in self.episode["segments"] for e in episodes.segment_entities(s)}

    def test_typed_block_exact_lines(self):
        names = list(self.truths)
        lines = ["values:"] + [f"{n} = {self.truths[n]}" for n in names[:15]]
        lines += [f"{names[15]} = {self.truths[names[15]] + 1}", "combined:", f"{names[0]} + {names[1]} = 5",
                  "relations:", "none", "notes: ok", f"{names[0]} = 1"]   # a later duplicate line does not count
        scored = xr001_analysis.score_retention(xr001.REGIMES["R2"], "\n".join(lines), self.episode)
        self.assertEqual((scored["retained"], scored["correct"], scored["wrong"], scored["n_entities"]),
                         (16, 15, 1, 20))

    def test_prose_nearest_number(self):
        names = list(self.truths)
        text = (f"We saw {names[0]} at {self.truths[names[0]]} and later {names[1]} near "
                f"{self.truths[names[1]]}. {names[2]} was mentioned without a figure. {names[3]} was "
                f"{self.truths[names[3]] + 10}.")
        scored = xr001_analysis.score_retention(xr001.REGIMES["R1"], text, self.episode)
        # names[2] occurs, so it is retained; its nearest number is names[1]'s value, so it is not correct
        self.assertEqual((scored["retained"], scored["correct"]), (4, 2))
        self.assertEqual(scored["method"], "prose")


class CommittedExamplesTest(unittest.TestCase):
    """Every worked example committed under results/ is a bank the shape check accepts, so `analyze --results`
    reads it; a folder a study's former runner made is named as such, with the command that re-reports it."""

    def test_every_committed_bank_is_read(self):
        for results_path in sorted((REPO / "results").glob("*/results.json")):
            with self.subTest(results_path.parent.name):
                results = json.loads(results_path.read_text(encoding="utf-8"))
                code, out, err = run_main(["analyze", "--results", str(results_path)])
                if "calls.jsonl" in {p.name for p in (results_path.parent / "raw").iterdir()}:
                    self.assertEqual(code, 2)
                    self.assertIn("former runner", err)
                    self.assertIn("gate", err)
                    continue
                self.assertEqual(bank.results_shape_problems(results), [])
                self.assertEqual(code, 0, err)
                self.assertTrue(out.strip())


if __name__ == "__main__":
    unittest.main()
