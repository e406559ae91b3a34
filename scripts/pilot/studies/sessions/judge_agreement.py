"""How far the judge (judge.py) agrees with the hand labels (issue 44; protocol/SESSIONS.md, the
amendment of 2026-12-06 (17)): the labelled sets judge-check asks it about, the figures of its
replies against them, the threshold on P(KEPT) chosen on the dev half only, and the agreement a
report names beside every verdict of the judge.

    labelled_items(labels_dir) -> every labelled item judge-check asks about, with its truth
    journal_calls(path, model, prompt_sha256) -> the judge's journalled calls by item_id
    figures(items, calls, threshold) -> {category: {half: n, precision, recall, kappa, ...}}
    choose_threshold(items, calls) -> (threshold or None, its dev kappa): dev labels only
    measured_agreement(check_dir, model, identity, prompt_sha256, threshold) -> Agreement | None
    chosen_threshold(check_dir, model, identity, prompt_sha256) -> the threshold judge-check chose

The labelled sets: the needed items of the real compactions (tests/labelled/compactions/, label
`summary` kept/lost/wrong, `half` dev/held-out) in the judged categories, and the gate's snippets
(tests/labelled/state_claims.json: the sentence is the summary, the source the item; should_flag
means not kept; split `test` is the held-out half). Figures are always recomputed from the raw
replies in the journal against these labels, never read from a figure a file states.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ...records import PilotError, canonical_json
from ...runfolder import parse_record_line
from ...stats import cohen_kappa
from .judge import DEFAULT_THRESHOLD, JUDGED, MAX_ITEM_CHARS, judgement
from .measured import listing

# the protocol's threshold: Cohen's kappa of kept vs not kept, per judged category, held-out
AGREEMENT_KAPPA = 0.6

LABELS_DIR = Path(__file__).resolve().parents[4] / "tests" / "labelled"
CALLS_FILE = "judge-calls.jsonl"
LOCK_FILE = "judge-lock.json"

# the gate's snippets: one sentence of a summary against the history it reports on
STATED_OTHERWISE = "stated otherwise"
CATEGORIES = (*JUDGED, STATED_OTHERWISE)
HALVES = ("dev", "held-out")
SNIPPET_HALVES = {"dev": "dev", "test": "held-out"}

KEPT, NOT_KEPT = "kept", "not kept"

# the thresholds on P(KEPT) tried on dev; ties go to the one nearest the default
THRESHOLD_GRID = tuple(round(step / 20, 2) for step in range(1, 20))


class LabelsUnreadable(PilotError):
    """A labelled set that cannot be read."""


@dataclasses.dataclass(frozen=True)
class LabelledItem:
    item_id: str                 # "compactions/<log file>#<index>" or "state_claims/<id>"
    category: str                # one of CATEGORIES
    half: str                    # "dev" or "held-out"
    item: str                    # what the judge is asked about
    truth: str                   # KEPT or NOT_KEPT, as the label says
    log: str | None = None       # compactions: the log's file name and compaction (1-based)
    compaction: int | None = None
    summary: str | None = None   # snippets: the sentence (a compaction's is read from its log)


# --- The labelled sets -------------------------------------------------------------------------
def read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise LabelsUnreadable(f"cannot read the labels in {path} ({err}); restore the file from "
                               "the repository (git checkout -- tests/labelled)") from None


def compaction_items(labels_dir: Path = LABELS_DIR) -> list[LabelledItem]:
    """The needed items of the judged categories of each labelled real compaction."""
    items = []
    for path in sorted((labels_dir / "compactions").glob("*.json")):
        record = read_json(path)
        try:
            log, number, half = record["file"], int(record["compaction"]), record["half"]
            for index, label in enumerate(record["needed"]):
                if label["type"] in JUDGED:
                    items.append(LabelledItem(
                        item_id=f"compactions/{log}#{index}", category=label["type"],
                        half=half, item=label["text"],
                        truth=KEPT if label["summary"] == KEPT else NOT_KEPT,
                        log=log, compaction=number))
        except (KeyError, TypeError, ValueError) as err:
            raise LabelsUnreadable(f"the labels in {path} lack a field ({err}); restore the file "
                                   "from the repository") from None
    return items


def snippet_items(labels_dir: Path = LABELS_DIR) -> list[LabelledItem]:
    """The gate's labelled snippets: does the sentence state the history otherwise?"""
    path = labels_dir / "state_claims.json"
    try:
        return [LabelledItem(item_id=f"state_claims/{s['id']}", category=STATED_OTHERWISE,
                             half=SNIPPET_HALVES[s["split"]], item=s["source"],
                             truth=NOT_KEPT if s["labels"]["should_flag"] else KEPT,
                             summary=s["sentence"])
                for s in read_json(path)["snippets"]]
    except (KeyError, TypeError) as err:
        raise LabelsUnreadable(f"the labels in {path} lack a field ({err}); restore the file "
                               "from the repository") from None


