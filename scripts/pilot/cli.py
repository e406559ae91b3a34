"""Command line: the parser of every subcommand, the demo, and main(argv), where errors become exit
codes."""
from __future__ import annotations

import argparse
import contextlib
import importlib
import math
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Callable

from .backends import BACKENDS, DEFAULT_API_KEY_ENV, DEFAULT_OLLAMA_HOST, check_server_url
from .demo import DEMO_EPISODES, DEMO_RUN_NAME, STAND_IN_MODEL, StandInServer
from .inputs import load_task_set
from .launch import parse_budgets, parse_shard, resolve_run_dir
from .rules import RuleInputError
from .runfolder import refuse_foreign_folder
from .records import (DEFAULT_BACKOFF_BASE_S, DEFAULT_BACKOFF_CAP_S, DEFAULT_BUDGET,
                      DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_GIVE_UP_AFTER_S, DEFAULT_READ_TIMEOUT_S,
                      DEFAULT_RECHECK, DEFAULT_RETRIES, DiskFull, EXIT_DISK_FULL, EXIT_INTERRUPTED,
                      EXIT_OK, EXIT_USAGE, MAX_CONCURRENCY, MAX_CONTEXT_WINDOW, MAX_DELAY_S,
                      MAX_EPISODES, MAX_RETRIES, MAX_SAMPLES, MAX_WAIT_S, MIN_CONTEXT_WINDOW,
                      NUM_CTX, PilotError, REPLY_DEADLINE_READ_TIMEOUTS, RESULTS_ROOT,
                      SIMULATED_BACKEND, SIMULATED_STAMP, STUDY_REGISTRY, Study, TEMPERATURE,
                      display_path, is_disk_full, study_named)
from . import speed
from .speed import collector_paused, end_process
from .studies.xr001.design import N_EPISODES


def command_demo(args) -> int:
    """A short pilot on the stand-in model, through the whole pipeline, into results/demo/ (or
    --out)."""
    study = study_named(args.study)
    default = study.name == study_named(None).name
    run_dir = Path(args.out) if args.out else RESULTS_ROOT / (DEMO_RUN_NAME
                                                              + ("" if default
        else f"-{study.name}"))
    if study.demo is None:
        raise PilotError(
            f"the {study.name} study has no demo; choose one of "
            f"{', '.join(s.name for s in STUDY_REGISTRY.values() if s.demo is not None)}"
        )
    refuse_foreign_folder(run_dir)         # before a word is printed: one line if refused
    episodes = study.demo.episodes or DEMO_EPISODES
    print(f"{SIMULATED_STAMP}: a {episodes}-{study.episode_noun} pilot of {study.protocol_id} on "
          "the built-in "
          f"stand-in model, with no model and no network; nothing it writes is a result.")
    model = study.demo.stand_in(load_task_set(study.tasks_path, study)["tasks"])
    # a demo run again over a folder says what is left instead
    if not (run_dir / "manifest.json").exists():
        print("Stop it with Ctrl-C at any moment and run the same command again: it resumes from "
              "the last saved "
              "call, as a real run does.", file=sys.stderr)
    started = time.monotonic()
    with StandInServer(model=model) as server:
        run_args = build_parser("pilot").parse_args(
            ["--models", STAND_IN_MODEL, "--episodes", str(episodes), "--out", str(run_dir),
             "--host", server.url, "--give-up-after", "10", "--recheck", "0"]
            + ([] if default else ["--study", study.name]) + (["--quiet"] if args.quiet else []))
        run_args.backend = SIMULATED_BACKEND
        run_args.argv = args.argv
        code = importlib.import_module(".commands", __package__).command_run(run_args,
            then_analyze=True)
    if code == EXIT_OK:
        report = run_dir / "report.html"      # a closing line names only files that exist
        print(f"\nThe demo took {time.monotonic() - started:.1f} s." +
              (f" Open the report: {report}" if report.is_file() else ""))
        print(
            f"What its run folder holds, cell by cell: {folder_command('status', run_dir, study)}"
        )
        source = study.command_line.source_option
        mine = f" on your own {source}" if source else ""
        print(f"Next, on a real model{mine} (Ollama running, the model pulled with: ollama pull "
              f"gemma3:4b):\n  {real_run_command(study)}")
        # what PATH is: the study's own examples, and the README beside them
        if source:
            readme = study.tasks_path.parent / "README.md"
            print("  (PATH: a file or a folder of them, like the examples in "
                  f"{display_path(study.tasks_path)}"
                  + (f"; the formats read, and how to export yours: {display_path(readme)})"
                     if readme.is_file()
                     else ")"))
    return code


