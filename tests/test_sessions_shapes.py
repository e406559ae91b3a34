"""Issue 42, round two, on the shapes real logs take: tests/fixtures/shapes/ holds our own text in
each tool's shape (a Claude Code Read of a 40-line file, a SWE-agent `open` window, an inspect_ai
web_browser page, ...), each read by the study's readers; every test here fails on the code before
its point was fixed."""
from __future__ import annotations

import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "scripts"))

import pilot.studies  # noqa: E402,F401  (registers the studies)
from pilot.studies.sessions import readers  # noqa: E402
from pilot.studies.sessions import design  # noqa: E402
from pilot.studies.sessions.design import turn_parts  # noqa: E402
from pilot.studies.sessions.segments import CallRoom  # noqa: E402
from pilot.studies.sessions.truth import ground_truth  # noqa: E402

SHAPES = HERE / "fixtures" / "shapes"


def read(name: str) -> dict:
    path = SHAPES / name
    (session,) = readers.read_session_file(path, path.name)
    return session


def values(session: dict) -> list[str]:
    """The session's values as the study takes them (from the turns as the compactor sees them)."""
    truth = ground_truth(session["turns"], render=turn_parts)
    return [v["text"] for v in truth["values"]]


class ViewNumbersTest(unittest.TestCase):
    """Point 1: a number a tool writes only to show where a line or an element is, is no value."""

    def test_claude_code_read_of_a_40_line_file(self):
        found = values(read("claude-code-read-settings.jsonl"))
        self.assertIn("8443", found)
        self.assertIn("worker/settings.py", " ".join(found))
        self.assertFalse({str(n) for n in range(10, 41)} & set(found), found)

    def test_swe_agent_open_window(self):
        found = values(read("swe-agent-open-window.traj"))
        self.assertFalse({str(n) for n in range(118, 131)} - {"121", "124"} & set(found), found)
        # said elsewhere (the call's line_number, the reply's `line 121`): still values
        self.assertIn("124", found)
        self.assertIn("121", found)
        self.assertIn("fxrates/client.py", found)

    def test_inspect_ai_browser_element_ids(self):
        found = values(read("inspect-ai-browser.json"))
        self.assertFalse({"212", "218", "224", "231", "241", "305", "309"} & set(found), found)
        self.assertIn("237", found)                     # the id the agent clicked, in its call
        self.assertIn("RF-5521", found)
        self.assertIn("77120", found)



class LongTurnsTest(unittest.TestCase):
    """Point 8: a turn over MAX_TURN_CHARS is cut at every window size, and plan says so; the whole
    session in one segment is counted once."""

    def setUp(self):
        design.READ_MEMO.clear()
        _, self.tasks = design.read_sessions(SHAPES / "claude-code-long-test-log.jsonl")
        (self.episode,) = self.tasks["episodes"]

    def test_plan_says_how_many_turns_were_cut_and_by_how_much(self):
        read = self.episode["read"]
        self.assertEqual(1, read["cut_turns"])
        self.assertGreater(read["cut_chars"], 4000)
        said = "\n".join(design.describe_sessions(self.tasks))
        self.assertIn("1 of 4 turns are longer than 4,000 characters and cut to that", said)
        self.assertIn(f"{read['cut_chars']:,} of the session's {read['whole_chars']:,} characters",
                      said)

    def test_the_whole_session_in_one_segment_is_counted_once(self):
        room = CallRoom(compaction_frame=10, state=20, output=30, answer_frame=5, answer=7)
        self.assertEqual(5 + 7 + 2 * 1000, room.window_for(1000))
        self.assertEqual(10 + 20 + 30 + 1000, room.window_for(1000, alone=True))
        fit = self.episode["window"]
        room = design.call_room(self.episode["questions"])
        self.assertEqual(room.window_for(fit["tokens"], alone=True), fit["one_segment_window"])
        self.assertLess(fit["one_segment_window"], room.answer_frame + 2 * fit["tokens"])


class OneOffRequestsTest(unittest.TestCase):
    """Point 6: a request for one thing to be made is no standing instruction; a rule still is."""

    def test_write_a_hello_world_function_is_a_one_off_request(self):
        truth = ground_truth(read("gemini-hello-world.json")["turns"])
        self.assertEqual(["From now on, put every new script under tools/."],
                         [i["text"] for i in truth["instructions"]])

    def test_one_thing_to_make_and_a_rule_about_how(self):
        from pilot.studies.sessions.truth import is_standing_instruction
        for sentence in ("Write a hello world function", "Write me a script that prints the date",
                         "Make a backup of the config", "Add a test for the parser"):
            with self.subTest(sentence=sentence):
                self.assertFalse(is_standing_instruction(sentence))
        for sentence in ("Write all commit messages in English", "Use a branch for every change",
                         "Write tests first", "Use a virtualenv from now on"):
            with self.subTest(sentence=sentence):
                self.assertTrue(is_standing_instruction(sentence))


