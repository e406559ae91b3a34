"""A new agent's log format plugs in as the readers' registry says
(scripts/pilot/studies/sessions/readers/registry.py): one module, one entry and its fixtures.

TinyLog is this suite's own JSONL log: its reader (READER below) is installed as readers/tinylog.py
of a copy of the repository, its entry (ENTRY) added to READERS with its module's import, and its
fixture with its .expected.json put in tests/fixtures/sessions/tinylog/. In that copy, as a user's
commands in their own processes: `plan --study sessions` and `audit` read its file as tinylog, and
the copy's own fixture and layout tests find and pass it.
"""
import csv
import io
import json
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from helpers import REPO, repo_copy, run_script
from pilot.studies.sessions import readers

READER = '''"""TinyLog, the test suite's own JSONL agent log (tests/test_readers.py): a first line
{"tinylog": version}, then {"who": "user" | "agent", "say": text, "calls": [{id, tool, args}]},
{"who": "tool", "answers": a call's id, "output": text, "exit": code} and {"who": "compact",
"summary": text} lines."""
from __future__ import annotations

from .turns import SessionBuilder, as_text, first, key_of


def checks(values: list) -> list[tuple[bool, str]]:
    head = values[0] if values else None
    return [(isinstance(head, dict) and "tinylog" in head, "a first line with `tinylog`"),
            (first(values[1:], lambda v: isinstance(v, dict) and "who" in v), "lines with `who`")]


def read(lines: list) -> list[SessionBuilder]:
    b = SessionBuilder("tinylog", "lines")
    for position, (n, line) in enumerate(lines):
        b.read += 1
        who = key_of(line.get("who")) if isinstance(line, dict) else None
        if position == 0:
            b.skip("the tinylog header line")
        elif who == "user":
            b.user(as_text(line.get("say")), n)
        elif who == "agent":
            calls = line.get("calls") if isinstance(line.get("calls"), list) else []
            made = [b.call(c.get("id"), c.get("tool"), c.get("args"), n)
                    for c in calls if isinstance(c, dict)]
            b.assistant(as_text(line.get("say")), made, n)
        elif who == "tool":
            code = line.get("exit")
            failed = isinstance(code, int) and code != 0
            b.result(line.get("answers"), as_text(line.get("output")), n, error=failed,
                     marked="failed" if failed else None,
                     evidence=f"exit {code}" if failed else None)
        elif who == "compact":
            b.compaction(n, as_text(line.get("summary")), source="compact line", summary_at=n)
            b.skip("compaction record (kept as a compaction event, not a turn)")
        else:
            b.skip("line of no known kind", unread=True)
    return [b]
'''

ENTRY = '''    Reader(
        name="tinylog",
        about="a TinyLog file (JSONL: a `tinylog` line, then `who` lines)",
        named="TinyLog files",
        layout="jsonl",
        checks=tinylog.checks,
        read=tinylog.read,
        fixtures="tinylog",
    ),
'''

SUMMARY = ("The user asked to fix the flaky billing test and keep the retry limit at 7. "
           "`make test` failed (2 failed: test_invoice_retry); billing/retry.py now sets "
           "retry_limit = 7.")

LOG = [{"tinylog": "1", "session": "t-1"},
       {"who": "user", "say": "Fix the flaky test in billing; keep the retry limit at 7."},
       {"who": "agent", "say": "Running the tests.",
        "calls": [{"id": "c1", "tool": "shell", "args": {"command": "make test"}}]},
       {"who": "tool", "answers": "c1", "output": "2 failed: test_invoice_retry", "exit": 2},
       {"who": "agent", "say": "Two tests fail: billing/retry.py reads the retry limit as 5.",
        "calls": [{"id": "c2", "tool": "edit", "args": {"path": "billing/retry.py"}}]},
       {"who": "tool", "answers": "c2", "output": "billing/retry.py: retry_limit = 7", "exit": 0},
       {"who": "compact", "summary": SUMMARY},
       {"who": "user", "say": "Run them again."},
       {"who": "agent", "say": "All tests pass now."}]