def folder_command(command: str, run_dir: Path, study: Study) -> str:
    """`command` on this run folder as a user types it: with --study where the command takes it and
    the study is not the default, and with --out where the command would otherwise look in another
    folder."""
    parser = build_parser(command)
    argv = []
    if study.name != study_named(None).name and not parser.parse_known_args(["--study",
        study.name])[1]:
        argv += ["--study", study.name]
    if resolve_run_dir(parser.parse_args(argv)).resolve() != run_dir.resolve():
        # status, verify and score read the study from the folder's manifest: --out is all they need
        # then
        argv = (argv if command not in FOLDER_STUDY_COMMANDS else []) + ["--out",
            display_path(run_dir)]
    return "python3 " + shlex.join(["scripts/run_pilot.py", command, *argv])


FOLDER_STUDY_COMMANDS = ("status", "verify", "score")   # a folder named with --out says their study


def real_run_command(study: Study) -> str:
    """The pilot of this study on a real model; a study run on the user's own files names the option
    for them."""
    argv = ([] if study.name == study_named(None).name else ["--study", study.name]) + ["--models",
        "gemma3:4b"]
    source = study.command_line.source_option
    argv += [f"--{source}", "PATH"] if source else []
    return "python3 " + shlex.join(["scripts/run_pilot.py", *argv])


COMMAND_HELP = {
    "pilot": "the whole pilot: check tasks, run every cell (resuming), score, analyze, figures "
    "(default)",
    "generate": "write the seeded episodes to tasks/tasks.json (or --tasks PATH); --study "
    "constraints: "
                "tasks/constraints.json",
    "run": "run (or resume) the model calls only",
    "score": "score the complete cells of a run into results.json and probes.csv",
    "analyze": "write analysis.md from a run's results.json, or from any --results PATH in the "
    "reference format",
    "status": "what is done, failed and left in a run folder",
    "plan": "calls and approximate tokens a run takes and what is done already (needs no server)",
    "verify": "re-hash the raw logs against the manifest; exit 1 when anything is off",
    "merge": "combine shard folders (--shard I/N runs) into one bank: merge OUT SHARD_DIR...",
    "gate": "check compacted state before it is trusted: gate STATE --ledger L [--source T], gate "
    "RUN_DIR, "
            "gate --selftest",
    "adversarial": "the adversarial compaction study (protocol/ADVERSARIAL.md): R2 and the gated "
    "G2 on sessions that "
                   "try to corrupt the state; --regenerate K",
    "audit": "score the compactions your agent already made, from its logs (no model call; "
    "--judge MODEL adds one on your server): audit PATH..., "
             "audit --source TRANSCRIPT --summary FILE, or audit alone for where the logs are",
    "judge-check": "the judge model against the hand labels: precision, recall and Cohen's "
                   "kappa per category, dev and held-out (judge-check --judge MODEL "
                   "--real-logs DIR)",
    "demo": "see it work with no model: a short SIMULATED pilot on a built-in stand-in model, "
    "into "
            f"results/{DEMO_RUN_NAME}/ in seconds",
}


def study_help(study: Study, default: bool) -> str:
    """One study in `--study`'s help, from its record: its question, protocol, regimes and what it
    reads."""
    where = [display_path(study.protocol_path), "regimes " + ",".join(study.default_regimes)]
    source = study.command_line.source_option
    where.append(f"--{source.replace('_', '-')} PATH" if source else display_path(study.tasks_path))
    if study.name in COMMAND_HELP:
        where.append(f"also the `{study.name}` subcommand")
    return f"{study.name}{' (default)' if default else ''}: {study.question} ({'; '.join(where)})"


