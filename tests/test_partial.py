"""Results at any moment of a run: the cells run episode by episode, so that complete paired episodes accumulate
at an even pace."""
import collections
import threading
import unittest
from unittest import mock

from fake_servers import FakeOllama
from helpers import FAST, TempDirMixin, run_main
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


if __name__ == "__main__":
    unittest.main()
