"""Progress: what a run shows on stderr while it works: cells and calls done, the rate, the time
left, failures, retries and the determinism probe; one live line on a terminal, a plain line every
interval elsewhere."""
from __future__ import annotations

import math
import sys
import threading
import time


def format_seconds(seconds: float, round_up: bool = False) -> str:
    if seconds < 1:
        return f"{max(seconds, 0.0):.1f} s"
    return f"{math.ceil(seconds) if round_up else round(seconds)} s"


def describe_retry(label: str, retry: dict, now: float) -> str:
    """One line on a call that waits to be retried: what, why, which attempt, and when."""
    wait_s = retry["next_at"] - now
    when = (f"next in {format_seconds(wait_s, round_up=True)}" if wait_s
            > 0 else "sent again, waiting for the reply")
    if retry["unreachable_s"] is not None:
        attempt = (f"attempt {retry['attempt']}, server unreachable for "
                   f"{format_seconds(retry['unreachable_s'])} of {retry['give_up_after_s']:g} s")
    else:
        attempt = f"attempt {retry['attempt']}/{retry['attempts']}"
    verb = "waiting for the model to load:" if retry["loading"] else "retrying"
    return f"{verb} {label}: {retry['reason']} ({attempt}, {when})"


# The rate and the ETA are shown once they rest on enough replies: four fast replies say little of a
# long run; eight over 10 s, or thirty however fast they came, say enough.
RATE_MIN_REPLIES = 8
RATE_MIN_SECONDS = 10.0
RATE_ENOUGH_REPLIES = 30


def describe_slow_replies(slow: list[dict]) -> str:
    """Calls whose replies drip (a gateway keeping them open, a stalling server), and when the first
    of them is given up (transport.ReplyDeadlines.slow_replies gives them)."""
    first = min(slow, key=lambda reply: reply["gives_up_at"])
    at = time.strftime("%H:%M:%S", time.localtime(first["gives_up_at"]))
    return (f"bytes arriving slowly on {len(slow)} call(s) (a gateway or a slow server); giving up "
            f"at {at} (--reply-deadline {first['deadline_s']:g} s)")


