"""Launch: the command line's options become what a run needs, once: the study, the run folder, the
regimes (built-in and from a regime file), the backend and the Settings record. Nothing below this
layer reads the options."""
from __future__ import annotations

import argparse
import dataclasses
import re
import string
from pathlib import Path
from typing import Any, Iterable

from .backends import BACKENDS
from .demo import StandInBackend
from .inputs import STATE_READERS, load_task_set, protocol_sha256, read_json, regimes_sha256
from .prompts import PROMPTS, REGIMES
from .records import (ANSWER_NUM_PREDICT, BackendOptions, DEFAULT_BUDGET, N_SEGMENTS, NUM_CTX,
                      PilotError, RESULTS_ROOT, Regime, SIMULATED_BACKEND, STUDY_REGISTRY, Settings,
                      Study, TEMPERATURE, display_path, file_sha256, study_named)
from .studies.xr001.design import N_EPISODES


RESERVED_REGIME_NAMES = frozenset(REGIMES) | {"pooled", "all"}


def built_in_regime_names() -> list[str]:
    """Every registered study's built-in regimes and conditions."""
    return sorted({name for study in STUDY_REGISTRY.values() for name in study.regimes})


def reserved_regime_names() -> frozenset:
    """Names a regime file may not use, case-folded: every study's built-in regimes and conditions
    and the words the reports use for groups."""
    return frozenset(n.casefold() for n in (*RESERVED_REGIME_NAMES, *built_in_regime_names()))


def reserved_suffix(name: str) -> tuple[str, str, str] | None:
    """(suffix, study, what it names) when a regime name ends in a suffix a study gives its own
    regimes."""
    for study in STUDY_REGISTRY.values():
        for suffix, what in study.design.reserved_suffixes:
            if name.casefold().endswith(suffix.casefold()):
                return suffix, study.name, what
    return None


REGIME_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+-]{0,23}")

REGIME_FILE_FIELDS = {"name", "description", "compaction_template", "answer_template",
                      "state_reader", "kind",
                      "keep_last", "system", "empty_state", "replaces"}

# A regime file may replace the prompts of these built-in regimes (with "replaces": true), so that a
# replication can
# run under the prompts of the study it replicates (the XR-001 paper's, brought by the user); their
# readers, cascade
# and place in the confirmatory test stay as they are.
REPLACEABLE_REGIMES = tuple(name for name in REGIMES if not REGIMES[name].exploratory)

MAX_LITERAL_TEXT = 20_000               # a system message or an empty-state text, in characters


def template_fields(template: str) -> set[str] | None:
    """The {placeholders} of a template, or None when it is not a valid format string or a
    placeholder carries a format spec or conversion ({segment:>99999999} would make a prompt of any
    size)."""
    try:
        parts = [(name, spec, conversion) for _, name, spec,
                 conversion in string.Formatter().parse(template)
                 if name is not None]
    except ValueError:
        return None
    if any(spec or conversion for _, spec, conversion in parts):
        return None
    return {name for name, _, _ in parts}


