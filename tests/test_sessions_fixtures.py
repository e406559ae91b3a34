"""Every format the sessions study reads (scripts/pilot/studies/sessions/readers/, one module per
format, one entry each in its registry), on fixtures of our own in each tool's shape
(tests/fixtures/sessions/, found through the registry: each entry names its folder; the folder's
README says where each shape was checked): the turns in order, each tool result linked to its call,
the failed and denied steps, the harness's noise left out and the compactions the agent recorded, as
each fixture's .expected.json names them; then all of them end to end through the runner on the fake
server."""
import copy
import json
import random
import shutil
import unittest
import zipfile
from pathlib import Path

from fake_servers import FakeOllama
from helpers import FAST, REPO, TempDirMixin, run_main
from pilot.studies.sessions import design as ss, readers as formats

FIXTURES = REPO / "tests" / "fixtures" / "sessions"

CHAT = {"chat-json", "chat-jsonl"}      # their cases are in tests/test_sessions_formats.py

# The steps a log does not show, as the fixtures' own evidence says: aider writes neither a command's output nor its
# exit code (the failure of `make db-up` is only in the next reply); SWE-agent's blocked step is in `trajectory` only.
NOT_IN_THE_LOG = {"shell:make db-up", None}

HARNESS_TEXT = ("<environment_details>", "<environment_context>", "<user_instructions>", "<system-reminder>",
                "<explicit_instructions", "<state_snapshot>", "<local-command", "<command-name>",
                "[Request interrupted", "<thinking>", "This session is being continued from a previous conversation",
                "[CONTEXT COMPACTION SUMMARY]", "## Conversation Summary", "handoff summary")

SYNTHETIC = ("xml:", "shell:", "edit:", "cmd:", "step:")

TOOL_NAMES = {"shell (suggested command)": "shell", "edit (SEARCH/REPLACE block)": "edit"}


def line_of(at) -> int | None:
    if isinstance(at, int):
        return at
    head = str(at).split(".", 1)[0].split(":", 1)[0]
    return int(head) if head.isdigit() else None


def expectations() -> list[tuple[Path, dict, str | None]]:
    """(fixture file, expected session, its name among the file's sessions or None for the file's
    only one), of every format in the readers' registry that names a fixture folder; each expected
    session's `read_as` is the format its entry names."""
    found = []
    for reader in formats.READERS:
        if reader.fixtures is None:
            continue
        for path in sorted((FIXTURES / reader.fixtures).rglob("*.expected.json")):
            expected = dict(json.loads(path.read_text(encoding="utf-8")), read_as=reader.name)
            fixture = path.parent / Path(expected["fixture"].split("#")[0]).name
            if "samples" in expected:
                samples = json.loads(fixture.read_text(encoding="utf-8"))["samples"]
                found += [(fixture, dict(sample, read_as=reader.name),
                           f"{fixture.name}#{samples[k]['id']}")
                          for k, sample in enumerate(expected["samples"])]
            else:
                found.append((fixture, expected, None))
    return found


def session_of(fixture: Path, name: str | None) -> dict:
    sessions = formats.read_session_file(fixture, fixture.name)
    return sessions[0] if name is None else next(s for s in sessions if s["file"] == name)


def tool_turn(session: dict, link: dict) -> dict:
    at = link["result_at"]
    candidates = [t for t in session["turns"] if t["role"] == "tool" and t["at"] == at]
    if not link["call_id"].startswith(SYNTHETIC):
        candidates = [t for t in candidates if t["call"] and t["call"]["id"] == link["call_id"]]
    assert candidates, f"no tool turn at {at!r} for {link['call_id']}"
    return candidates[0]


