"""The gate's tables over a run: each compacted state's verdict as gate.csv, the share of states
failing per regime, and whether a final state's FAIL predicts a corrupted answer downstream (a
one-sided Fisher test). The checks themselves are the text rules' (rules/gate.py); this module only
counts and renders what they found. """
from __future__ import annotations

import csv
import io

from .reports import fmt_p, fmt_rate, md_table, spreadsheet_safe
from .rules.gate import GATE_CATEGORIES
from .rules.ledger import RUN_GATE_MAX_OMISSIONS
from .stats import ALPHA, fisher_one_sided, rate_summary


GATE_CSV_FIELDS = ("model", "regime", "episode", "budget", "sample", "checkpoint", "final",
                   "verdict", "blocking",
                   *GATE_CATEGORIES, "omitted", "downstream_corrupted", "first_finding")


def gate_prediction(rows: list[dict]) -> dict:
    """Does a final state's FAIL predict at least one corrupted downstream answer? 2x2, precision,
    recall; these two (and the corrupted share among PASS) only where there are failing and passing
    states and corrupted and clean answers to tell apart, since otherwise they are what the data
    forces (100% for a model that answered nothing), not a measure of the gate."""
    finals = [r for r in rows if r["final"] and r["downstream_corrupted"] is not None]
    tp = sum(1 for r in finals if r["verdict"] == "FAIL" and r["downstream_corrupted"])
    fp = sum(1 for r in finals if r["verdict"] == "FAIL" and not r["downstream_corrupted"])
    fn = sum(1 for r in finals if r["verdict"] == "PASS" and r["downstream_corrupted"])
    tn = sum(1 for r in finals if r["verdict"] == "PASS" and not r["downstream_corrupted"])
    if not finals:
        verdict, p = "no final states to judge", None
    elif not (tp + fp) or not (fn + tn):
        verdict, p = (
            "cannot tell: every final state "
            + ("fails" if tp + fp else "passes")
            + " the gate, so its verdict cannot separate corrupted from clean answers"
        ), None
    elif not (tp + fn) or not (fp + tn):
        verdict, p = "cannot tell: every final state is " + ("corrupted" if tp
                                                             + fn
                                                             else "clean") + " downstream", None
    else:
        p = fisher_one_sided(tp, fp, fn, tn)
        verdict = "predicts downstream corruption" if p < ALPHA else \
            "does not predict downstream corruption (one-sided Fisher exact p >= 0.05)"
    separable = p is not None
    return {"n": len(finals), "fail_corrupted": tp, "fail_clean": fp, "pass_corrupted": fn,
            "pass_clean": tn,
            "precision": rate_summary(tp, tp + fp) if separable else None,
            "recall": rate_summary(tp, tp + fn) if separable else None,
            "corrupted_if_pass": rate_summary(fn, fn + tn) if separable else None, "fisher_p": p,
            "verdict": verdict}


def gate_summary(rows: list[dict]) -> dict:
    """What results.json keeps of the gate: counts per regime and category, and the predictive
    power."""
    by_regime = {}
    for regime in dict.fromkeys(r["regime"] for r in rows):
        mine = [r for r in rows if r["regime"] == regime]
        finals = [r for r in mine if r["final"]]
        by_regime[regime] = {
            "states": rate_summary(sum(1 for r in mine if r["verdict"] == "FAIL"), len(mine)),
            "final_states": rate_summary(sum(1 for r in finals if r["verdict"] == "FAIL"),
                                         len(finals)),
            "by_category": {c: sum(1 for r in mine if r[c]) for c in GATE_CATEGORIES}}
    return {"max_omissions": RUN_GATE_MAX_OMISSIONS, "n_states": len(rows), "by_regime": by_regime,
            "prediction": gate_prediction(rows)}


def render_gate_csv(rows: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=GATE_CSV_FIELDS, lineterminator="\n",
                            extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: spreadsheet_safe("" if row.get(k) is None else row.get(k,
            "")) for k in GATE_CSV_FIELDS})
    return buffer.getvalue()


def render_gate_section(analysis: dict) -> list[str]:
    """analysis.md's section on the release gate over every compacted state of a run, and whether
    its verdict on a final state predicts a corrupted downstream answer (exploratory; per-state rows
    in gate.csv)."""
    gate = analysis.get("gate")
    if not gate:
        return []
    out = ["## Release gate on compacted states (exploratory)", "",
           "Every compacted state (each checkpoint, not only the final one) checked against the "
           "values its segments had named so far, with no model call; omissions allowed before a "
           f"state fails: {gate['max_omissions']}. "
           f"One row per state in gate.csv.", ""]

    def rate(summary: dict) -> str:
        return fmt_rate(summary) if summary["n"] else "none yet"

    rows = [[regime, rate(r["states"]), rate(r["final_states"])] +
            [r["by_category"][c] for c in GATE_CATEGORIES] for regime,
            r in gate["by_regime"].items()]
    out += [md_table(["regime", "states failing", "final states failing", *GATE_CATEGORIES], rows),
            "",
            "Category columns count states with at least one blocking finding of that kind.", ""]
    pred = gate["prediction"]
    out += ["### Does the gate predict downstream corruption?", "",
            "Final states only; corrupted = at least one of the cell's answers not correct. 95% "
            "Wilson intervals.", "",
            md_table(["final state", "corrupted downstream", "clean downstream"],
                     [["FAIL", pred["fail_corrupted"], pred["fail_clean"]],
                      ["PASS", pred["pass_corrupted"], pred["pass_clean"]]]), "",
            *([f"- precision (corrupted among FAIL): {rate(pred['precision'])}",
               f"- recall (FAIL among corrupted): {rate(pred['recall'])}",
               f"- corrupted among PASS: {rate(pred['corrupted_if_pass'])}"]
               if pred.get("precision") else
              ["- precision and recall: not shown, as there are no failing and passing states with "
               "corrupted and clean answers to tell apart"]),
            "- one-sided Fisher exact p: "
            f"{'n/a' if pred['fisher_p'] is None else fmt_p(pred['fisher_p'])}",
            f"- **verdict: the gate {pred['verdict']}**"
            if not pred["verdict"].startswith(("cannot", "no "))
            else f"- **verdict: {pred['verdict']}**", ""]
    return out
