"""XR-S1, what the next agent needed, in the study (protocol/SESSIONS.md, the amendment of
2026-12-06 (7), issue 40 point 7): a session whose log has the structure the audit reads (a tool
call or a task list) is also scored by the needed items the audit scores (needed.py: requests and
instructions, files changed, open tasks, unresolved failures, values, decisions), beside its values,
instructions and steps; a plain transcript (no tool call) gets none, and its outputs are what they
were.

    session_needed(turns, segment_of) -> the episode's `needed` field: needed.needed_items of the
        whole session (the study judges the state left after the last segment), each with an id
        and its segment; {} for a plain transcript.
    scored_record(episodes) -> what the task set (and so the manifest, before any call) records as
        scored by needed items: the sessions and their count of items; {} when none.
    needed_sessions(manifest) -> the sessions a run folder's manifest recorded so: only they are
        scored by needed items (a folder made before, such as the worked example, is scored as
        it was).
    judge_needed_state(items, state, compacted, mask) -> one status per item (needed.judge_needed:
        kept, lost or wrong) and the orders a written state gives the user that the user's words
        never held.
    needed_counts(results, regimes) -> the analysis's counts per regime and category, the invented
        orders and the items lost or misstated (analysis.py adds the rates and the paired tests).
    needed_blocks(a, fmt_interval, none) -> the report's section, from the analysis's needed_*
        fields.

Pure functions: no file, no clock, no model. needed.py's rules are called, never copied.
"""
from __future__ import annotations

from ...rules.states import state_units
from .needed import (CATEGORIES, STATUSES, judge_needed, judge_words, needed_items,
                     summary_spellings)

# the task set's (and the manifest's task_set's) record of what is scored beyond section 5
SCORED_KEY = "needed_items"

# lost and misstated items listed per regime in analysis.md and report.html
LISTED = 12

SHOWN_STATUS = {"kept": "kept", "lost": "lost", "wrong": "misstated"}

# who decided a judged row (study_judge.py, its `judged_by`): the judge, or the rules where it gave
# no status
BY_JUDGE = "judge"
BY_RULES_UNREADABLE = "rules: reply unreadable"
BY_RULES_TOO_LONG = "rules: summary too long"
JUDGED_BY = (BY_JUDGE, BY_RULES_UNREADABLE, BY_RULES_TOO_LONG)


# --- The ground truth -----------------------------------------------------------------------------
def has_structure(turns: list[dict]) -> bool:
    """Whether a session's log records the structure the needed items are read from: a tool call
    (its result, or a task list, is one)."""
    return any(t["role"] == "tool" or t.get("calls") for t in turns)


def session_needed(turns: list[dict], segment_of: list[int]) -> dict:
    """{"needed": items} for a session with tool calls or task lists, each item needed.py's with
    an `id` and the `segment` of its turn (0: none); {} for a plain transcript."""
    if not has_structure(turns):
        return {}
    items = needed_items(turns, None)
    for n, item in enumerate(items, 1):
        turn = item.get("turn") or 0
        item["id"] = n
        item["segment"] = segment_of[turn - 1] if 0 < turn <= len(segment_of) else 0
    return {"needed": items}


def scored_record(episodes: list[dict]) -> dict:
    """What the task set records as scored beyond section 5: {"scored": {SCORED_KEY: {sessions,
    items, rules}}}, or {} when no session has needed items (a set of plain transcripts records
    what it always did)."""
    with_items = [e for e in episodes if e.get("needed")]
    if not with_items:
        return {}
    return {"scored": {SCORED_KEY: {"sessions": [e["file"] for e in with_items],
                                    "items": sum(len(e["needed"]) for e in with_items),
                                    "rules": "scripts/pilot/studies/sessions/needed.py, judged by "
                                             "its judge_needed (protocol/SESSIONS.md, the "
                                             "amendment of 2026-12-06 (7))"}}}


def needed_sessions(manifest: dict) -> set[str]:
    """The sessions whose needed items the manifest recorded, before any call, as scored."""
    task_set = manifest.get("task_set") if isinstance(manifest.get("task_set"), dict) else {}
    record = (task_set.get("scored") or {}).get(SCORED_KEY) or {}
    return {name for name in record.get("sessions") or [] if isinstance(name, str)}


