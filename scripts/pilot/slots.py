"""Call slots: the runner's --concurrency bound on calls awaiting the server (PROTOCOL.md section 2,
budgets and servers). CallSlots holds the slots and hands a freed one to the waiting call of lowest
priority, writing its request at once from the thread that freed it; SlotHold is one call's hold on
a slot, taken by the transport around the exchange alone. No HTTP here: the transport is given a
SlotHold and calls its `sending`."""
from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from typing import Any, Callable

from .records import RunInterrupted


class CallSlots:
    """At most N calls awaiting the server (--concurrency N). A slot is held from writing a request
    to reading its reply (SlotHold), not while the request is encoded or the reply parsed and
    journalled, so another call can use the server meanwhile. A call that finds every slot taken
    leaves its request to the thread that frees the next one, which writes it at once before going
    on with its own reply: the slot passes from one call to the next without waiting for a thread to
    wake. Waiting calls go in the order of their priority (lowest first, then the first to wait):
    the runner gives each call its cell's place in the run's schedule, so that the cells of the
    earliest episode are finished first and the later ones fill the slots they leave."""

    def __init__(self, slots: int):
        self.free = slots
        self._lock = threading.Lock()
        self._waiting: list = []            # a heap of (priority, arrival, _Waiting)
        self._arrivals = itertools.count()

    def acquire(self, priority: Any = 0, send: Callable[[], None] | None = None) -> None:
        """Return holding a slot, once `send` has run under it (here, or on the thread that freed
        the slot); what `send` raised is raised here, and the slot is still held. `priority`: any
        value that sorts, lowest first."""
        with self._lock:
            waiting = None if self.free else _Waiting(send)
            if waiting is None:
                self.free -= 1
            else:
                heapq.heappush(self._waiting, (priority, next(self._arrivals), waiting))
        if waiting is None:
            if send is not None:
                send()
            return
        waiting.done.wait()
        if waiting.error is not None:
            raise waiting.error

    def release(self) -> None:
        """Give the slot back: to the first waiting call, whose request is written from here, or to
        the pool."""
        with self._lock:
            if not self._waiting:
                self.free += 1
                return
            waiting = heapq.heappop(self._waiting)[2]
        waiting.run()


class _Waiting:
    """A call waiting for a slot: its request, written by whoever frees one, and what that
    raised."""

    def __init__(self, send: Callable[[], None] | None):
        self.send = send
        self.error: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            if self.send is not None:
                self.send()
        # raised in the waiting call's own thread, which now holds the slot
        except BaseException as err:
            self.error = err
        finally:
            self.done.set()


class SlotHold:
    """One call's hold on a CallSlots slot (none without them), taken by the transport around the
    exchange alone: the request is built before it and the reply parsed after. A call whose run was
    stopped while it waited for the slot is not sent."""

    def __init__(self, slots: CallSlots | None, priority: Any, stop: threading.Event):
        self.slots, self.priority, self.stop = slots, priority, stop
        self.started = time.monotonic()

    @contextlib.contextmanager
    def sending(self, send: Callable[[], None]):
        """Run `send` once a slot is held; hold it until the block ends."""
        def send_unless_stopped() -> None:
            # stopped while this call waited for a slot: it is not sent
            if self.stop.is_set():
                raise RunInterrupted("interrupted")
            self.started = time.monotonic()
            send()

        if self.slots is None:
            send_unless_stopped()
            yield self
            return
        try:
            self.slots.acquire(self.priority, send_unless_stopped)
        except BaseException:
            self.slots.release()
            raise
        try:
            yield self
        finally:
            self.slots.release()
