"""XR-S1, what the audit's release gate counts as support and as a failure (protocol/SESSIONS.md,
the amendment of 2026-12-06 (12), issue 40 point 4), read from what the agent's calls did, not
from the words of the history:

    gate_support(turns, steps, summary) -> {items, edits, approved, tasks, printed, test_runs,
                                            corrected, mid_session}:
        items, the gate's ledger items (ledger.py's fields, and `reported`):
        - each failed or denied call a later call resolved (failed_steps.session_steps), done with
          the resolving turn as its receipt;
        - each failure needed.py counts as unresolved (needed.error_items, one source: a failure
          whose file a later edit call changed, or whose check later passed again, is none), with
          whether the summary reports it as needed.py judges it (kept or wrong);
        - the last run of each kind of check (tests, lint, build) the summary names, done or
          failed, that only the words of a check passed (CHECK_PASSED) claim done;
        edits: the files the edit and write calls changed and the code names they wrote or
        replaced; approved: whether the user approved anything; tasks: the last task list;
        printed: what the successful calls gave and printed; test_runs: each test run's outcome
        and text; corrected: the failed lookups a later call got right; mid_session: whether the
        span begins where a file that begins mid-session does.
    unsupported(findings, support, source, summary) -> the gate's findings less those the calls
        support:
        "not reported" for a failure the summary reports; a claim of a change to the code that
        every file and code name it gives supports (a file the calls changed, a name they wrote or
        the history holds), not a blanket one and none about a check; the user's approval where
        the user approved; done where the last task list marks the task, or every task, completed;
        a claim hedged to a part ("partially done"), or made only inside quotation marks.
        And (the amendment of 2026-12-06 (14)): no claim once names, labels and adjectives are
        set aside (not_a_claim); a claim that names nothing to check (unverifiable), or only
        work from before a mid-session file began (beyond_history); a check the calls' output
        bears out (checked_by_calls); a failed check the clause reports or whose own tests
        passed (against_failed_check); a lookup later corrected; obligations that are an
        error reported, an option's "no", a note about code or an opinion (obligation_stands).
        And (the amendment of 2026-12-06 (15)): a failure its own call answers (a command that
        only looks, a fallback that ran, a lookup made again by another tool, a check the summary
        reports failing: answered_failures); the template's list of the user's messages and its
        pending tasks and next step (claims_nothing_here); a value that is a placeholder path's
        tail, a list number or lines the agent viewed (value_stands); a check whose last run
        passed (passed_by_last_run); orders in a mid-session file, quoting the user or carried
        from the previous summary, questions, and instructions opposed only in words
        (obligation_stands, opposite_stands).

Pure functions of the readers' record: no model, no file, no clock.
"""
from __future__ import annotations

import difflib
import json
import re

from .failed_steps import call_command, turn_outcome
from ...rules.claims import (ORDER_CLAIM, claim, contradicts, corrected_away,
                             reports_failure, terms)
from .needed import (DONE_STATUSES, PLAN_TOOLS, arguments, call_of, check_kinds, edited_paths,
                     error_items, judge_needed, last_tasks, user_words)

# a code name: a word of four characters or more with a capital after its first letter, an
# underscore or a digit in it (getStats, MAX_TURNS, http2), not an English word
CODE_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*[A-Z_0-9]\w*")

# a claim that the code was changed: what an edit or write call does
CHANGE_CLAIM = re.compile(r"\b(?:fixed|updated|removed|added|created|deleted|implemented|changed|"
                          r"modified|wrote|rewrote|refactored|renamed|moved|replaced|restored|"
                          r"migrated|converted|extracted|introduced|simplified|restructured|"
                          r"resolved|applied|adding|removing|changing|updating|replacing)\b",
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

# what a claim can be checked by: a file, code in backticks, a code name, a quotation, a number
# standing alone (not one inside a word: "1-based") or a numbered thing ("#6")
CHECKABLE = re.compile(r"`[^`]+`|\"[^\"\n]+\"|(?<![\w.-])#?\d[\d.,:/]*%?(?![\w-])")

# a path, a branch or a URL (`feat/rate-retries`, src/rates): a named thing, whatever its hyphens
PATH_LIKE = re.compile(r"[\w.-]+/[\w.-]+")

# a word joined by hyphens to capitalized words: part of a name ("Red-Green-Refactor")
HYPHENED_NAME = re.compile(r"\b[A-Z]\w*(?:-[A-Z]\w*)+\b")

# a label of two words or more that opens a list item or a line and ends in a colon (the claim
# word in "- Shared bug report: ..." names what follows, it claims nothing)
LABEL = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*\**[A-Za-z][\w'-]*(?: [\w'-]+){1,5}\**:(?=\s)")

