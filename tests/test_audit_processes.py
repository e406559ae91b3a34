"""`audit` as a user runs it, in processes of its own (issue FIX-A): a Ctrl-C at any moment of an audit
scored in worker processes, an --out inside the logs, two audits into one folder at once, and the paths it
prints from another working folder. Real processes, files and signals throughout."""
import os
import signal
import subprocess
import sys
import time
import unittest
from pathlib import Path

import audit_fixtures as fx
from helpers import REPO, TempDirMixin

RUNNER = REPO / "scripts" / "run_pilot.py"
EXAMPLE = REPO / "tasks" / "sessions" / "audit-example"


def long_story(seed: int, parts: int) -> list:
    """fx.STORY after `parts` turns of numbered settings: a session that takes a while to score."""
    story = []
    for k in range(parts):
        story += [("user", f"Step {seed}-{k}: set the batch size to {2500 + k} rows and port {8000 + k}; "
                           f"never touch host db-{k}.example.test."),
                  ("call", (f"Reading part {k}.", "Bash", {"command": f"cat config/part-{k}.yaml"})),
                  ("result", (f"retry_limit: {k % 9}\nqueue: https://q{k}.example.test/v{k}", False)),
                  ("reply", f"Part {k} read: retry limit {k % 9}.")]
    return story + fx.STORY


def children_of(pid: int) -> set[int]:
    """The processes `pid` started that are still its children (from /proc)."""
    found = set()
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for thread in threads:
        try:
            found |= {int(child) for child in
                      Path(f"/proc/{pid}/task/{thread}/children").read_text().split()}
        except OSError:
            pass
    return found


