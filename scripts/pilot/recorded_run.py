"""A run folder read back from what its manifest recorded: the task set it ran on, read again
from where the run read it (load_run, run_inputs: one message for every command when it is gone or
changed), and the command that resumes or finishes the run (run_command_for)."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from .cells import run_budgets, run_samples
from .inputs import load_task_set, load_tasks
from .records import (DEFAULT_BUDGET, DEFAULT_RECHECK, PilotError, REPO_ROOT, STUDY_REGISTRY, Study,
                      TEMPERATURE, display_path, folder_study, is_simulated, study_named)
from .cells import journal_streams
from .runfolder import Journal, Manifest
from .studies.xr001.design import N_EPISODES

RECHECK_LOG = "recheck.jsonl"           # the determinism probe's replies (runner.RECHECK_FILE)


def load_run(run_dir: Path, missing_hint: str = "run the pilot first, or pass --out <run folder>",
             folder_alone: bool = False,
             check_journal: bool = True) -> tuple[Manifest, dict | None]:
    """A run folder's manifest and the task set it ran on, read from where the run read it. A
    command that works from the folder alone (status, verify) gets None for tasks when they are gone
    or changed; any other is refused with the one message every command gives (run_inputs)."""
    manifest_path = run_dir / "manifest.json"
    if not manifest_path.exists():
        raise PilotError(f"no run at {run_dir} (no manifest.json); {missing_hint}")
    manifest = Manifest.load(manifest_path)
    if check_journal:                   # verify reports it among its problems instead
        refuse_disagreement(run_dir, manifest.data)
    tasks, problem = run_inputs(run_dir, manifest.data)
    if problem is not None and not folder_alone:
        raise PilotError(problem)
    return manifest, tasks


# the journal's episode numbers, read without parsing each line (record_line sorts keys)
EPISODE_FIELD = re.compile(rb'"episode": (\d+)')


def journal_disagreement(run_dir: Path, manifest: dict) -> str | None:
    """The first way a manifest disagrees with its own journal (a hand-edited model list, episode
    count or cell), or None: a raw log no listed model, regime, budget and sample has, a cell
    outside the run, or a call of an episode past the run's."""
    listed = {Journal(run_dir).path(*stream).name for stream in journal_streams(manifest)}
    raw = run_dir / "raw"
    logs = sorted(p for p in raw.glob("*.jsonl") if p.name != RECHECK_LOG) if raw.is_dir() else []
    for path in logs:
        if path.name not in listed:
            return (f"raw/{path.name} holds calls of a model or regime that manifest.json does "
                    f"not list (it lists {', '.join(manifest['models'])})")
    for key, entry in manifest["cells"].items():
        if entry["model"] not in manifest["models"] or entry["regime"] not in \
                manifest["regimes"] or entry["episode"] >= manifest["n_episodes"]:
            return (f"manifest.json records cell {key}, outside its own models, regimes and "
                    f"{manifest['n_episodes']} episodes")
    for path in logs:
        try:
            last = max((int(n) for n in EPISODE_FIELD.findall(path.read_bytes())), default=-1)
        except OSError:
            continue                        # unreadable logs are verify's and the run's to report
        if last >= manifest["n_episodes"]:
            return (f"raw/{path.name} holds calls of episode {last} (counted from 0), but "
                    f"manifest.json says the run has {manifest['n_episodes']} episodes")
    return None


def refuse_disagreement(run_dir: Path, manifest: dict) -> None:
    """Every command refuses, in one line and before anything is written, a manifest that
    disagrees with its own journal."""
    problem = journal_disagreement(run_dir, manifest)
    if problem:
        raise PilotError(f"{run_dir}/manifest.json disagrees with its own journal: {problem}; "
                         "nothing was changed. Restore manifest.json from a backup, or start a "
                         "separate run in a new folder with --out")


def run_inputs(run_dir: Path, manifest: dict) -> tuple[dict | None, str | None]:
    """The task set a run ran on, read again from where it read it, or the reason it cannot be: the
    task file or the user's sessions moved, deleted or changed. The message is the same for every
    command that needs them."""
    study, tasks_path = folder_study(manifest), run_tasks_path(manifest)
    source = study.command_line.source_option
    what = f"the {source} it read" if source else "its task file"
    shown = display_path(tasks_path)
    committed = tasks_path.resolve() in {s.tasks_path.resolve() for s in STUDY_REGISTRY.values()}
    back = (f"put {'them' if source else 'it'} back as {'they were' if source else 'it was'}" +
            (f" (git checkout -- {shown}: {'they are' if source else 'it is'} committed)"
             if committed else "") +
            " to score, resume, gate or merge the run (status and verify read the folder alone)")
    if not tasks_path.exists() and not tasks_path.is_symlink():
        return (None, f"{run_dir} was run on {what}, {shown}, which is not there any more (moved "
                f"or deleted); {back}")
    try:
        tasks, sha = load_tasks(tasks_path, manifest["n_episodes"], study)
    except PilotError as err:
        return (None, f"{run_dir} was run on {what}, {shown}, which cannot be read as it was "
                f"({err}); {back}")
    if sha != manifest["tasks_sha256"]:
        return None, (f"{run_dir} was run on {what}, {shown}, which changed since (sha256 "
                      f"{sha[:12]}, the run's "
                      f"{manifest['tasks_sha256'][:12]}: {changed_inputs(study)}); {back}")
    return tasks, None


