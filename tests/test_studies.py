"""A new study plugs in through the public hooks only (issue 29: "One way to build a study").

TALLY-T1 is this suite's own study, written as the registry's recipe says (scripts/pilot/studies/__init__.py):
one module (tests/study_tally.py, installed as scripts/pilot/studies/tally.py of a copy of the repository) and one
registry entry (REGISTRY_ENTRY below), with text answers, a figure of its own, a demo stand-in of its own and a
generation option of its own. In that copy, as a user's commands in their own processes: generate, plan, run with a
regime file carrying `system` and `empty_state`, kill -9 and resume, analyze with its figure and report, the demo,
and the layout test with the study registered.
"""
import dataclasses
import importlib.util
import json
import shutil
import sys
import unittest
from pathlib import Path

from fake_servers import FakeOllama
from helpers import FAST, REPO, TempDirMixin, kill_at_call, repo_copy, run_main, run_script, runner_command
from pilot import records
from pilot.cells import cascade_plan
from pilot.inputs import TaskSetError
from pilot.records import CommandLine, Demo, Option, Report, Study, canonical_json, display_path, register_study
from pilot.records import sha256_bytes

MODULE = Path(__file__).resolve().parent / "study_tally.py"

# The study's one registry entry, as a contributor adds it to scripts/pilot/studies/__init__.py.
REGISTRY_ENTRY = """
from . import tally

register_study(Study(
    name="tally",
    question="what a rewritten note keeps of a tally (the test suite's own study)",
    protocol_id=tally.PROTOCOL_ID,
    protocol_path=tally.PROTOCOL_PATH,
    tasks_path=tally.TASKS_PATH,
    pinned_sha256=tally.PINNED_TASKS_SHA256,
    load_tasks=tally.load_task_set,
    generate=tally.generate_file,
    regimes=tally.REGIMES,
    default_regimes=tally.DEFAULT_REGIMES,
    prompts_sha256=tally.prompts_sha256,
    plan_calls=cascade_plan,
    call_text=tally.call_text,
    empty_state=tally.PROMPTS["empty_note"],
    probe_kind="tally_text",
    score_cell=tally.score_cell,
    analyze=tally.analyze,
    render_md=tally.render_md,
    headline=tally.render_headline,
    report=Report(figures=tally.figures),
    command_line=CommandLine(generate_options=tally.GENERATE_OPTIONS),
    demo=Demo(stand_in=tally.stand_in),
))
"""

KEY, MODEL = "tally", "gemma3:4b"
N_SESSIONS, N_PARTS = 3, 3
CALLS = N_SESSIONS * (2 + N_PARTS + 2)                      # FULL: 2 answers; NOTE: 3 compactions and 2 answers
NOTE_LOSSES = {"prose_keep_last": 2, "prose_shift": 1}     # the fake's prose note keeps 2 codes, each one too high
SYSTEM, EMPTY = "You keep the books.", "(no note yet)"


def register_tally() -> None:
    """The study registered in this process, from the same module and entry (for the tests that run in-process)."""
    spec = importlib.util.spec_from_file_location("pilot.studies.tally", MODULE)
    tally = importlib.util.module_from_spec(spec)
    sys.modules["pilot.studies.tally"] = tally
    spec.loader.exec_module(tally)
    exec(REGISTRY_ENTRY.replace("from . import tally\n", ""),
         {"register_study": register_study, "Study": Study, "Report": Report, "CommandLine": CommandLine,
          "Demo": Demo, "cascade_plan": cascade_plan, "tally": tally})


class FolderOfAStudyTest(unittest.TestCase):
    def test_status_verify_and_score_find_a_studys_default_folder_with_study(self):
        """A run started with `--study S` is found by the folder commands with the same `--study S`, as the run
        command would name its folder, not only with --out."""
        from pilot import cli, launch
        for command in ("status", "verify", "score"):
            for study, extra, folder in (("constraints", [], "constraints"), ("constraints", ["--episodes", "5"],
                                                                               "constraints-e5"),
                                         ("adversarial", [], "adversarial")):
                with self.subTest(command=command, study=study, extra=extra):
                    args = cli.build_parser(command).parse_args(["--study", study, *extra])
                    self.assertEqual(launch.resolve_run_dir(args).name, folder)
            args = cli.build_parser(command).parse_args([])
            self.assertEqual(launch.resolve_run_dir(args).name, "xr001")


