"""XR-S1, analysis (protocol/SESSIONS.md sections 4 to 6): each final state judged against its
transcript (sessions_truth.judge_state: every exact value kept, reformatted, changed, dropped or
former, and whether it stands beside its referent; each standing instruction present,
contradicted or absent; each failed or denied step reported with its outcome, claimed done or
absent; the release gate's
findings), the user's probes, the tables per kind, regime and session, with intervals and tests only
where the number of sessions can support them (section 6), and the listing of what was lost;
report.py renders them as analysis.md, report.html and lost.csv, and write_outputs writes the last
two when the bank is scored. Every secret-looking value is masked in all of them. EXPLORATORY
throughout. """
from __future__ import annotations

import collections
from pathlib import Path

from ...bank import ScoredRun, cell_final_state
from ...rules.gate import GATE_CATEGORIES, check_state, gate_verdict
from ...rules.ledger import normalize_ledger
from ...inputs import budget_words
from ...probes import score_probe
from ...records import Cell, DEFAULT_BUDGET, Regime, known_count
from ...runfolder import write_atomic
from ...stats import clustered_bootstraps, holm_adjust, mcnemar_counts, rate_summary
from .design import PROTOCOL_ID, STUDY_KEY, recent_context
from .figures import figures
# fmt_interval, render_md, report_blocks and the block renderers: re-exported for the tests that
# read the analysis and its rendering as one module
from .report import (fmt_interval, render_blocks_html, render_blocks_md, render_lost_csv,
                     render_md, report_blocks, report_html)
from .study_needed import (CATEGORIES as NEEDED_CATEGORIES, STATUSES as NEEDED_STATUSES,
                           judge_needed_state, needed_counts, needed_sessions, session_items)
from .truth import (INSTRUCTION_CLASSES, MASK, STEP_CLASSES, VALUE_CLASSES, judge_state,
                    mask_secrets)


# the gate's name pattern here: it matches no word (see session_ledger)
NO_NAMES = r"(?!)"

MAX_FINDINGS_KEPT = 12                  # findings kept per state in results.json

MAX_STATE_KEPT = 4000                   # characters of each final state kept in results.json

GATE_SHOWN = ("obligation", "status", "schema")   # what the gate can find against a transcript here


# --- Scoring one final state ----------------------------------------------------------------------
def session_ledger(episode: dict, items: list[dict] | None = None) -> dict:
    """The gate's ledger of a session: no named entities (a name pattern that matches no word keeps
    `name = value` lines from being read as invented entities; the gate then checks the state's
    values against the transcript), one item per failed or denied step with its status (done, with
    the turn as receipt, when a later call resolved it), and the user's standing instructions still
    in force as accepted ones (a withdrawn one is not), and what the user asked where the episode
    lists it (`user_requests`: the audit's spans); items given replace the steps' (the audit's:
    gate_support.gate_items)."""
    if items is None:
        items = [{"name": f"{s['tool']}: {s['match'][0]}"[:80], "match": s["match"],
                  "status": s["status"],
                  "receipt": f"turn {s['resolved_turn']}" if s["status"]
                  == "done" else None} for s in episode["steps"]]
    return normalize_ledger({"entities": {}, "items": items, "allowed_sections": None,
                             "name_pattern": NO_NAMES,
                             "accepted_instructions": [i["text"] for i in episode["instructions"]
                                                       if not i.get("revoked_turn")],
                             "user_requests": episode.get("user_requests", []),
                             "max_omissions": 0})


def session_source(episode: dict, prompt: str = "") -> str:
    """The transcript as the compactor saw it (and the regime's own prompt, whose values are no
    change of it)."""
    return "\n\n".join([seg["text"] for seg in episode["segments"]] + ([prompt] if prompt else []))


def prompt_text(regime: Regime, budget: int) -> str:
    """A compacting regime's prompt with its word limit and no state or segment: the values it gives
    itself."""
    if not regime.compacts:
        return ""
    return regime.compaction_template.format(max_words=budget_words(budget), previous_state="",
                                             segment="")


