"""In-process model servers for the tests: real sockets, the real API shapes, a deterministic model.

FakeOllama speaks Ollama's native API (/api/chat, /api/show, /api/tags, /api/version), FakeOpenAI an
OpenAI-compatible one (/v1/models, /v1/chat/completions, /props, /version). Both answer with the same
deterministic "model", which reads the facts out of the prompt and writes states and answers from
them, perfectly or with the losses a test asks for. Faults can be queued per chat request (among them replies
that drip: headers, then a byte every few seconds, or the headers themselves a byte at a time). Each reply's headers
and body go out in two writes; with nagle=True the server leaves Nagle's algorithm on (no TCP_NODELAY), as
Python's http.server does, so that a client's delayed ACK holds up every reply on a kept-alive connection.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NAME = re.compile(r"\b[A-Z]{6}\b")
NUMBER = re.compile(r"-?\d+")
RELATION = re.compile(r"\bone (above|more than)\b")


def read_facts(text: str) -> tuple[dict, dict]:
    """Values and combined values from any text: segment sentences, prose states or typed blocks."""
    values, combined = {}, {}
    for unit in re.split(r"(?<=[.!?])\s+|\n", text):
        names = NAME.findall(unit)
        numbers = NUMBER.findall(unit)
        if len(names) == 1 and len(numbers) == 1:
            values[names[0]] = int(numbers[0])
        elif len(names) == 2 and len(numbers) == 1 and RELATION.search(unit):
            values[names[0]] = int(numbers[0])       # "NEIGHBOR ... one above BASE ... value"
        elif len(names) == 2 and len(numbers) == 1:
            combined[tuple(names)] = int(numbers[0])
    return values, combined


class DeterministicModel:
    """Writes compaction states and answers from the facts it can read in the prompt.

    behaviour keys: prose_keep_last / typed_keep_last (keep only the newest N values in that
    format, as a budget-pressed model would), prose_shift (add this to every value written in
    prose), prose_style ("terse": `A is 1. B is 2.`, each value right after its name), answer_prefix (text
    before the ANSWER line), answer_style ("plain": the bare number with no ANSWER line, as a model that ignores
    the format does; "bold": `ANSWER: **N**`).
    """

    def __init__(self, behaviour: dict | None = None):
        self.behaviour = dict(behaviour or {})

    def reply(self, prompt: str) -> str:
        if "NEW SEGMENT:" in prompt and "PREVIOUS STATE:" in prompt:
            return self.compact(prompt)
        return self.answer(prompt)

    def compact(self, prompt: str) -> str:
        previous = prompt.split("PREVIOUS STATE:", 1)[1].split("NEW SEGMENT:", 1)[0]
        segment = prompt.split("NEW SEGMENT:", 1)[1]
        values, combined = read_facts(previous)
        new_values, new_combined = read_facts(segment)
        values.update(new_values)
        combined.update(new_combined)
        typed = "typed state block" in prompt
        keep = self.behaviour.get("typed_keep_last" if typed else "prose_keep_last")
        if keep is not None:
            values = dict(list(values.items())[-keep:]) if keep else {}
        if typed:
            lines = ["values:"] + [f"{n} = {v}" for n, v in values.items()]
            lines += ["combined:"] + [f"{a} + {b} = {v}" for (a, b), v in combined.items()]
            lines += ["relations:", "each combined value is the sum of its two parts", "notes: none"]
            return "\n".join(lines)
        shift = self.behaviour.get("prose_shift", 0)
        sentences = ["So far the session has recorded these figures." + " Also" * self.behaviour.get("prose_padding", 0)]
        if self.behaviour.get("prose_style") == "terse":        # `A is 1. B is 2.`: each number after its name
            sentences = [f"{n} is {v + shift}." for n, v in values.items()]
            return " ".join(sentences + [f"{a} and {b} together came to {v}." for (a, b), v in combined.items()])
        sentences += [f"The figure for {n} is {v + shift}." for n, v in values.items()]
        sentences += [f"{a} and {b} together came to {v}." for (a, b), v in combined.items()]
        return " ".join(sentences)

    def answer(self, prompt: str) -> str:
        context, _, question = prompt.rpartition("Question:")
        question = question.splitlines()[0]
        values, combined = read_facts(context)
        names = NAME.findall(question)
        result = None
        if "combined value" in question and len(names) == 2:
            result = combined.get(tuple(names))
        elif "plus" in question and len(names) == 2:
            if names[0] in values and names[1] in values:
                result = values[names[0]] + values[names[1]]
        elif names:
            result = values.get(names[0])
        prefix = self.behaviour.get("answer_prefix", "Looking at the record.")
        if result is None:
            return f"{prefix} I cannot find that value."
        style = self.behaviour.get("answer_style")
        if style == "plain":
            return f"{result}"
        if style == "bold":
            return f"ANSWER: **{result}**"
        return f"{prefix}\nANSWER: {result}"


CHARS_PER_TOKEN = 4


def wait_until(deadline: float | None) -> None:
    if deadline is not None:
        time.sleep(max(0.0, deadline - time.monotonic()))


def tokens(text: str, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    return int(len(text) / chars_per_token) + 1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        # As Ollama's Go server and vLLM's asyncio server do: no Nagle delay between a reply's header and
        # body, which on a kept-alive connection would meet the client's delayed ACK (40 ms per call). A server
        # made with nagle=True leaves it on, as Python's http.server (and the shims built on it) does.
        if not self.server.owner.nagle:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def parse_request(self):
        # The request line has just arrived: the server's per-call latency L counts from here.
        self.arrived = time.monotonic()
        return super().parse_request()

    def _send(self, status: int, payload, headers: dict | None = None, raw: bytes | None = None,
              deadline: float | None = None):
        """The reply, ready before `deadline` and written out at it (headers, then body: two writes)."""
        body = raw if raw is not None else json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        wait_until(deadline)
        self.end_headers()
        self._answered()
        self.wfile.write(body)

    def _answered(self):
        """A chat request stops counting as in flight once its reply's body goes out: before the client can have
        read it whole and sent its next request (so that in_flight never counts a call the client is done with)."""
        counted, self._in_flight = getattr(self, "_in_flight", None), None
        if counted is not None:
            owner = self.server.owner
            with owner.lock:
                owner.in_flight -= 1
                if counted == "answer":
                    owner.answers_in_flight -= 1

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else b""
        try:
            return json.loads(data.decode("utf-8")) if data else None
        except ValueError:
            return None

    def _reset(self):
        # RST instead of FIN: the client sees "connection reset by peer".
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def _apply_fault(self, fault) -> bool:
        kind = fault[0]
        if kind == "status":
            _, code, payload, headers = (list(fault) + [None, None])[:4]
            self._send(code, payload or {"error": "fault"}, headers)
        elif kind == "reset":
            self._reset()
        elif kind == "malformed":
            self._send(200, None, raw=b'{"model": "x", "message": {"content": "tr')
        elif kind == "no_message":
            self._send(200, {"model": "x", "created_at": "2026-01-01T00:00:00Z", "done": True})
        elif kind == "empty":
            self.server.owner.send_reply(self, self._last_body, text_override="")
        elif kind == "close":                   # read the request, then close the connection with no reply
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif kind == "text":                    # this reply instead of the model's (a template mismatch, say)
            self.server.owner.send_reply(self, self._last_body, text_override=fault[1])
        elif kind == "shutdown":
            self._reset()
            server = self.server
            threading.Thread(target=server.stop, daemon=True).start()
        elif kind == "delay":
            time.sleep(fault[1])
            return False
        elif kind in ("drip", "drip_headers"):
            self._drip(kind == "drip_headers", *fault[1:])
        return True

    def _drip(self, headers_too: bool, every_s: float, for_s: float = 20.0):
        """As a gateway keeping a request alive does: headers promising a long body, then one byte every `every_s`
        (drip), or the headers themselves one byte at a time (drip_headers); for `for_s` at most, or until the
        client hangs up. The server's `dripping` event is set once the first byte is out."""
        self.close_connection = True
        if headers_too:
            head, body = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Keep-Alive: " + b"." * 10000, b""
        else:
            head, body = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", b" " * 100000
        end = time.monotonic() + for_s
        try:
            if not headers_too:
                self.wfile.write(head)
                self.wfile.flush()
            dripped = head if headers_too else body
            for i in range(len(dripped)):
                if time.monotonic() >= end:
                    break
                self.wfile.write(dripped[i:i + 1])
                self.wfile.flush()
                self.server.owner.dripping.set()
                time.sleep(every_s)
        except OSError:
            pass                                # the client gave up and closed the connection

    def _chat(self, body):
        owner = self.server.owner
        with owner.lock:
            owner.chat_requests.append(body)
            number = len(owner.chat_requests)
            fault = owner.faults.pop(0) if owner.faults else None
            owner.in_flight += 1
            owner.max_in_flight = max(owner.max_in_flight, owner.in_flight)
            is_answer = any("\nQuestion: " in str(m.get("content")) for m in body.get("messages") or [])
            if is_answer:
                owner.answers_in_flight += 1
                owner.max_answers_in_flight = max(owner.max_answers_in_flight, owner.answers_in_flight)
            self._in_flight = "answer" if is_answer else "chat"
        try:
            self._chat_reply(owner, body, number, fault)
        finally:
            self._answered()            # a fault that sent no reply

    def _chat_reply(self, owner, body, number, fault):
        self._last_body = body
        if owner.hold_at == number:
            owner.held.set()
            owner.release.wait(30)
        if fault and self._apply_fault(fault):
            return
        parsing = time.monotonic() - self.arrived
        with owner.slots:
            # Parsing and the reply are computed inside the latency, so that every call takes L in all
            # at the server, counted from its arrival or, when all P slots were busy, from a free slot.
            owner.send_reply(self, body, deadline=time.monotonic() + owner.latency_s - parsing)