def add_design_options(parser: argparse.ArgumentParser, only: Study | None = None,
                       taken: tuple = ()) -> None:
    """The options that choose what a run measures: study, each study's own options, regimes,
    budgets, samples, temperature; `only`: a study's own subcommand, which runs its pre-registered
    design with its own options; `taken`: flags the command declares itself, which stand for a
    study's option of the same name (score's --judge [MODEL])."""
    if only is not None:
        add_study_options(parser, only.command_line.options)
        parser.set_defaults(study=only.name, regimes=None, regime_file=None,
                            budgets=[DEFAULT_BUDGET], samples=1,
                            temperature=TEMPERATURE, judge=False, context_window=None)
        return
    parser.add_argument("--study", choices=tuple(STUDY_REGISTRY),
                        default=next(iter(STUDY_REGISTRY)),
                        help="; ".join(study_help(study, i == 0) for i,
                                       study in enumerate(STUDY_REGISTRY.values())))
    for registered in STUDY_REGISTRY.values():
        add_study_options(parser, [o for o in registered.command_line.options
                                   if o.flag not in taken])
    default = study_named(None)
    parser.add_argument("--regimes", help="comma-separated regimes to run (default: the study's "
                        f"pre-registered ones, listed under --study; {default.name}'s built-in "
                        f"regimes: {', '.join(default.regimes)}; its confirmatory test needs R1 "
                        "and R2)")
    parser.add_argument("--regime-file", help="a JSON file of your own regimes (see "
                                              "tasks/regimes.example.json); they run beside R0-R2 "
                                              "unless --regimes chooses; their text is locked in "
                                              "the run like the built-in prompts. An entry named "
                                              "R0, R1 or R2 with \"replaces\": true runs that "
                                              "regime under your prompts instead (a replication's, "
                                              "e.g. the paper's; scripts/README.md, \"Replicating "
                                              "XR-001 on its published episodes\")")
    parser.add_argument("--budgets", type=parse_budgets, default=[DEFAULT_BUDGET],
                        help="compaction budgets in output tokens, e.g. 128,256,512 (default "
                             f"{DEFAULT_BUDGET}); the instructed word limit scales with it (120 "
                             "words at 256); each budget is its own set of cells, and every "
                             "budget but 256 is exploratory")
    parser.add_argument("--samples", type=whole_number(1, MAX_SAMPLES), default=1,
                        help="repeated samples per cell, each with its own recorded seed (default "
                             "1; more is exploratory and wants --temperature above 0)")
    parser.add_argument("--temperature", type=seconds_argument(0, 2, what="a temperature"),
                        default=TEMPERATURE,
                        help="sampling temperature (default 0, the pre-registered value; another "
                             "makes the run exploratory)")
    parser.add_argument("--context-window", type=whole_number(MIN_CONTEXT_WINDOW,
                                                              MAX_CONTEXT_WINDOW),
                        metavar="TOKENS",
                        help=f"the context window every call is given (default {NUM_CTX:,}, the "
                             "pre-registered num_ctx): Ollama takes it on each call; an "
                             "OpenAI-compatible server sets its own, and the run refuses to start "
                             "when the server reports a smaller one; the sessions study cuts your "
                             "sessions into segments that fit it")


def add_study_options(parser, options: tuple) -> None:
    """A study's own options (records.Option), as the study declares them."""
    for option in options:
        parser.add_argument(option.flag, **option.settings)


def add_server_options(parser: argparse.ArgumentParser, backend_help: str) -> None:
    """Where calls go, the same four options for a run and for a judge: --backend, --host,
    --base-url and --api-key-env."""
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="ollama",
                        help=backend_help)
    parser.add_argument("--host", type=url_argument(),
                        help=f"Ollama address (default: $OLLAMA_HOST or {DEFAULT_OLLAMA_HOST})")
    parser.add_argument("--base-url", type=url_argument(),
                        help="OpenAI-compatible server, with or without /v1 (default: "
                        "$OPENAI_BASE_URL)")
    parser.add_argument("--api-key-env", default=DEFAULT_API_KEY_ENV,
                        help="name of the environment variable holding the API key (default: "
                        "%(default)s); "
                             "the key is sent as a Bearer token and never written anywhere")