def score_state(episode: dict, state: str, compacted: bool, mask, prompt: str = "",
                needed: bool = False) -> dict:
    """One final state against its session (sessions_truth.judge_state), its needed items where
    they are scored (study_needed) and, for a compacted state, the gate's findings (a Recent-k
    regime's verbatim segments are not a written state, so they are not gated)."""
    judged = judge_state(episode, state, prompt, written=compacted)
    secret = {v["id"] for v in episode["values"] if v["secret"]}
    scored = {"values": [{**j, "instead": None if j["instead"] is None else MASK
                          if j["id"] in secret else
                          mask(j["instead"])} for j in judged["values"]],
              "instructions": judged["instructions"], "steps": judged["steps"]}
    if needed:
        scored["needed"], scored["invented"] = judge_needed_state(episode["needed"], state,
                                                                  compacted, mask)
    if compacted:
        findings = check_state(state, session_ledger(episode), session_source(episode, prompt))
        blocking = [f for f in findings if f["blocking"]]
        scored["gate"] = {"verdict": gate_verdict(findings),
                          "counts": {c: sum(1 for f in blocking if f["category"] == c) for c in
                                     dict.fromkeys([*GATE_CATEGORIES,
                                                    *(f["category"] for f in blocking)])},
                          "findings": [{"category": f["category"], "detail": mask(f["detail"]),
                                        "text": mask(f["text"])}
                                       for f in blocking[:MAX_FINDINGS_KEPT]]}
    return scored


def mask_value(value: dict) -> str:
    """A value as the reports show it: a secret is masked whole (its kind's public prefix kept)."""
    if not value["secret"]:
        return value["text"]
    masked = mask_secrets(value["text"])
    return masked if masked != value["text"] else "[masked]"


def session_summary(episode: dict, mask) -> dict:
    """What results.json keeps of a session: how it was read, and its ground truth, masked."""
    return {"episode": episode["episode"], "file": episode["file"], "format": episode["format"],
            "read": episode["read"], "segments": len(episode["segments"]),
            "values": [{"id": v["id"], "kind": v["kind"], "text": mask_value(v),
                        "source": v["source"],
                        "sentence": mask(v["sentence"]), "segment": v["segment"],
                        "secret": v["secret"],
                        "referent": v["referent"], "current": v["current"],
                        "forms": [MASK if v["secret"]
                                  else mask(f) for f in v["forms"]]} for v in episode["values"]],
            "instructions": [{"id": i["id"], "text": mask(i["text"]),
                              "key_terms": [mask(t) for t in i["key_terms"]],
                              "segment": i["segment"], "revoked_by": mask(i["revoked_by"] or "")
                              or None}
                             for i in episode["instructions"]],
            "steps": [{"id": s["id"], "tool": s["tool"], "outcome": s["outcome"],
                       "status": s["status"],
                       "detail": mask(s["detail"]), "match": [mask(m) for m in s["match"]],
                       "segment": s["segment"]}
                      for s in episode["steps"]],
            "probes": [{"id": q["id"], "type": q["type"], "prompt": mask(q["prompt"]),
                        "truth": mask(q["truth"])}
                       for q in episode["questions"]]}


ROWS = ("values", "instructions", "steps", "states", "probes")


def score_cell(run: ScoredRun, cell: Cell, records: dict, base: dict, plan: list) -> dict[str,
    list]:
    """One complete cell: its final state scored against its session (each value, instruction and
    failed step, and the gate's findings), its probes, and each call's token counts; every secret of
    the session masked."""
    regime, episode = run.regimes[cell.regime], run.tasks["episodes"][cell.episode]
    secrets = [v["text"] for v in episode["values"] if v["secret"]]

    def mask(text, secrets=secrets):
        return mask_secrets(text, secrets)
    state = cell_final_state(run.study, regime, episode, records, plan) if regime.compacts else \
        recent_context(episode, regime.keep_last or len(episode["segments"]))
    needed = bool(episode.get("needed")) and episode["file"] in needed_sessions(run.manifest)
    scored = score_state(episode, state, regime.compacts, mask, prompt_text(regime, cell.budget),
                         needed)
    rows = {"values": [{**base, "value": v["id"], "class": v["status"],
                        **({"beside": v["beside"]} if v["beside"] is not None else {}),
                        **({"instead": v["instead"]} if v["instead"]
                           else {})} for v in scored["values"]],
            "instructions": [{**base, "instruction": i["id"], "status": i["status"],
                              **({"state_sentence": mask(i["state_sentence"])}
                                 if i["state_sentence"] else {})}
                             for i in scored["instructions"]],
            "steps": [{**base, "step": s["id"], "status": s["status"],
                       **({"state_sentence": mask(s["state_sentence"])} if s["state_sentence"]
                          else {})}
                      for s in scored["steps"]],
            "states": [{**base, "compacted": regime.compacts, "chars": len(state),
                        "words": len(state.split()),
                        **({"gate": scored["gate"]} if "gate" in scored else {}),
                        **({"invented_orders": scored["invented"]} if needed and regime.compacts
                           else {}),
                        "state": mask(state)[:MAX_STATE_KEPT]}],
            "needed": [{**base, "needed": n["id"], "status": n["status"],
                        **({"state_sentence": n["state_sentence"]} if n["state_sentence"] else {})}
                       for n in scored.get("needed", [])],
            "probes": [], "call_counts": []}
    if needed and run.judge is not None:       # `score --judge`: the judge decides what it may
        rows["needed"] = run.judge.judged_rows(episode, state, regime.compacts, rows["needed"])
    for spec in plan:
        record = records[spec.kind]
        rows["call_counts"].append((cell.regime, known_count(record.get("prompt_eval_count")),
                                    known_count(record.get("eval_count"))))
        if spec.stage == "answer":
            probe = {**base, **score_probe(record, episode["questions"][spec.question_id - 1], [])}
            for field in ("truth", "answer", "lenient_answer"):
                if isinstance(probe.get(field), str):
                    probe[field] = mask(probe[field])
            probe["reply"] = mask((record.get("response") or "")[:300])
            rows["probes"].append(probe)
    return rows


