"""`audit --judge MODEL` (issue 44): a model on the user's own server decides the requests,
instructions, decisions and open tasks the rules found; every other row stays the rules'. The judge
is an in-process server speaking Ollama's or the OpenAI API's shape (tests/fake_servers.py), with its
replies and token probabilities set per test; real sockets, files and processes throughout."""
import csv
import html
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import unittest
from pathlib import Path

import audit_fixtures as fx
import test_judge_check as check
from fake_servers import FakeOllama, FakeOpenAI
from helpers import REPO, TempDirMixin, run_main

EXAMPLE = REPO / "tasks" / "sessions" / "audit-example"
PINNED = REPO / "results" / "audit-example"
RUNNER = REPO / "scripts" / "run_pilot.py"
OUTPUTS = ("audit.csv", "analysis.md", "report.html", "figures/fig_audit.svg")
MODEL = "judge:1b"
BELOW = "below the protocol's agreement threshold"


def rows_of(out: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO((out / "audit.csv").read_text(encoding="utf-8"))))


def item_of(prompt: str) -> str:
    """The item the default prompt asks about."""
    return prompt.split("=== ITEM ===")[1].split("=== END OF ITEM ===")[0]


def push_is_lost(prompt: str) -> str:
    return "LOST" if "Never push" in item_of(prompt) else "KEPT"


