"""XR-S1, what the audit's release gate counts as support and as a failure (protocol/SESSIONS.md,
the amendment of 2026-12-06 (12), issue 40 point 4), read from what the agent's calls did, not
from the words of the history:

    gate_support(turns, steps, summary) -> {items, edits, approved, tasks}:
        items, the gate's ledger items (ledger.py's fields, and `reported`):
        - each failed or denied call a later call resolved (failed_steps.session_steps), done with
          the resolving turn as its receipt;
        - each failure needed.py counts as unresolved (needed.error_items, one source: a failure
          whose file a later edit call changed, or whose check later passed again, is none), with
          whether the summary reports it as needed.py judges it (kept or wrong);
        - the last run of each kind of check (tests, lint, build) the summary names, done or
          failed, that only the words of a check passed (CHECK_PASSED) claim done;
        edits: the files the edit and write calls changed and the code names they wrote or
        replaced; approved: whether the user approved anything; tasks: the last task list.
    unsupported(findings, support, source) -> the gate's findings less those the calls support:
        "not reported" for a failure the summary reports; a claim of a change to the code that
        every file and code name it gives supports (a file the calls changed, a name they wrote or
        the history holds), not a blanket one and none about a check; the user's approval where
        the user approved; done where the last task list marks the task, or every task, completed;
        a claim hedged to a part ("partially done"), or made only inside quotation marks.

Pure functions of the readers' record: no model, no file, no clock.
"""
from __future__ import annotations

import re

from .failed_steps import call_command, turn_outcome
from ...rules.claims import claim, terms
from .needed import (DONE_STATUSES, PLAN_TOOLS, arguments, call_of, check_kinds, edited_paths,
                     error_items, judge_needed, last_tasks, user_words)

# a code name: a word of four characters or more with a capital after its first letter, an
# underscore or a digit in it (getStats, MAX_TURNS, http2), not an English word
CODE_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*[A-Z_0-9]\w*")

# a claim that the code was changed: what an edit or write call does
CHANGE_CLAIM = re.compile(r"\b(?:fixed|updated|removed|added|created|deleted|implemented|changed|"
                          r"modified|wrote|rewrote|refactored|renamed|moved|replaced|restored|"
                          r"migrated|converted|extracted|introduced|simplified|restructured|"
                          r"resolved|adding|removing|changing|updating|replacing)\b",
                          re.IGNORECASE)

# a claim about a check: supported by a run of it, never by an edit
CHECK_CLAIM = re.compile(r"\b(?:tests?|lint\w*|builds?|compil\w+|pass(?:es|ed|ing)|green|"
                         r"deployed|pushed|committed|merged|released|published)\b",
                         re.IGNORECASE)

# a claim that covers all of something
BLANKET = re.compile(r"\b(?:all|every|each|everything|entire|whole|fully|the last|everywhere|"
                     r"throughout|across)\b", re.IGNORECASE)

# text in quotation marks: a label or a message quoted, whose words claim nothing
QUOTED = re.compile(r"\"[^\"\n]{0,200}\"|\u201c[^\u201d\n]{0,200}\u201d")

# the claims a user's approval supports, and the words a user approves with
APPROVAL_WORDS = frozenset({"approved", "confirmed", "agreed", "accepted", "okayed"})
APPROVES = re.compile(r"\b(?:yes|yeah|yep|ok(?:ay)?|sure|go ahead|do it|sounds good|looks good|"
                      r"lgtm|approved?|agreed?|confirm(?:ed)?|correct|exactly|perfect|great)\b",
                      re.IGNORECASE)

# a claim hedged to a part: no claim that the whole is done ("partially done", "most pass")
HEDGED = re.compile(r"\b(?:partially|partly|mostly|almost|nearly|most|some|many|half)\b",
                    re.IGNORECASE)

# the claims of the work done that a task list supports
FINISHED_WORDS = frozenset({"done", "complete", "completed", "finished"})

# a file named in a summary: a word with an extension
FILE_NAME = re.compile(r"[\w./\\-]*\w\.[a-z][a-z0-9]{0,7}\b")

# the arguments of an edit or write call that hold the text written or replaced
WRITTEN_ARGUMENTS = ("old_string", "new_string", "content", "old_str", "new_str", "file_text",
                     "diff", "patch", "input", "search", "replace")