def check_regime_entries(entries: Any, origin: str) -> tuple[list[Regime], list[str]]:
    """Regimes from the entries of a regime file, and every problem with them, one per line."""
    if isinstance(entries, dict):
        entries = entries.get("regimes")
    if not isinstance(entries, list) or not entries:
        return [], ["the file must hold a JSON list of regimes, or an object with a `regimes` list"]
    regimes, problems, seen = [], [], set()
    for i, entry in enumerate(entries, 1):
        where = f"regime {i}"
        if not isinstance(entry, dict):
            problems.append(f"{where}: not a JSON object")
            continue
        name = entry.get("name")
        if isinstance(name, str):
            where = f"regime {i} ({name})"
        found = []
        unknown = sorted(set(entry) - REGIME_FILE_FIELDS)
        if unknown:
            found.append(f"unknown field(s) {', '.join(unknown)} (known: "
                         f"{', '.join(sorted(REGIME_FILE_FIELDS))})")
        for field in ("system", "empty_state"):
            text = entry.get(field)
            if text is not None and not (isinstance(text, str) and text.strip() and len(text)
                                         <= MAX_LITERAL_TEXT):
                found.append(f"`{field}` must be a non-empty text of at most {MAX_LITERAL_TEXT} "
                             "characters")
        if entry.get("replaces", False) is not False:
            replacement, more = replacement_regime(entry, origin, seen)
            problems += [f"{where}: {f}" for f in found + more]
            if replacement is not None and not found:
                seen.add(replacement.name.casefold())
                regimes.append(replacement)
            continue
        if not isinstance(name, str) or not REGIME_NAME.fullmatch(name):
            found.append("`name` must be 1-24 letters, digits, _, + or -, starting with a letter")
        elif name.casefold() in reserved_regime_names():
            found.append(f"the name {name} is reserved (built-in regimes and conditions, in any "
                         "letter case: "
                         f"{', '.join(built_in_regime_names())})" +
                         (f"; to run {name} under your own prompts (a replication's), add "
                          "\"replaces\": true"
                          if name in REPLACEABLE_REGIMES else ""))
        elif reserved_suffix(name):
            suffix, study, what = reserved_suffix(name)
            found.append(f"the name {name} ends in {suffix}, which the {study} study gives to "
                         f"{what}; choose another name")
        elif name.casefold() in seen:
            found.append(f"the name {name} is used twice (names are compared ignoring letter case, "
                         "since run files are named after them)")
        kind = entry.get("kind", "compaction")
        reader = entry.get("state_reader", "prose" if kind == "compaction" else "none")
        if kind not in ("compaction", "recent"):
            found.append(f"`kind` must be compaction or recent, not {kind!r}")
        if not isinstance(reader, str) or not (reader in STATE_READERS or
                                                (reader.startswith("section:")
                                                 and reader[8:].strip())):
            found.append(f"unknown state_reader {reader!r} (use {', '.join(STATE_READERS)} or "
                         "section:<heading>)")
        answer = entry.get("answer_template", PROMPTS["answer_state" if kind
                                                      == "compaction" else "answer_recent"])
        checks = [("answer_template", answer, {"context", "question"})]
        compaction = entry.get("compaction_template")
        keep_last = entry.get("keep_last")
        if kind == "compaction":
            checks.append(("compaction_template", compaction,
                           {"previous_state", "segment", "max_words"}))
        elif not isinstance(keep_last, int) or isinstance(keep_last,
                                                          bool) or not 1 <= keep_last <= N_SEGMENTS:
            found.append(f"a recent regime needs `keep_last` from 1 to {N_SEGMENTS}")
        for field, text, needed in checks:
            placeholders = template_fields(text) if isinstance(text, str) else None
            if placeholders is None:
                found.append(f"`{field}` must be a text whose {{placeholders}} are plain names, "
                             "with no format spec or "
                         f"conversion (write {{segment}}, not {{segment:>80}} or {{segment!r}})")
                continue
            if needed - placeholders:
                found.append(f"`{field}` lacks "
                             f"{', '.join('{' + n + '}' for n in sorted(needed - placeholders))}")
            if placeholders - needed:
                found.append(f"`{field}` has unknown placeholder(s) "
                             f"{', '.join('{' + n + '}' for n in sorted(placeholders - needed))} "
                             f"(write {{{{ and }}}} for literal braces)")
        description = entry.get("description", "")
        if not isinstance(description, str):
            found.append("`description` must be a text")
        elif "\n" in description or "\r" in description or len(description) > 300:
            found.append("`description` must be one line of at most 300 characters")
        problems += [f"{where}: {f}" for f in found]
        if not found:
            seen.add(name.casefold())
            regimes.append(Regime(name, description or f"user regime from {origin}",
                                  "state" if kind == "compaction" else "recent", answer,
                                  compaction if kind == "compaction" else None, reader,
                                  keep_last if kind == "recent" else None, exploratory=True,
                                  origin=origin,
                                  system=entry.get("system"), empty_state=entry.get("empty_state")))
    return regimes, problems


