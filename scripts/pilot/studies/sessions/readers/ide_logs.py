"""XR-S1, reading (protocol/SESSIONS.md section 2.1): the logs of agents that run in an editor or beside one, read into
SessionBuilder records: Cline's and Roo Code's `api_conversation_history.json` (the classic layout with tool calls
written as XML in the assistant's text, and the native one with tool_use blocks) and aider's
`.aider.chat.history.md` (one markdown file holding every session, each opened by a `# aider chat started at` line).
Formats without call ids are linked by position: a result answers the oldest call of its tool still waiting.
"""
from __future__ import annotations

import json
import re
from typing import Any

from .turns import SessionBuilder, as_text, key_of, text_of


# --- Cline and Roo Code: .../globalStorage/<extension>/tasks/<task id>/api_conversation_history.json -------------
CLINE_TOOLS = frozenset("""read_file write_to_file replace_in_file execute_command search_files list_files
list_code_definition_names browser_action use_mcp_tool access_mcp_resource ask_followup_question attempt_completion
new_task plan_mode_respond act_mode_respond load_mcp_documentation web_fetch web_search condense summarize_task
report_bug new_rule apply_diff insert_content search_and_replace switch_mode codebase_search fetch_instructions
update_todo_list run_slash_command generate_image apply_patch""".split())

REPLY_TOOLS = {"attempt_completion": "result", "ask_followup_question": "question", "plan_mode_respond": "response",
               "act_mode_respond": "response"}              # their argument is the assistant's reply, not a call

SUMMARY_TOOLS = ("summarize_task", "condense")

RESULT_HEADER = re.compile(r"^\[(\w+)(?: for (.*?))?\] Result:[ \t]*(?:\n|$)")

HEADER_NAMES = re.compile(r"\[(\w+)(?: for [^\]\n]*)?\] Result:")     # any tool a result header names

WRAPPED = re.compile(r"^\s*<(task|user_message|feedback|answer)>\s*(.*?)\s*</\1>\s*$", re.DOTALL)

FEEDBACK = re.compile(r"<(feedback|answer)>\s*(.*?)\s*</\1>", re.DOTALL)

HARNESS_BLOCKS = ("<environment_details>", "<explicit_instructions", "<system-reminder>", "[TASK RESUMPTION]",
                  "<slash-command", "# TODO LIST")

THINKING = re.compile(r"<thinking>.*?</thinking>", re.DOTALL)

XML_PARAM = re.compile(r"<(\w+)>(.*?)</\1>", re.DOTALL)

CLINE_DENIAL = "The user denied this operation"

CLINE_FAILURE = "The tool execution failed"

ROO_EXIT = re.compile(r"\bExit code: (-?\d+)")


def is_cline_history(value: Any) -> bool:
    """A list of Anthropic-style messages that carries Cline's or Roo Code's own marks."""
    if not isinstance(value, list) or not any(isinstance(m, dict) and m.get("role") in ("user", "assistant")
                                              for m in value[:50]):
        return False
    for message in value[:50]:
        if isinstance(message, dict) and (message.get("isSummary") or "condenseParent" in message):
            return True
        text = as_text(message.get("content") if isinstance(message, dict) else None)
        if any(mark in text for mark in ("<task>", "<user_message>", "<environment_details>", "] Result:")):
            return True
    return False


def is_roo(value: list) -> bool:
    return any(isinstance(m, dict) and ("ts" in m or "condenseId" in m or "condenseParent" in m or
                                        "<user_message>" in as_text(m.get("content"))) for m in value[:50])


def read_cline(value: list) -> list[SessionBuilder]:
    """Cline and Roo Code: the user's words in <task>, <user_message>, <feedback> and <answer>; tool results
    (a `[tool for 'arg'] Result:` block, or a tool_result) linked to their call; <environment_details> and the
    harness's own instructions left out; a summarize_task call (Cline) or an isSummary message (Roo Code) a
    compaction."""
    reader = ClineReader("roo-code" if is_roo(value) else "cline", value)
    for index, message in enumerate(value):
        reader.builder.read += 1
        reader.message(message, index)
    return [reader.builder]