def score_fields(run: ScoredRun, rows: dict[str, list]) -> dict:
    """results.json's fields of this study: its label, how the sessions were read and their ground
    truth (masked), the scored rows of every complete cell, and each regime's cost."""
    costs: dict = {name: {"calls": 0, "prompt_tokens": 0, "output_tokens": 0,
                          "unknown": 0} for name in run.regimes}
    for regime, prompt, output in rows.get("call_counts", []):
        cost = costs[regime]
        cost["calls"] += 1
        cost["prompt_tokens"] += prompt or 0
        cost["output_tokens"] += output or 0
        cost["unknown"] += prompt is None or output is None
    tasks, scored = run.tasks, needed_sessions(run.manifest)
    sessions = []
    for e in tasks["episodes"]:
        def mask(text, e=e):
            return mask_secrets(text, [v["text"] for v in e["values"] if v["secret"]])
        sessions.append(session_summary(e, mask) | ({"needed": session_items(e, mask)}
                                                    if e["file"] in scored and e.get("needed")
                                                    else {}))
    # the needed items' rows only where a session is scored by them: a bank of plain transcripts
    # is what it always was
    needed = {"needed": rows["needed"]} if rows.get("needed") else {}
    if needed and run.judge is not None:
        needed["judge"] = run.judge.record()
    return {"label": "EXPLORATORY", "segments": tasks.get("segments"),
            "left_out": tasks.get("left_out", {}), "sessions": sessions,
            **{name: rows.get(name, []) for name in ROWS}, **needed, "costs": costs}


# --- The bank's shape -----------------------------------------------------------------------------
ROW_FIELDS = {"values": {"value": int, "class": str}, "instructions": {"instruction": int,
    "status": str},
              "steps": {"step": int, "status": str}, "states": {"compacted": bool, "chars": int},
              "probes": {"question_id": int, "class": str}}

ROW_ITEM = {"values": "value", "instructions": "instruction", "steps": "step", "states": None,
            "probes": "question_id"}

ROW_CLASSES = {"values": VALUE_CLASSES, "instructions": INSTRUCTION_CLASSES, "steps": STEP_CLASSES}


def row_key(field: str, row: dict) -> tuple:
    """What a row is about: its cell (model, regime, session, budget, sample) and its item."""
    item = ROW_ITEM[field]
    return (row["model"], row["regime"], row["episode"], *variant(row), row[item] if item else None)


