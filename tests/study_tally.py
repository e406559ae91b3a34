"""TALLY-T1, this test suite's own study, written as a contributor adds a study: this one module
(installed as scripts/pilot/studies/tally.py of a copy of the repository by tests/test_studies.py),
one registry entry (REGISTRY_ENTRY there), a protocol document and a task file made by `generate
--study tally`.

A bookkeeping session of three short parts, each stating `code NAME = N` facts, and two questions
whose answers are text (the code's value as written) asked of the whole transcript (FULL) or of a
prose note rewritten after every part (NOTE, a cascaded compaction). It has its own probe kind (text
answers), its own figure, its own generation option (--codes) and its own demo stand-in; everything
else is the shared runner's. """
from __future__ import annotations

import random
import re
from pathlib import Path

from ..probes import ProbeKind, register_probe_kind, score_probe
from ..inputs import TaskSetError, tasks_to_bytes
from ..prompts import CallText
from ..records import (REPO_ROOT, CallSpec, Option, Regime, canonical_json, display_path,
                       sha256_bytes, sha256_text)
from ..reports import fmt_p, fmt_rate, md_table
from ..stats import mcnemar_summary, rate_summary
from ..svg import Figure, group_room, grouped_bars, make_look

PROTOCOL_ID = "TALLY-T1"

PROTOCOL_PATH = REPO_ROOT / "protocol" / "TALLY.md"

TASKS_PATH = REPO_ROOT / "tasks" / "tally.json"

SEED, N_SESSIONS, N_PARTS, CODES_PER_PART = 4242, 3, 3, 2

# --- Its probe kind: the code's value as written, a text
# --------------------------------------------------------
TEXT_RULE = "Reply with a single line of the form ANSWER: <the value, as written> and nothing else."

ANSWER_LINE = re.compile(r"^ANSWER:[ \t]*(.+?)[ \t]*$", re.MULTILINE)

CLASSES = ("correct", "wrong", "omission")


def parse_text(reply: str) -> str | None:
    found = ANSWER_LINE.findall(reply or "")
    return found[-1] if found else None


def classify_text(answer: str | None, question: dict, conflation: list) -> str:
    return "omission" if answer is None else "correct" if answer == question["truth"] else "wrong"


register_probe_kind(ProbeKind("tally_text", parse_text, None, classify_text, CLASSES,
                              answer_type="text"))

# --- Its prompts and regimes
# ---------------------------------------------------------------------------------------
PROMPTS = {
    "note": ("You keep the running note of a bookkeeping session; the session is erased and only "
             "the note is kept.\nFold the new part into the note in plain sentences, at most "
             "{max_words} words, keeping every code with its value.\n\nPREVIOUS "
             "STATE:\n{previous_state}\n\nNEW SEGMENT:\n{segment}\n\nWrite the new note now."),
    "ask_transcript": "Here is a whole bookkeeping session.\n\n{context}\n\nQuestion: {question}\n"
    + TEXT_RULE,
    "ask_note": "Here is the running note of a bookkeeping session.\n\n{context}\n\nQuestion: "
    "{question}\n" + TEXT_RULE,
    "empty_note": "(nothing yet)",
}

REGIMES = {
    "FULL": Regime("FULL", "the whole session is carried", "transcript", PROMPTS["ask_transcript"]),
    "NOTE": Regime("NOTE", "a prose note rewritten after every part", "state", PROMPTS["ask_note"],
                   PROMPTS["note"],
                   "prose"),
}

DEFAULT_REGIMES = ("FULL", "NOTE")


def prompts_sha256() -> str:
    return sha256_text(canonical_json(PROMPTS))


# --- Its tasks
# --------------------------------------------------------------------------------------------------
def pseudoword(rng: random.Random) -> str:
    return "".join(rng.choice("BDFGKLMNPRSTVZ") + rng.choice("AEIOU") for _ in range(3))


def make_session(index: int, codes: int) -> dict:
    """One session: its parts of `code NAME = N` lines, and two text questions (the newest code and
    the first)."""
    rng = random.Random(SEED + index)
    names: list[str] = []
    while len(names) < N_PARTS * codes:
        name = pseudoword(rng)
        names += [name] if name not in names else []
    values = {name: rng.randint(100, 899) for name in names}
    lines = [f"code {name} = {values[name]}" for name in names]
    parts = [{"index": k + 1, "text": "\n".join(lines[k * codes:(k + 1)
                                                      * codes])} for k in range(N_PARTS)]
    first, last = names[0], names[-1]
    questions = [{"id": q, "kind": "tally_text", "type": kind, "prompt": "What is written for "
                  f"code {name}?",
                  "truth": str(values[name])} for q, kind, name in ((1, "newest", last),
                  (2, "first", first))]
    return {"episode": index, "segments": parts, "questions": questions, "conflation_set": []}


GENERATE_OPTIONS = (Option("--codes", {"type": int, "metavar": "N",
                                       "help": "tally study: codes per part (default "
                                       f"{CODES_PER_PART})"}),)


def generate_file(options: dict) -> tuple[bytes, str]:
    """`generate --study tally`: N sessions (3, the pinned set, by default) of --codes codes per
    part."""
    n, codes = options.get("episodes") or N_SESSIONS, options.get("codes") or CODES_PER_PART
    tasks = {"study": "tally", "protocol": PROTOCOL_ID, "codes_per_part": codes, "n_episodes": n,
             "episodes": [make_session(i, codes) for i in range(n)]}
    return tasks_to_bytes(tasks), f"{n} sessions"


PINNED_TASKS_SHA256 = sha256_bytes(generate_file({})[0])


