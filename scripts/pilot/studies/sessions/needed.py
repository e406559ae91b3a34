"""XR-S1, the audit's question per recorded compaction (protocol/SESSIONS.md, the amendments of
2026-12-06, issue 40): what did the agent that continued need, and did the summary keep it? Built
from the structure the agent's log records, not from every word of the history:

    needed_items(turns, workspace) -> the work state at the compaction, from the replaced history:
        request and instruction (every user message, a queued message, a correction written into a
        tool-rejection message, an answer to the agent's question, not the text the harness writes
        into a user turn; standing instructions told apart by truth.is_standing_instruction, and a
        sentence of a typed request that says how the work must go, or a handed plan's item that
        forbids something, judged on its own; a call the user stopped without a word; withdrawn
        ones dropped), file_changed (the agent's edit and write tools, of every agent the readers
        know, and files a `git add` names one by one), open_task (the last task list before the
        boundary, tasks not completed, and the last plan's checks no task took up and no call ran),
        unresolved_error (a failed or denied call no later call resolved,
        failed_steps.session_steps, nor met its purpose: purpose_met_later), value (given by
        the user, the branch and worktree the log records, a commit or pull request the agent
        made, not in a scratch repository, a value the agent wrote in its own words and passed to
        a later call or stated last: agent_values.py; never a value seen only in a tool's output,
        so never a line-number prefix) and decision (the
        agent's "the root cause is ..." that says what it found, the user's choice of an offered
        option), each with its key (a short literal string of the history) and its sentence.
    judge_needed(items, summary, agreed) -> each item kept (in any spelling: a path by its tail,
        a number reformatted, another case), lost, or wrong (another option than the one chosen,
        the opposite instruction, a failure reported fixed, an unpushed commit reported pushed),
        with the summary's sentence that keeps or misstates it; and, wrong, an order the summary
        gives the user that neither the user's words, nor what a short "yes" agreed to
        (agreed_words), nor the previous summary (earlier_summary) hold.
    history_in_file(event) -> whether the file holds the history a compaction replaced.

Pure functions of the readers' record: no model, no file, no clock. Every text kept is masked the
way truth.py masks (values.mask_secrets).
"""
from __future__ import annotations

import re
from typing import Any

from ...rules.claims import (claim, contradicts, invented_order, reports_failure, says_not_done,
                             terms)
from ...rules.spellings import normalize_value, numeric_key
from ...rules.states import state_units
from ...rules.values import extract_values, mask_secrets
from .agent_text import (ABOUT_SUMMARY, claims_done, failure_lines, intents, machine_text,
                         run_of, superseded_runs_dropped)
from .agent_values import address_kept, agent_value_items, changed_in, number_kept
from .failed_steps import call_command, session_steps, turn_outcome
from .truth import is_standing_instruction, judge_steps, revoked_by, split_sentences


CATEGORIES = ("request", "instruction", "file_changed", "open_task", "unresolved_error", "value",
              "decision")

STATUSES = ("kept", "lost", "wrong")

# --- Where agents record the work state ----------------------------------------------------------
# tool name -> the arguments that name the file it writes (Claude Code, Gemini CLI, Cline and Roo,
# OpenHands, SWE-agent, aider's and Codex's own tools)
EDIT_TOOLS = {"Edit": ("file_path",), "Write": ("file_path",), "MultiEdit": ("file_path",),
              "NotebookEdit": ("notebook_path",), "write_file": ("file_path", "path"),
              "replace": ("file_path", "path"), "write_to_file": ("path",),
              "replace_in_file": ("path",), "apply_diff": ("path",), "insert_content": ("path",),
              "search_and_replace": ("path",), "edit_file": ("path", "target_file"),
              "create_file": ("path",), "str_replace_editor": ("path",),
              "str_replace_based_edit_tool": ("path",), "edit": ("path", "file_path"),
              "write": ("path", "file_path")}

# the commands of an editor tool that only read
VIEW_COMMANDS = frozenset({"view", "read"})

# Codex's apply_patch names each file it touches on a line of its own
PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$", re.MULTILINE)

# tool name -> (the argument holding the list, the field of a task's text, of its status)
TASK_LISTS = {"TodoWrite": ("todos", "content", "status"),
              "update_plan": ("plan", "step", "status"),
              "write_todos": ("todos", "description", "status"),
              "todo_write": ("todos", "content", "status")}

# where a plan stands: the plan-mode tool's argument, or a user message handing the agent a plan
PLAN_TOOLS = frozenset({"ExitPlanMode", "exit_plan_mode"})
PLAN_HANDED = re.compile(r"^\s*(?:implement|execute|follow) (?:the|this) (?:following )?plan\b",
                         re.IGNORECASE)

# Claude Code's words after a plan it hands to a fresh context: no step of the plan
PLAN_TRAILER = re.compile(r"^If you need specific details from before", re.IGNORECASE)

# a plan's section of checks: its steps are the ones agents leave out of their task lists
CHECK_HEADING = re.compile(r"\b(?:test|tests|testing|verif\w*|validat\w*|manual)\b",
                           re.IGNORECASE)

# a plan's list item; a line of prose headed as a check; a line that says what a check should give
LIST_ITEM = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
CHECK_LABEL = re.compile(r"^(?:\w+\s){0,2}?(?:test|tests|testing|check|verif\w*|manual)\b"
                         r"[^:]{0,40}:", re.IGNORECASE)
