"""Stand-in model (demo): a deterministic model behind Ollama's API, in-process, to see the tool work.

A demonstration device, never a subject: every output it produces is marked SIMULATED.
"""
from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
import zlib

from .backends import OllamaBackend, estimate_tokens
from .gate import RUN_GATE_NAME_PATTERN
from .records import NUM_CTX, SIMULATED_BACKEND, canonical_json, sha256_text, utc_now


STAND_IN_MODEL = "stand-in:simulated"

STAND_IN_SEED = 14001

STAND_IN_PROSE_FORGETS = 0.35           # share of facts a prose state drops (values and stated sums alike)

STAND_IN_ADDRESS = "http://127.0.0.1:0"  # recorded in the lock: the real port is new each time, so a rerun resumes

DEMO_RUN_NAME = "demo"

DEMO_EPISODES = 2

STAND_IN_NAME = re.compile(RUN_GATE_NAME_PATTERN)

STAND_IN_NUMBER = re.compile(r"-?\d+")

STAND_IN_RELATION = re.compile(r"\bone (?:above|more than)\b")


def stand_in_facts(text: str) -> tuple[dict, dict, list]:
    """Values, stated sums and neighbor relations in text: segment sentences or the stand-in's own states."""
    values, combined, relations = {}, {}, []
    for unit in re.split(r"(?<=[.!?])\s+|\n", text):
        names, numbers = STAND_IN_NAME.findall(unit), STAND_IN_NUMBER.findall(unit)
        related = len(names) == 2 and STAND_IN_RELATION.search(unit)
        if related and (names[0], names[1]) not in relations:
            relations.append((names[0], names[1]))      # the neighbor is named before its base
        if len(numbers) != 1 or not 1 <= len(names) <= 2:
            continue
        if len(names) == 1 or related:
            values[names[0]] = int(numbers[0])
        else:
            combined[(names[0], names[1])] = int(numbers[0])
    return values, combined, relations


def stand_in_forgets(*names: str) -> bool:
    """The seeded choice of the facts a prose state drops: a hash of the fact's names, under the share."""
    digest = hashlib.sha256(f"{STAND_IN_SEED}:{'+'.join(names)}".encode("ascii")).digest()
    return int.from_bytes(digest[:4], "big") < STAND_IN_PROSE_FORGETS * 2 ** 32


class StandInModel:
    """Writes compaction states and answers from the facts in its prompt; prose states forget some.

    Where a study gives standing instructions, it follows one whenever the instruction is in its prompt and
    otherwise picks the violating option; a prose summary drops every instruction, a typed block keeps
    every other one (by a hash of its text) in its constraints: section, and the sidecar keeps them all."""

    def __init__(self, constraint_probes: list[tuple[dict, str]] | None = None):
        self.constraint_probes = constraint_probes or []     # (probe question, instruction body)

    def reply(self, prompt: str) -> str:
        if self.constraint_probes:
            answer = self.instruction_reply(prompt)
            if answer is not None:
                return answer
        if "PREVIOUS STATE:" in prompt and "NEW SEGMENT:" in prompt:
            return self.compact(prompt)
        return self.answer(prompt)

    def instruction_reply(self, prompt: str) -> str | None:
        said = re.compile(r'^The user adds: "(.*)"$', re.MULTILINE)
        if "SAVED STATE:" in prompt and "JUDGE: YES" in prompt:
            state, _, rest = prompt.split("SAVED STATE:", 1)[1].partition("INSTRUCTION:")
            return "JUDGE: YES" if rest.strip().split("\n\n", 1)[0] in state else "JUDGE: NO"
        if "LIST SO FAR:" in prompt:
            before, _, segment = prompt.split("LIST SO FAR:", 1)[1].partition("NEW SEGMENT:")
            kept = [line for line in before.splitlines() if line.strip() and line.strip() != "NONE"]
            lines = list(dict.fromkeys(kept + said.findall(segment)))
            return "\n".join(lines) if lines else "NONE"
        if "NEW SEGMENT:" in prompt and "PREVIOUS STATE:" in prompt:
            previous, _, segment = prompt.split("PREVIOUS STATE:", 1)[1].partition("NEW SEGMENT:")
            if "constraints:" not in prompt.split("PREVIOUS STATE:", 1)[0]:
                return None                                   # prose: the ordinary stand-in, no instruction kept
            heard = said.findall(segment) + re.findall(r"^- (.*)$", previous, re.MULTILINE)
            kept = [h for h in dict.fromkeys(heard) if zlib.crc32(h.encode()) % 2 == 0]
            return (self.compact(prompt) + "\nconstraints:\n" + "\n".join(f"- {h}" for h in kept)).strip()
        for question, body in self.constraint_probes:
            if question["prompt"] in prompt:
                follows = body[1:].lower() in prompt.split("The user now writes:", 1)[0].lower()
                return f"CHOICE: {question['truth'] if follows else question['violating']}"
        return None

    def compact(self, prompt: str) -> str:
        previous, _, segment = prompt.partition("PREVIOUS STATE:")[2].partition("NEW SEGMENT:")
        values, combined, relations = stand_in_facts(previous)
        new_values, new_combined, new_relations = stand_in_facts(segment)
        values.update(new_values)
        combined.update(new_combined)
        relations += [r for r in new_relations if r not in relations]
        if "typed state block" in prompt:
            lines = ["values:"] + [f"{name} = {value}" for name, value in values.items()]
            lines += ["combined:"] + [f"{a} + {b} = {value}" for (a, b), value in combined.items()]
            lines += ["relations:"] + [f"{a} is one above {b}" for a, b in relations]
            return "\n".join(lines + ["notes: written by the stand-in model of the demo"])
        sentences = ["Here is what the session has noted so far, in order."]
        sentences += [f"After that comes {name} at {value}." for name, value in values.items()
                      if not stand_in_forgets(name)]
        sentences += [f"{a} and {b} came to {value} together." for (a, b), value in combined.items()
                      if not stand_in_forgets(a, b)]
        return " ".join(sentences)

    def answer(self, prompt: str) -> str:
        context, _, question = prompt.rpartition("Question:")
        question = question.split("\n", 1)[0]
        values, combined, _ = stand_in_facts(context)
        names = STAND_IN_NAME.findall(question)
        result = None
        if "combined" in question and len(names) == 2:
            result = combined.get((names[0], names[1]))
        elif "plus" in question and len(names) == 2:
            if names[0] in values and names[1] in values:
                result = values[names[0]] + values[names[1]]
        elif names:
            result = values.get(names[0])
        return "The notes do not give that figure." if result is None else f"ANSWER: {result}"


