"""XR-S1, reading (protocol/SESSIONS.md section 2.1): the OpenAI Responses API's input item lists,
read into a SessionBuilder record; positions are indices in the list. Codex CLI's rollouts hold the
same items (readers/codex.py reads them with ResponseItems).
"""
from __future__ import annotations

import json
import re
from typing import Any

from .chat import is_chat_message
from .turns import SessionBuilder, as_text, exit_code_in, json_error, key_of, text_of


# --- OpenAI Responses API input lists -------------------------------------------------------------
RESPONSES_ITEMS = ("function_call", "function_call_output", "reasoning", "mcp_call",
                   "mcp_approval_request",
                   "mcp_approval_response", "local_shell_call", "local_shell_call_output",
                   "computer_call",
                   "computer_call_output", "web_search_call", "file_search_call",
                   "image_generation_call",
                   "code_interpreter_call", "item_reference", "compaction", "custom_tool_call",
                   "custom_tool_call_output", "mcp_list_tools", "tool_search_call",
                   "tool_search_output")


def responses_items(value: Any) -> list | None:
    """The item list of a Responses API input (a list, or an object with an `input` list) when one
    of its items is a Responses item (a function call, its output, reasoning ...), else None."""
    items = value.get("input") if isinstance(value, dict) else value
    if isinstance(items, list) and any(isinstance(i, dict)
                                       and i.get("type") in RESPONSES_ITEMS for i in items[:500]):
        return items
    return None


HARNESS_CONTEXT = re.compile(r"^\s*(?:<user_instructions>|<environment_context>|<INSTRUCTIONS>|# "
                             r"AGENTS\.md "
                             r"instructions for|<permissions instructions>|<user_shell_command>)")

# Codex's denial, as it writes it
REJECTED = re.compile(r"^\s*(?:exec command|patch) rejected by user\s*$")

TIMED_OUT = re.compile(r"^\s*command timed out after \d+ milliseconds")

# The header Codex puts on a message between agents, before its payload
MESSAGE_HEADER = re.compile(r"\A\s*Message Type: \w+\n(?:(?:Task name|Sender): [^\n]*\n)*"
                            r"(?:Payload:[ \t]*\n?)?")


def inter_agent(text: str) -> dict | None:
    """An older Codex carrier of a message between agents: an assistant message whose whole text
    is the JSON of {author, recipient, content, ...}; None for any other text."""
    stripped = text.strip()
    if not (stripped.startswith("{") and '"recipient"' in stripped[:2000]):
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict) and {"author", "recipient", "content"} <= value.keys():
        return value
    return None


def read_responses(items: list) -> list[SessionBuilder]:
    """A Responses API input list: messages (easy or typed), function calls and their outputs
    (linked by call_id), MCP calls and approvals (an approval refused is a denied step), reasoning
    left out, a `compaction` item an encrypted compaction. The API has no error flag on an output: a
    failure is read from its text."""
    reader = ResponseItems("openai-responses", "items")
    for k, item in enumerate(items):
        reader.builder.read += 1
        reader.item(item, k)
    return [reader.builder]


