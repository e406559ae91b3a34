"""Build the labelled sets (values.json, instructions.json, failed_steps.json, state_claims.json, statuses.json) from the
hand-written sources in src/, check every label against its text, and assign the dev / test split.

    python3 build.py            # writes the four JSON files beside this script and prints the counts
    python3 build.py --check    # checks only, writes nothing; exits 1 when a JSON file is not what its sources build

Standard library only. The split is a seeded shuffle of the units (a snippet, a paraphrase group or a scenario),
then a greedy walk that puts each unit in the half that leaves the label counts of the two halves closest (see
SPLIT_METHOD). Same seed, same sources: same split.
"""
from __future__ import annotations

import collections
import json
import random
import re
import sys

sys.dont_write_bytecode = True
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "src"))

import failed_steps_src  # noqa: E402
import instructions_heldout2_src  # noqa: E402
import instructions_src  # noqa: E402
import state_claims_src  # noqa: E402
import statuses_src  # noqa: E402
import values_heldout2_src  # noqa: E402
import values_src  # noqa: E402

SEED = 20250330                      # recorded in every file's header and the README
SPLIT_METHOD = ("units (one snippet, or every snippet of a paraphrase group or a scenario) sorted by key, shuffled "
                "with random.Random(SEED).shuffle, then taken in that order, each put in the half (dev or test) "
                "that leaves the smaller sum over stratum labels of (dev count - test count)^2; ties go to the half "
                "that leaves the sizes closer, then to dev")

VALUE_KINDS = ("amount", "id", "date", "datetime", "time", "version", "port", "count", "number", "percentage",
               "size", "duration", "path", "url", "email", "host", "ip", "hash", "branch", "code", "line", "phone",
               "address")
NOT_VALUE_WHY = ("label", "command", "algorithm", "host_fragment", "secret", "stack_line", "restatement",
                 "part_of_value", "incidental", "example", "code_literal", "name_with_digits", "pid_or_address")
OUTCOMES = ("succeeded", "failed", "denied")
CLAIM_GATE_CATEGORY = {"faithful": None, "false_success_claim": "status", "contradicts_instruction": "obligation",
                       "invented_instruction": "obligation", "changed_value": "value"}
INSTRUCTION_CASES = ("standing", "revocation", "correction", "one_off_exception", "dismissal", "narrative",
                     "question", "one_off", "quoted_rule", "complaint", "feature_request", "permission")


class LabelError(Exception):
    pass


def need(condition: bool, message: str) -> None:
    if not condition:
        raise LabelError(message)


# --- values ------------------------------------------------------------------------------------------------------
def build_values(items: list | None = None, prefix: str = "v") -> list[dict]:
    out = []
    for n, item in enumerate(values_src.ITEMS if items is None else items, 1):
        sid, text = f"{prefix}{n:03d}", item["text"]
        values, not_values = [], []
        for spec in item["values"]:
            value_text, kind, referent = spec[:3]
            extra = spec[3] if len(spec) > 3 else {}
            need(kind in VALUE_KINDS, f"{sid}: unknown kind {kind!r}")
            need(value_text in text, f"{sid}: value {value_text!r} is not in the text")
            for also in extra.get("also", []):
                need(also in text, f"{sid}: restatement {also!r} is not in the text")
            values.append({"text": value_text, "kind": kind, "referent": referent,
                           "current": extra.get("current", True), "restatements": extra.get("also", []),
                           **({"ambiguous": True} if extra.get("ambiguous") else {})})
            for also in extra.get("also", []):
                not_values.append({"text": also, "why": "restatement", "of": value_text})
        for spec in item["not_values"]:
            nv_text, why = spec[:2]
            need(why in NOT_VALUE_WHY, f"{sid}: unknown why {why!r}")
            need(nv_text in text, f"{sid}: not-value {nv_text!r} is not in the text")
            not_values.append({"text": nv_text, "why": why, **({"note": spec[2]} if len(spec) > 2 else {})})
        need(len({v["text"] for v in values}) == len(values), f"{sid}: a value is listed twice")
        uncovered = uncovered_digits(text, [v["text"] for v in values] + [nv["text"] for nv in not_values])
        need(not uncovered, f"{sid}: digits not covered by any value or not-value: {uncovered}")
        out.append({"id": sid, "role": item["role"], "tool": item["tool"], "context": item["context"],
                    "text": text, "labels": {"values": values, "not_values": not_values},
                    "notes": item["notes"]})
    return out