def replacement_regime(entry: dict, origin: str, seen: set) -> tuple[Regime | None, list[str]]:
    """A built-in regime (REPLACEABLE_REGIMES) under the prompts of a regime file entry marked
    "replaces": true, and every problem with it. Only its prompts change: its kind, reader and place
    in the confirmatory test stay."""
    name, found = entry.get("name"), []
    if entry.get("replaces") is not True:
        return None, ["`replaces` must be true (or left out)"]
    if name not in REPLACEABLE_REGIMES:
        return None, ["`replaces` is for the pre-registered regimes "
                      f"{', '.join(REPLACEABLE_REGIMES)}; {name!r} is "
                      f"not one (a regime of your own needs no `replaces`)"]
    if name.casefold() in seen:
        return None, [f"the name {name} is used twice"]
    built_in = REGIMES[name]
    fixed = sorted(field for field in ("kind", "state_reader", "keep_last") if field in entry)
    if fixed:
        found.append(f"{', '.join(fixed)} cannot change when replacing {name}: only its prompts "
                     "are replaced")
    changes = {field: entry[field] for field in ("answer_template", "compaction_template", "system",
                                                 "empty_state")
               if field in entry}
    if not changes:
        found.append(f"replacing {name} needs at least one of answer_template, "
                     "compaction_template, system or empty_state")
    if not built_in.compacts and ("compaction_template" in changes or "empty_state" in changes):
        found.append(f"{name} makes no compaction call, so it takes no compaction_template or "
                     "empty_state")
    needed = {"answer_template": {"context", "question"},
              "compaction_template": {"previous_state", "segment",
                                                                                   "max_words"}}
    for field, placeholders in needed.items():
        if field not in changes:
            continue
        have = template_fields(changes[field]) if isinstance(changes[field], str) else None
        if have is None:
            found.append(f"`{field}` must be a text whose {{placeholders}} are plain names, with "
                         "no format spec or conversion")
        elif have != placeholders:
            found.append(f"`{field}` must hold exactly "
                         f"{', '.join('{' + n + '}' for n in sorted(placeholders))} "
                         f"(write {{{{ and }}}} for literal braces)")
    description = entry.get("description")
    if description is not None and (not isinstance(description, str) or "\n" in description or
                                    "\r" in description or len(description) > 300):
        found.append("`description` must be one line of at most 300 characters")
    if found:
        return None, found
    return dataclasses.replace(built_in, **changes, origin=origin,
                               description=description or f"{built_in.description}; prompts from "
                               f"{origin}"), []


def select_regimes(names: Iterable[str], extra: Iterable[Regime] = (),
                   registry: dict | None = None) -> list[Regime]:
    """The regimes a run uses, from the registry (XR-001's unless a study's is given) and a regime
    file; an unknown name is an error."""
    registry = {**(REGIMES if registry is None else registry), **{r.name: r for r in extra}}
    names = list(dict.fromkeys(names))
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise PilotError(f"unknown regime(s) {', '.join(unknown)}; known: {', '.join(registry)} "
                         "(add your own with --regime-file FILE.json)")
    return [registry[n] for n in names]


def given_source(args, study: Study) -> str | None:
    """The task source the command line names: the study's own option for it
    (CommandLine.source_option), or --tasks."""
    source = study.command_line.source_option
    own = getattr(args, source, None) if source else None
    for option, value in ((source, own), ("tasks", getattr(args, "tasks", None))):
        # an empty path is a mistake, not "the default"
        if value is not None and not value.strip():
            raise PilotError(f"--{option} was given an empty path; give a file or folder, or leave "
                             f"--{option} out for the study's own")
    return own or getattr(args, "tasks", None)


def task_source(args, study: Study) -> Path:
    """Where a run's tasks come from: the file or folder the command line names, else the study's
    committed one."""
    given = given_source(args, study)
    return Path(given) if given else study.tasks_path


