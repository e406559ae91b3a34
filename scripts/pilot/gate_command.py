"""`gate`: one compacted state checked by the release gate (pilot/rules/gate.py) against its
ledger, and its source where given (gate STATE --ledger L [--source T]); every compacted state of a
run folder gated into gate.csv, results.json, analysis.md and the report (gate RUN_DIR); or the
gate's self-test (gate --selftest). Exit 0 pass, 1 fail, 2 bad input."""
from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

from .commands import gated_analysis, warn, write_analysis, write_results
from .figures_job import write_figures_and_report
from .folder_commands import hold_folder
from .inputs import read_json
from .recorded_run import load_run
from .records import (EXIT_OK, EXIT_VERIFY_FAILED, PilotError, SURROGATE_ESCAPE, folder_study,
                      lone_surrogate, lone_surrogate_problem)
from .reports import render_analysis_md
from .runfolder import Manifest, folder_writable, refuse_foreign_folder


def read_gate_input(path: str, what: str) -> str:
    from .rules.ledger import GateInputError
    if Path(path).exists() and not Path(path).is_file():
        raise GateInputError(f"the {what} {path} is not a regular file (a device, pipe, socket or "
                             "folder); give a UTF-8 text file")
    try:
        # a byte-order mark, as some editors write, is read
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise GateInputError(f"cannot read the {what} {path} "
                             f"({getattr(err, 'strerror', None) or err}); give a "
                             f"UTF-8 text file") from None
    # JSON that names a lone surrogate, which cannot be printed
    if SURROGATE_ESCAPE.search(text):
        try:
            surrogate = lone_surrogate(text, json.loads(text))
        except (ValueError, RecursionError):
            surrogate = None                        # not JSON: the escape is plain text
        if surrogate:
            raise GateInputError(f"{lone_surrogate_problem(f'the {what} {path}', surrogate)}; fix "
                                 "that \\u escape")
    return text


def command_gate(args) -> int:
    """`gate STATE --ledger L [--source T]`, `gate RUN_DIR`, or `gate --selftest`: 0 pass, 1 fail, 2
    bad input."""
    from .rules.gate import check_state, gate_verdict, render_gate_findings, run_gate_selftest
    from .rules.ledger import GateInputError, normalize_ledger
    if args.selftest:
        outcomes = run_gate_selftest()
        if args.json:
            print(json.dumps(outcomes, indent=1, ensure_ascii=False))
        else:
            for o in outcomes:
                caught = ", ".join(sorted({f["category"] for f in o["findings"]
                                           if f["blocking"]})) or "-"
                print(f"{'ok  ' if o['ok'] else 'MISS'} {o['case']:<40} expected "
                      f"{o['expected']:<10} got {o['verdict']} ({caught})")
            missed = [o["case"] for o in outcomes if not o["ok"]]
            print(f"self-test: {len(outcomes) - len(missed)}/{len(outcomes)} cases behave as they "
                  "must" +
                  (f"; wrong: {', '.join(missed)}" if missed else ""))
        return EXIT_OK if all(o["ok"] for o in outcomes) else EXIT_VERIFY_FAILED
    if not args.target:
        raise GateInputError("give a state file and --ledger, a run folder, or --selftest (see "
                             "`run_pilot.py gate --help`)")
    target = Path(args.target)
    if target.is_dir():
        return gate_run_folder(target, args.json)
    if not target.exists():
        raise GateInputError(f"no state file or run folder at {target}; check the path")
    if not args.ledger:
        raise GateInputError("a state needs --ledger LEDGER.json (the authoritative values; format "
                             "in scripts/README.md, 'The ledger format')")
    _, _, ledger = read_json(Path(args.ledger), f"the ledger {args.ledger}", "a ledger",
                             "give the ledger format "
                             "scripts/README.md describes under 'The ledger format'",
                             error=GateInputError, bom=True)
    ledger = normalize_ledger(ledger)
    state = read_gate_input(args.target, "state")
    source = read_gate_input(args.source, "source") if args.source else None
    try:
        findings = check_state(state, ledger, source)
    except RecursionError:
        raise GateInputError(f"the state {args.target} is nested too deeply to be a compacted "
                             "state; give its text "
                             f"or a shallow JSON object") from None
    verdict = gate_verdict(findings)
    if args.json:
        print(json.dumps({"verdict": verdict, "state": args.target, "ledger": args.ledger,
                          "source": args.source,
                          "findings": findings}, indent=1, ensure_ascii=False))
    else:
        print(render_gate_findings(findings, args.target))
        if source is None:
            print("note: no --source given, so every instruction-like line counts as having no "
                  "source",
                  file=sys.stderr)
    return EXIT_OK if verdict == "PASS" else EXIT_VERIFY_FAILED


def gate_run_folder(run_dir: Path, as_json: bool = False) -> int:
    """Gate every compacted state of a run: gate.csv, results.json, the analysis.md section and the
    report."""
    from .rules.ledger import GateInputError
    if not (run_dir / "manifest.json").exists():
        raise GateInputError(f"{run_dir} is a folder but not a run folder (no manifest.json); give "
                             "a run folder or a state file")
    refuse_foreign_folder(run_dir)
    manifest, tasks = load_run(run_dir)
    # one writer at a time: never beside a running runner
    with contextlib.ExitStack() as held:
        hold_folder(held, run_dir, "gate the folder once the run is done")
        return gate_held_folder(run_dir, Manifest.load(manifest.path), tasks, as_json)


def gate_held_folder(run_dir: Path, manifest: Manifest, tasks: dict, as_json: bool) -> int:
    """gate RUN_DIR on a folder whose lock it holds: results, gate.csv, analysis, figures and report
    written."""
    from .gate_report import render_gate_section
    from .rules.ledger import GateInputError
    results = write_results(run_dir, manifest.data, tasks)
    # the study gates its states as it scores them
    if folder_study(manifest.data).gate_rows is None:
        if folder_writable(run_dir):
            analysis = write_analysis(run_dir, results, True)
            try:
                write_figures_and_report(run_dir, handover=(results, analysis))
            except PilotError as err:
                warn(str(err))
        else:
            analysis = gated_analysis(results, True)
        print(json.dumps(analysis, indent=1, ensure_ascii=False) if as_json
              else render_analysis_md(analysis))
        return EXIT_OK
    gate = results.get("gate")
    if not gate:
        raise GateInputError(f"{run_dir} has no compacted state yet (no compaction call of a "
                             "compacting regime is journalled), so there is nothing to gate")
    outputs = [run_dir / "gate.csv", run_dir / "results.json"]
    if folder_writable(run_dir):
        analysis = write_analysis(run_dir, results, True)
        outputs.append(run_dir / "analysis.md")
        try:
            outputs += write_figures_and_report(run_dir, handover=(results, analysis))
        except PilotError as err:
            warn(str(err))
    else:
        analysis = gated_analysis(results, True)
    if as_json:
        print(json.dumps(gate, indent=1, ensure_ascii=False))
    else:
        print("\n".join(render_gate_section(analysis)))
        print("wrote:\n" + "\n".join(f"  {path}" for path in outputs), file=sys.stderr)
    failing = sum(r["final_states"]["k"] for r in gate["by_regime"].values())
    return EXIT_VERIFY_FAILED if failing else EXIT_OK