# a line that describes (its subject first) rather than orders a step
DESCRIBES = re.compile(r"^(?:the|this|these|that|those|it|all|both|each)\b", re.IGNORECASE)
EXPECTED = re.compile(r"^(?:expected|expect|result|output)\b\W", re.IGNORECASE)

DONE_STATUSES = frozenset({"completed", "complete", "done", "cancelled", "canceled"})

# Claude Code's rejection text: what the user wrote follows its fixed preamble
REJECTION_WORDS = re.compile(r"the user said:\s*\n(?P<words>.+)", re.DOTALL)

# Claude Code's words when the user stops a call and says nothing more
REFUSED = re.compile(r"^The user doesn't want to proceed with this tool use", re.IGNORECASE)

# a summary's sentence that says the user stopped or refused something
STOPPED = re.compile(r"\b(?:reject\w*|refus\w*|declin\w*|denied|stopp?\w*|interrupt\w*|"
                     r"(?:did not|didn't|does not|doesn't) want|not to|wait\w*)\b", re.IGNORECASE)

# a rejection that carries no words of the user's (Claude Code's own text for a dismissed question)
REJECTION_BOILERPLATE = re.compile(r"^The user wants to clarify these questions", re.IGNORECASE)

# text the agent's harness writes into a user turn, not the user's words: Claude Code's shell mode
# (`<bash-input>`, `<bash-stdout>`), a background agent's notice, a loaded skill's body, a slash
# command given alone (its expansion, if any, is a turn of its own)
HARNESS_TEXT = re.compile(r"^\s*(?:<(?:bash-(?:input|stdout|stderr)|task-notification|"
                          r"agent-notification|system-reminder)>|Base directory for this skill: |"
                          r"/[\w:-]+\s*$)")

# Claude Code's AskUserQuestion result: "question"="answer" pairs
ANSWERED = re.compile(r'"(?P<question>[^"\n]{3,400})"="(?P<answer>[^"]{1,600})"')

# the agent's sentence stating a finding or a choice
FINDING = re.compile(r"\b(?:the (?:root cause|real (?:issue|problem|cause)|cause|bug|culprit|"
                     r"fix|problem|issue) (?:is|was)|(?:i'll|i will|let's|we'll) go with|"
                     r"(?:i|we)(?:'ve| have)? decided|decision:)", re.IGNORECASE)

FINDING_TERMS = 3

# git's report of a commit, `[branch 1a2b3c4] message`, and a pull request's address
COMMIT_REPORT = re.compile(r"^\[(?P<branch>[^\]\s]+)(?: \(root-commit\))? "
                           r"(?P<hash>[0-9a-f]{7,40})\]", re.MULTILINE)
PULL_REQUEST = re.compile(r"https://\S+?/(?P<key>pull/\d+)\b")
PUSH = re.compile(r"\bgit\s+push\b")
PUSHED = re.compile(r"\bpushed\b|\bpush(?:ed)? to (?:origin|remote)\b", re.IGNORECASE)

# branches every repository has: no value of this work
COMMON_BRANCHES = frozenset({"main", "master", "HEAD", "develop", "trunk"})

# values a user message or the agent's text gives that are worth a row of their own
VALUE_KINDS = frozenset({"url", "email", "digest", "version", "identifier", "amount"})

# a value that names one thing: letters and digits together (ENT-194, v2.3.1, a digest), an
# address; not a word, a bare number or a range
NAMING_VALUE = re.compile(r"^(?=.*[A-Za-z])(?=.*\d)[\w.:/@#-]{5,}$|^https?://|@")

MAX_GIVEN = 5

# a message the user typed, not pasted (a pasted plan, log or table holds "should" and "never"
# that are no order of the user's)
TYPED_MESSAGE = 600

# a sentence that says how the work must go (inside a message that asks for something)
DIRECTIVE = re.compile(r"\b(?:should(?:n't| not)?|must(?:n't| not)?|needs? to|ha(?:s|ve) to|"
                       r"make sure|don't|do not|never|always|instead of|rather than)\b",
                       re.IGNORECASE)

# a part of a long message that forbids something
FORBIDS = re.compile(r"\b(?:don't|do not|never|must(?:n't| not)|should(?:n't| not)|avoid)\b",
                     re.IGNORECASE)

# `git add` and its arguments up to the next command; a named file has an extension
GIT_ADD = re.compile(r"\bgit\s+add\s+(?P<args>[^&|;\n]+)")
STAGED_FILE = re.compile(r"^[\w./-]*\w\.\w{1,8}$")

# a command that makes a repository of its own: its commits are a scratch test, not the work's
SCRATCH_REPO = re.compile(r"\bgit\s+init\b")