def resolve_run_dir(args) -> Path:
    # status, verify and score take the folder as RUN_DIR or --out
    named = getattr(args, "folder", None)
    if named and getattr(args, "out", None) and Path(named) != Path(args.out):
        raise PilotError(f"two run folders named: {named} and --out {args.out}; give one")
    if named or getattr(args, "out", None):
        return Path(named or args.out)
    study = study_of(args)
    name = study.name
    tasks = given_source(args, study)
    reads_source = study.command_line.read_source is not None
    if tasks and (reads_source or Path(tasks).is_file()):
        sha = load_task_set(Path(tasks),
                            study)["sha256"] if reads_source else file_sha256(Path(tasks))
        if sha != study.pinned_sha256:
            # another task set never shares a folder with the pinned one
            name += f"-tasks-{sha[:12]}"
    n = getattr(args, "episodes", None)
    if n is not None and n != N_EPISODES:
        name += f"-e{n}"
    # another design (extra regimes, a budget sweep, repeated samples) gets a folder of its own
    regimes = [r for r in parse_names(getattr(args, "regimes",
                                              None)) if r not in study.default_regimes]
    if regimes or parse_names(getattr(args, "regimes", None)) not in ([],
        list(study.default_regimes)):
        name += "-" + "-".join(parse_names(args.regimes))
    regime_file = getattr(args, "regime_file", None)
    if regime_file and Path(regime_file).is_file():
        # a regime file's regimes never share the pinned run's folder: the pre-registered regimes
        # under other
        # prompts (a replication's) in a -prompts- folder, regimes added beside them in a -regimes-
        # one
        kind = "-prompts-" if replaces_regimes(regime_file) else "-regimes-"
        name += kind + file_sha256(Path(regime_file))[:12]
    budgets = getattr(args, "budgets", None) or [DEFAULT_BUDGET]
    if list(budgets) != [DEFAULT_BUDGET]:
        name += "-b" + "-".join(map(str, budgets))
    if (getattr(args, "samples", None) or 1) > 1:
        name += f"-s{args.samples}"
    if (getattr(args, "temperature", None) or 0) != TEMPERATURE:
        name += f"-t{args.temperature:g}"
    if getattr(args, "judge", False) is True:       # a model's name: score's judge, no design
        name += "-judge"
    shard = getattr(args, "shard", None)
    if shard:
        name += f"-shard{shard[0]}of{shard[1]}"
    return RESULTS_ROOT / name


def missing_run_hint(args) -> str:
    """What to do when the folder a command looked in holds no run: the folder is named after the
    run's own options (its task set or sessions, episodes, regimes, ...), which the command takes as
    the run was given them."""
    if getattr(args, "folder", None) or getattr(args, "out", None):
        return "check the path, or run the pilot first"
    study = study_of(args)
    source = study.command_line.source_option
    hint = ("run the pilot first, or give the options the run was started with (its folder is "
            "named after them)")
    if source:
        hint += (f"; a run on your own {source} is in results/{study.name}-tasks-<sha256 prefix>/: "
                 f"give --{source.replace('_', '-')} PATH as the run did")
    others = sorted(p for p in RESULTS_ROOT.glob(f"{study.name}-*") if (p
        / "manifest.json").is_file())
    if others:
        hint += (f"; {study.name} run folders here: "
                 f"{', '.join(display_path(p) for p in others[:3])}"
                 + (f" and {len(others) - 3} more" if len(others) > 3 else ""))
    return hint + "; or name the folder with --out RUN_DIR"


def replaces_regimes(regime_file: str | None) -> bool:
    """Whether a regime file (read as far as it can be; load_regime_file names its problems)
    replaces a built-in regime's prompts."""
    if not regime_file:
        return False
    try:
        _, _, data = read_json(Path(regime_file), regime_file, "a regime file", "")
    except PilotError:
        return False
    entries = data.get("regimes") if isinstance(data, dict) else data
    return isinstance(entries, list) and any(isinstance(e,
                                                        dict)
                                             and e.get("replaces") is True for e in entries)


def parse_names(text: str | None) -> list[str]:
    return list(dict.fromkeys(n.strip() for n in (text or "").split(",") if n.strip()))


def parse_budgets(text: str) -> list[int]:
    """--budgets: compaction output caps, e.g. 128,256,512 (each 16 to 2048, no repeats)."""
    try:
        budgets = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("--budgets takes whole numbers separated by commas, e.g. "
                                         "128,256,512 "
                                         f"(got {text!r})") from None
    if not budgets or len(set(budgets)) != len(budgets) or not all(16 <= b
        <= 2048 for b in budgets):
        raise argparse.ArgumentTypeError("--budgets takes distinct budgets from 16 to 2048 "
                                         f"tokens, e.g. 128,256,512 (got {text!r})")
    return sorted(budgets)


def load_regime_file(path: Path) -> list[Regime]:
    """The regimes of a --regime-file; every problem is named, one per line."""
    shown = display_path(path)
    if path.is_dir():
        raise PilotError(f"{path} is a folder; --regime-file takes a regime JSON file (see "
                         "tasks/regimes.example.json)")
    if not path.exists() and not path.is_symlink():
        raise PilotError(f"no regime file at {path}; copy tasks/regimes.example.json and pass its "
                         "path")
    _, _, data = read_json(path, shown, "a regime file", "--regime-file takes a regime JSON file "
                           "(see "
                           "tasks/regimes.example.json for the format)")
    regimes, problems = check_regime_entries(data, shown)
    if problems:
        raise PilotError(f"{shown} has {len(problems)} problem(s); fix them and run again:\n" +
                         "\n".join(f"  - {p}" for p in problems))
    return regimes