# a word joined by hyphens ("red-green-refactor", "pre-commit") and the phrases in which a claim
# word claims nothing ("the user pushed back on ...": objected)
NOT_A_CLAIM_WORDS = re.compile(r"\b\w+(?:-\w+)+\b|\bpush(?:ed|es|ing)? back\b", re.IGNORECASE)

# "complete" before a noun: an adjective ("complete trees") or an order ("Complete Task #6"),
# not a claim that something is complete (that one stands before punctuation or a word below)
COMPLETE_BEFORE_NOUN = re.compile(
    r"\bcomplete(?=\s+(?!(?:and|or|but|now|with|for|in|on|at|as|so|to|except|including|apart|"
    r"when|after|before|yet|too|already|successfully|without|since|per|by|if|though|once|"
    r"except)\b)[#A-Za-z])", re.IGNORECASE)

# the claims of having checked something: supported by what the calls printed
VERIFY_WORDS = frozenset({"verified", "checked", "validated", "confirmed"})

# how a check was made: "by checking the diff", "by running `git log`"
CHECKED_BY = re.compile(r"\bby (?:checking|running|reading|comparing|inspecting|looking at|viewing|"
                        r"examining)\s+(?:the\s+|a\s+)?`?(?P<what>[\w.-]{3,})", re.IGNORECASE)

# the words that name a kind of check in a claim that it passed
CHECK_NAMES = {"tests": re.compile(r"\btests?\b", re.IGNORECASE),
               "lint": re.compile(r"\blint\w*", re.IGNORECASE),
               "build": re.compile(r"\b(?:build|builds|built|compil\w+)\b", re.IGNORECASE)}

# the words of a claim that a check passed
PASSED_WORDS = re.compile(r"\b(?:pass(?:es|ed|ing)?|green|succeeded|successful(?:ly)?|clean(?:ly)?|"
                          r"compiles|compiled|ok)\b", re.IGNORECASE)

# a test file, named by its kind ("the test file"): a file whose name marks it as tests
TEST_FILE_PHRASE = re.compile(r"\btest (?:file|helper|fixture)s?\b", re.IGNORECASE)
TEST_FILE_NAME = re.compile(r"(?:^|[_.-])(?:test|tests|spec)(?:[_.-]|$)|^test", re.IGNORECASE)

# a line of a file view (Claude Code's Read prints each line after its number): code read, no
# failure reported
FILE_VIEW_LINE = re.compile(r'the source reports a failure: "\s*\d+\u2192')

# the words of a clause that reports trouble in the state it names ("Current merge conflict")
REPORTS_TROUBLE = re.compile(r"\b(?:conflicts?|conflicting|failing|failures?|broken|errors?|"
                             r"red|blocked|unresolved|still open)\b", re.IGNORECASE)

# a command-line option: its "no" (`--no-pager`) is no negation
OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")

# a heading over a list of the errors met (and fixed): its lines report what went wrong
ERRORS_HEADING = re.compile(r"^\W*(?:\d+[.)]\s*)?\**[^\n:]{0,40}\b(?:errors?|problems?|issues?|"
                            r"bugs?|failures?|fixes)\b[^\n:]{0,40}:\**\s*$", re.IGNORECASE)

# a heading or a numbered section of a summary: the lines under it are its own
HEADING = re.compile(r"^\s*(?:#+\s|\d+[.)]\s|\**[A-Z][^\n]{0,60}:\**\s*$)")

# a list item about a file or a piece of code ("- **`types.go`** - ... Must mirror ..."): what it
# says the code must do describes the code, it orders no one
ABOUT_CODE = re.compile(r"^\s*(?:[-*+\u2022]|\d+[.)])\s*\**`[^`\n]+`\**\s*(?:[-:\u2013\u2014(]|$)")

# what the user said about a thing (that it is, was, seems ...): an opinion reported, no order
OPINION = re.compile(r"\buser\b[^.\n]{0,40}?\b(?:said|says|felt|feels|thought|thinks|noted|"
                     r"mentioned)\s+(?:that\s+)?(?:[\w`'-]+\s+){0,4}?(?:is|are|was|were|seems?|"
                     r"seemed|looks?|looked)\b[^.\n]*\.?\s*$", re.IGNORECASE)

