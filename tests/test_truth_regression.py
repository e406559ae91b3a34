"""The sessions study's ground truth and the judging of a state, on a varied generated session, against what the rules
found before they were made fast (tests/fixtures/truth_regression.jsonl, written by the rules of commit 8975ff1):
speed work must not change what they find.

    python3 tests/test_truth_regression.py --write     # rewrite the fixture, only where a rule's change is meant

The session is the speed benchmark's synthetic log (its Claude Code format, read by the study's reader and rendered as
the compactor sees it) followed by every snippet of the labelled sets as a turn of its own: user requests and
instructions, replies, tool calls with their arguments and results (failures, refusals, listings, secrets, dates,
amounts ...). The states judged are each gate scenario's sentences, one state a scenario, and a state written from
the session's own values, some kept, some changed.
"""
from __future__ import annotations

import contextlib
import functools
import io
import json
import re
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "scripts"))
sys.path.insert(0, str(HERE.parent / "scripts" / "bench"))

import bench_sessions  # noqa: E402
import pilot.studies  # noqa: E402,F401  (registers the studies)
from pilot.studies.sessions import design as ss, readers as formats  # noqa: E402
from pilot.rules import values  # noqa: E402
from pilot.studies.sessions import truth as sessions_truth  # noqa: E402
from pilot.studies.sessions.truth import ground_truth, judge_state  # noqa: E402

FIXTURE = HERE / "fixtures" / "truth_regression.jsonl"
LABELLED = HERE / "labelled"


def labelled(name: str) -> list[dict]:
    return json.loads((LABELLED / name).read_text(encoding="utf-8"))["snippets"]


def labelled_turns() -> list[dict]:
    """Every labelled snippet as a turn (a tool step as its call and its result)."""
    turns = []
    for s in labelled("values.json"):
        role = {"tool_result": "tool"}.get(s["role"], s["role"])
        turns.append({"role": role, "text": s["text"], "calls": [], "tool": s["tool"] or "tool", "error": False,
                      "call": None})
    for s in labelled("instructions.json"):
        for before in s.get("context") or []:
            turns.append({"role": "user", "text": before if isinstance(before, str) else json.dumps(before),
                          "calls": []})
        turns.append({"role": "user", "text": s["text"], "calls": []})
    for n, s in enumerate(labelled("failed_steps.json")):
        call = {"id": f"f{n}", "name": s["tool"], "input": s["arguments"]}
        turns.append({"role": "assistant", "text": "", "calls": [call]})
        turns.append({"role": "tool", "text": s["result"], "tool": s["tool"], "error": bool(s["is_error"]),
                      "call": call})
    return turns


