"""pilot.runfolder: a run folder's files are never read or written through a link, and a complete cell whose
log was lost is work to redo; one writer at a time; no traceback from a mutated manifest or results file
(issue "Safe with folders", points 1, 2, part of 3 and part of 7).

Each test plants a symbolic link to a victim file where the runner reads or writes one file kind, runs the
command that would write it, and checks the one-line refusal that names it and the victim left untouched."""
import contextlib
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from unittest import mock

from fake_servers import FakeOllama
from helpers import FAST, REPO, TempDirMixin, load_module, run_main
from pilot import runfolder

VICTIM_TEXT = "root:x:0:0:root:/root:/bin/bash\n"


def folder_state(folder: Path) -> dict:
    """Every file under folder (hidden ones aside) with what would change if it were written or replaced."""
    return {str(p.relative_to(folder)): (os.lstat(p).st_ino, os.lstat(p).st_mtime_ns, os.lstat(p).st_mode)
            for p in folder.rglob("*") if not p.name.startswith(".")}


class LinkRefusalTest(TempDirMixin, unittest.TestCase):
    """A finished run (the demo's, on the stand-in model), then one file kind at a time replaced by a link."""

    @classmethod
    def setUpClass(cls):
        cls.base = Path(tempfile.mkdtemp(prefix="ccl-runfolder-"))
        code, _, err = run_main(["demo", "--out", str(cls.base / "run"), "--quiet"])
        assert code == 0, err

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.base, ignore_errors=True)

    def run_with_link(self, name: str) -> tuple[Path, Path]:
        """A copy of the run with `name` replaced by a link to a victim file outside it: (run, victim)."""
        run = self.make_tmp() / "run"
        shutil.copytree(self.base / "run", run)
        victim = self.make_tmp() / "victim"
        victim.write_text(VICTIM_TEXT)
        target = run / name
        if target.exists():
            target.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(victim, target)
        return run, victim

    def assert_refused(self, argv: list[str], run: Path, victim: Path, name: str) -> None:
        code, _, err = run_main(argv)
        self.assertEqual(code, 2, err)
        self.assertNotIn("Traceback", err)
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        self.assertEqual(len(errors), 1, err)                   # one line (the demo's banner comes before it)
        self.assertIn(str(run / name), errors[0])
        self.assertIn("symbolic link", err)
        self.assertEqual(victim.read_text(), VICTIM_TEXT)
        self.assertTrue((run / name).is_symlink())

    def test_each_file_kind_is_refused_and_its_target_left_untouched(self):
        journal = sorted((self.base / "run" / "raw").glob("*.jsonl"))[1].name
        cases = [(".lock", ["demo", "--out"]),                       # the folder lock: the run resumes
                 ("manifest.json", ["demo", "--out"]),
                 (f"raw/{journal}", ["demo", "--out"]),              # the journal
                 (f"raw/{journal}.quarantine", ["demo", "--out"]),   # its quarantine
                 ("results.json", ["score", "--out"]),
                 ("probes.csv", ["score", "--out"]),
                 ("gate.csv", ["score", "--out"]),
                 ("analysis.md", ["analyze", "--out"]),
                 ("figures/fig_a_corruption.svg", ["analyze", "--out"]),
                 ("report.html", ["analyze", "--out"]),
                 ("RESULTS.md", ["analyze", "--out"])]
        for name, command in cases:
            with self.subTest(name):
                run, victim = self.run_with_link(name)
                self.assert_refused([*command, str(run), *(["--quiet"] if command[0] == "demo" else [])], run,
                                    victim, name)

    def test_reading_a_folder_whose_files_are_links_is_refused(self):
        for command in (["status", "--out"], ["verify", "--out"], ["plan", "--out"]):
            with self.subTest(command[0]):
                run, victim = self.run_with_link("results.json")
                self.assert_refused([*command, str(run)], run, victim, "results.json")

    def test_a_linked_subfolder_is_refused(self):
        run = self.make_tmp() / "run"
        shutil.copytree(self.base / "run", run)
        elsewhere = self.make_tmp() / "elsewhere"
        shutil.move(run / "raw", elsewhere)
        os.symlink(elsewhere, run / "raw")
        before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
        code, _, err = run_main(["status", "--out", str(run)])
        self.assertEqual(code, 2, err)
        self.assertIn(f"{run / 'raw'} is a symbolic link", err)
        self.assertEqual({p.name: p.read_bytes() for p in elsewhere.iterdir()}, before)

    @unittest.skipUnless(hasattr(os, "mkfifo"), "needs named pipes")
    def test_a_non_regular_output_is_refused_before_anything_is_written(self):
        """Every command that writes into a folder checks its whole output set first: a pipe or a file where a
        subfolder goes, or a pipe where a report goes, is named in one line and nothing in the folder changes."""
        mf = load_module("make_figures", REPO / "paper" / "make_figures.py")
        commands = {"score": ["score", "--out"], "analyze": ["analyze", "--out"], "gate": ["gate"],
                    "run": ["demo", "--quiet", "--out"], "make_figures": None,
                    "analyze --results": ["analyze", "--results", str(self.base / "run" / "results.json"), "--out"]}
        for name, kind in (("figures", "pipe"), ("figures", "file"), ("raw", "pipe"), ("RESULTS.md", "pipe"),
                           ("report.html", "pipe")):
            for label, command in commands.items():
                with self.subTest(f"{kind} at {name}, {label}"):
                    run = self.make_tmp() / "run"
                    shutil.copytree(self.base / "run", run)
                    place = run / name
                    shutil.rmtree(place) if place.is_dir() else place.unlink()
                    os.mkfifo(place) if kind == "pipe" else place.write_text("x")
                    before = folder_state(run)
                    if command is None:
                        err = io.StringIO()
                        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                            code = mf.main([str(self.base / "run" / "results.json"), "--out", str(run)])
                        err = err.getvalue()
                    else:
                        code, _, err = run_main([*command, str(run)])
                    self.assertEqual(code, 2, err)
                    errors = [line for line in err.splitlines() if line.startswith("error:")]
                    self.assertEqual(len(errors), 1, err)
                    self.assertIn(f"{place} is not a {'folder' if name in ('figures', 'raw') else 'regular file'}",
                                  errors[0])
                    self.assertEqual(folder_state(run), before)

    def test_write_atomic_and_the_journal_refuse_a_link_and_a_non_regular_file(self):
        folder = self.make_tmp()
        victim = folder / "victim"
        victim.write_text(VICTIM_TEXT)
        os.symlink(victim, folder / "linked.json")
        (folder / "a-folder.json").mkdir()
        for path in (folder / "linked.json", folder / "a-folder.json"):
            with self.subTest(path.name), self.assertRaises(runfolder.UnsafePath):
                runfolder.write_atomic(path, b"{}")
        (folder / "raw").mkdir()
        os.symlink(victim, folder / "raw" / "m_R1.jsonl")
        with self.assertRaises(runfolder.UnsafePath):
            runfolder.Journal(folder).append({"model": "m", "regime": "R1", "episode": 0, "kind": "compact_1"})
        self.assertEqual(victim.read_text(), VICTIM_TEXT)
        self.assertEqual(sorted(p.name for p in folder.iterdir()), ["a-folder.json", "linked.json", "raw", "victim"])