# the template's heading over the user's messages, quoted: its lines give no order and claim
# nothing
USER_MESSAGES = re.compile(r"\buser(?:'s)? messages\b", re.IGNORECASE)

# the template's headings over what is still to do: its lines claim nothing done
STILL_TO_DO = re.compile(r"\b(?:pending tasks?|next steps?|remaining (?:tasks?|work)|to-?do)\b",
                         re.IGNORECASE)

# a "not" or "no" that qualifies a thing, not an action ("commits NOT in main", "has no trailer")
QUALIFYING_NEGATION = re.compile(r"\bnot\b(?=\s+(?:in|on|from|of|at|within|into|under|"
                                 r"part of)\b)|(?<=\bhas )no\b|(?<=\bhad )no\b|"
                                 r"(?<=\bwith )no\b|(?<=\bhave )no\b", re.IGNORECASE)

# a failure that was wanted (test-first work's red step): no step that did not happen
EXPECTED_FAILURE = re.compile(r"\bfail(?:ed|s)?(?=\s+as\s+(?:expected|intended|planned)\b)",
                              re.IGNORECASE)

# the words around an order, before its verb
ORDER_FILLER = frozenset({"please", "always", "never", "only", "just", "also", "don't", "dont",
                          "do", "not", "you", "we", "should", "must", "to", "and", "then",
                          "make", "sure", "ensure", "that"})

# the first words of a statement, not of an order
STATEMENT_START = frozenset({
    "when", "whenever", "if", "the", "a", "an", "this", "that", "these", "those", "it", "its",
    "there", "they", "he", "she", "user", "users", "i", "my", "our", "your", "their", "because",
    "since", "once", "while", "as", "in", "on", "at", "with", "by", "from", "so", "is", "are",
    "was", "were"})

# the tools that change files or run commands: a later success of one is no lookup corrected
ACTING_TOOLS = re.compile(r"bash|shell|exec|command|terminal|edit|write|patch|replace|notebook",
                          re.IGNORECASE)


# programs that only read (a failure of one is what it found): files, searches, system state
LOOKING_PROGRAMS = frozenset({
    "ls", "cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "ag", "find", "fd", "which",
    "whereis", "type", "file", "stat", "wc", "echo", "printf", "xxd", "hexdump", "od", "md5",
    "md5sum", "shasum", "sha1sum", "sha256sum", "du", "df", "ps", "pwd", "printenv", "tree",
    "less", "more", "sort", "uniq", "cut", "jq", "diff", "date", "whoami", "uname", "realpath",
    "readlink", "basename", "dirname", "test", "[", "true", "id", "lsof", "pgrep", "strings"})

# git's subcommands that only read
LOOKING_GIT = frozenset({
    "status", "log", "show", "diff", "cat-file", "fsck", "rev-parse", "ls-files", "ls-tree",
    "blame", "reflog", "describe", "count-objects", "for-each-ref", "merge-base", "name-rev",
    "grep", "shortlog", "verify-pack", "show-ref", "rev-list", "check-ignore", "whatchanged"})

# the arguments a lookup tool looks for
LOOKUP_ARGUMENTS = ("pattern", "query", "path", "file_path", "url", "glob")

# the words that say a check fails
FAILING = re.compile(r"\b(?:fail(?:s|ed|ing|ure|ures)?|broken|errors?|red)\b", re.IGNORECASE)


def gate_support(turns: list[dict], steps: list[dict], summary: str) -> dict:
    """What the gate counts as support in the replaced turns: {items: the ledger items
    (gate_items), edits: the names the edit and write calls changed (edit_names), approved:
    whether the user approved anything (user_approved), tasks: the last task list's tasks and
    whether each is completed, printed: what the successful calls gave and printed (call_texts),
    test_runs: each test run's outcome and what it ran and printed, corrected: the failures that
    need no report (a lookup a later call of the same tool got right, corrected_lookups; a
    failure the call's own words answer, answered_failures), mid_session, user_said: the user's
    words, earlier: the previous summary the span opens with, if any}."""
    edits = edit_names(turns)
    return {"items": gate_items(turns, steps, summary), "edits": edits,
            "approved": user_approved(turns),
            "tasks": [(text, status.lower() in DONE_STATUSES) for text, status, _
                      in last_tasks(turns)],
            "printed": call_texts(turns), "test_runs": test_runs(turns),
            "corrected": corrected_lookups(turns, steps) | answered_failures(turns, steps,
                                                                              summary),
            "mid_session": bool(turns) and bool(turns[0].get("mid_session")),
            "user_said": "\n".join(text for _, _, text in user_words(turns)),
            "earlier": next((t["text"] for t in turns if t.get("summary")), ""),
            "last_checks": {kind: outcome for kind, (outcome, _) in last_checks(turns).items()}}


