"""XR-S1, analysis (protocol/SESSIONS.md sections 4 to 6): each final state scored against its transcript (every
exact value kept, reformatted, changed or dropped; each standing instruction retained or not; each failed step
reported or not; the release gate's findings), the user's probes, the tables per kind, regime and session with
session-clustered bootstrap intervals, the paired exact McNemar tests, and the listing of what was lost, rendered as
analysis.md, report.html and lost.csv. Every secret-looking value is masked in all of them. EXPLORATORY throughout.
"""
from __future__ import annotations

import collections
import csv
import html
import io
from pathlib import Path

from ..bank import ScoredRun, cell_final_state, score_probe
from ..gate import GATE_CATEGORIES, check_state, gate_verdict, normalize_ledger
from ..inputs import budget_words
from ..records import Cell, DEFAULT_BUDGET, Regime, SIMULATED_STAMP, known_count
from ..reports import fmt_p, inline_html, md_table, pct, render_recheck_section, spreadsheet_safe
from ..runfolder import write_atomic
from ..states import carries_instruction
from ..stats import clustered_bootstraps, holm_adjust, mcnemar_counts, rate_summary
from .sessions import PROTOCOL_ID, STUDY_KEY, recent_context
from .sessions_truth import (MASK, VALUE_CLASSES, VALUE_KINDS, classify_values, extract_values, mask_secrets,
    normalize_value, occurs_verbatim)


NO_NAMES = r"(?!)"                       # the gate's name pattern here: it matches no word (see session_ledger)

MAX_FINDINGS_KEPT = 12                  # findings kept per state in results.json

MAX_STATE_KEPT = 4000                   # characters of each final state kept in results.json

MAX_LOST_SHOWN = 40                     # lost values listed per regime in analysis.md and report.html (all: lost.csv)

GATE_SHOWN = ("obligation", "status", "schema")   # what the gate can find against a transcript here


# --- Scoring one final state -------------------------------------------------------------------------------------
def session_ledger(episode: dict) -> dict:
    """The gate's ledger of a session: no named entities (the study checks exact values itself, and a name pattern
    that matches no word keeps `name = value` lines from being read as invented entities), one item per failed or
    denied step with its status (done, with the turn as receipt, when a later identical call succeeded), and the
    user's standing instructions as accepted ones."""
    items = [{"name": f"{s['tool']}: {s['match'][0]}"[:80], "match": s["match"], "status": s["status"],
              "receipt": f"turn {s['resolved_turn']}" if s["status"] == "done" else None} for s in episode["steps"]]
    return normalize_ledger({"entities": {}, "items": items, "allowed_sections": None, "name_pattern": NO_NAMES,
                             "accepted_instructions": [i["text"] for i in episode["instructions"]],
                             "max_omissions": 0})


def session_source(episode: dict) -> str:
    return "\n\n".join(seg["text"] for seg in episode["segments"])


def source_norms(episode: dict, prompt: str = "") -> dict[str, set]:
    """Every normalized value, per kind, that the session gives or the regime's own prompt does (a state that
    repeats its prompt's word limit has not changed a value of the session into it)."""
    norms: dict[str, set] = collections.defaultdict(set)
    for value in episode["values"]:
        norms[value["kind"]].add(normalize_value(value["kind"], value["text"]))
    for kind, text, _, _ in extract_values(prompt):
        norms[kind].add(normalize_value(kind, text))
    return norms


def prompt_text(regime: Regime, budget: int) -> str:
    """A compacting regime's prompt with its word limit and no state or segment: the values it gives itself."""
    if not regime.compacts:
        return ""
    return regime.compaction_template.format(max_words=budget_words(budget), previous_state="", segment="")


def step_reported(step: dict, state: str) -> bool:
    """Whether a state names a failed step at all (any of its match terms, letter case ignored)."""
    low = (state or "").lower()
    return any(occurs_verbatim(term.lower(), low) for term in step["match"])