class LostLogTest(TempDirMixin, unittest.TestCase):
    """A complete cell whose raw log was deleted or cut short is work to redo, not a dead end (issue 21, 2)."""

    MODEL = "gemma3:4b"

    def finished_run(self, server) -> Path:
        out = self.make_tmp() / "run"
        code, _, err = run_main(["run", "--models", self.MODEL, "--host", server.url, "--out", str(out),
                                 "--episodes", "2", *FAST])
        self.assertEqual(code, 0, err)
        self.assertEqual(run_main(["score", "--out", str(out)])[0], 0)
        return out

    def resume(self, server, out: Path) -> int:
        before = server.chat_count()
        code, _, err = run_main(["run", "--models", self.MODEL, "--host", server.url, "--out", str(out),
                                 "--episodes", "2", *FAST])
        self.assertEqual(code, 0, err)
        return server.chat_count() - before

    def test_a_deleted_log_is_redone_and_status_says_so(self):
        with FakeOllama(models=[self.MODEL]) as server:
            out = self.finished_run(server)
            probes = json.loads((out / "results.json").read_text())["probes"]
            (out / "raw" / "gemma3_4b_R1.jsonl").unlink()
            code, status, _ = run_main(["status", "--out", str(out)])
            self.assertEqual(code, 0)
            self.assertIn("TO REDO gemma3:4b|R1|0: COMPLETE in the manifest, but its raw log lacks compact_1", status)
            self.assertIn("4 complete, 2 left", status)
            self.assertEqual(self.resume(server, out), 2 * 12)          # exactly the two R1 cells, again
            self.assertEqual(self.resume(server, out), 0)
            (out / "raw" / "gemma3_4b_R2.jsonl").write_bytes(b"")             # and once more, loud this time
            code, _, err = run_main(["run", "--models", self.MODEL, "--host", server.url, "--out", str(out),
                                     "--episodes", "2", *[a for a in FAST if a != "--quiet"], "--progress-interval", "0"])
            self.assertEqual(code, 0, err)
            # the progress line counts the calls this run makes, not those of the runs before it
            self.assertIn("progress: cells 2/2 and calls 24/24 this session (whole run: cells 6/6)", err)
        self.assertEqual(run_main(["score", "--out", str(out)])[0], 0)
        self.assertEqual(json.loads((out / "results.json").read_text())["probes"], probes)
        self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)
        reopened = [a["what"] for a in json.loads((out / "manifest.json").read_text())["amendments"]]
        self.assertIn("cell gemma3:4b|R1|1 reopened: lost compact_1 from its raw log (deleted, cut short or edited); "
                      "re-run from compact_1", reopened)

    def test_a_log_cut_short_sends_only_the_calls_it_lost(self):
        with FakeOllama(models=[self.MODEL]) as server:
            out = self.finished_run(server)
            log = out / "raw" / "gemma3_4b_R2.jsonl"
            lines = log.read_bytes().splitlines(keepends=True)
            log.write_bytes(b"".join(lines[:-2]))                       # the last cell's last two answers
            self.assertEqual(self.resume(server, out), 2)
        self.assertEqual(run_main(["score", "--out", str(out)])[0], 0)
        self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)

    def test_a_run_refused_by_a_lock_check_repairs_nothing(self):
        with FakeOllama(models=[self.MODEL]) as server, FakeOllama(models=[self.MODEL]) as other:
            out = self.finished_run(server)
            (out / "raw" / "gemma3_4b_R1.jsonl").unlink()
            log = out / "raw" / "gemma3_4b_R2.jsonl"
            log.write_bytes(log.read_bytes() + b"{torn")                    # and an unreadable line
            before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
            code, _, err = run_main(["run", "--models", self.MODEL, "--host", other.url, "--out", str(out),
                                     "--episodes", "2", *FAST])
            self.assertEqual(code, 2, err)
            self.assertIn("was run with different settings: base_url", err)
            self.assertEqual({p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}, before)
            self.assertEqual(other.chat_count(), 0)
            self.assertEqual(self.resume(server, out), 2 * 12)               # the right server redoes them


