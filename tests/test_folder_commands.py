"""pilot/folder_commands.py fails closed (issue 31): merge, gate, generate, status, verify and plan on folders that a
runner holds, that a stopped merge left, that lost their inputs, or that say less than they seem to."""
import errno
import json
import os
import shutil
import unittest
from pathlib import Path
from unittest import mock

from fake_servers import FakeOllama
from helpers import FAST, REPO, TempDirMixin, run_main
from pilot import launch, runfolder

MODEL = "gemma3:4b"

QUICK = [arg for arg in FAST if arg not in ("--recheck", "0")]      # FAST, with the determinism probe left on


def folder_state(root: Path) -> dict:
    """Every file under root with its bytes (links as their targets), to show that nothing changed."""
    return {str(p.relative_to(root)): (os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


class ShardsMixin(TempDirMixin):
    def make_shards(self, root: Path, *extra: str, episodes: str = "1") -> list[str]:
        with FakeOllama(models=[MODEL]) as server:
            for i in (1, 2):
                code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(root / f"s{i}"),
                                         "--episodes", episodes, "--shard", f"{i}/2", *extra])
                self.assertEqual(code, 0, err)
        return [str(root / "s1"), str(root / "s2")]


class MergeTest(ShardsMixin, unittest.TestCase):
    def test_a_merged_folder_sends_no_call_and_keeps_the_shards_probe(self):
        """After merge, plan said 8 calls were left and the pilot said "no model calls needed", then sent the
        8 calls of a determinism probe and replaced the shards' (16 calls) with its own."""
        root = self.make_tmp()
        shards = self.make_shards(root, *QUICK)
        code, _, err = run_main(["merge", str(root / "merged"), *shards])
        self.assertEqual(code, 0, err)
        merged = json.loads((root / "merged" / "manifest.json").read_text())
        self.assertEqual((merged["recheck"]["k"], merged["recheck"]["sent"]), (16, 16))
        code, plan, err = run_main(["plan", "--out", str(root / "merged")])
        self.assertEqual(code, 0, err)
        self.assertNotIn("determinism probe", plan)
        self.assertIn("total: 32 calls (32 done)", plan)
        with FakeOllama(models=[MODEL]) as server:
            code, _, err = run_main(["--out", str(root / "merged"), "--models", MODEL, "--episodes", "1",
                                     "--host", server.url, "--quiet"])
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), 0)
        self.assertEqual(json.loads((root / "merged" / "manifest.json").read_text())["recheck"], merged["recheck"])

    def test_a_shard_a_runner_holds_is_not_merged(self):
        root = self.make_tmp()
        shards = self.make_shards(root, *FAST)
        lock = runfolder.RunLock(root / "s2")
        lock.acquire()
        try:
            code, _, err = run_main(["merge", str(root / "merged"), *shards])
        finally:
            lock.release()
        self.assertEqual(code, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn(f"another runner (process {os.getpid()}) is writing {root / 's2'}", err)
        self.assertIn("merge the shard once it is done", err)
        self.assertFalse((root / "merged").exists())
        self.assertEqual(run_main(["merge", str(root / "merged"), *shards])[0], 0)

    def test_a_merge_stopped_by_a_full_disk_leaves_nothing_and_runs_again(self):
        root = self.make_tmp()
        shards = self.make_shards(root, *FAST)
        real = os.replace
        for stopped_at in ("manifest.json", "results.json", "analysis.md"):
            with self.subTest(stopped_at):
                def filling_disk(source, target):
                    if Path(target).name == stopped_at:
                        raise OSError(errno.ENOSPC, "No space left on device", str(target))
                    return real(source, target)
                (root / "merged").mkdir()                   # an empty folder made for it, as the guide allows
                with mock.patch.object(os, "replace", filling_disk):
                    code, _, err = run_main(["merge", str(root / "merged"), *shards])
                self.assertEqual(code, 4, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(f"nothing was written to {root / 'merged'}; free some space, then run the same command "
                              f"again", err)
                self.assertEqual(folder_state(root / "merged"), {})          # not half made
                self.assertEqual([p.name for p in root.iterdir() if p.name.startswith(".")], [])
                code, _, err = run_main(["merge", str(root / "merged"), *shards])     # the same command again
                self.assertEqual(code, 0, err)
                self.assertEqual(run_main(["verify", "--out", str(root / "merged")])[0], 0)
                shutil.rmtree(root / "merged")

    def test_a_merge_killed_midway_leaves_out_untouched_and_is_cleared_by_the_next(self):
        root = self.make_tmp()
        shards = self.make_shards(root, *FAST)
        # what a merge killed while it wrote leaves: its folder beside OUT, of a process that is gone
        left = root / ".merged.merging-999999999"
        (left / "raw").mkdir(parents=True)
        (left / "raw" / "gemma3_4b_R0.jsonl").write_text('{"torn')
        code, _, err = run_main(["merge", str(root / "merged"), *shards])
        self.assertEqual(code, 0, err)
        self.assertFalse(left.exists())
        self.assertEqual(run_main(["verify", "--out", str(root / "merged")])[0], 0)


class GateFolderTest(ShardsMixin, unittest.TestCase):
    def test_gate_run_dir_refuses_a_folder_a_runner_holds(self):
        root = self.make_tmp()
        with FakeOllama(models=[MODEL]) as server:
            self.assertEqual(run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(root / "run"),
                                       "--episodes", "1", *FAST])[0], 0)
        before = folder_state(root / "run")
        lock = runfolder.RunLock(root / "run")
        lock.acquire()
        try:
            code, out, err = run_main(["gate", str(root / "run")])
        finally:
            lock.release()
        self.assertEqual(code, 2, err)
        self.assertEqual(out, "")
        self.assertIn(f"another runner (process {os.getpid()}) is writing", err)
        self.assertEqual(folder_state(root / "run"), before)      # no results, figures or report written into it
        self.assertEqual(run_main(["gate", str(root / "run")])[0], 0)