# a kind of check -> the words a summary names it by
CHECK_WORDS = {"tests": ("tests", "test"), "lint": ("lint", "linter"),
               "build": ("build", "builds", "compiles")}

# the words that present a check as passed
CHECK_PASSED = ("pass", "passes", "passed", "passing", "green", "succeeded", "successful",
                "clean", "cleanly", "compiles", "ok")

def gate_support(turns: list[dict], steps: list[dict], summary: str) -> dict:
    """What the gate counts as support in the replaced turns: {items: the ledger items
    (gate_items), edits: the names the edit and write calls changed (edit_names), approved:
    whether the user approved anything (user_approved), tasks: the last task list's tasks and
    whether each is completed}."""
    edits = edit_names(turns)
    return {"items": gate_items(turns, steps, summary), "edits": edits,
            "approved": user_approved(turns),
            "tasks": [(text, status.lower() in DONE_STATUSES) for text, status, _
                      in last_tasks(turns)]}


def gate_items(turns: list[dict], steps: list[dict], summary: str) -> list[dict]:
    """The gate's ledger items of the replaced turns (the module's docstring): resolved failures,
    needed.py's unresolved ones and the last run of each kind of check the summary names."""
    lower = summary.lower()
    items = [{"name": f"{s['tool']}: {s['match'][0]}"[:80], "match": s["match"], "status": "done",
              "receipt": f"turn {s['resolved_turn']}"} for s in steps if s["status"] == "done"]
    errors = [i for i in error_items(turns, steps) if i["category"] == "unresolved_error"]
    for item, judged in zip(errors, judge_needed(errors, summary)):
        step = item["step"]
        items.append({"name": f"{step['tool']}: {step['match'][0]}"[:80], "match": step["match"],
                      "status": step["status"], "receipt": None,
                      "reported": judged["status"] != "lost"})
    for kind, (outcome, turn) in last_checks(turns).items():
        # (named by the summary, so never "not reported": an open failure is needed.py's)
        words = [w for w in CHECK_WORDS[kind] if re.search(rf"\b{w}\b", lower)]
        if words:
            items.append({"name": f"the last {kind} run", "match": words,
                          "status": "done" if outcome == "ok" else outcome,
                          "receipt": f"turn {turn}" if outcome == "ok" else None,
                          "claimed_by": list(CHECK_PASSED)})
    return items


def change_supported(clause: str, edits: set[str], source: str) -> bool:
    """Whether the span's edit and write calls support a clause's claim of a change to the code:
    it says a change was made (CHANGE_CLAIM), names no check (a claim that tests pass needs a
    test run), every file it names is one the calls changed, and every code name it gives is one
    they wrote or replaced or one the history holds (a function the agent read and then edited
    inside); a name the history never holds is no change the calls made."""
    if not edits or not CHANGE_CLAIM.search(clause) or CHECK_CLAIM.search(bare_words(clause)):
        return False
    files = FILE_NAME.findall(clause)
    names = code_names(FILE_NAME.sub(" ", clause))
    lowered = {e.lower() for e in edits}
    return all(re.split(r"[\\/]", f)[-1].lower() in lowered for f in files) and \
        all(n.lower() in lowered or n in source for n in names)


def bare_words(text: str) -> str:
    """A text without its code in backticks and its file names (an `entire/` folder is no
    blanket claim, `committed.go` no claim of a commit)."""
    return FILE_NAME.sub(" ", re.sub(r"`[^`]*`", " ", text))


def code_names(text: str) -> set[str]:
    """The code names a text gives (CODE_NAME), not a word in capitals for emphasis (MAJOR)."""
    return {n for n in CODE_NAME.findall(text) if len(n) >= 4 and
            not (n.isupper() and n.isalpha())}