def check_bank(results: dict) -> list[str]:
    """Every way a results file is not one this study's analysis reads: fields missing or of the
    wrong type, a row for an item its session does not hold or in a status the rules do not give,
    and a row given twice."""
    problems = []
    for field in ("models", "regimes"):
        if not isinstance(results.get(field), list) or not results[field] or \
                not all(isinstance(x, str) for x in results[field]):
            problems.append(f"`{field}` is not a list of names")
    for field in ("sessions", *ROW_FIELDS):
        if not isinstance(results.get(field), list):
            problems.append(f"`{field}` is " + ("missing" if field not in results
                                                else "not a list"))
    if not isinstance(results.get("regime_definitions"),
                      dict) or not isinstance(results.get("costs"), dict):
        problems.append("`regime_definitions` or `costs` is not an object")
    if problems:
        return problems
    sessions = results["sessions"]
    if not all(isinstance(s, dict) and isinstance(s.get("episode"),
                                                  int) and isinstance(s.get("file"), str) and
               all(isinstance(s.get(f), list) for f in ("values", "instructions",
                                                        "steps")) for s in sessions):
        problems.append("`sessions` is not a list of sessions with an episode, a file, values, "
                        "instructions and steps")
        return problems
    known = {field: {(s["episode"], x.get("id")) for s in sessions for x in s[field]
                     if isinstance(x, dict)}
             for field in ("values", "instructions", "steps")}
    for field, types in ROW_FIELDS.items():
        base = {"model": str, "regime": str, "episode": int, **types}
        seen: set = set()
        for number, row in enumerate(results[field], 1):
            bad = not isinstance(row, dict) or any(not isinstance(row.get(f),
                t) or isinstance(row.get(f), bool) and
                                                   t is int for f, t in base.items())
            if bad or row["regime"] not in results["regimes"]:
                old = field in ("instructions", "steps") and isinstance(row, dict) and \
                    ("retained" in row or "reported" in row)
                problems.append(f"{field} row {number} lacks one of {', '.join(base)}, has it of "
                                "the wrong type, or "
                                f"names a regime `regimes` does not list" +
                                ("; the bank was scored by an earlier version of the rules: score "
                                 "its run folder "
                                 "again (`score --out DIR`)" if old else ""))
                break
            item = ROW_ITEM[field]
            status = row["class"] if field == "values" else row.get("status")
            if field in known and ((row["episode"], row[item]) not in known[field]
                                   or status not in ROW_CLASSES[field]):
                problems.append(f"{field} row {number} names an item its session does not hold or "
                                f"a status the rules do not give ({', '.join(ROW_CLASSES[field])})")
                break
            key = row_key(field, row)
            if key in seen:
                problems.append(f"{field} row {number} repeats an earlier row (the same model, "
                                "regime, session, "
                                f"budget, sample and item): a bank holds each once")
                break
            seen.add(key)
    return problems + needed_problems(results)


def needed_problems(results: dict) -> list[str]:
    """The needed items' rows, where the bank has them: each names an item its session lists, in
    a status needed.py gives, once; and the judge's record where a judge decided some
    (study_judge.py)."""
    if "needed" not in results:
        return ["`judge` is given without `needed` rows"] if "judge" in results else []
    judge = results.get("judge")
    if "judge" in results and not (
            isinstance(judge, dict) and all(isinstance(judge.get(f), str) for f in JUDGE_TEXTS)
            and isinstance(judge.get("threshold"), (int, float))
            and isinstance(judge.get("categories"), list)):
        return ["`judge` does not name the model, its backend, question, threshold, categories "
                "and agreement; score the run again with `score --judge MODEL`"]
    rows = results["needed"]
    items = [(s["episode"], i) for s in results["sessions"] for i in s.get("needed") or []]
    if not isinstance(rows, list) or not all(
            isinstance(i, dict) and isinstance(i.get("id"), int) and
            i.get("category") in NEEDED_CATEGORIES and isinstance(i.get("key"), str)
            for _, i in items):
        return ["`needed` is not a list of rows, or a session's `needed` items lack an id, a "
                "category or a key"]
    known = {(e, i["id"]) for e, i in items}
    seen: set = set()
    for number, row in enumerate(rows, 1):
        if not isinstance(row, dict) or not all(isinstance(row.get(f), str) for f in
                                                ("model", "regime", "status")) or \
                row["regime"] not in results["regimes"] or \
                (row.get("episode"), row.get("needed")) not in known or \
                row["status"] not in NEEDED_STATUSES or \
                row.get("rules_status", row["status"]) not in NEEDED_STATUSES:
            return [f"needed row {number} names a regime, session or item the bank does not hold, "
                    f"or a status needed.py does not give ({', '.join(NEEDED_STATUSES)})"]
        key = (row["model"], row["regime"], row["episode"], *variant(row), row["needed"])
        if key in seen:
            return [f"needed row {number} repeats an earlier row (the same model, regime, "
                    "session, budget, sample and item): a bank holds each once"]
        seen.add(key)
    return []


# what results.json's `judge` block names as text (study_judge.StudyJudge.record)
JUDGE_TEXTS = ("model", "backend", "prompt", "prompt_sha256", "agreement")


