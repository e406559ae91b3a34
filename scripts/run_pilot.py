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
scripts/README.md: every subcommand, run folders, resuming, servers, the prompt cache, sharding and
the gate.

Usage: python3 scripts/run_pilot.py --models gemma3:4b          # generate/verify tasks, run, score,
    analyze python3 scripts/run_pilot.py --study constraints --models gemma3:4b   # the constraints
    study python3 scripts/run_pilot.py plan --models gemma3:4b     # calls and tokens, no server
    needed python3 scripts/run_pilot.py status                      # what is done, failed and left
    python3 scripts/run_pilot.py demo                        # see it work first: SIMULATED, no
    model needed python3 scripts/run_pilot.py gate STATE --ledger L.json  # check a compacted state
    before it is trusted python3 scripts/run_pilot.py adversarial --models M      # the adversarial
    study XR-G1 python3 scripts/run_pilot.py --study sessions --sessions PATH --models M   # your
    own transcripts, XR-S1 python3 scripts/run_pilot.py --help                      # every
    subcommand and option

The code lives in the package beside this file, scripts/pilot/, in pipeline order:
    records          pinned call settings, errors, record types, hashing, the Study record and
                     its registry
    stats            Wilson, exact McNemar, Holm, the clustered bootstrap, Fisher
    transport        the HTTP client: kept-alive connections, timeouts, transient and fatal failures
    backends         Ollama and OpenAI-compatible adapters behind one interface; the preflight check
    inputs           task files read and hashed, regimes as records
    runfolder        journal, manifest, folder lock, code hash
    runner           cells, retries, resume, concurrency, progress, the determinism probe
    speed            speed only: the collector paused and the exit that skips freeing a bank
    bank             answer parsing, probe kinds, checked cells, the bank as columns and its shape
                     checks
    reports          shared formats and tables, probes.csv, any study's analysis.md and headline
    values           exact values in text, their spellings, closeness, secrets
    claims           what a sentence claims: done or failed, an order, the opposite of an
                     instruction
    gate             the release gate's pure checker and its self-test
    demo             the stand-in model behind Ollama's API
    studies/         one module per study's design and one per its analysis; the registry in
                     __init__
    launch           the options become the study, run folder, regimes, backend and Settings, once
    recorded_run     a run folder read back: its task set again, the command that resumes it
    figures_job      the figures and report, made by paper/make_figures.py in a process of its own
    commands         run, score, analyze, the whole pilot
    folder_commands  status, plan, verify, merge, generate
    gate_command     gate: a compacted state against its ledger, a run folder, or the self-test
    audit_command    audit: the compactions an agent already made, scored from its logs (no model
                     call)
    cli              the parser, the demo and main(argv)
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
