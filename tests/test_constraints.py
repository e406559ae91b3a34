"""The constraints study (protocol/CONSTRAINTS.md): task generation, forced-choice scoring, the retention rule,
effect retention, and the whole pipeline on a fake model that follows the instructions it can see and loses
them by design in compaction."""
import json
import random
import re
import unittest
import zlib
from pathlib import Path

from fake_servers import FakeOllama
from helpers import FAST, REPO, TempDirMixin, run_main
from pilot import bank, inputs, recorded_run, records, stats
from pilot.studies import episodes
from pilot.studies.constraints import design as constraints, analysis as constraints_analysis
from pilot.studies.xr001 import design as xr001

MODEL = "gemma3:4b"
USER_LINE = re.compile(r'^The user adds: "(.*)"$', re.MULTILINE)


class InstructionFollower:
    """A fake model for the constraints study.

    It follows a standing instruction whenever the instruction's body is in its prompt, and otherwise picks
    the violating option (its prior). Compaction loses by design: a prose summary drops every instruction;
    a typed block keeps one in its constraints: section only when the instruction's crc32 is even; the
    sidecar's extractor keeps every instruction it reads. So FULL+ > R1, R2 sits between, R1+X = FULL+.
    """

    def __init__(self, tasks: dict):
        self.probes = [(inst["questions"][0], inst["constraint"]["body"]) for inst in tasks["episodes"]]

    def reply(self, prompt: str) -> str:
        if "SAVED STATE:" in prompt and "JUDGE: YES" in prompt:
            state, _, rest = prompt.split("SAVED STATE:", 1)[1].partition("INSTRUCTION:")
            instruction = rest.strip().split("\n\n", 1)[0]
            return "JUDGE: YES" if instruction in state else "JUDGE: NO"
        if "LIST SO FAR:" in prompt:
            previous = prompt.split("LIST SO FAR:", 1)[1].split("NEW SEGMENT:", 1)[0].split()
            kept = [line for line in prompt.split("LIST SO FAR:", 1)[1].split("NEW SEGMENT:", 1)[0].splitlines()
                    if line.strip() and line.strip() != "NONE"]
            said = USER_LINE.findall(prompt.split("NEW SEGMENT:", 1)[1])
            lines = list(dict.fromkeys(kept + said))
            return "\n".join(lines) if lines and previous is not None else "NONE"
        if "NEW SEGMENT:" in prompt and "PREVIOUS STATE:" in prompt:
            previous = prompt.split("PREVIOUS STATE:", 1)[1].split("NEW SEGMENT:", 1)[0]
            segment = prompt.split("NEW SEGMENT:", 1)[1]
            said = USER_LINE.findall(segment) + re.findall(r"^- (.*)$", previous, re.MULTILINE)
            if "constraints:" in prompt.split("PREVIOUS STATE:", 1)[0]:
                kept = [s for s in dict.fromkeys(said) if zlib.crc32(s.encode()) % 2 == 0]
                return "values:\nnone kept\nnotes: figures as read\nconstraints:\n" + "\n".join(f"- {s}" for s in kept)
            return "The session went through its figures; nothing else of note."
        for question, body in self.probes:
            if question["prompt"] in prompt:
                context = prompt.split("The user now writes:", 1)[0].lower()
                follows = body[1:].lower() in context
                return f"CHOICE: {question['truth'] if follows else question['violating']}"
        return "I cannot tell."


def compliance(analysis: dict, regime: str) -> float:
    return analysis["compliance"][MODEL][regime]["rate"]


