"""`audit` on hostile inputs and failures (issue 41, points 5, 6 and 11): an empty path, a link
given by name, an interrupt, a full disk, a skipped file's bytes, a byte that is not UTF-8, and progress from
the start; each ends in one line, with nothing lost and nothing left half-made."""
import errno
import os
import unittest
from unittest import mock

import audit_fixtures as fx
from helpers import REPO, TempDirMixin, run_main
from pilot import audit_command

EXAMPLE = REPO / "tasks" / "sessions" / "audit-example"


class AuditHostileTest(TempDirMixin, unittest.TestCase):
    def one_line(self, stderr: str) -> str:
        lines = stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, stderr)
        self.assertNotIn("Traceback", stderr)
        return lines[0]

    def test_an_empty_path_is_refused_not_read_as_the_current_folder(self):
        """Point 6: `audit ""` (an unset variable) used to audit the folder it was run in."""
        here = os.getcwd()
        folder = self.make_tmp()
        fx.write(folder / "mine.jsonl", fx.claude_lines(fx.STORY, fx.LOSSY))
        os.chdir(folder)
        try:
            code, _, stderr = run_main(["audit", "", "--out", str(self.make_tmp() / "o")])
        finally:
            os.chdir(here)
        self.assertEqual(code, 2)
        self.assertIn("empty path", self.one_line(stderr))

    def test_a_link_given_by_name_is_refused_with_the_path_it_points_to(self):
        link = self.make_tmp() / "logs"
        os.symlink(EXAMPLE, link)
        code, _, stderr = run_main(["audit", str(link), "--out", str(self.make_tmp() / "o")])
        self.assertEqual(code, 2)
        self.assertIn(f"give the path it points to: {EXAMPLE.resolve()}", self.one_line(stderr))

    def test_an_interrupted_audit_says_plainly_that_it_starts_over(self):
        """Point 5: it keeps nothing until it ends, and says so (not 'go on')."""
        out = self.make_tmp() / "o"
        with mock.patch.object(audit_command, "audit_sessions", side_effect=KeyboardInterrupt):
            code, _, stderr = run_main(["audit", str(EXAMPLE), "--out", str(out), "--quiet"])
        self.assertEqual(code, 130)
        line = self.one_line(stderr)
        self.assertIn("starts over", line)
        self.assertNotIn("go on", line)
        self.assertFalse(out.exists())

    def test_a_full_disk_names_the_file_and_leaves_no_empty_folder(self):
        """Point 11: the message names the path; no empty figures/ (or --out) is left behind."""
        out = self.make_tmp() / "o"
        full = OSError(errno.ENOSPC, "No space left on device")
        with mock.patch.object(audit_command, "write_atomic", side_effect=full):
            code, _, stderr = run_main(["audit", str(EXAMPLE), "--out", str(out), "--quiet"])
        self.assertEqual(code, 4)
        self.assertIn(str(out / "audit.csv"), self.one_line(stderr))
        self.assertFalse(out.exists())

    def test_a_skipped_file_counts_in_neither_the_files_nor_the_bytes_read(self):
        folder = self.make_tmp()
        lines = fx.claude_lines(fx.STORY, fx.LOSSY)
        fx.write(folder / "a-broken.jsonl", lines[:3] + ["{not json"] + lines[3:])
        good = fx.write(folder / "b-good.jsonl", lines)
        out = self.make_tmp() / "o"
        code, _, _ = run_main(["audit", str(folder), "--out", str(out), "--quiet"])
        self.assertEqual(code, 0)
        report = (out / "analysis.md").read_text(encoding="utf-8")
        self.assertIn(f"1 file read ({good.stat().st_size / 2 ** 20:.2f} MB", report)

    def test_one_byte_that_is_not_utf8_does_not_skip_the_session(self):
        folder = self.make_tmp()
        data = "\n".join(fx.claude_lines(fx.STORY, fx.LOSSY)).encode("utf-8")
        (folder / "bad-byte.jsonl").write_bytes(data.replace(b"Reading", b"Read\xffing", 1))
        out = self.make_tmp() / "o"
        code, _, stderr = run_main(["audit", str(folder), "--out", str(out), "--quiet"])
        self.assertEqual(code, 0, stderr)
        self.assertNotIn("skipped", stderr)
        self.assertIn("bad-byte.jsonl", (out / "audit.csv").read_text(encoding="utf-8"))

    def test_progress_is_shown_from_the_first_second(self):
        """Point 4 (its progress part): the MB to read, the MB read of them and the compactions
        scored, from the start, not only for more than 50 files."""
        out = self.make_tmp() / "o"
        code, _, stderr = run_main(["audit", str(EXAMPLE), "--out", str(out)])
        self.assertEqual(code, 0)
        lines = stderr.splitlines()
        self.assertRegex(lines[0], r"^reading 4 log files \([\d.]+ MB\)")
        self.assertTrue(any(" MB)" in line and "of" in line for line in lines[1:]), stderr)
        self.assertIn("  compactions scored: 0 of 5", lines)

if __name__ == "__main__":
    unittest.main()
