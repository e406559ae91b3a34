"""Transport: one small HTTP client behind every backend (PROTOCOL.md section 2, budgets and
servers).

Kept-alive connections with a short connect and a long read timeout, a deadline for each whole reply
(ReplyDeadlines: a reply that drips, or headers that drip, end there; and once the run is stopped,
within STOP_GRACE_S), the measured choice of how to reuse them (ConnectionPolicy: a server whose
replies stall on kept-alive connections gets TCP_QUICKACK or a new connection per call), a call's
slot held around its exchange alone (the bound itself, CallSlots and SlotHold, is pilot/slots.py's),
Retry-After parsing, and the split of failures into transient (retried by the runner) and fatal
(stops at once with a message saying what to do). """
from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import email.utils
import http.client
import io
import json
import os
import select
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from typing import Any

from .records import FatalCallError, TransientError, lone_surrogate
# re-exported: tests read it as transport.CallSlots
from .slots import CallSlots  # noqa: F401


class _OneWriteRequest:
    """A request's headers and body sent in one write, not two: one system call and one segment
    instead of two, and a server that reads the headers first finds the body with them."""

    def _send_output(self, message_body=None, encode_chunked=False):
        if isinstance(message_body, bytes) and not encode_chunked:
            self._buffer.extend((b"", message_body))
            message = b"\r\n".join(self._buffer)
            del self._buffer[:]
            self.send(message)
        else:
            super()._send_output(message_body, encode_chunked)


class _CountedReads(io.RawIOBase):
    """A reply's socket reads, each noted on its call's reply watch (the first byte, the last): how
    the progress line tells a reply that drips from a model that has written nothing yet."""

    def __init__(self, raw, watch: "_Watch"):
        super().__init__()
        self._raw, self._watch = raw, watch

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int | None:
        count = self._raw.readinto(buffer)
        if count:
            self._watch.received(count)
        return count

    def fileno(self) -> int:
        return self._raw.fileno()

    def close(self) -> None:
        self._raw.close()
        super().close()


class _WatchedResponse(http.client.HTTPResponse):
    """A reply whose bytes are counted on the reply watch of the call reading it on this thread
    (none outside a call)."""

    def __init__(self, sock, *args, **kwargs):
        super().__init__(sock, *args, **kwargs)
        watch = getattr(_READING, "watch", None)
        if watch is not None:
            self.fp = io.BufferedReader(_CountedReads(self.fp.detach(), watch))


class _TimedHTTPConnection(_OneWriteRequest, http.client.HTTPConnection):
    """Connects under a short timeout, then waits for the reply under a long one (and, made for a
    call through urllib, is watched by that call's reply deadline)."""

    read_timeout: float | None = None
    response_class = _WatchedResponse

    def connect(self):
        super().connect()
        self.sock.settimeout(self.read_timeout)
        REPLY_DEADLINES.attach(getattr(_ATTACHING, "watch", None), self.sock)


class _TimedHTTPSConnection(_OneWriteRequest, http.client.HTTPSConnection):
    read_timeout: float | None = None
    response_class = _WatchedResponse

    def connect(self):
        super().connect()
        self.sock.settimeout(self.read_timeout)
        REPLY_DEADLINES.attach(getattr(_ATTACHING, "watch", None), self.sock)


def _timed_opener(read_timeout: float):
    """urllib's opener (for servers behind a proxy) with the connect and read timeouts of the
    connections above; urllib.request is imported only here and for the proxy check, which most runs
    never need."""
    import urllib.request

    class TimedHandler(urllib.request.HTTPHandler, urllib.request.HTTPSHandler):
        def __init__(self):
            urllib.request.HTTPHandler.__init__(self)
            urllib.request.HTTPSHandler.__init__(self)
            self._http = type("Conn", (_TimedHTTPConnection,), {"read_timeout": read_timeout})
            self._https = type("Conns", (_TimedHTTPSConnection,), {"read_timeout": read_timeout})

        def http_open(self, req):
            return self.do_open(self._http, req)

        def https_open(self, req):
            return self.do_open(self._https, req, context=self._context)

    return urllib.request.build_opener(TimedHandler())


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds (a number or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - _dt.datetime.now(_dt.timezone.utc)).total_seconds())