def coverage(results: dict) -> dict:
    """What the rows themselves cover, never the file's `cells` block: a cell (model x regime x
    session x budget x sample the bank declares) is complete when it has its state and one row for
    each value of its session, each instruction in force, each step still failed or denied and each
    probe."""
    sessions = {s["episode"]: s for s in results["sessions"]}
    budgets = results.get("budgets") or [DEFAULT_BUDGET]
    samples = range(results.get("samples") or 1)
    cells = [(m, r, e, b,
              k) for m in results["models"] for r in results["regimes"] for e in sessions
             for b in budgets for k in samples]
    counts = {
        field: collections.Counter(row_key(field, row)[:5] for row in results[field])
        for field in ROW_FIELDS
    }
    counts["needed"] = collections.Counter((row["model"], row["regime"], row["episode"],
                                            *variant(row)) for row in results.get("needed", []))

    def complete(cell: tuple) -> bool:
        s = sessions[cell[2]]
        need = {"states": 1, "values": len(s["values"]),
                "instructions": sum(1 for i in s["instructions"] if not i.get("revoked_by")),
                "steps": sum(1 for x in s["steps"] if x.get("status") != "done"),
                "probes": len(s.get("probes", [])), "needed": len(s.get("needed") or [])}
        return all(counts[field][cell] == n for field, n in need.items())
    done = [cell for cell in cells if complete(cell)]
    return {"complete_cells": len(done), "expected_cells": len(cells)}


# --- The analysis ---------------------------------------------------------------------------------
def variant(row: dict) -> tuple:
    return row.get("budget", DEFAULT_BUDGET), row.get("sample", 0)


def tally_by_session(rows: list[dict], group, success) -> dict:
    """Per group key: {session: (successes, rows)}."""
    counts: dict = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
    for row in rows:
        cell = counts[group(row)][row["episode"]]
        cell[0] += bool(success(row))
        cell[1] += 1
    return {key: {e: tuple(v) for e, v in by_episode.items()} for key, by_episode in counts.items()}


# Sessions needed before an interval or a p-value is printed (SESSIONS.md section 6). Values,
# instructions and steps
# of one session are not independent: the session is the unit. A percentile bootstrap over fewer
# sessions covers
# the truth far less often than it says (about 57% with 2 sessions, 78% with 3, 87% with 6), and a
# two-sided exact
# sign test over sessions cannot reach p < 0.05 below 6 (its smallest p is 2 / 2^n).
MIN_SESSIONS_FOR_INTERVAL = 10

MIN_SESSIONS_FOR_TEST = 6

# the two-sided level a paired test's Holm-adjusted p must be under for a regime to be called better
# (section 6)
ALPHA = 0.05


def clustered_rates(tallies: dict[str, dict]) -> dict[str, dict]:
    """Every named tally (tally_by_session) as rates per group key, k/n, with a 95% interval only
    from MIN_SESSIONS_FOR_INTERVAL sessions on: the session-clustered bootstrap (every model, budget
    and sample of a session drawn together), widened to hold the binomial (Wilson) interval of k/n,
    so that it is never narrower (equal session rates give the bootstrap no width). Drawn in one
    pass."""
    keys = [(name, key) for name, tally in tallies.items() for key, by_episode in tally.items()]
    drawn = [tallies[name][key] for name, key in keys]
    resampled = [i for i, by_episode in enumerate(drawn) if len(by_episode)
                 >= MIN_SESSIONS_FOR_INTERVAL]
    intervals = dict(zip(resampled, clustered_bootstraps([drawn[i] for i in resampled])))
    out: dict = {name: {} for name in tallies}
    for i, (name, key) in enumerate(keys):
        k, n = sum(a for a, _ in drawn[i].values()), sum(b for _, b in drawn[i].values())
        summary = rate_summary(k, n)
        summary["clusters"] = len(drawn[i])
        if i in intervals:
            summary.update(lo=min(summary["lo"], intervals[i][0]),
                           hi=max(summary["hi"], intervals[i][1]),
                           interval=True)
        out[name][key] = summary
    return out