def uncovered_digits(text: str, spans: list[str]) -> list[str]:
    """The words of text holding a digit (or @ or ://) that no listed span covers: every such character must be
    labelled one way or the other, so that a rule's every pick can be scored."""
    covered = [False] * len(text)
    for span in spans:
        for m in re.finditer(re.escape(span), text):
            before, after = text[m.start() - 1:m.start()], text[m.end():m.end() + 1]
            if (before.isalnum() and span[0].isalnum()) or (after.isalnum() and span[-1].isalnum()):
                continue                # a span covers only whole occurrences, not digits inside another token
            for i in range(m.start(), m.end()):
                covered[i] = True
    missing = []
    for m in re.finditer(r"\S+", text):
        if any((c.isdigit() or c == "@") and not covered[i] for i, c in enumerate(text[m.start():m.end()],
                                                                                   m.start())):
            missing.append(m.group(0))
    return missing


# --- instructions -------------------------------------------------------------------------------------------------
def build_instructions(items: list | None = None, prefix: str = "i") -> list[dict]:
    out = []
    for n, item in enumerate(instructions_src.ITEMS if items is None else items, 1):
        sid, text = f"{prefix}{n:03d}", item["text"]
        need(item["case"] in INSTRUCTION_CASES, f"{sid}: unknown case {item['case']!r}")
        for ins in item["instructions"]:
            need(ins["text"] in text, f"{sid}: instruction {ins['text']!r} is not in the turn")
        for old in item["revokes"]:
            need(old in item["context"], f"{sid}: revokes {old!r}, which is not in its context")
        for fix in item["corrects"]:
            need(fix["new"] in text and fix["old"] in text, f"{sid}: correction values not in the turn")
        need(not (item["case"] == "standing" and not item["instructions"]), f"{sid}: standing with no instruction")
        out.append({"id": sid, "text": text, "context": item["context"],
                    "labels": {"standing": bool(item["instructions"]), "instructions": item["instructions"],
                               "case": item["case"], "revokes": item["revokes"], "corrects": item["corrects"]},
                    "group": item["group"], "ambiguous": item["ambiguous"], "notes": item["notes"]})
    return out


# --- failed steps -------------------------------------------------------------------------------------------------
def build_steps() -> list[dict]:
    out = []
    for n, item in enumerate(failed_steps_src.ITEMS, 1):
        sid = f"f{n:03d}"
        need(item["outcome"] in OUTCOMES, f"{sid}: unknown outcome {item['outcome']!r}")
        need(isinstance(item["arguments"], dict) and item["result"] is not None, f"{sid}: bad call")
        out.append({"id": sid, "tool": item["tool"], "arguments": item["arguments"], "result": item["result"],
                    "is_error": item["is_error"],
                    "labels": {"outcome": item["outcome"], "reason": item["reason"],
                               "reason_class": item["reason_class"]},
                    "ambiguous": item["ambiguous"], "notes": item["notes"]})
    return out


# --- state claims -------------------------------------------------------------------------------------------------
def build_claims() -> list[dict]:
    out, n = [], 0
    names = [s["scenario"] for s in state_claims_src.SCENARIOS]
    need(len(names) == len(set(names)), "scenario names repeat")
    for scenario in state_claims_src.SCENARIOS:
        for ins in scenario["instructions"]:
            words = set(re.findall(r"[a-z]+", ins.lower()))
            need(len(words & set(re.findall(r"[a-z]+", scenario["source"].lower()))) >= len(words) // 2,
                 f"{scenario['scenario']}: instruction {ins!r} does not come from its source")
        for claim in scenario["claims"]:
            n += 1
            sid = f"g{n:03d}"
            label = claim["label"]
            need(label in CLAIM_GATE_CATEGORY, f"{sid}: unknown label {label!r}")
            need(all(a in CLAIM_GATE_CATEGORY and a != label for a in claim["also"]), f"{sid}: bad `also`")
            out.append({"id": sid, "scenario": scenario["scenario"], "source": scenario["source"],
                        "instructions": scenario["instructions"], "steps": scenario["steps"],
                        "sentence": claim["sentence"],
                        "labels": {"label": label, "also": claim["also"], "should_flag": label != "faithful",
                                   "case": claim["case"], "gate_category": CLAIM_GATE_CATEGORY[label]},
                        "notes": claim["notes"]})
    return out