class OneWriterTest(TempDirMixin, unittest.TestCase):
    """One writer, one truth (issue 21, 7): score takes the folder lock; a repeated record is named wherever a
    bank is scored; the resume command keeps --recheck."""

    MODEL = "gemma3:4b"
    HOLD = ("import sys, time; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
            "from pilot.runfolder import RunLock; lock = RunLock(Path(sys.argv[2])); lock.acquire(); "
            "print('held', flush=True); time.sleep(60)")

    def finished_run(self, server, *extra: str) -> Path:
        out = self.make_tmp() / "run"
        code, _, err = run_main(["run", "--models", self.MODEL, "--host", server.url, "--out", str(out),
                                 "--episodes", "1", *FAST, *extra])
        self.assertEqual(code, 0, err)
        return out

    def test_score_waits_for_no_runner(self):
        with FakeOllama(models=[self.MODEL]) as server:
            out = self.finished_run(server)
        holder = subprocess.Popen([sys.executable, "-c", self.HOLD, str(REPO / "scripts"), str(out)],
                                  stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: holder.poll() is None and (holder.kill(), holder.wait()))
        self.addCleanup(holder.stdout.close)
        self.assertEqual(holder.stdout.readline().strip(), "held")
        code, _, err = run_main(["score", "--out", str(out)])
        self.assertEqual(code, 2, err)
        self.assertIn(f"another runner (process {holder.pid})", err)
        self.assertFalse((out / "results.json").exists())
        holder.kill()
        holder.wait()
        self.assertEqual(run_main(["score", "--out", str(out)])[0], 0)

    def test_a_repeated_record_is_named_by_score_and_the_pilot(self):
        with FakeOllama(models=[self.MODEL]) as server:
            out = self.finished_run(server)
            log = out / "raw" / "gemma3_4b_R1.jsonl"
            log.write_bytes(log.read_bytes() + log.read_bytes().splitlines(keepends=True)[-1])
            code, _, err = run_main(["score", "--out", str(out)])
            self.assertEqual(code, 0, err)
            self.assertIn("gemma3:4b|R1|0: question_8 is recorded 2 times in raw/; the first is scored", err)
            code, _, err = run_main(["--models", self.MODEL, "--host", server.url, "--out", str(out),
                                     "--episodes", "1", *FAST])
            self.assertIn("question_8 is recorded 2 times", err)
        code, report, _ = run_main(["verify", "--out", str(out)])
        self.assertIn("question_8 recorded 2 times", report)

    def test_the_resume_command_keeps_recheck(self):
        with FakeOllama(models=[self.MODEL]) as server:
            server.faults = [("status", 400, {"error": "bad"})]
            out = self.make_tmp() / "run"
            run_main(["run", "--models", self.MODEL, "--host", server.url, "--out", str(out), "--episodes", "1",
                      *[a for a in FAST if a not in ("--recheck", "0")], "--recheck", "3"])
        code, status, _ = run_main(["status", "--out", str(out)])
        self.assertEqual(code, 0)
        self.assertIn("--recheck 3", next(line for line in status.splitlines() if "finish them with" in line))
        code, plan, _ = run_main(["plan", "--out", str(out)])              # plan counts the probe's calls too
        self.assertEqual(code, 0)
        self.assertIn("determinism probe: 3 more calls once the cells are complete (--recheck 3, as the run was "
                      "started", plan)
        self.assertIn("determinism probe: 8 more calls", run_main(["plan", "--models", self.MODEL])[1])


