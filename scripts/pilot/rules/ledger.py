"""The ledger: the authoritative records a compacted state is checked against (scripts/README.md,
"The ledger format"), and normalize_ledger, which reads one as check_state reads it or raises
GateInputError naming every problem. A gate fails closed: an unknown field, a value of the wrong
type or a name pattern that could backtrack for ever is refused, never read as absent. Also the
ledger settings the runner's own gate uses. Pure, no I/O. """
from __future__ import annotations

import re
from typing import Any

try:                                    # the standard library's own reader of regular expressions
    from re import _parser as regex_parser          # Python 3.11 and later
except ImportError:                     # pragma: no cover - Python 3.10
    import sre_parse as regex_parser

from . import RuleInputError


# the format a ledger names (scripts/README.md, "The ledger format")
GATE_LEDGER_FORMAT = "ccl-gate-ledger-1"

# the runner's stated threshold: every named quantity is material
RUN_GATE_MAX_OMISSIONS = 0

# the six-letter pseudoword entity names
RUN_GATE_NAME_PATTERN = r"\b(?:[BDFGKLMNPRSTVZ][AEIOU]){3}\b"

# the kinds of access a permission grants, each wider than the one before
ACCESS_LEVELS = ("read", "write", "admin")


# A ledger's name_pattern is the user's regular expression, run on every word of a state: one that
# repeats a group which itself repeats can backtrack for ever, so it is refused, as is one longer
# than any name pattern needs.
MAX_NAME_PATTERN = 200


def backtracks_for_ever(pattern: str) -> bool:
    """Whether a pattern repeats (more than once) something that can itself match in more than one
    way: a repeat inside a repeat, such as (A+)+ or ((a{1,2}))*, or an alternation inside one, such
    as (a|aa)*, at any depth. Such a pattern can take exponential time on a long word that almost
    matches; one level of repetition over a character class cannot. Read from the parsed pattern, so
    that no spelling (nested groups, {n,m}) slips by."""
    def walk(items, in_repeat: bool) -> bool:
        for op, av in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                many = av[1] > 1
                if (in_repeat and many) or walk(av[2], in_repeat or many):
                    return True
            elif name == "BRANCH":
                if in_repeat or any(walk(branch, in_repeat) for branch in av[1]):
                    return True
            elif name == "SUBPATTERN" and walk(av[-1], in_repeat):
                return True
            elif name in ("ASSERT", "ASSERT_NOT", "ATOMIC_GROUP") and walk(av[-1], in_repeat):
                return True
            elif name == "GROUPREF_EXISTS" and any(walk(b, in_repeat) for b in av[1:]
                                                   if b is not None):
                return True
        return False

    return walk(regex_parser.parse(pattern), False)


class GateInputError(RuleInputError):
    """A ledger, state or source the gate cannot read: bad input, exit 2."""


def field_name(text: str) -> str:
    return re.sub(r"[\s\-]+", "_", text.strip().lower())


# Every field a ledger may hold, at each level. A gate fails closed: a field it does not know
# (`max_ammount`) would be
# read as absent, and the state checked against less than the ledger says, so it is refused, as a
# regime file's are.
LEDGER_FIELDS = {"ledger": ("format", "entities", "combined", "items", "permissions",
                            "allowed_sections",
                            "accepted_instructions", "user_requests", "name_pattern",
                            "max_omissions"),
                 "entity": ("value", "stale", "required"), "combined entry": ("parts", "value"),
                 "item": ("name", "match", "status", "receipt", "claimed_by"),
                 "permission": ("action", "match", "records", "amounts", "max_amount", "access",
                                "receipt")}


def unknown_fields(entry: Any, level: str, where: str, named_by: str = "") -> list[str]:
    """One problem per field of `entry`, an object at this level of a ledger, that the format does
    not know."""
    name = entry.get(named_by) if isinstance(entry, dict) else None
    where += f" ({name!r})" if isinstance(name, str) else ""
    return [f"{where}: unknown field {field!r} ({'an' if level[0] in 'aeiou' else 'a'} {level} "
            "takes "
            f"{', '.join(LEDGER_FIELDS[level])})" for field in entry
            if field not in LEDGER_FIELDS[level]] \
        if isinstance(entry, dict) else []


