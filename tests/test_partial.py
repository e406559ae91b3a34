"""Results at any moment of a run: the cells run episode by episode, so that complete paired episodes accumulate
at an even pace, and a stopped run is compared over them (`status`, `analyze --allow-partial`), in every study."""
import collections
import json
import signal
import threading
import unittest
from pathlib import Path
from unittest import mock

from fake_servers import FakeOllama
from helpers import FAST, TempDirMixin, kill_at_call, run_main, runner_command
from pilot import runfolder

MODEL = "m:1"
CALLS_PER_EPISODE = 8 + 2 * 12          # XR-001: R0's eight answers, R1's and R2's four compactions and eight answers


def journal_order(test, argv: list[str]) -> list[tuple]:
    """The (model, regime, episode) of every call of an in-process run, in the order the calls were journalled."""
    order, lock, append = [], threading.Lock(), runfolder.Journal.append

    def recorded(journal, record, path=None):
        line = append(journal, record, path)
        if path is None:                    # a cell's call (the determinism probe writes elsewhere)
            with lock:
                order.append((record["model"], record["regime"], record["episode"]))
        return line

    with mock.patch.object(runfolder.Journal, "append", recorded):
        code, _, err = run_main(argv)
    test.assertEqual(code, 0, err)
    return order


def episodes_complete_at(order: list[tuple]) -> list[int]:
    """How many calls had been journalled when each episode got its last call, in the order episodes completed."""
    needed = collections.Counter(episode for _, _, episode in order)
    done, when = collections.Counter(), []
    for number, (_, _, episode) in enumerate(order, 1):
        done[episode] += 1
        if done[episode] == needed[episode]:
            when.append(number)
    return when


def complete_episodes(out: Path) -> list[int]:
    """The episodes every cell of which the run folder's manifest marks COMPLETE."""
    manifest = json.loads((out / "manifest.json").read_text())
    cells = collections.defaultdict(list)
    for key, entry in manifest["cells"].items():
        cells[entry["episode"]].append(entry["status"] == "COMPLETE")
    expected = len(manifest["models"]) * len(manifest["regimes"])
    return sorted(e for e, states in cells.items() if len(states) == expected and all(states))


class ScheduleTest(TempDirMixin, unittest.TestCase):
    def test_complete_episodes_accumulate_at_an_even_pace(self):
        # Before: every R0 cell ran first (N = 1) or last (N > 1: the longest cells first), so the first episode
        # with all three regimes came at 65% (N = 1) or 75% (N = 4) of the calls. Now episode k is complete after
        # its 32 calls and those of the episodes before it, give or take the calls in flight of the next one.
        # (at N = 4 the server takes 20 ms a call, so that the order the slots give comes from the schedule and not
        # from how the threads of a busy machine happen to be woken)
        episodes = 6
        with FakeOllama(models=[MODEL], slots=4) as server:
            for concurrency, latency in ((1, 0.0), (4, 0.02)):
                server.latency_s = latency
                with self.subTest(concurrency=concurrency):
                    out = self.make_tmp() / f"n{concurrency}"
                    order = journal_order(self, ["run", "--models", MODEL, "--host", server.url, "--out", str(out),
                                                 "--episodes", str(episodes), "--concurrency", str(concurrency),
                                                 *FAST])
                    self.assertEqual(len(order), episodes * CALLS_PER_EPISODE)
                    when = episodes_complete_at(order)
                    self.assertEqual(len(when), episodes)
                    if concurrency == 1:
                        self.assertEqual(when, [CALLS_PER_EPISODE * k for k in range(1, episodes + 1)])
                    for k, calls in enumerate(when, 1):     # the k-th within one episode's calls of its share
                        self.assertLessEqual(calls, CALLS_PER_EPISODE * (k + 1), when)

    def test_two_models_finish_each_episode_together(self):
        # a complete paired episode is every model's: the second model's cells of an episode come before the next
        # episode's cells
        with FakeOllama(models=["a:1", "b:2"]) as server:
            out = self.make_tmp() / "two"
            order = journal_order(self, ["run", "--models", "a:1,b:2", "--host", server.url, "--out", str(out),
                                         "--episodes", "3", *FAST])
        self.assertEqual(episodes_complete_at(order), [2 * CALLS_PER_EPISODE * k for k in (1, 2, 3)])


