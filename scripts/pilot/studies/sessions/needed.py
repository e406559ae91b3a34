"""XR-S1, the audit's question per recorded compaction (protocol/SESSIONS.md, the amendment of
2026-12-06, issue 40): what did the agent that continued need, and did the summary keep it? Built
from the structure the agent's log records, not from every word of the history:

    needed_items(turns, workspace) -> the work state at the compaction, from the replaced history:
        request and instruction (every user message, a queued message, a correction written into a
        tool-rejection message, an answer to the agent's question; standing instructions told apart
        by truth.is_standing_instruction; withdrawn ones dropped), file_changed (the agent's edit
        and write tools, of every agent the readers know), open_task (the last task list before the
        boundary, tasks not completed), unresolved_error (a failed or denied call no later call
        resolved: failed_steps.session_steps), value (given by the user, written by the agent and
        passed to a later tool call, the branch and worktree the log records, a commit or pull
        request the agent made; never a value seen only in a tool's output, so never a line-number
        prefix) and decision (the agent's "the root cause is ...", the user's choice of an offered
        option), each with its key (a short literal string of the history) and its sentence.
    judge_needed(items, summary, agreed) -> each item kept (in any spelling: a path by its tail,
        a number reformatted, another case), lost, or wrong (another option than the one chosen,
        the opposite instruction, a failure reported fixed, an unpushed commit reported pushed),
        with the summary's sentence that keeps or misstates it; and, wrong, an order the summary
        gives the user that neither the user's words nor what a short "yes" agreed to hold
        (agreed_words).
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

DONE_STATUSES = frozenset({"completed", "complete", "done", "cancelled", "canceled"})

# Claude Code's rejection text: what the user wrote follows its fixed preamble
REJECTION_WORDS = re.compile(r"the user said:\s*\n(?P<words>.+)", re.DOTALL)

# a rejection that carries no words of the user's (Claude Code's own text for a dismissed question)
REJECTION_BOILERPLATE = re.compile(r"^The user wants to clarify these questions", re.IGNORECASE)

# Claude Code's AskUserQuestion result: "question"="answer" pairs
ANSWERED = re.compile(r'"(?P<question>[^"\n]{3,400})"="(?P<answer>[^"]{1,600})"')

# the agent's sentence stating a finding or a choice
FINDING = re.compile(r"\b(?:the (?:root cause|real (?:issue|problem|cause)|cause|bug|culprit|"
                     r"fix|problem|issue) (?:is|was)|(?:i'll|i will|let's|we'll) go with|"
                     r"(?:i|we)(?:'ve| have)? decided|decision:)", re.IGNORECASE)

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

# the part of a long message whose words decide whether a summary keeps it
JUDGED_TERMS = 30

# the share of an item's words a summary must hold to keep it
KEPT_SHARE = 0.65

MAX_TEXT = 400

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
    items = (user_items(turns) + file_items(turns) + task_items(turns) + error_items(turns)
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
            out.append((t, "queued message" if turn.get("queued") else "message", turn["text"]))
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
        standing = [s for s in sentences if is_standing_instruction(s)]
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
    return [i for i in found if not i.pop("revoked_turn")]


def edited_paths(call: dict) -> list[str]:
    """The files an edit or write call names (an editor tool's view command names none)."""
    args, name = arguments(call), call.get("name", "")
    if name == "apply_patch" or (name in ("shell", "exec_command") and "apply_patch" in str(args)):
        return PATCH_FILE.findall(str(args.get("input") or args.get("patch") or args))
    fields = EDIT_TOOLS.get(name) or EDIT_TOOLS.get(name.split("__")[-1])
    if not fields or str(args.get("command", "")).lower() in VIEW_COMMANDS:
        return []
    return [args[f] for f in fields if isinstance(args.get(f), str) and args[f].strip()][:1]


def file_items(turns: list[dict]) -> list[dict]:
    """Every file an edit or write call changed (its result not failed or denied)."""
    out = []
    for t, turn in enumerate(turns):
        if turn["role"] != "tool" or turn_outcome(turn) != "ok":
            continue
        for path in edited_paths(call_of(turn)):
            out.append({"category": "file_changed", "key": path.strip(), "text": path.strip(),
                        "source": f"{turn['tool']} {path.strip()}", "kind": turn["tool"],
                        "turn": t + 1})
    return out


def task_items(turns: list[dict]) -> list[dict]:
    """The tasks not completed in the last task list before the boundary (or the tasks created and
    not updated to completed, for agents that write tasks one call at a time)."""
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
    return [{"category": "open_task", "key": text[:80], "text": text, "source": text,
             "kind": status, "turn": t + 1} for text, status, t in tasks
            if isinstance(text, str) and text.strip() and status.lower() not in DONE_STATUSES]


def error_items(turns: list[dict]) -> list[dict]:
    """Each failed or denied call no later call resolved (failed_steps.session_steps), a rejection
    that carries the user's words aside (it is an instruction)."""
    out = []
    for step in session_steps(turns, []):
        turn = turns[step["turn"] - 1]
        if step["status"] == "done" or REJECTION_WORDS.search(turn["text"]) or \
                turn["tool"] in TASK_LISTS:
            continue
        command = call_command(arguments(call_of(turn))) or step["match"][0]
        out.append({"category": "unresolved_error", "key": step["match"][0][:80],
                    "text": f"{step['tool']} {step['outcome']}: {step['detail']}",
                    "source": f"{command}\n{step['detail']}", "kind": step["outcome"],
                    "turn": step["turn"], "step": step,
                    "result": mask_secrets(turn["text"][:ERROR_HEAD])})
    return out


def value_items(turns: list[dict], workspace: dict) -> list[dict]:
    """Values the work turned on: the branch and the worktree the log records at the boundary, a
    commit or pull request the agent made, values the user gave, and values the agent wrote in its
    own text and passed to a later tool call."""
    out = []
    branch, folder = workspace.get("branch"), workspace.get("cwd")
    if branch and branch not in COMMON_BRANCHES:
        out.append(value_item(branch, "branch", "the branch the log records at the boundary", 0))
    if folder and "worktree" in folder.lower():
        out.append(value_item(folder, "folder", "the worktree the log records at the boundary", 0))
    out += made_items(turns)
    for t, turn in enumerate(turns):
        if turn["role"] == "user" and not turn.get("summary"):
            given = [v for v in extract_values(turn["text"]) if v.kind in VALUE_KINDS
                     and NAMING_VALUE.search(v.text)]
            if len(given) <= MAX_GIVEN:        # more: a pasted listing, not values given one by one
                out += [value_item(v.text, v.kind, turn["text"], t + 1) for v in given]
    return out


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
        if "commit" in command:
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
                if FINDING.search(sentence) and terms(sentence):
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
        order = invented_order(unit, said)
        if order:
            out.append({"category": "instruction", "key": order[:80],
                        "text": mask_secrets(unit[:MAX_TEXT]), "source": "", "kind": "invented",
                        "turn": None, "status": "wrong",
                        "summary_sentence": mask_secrets(unit[:240])})
    return out


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
    """A value kept in any spelling; a commit no call pushed is wrong where a sentence that names
    it says it was pushed."""
    key = item["key"]
    if item["kind"] == "folder":
        tail = "/".join(key.rstrip("/").split("/")[-2:])
        status, sentence = ("kept", unit_with(units, tail)) if tail.lower() in lower else \
            ("lost", None)
    elif item["kind"] == "path" and "/" in key:
        status, sentence = judge_file(item, summary, lower, units, spellings)
    elif key.lower() in lower or normalize_value(item["kind"], key) in spellings or \
            numeric_key(item["kind"], key) in spellings - {None}:
        status, sentence = "kept", unit_with(units, key) or ""
    else:
        status, sentence = "lost", None
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
            word_share(item["key"], summary_terms) >= 0.8:
        best = max(units, key=lambda u: len(terms(u) & terms(item["source"])), default=None)
        return "kept", best
    return "lost", None


def judge_instruction(item, summary, lower, units, spellings):
    """An instruction the summary states the opposite of is wrong (claims.contradicts)."""
    if item["key"].lower() in lower:
        return "kept", unit_with(units, item["key"])        # quoted as the user gave it
    against = next((u for u in units if contradicts(u, item["source"][:MAX_TEXT])), None)
    if against and item.get("how") != "tool rejection":
        return "wrong", against
    return judge_words(item, summary, lower, units, spellings)


def judge_task(item, summary, lower, units, spellings):
    """An open task the summary reports done (a sentence that names it claims it was done) is
    wrong."""
    status, sentence = judge_words(item, summary, lower, units, spellings)
    if sentence and claim(sentence) and not says_not_done(sentence) and \
            re.search(r"\b(?:completed|done|finished)\b", sentence, re.I) and \
            not re.search(r"\b(?:pending|todo|next|remaining|in progress)\b", sentence, re.I):
        return "wrong", sentence
    return status, sentence


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
