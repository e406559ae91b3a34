"""The sessions study XR-S1 end to end (scripts/pilot/studies/sessions.py, sessions_analysis.py) on the fake server:
plan, run, status, verify, score, analyze; a kill -9 that resumes to identical results; secrets masked in every
report but kept in raw/; the study's options, its probes file and its refusals; the committed examples and the
demo."""
import json
import re
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

from fake_servers import FakeOllama
from helpers import FAST, REPO, TempDirMixin, kill_at_call, run_main
from pilot import bank
from pilot.cli import build_parser
from pilot.launch import resolve_run_dir
from pilot.studies.sessions import design as ss, analysis as ss_an

MODEL = "gemma3:4b"

SECRET = "sk-test0123456789abcdefXYZ"

# A deployment session, in a chat-json file: its values, one standing instruction, one denied step.
SESSION = [
    {"role": "system", "content": "You deploy services."},
    {"role": "user", "content": "Deploy build 3f9a2c1d of /srv/app/main.py to prod by 2025-03-12. The budget is "
                                f"$1,250.00, on the API key {SECRET}. From now on, never deploy on Fridays."},
    {"role": "assistant", "content": "Reading the release notes first.", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "deploy",
                                                      "arguments": json.dumps({"command": "./deploy.sh --env prod"})}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "Error: permission denied for prod (ticket OPS-4711)"},
    {"role": "assistant", "content": "The deploy was denied; 1,247 requests are queued."},
    {"role": "user", "content": "Then wait for OPS-4711 and write to ops@example.com."},
    {"role": "assistant", "content": "Understood. Version 2.3.1 stays staged until then."},
]

# (kind, value, segment) as the rules must read them (a pasted key is no value); the fake model copies exactly these.
VALUES = [("digest", "3f9a2c1d", 1), ("path", "/srv/app/main.py", 1), ("date", "2025-03-12", 1),
          ("amount", "$1,250.00", 1), ("path", "./deploy.sh", 2), ("identifier", "OPS-4711", 3), ("number", "1,247", 3),
          ("email", "ops@example.com", 4), ("version", "2.3.1", 4)]

PROSE_CHANGES = {"3f9a2c1d": "3f9a2c1", "1,247": "1,274"}     # what the fake's prose summary alters

PROSE_DROPS = {"/srv/app/main.py"}

PROBES = [{"question": "Which build was deployed?", "answer": "3f9a2c1d"},
          {"question": "What is the budget?", "answer": "$1,250.00", "kind": "amount"}]

ANSWERS = {"Which build was deployed?": "3f9a2c1d", "What is the budget?": "$1,250.00"}

CALLS = 4 * (4 + 2) + 2 * 2             # R1, R2, R3 and MYAGENT: 4 compactions and 2 probes; K1, K2: 2 probes


class SessionModel:
    """The fake's model for these tests: a typed block or sectioned summary copies every value it reads, the
    instruction and the denied step; a prose summary alters two values, drops one and the instruction, and reports
    the denied deploy as completed. Answers give the value asked for when the context holds it (or its altered
    form). Independent of the study's own extraction rules: it looks for the values listed above."""

    def reply(self, prompt: str) -> str:
        if "\nQuestion: " in prompt:
            context, _, question = prompt.rpartition("\nQuestion: ")
            truth = ANSWERS[question.split("\n", 1)[0]]
            for answer in (truth, PROSE_CHANGES.get(truth)):
                if answer and answer in context:
                    return f"Looking at the notes.\nANSWER: {answer}"
            return "I cannot tell from the notes."
        previous, _, segment = prompt.partition("PREVIOUS STATE:")[2].partition("NEW SEGMENT:")
        seen = [v for _, v, _ in VALUES if v in previous + segment or PROSE_CHANGES.get(v, "\0") in previous]
        if "typed state block" in prompt or "Critical values" in prompt:
            lines = ["values:"] + [f"- {v}" for v in seen]
            if "never deploy on Fridays" in previous + segment:
                lines += ["constraints:", "- never deploy on Fridays"]
            if "denied" in previous + segment:
                lines += ["status:", "- ./deploy.sh denied"]
            return "\n".join(lines)
        said = [PROSE_CHANGES.get(v, v) for v in seen if v not in PROSE_DROPS]
        text = "Summary: the session mentions " + ", ".join(said) + "."
        return text + (" ./deploy.sh completed successfully." if "deploy" in previous + segment else "")


def expected_classes(regime: str) -> list[str]:
    if regime in ("R2", "R3"):
        return ["kept"] * len(VALUES)
    if regime == "R1":
        return ["changed" if v in PROSE_CHANGES else "dropped" if v in PROSE_DROPS else "kept" for _, v, _ in VALUES]
    kept = {"K1": {"OPS-4711", "ops@example.com", "2.3.1"},             # said again in the last segment
            "K2": {"OPS-4711", "1,247", "ops@example.com", "2.3.1"}}[regime]
    return ["kept" if v in kept else "dropped" for _, v, _ in VALUES]