class _QuietServer(ThreadingHTTPServer):
    """Serves each connection on its own thread; stopping it also drops the connections clients keep alive,
    as a real server process does when it exits."""

    def __init__(self, *args, **kwargs):
        self.open_connections: set = set()
        self.connections_opened = 0            # TCP connections accepted so far (kept-alive ones count once)
        self.connections_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def process_request(self, request, client_address):
        with self.connections_lock:
            self.open_connections.add(request)
            self.connections_opened += 1
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.connections_lock:
            self.open_connections.discard(request)
        super().shutdown_request(request)

    def drop_connections(self):
        with self.connections_lock:
            dropped, self.open_connections = self.open_connections, set()
        for conn in dropped:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self):
        self.shutdown()
        self.server_close()
        self.drop_connections()

    def handle_error(self, request, client_address):
        pass   # clients killed mid-request (the kill tests) are expected


class FakeServerBase:
    """Starts on 127.0.0.1 at a free port in a background thread; use as a context manager."""

    def __init__(self, models=("gemma3:4b",), behaviour: dict | None = None, latency_s: float = 0.0,
                 slots: int = 64, thinking_models=(), port: int = 0, nagle: bool = False):
        self.models = list(models)
        self.nagle = nagle          # True: no TCP_NODELAY, each reply's headers and body in two writes
        self.model = DeterministicModel(behaviour)
        self.latency_s = latency_s
        self.slots = threading.BoundedSemaphore(slots)
        self.thinking_models = set(thinking_models)
        self.faults: list = []
        self.chat_requests: list = []
        self.in_flight = self.max_in_flight = 0               # chat requests being served now, and at most
        self.vary_repeats = 0          # the next this-many requests identical to an earlier one get another reply
        self.cached_prompts: list[str] = []                   # llama.cpp flavour: what its prompt cache holds
        self.answers_in_flight = self.max_answers_in_flight = 0
        self.requests: list = []
        # the judge's replies (issue 44): prompt -> text, or (text, {word: probability}) given as
        # the first token's top logprobs where the request asks for them
        self.judge = None
        self.lock = threading.Lock()
        self.prompt_chars_per_token = CHARS_PER_TOKEN   # lower it to make prompts "longer"
        self.hold_at: int | None = None                  # 1-based chat request number to hold
        self.held = threading.Event()                    # set when that request arrives
        self.dripping = threading.Event()                # set once a drip fault has sent its first byte
        self.release = threading.Event()                 # set by the test to let it through
        self.httpd = _QuietServer(("127.0.0.1", port), self.handler_class())
        self.httpd.daemon_threads = True
        self.httpd.owner = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.stop()

    def vary(self, body: dict, text: str) -> str:
        """A nondeterministic server, on demand: a request seen before may get a different reply."""
        if self.vary_repeats <= 0:
            return text
        with self.lock:
            key = json.dumps(body, sort_keys=True)
            repeated = sum(1 for b in self.chat_requests if json.dumps(b, sort_keys=True) == key) > 1
            if repeated and self.vary_repeats > 0:
                self.vary_repeats -= 1
                return text + " (said differently this time)"
        return text

    def chat_count(self) -> int:
        with self.lock:
            return len(self.chat_requests)

    def duplicate_chats(self) -> int:
        """How many chat requests repeated an earlier identical one."""
        seen = set()
        dup = 0
        for body in self.chat_requests:
            key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
            dup += key in seen
            seen.add(key)
        return dup