def add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models", help="comma-separated model names as the server lists them, "
                        "e.g. gemma3:4b")
    add_server_options(parser, "ollama: native /api/chat (default); openai: any "
                               "/v1/chat/completions server")
    parser.add_argument("--thinking-control", choices=("both", "template", "effort", "none"),
                        default="both",
                        help="openai backend: how thinking is turned off: chat_template_kwargs "
                        "enable_thinking=false "
                             "(template), reasoning_effort=none (effort), both (default) or none")
    parser.add_argument("--concurrency", type=whole_number(1, MAX_CONCURRENCY), default=1,
                        help="calls kept waiting on the server at once (default 1, the paper's "
                             "setting). A cell's compactions stay in order; its answer calls fan "
                             "out once its final state exists. Warning: a server that batches "
                             "parallel requests can change outputs even at temperature 0")
    parser.add_argument("--shard", type=parse_shard, help="run only slice I of N of the cells "
                        "(I/N), into its own "
                        "folder; combine the folders with `merge`")
    parser.add_argument("--recheck", type=whole_number(0, 10000), default=DEFAULT_RECHECK,
                        metavar="K",
                        help="determinism probe: after the cells finish, send K journalled calls "
                             "(chosen by seed) again and record the new replies beside the old "
                             "ones; the analysis reports how many changed (default %(default)s; 0: "
                             "none)")
    parser.add_argument("--prompt-cache", choices=("on", "off"),
                        help="llama.cpp's llama-server: let it reuse cached prompt prefixes (on: "
                             "faster, but replies can then differ between runs) or not (off, the "
                             "default there: reproducible). Recorded in the lock. Ollama always "
                             "reuses its cache and cannot turn it off; vLLM sets it on the server "
                             "(--enable-prefix-caching)")
    parser.add_argument("--retries", type=whole_number(0, MAX_RETRIES), default=DEFAULT_RETRIES,
                        help="retries of a call the server answered with a transient error (429, "
                             "5xx, garbage) (default %(default)s)")
    parser.add_argument("--backoff-base", type=seconds_argument(0, MAX_DELAY_S),
                        default=DEFAULT_BACKOFF_BASE_S,
                        help="first retry delay in seconds, doubled per retry, with jitter "
                        "(default %(default)s)")
    parser.add_argument("--backoff-cap", type=seconds_argument(0, MAX_DELAY_S),
                        default=DEFAULT_BACKOFF_CAP_S,
                        help="longest retry delay in seconds (default %(default)s); a server's "
                             "Retry-After is honoured as it asks, up to 600 s, even above this cap")
    parser.add_argument("--give-up-after", type=seconds_argument(0, MAX_WAIT_S, above=True),
                        default=DEFAULT_GIVE_UP_AFTER_S,
                        help="stop the run when the server has not answered at all (refused, "
                             "reset, timed out, no whole reply by --reply-deadline) for this many "
                             "seconds across consecutive calls; no cell is marked FAILED for it, "
                             "and the same command resumes (default %(default)s)")
    parser.add_argument("--connect-timeout", type=seconds_argument(0, MAX_DELAY_S, above=True),
                        default=DEFAULT_CONNECT_TIMEOUT_S, help="seconds to wait for a connection "
                        "(default %(default)s)")
    parser.add_argument("--read-timeout", type=seconds_argument(0, MAX_WAIT_S, above=True),
                        default=DEFAULT_READ_TIMEOUT_S,
                        help="seconds to wait for the next bytes of a reply (its first ones come "
                             "once the model has written all of it), long enough for a model load "
                             "(default %(default)s)")
    parser.add_argument("--reply-deadline", type=seconds_argument(0, MAX_WAIT_S, above=True),
                        help="seconds from sending a call to having its whole reply; a reply that "
                             "drips (headers, then a byte now and then) is given up there and "
                             "retried, and counts toward --give-up-after (default: "
                             f"{REPLY_DEADLINE_READ_TIMEOUTS} x --read-timeout, "
                             f"{REPLY_DEADLINE_READ_TIMEOUTS * DEFAULT_READ_TIMEOUT_S:g} s; size "
                             "it to the longest call your model can honestly take: "
                             "scripts/README.md, \"Interrupting, resuming and recovering\")")
    parser.add_argument("--allow-code-change", action="store_true",
                        help="resume although the runner's code (scripts/run_pilot.py or "
                             "scripts/pilot/) changed; recorded as a manifest amendment")
    parser.add_argument("--allow-partial", action="store_true",
                        help="analyse an incomplete bank; every output is marked "
                        f"{partial_labels()}")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--progress-interval", type=seconds_argument(0, MAX_DELAY_S), default=5.0,
                        help=argparse.SUPPRESS)


def add_judge_options(parser, required: bool = False) -> None:
    """The judge's options, the same words on every command that takes them (issue 44)."""
    parser.add_argument("--judge", metavar="MODEL", required=required,
                        help="the judge model, as the server lists it")
    add_server_options(parser, "the judge's server: ollama (default) or openai (any "
                               "/v1/chat/completions server: vLLM, llama.cpp)")
    parser.add_argument("--judge-prompt", metavar="FILE",
                        help="the judge's question (default: tasks/sessions/judge-prompt.txt); "
                             "it must hold {summary}, {category} and {item} once each")


def add_audit_judge_options(parser: argparse.ArgumentParser) -> None:
    """`audit --judge MODEL` (issue 44): the shared judge options, then the threshold, the
    agreement folder and how the judge's calls are retried; none sends anything without --judge."""
    add_judge_options(parser)
    add_judge_reading_options(parser)
    parser.add_argument("--labels", help=argparse.SUPPRESS)     # the tests' labelled sets
    add_judge_call_options(parser, "the judge's calls, as a run's (default %(default)s)")


