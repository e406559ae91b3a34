"""What the next agent needed, measured on real compactions (issue 40, protocol/SESSIONS.md, the
amendment of 2026-12-06): the needed rows the audit reports for each compaction of the real Claude
Code logs (studies/sessions/audit.py's audit_compaction, the one function the audit itself calls,
so this script cannot drift from it), compared with the hand labels in tests/labelled/compactions/
(the format in its README), per half and per category. Rules are tuned on `dev`; `held-out` is
run once a round of rules is finished.

    python3 scripts/bench/measure_audit.py --split dev            # the half the rules are tuned on
    python3 scripts/bench/measure_audit.py --split dev --show 30  # and the first 30 disagreements
    python3 scripts/bench/measure_audit.py --logs DIR             # the logs elsewhere
    python3 scripts/bench/measure_audit.py --split second --logs DIR  # the second set
    python3 scripts/bench/measure_audit.py --split third --logs DIR   # the third

A label is matched to an item of its category (request, instruction and decision, the user's and the
agent's words, match one another when none of the category does) whose key, words or source
sentence, as the audit reports them, holds the label's key (case, quotes and spacing aside), or
whose key the label's key holds; a path also by its tail; failing that, to an item of any category
whose key is the label's key (six characters or more: the same thing typed otherwise). Printed
per half and category:
- recall: the share of labelled lost or wrong items the rules report lost or wrong (target 0.8,
  decisions aside);
- false loss: the share of labelled kept items the rules report lost or wrong (target at most 5%);
- found: the share of labelled items matched at all;
- loss rows per labelled loss: every item the rules report lost or wrong, over the labelled lost or
  wrong items (decisions aside; target at most 2);
- kept share: the rules' kept items over their items, beside the labels' (target within 5 points);
- decisions' precision: the share of the rules' decision items a decision label matches.
A compaction labelled "history not in file" contributes no label; the audit's loss rows on it, if
it scored it, are counted (target none). One labelled with its history in the file that the audit
did not score contributes its labels, none of them found.
Standard library only; reads the logs, writes nothing.
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

from pilot.studies.sessions.audit import audit_compaction  # noqa: E402
from pilot.studies.sessions.needed import CATEGORIES  # noqa: E402
from pilot.studies.sessions.readers import SessionFileError, read_session_file  # noqa: E402

LABELS = REPO / "tests" / "labelled" / "compactions"
# the second labelled set (its README): every record held out, the logs outside shared/real-logs
SECOND = REPO / "tests" / "labelled" / "compactions-2"
THIRD = REPO / "tests" / "labelled" / "compactions-3"
LOGS = Path("/work/shared/real-logs/claude-code")

# the categories whose labels may match an item of another of them
WORDS = ("request", "instruction", "decision")

LOSS = ("lost", "wrong")


def norm(text: str) -> str:
    text = text.lower().replace("\\", "")
    text = re.sub(r"[`*\"']", "", text)
    return re.sub(r"\s+", " ", text).strip()


def matches(label: dict, item: dict) -> bool:
    key, item_key = norm(label["key"]), norm(item["key"])
    if not key:
        return False
    if key in item_key or key in norm(item.get("source_sentence") or "") or \
            key in norm(item.get("words") or "") or \
            (len(item_key) >= 4 and item_key in key):
        return True
    if label["type"] == "file_changed":
        return item_key.endswith("/" + key.lstrip("/")) or key.endswith("/" + item_key)
    return False


def match(label: dict, items: list[dict]) -> dict | None:
    same = [i for i in items if i["category"] == label["type"] and matches(label, i)]
    if same:
        return same[0]
    if label["type"] in WORDS:
        found = next((i for i in items if i["category"] in WORDS and matches(label, i)), None)
        if found is not None:
            return found
    # the same thing typed otherwise (a commit to push labelled a task, reported as a value): an
    # item of any category whose key is the label's key, six characters or more
    key = norm(label["key"])
    return next((i for i in items if len(key) >= 6 and norm(i["key"]) == key), None)


def compaction_items(log: Path, n: int) -> tuple[list[dict] | None, str | None]:
    """The needed rows the audit reports for compaction n (1-based) of a log
    (audit.audit_compaction); None and why when it is not scored."""
    session = read_session_file(log, log.name)[0]
    record = audit_compaction(session, n - 1)
    if not record["scored"]:
        return None, record["why"]
    return record["needed"], None


def measure(records: list[dict], logs: Path, show: int) -> dict:
    """The tallies of the labels against the needed rows the audit reports."""
    tally = collections.defaultdict(collections.Counter)
    shown = []
    for record in records:
        items, why = compaction_items(logs / record["file"], record["compaction"])
        if record.get("history_in_file") is False:
            # (point 3: listed apart, never as losses; its labels measure nothing else)
            tally["all"]["labelled not in file"] += 1
            if items is not None:
                tally["all"]["scored though not in file"] += 1
                tally["all"]["loss rows where not in file"] += sum(i["status"] in LOSS
                                                                   for i in items)
            continue
        if items is None:
            # (its labels count as not found: the audit said nothing of them)
            tally["all"]["in file but not scored"] += 1
            items = []
        hit = set()
        for label in record["needed"]:
            item = match(label, items)
            kind, said = label["type"], label["summary"]
            t = tally[kind]
            t["labels"] += 1
            t["found"] += item is not None
            if item is not None:
                hit.add(id(item))
            loss = item is not None and item["status"] in LOSS
            if said in LOSS:
                t["labelled losses"] += 1
                t["caught"] += loss
            else:
                t["labelled kept"] += 1
                t["false losses"] += loss
            t["labelled kept share"] += said == "kept"
            if (said in LOSS) != loss and len(shown) < show:
                shown.append(f"{record['file'][:13]} {kind:16} label {said:4} rules "
                             f"{item['status'] if item else 'not found':9} {label['key'][:50]!r}")
        for item in items:
            t = tally[item["category"]]
            t["items"] += 1
            t["kept items"] += item["status"] == "kept"
            t["loss rows"] += item["status"] in LOSS
            t["matched items"] += id(item) in hit
            if item["status"] in LOSS and id(item) not in hit and len(shown) < show:
                shown.append(f"{record['file'][:13]} {item['category']:16} no label  rules "
                             f"{item['status']:9} {item['key'][:50]!r}")
    return {"tally": tally, "shown": shown}


def labelled_records(half: str) -> list[dict]:
    """The labelled records of a half of the first set (`dev`, `held-out`: its split.txt) or of
    the second or third set (every record of its folder)."""
    if half in ("second", "third"):
        return [json.loads(path.read_text())
                for path in sorted((SECOND if half == "second" else THIRD).glob("*.json"))]
    split = dict(line.split()[::-1] for line in (LABELS / "split.txt").read_text().splitlines()
                 if line.strip())
    return [json.loads((LABELS / f"{name}.json").read_text())
            for name, h in sorted(split.items()) if h == half]


def share(a: int, b: int) -> str:
    return f"{a / b:.2f} ({a}/{b})" if b else "-"


def table(tally: dict) -> list[str]:
    lines = ["| category | labels | found | recall (lost/wrong) | false loss (kept) | items | "
             "loss rows | kept share: rules / labels |", "|---|---|---|---|---|---|---|---|"]
    total = collections.Counter()
    for kind in CATEGORIES:
        t = tally.get(kind, collections.Counter())
        if kind != "decision":
            total.update(t)
        lines.append(f"| {kind} | {t['labels']} | {share(t['found'], t['labels'])} | "
                     f"{share(t['caught'], t['labelled losses'])} | "
                     f"{share(t['false losses'], t['labelled kept'])} | {t['items']} | "
                     f"{t['loss rows']} | {share(t['kept items'], t['items'])} / "
                     f"{share(t['labelled kept share'], t['labels'])} |")
    t = total
    lines.append(f"| all but decisions | {t['labels']} | {share(t['found'], t['labels'])} | "
                 f"{share(t['caught'], t['labelled losses'])} | "
                 f"{share(t['false losses'], t['labelled kept'])} | {t['items']} | "
                 f"{t['loss rows']} | {share(t['kept items'], t['items'])} / "
                 f"{share(t['labelled kept share'], t['labels'])} |")
    d = tally.get("decision", collections.Counter())
    a = tally.get("all", collections.Counter())
    rows = t["loss rows"] / t["labelled losses"] if t["labelled losses"] else 0.0
    lines += ["", f"loss rows per labelled loss (decisions aside): {rows:.2f} "
                  f"({t['loss rows']}/{t['labelled losses']})",
              f"decisions' precision (rule items a decision label matches): "
              f"{share(d['matched items'], d['items'])}",
              f"compactions labelled history not in file: {a['labelled not in file']} "
              f"(the audit scored {a['scored though not in file']} of them, with "
              f"{a['loss rows where not in file']} loss rows; target none)",
              f"compactions labelled history in file that the audit did not score: "
              f"{a['in file but not scored']}"]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logs", type=Path, default=LOGS,
                        help="the folder of the real Claude Code logs the labels name "
                             "(default: %(default)s)")
    parser.add_argument("--split", choices=("dev", "held-out", "both", "second", "third"),
                        default="dev",
                        help="second, third: the second and third labelled sets "
                             "(compactions-2, -3), whose logs are not in shared/real-logs (give "
                             "them with --logs)")
    parser.add_argument("--show", type=int, default=0, help="print the first N disagreements")
    args = parser.parse_args(argv)
    if not args.logs.is_dir():
        print(f"error: --logs {args.logs} is not a folder; give the folder of the real Claude Code "
              f"logs the labels name (default: {LOGS})", file=sys.stderr)
        return 2
    halves = ("dev", "held-out") if args.split == "both" else (args.split,)
    for half in halves:
        records = labelled_records(half)
        try:
            result = measure(records, args.logs, args.show)
        except (SessionFileError, OSError) as error:
            print(f"error: {error}; give --logs the folder that holds every log the labels name",
                  file=sys.stderr)
            return 2
        print(f"\n## {half}: {len(records)} compactions\n")
        print("\n".join(table(result["tally"])))
        if result["shown"]:
            print("\n" + "\n".join(result["shown"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