# --- statuses -----------------------------------------------------------------------------------------------------
def build_statuses() -> list[dict]:
    """Pairs (a short history, a summary of it) with one item's status in the summary (issue 43, point 2)."""
    out = []
    for n, pair in enumerate(statuses_src.PAIRS, 1):
        sid, kind, history = f"s{n:03d}", pair["kind"], pair["history"]
        need(kind in statuses_src.STATUSES and pair["status"] in statuses_src.STATUSES[kind],
             f"{sid}: unknown kind or status {kind!r} {pair['status']!r}")
        need(all(turn["role"] in statuses_src.ROLES for turn in history), f"{sid}: unknown role")
        said = [t["text"] for t in history if kind != "instruction" or t["role"] == "user"]
        item = pair["item"] if kind != "step" else "$ " + pair["item"]
        need(any(item in text for text in said), f"{sid}: item {pair['item']!r} is not in the history")
        need(pair["status"] != "changed" or (pair["instead"] or "") in pair["summary"],
             f"{sid}: changed, but what the summary gives instead is not in it")
        out.append({"id": sid, "group": pair["group"], "kind": kind, "history": history, "item": pair["item"],
                    "summary": pair["summary"],
                    "labels": {"status": pair["status"], "instead": pair["instead"]},
                    "ambiguous": pair["ambiguous"], "notes": pair["notes"]})
    return out


# --- the split ----------------------------------------------------------------------------------------------------
def assign_split(snippets: list[dict], unit_of, strata_of) -> dict:
    """Put every snippet in dev or test (see SPLIT_METHOD); returns the per-half counts of the strata."""
    units: dict[str, list[dict]] = collections.OrderedDict()
    for s in snippets:
        units.setdefault(unit_of(s), []).append(s)
    keys = sorted(units)
    random.Random(SEED).shuffle(keys)
    counts = {"dev": collections.Counter(), "test": collections.Counter()}
    sizes = {"dev": 0, "test": 0}
    for key in keys:
        members = units[key]
        strata = collections.Counter(st for s in members for st in strata_of(s))

        def imbalance(half: str) -> tuple:
            after = {h: counts[h] + (strata if h == half else collections.Counter()) for h in counts}
            size = {h: sizes[h] + (len(members) if h == half else 0) for h in sizes}
            labels = set(after["dev"]) | set(after["test"])
            return (sum((after["dev"][x] - after["test"][x]) ** 2 for x in labels),
                    abs(size["dev"] - size["test"]), half != "dev")
        half = min(("dev", "test"), key=imbalance)
        for s in members:
            s["split"] = half
        counts[half].update(strata)
        sizes[half] += len(members)
    return {h: dict(sorted(c.items())) for h, c in counts.items()}


def ordered(snippet: dict) -> dict:
    """id and split first, for a reader scanning the file."""
    return {"id": snippet["id"], "split": snippet["split"], **{k: v for k, v in snippet.items()
                                                               if k not in ("id", "split")}}


# Issue 43, point 1: the first test halves of the values and instructions sets were seen by a round of rules (a
# rule change made when dev already scored 1.00 matched held-out sentences only). Every snippet of the first sources
# is now dev (its first half is kept as `first_split`), and the held-out half is the second sources, written and
# labelled on 2026-12-06 by a labeller who had not read the rules. Snippets of the second sources that restate a case
# the issue itself names (and that the rules were then fixed for, with tests) were looked at, so they are dev too.
HELD_OUT_2 = "written and labelled on 2026-12-06 by a labeller who had not read the rules; appended, never tuned on"
MOVED_TO_DEV = {
    "hv": ("2.5k", "85 %", "7 workers", "1.5 minutes"),
    "hi": ("freeze",),
}


def second_half(build, items: list, prefix: str) -> list[dict]:
    """The second sources' snippets: held out (split test), except those holding a case issue 43 names."""
    out = build(items, prefix)
    for s in out:
        named = [w for w in MOVED_TO_DEV[prefix] if w in s["text"] or w in (s.get("context") or "")]
        s["first_split"] = "held-out-2"
        s["split"] = "dev" if named else "test"
        if named:
            s["moved_to_dev"] = f"restates a case issue 43 names ({named[0]!r}), so it was looked at"
    return out


