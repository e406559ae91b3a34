"""`audit` (scripts/pilot/audit_command.py, studies/sessions_audit.py): the compactions an agent recorded in its own
logs, each summary scored against the history it replaced by the sessions study's rules and the release gate, with no
model call; --source/--summary for a summary made anywhere; unsafe and broken files skipped with one line each."""
import csv
import io
import os
import socket
import unittest
from pathlib import Path
from unittest import mock

import audit_fixtures as fx
import audit_hostile as hostile
from helpers import REPO, TempDirMixin, run_main
from pilot.studies.sessions import audit as sessions_audit
from pilot.studies.sessions import audit_needed, audit_report

EXAMPLE = REPO / "tasks" / "sessions" / "audit-example"


def rows_of(out: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO((out / "audit.csv").read_text(encoding="utf-8"))))


def status_of(rows: list[dict], file: str, item_type: str, item: str, compaction: str = "1") -> list[str]:
    return [r["status"] for r in rows if r["file"].endswith(file) and r["compaction"] == compaction and
            r["item_type"] == item_type and item in r["item"]]


def needed_of(rows: list[dict], file: str, category: str, item: str, compaction: str = "1") -> list[str]:
    """The statuses of the needed items (issue 40: audit.csv's `needed` yes) of a category holding item."""
    return [r["status"] for r in rows if r["file"].endswith(file) and r["compaction"] == compaction and
            r["needed"] == "yes" and r["category"] == category and item in r["item"]]