def alive(pid: int) -> bool:
    """Whether `pid` runs still (a zombie, dead but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def start_audit(argv: list[str], cwd: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(RUNNER), "audit", *argv], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


@unittest.skipUnless(Path("/proc/self/task").exists(), "reads the processes from /proc")

def killed_leftovers(pids: set, grace: float) -> list:
    """The processes of `pids` still alive `grace` seconds on, killed so that no test leaves one."""
    deadline = time.monotonic() + grace
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in pids if alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


class AuditProcessesTest(TempDirMixin, unittest.TestCase):
    def big_logs(self, files: int = 4, parts: int = 400) -> Path:
        folder = self.make_tmp() / "logs"
        folder.mkdir()
        for f in range(files):
            fx.write(folder / f"s{f}.jsonl", fx.claude_lines(long_story(f, parts), fx.LOSSY))
        return folder

    def test_a_ctrl_c_at_any_moment_ends_in_one_line_and_leaves_no_process(self):
        """Point 1: a Ctrl-C to the process group while the logs are read, as the workers start and
        while they score: exit 130 within about a second, one line, no traceback, no worker left."""
        logs = self.big_logs()
        for moment in (0.3, 1.2, 2.5):           # reading, the workers starting, scoring
            with self.subTest(moment=moment):
                out = self.make_tmp() / "o"
                audit = start_audit([str(logs), "--out", str(out), "--quiet"])
                started, seen = time.monotonic(), set()
                while time.monotonic() - started < moment and audit.poll() is None:
                    seen |= children_of(audit.pid)
                    time.sleep(0.01)
                self.assertIsNone(audit.poll(), "the audit ended before the interrupt; make it longer")
                os.killpg(audit.pid, signal.SIGINT)
                sent = time.monotonic()
                while audit.poll() is None and time.monotonic() - sent < 15:
                    seen |= children_of(audit.pid)
                    time.sleep(0.01)
                took = time.monotonic() - sent
                try:
                    _, stderr = audit.communicate(timeout=5)
                except subprocess.TimeoutExpired:
                    os.killpg(audit.pid, signal.SIGKILL)
                    _, stderr = audit.communicate()
                left = killed_leftovers(seen, grace=2)
                self.assertEqual(audit.returncode, 130, stderr)
                self.assertNotIn("Traceback", stderr)
                self.assertNotIn("Fatal Python error", stderr)
                self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
                self.assertLess(took, 3.0, stderr)
                self.assertEqual(left, [], f"processes outlived the audit: {stderr}")
                self.assertFalse(out.exists())

    def test_a_sigterm_to_the_audit_alone_leaves_no_worker_scoring(self):
        """A kill of the audit's own process (not its group) while the workers score: they are
        terminated with it, not left scoring for minutes."""
        logs = self.big_logs()
        out = self.make_tmp() / "o"
        audit = start_audit([str(logs), "--out", str(out), "--quiet"])
        started, seen = time.monotonic(), set()
        while time.monotonic() - started < 2.5 and audit.poll() is None:
            seen |= children_of(audit.pid)
            time.sleep(0.01)
        self.assertIsNone(audit.poll(), "the audit ended before the signal; make it longer")
        audit.send_signal(signal.SIGTERM)
        _, stderr = audit.communicate(timeout=15)
        left = killed_leftovers(seen, grace=3)
        self.assertEqual(left, [], stderr)
        self.assertNotIn("Traceback", stderr)
        self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)

    def test_an_out_folder_inside_the_logs_is_refused_and_nothing_is_written(self):
        """Point 2: `audit DIR --out DIR/sub` wrote into the logs' folder."""
        logs = self.make_tmp() / "logs"
        fx.write_example(logs)
        before = sorted(p.name for p in logs.rglob("*"))
        for argv in ([str(logs), "--out", str(logs / "sub")], [str(logs), "--out", str(logs)],
                     [str(logs / "codex-clean.jsonl"), "--out", str(logs / "o")],
                     ["--source", str(logs / "codex-clean.jsonl"), "--summary",
                      str(logs / "codex-lossy.jsonl"), "--out", str(logs / "o")]):
            with self.subTest(argv=argv[:2]):
                audit = start_audit([*argv, "--quiet"])
                _, stderr = audit.communicate(timeout=60)
                self.assertEqual(audit.returncode, 2, stderr)
                self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
                self.assertIn("choose a folder outside the logs", stderr)
                self.assertEqual(sorted(p.name for p in logs.rglob("*")), before)

    def test_a_second_audit_into_the_same_folder_at_once_is_refused(self):
        """Point 3: two audits into one --out both exited 0 and one report was lost."""
        logs, out = self.big_logs(parts=250), self.make_tmp() / "o"
        first = start_audit([str(logs), "--out", str(out), "--quiet"])
        time.sleep(1.0)                 # the first has started, and is reading the logs
        second = start_audit([str(EXAMPLE), "--out", str(out), "--quiet"])
        _, second_err = second.communicate(timeout=60)
        self.assertIsNone(first.poll(), "the first audit ended too soon; make it longer")
        first_out, first_err = first.communicate(timeout=120)
        self.assertEqual(second.returncode, 2, second_err)
        self.assertEqual(len(second_err.strip().splitlines()), 1, second_err)
        self.assertIn("another audit", second_err)
        self.assertEqual(first.returncode, 0, first_err)
        report = (out / "analysis.md").read_text(encoding="utf-8")
        self.assertIn("4 files read", report)
        self.assertFalse((out / ".audit-lock").exists())        # the lock goes as the audit ends
        # and the folder takes the next audit once the first has ended
        third = start_audit([str(EXAMPLE), "--out", str(out), "--quiet"])
        _, third_err = third.communicate(timeout=60)
        self.assertEqual(third.returncode, 0, third_err)

    def test_the_paths_it_prints_open_from_the_users_working_folder(self):
        """Point 4: the paths were printed relative to the repository, not to where the user ran it."""
        here = self.make_tmp()
        (here / "work").mkdir()
        for cwd, out, shown in ((here, "o", "o"), (here / "work", str(here / "o2"), str(here / "o2"))):
            with self.subTest(out=out):
                audit = start_audit([str(EXAMPLE), "--out", out, "--quiet"], cwd=cwd)
                stdout, stderr = audit.communicate(timeout=60)
                self.assertEqual(audit.returncode, 0, stderr)
                self.assertIn(f"Open the report: {Path(shown) / 'report.html'}\n", stdout)
                self.assertIn(f"wrote {Path(shown) / 'audit.csv'}, ", stdout)
                self.assertTrue((cwd / shown / "report.html").is_file())


class BenchScriptsTest(TempDirMixin, unittest.TestCase):
    def run_script(self, name: str, argv: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(REPO / "scripts" / "bench" / name), *argv],
                              capture_output=True, text=True, timeout=120)

    def test_a_missing_logs_path_ends_in_one_line_and_exit_2(self):
        """Point 5: measure_audit.py --logs /nonexistent ended in a traceback; measure_real_logs.py
        /nonexistent exited 0 with empty tables and a message cut mid-sentence."""
        missing = str(self.make_tmp() / "nonexistent")
        for name, argv in (("measure_audit.py", ["--logs", missing]),
                           ("measure_real_logs.py", [missing])):
            with self.subTest(script=name):
                done = self.run_script(name, argv)
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertNotIn("Traceback", done.stderr)
                self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
                self.assertIn(missing, done.stderr)
                self.assertEqual(done.stdout, "")

    def test_measure_audits_logs_option_says_what_it_is_and_its_default(self):
        done = self.run_script("measure_audit.py", ["--help"])
        self.assertEqual(done.returncode, 0)
        self.assertIn("the folder of the real Claude Code logs", done.stdout)
        self.assertIn("(default: ", done.stdout.split("--logs LOGS", 2)[-1])


if __name__ == "__main__":
    unittest.main()
