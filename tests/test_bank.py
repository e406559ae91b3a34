"""pilot.bank: answer parsing and the five classes (protocol section 4), XR-001's write-time retention, and a large
bank read as columns (pilot/bankfile.py)."""
import json
import unittest
from unittest import mock

from helpers import REPO, TempDirMixin, run_main  # noqa: F401  (also puts the runner's package on the path)
from pilot import bank, bankfile, records
from pilot.studies import episodes
from pilot.studies.xr001 import design as xr001, scoring as xr001_analysis

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
    reads it."""

    def test_every_committed_bank_is_read(self):
        for results_path in sorted((REPO / "results").glob("*/results.json")):
            with self.subTest(results_path.parent.name):
                results = json.loads(results_path.read_text(encoding="utf-8"))
                code, out, err = run_main(["analyze", "--results", str(results_path)])
                self.assertEqual(bank.results_shape_problems(results), [])
                self.assertEqual(code, 0, err)
                self.assertTrue(out.strip())


if __name__ == "__main__":
    unittest.main()


class ReadBankTest(TempDirMixin, unittest.TestCase):
    """bank.read_bank: a large bank read as columns, in pieces and on two processes (pilot/bankfile.py), gives what
    json gives; any file it does not recognise is read whole. Here every file counts as large."""

    def bank(self, probes: list, **extra) -> dict:
        return {"study": "xr001", "models": ["m"], "regimes": ["R0", "R1", "R2"], "cells": {"complete": 1},
                "probes": probes, "compaction_stage": [{"model": "m", "regime": "R1", "episode": 0, "retained": 3}],
                "run": {"num_ctx": 4096}, **extra}

    def probes(self, n: int) -> list[dict]:
        rows = []
        for i in range(n):
            probe = {"model": f"m{i % 3}", "regime": ("R0", "R1", "R2")[i % 3], "episode": i % 15}
            if i % 4:
                probe.update(budget=(128, 512, 1024)[i % 3], sample=i % 7)
            probe.update(question_id=i % 8 + 1, type="direct", truth=100 + i % 900, answer=None if i % 5 else 3,
                         **{"class": "omission" if i % 5 else "other_wrong"})
            if i % 11 == 0:
                probe.update(lenient_answer=7, lenient_class="other_wrong")
            rows.append(probe)
        return rows

    def read(self, data: bytes, parallel: bool = False) -> tuple[dict, dict]:
        path = self.make_tmp() / "results.json"
        path.write_bytes(data)
        with mock.patch.object(bankfile, "FAST_MIN_BYTES", 0), mock.patch.object(bankfile, "PIECE_BYTES", 300), \
                mock.patch.object(bankfile, "PARALLEL_MIN_BYTES", 0 if parallel else 10 ** 12):
            return bank.read_bank(path, "results.json", "a results file", "fix it")

    def assert_same(self, results: dict, table: dict, expected: dict) -> None:
        self.assertEqual(list(results), list(expected))
        self.assertEqual({k: v for k, v in results.items() if k != "probes"},
                         {k: v for k, v in expected.items() if k != "probes"})
        as_json = bank.probe_table(expected["probes"])
        for field, _ in bank.PROBE_FIELDS:
            self.assertEqual(table[field], as_json[field], field)
            self.assertEqual(list(map(type, table[field])), list(map(type, as_json[field])), field)   # 1, not True
        defaults = dict(bank.PROBE_FIELDS)
        for got, want in zip(results["probes"], expected["probes"]):     # the same probe, a default left out
            self.assertEqual({k: v for k, v in got.items() if defaults.get(k) != v or k not in defaults},
                             {k: v for k, v in want.items() if defaults.get(k) != v or k not in defaults})
        self.assertEqual(len(results["probes"]), len(expected["probes"]))

    def test_our_format_in_pieces_and_on_two_processes(self):
        expected = self.bank(self.probes(500))
        data = (json.dumps(expected, indent=1) + "\n").encode()
        for parallel in (False, True):
            with self.subTest(parallel=parallel):
                results, table = self.read(data, parallel)
                self.assertIsInstance(results["probes"], bankfile.ProbeRows)
                self.assert_same(results, table, expected)
                kept = bank.rows_where(table, [i % 11 == 0 for i in range(500)])     # fields beyond the columns
                self.assertEqual([row["lenient_answer"] for row in kept], [7] * 46)
                primary = bank.primary_table(table)
                self.assertEqual(len(primary["rows"]), len(primary["model"]))

    def test_whatever_it_does_not_recognise_is_read_whole_as_json_reads_it(self):
        probes = self.probes(60)
        cases = {       # what the fast path reads (in pieces, or then whole), and what it must leave to json
            "compact, no indentation": ("pieces", json.dumps(self.bank(probes), separators=(",", ":"))),
            "a string holding a cut": ("whole", json.dumps(self.bank([dict(p, type='a "}, {" b') for p in probes]),
                                                           indent=1)),
            "a boolean among the numbers": ("pieces", json.dumps(self.bank([dict(p, episode=True) if i % 2 else p
                                                                            for i, p in enumerate(probes)]), indent=1)),
            "a probe that is not an object": ("whole", json.dumps(self.bank([*probes, [1, 2]]), indent=1)),
            "objects nested in a probe": ("whole", json.dumps(self.bank([dict(p, extra=[{"b": 1}, {"c": 2}])
                                                                         for p in probes]), indent=1)),
            "probes under another object": ("whole", json.dumps({"outer": self.bank(probes)}, indent=1)),
            "probes given twice": ("whole", json.dumps(self.bank(probes), indent=1)[:-2] + ',\n "probes": []\n}'),
            "not JSON after the probes": ("error", json.dumps(self.bank(probes), indent=1)[:-2] + ',\n "x": }'),
            "a surrogate escape": ("error", json.dumps(self.bank(probes, note="\udc80"), indent=1)),
        }
        for label, (how, text) in cases.items():
            for parallel in (False, True):
                with self.subTest(label, parallel=parallel):
                    if how == "error":
                        with self.assertRaises(records.PilotError):
                            self.read(text.encode("utf-8", "surrogatepass"), parallel)
                        continue
                    results, table = self.read(text.encode(), parallel)
                    expected = json.loads(text)
                    if how == "whole":
                        self.assertEqual(results, expected)          # read whole: the very objects json makes
                    else:
                        self.assertIsInstance(results["probes"], bankfile.ProbeRows)
                        self.assert_same(results, table, expected)

    def test_a_bank_read_in_pieces_is_analysed_as_the_same_bank_read_whole(self):
        tasks = json.loads((REPO / "tasks" / "tasks.json").read_text())
        probes = [{"model": m, "regime": r, "episode": e, **({"budget": b, "sample": 0} if b != 256 else {}),
                   "question_id": q["id"], "type": q["type"], "truth": q["truth"],
                   "answer": q["truth"] if (e + q["id"] + len(r) + len(m)) % 3 else None,
                   "class": "correct" if (e + q["id"] + len(r) + len(m)) % 3 else "omission"}
                  for b in (256, 512) for m in ("a", "bb") for r in ("R0", "R1", "R2")
                  for e, entry in enumerate(tasks["episodes"]) for q in entry["questions"]]
        bank_data = {"study": "xr001", "models": ["a", "bb"], "regimes": ["R0", "R1", "R2"], "budgets": [256, 512],
                     "samples": 1, "n_episodes": 15, "probes": probes}
        data = json.dumps(bank_data, indent=1).encode()
        results, table = self.read(data, parallel=True)
        self.assertIsInstance(results["probes"], bankfile.ProbeRows)
        whole = json.loads(data)
        self.assertEqual(bank.results_shape_problems(results, table), bank.results_shape_problems(whole))
        fast, slow = bank.analyze_bank(results, None, table), bank.analyze_bank(whole)
        self.assertEqual(json.dumps(fast, sort_keys=True, default=str), json.dumps(slow, sort_keys=True, default=str))