class MergeTargetTest(TempDirMixin, unittest.TestCase):
    """merge OUT writes a whole run into a new or empty folder, and a prepared OUT is refused before anything is
    written, so the merge can be tried again once OUT is cleared."""

    MODEL = "gemma3:4b"

    def test_a_prepared_folder_is_refused_before_anything_is_written(self):
        root = self.make_tmp()
        with FakeOllama(models=[self.MODEL]) as server:
            for i in (1, 2):
                code, _, err = run_main(["run", "--models", self.MODEL, "--host", server.url, "--out",
                                         str(root / f"s{i}"), "--episodes", "1", "--shard", f"{i}/2", *FAST])
                self.assertEqual(code, 0, err)
        victim = root / "victim"
        victim.write_text(VICTIM_TEXT)
        out = root / "merged"
        (out / "raw").mkdir(parents=True)
        os.symlink(victim, out / "raw" / "gemma3_4b_R2.jsonl")       # the log merge writes after R0's and R1's
        (out / "notes.txt").write_text("mine")
        shards = [str(root / "s1"), str(root / "s2")]
        for planted in ("raw/gemma3_4b_R2.jsonl", "notes.txt"):
            with self.subTest(planted):
                before = folder_state(out)
                code, _, err = run_main(["merge", str(out), *shards])
                self.assertEqual(code, 2, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn("is a symbolic link" if planted.startswith("raw") else
                              "is not empty (it holds notes.txt)", err)
                self.assertIn("merge into a new", err)
                self.assertEqual(folder_state(out), before)
                self.assertEqual(victim.read_text(), VICTIM_TEXT)
                (out / planted).unlink()
        # inside a shard (its raw/, say) or the shard itself: the shard would be read as broken ever after
        for inside in (root / "s1" / "raw" / "merged", root / "s1", root):
            with self.subTest(inside=str(inside)):
                code, _, err = run_main(["merge", str(inside), *shards])
                self.assertEqual(code, 2, err)
                self.assertIn("lie one inside the other", err)
        self.assertFalse((root / "s1" / "raw" / "merged").exists())
        self.assertEqual(run_main(["status", "--out", str(root / "s1")])[0], 0)
        code, _, err = run_main(["merge", str(out), *shards])              # cleared, it merges as a new one
        self.assertEqual(code, 0, err)
        self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)