def error_message_from_body(body: bytes) -> str:
    """One readable line from any of the servers' error shapes (string, nested, JSON-in-string)."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:300] or "(empty body)"
    for _ in range(3):
        if isinstance(data, dict):
            inner = data.get("error", data.get("message", data))
            if isinstance(inner, dict):
                inner = inner.get("message", inner)
            data = inner
        if isinstance(data, str):
            try:
                data = json.loads(data)
                continue
            except ValueError:
                break
    return " ".join(str(data).split())[:300]


# How to reuse connections: measured on a server's first calls. A server that writes a reply's
# headers and its body
# in two writes with Nagle's algorithm on (no TCP_NODELAY: Python's http.server, and the small
# proxies and shims
# built on it) sends the body only once the client has acknowledged the headers, and on a kept-alive
# connection
# the client's kernel delays that acknowledgement (40 ms on Linux, up to 200 ms elsewhere): every
# call then waits
# that long between the reply's headers and its body. A new connection's first replies are
# acknowledged at once.
# The wait between headers and body is the stall's own signature (a model's time comes before the
# headers), so
# it is what the policy measures: on kept-alive connections first; where they wait, on new
# connections, and
# then on kept-alive ones with TCP_QUICKACK set before each reply (Linux), which acknowledges at
# once.
KEPT_ALIVE = "kept alive"
KEPT_ALIVE_QUICKACK = "kept alive, TCP_QUICKACK set before each reply"
NEW_PER_CALL = "a new connection per call"
WAYS = {"kept": KEPT_ALIVE, "new": NEW_PER_CALL, "quickack": KEPT_ALIVE_QUICKACK}
WAIT_NAMES = {"kept": "kept_alive", "new": "new_connection", "quickack": "kept_alive_quickack"}

# a body this much later than on another way: half the shortest delayed ACK
STALL_S = 0.02
# calls that must agree, of at most 5 measured each way: one slow call decides nothing
STALL_VOTES = 3


class ConnectionPolicy:
    """Which way the next call reaches the server, measured on the first calls and then fixed
    (thread-safe).

    The ways, measured in this order: "kept" (a kept-alive connection), "new" (a new connection),
    "quickack" (kept alive, TCP_QUICKACK set before the reply). Each way is measured until
    STALL_VOTES of its calls agree; `choice` is set once that decides it. One policy may serve
    several clients of the same server."""

    def __init__(self, quickack_available: bool = hasattr(socket, "TCP_QUICKACK")):
        self.quickack_available = quickack_available
        self.measuring = "kept"
        self.body_waits: dict[str, list[float]] = {way: [] for way in WAYS}
        self.choice: dict | None = None
        self._taken = False
        self._lock = threading.Lock()

    def next_call(self) -> tuple[bool, bool]:
        """(reuse a kept-alive connection, set TCP_QUICKACK before the reply) for the next call."""
        with self._lock:
            way = self.measuring if self.choice is None else self.choice["way"]
        return way != "new", way == "quickack"

    def observe(self, reused: bool, quickack: bool, body_wait_s: float) -> None:
        """One reply's wait between its headers and its body, on the way its call went."""
        way = ("quickack" if quickack else "kept") if reused else "new"
        with self._lock:
            if self.choice is not None:
                return
            self.body_waits[way].append(body_wait_s)
            if way == self.measuring:
                self._decide()

    def _decide(self) -> None:
        waits = self.body_waits[self.measuring]
        if self.measuring == "kept":
            stalled = sum(w >= STALL_S for w in waits)
            if len(waits) - stalled >= STALL_VOTES:
                self._choose("kept", "replies on kept-alive connections came whole")
            elif stalled >= STALL_VOTES:
                self.measuring = "new"
            return
        kept = _median(self.body_waits["kept"])
        quicker = sum(w + STALL_S <= kept for w in waits)
        if self.measuring == "new":
            if len(waits) - quicker >= STALL_VOTES:
                self._choose("kept", "replies on new connections waited as long: the server sends "
                             "its bodies late")
            elif quicker >= STALL_VOTES and self.quickack_available:
                self.measuring = "quickack"
            elif quicker >= STALL_VOTES:
                self._choose("new", "replies on kept-alive connections waited for the client's "
                             "delayed ACK")
        elif quicker >= STALL_VOTES:
            self._choose("quickack", "replies on kept-alive connections waited for the client's "
                         "delayed ACK; "
                                     "TCP_QUICKACK set before each reply removed the wait")
        elif len(waits) - quicker >= STALL_VOTES:
            self._choose("new", "replies on kept-alive connections waited for the client's delayed "
                                "ACK, with TCP_QUICKACK too")

    def _choose(self, way: str, why: str) -> None:
        self.choice = {"way": way, "connections": WAYS[way], "why": why,
                       "calls_measured": sum(map(len, self.body_waits.values())),
                       "body_wait_ms": {WAIT_NAMES[name]: round(1000 * _median(waits), 1)
                                        for name, waits in self.body_waits.items() if waits}}

    def take_choice(self) -> dict | None:
        """The choice, once made, to the first caller that asks (None before, and after)."""
        with self._lock:
            if self.choice is None or self._taken:
                return None
            self._taken = True
            return dict(self.choice)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


