"""XR-001, design (protocol/PROTOCOL.md section 2): seeded pseudoword episodes, the prompt table and the built-in
regimes, how a cell's calls are planned and their messages built, the task file's design checks, and the gate
ledger of an episode."""
from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

from ..bank import CLASSES, PROBE_KINDS, ProbeKind, integer_classes, parse_answer, parse_answer_lenient
from ..gate import (GATE_CATEGORIES, RUN_GATE_MAX_OMISSIONS, RUN_GATE_NAME_PATTERN, check_state, gate_verdict,
    normalize_ledger)
from ..inputs import budget_words, design_check_failure
from ..records import (ANSWER_NUM_PREDICT, CallSpec, DEFAULT_BUDGET, MAX_EPISODES, PilotError, REPO_ROOT, Regime,
    canonical_json, display_path, sha256_text)
from ..states import INT_PATTERN, to_int


PROTOCOL_ID = "XR-001"

GENERATOR_VERSION = "ccl-gen-2"        # 2: each neighbor sentence names its base and the relation

BASE_SEED = 77001                      # episode seed = BASE_SEED + episode index

N_EPISODES = 15

N_SEGMENTS = 4

VALUE_RANGE = (101, 987)

SEGMENT_WORDS = (120, 180)

DEFAULT_REGIMES = ("R0", "R1", "R2")   # the pre-registered regimes; the confirmatory test is R1 vs R2

TASKS_PATH = REPO_ROOT / "tasks" / "tasks.json"

# sha256 of the pre-registered task file (the generator's 15 episodes at seed 77001), committed before any run
PINNED_TASKS_SHA256 = "d55a8ca411d9035fd606f5f3b281ffa21425d2d1beb5b341d9ff396982ee0205"

PROTOCOL_PATH = REPO_ROOT / "protocol" / "PROTOCOL.md"

DEFAULT_RUN_NAME = "xr001"

CONSONANTS = "BDFGKLMNPRSTVZ"

VOWELS = "AEIOU"

# Consonant-vowel words that are real words or names in common languages; never used.
REAL_WORDS = frozenset({
    "BANANA", "POTATO", "TOMATO", "DECADE", "SALAMI", "LEGATO", "MIMOSA", "DAKOTA", "BONITO",
    "MERINO", "PINATA", "KIMONO", "NIRVAN", "MANILA", "SEDUTA", "GELATO", "MOLOTO", "PALOMA",
    "TORINO", "SAKURA", "PAMELA", "ROSITA", "MARINA", "SABINA", "BEGONE", "DOMINO", "LATINO",
    "RESUME", "DEPUTE", "MINUTE", "NAVIGA", "LOBATE", "MALINA", "SEMINA", "TOPAZE", "RELATE",
    "REFUTE", "DONATE", "DILUTE", "SALUTE", "BERATE", "DEBASE", "DEFINE", "REFINE", "REMOTE",
    "DENOTE", "DEVOTE", "SEDATE", "PELOTA", "MANANA", "BIKINI", "PAGODA", "GORILA", "LASAGE",
})

