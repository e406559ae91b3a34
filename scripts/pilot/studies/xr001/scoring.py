"""XR-001, scoring (protocol/PROTOCOL.md section 4): one complete cell scored as the run writes
it (its probes, every call's guards, the write-time retention of its final state and, for the
first episodes, the state and the values it holds), and results.json's fields of the cells' rows.
The study's score hooks (Study.score_cell, Study.score_fields)."""
from __future__ import annotations

from ...bank import ScoredRun, cell_final_state, summarize_compaction_tokens
from ...probes import score_probe
from ..episodes import segment_entities
from ...records import Cell, DEFAULT_BUDGET, Regime, known_count
from ...rules.states import (read_prose_state, read_prose_state_by_sentence, read_section,
                             read_typed_state, read_typed_state_loose)


def score_retention(regime: Regime, state: str, episode: dict) -> dict:
    """Write-time retention of one final state against the episode's 20 entities."""
    truths = {e["name"]: e["value"] for seg in episode["segments"] for e in segment_entities(seg)}

    def counts(found: dict) -> tuple[int, int]:
        retained = [name for name in truths if name in found]
        return len(retained), sum(1 for name in retained if found[name] == truths[name])

    reader = regime.state_reader
    loose = {}
    if reader == "typed":
        retained, correct = counts(read_typed_state(state))
        loose_retained, loose_correct = counts(read_typed_state_loose(state))
        loose = {"loose_retained": loose_retained, "loose_correct": loose_correct}
    elif reader.startswith("section:"):
        retained, correct = counts(read_typed_state(read_section(state, reader[len("section:"):])))
    else:
        # the paper's heuristic, kept for comparability with its table, and the reader bounded by
        # the sentence
        # that names the entity, which P3 reads (amendment of 2026-12-01)
        retained, correct = counts(read_prose_state(state, truths))
        loose = {"sentence_correct": counts(read_prose_state_by_sentence(state, truths))[1]}
    return {"retained": retained, "correct": correct, "wrong": retained - correct,
            "n_entities": len(truths), "method": reader, **loose}


def state_values(regime: Regime, state: str, episode: dict) -> list[dict]:
    """Each pinned entity value of the episode as a final state holds it, read as P3 reads it (a
    typed block by its exact `NAME = N` lines, a prose state by the sentence that names the entity):
    kept (the value written), changed (another value, in "found") or dropped (the name absent, or no
    value beside it). The report marks them."""
    truths = {e["name"]: e["value"] for seg in episode["segments"] for e in segment_entities(seg)}
    reader = regime.state_reader
    if reader == "typed":
        found = read_typed_state(state)
    elif reader.startswith("section:"):
        found = read_typed_state(read_section(state, reader[len("section:"):]))
    else:
        found = read_prose_state_by_sentence(state, truths)
    return [{"name": name, "value": value, "found": found.get(name),
             "class": "kept" if found.get(name) == value else "changed"
             if found.get(name) is not None else "dropped"}
            for name, value in truths.items()]


def score_cell(run: ScoredRun, cell: Cell, records: dict, base: dict, plan: list) -> dict[str,
    list]:
    """One complete cell: its probes, every call's guards (cap hits, token counts, thinking), the
    write-time retention of its final state and, for the first two episodes, the final state itself.
    Probes, states and calls away from the pre-registered budget or first sample carry their
    `budget` and `sample`."""
    regime, episode = run.regimes[cell.regime], run.tasks["episodes"][cell.episode]
    probes, stage, guards, examples = [], [], [], []
    for spec in plan:
        record = records[spec.kind]
        work = record.get("server_work") or {}
        guards.append({**base, **({"control_tokens": True} if record.get("control_tokens") else {}),
                       "kind": spec.kind, "stage": spec.stage,
                       "done_reason": record.get("done_reason"),
                       "eval_count": known_count(record.get("eval_count")),
                       "prompt_eval_count": known_count(record.get("prompt_eval_count")),
                       "prompt_cached": work.get("prompt_cached"),
                       "prompt_evaluated": work.get("prompt_evaluated"),
                       "thinking_chars": len(record.get("thinking") or "")})
        if not spec.is_compaction:
            question = episode["questions"][spec.question_id - 1]
            probes.append({**base, **score_probe(record, question, episode["conflation_set"])})
    if regime.compacts:
        final_state = cell_final_state(run.study, regime, episode, records, plan)
        if regime.state_reader != "none":
            stage.append({**score_retention(regime, final_state, episode), **base})
        if cell.episode < 2 and cell.budget == DEFAULT_BUDGET and not cell.sample:
            examples.append({**base, "final_state": final_state,
                             **({"values": state_values(regime, final_state, episode)}
                                if regime.state_reader != "none" else {})})
    return {"probes": probes, "compaction_stage": stage, "calls": guards,
            "example_states": examples}


def score_fields(run: ScoredRun, rows: dict[str, list]) -> dict:
    """results.json's fields of this study: the probes, the final states' retention, the realized
    compaction tokens per regime (at the pre-registered budget, and per budget), every call's guards
    and the example states."""
    comp_tokens: dict[int, dict[str, list]] = {}
    for call in rows.get("calls", []):
        if call["stage"] == "compaction":
            comp_tokens.setdefault(call.get("budget", DEFAULT_BUDGET),
                                   {}).setdefault(call["regime"], []).append(
                (call["model"], call["eval_count"]))
    return {"probes": rows["probes"], "compaction_stage": rows.get("compaction_stage", []),
            "compaction_tokens": summarize_compaction_tokens(comp_tokens.get(DEFAULT_BUDGET, {})),
            "compaction_tokens_by_budget": {str(b): summarize_compaction_tokens(t) for b,
                                            t in sorted(comp_tokens.items())},
            "calls": rows.get("calls", []), "example_states": rows.get("example_states", [])}
