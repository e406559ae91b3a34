"""A new study plugs in through the public hooks only (issue "a test registers a minimal new study").

TALLY-T1 is this test's own study: a bookkeeping session of three short parts, each stating two `code NAME = N`
facts, and two integer questions asked of either the whole transcript (FULL) or a prose note rewritten after
every part (NOTE, a cascaded compaction). Its design, scoring and report live below; it is registered with one
line, `register_study(Study(...))`, and run end to end through main() on the fake Ollama server: generate, plan,
run, an interrupted run resumed, status, score and analyze.
"""
import collections
import dataclasses
import json
import random
import sys
import unittest
from pathlib import Path

from fake_servers import FakeOllama
from helpers import FAST, TempDirMixin, kill_at_call, run_main
from pilot import records
from pilot.bank import PROBE_KINDS, score_probe
from pilot.inputs import TaskSetError
from pilot.prompts import CallText
from pilot.records import (ANSWER_NUM_PREDICT, CallSpec, CommandLine, Option, Regime, Study, canonical_json,
    display_path, register_study, sha256_bytes, sha256_text)
from pilot.reports import fmt_p, fmt_rate, md_table
from pilot.stats import mcnemar_summary, rate_summary

# --- The study TALLY-T1: design --------------------------------------------------------------------------------
KEY, PROTOCOL_ID, SEED = "tally", "TALLY-T1", 4242
N_SESSIONS, N_PARTS, FACTS_PER_PART = 3, 3, 2
ANSWER_RULE = PROBE_KINDS["integer"].answer_rule        # the shared integer probe kind (`ANSWER: <integer>`)

PROMPTS = {
    "note": ("You keep the running note of a bookkeeping session; the session is erased and only the note is kept.\n"
             "Fold the new part into the note in plain sentences, at most {max_words} words, keeping every code with "
             "its number.\n\nPREVIOUS STATE:\n{previous_state}\n\nNEW SEGMENT:\n{segment}\n\nWrite the new note now."),
    "ask_transcript": "Here is a whole bookkeeping session.\n\n{context}\n\nQuestion: {question}\n" + ANSWER_RULE,
    "ask_note": ("Here is the running note of a bookkeeping session.\n\n{context}\n\nQuestion: {question}\n"
                 + ANSWER_RULE),
    "empty_note": "(nothing yet)",
}

REGIMES = {
    "FULL": Regime("FULL", "the whole session is carried", "transcript", PROMPTS["ask_transcript"]),
    "NOTE": Regime("NOTE", "a prose note rewritten after every part", "state", PROMPTS["ask_note"], PROMPTS["note"],
                   "prose"),
}


def pseudoword(rng: random.Random) -> str:
    return "".join(rng.choice("BDFGKLMNPRSTVZ") + rng.choice("AEIOU") for _ in range(3))


def make_session(index: int) -> dict:
    """One session: its parts of `code NAME = N` lines, a single-code and a two-code question."""
    rng = random.Random(SEED + index)
    names = []
    while len(names) < N_PARTS * FACTS_PER_PART:
        name = pseudoword(rng)
        names += [name] if name not in names else []
    values = {name: rng.randint(100, 899) for name in names}
    lines = [f"code {name} = {values[name]}" for name in names]
    parts = [{"index": k + 1, "text": "\n".join(lines[k * FACTS_PER_PART:(k + 1) * FACTS_PER_PART])}
             for k in range(N_PARTS)]
    first, last = names[0], names[-1]
    questions = [{"id": 1, "type": "single", "prompt": f"What number is code {last}?", "truth": values[last]},
                 {"id": 2, "type": "sum", "prompt": f"What is code {first} plus code {last}?",
                  "truth": values[first] + values[last]}]
    return {"episode": index, "segments": parts, "questions": questions, "conflation_set": sorted(values.values())}