class FixtureTest(TempDirMixin, unittest.TestCase):
    def test_every_format_has_fixtures_and_every_fixture_is_read_as_its_format(self):
        """Every entry of the registry (but chat messages) names a folder of fixtures, every folder
        of fixtures is an entry's, and each fixture is read as the format of the entry whose folder
        holds it."""
        cases = expectations()
        self.assertEqual({e["read_as"] for _, e, _ in cases}, set(formats.FORMATS) - CHAT)
        self.assertEqual({r.name for r in formats.READERS if r.fixtures is None}, CHAT)
        self.assertEqual({p.name for p in FIXTURES.iterdir() if p.is_dir()},
                         {r.fixtures for r in formats.READERS} - {None})
        for fixture, expected, name in cases:
            with self.subTest(name or fixture.name):
                self.assertEqual(session_of(fixture, name)["format"], expected["read_as"])

    def test_turns_in_order_with_who_said_what_and_where(self):
        for fixture, expected, name in expectations():
            with self.subTest(name or str(fixture.relative_to(FIXTURES))):
                session = session_of(fixture, name)
                turns = session["turns"]
                self.assertEqual({r: sum(t["role"] == r for t in turns) for r in ("user", "assistant", "tool")},
                                 expected["turns"])
                self.assertEqual([(t["role"], t["at"]) for t in turns],
                                 [(t["role"], t["at"]) for t in expected["turn_sequence"]])
                for turn, want in zip(turns, expected["turn_sequence"]):
                    real = [c for c in want.get("calls", []) if not c.startswith(SYNTHETIC)]
                    if real:
                        self.assertEqual([c["id"] for c in turn["calls"]], real)
                    if turn["role"] == "assistant":
                        self.assertEqual(len(turn["calls"]), len(want.get("calls", [])), turn["at"])
                for turn in turns:
                    for mark in HARNESS_TEXT:
                        self.assertNotIn(mark, turn["text"], f"harness text in the turn at {turn['at']}")

    def test_every_tool_result_is_linked_to_its_call_with_its_name_arguments_and_outcome(self):
        for fixture, expected, name in expectations():
            with self.subTest(name or str(fixture.relative_to(FIXTURES))):
                session = session_of(fixture, name)
                for link in expected["tool_links"]:
                    turn = tool_turn(session, link)
                    self.assertIsNotNone(turn["call"], link["call_id"])
                    self.assertEqual(turn["call"]["at"], link["call_at"], link["call_id"])
                    self.assertEqual(turn["call"]["name"], TOOL_NAMES.get(link["tool"], link["tool"]))
                    self.assertIsInstance(turn["call"]["input"], dict)
                    if link["call_id"] not in NOT_IN_THE_LOG:
                        self.assertEqual(ss.turn_outcome(turn), link["status"], link["call_id"])
                unlinked = expected.get("unlinked_calls", [])
                self.assertEqual(session["read"]["calls_without_result"], len(unlinked))
                self.assertEqual(session["read"]["results_without_call"], 0)

    def test_failed_and_denied_steps_where_the_log_marks_them(self):
        for fixture, expected, name in expectations():
            with self.subTest(name or str(fixture.relative_to(FIXTURES))):
                session = session_of(fixture, name)
                shown = [s for s in expected["failed_steps"] + expected["denied_steps"]
                         if s["call_id"] not in NOT_IN_THE_LOG]
                outcomes = {}
                for step in shown:
                    link = next(k for k in expected["tool_links"] if k["call_id"] == step["call_id"])
                    outcomes[step["call_id"]] = ss.turn_outcome(tool_turn(session, link))
                self.assertEqual(outcomes, {s["call_id"]: "failed" if s in expected["failed_steps"] else "denied"
                                            for s in shown})
                found = [t for t in session["turns"] if t["role"] == "tool" and ss.turn_outcome(t) != "ok"]
                self.assertEqual(len(found), len(shown), [(t["at"], t["text"][:60]) for t in found])

    def test_the_agents_own_compactions_are_events_with_what_the_log_records(self):
        for fixture, expected, name in expectations():
            with self.subTest(name or str(fixture.relative_to(FIXTURES))):
                session = session_of(fixture, name)
                events = session["compactions"]
                self.assertEqual(len(events), len(expected["compactions"]))
                self.assertEqual(session["read"]["agent_compactions"], len(events))
                for event, want in zip(events, expected["compactions"]):
                    self.assertEqual(event["at"], want["at"])
                    self.assertEqual(event["trigger"], want["trigger"])
                    self.assertEqual(event["tokens_before"], want["tokens_before"])
                    self.assertEqual(event["readable"], want["summary_readable"])
                    if event["readable"]:
                        self.assertGreater(len(event["summary"]), 80)
                        self.assertFalse(any(event["summary"] in t["text"] for t in session["turns"]))
                    else:
                        self.assertIsNone(event["summary"])
                        self.assertTrue(event["why_unreadable"])
                    replaced = want["replaces"]
                    if replaced.get("from") is None:
                        self.assertIsNone(event["replaces"])
                        continue
                    lines = dict(enumerate(fixture.read_text(encoding="utf-8").splitlines(), 1))
                    kept_lines = {max(n for n, line in lines.items() if n < want["at"] and
                                      line.startswith('{"id":"' + kept + '"'))
                                  for kept in replaced.get("kept_verbatim_ids", [])}
                    inside = [k for k, t in enumerate(session["turns"], 1)
                              if replaced["from"] <= line_of(t["at"]) <= replaced["to"] and
                              line_of(t["at"]) not in kept_lines]
                    self.assertEqual(event["replaces"], [inside[0], inside[-1]])
                    if "kept_verbatim_ids" in replaced:       # (Codex keeps the user's messages: not listed there)
                        self.assertEqual(event["kept_turns"], [k for k, t in enumerate(session["turns"], 1)
                                                               if line_of(t["at"]) in kept_lines])
                    self.assertEqual(event["after_turn"], max([k for k, t in enumerate(session["turns"], 1)
                                                               if line_of(t["at"]) < line_of(want["at"])], default=0))

    def test_the_values_the_story_plants_survive_reading(self):
        for fixture, expected, name in expectations():
            with self.subTest(name or str(fixture.relative_to(FIXTURES))):
                rendered = "\n".join(text for turn in session_of(fixture, name)["turns"]
                                     for _, text in ss.turn_parts(turn))
                for value in expected["values"]:
                    self.assertIn(value["value"], rendered, value["id"])

    def test_an_inspect_eval_zip_is_read_as_its_json_log_is(self):
        log = json.loads((FIXTURES / "inspect-ai" / "2026-05-20T08-40-12+00-00_refund-desk_b62x.json").read_text())
        path = self.make_tmp() / "refund.eval"
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("header.json", json.dumps({k: v for k, v in log.items() if k != "samples"}))
            for sample in log["samples"]:
                archive.writestr(f"samples/{sample['id']}_epoch_{sample['epoch']}.json", json.dumps(sample))
            archive.writestr("summaries.json", "[]")
        sessions = formats.read_session_file(path, "refund.eval")
        self.assertEqual([s["file"] for s in sessions], ["refund.eval#refund-1", "refund.eval#refund-2"])
        self.assertEqual([len(s["turns"]) for s in sessions], [27, 27])
        self.assertEqual([len(s["compactions"]) for s in sessions], [1, 1])
        broken = path.with_name("broken.eval")
        broken.write_bytes(path.read_bytes()[:200])
        with self.assertRaisesRegex(formats.SessionFileError, "is a zip file, but not one this reader can open"):
            formats.read_session_file(broken, "broken.eval")
        other = path.with_name("other.eval")
        with zipfile.ZipFile(other, "w") as archive:
            archive.writestr("notes.txt", "hello")
        with self.assertRaisesRegex(formats.SessionFileError, "not an inspect_ai .eval log"):
            formats.read_session_file(other, "other.eval")

    def test_a_sub_agent_file_says_what_it_holds(self):
        folder = self.make_tmp()
        shutil.copyfile(FIXTURES / "claude-code" / "subagents-only" / "agent-a3f90c1e.jsonl",
                        folder / "agent-a3f90c1e.jsonl")
        (session,) = formats.read_session_file(folder / "agent-a3f90c1e.jsonl", "agent-a3f90c1e.jsonl")
        self.assertEqual(session["kind"], "sub-agent")
        code, out, err = run_main(["plan", "--study", "sessions", "--sessions", str(folder), "--models", "m"])
        self.assertEqual(code, 0, err)
        self.assertIn("agent-a3f90c1e.jsonl: claude-code (sub-agent)", out)
        self.assertIn("every session here is a sub-agent's own log", out)