def mutate(value, rng: "random.Random"):
    """One random change deep inside a parsed JSON value: a field dropped, an item inserted, a value replaced."""
    odd = [None, 0, -5, 2 ** 70, 1.5, "", "x", [], {}, True, "COMPLETE", "a|b\nc", "../../etc", [1, 2]]
    if isinstance(value, dict) and value and rng.random() < 0.7:
        changed, key = dict(value), rng.choice(list(value))
        roll = rng.random()
        if roll < 0.2:
            del changed[key]
        else:
            changed[key] = mutate(changed[key], rng) if roll < 0.8 else rng.choice(odd)
        return changed
    if isinstance(value, list) and value and rng.random() < 0.7:
        changed, index = list(value), rng.randrange(len(value))
        roll = rng.random()
        if roll < 0.2:
            del changed[index]
        elif roll < 0.8:
            changed[index] = mutate(changed[index], rng)
        else:
            changed.insert(index, rng.choice(odd))
        return changed
    return rng.choice(odd)


class FuzzTest(TempDirMixin, unittest.TestCase):
    """Random mutations of a finished run's manifest.json and results.json (its gate block among them), read by
    status, verify, score, analyze and gate RUN_DIR (issue 21, 3): each ends in an answer or one line and exit 2,
    never a traceback."""

    MUTATIONS = 45                  # x 6 commands in the suite; the outside fuzzer of issue 21 ran 800

    @classmethod
    def setUpClass(cls):
        cls.base = Path(tempfile.mkdtemp(prefix="ccl-fuzz-"))
        with FakeOllama(models=["gemma3:4b"]) as server:
            code, _, err = run_main(["--models", "gemma3:4b", "--host", server.url, "--out", str(cls.base / "run"),
                                     "--episodes", "1", *FAST])
        assert code == 0, err

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.base, ignore_errors=True)

    def assert_answer_or_one_line(self, argv: list[str]) -> tuple[int, str]:
        code, _, err = run_main(argv)
        self.assertIn(code, (0, 1, 2, 3), err)
        self.assertNotIn("Traceback", err)
        if code == 2:
            self.assertEqual(len(err.strip().splitlines()), 1, err)
        return code, err

    def test_no_traceback_from_a_mutated_manifest_or_results(self):
        rng = random.Random(2101)
        for number in range(self.MUTATIONS):
            run = self.make_tmp() / "run"
            shutil.copytree(self.base / "run", run)
            name = rng.choice(["manifest.json", "results.json"])
            data = json.loads((run / name).read_text())
            if name == "results.json" and rng.random() < 0.4:
                data["gate"] = mutate(data["gate"], rng)              # the block the gate's reports read
            else:
                data = mutate(data, rng)
            text = json.dumps(data)
            (run / name).write_text(text if rng.random() < 0.9 else text[:rng.randrange(1, 200)])
            commands = [["status", "--out"], ["verify", "--out"], ["score", "--out"], ["analyze", "--out"],
                        ["analyze", "--results"]]
            # gate RUN_DIR scores the run again from its logs, so only its manifest can change what it does
            commands += [["gate"]] if name == "manifest.json" else []
            for command in commands:
                argv = [*command, str(run / "results.json" if command[-1] == "--results" else run)]
                with self.subTest(mutation=number, file=name, command=" ".join(command)):
                    self.assert_answer_or_one_line(argv)
            shutil.rmtree(run)

    def test_a_record_whose_kind_or_episode_is_no_key_is_an_unreadable_line(self):
        """A raw record with a list for its kind or episode broke every folder command (unhashable type); it is an
        unreadable line now: verify names it, the others answer, and the run quarantines it and redoes the call."""
        for field in ("kind", "episode", "budget"):
            with self.subTest(field):
                run = self.make_tmp() / "run"
                shutil.copytree(self.base / "run", run)
                log = run / "raw" / "gemma3_4b_R1.jsonl"
                lines = log.read_text().splitlines()
                record = json.loads(lines[1])
                record[field] = [record.get(field, 256)]
                lines[1] = json.dumps(record)
                log.write_text("\n".join(lines) + "\n")
                for command in (["status", "--out"], ["score", "--out"], ["gate"]):
                    self.assert_answer_or_one_line([*command, str(run)])
                code, stdout, err = run_main(["verify", "--out", str(run)])
                self.assertEqual(code, 1)
                self.assertIn("gemma3_4b_R1.jsonl line 2: unreadable record", stdout + err)

    def test_the_lists_merge_and_a_resume_copy_are_checked_item_by_item(self):
        """`base_url_spellings`, `connections` and `amendments` are copied by merge and extended by a resume: an item
        of the wrong kind (a merge once hashed a spelling that was an object, and read `amendments` unchecked) is
        one line, exit 2; a manifest that records no amendments is merged."""
        cases = {"base_url_spellings": [{"url": 1}], "connections": ["kept alive"], "amendments": [7],
                 "recheck_requested": "8"}
        for field, value in [*cases.items(), ("amendments", None)]:
            with self.subTest(field=field, value=value):
                run = self.make_tmp() / "run"
                shutil.copytree(self.base / "run", run)
                manifest = json.loads((run / "manifest.json").read_text())
                if value is None:
                    del manifest[field]
                else:
                    manifest[field] = value
                (run / "manifest.json").write_text(json.dumps(manifest))
                merged = self.make_tmp() / "merged"
                code, err = self.assert_answer_or_one_line(["merge", str(merged), str(run)])
                if value is None:
                    self.assertEqual(code, 0, err)
                    self.assertEqual(json.loads((merged / "manifest.json").read_text())["amendments"], [])
                    continue
                self.assertEqual(code, 2, err)
                self.assertIn(f"`{field}`", err)
                self.assertFalse(merged.exists())
                with FakeOllama(models=["gemma3:4b"]) as server:
                    code, err = self.assert_answer_or_one_line(["run", "--models", "gemma3:4b", "--host", server.url,
                                                                "--out", str(run), "--episodes", "1", *FAST])
                    self.assertEqual(server.chat_count(), 0)
                self.assertEqual(code, 2, err)
                self.assertIn(f"`{field}`", err)

    def test_a_number_no_run_could_write_is_one_line(self):
        """A number the reports would render or divide by, out of any range a run writes (an interval bound of
        10**39, a mean too large for a float, a cap no server has), is refused in one line naming its field."""
        mf = load_module("make_figures", REPO / "paper" / "make_figures.py")
        cases = [(("gate", "by_regime", "R1", "states", "lo"), 10 ** 39, "`gate` `by_regime`"),
                 (("gate", "by_regime", "R2", "final_states", "rate"), 10 ** 400, "`gate` `by_regime`"),
                 (("gate", "prediction", "fisher_p"), 2, "`gate` `prediction`"),
                 (("compaction_tokens", "R1", "mean"), 10 ** 400, "`compaction_tokens` for R1"),
                 (("compaction_stage", 0, "retained"), 10 ** 400, "`compaction_stage`"),
                 (("calls", 0, "prompt_eval_count"), 10 ** 400, "`calls` holds a token count"),
                 (("run", "compaction_cap"), 10 ** 39, "`run` holds"),
                 (("compaction_tokens", "R2", "mean"), float("inf"), "`compaction_tokens` for R2")]
        for path, value, named in cases:
            with self.subTest(path=path):
                results = json.loads((self.base / "run" / "results.json").read_text())
                holder = results
                for key in path[:-1]:
                    holder = holder[key]
                holder[path[-1]] = value
                bank = self.make_tmp() / "results.json"
                bank.write_text(json.dumps(results))
                code, err = self.assert_answer_or_one_line(["analyze", "--results", str(bank)])
                self.assertEqual(code, 2, err)
                self.assertIn(named, err)
                err = io.StringIO()
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                    code = mf.main([str(bank), "--out", str(self.make_tmp())])
                self.assertEqual(code, 2, err.getvalue())
                self.assertIn(named, err.getvalue())


