"""XR-S1, reading (protocol/SESSIONS.md section 2.1): message lists an application or a harness keeps, read into
SessionBuilder records: OpenAI-style chat messages (a JSON list, `{"messages": [...]}` or one message per line), the
OpenAI Responses API's input item lists, SWE-agent trajectories (`.traj`, the 1.x layout and the older one),
OpenHands event lists (V0, as its trajectory export writes them) and inspect_ai eval logs (each sample a session).
"""
from __future__ import annotations

import json
import re
from typing import Any

from .turns import SessionBuilder, as_text, exit_code_in, json_error, key_of, text_of


# --- OpenAI-style chat messages ----------------------------------------------------------------------------------
def is_chat_message(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("role"), str)


def read_chat(messages: list, fmt: str, unit: str, positions: list | None = None) -> list[SessionBuilder]:
    """Chat messages: user, assistant (text, `tool_calls` or a `function_call`, content blocks with tool_use),
    tool or function results linked by tool_call_id (or tool_result blocks by tool_use_id); system and developer
    messages and reasoning left out."""
    b = SessionBuilder(fmt, unit)
    for k, message in enumerate(messages):
        at = positions[k] if positions else k
        b.read += 1
        if not is_chat_message(message):
            b.skip("not a chat message (an object with a role)", unread=True)
            continue
        role = message["role"].lower()
        if role in ("system", "developer"):
            b.skip("system or developer message (left out: not session history)")
        elif role == "user":
            chat_user(b, message.get("content"), at)
        elif role == "assistant":
            chat_assistant(b, message, at)
        elif role in ("tool", "function"):
            text = text_of(message.get("content"), b.skip) if not isinstance(message.get("content"), str) else \
                message["content"]
            error = message.get("is_error") is True
            found = json_error(text)
            b.result(message.get("tool_call_id"), text, at, name=message.get("name") if isinstance(
                message.get("name"), str) else None, error=error, marked="failed" if error or found else None,
                evidence="is_error" if error else found)
        else:
            b.skip(f"role {role[:20]!r} (not user, assistant or tool)", unread=True)
    return [b]


def chat_user(b: SessionBuilder, content: Any, at: Any) -> None:
    if not isinstance(content, list):
        if isinstance(content, str):
            b.user(content, at)
        elif content is not None:
            b.skip("content that is neither text nor a list of parts", unread=True)
        return
    words = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "tool_result":
            text = text_of(part.get("content"), b.skip)
            error = part.get("is_error") is True
            b.result(part.get("tool_use_id"), text, at, error=error, marked="failed" if error else None,
                     evidence="is_error" if error else None)
        elif kind == "tool_use":
            b.skip("tool call in a user turn", unread=True)
        else:
            words.append(text_of([part], b.skip))
    b.user("\n\n".join(w for w in words if w.strip()), at)