def tally_file(options: dict) -> tuple[bytes, str]:
    """`generate --study tally`: the task file of N sessions (3, the pinned set, by default)."""
    n = options.get("episodes") or N_SESSIONS
    tasks = {"study": KEY, "protocol": PROTOCOL_ID, "n_episodes": n, "episodes": [make_session(i) for i in range(n)]}
    return (json.dumps(tasks, indent=1) + "\n").encode("ascii"), f"{n} sessions"


PINNED_SHA256 = sha256_bytes(tally_file({})[0])


def load_tally_tasks(path: Path, raw: bytes, tasks: dict, sha: str, in_repo: bool) -> dict:
    """The task set: pinned (the default file), generated (another size) or refused."""
    kind = "pinned" if sha == PINNED_SHA256 else "generated" if raw == tally_file(
        {"episodes": tasks.get("n_episodes")})[0] else None
    if kind is None:
        raise TaskSetError(f"{display_path(path)} is not a {PROTOCOL_ID} task file made by `generate --study {KEY}`")
    return {"tasks": tasks, "sha256": sha, "kind": kind, "path": display_path(path)}


def plan_tally_calls(regime: Regime, episode: dict, budget: int) -> list:
    """A compaction after every part (NOTE only), then the two questions."""
    calls = [CallSpec(f"compact_{seg['index']}", "compaction", budget, segment=seg["index"])
             for seg in episode["segments"]] if regime.compacts else []
    return calls + [CallSpec(f"question_{q['id']}", "answer", ANSWER_NUM_PREDICT, question_id=q["id"])
                    for q in episode["questions"]]


def tally_call_text(regime: Regime, episode: dict, spec: CallSpec, state: str, registry: str) -> CallText:
    """The note over the previous note and the new part, or a question over the transcript or the note."""
    if spec.is_compaction:
        return CallText(segment=episode["segments"][spec.segment - 1]["text"])
    context = state if regime.compacts else "\n\n".join(f"Part {s['index']}:\n{s['text']}" for s in episode["segments"])
    return CallText(context=context, question=episode["questions"][spec.question_id - 1]["prompt"])


def tally_prompts_sha256() -> str:
    return sha256_text(canonical_json(PROMPTS))


# --- The study TALLY-T1: scoring, analysis and report ----------------------------------------------------------
def score_tally(run, cell, records: dict, base: dict, plan: list) -> dict:
    """One integer probe per answer of a complete cell."""
    episode = run.tasks["episodes"][cell.episode]
    return {"probes": [{**base, **score_probe(records[spec.kind], episode["questions"][spec.question_id - 1],
                                              episode["conflation_set"])} for spec in plan if spec.stage == "answer"]}


def analyze_tally(results: dict, task_set=None, table=None) -> dict:
    """Accuracy per model and regime, and FULL against NOTE by an exact McNemar test on paired probes."""
    correct = {(p["model"], p["regime"], p["episode"], p["question_id"]): p["class"] == "correct"
               for p in results["probes"]}
    accuracy, pairs = {}, []
    for model in results["models"]:
        for regime in results["regimes"]:
            mine = [ok for (m, r, _, _), ok in correct.items() if (m, r) == (model, regime)]
            accuracy[f"{model} {regime}"] = rate_summary(sum(mine), len(mine))
        pairs += [(ok, correct[(m, "NOTE", e, q)]) for (m, r, e, q), ok in correct.items()
                  if m == model and r == "FULL" and (m, "NOTE", e, q) in correct]
    n_questions = len(task_set["tasks"]["episodes"][0]["questions"]) if task_set else len({q for *_, q in correct})
    cells = collections.Counter((m, r, e) for m, r, e, _ in correct)
    expected = len(results["models"]) * len(results["regimes"]) * results["n_episodes"]
    complete = sum(1 for n in cells.values() if n == n_questions)
    return {"study": KEY, "label": "EXPLORATORY", "complete": complete == expected,
            "coverage": {"complete_cells": complete, "expected_cells": expected}, "accuracy": accuracy,
            "test": mcnemar_summary(pairs, "FULL", "NOTE")}