class PartialViewTest(TempDirMixin, unittest.TestCase):
    def stopped_run(self, server, stop_at: int, extra=()) -> Path:
        out = self.make_tmp() / "run"
        # stopped as a user stops it (SIGTERM: no new calls, the calls in flight finished and written, exit 130)
        err = kill_at_call(self, server, stop_at, runner_command("run", "--models", MODEL, "--host", server.url,
                                                                "--out", str(out), "--concurrency", "4", *extra, *FAST),
                           signal.SIGTERM)
        self.assertIn("interrupted; every completed call is saved", err)
        return out

    def test_a_stopped_run_is_compared_over_its_complete_episodes(self):
        with FakeOllama(models=[MODEL], latency_s=0.003) as server:
            out = self.stopped_run(server, 5 * CALLS_PER_EPISODE)
        complete = complete_episodes(out)
        self.assertGreaterEqual(len(complete), 3)
        self.assertLess(len(complete), 15)
        code, text, err = run_main(["status", "--out", str(out)])
        self.assertEqual(code, 0, err)
        self.assertIn("so far, over the complete episodes:", text)
        self.assertIn(f"PARTIAL VIEW, NON-CONFIRMATORY: the run is not finished; this compares the regimes over the "
                      f"{len(complete)} of its 15 episodes complete in every model and regime", text)
        self.assertIn("exact McNemar R1 vs R2", text)
        self.assertEqual(run_main(["score", "--out", str(out)])[0], 0)
        results = json.loads((out / "results.json").read_text())
        self.assertEqual(results["partial"]["episodes_complete"], len(complete))
        # every probe is of a complete episode, and each of those has all eight questions in every regime: paired
        by_regime = collections.Counter((p["regime"], p["episode"]) for p in results["probes"])
        self.assertEqual(set(by_regime), {(r, e) for r in ("R0", "R1", "R2") for e in complete})
        self.assertEqual(set(by_regime.values()), {8})
        self.assertEqual(run_main(["analyze", "--out", str(out)])[0], 2)        # not without --allow-partial
        code, text, err = run_main(["analyze", "--out", str(out), "--allow-partial"])
        self.assertEqual(code, 0, err)
        self.assertTrue(text.startswith("**PARTIAL VIEW, NON-CONFIRMATORY"), text[:200])
        self.assertIn("NON-CONFIRMATORY", text.split("\n\n")[2])               # the study's own label, from the probes
        pairs = sum(1 for p in results["probes"] if p["regime"] == "R1")
        self.assertEqual(pairs, 8 * len(complete))

    def test_every_study_compares_a_stopped_run_over_its_complete_episodes(self):
        for study, extra, stop_at in (("constraints", ["--study", "constraints"], 120),
                                      # (G2's cells gate every state between calls, on the CPU: on a loaded
                                      # machine they trail R2's, so its run is stopped at 40% of its 140 calls)
                                      ("adversarial", ["--study", "adversarial"], 56),
                                      ("sessions", ["--study", "sessions"], 30)):
            with self.subTest(study=study), FakeOllama(models=[MODEL], latency_s=0.003) as server:
                out = self.stopped_run(server, stop_at, extra)
                complete = complete_episodes(out)
                self.assertGreaterEqual(len(complete), 1, study)
                code, text, err = run_main(["status", "--out", str(out)])
                self.assertEqual(code, 0, err)
                # a study with a confirmatory test says the view is not one; the exploratory ones say PARTIAL alone
                self.assertIn("PARTIAL VIEW, NON-CONFIRMATORY" if study in ("xr001", "constraints") else
                              "PARTIAL VIEW: the run is not finished", text, study)
                self.assertIn(f"over the {len(complete)} of its", text, study)
                self.assertEqual(run_main(["score", "--out", str(out)])[0], 0)
                code, text, err = run_main(["analyze", "--out", str(out), "--allow-partial"])
                self.assertEqual(code, 0, err)
                # a study with a confirmatory test says the view is not one; the exploratory ones say PARTIAL alone
                self.assertIn("PARTIAL VIEW, NON-CONFIRMATORY" if study in ("xr001", "constraints") else
                              "PARTIAL VIEW: the run is not finished", text, study)

    def test_a_finished_run_has_no_partial_view(self):
        with FakeOllama(models=[MODEL]) as server:
            out = self.make_tmp() / "done"
            code, text, err = run_main(["--models", MODEL, "--host", server.url, "--out", str(out), "--episodes", "2",
                                        *FAST])
        self.assertEqual(code, 0, err)
        self.assertNotIn("partial", json.loads((out / "results.json").read_text()))
        self.assertNotIn("PARTIAL VIEW", text + (out / "analysis.md").read_text())
        code, text, _ = run_main(["status", "--out", str(out)])
        self.assertNotIn("so far", text)

    def test_a_stopped_run_before_any_complete_episode_says_so(self):
        with FakeOllama(models=[MODEL], latency_s=0.003) as server:
            out = self.stopped_run(server, 4)
        code, text, err = run_main(["status", "--out", str(out)])
        self.assertEqual(code, 0, err)
        self.assertIn("no comparison so far: no episode is complete in every model and regime yet", text)


if __name__ == "__main__":
    unittest.main()
