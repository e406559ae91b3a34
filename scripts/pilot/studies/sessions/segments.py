"""XR-S1, segments (protocol/SESSIONS.md section 2.4): a rendered session cut at turn boundaries
into segments that fit the context window of every call the study makes with them, by estimated
tokens; or cut where the agent itself compacted, when its log records that and the user asks for it.

Tokens are estimated at one per CHARS_PER_TOKEN characters, on the cautious side (English prose runs
near four characters a token, code and JSON nearer three), so that a segment planned to fit does
fit. A segment must leave room in the window for both calls that hold it: a compaction (the prompt's
frame, the previous state at its cap, the segment and the new state's cap) and a Recent-2 answer
(the frame, the last two segments, the question and the answer's cap). Pure functions of sizes: no
model, no file. """
from __future__ import annotations

import bisect
from dataclasses import dataclass


CHARS_PER_TOKEN = 3


def estimated_tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


@dataclass(frozen=True)
class CallRoom:
    """What the calls that hold a segment need besides it, in estimated tokens."""

    # the longest compaction prompt with its segment and state left out
    compaction_frame: int
    state: int                          # the previous state's cap (the compaction budget)
    output: int                         # the new state's cap
    # the answer prompt, its segment headings and the longest question
    answer_frame: int
    answer: int                         # the answer's cap

    def segment_cap(self, window: int) -> int:
        """The most estimated tokens one segment may have at this window (0: none fits)."""
        by_compaction = window - self.compaction_frame - self.state - self.output
        by_answer = (window - self.answer_frame - self.answer) // 2
        return max(0, min(by_compaction, by_answer))

    def window_for(self, segment_tokens: int, alone: bool = False) -> int:
        """The smallest window at which a segment of this many estimated tokens fits; alone: the
        session's only segment, which a Recent-2 answer holds once, not beside another."""
        return max(self.compaction_frame + self.state + self.output + segment_tokens,
                   self.answer_frame + self.answer + (1 if alone else 2) * segment_tokens)


def cumulative(sizes: list[int]) -> list[int]:
    out = [0]
    for size in sizes:
        out.append(out[-1] + size)
    return out


def cut_points(sizes: list[int], n: int, totals: list[int] | None = None) -> list[int]:
    """Where each of n segments starts (turn indices): the turn boundary nearest each 1/n of the
    session's characters, every segment at least one turn."""
    n = min(n, len(sizes))
    totals = totals or cumulative(sizes)
    total = totals[-1]
    starts = [0]
    for k in range(1, n):
        target = k * total / n
        low, high = starts[-1] + 1, len(sizes) - (n - k)
        near = bisect.bisect_left(totals, target)
        candidates = {min(max(b, low), high) for b in (near - 1, near)}
        starts.append(min(candidates, key=lambda b: (abs(totals[b] - target), b)))
    return starts


def largest(starts: list[int], totals: list[int]) -> int:
    """The characters of the largest segment these starts make (segments joined by a blank line: 2
    characters of each turn's size are the separator)."""
    ends = starts[1:] + [len(totals) - 1]
    return max(totals[e] - totals[s] - 2 for s, e in zip(starts, ends))


def even_cut(sizes: list[int], at_least: int, cap_chars: int, most: int,
             totals: list[int] | None = None) -> list[int] | None:
    """The starts of the fewest segments, at least `at_least`, in which none is over cap_chars
    (None: no count up to `most` fits)."""
    totals = totals or cumulative(sizes)
    if not sizes or cap_chars <= 0 or max(sizes) - 2 > cap_chars:
        return None
    upper = min(most, len(sizes))
    n = min(max(at_least, -(-totals[-1] // (cap_chars + 2))), len(sizes))
    while n <= upper:
        starts = cut_points(sizes, n, totals)
        if largest(starts, totals) <= cap_chars:
            return starts
        n += 1
    return None


def agent_cut(sizes: list[int], points: list[int], cap_chars: int, most: int) -> list[int] | None:
    """Segments that end where the agent compacted (after the turns it had when it did), each part
    cut further into the fewest pieces that fit; None when none fits in `most`."""
    bounds = sorted({p for p in points if 0 < p < len(sizes)})
    starts: list[int] = []
    for first, end in zip([0, *bounds], [*bounds, len(sizes)]):
        part = even_cut(sizes[first:end], 1, cap_chars, most)
        if part is None:
            return None
        starts += [first + s for s in part]
    return starts if len(starts) <= most else None


def segments_of(rendered: list[str], starts: list[int]) -> list[dict]:
    ends = starts[1:] + [len(rendered)]
    return [{"index": k + 1, "turns": [s, e], "text": "\n\n".join(rendered[s:e])}
            for k, (s, e) in enumerate(zip(starts, ends))]