class SessionsStudyTest(TempDirMixin, unittest.TestCase):
    """One run of the session, its probes and a regime file of the user's own, made once on the fake server and read
    by the tests below (those that change a run make their own)."""

    @classmethod
    def setUpClass(cls):
        cls.shared = Path(tempfile.mkdtemp(prefix="ccl-test-"))
        cls.session, cls.probes = cls.shared / "deploy.json", cls.shared / "probes.json"
        cls.session.write_text(json.dumps(SESSION))
        cls.probes.write_text(json.dumps(PROBES))
        cls.design = ["--study", "sessions", "--sessions", str(cls.session), "--probes", str(cls.probes), "--models",
                      MODEL, "--regime-file", str(REPO / "tasks" / "regimes.example.json")]
        cls.out = cls.shared / "run"
        with FakeOllama(models=[MODEL]) as server:
            server.model = SessionModel()
            cls.printed = list(run_main(["run", *cls.design, "--host", server.url, "--out", str(cls.out), *FAST]))
            cls.calls = server.chat_count()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.shared, True)

    def setUp(self):
        self.tmp = self.make_tmp()

    def run_study(self, out: Path, *extra: str, server: FakeOllama, design: list | None = None) -> tuple:
        return run_main(["run", *(design or self.design), "--host", server.url, "--out", str(out), *FAST, *extra])

    def test_the_run_makes_every_call_of_the_plan(self):
        self.assertEqual(self.printed[0], 0, self.printed[2])
        self.assertEqual(self.calls, CALLS)

    def test_the_rules_read_the_session_as_written(self):
        _, tasks = ss.read_sessions(self.session, probes=str(self.probes))
        episode = tasks["episodes"][0]
        self.assertEqual([(v["kind"], v["text"], v["segment"]) for v in episode["values"]], VALUES)
        self.assertFalse(any(v["secret"] or SECRET in v["text"] for v in episode["values"]))   # a key is no value
        self.assertEqual([i["text"] for i in episode["instructions"]], ["From now on, never deploy on Fridays."])
        # the deploy tool's own "permission denied" is a refusal by the system, not by the user: failed
        self.assertEqual([(s["tool"], s["status"], s["match"]) for s in episode["steps"]],
                         [("deploy", "failed", ["./deploy.sh"])])
        self.assertEqual([q["type"] for q in episode["questions"]], ["digest", "amount"])

    def test_an_unchanged_reading_is_done_once_and_a_changed_file_is_read_again(self):
        session = self.tmp / "deploy.json"
        session.write_text(json.dumps(SESSION))
        first = ss.read_sessions(session)
        self.assertIs(ss.read_sessions(session), first)
        self.assertIsNot(ss.read_sessions(session, segments=3), first)
        session.write_text(json.dumps(SESSION[:-1]))
        self.assertNotEqual(ss.read_sessions(session)[0], first[0])

    def test_plan_says_what_was_read_before_any_call(self):
        code, out, err = run_main(["plan", *self.design, "--out", str(self.tmp / "new")])
        self.assertEqual(code, 0, err)
        self.assertIn("sessions read: 1 session(s)", out)
        self.assertIn("deploy.json: chat-json, 7 messages read, skipped: 1 system or developer message", out)
        self.assertIn("6 turns in 4 segments; 9 exact values, 1 standing instructions in force, 1 failed or denied steps, "
                      "2 probes", out)
        self.assertIn(f"total: {CALLS} calls (0 done)", out)
        code, out, err = run_main(["plan", "--out", str(self.out)])
        self.assertEqual(code, 0, err)
        self.assertIn(f"total: {CALLS} calls ({CALLS} done)", out)

    def test_status_verify_score_and_analyze_report_what_each_regime_lost(self):
        out = self.make_tmp() / "run"
        shutil.copytree(self.out, out)
        code, status, err = run_main(["status", "--out", str(out)])
        self.assertEqual(code, 0, err)
        self.assertIn("6 complete, 0 left", status)
        self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)
        code, scored, err = run_main(["score", "--out", str(out)])
        self.assertEqual(code, 0, err)
        results = json.loads((out / "results.json").read_text())
        for regime in ss.DEFAULT_REGIMES:
            with self.subTest(regime):
                rows = [r for r in results["values"] if r["regime"] == regime]
                self.assertEqual([r["class"] for r in rows], expected_classes(regime))
        changed = {r["value"]: r["instead"] for r in results["values"] if r["regime"] == "R1" and "instead" in r}
        self.assertEqual(changed, {1: "3f9a2c1", 7: "1,274"})
        present = {r["regime"]: r["status"] for r in results["instructions"]}
        self.assertEqual(present, {"R1": "absent", "R2": "present", "R3": "present", "K1": "absent", "K2": "absent",
                                   "MYAGENT": "absent"})
        self.assertEqual({r["regime"]: r["status"] for r in results["steps"]},      # R1's prose: "completed"
                         {"R1": "claimed done", "R2": "reported", "R3": "reported", "K1": "absent", "K2": "absent",
                          "MYAGENT": "absent"})
        gate = {s["regime"]: s["gate"]["counts"]["status"] for s in results["states"] if "gate" in s}
        self.assertEqual(set(gate), {"R1", "R2", "R3", "MYAGENT"})        # a Recent-k regime writes no state
        self.assertEqual(gate["R2"], 0)
        r1 = next(s for s in results["states"] if s["regime"] == "R1")     # the denied deploy shown as completed
        self.assertTrue(any("./deploy.sh" in f["text"] and f["category"] == "status" for f in r1["gate"]["findings"]))
        probes = {(p["regime"], p["question_id"]): p["class"] for p in results["probes"]}
        self.assertEqual(probes[("R2", 1)], "correct")
        self.assertEqual(probes[("R1", 1)], "changed")
        self.assertEqual(probes[("R1", 2)], "correct")
        self.assertEqual(probes[("K1", 1)], "omission")
        self.assertTrue((out / "probes.csv").read_text().startswith("model,regime,episode,question_id,type"))

        code, analysis, err = run_main(["analyze", "--out", str(out)])
        self.assertEqual(code, 0, err)
        self.assertEqual(analysis.strip(), (out / "analysis.md").read_text().strip())
        self.assertIn("EXPLORATORY", analysis)
        self.assertIn("| R1 | 6/9 = 66.7% | 0 | 2 | 1 | 0 | 3/9 = 33.3% |", analysis)
        self.assertIn("| R2 | 9/9 = 100.0% | 0 | 0 | 0 | 0 | 0/9 = 0.0% |", analysis)
        lost = re.search(r"### R1: 3 lost\n\n(.*?)\n\n", analysis, re.S).group(1)
        self.assertIn("| deploy.json | digest | 3f9a2c1d | changed | 3f9a2c1 | user, segment 1 | USER: Deploy build "
                      "3f9a2c1d of /srv/app/main.py to prod by 2025-03-12. |", lost)
        self.assertIn("| deploy.json | path | /srv/app/main.py | dropped | - |", lost)
        self.assertIn("| deploy.json | number | 1,247 | changed | 1,274 | assistant, segment 3 | ASSISTANT: The "
                      "deploy was denied; 1,247 requests are queued. |", lost)
        report = (out / "report.html").read_text()
        self.assertIn("<td>3f9a2c1</td>", report)
        self.assertIn("The deploy was denied; 1,247 requests are queued.", report)
        self.assertIn("1,274", (out / "lost.csv").read_text())
        copy = self.make_tmp() / "copy"                      # the bank alone, analysed elsewhere, says the same
        code, again, err = run_main(["analyze", "--results", str(out / "results.json"), "--out", str(copy)])
        self.assertEqual((code, again), (0, analysis), err)

    def test_secrets_are_masked_in_every_report_and_printed_line_but_kept_in_raw(self):
        out = self.make_tmp() / "run"
        shutil.copytree(self.out, out)
        printed = list(self.printed[1:])
        for command in (["status"], ["verify"], ["score"], ["analyze"], ["plan"]):
            printed += run_main([*command, "--out", str(out)])[1:]
        for text in printed:
            self.assertNotIn(SECRET, text)
        for name in ("results.json", "probes.csv", "analysis.md", "report.html", "lost.csv"):
            with self.subTest(name):
                text = (out / name).read_text()
                self.assertNotIn(SECRET, text)
                self.assertNotIn("0123456789abcdefXYZ", text)
        self.assertIn("sk-[masked]", (out / "analysis.md").read_text())
        self.assertIn(SECRET, "".join(p.read_text() for p in (out / "raw").glob("*.jsonl")))

    def test_kill_9_mid_run_then_resume_gives_identical_results(self):
        killed = self.tmp / "killed"
        with FakeOllama(models=[MODEL]) as server:
            server.model = SessionModel()
            command = [sys.executable, str(REPO / "scripts" / "run_pilot.py"), "run", *self.design, "--host",
                       server.url, "--out", str(killed), *FAST]
            kill_at_call(self, server, 9, command)                 # R2's third compaction is at the server
            journalled = sum(len(p.read_text().splitlines()) for p in (killed / "raw").glob("*.jsonl"))
            self.assertEqual(journalled, 8)
            before = server.chat_count()
            code, _, err = self.run_study(killed, server=server)
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count() - before, CALLS - journalled)
        self.assertEqual(run_main(["verify", "--out", str(killed)])[0], 0)
        reference = self.make_tmp() / "reference"
        shutil.copytree(self.out, reference)
        banks = []
        for folder in (reference, killed):
            self.assertEqual(run_main(["score", "--out", str(folder)])[0], 0)
            banks.append(json.loads((folder / "results.json").read_text()))
        for field in ("values", "instructions", "steps", "states", "probes", "sessions", "costs", "cells"):
            with self.subTest(field):
                self.assertEqual(banks[1][field], banks[0][field])

    def test_a_resume_with_changed_sessions_or_options_is_refused(self):
        session, out = self.tmp / "deploy.json", self.tmp / "run"
        session.write_text(json.dumps(SESSION))
        design = ["--study", "sessions", "--sessions", str(session), "--regimes", "K1", "--models", MODEL]
        with FakeOllama(models=[MODEL]) as server:
            self.assertEqual(self.run_study(out, server=server, design=design)[0], 0)
            code, _, err = self.run_study(out, "--segments", "3", server=server, design=design)
            self.assertEqual(code, 2)
            self.assertIn("study_options", err)
            session.write_text(json.dumps(SESSION[:-1]))
            code, _, err = self.run_study(out, server=server, design=design)
            self.assertEqual(code, 2)
            self.assertIn("was run on the sessions it read", err)
            self.assertIn("which changed since", err)
            self.assertEqual(server.chat_count(), 0)          # K1 without probes: no call at all

    def test_shards_merge_and_a_budget_sweep_run_as_for_every_study(self):
        design = ["--study", "sessions", "--sessions", str(self.session), "--probes", str(self.probes), "--regimes",
                  "R1,K1", "--models", MODEL]
        with FakeOllama(models=[MODEL]) as server:
            server.model = SessionModel()
            for shard in ("1/2", "2/2"):
                code, _, err = self.run_study(self.tmp / shard[0], "--shard", shard, server=server, design=design)
                self.assertEqual(code, 0, err)
            code, _, err = self.run_study(self.tmp / "sweep", "--budgets", "128,256", server=server,
                                          design=[*design[:-4], "--regimes", "R2", "--models", MODEL])
            self.assertEqual(code, 0, err)
        code, merged, err = run_main(["merge", str(self.tmp / "merged"), str(self.tmp / "1"), str(self.tmp / "2")])
        self.assertEqual(code, 0, err)
        self.assertIn("merged 2 complete cells of 2", merged)
        results = json.loads((self.tmp / "merged" / "results.json").read_text())
        self.assertEqual([r["class"] for r in results["values"] if r["regime"] == "R1"], expected_classes("R1"))
        self.assertEqual([r["class"] for r in results["values"] if r["regime"] == "K1"], expected_classes("K1"))
        self.assertTrue((self.tmp / "merged" / "report.html").exists())
        self.assertEqual(run_main(["score", "--out", str(self.tmp / "sweep")])[0], 0)
        sweep = json.loads((self.tmp / "sweep" / "results.json").read_text())
        self.assertEqual(sorted({r.get("budget", 256) for r in sweep["values"]}), [128, 256])
        self.assertIn("| R2 | 18/18 = 100.0% |", run_main(["analyze", "--out", str(self.tmp / "sweep")])[1])

    def test_segments_cut_at_turn_boundaries_fit_the_window_and_a_session_no_window_fits_is_refused(self):
        self.assertEqual(ss.cut_points([10, 10, 10, 10, 10, 10, 10, 10], 4), [0, 2, 4, 6])
        self.assertEqual(ss.cut_points([100, 1, 1, 1, 1], 3), [0, 1, 2])
        self.assertEqual(ss.cut_points([5, 5], 4), [0, 1])             # fewer turns than segments: one each
        long = [{"role": "user", "content": "Start."}] + [
            {"role": "assistant" if i % 2 else "user", "content": f"Part {i}: " + "words " * 500} for i in range(1, 9)]
        path = self.tmp / "long.json"
        path.write_text(json.dumps(long))
        code, out, err = run_main(["plan", "--study", "sessions", "--sessions", str(path), "--models", MODEL])
        self.assertEqual(code, 0, err)          # cut finer than the 4 asked, so that two segments fit 4,096 tokens
        self.assertIn("9 turns in 8 segments", out)
        self.assertIn("cut into 8 segments, not 4, so that each fits the 4,096-token window", out)
        code, out, err = run_main(["plan", "--study", "sessions", "--sessions", str(path), "--context-window", "2048",
                                   "--models", MODEL])
        self.assertEqual(code, 2)               # one turn alone does not leave room for an answer in 2,048 tokens
        self.assertIn("do not fit the 2,048-token window (--context-window) in 200 segments or fewer; give a "
                      "window of at least", err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)

    def test_a_long_turn_is_cut_to_fit_however_many_parts_it_has(self):
        turns = [{"role": "assistant", "text": "x" * 3000, "calls": [{"name": "Write", "input": {"content": "y" * 9000}}
                                                                   for _ in range(3)]},
                 {"role": "assistant", "text": "", "calls": [{"name": "W", "input": {"a": "y" * 300}}] * 60},
                 {"role": "tool", "tool": "Read", "error": False, "text": "z" * 10000}]
        for turn in turns:
            with self.subTest(len(turn.get("calls", []))):
                parts = ss.turn_parts(turn)
                self.assertLessEqual(sum(len(text) + 1 for _, text in parts), ss.MAX_TURN_CHARS)
                self.assertEqual(len(parts), len(turn.get("calls", [])) + (1 if turn.get("text") else 0) or 1)
        self.assertIn(ss.CUT_MARKER, ss.turn_parts(turns[2])[0][1])

    def test_bad_probes_files_and_options_are_one_line(self):
        second = self.tmp / "second.json"
        second.write_text(json.dumps(SESSION[:3]))
        folder = self.tmp / "two"
        folder.mkdir()
        shutil.copy(self.session, folder / "deploy.json")
        shutil.copy(second, folder / "second.json")
        cases = [([{"question": "Q?", "answer": "x"}], folder, "`session` must name one of the sessions read"),
                 ([{"question": "Q?", "answer": "a\nb"}], self.session, "`answer` must be the exact expected value"),
                 ([{"question": "Q?", "answer": "x", "kind": "colour"}], self.session, "`kind` must be one of"),
                 ([{"question": "Q?", "answer": "x", "hint": 1}], self.session, "no others"),
                 ({"probes": []}, self.session, "must hold a list of 1 to")]
        for probes, sessions, message in cases:
            with self.subTest(message):
                (self.tmp / "probes.json").write_text(json.dumps(probes))
                code, out, err = run_main(["plan", "--study", "sessions", "--sessions", str(sessions), "--probes",
                                           str(self.tmp / "probes.json"), "--models", MODEL])
                self.assertEqual((code, out), (2, ""))
                self.assertIn(message, err)
                self.assertEqual(len(err.strip().splitlines()), 1)
        (self.tmp / "probes.json").write_text(json.dumps([{"question": "Q?", "answer": "x"}]))
        link = self.tmp / "probes-link.json"        # resolved before its check, a link was once read through
        link.symlink_to(self.tmp / "probes.json")
        for argv, message in ((["plan", "--study", "sessions", "--sessions", str(self.session), "--probes", str(link),
                                "--models", MODEL], "or it is a link"),
                              (["generate", "--study", "sessions"], "has no task file to generate"),
                              (["plan", "--sessions", str(self.session), "--models", MODEL],
                               "--sessions belongs to the sessions study"),
                              (["plan", "--study", "sessions", "--segments", "0", "--models", MODEL],
                               "--segments takes a whole number from 1 to"),
                              (["plan", "--study", "sessions", "--sessions", str(self.tmp / "none"), "--models",
                                MODEL], "no sessions at")):
            with self.subTest(argv[0]):
                code, _, err = run_main(argv)
                self.assertEqual(code, 2)
                self.assertIn(message, err)
                self.assertEqual(len(err.strip().splitlines()), 1)

    def test_your_regime_is_asked_for_exact_answers_and_tested_against_each_built_in_one(self):
        answers = [json.loads(line) for line in (self.out / "raw" / "gemma3_4b_MYAGENT.jsonl").read_text().splitlines()
                   if '"answer"' in line]
        self.assertEqual(len(answers), 2)
        self.assertIn(ss.EXACT_RULE, answers[0]["messages"][0]["content"])
        results = bank.score_run(*self.bank_inputs())
        analysis = ss_an.analyze(results)
        self.assertEqual(analysis["user_regimes"], ["MYAGENT"])
        tests = {t["built_in"]: (t["b"], t["c"], t["sessions"], t["p"]) for t in analysis["tests"]}
        self.assertEqual(tests["R2"], (0, 1, 1, None))    # the fake's MYAGENT keeps nothing; one session: no p
        self.assertEqual(set(tests), set(ss.DEFAULT_REGIMES))

    def bank_inputs(self) -> tuple:
        from pilot.recorded_run import load_run
        from pilot.runfolder import Journal
        manifest, tasks = load_run(self.out)
        return manifest.data, tasks, Journal(self.out)