class Progress:
    """Cells and calls done, rate, ETA, failures and retries on stderr; one live line on a terminal.

    Off a terminal a plain line comes every interval in every state (a ticker thread repeats it
    while all workers wait on retries), and each retry gets its own line. The rate's clock starts at
    the first reply, so the wait for a model to load does not skew the ETA. A resumed run counts
    this session's cells and calls against this session's, the whole run's cells apart.
    `slow_replies` (transport.ReplyDeadlines.slow_replies) names the calls whose replies drip. """

    def __init__(self, total_cells: int, total_calls: int, done_cells: int, done_calls: int,
                 quiet: bool = False, stream=None, interval_s: float = 5.0, slow_replies=None):
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.total_cells, self.total_calls = total_cells, total_calls
        self.done_cells, self.done_calls = done_cells, done_calls
        # what earlier sessions did: a resume counts this session's work apart from them
        self.cells_before, self.calls_before = done_cells, done_calls
        self.slow_replies = slow_replies
        self.sent_calls, self.failed_cells, self.resends = 0, 0, 0
        self.started = time.monotonic()
        self.first_reply_at: float | None = None
        self.calls_since_first_reply = 0
        self.retries: dict[str, dict] = {}      # call label -> the retry it waits for
        # the determinism probe, once the cells are done: [sent, to send]
        self.probe: list[int] | None = None
        self.interval_s = interval_s
        self._last_print = 0.0
        self._lock = threading.Lock()
        self._ticker_stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def line(self) -> str:
        now = time.monotonic()
        left = self.total_calls - self.done_calls
        rate = 0.0
        replies = self.calls_since_first_reply
        measured = (
            self.first_reply_at is not None and replies >= RATE_MIN_REPLIES
            and (now - self.first_reply_at >= RATE_MIN_SECONDS or replies >= RATE_ENOUGH_REPLIES)
        )
        slow = self.slow_replies() if self.slow_replies is not None else []
        if measured:
            rate = self.calls_since_first_reply / max(now - self.first_reply_at, 1e-9) * 60
        if left <= 0:
            eta = "0 min"
        elif rate > 0:
            eta = f"{left / rate:.1f} min"
        elif self.first_reply_at is not None and not measured:
            eta = (
                f"unknown (measuring the rate: {self.sent_calls} "
                f"{'reply' if self.sent_calls == 1 else 'replies'} so far)"
            )
        elif self.first_reply_at is None and any(
            r["unreachable_s"] is not None for r in self.retries.values()
        ):
            eta = "unknown (no reply yet)"
        elif self.first_reply_at is None and slow:
            eta = "unknown (no whole reply yet)"
        elif self.first_reply_at is None:
            eta = (f"unknown (waiting {format_seconds(now - self.started)} for the first reply; a "
                   "model may be loading)")
        else:
            eta = "unknown"
        if self.cells_before or self.calls_before:
            parts = [f"cells {self.done_cells - self.cells_before}/"
                     f"{self.total_cells - self.cells_before} and calls "
                     f"{self.done_calls - self.calls_before}/{self.total_calls - self.calls_before}"
                     f" this session (whole run: cells {self.done_cells}/{self.total_cells})"]
        else:
            parts = [f"cells {self.done_cells}/{self.total_cells}",
                     f"calls {self.done_calls}/{self.total_calls}"]
        if measured or (self.first_reply_at is None and left > 0):
            parts.append(f"{rate:.1f} calls/min")
        # once every call of the cells is done there is no rate left to measure
        elif left > 0:
            parts.append("rate not yet measured")
        if left > 0:            # nor a time left to guess
            parts.append(f"ETA {eta}")
        parts.append(f"failed cells {self.failed_cells}")
        if self.resends:
            parts.append(f"re-sent {self.resends}")
        text = "progress: " + ", ".join(parts)
        if self.probe is not None:
            text += f"; determinism probe: {self.probe[0]} of {self.probe[1]} calls re-sent"
        if slow:
            text += "; " + describe_slow_replies(slow)
        if self.retries:
            label, retry = next(iter(self.retries.items()))
            text += "; " + describe_retry(label, retry, now)
            if len(self.retries) > 1:
                text += f"; {len(self.retries) - 1} more call(s) waiting to retry"
        return text

    def update(self, calls: int = 0, cells: int = 0, failed: int = 0, force: bool = False) -> None:
        with self._lock:
            self.done_calls += calls
            self.sent_calls += calls
            self.done_cells += cells
            self.failed_cells += failed
            if calls and self.first_reply_at is None:
                self.first_reply_at = time.monotonic()
                calls -= 1
            self.calls_since_first_reply += calls
            self._show(force)

    def resent(self, label: str, attempt: int) -> None:
        """A call of `label` was sent again at once, on a new connection, after the server closed
        the kept-alive one as the request went out (it may have reached the server): said at once,
        and counted on every line."""
        with self._lock:
            self.resends += 1
            if not self.quiet:
                self.stream.write(("\n" if self.tty else "") + f"re-sent {label}: the server "
                                  "closed the kept-alive connection as the request went out; sent "
                                  f"again on a new one (attempt {attempt})\n")
                self.stream.flush()

    def note(self, text: str) -> None:
        """A line said once, whatever --quiet says (how the run reaches its server, say)."""
        with self._lock:
            self.stream.write(("\n" if self.tty else "") + text + "\n")
            self.stream.flush()

    def retrying(self, label: str, reason: str, attempt: int, attempts: int, delay_s: float,
                 loading: bool = False,
                 unreachable_s: float | None = None, give_up_after_s: float | None = None) -> None:
        """A call of `label` failed and waits `delay_s` before `attempt`; said at once, and on every
        line after."""
        with self._lock:
            retry = {"reason": reason, "attempt": attempt, "attempts": attempts,
                     "next_at": time.monotonic() + delay_s,
                     "loading": loading, "unreachable_s": unreachable_s,
                     "give_up_after_s": give_up_after_s}
            self.retries[label] = retry
            if self.quiet:
                return
            if self.tty:
                self._show(False)
            else:
                self.stream.write(describe_retry(label, retry, time.monotonic()) + "\n")
                self.stream.flush()

    def probing(self, sent: int, to_send: int) -> None:
        """The determinism probe has re-sent `sent` of its `to_send` calls (shown on every line from
        now on)."""
        with self._lock:
            self.probe = [sent, to_send]
            self._show(False)

    def retry_over(self, label: str) -> None:
        with self._lock:
            self.retries.pop(label, None)

    def _show(self, force: bool) -> None:
        if self.quiet:
            return
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r" + self.line() + " " * 4)
            if force:
                self.stream.write("\n")
        elif force or now - self._last_print >= self.interval_s:
            self.stream.write(self.line() + "\n")
            self._last_print = now
        else:
            return
        self.stream.flush()

    def _tick(self) -> None:
        period = 1.0 if self.tty else max(self.interval_s, 0.2)
        while not self._ticker_stop.wait(period):
            with self._lock:
                self._show(False)

    def __enter__(self):
        if not self.quiet:
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc):
        self._ticker_stop.set()
        if self._ticker is not None:
            self._ticker.join()
        return False