def score_state(episode: dict, state: str, compacted: bool, mask, prompt: str = "") -> dict:
    """One final state against its session: value classes, instructions, steps and, for a compacted state, the
    gate's findings (a Recent-k regime's verbatim segments are not a written state, so they are not gated)."""
    classes = classify_values(episode["values"], state, source_norms(episode, prompt))
    scored = {"values": [(v["id"], cls, None if instead is None else MASK if v["secret"] else mask(instead))
                         for v, (cls, instead) in zip(episode["values"], classes)],
              "instructions": [(i["id"], carries_instruction(state, i["key_terms"])) for i in episode["instructions"]],
              "steps": [(s["id"], step_reported(s, state)) for s in episode["steps"] if s["status"] != "done"]}
    if compacted:
        findings = check_state(state, session_ledger(episode), session_source(episode))
        blocking = [f for f in findings if f["blocking"]]
        scored["gate"] = {"verdict": gate_verdict(findings),
                          "counts": {c: sum(1 for f in blocking if f["category"] == c) for c in
                                     dict.fromkeys([*GATE_CATEGORIES, *(f["category"] for f in blocking)])},
                          "findings": [{"category": f["category"], "detail": mask(f["detail"]), "text": mask(f["text"])}
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
            "values": [{"id": v["id"], "kind": v["kind"], "text": mask_value(v), "source": v["source"],
                        "sentence": mask(v["sentence"]), "segment": v["segment"], "secret": v["secret"]}
                       for v in episode["values"]],
            "instructions": [{"id": i["id"], "text": mask(i["text"]), "key_terms": [mask(t) for t in i["key_terms"]],
                              "segment": i["segment"]} for i in episode["instructions"]],
            "steps": [{"id": s["id"], "tool": s["tool"], "status": s["status"], "detail": mask(s["detail"]),
                       "match": [mask(m) for m in s["match"]], "segment": s["segment"]} for s in episode["steps"]],
            "probes": [{"id": q["id"], "type": q["type"], "prompt": mask(q["prompt"]), "truth": mask(q["truth"])}
                       for q in episode["questions"]]}


ROWS = ("values", "instructions", "steps", "states", "probes")


def score_cell(run: ScoredRun, cell: Cell, records: dict, base: dict, plan: list) -> dict[str, list]:
    """One complete cell: its final state scored against its session (each value, instruction and failed step, and
    the gate's findings), its probes, and each call's token counts; every secret of the session masked."""
    regime, episode = run.regimes[cell.regime], run.tasks["episodes"][cell.episode]
    secrets = [v["text"] for v in episode["values"] if v["secret"]]

    def mask(text, secrets=secrets):
        return mask_secrets(text, secrets)
    state = cell_final_state(run.study, regime, episode, records, plan) if regime.compacts else \
        recent_context(episode, regime.keep_last or len(episode["segments"]))
    scored = score_state(episode, state, regime.compacts, mask, prompt_text(regime, cell.budget))
    rows = {"values": [{**base, "value": i, "class": cls, **({"instead": instead} if instead else {})}
                       for i, cls, instead in scored["values"]],
            "instructions": [{**base, "instruction": i, "retained": kept} for i, kept in scored["instructions"]],
            "steps": [{**base, "step": i, "reported": said} for i, said in scored["steps"]],
            "states": [{**base, "compacted": regime.compacts, "chars": len(state), "words": len(state.split()),
                        **({"gate": scored["gate"]} if "gate" in scored else {}), "state": mask(state)[:MAX_STATE_KEPT]}],
            "probes": [], "call_counts": []}
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
    """results.json's fields of this study: its label, how the sessions were read and their ground truth (masked),
    the scored rows of every complete cell, and each regime's cost."""
    costs: dict = {name: {"calls": 0, "prompt_tokens": 0, "output_tokens": 0, "unknown": 0} for name in run.regimes}
    for regime, prompt, output in rows.get("call_counts", []):
        cost = costs[regime]
        cost["calls"] += 1
        cost["prompt_tokens"] += prompt or 0
        cost["output_tokens"] += output or 0
        cost["unknown"] += prompt is None or output is None
    tasks = run.tasks
    return {"label": "EXPLORATORY", "segments": tasks.get("segments"), "left_out": tasks.get("left_out", {}),
            "sessions": [session_summary(e, lambda text, e=e: mask_secrets(
                text, [v["text"] for v in e["values"] if v["secret"]])) for e in tasks["episodes"]],
            **{name: rows.get(name, []) for name in ROWS}, "costs": costs}


# --- The bank's shape --------------------------------------------------------------------------------------------
ROW_FIELDS = {"values": {"value": int, "class": str}, "instructions": {"instruction": int, "retained": bool},
              "steps": {"step": int, "reported": bool}, "states": {"compacted": bool, "chars": int},
              "probes": {"question_id": int, "class": str}}


def check_bank(results: dict) -> list[str]:
    """Every way a results file is not one this study's analysis reads."""
    problems = []
    for field in ("models", "regimes"):
        if not isinstance(results.get(field), list) or not results[field] or \
                not all(isinstance(x, str) for x in results[field]):
            problems.append(f"`{field}` is not a list of names")
    for field in ("sessions", *ROW_FIELDS):
        if not isinstance(results.get(field), list):
            problems.append(f"`{field}` is " + ("missing" if field not in results else "not a list"))
    if not isinstance(results.get("regime_definitions"), dict) or not isinstance(results.get("costs"), dict):
        problems.append("`regime_definitions` or `costs` is not an object")
    if problems:
        return problems
    sessions = results["sessions"]
    if not all(isinstance(s, dict) and isinstance(s.get("episode"), int) and isinstance(s.get("values"), list) and
               isinstance(s.get("file"), str) for s in sessions):
        problems.append("`sessions` is not a list of sessions with an episode, a file and values")
        return problems
    known = {"values": {(s["episode"], v.get("id")) for s in sessions for v in s["values"] if isinstance(v, dict)}}
    for field, types in ROW_FIELDS.items():
        base = {"model": str, "regime": str, "episode": int, **types}
        for number, row in enumerate(results[field], 1):
            bad = not isinstance(row, dict) or any(not isinstance(row.get(f), t) or isinstance(row.get(f), bool) and
                                                   t is int for f, t in base.items())
            if bad or row["regime"] not in results["regimes"]:
                problems.append(f"{field} row {number} lacks one of {', '.join(base)}, has it of the wrong type, or "
                                f"names a regime `regimes` does not list")
                break
            if field == "values" and ((row["episode"], row["value"]) not in known["values"] or
                                      row["class"] not in VALUE_CLASSES):
                problems.append(f"values row {number} names a value its session does not hold or an unknown class")
                break
    return problems


# --- The analysis ------------------------------------------------------------------------------------------------
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


def clustered_rates(tallies: dict[str, dict]) -> dict[str, dict]:
    """Every named tally (tally_by_session) as rates per group key, k/n with a 95% interval from the
    session-clustered bootstrap (every model, budget and sample of a session drawn together), drawn in one pass;
    with a single session there is nothing to resample and no interval is given."""
    keys = [(name, key) for name, tally in tallies.items() for key, by_episode in tally.items()]
    drawn = [tallies[name][key] for name, key in keys]
    resampled = [i for i, by_episode in enumerate(drawn) if len(by_episode) > 1]
    intervals = dict(zip(resampled, clustered_bootstraps([drawn[i] for i in resampled])))
    out: dict = {name: {} for name in tallies}
    for i, (name, key) in enumerate(keys):
        k, n = sum(a for a, _ in drawn[i].values()), sum(b for _, b in drawn[i].values())
        summary = rate_summary(k, n)
        summary["clusters"] = len(drawn[i])
        if i in intervals:
            summary.update(lo=intervals[i][0], hi=intervals[i][1])
        out[name][key] = summary
    return out


def paired_tests(values: list[dict], user: list[str], built_in: list[str]) -> list[dict]:
    """Each user regime against each built-in one: exact McNemar on `kept verbatim`, paired on the same value of the
    same session, model, budget and sample; Holm's adjustment over the family (exploratory)."""
    kept = {(r["model"], r["regime"], r["episode"], r["value"], variant(r)): r["class"] == "kept" for r in values}
    tests = []
    for mine in user:
        for other in built_in:
            pairs = [(ok, kept[(m, other, e, v, var)]) for (m, r, e, v, var), ok in kept.items()
                     if r == mine and (m, other, e, v, var) in kept]
            b = sum(1 for a, c in pairs if a and not c)
            c = sum(1 for a, x in pairs if x and not a)
            tests.append({"yours": mine, "built_in": other, **mcnemar_counts(b, c, len(pairs), mine, other)})
    for test, adjusted in zip(tests, holm_adjust([t["p"] for t in tests])):
        test["p_holm"] = adjusted
    return tests


def lost_listing(results: dict, value_of: dict, file_of: dict) -> dict:
    """Per regime, every dropped or changed value with the sentence it came from and what the state wrote instead."""
    many_models = len(results["models"]) > 1
    listing: dict = {r: [] for r in results["regimes"]}
    for row in results["values"]:
        if row["class"] not in ("dropped", "changed"):
            continue
        value = value_of[(row["episode"], row["value"])]
        listing[row["regime"]].append({
            "session": file_of[row["episode"]], "kind": value["kind"], "value": value["text"], "class": row["class"],
            "instead": row.get("instead") or "", "sentence": value["sentence"], "source": value["source"],
            "segment": value["segment"], "model": row["model"] if many_models else None,
            "variant": None if variant(row) == (DEFAULT_BUDGET, 0) else f"b{variant(row)[0]} s{variant(row)[1]}"})
    return listing


LAST_ANALYSIS: list = []                # (results, analysis): scoring writes report.html from the same bank that
                                        # analysis.md is written from next; its bootstrap is drawn once, not twice


def analyze(results: dict, task_set: dict | None = None, table: dict | None = None) -> dict:
    """Every table of the report, computed from the rows themselves (the same bank object is analysed once)."""
    if LAST_ANALYSIS and LAST_ANALYSIS[0][0] is results:
        return LAST_ANALYSIS[0][1]
    analysis = compute_analysis(results)
    LAST_ANALYSIS[:] = [(results, analysis)]
    return analysis


def compute_analysis(results: dict) -> dict:
    regimes, defs = results["regimes"], results["regime_definitions"]
    user = [r for r in regimes if (defs.get(r) or {}).get("origin", "built-in") != "built-in"]
    built_in = [r for r in regimes if r not in user]
    compacting = [r for r in regimes if (defs.get(r) or {}).get("compacts", True)]
    value_of = {(s["episode"], v["id"]): v for s in results["sessions"] for v in s["values"]}
    file_of = {s["episode"]: s["file"] for s in results["sessions"]}
    values = results["values"]
    classes = {r: collections.Counter(row["class"] for row in values if row["regime"] == r) for r in regimes}
    states = results["states"]
    expected = results["cells"]["expected"] if isinstance(results.get("cells"), dict) else None
    complete = len({(s["model"], s["regime"], s["episode"], variant(s)) for s in states})
    gate = {}
    for r in compacting:
        gated = [s["gate"] for s in states if s["regime"] == r and "gate" in s]
        shown = list(dict.fromkeys([*GATE_SHOWN, *(c for g in gated for c, n in g["counts"].items() if n)]))
        gate[r] = {"states": len(gated), "fail": sum(g["verdict"] == "FAIL" for g in gated),
                   "by_category": {c: sum(1 for g in gated if g["counts"].get(c)) for c in shown},
                   "examples": [f for g in gated for f in g["findings"]][:6]}
    probes = results["probes"]
    return {
        "study": STUDY_KEY, "protocol": PROTOCOL_ID, "label": "EXPLORATORY",
        "complete": expected is not None and complete == expected,
        "coverage": {"complete_cells": complete, "expected_cells": expected},
        "simulated": bool((results.get("run") or {}).get("simulated")),
        "models": results["models"], "regimes": regimes, "user_regimes": user, "compacting": compacting,
        "descriptions": {r: (defs.get(r) or {}).get("description", "") for r in regimes},
        "segments": results.get("segments"), "budgets": results.get("budgets"), "samples": results.get("samples"),
        "sessions": [{k: s[k] for k in ("episode", "file", "format", "read", "segments")} |
                     {"values": len(s["values"]), "instructions": len(s["instructions"]),
                      "steps": sum(st["status"] != "done" for st in s["steps"]), "probes": len(s["probes"]),
                      "kinds": dict(collections.Counter(v["kind"] for v in s["values"]))}
                     for s in results["sessions"]],
        "left_out": results.get("left_out", {}),
        "classes": {r: {c: classes[r][c] for c in VALUE_CLASSES} for r in regimes},
        **{name: nested(rates) if name.startswith("kept_by") else rates for name, rates in clustered_rates({
            "kept": tally_by_session(values, lambda row: row["regime"], lambda row: row["class"] == "kept"),
            "lost": tally_by_session(values, lambda row: row["regime"],
                                     lambda row: row["class"] in ("changed", "dropped")),
            "kept_by_kind": tally_by_session(values, lambda row: (value_of[(row["episode"], row["value"])]["kind"],
                                                                  row["regime"]), lambda row: row["class"] == "kept"),
            "kept_by_source": tally_by_session(values, lambda row: (value_of[(row["episode"], row["value"])]["source"],
                                                                    row["regime"]), lambda row: row["class"] == "kept"),
            "instructions": tally_by_session(results["instructions"], lambda row: row["regime"],
                                             lambda row: row["retained"]),
            "steps": tally_by_session(results["steps"], lambda row: row["regime"], lambda row: row["reported"]),
            "probes": tally_by_session(probes, lambda row: row["regime"], lambda row: row["class"] == "correct"),
        }).items()},
        "kept_by_session": nested({(file_of[e], r): rate_summary(sum(row["class"] == "kept" for row in rows), len(rows))
                                   for (e, r), rows in group_rows(values, lambda row: (row["episode"],
                                                                                       row["regime"])).items()}),
        "tests": paired_tests(values, user, built_in),
        "gate": gate,
        "probe_classes": {r: dict(collections.Counter(p["class"] for p in probes if p["regime"] == r)) for r in regimes},
        "costs": results["costs"],
        "lost_values": lost_listing(results, value_of, file_of),
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
    """Per user regime: the values the typed block (R2) kept verbatim that the user's regime lost."""
    kept_by_typed = {(r["model"], r["episode"], r["value"], variant(r)) for r in values
                     if r["regime"] == "R2" and r["class"] == "kept"}
    out = {}
    for mine in user:
        lost = [r for r in values if r["regime"] == mine and r["class"] in ("changed", "dropped") and
                (r["model"], r["episode"], r["value"], variant(r)) in kept_by_typed]
        out[mine] = [{"session": file_of[r["episode"]], "kind": value_of[(r["episode"], r["value"])]["kind"],
                      "value": value_of[(r["episode"], r["value"])]["text"], "class": r["class"]} for r in lost]
    return out


# --- Rendering: one list of blocks, written as markdown (analysis.md) and as HTML (report.html) ----------------------
def fmt_interval(summary: dict) -> str:
    if not summary["n"]:
        return "none"
    text = f"{summary['k']}/{summary['n']} = {pct(summary['rate'])}"
    if summary.get("clusters", 0) > 1:
        text += f" [{100 * summary['lo']:.1f}, {100 * summary['hi']:.1f}]"
    return text


def report_blocks(a: dict) -> list[tuple]:
    """The report as blocks: ("h1"|"h2"|"p", text), ("table", header, rows), ("list", items)."""
    title = f"{PROTOCOL_ID}: what compaction lost from your sessions"
    blocks: list[tuple] = [("h1", (f"{SIMULATED_STAMP}: " if a["simulated"] else "") + title)]
    cov = a["coverage"]
    blocks.append(("p", "EXPLORATORY. No protocol was registered before these sessions were chosen, so nothing here "
                        "is a confirmatory result: the rates describe these sessions, this model and these prompts. "
                        + ("" if a["complete"] else f"PARTIAL: {cov['complete_cells']} of {cov['expected_cells']} "
                                                    f"cells are complete; rerun the same command to finish.")))
    blocks.append(("h2", "Sessions read"))
    blocks.append(("table", ["session", "format", "read", "skipped and why", "turns", "segments", "values",
                             "instructions", "failed steps", "probes"],
                   [[s["file"], s["format"], f"{s['read']['read']} {s['read']['unit']}",
                     "; ".join(f"{n} {why}" for why, n in s["read"]["skipped"].items()) or "none",
                     s["read"]["turns"], s["segments"], s["values"], s["instructions"], s["steps"], s["probes"]]
                    for s in a["sessions"]]))
    if a["left_out"]:
        blocks.append(("p", "Left out of the folder: " + "; ".join(f"{n} ({why})" for n, why in a["left_out"].items())))
    blocks.append(("p", "Regimes: " + "; ".join(f"{r}: {a['descriptions'][r]}" for r in a["regimes"])))
    blocks.append(("h2", "Exact values in the final state"))
    blocks.append(("p", "Each distinct value of a session (numbers of two or more digits, amounts, dates, times, "
                        "versions, digests, identifiers, paths, URLs, e-mail addresses) against the final state: kept "
                        "verbatim, reformatted (the same value written otherwise), changed (a close value of the same "
                        "kind that the session never gives), or dropped. Intervals: 95% session-clustered bootstrap "
                        "(none with a single session)."))
    blocks.append(("table", ["regime", "kept", "reformatted", "changed", "dropped", "lost (changed or dropped)"],
                   [[r, fmt_interval(a["kept"].get(r, rate_summary(0, 0))), a["classes"][r]["reformatted"],
                     a["classes"][r]["changed"], a["classes"][r]["dropped"],
                     fmt_interval(a["lost"].get(r, rate_summary(0, 0)))] for r in a["regimes"]]))
    none = rate_summary(0, 0)
    for title, field, order in (("per kind of value", "kept_by_kind", VALUE_KINDS),
                                ("per where the value was said", "kept_by_source", ("user", "assistant", "tool call",
                                                                                    "tool result")),
                                ("per session", "kept_by_session", list(a["kept_by_session"]))):
        blocks.append(("p", f"Kept verbatim, {title}:"))
        blocks.append(("table", [title.split()[-1], *a["regimes"]],
                       [[key] + [fmt_interval(a[field][key].get(r, none)) for r in a["regimes"]]
                        for key in order if key in a[field]]))
    blocks.append(("h2", "Your regime against each built-in one"))
    if a["tests"]:
        blocks.append(("p", "Exact McNemar on `kept verbatim`, paired on the same value, session, model, budget and "
                            "sample; b = kept by yours only, c = kept by the built-in only; Holm-adjusted over the "
                            "family. Exploratory: no test here was planned before the sessions were seen."))
        blocks.append(("table", ["yours", "built-in", "pairs", "b", "c", "p", "p (Holm)", "direction"],
                       [[t["yours"], t["built_in"], t["n_pairs"], t["b"], t["c"], fmt_p(t["p"]), fmt_p(t["p_holm"]),
                         t["direction"]] for t in a["tests"]]))
    else:
        blocks.append(("p", "No regime of your own was run: add your compaction prompt with `--regime-file FILE.json` "
                            "(tasks/regimes.example.json shows the format) to compare it with each built-in regime."))
    blocks.append(("h2", "Standing instructions and failed steps"))
    blocks.append(("p", "An instruction is retained when every one of its key terms is in the final state (the "
                        "constraints study's rule; a paraphrase without them is missed). A failed or denied step is "
                        "reported when the state names it at all."))
    blocks.append(("table", ["regime", "instructions retained", "failed steps reported"],
                   [[r, fmt_interval(a["instructions"].get(r, rate_summary(0, 0))),
                     fmt_interval(a["steps"].get(r, rate_summary(0, 0)))] for r in a["regimes"]]))
    blocks.append(("h2", "The release gate against the transcript"))
    blocks.append(("p", "Each compacted final state through the release gate (scripts/pilot/gate.py) with the session "
                        "as its source and a ledger of the failed or denied steps: obligation = an instruction with no "
                        "source in the session, or one that sets rules aside; status = a failed or denied step "
                        "presented as done, or never reported; schema = a field that steers the successor. Counts are "
                        "final states with at least one blocking finding of the kind."))
    categories = list(dict.fromkeys(c for g in a["gate"].values() for c in g["by_category"]))
    blocks.append(("table", ["regime", "states", "fail", *categories],
                   [[r, g["states"], g["fail"], *(g["by_category"].get(c, 0) for c in categories)]
                    for r, g in a["gate"].items()]))
    examples = [f"{r}: {f['category']}: {f['detail']} :: {f['text']}" for r, g in a["gate"].items() for f in
                g["examples"][:2]]
    if examples:
        blocks.append(("list", examples))
    blocks.append(("h2", "Your probes"))
    if any(a["probes"].get(r, {}).get("n") for r in a["regimes"]):
        blocks.append(("p", "Asked of the resumed model after the final checkpoint; correct only for the exact text "
                            "on an `ANSWER:` line."))
        blocks.append(("table", ["regime", "correct", "classes"],
                       [[r, fmt_interval(a["probes"].get(r, rate_summary(0, 0))),
                         ", ".join(f"{c} {n}" for c, n in sorted(a["probe_classes"][r].items()))]
                        for r in a["regimes"]]))
    else:
        blocks.append(("p", "No probes file was given (`--probes FILE`), so no question was asked; none is invented."))
    blocks.append(("h2", "What was lost, regime by regime"))
    blocks.append(("p", f"Each dropped or changed value with the sentence it came from and what the state wrote "
                        f"instead (at most {MAX_LOST_SHOWN} per regime here; every one is in lost.csv)."))
    for r in a["regimes"]:
        lost = a["lost_values"][r]
        blocks.append(("h3", f"{r}: {len(lost)} lost"))
        if lost:
            blocks.append(("table", ["session", "kind", "value", "lost as", "the state wrote", "said in", "sentence"],
                           [[" ".join(filter(None, (x["session"], x["model"], x["variant"]))), x["kind"], x["value"],
                             x["class"], x["instead"] or "-", f"{x['source']}, segment {x['segment']}", x["sentence"]]
                            for x in lost[:MAX_LOST_SHOWN]]))
    for mine, lost in a["typed_kept_yours_lost"].items() if "R2" in a["regimes"] else ():
        blocks.append(("p", f"Kept verbatim by the typed block R2 but lost by {mine}: " +
                            (", ".join(f"{x['value']} ({x['kind']}, {x['session']})" for x in lost[:30]) or "none")))
    blocks.append(("h2", "Cost"))
    blocks.append(("table", ["regime", "calls", "prompt tokens", "output tokens"],
                   [[r, c["calls"], c["prompt_tokens"], c["output_tokens"]] for r, c in a["costs"].items()]))
    recheck = render_recheck_section(a)
    blocks.append(("h2", recheck[0].lstrip("# ")))
    blocks += [("p", line) for line in recheck[1:] if line.strip()]
    return blocks


def render_blocks_md(blocks: list[tuple]) -> str:
    out = []
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2", "h3"):
            out += ["#" * int(kind[1]) + " " + block[1], ""]
        elif kind == "p":
            out += [block[1], ""]
        elif kind == "table":
            out += [md_table(block[1], block[2]) if block[2] else "(none)", ""]
        elif kind == "list":
            out += [f"- {item}" for item in block[1]] + [""]
    return "\n".join(out)


HTML_STYLE = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
              "table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.9em}td,th{border:1px solid #ccc;"
              "padding:.25em .5em;vertical-align:top;text-align:left}th{background:#f2f2f2}h1{font-size:1.5em}"
              "code{background:#f4f4f4}")


def render_blocks_html(blocks: list[tuple]) -> str:
    """The blocks as HTML, their markdown (`code`, **strong**) rendered as analysis.md's reader would see it."""
    text = inline_html
    out = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
           f"<title>{html.escape(blocks[0][1])}</title><style>{HTML_STYLE}</style></head><body>"]
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2", "h3"):
            out.append(f"<{kind}>{text(block[1])}</{kind}>")
        elif kind == "p":
            out.append(f"<p>{text(block[1])}</p>")
        elif kind == "table":
            out.append("<table><tr>" + "".join(f"<th>{text(h)}</th>" for h in block[1]) + "</tr>" +
                       "".join("<tr>" + "".join(f"<td>{text(c)}</td>" for c in row) + "</tr>" for row in block[2])
                       + "</table>")
        elif kind == "list":
            out.append("<ul>" + "".join(f"<li>{text(item)}</li>" for item in block[1]) + "</ul>")
    return "\n".join(out + ["</body></html>", ""])