def value_rows(regime: str, classes: dict[int, str], models=("m",)) -> list[dict]:
    """Value rows of one regime: session -> a string of k (kept) and d (dropped), one letter a value."""
    return [{"model": m, "regime": regime, "episode": e, "value": v, "class": "kept" if c == "k" else "dropped"}
            for m in models for e, letters in classes.items() for v, c in enumerate(letters, 1)]


def small_bank(n_sessions: int, regimes=("R1", "MINE")) -> dict:
    """A complete bank of n sessions of four values each, every regime keeping the first value of each session."""
    read = {"read": 1, "unit": "messages", "skipped": {}, "turns": 1}
    sessions = [{"episode": e, "file": f"s{e}.json", "format": "chat-json", "read": read, "segments": 1,
                 "values": [{"id": v, "kind": "number", "text": str(10 * e + v), "source": "user", "sentence": "",
                             "segment": 1, "secret": False} for v in range(1, 5)],
                 "instructions": [], "steps": [], "probes": []} for e in range(n_sessions)]
    rows = [row for r in regimes for row in value_rows(r, {e: "kddd" for e in range(n_sessions)})]
    states = [{"model": "m", "regime": r, "episode": e, "compacted": r != "K1", "chars": 1}
              for r in regimes for e in range(n_sessions)]
    return {"models": ["m"], "regimes": list(regimes), "sessions": sessions, "values": rows, "instructions": [],
            "steps": [], "states": states, "probes": [],
            "costs": {r: {"calls": 0, "prompt_tokens": 0, "output_tokens": 0} for r in regimes},
            "regime_definitions": {"MINE": {"origin": "file.json"}}}


