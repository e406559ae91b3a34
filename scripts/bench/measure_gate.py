"""The release gate on real compactions (issue 40, point 4; protocol/SESSIONS.md section 9): the
gate's findings on each labelled compaction of the real Claude Code logs, as the audit makes them
(audit.span_truth and audit.gate_findings, as audit.judge_summary calls them, blocking findings
only), counted per category and matched with the hand labels in
tests/labelled/compactions/. Rules are tuned on `dev`; `held-out` is counted once, and only its
counts are printed (--show refuses it).

    python3 scripts/bench/measure_gate.py --split dev            # counts
    python3 scripts/bench/measure_gate.py --split dev --show     # and every finding, to judge
    python3 scripts/bench/measure_gate.py --split held-out       # counts only

A finding matches a labelled item of its compaction when the label's key is in the finding's text
or detail (case, quotes and spacing aside), or when at least MATCH_SHARE of the finding's words
(claims.terms, three at least) are in the label's evidence. Printed: findings, by category, and how
many match a labelled `wrong` item (a misstatement the labels found); a match is a candidate, to be
read against the log on dev (--show), since a finding may name the right sentence for another
reason. Standard library only; reads the logs, writes nothing.
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

from pilot.rules.claims import terms  # noqa: E402
from pilot.studies.sessions.audit import gate_findings, replaced_turns, span_truth  # noqa: E402
from pilot.studies.sessions.readers import read_session_file  # noqa: E402

LABELS = REPO / "tests" / "labelled" / "compactions"
LOGS = Path("/work/shared/real-logs/claude-code")

# the share of a finding's words a label's evidence must hold to match it
MATCH_SHARE = 0.6


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[`*\"']", "", text.lower())).strip()


def matches(label: dict, finding: dict) -> bool:
    key = norm(label["key"])
    if key and key in norm(finding["text"] + " " + finding["detail"]):
        return True
    words = terms(finding["text"])
    return len(words) >= 3 and \
        len(words & terms(label.get("evidence") or "")) >= MATCH_SHARE * len(words)


def compaction_findings(log: Path, n: int) -> list[dict]:
    """The gate's blocking findings on compaction n (1-based) of a log, as the audit makes them."""
    session = read_session_file(log, log.name)[0]
    turns = replaced_turns(session, n - 1)
    summary = session["compactions"][n - 1]["summary"]
    truth, source, written = span_truth(turns, summary)
    return gate_findings(truth, source, summary, written)


def measure(records: list[dict], logs: Path) -> tuple[collections.Counter, list[str]]:
    tally, shown = collections.Counter(), []
    for record in records:
        findings = compaction_findings(logs / record["file"], record["compaction"])
        tally["compactions"] += 1
        for finding in findings:
            tally["findings"] += 1
            tally[f"category {finding['category']}"] += 1
            wrong = any(label["summary"] == "wrong" and matches(label, finding)
                        for label in record["needed"])
            tally["match a labelled wrong item"] += wrong
            shown.append(f"{record['file'][:13]} {finding['category']:10} "
                         f"{'WRONG' if wrong else '-':5} {finding['detail'][:90]} :: "
                         f"{json.dumps(finding['text'][:160], ensure_ascii=False)}")
    return tally, shown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logs", type=Path, default=LOGS)
    parser.add_argument("--split", choices=("dev", "held-out"), default="dev")
    parser.add_argument("--show", action="store_true", help="print every finding (dev only)")
    args = parser.parse_args(argv)
    if args.show and args.split != "dev":
        parser.error("--show prints the findings themselves: dev only (the held-out half is "
                     "counted, never read)")
    split = dict(line.split()[::-1] for line in (LABELS / "split.txt").read_text().splitlines()
                 if line.strip())
    records = [json.loads((LABELS / f"{name}.json").read_text())
               for name, half in sorted(split.items()) if half == args.split]
    tally, shown = measure(records, args.logs)
    print(f"## {args.split}: {tally['compactions']} compactions, {tally['findings']} gate findings")
    for key in sorted(k for k in tally if k not in ("compactions", "findings")):
        print(f"- {key}: {tally[key]}")
    if args.show:
        print("\n" + "\n".join(shown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
