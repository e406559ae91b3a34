"""Beyond one laptop: the OpenAI-compatible backend, concurrency, shards and merge, progress, plan."""
import io
import json
import os
import threading
import time
import unittest
from pathlib import Path
from unittest import mock

from fake_servers import FakeOllama, FakeOpenAI
from helpers import FAST, TempDirMixin, run_main
from pilot import backends, cells as run_cells, cli, records, runfolder, runner, transport
from pilot.progress import Progress
from pilot.studies.xr001 import design as xr001

MODEL = "smollm2:135m"
SECRET = "sk-test-SECRET-0123456789"


def all_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


class OpenAIBackendTest(TempDirMixin, unittest.TestCase):
    def run_openai(self, server, base_url, *extra, episodes="1", env=None):
        out = self.make_tmp() / "run"
        with mock.patch.dict(os.environ, env or {}, clear=False):
            code, stdout, err = run_main(["--backend", "openai", "--base-url", base_url, "--models", MODEL,
                                          "--out", str(out), "--episodes", episodes, *FAST, *extra])
        return code, out, stdout, err

    def test_full_run_with_key_and_every_base_url_form(self):
        for suffix in ("", "/", "/v1", "/v1/"):
            with self.subTest(base_url_suffix=suffix):
                with FakeOpenAI(models=[MODEL]) as server:
                    server.api_key = SECRET
                    code, out, stdout, err = self.run_openai(server, server.url + suffix,
                                                             env={"OPENAI_API_KEY": SECRET})
                    self.assertEqual(code, 0, err)
                    paths = {p for method, p, _ in server.requests if method == "POST"}
                    self.assertEqual(paths, {"/v1/chat/completions"})
                    headers = [h for method, _, h in server.requests if method == "POST"]
                    self.assertTrue(all(h.get("Authorization") == f"Bearer {SECRET}" for h in headers))
                body = server.chat_requests[0]
                self.assertNotIn(SECRET.encode(), all_bytes(out))
                self.assertNotIn(SECRET, stdout + err)
                bodies = server.chat_requests
                self.assertTrue(all(b["max_tokens"] == b["max_completion_tokens"] for b in bodies))
                self.assertEqual({b["max_tokens"] for b in bodies}, {256, 192})
                self.assertEqual((body["temperature"], body["seed"]), (0.0, 77001))
                self.assertEqual(body["chat_template_kwargs"], {"enable_thinking": False})
                self.assertEqual(body["reasoning_effort"], "none")
                lock = json.loads((out / "manifest.json").read_text())["lock"]
                self.assertEqual(lock["backend"], "openai")
                self.assertEqual(lock["base_url"], server.url)
                info = lock["models"][MODEL]
                self.assertEqual(info["server"]["build_info"], "b9999-fake")
                self.assertEqual(info["server_context_window"], 4096)
                self.assertIn("smoke run: 1 of the 15", (out / "analysis.md").read_text())

    def test_key_from_a_named_variable_and_credentials_in_the_url_are_never_written(self):
        with FakeOpenAI(models=[MODEL]) as server:
            server.api_key = SECRET
            url = server.url.replace("http://", f"http://user:{SECRET}@")
            code, out, stdout, err = self.run_openai(server, url, "--api-key-env", "MY_KEY",
                                                     env={"MY_KEY": SECRET})
        self.assertEqual(code, 0, err)
        self.assertNotIn(SECRET.encode(), all_bytes(out))
        self.assertNotIn(SECRET, stdout + err)

    def test_wrong_key_is_one_clear_line(self):
        with FakeOpenAI(models=[MODEL]) as server:
            server.api_key = SECRET
            code, out, _, err = self.run_openai(server, server.url, env={"OPENAI_API_KEY": "sk-wrong-key-42"})
        self.assertEqual(code, 2)
        self.assertIn("HTTP 401 Invalid API Key", err)
        self.assertNotIn("sk-wrong-key-42", err)
        self.assertEqual(len(err.strip().splitlines()), 1)
        self.assertFalse(out.exists())

    def test_unknown_model_and_no_server(self):
        with FakeOpenAI(models=["other:1b"]) as server:
            code, _, _, err = self.run_openai(server, server.url)
        self.assertEqual(code, 2)
        self.assertIn("other:1b", err)
        self.assertIn(f"-a {MODEL}", err)
        code, _, _, err = self.run_openai(None, "http://127.0.0.1:9")
        self.assertEqual(code, 2)
        self.assertIn("no model server answers at http://127.0.0.1:9", err)

    def test_missing_base_url(self):
        with mock.patch.dict(os.environ, {"OPENAI_BASE_URL": ""}):
            code, _, err = run_main(["--backend", "openai", "--models", MODEL, "--out", str(self.make_tmp() / "r")])
        self.assertEqual(code, 2)
        self.assertIn("--base-url", err)

    def test_error_shapes_become_one_line(self):
        shapes = {
            "vLLM nested": ({"error": {"message": "bad thing", "type": "BadRequestError", "code": 400}}, "bad thing"),
            "old vLLM flat": ({"object": "error", "message": "flat thing", "code": 400}, "flat thing"),
            "Ollama string": ({"error": "plain thing"}, "plain thing"),
        }
        for label, (payload, text) in shapes.items():
            with self.subTest(label):
                with FakeOpenAI(models=[MODEL]) as server:
                    server.faults = [("status", 400, payload)]
                    code, out, _, err = self.run_openai(server, server.url)
                self.assertEqual(code, 3)
                reason = json.loads((out / "manifest.json").read_text())["cells"][f"{MODEL}|R0|0"]["reason"]
                self.assertIn(f"HTTP 400 {text}", reason)

    def test_context_overflow_length_missing_usage_and_reasoning(self):
        with FakeOpenAI(models=[MODEL]) as server:
            server.context_window = 1100       # R0's transcript no longer fits; compaction prompts do
            server.omit_usage = True
            server.reasoning_field = "reasoning_content"
            code, out, _, err = self.run_openai(server, server.url)
        self.assertEqual(code, 3)
        cell = json.loads((out / "manifest.json").read_text())["cells"][f"{MODEL}|R0|0"]
        self.assertIn("context", cell["reason"])
        record = json.loads((out / "raw" / "smollm2_135m_R1.jsonl").read_text().splitlines()[0])
        self.assertIsNone(record["eval_count"])
        self.assertEqual(record["thinking"], "thinking about it")
        with FakeOpenAI(models=[MODEL], behaviour={"prose_padding": 300}) as server:
            server.reasoning_field = "reasoning"
            code, out, _, err = self.run_openai(server, server.url)
        self.assertEqual(code, 0, err)
        record = json.loads((out / "raw" / "smollm2_135m_R1.jsonl").read_text().splitlines()[0])
        self.assertEqual(record["done_reason"], "length")
        self.assertEqual(record["thinking"], "thinking about it")
        self.assertIn(f"| {MODEL} | R1 | 4/4 |", (out / "analysis.md").read_text())

    def test_another_model_behind_the_same_id_is_refused_on_resume(self):
        out = self.make_tmp() / "run"
        with FakeOpenAI(models=[MODEL]) as server:
            server.flavour = "vllm"
            server.context_window = 8192
            args = ["run", "--backend", "openai", "--base-url", server.url, "--models", MODEL, "--out", str(out),
                    "--episodes", "1", *FAST]
            self.assertEqual(run_main(args)[0], 0)
            manifest = json.loads((out / "manifest.json").read_text())
            del manifest["cells"][f"{MODEL}|R2|0"]
            (out / "manifest.json").write_text(json.dumps(manifest))
            server.context_window = 32768        # redeployed with another max_model_len
            code, _, err = run_main(args)
        self.assertEqual(code, 2)
        self.assertIn(f"model {MODEL} as the server describes it", err)

    def test_azure_retry_after_ms(self):
        with FakeOpenAI(models=[MODEL]) as server:
            server.faults = [("status", 429, {"error": {"message": "rate limited"}}, {"retry-after-ms": "400"})]
            started = time.monotonic()
            code, _, _, err = self.run_openai(server, server.url)
            self.assertEqual(code, 0, err)
            self.assertGreaterEqual(time.monotonic() - started, 0.4)

    def test_a_prompt_that_surely_cannot_fit_is_never_sent(self):
        with FakeOpenAI(models=[MODEL]) as server:
            server.context_window = 700
            code, out, _, err = self.run_openai(server, server.url)
            r0_sent = [b for b in server.chat_requests if "full transcript" in b["messages"][0]["content"]]
        self.assertEqual(code, 3)
        self.assertEqual(r0_sent, [])
        reason = json.loads((out / "manifest.json").read_text())["cells"][f"{MODEL}|R0|0"]["reason"]
        self.assertIn("cannot fit the server's 700-token context window", reason)

    def test_vllm_flavour_and_no_thinking_control(self):
        with FakeOpenAI(models=[MODEL]) as server:
            server.flavour = "vllm"
            server.context_window = 8192
            code, out, _, err = self.run_openai(server, server.url, "--thinking-control", "none")
            body = server.chat_requests[0]
        self.assertEqual(code, 0, err)
        self.assertNotIn("chat_template_kwargs", body)
        self.assertNotIn("reasoning_effort", body)
        info = json.loads((out / "manifest.json").read_text())["lock"]["models"][MODEL]
        self.assertEqual(info["server"]["version"], "0.17.1")
        self.assertEqual(info["server_context_window"], 8192)


