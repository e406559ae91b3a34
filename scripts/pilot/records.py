"""Records and errors: the runner's pinned call settings, its exit codes and errors, the record
types every module passes around (ChatRequest, ChatResponse, Regime, CallSpec, Cell, Settings),
hashing, and the Study record with its registry and the Verdict the core reads of a study's
analysis.

Errors are raised inside and turned into exit codes only by the command line (cli.main). A study
reaches the shared code only through its Study record: the core looks a study up by the key a run
folder records (study_named, folder_study) and never names one; the label, answer and completeness
of its analysis the core reads only as a Verdict (verdict_of). """
from __future__ import annotations

import collections
import dataclasses
import datetime as _dt
import errno
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Callable


# segments of a pseudoword episode: the most a recent regime can keep
N_SEGMENTS = 4

MAX_STATE_WORDS = 120                  # instructed compaction length, both regimes

COMPACTION_NUM_PREDICT = 256           # hard output cap on every compaction call

ANSWER_NUM_PREDICT = 192               # hard output cap on every answer call

# context window pinned on every call (the default of --context-window)
NUM_CTX = 4096

# the windows --context-window takes, in tokens
MIN_CONTEXT_WINDOW, MAX_CONTEXT_WINDOW = 2048, 2 ** 21

TEMPERATURE = 0.0

CALL_SEED = 77001                      # sampling seed sent with every call (PROTOCOL.md section 2)

# the pre-registered operating point (120 words : 256 tokens)
DEFAULT_BUDGET = COMPACTION_NUM_PREDICT

# scripts/pilot/records.py -> the repository
REPO_ROOT = Path(__file__).resolve().parent.parent.parent

RESULTS_ROOT = REPO_ROOT / "results"

EXIT_OK, EXIT_VERIFY_FAILED, EXIT_USAGE, EXIT_CELLS_FAILED, EXIT_DISK_FULL, EXIT_INTERRUPTED = (0,
    1, 2, 3, 4, 130)

# Retry policy defaults (shown in --help): capped exponential backoff with full jitter.
DEFAULT_RETRIES = 6

# calls re-sent by the runner's determinism probe after the cells finish
DEFAULT_RECHECK = 8

DEFAULT_BACKOFF_BASE_S = 2.0

DEFAULT_BACKOFF_CAP_S = 60.0

DEFAULT_CONNECT_TIMEOUT_S = 5.0

DEFAULT_READ_TIMEOUT_S = 900.0         # long: the first call may wait for a model load

# a whole reply's deadline, by default: twice the read timeout (1800 s)
REPLY_DEADLINE_READ_TIMEOUTS = 2

MAX_SAMPLES = 100

# a server unreachable this long is taken for dead: the run stops
DEFAULT_GIVE_UP_AFTER_S = 180.0

PREFLIGHT_TIMEOUT_S = 1.5              # the "no server" message must come within 2 seconds

MAX_RETRY_AFTER_S = 600.0

# Bounds on the command line's numbers: anything beyond them is a typo, not a setting.
MAX_EPISODES, MAX_CONCURRENCY, MAX_RETRIES = 10000, 256, 100

# a retry delay or connect timeout; a reply timeout or give-up
MAX_DELAY_S, MAX_WAIT_S = 3600.0, 86400.0


class PilotError(Exception):
    """A failure with a one-line message telling the user what to do next."""

    exit_code = EXIT_USAGE


class TransientError(PilotError):
    """The server may answer on a later try (refused, reset, timeout, 429, 5xx, garbage).

    `reason` is the short cause shown on the progress line; `unreachable` is true when no reply came
    at all (refused, reset, timed out), which counts toward --give-up-after rather than --retries.
    """

    def __init__(self, message: str, retry_after: float | None = None, reason: str | None = None,
                 unreachable: bool = False):
        super().__init__(message)
        self.retry_after = retry_after
        self.reason = reason or message
        self.unreachable = unreachable

    @property
    def loading(self) -> bool:
        """The server answered that the model is still loading (llama.cpp, vLLM, Ollama say so in a
        503)."""
        return not self.unreachable and "loading" in self.reason.lower()


