"""The whole pipeline through main([...]) against an in-process Ollama over real sockets."""
import csv
import json
import os
import socket
import time
import unittest
from pathlib import Path
from unittest import mock

from fake_servers import FakeOllama
from helpers import FAST, TempDirMixin, run_main
from pilot import cli, launch, records
from pilot.studies.xr001 import design as xr001


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class FullPilotTest(TempDirMixin, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = FakeOllama(models=["gemma3:4b", "qwen3:14b"], thinking_models=["qwen3:14b"],
                                behaviour={"prose_keep_last": 7, "prose_shift": 0}).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def test_full_run_then_rerun_makes_no_calls(self):
        out = self.make_tmp() / "run"
        before = self.server.chat_count()
        code, stdout, _ = run_main(["--models", "gemma3:4b,qwen3:14b", "--host", self.server.url, "--out", str(out),
                                    *FAST])
        self.assertEqual(code, 0)
        self.assertEqual(self.server.chat_count() - before, 2 * 480)
        for name in ("manifest.json", "results.json", "analysis.md", "probes.csv", "raw/gemma3_4b_R0.jsonl",
                     "raw/gemma3_4b_R1.jsonl", "raw/gemma3_4b_R2.jsonl", "raw/qwen3_14b_R2.jsonl"):
            self.assertTrue((out / name).exists(), name)
        self.assertIn("- Prose summaries (R1) corrupted", stdout)
        self.assertIn(str(out / "analysis.md"), stdout)
        # it closes, as the demo does, with the report to open and the folder's status command, which works
        self.assertIn(f"\nOpen the report: {out / 'report.html'}\n", stdout)
        status = f"python3 scripts/run_pilot.py status {out}"
        self.assertTrue(stdout.rstrip().endswith(f"What its run folder holds, cell by cell: {status}"), stdout[-300:])
        self.assertEqual(run_main(status.split()[2:])[0], 0)

        # the artifact fields of the reference format
        manifest = json.loads((out / "manifest.json").read_text())
        for key in ("tasks", "tasks_sha256", "models", "regimes", "n_episodes", "cells"):
            self.assertIn(key, manifest)
        self.assertEqual(len(manifest["cells"]), 90)
        cell = manifest["cells"]["gemma3:4b|R1|0"]
        for key in ("model", "regime", "episode", "status", "n_calls", "reason", "updated_at"):
            self.assertIn(key, cell)
        self.assertEqual((cell["status"], cell["n_calls"]), ("COMPLETE", 12))
        self.assertEqual(manifest["lock"]["protocol_sha256"], records.file_sha256(xr001.PROTOCOL_PATH))
        self.assertEqual(manifest["lock"]["prompts_sha256"], xr001.prompts_sha256())
        self.assertEqual(manifest["lock"]["options"]["compaction"],
                         {"temperature": 0.0, "seed": 77001, "num_predict": 256, "num_ctx": 4096})
        self.assertEqual(manifest["lock"]["options"]["answer"]["num_predict"], 192)
        self.assertTrue(manifest["lock"]["models"]["qwen3:14b"]["think_false_sent"])
        self.assertFalse(manifest["lock"]["models"]["gemma3:4b"]["think_false_sent"])
        self.assertEqual(manifest["lock"]["models"]["gemma3:4b"]["server"]["version"], FakeOllama.version)

        lines = (out / "raw" / "gemma3_4b_R1.jsonl").read_text().splitlines()
        self.assertEqual(len(lines), 15 * 12)
        first = json.loads(lines[0])
        for key in ("kind", "messages", "response", "prompt_eval_count", "eval_count", "wall_s", "segment",
                    "model", "regime", "episode", "done_reason", "utc", "attempt", "request", "thinking"):
            self.assertIn(key, first)
        self.assertEqual(first["timings"]["total_duration"], 123456789)      # Ollama's durations, in ns
        self.assertEqual(first["kind"], "compact_1")
        self.assertEqual(first["request"]["options"]["num_predict"], 256)
        self.assertIs(first["request"]["truncate"], False)
        self.assertIs(first["request"]["stream"], False)
        question = json.loads(lines[4])
        self.assertEqual((question["kind"], question["question_id"]), ("question_1", 1))
        self.assertEqual(question["request"]["options"]["num_predict"], 192)
        # the cascade: compaction k sees the state written by compaction k-1
        second = json.loads(lines[1])
        self.assertIn(first["response"], second["messages"][0]["content"])

        results = json.loads((out / "results.json").read_text())
        self.assertEqual(results["cells"], {"complete": 90, "not_complete": 0, "expected": 90})
        self.assertEqual(len(results["probes"]), 720)
        self.assertEqual(len(results["compaction_stage"]), 60)
        self.assertEqual(results["compaction_tokens"]["R1"]["n"], 120)
        with open(out / "probes.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
        self.assertEqual(len(rows), 720)
        analysis = (out / "analysis.md").read_text()
        self.assertIn("CONFIRMATORY: every pre-registered probe is present exactly once (90 complete cells, 15 "
                      "episodes)", analysis)
        # prose keeps only 7 values (its compactions then spend 1.12 times the typed ones: a matched budget),
        # typed keeps all: R2 must beat R1
        self.assertIn("R2 better", analysis)

        # think:false exactly to the model that lists `thinking`
        bodies = [b for b in self.server.chat_requests if b["model"] == "qwen3:14b"]
        self.assertTrue(all(b.get("think") is False for b in bodies))
        bodies = [b for b in self.server.chat_requests if b["model"] == "gemma3:4b"]
        self.assertTrue(all("think" not in b for b in bodies))

        before = self.server.chat_count()
        code, stdout, err = run_main(["--models", "gemma3:4b,qwen3:14b", "--host", self.server.url,
                                      "--out", str(out), *FAST])
        self.assertEqual(code, 0)
        self.assertEqual(self.server.chat_count(), before)
        self.assertIn("- Prose summaries (R1) corrupted", stdout)

        code, out_text, _ = run_main(["status", "--out", str(out)])
        self.assertEqual(code, 0)
        self.assertIn("90 complete, 0 left", out_text)
        code, _, _ = run_main(["verify", "--out", str(out)])
        self.assertEqual(code, 0)

    def test_ollama_host_variable_and_bare_host_port(self):
        out = self.make_tmp() / "run"
        hostport = self.server.url.replace("http://", "")
        with mock.patch.dict(os.environ, {"OLLAMA_HOST": hostport}):
            code, _, err = run_main(["--models", "gemma3:4b", "--out", str(out), "--episodes", "1", *FAST])
        self.assertEqual(code, 0, err)
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertEqual(manifest["lock"]["base_url"], self.server.url)
        # a complete run of fewer than the 15 pre-registered episodes is a smoke run, never confirmatory
        analysis = (out / "analysis.md").read_text()
        self.assertIn("**NON-CONFIRMATORY**: smoke run: 1 of the 15 pre-registered episodes", analysis)
        self.assertIn("NON-CONFIRMATORY: smoke run",
                      (out / "figures" / "fig_a_corruption.svg").read_text())

    def test_stages_one_by_one(self):
        out = self.make_tmp() / "run"
        code, _, _ = run_main(["run", "--models", "gemma3:4b", "--host", self.server.url, "--out", str(out),
                               "--episodes", "2", *FAST])
        self.assertEqual(code, 0)
        self.assertFalse((out / "results.json").exists())
        self.assertEqual(run_main(["score", "--out", str(out)])[0], 0)
        self.assertTrue((out / "probes.csv").exists())
        code, stdout, _ = run_main(["analyze", "--out", str(out)])
        self.assertEqual(code, 0)
        self.assertIn("Numeric-corruption rate", stdout)

    def test_perturbed_values_are_classified_through_the_whole_pipeline(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=["m:1"], behaviour={"prose_shift": 1}) as server:
            code, _, err = run_main(["--models", "m:1", "--host", server.url, "--out", str(out), "--episodes", "2",
                                     *FAST])
        self.assertEqual(code, 0, err)
        results = json.loads((out / "results.json").read_text())
        r1 = {(p["episode"], p["question_id"]): p for p in results["probes"] if p["regime"] == "R1"}
        # Prose writes every value it reads one too high, so the drift compounds along the cascade: a value
        # from segment k has been re-encoded 5 - k times by the final state. Stated sums are copied as read.
        drift = {1: 4, 2: 3, 3: 2, 4: 4, 5: 1, 6: 0, 7: 3 + 1, 8: 4 + 2}
        for (episode, qid), probe in sorted(r1.items()):
            with self.subTest(episode=episode, question=qid):
                self.assertEqual(probe["answer"], probe["truth"] + drift[qid])
        self.assertEqual({r1[(e, 5)]["class"] for e in range(2)}, {"off_by_one"})
        self.assertEqual({r1[(e, 6)]["class"] for e in range(2)}, {"correct"})
        self.assertTrue(all(p["class"] == "correct" for p in results["probes"] if p["regime"] != "R1"))
        self.assertIn("R2 better", (out / "analysis.md").read_text())

    def test_missing_token_counts_are_unknown_not_zero(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=["m:1"]) as server:
            server.omit_counts = True
            code, _, err = run_main(["--models", "m:1", "--host", server.url, "--out", str(out), "--episodes", "1",
                                     *FAST])
        self.assertEqual(code, 0, err)
        record = json.loads((out / "raw" / "m_1_R1.jsonl").read_text().splitlines()[0])
        self.assertIsNone(record["eval_count"])
        self.assertIsNone(record["prompt_eval_count"])
        results = json.loads((out / "results.json").read_text())
        self.assertEqual(results["compaction_tokens"]["R1"]["n"], 0)
        self.assertEqual(results["compaction_tokens"]["R1"]["unknown"], 4)
        self.assertIsNone(results["compaction_tokens"]["R1"]["mean"])
        self.assertIn("| R1 | 0 | n/a | 4 |", (out / "analysis.md").read_text())


class EdgeFailuresTest(TempDirMixin, unittest.TestCase):
    def test_no_server_fails_fast_with_a_clear_line_and_no_folder(self):
        out = self.make_tmp() / "run"
        url = f"http://127.0.0.1:{free_port()}"
        started = time.monotonic()
        code, _, err = run_main(["--models", "gemma3:4b", "--host", url, "--out", str(out)])
        self.assertLess(time.monotonic() - started, 2.0)
        self.assertEqual(code, 2)
        self.assertIn(url, err)
        self.assertIn("ollama serve", err)
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 2, err)       # where it looked and how to start a server; then the demo
        self.assertIn("python3 scripts/run_pilot.py demo", lines[1])
        self.assertFalse(out.exists())

    def test_unknown_model_lists_what_the_server_has(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=["gemma3:4b", "llama3.2:3b"]) as server:
            code, _, err = run_main(["--models", "qwen3:14b", "--host", server.url, "--out", str(out)])
            self.assertEqual(server.chat_count(), 0)
        self.assertEqual(code, 2)
        self.assertIn("qwen3:14b", err)
        self.assertIn("gemma3:4b, llama3.2:3b", err)
        self.assertIn("ollama pull qwen3:14b", err)
        self.assertFalse(out.exists())

    def test_models_are_required(self):
        code, _, err = run_main(["--out", str(self.make_tmp() / "x")])
        self.assertEqual(code, 2)
        self.assertIn("--models", err)

    def test_smaller_runs_get_their_own_folder(self):
        args = cli.build_parser("pilot").parse_args(["--episodes", "3"])
        self.assertEqual(launch.resolve_run_dir(args), records.RESULTS_ROOT / "xr001-e3")
        args = cli.build_parser("pilot").parse_args([])
        self.assertEqual(launch.resolve_run_dir(args), records.RESULTS_ROOT / "xr001")

    def test_too_many_episodes_is_refused(self):
        code, _, err = run_main(["--models", "m", "--episodes", "16", "--out", str(self.make_tmp() / "x")])
        self.assertEqual(code, 2)
        self.assertIn("--episodes must be between 1 and 15", err)

    def test_plan_needs_no_server(self):
        code, out, _ = run_main(["plan", "--models", "gemma3:4b,qwen3:14b", "--out", str(self.make_tmp() / "x")])
        self.assertEqual(code, 0)
        self.assertIn("total: 960 calls (0 done)", out)
        self.assertIn("characters / 4", out)

    def test_plan_goes_in_front_of_a_run_command_as_typed(self):
        """The server's options are accepted and not used (plan once refused them: `plan` put in front of a real
        run's command failed); --recheck is read."""
        out = self.make_tmp() / "x"
        run = ["--backend", "openai", "--base-url", "http://127.0.0.1:9", "--models", "smollm2:135m", "--episodes",
               "1", "--out", str(out), "--concurrency", "4", "--retries", "2", "--read-timeout", "30"]
        code, stdout, err = run_main(["plan", *run])
        self.assertEqual(code, 0, err)
        self.assertIn("total: 32 calls (0 done)", stdout)
        self.assertIn("(--recheck 8, the default;", stdout)
        code, stdout, err = run_main(["plan", *run, "--recheck", "3"])
        self.assertIn("(--recheck 3, as given;", stdout)
        code, stdout, err = run_main(["plan", *run, "--recheck", "0"])
        self.assertNotIn("determinism probe", stdout)
        self.assertFalse(out.exists())


if __name__ == "__main__":
    unittest.main()
