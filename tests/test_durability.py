"""Never lose a call: kills, signals, locks, refusals, damaged files and server faults."""
import json
import os
import random
import signal
import subprocess
import time
import unittest
from unittest import mock
from pathlib import Path

from fake_servers import FakeOllama
from helpers import (FAST, REPO, TempDirMixin, kill_after, kill_at_call, repo_copy, run_main, run_script,
    runner_command)
from pilot import runfolder

MODEL = "gemma3:4b"
EPISODES = ["--episodes", "3"]
CALLS_3_EPISODES = 3 * (8 + 2 * 12)     # each episode's R0, R1 and R2 cells: 96 calls


def results_without_paths(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text())


class KillAndResumeTest(TempDirMixin, unittest.TestCase):
    """SIGKILL at several points; the resumed bank equals an uninterrupted one."""

    @classmethod
    def setUpClass(cls):
        cls.server = FakeOllama(models=[MODEL], behaviour={"prose_keep_last": 8}).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def reference(self) -> dict:
        if not hasattr(type(self), "_reference"):
            out = self.make_tmp() / "ref"
            code, _, err = run_main(["--models", MODEL, "--host", self.server.url, "--out", str(out), *EPISODES,
                                     *FAST])
            self.assertEqual(code, 0, err)
            type(self)._reference = results_without_paths(out)
        return type(self)._reference

    def runner(self, out: Path, extra=()) -> list[str]:
        return runner_command("run", "--models", MODEL, "--host", self.server.url, "--out", str(out), *EPISODES,
                              *FAST, *extra)

    # For the signals a user sends (Ctrl-C, SIGTERM), which the runner answers; kill -9 goes through the helpers.
    def start_runner(self, out: Path) -> subprocess.Popen:
        return subprocess.Popen(self.runner(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def hold(self, number: int):
        self.server.held.clear()
        self.server.release.clear()
        self.server.hold_at = self.server.chat_count() + number

    def unhold(self):
        self.server.release.set()
        self.server.hold_at = None

    def resume_and_compare(self, out: Path, sent_before: int, max_repeats: int):
        code, _, err = run_main(["--models", MODEL, "--host", self.server.url, "--out", str(out), *EPISODES, *FAST])
        self.assertEqual(code, 0, err)
        sent = self.server.chat_requests[sent_before:]
        self.assertLessEqual(len(sent), CALLS_3_EPISODES + max_repeats)
        self.assertGreaterEqual(len(sent), CALLS_3_EPISODES)
        keys = [json.dumps(b, sort_keys=True) for b in sent]
        self.assertLessEqual(len(keys) - len(set(keys)), max_repeats)
        self.assertEqual(results_without_paths(out), self.reference())
        self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)

    def test_sigkill_inside_cascade_between_cells_and_late(self):
        reference = self.reference()
        self.assertTrue(reference["probes"])
        # the cells run episode by episode (R0, R1, R2 of episode 0, then of episode 1, ...), 32 calls each
        for label, number in (("inside an R1 cascade", 11), ("first call of the next cell", 21),
                              ("inside R2 of the last episode, after earlier episodes", 86)):
            with self.subTest(label):
                out = self.make_tmp() / "run"
                sent_before = self.server.chat_count()
                kill_at_call(self, self.server, number, self.runner(out))
                lines = sum(len(p.read_text().splitlines()) for p in (out / "raw").glob("*.jsonl"))
                self.assertEqual(lines, number - 1)
                self.resume_and_compare(out, sent_before, max_repeats=1)

    def test_sigkill_at_random_moments_then_resume(self):
        self.reference()
        rng = random.Random(5)
        out = self.make_tmp() / "run"
        sent_before = self.server.chat_count()
        self.server.latency_s = 0.003
        try:
            for _ in range(3):
                kill_after(self.runner(out), rng.uniform(0.15, 0.35))
        finally:
            self.server.latency_s = 0.0
        self.resume_and_compare(out, sent_before, max_repeats=3)

    def test_sigkill_while_answers_fan_out_resends_exactly_the_calls_in_flight(self):
        """At --concurrency 4, a kill leaves some calls sent and not yet written (at most N awaiting the server,
        and the few whose replies were being written); the resume sends exactly those again, nothing else."""
        self.reference()
        self.server.latency_s = 0.01
        try:
            for kill_after_s in (0.4, 0.8):
                with self.subTest(kill_after_s=kill_after_s):
                    out = self.make_tmp() / "run"
                    before = self.server.chat_count()
                    kill_after(self.runner(out, ["--concurrency", "4"]), kill_after_s)
                    time.sleep(0.3)                  # the server takes whatever the dead runner had sent
                    killed_at = self.server.chat_count()
                    received = [json.dumps(b, sort_keys=True) for b in self.server.chat_requests[before:killed_at]]
                    journalled = sum(1 for p in (out / "raw").glob("*.jsonl")
                                     for line in p.read_bytes().splitlines(True) if line.endswith(b"\n"))
                    in_flight = len(received) - journalled
                    self.assertLessEqual(in_flight, 3 * 4)
                    code, _, err = run_main(["--models", MODEL, "--host", self.server.url, "--out", str(out),
                                             *EPISODES, *FAST, "--concurrency", "4"])
                    self.assertEqual(code, 0, err)
                    again = [json.dumps(b, sort_keys=True) for b in self.server.chat_requests[killed_at:]]
                    self.assertEqual(len(again), CALLS_3_EPISODES - journalled)
                    self.assertEqual(sum(1 for key in again if key in set(received)), in_flight)
                    self.assertEqual(results_without_paths(out), self.reference())
                    self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)
        finally:
            self.server.latency_s = 0.0

    def test_leftover_temporary_manifest_from_a_kill_during_replace(self):
        out = self.make_tmp() / "run"
        sent_before = self.server.chat_count()
        kill_at_call(self, self.server, 40, self.runner(out))
        # what a kill between write and rename leaves: a torn temporary beside an intact manifest
        (out / ".manifest.json.tmp-99999-1").write_text('{"cells": {"trunc')
        json.loads((out / "manifest.json").read_text())
        self.resume_and_compare(out, sent_before, max_repeats=1)

    def test_sigterm_finishes_the_call_in_flight_and_exits_130(self):
        out = self.make_tmp() / "run"
        sent_before = self.server.chat_count()
        self.hold(30)
        proc = self.start_runner(out)
        self.assertTrue(self.server.held.wait(30))
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        self.unhold()
        _, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 130, err)
        self.assertIn(f"Resume with: python3 {REPO / 'scripts' / 'run_pilot.py'} run --models {MODEL} --host", err)
        lines = sum(len(p.read_text().splitlines()) for p in (out / "raw").glob("*.jsonl"))
        self.assertEqual(lines, 30)          # the call in flight finished and was written
        json.loads((out / "manifest.json").read_text())
        self.resume_and_compare(out, sent_before, max_repeats=0)

    def test_second_ctrl_c_drops_the_call_in_flight(self):
        out = self.make_tmp() / "run"
        self.hold(5)
        proc = self.start_runner(out)
        self.assertTrue(self.server.held.wait(30))
        proc.send_signal(signal.SIGINT)
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=10)
        finally:
            self.unhold()
        self.assertEqual(proc.returncode, 130, err)
        self.assertIn("resume with", err.lower())