def judge_reply(server, prompt: str, body: dict) -> tuple[str | None, list | None]:
    """The judge's reply to a judge question (server.judge set, the prompt holding an ITEM block),
    and its token logprobs in the one shape both APIs give them, where the request asked; (None,
    None) for any other request."""
    if server.judge is None or "=== ITEM ===" not in prompt:
        return None, None
    answer = server.judge(prompt)
    text, probabilities = answer if isinstance(answer, tuple) else (answer, None)
    if not body.get("logprobs") or probabilities is None:
        return text, None
    first = (text.split() or [""])[0]
    alternatives = [{"token": word, "logprob": math.log(p)} for word, p in probabilities.items()
                    if p > 0]
    return text, [{"token": first, "logprob": alternatives[0]["logprob"] if alternatives else 0.0,
                   "top_logprobs": alternatives}]


class FakeOllama(FakeServerBase):
    version = "0.12.10"

    def handler_class(self):
        owner = self

        class Handler(_Handler):
            def do_GET(self):
                owner.requests.append(("GET", self.path, None))
                if self.path == "/api/version":
                    self._send(200, {"version": owner.version})
                elif self.path == "/api/tags":
                    self._send(200, {"models": [owner.tag(m) for m in owner.models]})
                elif self.path == "/":
                    self._send(200, None, raw=b"Ollama is running")
                else:
                    self._send(404, {"error": "404 page not found"})

            def do_POST(self):
                body = self._body()
                owner.requests.append(("POST", self.path, body))
                if body is None:
                    self._send(400, {"error": "missing request body"})
                    return
                model = body.get("model")
                if self.path == "/api/show":
                    if model not in owner.models:
                        self._send(404, {"error": f"model '{model}' not found"})
                        return
                    caps = ["completion"] + (["thinking"] if model in owner.thinking_models else [])
                    self._send(200, {"capabilities": caps, "details": owner.tag(model)["details"],
                                     "model_info": {"general.architecture": "fake", "fake.context_length": 8192}})
                elif self.path == "/api/chat":
                    if model not in owner.models:
                        self._send(404, {"error": f"model '{model}' not found"})
                        return
                    self._chat(body)
                else:
                    self._send(404, {"error": "404 page not found"})

        return Handler

    def tag(self, model: str) -> dict:
        digest = hashlib.sha256(("digest:" + model + getattr(self, "digest_salt", "")).encode()).hexdigest()
        return {"name": model, "model": model, "modified_at": "2026-01-01T00:00:00Z", "size": 3338801804,
                "digest": digest, "details": {"parent_model": "", "format": "gguf", "family": "fake",
                                              "families": ["fake"], "parameter_size": "4.3B",
                                              "quantization_level": "Q4_K_M"}}

    def send_reply(self, handler, body, text_override=None, deadline=None):
        prompt = "\n".join(m.get("content", "") for m in body.get("messages", []))
        options = body.get("options") or {}
        if body.get("truncate") is False and tokens(prompt, self.prompt_chars_per_token) > options.get("num_ctx", 2048):
            handler._send(400, {"error": "the input length exceeds the context length"})
            return
        judged, logprobs = judge_reply(self, prompt, body)
        text = self.vary(body, judged if judged is not None else self.model.reply(prompt)) \
            if text_override is None else text_override
        done_reason = "stop"
        cap = options.get("num_predict", -1)
        if cap > 0 and tokens(text) > cap:
            text, done_reason = text[:cap * 4], "length"
        message = {"role": "assistant", "content": text}
        thinking = body.get("model") in self.thinking_models and body.get("think") is not False
        if thinking or getattr(self, "leak_thinking", False):
            message["thinking"] = "Let me think about the figures."
        reply = {"model": body["model"], "created_at": "2026-01-01T00:00:00.000Z", "message": message,
                 "done": True, "done_reason": done_reason, "total_duration": 123456789,
                 "load_duration": 1234567, "prompt_eval_count": tokens(prompt), "prompt_eval_duration": 2345678,
                 "eval_count": tokens(text) if text else 0, "eval_duration": 3456789}
        if logprobs is not None and text_override is None:
            reply["logprobs"] = logprobs
        if getattr(self, "omit_counts", False):
            del reply["eval_count"], reply["prompt_eval_count"]
        if getattr(self, "count_override", None) is not None:      # counts no server could mean, say
            reply["eval_count"], reply["prompt_eval_count"] = self.count_override
        handler._send(200, {k: v for k, v in reply.items() if v not in (0, "", None)}, deadline=deadline)