def normalize_ledger(data: Any) -> dict:
    """The ledger as check_state reads it, or GateInputError naming every problem, one per line
    (scripts/README.md, "The ledger format")."""
    if not isinstance(data, dict):
        raise GateInputError("the ledger must be a JSON object (see scripts/README.md, 'The "
                             "ledger format')")
    problems = unknown_fields(data, "ledger", "the ledger")
    if data.get("format", GATE_LEDGER_FORMAT) != GATE_LEDGER_FORMAT:
        problems.append(f"`format` is {data.get('format')!r}, expected {GATE_LEDGER_FORMAT!r}")
    entities = {}
    raw_entities = data.get("entities", {})
    if not isinstance(raw_entities, dict):
        problems.append("`entities` must be an object of name -> integer or {value, stale}")
        raw_entities = {}
    for name, spec in raw_entities.items():
        problems += unknown_fields(spec, "entity", f"entity {name!r}")
        spec = spec if isinstance(spec, dict) else {"value": spec}
        value, stale = spec.get("value"), spec.get("stale", [])
        if not isinstance(value, int) or isinstance(value, bool) or not isinstance(stale, list) or \
                not all(isinstance(v, int) and not isinstance(v, bool) for v in stale):
            problems.append(f"entity {name!r}: `value` must be an integer and `stale` a list of "
                            "integers")
            continue
        entities[name] = {"value": value, "stale": list(stale),
                          "required": bool(spec.get("required", True))}
    def listed(field: str) -> list:
        entries = data.get(field) or []
        if not isinstance(entries, list):
            problems.append(f"`{field}` must be a list")
            return []
        return entries
    combined = []
    for number, entry in enumerate(listed("combined"), 1):
        problems += unknown_fields(entry, "combined entry", f"combined entry {number}")
        parts = entry.get("parts") if isinstance(entry, dict) else None
        if not isinstance(parts, list) or len(parts) < 2 or not all(isinstance(p,
            str) and p in entities
                                                                    for p in parts) or \
                not isinstance(entry.get("value"), int) or isinstance(entry.get("value"), bool):
            problems.append(f"combined entry {entry!r}: needs `parts` (two or more ledger "
                            "entities) and an integer `value`")
            continue
        combined.append({"parts": list(parts), "value": entry["value"]})
    items = []
    for number, entry in enumerate(listed("items"), 1):
        problems += unknown_fields(entry, "item", f"item {number}", "name")
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or \
                not isinstance(entry.get("status"), str):
            problems.append(f"item {entry!r}: needs a `name` and a `status`")
            continue
        match = entry.get("match") or [entry["name"]]
        claimed_by = entry.get("claimed_by") or []
        if not all(isinstance(words, list) and all(isinstance(m, str) and m.strip() for m in words)
                   for words in (match, claimed_by)):
            problems.append(f"item {entry['name']!r}: `match` and `claimed_by` must be lists of "
                            "strings")
            continue
        items.append({"name": entry["name"], "match": match, "status": entry["status"].lower(),
                      "receipt": entry.get("receipt"), "claimed_by": claimed_by})
    permissions = []
    for number, entry in enumerate(listed("permissions"), 1):
        problems += unknown_fields(entry, "permission", f"permission {number}", "action")
        permission = read_permission(entry)
        if isinstance(permission, str):
            problems.append(permission)
        else:
            permissions.append(permission)
    sections = data.get("allowed_sections")
    if sections is not None and (not isinstance(sections,
                                                list) or not all(isinstance(s,
        str) for s in sections)):
        problems.append("`allowed_sections` must be a list of section names, or null for free text")
        sections = None
    accepted = data.get("accepted_instructions", []) or []
    if not isinstance(accepted, list) or not all(isinstance(s, str) for s in accepted):
        problems.append("`accepted_instructions` must be a list of strings")
        accepted = []
    requests = data.get("user_requests", []) or []
    if not isinstance(requests, list) or not all(isinstance(s, str) for s in requests):
        problems.append("`user_requests` must be a list of strings")
        requests = []
    pattern = data.get("name_pattern")
    try:
        name_re = re.compile(pattern) if pattern else None
    except (re.error, TypeError, RecursionError, OverflowError) as err:
        problems.append(f"`name_pattern` is not a regular expression ({err})")
        name_re = None
    if name_re is not None and (len(pattern) > MAX_NAME_PATTERN or backtracks_for_ever(pattern)):
        problems.append("`name_pattern` repeats a group that itself repeats or holds alternatives "
                        f"(such as (A+)+ or (a|aa)*), or is longer than {MAX_NAME_PATTERN} "
                        "characters; such a pattern can take forever on a long state, so write it "
                        "with one level of repetition over character classes (such as "
                        "[A-Z][a-z]+)")
        name_re = None
    max_omissions = data.get("max_omissions", 0)
    if not isinstance(max_omissions, int) or isinstance(max_omissions, bool) or max_omissions < 0:
        problems.append("`max_omissions` must be a whole number >= 0")
        max_omissions = 0
    if problems:
        raise GateInputError(f"the ledger is not one the gate can read: {len(problems)} "
                             "problem(s); fix them and "
                             f"check again (the format: scripts/README.md, 'The ledger format'):\n"
                             +
                             "\n".join(f"  - {p}" for p in problems))
    return {"entities": entities, "combined": combined, "items": items, "permissions": permissions,
            "allowed_sections": None if sections is None else [field_name(s) for s in sections],
            "accepted_instructions": accepted,
            "instructions_listed": "accepted_instructions" in data, "user_requests": requests,
            "name_pattern": name_re, "max_omissions": max_omissions}


def whole_numbers(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v,
        bool) for v in value)


def read_permission(entry: Any) -> dict | str:
    """One ledger permission as check_state reads it, or what is wrong with it."""
    if not isinstance(entry, dict) or not isinstance(entry.get("action"),
                                                     str) or not entry["action"].strip():
        return f"permission {entry!r}: needs an `action`"
    action = entry["action"]
    match = entry.get("match") or [action]
    records = entry.get("records") or []
    amounts = entry.get("amounts") or []
    maximum = entry.get("max_amount")
    access = entry.get("access")
    if not isinstance(match, list) or not all(isinstance(m, str) and m.strip() for m in match):
        return f"permission {action!r}: `match` must be a list of strings"
    if not isinstance(records, list) or not all(isinstance(r, str) and r.strip() for r in records):
        return f"permission {action!r}: `records` must be a list of strings"
    if not whole_numbers(amounts) or maximum is not None and not whole_numbers([maximum]):
        return (f"permission {action!r}: `amounts` must be a list of integers and `max_amount` an "
                "integer")
    if access is not None and access not in ACCESS_LEVELS:
        return f"permission {action!r}: `access` must be one of {', '.join(ACCESS_LEVELS)}"
    return {"action": action, "match": match, "records": records, "amounts": amounts,
            "max_amount": maximum,
            "access": access, "receipt": entry.get("receipt")}
