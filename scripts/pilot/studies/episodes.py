"""Pseudoword sessions (PROTOCOL.md section 2): the seeded session material several studies are
built on, and what follows from it alone: six-letter pseudoword names, values with no accidental
structure, fact sentences in filler, the fixed question plan, the events the filler reports, the
gate ledger of a checkpoint and the gate rows of a run, and the stand-in model the demo answers
these sessions with. Pure functions of an explicit random.Random(seed), except gate_bank, which
reads a run's journal."""
from __future__ import annotations

import hashlib
import random
import re
from typing import Any

from ..cells import all_cells, run_budgets, run_regimes, run_samples
from ..demo import STAND_IN_PROSE_FORGETS, STAND_IN_SEED
from ..probes import score_probe
from ..prompts import FORMAT_SECTIONS
from ..records import N_SEGMENTS, Regime
from ..rules.states import split_units
from ..runfolder import Journal, is_complete


BASE_SEED = 77001                      # episode seed = BASE_SEED + episode index

VALUE_RANGE = (101, 987)

SEGMENT_WORDS = (120, 180)

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
# combined value's sentence names its two parts: the trap is stated, not merely implied by the
# values.
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


def segment_problems(segment: Any) -> list[str]:
    """What a segment lacks of what a run reads of it besides its text (the gate's ledger of a
    checkpoint, the demo's stand-in): its entities (base, partner and neighbor, and a list of
    distractors, each a name and a whole number) and its combined value (two names and a whole
    number); empty when it has them."""
    if not isinstance(segment, dict):
        return ["not an object"]

    def named_number(entity: Any) -> bool:
        return isinstance(entity, dict) and isinstance(entity.get("name"), str) and \
            isinstance(entity.get("value"), int) and not isinstance(entity.get("value"), bool)

    problems = []
    entities = segment.get("entities")
    if not isinstance(entities, dict) or not all(named_number(entities.get(role)) for role in
                                                 ("base", "partner", "neighbor")) or \
            not isinstance(entities.get("distractors"), list) or \
            not all(named_number(d) for d in entities["distractors"]):
        problems.append("`entities` must hold base, partner and neighbor, and a list of "
                        "distractors, each with a name and a whole-number value")
    combined = segment.get("combined")
    if (
        not isinstance(combined, dict)
        or not isinstance(combined.get("names"), list)
        or len(combined["names"]) != 2
        or not all(isinstance(n, str) for n in combined["names"])
        or not named_number({"name": "", "value": combined.get("value")})
    ):
        problems.append("`combined` must hold two `names` and a whole-number `value`")
    return problems


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