class NewStudyTest(TempDirMixin, unittest.TestCase):
    """TALLY-T1 added to a copy of the repository as the recipe says, and run there as a user runs a study."""

    @classmethod
    def setUpClass(cls):
        cls.root = Path(__import__("tempfile").mkdtemp(prefix="ccl-tally-"))
        cls.repo = repo_copy(cls.root / "repo")
        shutil.copytree(REPO / "tests", cls.repo / "tests", ignore=shutil.ignore_patterns("__pycache__"))
        (cls.repo / "protocol" / "TALLY.md").write_text("# TALLY-T1\n\nThree parts of `code NAME = N` facts; two "
                                                       "questions answered as written; FULL against NOTE.\n")
        shutil.copy(MODULE, cls.repo / "scripts" / "pilot" / "studies" / "tally.py")
        with open(cls.repo / "scripts" / "pilot" / "studies" / "__init__.py", "a", encoding="utf-8") as registry:
            registry.write(REGISTRY_ENTRY)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, True)

    def pilot(self, *argv: str, code: int = 0) -> str:
        """A command of the copy's run_pilot.py, as its own process; its stdout."""
        done = run_script(self.repo, list(argv))
        self.assertEqual(done.returncode, code, done.stderr)
        return done.stdout

    def expected_probes(self, tasks: dict) -> list[dict]:
        """What the fake's answers imply: FULL right; NOTE one too high on the newest code and blind to the first."""
        probes = []
        for regime in ("FULL", "NOTE"):
            for episode in tasks["episodes"]:
                for q in episode["questions"]:
                    answer, cls = (q["truth"], "correct") if regime == "FULL" else \
                        (str(int(q["truth"]) + 1), "wrong") if q["type"] == "newest" else (None, "omission")
                    probes.append({"model": MODEL, "regime": regime, "episode": episode["episode"],
                                   "question_id": q["id"], "type": q["type"], "truth": q["truth"], "answer": answer,
                                   "class": cls})
        return probes

    def test_generate_plan_run_kill_resume_analyze_and_report(self):
        made = self.pilot("generate", "--study", KEY)
        self.assertIn(f"wrote tasks/tally.json: {N_SESSIONS} sessions, sha256", made)
        tasks = json.loads((self.repo / "tasks" / "tally.json").read_text())
        other = self.make_tmp() / "four.json"
        self.assertIn("3 sessions", self.pilot("generate", "--study", KEY, "--codes", "4", "--tasks", str(other)))
        self.assertEqual(len(json.loads(other.read_text())["episodes"][0]["segments"][0]["text"].splitlines()), 4)
        refused = run_script(self.repo, ["generate", "--study", KEY, "--positions", "top", "--tasks", str(other)])
        self.assertEqual((refused.returncode, refused.stderr.strip()),
                         (2, "error: --positions belongs to the constraints study; add --study constraints"))
        self.assertIn(f"total: {CALLS} calls (0 done)", self.pilot("plan", "--study", KEY, "--models", MODEL))

        reference, killed = self.make_tmp() / "reference", self.make_tmp() / "killed"
        mine = self.make_tmp() / "mine.json"
        mine.write_text(json.dumps([{"name": "MINE", "compaction_template": tally_template(), "system": SYSTEM,
                                     "empty_state": EMPTY}]))
        with FakeOllama(models=[MODEL], behaviour=NOTE_LOSSES) as server:
            run = ["run", "--study", KEY, "--models", MODEL, "--host", server.url, *FAST]
            self.pilot(*run, "--out", str(reference))
            kill_at_call(self, server, 2 * N_SESSIONS + 2, runner_command(*run, "--out", str(killed), repo=self.repo))
            journalled = sum(len(p.read_text().splitlines()) for p in (killed / "raw").glob("*.jsonl"))
            self.assertEqual(journalled, 2 * N_SESSIONS + 1)       # killed while NOTE's second compaction was out
            before = server.chat_count()
            self.pilot(*run, "--out", str(killed))
            self.assertEqual(server.chat_count() - before, CALLS - journalled)
            with_file = self.make_tmp() / "with-file"
            self.pilot(*run, "--regime-file", str(mine), "--regimes", "MINE", "--episodes", "1", "--out",
                       str(with_file))
        for record in map(json.loads, (with_file / "raw" / "gemma3_4b_MINE.jsonl").read_text().splitlines()):
            self.assertEqual(record["messages"][0], {"role": "system", "content": SYSTEM})
        first = json.loads((with_file / "raw" / "gemma3_4b_MINE.jsonl").read_text().splitlines()[0])
        self.assertIn(f"PREVIOUS STATE:\n{EMPTY}\n\nNEW SEGMENT:", first["messages"][-1]["content"])

        for folder in (reference, killed):
            self.pilot("score", "--out", str(folder))
            self.assertEqual(json.loads((folder / "results.json").read_text())["probes"], self.expected_probes(tasks))
        self.pilot("verify", "--out", str(killed))
        shown = self.pilot("analyze", "--results", str(killed / "results.json"))      # text answers are accepted
        self.assertIn(f"| {MODEL} NOTE | 0/{2 * N_SESSIONS} = 0.0%", shown)
        self.pilot("analyze", "--out", str(killed))
        self.assertEqual(sorted(p.name for p in (killed / "figures").iterdir()), ["fig_tally_correct.svg"])
        report = (killed / "report.html").read_text()
        self.assertIn("<title>TALLY-T1 report</title>", report)
        self.assertIn("Codes answered as written, by model and regime", report)
        self.assertIn("![Codes answered as written, by model and regime](figures/fig_tally_correct.svg)",
                      (killed / "RESULTS.md").read_text())

    def test_its_demo_runs_on_its_own_stand_in_and_says_simulated_everywhere(self):
        out = self.make_tmp() / "demo"
        printed = self.pilot("demo", "--study", KEY, "--out", str(out), "--quiet")
        lines = printed.splitlines()
        self.assertTrue(lines[0].startswith("SIMULATED"), lines[0])
        self.assertIn(f"Open the report: {out / 'report.html'}", printed)
        self.assertTrue((out / "analysis.md").read_text().startswith("# SIMULATED"))
        self.assertTrue((out / "RESULTS.md").read_text().startswith("# SIMULATED Results: TALLY-T1"))
        self.assertIn("<title>SIMULATED TALLY-T1 report</title>", (out / "report.html").read_text())
        self.assertIn('class="nonconfirmatory"', (out / "figures" / "fig_tally_correct.svg").read_text())
        self.assertIn("SIMULATED (stand-in model, not a result)\nTALLY-T1:", printed)    # the headline, stamped
        probes = json.loads((out / "results.json").read_text())["probes"]
        self.assertEqual({p["class"] for p in probes if p["regime"] == "FULL"}, {"correct"})
        self.assertEqual({(p["type"], p["class"]) for p in probes if p["regime"] == "NOTE"},
                         {("newest", "correct"), ("first", "omission")})     # its note forgets the first code

    def test_the_layout_test_passes_with_it_registered(self):
        done = __import__("subprocess").run([sys.executable, "-m", "unittest", "test_layout"], cwd=self.repo / "tests",
                                            capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr[-3000:])
        self.assertIn("OK", done.stderr)


