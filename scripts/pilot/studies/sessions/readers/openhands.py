"""XR-S1, reading (protocol/SESSIONS.md section 2.1): OpenHands event lists (V0, as its trajectory
export writes them), read into a SessionBuilder record; positions are indices in the list.
"""
from __future__ import annotations

from typing import Any

from .turns import SessionBuilder, as_text, key_of


# --- OpenHands: ~/.openhands/sessions/<id>/events/*.json, or a trajectory export (one list) -------
OPENHANDS_NOISE = {"system": "system prompt", "recall": "recall (workspace context)",
                   "change_agent_state":
                   "agent state change", "condensation_request": "condensation request",
                   "null": "empty action"}

OPENHANDS_ARG_NOISE = ("thought", "confirmation_state", "security_risk", "blocking", "is_static",
                       "hidden",
                       "impl_source", "is_input", "cwd", "kernel_init_code", "include_extra")


def openhands_events(value: Any) -> list | None:
    events = value.get("events") if isinstance(value, dict) else value
    if isinstance(events, list) and any(
        isinstance(e, dict) and "source" in e and ("action" in e or "observation" in e)
        for e in events[:50]
    ):
        return events
    return None


def read_openhands(events: list) -> list[SessionBuilder]:
    """An OpenHands event list: the user's and the agent's messages, each tool action a call (its
    thought the assistant's text) and the observation that names it as its `cause` its result (a
    non-zero exit code or an error observation a failed step, user_rejected a denied one), a
    condensation action a compaction (only the events it forgets are replaced); recall, state
    changes and the system prompt left out."""
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


def openhands_action(b: SessionBuilder, event: dict, k: int, by_event: dict,
                     turn_of_event: dict) -> None:
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
            forgotten = list(range(start, end + 1)) if isinstance(start, int) and isinstance(end,
                int) else []
        turns = sorted(turn_of_event[key_of(i)] for i in forgotten if key_of(i) in turn_of_event)
        b.compaction(k, as_text(args.get("summary")) if args.get("summary") else None,
                     source="condensation action",
                     summary_at=f"{k}.args.summary", replaces=[turns[0],
                                                               turns[-1]] if turns else None,
                     why_unreadable="this condenser forgets events without writing a summary")
        b.skip("compaction record (kept as a compaction event, not a turn)")
    else:
        meta = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"),
                                                             dict) else {}
        name = meta.get("function_name") or action
        call = b.call(meta.get("tool_call_id"), name, {k2: v for k2, v in args.items()
                                                       if k2 not in OPENHANDS_ARG_NOISE}, k)
        by_event[key_of(event.get("id"))] = call
        response = meta.get("model_response") if isinstance(meta.get("model_response"),
                                                            dict) else {}
        b.assistant(as_text(args.get("thought")), [call], k,
                    message_id=response.get("id") if meta.get("total_calls_in_response",
                                                              1) != 1 else None)


def openhands_observation(b: SessionBuilder, event: dict, k: int, by_event: dict) -> None:
    kind = event["observation"]
    if kind in ("agent_state_changed", "recall", "condense", "null", "agent_condensation"):
        b.skip(f"{kind} observation")
        return
    call = by_event.get(key_of(event.get("cause")))
    if call is None:
        meta = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"),
                                                             dict) else {}
        call = b.calls.get(meta.get("tool_call_id")) if isinstance(meta.get("tool_call_id"),
            str) else None
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
    b.result(call, text, k, name=None if call else str(kind), error=error, marked=marked,
             evidence=evidence)


# --- Recognised from the content: the checks its registry entry names ----------------------------
def checks(value: Any) -> list[tuple[bool, str]]:
    """A list of events (or an object with an `events` list) with a source and an action or an
    observation."""
    return [(isinstance(value, (dict, list)), "a list of events"),
            (openhands_events(value) is not None, "events with a `source` and an `action` or "
             "`observation`")]


def read(value: Any) -> list[SessionBuilder]:
    return read_openhands(openhands_events(value))