class LockTest(TempDirMixin, unittest.TestCase):
    def test_second_runner_is_refused_and_stale_lock_is_ignored(self):
        out = self.make_tmp() / "run"
        out.mkdir()
        with FakeOllama(models=[MODEL]) as server:
            holder = runfolder.RunLock(out)
            holder.acquire()
            try:
                code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out),
                                         "--episodes", "1", *FAST])
            finally:
                holder.release()
            self.assertEqual(code, 2)
            self.assertIn(f"process {os.getpid()}", err)
            self.assertEqual(server.chat_count(), 0)
            (out / ".lock").write_text("999999")   # left by a dead process: no flock is held
            code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out),
                                     "--episodes", "1", *FAST])
            self.assertEqual(code, 0, err)


class RefusalTest(TempDirMixin, unittest.TestCase):
    """A resume under different tasks, protocol, prompts, options, digest or code is refused."""

    def setUp(self):
        self.repo = repo_copy(self.make_tmp())
        self.out = self.repo / "results" / "run"
        self.server = FakeOllama(models=[MODEL]).__enter__()
        self.addCleanup(self.server.__exit__, None, None, None)
        self.first = run_script(self.repo, ["run", "--models", MODEL, "--host", self.server.url, "--out",
                                            str(self.out), "--episodes", "1", *FAST])
        self.assertEqual(self.first.returncode, 0, self.first.stderr)
        # leave one cell unfinished so that a resume has work to do
        manifest = json.loads((self.out / "manifest.json").read_text())
        del manifest["cells"][f"{MODEL}|R2|0"]
        (self.out / "manifest.json").write_text(json.dumps(manifest))

    def resume(self, *extra):
        return run_script(self.repo, ["run", "--models", MODEL, "--host", self.server.url, "--out", str(self.out),
                                      "--episodes", "1", *FAST, *extra])

    def edit(self, relative: str, old: str, new: str):
        path = self.repo / relative
        text = path.read_text()
        self.assertIn(old, text)
        path.write_text(text.replace(old, new, 1))

    def test_changed_protocol(self):
        self.edit("protocol/PROTOCOL.md", "## 1. Question", "## 1. The question")
        proc = self.resume()
        self.assertEqual(proc.returncode, 2)
        self.assertIn("protocol_sha256", proc.stderr)
        self.assertIn("--out", proc.stderr)

    def test_changed_prompts(self):
        self.edit("scripts/pilot/prompts.py", "lost for good", "gone for good")
        proc = self.resume("--allow-code-change")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("prompts_sha256", proc.stderr)

    def test_changed_options(self):
        self.edit("scripts/pilot/records.py", "NUM_CTX = 4096", "NUM_CTX = 8192")
        proc = self.resume("--allow-code-change")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("options", proc.stderr)

    def test_changed_runner_needs_allow_code_change_and_is_recorded(self):
        before = self.code_hash()
        self.edit("scripts/pilot/runfolder.py", "# The folder lock takes the best tool",
                  "# The folder lock (edited) takes the best tool")
        proc = self.resume()
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--allow-code-change", proc.stderr)
        proc = self.resume("--allow-code-change")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        amendment = json.loads((self.out / "manifest.json").read_text())["amendments"][-1]
        self.assertEqual(amendment["from_runner_sha256"], before)
        self.assertEqual(amendment["to_runner_sha256"], self.code_hash())

    def code_hash(self) -> str:
        """The code hash of the copy's runner: its entry point and package."""
        with mock.patch.object(runfolder, "SCRIPTS_DIR", self.repo / "scripts"):
            return runfolder.runner_sha256()

    def test_new_server_version_is_recorded_as_an_amendment(self):
        FakeOllama.version, old = "0.13.0", FakeOllama.version
        try:
            proc = self.resume()
        finally:
            FakeOllama.version = old
        self.assertEqual(proc.returncode, 0, proc.stderr)
        amendment = json.loads((self.out / "manifest.json").read_text())["amendments"][-1]
        self.assertEqual(amendment["what"], f"server version for {MODEL} changed")
        self.assertEqual((amendment["from"]["version"], amendment["to"]["version"]), (old, "0.13.0"))

    def test_repulled_model_is_refused(self):
        self.server.digest_salt = "new"
        proc = self.resume()
        self.assertEqual(proc.returncode, 2)
        self.assertIn(f"model {MODEL} digest", proc.stderr)

    def test_changed_tasks_file(self):
        tasks = self.repo / "tasks" / "other.json"
        self.assertEqual(run_script(self.repo, ["generate", "--tasks", str(tasks), "--episodes", "2"]).returncode, 0)
        proc = self.resume("--tasks", str(tasks))
        self.assertEqual(proc.returncode, 2)
        self.assertIn("is not the task set", proc.stderr)

    def test_tampered_tasks_file(self):
        self.edit("tasks/tasks.json", '"value": ', '"value":  ')
        proc = self.resume()
        self.assertEqual(proc.returncode, 2)
        self.assertIn("is not the pre-registered task set", proc.stderr)
        self.assertIn("git checkout -- tasks/tasks.json", proc.stderr)

    def test_crlf_checkout_changes_no_hash(self):
        for relative in ("protocol/PROTOCOL.md", "tasks/tasks.json", "scripts/run_pilot.py"):
            path = self.repo / relative
            path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
        proc = self.resume()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads((self.out / "manifest.json").read_text())["amendments"], [])

    def test_unreadable_manifest_halts_and_changes_nothing(self):
        path = self.out / "manifest.json"
        path.write_text('{"cells": ')
        raw_before = {p.name: p.read_bytes() for p in (self.out / "raw").iterdir()}
        proc = self.resume()
        self.assertEqual(proc.returncode, 2)
        self.assertIn("manifest.json is not valid JSON", proc.stderr)
        self.assertIn("nothing was changed", proc.stderr)
        self.assertEqual(path.read_text(), '{"cells": ')
        self.assertEqual({p.name: p.read_bytes() for p in (self.out / "raw").iterdir()}, raw_before)
        self.assertEqual(self.server.chat_count(), 32)


