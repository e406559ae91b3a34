"""XR-S1, the audit with a judge (issue 44; protocol/SESSIONS.md, the amendment of 2026-12-06 on the
judge): after the rules have scored every compaction, a model on the user's own server decides the
needed items of the judged categories (judge.JUDGED: requests, instructions, decisions, open
tasks) the rules found, one call per item; every other item, and the orders the rules find a
summary inventing (kind "invented": the rules' own finding, not an item the history held), keeps
the rules' status.

    judged_items(records) -> (record index, needed row) of every item the judge decides
    judge_records(records, summaries, judge, progress) -> each such row's status the judge's, with
        `rules_status` and `judged_by` on every needed row
    judge_analysis(records, settings) -> what the report says of the judge (its model, prompt,
        threshold, agreement, the rules' own counts beside the judge's, replies not read)
    with_judge(analysis, judged) -> the audit's analysis with the judge's part and a reason
    judge_lines(analysis) -> the sentences every page the judge touched carries

The summary is sent with its secrets masked, as every item already is. Nothing here reads a file
or opens a connection: the Judge (judge.py) holds the backend and the journal.
"""
from __future__ import annotations

from ...rules.values import mask_secrets, secret_pieces
from .judge import JUDGED
from .study_needed import BY_JUDGE, BY_RULES_TOO_LONG, BY_RULES_UNREADABLE

# a needed row the rules made from the summary itself (an order it invents): never judged
INVENTED = "invented"

STATUSES = ("kept", "lost", "wrong")

# judged_by where the rules' status stands because the judge is not asked (the study's words,
# study_needed.BY_*, where it is asked and gives none)
RULES_CATEGORY = "rules: a category the judge does not decide"
RULES_INVENTED = "rules: an order the summary invents"


def is_judged(row: dict) -> bool:
    return row["category"] in JUDGED and not str(row.get("kind") or "").startswith(INVENTED)


def judged_items(records: list[dict]) -> list[tuple[int, dict]]:
    """Every needed row the judge decides, with the index of its compaction's record."""
    return [(i, row) for i, record in enumerate(records) if record["scored"]
            for row in record.get("needed", []) if is_judged(row)]


def masked_summary(summary: str) -> str:
    return mask_secrets(summary, (), secret_pieces([summary])) if summary else summary


def judge_records(records: list[dict], summaries: list[str], judge, progress=None) -> None:
    """The judge's status on each judged row (the rules' where the judge's reply could not be read
    or the summary is too long for it), `rules_status` and `judged_by` on every needed row;
    summaries[i] is the summary records[i] scored. progress(done, total) after each item."""
    for record in records:
        for row in record.get("needed", []):
            row["rules_status"] = row["status"]
            row["judged_by"] = RULES_INVENTED if row["category"] in JUDGED else RULES_CATEGORY
    items = judged_items(records)
    if progress:
        progress(0, len(items))
    shown = {}
    for done, (i, row) in enumerate(items, 1):
        record = records[i]
        if i not in shown:
            shown[i] = masked_summary(summaries[i])
        item_id = f"{record['file']}#{record['n']}:{row['category']}:{row['key'][:80]}"
        decision = judge.decide(shown[i], row["category"], row["words"], item_id)
        row["judged_by"] = (BY_JUDGE if decision["status"] is not None else
                            BY_RULES_UNREADABLE if decision["reply"] is not None else
                            BY_RULES_TOO_LONG)
        row["p_kept"] = decision["p_kept"]
        if decision["status"] is not None:
            row["status"] = decision["status"]
        if progress:
            progress(done, len(items))


def judge_analysis(records: list[dict], settings: dict) -> dict:
    """What the report says of the judge: settings (model, prompt, prompt_sha256, threshold,
    agreement: its line, below: whether under the protocol's threshold or not measured) and the
    counts of what it decided, beside the rules' own counts over the same needed items."""
    rows = [row for r in records if r["scored"] for row in r.get("needed", [])]
    judged = [row for row in rows if is_judged(row)]
    return {**settings,
            "items": len(judged),
            "by_judge": sum(row["judged_by"] == BY_JUDGE for row in judged),
            "with_p": sum(row.get("p_kept") is not None for row in judged),
            "unreadable": sum(row["judged_by"] == BY_RULES_UNREADABLE for row in judged),
            "too_long": sum(row["judged_by"] == BY_RULES_TOO_LONG for row in judged),
            "changed": sum(row["status"] != row["rules_status"] for row in judged),
            "rules_alone": {s: sum(row["rules_status"] == s for row in rows) for s in STATUSES},
            "judge": {s: sum(row["status"] == s for row in rows) for s in STATUSES}}


def with_judge(analysis: dict, judged: dict) -> dict:
    """The audit's analysis (audit.analyze_audit of the judged records) with what the report says
    of the judge, and a reason beside the label saying who decided."""
    reason = (f"the requests, instructions, decisions and open tasks the rules found were decided "
              f"by the judge model {judged['model']}, not a person"
              + (" (below the protocol's agreement threshold: see its line under the answer)"
                 if judged["below"] else ""))
    return {**analysis, "judge": judged, "reasons": analysis["reasons"] + [reason]}


def judge_lines(j: dict) -> list[str]:
    """The sentences on every page the judge touched: who judged, with which prompt and threshold,
    its measured agreement (or that none was measured), the rules' own counts beside, and the
    items whose status stayed the rules'."""
    reading = (f"kept where P(KEPT) reached {j['threshold']:g}, the server giving probabilities "
               f"for {j['with_p']:,} of them" if j["with_p"] else
               "each reply's word, as the server gave no probabilities")
    lines = [f"Requests, instructions, decisions and open tasks were decided by the judge model "
             f"{j['model']} (prompt {j['prompt']}, sha256 {j['prompt_sha256'][:12]}; {reading}). "
             f"{j['agreement']}",
             f"The judge decided {j['by_judge']:,} of {j['items']:,} items and changed "
             f"{j['changed']:,} of the rules' statuses; with the judge: {j['judge']['kept']:,} "
             f"kept, {j['judge']['lost']:,} lost, {j['judge']['wrong']:,} wrong; the rules alone: "
             f"{j['rules_alone']['kept']:,} kept, {j['rules_alone']['lost']:,} lost, "
             f"{j['rules_alone']['wrong']:,} wrong."]
    kept_rules = []
    if j["unreadable"]:
        kept_rules.append(f"{j['unreadable']:,} whose reply the judge gave could not be read")
    if j["too_long"]:
        kept_rules.append(f"{j['too_long']:,} whose summary is too long for the judge")
    if kept_rules:
        lines.append("The rules' status stands for " + " and ".join(kept_rules)
                     + " (audit.csv, column judged_by).")
    return lines