class ConcurrencyTest(TempDirMixin, unittest.TestCase):
    def test_results_identical_for_concurrency_one_and_four(self):
        banks = {}
        with FakeOllama(models=["a:1", "b:2"], behaviour={"prose_keep_last": 7}, latency_s=0.002) as server:
            for n in (1, 4):
                out = self.make_tmp() / f"c{n}"
                code, _, err = run_main(["--models", "a:1,b:2", "--host", server.url, "--out", str(out), "--episodes",
                                         "4", "--concurrency", str(n), *FAST])
                self.assertEqual(code, 0, err)
                banks[n] = json.loads((out / "results.json").read_text())
                for path in (out / "raw").glob("*.jsonl"):
                    for line in path.read_text().splitlines():
                        json.loads(line)
                manifest = json.loads((out / "manifest.json").read_text())
                self.assertEqual(manifest["concurrency_used"], [n])
                self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)
        self.assertEqual(banks[1], banks[4])

    def test_call_slots_bound_the_calls_and_give_a_freed_slot_to_the_earliest_cell(self):
        # a waiting call's priority is its cell's place in the schedule, then a compaction before an answer
        # (runner.call_priority): the lowest goes first, whatever the order they came in
        slots = transport.CallSlots(1)
        order = []
        slots.acquire((0, False))

        def take(name, priority):
            slots.acquire(priority)
            order.append(name)
            slots.release()

        waiting = [("later cell's compaction", (5, False)), ("earlier cell's answer", (2, True)),
                   ("earlier cell's compaction", (2, False)), ("later cell's answer", (5, True))]
        threads = [threading.Thread(target=take, args=item) for item in waiting]
        for thread in threads:
            thread.start()
            time.sleep(0.03)
        self.assertEqual(order, [])                  # the one slot is taken: all four wait
        slots.release()
        for thread in threads:
            thread.join(5)
        self.assertEqual(order, ["earlier cell's compaction", "earlier cell's answer", "later cell's compaction",
                                 "later cell's answer"])
        self.assertEqual(slots.free, 1)

    def test_a_freed_slot_writes_the_waiting_calls_request_from_the_thread_that_freed_it(self):
        # the next request goes out without waiting for its own thread to wake; what writing it raised is raised in
        # the waiting call's thread, which then holds the slot until it gives it back
        slots = transport.CallSlots(1)
        slots.acquire()
        written, raised = [], []

        def waiting_call(fail):
            def send():
                written.append(threading.current_thread().name)
                if fail:
                    raise ConnectionRefusedError("refused")
            try:
                slots.acquire(0, send)
            except ConnectionRefusedError as err:
                raised.append(str(err))
            slots.release()

        first = threading.Thread(target=waiting_call, args=(False,), name="first")
        second = threading.Thread(target=waiting_call, args=(True,), name="second")
        first.start()
        time.sleep(0.05)
        second.start()
        time.sleep(0.05)
        self.assertEqual(written, [])
        slots.release()                              # from the main thread: it writes the first call's request
        first.join(5)
        second.join(5)
        self.assertEqual(written, ["MainThread", "first"])
        self.assertEqual(raised, ["refused"])
        self.assertEqual(slots.free, 1)

    def test_cells_end_without_waiting_for_a_manifest_rewrite_each(self):
        # the manifest is rewritten by a thread of its own, at most every MANIFEST_REWRITE_INTERVAL_S (here a
        # minute, longer than the run): six cells' ends cost no rewrite on a cell's thread and at most two in all
        # (the first end, then the last rewrite when the cells are done), which holds them all
        out = self.make_tmp() / "run"
        writers = []
        write_atomic = runfolder.write_atomic

        def counted(path, data):
            if path.name == "manifest.json":
                writers.append(threading.current_thread().name)
            return write_atomic(path, data)

        with FakeOllama(models=["m:1"]) as server, mock.patch.object(runfolder, "write_atomic", counted), \
                mock.patch.object(runner, "MANIFEST_REWRITE_INTERVAL_S", 60):
            code, _, err = run_main(["run", "--models", "m:1", "--host", server.url, "--out", str(out),
                                     "--episodes", "2", "--concurrency", "2", *FAST])
        self.assertEqual(code, 0, err)
        self.assertEqual([w for w in writers if w.startswith(("cell", "answer"))], [])
        self.assertLessEqual(writers.count("manifest"), 2)
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertEqual(sorted(c["status"] for c in manifest["cells"].values()), ["COMPLETE"] * 6)
        self.assertEqual(manifest["connections"][0]["connections"], transport.KEPT_ALIVE)

    def test_a_one_episode_run_fans_its_answers_out_over_every_slot(self):
        with FakeOllama(models=["a:1"], latency_s=0.03) as server:
            out = self.make_tmp() / "fan"
            code, _, err = run_main(["run", "--models", "a:1", "--host", server.url, "--out", str(out), "--episodes",
                                     "1", "--concurrency", "4", *FAST])
            self.assertEqual(code, 0, err)
            self.assertEqual(server.max_in_flight, 4)              # every slot used, never more
            self.assertGreaterEqual(server.max_answers_in_flight, 3)
            one = self.make_tmp() / "one"
            self.assertEqual(run_main(["run", "--models", "a:1", "--host", server.url, "--out", str(one),
                                       "--episodes", "1", *FAST])[0], 0)
        self.assertEqual(run_main(["score", "--out", str(out)])[0], 0)
        self.assertEqual(run_main(["score", "--out", str(one)])[0], 0)
        self.assertEqual(json.loads((out / "results.json").read_text())["probes"],
                         json.loads((one / "results.json").read_text())["probes"])

    def test_compactions_stay_in_order_and_a_failed_answer_fails_its_cell(self):
        with FakeOllama(models=["a:1"], latency_s=0.005) as server:
            server.faults = [("delay", 0)] * 14 + [("status", 400, {"error": "bad answer request"})]
            out = self.make_tmp() / "run"
            code, _, err = run_main(["run", "--models", "a:1", "--host", server.url, "--out", str(out), "--episodes",
                                     "2", "--concurrency", "4", *FAST])
            self.assertEqual(code, 3, err)
            manifest = json.loads((out / "manifest.json").read_text())
            self.assertEqual(sum(c["status"] == "FAILED" for c in manifest["cells"].values()), 1)
            for path in (out / "raw").glob("*.jsonl"):
                by_episode: dict = {}
                for line in path.read_text().splitlines():
                    record = json.loads(line)
                    by_episode.setdefault(record["episode"], []).append(record["kind"])
                for kinds in by_episode.values():
                    compactions = [k for k in kinds if k.startswith("compact_")]
                    self.assertEqual(compactions, sorted(compactions))
                    if any(k.startswith("question_") for k in kinds) and compactions:
                        self.assertEqual(kinds[:4], ["compact_1", "compact_2", "compact_3", "compact_4"])
            code, _, err = run_main(["--models", "a:1", "--host", server.url, "--out", str(out), "--episodes", "2",
                                     "--concurrency", "4", *FAST])
            self.assertEqual(code, 0, err)

    def test_help_warns_about_batching(self):
        self.assertIn("batches parallel requests can change outputs",
                      " ".join(cli.build_parser("pilot").format_help().split()))


