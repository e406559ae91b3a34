"""XR-S1, reading (protocol/SESSIONS.md section 2.1): aider's `.aider.chat.history.md` (one markdown
file holding every session, each opened by a `# aider chat started at` line), read into
SessionBuilder records; positions are line numbers. aider writes no call ids: a result answers the
oldest call of its tool still waiting.
"""
from __future__ import annotations

import re

from .turns import SessionBuilder


# --- aider: <repository>/.aider.chat.history.md ---------------------------------------------------
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
    """aider's chat history: `#### ` lines are the user's (a slash command such as /test or /run
    also runs a command), the plain markdown after them the assistant's reply (its SEARCH/REPLACE
    blocks are edits, its shell blocks suggested commands), `> ` lines the tool's own: applied
    edits, commits, the shell commands run or declined. A command's output and exit code are not
    written to this file; `/test` adds its output to the chat only when the tests fail. Each `#
    aider chat started at` line opens a session of its own."""
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
        # the user's /test, /run or /commit waiting for its result
        self.command: dict | None = None
        # accepted shell commands waiting for `> Running`
        self.runs: dict[str, dict] = {}

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
                    b.result(call, f"{command}: declined", at, name=None if call else "shell",
                             marked="denied",
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
            call = (self.command if self.command is not None and self.command["name"]
                    == "/commit" else None)
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
                     evidence=f"{call['name']} added its output to the chat (it does so only on a "
                     "non-zero exit)"
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
                return next((c for c in turn["calls"] if c["name"]
                             == "shell" and c["input"]["command"] == command
                             and id(c) not in self.builder.answered), None)
        return None

    def edit_call(self, path: str) -> dict | None:
        for turn in reversed(self.builder.turns):
            if turn["role"] == "assistant":
                edits = [c for c in turn["calls"] if c["name"] == "edit"
                         and id(c) not in self.builder.answered]
                return next((c for c in edits if c["input"]["path"]
                             == path or path.endswith("/" + c["input"]["path"])
                             or c["input"]["path"].endswith("/" + path)),
                             edits[0] if edits else None)
        return None

    def finish(self) -> SessionBuilder:
        self.flush_prompt()
        self.flush_reply()
        for at, command in self.echoes:
            self.builder.skip("suggested command with no answer")
        return self.builder


# --- Recognised from the content: the checks its registry entry names ----------------------------
def checks(text: str) -> list[tuple[bool, str]]:
    """Markdown with `#### ` prompt lines (or aider's session header)."""
    return [(is_aider_history(text), "an aider chat history (`#### ` prompt lines)")]
