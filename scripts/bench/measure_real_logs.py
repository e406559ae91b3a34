"""Precision and recall of the failed and denied steps rule (studies/sessions/failed_steps.py) on
real agents' logs kept outside the repository (protocol/SESSIONS.md, amendment of 2026-12-06).

    python3 scripts/bench/measure_real_logs.py /tmp/realogs/claude-code /tmp/realogs/cline ...

The label of a tool result is what the log itself records about it, where the format records it
(Claude Code's is_error, a non-zero exit code in a structured field or the tool's fixed failure
line, a refusal the harness writes): the reader's `error` and `marked`. Two rules are scored
against it, per format and per half (a file's half is fixed by the sha256 of its name: even dev,
odd held-out): the text rule alone (step_outcome without the log's marks: what the rule finds in a
format that records none) and the ground truth's rule (turn_outcome, marks and text). A result the
text calls failed while the log records success counts as a false positive, even where the text
shows a failure the log did not record; --show lists them to check by hand. Each rule is therefore
scored twice: against the log's labels, and against the labels corrected by hand
(tests/labelled/real_steps.tsv: a verdict for each result where the log and the text rule
disagreed, keyed by the file's folder and name and the call's id; the dev half's labelled while the
rules changed, the held-out half's once they were frozen; a verdict followed by `?` is one the
labeller was unsure of, and counts as that verdict). Results that disagree and have no hand label
are counted per half, so that a changed rule shows what is left to label; --unlabelled-held-out
lists the held-out ones (the call and the start of its result) for a labeller once the rules are
frozen. Writes nothing.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import json
import sys
from pathlib import Path

sys.dont_write_bytecode = True
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import pilot.studies  # noqa: E402,F401  (registers the studies)
from pilot.studies.sessions import readers  # noqa: E402
from pilot.studies.sessions.failed_steps import step_outcome, turn_outcome  # noqa: E402


HAND_LABELS = REPO / "tests" / "labelled" / "real_steps.tsv"
RESULT_SHOWN = 400        # characters of a result listed for a labeller
CALL_SHOWN = 300          # characters of a call's command or arguments listed


def read_hand_labels(path: Path) -> dict[tuple[str, str], str]:
    """(folder/name, call id or #N) -> verdict, from the hand labels' file; an unsure verdict
    (`failed?`) counts as the verdict."""
    labels = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            where, call, verdict = line.split("\t")[:3]
            labels[(where, call)] = verdict.rstrip("?")
    return labels


def result_keys(path: Path, results: list) -> list[tuple[str, str]]:
    """Each result's key in the hand labels: its file as folder/name, and its call's id (the id
    and #K for the Kth result of an id the file answers more than once; #N, the result's position
    among the file's results, where the call has none)."""
    seen: collections.Counter = collections.Counter()
    keys = []
    for position, (_, _, turn) in enumerate(results, 1):
        call_id = (turn.get("call") or {}).get("id")
        seen[call_id] += 1
        call = f"#{position}" if not call_id else call_id if seen[call_id] == 1 \
            else f"{call_id}#{seen[call_id]}"
        keys.append((f"{path.parent.name}/{path.name}", call))
    return keys


def half(name: str) -> str:
    return "dev" if hashlib.sha256(name.encode("utf-8")).digest()[-1] % 2 == 0 else "held-out"


def labelled_results(path: Path) -> list[tuple[str, str, dict]]:
    """(format, half, tool turn) for every tool result of the sessions in a file."""
    out = []
    for session in readers.read_session_file(path, path.name):
        for turn in session["turns"]:
            if turn["role"] == "tool":
                out.append((session["format"], half(path.name), turn))
    return out


def label(turn: dict) -> str:
    marked = turn.get("marked")
    return marked if marked else "failed" if turn["error"] else "ok"


def text_rule(turn: dict) -> str:
    return step_outcome(turn["text"], False, turn["tool"], (turn.get("call") or {}).get("input"))


def call_shown(turn: dict) -> str:
    """The call's command (a list of words joined), else its arguments as JSON, cut short."""
    arguments = (turn.get("call") or {}).get("input")
    command = arguments.get("command") if isinstance(arguments, dict) else None
    if isinstance(command, list):
        command = " ".join(str(word) for word in command)
    shown = command if isinstance(command, str) else json.dumps(arguments, ensure_ascii=False)
    return shown[:CALL_SHOWN]


def score(rows: list[tuple[str, str]]) -> str:
    tp = sum(1 for want, got in rows if want != "ok" and got != "ok")
    predicted = sum(1 for _, got in rows if got != "ok")
    actual = sum(1 for want, _ in rows if want != "ok")
    p = f"{tp / predicted:.2f} ({tp}/{predicted})" if predicted else "- (0/0)"
    r = f"{tp / actual:.2f} ({tp}/{actual})" if actual else "- (0/0)"
    return f"{p} | {r}"


def print_table(groups: dict, halves: str, text_rule: str, truth_rule: str) -> None:
    """Per format and half, the text rule's and the ground truth's figures against one kind of
    label (the log's, or the hand-corrected ones); the held-out half only where both are asked."""
    print("| format | half | results | text rule precision | text rule recall "
          "| truth precision | truth recall |")
    print("|---|---|---|---|---|---|---|")
    for (fmt, part), rows in sorted(groups.items()):
        if part == "dev" or halves == "both":
            print(f"| {fmt} | {part} | {len(rows['text'])} | {score(rows[text_rule])} "
                  f"| {score(rows[truth_rule])} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="real log files or folders of them")
    parser.add_argument("--show", type=int, default=0,
                        help="list this many disagreements of the dev half")
    parser.add_argument("--half", choices=("dev", "both"), default="both",
                        help="print the dev half only while rules are being changed")
    parser.add_argument("--unlabelled-held-out", action="store_true",
                        help="list the held-out disagreements without a hand label (only once the "
                             "rules are frozen: a labeller's list)")
    parser.add_argument("--hand-labels", type=Path, default=HAND_LABELS,
                        help="the hand labels' file (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.unlabelled_held_out and args.half == "dev":
        parser.error("--unlabelled-held-out lists the held-out half: leave out --half dev")
    missing = [path for path in args.paths if not path.exists()]
    if missing:
        print(f"error: {missing[0]} does not exist; give real log files or folders of them",
              file=sys.stderr)
        return 2
    hand = read_hand_labels(args.hand_labels)
    used: set = set()
    files = []
    for path in args.paths:
        files += sorted(p for p in path.rglob("*") if p.is_file() and readers.wanted(p.name)) \
            if path.is_dir() else [path]
    groups: dict[tuple, dict[str, list]] = collections.defaultdict(
        lambda: {"text": [], "truth": [], "text_hand": [], "truth_hand": []})
    wrong, to_label = [], []
    unlabelled: collections.Counter = collections.Counter()
    for path in files:
        try:
            results = labelled_results(path)
        except Exception as error:  # noqa: BLE001  (a file no reader takes is reported, not fatal)
            print(f"{path}: not read ({error})", file=sys.stderr)
            continue
        for key, (fmt, part, turn) in zip(result_keys(path, results), results):
            want, text, truth = label(turn), text_rule(turn), turn_outcome(turn)
            verdict = hand.get(key, want)
            if key in hand:
                used.add(key)
            for group in ((fmt, part), ("all", part)):
                groups[group]["text"].append((want, text))
                groups[group]["truth"].append((want, truth))
                groups[group]["text_hand"].append((verdict, text))
                groups[group]["truth_hand"].append((verdict, truth))
            if (want == "ok") == (text == "ok"):
                continue
            unlabelled[part] += key not in hand
            if part == "dev":
                wrong.append((path.name, turn["tool"], want, text, turn["text"][:160]))
            elif key not in hand:
                to_label.append((key, turn, want, text))
    print("Against the log's labels:\n")
    print_table(groups, args.half, "text", "truth")
    if args.half == "dev":                  # the held-out half's labels are out of sight too
        hand = {key: verdict for key, verdict in hand.items()
                if half(key[0].rsplit("/", 1)[-1]) == "dev"}
        used &= set(hand)
    halves = "dev half" if args.half == "dev" else "both halves"
    held_out = "" if args.half == "dev" else f", {unlabelled['held-out']} held-out"
    print(f"\nAgainst the labels corrected by hand, {halves} ({len(used)} of {len(hand)} hand "
          f"labels used; {unlabelled['dev']} dev disagreements without one{held_out}):\n")
    print_table(groups, args.half, "text_hand", "truth_hand")
    for name, tool, want, got, text in wrong[:args.show]:
        print(f"- {name} {tool}: log {want}, text {got}: {text!r}")
    if args.unlabelled_held_out:
        print(f"\nHeld-out disagreements without a hand label ({len(to_label)}):")
        for (where, call), turn, want, got in to_label:
            print(f"- {where}\t{call}\t{turn['tool']}: log {want}, text {got}\n"
                  f"  call: {call_shown(turn)!r}\n  result: {turn['text'][:RESULT_SHOWN]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