class ShapesReadTest(unittest.TestCase):
    """Point 7: shapes that were refused or half read."""

    def test_a_swe_agent_demonstration_file_of_history_alone_is_read(self):
        whole = read("swe-agent-open-window.traj")
        demo = read("swe-agent-demonstration.traj")
        self.assertEqual("swe-agent", demo["format"])
        self.assertEqual([t["role"] for t in whole["turns"]], [t["role"] for t in demo["turns"]])
        self.assertEqual([t["text"] for t in whole["turns"]], [t["text"] for t in demo["turns"]])

    def test_a_codex_rollout_of_2026_with_tool_search_items_is_read_whole(self):
        session = read("codex-2026-tool-search.jsonl")
        self.assertEqual({}, session["read"]["not_understood"])
        self.assertEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"],
                         [t["role"] for t in session["turns"]])
        self.assertEqual(["tool_search", "tracker__get_issue"],
                         [t["tool"] for t in session["turns"] if t["role"] == "tool"])
        self.assertIn("tracker__get_issue", session["turns"][2]["text"])
        self.assertEqual(0, session["read"]["calls_without_result"])

    def test_a_cline_task_with_its_model_and_metrics_fields_is_cline_not_roo_code(self):
        # Cline writes `ts` and <user_message> as Roo Code does; its modelInfo and metrics
        # (ClineStorageMessage) are its own
        session = read("cline-2026-task/api_conversation_history.json")
        self.assertEqual("cline", session["format"])
        self.assertEqual(["Add a dark mode toggle to the settings page.",
                          "Keep the toggle in the header."],
                         [t["text"] for t in session["turns"] if t["role"] == "user"])

    def test_a_codex_rollout_with_messages_between_agents_reads_each_once(self):
        # agent_message items, inter_agent_communication lines (a second carrier of the same
        # message), an older JSON carrier, world_state and additional_tools (codex-rs protocol)
        session = read("codex-2026-agent-messages.jsonl")
        self.assertEqual({}, session["read"]["not_understood"])
        self.assertEqual([("user", ""), ("assistant", ""), ("tool", "spawn_agent"),
                          ("tool", "agent_message"), ("tool", "agent_message"), ("assistant", "")],
                         [(t["role"], t.get("tool", "")) for t in session["turns"]])
        reports = [t["text"] for t in session["turns"] if t.get("tool") == "agent_message"]
        self.assertEqual(["Halfway: one of two files read.",
                          "refund() rounds 0.125 down; two tests cover it."], reports)
        self.assertEqual(0, session["read"]["results_without_call"])

    def test_a_codex_sub_agent_reads_its_task_and_its_own_report(self):
        session = read("codex-2026-sub-agent.jsonl")
        self.assertEqual({}, session["read"]["not_understood"])
        self.assertEqual(["user", "assistant"], [t["role"] for t in session["turns"]])
        self.assertEqual("Review src/refund.py", session["turns"][0]["text"])
        self.assertIn("rounds 0.125 down", session["turns"][1]["text"])

    def test_a_folder_with_one_file_that_is_no_session_reads_the_rest(self):
        folder = HERE / "fixtures" / "outcomes" / "cline-task"
        design.READ_MEMO.clear()
        _, tasks = design.read_sessions(folder)
        self.assertEqual(["api_conversation_history.json"], [e["file"] for e in tasks["episodes"]])
        self.assertIn("task_metadata.json", tasks["left_out"])
        self.assertIn("not a session", tasks["left_out"]["task_metadata.json"])
        said = "\n".join(design.describe_sessions(tasks))
        self.assertIn("task_metadata.json: left out (not a session", said)

    def test_a_file_that_is_no_session_given_alone_is_still_refused(self):
        from pilot.studies.sessions.readers import SessionFileError
        design.READ_MEMO.clear()
        with self.assertRaises(SessionFileError):
            design.read_sessions(HERE / "fixtures" / "outcomes" / "cline-task" /
                                 "task_metadata.json")


if __name__ == "__main__":
    unittest.main()
