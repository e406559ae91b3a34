"""Running it for real: visible retries, a dead server, bad input, a full disk, resume rules, hints, portability."""
import csv
import errno
import io
import json
import os
import re
import subprocess
import sys
import time
import unittest
from pathlib import Path
from unittest import mock

from fake_servers import FakeOllama, FakeOpenAI
from helpers import FAST, REPO, TempDirMixin, reference_results, load_tasks, run_main
from pilot import bank, cli, records, runfolder, runner
from pilot.progress import Progress

MODEL = "gemma3:4b"
CALLS_2_EPISODES = 2 * 8 + 2 * 2 * 12       # 64


def assert_one_clean_error(test: unittest.TestCase, err: str) -> None:
    """No traceback: one line that starts with `error:`."""
    test.assertNotIn("Traceback", err)
    lines = [line for line in err.splitlines() if line.strip()]
    test.assertEqual(len(lines), 1, err)
    test.assertTrue(lines[0].startswith("error: "), err)


class Clock:
    """A hand-driven time.monotonic for the progress line's arithmetic."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


# ------------------------------------------------------------------------------------------
# 1. Retries are visible, and a plain line comes every interval in every state
# ------------------------------------------------------------------------------------------
class VisibleRetriesTest(TempDirMixin, unittest.TestCase):
    def test_loading_model_is_shown_as_waiting_and_lines_keep_coming_during_the_wait(self):
        out = self.make_tmp() / "run"
        loading = ("status", 503, {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}},
                   {"Retry-After": "1.5"})
        with FakeOllama(models=[MODEL]) as server:
            server.faults = [loading]
            code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out),
                                     "--episodes", "1", "--retries", "3", "--progress-interval", "0.25"])
        self.assertEqual(code, 0, err)
        self.assertIn(f"waiting for the model to load: {MODEL} R0 ep 0 question_1: HTTP 503 Loading model "
                      f"(attempt 2/4, next in 2 s)", err)
        # while the only worker sleeps 1.5 s before its retry, the plain line still comes every 0.25 s
        waiting = [line for line in err.splitlines() if line.startswith("progress:") and "Loading model" in line]
        self.assertGreaterEqual(len(waiting), 3, err)
        self.assertIn("for the first reply; a model may be loading", waiting[0])

    def test_the_server_check_waits_for_a_model_that_is_loading(self):
        out = self.make_tmp() / "run"
        with FakeOpenAI(models=[MODEL]) as server:
            server.loading_until = time.monotonic() + 1.0
            code, _, err = run_main(["run", "--backend", "openai", "--base-url", server.url, "--models", MODEL,
                                     "--out", str(out), "--episodes", "1", *FAST])
        self.assertEqual(code, 0, err)
        self.assertIn("to load its model", err)

    def test_retry_line_names_the_call_the_cause_the_attempt_and_when(self):
        stream = io.StringIO()
        progress = Progress(10, 100, 0, 0, stream=stream, interval_s=60)
        progress.retrying(f"{MODEL} R1 ep 3 compact_2", "HTTP 500 model runner has unexpectedly stopped", 3, 7, 8.0)
        self.assertEqual(stream.getvalue(), f"retrying {MODEL} R1 ep 3 compact_2: HTTP 500 model runner has "
                                            f"unexpectedly stopped (attempt 3/7, next in 8 s)\n")
        self.assertIn("; retrying gemma3:4b R1 ep 3 compact_2", progress.line())
        progress.retry_over(f"{MODEL} R1 ep 3 compact_2")
        self.assertNotIn("retrying", progress.line())

    def test_retry_shows_on_the_live_line_of_a_terminal(self):
        class Terminal(io.StringIO):
            def isatty(self):
                return True

        stream = Terminal()
        progress = Progress(4, 40, 0, 0, stream=stream, interval_s=60)
        progress.retrying(f"{MODEL} R0 ep 1 question_4", "connection refused", 2, 7, 3.0, unreachable_s=4.0,
                          give_up_after_s=180)
        live = stream.getvalue().split("\r")[-1]
        self.assertIn(f"retrying {MODEL} R0 ep 1 question_4: connection refused (attempt 2, server unreachable for "
                      f"4 s of 180 s, next in 3 s)", live)
        self.assertNotIn("\n", stream.getvalue())

    def test_eta_ignores_the_wait_for_the_first_reply(self):
        clock = Clock()
        stream = io.StringIO()
        with mock.patch.object(time, "monotonic", clock):
            progress = Progress(1, 61, 0, 0, stream=stream, interval_s=0)
            clock.now += 120                          # two minutes of model load before the first reply
            self.assertIn("ETA unknown (waiting 120 s for the first reply", progress.line())
            progress.update(calls=1)
            for _ in range(10):                      # then one reply every 6 seconds: 10 calls a minute
                clock.now += 6
                progress.update(calls=1)
            line = progress.line()
        self.assertIn("calls 11/61, 10.0 calls/min, ETA 5.0 min", line)

    def test_a_finished_run_and_its_determinism_probe_say_what_they_are_doing(self):
        """Once every call of the cells is done the line gives no rate still to measure and no ETA of 0 min, and
        while the determinism probe re-sends its calls the line counts them (it once stood still for 40 s)."""
        progress = Progress(3, 4, 0, 0, stream=io.StringIO(), interval_s=0)
        progress.update(calls=1)
        self.assertIn("rate not yet measured, ETA unknown (measuring the rate: 1 reply so far)", progress.line())
        progress.update(calls=3, cells=3)
        self.assertEqual(progress.line(), "progress: cells 3/3, calls 4/4, failed cells 0")
        progress.probing(3, 8)
        self.assertEqual(progress.line(), "progress: cells 3/3, calls 4/4, failed cells 0; determinism probe: 3 of 8 "
                                          "calls re-sent")

    def test_the_probe_is_counted_on_the_progress_lines_of_a_run(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            code, _, err = run_main(["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "1",
                                     "--recheck", "3", "--progress-interval", "0", "--retries", "3",
                                     "--backoff-base", "0.01", "--backoff-cap", "0.02"])
        self.assertEqual(code, 0, err)
        self.assertIn("; determinism probe: 3 of 3 calls re-sent", err)
        self.assertNotIn("ETA 0 min", err)


# ------------------------------------------------------------------------------------------
# 2. A dead server stops the run
# ------------------------------------------------------------------------------------------
class DeadServerTest(TempDirMixin, unittest.TestCase):
    DEAD = ["--retries", "3", "--backoff-base", "0.05", "--backoff-cap", "0.1", "--give-up-after", "1",
            "--progress-interval", "0.2"]

    def test_a_dead_server_stops_the_run_fails_nothing_and_the_run_resumes(self):
        out = self.make_tmp() / "run"
        argv = ["run", "--models", MODEL, "--out", str(out), "--episodes", "2", *self.DEAD]
        with FakeOllama(models=[MODEL]) as server:
            port = server.httpd.server_address[1]
            server.faults = [("delay", 0)] * 10 + [("shutdown",)]     # dies on its 11th call: R1 episode 0, compact_3
            code, _, err = run_main([*argv, "--host", server.url])
        self.assertEqual(code, 3, err)
        self.assertNotIn("Traceback", err)
        self.assertRegex(err, rf"retrying {re.escape(MODEL)} R1 ep 0 compact_3: connection (refused|reset)")
        self.assertRegex(err, r"progress: .*; retrying .*server unreachable for")
        last = err.strip().splitlines()[-1]
        self.assertTrue(last.startswith("error: the server at http://127.0.0.1:"), last)
        self.assertIn("has not answered for", last)
        self.assertIn("none marked FAILED", last)
        self.assertIn(f"resume with: python3 scripts/run_pilot.py run --models {MODEL}", last)
        cells = json.loads((out / "manifest.json").read_text())["cells"]
        self.assertEqual({k: c["status"] for k, c in cells.items()}, {f"{MODEL}|R0|0": "COMPLETE"})
        with FakeOllama(models=[MODEL], port=port) as server:
            code, _, err = run_main([*argv, "--host", server.url])
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), CALLS_2_EPISODES - 10 + runner.DEFAULT_RECHECK)   # and the probe

    def test_any_reply_resets_the_unreachable_clock(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            # two short outages (each under the bound) with a slow good reply between them: together
            # longer than --give-up-after, but never consecutively
            server.faults = [("reset",)] * 3 + [("delay", 0.8)] + [("reset",)] * 3
            code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out),
                                     "--episodes", "1", "--retries", "1", "--backoff-base", "0.2", "--backoff-cap",
                                     "0.2", "--give-up-after", "0.7", "--quiet"])
        self.assertEqual(code, 0, err)

    def test_an_answered_error_still_fails_the_cell_after_its_retries(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            server.faults = [("status", 500, {"error": "model runner has unexpectedly stopped"})] * 4
            code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out),
                                     "--episodes", "1", *FAST, "--give-up-after", "0.001"])
        self.assertEqual(code, 3, err)
        cells = json.loads((out / "manifest.json").read_text())["cells"]
        self.assertEqual(cells[f"{MODEL}|R0|0"]["status"], "FAILED")
        self.assertEqual(sum(c["status"] == "COMPLETE" for c in cells.values()), 2)


# ------------------------------------------------------------------------------------------
# 3. No tracebacks, right exit codes
# ------------------------------------------------------------------------------------------
class BadInputTest(TempDirMixin, unittest.TestCase):
    def test_bad_numbers_and_addresses_are_one_line_and_make_no_folder(self):
        cases = {
            "negative read timeout": ["--read-timeout", "-1"],
            "nan read timeout": ["--read-timeout", "nan"],
            "infinite backoff cap": ["--backoff-cap", "inf"],
            "infinite backoff base": ["--backoff-base", "inf"],
            "zero connect timeout": ["--connect-timeout", "0"],
            "nan give-up": ["--give-up-after", "nan"],
            "negative retries": ["--retries", "-1"],
            "huge retries": ["--retries", "1000000"],
            "huge concurrency": ["--concurrency", "100000"],
            "zero episodes": ["--episodes", "0"],
            "unclosed IPv6 host": ["--host", "http://[::1"],
            "port out of range": ["--host", "http://127.0.0.1:99999"],
            "port zero": ["--host", "http://127.0.0.1:0"],
            "not http": ["--host", "ftp://127.0.0.1:11434"],
            "no host": ["--host", "http://:11434"],
            "bad base url": ["--backend", "openai", "--base-url", "http://[::1"],
        }
        with FakeOllama(models=[MODEL]) as server:
            server.faults = [("status", 503, {"error": "busy"})] * 100      # a failing server
            for label, extra in cases.items():
                with self.subTest(label):
                    out = self.make_tmp() / "run"
                    host = [] if "--host" in extra or "--backend" in extra else ["--host", server.url]
                    code, _, err = run_main(["run", "--models", MODEL, "--out", str(out), *host, *extra])
                    self.assertEqual(code, 2, err)
                    assert_one_clean_error(self, err)
                    self.assertFalse(out.exists())
            self.assertEqual(server.chat_count(), 0)

    def test_the_address_of_the_other_backend_is_refused_not_ignored(self):
        """--base-url without --backend openai once sent the run to Ollama's default address, which said no server
        answers there; each address option now names the backend that reads it."""
        with FakeOllama(models=[MODEL]) as server:
            for extra, named in ((["--base-url", server.url], "--backend openai"),
                                 (["--backend", "openai", "--host", server.url], "--base-url")):
                with self.subTest(extra[0]):
                    out = self.make_tmp() / "run"
                    code, _, err = run_main(["run", "--models", MODEL, "--out", str(out), *extra])
                    self.assertEqual(code, 2, err)
                    assert_one_clean_error(self, err)
                    self.assertIn(named, err)
                    self.assertIn(server.url, err)
                    self.assertFalse(out.exists())
            self.assertEqual(server.chat_count(), 0)

    def test_bad_addresses_in_the_environment(self):
        for variable, extra in (("OLLAMA_HOST", []), ("OPENAI_BASE_URL", ["--backend", "openai"])):
            with self.subTest(variable), mock.patch.dict(os.environ, {variable: "http://127.0.0.1:99999"}):
                out = self.make_tmp() / "run"
                code, _, err = run_main(["run", "--models", MODEL, "--out", str(out), *extra])
                self.assertEqual(code, 2, err)
                assert_one_clean_error(self, err)
                self.assertIn(variable, err)
                self.assertFalse(out.exists())

    def test_an_address_with_a_query_or_fragment_is_refused_and_never_printed(self):
        """--base-url "http://host/v1?key=SECRET" printed the query in its error lines and joined the API's paths
        after it; now it is refused in one line that masks it (a user:password part too), wherever it comes from."""
        cases = [(["--backend", "openai", "--base-url", "http://127.0.0.1:9/v1?key=SECRET"], {}, "query"),
                 (["--host", "http://127.0.0.1:9/#SECRET"], {}, "fragment"),
                 (["--backend", "openai", "--base-url", "http://user:SECRET@127.0.0.1:9/v1?"], {}, "query"),
                 (["--backend", "openai"], {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1?api_key=SECRET"}, "query"),
                 ([], {"OLLAMA_HOST": "127.0.0.1:9?SECRET"}, "query"),
                 (["--host", "http://user:SECRET@127.0.0.1:99999"], {}, "not a server address")]
        for extra, environment, why in cases:
            with self.subTest(extra, **environment), mock.patch.dict(os.environ, environment):
                out = self.make_tmp() / "run"
                code, _, err = run_main(["run", "--models", MODEL, "--out", str(out), *extra])
                self.assertEqual(code, 2, err)
                assert_one_clean_error(self, err)
                self.assertIn(why, err)
                self.assertNotIn("SECRET", err)
                self.assertFalse(out.exists())

    def test_a_folder_path_that_names_no_usable_folder_is_one_line(self):
        """--out "" silently meant the default folder, control characters in --out made such folders in the
        repository, and a link to nowhere gave "File exists"; each is now one line, and nothing is made."""
        tmp = self.make_tmp()
        os.symlink(tmp / "gone", tmp / "dangling")
        with FakeOllama(models=[MODEL]) as server:
            cases = {"empty": ("", "an empty path names no folder; give one"),
                     "spaces": ("  ", "an empty path names no folder"),
                     "newline": (str(tmp / "a\nb"), "holds a control character ('\\n')"),
                     "escape": (str(tmp / "a\x1b[2Jb"), "holds a control character ('\\x1b')"),
                     "dangling link": (str(tmp / "dangling"), "is a link to"),
                     "below a dangling link": (str(tmp / "dangling" / "run"), "which does not exist")}
            for label, (folder, wanted) in cases.items():
                for argv in (["run", "--models", MODEL, "--host", server.url, *FAST, "--out", folder],
                             ["plan", "--models", MODEL, "--out", folder], ["status", folder],
                             ["demo", "--out", folder], ["merge", folder, str(tmp / "shard")]):
                    with self.subTest(label, command=argv[0]):
                        code, out, err = run_main(argv)
                        self.assertEqual(code, 2, out + err)
                        assert_one_clean_error(self, err)
                        self.assertIn(wanted, err)
            self.assertEqual(server.chat_count(), 0)
        self.assertEqual(sorted(p.name for p in tmp.iterdir()), ["dangling"])

    def test_generate_refuses_an_absurd_episode_count(self):
        path = self.make_tmp() / "tasks.json"
        code, _, err = run_main(["generate", "--episodes", "1000000000", "--tasks", str(path)])
        self.assertEqual(code, 2)
        assert_one_clean_error(self, err)
        self.assertIn("10000", err)
        self.assertFalse(path.exists())


class ResultsShapeTest(TempDirMixin, unittest.TestCase):
    def analyze(self, results) -> tuple[int, str]:
        path = self.make_tmp() / "results.json"
        path.write_text(json.dumps(results))
        code, _, err = run_main(["analyze", "--results", str(path)])
        return code, err

    def test_null_compaction_tokens_is_named_not_a_traceback(self):
        results = reference_results(load_tasks())
        results["compaction_tokens"] = None
        code, err = self.analyze(results)
        self.assertEqual(code, 2)
        assert_one_clean_error(self, err)
        self.assertIn("`compaction_tokens` is not an object", err)

    def test_each_problem_is_named(self):
        good = reference_results(load_tasks())
        self.assertEqual(bank.results_shape_problems(good), [])

        def changed(edit):
            results = json.loads(json.dumps(good))
            edit(results)
            return bank.results_shape_problems(results)

        cases = {
            "not an object": (lambda r: None, "not an object"),
            "missing models": (lambda r: r.pop("models"), "`models` is missing"),
            "regimes of the wrong type": (lambda r: r.update(regimes="R0,R1"), "`regimes` is not a list"),
            "probes of the wrong type": (lambda r: r.update(probes={}), "`probes` is not a list"),
            "unknown class": (lambda r: r["probes"][0].update({"class": "nearly"}), "unknown class 'nearly'"),
            "unknown regime": (lambda r: r["probes"][0].update(regime="R9"), "regime 'R9'"),
            "duplicated probe": (lambda r: r["probes"].append(dict(r["probes"][0])), "repeats"),
            "non-integer answer": (lambda r: r["probes"][0].update(answer="412"), "not an integer or null"),
            "boolean answer": (lambda r: r["probes"][0].update(answer=True), "not an integer or null"),
            "compaction tokens a list": (lambda r: r.update(compaction_tokens=[]), "`compaction_tokens`"),
            "compaction stage an object": (lambda r: r.update(compaction_stage={}), "`compaction_stage`"),
            "budget not a number": (lambda r: r["probes"][0].update(budget="256"), "no usable budget"),
            "sample not a number": (lambda r: r["probes"][0].update(sample=[0]), "no usable sample"),
            "samples unbounded": (lambda r: r.update(samples=1e300), "`samples` is not a whole number"),
            "samples below one": (lambda r: r.update(samples=-1), "`samples` is not a whole number"),
            "budgets not numbers": (lambda r: r.update(budgets=[[1]]), "`budgets` is not a list"),
            "a model named twice": (lambda r: r.update(models=r["models"] + r["models"][:1]), "more than once"),
            "temperature a word": (lambda r: r.update(temperature="hot"), "`temperature` is not a number"),
            "gate a list": (lambda r: r.update(gate=[1]), "`gate` is not an object"),
            "recheck a word": (lambda r: r.update(recheck="x"), "`recheck` is not an object"),
        }
        for label, (edit, expected) in cases.items():
            with self.subTest(label):
                if label == "not an object":
                    problems = bank.results_shape_problems([good])
                else:
                    problems = changed(edit)
                self.assertTrue(any(expected in p for p in problems), problems)
        # a null answer is an omission, not a problem
        self.assertEqual(changed(lambda r: r["probes"][0].update(answer=None)), [])

    def test_a_sweep_bank_is_read_and_its_repeats_are_named_with_their_variant(self):
        sweep = reference_results(load_tasks())
        sweep.update(budgets=[128, records.DEFAULT_BUDGET], samples=2, temperature=0.7)
        sweep["probes"] += [{**p, "budget": b, "sample": s} for p in sweep["probes"]
                            for b, s in ((128, 0), (128, 1), (records.DEFAULT_BUDGET, 1))]
        self.assertEqual(bank.results_shape_problems(sweep), [])
        path = self.make_tmp() / "results.json"
        path.write_text(json.dumps(sweep))
        code, out, err = run_main(["analyze", "--results", str(path)])
        self.assertEqual(code, 0, err)
        self.assertIn("## Budget sweep (exploratory)", out)
        self.assertIn("## Repeated samples (exploratory)", out)
        sweep["probes"].append(dict(sweep["probes"][-1]))
        problems = bank.results_shape_problems(sweep)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn(f"repeats {sweep['probes'][-1]['model']}", problems[0])
        self.assertIn(f"(budget {records.DEFAULT_BUDGET}, sample 1)", problems[0])

    def test_an_empty_bank_is_analysed_and_a_bottomless_file_is_one_line(self):
        code, out, err = run_main(["analyze", "--results", str(self.write({"models": ["m"], "probes": [],
                                                                             "regimes": ["R0", "R1", "R2"]}))])
        self.assertEqual(code, 0, err)
        self.assertIn("UNINFORMATIVE", out)
        deep = self.make_tmp() / "deep.json"
        deep.write_text("[" * 100000 + "]" * 100000)
        code, _, err = run_main(["analyze", "--results", str(deep)])
        self.assertEqual(code, 2)
        assert_one_clean_error(self, err)
        self.assertIn("nested too deeply", err)

    def test_a_constraints_probe_of_an_undeclared_sample_is_named(self):
        results = json.loads((REPO / "results" / "smollm2-135m-constraints" / "results.json").read_text())
        results["probes"].append(dict(results["probes"][0], sample=1, **{"class": "violating"}))
        self.assertIn("(first: budget 256, sample 1)", " ".join(bank.results_shape_problems(results)))

    def test_the_scripts_end_cleanly_with_their_output_closed(self):
        bank = self.write(reference_results(load_tasks()))
        for argv in ([str(REPO / "scripts" / "run_pilot.py"), "analyze", "--results", str(bank)],
                     [str(REPO / "paper" / "make_figures.py"), str(bank), "--out", str(self.make_tmp())]):
            with self.subTest(argv[0]):
                proc = subprocess.run(["bash", "-c", 'exec "$0" "$@" 1>&-', sys.executable, *argv],
                                      capture_output=True, text=True, timeout=120)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertNotIn("Traceback", proc.stderr)

    def write(self, results) -> Path:
        path = self.make_tmp() / "results.json"
        path.write_text(json.dumps(results))
        return path

    def test_many_problems_are_summarised_on_one_line(self):
        results = reference_results(load_tasks())
        for probe in results["probes"][:10]:
            probe["class"] = "nearly"
        code, err = self.analyze(results)
        self.assertEqual(code, 2)
        assert_one_clean_error(self, err)
        self.assertIn("and 7 more", err)


class DiskFullTest(TempDirMixin, unittest.TestCase):
    def test_full_disk_while_journalling(self):
        out = self.make_tmp() / "run"
        real_write = os.write
        writes = []

        def filling_disk(fd, data):
            writes.append(len(data))
            if len(writes) > 20:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_write(fd, data)

        with FakeOllama(models=[MODEL]) as server:
            argv = ["run", "--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "2", *FAST]
            with mock.patch.object(os, "write", filling_disk):
                code, _, err = run_main(argv)
            self.assertEqual(code, 4, err)
            assert_one_clean_error(self, err)
            self.assertIn("the disk is full: could not write", err)
            self.assertIn("gemma3_4b_R", err)
            self.assertIn("nothing already journalled was lost", err)
            self.assertIn("resume with: python3", err)
            sent = server.chat_count()
            journalled = sum(len(p.read_text().splitlines()) for p in (out / "raw").glob("*.jsonl"))
            self.assertEqual(sent, journalled + 1)                  # the call whose record could not be written
            code, _, err = run_main(argv)
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count() - sent, CALLS_2_EPISODES - journalled)
        self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)

    def test_full_disk_while_saving_the_manifest(self):
        out = self.make_tmp() / "run"
        real_write_atomic = runfolder.write_atomic
        saves = []

        def filling_disk(path, data):
            if path.name == "manifest.json":
                saves.append(path)
                if len(saves) > 2:
                    raise OSError(errno.ENOSPC, "No space left on device", str(path))
            return real_write_atomic(path, data)

        with FakeOllama(models=[MODEL]) as server:
            argv = ["run", "--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "1", *FAST]
            with mock.patch.object(runfolder, "write_atomic", filling_disk):
                code, _, err = run_main(argv)
            self.assertEqual(code, 4, err)
            assert_one_clean_error(self, err)
            self.assertIn("manifest.json", err)
            sent = server.chat_count()
            code, _, err = run_main(argv)
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count() - sent, 32 - sent)            # nothing sent twice
        self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)

    def test_exit_code_is_documented(self):
        self.assertIn("4 the disk is full", " ".join(cli.build_parser("pilot").format_help().split()))
        guide = (records.REPO_ROOT / "scripts" / "README.md").read_text()
        self.assertIn("4 the disk is full", " ".join(guide.split()))



# ------------------------------------------------------------------------------------------
# 5. Resume is forgiving where it is safe
# ------------------------------------------------------------------------------------------
class ForgivingResumeTest(TempDirMixin, unittest.TestCase):
    def setUp(self):
        self.server = FakeOllama(models=[MODEL]).__enter__()
        self.addCleanup(self.server.__exit__, None, None, None)
        self.port = self.server.httpd.server_address[1]
        self.out = self.make_tmp() / "run"
        code, _, err = run_main(["run", "--models", MODEL, "--host", self.server.url, "--out", str(self.out),
                                 "--episodes", "1", *FAST])
        self.assertEqual(code, 0, err)
        self.unfinish()

    def unfinish(self):
        """Forget that R2 finished, so that a resume has a cell to run."""
        path = self.out / "manifest.json"
        manifest = json.loads(path.read_text())
        manifest["cells"].pop(f"{MODEL}|R2|0", None)
        path.write_text(json.dumps(manifest))
        raw = self.out / "raw" / "gemma3_4b_R2.jsonl"
        if raw.exists():
            raw.unlink()

    def resume(self, *extra, env=None):
        with mock.patch.dict(os.environ, env or {}):
            return run_main(["run", "--models", MODEL, "--out", str(self.out), "--episodes", "1", *FAST, *extra])

    def manifest(self) -> dict:
        return json.loads((self.out / "manifest.json").read_text())

    def test_the_same_server_under_another_spelling(self):
        spellings = {
            "localhost": (["--host", f"http://localhost:{self.port}"], {}, f"http://localhost:{self.port}"),
            "OLLAMA_HOST without a scheme": ([], {"OLLAMA_HOST": f"127.0.0.1:{self.port}"}, self.server.url),
            "trailing slash": (["--host", f"http://localhost:{self.port}/"], {}, f"http://localhost:{self.port}"),
        }
        for label, (extra, env, recorded) in spellings.items():
            with self.subTest(label):
                self.unfinish()
                code, _, err = self.resume(*extra, env=env)
                self.assertEqual(code, 0, err)
                manifest = self.manifest()
                self.assertEqual(manifest["lock"]["base_url"], self.server.url)
                self.assertIn(recorded, manifest["base_url_spellings"])
                self.assertEqual(manifest["cells"][f"{MODEL}|R2|0"]["status"], "COMPLETE")
        self.assertEqual(self.manifest()["base_url_spellings"], [self.server.url, f"http://localhost:{self.port}"])
        # every record of the run carries the configuration hash the run began with
        hashes = {json.loads(line)["config_sha256"] for path in (self.out / "raw").glob("*.jsonl")
                  for line in path.read_text().splitlines()}
        self.assertEqual(hashes, {self.manifest()["lock"]["config_sha256"]})

    def test_another_server_is_still_refused(self):
        with FakeOllama(models=[MODEL]) as other:
            code, _, err = self.resume("--host", other.url)
        self.assertEqual(code, 2)
        self.assertIn("base_url", err)

    def test_another_concurrency_is_allowed_warned_once_and_recorded(self):
        code, _, err = self.resume("--host", self.server.url, "--concurrency", "2")
        self.assertEqual(code, 0, err)
        warnings = [line for line in err.splitlines() if line.startswith("warning:")]
        self.assertEqual(len(warnings), 1, err)
        self.assertIn("resuming with --concurrency 2, but this run used 1 before", warnings[0])
        self.assertEqual(self.manifest()["concurrency_used"], [1, 2])

    def test_plan_counts_the_runs_episodes_and_models_as_status_does(self):
        code, plan, _ = run_main(["plan", "--out", str(self.out)])
        self.assertEqual(code, 0)
        self.assertIn("total: 32 calls (20 done)", plan)
        self.assertIn(f"| {MODEL} | R2 | 1 | 12 | 0 |", plan)
        code, status, _ = run_main(["status", "--out", str(self.out)])
        self.assertEqual(code, 0)
        self.assertIn("2 complete, 1 left", status)

    def test_status_verify_and_score_take_the_folder_as_they_are_typed_after_gate(self):
        """`status RUN_DIR` as `gate RUN_DIR` takes it (it was refused as an unrecognized argument)."""
        for command in ("status", "verify", "score"):
            with self.subTest(command):
                by_option = run_main([command, "--out", str(self.out)])
                self.assertEqual(run_main([command, str(self.out)]), by_option)
        code, _, err = run_main(["status", str(self.out), "--out", str(self.make_tmp())])
        self.assertEqual(code, 2)
        self.assertIn("two run folders named", err)


# ------------------------------------------------------------------------------------------
# 6. Every hint is right
# ------------------------------------------------------------------------------------------
class HintsTest(TempDirMixin, unittest.TestCase):
    def test_a_refused_key_names_the_variable_and_the_option(self):
        from fake_servers import FakeOpenAI
        with FakeOpenAI(models=[MODEL]) as server:
            server.api_key = "sk-right"
            for label, extra, env, expected in (
                    ("wrong key", [], {"OPENAI_API_KEY": "sk-wrong"}, "the key in $OPENAI_API_KEY"),
                    ("no key in a named variable", ["--api-key-env", "MY_KEY"], {"MY_KEY": ""},
                     "--api-key-env names $MY_KEY, which is empty")):
                with self.subTest(label), mock.patch.dict(os.environ, env):
                    out = self.make_tmp() / "run"
                    code, _, err = run_main(["run", "--backend", "openai", "--base-url", server.url, "--models", MODEL,
                                             "--out", str(out), *extra, *FAST])
                    self.assertEqual(code, 2)
                    assert_one_clean_error(self, err)
                    self.assertIn(expected, err)
                    self.assertIn("--api-key-env", err)
                    self.assertNotIn("sk-wrong", err)

    def test_a_key_the_chat_endpoint_refuses_is_found_before_any_folder(self):
        """--api-key-env naming an unset or empty variable, or a key the server refuses, was found only after the
        folder was made and a cell had FAILED, where the server (llama-server) leaves /v1/models open to all."""
        from fake_servers import FakeOpenAI

        class OpenModelList(FakeOpenAI):
            def handler_class(self):
                class Handler(super().handler_class()):
                    def _authorized(self):
                        return self.command == "GET" or super()._authorized()
                return Handler

        with OpenModelList(models=[MODEL]) as server:
            server.api_key = "sk-right"
            cases = (("unset variable", ["--api-key-env", "NO_SUCH_KEY_VAR"], {}, "$NO_SUCH_KEY_VAR, which is not set"),
                     ("empty variable", ["--api-key-env", "MY_KEY"], {"MY_KEY": ""}, "$MY_KEY, which is empty"),
                     ("wrong key", [], {"OPENAI_API_KEY": "sk-wrong"}, "refused the check: POST"),
                     ("no key", [], {}, "no key was sent: $OPENAI_API_KEY"))
            for label, extra, env, expected in cases:
                with self.subTest(label), mock.patch.dict(os.environ, env):
                    os.environ.pop("NO_SUCH_KEY_VAR", None)
                    if label == "no key":
                        os.environ.pop("OPENAI_API_KEY", None)
                    out = self.make_tmp() / "run"
                    code, _, err = run_main(["run", "--backend", "openai", "--base-url", server.url, "--models", MODEL,
                                             "--out", str(out), *extra, *FAST])
                    self.assertEqual(code, 2, err)
                    assert_one_clean_error(self, err)
                    self.assertIn(expected, err)
                    self.assertNotIn("sk-wrong", err)
                    self.assertFalse(out.exists())
            self.assertEqual(server.chat_count(), 0)
            with mock.patch.dict(os.environ, {"MY_KEY": "sk-right"}):
                out = self.make_tmp() / "run"
                code, _, err = run_main(["run", "--backend", "openai", "--base-url", server.url, "--models", MODEL,
                                         "--out", str(out), "--episodes", "1", "--api-key-env", "MY_KEY", *FAST])
                self.assertEqual(code, 0, err)

    def test_every_missing_model_is_named(self):
        with FakeOllama(models=[MODEL]) as server:
            code, _, err = run_main(["run", "--models", f"a:1,{MODEL},b:2", "--host", server.url, "--out",
                                     str(self.make_tmp() / "run"), *FAST])
        self.assertEqual(code, 2)
        assert_one_clean_error(self, err)
        self.assertIn("models 'a:1', 'b:2' are not on the server", err)
        self.assertIn("ollama pull a:1; ollama pull b:2", err)

    def test_generate_and_merge_never_suggest_an_option_they_do_not_take(self):
        root = self.make_tmp()
        (root / "file").write_text("not a folder")
        code, _, err = run_main(["generate", "--tasks", str(root / "file" / "tasks.json")])
        self.assertEqual(code, 2)
        assert_one_clean_error(self, err)
        self.assertNotIn("--out", err)
        self.assertIn("--tasks", err)
        code, _, err = run_main(["merge", str(root / "merged"), str(root / "no-such-shard")])
        self.assertEqual(code, 2)
        assert_one_clean_error(self, err)
        self.assertNotIn("--out", err)

    def test_merge_advice_on_an_incomplete_bank_works(self):
        root = self.make_tmp()
        with FakeOllama(models=[MODEL]) as server:
            code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(root / "s1"),
                                     "--episodes", "1", "--shard", "1/2", *FAST])
            self.assertEqual(code, 0, err)
            code, stdout, _ = run_main(["merge", str(root / "half"), str(root / "s1")])
            self.assertEqual(code, 3)
            self.assertIn("merge them again into a new folder (or remove", stdout)
            self.assertIn("--allow-partial", stdout)
            code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(root / "s2"),
                                     "--episodes", "1", "--shard", "2/2", *FAST])
            self.assertEqual(code, 0, err)
        code, _, err = run_main(["merge", str(root / "whole"), str(root / "s1"), str(root / "s2")])
        self.assertEqual(code, 0, err)
        code, analysis, _ = run_main(["analyze", "--out", str(root / "half"), "--allow-partial"])
        self.assertEqual(code, 0)

    def test_status_prints_the_command_that_resumes_and_it_does(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            server.faults = [("status", 400, {"error": "bad"})]
            code, _, _ = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out),
                                   "--episodes", "2", "--concurrency", "2", *FAST])
            self.assertEqual(code, 3)
            code, status, _ = run_main(["status", "--out", str(out)])
            self.assertEqual(code, 0)
            command = next(line for line in status.splitlines() if "finish them with: " in line).split(
                "finish them with: ", 1)[1]
            self.assertEqual(command, f"python3 scripts/run_pilot.py --out {out} --models {MODEL} --episodes 2 "
                                      f"--host {server.url} --recheck 0 --concurrency 2")     # every option kept
            argv = command.split()[2:]
            code, _, err = run_main([*argv, *FAST])
            self.assertEqual(code, 0, err)
            self.assertEqual(err.count("warning:"), 0)

    def test_run_says_what_comes_next(self):
        out = self.make_tmp() / "run"
        with FakeOllama(models=[MODEL]) as server:
            code, stdout, _ = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out),
                                        "--episodes", "1", *FAST])
        self.assertEqual(code, 0)
        self.assertIn(f"next: score the run with `python3 scripts/run_pilot.py score --out {out}`", stdout)


# ------------------------------------------------------------------------------------------
# 7. Portable: the folder lock without fcntl, safe file names, spreadsheet-safe CSV
# ------------------------------------------------------------------------------------------
HOLD_LOCK_WITHOUT_FCNTL = """
import sys, time
from pathlib import Path
sys.modules["fcntl"] = None
sys.modules["msvcrt"] = None
sys.path.insert(0, str(Path(sys.argv[1]).parent))
from pilot.runfolder import RunLock
lock = RunLock(Path(sys.argv[2]))
lock.acquire()
print(lock.method, flush=True)
time.sleep(60)
"""


class PortableLockTest(TempDirMixin, unittest.TestCase):
    def load_without_fcntl(self):
        """The runner's package imported afresh on a platform with neither fcntl nor msvcrt."""
        import importlib
        import types
        ours = lambda name: name == "pilot" or name.startswith("pilot.")  # noqa: E731
        saved = {name: m for name, m in sys.modules.items() if ours(name)}
        for name in saved:
            del sys.modules[name]
        try:
            with mock.patch.dict(sys.modules, {"fcntl": None, "msvcrt": None}):
                fresh = {name: importlib.import_module(f"pilot.{name}") for name in ("cli", "runfolder", "records")}
                importlib.import_module("pilot.studies")
                package = {name: m for name, m in sys.modules.items() if ours(name)}
        finally:
            for name in [n for n in sys.modules if ours(n)]:
                del sys.modules[name]
            sys.modules.update(saved)
        return types.SimpleNamespace(main=fresh["cli"].main, RunLock=fresh["runfolder"].RunLock,
                                     PilotError=fresh["records"].PilotError, package=package)

    def run_without_fcntl(self, module, argv):
        import contextlib
        out, err = io.StringIO(), io.StringIO()
        # the fresh package alone in place while it runs (sys.modules as it was restored after): a command imports
        # its modules when it runs, and they must be the fresh package's, which has no fcntl, not this process's
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), mock.patch.dict(sys.modules):
            for name in [n for n in sys.modules if n == "pilot" or n.startswith("pilot.")]:
                del sys.modules[name]
            sys.modules.update({**module.package, "fcntl": None, "msvcrt": None})
            code = module.main(argv)
        return code, err.getvalue()

    def test_the_runner_never_imports_fcntl_unconditionally(self):
        for path in [records.REPO_ROOT / "scripts" / "run_pilot.py", *(records.REPO_ROOT / "scripts" / "pilot").rglob("*.py")]:
            with self.subTest(path.name):
                self.assertIsNone(re.search(r"^import fcntl", path.read_text(), re.MULTILINE))

    def test_two_runners_on_one_folder_without_fcntl(self):
        module = self.load_without_fcntl()
        self.assertEqual(module.RunLock(Path(".")).method, "exclusive file")
        out = self.make_tmp() / "run"
        out.mkdir()
        holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK_WITHOUT_FCNTL,
                                   str(records.REPO_ROOT / "scripts" / "run_pilot.py"), str(out)],
                                  stdout=subprocess.PIPE, text=True)
        self.addCleanup(holder.stdout.close)
        self.addCleanup(lambda: holder.poll() is None and (holder.kill(), holder.wait()))
        self.assertEqual(holder.stdout.readline().strip(), "exclusive file")
        with FakeOllama(models=[MODEL]) as server:
            argv = ["run", "--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "1", *FAST]
            code, err = self.run_without_fcntl(module, argv)
            self.assertEqual(code, 2)
            assert_one_clean_error(self, err)
            self.assertIn(f"another runner (process {holder.pid})", err)
            self.assertEqual(server.chat_count(), 0)
            holder.kill()                       # a dead holder leaves its lock file behind ...
            holder.wait()
            self.assertTrue((out / ".lock").exists())
            code, err = self.run_without_fcntl(module, argv)   # ... which does not block the next runner
            self.assertEqual(code, 0, err)
        self.assertFalse((out / ".lock").exists())

    def test_a_lock_file_being_written_is_respected_and_an_old_unreadable_one_is_not(self):
        module = self.load_without_fcntl()
        out = self.make_tmp()
        (out / ".lock").write_text("")
        with self.assertRaises(module.PilotError):
            module.RunLock(out).acquire()
        old = time.time() - 60
        os.utime(out / ".lock", (old, old))
        lock = module.RunLock(out)
        lock.acquire()
        self.assertEqual((out / ".lock").read_text(), str(os.getpid()))
        lock.release()


class SafeNamesTest(TempDirMixin, unittest.TestCase):
    def test_file_names_never_start_with_a_dot_or_a_dash(self):
        for model in (".hidden", "-rf", "..", "...", "--", ".-x", "-" * 200, "." * 200):
            with self.subTest(model=model):
                name = runfolder.safe_name(model)
                self.assertNotIn(name[0], ".-")
                self.assertRegex(name, r"^[A-Za-z0-9._-]{1,100}$")
        self.assertEqual(runfolder.safe_name("gemma3:4b"), "gemma3_4b")

    def test_formula_like_model_names_are_quoted_in_probes_csv(self):
        models = ["=cmd|' /C calc'!A0", "+1", "-x", "@SUM(A1)", MODEL]
        out = self.make_tmp() / "run"
        with FakeOllama(models=models) as server:
            code, _, err = run_main(["run", "--models=" + ",".join(models), "--host", server.url, "--out", str(out),
                                     "--episodes", "1", *FAST])
            self.assertEqual(code, 0, err)
        self.assertEqual(run_main(["score", "--out", str(out)])[0], 0)
        with open(out / "probes.csv", newline="") as fh:
            written = {row["model"] for row in csv.DictReader(fh)}
        self.assertEqual(written, {"'=cmd|' /C calc'!A0", "'+1", "'-x", "'@SUM(A1)", MODEL})
        self.assertFalse([p for p in (out / "raw").iterdir() if p.name[0] in ".-"])


if __name__ == "__main__":
    unittest.main()


# ------------------------------------------------------------------------------------------
# 7. Replies no server should give (the hostile review)
# ------------------------------------------------------------------------------------------
class OddOllama(FakeOllama):
    """A fake Ollama that answers the checks before the first call with `odd`: {(method, path): JSON}."""

    odd: dict = {}

    def handler_class(self):
        owner, base = self, super().handler_class()

        class Handler(base):
            def do_GET(self):
                if ("GET", self.path) in owner.odd:
                    return self._send(200, owner.odd[("GET", self.path)])
                return super().do_GET()

            def do_POST(self):
                if ("POST", self.path) in owner.odd:
                    self._body()
                    return self._send(200, owner.odd[("POST", self.path)])
                return super().do_POST()
        return Handler


class PartsOpenAI(FakeOpenAI):
    """A fake OpenAI-compatible server whose replies give their text as a list of content parts, as the API allows."""

    def send_reply(self, handler, body, text_override=None, deadline=None):
        send = handler._send

        def as_parts(status, payload, *args, **kwargs):
            if status == 200 and isinstance(payload, dict) and payload.get("choices"):
                text = payload["choices"][0]["message"]["content"]
                payload["choices"][0]["message"]["content"] = [{"type": "text", "text": text[:7]},
                                                               {"type": "text", "text": text[7:]}]
            return send(status, payload, *args, **kwargs)
        handler._send = as_parts
        try:
            return super().send_reply(handler, body, text_override, deadline)
        finally:
            handler._send = send


class OddRepliesTest(TempDirMixin, unittest.TestCase):
    def test_checks_answered_with_what_no_server_gives_are_one_line_before_any_folder(self):
        """Each ended in a traceback (exit 1): now a reply that is not an object is one line, exit 2, before any
        folder is made, and a detail of the wrong kind is a detail the server did not give."""
        cases = {"tags a list": ({("GET", "/api/tags"): [1, 2]}, 2),
                 "a name that is a list": ({("GET", "/api/tags"): {"models": [{"name": [MODEL]}]}}, 2),
                 "details a list": ({("GET", "/api/tags"): {"models": [{"name": MODEL, "details": [1]}]}}, 0),
                 "show a list": ({("POST", "/api/show"): []}, 2),
                 "model_info a list": ({("POST", "/api/show"): {"model_info": [1]}}, 0),
                 "version a list": ({("GET", "/api/version"): ["0.12"]}, 2)}
        for label, (odd, expected) in cases.items():
            with self.subTest(label), OddOllama(models=[MODEL]) as server:
                server.odd = odd
                out = self.make_tmp() / "run"
                code, _, err = run_main(["run", "--models", MODEL, "--host", server.url, "--out", str(out),
                                         "--episodes", "1", *FAST])
                self.assertEqual(code, expected, err)
                if expected == 2:
                    assert_one_clean_error(self, err)
                    self.assertFalse(out.exists())

    def test_text_given_as_content_parts_is_read_as_its_text(self):
        runs = {}
        for server_class in (FakeOpenAI, PartsOpenAI):
            with server_class(models=[MODEL]) as server:
                out = self.make_tmp() / "run"
                code, _, err = run_main(["--backend", "openai", "--base-url", server.url, "--models", MODEL,
                                         "--out", str(out), "--episodes", "1", *FAST])
                self.assertEqual(code, 0, err)
                runs[server_class] = [(p["question_id"], p["answer"], p["class"])
                                      for p in json.loads((out / "results.json").read_text())["probes"]]
        self.assertEqual(runs[PartsOpenAI], runs[FakeOpenAI])