def tally_template() -> str:
    return "Keep the tally's codes.\n\nPREVIOUS STATE:\n{previous_state}\n\nNEW SEGMENT:\n{segment}\n\nAt most {max_words} words."


# --- A study whose tasks are the user's own files (Study.read_source, source_option, describe_tasks) ------------
SOURCE_KEY = "tallydir"


def read_tally_folder(path: Path) -> tuple[bytes, dict]:
    """Every `*.txt` file of a folder is one session of `code NAME = N` lines; the bytes hashed are the listing of
    the files' names and hashes, so that a changed file changes the task set."""
    if not path.is_dir():
        raise TaskSetError(f"{path} is not a folder; --parts takes a folder of .txt files")
    listing, episodes = [], []
    for index, file in enumerate(sorted(path.glob("*.txt"))):
        data = file.read_bytes()
        listing.append({"file": file.name, "sha256": sha256_bytes(data)})
        facts = [line.split("=") for line in data.decode("utf-8").splitlines() if "=" in line]
        values = {name.split()[-1]: int(value) for name, value in facts}
        names = list(values)
        parts = [{"index": k + 1, "text": "\n".join(f"code {n} = {values[n]}" for n in names[k::N_PARTS])}
                 for k in range(N_PARTS)]
        episodes.append({"episode": index, "file": file.name, "segments": parts, "conflation_set": [],
                         "questions": [{"id": 1, "type": "single", "prompt": f"What number is code {names[-1]}?",
                                        "truth": values[names[-1]]}]})
    if not episodes:
        raise TaskSetError(f"{path} holds no .txt file")
    tasks = {"study": SOURCE_KEY, "n_episodes": len(episodes), "episodes": episodes}
    return canonical_json(listing).encode("ascii"), tasks


def load_tally_folder(path: Path, raw: bytes, tasks: dict, sha: str, in_repo: bool) -> dict:
    return {"tasks": tasks, "sha256": sha, "kind": "external", "path": display_path(path)}