class ClineReader:
    def __init__(self, fmt: str, value: list):
        self.builder = SessionBuilder(fmt, "messages")
        headers = {m.group(1) for message in value if isinstance(message, dict) and message.get("role") == "user"
                   for m in HEADER_NAMES.finditer(as_text(message.get("content")))}
        self.tools = CLINE_TOOLS | headers          # a tool of a newer version is known by its results' headers
        self.call_tag = re.compile(r"<(" + "|".join(sorted(map(re.escape, self.tools))) + r")>(.*?)</\1>", re.DOTALL)
        self.by_parent: dict[str, list[int]] = {}      # condenseParent -> the turns of its messages
        self.summary_calls: set[int] = set()           # id() of summarize_task calls: their results are no turns

    def message(self, message: Any, index: int) -> None:
        b = self.builder
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            kind = message.get("type") if isinstance(message, dict) else None
            b.skip("reasoning record" if kind == "reasoning" else "not a user or assistant message",
                   unread=kind != "reasoning")
            return
        if message.get("isTruncationMarker") is True:
            b.skip("truncation marker (not a summary)")
            return
        before = len(b.turns)
        if message.get("isSummary") is True:
            self.summary(message, index)
        elif message["role"] == "assistant":
            self.assistant(message.get("content"), index)
        else:
            self.user(message.get("content"), index)
        parent = message.get("condenseParent")
        if isinstance(parent, str):
            self.by_parent.setdefault(parent, []).extend(range(before + 1, len(b.turns) + 1))

    def summary(self, message: dict, index: int) -> None:
        b = self.builder
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": as_text(content)}]
        texts = [blk["text"] for blk in blocks if isinstance(blk, dict) and isinstance(blk.get("text"), str) and
                 not blk["text"].lstrip().startswith(HARNESS_BLOCKS)]
        condense_id = message.get("condenseId")
        turns = self.by_parent.get(condense_id) if isinstance(condense_id, str) else None
        replaces = [min(turns), max(turns)] if turns else None if condense_id is None else "since-last"
        b.compaction(index, "\n".join(texts), source="isSummary message", summary_at=f"{index}.content[0]",
                     replaces=replaces)
        if condense_id is None:
            b.notes.append("a condensed summary with no condenseId: this version of Roo Code deleted the messages it "
                           "replaced, so they are not in the file")
        b.skip("compaction record (kept as a compaction event, not a turn)")

    def assistant(self, content: Any, index: int) -> None:
        b = self.builder
        texts, calls = [], []
        for k, block in enumerate(content if isinstance(content, list) else [content]):
            kind = block.get("type") if isinstance(block, dict) else "text" if isinstance(block, str) else None
            if kind == "text":
                text = block if isinstance(block, str) else as_text(block.get("text"))
                if THINKING.search(text):
                    b.skip("thinking left out")
                    text = THINKING.sub("", text)
                texts.append(self.xml_calls(text, index, calls))
            elif kind == "tool_use":
                self.tool_use(block.get("id"), block.get("name"), block.get("input"), index, k, texts, calls)
            elif kind in ("thinking", "redacted_thinking", "reasoning"):
                b.skip("thinking left out")
            elif block is not None:
                b.skip(f"{str(kind)[:30]} part (not text)" if isinstance(kind, str) else "a part of no known type",
                       unread=not isinstance(kind, str))
        b.assistant("\n\n".join(t.strip() for t in texts if t.strip()), calls, index)

    def xml_calls(self, text: str, index: int, calls: list) -> str:
        """The assistant's text with its XML tool calls taken out into `calls` (a reply tool's text kept)."""
        out, position = [], 0
        for match in self.call_tag.finditer(text):
            out.append(text[position:match.start()])
            position = match.end()
            params = {m.group(1): m.group(2).strip("\n") for m in XML_PARAM.finditer(match.group(2))}
            self.tool_use(None, match.group(1), params, index, 0, out, calls)
        out.append(text[position:])
        return "".join(out)

    def tool_use(self, call_id: Any, name: Any, arguments: Any, index: int, k: int, texts: list, calls: list) -> None:
        b = self.builder
        arguments = arguments if isinstance(arguments, dict) else {"input": as_text(arguments)}
        name = key_of(name)
        if name in REPLY_TOOLS:
            texts.append(as_text(arguments.get(REPLY_TOOLS[name], "")))
            call = b.call(call_id, name, arguments, index)
            b.answered.add(id(call))                    # its result carries only the user's reply
            self.summary_calls.add(id(call))
        elif name in SUMMARY_TOOLS:
            call = b.call(call_id, name, arguments, index)
            b.answered.add(id(call))
            self.summary_calls.add(id(call))
            b.compaction(index, as_text(arguments.get("context", arguments.get("input", ""))),
                         source=f"{name} tool call", summary_at=f"{index}.content[{k}]")
            b.skip("compaction record (kept as a compaction event, not a turn)")
        else:
            calls.append(b.call(call_id, name, arguments, index))

    def user(self, content: Any, index: int) -> None:
        b = self.builder
        blocks = content if isinstance(content, list) else [content]
        waiting = None                                  # a classic `[tool] Result:` header waiting for its text
        for k, block in enumerate(blocks):
            kind = block.get("type") if isinstance(block, dict) else "text" if isinstance(block, str) else None
            if kind == "tool_result":
                text = text_of(block.get("content"), b.skip)
                header = RESULT_HEADER.match(text)
                call = b.calls.get(block.get("tool_use_id")) if isinstance(block.get("tool_use_id"), str) else None
                if header:
                    text = text[header.end():]
                self.tool_result(call, header.group(1) if header else None, text, index,
                                 error=block.get("is_error") is True, native=True)
            elif kind == "text":
                text = block if isinstance(block, str) else as_text(block.get("text"))
                header = RESULT_HEADER.match(text)
                if header:
                    rest = text[header.end():]
                    waiting = None
                    if rest.strip():
                        self.tool_result(b.pending(header.group(1)), header.group(1), rest, index)
                    else:
                        waiting = header.group(1)
                elif waiting is not None:
                    self.tool_result(b.pending(waiting), waiting, text, index)
                    waiting = None
                else:
                    self.words(text, index)
            elif kind == "image":
                b.skip("image part (not text)")
            elif block is not None:
                b.skip(f"{str(kind)[:30]} part (not text)" if isinstance(kind, str) else "a part of no known type",
                       unread=not isinstance(kind, str))

    def words(self, text: str, index: int) -> None:
        """A text block of a user message: the user's words, or the harness's."""
        b = self.builder
        stripped = text.lstrip()
        if stripped.startswith(HARNESS_BLOCKS):
            b.skip("<environment_details> block" if stripped.startswith("<environment_details>") else
                   "harness instruction or reminder")
            return
        wrapped = WRAPPED.match(text)
        if wrapped:
            b.user(wrapped.group(2), index)
            return
        found = FEEDBACK.findall(text)
        if found:
            for _, words in found:
                b.user(words, index)
            return
        b.user(text, index)

    def tool_result(self, call: dict | None, tool: str | None, text: str, index: int, error: bool = False,
                    native: bool = False) -> None:
        """A tool's result: a turn, unless it answers a reply tool or a summary (then only the user's words in it
        are kept)."""
        b = self.builder
        if call is not None and id(call) in self.summary_calls or tool in REPLY_TOOLS or tool in SUMMARY_TOOLS:
            if tool in SUMMARY_TOOLS or (call is not None and call["name"] in SUMMARY_TOOLS):
                b.skip("summary result (the continuation prompt that repeats the summary)")
            else:
                for _, words in FEEDBACK.findall(text):
                    b.user(words, index)
            return
        marked, evidence = None, None
        status = roo_status(text)
        if text.lstrip().startswith(CLINE_DENIAL) or status == "denied":
            marked, evidence = "denied", "the tool's denial text" if status is None else 'JSON status "denied"'
        elif text.lstrip().startswith(CLINE_FAILURE) or status == "error" or error:
            marked, evidence = "failed", "is_error" if error else "the tool's failure text"
        elif "Command execution was not successful" in text or (ROO_EXIT.search(text) and
                                                                ROO_EXIT.search(text).group(1) != "0"):
            marked, evidence = "failed", "a non-zero exit code in the command's result"
        feedback = FEEDBACK.findall(text)
        body = FEEDBACK.sub("", text).replace("The user provided the following feedback:", "").strip() \
            if feedback else text
        b.result(call, body, index, name=tool if call is None else None, error=error, marked=marked,
                 evidence=evidence)
        for _, words in feedback:
            b.user(words, index)


