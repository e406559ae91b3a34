"""Hostile inputs for the audit (issue 41), written for this project: keys of every shape the masks
know, planted so that every excerpt the audit cuts (a value's sentence, an instruction, a summary's
sentence) is cut inside one of them, each key with the prefix a mask keeps."""
from __future__ import annotations

from pathlib import Path

import audit_fixtures as fx

# (the key, the prefix its mask keeps: no secret, it only says what kind of key it was)
KEYS = (
    ("sk-proj-Qm7rT2vX9kLp4wZc8NbYa1Hd5Jf6Gk3Ls0Pq8Rt2Vw4Xy", "sk-proj-"),
    ("sk-ant-api03-Zx8Cv7Bn6Mm5Ll4Kk3Jj2Hh1Gg0Ff9Dd8Ss7Aa6", "sk-ant-"),
    ("sk_live_51HqW8eKj3Lm9Np2Qr5St7Uv0Wx4Yz6Ab", "sk_live_"),
    ("AKIAZ7Q3R5T9V2X4B6D8", "AKIA"),
    ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8mVn3kR2", ""),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJpbmVzQGV4YW1wbGUifQ.Qm7rT2vX9kLp4wZc8NbYa1Hd5Jf6Gk3Ls0Pq",
     "eyJ"),
    ("ghp_Tz9Yx8Wv7Ut6Sr5Qp4On3Ml2Kj1Ih0Gf9Ed8", "ghp_"),
    ("github_pat_11ABCDE2F0gHiJkLmNoPqRsTuVwXyZ_0123456789ab", "github_pat_"),
    ("xoxb-2047-9931-Lq8Wm3Nb7Vc2Xz5As", "xoxb-"),
    ("AIzaSyD3m9Lq7Wx2Nb8Vc5Kz1Jh4Gf6Dp0Rs3Tu", "AIza"),
    ("glpat-Rk4Tz8Wq2Mn6Lp0Xv3Bc", "glpat-"),
    ("hf_Mq3Nr7Ts1Vw5Xz9Bd2Fh6Jk0Lp4", "hf_"),
)


def plant(key: str, k: int) -> list[str]:
    """Sentences that put the key at every position of each cut: before a value (the value's
    excerpt starts 120 characters before it), after one (it ends 240 characters on), and in a
    standing instruction (cut at 400); each sentence a user turn of its own."""
    out = []
    for p in range(len(key) + 1):
        out.append(f"The key {key} " + "x" * (p + 103 - len(key)) + f" goes with port {4000 + p}.")
        out.append(f"Use port {5000 + p} " + "y" * (p + 212 - len(key)) + f" with the key {key}.")
        out.append("Never deploy " + "z" * (370 - p) + f" without the key {key} at hand.")
    return out


def write_keys(folder: Path) -> list[Path]:
    """One Claude Code session per key: the planted sentences, then a summary that repeats them
    with every port changed."""
    written = []
    for k, (key, _) in enumerate(KEYS):
        said = plant(key, k)
        summary = " ".join(s.replace("port 4", "port 6").replace("port 5", "port 7") for s in said)
        written.append(fx.write(folder / f"keys-{k:02d}.jsonl",
                                fx.claude_lines([("user", s) for s in said], summary)))
    return written


def pieces(key: str, prefix: str, size: int = 8) -> set[str]:
    """Every piece of `size` characters of the key's secret part (what follows its kept prefix)."""
    secret = key[len(prefix):]
    return {secret[i:i + size] for i in range(len(secret) - size + 1)}