class DamagedLogTest(TempDirMixin, unittest.TestCase):
    def test_torn_last_line_is_quarantined_and_not_scored(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            kill_at_call(self, server, 18, runner_command("run", "--models", MODEL, "--host", server.url, "--out",
                                                          str(out), "--episodes", "2", *FAST))
            raw = out / "raw" / "gemma3_4b_R1.jsonl"
            with open(raw, "ab") as fh:
                fh.write(b'{"kind": "compact_2", "model": "gemma3:4b", "regi')
            code, _, err = run_main(["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "2",
                                     *FAST])
        self.assertEqual(code, 0, err)
        self.assertIn("unreadable line(s) (line", err)
        quarantine = out / "raw" / "gemma3_4b_R1.jsonl.quarantine"
        self.assertIn(b'"regi', quarantine.read_bytes())
        for line in raw.read_text().splitlines():
            json.loads(line)
        self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)


class VerifyTest(TempDirMixin, unittest.TestCase):
    def setUp(self):
        self.out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(self.out),
                                     "--episodes", "2", *FAST])
        self.assertEqual(code, 0, err)
        self.raw = self.out / "raw" / "gemma3_4b_R2.jsonl"
        self.lines = self.raw.read_text().splitlines(keepends=True)

    def verify(self):
        return run_main(["verify", "--out", str(self.out)])

    def test_clean_run_verifies(self):
        self.assertEqual(self.verify()[0], 0)

    def test_altered_record(self):
        record = json.loads(self.lines[3])
        record["response"] = record["response"].replace("=", "==", 1)
        self.raw.write_text("".join(self.lines[:3] + [json.dumps(record) + "\n"] + self.lines[4:]))
        code, out, _ = self.verify()
        self.assertEqual(code, 1)
        self.assertIn("records altered", out)

    def test_duplicated_record(self):
        self.raw.write_text("".join(self.lines + [self.lines[5]]))
        code, out, _ = self.verify()
        self.assertEqual(code, 1)
        self.assertIn("recorded 2 times", out)
        # a repeated call is scored once: the bank is the same as before the duplicate
        self.assertEqual(run_main(["score", "--out", str(self.out)])[0], 0)
        results = json.loads((self.out / "results.json").read_text())
        self.assertEqual(len(results["probes"]), 3 * 2 * 8)
        self.assertEqual(results["compaction_tokens"]["R2"]["n"], 2 * 4)

    def test_missing_record(self):
        self.raw.write_text("".join(self.lines[:5] + self.lines[6:]))
        code, out, _ = self.verify()
        self.assertEqual(code, 1)
        self.assertIn("missing", out)
        code, _, err = run_main(["score", "--out", str(self.out)])
        self.assertEqual(code, 1)
        self.assertIn("marked COMPLETE but its log lacks", err)

    def test_extra_record(self):
        record = json.loads(self.lines[0])
        record["episode"] = 7
        self.raw.write_text("".join(self.lines + [json.dumps(record) + "\n"]))
        code, out, _ = self.verify()
        self.assertEqual(code, 1)
        self.assertIn("extra record", out)