def roo_status(text: str) -> str | None:
    """Roo Code's 2026 JSON results: {"status": "denied" | "error", ...}."""
    stripped = text.strip()
    if not stripped.startswith("{") or '"status"' not in stripped[:200]:
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    return value.get("status") if isinstance(value, dict) and value.get("status") in ("denied", "error") else None


# --- aider: <repository>/.aider.chat.history.md ------------------------------------------------------------------
AIDER_HEADER = re.compile(r"^# aider chat started at (.*)$")

CONFIRM = re.compile(r"^(Run shell commands?\?|Add command output to the chat\?).*:\s*(\w+)\s*$")

ADDED_OUTPUT = re.compile(r"^Added \d+ lines? of output to the chat\.?$")

APPLIED = re.compile(r"^Applied edit to (.+)$")

COMMIT = re.compile(r"^Commit ([0-9a-f]{7,40}) (.*)$")

SHELL_FENCE = re.compile(r"^```(?:bash|sh|shell|console|zsh|powershell|cmd)\s*$")

SEARCH_MARK = re.compile(r"^<{5,9} SEARCH\s*$")

COMMAND_TOOLS = ("/test", "/run", "/commit", "/lint", "/git")


def is_aider_history(text: str) -> bool:
    return bool(re.search(r"^# aider chat started at ", text[:20000], re.MULTILINE)) or \
        bool(re.search(r"^#### \S", text[:20000], re.MULTILINE))