class GenerationTest(TempDirMixin, unittest.TestCase):
    def test_the_committed_task_file_is_the_generators_and_pinned(self):
        raw = (REPO / "tasks" / "constraints.json").read_bytes()
        self.assertEqual(records.sha256_bytes(raw), constraints.PINNED_TASKS_SHA256)
        self.assertEqual(raw, inputs.tasks_to_bytes(constraints.generate_constraint_tasks()))
        self.assertEqual(inputs.load_task_set(REPO / "tasks" / "constraints.json")["kind"], "pinned")

    def test_fifteen_constraints_three_per_category_each_with_a_known_compliant_option(self):
        tasks = constraints.generate_constraint_tasks()
        self.assertEqual(len(tasks["episodes"]), 15)
        self.assertEqual(constraints.check_task_design(tasks), [])
        categories = [inst["constraint"]["category"] for inst in tasks["episodes"]]
        self.assertEqual({c: categories.count(c) for c in constraints.CATEGORIES}, dict.fromkeys(constraints.CATEGORIES, 3))
        for inst in tasks["episodes"]:
            with self.subTest(inst["constraint"]["id"]):
                q = inst["questions"][0]
                self.assertNotEqual(q["options"]["A"], q["options"]["B"])
                self.assertEqual(inst["injected_segments"], [2])              # middle, pre-registered
                self.assertIn(inst["instruction"], inst["segments"][1]["text"])
                self.assertNotIn(inst["instruction"], inst["segments"][1]["plain_text"])
                self.assertTrue(inst["instruction"].startswith(constraints.DIRECT_LEAD))
                # the session material is XR-001's episode, unchanged where nothing is said
                self.assertEqual(inst["segments"][0]["text"], episodes.generate_episode(inst["episode"])["segments"][0]["text"])

    def test_no_key_term_occurs_without_the_instruction(self):
        """Issue 20, point 8: act_sheet's "worksheet" was in filler sentences, pro_ask_combine's "combin" in the
        sessions' "combined figure" sentences and its "ask" in the extractor prompt's "task": the retention rule
        found those instructions in any state that kept that text. The design check refuses such a task set."""
        every = constraints.generate_constraint_tasks(constraints.POSITIONS, [(a, b) for a in constraints.STRENGTHS
                                                                                 for b in constraints.SCOPES])
        self.assertEqual(constraints.check_task_design(every), [])
        old = constraints.generate_constraint_tasks()
        old["episodes"][2]["constraint"]["key_terms"] = ["worksheet"]                    # sc-gen-1's terms
        old["episodes"][6]["constraint"]["key_terms"] = ["ask", "combin"]
        problems = constraints.check_task_design(old)
        self.assertEqual(len(problems), 3, problems)
        self.assertIn("instance 2 (act_sheet): the key term 'worksheet' occurs in segment 2 without the instruction",
                      problems[0])
        self.assertIn("instance 6 (pro_ask_combine): the key term 'combin' occurs in segment 1", problems[1])
        self.assertIn("'ask' occurs in the extract prompt", problems[2])
        # such a file is refused when a run is asked to use it, in one message that says what is wrong
        path = self.make_tmp() / "old.json"
        path.write_bytes(inputs.tasks_to_bytes(old))
        with self.assertRaises(inputs.TaskSetError) as caught:
            inputs.load_task_set(path)
        self.assertIn("the key term 'worksheet' occurs in segment 2", str(caught.exception))

    def test_option_order_is_the_same_under_every_position_and_framing(self):
        tasks = constraints.generate_constraint_tasks(constraints.POSITIONS, [(a, b) for a in constraints.STRENGTHS for b in constraints.SCOPES])
        self.assertEqual(len(tasks["episodes"]), 15 * 4 * 4)
        by_constraint = {}
        for inst in tasks["episodes"]:
            by_constraint.setdefault(inst["constraint"]["id"], set()).add(json.dumps(inst["questions"][0]))
            carriers = inst["injected_segments"]
            expected = {"top": [1], "middle": [2], "bottom": [4]}.get(inst["position"])
            self.assertEqual(carriers, expected) if expected else self.assertEqual(len(carriers), 2)
        self.assertTrue(all(len(v) == 1 for v in by_constraint.values()))
        strict = constraints.render_instruction("Ask me first.", "strict", "contextualised")
        self.assertTrue(strict.startswith(constraints.STRICT_LEAD) and constraints.DIRECT_LEAD not in strict)


class BroughtTaskFileTest(TempDirMixin, unittest.TestCase):
    """A task file a user brings is checked for everything the run later reads, before any call (issue 29): a
    constraints file whose segments lack XR-001's entities passed the design check, then every compacted cell
    crashed with KeyError: 'entities' in the release gate's ledger."""

    def test_a_file_lacking_what_the_gate_reads_is_refused_before_any_call(self):
        tasks = json.loads(constraints.TASKS_PATH.read_text())
        tasks["episodes"] = tasks["episodes"][:2]
        tasks["n_episodes"] = 2
        for instance in tasks["episodes"]:
            for segment in instance["segments"]:
                del segment["entities"]
        del tasks["episodes"][1]["conflation_set"]
        path = self.make_tmp() / "mine.json"
        path.write_text(json.dumps(tasks))
        with FakeOllama(models=[MODEL]) as server:
            code, _, err = run_main(["run", "--study", "constraints", "--tasks", str(path), "--models", MODEL,
                                     "--host", server.url, "--out", str(self.make_tmp() / "run"), *FAST])
            self.assertEqual(server.chat_count(), 0)
        self.assertEqual(code, 2, err)
        self.assertIn("design check(s) of the constraints task schema", err)
        self.assertIn("instance 0: segment 1: `entities` must hold base, partner and neighbor", err)
        self.assertIn("instance 1: `conflation_set` must be a list", err)
        self.assertNotIn("Traceback", err)

    def test_an_adversarial_file_lacking_a_probes_trap_is_refused_before_any_call(self):
        from pilot.studies.adversarial import design as adversarial
        tasks = json.loads(adversarial.TASKS_PATH.read_text())
        del tasks["episodes"][0]["probes"][1]["trap"]
        del tasks["episodes"][1]["entities"][0]["stale"]
        path = self.make_tmp() / "mine.json"
        path.write_text(json.dumps(tasks))
        with FakeOllama(models=[MODEL]) as server:
            code, _, err = run_main(["adversarial", "--tasks", str(path), "--models", MODEL, "--host", server.url,
                                     "--out", str(self.make_tmp() / "run"), *FAST])
            self.assertEqual(server.chat_count(), 0)
        self.assertEqual(code, 2, err)
        self.assertIn("session 0: `probes` must be a list of", err)
        self.assertIn("session 1: `entities` must be a list of {name, value, segment, stale: a list}", err)