def changed_inputs(study: Study) -> str:
    """What can have changed a run's task set: its task file, or the files a study reads from its
    source option."""
    if study.command_line.source_option:
        return (f"one of the --{study.command_line.source_option} files, or another input read "
                "with them, changed, came or went")
    return "the task file changed"


def run_tasks_path(manifest: dict) -> Path:
    """The tasks file a run was made from, as its manifest records it (relative to the
    repository)."""
    recorded = Path(manifest["tasks"])
    return recorded if recorded.is_absolute() else REPO_ROOT / recorded


def run_command_for(run_dir: Path, manifest: dict) -> str:
    """The command that resumes (or finishes) a run folder, rebuilt from what its manifest
    recorded."""
    lock = manifest.get("lock") or {}
    if is_simulated(manifest):
        return "python3 " + shlex.join(["scripts/run_pilot.py", "demo", "--out",
                                        display_path(run_dir)])
    argv = ["--out", display_path(run_dir), "--models", ",".join(manifest["models"])]
    study = folder_study(manifest)
    if study.name != study_named(None).name:
        argv += ["--study", study.name]
    # the study's own options, as its read_options recorded them
    for option, value in study.options.items():
        argv += [f"--{option.replace('_', '-')}", str(value)]
    # a run cut with --episodes resumes cut the same way, in every study
    try:
        available = len(load_task_set(run_tasks_path(manifest), study)["tasks"]["episodes"])
    except (PilotError, OSError, KeyError, TypeError):
        available = N_EPISODES
    if manifest.get("n_episodes") not in (None, available):
        argv += ["--episodes", str(manifest.get("n_episodes"))]
    if manifest.get("tasks") and run_tasks_path(manifest).resolve() != study.tasks_path.resolve():
        argv += [f"--{(study.command_line.source_option or 'tasks').replace('_', '-')}",
                 manifest["tasks"]]
    if lock.get("backend") == "openai":
        argv += ["--backend", "openai", "--base-url", lock.get("base_url", "URL")]
        controls = {info.get("thinking_control") for info in (lock.get("models")
                                                              or {}).values()} - {None, "both"}
        if len(controls) == 1:
            argv += ["--thinking-control", controls.pop()]
    elif lock.get("base_url"):
        argv += ["--host", lock["base_url"]]
    if manifest.get("shard"):
        argv += ["--shard", "/".join(map(str, manifest["shard"]))]
    if list(manifest.get("regimes") or study.default_regimes) != list(study.default_regimes):
        argv += ["--regimes", ",".join(manifest["regimes"])]
    if any(d.get("judge") for d in (manifest.get("regime_definitions") or {}).values()):
        argv += ["--judge"]
    files = sorted({d.get("origin") for d in (manifest.get("regime_definitions") or {}).values()}
                   - {None, "built-in"})
    for origin in files:
        argv += ["--regime-file", origin]
    if run_budgets(manifest) != [DEFAULT_BUDGET]:
        argv += ["--budgets", ",".join(map(str, run_budgets(manifest)))]
    if run_samples(manifest) > 1:
        argv += ["--samples", str(run_samples(manifest))]
    if lock.get("temperature") not in (None, TEMPERATURE):
        argv += ["--temperature", f"{lock['temperature']:g}"]
    if lock.get("backend") == "openai" and lock.get("prompt_cache") == "on":
        argv += ["--prompt-cache", "on"]
    recheck = manifest.get("recheck_requested", (manifest.get("recheck") or {}).get("k"))
    if isinstance(recheck, int) and recheck != DEFAULT_RECHECK:
        argv += ["--recheck", str(recheck)]
    used = manifest.get("concurrency_used") or []
    if used and used[-1] != 1:
        argv += ["--concurrency", str(used[-1])]
    return "python3 " + shlex.join(["scripts/run_pilot.py", *argv])
