"""Stand-in server (demo): a study's deterministic stand-in model behind Ollama's API, in-process,
to see the tool work with no model and no network.

A demonstration device, never a subject: every output of a run on it is marked SIMULATED. The
stand-in model itself is the study's own (Study.demo: a `reply(prompt) -> text` object its module
makes); this module serves it. """
from __future__ import annotations

import json
import threading
import time

from .backends import OllamaBackend, estimate_tokens
from .records import NUM_CTX, SIMULATED_BACKEND, canonical_json, sha256_text, utc_now


STAND_IN_MODEL = "stand-in:simulated"

# What a run records of the stand-in (its tag's digest, and the lock's model entry): the seed and
# the share of facts a
# prose state drops that the stand-in of the pseudoword sessions uses (pilot/studies/episodes.py).
STAND_IN_SEED = 14001

# share of facts a prose state drops (values and stated sums alike)
STAND_IN_PROSE_FORGETS = 0.35

# recorded in the lock: the real port is new each time, so a rerun resumes
STAND_IN_ADDRESS = "http://127.0.0.1:0"

DEMO_RUN_NAME = "demo"

# the episodes a demo runs, unless the study's Demo says otherwise
DEMO_EPISODES = 2


def stand_in_tokens(text: str) -> int:
    return estimate_tokens(text) if text else 0


class StandInServer:
    """A stand-in model (its reply(prompt) -> text) behind Ollama's native API (/api/chat,
    /api/tags, /api/show, /api/version) on 127.0.0.1 at a free port, served from a background
    thread; use as a context manager."""

    version = "stand-in-1"

    def __init__(self, model, models: tuple = (STAND_IN_MODEL,)):
        self.models = list(models)
        self.model = model
        self.chat_count = 0
        self.lock = threading.Lock()
        import http.server          # here, not at the top: a run on a real server never needs it
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="stand-in model",
                                       daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "StandInServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def tag(self, model: str) -> dict:
        digest = sha256_text(canonical_json({"model": model, "seed": STAND_IN_SEED,
                                             "prose_forgets": STAND_IN_PROSE_FORGETS}))
        return {"name": model, "model": model, "modified_at": "2026-01-01T00:00:00Z", "size": 0,
                "digest": digest,
                "details": {"format": "none", "family": "stand-in", "families": ["stand-in"],
                            "parameter_size": "0", "quantization_level": "none"}}

    def chat(self, body: dict) -> tuple[int, dict]:
        """One non-streaming /api/chat reply, in Ollama's shape: counts, stop reason and
        durations."""
        started = time.perf_counter_ns()
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages") or []
                           if isinstance(m, dict))
        options = body.get("options") or {}
        if body.get("truncate") is False and stand_in_tokens(prompt) > options.get("num_ctx", 2048):
            return 400, {"error": "the input length exceeds the context length"}
        text, done_reason = self.model.reply(prompt), "stop"
        cap = options.get("num_predict", -1)
        if cap > 0 and stand_in_tokens(text) > cap:
            text, done_reason = text[:cap * 4], "length"
        with self.lock:
            self.chat_count += 1
        elapsed = time.perf_counter_ns() - started
        return 200, {"model": body.get("model"), "created_at": utc_now(),
                     "message": {"role": "assistant", "content": text}, "done": True,
                     "done_reason": done_reason,
                     "total_duration": elapsed, "load_duration": 0,
                     "prompt_eval_count": stand_in_tokens(prompt),
                     "prompt_eval_duration": elapsed // 2, "eval_count": stand_in_tokens(text),
                     "eval_duration": elapsed - elapsed // 2}

    def _handler_class(self):
        import http.server
        import socket
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                # as Ollama does: each reply's headers and body go out at once, not held for the
                # client's ACK
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def send_json(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/api/version":
                    self.send_json(200, {"version": owner.version})
                elif self.path == "/api/tags":
                    self.send_json(200, {"models": [owner.tag(m) for m in owner.models]})
                else:
                    self.send_json(404, {"error": "404 page not found"})

            def do_POST(self):
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                    body = json.loads(self.rfile.read(length).decode("utf-8")) if length else None
                except ValueError:
                    body = None
                if not isinstance(body, dict):
                    self.send_json(400, {"error": "missing or invalid request body"})
                elif self.path not in ("/api/show", "/api/chat"):
                    self.send_json(404, {"error": "404 page not found"})
                elif body.get("model") not in owner.models:
                    self.send_json(404, {"error": f"model '{body.get('model')}' not found"})
                elif self.path == "/api/show":
                    self.send_json(200, {"capabilities": ["completion"],
                                         "details": owner.tag(body["model"])["details"],
                                         "model_info": {"general.architecture": "stand-in",
                                                        "stand-in.context_length": NUM_CTX}})
                else:
                    self.send_json(*owner.chat(body))

        return Handler


class StandInBackend(OllamaBackend):
    """OllamaBackend, unchanged on the wire, that records itself as the simulated backend: its name,
    a fixed address in the lock (the port differs every run) and the stand-in's settings in each
    model's entry."""

    name = SIMULATED_BACKEND

    def __init__(self, base_url: str, connect_timeout: float, read_timeout: float,
                 api_key: str | None = None,
                 reply_deadline: float | None = None):
        super().__init__(base_url, connect_timeout, read_timeout, api_key, reply_deadline)
        self.base_url = STAND_IN_ADDRESS

    def start_hint(self) -> str:
        return "the built-in stand-in model did not answer; run the demo again"

    def describe_model(self, model: str) -> dict:
        return {**super().describe_model(model), "simulated": True,
                "stand_in": {"seed": STAND_IN_SEED, "prose_forgets": STAND_IN_PROSE_FORGETS}}