def call_texts(turns: list[dict]) -> str:
    """What the span's successful calls gave (their command or arguments) and printed, one text."""
    texts = []
    for turn in turns:
        if turn["role"] == "tool" and turn_outcome(turn) == "ok":
            args = arguments(call_of(turn))
            texts.append(call_command(args) or " ".join(str(v) for v in args.values())
                         if isinstance(args, dict) else "")
            texts.append(turn["text"] or "")
    return "\n".join(texts)


def test_runs(turns: list[dict]) -> list[tuple[str, str]]:
    """(outcome, what it ran and printed) of each test run of the span, in order."""
    return [(turn_outcome(turn), call_command(arguments(call_of(turn))) + "\n" +
             (turn["text"] or "")) for turn in turns if turn["role"] == "tool" and
            "tests" in check_kinds(call_command(arguments(call_of(turn))))]


def corrected_lookups(turns: list[dict], steps: list[dict]) -> set[str]:
    """The names of the failed lookups (a call of a tool that neither runs a command nor changes
    a file: an issue fetched, a page read) that a later call of the same tool got right under a
    corrected argument (the same arguments, each value that differs alike in half its letters:
    MCP-108 then ENT-108): their purpose was met."""
    corrected = set()
    for step in steps:
        if step["status"] == "done" or ACTING_TOOLS.search(step["tool"]) or \
                not 0 < step.get("turn", 0) <= len(turns):
            continue
        failed = arguments(call_of(turns[step["turn"] - 1]))
        if any(turn["role"] == "tool" and turn["tool"] == step["tool"] and
               turn_outcome(turn) == "ok" and corrects(failed, arguments(call_of(turn)))
               for turn in turns[step["turn"]:]):
            corrected.add(f"{step['tool']}: {step['match'][0]}"[:80])
    return corrected


def answered_failures(turns: list[dict], steps: list[dict], summary: str) -> set[str]:
    """The names of the failed calls whose failure needs no report of its own (the amendment of
    2026-12-06 (15)): a command that only looks (each program of it reads: `ls`, `cat`, `git
    show`, `git fsck` ...), whose failure is what it found; a command whose fallback ran (`which
    x || go install x`) and which the tool did not mark as an error; a lookup a later successful
    call of another tool made for the same words (Grep failing to start, then `grep` in a shell);
    and a check (tests, lint, build) that the summary itself reports failing ("a test failure")."""
    answered = set()
    for step in steps:
        if step["status"] == "done" or not 0 < step.get("turn", 0) <= len(turns):
            continue
        turn = turns[step["turn"] - 1]
        args = arguments(call_of(turn))
        command = call_command(args)
        kinds = check_kinds(command)
        if command and not kinds and only_looks(command) or \
                command and "||" in command and turn.get("error") is False or \
                not command and not ACTING_TOOLS.search(step["tool"]) and \
                looked_up_later(args, turns[step["turn"]:]) or \
                kinds and any(reports_failing(kind, summary) for kind in kinds):
            answered.add(f"{step['tool']}: {step['match'][0]}"[:80])
    return answered


def only_looks(command: str) -> bool:
    """Whether every program a command line runs only reads (LOOKING_PROGRAMS, git's
    LOOKING_GIT): no redirection into a file, no program that changes anything."""
    if re.search(r"(?<![0-9&])>(?!&)", re.sub(r"\d?>\s*/dev/null|2>&1", " ", command)):
        return False
    for part in re.split(r"\|\|?|&&|;|\n", command):
        words = [w for w in part.split() if not re.match(r"^\w+=", w)]
        while words and words[0] in ("sudo", "cd", "time", "env") and len(words) > 1:
            words = words[2:] if words[0] == "cd" else words[1:]
        if not words:
            continue
        program = words[0].rsplit("/", 1)[-1]
        if program == "git":
            # (`git -C path log`: the subcommand is the first word that is no option or path)
            rest = [w for w in words[1:] if not w.startswith("-") and not re.match(r"^[/.~]", w)]
            sub, then = (rest + ["", ""])[:2]
            if sub not in LOOKING_GIT and then not in ("status", "list", "show", "get") and \
                    not (sub == "branch" and len(rest) == 1):
                return False
        elif program not in LOOKING_PROGRAMS:
            return False
    return True


