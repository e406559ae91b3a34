"""Prompts (PROTOCOL.md section 2): the built-in prompt texts and regimes the studies start from,
and the one way a call's messages are built from a regime and a study's own text.

A study says what a call is about (CallText: the new segment of a compaction; the context and
question of an answer; or the whole text of any other call, such as a sidecar's extraction);
build_messages writes it through the regime: its compaction or answer template, its `empty_state`
for the first checkpoint (else the study's, else the built-in one) and its `system` message before
every call. So a regime file's fields reach every study alike. """
from __future__ import annotations

import dataclasses

from .inputs import budget_words
from .probes import ANSWER_RULE
from .records import CallSpec, Regime, Study


# The prompts (PROTOCOL.md section 2): one compaction frame for every regime, with one paragraph
# swapped for the
# format. Every other sentence (the loss warning, the merge, keeping every named quantity with its
# exact value, the word limit, the ending) is the same text in both, so the format is the only
# difference.
# They are this project's own words; where they depart from the paper's runner (no system message,
# the prose
# paragraph's ban on lists and headings, relations as sentences, the answer line) PROTOCOL.md
# section 2b lists it,
# and a regime file with "replaces": true runs R0-R2 under the prompts a user brings (the paper's,
# for a replication).
# Other studies build their own prompts on this frame and these regimes.
COMPACTION_FRAME = (
    "You are keeping the working memory of a long analysis session. The transcript you have seen "
    "so far is about to be deleted and replaced by the state you write now; anything you leave out "
    "of it is lost for good.\n\nMerge the previous state and the new segment below into one "
    "updated state. Keep every named quantity with its exact value. Use at most {max_words} "
    "words.\n\n<<FORMAT>>\n\nPREVIOUS STATE:\n{previous_state}\n\nNEW SEGMENT:\n{segment}\n\nWrite "
    "the updated state now, and nothing else."
)

FORMAT_PARAGRAPHS = {
    "prose": ("Format: write the state as plain flowing prose, in full sentences and one or more "
              "paragraphs, with no lists, tables, headings or code blocks."),
    "typed": ("Format: write the state as a typed state block with these four sections in this "
              "order. values: lines of the form NAME = <integer>. combined: lines of the form NAME "
              "+ NAME = <integer>. relations: short lines such as NAME is one above NAME. notes: "
              "one line of free text."),
    # Exploratory: the sectioned summary coding agents write when they compact their context.
    "sections": ("Format: write the state under six headings, each on a line of its own followed "
                 "by its content: Goal, Constraints, Progress, Decisions, Next steps, Critical "
                 "values. Under Critical values write lines of the form NAME = <integer>, and NAME "
                 "+ NAME = <integer> for a combined value."),
}


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
        "Below is the saved state of an analysis session; the original transcript is "
        "gone.\n\n{context}\n\nQuestion: {question}\n"
        "Answer from the saved state above. " + ANSWER_RULE
    ),
    "answer_recent": (
        "Below are the most recent segments of an analysis session; everything before them is "
        "gone.\n\n{context}\n\nQuestion: {question}\n"
        "Answer from the segments above. " + ANSWER_RULE
    ),
    "empty_state": "(none yet: this is the first checkpoint)",
    "segment_heading": "Segment {index}:",
}

# The built-in regimes, as data: a user's from --regime-file go through the same record. Adding a
# regime is one entry
# here or in a study's own registry; plan, runner, scoring, analysis, figures and report read it
# from there.
REGIMES = {
    "R0": Regime("R0", "no compaction: the full transcript is carried (ceiling)", "transcript",
                 PROMPTS["answer_transcript"]),
    "R1": Regime("R1", "prose summary, cascaded", "state", PROMPTS["answer_state"],
                 PROMPTS["compact_prose"],
                 "prose"),
    "R2": Regime("R2", "typed state block, cascaded", "state", PROMPTS["answer_state"],
                 PROMPTS["compact_typed"],
                 "typed"),
    "R3": Regime("R3", "sectioned summary (goal, constraints, progress, decisions, next steps, "
                 "critical "
                 "values), cascaded", "state", PROMPTS["answer_state"], PROMPTS["compact_sections"],
                 "section:critical values", exploratory=True),
    "K1": Regime("K1", "truncation baseline: the last segment verbatim, no compaction call "
                 "(Recent-1)", "recent",
                 PROMPTS["answer_recent"], keep_last=1, exploratory=True),
    "K2": Regime("K2", "truncation baseline: the last two segments verbatim, no compaction call "
                 "(Recent-2)",
                 "recent", PROMPTS["answer_recent"], keep_last=2, exploratory=True),
}


def render_transcript(episode: dict, last: int | None = None) -> str:
    """The segments as the answers see them: all of them, or only the last k."""
    segments = episode["segments"] if last is None else episode["segments"][-last:]
    parts = [PROMPTS["segment_heading"].format(index=seg["index"]) + "\n"
             + seg["text"] for seg in segments]
    return "\n\n".join(parts)


# The sections (or headings) each built-in format asks for, as a gate ledger allows them in a state.
FORMAT_SECTIONS = {"typed": ("values", "combined", "relations", "notes"),
                   "section:critical values": ("goal", "constraints", "progress", "decisions",
                                               "next steps",
                                               "critical values")}


@dataclasses.dataclass(frozen=True)
class CallText:
    """What a study says one call is about; build_messages writes it through the call's regime."""

    # a compaction: the new segment, as the regime's compaction template takes it
    segment: str | None = None
    # an answer: what the regime lets the answer see (a transcript, a state ...)
    context: str | None = None
    question: str | None = None         # an answer: the question asked
    # any other call (a sidecar's extraction, a judge): its whole text
    content: str | None = None


def empty_state(study: Study, regime: Regime) -> str:
    """What stands for the previous state at the first checkpoint: the regime's own text (a regime
    file's `empty_state`), else the study's, else the built-in one."""
    if regime.empty_state is not None:
        return regime.empty_state
    return PROMPTS["empty_state"] if study.empty_state is None else study.empty_state


def build_messages(study: Study, regime: Regime, episode: dict, spec: CallSpec, state: str,
                   registry: str = "") -> list[dict]:
    """One call's messages: the study's text for it (Study.call_text, with the study's own options)
    written through the regime's template, after the regime's system message when it has one."""
    text = study.call_text(regime, episode, spec, state, registry, **study.options)
    if text.content is not None:
        content = text.content
    elif spec.is_compaction:
        content = regime.compaction_template.format(max_words=budget_words(spec.max_output_tokens),
                                                    previous_state=state or empty_state(study,
                                                    regime),
                                                    segment=text.segment)
    else:
        content = regime.answer_template.format(context=text.context, question=text.question)
    system = [{"role": "system", "content": regime.system}] if regime.system else []
    return system + [{"role": "user", "content": content}]