def labelled_items(labels_dir: Path = LABELS_DIR) -> list[LabelledItem]:
    return compaction_items(labels_dir) + snippet_items(labels_dir)


# --- The journal, read back ----------------------------------------------------------------------
def journal_calls(path: Path, model: str, prompt_sha256: str) -> dict[str, dict]:
    """item_id -> the last journalled call of this model and prompt that names it; the journal is
    only read (a torn or garbage line is passed over, never rewritten)."""
    calls: dict[str, dict] = {}
    if not path.is_file() or path.is_symlink():
        return calls
    for line in path.read_bytes().splitlines(keepends=True):
        record = parse_record_line(line) if line.endswith(b"\n") else None
        if record is not None and record.get("model") == model and \
                record.get("prompt_sha256") == prompt_sha256 and \
                isinstance(record.get("item_id"), str):
            calls[record["item_id"]] = record
    return calls


def said(item: LabelledItem, record: dict, threshold: float | None) -> str | None:
    """The judge's kept or not kept for an item, None where its reply gave no verdict. A snippet
    is one sentence about a longer history, so only CHANGED says it states the history otherwise;
    LOST (the sentence does not cover all of it) is no defect of the sentence."""
    decided = judgement(record, DEFAULT_THRESHOLD if threshold is None else threshold)["status"]
    if decided is None:
        return None
    if item.category == STATED_OTHERWISE:
        return NOT_KEPT if decided == "wrong" else KEPT
    return KEPT if decided == KEPT else NOT_KEPT


# --- The figures ---------------------------------------------------------------------------------
def question_of(item: LabelledItem) -> tuple:
    """What makes an item's question: two labels that ask the same share one call (the journal
    answers the second from the first, under the first one's item_id)."""
    return (item.log, item.compaction, item.summary, item.category, item.item[:MAX_ITEM_CHARS])


def answers(items: list[LabelledItem], calls: dict[str, dict]) -> dict[str, dict]:
    """item_id -> the journalled call that answers it, its own or that of the same question."""
    by_question: dict[tuple, dict] = {}
    for item in items:
        if item.item_id in calls:
            by_question.setdefault(question_of(item), calls[item.item_id])
    return {item.item_id: by_question[question_of(item)] for item in items
            if question_of(item) in by_question}


def scored_pairs(items: list[LabelledItem], calls: dict[str, dict],
                 threshold: float | None) -> list[tuple[LabelledItem, str | None]]:
    """Each labelled item that was asked, with the judge's kept / not kept (None: unreadable)."""
    answered = answers(items, calls)
    return [(item, said(item, answered[item.item_id], threshold)) for item in items
            if item.item_id in answered]


def pair_figures(pairs: list[tuple[str, str | None]]) -> dict:
    """(truth, said) pairs -> n (readable verdicts), unreadable, the labels' not kept, precision
    and recall of not kept (None where undefined) and Cohen's kappa of kept vs not kept."""
    read = [(truth, verdict) for truth, verdict in pairs if verdict is not None]
    both = sum(1 for truth, verdict in read if truth == verdict == NOT_KEPT)
    said_not = sum(1 for _, verdict in read if verdict == NOT_KEPT)
    labelled_not = sum(1 for truth, _ in read if truth == NOT_KEPT)
    return {"n": len(read), "unreadable": len(pairs) - len(read), "labelled_not_kept": labelled_not,
            "said_not_kept": said_not, "both_not_kept": both,
            "precision": both / said_not if said_not else None,
            "recall": both / labelled_not if labelled_not else None,
            "kappa": cohen_kappa([(truth == NOT_KEPT, verdict == NOT_KEPT)
                                  for truth, verdict in read])}


def figures(items: list[LabelledItem], calls: dict[str, dict],
            threshold: float | None) -> dict[str, dict[str, dict]]:
    """{category: {half: pair_figures}} over the items asked."""
    pairs = scored_pairs(items, calls, threshold)
    return {category: {half: pair_figures([(item.truth, verdict) for item, verdict in pairs
                                           if item.category == category and item.half == half])
                       for half in HALVES}
            for category in CATEGORIES}