def looked_up_later(failed: dict, later: list[dict]) -> bool:
    """Whether a later successful call holds every word (four characters or more) of what a
    failed lookup looked for (its pattern, query, path or URL): the lookup made again, by
    another tool."""
    wanted = [str(failed.get(k)) for k in LOOKUP_ARGUMENTS if failed.get(k)]
    words = set(re.findall(r"\w{4,}", " ".join(wanted)))
    return bool(words) and any(
        turn["role"] == "tool" and turn_outcome(turn) == "ok" and
        words <= set(re.findall(r"\w{4,}", json.dumps(arguments(call_of(turn)))))
        for turn in later)


def reports_failing(kind: str, summary: str) -> bool:
    """Whether a line of the summary says that a check of this kind fails ("a test failure",
    "Current failing test", "the build is broken")."""
    names = "|".join(CHECK_WORDS[kind]) + ("|linting" if kind == "lint" else "")
    return any(re.search(rf"\b(?:{names})\b", line, re.IGNORECASE) and
               FAILING.search(line) for line in summary.splitlines())


def corrects(failed: dict, later: dict) -> bool:
    """Whether a later call's arguments correct a failed call's: the same keys, some value
    changed, and each changed value a string alike the old one (difflib ratio 0.5 or more)."""
    if not isinstance(failed, dict) or not isinstance(later, dict) or \
            set(failed) != set(later) or failed == later:
        return False
    return all(isinstance(old, str) and isinstance(later[k], str) and
               difflib.SequenceMatcher(None, old, later[k]).ratio() >= 0.5
               for k, old in failed.items() if later[k] != old)


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
    if TEST_FILE_PHRASE.search(clause):
        # (a test file named by its kind: one the calls changed whose name marks it as tests)
        if not any(TEST_FILE_NAME.search(e.rsplit(".", 1)[0]) for e in edits if "." in e):
            return False
        clause = TEST_FILE_PHRASE.sub(" ", clause)
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
    if against_failed_check(finding, support, source):
        return True
    said = re.match(r"(?:a (?:blanket )?claim of|presented as) `?([^`,]+?)`?(?: that|,)", detail)
    if not said or detail.startswith("presented as") and "the source reports a failure" \
            not in detail:
        return False
    if FILE_VIEW_LINE.search(detail) and claim(text) is not None:
        # (the "failure" is a line of code the agent read: the claim is one like any other)
        detail = f"a claim of `{claim(text)[1]}` that no ledger item or source event supports"
    word = said.group(1).lower()
    if word not in text.lower() or QUOTED.search(text):
        # the claim outside the quotations, if any, is the one to support
        unquoted = claim(QUOTED.sub(" ", text))
        if unquoted is None:
            return True
        word, text = unquoted[1], QUOTED.sub(" ", text)
    if HEDGED.search(bare_words(text)) or not_a_claim(text) or \
            unverifiable(text, word, support["tasks"]) or \
            beyond_history(text, word, support, source):
        return True
    if word in VERIFY_WORDS | {"done"} and checked_by_calls(text, word, support["printed"],
                                                            source):
        return True
    if passed_by_last_run(text, support.get("last_checks", {})):
        return True
    if word in APPROVAL_WORDS and support["approved"] and \
            (re.search(r"\b(?:user|plan)\b", text, re.IGNORECASE) or
             re.match(r"^\W*" + word, text, re.IGNORECASE)):
        return True
    if word in FINISHED_WORDS and task_finished(text, support["tasks"]):
        return True
    return not BLANKET.search(bare_words(text)) and change_supported(text, support["edits"],
                                                                      source)


def passed_by_last_run(text: str, last: dict) -> bool:
    """Whether a claim that a check passed ("the code compiled successfully", "lint is clean")
    names kinds of check whose last run in the span each passed; not a blanket or hedged one."""
    bare = bare_words(text)
    kinds = [kind for kind, name in CHECK_NAMES.items() if name.search(bare)]
    return bool(kinds) and bool(PASSED_WORDS.search(bare)) and not BLANKET.search(bare) and \
        not HEDGED.search(bare) and all(last.get(kind) == "ok" for kind in kinds)