class SessionsAnalysisTest(unittest.TestCase):
    def test_a_value_the_regimes_own_prompt_gives_is_no_change_of_the_sessions(self):
        truth = ss.ground_truth([{"role": "user", "text": "We had 1,204 responses."}])
        episode = {**truth, "segments": [{"text": "We had 1,204 responses."}]}
        state = "Use at most 120 words. Merge the previous state."
        prompt = ss_an.prompt_text(ss.REGIMES["R1"], 256)
        self.assertIn("120 words", prompt)
        self.assertEqual([(v["status"], v["instead"]) for v in ss_an.score_state(episode, state, True, str)["values"]],
                         [("changed", "120")])
        self.assertEqual([(v["status"], v["instead"]) for v in
                          ss_an.score_state(episode, state, True, str, prompt)["values"]], [("dropped", None)])

    def test_the_paired_test_is_over_sessions_and_gives_no_p_below_six(self):
        """Point 8: the values of one state are not independent; one session gave Holm p = 0.021 before."""
        one = value_rows("MINE", {0: "k" * 12 + "d"}) + value_rows("R2", {0: "d" * 12 + "k"})
        (test,) = ss_an.paired_tests(one, ["MINE"], ["R2"])
        self.assertEqual((test["sessions"], test["b"], test["c"], test["p"]), (1, 1, 0, None))
        six = value_rows("MINE", {e: "kkd" for e in range(6)}) + value_rows("R2", {e: "kdd" for e in range(6)})
        (test,) = ss_an.paired_tests(six, ["MINE"], ["R2"])
        self.assertEqual((test["sessions"], test["b"], test["c"]), (6, 6, 0))
        self.assertAlmostEqual(test["p"], 2 / 2 ** 6)
        five = [r for r in six if r["episode"] < 5]
        self.assertIsNone(ss_an.paired_tests(five, ["MINE"], ["R2"])[0]["p"])

    def test_no_interval_below_ten_sessions_and_never_one_narrower_than_the_binomial(self):
        """Point 9: the bootstrap over 2 sessions covered the truth 57% of the time, and had no width when the
        session rates were equal."""
        few = ss_an.analyze(small_bank(3))
        self.assertNotIn("interval", few["kept"]["R1"])
        self.assertEqual(ss_an.fmt_interval(few["kept"]["R1"]), "3/12 = 25.0%")
        self.assertIn("This bank has 3 sessions: no interval is printed.", ss_an.render_md(few))
        many = ss_an.analyze(small_bank(10))["kept"]["R1"]
        wilson = ss_an.rate_summary(10, 40)
        self.assertTrue(many["interval"])                       # every session at 1/4: the bootstrap has no width
        self.assertEqual((many["lo"], many["hi"]), (wilson["lo"], wilson["hi"]))

    def test_duplicated_rows_are_refused_and_coverage_comes_from_the_rows(self):
        """Point 15: a repeated value row read 222/322; PARTIAL came from the file's cells block."""
        bank = small_bank(2)
        self.assertEqual(ss_an.check_bank(bank), [])
        doubled = {**bank, "values": bank["values"] + bank["values"][:1]}
        self.assertIn("values row 17 repeats an earlier row", ss_an.check_bank(doubled)[0])
        analysis = ss_an.analyze({**bank, "cells": {"expected": 4, "complete": 4}})
        self.assertTrue(analysis["complete"])
        short = {**bank, "values": bank["values"][:-1], "cells": {"expected": 4, "complete": 4}}
        self.assertEqual(ss_an.analyze(short)["coverage"], {"complete_cells": 3, "expected_cells": 4})
        self.assertIn("PARTIAL: 3 of 4 cells are complete", ss_an.render_md(ss_an.analyze(short)))
        missing = {**bank, "states": bank["states"][1:]}
        self.assertFalse(ss_an.analyze(missing)["complete"])

    def test_report_html_renders_its_markup_never_literal_backticks(self):
        import pilot.studies  # noqa: F401  (the registry the analysis names its study by)
        results = json.loads((REPO / "results" / "smollm2-135m-sessions" / "results.json").read_text())
        blocks = ss_an.report_blocks(ss_an.analyze(results))
        self.assertIn("`", ss_an.render_blocks_md(blocks))             # analysis.md writes `code` as markdown
        page = ss_an.render_blocks_html(blocks)
        shown = re.sub(r"<title>.*?</title>|<style>.*?</style>|<[^>]+>", " ", page, flags=re.S)
        self.assertNotIn("`", shown)
        self.assertIn("A sign test over sessions on <code>kept</code>", page)
        self.assertIn("<code>raw/recheck.jsonl</code>", page)

    def test_a_bank_of_the_wrong_shape_is_named(self):
        self.assertIn("`values` is missing", "; ".join(ss_an.check_bank({"models": ["m"], "regimes": ["R1"]})))
        bank = {"models": ["m"], "regimes": ["R1"], "sessions": [{"episode": 0, "file": "f", "values": [{"id": 1}],
                                                                  "instructions": [], "steps": []}],
                "values": [{"model": "m", "regime": "R1", "episode": 0, "value": 2, "class": "kept"}],
                "instructions": [], "steps": [], "states": [], "probes": [], "regime_definitions": {}, "costs": {}}
        self.assertIn("names an item its session does not hold", ss_an.check_bank(bank)[0])
        old = {**bank, "values": [], "instructions": [{"model": "m", "regime": "R1", "episode": 0, "instruction": 1,
                                                       "retained": True}]}
        self.assertIn("scored by an earlier version of the rules", ss_an.check_bank(old)[0])