def chosen_regimes(args) -> list[Regime]:
    """The regimes named by --regimes (default R0,R1,R2), from the registry and --regime-file."""
    extra = load_regime_file(Path(args.regime_file)) if getattr(args, "regime_file", None) else []
    study = study_of(args)
    names = parse_names(getattr(args, "regimes", None)) or list(study.default_regimes)
    if extra and not getattr(args, "regimes", None):
        # a regime file's regimes run beside R0-R2 unless chosen
        names += [r.name for r in extra]
    replaced = [r.name for r in extra if r.name in REPLACEABLE_REGIMES]
    if replaced and any(study.regimes.get(name) is not REGIMES[name] for name in replaced):
        raise PilotError(f"a regime file replaces {', '.join(replaced)}, which only the "
                         f"{REGIMES[replaced[0]].name} "
                         f"of the default study can be; the {study.name} study has its own")
    if study.design.user_regimes is not None:
        extra, names = study.design.user_regimes(extra, names)
    regimes = select_regimes(names, extra, study.regimes)
    if study.command_line.adjust_regimes is not None:
        regimes = study.command_line.adjust_regimes(regimes, vars(args))
    return regimes


def parse_models(text: str | None) -> list[str]:
    if not text:
        return []
    models = list(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
    for model in models:
        if len(model) > 512 or any(ord(ch) < 32 for ch in model):
            raise PilotError(f"model name {model[:40]!r}... is not usable; give names as the "
                             "server lists them")
    return models


def parse_shard(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)/(\d+)", text or "")
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise argparse.ArgumentTypeError("--shard takes I/N with 1 <= I <= N, e.g. 1/4 (got "
                                         f"{text!r})")
    return int(match.group(1)), int(match.group(2))


def study_of(args) -> Study:
    """The study the command line chose, with its own options as the command line gives them."""
    study = study_named(getattr(args, "study", None))
    given = vars(args)
    for other in STUDY_REGISTRY.values():
        taken = [option.flag for option in other.command_line.options if other is not study
                 and option.given(given)]
        if taken:
            raise PilotError(f"{taken[0]} belongs to the {other.name} study; add --study "
                             f"{other.name}")
    read = study.command_line.read_options
    return study.with_options(read(given)) if read is not None else study


def check_study_design(study: Study, models: list[str], budgets: list[int], samples: int,
                       regimes: Iterable[Regime] = (), temperature: float = TEMPERATURE) -> None:
    """Refuse, in one line, a run a study's design does not allow (too many models, a sweep or
    another design it has no use for)."""
    design = study.design
    if design.max_models is not None and len(models) > design.max_models:
        raise PilotError(f"the {study.name} study runs {design.max_models} model at a time; name "
                         "one with --models "
                         f"NAME and run the others into their own folders (--out)")
    if not design.variants and (list(budgets) != [DEFAULT_BUDGET] or samples != 1):
        raise PilotError(f"the {study.name} study runs at the pre-registered budget "
                         f"({DEFAULT_BUDGET}) with one sample; drop --budgets and --samples")
    names = [r.name for r in regimes]
    if not design.variants and names and (names != list(study.default_regimes) or temperature
                                          != TEMPERATURE):
        raise PilotError(f"the {study.name} study runs its pre-registered design: regimes "
                         f"{','.join(study.default_regimes)} at temperature {TEMPERATURE:g}; drop "
                         "--regimes, --regime-file and --temperature")


def make_backend(options: BackendOptions):
    if options.name == SIMULATED_BACKEND:       # only the demo sets it; never a --backend choice
        return StandInBackend.from_options(options)
    return BACKENDS[options.name].from_options(options)


def design_settings(options: RunOptions, tasks_sha: str, n_episodes: int) -> dict:
    """The fields of Settings that say what a run measures (the rest say where and how calls are
    sent)."""
    study, regimes = options.study, options.regimes
    return {"tasks_sha256": tasks_sha, "protocol_sha256": protocol_sha256(study.protocol_path),
            "prompts_sha256": study.prompts_sha256(),
            "regimes": tuple(r.name for r in regimes), "regimes_sha256": regimes_sha256(regimes),
            "n_episodes": n_episodes, "budgets": tuple(options.budgets), "samples": options.samples,
            "temperature": options.temperature, "study_options": study.options,
            "context_window": options.context_window,
            "replaced_regimes": {r.name: r.origin for r in regimes
                                 if r.name in study.regimes and r.origin != "built-in"}}


def run_settings(backend, options: RunOptions, tasks_sha: str, n_episodes: int) -> Settings:
    from .transport import redact_url
    return Settings(backend=backend.name, base_url=redact_url(backend.base_url),
                    options={"compaction": backend.wire_options(DEFAULT_BUDGET, options.temperature,
                                                                options.context_window),
                             "answer": backend.wire_options(ANSWER_NUM_PREDICT, options.temperature,
                                                            options.context_window)},
                    **design_settings(options, tasks_sha, n_episodes))


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """Everything a run (or its resume) takes from the command line, read once by the command:
    nothing below the commands reads the options themselves."""

    study: Study                        # with its own options
    run_dir: Path
    tasks_path: Path
    episodes: int | None
    regimes: tuple                      # Regime records: built in and from a regime file
    models: tuple                       # as named (empty: the ones a resumed folder records)
    budgets: tuple
    samples: int
    temperature: float
    shard: tuple | None
    concurrency: int
    recheck: int
    prompt_cache: str | None
    policy: RetryPolicy
    backend: BackendOptions
    quiet: bool
    progress_interval: float
    allow_code_change: bool
    allow_partial: bool
    argv: tuple                         # the command as typed, for the resume hints
    context_window: int = NUM_CTX       # the window every call is given (context_window_of)


def refuse_address_of_the_other_backend(args) -> None:
    """--host is Ollama's address and --base-url an OpenAI-compatible server's: the one the backend
    does not read is refused, not ignored (else the run would go to the default address and say no
    server answers there)."""
    from .transport import redact_url
    if args.backend == "ollama" and args.base_url:
        raise PilotError("--base-url is the address of an OpenAI-compatible server; add --backend "
                         f"openai to use {redact_url(args.base_url)}, or give an Ollama server as "
                         f"--host {redact_url(args.base_url)}")
    if args.backend == "openai" and args.host:
        raise PilotError("--host is the address of an Ollama server; with --backend openai give "
                         f"the server as --base-url {redact_url(args.host)}, or drop --backend "
                         "openai to use Ollama")


def read_run_options(args) -> RunOptions:
    """The options of `run`, the pilot and `adversarial`, checked and made into one record."""
    # here: the commands that only read a folder never import the runner
    from .runner import RetryPolicy
    study = study_of(args)
    refuse_address_of_the_other_backend(args)
    return RunOptions(
        study=study, run_dir=resolve_run_dir(args),
        tasks_path=task_source(args, study), episodes=args.episodes,
        regimes=tuple(chosen_regimes(args)), models=tuple(parse_models(args.models)),
        budgets=tuple(args.budgets),
        samples=args.samples, temperature=args.temperature,
        shard=tuple(args.shard) if args.shard else None,
        concurrency=args.concurrency, recheck=args.recheck, prompt_cache=args.prompt_cache,
        policy=RetryPolicy(args.retries, args.backoff_base, args.backoff_cap, args.give_up_after),
        backend=BackendOptions(args.backend, args.host, args.base_url, args.api_key_env,
                               args.thinking_control,
                               args.connect_timeout, args.read_timeout, args.reply_deadline),
        quiet=args.quiet, progress_interval=args.progress_interval,
        allow_code_change=args.allow_code_change,
        allow_partial=args.allow_partial, argv=tuple(args.argv),
        context_window=context_window_of(args))


def context_window_of(args, recorded_lock: dict | None = None) -> int:
    """The context window every call of a run is given, in tokens: --context-window, else the one a
    run folder's lock records, else NUM_CTX (XR-001's pinned 4,096). The one source of it: the run
    sends it (Ollama's num_ctx) and checks it against what an OpenAI-compatible server reports, the
    sessions study cuts its segments to fit it, and plan reads it here."""
    given = getattr(args, "context_window", None)
    if given is not None:
        return given
    recorded = (recorded_lock or {}).get("context_window")
    return recorded if isinstance(recorded, int) and not isinstance(recorded, bool) else NUM_CTX