# a kind of check -> a command that runs it (a project's test, lint or build run)
CHECK_RUNS = {
    "tests": re.compile(r"\b(?:pytest|unittest|jest|vitest|mocha|rspec|phpunit|ctest|"
                        r"(?:go|cargo|npm|pnpm|yarn|bun|mix|dotnet|deno|swift|gradle|mvn) "
                        r"(?:run )?test|(?:make|mise run|just|task|tox|nox)\s+test[\w:-]*)"),
    "lint": re.compile(r"\b(?:golangci-lint|ruff|flake8|eslint|clippy|go vet|mypy|pyright|"
                       r"(?:make|mise run|just|task|npm run|pnpm|yarn)\s+lint[\w:-]*)"),
    "build": re.compile(r"\b(?:(?:go|cargo|npm run|pnpm|yarn|dotnet|swift|mvn|gradle) build|"
                        r"(?:make|mise run|just|task)\s+build[\w:-]*)"),
}

# the part of a long message whose words decide whether a summary keeps it
JUDGED_TERMS = 30

# the share of an item's words a summary must hold to keep it
KEPT_SHARE = 0.65

# the share of a key's (or one sentence's) words a summary must hold anywhere to keep it
KEY_SHARE = 0.8

MAX_TEXT = 400

MAX_EARLIER = 40_000                 # the characters of a previous summary read for its words

ERROR_HEAD = 1200                       # the head of a failed call's output kept beside its row



# --- The history a summary replaced --------------------------------------------------------------
def history_in_file(event: dict) -> tuple[bool, str | None]:
    """Whether the file holds the history a compaction replaced (the reader says where it does not:
    `replaces` None), and why not."""
    if event.get("replaces"):
        return True, None
    return False, event.get("why_not_in_file") or "the history it replaced is not in the file"


# --- The needed items ----------------------------------------------------------------------------
def needed_items(turns: list[dict], workspace: dict | None = None) -> list[dict]:
    """The needed items of a compaction's replaced turns (readers' record), in the order of
    CATEGORIES: {category, key, text, kind, turn, ...}; workspace: the branch and folder the log
    records at the boundary."""
    items = (user_items(turns) + file_items(turns) + task_items(turns) + plan_items(turns)
             + intent_items(turns) + error_items(turns)
             + value_items(turns, workspace or {}) + decision_items(turns))
    out, seen = [], set()
    for item in items:
        mark = (item["category"], item["key"].lower())
        if mark not in seen:
            seen.add(mark)
            item["text"] = mask_secrets(item["text"][:MAX_TEXT])
            item["key"] = mask_secrets(item["key"])
            out.append(item)
    return sorted(out, key=lambda i: CATEGORIES.index(i["category"]))


def call_of(turn: dict) -> dict:
    return turn.get("call") or {}


def arguments(call: dict) -> dict:
    value = call.get("input")
    return value if isinstance(value, dict) else {}


def user_words(turns: list[dict]) -> list[tuple[int, str, str]]:
    """(turn, how the user said it, the words) of every place the log keeps the user's words: a
    message, a queued message, a correction written into a tool rejection, an answer to a
    question."""
    out = []
    for t, turn in enumerate(turns):
        if turn["role"] == "user" and not turn.get("summary"):
            if not HARNESS_TEXT.match(turn["text"]):
                out.append((t, "queued message" if turn.get("queued") else "message",
                            turn["text"]))
        elif turn["role"] == "tool" and turn.get("marked") == "denied":
            said = REJECTION_WORDS.search(turn["text"])
            if said and not REJECTION_BOILERPLATE.match(said.group("words").strip()):
                out.append((t, "tool rejection", said.group("words").strip()))
    return out


# A short reply that agrees to what the agent proposed ("yes", "ok, do it", "go ahead"): the end of
# the agent's text before it, what was agreed to, counts as the user's words when an order the
# summary gives the user is checked (invented_orders, and the release gate's user_requests)
CONSENT = re.compile(r"^\W*(?:yes|yeah|yep|yup|ok(?:ay)?|sure|go ahead|do it|please do|"
                     r"sounds good|lgtm|approved?|proceed)\b", re.IGNORECASE)
CONSENT_WORDS = 8
PROPOSAL_CHARS = 2000


def agreed_words(turns: list[dict]) -> list[str]:
    """The user's words (user_words) and, after each short reply that agrees, the end of the
    agent's text before it."""
    out = []
    for t, how, text in user_words(turns):
        out.append(text)
        if how == "message" and CONSENT.match(text) and len(text.split()) <= CONSENT_WORDS:
            before = next((u["text"] for u in reversed(turns[:t])
                           if u["role"] == "assistant" and u.get("text")), "")
            out.append(before[-PROPOSAL_CHARS:])
    return out


def user_items(turns: list[dict]) -> list[dict]:
    """Requests and instructions: each place the user's words stand, typed instruction where a
    sentence is a standing instruction or the words correct a call (a tool rejection), else
    request; words a later message withdraws are dropped."""
    found: list[dict] = []
    for t, how, text in user_words(turns):
        if any(text in earlier["source"] for earlier in found if earlier["how"] == how):
            continue                     # a queued message typed again
        sentences = split_sentences(text)
        for sentence in sentences:
            for old in revoked_by(sentence, [i for i in found if i["category"] == "instruction"]):
                old["revoked_turn"] = t + 1
        standing = [s for s in sentences if is_standing_instruction(s) and not machine_text(s)]
        rest = " ".join(s for s in sentences if s not in standing)
        if how == "tool rejection":
            standing, rest = [text], ""
        for sentence in standing:
            found.append({"category": "instruction", "key": sentence[:80], "text": sentence,
                          "source": sentence, "how": how, "turn": t + 1, "kind": how,
                          "revoked_turn": None})
        if terms(rest):
            key = next((s for s in sentences if s not in standing and terms(s)), rest)
            found.append({"category": "request", "key": key[:80], "text": rest, "source": rest,
                          "how": how, "turn": t + 1, "kind": how, "revoked_turn": None})
            # a request's sentence that says how the work must go, judged on its own: a summary
            # can keep most of a message's words and drop the one constraint in it
            found += [{"category": "instruction", "key": s[:80], "text": s, "source": s,
                       "how": how, "turn": t + 1, "kind": "directive", "revoked_turn": None}
                      for s in directive_parts(text, sentences)
                      if s not in standing and s != rest and len(terms(s)) >= 3
                      and not machine_text(s)]
    return [i for i in found if not i.pop("revoked_turn")]




