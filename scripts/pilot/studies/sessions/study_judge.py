"""XR-S1's judge in the study (issue 44, point 1; protocol/SESSIONS.md, the amendment of
2026-12-06 (18)): `score --judge MODEL RUN_DIR` scores a sessions run as `score` does, then asks the
judge (judge.py) about each needed item of a judged category (a request, a standing instruction, a
decision, an open task) in each written final state. The judge's status replaces the rules' in the
rows, the rules' kept beside it; the rules' status stands where the judge gives none (a reply it
could not read, a summary too long for it) and where the state is a Recent-k regime's last segments
kept verbatim (no summary: nothing the rules cannot read). Its calls go to their own journal in the
run folder, never to the run's manifest or raw/, so `verify` reads the run as it was.

    open_judge(run_dir, setup) -> StudyJudge: the prompt read, the judge recorded in
        <run>/judge/judge-lock.json, its journal <run>/judge/judge-calls.jsonl opened, its
        agreement with the hand labels read from a judge-check folder where one is named
    StudyJudge.judged_rows(episode, state, compacted, rows) -> the needed rows, judged
    StudyJudge.record() -> results.json's `judge` block

study_needed.py counts the judged rows and renders the block (judge_line) on every page the judge
touched.
"""
from __future__ import annotations

import collections
import json
from pathlib import Path

from ...cached_calls import CallCache
from ...records import JudgeSetup, canonical_json, display_path, sha256_text, utc_now
from ...runfolder import refuse_unsafe, refuse_unsafe_place, write_atomic
from ...transport import redact_url
from .judge import (DEFAULT_THRESHOLD, JUDGED, Judge, JudgeInputError, JudgePrompt,
                    read_judge_prompt)
from .study_needed import BY_JUDGE, BY_RULES_TOO_LONG, BY_RULES_UNREADABLE

JUDGE_FOLDER = "judge"
CALLS_FILE = "judge-calls.jsonl"
LOCK_FILE = "judge-lock.json"


def open_judge(run_dir: Path, setup: JudgeSetup) -> "StudyJudge":
    """The judge of one `score --judge`: its question (--judge-prompt or the default), the folder
    <run>/judge/ with its lock and journal, and the agreement a judge-check measured for this model
    and question (None where no folder is named or it holds none)."""
    prompt = read_judge_prompt(setup.prompt_path)
    folder = run_dir / JUDGE_FOLDER
    refuse_unsafe_place(folder, True, "move it away")
    folder.mkdir(exist_ok=True)
    record_judge(folder / LOCK_FILE, setup, prompt)
    threshold, agreement = measured(setup, prompt)
    cache = CallCache(folder / CALLS_FILE)
    judge = Judge(setup.backend, setup.model, setup.identity, prompt, cache, setup.policy,
                  threshold)
    return StudyJudge(judge, folder, setup, agreement)


def record_judge(path: Path, setup: JudgeSetup, prompt: JudgePrompt) -> None:
    """The lock: every judge whose calls the journal holds (model, its identity as the server
    described it, the backend and the question itself), one entry each, added the first time."""
    refuse_unsafe(path)
    judges = []
    if path.exists():
        try:
            judges = json.loads(path.read_bytes()).get("judges")
        except (ValueError, AttributeError, RecursionError):
            judges = None
        if not isinstance(judges, list):
            raise JudgeInputError(f"{path} is not the judge's lock this runner writes; move it "
                                  "away (the journal beside it is kept) and run again")
    entry = {"model": setup.model, "identity_sha256": sha256_text(canonical_json(setup.identity)),
             "prompt_sha256": prompt.sha256}
    if any(isinstance(j, dict) and all(j.get(k) == v for k, v in entry.items()) for j in judges):
        return
    judges.append({**entry, "backend": setup.backend.name,
                   "base_url": redact_url(setup.backend.base_url), "identity": setup.identity,
                   "prompt": prompt.text, "first_used": utc_now()})
    write_atomic(path, (json.dumps({"judges": judges}, indent=1, ensure_ascii=False) + "\n")
                 .encode("utf-8"))