def paired_tests(values: list[dict], user: list[str], built_in: list[str],
                 needed: list[dict] | None = None) -> list[dict]:
    """Each user regime against each built-in one, at the session level, on the values kept
    verbatim and, where the bank has them, on the needed items kept (those tests follow, marked
    `items` needed); Holm-adjusted over the one family they make (exploratory)."""
    tests = sign_tests(values, "value", lambda r: r["class"] == "kept", user, built_in)
    if needed is not None:
        tests += [{**t, "items": "needed"} for t in sign_tests(
            needed, "needed", lambda r: r["status"] == "kept", user, built_in)]
    testable = [t for t in tests if t["p"] is not None]
    for test, adjusted in zip(testable, holm_adjust([t["p"] for t in testable])):
        test["p_holm"] = adjusted
    for test in tests:
        test["family"] = len(testable)
        test["direction"] = test_direction(test)
    return tests


def sessions_for_family(family: int) -> int:
    """The fewest sessions at which a sign test of a family of `family` Holm-adjusted tests can
    reach ALPHA at all: its smallest two-sided p is 2 / 2^n, which Holm's first step multiplies by
    the family's size."""
    n = MIN_SESSIONS_FOR_TEST
    while max(family, 1) * 2 * 0.5 ** n >= ALPHA:
        n += 1
    return n


def sign_tests(rows: list[dict], item: str, success, user: list[str],
               built_in: list[str]) -> list[dict]:
    """Per session, the share of its items kept under each regime (paired on the same item, model,
    budget and sample); b = sessions where yours kept more, c = where the built-in one did; an
    exact two-sided sign test on b and c, only from MIN_SESSIONS_FOR_TEST sessions on."""
    kept = {(r["model"], r["regime"], r["episode"], r[item],
             variant(r)): success(r) for r in rows}
    tests = []
    for mine in user:
        for other in built_in:
            per_session: dict = collections.defaultdict(lambda: [0, 0, 0])
            for (m, r, e, v, var), ok in kept.items():
                if r == mine and (m, other, e, v, var) in kept:
                    tally = per_session[e]
                    tally[0] += ok
                    tally[1] += kept[(m, other, e, v, var)]
                    tally[2] += 1
            b = sum(1 for a, c, _ in per_session.values() if a > c)
            c = sum(1 for a, x, _ in per_session.values() if x > a)
            test = {"yours": mine, "built_in": other, "sessions": len(per_session),
                    "pairs": sum(n for _, _, n in per_session.values()), "b": b, "c": c}
            test["p"] = (mcnemar_counts(b, c, b + c)["p"] if len(per_session)
                         >= MIN_SESSIONS_FOR_TEST else None)
            tests.append(test)
    return tests


def test_direction(test: dict) -> str:
    """What a paired test says: a regime better only where its Holm-adjusted p is below ALPHA, from
    a test that could have said otherwise: untested below MIN_SESSIONS_FOR_TEST sessions, or below
    the sessions at which the family's Holm adjustment lets any result reach ALPHA."""
    if test["p"] is None or test["sessions"] < sessions_for_family(test.get("family", 1)):
        return "not tested"
    if test["p_holm"] >= ALPHA or test["b"] == test["c"]:
        return "no difference shown"
    return f"{test['built_in'] if test['c'] > test['b'] else test['yours']} better"


def lost_listing(results: dict, value_of: dict, file_of: dict) -> dict:
    """Per regime, every dropped or changed value with the sentence it came from and what the state
    wrote instead."""
    many_models = len(results["models"]) > 1
    listing: dict = {r: [] for r in results["regimes"]}
    for row in results["values"]:
        if row["class"] not in ("dropped", "changed"):
            continue
        value = value_of[(row["episode"], row["value"])]
        listing[row["regime"]].append({
            "session": file_of[row["episode"]], "kind": value["kind"], "value": value["text"],
            "class": row["class"],
            "instead": row.get("instead") or "", "sentence": value["sentence"],
            "source": value["source"],
            "segment": value["segment"], "model": row["model"] if many_models else None,
            "variant": None if variant(row) == (DEFAULT_BUDGET, 0) else f"b{variant(row)[0]} "
            f"s{variant(row)[1]}"})
    return listing


def said_wrong(results: dict, file_of: dict) -> list[dict]:
    """Every instruction a final state contradicts and every failed or denied step it claims done,
    with the state's sentence."""
    text = {(s["episode"], field, x["id"]): x.get("text") or f"{x.get('tool')}: "
            f"{(x.get('match') or [''])[0]}"
            for s in results["sessions"] for field in ("instructions", "steps") for x in s[field]}
    out = []
    for field, status, what in (("instructions", "contradicted", "contradicts the instruction"),
                                ("steps", "claimed done", "claims done the step")):
        for row in results[field]:
            if row["status"] == status:
                out.append({"regime": row["regime"], "what": what,
                            "session": file_of[row["episode"]],
                            "item": text.get((row["episode"], field, row[ROW_ITEM[field]]),
                                             "?")[:120],
                            "state": (row.get("state_sentence") or "")[:200]})
    return out