# --- Judging a final state ------------------------------------------------------------------------
def judge_needed_state(items: list[dict], state: str, compacted: bool,
                       mask) -> tuple[list[dict], list[str]]:
    """Each item kept, lost or wrong in the state ({id, status, state_sentence}), and the state's
    sentences that give the user an order the user never gave (none for a Recent-k regime's
    verbatim segments, which are no written state)."""
    judged = judge_needed(items, state)
    if not compacted:
        judged = [verbatim(item, j, state) for item, j in zip(items, judged)]
    rows = [{"id": item["id"], "status": j["status"],
             "state_sentence": mask(j["summary_sentence"]) if j["summary_sentence"] else None}
            for item, j in zip(items, judged)]
    invented = [mask(j["summary_sentence"] or j["text"]) for j in judged[len(items):]]
    return rows, invented if compacted else []


def verbatim(item: dict, judged: dict, text: str) -> dict:
    """An item judged against a session's last segments kept verbatim, which claim nothing (as
    truth.judge_state's written=False): never misstated, kept where its words are there
    (needed.judge_words), else lost."""
    if judged["status"] != "wrong":
        return judged
    status, sentence = judge_words(item, text, text.lower(), state_units(text),
                                   summary_spellings(text))
    return {**judged, "status": status, "summary_sentence": sentence}


def session_items(episode: dict, mask) -> list[dict]:
    """What results.json keeps of a session's needed items: no tool output, every text masked."""
    return [{"id": i["id"], "category": i["category"], "kind": str(i.get("kind") or ""),
             "key": mask(i["key"]), "text": mask(i["text"]), "segment": i["segment"]}
            for i in episode.get("needed") or []]


# --- The analysis's counts ------------------------------------------------------------------------
def needed_counts(results: dict, regimes: list[str]) -> dict:
    """Per regime: the items in each status per category, the written states that invent an order
    for the user, and every item lost or misstated (misstated first)."""
    item_of = {(s["episode"], i["id"]): (s["file"], i) for s in results["sessions"]
               for i in s.get("needed") or []}
    rows = results["needed"]
    by_category = {r: {c: {s: 0 for s in STATUSES} for c in CATEGORIES} for r in regimes}
    listing: dict = {r: [] for r in regimes}
    for row in rows:
        file, item = item_of[(row["episode"], row["needed"])]
        by_category[row["regime"]][item["category"]][row["status"]] += 1
        if row["status"] != "kept":
            listing[row["regime"]].append({"session": file, "category": item["category"],
                                           "key": item["key"], "status": row["status"],
                                           "state": row.get("state_sentence") or ""})
    for entries in listing.values():
        entries.sort(key=lambda x: x["status"] != "wrong")
    states = {r: [s for s in results["states"] if s["regime"] == r and "invented_orders" in s]
              for r in regimes}
    return {"needed_sessions": sum(bool(s.get("needed")) for s in results["sessions"]),
            "needed_items": len(item_of), "needed_classes": by_category,
            "needed_listing": listing,
            "needed_invented": {r: {"states": len(s), "with": sum(bool(x["invented_orders"])
                                                                  for x in s),
                                    "examples": [o for x in s for o in x["invented_orders"]][:3]}
                                for r, s in states.items()},
            **(judged_counts(results, regimes) if "judge" in results else {})}


def judged_counts(results: dict, regimes: list[str]) -> dict:
    """Where a judge decided (`score --judge`): its record, who decided each judged row, and per
    regime and category the rules' own statuses, to print beside the judge's."""
    category_of = {(s["episode"], i["id"]): i["category"] for s in results["sessions"]
                   for i in s.get("needed") or []}
    rules = {r: {c: {s: 0 for s in STATUSES} for c in CATEGORIES} for r in regimes}
    decided = {by: 0 for by in JUDGED_BY}
    for row in results["needed"]:
        category = category_of[(row["episode"], row["needed"])]
        rules[row["regime"]][category][row.get("rules_status", row["status"])] += 1
        if row.get("judged_by") in decided:
            decided[row["judged_by"]] += 1
    return {"judge": results["judge"], "needed_decided": decided, "needed_rules_classes": rules}