def directive_parts(text: str, sentences: list[str]) -> list[str]:
    """The parts of a user's message that say how the work must go: a sentence of a typed message,
    or a list item of a longer one (a plan or a specification handed over, outside code) that
    forbids something (its other items are the work itself, judged with the message)."""
    if len(text) <= TYPED_MESSAGE:
        # a question asks; it orders nothing
        return [s for s in sentences if s[:1].isalpha() and DIRECTIVE.search(s)
                and not s.rstrip().endswith("?")]
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        listed = LIST_ITEM.match(line.lstrip())
        part = line.lstrip()[listed.end():].replace("**", "").strip() if listed else ""
        if not fenced and part[:1].isalpha() and FORBIDS.search(part):
            out.append(part)
    return out


def edited_paths(call: dict) -> list[str]:
    """The files an edit or write call names (an editor tool's view command names none)."""
    args, name = arguments(call), call.get("name", "")
    if name == "apply_patch" or (name in ("shell", "exec_command") and "apply_patch" in str(args)):
        return PATCH_FILE.findall(str(args.get("input") or args.get("patch") or args))
    fields = EDIT_TOOLS.get(name) or EDIT_TOOLS.get(name.split("__")[-1])
    if not fields or str(args.get("command", "")).lower() in VIEW_COMMANDS:
        return []
    return [args[f] for f in fields if isinstance(args.get(f), str) and args[f].strip()][:1]


def staged_paths(command: str) -> list[str]:
    """The files a `git add` names one by one (not -A, not a folder): files the agent, or a
    subagent it sent, changed and meant to keep."""
    out = []
    for match in GIT_ADD.finditer(command):
        out += [w.strip("'\"") for w in match.group("args").split()
                if not w.startswith("-") and STAGED_FILE.search(w.strip("'\""))]
    return out


def file_items(turns: list[dict]) -> list[dict]:
    """Every file an edit or write call changed (its result not failed or denied), and every file
    a successful `git add` staged by name that no edit call named (a subagent's work)."""
    out, staged = [], []
    for t, turn in enumerate(turns):
        if turn["role"] != "tool" or turn_outcome(turn) != "ok":
            continue
        for path in edited_paths(call_of(turn)):
            out.append({"category": "file_changed", "key": path.strip(), "text": path.strip(),
                        "source": f"{turn['tool']} {path.strip()}", "kind": turn["tool"],
                        "turn": t + 1})
        command = call_command(arguments(call_of(turn)))
        if not SCRATCH_REPO.search(command):
            staged += [(t, p) for p in staged_paths(command)]
    for t, path in staged:
        tail = "/" + path.lstrip("./")
        if not any(("/" + i["key"]).endswith(tail) or ("/" + path).endswith("/" + i["key"])
                   for i in out):
            out.append({"category": "file_changed", "key": path, "text": path,
                        "source": f"git add {path}", "kind": "staged", "turn": t + 1})
    return out


def task_items(turns: list[dict]) -> list[dict]:
    """The tasks not completed in the last task list before the boundary (or the tasks created and
    not updated to completed, for agents that write tasks one call at a time)."""
    return [{"category": "open_task", "key": text[:80], "text": text, "source": text,
             "kind": status, "turn": t + 1} for text, status, t in last_tasks(turns)
            if status.lower() not in DONE_STATUSES]


def last_tasks(turns: list[dict]) -> list[tuple[str, str, int]]:
    """(text, status, turn index) of each task of the last task list before the boundary, and of
    each task created one call at a time, with its last status."""
    last, created, t_last = None, {}, 0
    for t, turn in enumerate(turns):
        if turn["role"] != "assistant":
            continue
        for call in turn["calls"]:
            name, args = call.get("name", ""), arguments(call)
            if name in TASK_LISTS and isinstance(args.get(TASK_LISTS[name][0]), list):
                last, t_last = (name, args[TASK_LISTS[name][0]]), t
            elif name == "TaskCreate" and isinstance(args.get("subject"), str):
                created[str(len(created) + 1)] = [args["subject"], "pending", t]
            elif name == "TaskUpdate" and str(args.get("taskId")) in created and \
                    isinstance(args.get("status"), str):
                created[str(args["taskId"])][1] = args["status"]
    tasks = []
    if last is not None:
        _, text_field, status_field = TASK_LISTS[last[0]]
        tasks = [(task.get(text_field), str(task.get(status_field, "")), t_last)
                 for task in last[1] if isinstance(task, dict)]
    tasks += [tuple(task) for task in created.values()]
    return [(text, status, t) for text, status, t in tasks if isinstance(text, str) and
            text.strip()]


