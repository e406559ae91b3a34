"""Inputs nobody checked before (issue "Safe with folders", 3): task paths that are not files, regime templates
with format specs, descriptions that break tables, gate ledgers nested or with runaway patterns; each is one line
and exit 2, never a traceback or a hang."""
import json
import unittest

from helpers import TempDirMixin, run_main
from pilot import gate, reports

ONE_LINE = 1


class InputRefusalTest(TempDirMixin, unittest.TestCase):
    def assert_one_line(self, argv: list[str], code: int, *wanted: str, listed: bool = False) -> None:
        """One error line (a regime file's problems follow it as a list, one per line) and the exit code."""
        got, out, err = run_main(argv)
        self.assertEqual(got, code, err)
        self.assertNotIn("Traceback", err)
        self.assertEqual(len([line for line in err.splitlines() if line.startswith("error:")]), ONE_LINE, err)
        if not listed:
            self.assertEqual(len(err.strip().splitlines()), ONE_LINE, err)
        for text in wanted:
            self.assertIn(text, err)

    def test_a_task_path_that_is_not_a_regular_file(self):
        for path in ("/dev/zero", "/dev/null"):
            with self.subTest(path):
                self.assert_one_line(["plan", "--models", "m", "--tasks", path], 2, "is not a regular file")

    def test_a_regime_template_with_a_format_spec_or_conversion(self):
        for template in ("{previous_state}\n{segment:>99999999}\n{max_words}", "{previous_state!r}{segment}{max_words}"):
            with self.subTest(template):
                path = self.make_tmp() / "regimes.json"
                path.write_text(json.dumps([{"name": "MINE", "compaction_template": template}]))
                self.assert_one_line(["plan", "--models", "m", "--regime-file", str(path)], 2, "format spec",
                                     listed=True)

    def test_a_regime_description_over_one_line(self):
        path = self.make_tmp() / "regimes.json"
        path.write_text(json.dumps([{"name": "MINE", "description": "two\nlines | and a pipe",
                                     "compaction_template": "{previous_state} {segment} {max_words}"}]))
        self.assert_one_line(["plan", "--models", "m", "--regime-file", str(path)], 2, "one line", listed=True)

    def test_gate_on_a_deeply_nested_ledger_or_state(self):
        deep = "[" * 5000 + "]" * 5000
        ledger, state = self.make_tmp() / "ledger.json", self.make_tmp() / "state.json"
        ledger.write_text(deep)
        state.write_text("VALUE = 1\n")
        self.assert_one_line(["gate", str(state), "--ledger", str(ledger)], 2, "nested too deeply")
        ledger.write_text(json.dumps({"entities": {"VALUE": 1}}))
        state.write_text('{"a": ' * 5000 + "1" + "}" * 5000)
        got, _, err = run_main(["gate", str(state), "--ledger", str(ledger)])
        self.assertIn(got, (1, 2), err)                    # a verdict, or the one-line refusal: never a traceback
        self.assertNotIn("Traceback", err)

    def test_gate_refuses_a_name_pattern_that_can_backtrack_for_ever(self):
        for pattern in ("(A+)+$", "([A-Z]{2,})*X", "(?:x*)*y"):
            with self.subTest(pattern), self.assertRaises(gate.GateInputError) as caught:
                gate.normalize_ledger({"entities": {"VALUE": 1}, "name_pattern": pattern})
            self.assertIn("repeats a group that itself repeats", str(caught.exception))
        self.assertTrue(gate.normalize_ledger({"entities": {"VALUE": 1},
                                               "name_pattern": r"\b(?:[BDF][AE]){3}\b"})["name_pattern"])

    def test_gate_on_a_path_that_does_not_exist(self):
        self.assert_one_line(["gate", str(self.make_tmp() / "nothing.txt")], 2, "no state file or run folder")


class TableTest(unittest.TestCase):
    def test_a_pipe_or_a_line_break_in_a_cell_cannot_break_a_table(self):
        table = reports.md_table(["cell", "reply"], [["gemma3:4b|R1|0", "two\nlines"]])
        rows = table.splitlines()
        self.assertEqual(len(rows), 3)
        self.assertEqual(rows[2], "| gemma3:4b\\|R1\\|0 | two lines |")


if __name__ == "__main__":
    unittest.main()
