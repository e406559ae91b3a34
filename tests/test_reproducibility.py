"""Reproducibility on real servers: the prompt-cache setting, the server's prompt work, the determinism probe."""
import json
import unittest
from pathlib import Path

from fake_servers import FakeOllama, FakeOpenAI
from helpers import FAST, TempDirMixin, run_main
from pilot import recorded_run, runner

MODEL = "gemma3:4b"
NO_RECHECK = FAST                                      # FAST already says --recheck 0
WITH_RECHECK = [a for a in FAST if a not in ("--recheck", "0")]


def raw_records(out: Path) -> list[dict]:
    return [json.loads(line) for path in sorted((out / "raw").glob("*_R?.jsonl"))
            for line in path.read_text().splitlines()]


class PromptCacheTest(TempDirMixin, unittest.TestCase):
    def run_openai(self, server, out, *extra):
        return run_main(["run", "--backend", "openai", "--base-url", server.url, "--models", MODEL, "--out", str(out),
                         "--episodes", "1", *NO_RECHECK, *extra])

    def test_llama_cpp_gets_cache_prompt_false_by_default_and_it_is_locked_and_recorded(self):
        with FakeOpenAI(models=[MODEL]) as server:
            out = self.make_tmp() / "off"
            code, _, err = self.run_openai(server, out)
            self.assertEqual(code, 0, err)
            self.assertTrue(all(body["cache_prompt"] is False for body in server.chat_requests))
            lock = json.loads((out / "manifest.json").read_text())["lock"]
            self.assertEqual(lock["prompt_cache"], "off")
            self.assertIn("cache_prompt false", lock["prompt_cache_how"])
            self.assertIs(lock["options"]["answer"]["cache_prompt"], False)
            for record in raw_records(out):
                self.assertEqual(record["prompt_cache"], "off")
                self.assertIs(record["request"]["cache_prompt"], False)
                self.assertEqual(record["server_work"]["prompt_cached"], 0)
            # a resume under the other setting is refused, naming it
            manifest = json.loads((out / "manifest.json").read_text())
            del manifest["cells"][f"{MODEL}|R2|0"]
            (out / "manifest.json").write_text(json.dumps(manifest))
            code, _, err = self.run_openai(server, out, "--prompt-cache", "on")
            self.assertEqual(code, 2)
            self.assertIn("prompt_cache (off -> on)", err)

            on = self.make_tmp() / "on"
            before = server.chat_count()
            code, _, err = self.run_openai(server, on, "--prompt-cache", "on")
            self.assertEqual(code, 0, err)
            self.assertTrue(all(body["cache_prompt"] is True for body in server.chat_requests[before:]))
            self.assertEqual(json.loads((on / "manifest.json").read_text())["lock"]["prompt_cache"], "on")
            r0 = [r for r in raw_records(on) if r["regime"] == "R0"]
            # R0's eight questions share the transcript: with the cache on, the later ones reuse it
            self.assertGreater(sum(r["server_work"]["prompt_cached"] for r in r0), 0)
            self.assertIn("--prompt-cache on",
                          recorded_run.run_command_for(on, json.loads((on / "manifest.json")
                                                                      .read_text())))

    def test_ollama_cannot_turn_its_cache_off_and_says_so(self):
        with FakeOllama(models=[MODEL]) as server:
            out = self.make_tmp() / "run"
            code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out), "--episodes",
                                     "1", *NO_RECHECK, "--prompt-cache", "off"])
            self.assertEqual(code, 2)
            self.assertIn("Ollama always reuses its prompt cache", err)
            self.assertEqual(server.chat_count(), 0)
            code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out), "--episodes",
                                     "1", *NO_RECHECK])
            self.assertEqual(code, 0, err)
            lock = json.loads((out / "manifest.json").read_text())["lock"]
            self.assertEqual(lock["prompt_cache"], "on")
            self.assertIn("cannot turn it off", lock["prompt_cache_how"])
            self.assertNotIn("cache_prompt", server.chat_requests[0])

    def test_a_server_that_sets_it_itself_is_recorded_and_a_flag_refused(self):
        FakeOpenAI.flavour = "vllm"
        try:
            with FakeOpenAI(models=[MODEL]) as server:
                out = self.make_tmp() / "run"
                code, _, err = self.run_openai(server, out, "--prompt-cache", "off")
                self.assertEqual(code, 2)
                self.assertIn("--enable-prefix-caching", err)
                code, _, err = self.run_openai(server, out)
                self.assertEqual(code, 0, err)
                self.assertNotIn("cache_prompt", server.chat_requests[-1])
        finally:
            FakeOpenAI.flavour = "llama.cpp"
        self.assertEqual(json.loads((out / "manifest.json").read_text())["lock"]["prompt_cache"], "server")
        record = raw_records(out)[0]
        self.assertEqual(record["server_work"]["prompt_cached"], 16)
        self.assertEqual(record["server_work"]["prompt_evaluated"], record["prompt_eval_count"] - 16)