def render_tally_md(analysis: dict) -> str:
    rows = [[cell, fmt_rate(summary)] for cell, summary in analysis["accuracy"].items()]
    test = analysis["test"]
    return (f"# {PROTOCOL_ID}: what a rewritten note keeps of a tally\n\n" + md_table(["cell", "correct"], rows) +
            f"\n\nFULL against NOTE: b = {test['b']}, c = {test['c']}, exact McNemar p = {fmt_p(test['p'])}\n")


def render_tally_headline(analysis: dict) -> str:
    return f"{PROTOCOL_ID}: " + "; ".join(f"{c} {fmt_rate(s, False)}" for c, s in analysis["accuracy"].items())


def register_tally(protocol: Path, tasks: Path) -> None:
    """The study's one registry line."""
    register_study(Study(name=KEY, question="what a rewritten note keeps of a tally", protocol_id=PROTOCOL_ID,
                         protocol_path=protocol, tasks_path=tasks, pinned_sha256=PINNED_SHA256,
                         load_tasks=load_tally_tasks, generate=tally_file, regimes=REGIMES,
                         default_regimes=("FULL", "NOTE"), prompts_sha256=tally_prompts_sha256,
                         plan_calls=plan_tally_calls, call_text=tally_call_text, empty_state=PROMPTS["empty_note"],
                         score_cell=score_tally, analyze=analyze_tally, render_md=render_tally_md,
                         headline=render_tally_headline))


# The command as its own process, for kill -9: this module registers the study, then main() runs the command.
RUN_AS_PROCESS = """
import sys
from pathlib import Path
sys.path[:0] = [sys.argv[1], str(Path(sys.argv[1]).parent / "scripts")]
import test_studies
from pilot import cli
test_studies.register_tally(Path(sys.argv[2]), Path(sys.argv[3]))
sys.exit(cli.main(sys.argv[4:]))
"""


