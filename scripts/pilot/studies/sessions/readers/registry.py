"""The session formats read: one entry per format in READERS, the list every other list of formats
is made of (FORMATS, FORMATS_READ, the checks tried on a file, the fixture tests' folders).

To add a reader for another agent's log (tests/test_readers.py adds one to a copy of the repository
through these steps alone, and runs `plan --study sessions` and `audit` on its file):
1. Write one module in this folder, named after the agent (readers/NAME.py), opening with a
   docstring. It imports only readers/turns.py (SessionBuilder, the record every reader fills, and
   the helpers the readers share: text_of, as_text, key_of, first, one_object_a_line, exit_code_in,
   json_error, Refused) and, where it reads another format's items, that format's module. It holds
   two functions:
   - checks(value) -> [(passed, what it needs)]: how the format is recognised from the file's
     content, never its name. The package parses the file first, by its `layout`: "json" (one JSON
     value: the value is given), "jsonl" (one JSON value a line: the list of the first 501 lines'
     values is given; a last line cut short is counted and left out, another line that is not JSON
     refuses the file, naming it) or "text" (the text is given).
     Each check is one thing the format has, in words that finish "it lacks ..."; the first, for a
     JSON format, asks only for an object or a list. Look at the first items only (turns.first
     looks at 500).
   - read(value) -> [SessionBuilder]: the sessions the file holds (one builder each), every item
     read counted (builder.read) and every item left out counted with why (builder.skip; unread=True
     for an item the reader does not understand); a compaction the agent recorded is
     builder.compaction, never a turn. A "jsonl" reader gets the lines as (line number, value)
     pairs, parsed from the file one at a time each time it goes through them (it may go through
     them more than once, but never indexes them: only what it keeps is held), and gives line
     numbers as positions; a "json" reader gives indices. It never raises on a field of
     the wrong type (turns.key_of, isinstance): tests/test_sessions_fixtures.py damages every
     fixture at random and expects a reading or a one-line refusal. A file it must refuse raises
     turns.Refused(why, hint).
2. Import the module below (`from . import NAME`) and add one entry to READERS, by keyword, one
   field per line in the order of Reader's fields: its name (what sessions, plans and reports call
   the format), about (what the file is, in a phrase: a refusal names the closest format with it),
   named (how the one-line list of formats read names it; entries that share it are named once),
   layout, checks, read, and fixtures. The entries of a layout are tried in the list's order and the
   first whose checks all pass reads the file; when none does, the refusal names the one that passed
   the largest share of its checks beyond the first, and the first check it failed. So a format
   whose files another entry's checks also pass goes before that entry: chat-json and chat-jsonl
   read any list of messages with a `role`, and come after every other format of their layout. A
   format read from a zip file names `unzip`: (the file's bytes, parse(text, part)) -> the value its
   reader reads. A format another entry's reader tells apart from its own (Roo Code's history has
   Cline's shape) is an entry with no checks and no reader: it names the format, its fixtures and
   its place in FORMATS.
3. Put its fixtures in tests/fixtures/sessions/FOLDER/ (the entry's `fixtures`; a subfolder per file
   where the agent gives every file the same name): a log of the format, our own words in the tool's
   shape, and beside it NAME.expected.json (tests/fixtures/sessions/README.md says what it holds:
   the turns in order, each tool link, the failed and denied steps, the values, the compactions).
   tests/test_sessions_fixtures.py finds them through this list, reads each as this entry's format,
   checks it against its .expected.json and runs them all through the runner on the fake server; it
   refuses an entry with no fixture folder (chat messages alone have theirs in
   tests/test_sessions_formats.py), and a fixture folder no entry names. A file's name may end in
   .json, .jsonl, .traj, .eval or chat.history.md: a folder's other files are not read.

Outside this folder the readers are reached only through the package (`from .readers import ...`),
never a reader's own module: tests/test_layout.py checks that.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from . import (aider, chat, claude_code, cline, codex, gemini_cli, inspect_ai, openhands, responses,
               swe_agent)

LAYOUTS = ("json", "jsonl", "text")             # what a file is parsed as before its checks


@dataclasses.dataclass(frozen=True)
class Reader:
    """One format: its names, how it is recognised and read, and where its fixtures are."""
    name: str                                   # the format's name in sessions, plans and reports
    about: str                          # what the file is (a refusal names the closest format so)
    named: str                          # how FORMATS_READ names it (once for entries sharing it)
    layout: str                                 # json, jsonl or text (LAYOUTS)
    checks: Callable[[Any], list[tuple[bool, str]]] | None  # None: another's reader names it
    read: Callable[[Any], list] | None
    fixtures: str | None                        # its folder under tests/fixtures/sessions/
    unzip: Callable[[bytes, Callable], Any] | None = None   # a zip file of it -> its value


READERS = [
    Reader(
        name="inspect-ai",
        about="an inspect_ai eval log (.json with `eval` and `samples`, or a .eval zip), each "
              "sample a session",
        named="inspect_ai logs",
        layout="json",
        checks=inspect_ai.checks,
        read=inspect_ai.read_inspect,
        fixtures="inspect-ai",
        unzip=inspect_ai.unzip,
    ),
    Reader(
        name="swe-agent",
        about="a SWE-agent trajectory (.traj, with `history` and `trajectory`)",
        named="SWE-agent trajectories",
        layout="json",
        checks=swe_agent.checks,
        read=swe_agent.read_swe_agent,
        fixtures="swe-agent",
    ),
    Reader(
        name="gemini-cli",
        about="a Gemini CLI session file (JSON with `sessionId` and `messages` of type user and "
              "gemini)",
        named="Gemini CLI sessions",
        layout="json",
        checks=gemini_cli.checks,
        read=gemini_cli.read_gemini_json,
        fixtures="gemini-json",
    ),
    Reader(
        name="openhands",
        about="an OpenHands event list (events with `source` and an `action` or `observation`)",
        named="OpenHands event lists",
        layout="json",
        checks=openhands.checks,
        read=openhands.read,
        fixtures="openhands",
    ),
    Reader(
        name="openai-responses",
        about="an OpenAI Responses API input list (message, function_call, function_call_output "
              "and reasoning items)",
        named="OpenAI Responses input lists",
        layout="json",
        checks=responses.checks,
        read=responses.read,
        fixtures="responses-api",
    ),
    Reader(
        name="cline",
        about="Cline's api_conversation_history.json",
        named="Cline and Roo Code histories",
        layout="json",
        checks=cline.checks,
        read=cline.read_cline,
        fixtures="cline",
    ),
    Reader(
        name="roo-code",
        about="Roo Code's api_conversation_history.json",
        named="Cline and Roo Code histories",
        layout="json",
        checks=None,
        read=None,
        fixtures="roo-code",
    ),
    Reader(
        name="chat-json",
        about="a JSON list of chat messages or an object with a `messages` list (OpenAI style, "
              "tool calls and tool results included)",
        named="chat messages (JSON or JSONL)",
        layout="json",
        checks=chat.json_checks,
        read=chat.read_json,
        fixtures=None,
    ),
    Reader(
        name="codex",
        about="a Codex CLI rollout (JSONL lines of {timestamp, type, payload})",
        named="Codex CLI rollouts",
        layout="jsonl",
        checks=codex.checks,
        read=codex.read_codex,
        fixtures="codex",
    ),
    Reader(
        name="claude-code",
        about="Claude Code's JSONL transcript (lines with a `type` and a `message` of content "
              "blocks)",
        named="Claude Code transcripts",
        layout="jsonl",
        checks=claude_code.checks,
        read=claude_code.read_claude_code,
        fixtures="claude-code",
    ),
    Reader(
        name="gemini-cli-jsonl",
        about="a Gemini CLI JSONL session (a metadata line, message records and `$set` patches)",
        named="Gemini CLI sessions",
        layout="jsonl",
        checks=gemini_cli.jsonl_checks,
        read=gemini_cli.read_gemini_jsonl,
        fixtures="gemini-jsonl",
    ),
    Reader(
        name="codex-legacy",
        about="an older Codex CLI rollout (a first line with the session's id, then bare response "
              "items)",
        named="Codex CLI rollouts",
        layout="jsonl",
        checks=codex.legacy_checks,
        read=codex.read_codex_legacy,
        fixtures="codex-legacy",
    ),
    Reader(
        name="chat-jsonl",
        about="JSONL with one chat message per line",
        named="chat messages (JSON or JSONL)",
        layout="jsonl",
        checks=chat.jsonl_checks,
        read=chat.read_jsonl,
        fixtures=None,
    ),
    Reader(
        name="aider",
        about="aider's .aider.chat.history.md",
        named="aider chat histories",
        layout="text",
        checks=aider.checks,
        read=aider.read_aider,
        fixtures="aider",
    ),
]


def and_list(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)


# --- Made of READERS ------------------------------------------------------------------------------
FORMATS = {reader.name: reader.about for reader in READERS}         # name -> what it is

FORMATS_READ = and_list(list(dict.fromkeys(reader.named for reader in READERS))) + \
    "; see tasks/sessions/README.md"