def add_judge_call_options(parser: argparse.ArgumentParser, help_text: str) -> None:
    """How the judge's calls are retried and waited for, as a run's: --retries, --give-up-after,
    --connect-timeout and --read-timeout."""
    for option, kind, default in (("--retries", whole_number(0, MAX_RETRIES), DEFAULT_RETRIES),
                                  ("--give-up-after", seconds_argument(0, MAX_WAIT_S, True),
                                   DEFAULT_GIVE_UP_AFTER_S),
                                  ("--connect-timeout", seconds_argument(0, MAX_DELAY_S, True),
                                   DEFAULT_CONNECT_TIMEOUT_S),
                                  ("--read-timeout", seconds_argument(0, MAX_WAIT_S, True),
                                   DEFAULT_READ_TIMEOUT_S)):
        parser.add_argument(option, type=kind, default=default, help=help_text)


def add_judge_reading_options(parser) -> None:
    """How the judge's replies are read and what its pages say of it, on audit and score alike."""
    parser.add_argument("--judge-threshold", metavar="P", type=seconds_argument(
                            0, 1, what="a probability"),
                        help="P(KEPT) at or above which an item is kept, where the server gives "
                             "token probabilities (default: the one judge-check chose on the dev "
                             "labels, from --judge-agreement; 0.5 without it)")
    parser.add_argument("--judge-agreement", metavar="DIR", type=folder_argument(
                            "--judge-agreement"),
                        help="a judge-check output folder: the judge's agreement with the hand "
                             "labels, recomputed from it, is named on every page the judge "
                             "touched (without it: \"agreement not measured\", read as below the "
                             "protocol's threshold)")


def partial_labels() -> str:
    """What the studies mark an analysis of an incomplete bank, and which analyse one unasked, for
    --allow-partial's help."""
    labels: dict = {}
    for study in STUDY_REGISTRY.values():
        labels.setdefault(study.design.partial_label, []).append(study.name)
    unasked = [study.name for study in STUDY_REGISTRY.values() if study.design.partial_by_default]
    return " or ".join(f"{label} ({', '.join(names)})" for label, names in labels.items()) + \
        (f"; {', '.join(unasked)} analyse{'s' if len(unasked) == 1 else ''} one unasked" if unasked
         else "")


def add_folder_options(parser: argparse.ArgumentParser, episodes: bool = True) -> None:
    default = study_named(None).name
    parser.add_argument("--out", type=folder_argument("--out"),
                        help=f"run folder (default: results/STUDY, e.g. results/{default}; a run "
                             "of the first N episodes, another task set or another design gets a "
                             f"folder of its own, e.g. results/{default}-eN)")
    if episodes:
        parser.add_argument("--episodes", type=whole_number(1, MAX_EPISODES),
                            help="use the first N episodes (or instances, or sessions) of the "
                                 f"study's task set (default: all of them, {N_EPISODES} in "
                                 f"{default}'s); a smaller run gets its own folder")
        pinned = [
            f"{study.name}: {display_path(study.tasks_path)}"
            for study in STUDY_REGISTRY.values()
            if study.command_line.source_option is None
        ]
        parser.add_argument("--tasks", help="task file (default: the study's pre-registered one; "
                            f"{', '.join(pinned)})")


def add_score_judge_options(parser: argparse.ArgumentParser) -> None:
    """score's judge (issue 44), in the words audit and judge-check use; its server is given with
    the run's options score already accepts (--backend, --host or --base-url, --api-key-env)."""
    group = parser.add_argument_group(
        "the judge", "a model on your own server that decides what the rules cannot: whether each "
                     "request, standing instruction, decision and open task the rules found is "
                     "kept, lost or stated otherwise in a summary; one short call per item, "
                     "journalled and resumable; without --judge nothing is sent")
    group.add_argument("--judge", metavar="MODEL", nargs="?", const=True, default=False,
                       help="the judge model, as the server (--backend, --host or --base-url, "
                            "--api-key-env) lists it (a sessions run; --judge alone is the "
                            "constraints study's option, as its run's command is typed)")
    group.add_argument("--judge-prompt", metavar="FILE",
                       help="the judge's question (UTF-8 text holding {summary}, {category} and "
                            "{item} once each; default tasks/sessions/judge-prompt.txt)")
    add_judge_reading_options(group)


