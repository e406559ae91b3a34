#!/usr/bin/env python3
"""What does context compaction lose? A pre-registered pilot runner, standard library only.

Runs the pre-registered XR-001 experiment (protocol/PROTOCOL.md) against a local model server:
seeded pseudoword episodes with numeric ground truth are carried through R0 (full transcript), R1
(cascaded prose summaries) and R2 (cascaded typed state blocks) at matched output budgets, every
probe is scored into a corruption class, and R1 is compared with R2 by an exact McNemar test. The
constraints study SC-001 (protocol/CONSTRAINTS.md), the adversarial study XR-G1
(protocol/ADVERSARIAL.md) and the sessions study XR-S1 on your own transcripts
(protocol/SESSIONS.md) share the same runner. Every call is journalled the moment it returns, so a
run can be interrupted at any moment and resumed. The user guide, beside this file, is
scripts/README.md: every subcommand, run folders, resuming, servers, the prompt cache, sharding,
the gate and the audit.

Usage:
    python3 scripts/run_pilot.py --models gemma3:4b        # tasks checked, run, score, analyze
    python3 scripts/run_pilot.py --study constraints --models gemma3:4b    # the constraints study
    python3 scripts/run_pilot.py plan --models gemma3:4b   # calls and tokens, no server needed
    python3 scripts/run_pilot.py status                    # what is done, failed and left
    python3 scripts/run_pilot.py demo                      # see it work first: SIMULATED, no model
    python3 scripts/run_pilot.py gate STATE --ledger L.json          # check a compacted state
    python3 scripts/run_pilot.py adversarial --models M    # the adversarial study XR-G1
    python3 scripts/run_pilot.py --study sessions --sessions PATH --models M     # XR-S1
    python3 scripts/run_pilot.py audit ~/.claude/projects  # your agent's own compactions, no model
    python3 scripts/run_pilot.py judge-check --judge M --real-logs DIR   # a judge vs the labels
    python3 scripts/run_pilot.py --help                    # every subcommand and option

The code lives in the package beside this file, scripts/pilot/, in rooms by owner:
    rules/           the pure text rules several studies and commands read, importing nothing else:
                     values (exact values, secrets), spellings (two spellings of one value),
                     claims (what a sentence claims), states (reading a state; the one sentence
                     splitter), ledger (the gate's ledger), gate (the release gate), gate_selftest,
                     templates (the agents' own summary templates the gate leaves alone)
    the core, in pipeline order (it never names a study; it reaches one through its Study record):
    records          pinned call settings, errors, record types, hashing, the Study record and
                     its registry, the Verdict the core reads of an analysis
    stats            Wilson, exact McNemar, Holm, the clustered bootstrap, Fisher
    slots            the --concurrency bound on calls awaiting the server
    transport        the HTTP client: kept-alive connections, timeouts, transient and fatal failures
    backends         Ollama and OpenAI-compatible adapters behind one interface; the preflight check
    inputs           task files read and hashed, regimes as records
    marker           whose folder: the marker listing each output a command wrote, with its hash
    runfolder        journal, manifest, folder lock, code hash
    cells            a run's cells, shards and streams; the cascade plan
    progress         the progress line
    bankfile         a large results.json read as columns, in pieces and on two cores
    speed            speed only: the collector paused and the exit that skips freeing a bank
    probes           a probe's answer and class: answer parsing, probe kinds, a probe scored
    bank             checked cells, the one scoring skeleton, the bank's shape and its analysis
    prompts          the built-in prompts and regimes; the one way a call's messages are built
    runner           cells run: retries, resume, concurrency, the determinism probe
    reports          shared formats and tables, probes.csv, any study's analysis.md and headline
    gate_report      the gate's tables over a run: gate.csv, failing shares, its prediction
    svg              the figure toolkit
    demo             the stand-in model behind Ollama's API
    pages            a bank's figures, RESULTS.md and report.html
    above the core:
    studies/         a folder per study (xr001/, constraints/, adversarial/, sessions/ with its
                     log readers in readers/), the pseudoword episodes several share (episodes.py),
                     the registry and its recipe (__init__.py)
    launch           the options become the study, run folder, regimes, backend and Settings, once
    recorded_run     a run folder read back: its task set again, the command that resumes it
    figures_job      the figures and report, made by paper/make_figures.py in a process of its own
    commands         run, score, analyze, the whole pilot
    folder_commands  status, plan, verify, merge, generate
    gate_command     gate: a compacted state against its ledger, a run folder, or the self-test
    audit_command    audit: the compactions an agent already made, scored from its logs (and,
                     with --judge MODEL, a judge model's say on what the rules cannot read)
    judge_check_command  judge-check: a judge model measured against the hand labels
    cli              the parser, the demo and main(argv)
Benchmarks and measurement scripts are in scripts/bench/ (scripts/BENCHMARKS.md).
"""
import sys

if sys.version_info < (3, 10):
    sys.exit(f"error: run_pilot.py needs Python 3.10 or newer; this is {sys.version.split()[0]}")

EXIT_INTERRUPTED = 130         # as the commands return it (pilot.records)

# Ctrl-C while Python reads the package: nothing was started, nothing to resume
try:
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from pilot import speed  # noqa: E402
    from pilot.cli import main  # noqa: E402
except KeyboardInterrupt:
    print("interrupted before anything was done", file=sys.stderr)
    sys.exit(EXIT_INTERRUPTED)

if __name__ == "__main__":
    speed.EXIT_WITHOUT_FREEING = True   # a bank read here is freed by the exit, not one by one
    try:
        code = main()
    # before a command began (reading the options), or as it ended
    except KeyboardInterrupt:
        print("interrupted; nothing completed was lost. Rerun the same command to go on.",
              file=sys.stderr)
        code = EXIT_INTERRUPTED
    speed.end_process(code)