class ServerFaultTest(TempDirMixin, unittest.TestCase):
    def run_one(self, server, *extra, episodes="1"):
        out = self.make_tmp() / "run"
        code, stdout, err = run_main(["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes",
                                      episodes, *FAST, *extra])
        return code, out, err

    def test_transient_faults_are_retried(self):
        faults = {
            "connection reset": ("reset",),
            "HTTP 503 busy": ("status", 503, {"error": "server busy, please try again.  maximum pending requests exceeded"}),
            "HTTP 500": ("status", 500, {"error": "model runner has unexpectedly stopped"}),
            "HTTP 502 with JSON inside the error string": ("status", 502, {"error": '{"error":{"message":"upstream"}}'}),
            "malformed JSON": ("malformed",),
            "body without message": ("no_message",),
            "empty content": ("empty",),
            # content that is not text (the hostile review: a list, a number, an object ended in a traceback)
            "content a list": ("text", ["x"]),
            "content a number": ("text", 5),
            "content an object": ("text", {"text": "x"}),
        }
        for label, fault in faults.items():
            with self.subTest(label):
                with FakeOllama(models=[MODEL]) as server:
                    server.faults = [fault, fault]
                    code, out, err = self.run_one(server)
                    self.assertEqual(code, 0, err)
                    self.assertEqual(server.chat_count(), 32 + 2)
                first = json.loads((out / "raw" / "gemma3_4b_R0.jsonl").read_text().splitlines()[0])
                self.assertEqual(first["attempt"], 3)

    def test_retry_after_is_honoured(self):
        for status in (429, 503):
            with self.subTest(status=status), FakeOllama(models=[MODEL]) as server:
                server.faults = [("status", status, {"error": "slow down"}, {"Retry-After": "0.6"})]
                started = time.monotonic()
                code, _, err = self.run_one(server)
                self.assertEqual(code, 0, err)
                self.assertGreaterEqual(time.monotonic() - started, 0.6)

    def test_a_cell_failed_mid_cascade_adds_nothing_to_scores_or_token_means(self):
        with FakeOllama(models=[MODEL]) as server:
            # episode 0: R0's 8 calls and 2 of R1's compactions succeed, then R1's third compaction keeps failing;
            # R2 and episode 1 complete
            server.faults = [("delay", 0)] * 10 + [("status", 503, {"error": "busy"})] * 4
            code, out, err = self.run_one(server, episodes="2")
        self.assertEqual(code, 3)
        self.assertEqual(len([line for line in (out / "raw" / "gemma3_4b_R1.jsonl").read_text().splitlines()
                              if json.loads(line)["episode"] == 0]), 2)
        # the bank pairs complete episodes only: episode 0's complete R0 and R2 cells wait for its R1
        results = json.loads((out / "results.json").read_text())
        self.assertEqual({(p["regime"], p["episode"]) for p in results["probes"]}, {("R0", 1), ("R1", 1), ("R2", 1)})
        self.assertEqual(results["partial"], {"episodes_complete": 1, "episodes": 2, "cells_left_out": 2})
        self.assertEqual(results["compaction_tokens"]["R1"]["n"], 4)
        self.assertEqual(results["compaction_tokens"]["R2"]["n"], 4)
        self.assertEqual({(s["regime"], s["episode"]) for s in results["compaction_stage"]}, {("R1", 1), ("R2", 1)})
        self.assertIn("the 1 of 2 episodes complete in every model and regime; 2 complete cells of unfinished "
                      "episodes wait for them", err)

    def test_read_timeout_is_retried_and_connect_timeout_does_not_cancel_a_slow_load(self):
        with FakeOllama(models=[MODEL]) as server:
            server.faults = [("delay", 1.0)]
            code, out, err = self.run_one(server, "--read-timeout", "0.3")
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), 33)
        with FakeOllama(models=[MODEL]) as server:
            server.faults = [("delay", 0.6)]       # a model load: slower than the connect timeout
            code, out, err = self.run_one(server, "--connect-timeout", "0.2", "--read-timeout", "5")
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), 32)

    def test_exhausted_retries_fail_the_cell_and_the_rest_goes_on(self):
        with FakeOllama(models=[MODEL]) as server:
            server.faults = [("status", 503, {"error": "busy"})] * 4     # 1 try + 3 retries
            code, out, err = self.run_one(server)
            self.assertEqual(code, 3)
            manifest = json.loads((out / "manifest.json").read_text())
            failed = [k for k, c in manifest["cells"].items() if c["status"] == "FAILED"]
            self.assertEqual(failed, [f"{MODEL}|R0|0"])
            self.assertIn("gave up after 4 attempts", manifest["cells"][failed[0]]["reason"])
            self.assertIn("HTTP 503 busy", manifest["cells"][failed[0]]["reason"])
            self.assertEqual(sum(c["status"] == "COMPLETE" for c in manifest["cells"].values()), 2)
            self.assertIn("--allow-partial", err)
            self.assertFalse((out / "analysis.md").exists())
            results = json.loads((out / "results.json").read_text())
            self.assertEqual(results["probes"], [])          # the one episode waits for its R0 cell
            self.assertEqual(results["partial"], {"episodes_complete": 0, "episodes": 1, "cells_left_out": 2})
            before = server.chat_count()
            code, status_out, _ = run_main(["status", "--out", str(out)])
            self.assertEqual(code, 0)
            self.assertIn(f"FAILED {MODEL}|R0|0: gave up after 4 attempts", status_out)
            self.assertIn("2 complete, 1 left", status_out)
            code, _, err = run_main(["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "1",
                                     *FAST])
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count() - before, 8)     # only the failed R0 cell

    def test_bad_request_stops_at_once_with_the_server_message(self):
        with FakeOllama(models=[MODEL]) as server:
            server.faults = [("status", 400, {"error": "invalid options: temperature"})]
            code, out, err = self.run_one(server)
            self.assertEqual(code, 3)
            self.assertEqual(server.chat_count(), 1 + 12 + 12)   # no retry of the 400
        reason = json.loads((out / "manifest.json").read_text())["cells"][f"{MODEL}|R0|0"]["reason"]
        self.assertIn("HTTP 400 invalid options: temperature", reason)

    def test_unknown_model_mid_run_stops_the_run(self):
        with FakeOllama(models=[MODEL]) as server:
            server.faults = [("status", 404, {"error": f"model '{MODEL}' not found"})]
            code, out, err = self.run_one(server)
            self.assertEqual(code, 2)
            self.assertIn("not found", err)
            self.assertEqual(server.chat_count(), 1)

    def test_server_gone_then_back(self):
        with FakeOllama(models=[MODEL]) as server:
            port = server.httpd.server_address[1]
            server.faults = [("delay", 0)] * 10 + [("shutdown",)]
            code, out, err = self.run_one(server, "--give-up-after", "0.5")
        self.assertEqual(code, 3)
        self.assertIn("has not answered for", err)
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertEqual([c["status"] for c in manifest["cells"].values()], ["COMPLETE"])   # nothing FAILED
        with FakeOllama(models=[MODEL], port=port) as server:
            code, _, err = run_main(["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "1",
                                     *FAST])
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), 32 - 10)