def not_a_claim(text: str) -> bool:
    """Whether a clause makes no claim once the words that are part of a name (HYPHENED_NAME), of
    a label (LABEL) or an adjective or an order ("complete trees", "Complete Task #6") are set
    aside, and (the amendment of 2026-12-06 (15)) a word joined by hyphens ("red-green-refactor")
    or a phrase in which a claim word means something else ("pushed back on")."""
    rest = COMPLETE_BEFORE_NOUN.sub(" ", LABEL.sub(" ", HYPHENED_NAME.sub(" ", text)))
    rest = NOT_A_CLAIM_WORDS.sub(" ", rest)
    return rest != text and claim(rest) is None and \
        not re.search(r"\b(?:" + "|".join(CHECK_PASSED) + r")\b", rest, re.IGNORECASE)


def unverifiable(text: str, word: str, tasks: list[tuple[str, bool]]) -> bool:
    """Whether a claim of done names nothing the history could check: no file, code, code name,
    quotation or number ("The implementation is complete."), and no task the last task list
    leaves open holds half its words (that task checks it): unverifiable, not false. A claim of
    having verified or approved is another matter (checked_by_calls, the user's words)."""
    words = terms(text) - FINISHED_WORDS
    if word in VERIFY_WORDS | APPROVAL_WORDS or CHECK_CLAIM.search(bare_words(text)) or \
            PATH_LIKE.search(text) or any(
            not done and words and len(words & terms(task)) * 2 >= len(words)
            for task, done in tasks):
        return False
    rest = HYPHENED_NAME.sub(" ", re.sub(r"\b\w+(?:-\w+)+\b", " ", text))
    return not (FILE_NAME.search(text) or CHECKABLE.search(rest) or code_names(rest))


def beyond_history(text: str, word: str, support: dict, source: str) -> bool:
    """Whether a claim of done names things (files, code, code names, quotations) of which the
    history in the file holds none, in its words, the calls' arguments or what they printed: work
    from before the file begins (a span that starts mid-session, as the reader marks its first
    turn), which the file cannot check; in a span from the session's start it is invented. So is
    a claim of a change to files none of which a call in the file changed."""
    if word in VERIFY_WORDS | APPROVAL_WORDS or not support.get("mid_session"):
        return False
    named = [m.strip("`\"").strip() for m in re.findall(r"`[^`]+`|\"[^\"\n]+\"", text)] + \
        [re.split(r"[\\/]", f)[-1] for f in FILE_NAME.findall(text)] + \
        sorted(code_names(FILE_NAME.sub(" ", text)))
    named = [n for n in named if len(n) >= 3]
    held = (source, support["printed"])
    edited = {e.lower() for e in support["edits"]}
    files = [re.split(r"[\\/]", f)[-1].lower() for f in FILE_NAME.findall(text)]
    # (the amendment of 2026-12-06 (15): a change to files of which no call in the file changed
    # any, in a file that begins mid-session, was made before it began: `git stash pop` brings
    # such changes back without an edit call)
    return bool(named) and not any(n in h for n in named for h in held) and \
        not any(n.lower() in edited for n in named) or \
        bool(files) and bool(CHANGE_CLAIM.search(text)) and not any(f in edited for f in files)


def checked_by_calls(text: str, word: str, printed: str, source: str = "") -> bool:
    """Whether a claim of having checked something ("verified with `git log`", "checked coverage:
    `f` 66.7%", "already done") is supported by what the span's successful calls gave and
    printed: it names a thing or value, each it names is there or (the amendment of 2026-12-06
    (15)) is the subject the conversation asked about, and one at least is there; or it names
    how it checked ("by checking the diff") and a successful call did that. A blanket claim is
    not."""
    if word == "done" and not re.search(r"\balready\s+done\b", text, re.IGNORECASE) or \
            BLANKET.search(bare_words(text)):
        return False
    named = [m.strip("`\"") for m in CHECKABLE.findall(text)] + \
        [f for f in FILE_NAME.findall(text)] + sorted(code_names(text))
    named = [n for n in named if len(n) >= 2]
    if named:
        return any(n in printed for n in named) and \
            all(n in printed or n in source for n in named)
    means = CHECKED_BY.search(text)
    return bool(means) and bool(re.search(rf"\b{re.escape(means.group('what'))}\b", printed,
                                          re.IGNORECASE))