def measured(setup: JudgeSetup, prompt: JudgePrompt) -> tuple:
    """The threshold on P(KEPT) (--judge-threshold, else the one judge-check chose on the dev labels
    where its folder is named, else the default) and judge-check's measured agreement of this model
    and question at it (judge_agreement.py; None where no folder is named or it holds none)."""
    if setup.agreement_dir is None:
        return (DEFAULT_THRESHOLD if setup.threshold is None else setup.threshold), None
    from .judge_agreement import chosen_threshold, measured_agreement
    given = (setup.agreement_dir, setup.model, setup.identity, prompt.sha256)
    threshold = chosen_threshold(*given) if setup.threshold is None else setup.threshold
    return threshold, measured_agreement(*given, threshold)


class StudyJudge:
    """The judge as the study's scoring consults it (ScoredRun.judge)."""

    def __init__(self, judge: Judge, folder: Path, setup: JudgeSetup, agreement):
        self.judge, self.folder, self.setup, self.agreement = judge, folder, setup, agreement
        self.decided: collections.Counter = collections.Counter()

    def judged_rows(self, episode: dict, state: str, compacted: bool,
                    rows: list[dict]) -> list[dict]:
        """Each needed row of a judged category in a written state with the judge's status, the
        rules' kept as `rules_status` and who decided in `judged_by`; every other row as it was."""
        if not compacted:
            return rows
        items = {item["id"]: item for item in episode["needed"]}
        out = []
        for row in rows:
            item = items[row["needed"]]
            if item["category"] not in JUDGED:
                out.append(row)
                continue
            decision = self.judge.decide(state, item["category"], item["text"] or item["key"],
                                         f"{episode['file']}#{item['id']}")
            by = (BY_JUDGE if decision["status"] is not None else
                  BY_RULES_UNREADABLE if decision["reply"] is not None else BY_RULES_TOO_LONG)
            self.decided[by] += 1
            out.append({**row, "status": decision["status"] or row["status"],
                        "rules_status": row["status"], "judged_by": by,
                        **({"p_kept": round(decision["p_kept"], 4)}
                           if decision["p_kept"] is not None else {})})
        return out

    def record(self) -> dict:
        """results.json's `judge`: who judged, with which question and threshold, and its measured
        agreement (or that none was measured); what each item's judgement was is in its row."""
        agreement = self.agreement
        return {"model": self.setup.model, "backend": self.setup.backend.name,
                "identity_sha256": sha256_text(canonical_json(self.setup.identity)),
                "prompt": self.judge.prompt.shown if self.setup.prompt_path else
                "tasks/sessions/judge-prompt.txt",
                "prompt_sha256": self.judge.prompt.sha256, "threshold": self.judge.threshold,
                "categories": list(JUDGED),
                "agreement": agreement.line() if agreement is not None else
                not_measured(self.setup.model),
                "below": list(agreement.below) if agreement is not None else list(JUDGED),
                "journal": f"{JUDGE_FOLDER}/{CALLS_FILE}"}

    def kept_line(self) -> str:
        """Where the calls made so far are, for the line a judge that stopped answering ends on."""
        return (f"the judge's {len(self.judge.cache.records)} calls so far are kept in "
                f"{display_path(self.folder / CALLS_FILE)}: rerun the same command to go on")

    def done_line(self) -> str:
        """The console's line once the run is judged."""
        stood = self.decided[BY_RULES_UNREADABLE] + self.decided[BY_RULES_TOO_LONG]
        return (f"judged by {self.setup.model}: {self.decided[BY_JUDGE]} needed items decided "
                f"({self.judge.sent} calls sent, {self.judge.reused} answered from "
                f"{display_path(self.folder / CALLS_FILE)})" +
                (f"; the rules' status stands for {stood} (a reply not read: "
                 f"{self.decided[BY_RULES_UNREADABLE]}, a summary too long: "
                 f"{self.decided[BY_RULES_TOO_LONG]})" if stood else ""))


def not_measured(model: str) -> str:
    return (f"agreement not measured: run `judge-check --judge {model}` and give its folder as "
            "--judge-agreement; read as below the protocol's agreement threshold (kappa 0.6)")