PARTS_OPTION = Option("--parts", {"help": "tallydir study: a folder of .txt sessions"})


def register_tally_folder(protocol: Path, folder: Path) -> None:
    register_study(dataclasses.replace(records.STUDY_REGISTRY[KEY], name=SOURCE_KEY, protocol_id="TALLY-D1",
                                       probe_kind="integer", demo=None,
                                       protocol_path=protocol, tasks_path=folder, load_tasks=load_tally_folder,
                                       command_line=CommandLine(
                                           options=(PARTS_OPTION,), source_option="parts",
                                           read_source=lambda path: read_tally_folder(path),
                                           describe_tasks=lambda tasks: [f"read {e['file']}" for e in tasks["episodes"]])))


class SourceStudyTest(TempDirMixin, unittest.TestCase):
    """A study whose tasks are read from files the user brings, named by its own option instead of --tasks."""

    def setUp(self):
        self.tmp = self.make_tmp()
        protocol, self.parts = self.tmp / "TALLY.md", self.tmp / "parts"
        protocol.write_text("# TALLY-D1\n")
        self.parts.mkdir()
        for name, base in (("a.txt", 100), ("b.txt", 300)):
            (self.parts / name).write_text("".join(f"code {w} = {base + i}\n" for i, w in enumerate(
                ("BAGOFU", "KEDIMA", "RUSANO", "TOLEVI", "MIRADU", "SOKEPA"))))
        register_tally()
        self.addCleanup(records.STUDY_REGISTRY.pop, KEY)
        register_tally_folder(protocol, self.tmp / "nowhere")
        self.addCleanup(records.STUDY_REGISTRY.pop, SOURCE_KEY)

    def run_folder(self, server: FakeOllama, out: Path) -> tuple[int, str]:
        code, _, err = run_main(["run", "--study", SOURCE_KEY, "--parts", str(self.parts), "--models", MODEL,
                                 "--host", server.url, "--out", str(out), *FAST])
        return code, err

    def test_plan_run_score_and_resume_read_the_folder_the_option_names(self):
        code, planned, err = run_main(["plan", "--study", SOURCE_KEY, "--parts", str(self.parts), "--models", MODEL])
        self.assertEqual(code, 0, err)
        self.assertIn("read a.txt\nread b.txt", planned)
        self.assertIn("total: 10 calls (0 done)", planned)          # 2 sessions: FULL 1 answer, NOTE 3 + 1
        out = self.tmp / "run"
        with FakeOllama(models=[MODEL]) as server:
            code, err = self.run_folder(server, out)
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), 10)
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertEqual(manifest["tasks"], display_path(self.parts))
        self.assertEqual(manifest["tasks_sha256"], sha256_bytes(read_tally_folder(self.parts)[0]))
        code, scored, err = run_main(["score", "--out", str(out)])
        self.assertEqual(code, 0, err)
        self.assertIn("scored 4 probes from 4/4 complete cells", scored)
        self.assertEqual({p["class"] for p in json.loads((out / "results.json").read_text())["probes"]}, {"correct"})
        (self.parts / "b.txt").write_text("code BAGOFU = 999\ncode KEDIMA = 998\ncode RUSANO = 997\n")
        with FakeOllama(models=[MODEL]) as server:
            code, err = self.run_folder(server, out)
            self.assertEqual(server.chat_count(), 0)
        self.assertEqual(code, 2)
        self.assertIn("which changed since", err)
        self.assertEqual(len(err.strip().splitlines()), 1)

    def test_the_source_option_of_another_study_is_refused_in_one_line(self):
        code, _, err = run_main(["plan", "--parts", str(self.parts), "--models", MODEL])
        self.assertEqual(code, 2)
        self.assertEqual(err.strip(), f"error: --parts belongs to the {SOURCE_KEY} study; add --study {SOURCE_KEY}")

    def test_an_unreadable_source_is_one_line_before_any_call(self):
        with FakeOllama(models=[MODEL]) as server:
            code, _, err = run_main(["run", "--study", SOURCE_KEY, "--parts", str(self.tmp / "TALLY.md"), "--models",
                                     MODEL, "--host", server.url, "--out", str(self.tmp / "run"), *FAST])
            self.assertEqual(server.chat_count(), 0)
        self.assertEqual(code, 2)
        self.assertIn("is not a folder; --parts takes a folder of .txt files", err)


if __name__ == "__main__":
    unittest.main()