def intent_items(turns: list[dict]) -> list[dict]:
    """What the agent said it was about to do in its last text before the boundary (INTENT: "Let
    me fix ...", "Next I need to ..."), where no later text of the span says more: work the
    compaction cut off, a plan stated and not finished (the amendment of 2026-12-06 (21)). A
    sentence that only looks (check, read, look, see, verify ...) is no task."""
    last = next((t for t in range(len(turns) - 1, -1, -1) if turns[t]["role"] == "assistant"
                 and (turns[t]["text"] or "").strip()), None)
    if last is None:
        return []
    return [{"category": "open_task", "key": sentence[:80], "text": sentence, "source": sentence,
             "kind": "intent", "turn": last + 1}
            for sentence in intents(split_sentences(turns[last]["text"]))]


def plan_items(turns: list[dict]) -> list[dict]:
    """The checks of the last plan before the boundary (its plan-mode text, or a user message that
    hands the agent a plan) that no later task list took up and no later call ran: the steps of a
    section headed as tests or verification, which agents turning a plan into tasks leave out."""
    plan, t_plan = None, 0
    for t, turn in enumerate(turns):
        if turn["role"] == "user" and PLAN_HANDED.match(turn["text"] or ""):
            plan, t_plan = turn["text"], t
        for call in turn.get("calls") or [] if turn["role"] == "assistant" else []:
            if call.get("name") in PLAN_TOOLS and isinstance(arguments(call).get("plan"), str):
                plan, t_plan = arguments(call)["plan"], t
    if plan is None:
        return []
    later = turns[t_plan + 1:]
    tasks = [terms(" ".join(str(v) for v in task.values() if isinstance(v, str)))
             for turn in later if turn["role"] == "assistant" for call in turn["calls"]
             for task in planned_tasks(call)]
    ran = " ".join(call_command(arguments(call_of(turn))) for turn in later
                   if turn["role"] == "tool" and turn_outcome(turn) == "ok")
    if not tasks:
        return []                  # the plan not yet taken up: its steps are all still ahead
    out = []
    for step in check_steps(plan):
        head = terms(re.split(r" [—-]+ ", step, maxsplit=1)[0])
        code = re.findall(r"`([^`]{3,})`", step)
        if not head or any(len(head & task) / len(head) > 0.5 for task in tasks) or \
                (code and all(c in ran for c in code)):
            continue
        out.append({"category": "open_task", "key": step[:80], "text": step, "source": step,
                    "kind": "plan step", "turn": t_plan + 1})
    return out


def planned_tasks(call: dict) -> list[dict]:
    """The tasks a call writes: a task list's entries, or the one task a create call makes."""
    name, args = call.get("name", ""), arguments(call)
    if name in TASK_LISTS and isinstance(args.get(TASK_LISTS[name][0]), list):
        return [task for task in args[TASK_LISTS[name][0]] if isinstance(task, dict)]
    return [args] if name == "TaskCreate" else []


def check_steps(plan: str) -> list[str]:
    """The top-level steps of a plan's sections headed as tests or verification: its list items,
    and its lines of prose headed as a check ("Manual test: run ..."); not code, not a heading
    of a list ("New files:"), not an expected outcome ("Expected: FAILS")."""
    out, inside, fenced = [], False, False
    for line in plan.splitlines():
        if PLAN_TRAILER.match(line):
            break
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced or not line.strip():
            continue
        elif line.startswith("#"):
            inside = bool(CHECK_HEADING.search(line))
        elif inside and not line[0].isspace() and not line.startswith("|"):
            listed = LIST_ITEM.match(line)
            step = line[listed.end():].replace("**", "").strip() if listed else \
                line.replace("**", "").strip()
            # an order holds words outside its code (a file listed alone is no step)
            if len(terms(step)) >= 3 and len(terms(re.sub(r"`[^`]*`", "", step))) >= 2 and \
                    not EXPECTED.match(step) and \
                    not DESCRIBES.match(step) and (CHECK_LABEL.match(step) or (
                        listed and not step.endswith(":"))):
                out.append(step)
    return out


def error_items(turns: list[dict], steps: list[dict] | None = None) -> list[dict]:
    """Each failed or denied call no later call resolved (failed_steps.session_steps, or the
    steps given: theirs), a rejection that carries the user's words aside (it is an
    instruction)."""
    out = []
    for step in session_steps(turns, []) if steps is None else steps:
        turn = turns[step["turn"] - 1]
        if step["status"] == "done" or REJECTION_WORDS.search(turn["text"]) or \
                turn["tool"] in TASK_LISTS or purpose_met_later(turns, step["turn"]):
            continue
        command = call_command(arguments(call_of(turn))) or step["match"][0]
        said = str(arguments(call_of(turn)).get("description") or "")
        if step["outcome"] == "denied" and REFUSED.match(turn["text"]):
            # the user stopped this call without a word: an order not to go on with it
            out.append({"category": "instruction", "key": (said or command)[:80],
                        "text": f"the user refused: {said or command}", "source": command,
                        "how": "refusal", "kind": "refusal", "turn": step["turn"]})
            continue
        failed = failure_lines(turn["text"])
        # (a shell call's key is the command it ran, not a word of it)
        shell = {"command", "cmd"} & set(arguments(call_of(turn)))
        run = run_of(command) if shell else ""
        out.append({"category": "unresolved_error", "key": (run or step["match"][0])[:80],
                    "text": f"{step['tool']} {step['outcome']}: "
                            + (" / ".join(failed) if failed else step["detail"]),
                    "source": "\n".join([command] + (failed or [step["detail"]])),
                    "kind": step["outcome"], "turn": step["turn"], "step": step, "run": run,
                    "checks": check_kinds(command),
                    "result": mask_secrets(turn["text"][:ERROR_HEAD])})
    return superseded_runs_dropped(out)