class GenerateForceTest(TempDirMixin, unittest.TestCase):
    def test_force_overwrites_a_task_file_and_nothing_else(self):
        """generate --force replaced scripts/run_pilot.py, README.md and a run's manifest with task JSON."""
        tmp = self.make_tmp()
        with FakeOllama(models=[MODEL]) as server:
            self.assertEqual(run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(tmp / "run"),
                                       "--episodes", "1", *FAST])[0], 0)
        victims = {"run_pilot.py": REPO / "scripts" / "run_pilot.py", "README.md": REPO / "README.md",
                   "manifest.json": tmp / "run" / "manifest.json", "results.json": None, "empty.json": None}
        for name, source in victims.items():
            with self.subTest(name):
                path = tmp / name
                if source is not None:
                    shutil.copy(source, path)
                else:
                    path.write_text('{"episodes": "not a list"}' if name == "results.json" else "")
                before = path.read_bytes()
                code, out, err = run_main(["generate", "--tasks", str(path), "--episodes", "2", "--force"])
                self.assertEqual(code, 2, out)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn("is not a task file", err)
                self.assertIn("give --tasks a new path", err)
                self.assertEqual(path.read_bytes(), before)
        tasks = tmp / "tasks.json"                       # a task file, of another study even, is overwritten
        self.assertEqual(run_main(["generate", "--study", "constraints", "--tasks", str(tasks), "--episodes", "2"])[0],
                         0)
        code, out, err = run_main(["generate", "--tasks", str(tasks), "--episodes", "2", "--force"])
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(tasks.read_text())["n_episodes"], 2)
        self.assertNotIn("study", json.loads(tasks.read_text()))


class DamagedManifestWordsTest(TempDirMixin, unittest.TestCase):
    def test_no_message_shows_a_python_none(self):
        """verify printed "manifest says None calls" for a cell whose entry had lost its call count."""
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            self.assertEqual(run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out),
                                       "--episodes", "1", *FAST])[0], 0)
            manifest = json.loads((out / "manifest.json").read_text())
            first, second = sorted(manifest["cells"])[:2]
            del manifest["cells"][first]["n_calls"]
            manifest["cells"][second].update(status="FAILED", reason=None)
            del manifest["lock"]["backend"]
            (out / "manifest.json").write_text(json.dumps(manifest))
            code, verified, _ = run_main(["verify", "--out", str(out)])
            self.assertEqual(code, 1)
            self.assertIn(f"{first}: the manifest records no call count, the log has", verified)
            code, status, err = run_main(["status", "--out", str(out)])
            self.assertEqual(code, 0, err)
            self.assertIn(f"FAILED {second}: no reason recorded", status)
            self.assertIn("backend not recorded", status)
            shard = out.parent / "shard"
            self.assertEqual(run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(shard),
                                       "--episodes", "1", "--shard", "2/2", *FAST])[0], 0)
            code, _, err = run_main(["merge", str(out.parent / "merged"), str(out), str(shard)])
            self.assertEqual(code, 2)
            self.assertIn("shard count (none vs 2/2)", err)
        for printed in (verified, status, err):
            self.assertNotIn("None", printed)