# A deadline for each whole reply. The read timeout bounds each wait for the next bytes, not a
# reply: a server (or a
# gateway keeping a request alive) that sends its headers and then one byte every few seconds, or
# its headers one
# byte at a time, never trips it. Each call's connection is therefore watched from the moment its
# request goes out:
# at the deadline one watchdog thread shuts the connection, the blocked read returns, and the call
# fails as
# transient (ReplyDeadlinePassed). A call whose run was stopped (the event its SlotHold carries) is
# given
# STOP_GRACE_S more seconds at most, so that a stop ends a run whose calls will not finish.
STOP_GRACE_S = 30.0

DEADLINE_REASON = "no whole reply within the reply deadline"

# how often the watchdog looks at the stop of the calls it watches
STOP_POLL_S = 0.25

# A reply whose first bytes came this long ago (a tenth of its deadline where that is shorter) and
# is still not whole is dripping: a model's reply comes whole once it is written (a few kilobytes
# in one go), so only a gateway keeping the call open, or a server stalling, sends this slowly.
SLOW_REPLY_S = 10.0


class ReplyDeadlinePassed(Exception):
    """A reply not read whole by its deadline (or within STOP_GRACE_S of its run's stop); its
    connection is shut."""


class _Watch:
    """One call's deadline: the socket to shut when it passes, and whether it did; and when its
    reply's first bytes came, and how many have come (_CountedReads)."""

    __slots__ = ("seconds", "due", "stop", "stopped_at", "sock", "fired", "first_byte_at",
                 "bytes_read")

    def __init__(self, seconds: float, due: float, stop: threading.Event | None):
        self.seconds, self.due, self.stop, self.stopped_at = seconds, due, stop, None
        self.sock = None
        self.fired = False
        self.first_byte_at: float | None = None
        self.bytes_read = 0

    def received(self, count: int) -> None:
        if self.first_byte_at is None:
            self.first_byte_at = time.monotonic()
        self.bytes_read += count


class ReplyDeadlines:
    """The watchdog of every call in flight in this process: one thread, started with the first
    call, that shuts a call's connection at its deadline (or STOP_GRACE_S after its run's stop)
    unless the call ended first."""

    def __init__(self):
        self._cond = threading.Condition()
        self._watches: set[_Watch] = set()
        self._thread: threading.Thread | None = None
        # when the watchdog looks next: a later deadline needs no wake-up
        self._wakes_at = float("inf")

    def start(self, seconds: float, stop: threading.Event | None = None) -> _Watch:
        now = time.monotonic()
        watch = _Watch(seconds, now + seconds, stop)
        # when it must look next
        looks_by = min(watch.due, now + STOP_POLL_S) if stop is not None else watch.due
        with self._cond:
            self._watches.add(watch)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="reply-deadlines",
                                                daemon=True)
                self._thread.start()
            if looks_by < self._wakes_at:
                self._cond.notify()
        return watch

    def attach(self, watch: _Watch | None, sock) -> None:
        """The socket the call's reply comes on (shut at once if the deadline passed before it was
        known)."""
        if watch is None:
            return
        with self._cond:
            watch.sock = sock
            if watch.fired:
                _shut(sock)

    def end(self, watch: _Watch | None) -> bool:
        """The call is over: stop watching it; whether its deadline passed (its connection is then
        shut)."""
        if watch is None:
            return False
        with self._cond:
            self._watches.discard(watch)
            return watch.fired

    def slow_replies(self) -> list[dict]:
        """The calls in flight whose replies drip (begun SLOW_REPLY_S ago, or a tenth of their
        deadline, and not whole): each one's deadline in seconds, when it is given up
        (time.time()), and the bytes come so far."""
        now, wall = time.monotonic(), time.time()
        with self._cond:
            return [{"deadline_s": w.seconds, "gives_up_at": wall + w.due - now,
                     "bytes": w.bytes_read} for w in self._watches
                    if w.first_byte_at is not None
                    and now - w.first_byte_at >= min(SLOW_REPLY_S, w.seconds / 10)]

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                wait_s = None
                for watch in list(self._watches):
                    if watch.stop is not None and watch.stopped_at is None and watch.stop.is_set():
                        watch.stopped_at = now
                    due = watch.due if watch.stopped_at is None else min(watch.due,
                        watch.stopped_at + STOP_GRACE_S)
                    if due <= now:
                        watch.fired = True
                        self._watches.discard(watch)
                        if watch.sock is not None:
                            _shut(watch.sock)
                        continue
                    left = due - now
                    if watch.stop is not None and watch.stopped_at is None:
                        left = min(left, STOP_POLL_S)
                    wait_s = left if wait_s is None else min(wait_s, left)
                self._wakes_at = float("inf") if wait_s is None else now + wait_s
                self._cond.wait(wait_s)