class GuardsTest(TempDirMixin, unittest.TestCase):
    def test_caps_thinking_and_context_are_reported(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL], behaviour={"prose_padding": 300, "answer_prefix": "word " * 200}) as server:
            server.leak_thinking = True
            code, _, err = run_main(["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "1",
                                     *FAST])
        self.assertEqual(code, 0, err)
        analysis = (out / "analysis.md").read_text()
        self.assertIn(f"| {MODEL} | R1 | 4/4 | 8/8 |", analysis)
        self.assertIn(f"| {MODEL} | R2 | 0/4 | 8/8 |", analysis)
        self.assertIn("returned thinking text although thinking was turned off: 32", analysis)
        self.assertIn("R0 transcript size", analysis)

    def test_prompt_too_long_for_the_context_is_an_error_not_a_cut(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            server.prompt_chars_per_token = 0.9     # R0's transcript no longer fits in num_ctx 4096
            code, _, err = run_main(["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "1",
                                     *FAST])
        self.assertEqual(code, 3)
        cell = json.loads((out / "manifest.json").read_text())["cells"][f"{MODEL}|R0|0"]
        self.assertEqual(cell["status"], "FAILED")
        self.assertIn("exceeds the context length", cell["reason"])


class HostileNamesTest(TempDirMixin, unittest.TestCase):
    def test_model_names_never_write_outside_the_run_folder(self):
        root = self.make_tmp()
        out = root / "inner" / "run"
        names = ["../x", "a/b:c", "m" * 300, "modèle:ü", "..", "/etc/passwd"]
        with FakeOllama(models=names) as server:
            code, _, err = run_main(["run", "--models", ",".join(names), "--host", server.url, "--out", str(out),
                                     "--episodes", "1", *FAST])
        self.assertEqual(code, 0, err)
        outside = [p for p in root.rglob("*") if out not in p.parents and p != out and p not in out.parents]
        self.assertEqual(outside, [])
        raw_files = list((out / "raw").iterdir())
        self.assertEqual(len(raw_files), len(names) * 3)
        for path in raw_files:
            self.assertLessEqual(len(path.name), 120)
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertEqual(sum(c["status"] == "COMPLETE" for c in manifest["cells"].values()), len(names) * 3)
        self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)


if __name__ == "__main__":
    unittest.main()