def kept_rows(kept_by_session: dict) -> list[dict]:
    """Value rows of MYAGENT and R2 in each session: {session: (MYAGENT kept, R2 kept)}, one value
    each, so that a session counts for the regime that kept it."""
    return [{"model": "m", "regime": regime, "episode": session, "value": "v1",
             "class": "kept" if kept else "dropped"}
            for session, pair in kept_by_session.items()
            for regime, kept in zip(("MYAGENT", "R2"), pair)]


class PairedTestWordsTest(unittest.TestCase):
    """Issue 43, point 4: no "better" without a test that could have said otherwise at the alpha the
    protocol names, and an interval that says what it does not cover."""

    def direction(self, kept_by_session: dict) -> dict:
        return ss_an.paired_tests(kept_rows(kept_by_session), ["MYAGENT"], ["R2"])[0]

    def test_better_only_where_the_holm_p_is_below_the_alpha(self):
        self.assertEqual(self.direction({1: (False, True)})["direction"], "not tested")
        self.assertEqual(self.direction({e: (False, True) for e in range(1, 4)})["direction"],
                         "not tested")
        test = self.direction({e: (False, True) for e in range(1, 7)})     # 0 vs 6: p = 0.031
        self.assertLess(test["p_holm"], ss_an.ALPHA)
        self.assertEqual(test["direction"], "R2 better")
        mixed = {**{e: (False, True) for e in range(1, 4)}, **{e: (True, False) for e in range(4, 6)},
                 **{e: (True, True) for e in range(6, 11)}}                  # 2 vs 3: p = 1.0
        test = self.direction(mixed)
        self.assertGreaterEqual(test["p_holm"], ss_an.ALPHA)
        self.assertEqual(test["direction"], "no difference shown")
        test = self.direction({**{e: (False, True) for e in range(1, 6)},
                               **{e: (True, False) for e in range(6, 8)}})   # 2 vs 5: p = 0.45
        self.assertEqual(test["direction"], "no difference shown")

    def test_no_difference_is_said_where_the_family_lets_no_test_reach_the_alpha(self):
        # 6 sessions all one way: p = 0.031 alone, but Holm over 10 tests cannot go below 0.31
        kept = {e: (False, True) for e in range(1, 7)}
        rows = [dict(r, regime=regime) for r in kept_rows(kept) for regime in
                ([r["regime"]] if r["regime"] == "MYAGENT" else [f"B{k}" for k in range(10)])]
        tests = ss_an.paired_tests(rows, ["MYAGENT"], [f"B{k}" for k in range(10)])
        self.assertEqual({t["direction"] for t in tests}, {"not tested"})
        self.assertEqual(ss_an.sessions_for_family(10), 9)
        nine = {e: (False, True) for e in range(1, 10)}
        rows = [dict(r, regime=regime) for r in kept_rows(nine) for regime in
                ([r["regime"]] if r["regime"] == "MYAGENT" else [f"B{k}" for k in range(10)])]
        self.assertEqual({t["direction"] for t in ss_an.paired_tests(
            rows, ["MYAGENT"], [f"B{k}" for k in range(10)])}, {"B0 better", "B1 better", "B2 better",
                                                                  "B3 better", "B4 better", "B5 better",
                                                                  "B6 better", "B7 better", "B8 better",
                                                                  "B9 better"})

    def test_a_printed_interval_says_it_covers_the_sampling_of_sessions_only(self):
        from pilot.studies.sessions import report as ss_report
        few = {"n_sessions": 3, "min_sessions": {"interval": 10, "test": 6}}
        many = {"n_sessions": 12, "min_sessions": {"interval": 10, "test": 6}}
        self.assertNotIn("not the error of the rules", ss_report.intervals_note(few))
        self.assertIn("covers the sampling of sessions only, not the error of the rules",
                      ss_report.intervals_note(many))
        # the label's "these sessions" and a printed interval said together
        cover = {"coverage": {}, "complete": True}
        self.assertIn("these prompts. ", ss_report.label_why({**few, **cover}))
        self.assertIn("the intervals read the sessions as a sample of sessions like them",
                      ss_report.label_why({**many, **cover}))