def against_failed_check(finding: dict, support: dict, source: str = "") -> bool:
    """Whether a claim set against a failed ledger item ("`the last tests run` presented as
    passing, but it is failed") reports the failure itself ("most tests passing", "Current merge
    conflict"), or names tests (a file, a test name) whose own last run passed, as a red step of
    test-first work leaves the last run of all failed on purpose; or (the amendment of
    2026-12-06 (15)) is a claim of a change, not of a check passing ("created the test file"
    beside a failed test run), that the edit calls support."""
    detail, text = finding["detail"], finding["text"]
    if not re.search(r"presented as \S+, but it is (?:failed|denied)", detail):
        return False
    if HEDGED.search(bare_words(text)) or REPORTS_TROUBLE.search(bare_words(text)) or \
            reports_failure(text) or not_a_claim(text):
        return True
    if CHANGE_CLAIM.search(text) and not PASSED_WORDS.search(bare_words(text)):
        return change_supported(text, support["edits"], source)
    if "the last tests run" not in detail:
        return False
    # (the tests by their code names, else by their files' stems: a run names its tests)
    named = sorted(code_names(FILE_NAME.sub(" ", text))) or \
        [re.split(r"[\\/]", f)[-1].rsplit(".", 1)[0] for f in FILE_NAME.findall(text)]
    runs = [outcome for outcome, ran in support["test_runs"] if any(n in ran for n in named)]
    return bool(runs) and runs[-1] == "ok"


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


def summary_line(text: str, summary: str) -> tuple[str, str]:
    """(the summary's line that holds a finding's text, the heading it stands under), '' where
    not found."""
    lines = summary.splitlines()
    probe = text.strip()[:60]
    for n, line in enumerate(lines):
        if probe and probe in line:
            heading = next((h for h in reversed(lines[:n]) if HEADING.match(h)), "")
            return line, heading
    return "", ""


def obligation_stands(finding: dict, summary: str, support: dict | None = None) -> bool:
    """Whether an obligation finding stands: not a line under a heading of errors met (which
    reports an error), not the opposite of an instruction only by a command-line option
    (`--no-pager`), not a list item about a piece of code, and not the user's opinion reported
    ("the user said they were redundant"). And (the amendment of 2026-12-06 (15)): not a line
    of the template's list of the user's messages (quoted); not set against an instruction
    whose action it does not name (opposite_stands); not a question that names no user; with
    the span's support, not an order given as the user's where the file begins mid-session (the
    user's earlier words are not in it), that quotes the user's own words, or that the previous
    summary the span opens with gave as the user's too (carried, not invented here)."""
    detail, text = finding["detail"], finding["text"]
    line, heading = summary_line(text, summary)
    if USER_MESSAGES.search(heading):
        return False
    opposite = re.match(r'says the opposite of the instruction (".*")$', detail)
    if opposite:
        instruction = json.loads(opposite.group(1))
        return not ERRORS_HEADING.match(heading) and opposite_stands(text, instruction)
    if detail.startswith("instruction-like text") and ABOUT_CODE.match(line):
        return False
    if text.rstrip().endswith("?") and not re.search(r"\buser\b", text, re.IGNORECASE):
        return False
    given = detail.startswith(("an order or a rule given as the user's",
                               "a rule given as the user's"))
    if given and OPINION.search(text) and not ORDER_CLAIM.search(text):
        return False
    support = support or {}
    if (given or detail.startswith("instruction-like text")) and support.get("mid_session"):
        return False
    return not (given and (quotes_user(text, support.get("user_said", "")) or
                           carried(text, support.get("earlier", ""))))


def opposite_stands(text: str, instruction: str) -> bool:
    """Whether a sentence says the opposite of an instruction, once command-line options and
    the "not" or "no" that qualifies a thing ("commits not in main", "a commit with no trailer")
    are set aside: it gives a value the instruction corrected away, or it names the action the
    instruction orders (its first verb, "show" of "Feature branches: show only ...") and says
    the opposite of it. An instruction that orders no action (a statement: "When a commit has no
    trailer, PostCommit returns early") is opposed only by such a value; one about the order of
    events (before, first) is read as before."""
    mine, theirs = plain_order(text), plain_order(instruction)
    if not contradicts(mine, theirs):
        return False
    if any(old in text for old in corrected_away(instruction)) or \
            re.search(r"\b(?:before|first)\b", instruction, re.IGNORECASE):
        return True
    return order_verb(instruction) is not None


def plain_order(text: str) -> str:
    """A sentence without its command-line options and the negations that qualify a thing, and
    a failure it says was expected ("the tests failed as expected") read as no step undone."""
    return EXPECTED_FAILURE.sub("fail", QUALIFYING_NEGATION.sub(" ", OPTION.sub(" ", text)))