FILLER_SENTENCES = (
    "The team reopened the working notes before moving on to the next batch.",
    "Nobody questioned the ordering of the entries at this stage of the review.",
    "A short discussion followed about how the figures had been collected in the field.",
    "The analyst flagged the page for a second reading later in the afternoon.",
    "Several older entries were set aside because their provenance was unclear.",
    "The room went quiet while the ledger was checked line by line against the source.",
    "Someone suggested that the labels be kept exactly as they were first written.",
    "The session paused briefly while a colleague fetched the archived folder.",
    "It was agreed that no rounding would be applied to any of the recorded figures.",
    "The review then turned to the entries gathered during the second survey visit.",
    "A note was added reminding the group to keep the original spelling of each label.",
    "The lead reviewer asked everyone to read the recorded figures aloud once more.",
    "The discussion drifted for a while toward the schedule for the coming weeks.",
    "Coffee arrived, and the group used the moment to tidy the shared workspace.",
    "One of the visitors asked whether the survey sheets had been scanned yet.",
    "The answer was that scanning would wait until the whole batch was reconciled.",
    "A printed copy of the worksheet was passed around the table for comments.",
    "The margins of the worksheet were already crowded with earlier annotations.",
    "Nobody wanted to change a figure without first finding its original source.",
    "The group agreed that the next checkpoint would come after this section.",
    "Outside, the rain had started again, drumming steadily on the skylight above.",
    "The junior analyst kept a separate list of questions for the end of the day.",
    "It took a few minutes to find the folder that held the matching field notes.",
    "The reviewer reminded everyone that these labels are internal codes, not names.",
    "A brief argument about formatting ended when the old template was restored.",
    "The projector flickered, so the figures were read from the paper copy instead.",
    "Everyone initialled the page once the entries had been read back correctly.",
    "The conversation touched on how similar the codes looked at first glance.",
    "The recorder noted the time and moved the finished sheet to the done pile.",
    "Someone pointed out that the same survey team had collected every entry here.",
    "The group took care to keep the new entries separate from the archived ones.",
    "A reminder went out that the final summary would be shared with the whole unit.",
)

VALUE_SENTENCES = (
    "The entry for {name} was recorded as {value}.",
    "{name} came in at {value}.",
    "The ledger lists {name} with a value of {value}.",
    "For {name} the recorded figure is {value}.",
    "{name} stands at {value} according to the sheet.",
)

# The neighbor's sentence names its base and the designed relation (one above it), as the
# combined value's sentence names its two parts: the trap is stated, not merely implied by the values.
NEIGHBOR_SENTENCES = (
    "{name} sits one above {base}, at {value}.",
    "{name} was logged at {value}, one more than {base}.",
    "{name}, one above {base}, was recorded as {value}.",
)

COMBINED_SENTENCES = (
    "Taken together, {a} and {b} come to {value}.",
    "The combined figure for {a} and {b} is {value}.",
    "Added up, {a} and {b} give {value}.",
)

# The fixed question plan: (id, type, role(s) and segment(s)) -- the same for every episode.
QUESTION_PLAN = (
    (1, "direct", (("base", 1),)),
    (2, "direct", (("partner", 2),)),
    (3, "direct", (("base", 3),)),
    (4, "conflation", (("neighbor", 1),)),
    (5, "conflation", (("neighbor", 4),)),
    (6, "combined", (("combined", 1),)),
    (7, "multihop", (("base", 2), ("base", 4))),
    (8, "multihop", (("partner", 1), ("base", 3))),
)

QUESTION_TEMPLATES = {
    "direct": "What value was recorded for {a}?",
    "conflation": "What value was recorded for {a}?",
    "combined": "What combined value was stated for {a} and {b} together?",
    "multihop": "What is the value of {a} plus the value of {b}?",
}


def make_pseudoword(rng: random.Random) -> str:
    """One upper-case six-letter consonant-vowel pseudoword (C V C V C V)."""
    letters = []
    for _ in range(3):
        letters.append(CONSONANTS[rng.randrange(len(CONSONANTS))])
        letters.append(VOWELS[rng.randrange(len(VOWELS))])
    return "".join(letters)


def draw_names(rng: random.Random, count: int) -> list[str]:
    names: list[str] = []
    while len(names) < count:
        word = make_pseudoword(rng)
        if word not in REAL_WORDS and word not in names:
            names.append(word)
    return names


def draw_values(rng: random.Random) -> list[dict]:
    """Values for all segments satisfying every 'no accidental structure' rule of the protocol."""
    lo, hi = VALUE_RANGE
    while True:
        segments = []
        for _ in range(N_SEGMENTS):
            base = rng.randrange(lo, hi)            # hi excluded so that base + 1 stays in range
            partner = rng.randrange(lo, hi + 1)
            distractors = [rng.randrange(lo, hi + 1), rng.randrange(lo, hi + 1)]
            segments.append({"base": base, "partner": partner, "neighbor": base + 1,
                             "distractors": distractors})
        if values_are_valid(segments):
            return segments