class KeptAliveConnectionTest(TempDirMixin, unittest.TestCase):
    def test_a_run_reuses_its_connections(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=["m:1"]) as server:
            code, _, err = run_main(["--models", "m:1", "--host", server.url, "--out", str(out), "--episodes", "2",
                                     "--concurrency", "2", *FAST])
            self.assertEqual(code, 0, err)
            calls = server.chat_count()
            self.assertEqual(calls, 2 * 32)
            # one connection per call in flight, not one per call (the checks before the run add a few)
            self.assertLessEqual(server.httpd.connections_opened, 8)

    def test_a_connection_the_server_closed_while_idle_is_replaced(self):
        with FakeOllama(models=["m:1"]) as server:
            client = transport.HttpClient(server.url, 2, 10)
            self.assertIn("models", client.request("GET", "/api/tags"))
            server.httpd.drop_connections()          # as a server does after its keep-alive timeout
            time.sleep(0.05)
            self.assertIn("models", client.request("GET", "/api/tags"))
            self.assertEqual(server.httpd.connections_opened, 2)
            client.close()

    def test_a_proxy_from_the_environment_is_named_when_it_fails(self):
        with mock.patch.dict(os.environ, {"http_proxy": "http://127.0.0.1:1", "no_proxy": ""}):
            client = transport.HttpClient("http://127.0.0.1:9", 2, 5)
            with self.assertRaises(records.TransientError) as caught:
                client.request("GET", "/api/tags")
        self.assertIn("through the proxy http://127.0.0.1:1", str(caught.exception))
        self.assertIn("no_proxy", str(caught.exception))

    def test_ollama_addresses_keep_credentials_and_ipv6_brackets(self):
        self.assertEqual(backends.normalize_ollama_url("http://u:p@127.0.0.1:5"), "http://u:p@127.0.0.1:5")
        self.assertEqual(backends.normalize_ollama_url("http://[::1]:5"), "http://[::1]:5")
        self.assertEqual(backends.normalize_ollama_url("https://example.com"), "https://example.com:443")
        self.assertEqual(backends.normalize_ollama_url("0.0.0.0"), "http://localhost:11434")

    def test_a_server_that_is_gone_is_still_reported_as_unreachable(self):
        server = FakeOllama(models=["m:1"])
        with server:
            client = transport.HttpClient(server.url, 2, 10)
            client.request("GET", "/api/tags")
        with self.assertRaises(records.TransientError) as caught:
            client.request("GET", "/api/tags")
        self.assertTrue(caught.exception.unreachable)
        self.assertIn("cannot connect", str(caught.exception))


