"""The adversarial study XR-G1 on the shared runner (pilot/studies/adversarial.py and adversarial_analysis.py): R2,
G2 gated with quarantine, regeneration, resume after kill -9, a dead server, status and plan, and the folders the
study's former runner made, which are still re-gated byte for byte."""
import csv
import json
import shutil
import sys
import unittest
from pathlib import Path

from fake_servers import FakeOllama
from helpers import FAST, REPO, TempDirMixin, kill_at_call, run_main
from pilot import records, runfolder
from pilot.studies import adversarial, adversarial_analysis

MODEL = "gemma3:4b"
SESSIONS = ["--episodes", "7"]
# per session: R2 compacts 3 times, 2 regenerated candidates beside them, 2 probes; G2 compacts 3 times, 2 probes
CALLS_7_SESSIONS = 7 * ((3 + 2 + 2) + (3 + 2))


def raw_records(folder: Path, regime: str) -> list[dict]:
    return [json.loads(line) for line in (folder / "raw" / f"gemma3_4b_{regime}.jsonl").read_text().splitlines()]


class AdversarialRunTest(TempDirMixin, unittest.TestCase):
    """The study end to end on the fake server, as `adversarial` and as `--study adversarial`."""

    def test_end_to_end(self):
        out = self.make_tmp() / "adv"
        argv = ["adversarial", "--models", MODEL, "--out", str(out), *SESSIONS, "--regenerate", "2", *FAST]
        with FakeOllama(models=[MODEL]) as server:
            code, report, err = run_main(argv + ["--host", server.url])
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), CALLS_7_SESSIONS)
            code, again, err = run_main(argv + ["--host", server.url])
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), CALLS_7_SESSIONS)     # a rerun resumes: nothing is sent twice
            self.assertEqual(again.splitlines()[:3], report.splitlines()[:3])
            code, _, err = run_main(argv[:-len(FAST) - 2] + ["--regenerate", "3", *FAST, "--host", server.url])
            self.assertEqual(code, 2)
            self.assertIn("different settings", err)
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertEqual(manifest["study"], "adversarial")
        self.assertEqual(manifest["lock"]["study_options"], {"regenerate": 2})
        analysis = (out / "analysis.md").read_text()
        for section in ("Release verdicts, one per category", "Per case", "Gated against ungated"):
            self.assertIn(section, analysis)
        with open(out / "gate.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
        regen = [r for r in rows if r["regime"] == "R2-regen"]
        self.assertEqual(len(regen), 7 * 2)
        self.assertEqual({r["temperature"] for r in regen}, {str(adversarial.ADV_REGEN_TEMPERATURE)})
        self.assertEqual({int(r["seed"]) for r in regen}, {adversarial.ADV_REGEN_SEED, adversarial.ADV_REGEN_SEED + 1})
        regen_calls = [r for r in raw_records(out, "R2") if r["kind"].startswith("regen_")]
        self.assertEqual({(r["temperature"], r["seed"]) for r in regen_calls},
                         {(0.7, adversarial.ADV_REGEN_SEED), (0.7, adversarial.ADV_REGEN_SEED + 1)})
        failed = [r for r in rows if r["regime"] == "G2" and r["verdict"] == "FAIL"]
        self.assertTrue(failed)
        quarantined = sorted(p.name for p in (out / "quarantine").iterdir())
        # a failing G2 candidate is quarantined; the cascade goes on from the last passing state plus the raw text
        self.assertEqual(quarantined, sorted(f"G2_ep{r['episode']}_compact_{r['checkpoint']}.json" for r in failed))
        after = [c for c in raw_records(out, "G2") if "RAW SEGMENT" in c["messages"][0]["content"]]
        self.assertTrue(after)
        code, regated, err = run_main(["gate", str(out)])
        self.assertEqual(code, 0, err)
        self.assertEqual(regated.strip(), analysis.strip())
        self.assertIn("trap", {p["class"] for p in json.loads((out / "results.json").read_text())["probes"]})
        for argv in (["score", "--out", str(out)], ["analyze", "--out", str(out)],
                     ["analyze", "--results", str(out / "results.json")]):
            with self.subTest(argv[0]):
                code, shown, err = run_main(argv)
                self.assertEqual(code, 0, err)
        self.assertEqual(shown.strip(), analysis.strip())

    def test_the_study_takes_one_model_and_no_sweep_and_its_option_belongs_to_it(self):
        for extra, message in ((["--study", "adversarial", "--models", "a:1b,b:1b"], "runs 1 model at a time"),
                               (["--study", "adversarial", "--models", MODEL, "--budgets", "128,256"],
                                "drop --budgets and --samples"),
                               (["--models", MODEL, "--regenerate", "2"], "add --study adversarial"),
                               (["--study", "adversarial", "--models", MODEL, "--temperature", "0.5"],
                                "drop --regimes, --regime-file and --temperature"),
                               (["--study", "adversarial", "--models", MODEL, "--regimes", "R2"],
                                "drop --regimes, --regime-file and --temperature"),
                               (["plan", "--study", "adversarial", "--models", MODEL, "--tasks",
                                 str(REPO / "tasks" / "tasks.json")], "is a task file of the xr001 study")):
            with self.subTest(extra=extra):
                run_options = [] if extra[0] == "plan" else ["--host", "http://127.0.0.1:9", *FAST]
                code, _, err = run_main([*extra, "--out", str(self.make_tmp() / "x"), *run_options])
                self.assertEqual(code, 2, err)
                self.assertIn(message, err)
                self.assertEqual(len(err.strip().splitlines()), 1)


class AdversarialDurabilityTest(TempDirMixin, unittest.TestCase):
    """kill -9 and resume, a dead server, status and plan: the shared runner's guarantees hold for the study."""

    def run_study(self, server, out: Path, *extra: str):
        return run_main(["--study", "adversarial", "--models", MODEL, "--host", server.url, "--out", str(out),
                         *SESSIONS, "--regenerate", "2", *FAST, *extra])

    def test_sigkill_mid_cascade_resumes_to_identical_probes_and_states(self):
        with FakeOllama(models=[MODEL]) as server:
            reference = self.make_tmp() / "ref"
            self.assertEqual(self.run_study(server, reference)[0], 0)
            out = self.make_tmp() / "killed"
            kill_at_call(self, server, 30, [sys.executable, str(REPO / "scripts" / "run_pilot.py"), "adversarial",
                                            "--models", MODEL, "--host", server.url, "--out", str(out), *SESSIONS,
                                            "--regenerate", "2", *FAST])     # inside a G2 cascade of session 3
            journalled = sum(len(p.read_text().splitlines()) for p in (out / "raw").glob("*.jsonl"))
            self.assertEqual(journalled, 29)
            before = server.chat_count()
            code, _, err = self.run_study(server, out)
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count() - before, CALLS_7_SESSIONS - 29)   # only what was not journalled
        ref, got = (json.loads((d / "results.json").read_text()) for d in (reference, out))
        for field in ("probes", "states", "costs"):
            self.assertEqual(got[field], ref[field], field)
        self.assertEqual(run_main(["verify", "--out", str(out)])[0], 0)

    def test_a_dead_server_stops_the_study_with_exit_3_and_it_resumes(self):
        out = self.make_tmp() / "adv"
        dead = ["--retries", "3", "--backoff-base", "0.05", "--backoff-cap", "0.1", "--give-up-after", "1"]
        with FakeOllama(models=[MODEL]) as server:
            port = server.httpd.server_address[1]
            server.faults = [("delay", 0)] * 12 + [("shutdown",)]
            code, _, err = self.run_study(server, out, *dead)
        self.assertEqual(code, 3, err)
        self.assertNotIn("Traceback", err)
        self.assertIn("has not answered for", err.strip().splitlines()[-1])
        code, status, err = run_main(["status", "--out", str(out)])
        self.assertEqual(code, 0, err)
        self.assertIn("R2", status)
        self.assertIn("--study adversarial", status)
        self.assertIn("--regenerate 2", status)
        code, plan, err = run_main(["plan", "--out", str(out)])
        self.assertEqual(code, 0, err)
        self.assertIn(f"total: {CALLS_7_SESSIONS} calls (7 done)", plan)     # the calls of complete cells
        self.assertIn("sent in 12 calls", plan)
        with FakeOllama(models=[MODEL], port=port) as server:
            code, _, err = self.run_study(server, out)
            self.assertEqual(code, 0, err)
            self.assertEqual(server.chat_count(), CALLS_7_SESSIONS - 12)