JUNK = (None, 5, -1, 3.5, True, "x", "", [], {}, [1, "a"], {"type": "text"}, {"type": 7}, "attachment://zz", [None],
        {"text": 5}, {"id": []}, [{"role": []}])


def damaged(value, rng: random.Random):
    """The value with one field, anywhere in it, replaced by a value of another type."""
    places, stack = [], [(value, ())]
    while stack:
        item, where = stack.pop()
        children = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else ()
        for key, child in children:
            places.append(where + (key,))
            stack.append((child, where + (key,)))
    if not places:
        return copy.deepcopy(rng.choice(JUNK))
    where = rng.choice(places)
    parent = value
    for key in where[:-1]:
        parent = parent[key]
    parent[where[-1]] = copy.deepcopy(rng.choice(JUNK))
    return value


class HostileTest(TempDirMixin, unittest.TestCase):
    def test_damaged_logs_are_read_or_refused_in_one_line_never_a_traceback(self):
        """Every fixture with fields of the wrong type in random places (a seeded sample of what a fuzzer found
        before these readers guarded every lookup): read, or refused as a session file, before any call."""
        rng, tmp = random.Random(35), self.make_tmp()
        for fixture, _, _ in expectations():
            text = fixture.read_text(encoding="utf-8")
            for trial in range(6):
                with self.subTest(fixture=fixture.name, trial=trial):
                    if fixture.suffix == ".md":
                        lines = text.splitlines()
                        for _ in range(4):
                            lines[rng.randrange(len(lines))] = rng.choice(
                                ["> Running x", "#### /test y", "> Run shell command? (Y)es [Yes]: n", "```bash",
                                 "<<<<<<< SEARCH", "> Applied edit to zz", "", "> Added 3 lines of output to the chat."])
                        out, name = "\n".join(lines), "x.chat.history.md"
                    elif fixture.suffix == ".jsonl":
                        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
                        for _ in range(3):
                            lines[rng.randrange(len(lines))] = damaged(lines[rng.randrange(len(lines))], rng)
                        out, name = "\n".join(json.dumps(line) for line in lines), fixture.name
                    else:
                        value = json.loads(text)
                        for _ in range(3):
                            value = damaged(value, rng)
                        out, name = json.dumps(value), fixture.name
                    path = tmp / name
                    path.write_text(out, encoding="utf-8")
                    ss.READ_MEMO.clear()
                    try:
                        ss.read_sessions(path)
                    except ss.TaskSetError as err:
                        self.assertEqual(len(str(err).splitlines()), 1, str(err))