class TemplateMismatchTest(TempDirMixin, unittest.TestCase):
    """Replies that are not answers are caught early (issue 21, 5): a server whose chat template is not the model's
    answers with control tokens; the run stops within its first cells with one line saying how to set it."""

    MODEL = "gemma3:4b"
    NOISE = "<|im_end|>user\n<|im_end|>user\n<|im_end|>"

    def test_a_run_of_control_tokens_stops_early_and_is_flagged(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[self.MODEL]) as server:
            server.faults = [("text", self.NOISE)] * 40
            code, _, err = run_main(["run", "--models", self.MODEL, "--host", server.url, "--out", str(out),
                                     "--episodes", "2", *FAST])
            sent = server.chat_count()
        self.assertEqual(code, 2, err)
        last = err.strip().splitlines()[-1]
        self.assertIn("the server's chat template does not match the model: 6 of its first 6 replies", last)
        self.assertIn("--jinja", last)
        self.assertIn("a file without one falls back to ChatML: then name it, e.g. --no-jinja --chat-template gemma",
                      last)                         # as llama.cpp did with a Gemma 3 GGUF that carries no template
        self.assertIn("Modelfile", last)
        self.assertLessEqual(sent, 10)
        records = [json.loads(line) for log in (out / "raw").glob("*.jsonl") for line in log.read_text().splitlines()]
        self.assertEqual(len(records), sent)
        self.assertTrue(all(r.get("control_tokens") for r in records))

    def test_the_shape_a_real_server_gave_stops_at_once(self):
        """As llama.cpp served Gemma 3 270M with a ChatML template (concurrency 2, replies slow, every one of them
        strings of `<|im_end|>user`): the run is judged at the 6th flagged reply, and no call is sent after it but
        those already in flight (on the real server, 12 calls were sent and 2 of them after the 10th reply)."""
        real = "<|im_end|>user\n<|im_start|>user\n" + "<|im_end|>user\n" * 40
        out = self.make_tmp() / "run"
        with FakeOllama(models=[self.MODEL], behaviour={"answer_prefix": real}, latency_s=0.3) as server:
            code, _, err = run_main(["run", "--models", self.MODEL, "--host", server.url, "--out", str(out),
                                     "--episodes", "2", "--regimes", "R0", "--concurrency", "2", *FAST])
            sent = server.chat_count()
        self.assertEqual(code, 2, err)
        self.assertIn("stopping: the server's chat template does not match the model; no new calls will be sent",
                      err)
        # (judged at the 6th; a reply in flight then may land before the last line is written: 6 to 8 of them)
        said = re.search(r"(\d+) of its first (\d+) replies carry chat-template control tokens \(such as "
                         r"<\|im_end\|>\)", err.strip().splitlines()[-1])
        self.assertIsNotNone(said, err)
        self.assertEqual(said.group(1), said.group(2))
        self.assertIn(int(said.group(1)), (6, 7, 8))
        self.assertLessEqual(sent, 6 + 2)                  # at most the two calls in flight at the 6th reply

    def test_the_stop_status_and_resume_say_one_thing_and_the_flagged_replies_are_sent_again(self):
        """The stop said "run into a new folder" while status printed the command that resumes the same folder,
        which then scored the garbage replies. Now all three say: fix the template, run the same command; and that
        command sets the flagged replies aside and sends them again."""
        out = self.make_tmp() / "run"
        argv = ["--models", self.MODEL, "--out", str(out), "--episodes", "1", *FAST]
        with FakeOllama(models=[self.MODEL]) as server:
            server.faults = [("text", self.NOISE)] * 6
            code, _, err = run_main([*argv, "--host", server.url])
            self.assertEqual(code, 2, err)
            self.assertNotIn("new folder", err)
            self.assertIn("then run the same command again: every reply that carries control tokens is moved to "
                          "raw/*.quarantine (kept as evidence) and sent again. Resume with: python3", err)
            flagged = [json.loads(line) for log in (out / "raw").glob("*.jsonl") for line in log.read_text().splitlines()]
            self.assertEqual(len(flagged), 6)
            code, status, _ = run_main(["status", "--out", str(out)])
            self.assertEqual(code, 0)
            self.assertIn("TO SEND AGAIN", status)
            self.assertIn("finish them with: python3 scripts/run_pilot.py --out", status)
            sent = server.chat_count()
            code, _, err = run_main([*argv, "--host", server.url])      # the template fixed: the same command
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count() - sent, 32)             # the 6 flagged calls again, and the other 26
        records = [json.loads(line) for log in (out / "raw").glob("*.jsonl") for line in log.read_text().splitlines()]
        self.assertEqual(len(records), 32)
        self.assertFalse(any(r.get("control_tokens") for r in records))
        quarantined = [line for log in (out / "raw").glob("*.quarantine") for line in log.read_text().splitlines()]
        self.assertEqual(len(quarantined), 6)
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertNotIn("template_stop", manifest)
        self.assertIn("6 replies carrying chat-template control tokens moved to raw/*.quarantine",
                      manifest["amendments"][-1]["what"])
        self.assertNotIn("<|im_end|>", (out / "analysis.md").read_text())
        self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)

    def test_a_few_flagged_replies_do_not_stop_the_run_and_are_reported(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[self.MODEL]) as server:
            server.faults = [("delay", 0)] * 3 + [("text", self.NOISE)] * 2
            code, _, err = run_main(["--models", self.MODEL, "--host", server.url, "--out", str(out),
                                     "--episodes", "1", *FAST])
        self.assertEqual(code, 0, err)
        self.assertIn("Replies carrying chat-template control tokens (the server's template does not match the "
                      "model, and such replies are noise): 2 of 32 calls.", (out / "analysis.md").read_text())
        code, _, err = run_main(["score", "--out", str(out)])       # said for any study, wherever it is scored
        self.assertIn("2 of 32 replies in raw/ carry chat-template control tokens", err)


