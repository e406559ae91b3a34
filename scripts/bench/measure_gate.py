"""The release gate on real compactions (issue 40, point 4; protocol/SESSIONS.md section 9): the
gate's findings on each labelled compaction of the real Claude Code logs, as the audit makes them
(audit.span_truth and audit.gate_findings, as audit.judge_summary calls them, blocking findings
only), counted per category and matched with the hand labels in
tests/labelled/compactions/. Rules are tuned on `dev`; `held-out` is counted once, and only its
counts are printed (--show refuses it).

    python3 scripts/bench/measure_gate.py --split dev            # counts
    python3 scripts/bench/measure_gate.py --split dev --show     # and every finding, to judge
    python3 scripts/bench/measure_gate.py --split held-out       # counts only
    python3 scripts/bench/measure_gate.py --split third --logs DIR   # the third labelled set
    python3 scripts/bench/measure_gate.py --unlabelled DIR --half first   # other real logs

--unlabelled DIR reads every compaction of the logs in a folder that no label covers (real logs
kept outside the repository), whose history the file holds, and prints each finding with the
summary's line that holds it and the history's words nearest it, to judge by hand. --half splits
the folder's files by name (sorted, every other one: `first` the 1st, 3rd ..., `second` the 2nd,
4th ...), so that rules are tuned on one half and the other is only counted (--counts).

Counted as findings: those the audit counts as misstatements (tier "found"); the claims it lists
apart as unverified (audit_gate.py) are counted on their own line and, with --unlabelled, not
printed.

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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure_audit import labelled_records  # noqa: E402
from pilot.rules.claims import terms  # noqa: E402
from pilot.studies.sessions.audit import gate_findings, replaced_turns, span_truth  # noqa: E402
from pilot.studies.sessions.gate_support import summary_line  # noqa: E402
from pilot.studies.sessions.needed import history_in_file  # noqa: E402
from pilot.studies.sessions.readers import read_session_file  # noqa: E402

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
    event = session["compactions"][n - 1]
    summary = event["summary"]
    truth, source, written = span_truth(turns, summary, event.get("asked"))
    return gate_findings(truth, source, summary, written)


def measure(records: list[dict], logs: Path) -> tuple[collections.Counter, list[str]]:
    tally, shown = collections.Counter(), []
    for record in records:
        findings = compaction_findings(logs / record["file"], record["compaction"])
        tally["compactions"] += 1
        for finding in findings:
            wrong = any(label["summary"] == "wrong" and matches(label, finding)
                        for label in record["needed"])
            if finding["tier"] == "unverified":
                tally["unverified claims (not findings)"] += 1
                tally["unverified claims matching a labelled wrong item"] += wrong
            else:
                tally["findings"] += 1
                tally[f"category {finding['category']}"] += 1
                tally["match a labelled wrong item"] += wrong
            shown.append(f"{record['file'][:13]} {finding['category']:10} "
                         f"{'' if finding['tier'] == 'found' else '(unverified) '}"
                         f"{'WRONG' if wrong else '-':5} {finding['detail'][:90]} :: "
                         f"{json.dumps(finding['text'][:160], ensure_ascii=False)}")
    return tally, shown


def nearest_evidence(text: str, source: str, width: int = 160) -> str:
    """The stretch of the history (about `width` characters) that shares the most of a finding's
    words, '' where it shares none."""
    words = terms(text)
    best, best_count = "", 0
    for paragraph in re.split(r"\n\s*\n|(?<=[.!?])\s+", source):
        count = len(words & terms(paragraph[:2000]))
        if count > best_count:
            best, best_count = paragraph, count
    return re.sub(r"\s+", " ", best)[:width]


def halves(logs: Path, half: str) -> list[Path]:
    """The folder's files sorted by name, all or every other one (half `first` or `second`)."""
    files = sorted(p for p in logs.iterdir() if p.is_file())
    return files if half == "all" else files[half == "second"::2]


def measure_unlabelled(files: list[Path], show: bool) -> tuple[collections.Counter, list[str]]:
    """The gate's findings on every compaction of the files whose history the file holds."""
    tally, shown = collections.Counter(), []
    for log in files:
        session = read_session_file(log, log.name)[0]
        for k, event in enumerate(session["compactions"]):
            turns = replaced_turns(session, k)
            if not event["readable"] or not history_in_file(event)[0] or not turns:
                tally["compactions not scored"] += 1
                continue
            tally["compactions"] += 1
            summary = event["summary"]
            truth, source, written = span_truth(turns, summary, event.get("asked"))
            for finding in gate_findings(truth, source, summary, written):
                if finding["tier"] == "unverified":
                    tally["unverified claims (not findings)"] += 1
                    continue
                tally["findings"] += 1
                tally[f"category {finding['category']}"] += 1
                if show:
                    line, heading = summary_line(finding["text"], summary)
                    evidence = nearest_evidence(finding["text"], source)
                    shown.append(
                        f"{log.name} #{k + 1} {finding['category']}: {finding['detail'][:160]}\n"
                        f"  text:    {json.dumps(finding['text'][:200], ensure_ascii=False)}\n"
                        f"  line:    {json.dumps(line[:200], ensure_ascii=False)}"
                        f"  (under {json.dumps(heading[:60], ensure_ascii=False)})\n"
                        f"  history: {json.dumps(evidence, ensure_ascii=False)}")
    return tally, shown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logs", type=Path, default=LOGS)
    parser.add_argument("--split", choices=("dev", "held-out", "second", "third"), default="dev",
                        help="second, third: the labelled sets in tests/labelled/compactions-2 "
                             "and -3, whose logs are not in shared/real-logs (give --logs)")
    parser.add_argument("--show", action="store_true", help="print every finding (dev only)")
    parser.add_argument("--unlabelled", type=Path, metavar="DIR",
                        help="a folder of real logs no label covers: every finding printed")
    parser.add_argument("--half", choices=("all", "first", "second"), default="all",
                        help="with --unlabelled: every other file by name (default all)")
    parser.add_argument("--counts", action="store_true",
                        help="with --unlabelled: counts only (the half kept for counting)")
    args = parser.parse_args(argv)
    if args.unlabelled is not None:
        if not args.unlabelled.is_dir():
            parser.error(f"{args.unlabelled} is not a folder: give the folder of logs")
        files = halves(args.unlabelled, args.half)
        tally, shown = measure_unlabelled(files, not args.counts)
        print(f"## {args.unlabelled.name} ({args.half}, {len(files)} files): "
              f"{tally['compactions']} compactions, {tally['findings']} gate findings")
        for key in sorted(k for k in tally if k not in ("compactions", "findings")):
            print(f"- {key}: {tally[key]}")
        if shown:
            print("\n" + "\n".join(shown))
        return 0
    if args.show and args.split != "dev":
        parser.error("--show prints the findings themselves: dev only (the held-out half is "
                     "counted, never read)")
    # (a compaction labelled history not in file is not scored: no finding to count)
    records = [record for record in labelled_records(args.split)
               if record.get("history_in_file") is not False]
    tally, shown = measure(records, args.logs)
    print(f"## {args.split}: {tally['compactions']} compactions, {tally['findings']} gate findings")
    for key in sorted(k for k in tally if k not in ("compactions", "findings")):
        print(f"- {key}: {tally[key]}")
    if args.show:
        print("\n" + "\n".join(shown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