class EndToEndTest(TempDirMixin, unittest.TestCase):
    def test_every_fixture_runs_through_the_runner_on_the_fake_server(self):
        folder = self.make_tmp() / "logs"
        folder.mkdir()
        cases = {}
        for fixture, expected, name in expectations():
            flat = "-".join(fixture.relative_to(FIXTURES).parts)
            flat = flat if flat.endswith((".json", ".jsonl", ".traj", "chat.history.md")) else flat + ".json"
            shutil.copyfile(fixture, folder / flat)
            cases[flat if name is None else f"{flat}#{name.split('#')[1]}"] = expected
        out = self.make_tmp() / "run"
        with FakeOllama(models=["m"]) as server:
            code, printed, err = run_main(["run", "--study", "sessions", "--sessions", str(folder), "--regimes",
                                           "R2,K1", "--models", "m", "--host", server.url, "--out", str(out),
                                           *FAST])
        self.assertEqual(code, 0, err)
        self.assertEqual(run_main(["score", "--out", str(out)])[0], 0)
        results = json.loads((out / "results.json").read_text())
        by_file = {s["file"]: s for s in results["sessions"]}
        self.assertEqual(sorted(by_file), sorted(cases))
        for name, expected in cases.items():
            with self.subTest(name):
                session = by_file[name]
                self.assertEqual(session["read"]["turns"], sum(expected["turns"].values()))
                shown = [s for s in expected["failed_steps"] + expected["denied_steps"]
                         if s["call_id"] not in NOT_IN_THE_LOG]
                self.assertEqual(len(session["steps"]), len(shown))
                self.assertEqual(session["read"]["agent_compactions"], len(expected["compactions"]))
        self.assertEqual({r["regime"] for r in results["values"]}, {"R2", "K1"})


if __name__ == "__main__":
    unittest.main()