class FormerFolderTest(TempDirMixin, unittest.TestCase):
    """Folders the study's former runner made (raw/calls.jsonl, no cells): re-gated as they were, never resumed."""

    EXAMPLE = REPO / "results" / "smollm2-135m-adversarial"

    def test_the_committed_example_is_regated_byte_for_byte(self):
        folder = self.make_tmp() / "example"
        shutil.copytree(self.EXAMPLE, folder)
        code, out, err = run_main(["gate", str(folder)])
        self.assertEqual(code, 0, err)
        for name in ("analysis.md", "gate.csv", "results.json"):
            self.assertEqual((folder / name).read_bytes(), (self.EXAMPLE / name).read_bytes(), name)
        self.assertEqual(out, (self.EXAMPLE / "analysis.md").read_text() + "\n")
        self.assertIs(records.folder_study(json.loads((folder / "manifest.json").read_text())).name, "adversarial")

    def test_the_run_commands_say_what_to_do_with_one(self):
        for argv in (["status", "--out"], ["verify", "--out"], ["score", "--out"]):
            with self.subTest(argv[0]):
                code, _, err = run_main([*argv, str(self.EXAMPLE)])
                self.assertEqual(code, 2)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn("former runner", err)
                self.assertIn(f"gate {runfolder.display_path(self.EXAMPLE)}", err)

    def test_a_torn_last_line_is_read_past_and_nothing_is_written(self):
        run_dir = self.make_tmp()
        (run_dir / "raw").mkdir()
        good = {"regime": "R2", "episode": 0, "kind": "compact_1", "response": "x"}
        data = json.dumps(good).encode() + b"\n" + b'{"regime": "R2", "epi'
        (run_dir / "raw" / "calls.jsonl").write_bytes(data)
        self.assertEqual(list(adversarial_analysis.former_records(run_dir)), [("R2", 0, "compact_1")])
        self.assertEqual((run_dir / "raw" / "calls.jsonl").read_bytes(), data)


if __name__ == "__main__":
    unittest.main()