class ScoringTest(unittest.TestCase):
    def test_forced_choice_classes(self):
        question = {"id": 1, "kind": "forced_choice", "type": "process", "truth": "B", "violating": "A"}
        for reply, cls in [("CHOICE: B", "compliant"), ("choice: a", "violating"), ("B) because", "no_answer"),
                           ("", "no_answer"), ("CHOICE: B\nCHOICE: b", "compliant"),
                           ("CHOICE: A\nCHOICE: B", "no_answer")]:          # both letters: it chose neither
            with self.subTest(reply):
                self.assertEqual(bank.score_probe({"response": reply}, question, [])["class"], cls)
        self.assertEqual(bank.score_probe({"response": "B) because"}, question, [])["lenient_answer"], "B")

    def test_an_echo_of_the_answer_rule_or_the_options_is_no_answer(self):
        """Issue 20, point 14: the answer rule's own "CHOICE: A or CHOICE: B" read as B made an echo "violating"
        (6 of the first worked example's 7 violating probes were such echoes)."""
        question = {"id": 1, "kind": "forced_choice", "type": "action", "truth": "A", "violating": "B"}
        options = "Which change do you make?\nA) Keep RAFULI in the record.\nB) Drop RAFULI from the record."
        echoes = {"the rule alone": constraints.CHOICE_RULE,
                  "a letter, then the question, options and rule": f"A\n\nThe user now writes: {options}\n"
                                                                     f"{constraints.CHOICE_RULE}",
                  "the options and the rule": f"{options}\n{constraints.CHOICE_RULE}",
                  "the options alone": options.split("\n", 1)[1],
                  "both letters joined": "CHOICE: A and CHOICE: B", "a short form of the rule": "CHOICE: A or B",
                  "a slash": "CHOICE: A/B", "both letters as lines": "A\nA\nB",
                  # the rule repeated until the output cap cut it (seen in the re-run worked example, R2)
                  "the rule cut short": "The user now writes: What is SITUKI?\nReply with a single line of the form "
                                        "CHOICE: A or"}
        for name, reply in echoes.items():
            with self.subTest(name):
                scored = bank.score_probe({"response": reply}, question, [])
                self.assertEqual((scored["answer"], scored["class"]), (None, "no_answer"))
                self.assertNotIn("lenient_answer", scored)
        # a choice after the echo, or one option repeated alone, commits to one letter
        committed = {f"{options}\n{constraints.CHOICE_RULE}\nCHOICE: B": ("B", None),
                     "CHOICE: (A) keep it": ("A", None), "A) Keep RAFULI in the record.": (None, "A"),
                     "CHOICE: A or CHOICE: A": ("A", None), "CHOICE: B, orderly as asked": ("B", None)}
        for reply, (answer, lenient) in committed.items():
            with self.subTest(reply):
                scored = bank.score_probe({"response": reply}, question, [])
                self.assertEqual((scored["answer"], scored.get("lenient_answer")), (answer, lenient))

    def test_retention_rule_reads_the_typed_section_and_prose(self):
        episode = constraints.generate_constraint_tasks()["episodes"][6]            # ask before combining
        self.assertEqual(episode["constraint"]["key_terms"], ["ask me before"])
        typed = "values:\nA = 1\ncombined:\nA + B = 3\nconstraints: Ask me  before combining values\nnotes: x"
        self.assertTrue(constraints_analysis.score_constraint_retention(constraints.REGIMES["R2"], typed, None, episode)["in_state"])
        # the words in a section other than constraints: do not count for a typed block
        loose = "values:\nA = 1\ncombined:\nA + B = 3\nnotes: the user said ask me before the next step"
        self.assertFalse(constraints_analysis.score_constraint_retention(constraints.REGIMES["R2"], loose, None, episode)["in_state"])
        # prose: the key terms anywhere (the documented false positive)
        self.assertTrue(constraints_analysis.score_constraint_retention(constraints.REGIMES["R1"], loose, None, episode)["in_state"])
        # a paraphrase without the terms is missed (the documented false negative)
        self.assertFalse(constraints_analysis.score_constraint_retention(constraints.REGIMES["R1"], "Check with the user before combining.", None, episode)["in_state"])
        row = constraints_analysis.score_constraint_retention(constraints.REGIMES["R1+X"], "nothing", "Ask me before you combine", episode)
        self.assertEqual((row["in_state"], row["in_registry"], row["carried"]), (False, True, True))

    def test_effect_retention_and_its_interval(self):
        rows = [(True, False, True)] * 6 + [(False, False, True)] * 6 + [(False, False, False)] * 3
        self.assertAlmostEqual(constraints_analysis.effect_retention(rows), 0.5)
        summary = constraints_analysis.effect_retention_summary(rows)
        self.assertEqual(summary, constraints_analysis.effect_retention_summary(rows))          # seeded
        self.assertLess(summary["lo"], 0.5)
        self.assertGreater(summary["hi"], 0.5)
        self.assertIsNone(constraints_analysis.effect_retention([(True, True, True)]))
        # the instruction appended lowers compliance below the prior: there is no effect to retain, so no ratio
        # (the two negative differences would read 1.00, seen on a real small model)
        self.assertIsNone(constraints_analysis.effect_retention([(False, True, False), (False, False, False)]))
        self.assertIn("undefined (c_ub <= c_noSC", constraints_analysis.fmt_er(constraints_analysis.effect_retention_summary([(False, True, False)])))