def edit_names(turns: list[dict]) -> set[str]:
    """The files the span's successful edit and write calls changed (each by its path and its
    file name) and the code names in what they wrote or replaced."""
    names: set[str] = set()
    for turn in turns:
        if turn["role"] != "tool" or turn_outcome(turn) != "ok":
            continue
        call = call_of(turn)
        paths = edited_paths(call)
        if not paths:
            continue
        names.update(p.strip() for p in paths)
        names.update(re.split(r"[\\/]", p.strip())[-1] for p in paths)
        args = arguments(call)
        written = [args.get(k) for k in WRITTEN_ARGUMENTS] + \
            [e.get(k) for e in args.get("edits") or [] if isinstance(e, dict)
             for k in WRITTEN_ARGUMENTS]
        for text in written:
            if isinstance(text, str):
                names.update(code_names(text))
                names.update(re.split(r"[\\/]", p)[-1] for p in FILE_NAME.findall(text))
    return {n for n in names if len(n) >= 4}


def last_checks(turns: list[dict]) -> dict[str, tuple[str, int]]:
    """kind -> (outcome, turn) of the last command of each kind of check the span ran."""
    last: dict[str, tuple[str, int]] = {}
    for t, turn in enumerate(turns):
        kinds = check_kinds(call_command(arguments(call_of(turn)))) if turn["role"] == "tool" \
            else set()
        outcome = turn_outcome(turn) if kinds else "ok"
        # (a test run that failed says nothing of the build its tests compiled)
        for kind in kinds - ({"build"} if outcome != "ok" and "tests" in kinds else set()):
            last[kind] = (outcome, t + 1)
    return last


def supported_by_calls(finding: dict, support: dict, source: str) -> bool:
    """Whether a claim the gate found unsupported by the words of the history (or against one of
    its failure sentences) is supported by what the calls did: a change to the code the edit calls
    made (change_supported), the user's approval where the user approved (user_approved), a task
    the last task list marks completed, or the whole work where it marks every task completed;
    or is no claim outside its quotations (a quoted label's "(merged)"). A blanket claim of a
    change ("all", "the last", "across the codebase") is not supported by the edit calls: they
    show what was changed, never that nothing is left."""
    detail, text = finding["detail"], finding["text"]
    said = re.match(r"(?:a (?:blanket )?claim of|presented as) `?([^`,]+?)`?(?: that|,)", detail)
    if not said or detail.startswith("presented as") and "the source reports a failure" \
            not in detail:
        return False
    word = said.group(1).lower()
    if word not in text.lower() or QUOTED.search(text):
        # the claim outside the quotations, if any, is the one to support
        unquoted = claim(QUOTED.sub(" ", text))
        if unquoted is None:
            return True
        word, text = unquoted[1], QUOTED.sub(" ", text)
    if HEDGED.search(bare_words(text)):
        return True
    if word in APPROVAL_WORDS and support["approved"] and \
            (re.search(r"\b(?:user|plan)\b", text, re.IGNORECASE) or
             re.match(r"^\W*" + word, text, re.IGNORECASE)):
        return True
    if word in FINISHED_WORDS and task_finished(text, support["tasks"]):
        return True
    return not BLANKET.search(bare_words(text)) and change_supported(text, support["edits"],
                                                                      source)


def user_approved(turns: list[dict]) -> bool:
    """Whether the user approved something in the span: a message that says so (APPROVES), or a
    plan the plan-mode tool handed in and the user accepted (its call succeeded)."""
    return any(APPROVES.search(text) for _, _, text in user_words(turns)) or \
        any(turn["role"] == "tool" and turn["tool"] in PLAN_TOOLS and
            turn_outcome(turn) == "ok" for turn in turns)


def task_finished(text: str, tasks: list[tuple[str, bool]]) -> bool:
    """Whether the last task list supports a clause's claim of done: every task is completed, or
    a completed task holds most of the clause's words."""
    words = terms(text) - FINISHED_WORDS
    return bool(tasks) and all(done for _, done in tasks) or \
        any(done and words and len(words & terms(task)) * 2 >= len(words) for task, done in tasks)


def ledger_items(support: dict) -> list[dict]:
    """The items as the ledger takes them (ledger.py's fields)."""
    return [{k: v for k, v in item.items() if k != "reported"} for item in support["items"]]


def unsupported(findings: list[dict], support: dict, source: str) -> list[dict]:
    """The findings that stand: not that a failure the summary reports (needed.py) is not
    reported, and no claim the calls support (supported_by_calls)."""
    reported = {item["name"] for item in support["items"] if item.get("reported")}
    return [f for f in findings if not (f.get("item") in reported and
                                        f["detail"].endswith("is not reported"))
            and not supported_by_calls(f, support, source)]