def load_task_set(path: Path, raw: bytes, tasks: dict, sha: str, in_repo: bool) -> dict:
    """Pinned (the default file), generated (another size or --codes) or refused: nothing else is
    read."""
    made = generate_file({"episodes": tasks.get("n_episodes"),
                          "codes": tasks.get("codes_per_part")})[0] \
        if isinstance(tasks.get("n_episodes"), int) and isinstance(tasks.get("codes_per_part"),
            int) else None
    kind = "pinned" if sha == PINNED_TASKS_SHA256 else "generated" if raw == made else None
    if kind is None:
        raise TaskSetError(f"{display_path(path)} is not a {PROTOCOL_ID} task file made by "
                           "`generate --study tally`")
    return {"tasks": tasks, "sha256": sha, "kind": kind, "path": display_path(path)}


# --- Its calls
# --------------------------------------------------------------------------------------------------
def call_text(regime: Regime, episode: dict, spec: CallSpec, state: str, registry: str) -> CallText:
    """A part for the note; a question over the whole transcript or the note."""
    if spec.is_compaction:
        return CallText(segment=episode["segments"][spec.segment - 1]["text"])
    transcript = "\n\n".join(f"Part {s['index']}:\n{s['text']}" for s in episode["segments"])
    return CallText(context=state if regime.compacts else transcript,
                    question=episode["questions"][spec.question_id - 1]["prompt"])


# --- Its results
# --------------------------------------------------------------------------------------------------
def score_cell(run, cell, records: dict, base: dict, plan: list) -> dict:
    """One text probe per answer of a complete cell."""
    episode = run.tasks["episodes"][cell.episode]
    return {"probes": [{**base, **score_probe(records[spec.kind],
                                              episode["questions"][spec.question_id - 1], [])}
                       for spec in plan if spec.stage == "answer"]}


def analyze(results: dict, task_set=None, table=None) -> dict:
    """The share answered correctly per model and regime, and FULL against NOTE by an exact McNemar
    test."""
    correct = {(p["model"], p["regime"], p["episode"], p["question_id"]): p["class"] == "correct"
               for p in results["probes"]}
    accuracy, pairs = {}, []
    for model in results["models"]:
        accuracy[model] = {}
        for regime in results["regimes"]:
            mine = [ok for (m, r, _, _), ok in correct.items() if (m, r) == (model, regime)]
            accuracy[model][regime] = rate_summary(sum(mine), len(mine))
        pairs += [(ok, correct[(m, "NOTE", e, q)]) for (m, r, e, q), ok in correct.items()
                  if m == model and r == "FULL" and (m, "NOTE", e, q) in correct]
    cells = {(m, r, e) for m, r, e, _ in correct}
    expected = len(results["models"]) * len(results["regimes"]) * results["n_episodes"]
    return {"study": "tally", "label": "EXPLORATORY", "complete": len(cells) == expected,
            "coverage": {"complete_cells": len(cells), "expected_cells": expected},
            "models": results["models"],
            "regimes": results["regimes"], "regime_definitions": results.get("regime_definitions",
            {}),
            "accuracy": accuracy, "test": mcnemar_summary(pairs, "FULL", "NOTE")}


def render_md(analysis: dict) -> str:
    rows = [[f"{m} {r}", fmt_rate(s)] for m, by in analysis["accuracy"].items() for r,
            s in by.items()]
    test = analysis["test"]
    return (f"# {PROTOCOL_ID}: what a rewritten note keeps of a tally\n\n" + md_table(["cell",
        "correct"], rows) +
            f"\n\nFULL against NOTE: b = {test['b']}, c = {test['c']}, exact McNemar p = "
            f"{fmt_p(test['p'])}\n")


def render_headline(analysis: dict) -> str:
    return f"{PROTOCOL_ID}: " + "; ".join(f"{m} {r} {fmt_rate(s, False)}" for m,
                                          by in analysis["accuracy"].items()
                                          for r, s in by.items())


FIGURE = ("fig_tally_correct.svg", "Codes answered as written, by model and regime")


def figures(results: dict, analysis: dict, stamped: bool = True) -> list[Figure]:
    """Its one figure: the share of questions answered with the code's value as written."""
    look = make_look(analysis, None, [group_room(len(analysis["regimes"]))], stamped)
    cells = {(m, r): s for m, by in analysis["accuracy"].items() for r, s in by.items()}
    svg = grouped_bars(FIGURE[1], "whiskers: 95% Wilson intervals", analysis["models"],
                       analysis["regimes"], cells,
                       "answered as written (%)", look)
    return [Figure(FIGURE[0], FIGURE[1], svg)]


# --- Its demo
# --------------------------------------------------------------------------------------------------
CODE_LINE = re.compile(r"code ([A-Z]{6}) = (\d+)")


class TallyStandIn:
    """The stand-in `demo --study tally` runs on: its note keeps every code but the session's first;
    it answers from the codes its prompt holds."""

    def reply(self, prompt: str) -> str:
        if "PREVIOUS STATE:" in prompt and "NEW SEGMENT:" in prompt:
            codes = dict(CODE_LINE.findall(prompt.split("PREVIOUS STATE:", 1)[1]))
            first = next(iter(codes), None)
            return " ".join(f"code {name} = {value}." for name, value in codes.items()
                            if name != first or "(nothing yet)" not in prompt)
        context, _, question = prompt.rpartition("Question:")
        name = re.search(r"code ([A-Z]{6})", question)
        value = dict(CODE_LINE.findall(context)).get(name.group(1)) if name else None
        return f"ANSWER: {value}" if value else "The note does not say."


def stand_in(tasks: dict) -> TallyStandIn:
    return TallyStandIn()