def chat_assistant(b: SessionBuilder, message: dict, at: Any) -> None:
    content = message.get("content")
    texts, calls = [], []
    if isinstance(message.get("reasoning_content"), str) or isinstance(message.get("reasoning"), str):
        b.skip("thinking left out")
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "tool_use":
            calls.append(b.call(part.get("id"), part.get("name"), part.get("input"), at))
        else:
            texts.append(text_of([part], b.skip))
    if isinstance(content, str):
        texts.append(content)
    elif content is not None and not isinstance(content, list):
        b.skip("content that is neither text nor a list of parts", unread=True)
    tool_calls = message.get("tool_calls")
    for call in tool_calls if isinstance(tool_calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            b.skip("tool call with no function", unread=True)
            continue
        calls.append(b.call(call.get("id"), function.get("name"), function.get("arguments"), at))
    if isinstance(message.get("function_call"), dict):
        function = message["function_call"]
        calls.append(b.call(None, function.get("name"), function.get("arguments"), at))
    b.assistant("\n\n".join(t for t in texts if t.strip()), calls, at)


# --- OpenAI Responses API input lists ----------------------------------------------------------------------------
RESPONSES_ITEMS = ("function_call", "function_call_output", "reasoning", "mcp_call", "mcp_approval_request",
                   "mcp_approval_response", "local_shell_call", "local_shell_call_output", "computer_call",
                   "computer_call_output", "web_search_call", "file_search_call", "image_generation_call",
                   "code_interpreter_call", "item_reference", "compaction", "custom_tool_call",
                   "custom_tool_call_output", "mcp_list_tools")


def responses_items(value: Any) -> list | None:
    """The item list of a Responses API input (a list, or an object with an `input` list) when one of its items is
    a Responses item (a function call, its output, reasoning ...), else None."""
    items = value.get("input") if isinstance(value, dict) else value
    if isinstance(items, list) and any(isinstance(i, dict) and i.get("type") in RESPONSES_ITEMS for i in items[:500]):
        return items
    return None


HARNESS_CONTEXT = re.compile(r"^\s*(?:<user_instructions>|<environment_context>|<INSTRUCTIONS>|# AGENTS\.md "
                             r"instructions for|<permissions instructions>|<user_shell_command>)")

REJECTED = re.compile(r"^\s*(?:exec command|patch) rejected by user\s*$")      # Codex's denial, as it writes it

TIMED_OUT = re.compile(r"^\s*command timed out after \d+ milliseconds")


def read_responses(items: list) -> list[SessionBuilder]:
    """A Responses API input list: messages (easy or typed), function calls and their outputs (linked by call_id),
    MCP calls and approvals (an approval refused is a denied step), reasoning left out, a `compaction` item an
    encrypted compaction. The API has no error flag on an output: a failure is read from its text."""
    reader = ResponseItems("openai-responses", "items")
    for k, item in enumerate(items):
        reader.builder.read += 1
        reader.item(item, k)
    return [reader.builder]


class ResponseItems:
    """Responses API items into a SessionBuilder: an application's input list, and the `response_item` lines of
    Codex CLI rollouts (the same items, with the harness's own context messages among them)."""

    def __init__(self, fmt: str, unit: str):
        self.builder = SessionBuilder(fmt, unit)
        self.tokens: int | None = None          # the tokens last reported before a compaction (Codex's token_count)

    def item(self, item: Any, at: Any) -> None:
        b = self.builder
        kind = key_of(item.get("type", "message")) if isinstance(item, dict) else None
        if kind == "message" and is_chat_message(item):
            self.message(item, at)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call", "computer_call", "web_search_call",
                      "file_search_call", "image_generation_call", "code_interpreter_call", "mcp_approval_request"):
            b.assistant("", [self.call(item, kind, at)], at, join=True)
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output",
                      "computer_call_output"):
            self.output(item, at)
        elif kind == "mcp_call":
            call = b.call(item.get("id"), item.get("name"), item.get("arguments"), at)
            b.assistant("", [call], at, join=True)
            error = item.get("error") not in (None, "")
            b.result(call, as_text(item.get("error") if error else item.get("output")), at, error=error,
                     marked="failed" if error else None, evidence="mcp_call.error" if error else None)
        elif kind == "mcp_approval_response":
            approved = item.get("approve") is True
            reason = as_text(item.get("reason")) if item.get("reason") is not None else ""
            b.result(item.get("approval_request_id"), reason or ("approved" if approved else "not approved"), at,
                     marked=None if approved else "denied", evidence=None if approved else "approve: false")
        elif kind == "reasoning":
            b.skip("thinking left out")
        elif kind in ("compaction", "compaction_summary"):
            b.compaction(at, None, source=f"{kind} item", replaces=None, tokens_before=self.tokens,
                         why_unreadable="the summary is encrypted (encrypted_content); the items it replaced are not "
                                        "in the list")
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
        elif role == "assistant":
            b.assistant(text, [], at, join=True)
        elif role in ("developer", "system"):
            b.skip("system or developer message (left out: not session history)")
        else:
            b.skip(f"message of role {str(role)[:20]!r}", unread=True)

    def call(self, item: dict, kind: str, at: Any) -> dict:
        b = self.builder
        if kind in ("function_call", "mcp_approval_request"):
            return b.call(item.get("call_id") or item.get("id"), item.get("name"), item.get("arguments"), at)
        if kind == "custom_tool_call":
            return b.call(item.get("call_id"), item.get("name"), {"input": as_text(item.get("input"))}, at)
        action = item.get("action") if isinstance(item.get("action"), dict) else {}
        if kind == "local_shell_call":
            command = action.get("command")
            command = " ".join(map(str, command)) if isinstance(command, list) else as_text(command)
            return b.call(item.get("call_id") or item.get("id"), "local_shell", {"command": command}, at)
        arguments = action or item.get("queries") or item.get("code") or {}
        return b.call(item.get("call_id") or item.get("id"), kind.replace("_call", ""), arguments, at)

    def output(self, item: dict, at: Any) -> None:
        """A tool's output: its text, and what marks it failed or denied: an exit code (in Codex's JSON string
        `metadata` or its `Exit code: N` header), a rejection or a timeout as Codex writes them, or a JSON `error`
        field (the API itself has no error flag)."""
        output = item.get("output")
        text = output if isinstance(output, str) else text_of(output, self.builder.skip)
        error, marked, evidence = False, None, None
        structured = text.strip()
        if structured.startswith("{") and '"metadata"' in structured[:200_000]:
            try:
                value = json.loads(structured)
            except (ValueError, RecursionError):
                value = None
            if isinstance(value, dict) and isinstance(value.get("metadata"), dict) and "output" in value:
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
        self.builder.result(item.get("call_id") or item.get("id"), text, at, error=error, marked=marked,
                            evidence=evidence)