# --- The report's section -------------------------------------------------------------------------
def needed_blocks(a: dict, fmt_interval, none: dict) -> list[tuple]:
    """The section on what the next agent needed: kept, lost and misstated per regime (with the
    session-clustered intervals of section 6), per category, the invented orders, and the items
    lost or misstated."""
    regimes = a["regimes"]
    blocks: list[tuple] = [("h2", "What the next agent needed")]
    blocks.append(("p", "For each session whose log records tool calls or task lists, the needed "
                        "items `audit` scores (scripts/pilot/studies/sessions/needed.py): the "
                        "user's requests and standing instructions, files changed, open tasks of "
                        "the last task list, failed or denied calls no later call resolved, values "
                        "the work turned on (never one only a tool printed) and decisions, taken "
                        "from the whole session, judged against the final state by needed.py's "
                        "judge: kept (in any spelling: a path by its tail, a number reformatted), "
                        "lost, or misstated (the opposite instruction, an open task or a failure "
                        "reported done, an unpushed commit reported pushed, another option than "
                        "the one chosen). A plain transcript has none; the sections above score "
                        "every session as before. Measured precision and recall of these rules on "
                        "real compactions: protocol/SESSIONS.md, the amendment of 2026-12-06 "
                        "(issue 40)."))
    judged = "judge" in a
    if judged:
        blocks += judge_blocks(a)
    blocks.append(("table", ["regime", "kept", "lost", "misstated",
                             "states giving the user an order never given",
                             *(["the rules alone: kept / lost / misstated"] if judged else [])],
                   [[r, fmt_interval(a["needed_kept"].get(r, none)),
                     fmt_interval(a["needed_lost"].get(r, none)),
                     fmt_interval(a["needed_wrong"].get(r, none)),
                     invented_cell(a["needed_invented"][r]),
                     *([rules_cell(a["needed_rules_classes"][r].values())] if judged else [])]
                    for r in regimes]))
    categories = [c for c in CATEGORIES
                  if any(sum(a["needed_classes"][r][c].values()) for r in regimes)]
    blocks.append(("p", "Per category, kept / lost / misstated" +
                   (" (the rules alone in brackets where the judge decides):" if judged else ":")))
    blocks.append(("table", ["what the next agent needed", *regimes],
                   [[c] + [" / ".join(str(a["needed_classes"][r][c][s]) for s in STATUSES) +
                           (f" ({rules_cell([a['needed_rules_classes'][r][c]])})"
                            if judged and c in a["judge"]["categories"]
                            and r in a["compacting"] else "")
                           for r in regimes] for c in categories]))
    examples = [f"{r}: \"{x}\"" for r in regimes for x in a["needed_invented"][r]["examples"][:2]]
    if examples:
        blocks.append(("p", "Orders a final state gives the user that the user's words never held "
                            "(needed.py's rule: under a quarter of its words are the user's):"))
        blocks.append(("list", examples))
    for r in regimes:
        listed = a["needed_listing"][r]
        if listed:
            blocks.append(("p", f"{r}: {len(listed)} lost or misstated" +
                           (f" ({LISTED} shown)" if len(listed) > LISTED else "") + ":"))
            blocks.append(("list", [item_line(x) for x in listed[:LISTED]]))
    return blocks


def judge_line(block: dict) -> str:
    """The sentence every page the judge touched prints: the model, its question and threshold, and
    its measured agreement with the hand labels (or that none was measured)."""
    return (f"**Judged by a model.** Whether each request, standing instruction, decision and open "
            f"task is kept, lost or misstated in a written state was decided by {block['model']} "
            f"({block['backend']}; question {block['prompt']}, sha256 "
            f"{block['prompt_sha256'][:12]}; P(KEPT) threshold {block['threshold']:g}), the "
            f"rules' figures beside its; {block['agreement']}.")


def judge_blocks(a: dict) -> list[tuple]:
    """The judge's line and what it decided: where it gave no status, the rules' stands."""
    decided = a["needed_decided"]
    stood = decided[BY_RULES_UNREADABLE] + decided[BY_RULES_TOO_LONG]
    return [("p", judge_line(a["judge"])),
            ("p", f"The judge decided {decided[BY_JUDGE]} of {decided[BY_JUDGE] + stood} items "
                  "of its categories in written states" +
                  (f"; the rules' status stands for {stood} (a reply that gave no verdict: "
                   f"{decided[BY_RULES_UNREADABLE]}; a summary too long for the judge: "
                   f"{decided[BY_RULES_TOO_LONG]})" if stood else "") +
                  ". Files changed, unresolved failures and values, and the last segments a "
                  "Recent-k regime keeps verbatim, stay the rules'.")]


def rules_cell(classes) -> str:
    """kept / lost / misstated summed over the given {status: n} counts."""
    return " / ".join(str(sum(c[s] for c in classes)) for s in STATUSES)


def invented_cell(invented: dict) -> str:
    return f"{invented['with']} of {invented['states']}" if invented["states"] else "-"


def item_line(x: dict) -> str:
    line = f"**{SHOWN_STATUS[x['status']]}** {x['category']} `{x['key']}` ({x['session']})"
    return line + (f": the state says \"{x['state']}\"" if x["status"] == "wrong" and x["state"]
                   else "")