def values_are_valid(segments: list[dict]) -> bool:
    entity_values = []
    designed_pairs = set()
    for seg in segments:
        entity_values += [seg["base"], seg["partner"], seg["neighbor"], *seg["distractors"]]
        designed_pairs.add((seg["base"], seg["neighbor"]))
    if len(set(entity_values)) != len(entity_values):
        return False
    ordered = sorted(entity_values)
    adjacent = {(a, b) for a, b in zip(ordered, ordered[1:]) if b - a == 1}
    if adjacent != designed_pairs:
        return False
    sums = [seg["base"] + seg["partner"] for seg in segments]
    if len(set(sums)) != len(sums) or set(sums) & set(entity_values):
        return False
    hop_a = segments[1]["base"] + segments[3]["base"]
    hop_b = segments[0]["partner"] + segments[2]["base"]
    forbidden = set(entity_values) | set(sums)
    return hop_a != hop_b and hop_a not in forbidden and hop_b not in forbidden


def render_segment_text(rng: random.Random, facts: list[str]) -> str:
    """Embed the fact sentences in filler so the segment has 120-180 words."""
    lo, hi = SEGMENT_WORDS
    while True:
        target = rng.randrange(lo + 10, hi - 10)
        pool = list(FILLER_SENTENCES)
        rng.shuffle(pool)
        sentences = list(facts)
        words = sum(len(s.split()) for s in sentences)
        while words < target and pool:
            filler = pool.pop()
            sentences.append(filler)
            words += len(filler.split())
        rng.shuffle(sentences)
        text = " ".join(sentences)
        if lo <= len(text.split()) <= hi:
            return text


def generate_episode(index: int, base_seed: int = BASE_SEED) -> dict:
    """One episode: four segments of facts in filler, the eight questions and the conflation set."""
    seed = base_seed + index
    rng = random.Random(seed)
    names = draw_names(rng, N_SEGMENTS * 5)
    values = draw_values(rng)
    segments = []
    for k in range(N_SEGMENTS):
        seg_names = names[k * 5:(k + 1) * 5]
        vals = values[k]
        entities = {
            "base": {"name": seg_names[0], "value": vals["base"], "role": "base"},
            "partner": {"name": seg_names[1], "value": vals["partner"], "role": "partner"},
            "neighbor": {"name": seg_names[2], "value": vals["neighbor"], "role": "neighbor"},
            "distractors": [{"name": seg_names[3], "value": vals["distractors"][0]},
                            {"name": seg_names[4], "value": vals["distractors"][1]}],
        }
        combined = {"names": [seg_names[0], seg_names[1]], "value": vals["base"] + vals["partner"]}
        single = [entities["base"], entities["partner"], *entities["distractors"]]
        facts = [VALUE_SENTENCES[rng.randrange(len(VALUE_SENTENCES))].format(**e) for e in single]
        facts.append(NEIGHBOR_SENTENCES[rng.randrange(len(NEIGHBOR_SENTENCES))].format(
            base=entities["base"]["name"], **entities["neighbor"]))
        facts.append(COMBINED_SENTENCES[rng.randrange(len(COMBINED_SENTENCES))].format(
            a=combined["names"][0], b=combined["names"][1], value=combined["value"]))
        segments.append({"index": k + 1, "text": render_segment_text(rng, facts),
                         "entities": entities, "combined": combined})
    questions = [make_question(qid, qtype, refs, segments) for qid, qtype, refs in QUESTION_PLAN]
    conflation_set = sorted({e["value"] for seg in segments for e in segment_entities(seg)}
                            | {seg["combined"]["value"] for seg in segments})
    return {"episode": index, "seed": seed, "segments": segments, "questions": questions,
            "conflation_set": conflation_set}


def segment_entities(segment: dict) -> list[dict]:
    ents = segment["entities"]
    return [ents["base"], ents["partner"], ents["neighbor"], *ents["distractors"]]