def purpose_met_later(turns: list[dict], number: int) -> bool:
    """Whether a failed call's purpose no longer stands: a later successful edit or write call
    changed the file it named (a file read before it existed, an edit retried), or a later run of
    the same kinds of check passed (the tests passing again: check_kinds)."""
    call = call_of(turns[number - 1])
    args = arguments(call)
    named = {str(args.get(k)).strip() for k in ("file_path", "path", "notebook_path")
             if isinstance(args.get(k), str) and args[k].strip()}
    kinds = check_kinds(call_command(args))
    for turn in turns[number:]:
        if turn["role"] != "tool" or not (named or kinds):
            continue
        later = call_of(turn)
        if named & {p.strip() for p in edited_paths(later)} or kinds and \
                kinds <= check_kinds(call_command(arguments(later))):
            if turn_outcome(turn) == "ok":
                return True
    return False


def check_kinds(command: str) -> set[str]:
    """The kinds of check a command runs (CHECK_RUNS: tests, lint, build); a test run builds the
    code it tests, so it is a build too."""
    kinds = {kind for kind, runs in CHECK_RUNS.items() if command and runs.search(command)}
    return kinds | {"build"} if "tests" in kinds else kinds


def value_items(turns: list[dict], workspace: dict) -> list[dict]:
    """Values the work turned on: the branch and the worktree the log records at the boundary, a
    commit or pull request the agent made, values the user gave, and values the agent wrote in its
    own words and passed on or stated last (agent_values.agent_value_items)."""
    out = []
    branch, folder = workspace.get("branch"), workspace.get("cwd")
    if branch and branch not in COMMON_BRANCHES:
        out.append(value_item(branch, "branch", "the branch the log records at the boundary", 0))
    if folder and "worktree" in folder.lower():
        out.append(value_item(folder, "folder", "the worktree the log records at the boundary", 0))
    out += made_items(turns)
    # (where the user's words stand: not the harness's notices in the user's role, the amendment
    # of 2026-12-06 (21))
    for t, _how, text in user_words(turns):
        given = [v for v in extract_values(text) if v.kind in VALUE_KINDS
                 and NAMING_VALUE.search(v.text)]
        if len(given) <= MAX_GIVEN:            # more: a pasted listing, not values given one by one
            out += [value_item(v.text, v.kind, text, t + 1) for v in given]
    return out + agent_value_items(turns)


def value_item(text: str, kind: str, source: str, turn: int, **more) -> dict:
    return {"category": "value", "key": text, "text": text, "source": source, "kind": kind,
            "turn": turn, **more}


def made_items(turns: list[dict]) -> list[dict]:
    """The commits the agent made (git's `[branch hash]` report), each with whether a later call
    pushed it, and the pull requests it opened (the address a create command printed)."""
    out: list[dict] = []
    pushes = [t for t, turn in enumerate(turns) if turn["role"] == "tool" and
              turn_outcome(turn) == "ok" and PUSH.search(call_command(arguments(call_of(turn))))]
    for t, turn in enumerate(turns):
        if turn["role"] != "tool" or turn_outcome(turn) != "ok":
            continue
        command = call_command(arguments(call_of(turn)))
        if "commit" in command and not SCRATCH_REPO.search(command):
            for match in COMMIT_REPORT.finditer(turn["text"]):
                # a pushed commit is work done; one not pushed is state the next agent needs
                if not any(p >= t for p in pushes):
                    # only the last one: the commit the branch stands at
                    out = [i for i in out if i["kind"] != "commit"]
                    out.append(value_item(match.group("hash"), "commit", turn["text"][:200],
                                          t + 1, pushed=False))
        if re.search(r"\bpr create\b|pull request create", command):
            out += [value_item(m.group("key"), "pull request", m.group(0), t + 1)
                    for m in PULL_REQUEST.finditer(turn["text"])]
    return out


def decision_items(turns: list[dict]) -> list[dict]:
    """The user's choice of an option the agent offered (an answered question), and the agent's
    sentences that state a finding or a choice ("the root cause is ...")."""
    out = []
    for t, turn in enumerate(turns):
        if turn["role"] == "tool" and turn.get("marked") is None:
            offered = options_of(call_of(turn))
            for match in ANSWERED.finditer(turn["text"]):
                answer = match.group("answer").strip()
                chosen = [o for o in offered if o.lower() == answer.lower()]
                out.append({"category": "decision" if chosen or not offered else "instruction",
                            "key": answer[:80], "text": f"{match.group('question')} {answer}",
                            "source": answer, "kind": "the user's choice", "turn": t + 1,
                            "others": [o for o in offered if o not in chosen]})
        elif turn["role"] == "assistant" and turn["text"]:
            for sentence in state_units(turn["text"]):
                found = FINDING.search(sentence)
                # a finding says what it found: a few words after "the issue is", not a state
                # of the search ("The fix is complete.", "The issue is becoming clearer."), no
                # question
                if found and len(terms(sentence[found.end():])) >= FINDING_TERMS and \
                        not sentence.rstrip().endswith("?"):
                    out.append({"category": "decision", "key": sentence[:80], "text": sentence,
                                "source": sentence, "kind": "the agent's finding",
                                "turn": t + 1, "others": []})
    return out