class ResendAndStopTest(TempDirMixin, unittest.TestCase):
    """Every re-send is visible; a stop stops (issue 21, 4)."""

    MODEL = "gemma3:4b"
    LOUD = [a for a in FAST if a != "--quiet"] + ["--progress-interval", "0"]

    def test_a_call_sent_again_on_a_new_connection_is_said_and_journalled_as_a_second_attempt(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[self.MODEL]) as server:
            server.faults = [("delay", 0)] * 3 + [("close",)]          # the 4th call: its connection closed
            code, _, err = run_main(["run", "--models", self.MODEL, "--host", server.url, "--out", str(out),
                                     "--episodes", "1", *self.LOUD])
            sent = server.chat_count()
        self.assertEqual(code, 0, err)
        self.assertIn("the server closed the kept-alive connection as the request went out; sent again on a new one "
                      "(attempt 2)", err)
        self.assertIn(", re-sent 1", err)
        records = [json.loads(line) for log in (out / "raw").glob("*.jsonl") for line in log.read_text().splitlines()]
        self.assertEqual(sent, len(records) + 1)
        self.assertEqual(sorted(r["attempt"] for r in records)[-2:], [1, 2])

    def test_after_the_stop_no_call_waiting_for_a_slot_is_sent(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[self.MODEL]) as server:
            server.faults = [("delay", 1.5)] * 400
            proc = subprocess.Popen([sys.executable, str(REPO / "scripts" / "run_pilot.py"), "run", "--models",
                                     self.MODEL, "--host", server.url, "--out", str(out), "--episodes", "3",
                                     "--concurrency", "2", *FAST], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True)
            self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
            deadline = time.monotonic() + 30
            while server.chat_count() < 4 and time.monotonic() < deadline:     # answers are waiting for slots
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            at_stop = server.chat_count()
            _, err = proc.communicate(timeout=60)
            after = server.chat_count()
        self.assertEqual(proc.returncode, 130, err)
        self.assertLessEqual(after - at_stop, 0, err)               # nothing sent after "no new calls"


