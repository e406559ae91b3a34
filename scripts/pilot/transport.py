"""Transport: one small HTTP client behind every backend (PROTOCOL.md section 2, budgets and servers).

Kept-alive connections with a short connect and a long read timeout, Retry-After parsing, and the split of
failures into transient (retried by the runner) and fatal (stops at once with a message saying what to do).
"""
from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import email.utils
import http.server
import json
import select
import socket
import ssl
import threading
import urllib.request
from typing import Any

from .records import FatalCallError, TransientError, lone_surrogate


class _TimedHTTPConnection(http.client.HTTPConnection):
    """Connects under a short timeout, then waits for the reply under a long one."""

    read_timeout: float | None = None

    def connect(self):
        super().connect()
        self.sock.settimeout(self.read_timeout)


class _TimedHTTPSConnection(http.client.HTTPSConnection):
    read_timeout: float | None = None

    def connect(self):
        super().connect()
        self.sock.settimeout(self.read_timeout)


class _TimedHandler(urllib.request.HTTPHandler, urllib.request.HTTPSHandler):
    def __init__(self, read_timeout: float):
        urllib.request.HTTPHandler.__init__(self)
        urllib.request.HTTPSHandler.__init__(self)
        self._http = type("Conn", (_TimedHTTPConnection,), {"read_timeout": read_timeout})
        self._https = type("Conns", (_TimedHTTPSConnection,), {"read_timeout": read_timeout})

    def http_open(self, req):
        return self.do_open(self._http, req)

    def https_open(self, req):
        return self.do_open(self._https, req, context=self._context)


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


class HttpClient:
    """JSON over HTTP/1.1 with separate connect and read timeouts and classified errors.

    Connections are kept alive between calls (one per call in flight, returned to a small pool when its reply
    has been read), which saves a TCP handshake and a server-side connection per call. A pooled connection
    the server has closed while idle is noticed before it is used and replaced; one it closes just as a
    request goes out is replaced once. Where the environment names a proxy for the server (http_proxy and
    the like), requests go through urllib's proxy handling instead, on a new connection each."""

    POOL_MAX = 32

    def __init__(self, base_url: str, connect_timeout: float, read_timeout: float,
                 headers: dict | None = None):
        self._headers = dict(headers or {})
        parts = urllib.parse.urlsplit(base_url)
        if parts.username is not None and "Authorization" not in self._headers:
            # user:password@ in the URL becomes Basic auth; the URL itself is kept and shown without it
            pair = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            self._headers["Authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
        self.base_url = redact_url(base_url)
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._local = threading.local()     # per calling thread: the re-sends of its last request
        self._pool: list[http.client.HTTPConnection] = []
        self._pool_lock = threading.Lock()
        self._origin = None
        try:
            host, port, scheme = parts.hostname, parts.port, parts.scheme.lower()
        except ValueError:
            host = port = scheme = None
        self.proxy = self._proxy_for(scheme, host) if host else None
        if host and scheme in ("http", "https") and not self.proxy:
            self._origin = (scheme, host, port, urllib.parse.urlsplit(self.base_url).path.rstrip("/"))
        self.opener = None if self._origin else urllib.request.build_opener(_TimedHandler(read_timeout))

    @staticmethod
    def _proxy_for(scheme: str | None, host: str) -> str | None:
        """The proxy the environment names for this server (http_proxy, https_proxy, no_proxy), if any."""
        proxy = urllib.request.getproxies().get(scheme or "")
        return redact_url(proxy) if proxy and not urllib.request.proxy_bypass(host) else None

    # -- kept-alive connections ------------------------------------------------------------------
    def _checkout(self) -> tuple[http.client.HTTPConnection, bool]:
        """A connection ready to send on, and whether it served a call before."""
        while True:
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

    def _exchange_kept_alive(self, method: str, path: str, data: bytes | None,
                             headers: dict) -> tuple[int, Any, bytes]:
        for attempt in (1, 2):
            try:
                conn, reused = self._checkout()
            except (TimeoutError, socket.timeout, OSError) as err:
                raise _ConnectFailed(err)
            try:
                conn.request(method, self._origin[3] + path, body=data, headers=headers)
                resp = conn.getresponse()
                body = resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError):
                conn.close()
                if reused and attempt == 1:
                    # the server closed this kept-alive connection as the request went out: sent again at once on a
                    # new one, and counted (take_resends) so that the caller says so and journals the attempt
                    self._local.resends = getattr(self._local, "resends", 0) + 1
                    continue
                raise
            except BaseException:
                conn.close()
                raise
            if resp.will_close:
                conn.close()
            else:
                self._checkin(conn)
            return resp.status, resp.headers, body
        raise AssertionError("unreachable")

    def _exchange_urllib(self, method: str, path: str, data: bytes | None,
                         headers: dict) -> tuple[int, Any, bytes]:
        req = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
        try:
            with self.opener.open(req, timeout=self.connect_timeout) as resp:
                return resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.headers, (err.read() if err.fp else b"")
        except urllib.error.URLError as err:
            raise _ConnectFailed(err.reason)

    def take_resends(self) -> int:
        """How many times this thread's last request was sent again on a new connection (and forget it)."""
        count = getattr(self._local, "resends", 0)
        self._local.resends = 0
        return count

    def request(self, method: str, path: str, payload: Any = None) -> Any:
        self._local.resends = 0
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        headers = {"Accept": "application/json", **self._headers}
        if data is not None:
            headers["Content-Type"] = "application/json"
        where = f"{method} {self.base_url}{path}"
        exchange = self._exchange_kept_alive if self._origin else self._exchange_urllib
        try:
            status, reply_headers, body = exchange(method, path, data, headers)
        except _ConnectFailed as err:
            reason = describe_net_error(err.reason)
            if self.proxy:
                reason = (f"through the proxy {self.proxy} that the environment names (http_proxy, https_proxy): "
                          f"{reason}; unset it, or add the server's host to no_proxy")
            raise TransientError(f"{where}: cannot connect ({reason})", reason=reason, unreachable=True)
        except (TimeoutError, socket.timeout):
            raise TransientError(f"{where}: timed out waiting for the server", reason="timed out", unreachable=True)
        except (ConnectionError, http.client.HTTPException, OSError) as err:
            # A garbled reply still came from a live server; a dropped or refused connection did not.
            reason = describe_net_error(err)
            unreachable = isinstance(err, ConnectionError) or not isinstance(err, http.client.HTTPException)
            raise TransientError(f"{where}: connection failed ({reason})", reason=reason, unreachable=unreachable)
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
        if lone_surrogate(text, data):                 # not text: it could be neither journalled nor scored
            raise TransientError(f"{where}: the reply holds a lone surrogate escape, which is not text",
                                 reason="a lone surrogate in the reply")
        return data


class _ConnectFailed(Exception):
    """The connection itself could not be made (refused, unresolvable, timed out while connecting)."""

    def __init__(self, reason: Any):
        super().__init__(str(reason))
        self.reason = reason


def _closed_by_peer(conn: http.client.HTTPConnection) -> bool:
    """True when an idle kept-alive connection has been closed by the server (readable means EOF or junk)."""
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
        wait_ms = headers.get("retry-after-ms") if headers is not None else None    # Azure's millisecond variant
        retry_after = parse_retry_after(headers.get("Retry-After") if headers is not None else None)
        if retry_after is None and wait_ms:
            retry_after = (parse_retry_after(wait_ms) or 0.0) / 1000
        return TransientError(f"{where}: HTTP {status} {message}", retry_after, f"HTTP {status} {message}")
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