# --- SWE-agent: trajectories/<user>/<run>/<instance>/<instance>.traj ---------------------------------------------
OBSERVATION_PREFIX = re.compile(r"^OBSERVATION:\s*\n?")

FOOTER = re.compile(r"\n?\(Open file: [^\n]*\)\s*\n\(Current directory: [^\n]*\)\s*\n?(?:bash-\$\s*)?$")


def is_swe_agent(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if isinstance(value.get("attempts"), list) and "history" not in value:
        return any(is_swe_agent(a) for a in value["attempts"][:5])
    history, steps = value.get("history"), value.get("trajectory")
    return (isinstance(history, list) and isinstance(steps, list)) and (
        any(isinstance(m, dict) and "role" in m for m in history[:20]) or
        any(isinstance(s, dict) and "action" in s for s in steps[:20]))


def read_swe_agent(value: dict) -> list[SessionBuilder]:
    """A SWE-agent trajectory: `history` is the session (the system prompt and demonstrations left out); 1.x links
    each observation to its action by tool_call_ids, 0.x by position (an observation is the user message after an
    action). A step that is in `trajectory` but not in `history` was blocked by the environment and re-asked."""
    if "history" not in value and isinstance(value.get("attempts"), list) and value["attempts"]:
        value = value["attempts"][-1]
    history = value.get("history") if isinstance(value.get("history"), list) else []
    legacy = not any(isinstance(m, dict) and (m.get("tool_calls") or m.get("tool_call_ids")) for m in history)
    b = SessionBuilder("swe-agent", "messages")
    actions = []
    for k, message in enumerate(history):
        b.read += 1
        if not isinstance(message, dict):
            b.skip("not a message", unread=True)
            continue
        role, text = message.get("role"), text_of(message.get("content"), b.skip)
        if role == "system" or message.get("message_type") == "system_prompt":
            b.skip("system prompt")
        elif message.get("is_demo") is True or message.get("message_type") == "demonstration":
            b.skip("demonstration (an example from another task)")
        elif role == "assistant":
            action = message.get("action") if isinstance(message.get("action"), str) else None
            actions.append(action)
            functions = [(c, c.get("function") if isinstance(c.get("function"), dict) else {})
                         for c in message.get("tool_calls") or [] if isinstance(c, dict)] \
                if isinstance(message.get("tool_calls"), list) else []
            calls = [b.call(c.get("id"), f.get("name"), f.get("arguments"), k) for c, f in functions]
            words = message.get("thought") if isinstance(message.get("thought"), str) else text
            if not calls and action and action.strip():
                calls = [b.call(None, action.split()[0], {"command": action.strip()}, k)]
                words = words if message.get("thought") is not None else text.split("```")[0]
            words = re.sub(r"^\s*DISCUSSION\s*\n", "", words or "")
            b.assistant(words, calls, k)
        elif role == "tool" or (legacy and role == "user" and b.pending() is not None):
            ids = message.get("tool_call_ids")
            call = b.calls.get(ids[0]) if isinstance(ids, list) and ids and isinstance(ids[0], str) else b.pending()
            b.result(call, FOOTER.sub("", OBSERVATION_PREFIX.sub("", text)).strip(), k)
        elif role == "user":
            b.user(text, k)
        else:
            b.skip(f"role {str(role)[:20]!r}", unread=True)
    steps = value.get("trajectory") if isinstance(value.get("trajectory"), list) else []
    wanted = [a for a in actions if a is not None]
    position = 0
    for step in steps:
        action = step.get("action") if isinstance(step, dict) else None
        if position < len(wanted) and action == wanted[position]:
            position += 1
        elif isinstance(action, str):
            b.skip("step only in `trajectory` (blocked by the environment, not in the history)")
            b.notes.append(f"a step the environment blocked (not a turn): {action[:80]}")
    return [b]


# --- OpenHands: ~/.openhands/sessions/<id>/events/*.json, or a trajectory export (one list) ----------------------
OPENHANDS_NOISE = {"system": "system prompt", "recall": "recall (workspace context)", "change_agent_state":
                   "agent state change", "condensation_request": "condensation request", "null": "empty action"}

OPENHANDS_ARG_NOISE = ("thought", "confirmation_state", "security_risk", "blocking", "is_static", "hidden",
                       "impl_source", "is_input", "cwd", "kernel_init_code", "include_extra")


def openhands_events(value: Any) -> list | None:
    events = value.get("events") if isinstance(value, dict) else value
    if isinstance(events, list) and any(isinstance(e, dict) and "source" in e and ("action" in e or
                                                                                  "observation" in e)
                                        for e in events[:50]):
        return events
    return None


def read_openhands(events: list) -> list[SessionBuilder]:
    """An OpenHands event list: the user's and the agent's messages, each tool action a call (its thought the
    assistant's text) and the observation that names it as its `cause` its result (a non-zero exit code or an
    error observation a failed step, user_rejected a denied one), a condensation action a compaction (only the
    events it forgets are replaced); recall, state changes and the system prompt left out."""
    b = SessionBuilder("openhands", "events")
    by_event: dict[Any, dict] = {}                  # action id -> its call
    turn_of_event: dict[Any, int] = {}              # event id -> the turn it became
    for k, event in enumerate(events):
        b.read += 1
        if not isinstance(event, dict):
            b.skip("not an event", unread=True)
            continue
        before = len(b.turns)
        if "action" in event:
            openhands_action(b, event, k, by_event, turn_of_event)
        elif "observation" in event:
            openhands_observation(b, event, k, by_event)
        else:
            b.skip("event with no action or observation", unread=True)
        if len(b.turns) > before:
            turn_of_event[key_of(event.get("id"))] = before + 1
    return [b]


def openhands_action(b: SessionBuilder, event: dict, k: int, by_event: dict, turn_of_event: dict) -> None:
    action = key_of(event["action"])
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    if action in OPENHANDS_NOISE:
        b.skip(OPENHANDS_NOISE[action])
    elif action == "message":
        text = as_text(args.get("content", event.get("message")))
        (b.user if event.get("source") == "user" else lambda t, a: b.assistant(t, [], a))(text, k)
    elif action == "finish":
        b.assistant(as_text(args.get("final_thought") or event.get("message")), [], k)
    elif action == "condensation":
        forgotten = args.get("forgotten_event_ids")
        if not isinstance(forgotten, list):
            start, end = args.get("forgotten_events_start_id"), args.get("forgotten_events_end_id")
            forgotten = list(range(start, end + 1)) if isinstance(start, int) and isinstance(end, int) else []
        turns = sorted(turn_of_event[key_of(i)] for i in forgotten if key_of(i) in turn_of_event)
        b.compaction(k, as_text(args.get("summary")) if args.get("summary") else None, source="condensation action",
                     summary_at=f"{k}.args.summary", replaces=[turns[0], turns[-1]] if turns else None,
                     why_unreadable="this condenser forgets events without writing a summary")
        b.skip("compaction record (kept as a compaction event, not a turn)")
    else:
        meta = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"), dict) else {}
        name = meta.get("function_name") or action
        call = b.call(meta.get("tool_call_id"), name, {k2: v for k2, v in args.items()
                                                       if k2 not in OPENHANDS_ARG_NOISE}, k)
        by_event[key_of(event.get("id"))] = call
        response = meta.get("model_response") if isinstance(meta.get("model_response"), dict) else {}
        b.assistant(as_text(args.get("thought")), [call], k,
                    message_id=response.get("id") if meta.get("total_calls_in_response", 1) != 1 else None)


def openhands_observation(b: SessionBuilder, event: dict, k: int, by_event: dict) -> None:
    kind = event["observation"]
    if kind in ("agent_state_changed", "recall", "condense", "null", "agent_condensation"):
        b.skip(f"{kind} observation")
        return
    call = by_event.get(key_of(event.get("cause")))
    if call is None:
        meta = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"), dict) else {}
        call = b.calls.get(meta.get("tool_call_id")) if isinstance(meta.get("tool_call_id"), str) else None
    text = as_text(event.get("content", event.get("message")))
    extras = event.get("extras") if isinstance(event.get("extras"), dict) else {}
    metadata = extras.get("metadata") if isinstance(extras.get("metadata"), dict) else {}
    code = metadata.get("exit_code")
    marked, evidence, error = None, None, False
    if kind == "user_rejected":
        marked, evidence = "denied", "observation user_rejected"
    elif kind == "error":
        marked, evidence, error = "failed", "error observation", True
    elif isinstance(code, int) and code not in (0, -1):
        marked, evidence, error = "failed", f"exit_code {code}", True
        text = f"Exit code: {code}\n{text}"
    elif event.get("success") is False:
        marked, evidence, error = "failed", "success: false", True
    if call is None and event.get("cause") is None:
        b.skip(f"{str(kind)[:30]} observation with no action", unread=True)
        return
    b.result(call, text, k, name=None if call else str(kind), error=error, marked=marked, evidence=evidence)


# --- inspect_ai: ./logs/<time>_<task>_<id>.json (and .eval, a zip of the same parts) -----------------------------
def read_inspect(value: dict) -> list[SessionBuilder]:
    """An inspect_ai eval log: each sample a session; messages with tool calls (a function and an arguments
    object) and tool results (an `error` with its type: approval is a denied step, any other a failed one); a
    user message marked `metadata.summary` a compaction, with its tokens and trigger from the sample's compaction
    event; system messages and reasoning left out."""
    samples = value.get("samples") if isinstance(value.get("samples"), list) else []
    builders = []
    for sample in samples:
        if not isinstance(sample, dict) or not isinstance(sample.get("messages"), list):
            continue
        b = SessionBuilder("inspect-ai", "messages")
        b.label = f"{sample.get('id', len(builders) + 1)}" + (f" epoch {sample['epoch']}" if isinstance(
            sample.get("epoch"), int) and sample["epoch"] != 1 else "")
        attachments = sample.get("attachments") if isinstance(sample.get("attachments"), dict) else {}
        events = [e for e in sample.get("events") or [] if isinstance(e, dict) and e.get("event") == "compaction"
                  and e.get("type", "summary") == "summary"] if isinstance(sample.get("events"), list) else []
        for k, message in enumerate(sample["messages"]):
            b.read += 1
            inspect_message(b, message, k, attachments, events)
        builders.append(b)
    return builders


def attached(text: Any, attachments: dict) -> Any:
    if isinstance(text, str) and text.startswith("attachment://"):
        return attachments.get(text[len("attachment://"):], text)
    return text


def inspect_message(b: SessionBuilder, message: Any, k: int, attachments: dict, events: list) -> None:
    if not isinstance(message, dict):
        b.skip("not a message", unread=True)
        return
    role = message.get("role")
    content = message.get("content")
    content = attached(content, attachments) if isinstance(content, str) else \
        [dict(p, text=attached(p.get("text"), attachments)) if isinstance(p, dict) and "text" in p else p
         for p in content] if isinstance(content, list) else content
    text = text_of(content, b.skip)
    if role == "system":
        b.skip("system or developer message (left out: not session history)")
    elif role == "user" and isinstance(message.get("metadata"), dict) and message["metadata"].get("summary") is True:
        event = events.pop(0) if events else {}
        meta = event.get("metadata") if isinstance(event.get("metadata"), dict) else {}
        inner = re.search(r"<summary>\s*(.*?)\s*</summary>", text, re.DOTALL)
        b.compaction(k, inner.group(1) if inner else text, source="user message with metadata.summary",
                     summary_at=k, trigger=meta.get("trigger") if isinstance(meta.get("trigger"), str) else None,
                     tokens_before=event.get("tokens_before"), tokens_after=event.get("tokens_after"))
        b.skip("compaction record (kept as a compaction event, not a turn)")
    elif role == "user":
        b.user(text, k)
    elif role == "assistant":
        calls = [b.call(c.get("id"), c.get("function"), c.get("arguments"), k)
                 for c in message.get("tool_calls") or [] if isinstance(c, dict)] \
            if isinstance(message.get("tool_calls"), list) else []
        b.assistant(text, calls, k)
    elif role == "tool":
        error = message.get("error") if isinstance(message.get("error"), dict) else None
        if error is not None:
            denied = error.get("type") == "approval"
            body = "\n".join(filter(None, [text, as_text(error.get("message"))])) if as_text(
                error.get("message")) not in text else text
            b.result(message.get("tool_call_id"), body, k, name=message.get("function") if isinstance(
                message.get("function"), str) else None, error=True, marked="denied" if denied else "failed",
                evidence=f"error.type {error.get('type')}")
        else:
            b.result(message.get("tool_call_id"), text, k, name=message.get("function") if isinstance(
                message.get("function"), str) else None)
    else:
        b.skip(f"role {str(role)[:20]!r}", unread=True)
