"""Inputs nobody checked before (issue "Safe with folders", 3): task paths that are not files, regime templates
with format specs, descriptions that break tables, gate ledgers nested or with runaway patterns; each is one line
and exit 2, never a traceback or a hang; and messages that say what is true (points 3 and 6)."""
import contextlib
import errno
import io
import json
import os
import runpy
import sys
import unittest
from unittest import mock

from fake_servers import FakeOllama, FakeOpenAI
from helpers import FAST, REPO, TempDirMixin, load_module, load_tasks, reference_results, run_main
from pilot import figures_job, pages, records, reports, runfolder
from pilot.rules import gate

ONE_LINE = 1


class InputRefusalTest(TempDirMixin, unittest.TestCase):
    def assert_one_line(self, argv: list[str], code: int, *wanted: str, listed: bool = False) -> None:
        """One error line (a regime file's problems follow it as a list, one per line) and the exit code."""
        got, out, err = run_main(argv)
        self.assertEqual(got, code, err)
        self.assertNotIn("Traceback", err)
        self.assertEqual(len([line for line in err.splitlines() if line.startswith("error:")]), ONE_LINE, err)
        if not listed:
            self.assertEqual(len(err.strip().splitlines()), ONE_LINE, err)
        for text in wanted:
            self.assertIn(text, err)

    def test_a_task_path_that_is_not_a_regular_file(self):
        for path in ("/dev/zero", "/dev/null"):
            with self.subTest(path):
                self.assert_one_line(["plan", "--models", "m", "--tasks", path], 2, "is not a regular file")

    def test_generate_writes_only_over_a_regular_file(self):
        """generate read a FIFO for ever and /dev/zero until MemoryError before it looked at what was there."""
        fifo = self.make_tmp() / "fifo.json"
        os.mkfifo(fifo)
        link = self.make_tmp() / "link.json"
        link.symlink_to(self.make_tmp() / "elsewhere.json")
        for path, said in ((fifo, "is not a regular file"), ("/dev/zero", "is not a regular file"),
                           (link, "is a link")):
            with self.subTest(path=str(path)):
                self.assert_one_line(["generate", "--tasks", str(path), "--episodes", "2"], 2, said)
        self.assertFalse((self.make_tmp() / "elsewhere.json").exists())

    def test_an_empty_path_is_refused_not_read_as_the_default(self):
        self.assert_one_line(["plan", "--models", "m", "--tasks", ""], 2, "--tasks was given an empty path")
        self.assert_one_line(["plan", "--study", "sessions", "--models", "m", "--sessions", " "], 2,
                             "--sessions was given an empty path")

    def test_a_relative_path_outside_the_repository_is_recorded_as_an_absolute_one(self):
        """A task file named relative to the current folder was recorded as typed, then read against the
        repository by status, verify, score and gate (which then said it was missing)."""
        work = self.make_tmp()
        here = os.getcwd()
        try:
            os.chdir(work)
            self.assertEqual(run_main(["generate", "--tasks", "mine.json", "--episodes", "2"])[0], 0)
            with FakeOllama(models=["m"]) as server:
                code, _, err = run_main(["run", "--models", "m", "--host", server.url, "--tasks", "mine.json",
                                         "--out", "run", *FAST])
            self.assertEqual(code, 0, err)
        finally:
            os.chdir(here)
        manifest = json.loads((work / "run" / "manifest.json").read_text())
        self.assertEqual(manifest["tasks"], str(work / "mine.json"))
        for command in ("status", "verify"):
            with self.subTest(command):
                code, _, err = run_main([command, "--out", str(work / "run")])
                self.assertEqual(code, 0, err)

    def test_a_regime_template_with_a_format_spec_or_conversion(self):
        for template in ("{previous_state}\n{segment:>99999999}\n{max_words}", "{previous_state!r}{segment}{max_words}"):
            with self.subTest(template):
                path = self.make_tmp() / "regimes.json"
                path.write_text(json.dumps([{"name": "MINE", "compaction_template": template}]))
                self.assert_one_line(["plan", "--models", "m", "--regime-file", str(path)], 2, "format spec",
                                     listed=True)

    def test_a_regime_description_over_one_line(self):
        path = self.make_tmp() / "regimes.json"
        path.write_text(json.dumps([{"name": "MINE", "description": "two\nlines | and a pipe",
                                     "compaction_template": "{previous_state} {segment} {max_words}"}]))
        self.assert_one_line(["plan", "--models", "m", "--regime-file", str(path)], 2, "one line", listed=True)

    def test_every_json_input_is_read_by_one_reader(self):
        """A task file, a regime file, a manifest, a results file, a ledger, a probes file and a session file that
        are not UTF-8 text are refused alike (issue 29: eight readers, each with its own words, became one), in
        one line that names the file and what to do."""
        folder = self.make_tmp()
        bad = b'\xff{"episodes": []}'
        for name in ("tasks.json", "regimes.json", "results.json", "ledger.json", "probes.json", "s.json"):
            (folder / name).write_bytes(bad)
        (folder / "run").mkdir()
        (folder / "run" / "manifest.json").write_bytes(bad)
        (folder / "sessions").mkdir()
        (folder / "sessions" / "s.json").write_bytes(bad)
        cases = {"task file": ["plan", "--models", "m", "--tasks", str(folder / "tasks.json")],
                 "regime file": ["plan", "--models", "m", "--regime-file", str(folder / "regimes.json")],
                 "manifest": ["status", "--out", str(folder / "run")],
                 "results file": ["analyze", "--results", str(folder / "results.json")],
                 "ledger": ["gate", str(REPO / "tasks" / "gate.example.state.txt"), "--ledger",
                            str(folder / "ledger.json")],
                 "probes file": ["plan", "--study", "sessions", "--models", "m", "--probes", str(folder / "probes.json")],
                 "session file": ["plan", "--study", "sessions", "--models", "m", "--sessions",
                                  str(folder / "sessions")]}
        for what, argv in cases.items():
            with self.subTest(what):
                self.assert_one_line(argv, 2, "is not UTF-8 text (byte 0 cannot be decoded)")

    def test_a_lone_surrogate_in_an_input_file_is_one_line(self):
        """JSON can name half of a UTF-16 pair (\\ud800), which is not a character: such a regime file, ledger,
        state or task file is refused in one line naming the escape (it failed on save or --json before)."""
        folder = self.make_tmp()
        regimes = json.loads((REPO / "tasks" / "regimes.example.json").read_text())
        regimes["regimes"][0]["description"] = "mine \ud800"
        (folder / "regimes.json").write_text(json.dumps(regimes))
        ledger = json.loads((REPO / "tasks" / "gate.example.ledger.json").read_text())
        ledger["surrogate \udc00"] = 1
        (folder / "ledger.json").write_text(json.dumps(ledger))
        (folder / "state.json").write_text(json.dumps({"VALUE": "x\ud83d"}))
        tasks = json.loads((REPO / "tasks" / "tasks.json").read_text())
        tasks["episodes"][0]["questions"][0]["prompt"] += "\udfff"
        (folder / "tasks.json").write_text(json.dumps(tasks))
        state, ledger_path = str(REPO / "tasks" / "gate.example.state.txt"), str(folder / "ledger.json")
        for argv, escape in ((["run", "--models", "m", "--out", str(folder / "run"), "--regime-file",
                               str(folder / "regimes.json")], "\\ud800"),
                             (["gate", state, "--ledger", ledger_path, "--json"], "\\udc00"),
                             (["gate", str(folder / "state.json"), "--ledger", str(REPO / "tasks" /
                                                                                   "gate.example.ledger.json")],
                              "\\ud83d"),
                             (["plan", "--models", "m", "--tasks", str(folder / "tasks.json")], "\\udfff")):
            with self.subTest(argv[0]):
                self.assert_one_line(argv, 2, f"holds {escape}, a lone surrogate")
        self.assertFalse((folder / "run").exists())

    def test_a_lone_surrogate_from_a_server_or_in_a_run_folder(self):
        """A reply naming a lone surrogate is malformed (retried, never journalled); a manifest, a raw record or a
        results.json holding one is refused like any other file that is not the runner's."""
        out = self.make_tmp() / "run"
        with FakeOllama(models=["gemma3:4b"]) as server:
            server.faults = [("text", "a state \ud800")]
            code, _, err = run_main(["--models", "gemma3:4b", "--host", server.url, "--out", str(out), "--episodes",
                                     "1", *[a for a in FAST if a != "--quiet"], "--progress-interval", "0"])
            sent = server.chat_count()
        self.assertEqual(code, 0, err)
        self.assertIn("a lone surrogate in the reply", err)
        logs = b"".join(path.read_bytes() for path in (out / "raw").glob("*.jsonl"))
        self.assertEqual(len(logs.splitlines()), sent - 1)
        self.assertNotIn(b"\\ud800", logs)
        results = json.loads((out / "results.json").read_text())
        results["models"][0] += "\udc00"
        (out / "results.json").write_text(json.dumps(results))
        self.assert_one_line(["analyze", "--results", str(out / "results.json")], 2, "holds \\udc00, a lone surrogate")
        manifest = json.loads((out / "manifest.json").read_text())
        manifest["amendments"].append({"what": "\udbff"})
        (out / "manifest.json").write_text(json.dumps(manifest))
        self.assert_one_line(["status", "--out", str(out)], 2, "holds \\udbff, a lone surrogate")

    def test_every_study_refuses_a_failing_task_file_the_same_way(self):
        """One shared refusal: how many checks fail and what to do, then the first 25 problems and how many more."""
        for study in ("xr001", "constraints", "adversarial"):
            with self.subTest(study):
                path = self.make_tmp() / "tasks.json"
                path.write_text(json.dumps({"study": study, "episodes": [1] * 30}))
                code, _, err = run_main(["plan", "--study", study, "--models", "m", "--tasks", str(path)])
                self.assertEqual(code, 2, err)
                lines = err.strip().splitlines()
                self.assertRegex(lines[0], r"^error: .* fails 30 design check\(s\) of the .* schema; fix them or use ")
                self.assertEqual(len(lines), 1 + 25 + 1, err)
                self.assertEqual(lines[-1], "  - ... and 5 more")

    def test_an_out_folder_that_is_a_file_is_named_as_one(self):
        folder = self.make_tmp()
        (folder / "file").write_text("mine")
        bank = folder / "results.json"
        bank.write_text(json.dumps(reference_results(load_tasks())))
        for out, said in ((folder / "file", "is a file, not a folder"),
                          (folder / "file" / "run", "lies under the file")):
            for argv in (["analyze", "--results", str(bank), "--out", str(out)],
                         ["demo", "--quiet", "--out", str(out)]):
                with self.subTest(argv=argv):
                    code, _, err = run_main(argv)
                    self.assertEqual(code, 2, err)
                    self.assertIn(f"{out} {said}", err.strip().splitlines()[-1])
        self.assertEqual((folder / "file").read_text(), "mine")

    def test_a_regime_file_that_is_not_a_regular_file(self):
        self.assert_one_line(["plan", "--models", "m", "--regime-file", "/dev/zero"], 2,
                             "/dev/zero is not a regular file")
        self.assert_one_line(["plan", "--models", "m", "--regime-file", str(self.make_tmp())], 2, "is a folder")
        deep = self.make_tmp() / "deep.json"
        deep.write_text("[" * 5000 + "]" * 5000)
        self.assert_one_line(["plan", "--models", "m", "--regime-file", str(deep)], 2, "nested too deeply")

    def test_gate_on_a_deeply_nested_ledger_or_state(self):
        deep = "[" * 5000 + "]" * 5000
        ledger, state = self.make_tmp() / "ledger.json", self.make_tmp() / "state.json"
        ledger.write_text(deep)
        state.write_text("VALUE = 1\n")
        self.assert_one_line(["gate", str(state), "--ledger", str(ledger)], 2, "nested too deeply")
        ledger.write_text(json.dumps({"entities": {"VALUE": 1}}))
        state.write_text('{"a": ' * 5000 + "1" + "}" * 5000)
        self.assert_one_line(["gate", str(state), "--ledger", str(ledger)], 2, "nested too deeply")

    def test_gate_refuses_a_name_pattern_that_can_backtrack_for_ever(self):
        # the last three slipped past a check of the pattern's spelling (the hostile review: (a|aa)*c took 17 s on
        # a 38-letter word, and more than a minute at 45)
        for pattern in ("(A+)+$", "([A-Z]{2,})*X", "(?:x*)*y", "(a|aa)*c", "((a{1,2}))*z", "((ab+)c)+"):
            with self.subTest(pattern), self.assertRaises(gate.GateInputError) as caught:
                gate.normalize_ledger({"entities": {"VALUE": 1}, "name_pattern": pattern})
            self.assertIn("repeats a group that itself repeats", str(caught.exception))
        for pattern in (r"\b(?:[BDF][AE]){3}\b", "[A-Z][a-z]+", "[A-Z]{6}", gate.RUN_GATE_NAME_PATTERN):
            self.assertTrue(gate.normalize_ledger({"entities": {"VALUE": 1}, "name_pattern": pattern})["name_pattern"])

    def test_a_combined_entry_whose_parts_are_not_names_is_one_line(self):
        with self.assertRaises(gate.GateInputError) as caught:
            gate.normalize_ledger({"entities": {"X": 1, "Y": 2}, "combined": [{"parts": [["X"], "Y"], "value": 3}]})
        self.assertIn("combined entry", str(caught.exception))

    def test_a_ledger_with_a_byte_order_mark_is_read(self):
        """Session and probes files with a BOM were read and a ledger with one refused as not JSON."""
        ledger, state = self.make_tmp() / "ledger.json", self.make_tmp() / "state.txt"
        ledger.write_bytes(b"\xef\xbb\xbf" + json.dumps({"entities": {"KEDIMA": 873}}).encode())
        state.write_text("values:\nKEDIMA = 873\n")
        code, stdout, err = run_main(["gate", str(state), "--ledger", str(ledger)])
        self.assertEqual(code, 0, err)
        self.assertIn("PASS", stdout)

    def test_gate_on_a_path_that_does_not_exist(self):
        self.assert_one_line(["gate", str(self.make_tmp() / "nothing.txt")], 2, "no state file or run folder")