class ShardTest(TempDirMixin, unittest.TestCase):
    def test_shards_are_disjoint_and_cover_every_cell(self):
        cells = run_cells.all_cells(["a", "b"], xr001.DEFAULT_REGIMES, 15)
        for n in (1, 2, 3, 7):
            with self.subTest(n=n):
                slices = [run_cells.shard_cells(cells, (i, n)) for i in range(1, n + 1)]
                flat = [c for s in slices for c in s]
                self.assertEqual(sorted(flat), sorted(cells))
                self.assertEqual(len(flat), len(set(flat)))

    def test_bad_shard_argument(self):
        code, _, err = run_main(["--shard", "3/2"])
        self.assertEqual(code, 2)
        self.assertIn("--shard takes I/N", err)

    def test_merge_equals_an_unsharded_run_and_refuses_mismatched_locks(self):
        root = self.make_tmp()
        with FakeOllama(models=["a:1"], behaviour={"prose_keep_last": 8}) as s1, \
                FakeOllama(models=["a:1"], behaviour={"prose_keep_last": 8}) as s2:
            common = ["--models", "a:1", "--episodes", "3", *FAST]
            self.assertEqual(run_main(["--host", s1.url, "--out", str(root / "whole"), *common])[0], 0)
            for i, server in ((1, s1), (2, s2)):
                command = ["run"] if i == 1 else []      # the plain pilot command works on a shard too
                code, stdout, err = run_main([*command, "--host", server.url, "--out", str(root / f"s{i}"), "--shard",
                                              f"{i}/2", *common])
                self.assertEqual(code, 0, err)
            self.assertIn("combine them with", stdout)
            self.assertEqual(s2.chat_count(), sum(run_cells.calls_per_cell(xr001.REGIMES[c.regime], 4, 8) for c in
                                                  run_cells.shard_cells(run_cells.all_cells(["a:1"], xr001.DEFAULT_REGIMES, 3), (2, 2))))
            code, stdout, _ = run_main(["status", "--out", str(root / "s2")])
            self.assertEqual(code, 0)
            self.assertIn("4 complete, 0 left", stdout)      # 9 cells: shard 2/2 holds cells 1, 3, 5, 7
            code, stdout, err = run_main(["merge", str(root / "merged"), str(root / "s1"), str(root / "s2")])
            self.assertEqual(code, 0, err)
            self.assertEqual(json.loads((root / "merged" / "results.json").read_text()),
                             json.loads((root / "whole" / "results.json").read_text()))
            self.assertTrue((root / "merged" / "report.html").exists())
            merged = json.loads((root / "merged" / "manifest.json").read_text())
            # what the shards recorded of their servers is kept: both addresses, and how each was reached
            self.assertEqual(merged["base_url_spellings"], [s1.url, s2.url])
            self.assertEqual([c["server"] for c in merged["connections"]], [s1.url, s2.url])
            code, _, err = run_main(["merge", str(root / "half"), str(root / "s1")])
            self.assertEqual(code, 3)
            # a shard made under other settings is refused
            with FakeOllama(models=["a:1"]) as s3:
                s3.digest_salt = "repulled"
                self.assertEqual(run_main(["run", "--host", s3.url, "--out", str(root / "s2b"), "--shard", "2/2",
                                           *common])[0], 0)
            code, _, err = run_main(["merge", str(root / "bad"), str(root / "s1"), str(root / "s2b")])
            self.assertEqual(code, 2)
            self.assertIn("digest", err)
            self.assertFalse((root / "bad" / "manifest.json").exists())


