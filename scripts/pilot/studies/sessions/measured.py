"""XR-S1: how often the rules behind every sessions and audit report are right, as measured on the
hand-labelled sets (protocol/SESSIONS.md section 3.5; issue 43, point 2), and the one line each
report prints about it.

Two kinds of figure, both on the held-out halves: how well the rules FIND the items of a history
(scripts/bench/measure_rules.py: values, standing instructions, failed and denied steps), and how
often the STATUS a report prints for an item it found (kept, reformatted, changed, dropped; present,
contradicted, absent; reported, claimed done, absent) is the one a person gives
(scripts/bench/measure_statuses.py). tests/test_labelled.py fails when a figure here is not what the
scripts measure, so a report cannot go on printing figures its rules no longer have.
"""
from __future__ import annotations

MEASURED_ON = "2026-12-06"
WHERE = "protocol/SESSIONS.md section 3.5"

# rule -> (precision, recall) on the held-out snippets (measure_rules.py --split test)
FINDING = {"values": (0.52, 0.79), "instructions": (0.67, 0.37), "steps": (1.00, 1.00)}

# kind -> the share of held-out items found whose status is the label's (measure_statuses.py)
STATUS_AGREES = {"values": 0.61, "instructions": 0.56, "steps": 0.50}

# what a report calls each kind
KIND_WORDS = {"values": "the exact values a person marks",
              "instructions": "users' standing instructions",
              "steps": "failed and denied steps"}

# below this a figure is said in words beside its number
GOOD_ENOUGH = 0.9


# the held-out values a person marks as kept only as the former one (a value the history itself
# replaced), and how many of them the rules call `former` (measure_statuses.py)
FORMER = {"labelled": 5, "called former": 0}


def share_words(share: float) -> str:
    """A measured share in plain words, no stronger than the number."""
    for least, words in ((GOOD_ENOUGH, "nearly all"), (0.75, "about three quarters"),
                         (0.65, "about two thirds"), (0.55, "a little over half"),
                         (0.45, "about half"), (0.3, "about a third"), (0.2, "about a fifth")):
        if share >= least:
            return words
    return "few"


def of(words: str) -> str:
    return words + (" " if words == "nearly all" else " of ")


def listing(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)


def rules_line() -> str:
    """One sentence, with its pointer: what the rules find and how often the status printed for
    what they find is a person's, each figure below GOOD_ENOUGH said in words beside it."""
    found = listing([f"{of(share_words(recall))}{KIND_WORDS[kind]} (recall {recall:.2f}; "
                     f"{precision:.2f} of what they take is one)"
                     for kind, (precision, recall) in FINDING.items()])
    agrees = listing([f"{of(share_words(share))}the {kind} ({share:.2f})"
                      for kind, share in STATUS_AGREES.items()])
    return (f"How sure the rules are (measured {MEASURED_ON} on hand-labelled held-out sets, "
            f"{WHERE}): they find {found}; of the items they find, the status printed here is "
            f"the one a person gives for {agrees}; of {FORMER['labelled']} values a person "
            f"marks as kept only as the former one, they call {FORMER['called former']} so: read "
            "every status as the rules' reading, not a person's.")