class TableTest(unittest.TestCase):
    def test_a_pipe_or_a_line_break_in_a_cell_cannot_break_a_table(self):
        table = reports.md_table(["cell", "reply"], [["gemma3:4b|R1|0", "two\nlines"]])
        rows = table.splitlines()
        self.assertEqual(len(rows), 3)
        self.assertEqual(rows[2], "| gemma3:4b\\|R1\\|0 | two lines |")


if __name__ == "__main__":
    unittest.main()


class MessagesTest(TempDirMixin, unittest.TestCase):
    """Messages that say what is true (issue "Safe with folders", 6)."""

    def test_a_server_slower_than_the_read_timeout_is_told_apart_from_a_dead_one(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=["m:1b"]) as server:
            server.faults = [("delay", 1.0)] * 20
            code, _, err = run_main(["run", "--models", "m:1b", "--host", server.url, "--out", str(out), "--episodes",
                                     "1", "--read-timeout", "0.2", "--give-up-after", "0.5", *FAST])
        self.assertEqual(code, 3, err)
        last = err.strip().splitlines()[-1]
        self.assertIn("sent no reply within --read-timeout (0.2 s)", last)
        self.assertIn("--read-timeout 60", last)
        self.assertNotIn("Start the server", last)

    def test_a_host_with_a_space_and_a_trailing_api(self):
        code, _, err = run_main(["run", "--models", "m", "--host", "http://127.0.0.1: 11434"])
        self.assertEqual(code, 2)
        self.assertIn("has a space in it", err)
        with FakeOllama(models=["m:1b"]) as server:
            code, _, err = run_main(["run", "--models", "m:1b", "--host", server.url + "/api/", "--out",
                                     str(self.make_tmp() / "run"), "--episodes", "1", *FAST])
        self.assertEqual(code, 0, err)

    def test_a_disk_that_fills_while_the_figures_are_written_exits_4(self):
        figures = load_module("make_figures_disk", REPO / "paper" / "make_figures.py")
        bank = self.make_tmp() / "results.json"
        bank.write_text(json.dumps(reference_results(load_tasks())))
        full = OSError(errno.ENOSPC, "No space left on device", "x.svg")
        with mock.patch.object(pages, "write_atomic", side_effect=full), \
                contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(figures.main([str(bank), "--out", str(self.make_tmp())]), records.EXIT_DISK_FULL)
        script = self.make_tmp() / "full.py"
        script.write_text("import sys; sys.stdin.read(); sys.exit(4)\n")
        with mock.patch.object(figures_job, "FIGURES_SCRIPT", script), \
                self.assertRaises(records.DiskFull) as caught:
            figures_job.write_figures_and_report(self.make_tmp(),
                                                 handover=({"probes": []}, {"study": "xr001"}))
        self.assertEqual(caught.exception.exit_code, 4)
        self.assertIn("make the figures and report with: python3 paper/make_figures.py", str(caught.exception))

    def test_an_old_python_is_told_what_it_needs(self):
        with mock.patch.object(sys, "version_info", (3, 9, 18)), self.assertRaises(SystemExit) as caught:
            runpy.run_path(str(REPO / "scripts" / "run_pilot.py"), run_name="not_main")
        self.assertIn("needs Python 3.10 or newer", str(caught.exception.code))

    def test_a_missing_or_rejected_api_key_is_found_before_the_run_folder_is_made(self):
        for label, env in (("rejected", {"PILOT_TEST_KEY": "wrong"}), ("missing", {})):
            with self.subTest(label), FakeOpenAI(models=["m"]) as server, \
                    mock.patch.dict("os.environ", env, clear=False):
                server.api_key = "right"
                out = self.make_tmp() / "run"
                code, _, err = run_main(["run", "--backend", "openai", "--base-url", server.url, "--api-key-env",
                                         "PILOT_TEST_KEY", "--models", "m", "--out", str(out), "--episodes", "1",
                                         *FAST])
                self.assertEqual(code, 2, err)
                self.assertIn("HTTP 401" if label == "rejected" else "names $PILOT_TEST_KEY, which is not set", err)
                self.assertIn("$PILOT_TEST_KEY", err)
                self.assertFalse(out.exists())
                self.assertEqual(server.chat_count(), 0)