EXPECTED = {
    "fixture": "tinylog-billing.jsonl", "format": "tinylog", "position_unit": "line",
    "turns": {"user": 2, "assistant": 3, "tool": 2},
    "turn_sequence": [{"role": "user", "at": 2}, {"role": "assistant", "at": 3, "calls": ["c1"]},
                      {"role": "tool", "at": 4}, {"role": "assistant", "at": 5, "calls": ["c2"]},
                      {"role": "tool", "at": 6}, {"role": "user", "at": 8},
                      {"role": "assistant", "at": 9}],
    "tool_links": [{"call_id": "c1", "tool": "shell", "call_at": 3, "result_at": 4,
                    "status": "failed"},
                   {"call_id": "c2", "tool": "edit", "call_at": 5, "result_at": 6, "status": "ok"}],
    "failed_steps": [{"call_id": "c1", "evidence": "exit 2"}], "denied_steps": [],
    "values": [{"id": "limit", "value": "retry_limit = 7"}],
    "compactions": [{"at": 7, "trigger": None, "tokens_before": None, "summary_readable": True,
                     "replaces": {"from": 2, "to": 6}}]}


class NewReaderTest(unittest.TestCase):
    """TinyLog added to a copy of the repository as the registry's recipe says, and read there as
    a user reads a log."""

    @classmethod
    def setUpClass(cls):
        cls.root = Path(tempfile.mkdtemp(prefix="ccl-tinylog-"))
        cls.repo = repo_copy(cls.root / "repo")
        shutil.copytree(REPO / "tests", cls.repo / "tests",
                        ignore=shutil.ignore_patterns("__pycache__"))
        folder = cls.repo / "scripts" / "pilot" / "studies" / "sessions" / "readers"
        (folder / "tinylog.py").write_text(READER, encoding="utf-8")
        registry = (folder / "registry.py").read_text(encoding="utf-8")
        assert registry.count("\n]\n") == 1 and registry.count("\nfrom . import ") == 1
        registry = registry.replace("\n]\n", "\n" + ENTRY + "]\n").replace(
            "\nfrom . import ", "\nfrom . import tinylog\nfrom . import ")
        (folder / "registry.py").write_text(registry, encoding="utf-8")
        fixtures = cls.repo / "tests" / "fixtures" / "sessions" / "tinylog"
        fixtures.mkdir()
        cls.log = fixtures / "tinylog-billing.jsonl"
        cls.log.write_text("".join(json.dumps(line) + "\n" for line in LOG), encoding="utf-8")
        (fixtures / "tinylog-billing.expected.json").write_text(json.dumps(EXPECTED, indent=1),
                                                                encoding="utf-8")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, True)

    def test_the_format_is_unknown_here(self):
        """Without its module and entry the same file is refused: what the copy reads is the new
        reader's doing."""
        self.assertNotIn("tinylog", readers.FORMATS)
        with self.assertRaisesRegex(readers.SessionFileError,
                                    "is JSONL, but none of the session formats"):
            readers.read_session_file(self.log, self.log.name)

    def test_plan_and_audit_read_the_new_format(self):
        planned = run_script(self.repo, ["plan", "--study", "sessions", "--sessions", str(self.log),
                                         "--models", "m"])
        self.assertEqual(planned.returncode, 0, planned.stderr)
        self.assertIn("tinylog-billing.jsonl: tinylog", planned.stdout)
        out = self.root / "audit"
        audited = run_script(self.repo, ["audit", str(self.log), "--out", str(out), "--quiet"])
        self.assertEqual(audited.returncode, 0, audited.stderr)
        rows = list(csv.DictReader(io.StringIO((out / "audit.csv").read_text(encoding="utf-8"))))
        self.assertTrue(rows)
        self.assertEqual({(r["format"], r["compaction"]) for r in rows}, {("tinylog", "1")})

    def test_the_copys_fixture_and_layout_tests_find_and_pass_it(self):
        """No test is edited: the fixture tests find the new folder through the registry, and the
        layout tests check the new module."""
        tests = ["test_sessions_fixtures.FixtureTest", "test_sessions_fixtures.HostileTest",
                 "test_layout.StudyImportsTest", "test_layout.SizeTest"]
        done = subprocess.run([sys.executable, "-m", "unittest", *tests], cwd=self.repo / "tests",
                              capture_output=True, text=True, timeout=600)
        self.assertEqual(done.returncode, 0, done.stderr[-3000:])
        self.assertIn("OK", done.stderr)


if __name__ == "__main__":
    unittest.main()
