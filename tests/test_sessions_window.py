"""Long sessions at their real length (scripts/pilot/studies/sessions.py and sessions_segments.py, the runner's
--context-window in launch.py, backends.py and runner.py): segments cut by estimated tokens to fit the window, plan
saying what fits and which window a session needs, the window in the study's own options (it decides the cut), the
agent's own compaction points as checkpoints, the size checks made before the ground truth, and the run's console
naming a file its reader largely did not understand. The option itself: tests/test_context_window.py."""
import contextlib
import io
import json
import unittest
from pathlib import Path
from unittest import mock

from fake_servers import FakeOllama
from helpers import FAST, REPO, TempDirMixin, run_main
from pilot.studies.sessions import design as ss, segments as segs

FIXTURES = REPO / "tests" / "fixtures" / "sessions"


def long_session(turns: int, words: int = 500) -> list[dict]:
    """A chat session of `turns` turns of about 3,000 characters each after the first."""
    return [{"role": "user", "content": "Start the migration of ledger LS-2290."}] + [
        {"role": "assistant" if i % 2 else "user", "content": f"Part {i}: " + "words " * words}
        for i in range(1, turns)]


class WindowTest(TempDirMixin, unittest.TestCase):
    def setUp(self):
        self.tmp = self.make_tmp()
        self.path = self.tmp / "long.json"
        self.path.write_text(json.dumps(long_session(120)))        # about 360,000 characters

    def plan(self, *extra: str) -> tuple[int, str, str]:
        return run_main(["plan", "--study", "sessions", "--sessions", str(self.path), "--models", "m", *extra])

    def test_a_long_session_with_a_large_window_makes_a_few_segments_not_dozens(self):
        code, out, err = self.plan()
        self.assertEqual(code, 0, err)
        self.assertIn("120 turns in 119 segments", out)     # two turns of 3,000 characters no longer leave room
        self.assertIn("cut into 119 segments, not 4, so that each fits the 4,096-token window", out)
        code, out, err = self.plan("--context-window", "131072")
        self.assertEqual(code, 0, err)
        self.assertIn("120 turns in 4 segments", out)
        self.assertIn("131,072-token context window", out)
        self.assertIn("the whole session in one segment would need", out)
        code, out, err = self.plan("--context-window", "131072", "--segments", "2")
        self.assertEqual(code, 0, err)
        self.assertIn("120 turns in 2 segments", out)

    def test_the_window_a_session_needs_is_named_when_none_up_to_the_most_segments_fits(self):
        self.path.write_text(json.dumps(long_session(240)))
        code, out, err = self.plan()
        self.assertEqual(code, 2)
        self.assertEqual(out, "")
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertRegex(err, r"long\.json: its [\d,]+ estimated tokens do not fit the 4,096-token window "
                              r"\(--context-window\) in 200 segments or fewer; give a window of at least [\d,]+ tokens")
        needed = int(err.split("at least ")[1].split(" tokens")[0].replace(",", ""))
        code, out, err = self.plan("--context-window", str(needed))
        self.assertEqual(code, 0, err)

    def test_segments_fit_by_estimated_tokens_and_the_cut_is_the_fewest_that_fits(self):
        room = ss.call_room([])
        self.assertEqual(room.segment_cap(room.window_for(1000)), 1000)
        sizes = [3002] * 10
        starts = segs.even_cut(sizes, 4, 6000, 200)
        self.assertEqual(starts, list(range(10)))                                 # two turns are 6,002 characters
        self.assertEqual(segs.even_cut(sizes, 4, 9100, 200), [0, 2, 5, 7])          # at least 4; each under 9,100
        self.assertIsNone(segs.even_cut(sizes, 1, 2000, 200))                      # one turn alone is too long
        self.assertEqual(segs.agent_cut(sizes, [3, 7], 12100, 200), [0, 3, 7])      # where the agent compacted
        self.assertEqual(segs.agent_cut(sizes, [3, 7], 9100, 200), [0, 3, 5, 7])    # a part too long is cut again
        self.assertEqual(segs.agent_cut(sizes, [3, 7], 6500, 200), [0, 1, 3, 5, 7, 8])

    def test_the_checkpoints_can_follow_the_agents_own_compactions(self):
        path = FIXTURES / "claude-code" / "cc-ledger-lossy.jsonl"
        _, tasks = ss.read_sessions(path, checkpoints="agent")
        (episode,) = tasks["episodes"]
        self.assertEqual([c["after_turn"] for c in episode["compactions"]], [14, 24])
        self.assertEqual([seg["turns"] for seg in episode["segments"]], [[0, 14], [14, 24], [24, 30]])
        self.assertEqual([c["segment"] for c in episode["compactions"]], [1, 2])
        self.assertEqual(episode["window"]["how"], "agent")
        code, out, err = run_main(["plan", "--study", "sessions", "--sessions", str(path), "--checkpoints", "agent",
                                   "--models", "m"])
        self.assertEqual(code, 0, err)
        self.assertIn("30 turns in 3 segments", out)
        self.assertIn("segments end where the agent compacted", out)
        self.assertIn("the agent compacted 2 time(s) (after turn 14 (auto), 158,730 tokens before; after turn 24 "
                      "(manual), 96,214 tokens before)", out)
        _, tasks = ss.read_sessions(FIXTURES / "responses-api" / "responses-refund.json", checkpoints="agent")
        self.assertEqual(tasks["episodes"][0]["window"]["how"], "even")           # no compaction recorded: even

    def test_sizes_are_checked_before_any_ground_truth_is_taken(self):
        self.path.write_text(json.dumps(long_session(240)))
        with mock.patch.object(ss, "ground_truth", side_effect=AssertionError("ground truth taken")):
            with self.assertRaisesRegex(ss.TaskSetError, "do not fit the 4,096-token window"):
                ss.read_sessions_now(self.path, [(self.path, "long.json")], {}, 4, None, 4096, "even")


    def test_large_inputs_show_a_progress_line_while_they_are_read(self):
        for k in range(3):
            (self.tmp / f"s{k}.json").write_text(json.dumps(long_session(8)))
        self.path.unlink()
        err = io.StringIO()
        with mock.patch.object(ss, "PROGRESS_BYTES", 1), mock.patch.object(ss, "PROGRESS_EVERY_S", 0), \
                contextlib.redirect_stderr(err):
            ss.read_sessions(self.tmp)
        lines = err.getvalue().splitlines()
        self.assertTrue(lines[0].startswith("sessions: reading 0.1 MiB of sessions before any call"), lines)
        self.assertIn("sessions: ground truth of s2.json (3 of 3)", err.getvalue())
        self.assertTrue(lines[-1].startswith("sessions: 3 session(s) read in"), lines)
        err = io.StringIO()
        ss.READ_MEMO.clear()
        with contextlib.redirect_stderr(err):
            ss.read_sessions(self.tmp)                 # small inputs: no progress line
        self.assertEqual(err.getvalue(), "")


