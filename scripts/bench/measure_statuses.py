"""The statuses the sessions study and the audit print, measured against hand labels (issue 43,
point 2; protocol/SESSIONS.md section 3.5): tests/labelled/statuses.json holds pairs of a short
history and a summary written of it later, each labelled with what the summary does with one item
of the history (a value, a standing instruction, a failed or refused step). The rules find the
item in the history (truth.ground_truth, as a run does) and judge the summary (truth.judge_state,
the one function both reports call); this script compares their status with the label, per half.

    python3 scripts/bench/measure_statuses.py               # dev and held-out, as tables
    python3 scripts/bench/measure_statuses.py --split dev   # one half
    python3 scripts/bench/measure_statuses.py --show 30     # and the first 30 disagreements

The rules' words mapped to the labels': a value kept, reformatted, changed or dropped, and `former`
where the history itself superseded it (truth marks it not current) and the summary keeps it; an
instruction present (the labels' kept), contradicted or absent, and `withdrawn` where the rules
took it back themselves (not judged); a step reported, claimed done or absent, and
`resolved_later` where the rules saw a later call resolve it (not judged). An item the rules do not
find in the history at all is `not found`: a miss of detection, counted apart from the statuses.
Printed per kind: the share of found items whose status is the label's (agreement), each status's
precision and recall, and the items not found. Ambiguous pairs are left out. Standard library
only; writes nothing.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from pathlib import Path

sys.dont_write_bytecode = True
REPO = Path(__file__).resolve().parents[2]           # scripts/bench/ -> the repository
sys.path.insert(0, str(REPO / "scripts"))

from pilot.studies.sessions import truth  # noqa: E402

LABELLED = REPO / "tests" / "labelled" / "statuses.json"
NOT_FOUND = "not found"
RULE_WORDS = {"present": "kept", "claimed done": "claimed_done"}
HALVES = {"dev": "dev", "held-out": "test"}


def load(half: str) -> list[dict]:
    pairs = json.loads(LABELLED.read_text(encoding="utf-8"))["snippets"]
    return [p for p in pairs if half == "all" or p["split"] == HALVES.get(half, half)]


def history_turns(history: list[dict]) -> list[dict]:
    """The labelled history as the readers give a session: an assistant turn "$ COMMAND" is a shell
    call, and the tool result after it is that call's result (the log's error flag unknown: the
    rules read the text, as they do for a format that carries none)."""
    turns, call = [], None
    for n, turn in enumerate(history, 1):
        text = turn["text"]
        if turn["role"] == "assistant" and text.startswith("$ "):
            call = {"id": f"call_{n}", "name": "Bash", "input": {"command": text[2:].strip()}}
            turns.append({"role": "assistant", "text": "", "calls": [call]})
        elif turn["role"] == "tool_result":
            turns.append({"role": "tool", "tool": "Bash" if call else "tool", "call": call,
                          "text": text, "error": False})
            call = None
        else:
            turns.append({"role": turn["role"], "text": text})
    return turns


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def rules_status(pair: dict) -> str:
    """What the rules say of the pair's item: the label's vocabulary, or NOT_FOUND."""
    turns = history_turns(pair["history"])
    found = truth.ground_truth(turns)
    judged = truth.judge_state(found, pair["summary"])
    item = pair["item"]
    if pair["kind"] == "value":
        fact = next((f for f in found["values"] if item == f["text"] or item in f["forms"]), None)
        if fact is None:
            return NOT_FOUND
        status = next(j["status"] for j in judged["values"] if j["id"] == fact["id"])
        return "former" if not fact["current"] and status in ("kept", "reformatted") else status
    if pair["kind"] == "instruction":
        want = words(item)
        def overlap(instruction: dict) -> float:
            theirs = words(instruction["text"])
            return len(want & theirs) / max(1, len(want | theirs))
        best = max(found["instructions"], default=None, key=overlap)
        if best is None or len(want & words(best["text"])) * 2 < len(want):
            return NOT_FOUND
        if best.get("revoked_turn"):
            return "withdrawn"
        status = next(j["status"] for j in judged["instructions"] if j["id"] == best["id"])
        return RULE_WORDS.get(status, status)
    # a step is the result of the call whose command is the item (step["turn"] is 1-based)
    step = next((s for s in found["steps"] if ((turns[s["turn"] - 1].get("call") or {}).get(
        "input") or {}).get("command") == item), None)
    if step is None:
        return NOT_FOUND
    if step["status"] == "done":
        return "resolved_later"
    status = next(j["status"] for j in judged["steps"] if j["id"] == step["id"])
    return RULE_WORDS.get(status, status)


def measure(half: str) -> tuple[dict, list[str]]:
    """Per kind: {pairs, found, agree, per status {label, said, both}} and the disagreements."""
    out: dict = {}
    wrong = []
    for pair in load(half):
        if pair["ambiguous"]:
            continue
        kind, label = pair["kind"], pair["labels"]["status"]
        said = rules_status(pair)
        tally = out.setdefault(kind, {"pairs": 0, "found": 0, "agree": 0,
                                      "statuses": collections.defaultdict(collections.Counter)})
        tally["pairs"] += 1
        tally["statuses"][label]["label"] += 1
        if said == NOT_FOUND:
            wrong.append(f"{pair['id']} {kind} {pair['item'][:50]!r}: labelled {label}, not found")
            continue
        tally["found"] += 1
        tally["statuses"][said]["said"] += 1
        if said == label:
            tally["agree"] += 1
            tally["statuses"][label]["both"] += 1
        else:
            wrong.append(f"{pair['id']} {kind} {pair['item'][:50]!r}: labelled {label}, rules "
                         f"say {said}")
    return out, wrong


def ratio(k: int, n: int) -> str:
    return f"{k / n:.2f} ({k}/{n})" if n else "-"


def render(half: str, figures: dict) -> str:
    lines = [f"{half}:", "", "| kind | pairs | found | status agrees (of found) | per status: "
             "precision / recall |", "|---|---|---|---|---|"]
    for kind in ("value", "instruction", "step"):
        t = figures.get(kind)
        if not t:
            continue
        per = "; ".join(f"{s} {ratio(c['both'], c['said'])} / {ratio(c['both'], c['label'])}"
                        for s, c in sorted(t["statuses"].items()) if c["label"] or c["said"])
        lines.append(f"| {kind} | {t['pairs']} | {ratio(t['found'], t['pairs'])} | "
                     f"{ratio(t['agree'], t['found'])} | {per} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("dev", "held-out", "both", "all"), default="both")
    parser.add_argument("--show", type=int, default=0, help="print the first N disagreements")
    args = parser.parse_args(argv)
    for half in (("dev", "held-out") if args.split == "both" else (args.split,)):
        figures, wrong = measure(half)
        print(render(half, figures))
        for line in wrong[:args.show]:
            print("  " + line)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
