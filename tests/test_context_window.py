"""The context window every call is given (--context-window; launch.context_window_of, backends.check_context_window,
records.Settings): sent to Ollama as num_ctx, recorded in the run's lock only when it is not the pinned 4,096 (so the
locks and hashes of other runs stay as they were), refused on resume when changed, and checked before any call
against the window an OpenAI-compatible server reports."""
import json
import unittest

from fake_servers import FakeOllama, FakeOpenAI
from helpers import FAST, TempDirMixin, run_main
from pilot.backends import check_context_window
from pilot.cli import build_parser
from pilot.launch import context_window_of
from pilot.records import NUM_CTX, PilotError

MODEL = "gemma3:4b"


class ContextWindowTest(TempDirMixin, unittest.TestCase):
    def run_xr001(self, server, out, *extra: str) -> tuple[int, str, str]:
        return run_main(["run", "--models", MODEL, "--episodes", "1", "--regimes", "R1", "--out", str(out),
                         *extra, *FAST])

    def test_ollama_gets_the_window_on_every_call_and_a_resume_keeps_it(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            code, _, err = self.run_xr001(server, out, "--host", server.url, "--context-window", "16384")
            self.assertEqual(code, 0, err)
            self.assertEqual({b["options"]["num_ctx"] for b in server.chat_requests}, {16384})
            lock = json.loads((out / "manifest.json").read_text())["lock"]
            self.assertEqual((lock["context_window"], lock["options"]["answer"]["num_ctx"]), (16384, 16384))
            code, _, err = self.run_xr001(server, out, "--host", server.url)
        self.assertEqual(code, 2)
        self.assertIn("context_window (16384 -> 4096)", err)

    def test_the_pinned_window_leaves_the_lock_as_it_was(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            code, _, err = self.run_xr001(server, out, "--host", server.url)
            self.assertEqual(code, 0, err)
            self.assertEqual({b["options"]["num_ctx"] for b in server.chat_requests}, {NUM_CTX})
        self.assertNotIn("context_window", json.loads((out / "manifest.json").read_text())["lock"])

    def test_a_window_the_openai_compatible_server_does_not_serve_is_refused_before_any_call(self):
        out = self.make_tmp() / "run"
        with FakeOpenAI(models=[MODEL]) as server:
            server.context_window = 8192
            code, _, err = self.run_xr001(server, out, "--backend", "openai", "--base-url", server.url,
                                          "--context-window", "32768")
            self.assertEqual(server.chat_count(), 0)
        self.assertEqual(code, 2)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn(f"serves '{MODEL}' with a 8,192-token context window, smaller than --context-window 32,768; "
                      f"start it with a larger one", err)
        self.assertFalse(out.exists())

    def test_what_the_server_reports_is_read_as_a_warning_where_nothing_was_asked(self):
        info = {"m": {"server_context_window": 2048, "trained_context_length": None}}
        self.assertIn("smaller than the 4,096 the prompts were planned for", check_context_window(info, 4096, False)[0])
        with self.assertRaises(PilotError):
            check_context_window(info, 4096, True)
        self.assertEqual(check_context_window({"m": {"server_context_window": 8192}}, 4096, True), [])
        self.assertIn("beyond it", check_context_window({"m": {"trained_context_length": 8192}}, 32768, True)[0])
        self.assertIn("does not say", check_context_window({"m": {"server_context_window": None}}, 32768, True)[0])

    def test_one_source_for_every_command(self):
        self.assertEqual(context_window_of(build_parser("plan").parse_args(["--context-window", "65536"])), 65536)
        plain = build_parser("run").parse_args([])
        self.assertEqual(context_window_of(plain), NUM_CTX)
        self.assertEqual(context_window_of(plain, {"context_window": 32768}), 32768)     # as the run was locked
        for bad in ("100", "99999999", "lots"):
            code, _, err = run_main(["plan", "--context-window", bad, "--models", MODEL])
            self.assertEqual(code, 2, bad)
            self.assertIn("--context-window", err)
            self.assertEqual(len(err.strip().splitlines()), 1, err)


if __name__ == "__main__":
    unittest.main()