def order_verb(instruction: str) -> str | None:
    """The first word of an instruction's order once its list marker, its label ("Step 1:",
    "Feature branches:") and the words around an order (never, always, please, only, you
    must ...) are set aside; None where that word opens a statement (when, the, it, user ...)."""
    rest = re.sub(r"^[\s#>*+\-\u2022\d.)\]]*", "", instruction)
    rest = re.sub(r"^[^:\n]{1,40}:\s+", "", rest)
    words = [w for w in re.findall(r"[a-z][\w'-]*", rest.lower()) if w not in ORDER_FILLER]
    if not words or words[0] in STATEMENT_START and not (
            len(words) > 1 and words[1].endswith("ing")):
        return None
    return words[0]


def quotes_user(text: str, said: str) -> bool:
    """Whether a sentence quotes the user's own words (two words or more, as the user's words
    hold them, case and punctuation aside, not a part the user negated): it reports the message,
    it invents nothing."""
    plain = f" {' '.join(re.findall(r'[a-z0-9]+', said.lower()))} "
    for quote in QUOTED.findall(text):
        words = re.findall(r"[a-z0-9]+", quote.lower())
        at = plain.find(f" {' '.join(words)} ")
        # (not a part the user negated: "reset it in run" of "don't reset it in run")
        if len(words) >= 2 and at >= 0 and \
                not re.search(r"\b(?:not|t|never|no)\s*$", plain[:at + 1]):
            return True
    return False


def carried(text: str, earlier: str) -> bool:
    """Whether the previous summary the span opens with gives the same order as the user's: a
    line of it that names the user holds half the order's words or more."""
    order = ORDER_CLAIM.search(text)
    words = terms(order.group("what") if order else text)
    return bool(words) and any(
        len(words & terms(line)) * 2 >= len(words)
        for line in earlier.splitlines() if re.search(r"\buser\b", line, re.IGNORECASE))


def unsupported(findings: list[dict], support: dict, source: str,
                summary: str = "") -> list[dict]:
    """The findings that stand: not that a failure the summary reports (needed.py), or a lookup
    a later call got right (corrected_lookups), is not reported; no claim the calls support
    (supported_by_calls); no claim inside a quotation of the summary (the user's words quoted)."""
    reported = {item["name"] for item in support["items"] if item.get("reported")} | \
        support["corrected"]
    quoted = [q.group(0) for q in re.finditer(r"\"[^\"\n]{20,}\"", summary)]
    return [f for f in findings if not (f.get("item") in reported and
                                        f["detail"].endswith("is not reported"))
            and not any(f["text"].strip() in q for q in quoted if f["category"] == "status")
            and not (f["category"] == "status" and claims_nothing_here(f["text"], summary))
            and not supported_by_calls(f, support, source)
            and (f["category"] != "obligation" or obligation_stands(f, summary, support))
            and (f["category"] != "value" or value_stands(f, summary, support))]


def claims_nothing_here(text: str, summary: str) -> bool:
    """Whether a clause stands where the template's words claim nothing done: in its list of the
    user's messages (quoted) or under a heading of what is still to do (pending tasks, the next
    step)."""
    heading = summary_line(text, summary)[1] if text.strip() else ""
    return bool(USER_MESSAGES.search(heading) or STILL_TO_DO.search(heading))


def value_stands(finding: dict, summary: str, support: dict) -> bool:
    """Whether a value finding ("`235-237` is not in the source") stands: not the tail of a path
    whose folder is a placeholder (`.entire/<session-id>/prompt.txt`), not a list item's number
    ("12. **Final step**"), and not a line or range of lines each of which a file view the calls
    printed numbers ("lines 235-237" of a file read with its line numbers)."""
    value = finding["text"].strip()
    if not value:
        return True
    if re.search(r"[>}\]]" + re.escape(value), summary) or \
            re.search(rf"(?m)^\s*{re.escape(value)}[.)]\s", summary) and value.isdigit():
        return False
    lines = re.fullmatch(r"(\d+)(?:\s*[-\u2013]\s*(\d+))?", value)
    if lines and re.search(rf"\blines?\s+{re.escape(value)}\b", summary, re.IGNORECASE):
        return not all(re.search(rf"(?m)^\s*{n}(?:\u2192|\t)", support["printed"])
                       for n in lines.groups() if n)
    return True
