"""XR-S1, reading (protocol/SESSIONS.md section 2.1): Codex CLI rollouts, the payload layout (codex)
and the older one (codex-legacy), read into SessionBuilder records: the Responses API's items that
both layouts hold (readers/responses.py reads them), the compacted lines and the events (the shapes
checked against the tool: tasks/sessions/README.md, "The formats"); positions are line numbers.
"""
from __future__ import annotations

from typing import Any

from .responses import ResponseItems
from .turns import as_text, first, one_object_a_line, text_of


# --- Codex CLI: ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl --------------------------------------
CODEX_LINE_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted",
                    "inter_agent_communication", "inter_agent_communication_metadata",
                    "world_state")

RESPONSE_ITEM_TYPES = ("message", "function_call", "function_call_output", "custom_tool_call",
                       "custom_tool_call_output", "local_shell_call", "reasoning",
                       "web_search_call", "ghost_snapshot",
                       "compaction", "compaction_summary", "tool_search_call",
                       "tool_search_output", "image_generation_call", "agent_message",
                       "additional_tools", "configuration_update", "context_compaction")

def is_codex_line(item: Any) -> bool:
    return (isinstance(item, dict) and item.get("type") in CODEX_LINE_TYPES
            and isinstance(item.get("payload"), dict))


def is_codex_legacy_item(item: Any) -> bool:
    return isinstance(item, dict) and (item.get("type") in RESPONSE_ITEM_TYPES
                                       or "record_type" in item)


def read_codex(lines: list) -> list[SessionBuilder]:
    """Codex CLI rollouts, `{timestamp, type, payload}` lines: response items are the session
    (messages, function and custom tool calls and their outputs), harness context (role developer,
    the project's AGENTS file, environment context) and reasoning left out, event_msg lines are
    echoes or status (user_message and agent_message repeat a response item's message), a
    `compacted` line is a compaction (its summary in `message`, or encrypted in
    `replacement_history` after a remote compaction); messages between agents (agent_message
    items, inter_agent_communication lines) are read once, whichever line carries them."""
    codex = CodexReader("codex")
    for n, line in lines:
        codex.builder.read += 1
        kind = line.get("type") if isinstance(line, dict) else None
        payload = line.get("payload") if isinstance(line, dict) else None
        if kind == "response_item" and isinstance(payload, dict):
            codex.item(payload, n)
        elif kind == "compacted" and isinstance(payload, dict):
            codex.compacted(payload, n)
        elif kind == "event_msg" and isinstance(payload, dict):
            codex.event(payload)
        elif kind == "inter_agent_communication" and isinstance(payload, dict):
            codex.agent_message(payload, n)
        elif kind in ("session_meta", "turn_context"):
            codex.builder.skip(f"{kind} (session settings, no turn)")
            if kind == "session_meta" and isinstance(payload, dict):
                codex.session_meta(payload)
        elif kind in ("world_state", "inter_agent_communication_metadata"):
            codex.builder.skip(f"{kind} (the harness's context or delivery mark, no turn)")
        else:
            codex.builder.skip(f"line type {str(kind)[:30]!r} (not known to this reader)"
                               if isinstance(kind, str)
                               else "line with no type", unread=True)
    return [codex.builder]


def read_codex_legacy(lines: list) -> list[SessionBuilder]:
    """The older Codex rollout: a first line with the session's id, then bare response items and
    `record_type` lines (state records; an intermediate version wrote `record_type: response` with
    the item's fields beside it). No events, no compaction."""
    codex = CodexReader("codex-legacy")
    for position, (n, line) in enumerate(lines):
        codex.builder.read += 1
        if position == 0 and isinstance(line,
                                        dict) and "type" not in line and "record_type" not in line:
            codex.builder.skip("session meta (first line)")
        elif isinstance(line, dict) and "record_type" in line:
            if line["record_type"] == "response":
                codex.item({k: v for k, v in line.items() if k not in ("record_type", "timestamp")},
                           n)
            else:
                codex.builder.skip(f"record_type {str(line['record_type'])[:30]!r} (no turn)")
        elif isinstance(line, dict) and isinstance(line.get("type"), str):
            codex.item(line, n)
        else:
            codex.builder.skip("line with no type", unread=True)
    return [codex.builder]


class CodexReader(ResponseItems):
    """Response items of either Codex layout, its compacted lines and its events, into a
    SessionBuilder."""

    def __init__(self, fmt: str):
        super().__init__(fmt, "lines")

    def compacted(self, payload: dict, n: int) -> None:
        b = self.builder
        message = payload.get("message") if isinstance(payload.get("message"), str) else ""
        history = (payload.get("replacement_history")
                   if isinstance(payload.get("replacement_history"), list) else [])
        encrypted = any(isinstance(i, dict) and i.get("type") in ("compaction",
            "compaction_summary") for i in history)
        users = {t["text"]: k for k, t in enumerate(b.turns, 1) if t["role"] == "user"}
        kept = [users[text_of(i.get("content")).strip()] for i in history if isinstance(i, dict) and
                i.get("role") == "user" and text_of(i.get("content")).strip() in users]
        b.compaction(n, message, source="compacted", summary_at=n, tokens_before=self.tokens,
                     kept_turns=kept,
                     why_unreadable="remote compaction: the summary is encrypted in "
                     "replacement_history" if encrypted
                     else "the compacted line holds no summary text")
        b.skip("compaction record (kept as a compaction event, not a turn)")

    def session_meta(self, payload: dict) -> None:
        """A sub-agent's rollout: its kind, and its path among the agents (the messages it wrote
        are its own words; those of the agent that started it, its task)."""
        source = payload.get("source")
        if "SubAgent" in as_text(source) or "subagent" in as_text(source):
            self.builder.kind = "sub-agent"
        spawn = source.get("subagent") if isinstance(source, dict) else None
        spawn = spawn.get("thread_spawn") if isinstance(spawn, dict) else None
        if isinstance(spawn, dict) and isinstance(spawn.get("agent_path"), str):
            self.agent_path = spawn["agent_path"]

    def event(self, payload: dict) -> None:
        kind = payload.get("type")
        if kind == "token_count":
            info = payload.get("info") if isinstance(payload.get("info"), dict) else {}
            total = info.get("total_token_usage") if isinstance(info.get("total_token_usage"),
                                                                dict) else {}
            if isinstance(total.get("total_tokens"), int):
                self.tokens = total["total_tokens"]
        self.builder.skip("event_msg (an echo or status line, no turn)")


# --- Recognised from the content: the checks its registry entry names ----------------------------
def checks(values: list) -> list[tuple[bool, str]]:
    """JSONL lines of {timestamp, type, payload}."""
    return [one_object_a_line(values),
            (first(values, lambda v: isinstance(v, dict) and v.get("type") in CODEX_LINE_TYPES),
             "lines with a `type` of session_meta, response_item, event_msg, turn_context or "
             "compacted"),
            (first(values, is_codex_line), "a `payload` object on those lines")]


def legacy_checks(values: list) -> list[tuple[bool, str]]:
    """A first line with the session's id and time, then bare response items."""
    head = values[0] if values else None
    return [(isinstance(head, dict) and "id" in head and "timestamp" in head and "type" not in head,
             "a first line with the session's `id` and `timestamp`"),
            (first(values[1:], is_codex_legacy_item),
             "response items (message, function_call ...)")]