def synthetic_bank(episodes: range, regimes: tuple = constraints.DEFAULT_REGIMES,
                   complying: tuple = ("FULL+", "R1+X")) -> dict:
    """A constraints results.json of the pinned task set's `episodes`, whose `cells` block and `n_episodes` claim
    the whole design: FULL+ and R1+X comply, every other regime violates (so R1+X beats R1 on every pair)."""
    tasks = json.loads((REPO / "tasks" / "constraints.json").read_text())["episodes"]
    probes = []
    for regime in regimes:
        for e in episodes:
            q = tasks[e]["questions"][0]
            follows = regime in complying
            probes.append({"model": MODEL, "regime": regime, "episode": e, "question_id": 1, "type": q["type"],
                           "truth": q["truth"], "answer": q["truth"] if follows else q["violating"],
                           "class": "compliant" if follows else "violating", "budget": records.DEFAULT_BUDGET,
                           "sample": 0, **constraints_analysis.instance_factors(tasks[e])})
    expected = len(regimes) * len(tasks)
    return {"study": "constraints", "protocol": constraints.PROTOCOL_ID, "models": [MODEL], "regimes": list(regimes),
            "n_episodes": len(tasks), "temperature": 0, "budgets": [records.DEFAULT_BUDGET], "samples": 1,
            "cells": {"complete": expected, "not_complete": 0, "expected": expected, "expected_probes_per_cell": 1},
            "probes": probes, "states": [], "calls": []}


N_REGIMES = len(constraints.DEFAULT_REGIMES)

CELLS = 15 * N_REGIMES                  # the default design's cells for one model