class ExamplesTest(TempDirMixin, unittest.TestCase):
    def test_the_committed_examples_are_the_pinned_set_in_every_format(self):
        raw, tasks = ss.read_sessions(ss.TASKS_PATH, probes="tasks/sessions/probes.json")
        self.assertEqual(tasks["listing"], ss.PINNED_SESSIONS)
        self.assertEqual(ss.load_task_set(ss.TASKS_PATH, raw, tasks, "", True)["kind"], "pinned")
        self.assertEqual(ss.sha256_bytes(ss.read_sessions(ss.TASKS_PATH)[0]), ss.PINNED_TASKS_SHA256)
        args = build_parser("run").parse_args(["--study", "sessions", "--sessions", str(ss.TASKS_PATH)])
        self.assertEqual(resolve_run_dir(args).name, "sessions")          # the examples named: the pinned folder
        formats = [e["format"] for e in tasks["episodes"]]
        self.assertEqual(sorted(set(formats)), ["chat-json", "chat-jsonl", "claude-code"])
        self.assertTrue(all(formats.count(f) == 2 for f in set(formats)))
        self.assertEqual(len(tasks["episodes"]), ss.N_EXAMPLES)
        self.assertTrue(all(e["questions"] and e["instructions"] for e in tasks["episodes"]))

    def test_the_committed_worked_example_is_made_again_byte_for_byte_from_its_raw_logs(self):
        example = REPO / "results" / "smollm2-135m-sessions"
        copy = self.make_tmp() / "example"
        shutil.copytree(example, copy)
        self.assertEqual(run_main(["verify", "--out", str(copy)])[0], 0)
        self.assertEqual(run_main(["score", "--out", str(copy)])[0], 0)
        self.assertEqual(run_main(["analyze", "--out", str(copy)])[0], 0)
        for name in ("results.json", "probes.csv", "lost.csv", "report.html", "analysis.md"):
            with self.subTest(name):
                self.assertEqual((copy / name).read_bytes(), (example / name).read_bytes())
        # issue 43, point 2: the rules' measured figures, in one line with a pointer
        self.assertIn("How sure the rules are (measured", (copy / "analysis.md").read_text())
        self.assertIn("protocol/SESSIONS.md section 3.5", (copy / "report.html").read_text())

    def test_the_demo_runs_every_example_session_on_the_stand_in(self):
        out = self.make_tmp() / "demo"
        code, printed, err = run_main(["demo", "--study", "sessions", "--out", str(out), "--quiet"])
        self.assertEqual(code, 0, err)
        self.assertIn("SIMULATED", printed)
        results = json.loads((out / "results.json").read_text())
        self.assertEqual(len(results["sessions"]), ss.N_EXAMPLES)
        self.assertTrue((out / "analysis.md").read_text().startswith("# SIMULATED"))
        self.assertIn("SIMULATED", (out / "report.html").read_text())
        analysis = ss_an.analyze(results)
        self.assertGreater(analysis["kept"]["R2"]["k"], analysis["kept"]["R1"]["k"])
        self.assertGreater(analysis["instructions"]["R2"]["k"], analysis["instructions"]["R1"]["k"])
        self.assertNotIn("ghp_7Rk2", (out / "analysis.md").read_text())


if __name__ == "__main__":
    unittest.main()