def _shut(sock) -> None:
    """Shut a socket another thread may be blocked reading: its read returns at once (the TLS layer
    is bypassed, since that thread may be inside it)."""
    with contextlib.suppress(OSError, ValueError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


REPLY_DEADLINES = ReplyDeadlines()

# the call being made on this thread through urllib (whose connections we never see)
_ATTACHING = threading.local()
# the call whose reply this thread reads (its bytes are counted on its watch)
_READING = threading.local()


# a chat reply capped at a few thousand tokens is kilobytes; this is far above
MAX_REPLY_BYTES = 16 * 2 ** 20


class ReplyTooLarge(Exception):
    """A reply longer than MAX_REPLY_BYTES: read no further (its connection is not reused)."""


def read_capped(resp) -> bytes:
    """The reply's body, or ReplyTooLarge once it passes MAX_REPLY_BYTES (a server that streams
    megabytes for a call capped at 256 tokens would otherwise fill the memory and the journal)."""
    body = resp.read(MAX_REPLY_BYTES + 1)
    if len(body) > MAX_REPLY_BYTES:
        raise ReplyTooLarge()
    return body


class HttpClient:
    """JSON over HTTP/1.1 with separate connect and read timeouts, a deadline for each whole reply,
    and classified errors.

    Connections are kept alive between calls (one per call in flight, returned to a small pool when
    its reply has been read), which saves a TCP handshake and a server-side connection per call,
    unless the first calls show that the server's replies stall on them (ConnectionPolicy;
    `take_connection_choice` says what was chosen). A pooled connection the server has closed while
    idle is noticed before it is used and replaced; one it closes just as a request goes out is
    replaced once. Where the environment names a proxy for the server (http_proxy and the like),
    requests go through urllib's proxy handling instead, on a new connection each."""

    POOL_MAX = 32

    def __init__(self, base_url: str, connect_timeout: float, read_timeout: float,
                 headers: dict | None = None, policy: ConnectionPolicy | None = None,
                 reply_deadline: float | None = None):
        self._headers = dict(headers or {})
        parts = urllib.parse.urlsplit(base_url)
        if parts.username is not None and "Authorization" not in self._headers:
            # user:password@ in the URL becomes Basic auth; the URL itself is kept and shown without
            # it
            user, password = parts.username, parts.password or ""
            pair = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
            self._headers["Authorization"] = "Basic " + base64.b64encode(
                pair.encode("utf-8")
            ).decode("ascii")
        self.base_url = redact_url(base_url)
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        # from the request's send to the reply's end
        self.reply_deadline = reply_deadline or 2 * read_timeout
        self._local = threading.local()     # per calling thread: the re-sends of its last request
        self._pool: list[http.client.HTTPConnection] = []
        self._pool_lock = threading.Lock()
        # shared by the clients of one server: its first calls decide
        self.policy = policy or ConnectionPolicy()
        self._origin = None
        try:
            host, port, scheme = parts.hostname, parts.port, parts.scheme.lower()
        except ValueError:
            host = port = scheme = None
        self.proxy = self._proxy_for(scheme, host) if host else None
        if host and scheme in ("http", "https") and not self.proxy:
            self._origin = (scheme, host, port,
                            urllib.parse.urlsplit(self.base_url).path.rstrip("/"))
        self.opener = None if self._origin else _timed_opener(read_timeout)

    @staticmethod
    def _proxy_for(scheme: str | None, host: str) -> str | None:
        """The proxy the environment names for this server (http_proxy, https_proxy, no_proxy), if
        any."""
        if sys.platform not in ("darwin", "win32") and not any(
            k.lower().endswith("_proxy") for k in os.environ
        ):
            # elsewhere urllib reads proxies from the environment alone: there are none
            return None
        import urllib.request
        proxy = urllib.request.getproxies().get(scheme or "")
        return redact_url(proxy) if proxy and not urllib.request.proxy_bypass(host) else None

    # -- kept-alive connections ------------------------------------------------------------------
    def _checkout(self, reuse: bool = True) -> tuple[http.client.HTTPConnection, bool]:
        """A connection ready to send on (a pooled one where `reuse`), and whether it served a call
        before."""
        while reuse:
            with self._pool_lock:
                conn = self._pool.pop() if self._pool else None
            if conn is None:
                break
            if not _closed_by_peer(conn):
                return conn, True
            conn.close()
        scheme, host, port, _ = self._origin
        if scheme == "https":
            conn = _TimedHTTPSConnection(host, port, timeout=self.connect_timeout)
        else:
            conn = _TimedHTTPConnection(host, port, timeout=self.connect_timeout)
        conn.read_timeout = self.read_timeout
        try:
            conn.connect()
        except BaseException:
            conn.close()
            raise
        return conn, False

    def _checkin(self, conn: http.client.HTTPConnection) -> None:
        with self._pool_lock:
            if len(self._pool) < self.POOL_MAX:
                self._pool.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._pool_lock:
            pooled, self._pool = self._pool, []
        for conn in pooled:
            conn.close()

    def __del__(self):
        # kept-alive connections end with their client, quietly (no unclosed-socket warning at exit)
        with contextlib.suppress(Exception):
            self.close()

    def _exchange_kept_alive(self, method: str, path: str, data: bytes | None, headers: dict,
                             slot: Any = None) -> tuple[int, Any, bytes]:
        reuse, quickack = self.policy.next_call()
        if not reuse:
            headers = {**headers, "Connection": "close"}
        call: dict = {"resent": False, "watch": None}

        def send(new: bool = False) -> None:
            """Write the request on a kept-alive connection (a new one where `new`). Under a slot
            this may run on the thread that frees the slot (see `slot` in request), so it keeps its
            state in `call`."""
            try:
                conn, reused = self._checkout(reuse and not new)
            except (TimeoutError, socket.timeout, OSError) as err:
                raise _ConnectFailed(err)
            # the reply's deadline counts from the request's first send
            if call["watch"] is None:
                call["watch"] = REPLY_DEADLINES.start(self.reply_deadline,
                                                      getattr(slot, "stop", None))
            REPLY_DEADLINES.attach(call["watch"], conn.sock)
            try:
                conn.request(method, self._origin[3] + path, body=data, headers=headers)
                if quickack and reused:
                    # acknowledge the reply's headers at once (the kernel forgets the setting, so it
                    # is set per reply)
                    with contextlib.suppress(OSError):
                        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
            except BrokenPipeError:
                conn.close()
                if reused and not call["resent"]:
                    # closed by the server while idle, unnoticed: on a new one
                    call["resent"] = True
                    return send(new=True)
                raise
            except BaseException:
                conn.close()
                raise
            call.update(conn=conn, reused=reused)

        try:
            if slot is None:
                send()
            with slot.sending(send) if slot is not None else contextlib.nullcontext():
                while True:
                    conn, reused = call["conn"], call["reused"]
                    _READING.watch = call["watch"]
                    try:
                        resp = conn.getresponse()
                        headers_at = time.perf_counter()
                        body = read_capped(resp)
                    except http.client.RemoteDisconnected:
                        conn.close()
                        if reused and not call["resent"] and not call["watch"].fired:
                            # the server closed this kept-alive connection as the request went out:
                            # sent again at
                            # once on a new one, and counted (take_resends) so that the caller says
                            # so and
                            # journals it
                            call["resent"] = True
                            send(new=True)
                            continue
                        raise
                    except BaseException:
                        conn.close()
                        raise
                    finally:
                        _READING.watch = None
                    break
        except BaseException:
            if REPLY_DEADLINES.end(call["watch"]):
                # what the shut connection raised says nothing more
                raise ReplyDeadlinePassed() from None
            raise
        # a body cut short by the shut connection
        if REPLY_DEADLINES.end(call["watch"]):
            conn.close()
            raise ReplyDeadlinePassed()
        self.policy.observe(reused, quickack, time.perf_counter() - headers_at)
        self._local.resends = int(call["resent"])
        if resp.will_close or not reuse:
            conn.close()
        else:
            self._checkin(conn)
        return resp.status, resp.headers, body

    def _exchange_urllib(self, method: str, path: str, data: bytes | None, headers: dict,
                         stop: threading.Event | None = None) -> tuple[int, Any, bytes]:
        import urllib.error
        import urllib.request
        req = urllib.request.Request(self.base_url + path, data=data, method=method,
                                     headers=headers)
        # its connection attaches itself
        watch = _ATTACHING.watch = _READING.watch = REPLY_DEADLINES.start(self.reply_deadline,
                                                                          stop)
        try:
            try:
                with self.opener.open(req, timeout=self.connect_timeout) as resp:
                    reply = resp.status, resp.headers, read_capped(resp)
            except urllib.error.HTTPError as err:
                reply = err.code, err.headers, (read_capped(err) if err.fp else b"")
            except urllib.error.URLError as err:
                if watch.fired:
                    raise ReplyDeadlinePassed() from None
                raise _ConnectFailed(err.reason)
        except BaseException:
            if REPLY_DEADLINES.end(watch):
                raise ReplyDeadlinePassed() from None
            raise
        finally:
            _ATTACHING.watch = _READING.watch = None
        if REPLY_DEADLINES.end(watch):
            raise ReplyDeadlinePassed()
        return reply

    def take_connection_choice(self) -> dict | None:
        """How calls reach the server, once the first calls have decided it (given once; None
        otherwise)."""
        choice = self.policy.take_choice()
        if choice is not None and choice["way"] == "new":
            # the kept-alive connections still pooled are not used again
            self.close()
        return choice

    def settle_connections(self, path: str, most: int = 15) -> dict | None:
        """Send small requests (GET `path`) until the connection policy has chosen how calls reach
        the server, at most `most` (three ways, five calls each at most), so that a run's first
        calls already go the chosen way and none waits while it is measured; the choice (None:
        undecided, or a proxy, which has no policy). What decides it, the wait between a reply's
        headers and its body, comes from how the server writes any reply."""
        for _ in range(most):
            if self._origin is None or self.policy.choice is not None:
                break
            try:
                self.request("GET", path)
            except FatalCallError:          # an error reply is measured as any other
                continue
            # no reply: the run's own calls measure it, as they would have
            except TransientError:
                break
        return self.policy.choice

    def take_resends(self) -> int:
        """How many times this thread's last request was sent again on a new connection (and forget
        it)."""
        count = getattr(self._local, "resends", 0)
        self._local.resends = 0
        return count

    def request(self, method: str, path: str, payload: Any = None, slot: Any = None) -> Any:
        """Send one request and return its JSON reply.

        `slot` (the runner's --concurrency bound; see pilot/slots.py's SlotHold) is held around the
        exchange alone: the request is encoded before it and the reply parsed after.
        `slot.sending(send)` is a context manager that calls `send()` once the call holds a slot
        (from the thread that freed it, when the call had to wait: the request goes out without
        waiting for this thread to wake), and gives the slot back on exit."""
        self._local.resends = 0
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        headers = {"Accept": "application/json", **self._headers}
        if data is not None:
            headers["Content-Type"] = "application/json"
        where = f"{method} {self.base_url}{path}"
        try:
            if self._origin:
                status, reply_headers, body = self._exchange_kept_alive(method, path, data, headers,
                    slot)
            else:
                with slot.sending(lambda: None) if slot is not None else contextlib.nullcontext():
                    status, reply_headers, body = self._exchange_urllib(method, path, data, headers,
                                                                        getattr(slot, "stop", None))
        except ReplyDeadlinePassed:
            raise TransientError(f"{where}: no whole reply within {self.reply_deadline:g} s (the "
                                 f"reply deadline; a stopped run waits {STOP_GRACE_S:g} s at most)",
                                 reason=DEADLINE_REASON,
                                 unreachable=True) from None
        except ReplyTooLarge:
            raise TransientError(f"{where}: the reply is longer than {MAX_REPLY_BYTES // 2 ** 20} "
                                 "MiB, which no reply "
                                 f"to a call capped at a few thousand tokens needs") from None
        except _ConnectFailed as err:
            reason = describe_net_error(err.reason)
            if self.proxy:
                reason = (f"through the proxy {self.proxy} that the environment names (http_proxy, "
                          f"https_proxy): {reason}; unset it, or add the server's host to no_proxy")
            raise TransientError(f"{where}: cannot connect ({reason})", reason=reason,
                                 unreachable=True)
        except (TimeoutError, socket.timeout):
            raise TransientError(f"{where}: timed out waiting for the server", reason="timed out",
                                 unreachable=True)
        except (ConnectionError, http.client.HTTPException, OSError) as err:
            # A garbled reply still came from a live server; a dropped or refused connection did
            # not.
            reason = describe_net_error(err)
            unreachable = isinstance(err, ConnectionError) or not isinstance(err,
                http.client.HTTPException)
            raise TransientError(f"{where}: connection failed ({reason})", reason=reason,
                                 unreachable=unreachable)
        if status >= 400:
            raise classify_http_error(where, status, reply_headers, body)
        if status >= 300:
            target = reply_headers.get("Location") or "another address"
            raise FatalCallError(f"{where}: HTTP {status}, the server redirects to {target}; "
                                 f"give that address as the server URL", status)
        try:
            text = body.decode("utf-8")
            data = json.loads(text)
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise TransientError(f"{where}: malformed JSON in the reply ({len(body)} bytes)",
                                 reason="malformed JSON in the reply")
        # not text: it could be neither journalled nor scored
        if lone_surrogate(text, data):
            raise TransientError(f"{where}: the reply holds a lone surrogate escape, which is not "
                                 "text",
                                 reason="a lone surrogate in the reply")
        return data


class _ConnectFailed(Exception):
    """The connection itself could not be made (refused, unresolvable, timed out while
    connecting)."""

    def __init__(self, reason: Any):
        super().__init__(str(reason))
        self.reason = reason


def _closed_by_peer(conn: http.client.HTTPConnection) -> bool:
    """True when an idle kept-alive connection has been closed by the server (readable means EOF or
    junk)."""
    sock = conn.sock
    if sock is None:
        return True
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def classify_http_error(where: str, status: int, headers: Any, body: bytes) -> Exception:
    """An HTTP error status as a transient error (retried, honouring Retry-After) or a fatal one."""
    message = error_message_from_body(body)
    if status in (408, 425, 429) or status >= 500:
        if status == 429 and "insufficient_quota" in body.decode("utf-8", "replace"):
            return FatalCallError(f"{where}: HTTP 429 {message} (quota exhausted)", status)
        # Azure's millisecond variant
        wait_ms = headers.get("retry-after-ms") if headers is not None else None
        retry_after = parse_retry_after(headers.get("Retry-After") if headers is not None else None)
        if retry_after is None and wait_ms:
            retry_after = (parse_retry_after(wait_ms) or 0.0) / 1000
        return TransientError(f"{where}: HTTP {status} {message}", retry_after,
                              f"HTTP {status} {message}")
    return FatalCallError(f"{where}: HTTP {status} {message}", status)


def describe_net_error(reason: Any) -> str:
    if isinstance(reason, ssl.SSLError) and "WRONG_VERSION_NUMBER" in str(reason):
        return "the server answers plain HTTP, not HTTPS; use an http:// address"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return "timed out"
    if isinstance(reason, ConnectionResetError):
        return "connection reset"
    return (str(reason) or type(reason).__name__)[:200]


def redact_url(url: str) -> str:
    """The URL without any user:password part, safe to print and record."""
    parts = urllib.parse.urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        parts = parts._replace(netloc=host)
    return urllib.parse.urlunsplit(parts).rstrip("/")