def make_question(qid: int, qtype: str, refs: tuple, segments: list[dict]) -> dict:
    if qtype == "combined":
        (_, seg_no), = refs
        combined = segments[seg_no - 1]["combined"]
        a, b = combined["names"]
        return {"id": qid, "type": qtype, "segment": seg_no, "entities": [a, b],
                "prompt": QUESTION_TEMPLATES[qtype].format(a=a, b=b), "truth": combined["value"]}
    picked = [segments[seg_no - 1]["entities"][role] for role, seg_no in refs]
    if qtype == "multihop":
        a, b = picked
        return {"id": qid, "type": qtype, "entities": [a["name"], b["name"]],
                "prompt": QUESTION_TEMPLATES[qtype].format(a=a["name"], b=b["name"]),
                "truth": a["value"] + b["value"]}
    (entity,) = picked
    return {"id": qid, "type": qtype, "segment": refs[0][1], "entity": entity["name"],
            "prompt": QUESTION_TEMPLATES[qtype].format(a=entity["name"]), "truth": entity["value"]}


def generate_tasks(n_episodes: int = N_EPISODES, base_seed: int = BASE_SEED) -> dict:
    return {"protocol": PROTOCOL_ID, "generator_version": GENERATOR_VERSION, "base_seed": base_seed,
            "n_episodes": n_episodes, "n_segments": N_SEGMENTS, "value_range": list(VALUE_RANGE),
            "episodes": [generate_episode(i, base_seed) for i in range(n_episodes)]}


def generate_file(options: dict) -> tuple[bytes, str]:
    """`generate`: the task file of the first N episodes (15, the pinned set, by default)."""
    n = options.get("episodes") or N_EPISODES
    return tasks_to_bytes(generate_tasks(n)), f"{n} episodes"


def tasks_to_bytes(tasks: dict) -> bytes:
    """The canonical file form of tasks.json: sorted-free, two-space indent, ASCII, LF, final newline."""
    return (json.dumps(tasks, indent=2, ensure_ascii=True) + "\n").encode("ascii")


# The prompts (PROTOCOL.md section 2): one compaction frame for every regime, with one paragraph swapped for the
# format. Every other sentence (the loss warning, the merge, keeping every named quantity with its
# exact value, the word limit, the ending) is the same text in both, so the format is the only difference.
# They are this project's own words; where they depart from the paper's runner (no system message, the prose
# paragraph's ban on lists and headings, relations as sentences, the answer line) PROTOCOL.md section 2b lists it,
# and a regime file with "replaces": true runs R0-R2 under the prompts a user brings (the paper's, for a replication).
COMPACTION_FRAME = (
    "You are keeping the working memory of a long analysis session. The transcript you have "
    "seen so far is about to be deleted and replaced by the state you write now; anything you "
    "leave out of it is lost for good.\n\n"
    "Merge the previous state and the new segment below into one updated state. Keep every named "
    "quantity with its exact value. Use at most {max_words} words.\n\n"
    "<<FORMAT>>\n\n"
    "PREVIOUS STATE:\n{previous_state}\n\n"
    "NEW SEGMENT:\n{segment}\n\n"
    "Write the updated state now, and nothing else."
)

FORMAT_PARAGRAPHS = {
    "prose": ("Format: write the state as plain flowing prose, in full sentences and one or more "
              "paragraphs, with no lists, tables, headings or code blocks."),
    "typed": ("Format: write the state as a typed state block with these four sections in this order. "
              "values: lines of the form NAME = <integer>. combined: lines of the form "
              "NAME + NAME = <integer>. relations: short lines such as NAME is one above NAME. "
              "notes: one line of free text."),
    # Exploratory: the sectioned summary coding agents write when they compact their context.
    "sections": ("Format: write the state under six headings, each on a line of its own followed by its "
                 "content: Goal, Constraints, Progress, Decisions, Next steps, Critical values. Under "
                 "Critical values write lines of the form NAME = <integer>, and NAME + NAME = <integer> for "
                 "a combined value."),
}