def options_of(call: dict) -> list[str]:
    """The options a question call offered (Claude Code's AskUserQuestion)."""
    out = []
    for question in arguments(call).get("questions") or []:
        for option in (question.get("options") or []) if isinstance(question, dict) else []:
            label = option.get("label") if isinstance(option, dict) else option
            if isinstance(label, str):
                out.append(label.strip())
    return out


# --- Judging each item against the summary -------------------------------------------------------
def judge_needed(items: list[dict], summary: str, agreed: list[str] = ()) -> list[dict]:
    """Each item kept, lost or wrong in the summary, with the summary's sentence that keeps or
    misstates it (None when lost); agreed: what the user agreed to (agreed_words), for the orders
    the summary gives the user."""
    units = state_units(summary)
    lower = summary.lower()
    spellings = summary_spellings(summary)
    out = []
    for item in items:
        judge = JUDGES.get(item["category"], judge_words)
        status, sentence = judge(item, summary, lower, units, spellings)
        out.append({**item, "status": status,
                    "summary_sentence": mask_secrets(sentence[:240]) if sentence else None})
    return out + invented_orders(items, units, agreed)


def invented_orders(items: list[dict], units: list[str], agreed: list[str] = ()) -> list[dict]:
    """The summary's sentences that give the user an order the user's words never gave (fewer than
    a quarter of its words in them, claims.invented_order): a wrong instruction row each."""
    said = set().union(*map(terms, agreed))
    for item in items:
        if item.get("how"):
            said |= terms(item["source"])
    out = []
    for unit in units:
        # (hyphens read as spaces: "asked to double-check" of "double check again?"; an order
        # about the summary is the compaction's own request: the amendment of 2026-12-06 (22))
        order = invented_order(unit.replace("-", " "), said)
        if order and not ABOUT_SUMMARY.search(order):
            out.append({"category": "instruction", "key": order[:80],
                        "text": mask_secrets(unit[:MAX_TEXT]), "source": "", "kind": "invented",
                        "turn": None, "status": "wrong",
                        "summary_sentence": mask_secrets(unit[:240])})
    return out


def earlier_summary(turns: list[dict]) -> str:
    """The previous compaction's summary the replaced history opens with, if any (its first
    MAX_EARLIER characters): a later summary recounts the orders it gives, so they are no
    invention."""
    return next((turn["text"][:MAX_EARLIER] for turn in turns if turn.get("summary")), "")


def summary_spellings(summary: str) -> set[str]:
    """The normal forms of the summary's values (spellings.normalize_value) and the numbers they
    stand for (2.5k and 2,500 alike)."""
    values = extract_values(summary)
    return {normalize_value(v.kind, v.text) for v in values} | \
        {numeric_key(v.kind, v.text) for v in values} - {None} | \
        {numeric_key("amount", v.text) for v in values if v.kind == "number"} - {None}


def unit_with(units: list[str], needle: str) -> str | None:
    needle = needle.lower()
    return next((u for u in units if needle in u.lower()), None)


def judge_file(item, summary, lower, units, spellings):
    """A path kept by itself or by a tail of it (its file name at least) that the summary gives."""
    parts = [p for p in re.split(r"[\\/]", item["key"].strip()) if p]
    for n in range(len(parts)):
        tail = "/".join(parts[n:])
        if re.search(r"(?<![\w.-])" + re.escape(tail.lower()) + r"(?![\w-])", lower):
            return "kept", unit_with(units, tail)
    return "lost", None


def judge_value(item, summary, lower, units, spellings):
    """A value kept in any spelling; a value of the agent's is wrong where the summary gives it
    with a small change (agent_values.changed_in), a commit no call pushed where a sentence that
    names it says it was pushed."""
    key = item["key"]
    if item["kind"] == "folder":
        tail = "/".join(key.rstrip("/").split("/")[-2:])
        status, sentence = ("kept", unit_with(units, tail)) if tail.lower() in lower else \
            ("lost", None)
    elif item["kind"] == "path" and "/" in key:
        status, sentence = judge_file(item, summary, lower, units, spellings)
    elif key.lower() in lower or normalize_value(item["kind"], key) in spellings or \
            numeric_key(item["kind"], key) in spellings - {None} or \
            re.fullmatch(r"#\d+", key) and number_kept(key, lower) or \
            item.get("how_found") and item["kind"] == "url" and address_kept(key, lower):
        status, sentence = "kept", unit_with(units, key) or ""
    else:
        status, sentence = "lost", None
        # a value of the agent's that the summary gives with a small change is misstated
        changed = changed_in(item, extract_values(summary)) if item.get("how_found") else None
        if changed:
            return "wrong", unit_with(units, changed.text) or changed.text
    if item["kind"] == "commit" and not item.get("pushed"):
        named = [u for u in units if key[:7].lower() in u.lower() or re.search(r"\bcommit", u,
                                                                                re.IGNORECASE)]
        told = next((u for u in named if PUSHED.search(u) and not says_not_done(u)
                     and not re.search(r"\b(?:not|un)[ -]?pushed\b|\bnot yet\b", u, re.I)), None)
        if told:
            return "wrong", told
    return status, sentence


