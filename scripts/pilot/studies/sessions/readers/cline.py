"""XR-S1, reading (protocol/SESSIONS.md section 2.1): Cline's and Roo Code's
`api_conversation_history.json` (one shape: the classic layout with tool calls written as XML in the
assistant's text, and the native one with tool_use blocks), read into a SessionBuilder record named
cline or roo-code by the marks Roo Code leaves. Results without call ids are linked by position: a
result answers the oldest call of its tool still waiting.
"""
from __future__ import annotations

import json
import re
from typing import Any

from .chat import is_chat_message
from .turns import SessionBuilder, as_text, first, key_of, text_of


# --- Cline and Roo Code: .../globalStorage/<extension>/tasks/<task id>/
# api_conversation_history.json
CLINE_TOOLS = frozenset(
    """read_file write_to_file replace_in_file execute_command search_files list_files
list_code_definition_names browser_action use_mcp_tool access_mcp_resource ask_followup_question
attempt_completion new_task plan_mode_respond act_mode_respond load_mcp_documentation web_fetch
web_search condense summarize_task report_bug new_rule apply_diff insert_content search_and_replace
switch_mode codebase_search fetch_instructions update_todo_list run_slash_command generate_image
apply_patch""".split()
)

REPLY_TOOLS = {"attempt_completion": "result", "ask_followup_question": "question",
               "plan_mode_respond": "response",
               # their argument is the assistant's reply, not a call
               "act_mode_respond": "response"}

SUMMARY_TOOLS = ("summarize_task", "condense")

RESULT_HEADER = re.compile(r"^\[(\w+)(?: for (.*?))?\] Result:[ \t]*(?:\n|$)")

# any tool a result header names
HEADER_NAMES = re.compile(r"\[(\w+)(?: for [^\]\n]*)?\] Result:")

WRAPPED = re.compile(r"^\s*<(task|user_message|feedback|answer)>\s*(.*?)\s*</\1>\s*$", re.DOTALL)

FEEDBACK = re.compile(r"<(feedback|answer)>\s*(.*?)\s*</\1>", re.DOTALL)

HARNESS_BLOCKS = ("<environment_details>", "<explicit_instructions", "<system-reminder>",
                  "[TASK RESUMPTION]",
                  "<slash-command", "# TODO LIST", "# task_progress",
                  "[ERROR] You did not use a tool",
                  "The user has provided feedback on the results.",
                  "(The user did not provide a new message")

THINKING = re.compile(r"<thinking>.*?</thinking>", re.DOTALL)

XML_PARAM = re.compile(r"<(\w+)>(.*?)</\1>", re.DOTALL)

CLINE_DENIAL = "The user denied this operation"

CLINE_FAILURE = "The tool execution failed"

ROO_EXIT = re.compile(r"\bExit code: (-?\d+)")

# Cline's own first line of a command's result (src/core/task/tools/handlers)
CLINE_EXIT = re.compile(r"^\s*Command failed with exit code (-?\d+)")


def is_cline_history(value: Any) -> bool:
    """A list of Anthropic-style messages that carries Cline's or Roo Code's own marks."""
    if not isinstance(value, list) or not any(isinstance(m, dict) and m.get("role") in ("user",
        "assistant")
                                              for m in value[:50]):
        return False
    for message in value[:50]:
        if isinstance(message, dict) and (message.get("isSummary") or "condenseParent" in message):
            return True
        text = as_text(message.get("content") if isinstance(message, dict) else None)
        if any(mark in text for mark in ("<task>", "<user_message>", "<environment_details>",
                                         "] Result:")):
            return True
    return False


# Fields only one of the two writes on a message: Cline's ClineStorageMessage
# (src/shared/messages/content.ts) its modelInfo and metrics, Roo Code's ApiMessage its condensing
# and truncation marks. Both write `ts` and a <user_message> block, so those decide only when
# neither kind of field is there.
CLINE_FIELDS = ("modelInfo", "metrics")