def render_md(analysis: dict) -> str:
    return render_blocks_md(report_blocks(analysis))


def render_headline(analysis: dict) -> str:
    """The lines printed at the end of a run: values kept, instructions retained and gate failures per regime."""
    cov = analysis["coverage"]
    partial = "" if analysis["complete"] else f", PARTIAL: {cov['complete_cells']} of {cov['expected_cells']} cells"
    lines = [f"{PROTOCOL_ID} (EXPLORATORY" + (", SIMULATED" if analysis["simulated"] else "") + partial + "): "
             f"{len(analysis['sessions'])} sessions, {sum(s['values'] for s in analysis['sessions'])} exact values"]
    for r in analysis["regimes"]:
        kept, ins = analysis["kept"].get(r, rate_summary(0, 0)), analysis["instructions"].get(r, rate_summary(0, 0))
        gate = analysis["gate"].get(r)
        lines.append(f"  {r}: values kept {fmt_interval(kept)}; instructions retained {fmt_interval(ins)}" +
                     (f"; gate fails {gate['fail']}/{gate['states']} states" if gate else ""))
    return "\n".join(lines)


LOST_CSV_FIELDS = ("regime", "model", "variant", "session", "kind", "value", "lost as", "the state wrote", "said in",
                   "segment", "sentence")


def render_lost_csv(analysis: dict) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(LOST_CSV_FIELDS)
    for regime, rows in analysis["lost_values"].items():
        for x in rows:
            writer.writerow([spreadsheet_safe("" if v is None else v) for v in (
                regime, x["model"], x["variant"], x["session"], x["kind"], x["value"], x["class"], x["instead"],
                x["source"], x["segment"], x["sentence"])])
    return buffer.getvalue()


def report_html(results: dict, analysis: dict, figures: list) -> str:
    """report.html (Study.report.report_html): the same blocks as analysis.md, as HTML."""
    return render_blocks_html(report_blocks(analysis))


def write_outputs(run_dir: Path, results: dict) -> list[Path]:
    """report.html and lost.csv beside results.json when the bank is scored, from the analysis of this same bank
    (marked PARTIAL while cells are missing), as protocol/SESSIONS.md section 6 says; the report is the one its
    Report writes again when the bank is analysed."""
    analysis = analyze(results)
    write_atomic(run_dir / "report.html", report_html(results, analysis, []).encode("utf-8"))
    write_atomic(run_dir / "lost.csv", render_lost_csv(analysis).encode("utf-8"))
    return [run_dir / "report.html", run_dir / "lost.csv"]