ANSWER_RULE = ("Reply with a single line of the form ANSWER: <integer> and nothing else: no working, "
               "no explanation.")

PROMPTS = {
    "compact_prose": COMPACTION_FRAME.replace("<<FORMAT>>", FORMAT_PARAGRAPHS["prose"]),
    "compact_typed": COMPACTION_FRAME.replace("<<FORMAT>>", FORMAT_PARAGRAPHS["typed"]),
    "compact_sections": COMPACTION_FRAME.replace("<<FORMAT>>", FORMAT_PARAGRAPHS["sections"]),
    "answer_transcript": (
        "Below is the full transcript of an analysis session.\n\n{context}\n\n"
        "Question: {question}\n"
        "Answer from the transcript above. " + ANSWER_RULE
    ),
    "answer_state": (
        "Below is the saved state of an analysis session; the original transcript is gone.\n\n"
        "{context}\n\n"
        "Question: {question}\n"
        "Answer from the saved state above. " + ANSWER_RULE
    ),
    "answer_recent": (
        "Below are the most recent segments of an analysis session; everything before them is gone.\n\n"
        "{context}\n\n"
        "Question: {question}\n"
        "Answer from the segments above. " + ANSWER_RULE
    ),
    "empty_state": "(none yet: this is the first checkpoint)",
    "segment_heading": "Segment {index}:",
}

# The regime registry: built-in regimes here, a user's from --regime-file through the same record.
# Adding a regime is one entry; plan, runner, scoring, analysis, figures and report read it from here.
REGIMES = {
    "R0": Regime("R0", "no compaction: the full transcript is carried (ceiling)", "transcript",
                 PROMPTS["answer_transcript"]),
    "R1": Regime("R1", "prose summary, cascaded", "state", PROMPTS["answer_state"], PROMPTS["compact_prose"],
                 "prose"),
    "R2": Regime("R2", "typed state block, cascaded", "state", PROMPTS["answer_state"], PROMPTS["compact_typed"],
                 "typed"),
    "R3": Regime("R3", "sectioned summary (goal, constraints, progress, decisions, next steps, critical "
                 "values), cascaded", "state", PROMPTS["answer_state"], PROMPTS["compact_sections"],
                 "section:critical values", exploratory=True),
    "K1": Regime("K1", "truncation baseline: the last segment verbatim, no compaction call (Recent-1)", "recent",
                 PROMPTS["answer_recent"], keep_last=1, exploratory=True),
    "K2": Regime("K2", "truncation baseline: the last two segments verbatim, no compaction call (Recent-2)",
                 "recent", PROMPTS["answer_recent"], keep_last=2, exploratory=True),
}


def prompts_sha256() -> str:
    return sha256_text(canonical_json(PROMPTS))


def render_compaction_prompt(regime: Regime, previous_state: str, segment_text: str,
                             budget: int = DEFAULT_BUDGET) -> str:
    empty = PROMPTS["empty_state"] if regime.empty_state is None else regime.empty_state
    return regime.compaction_template.format(max_words=budget_words(budget),
                                             previous_state=previous_state or empty, segment=segment_text)


def render_transcript(episode: dict, last: int | None = None) -> str:
    """The segments as the answers see them: all of them, or only the last k."""
    segments = episode["segments"] if last is None else episode["segments"][-last:]
    parts = [PROMPTS["segment_heading"].format(index=seg["index"]) + "\n" + seg["text"] for seg in segments]
    return "\n\n".join(parts)


def render_answer_prompt(regime: Regime, context: str, question: dict) -> str:
    return regime.answer_template.format(context=context, question=question["prompt"])