ROO_FIELDS = ("isSummary", "condenseId", "condenseParent", "truncationParent")


def is_roo(value: list) -> bool:
    head = [m for m in value[:50] if isinstance(m, dict)]
    if any(field in m for m in head for field in ROO_FIELDS):
        return True
    if any(field in m for m in head for field in CLINE_FIELDS):
        return False
    return any("ts" in m or "<user_message>" in as_text(m.get("content")) for m in head)


def read_cline(value: list) -> list[SessionBuilder]:
    """Cline and Roo Code: the user's words in <task>, <user_message>, <feedback> and <answer>; tool
    results (a `[tool for 'arg'] Result:` block, or a tool_result) linked to their call;
    <environment_details> and the harness's own instructions left out; a summarize_task call (Cline)
    or an isSummary message (Roo Code) a compaction."""
    reader = ClineReader("roo-code" if is_roo(value) else "cline", value)
    for index, message in enumerate(value):
        reader.builder.read += 1
        reader.message(message, index)
    return [reader.builder]


class ClineReader:
    def __init__(self, fmt: str, value: list):
        self.builder = SessionBuilder(fmt, "messages")
        headers = {m.group(1) for message in value if isinstance(message,
            dict) and message.get("role") == "user"
                   for m in HEADER_NAMES.finditer(as_text(message.get("content")))}
        # a tool of a newer version is known by its results' headers
        self.tools = CLINE_TOOLS | headers
        self.call_tag = re.compile(r"<(" + "|".join(sorted(map(re.escape,
                                                               self.tools))) + r")>(.*?)</\1>",
                                   re.DOTALL)
        self.by_parent: dict[str, list[int]] = {}      # condenseParent -> the turns of its messages
        # id() of summarize_task calls: their results are no turns
        self.summary_calls: set[int] = set()

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
        blocks = content if isinstance(content, list) else [{"type": "text",
                                                             "text": as_text(content)}]
        texts = [blk["text"] for blk in blocks if isinstance(blk,
                                                             dict) and isinstance(blk.get("text"),
            str) and
                 not blk["text"].lstrip().startswith(HARNESS_BLOCKS)]
        condense_id = message.get("condenseId")
        turns = self.by_parent.get(condense_id) if isinstance(condense_id, str) else None
        replaces = [min(turns),
                    max(turns)] if turns else None if condense_id is None else "since-last"
        b.compaction(index, "\n".join(texts), source="isSummary message",
                     summary_at=f"{index}.content[0]",
                     replaces=replaces)
        if condense_id is None:
            b.notes.append("a condensed summary with no condenseId: this version of Roo Code "
                           "deleted the messages it replaced, so they are not in the file")
        b.skip("compaction record (kept as a compaction event, not a turn)")

    def assistant(self, content: Any, index: int) -> None:
        b = self.builder
        texts, calls = [], []
        for k, block in enumerate(content if isinstance(content, list) else [content]):
            kind = block.get("type") if isinstance(block, dict) else "text" if isinstance(block,
                str) else None
            if kind == "text":
                text = block if isinstance(block, str) else as_text(block.get("text"))
                if THINKING.search(text):
                    b.skip("thinking left out")
                    text = THINKING.sub("", text)
                texts.append(self.xml_calls(text, index, calls))
            elif kind == "tool_use":
                self.tool_use(block.get("id"), block.get("name"), block.get("input"), index, k,
                              texts, calls)
            elif kind in ("thinking", "redacted_thinking", "reasoning"):
                b.skip("thinking left out")
            elif block is not None:
                b.skip(f"{str(kind)[:30]} part (not text)" if isinstance(kind,
                    str) else "a part of no known type",
                       unread=not isinstance(kind, str))
        b.assistant("\n\n".join(t.strip() for t in texts if t.strip()), calls, index)

    def xml_calls(self, text: str, index: int, calls: list) -> str:
        """The assistant's text with its XML tool calls taken out into `calls` (a reply tool's text
        kept)."""
        out, position = [], 0
        for match in self.call_tag.finditer(text):
            out.append(text[position:match.start()])
            position = match.end()
            params = {
                m.group(1): m.group(2).strip("\n") for m in XML_PARAM.finditer(match.group(2))
            }
            self.tool_use(None, match.group(1), params, index, 0, out, calls)
        out.append(text[position:])
        return "".join(out)

    def tool_use(self, call_id: Any, name: Any, arguments: Any, index: int, k: int, texts: list,
                 calls: list) -> None:
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
        # a classic `[tool] Result:` header waiting for its text
        waiting = None
        for k, block in enumerate(blocks):
            kind = block.get("type") if isinstance(block, dict) else "text" if isinstance(block,
                str) else None
            if kind == "tool_result":
                text = text_of(block.get("content"), b.skip)
                header = RESULT_HEADER.match(text)
                call = b.calls.get(block.get("tool_use_id")) if isinstance(block.get("tool_use_id"),
                    str) else None
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
                b.skip(f"{str(kind)[:30]} part (not text)" if isinstance(kind,
                    str) else "a part of no known type",
                       unread=not isinstance(kind, str))

    def words(self, text: str, index: int) -> None:
        """A text block of a user message: the user's words, or the harness's."""
        b = self.builder
        stripped = text.lstrip()
        if stripped.startswith(HARNESS_BLOCKS):
            b.skip("<environment_details> block" if stripped.startswith("<environment_details>")
                   else
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

    def tool_result(self, call: dict | None, tool: str | None, text: str, index: int,
                    error: bool = False,
                    native: bool = False) -> None:
        """A tool's result: a turn, unless it answers a reply tool or a summary (then only the
        user's words in it are kept)."""
        b = self.builder
        if (
            call is not None
            and id(call) in self.summary_calls
            or tool in REPLY_TOOLS
            or tool in SUMMARY_TOOLS
        ):
            if tool in SUMMARY_TOOLS or (call is not None and call["name"] in SUMMARY_TOOLS):
                b.skip("summary result (the continuation prompt that repeats the summary)")
            else:
                for _, words in FEEDBACK.findall(text):
                    b.user(words, index)
            return
        marked, evidence = None, None
        status = roo_status(text)
        if text.lstrip().startswith(CLINE_DENIAL) or status == "denied":
            marked, evidence = ("denied", "the tool's denial text" if status is None
                                else 'JSON status "denied"')
        elif text.lstrip().startswith(CLINE_FAILURE) or status == "error" or error:
            marked, evidence = "failed", "is_error" if error else "the tool's failure text"
        elif CLINE_EXIT.match(text) and CLINE_EXIT.match(text).group(1) != "0":
            marked, evidence = "failed", "Cline's `Command failed with exit code` line"
        elif "Command execution was not successful" in text or (ROO_EXIT.search(text) and
                                                                ROO_EXIT.search(text).group(1)
                                                                != "0"):
            marked, evidence = "failed", "a non-zero exit code in the command's result"
        feedback = FEEDBACK.findall(text)
        body = FEEDBACK.sub("", text).replace("The user provided the following feedback:",
                                              "").strip() \
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
    return value.get("status") if isinstance(value, dict) and value.get("status") in ("denied",
        "error") else None


# --- Recognised from the content: the checks its registry entry names ----------------------------
def checks(value: Any) -> list[tuple[bool, str]]:
    """A list of messages with a role that carries Cline's or Roo Code's own marks."""
    lst = isinstance(value, list)
    return [(lst, "a list of messages"), (lst and first(value, is_chat_message),
                                          "messages with a `role`"),
            (is_cline_history(value), "Cline's or Roo Code's marks (<task>, <user_message>, "
                                      "<environment_details>, `[tool] Result:` blocks)")]