class SidecarWordsTest(unittest.TestCase):
    """Issue 30, points 4 and 5: the verdict names the sidecar as heading plus registry while the heading control is
    not clearly below it; the pooled effect retention resamples instances, every model of an instance together."""

    @classmethod
    def setUpClass(cls):
        cls.task_set = inputs.load_task_set(REPO / "tasks" / "constraints.json")

    def test_a_heading_control_as_good_as_the_sidecar_makes_the_verdict_name_the_heading(self):
        verdict = constraints_analysis.analyze(synthetic_bank(range(15), complying=("FULL+", "R1+X", "R1+H")),
                                               self.task_set)["confirmatory_test"]["verdict"]
        self.assertTrue(verdict.startswith("supported: R1+X complied more often than R1"))
        self.assertIn("R1+X is the sidecar's heading plus its registry, and the heading control R1+H is not clearly "
                      "below it (R1+X against R1+H: b = 0, c = 0, exact McNemar p = 1.0000)", verdict)
        without = tuple(r for r in constraints.DEFAULT_REGIMES if r != "R1+H")
        verdict = constraints_analysis.analyze(synthetic_bank(range(15), regimes=without),
                                               self.task_set)["confirmatory_test"]["verdict"]
        self.assertIn("R1+H was not run, so the gain cannot be given to the registry", verdict)
        clear = constraints_analysis.analyze(synthetic_bank(range(15)), self.task_set)["confirmatory_test"]["verdict"]
        self.assertNotIn("heading", clear)                       # R1+H violates on every instance: clearly below

    def test_the_pooled_interval_draws_instances_with_every_model_of_them(self):
        # two models that agree on every instance: pooled pairs are not independent
        per_instance = {e: [(e < 6, False, True)] * 2 for e in range(12)}
        summary = constraints_analysis.effect_retention_summary(per_instance)
        self.assertEqual((summary["n"], summary["instances"]), (24, 12))
        rng, drawn = random.Random(stats.BOOTSTRAP_SEED), []
        for _ in range(stats.BOOTSTRAP_REPLICATES):
            rows = [row for _ in range(12) for row in per_instance[rng.randrange(12)]]
            value = constraints_analysis.effect_retention(rows)
            if value is not None:
                drawn.append(value)
        drawn.sort()
        self.assertEqual((summary["lo"], summary["hi"]), (drawn[int(0.025 * (len(drawn) - 1))],
                                                          drawn[int(0.975 * (len(drawn) - 1))]))
        flat = constraints_analysis.effect_retention_summary([row for rows in per_instance.values() for row in rows])
        self.assertLess(flat["hi"] - flat["lo"], summary["hi"] - summary["lo"])      # pairs as if independent: too narrow


class LabelTest(unittest.TestCase):
    """Issue 20, point 1: the label comes from what the probes cover, never from the bank's `cells` or
    `n_episodes` (a bank of 6 of the 15 instances, its `cells` saying complete, read CONFIRMATORY, supported,
    p = 0.031)."""

    @classmethod
    def setUpClass(cls):
        cls.task_set = inputs.load_task_set(REPO / "tasks" / "constraints.json")

    def analyze(self, results: dict) -> dict:
        self.assertEqual(bank.results_shape_problems(results), [])
        return constraints_analysis.analyze(results, self.task_set)

    def test_the_whole_design_once_is_confirmatory(self):
        analysis = self.analyze(synthetic_bank(range(15)))
        self.assertEqual((analysis["label"], analysis["reasons"]), ("CONFIRMATORY", []))
        self.assertTrue(analysis["confirmatory_test"]["verdict"].startswith("supported"))
        self.assertEqual((analysis["coverage"]["complete_cells"], analysis["coverage"]["expected_cells"]), (CELLS, CELLS))

    def test_six_of_fifteen_instances_are_a_smoke_run_whatever_cells_says(self):
        results = synthetic_bank(range(6))
        analysis = self.analyze(results)
        self.assertEqual(analysis["confirmatory_test"]["test"]["p"], 0.03125)     # the verdict it would have had
        self.assertEqual(analysis["label"], "NON-CONFIRMATORY")
        self.assertIn("smoke run: 6 of the 15 pre-registered instances", analysis["reasons"])
        self.assertIn(f"the file's `cells` block (complete {CELLS}, not complete 0) disagrees with its probes "
                      f"({6 * N_REGIMES} complete cells)", analysis["reasons"])
        self.assertTrue(analysis["complete"])       # every cell of the 6 instances it holds has its probe

    def test_missing_repeated_outside_and_mismatched_probes_are_counted(self):
        results = synthetic_bank(range(15))
        del results["probes"][20]                                                # FULL- instance 5
        analysis = self.analyze(results)
        self.assertEqual(analysis["label"], "NON-CONFIRMATORY")
        self.assertFalse(analysis["complete"])
        self.assertIn(f"partial bank: {CELLS - 1} of {CELLS} cells have their probe (first without: {MODEL}|FULL-|5)",
                      analysis["reasons"])
        results = synthetic_bank(range(15))
        results["probes"].append(dict(results["probes"][0]))
        results["probes"].append({**results["probes"][1], "episode": 15})        # no such instance
        flipped = results["probes"][2]
        flipped["truth"] = "A" if flipped["truth"] == "B" else "B"
        analysis = constraints_analysis.analyze(results, self.task_set)
        self.assertEqual(analysis["label"], "NON-CONFIRMATORY")
        self.assertFalse(analysis["complete"])
        for reason in ("1 duplicated probe(s)", "1 probe(s) outside the bank's models, regimes and budgets or the task "
                       "set's instances, left out of every figure",
                       "1 probe(s) whose compliant letter or category differs from the task set"):
            self.assertIn(reason, analysis["reasons"])
        self.assertEqual(analysis["compliance"][MODEL]["FULL+"]["n"], 16)        # the outside probe is not counted
        results = synthetic_bank(range(15))
        results["probes"] = [p for p in results["probes"] if p["regime"] != "R1+X"]     # listed, never asked
        analysis = self.analyze(results)
        self.assertIn(f"partial bank: {CELLS - 15} of {CELLS} cells have their probe (first without: {MODEL}|R1+X|0)",
                      analysis["reasons"])
        results["regimes"].remove("R1+X")
        self.assertIn("the bank lacks R1+X", self.analyze(results)["reasons"])


