"""XR-S1, reading (protocol/SESSIONS.md section 2.1): SWE-agent trajectories (`.traj`, the 1.x
layout and the older one), read into a SessionBuilder record; positions are indices in `history`.
"""
from __future__ import annotations

import re
from typing import Any

from .turns import SessionBuilder, text_of


# --- SWE-agent: trajectories/<user>/<run>/<instance>/<instance>.traj ------------------------------
OBSERVATION_PREFIX = re.compile(r"^OBSERVATION:\s*\n?")

FOOTER = re.compile(r"\n?\(Open file: [^\n]*\)\s*\n\(Current directory: "
                    r"[^\n]*\)\s*\n?(?:bash-\$\s*)?$")


def is_swe_agent(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if isinstance(value.get("attempts"), list) and "history" not in value:
        return any(is_swe_agent(a) for a in value["attempts"][:5])
    history, steps = value.get("history"), value.get("trajectory")
    if isinstance(history, list) and steps is None:
        # a demonstration file (trajectories/demonstrations/): `history` alone, each message with
        # SWE-agent's own `message_type`
        return any(isinstance(m, dict) and "role" in m and isinstance(m.get("message_type"), str)
                   for m in history[:20])
    return (isinstance(history, list) and isinstance(steps, list)) and (
        any(isinstance(m, dict) and "role" in m for m in history[:20]) or
        any(isinstance(s, dict) and "action" in s for s in steps[:20]))


def read_swe_agent(value: dict) -> list[SessionBuilder]:
    """A SWE-agent trajectory: `history` is the session (the system prompt and demonstrations left
    out); 1.x links each observation to its action by tool_call_ids, 0.x by position (an observation
    is the user message after an action). A step that is in `trajectory` but not in `history` was
    blocked by the environment and re-asked."""
    if "history" not in value and isinstance(value.get("attempts"), list) and value["attempts"]:
        value = value["attempts"][-1]
    history = value.get("history") if isinstance(value.get("history"), list) else []
    legacy = not any(isinstance(m, dict) and (m.get("tool_calls")
                                              or m.get("tool_call_ids")) for m in history)
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
            calls = [b.call(c.get("id"), f.get("name"), f.get("arguments"), k) for c,
                     f in functions]
            words = message.get("thought") if isinstance(message.get("thought"), str) else text
            if not calls and action and action.strip():
                calls = [b.call(None, action.split()[0], {"command": action.strip()}, k)]
                words = words if message.get("thought") is not None else text.split("```")[0]
            words = re.sub(r"^\s*DISCUSSION\s*\n", "", words or "")
            b.assistant(words, calls, k)
        elif role == "tool" or (legacy and role == "user" and b.pending() is not None):
            ids = message.get("tool_call_ids")
            call = b.calls.get(ids[0]) if isinstance(ids, list) and ids and isinstance(ids[0],
                str) else b.pending()
            b.result(call, FOOTER.sub("", OBSERVATION_PREFIX.sub("", text)).strip(), k)
        elif role == "user":
            b.user(text, k)
        else:
            b.skip(f"role {str(role)[:20]!r}", unread=True)
    steps = value.get("trajectory") if isinstance(value.get("trajectory"), list) else []
    wanted = [a for a in actions if a is not None]
    position, blocked = 0, []
    for step in steps:
        action = step.get("action") if isinstance(step, dict) else None
        if position < len(wanted) and action == wanted[position]:
            position += 1
        elif isinstance(action, str) and isinstance(step.get("observation"), str) and \
                step["observation"].strip():
            blocked.append((position, action, step["observation"]))
        elif isinstance(action, str):
            b.skip("step only in `trajectory` (blocked by the environment, not in the history)")
            b.notes.append(f"a step the environment blocked (not a turn): {action[:80]}")
    for position, action, observation in reversed(blocked):
        blocked_step(b, turns_before(b, wanted, position), action, observation)
    return [b]


def turns_before(b: SessionBuilder, wanted: list[str], position: int) -> int:
    """Where a blocked step goes: before the assistant turn of the next action the history kept."""
    seen = -1
    for t, turn in enumerate(b.turns):
        if turn["role"] == "assistant" and turn["calls"]:
            seen += 1
            if seen == position:
                return t
    return len(b.turns)


def blocked_step(b: SessionBuilder, at: int, action: str, observation: str) -> None:
    """A step the environment refused before it ran (the linter rejecting an edit, a blocked
    command): in `trajectory`, not in `history`; read as the call and its failed result, since the
    agent saw the refusal and retried (amendment of 2026-12-06)."""
    text = FOOTER.sub("", OBSERVATION_PREFIX.sub("", observation)).strip()
    call = b.call(None, action.split()[0], {"command": action.strip()}, "trajectory")
    b.answered.add(id(call))
    b.turns[at:at] = [{"role": "assistant", "text": "", "calls": [call], "at": "trajectory"},
                      {"role": "tool", "tool": call["name"], "call": call, "text": text,
                       "error": False, "at": "trajectory", "marked": "failed",
                       "evidence": "a step only in `trajectory`: the environment refused it"}]
    b.skip("step only in `trajectory` (blocked by the environment, read as a failed step)")
    b.notes.append(f"a step the environment blocked (a failed step): {action[:80]}")


# --- Recognised from the content: the checks its registry entry names ----------------------------
def checks(value: Any) -> list[tuple[bool, str]]:
    """An object with a `history` of messages and a `trajectory` of steps (or `attempts` of
    them, or, in a demonstration file, `history` alone)."""
    obj = isinstance(value, dict)
    history = value.get("history") if obj else None
    return [(obj, "an object"),
            (obj and (isinstance(history, list) or "attempts" in value), "a `history` list"),
            (obj and (isinstance(value.get("trajectory"), list) or "attempts" in value or
                      "trajectory" not in value and is_swe_agent(value)),
             "a `trajectory` list (or a demonstration's `history` alone)"),
            (is_swe_agent(value), "history messages with a `role`")]