def plan_calls(regime: Regime, episode: dict, budget: int = DEFAULT_BUDGET) -> list[CallSpec]:
    """The calls of one cell in cascade order: a compaction after every segment (regimes that compact),
    then the questions; each call carries its stage and output budget."""
    calls = []
    if regime.compacts:
        calls += [CallSpec(f"compact_{seg['index']}", "compaction", budget, segment=seg["index"])
                  for seg in episode["segments"]]
    calls += [CallSpec(f"question_{q['id']}", "answer", ANSWER_NUM_PREDICT, question_id=q["id"])
              for q in episode["questions"]]
    return calls


def build_messages(regime: Regime, episode: dict, spec: CallSpec, state: str, registry: str = "") -> list[dict]:
    """One call's messages: the compaction prompt over the previous state and the segment, or a question
    over what the regime lets the answers see."""
    if spec.is_compaction:
        segment = episode["segments"][spec.segment - 1]
        content = render_compaction_prompt(regime, state, segment["text"], spec.max_output_tokens)
    else:
        question = episode["questions"][spec.question_id - 1]
        content = render_answer_prompt(regime, answer_context(regime, episode, state), question)
    system = [{"role": "system", "content": regime.system}] if regime.system else []
    return system + [{"role": "user", "content": content}]


def answer_context(regime: Regime, episode: dict, state: str) -> str:
    if regime.context == "transcript":
        return render_transcript(episode)
    if regime.context == "recent":
        return render_transcript(episode, last=regime.keep_last)
    return state


PROBE_KINDS["integer"] = ProbeKind("integer", ANSWER_RULE, parse_answer, parse_answer_lenient, integer_classes,
                                   CLASSES)

RUN_GATE_SECTIONS = {"typed": ("values", "combined", "relations", "notes"),
                     "section:critical values": ("goal", "constraints", "progress", "decisions", "next steps",
                                                 "critical values")}


# The filler sentences that report an event, and the event's status as the session leaves it: a state that says
# the survey sheets were scanned or the final summary shared claims what the session never did. (sentences that
# raise the item, the item; the receipt of a done one is the segment that says so)
SESSION_EVENTS = (
    (("One of the visitors asked whether the survey sheets had been scanned yet.",
      "The answer was that scanning would wait until the whole batch was reconciled."),
     {"name": "scanning of the survey sheets", "match": ["survey sheets", "scanning"], "status": "pending",
      "claimed_by": ["scanned", "done", "completed", "complete", "finished"]}),
    (("The answer was that scanning would wait until the whole batch was reconciled.",),
     {"name": "reconciliation of the batch", "match": ["batch", "reconciliation", "reconciled"], "status": "pending",
      "claimed_by": ["reconciled", "done", "completed", "complete", "finished"]}),
    (("The analyst flagged the page for a second reading later in the afternoon.",),
     {"name": "second reading of the page", "match": ["second reading"], "status": "pending",
      "claimed_by": ["done", "completed", "complete", "finished", "held", "took place"]}),
    (("A reminder went out that the final summary would be shared with the whole unit.",),
     {"name": "sharing of the final summary", "match": ["final summary"], "status": "pending",
      "claimed_by": ["shared", "sent", "circulated", "distributed", "went out", "published"]}),
    (("Everyone initialled the page once the entries had been read back correctly.",),
     {"name": "read-back of the entries", "match": ["read back", "read-back"], "status": "done"}),
    (("The room went quiet while the ledger was checked line by line against the source.",),
     {"name": "check of the ledger against the source", "match": ["ledger was checked", "ledger checked",
                                                                  "checked line by line"], "status": "verified"}),
    (("The recorder noted the time and moved the finished sheet to the done pile.",),
     {"name": "the finished sheet", "match": ["finished sheet", "done pile"], "status": "done"}),
)


def session_event_items(segments: list[dict]) -> list[dict]:
    """The ledger items of the events these segments report: pending ones with no receipt, done ones with the
    segment that says so as their receipt."""
    items = []
    for sentences, item in SESSION_EVENTS:
        said = [seg["index"] for seg in segments if any(sentence in seg["text"] for sentence in sentences)]
        if said:
            items.append({**item, "receipt": None if item["status"] == "pending" else f"segment {said[0]}"})
    return items


