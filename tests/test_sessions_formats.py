"""Reading the sessions a user brings (scripts/pilot/studies/sessions_formats.py): each format read into turns with
what was skipped and why; every malformed or unsafe file refused in one line, before any call."""
import hashlib
import json
import os
import tracemalloc
import unittest
from pathlib import Path
from unittest import mock

from fake_servers import FakeOllama
from helpers import FAST, TempDirMixin, run_main
from pilot.studies.sessions import readers as formats

CHAT = [{"role": "system", "content": "Be exact."},
        {"role": "user", "content": "Fix src/app/api.py, please."},
        {"role": "assistant", "content": None, "reasoning_content": "hidden",
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "run", "arguments": "{\"command\": \"pytest -q\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "1 failed"},
        {"role": "assistant", "content": [{"type": "text", "text": "One test fails."},
                                          {"type": "image_url", "image_url": {"url": "x"}}]}]


def agent_line(kind: str, content, **extra) -> dict:
    return {"type": kind, "uuid": "u", "parentUuid": None, "sessionId": "s", "timestamp": "2025-03-12T09:00:00Z",
            "message": {"role": kind, "content": content, **({"id": extra.pop("mid")} if "mid" in extra else {})},
            **extra}


AGENT = [{"type": "summary", "summary": "t"},
         agent_line("user", "Run the tests."),
         agent_line("assistant", [{"type": "thinking", "thinking": "plan", "signature": "x"}], mid="m1"),
         agent_line("assistant", [{"type": "text", "text": "Running them."}], mid="m1"),
         agent_line("assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}}],
                    mid="m1"),
         agent_line("user", [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "boom"}],
                              "is_error": True}]),
         agent_line("user", "side question", isSidechain=True),
         agent_line("user", "<command-name>/clear</command-name>", isMeta=True),
         {"type": "queue-operation", "operation": "enqueue"},
         agent_line("assistant", [{"type": "text", "text": "The run failed."}], mid="m2")]


def without_positions(turns: list[dict]) -> list[dict]:
    """Turns with where they came from (a line number or an index) left out."""
    def call(c):
        return {n: w for n, w in c.items() if n != "at"} if isinstance(c, dict) else c
    return [{k: [call(c) for c in v] if k == "calls" else call(v) if k == "call" else v
             for k, v in t.items() if k != "at"} for t in turns]