class ServerWorkTest(TempDirMixin, unittest.TestCase):
    def test_prompt_tokens_sent_and_evaluated_in_the_analysis_and_plan(self):
        with FakeOpenAI(models=[MODEL]) as server:
            out = self.make_tmp() / "run"
            code, _, err = run_main(["--backend", "openai", "--base-url", server.url, "--models", MODEL, "--out",
                                     str(out), "--episodes", "1", *NO_RECHECK, "--prompt-cache", "on"])
            self.assertEqual(code, 0, err)
        records = raw_records(out)
        sent = sum(r["server_work"]["prompt_tokens"] for r in records)
        evaluated = sum(r["server_work"]["prompt_evaluated"] for r in records)
        cached = sum(r["server_work"]["prompt_cached"] for r in records)
        self.assertEqual(sent, evaluated + cached)
        self.assertGreater(cached, 0)
        analysis = (out / "analysis.md").read_text()
        self.assertIn("## Server work: prompt tokens sent and evaluated", analysis)
        self.assertIn("Prompt cache: on (llama.cpp: cache_prompt true sent with every request)", analysis)
        results = json.loads((out / "results.json").read_text())
        r0 = [c for c in results["calls"] if c["regime"] == "R0"]
        row = f"| {MODEL} | R0 | 8 | {sum(c['prompt_eval_count'] for c in r0)} | " \
              f"{sum(c['prompt_evaluated'] for c in r0)} ({sum(c['prompt_cached'] for c in r0)} from the cache) |"
        self.assertIn(row, analysis)
        code, stdout, _ = run_main(["plan", "--out", str(out)])
        self.assertEqual(code, 0)
        self.assertIn(f"server work so far: {sent} prompt tokens sent, {evaluated} evaluated by the server "
                      f"({cached} reused from its prompt cache)", stdout)

    def test_ollama_says_nothing_about_its_cache(self):
        with FakeOllama(models=[MODEL]) as server:
            out = self.make_tmp() / "run"
            code, _, err = run_main(["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "1",
                                     *NO_RECHECK])
            self.assertEqual(code, 0, err)
        record = raw_records(out)[0]
        self.assertEqual(record["server_work"], {"prompt_tokens": record["prompt_eval_count"], "prompt_cached": None,
                                                 "prompt_evaluated": None})
        self.assertIn(f"| {MODEL} | R1 | 12 |", (out / "analysis.md").read_text())
        self.assertIn("not reported", (out / "analysis.md").read_text())