# Gating a run: every checkpoint of every compacting cell, against the entities its segments have named so far.
def episode_ledger(episode: dict, checkpoint: int, regime: Regime) -> dict:
    """The authoritative ledger of one checkpoint: the values and combined values of segments 1..checkpoint, and
    the status of every event they report."""
    segments = episode["segments"][:checkpoint]
    reader = regime.state_reader if regime.state_reader in RUN_GATE_SECTIONS else \
        "section:critical values" if regime.state_reader.startswith("section:") else None
    return normalize_ledger({
        "entities": {e["name"]: e["value"] for seg in segments for e in segment_entities(seg)},
        "combined": [{"parts": seg["combined"]["names"], "value": seg["combined"]["value"]} for seg in segments],
        "items": session_event_items(segments),
        "allowed_sections": list(RUN_GATE_SECTIONS[reader]) if reader else None,
        "name_pattern": RUN_GATE_NAME_PATTERN, "max_omissions": RUN_GATE_MAX_OMISSIONS})


def episode_source(episode: dict, checkpoint: int) -> str:
    return "\n\n".join(seg["text"] for seg in episode["segments"][:checkpoint])


def gate_state_row(base: dict, checkpoint: int, final: bool, state: str, episode: dict, regime: Regime) -> dict:
    findings = check_state(state, episode_ledger(episode, checkpoint, regime), episode_source(episode, checkpoint))
    counts = {c: sum(1 for f in findings if f["category"] == c and f["blocking"]) for c in GATE_CATEGORIES}
    omitted = next((int(f["detail"].split()[0]) for f in findings if f["category"] == "omission"), 0)
    first = next((f for f in findings if f["blocking"]), None)
    return {**base, "checkpoint": checkpoint, "final": final, "verdict": gate_verdict(findings),
            "blocking": sum(counts.values()), **counts, "omitted": omitted, "downstream_corrupted": None,
            "first_finding": f"{first['category']}: {first['detail']}" if first else ""}


PSEUDOWORD = re.compile(r"(?:[B-DF-HJ-NP-TV-Z][AEIOU]){3}", re.IGNORECASE)


def check_task_design(tasks: Any) -> list[str]:
    """Every way a task file departs from the XR-001 design (PROTOCOL.md section 2): the checks the
    tests apply to generated tasks, applied to any file. An empty list means it passes."""
    if not isinstance(tasks, dict) or not isinstance(tasks.get("episodes"), list) or not tasks["episodes"]:
        return ["the file has no `episodes` list"]
    problems = []
    episodes = tasks["episodes"]
    if "n_episodes" in tasks and tasks["n_episodes"] != len(episodes):
        problems.append(f"n_episodes is {tasks['n_episodes']!r} but the file holds {len(episodes)} episodes")
    for index, episode in enumerate(episodes):
        try:
            problems += [f"episode {index}: {p}" for p in check_episode_design(index, episode)]
        except (KeyError, TypeError, AttributeError, IndexError, ValueError) as err:
            problems.append(f"episode {index}: not in the task schema ({type(err).__name__}: {err})")
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
                problems.append(f"{where}: name {entity['name']!r} is not a six-letter consonant-vowel pseudoword")
            if not isinstance(entity["value"], int) or not VALUE_RANGE[0] <= entity["value"] <= VALUE_RANGE[1]:
                problems.append(f"{where}: {entity['name']} has value {entity['value']!r}, outside "
                                f"{VALUE_RANGE[0]}..{VALUE_RANGE[1]}")
        names += [e["name"] for e in everyone]
        base, partner, neighbor = roles["base"], roles["partner"], roles["neighbor"]
        if neighbor["value"] != base["value"] + 1:
            problems.append(f"{where}: neighbor {neighbor['name']} = {neighbor['value']} is not base "
                            f"{base['name']} + 1")
        combined = seg["combined"]
        if list(combined["names"]) != [base["name"], partner["name"]] or \
                combined["value"] != base["value"] + partner["value"]:
            problems.append(f"{where}: combined {combined['names']} = {combined['value']} is not base + partner")
        problems += [f"{where}: {p}" for p in check_segment_text(seg["text"], everyone, base, neighbor, combined)]
        layout.append({"base": base["value"], "partner": partner["value"], "neighbor": neighbor["value"],
                       "distractors": [d["value"] for d in distractors]})
    if len(set(names)) != len(names):
        problems.append("entity names repeat within the episode")
    if not values_are_valid(layout):
        problems.append("values break the no-accidental-structure rules (distinct values, only the designed "
                        "pairs one apart, distinct sums, distinct multi-hop truths)")
    expected = [make_question(qid, qtype, refs, segments) for qid, qtype, refs in QUESTION_PLAN]
    questions = episode["questions"]
    if len(questions) != len(expected):
        return [f"{len(questions)} questions, the plan has {len(expected)}"]
    for have, want in zip(questions, expected):
        for field in ("id", "type", "truth", "segment", "entity", "entities"):
            if have.get(field) != want.get(field):
                problems.append(f"question {want['id']}: `{field}` is {have.get(field)!r}, the plan gives "
                                f"{want.get(field)!r}")
        if not isinstance(have.get("prompt"), str) or not have["prompt"].strip():
            problems.append(f"question {want['id']}: no prompt text")
    conflation = sorted({e["value"] for seg in segments for e in segment_entities(seg)}
                        | {seg["combined"]["value"] for seg in segments})
    if episode.get("conflation_set") != conflation:
        problems.append("conflation_set is not every entity value and stated sum of the episode")
    return problems