def read_aider(text: str) -> list[SessionBuilder]:
    """aider's chat history: `#### ` lines are the user's (a slash command such as /test or /run also runs a
    command), the plain markdown after them the assistant's reply (its SEARCH/REPLACE blocks are edits, its shell
    blocks suggested commands), `> ` lines the tool's own: applied edits, commits, the shell commands run or
    declined. A command's output and exit code are not written to this file; `/test` adds its output to the chat
    only when the tests fail. Each `# aider chat started at` line opens a session of its own."""
    builders: list[SessionBuilder] = []
    reader, blank = None, 0
    for number, line in enumerate(text.splitlines(), 1):
        header = AIDER_HEADER.match(line)
        if reader is None and not header and not line.strip():
            blank += 1                                  # blank lines before the first session
            continue
        if header or reader is None:
            if reader is not None:
                builders.append(reader.finish())
            reader = AiderReader()
            if blank:
                reader.builder.read += blank
                reader.builder.skip("blank line", blank)
                blank = 0
            if header:
                reader.builder.label = header.group(1).strip()[:40]
                reader.builder.read += 1
                reader.builder.skip("session header")
                continue
        reader.line(line, number)
    if reader is not None:
        builders.append(reader.finish())
    return builders


class AiderReader:
    def __init__(self):
        self.builder = SessionBuilder("aider", "lines")
        self.prompt: list[tuple[int, str]] = []
        self.reply: list[tuple[int, str]] = []
        self.echoes: list[tuple[int, str]] = []        # `> command` lines before a confirmation
        self.command: dict | None = None               # the user's /test, /run or /commit waiting for its result
        self.runs: dict[str, dict] = {}                # accepted shell commands waiting for `> Running`

    def line(self, line: str, number: int) -> None:
        b = self.builder
        b.read += 1
        if line.startswith("####"):
            self.flush_reply()
            self.prompt.append((number, line[4:].strip()))
        elif line.startswith("> ") or line == ">":
            self.flush_prompt()
            self.flush_reply()
            self.tool_line(line[2:].rstrip(), number)
        elif not line.strip() and not self.reply:
            self.flush_prompt()
            b.skip("blank line")
        else:
            self.flush_prompt()
            self.reply.append((number, line))

    def flush_prompt(self) -> None:
        if not self.prompt:
            return
        at, text = self.prompt[0][0], "\n".join(t for _, t in self.prompt).strip()
        self.prompt = []
        self.builder.user(text, at)
        word = text.split(maxsplit=1)[0] if text else ""
        if word in COMMAND_TOOLS:
            self.command = self.builder.call(None, word, {"command": text[len(word):].strip()}, at)

    def flush_reply(self) -> None:
        if not self.reply:
            return
        lines, self.reply = self.reply, []
        while lines and not lines[-1][1].strip():
            lines.pop()
        at = lines[0][0]
        calls, fence, previous = [], None, ""
        for _, line in lines:
            if fence == "shell" and line.startswith("```"):
                fence = None
            elif fence == "shell" and line.strip() and not line.lstrip().startswith("#"):
                calls.append(self.builder.call(None, "shell", {"command": line.strip()}, at))
            elif fence is None and SHELL_FENCE.match(line):
                fence = "shell"
            elif fence is None and line.startswith("```"):
                fence = "code"
            elif fence == "code" and SEARCH_MARK.match(line):
                calls.append(self.builder.call(None, "edit", {"path": previous.strip()}, at))
            elif fence == "code" and line.startswith("```"):
                fence = None
            if fence is None and line.strip() and not line.startswith("```"):
                previous = line
        self.builder.assistant("\n".join(t for _, t in lines), calls, at)

    def tool_line(self, text: str, number: int) -> None:
        b = self.builder
        confirm, applied, commit = CONFIRM.match(text), APPLIED.match(text), COMMIT.match(text)
        if confirm and confirm.group(1).startswith("Run shell"):
            answer = confirm.group(2).lower()
            for at, command in self.echoes:
                call = self.shell_call(command)
                if answer.startswith(("n", "d")):
                    b.result(call, f"{command}: declined", at, name=None if call else "shell", marked="denied",
                             evidence="the confirmation was answered no")
                elif call is not None:
                    self.runs[command] = call
            if not self.echoes:
                b.skip("confirmation with no command", unread=True)
            self.echoes = []
        elif confirm:
            b.skip("confirmation prompt")
        elif text.startswith("Running "):
            command = text[len("Running "):].strip()
            call = self.runs.pop(command, None) or self.shell_call(command)
            b.result(call, text, number, name=None if call else "shell")
        elif ADDED_OUTPUT.match(text):
            self.added_output(text, number)
        elif applied:
            b.result(self.edit_call(applied.group(1).strip()), text, number, name="edit")
        elif commit:
            call = self.command if self.command is not None and self.command["name"] == "/commit" else None
            self.command = None if call is not None else self.command
            b.result(call, text, number, name=None if call else "git commit")
        elif text.startswith(("Tokens:", "Cost:")):
            b.skip("token and cost report")
        elif self.pending_shell(text):
            self.echoes.append((number, text.strip()))
        else:
            b.skip("status line (`> `)")

    def added_output(self, text: str, number: int) -> None:
        b = self.builder
        if self.command is not None and self.command["name"] in ("/test", "/run", "/lint"):
            call, self.command = self.command, None
            failed = call["name"] in ("/test", "/lint")
            b.result(call, text, number, marked="failed" if failed else None,
                     evidence=f"{call['name']} added its output to the chat (it does so only on a non-zero exit)"
                     if failed else None)
        elif b.turns and b.turns[-1]["role"] == "tool":
            b.turns[-1]["text"] += "\n" + text
        else:
            b.skip("status line (`> `)")

    def pending_shell(self, command: str) -> bool:
        return self.shell_call(command.strip()) is not None

    def shell_call(self, command: str) -> dict | None:
        for turn in reversed(self.builder.turns):
            if turn["role"] == "assistant":
                return next((c for c in turn["calls"] if c["name"] == "shell" and c["input"]["command"] == command
                             and id(c) not in self.builder.answered), None)
        return None

    def edit_call(self, path: str) -> dict | None:
        for turn in reversed(self.builder.turns):
            if turn["role"] == "assistant":
                edits = [c for c in turn["calls"] if c["name"] == "edit" and id(c) not in self.builder.answered]
                return next((c for c in edits if c["input"]["path"] == path or path.endswith("/" + c["input"]["path"])
                             or c["input"]["path"].endswith("/" + path)), edits[0] if edits else None)
        return None

    def finish(self) -> SessionBuilder:
        self.flush_prompt()
        self.flush_reply()
        for at, command in self.echoes:
            self.builder.skip("suggested command with no answer")
        return self.builder