def choose_threshold(items: list[LabelledItem],
                     calls: dict[str, dict]) -> tuple[float | None, float | None]:
    """The threshold on P(KEPT) that maximises the dev kappa of the judged categories pooled, and
    that kappa; read from the dev labels only. (None, kappa) where the server gave no
    probabilities (each reply's word stands); (the default, None) where no dev item of a judged
    category was asked or no threshold makes kappa measurable."""
    dev = [item for item in items if item.half == "dev" and item.category in JUDGED]
    asked = list(answers(dev, calls).values())
    if not asked:
        return DEFAULT_THRESHOLD, None
    if not any(judgement(record, DEFAULT_THRESHOLD)["p_kept"] is not None for record in asked):
        return None, pooled_kappa(dev, calls, None)
    best, best_kappa = DEFAULT_THRESHOLD, None
    for threshold in sorted(THRESHOLD_GRID, key=lambda t: (abs(t - DEFAULT_THRESHOLD), t)):
        kappa = pooled_kappa(dev, calls, threshold)
        if kappa is not None and (best_kappa is None or kappa > best_kappa + 1e-12):
            best, best_kappa = threshold, kappa
    return best, best_kappa


def pooled_kappa(items: list[LabelledItem], calls: dict[str, dict],
                 threshold: float | None) -> float | None:
    return cohen_kappa([(item.truth == NOT_KEPT, verdict == NOT_KEPT)
                        for item, verdict in scored_pairs(items, calls, threshold)
                        if verdict is not None])


# --- The agreement a report names ----------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Agreement:
    model: str
    # {category: {"dev": (precision, recall, kappa, n), "held-out": (...)}}, the judged ones
    per_category: dict
    threshold: float | None             # None: each reply's word (the server gave no probabilities)
    below: list                         # judged categories under AGREEMENT_KAPPA or not measurable

    def line(self) -> str:
        """One sentence: the model, its held-out kappa per judged category, and where it is below
        the protocol's agreement threshold."""
        kappas = ", ".join(f"{category} {kappa_text(self.per_category[category]['held-out'][2])}"
                           for category in JUDGED)
        reading = (f"at P(KEPT) threshold {self.threshold:g}" if self.threshold is not None
                   else "each reply's word, as the server gave no probabilities")
        below = (f"; below the protocol's agreement threshold (kappa {AGREEMENT_KAPPA:g}) for "
                 f"{listing(self.below)}, where its verdicts are not established"
                 if self.below else f"; at or above the protocol's agreement threshold (kappa "
                 f"{AGREEMENT_KAPPA:g}) in every judged category")
        return (f"The judge {self.model}, measured against the held-out hand labels (Cohen's "
                f"kappa of kept vs not kept, {reading}): {kappas}{below}.")


def kappa_text(kappa: float | None) -> str:
    return "not measurable" if kappa is None else f"{kappa:.2f}"


def agreement_of(model: str, measured: dict, threshold: float | None) -> Agreement:
    per_category = {category: {half: tuple(measured[category][half][key] for key in
                                           ("precision", "recall", "kappa", "n"))
                               for half in HALVES}
                    for category in JUDGED}
    below = [category for category in JUDGED if per_category[category]["held-out"][2] is None
             or per_category[category]["held-out"][2] < AGREEMENT_KAPPA]
    return Agreement(model=model, per_category=per_category, threshold=threshold, below=below)


def read_lock(check_dir: Path) -> dict | None:
    path = Path(check_dir) / LOCK_FILE
    try:
        lock = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return lock if isinstance(lock, dict) else None


def checked_calls(check_dir: Path, model: str, identity: dict,
                  prompt_sha256: str) -> dict[str, dict] | None:
    """The journalled calls of a judge-check folder by item_id; None where the folder holds no
    judge-check of this model, identity (as the server describes the model) and prompt."""
    lock = read_lock(Path(check_dir))
    if lock is None or lock.get("model") != model or \
            lock.get("prompt_sha256") != prompt_sha256 or \
            canonical_json(lock.get("identity")) != canonical_json(identity):
        return None
    return journal_calls(Path(check_dir) / CALLS_FILE, model, prompt_sha256) or None


def measured_agreement(check_dir: Path, model: str, identity: dict, prompt_sha256: str,
                       threshold: float | None,
                       labels_dir: Path = LABELS_DIR) -> Agreement | None:
    """The judge's agreement recomputed from a judge-check folder's journal of raw replies against
    the labels; None where the folder holds no judge-check of this model, identity and prompt."""
    calls = checked_calls(check_dir, model, identity, prompt_sha256)
    if calls is None:
        return None
    return agreement_of(model, figures(labelled_items(labels_dir), calls, threshold), threshold)


def chosen_threshold(check_dir: Path, model: str, identity: dict, prompt_sha256: str,
                     labels_dir: Path = LABELS_DIR) -> float:
    """The threshold judge-check chose for this judge, chosen again from its journal on the dev
    labels (never read from a file's figure); DEFAULT_THRESHOLD where the folder holds no check of
    it or its server gave no probabilities (the threshold then changes nothing)."""
    calls = checked_calls(check_dir, model, identity, prompt_sha256)
    if calls is None:
        return DEFAULT_THRESHOLD
    threshold, _ = choose_threshold(labelled_items(labels_dir), calls)
    return DEFAULT_THRESHOLD if threshold is None else threshold