FILES = {
    "values.json": {
        "build": build_values, "unit": lambda s: s["id"],
        "second": lambda: second_half(build_values, values_heldout2_src.ITEMS, "hv"),
        "strata": lambda s: [s["role"], "has_values" if s["labels"]["values"] else "no_values"],
        "description": "Snippets of turns and the exact values a compacted state must keep (one fact, one value), "
                       "with the tokens that must not be taken as values. See README.md."},
    "instructions.json": {
        "build": build_instructions, "unit": lambda s: s["group"] or s["id"],
        "second": lambda: second_half(build_instructions, instructions_heldout2_src.ITEMS, "hi"),
        "strata": lambda s: ["standing" if s["labels"]["standing"] else "none"],
        "description": "User turns labelled with the standing instructions they give (if any), revocations and "
                       "corrections. See README.md."},
    "failed_steps.json": {
        "build": build_steps, "unit": lambda s: s["id"], "strata": lambda s: [s["labels"]["outcome"]],
        "description": "Tool calls and their results labelled succeeded, failed or denied, with the reason. "
                       "See README.md."},
    "state_claims.json": {
        "build": build_claims, "unit": lambda s: s["scenario"], "strata": lambda s: [s["labels"]["label"]],
        "description": "Pairs of (source excerpt with its instructions and step outcomes, one sentence of a "
                       "compacted state) labelled faithful or by the defect the sentence carries. See README.md."},
    "statuses.json": {
        "build": build_statuses, "unit": lambda s: s["group"],
        "strata": lambda s: [f"{s['kind']}:{s['labels']['status']}"],
        "description": "Pairs of (a short history, a summary written of it later) labelled with the status of one item "
                       "of the history (a value, a standing instruction, a failed or refused step) in the summary, "
                       "written by a labeller who had not read the rules. See README.md."},
}


def main(argv: list[str]) -> int:
    check_only = "--check" in argv
    try:
        built = {name: spec["build"]() for name, spec in FILES.items()}
        second = {name: spec["second"]() for name, spec in FILES.items() if "second" in spec}
    except LabelError as err:
        print(f"label error: {err}", file=sys.stderr)
        return 1
    for name, snippets in built.items():
        spec = FILES[name]
        per_half = assign_split(snippets, spec["unit"], spec["strata"])
        split = {"seed": SEED, "method": SPLIT_METHOD, "strata_per_half": per_half}
        if name in second:
            for s in snippets:
                s["first_split"], s["split"] = s["split"], "dev"
            snippets = snippets + second[name]
            split = {"seed": SEED, "method": SPLIT_METHOD, "first_strata_per_half": per_half,
                     "held_out_2": HELD_OUT_2, "strata_per_half": strata_per_half(snippets, spec["strata"])}
            per_half = split["strata_per_half"]
        body = {"format": f"ccl-labelled-{name[:-5].replace('_', '-')}-1", "description": spec["description"],
                "split": split,
                "counts": counts_of(name, snippets),
                "snippets": [ordered(s) for s in snippets]}
        print(f"{name}: {len(snippets)} snippets; {json.dumps(body['counts'])}; split {json.dumps(per_half)}")
        text = json.dumps(body, indent=1, ensure_ascii=False) + "\n"
        if not check_only:
            (HERE / name).write_text(text, encoding="utf-8")
        elif not (HERE / name).is_file() or (HERE / name).read_text(encoding="utf-8") != text:
            print(f"{name} is not what its sources build: run python3 build.py", file=sys.stderr)
            stale = True
    return 1 if check_only and "stale" in locals() else 0


def strata_per_half(snippets: list[dict], strata_of) -> dict:
    counts = {"dev": collections.Counter(), "test": collections.Counter()}
    for s in snippets:
        counts[s["split"]].update(strata_of(s))
    return {h: dict(sorted(c.items())) for h, c in counts.items()}


def counts_of(name: str, snippets: list[dict]) -> dict:
    c: collections.Counter = collections.Counter()
    if name == "values.json":
        c["snippets"] = len(snippets)
        for s in snippets:
            c["role:" + s["role"]] += 1
            c["values"] += len(s["labels"]["values"])
            c["not_values"] += len(s["labels"]["not_values"])
            for v in s["labels"]["values"]:
                c["kind:" + v["kind"]] += 1
            for nv in s["labels"]["not_values"]:
                c["why:" + nv["why"]] += 1
            c["snippets_without_values"] += not s["labels"]["values"]
    elif name == "instructions.json":
        for s in snippets:
            c["standing" if s["labels"]["standing"] else "no_standing_instruction"] += 1
            c["case:" + s["labels"]["case"]] += 1
            c["instructions"] += len(s["labels"]["instructions"])
            c["ambiguous"] += s["ambiguous"]
            c["in_paraphrase_groups"] += bool(s["group"])
    elif name == "failed_steps.json":
        for s in snippets:
            c[s["labels"]["outcome"]] += 1
            c["class:" + s["labels"]["reason_class"]] += 1
            c["ambiguous"] += s["ambiguous"]
    elif name == "statuses.json":
        for s in snippets:
            c[f"{s['kind']}:{s['labels']['status']}"] += 1
            c["ambiguous"] += s["ambiguous"]
        c["scenarios"] = len({s["group"] for s in snippets})
    else:
        for s in snippets:
            c[s["labels"]["label"]] += 1
            c["case:" + s["labels"]["case"]] += 1
        c["scenarios"] = len({s["scenario"] for s in snippets})
    return dict(sorted(c.items()))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