class StudyWordsTest(TempDirMixin, unittest.TestCase):
    """Study-specific words come from the Study record, and the folder commands find a run as the run named it."""

    def session(self) -> Path:
        folder = self.make_tmp() / "mine"
        folder.mkdir()
        shutil.copy(REPO / "tasks" / "sessions" / "logs" / "2-support-refund.chat.json", folder)
        return folder

    def test_an_incomplete_sessions_run_is_analysed_marked_partial_with_its_report(self):
        """A sessions run said "the confirmatory analysis waits" (it has none) and ended without the report's path."""
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            server.faults = [("status", 400, {"error": "bad"})]
            code, printed, err = run_main(["--study", "sessions", "--sessions", str(self.session()), "--models",
                                           MODEL, "--host", server.url, "--out", str(out), *FAST])
        self.assertEqual(code, 3, err)
        self.assertNotIn("confirmatory", (printed + err).lower().replace("exploratory", ""))
        self.assertIn("results.json holds 0/5 complete cells (the 0 of 1 sessions complete in every model and regime; "
                      "4 complete cells of unfinished sessions wait for them); the analysis below covers them, marked "
                      "PARTIAL", err)
        self.assertIn("EXPLORATORY\nPARTIAL VIEW: the run is not finished; this compares the regimes over the 0 of its "
                      "1 sessions", printed)
        self.assertIn(f"Open the report: {out / 'report.html'}", printed)
        analysis_md = (out / "analysis.md").read_text()
        self.assertIn("PARTIAL VIEW: the run is not finished; this compares the regimes over the 0 of its 1 sessions",
                      analysis_md)
        code, printed, err = run_main(["analyze", "--out", str(out)])        # analyze too, without --allow-partial
        self.assertEqual(code, 0, err)

    def test_a_study_with_a_confirmatory_test_still_waits_in_its_own_words(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            server.faults = [("status", 400, {"error": "bad"})]
            code, _, err = run_main(["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "1",
                                     *FAST])
        self.assertEqual(code, 3, err)
        self.assertIn("the analysis waits for the rest. Rerun the same command, or add --allow-partial for an "
                      "analysis marked NON-CONFIRMATORY", err)
        self.assertFalse((out / "analysis.md").exists())

    def test_status_verify_and_score_find_a_run_as_the_run_named_its_folder(self):
        """`status --study sessions` could not find a sessions run in its hashed folder, and refused --sessions."""
        results = self.make_tmp()
        mine = self.session()
        with mock.patch.object(launch, "RESULTS_ROOT", results), FakeOllama(models=[MODEL]) as server:
            run = ["--study", "sessions", "--sessions", str(mine), "--models", MODEL, "--host", server.url]
            code, _, err = run_main(["run", *run, *FAST])
            self.assertEqual(code, 0, err)
            folder = next(results.iterdir())
            self.assertTrue(folder.name.startswith("sessions-tasks-"))
            for command in ("status", "verify", "score"):
                with self.subTest(command):
                    code, printed, err = run_main([command, *run])      # in front of the run's own command
                    self.assertEqual(code, 0, err)
                    self.assertIn(str(folder), printed)
            code, _, err = run_main(["status", "--study", "sessions"])
            self.assertEqual(code, 2)
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertIn("give --sessions PATH as the run did", err)
            self.assertIn(f"sessions run folders here: {folder}", err)

    def test_plan_goes_in_front_of_a_studys_own_subcommand(self):
        """`plan adversarial ...` (the guide's command with plan in front) was refused."""
        guide = (REPO / "scripts" / "README.md").read_text()
        typed = guide.split("python3 scripts/run_pilot.py adversarial ", 1)[1].split("\n```", 1)[0]
        argv = typed.replace("\\\n", " ").split()
        argv[argv.index("--out") + 1] = str(self.make_tmp() / "adversarial")
        code, printed, err = run_main(["plan", "adversarial", *argv])
        self.assertEqual(code, 0, err)
        self.assertIn("| MODEL | G2 |", printed)


class FolderAloneTest(TempDirMixin, unittest.TestCase):
    def test_status_and_verify_read_the_folder_alone_and_every_command_says_one_thing(self):
        """A sessions run whose transcripts moved: status and verify refused although they need only the folder,
        plan --out suggested running the examples, and a changed transcript was to be restored "from git"."""
        tmp = self.make_tmp()
        mine, out = tmp / "mine", tmp / "run"
        mine.mkdir()
        for name in ("2-support-refund.chat.json", "5-support-plan.chat.json"):
            shutil.copy(REPO / "tasks" / "sessions" / "logs" / name, mine)
        with FakeOllama(models=[MODEL]) as server:
            code, _, err = run_main(["run", "--study", "sessions", "--sessions", str(mine), "--models", MODEL,
                                     "--host", server.url, "--out", str(out), *FAST])
            self.assertEqual(code, 0, err)
            sent = server.chat_count()
            resume = ["--study", "sessions", "--sessions", str(mine), "--models", MODEL, "--host", server.url,
                      "--out", str(out), *FAST]
            for change in ("moved", "changed"):
                with self.subTest(change):
                    if change == "moved":
                        mine.rename(tmp / "elsewhere")
                        said = f"{out} was run on the sessions it read, {mine}, which is not there any more"
                    else:
                        (tmp / "elsewhere").rename(mine)
                        edited = mine / "5-support-plan.chat.json"
                        edited.write_text(edited.read_text().replace("plan", "plans", 1))
                        said = f"{out} was run on the sessions it read, {mine}, which changed since"
                    code, status, err = run_main(["status", "--out", str(out)])
                    self.assertEqual(code, 0, err)
                    self.assertIn("10 complete, 0 left", status)
                    self.assertIn(f"note: {said}", status)
                    code, verified, err = run_main(["verify", "--out", str(out)])
                    self.assertEqual(code, 0, err)
                    self.assertIn("verify: ok, 10 complete cells", verified)
                    for argv in (["plan", "--out", str(out)], ["score", "--out", str(out)], ["gate", str(out)],
                                 [*resume]):
                        code, _, err = run_main(argv)
                        self.assertEqual(code, 2, err)
                        self.assertEqual(len(err.strip().splitlines()), 1, err)
                        self.assertIn(said, err)
                        self.assertIn("put them back as they were to score, resume, gate or merge the run (status "
                                      "and verify read the folder alone)", err)
                        self.assertNotIn("git", err)
                        self.assertNotIn("example", err)
            self.assertEqual(server.chat_count(), sent)            # nothing was sent again
        # an altered record is still found from the folder alone, against the plan the cell recorded
        log = next((out / "raw").glob("*_R2.jsonl"))
        log.write_text(log.read_text().replace('"response": "', '"response": "x', 1))
        code, verified, _ = run_main(["verify", "--out", str(out)])
        self.assertEqual(code, 1)
        self.assertIn("records altered since the cell completed", verified)


class PlanWindowTest(TempDirMixin, unittest.TestCase):
    def test_plan_flags_a_regime_whose_calls_cannot_fit_the_window(self):
        """plan printed millions of input tokens for a regime whose prompts cannot fit the window, with no word: at a
        2048-token budget, a compaction's previous state and its output cap alone take the 4096-token window."""
        tmp = self.make_tmp()
        code, printed, err = run_main(["plan", "--models", MODEL, "--budgets", "256,2048", "--out", str(tmp / "new")])
        self.assertEqual(code, 0, err)
        warnings = [line for line in printed.splitlines() if line.startswith("warning:")]
        self.assertEqual([w.split(": ")[1] for w in warnings], [f"{MODEL} R1 b2048", f"{MODEL} R2 b2048"])
        self.assertIn("cannot fit the context window the run gives every call (--context-window; Ollama's num_ctx)", warnings[0])
        self.assertIn(", 4096 tokens (prompt estimate plus output cap; the largest needs about 4", warnings[0])
        code, printed, err = run_main(["plan", "--models", MODEL, "--out", str(tmp / "new")])    # the default fits
        self.assertEqual(code, 0, err)
        self.assertNotIn("warning:", printed)

    def test_plan_of_a_run_folder_checks_the_window_its_server_reported(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            self.assertEqual(run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out),
                                       "--episodes", "1", *FAST])[0], 0)
        manifest = json.loads((out / "manifest.json").read_text())
        manifest["lock"]["models"][MODEL]["server_context_window"] = 1200
        (out / "manifest.json").write_text(json.dumps(manifest))
        code, printed, err = run_main(["plan", "--out", str(out)])
        self.assertEqual(code, 0, err)
        self.assertIn(f"warning: {MODEL} R0: 8 of its 8 calls cannot fit the context window its server reported, "
                      f"1200 tokens", printed)
        self.assertNotIn(f"{MODEL} R1:", printed)


if __name__ == "__main__":
    unittest.main()