if __name__ == "__main__":
    unittest.main()


class ManifestSaveTest(TempDirMixin, unittest.TestCase):
    """The manifest's rewrite holds its data only while it serializes them: a cell that ends while the disk holds
    the rewrite's fsync records its end at once (issue 24: the wait was on the calls' path), and the file still
    ends with the newest data."""

    def test_a_cell_end_is_not_kept_waiting_by_a_rewrite_on_a_slow_disk(self):
        path = self.make_tmp() / "manifest.json"
        manifest = runfolder.Manifest(path, {"cells": {}})
        in_write, disk_done = threading.Event(), threading.Event()
        real_write = runfolder.write_atomic

        def slow_disk(target, payload):
            in_write.set()
            disk_done.wait(10)
            real_write(target, payload)

        with mock.patch.object(runfolder, "write_atomic", slow_disk):
            saving = threading.Thread(target=manifest.save)
            saving.start()
            self.assertTrue(in_write.wait(10))
            acquired = manifest._lock.acquire(timeout=5)       # the old rewrite held it through its fsyncs
            try:
                self.assertTrue(acquired, "the data lock was held through the manifest's write")
                manifest.data["cells"]["m|R1|0"] = {"status": "COMPLETE"}
            finally:
                if acquired:
                    manifest._lock.release()
                disk_done.set()
                saving.join()
        self.assertEqual(json.loads(path.read_text())["cells"], {})           # that rewrite's own snapshot
        manifest.save()
        self.assertEqual(json.loads(path.read_text())["cells"], {"m|R1|0": {"status": "COMPLETE"}})