# The filler sentences that report an event, and the event's status as the session leaves it: a
# state that says
# the survey sheets were scanned or the final summary shared claims what the session never did.
# (sentences that
# raise the item, the item; the receipt of a done one is the segment that says so)
SESSION_EVENTS = (
    (("One of the visitors asked whether the survey sheets had been scanned yet.",
      "The answer was that scanning would wait until the whole batch was reconciled."),
     {"name": "scanning of the survey sheets", "match": ["survey sheets", "scanning"],
      "status": "pending",
      "claimed_by": ["scanned", "done", "completed", "complete", "finished"]}),
    (("The answer was that scanning would wait until the whole batch was reconciled.",),
     {"name": "reconciliation of the batch", "match": ["batch", "reconciliation", "reconciled"],
      "status": "pending",
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
     {"name": "check of the ledger against the source", "match": ["ledger was checked",
     "ledger checked",
                                                                  "checked line by line"],
                                                                  "status": "verified"}),
    (("The recorder noted the time and moved the finished sheet to the done pile.",),
     {"name": "the finished sheet", "match": ["finished sheet", "done pile"], "status": "done"}),
)


def session_event_items(segments: list[dict]) -> list[dict]:
    """The ledger items of the events these segments report: pending ones with no receipt, done ones
    with the segment that says so as their receipt."""
    items = []
    for sentences, item in SESSION_EVENTS:
        said = [seg["index"] for seg in segments
                if any(sentence in seg["text"] for sentence in sentences)]
        if said:
            items.append({**item, "receipt": None if item["status"]
                          == "pending" else f"segment {said[0]}"})
    return items


# Gating a run: every checkpoint of every compacting cell, against the entities its segments have
# named so far.
def episode_ledger(episode: dict, checkpoint: int, regime: Regime) -> dict:
    """The authoritative ledger of one checkpoint: the values and combined values of segments
    1..checkpoint, and the status of every event they report."""
    # gating imports the ledger
    from ..rules.ledger import RUN_GATE_MAX_OMISSIONS, RUN_GATE_NAME_PATTERN, normalize_ledger
    segments = episode["segments"][:checkpoint]
    reader = regime.state_reader if regime.state_reader in FORMAT_SECTIONS else \
        "section:critical values" if regime.state_reader.startswith("section:") else None
    return normalize_ledger({
        "entities": {e["name"]: e["value"] for seg in segments for e in segment_entities(seg)},
        "combined": [{"parts": seg["combined"]["names"],
                      "value": seg["combined"]["value"]} for seg in segments],
        "items": session_event_items(segments),
        "allowed_sections": list(FORMAT_SECTIONS[reader]) if reader else None,
        "name_pattern": RUN_GATE_NAME_PATTERN, "max_omissions": RUN_GATE_MAX_OMISSIONS})


def episode_source(episode: dict, checkpoint: int) -> str:
    return "\n\n".join(seg["text"] for seg in episode["segments"][:checkpoint])


def gate_state_row(base: dict, checkpoint: int, final: bool, state: str, episode: dict,
                   regime: Regime) -> dict:
    from ..rules.gate import GATE_CATEGORIES, check_state, gate_verdict
    findings = check_state(state, episode_ledger(episode, checkpoint, regime),
                           episode_source(episode, checkpoint))
    counts = {c: sum(1 for f in findings if f["category"]
                     == c and f["blocking"]) for c in GATE_CATEGORIES}
    omitted = next((int(f["detail"].split()[0]) for f in findings if f["category"] == "omission"),
                   0)
    first = next((f for f in findings if f["blocking"]), None)
    return {**base, "checkpoint": checkpoint, "final": final, "verdict": gate_verdict(findings),
            "blocking": sum(counts.values()), **counts, "omitted": omitted,
            "downstream_corrupted": None,
            "first_finding": f"{first['category']}: {first['detail']}" if first else ""}


def gate_bank(manifest: dict, tasks: dict, journal: Journal,
              models: list[str] | None = None) -> list[dict]:
    """One gate row per journalled compacted state (every checkpoint), unfinished cells included: a
    state is gated whether or not its answers have come back. A final state's row says whether at
    least one of the cell's answers was corrupted: yes at the first wrong answer, no once all are in
    and right, empty until then."""
    regimes = run_regimes(manifest)
    rows, logs = [], {}
    for cell in all_cells(models or manifest["models"], list(regimes), manifest["n_episodes"],
                          run_budgets(manifest),
                          run_samples(manifest)):
        regime = regimes[cell.regime]
        if not regime.compacts:
            continue
        episode = tasks["episodes"][cell.episode]
        stream = (cell.model, cell.regime, cell.budget, cell.sample)
        if stream not in logs:
            logs[stream] = journal.cell_records(*stream)
        records = logs[stream].get(cell.episode, {})
        base = {"model": cell.model, "regime": cell.regime, "episode": cell.episode,
                "budget": cell.budget,
                "sample": cell.sample}
        n = len(episode["segments"])
        for k in range(1, n + 1):
            record = records.get(f"compact_{k}")
            if record is None:
                continue
            row = gate_state_row(base, k, k == n, record.get("response", ""), episode, regime)
            if k == n:
                # "at least one answer corrupted" is settled by the first wrong answer, even in an
                # unfinished
                # cell; "none corrupted" only once every answer is in
                probes = [score_probe(records[f"question_{q['id']}"], q, episode["conflation_set"])
                          for q in episode["questions"] if f"question_{q['id']}" in records]
                if any(p["class"] != "correct" for p in probes):
                    row["downstream_corrupted"] = True
                elif is_complete(manifest, cell):
                    row["downstream_corrupted"] = False
            rows.append(row)
    return rows


# The stand-in model of the demo (a demonstration device, never a subject; every output it makes is
# SIMULATED).
STAND_IN_NUMBER = re.compile(r"-?\d+")

STAND_IN_RELATION = re.compile(r"\bone (?:above|more than)\b")


def stand_in_names(text: str) -> list[str]:
    """The entity names in text, as the run's gate finds them (its pattern; the ledger is imported
    when first used)."""
    from ..rules.ledger import RUN_GATE_NAME_PATTERN
    return re.findall(RUN_GATE_NAME_PATTERN, text)


def stand_in_facts(text: str) -> tuple[dict, dict, list]:
    """Values, stated sums and neighbor relations in text: segment sentences or the stand-in's own
    states."""
    values, combined, relations = {}, {}, []
    for unit in split_units(text):                        # its sentences and lines
        names, numbers = stand_in_names(unit), STAND_IN_NUMBER.findall(unit)
        related = len(names) == 2 and STAND_IN_RELATION.search(unit)
        if related and (names[0], names[1]) not in relations:
            relations.append((names[0], names[1]))      # the neighbor is named before its base
        if len(numbers) != 1 or not 1 <= len(names) <= 2:
            continue
        if len(names) == 1 or related:
            values[names[0]] = int(numbers[0])
        else:
            combined[(names[0], names[1])] = int(numbers[0])
    return values, combined, relations


def stand_in_forgets(*names: str) -> bool:
    """The seeded choice of the facts a prose state drops: a hash of the fact's names, under the
    share."""
    digest = hashlib.sha256(f"{STAND_IN_SEED}:{'+'.join(names)}".encode("ascii")).digest()
    return int.from_bytes(digest[:4], "big") < STAND_IN_PROSE_FORGETS * 2 ** 32


class SessionStandIn:
    """The stand-in model of the demo for these sessions: it writes compaction states and answers
    from the facts in its prompt (segment sentences, or the state it wrote before),
    deterministically; a prose state forgets a seeded share of the facts (STAND_IN_PROSE_FORGETS,
    chosen by a hash of their names), so that R0 and R2 stay at the ceiling and R1 loses."""

    def reply(self, prompt: str) -> str:
        if "PREVIOUS STATE:" in prompt and "NEW SEGMENT:" in prompt:
            return self.compact(prompt)
        return self.answer(prompt)

    def compact(self, prompt: str) -> str:
        previous, _, segment = prompt.partition("PREVIOUS STATE:")[2].partition("NEW SEGMENT:")
        values, combined, relations = stand_in_facts(previous)
        new_values, new_combined, new_relations = stand_in_facts(segment)
        values.update(new_values)
        combined.update(new_combined)
        relations += [r for r in new_relations if r not in relations]
        if "typed state block" in prompt:
            lines = ["values:"] + [f"{name} = {value}" for name, value in values.items()]
            lines += ["combined:"] + [f"{a} + {b} = {value}" for (a, b), value in combined.items()]
            lines += ["relations:"] + [f"{a} is one above {b}" for a, b in relations]
            return "\n".join(lines + ["notes: written by the stand-in model of the demo"])
        sentences = ["Here is what the session has noted so far, in order."]
        sentences += [f"After that comes {name} at {value}." for name, value in values.items()
                      if not stand_in_forgets(name)]
        sentences += [f"{a} and {b} came to {value} together." for (a, b), value in combined.items()
                      if not stand_in_forgets(a, b)]
        return " ".join(sentences)

    def answer(self, prompt: str) -> str:
        context, _, question = prompt.rpartition("Question:")
        question = question.split("\n", 1)[0]
        values, combined, _ = stand_in_facts(context)
        names = stand_in_names(question)
        result = None
        if "combined" in question and len(names) == 2:
            result = combined.get((names[0], names[1]))
        elif "plus" in question and len(names) == 2:
            if names[0] in values and names[1] in values:
                result = values[names[0]] + values[names[1]]
        elif names:
            result = values.get(names[0])
        return "The notes do not give that figure." if result is None else f"ANSWER: {result}"