class FormatTest(TempDirMixin, unittest.TestCase):
    def setUp(self):
        self.tmp = self.make_tmp()

    def write(self, name: str, text: str | bytes) -> Path:
        path = self.tmp / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        return path

    def read(self, name: str, text: str | bytes) -> dict:
        path = self.write(name, text)
        (session,) = formats.read_session_file(path, name)
        return session

    def test_a_file_name_that_is_not_utf8_is_refused_before_any_call(self):
        """Such a name was read, sent and then broke the manifest's save and every score (the hostile review)."""
        folder = self.make_tmp()
        source = Path(__file__).resolve().parent.parent / "tasks" / "sessions" / "logs" / "2-support-refund.chat.json"
        with open(os.path.join(os.fsencode(folder), b"bad\xff.json"), "wb") as handle:
            handle.write(source.read_bytes())
        with FakeOllama(models=["m"]) as server:
            code, _, err = run_main(["--study", "sessions", "--sessions", str(folder), "--models", "m", "--host",
                                     server.url, "--out", str(self.make_tmp() / "run"), *FAST])
            self.assertEqual(server.chat_count(), 0)
        self.assertEqual(code, 2, err)
        self.assertIn("not printable UTF-8", err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)

    def test_a_json_list_of_chat_messages(self):
        session = self.read("chat.json", json.dumps(CHAT))
        self.assertEqual(session["format"], "chat-json")
        self.assertEqual([t["role"] for t in session["turns"]], ["user", "assistant", "tool", "assistant"])
        call = session["turns"][1]["calls"][0]
        self.assertEqual((call["name"], call["input"]), ("run", {"command": "pytest -q"}))
        self.assertEqual((session["turns"][2]["tool"], session["turns"][2]["text"]), ("run", "1 failed"))
        self.assertEqual(session["read"], {"unit": "messages", "read": 5, "joined": 0, "skipped": {
            "image_url part (not text)": 1, "system or developer message (left out: not session history)": 1,
            "thinking left out": 1}, "not_understood": {}, "calls_without_result": 0, "results_without_call": 0,
            "agent_compactions": 0})

    def test_an_object_with_messages_and_jsonl_of_messages_read_alike(self):
        as_object = self.read("obj.json", json.dumps({"model": "m", "messages": CHAT}))
        as_lines = self.read("lines.jsonl", "\n".join(json.dumps(m) for m in CHAT) + "\n")
        self.assertEqual((as_object["format"], as_lines["format"]), ("chat-json", "chat-jsonl"))
        self.assertEqual(without_positions(as_object["turns"]), without_positions(as_lines["turns"]))
        self.assertEqual([t["at"] for t in as_lines["turns"]], [2, 3, 4, 5])       # line numbers; indices in JSON
        self.assertEqual(as_lines["read"]["unit"], "lines")

    def test_a_coding_agent_log(self):
        session = self.read("agent.jsonl", "\n".join(json.dumps(line) for line in AGENT) + "\n")
        self.assertEqual(session["format"], "claude-code")
        self.assertEqual([(t["role"], t["text"]) for t in session["turns"]],
                         [("user", "Run the tests."), ("assistant", "Running them."), ("tool", "boom"),
                          ("assistant", "The run failed.")])
        self.assertEqual(session["turns"][1]["calls"], [{"id": "t1", "name": "Bash", "input": {"command": "pytest"},
                                                         "at": 5}])
        self.assertTrue(session["turns"][2]["error"])
        self.assertEqual(session["turns"][2]["tool"], "Bash")
        self.assertEqual(session["read"]["joined"], 1)   # m1: its thinking line left out, its tool line joined to its text
        self.assertEqual(session["read"]["skipped"], {
            "line type 'queue-operation' (no turn)": 1, "line type 'summary' (no turn)": 1,
            "meta message (isMeta)": 1, "side conversation (isSidechain, left out)": 1, "thinking left out": 1})
        self.assertEqual(session["read"]["read"], len(AGENT))

    def test_a_cline_tool_this_reader_does_not_list_is_known_by_its_results_header(self):
        history = [{"role": "user", "content": [{"type": "text", "text": "<task>\nTidy a.py.\n</task>"}]},
                   {"role": "assistant", "content": [{"type": "text", "text": "Trying.\n<fancy_new_tool>\n<target>a.py"
                                                                                 "</target>\n</fancy_new_tool>"}]},
                   {"role": "user", "content": [{"type": "text", "text": "[fancy_new_tool for 'a.py'] Result:"},
                                                {"type": "text", "text": "done"}]}]
        session = self.read("api_conversation_history.json", json.dumps(history))
        self.assertEqual(session["format"], "cline")
        self.assertEqual(session["turns"][1]["text"], "Trying.")
        self.assertEqual(session["turns"][2]["call"], session["turns"][1]["calls"][0])
        self.assertEqual(session["turns"][2]["call"]["input"], {"target": "a.py"})

    def test_a_last_line_cut_short_is_counted_and_left_out(self):
        text = "\n".join(json.dumps(line) for line in AGENT[:6]) + '\n{"type": "assistant", "mess'
        session = self.read("torn.jsonl", text)
        self.assertEqual(session["read"]["skipped"]["last line cut short (not JSON)"], 1)
        self.assertEqual(session["read"]["read"], 7)

    def test_a_damaged_line_in_the_middle_is_refused_naming_it(self):
        """FIX-B, point 1: one damaged line in the middle of a JSONL log was refused as "neither JSON nor JSONL",
        with no line and no next step; a cut last line is still left out and counted."""
        fixtures = Path(__file__).resolve().parent / "fixtures" / "sessions"
        for folder in ("codex", "claude-code", "gemini-jsonl"):
            source = sorted((fixtures / folder).glob("*.jsonl"))[0]
            lines = source.read_text(encoding="utf-8").splitlines()
            with self.subTest(folder):
                damaged = self.write(f"{folder}.jsonl", "\n".join(lines[:2] + [lines[2][:30]] + lines[3:]) + "\n")
                with self.assertRaises(formats.SessionFileError) as caught:
                    formats.read_session_file(damaged, damaged.name)
                said = str(caught.exception)
                self.assertEqual(len(said.splitlines()), 1)
                self.assertIn(f"{damaged.name} is JSONL, but line 3 is not JSON: a damaged or cut line", said)
                self.assertIn("repair or remove that line", said)
                code, out, err = run_main(["plan", "--study", "sessions", "--sessions", str(damaged), "--models", "m"])
                self.assertEqual((code, out), (2, ""))
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn("line 3 is not JSON: a damaged or cut line", err)
                torn = self.write(f"{folder}-torn.jsonl", "\n".join(lines[:-1] + [lines[-1][:30]]))
                self.assertEqual(formats.read_session_file(torn, torn.name)[0]["read"]["skipped"][formats.TORN_LINE], 1)
        two = self.write("two.jsonl", "\n".join(json.dumps(line) for line in AGENT[:4]) + "\n{cut\n{cut too\n"
                         + json.dumps(AGENT[4]))
        with self.assertRaisesRegex(formats.SessionFileError, "line 5 is not JSON: a damaged or cut line "
                                    r"\(1 other line not JSON either\); repair or remove those lines"):
            formats.read_session_file(two, two.name)

    def test_a_jsonl_log_is_read_one_line_at_a_time(self):
        """Issue 41, point 4: a JSONL log is read a line at a time, holding what its reader keeps and not the file
        (read whole, its bytes, its text, its lines and their values were each held at once: 4 to 5 times it)."""
        small = [agent_line("user", "Run the tests.")] + [{"type": "progress", "n": k} for k in range(520)]
        large = [{"type": "progress", "data": f"{k} " + "x" * 20_000} for k in range(400)]
        lines = [json.dumps(line) for line in small + large] + [
            json.dumps(agent_line("assistant", [{"type": "text", "text": "Done."}], mid="m1")), '{"type": "assi']
        path = self.write("long.jsonl", "\r\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:]))
        tracemalloc.start()
        try:
            (session,) = formats.read_session_file(path, path.name)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        self.assertEqual([(t["role"], t["text"], t["at"]) for t in session["turns"]],
                         [("user", "Run the tests.", 1), ("assistant", "Done.", len(lines))])
        self.assertEqual(session["read"]["skipped"], {"line type 'progress' (no turn)": 920,
                                                      "last line cut short (not JSON)": 1})
        self.assertEqual(session["bytes"], path.stat().st_size)
        self.assertEqual(session["sha256"], hashlib.sha256(path.read_bytes().replace(b"\r\n", b"\n")).hexdigest())
        self.assertLess(peak, path.stat().st_size / 4)

    def test_the_format_is_decided_by_the_content_not_the_name(self):
        self.assertEqual(self.read("notes.txt", json.dumps(CHAT))["format"], "chat-json")
        self.assertEqual(self.read("chat.json", "\n".join(json.dumps(m) for m in CHAT))["format"], "chat-jsonl")

    def test_fields_of_the_wrong_type_are_skipped_not_fatal(self):
        odd = [{"role": "user", "content": "Deploy 3f9a2c1d.", "tool_calls": 5},
               {"role": "assistant", "content": {"x": 1}, "tool_calls": {"a": 1}},
               {"role": "assistant", "tool_calls": [{"id": 1, "function": {"name": 3, "arguments": 7}}, "junk"]},
               {"role": "tool", "tool_call_id": [1], "content": 5}, {"role": 7}, "text"]
        session = self.read("odd.json", json.dumps(odd))
        self.assertEqual([t["role"] for t in session["turns"]], ["user", "assistant", "tool"])
        self.assertEqual(session["turns"][1]["calls"], [{"id": None, "name": "tool", "input": 7, "at": 2}])
        self.assertEqual(session["read"]["skipped"], {"content that is neither text nor a list of parts": 2,
                                                      "not a chat message (an object with a role)": 2,
                                                      "tool call with no function": 1})

    def test_files_that_are_none_of_the_formats_are_refused_naming_the_formats(self):
        cases = {"number.json": "42", "text.json": "just some notes\nabout a session\n", "empty.jsonl": "\n\n",
                 "list.json": json.dumps([1, 2, 3]), "objects.jsonl": '{"a": 1}\n{"b": 2}\n',
                 "middle.jsonl": json.dumps(CHAT[1]) + "\nnot json\n" + json.dumps(CHAT[3]) + "\n",
                 "only-system.json": json.dumps([{"role": "system", "content": "x"}]),
                 "table.csv": "role,content\nuser,hello\n"}
        for name, text in cases.items():
            with self.subTest(name):
                with self.assertRaises(formats.SessionFileError) as caught:
                    self.read(name, text)
                message = str(caught.exception)
                self.assertEqual(len(message.splitlines()), 1)
                self.assertTrue(message.startswith(name), message)

    def test_a_refusal_names_the_closest_format_and_what_the_file_lacks(self):
        cases = {
            "rollout.jsonl": ('{"timestamp": "t", "type": "response_item", "item": {"type": "message"}}\n'
                              '{"timestamp": "t", "type": "event_msg", "item": {}}\n',
                              "the closest is codex (a Codex CLI rollout (JSONL lines of {timestamp, type, payload})), "
                              "and it lacks a `payload` object on those lines"),
            "eval.json": (json.dumps({"version": 2, "eval": {"task": "t"}, "results": {}}),
                          "the closest is inspect-ai (an inspect_ai eval log (.json with `eval` and `samples`, or a "
                          ".eval zip), each sample a session), and it lacks a `samples` list"),
            "gemini.json": (json.dumps({"sessionId": "s", "startTime": "t", "messages": [{"kind": "user"}]}),
                            "the closest is gemini-cli"),
            "claude.jsonl": ('{"type": "user", "uuid": "u", "text": "hi"}\n{"type": "assistant", "uuid": "v"}\n',
                             "the closest is claude-code (Claude Code's JSONL transcript (lines with a `type` and a "
                             "`message` of content blocks)), and it lacks a `message` object on those lines"),
            "prose.jsonl": ('"just a string"\n"and another"\n', "is JSONL, but none of the session formats"),
        }
        for name, (text, said) in cases.items():
            with self.subTest(name):
                with self.assertRaises(formats.SessionFileError) as caught:
                    self.read(name, text)
                message = str(caught.exception)
                self.assertIn(said, message)
                self.assertEqual(len(message.splitlines()), 1)
                self.assertTrue(message.startswith(name), message)

    def test_untrusted_bytes_are_refused_in_one_line(self):
        deep = "[" * 5000 + "]" * 5000
        cases = {"latin1.json": (b'[{"role": "user", "content": "caf\xe9"}]', "not UTF-8"),
                 "surrogate.json": ('[{"role": "user", "content": "\\ud800"}]', "lone surrogate"),
                 "deep.json": (deep, "nested"),
                 "deep-list.json": ('[{"role": "user", "content": ' + "[" * 80 + "]" * 80 + "}]", "nested more than"),
                 "deep-args.json": (json.dumps([{"role": "assistant", "tool_calls": [{"id": "1", "function": {
                     "name": "x", "arguments": "[" * 5000 + "]" * 5000}}]}]), "nested")}
        for name, (text, why) in cases.items():
            with self.subTest(name):
                with self.assertRaises(formats.SessionFileError) as caught:
                    self.read(name, text)
                self.assertIn(why, str(caught.exception))
                self.assertEqual(len(str(caught.exception).splitlines()), 1)

    def test_a_file_over_the_size_limit_is_refused(self):
        with mock.patch.object(formats, "MAX_FILE_BYTES", 100):
            with self.assertRaisesRegex(formats.SessionFileError, "larger than"):
                self.read("big.json", json.dumps(CHAT))

    def test_a_folder_of_subfolders_names_the_one_to_give(self):
        """Codex keeps its rollouts in sessions/YYYY/MM/DD and Cline a folder per task: a folder whose sessions are
        all below it is refused in one line that names a subfolder holding one (links never followed)."""
        tree = self.tmp / "sessions" / "2026" / "03" / "14"
        tree.mkdir(parents=True)
        (tree / "rollout-1.jsonl").write_text(json.dumps(CHAT[1]) + "\n")
        os.symlink(tree, self.tmp / "sessions" / "2026" / "a-link")       # (a link below is never followed)
        code, _, err = run_main(["plan", "--study", "sessions", "--sessions", str(self.tmp / "sessions")])
        self.assertEqual(code, 2)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn(f"holds no session file itself, and the study reads no subfolder; {tree} holds one", err)
        self.assertNotIn("a-link", err)

    def test_a_folder_reads_its_json_and_jsonl_files_and_names_what_it_left_out(self):
        folder = self.tmp / "logs"
        folder.mkdir()
        (folder / "b.jsonl").write_text(json.dumps(CHAT[1]) + "\n")
        (folder / "a.json").write_text(json.dumps(CHAT))
        (folder / "README.md").write_text("notes")
        (folder / ".hidden.json").write_text("{}")
        (folder / "sub").mkdir()
        files, left_out = formats.session_files(folder)
        self.assertEqual([name for _, name in files], ["a.json", "b.jsonl"])
        self.assertEqual(left_out, {".hidden.json": "hidden",
                                    "README.md": "not .json, .jsonl, .traj, .eval or a chat.history.md",
                                    "sub": "a folder (not read)"})

    def test_links_devices_and_empty_folders_are_refused(self):
        target = self.write("real.json", json.dumps(CHAT))
        os.symlink(target, self.tmp / "link.json")
        with self.assertRaisesRegex(formats.SessionFileError, "is a link"):
            formats.session_files(self.tmp / "link.json")
        folder = self.tmp / "with-link"
        folder.mkdir()
        os.symlink(target, folder / "x.json")
        with self.assertRaisesRegex(formats.SessionFileError, "is a link"):
            formats.session_files(folder)
        fifo_folder = self.tmp / "with-fifo"
        fifo_folder.mkdir()
        os.mkfifo(fifo_folder / "pipe.jsonl")
        with self.assertRaisesRegex(formats.SessionFileError, "not a regular file"):
            formats.session_files(fifo_folder)
        os.mkfifo(self.tmp / "pipe.json")
        with self.assertRaisesRegex(formats.SessionFileError, "not a regular file"):
            formats.session_files(self.tmp / "pipe.json")
        empty = self.tmp / "empty"
        empty.mkdir()
        with self.assertRaisesRegex(formats.SessionFileError, "holds no session file"):
            formats.session_files(empty)

    def test_a_link_given_by_name_is_refused_with_the_path_it_points_to(self):
        """Issue 41, point 6, for --sessions as for audit: the refusal says which path to give instead."""
        target = self.write("real.json", json.dumps(CHAT))
        os.symlink(target, self.tmp / "link.json")
        with self.assertRaises(formats.SessionFileError) as caught:
            formats.session_files(self.tmp / "link.json")
        self.assertIn(f"give the path it points to: {target.resolve()}", str(caught.exception))

    def test_a_file_made_a_pipe_after_it_was_listed_is_refused_when_opened(self):
        """A log is read by seeking in it (issue 41, point 4): a pipe put in its place after the folder was listed
        is refused in one line when it is opened, not read as an empty file or a traceback."""
        os.mkfifo(self.tmp / "swapped.jsonl")
        with self.assertRaisesRegex(formats.SessionFileError, "swapped.jsonl is not a regular file"):
            formats.read_session_file(self.tmp / "swapped.jsonl", "swapped.jsonl")


class RefusedBeforeAnyCallTest(TempDirMixin, unittest.TestCase):
    """A malformed session is one line and exit 2 from plan and run, and the server receives no call."""

    def test_malformed_sessions_are_refused_before_any_call(self):
        tmp = self.make_tmp()
        good = tmp / "good.json"
        good.write_text(json.dumps(CHAT))
        cases = {"number.json": "42", "latin1.json": b"\xff\xfe", "deep.json": "[" * 3000 + "]" * 3000}
        with FakeOllama(models=["m"]) as server:
            for name, text in cases.items():
                folder = tmp / name.split(".")[0]
                folder.mkdir()
                (folder / "good.json").write_bytes(good.read_bytes())
                (folder / name).write_bytes(text if isinstance(text, bytes) else text.encode())
                for command in (["plan"], ["run", "--host", server.url, "--out", str(tmp / "run"), *FAST]):
                    with self.subTest(name=name, command=command[0]):
                        code, out, err = run_main([*command, "--study", "sessions", "--sessions", str(folder),
                                                   "--models", "m"])
                        self.assertEqual(code, 2)
                        self.assertEqual(out, "")
                        self.assertEqual(len(err.strip().splitlines()), 1, err)
                        self.assertIn(name, err)
            self.assertEqual(server.chat_count(), 0)
        self.assertFalse((tmp / "run").exists())

    def test_a_folder_with_damaged_files_is_refused_in_one_line_naming_each(self):
        """Issue 41, point 11: the study is pre-registered, so its sample never shrinks silently; it refuses before any
        call, in one line that names every damaged file (five, then how many more) and says what to do."""
        tmp = self.make_tmp()
        damaged = {"a-number.json": "42", "b-latin1.jsonl": b'{"type": "user"}\n\xff\xfe\n',
                   "c-deep.json": "[" * 3000 + "]" * 3000, "d-empty.jsonl": "", "e-text.jsonl": "not json\nat all\n",
                   "f-torn.json": json.dumps(CHAT)[:40], "g-none.jsonl": '{"a": 1}\n{"b": 2}\n'}
        with FakeOllama(models=["m"]) as server:
            for count in (3, 7):
                folder = tmp / f"logs{count}"
                folder.mkdir()
                (folder / "good.json").write_text(json.dumps(CHAT))
                for name, text in list(damaged.items())[:count]:
                    (folder / name).write_bytes(text if isinstance(text, bytes) else text.encode())
                for command in (["plan"], ["run", "--host", server.url, "--out", str(tmp / "run"), *FAST]):
                    with self.subTest(count=count, command=command[0]):
                        code, out, err = run_main([*command, "--study", "sessions", "--sessions", str(folder),
                                                   "--models", "m"])
                        self.assertEqual((code, out), (2, ""))
                        self.assertEqual(len(err.strip().splitlines()), 1, err)
                        self.assertIn(f"holds {count} session files that cannot be read", err)
                        named = [name for name in damaged if name in err]
                        self.assertEqual(named, list(damaged)[:min(count, 5)])
                        self.assertEqual("and 2 more" in err, count == 7)
                        self.assertIn("move them out of the folder", err)
                        self.assertNotIn("good.json", err)
            self.assertEqual(server.chat_count(), 0)
        self.assertFalse((tmp / "run").exists())

    def test_a_folder_names_its_links_and_its_damaged_files_in_one_line(self):
        """FIX-B, point 3: a folder with a link and damaged files named only the link; once it was removed, the other
        files were named: one round of fixing needed two."""
        tmp = self.make_tmp()
        folder = tmp / "logs"
        folder.mkdir()
        (folder / "good.json").write_text(json.dumps(CHAT))
        target = tmp / "elsewhere.json"
        target.write_text(json.dumps(CHAT))
        os.symlink(target, folder / "b-link.json")
        (folder / "a-number.json").write_text("42")
        lines = [json.dumps(line) for line in AGENT]
        (folder / "c-damaged.jsonl").write_text("\n".join(lines[:4] + ['{"type": "us'] + lines[4:]))
        code, out, err = run_main(["plan", "--study", "sessions", "--sessions", str(folder), "--models", "m"])
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn("holds 3 session files that cannot be read: a-number.json (", err)
        self.assertIn(f"b-link.json (is a link, never followed: give the path it points to, {target.resolve()})", err)
        self.assertIn("c-damaged.jsonl (is JSONL, but line 5 is not JSON: a damaged or cut line)", err)
        self.assertIn("repair or remove each damaged line named, or move them out of the folder", err)
        self.assertNotIn("good.json", err)


if __name__ == "__main__":
    unittest.main()