class ImpossibleCountsTest(TempDirMixin, unittest.TestCase):
    """Token counts no server could mean are unknown (issue 20, 13): never averaged into the matched budget."""

    def test_negative_and_fractional_counts_are_recorded_as_unknown(self):
        for override in ((-5, -3), (2.5, 7.25)):
            with self.subTest(override=override):
                out = self.make_tmp() / "run"
                with FakeOllama(models=["m:1b"]) as server:
                    server.count_override = override
                    code, _, err = run_main(["--models", "m:1b", "--host", server.url, "--out", str(out),
                                             "--episodes", "1", "--allow-partial", *FAST])
                self.assertEqual(code, 0, err)
                records = [json.loads(line) for log in (out / "raw").glob("*.jsonl")
                           for line in log.read_text().splitlines()]
                self.assertEqual({(r["eval_count"], r["prompt_eval_count"]) for r in records}, {(None, None)})
                tokens = json.loads((out / "results.json").read_text())["compaction_tokens"]
                self.assertEqual({r: (t["n"], t["mean"], t["unknown"]) for r, t in tokens.items()},
                                 {"R1": (0, None, 4), "R2": (0, None, 4)})

    def test_the_analysis_never_averages_an_impossible_journalled_count(self):
        self.assertEqual([records.known_count(v) for v in (-5, 3.0, True, 10 ** 12, 0, 219)],
                         [None, None, None, None, 0, 219])


class NamedInputTest(TempDirMixin, unittest.TestCase):
    """Files the user names (a ledger, a state, a results.json) that are not regular files are refused in one line
    before they are read: a FIFO would hang, /dev/zero would fill the memory (issue 21, found by review)."""

    def test_a_device_or_a_fifo_is_refused_before_it_is_read(self):
        fifo = self.make_tmp() / "fifo"
        os.mkfifo(fifo)
        state = REPO / "tasks" / "gate.example.state.txt"
        for named in ("/dev/zero", str(fifo)):
            for argv in (["gate", str(state), "--ledger", named], ["analyze", "--results", named]):
                with self.subTest(argv=argv):
                    got, _, err = run_main(argv)
                    self.assertEqual(got, 2, err)
                    self.assertIn("is not a regular file", err)
                    self.assertEqual(len(err.strip().splitlines()), 1, err)

    def test_a_name_pattern_with_an_absurd_repeat_is_refused(self):
        with self.assertRaises(gate.GateInputError):
            gate.normalize_ledger({"entities": {"VALUE": 1}, "name_pattern": "a{99999999999}"})