def word_share(text: str, summary_terms: set) -> float:
    words = sorted(terms(text[:MAX_TEXT * 3]), key=text.lower().find)[:JUDGED_TERMS]
    return sum(w in summary_terms for w in words) / len(words) if words else 0.0


def judge_words(item, summary, lower, units, spellings):
    """Kept where the summary holds the item's key or most of its words (a paraphrase keeps the
    content words); the sentence that holds most of them is the evidence."""
    key = item["key"].lower()
    if len(key) >= 4 and key in lower:
        return "kept", unit_with(units, key)
    summary_terms = terms(summary)
    if word_share(item["source"], summary_terms) >= KEPT_SHARE or \
            word_share(item["key"], summary_terms) >= KEY_SHARE:
        best = max(units, key=lambda u: len(terms(u) & terms(item["source"])), default=None)
        return "kept", best
    return "lost", None


def judge_instruction(item, summary, lower, units, spellings):
    """An instruction the summary states the opposite of is wrong (claims.contradicts)."""
    if item["kind"] == "refusal":
        return judge_refusal(item, summary, lower, units, spellings)
    if item["key"].lower() in lower:
        return "kept", unit_with(units, item["key"])        # quoted as the user gave it
    against = next((u for u in units if contradicts(u, item["source"][:MAX_TEXT])), None)
    if against and item.get("how") != "tool rejection":
        return "wrong", against
    if item["kind"] == "directive":
        return judge_sentence(item, lower, units)
    return judge_words(item, summary, lower, units, spellings)


def judge_refusal(item, summary, lower, units, spellings):
    """A call the user stopped is kept by a sentence that says so and names what it did."""
    what = terms(item["key"]) | terms(item["source"][:200])
    said = next((u for u in units if STOPPED.search(u) and terms(u) & what), None)
    return ("kept", said) if said else ("lost", None)


def judge_task(item, summary, lower, units, spellings):
    """An open task the summary reports done (a sentence that names it claims it was done) is
    wrong."""
    if item["kind"] == "plan step":
        return judge_sentence(item, lower, units)
    if item["kind"] == "intent":
        # (work the compaction cut off, reported done: the summary's sentence claims the change)
        status, sentence = judge_sentence(item, lower, units)
        if status == "kept" and sentence and claims_done(sentence) and \
                not says_not_done(sentence):
            return "wrong", sentence
        return status, sentence
    status, sentence = judge_words(item, summary, lower, units, spellings)
    if sentence and claim(sentence) and not says_not_done(sentence) and \
            re.search(r"\b(?:completed|done|finished)\b", sentence, re.I) and \
            not re.search(r"\b(?:pending|todo|next|remaining|in progress)\b", sentence, re.I):
        return "wrong", sentence
    return status, sentence


def judge_sentence(item, lower, units):
    """A plan's step or a request's directive kept where one sentence of the summary holds most of
    its words (words spread over a long summary keep no single sentence)."""
    if item["key"].lower() in lower:
        return "kept", unit_with(units, item["key"])
    head = terms(re.split(r" [—-]+ ", item["source"], maxsplit=1)[0])
    best = max(units, key=lambda u: len(terms(u) & head), default=None)
    if best and head and len(terms(best) & head) / len(head) >= KEPT_SHARE:
        return "kept", best
    # a user's sentence may be paraphrased over several of the summary's; a plan's step of a few
    # words is in any long summary's vocabulary, so it is kept by one sentence only
    if item["kind"] == "directive" and word_share(item["source"], terms(lower)) >= KEY_SHARE:
        return "kept", best
    return "lost", None


def judge_error(item, summary, lower, units, spellings):
    """A failure reported (kept), claimed done (wrong) or absent (lost): truth.judge_steps."""
    judged = judge_steps([item["step"]], units)[0]
    if judged["status"] == "claimed done":
        return "wrong", judged["state_sentence"]
    if judged["status"] == "reported":
        return "kept", judged["state_sentence"]
    status, sentence = judge_words(item, summary, lower, units, spellings)
    if status == "kept" and sentence and not reports_failure(sentence):
        return status, sentence
    return status, sentence


def judge_decision(item, summary, lower, units, spellings):
    """A choice is wrong where the summary gives another offered option and not the one chosen."""
    status, sentence = judge_words(item, summary, lower, units, spellings)
    if status == "lost":
        other = next((u for o in item.get("others", []) for u in units
                      if len(o) >= 6 and o.lower() in u.lower()), None)
        if other:
            return "wrong", other
    return status, sentence


JUDGES = {"file_changed": judge_file, "value": judge_value, "instruction": judge_instruction,
          "open_task": judge_task, "unresolved_error": judge_error, "decision": judge_decision}
