"""Calls made one at a time outside a run's cells (a judge's, say), through the same backends as a
run: each written to a JSONL journal and fsynced the moment it returns, and an identical call (the
same key: a digest of everything that shapes its reply) answered from the journal instead of being
sent again. A command killed at any moment (Ctrl-C, kill -9) is resumed by running it again: what
was written is kept, a torn last line is moved to `<journal>.quarantine`, and only the calls not yet
made are sent.

    call_key(identity, request) -> the digest an identical call shares
    CallCache(path)             -> the journal's records by key; add(record) appends one
    send(backend, request, policy, stop) -> (response, attempts, seconds), retried as a run retries

Nothing here names a study: what a call asks and how its reply is read is the caller's.
"""
from __future__ import annotations

import random
import threading
import time
from pathlib import Path

from .records import (ChatRequest, ChatResponse, FatalCallError, RunInterrupted, ServerGone,
                      TransientError, canonical_json, sha256_text)
from .runfolder import Journal, parse_record_line, refuse_unsafe, write_atomic
from .runner import RetryPolicy


def call_key(identity: dict, request: ChatRequest) -> str:
    """The digest of what shapes a reply: who answers (the model's identity as the server described
    it) and every field of the request."""
    return sha256_text(canonical_json({"identity": identity, "model": request.model,
                                       "messages": list(request.messages),
                                       "max_output_tokens": request.max_output_tokens,
                                       "temperature": request.temperature, "seed": request.seed,
                                       "thinking_off": request.thinking_off,
                                       "top_logprobs": request.top_logprobs}))


class CallCache:
    """The journal of one command's calls, read once when opened: key -> its first record (a call
    answered twice counts once). Unreadable lines (a torn last line after a kill, garbage) are moved
    to the quarantine file, so the next line appended starts on a line of its own."""

    def __init__(self, path: Path):
        refuse_unsafe(path)
        self.path = path
        self.records: dict[str, dict] = {}
        self.quarantined = 0
        self._journal = Journal(path.parent)
        self._lock = threading.Lock()
        if path.exists():
            self._read()

    def _read(self) -> None:
        lines = self.path.read_bytes().splitlines(keepends=True)
        bad = []
        for line in lines:
            record = parse_record_line(line) if line.endswith(b"\n") else None
            if record is None or not isinstance(record.get("key"), str):
                bad.append(line)
                continue
            self.records.setdefault(record["key"], record)
        if bad:
            Journal._quarantine(self.path, bad)
            write_atomic(self.path, b"".join(line for line in lines if line not in bad))
            self.quarantined = len(bad)

    def get(self, key: str) -> dict | None:
        return self.records.get(key)

    def add(self, record: dict) -> None:
        """Append one record (it holds its `key`) and fsync it before returning."""
        with self._lock:
            self._journal.append(record, self.path)
            self.records.setdefault(record["key"], record)


def send(backend, request: ChatRequest, policy: RetryPolicy,
         stop: threading.Event | None = None) -> tuple[ChatResponse, int, float]:
    """One call, retried as a run's are: an error reply --retries times, a server that does not
    answer at all until it has been unreachable for --give-up-after seconds (then ServerGone); a
    refusal (4xx) is raised at once. The response, the attempts it took and its seconds."""
    stop = stop or threading.Event()
    jitter = random.Random()
    attempt = 0
    unreachable_since = None
    started = time.monotonic()
    while True:
        attempt += 1
        try:
            response, _ = backend.chat(request)
            return response, attempt, time.monotonic() - started
        except FatalCallError:
            raise
        except TransientError as err:
            delay = policy.delay(attempt, err.retry_after, jitter)
            if err.unreachable:
                unreachable_since = unreachable_since or time.monotonic()
                left_s = policy.give_up_after_s - (time.monotonic() - unreachable_since)
                if left_s <= 0:
                    raise ServerGone(f"the server has not answered for "
                                     f"{time.monotonic() - unreachable_since:.0f} s "
                                     f"(--give-up-after {policy.give_up_after_s:g}; last: "
                                     f"{err.reason})") from None
                delay = min(delay, left_s)
            else:
                unreachable_since = None
                if attempt > policy.retries:
                    raise TransientError(f"gave up after {attempt} attempts: {err}") from None
            if stop.wait(delay):
                raise RunInterrupted("interrupted while waiting to retry") from None