def whole_number(minimum: int, maximum: int) -> Callable[[str], int]:
    """An argparse type: a whole number from `minimum` to `maximum`."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"expected a whole number from {minimum} to "
                                             f"{maximum}, got {value}")
        return value
    return parse


def seconds_argument(minimum: float, maximum: float, above: bool = False,
                     what: str = "a number of seconds") -> Callable[[str], float]:
    """An argparse type: a finite number (of seconds) from `minimum` (excluded if `above`) to
    `maximum`."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        low_ok = value > minimum if above else value >= minimum
        if not math.isfinite(value) or not low_ok or value > maximum:
            bound = f"above {minimum:g}" if above else f"from {minimum:g}"
            raise argparse.ArgumentTypeError(
                f"expected {what} {bound} to {maximum:g}, got {text!r}"
            )
        return value
    return parse


def folder_argument(option: str, optional: bool = True) -> Callable[[str], str]:
    """An argparse type: a folder path that can be one. An empty path is not the default folder, a
    control character would make a folder no one can type, and a link to nowhere cannot be written
    into: each is one line."""
    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError("an empty path names no folder; give one" +
                                             (f", or leave {option} out for the default" if optional
                                              else ""))
        control = next((ch for ch in text if ord(ch) < 32 or ord(ch) == 127), None)
        if control is not None:
            raise argparse.ArgumentTypeError(f"{text!r} holds a control character ({control!r}); "
                                             "give a folder name without one")
        for place in (Path(text), *Path(text).parents):
            if place.is_symlink() and not place.exists():
                raise argparse.ArgumentTypeError(f"{place} is a link to {os.readlink(place)}, "
                                                 "which does not exist; "
                                                 f"make that folder first, or give another one")
        return text
    return parse


def url_argument() -> Callable[[str], str]:
    """An argparse type: a server address check_server_url accepts."""
    def parse(text: str) -> str:
        try:
            return check_server_url(text, "")
        except PilotError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    return parse


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad option gives one line that says what to do next."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"error: {message} (see `{self.prog} --help`)\n")


