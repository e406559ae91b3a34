"""`judge-check` (issue 44, point 3): the judge asked about small labelled sets written here in the
shape of tests/labelled/, against the in-process fake servers answering as a judge; its figures
against kappas computed by hand, garbage replies, a server that stops answering, a kill -9 and a
rerun, the threshold chosen on dev only, and measured_agreement recomputing from the journal."""
from __future__ import annotations

import json
import re
import signal
import unittest
from pathlib import Path

from fake_servers import FakeOllama, FakeOpenAI
from helpers import REPO, TempDirMixin, kill_at_call, run_main, runner_command
from pilot.studies.sessions import audit_needed
from pilot.studies.sessions.judge import read_judge_prompt
from pilot.studies.sessions.judge_agreement import (AGREEMENT_KAPPA, chosen_threshold,
                                                    measured_agreement)

MODEL = "judge:1b"
SESSION = REPO / "tests" / "fixtures" / "needed" / "session.jsonl"

# (category, truth, what the judge says: a word, or garbage) per labelled item of a compaction
DEV_ITEMS = [("request", "kept", "KEPT"), ("request", "kept", "KEPT"),
             ("request", "kept", "LOST"), ("request", "lost", "LOST"),
             ("request", "lost", "KEPT"), ("request", "wrong", "CHANGED"),
             ("request", "kept", "GARBAGE"), ("value", "lost", "KEPT")]
HELD_OUT_ITEMS = [("instruction", "kept", "KEPT"), ("instruction", "kept", "KEPT"),
                  ("instruction", "lost", "LOST"), ("instruction", "wrong", "LOST"),
                  ("decision", "kept", "KEPT"), ("decision", "lost", "KEPT")]
# (split, should_flag, what the judge says) per snippet
SNIPPETS = [("dev", True, "CHANGED"), ("dev", False, "LOST"), ("dev", False, "KEPT"),
            ("dev", True, "KEPT"), ("test", False, "KEPT")]


def write_labels(root: Path, dev_items=DEV_ITEMS, held_out_items=HELD_OUT_ITEMS,
                 snippets=SNIPPETS, held_out_summary: str = "") -> tuple[Path, Path]:
    """A labelled set and the logs it names: each item's text holds the word the judge gives."""
    labels, logs = root / "labels", root / "logs"
    (labels / "compactions").mkdir(parents=True)
    logs.mkdir()
    for name, half, items in (("dev-0.jsonl", "dev", dev_items),
                              ("held-0.jsonl", "held-out", held_out_items)):
        needed = [{"type": category, "summary": truth, "key": f"k{i}",
                   "text": f"item {half} {i} SAYS-{said}"}
                  for i, (category, truth, said) in enumerate(items)]
        (labels / "compactions" / f"{name}.json").write_text(json.dumps(
            {"file": name, "compaction": 1, "half": half, "needed": needed}))
        (logs / name).write_text(SESSION.read_text().replace(
            "SUMMARY_PLACEHOLDER", f"The summary of {name}." +
            (held_out_summary if half == "held-out" else "")))
    (labels / "state_claims.json").write_text(json.dumps({"snippets": [
        {"id": f"s{i}", "split": split, "source": f"USER: history {i} SAYS-{said}",
         "sentence": f"Sentence {i}.", "labels": {"should_flag": flag}}
        for i, (split, flag, said) in enumerate(snippets)]}))
    return labels, logs


def judge_by_word(prompt: str):
    """The fake judge: the word the item names; a probability where the item gives one."""
    item = prompt.split("=== ITEM ===", 1)[1]
    word = re.search(r"SAYS-(\w+)", item).group(1)
    p = re.search(r"P=([\d.]+)", item)
    text = "Well, maybe." if word == "GARBAGE" else word
    if p is None:
        return text
    return text, {"KEPT": float(p.group(1)), "LOST": 1 - float(p.group(1))}


class JudgeCheckCase(TempDirMixin, unittest.TestCase):
    def start(self, server_class=FakeOllama, judge=judge_by_word):
        server = server_class(models=(MODEL,))
        server.judge = judge
        server.__enter__()
        self.addCleanup(server.__exit__)
        return server

    def argv(self, server, labels, logs, out, *more) -> list[str]:
        where = ["--host", server.url] if isinstance(server, FakeOllama) else \
            ["--backend", "openai", "--base-url", server.url]
        return ["judge-check", "--judge", MODEL, *where, "--labels", str(labels),
                "--real-logs", str(logs), "--out", str(out), "--quiet", *more]

    def check(self, server, labels, logs, out, *more):
        code, stdout, stderr = run_main(self.argv(server, labels, logs, out, *more))
        self.assertEqual(code, 0, stderr)
        return json.loads((out / "judge-check.json").read_text()), stdout