class JudgeAuditTest(TempDirMixin, unittest.TestCase):
    def audit(self, server, *argv: str, out: Path | None = None) -> tuple[int, str, str, Path]:
        out = out or self.make_tmp() / "audit"
        where = ["--host", server.url] if isinstance(server, FakeOllama) else \
            ["--backend", "openai", "--base-url", server.url]
        code, stdout, stderr = run_main(["audit", str(EXAMPLE), "--out", str(out), "--quiet",
                                         "--judge", MODEL, *where, *argv])
        return code, stdout, stderr, out

    def test_the_judge_changes_exactly_the_judged_rows(self):
        with FakeOllama(models=(MODEL,)) as server:
            server.judge = push_is_lost
            code, stdout, stderr, out = self.audit(server)
            sent = json.dumps(server.chat_requests)
        self.assertEqual(code, 0, stderr)
        # the lossy summaries repeat the user's key: the judge is sent it masked
        self.assertIn("Staging runs as tenant T-4471 with the key sk-proj-", sent)
        self.assertNotIn(fx.KEY, sent)
        judged = rows_of(out)
        rules = list(csv.DictReader(io.StringIO((PINNED / "audit.csv").read_text("utf-8"))))
        self.assertEqual(len(judged), len(rules))
        changed = []
        for mine, theirs in zip(judged, rules):
            self.assertEqual(mine["rules_status"], theirs["status"])
            self.assertEqual({k: v for k, v in mine.items() if k not in
                              ("status", "judged_by", "rules_status")},
                             {k: v for k, v in theirs.items() if k != "status"})
            if mine["category"] in ("request", "instruction") and mine["kind"] != "invented":
                self.assertEqual(mine["judged_by"], "judge")
            else:
                self.assertTrue(mine["judged_by"].startswith("rules"), mine)
                self.assertEqual(mine["status"], theirs["status"])
            if mine["status"] != theirs["status"]:
                changed.append((mine["file"], mine["compaction"], mine["item"], mine["status"]))
        # "Never push to main." is lost by the judge wherever the rules said otherwise
        self.assertEqual(sorted(changed), sorted(
            (r["file"], r["compaction"], r["item"], "lost") for r in rules
            if r["needed"] == "yes" and r["item"] == "Never push to main."))
        # one line names the judge and its agreement on every page it touched, the rules beside
        pages = {"stdout": stdout,
                 "analysis.md": (out / "analysis.md").read_text(encoding="utf-8"),
                 "report.html": html.unescape(re.sub(r"<[^>]+>", "", (out / "report.html")
                                                     .read_text(encoding="utf-8")))}
        for name, text in pages.items():
            with self.subTest(name):
                self.assertIn(f"the judge model {MODEL}", text)
                self.assertIn("tasks/sessions/judge-prompt.txt", text)
                self.assertIn("Agreement not measured: run", text)
                self.assertIn("judge-check --judge judge:1b", text)
                self.assertIn(BELOW, text)
                self.assertIn("the rules alone: 24 kept, 0 lost, 4 wrong", text)
                self.assertIn("each reply's word, as the server gave no probabilities", text)
        lock = (out / "judge-lock.json").read_text(encoding="utf-8")
        self.assertIn(MODEL, lock)
        self.assertIn('"threshold": 0.5', lock)

    def test_the_agreement_judge_check_measured_is_named_on_every_page(self):
        root = self.make_tmp()
        labels, logs = check.write_labels(root)
        with FakeOllama(models=(MODEL,)) as server:
            server.judge = lambda prompt: check.judge_by_word(prompt) \
                if "SAYS-" in item_of(prompt) else push_is_lost(prompt)
            code, _, stderr = run_main(["judge-check", "--judge", MODEL, "--host", server.url,
                                        "--labels", str(labels), "--real-logs", str(logs),
                                        "--out", str(root / "check"), "--quiet"])
            self.assertEqual(code, 0, stderr)
            code, stdout, stderr, out = self.audit(server, "--judge-agreement",
                                                   str(root / "check"), "--labels", str(labels))
            self.assertEqual(code, 0, stderr)
            other = root / "other.txt"
            other.write_text("Asked again: {summary}\n=== ITEM ===\n{item}\n=== END OF ITEM "
                             "===\n{category}", encoding="utf-8")
            code, unmatched, stderr, _ = self.audit(
                server, "--judge-agreement", str(root / "check"), "--labels", str(labels),
                "--judge-prompt", str(other))
            self.assertEqual(code, 0, stderr)
        pages = {"stdout": stdout,
                 "analysis.md": (out / "analysis.md").read_text(encoding="utf-8"),
                 "report.html": html.unescape((out / "report.html").read_text(encoding="utf-8"))}
        for name, text in pages.items():
            with self.subTest(name):
                self.assertIn("The judge judge:1b, measured against the held-out hand labels",
                              text)
                self.assertIn(f"{BELOW} (kappa 0.6) for request, decision and open_task", text)
        # another prompt than the one judge-check asked: not measured, read as below
        self.assertIn(f"holds no judge-check of {MODEL}", unmatched)
        self.assertIn(BELOW, unmatched)

    def test_without_judge_nothing_is_sent_and_the_outputs_are_the_rules_alone(self):
        with FakeOllama(models=(MODEL,)) as server:
            out = self.make_tmp() / "audit"
            code, _, stderr = run_main(["audit", str(EXAMPLE), "--out", str(out), "--quiet",
                                        "--host", server.url])
            self.assertEqual(server.requests, [])
        self.assertEqual(code, 0, stderr)
        for name in OUTPUTS:
            self.assertEqual((out / name).read_bytes(), (PINNED / name).read_bytes(), name)
        self.assertFalse((out / "judge-lock.json").exists())

    def test_a_judge_that_stops_answering_ends_in_one_line_and_its_calls_are_kept(self):
        out = self.make_tmp() / "audit"
        with FakeOllama(models=(MODEL,)) as server:
            def slow_after_two(prompt):
                if server.chat_count() > 2:
                    time.sleep(2)
                return "KEPT"
            server.judge = slow_after_two
            code, _, stderr, _ = self.audit(server, "--read-timeout", "0.3", "--give-up-after",
                                            "0.5", out=out)
        self.assertEqual(code, 3, stderr)
        self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
        self.assertIn("stopped answering", stderr)
        self.assertIn("2 calls made are kept", stderr)
        self.assertEqual(len((out / "judge-calls.jsonl").read_bytes().splitlines()), 2)
        self.assertFalse((out / "audit.csv").exists())
        with FakeOllama(models=(MODEL,)) as server:
            server.judge = lambda prompt: "KEPT"
            code, _, stderr, _ = self.audit(server, out=out)
            self.assertEqual(code, 0, stderr)
            self.assertEqual(server.chat_count(), 9 - 2)        # 9 distinct calls in all

    def test_a_reply_the_judge_cannot_read_keeps_the_rules_status_and_is_counted(self):
        with FakeOllama(models=(MODEL,)) as server:
            server.judge = lambda prompt: "Well, it depends."
            code, stdout, stderr, out = self.audit(server)
        self.assertEqual(code, 0, stderr)
        rows = [r for r in rows_of(out) if r["category"] in ("request", "instruction")]
        self.assertTrue(rows)
        for row in rows:
            self.assertEqual(row["status"], row["rules_status"])
            self.assertEqual(row["judged_by"], "rules: reply unreadable")
        self.assertIn("The rules' status stands for 17 whose reply the judge gave could not be "
                      "read", stdout)
        self.assertIn("The judge decided 0 of 17 items",
                      (out / "analysis.md").read_text(encoding="utf-8"))

    def test_both_backends_read_the_probabilities_and_a_threshold_moves_a_verdict(self):
        def unsure(prompt):
            return ("KEPT", {"KEPT": 0.6, "LOST": 0.3, "CHANGED": 0.1}) \
                if "Never push" in item_of(prompt) else "KEPT"
        for make in (FakeOllama, FakeOpenAI):
            for threshold, expected in (("0.5", "kept"), ("0.7", "lost")):
                with self.subTest(make.__name__, threshold=threshold), \
                        make(models=(MODEL,)) as server:
                    server.context_window = 32768
                    server.judge = unsure
                    code, _, stderr, out = self.audit(server, "--judge-threshold", threshold)
                    self.assertEqual(code, 0, stderr)
                    self.assertTrue(all(body.get("logprobs") for body in server.chat_requests))
                    pushed = {r["status"] for r in rows_of(out)
                              if r["needed"] == "yes" and r["item"] == "Never push to main."}
                    self.assertEqual(pushed, {expected})
                    self.assertIn(f"kept where P(KEPT) reached {threshold}, the server giving "
                                  "probabilities for 4 of them",
                                  (out / "analysis.md").read_text(encoding="utf-8"))

    def test_a_hostile_prompt_file_is_refused_in_one_line_before_any_call(self):
        folder = self.make_tmp()
        missing = folder / "missing.txt"
        missing.write_text("Is {item} in {summary}? KEPT or LOST.", encoding="utf-8")
        latin = folder / "latin.txt"
        latin.write_bytes("{summary} {category} {item} caf\xe9".encode("latin-1"))
        real = folder / "real.txt"
        real.write_text("{summary} {category} {item}", encoding="utf-8")
        link = folder / "link.txt"
        os.symlink(real, link)
        for path, said in ((missing, "{category}"), (latin, "not UTF-8"),
                           (link, "not a plain file"), (folder / "none.txt", "does not exist")):
            with self.subTest(path.name), FakeOllama(models=(MODEL,)) as server:
                server.judge = lambda prompt: "KEPT"
                out = self.make_tmp() / "audit"
                code, _, stderr, _ = self.audit(server, "--judge-prompt", str(path), out=out)
                self.assertEqual(code, 2)
                self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
                self.assertIn(said, stderr)
                self.assertEqual(server.chat_count(), 0)
                self.assertFalse(out.exists())

    def test_a_judge_option_without_a_judge_model_is_refused_in_one_line(self):
        for argv, said in ((["--judge", ""], "no model name"),
                           (["--judge-prompt", "mine.txt"], "give --judge MODEL too"),
                           (["--judge-threshold", "0.7"], "give --judge MODEL too")):
            with self.subTest(argv[0]):
                out = self.make_tmp() / "audit"
                code, _, stderr = run_main(["audit", str(EXAMPLE), "--out", str(out), *argv])
                self.assertEqual(code, 2)
                self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
                self.assertIn(said, stderr)
                self.assertFalse(out.exists())

    def test_no_server_and_another_judge_are_each_one_line(self):
        with FakeOllama(models=(MODEL,)) as gone:
            url = gone.url
        out = self.make_tmp() / "audit"
        code, _, stderr = run_main(["audit", str(EXAMPLE), "--out", str(out), "--judge", MODEL,
                                    "--host", url])
        self.assertEqual(code, 2)
        self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
        self.assertIn(f"no judge server answers at {url}", stderr)
        self.assertIn("ollama serve", stderr)
        self.assertIn("--base-url", stderr)
        self.assertIn("without --judge needs no model", stderr)
        self.assertFalse(out.exists())
        with FakeOllama(models=(MODEL, "other:1b")) as server:
            server.judge = lambda prompt: "KEPT"
            self.assertEqual(self.audit(server, out=out)[0], 0)
            before = server.chat_count()
            code, _, stderr = run_main(["audit", str(EXAMPLE), "--out", str(out), "--quiet",
                                        "--judge", "other:1b", "--host", server.url])
            self.assertEqual(server.chat_count(), before)
        self.assertEqual(code, 2)
        self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
        self.assertIn("holds the calls of another judge (judge:1b", stderr)

    def start_held(self, server, out: Path) -> subprocess.Popen:
        """The audit in a process of its own, its judge holding the fifth call (four answered)."""
        server.judge = push_is_lost
        server.hold_at = 5
        audit = subprocess.Popen(
            [sys.executable, str(RUNNER), "audit", str(EXAMPLE), "--out", str(out), "--quiet",
             "--judge", MODEL, "--host", server.url],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.assertTrue(server.held.wait(60), "the fifth call never came")
        return audit

    def test_a_ctrl_c_or_sigterm_while_judging_says_what_is_kept(self):
        for sent in (signal.SIGINT, signal.SIGTERM):
            out = self.make_tmp() / "audit"
            with self.subTest(sent.name), FakeOllama(models=(MODEL,)) as server:
                audit = self.start_held(server, out)
                try:
                    os.kill(audit.pid, sent)
                    _, stderr = audit.communicate(timeout=60)
                finally:
                    server.release.set()
                self.assertEqual(audit.returncode, 130, stderr)
                self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
                self.assertIn("the judge's 4 calls made are kept in", stderr)
                self.assertIn("sends only the rest", stderr)
                self.assertEqual(len((out / "judge-calls.jsonl").read_bytes().splitlines()), 4)

    def test_a_kill_mid_audit_and_a_rerun_send_only_the_calls_not_made(self):
        whole = self.make_tmp() / "whole"
        with FakeOllama(models=(MODEL,)) as server:
            server.judge = push_is_lost
            self.assertEqual(self.audit(server, out=whole)[0], 0)
            self.assertEqual(server.chat_count(), 9)
        out = self.make_tmp() / "killed"
        with FakeOllama(models=(MODEL,)) as server:
            audit = self.start_held(server, out)
            try:
                os.killpg(audit.pid, signal.SIGKILL)
            finally:
                audit.communicate(timeout=30)
                server.release.set()
            self.assertEqual(len((out / "judge-calls.jsonl").read_bytes().splitlines()), 4)
            before = server.chat_count()
            code, _, stderr, _ = self.audit(server, out=out)
            self.assertEqual(code, 0, stderr)
            self.assertEqual(server.chat_count() - before, 9 - 4)
        for name in OUTPUTS:
            self.assertEqual((out / name).read_bytes(), (whole / name).read_bytes(), name)


if __name__ == "__main__":
    unittest.main()
