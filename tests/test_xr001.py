"""pilot.studies.xr001: episode generation (protocol section 2), the golden hash, every constraint over many seeds."""
import json
import random
import re
import subprocess
import sys
import unittest

from fake_servers import FakeOllama
from helpers import FAST, REPO, TempDirMixin, run_main
from pilot import cells, cli, inputs, launch, prompts, records
from pilot.studies import episodes
from pilot.studies.xr001 import design as xr001

GOLDEN_TASKS_SHA256 = "d55a8ca411d9035fd606f5f3b281ffa21425d2d1beb5b341d9ff396982ee0205"


class GoldenTasksTest(TempDirMixin, unittest.TestCase):
    def test_pinned_seed_gives_the_golden_file(self):
        data = inputs.tasks_to_bytes(xr001.generate_tasks())
        self.assertEqual(records.sha256_bytes(data), GOLDEN_TASKS_SHA256)

    def test_committed_tasks_file_is_the_golden_file(self):
        self.assertEqual(records.file_sha256(REPO / "tasks" / "tasks.json"), GOLDEN_TASKS_SHA256)

    def test_generation_is_identical_in_a_fresh_interpreter(self):
        code = ("import sys,hashlib;sys.path.insert(0,sys.argv[1]);from pilot.studies import xr001 as m;"
                "print(hashlib.sha256(m.tasks_to_bytes(m.generate_tasks())).hexdigest())")
        out = subprocess.run([sys.executable, "-c", code, str(REPO / "scripts")],
                             capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": "123"})
        self.assertEqual(out.stdout.strip(), GOLDEN_TASKS_SHA256)

    def test_generate_command_leaves_the_committed_file_unchanged(self):
        code, out, _ = run_main(["generate"])
        self.assertEqual(code, 0)
        self.assertIn("unchanged", out)

    def test_generate_refuses_to_overwrite_a_different_file(self):
        path = self.make_tmp() / "tasks.json"
        self.assertEqual(run_main(["generate", "--tasks", str(path), "--episodes", "2"])[0], 0)
        before = path.read_text()
        code, _, err = run_main(["generate", "--tasks", str(path)])
        self.assertEqual(code, 2)
        self.assertIn("--force", err)
        self.assertEqual(path.read_text(), before)
        code, _, _ = run_main(["generate", "--tasks", str(path), "--force", "--episodes", "3"])
        self.assertEqual(code, 0)
        self.assertEqual(len(json.loads(path.read_text())["episodes"]), 3)

    def test_artifact_field_names(self):
        tasks = xr001.generate_tasks(1)
        for key in ("protocol", "generator_version", "base_seed", "n_episodes", "n_segments", "value_range"):
            self.assertIn(key, tasks)
        episode = tasks["episodes"][0]
        self.assertEqual(set(episode), {"episode", "seed", "segments", "questions", "conflation_set"})
        segment = episode["segments"][0]
        self.assertEqual(set(segment), {"index", "text", "entities", "combined"})
        self.assertEqual(set(segment["entities"]), {"base", "partner", "neighbor", "distractors"})


class EpisodeConstraintsTest(unittest.TestCase):
    """Every constraint of the facts file, for 300 seeds."""

    SEEDS = range(300)

    def check_episode(self, episode: dict):
        lo, hi = episodes.VALUE_RANGE
        segments = episode["segments"]
        self.assertEqual(len(segments), 4)
        names, values, sums, pairs = [], [], [], set()
        for k, seg in enumerate(segments, 1):
            self.assertEqual(seg["index"], k)
            ents = seg["entities"]
            all_ents = [ents["base"], ents["partner"], ents["neighbor"], *ents["distractors"]]
            self.assertEqual(len(ents["distractors"]), 2)
            self.assertEqual(ents["neighbor"]["value"], ents["base"]["value"] + 1)
            self.assertEqual(seg["combined"]["names"], [ents["base"]["name"], ents["partner"]["name"]])
            self.assertEqual(seg["combined"]["value"], ents["base"]["value"] + ents["partner"]["value"])
            pairs.add((ents["base"]["value"], ents["neighbor"]["value"]))
            words = len(seg["text"].split())
            self.assertTrue(120 <= words <= 180, words)
            for ent in all_ents:
                self.assertRegex(ent["name"], r"^([BDFGKLMNPRSTVZ][AEIOU]){3}$")
                self.assertNotIn(ent["name"], episodes.REAL_WORDS)
                self.assertTrue(lo <= ent["value"] <= hi)
                self.assertIn(ent["name"], seg["text"])
                self.assertIn(str(ent["value"]), seg["text"])
                names.append(ent["name"])
                values.append(ent["value"])
            self.assertIn(str(seg["combined"]["value"]), seg["text"])
            # The filler carries no numbers: only the six stated figures appear in the text.
            self.assertEqual(len(re.findall(r"\d+", seg["text"])), 6)
            sums.append(seg["combined"]["value"])
        self.assertEqual(len(set(names)), 20)
        self.assertEqual(len(set(values)), 20)
        ordered = sorted(values)
        adjacent = {(a, b) for a, b in zip(ordered, ordered[1:]) if b - a == 1}
        self.assertEqual(adjacent, pairs)
        self.assertEqual(len(set(sums)), 4)
        self.assertFalse(set(sums) & set(values))
        hops = [q["truth"] for q in episode["questions"] if q["type"] == "multihop"]
        self.assertEqual(len(hops), 2)
        self.assertNotEqual(hops[0], hops[1])
        self.assertFalse(set(hops) & (set(values) | set(sums)))
        self.assertEqual(episode["conflation_set"], sorted(set(values) | set(sums)))

    def check_questions(self, episode: dict):
        segs = episode["segments"]
        ent = lambda k, role: segs[k - 1]["entities"][role]  # noqa: E731
        expected = [
            (1, "direct", ent(1, "base")["value"]), (2, "direct", ent(2, "partner")["value"]),
            (3, "direct", ent(3, "base")["value"]), (4, "conflation", ent(1, "neighbor")["value"]),
            (5, "conflation", ent(4, "neighbor")["value"]), (6, "combined", segs[0]["combined"]["value"]),
            (7, "multihop", ent(2, "base")["value"] + ent(4, "base")["value"]),
            (8, "multihop", ent(1, "partner")["value"] + ent(3, "base")["value"]),
        ]
        got = [(q["id"], q["type"], q["truth"]) for q in episode["questions"]]
        self.assertEqual(got, expected)
        for q in episode["questions"]:
            for name in q.get("entities", [q.get("entity")]):
                self.assertIn(name, q["prompt"])

    def test_constraints_hold_over_many_seeds(self):
        for index in self.SEEDS:
            with self.subTest(episode=index):
                episode = episodes.generate_episode(index)
                self.assertEqual(episode["seed"], episodes.BASE_SEED + index)
                self.check_episode(episode)
                self.check_questions(episode)

    def test_other_base_seeds_too(self):
        for base in (1, 2024, 999999):
            with self.subTest(base_seed=base):
                self.check_episode(episodes.generate_episode(0, base))

    def test_same_seed_same_episode(self):
        self.assertEqual(episodes.generate_episode(7), episodes.generate_episode(7))
        self.assertNotEqual(episodes.generate_episode(7), episodes.generate_episode(8))

    def test_values_validator_rejects_accidental_structure(self):
        good = [{"base": 200, "partner": 300, "neighbor": 201, "distractors": [420, 520]},
                {"base": 600, "partner": 700, "neighbor": 601, "distractors": [800, 900]},
                {"base": 150, "partner": 250, "neighbor": 151, "distractors": [360, 460]},
                {"base": 650, "partner": 750, "neighbor": 651, "distractors": [850, 950]}]
        self.assertTrue(episodes.values_are_valid(good))
        accidental = json.loads(json.dumps(good))
        accidental[0]["distractors"][0] = 301          # differs from a partner by one
        self.assertFalse(episodes.values_are_valid(accidental))
        sum_clash = json.loads(json.dumps(good))
        sum_clash[1]["distractors"][1] = 200 + 300    # a value equal to segment 1's stated sum
        self.assertFalse(episodes.values_are_valid(sum_clash))
        hop_clash = json.loads(json.dumps(good))
        hop_clash[0]["distractors"][0] = 600 + 650     # equals the first multi-hop truth
        self.assertFalse(episodes.values_are_valid(hop_clash))


class PromptsTest(unittest.TestCase):
    def test_compaction_prompts_are_symmetric(self):
        prose, typed = prompts.PROMPTS["compact_prose"], prompts.PROMPTS["compact_typed"]
        for phrase in ("about to be deleted and replaced", "lost for good", "Merge the previous state",
                       "at most {max_words} words", "PREVIOUS STATE:", "NEW SEGMENT:"):
            self.assertIn(phrase, prose)
            self.assertIn(phrase, typed)
        for prompt in (prose, typed):
            self.assertNotIn("Question", prompt)
        for section in ("values:", "combined:", "relations:", "notes:"):
            self.assertIn(section, typed)

    def test_answer_prompts_require_the_answer_line(self):
        for key in ("answer_transcript", "answer_state"):
            self.assertIn("ANSWER: <integer>", prompts.PROMPTS[key])

    def test_regime_registry_drives_the_plan(self):
        episode = episodes.generate_episode(0)
        self.assertEqual([c.kind for c in cells.cascade_plan(xr001.REGIMES["R0"], episode)],
                         [f"question_{i}" for i in range(1, 9)])
        self.assertEqual([c.kind for c in cells.cascade_plan(xr001.REGIMES["R1"], episode)][:4],
                         [f"compact_{k}" for k in range(1, 5)])

    def test_unknown_regime_is_impossible_at_the_command_line(self):
        # regimes are fixed data; the run always covers exactly the registry
        self.assertEqual(tuple(xr001.REGIMES)[:3], xr001.DEFAULT_REGIMES)


# Replication prompts in this test's own words, standing in for the paper's, which a user brings in a file.
REPLICATION = [
    {"name": "R0", "replaces": True, "system": "You keep exact numeric records.",
     "answer_template": "{context}\n\nQuestion: {question}\nGive the number only, on a last line ANSWER: <integer>"},
    {"name": "R1", "replaces": True, "system": "You keep exact numeric records.", "empty_state": "nothing kept yet",
     "compaction_template": "These notes now stand in for the session.\nPREVIOUS STATE:\n{previous_state}\n"
                            "NEW SEGMENT:\n{segment}\nRewrite the notes as a paragraph of at most {max_words} words.",
     "answer_template": "{context}\n\nQuestion: {question}\nGive the number only, on a last line ANSWER: <integer>"},
    {"name": "R2", "replaces": True, "system": "You keep exact numeric records.", "empty_state": "nothing kept yet",
     "compaction_template": "These notes now stand in for the session.\nPREVIOUS STATE:\n{previous_state}\n"
                            "NEW SEGMENT:\n{segment}\nRewrite the notes as a typed state block of at most "
                            "{max_words} words.",
     "answer_template": "{context}\n\nQuestion: {question}\nGive the number only, on a last line ANSWER: <integer>"},
]


class ReplicationPromptsTest(TempDirMixin, unittest.TestCase):
    """The paper's own prompts, brought in a regime file, replace R0-R2's (issue 20, point 10): a true replication,
    marked as such in the lock and every output."""

    def test_a_regime_file_replaces_the_pre_registered_prompts_and_says_so(self):
        folder = self.make_tmp()
        path = folder / "paper_prompts.json"
        path.write_text(json.dumps(REPLICATION))
        out = folder / "run"
        with FakeOllama(models=["gemma3:4b"]) as server:
            code, stdout, err = run_main(["--models", "gemma3:4b", "--host", server.url, "--out", str(out),
                                          "--episodes", "1", "--regime-file", str(path), *FAST])
        self.assertEqual(code, 0, err)
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertEqual(manifest["regimes"], ["R0", "R1", "R2"])
        shown = records.display_path(path)
        self.assertEqual(manifest["lock"]["replaced_regimes"], {"R0": shown, "R1": shown, "R2": shown})
        self.assertEqual(manifest["regime_definitions"]["R1"]["origin"], shown)
        self.assertFalse(manifest["regime_definitions"]["R1"]["exploratory"])
        self.assertEqual(manifest["regime_definitions"]["R2"]["state_reader"], "typed")   # the reader stays
        first = json.loads((out / "raw" / "gemma3_4b_R1.jsonl").read_text().splitlines()[0])
        self.assertEqual(first["messages"][0], {"role": "system", "content": "You keep exact numeric records."})
        self.assertIn("PREVIOUS STATE:\nnothing kept yet\nNEW SEGMENT:", first["messages"][1]["content"])
        analysis = (out / "analysis.md").read_text()
        note = (f"Prompts: R0, R1, R2 ran under the prompts of {shown} (a regime file replacing this protocol's "
                f"pre-registered prompts)")
        self.assertIn(note, analysis.split("\n\n")[1])             # beside the label
        self.assertIn(note, stdout)
        self.assertIn(f"| R1 | prose summary, cascaded; prompts from {shown} | pre-registered, prompts from {shown} |",
                      analysis)
        self.assertIn("## Confirmatory test: exact McNemar, R1 vs R2", analysis)
        self.assertIn(note, (out / "RESULTS.md").read_text())
        code, stdout, _ = run_main(["plan", "--models", "gemma3:4b", "--regime-file", str(path)])
        self.assertEqual(code, 0)
        self.assertIn(f"prompts: R0, R1, R2 run under the prompts of {shown}, replacing the pre-registered ones", stdout)
        # without --out such a run never shares the pinned run's folder
        args = cli.build_parser("pilot").parse_args(["--models", "gemma3:4b", "--regime-file", str(path)])
        self.assertEqual(launch.resolve_run_dir(args).name, f"xr001-prompts-{records.file_sha256(path)[:12]}")

    def test_replacing_needs_the_word_and_changes_only_the_prompts(self):
        cases = {
            "no replaces": ([{"name": "R1", "compaction_template": "{previous_state}{segment}{max_words}"}],
                            'add "replaces": true'),
            "not a built-in": ([{"name": "MINE", "replaces": True, "compaction_template": "{previous_state}"}],
                               "`replaces` is for the pre-registered regimes R0, R1, R2"),
            "a reader": ([{"name": "R2", "replaces": True, "state_reader": "prose",
                           "compaction_template": "{previous_state}{segment}{max_words}"}],
                         "state_reader cannot change when replacing R2"),
            "nothing replaced": ([{"name": "R1", "replaces": True}], "needs at least one of"),
            "R0 compacts nothing": ([{"name": "R0", "replaces": True, "compaction_template": "x"}],
                                    "R0 makes no compaction call"),
            "a missing placeholder": ([{"name": "R1", "replaces": True, "compaction_template": "{segment}"}],
                                      "must hold exactly {max_words}, {previous_state}, {segment}"),
            "an empty system message": ([{"name": "R1", "replaces": True, "system": " "}], "`system` must be"),
        }
        for label, (entries, expected) in cases.items():
            with self.subTest(label):
                regimes, problems = launch.check_regime_entries(entries, "f.json")
                self.assertEqual(regimes, [])
                self.assertTrue(any(expected in p for p in problems), problems)

    def test_another_study_refuses_a_replacement(self):
        path = self.make_tmp() / "paper_prompts.json"
        path.write_text(json.dumps(REPLICATION[1:2]))
        code, _, err = run_main(["plan", "--study", "constraints", "--models", "m", "--regime-file", str(path)])
        self.assertEqual(code, 2)
        self.assertIn("replaces R1", err)


if __name__ == "__main__":
    unittest.main()