class JudgeCheckTest(JudgeCheckCase):
    def test_a_key_in_a_label_or_summary_reaches_the_judge_masked_as_the_audit_sends_it(self):
        root = self.make_tmp()
        key = "sk-proj-Zt4wQ8mN2vB7xK9pLr3Y"
        snippets = [("dev", True, "CHANGED"), ("dev", False, "KEPT")]
        labels, logs = write_labels(root, snippets=snippets,
                                    held_out_summary=f" Deploy with the key {key}.")
        claims = labels / "state_claims.json"
        claims.write_text(claims.read_text().replace("USER: history 0",
                                                     f"USER: use the key {key} for history 0"))
        server = self.start()
        self.check(server, labels, logs, root / "out")
        sent = json.dumps(server.chat_requests)
        self.assertIn("with the key sk-proj-", sent)
        self.assertIn("use the key sk-proj-", sent)
        self.assertNotIn(key, sent)

    def test_figures_equal_the_kappas_computed_by_hand(self):
        root = self.make_tmp()
        labels, logs = write_labels(root)
        server = self.start()
        result, stdout = self.check(server, labels, logs, root / "out")
        figures = result["figures"]
        # dev requests read: truth not kept F F F T T T, judge F F T T F T: 2 both, 1 and 1
        # apart, 2 neither: observed 4/6, chance 1/2, kappa 1/3; the garbage reply is not read
        request = figures["request"]["dev"]
        self.assertEqual((request["n"], request["unreadable"]), (6, 1))
        self.assertAlmostEqual(request["kappa"], 1 / 3)
        self.assertAlmostEqual(request["precision"], 2 / 3)
        self.assertAlmostEqual(request["recall"], 2 / 3)
        self.assertEqual(figures["instruction"]["held-out"]["kappa"], 1.0)
        # the judge says kept for both decisions: one class only, not measurable
        self.assertIsNone(figures["decision"]["held-out"]["kappa"])
        self.assertEqual(figures["decision"]["held-out"]["n"], 2)
        # snippets: only CHANGED is not kept; truth T F F T, judge T F F F: kappa 0.5
        self.assertAlmostEqual(figures["stated otherwise"]["dev"]["kappa"], 0.5)
        self.assertEqual(figures["stated otherwise"]["held-out"]["n"], 1)
        # the value label is no judged category: never asked
        self.assertEqual(server.chat_count(), 7 + 6 + 5)
        self.assertIsNone(result["threshold"])
        self.assertIn("| decision | held-out | 2 | 1 | - | 0.00 | not measurable | 0 |", stdout)
        self.assertIn("below the protocol's agreement threshold (kappa 0.6) for request, "
                      "decision and open_task", stdout)
        self.assertIn("no probabilities", stdout)
        # the rules' figures beside it, as stated
        self.assertIn(f"dev {audit_needed.MEASURED['dev'][1]}", stdout)
        self.assertEqual(stdout, (root / "out" / "judge-check.md").read_text())

    def test_two_labels_that_ask_the_same_share_one_call_and_both_count(self):
        root = self.make_tmp()
        labels, logs = write_labels(root, dev_items=[("request", "kept", "KEPT")],
                                    held_out_items=[], snippets=[])
        path = labels / "compactions" / "dev-0.jsonl.json"
        record = json.loads(path.read_text())
        record["needed"].append(dict(record["needed"][0]))
        path.write_text(json.dumps(record))
        server = self.start()
        for out in (root / "out", root / "out"):         # a rerun reads the journal alike
            result, _ = self.check(server, labels, logs, out)
            self.assertEqual(result["figures"]["request"]["dev"]["n"], 2)
        self.assertEqual(server.chat_count(), 1)

    def test_bad_input_is_one_line_before_any_call(self):
        root = self.make_tmp()
        labels, logs = write_labels(root)
        server = self.start()
        out = root / "out"
        for name, change, said in (
                ("no judge", lambda a: a[:1] + a[3:], "--judge"),
                ("logs not a folder", lambda a: a + ["--real-logs", str(root / "none")],
                 "is not a folder"),
                ("prompt missing", lambda a: a + ["--judge-prompt", str(root / "none.txt")],
                 "does not exist"),
                ("model not on the server", lambda a: [w if w != MODEL else "nope:1b" for w in a],
                 "'nope:1b' is not on the server")):
            with self.subTest(name):
                code, _, stderr = run_main(change(self.argv(server, labels, logs, out)))
                self.assertEqual(code, 2)
                self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
                self.assertIn(said, stderr)
        self.assertEqual(server.chat_count(), 0)

    def test_a_call_the_server_refuses_ends_in_one_line_and_keeps_the_calls_made(self):
        root = self.make_tmp()
        labels, logs = write_labels(root)
        server = self.start(FakeOpenAI)
        server.faults = [None, ("status", 400, {"error": {"message": "bad request"}})]
        out = root / "out"
        code, _, stderr = run_main(self.argv(server, labels, logs, out))
        self.assertEqual(code, 2, stderr)
        self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
        self.assertIn("the server refused a judge call", stderr)
        self.assertIn("the 1 call made is kept", stderr)
        self.assertEqual(server.chat_count(), 2)

    def test_a_garbage_reply_is_counted_unreadable_never_a_verdict(self):
        root = self.make_tmp()
        labels, logs = write_labels(root, dev_items=[("open_task", "kept", "GARBAGE"),
                                                     ("open_task", "lost", "GARBAGE")],
                                    held_out_items=[], snippets=[])
        self.start_and_check_garbage(labels, logs, root / "out")

    def start_and_check_garbage(self, labels, logs, out):
        server = self.start()
        result, _ = self.check(server, labels, logs, out)
        open_task = result["figures"]["open_task"]["dev"]
        self.assertEqual((open_task["n"], open_task["unreadable"], open_task["kappa"]),
                         (0, 2, None))
        replies = [json.loads(line)["reply"] for line in
                   (out / "judge-calls.jsonl").read_text().splitlines()]
        self.assertEqual(replies, ["Well, maybe."] * 2)

    def test_an_item_whose_summary_is_too_long_for_the_judge_is_not_asked_and_said_so(self):
        root = self.make_tmp()
        labels, logs = write_labels(root, held_out_summary=" More." * 9000)
        server = self.start()
        result, stdout = self.check(server, labels, logs, root / "out")
        self.assertEqual(server.chat_count(), 7 + 5)
        self.assertEqual(result["figures"]["instruction"]["held-out"]["n"], 0)
        self.assertIn("6 items whose summary is over 48,000 characters", stdout)

    def test_a_server_that_stops_answering_ends_in_one_line_and_keeps_the_calls_made(self):
        root = self.make_tmp()
        labels, logs = write_labels(root)
        server = self.start()
        server.faults = [None, None] + [("delay", 2.0)] * 30
        out = root / "out"
        code, stdout, stderr = run_main(self.argv(
            server, labels, logs, out, "--read-timeout", "0.2", "--give-up-after", "0.5",
            "--retries", "1"))
        self.assertEqual(code, 3, stderr)
        self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
        self.assertIn("the 2 calls made are kept", stderr)
        self.assertIn("run the same command to go on", stderr)
        self.assertEqual(len((out / "judge-calls.jsonl").read_text().splitlines()), 2)
        self.assertFalse((out / "judge-check.json").exists())

    def test_kill_9_then_rerun_sends_only_the_missing_calls_and_equals_a_clean_run(self):
        root = self.make_tmp()
        labels, logs = write_labels(root)
        server = self.start()
        clean, _ = self.check(server, labels, logs, root / "clean")
        total = server.chat_count()
        out = root / "killed"
        kill_at_call(self, server, 4, runner_command(*self.argv(server, labels, logs, out)))
        self.assertEqual(len((out / "judge-calls.jsonl").read_text().splitlines()), 3)
        before = server.chat_count()
        resumed, _ = self.check(server, labels, logs, out)
        self.assertEqual(server.chat_count() - before, total - 3)
        self.assertEqual(resumed, clean)

    def test_ctrl_c_says_so_in_one_line_and_the_rerun_goes_on(self):
        root = self.make_tmp()
        labels, logs = write_labels(root)
        server = self.start()
        out = root / "out"
        stderr = kill_at_call(self, server, 2, runner_command(*self.argv(server, labels, logs, out)),
                              sig=signal.SIGINT)
        self.assertEqual(stderr.strip().splitlines(), [
            "interrupted; nothing completed was lost. Rerun the same command to go on."])
        kept = len((out / "judge-calls.jsonl").read_text().splitlines())
        before = server.chat_count()
        self.check(server, labels, logs, out)
        self.assertEqual(server.chat_count() - before, 7 + 6 + 5 - kept)

    def test_another_model_or_prompt_into_the_same_folder_is_refused(self):
        root = self.make_tmp()
        labels, logs = write_labels(root, held_out_items=[], snippets=[])
        server = self.start()
        server.models.append("other:2b")
        out = root / "out"
        self.check(server, labels, logs, out)
        prompt = root / "prompt.txt"
        prompt.write_text(read_judge_prompt().text + "\nAnswer in capitals.\n")
        for more, what in (([], "model"), (["--judge-prompt", str(prompt)], "prompt")):
            with self.subTest(what):
                argv = self.argv(server, labels, logs, out, *more)
                if not more:
                    argv[argv.index(MODEL)] = "other:2b"
                code, _, stderr = run_main(argv)
                self.assertEqual(code, 2)
                self.assertIn("holds a judge-check of another", stderr)
                self.assertEqual(len(stderr.strip().splitlines()), 1)


