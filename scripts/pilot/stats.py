"""Statistics, pure: Wilson intervals, the exact McNemar test, Holm's adjustment, the seeded
episode-clustered bootstrap, a one-sided Fisher test (PROTOCOL.md sections 3 and 5) and Cohen's
kappa of two raters' yes/no (a judge against the hand labels, SESSIONS.md)."""
from __future__ import annotations

import collections
import math
import random


WILSON_Z = 1.959963984540054           # two-sided 95%


def wilson_interval(k: int, n: int, z: float = WILSON_Z) -> tuple[float, float]:
    """95% Wilson score interval for k successes in n trials, as fractions."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


MCNEMAR_RESCALE = 2 ** 900               # keeps the running binomial terms inside a double's range


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p: twice the binomial(b + c, 1/2) tail at min(b, c), capped at 1.

    Linear in b + c: the tail sum(C(n, i), i <= k) is built term by term with the ratio C(n, i + 1)
    / C(n, i) = (n - i) / (i + 1), rescaled by exact powers of two, and divided by 2**n with ldexp,
    never as big integers (whose cost grows with n * k). The relative error is about k * 1e-16, far
    below the four significant digits printed; tests check it against the big-integer sum. """
    n, k = b + c, min(b, c)
    # |b - c| <= 1: the two-sided tail holds at least half the mass
    if 2 * k + 1 >= n:
        return 1.0
    term, total, exponent = 1.0, 1.0, 0  # C(n, 0) and the tail so far, both times 2**-exponent
    for i in range(k):
        term *= (n - i) / (i + 1)
        total += term
        if total > MCNEMAR_RESCALE:
            term, total, exponent = term / MCNEMAR_RESCALE, total / MCNEMAR_RESCALE, exponent + 900
    return min(1.0, math.ldexp(total, exponent + 1 - n))


def rate_summary(k: int, n: int) -> dict:
    lo, hi = wilson_interval(k, n)
    return {"k": k, "n": n, "rate": k / n if n else None, "lo": lo, "hi": hi}


def mcnemar_summary(pairs: list[tuple[bool, bool]], first: str = "R1", second: str = "R2") -> dict:
    """pairs are (first correct, second correct) on identical probes; b = first right/second wrong,
    c = the reverse."""
    b = sum(1 for r1, r2 in pairs if r1 and not r2)
    c = sum(1 for r1, r2 in pairs if r2 and not r1)
    return mcnemar_counts(b, c, len(pairs), first, second)


def mcnemar_counts(b: int, c: int, n_pairs: int, first: str = "R1", second: str = "R2") -> dict:
    """The McNemar summary from its discordant counts b and c among n_pairs pairs."""
    direction = f"{second} better" if c > b else f"{first} better" if b > c else "no difference"
    return {"b": b, "c": c, "n_pairs": n_pairs, "p": mcnemar_exact(b, c), "direction": direction}


def holm_adjust(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p values, in their original order."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


BOOTSTRAP_SEED = 20261130

BOOTSTRAP_REPLICATES = 2000


def clustered_bootstrap(by_episode: dict[int, tuple[int, int]], seed: int = BOOTSTRAP_SEED,
                        replicates: int = BOOTSTRAP_REPLICATES) -> tuple[float, float]:
    """95% percentile interval of a rate, resampling whole episodes (every model and sample of an
    episode together) with replacement; by_episode maps an episode to (wrong, probes)."""
    return clustered_bootstraps([by_episode], seed, replicates)[0]


def clustered_bootstraps(rates: list[dict[int, tuple[int, int]]], seed: int = BOOTSTRAP_SEED,
                         replicates: int = BOOTSTRAP_REPLICATES) -> list[tuple[float, float]]:
    """clustered_bootstrap of several rates. Each replicate draws len(episodes) positions with one
    generator seeded afresh, so rates over the same number of episodes draw the same positions: they
    are drawn once."""
    intervals: list[tuple[float, float] | None] = [None] * len(rates)
    groups: dict[int, list[int]] = collections.defaultdict(list)     # number of episodes -> rates
    for index, by_episode in enumerate(rates):
        if by_episode:
            groups[len(by_episode)].append(index)
        else:
            intervals[index] = (0.0, 1.0)
    for n, members in groups.items():
        cells = [
            [by_episode[e] for e in sorted(by_episode)]
            for by_episode in (rates[i] for i in members)
        ]
        wrong_of = [[w for w, _ in cell] for cell in cells]
        total_of = [[t for _, t in cell] for cell in cells]
        drawn: list[list[float]] = [[] for _ in members]
        rng = random.Random(seed)
        for _ in range(replicates):
            draw = [rng.randrange(n) for _ in range(n)]
            for k in range(len(members)):
                wrong, total = sum(map(wrong_of[k].__getitem__,
                                       draw)), sum(map(total_of[k].__getitem__, draw))
                drawn[k].append(wrong / total if total else 0.0)
        for k, index in enumerate(members):
            drawn[k].sort()
            intervals[index] = (drawn[k][int(0.025 * (replicates - 1))],
                                drawn[k][int(0.975 * (replicates - 1))])
    return intervals


ALPHA = 0.05


def fisher_one_sided(a: int, b: int, c: int, d: int) -> float:
    """P(at least a) in the first cell of [[a, b], [c, d]] with the margins fixed
    (hypergeometric)."""
    row, col, n = a + b, a + c, a + b + c + d
    total = math.comb(n, col)
    return sum(math.comb(row, k) * math.comb(n - row, col - k) for k in range(a,
        min(row, col) + 1)) / total


def cohen_kappa(pairs: list[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two raters' yes/no over the same items, (first, second) per item: the
    agreement beyond what their own shares of yes would give by chance. None (not measurable)
    where there is no item or either rater says one class only: kappa is then 0 or undefined
    whatever the agreement, so it measures nothing."""
    n = len(pairs)
    first_yes = sum(1 for a, _ in pairs if a)
    second_yes = sum(1 for _, b in pairs if b)
    if n == 0 or first_yes in (0, n) or second_yes in (0, n):
        return None
    observed = sum(1 for a, b in pairs if a == b) / n
    chance = (first_yes * second_yes + (n - first_yes) * (n - second_yes)) / (n * n)
    return (observed - chance) / (1 - chance)