# --- The tests -------------------------------------------------------------------------------------------------
MODEL = "gemma3:4b"
NOTE_LOSSES = {"prose_keep_last": 2, "prose_shift": 1}     # the fake's prose note keeps 2 codes, each one too high
CALLS = N_SESSIONS * (2 + N_PARTS + 2)                      # FULL: 2 answers; NOTE: 3 compactions and 2 answers


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
    """TALLY-T1 registered in one line and run through main() on the fake server."""

    def setUp(self):
        self.tmp = self.make_tmp()
        self.tasks, protocol = self.tmp / "tasks.json", self.tmp / "TALLY.md"
        protocol.write_text(f"# {PROTOCOL_ID}\n\nThree parts of two codes; two questions; FULL against NOTE.\n")
        register_tally(protocol, self.tasks)
        self.addCleanup(records.STUDY_REGISTRY.pop, KEY)
        code, out, err = run_main(["generate", "--study", KEY, "--tasks", str(self.tasks)])
        self.assertEqual(code, 0, err)
        self.assertIn(f"{N_SESSIONS} sessions, sha256 {PINNED_SHA256}", out)

    def run_tally(self, server: FakeOllama, out: Path, *extra: str) -> tuple[int, str]:
        code, _, err = run_main(["run", "--study", KEY, "--tasks", str(self.tasks), "--models", MODEL, "--host",
                                 server.url, "--out", str(out), *FAST, *extra])
        return code, err

    def expected_probes(self) -> list[dict]:
        """What the fake's answers imply: FULL right; NOTE one too high on the newest code and blind to the first."""
        probes = []
        for regime in ("FULL", "NOTE"):
            for episode in json.loads(self.tasks.read_text())["episodes"]:
                for q in episode["questions"]:
                    answer, cls = (q["truth"], "correct") if regime == "FULL" else \
                        (q["truth"] + 1, "off_by_one") if q["type"] == "single" else (None, "omission")
                    probes.append({"model": MODEL, "regime": regime, "episode": episode["episode"],
                                   "question_id": q["id"], "type": q["type"], "truth": q["truth"], "answer": answer,
                                   "class": cls})
        return probes

    def status_of(self, out: Path) -> str:
        code, text, err = run_main(["status", "--out", str(out)])
        self.assertEqual(code, 0, err)
        return text

    def finished_run(self) -> Path:
        """A run folder of every cell, made on the fake server by `run --study tally`."""
        out = self.tmp / "run"
        with FakeOllama(models=[MODEL], behaviour=NOTE_LOSSES) as server:
            code, err = self.run_tally(server, out)
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), CALLS)
        return out

    def test_plan_run_status_score_and_analyze_the_new_study(self):
        """plan, run, status, score and analyze reach the new study through its hooks alone."""
        code, planned, err = run_main(["plan", "--study", KEY, "--models", MODEL, "--tasks", str(self.tasks)])
        self.assertEqual(code, 0, err)
        self.assertIn(f"| {MODEL} | NOTE | {N_SESSIONS} | {N_SESSIONS * 5} | 0 |", planned)
        self.assertIn(f"total: {CALLS} calls (0 done)", planned)

        out = self.finished_run()
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertEqual((manifest["study"], manifest["protocol"], manifest["regimes"]), (KEY, PROTOCOL_ID,
                                                                                         ["FULL", "NOTE"]))
        self.assertEqual(manifest["lock"]["prompts_sha256"], tally_prompts_sha256())
        self.assertEqual(manifest["task_set"]["kind"], "pinned")
        self.assertEqual({c["status"] for c in manifest["cells"].values()}, {"COMPLETE"})
        note_log = [json.loads(line) for line in (out / "raw" / "gemma3_4b_NOTE.jsonl").read_text().splitlines()]
        self.assertEqual([r["kind"] for r in note_log[:5]], ["compact_1", "compact_2", "compact_3", "question_1",
                                                             "question_2"])
        self.assertIn("PREVIOUS STATE:\n(nothing yet)", note_log[0]["messages"][0]["content"])
        self.assertIn(note_log[1]["response"], note_log[2]["messages"][0]["content"])    # note 2 feeds call 3
        self.assertEqual(len((out / "raw" / "gemma3_4b_FULL.jsonl").read_text().splitlines()), 2 * N_SESSIONS)
        self.assertIn(f"{N_SESSIONS * 2} complete, 0 left", self.status_of(out))

        code, scored, err = run_main(["score", "--out", str(out)])
        self.assertEqual(code, 0, err)
        self.assertIn(f"scored {4 * N_SESSIONS} probes from {2 * N_SESSIONS}/{2 * N_SESSIONS} complete cells", scored)
        results = json.loads((out / "results.json").read_text())
        self.assertEqual(results["study"], KEY)
        self.assertEqual(results["probes"], self.expected_probes())
        self.assertTrue((out / "probes.csv").read_text().startswith("model,regime,episode,question_id"))

        code, shown, err = run_main(["analyze", "--results", str(out / "results.json")])
        self.assertEqual(code, 0, err)
        self.assertIn(f"# {PROTOCOL_ID}: what a rewritten note keeps of a tally", shown)
        self.assertIn(f"| {MODEL} FULL | {2 * N_SESSIONS}/{2 * N_SESSIONS} = 100.0%", shown)
        self.assertIn(f"| {MODEL} NOTE | 0/{2 * N_SESSIONS} = 0.0%", shown)
        self.assertIn(f"FULL against NOTE: b = {2 * N_SESSIONS}, c = 0", shown)

        code, planned, err = run_main(["plan", "--out", str(out), "--models", MODEL])
        self.assertEqual(code, 0, err)
        self.assertIn(f"total: {CALLS} calls ({CALLS} done)", planned)

    def test_an_interrupted_run_resumes_with_only_the_calls_left_and_the_same_probes(self):
        """The server dies mid-cascade; the resumed run sends only the calls not journalled and scores the same."""
        reference, out = self.tmp / "reference", self.tmp / "run"
        with FakeOllama(models=[MODEL], behaviour=NOTE_LOSSES) as server:
            code, err = self.run_tally(server, reference)
            self.assertEqual(code, 0, err)
        journalled = 2 * N_SESSIONS + 2       # every FULL cell, then the first two compactions of NOTE's first cell
        with FakeOllama(models=[MODEL], behaviour=NOTE_LOSSES) as server:
            port = server.httpd.server_address[1]
            server.faults = [("delay", 0)] * journalled + [("shutdown",)]      # the server dies mid-cascade
            code, err = self.run_tally(server, out, "--give-up-after", "0.5")
        self.assertEqual(code, 3, err)
        self.assertIn("has not answered for", err)
        status = self.status_of(out)
        self.assertIn(f"| {MODEL} | FULL | {N_SESSIONS} | 0 | 0 | 0 |", status)
        self.assertIn(f"| {MODEL} | NOTE | 0 | 0 | 1 | {N_SESSIONS - 1} |", status)
        self.assertIn(f"{N_SESSIONS} complete, {N_SESSIONS} left; finish them with:", status)
        self.assertIn(f"--study {KEY}", status)
        sent_before = {canonical_json(json.loads(line)["messages"]) for log in (out / "raw").glob("*.jsonl")
                       for line in log.read_text().splitlines()}
        self.assertEqual(len(sent_before), journalled)

        with FakeOllama(models=[MODEL], behaviour=NOTE_LOSSES, port=port) as server:
            code, err = self.run_tally(server, out)
            self.assertEqual(code, 0, err)
            resent = [canonical_json(body["messages"]) for body in server.chat_requests]
        self.assertEqual(len(resent), CALLS - journalled)
        self.assertEqual(set(resent) & sent_before, set())
        self.assertIn(f"{2 * N_SESSIONS} complete, 0 left", self.status_of(out))
        for folder in (reference, out):
            self.assertEqual(run_main(["score", "--out", str(folder)])[0], 0)
        probes = [json.loads((folder / "results.json").read_text())["probes"] for folder in (reference, out)]
        self.assertEqual(probes[1], probes[0])
        self.assertEqual(probes[1], self.expected_probes())
        self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)


    def test_kill_9_mid_cascade_then_resume_gives_the_same_probes(self):
        """The runner is killed (SIGKILL) while a compaction is at the server; the resume sends only what is left."""
        reference, out = self.tmp / "reference", self.tmp / "killed"
        with FakeOllama(models=[MODEL], behaviour=NOTE_LOSSES) as server:
            self.assertEqual(self.run_tally(server, reference)[0], 0)
            command = [sys.executable, "-c", RUN_AS_PROCESS, str(Path(__file__).resolve().parent),
                       str(self.tmp / "TALLY.md"), str(self.tasks), "run", "--study", KEY, "--tasks", str(self.tasks),
                       "--models", MODEL, "--host", server.url, "--out", str(out), *FAST]
            kill_at_call(self, server, 2 * N_SESSIONS + 2, command)    # NOTE's first cell, its second compaction
            journalled = sum(len(p.read_text().splitlines()) for p in (out / "raw").glob("*.jsonl"))
            self.assertEqual(journalled, 2 * N_SESSIONS + 1)
            before = server.chat_count()
            code, err = self.run_tally(server, out)
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count() - before, CALLS - journalled)
        for folder in (reference, out):
            self.assertEqual(run_main(["score", "--out", str(folder)])[0], 0)
        probes = [json.loads((folder / "results.json").read_text())["probes"] for folder in (reference, out)]
        self.assertEqual(probes[1], probes[0])
        self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)



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
        register_tally(protocol, self.tmp / "tasks.json")
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
        self.assertIn("is not the task set", err)
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