class ProgressAndPlanTest(TempDirMixin, unittest.TestCase):
    def test_progress_lines_on_a_non_terminal(self):
        stream = io.StringIO()
        progress = Progress(10, 100, 2, 20, stream=stream, interval_s=0)
        progress.update(calls=5)
        progress.update(cells=1, failed=1, force=True)
        lines = stream.getvalue().splitlines()
        self.assertEqual(len(lines), 2)
        # five replies in no time are no rate to extrapolate a run from (issue 21, 6): not shown yet; a
        # resumed run counts this session's work apart from the whole run's (issue 41, 11)
        self.assertEqual(lines[-1], "progress: cells 1/8 and calls 5/80 this session (whole run: cells 3/10), "
                                    "rate not yet measured, ETA unknown (measuring the rate: 5 replies so far), "
                                    "failed cells 1")
        self.assertNotIn("\r", stream.getvalue())

    def test_one_updating_line_on_a_terminal(self):
        class Terminal(io.StringIO):
            def isatty(self):
                return True

        stream = Terminal()
        progress = Progress(4, 40, 0, 0, stream=stream, interval_s=60)
        progress.update(calls=1)
        progress.update(calls=1)
        progress.update(cells=1, force=True)
        text = stream.getvalue()
        self.assertEqual(text.count("\r"), 3)                 # every update rewrites the same line
        self.assertEqual(text.count("\n"), 1)                 # and only the last one ends it
        self.assertIn("cells 1/4, calls 2/40", text.splitlines()[-1].split("\r")[-1])

    def test_progress_through_main_and_quiet(self):
        with FakeOllama(models=["a:1"]) as server:
            out = self.make_tmp() / "run"
            code, _, err = run_main(["run", "--models", "a:1", "--host", server.url, "--out", str(out), "--episodes",
                                     "1", "--progress-interval", "0"])
            self.assertEqual(code, 0)
            self.assertIn("progress: cells 3/3, calls 32/32", err)
            out = self.make_tmp() / "run2"
            code, _, err = run_main(["run", "--models", "a:1", "--host", server.url, "--out", str(out), "--episodes",
                                     "1", "--quiet"])
            self.assertNotIn("progress:", err)

    def test_plan_uses_the_measured_rate(self):
        with FakeOllama(models=["a:1"], latency_s=0.01) as server:
            out = self.make_tmp() / "run"
            self.assertEqual(run_main(["run", "--models", "a:1", "--host", server.url, "--out", str(out),
                                       "--episodes", "1", *FAST])[0], 0)
        code, stdout, _ = run_main(["plan", "--out", str(out), "--episodes", "1"])
        self.assertEqual(code, 0)
        self.assertIn("total: 32 calls (32 done)", stdout)
        self.assertIn("measured", stdout)


if __name__ == "__main__":
    unittest.main()