class AuditTest(TempDirMixin, unittest.TestCase):
    def audit(self, *argv: str) -> tuple[int, str, str, Path]:
        out = self.make_tmp() / "audit"
        code, stdout, stderr = run_main(["audit", *argv, "--out", str(out), "--quiet"])
        return code, stdout, stderr, out

    def test_the_example_is_the_fixtures_as_written(self):
        folder = self.make_tmp()
        for path in fx.write_example(folder):
            self.assertEqual(path.read_bytes(), (EXAMPLE / path.name).read_bytes(), path.name)

    def test_each_loss_is_reported_with_its_status_in_both_formats(self):
        code, stdout, _, out = self.audit(str(EXAMPLE))
        self.assertEqual(code, 0)
        rows = rows_of(out)
        report = (out / "analysis.md").read_text(encoding="utf-8")
        page = (out / "report.html").read_text(encoding="utf-8")
        for file, tool in (("claude-code-lossy.jsonl", "Bash"), ("codex-lossy.jsonl", "shell")):
            with self.subTest(file):
                # issue 40: each planted defect is found, as a needed item lost or misstated (the
                # instruction, the failed push) or as a context row the report shows (the value the user
                # gave, changed or dropped, and the order the release gate finds invented: as needed
                # items they did not raise recall on real logs, the amendment of 2026-12-06)
                self.assertEqual(needed_of(rows, file, "instruction", "Never push to main"), ["wrong"])
                self.assertEqual(needed_of(rows, file, "unresolved_error", "feat/queue-export"), ["wrong"])
                context = [r for r in rows if r["file"].endswith(file) and r["category"] == "context"]
                self.assertEqual([(r["status"], r["summary_wrote"]) for r in context
                                  if r["item_type"] == "value" and r["item"] == "2,500"], [("changed", "2,000")])
                self.assertEqual([r["status"] for r in context
                                  if r["item_type"] == "value" and r["item"] == "02:15"], ["dropped"])
                invented = [r for r in context if "--skip-validation" in r["summary_sentence"]]
                self.assertEqual([r["item_type"] for r in invented], ["gate"])
                self.assertIn("no source in the transcript", invented[0]["item"])
                listed = [line for line in report.split("## What the summaries lost or misstated")[1]
                          .split("\n## ")[0].splitlines() if f"{file}, compaction 1" in line]
                for said in ('"Never push to main."', "succeeded"):
                    self.assertTrue(any(said in line for line in listed), said)
                shown = report.split(f"### audit-example/{file}, compaction 1")[1].split("\n### ")[0]
                for said in ("| 2,500 | number | changed | 2,000 |", "| 02:15 | time | dropped |",
                             "--skip-validation"):
                    self.assertIn(said, shown)
                self.assertIn(f"{file}, compaction 1", page)
        worst = [line for line in report.splitlines() if line.startswith("### ")]
        self.assertEqual([w.split("/")[1].split(",")[0] for w in worst[:2]],
                         ["claude-code-lossy.jsonl", "codex-lossy.jsonl"])          # the worst first
        self.assertTrue(report.startswith("# Audit"))
        self.assertIn("**EXPLORATORY**", report.splitlines()[2])
        self.assertIn("- Of 28 things the next agents needed, the summaries kept 24 (85.7%), lost 0 and "
                      "misstated 4.", report)
        self.assertIn('class="label label-warn">EXPLORATORY', page)

    def test_a_clean_summary_reports_none_of_them(self):
        _, _, _, out = self.audit(str(EXAMPLE))
        rows = rows_of(out)
        for file in ("claude-code-clean.jsonl", "codex-clean.jsonl"):
            with self.subTest(file):
                mine = [r for r in rows if r["file"].endswith(file) and r["compaction"] == "1"]
                self.assertTrue(mine)
                bad = [r for r in mine if r["status"] in ("changed", "contradicted", "claimed done", "absent",
                                                          "lost", "wrong") or r["item_type"] == "gate"]
                self.assertEqual(bad, [])
                self.assertEqual(needed_of(rows, file, "unresolved_error", "feat/queue-export"), ["kept"])
                self.assertEqual(status_of(rows, file, "value", "02:15"), ["kept"])

    def test_the_second_compaction_is_scored_from_the_first_summary_on(self):
        _, _, _, out = self.audit(str(EXAMPLE))
        second = [r for r in rows_of(out) if r["file"].endswith("claude-code-clean.jsonl") and r["compaction"] == "2"]
        self.assertEqual({r["trigger"] for r in second}, {"manual"})
        sentences = {r["source_sentence"] for r in second}
        self.assertIn("All 12 tests pass.", sentences)                      # a turn after the first summary
        self.assertIn("The queue is https://queue.example.test/v3/invoices with a retry limit of 7.", sentences)
        self.assertNotIn("retry_limit: 7", sentences)                       # the tool result the first one replaced

    def test_values_only_a_tool_printed_are_no_context_rows(self):
        """Issue 40, point 8 (protocol/SESSIONS.md, the amendment of 2026-12-06 for it): the study's value rows
        read what the conversation wrote (the user, the agent's text, its calls' arguments), never a tool's output,
        and the release gate compares a summary's values with those: a value only a tool printed (the exit code
        `1`, the queue's URL the settings file shows) is no row, and a summary that writes it otherwise is no
        gate finding; a value written as is in the output is given."""
        folder = self.make_tmp()
        changed = fx.CLEAN.replace("v3/invoices", "v3/invoice").replace("2,500 rows", "2,500 rows (batch_size: "
                                                                      "2500)")
        fx.write(folder / "claude-code-changed.jsonl", fx.claude_lines(fx.STORY, changed))
        for folder_, file in ((EXAMPLE, "claude-code-clean.jsonl"), (folder, "claude-code-changed.jsonl")):
            with self.subTest(file):
                code, _, _, out = self.audit(str(folder_))
                self.assertEqual(code, 0)
                mine = [r for r in rows_of(out) if r["file"].endswith(file) and r["compaction"] == "1"]
                values = [r["item"] for r in mine if r["item_type"] == "value"]
                self.assertIn("2,500", values)                              # the user's
                self.assertIn("config/export.yaml", values)                 # a call's argument
                self.assertNotIn("1", values)                               # "Exit code 1": the push's output
                self.assertFalse([v for v in values if "queue.example.test" in v])
                self.assertEqual([r for r in mine if r["item_type"] == "gate"], [])

    def test_every_format_that_records_a_readable_summary_is_scored(self):
        """The readers' fixtures (tests/fixtures/sessions/): a compaction scored in each format whose log holds its
        summary; the encrypted ones listed as not scored, with why."""
        code, _, _, out = self.audit(str(REPO / "tests" / "fixtures" / "sessions"))
        self.assertEqual(code, 0)
        scored = {r["format"] for r in rows_of(out) if r["status"] != "not scored"}
        self.assertEqual(scored, {"claude-code", "codex", "gemini-cli-jsonl", "cline", "roo-code", "openhands",
                                  "inspect-ai"})
        report = (out / "analysis.md").read_text(encoding="utf-8").split("## Compactions not scored")[1]
        self.assertIn("codex-proxy-remote.jsonl, compaction 1 (compacted): remote compaction", report)
        self.assertIn("responses-refund-after-compact.json, compaction 1 (compaction item): the summary is encrypted",
                      report)

    def test_intervals_only_from_ten_sessions_on(self):
        folder = self.make_tmp()
        for k in range(10):
            story = [(kind, payload.replace("2,500", f"2,{500 + k}") if isinstance(payload, str) else payload)
                     for kind, payload in fx.STORY]
            fx.write(folder / f"s{k}.jsonl", fx.claude_lines(story, fx.LOSSY if k % 2 else fx.CLEAN))
        _, _, _, few = self.audit(str(EXAMPLE))
        _, _, _, ten = self.audit(str(folder))
        table = (ten / "analysis.md").read_text(encoding="utf-8").split("## Per item type")[1].split("##")[0]
        self.assertRegex(table, r"\| value \| .* \| \d+/\d+ = [\d.]+% \[[\d.]+, [\d.]+\] \|")
        self.assertNotIn("no interval is printed", (ten / "analysis.md").read_text(encoding="utf-8").split("\n")[2])
        # issue 43, point 4: a printed interval says what it does not cover
        self.assertIn("covers the sampling of sessions only, not the error of the rules", table)
        self.assertIn("the intervals read them as a sample of sessions like them", (ten / "analysis.md").read_text())
        self.assertNotIn("nothing beyond them", (ten / "analysis.md").read_text())
        text = (few / "analysis.md").read_text(encoding="utf-8")
        self.assertIn("fewer than 10 sessions hold a scored compaction, so no interval is printed", text)
        self.assertNotRegex(text, r"% \[[\d.]+, [\d.]+\]")
        self.assertNotIn("not the error of the rules", text)
        self.assertIn("the rates describe these sessions and nothing beyond them", text)

    def test_two_processes_make_the_same_records_in_the_same_order_as_one(self):
        """Issue 40, point 8: several sessions scored in two processes (the command's default for
        several files) give the records one process gives, in session order."""
        files, skipped, _ = sessions_audit.log_files([EXAMPLE])
        sessions, _ = sessions_audit.read_logs(files, skipped)
        self.assertGreater(sum(bool(s["compactions"]) for s in sessions), 1)
        seen = []
        two = sessions_audit.audit_sessions(sessions, lambda done, total: seen.append(done), 2)
        self.assertEqual(two, sessions_audit.audit_sessions(sessions))
        self.assertEqual(seen[-1], len(two))

    def test_the_same_logs_twice_count_once(self):
        """Issue 41, point 3: 8 sessions copied twice are 8 sessions (no interval printed), and the
        report says how many copies were set aside."""
        folder = self.make_tmp()
        for copy in ("a", "b"):
            (folder / copy).mkdir()
            for k in range(8):
                story = [(kind, payload.replace("2,500", f"2,{500 + k}")
                          if isinstance(payload, str) else payload) for kind, payload in fx.STORY]
                fx.write(folder / copy / f"s{k}.jsonl", fx.claude_lines(story, fx.LOSSY))
        code, _, _, out = self.audit(str(folder))
        self.assertEqual(code, 0)
        text = (out / "analysis.md").read_text(encoding="utf-8")
        self.assertIn("- Across 8 compactions in 8 sessions", text)
        self.assertIn("8 copies of a log already read set aside", text)
        self.assertIn("no interval is printed", text)
        self.assertNotRegex(text, r"% \[[\d.]+, [\d.]+\]")
        self.assertEqual(len({r["file"] for r in rows_of(out)}), 8)

    def test_a_compaction_whose_history_is_not_in_the_file_is_listed_apart_never_as_losses(self):
        """Issue 40, point 3: a log that begins mid-session (tests/fixtures/needed/) gives no loss row; the
        report lists it under its own heading, and audit.csv says `not scored`."""
        code, _, _, out = self.audit(str(REPO / "tests" / "fixtures" / "needed" / "mid_session.jsonl"))
        self.assertEqual(code, 0)
        rows = rows_of(out)
        self.assertEqual([(r["status"], r["needed"]) for r in rows], [("not scored", "no")])
        self.assertIn("history not in this file, not scored", rows[0]["item"])
        text = (out / "analysis.md").read_text(encoding="utf-8")
        self.assertIn("## History not in this file, not scored", text)
        self.assertNotIn("## Compactions not scored", text)
        self.assertNotIn("lost", text.split("## The answer")[1].split("##")[0])

    def test_the_report_prints_the_measured_figures_and_decisions_precision(self):
        """Issue 40, point 6: the needed items' figures on the three labelled sets, with their date and source."""
        _, _, _, out = self.audit(str(EXAMPLE))
        text = (out / "analysis.md").read_text(encoding="utf-8")
        self.assertIn("| third set (held out) | 19 | 0.50 (25/50) | 0.03 (7/238) | 2.08 (104/50) | 0.76 / 0.83 | "
                      "0.06 (2/32) |", text)
        self.assertIn("| first set, dev half (tuned on) | 19 | 0.72 (31/43) | 0.00 (1/320) | 1.65 (71/43) | "
                      "0.85 / 0.88 | 0.35 (9/26) |", text)
        self.assertIn("| first set, held-out half (spent: measured five times) | 11 | 0.20 (4/20) |", text)
        self.assertIn("| second set (counted once, then tuned on) | 25 | 0.38 (14/37) |", text)
        # the held-out set's row first: the figure to read
        self.assertLess(text.index("third set (held out)"), text.index("first set, dev half"))
        self.assertIn("measured on 2026-12-06", text)
        self.assertIn("tests/labelled/compactions*/README.md", text)
        line = audit_needed.item_line({"file": "a.jsonl", "n": 1},
                                      {"category": "decision", "kind": "the agent's finding", "key": "the fix is X",
                                       "words": "the fix is X", "status": "lost", "summary_sentence": None})
        self.assertIn("decisions' measured precision: 0.35 (9/26) on dev, 0.06 (2/32) on the held-out third set",
                      line)

    def test_source_and_summary_give_the_same_rows_for_the_same_pair(self):
        folder = self.make_tmp()
        for name, lines in (("claude.jsonl", fx.claude_lines(fx.STORY, None)),
                            ("codex.jsonl", fx.codex_lines(fx.STORY, None))):
            with self.subTest(name):
                source = fx.write(folder / name, lines)
                summary = folder / "summary.txt"
                summary.write_text(fx.LOSSY, encoding="utf-8")
                code, _, _, out = self.audit("--source", str(source), "--summary", str(summary))
                self.assertEqual(code, 0)
                log = "claude-code-lossy.jsonl" if name.startswith("claude") else "codex-lossy.jsonl"
                _, _, _, whole = self.audit(str(EXAMPLE / log))
                fields = ("item_type", "kind", "item", "status", "beside_referent", "summary_wrote",
                          "source_sentence", "summary_sentence", "category", "needed")
                # a summary given alone has no boundary, so the branch is the one the user gave, not the one
                # the log records at the boundary (issue 40)
                def same(rows):
                    return [[r[f] for f in fields] for r in rows
                            if not (r["category"] in ("value", "context") and
                                    r["item"] == "feat/queue-export")]
                pair = same(rows_of(out))
                self.assertEqual(pair, same(rows_of(whole)))
                self.assertIn("wrong", {r[3] for r in pair})

    def test_secrets_are_masked_in_every_output(self):
        _, _, _, out = self.audit(str(EXAMPLE))
        self.assertIn(fx.KEY, (EXAMPLE / "claude-code-lossy.jsonl").read_text(encoding="utf-8"))
        for name in ("audit.csv", "analysis.md", "report.html"):
            with self.subTest(name):
                text = (out / name).read_text(encoding="utf-8")
                self.assertNotIn(fx.KEY[8:], text)
        self.assertIn("sk-proj-[masked]", (out / "audit.csv").read_text(encoding="utf-8"))

    def test_a_key_cut_by_any_excerpt_leaves_no_piece_of_itself(self):
        """Issue 41, point 2: keys of every shape the masks know, each at every position of every
        cut the audit makes; no output holds any 8 characters of a key's secret part."""
        folder = self.make_tmp()
        hostile.write_keys(folder)
        code, stdout, stderr, out = self.audit(str(folder))
        self.assertEqual(code, 0, stderr)
        texts = {name: (out / name).read_text(encoding="utf-8")
                 for name in ("audit.csv", "analysis.md", "report.html")}
        texts["the terminal"] = stdout + stderr
        for key, prefix in hostile.KEYS:
            for name, text in texts.items():
                with self.subTest(key=key[:12], output=name):
                    self.assertEqual(sorted(p for p in hostile.pieces(key, prefix) if p in text), [])

    def test_the_answer_and_the_gate_never_contradict_each_other(self):
        """Issue 41, point 10: no failed step in the rules' reading, two gate findings of a failure
        presented as passed: the answer's sentence on steps says both, from one source."""
        rows = [{"type": "gate", "kind": "status", "item": "a failure presented as passed",
                 "status": "found", "beside": None, "instead": None, "source_sentence": None,
                 "summary_sentence": f"The build {n} passed."} for n in (1, 2)]
        record = {"session": 1, "file": "a.jsonl", "format": "claude-code", "n": 1,
                  "trigger": "auto", "tokens_before": None, "tokens_after": None,
                  "source": "compact_boundary", "kept_turns": 0, "scored": True, "why": None,
                  "counts": {"turns": 2, "values": 0, "instructions": 0, "steps": 0}, "rows": rows}
        read = {"files": 1, "bytes": 10, "sha256": "0" * 64, "sessions": 1, "passed": 0,
                "skipped": []}
        answer = audit_report.context_answers(sessions_audit.analyze_audit([record], read))
        self.assertNotIn("No failed or denied step was left unresolved in the histories replaced.",
                         answer)
        self.assertTrue(any("2 sentences that present a failure as passed" in a for a in answer))

    def test_no_connection_is_made(self):
        def refuse(*args, **kwargs):
            raise AssertionError("audit touched the network")
        with mock.patch.object(socket.socket, "connect", refuse), \
                mock.patch.object(socket, "create_connection", refuse), \
                mock.patch.object(socket, "getaddrinfo", refuse):
            code, _, _, out = self.audit(str(EXAMPLE))
        self.assertEqual(code, 0)
        self.assertEqual(sorted(os.listdir(out)), [".pilot-outputs.json", "analysis.md", "audit.csv", "figures",
                                                   "report.html"])                 # and its folder marker

    def test_a_malformed_file_never_stops_the_others(self):
        folder = self.make_tmp()
        lines = fx.claude_lines(fx.STORY, fx.LOSSY)
        fx.write(folder / "a-broken.jsonl", lines[:3] + ["{not json"] + lines[3:])
        fx.write(folder / "b-good.jsonl", lines)
        code, _, stderr, out = self.audit(str(folder))
        self.assertEqual(code, 0)
        self.assertEqual(len([line for line in stderr.splitlines() if "a-broken.jsonl" in line]), 1)
        self.assertEqual({r["file"] for r in rows_of(out)}, {f"{folder.name}/b-good.jsonl"})
        self.assertIn("a-broken.jsonl", (out / "analysis.md").read_text(encoding="utf-8"))

    def test_a_damaged_line_in_the_middle_is_named_with_what_to_do(self):
        """The reviewer of 2026-12-06 (FIX-B, point 1): a log with one damaged line in its middle was skipped as
        "neither JSON nor JSONL", with no line and no next step."""
        folder = self.make_tmp()
        claude = fx.claude_lines(fx.STORY, fx.LOSSY)
        codex = fx.codex_lines(fx.STORY, fx.LOSSY)
        fx.write(folder / "claude.jsonl", claude[:3] + [claude[3][:70]] + claude[3:])
        fx.write(folder / "codex.jsonl", codex[:5] + ["", codex[5][:50]] + codex[5:])
        code, _, stderr, out = self.audit(str(folder))
        self.assertEqual(code, 2)                    # no session could be read: one line says so
        for name, line in (("claude.jsonl", 4), ("codex.jsonl", 7)):
            with self.subTest(name):
                (said,) = [said for said in stderr.splitlines() if said.startswith(f"skipped {folder.name}/{name}")]
                self.assertIn(f"line {line} is not JSON: a damaged or cut line", said)
                self.assertIn("repair or remove that line", said)

    def test_a_cut_last_line_is_named_in_the_report_and_on_the_terminal(self):
        """FIX-B, point 2: a log whose last line, cut, was its compaction record was read without a word, and the
        report said only that no compaction is recorded."""
        folder = self.make_tmp()
        claude = fx.claude_lines(fx.STORY, fx.LOSSY)
        codex = fx.codex_lines(fx.STORY, fx.LOSSY)
        fx.write(folder / "claude.jsonl", claude[:8] + [claude[8][:90]])           # the compact_boundary, cut
        fx.write(folder / "codex.jsonl", codex[:12] + [codex[12][:90]])            # the compacted line, cut
        fx.write(folder / "whole.jsonl", fx.claude_lines(fx.STORY, None))
        code, stdout, stderr, out = self.audit(str(folder))
        self.assertEqual(code, 0)
        for name in ("claude.jsonl", "codex.jsonl"):
            with self.subTest(name):
                self.assertIn(f"read {folder.name}/{name}: its last line was cut and left out", stderr)
                self.assertIn(f"`{folder.name}/{name}`: its last line was cut and left out",
                              (out / "analysis.md").read_text(encoding="utf-8"))
        self.assertNotIn("whole.jsonl", stderr)
        self.assertIn("No compaction is recorded in the 3 files read", stdout)
        self.assertIn("2 files read had their last line cut and left out", stdout)
        self.assertIn("its last line was cut and left out", (out / "report.html").read_text(encoding="utf-8"))

    def test_links_pipes_and_oversized_files_are_skipped_with_one_line_each(self):
        folder = self.make_tmp()
        fx.write(folder / "good.jsonl", fx.claude_lines(fx.STORY, fx.LOSSY))
        os.symlink(folder / "good.jsonl", folder / "link.jsonl")
        os.mkfifo(folder / "pipe.jsonl")
        with open(folder / "huge.jsonl", "wb") as handle:
            handle.truncate(sessions_audit.MAX_FILE_BYTES + 1)
        (folder / "sub").mkdir()
        fx.write(folder / "sub" / "deeper.jsonl", fx.codex_lines(fx.STORY, fx.CLEAN))
        os.symlink(folder / "sub", folder / "linked-folder")
        code, _, stderr, out = self.audit(str(folder))
        self.assertEqual(code, 0)
        for name, why in (("link.jsonl", "a link"), ("pipe.jsonl", "not a regular file"),
                          ("huge.jsonl", "larger than"), ("linked-folder", "a link")):
            with self.subTest(name):
                lines = [line for line in stderr.splitlines() if name in line]
                self.assertEqual(len(lines), 1)
                self.assertIn(why, lines[0])
        self.assertEqual(len(stderr.splitlines()), 4)
        self.assertIn("Skipped, 4, each with why", (out / "analysis.md").read_text(encoding="utf-8"))
        self.assertEqual({Path(r["file"]).name for r in rows_of(out)}, {"good.jsonl", "deeper.jsonl"})

    def test_a_missing_path_beside_others_is_skipped_with_one_line(self):
        missing = self.make_tmp() / "no-codex-here"
        code, _, stderr, out = self.audit(str(missing), str(EXAMPLE))
        self.assertEqual(code, 0)
        self.assertEqual(stderr.strip().splitlines(), [f"skipped {missing}: cannot be read (No such file or directory)"])
        self.assertEqual(len({r["file"] for r in rows_of(out)}), 4)

    def test_no_path_prints_where_the_logs_are_and_reads_nothing(self):
        with mock.patch.object(sessions_audit, "read_session_file") as reader:
            code, stdout, _ = run_main(["audit"])
        self.assertEqual(code, 0)
        reader.assert_not_called()
        for place in ("~/.claude/projects", "~/.codex/sessions", "Windows", "Nothing was read"):
            self.assertIn(place, stdout)

    def test_bad_inputs_give_one_line_and_exit_2(self):
        folder = self.make_tmp()
        (folder / "notes.txt").write_text("hello", encoding="utf-8")
        (folder / "file").write_text("x", encoding="utf-8")
        for argv in (["audit", str(folder / "missing")], ["audit", "--source", str(folder / "notes.txt")],
                     ["audit", str(folder), "--out", str(folder / "file")],
                     ["audit", str(EXAMPLE), "--out", str(folder)],
                     ["audit", "--source", str(folder / "notes.txt"), "--summary", str(folder / "notes.txt")],
                     ["audit", str(folder)]):
            with self.subTest(argv=argv[1:]):
                code, _, stderr = run_main(argv)
                self.assertEqual(code, 2)
                self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
                self.assertNotIn("Traceback", stderr)

    def test_a_link_at_an_output_is_refused_and_nothing_is_written(self):
        out = self.make_tmp() / "audit"
        out.mkdir()
        target = self.make_tmp() / "elsewhere.csv"
        target.write_text("mine", encoding="utf-8")
        os.symlink(target, out / "audit.csv")
        code, _, stderr = run_main(["audit", str(EXAMPLE), "--out", str(out)])
        self.assertEqual(code, 2)
        self.assertIn("link", stderr)
        self.assertEqual(target.read_text(encoding="utf-8"), "mine")
        self.assertEqual(sorted(os.listdir(out)), ["audit.csv"])

    def test_the_committed_report_is_made_again_byte_for_byte(self):
        out = self.make_tmp() / "audit-example"
        code, _, _ = run_main(["audit", str(EXAMPLE), "--out", str(out), "--quiet"])
        self.assertEqual(code, 0)
        for name in ("audit.csv", "analysis.md", "report.html", "figures/fig_audit.svg"):
            with self.subTest(name):
                self.assertEqual((out / name).read_bytes(),
                                 (REPO / "results" / "audit-example" / name).read_bytes())
        # issue 43, point 2: the study's rows come with the rules' measured figures and a pointer
        self.assertIn("How sure the rules are (measured", (out / "analysis.md").read_text())

    def test_the_report_opens_with_the_label_the_answer_and_its_figure(self):
        """Issue 33 in the audit: the label, the answer's sentences and the headline figure before the first table,
        in analysis.md and report.html, and the terminal's lines plain, with the report's path."""
        out = self.make_tmp() / "opening"
        code, printed, _ = run_main(["audit", str(EXAMPLE), "--out", str(out), "--quiet"])
        self.assertEqual(code, 0)
        report = (out / "report.html").read_text(encoding="utf-8")
        first = "Of 28 things the next agents needed"
        self.assertLess(report.index('<div class="headline">'), report.index(first))
        self.assertLess(report.index(first), report.index('<figure class="headline-figure">'))
        self.assertLess(report.index('<figure class="headline-figure">'), report.index("<table"))
        self.assertIn('href="figures/fig_audit.svg"', report)
        markdown = (out / "analysis.md").read_text(encoding="utf-8")
        table = markdown.index("\n|")
        self.assertLess(markdown.index("**EXPLORATORY**"), markdown.index(first))
        self.assertLess(markdown.index(first), markdown.index("(figures/fig_audit.svg)"))
        self.assertLess(markdown.index("(figures/fig_audit.svg)"), table)
        svg = (out / "figures" / "fig_audit.svg").read_text(encoding="utf-8")
        self.assertIn('data-group="instruction" data-series="misstated"><title>instruction misstated: 2', svg)
        self.assertNotIn("**", printed)
        self.assertNotIn("`", printed)
        self.assertEqual(printed.count("EXPLORATORY"), 1)
        self.assertIn(f"Open the report: {out / 'report.html'}", printed)


if __name__ == "__main__":
    unittest.main()