# (results, analysis): scoring writes report.html from the same bank that
LAST_ANALYSIS: list = []
                                        # analysis.md is written from next; its bootstrap is drawn
                                        # once, not twice


def analyze(results: dict, task_set: dict | None = None, table: dict | None = None) -> dict:
    """Every table of the report, computed from the rows themselves (the same bank object is
    analysed once)."""
    if LAST_ANALYSIS and LAST_ANALYSIS[0][0] is results:
        return LAST_ANALYSIS[0][1]
    analysis = compute_analysis(results)
    LAST_ANALYSIS[:] = [(results, analysis)]
    return analysis


def session_tallies(values: list[dict], value_of: dict, results: dict,
                    probes: list[dict]) -> dict:
    """Each rate the report gives, as tally_by_session counts it (per regime, or per a value's kind
    or source and regime), in the order the analysis lists them."""
    def regime(row):
        return row["regime"]

    def value_field(field):
        return lambda row: (value_of[(row["episode"], row["value"])][field], row["regime"])

    def status_is(status):
        return lambda row: row["status"] == status

    def kept(row):
        return row["class"] == "kept"

    return {
        "kept": tally_by_session(values, regime, kept),
        "lost": tally_by_session(values, regime,
                                 lambda row: row["class"] in ("changed", "dropped")),
        "kept_by_kind": tally_by_session(values, value_field("kind"), kept),
        "kept_by_source": tally_by_session(values, value_field("source"), kept),
        "beside": tally_by_session([row for row in values if "beside" in row], regime,
                                   lambda row: row["beside"]),
        "instructions": tally_by_session(results["instructions"], regime, status_is("present")),
        "contradicted": tally_by_session(results["instructions"], regime,
                                         status_is("contradicted")),
        "steps": tally_by_session(results["steps"], regime, status_is("reported")),
        "claimed_done": tally_by_session(results["steps"], regime, status_is("claimed done")),
        "probes": tally_by_session(probes, regime, lambda row: row["class"] == "correct"),
        **({f"needed_{status}": tally_by_session(results["needed"], regime, status_is(status))
            for status in NEEDED_STATUSES} if "needed" in results else {}),
    }


