"""The folder marker (issue 41, point 1): a folder is ours only by the marker the tool wrote there,
never by the names of the files it holds; a file we did not write, or changed since, is never
replaced, whatever the command, and each refusal is one line that loses nothing."""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
import tempfile
import threading
import time
import unittest
from pathlib import Path
from unittest import mock

from helpers import REPO, TempDirMixin, load_module, run_main
from pilot import marker
from pilot.progress import Progress

mf = load_module("make_figures", REPO / "paper" / "make_figures.py")
EXAMPLE = REPO / "results" / "smollm2-135m-llamacpp"


def snapshot(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def make_figures(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = mf.main(argv)
    return code, err.getvalue()


class FolderMarkerTest(TempDirMixin, unittest.TestCase):

    def assert_refused(self, code: int, err: str, *words: str) -> None:
        self.assertEqual(code, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        for word in words:
            self.assertIn(word, err)

    def demo(self) -> Path:
        out = self.make_tmp() / "demo"
        code, _, err = run_main(["demo", "--out", str(out), "--quiet"])
        self.assertEqual(code, 0, err)
        return out

    def test_files_named_like_ours_are_never_replaced_by_any_command(self):
        folder = self.make_tmp() / "x"
        folder.mkdir()
        (folder / "results.json").write_text('{"my":"own"}\n')
        (folder / "report.html").write_text("mine\n")
        before = snapshot(folder)
        bank = str(EXAMPLE / "results.json")
        for argv in (["demo", "--out", str(folder), "--quiet"],
                     ["--models", "m:1", "--out", str(folder), "--host", "http://127.0.0.1:9"],
                     ["analyze", "--results", bank, "--out", str(folder)],
                     ["audit", str(REPO / "tasks" / "sessions" / "audit-example"), "--out",
                      str(folder), "--quiet"]):
            with self.subTest(argv[0]):
                code, _, err = run_main(argv)
                self.assert_refused(code, err, "was not written by this tool", "--out")
                self.assertEqual(snapshot(folder), before)
        self.assert_refused(*make_figures([bank, "--out", str(folder)]), "not written")
        self.assertEqual(snapshot(folder), before)

    def test_the_demo_never_writes_into_an_audit_and_the_audit_never_into_a_run(self):
        audit = self.make_tmp() / "audit-example"
        shutil.copytree(REPO / "results" / "audit-example", audit)
        before = snapshot(audit)
        code, _, err = run_main(["demo", "--out", str(audit), "--quiet"])
        self.assert_refused(code, err, "holds an audit", "--out")
        self.assertEqual(snapshot(audit), before)
        run = self.demo()
        before = snapshot(run)
        code, _, err = run_main(["audit", str(REPO / "tasks" / "sessions" / "audit-example"),
                                 "--out", str(run), "--quiet"])
        self.assert_refused(code, err, "holds a run", "--out")
        self.assertEqual(snapshot(run), before)

    def test_the_marker_records_each_output_and_a_changed_one_is_never_replaced(self):
        run = self.demo()
        code, _, err = run_main(["demo", "--out", str(run), "--quiet"])     # ours: rewritten
        self.assertEqual(code, 0, err)
        with open(run / "report.html", "a", encoding="utf-8") as fh:
            fh.write("my notes\n")
        before = snapshot(run)
        for argv in (["analyze", "--out", str(run)], ["score", "--out", str(run)]):
            with self.subTest(argv[0]):
                code, _, err = run_main(argv)
                self.assert_refused(code, err, "report.html was changed since this tool wrote it")
        self.assert_refused(*make_figures([str(run / "results.json")]), "changed since")
        self.assertEqual(snapshot(run), before)
        files = json.loads((run / marker.MARKER_NAME).read_text())["files"]
        self.assertEqual(sorted(files), marker.present_outputs(run))
        self.assertEqual(files["results.json"], snapshot(run)["results.json"])

    def test_a_folder_made_before_the_marker_is_taken_by_its_content_once(self):
        copy = self.make_tmp() / "example"
        shutil.copytree(EXAMPLE, copy)
        self.assertFalse((copy / marker.MARKER_NAME).exists())
        code, err = make_figures([str(copy / "results.json")])
        self.assertEqual(code, 0, err)
        files = json.loads((copy / marker.MARKER_NAME).read_text())["files"]
        self.assertEqual(sorted(files), marker.present_outputs(copy))
        self.assertEqual((copy / "report.html").read_bytes(), (EXAMPLE / "report.html").read_bytes())


class ManifestJournalTest(TempDirMixin, unittest.TestCase):
    """Issue 41, point 7: a manifest that disagrees with its own journal is refused by every command
    in one line, and results.json is never replaced by fewer probes without --force."""

    def demo(self) -> Path:
        out = self.make_tmp() / "demo"
        code, _, err = run_main(["demo", "--out", str(out), "--quiet"])
        self.assertEqual(code, 0, err)
        return out

    def edit_manifest(self, run: Path, change) -> None:
        data = json.loads((run / "manifest.json").read_text())
        change(data)
        (run / "manifest.json").write_text(json.dumps(data))

    def assert_every_command_refuses(self, run: Path, *words: str) -> None:
        before = snapshot(run)
        for command in ("verify", "status", "score", "analyze", "run"):
            with self.subTest(command):
                code, out, err = run_main([command, "--out", str(run), "--quiet"]
                                        if command == "run" else [command, "--out", str(run)])
                said = out if command == "verify" else err        # verify: one of its problems
                self.assertEqual(code, 1 if command == "verify" else 2, err)
                self.assertEqual(len(err.strip().splitlines()), 0 if command == "verify" else 1)
                for word in ("disagrees with its own journal", *words):
                    self.assertIn(word, said)
                self.assertEqual(snapshot(run), before)

    def test_another_model_in_the_manifest_is_refused(self):
        run = self.demo()

        def other_model(data):
            data["models"] = ["other:1"]
            data["cells"] = {}
        self.edit_manifest(run, other_model)
        self.assert_every_command_refuses(run, "does not list", "other:1")

    def test_fewer_episodes_in_the_manifest_are_refused(self):
        run = self.demo()

        def one_episode(data):
            data["n_episodes"] = 1
            data["cells"] = {k: v for k, v in data["cells"].items() if v["episode"] < 1}
        self.edit_manifest(run, one_episode)
        self.assert_every_command_refuses(run, "episode 1", "1 episodes")

    def test_results_json_is_never_replaced_by_fewer_probes_without_force(self):
        run = self.demo()
        held = len(json.loads((run / "results.json").read_text())["probes"])

        def one_failed(data):
            key = sorted(data["cells"])[0]
            data["cells"][key]["status"] = "FAILED"
        self.edit_manifest(run, one_failed)
        before = (run / "results.json").read_bytes()
        code, _, err = run_main(["score", "--out", str(run)])
        self.assertEqual(code, 2, err)
        self.assertIn(f"holds {held} probes", err)
        self.assertIn("--force", err)
        self.assertEqual((run / "results.json").read_bytes(), before)
        code, _, err = run_main(["score", "--out", str(run), "--force"])
        self.assertEqual(code, 0, err)
        self.assertLess(len(json.loads((run / "results.json").read_text())["probes"]), held)


class ClosingLinesTest(TempDirMixin, unittest.TestCase):
    """Issue 41, point 9: a model that never writes an ANSWER: line is told on the terminal why its
    answers count as corrupted, not only in analysis.md."""

    def test_the_closing_lines_say_every_answer_was_omitted(self):
        from fake_servers import FakeOllama
        from helpers import FAST
        out = self.make_tmp() / "run"
        with FakeOllama(models=["m:1"], behaviour={"answer_style": "plain"}) as server:
            code, printed, err = run_main(["--models", "m:1", "--host", server.url, "--out",
                                           str(out), "--episodes", "1", *FAST])
        self.assertEqual(code, 0, err)
        self.assertIn("UNINFORMATIVE", printed)
        closing = printed[printed.index("UNINFORMATIVE"):]
        self.assertIn("every answer had no parseable ANSWER: <integer> line (omitted)", closing)
        self.assertNotIn("Why: every answer", (out / "analysis.md").read_text())


class RunSideDetailsTest(unittest.TestCase):
    """Issue 41, point 11 (the run's side): the subcommands open --help, the resume hint gives a
    flag once, and a default run's folder is not left for git to add."""

    def test_the_subcommands_are_near_the_top_of_help(self):
        code, printed, _ = run_main(["--help"])
        self.assertEqual(code, 0)
        lines = printed.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("subcommands"))
        self.assertLess(at, 10, printed[:400])
        self.assertTrue(any(line.lstrip().startswith("demo ") for line in lines[at:at + 20]))

    def test_the_resume_hint_gives_the_reply_deadline_once(self):
        from pilot.commands import resume_command
        hint = resume_command(["--models", "m:1", "--reply-deadline", "15", "--quiet"],
                              ("--reply-deadline", "60"))
        self.assertEqual(hint.count("--reply-deadline"), 1, hint)
        self.assertTrue(hint.endswith("--quiet --reply-deadline 60"), hint)

    def test_a_run_stopped_by_its_reply_deadline_names_a_longer_one_once(self):
        from fake_servers import FakeOllama
        from helpers import FAST
        with tempfile.TemporaryDirectory() as tmp, FakeOllama(models=["m:1"]) as server:
            server.faults = [("drip", 0.3, 10)] * 5
            code, _, err = run_main(["--models", "m:1", "--host", server.url, "--out", tmp,
                                     "--episodes", "1", *FAST, "--read-timeout", "1",
                                     "--reply-deadline", "1", "--give-up-after", "1.5"])
        self.assertEqual(code, 3, err)
        last = err.strip().splitlines()[-1]
        self.assertEqual(last.count("--reply-deadline"), 1, last)
        self.assertTrue(last.endswith("--reply-deadline 60"), last)

    def test_a_default_run_folder_is_ignored_by_git(self):
        ignored = (REPO / ".gitignore").read_text().splitlines()
        for line in ("/results/xr001/", ".pilot-outputs.json"):
            self.assertIn(line, ignored)


class ProgressLineTest(TempDirMixin, unittest.TestCase):
    """Issue 41, points 8 and 11 (the progress line): a reply that drips is named with the time it
    is given up at, not taken for a model loading; a resume counts this session's cells and calls
    against this session's, the whole run's cells apart; a fast run gets its rate by its count."""

    def test_the_transport_tells_a_dripping_reply_from_a_model_still_writing(self):
        from fake_servers import FakeOllama
        from pilot import transport
        chat = {"model": "m:1", "stream": False,
                "messages": [{"role": "user", "content": "ABCDEF is 5.\nQuestion: ABCDEF?"}]}
        for fault, dripping in ((("drip", 0.1, 10), True), (("drip_headers", 0.1, 10), True),
                                (("delay", 1.0), False)):
            with self.subTest(fault[0]), FakeOllama(models=["m:1"]) as server:
                server.faults = [fault]
                client = transport.HttpClient(server.url, 5, read_timeout=1.5, reply_deadline=2)
                call = threading.Thread(target=self.send, args=(client, chat))
                call.start()
                time.sleep(0.8)
                slow = transport.REPLY_DEADLINES.slow_replies()
                call.join()
                client.close()
                self.assertEqual(len(slow), int(dripping), slow)
                if dripping:
                    self.assertEqual(slow[0]["deadline_s"], 2)
                    self.assertGreater(slow[0]["bytes"], 0)
                    self.assertLess(abs(slow[0]["gives_up_at"] - time.time()), 2)

    @staticmethod
    def send(client, chat) -> None:
        with contextlib.suppress(Exception):         # a drip ends at its deadline
            client.request("POST", "/api/chat", chat)

    def test_a_run_whose_reply_drips_says_so_from_the_first_seconds(self):
        from fake_servers import FakeOllama
        out = self.make_tmp() / "run"
        with FakeOllama(models=["m:1"]) as server:
            server.faults = [("drip", 0.1, 10)]
            code, _, err = run_main(["--models", "m:1", "--host", server.url, "--out", str(out),
                                     "--episodes", "1", "--recheck", "0", "--read-timeout", "1",
                                     "--reply-deadline", "2", "--progress-interval", "0.2"])
        self.assertEqual(code, 0, err)
        dripping = [line for line in err.splitlines() if "bytes arriving slowly" in line]
        self.assertTrue(dripping, err)
        self.assertRegex(dripping[0], r"progress: .*ETA unknown \(no whole reply yet\).*; bytes "
                         r"arriving slowly on 1 call\(s\) \(a gateway or a slow server\); giving up "
                         r"at \d\d:\d\d:\d\d \(--reply-deadline 2 s\)")
        self.assertFalse([line for line in dripping if "a model may be loading" in line], err)

    def test_a_resume_counts_this_sessions_work_apart_from_the_whole_run(self):
        stream = io.StringIO()
        # 10 cells, 2 complete before; this session has 8 cells of 80 calls to make
        progress = Progress(10, 80, 2, 0, stream=stream, interval_s=0)
        progress.update(calls=5)
        progress.update(cells=1, force=True)
        self.assertTrue(progress.line().startswith(
            "progress: cells 1/8 and calls 5/80 this session (whole run: cells 3/10), "), progress.line())
        fresh = Progress(10, 100, 0, 0, stream=io.StringIO(), interval_s=0)
        fresh.update(calls=5, cells=1)
        self.assertTrue(fresh.line().startswith("progress: cells 1/10, calls 5/100, "))

    def test_a_fast_run_gets_its_rate_by_the_count_of_replies(self):
        now = [1000.0]
        with mock.patch.object(time, "monotonic", lambda: now[0]):
            progress = Progress(10, 400, 0, 0, stream=io.StringIO(), interval_s=60)
            for _ in range(90):                     # 90 replies in 4.5 s: 1,200 a minute
                now[0] += 0.05
                progress.update(calls=1)
            line = progress.line()
        self.assertIn("calls 90/400, 1200.0 calls/min, ETA 0.3 min", line)


if __name__ == "__main__":
    unittest.main()
