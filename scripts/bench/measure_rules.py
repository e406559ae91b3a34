"""Precision and recall of the sessions study's ground-truth rules and of the release gate on the
hand-labelled sets in tests/labelled/ (protocol/SESSIONS.md section 3.5), per half: the rules were
tuned on `dev`; `test` is held out, and its figures are the ones SESSIONS.md prints.

    python3 scripts/bench/measure_rules.py               # both halves, as a table
    python3 scripts/bench/measure_rules.py --split test  # one half
    python3 scripts/bench/measure_rules.py --show 20     # and each rule's first 20 disagreements

How each set is scored (tests/labelled/README.md, "Scoring"):
- values: per snippet, the facts ground_truth takes from it (one per fact) against the labelled
  values. A fact is found when the rule's value is its text or one of its restatements; every
  further value (a second spelling of a fact already found, a fragment, a listed not-value, anything
  else) is a false positive; a value the labels mark ambiguous counts neither way.
- instructions: a user turn is predicted standing when any of its sentences is.
- steps: step_outcome of the call and its result against the labelled outcome (succeeded, failed,
  denied; a refusal by the operating system or a remote service is failed, by the user or the
  harness denied), per outcome and for "not succeeded".
- gate: each sentence alone through check_state, against a ledger built from its scenario (one item
  per failed or denied step, a done item with a receipt for a resolved one, the scenario's
  instructions accepted, no entities); a sentence is flagged when a finding blocks, "is not
  reported" findings aside (a one-sentence state cannot report every failure).
Ambiguous snippets are left out. Standard library only; writes nothing.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

sys.dont_write_bytecode = True
REPO = Path(__file__).resolve().parents[2]           # scripts/bench/ -> the repository
sys.path.insert(0, str(REPO / "scripts"))

from pilot.rules import gate  # noqa: E402
from pilot.studies.sessions import truth  # noqa: E402

LABELLED = REPO / "tests" / "labelled"

RULES = ("values", "instructions", "steps not succeeded", "steps failed", "steps denied",
         "gate flags a defect")


def load(name: str, split: str) -> list[dict]:
    snippets = json.loads((LABELLED / name).read_text(encoding="utf-8"))["snippets"]
    return [s for s in snippets if split == "all" or s["split"] == split]


def figures(tp: int, predicted: int, actual: int) -> dict:
    return {"tp": tp, "predicted": predicted, "actual": actual,
            "precision": tp / predicted if predicted else None,
            "recall": tp / actual if actual else None}


def score_values(snippets: list[dict]) -> tuple[dict, list[str]]:
    tp = fp = fn = 0
    wrong = []
    for s in snippets:
        forms = {form: v for v in s["labels"]["values"] for form in [v["text"], *v["restatements"]]}
        role = {"tool_result": "tool"}.get(s["role"], s["role"])
        turn = {"role": role, "text": s["text"], "calls": [], "tool": s["tool"] or "tool",
                "error": False,
                "call": None}
        found = set()
        for text in dict.fromkeys(f["text"] for f in truth.ground_truth([turn])["values"]):
            v = forms.get(text)
            if v is not None and v.get("ambiguous"):
                continue
            if v is not None and v["text"] not in found:
                found.add(v["text"])
                tp += 1
            else:
                fp += 1
                wrong.append(f"{s['id']} taken: {text!r}")
        for v in s["labels"]["values"]:
            if not v.get("ambiguous") and v["text"] not in found:
                fn += 1
                wrong.append(f"{s['id']} missed: {v['text']!r} ({v['kind']})")
    return figures(tp, tp + fp, tp + fn), wrong


def score_instructions(snippets: list[dict]) -> tuple[dict, list[str]]:
    c = collections.Counter()
    wrong = []
    for s in snippets:
        if s["ambiguous"]:
            continue
        predicted = any(truth.is_standing_instruction(x) for x in truth.split_sentences(s["text"]))
        c[(predicted, s["labels"]["standing"])] += 1
        if predicted != s["labels"]["standing"]:
            wrong.append(f"{s['id']} {'missed' if s['labels']['standing'] else 'taken'}: "
                         f"{s['text'][:90]!r}")
    return figures(c[(True, True)], c[(True, True)] + c[(True, False)],
                   c[(True, True)] + c[(False, True)]), wrong


def score_steps(snippets: list[dict]) -> tuple[dict, list[str]]:
    c = collections.Counter()
    wrong = []
    for s in snippets:
        if s["ambiguous"]:
            continue
        got = truth.step_outcome(s["result"], s["is_error"], s["tool"], s["arguments"])
        got = "succeeded" if got == "ok" else got
        c[(got, s["labels"]["outcome"])] += 1
        if got != s["labels"]["outcome"]:
            wrong.append(f"{s['id']} labelled {s['labels']['outcome']}, rule says {got}: "
                         f"{s['result'][:70]!r}")
    out = {}
    for name, is_it in (("steps not succeeded", lambda o: o != "succeeded"),
                        ("steps failed", lambda o: o == "failed"),
                        ("steps denied", lambda o: o == "denied")):
        out[name] = figures(sum(n for (g, w), n in c.items() if is_it(g) and is_it(w)),
                            sum(n for (g, _), n in c.items() if is_it(g)),
                            sum(n for (_, w), n in c.items() if is_it(w)))
    return out, wrong


def scenario_ledger(snippet: dict) -> dict:
    items = []
    for step in snippet["steps"]:
        if step["outcome"] == "succeeded" and not step["resolved"]:
            continue
        items.append({"name": f"{step['tool']}: {step['step']}"[:80], "match": [step["step"]],
                      "status": "done" if step["resolved"] else step["outcome"],
                      "receipt": "later call" if step["resolved"] else None})
    return gate.normalize_ledger({"entities": {}, "items": items, "allowed_sections": None,
                                  "name_pattern": r"(?!)",
                                  "accepted_instructions": snippet["instructions"],
                                  "max_omissions": 0})


def score_claims(snippets: list[dict]) -> tuple[dict, list[str]]:
    c = collections.Counter()
    wrong = []
    for s in snippets:
        findings = gate.check_state(s["sentence"], scenario_ledger(s), s["source"])
        blocking = [f for f in findings if f["blocking"] and "is not reported" not in f["detail"]]
        predicted, actual = bool(blocking), s["labels"]["should_flag"]
        c[(predicted, actual)] += 1
        if predicted != actual:
            wrong.append(f"{s['id']} [{s['labels']['label']}] {s['sentence'][:80]!r}" +
                         (f" -> {blocking[0]['category']}: {blocking[0]['detail'][:70]}" if blocking
                          else ""))
    return figures(c[(True, True)], c[(True, True)] + c[(True, False)],
                   c[(True, True)] + c[(False, True)]), wrong


def measure(split: str) -> tuple[dict, dict]:
    """Every rule's figures on one half ("dev", "test" or "all"), and its disagreements with the
    labels."""
    results, wrong = {}, {}
    results["values"], wrong["values"] = score_values(load("values.json", split))
    results["instructions"], wrong["instructions"] = score_instructions(load("instructions.json",
        split))
    steps, wrong["steps"] = score_steps(load("failed_steps.json", split))
    results.update(steps)
    results["gate flags a defect"], wrong["gate"] = score_claims(load("state_claims.json", split))
    return results, wrong


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Precision and recall of the sessions rules and "
                                     "the gate on the "
                                                 "labelled sets in tests/labelled/.")
    parser.add_argument("--split", choices=("dev", "test", "all", "both"), default="both")
    parser.add_argument("--show", type=int, default=0, metavar="N", help="print the first N "
                        "disagreements per rule")
    args = parser.parse_args(argv)
    if args.show < 0:
        parser.error("--show takes a whole number >= 0")
    halves = ("dev", "test") if args.split == "both" else (args.split,)
    measured = {half: measure(half) for half in halves}
    print("| rule | " + " | ".join(f"{h} precision | {h} recall" for h in halves) + " |")
    print("|---|" + "---|---|" * len(halves))
    for rule in RULES:
        cells = []
        for half in halves:
            f = measured[half][0][rule]
            cells += [f"{fmt(f['precision'])} ({f['tp']}/{f['predicted']})",
                      f"{fmt(f['recall'])} ({f['tp']}/{f['actual']})"]
        print(f"| {rule} | " + " | ".join(cells) + " |")
    if args.show:
        for half in halves:
            for rule, lines in measured[half][1].items():
                if lines:
                    print(f"\n{half}, {rule}:")
                    print("\n".join("  " + line for line in lines[:args.show]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