class BankTest(unittest.TestCase):
    def test_a_bank_without_the_pre_registered_budget_says_so(self):
        results = json.loads((REPO / "results" / "smollm2-135m-constraints" / "results.json").read_text())
        for probe in results["probes"]:
            probe["budget"] = 128
        results["budgets"] = [128]
        self.assertEqual(bank.results_shape_problems(results), [])
        analysis = bank.analyze_bank(results)
        self.assertIn(f"no probe at the pre-registered budget {records.DEFAULT_BUDGET} and first sample, the only ones "
                      f"this analysis reads", analysis["reasons"])


class PipelineTest(TempDirMixin, unittest.TestCase):
    """End to end through main(): run, resume, verify, status, plan, analysis, figures and report."""

    @classmethod
    def setUpClass(cls):
        cls.tasks = json.loads((REPO / "tasks" / "constraints.json").read_text())
        cls.server = FakeOllama(models=[MODEL]).__enter__()
        cls.server.model = InstructionFollower(cls.tasks)

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def test_expected_ordering_end_to_end(self):
        out = self.make_tmp() / "sc"
        argv = ["--study", "constraints", "--models", MODEL, "--host", self.server.url, "--out", str(out),
                "--concurrency", "4", *FAST]
        first = self.server.chat_count()
        code, stdout, err = run_main(argv)
        self.assertEqual(code, 0, err)
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertEqual((manifest["study"], manifest["protocol"]), ("constraints", constraints.PROTOCOL_ID))
        self.assertEqual(self.server.chat_count() - first, 675)               # 15 x (1+1+5+5+5+5+9+9+5)
        analysis = bank.analyze_bank(json.loads((out / "results.json").read_text()))
        self.assertEqual(analysis["label"], "CONFIRMATORY")
        self.assertEqual(compliance(analysis, "FULL+"), 1.0)
        self.assertEqual(compliance(analysis, "FULL-"), 0.0)
        self.assertEqual(compliance(analysis, "R1"), 0.0)
        self.assertGreater(compliance(analysis, "FULL+"), compliance(analysis, "R2"))
        self.assertGreaterEqual(compliance(analysis, "R1+X"), compliance(analysis, "R1"))
        self.assertGreaterEqual(compliance(analysis, "R2+X"), compliance(analysis, "R2"))
        self.assertEqual(compliance(analysis, "R1+UB"), 1.0)
        er = analysis["effect_retention"][MODEL]
        self.assertEqual((er["R1"]["er"], er["R1+X"]["er"]), (0.0, 1.0))
        self.assertEqual(analysis["retention"][MODEL]["R1"]["carried"]["rate"], 0.0)
        self.assertEqual(analysis["retention"][MODEL]["R1+X"]["registry"]["rate"], 1.0)
        r2_kept = analysis["retention"][MODEL]["R2"]["state"]["rate"]
        self.assertAlmostEqual(compliance(analysis, "R2"), r2_kept)           # compliance follows what was kept
        self.assertTrue(analysis["confirmatory_test"]["verdict"].startswith("supported"))
        # every breakdown level carries effect retention with its seeded bootstrap interval
        for level, cell in analysis["breakdowns"]["category"].items():
            with self.subTest(level):
                self.assertEqual((cell["effect_retention"]["R1+X"]["er"], cell["effect_retention"]["R1+X"]["n"]),
                                 (1.0, 3))
                self.assertIsNotNone(cell["effect_retention"]["R1+X"]["lo"])
        side = {s["sidecar"]: s for s in analysis["sidecar"]}
        self.assertEqual(side["R1+X"]["extra_calls"], 60)
        # the heading control: this model reads the registry, not the heading, so the heading alone does nothing
        self.assertEqual(compliance(analysis, "R1+H"), 0.0)
        (control,) = analysis["heading_control"]
        self.assertEqual((control["heading_effect"]["c"], control["registry_effect"]["c"]), (0, 15))
        self.assertIn("The sidecar's heading alone: a control (exploratory)", (out / "analysis.md").read_text())
        for name in ("analysis.md", "RESULTS.md", "report.html", "figures/fig_c_compliance.svg", "probes.csv"):
            self.assertTrue((out / name).exists(), name)
        text = (out / "analysis.md").read_text()
        for needle in ("Effect retention", "extractor sidecar", "By category", "By position", "By framing"):
            self.assertIn(needle, text)
        self.assertIn("CONFIRMATORY", stdout)
        # resume: nothing left, no call sent; verify finds nothing; status and plan read the folder
        before = self.server.chat_count()
        code, _, err = run_main(argv)
        self.assertEqual((code, self.server.chat_count()), (0, before), err)
        code, stdout, err = run_main(["verify", "--out", str(out)])
        self.assertEqual(code, 0, stdout + err)
        code, stdout, _ = run_main(["plan", "--study", "constraints", "--models", MODEL])
        self.assertEqual(code, 0)
        self.assertIn("total: 675 calls", stdout)
        # the lock refuses another study's settings on the same folder
        code, _, err = run_main(["--models", MODEL, "--host", self.server.url, "--out", str(out), *FAST])
        self.assertEqual(code, records.EXIT_USAGE)
        self.assertIn("constraints", err)

    def test_the_heading_control_tells_the_headings_effect_from_the_registrys(self):
        """Issue 20, point 9: R1+X's probe always sees the sidecar's heading, even over an empty registry. A model
        that complies whenever it sees that heading gains as much from R1+H (the heading alone) as from R1+X."""
        out = self.make_tmp() / "heading"
        follower = self.server.model
        heading = constraints.PROMPTS["registry_heading"]

        class HeadingFollower:
            def reply(self, prompt: str) -> str:
                answer = follower.reply(prompt)
                for question, _ in follower.probes:
                    if question["prompt"] in prompt and heading in prompt.split("The user now writes:", 1)[0]:
                        return f"CHOICE: {question['truth']}"
                return answer

        self.server.model = HeadingFollower()
        try:
            code, _, err = run_main(["--study", "constraints", "--regimes", "FULL+,FULL-,R1,R1+X,R1+H", "--episodes",
                                     "3", "--models", MODEL, "--host", self.server.url, "--out", str(out), *FAST])
        finally:
            self.server.model = follower
        self.assertEqual(code, 0, err)
        raw = [json.loads(line) for line in (out / "raw" / "gemma3_4b_R1+H.jsonl").read_text().splitlines()]
        self.assertEqual({r["kind"] for r in raw}, {"compact_1", "compact_2", "compact_3", "compact_4", "question_1"})
        self.assertTrue(all(f"{heading}\nNONE" in r["messages"][-1]["content"] for r in raw if r["kind"] == "question_1"))
        analysis = bank.analyze_bank(json.loads((out / "results.json").read_text()))
        self.assertEqual([compliance(analysis, r) for r in ("R1", "R1+H", "R1+X")], [0.0, 1.0, 1.0])
        (control,) = analysis["heading_control"]
        self.assertEqual((control["heading_effect"]["c"], control["registry_effect"]["b"],
                          control["registry_effect"]["c"]), (3, 0, 0))
        self.assertEqual(analysis["regime_definitions"]["R1+H"]["exploratory"], True)
        self.assertEqual(analysis["confirmatory_test"]["first"], "R1")               # the test is unchanged

    def test_counts_no_server_could_mean_never_enter_the_sidecars_cost(self):
        """Issue 20, point 13, for this study: negative token counts are unknown, never summed into the cost."""
        out = self.make_tmp() / "counts"
        self.server.count_override = (-5, -3)
        try:
            code, _, err = run_main(["--study", "constraints", "--regimes", "FULL+,FULL-,R1,R1+X", "--episodes", "2",
                                     "--models", MODEL, "--host", self.server.url, "--out", str(out), *FAST])
        finally:
            self.server.count_override = None
        self.assertEqual(code, 0, err)
        results = json.loads((out / "results.json").read_text())
        self.assertEqual({(c["eval_count"], c["prompt_eval_count"]) for c in results["calls"]}, {(None, None)})
        # and a results.json that holds such counts (written by hand, or by an older runner) is read the same way
        for call in results["calls"]:
            call["eval_count"], call["prompt_eval_count"] = -3, -5
        side = {s["sidecar"]: s for s in bank.analyze_bank(results)["sidecar"]}["R1+X"]
        self.assertEqual((side["extra_calls"], side["extra_prompt_tokens"], side["extra_output_tokens"],
                          side["extra_unknown_counts"], side["compaction_tokens"]), (8, 0, 0, 8, 0))
        self.assertIn("(8 call(s) with no usable token count, not summed)",
                      constraints_analysis.render_md(bank.analyze_bank(results)))

    def test_judge_is_recorded_per_state_beside_the_rule(self):
        out = self.make_tmp() / "judged"
        argv = ["--study", "constraints", "--judge", "--episodes", "3", "--models", MODEL, "--host", self.server.url,
                "--out", str(out), "--concurrency", "4", *FAST]
        before = self.server.chat_count()
        code, _, err = run_main(argv)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.server.chat_count() - before, 3 * (45 + 4))    # one judge call per compacted cascade
        results = json.loads((out / "results.json").read_text())
        # every compacted state the instruction was said to, but the heading control's, which R1 already judges
        self.assertEqual({s["regime"] for s in results["states"] if "judge" not in s}, {"R1+H"})
        analysis = bank.analyze_bank(results)
        self.assertEqual(analysis["label"], "NON-CONFIRMATORY")               # a smoke run of 3 instances
        self.assertTrue(any("smoke run" in r for r in analysis["reasons"]))
        for regime in ("R1", "R2", "R1+X", "R2+X"):
            with self.subTest(regime):
                self.assertEqual(analysis["retention"][MODEL][regime]["judge"]["agreement"]["rate"], 1.0)
        self.assertIn("agreement with the rule", (out / "analysis.md").read_text())
        resume = recorded_run.run_command_for(out,
                                              json.loads((out / "manifest.json").read_text()))
        self.assertIn("--judge", resume)
        self.assertIn("--episodes 3", resume)                               # cut runs resume cut the same way

    def test_the_determinism_probe_runs_in_this_study_too(self):
        out = self.make_tmp() / "rechecked"
        code, _, err = run_main(["--study", "constraints", "--regimes", "FULL+,FULL-,R1", "--episodes", "2",
                                 "--models", MODEL, "--host", self.server.url, "--out", str(out), *FAST,
                                 "--recheck", "3"])
        self.assertEqual(code, 0, err)
        recheck = json.loads((out / "manifest.json").read_text())["recheck"]
        self.assertEqual((recheck["sent"], recheck["changed"]), (3, 0))
        self.assertEqual(len((out / "raw" / "recheck.jsonl").read_text().splitlines()), 3)

    def test_a_user_regime_runs_as_compacted_with_the_instruction(self):
        folder = self.make_tmp()
        path = folder / "mine.json"
        path.write_text(json.dumps([
            {"name": "MINE", "compaction_template": "Notes so far, kept short.\n\nPREVIOUS STATE:\n{previous_state}"
                                                    "\n\nNEW SEGMENT:\n{segment}\n\nAt most {max_words} words."},
            {"name": "LAST1", "kind": "recent", "keep_last": 1}]))
        out = folder / "user"
        code, _, err = run_main(["--study", "constraints", "--regimes", "FULL+,FULL-,MINE,LAST1", "--regime-file",
                                 str(path), "--episodes", "2", "--models", MODEL, "--host", self.server.url,
                                 "--out", str(out), *FAST])
        self.assertEqual(code, 0, err)
        results = json.loads((out / "results.json").read_text())
        mine = [p for p in results["probes"] if p["regime"] in ("MINE", "LAST1")]
        self.assertEqual(len(mine), 4)
        self.assertTrue(all(p["class"] in ("compliant", "violating") for p in mine))   # asked for CHOICE, not ANSWER
        # the last segment alone never holds the instruction said in segment 2
        self.assertTrue(all(p["class"] == "violating" for p in mine if p["regime"] == "LAST1"))
        # each user regime runs beside its own upper bound, so its effect retention is measured like R1's
        self.assertEqual(results["regimes"], ["FULL+", "FULL-", "MINE", "MINE+UB", "LAST1", "LAST1+UB"])
        analysis = bank.analyze_bank(results)
        self.assertEqual(compliance(analysis, "LAST1+UB"), 1.0)       # the instruction appended is followed
        er = analysis["effect_retention"][MODEL]
        self.assertEqual(set(er), {"MINE", "LAST1"})
        self.assertEqual(er["LAST1"]["er"], 0.0)                       # (0 - 0) / (1 - 0)
        self.assertIn("| LAST1 | LAST1+UB |", (out / "analysis.md").read_text())
        # naming only an upper bound runs its regime too: an upper bound alone compares with nothing
        code, stdout, err = run_main(["plan", "--study", "constraints", "--regimes", "FULL-,MINE+UB", "--regime-file",
                                      str(path), "--models", MODEL])
        self.assertEqual(code, 0, err)
        self.assertIn("| MINE | 15 |", stdout)
        self.assertIn("| MINE+UB | 15 |", stdout)


if __name__ == "__main__":
    unittest.main()
