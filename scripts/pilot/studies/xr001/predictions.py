"""XR-001, predictions (protocol/PROTOCOL.md section 3): the pre-registered verdicts P1, P2, P3
and the falsifier, read from the analysis record alone, each with the numbers behind it and the
validity guards that qualify it."""
from __future__ import annotations

from ...reports import fmt_p, pct
from ...stats import ALPHA


RIGHT_READERS = {"sentence": "the number nearest the name within the first sentence that names it "
                 "and holds one",
                 "nearest": "the paper's crude heuristic, the number nearest the name's first "
                 "occurrence anywhere",
                 "lines": "exact `NAME = N` lines"}


def evaluate_predictions(analysis: dict) -> list[dict]:
    """The pre-registered verdicts (PROTOCOL.md section 3), each with the numbers behind it and,
    under "guards", every validity guard that failed or holds only in part and qualifies it. Models
    that fail the ceiling check are left out and named; with none left, every verdict is withheld.
    The falsifier is read only at a matched budget (amendment of 2026-12-01)."""
    verdicts = []
    regimes = analysis["regimes"]
    informative = analysis["informative_models"]
    excluded = [m for m in analysis["models"] if m not in informative]
    excluded_note = ([f"left out (failed the ceiling check): {', '.join(excluded)}"] if excluded
                     else [])
    ceiling_guard = [f"{', '.join(excluded)} failed the ceiling check and "
                     f"{'is' if len(excluded) == 1 else 'are'} "
                     f"left out"] if excluded else []
    withheld = analysis["label"] == "UNINFORMATIVE"
    if {"R0", "R1", "R2"} <= set(regimes):
        checks, all_hold = [], bool(informative)
        for model in informative:
            rates = {r: analysis["corruption"][model][r]["rate"] for r in ("R0", "R1", "R2")}
            holds = None not in rates.values() and rates["R0"] <= rates["R2"] < rates["R1"]
            all_hold = all_hold and holds
            checks.append(f"{model}: R0 {pct(rates['R0'])} <= R2 {pct(rates['R2'])} < R1 "
                          f"{pct(rates['R1'])} {'holds' if holds else 'fails'}")
        verdicts.append({"id": "P1", "claim": "corruption ordering R0 <= R2 < R1 in every model",
                         "verdict": "confirmed" if all_hold else "not confirmed",
                         "evidence": checks + excluded_note, "guards": ceiling_guard})
    if {"R1", "R2"} <= set(regimes):
        # read on the informative models, as P1 and F are (amendment of 2026-12-03)
        by_model = analysis["classes_by_model"]
        sig1, sig2 = (sum(by_model[m][r]["off_by_one"]
                          + by_model[m][r]["conflation"] for m in informative)
                      for r in ("R1", "R2"))
        verdicts.append({"id": "P2", "claim": "the incident signature (off_by_one + conflation) is "
                         "more frequent under prose (R1) than under typed state (R2), pooled over "
                         "the informative models",
                         "verdict": "confirmed" if informative and sig1 > sig2 else "not confirmed",
                         "evidence": [f"signature R1 {sig1} vs R2 {sig2} (probe counts pooled over "
                                      f"{', '.join(informative) or 'no model'})"] + excluded_note,
                         "guards": ceiling_guard})
        p3 = evaluate_p3(analysis["retention"]["by_regime"])
        if p3:
            verdicts.append(p3)
        pooled = analysis["mcnemar"]["pooled"]
        rejected = pooled["p"] < ALPHA and pooled["direction"] == "R2 better"
        directions = [f"{m}: {s['direction']} (b = {s['b']}, c = {s['c']}, p = {fmt_p(s['p'])})"
                      for m, s in analysis["mcnemar"]["by_model"].items() if m in informative]
        # the direction is checked per model (amendment of 2026-12-03): an informative model
        # significantly better
        # under prose is a reversal, and the hypothesis is not supported for it, whatever the pool
        # says
        reversals = [f"{m} is significantly better under prose (b = {s['b']}, c = {s['c']}, p = "
                     f"{fmt_p(s['p'])})"
                     for m, s in analysis["mcnemar"]["by_model"].items()
                     if m in informative and s["p"] < ALPHA and s["direction"] == "R1 better"]
        guard = analysis.get("budget_guard") or {"status": "matched"}
        verdict = "rejected" if rejected else "not rejected"
        test = (f"pooled b = {pooled['b']}, c = {pooled['c']}, p = {fmt_p(pooled['p'])}, "
                f"{pooled['direction']}")
        if reversals:
            verdict = "not rejected: " + "; ".join(reversals)
        if guard["status"] == "unmatched":
            verdict, test = ("not judged: the budgets were not matched",
                             test + " (at unmatched budgets)")
        elif guard["status"] == "unknown":
            verdict = "not judged: the matched budget was not checked"
        verdicts.append({"id": "F", "claim": "falsifier: prose is as good as typed state at "
                         f"matched budget (pooled exact McNemar, two-sided, alpha = {ALPHA}; a "
                         "model significantly better under "
                         f"prose keeps it from being rejected)", "verdict": verdict,
                         "evidence": [test] + directions + excluded_note +
                                     ([guard["text"]] if guard["status"] != "matched" else []),
                         "guards": ceiling_guard + ([guard["text"]] if guard["status"]
                                                    != "matched" else [])})
    if withheld:
        for verdict in verdicts:
            verdict["verdict"] = "withheld"
            verdict["evidence"] = ["UNINFORMATIVE: no model passed the ceiling check"]
            verdict["guards"] = []
    return verdicts


def evaluate_p3(ret: dict) -> dict | None:
    """P3 on the right values of the final states (retention_right), saying which reader it rests
    on; where R1 was read by the sentence-bounded reader, the paper's nearest-number heuristic is
    given beside it."""
    if not ("R1" in ret and "R2" in ret and ret["R1"]["n_entities"] and ret["R2"]["n_entities"]):
        return None
    r1, r2 = ret["R1"], ret["R2"]
    share = lambda count, agg: count / agg["n_entities"]   # noqa: E731
    confirmed = share(r2["right"], r2) > share(r1["right"], r1)
    evidence = [f"values retained with the right value: R2 {r2['right']}/{r2['n_entities']} = "
                f"{pct(share(r2['right'], r2))}, R1 {r1['right']}/{r1['n_entities']} = "
                f"{pct(share(r1['right'], r1))}; R1 read by {RIGHT_READERS[r1['right_reader']]}"]
    if r1["right_reader"] == "sentence":
        heuristic = share(r1["consistent_correct"], r1)
        other = "confirmed" if share(r2["right"], r2) > heuristic else "not confirmed"
        evidence.append(f"the paper's nearest-number heuristic reads R1 {r1['consistent_correct']}/"
                        f"{r1['n_entities']} = {pct(heuristic)}" +
                        ("" if (other == "confirmed") == confirmed else ", on which P3 would be "
                         f"{other}"))
    for regime, agg in (("R1", r1), ("R2", r2)):
        if agg["over_retained"]:
            evidence.append(f"{regime}: {agg['over_retained']} final state(s) scored with more "
                            "right values than names found (the bank's own count, inconsistent); "
                            "each is read as its names found")
    return {"id": "P3", "claim": "exploratory: write-time retention of correct entity values is "
            "higher in the typed "
            "final states (R2) than in the prose ones (R1)", "verdict": "confirmed" if confirmed
            else "not confirmed",
            "reader": r1["right_reader"], "evidence": evidence, "guards": []}