class ThresholdTest(JudgeCheckCase):
    # dev: kept at P(KEPT) 0.9, 0.8, 0.7, not kept at 0.35, 0.3, 0.6: only 0.65 and 0.7 part them
    DEV = [("request", "kept", "KEPT P=0.9"), ("request", "kept", "KEPT P=0.8"),
           ("instruction", "kept", "KEPT P=0.7"), ("instruction", "lost", "LOST P=0.35"),
           ("decision", "lost", "LOST P=0.3"), ("decision", "lost", "KEPT P=0.6")]
    HELD = [("open_task", "lost", "KEPT P=0.62"), ("open_task", "lost", "KEPT P=0.64"),
            ("open_task", "kept", "KEPT P=0.95")]

    def test_chosen_on_dev_from_either_api_shape_of_logprobs(self):
        for server_class in (FakeOllama, FakeOpenAI):
            with self.subTest(server_class.__name__):
                root = self.make_tmp()
                labels, logs = write_labels(root, self.DEV, self.HELD, [])
                result, stdout = self.check(self.start(server_class), labels, logs, root / "o")
                self.assertEqual(result["threshold"], 0.65)
                self.assertEqual(result["figures"]["open_task"]["held-out"]["kappa"], 1.0)
                self.assertIn("0.65 on P(KEPT), chosen on the dev labels only", stdout)

    def test_flipping_held_out_labels_does_not_move_it(self):
        flipped = [(c, "kept" if truth == "lost" else "lost", said)
                   for c, truth, said in self.HELD]
        chosen = []
        for held in (self.HELD, flipped):
            root = self.make_tmp()
            labels, logs = write_labels(root, self.DEV, held, [])
            chosen.append(self.check(self.start(), labels, logs, root / "o")[0]["threshold"])
        # pooled with the flipped held-out half, 0.6 would be best (one error, not two)
        self.assertEqual(chosen, [0.65, 0.65])