def check_segment_text(text: str, entities: list[dict], base: dict, neighbor: dict, combined: dict) -> list[str]:
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
    sentences = re.split(r"(?<=[.!?])\s+", text)
    if not any(neighbor["name"] in s and base["name"] in s for s in sentences):
        problems.append(f"no sentence names neighbor {neighbor['name']} with its base {base['name']} "
                        f"(the designed relation is not stated)")
    if not any(all(n in s for n in combined["names"]) and str(combined["value"]) in s for s in sentences):
        problems.append(f"no sentence states the combined value with both of its parts")
    return problems


def load_xr001_task_set(path: Path, raw: bytes, tasks: Any, sha: str, in_repo: bool) -> dict:
    """load_task_set for XR-001: pinned, generated (other seed or size) or external (must pass the design checks)."""
    shown = display_path(path)
    kind = "pinned" if sha == PINNED_TASKS_SHA256 else "generated" if is_generator_output(tasks) else None
    if in_repo and kind != "pinned":
        raise PilotError(f"{shown} is not the pre-registered task set (sha256 {sha[:12]}, pinned "
                         f"{PINNED_TASKS_SHA256[:12]}); restore it with `git checkout -- {shown}` (a changed task "
                         f"set needs a dated protocol amendment); to run another task file, pass --tasks PATH")
    if kind is None:
        problems = check_task_design(tasks)
        if problems:
            raise design_check_failure(shown, problems, "XR-001 task schema", "fix them or use the generated tasks")
        kind = "external"
    return {"tasks": tasks, "sha256": sha, "kind": kind, "path": shown}


def is_generator_output(tasks: Any) -> bool:
    """True when the file holds exactly what this generator makes for its seed and size: the same fields in
    the same order with the same values and JSON types, however it is laid out. Compared in the compact form,
    which the standard library writes at C speed: the indented form takes seconds for a large task file."""
    if not isinstance(tasks, dict) or tasks.get("generator_version") != GENERATOR_VERSION:
        return False
    n, seed = tasks.get("n_episodes"), tasks.get("base_seed")
    if not isinstance(n, int) or not isinstance(seed, int) or not 1 <= n <= MAX_EPISODES:
        return False
    compact = {"separators": (",", ":"), "ensure_ascii": True}
    return json.dumps(tasks, **compact) == json.dumps(generate_tasks(n, seed), **compact)