class WindowRunTest(TempDirMixin, unittest.TestCase):
    def setUp(self):
        self.tmp = self.make_tmp()
        self.logs = self.tmp / "logs"
        self.logs.mkdir()
        (self.logs / "long.json").write_text(json.dumps(long_session(30)))

    def test_the_window_decides_the_cut_so_it_is_one_of_the_studys_options(self):
        out = self.tmp / "run"
        command = ["run", "--study", "sessions", "--sessions", str(self.logs), "--regimes", "R2,K2", "--models", "m",
                   "--out", str(out), *FAST]
        with FakeOllama(models=["m"]) as server:
            code, _, err = run_main([*command, "--context-window", "32768", "--host", server.url])
            self.assertEqual(code, 0, err)
            self.assertEqual({b["options"]["num_ctx"] for b in server.chat_requests}, {32768})
            lock = json.loads((out / "manifest.json").read_text())["lock"]
            self.assertEqual(lock["context_window"], 32768)
            self.assertEqual(lock["study_options"], {"context_window": 32768})
            self.assertEqual(lock["options"]["compaction"]["num_ctx"], 32768)
            code, _, err = run_main([*command, "--host", server.url])          # resumed without it
        self.assertEqual(code, 2)
        self.assertIn("context_window", err)

    def test_the_run_console_names_a_file_the_reader_largely_did_not_understand(self):
        noisy = [{"type": "user", "message": {"role": "user", "content": "Deploy build 3f9a2c1d to prod."}},
                 {"type": "assistant", "message": {"role": "assistant", "content": "Deploying."}}] + \
            [{"type": "brand-new-kind", "payload": {"n": i}} for i in range(8)]
        (self.logs / "noisy.jsonl").write_text("\n".join(json.dumps(line) for line in noisy) + "\n")
        with FakeOllama(models=["m"]) as server:
            code, _, err = run_main(["run", "--study", "sessions", "--sessions", str(self.logs), "--regimes", "K1",
                                     "--models", "m", "--host", server.url, "--out", str(self.tmp / "run"), *FAST])
        self.assertEqual(code, 0, err)
        self.assertIn("warning: noisy.jsonl: the reader did not understand 8 of its 10 lines (80%, the most: line "
                      "type 'brand-new-kind' (not known to this reader))", err)
        self.assertNotIn("long.json: the reader", err)


if __name__ == "__main__":
    unittest.main()