def compute_analysis(results: dict) -> dict:
    regimes, defs = results["regimes"], results["regime_definitions"]
    user = [r for r in regimes if (defs.get(r) or {}).get("origin", "built-in") != "built-in"]
    built_in = [r for r in regimes if r not in user]
    compacting = [r for r in regimes if (defs.get(r) or {}).get("compacts", True)]
    value_of = {(s["episode"], v["id"]): v for s in results["sessions"] for v in s["values"]}
    file_of = {s["episode"]: s["file"] for s in results["sessions"]}
    values = results["values"]
    classes = {r: collections.Counter(row["class"] for row in values if row["regime"]
                                      == r) for r in regimes}
    states = results["states"]
    covered = coverage(results)
    gate = {}
    for r in compacting:
        gated = [s["gate"] for s in states if s["regime"] == r and "gate" in s]
        shown = list(dict.fromkeys([*GATE_SHOWN, *(c for g in gated for c,
                                                   n in g["counts"].items() if n)]))
        gate[r] = {"states": len(gated), "fail": sum(g["verdict"] == "FAIL" for g in gated),
                   "by_category": {c: sum(1 for g in gated if g["counts"].get(c)) for c in shown},
                   "examples": [f for g in gated for f in g["findings"]][:6]}
    probes = results["probes"]
    tests = paired_tests(values, user, built_in, results.get("needed"))
    return {
        "study": STUDY_KEY,
        "protocol": PROTOCOL_ID,
        "label": "EXPLORATORY",
        "complete": covered["complete_cells"] == covered["expected_cells"],
        "coverage": covered,
        "n_sessions": len(results["sessions"]),
        "min_sessions": {"interval": MIN_SESSIONS_FOR_INTERVAL, "test": MIN_SESSIONS_FOR_TEST,
                         "family": sessions_for_family(tests[0]["family"]) if tests else None},
        "simulated": bool((results.get("run") or {}).get("simulated")),
        "models": results["models"],
        "regimes": regimes,
        "user_regimes": user,
        "compacting": compacting,
        "descriptions": {r: (defs.get(r) or {}).get("description", "") for r in regimes},
        "segments": results.get("segments"),
        "budgets": results.get("budgets"),
        "samples": results.get("samples"),
        "sessions": [
            {k: s[k] for k in ("episode", "file", "format", "read", "segments")}
            | {
                "values": len(s["values"]),
                "instructions": sum(not i.get("revoked_by") for i in s["instructions"]),
                "withdrawn": sum(bool(i.get("revoked_by")) for i in s["instructions"]),
                "steps": sum(st["status"] != "done" for st in s["steps"]),
                "probes": len(s["probes"]),
                "kinds": dict(collections.Counter(v["kind"] for v in s["values"])),
            }
            for s in results["sessions"]
        ],
        "left_out": results.get("left_out", {}),
        "classes": {r: {c: classes[r][c] for c in VALUE_CLASSES} for r in regimes},
        "instruction_classes": {
            r: {
                c: sum(
                    1
                    for row in results["instructions"]
                    if row["regime"] == r and row["status"] == c
                )
                for c in INSTRUCTION_CLASSES
            }
            for r in regimes
        },
        "step_classes": {
            r: {
                c: sum(1 for row in results["steps"] if row["regime"] == r and row["status"] == c)
                for c in STEP_CLASSES
            }
            for r in regimes
        },
        **{name: nested(rates) if name.startswith("kept_by") else rates
           for name, rates in clustered_rates(session_tallies(values, value_of, results,
                                                              probes)).items()},
        "kept_by_session": nested(
            {
                (file_of[e], r): rate_summary(
                    sum(row["class"] == "kept" for row in rows), len(rows)
                )
                for (e, r), rows in group_rows(
                    values, lambda row: (row["episode"], row["regime"])
                ).items()
            }
        ),
        "tests": [t for t in tests if "items" not in t],
        # what the next agent needed, only where the bank scores it (study_needed)
        **({"needed_tests": [t for t in tests if "items" in t],
            **needed_counts(results, regimes)} if "needed" in results else {}),
        "gate": gate,
        "probe_classes": {
            r: dict(collections.Counter(p["class"] for p in probes if p["regime"] == r))
            for r in regimes
        },
        "costs": results["costs"],
        "lost_values": lost_listing(results, value_of, file_of),
        "said_wrong": said_wrong(results, file_of),
        "typed_kept_yours_lost": typed_against_yours(values, user, value_of, file_of),
        "recheck": results.get("recheck"),
    }


def nested(rates: dict) -> dict:
    """{(a, b): x} as {a: {b: x}}, so that the analysis stays plain JSON."""
    out: dict = {}
    for (a, b), x in rates.items():
        out.setdefault(a, {})[b] = x
    return out


def group_rows(rows: list[dict], key) -> dict:
    groups: dict = collections.defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    return groups


def typed_against_yours(values: list[dict], user: list[str], value_of: dict, file_of: dict) -> dict:
    """Per user regime: the values the typed block (R2) kept verbatim that the user's regime
    lost."""
    kept_by_typed = {(r["model"], r["episode"], r["value"], variant(r)) for r in values
                     if r["regime"] == "R2" and r["class"] == "kept"}
    out = {}
    for mine in user:
        lost = [r for r in values if r["regime"] == mine and r["class"] in ("changed",
            "dropped") and
                (r["model"], r["episode"], r["value"], variant(r)) in kept_by_typed]
        out[mine] = [{"session": file_of[r["episode"]], "kind": value_of[(r["episode"],
            r["value"])]["kind"],
                      "value": value_of[(r["episode"], r["value"])]["text"],
                      "class": r["class"]} for r in lost]
    return out


# --- Writing the report when the bank is scored ---------------------------------------------------
def write_outputs(run_dir: Path, results: dict) -> list[Path]:
    """report.html and lost.csv beside results.json when the bank is scored, from the analysis of
    this same bank (marked PARTIAL while cells are missing), as protocol/SESSIONS.md section 6 says;
    the report is the one its Report writes again when the bank is analysed."""
    analysis = analyze(results)
    write_atomic(run_dir / "report.html", report_html(results, analysis,
                                                      figures(results, analysis, False))
                 .encode("utf-8"))
    write_atomic(run_dir / "lost.csv", render_lost_csv(analysis).encode("utf-8"))
    return [run_dir / "report.html", run_dir / "lost.csv"]