class MeasuredAgreementTest(JudgeCheckCase):
    def checked(self):
        root = self.make_tmp()
        labels, logs = write_labels(root, ThresholdTest.DEV, ThresholdTest.HELD + [
            ("request", "kept", "KEPT P=0.9"), ("request", "lost", "LOST P=0.1")], [])
        out = root / "out"
        self.check(self.start(), labels, logs, out)
        lock = json.loads((out / "judge-lock.json").read_text())
        return out, labels, lock

    def test_recomputed_from_the_journal_never_from_the_figures_written(self):
        out, labels, lock = self.checked()
        measured = measured_agreement(out, MODEL, lock["identity"], lock["prompt_sha256"], 0.65,
                                      labels_dir=labels)
        self.assertEqual(measured.per_category["open_task"]["held-out"], (1.0, 1.0, 1.0, 3))
        self.assertEqual(measured.per_category["request"]["held-out"][2], 1.0)
        self.assertEqual(measured.below, ["instruction", "decision"])
        self.assertIn(f"below the protocol's agreement threshold (kappa {AGREEMENT_KAPPA:g}) for "
                      "instruction and decision", measured.line())
        self.assertIn(MODEL, measured.line())
        written = json.loads((out / "judge-check.json").read_text())
        for category in written["figures"].values():
            for half in category.values():
                half["kappa"] = 1.0
        (out / "judge-check.json").write_text(json.dumps(written))
        self.assertEqual(measured_agreement(out, MODEL, lock["identity"], lock["prompt_sha256"],
                                            0.65, labels_dir=labels), measured)
        written["threshold"] = 0.3
        (out / "judge-check.json").write_text(json.dumps(written))
        self.assertEqual(chosen_threshold(out, MODEL, lock["identity"], lock["prompt_sha256"],
                                          labels_dir=labels), 0.65)
        # at another threshold the same replies read otherwise: recomputed, not stored
        self.assertNotEqual(measured_agreement(out, MODEL, lock["identity"],
                                               lock["prompt_sha256"], 0.5, labels_dir=labels),
                            measured)

    def test_another_model_identity_or_prompt_gives_none(self):
        out, labels, lock = self.checked()
        other_identity = {**lock["identity"], "digest": "another"}
        for name, args in (("model", ("other:2b", lock["identity"], lock["prompt_sha256"])),
                           ("identity", (MODEL, other_identity, lock["prompt_sha256"])),
                           ("prompt", (MODEL, lock["identity"], "0" * 64))):
            with self.subTest(name):
                self.assertIsNone(measured_agreement(out, *args, 0.5, labels_dir=labels))
                self.assertEqual(chosen_threshold(out, *args, labels_dir=labels), 0.5)
        self.assertIsNone(measured_agreement(out.parent / "nothing", MODEL, lock["identity"],
                                             lock["prompt_sha256"], 0.5, labels_dir=labels))


if __name__ == "__main__":
    unittest.main()