@functools.lru_cache(maxsize=1)
def session() -> tuple[list[dict], list[list[tuple[str, str]]], list[int]]:
    """The varied session: its turns, their parts as the compactor sees them, and each turn's segment."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        bench_sessions.write_log(path, 0.08, "claude-code", seed=7)
        (read,) = formats.read_session_file(path, path.name)
    turns = read["turns"] + labelled_turns()
    parts = [ss.turn_parts(turn) for turn in turns]
    segment_of = [1 + 3 * t // len(turns) for t in range(len(turns))]
    return turns, parts, segment_of


def states(truth: dict) -> list[str]:
    by_scenario: dict[str, list[str]] = {}
    for s in labelled("state_claims.json"):
        by_scenario.setdefault(s["scenario"], []).append(s["sentence"])
    out = [" ".join(sentences) for sentences in by_scenario.values()]
    values = truth["values"]
    lines = []
    for n, fact in enumerate(values[::7]):
        text = fact["text"] if n % 3 else fact["text"].replace("1", "7", 1)
        lines.append(f"- {' '.join(fact['referent'][:2]) or 'value'}: {text}")
    out.append("Current state.\n" + "\n".join(lines) + "\nTests pass; pushed to main. Never use npm.")
    return out


def outputs() -> dict:
    turns, parts, segment_of = session()
    truth = ground_truth(turns, segment_of, parts=parts)
    judged = []
    for state in states(truth):
        verdicts = judge_state(truth, state)          # (the dropped and absent items kept as their ids only)
        judged.append({key: [item if item["status"] not in ("dropped", "absent") else item["id"] for item in items]
                       for key, items in verdicts.items()})
    return {"turns": len(turns), "truth": truth, "judged": judged}


def read_fixture() -> dict:
    """The fixture: a JSON line of counts, then one line per item of the truth and one per judged state."""
    lines = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    out = {**lines[0], "truth": {"values": [], "instructions": [], "steps": []}, "judged": []}
    for line in lines[1:]:
        if "truth" in line:
            out["truth"][line["truth"]].append(line["item"])
        else:
            out["judged"].append({k: v for k, v in line.items() if k != "judged"})
    return out


class TruthRegressionTest(unittest.TestCase):
    def test_ground_truth_and_judging_find_what_they_found(self):
        expected = read_fixture()
        got = json.loads(json.dumps(outputs()))
        self.assertEqual(expected["turns"], got["turns"])
        for key in ("values", "instructions", "steps"):
            with self.subTest(key=key):
                self.assertEqual(len(expected["truth"][key]), len(got["truth"][key]))
                for want, have in zip(expected["truth"][key], got["truth"][key]):
                    self.assertEqual(want, have)
        for n, (want, have) in enumerate(zip(expected["judged"], got["judged"])):
            with self.subTest(state=n):
                self.assertEqual(want, have)
        self.assertEqual(len(expected["judged"]), len(got["judged"]))


def all_texts() -> list[str]:
    """Every text of the session, every labelled snippet and state sentence, and every fixture file."""
    turns, parts, _ = session()
    texts = [text for turn in parts for _, text in turn]
    for name, key in (("values.json", "text"), ("failed_steps.json", "result"), ("instructions.json", "text"),
                      ("state_claims.json", "sentence"), ("state_claims.json", "source")):
        texts += [s[key] for s in labelled(name)]
    for path in sorted((HERE / "fixtures").rglob("*")):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".md", ".txt") and path != FIXTURE and \
                path.stat().st_size < 2 ** 18:
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
    return texts + ["Kelvin \u212a and long \u017f: pa\u017f\u017fword=hunter22 Bearer abcdefghijklmnop Exit code 1 "
                    "\u212ailled", "x" * 3 + "a.a.a.a.a-" * 50 + " 2026-12-03 12:00 v1.2.3",
                    "dotless \u0131, dotted \u0130: ap\u0131_key=abcdefgh PR\u0130VATE_KEY=abcdefgh \u017fecret: "
                    "abcdefgh Auth: abcdefgh ex\u0131t code 1 permi\u017f\u017fion not granted U\u017fER declined"]


class FastRulesTest(unittest.TestCase):
    """The rules as they run (a guard before each pattern, strings a text must hold before a pattern runs over it,
    the failed and denied patterns as alternatives) find what the patterns as written find."""

    @classmethod
    def setUpClass(cls):
        cls.texts = all_texts()

    def spans(self, pattern, text, valid=None):
        return [(m.span(), m.groups()) for m in pattern.finditer(text)
                if valid is None or valid(m, text[m.start():m.end()])]

    def test_each_value_rule_finds_what_its_pattern_finds(self):
        for (kind, pattern, valid, _), (_, fast, finder, needs, need_digit, _, _) in zip(values.RULES,
                                                                                          values.FAST_RULES):
            with self.subTest(kind=kind, pattern=pattern.pattern[:40]):
                check = valid if pattern is values.IDENTIFIER else None     # (refused identifiers are not matched)
                for text in self.texts:
                    self.assertEqual(self.spans(pattern, text, check), self.spans(fast, text, check))
                    self.assertEqual(self.spans(pattern, text, check), [
                        (m.span(), m.groups()) for m in values.matches(fast, finder, text)
                        if check is None or check(m, text[m.start():m.end()])])
                    if needs is not None and pattern.search(text):
                        self.assertTrue(needs.search(text))
                    if need_digit and not any(c.isdigit() for c in text):
                        self.assertEqual([], self.spans(pattern, text, valid or (lambda m, t: True)))
        for text in self.texts:
            self.assertEqual(self.spans(values.NOT_VALUES, text), self.spans(values.FAST_NOT_VALUES, text))

    def test_secret_spans_and_step_patterns_find_what_the_whole_patterns_find(self):
        for text in self.texts:
            whole = [(m.span(), n) for n, p in enumerate(values.SECRET_PATTERNS) for m in p.finditer(text)]
            self.assertEqual(len(whole), len(values.secret_spans(text)))
            for alternatives in (sessions_truth.FAILED, sessions_truth.DENIED):
                self.assertEqual(bool(alternatives.pattern.search(text)), alternatives.search(text))


    def test_every_letter_outside_ascii_that_reads_as_an_ascii_one_is_folded_to_it(self):
        """A text outside ASCII is looked at for the secret rules' and the step patterns' strings in lower case
        with values.CASE_FOLDS made ASCII (values.folded): each letter that a pattern ignoring case reads as an
        ASCII letter becomes that letter there, so that no string is missed."""
        letter = re.compile(r"[a-z]", re.IGNORECASE)
        found = 0
        for code in range(128, sys.maxunicode + 1):
            if letter.fullmatch(chr(code)):
                found += 1
                with self.subTest(letter=hex(code)):
                    folded = values.folded(chr(code))[:1]
                    self.assertTrue(folded.isascii() and re.fullmatch("(?i)" + folded, chr(code)), folded)
        self.assertGreater(found, 2)


class BenchArgumentsTest(unittest.TestCase):
    def test_the_benchmark_times_judging_and_the_gate_when_asked(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(bench_sessions.main(["--sizes", "0.02", "--judge", "--max-seconds", "120"]), 0)
        table = out.getvalue().split("| judge_state, CPU s |")[1]
        self.assertRegex(table, r"\| 0\.0 \| 0\.0 \| \d+\.\d\d \| \d+\.\d\d \(")

    def test_a_size_that_is_no_size_is_refused_in_one_line(self):
        for sizes in ("0", "-1", "nan", "inf", "", "1,,x"):
            with self.subTest(sizes=sizes), contextlib.redirect_stderr(io.StringIO()) as err:
                with self.assertRaises(SystemExit) as stop:
                    bench_sessions.main([f"--sizes={sizes}"])
                self.assertEqual(stop.exception.code, 2)
                self.assertIn("--sizes takes sizes in MB above 0", err.getvalue())


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        found = outputs()
        lines = [json.dumps({k: v for k, v in found.items() if k not in ("truth", "judged")})]
        lines += [json.dumps({"truth": key, "item": item}, ensure_ascii=False)
                  for key, items in found["truth"].items() for item in items]
        lines += [json.dumps({"judged": n, **verdicts}, ensure_ascii=False) for n, verdicts in enumerate(found["judged"])]
        FIXTURE.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {FIXTURE}")
    else:
        unittest.main()