class ResponseItems:
    """Responses API items into a SessionBuilder: an application's input list, and the
    `response_item` lines of Codex CLI rollouts (the same items, with the harness's own context
    messages among them)."""

    def __init__(self, fmt: str, unit: str):
        self.builder = SessionBuilder(fmt, unit)
        # the tokens last reported before a compaction (Codex's token_count)
        self.tokens: int | None = None
        # this session's agent, as agents address each other (Codex: /root, /root/worker)
        self.agent_path = "/root"
        self.agent_messages: set[tuple] = set()

    def item(self, item: Any, at: Any) -> None:
        b = self.builder
        kind = key_of(item.get("type", "message")) if isinstance(item, dict) else None
        if kind == "message" and is_chat_message(item):
            self.message(item, at)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call", "computer_call",
                      "web_search_call",
                      "file_search_call", "image_generation_call", "code_interpreter_call",
                      "mcp_approval_request", "tool_search_call"):
            b.assistant("", [self.call(item, kind, at)], at, join=True)
        elif kind == "tool_search_output":
            # the tools a search loaded: their names are what the session learnt
            tools = item.get("tools") if isinstance(item.get("tools"), list) else []
            names = [key_of(t.get("name")) for t in tools if isinstance(t, dict)]
            b.result(item.get("call_id") or item.get("id"), "tools loaded: " + (", ".join(
                str(n) for n in names if n is not None) or "(none)"), at)
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output",
                      "computer_call_output"):
            self.output(item, at)
        elif kind == "mcp_call":
            call = b.call(item.get("id"), item.get("name"), item.get("arguments"), at)
            b.assistant("", [call], at, join=True)
            error = item.get("error") not in (None, "")
            b.result(call, as_text(item.get("error") if error else item.get("output")), at,
                     error=error,
                     marked="failed" if error else None, evidence="mcp_call.error" if error
                     else None)
        elif kind == "mcp_approval_response":
            approved = item.get("approve") is True
            reason = as_text(item.get("reason")) if item.get("reason") is not None else ""
            b.result(item.get("approval_request_id"), reason or ("approved" if approved
                else "not approved"), at,
                     marked=None if approved else "denied", evidence=None if approved
                     else "approve: false")
        elif kind == "reasoning":
            b.skip("thinking left out")
        elif kind == "agent_message":
            self.agent_message(item, at)
        elif kind in ("additional_tools", "configuration_update"):
            b.skip(f"{kind} (the tools or settings the harness gave the model, no turn)")
        elif kind in ("compaction", "compaction_summary", "context_compaction"):
            b.compaction(at, None, source=f"{kind} item", replaces=None, tokens_before=self.tokens,
                         why_unreadable="the summary is encrypted (encrypted_content); the items "
                                        "it replaced are not in the list")
            b.skip("compaction record (kept as a compaction event, not a turn)")
        elif kind == "ghost_snapshot":
            b.skip("ghost_snapshot (undo bookkeeping)")
        elif kind == "item_reference":
            b.skip("item reference (its content is not in the file)")
        elif kind == "mcp_list_tools":
            b.skip("MCP tool list")
        else:
            b.skip(f"item type {str(kind)[:30]!r} (not known to this reader)", unread=True)

    def message(self, item: dict, at: Any) -> None:
        b, role = self.builder, item["role"]
        text = text_of(item.get("content"), b.skip)
        if role == "user" and HARNESS_CONTEXT.match(text):
            b.skip("harness context (the AGENTS file, environment or permissions text)")
        elif role == "user":
            b.user(text, at)
        elif role == "assistant" and inter_agent(text) is not None:
            self.agent_message(inter_agent(text), at)
        elif role == "assistant":
            b.assistant(text, [], at, join=True)
        elif role in ("developer", "system"):
            b.skip("system or developer message (left out: not session history)")
        else:
            b.skip(f"message of role {str(role)[:20]!r}", unread=True)

    def agent_message(self, item: dict, at: Any) -> None:
        """A message between agents (Codex's `agent_message` item, its `inter_agent_communication`
        line, or an older assistant message holding one as JSON): the session's own words when its
        agent wrote it, the task when the agent that started it sent it, else a report the agent
        received (a result of no call). The same message on a second line is read once."""
        b = self.builder
        author, recipient = key_of(item.get("author")), key_of(item.get("recipient"))
        content = item.get("content")
        text = content if isinstance(content, str) else text_of(
            [p for p in content if not (isinstance(p, dict) and p.get("type")
                                        == "encrypted_content")]
            if isinstance(content, list) else None, b.skip)
        text = MESSAGE_HEADER.sub("", text).strip()
        if not text:
            b.skip("agent message whose content is encrypted or empty")
            return
        seen = (author, recipient, text)
        if seen in self.agent_messages:
            b.skip("agent message already read from another line")
            return
        self.agent_messages.add(seen)
        own = self.agent_path
        if author == own:
            b.assistant(text, [], at, join=True)
        elif isinstance(author, str) and own.startswith(author.rstrip("/") + "/"):
            b.user(text, at)
        else:
            b.result(None, text, at, name="agent_message", unasked=True)

    def call(self, item: dict, kind: str, at: Any) -> dict:
        b = self.builder
        if kind in ("function_call", "mcp_approval_request", "tool_search_call"):
            name = item.get("name") or ("tool_search" if kind == "tool_search_call" else None)
            return b.call(item.get("call_id") or item.get("id"), name,
                          item.get("arguments"), at)
        if kind == "custom_tool_call":
            return b.call(item.get("call_id"), item.get("name"),
                          {"input": as_text(item.get("input"))}, at)
        action = item.get("action") if isinstance(item.get("action"), dict) else {}
        if kind == "local_shell_call":
            command = action.get("command")
            command = " ".join(map(str, command)) if isinstance(command, list) else as_text(command)
            return b.call(item.get("call_id") or item.get("id"), "local_shell",
                          {"command": command}, at)
        arguments = action or item.get("queries") or item.get("code") or {}
        return b.call(item.get("call_id") or item.get("id"), kind.replace("_call", ""), arguments,
                      at)

    def output(self, item: dict, at: Any) -> None:
        """A tool's output: its text, and what marks it failed or denied: an exit code (in Codex's
        JSON string `metadata` or its `Exit code: N` header), a rejection or a timeout as Codex
        writes them, or a JSON `error` field (the API itself has no error flag)."""
        output = item.get("output")
        text = output if isinstance(output, str) else text_of(output, self.builder.skip)
        error, marked, evidence = False, None, None
        structured = text.strip()
        if structured.startswith("{") and '"metadata"' in structured[:200_000]:
            try:
                value = json.loads(structured)
            except (ValueError, RecursionError):
                value = None
            if isinstance(value, dict) and isinstance(value.get("metadata"),
                                                      dict) and "output" in value:
                code = value["metadata"].get("exit_code")
                text = as_text(value.get("output"))
                if isinstance(code, int) and code != 0:
                    text = f"Exit code: {code}\n{text}"
                    error, marked, evidence = True, "failed", f"metadata.exit_code {code}"
        if marked is None and REJECTED.match(text):
            marked, evidence = "denied", "the output is Codex's `rejected by user`"
        elif marked is None and TIMED_OUT.match(text):
            marked, evidence = "failed", "the command timed out"
        elif marked is None:
            code = exit_code_in(text.split("Output:", 1)[0])
            found = json_error(text) if not code else None
            if code:
                marked, evidence = "failed", f"`Exit code: {code}` in the output's header"
            elif found:
                marked, evidence = "failed", found
        self.builder.result(item.get("call_id") or item.get("id"), text, at, error=error,
                            marked=marked,
                            evidence=evidence)


# --- Recognised from the content: the checks its registry entry names ----------------------------
def checks(value: Any) -> list[tuple[bool, str]]:
    """A list of items (or an object with an `input` list), one of them a Responses item."""
    return [(isinstance(value, (dict, list)), "a list of items"),
            (responses_items(value) is not None,
             "items with a `type` such as function_call or function_call_output")]


def read(value: Any) -> list[SessionBuilder]:
    return read_responses(responses_items(value))
