"""XR-001, design (protocol/PROTOCOL.md section 2): its task file (the seeded pseudoword sessions of
pilot/studies/episodes.py: 15 episodes at seed 77001), the built-in regimes it runs, what each call
of a cell is about, the task file's design checks, and the stand-in model its demo runs on."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..episodes import (BASE_SEED, N_SEGMENTS, QUESTION_PLAN, SEGMENT_WORDS, VALUE_RANGE,
                        SessionStandIn, generate_episode, make_question, segment_entities,
                        values_are_valid)
from ...inputs import design_check_failure, tasks_to_bytes
from ...prompts import PROMPTS, REGIMES, CallText, render_transcript
from ...records import (CallSpec, MAX_EPISODES, PilotError, REPO_ROOT, Regime, canonical_json,
                        display_path, sha256_text)
from ...rules.states import INT_PATTERN, WRAPPED_SENTENCE_END, split_units, to_int


PROTOCOL_ID = "XR-001"

GENERATOR_VERSION = "ccl-gen-2"        # 2: each neighbor sentence names its base and the relation

N_EPISODES = 15

# the pre-registered regimes; the confirmatory test is R1 vs R2
DEFAULT_REGIMES = ("R0", "R1", "R2")

TASKS_PATH = REPO_ROOT / "tasks" / "tasks.json"

# sha256 of the pre-registered task file (the generator's 15 episodes at seed 77001), committed
# before any run
PINNED_TASKS_SHA256 = "d55a8ca411d9035fd606f5f3b281ffa21425d2d1beb5b341d9ff396982ee0205"

PROTOCOL_PATH = REPO_ROOT / "protocol" / "PROTOCOL.md"


def generate_tasks(n_episodes: int = N_EPISODES, base_seed: int = BASE_SEED) -> dict:
    return {"protocol": PROTOCOL_ID, "generator_version": GENERATOR_VERSION, "base_seed": base_seed,
            "n_episodes": n_episodes, "n_segments": N_SEGMENTS, "value_range": list(VALUE_RANGE),
            "episodes": [generate_episode(i, base_seed) for i in range(n_episodes)]}


def generate_file(options: dict) -> tuple[bytes, str]:
    """`generate`: the task file of the first N episodes (15, the pinned set, by default)."""
    n = options.get("episodes") or N_EPISODES
    return tasks_to_bytes(generate_tasks(n)), f"{n} episodes"


def prompts_sha256() -> str:
    return sha256_text(canonical_json(PROMPTS))


def answer_context(regime: Regime, episode: dict, state: str) -> str:
    """What an answer sees: the whole transcript (R0), its last segments (Recent-k) or the compacted
    state."""
    if regime.context == "transcript":
        return render_transcript(episode)
    if regime.context == "recent":
        return render_transcript(episode, last=regime.keep_last)
    return state


def call_text(regime: Regime, episode: dict, spec: CallSpec, state: str,
              registry: str = "") -> CallText:
    """A compaction takes the segment; a question is asked over what the regime lets the answers
    see."""
    if spec.is_compaction:
        return CallText(segment=episode["segments"][spec.segment - 1]["text"])
    question = episode["questions"][spec.question_id - 1]
    return CallText(context=answer_context(regime, episode, state), question=question["prompt"])


PSEUDOWORD = re.compile(r"(?:[B-DF-HJ-NP-TV-Z][AEIOU]){3}", re.IGNORECASE)


def check_task_design(tasks: Any) -> list[str]:
    """Every way a task file departs from the XR-001 design (PROTOCOL.md section 2): the checks the
    tests apply to generated tasks, applied to any file. An empty list means it passes."""
    if not isinstance(tasks, dict) or not isinstance(tasks.get("episodes"),
                                                     list) or not tasks["episodes"]:
        return ["the file has no `episodes` list"]
    problems = []
    episodes = tasks["episodes"]
    if "n_episodes" in tasks and tasks["n_episodes"] != len(episodes):
        problems.append(f"n_episodes is {tasks['n_episodes']!r} but the file holds "
                        f"{len(episodes)} episodes")
    for index, episode in enumerate(episodes):
        try:
            problems += [f"episode {index}: {p}" for p in check_episode_design(index, episode)]
        except (KeyError, TypeError, AttributeError, IndexError, ValueError) as err:
            problems.append(
                f"episode {index}: not in the task schema ({type(err).__name__}: {err})"
            )
    return problems


def check_episode_design(index: int, episode: dict) -> list[str]:
    problems = []
    if episode.get("episode") != index:
        problems.append(f"`episode` is {episode.get('episode')!r}, expected {index}")
    segments = episode["segments"]
    if len(segments) != N_SEGMENTS:
        return problems + [f"{len(segments)} segments, the design has {N_SEGMENTS}"]
    names, layout = [], []
    for k, seg in enumerate(segments, 1):
        where = f"segment {k}"
        if seg.get("index") != k:
            problems.append(f"{where}: `index` is {seg.get('index')!r}")
        ents = seg["entities"]
        roles = {role: ents[role] for role in ("base", "partner", "neighbor")}
        distractors = ents["distractors"]
        if len(distractors) != 2:
            problems.append(f"{where}: {len(distractors)} distractors, the design has 2")
        everyone = [*roles.values(), *distractors]
        for entity in everyone:
            if not isinstance(entity["name"], str) or not PSEUDOWORD.fullmatch(entity["name"]):
                problems.append(f"{where}: name {entity['name']!r} is not a six-letter "
                                "consonant-vowel pseudoword")
            if not isinstance(entity["value"],
                              int) or not VALUE_RANGE[0] <= entity["value"] <= VALUE_RANGE[1]:
                problems.append(f"{where}: {entity['name']} has value {entity['value']!r}, outside "
                                f"{VALUE_RANGE[0]}..{VALUE_RANGE[1]}")
        names += [e["name"] for e in everyone]
        base, partner, neighbor = roles["base"], roles["partner"], roles["neighbor"]
        if neighbor["value"] != base["value"] + 1:
            problems.append(f"{where}: neighbor {neighbor['name']} = {neighbor['value']} is not "
                            f"base {base['name']} + 1")
        combined = seg["combined"]
        if list(combined["names"]) != [base["name"], partner["name"]] or \
                combined["value"] != base["value"] + partner["value"]:
            problems.append(f"{where}: combined {combined['names']} = {combined['value']} is not "
                            "base + partner")
        problems += [f"{where}: {p}" for p in check_segment_text(seg["text"], everyone, base,
            neighbor, combined)]
        layout.append({"base": base["value"], "partner": partner["value"],
                       "neighbor": neighbor["value"],
                       "distractors": [d["value"] for d in distractors]})
    if len(set(names)) != len(names):
        problems.append("entity names repeat within the episode")
    if not values_are_valid(layout):
        problems.append("values break the no-accidental-structure rules (distinct values, only the "
                        "designed pairs one apart, distinct sums, distinct multi-hop truths)")
    expected = [make_question(qid, qtype, refs, segments) for qid, qtype, refs in QUESTION_PLAN]
    questions = episode["questions"]
    if len(questions) != len(expected):
        return [f"{len(questions)} questions, the plan has {len(expected)}"]
    for have, want in zip(questions, expected):
        for field in ("id", "type", "truth", "segment", "entity", "entities"):
            if have.get(field) != want.get(field):
                problems.append(f"question {want['id']}: `{field}` is {have.get(field)!r}, the "
                                f"plan gives {want.get(field)!r}")
        if not isinstance(have.get("prompt"), str) or not have["prompt"].strip():
            problems.append(f"question {want['id']}: no prompt text")
    conflation = sorted({e["value"] for seg in segments for e in segment_entities(seg)}
                        | {seg["combined"]["value"] for seg in segments})
    if episode.get("conflation_set") != conflation:
        problems.append("conflation_set is not every entity value and stated sum of the episode")
    return problems


def check_segment_text(text: str, entities: list[dict], base: dict, neighbor: dict,
                       combined: dict) -> list[str]:
    """The facts are in the text, the relations are stated, and the filler holds no other number."""
    problems = []
    if not isinstance(text, str):
        return ["no segment text"]
    words = len(text.split())
    if not SEGMENT_WORDS[0] <= words <= SEGMENT_WORDS[1]:
        problems.append(f"{words} words, the design has {SEGMENT_WORDS[0]} to {SEGMENT_WORDS[1]}")
    numbers = [to_int(m.group()) for m in INT_PATTERN.finditer(text)]
    allowed = {e["value"] for e in entities} | {combined["value"]}
    for entity in entities:
        if entity["name"] not in text or entity["value"] not in numbers:
            problems.append(f"{entity['name']} = {entity['value']} is not stated in the text")
    if combined["value"] not in numbers:
        problems.append(f"the combined value {combined['value']} is not stated in the text")
    stray = sorted({n for n in numbers if n not in allowed})
    if stray:
        problems.append(f"numbers outside the facts in the text: {stray[:5]}")
    sentences = split_units(text, WRAPPED_SENTENCE_END)
    if not any(neighbor["name"] in s and base["name"] in s for s in sentences):
        problems.append(f"no sentence names neighbor {neighbor['name']} with its base "
                        f"{base['name']} (the designed relation is not stated)")
    if not any(all(n in s for n in combined["names"])
               and str(combined["value"]) in s for s in sentences):
        problems.append(f"no sentence states the combined value with both of its parts")
    return problems


def load_task_set(path: Path, raw: bytes, tasks: Any, sha: str, in_repo: bool) -> dict:
    """The task set: pinned, generated (other seed or size) or external (must pass the design
    checks)."""
    shown = display_path(path)
    kind = ("pinned" if sha == PINNED_TASKS_SHA256 else "generated" if is_generator_output(tasks)
            else None)
    if in_repo and kind != "pinned":
        raise PilotError(f"{shown} is not the pre-registered task set (sha256 {sha[:12]}, pinned "
                         f"{PINNED_TASKS_SHA256[:12]}); restore it with `git checkout -- {shown}` "
                         "(a changed task set needs a dated protocol amendment); to run another "
                         "task file, pass --tasks PATH")
    if kind is None:
        problems = check_task_design(tasks)
        if problems:
            raise design_check_failure(shown, problems, "XR-001 task schema",
                                       "fix them or use the generated tasks")
        kind = "external"
    return {"tasks": tasks, "sha256": sha, "kind": kind, "path": shown}


def is_generator_output(tasks: Any) -> bool:
    """True when the file holds exactly what this generator makes for its seed and size: the same
    fields in the same order with the same values and JSON types, however it is laid out. Compared
    in the compact form, which the standard library writes at C speed: the indented form takes
    seconds for a large task file."""
    if not isinstance(tasks, dict) or tasks.get("generator_version") != GENERATOR_VERSION:
        return False
    n, seed = tasks.get("n_episodes"), tasks.get("base_seed")
    if not isinstance(n, int) or not isinstance(seed, int) or not 1 <= n <= MAX_EPISODES:
        return False
    compact = {"separators": (",", ":"), "ensure_ascii": True}
    return json.dumps(tasks, **compact) == json.dumps(generate_tasks(n, seed), **compact)


def stand_in(tasks: dict) -> SessionStandIn:
    """The stand-in model `demo` runs this study on (studies/episodes.py)."""
    return SessionStandIn()