def build_parser(command: str) -> argparse.ArgumentParser:
    prog = "run_pilot.py" if command == "pilot" else f"run_pilot.py {command}"
    epilog, usage, description = None, None, COMMAND_HELP[command]
    if command == "pilot":
        # the subcommands first, under a one-line usage, not after 170 lines of options (issue 41)
        usage = "run_pilot.py [COMMAND] [options]"
        description += ("\n\nsubcommands (run_pilot.py COMMAND --help for each):\n" + "\n".join(
            f"  {name:<{max(map(len, COMMAND_HELP))}}  {text}" for name,
            text in COMMAND_HELP.items()))
        epilog = (
            "exit codes: 0 done; 1 verify found a problem (gate: a state fails); 2 bad input "
            "or no server; 3 a cell FAILED or the server stopped answering (--give-up-after); 4 "
            "the disk is full; 130 interrupted (rerun the same command to resume)\n\nthe user "
            "guide: scripts/README.md")
    parser = OneLineParser(prog=prog, usage=usage, description=description, epilog=epilog,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    if command in ("pilot", "run"):
        add_folder_options(parser)
        add_design_options(parser)
        add_run_options(parser)
    elif command in ("score", "status", "verify"):
        parser.add_argument("folder", nargs="?", metavar="RUN_DIR", type=folder_argument("RUN_DIR"),
                            help="the run folder (the same as --out RUN_DIR)")
        add_folder_options(parser)
        if command == "score":
            parser.add_argument("--force", action="store_true", help="replace a results.json "
                                "that holds more probes than this scoring gives")
            add_score_judge_options(parser)
        # without RUN_DIR or --out, the folder is found as the run named it: from the run's own
        # options as typed
        # (--study, --sessions, --regimes, ...); a folder named with --out says its own study
        add_design_options(parser, taken=("--judge",) if command == "score" else ())
        add_run_options(parser.add_argument_group(
            "the run's options", f"{command} reads --shard (a shard's folder is named after it) "
                                 + ("and, with --judge, the judge's server (--backend, --host or "
                                    "--base-url, --api-key-env), its timeouts and retries; "
                                    "the others are" if command == "score" else
                                    "and none of the others; they are") +
                                 f" accepted so that {command} can go in front of a run's command "
                                 "as typed, and find its folder"))
    elif command == "analyze":
        add_folder_options(parser)
        parser.add_argument("--results", help="a results.json to analyse (our format or the XR-001 "
                                              "reference format); the analysis is printed, and "
                                              "analysis.md, figures and report are written to "
                                              "--out DIR if given (a read-only run included)")
        parser.add_argument("--allow-partial", action="store_true",
                            help="analyse an incomplete bank; the output is marked "
                            f"{partial_labels()}")
    elif command == "plan":
        add_folder_options(parser)
        add_design_options(parser)
        # plan goes in front of a run's own command as typed: it reads --models and --shard, and
        # accepts the
        # server's options without using them (it sends nothing)
        add_run_options(parser.add_argument_group(
            "the run's options", "plan reads --models, --shard and --recheck; the others (the "
                                 "server, retries, concurrency) are accepted so that plan can go "
                                 "in front of a run's command, and are not used"))
        # --recheck as given, else as the run was started, else the default
        parser.set_defaults(recheck=None)
    elif command == "generate":
        parser.add_argument("--episodes", type=whole_number(1, MAX_EPISODES),
                            help=f"number of episodes (default {N_EPISODES}, at most "
                            f"{MAX_EPISODES})")
        parser.add_argument("--tasks", help="where to write (default: tasks/tasks.json, or "
                                            "tasks/constraints.json with --study constraints)")
        parser.add_argument("--force", action="store_true", help="overwrite a different existing "
                            "task file (only a task file of one of the studies: never another "
                            "file)")
        parser.add_argument("--study", choices=tuple(STUDY_REGISTRY),
                            default=next(iter(STUDY_REGISTRY)),
                            help="which study's task file to make (default %(default)s)")
        for registered in STUDY_REGISTRY.values():
            add_study_options(parser, registered.command_line.generate_options)
    elif command == "demo":
        demo_studies = [study.name for study in STUDY_REGISTRY.values() if study.demo is not None]
        parser.add_argument("--out", type=folder_argument("--out"),
                            help=f"folder for the demo run (default: results/{DEMO_RUN_NAME}; "
                                          f"results/{DEMO_RUN_NAME}-STUDY for another --study)")
        parser.add_argument("--study", choices=demo_studies, default=demo_studies[0],
                            help=f"the study to show: {' or '.join(demo_studies)} (default "
                            f"{demo_studies[0]})")
        parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    elif command == "gate":
        parser.epilog = ("exit codes: 0 every state passes (self-test: every case behaves); 1 a "
                         "state fails (RUN_DIR: a final state); 2 bad input. A run of a study that "
                         "gates its states as it scores them (the adversarial and sessions "
                         "studies) is scored again and its analysis printed, with the gate's "
                         "findings per regime; exit 0. No model is called.")
        parser.add_argument("target", metavar="STATE|RUN_DIR", nargs="?",
                            help="a compacted state (text or JSON) to check, or a run folder to "
                            "gate every state of")
        parser.add_argument("--ledger", help="JSON ledger of authoritative values, items and "
                                             "statuses, and the permissions in force (format: "
                                             "scripts/README.md, 'The ledger format')")
        parser.add_argument("--source", help="the transcript the state was made from (instructions "
                                             "with no source in it are flagged, and so are claims "
                                             "of done, verified or approved that neither the "
                                             "ledger nor it supports)")
        parser.add_argument("--json", action="store_true", help="findings as JSON on stdout")
        parser.add_argument(
            "--selftest",
            action="store_true",
            help="run the built-in states, each with one defect, and the clean ones",
        )
    elif command == "adversarial":
        parser.add_argument("--out", type=folder_argument("--out"),
                            help="run folder (default: results/adversarial; results/adversarial-eN "
                                 "for --episodes N)")
        parser.add_argument("--episodes", type=whole_number(1, MAX_EPISODES),
                            help="only the first N sessions")
        parser.add_argument("--tasks", help="task file (default: tasks/adversarial.json, "
                            "pre-registered)")
        parser.add_argument("--write-tasks", action="store_true",
                            help="write tasks/adversarial.json from the generator (it must be the "
                            "committed one)")
        add_design_options(parser, only=study_named("adversarial"))
        add_run_options(parser)
    elif command == "audit":
        parser.epilog = ("Without --judge no model is called, no connection is opened and "
                         "nothing is written beside the logs; keys and passwords are masked in "
                         "every output. With --judge MODEL, the judge's calls are journalled in "
                         "--out (judge-calls.jsonl) and a rerun sends only those not made. Exit "
                         "codes: 0 done; 2 bad input; 3 the judge's server stopped answering; "
                         "130 interrupted. The walkthrough: tasks/sessions/README.md, \"7. Audit "
                         "the compactions your agent already made\"")
        parser.add_argument("paths", metavar="PATH", nargs="*",
                            help="agent log files or folders (read only; subfolders read, links "
                            "never followed; a file that cannot be read is skipped, and one "
                            "whose last line was cut is read without it, each named on stderr "
                            "and in the report); "
                                 "none: print where each agent keeps its logs and read nothing")
        parser.add_argument("--source", metavar="TRANSCRIPT",
                            help="a transcript in any format the sessions study reads (with "
                            "--summary)")
        parser.add_argument("--summary", metavar="FILE",
                            help="a summary made of the transcript by any compactor (UTF-8 text)")
        parser.add_argument("--out", metavar="DIR", type=folder_argument("--out"),
                            help="folder for audit.csv, analysis.md, report.html and figures/ "
                                 "(default: results/audit-<the digest of what was read>); never "
                                 "inside the logs' folder, and one audit at a time in it")
        parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
        add_audit_judge_options(parser)
    elif command == "judge-check":
        parser.epilog = ("The threshold on P(KEPT) is chosen on the dev labels only, and the "
                         "held-out figures are given at it. Every call is journalled in "
                         "OUT/judge-calls.jsonl as it returns: after "
                         "Ctrl-C, a kill or a server that stopped answering, the same command "
                         "sends only the calls not yet made. Exit codes: 0 done; 2 bad input or "
                         "no server; 3 the server stopped answering; 130 interrupted. "
                         "protocol/SESSIONS.md, the amendment of 2026-12-06 (17)")
        add_judge_options(parser, required=True)
        parser.add_argument("--real-logs", metavar="DIR", type=folder_argument("--real-logs"),
                            help="the folder of the real Claude Code logs the labels in "
                                 "tests/labelled/compactions/ name (their README says where they "
                                 "are published); without it only the gate's snippets are asked")
        parser.add_argument("--out", metavar="DIR", type=folder_argument("--out"),
                            help="folder for judge-calls.jsonl, judge-lock.json, judge-check.md "
                                 "and judge-check.json (default: results/judge-check-MODEL)")
        parser.add_argument("--labels", help=argparse.SUPPRESS)     # the tests' labelled sets
        add_judge_call_options(parser, "as a run's (default %(default)s)")
        parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    elif command == "merge":
        parser.add_argument("out_dir", metavar="OUT", type=folder_argument("OUT", optional=False),
                            help="a new or empty folder for the merged run")
        parser.add_argument("shard_dirs", metavar="SHARD_DIR", nargs="+",
                            type=folder_argument("SHARD_DIR", optional=False),
                            help="shard run folders")
    return parser


# they read and analyse a bank, and make no model calls
BANK_COMMANDS = ("score", "analyze", "merge", "gate")

# each command's module is imported when it runs: `--help` and a bad option import none of them
COMMANDS = {"pilot": "commands", "generate": "folder_commands", "run": "commands",
            "score": "commands",
            "analyze": "commands", "status": "folder_commands", "plan": "folder_commands",
            "verify": "folder_commands",
            "merge": "folder_commands", "demo": "cli", "gate": "gate_command",
            "adversarial": "commands",
            "audit": "audit_command", "judge-check": "judge_check_command"}


def command_named(command: str) -> Callable:
    return getattr(importlib.import_module(f".{COMMANDS[command]}", __package__),
                   f"command_{command.replace('-', '_')}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = "pilot"
    if argv and argv[0] in COMMANDS:
        command, argv = argv[0], argv[1:]
    if command == "plan" and argv and argv[0] in STUDY_REGISTRY and argv[0] in COMMANDS:
        # `plan` in front of a study's own subcommand, as the guide types it
        argv = ["--study", argv[0], *argv[1:]]
    original_argv = list(argv) if command == "pilot" else [command, *argv]
    try:
        args = build_parser(command).parse_args(argv)
    except SystemExit as exc:          # --help, or a bad option already explained by argparse
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    args.argv = original_argv
    try:
        with collector_paused() if command in BANK_COMMANDS else contextlib.nullcontext():
            return command_named(command)(args)
    except (PilotError, RuleInputError) as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        print("interrupted; nothing completed was lost. Rerun the same command to go on.",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as err:
        where = err.filename or "file system"
        if is_disk_full(err):
            print(f"error: {DiskFull(where)}", file=sys.stderr)
            return EXIT_DISK_FULL
        elsewhere = {"generate": "write elsewhere with --tasks PATH",
                     "merge": "merge into another folder"}
        print(f"error: {err.strerror or err} ({where}); check the path and its permissions, or "
              f"{elsewhere.get(command, 'choose another folder with --out')}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    speed.EXIT_WITHOUT_FREEING = True
    end_process(main())