class FatalCallError(PilotError):
    """The server refused this request for good (4xx); retrying cannot help."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class RunInterrupted(PilotError):
    exit_code = EXIT_INTERRUPTED


class ServerGone(PilotError):
    """The server has been unreachable for longer than --give-up-after: stop, fail nothing, resume
    later."""

    exit_code = EXIT_CELLS_FAILED


class DiskFull(PilotError):
    """A write failed for lack of space; what was already journalled is intact."""

    exit_code = EXIT_DISK_FULL

    def __init__(self, path: Path | str, next_step: str = "free some space and run the same "
                 "command again"):
        super().__init__(f"the disk is full: could not write {path}; nothing already journalled "
                         f"was lost; {next_step}")
        self.path = path


MAX_TOKEN_COUNT = 10_000_000           # more tokens than any context window holds


def known_count(value: Any) -> int | None:
    """A token count as a server reported it or a journal holds it: absent, not a whole number,
    negative or more than any window holds means unknown, never 0, and enters no mean, cost or
    figure."""
    return (value if isinstance(value, int) and not isinstance(value,
                                                               bool) and 0 <= value
            <= MAX_TOKEN_COUNT else None)


def is_disk_full(err: OSError) -> bool:
    return err.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


@dataclasses.dataclass(frozen=True)
class ChatRequest:
    """Backend-neutral request: every knob that shapes an output is here and nowhere else."""

    model: str
    messages: tuple
    max_output_tokens: int
    context_window: int
    temperature: float
    seed: int
    thinking_off: bool
    # the most likely tokens asked for at each of the reply's first positions (0: none asked; the
    # runs ask none, the judge asks a few to read its verdict's probability)
    top_logprobs: int = 0


@dataclasses.dataclass(frozen=True)
class ChatResponse:
    """Backend-neutral response; token counts are None when the server did not report them."""

    text: str
    reasoning: str
    prompt_tokens: int | None
    output_tokens: int | None
    stop_reason: str | None
    timings: dict
    raw_meta: dict
    # What the server says about its prompt processing: prompt tokens, how many came from its prompt
    # cache and how
    # many it evaluated; None where it does not say (see server_work_from_* below).
    server_work: dict = dataclasses.field(default_factory=dict)
    # where top_logprobs was asked: for each of the reply's first positions (at most
    # TOKEN_POSITIONS), the token chosen and the alternatives as ((token, logprob), ...); only what
    # a server could have meant is kept (backends.token_choices)
    token_choices: tuple = ()


@dataclasses.dataclass(frozen=True)
class JudgeSetup:
    """A judge model as `--judge` and its options named it (a study's Study.open_judge reads it):
    its backend, which passed the preflight, and the model's identity as the server described it."""

    backend: Any
    model: str
    identity: dict
    policy: Any                         # runner.RetryPolicy: retried as a run's calls are
    prompt_path: Path | None            # --judge-prompt (None: the study's own question)
    threshold: float | None             # --judge-threshold (None: the default, or judge-check's)
    agreement_dir: Path | None          # --judge-agreement: a judge-check's folder


@dataclasses.dataclass(frozen=True)
class Regime:
    """A memory regime as data: what the answers see, how the state is written, how it is read
    back."""

    name: str
    description: str
    context: str                        # what the answers see: "transcript", "state" or "recent"
    answer_template: str                # text with {context} and {question}
    compaction_template: str | None = None   # text with {previous_state}, {segment}, {max_words}
    # write-time retention: "none", "prose", "typed" or "section:<heading>"
    state_reader: str = "none"
    keep_last: int | None = None        # "recent": the last k segments verbatim, no compaction call
    exploratory: bool = False           # not one of the pre-registered R0, R1, R2
    origin: str = "built-in"            # or the regime file it came from
    # for studies of standing instructions: with, without, upper_bound, sidecar
    condition: str | None = None
    judge: bool = False                 # --judge: the model judges its own final state
    # the release gate decides which compacted state the cascade carries on from
    gated: bool = False
    # a system message sent before every call of the regime (a regime file's)
    system: str | None = None
    # what stands for the previous state at the first checkpoint (None: the study's)
    empty_state: str | None = None

    @property
    def compacts(self) -> bool:
        """True when the model is called to write a state after every segment."""
        return self.context == "state"


@dataclasses.dataclass(frozen=True)
class CallSpec:
    """One planned call of a cell, in cascade order, with its stage and output budget."""

    kind: str                           # "compact_<k>" or "question_<id>"
    stage: str                          # "compaction" or "answer"
    max_output_tokens: int
    segment: int | None = None
    question_id: int | None = None
    # a call sampled apart from the run's temperature and seed (recorded on it)
    temperature: float | None = None
    seed: int | None = None
    # False: a candidate drawn beside the cascade, never fed to the next call
    cascade: bool = True

    @property
    def is_compaction(self) -> bool:
        return self.stage == "compaction"


class Cell(collections.namedtuple("Cell", "model regime episode budget sample",
                                  defaults=(DEFAULT_BUDGET, 0))):
    """One cascade and its probes: a model x regime x episode, at a compaction budget, for one
    sample."""


@dataclasses.dataclass(frozen=True)
class BackendOptions:
    """Where and how a run's calls are sent, as the command line said: the backend builds itself
    from this."""

    name: str                           # a BACKENDS key, or the demo's simulated one
    host: str | None = None             # Ollama's address (None: $OLLAMA_HOST or the default)
    base_url: str | None = None         # an OpenAI-compatible server's (None: $OPENAI_BASE_URL)
    api_key_env: str = "OPENAI_API_KEY"
    thinking_control: str = "both"
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S
    read_timeout: float = DEFAULT_READ_TIMEOUT_S
    # seconds for a whole reply (None: REPLY_DEADLINE_READ_TIMEOUTS x read)
    reply_deadline: float | None = None

    @property
    def deadline_s(self) -> float:
        return self.reply_deadline or REPLY_DEADLINE_READ_TIMEOUTS * self.read_timeout


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything that shapes an output. The lock is this record; the differences refused on resume
    are computed from its fields; its hash is stamped on every call record."""

    backend: str
    base_url: str
    tasks_sha256: str
    protocol_sha256: str
    prompts_sha256: str
    regimes: tuple
    regimes_sha256: str
    n_episodes: int
    budgets: tuple
    samples: int
    temperature: float
    options: dict
    # "on", "off", or "server" (set on the server, not per request)
    prompt_cache: str = "off"
    # a study's own options (Study.read_options)
    study_options: dict = dataclasses.field(default_factory=dict)
    # built-in regime -> the file its prompts came from
    replaced_regimes: dict = dataclasses.field(default_factory=dict)
    # --context-window: the window every call is given (Ollama's num_ctx)
    context_window: int = NUM_CTX

    def as_lock(self) -> dict:
        """The record as the manifest's lock keeps it: a study's options, replaced regimes and a
        context window other than NUM_CTX only where there are any, so that the locks and hashes of
        runs without them are what they always were."""
        fields = dataclasses.asdict(self)
        for optional in ("study_options", "replaced_regimes"):
            if not fields[optional]:
                del fields[optional]
        if fields["context_window"] == NUM_CTX:
            del fields["context_window"]
        return fields

    def sha256(self) -> str:
        # stamped on every call record: computed once per configuration (it is frozen), not once per
        # call
        if "_sha256" not in self.__dict__:
            object.__setattr__(self, "_sha256", sha256_text(canonical_json(self.as_lock())))
        return self.__dict__["_sha256"]


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00",
        "Z")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


# A lone surrogate (half of a UTF-16 pair) is not a character, so no UTF-8 file can hold one; JSON
# can still name
# one with a \u escape, and such a string can be neither written nor printed. Inputs holding one are
# refused.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def lone_surrogate(text: str, value: Any) -> str | None:
    """The first lone surrogate among the strings and keys of `value`, parsed from the JSON `text`,
    as its escape (`\\ud800`), or None; only a text with a surrogate escape in it is searched."""
    if not SURROGATE_ESCAPE.search(text):
        return None
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += list(item.keys()) + list(item.values())
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as err:
                return f"\\u{ord(item[err.start]):04x}"
    return None


def lone_surrogate_problem(where: str, escape: str) -> str:
    return (f"{where} holds {escape}, a lone surrogate (half of a UTF-16 pair), which is not a "
            "character and cannot be written or printed")


def read_canonical(path: Path) -> bytes:
    """A text file's bytes in canonical form (CRLF read as LF), so a git checkout cannot change
    them."""
    return path.read_bytes().replace(b"\r\n", b"\n")


def file_sha256(path: Path) -> str:
    return sha256_bytes(read_canonical(path))


def display_path(path: Path) -> str:
    """A path as a manifest records it and a message shows it: relative to the repository inside it,
    absolute outside it (a relative path outside it, recorded as typed, would later be read against
    the repository)."""
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return os.path.abspath(path)


# sentences, or the state it wrote before) and answers from them; in prose states only, it forgets a
# fixed
# share of the facts, each chosen by a hash of its names and STAND_IN_SEED, so R0 and R2 stay at the
# ceiling
# and R1 loses. It speaks Ollama's API on 127.0.0.1 (port 0) and the run reaches it through
# OllamaBackend, so
# the demo goes through the same journal, lock, scoring, analysis, figures and report as a real run;
# its
# backend is recorded as "simulated", and every output of a simulated bank says SIMULATED first.
SIMULATED_BACKEND = "simulated"

SIMULATED_STAMP = "SIMULATED (stand-in model, not a result)"


def is_simulated(data: dict) -> bool:
    """Whether a manifest (its lock) or a results bank (its run block) comes from the stand-in
    model."""
    for part in ("lock", "run"):
        section = data.get(part) if isinstance(data, dict) else None
        if isinstance(section, dict) and (section.get("simulated") is True
                                          or section.get("backend") == SIMULATED_BACKEND):
            return True
    return False


@dataclasses.dataclass(frozen=True)
class Option:
    """One command-line option of a study, as argparse takes it: its flag and add_argument's
    keywords."""

    flag: str                           # "--judge"
    # add_argument's keywords: action, type, default, metavar, help
    settings: dict

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    def given(self, parsed: dict) -> bool:
        """Whether a parsed command line gives this option a value other than its default."""
        default = self.settings.get("default", False if self.settings.get("action")
                                    == "store_true" else None)
        return self.dest in parsed and parsed[self.dest] != default


@dataclasses.dataclass(frozen=True)
class CommandLine:
    """A study's own command-line options, and the files a user brings it in place of a task file.
    Any of them given to another study is refused in one line that names the study it belongs to."""

    options: tuple = ()                 # Option records: its options of run, the pilot and plan
    # ({option: value} as parsed) -> its own options as the lock records them
    read_options: Callable | None = None
    # (regimes, {option: value}) -> its regimes as its options make them
    adjust_regimes: Callable | None = None
    # Option records: its options of `generate`, which its generate hook reads
    generate_options: tuple = ()
    # its option that names the file or folder the user brings (not --tasks)
    source_option: str | None = None
    # (path, **its options) -> (raw bytes, tasks); the bytes are what is hashed
    read_source: Callable | None = None
    describe_tasks: Callable | None = None  # (tasks) -> lines `plan` prints about what was read
    # (tasks) -> warnings a run prints about what was read (a file half unread)
    task_warnings: Callable | None = None


@dataclasses.dataclass(frozen=True)
class Design:
    """What a study's pre-registered design allows and how its cascade runs, where that differs from
    the default."""

    max_models: int | None = None       # the most models one run may test (None: any number)
    # whether it takes budget sweeps, samples, other regimes and temperatures
    variants: bool = True
    # a probe of a budget or sample the bank does not declare is a problem
    declared_variants_only: bool = False
    # (regimes of a regime file, names chosen) -> (regimes, names) as it runs them
    user_regimes: Callable | None = None
    # (suffix, what the study names with it): regime names a file may not end in
    reserved_suffixes: tuple = ()
    # (regime, episode, compaction replies so far) -> the state (None: the last)
    state_after: Callable | None = None
    # (calls per model) -> a line `plan` adds about the study's pre-registered size
    plan_note: Callable | None = None
    # what an analysis of an incomplete bank is marked (--allow-partial)
    partial_label: str = "NON-CONFIRMATORY"
    # no confirmatory test: an incomplete bank is analysed as it is, marked so
    partial_by_default: bool = False


@dataclasses.dataclass(frozen=True)
class Demo:
    """How `demo --study KEY` shows a study with no model: the stand-in model its module makes, and
    its size."""

    # (tasks) -> the stand-in: an object with reply(prompt) -> text
    stand_in: Callable
    episodes: int | None = None         # how many episodes the demo runs (None: the demo's default)


@dataclasses.dataclass(frozen=True)
class Answer:
    """What a study says of its own analysis, made by its Report.answer hook from the analysis's
    counts (in its own keys): what every report says first after the label, and why the label is
    what it is. The core reads it only inside the analysis's Verdict (verdict_of below).
    - sentences: one plain sentence per question the study asks (reports.answer_md and answer_html
      lay them out);
    - figure: the file name of the one figure that shows them, one of its figures (None: it has
      none);
    - reasons: why its label is not CONFIRMATORY, in its words (empty: it gives none); the closing
      lines of a run say them after the label, and a figure's note says the first;
    - closing: what only the closing lines of a run add after the sentences, a cause the reports
      show in their own tables (empty: nothing)."""

    sentences: tuple[str, ...]
    figure: str | None = None
    reasons: tuple[str, ...] = ()
    closing: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What the shared core reads of a study's analysis to say it: its label, answer, completeness,
    SIMULATED mark and partial view. The analysis stays the study's own dict (its analysis.md,
    headline and figures read it, and it is handed to the figures as it is); verdict_of makes this
    record of it, the one place the core reads these keys of an analysis. Each field, who fills it
    and who reads it:
    - study: the study's key (or protocol id) the analysis records, None where it records none (the
      default study); from the analysis's "study"; read to find the study (its render_md, headline
      and pages);
    - label: CONFIRMATORY, NON-CONFIRMATORY, UNINFORMATIVE or EXPLORATORY, from the analysis's
      "label" (the study computes it from the probes); read by every report's opening, the closing
      lines and the figures' notes;
    - complete, complete_cells, expected_cells: whether every expected cell has all its probes, and
      how many do of how many, from the analysis's "complete" and "coverage"; read by the commands,
      which refuse the analysis of an incomplete bank unless --allow-partial;
    - answer: the study's Answer (sentences, headline figure, reasons), from its Report.answer hook;
      None for a study without one; read by analysis.md, RESULTS.md, report.html and the closing
      lines;
    - simulated, partial: the two fields the core fills (bank.analyze_bank): whether the bank comes
      from the demo's stand-in model, and a stopped run's partial view (bank.partial_view:
      "episodes_complete", "episodes", "cells_left_out"; None for a finished run); read by the
      SIMULATED stamp of every output and the note that opens the analysis of an unfinished run."""

    study: str | None
    label: str
    complete: bool
    complete_cells: int
    expected_cells: int
    answer: Answer | None = None
    simulated: bool = False
    partial: dict | None = None


@dataclasses.dataclass(frozen=True)
class Report:
    """What shows a study's bank besides analysis.md: its answer, its figures, RESULTS.md and
    report.html (pilot/pages.py writes them). A hook left out is the shared one: no answer, no
    figures; a RESULTS.md and a report.html made of the label, analysis.md (and the figures, where
    there are any). Every report opens with the answer: the label, then answer's sentences and its
    headline figure (reports.answer_md and answer_html)."""

    answer: Callable | None = None      # (analysis) -> Answer(sentences, headline figure, reasons)
    # (results, analysis, stamped) -> [svg.Figure(file name, caption, svg)]
    figures: Callable | None = None
    results_md: Callable | None = None  # (analysis, figures, source) -> RESULTS.md
    # (results, analysis, figures drawn with stamped=False) -> report.html
    report_html: Callable | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Study:
    """One pre-registered study: everything the shared code needs to know of it, and nothing else
    does.

    The runner, run folder, results bank, reports and commands ask a study only through these
    fields; a study is registered once (register_study, by keyword) and found by the key its run
    folders record (study_named). The fields, in the order a study is written (the recipe:
    pilot/studies/__init__.py):
    - who it is: its key, its question (what `--study`'s help says), its protocol's id and document;
    - its tasks: the committed task file and its sha256; load_tasks returns {"tasks", "sha256",
      "kind" (pinned, generated or external), "path"}; generate({"episodes": N or None, its generate
      options}) -> (bytes, what); a task file names its study in a `study` field (or its protocol id
      in `protocol`);
    - its calls: its regimes and the pre-registered ones; the hash of its prompts;
      plan_calls(regime, episode, budget, **its options) -> CallSpecs in cascade order;
      call_text(regime, episode, spec, state, registry, **its options) -> prompts.CallText, which
      prompts.build_messages writes through the regime; empty_state, the text for "no state yet";
    - its results: its probe kind (probes.PROBE_KINDS); score_cell scores one complete cell into
      named lists of rows, and score_fields makes its fields of results.json of them (else the rows
      as they are): bank.score_run writes them between the header every bank shares ("study",
      "models", "regimes", "n_episodes", "task_set", "cells": {"complete", "not_complete",
      "expected"} ...) and the run's settings; analyze(results, task_set, table) -> the analysis,
      with "study", "label", "complete" and "coverage": {"complete_cells", "expected_cells"},
      computed from the probes themselves: the keys the core reads, through verdict_of alone;
      render_md and headline read only the analysis;
    - the optional hooks and sub-records: a fast path for banks in run order, its own bank check,
      its gate rows, files beside results.json, its judge (a model deciding what its rules cannot,
      `score --judge`), its figures and pages (Report), its own command-line
      options (CommandLine), its design (Design) and its demo (Demo); `options` holds the options of
      the run at hand (with_options)."""

    # Who it is
    # the key a run folder records, and its default folder under results/
    name: str
    question: str                       # its question in a few words, for `--study`'s help
    protocol_id: str
    protocol_path: Path
    # Its tasks
    # the committed task file (or the example files it reads by default)
    tasks_path: Path
    pinned_sha256: str
    # (path, raw bytes, parsed tasks, sha256, in_repo) -> task set
    load_tasks: Callable
    # ({"episodes": N or None, its generate options}) -> (bytes, what it made)
    generate: Callable
    # what one of its episodes is, in what the commands say ("instance")
    episode_noun: str = "episode"
    # Its calls
    regimes: dict                       # name -> Regime: the study's registry
    default_regimes: tuple
    prompts_sha256: Callable[[], str]
    # (regime, episode, budget, **its options) -> the cell's CallSpecs in order
    plan_calls: Callable
    # (regime, episode, spec, state, registry, **its options) -> prompts.CallText
    call_text: Callable
    # the previous state at the first checkpoint (None: the built-in text)
    empty_state: str | None = None
    # Its results
    probe_kind: str = "integer"         # the kind of its probes (probes.PROBE_KINDS)
    # (bank.ScoredRun, cell, records, probe key fields, plan) -> {name: [rows]}
    score_cell: Callable
    # (ScoredRun, {name: rows of every cell}) -> its fields of results.json
    score_fields: Callable | None = None
    analyze: Callable                   # (results, task_set, table) -> analysis
    render_md: Callable                 # analysis -> analysis.md
    headline: Callable                  # analysis -> the lines printed at the end of a run
    # (table, models, regimes, variants) -> the bank is in run order (fast path)
    run_order: Callable | None = None
    # (results) -> problems: the shape check of its own results (None: shared)
    check_bank: Callable | None = None
    # (manifest, tasks, journal, models) -> one gate row per compacted state
    gate_rows: Callable | None = None
    # (run_dir, results) -> files the study writes beside results.json
    write_outputs: Callable | None = None
    # (run_dir, JudgeSetup) -> the judge its score_cell consults (`score --judge`; ScoredRun.judge)
    open_judge: Callable | None = None
    # its figures and pages (the shared ones where it gives none)
    report: Report = Report()
    # Its own options, design and demo
    command_line: CommandLine = CommandLine()
    design: Design = Design()
    demo: Demo | None = None            # None: `demo --study` does not offer it
    # the options of the run at hand (with_options)
    options: dict = dataclasses.field(default_factory=dict)

    def with_options(self, options: dict | None) -> "Study":
        """This study as a run with these options of its own plans and writes its calls."""
        return dataclasses.replace(self, options=dict(options or {}))

    def plan(self, regime: Regime, episode: dict, budget: int = DEFAULT_BUDGET) -> list:
        """A cell's calls in cascade order (CallSpecs)."""
        return self.plan_calls(regime, episode, budget, **self.options)

    def cascade_state(self, regime: Regime, episode: dict, replies: list[str]) -> str:
        """The state a cell's cascade holds after these compaction replies: the last one, unless the
        study (a gated regime) decides otherwise. The final state of a cell is this after all its
        compactions."""
        if self.design.state_after is not None:
            return self.design.state_after(regime, episode, replies)
        return replies[-1] if replies else ""


# key -> Study, in registration order; the first is the default
STUDY_REGISTRY: dict = {}


def register_study(study: Study) -> Study:
    STUDY_REGISTRY[study.name] = study
    return study


def study_named(name: str | None) -> Study:
    """The study a manifest, results file or analysis records: its key, or the protocol id older
    folders recorded; none recorded: the default study."""
    if name is None:
        return next(iter(STUDY_REGISTRY.values()))
    for study in STUDY_REGISTRY.values():
        if name in (study.name, study.protocol_id):
            return study
    raise PilotError(f"unknown study {name!r}; this runner knows {', '.join(STUDY_REGISTRY)}")


def folder_study(manifest: dict) -> Study:
    """Which study a run folder holds, from its manifest: the key it records, the protocol id that
    folders made before the studies were keyed recorded in their lock, or none (the default
    study)."""
    study = study_named(manifest.get("study") or (manifest.get("lock") or {}).get("study"))
    options = (manifest.get("lock") or {}).get("study_options")
    return study.with_options(options) if isinstance(options, dict) and options else study


def verdict_of(analysis: dict) -> Verdict:
    """What the core reads of a study's analysis: the keys every analysis holds (Study.analyze),
    the study's Report.answer hook and the keys bank.analyze_bank adds. No label: no analysis."""
    if not isinstance(analysis, dict) or not analysis.get("label"):
        raise PilotError("this is no study's analysis: it records no label")
    answer = study_named(analysis.get("study")).report.answer
    coverage = analysis["coverage"]
    return Verdict(study=analysis.get("study"), label=analysis["label"],
                   complete=analysis["complete"], complete_cells=coverage["complete_cells"],
                   expected_cells=coverage["expected_cells"],
                   answer=answer(analysis) if answer is not None else None,
                   simulated=bool(analysis.get("simulated")), partial=analysis.get("partial"))