class RecheckTest(TempDirMixin, unittest.TestCase):
    def run_pilot(self, server, out, *extra):
        return run_main(["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "1",
                         *WITH_RECHECK, *extra])

    def test_a_deterministic_server_changes_nothing(self):
        with FakeOllama(models=[MODEL]) as server:
            out = self.make_tmp() / "run"
            code, _, err = self.run_pilot(server, out)
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), 32 + runner.DEFAULT_RECHECK)
        recheck = json.loads((out / "manifest.json").read_text())["recheck"]
        self.assertEqual((recheck["sent"], recheck["changed"], recheck["seed"]), (runner.DEFAULT_RECHECK, 0, runner.RECHECK_SEED))
        analysis = (out / "analysis.md").read_text()
        self.assertIn(f"Changed: 0 of {runner.DEFAULT_RECHECK}.", analysis)
        self.assertNotIn("Determinism probe: ", analysis.split("## ")[0])

    def test_changed_replies_are_kept_beside_the_old_counted_and_named_beside_the_verdict(self):
        with FakeOllama(models=[MODEL]) as server:
            server.vary_repeats = 1                   # one re-sent call gets another reply
            out = self.make_tmp() / "run"
            code, stdout, err = self.run_pilot(server, out, "--recheck", "5")
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), 32 + 5)
            self.assertEqual(server.duplicate_chats(), 5)        # the same requests, byte for byte
            logs_before = {p.name: p.read_bytes() for p in (out / "raw").glob("*_R?.jsonl")}
            items = [json.loads(line) for line in (out / "raw" / "recheck.jsonl").read_text().splitlines()]
            self.assertEqual(len(items), 5)
            changed = [i for i in items if i["changed"]]
            self.assertEqual(len(changed), 1)
            self.assertEqual(changed[0]["response"], changed[0]["first_response"] + " (said differently this time)")
            first = {(r["episode"], r["regime"], r["kind"]): r["response"] for r in raw_records(out)}
            self.assertEqual(first[(changed[0]["episode"], changed[0]["regime"], changed[0]["kind"])],
                             changed[0]["first_response"])       # the journalled reply is never replaced
            recheck = json.loads((out / "manifest.json").read_text())["recheck"]
            self.assertEqual((recheck["sent"], recheck["changed"]), (5, 1))
            analysis = (out / "analysis.md").read_text()
            head = analysis[:analysis.index("\n|")]               # the label and the answer, before any table
            self.assertIn("**NON-CONFIRMATORY**", head)          # the label is computed as before
            self.assertIn("Determinism probe: 1 of 5 re-sent calls gave a different reply", head)
            self.assertIn("Determinism probe: 1 of 5 re-sent calls", stdout)
            self.assertIn("Changed: 1 of 5.", analysis)
            # running again sends nothing: the cells and the probe are done
            code, _, err = self.run_pilot(server, out, "--recheck", "5")
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), 32 + 5)
            self.assertEqual({p.name: p.read_bytes() for p in (out / "raw").glob("*_R?.jsonl")}, logs_before)
            self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)

    def test_a_probe_refused_by_the_server_leaves_the_run_complete_and_is_tried_again(self):
        with FakeOllama(models=[MODEL]) as server:
            server.faults = [("delay", 0)] * 32 + [("status", 400, {"error": "no more"})]
            out = self.make_tmp() / "run"
            code, _, err = self.run_pilot(server, out, "--recheck", "2")
            self.assertEqual(code, 0, err)
            self.assertIn("the determinism probe stopped", err)
            self.assertNotIn("recheck", json.loads((out / "manifest.json").read_text()))
            code, _, err = self.run_pilot(server, out, "--recheck", "2")
            self.assertEqual(code, 0, err)
        self.assertEqual(json.loads((out / "manifest.json").read_text())["recheck"]["sent"], 2)

    def test_the_probe_is_sent_at_the_runs_concurrency(self):
        # before, its calls went one at a time whatever --concurrency said: 8 calls at a real model's 5 to 20 s
        with FakeOllama(models=[MODEL], latency_s=0.05) as server:
            out = self.make_tmp() / "run"
            code, _, err = self.run_pilot(server, out, "--recheck", "0", "--concurrency", "4")
            self.assertEqual(code, 0, err)
            server.max_in_flight = 0
            code, _, err = self.run_pilot(server, out, "--recheck", "8", "--concurrency", "4")
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), 32 + 8)
            self.assertEqual(server.max_in_flight, 4)                # the probe's calls alone, never more than N
        recheck = json.loads((out / "manifest.json").read_text())["recheck"]
        self.assertEqual((recheck["sent"], recheck["changed"]), (8, 0))
        chosen = [(i["cell"], i["kind"]) for i in recheck["items"]]
        one = self.make_tmp() / "one"                                # the same calls, in the same order, at N = 1
        with FakeOllama(models=[MODEL]) as server:
            self.assertEqual(self.run_pilot(server, one, "--recheck", "8")[0], 0)
        self.assertEqual([(i["cell"], i["kind"]) for i in json.loads((one / "manifest.json").read_text())["recheck"]
                          ["items"]], chosen)

    def test_a_probe_cut_short_is_finished_on_resume(self):
        with FakeOllama(models=[MODEL]) as server:
            out = self.make_tmp() / "run"
            code, _, err = self.run_pilot(server, out, "--recheck", "0")
            self.assertEqual(code, 0, err)
            code, _, err = self.run_pilot(server, out, "--recheck", "3")
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), 32 + 3)
        self.assertEqual(json.loads((out / "manifest.json").read_text())["recheck"]["sent"], 3)


if __name__ == "__main__":
    unittest.main()