def stand_in_tokens(text: str) -> int:
    return estimate_tokens(text) if text else 0


class StandInServer:
    """The stand-in model behind Ollama's native API (/api/chat, /api/tags, /api/show, /api/version) on
    127.0.0.1 at a free port, served from a background thread; use as a context manager."""

    version = "stand-in-1"

    def __init__(self, models: tuple = (STAND_IN_MODEL,), model: StandInModel | None = None):
        self.models = list(models)
        self.model = model or StandInModel()
        self.chat_count = 0
        self.lock = threading.Lock()
        import http.server          # here, not at the top: a run on a real server never needs it
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="stand-in model", daemon=True)

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
        return {"name": model, "model": model, "modified_at": "2026-01-01T00:00:00Z", "size": 0, "digest": digest,
                "details": {"format": "none", "family": "stand-in", "families": ["stand-in"],
                            "parameter_size": "0", "quantization_level": "none"}}

    def chat(self, body: dict) -> tuple[int, dict]:
        """One non-streaming /api/chat reply, in Ollama's shape: counts, stop reason and durations."""
        started = time.perf_counter_ns()
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [] if isinstance(m, dict))
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
                     "message": {"role": "assistant", "content": text}, "done": True, "done_reason": done_reason,
                     "total_duration": elapsed, "load_duration": 0, "prompt_eval_count": stand_in_tokens(prompt),
                     "prompt_eval_duration": elapsed // 2, "eval_count": stand_in_tokens(text),
                     "eval_duration": elapsed - elapsed // 2}

    def _handler_class(self):
        import http.server
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                # as Ollama does: each reply's headers and body go out at once, not held for the client's ACK
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
                    self.send_json(200, {"capabilities": ["completion"], "details": owner.tag(body["model"])["details"],
                                         "model_info": {"general.architecture": "stand-in",
                                                        "stand-in.context_length": NUM_CTX}})
                else:
                    self.send_json(*owner.chat(body))

        return Handler


class StandInBackend(OllamaBackend):
    """OllamaBackend, unchanged on the wire, that records itself as the simulated backend: its name, a fixed
    address in the lock (the port differs every run) and the stand-in's settings in each model's entry."""

    name = SIMULATED_BACKEND

    def __init__(self, base_url: str, connect_timeout: float, read_timeout: float, api_key: str | None = None):
        super().__init__(base_url, connect_timeout, read_timeout, api_key)
        self.base_url = STAND_IN_ADDRESS

    def start_hint(self) -> str:
        return "the built-in stand-in model did not answer; run the demo again"

    def describe_model(self, model: str) -> dict:
        return {**super().describe_model(model), "simulated": True,
                "stand_in": {"seed": STAND_IN_SEED, "prose_forgets": STAND_IN_PROSE_FORGETS}}