class FakeOpenAI(FakeServerBase):
    """An OpenAI-compatible server in the llama.cpp flavour (/props, /slots) or vLLM flavour (/version)."""

    flavour = "llama.cpp"
    api_key: str | None = None
    context_window = 4096
    omit_usage = False
    loading_until = 0.0             # time.monotonic() until which every GET answers 503 Loading model

    def handler_class(self):
        owner = self

        class Handler(_Handler):
            def _authorized(self) -> bool:
                if owner.api_key and self.headers.get("Authorization") != f"Bearer {owner.api_key}":
                    self._send(401, {"error": {"code": 401, "message": "Invalid API Key",
                                               "type": "authentication_error"}})
                    return False
                return True

            def do_GET(self):
                owner.requests.append(("GET", self.path, dict(self.headers)))
                if time.monotonic() < owner.loading_until:      # llama.cpp while it loads the model
                    self._send(503, {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}})
                    return
                if self.path == "/v1/models":
                    if not self._authorized():
                        return
                    data = [{"id": m, "object": "model", "created": 1, "owned_by": owner.flavour} for m in owner.models]
                    if owner.flavour == "vllm":
                        for item in data:
                            item["max_model_len"] = owner.context_window
                    else:
                        for item in data:
                            item["meta"] = {"n_ctx_train": 8192, "n_params": 134515008}
                    self._send(200, {"object": "list", "data": data})
                elif self.path == "/props" and owner.flavour == "llama.cpp":
                    self._send(200, {"build_info": "b9999-fake", "total_slots": 4,
                                     "default_generation_settings": {"n_ctx": owner.context_window}})
                elif self.path == "/version" and owner.flavour == "vllm":
                    self._send(200, {"version": "0.17.1"})
                else:
                    self._send(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})

            def do_POST(self):
                body = self._body()
                owner.requests.append(("POST", self.path, dict(self.headers)))
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})
                    return
                if not self._authorized():
                    return
                if body is None:
                    self._send(400, {"error": {"code": 400, "message": "invalid JSON", "type": "invalid_request_error"}})
                    return
                if body.get("model") not in owner.models:
                    self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                               "type": "NotFoundError", "param": None, "code": 404}})
                    return
                self._chat(body)

        return Handler

    def send_reply(self, handler, body, text_override=None, deadline=None):
        prompt = "\n".join(m.get("content", "") for m in body.get("messages", []))
        cap = body.get("max_completion_tokens") or body.get("max_tokens") or 10 ** 6
        if tokens(prompt) + cap > self.context_window:
            handler._send(400, {"error": {"code": 400, "type": "exceed_context_size_error",
                                          "message": f"request ({tokens(prompt)} tokens) exceeds the available "
                                                     f"context size ({self.context_window} tokens), try increasing it",
                                          "n_prompt_tokens": tokens(prompt), "n_ctx": self.context_window}})
            return
        judged, logprobs = judge_reply(self, prompt, body)
        text = self.vary(body, judged if judged is not None else self.model.reply(prompt)) \
            if text_override is None else text_override
        finish = "stop"
        cached = 0
        if body.get("cache_prompt", True) and self.flavour == "llama.cpp":
            # like llama-server (cache_prompt defaults to true there): the longest prefix shared with a cached prompt
            with self.lock:
                shared = max([len(os.path.commonprefix([p, prompt])) for p in self.cached_prompts] or [0])
                self.cached_prompts = (self.cached_prompts + [prompt])[-4:]
            cached = min(shared // CHARS_PER_TOKEN, tokens(prompt) - 1)
        if tokens(text) > cap:
            text, finish = text[:cap * 4], "length"
        message = {"role": "assistant", "content": text}
        if getattr(self, "reasoning_field", None):
            message[self.reasoning_field] = "thinking about it"
        reply = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
                 "system_fingerprint": "b9999-fake", "choices": [{"index": 0, "message": message,
                                                                  "finish_reason": finish}],
                 "usage": {"prompt_tokens": tokens(prompt), "completion_tokens": tokens(text),
                           "total_tokens": tokens(prompt) + tokens(text)},
                 "timings": {"prompt_n": tokens(prompt) - cached, "predicted_n": tokens(text), "cache_n": cached}}
        if logprobs is not None and text_override is None:
            reply["choices"][0]["logprobs"] = {"content": logprobs}
        if self.flavour == "vllm":
            # vLLM: no timings; the cached share only with --enable-prompt-tokens-details
            del reply["timings"]
            reply["usage"]["prompt_tokens_details"] = {"cached_tokens": 16}
        if self.omit_usage:
            del reply["usage"]
        handler._send(200, reply, deadline=deadline)
